/*
 * test_process.c - several processes and one log directory (unique; no gap without a failure; clear errors):
 *  - a child process (this program re-executed with --child-alloc) opens
 *    the log and loops lc_next, writing each id to a pipe, one line per
 *    write; it is SIGKILLed after a random 0-50 ms (seeded: the seed is
 *    printed, LC_TEST_SEED replays it); memcached is wiped (most rounds);
 *    the parent then opens the log and allocates: every new id is above
 *    every id the child reported, and at most the reservation window
 *    above.  Repeated 100 times (divided by LC_TEST_SCALE), some rounds in
 *    LC_DURABILITY_SYNC; all ids of all rounds are distinct.
 *  - a second process opening a held log gets LC_ELOCKED with the
 *    holder's name, and the holder keeps working; in the same process too.
 *  - lock_wait_ms: the second open succeeds when the holder closes in
 *    time, and fails with LC_ELOCKED after about lock_wait_ms otherwise.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcd.h"

#define CHILD_RESERVE 100

static const char *self_exe = "/proc/self/exe";

/* ---- child modes (run in a fresh exec of this program) ------------------ */

static int child_open(const char *dir, const char *config, lc_durability_t d,
                      int lock_wait_ms, const char *owner, lc_t **h) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, dir, path);
  o.memcached = config;
  o.durability = d;
  o.lock_wait_ms = lock_wait_ms;
  o.reserve = CHILD_RESERVE;
  o.owner = owner;
  return lc_open(&o, h);
}

static void put_line(const char *s) {
  size_t n = strlen(s), off = 0;
  while (off < n) {
    ssize_t w = write(1, s + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);
    off += (size_t)w;
  }
}

/* --child-alloc DIR CONFIG DURABILITY: lc_next forever, one id a line. */
static int child_alloc(char **argv) {
  lc_durability_t d;
  if (lc_durability_parse(argv[4], &d) != 0) return 2;
  lc_t *h = NULL;
  int rc = child_open(argv[2], argv[3], d, 5000, "child-alloc", &h);
  if (rc != 0) {
    fprintf(stderr, "child: lc_open: %s: %s\n", lc_err_name(rc),
            lc_last_detail());
    return 1;
  }
  for (long i = 0; i < 100000000L; i++) {
    int64_t v;
    rc = lc_next(h, "k", &v);
    if (rc != 0) {
      fprintf(stderr, "child: lc_next: %s: %s\n", lc_err_name(rc),
              lc_last_detail());
      return 1;
    }
    char line[32];
    snprintf(line, sizeof line, "%lld\n", (long long)v);
    put_line(line);
  }
  lc_close(h);
  return 0;
}

/* --child-open DIR CONFIG LOCK_WAIT_MS: one open, reported as
 * "open RC ELAPSED_MS DETAIL", then "value V" after one lc_next. */
static int child_try_open(char **argv) {
  lc_t *h = NULL;
  int64_t t0 = mono_us();
  int rc = child_open(argv[2], argv[3], LC_DURABILITY_DEFAULT, atoi(argv[4]),
                      "child-open", &h);
  char line[600];
  snprintf(line, sizeof line, "open %d %lld %s\n", rc,
           (long long)((mono_us() - t0) / 1000), lc_last_detail());
  put_line(line);
  if (rc == 0) {
    int64_t v = 0;
    rc = lc_next(h, "k", &v);
    snprintf(line, sizeof line, "value %d %lld\n", rc, (long long)v);
    put_line(line);
    lc_close(h);
  }
  return 0;
}

/* ---- parent side ---------------------------------------------------------- */

/* Starts this program with args; its stdout is *fd (read end). */
static pid_t spawn(const char *const args[], int *fd) {
  int p[2];
  if (pipe(p) != 0) return -1;
  fcntl(p[0], F_SETFD, FD_CLOEXEC);
  fcntl(p[1], F_SETFD, FD_CLOEXEC);
  const char *argv[8];
  int n = 0;
  argv[n++] = "test_process";
  for (int i = 0; args[i] && n < 7; i++) argv[n++] = args[i];
  argv[n] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(p[1], 1);
    execv(self_exe, (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  *fd = p[0];
  return pid;
}

typedef struct outbuf {
  char *data;
  size_t len, cap;
} outbuf;

/* Reads what is available (waiting up to wait_ms for something); returns 0
 * at EOF, 1 otherwise. */
static int read_some(int fd, outbuf *b, int wait_ms) {
  struct pollfd pfd = {fd, POLLIN, 0};
  int r = poll(&pfd, 1, wait_ms);
  if (r <= 0) return 1;
  if (b->cap - b->len < 65536) {
    b->cap = b->cap * 2 + 65536;
    b->data = realloc(b->data, b->cap + 1);
    assert_non_null(b->data);
  }
  ssize_t n = read(fd, b->data + b->len, b->cap - b->len);
  if (n < 0 && errno == EINTR) return 1;
  if (n <= 0) return 0;
  b->len += (size_t)n;
  b->data[b->len] = '\0';
  return 1;
}

static void read_to_eof(int fd, outbuf *b) {
  int64_t deadline = mono_us() + 30000000;
  while (read_some(fd, b, 100))
    if (mono_us() > deadline) fail_msg("child output never ended");
}

/* Parses lines of ids; every line must be complete and numeric. */
static size_t parse_ids(const outbuf *b, int64_t **out) {
  size_t cap = 1024, n = 0;
  int64_t *v = malloc(cap * sizeof *v);
  assert_non_null(v);
  const char *p = b->data ? b->data : "";
  while (*p) {
    char *end;
    long long x = strtoll(p, &end, 10);
    if (end == p || *end != '\n') fail_msg("bad line from child: '%.20s'", p);
    if (n == cap) {
      cap *= 2;
      v = realloc(v, cap * sizeof *v);
      assert_non_null(v);
    }
    v[n++] = x;
    p = end + 1;
  }
  *out = v;
  return n;
}

static void test_kill_child_at_random(void **state) {
  (void)state;
  char *dir = tmpdir_make();
  assert_non_null(dir);
  assert_ok(mcd_flush_all(&mc));
  unsigned seed = (unsigned)(getenv("LC_TEST_SEED")
                                 ? strtoul(getenv("LC_TEST_SEED"), NULL, 10)
                                 : (unsigned long)now_us());
  printf("# seed %u (LC_TEST_SEED=%u replays the delays)\n", seed, seed);
  srand(seed);
  int rounds = (int)scaled(100, 10);
  size_t all_cap = 1 << 16, all_n = 0;
  int64_t *all = malloc(all_cap * sizeof *all);
  assert_non_null(all);
  int64_t high = 0; /* the largest id handed out so far */
  long total_child = 0, max_skip = 0;
  for (int round = 0; round < rounds; round++) {
    int delay_us = rand() % 50001;
    int flush = round % 4 != 3;
    lc_durability_t d =
        round % 5 == 4 ? LC_DURABILITY_SYNC : LC_DURABILITY_DEFAULT;
    const char *args[] = {"--child-alloc", dir, mcd_config(&mc),
                          lc_durability_name(d), NULL};
    int fd;
    pid_t pid = spawn(args, &fd);
    assert_true(pid > 0);
    outbuf b = {0};
    /* Start the clock once the child allocates. */
    int64_t deadline = mono_us() + 20000000;
    while (!(b.data && strchr(b.data, '\n'))) {
      if (!read_some(fd, &b, 100) || mono_us() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        fail_msg("round %d: the child allocated nothing", round);
      }
    }
    int64_t until = mono_us() + delay_us;
    while (mono_us() < until) read_some(fd, &b, 1);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    read_to_eof(fd, &b);
    close(fd);

    int64_t *ids;
    size_t n = parse_ids(&b, &ids);
    free(b.data);
    assert_true(n >= 1);
    if (first_non_increasing(ids, n) != (size_t)-1)
      fail_msg("round %d (seed %u): child ids not increasing", round, seed);
    if (ids[0] <= high)
      fail_msg("round %d (seed %u): child handed out %lld, not above %lld",
               round, seed, (long long)ids[0], (long long)high);
    int64_t child_max = ids[n - 1];
    total_child += (long)n;
    if (all_n + n + 8 > all_cap) {
      while (all_n + n + 8 > all_cap) all_cap *= 2;
      all = realloc(all, all_cap * sizeof *all);
      assert_non_null(all);
    }
    memcpy(all + all_n, ids, n * sizeof *ids);
    all_n += n;
    free(ids);

    if (flush) assert_ok(mcd_flush_all(&mc));
    lc_t *h = NULL;
    assert_ok(tu_open(&mc, dir, LC_DURABILITY_DEFAULT, 0, &h));
    int64_t v = 0;
    assert_ok(lc_next(h, "k", &v));
    if (v <= child_max)
      fail_msg("round %d (seed %u, delay %d us, %s, %s): after the kill the "
               "parent got %lld, the child had reported %lld",
               round, seed, delay_us, lc_durability_name(d),
               flush ? "flushed" : "not flushed", (long long)v,
               (long long)child_max);
    /* At most one unreported id and the reservation window skipped. */
    if (v > child_max + 2 * CHILD_RESERVE + 2)
      fail_msg("round %d (seed %u): skipped from %lld to %lld, more than the "
               "window %d",
               round, seed, (long long)child_max, (long long)v, CHILD_RESERVE);
    if (v - child_max > max_skip) max_skip = (long)(v - child_max);
    all[all_n++] = v;
    for (int i = 0; i < 3; i++) {
      int64_t w;
      assert_ok(lc_next(h, "k", &w));
      assert_i64_eq(w, v + 1);
      v = w;
      all[all_n++] = v;
    }
    assert_ok(lc_close(h));
    high = v;
  }
  printf("# %d rounds, %ld ids from killed children, largest skip %ld\n",
         rounds, total_child, max_skip);
  size_t dups = count_duplicates(all, all_n);
  if (dups) fail_msg("%zu duplicate ids over all rounds (seed %u)", dups, seed);
  free(all);
  tmpdir_free(dir);
}

/* ---- the lock ------------------------------------------------------------- */

typedef struct open_report {
  int rc;
  long ms;
  char detail[400];
  int value_rc;
  long long value;
  int has_value;
} open_report;

static open_report run_open_child(const char *dir, int lock_wait_ms,
                                  lc_t **close_after, int close_after_ms) {
  char wait[16];
  snprintf(wait, sizeof wait, "%d", lock_wait_ms);
  const char *args[] = {"--child-open", dir, mcd_config(&mc), wait, NULL};
  int fd;
  pid_t pid = spawn(args, &fd);
  assert_true(pid > 0);
  if (close_after) {
    sleep_ms(close_after_ms);
    assert_ok(lc_close(*close_after));
    *close_after = NULL;
  }
  outbuf b = {0};
  read_to_eof(fd, &b);
  close(fd);
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  open_report r = {0};
  assert_non_null(b.data);
  char *nl = strchr(b.data, '\n');
  assert_non_null(nl);
  *nl = '\0';
  int off = 0;
  assert_int_equal(sscanf(b.data, "open %d %ld %n", &r.rc, &r.ms, &off), 2);
  snprintf(r.detail, sizeof r.detail, "%s", b.data + off);
  if (sscanf(nl + 1, "value %d %lld", &r.value_rc, &r.value) == 2)
    r.has_value = 1;
  free(b.data);
  return r;
}

static int open_owner(const char *dir, const char *owner, int lock_wait_ms,
                      lc_t **h) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, dir, path);
  o.owner = owner;
  o.lock_wait_ms = lock_wait_ms;
  return lc_open(&o, h);
}

static void test_second_process_locked(void **state) {
  (void)state;
  char *dir = tmpdir_make();
  assert_ok(mcd_flush_all(&mc));
  lc_t *h = NULL;
  assert_ok(open_owner(dir, "holder-4711", 0, &h));
  int64_t v;
  for (int i = 1; i <= 5; i++) {
    assert_ok(lc_next(h, "k", &v));
    assert_i64_eq(v, i);
  }
  open_report r = run_open_child(dir, 0, NULL, 0);
  if (r.rc != LC_ELOCKED)
    fail_msg("second process: lc_open = %d %s (%s), expected ELOCKED", r.rc,
             lc_err_name(r.rc), r.detail);
  assert_false(r.has_value);
  if (!strstr(r.detail, "holder-4711"))
    fail_msg("ELOCKED detail does not name the holder: '%s'", r.detail);
  /* The holder keeps working, without a gap. */
  assert_ok(lc_next(h, "k", &v));
  assert_i64_eq(v, 6);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_next(h, "k", &v));
  assert_i64_eq(v, 7);
  /* And the same from within the holding process. */
  lc_t *h2 = NULL;
  int rc = open_owner(dir, "same-process", 0, &h2);
  assert_rc(rc, LC_ELOCKED);
  assert_null(h2);
  assert_ok(lc_next(h, "k", &v));
  assert_i64_eq(v, 8);
  assert_ok(lc_close(h));
  /* Once closed, another process may open it and goes on. */
  r = run_open_child(dir, 0, NULL, 0);
  assert_rc(r.rc, 0);
  assert_true(r.has_value);
  assert_rc(r.value_rc, 0);
  assert_i64_eq(r.value, 9);
  tmpdir_free(dir);
}

static void test_lock_wait(void **state) {
  (void)state;
  char *dir = tmpdir_make();
  assert_ok(mcd_flush_all(&mc));
  lc_t *h = NULL;
  assert_ok(open_owner(dir, "holder", 0, &h));
  int64_t v;
  for (int i = 0; i < 10; i++) assert_ok(lc_next(h, "k", &v));
  /* The holder closes 300 ms after the child starts waiting up to 10 s. */
  open_report r = run_open_child(dir, 10000, &h, 300);
  if (r.rc != 0)
    fail_msg("waiting open: %s (%s) after %ld ms", lc_err_name(r.rc), r.detail,
             r.ms);
  assert_true(r.has_value);
  assert_rc(r.value_rc, 0);
  assert_i64_eq(r.value, 11);
  assert_true(r.ms < 10000);
  /* Held for good: the wait ends with ELOCKED after about lock_wait_ms. */
  assert_ok(open_owner(dir, "holder", 0, &h));
  r = run_open_child(dir, 300, NULL, 0);
  assert_rc(r.rc, LC_ELOCKED);
  assert_true(r.ms >= 200); /* it did wait */
  assert_true(r.ms < 5000); /* and gave up: a bound, not a threshold */
  assert_ok(lc_next(h, "k", &v));
  assert_i64_eq(v, 12);
  assert_ok(lc_close(h));
  tmpdir_free(dir);
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "--child-alloc") == 0)
    return child_alloc(argv);
  if (argc >= 5 && strcmp(argv[1], "--child-open") == 0)
    return child_try_open(argv);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kill_child_at_random),
      cmocka_unit_test(test_second_process_locked),
      cmocka_unit_test(test_lock_wait),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
