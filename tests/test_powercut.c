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
 * a hole no ledger entry explains.  With it, every record survives.  The
 * same after a failed write and the reopen that recovers from it, in one
 * run (seed 405's disk-full then power cut on logcounterd).  And a synced
 * write into the write-ahead log LevelDB just switched to (a full
 * memtable): LevelDB syncs that file's directory entry only with its
 * next MANIFEST, so without the library's own directory sync after a
 * synced write (lc__log_check_dir) the cut removes the file and the
 * synced reservation with it, and the old file's unsynced tail, which
 * LevelDB never syncs, below the new file's records (lc__log_sync_switched).
 * And a batch that stalls between its
 * memcached increment and its log write (chaos seed 19: preempted; here
 * the library's seam holds it) while later batches write theirs and the
 * log is synced: its record, acknowledged, lands after the sync and the
 * cut takes it, below the later records (20 of them here); the next
 * load finds its hole in its walk over the newest records (ledger.c,
 * TAIL_MAX, TAIL_US; the walk of the last 8 left it unexplained).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h" /* ch_cut_apply */
#include "mcd.h"

#include <pthread.h>
#include <stdatomic.h>

/* The library's seam (built with LC_TEST_SEAMS): called by a batch's
 * leader between its memcached increment and its log write. */
extern void (*lc__test_before_commit)(const char *name);

static char cut_dir[64], bak_dir[64], state_path[96], ctl_path[96];
static ch_ctl *ctl; /* the shim fails log writes while it says so */
static const char *sub; /* each test's log: cut_dir/sub */

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The log cut_dir/sub with durability d and reservation window w (16 x 1 value
 * for w 1: a synced reservation every 16 values). */
static int open_log(lc_durability_t d, uint64_t w, lc_t **h) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options_sub(&o, &mc, cut_dir, sub, path);
  o.durability = d;
  o.reserve = w;
  return lc_open(&o, h);
}

/* The parent's side of a child that writes one int64 into p[1] and exits
 * 0: the value (the child's exit checked). */
static int64_t child_value(pid_t pid, int p[2]) {
  close(p[1]);
  int64_t v = 0;
  ssize_t got = read(p[0], &v, sizeof v);
  close(p[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(got, (ssize_t)sizeof v);
  return v;
}

/* A child opens the log cut_dir/sub with durability d and reserve 1000, takes
 * n values of name one at a time and exits without lc_close (as a kill
 * leaves it: its unsynced writes stay in the page cache); the last value. */
static int64_t killed_after(lc_durability_t d, const char *name, int n) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lc_t *h;
    int64_t v = 0;
    if (open_log(d, 1000, &h) != 0) _exit(1);
    for (int i = 0; i < n; i++)
      if (lc_next(h, name, &v) != 0) _exit(1);
    if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    _exit(0);
  }
  return child_value(pid, p);
}

/* The power cut, then the log opened again: run 1's values 1..6 are all
 * logged, nothing is unexplained, and the next value is above last. */
static void cut_and_check(int64_t last) {
  char summary[256];
  assert_int_equal(ch_cut_apply(state_path, bak_dir, summary, sizeof summary),
                   0);
  print_message("power cut: %s\n", summary);
  lc_t *h;
  assert_ok(open_log(LC_DURABILITY_DEFAULT, 0, &h));
  lc_record *r = NULL;
  long n = tu_records(h, "pc", &r);
  assert_true(n > 0);
  int64_t logged = 0; /* values 1..6 (run 1's, acknowledged) still there */
  for (long i = 0; i < n; i++)
    if (r[i].last <= 6) logged += r[i].last - r[i].first + 1;
  free(r);
  tu_ledger l;
  assert_ok(tu_explain(h, "pc", &l));
  print_message("values 1..6 logged: %lld; unexplained %llu\n",
                (long long)logged, (unsigned long long)l.values[0]);
  assert_i64_eq(logged, 6);
  assert_int_equal(l.values[0], 0);
  assert_int_equal(l.conflicts, 0);
  assert_i64_op(tu_next1(h, "pc"), >, last); /* nothing repeats */
  assert_ok(lc_close(h));
}

static void test_cut_after_restart(void **state) {
  (void)state;
  sub = "restart";
  assert_ok(mcd_flush_all(&mc));
  /* run 1: value 1 with its synced reservation, 2..6 unsynced */
  assert_i64_eq(killed_after(LC_DURABILITY_DEFAULT, "pc", 6), 6);
  /* run 2: its open replays 1..6; the restart skips the reservation's
   * rest; twelve synced records above it (more than the load's tail) */
  int64_t last = killed_after(LC_DURABILITY_SYNC, "pc", 12);
  assert_i64_op(last, >, 1000);
  cut_and_check(last);
}

/* One run: 1..6 (a synced reservation, then unsynced records), a write
 * that fails, the reopen (lc_log_recover), 200 values more (a synced
 * reservation every 16), killed; then the power cut. */
static void test_cut_after_reopen(void **state) {
  (void)state;
  sub = "reopen";
  assert_ok(mcd_flush_all(&mc));
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lc_t *h;
    int64_t v = 0;
    if (open_log(LC_DURABILITY_DEFAULT, 1, &h) != 0) _exit(1);
    for (int i = 0; i < 6; i++)
      if (lc_next(h, "pc", &v) != 0 || v != i + 1) _exit(2);
    atomic_store(&ctl->fail_until_ns, mono_ns() + 60000000000LL);
    if (lc_next(h, "pc", &v) != LC_ELOG) _exit(3);
    atomic_store(&ctl->fail_until_ns, 0);
    if (lc_log_recover(h) != 0) _exit(4);
    for (int i = 0; i < 200; i++)
      if (lc_next(h, "pc", &v) != 0) _exit(5);
    if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    _exit(0);
  }
  cut_and_check(child_value(pid, p));
}

/* The highest number of a *.log file in dir (LevelDB's write-ahead logs). */
static long newest_log(const char *dir) {
  DIR *d = opendir(dir);
  long best = -1;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".log") == 0) {
      long v = strtol(e->d_name, NULL, 10);
      if (v > best) best = v;
    }
  }
  if (d) closedir(d);
  return best;
}

/* A child fills the memtable (records of a long name, unsynced) until
 * LevelDB switches to a new write-ahead log, takes 20 values more of the
 * long name (unsynced, in the new file), then the first value of a new
 * counter (its claim and synced reservation land in that new file) and is
 * killed; the power cut; memcached flushed: the new counter goes on above
 * the value, from the synced reservation, and the long name has no hole
 * unexplained (LevelDB never syncs the old file: without the library's
 * sync of it at the synced write, the cut took its unsynced tail below
 * the 20 records that stayed in the new one: 445 values unexplained). */
static void test_cut_after_rotation(void **state) {
  (void)state;
  sub = "rotation";
  assert_ok(mcd_flush_all(&mc));
  char dir[TU_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s", cut_dir, sub);
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lc_t *h;
    int64_t v = 0;
    char big[LC_NAME_MAX + 1];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    if (open_log(LC_DURABILITY_DEFAULT, 1000, &h) != 0) _exit(1);
    long first = newest_log(dir);
    for (int i = 0; i < 200000 && newest_log(dir) == first; i++)
      if (lc_next(h, big, &v) != 0) _exit(2);
    if (newest_log(dir) == first) _exit(3); /* never switched */
    for (int i = 0; i < 20; i++)
      if (lc_next(h, big, &v) != 0) _exit(2);
    if (lc_next(h, "pc", &v) != 0 || v != 1) _exit(4);
    if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    _exit(0);
  }
  int64_t got = child_value(pid, p);
  char summary[256];
  assert_int_equal(ch_cut_apply(state_path, bak_dir, summary, sizeof summary),
                   0);
  print_message("power cut: %s\n", summary);
  assert_ok(mcd_flush_all(&mc)); /* memcached lost it too */
  lc_t *h;
  assert_ok(open_log(LC_DURABILITY_DEFAULT, 0, &h));
  int64_t next = tu_next1(h, "pc");
  print_message("pc: %lld handed out before the cut, %lld after\n",
                (long long)got, (long long)next);
  assert_i64_op(next, >, got); /* the synced reservation survived */
  { /* the long name: every record below the restart survived (the old
     * file's tail too: no hole between them, explained or not) */
    char big[LC_NAME_MAX + 1];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    int64_t after = tu_next1(h, big);
    lc_record *r = NULL;
    long n = tu_records(h, big, &r);
    int64_t lost = 0, prev = 0;
    for (long i = 0; i < n && r[i].first < after; i++) {
      lost += r[i].first - prev - 1;
      prev = r[i].last;
    }
    free(r);
    tu_ledger l;
    assert_ok(tu_explain(h, big, &l));
    print_message("big: %lld values missing between its records; "
                  "unexplained %llu\n",
                  (long long)lost, (unsigned long long)l.values[0]);
    assert_i64_eq(lost, 0);
    assert_int_equal(l.values[0], 0);
  }
  assert_ok(lc_close(h));
}

/* test_cut_below_stalled: the seam holds the first batch of "st" after
 * stall_armed is set, until stall_release. */
static atomic_int stall_armed, stall_held, stall_release, later_done;
static lc_t *stall_h;

static void stall_hook(const char *name) {
  int one = 1;
  if (strcmp(name, "st") != 0 ||
      !atomic_compare_exchange_strong(&stall_armed, &one, 0))
    return;
  atomic_store(&stall_held, 1);
  for (int i = 0; i < 20000 && !atomic_load(&stall_release); i++)
    usleep(1000); /* at most 20 s: never forever */
}

static void *stalled_call(void *arg) {
  int64_t *v = arg;
  if (lc_next(stall_h, "st", v) != 0) *v = -1;
  return NULL;
}

static void *later_calls(void *arg) {
  (void)arg;
  int64_t v;
  for (int i = 0; i < 20; i++) {
    if (lc_next(stall_h, "st", &v) != 0) break;
    atomic_fetch_add(&later_done, 1);
  }
  return NULL;
}

static void test_cut_below_stalled(void **state) {
  (void)state;
  sub = "stalled";
  assert_ok(mcd_flush_all(&mc));
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int64_t v = 0, stalled = 0;
    if (open_log(LC_DURABILITY_DEFAULT, 1000, &stall_h) != 0) _exit(1);
    if (lc_next(stall_h, "st", &v) != 0 || v != 1) _exit(2); /* reserved */
    lc__test_before_commit = stall_hook;
    atomic_store(&stall_armed, 1);
    pthread_t t1, t2;
    if (pthread_create(&t1, NULL, stalled_call, &stalled) != 0) _exit(3);
    while (!atomic_load(&stall_held)) usleep(1000);
    if (pthread_create(&t2, NULL, later_calls, NULL) != 0) _exit(3);
    /* the later batches: all 20 (or, should the library hold them back
     * behind the stalled one, as many as it lets by: none for 300 ms) */
    for (int last = -1, quiet = 0; atomic_load(&later_done) < 20 && quiet < 30;
         quiet = atomic_load(&later_done) == last ? quiet + 1 : 0) {
      last = atomic_load(&later_done);
      usleep(10000);
    }
    /* a synced write (another counter's claim and reservation): every
     * record written so far is durable, the stalled one not yet */
    if (lc_next(stall_h, "other", &v) != 0) _exit(4);
    atomic_store(&stall_release, 1);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    if (stalled <= 1) _exit(5);
    if (write(p[1], &stalled, sizeof stalled) != (ssize_t)sizeof stalled)
      _exit(1);
    _exit(0); /* killed: no close */
  }
  int64_t stalled = child_value(pid, p);
  char summary[256];
  assert_int_equal(ch_cut_apply(state_path, bak_dir, summary, sizeof summary),
                   0);
  print_message("power cut: %s\n", summary);
  lc_t *h;
  assert_ok(open_log(LC_DURABILITY_DEFAULT, 0, &h));
  lc_record *r = NULL;
  long n = tu_records(h, "st", &r);
  long above = 0; /* records above the stalled value that survived */
  bool kept = false;
  for (long i = 0; i < n; i++) {
    if (r[i].first <= stalled && stalled <= r[i].last) kept = true;
    if (r[i].first > stalled) above++;
  }
  free(r);
  /* the next value: the load labels the holes among the last records,
   * written with its record */
  assert_i64_op(tu_next1(h, "st"), >, stalled);
  tu_ledger l;
  assert_ok(tu_explain(h, "st", &l));
  print_message("st: value %lld (acknowledged) %s, %ld records above it; "
                "unexplained %llu, restart %llu\n",
                (long long)stalled, kept ? "kept" : "cut", above,
                (unsigned long long)l.values[0],
                (unsigned long long)l.values[LC_GAP_RESTART]);
  assert_false(kept); /* written after the sync: the cut took it */
  assert_true(above > 0);
  assert_int_equal(l.values[0], 0);
  assert_int_equal(l.conflicts, 0);
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
  /* mkstemp: glibc's own open, not the shim's (whose first call reads
   * the environment, so the file must be there, sized, before) */
  snprintf(ctl_path, sizeof ctl_path, "/tmp/lcpowercut-ctl.XXXXXX");
  int fd = mkstemp(ctl_path);
  if (fd < 0 || ftruncate(fd, sizeof(ch_ctl)) != 0) {
    perror(ctl_path);
    return 1;
  }
  ctl = mmap(NULL, sizeof(ch_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (ctl == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  setenv("CHAOS_CTL", ctl_path, 1);
  setenv("CHAOS_CUT_DIR", cut_dir, 1);
  setenv("CHAOS_CUT_BAK", bak_dir, 1);
  setenv("CHAOS_CUT_STATE", state_path, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cut_after_restart),
      cmocka_unit_test(test_cut_after_reopen),
      cmocka_unit_test(test_cut_after_rotation),
      cmocka_unit_test(test_cut_below_stalled),
  };
  int rc = cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
  tmpdir_remove(cut_dir);
  tmpdir_remove(bak_dir);
  unlink(state_path);
  unlink(ctl_path);
  return rc;
}
