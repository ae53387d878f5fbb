/*
 * segment.c - prefetched segments (lc_options.prefetch): their state and
 * bookkeeping, a leaf of the library (it calls nothing of counter.c's;
 * taking a segment from memcached and the prefetcher thread are
 * prefetch.c's, which drives these pieces).
 *
 * A segment is a block of S values taken with one memcached "incr S" and
 * written to the log, synced, as an LC_RECORD_SEGMENT_OPEN record before
 * any of its values goes out (lc__seg_block, then lc__seg_install after
 * the write).  Values then go out of the held segments with no memcached
 * and no LevelDB: most through the current segment's lock-free window
 * (seg_fast.c), the rest under the counter's mutex (lc__seg_take).
 *
 * Invariants, per counter:
 *  - held segments lie above everything handed out and above each other
 *    (each is a block wholly above floor, and lc__seg_block moves floor
 *    to its end), so values strictly increase per handle;
 *  - every finished segment (used up, dropped, or held at lc_close) gets
 *    its record rewritten with exactly what went out (LC_RECORD_SEGMENT,
 *    keyed by the last value handed out; no record if none), riding along
 *    with the next fetch's synced write or lc_close's; a crash leaves them
 *    LC_RECORD_SEGMENT_OPEN, which verify reports as a prefetch gap, and
 *    the restart starts above them (never reissues);
 *  - a segment whose write failed is burned (floor moved, a ledger gap);
 *    nothing of it goes out.
 */
#include "counter/counter.h"
#include "handle.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void lc__seg_init(lc__counter *c) {
  atomic_init(&c->fast_next, LC__FAST_CLOSED); /* seg_fast.c */
}

void lc__seg_destroy(lc__counter *c) {
  free(c->segs);
  c->segs = NULL;
}

/* mu held: c->segs, allocated on first need with room for one segment
 * (NULL when out of memory). */
_Static_assert(LC_PREFETCH_AUTO_MAX <= UINT32_MAX, "lc__segs.seg_size");

static lc__segs *segs(lc__counter *c) {
  if (c->segs == NULL) {
    c->segs = calloc(1, sizeof *c->segs + sizeof c->segs->seg[0]);
    if (c->segs) c->segs->cap = 1;
  }
  return c->segs;
}

/* mu held, segs set: room for one more held segment, growing segs to
 * LC__SEGS when full (the counter is not on the prefetcher's queue while
 * its segment is installed, so nothing else reads the old block); when
 * that fails or it is already that big, the oldest is finished. */
static void make_room(lc__counter *c) {
  if (c->nseg < c->segs->cap) return;
  if (c->segs->cap < LC__SEGS) {
    lc__segs *g =
        realloc(c->segs, sizeof *g + sizeof g->seg[0] * (size_t)LC__SEGS);
    if (g) {
      c->segs = g;
      g->cap = LC__SEGS;
      return;
    }
  }
  lc__seg_finish_oldest(c);
}

/* mu held: the oldest held segment is finished; it waits in closes for
 * its record to be rewritten (the oldest waiting one is dropped when full,
 * and this one when there is no memory: its record stays open, which is
 * safe). */
static void finish(lc__counter *c, const lc__seg *s) {
  lc__rare *r = lc__counter_rare(c);
  if (r && c->nclose == LC__SEG_CLOSES) {
    memmove(r->closes, r->closes + 1,
            sizeof r->closes[0] * (LC__SEG_CLOSES - 1));
    c->nclose--;
  }
  if (r) r->closes[c->nclose++] = *s;
}

void lc__seg_finish_oldest(lc__counter *c) {
  lc__seg *v = c->segs->seg; /* nseg > 0: segs set */
  finish(c, &v[0]);
  memmove(v, v + 1, sizeof v[0] * (size_t)(c->nseg - 1));
  c->nseg--;
}

static uint64_t seg_size(const lc__seg *s) {
  return s->size;
}

static uint64_t seg_left(const lc__seg *s) {
  return seg_size(s) - s->used;
}

/* Whether held segment k (> 0) goes on where segment k - 1 ends. */
static bool follows(const lc__counter *c, int k) {
  return c->segs->seg[k].first - 1 == lc__seg_end(&c->segs->seg[k - 1]);
}

bool lc__seg_take(lc__counter *c, uint64_t n, int64_t *first) {
  uint64_t have = 0;
  const lc__seg *v = c->nseg ? c->segs->seg : NULL;
  for (int k = 0; k < c->nseg && have < n; k++) {
    if (k > 0 && !follows(c, k)) break;
    have += seg_left(&v[k]);
  }
  if (have < n) return false;
  *first = v[0].first + (int64_t)v[0].used;
  for (uint64_t left = n; left;) {
    lc__seg *s = &c->segs->seg[0];
    uint64_t t = seg_left(s) < left ? seg_left(s) : left;
    s->used += (uint32_t)t; /* t <= the size */
    left -= t;
    if (seg_left(s) == 0) lc__seg_finish_oldest(c);
  }
  c->handed = *first + (int64_t)(n - 1);
  return true;
}

bool lc__seg_skip_break(lc__counter *c) {
  for (int k = 1; k < c->nseg; k++)
    if (!follows(c, k)) {
      while (k-- > 0) lc__seg_finish_oldest(c);
      return true;
    }
  return false;
}

bool lc__seg_low(const lc__counter *c) {
  return c->nseg == 0 || (c->nseg == 1 && seg_left(&c->segs->seg[0]) <=
                                              seg_size(&c->segs->seg[0]) / 2);
}

/* mu held: the size of the next segment.  Auto: the rate since the last
 * fetch times one second, within half to 16 times the last size and
 * within LC_PREFETCH_AUTO_MIN..MAX. */
static uint64_t next_size(lc_t *h, lc__counter *c) {
  if (h->opt.prefetch != LC_PREFETCH_AUTO)
    return h->opt.prefetch < LC_BLOCK_MAX ? h->opt.prefetch : LC_BLOCK_MAX;
  uint32_t now_ms = (uint32_t)(lc__clock_mono_us() / 1000);
  lc__segs *g = segs(c); /* the state a fetch needs, from now on */
  if (g == NULL) return LC_PREFETCH_AUTO_MIN; /* out of memory: no history */
  if (g->seg_size == 0) {
    g->seg_size = LC_PREFETCH_AUTO_MIN;
  } else {
    uint32_t dt = now_ms - g->sized_ms; /* modulo 2^32 ms: 49 days */
    if (dt < 1) dt = 1;
    uint32_t went = (uint32_t)c->handed - g->sized_handed; /* modulo 2^32 */
    double rate = (double)went * 1e3 / (double)dt;
    double lo = (double)g->seg_size / 2, hi = (double)g->seg_size * 16;
    double want = rate < lo ? lo : rate > hi ? hi : rate;
    if (want < (double)LC_PREFETCH_AUTO_MIN)
      want = (double)LC_PREFETCH_AUTO_MIN;
    if (want > (double)LC_PREFETCH_AUTO_MAX)
      want = (double)LC_PREFETCH_AUTO_MAX;
    g->seg_size = (uint32_t)want; /* <= LC_PREFETCH_AUTO_MAX */
  }
  g->sized_ms = now_ms;
  g->sized_handed = (uint32_t)c->handed;
  return g->seg_size;
}

/* Adds to b the rewrite of finished segment s's record: exactly what went
 * out of it, or no record if nothing did; and the ledger entry for its
 * unused rest, up to gap_to (above it the values are given back). */
static void rewrite(leveldb_writebatch_t *b, const lc__counter *c,
                    const lc__seg *s, int64_t gap_to) {
  if (s->used < seg_size(s)) {
    int64_t end = lc__seg_end(s);
    lc__log_batch_unrecord(b, lc__counter_name(c), c->nlen, end);
    lc__gap g = {s->first + (int64_t)s->used, end < gap_to ? end : gap_to,
                 LC_GAP_SEGMENT};
    if (g.first <= g.last) lc__ledger_batch(b, c, &g, 1);
  }
  if (s->used > 0)
    lc__log_batch_record(b, lc__counter_name(c), c->nlen,
                         s->first + (int64_t)(s->used - 1), LC_RECORD_SEGMENT,
                         s->used, s->time_us);
}

/* ---- a fetch's pieces (prefetch.c, first.c) --------------------------- */

uint64_t lc__seg_size(lc_t *h, lc__counter *c, uint64_t need) {
  lc__counter_lock(c);
  uint64_t size = next_size(h, c);
  lc__counter_unlock(c);
  if (size < need) size = need;
  uint64_t room = (uint64_t)(LC_VALUE_MAX - c->floor);
  return size > room ? room : size;
}

void lc__seg_block(lc_t *h, lc__counter *c, lc__block *b,
                   leveldb_writebatch_t *wb) {
  c->floor = b->last; /* handed out, held or burned: never again */
  c->used = true;
  lc__counter_lock(c);
  lc__ledger_taken(c, b->last - (int64_t)(b->n - 1), b->last, b->last);
  b->ngaps = lc__ledger_take(&h->log, c, b->gaps);
  lc__counter_unlock(c);
  lc__log_batch_record(wb, lc__counter_name(c), c->nlen, b->last,
                       LC_RECORD_SEGMENT_OPEN, b->n, b->time_us);
  lc__ledger_batch(wb, c, b->gaps, b->ngaps);
}

void lc__seg_install(lc_t *h, lc__counter *c, const lc__block *b, int rc,
                     uint64_t n, int64_t *first) {
  lc__counter_lock(c);
  /* b->n <= LC_BLOCK_MAX: a segment's size (lc__seg_size) */
  lc__seg s = {b->last - (int64_t)(b->n - 1), b->time_us, (uint32_t)b->n, 0};
  if (!rc && segs(c) == NULL) { /* out of memory: not held; the n ids go
      out of it and the rest is finished (its record rewritten, or left
      open: safe) */
    LC__STAT(h, segments, 1);
    if (first) {
      *first = s.first;
      s.used = (uint32_t)n; /* n <= b->n */
      c->handed = s.first + (int64_t)(n - 1);
    }
    finish(c, &s);
  } else if (!rc) {
    LC__STAT(h, segments, 1);
    make_room(c);
    c->segs->seg[c->nseg++] = s;
    if (first) lc__seg_take(c, n, first); /* b->n >= n */
  } else { /* burned: the ledger says so next time */
    lc__ledger_putback(c, b->gaps, b->ngaps);
    lc__ledger_gap(c, b->last - (int64_t)(b->n - 1), b->last, LC_GAP_BURNED);
    if (c->segs) /* auto: start small again, so that a write outage */
      c->segs->seg_size = 0; /* does not burn a large segment per attempt */
  }
  lc__counter_unlock(c);
}

int lc__seg_closes_take(lc__counter *c, lc__seg out[LC__SEG_CLOSES]) {
  lc__counter_lock(c);
  int n = c->nclose;
  if (n) memcpy(out, c->rare->closes, sizeof out[0] * (size_t)n);
  c->nclose = 0;
  lc__counter_rare_trim(c);
  lc__counter_unlock(c);
  return n;
}

void lc__seg_closes_batch(leveldb_writebatch_t *b, const lc__counter *c,
                          const lc__seg *v, int n) {
  for (int i = 0; i < n; i++) rewrite(b, c, &v[i], LC_VALUE_MAX);
}

void lc__seg_closes_putback(lc__counter *c, const lc__seg *v, int n) {
  /* back in front; their records stay open if they do not fit (safe) */
  lc__counter_lock(c);
  lc__rare *r = n > 0 ? lc__counter_rare(c) : NULL;
  while (r && n > 0 && c->nclose < LC__SEG_CLOSES) {
    memmove(r->closes + 1, r->closes, sizeof r->closes[0] * (size_t)c->nclose);
    r->closes[0] = v[--n];
    c->nclose++;
  }
  lc__counter_unlock(c);
}

int lc__seg_drop(lc_t *h, lc__counter *c, int64_t below) {
  lc__seg closes[LC__SEG_CLOSES];
  int nclose = 0;
  int64_t reserve = 0;
  lc__counter_lock(c);
  const lc__seg *s0 = c->nseg > 0 ? &c->segs->seg[0] : NULL;
  if (s0 && s0->first + (int64_t)s0->used <= below) {
    while (c->nseg > 0) lc__seg_finish_oldest(c);
    nclose = c->nclose;
    if (nclose)
      memcpy(closes, c->rare->closes, sizeof closes[0] * (size_t)nclose);
    c->nclose = 0;
    lc__counter_rare_trim(c);
    reserve = below > c->reserved ? below : c->reserved;
  }
  lc__counter_unlock(c);
  /* (none dropped; or, without memory for closes, only the reservation) */
  if (reserve == 0) return 0;
  /* The records cut to what went out, and the reservation at below in the
   * same synced write: after it no restore starts below below. */
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  lc__seg_closes_batch(b, c, closes, nclose);
  lc__log_batch_reservation(b, lc__counter_name(c), c->nlen, reserve);
  int rc = lc__log_sync(h, b, LC__LAT_RESERVATION);
  leveldb_writebatch_destroy(b);
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
    const lc__seg *s = &c->rare->closes[i];
    if (lc__seg_end(s) != to) break;
    if (s->used > 0) { /* its last value that went out */
      to = s->first + (int64_t)(s->used - 1);
      break;
    }
    to = s->first - 1;
  }
  for (int i = 0; i < c->nclose; i++) rewrite(b, c, &c->rare->closes[i], to);
  c->nclose = 0;
  lc__counter_rare_trim(c);
  return to > c->handed ? to : c->handed;
}

bool lc__seg_holds(lc__counter *c, int64_t value) {
  bool held = false; /* in a segment, held or finished, above its used */
  lc__counter_lock(c);
  for (int i = 0; i < c->nseg + c->nclose && !held; i++) {
    const lc__seg *g =
        i < c->nseg ? &c->segs->seg[i] : &c->rare->closes[i - c->nseg];
    held = value >= g->first + (int64_t)g->used && value <= lc__seg_end(g);
  }
  lc__counter_unlock(c);
  return held;
}

int64_t lc__seg_current(lc__counter *c) {
  lc__counter_lock(c);
  int64_t v = c->handed;
  lc__counter_unlock(c);
  return v;
}

