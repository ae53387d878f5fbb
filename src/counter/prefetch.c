/*
 * prefetch.c - lc_next_n with prefetch on (lc_options.prefetch): ids
 * handed out of segments held in memory, and the fetches that fill them.
 *
 * A call takes its ids from the held segments (segment.c; most calls
 * through the lock-free window, seg_fast.c).  When the current segment is
 * half used, the handle's prefetcher thread fetches the next one (a
 * double buffer), so in steady state no caller waits; a caller that finds
 * nothing to take (the first call, a burst faster than a fetch, n larger
 * than what is held) fetches a segment of at least n itself, or waits for
 * the fetch under way.
 *
 * A fetch is a leader's (counter.c's lc__counter_acquire): the counter
 * loaded and claimed, one memcached increment wholly above floor
 * (lc__counter_increment), then the segment's record, synced, with the
 * rewrites of finished segments and the ledger's pending gaps.
 * Invariants:
 *  - a segment is installed while its fetcher still holds the leader role,
 *    so an lc_advance (also a leader) sees it and can drop it;
 *  - c->fetching is set while a fetch is queued or running: one at a time
 *    per counter; callers that need it wait on LC__SEG_CV(c);
 *  - a pending counter (a restored log, backup.c) gets its first segment
 *    only from a memcached that holds it at or above floor
 *    (lc__counter_increment, else LC_EBEHIND); that segment's synced
 *    write also holds a reservation at its end and the reconciled mark.
 */
#include "counter/counter.h"
#include "handle.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* pf.mu held: room for one more in the prefetcher's ring (false when out
 * of memory). */
static bool ring_room(lc_t *h) {
  if (h->pf.qlen < h->pf.qcap) return true;
  size_t cap = h->pf.qcap ? 2 * h->pf.qcap : 64;
  lc__counter **q = malloc(sizeof *q * cap);
  if (q == NULL) return false;
  for (size_t i = 0; i < h->pf.qlen; i++) /* in order, from 0 */
    q[i] = h->pf.q[(h->pf.qhead + i) % h->pf.qcap];
  free(h->pf.q);
  h->pf.q = q;
  h->pf.qcap = cap;
  h->pf.qhead = 0;
  return true;
}

/* mu held: queues a background fetch once the last held segment is half
 * used (out of memory: none; the caller that finds nothing held fetches
 * itself). */
static void schedule(lc_t *h, lc__counter *c) {
  if (c->fetching || !h->pf.started || !lc__seg_low(c)) return;
  pthread_mutex_lock(&h->pf.mu);
  if (ring_room(h)) {
    c->fetching = true;
    c->queued = true;
    h->pf.q[(h->pf.qhead + h->pf.qlen++) % h->pf.qcap] = c;
    pthread_cond_signal(&h->pf.cv);
  }
  pthread_mutex_unlock(&h->pf.mu);
}

/* mu held: takes c off the prefetcher's queue if its fetch has not
 * started; true if it was there (the caller then fetches itself, rather
 * than wait behind other counters' fetches). */
static bool unqueue(lc_t *h, lc__counter *c) {
  bool found = false;
  pthread_mutex_lock(&h->pf.mu);
  if (c->queued) { /* its place stays, empty: the prefetcher skips it */
    for (size_t i = 0; i < h->pf.qlen; i++) {
      lc__counter **slot = &h->pf.q[(h->pf.qhead + i) % h->pf.qcap];
      if (*slot == c) *slot = NULL;
    }
    c->queued = false;
    found = true;
  }
  pthread_mutex_unlock(&h->pf.mu);
  return found;
}

/* Writes b's segment record (synced) with the rewrites of finished
 * segments and, for a pending counter, its reservation and reconciled
 * mark; 0 or the write's error. */
static int write_segment(lc_t *h, lc__counter *c, lc__block *b,
                         const lc__seg *closes, int nclose) {
  leveldb_writebatch_t *wb = leveldb_writebatch_create();
  lc__seg_block(h, c, b, wb);
  LC__SEAM_BEFORE_COMMIT(lc__counter_name(c));
  lc__seg_closes_batch(wb, c, closes, nclose);
  bool reconciles = c->pending; /* leader: nothing else writes it */
  if (reconciles) {
    if (b->last > c->reserved)
      lc__log_batch_reservation(wb, lc__counter_name(c), c->nlen, b->last);
    lc__backup_reconciled(wb, lc__counter_name(c), c->nlen, b->last);
  }
  int rc = lc__log_sync(h, wb, LC__LAT_SEGMENT);
  leveldb_writebatch_destroy(wb);
  if (!rc && reconciles) {
    lc__counter_lock(c);
    if (b->last > c->reserved) c->reserved = b->last;
    c->pending = false;
    lc__counter_unlock(c);
  }
  return rc;
}

/* Takes a segment of at least need values (0: the usual size) as leader,
 * writes it and installs it.  The caller has set c->fetching; it is
 * cleared here and waiters are woken. */
static int fetch(lc_t *h, lc__counter *c, uint64_t need) {
  lc__counter_acquire(c);
  int rc = lc__counter_load(h, c);
  if (!rc && !c->claimed) rc = lc__counter_claim(h, c);
  lc__seg closes[LC__SEG_CLOSES];
  int nclose = lc__seg_closes_take(c, closes);
  lc__block b = {.time_us = lc__clock_now_us()};
  if (!rc) {
    b.n = lc__seg_size(h, c, need);
    if (b.n == 0 || b.n < need)
      rc = lc__fail(LC_EOVERFLOW, "%s stands at %lld", lc__counter_name(c),
                    (long long)c->floor);
  }
  if (!rc) rc = lc__log_ok(&h->log); /* nothing taken from memcached */
  if (!rc) rc = lc__counter_increment(h, c, b.n, &b.last);
  if (!rc) {
    rc = write_segment(h, c, &b, closes, nclose);
    if (!rc) nclose = 0;
    lc__seg_install(h, c, &b, rc, 0, NULL);
    if (rc) lc__claim_note_burned(h, c); /* burned */
  }
  lc__seg_closes_putback(c, closes, nclose);
  lc__counter_lock(c);
  c->fetching = false;
  pthread_cond_broadcast(LC__SEG_CV(c));
  lc__counter_unlock(c);
  lc__counter_release(c);
  return rc;
}

int lc__prefetch_next(lc_t *h, lc__counter *c, uint64_t n, bool wait,
                      int64_t *first) {
  int rc = 0;
  if ((rc = lc__log_ok(&h->log)) != 0) return rc; /* not even what is held */
  if (atomic_load(&c->refusal) && !atomic_load(&c->unknown))
    return lc__claim_refused(h, c); /* refused or released: nothing held
                                       goes out any more; the owner named
                                       (unknown: fetch rereads it) */
  if (lc__seg_fast(c, n, first)) return 0; /* most calls: no lock */
  lc__counter_lock(c);
  for (;;) {
    if (lc__seg_take(c, n, first)) {
      schedule(h, c);
      break;
    }
    /* what is held before a break (memcached jumped between two fetches,
     * or under the one just made) cannot serve n: give it up (a gap) and
     * take from what follows; a fetch holds at least n */
    if (lc__seg_skip_break(c)) continue;
    if (!wait) {
      rc = LC_EWOULDBLOCK; /* no detail: not a failure */
      break;
    }
    if (c->fetching && !unqueue(h, c)) { /* under way: wait for it */
      LC__STAT(h, segment_waits, 1);
      lc__counter_wait(c, LC__SEG_CV(c));
      continue;
    }
    c->fetching = true; /* ours now, queued or not */
    lc__counter_unlock(c);
    rc = fetch(h, c, n);
    lc__counter_lock(c);
    if (rc) break;
  }
  lc__counter_unlock(c);
  return rc;
}

/* ---- the prefetcher thread -------------------------------------------- */

static void *prefetcher(void *arg) {
  lc_t *h = arg;
  pthread_mutex_lock(&h->pf.mu);
  for (;;) {
    while (!h->pf.qlen && !h->pf.stop) pthread_cond_wait(&h->pf.cv, &h->pf.mu);
    if (h->pf.stop) break;
    lc__counter *c = h->pf.q[h->pf.qhead];
    h->pf.qhead = (h->pf.qhead + 1) % h->pf.qcap;
    h->pf.qlen--;
    if (c == NULL) continue; /* taken off (unqueue) */
    c->queued = false;
    pthread_mutex_unlock(&h->pf.mu);
    /* A failure is left for the next caller that finds nothing held: it
     * fetches itself and gets the error. */
    fetch(h, c, 0);
    pthread_mutex_lock(&h->pf.mu);
  }
  pthread_mutex_unlock(&h->pf.mu);
  return NULL;
}

int lc__prefetcher_start(lc_t *h) {
  pthread_mutex_init(&h->pf.mu, NULL);
  pthread_cond_init(&h->pf.cv, NULL);
  /* The application's threads take the signals, not this one. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&h->pf.thread, NULL, prefetcher, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    pthread_cond_destroy(&h->pf.cv);
    pthread_mutex_destroy(&h->pf.mu);
    return lc__fail(LC_ENOMEM, "cannot start the prefetch thread");
  }
  h->pf.started = true;
  return 0;
}

void lc__prefetcher_stop(lc_t *h) {
  if (!h->pf.started) return;
  pthread_mutex_lock(&h->pf.mu);
  h->pf.stop = true;
  pthread_cond_signal(&h->pf.cv);
  pthread_mutex_unlock(&h->pf.mu);
  pthread_join(h->pf.thread, NULL);
  pthread_cond_destroy(&h->pf.cv);
  pthread_mutex_destroy(&h->pf.mu);
  free(h->pf.q);
  h->pf.q = NULL;
  h->pf.qcap = h->pf.qhead = h->pf.qlen = 0;
  h->pf.started = false;
}
