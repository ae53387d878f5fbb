/*
 * ledger_report.c - the gap ledger's part of the chaos report (what
 * ledger.c found): the gaps explained by cause, what is unexplained or in
 * conflict, whether each cause fits the faults of the run, and the
 * acknowledged gaps tabulated by fault blamed and ledger cause.
 *
 * The fit, per owner: a cause seen on its counters must be one that a
 * fault injected in the run (on it, or on memcached) can produce; unfit()
 * says which can, read from nemesis.c and the library.
 *
 * Per gap: each acknowledged gap's causes must be ones that a fault near
 * it in time can produce there (ch_gap_unfit): a fault on its owner or
 * on memcached whose time overlaps the gap's window, from
 * CH_CAUSE_SLACK_NS before the acknowledgement of the block below it to
 * as long after that of the block above it (the ids in it were lost in
 * between; the slack covers a write still failing or a log recovering
 * just after the fault, and a block acknowledged late), or, where a
 * failed call explains the cause, a failed call of the owner then (the
 * clients' REC_FAIL records).  check.c's blame() names one fault per gap
 * (a heuristic, so the fault named in a failure is the blamed one, and
 * the check takes any fault near): a mislabel fails the run, with the
 * gap, its cause and the fault blamed.
 */
#include "chaos.h"

#include <logcounter.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends "; " (unless first) and a reason to why (size wlen). */
static void because(char *why, size_t wlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void because(char *why, size_t wlen, const char *fmt, ...) {
  size_t n = strlen(why);
  if (n + 3 >= wlen) return;
  if (n) strcpy(why + n, "; "), n += 2;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + n, wlen - n, fmt, ap);
  va_end(ap);
}

/* Was a fault of kind injected on owner (or on memcached, which every
 * owner uses)? */
static bool hit(const ch_run *r, int kind, int owner) {
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (!f->missed && f->kind == kind &&
        (f->target == T_NONE || f->target == owner))
      return true;
  }
  return false;
}

/* Did a fault of the run stop owner's primary (ch_kind_stops_primary:
 * primary-loss, partition and the --cluster kinds but standby-kill), or,
 * any_node, any --cluster fault at all (a node killed, or a fenced one
 * that re-executes itself to follow)? */
static bool stopped_primary(const ch_run *r, int owner, bool any_node) {
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (!f->missed && f->target == owner &&
        (ch_kind_stops_primary(f->kind) ||
         (any_node && (CH_CLUSTER_KINDS >> f->kind & 1))))
      return true;
  }
  return false;
}

/* Did owner ever run with prefetched segments?  Its n-th start ran in
 * ch_owner_mode(n). */
static bool ran_prefetch(const ch_run *r, int owner) {
  int n = 0;
  for (size_t i = 0; i < r->nstarts; i++)
    if (r->starts[i].target == owner &&
        strcmp(ch_owner_mode(++n, r->baseline), "prefetch") == 0)
      return true;
  return false;
}

/* --standby: did a primary logcounterd run without a standby in sync?
 * The daemons run in required mode (the default), so such a primary
 * fails its synced writes (the reservations, the floors) with
 * LC_ENOSTANDBY once --standby-timeout passes, and each failed write
 * burns its block like any failed log write (library.md, operations.md
 * "high availability").  That happens after primary-loss and partition
 * (the promoted standby serves until a fresh standby copies and gets in
 * sync; the resumed old primary's clients get ENOSTANDBY), after an
 * owner-kill or owner-restart of the primary (its standby must reconnect
 * and resume before the next floor), and without any fault too: at the
 * run's start (the clients start before the first standby has copied)
 * and whenever the standby acknowledges a floor late on a loaded
 * machine.  So the evidence counts as well: a daemon call refused with
 * ENOSTANDBY is such a failed write. */
static bool standby_less(const ch_run *r, int owner) {
  return r->standby && owner == T_LCD &&
         (atomic_load(&r->dcl_ctl->calls_enostandby) > 0 ||
          hit(r, F_PRIMARY_LOSS, owner) || hit(r, F_PARTITION, owner) ||
          hit(r, F_OWNER_KILL, owner) || hit(r, F_OWNER_RESTART, owner));
}

/* Why no fault of the run can have produced cause on owner's counters,
 * or NULL when one can:
 *  burned    a failed log write: log-write-fail fails them (the seam, at
 *            leveldb_write), and so do disk-full and io-error beneath
 *            LevelDB (a block taken from memcached whose log write
 *            failed, or was refused because the log had just failed);
 *            with --cluster any of its faults (a floor that no standby
 *            acknowledged in time fails, src/repl/replicate.c: the
 *            synchronous standby killed, cut off or being replaced);
 *            with --standby also a daemon primary without a standby in
 *            sync (LC_ENOSTANDBY, standby_less());
 *  restart   holes up to the reservation a run left without closing:
 *            owner-kill, power-cut, or an owner that died by itself (with
 *            --standby: a primary killed by primary-loss or partition;
 *            with --cluster: any of its faults);
 *  unlogged  memcached ahead of the log: an increment whose answer was
 *            lost (a timeout: memcached-freeze or -kill, or any call that
 *            failed, as calls do with ELOG during a disk fault), a run killed between increment and log write
 *            (owner-kill, power-cut, a crash), or memcached set ahead of
 *            a restarted owner (memcached-rewind to an older snapshot);
 *            a flush alone makes the library restore from the log, exact;
 *  segment   the unused rest of a prefetched segment: a start in
 *            prefetch mode;
 *  failover  a promotion (--standby): primary-loss or partition; with
 *            --cluster a fault that stops the primary (every one of
 *            its kinds but standby-kill);
 *  advance, void: never, chaos calls none of lc_advance, lc_adopt,
 *            lc_void. */
static const char *unfit(const ch_run *r, int owner, int cause) {
  bool died = hit(r, F_OWNER_KILL, owner) || hit(r, F_POWER_CUT, owner) ||
              stopped_primary(r, owner, true) || r->unexpected > 0;
  const ch_ctl *ctl = owner == T_EMB ? r->emb_ctl : r->dcl_ctl;
  switch (cause) {
  case LC_GAP_BURNED:
    return hit(r, F_WRITE_FAIL, owner) || hit(r, F_DISK_FULL, owner) ||
                   hit(r, F_IO_ERROR, owner) ||
                   (r->cluster && stopped_primary(r, owner, true)) ||
                   standby_less(r, owner)
               ? NULL
               : r->standby && owner == T_LCD
                     ? "no log-write-fail, disk-full or io-error hit it, "
                       "no call was refused with ENOSTANDBY and no "
                       "primary-loss, partition, owner-kill or "
                       "owner-restart left it without a standby in sync"
                     : "no log-write-fail, disk-full or io-error hit it (nor, "
                       "--cluster, a fault that lost a node)";
  case LC_GAP_RESTART:
    return died ? NULL : "it was never killed, cut off or crashed";
  case LC_GAP_UNLOGGED:
    return died || hit(r, F_MC_KILL, owner) || hit(r, F_MC_FREEZE, owner) ||
                   hit(r, F_MC_REWIND, owner) ||
                   atomic_load(&ctl->calls_failed) > 0
               ? NULL
               : "no memcached kill, freeze or rewind, no kill, power cut "
                 "or crash of it, and no call failed";
  case LC_GAP_SEGMENT:
    return ran_prefetch(r, owner) ? NULL : "it never ran with prefetch";
  case LC_GAP_ADVANCE: return "chaos calls neither lc_advance nor lc_adopt";
  case LC_GAP_FAILOVER:
    return stopped_primary(r, owner, false)
               ? NULL
               : "no standby of it was promoted (primary-loss, partition, "
                 "or a --cluster fault on the primary)";
  default: return "chaos never calls lc_void";
  }
}

/* ---- the per-gap check: each gap's causes against the faults near it */

#define K(kind) (1u << (kind))
#define WRITE_FAILS (K(F_WRITE_FAIL) | K(F_DISK_FULL) | K(F_IO_ERROR))
#define MC_LOSSES (K(F_MC_KILL) | K(F_MC_FREEZE) | K(F_MC_REWIND))

/* The window of gap g: from the slack before its earlier neighbour's
 * acknowledgement to the slack after its later one's. */
static void window(const ch_gap *g, int64_t *lo, int64_t *hi) {
  *lo = (g->t_lo < g->t_hi ? g->t_lo : g->t_hi) - CH_CAUSE_SLACK_NS;
  *hi = (g->t_lo < g->t_hi ? g->t_hi : g->t_lo) + CH_CAUSE_SLACK_NS;
}

/* What a gap is checked against: the faults of the kinds in allow (all,
 * or the blamed one alone), and the failed calls (calls). */
typedef struct scope {
  unsigned allow;
  bool calls;
} scope;

/* Was a fault of one of kinds (a bit each, within sc's) carried out on
 * owner (or on memcached, T_NONE) at some time within g's window? */
static bool near_in(const ch_run *r, const ch_gap *g, int owner,
                    unsigned kinds, const scope *sc) {
  int64_t lo, hi;
  window(g, &lo, &hi);
  kinds &= sc->allow;
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (!f->missed && (kinds >> f->kind & 1) &&
        (f->target == T_NONE || f->target == owner) && f->t_ns <= hi &&
        f->end_ns >= lo)
      return true;
  }
  return false;
}

/* Did a call on one of owner's counters fail with one of whys (a bit per
 * CH_FAIL_*) within g's window?  (r->failed is sorted by t_ns.) */
static bool failed_near_in(const ch_run *r, const ch_gap *g, int owner,
                           unsigned whys, const scope *sc) {
  if (!sc->calls) return false;
  int64_t lo, hi;
  window(g, &lo, &hi);
  size_t a = 0, b = r->nfailed; /* the first failed at or after lo */
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (r->failed[m].t_ns < lo)
      a = m + 1;
    else
      b = m;
  }
  for (size_t i = a; i < r->nfailed && r->failed[i].t_ns <= hi; i++)
    if (ch_owner_of(r->failed[i].obj) == owner &&
        (whys >> r->failed[i].why & 1))
      return true;
  return false;
}

/* Did owner run with prefetched segments at some time within g's window
 * (its n-th start ran in ch_owner_mode(n) until its next start; with
 * --standby or --cluster logcounterd's starts are of several daemons at
 * once, standbys among them, any of which may serve later: each until the
 * end)? */
static bool prefetch_near(const ch_run *r, const ch_gap *g, int owner) {
  int64_t lo, hi;
  window(g, &lo, &hi);
  int n = 0;
  bool several = owner == T_LCD && (r->standby || r->cluster);
  for (size_t i = 0; i < r->nstarts; i++) {
    if (r->starts[i].target != owner) continue;
    n++;
    int64_t until = INT64_MAX; /* its next start's time */
    for (size_t j = i + 1; j < r->nstarts && !several; j++)
      if (r->starts[j].target == owner) {
        until = r->starts[j].t_ns;
        break;
      }
    if (r->starts[i].t_ns <= hi && until >= lo &&
        strcmp(ch_owner_mode(n, r->baseline), "prefetch") == 0)
      return true;
  }
  return false;
}

/* The kinds that stop owner without a close (its reservation's rest
 * becomes a restart gap, an increment in flight unlogged): owner-kill and
 * power-cut; with --standby a primary killed by primary-loss or
 * partition; with --cluster any of its faults (a node killed, or a fenced
 * one that re-executes itself). */
static unsigned kills(const ch_run *r) {
  unsigned k = K(F_OWNER_KILL) | K(F_POWER_CUT);
  if (r->standby) k |= K(F_PRIMARY_LOSS) | K(F_PARTITION);
  if (r->cluster) k |= CH_CLUSTER_KINDS;
  return k;
}

/* The kinds that stop logcounterd's primary (ch_kind_stops_primary). */
static unsigned stops_primary(void) {
  unsigned k = 0;
  for (int i = 0; i < F_KINDS; i++)
    if (ch_kind_stops_primary(i)) k |= K(i);
  return k;
}

/* The rules, per cause, each gap against the faults within its window
 * (and the failed calls then), read from the library (LC_GAP_*,
 * src/counter/ledger.c, counter.c, segment.c, close.c):
 *  burned    its block's log write failed: log-write-fail, disk-full or
 *            io-error on the owner; with --cluster any of its faults (a
 *            floor no standby acknowledged in time); with --standby on
 *            logcounterd a call refused with ENOSTANDBY then, or a
 *            primary-loss, partition, owner-kill or owner-restart that
 *            left the primary without a standby in sync (standby_less);
 *  restart   the rest of a reservation of a run that stopped without
 *            closing: kills() (or an owner that died by itself, a
 *            finding of its own);
 *  unlogged  memcached ahead of the log with nothing written: an
 *            increment whose answer was lost (memcached-kill, -freeze,
 *            or a call of the owner that failed then: timed out, refused
 *            with ELOG), memcached set ahead (memcached-rewind), or a run
 *            killed between its increment and its log write (kills());
 *  segment   the unused rest of a prefetched segment given up: the owner
 *            ran in prefetch mode then, and it was stopped cleanly
 *            (owner-restart: lc_close, which gives the rest back to
 *            memcached unless memcached fails it: a frozen or killed one),
 *            or the next segment was not contiguous with it (prefetch.c):
 *            memcached jumped under it (a memcached fault or a failed
 *            call then; not a kill, which leaves its segments open) or a
 *            segment between burned (what explains burned ids);
 *  failover  a promotion: --standby's primary-loss or partition, or with
 *            --cluster a fault that stops the primary;
 *  advance, void: never (chaos calls none of lc_advance, lc_adopt,
 *            lc_void). */
static const char *gap_unfit(const ch_run *r, int c, const ch_gap *g,
                             int cause, const scope *sc) {
  int o = ch_owner_of(c);
  unsigned lost_answer = K(CH_FAIL_ELOG) | K(CH_FAIL_OTHER); /* failed calls */
  unsigned left_alone = K(F_PRIMARY_LOSS) | K(F_PARTITION) |
                        K(F_OWNER_KILL) | K(F_OWNER_RESTART);
  bool fits;
  switch (cause) {
  case LC_GAP_BURNED:
    if (near_in(r, g, o, WRITE_FAILS, sc) ||
        (r->cluster && near_in(r, g, o, CH_CLUSTER_KINDS, sc)))
      return NULL;
    if (!r->standby || o != T_LCD)
      return "no fault that fails a log write (log-write-fail, disk-full, "
             "io-error) hit its owner within 2 s of it";
    fits = near_in(r, g, o, left_alone, sc) ||
           failed_near_in(r, g, o, K(CH_FAIL_NOSTANDBY), sc);
    return fits ? NULL
                : "no call of logcounterd was refused with ENOSTANDBY within "
                  "2 s of it, and no primary-loss, partition, owner-kill or "
                  "owner-restart of it was that near";
  case LC_GAP_RESTART:
    fits = near_in(r, g, o, kills(r), sc) || r->unexpected > 0;
    return fits ? NULL
                : "its owner was not killed or cut off within 2 s of it "
                  "(owner-kill, power-cut; primary-loss, partition)";
  case LC_GAP_UNLOGGED:
    fits = near_in(r, g, o, MC_LOSSES | kills(r), sc) ||
           failed_near_in(r, g, o, lost_answer, sc) || r->unexpected > 0;
    return fits ? NULL
                : "no memcached kill, freeze or rewind, no kill of its "
                  "owner, and no failed call of it within 2 s of it";
  case LC_GAP_SEGMENT:
    if (!prefetch_near(r, g, o))
      return "its owner did not run with prefetch then";
    /* given up at a clean stop, or for a segment not contiguous with it
     * (memcached jumped under the running owner: a memcached fault or a
     * lost answer, not a kill, which leaves its segments open; or a
     * segment between burned: what explains burned ids) */
    fits = near_in(r, g, o, K(F_OWNER_RESTART) | MC_LOSSES, sc) ||
           failed_near_in(r, g, o, lost_answer, sc) ||
           gap_unfit(r, c, g, LC_GAP_BURNED, sc) == NULL;
    return fits ? NULL
                : "its owner was not stopped cleanly (owner-restart) within "
                  "2 s of it, and nothing that makes memcached jump or burns "
                  "a segment (a memcached fault, a kill, a failed write or "
                  "call) was that near";
  case LC_GAP_FAILOVER:
    fits = (r->standby || r->cluster) &&
           near_in(r, g, o, stops_primary(), sc);
    return fits ? NULL
                : "no standby of its owner was promoted within 2 s of it";
  case LC_GAP_ADVANCE: return "chaos calls neither lc_advance nor lc_adopt";
  default: return "chaos never calls lc_void";
  }
}

const char *ch_gap_unfit(const ch_run *r, int c, const ch_gap *g, int cause) {
  const scope all = {~0u, true};
  return gap_unfit(r, c, g, cause, &all);
}

bool ch_gap_fits_blamed(const ch_run *r, int c, const ch_gap *g, int cause) {
  const scope blamed = {g->kind < F_KINDS ? K(g->kind) : 0, false};
  return gap_unfit(r, c, g, cause, &blamed) == NULL;
}

/* " (e0 3, d1 2)": the counters with a non-zero count. */
static void by_counter(const uint64_t n[CH_COUNTERS]) {
  const char *sep = " (";
  for (int c = 0; c < CH_COUNTERS; c++)
    if (n[c]) {
      printf("%s%s %llu", sep, ch_counter_name(c), (unsigned long long)n[c]);
      sep = ", ";
    }
  if (sep[0] == ',') printf(")");
}

/* The table's columns: a cause's name, at least 8 wide. */
static int width(const char *name) {
  int w = (int)strlen(name);
  return w < 8 ? 8 : w;
}

static void cell(const char *name, uint64_t v) {
  printf(" %*llu", width(name), (unsigned long long)v);
}

static void row(const char *label, const uint64_t ack[CH_CAUSES],
                uint64_t handed, uint64_t open, uint64_t pruned) {
  printf("%-13s   %-18s", "", label);
  for (int j = 1; j < CH_CAUSES; j++) cell(lc_gap_cause_name(j), ack[j]);
  cell("record", handed);
  cell("open", open);
  cell("pruned", pruned);
  cell("none", ack[0]);
  printf("\n");
}

bool ch_ledger_report(const ch_run *r, const ch_ledger *l, char *why,
                      size_t wlen) {
  why[0] = '\0';
  uint64_t gaps = 0;
  for (int k = 1; k < CH_CAUSES; k++)
    if (k != LC_GAP_VOID) gaps += l->entries[k];
  printf("%-13s %llu gaps explained (by cause:", "ledger",
         (unsigned long long)gaps);
  const char *sep = " ";
  for (int k = 1; k < CH_CAUSES; k++)
    if (k != LC_GAP_VOID && l->entries[k]) {
      printf("%s%s %llu gaps %llu ids", sep, lc_gap_cause_name(k),
             (unsigned long long)l->entries[k], (unsigned long long)l->ids[k]);
      sep = ", ";
    }
  printf("%s)", gaps ? "" : " none");
  if (l->entries[LC_GAP_VOID])
    printf(", %llu voids (%llu ids)",
           (unsigned long long)l->entries[LC_GAP_VOID],
           (unsigned long long)l->ids[LC_GAP_VOID]);
  /* A power cut can take an owner's unsynced records, and with them the
   * entries that rode along (default durability), but only above its last
   * surviving record (a write-ahead log keeps a prefix, and every open
   * syncs the directory, so an earlier recovery stays): the restart labels
   * that hole, up to the synced reservation, as a restart gap.  So no hole
   * is excused; those within a cut's window (ledger.c, ch_cut_covers) are
   * told apart, for the diagnosis. */
  uint64_t excused = l->excused;
  printf("; %llu ids unexplained in %llu holes",
         (unsigned long long)l->unexplained, (unsigned long long)l->holes);
  by_counter(l->c_unexplained);
  if (l->unexplained_acked)
    printf(", %llu of them acknowledged (records a power cut took)",
           (unsigned long long)l->unexplained_acked);
  if (excused)
    printf(", %llu in %llu holes within a power cut's window (not "
           "excused: at most %d ids below the largest id acknowledged "
           "when it began or above the largest when the owner was dead)",
           (unsigned long long)excused, (unsigned long long)l->excused_holes,
           CH_CUT_WINDOW);
  if (l->unexcused_max)
    printf(", the largest hole outside every cut's window %llu ids",
           (unsigned long long)l->unexcused_max);
  printf(" (else must be 0); %llu conflicts with the records",
         (unsigned long long)l->conflicts);
  by_counter(l->c_conflicts);
  printf(" (must be 0)");
  if (l->acked_restart)
    printf("; %llu acknowledged ids in restart gaps (records a power cut "
           "took)",
           (unsigned long long)l->acked_restart);
  if (l->acked_failover)
    printf("; %llu acknowledged ids in failover gaps (handed out by a lost "
           "primary, records not replicated: explained)",
           (unsigned long long)l->acked_failover);
  if (l->below_oldest)
    printf("; %llu entries below a pruned counter's oldest record",
           (unsigned long long)l->below_oldest);
  printf("\n");
  if (l->example[0]) printf("%-13s   unexplained, e.g. %s\n", "", l->example);
  if (l->conflict[0]) printf("%-13s   conflict, e.g. %s\n", "", l->conflict);

  /* each cause against the faults of the run, per owner */
  unsigned misfits = 0;
  for (int o = T_EMB; o <= T_LCD; o++)
    for (int k = 1; k < CH_CAUSES; k++) {
      const char *why_not = l->owner_ids[o][k] ? unfit(r, o, k) : NULL;
      if (why_not == NULL) continue;
      printf("%-13s   FAIL: %llu %s ids on %s's counters, but %s\n", "",
             (unsigned long long)l->owner_ids[o][k], lc_gap_cause_name(k),
             ch_target_name(o), why_not);
      because(why, wlen, "%llu %s ids on %s's counters, but %s",
              (unsigned long long)l->owner_ids[o][k], lc_gap_cause_name(k),
              ch_target_name(o), why_not);
      misfits++;
    }
  if (!misfits && (gaps || l->entries[LC_GAP_VOID]))
    printf("%-13s   every cause fits the faults injected\n", "");
  /* each acknowledged gap's causes against the faults near it */
  if (l->mislabeled) {
    printf("%-13s   FAIL: %llu of %llu acknowledged gaps hold ids of a cause "
           "no fault near them made (%llu ids)",
           "", (unsigned long long)l->mislabeled,
           (unsigned long long)l->gaps_checked,
           (unsigned long long)l->mislabeled_ids);
    by_counter(l->c_mislabeled);
    printf(", e.g. %s\n", l->mislabel);
    because(why, wlen, "%llu acknowledged gaps with a cause no fault near "
            "them made, e.g. %s",
            (unsigned long long)l->mislabeled, l->mislabel);
  } else if (l->gaps_checked) {
    printf("%-13s   every acknowledged gap's causes fit the faults near it "
           "(%llu gaps, within %lld s; %llu of them the fault blamed alone)\n",
           "", (unsigned long long)l->gaps_checked,
           (long long)(CH_CAUSE_SLACK_NS / 1000000000),
           (unsigned long long)l->gaps_blamed_fit);
  }

  /* the acknowledged gaps: fault blamed x cause */
  uint64_t col[CH_CAUSES] = {0}, handed = 0, open = 0, pruned = 0;
  bool any = false;
  for (int k = 0; k <= F_KINDS; k++) {
    uint64_t sum = l->ack_handed[k] + l->ack_pruned[k];
    for (int j = 0; j < CH_CAUSES; j++) sum += l->ack[k][j];
    if (!sum) continue;
    if (!any) {
      printf("%-13s   acknowledged gaps, ids by fault blamed and what the log "
             "says (record: handed out, never acknowledged; open: of those, "
             "in a segment a crash left open; pruned: below a pruned "
             "counter's oldest record; none: must be 0):\n",
             "");
      printf("%-13s   %-18s", "", "after");
      for (int j = 1; j < CH_CAUSES; j++)
        printf(" %*s", width(lc_gap_cause_name(j)), lc_gap_cause_name(j));
      printf(" %8s %8s %8s %8s\n", "record", "open", "pruned", "none");
      any = true;
    }
    row(k == F_KINDS ? "(no fault)" : ch_fault_name(k), l->ack[k],
        l->ack_handed[k], l->ack_open[k], l->ack_pruned[k]);
    for (int j = 0; j < CH_CAUSES; j++) col[j] += l->ack[k][j];
    handed += l->ack_handed[k], open += l->ack_open[k];
    pruned += l->ack_pruned[k];
  }
  if (any) row("total", col, handed, open, pruned);
  /* the "none" ids lie in unexplained holes */
  if (!l->read) because(why, wlen, "no gap ledger was read");
  if (l->unexplained)
    because(why, wlen, "%llu ids unexplained in %llu holes",
            (unsigned long long)l->unexplained,
            (unsigned long long)l->holes);
  if (l->conflicts)
    because(why, wlen, "%llu conflicts with the records",
            (unsigned long long)l->conflicts);
  if (col[0])
    because(why, wlen, "%llu acknowledged gap ids with no ledger cause",
            (unsigned long long)col[0]);
  return l->read && l->unexplained == 0 && l->conflicts == 0 &&
         col[0] == 0 && misfits == 0 && l->mislabeled == 0;
}
