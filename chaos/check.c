/*
 * check.c - the checker: reads every acknowledgement record of a run and
 * prints the report (in the manner of Jepsen's unique-ids checker).
 *
 *  - duplicated: ids acknowledged more than once, per counter, found by
 *    sorting the acknowledged blocks (must be 0);
 *  - out of order: a client (thread or connection) that received a block
 *    not wholly above the previous one it received from that counter
 *    (must be 0);
 *  - gaps: ids between consecutive acknowledged blocks that nobody
 *    received, each run attributed to a fault (see blame(): the fault
 *    that overlaps, in time, the acknowledgements on either side of the
 *    gap, else the nearest one).  A heuristic, not a proof: it names the
 *    fault that most plausibly burned the values (a call in flight when
 *    it struck, a failed write, a restart above the reservation);
 *  - logged: each owner's log read back (logged.c), with its gap ledger
 *    (ledger.c): every hole between records tiled by ledger entries, and
 *    every gap above explained by records (handed out, not acknowledged)
 *    or by entries whose cause fits the faults of the run, and each
 *    gap's causes the faults near it in time (ch_gap_unfit);
 *  - tallies: the durable total T (plus anything still pending P) after a
 *    final sweep and flush, against the exact sum A of acknowledged
 *    changes, the sum U of changes attempted but not acknowledged (they
 *    may or may not have applied, or been lost), and the amount L the
 *    library recorded as lost (lc_tally_lost, P14).  All deltas are
 *    positive, so A - L - K <= T + P <= A - L + U: every shortfall is
 *    measured, to within the changes nobody knows the fate of.  K: the
 *    changes acknowledged shortly before a kill of the tally's owner
 *    (owner-kill, power-cut, primary-loss, partition, and the --cluster
 *    faults that stop the primary; the window, up to the new owner's
 *    start and back over the owner's log faults, in tallywin.c): a
 *    killed owner's acknowledgements since its last record write (the
 *    carry) cannot be measured by the next one if memcached loses them
 *    meanwhile; every other loss must be in L;
 *  - with --cluster, the failovers (a fault after which another node was
 *    the primary) and each one's outage: the longest time without an
 *    acknowledged id of the daemon's counters (any client) from the
 *    fault's start to the first id after the new primary was seen.
 */
#include "chaos.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct series {
  ch_blk *b;
  size_t n, cap;
  ch_gap *g; /* the gaps, in order, with the fault blamed */
  size_t ng, gcap;
  uint64_t ids, dup_ids, dup_blocks, gap_ids, gap_runs;
  int64_t max;
} series;

typedef struct tally_sum {
  int64_t tried, acked;
  int64_t before_kill; /* acknowledged within KILL_WINDOW_NS before a kill
                          of the tally's owner */
} tally_sum;

static int cmp_blk(const void *a, const void *b) {
  const ch_blk *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return (x->last > y->last) - (x->last < y->last);
}

static int cmp_failed(const void *a, const void *b) {
  const struct ch_failed *x = a, *y = b;
  return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
}

int ch_owner_of(int obj) {
  return obj < CH_EMB_COUNTERS ? T_EMB : T_LCD;
}

/* The fault a gap is blamed on, among those that can touch a counter of
 * owner: the ids were lost between the acknowledgements of the blocks on
 * either side of the gap, at times a and b.  The latest fault that began
 * by max(a, b) and had not ended before min(a, b); failing that the fault
 * nearest in time (a call in flight when the owner was killed sits
 * between two blocks acknowledged just before the kill).  F_KINDS when no
 * fault could touch the counter at all. */
static int blame(const ch_run *r, int64_t a, int64_t b, int owner) {
  int64_t lo = a < b ? a : b, hi = a < b ? b : a;
  int best = F_KINDS;
  int64_t best_dist = INT64_MAX;
  for (size_t i = r->nfaults; i-- > 0;) {
    const ch_fault *f = &r->faults[i];
    if (f->missed || (f->target != T_NONE && f->target != owner)) continue;
    if (f->t_ns <= hi && f->end_ns >= lo) return f->kind;
    int64_t d = f->t_ns > hi ? f->t_ns - hi : lo - f->end_ns;
    if (d < best_dist) best_dist = d, best = f->kind;
  }
  return best;
}

/* Per file: the last block each of its clients got from each counter. */
static uint64_t load(ch_run *run, const char *path, series *s,
                     tally_sum *ts, uint64_t *ooo) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  static int64_t last[256][CH_COUNTERS];
  memset(last, 0, sizeof last);
  ch_rec buf[4096];
  ssize_t got;
  uint64_t n = 0;
  while ((got = read(fd, buf, sizeof buf)) > 0) {
    for (size_t i = 0; i < (size_t)got / sizeof *buf; i++) {
      ch_rec *r = &buf[i];
      if (r->kind == REC_TALLY_TRY && r->obj < CH_TALLIES)
        ts[r->obj].tried += r->value;
      if (r->kind == REC_TALLY_ACK && r->obj < CH_TALLIES) {
        ts[r->obj].acked += r->value;
        if (ch_tally_before_kill(run, r->obj < CH_EMB_TALLIES ? T_EMB : T_LCD,
                                 r->t_ns))
          ts[r->obj].before_kill += r->value;
      }
      if (r->kind == REC_FAIL && r->obj < CH_COUNTERS) {
        if (run->nfailed == run->fcap) { /* the failed calls, for ledger.c */
          run->fcap = run->fcap ? 2 * run->fcap : 1024;
          run->failed = realloc(run->failed, run->fcap * sizeof *run->failed);
        }
        run->failed[run->nfailed++] =
            (struct ch_failed){r->t0_ns, r->t_ns, r->obj, (int)r->value};
        continue;
      }
      if (r->kind != REC_ID || r->obj >= CH_COUNTERS || r->n == 0) continue;
      ch_blk b = {r->value - (int64_t)r->n + 1, r->value, r->t_ns, r->t0_ns,
                  r->client};
      int64_t *l = &last[r->client & 0xff][r->obj];
      if (b.first <= *l) (*ooo)++;
      *l = b.last;
      series *c = &s[r->obj];
      if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 4096;
        c->b = realloc(c->b, c->cap * sizeof *c->b);
      }
      c->b[c->n++] = b;
      n++;
    }
  }
  close(fd);
  return n;
}

static void line(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void line(const char *label, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%-13s ", label);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* --cluster: the failovers' outages, in seconds (sorted), from the
 * acknowledgement times of the daemon's counters' blocks; *n of them. */
static double *outages(const ch_run *r, const series *s, size_t *n) {
  size_t nt = 0, k = 0;
  for (int c = CH_EMB_COUNTERS; c < CH_COUNTERS; c++) nt += s[c].n;
  int64_t *t = malloc((nt + 1) * sizeof *t);
  double *o = malloc((r->nfaults + 1) * sizeof *o);
  *n = 0;
  if (!t || !o) {
    free(t);
    free(o);
    return NULL;
  }
  for (int c = CH_EMB_COUNTERS; c < CH_COUNTERS; c++)
    for (size_t i = 0; i < s[c].n; i++) t[k++] = s[c].b[i].t_ns;
  qsort(t, nt, sizeof *t, cmp_i64);
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (!f->failover) continue;
    /* the last id at or before the fault, then every one up to the first
     * after the new primary was seen: the longest interval */
    size_t j = 0;
    while (j < nt && t[j] <= f->t_ns) j++;
    int64_t prev = j ? t[j - 1] : f->t_ns, worst = 0;
    for (; j < nt; j++) {
      if (t[j] - prev > worst) worst = t[j] - prev;
      prev = t[j];
      if (t[j] >= f->fo_ns) break;
    }
    if (j == nt && (r->faults[r->nfaults - 1].end_ns - prev) > worst)
      worst = r->faults[r->nfaults - 1].end_ns - prev; /* none came */
    o[(*n)++] = (double)worst / 1e9;
  }
  free(t);
  qsort(o, *n, sizeof *o, cmp_dbl);
  return o;
}

int ch_check(ch_run *r, int64_t elapsed_ns) {
  series s[CH_COUNTERS] = {0};
  tally_sum ts[CH_TALLIES] = {0};
  uint64_t ooo = 0, blocks = 0;
  char dir[1024], path[1300];
  ch_path(r, dir, sizeof dir, "rec");
  DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    blocks += load(r, path, s, ts, &ooo);
  }
  if (d) closedir(d);

  qsort(r->failed, r->nfailed, sizeof *r->failed, cmp_failed);

  uint64_t gap_runs[F_KINDS + 1] = {0}, gap_ids[F_KINDS + 1] = {0};
  uint64_t ids = 0, dup_ids = 0, dup_blocks = 0, gids = 0, gruns = 0;
  char dup_example[160] = "";
  for (int c = 0; c < CH_COUNTERS; c++) {
    series *x = &s[c];
    qsort(x->b, x->n, sizeof *x->b, cmp_blk);
    int64_t end = 0; /* every id <= end was acknowledged */
    int64_t end_t = x->n ? x->b[0].t_ns : 0; /* when end's block was */
    for (size_t i = 0; i < x->n; i++) {
      ch_blk *b = &x->b[i];
      x->ids += (uint64_t)(b->last - b->first + 1);
      if (b->first <= end) {
        int64_t hi = b->last < end ? b->last : end;
        x->dup_ids += (uint64_t)(hi - b->first + 1);
        x->dup_blocks++;
        if (!dup_example[0])
          snprintf(dup_example, sizeof dup_example,
                   "e.g. %s: %lld..%lld acknowledged again", ch_counter_name(c),
                   (long long)b->first, (long long)hi);
      } else if (b->first > end + 1) {
        int k = blame(r, end_t, b->t_ns, ch_owner_of(c));
        if (x->ng == x->gcap) {
          x->gcap = x->gcap ? 2 * x->gcap : 256;
          x->g = realloc(x->g, x->gcap * sizeof *x->g);
        }
        x->g[x->ng++] = (ch_gap){end + 1, b->first - 1, k, end_t, b->t_ns};
        gap_runs[k]++;
        gap_ids[k] += (uint64_t)(b->first - end - 1);
        x->gap_runs++;
        x->gap_ids += (uint64_t)(b->first - end - 1);
      }
      if (b->last > end) end = b->last, end_t = b->t_ns;
    }
    x->max = end;
    ids += x->ids, dup_ids += x->dup_ids, dup_blocks += x->dup_blocks;
    gids += x->gap_ids, gruns += x->gap_runs;
  }

  /* logged before returned: read each owner's log back */
  ch_logged lg = {0};
  static ch_ledger led;
  memset(&led, 0, sizeof led);
  for (int c = 0; c < CH_COUNTERS && !r->baseline; c++)
    ch_check_logged(r, c, s[c].b, s[c].n, s[c].g, s[c].ng, &lg, &led);

  /* the tallies' final state, as the last worker wrote it */
  int64_t total[CH_TALLIES] = {0}, pending[CH_TALLIES] = {0};
  unsigned long long losses[CH_TALLIES] = {0}, lost[CH_TALLIES] = {0};
  int trc[CH_TALLIES];
  for (int t = 0; t < CH_TALLIES; t++) trc[t] = -1;
  ch_path(r, path, sizeof path, "emb.final");
  FILE *f = fopen(path, "r");
  int i, rc;
  long long tt, pp;
  unsigned long long ll, la;
  while (f &&
         fscanf(f, "%d %d %lld %lld %llu %llu", &i, &rc, &tt, &pp, &ll, &la) ==
             6)
    if (i >= 0 && i < CH_EMB_TALLIES)
      trc[i] = rc, total[i] = tt, pending[i] = pp, losses[i] = ll,
      lost[i] = la;
  if (f) fclose(f);
  for (int t = CH_EMB_TALLIES; t < CH_TALLIES; t++) { /* the daemon's */
    uint64_t lo = 0, lam = 0;
    trc[t] = ch_log_tally(r, "lcd", t, &total[t], &pending[t], &lo, &lam);
    losses[t] = lo;
    lost[t] = lam;
  }

  /* faults by kind and target */
  unsigned kinds[F_KINDS] = {0}, by_target[F_KINDS][3] = {{0}}, skipped = 0;
  for (size_t k = 0; k < r->nfaults; k++) {
    ch_fault *x = &r->faults[k];
    if (x->missed) {
      skipped++;
      continue;
    }
    kinds[x->kind]++;
    by_target[x->kind][x->target]++;
  }

  ch_ctl *e = r->emb_ctl, *dc = r->dcl_ctl;
  printf("\n== chaos report: %s, seed %llu, %.1f s\n",
         r->baseline ? "SEED-FAITHFUL BASELINE (the original, UNSAFE)"
                     : "logcounter",
         (unsigned long long)r->seed, (double)elapsed_ns / 1e9);
  line("attempted",
       "%llu calls for %llu ids (embedded %llu calls, "
       "through logcounterd %llu); %llu calls failed, %llu of them by a "
       "connection closed under them",
       (unsigned long long)(e->calls + dc->calls),
       (unsigned long long)(e->ids_attempted + dc->ids_attempted),
       (unsigned long long)e->calls, (unsigned long long)dc->calls,
       (unsigned long long)(e->calls_failed + dc->calls_failed),
       (unsigned long long)dc->calls_lost);
  line("acknowledged", "%llu ids in %llu blocks", (unsigned long long)ids,
       (unsigned long long)blocks);
  line("duplicated", "%llu ids in %llu blocks (must be 0)%s%s",
       (unsigned long long)dup_ids, (unsigned long long)dup_blocks,
       dup_example[0] ? "; " : "", dup_example);
  line("out of order", "%llu (must be 0)", (unsigned long long)ooo);
  if (r->baseline)
    line("logged", "not checked (the seed algorithm writes after returning)");
  else if (lg.errors)
    line("logged", "FAIL: cannot read a log: %s", lg.error);
  else
    line("logged",
         "%llu acknowledged blocks missing from the log (must be "
         "0; %llu of them synced before a power cut)%s%s; %llu taken by a "
         "power cut (unsynced records of default durability), %llu pruned; "
         "%llu corrupt records (must be 0)",
         (unsigned long long)lg.unlogged, (unsigned long long)lg.synced_lost,
         lg.unlogged ? "; " : "", lg.example, (unsigned long long)lg.cut_away,
         (unsigned long long)lg.pruned, (unsigned long long)lg.corrupt);
  if ((r->standby || r->cluster) && !r->baseline && !lg.errors)
    line("", "daemon counters read from the surviving primary's log (%s): "
         "%llu acknowledged blocks not in it lie in its failover gaps (a "
         "lost primary handed them out; explained)",
         ch_lcd_dir(r), (unsigned long long)lg.failover);
  line("gaps", "%llu ids in %llu runs", (unsigned long long)gids,
       (unsigned long long)gruns);
  for (int k = 0; k <= F_KINDS; k++)
    if (gap_runs[k])
      printf("%-13s   after %-18s %6llu runs %9llu ids\n", "",
             k == F_KINDS ? "(no fault)" : ch_fault_name(k),
             (unsigned long long)gap_runs[k], (unsigned long long)gap_ids[k]);
  bool ledger_ok = true;
  char ledger_why[1024] = "";
  if (r->baseline)
    line("ledger", "not checked (nor is logged in a baseline run)");
  else if (lg.errors)
    line("ledger", "not checked (a log could not be read: see logged)");
  else
    ledger_ok = ch_ledger_report(r, &led, ledger_why, sizeof ledger_why);
  for (int c = 0; c < CH_COUNTERS; c++)
    printf("%-13s %s (%s): %llu ids, up to %lld, %llu duplicated, %llu "
           "missing in %llu gaps\n",
           c ? "" : "counters", ch_counter_name(c),
           ch_target_name(ch_owner_of(c)), (unsigned long long)s[c].ids,
           (long long)s[c].max, (unsigned long long)s[c].dup_ids,
           (unsigned long long)s[c].gap_ids, (unsigned long long)s[c].gap_runs);
  bool tally_ok = true;
  char tally_bad[128] = ""; /* the tallies that failed */
  for (int t = 0; t < CH_TALLIES; t++) {
    int64_t a = ts[t].acked, u = ts[t].tried - ts[t].acked;
    int64_t k = ts[t].before_kill;
    /* what the log (and memcached) hold, against what was acknowledged
     * less what the library measured as lost: the rest must be changes
     * of unknown fate (0 .. u) */
    __int128 held = (__int128)total[t] + pending[t];
    __int128 rest = held - ((__int128)a - (__int128)lost[t]);
    bool ok = trc[t] == 0 && rest >= -k && rest <= u;
    tally_ok = tally_ok && ok;
    if (!ok)
      snprintf(tally_bad + strlen(tally_bad),
               sizeof tally_bad - strlen(tally_bad), " %s",
               ch_tally_name(t));
    printf(
        "%-13s %s (%s): durable total %lld, %lld pending; acknowledged "
        "changes sum to %lld, %lld more attempted unacknowledged; lost %llu "
        "(recorded, in %llu losses): acknowledged - held - lost = %lld "
        "(%lld acknowledged just before a kill of the owner): %s\n",
        t ? "" : "tallies", ch_tally_name(t),
        t < CH_EMB_TALLIES ? "embedded" : "logcounterd", (long long)total[t],
        (long long)pending[t], (long long)a, (long long)u, lost[t], losses[t],
        (long long)-rest, (long long)k,
        trc[t] != 0 ? "FAIL (no final reading)"
        : rest < -k ? "FAIL (short by more than the recorded loss)"
        : rest > u  ? "FAIL (above the true sum less the recorded loss)"
        : rest == 0 && lost[t] == 0 ? "exact"
        : rest == 0 ? "exact (with the loss measured)"
        : rest < 0  ? "ok (short beyond the recorded loss by no more than a "
                      "killed owner acknowledged after its last record)"
                    : "ok (within the unacknowledged changes)");
  }
  printf("%-13s", "faults");
  /* the kinds of the mode: --cluster's own (and those --only adds), or
   * the others (--standby's two only with it) */
  unsigned shown = 0;
  for (int k = 0; k < F_KINDS; k++)
    if (r->cluster ? ((r->only ? r->only : CH_CLUSTER_KINDS) >> k & 1)
                   : !(CH_CLUSTER_KINDS >> k & 1) &&
                         (r->standby || !(CH_STANDBY_KINDS >> k & 1)))
      shown |= 1u << k;
  const char *sep = "";
  for (int k = 0; k < F_KINDS; k++) {
    if (!(shown >> k & 1)) continue;
    printf("%s %s %u", sep, ch_fault_name(k), kinds[k]);
    if (by_target[k][T_EMB] || by_target[k][T_LCD])
      printf(" (embedded %u, logcounterd %u)", by_target[k][T_EMB],
             by_target[k][T_LCD]);
    sep = ",";
  }
  printf("\n");
  if (r->cluster) {
    size_t no = 0;
    double *o = outages(r, s, &no);
    if (no && o)
      printf("%-13s %u failovers (a fault after which another node was the "
             "primary; %u more between faults, not measured); outage per "
             "failover (no acknowledged id): median "
             "%.2f s, largest %.2f s; %u node starts, %u etcd starts, %u "
             "settles timed out (one primary, two standbys, one in sync, "
             "within 30 s); the last primary's log: %s; %u nodes stopped "
             "after it exited 1, left alone without a standby to "
             "acknowledge their closing floor (as documented); the daemon "
             "clients moved to the next node %llu times\n",
             "cluster", r->failovers, r->idle_failovers,
             no % 2 ? o[no / 2] : (o[no / 2 - 1] + o[no / 2]) / 2,
             o[no - 1], r->node_starts, r->etcd_starts, r->settle_timeouts,
             ch_lcd_dir(r), r->alone_stops,
             (unsigned long long)atomic_load(&dc->switches));
    else
      printf("%-13s %u failovers (%u more between faults); %u node "
             "starts, %u etcd starts, %u "
             "settles timed out; the last primary's log: %s\n",
             "cluster", r->failovers, r->idle_failovers, r->node_starts,
             r->etcd_starts,
             r->settle_timeouts, ch_lcd_dir(r));
    free(o);
  }
  if (r->standby)
    printf("%-13s %u promotions (%u failed), %u standbys started, %u "
           "waits for a standby in sync timed out (stderr says where); "
           "daemon clients refused %llu calls with ESTANDBY and %llu with "
           "ENOSTANDBY, and moved to the other daemon %llu times; the "
           "surviving primary's log: %s\n",
           "standby", r->promotions, r->promote_failures, r->sby_starts,
           r->sync_waits_failed,
           (unsigned long long)dc->calls_estandby,
           (unsigned long long)dc->calls_enostandby,
           (unsigned long long)dc->switches, ch_lcd_dir(r));
  printf("%-13s %llu log writes failed on purpose, %llu allocations paused "
         "before their log write, %u faults not carried out (a pause that no "
         "allocation reached, a prune with no worker up, a disk fault that "
         "failed no call), %u clean stops of logcounterd with exit status 1 "
         "because memcached failed its final tally flush (as documented)\n",
         "", (unsigned long long)(e->writes_failed + r->lcd_ctl->writes_failed),
         (unsigned long long)e->pauses, skipped, r->flush_failed_stops);
  /* the disk faults: what the shim did, and what the owners made of it */
  uint64_t dhits[F_KINDS] = {0}, io_by_mode[8] = {0};
  unsigned dmissed = 0;
  for (size_t k = 0; k < r->nfaults; k++) {
    ch_fault *x = &r->faults[k];
    if (x->kind != F_DISK_FULL && x->kind != F_IO_ERROR) continue;
    dhits[x->kind] += x->hits;
    dmissed += x->missed;
    if (x->kind == F_IO_ERROR && !x->missed && x->mode >= 0 && x->mode < 8)
      io_by_mode[x->mode]++;
  }
  uint64_t lcd_failed = r->lcd_log_failures;
  uint64_t lcd_recovered = r->lcd_log_recoveries;
  printf(
      "%-13s %llu calls failed by the shim beneath LevelDB (disk-full: "
      "%u faults failed %llu; io-error: %u faults, eio %llu, short %llu, "
      "fsync %llu, eio-once %llu, failed %llu; %u disk faults failed "
      "none); %llu calls refused with ELOG (embedded %llu, through "
      "logcounterd %llu); log failures %llu, recoveries %llu (embedded "
      "%llu/%llu, logcounterd %llu/%llu, as their handles counted them)\n",
      "disk faults",
      (unsigned long long)(ch_owner_hits(r, T_EMB) + ch_owner_hits(r, T_LCD)),
      kinds[F_DISK_FULL], (unsigned long long)dhits[F_DISK_FULL],
      kinds[F_IO_ERROR], (unsigned long long)io_by_mode[0],
      (unsigned long long)io_by_mode[1], (unsigned long long)io_by_mode[2],
      (unsigned long long)io_by_mode[3], (unsigned long long)dhits[F_IO_ERROR],
      dmissed, (unsigned long long)(e->calls_elog + dc->calls_elog),
      (unsigned long long)e->calls_elog, (unsigned long long)dc->calls_elog,
      (unsigned long long)(e->log_failures + lcd_failed),
      (unsigned long long)(e->log_recoveries + lcd_recovered),
      (unsigned long long)e->log_failures,
      (unsigned long long)e->log_recoveries, (unsigned long long)lcd_failed,
      (unsigned long long)lcd_recovered);
  printf("%-13s %s\n", "findings", r->findings[0] ? r->findings : "none");

  bool all_kinds = true;
  unsigned injected = 0;
  for (int k = 0; k < F_KINDS; k++) {
    if (!(shown >> k & 1)) continue;
    all_kinds = all_kinds && kinds[k] > 0;
    injected += kinds[k];
  }
  /* a run that acknowledged nothing, or injected nothing, shows nothing */
  bool valid = dup_ids == 0 && ooo == 0 && tally_ok && r->unexpected == 0 &&
               r->stuck_logs == 0 && lg.unlogged == 0 && lg.errors == 0 && lg.corrupt == 0 &&
               ledger_ok && ids > 0 && injected > 0;
  printf("%-13s %s%s%s%s", "result", valid ? "VALID" : "INVALID",
         ids ? "" : " (no id was acknowledged)",
         injected ? "" : " (no fault was injected)",
         all_kinds ? "" : " (not every fault kind was injected)");
  if (!valid) { /* why, every condition that failed */
    const char *why_sep = ": ";
#define WHY(cond, ...)                                                         \
  do {                                                                         \
    if (cond) printf("%s", why_sep), printf(__VA_ARGS__), why_sep = "; ";            \
  } while (0)
    WHY(dup_ids, "%llu duplicated ids", (unsigned long long)dup_ids);
    WHY(ooo, "%llu out of order", (unsigned long long)ooo);
    WHY(!tally_ok, "tally FAIL:%s", tally_bad);
    WHY(r->unexpected, "%u owner exits nobody caused (see findings)", r->unexpected);
    WHY(r->stuck_logs, "%u owner logs never recovered (see findings)",
        r->stuck_logs);
    WHY(lg.unlogged, "%llu acknowledged blocks missing from the log",
        (unsigned long long)lg.unlogged);
    WHY(lg.errors, "a log could not be read");
    WHY(lg.corrupt, "%llu corrupt records", (unsigned long long)lg.corrupt);
    WHY(!ledger_ok, "ledger: %s", ledger_why[0] ? ledger_why : "FAIL");
    WHY(!ids, "no id acknowledged");
    WHY(!injected, "no fault injected");
#undef WHY
  }
  printf("\n");
  for (int c = 0; c < CH_COUNTERS; c++) free(s[c].b), free(s[c].g);
  free(r->failed);
  r->failed = NULL;
  r->nfailed = r->fcap = 0;
  fflush(stdout);
  return valid ? 0 : 1;
}
