/*
 * iter.c - reading a counter's records, or its ledger entries, in order
 * (for dump, verify and gaps; lc_iter_open and lc_ledger_open are in
 * counter/records.c, which settles the counter first), or the whole log
 * (backup.c).
 *
 * The iterator reads a LevelDB snapshot taken when it is opened, so records
 * appended meanwhile do not shift under it.  An undecodable record is
 * reported (LC_ECORRUPT) and skipped, never hidden.  Open iterators are
 * listed in the log (under its fmu): a reopen after a failed write closes
 * their LevelDB side (lc__iters_kill), and their next call fails.
 */
#include "log/log.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>

struct lc_iter {
  lc_t *h;
  leveldb_iterator_t *it;
  const leveldb_snapshot_t *snap;
  leveldb_readoptions_t *read;
  size_t plen;
  bool ledger;          /* lc_ledger_open: 'g' entries, not records */
  bool dead;            /* the log was reopened: it and snap are gone */
  lc__admin_stream *remote;  /* an admin socket's stream, instead of the rest */
  bool ended;           /* remote: the stream's OK was read */
  lc_iter *prev, *next; /* the log's list of open iterators */
  char prefix[LC_NAME_MAX + 10];
};

int lc__iter_make(lc_t *h, const char *name, bool ledger, lc_iter **out,
                  int64_t *snap_us) {
  int rc;
  lc_iter *i = calloc(1, sizeof *i);
  if (i == NULL || (i->read = leveldb_readoptions_create()) == NULL) {
    free(i);
    return lc__fail(LC_ENOMEM, "cannot allocate an iterator");
  }
  i->h = h;
  i->ledger = ledger;
  i->plen = name == NULL ? 0
            : ledger     ? lc__key_ledger_prefix(i->prefix, name, strlen(name))
                         : lc__key_record_prefix(i->prefix, name, strlen(name));
  if ((rc = lc__log_enter(&h->log)) != 0) {
    leveldb_readoptions_destroy(i->read);
    free(i);
    return rc;
  }
  i->snap = leveldb_create_snapshot(h->log.db);
  if (snap_us) *snap_us = lc__clock_now_us();
  leveldb_readoptions_set_snapshot(i->read, i->snap);
  leveldb_readoptions_set_verify_checksums(i->read, 1);
  leveldb_readoptions_set_fill_cache(i->read, 0);
  i->it = leveldb_create_iterator(h->log.db, i->read);
  if (i->plen)
    leveldb_iter_seek(i->it, i->prefix, i->plen);
  else
    leveldb_iter_seek_to_first(i->it);
  pthread_mutex_lock(&h->log.fmu);
  i->next = h->log.iters;
  if (i->next) i->next->prev = i;
  h->log.iters = i;
  pthread_mutex_unlock(&h->log.fmu);
  lc__log_leave(&h->log);
  *out = i;
  return 0;
}

int lc__iter_remote(lc_t *h, const char *name, bool ledger, lc_iter **out) {
  lc_iter *i = calloc(1, sizeof *i);
  if (i == NULL) return lc__fail(LC_ENOMEM, "cannot allocate an iterator");
  int rc = lc__admin_stream_open(h, &i->remote, "%s %s",
                            ledger ? "ledger" : "records", name);
  if (rc) {
    free(i);
    return rc;
  }
  i->h = h;
  i->ledger = ledger;
  *out = i;
  return 0;
}

int lc__iter_open_log(lc_t *h, lc_iter **out, int64_t *snap_us) {
  return lc__iter_make(h, NULL, false, out, snap_us);
}

/* Gate held for writing: nothing else uses the iterators' LevelDB side. */
void lc__iters_kill(lc__log *l) {
  pthread_mutex_lock(&l->fmu);
  for (lc_iter *i = l->iters; i; i = i->next) {
    if (i->dead) continue;
    leveldb_iter_destroy(i->it);
    leveldb_release_snapshot(l->db, i->snap);
    i->dead = true;
  }
  pthread_mutex_unlock(&l->fmu);
}

/* The next key and value under the prefix: 1, 0 at the end, or an
 * error. */
static int step(lc_iter *i, const char **k, size_t *klen, const char **v,
                size_t *vlen) {
  if (i->dead)
    return lc__fail(LC_ELOG, "the log was reopened after a failed write "
                             "since this iterator was opened: open it again");
  if (!leveldb_iter_valid(i->it)) {
    char *err = NULL;
    leveldb_iter_get_error(i->it, &err);
    if (err == NULL) return 0;
    int rc = lc__fail(LC_ELOG, "leveldb iterate: %s", err);
    leveldb_free(err);
    return rc;
  }
  *k = leveldb_iter_key(i->it, klen);
  if (*klen < i->plen || memcmp(*k, i->prefix, i->plen) != 0) return 0;
  *v = leveldb_iter_value(i->it, vlen);
  return 1;
}

int lc__iter_entry(lc_iter *i, const char **k, size_t *klen, const char **v,
                   size_t *vlen) {
  return step(i, k, klen, v, vlen);
}

void lc__iter_skip(lc_iter *i) {
  if (!i->dead) leveldb_iter_next(i->it);
}

/* The next record (rec) or ledger entry (gap) in the log's gate: 1, 0 at
 * the end, or an error (LC_ECORRUPT: its last value is set). */
static int next(lc_iter *i, lc_record *rec, lc_gap *gap) {
  if (i->remote) {
    if (i->ended) return 0;
    int rc = lc__admin_iter_next(i->remote, rec, gap);
    i->ended = rc == 0;
    return rc;
  }
  size_t klen = 0, vlen = 0;
  const char *k = NULL, *v = NULL;
  int rc = lc__log_enter(&i->h->log);
  if (rc) return rc;
  rc = step(i, &k, &klen, &v, &vlen);
  if (rc > 0) {
    rc = rec ? lc__key_record_decode(k, klen, i->plen, v, vlen, rec)
             : lc__key_ledger_decode(k, klen, i->plen, v, vlen, gap);
    if (rc) *(rec ? &rec->last : &gap->last) = lc__key_last(k, klen, i->plen);
    leveldb_iter_next(i->it);
    rc = rc ? rc : 1;
  }
  lc__log_leave(&i->h->log);
  return rc;
}

int lc_iter_next(lc_iter *i, lc_record *rec) {
  lc__detail_clear();
  if (i == NULL || rec == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (i->ledger) return lc__fail(LC_EINVAL, "a ledger iterator");
  return next(i, rec, NULL);
}

int lc_ledger_next(lc_iter *i, lc_gap *gap) {
  lc__detail_clear();
  if (i == NULL || gap == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (!i->ledger) return lc__fail(LC_EINVAL, "not a ledger iterator");
  return next(i, NULL, gap);
}

void lc_iter_close(lc_iter *i) {
  if (i == NULL) return;
  if (i->remote) {
    lc__admin_stream_close(i->remote);
    free(i);
    return;
  }
  lc__log *l = &i->h->log;
  pthread_mutex_lock(&l->fmu); /* a reopen kills iterators under it */
  if (!i->dead) {
    leveldb_iter_destroy(i->it);
    leveldb_release_snapshot(l->db, i->snap);
  }
  if (i->prev)
    i->prev->next = i->next;
  else
    l->iters = i->next;
  if (i->next) i->next->prev = i->prev;
  pthread_mutex_unlock(&l->fmu);
  leveldb_readoptions_destroy(i->read);
  free(i);
}
