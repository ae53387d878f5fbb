/*
 * test_diskfault.c - the embedded library under real disk faults, beneath
 * LevelDB (issue 21): a full disk (a 16 MB tmpfs filled up when running as
 * root, else the fault shim's ENOSPC), EIO, a short write then EIO, a
 * failed fsync, from the LD_PRELOAD shim (build/tests/libfaultfs.so,
 * tests/shim/faultfs.c), which this program preloads into itself by
 * re-executing with LD_PRELOAD set.
 *
 * Each case runs a child process with its own handle: 600 ids, the fault
 * on and ids until 20 calls got LC_ELOG, the fault off, ids again as soon
 * as the handle's own thread has reopened the log (nobody calls
 * lc_log_recover), 600 more; with a tally, a change per id and a flush
 * that succeeds at the end.  The child then closes its handle, or is
 * killed (SIGKILL).  The parent flushes memcached, opens the log and
 * checks: the counter goes on above every id acknowledged, the tally holds
 * every change acknowledged, every gap in the log has a ledger entry and
 * no entry overlaps a record.  The last case flips a fault on and off
 * while four threads allocate.  The test_cause_* cases check each gap's
 * cause after a disk fault (burned, never unlogged or restart), also
 * when the run is closed with the disk still full or killed before its
 * log recovered (the burned note in memcached, counter/claim.c).
 * LC_TEST_ONLY=PATTERN runs only the tests it matches (cmocka's filter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "logcounter.h"
#include "mcd.h"

static char *root;           /* the temporary directory (LC_DISKFAULT_TMP) */
static char fsdir[PATH_MAX]; /* root/fs: the faulted files (a tmpfs?) */
static int real_tmpfs;       /* fsdir is a 16 MB tmpfs */

/* ---- the fault ------------------------------------------------------------ */

static void ctl(const char *mode) {
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/ctl", root);
  FILE *f = fopen(path, "w");
  if (f == NULL || fprintf(f, "%s\n", mode) < 0 || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    _exit(3);
  }
}

/* Fills the tmpfs (ENOSPC on the next write of the log). */
static void fill(void) {
  char path[PATH_MAX + 8], buf[65536];
  snprintf(path, sizeof path, "%s/filler", fsdir);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  memset(buf, 0, sizeof buf);
  while (fd >= 0 && write(fd, buf, sizeof buf) > 0) {
  }
  if (fd >= 0) close(fd);
}

static void unfill(void) {
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/filler", fsdir);
  unlink(path);
}

/* mode: a shim mode, or "disk-full". */
static void fault_on(const char *mode) {
  if (strcmp(mode, "disk-full") != 0)
    ctl(mode);
  else if (real_tmpfs)
    fill();
  else
    ctl("enospc");
}

static void fault_off(void) {
  ctl("off");
  if (real_tmpfs) unfill();
}

/* Faults the shim injected into the last child (each process counts its
 * own from its first, so the file is removed before each case). */
static long hits(bool reset) {
  char path[PATH_MAX + 8];
  snprintf(path, sizeof path, "%s/hits", root);
  if (reset) return unlink(path), 0;
  FILE *f = fopen(path, "r");
  long n = 0;
  if (f) {
    if (fscanf(f, "%ld", &n) != 1) n = 0;
    fclose(f);
  }
  return n;
}

/* ---- one case ------------------------------------------------------------- */

typedef struct kase {
  const char *name, *fault;
  lc_durability_t durability;
  uint64_t prefetch;
  bool tally, kill;
} kase;

/* What the child acknowledged (written to root/NAME.acked). */
typedef struct acked {
  int64_t max, n, tally, during, errors;
} acked;

#define DIE(...)                  \
  do {                            \
    fprintf(stderr, "child: ");   \
    fprintf(stderr, __VA_ARGS__); \
    fprintf(stderr, "\n");        \
    _exit(2);                     \
  } while (0)

static void options(lc_options *o, const kase *k, char *path, size_t size) {
  lc_options_init(o);
  snprintf(path, size, "%s/%s", fsdir, k->name);
  o->db_path = path;
  o->memcached = mcd_config(&mc);
  o->durability = k->durability;
  o->prefetch = k->prefetch;
  o->timeout_ms = 1000;
}

/* One id (and a tally change): 1 acknowledged, 0 LC_ELOG; dies on
 * anything else or an id not above the last. */
static int step(lc_t *h, const kase *k, acked *a) {
  int64_t v = 0;
  int rc = lc_next(h, "c1", &v);
  if (rc == LC_ELOG) {
    a->errors++;
    return 0;
  }
  if (rc) DIE("lc_next: %s (%s)", lc_err_name(rc), lc_last_detail());
  if (v <= a->max) DIE("id %lld after %lld", (long long)v, (long long)a->max);
  a->max = v;
  a->n++;
  if (k->tally) {
    rc = lc_tally_add(h, "t1", 1);
    if (rc == 0)
      a->tally++;
    else if (rc != LC_ELOG)
      DIE("lc_tally_add: %s (%s)", lc_err_name(rc), lc_last_detail());
  }
  if (k->tally && a->n % 50 == 0) lc_tally_flush(h, 0, LC_TALLY_FORCE, NULL);
  return 1;
}

static void child(const kase *k) {
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, k, path, sizeof path);
  lc_t *h;
  int rc = lc_open(&o, &h);
  if (rc) DIE("lc_open: %s (%s)", lc_err_name(rc), lc_last_detail());
  acked a = {0};
  while (a.n < 600) step(h, k, &a);
  int64_t before = a.n;
  fault_on(k->fault);
  for (int64_t t0 = mono_us(); a.errors < 20;) {
    step(h, k, &a);
    if (mono_us() - t0 > 30000000) DIE("no LC_ELOG in 30 s");
  }
  a.during = a.n - before;
  fault_off();
  for (int64_t t0 = mono_us(); !step(h, k, &a);) { /* its thread reopens */
    if (mono_us() - t0 > 30000000) DIE("no id 30 s after the fault ended");
    sleep_ms(1);
  }
  while (a.n < before + a.during + 600) step(h, k, &a);
  lc_log_status st;
  if (lc_get_log_status(h, &st) || st.failures < 1 || st.recoveries < 1 ||
      st.state != LC_LOG_OK)
    DIE("log status: %d failures, %d recoveries, %s", (int)st.failures,
        (int)st.recoveries, lc_log_state_name(st.state));
  while (k->tally && lc_tally_flush(h, 0, LC_TALLY_FORCE, NULL) != 0)
    sleep_ms(10);
  char out[PATH_MAX + 16];
  snprintf(out, sizeof out, "%s/%s.acked", root, k->name);
  FILE *f = fopen(out, "w");
  if (!f || fwrite(&a, sizeof a, 1, f) != 1 || fclose(f) != 0)
    DIE("cannot write %s", out);
  if (k->kill) raise(SIGKILL);
  rc = lc_close(h);
  if (rc) DIE("lc_close: %s (%s)", lc_err_name(rc), lc_last_detail());
  _exit(0);
}

static void run(const kase *k) {
  assert_ok(mcd_flush_all(&mc)); /* the last case's claim on c1 goes */
  hits(true);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child(k);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (k->kill)
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  else
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!(real_tmpfs && strcmp(k->fault, "disk-full") == 0))
    assert_true(hits(false) > 0); /* the shim did inject */
  acked a;
  char in[PATH_MAX + 16];
  snprintf(in, sizeof in, "%s/%s.acked", root, k->name);
  FILE *f = fopen(in, "r");
  assert_non_null(f);
  assert_int_equal(fread(&a, sizeof a, 1, f), 1);
  fclose(f);

  assert_ok(mcd_flush_all(&mc));
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, k, path, sizeof path);
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  int64_t v = tu_next1(h, "c1");
  printf("# %s: %lld ids (max %lld), %lld during the fault, %lld LC_ELOG; "
         "after %s and memcached lost: %lld\n",
         k->name, (long long)a.n, (long long)a.max, (long long)a.during,
         (long long)a.errors, k->kill ? "SIGKILL" : "lc_close", (long long)v);
  if (v <= a.max)
    fail_msg("REISSUED: %lld handed out again (%lld were acknowledged)",
             (long long)v, (long long)a.max);
  if (k->tally) {
    int64_t total = 0, pending = 0;
    assert_ok(lc_tally_get(h, "t1", &total, &pending, NULL));
    assert_i64_eq(total, a.tally); /* flushed: every change */
  }
  tu_ledger l;
  assert_ok(tu_explain(h, "c1", &l));
  assert_i64_eq(l.values[0], 0); /* every gap explained */
  assert_i64_eq(l.conflicts, 0); /* no entry over a record */
  assert_ok(lc_close(h));
}

#define CASE(fn, ...)            \
  static void fn(void **state) { \
    (void)state;                 \
    run(&(kase){__VA_ARGS__});   \
  }
CASE(test_full_close, "full-close", "disk-full", LC_DURABILITY_DEFAULT, 0,
     false, false)
CASE(test_full_kill, "full-kill", "disk-full", LC_DURABILITY_DEFAULT, 0, false,
     true)
CASE(test_full_sync, "full-sync", "disk-full", LC_DURABILITY_SYNC, 0, false,
     true)
CASE(test_full_prefetch, "full-prefetch", "disk-full", LC_DURABILITY_DEFAULT,
     64, false, true)
CASE(test_full_tally, "full-tally", "disk-full", LC_DURABILITY_DEFAULT, 0, true,
     true)
CASE(test_eio_kill, "eio", "eio", LC_DURABILITY_DEFAULT, 0, false, true)
CASE(test_short_kill, "short", "short", LC_DURABILITY_DEFAULT, 0, false, true)
CASE(test_fsync_sync, "fsync-sync", "fsync", LC_DURABILITY_SYNC, 0, false, true)
CASE(test_fsync_tally, "fsync-tally", "fsync", LC_DURABILITY_DEFAULT, 0, true,
     true)
CASE(test_eio_prefetch, "eio-prefetch", "eio", LC_DURABILITY_DEFAULT, 64, false,
     false)

/* ---- each gap's cause (issue 39 item 3) ----------------------------------- */

/* A gap made by a failed log write is burned; unlogged only where
 * memcached was ahead and nothing was written.  The child allocates
 * "gc" through one handle (nobody else touches its key), fills the disk
 * and allocates until 20 calls got LC_ELOG, notes what memcached then
 * holds, frees the disk and allocates again; then it ends as end says.
 * The parent reopens the log (memcached as the child left it), takes one
 * id and reads the ledger: every value up to the one memcached held after
 * the fault (the failed calls took theirs below it) that no record holds
 * is in a burned entry (or, with prefetch, a segment's unused rest), none
 * is unlogged or restart, and no value is unexplained. */
enum { END_CLOSE, END_KILL, END_FULL_CLOSE, END_FULL_KILL };
typedef struct gcase {
  const char *name;
  lc_durability_t durability;
  uint64_t prefetch;
  int end;
  const char *fault; /* NULL: disk-full */
  bool each;         /* the reopened log's first id: lc_next_each's batch */
} gcase;

typedef struct gnote {
  int64_t before, after, errors;
} gnote;

/* The child's allocating threads: blocks of 1 to 100 ids on "gc", as the
 * chaos workers draw them; phase 0 runs, 1 stops. */
typedef struct gworker {
  lc_t *h;
  atomic_int *stop;
  atomic_long *errors;
  uint64_t rng;
  int64_t max;
  int bad;
} gworker;

static void *gwork(void *p) {
  gworker *w = p;
  while (!atomic_load(w->stop)) {
    w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = w->rng >> 33, n = r % 100 < 60 ? 1 : r % 100 < 90 ? 2 + r % 15
                                                                    : 17 + r % 84;
    int64_t first = 0;
    int rc = lc_next_n(w->h, "gc", n, &first);
    if (rc == LC_ELOG) {
      atomic_fetch_add(w->errors, 1);
      usleep(200);
    } else if (rc) {
      w->bad = rc;
      return NULL;
    } else if (first <= w->max) {
      w->bad = -1;
      return NULL;
    } else {
      w->max = first + (int64_t)n - 1;
    }
  }
  return NULL;
}

static void gchild(const gcase *g) {
  kase k = {.name = g->name, .durability = g->durability,
            .prefetch = g->prefetch};
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, &k, path, sizeof path);
  lc_t *h;
  int rc = lc_open(&o, &h);
  if (rc) DIE("lc_open: %s (%s)", lc_err_name(rc), lc_last_detail());
  enum { T = 4 };
  gworker w[T];
  pthread_t t[T];
  atomic_int stop = 0;
  atomic_long errors = 0;
  for (int i = 0; i < T; i++) {
    w[i] = (gworker){.h = h, .stop = &stop, .errors = &errors,
                     .rng = (uint64_t)i + 1};
    if (pthread_create(&t[i], NULL, gwork, &w[i])) DIE("pthread_create");
  }
  gnote n = {0};
  sleep_ms(200); /* (the shim may still see the last case's fault a few ms) */
  atomic_store(&errors, 0);
  n.before = mcd_counter_value(&mc, "gc");
  fault_on(g->fault ? g->fault : "disk-full");
  for (int64_t t0 = mono_us(); atomic_load(&errors) < 20; sleep_ms(1))
    if (mono_us() - t0 > 30000000) DIE("no LC_ELOG in 30 s");
  n.after = mcd_counter_value(&mc, "gc");
  bool full = g->end == END_FULL_CLOSE || g->end == END_FULL_KILL;
  if (!full) {
    fault_off();
    lc_log_status ls = {.state = LC_LOG_FAILED};
    for (int j = 0; j < 3000 && ls.state != LC_LOG_OK; j++) {
      if (lc_get_log_status(h, &ls)) DIE("lc_get_log_status");
      if (ls.state != LC_LOG_OK) sleep_ms(10);
    }
    if (ls.state != LC_LOG_OK) DIE("the log is not back 30 s after the fault");
    sleep_ms(200); /* ids again */
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    if (w[i].bad) DIE("thread %d: %s", i, lc_err_name(w[i].bad));
  }
  n.errors = atomic_load(&errors);
  char out[PATH_MAX + 16];
  snprintf(out, sizeof out, "%s/%s.note", root, g->name);
  FILE *f = fopen(out, "w");
  if (!f || fwrite(&n, sizeof n, 1, f) != 1 || fclose(f) != 0)
    DIE("cannot write %s", out);
  if (g->end == END_FULL_KILL) fault_off(); /* the kill: before recovery */
  if (g->end == END_KILL || g->end == END_FULL_KILL) raise(SIGKILL);
  rc = lc_close(h); /* with the disk full: fails */
  if (full) {
    fault_off();
    _exit(0);
  }
  if (rc) DIE("lc_close: %s (%s)", lc_err_name(rc), lc_last_detail());
  _exit(0);
}

static void gap_causes(const gcase *g) {
#ifdef __SANITIZE_THREAD__
  /* the child starts threads after a fork of this multi-threaded
   * program, which ThreadSanitizer does not support: run plain and under
   * AddressSanitizer only */
  skip();
#endif
  assert_ok(mcd_flush_all(&mc));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) gchild(g);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (g->end == END_KILL || g->end == END_FULL_KILL)
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  else
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  gnote n;
  char in[PATH_MAX + 16];
  snprintf(in, sizeof in, "%s/%s.note", root, g->name);
  FILE *f = fopen(in, "r");
  assert_non_null(f);
  assert_int_equal(fread(&n, sizeof n, 1, f), 1);
  fclose(f);
  assert_true(n.before > 0 && n.after >= n.before);

  kase k = {.name = g->name, .durability = g->durability,
            .prefetch = g->prefetch};
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, &k, path, sizeof path);
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  if (g->each) { /* the batched first use (first.c) reads the note */
    lc_each v[2] = {{.name = "gc", .n = 1}, {.name = "gc-other", .n = 1}};
    assert_ok(lc_next_each(h, v, 2));
  } else {
    tu_next1(h, "gc");
  }
  lc_iter *it;
  assert_ok(lc_ledger_open(h, "gc", &it));
  lc_gap e;
  uint64_t by[LC_GAP_CAUSE_MAX + 1] = {0}, wrong = 0;
  int rc;
  while ((rc = lc_ledger_next(it, &e)) == 1) {
    int64_t lo = e.first; /* nothing before the fault is unlogged either */
    int64_t hi = e.last < n.after ? e.last : n.after;
    if (lo > hi || e.cause < 1 || e.cause > LC_GAP_CAUSE_MAX) continue;
    by[e.cause] += (uint64_t)(hi - lo + 1);
    if (e.cause != LC_GAP_BURNED && e.cause != LC_GAP_SEGMENT) {
      wrong += (uint64_t)(hi - lo + 1);
      printf("#   %s %lld..%lld, up to the fault's end\n",
             lc_gap_cause_name(e.cause), (long long)e.first, (long long)e.last);
    }
  }
  lc_iter_close(it);
  assert_int_equal(rc, 0);
  printf("# %s: memcached %lld before the fault, %lld after %lld LC_ELOG; "
         "up to it: %llu burned, %llu segment-unused, %llu unlogged, %llu "
         "restart\n",
         g->name, (long long)n.before, (long long)n.after,
         (long long)n.errors, (unsigned long long)by[LC_GAP_BURNED],
         (unsigned long long)by[LC_GAP_SEGMENT],
         (unsigned long long)by[LC_GAP_UNLOGGED],
         (unsigned long long)by[LC_GAP_RESTART]);
  if (wrong)
    fail_msg("%llu values the failed writes took are not burned",
             (unsigned long long)wrong);
  tu_ledger l;
  assert_ok(tu_explain(h, "gc", &l));
  if (l.values[0] || l.conflicts) { /* what lies around the fault */
    lc_record *r;
    long nr = tu_records(h, "gc", &r);
    for (long i = 0; i < nr; i++)
      if (r[i].last >= n.before - 100 && r[i].first <= n.after + 300)
        printf("#   record %lld..%lld\n", (long long)r[i].first,
               (long long)r[i].last);
    if (nr >= 0) free(r);
    assert_ok(lc_ledger_open(h, "gc", &it));
    while (lc_ledger_next(it, &e) == 1)
      printf("#   %s %lld..%lld\n", lc_gap_cause_name(e.cause),
             (long long)e.first, (long long)e.last);
    lc_iter_close(it);
  }
  assert_i64_eq(l.values[0], 0);
  assert_i64_eq(l.conflicts, 0);
  assert_ok(lc_close(h));
  tmpdir_remove(path); /* the tmpfs is small */
}

#define GCASE(fn, ...)                 \
  static void fn(void **state) {       \
    (void)state;                       \
    gap_causes(&(gcase){__VA_ARGS__}); \
  }
GCASE(test_cause_close, "cause-close", LC_DURABILITY_DEFAULT, 0, END_CLOSE,
      NULL, false)
GCASE(test_cause_sync, "cause-sync", LC_DURABILITY_SYNC, 0, END_CLOSE, NULL,
      false)
GCASE(test_cause_prefetch, "cause-prefetch", LC_DURABILITY_DEFAULT, 64,
      END_CLOSE, NULL, false)
GCASE(test_cause_kill, "cause-kill", LC_DURABILITY_DEFAULT, 0, END_KILL, NULL,
      false)
GCASE(test_cause_full_close, "cause-full-close", LC_DURABILITY_DEFAULT, 0,
      END_FULL_CLOSE, NULL, false)
GCASE(test_cause_full_close_sync, "cause-full-close-sync", LC_DURABILITY_SYNC,
      0, END_FULL_CLOSE, NULL, false)
GCASE(test_cause_full_kill, "cause-full-kill", LC_DURABILITY_SYNC, 0,
      END_FULL_KILL, NULL, false)
GCASE(test_cause_full_close_each, "cause-full-close-each",
      LC_DURABILITY_DEFAULT, 0, END_FULL_CLOSE, NULL, true)
GCASE(test_cause_full_close_prefetch, "cause-full-close-prefetch",
      LC_DURABILITY_DEFAULT, 64, END_FULL_CLOSE, NULL, false)
GCASE(test_cause_enospc, "cause-enospc", LC_DURABILITY_DEFAULT, 0, END_CLOSE,
      "enospc", false)
GCASE(test_cause_enospc_prefetch, "cause-enospc-prefetch",
      LC_DURABILITY_DEFAULT, 64, END_CLOSE, "enospc", false)
GCASE(test_cause_eio_sync, "cause-eio-sync", LC_DURABILITY_SYNC, 0, END_CLOSE,
      "eio", false)

/* ---- faults switched while threads allocate ------------------------------ */

typedef struct worker {
  lc_t *h;
  atomic_bool *stop;
  int64_t *ids;
  long n, max, elog;
  int bad;
} worker;

static void *work(void *p) {
  worker *w = p;
  while (!atomic_load(w->stop) && w->n < w->max) {
    int64_t v = 0;
    int rc = lc_next(w->h, "flip", &v);
    if (rc == 0)
      w->ids[w->n++] = v;
    else if (rc == LC_ELOG) {
      w->elog++;
      usleep(100); /* as a client would */
    } else {
      w->bad = rc;
      break;
    }
  }
  return NULL;
}

static void test_flips_under_threads(void **state) {
  (void)state;
  kase k = {.name = "flip", .durability = LC_DURABILITY_DEFAULT};
  assert_ok(mcd_flush_all(&mc));
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, &k, path, sizeof path);
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  enum { T = 4 };
  worker w[T];
  pthread_t t[T];
  atomic_bool stop = false;
  long per = scaled(200000, 20000);
  for (int i = 0; i < T; i++) {
    w[i] = (worker){.h = h, .stop = &stop, .max = per};
    w[i].ids = malloc((size_t)per * sizeof(int64_t));
    assert_non_null(w[i].ids);
    assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
  }
  const char *modes[] = {"eio", "short", "fsync", "eio-once", "enospc"};
  for (int i = 0; i < 5; i++) {
    sleep_ms(100);
    ctl(modes[i]);
    sleep_ms(100);
    ctl("off");
    /* the handle's own thread brings the log back (its backoff, and a
     * reopen, can outlast 100 ms under a sanitizer): wait for it, at most
     * 20 s, so that the next flip meets an open log */
    lc_log_status ls = {.state = LC_LOG_FAILED};
    for (int j = 0; j < 2000 && ls.state != LC_LOG_OK; j++) {
      assert_ok(lc_get_log_status(h, &ls));
      if (ls.state != LC_LOG_OK) sleep_ms(10);
    }
    assert_int_equal(ls.state, LC_LOG_OK);
  }
  sleep_ms(300); /* ids again after the last */
  atomic_store(&stop, true);
  long total = 0, elog = 0;
  int64_t top = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    if (w[i].bad) fail_msg("thread %d: %s", i, lc_err_name(w[i].bad));
    assert_int_equal(first_non_increasing(w[i].ids, (size_t)w[i].n),
                     (size_t)-1);
    total += w[i].n;
    elog += w[i].elog;
    if (w[i].n && w[i].ids[w[i].n - 1] > top) top = w[i].ids[w[i].n - 1];
  }
  int64_t *all = malloc((size_t)total * sizeof *all);
  assert_non_null(all);
  for (long i = 0, j = 0; i < T; j += w[i].n, i++) {
    memcpy(all + j, w[i].ids, (size_t)w[i].n * sizeof *all);
    free(w[i].ids);
  }
  assert_int_equal(count_duplicates(all, (size_t)total), 0);
  free(all);
  lc_log_status st;
  assert_ok(lc_get_log_status(h, &st));
  printf("# %ld ids from %d threads, %ld LC_ELOG, %llu failures, %llu "
         "recoveries\n",
         total, T, elog, (unsigned long long)st.failures,
         (unsigned long long)st.recoveries);
  assert_true(st.failures >= 3);
  assert_ok(lc_close(h));
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_open(&o, &h));
  int64_t v = tu_next1(h, "flip");
  if (v <= top)
    fail_msg("REISSUED: %lld after %lld", (long long)v, (long long)top);
  tu_ledger l;
  assert_ok(tu_explain(h, "flip", &l));
  assert_i64_eq(l.values[0], 0);
  assert_i64_eq(l.conflicts, 0);
  assert_ok(lc_close(h));
}

/* ---- a reopen while syncs still fail (chaos seed 9) ---------------------- */

/* The log fails at a failed fsync, and the handle's thread tries to
 * reopen it while syncs still fail.  Since the directory's last sync a
 * file appeared in it (LevelDB's new write-ahead log at a memtable
 * switch, a compaction's table; a stray file stands in for them here),
 * so the reopen syncs the directory first, and that fails too.  The
 * attempt must leave the log FAILED, tried again with backoff, so that it
 * comes back once the disk does (it was left RECOVERING, which no thread
 * retries: the handle refused everything for good).  Then ids go on above
 * every one acknowledged, and every gap of the failed writes (which may
 * have landed: a failed sync leaves its batch in the write-ahead log) is
 * explained, none overlapping a record. */
static void test_fsync_reopen_dir(void **state) {
  (void)state;
  kase k = {.name = "fsync-reopen", .durability = LC_DURABILITY_SYNC};
  assert_ok(mcd_flush_all(&mc));
  hits(true);
  lc_options o;
  char path[PATH_MAX + 64];
  options(&o, &k, path, sizeof path);
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  int64_t top = 0, v = 0;
  for (int i = 0; i < 100; i++) top = tu_next1(h, "c1");
  ctl("fsync");
  sleep_ms(20); /* the shim's next read of its control file */
  char stray[PATH_MAX + 80];
  snprintf(stray, sizeof stray, "%s/stray", path);
  int fd = open(stray, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  close(fd);
  int rc;
  for (int64_t t0 = mono_us(); (rc = lc_next(h, "c1", &v)) != LC_ELOG;) {
    if (rc) fail_msg("lc_next: %s (%s)", lc_err_name(rc), lc_last_detail());
    if (v <= top) fail_msg("id %lld after %lld", (long long)v, (long long)top);
    top = v;
    if (mono_us() - t0 > 30000000) fail_msg("no LC_ELOG in 30 s");
  }
  lc_log_status ls;
  assert_ok(lc_get_log_status(h, &ls));
  for (int j = 0; j < 3000 && ls.attempts < 1; j++) { /* its thread tries */
    sleep_ms(10);
    assert_ok(lc_get_log_status(h, &ls));
  }
  if (ls.attempts < 1) fail_msg("no reopen attempt in 30 s");
  printf("# failed: %s; after %llu reopen attempts while syncs fail: %s "
         "(%s)\n", ls.error, (unsigned long long)ls.attempts,
         lc_log_state_name(ls.state), ls.attempt_error);
  ctl("off");
  for (int j = 0; j < 3000 && ls.state != LC_LOG_OK; j++) {
    sleep_ms(10);
    assert_ok(lc_get_log_status(h, &ls));
  }
  if (ls.state != LC_LOG_OK)
    fail_msg("the log is still %s 30 s after the disk came back (%llu "
             "attempts, %llu recoveries)",
             lc_log_state_name(ls.state), (unsigned long long)ls.attempts,
             (unsigned long long)ls.recoveries);
  for (int i = 0; i < 100; i++) {
    v = tu_next1(h, "c1");
    if (v <= top) fail_msg("id %lld after %lld", (long long)v, (long long)top);
    top = v;
  }
  assert_ok(lc_close(h));
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_open(&o, &h));
  v = tu_next1(h, "c1");
  if (v <= top)
    fail_msg("REISSUED: %lld after %lld", (long long)v, (long long)top);
  tu_ledger l;
  assert_ok(tu_explain(h, "c1", &l));
  assert_i64_eq(l.values[0], 0); /* every gap explained */
  assert_i64_eq(l.conflicts, 0); /* no entry over a record */
  assert_ok(lc_close(h));
  tmpdir_remove(path); /* the tmpfs is small */
}

/* After a case that switches the fault itself, in process: off, even when
 * it failed half-way, so that the next case starts on a working disk. */
static int fault_off_after(void **state) {
  (void)state;
  ctl("off");
  sleep_ms(20);
  return 0;
}

/* ---- set-up: the shim preloaded, a tmpfs when root ----------------------- */

/* Not yet preloaded: makes the directories (a tmpfs when root) and runs
 * this program again with the shim; returns only if that cannot be. */
static void reexec(char **argv) {
  char self[PATH_MAX], shim[PATH_MAX + 16];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  snprintf(shim, sizeof shim, "%.*s/libfaultfs.so",
           (int)(strrchr(self, '/') - self), self);
  if (access(shim, R_OK) != 0) {
    fprintf(stderr, "test_diskfault: %s not built (make test builds it)\n",
            shim);
    exit(1);
  }
  char *dir = tmpdir_make();
  if (dir == NULL) exit(1);
  char fs[PATH_MAX], buf[PATH_MAX + 64];
  snprintf(fs, sizeof fs, "%s/fs", dir);
  mkdir(fs, 0700);
  snprintf(buf, sizeof buf, "mount -t tmpfs -o size=16m tmpfs %s 2>/dev/null",
           fs);
  int tmpfs = geteuid() == 0 && system(buf) == 0;
  setenv("LC_DISKFAULT_TMP", dir, 1);
  setenv("LC_DISKFAULT_TMPFS", tmpfs ? "1" : "0", 1);
  setenv("LC_FAULT_DIR", fs, 1);
  snprintf(buf, sizeof buf, "%s/ctl", dir);
  setenv("LC_FAULT_CTL", buf, 1);
  snprintf(buf, sizeof buf, "%s/hits", dir);
  setenv("LC_FAULT_HITS", buf, 1);
  setenv("LD_PRELOAD", shim, 1);
  const char *asan = getenv("ASAN_OPTIONS");
  snprintf(buf, sizeof buf, "%s%sverify_asan_link_order=0", asan ? asan : "",
           asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", buf, 1);
  pid_t pid = fork();
  if (pid == 0) {
    execv(self, argv);
    _exit(127);
  }
  int status = 1;
  waitpid(pid, &status, 0);
  if (tmpfs) {
    snprintf(buf, sizeof buf, "umount %s", fs);
    if (system(buf) != 0) fprintf(stderr, "cannot umount %s\n", fs);
  }
  tmpdir_remove(dir);
  tmpdir_free(dir);
  exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int main(int argc, char **argv) {
  (void)argc;
  if (getenv("LC_DISKFAULT_TMP") == NULL) reexec(argv);
  root = getenv("LC_DISKFAULT_TMP");
  snprintf(fsdir, sizeof fsdir, "%s/fs", root);
  real_tmpfs = strcmp(getenv("LC_DISKFAULT_TMPFS"), "1") == 0;
  printf("# a full disk is %s\n", real_tmpfs ? "a 16 MB tmpfs filled up"
                                             : "the shim's ENOSPC (not root)");
  ctl("off");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_full_close),
      cmocka_unit_test(test_full_kill),
      cmocka_unit_test(test_full_sync),
      cmocka_unit_test(test_full_prefetch),
      cmocka_unit_test(test_full_tally),
      cmocka_unit_test(test_eio_kill),
      cmocka_unit_test(test_short_kill),
      cmocka_unit_test(test_fsync_sync),
      cmocka_unit_test(test_fsync_tally),
      cmocka_unit_test(test_eio_prefetch),
      cmocka_unit_test(test_flips_under_threads),
      cmocka_unit_test_teardown(test_fsync_reopen_dir, fault_off_after),
      cmocka_unit_test(test_cause_close),
      cmocka_unit_test(test_cause_sync),
      cmocka_unit_test(test_cause_prefetch),
      cmocka_unit_test(test_cause_kill),
      cmocka_unit_test(test_cause_full_close),
      cmocka_unit_test(test_cause_full_close_sync),
      cmocka_unit_test(test_cause_full_close_prefetch),
      cmocka_unit_test(test_cause_full_kill),
      cmocka_unit_test(test_cause_full_close_each),
      cmocka_unit_test(test_cause_enospc),
      cmocka_unit_test(test_cause_enospc_prefetch),
      cmocka_unit_test(test_cause_eio_sync),
  };
  /* LC_TEST_ONLY=PATTERN (cmocka's filter, * and ?): only those tests */
  if (getenv("LC_TEST_ONLY")) cmocka_set_test_filter(getenv("LC_TEST_ONLY"));
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
