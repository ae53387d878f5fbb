/*
 * prune.c - deleting a counter's old records.
 *
 * Prune deletes a prefix of the counter's records (the oldest ones, in
 * value order), stopping at the first record any criterion keeps.  It never
 * deletes the newest record (the restore's reverse seek needs it) and never
 * touches the reservation, so that no restore can start below a value that
 * was handed out.  LevelDB has no range delete: deletions go in batches,
 * and the pruned range is compacted afterwards so that tombstones do not
 * pile up in front of later seeks.  Ledger entries (gaps and voids) below
 * the oldest record left go with the records.
 *
 * lc__prune (the retention thread's) also takes a stop flag, checked with
 * the log's state every BATCH keys: a stop ends it early (what is deleted
 * stays deleted, the compaction is left for a later prune), a log that is
 * no longer OK ends it with LC_ELOG, so neither lc_close nor a reopen
 * waits for a long prune.
 */
#include "log/log.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 10000

/* Waits (10 ms at a time, at most 2 s) while LevelDB's level 0 holds
 * L0_CALM files or more: a bulk delete fills memtables fast, and LevelDB
 * slows every write once level 0 reaches 8 files and stops them at 12, so
 * without this a large prune stalls allocation (measured: 370-580 ms
 * waits beside a prune of 10M records). */
#define L0_CALM 4
static void yield_to_writers(lc__log *l) {
  for (int i = 0; i < 200; i++) {
    char *v = leveldb_property_value(l->db, "leveldb.num-files-at-level0");
    int files = v ? atoi(v) : 0;
    free(v);
    if (files < L0_CALM) return;
    usleep(10000);
  }
}

/* lc__prune's check, every BATCH keys: 0 to go on, 1 when stop is set,
 * LC_ELOG when the log is not OK.  Always 0 without a stop flag. */
static int halted(lc__log *l, const atomic_bool *stop, uint64_t n) {
  if (stop == NULL || n % BATCH != 0) return 0;
  if (atomic_load(stop)) return 1;
  return lc__log_ok(l);
}

/* Key of the oldest record to keep, given keep/newest; *lim_len = 0 when
 * there is nothing to prune. */
static int find_limit(lc__log *l, const char *prefix, size_t plen,
                      uint64_t keep, char *lim, size_t *lim_len,
                      const atomic_bool *stop) {
  leveldb_iterator_t *it = lc__log_seek_last(l, prefix, plen);
  uint64_t seen = 0;
  int rc = 0;
  *lim_len = 0;
  if (keep == 0) keep = 1; /* the newest record always stays */
  for (; leveldb_iter_valid(it); leveldb_iter_prev(it)) {
    if ((rc = halted(l, stop, seen + 1)) != 0) break;
    size_t klen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0 || klen > plen + 8) break;
    memcpy(lim, k, klen);
    *lim_len = klen;
    if (++seen == keep) break;
  }
  if (seen < keep || rc) *lim_len = 0; /* fewer records than keep */
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  leveldb_iter_destroy(it);
  if (err) {
    rc = lc__fail(LC_ELOG, "leveldb seek: %s", err);
    leveldb_free(err);
  }
  return rc;
}

static int iter_error(leveldb_iterator_t *it) {
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  if (err == NULL) return 0;
  int rc = lc__fail(LC_ELOG, "leveldb iterate: %s", err);
  leveldb_free(err);
  return rc;
}

/* Deletes the ledger entries that end below `below` (one batch: entries
 * are few). */
static int prune_ledger(lc__log *l, const char *name, int64_t below,
                        uint64_t *deleted) {
  char prefix[LC_NAME_MAX + 10];
  size_t plen = lc__key_ledger_prefix(prefix, name, strlen(name));
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  uint64_t n = 0;
  for (leveldb_iter_seek(it, prefix, plen); leveldb_iter_valid(it);
       leveldb_iter_next(it)) {
    size_t klen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    if (klen != plen + 8) continue; /* undecodable: gaps shows it */
    if (lc__key_be64_get((const unsigned char *)k + plen) >= (uint64_t)below) break;
    leveldb_writebatch_delete(b, k, klen);
    n++;
  }
  int rc = iter_error(it);
  if (!rc && n) rc = lc__log_write(l, b, false);
  if (!rc) *deleted = n;
  leveldb_writebatch_destroy(b);
  leveldb_iter_destroy(it);
  return rc;
}

static int prune(lc_t *h, const char *name, const lc_prune_opts *o,
                 lc_prune_result *res, const atomic_bool *stop);

static bool deletable(const lc_prune_opts *o, const char *k, size_t klen,
                      size_t plen, const char *v, size_t vlen) {
  lc_record rec;
  int rc = lc__key_record_decode(k, klen, plen, v, vlen, &rec);
  if (rc) {
    lc__detail_clear();
    return false; /* never delete what cannot be read: verify shows it */
  }
  if (o->below && rec.last >= o->below) return false;
  if (o->older_than_us && rec.time_us >= o->older_than_us) return false;
  return true;
}

int lc_prune(lc_t *h, const char *name, const lc_prune_opts *o,
             lc_prune_result *res) {
  return lc__prune(h, name, o, res, NULL);
}

int lc__prune(lc_t *h, const char *name, const lc_prune_opts *o,
              lc_prune_result *res, const atomic_bool *stop) {
  lc__detail_clear();
  if (h == NULL || o == NULL || res == NULL)
    return lc__fail(LC_EINVAL, "NULL argument");
  int rc = lc_check_name(name);
  if (rc) return lc__fail(rc, "invalid counter name");
  if (!LC__ADMIN_WAY(h) && (rc = LC__LOCAL_ONLY(h)) != 0) return rc;
  if (o->keep == 0 && o->below == 0 && o->older_than_us == 0)
    return lc__fail(LC_EINVAL, "prune needs keep, below or older_than");
  if (o->below < 0 || o->older_than_us < 0)
    return lc__fail(LC_EINVAL, "negative below or older_than");
  memset(res, 0, sizeof *res);
  if (LC__ADMIN_WAY(h)) return lc__admin_prune(h, name, o, res);
  lc__log *l = &h->log;
  if ((rc = lc__log_enter(l)) != 0) return rc;
  rc = prune(h, name, o, res, stop);
  lc__log_leave(l);
  return rc > 0 ? 0 : rc; /* stopped: what was done is in res */
}

/* lc_prune inside the log's gate. */
static int prune(lc_t *h, const char *name, const lc_prune_opts *o,
                 lc_prune_result *res, const atomic_bool *stop) {
  lc__log *l = &h->log;
  int rc;
  char prefix[LC_NAME_MAX + 10], lim[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(prefix, name, strlen(name)), lim_len;
  leveldb_iterator_t *it;
  rc = find_limit(l, prefix, plen, o->keep, lim, &lim_len, stop);
  if (rc || lim_len == 0) goto count_rest;

  it = leveldb_create_iterator(l->db, l->read);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  uint64_t pending = 0, scanned = 0;
  for (leveldb_iter_seek(it, prefix, plen); leveldb_iter_valid(it);
       leveldb_iter_next(it)) {
    size_t klen, vlen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    size_t n = klen < lim_len ? klen : lim_len;
    int cmp = memcmp(k, lim, n);
    if (cmp > 0 || (cmp == 0 && klen >= lim_len)) break;
    const char *v = leveldb_iter_value(it, &vlen);
    if ((rc = halted(l, stop, ++scanned)) != 0) break;
    if (!deletable(o, k, klen, plen, v, vlen)) break;
    leveldb_writebatch_delete(b, k, klen);
    if (++pending == BATCH) {
      if ((rc = lc__log_write(l, b, false)) != 0) break;
      res->deleted += pending;
      pending = 0;
      leveldb_writebatch_clear(b);
      yield_to_writers(l);
      if (o->progress) o->progress(o->progress_arg, scanned, res->deleted);
    }
  }
  if (rc >= 0 && pending) {
    int wrc = lc__log_write(l, b, false);
    if (!wrc) res->deleted += pending;
    if (wrc) rc = wrc;
  }
  if (!rc) rc = iter_error(it); /* an I/O error ended the scan early */
  leveldb_writebatch_destroy(b);
  leveldb_iter_destroy(it);
  if (!rc && res->deleted) {
    leveldb_compact_range(l->db, prefix, plen, lim, lim_len);
    if (o->progress) o->progress(o->progress_arg, scanned, res->deleted);
  }

count_rest:
  if (rc) return rc;
  /* records left; the first value of the oldest */
  int64_t oldest = 0;
  it = leveldb_create_iterator(l->db, l->read);
  for (leveldb_iter_seek(it, prefix, plen); leveldb_iter_valid(it);
       leveldb_iter_next(it)) {
    if ((rc = halted(l, stop, res->kept + 1)) != 0) break;
    size_t klen, vlen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    lc_record rec;
    const char *v = leveldb_iter_value(it, &vlen);
    if (res->kept++ == 0 &&
        lc__key_record_decode(k, klen, plen, v, vlen, &rec) == 0)
      oldest = rec.first;
  }
  if (!rc) rc = iter_error(it);
  leveldb_iter_destroy(it);
  if (rc) return rc;
  lc__detail_clear();
  if (!rc && res->deleted && oldest)
    rc = prune_ledger(l, name, oldest, &res->ledger_deleted);
  return rc;
}
