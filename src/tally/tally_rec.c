/*
 * tally_rec.c - the log side of tallies: keys and the versioned record.
 *
 *   't' NAME                      -> version 1, total (int64), applied+,
 *                                    applied-, losses (uint64s), 33 bytes,
 *                                    all big-endian; version 2 (written
 *                                    now): the same, then lost+ and lost-
 *                                    (the amounts lost, P14), carry+ and
 *                                    carry- (acknowledged and not applied
 *                                    when written), 65 bytes
 *   'T' be64(total ^ 2^63) NAME   -> "" (the index by total: negative
 *                                    totals sort first)
 * A record and its index entry always change in the same write batch
 * (lc__tally_rec_put), so the index never disagrees with the records.
 */
#include "tally/tally.h"
#include "handle.h"

#include <string.h>

#define REC_VERSION 2
#define REC_LEN 65
#define REC_V1_LEN 33

size_t lc__tally_rec_key(char *buf, const char *name, size_t nlen) {
  buf[0] = LC__TALLY_REC;
  memcpy(buf + 1, name, nlen);
  return nlen + 1;
}

size_t lc__tally_idx_key(char *buf, int64_t total, const char *name,
                         size_t nlen) {
  buf[0] = LC__TALLY_IDX;
  lc__key_be64_put((unsigned char *)buf + 1, (uint64_t)total ^ LC__TALLY_BIAS);
  memcpy(buf + 9, name, nlen);
  return nlen + 9;
}

int lc__tally_decode(const char *v, size_t vlen, int64_t *total,
                     uint64_t *losses) {
  const unsigned char *u = (const unsigned char *)v;
  if (!(vlen == REC_LEN && u[0] == REC_VERSION) &&
      !(vlen == REC_V1_LEN && u[0] == 1))
    return lc__fail(LC_ECORRUPT, "tally record of %zu bytes, version %d", vlen,
                    vlen ? u[0] : -1);
  if (total) *total = (int64_t)lc__key_be64_get(u + 1);
  if (losses) *losses = lc__key_be64_get(u + 25);
  return 0;
}

int lc__tally_rec_read(lc_t *h, lc__tally *t) {
  char key[LC_NAME_MAX + 2], *v;
  size_t klen = lc__tally_rec_key(key, t->name, t->nlen), vlen;
  int rc = lc__log_get(&h->log, key, klen, &v, &vlen, "tally");
  if (rc) return rc;
  lc__trec n = {0, 0, 0, 0, 0, 0, 0, 0};
  if (v) {
    rc = lc__tally_decode(v, vlen, &n.total, &n.losses);
    if (!rc) { /* a corrupt record may be shorter than these fields */
      n.ap = lc__key_be64_get((unsigned char *)v + 9);
      n.am = lc__key_be64_get((unsigned char *)v + 17);
    }
    if (!rc && vlen == REC_LEN) {
      n.lost_p = lc__key_be64_get((unsigned char *)v + 33);
      n.lost_m = lc__key_be64_get((unsigned char *)v + 41);
      n.carry_p = lc__key_be64_get((unsigned char *)v + 49);
      n.carry_m = lc__key_be64_get((unsigned char *)v + 57);
    }
    leveldb_free(v);
  }
  pthread_mutex_lock(&t->mu);
  t->has_record = v != NULL && !rc;
  t->total = rc ? 0 : n.total;
  t->ap = rc ? 0 : n.ap;
  t->am = rc ? 0 : n.am;
  t->losses = rc ? 0 : n.losses;
  t->lost_p = rc ? 0 : n.lost_p;
  t->lost_m = rc ? 0 : n.lost_m;
  pthread_mutex_unlock(&t->mu);
  t->carry_p = rc ? 0 : n.carry_p;
  t->carry_m = rc ? 0 : n.carry_m;
  return rc;
}

void lc__tally_rec_put(leveldb_writebatch_t *b, const lc__tally *t,
                       const lc__trec *n) {
  char key[LC_NAME_MAX + 10];
  unsigned char val[REC_LEN];
  val[0] = REC_VERSION;
  lc__key_be64_put(val + 1, (uint64_t)n->total);
  lc__key_be64_put(val + 9, n->ap);
  lc__key_be64_put(val + 17, n->am);
  lc__key_be64_put(val + 25, n->losses);
  lc__key_be64_put(val + 33, n->lost_p);
  lc__key_be64_put(val + 41, n->lost_m);
  lc__key_be64_put(val + 49, n->carry_p);
  lc__key_be64_put(val + 57, n->carry_m);
  size_t klen = lc__tally_rec_key(key, t->name, t->nlen);
  leveldb_writebatch_put(b, key, klen, (const char *)val, sizeof val);
  if (!t->has_record || n->total != t->total) {
    if (t->has_record) {
      klen = lc__tally_idx_key(key, t->total, t->name, t->nlen);
      leveldb_writebatch_delete(b, key, klen);
    }
    klen = lc__tally_idx_key(key, n->total, t->name, t->nlen);
    leveldb_writebatch_put(b, key, klen, "", 0);
  }
}

void lc__tally_rec_set(lc__tally *t, const lc__trec *n) {
  pthread_mutex_lock(&t->mu);
  t->has_record = true;
  t->total = n->total;
  t->ap = n->ap;
  t->am = n->am;
  t->losses = n->losses;
  /* n carried every amount measured so far (lc__tally_rec_make) */
  t->lost_p = n->lost_p;
  t->lost_m = n->lost_m;
  t->lost_new_p = t->lost_new_m = 0;
  pthread_mutex_unlock(&t->mu);
  t->carry_p = n->carry_p;
  t->carry_m = n->carry_m;
}

lc__trec lc__tally_rec_make(lc__tally *t, int64_t total, uint64_t ap,
                            uint64_t am, uint64_t losses) {
  pthread_mutex_lock(&t->mu);
  lc__trec n = {total,
                ap,
                am,
                losses,
                t->lost_p + (uint64_t)t->lost_new_p, /* never below 0 */
                t->lost_m + (uint64_t)t->lost_new_m,
                t->una_p > 0 ? (uint64_t)t->una_p : 0,
                t->una_m > 0 ? (uint64_t)t->una_m : 0};
  pthread_mutex_unlock(&t->mu);
  /* una_* still holds what this record applies: the carry is the rest */
  n.carry_p = n.carry_p > ap - t->ap ? n.carry_p - (ap - t->ap) : 0;
  n.carry_m = n.carry_m > am - t->am ? n.carry_m - (am - t->am) : 0;
  return n;
}

void lc__tally_snap(lc__tally *t) {
  pthread_mutex_lock(&t->mu);
  t->snap_p = t->una_p;
  t->snap_m = t->una_m;
  pthread_mutex_unlock(&t->mu);
}

int lc__tally_refresh(lc_t *h, lc__tally *t) {
  if (!t->stale) return 0;
  uint64_t ap = t->ap, am = t->am, lp = t->lost_p, lm = t->lost_m;
  int rc = lc__tally_rec_read(h, t);
  if (rc) return rc;
  pthread_mutex_lock(&t->mu);
  /* a failed write that landed recorded what was measured (and given
   * back) by then: what is left is what came after it, kept within what
   * the mirror now records */
  t->lost_new_p -= (int64_t)t->lost_p - (int64_t)lp;
  t->lost_new_m -= (int64_t)t->lost_m - (int64_t)lm;
  if (t->lost_new_p < -(int64_t)t->lost_p) t->lost_new_p = -(int64_t)t->lost_p;
  if (t->lost_new_m < -(int64_t)t->lost_m) t->lost_new_m = -(int64_t)t->lost_m;
  uint64_t dp = t->ap > ap ? t->ap - ap : 0, dm = t->am > am ? t->am - am : 0;
  t->out_p = t->out_p > dp ? t->out_p - dp : 0;
  t->out_m = t->out_m > dm ? t->out_m - dm : 0;
  t->una_p -= (int64_t)dp;
  t->una_m -= (int64_t)dm;
  pthread_mutex_unlock(&t->mu);
  t->stale = false;
  return 0;
}
