/*
 * test_chaos_fit.c - the chaos checker's ledger fit (chaos/ledger_report.c
 * linked in): each gap cause seen on an owner's counters must be one a
 * fault of the run can produce, and a report that fails says why.
 *
 * The case (chaos seed 8, --standby): after a primary-loss the promoted
 * daemon ran without a standby in sync; in required mode its synced
 * writes failed with ENOSTANDBY and burned 10332 ids of d0 and d1, which
 * the fit took for a cause no fault explained (it knew only
 * log-write-fail, disk-full and io-error, which --standby moves to the
 * embedded worker), so the run was INVALID while its report said
 * "findings none".  Talks to nothing: no memcached, no log.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <logcounter.h>
#include <stdio.h>
#include <string.h>

#include "chaos.h"

/* What ledger_report.c needs of the rest of the harness. */
const char *ch_fault_name(int kind) {
  return kind == F_PRIMARY_LOSS ? "primary-loss" : "a fault";
}
const char *ch_target_name(int target) {
  return target == T_EMB ? "embedded" : target == T_LCD ? "logcounterd" : "";
}
const char *ch_counter_name(int i) { return i < CH_EMB_COUNTERS ? "e" : "d"; }
bool ch_kind_stops_primary(int kind) { /* as nemesis.c's */
  return kind == F_PRIMARY_LOSS || kind == F_PARTITION || kind == F_CL_KILL ||
         kind == F_CL_FREEZE || kind == F_CL_DISK || kind == F_CL_CUT ||
         kind == F_CL_ETCD;
}
const char *ch_owner_mode(int incarnation, bool baseline) {
  (void)incarnation, (void)baseline;
  return "default";
}

static ch_ctl ctl;
static ch_fault faults[4];
static ch_run run;
static ch_ledger led;

/* A run with one fault of kind on target, and burned ids on the daemon's
 * counters (entries between its records), as seed 8's surviving log. */
static void setup_run(bool standby, int kind, int target) {
  memset(&run, 0, sizeof run);
  memset(&led, 0, sizeof led);
  memset(faults, 0, sizeof faults);
  run.standby = standby;
  run.emb_ctl = run.dcl_ctl = run.lcd_ctl = &ctl;
  faults[0] = (ch_fault){.kind = kind, .target = target};
  run.faults = faults;
  run.nfaults = 1;
  led.read = true;
  led.entries[LC_GAP_BURNED] = 2;
  led.ids[LC_GAP_BURNED] = 10332;
  led.owner_ids[T_LCD][LC_GAP_BURNED] = 10332;
}

/* seed 8: --standby, a primary-loss, burned ids on logcounterd: they fit */
static void test_standby_burn_fits(void **state) {
  (void)state;
  char why[512];
  setup_run(true, F_PRIMARY_LOSS, T_LCD);
  assert_true(ch_ledger_report(&run, &led, why, sizeof why));
  assert_string_equal(why, "");
  setup_run(true, F_PARTITION, T_LCD);
  assert_true(ch_ledger_report(&run, &led, why, sizeof why));
  setup_run(true, F_OWNER_RESTART, T_LCD);
  assert_true(ch_ledger_report(&run, &led, why, sizeof why));
  /* no such fault, but the daemon refused calls with ENOSTANDBY (the
   * run's start, a standby late with a floor): the evidence */
  setup_run(true, F_MC_FLUSH, T_NONE);
  atomic_store(&ctl.calls_enostandby, 3);
  assert_true(ch_ledger_report(&run, &led, why, sizeof why));
  assert_string_equal(why, "");
  atomic_store(&ctl.calls_enostandby, 0);
}

/* The same burn with no fault that can fail a daemon's log write: it does
 * not fit, and the reason names it. */
static void test_unfit_burn_says_why(void **state) {
  (void)state;
  char why[512];
  setup_run(false, F_PRIMARY_LOSS, T_LCD); /* no standby: no ENOSTANDBY */
  atomic_store(&ctl.calls_enostandby, 3); /* (as if: not --standby) */
  assert_false(ch_ledger_report(&run, &led, why, sizeof why));
  assert_non_null(strstr(why, "10332 burned ids on logcounterd's counters"));
  atomic_store(&ctl.calls_enostandby, 0);
  setup_run(true, F_MC_FLUSH, T_NONE); /* a standby always in sync */
  assert_false(ch_ledger_report(&run, &led, why, sizeof why));
  assert_non_null(strstr(why, "without a standby in sync"));
  setup_run(true, F_OWNER_KILL, T_EMB); /* the other owner's kill */
  assert_false(ch_ledger_report(&run, &led, why, sizeof why));
}

/* Every failed condition is in the reason, "; "-separated. */
static void test_every_reason(void **state) {
  (void)state;
  char why[512];
  setup_run(false, F_MC_FLUSH, T_NONE);
  led.unexplained = 7, led.holes = 1, led.conflicts = 2;
  assert_false(ch_ledger_report(&run, &led, why, sizeof why));
  assert_non_null(strstr(why, "burned ids"));
  assert_non_null(strstr(why, "; 7 ids unexplained in 1 holes"));
  assert_non_null(strstr(why, "; 2 conflicts with the records"));
  led.read = false;
  assert_false(ch_ledger_report(&run, &led, why, sizeof why));
  assert_non_null(strstr(why, "no gap ledger was read"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_standby_burn_fits),
      cmocka_unit_test(test_unfit_burn_says_why),
      cmocka_unit_test(test_every_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
