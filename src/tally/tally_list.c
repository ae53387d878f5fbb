/*
 * tally_list.c - lc_tally_list: tallies by name or by durable total.
 *
 * Reads one LevelDB snapshot.  By name it walks the records 't' PREFIX...
 * (only the prefix's range).  By total it walks the index 'T' be64(total ^
 * 2^63) NAME backwards from just past max, stopping below min, so "top K"
 * and "total >= N" read only what they report, plus index entries whose
 * names the prefix rejects.  Ties in total come in descending name order
 * (the index's reverse order).  Nothing here writes.
 */
#include "tally/tally.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>

typedef struct lister {
  const lc_tally_list_opts *o;
  size_t plen;
  uint64_t skipped, reported;
  bool stop;
} lister;

/* Offers one matching tally; sets stop when the limit or cb says so. */
static void offer(lister *l, const lc_tally_info *info) {
  if (l->skipped < l->o->offset) {
    l->skipped++;
    return;
  }
  l->reported++;
  if (l->o->cb && l->o->cb(l->o->arg, info)) l->stop = true;
  if (l->o->limit && l->reported >= l->o->limit) l->stop = true;
}

static bool in_bounds(const lc_tally_list_opts *o, int64_t total) {
  return !(o->has_min && total < o->min) && !(o->has_max && total > o->max);
}

static int by_name(lc_t *h, leveldb_iterator_t *it, lister *l) {
  char key[LC_NAME_MAX + 2];
  size_t klen =
      lc__tally_rec_key(key, l->o->prefix ? l->o->prefix : "", l->plen);
  lc_tally_info info;
  int rc = 0;
  (void)h;
  for (leveldb_iter_seek(it, key, klen); !l->stop && leveldb_iter_valid(it);
       leveldb_iter_next(it)) {
    size_t kl, vl;
    const char *k = leveldb_iter_key(it, &kl);
    if (kl < klen || memcmp(k, key, klen) != 0) break;
    if (kl - 1 > LC_NAME_MAX || kl < 2) continue;
    const char *v = leveldb_iter_value(it, &vl);
    rc = lc__tally_decode(v, vl, &info.total, &info.losses);
    if (rc) {
      rc = lc__fail(rc, "tally %.*s: %s", (int)(kl - 1), k + 1,
                    lc_last_detail());
      break;
    }
    if (!in_bounds(l->o, info.total)) continue;
    memcpy(info.name, k + 1, kl - 1);
    info.name[kl - 1] = '\0';
    offer(l, &info);
  }
  return rc;
}

static int by_total(lc_t *h, leveldb_iterator_t *it, lister *l,
                    const leveldb_readoptions_t *ro) {
  const lc_tally_list_opts *o = l->o;
  if (o->has_min && o->has_max && o->min > o->max) return 0;
  unsigned char start[9];
  start[0] = LC__TALLY_IDX;
  if (o->has_max && o->max != INT64_MAX) {
    lc__key_be64_put(start + 1, ((uint64_t)o->max ^ LC__TALLY_BIAS) + 1);
    leveldb_iter_seek(it, (const char *)start, 9);
  } else {
    start[0]++; /* just past every index key */
    leveldb_iter_seek(it, (const char *)start, 1);
  }
  if (leveldb_iter_valid(it))
    leveldb_iter_prev(it);
  else
    leveldb_iter_seek_to_last(it);
  lc_tally_info info;
  int rc = 0;
  for (; !l->stop && leveldb_iter_valid(it); leveldb_iter_prev(it)) {
    size_t kl;
    const char *k = leveldb_iter_key(it, &kl);
    if (kl < 1 || k[0] != LC__TALLY_IDX) break;
    if (kl < 10 || kl - 9 > LC_NAME_MAX) continue;
    info.total =
        (int64_t)(lc__key_be64_get((const unsigned char *)k + 1) ^ LC__TALLY_BIAS);
    if (o->has_min && info.total < o->min) break;
    if (o->has_max && info.total > o->max) continue;
    size_t nlen = kl - 9;
    if (nlen < l->plen || (l->plen && memcmp(k + 9, o->prefix, l->plen) != 0))
      continue;
    memcpy(info.name, k + 9, nlen);
    info.name[nlen] = '\0';
    info.losses = 0;
    if (l->skipped >= o->offset) { /* losses only for what is reported */
      char key[LC_NAME_MAX + 2], *err = NULL;
      size_t klen = lc__tally_rec_key(key, info.name, nlen), vl = 0;
      char *v = leveldb_get(h->log.db, ro, key, klen, &vl, &err);
      if (err) {
        rc = lc__fail(LC_ELOG, "leveldb read tally: %s", err);
        leveldb_free(err);
        break;
      }
      if (v) {
        rc = lc__tally_decode(v, vl, NULL, &info.losses);
        leveldb_free(v);
        if (rc) break;
      }
    }
    offer(l, &info);
  }
  return rc;
}

int lc_tally_list(lc_t *h, const lc_tally_list_opts *o, uint64_t *count) {
  lc__detail_clear();
  if (h == NULL || o == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  if (LC__ADMIN_WAY(h)) return lc__admin_tally_list(h, o, count);
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  if (o->order != LC_TALLY_BY_NAME && o->order != LC_TALLY_BY_TOTAL_DESC)
    return lc__fail(LC_EINVAL, "unknown order %d", (int)o->order);
  size_t plen = o->prefix ? strlen(o->prefix) : 0;
  if (plen > LC_NAME_MAX) return lc__fail(LC_ENAME, "prefix too long");
  lister l = {o, plen, 0, 0, false};
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  if (ro == NULL) return lc__fail(LC_ENOMEM, "cannot allocate read options");
  if ((rc = lc__log_enter(&h->log)) != 0) {
    leveldb_readoptions_destroy(ro);
    return rc;
  }
  const leveldb_snapshot_t *snap = leveldb_create_snapshot(h->log.db);
  leveldb_readoptions_set_snapshot(ro, snap);
  leveldb_readoptions_set_verify_checksums(ro, 1);
  leveldb_iterator_t *it = leveldb_create_iterator(h->log.db, ro);
  rc = o->order == LC_TALLY_BY_NAME ? by_name(h, it, &l)
                                    : by_total(h, it, &l, ro);
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  leveldb_iter_destroy(it);
  leveldb_release_snapshot(h->log.db, snap);
  lc__log_leave(&h->log);
  leveldb_readoptions_destroy(ro);
  if (err) {
    if (!rc) rc = lc__fail(LC_ELOG, "leveldb list: %s", err);
    leveldb_free(err);
  }
  if (!rc && count) *count = l.reported;
  return rc;
}
