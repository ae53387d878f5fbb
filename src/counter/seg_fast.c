/*
 * seg_fast.c - the lock-free window on a counter's current segment, and
 * the counter's lock that keeps it exact.
 *
 * With prefetch, most calls take ids from the current segment.  While
 * nobody holds the counter's mutex, its window is open: fast_next is the
 * next id of seg[0] and fast_limit bounds it (below), and lc__seg_fast
 * takes n ids
 * with one compare-and-swap on fast_next, no lock.  lc__counter_lock
 * closes the window (an exchange to LC__FAST_CLOSED) and writes what the
 * fast takes used back into seg[0].used and handed, so whoever holds the
 * mutex sees the segments exactly as if every take had been made under
 * it; lc__counter_unlock opens it again on seg[0].  A wait on a condition
 * variable with the mutex (lc__counter_wait) closes it again after.
 *
 * Why a take is safe: a take needs cur + n <= fast_limit, and a window's
 * limit is at most its segment's end + 1; a CAS from cur to cur + n
 * succeeds only while the open window's next is cur, and the windows'
 * ends never go down (seg[0] is replaced only by a later segment), so
 * cur..cur+n-1 lies within the end of the window the caller read the
 * limit of, after cur.  Ids still go out in increasing order
 * per counter (the CAS orders them), and nothing is handed out that the
 * mutex holder cannot account for: the exchange sees every CAS before it.
 * The limit is end + 1 while a fetch is under way or another segment is
 * held, else the segment's half point: past it a take goes the locked
 * way, which schedules the next fetch (one value, where an end and a
 * half point were two).
 *
 * The lock itself is one of LC__LOCK_STRIPES stripes (a mutex and two
 * condition variables), picked by the counter's address, so that a
 * counter does not carry 136 bytes of its own.  Two counters may share a
 * stripe; that is safe because no code holds a counter's lock while it
 * takes another counter's (each section is one counter's; a leader does
 * its I/O with the lock given up, lc__counter_acquire), nor any lock
 * that is held while a counter's is taken (the prefetcher's pf.mu and the
 * table's mu are taken inside a counter's, never the other way round),
 * and every wait on a stripe's cv is a loop on its own counter's
 * predicate, woken by broadcasts (a wake-up for the other counter is
 * spurious for it).  Unlocking also frees the segment state (c->segs)
 * once no segment is held or fetched.
 */
#include "counter/counter.h"
#include "handle.h"

#include <stdint.h>
#include <stdlib.h>

static lc__lock_stripe stripes[LC__LOCK_STRIPES];
static pthread_once_t stripes_once = PTHREAD_ONCE_INIT;

static void stripes_fresh(void) {
  for (size_t i = 0; i < LC__LOCK_STRIPES; i++) {
    pthread_mutex_init(&stripes[i].mu, NULL);
    pthread_cond_init(&stripes[i].cv, NULL);
    pthread_cond_init(&stripes[i].seg_cv, NULL);
  }
}

/* The stripes are the process's, not a handle's: a child forked while a
 * parent thread held one, or waited on one, would find it locked or with
 * waiters that do not exist.  The child (one thread, and none of the
 * parent's counters usable) starts from fresh ones. */
static void stripes_setup(void) {
  stripes_fresh();
  pthread_atfork(NULL, NULL, stripes_fresh);
}

void lc__counter_stripes_init(void) {
  pthread_once(&stripes_once, stripes_setup);
}

lc__lock_stripe *lc__counter_stripe(const lc__counter *c) {
  uint64_t x = (uint64_t)(uintptr_t)c; /* malloc'd: 16-byte aligned */
  x = (x >> 4) * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
  return &stripes[x >> (64 - 10)];
}
_Static_assert(LC__LOCK_STRIPES == 1 << 10, "the hash takes 10 bits");

/* mu held: the window closed, what its takes used written back. */
static void close_window(lc__counter *c) {
  if (atomic_load_explicit(&c->fast_next, memory_order_relaxed) ==
      LC__FAST_CLOSED)
    return;
  int64_t v = atomic_exchange_explicit(&c->fast_next, LC__FAST_CLOSED,
                                       memory_order_acq_rel);
  if (v == LC__FAST_CLOSED) return;
  lc__seg *s = &c->segs->seg[0]; /* open: a segment held, segs set */
  if (v == s->first + (int64_t)s->used)
    return; /* nothing taken: the window opened there (used changes only
               under mu, with the window closed) */
  s->used = (uint32_t)(v - s->first); /* <= the size: v <= its end + 1 */
  c->handed = v - 1;
  if (s->used == s->size) lc__seg_finish_oldest(c);
}

void lc__counter_lock(lc__counter *c) {
  pthread_mutex_lock(&lc__counter_stripe(c)->mu);
  close_window(c);
}

void lc__counter_wait(lc__counter *c, pthread_cond_t *cv) {
  pthread_cond_wait(cv, &lc__counter_stripe(c)->mu);
  close_window(c);
}

void lc__counter_unlock(lc__counter *c) {
  if (c->nseg > 0) {
    const lc__seg *s = &c->segs->seg[0];
    int64_t next = s->first + (int64_t)s->used, end = lc__seg_end(s);
    if (next <= end && end < LC__FAST_CLOSED) { /* the range's last
        segment stays locked: its end + 1 would not fit, and
        LC_VALUE_MAX is the closed mark */
      int64_t size = (int64_t)s->size;
      atomic_store_explicit(&c->fast_limit,
                            c->fetching || c->nseg > 1
                                ? end + 1
                                : end - size / 2, /* below the half */
                            memory_order_relaxed);
      atomic_store_explicit(&c->fast_next, next, memory_order_release);
    }
  } else if (c->segs && !c->fetching) { /* none held, none coming */
    free(c->segs);
    c->segs = NULL;
  }
  pthread_mutex_unlock(&lc__counter_stripe(c)->mu);
}

bool lc__seg_fast(lc__counter *c, uint64_t n, int64_t *first) {
  int64_t cur = atomic_load_explicit(&c->fast_next, memory_order_acquire);
  for (;;) {
    if (cur == LC__FAST_CLOSED) return false;
    int64_t limit = atomic_load_explicit(&c->fast_limit, memory_order_relaxed);
    if (limit < cur || (uint64_t)(limit - cur) < n) return false;
    if (atomic_compare_exchange_weak_explicit(&c->fast_next, &cur,
                                              cur + (int64_t)n,
                                              memory_order_acq_rel,
                                              memory_order_acquire)) {
      *first = cur;
      return true;
    }
  }
}
