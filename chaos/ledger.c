/*
 * ledger.c - the checker's reading of the gap ledger (called by logged.c
 * with each counter's records and ledger entries, read from its owner's
 * log after the run).  The library writes an entry for every run of
 * values it knowingly skips, so:
 *
 *  - tiling: records and gap entries, in value order, neither overlap nor
 *    leave a hole, from 1 (from the oldest record when the prune fault
 *    ran: below it records and entries go) up to the last of them; a void
 *    lies inside a record; every entry decodes;
 *  - acknowledged ids lie in no gap entry but a restart one (a power cut
 *    takes unsynced records, and the restart skips their values) or, with
 *    --standby, a failover one (a lost primary handed them out, and their
 *    records, not replicated yet, died with it: the promoted standby
 *    skipped above them);
 *  - the acknowledged gaps (check.c: ids nobody received, each blamed on
 *    a fault): their ids lie in records (handed out, never acknowledged: a
 *    call in flight at a kill) or in entries, tabulated by fault blamed
 *    and cause; none in neither;
 *  - fit: each cause seen on an owner's counters must be one the faults
 *    of the run can produce there (ledger_report.c, with the report);
 *  - per gap: each cause in an acknowledged gap must be one that a fault
 *    near the gap in time (or a failed call then) can produce there
 *    (ch_gap_unfit): a wrong label fails the run, named.
 */
#include "chaos.h"

#include <logcounter.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(LC_GAP_BURNED == 1 && LC_GAP_CAUSE_MAX == CH_CAUSES - 1,
               "ch_ledger is indexed by LC_GAP_*");

/* A record (cause 0) or a gap entry. */
typedef struct span {
  int64_t first, last;
  int cause;
  bool open;    /* a record left LC_RECORD_SEGMENT_OPEN */
  int64_t t_ns; /* an entry's: when it was written, on the run's clock */
} span;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return (x->last > y->last) - (x->last < y->last);
}

static const char *what(const span *s) {
  return s->cause  ? lc_gap_cause_name(s->cause)
         : s->open ? "open segment"
                   : "record";
}

/* The first example of a kind is kept. */
static void example(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void example(char *buf, size_t size, const char *fmt, ...) {
  if (buf[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, size, fmt, ap);
  va_end(ap);
}

static uint64_t len(int64_t a, int64_t b) {
  return (uint64_t)(b - a) + 1;
}

/* Is [first, last] inside one record? */
static bool in_record(const lc_record *rec, size_t n, int64_t first,
                      int64_t last) {
  size_t lo = 0, hi = n; /* the first record with first > first */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (rec[mid].first <= first)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo > 0 && rec[lo - 1].last >= last;
}

/* How many ids of [a, z] were acknowledged (blocks sorted by first, *cur
 * the first that may still reach a; duplicates count once per block). */
static uint64_t acked(const ch_blk *b, size_t nb, size_t *cur, int64_t a,
                      int64_t z) {
  uint64_t n = 0;
  while (*cur < nb && b[*cur].last < a) (*cur)++;
  for (size_t i = *cur; i < nb && b[i].first <= z; i++) {
    int64_t lo = a > b[i].first ? a : b[i].first;
    int64_t hi = z < b[i].last ? z : b[i].last;
    if (lo <= hi) n += len(lo, hi);
  }
  return n;
}

/* The spans from start on must leave no hole and not overlap. */
static void tile(int c, const span *s, size_t n, int64_t start, const ch_blk *b,
                 size_t nb, const ch_cut *cuts, size_t ncuts,
                 ch_ledger *out) {
  size_t cur = 0;
  const char *name = ch_counter_name(c);
  int64_t end = start - 1; /* every value up to end is covered */
  const span *by = NULL;   /* by this span, the highest so far */
  for (size_t i = 0; i < n; i++) {
    const span *x = &s[i];
    if (x->last < start) { /* left under a pruned counter's oldest */
      out->below_oldest += x->cause != 0;
      continue;
    }
    if (x->first > end + 1) {
      out->unexplained += len(end + 1, x->first - 1);
      out->c_unexplained[c] += len(end + 1, x->first - 1);
      out->unexplained_acked += acked(b, nb, &cur, end + 1, x->first - 1);
      out->holes++;
      if (ch_cut_covers(cuts, ncuts, end + 1, x->first - 1, -1)) {
        out->excused += len(end + 1, x->first - 1);
        out->excused_holes++;
      } else if (ncuts && len(end + 1, x->first - 1) > out->unexcused_max) {
        out->unexcused_max = len(end + 1, x->first - 1);
      }
      char before[80] = "the start";
      if (by)
        snprintf(before, sizeof before, "%s %lld..%lld", what(by),
                 (long long)by->first, (long long)by->last);
      example(out->example, sizeof out->example,
              "%s: %lld..%lld (%llu ids) between %s and %s %lld..%lld", name,
              (long long)end + 1, (long long)x->first - 1,
              (unsigned long long)len(end + 1, x->first - 1), before, what(x),
              (long long)x->first, (long long)x->last);
    } else if (x->first <= end) {
      out->conflicts++;
      out->c_conflicts[c]++;
      example(out->conflict, sizeof out->conflict,
              "%s: %s %lld..%lld overlaps %s %lld..%lld", name, what(x),
              (long long)x->first, (long long)x->last, what(by),
              (long long)by->first, (long long)by->last);
    }
    if (x->cause) {
      out->entries[x->cause]++;
      out->ids[x->cause] += len(x->first, x->last);
      out->owner_ids[ch_owner_of(c)][x->cause] += len(x->first, x->last);
    }
    if (x->last > end) end = x->last, by = x;
  }
}

/* Adds the ids of [a, b] in records (in[0]; *open: in open segments) and
 * in each cause's entries (in[cause]), and when each cause's first entry
 * there was written (t[cause], if t is not NULL; INT64_MAX: none); *cur is
 * the first span that may still reach a (ranges come in ascending
 * order). */
static void cover(const span *s, size_t n, size_t *cur, int64_t a, int64_t b,
                  uint64_t in[CH_CAUSES], uint64_t *open, int64_t *t) {
  while (*cur < n && s[*cur].last < a) (*cur)++;
  for (size_t i = *cur; i < n && s[i].first <= b; i++) {
    int64_t lo = a > s[i].first ? a : s[i].first;
    int64_t hi = b < s[i].last ? b : s[i].last;
    if (lo > hi) continue;
    in[s[i].cause] += len(lo, hi);
    if (s[i].open) *open += len(lo, hi);
    if (t && s[i].cause && s[i].t_ns < t[s[i].cause])
      t[s[i].cause] = s[i].t_ns;
  }
}

/* Acknowledged ids in a gap entry: only a restart's may hold them (and,
 * with --standby, a failover's). */
static void acked_in_gaps(const ch_run *r, int c, const span *s, size_t n,
                          int64_t start,
                          const ch_blk *b, size_t nb, ch_ledger *out) {
  size_t cur = 0;
  for (size_t i = 0; i < nb; i++) {
    if (b[i].last < start) continue;
    uint64_t in[CH_CAUSES] = {0}, open = 0, bad = 0;
    cover(s, n, &cur, b[i].first < start ? start : b[i].first, b[i].last, in,
          &open, NULL);
    for (int k = 1; k < CH_CAUSES; k++)
      if (k != LC_GAP_RESTART && k != LC_GAP_VOID &&
          !(k == LC_GAP_FAILOVER && (r->standby || r->cluster)))
        bad += in[k];
    out->acked_restart += in[LC_GAP_RESTART];
    if (r->standby || r->cluster) out->acked_failover += in[LC_GAP_FAILOVER];
    if (bad == 0) continue;
    out->conflicts++;
    out->c_conflicts[c]++;
    example(out->conflict, sizeof out->conflict,
            "%s: acknowledged block %lld..%lld lies in a gap entry",
            ch_counter_name(c), (long long)b[i].first, (long long)b[i].last);
  }
}

/* Acknowledged gap g of counter c holds in[cause] ids of each cause,
 * whose first entry there was written at t[cause]: each must be one the
 * faults near it in time can produce there.  Near the gap, or near its
 * entry where that came first: a prefetched segment is taken, and what
 * its fetch found (memcached ahead: unlogged; a write that failed:
 * burned) written, before the clients reach it, up to a segment's life
 * (about a second at the rate then, longer when the rate drops) earlier
 * than their acknowledgements around the gap (chaos seed 17: an unlogged
 * entry 2.2 s before them, the memcached-rewind that made it just
 * before the entry). */
static void gap_causes(const ch_run *r, int c, const ch_gap *g, int64_t a,
                       const uint64_t in[CH_CAUSES], const int64_t t[CH_CAUSES],
                       ch_ledger *out) {
  bool bad = false, any = false, blamed = true;
  for (int j = 1; j < CH_CAUSES; j++) {
    ch_gap w = *g; /* the window: from its entry if that came first */
    if (in[j] && t[j] < w.t_lo && t[j] < w.t_hi) {
      if (w.t_lo > w.t_hi) w.t_hi = w.t_lo; /* the later ack stays the end */
      w.t_lo = t[j];
    }
    any = any || in[j];
    blamed = blamed && (!in[j] || ch_gap_fits_blamed(r, c, &w, j));
    const char *why = in[j] ? ch_gap_unfit(r, c, &w, j) : NULL;
    if (why == NULL) continue;
    bad = true;
    out->mislabeled_ids += in[j];
    char when[64] = "";
    if (t[j] != INT64_MAX)
      snprintf(when, sizeof when, "; its first entry written at %.3f s",
               (double)(t[j] - r->start_ns) / 1e9);
    example(out->mislabel, sizeof out->mislabel,
            "%s: acknowledged gap %lld..%lld (acknowledged below it at "
            "%.3f s, above it at %.3f s%s) holds %llu %s ids, but %s%s and "
            "%s",
            ch_counter_name(c), (long long)a, (long long)g->last,
            (double)(g->t_lo - r->start_ns) / 1e9,
            (double)(g->t_hi - r->start_ns) / 1e9, when,
            (unsigned long long)in[j], lc_gap_cause_name(j),
            g->kind == F_KINDS ? "no fault is blamed" : "the fault blamed is ",
            g->kind == F_KINDS ? "" : ch_fault_name(g->kind), why);
  }
  out->gaps_checked += any;
  out->gaps_blamed_fit += any && blamed;
  if (bad) out->mislabeled++, out->c_mislabeled[c]++;
}

/* The acknowledged gaps, by fault blamed and cause, each gap's causes
 * checked against the faults near it (gap_causes). */
static void ack_gaps(const ch_run *r, int c, const span *s, size_t n,
                     int64_t start, const ch_gap *g, size_t ng,
                     ch_ledger *out) {
  size_t cur = 0;
  for (size_t i = 0; i < ng; i++) {
    int k = g[i].kind;
    int64_t a = g[i].first;
    if (a < start) {
      int64_t hi = g[i].last < start ? g[i].last : start - 1;
      out->ack_pruned[k] += len(a, hi);
      if (hi == g[i].last) continue;
      a = start;
    }
    uint64_t in[CH_CAUSES] = {0}, open = 0, sum = 0;
    int64_t t[CH_CAUSES];
    for (int j = 0; j < CH_CAUSES; j++) t[j] = INT64_MAX;
    cover(s, n, &cur, a, g[i].last, in, &open, t);
    for (int j = 0; j < CH_CAUSES; j++) sum += in[j];
    for (int j = 1; j < CH_CAUSES; j++) out->ack[k][j] += in[j];
    out->ack_handed[k] += in[0];
    out->ack_open[k] += open;
    uint64_t rest = len(a, g[i].last) > sum ? len(a, g[i].last) - sum : 0;
    out->ack[k][0] += rest;
    gap_causes(r, c, &g[i], a, in, t, out);
    if (rest)
      example(out->example, sizeof out->example,
              "%s: acknowledged gap %lld..%lld (after %s): %llu ids in no "
              "record and no entry",
              ch_counter_name(c), (long long)a, (long long)g[i].last,
              k == F_KINDS ? "no fault" : ch_fault_name(k),
              (unsigned long long)rest);
  }
}

void ch_check_ledger(const ch_run *r, int c, const lc_record *rec, size_t n,
                     const ch_entry *e, size_t ne, uint64_t bad,
                     const ch_blk *blocks, size_t nb, const ch_gap *gaps,
                     size_t ng, const ch_cut *cuts, size_t ncuts,
                     ch_ledger *out) {
  out->read = true;
  if (bad) {
    out->conflicts += bad;
    out->c_conflicts[c] += bad;
    example(out->conflict, sizeof out->conflict,
            "%s: %llu ledger entries do not decode", ch_counter_name(c),
            (unsigned long long)bad);
  }
  span *s = malloc((n + ne + 1) * sizeof *s);
  if (s == NULL) {
    out->conflicts++;
    example(out->conflict, sizeof out->conflict, "%s: out of memory",
            ch_counter_name(c));
    return;
  }
  size_t ns = 0;
  for (size_t i = 0; i < n; i++)
    s[ns++] = (span){rec[i].first, rec[i].last, 0,
                     rec[i].version == LC_RECORD_SEGMENT_OPEN, 0};
  for (size_t i = 0; i < ne; i++) {
    if (e[i].cause != LC_GAP_VOID) {
      s[ns++] = (span){e[i].first, e[i].last, e[i].cause, false,
                       e[i].time_us > 0 ? e[i].time_us * 1000 - r->wall_ns
                                        : INT64_MAX};
      continue;
    }
    out->entries[LC_GAP_VOID]++;
    out->ids[LC_GAP_VOID] += len(e[i].first, e[i].last);
    out->owner_ids[ch_owner_of(c)][LC_GAP_VOID] += len(e[i].first, e[i].last);
    if (in_record(rec, n, e[i].first, e[i].last)) continue;
    out->conflicts++;
    out->c_conflicts[c]++;
    example(out->conflict, sizeof out->conflict,
            "%s: void %lld..%lld outside every record", ch_counter_name(c),
            (long long)e[i].first, (long long)e[i].last);
  }
  qsort(s, ns, sizeof *s, cmp_span);
  /* The prune fault deletes the oldest records and the entries below
   * them: the check starts at the oldest record left. */
  int64_t start = 1;
  if (c < CH_EMB_COUNTERS && atomic_load(&r->emb_ctl->pruned_below[c]) > 0 &&
      n > 0)
    start = rec[0].first;
  tile(c, s, ns, start, blocks, nb, cuts, ncuts, out);
  acked_in_gaps(r, c, s, ns, start, blocks, nb, out);
  ack_gaps(r, c, s, ns, start, gaps, ng, out);
  free(s);
}
