/*
 * tally_evict.c - idle tallies leave memory (lc_options.idle_evict_ms), as
 * idle counters do: counter/evict.c runs the passes, the gate and the
 * thread, and calls this file's scan and evict through the handle's hooks
 * (h->ev.tally_scan, tally_evict, installed by lc_open).
 *
 * The idea is counter/evict.c's: an evicted tally is a tally after
 * lc_close.  Only a flushed one goes: not queued, nothing acknowledged and
 * not applied (una), nothing reserved (out), no failed write not read back
 * (stale), not owned.  If the log's record does not hold its current
 * carries and the losses measured since its last write, they are written
 * first (lc__tally_carry_put, as lc_close does; synced, one batch for the
 * pass); the state is then freed, and the next use loads it from the log
 * and memcached as after a clean restart: the total, the applied sums, the
 * lost amounts and the losses are the record's, exactly.
 *
 * One thing a restart cannot know and this handle does: nothing was
 * pending when the tally left (and nothing changed it since: every change
 * goes through this handle, which loads it first).  So if memcached lost
 * the sums meanwhile, nothing was lost, and the reload must not count a
 * loss as a fresh load of a name with applied sums does.  The handle keeps
 * a 64-bit hash of each such name (gone: 8 to 16 bytes an evicted tally);
 * the reload finds it there (lc__tally_evict_forget), counts the sums as
 * seen and forgets it.  Two names with one hash (about n^2 / 2^65) would
 * only keep one fresh load from counting a loss of what an earlier
 * process may have left pending.
 *
 * What is idle: every call's lookup (tally.c's find: lc_tally_add, get,
 * lost; not a flush's or a sweep's) sets touched; each counting pass
 * clears it and counts the passes in a row that found it clear; at
 * LC__EVICT_IDLE_PASSES a flushed tally is a candidate.
 * Safety: every tally call passes the gate (counter.h), lc_tally_flush a
 * batch at a time.  The scan runs with the gate open under the table's
 * mutex and only marks candidates (only this thread frees tallies before
 * lc_close, so they stay); the eviction runs with the gate closed, when no
 * call holds a tally pointer, and checks each candidate again.
 */
#include "tally/tally.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>

#define WALK_CHUNK 4096 /* entries looked at per hold of the table's mutex */

/* ---- gone: the names evicted with nothing pending ---- */

static uint64_t name_hash(const char *s, size_t n) {
  uint64_t x = 14695981039346656037ull; /* FNV-1a, 64 bits */
  for (size_t i = 0; i < n; i++) x = (x ^ (unsigned char)s[i]) * 1099511628211ull;
  return x ? x : 1; /* 0 marks an empty slot */
}

/* mu held: adds x; false without memory. */
static bool gone_add(lc__tallies *tb, uint64_t x) {
  if (2 * (tb->ngone + 1) > tb->capgone) {
    size_t cap = tb->capgone ? 2 * tb->capgone : 1024;
    uint64_t *g = calloc(cap, sizeof *g);
    if (g == NULL) return false;
    for (size_t i = 0; i < tb->capgone; i++) {
      if (tb->gone[i] == 0) continue;
      size_t j = tb->gone[i] & (cap - 1);
      while (g[j]) j = (j + 1) & (cap - 1);
      g[j] = tb->gone[i];
    }
    free(tb->gone);
    tb->gone = g;
    tb->capgone = cap;
  }
  size_t j = x & (tb->capgone - 1);
  while (tb->gone[j] && tb->gone[j] != x) j = (j + 1) & (tb->capgone - 1);
  if (tb->gone[j] == 0) tb->ngone++;
  tb->gone[j] = x;
  return true;
}

/* mu held: removes x (linear probing, backward shift); true if it was
 * there. */
static bool gone_take(lc__tallies *tb, uint64_t x) {
  if (tb->ngone == 0) return false;
  size_t mask = tb->capgone - 1, j = x & mask;
  while (tb->gone[j] && tb->gone[j] != x) j = (j + 1) & mask;
  if (tb->gone[j] == 0) return false;
  tb->gone[j] = 0;
  tb->ngone--;
  for (size_t k = (j + 1) & mask; tb->gone[k]; k = (k + 1) & mask) {
    size_t home = tb->gone[k] & mask;
    /* moves back unless its home lies cyclically in (j, k] */
    if (j <= k ? (home <= j || home > k) : (home <= j && home > k)) {
      tb->gone[j] = tb->gone[k];
      tb->gone[k] = 0;
      j = k;
    }
  }
  return true;
}

void lc__tally_gone_free(lc__tallies *tb) {
  free(tb->gone);
  tb->gone = NULL;
  tb->ngone = tb->capgone = 0;
}

bool lc__tally_evict_forget(lc_t *h, const lc__tally *t) {
  lc__tallies *tb = &h->tallies;
  pthread_mutex_lock(&tb->mu);
  bool was = tb->ngone && gone_take(tb, name_hash(t->name, t->nlen));
  pthread_mutex_unlock(&tb->mu);
  return was;
}

/* ---- the pass ---- */

typedef struct scan {
  lc__tallies *tb;
  bool count; /* a periodic pass: counts idle passes */
} scan;

static bool evictable(lc__tally *t);

/* table mu held: counts t's idle passes; a candidate at IDLE_PASSES if it
 * could go now (so that a tally that cannot, a failed write's, does not
 * make every pass close the gate for nothing).  False stops a follow-up
 * pass's walk once it is full. */
static bool look(lc__named *e, void *arg) {
  lc__tally *t = (lc__tally *)e;
  scan *s = arg;
  if (atomic_exchange_explicit(&t->touched, false, memory_order_relaxed)) {
    t->idle_passes = 0;
    return true;
  }
  if (s->count && t->idle_passes < LC__EVICT_IDLE_PASSES) t->idle_passes++;
  if (t->idle_passes < LC__EVICT_IDLE_PASSES || t->candidate ||
      !evictable(t))
    return true;
  if (s->tb->ncand == LC__EVICT_PASS_MAX) return s->count;
  t->candidate = true;
  s->tb->cand[s->tb->ncand++] = t;
  return true;
}

size_t lc__tally_evict_scan(lc_t *h, bool count) {
  lc__tallies *tb = &h->tallies;
  scan s = {tb, count};
  size_t at = 0, end = SIZE_MAX;
  /* from the top each time: the candidates of the last pass are gone, so
   * a follow-up walks past the tallies in use only */
  do {
    pthread_mutex_lock(&tb->mu);
    if (end != SIZE_MAX && end != tb->names.nbuckets) { /* grew: again */
      pthread_mutex_unlock(&tb->mu);
      break;
    }
    end = tb->names.nbuckets;
    at = lc__names_walk(&tb->names, at, WALK_CHUNK, look, &s);
    pthread_mutex_unlock(&tb->mu);
  } while (at < end && (count || tb->ncand < LC__EVICT_PASS_MAX));
  return tb->ncand;
}

/* Table mu held: nothing uses t (with the gate closed: nor has since the
 * scan), and everything acknowledged of it is in its record. */
static bool evictable(lc__tally *t) {
  if (atomic_load_explicit(&t->touched, memory_order_relaxed) ||
      atomic_load(&t->dirty))
    return false;
  pthread_mutex_lock(&t->mu);
  bool ok = !t->owned && !t->stale && t->una_p == 0 && t->una_m == 0 &&
            t->out_p == 0 && t->out_m == 0;
  pthread_mutex_unlock(&t->mu);
  return ok;
}

size_t lc__tally_evict_run(lc_t *h) {
  lc__tallies *tb = &h->tallies;
  size_t n = tb->ncand, ng = 0, freed = 0;
  tb->ncand = 0;
  lc__tally *go[LC__EVICT_PASS_MAX];
  lc__trec rec[LC__EVICT_PASS_MAX];
  bool w[LC__EVICT_PASS_MAX];
  leveldb_writebatch_t *b = NULL;
  for (size_t i = 0; i < n; i++) {
    lc__tally *t = tb->cand[i];
    pthread_mutex_lock(&tb->mu);
    t->candidate = false;
    bool ok = evictable(t);
    pthread_mutex_unlock(&tb->mu);
    if (!ok) continue;
    /* the gate is closed: this thread is t's owner in all but the flag */
    w[ng] = lc__tally_carry_put(t, &b, &rec[ng]);
    go[ng++] = t;
  }
  int rc = 0;
  if (b) {
    rc = lc__log_write(&h->log, b, true);
    leveldb_writebatch_destroy(b);
    LC__STAT(h, log_writes, 1);
    LC__STAT(h, log_syncs, 1);
    for (size_t i = 0; i < ng; i++) {
      if (!w[i]) continue;
      if (rc)
        go[i]->stale = true; /* it may have landed: read it back */
      else
        lc__tally_rec_set(go[i], &rec[i]);
    }
    lc__detail_clear(); /* a failure is the log's: its calls report it */
  }
  for (size_t i = 0; i < ng; i++) {
    lc__tally *t = go[i];
    if (w[i] && rc) continue; /* stays, as it is */
    pthread_mutex_lock(&tb->mu);
    /* nothing pending: a sum lost meanwhile lost nothing (if this handle
     * had seen both; else the reload judges as a fresh load does) */
    bool keep = t->loaded && t->seen_p && t->seen_m &&
                !gone_add(tb, name_hash(t->name, t->nlen));
    if (!keep) lc__names_remove(&tb->names, &t->node);
    pthread_mutex_unlock(&tb->mu);
    if (keep) continue; /* no memory to remember it: it stays */
    lc__tally_free(t);
    freed++;
  }
  return freed;
}
