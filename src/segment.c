/*
 * segment.c - prefetched segments (lc_options.prefetch): ids handed out
 * from memory.
 *
 * A segment is a block of S values taken with one memcached "incr S" and
 * written to the log, synced, as an LC_RECORD_SEGMENT_OPEN record before
 * any of its values goes out.  lc_next_n then hands values out of the held
 * segments, with no memcached and no LevelDB: most calls without a lock,
 * through the current segment's window (seg_fast.c), the rest under the
 * counter's mutex.
 * When the current segment is half used, the handle's prefetcher thread
 * fetches the next one (a double buffer), so in steady state no caller
 * waits; a caller that finds nothing to take (the first call, a burst
 * faster than a fetch, n larger than what is held) fetches a segment of at
 * least n itself, or waits for the fetch under way.
 *
 * Invariants, per counter:
 *  - held segments lie above everything handed out and above each other
 *    (a fetch goes through lc__counter_increment, whose block lies above
 *    floor, and floor moves to the segment's end), so values strictly
 *    increase per handle;
 *  - a segment is installed while its fetcher still holds the leader role,
 *    so an lc_advance (also a leader) sees it and can drop it;
 *  - every finished segment (used up, dropped, or held at lc_close) gets
 *    its record rewritten with exactly what went out (LC_RECORD_SEGMENT,
 *    keyed by the last value handed out; no record if none), riding along
 *    with the next fetch's synced write or lc_close's; a crash leaves them
 *    LC_RECORD_SEGMENT_OPEN, which verify reports as a prefetch gap, and
 *    the restart starts above them (never reissues);
 *  - a failed fetch write burns the block (floor moved); nothing of it
 *    goes out.
 *  - a pending counter (a restored log, backup.c) gets its first segment
 *    only from a memcached that holds it at or above floor
 *    (lc__counter_increment, else LC_EBEHIND); that segment's synced
 *    write also holds a reservation at its end and the reconciled mark.
 */
#include "counter.h"

#include <signal.h>
#include <string.h>
#include <time.h>

void lc__seg_init(lc__counter *c) {
  pthread_cond_init(&c->seg_cv, NULL);
  atomic_init(&c->fast_next, LC__FAST_CLOSED); /* seg_fast.c */
}

void lc__seg_destroy(lc__counter *c) {
  pthread_cond_destroy(&c->seg_cv);
}

/* mu held: the oldest held segment is finished; it waits in closes for
 * its record to be rewritten (the oldest waiting one is dropped when full:
 * its record stays open, which is safe). */
void lc__seg_finish_oldest(lc__counter *c) {
  if (c->nclose == LC__SEG_CLOSES) {
    memmove(c->closes, c->closes + 1,
            sizeof c->closes[0] * (LC__SEG_CLOSES - 1));
    c->nclose--;
  }
  c->closes[c->nclose++] = c->seg[0];
  memmove(c->seg, c->seg + 1, sizeof c->seg[0] * (size_t)(c->nseg - 1));
  c->nseg--;
}

static uint64_t seg_size(const lc__seg *s) {
  return (uint64_t)(s->end - s->first) + 1;
}

static uint64_t seg_left(const lc__seg *s) {
  return seg_size(s) - s->used;
}

/* mu held: takes n values from the held segments when they hold n
 * contiguous values from the next one on; false otherwise. */
static bool take(lc__counter *c, uint64_t n, int64_t *first) {
  uint64_t have = 0;
  for (int k = 0; k < c->nseg && have < n; k++) {
    if (k > 0 && c->seg[k].first - 1 != c->seg[k - 1].end) break;
    have += seg_left(&c->seg[k]);
  }
  if (have < n) return false;
  *first = c->seg[0].first + (int64_t)c->seg[0].used;
  for (uint64_t left = n; left;) {
    lc__seg *s = &c->seg[0];
    uint64_t t = seg_left(s) < left ? seg_left(s) : left;
    s->used += t;
    left -= t;
    if (seg_left(s) == 0) lc__seg_finish_oldest(c);
  }
  c->handed = *first + (int64_t)(n - 1);
  return true;
}

/* mu held: queues a background fetch once the last held segment is half
 * used. */
static void schedule(lc_t *h, lc__counter *c) {
  if (c->fetching || c->nseg > 1 || !h->pf.started) return;
  if (c->nseg == 1) {
    const lc__seg *s = &c->seg[0];
    if (seg_left(s) > seg_size(s) / 2) return;
  }
  c->fetching = true;
  pthread_mutex_lock(&h->pf.mu);
  c->queued = true;
  c->qnext = NULL;
  if (h->pf.tail)
    h->pf.tail->qnext = c;
  else
    h->pf.head = c;
  h->pf.tail = c;
  pthread_cond_signal(&h->pf.cv);
  pthread_mutex_unlock(&h->pf.mu);
}

/* mu held: the size of the next segment.  Auto: the rate since the last
 * fetch times one second, within half to 16 times the last size and
 * within LC_PREFETCH_AUTO_MIN..MAX. */
static uint64_t next_size(lc_t *h, lc__counter *c) {
  if (h->opt.prefetch != LC_PREFETCH_AUTO)
    return h->opt.prefetch < LC_BLOCK_MAX ? h->opt.prefetch : LC_BLOCK_MAX;
  int64_t now = lc__mono_us();
  if (c->seg_size == 0) {
    c->seg_size = LC_PREFETCH_AUTO_MIN;
  } else {
    int64_t dt = now - c->sized_us;
    if (dt < 1000) dt = 1000;
    double rate = (double)(c->handed - c->sized_handed) * 1e6 / (double)dt;
    double lo = (double)c->seg_size / 2, hi = (double)c->seg_size * 16;
    double want = rate < lo ? lo : rate > hi ? hi : rate;
    if (want < (double)LC_PREFETCH_AUTO_MIN)
      want = (double)LC_PREFETCH_AUTO_MIN;
    if (want > (double)LC_PREFETCH_AUTO_MAX)
      want = (double)LC_PREFETCH_AUTO_MAX;
    c->seg_size = (uint64_t)want;
  }
  c->sized_us = now;
  c->sized_handed = c->handed;
  return c->seg_size;
}

/* Adds to b the rewrite of finished segment s's record: exactly what went
 * out of it, or no record if nothing did; and the ledger entry for its
 * unused rest, up to gap_to (above it the values are given back). */
static void rewrite(leveldb_writebatch_t *b, const lc__counter *c,
                    const lc__seg *s, int64_t gap_to) {
  if (s->used < seg_size(s)) {
    lc__log_batch_unrecord(b, c->name, c->nlen, s->end);
    lc__gap g = {s->first + (int64_t)s->used, s->end < gap_to ? s->end : gap_to,
                 LC_GAP_SEGMENT};
    if (g.first <= g.last) lc__ledger_batch(b, c, &g, 1);
  }
  if (s->used > 0)
    lc__log_batch_record(b, c->name, c->nlen, s->first + (int64_t)(s->used - 1),
                         LC_RECORD_SEGMENT, s->used, s->time_us);
}

/*
 * Takes a segment of at least need values (0: the usual size) as leader,
 * writes its record (synced, with the rewrites of finished segments) and
 * installs it.  The caller has set c->fetching; it is cleared here and
 * waiters are woken.
 */
static int fetch(lc_t *h, lc__counter *c, uint64_t need) {
  lc__counter_acquire(c);
  int rc = lc__counter_load(h, c);
  if (!rc && !c->claimed) rc = lc__counter_claim(h, c);
  lc__seg closes[LC__SEG_CLOSES];
  lc__counter_lock(c);
  uint64_t size = next_size(h, c);
  if (size < need) size = need;
  int nclose = c->nclose;
  memcpy(closes, c->closes, sizeof closes[0] * (size_t)nclose);
  c->nclose = 0;
  lc__counter_unlock(c);

  int64_t last = 0, now = lc__now_us();
  lc__gap gaps[LC__GAPS];
  int ngaps = 0;
  if (!rc) {
    uint64_t room = (uint64_t)(LC_VALUE_MAX - c->floor);
    if (room == 0 || room < need)
      rc = lc__fail(LC_EOVERFLOW, "%s stands at %lld", c->name,
                    (long long)c->floor);
    else if (size > room)
      size = room; /* never past the end */
  }
  if (!rc) rc = lc__log_ok(&h->log); /* nothing taken from memcached */
  if (!rc) rc = lc__counter_increment(h, c, size, &last);
  if (!rc) {
    c->floor = last; /* handed out, held or burned: never again */
    c->used = true;
    lc__counter_lock(c);
    lc__ledger_taken(c, last - (int64_t)(size - 1), last, last);
    ngaps = lc__ledger_take(&h->log, c, gaps);
    lc__counter_unlock(c);
    LC__SEAM_BEFORE_COMMIT(c->name);
    leveldb_writebatch_t *b = leveldb_writebatch_create();
    lc__log_batch_record(b, c->name, c->nlen, last, LC_RECORD_SEGMENT_OPEN,
                         size, now);
    for (int i = 0; i < nclose; i++) rewrite(b, c, &closes[i], LC_VALUE_MAX);
    lc__ledger_batch(b, c, gaps, ngaps);
    bool reconciles = c->pending; /* leader: nothing else writes it */
    if (reconciles) {
      if (last > c->reserved)
        lc__log_batch_reservation(b, c->name, c->nlen, last);
      lc__batch_reconciled(b, c->name, c->nlen, last);
    }
    int64_t t0 = lc__mono_us();
    rc = lc__log_write(&h->log, b, true);
    lc__lat_record(h, LC__LAT_SEGMENT, t0);
    leveldb_writebatch_destroy(b);
    LC__STAT(h, log_writes, 1);
    LC__STAT(h, log_syncs, 1);
    if (!rc) {
      LC__STAT(h, segments, 1);
      nclose = 0;
      if (reconciles) {
        lc__counter_lock(c);
        if (last > c->reserved) c->reserved = last;
        c->pending = false;
        lc__counter_unlock(c);
      }
    }
  }
  lc__counter_lock(c);
  if (!rc) {
    if (c->nseg == LC__SEGS) lc__seg_finish_oldest(c);
    c->seg[c->nseg++] = (lc__seg){last - (int64_t)(size - 1), last, now, 0};
  } else if (last) { /* burned: the ledger says so next time */
    lc__ledger_putback(c, gaps, ngaps);
    lc__ledger_gap(c, last - (int64_t)(size - 1), last, LC_GAP_BURNED);
    c->seg_size = 0; /* auto: start small again, so that a write
                                 outage does not burn a large segment per
                                 attempt */
  }
  /* rewrites not written: back in front (their records stay open if
   * they do not fit, which is safe) */
  while (nclose > 0 && c->nclose < LC__SEG_CLOSES) {
    memmove(c->closes + 1, c->closes, sizeof c->closes[0] * (size_t)c->nclose);
    c->closes[0] = closes[--nclose];
    c->nclose++;
  }
  c->fetching = false;
  pthread_cond_broadcast(&c->seg_cv);
  lc__counter_unlock(c);
  lc__counter_release(c);
  return rc;
}

/* ---- first.c's batch of first uses (the caller is leader, fetching) -- */

uint64_t lc__seg_first_size(lc_t *h, lc__counter *c, uint64_t need) {
  lc__counter_lock(c);
  uint64_t size = next_size(h, c);
  lc__counter_unlock(c);
  if (size < need) size = need;
  uint64_t room = (uint64_t)(LC_VALUE_MAX - c->floor);
  return size > room ? room : size;
}

void lc__seg_first_block(lc_t *h, lc__counter *c, lc__block *b,
                         leveldb_writebatch_t *wb) {
  c->floor = b->last; /* handed out, held or burned: never again */
  c->used = true;
  lc__counter_lock(c);
  lc__ledger_taken(c, b->last - (int64_t)(b->n - 1), b->last, b->last);
  b->ngaps = lc__ledger_take(&h->log, c, b->gaps);
  lc__counter_unlock(c);
  lc__log_batch_record(wb, c->name, c->nlen, b->last, LC_RECORD_SEGMENT_OPEN,
                       b->n, b->time_us);
  lc__ledger_batch(wb, c, b->gaps, b->ngaps);
}

void lc__seg_first_done(lc_t *h, lc__counter *c, const lc__block *b, int rc,
                        uint64_t n, int64_t *first) {
  lc__counter_lock(c);
  if (!rc) {
    LC__STAT(h, segments, 1);
    c->seg[c->nseg++] = (lc__seg){b->last - (int64_t)(b->n - 1), b->last,
                                  b->time_us, 0};
    take(c, n, first); /* b->n >= n (the next use schedules a fetch) */
  } else { /* burned: the ledger says so next time */
    lc__ledger_putback(c, b->gaps, b->ngaps);
    lc__ledger_gap(c, b->last - (int64_t)(b->n - 1), b->last, LC_GAP_BURNED);
    c->seg_size = 0;
  }
  lc__counter_unlock(c);
}

/* mu held: takes c off the prefetcher's queue if its fetch has not
 * started; true if it was there (the caller then fetches itself, rather
 * than wait behind other counters' fetches). */
static bool unqueue(lc_t *h, lc__counter *c) {
  bool found = false;
  pthread_mutex_lock(&h->pf.mu);
  if (c->queued) {
    lc__counter **link = &h->pf.head, *prev = NULL;
    while (*link != c) {
      prev = *link;
      link = &(*link)->qnext;
    }
    *link = c->qnext;
    if (h->pf.tail == c) h->pf.tail = prev;
    c->queued = false;
    found = true;
  }
  pthread_mutex_unlock(&h->pf.mu);
  return found;
}

int lc__seg_next(lc_t *h, lc__counter *c, uint64_t n, int64_t *first) {
  int rc = 0;
  bool fetched = false;
  if ((rc = lc__log_ok(&h->log)) != 0) return rc; /* not even what is held */
  if (atomic_load(&c->refusal)) /* refused or released: nothing held goes
                                     out any more; the owner named */
    return lc__claim_refused(c);
  if (lc__seg_fast(c, n, first)) return 0; /* most calls: no lock */
  lc__counter_lock(c);
  for (;;) {
    if (take(c, n, first)) {
      schedule(h, c);
      break;
    }
    if (fetched) {
      /* what is held before the new segment is not contiguous with it:
       * give it up (a gap), the new segment alone holds n */
      while (c->nseg > 1) lc__seg_finish_oldest(c);
      fetched = false;
      continue;
    }
    if (c->fetching && !unqueue(h, c)) { /* under way: wait for it */
      LC__STAT(h, segment_waits, 1);
      lc__counter_wait(c, &c->seg_cv);
      continue;
    }
    c->fetching = true; /* ours now, queued or not */
    lc__counter_unlock(c);
    rc = fetch(h, c, n);
    lc__counter_lock(c);
    if (rc) break;
    fetched = true;
  }
  lc__counter_unlock(c);
  return rc;
}

int lc__seg_drop(lc_t *h, lc__counter *c, int64_t below) {
  lc__seg closes[LC__SEG_CLOSES];
  int nclose = 0;
  int64_t reserve = 0;
  lc__counter_lock(c);
  if (c->nseg > 0 && c->seg[0].first + (int64_t)c->seg[0].used <= below) {
    while (c->nseg > 0) lc__seg_finish_oldest(c);
    nclose = c->nclose;
    memcpy(closes, c->closes, sizeof closes[0] * (size_t)nclose);
    c->nclose = 0;
    reserve = below > c->reserved ? below : c->reserved;
  }
  lc__counter_unlock(c);
  if (nclose == 0) return 0;
  /* The records cut to what went out, and the reservation at below in the
   * same synced write: after it no restore starts below below. */
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  for (int i = 0; i < nclose; i++) rewrite(b, c, &closes[i], LC_VALUE_MAX);
  lc__log_batch_reservation(b, c->name, c->nlen, reserve);
  int64_t t0 = lc__mono_us();
  int rc = lc__log_write(&h->log, b, true);
  lc__lat_record(h, LC__LAT_RESERVATION, t0);
  leveldb_writebatch_destroy(b);
  LC__STAT(h, log_writes, 1);
  LC__STAT(h, log_syncs, 1);
  if (rc) return rc;
  lc__counter_lock(c);
  if (reserve > c->reserved) c->reserved = reserve;
  lc__counter_unlock(c);
  return 0;
}

void lc__seg_advanced(lc__counter *c, int64_t target) {
  lc__counter_lock(c);
  if (c->handed && target > c->handed) c->handed = target;
  lc__counter_unlock(c);
}

int64_t lc__seg_close(lc__counter *c, leveldb_writebatch_t *b) {
  lc__counter_lock(c); /* the window's takes counted (seg_fast.c) */
  while (c->nseg > 0) lc__seg_finish_oldest(c);
  lc__counter_unlock(c); /* no segment: the window stays closed */
  if (c->nclose == 0 && !c->handed) return -1;
  /* Give back only the unused values contiguous below floor: from the
   * newest segment down, while each ends where the next one starts and
   * nothing of it went out.  Values between segments (memcached jumped:
   * someone else incremented) are never given back. */
  int64_t to = c->floor;
  for (int i = c->nclose - 1; i >= 0; i--) {
    const lc__seg *s = &c->closes[i];
    if (s->end != to) break;
    if (s->used > 0) { /* its last value that went out */
      to = s->first + (int64_t)(s->used - 1);
      break;
    }
    to = s->first - 1;
  }
  for (int i = 0; i < c->nclose; i++) rewrite(b, c, &c->closes[i], to);
  c->nclose = 0;
  return to > c->handed ? to : c->handed;
}

int64_t lc__seg_current(lc__counter *c) {
  lc__counter_lock(c);
  int64_t v = c->handed;
  lc__counter_unlock(c);
  return v;
}

/* ---- the prefetcher thread -------------------------------------------- */

static void *prefetcher(void *arg) {
  lc_t *h = arg;
  pthread_mutex_lock(&h->pf.mu);
  for (;;) {
    while (!h->pf.head && !h->pf.stop) pthread_cond_wait(&h->pf.cv, &h->pf.mu);
    if (h->pf.stop) break;
    lc__counter *c = h->pf.head;
    h->pf.head = c->qnext;
    if (!h->pf.head) h->pf.tail = NULL;
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
  h->pf.started = false;
}
