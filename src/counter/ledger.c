/*
 * ledger.c - the gap ledger: why values are missing from the log, and
 * voids.
 *
 * Entries sit under 'g' NAME '\0' be64(last) (contiguous per counter, in
 * value order, like the records); the value is version, cause, be64(count),
 * be64(time), then a void's reason.
 *
 * How gaps are found.  Each counter keeps a frontier, gap_low: every value
 * at or below it is in a block or segment this handle took, in a record
 * that was in the log when the counter was loaded, or in a ledger entry.
 * Blocks taken above gap_low + 1 wait in `ahead`.  A hole between gap_low
 * and the next block taken is final once no increment in flight can fill
 * it: an answer is accepted only above the floor its increment was sent
 * with, so holes at or below the lowest such floor are final (counter.c
 * passes it).  A final hole becomes a pending gap whose cause is known
 * from where it lies: at or below the floor the counter was loaded with
 * (the last run's reservation), LC_GAP_RESTART; above it, values memcached
 * handed to someone else, LC_GAP_UNLOGGED.  Burned blocks and the unused
 * rest of segments are reported as they happen.  Pending gaps ride along
 * with the counter's next log write; a failed write puts them back.
 */
#include "counter/counter.h"
#include "handle.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>


static const char *const cause_names[] = {
    [LC_GAP_BURNED] = "burned",     [LC_GAP_RESTART] = "restart",
    [LC_GAP_UNLOGGED] = "unlogged", [LC_GAP_SEGMENT] = "segment-unused",
    [LC_GAP_ADVANCE] = "advance",   [LC_GAP_VOID] = "void",
    [LC_GAP_FAILOVER] = "failover",
};

const char *lc_gap_cause_name(int cause) {
  if (cause < LC_GAP_BURNED || cause > LC_GAP_CAUSE_MAX) return "unknown";
  return cause_names[cause];
}

int lc__ledger_max(lc__log *l, const char *name, size_t nlen, int64_t *out) {
  char prefix[LC_NAME_MAX + 10];
  size_t plen = lc__key_ledger_prefix(prefix, name, nlen);
  return lc__log_last(l, prefix, plen, "ledger", out);
}

static void put_entry(leveldb_writebatch_t *b, const char *name, size_t nlen,
                      int64_t first, int64_t last, int cause,
                      const char *reason, size_t rlen) {
  char key[LC_NAME_MAX + 10];
  unsigned char val[LC__LEDGER_HEAD + LC_REASON_MAX];
  size_t plen = lc__key_ledger_prefix(key, name, nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)last);
  val[0] = LC__LEDGER_VERSION;
  val[1] = (unsigned char)cause;
  lc__key_be64_put(val + 2, (uint64_t)(last - first) + 1);
  lc__key_be64_put(val + 10, (uint64_t)lc__clock_now_us());
  memcpy(val + LC__LEDGER_HEAD, reason, rlen);
  leveldb_writebatch_put(b, key, plen + 8, (const char *)val,
                         LC__LEDGER_HEAD + rlen);
}

/* ---- the frontier (counter's mu held) ---------------------------------- */

void lc__ledger_gap(lc__counter *c, int64_t first, int64_t last, int cause) {
  if (first > last) return;
  /* Kept in value order, merged with neighbours of the same cause, so the
   * blocks burned during a write outage (failing in any order, two in
   * flight) stay one entry.  No memory: it goes unexplained, as when
   * full. */
  lc__rare *r = lc__counter_rare(c);
  if (r == NULL) return;
  lc__gap *g = r->gaps;
  int i = 0;
  while (i < c->ngaps && g[i].last < first) i++;
  if (i > 0 && g[i - 1].cause == cause && g[i - 1].last == first - 1) {
    g[i - 1].last = last;
    if (i < c->ngaps && g[i].cause == cause && g[i].first - 1 == last) {
      g[i - 1].last = g[i].last;
      memmove(g + i, g + i + 1, sizeof *g * (size_t)(c->ngaps - i - 1));
      c->ngaps--;
    }
    return;
  }
  if (i < c->ngaps && g[i].cause == cause && g[i].first - 1 == last) {
    g[i].first = first;
    return;
  }
  if (c->ngaps == LC__GAPS) { /* full: the lowest goes unexplained */
    memmove(g, g + 1, sizeof *g * (LC__GAPS - 1));
    c->ngaps--;
    if (i > 0) i--;
  }
  memmove(g + i + 1, g + i, sizeof *g * (size_t)(c->ngaps - i));
  g[i] = (lc__gap){first, last, cause};
  c->ngaps++;
}

/* The hole first..last (none of it known burned), split where the
 * restart window ends. */
static void plain_hole(lc__counter *c, int64_t first, int64_t last) {
  if (first > last) return;
  if (first <= c->restart_to) {
    int64_t end = last < c->restart_to ? last : c->restart_to;
    lc__ledger_gap(c, first, end, LC_GAP_RESTART);
    first = end + 1;
  }
  lc__ledger_gap(c, first, last, LC_GAP_UNLOGGED);
}

/* The hole first..last: burned where an earlier run of this log burned
 * it (rare->burned), else by where it lies. */
static void hole(lc__counter *c, int64_t first, int64_t last) {
  for (int i = 0; i < c->nburned && first <= last; i++) {
    lc__span k = c->rare->burned[i];
    if (k.last < first) continue;
    if (k.first > last) break;
    if (c->ngaps + 5 > LC__GAPS) break; /* no room for the pieces (up
                                            to 3 here, 2 after): the rest
                                            as without the note, never
                                            unexplained */
    if (k.first > first) plain_hole(c, first, k.first - 1);
    int64_t from = k.first > first ? k.first : first;
    int64_t end = k.last < last ? k.last : last;
    lc__ledger_gap(c, from, end, LC_GAP_BURNED);
    first = end + 1;
  }
  plain_hole(c, first, last);
}

/* Forgets the known burned ranges at or below gap_low (settled). */
static void burned_trim(lc__counter *c) {
  int k = 0;
  while (k < c->nburned && c->rare->burned[k].last <= c->gap_low) k++;
  if (k == 0) return;
  memmove(c->rare->burned, c->rare->burned + k,
          sizeof c->rare->burned[0] * (size_t)(c->nburned - k));
  c->nburned -= k;
}

/* The pending restart gaps (load_tail's holes among the last records)
 * over first..last become burned there. */
static void relabel(lc__counter *c, int64_t first, int64_t last) {
  for (int i = 0; i < c->ngaps; i++) {
    lc__gap g = c->rare->gaps[i];
    if (g.cause != LC_GAP_RESTART || g.last < first || g.first > last ||
        c->ngaps + 4 > LC__GAPS) /* 2 more, and room for a hole's 2 */
      continue;
    memmove(c->rare->gaps + i, c->rare->gaps + i + 1,
            sizeof g * (size_t)(c->ngaps - i - 1));
    c->ngaps--;
    int64_t a = g.first > first ? g.first : first;
    int64_t b = g.last < last ? g.last : last;
    lc__ledger_gap(c, g.first, a - 1, LC_GAP_RESTART);
    lc__ledger_gap(c, a, b, LC_GAP_BURNED);
    lc__ledger_gap(c, b + 1, g.last, LC_GAP_RESTART);
    i = -1; /* the array changed: again from the start */
    first = b + 1;
    if (first > last) return;
  }
}

/* first..last, at or below gap_low (so among the log's records: the
 * records of later blocks reached the log, the entry did not): the
 * pending restart gaps over it become burned there, and what no pending
 * gap holds becomes a burned one, checked against the log before it is
 * written (recheck: a record or entry there, a write that failed and
 * landed, takes it out). */
static void note_below(lc__counter *c, int64_t first, int64_t last) {
  if (c->ngaps > 0) relabel(c, first, last);
  lc__span add[LC__GAPS + 1];
  int na = 0;
  int64_t pos = first;
  for (int i = 0; i < c->ngaps && pos <= last; i++) {
    lc__gap g = c->rare->gaps[i];
    if (g.last < pos) continue;
    if (g.first > last) break;
    if (g.first > pos) add[na++] = (lc__span){pos, g.first - 1};
    pos = g.last + 1;
  }
  if (pos <= last) add[na++] = (lc__span){pos, last};
  for (int j = 0; j < na && c->ngaps + 4 <= LC__GAPS; j++) {
    lc__ledger_gap(c, add[j].first, add[j].last, LC_GAP_BURNED);
    c->recheck = true;
  }
}

void lc__ledger_known_burned(lc__counter *c, int64_t first, int64_t last) {
  if (first <= c->gap_low)
    note_below(c, first, last < c->gap_low ? last : c->gap_low);
  if (first < c->gap_low + 1) first = c->gap_low + 1;
  if (first > last || c->nburned == LC__GAPS) return; /* full: as before */
  lc__rare *r = lc__counter_rare(c);
  if (r == NULL) return;
  int i = 0;
  while (i < c->nburned && r->burned[i].last < first) i++;
  if (i < c->nburned && r->burned[i].first <= last) return; /* overlaps */
  memmove(r->burned + i + 1, r->burned + i,
          sizeof r->burned[0] * (size_t)(c->nburned - i));
  r->burned[i] = (lc__span){first, last};
  c->nburned++;
}

int lc__ledger_burned_pending(const lc__counter *c, lc__span out[LC__GAPS]) {
  int n = 0;
  for (int i = 0; i < c->ngaps; i++)
    if (c->rare->gaps[i].cause == LC_GAP_BURNED)
      out[n++] = (lc__span){c->rare->gaps[i].first, c->rare->gaps[i].last};
  return n;
}

/* Moves gap_low over the blocks taken that now touch it. */
static void absorb(lc__counter *c) {
  if (c->nahead == 0) return;
  lc__span *a = c->rare->ahead;
  int k = 0;
  while (k < c->nahead && a[k].first - 1 <= c->gap_low) {
    if (a[k].last > c->gap_low) c->gap_low = a[k].last;
    k++;
  }
  memmove(a, a + k, sizeof a[0] * (size_t)(c->nahead - k));
  c->nahead -= k;
}

void lc__ledger_settle(lc__counter *c, int64_t upto) {
  while (c->gap_low < upto) {
    int64_t end = upto;
    if (c->nahead > 0 && c->rare->ahead[0].first - 1 < end)
      end = c->rare->ahead[0].first - 1;
    hole(c, c->gap_low + 1, end);
    c->gap_low = end;
    absorb(c);
  }
  if (c->nburned) burned_trim(c);
  lc__counter_rare_trim(c);
}

/* Adds first..last to ahead, merged with the spans it touches. */
static void add_ahead(lc__counter *c, int64_t first, int64_t last) {
  lc__rare *r = lc__counter_rare(c);
  if (r == NULL) { /* no memory (so nothing waits): the holes below it go
                      unexplained, never a wrong entry */
    c->gap_low = last;
    return;
  }
  lc__span *a = r->ahead;
  int i = 0;
  while (i < c->nahead && a[i].last < first - 1) i++;
  int j = i; /* a[i..j) touch or overlap first..last */
  while (j < c->nahead && a[j].first - 1 <= last) {
    if (a[j].first < first) first = a[j].first;
    if (a[j].last > last) last = a[j].last;
    j++;
  }
  if (j == i && c->nahead == LC__ACCEPTED) {
    /* full: a hole of it can no longer be told (never seen: only holes
     * above the floors of increments in flight wait here).  Merge the
     * lowest two spans: their hole shows as unexplained, never as a wrong
     * entry. */
    a[0].last = a[1].last;
    memmove(a + 1, a + 2, sizeof *a * (size_t)(c->nahead - 2));
    c->nahead--;
    add_ahead(c, first, last);
    return;
  }
  memmove(a + i + 1, a + j, sizeof *a * (size_t)(c->nahead - j));
  a[i] = (lc__span){first, last};
  c->nahead += 1 - (j - i);
}

void lc__ledger_taken(lc__counter *c, int64_t first, int64_t last,
                      int64_t low) {
  if (last > c->gap_low) {
    int64_t from = first <= c->gap_low ? c->gap_low + 1 : first;
    if (from == c->gap_low + 1 && c->nahead == 0) {
      c->gap_low = last; /* in order, nothing waits: absorbed at once */
    } else {
      add_ahead(c, from, last);
      absorb(c);
    }
  }
  lc__ledger_settle(c, low);
}

/* One side of the recheck's walk: the records (or, ledger, the entries)
 * of c in the log, in value order, from the first one ending at or above
 * a value on; x the current one while valid.  As many as there are: a
 * pending gap over a long outage may lie over any number of them. */
typedef struct walk {
  leveldb_iterator_t *it;
  char key[LC_NAME_MAX + 10];
  size_t plen;
  bool ledger, valid;
  lc__span x;
} walk;

/* Moves w to the next span that decodes (one that does not is skipped:
 * verify reports it). */
static void walk_next(walk *w, bool first) {
  w->valid = false;
  if (!first) leveldb_iter_next(w->it);
  for (; leveldb_iter_valid(w->it); leveldb_iter_next(w->it)) {
    size_t klen, vlen;
    const char *k = leveldb_iter_key(w->it, &klen);
    if (klen < w->plen || memcmp(k, w->key, w->plen) != 0) return;
    const char *v = leveldb_iter_value(w->it, &vlen);
    lc_record r;
    lc_gap g;
    if (w->ledger ? lc__key_ledger_decode(k, klen, w->plen, v, vlen, &g)
                  : lc__key_record_decode(k, klen, w->plen, v, vlen, &r))
      continue;
    w->x = w->ledger ? (lc__span){g.first, g.last}
                     : (lc__span){r.first, r.last};
    w->valid = true;
    return;
  }
}

static void walk_open(lc__log *l, const lc__counter *c, bool ledger,
                      int64_t from, walk *w) {
  w->ledger = ledger;
  w->plen = ledger
                ? lc__key_ledger_prefix(w->key, lc__counter_name(c), c->nlen)
                : lc__key_record_prefix(w->key, lc__counter_name(c), c->nlen);
  lc__key_be64_put((unsigned char *)w->key + w->plen, (uint64_t)from);
  w->it = leveldb_create_iterator(l->db, l->read);
  leveldb_iter_seek(w->it, w->key, w->plen + 8);
  walk_next(w, true);
}

/* The pieces of pending gap g that no record or entry in the log holds
 * become pending gaps again (mu held, the gate held). */
static void recheck_gap(lc__log *l, lc__counter *c, lc__gap g) {
  walk w[2];
  walk_open(l, c, false, g.first, &w[0]);
  walk_open(l, c, true, g.first, &w[1]);
  int64_t from = g.first;
  while (from <= g.last) {
    /* the next span in value order, of either side */
    walk *n = w[0].valid && (!w[1].valid || w[0].x.first <= w[1].x.first)
                  ? &w[0]
              : w[1].valid ? &w[1]
                           : NULL;
    if (n == NULL || n->x.first > g.last) break;
    if (n->x.first > from) lc__ledger_gap(c, from, n->x.first - 1, g.cause);
    if (n->x.last >= from) from = n->x.last + 1;
    walk_next(n, false);
  }
  if (from <= g.last) lc__ledger_gap(c, from, g.last, g.cause);
  leveldb_iter_destroy(w[0].it);
  leveldb_iter_destroy(w[1].it);
  lc__detail_clear();
}

/* mu held, c->recheck: a failed write may have reached the log after all
 * (a failed sync leaves its batch in the write-ahead log, and the reopen
 * replays it).  The values its records or entries hold are no gap: they
 * leave the pending gaps, so no entry is written over them. */
static void recheck(lc__log *l, lc__counter *c) {
  if (lc__log_enter(l) != 0) { /* the write is refused too: later */
    lc__detail_clear();
    return;
  }
  lc__gap g[LC__GAPS];
  int ng = c->ngaps;
  if (ng) memcpy(g, c->rare->gaps, sizeof g[0] * (size_t)ng);
  c->ngaps = 0;
  for (int i = 0; i < ng; i++) recheck_gap(l, c, g[i]);
  lc__log_leave(l);
  c->recheck = false;
}

int lc__ledger_take(lc__log *l, lc__counter *c, lc__gap out[LC__GAPS]) {
  if (c->recheck) recheck(l, c);
  int n = c->ngaps;
  if (n) memcpy(out, c->rare->gaps, sizeof out[0] * (size_t)n);
  c->ngaps = 0;
  lc__counter_rare_trim(c);
  return n;
}

void lc__ledger_putback(lc__counter *c, const lc__gap *g, int n) {
  c->recheck = true;
  for (int i = 0; i < n; i++)
    lc__ledger_gap(c, g[i].first, g[i].last, g[i].cause);
}

void lc__ledger_batch_reason(leveldb_writebatch_t *b, const lc__counter *c,
                             const lc__gap *g, const char *reason) {
  size_t rlen = strlen(reason);
  if (rlen > LC_REASON_MAX) rlen = LC_REASON_MAX;
  put_entry(b, lc__counter_name(c), c->nlen, g->first, g->last, g->cause,
            reason, rlen);
}

void lc__ledger_batch(leveldb_writebatch_t *b, const lc__counter *c,
                      const lc__gap *g, int n) {
  for (int i = 0; i < n; i++)
    put_entry(b, lc__counter_name(c), c->nlen, g[i].first, g[i].last,
              g[i].cause, "", 0);
}

/* ---- at load: holes a crash left unexplained ---------------------------- */

/* Records looked at, newest first: a gap entry still pending at a crash
 * lies below the blocks taken after it whose records were written before
 * the crash.  That is usually a few, but a daemon serving many
 * connections writes a record per request group, and a block whose write
 * stalled can lie 20 or more records down (chaos seed 6: a 1-id hole 20
 * records below the last).  So the walk goes back up to TAIL_MAX records,
 * and no further than TAIL_US before the newest one: a write stalls for
 * less than that, and an older hole is an earlier run's, not this
 * crash's. */
#define TAIL_MAX 1024
#define TAIL_US (30 * 1000000LL)

static void explain_hole(lc__log *l, lc__counter *c, int64_t lo, int64_t hi,
                         int cause);

/* Walks c's last records, newest first, and explains each hole between
 * two of them (explain_hole).  A record that does not decode is skipped
 * (verify reports it). */
static void tail_holes(lc__log *l, lc__counter *c, int cause) {
  char prefix[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(prefix, lc__counter_name(c), c->nlen);
  leveldb_iterator_t *it = lc__log_seek_last(l, prefix, plen);
  lc_record newer, r;
  int64_t newest_us = 0;
  int n = 0;
  for (; n < TAIL_MAX && leveldb_iter_valid(it); leveldb_iter_prev(it)) {
    size_t klen, vlen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen < plen || memcmp(k, prefix, plen) != 0) break;
    const char *v = leveldb_iter_value(it, &vlen);
    if (lc__key_record_decode(k, klen, plen, v, vlen, &r) != 0) continue;
    if (n == 0) newest_us = r.time_us;
    else if (r.time_us < newest_us - TAIL_US) break;
    if (n > 0 && newer.first - 1 > r.last)
      explain_hole(l, c, r.last + 1, newer.first - 1, cause);
    newer = r;
    n++;
  }
  leveldb_iter_destroy(it);
  lc__detail_clear();
}

/* Pending gaps of cause for the values of lo..hi that no entry covers (the
 * entries are read from the first one ending at or above lo). */
static void explain_hole(lc__log *l, lc__counter *c, int64_t lo, int64_t hi,
                         int cause) {
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__key_ledger_prefix(key, lc__counter_name(c), c->nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)lo);
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  int64_t pos = lo;
  for (leveldb_iter_seek(it, key, plen + 8);
       leveldb_iter_valid(it) && pos <= hi; leveldb_iter_next(it)) {
    size_t klen, vlen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen != plen + 8 || memcmp(k, key, plen) != 0) break;
    const char *v = leveldb_iter_value(it, &vlen);
    lc_gap g;
    if (lc__key_ledger_decode(k, klen, plen, v, vlen, &g) != 0 ||
        g.cause == LC_GAP_VOID)
      continue; /* undecodable (verify reports it), or inside a record */
    if (g.first > hi) break;
    if (g.first > pos) lc__ledger_gap(c, pos, g.first - 1, cause);
    if (g.last >= pos) pos = g.last + 1;
  }
  leveldb_iter_destroy(it);
  lc__detail_clear();
  if (pos <= hi) lc__ledger_gap(c, pos, hi, cause);
}

int lc__ledger_load_tail(lc__log *l, lc__counter *c, int cause) {
  int rc = lc__log_enter(l);
  if (rc) return rc;
  /* a hole between two of the last records that no entry covers was
   * pending when the last run died (restart), or when the primary whose
   * log this was died unreplicated records (failover) */
  tail_holes(l, c, cause);
  lc__log_leave(l);
  return 0;
}

/* ---- lc_void (counter_ops.c says whether this handle holds the value) -- */

/* Serialises lc_void's check-then-write within the process (the log is
 * the process's alone). */
static pthread_mutex_t void_mu = PTHREAD_MUTEX_INITIALIZER;

/* The record holding value: 1 and *rec, 0 when none does, or negative. */
static int record_of(lc__log *l, const char *name, size_t nlen, int64_t value,
                     lc_record *rec) {
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__key_record_prefix(key, name, nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)value);
  int rc = lc__log_enter(l);
  if (rc) return rc;
  leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->read);
  leveldb_iter_seek(it, key, plen + 8); /* first record with last >= */
  if (leveldb_iter_valid(it)) {
    size_t klen, vlen;
    const char *k = leveldb_iter_key(it, &klen);
    const char *v = leveldb_iter_value(it, &vlen);
    if (klen >= plen && memcmp(k, key, plen) == 0) {
      rc = lc__key_record_decode(k, klen, plen, v, vlen, rec);
      if (!rc) rc = rec->first <= value ? 1 : 0;
    }
  }
  char *err = NULL;
  leveldb_iter_get_error(it, &err);
  leveldb_iter_destroy(it);
  lc__log_leave(l);
  if (err) {
    rc = lc__fail(LC_ELOG, "leveldb seek: %s", err);
    leveldb_free(err);
  }
  return rc;
}

static int check_reason(const char *reason, size_t *rlen) {
  if (reason == NULL) return lc__fail(LC_EINVAL, "NULL reason");
  *rlen = strlen(reason);
  if (*rlen == 0 || *rlen > LC_REASON_MAX)
    return lc__fail(LC_EINVAL, "a void's reason is 1..%d bytes, not %zu",
                    LC_REASON_MAX, *rlen);
  for (const unsigned char *p = (const unsigned char *)reason; *p; p++)
    if (*p < 0x20 || *p == 0x7f)
      return lc__fail(LC_EINVAL, "a void's reason has a control character");
  return 0;
}

static int do_void(lc_t *h, const char *name, int64_t value, const char *reason,
                   size_t rlen, bool held) {
  size_t nlen = strlen(name);
  lc_record rec;
  int rc = record_of(&h->log, name, nlen, value, &rec);
  if (rc < 0) return rc;
  if (rc == 0 ||
      (rec.version == LC_RECORD_SEGMENT_OPEN && held))
    return lc__fail(LC_ENOTISSUED, "%s %lld has not been handed out", name,
                    (long long)value);
  char key[LC_NAME_MAX + 10];
  size_t plen = lc__key_ledger_prefix(key, name, nlen);
  lc__key_be64_put((unsigned char *)key + plen, (uint64_t)value);
  char *v;
  size_t vlen;
  rc = lc__log_get(&h->log, key, plen + 8, &v, &vlen, "ledger entry");
  if (rc) return rc;
  if (v) {
    lc_gap g;
    rc = lc__key_ledger_decode(key, plen + 8, plen, v, vlen, &g);
    leveldb_free(v);
    if (rc) return rc;
    if (g.cause == LC_GAP_VOID && strcmp(g.reason, reason) == 0)
      return 0; /* the same void again (a retry after a failed write) */
    return g.cause == LC_GAP_VOID
               ? lc__fail(LC_EVOIDED, "%s %lld was voided: %s", name,
                          (long long)value, g.reason)
               : lc__fail(LC_ECORRUPT, "%s %lld is in a record and a %s gap",
                          name, (long long)value, lc_gap_cause_name(g.cause));
  }
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  put_entry(b, name, nlen, value, value, LC_GAP_VOID, reason, rlen);
  rc = lc__log_sync(h, b, -1);
  leveldb_writebatch_destroy(b);
  if (rc) {
    char why[LC__DETAIL_MAX];
    snprintf(why, sizeof why, "%s", lc_last_detail());
    rc = lc__fail(rc,
                  "void of %s %lld: the log write failed and may still have "
                  "reached the log (the outcome is unknown; it takes effect "
                  "if it did): the same void again is safe (with the same "
                  "reason, it answers 0 once it is recorded): %s",
                  name, (long long)value, why);
  }
  return rc;
}

int lc__ledger_void(lc_t *h, const char *name, int64_t value,
                    const char *reason, bool held) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  int rc = lc_check_name(name);
  if (rc) return lc__fail(rc, "invalid counter name");
  if (value < 1 || value > LC_VALUE_MAX)
    return lc__fail(LC_EINVAL, "void value %lld", (long long)value);
  size_t rlen = 0;
  if ((rc = check_reason(reason, &rlen)) != 0) return rc;
  if (LC__ADMIN_WAY(h))
    return lc__admin_call(h, NULL, 0, "void %s %lld %s", name,
                          (long long)value, reason);
  if ((rc = LC__LOCAL_ONLY(h)) != 0) return rc;
  pthread_mutex_lock(&void_mu);
  rc = do_void(h, name, value, reason, rlen, held);
  pthread_mutex_unlock(&void_mu);
  if (rc) LC__STAT(h, errors, 1);
  return rc;
}
