/*
 * tally_flush.c - applying what memcached holds to the log, in batches.
 *
 * lc_tally_flush takes due tallies off the queue (only those queued before
 * the call began, so a stream of changes cannot keep it busy forever) in
 * batches of up to BATCH: one memcached multi-get reads both sums of every
 * tally of the batch, and ONE LevelDB write batch stores every changed
 * record with its index move.  Per tally the write is still atomic, so a
 * flusher killed at any instruction leaves each record old or new, and the
 * next flush (or sweep) applies exactly the rest.
 *
 * Concurrency: a batch owns each of its tallies (tally.h) from the read of
 * the sums to the mirror update, so no two flushers apply one difference
 * twice.  It takes them with try-acquire (never waiting while it owns
 * one); tallies it could not take are flushed one at a time afterwards.
 * It holds no mutex across memcached or LevelDB calls.
 */
#include "tally/tally.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>

#define BATCH 512
#define KEY_MAX (LC__MC_KEY_MAX + 2)

typedef struct slot {
  lc__tally *t;
  int pre[2]; /* 0: val holds the sum; LC__MISS; -1: unknown */
  uint64_t val[2];
  lc__trec n;
  uint64_t dp, dm;
  bool write;
} slot;

/* A sum the multi-get found: into its slot. */
typedef struct got_ctx {
  lc_t *h;
  slot *s;
  size_t ns;
} got_ctx;

static void got_sum(void *arg, const char *k, size_t klen, const char *v,
                    size_t vlen) {
  got_ctx *g = arg;
  char name[LC_NAME_MAX + 1];
  lc__tally *t = NULL;
  size_t plen = strlen(LC__TALLY_MC_PLUS);
  if (klen > plen && klen - plen <= LC_NAME_MAX) {
    memcpy(name, k + plen, klen - plen);
    name[klen - plen] = '\0';
    if (lc__tally_lookup(g->h, name, &t) != 0) t = NULL;
  }
  /* every tally of the batch is held by this thread: bidx is ours */
  if (t && t->bidx < g->ns && g->s[t->bidx].t == t) {
    int side = k[2] == '-';
    slot *x = &g->s[t->bidx];
    /* not a number: read it again alone */
    x->pre[side] = lc__cache_parse_u64(v, vlen, &x->val[side]) ? 0 : -1;
  }
}

/* Reads both sums of every slot with one multi-get. */
static int mget(lc_t *h, slot *s, size_t ns) {
  char(*keys)[KEY_MAX] = malloc(2 * ns * sizeof *keys);
  const char **kp = malloc(2 * ns * sizeof *kp);
  size_t *kl = malloc(2 * ns * sizeof *kl);
  int err = 0;
  if (!keys || !kp || !kl) {
    err = lc__fail(LC_ENOMEM, "cannot allocate a flush batch");
    goto out;
  }
  for (size_t i = 0; i < ns; i++) {
    s[i].t->bidx = i;
    for (int side = 0; side < 2; side++) {
      size_t k = 2 * i + (size_t)side;
      kl[k] = lc__tally_mc_key(
          keys[k], side ? LC__TALLY_MC_MINUS : LC__TALLY_MC_PLUS, s[i].t);
      kp[k] = keys[k];
      s[i].pre[side] = LC__MISS;
    }
  }
  err =
      lc__cache_mget(&h->cache, kp, kl, 2 * ns, got_sum, &(got_ctx){h, s, ns});
out:
  free(keys);
  free(kp);
  free(kl);
  return err;
}

/* Works out one held tally's new record. */
static int compute(lc_t *h, slot *x) {
  lc__tally *t = x->t;
  bool lp = false, lm = false;
  x->n = (lc__trec){t->total, 0, 0, t->losses, 0, 0, 0, 0};
  int rc = lc__tally_side_read(h, t, true, x->pre[0], x->val[0], &x->n.ap,
                               &x->dp, &lp);
  if (!rc)
    rc = lc__tally_side_read(h, t, false, x->pre[1], x->val[1], &x->n.am,
                             &x->dm, &lm);
  if (rc) return rc;
  __int128 total = (__int128)t->total + x->dp - x->dm;
  if (total > INT64_MAX || total < INT64_MIN)
    return lc__fail(LC_ETALLYRANGE,
                    "memcached holds sums for tally %s that "
                    "take its total out of range",
                    t->name);
  x->n.total = (int64_t)total;
  uint64_t losses = x->n.losses;
  /* a loss measured at load (a record's carry) is an event too (not an
   * amount given back alone: lost_new below 0) */
  if (lp || lm || t->lost_new_p > 0 || t->lost_new_m > 0) {
    losses++;
    LC__STAT(h, tally_losses, 1);
  }
  x->n = lc__tally_rec_make(t, x->n.total, x->n.ap, x->n.am, losses);
  x->write = x->n.ap != t->ap || x->n.am != t->am ||
             x->n.losses != t->losses || x->n.lost_p != t->lost_p ||
             x->n.lost_m != t->lost_m;
  return 0;
}

/*
 * Flushes ts[0..n) (n <= BATCH).  One tally: waits for its mu; several:
 * trylock, and the busy ones are flushed alone afterwards.  *wrote counts
 * records written.  Returns the first error.
 */
static int flush_batch(lc_t *h, lc__tally **ts, size_t n, uint64_t *wrote) {
  slot *s = calloc(n, sizeof *s);
  lc__tally **busy = calloc(n, sizeof *busy);
  if (!s || !busy) {
    free(s);
    free(busy);
    return lc__fail(LC_ENOMEM, "cannot allocate a flush batch");
  }
  size_t ns = 0, nb = 0, held = 0;
  int first = 0;
  for (size_t i = 0; i < n; i++) {
    lc__tally *t = ts[i];
    if (n == 1)
      lc__tally_acquire(t);
    else if (!lc__tally_try_acquire(t)) {
      busy[nb++] = t;
      continue;
    }
    ts[held++] = t; /* ts now lists what this call holds */
    int rc = lc__tally_load(h, t);
    if (!rc) rc = lc__tally_refresh(h, t);
    if (!rc && !t->has_record) rc = lc__tally_rec_read(h, t);
    if (rc && !first) first = rc;
    if (!rc && t->has_record) s[ns++].t = t;
  }
  for (size_t i = 0; i < ns; i++) lc__tally_snap(s[i].t); /* before mget */
  int rc = ns ? mget(h, s, ns) : 0;
  if (rc && !first) first = rc;
  if (rc) {
    /* memcached failed, the log did not: record what was acknowledged
     * (the carries), so that a loss of it is measured even if this
     * process dies before memcached comes back (P14) */
    leveldb_writebatch_t *cb = NULL;
    for (size_t i = 0; i < ns; i++)
      s[i].write = lc__tally_carry_put(s[i].t, &cb, &s[i].n);
    if (cb && lc__log_write(&h->log, cb, true) == 0) {
      LC__STAT(h, log_writes, 1);
      LC__STAT(h, log_syncs, 1);
      for (size_t i = 0; i < ns; i++)
        if (s[i].write) lc__tally_rec_set(s[i].t, &s[i].n);
    } else if (cb) {
      for (size_t i = 0; i < ns; i++) s[i].t->stale = s[i].write;
    }
    if (cb) leveldb_writebatch_destroy(cb);
    for (size_t i = 0; i < ns; i++) s[i].write = false;
  }
  leveldb_writebatch_t *b = NULL;
  size_t nw = 0;
  for (size_t i = 0; !rc && i < ns; i++) {
    int e = compute(h, &s[i]);
    if (e) {
      if (!first) first = e;
      s[i].write = false;
      continue;
    }
    if (!s[i].write) continue;
    if (!b) b = leveldb_writebatch_create();
    lc__tally_rec_put(b, s[i].t, &s[i].n);
    nw++;
  }
  if (b) {
    /* Synced whatever the durability: once applied, changes must survive
     * a power cut even if memcached then loses its sums (one fdatasync
     * per batch of up to BATCH tallies). */
    rc = lc__log_write(&h->log, b, true);
    leveldb_writebatch_destroy(b);
    LC__STAT(h, log_writes, 1);
    LC__STAT(h, log_syncs, 1);
    if (rc && !first) first = rc;
    for (size_t i = 0; rc && i < ns; i++) s[i].t->stale = s[i].write;
    for (size_t i = 0; !rc && i < ns; i++) {
      slot *x = &s[i];
      if (!x->write) continue;
      lc__tally *t = x->t;
      lc__tally_rec_set(t, &x->n);
      pthread_mutex_lock(&t->mu);
      t->out_p = t->out_p > x->dp ? t->out_p - x->dp : 0;
      t->out_m = t->out_m > x->dm ? t->out_m - x->dm : 0;
      t->una_p -= (int64_t)x->dp;
      t->una_m -= (int64_t)x->dm;
      pthread_mutex_unlock(&t->mu);
    }
    if (!rc) {
      LC__STAT(h, tally_flushes, nw);
      *wrote += nw;
    }
  }
  for (size_t i = 0; i < held; i++) {
    ts[i]->bidx = SIZE_MAX;
    lc__tally_release(ts[i]);
  }
  for (size_t i = 0; i < nb; i++) {
    rc = flush_batch(h, &busy[i], 1, wrote);
    if (rc && !first) first = rc;
  }
  free(s);
  free(busy);
  return first;
}

/* One record a sweep read: the name, the applied sums, and what the
 * multi-get found of the sums (pre as in slot). */
typedef struct swept {
  char name[LC_NAME_MAX + 1];
  size_t nlen;
  bool bad; /* not decodable: the full path reports it */
  bool carried; /* carries to check (at load) for a loss */
  uint64_t ap, am;
  int pre[2];
  uint64_t val[2];
} swept;

/* The records after r[*n - 1] (from the first when *n is 0), up to BATCH,
 * into r[0 .. *n), from a fresh iterator: no read of the log is held
 * while a batch is flushed (or waits at the gate). */
static int sweep_read(lc_t *h, swept *r, size_t *n) {
  int rc = lc__log_enter(&h->log);
  if (rc) return rc;
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_readoptions_set_fill_cache(ro, 0);
  leveldb_iterator_t *it = leveldb_create_iterator(h->log.db, ro);
  char key[LC_NAME_MAX + 2];
  size_t klen = *n ? lc__tally_rec_key(key, r[*n - 1].name, r[*n - 1].nlen)
                   : lc__tally_rec_key(key, "", 0);
  leveldb_iter_seek(it, key, klen);
  if (*n && leveldb_iter_valid(it)) {
    size_t l;
    const char *k = leveldb_iter_key(it, &l);
    if (l == klen && memcmp(k, key, l) == 0) leveldb_iter_next(it);
  }
  *n = 0;
  for (; *n < BATCH && leveldb_iter_valid(it); leveldb_iter_next(it)) {
    size_t l, vlen;
    const char *k = leveldb_iter_key(it, &l);
    if (l < 1 || k[0] != LC__TALLY_REC) break;
    if (l < 2 || l - 1 > LC_NAME_MAX) continue;
    swept *x = &r[(*n)++];
    memcpy(x->name, k + 1, l - 1);
    x->name[l - 1] = '\0';
    x->nlen = l - 1;
    const char *v = leveldb_iter_value(it, &vlen);
    x->bad = lc__tally_decode(v, vlen, NULL, NULL) != 0;
    lc__detail_clear();
    x->ap = x->bad ? 0 : lc__key_be64_get((const unsigned char *)v + 9);
    x->am = x->bad ? 0 : lc__key_be64_get((const unsigned char *)v + 17);
    x->carried = !x->bad && vlen >= 65 &&
                 (lc__key_be64_get((const unsigned char *)v + 49) ||
                  lc__key_be64_get((const unsigned char *)v + 57));
    x->pre[0] = x->pre[1] = LC__MISS;
  }
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  leveldb_iter_destroy(it);
  leveldb_readoptions_destroy(ro);
  lc__log_leave(&h->log);
  if (err) {
    rc = lc__fail(LC_ELOG, "leveldb sweep: %s", err);
    leveldb_free(err);
  }
  return rc;
}

static int swept_cmp(const void *key, const void *elem) {
  const swept *a = key, *b = elem;
  size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
  int c = memcmp(a->name, b->name, n);
  return c ? c : (a->nlen > b->nlen) - (a->nlen < b->nlen);
}

typedef struct swept_ctx {
  swept *r;
  size_t n;
} swept_ctx;

/* A sum the sweep's multi-get found: into its record (r is sorted by
 * name, as the log is). */
static void swept_got(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen) {
  swept_ctx *g = arg;
  size_t plen = strlen(LC__TALLY_MC_PLUS);
  if (klen <= plen || klen - plen > LC_NAME_MAX) return;
  swept probe;
  memcpy(probe.name, k + plen, klen - plen);
  probe.nlen = klen - plen;
  swept *x = bsearch(&probe, g->r, g->n, sizeof *g->r, swept_cmp);
  if (x == NULL) return;
  int side = k[2] == '-';
  x->pre[side] = lc__cache_parse_u64(v, vlen, &x->val[side]) ? 0 : -1;
}

/* Whether a tally not in memory has anything for a flush to do: a sum
 * memcached holds above or below the applied one, not a number, or
 * missing where something was applied; or carries in its record, whose
 * loss its load measures. */
static bool swept_due(const swept *x) {
  for (int side = 0; side < 2; side++) {
    uint64_t applied = side ? x->am : x->ap;
    if (x->pre[side] == LC__MISS ? applied != 0
                                 : x->pre[side] != 0 || x->val[side] != applied)
      return true;
  }
  return x->bad || x->carried;
}

/*
 * Flushes every tally that has a record in the log, in batches.  The
 * tallies in memory are flushed as they are; of the others (never used by
 * this handle, or evicted), only those whose sums in memcached say there
 * is something to do are loaded: so a sweep does not bring every tally of
 * the log back into memory, and with idle eviction it does not keep them
 * there (a sweep is no use of a tally: nothing here touches it).
 */
static int sweep(lc_t *h, uint64_t *wrote) {
  lc__tallies *tb = &h->tallies;
  swept *r = malloc(BATCH * sizeof *r);
  char(*keys)[KEY_MAX] = malloc(2 * BATCH * sizeof *keys);
  const char **kp = malloc(2 * BATCH * sizeof *kp);
  size_t *kl = malloc(2 * BATCH * sizeof *kl);
  int first = 0;
  if (!r || !keys || !kp || !kl)
    first = lc__fail(LC_ENOMEM, "cannot allocate a sweep batch");
  size_t n = 0;
  while (!first) {
    int rc = sweep_read(h, r, &n);
    if (rc || n == 0) {
      if (rc) first = rc;
      break;
    }
    lc__tally *ts[BATCH];
    size_t nt = 0, nk = 0;
    bool out[BATCH];
    LC__GATE_IN(h); /* the tallies of ts stay until the batch is flushed */
    pthread_mutex_lock(&tb->mu);
    for (size_t i = 0; i < n; i++) {
      lc__tally *t =
          (lc__tally *)lc__names_find(&tb->names, r[i].name, r[i].nlen);
      out[i] = t == NULL;
      if (t) ts[nt++] = t;
    }
    pthread_mutex_unlock(&tb->mu);
    for (size_t i = 0; i < n; i++) {
      if (!out[i]) continue;
      for (int side = 0; side < 2; side++) {
        const char *pre = side ? LC__TALLY_MC_MINUS : LC__TALLY_MC_PLUS;
        size_t pl = strlen(pre);
        memcpy(keys[nk], pre, pl);
        memcpy(keys[nk] + pl, r[i].name, r[i].nlen);
        kl[nk] = pl + r[i].nlen;
        kp[nk] = keys[nk];
        nk++;
      }
    }
    rc = nk ? lc__cache_mget(&h->cache, kp, kl, nk, swept_got,
                             &(swept_ctx){r, n})
            : 0;
    for (size_t i = 0; i < n; i++) {
      if (!out[i] || (!rc && !swept_due(&r[i]))) continue;
      /* memcached failed: each is loaded, and its flush reports it */
      int e = lc__tally_lookup(h, r[i].name, &ts[nt]);
      if (!e)
        nt++;
      else if (!first)
        first = e;
    }
    lc__detail_clear();
    rc = nt ? flush_batch(h, ts, nt, wrote) : 0;
    LC__GATE_OUT(h);
    if (rc && !first) first = rc;
    if (n < BATCH) break;
  }
  free(r);
  free(keys);
  free(kp);
  free(kl);
  return first;
}

int lc_tally_flush(lc_t *h, uint64_t max, int flags, uint64_t *flushed) {
  lc__detail_clear();
  if (h == NULL || (flags & ~(LC_TALLY_FORCE | LC_TALLY_SWEEP)))
    return lc__fail(LC_EINVAL, "NULL handle or unknown flags");
  if (LC__ADMIN_WAY(h)) {
    int64_t n = 0;
    int rc = lc__admin_call(h, &n, 1, "tally-flush %llu %d",
                            (unsigned long long)max, flags);
    if (!rc && flushed) *flushed = (uint64_t)n;
    return rc;
  }
  int rc = LC__LOCAL_ONLY(h);
  if (!rc) rc = lc__follow_primary_only(h);
  if (rc) return rc;
  lc__tallies *tb = &h->tallies;
  bool force = flags & LC_TALLY_FORCE;
  int64_t now = lc__clock_mono_us();
  /* only what was queued when the call began: under a stream of changes
   * a forced flush would otherwise never run out of work */
  pthread_mutex_lock(&tb->mu);
  uint64_t last = tb->seq;
  pthread_mutex_unlock(&tb->mu);
  uint64_t taken = 0, wrote = 0;
  int first = 0;
  lc__tally *ts[BATCH], *copy[BATCH];
  for (;;) {
    size_t n = 0;
    LC__GATE_IN(h); /* a batch at a time: its tallies stay (tally_evict.c) */
    pthread_mutex_lock(&tb->mu);
    while (n < BATCH && (max == 0 || taken < max)) {
      lc__tally *t = tb->dirty_head;
      if (t == NULL || t->seq > last || (!force && t->due_us > now)) break;
      tb->dirty_head = t->dnext;
      if (tb->dirty_head == NULL) tb->dirty_tail = NULL;
      atomic_store(&t->dirty, false);
      ts[n++] = t;
      taken++;
    }
    pthread_mutex_unlock(&tb->mu);
    if (n == 0) {
      LC__GATE_OUT(h);
      break;
    }
    memcpy(copy, ts, n * sizeof *ts);
    rc = flush_batch(h, ts, n, &wrote);
    if (rc) { /* all stay scheduled (a flush with nothing new writes
                  nothing); stop here: memcached or the log is in trouble */
      first = rc;
      for (size_t i = 0; i < n; i++) lc__tally_enqueue(h, copy[i], now);
    }
    LC__GATE_OUT(h);
    if (rc) break;
  }
  if (flags & LC_TALLY_SWEEP) {
    rc = sweep(h, &wrote);
    if (rc && !first) first = rc;
  }
  if (flushed) *flushed = wrote;
  if (first) LC__STAT(h, errors, 1);
  return first;
}

/* ---- lc_close: the carries ---- */

typedef struct carry_ctx {
  lc_t *h;
  leveldb_writebatch_t *b;
  size_t n;
} carry_ctx;

bool lc__tally_carry_put(lc__tally *t, leveldb_writebatch_t **b,
                         lc__trec *out) {
  if (!t->loaded || !t->has_record || t->stale) return false;
  bool measured = t->lost_new_p > 0 || t->lost_new_m > 0;
  lc__trec n =
      lc__tally_rec_make(t, t->total, t->ap, t->am, t->losses + measured);
  if (n.carry_p == t->carry_p && n.carry_m == t->carry_m &&
      n.lost_p == t->lost_p && n.lost_m == t->lost_m)
    return false;
  if (!*b) *b = leveldb_writebatch_create();
  lc__tally_rec_put(*b, t, &n);
  *out = n;
  return true;
}

static void carry_one(lc__named *e, void *arg) {
  carry_ctx *x = arg;
  lc__trec n;
  if (lc__tally_carry_put((lc__tally *)e, &x->b, &n)) x->n++;
}

void lc__tally_table_carry(lc_t *h) {
  /* no other thread uses the handle any more (lc_close) */
  if (lc__follow_primary_only(h) != 0 || lc__log_ok(&h->log) != 0) return;
  lc__detail_clear();
  carry_ctx x = {h, NULL, 0};
  lc__names_each(&h->tallies.names, carry_one, &x);
  if (!x.b) return;
  bool sync = h->opt.durability == LC_DURABILITY_SYNC;
  if (lc__log_write(&h->log, x.b, sync) == 0) {
    LC__STAT(h, log_writes, 1);
    if (sync) LC__STAT(h, log_syncs, 1);
  }
  leveldb_writebatch_destroy(x.b);
  lc__detail_clear(); /* a failure here loses only the measurement */
}
