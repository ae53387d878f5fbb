/*
 * evict.c - idle eviction (lc_options.idle_evict_ms): counters that no
 * call has used for a while are closed and dropped from memory, so that
 * a handle's memory follows the counters in use, not every name it ever
 * served.
 *
 * The idea: an evicted counter is exactly a counter after lc_close.  Its
 * close writes what a clean close writes (segment records cut to what
 * went out, the exact reservation, the pending ledger entries; one synced
 * batch) and sets memcached back where segments left it ahead, and its
 * next use loads it from the log as a clean restart does.  Every promise
 * then holds for the same reasons as across a clean restart, which the
 * suite already checks.
 *
 * Safety: calls hold counter pointers without any lock (the per-thread
 * cache, the lock-free window), so a counter may be freed only when no
 * call is inside.  With eviction on, every call that uses a counter's
 * state passes a gate: it counts itself in its thread's stripe of
 * h->calls (no shared cache line per call), then checks ev.stop.  A pass
 * sets ev.stop, waits until every stripe counts zero (at most STOP_WAIT;
 * else it gives up until the next pass), evicts, bumps ev.gen (so the
 * per-thread caches forget what they held) and opens the gate again.
 * Without eviction nothing of this runs: the gate is one predictable
 * branch.
 *
 * What is idle: each call sets its counter's touched flag; each pass,
 * every ev interval (a quarter of idle_evict_ms), clears it and counts
 * the passes in a row that found it clear.  At IDLE_PASSES the counter
 * is a candidate, evicted if, under its mutex, it is still untouched and
 * nothing is under way on it (counter.c's lc__counters_evict decides).
 * A pass takes at most PASS_MAX, so that calls never wait long; a full
 * pass is followed by another AGAIN_MS later (not counting idleness),
 * which walks on from where the last one filled up, so that evicting N
 * counters walks the table about once, not N / PASS_MAX times.  Walks
 * hold the table's mutex for WALK_CHUNK entries at a time.
 * The prefetcher thread does not pass the gate: a counter it works on is
 * marked fetching, and such a counter is never evicted.
 * Tallies: each pass also runs the tally layer's part through the hooks
 * h->ev.tally_scan (gate open: idle counts, candidates) and tally_evict
 * (gate closed), tally/tally_evict.c; the tally calls pass the same gate.
 */
#include "counter/counter.h"
#include "handle.h"

#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <time.h>

#define IDLE_PASSES LC__EVICT_IDLE_PASSES /* passes in a row found idle */
#define STOP_WAIT_US 100000 /* a pass waits this long for calls to leave */
#define PASS_MAX LC__EVICT_PASS_MAX /* counters per pass at most (with
                        prefetch they cost two pipelined memcached rounds
                        while calls wait) */
#define TRIM_AFTER 512 /* a pass that freed this many trims the heap */
#define AGAIN_MS 10    /* a full pass is followed by another this soon */
#define WALK_CHUNK 4096 /* entries looked at per hold of the table's mutex */

static _Thread_local struct {
  lc_t *h; /* the handle this thread's outermost call is inside */
  unsigned depth;
} in;

void lc__evict_gate_enter(lc_t *h) {
  if (in.h == h) {
    in.depth++;
    return;
  }
  atomic_long *inside = &h->calls[lc__stripe()].inside;
  for (;;) {
    atomic_fetch_add(inside, 1); /* seq_cst: before the check of stop */
    if (!atomic_load(&h->ev.stop)) break;
    atomic_fetch_sub(inside, 1);
    pthread_mutex_lock(&h->ev.mu);
    while (atomic_load(&h->ev.stop)) pthread_cond_wait(&h->ev.cv, &h->ev.mu);
    pthread_mutex_unlock(&h->ev.mu);
  }
  if (in.h == NULL) {
    in.h = h;
    in.depth = 1;
  }
}

void lc__evict_gate_leave(lc_t *h) {
  if (in.h == h) {
    if (--in.depth > 0) return;
    in.h = NULL;
  }
  atomic_fetch_sub(&h->calls[lc__stripe()].inside, 1);
}

static bool nobody_inside(lc_t *h) {
  long n = 0;
  for (int i = 0; i < LC__STRIPES; i++) n += atomic_load(&h->calls[i].inside);
  return n == 0;
}

/* Closes the gate and waits for the calls inside to leave; false (the
 * gate open again) when they did not within STOP_WAIT_US. */
static bool stop_calls(lc_t *h) {
  atomic_store(&h->ev.stop, true); /* seq_cst: before the reads below */
  int64_t until = lc__clock_mono_us() + STOP_WAIT_US;
  while (!nobody_inside(h)) {
    if (lc__clock_mono_us() > until) return false;
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  return true;
}

static void start_calls(lc_t *h) {
  pthread_mutex_lock(&h->ev.mu);
  atomic_store(&h->ev.stop, false);
  pthread_cond_broadcast(&h->ev.cv);
  pthread_mutex_unlock(&h->ev.mu);
}

typedef struct scan {
  lc__counter **v;
  size_t n;
  bool count; /* a periodic pass: counts idle passes (not one that follows
                 a full pass: the count measures time) */
} scan;

/* Under the table's mutex: counts c's idle passes; a candidate at
 * IDLE_PASSES.  False stops a follow-up pass's walk once it is full. */
static bool look(lc__named *e, void *arg) {
  lc__counter *c = (lc__counter *)e;
  scan *s = arg;
  if (atomic_exchange_explicit(&c->touched, false, memory_order_relaxed)) {
    c->idle_passes = 0;
    return true;
  }
  if (s->count && c->idle_passes < IDLE_PASSES) c->idle_passes++;
  if (c->idle_passes < IDLE_PASSES) return true;
  if (s->n == PASS_MAX) return s->count; /* a counting pass sees them all */
  s->v[s->n++] = c;
  return true;
}

#ifdef LC_TEST_SEAMS
void (*lc__test_walk_chunk)(lc_t *h, size_t candidates);
#endif

/* Walks the table WALK_CHUNK entries at a time (new names are not held
 * up by one long walk): a counting pass all of it, a follow-up from where
 * the last pass filled up, until it is full.  If the table grew between
 * two chunks, entries moved to buckets not walked yet, and one already
 * taken would be taken again (evicted and freed twice): the walk ends
 * there, and the next pass starts from the top. */
static void walk(lc_t *h, scan *s) {
  size_t at = s->count ? 0 : h->ev.resume, resume = 0, end = SIZE_MAX;
  do {
    size_t from = at;
    bool full = s->n == PASS_MAX;
    if (end != SIZE_MAX) LC__SEAM_WALK_CHUNK(h, s->n);
    pthread_mutex_lock(&h->counters.mu);
    if (end != SIZE_MAX && end != h->counters.names.nbuckets) {
      pthread_mutex_unlock(&h->counters.mu);
      resume = 0;
      break;
    }
    end = h->counters.names.nbuckets;
    at = lc__names_walk(&h->counters.names, at, WALK_CHUNK, look, s);
    pthread_mutex_unlock(&h->counters.mu);
    if (!s->count) resume = at;    /* where it filled up */
    else if (!full) resume = from; /* the chunk it filled up in */
  } while (at < end && (s->count || s->n < PASS_MAX));
  h->ev.resume = resume;
}

/* Returns the number evicted (PASS_MAX: there may be more), or a negative
 * code. */
static int pass(lc_t *h, bool count) {
  if (atomic_load(&h->standby) || lc__log_ok(&h->log) != 0) return 0;
  lc__counter *v[PASS_MAX];
  scan s = {v, 0, count};
  walk(h, &s);
  size_t nt = h->ev.tally_scan ? h->ev.tally_scan(h, count) : 0, tf = 0;
  int rc = 0;
  if (s.n > 0 || nt > 0) {
    if (!stop_calls(h)) {
      atomic_fetch_add(&h->ev.skips, 1); /* the tallies' candidates stay */
    } else {
      rc = s.n ? lc__counters_evict(h, s.v, s.n) : 0;
      if (rc > 0) {
        atomic_fetch_add(&h->ev.gen, 1); /* before the gate opens */
        atomic_fetch_add(&h->ev.evictions, (uint64_t)rc);
      }
      if (nt) tf = h->ev.tally_evict(h);
      if (tf) atomic_fetch_add(&h->ev.tally_evictions, (uint64_t)tf);
    }
    start_calls(h);
  }
#ifdef __GLIBC__
  if ((rc > 0 ? (size_t)rc : 0) + tf >= TRIM_AFTER)
    malloc_trim(0); /* the freed pages back to the OS */
#endif
  return tf == PASS_MAX ? PASS_MAX : rc;
}

static void *evictor(void *arg) {
  lc_t *h = arg;
  int64_t period = h->opt.idle_evict_ms / 4;
  if (period < 10) period = 10;
  if (period > 60000) period = 60000;
  int64_t every = period;
  pthread_mutex_lock(&h->ev.mu);
  while (!h->ev.quit) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + every % 1000 * 1000000;
    ts.tv_sec += (time_t)(every / 1000 + ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    pthread_cond_timedwait(&h->ev.cv, &h->ev.mu, &ts);
    if (h->ev.quit) break;
    pthread_mutex_unlock(&h->ev.mu);
    /* a failure is the log's: its calls report it */
    every = pass(h, every == period) == PASS_MAX ? AGAIN_MS : period;
    pthread_mutex_lock(&h->ev.mu);
  }
  pthread_mutex_unlock(&h->ev.mu);
  return NULL;
}

int lc__evict_start(lc_t *h) {
  pthread_condattr_t ca;
  pthread_mutex_init(&h->ev.mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->ev.cv, &ca);
  pthread_condattr_destroy(&ca);
  h->ev.started = h->ev.quit = false;
  h->ev.inited = true;
  if (!h->ev.on) return 0;
  sigset_t all, old; /* the application's threads take the signals */
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&h->ev.thread, NULL, evictor, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return lc__fail(LC_ENOMEM, "cannot start the eviction thread");
  h->ev.started = true;
  return 0;
}

void lc__evict_stop(lc_t *h) {
  if (h->ev.started) {
    pthread_mutex_lock(&h->ev.mu);
    h->ev.quit = true;
    pthread_cond_broadcast(&h->ev.cv);
    pthread_mutex_unlock(&h->ev.mu);
    pthread_join(h->ev.thread, NULL);
    h->ev.started = false;
  }
  if (h->ev.inited) {
    pthread_cond_destroy(&h->ev.cv);
    pthread_mutex_destroy(&h->ev.mu);
    h->ev.inited = false;
  }
}
