/*
 * logged.c - the checker's read-back of the owners' logs (logged
 * before returned).  After the run each owner's log is read with the
 * library's iterator; every acknowledged block must lie within one logged
 * record, except:
 *  - blocks a power cut took: acknowledged by the end of a power cut on
 *    the owner, within its window (ch_cut_covers: CH_CUT_WINDOW either
 *    side of the largest id acknowledged by then, the unsynced tail since
 *    the last synced reservation), and served with default durability (with durability sync every record was synced: none may
 *    be missing);
 *  - blocks below the point the prune fault published before pruning (for
 *    a block across two prefetched segments, the part below it);
 *  - with --standby, blocks a lost primary acknowledged whose records died
 *    with its directory (primary-loss) or its abandoned log (partition):
 *    the daemon's counters are read from the surviving primary's log, and
 *    such a block must lie wholly inside one of its failover gaps.
 * Both exceptions are counted, not hidden; so are records that do not
 * decode (must be none).  It reads each counter's gap ledger with its
 * records, for ledger.c, and the daemon's tallies' final totals.
 */
#include "chaos.h"

#include <logcounter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Logged records of one counter, sorted by first value, and its ledger
 * entries (gaps and voids), sorted too. */
typedef struct recs {
  lc_record *r;
  size_t n, cap;
  uint64_t corrupt; /* records that did not decode */
  ch_entry *e;
  size_t ne, ecap;
  uint64_t bad; /* ledger entries that did not decode */
} recs;

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  *cap = *cap ? 2 * *cap : 4096;
  return realloc(p, *cap * size);
}

/* The counter's ledger, from the open handle h. */
static int read_ledger(lc_t *h, int obj, recs *out) {
  lc_iter *it = NULL;
  int rc = lc_ledger_open(h, ch_counter_name(obj), &it);
  lc_gap g;
  int k;
  while (!rc && (k = lc_ledger_next(it, &g)) != 0) {
    if (k == LC_ECORRUPT) { /* a conflict for ledger.c; the next follows */
      out->bad++;
      continue;
    }
    if (k < 0) {
      rc = k;
      break;
    }
    out->e = grow(out->e, &out->ecap, out->ne, sizeof *out->e);
    out->e[out->ne++] = (ch_entry){g.first, g.last, g.cause, g.time_us};
  }
  lc_iter_close(it);
  return rc;
}

/* Opens the log of owner who ("emb" or "lcd": the last primary's with
 * --standby), its path in path. */
static int open_log(const ch_run *r, const char *who, char path[1024],
                    lc_t **h) {
  char mc[160];
  if (strcmp(who, "lcd") == 0) who = ch_lcd_dir(r);
  snprintf(path, 1024, "%s/%s/log", r->dir, who);
  ch_mc_config(r, mc, sizeof mc);
  lc_options o;
  lc_options_init(&o);
  o.db_path = path;
  o.memcached = mc;
  o.lock_wait_ms = 5000;
  *h = NULL;
  return lc_open(&o, h);
}

static int read_log(const ch_run *r, const char *who, int obj, recs *out,
                    char *err, size_t size) {
  char path[1024];
  lc_t *h;
  lc_iter *it = NULL;
  int rc = open_log(r, who, path, &h);
  if (!rc) rc = lc_iter_open(h, ch_counter_name(obj), &it);
  lc_record rec;
  int k;
  while (!rc && (k = lc_iter_next(it, &rec)) != 0) {
    if (k == LC_ECORRUPT) { /* reported, and the next one follows */
      out->corrupt++;
      continue;
    }
    if (k < 0) {
      rc = k;
      break;
    }
    out->r = grow(out->r, &out->cap, out->n, sizeof *out->r);
    out->r[out->n++] = rec;
  }
  if (!rc) rc = read_ledger(h, obj, out);
  if (rc)
    snprintf(err, size, "%s: %s (%s)", path, lc_err_name(rc), lc_last_detail());
  lc_iter_close(it);
  lc_close(h);
  return rc;
}

/* Is [first, last] covered by the log: inside one record, or (a block
 * handed out across two prefetched segments) inside contiguous ones? */
static bool logged(const recs *l, int64_t first, int64_t last) {
  size_t lo = 0, hi = l->n; /* the first record with first > block's */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (l->r[mid].first <= first)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0 || l->r[lo - 1].last < first) return false;
  for (size_t i = lo - 1; l->r[i].last < last; i++)
    if (i + 1 == l->n || l->r[i + 1].first != l->r[i].last + 1) return false;
  return true;
}

/* Is [first, last] inside one failover gap of the ledger? */
static bool in_failover(const recs *l, int64_t first, int64_t last) {
  for (size_t i = 0; i < l->ne; i++)
    if (l->e[i].cause == LC_GAP_FAILOVER && l->e[i].first <= first &&
        last <= l->e[i].last)
      return true;
  return false;
}

/* Did the owner that served b run with durability sync?  The embedded
 * client's number names its incarnation; a daemon connection talks to the
 * daemon that was running when the call began. */
static bool served_synced(const ch_run *r, const ch_blk *b, int owner) {
  uint32_t n = 0;
  bool sync = false;
  for (size_t i = 0; i < r->nstarts; i++) {
    const struct ch_start *s = &r->starts[i];
    if (s->target != owner) continue;
    n++;
    if (owner == T_EMB && n == b->client >> 8) return s->sync;
    if (owner == T_LCD && s->t_ns <= b->t0_ns) sync = s->sync; /* latest */
  }
  return sync;
}

/* Is f a stop of owner's LevelDB: a power cut, a kill, clean restart or
 * loss of the owner, or a disk fault (its log is reopened)? */
static bool stops(const ch_fault *f, int owner) {
  return !f->missed && f->target == owner &&
         (f->kind == F_POWER_CUT || f->kind == F_OWNER_KILL ||
          f->kind == F_OWNER_RESTART || f->kind == F_PRIMARY_LOSS ||
          f->kind == F_DISK_FULL || f->kind == F_IO_ERROR);
}

/* The largest id acknowledged by t (0 if none). */
static int64_t top_by(const ch_blk *b, size_t nb, int64_t t) {
  int64_t top = 0;
  for (size_t j = 0; j < nb; j++)
    if (b[j].t_ns <= t && b[j].last > top) top = b[j].last;
  return top;
}

/* The windows a power cut on owner can take records from, each with the
 * largest id of the counter acknowledged when it began and when the owner
 * was dead (stop_ns; not its end: the restarted owner's first ids lie
 * above the reservation): each cut's own (the
 * unsynced tail since the last synced reservation).  Not that of an
 * earlier stop (a kill, a restart, a disk fault's reopen of the log): its
 * unsynced tail, left in the page cache, is made durable by the next open
 * (LevelDB's recovery moves it into a synced table, and the library syncs
 * the directory after it, so a later cut cannot bring the old log back).
 * *nk of them (malloc'd, NULL if none). */
static ch_cut *cuts_of(const ch_run *r, int owner, const ch_blk *b, size_t nb,
                       size_t *nk) {
  ch_cut *k = NULL;
  *nk = 0;
  int64_t last_cut = -1; /* the start of the owner's last power cut */
  for (size_t i = 0; i < r->nfaults; i++)
    if (r->faults[i].kind == F_POWER_CUT && stops(&r->faults[i], owner))
      last_cut = r->faults[i].t_ns;
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (f->kind != F_POWER_CUT || !stops(f, owner) || f->t_ns > last_cut)
      continue;
    ch_cut *nkp = realloc(k, (*nk + 1) * sizeof *k);
    if (!nkp) break;
    k = nkp;
    k[(*nk)++] = (ch_cut){f->end_ns, top_by(b, nb, f->t_ns),
                          top_by(b, nb, f->stop_ns ? f->stop_ns : f->end_ns)};
  }
  return k;
}

bool ch_cut_covers(const ch_cut *k, size_t nk, int64_t first, int64_t last,
                   int64_t t_ns) {
  for (size_t i = 0; i < nk; i++)
    if ((t_ns < 0 || t_ns <= k[i].end_ns) &&
        first > k[i].lo - CH_CUT_WINDOW && last <= k[i].hi + CH_CUT_WINDOW)
      return true;
  return false;
}

int ch_log_tally(const ch_run *r, const char *who, int t, int64_t *total,
                 int64_t *pending, uint64_t *losses, uint64_t *lost) {
  char path[1024];
  lc_t *h;
  int rc = open_log(r, who, path, &h);
  if (!rc) rc = lc_tally_get(h, ch_tally_name(t), total, pending, losses);
  uint64_t lost_m = 0; /* chaos's deltas are all positive */
  if (!rc) rc = lc_tally_lost(h, ch_tally_name(t), lost, &lost_m);
  if (!rc && lost_m) rc = -1000;
  lc_close(h);
  return rc;
}

void ch_check_logged(const ch_run *r, int c, const ch_blk *blocks, size_t n,
                     const ch_gap *gaps, size_t ngaps, ch_logged *out,
                     ch_ledger *led) {
  recs l = {0};
  if (read_log(r, ch_owner_of(c) == T_EMB ? "emb" : "lcd", c, &l, out->error,
               sizeof out->error) != 0) {
    out->errors++;
    free(l.r);
    free(l.e);
    return;
  }
  out->corrupt += l.corrupt;
  size_t nk;
  ch_cut *cuts = cuts_of(r, ch_owner_of(c), blocks, n, &nk);
  ch_check_ledger(r, c, l.r, l.n, l.e, l.ne, l.bad, blocks, n, gaps, ngaps,
                  cuts, nk, led);
  for (size_t i = 0; i < n; i++) {
    const ch_blk *b = &blocks[i];
    if (logged(&l, b->first, b->last)) continue;
    int64_t below =
        c < CH_EMB_COUNTERS ? atomic_load(&r->emb_ctl->pruned_below[c]) : 0;
    /* Below the prune point, or a block across two prefetched segments
     * whose first record was pruned: what is at or above the point must
     * still be logged. */
    if (b->last < below || (b->first < below && logged(&l, below, b->last))) {
      out->pruned++;
      continue;
    }
    if ((r->standby || r->cluster) && ch_owner_of(c) == T_LCD &&
        in_failover(&l, b->first, b->last)) {
      out->failover++;
      continue;
    }
    /* only the unsynced tail a cut can take: acknowledged by its end,
     * within its window */
    bool cut = ch_cut_covers(cuts, nk, b->first, b->last, b->t_ns);
    if (cut && !served_synced(r, b, ch_owner_of(c))) {
      out->cut_away++;
      continue;
    }
    if (cut) out->synced_lost++; /* every record was synced */
    if (out->unlogged++ == 0)
      snprintf(out->example, sizeof out->example, "e.g. %s: %lld..%lld%s",
               ch_counter_name(c), (long long)b->first, (long long)b->last,
               cut ? " (synced)" : nk ? " (outside every power cut's window)"
                                      : "");
  }
  free(cuts);
  free(l.r);
  free(l.e);
}
