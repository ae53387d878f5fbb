/*
 * test_powercut.c - a power cut after a restart, against a real memcached,
 * with the chaos harness's power-cut model linked in (chaos/powercut.c
 * interposes open, fsync, fdatasync, rename and unlink in this program,
 * LevelDB's calls included; chaos/cut.c cuts the directory back to what a
 * power loss would leave: files to their synced length, directory entry
 * operations no directory sync covered undone).
 *
 * The case (chaos seed 405, issue 39 item 4): a run takes values with
 * default durability (one synced reservation, then unsynced records) and
 * is killed; the next run's open replays that tail into a table and a new
 * MANIFEST, renames CURRENT and unlinks the old log; it writes synced
 * records and is killed; then the power cut.  Without a directory sync
 * after the open, the cut brings the old CURRENT and log back and the
 * first run's acknowledged tail is gone below the second run's records:
 * a hole no ledger entry explains.  With it, every record survives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chaos.h" /* ch_cut_apply */
#include "mcd.h"

static char cut_dir[64], bak_dir[64], state_path[96];

/* A child opens the log DIR/db with durability d and reserve 1000, takes
 * n values of name one at a time and exits without lc_close (as a kill
 * leaves it: its unsynced writes stay in the page cache); the last value. */
static int64_t killed_after(lc_durability_t d, const char *name, int n) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    char path[TU_PATH_MAX];
    lc_options o;
    tu_options(&o, &mc, cut_dir, path);
    o.durability = d;
    o.reserve = 1000;
    lc_t *h;
    int64_t v = 0;
    if (lc_open(&o, &h) != 0) _exit(1);
    for (int i = 0; i < n; i++)
      if (lc_next(h, name, &v) != 0) _exit(1);
    if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    _exit(0);
  }
  close(p[1]);
  int64_t last = 0;
  assert_int_equal(read(p[0], &last, sizeof last), (ssize_t)sizeof last);
  close(p[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  return last;
}

static void test_cut_after_restart(void **state) {
  (void)state;
  assert_ok(mcd_flush_all(&mc));
  /* run 1: value 1 with its synced reservation, 2..6 unsynced */
  assert_i64_eq(killed_after(LC_DURABILITY_DEFAULT, "pc", 6), 6);
  /* run 2: its open replays 1..6; the restart skips the reservation's
   * rest; twelve synced records above it (more than the load's tail) */
  int64_t last = killed_after(LC_DURABILITY_SYNC, "pc", 12);
  assert_i64_op(last, >, 1000);
  char summary[256];
  assert_int_equal(ch_cut_apply(state_path, bak_dir, summary, sizeof summary),
                   0);
  print_message("power cut: %s\n", summary);

  lc_t *h;
  assert_ok(tu_open_prefetch(cut_dir, 0, &h));
  lc_record *r = NULL;
  long n = tu_records(h, "pc", &r);
  assert_true(n > 0);
  int64_t logged = 0; /* values 1..6 (run 1's, acknowledged) still there */
  for (long i = 0; i < n; i++)
    if (r[i].last <= 6) logged += r[i].last - r[i].first + 1;
  free(r);
  tu_ledger l;
  assert_ok(tu_explain(h, "pc", &l));
  print_message("run 1's values logged %lld of 6; unexplained %llu\n",
                (long long)logged, (unsigned long long)l.values[0]);
  assert_i64_eq(logged, 6);
  assert_int_equal(l.values[0], 0);
  assert_int_equal(l.conflicts, 0);
  assert_i64_eq(tu_next1(h, "pc"), last + 1); /* nothing repeats */
  assert_ok(lc_close(h));
}

int main(void) {
  /* before any call the shim sees: it reads these once */
  snprintf(cut_dir, sizeof cut_dir, "/tmp/lcpowercut.XXXXXX");
  snprintf(bak_dir, sizeof bak_dir, "/tmp/lcpowercut-bak.XXXXXX");
  if (!mkdtemp(cut_dir) || !mkdtemp(bak_dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(state_path, sizeof state_path, "%s.state", cut_dir);
  setenv("CHAOS_CUT_DIR", cut_dir, 1);
  setenv("CHAOS_CUT_BAK", bak_dir, 1);
  setenv("CHAOS_CUT_STATE", state_path, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cut_after_restart),
  };
  int rc = cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
  tmpdir_remove(cut_dir);
  tmpdir_remove(bak_dir);
  unlink(state_path);
  return rc;
}
