/*
 * tallywin.c - which acknowledged tally changes a kill of their owner may
 * have taken unmeasured (check.c's allowance, "acknowledged just before a
 * kill of the owner"): an owner records a tally's pending changes (its
 * carry) with each record write, and what it acknowledged after its last
 * one is lost unmeasured when it dies and memcached loses the sums (a
 * power cut flushes them).  Kept apart from check.c so that
 * test_chaos_fit can link it.
 */
#include "chaos.h"

/* How long before a kill of its owner a tally change may have been
 * acknowledged and still be missing from the owner's last record write:
 * the embedded worker sweeps every 100 ms; logcounterd flushes a tally
 * once its window (1 s) and margin (1.25 s) have passed, checked every
 * --flush-interval (1 s): 3.25 s, and 0.75 s for the flush itself on a
 * loaded machine. */
static int64_t kill_window_ns(int owner) {
  return owner == T_EMB ? 1000000000LL : 4000000000LL;
}

/* A fault that fails the owner's log writes meanwhile: no record, so no
 * flush and no carry, is written until its log is back. */
static bool log_fault(int kind) {
  return kind == F_WRITE_FAIL || kind == F_DISK_FULL || kind == F_IO_ERROR;
}

/* How long an owner takes to reopen its log after a disk fault ended
 * (its retries: a second apart at most; lcd.log shows "reopened 0.8 s
 * after it failed"). */
#define LOG_BACK_NS 1500000000LL

static bool kills(const ch_fault *f) {
  return f->kind == F_OWNER_KILL || f->kind == F_POWER_CUT ||
         ch_kind_stops_primary(f->kind);
}

bool ch_tally_before_kill(const ch_run *r, int owner, int64_t t) {
  for (size_t i = 0; i < r->nfaults; i++) {
    const ch_fault *f = &r->faults[i];
    if (f->missed || f->target != owner || !kills(f)) continue;
    /* The end: the new owner's start (an answer the killed one sent may
     * be read, and recorded, after the fault began: the harness reads
     * memcached first, and a client reads a reply once scheduled); else
     * the fault's start. */
    int64_t end = f->restart_ns ? f->restart_ns : f->t_ns;
    /* The start: the window before the kill, reaching back over the
     * owner's log faults within it (its log failed, nothing recorded
     * what it had acknowledged before), however many in a row. */
    int64_t start = f->t_ns - kill_window_ns(owner);
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t j = 0; j < r->nfaults; j++) {
        const ch_fault *g = &r->faults[j];
        if (g->missed || g->target != owner || !log_fault(g->kind) ||
            g->t_ns >= f->t_ns || g->end_ns + LOG_BACK_NS < start ||
            g->t_ns - kill_window_ns(owner) >= start)
          continue;
        start = g->t_ns - kill_window_ns(owner);
        moved = true;
      }
    }
    if (t >= start && t <= end) return true;
  }
  return false;
}
