/*
 * test_tally.c - tallies (write-behind counts) against a real memcached:
 * add/get/flush and reopen, bad input (names, delta 0, overflow both ways,
 * the separate namespace from serial counters), exact totals after 8
 * threads of mixed-sign changes with two flusher threads, a process that
 * adds and flushes SIGKILLed at random moments, memcached losing pending
 * changes (flush_all, restart, a lowered sum, a sum set back twice, a
 * sum from before a loss brought back: the amount lost goes down), and
 * the amounts lost measured (lc_tally_lost: a sum set back between the
 * applied one and what was acknowledged, a loss while no handle ran, found
 * through the carry written at lc_close or by a flush memcached failed in
 * a process then killed), a flush's multi-get meeting a connection a
 * server closed (no loss), one log write per tally per window, and
 * lc_tally_list against a brute-force computation.
 *
 * LC_TEST_SCALE=N divides the big counts by N.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/format.h"
#include "mcd.h"

/* lc_tally_lost: the increments lost; *minus the decrements. */
static uint64_t lost_of(lc_t *h, const char *name, uint64_t *minus) {
  uint64_t l = 12345, m = 12345;
  assert_ok(lc_tally_lost(h, name, &l, &m));
  *minus = m;
  return l;
}

static void reopen(fx_t *f) {
  lc_close(f->h);
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
}

static int64_t total_of(lc_t *h, const char *name, int64_t *pending,
                        uint64_t *losses) {
  int64_t t = -12345;
  assert_ok(lc_tally_get(h, name, &t, pending, losses));
  return t;
}

/* After a memcached restart, pooled connections fail once each. */
static int transient(int rc) {
  return rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT;
}

static uint64_t flush_all(lc_t *h) {
  uint64_t n = 0, sum = 0;
  int rc;
  for (int i = 0; i < 20; i++) {
    rc = lc_tally_flush(h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, &n);
    sum += n;
    if (!transient(rc)) break;
  }
  assert_ok(rc);
  return sum;
}

static int add_retry(lc_t *h, const char *name, int64_t d) {
  int rc;
  for (int i = 0; i < 20; i++)
    if (!transient(rc = lc_tally_add(h, name, d))) break;
  return rc;
}

/* ---- basics ---------------------------------------------------------- */

static void test_add_get_flush(void **state) {
  fx_t *f = *state;
  int64_t pend = -1;
  uint64_t losses = 9;
  assert_i64_eq(total_of(f->h, "views", &pend, &losses), 0);
  assert_i64_eq(pend, 0);
  assert_ok(lc_tally_add(f->h, "views", 5));
  assert_ok(lc_tally_add(f->h, "views", -2));
  assert_i64_eq(total_of(f->h, "views", &pend, &losses), 0);
  assert_i64_eq(pend, 3);
  /* not due yet: a plain flush writes nothing */
  uint64_t n = 99;
  assert_ok(lc_tally_flush(f->h, 0, 0, &n));
  assert_i64_eq(n, 0);
  lc_stats a, b;
  assert_ok(lc_get_stats(f->h, &a));
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, &n));
  assert_i64_eq(n, 1);
  /* a flush is synced even under default durability (a power cut plus a
   * memcached loss must not take applied changes) */
  assert_ok(lc_get_stats(f->h, &b));
  assert_i64_eq(b.log_syncs - a.log_syncs, 1);
  assert_i64_eq(total_of(f->h, "views", &pend, &losses), 3);
  assert_i64_eq(pend, 0);
  assert_i64_eq(losses, 0);
  assert_ok(lc_tally_add(f->h, "views", -10));
  reopen(f); /* pending survives in memcached; a sweep finds it */
  assert_i64_eq(total_of(f->h, "views", &pend, NULL), 3);
  assert_i64_eq(pend, -10);
  assert_i64_eq(flush_all(f->h), 1);
  assert_i64_eq(total_of(f->h, "views", &pend, NULL), -7);
  assert_i64_eq(pend, 0);
  assert_i64_eq(flush_all(f->h), 0); /* nothing left: no write */
  lc_stats s;
  assert_ok(lc_get_stats(f->h, &s));
  assert_i64_eq(s.tally_flushes, 1);
  assert_i64_eq(s.tally_adds, 0);
}

/* Reading tallies keeps no state for names the handle has not changed or
 * flushed: a daemon answering "get tally:<any name>" must not grow. */
static uint64_t tallies_kept(lc_t *h) {
  lc_stats st;
  assert_ok(lc_get_stats(h, &st));
  return st.tallies;
}

static void test_get_keeps_no_state(void **state) {
  fx_t *f = *state;
  assert_ok(lc_tally_add(f->h, "seen", 4));
  assert_i64_eq(flush_all(f->h), 1);
  assert_ok(lc_tally_add(f->h, "seen", 2));
  reopen(f);
  uint64_t before = tallies_kept(f->h);
  int64_t pend = -1;
  uint64_t losses = 9;
  /* known to the log and memcached, not to this handle: exact answers */
  assert_i64_eq(total_of(f->h, "seen", &pend, &losses), 4);
  assert_i64_eq(pend, 2);
  assert_i64_eq(losses, 0);
  char name[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "never-%d", i);
    assert_i64_eq(total_of(f->h, name, &pend, NULL), 0);
    assert_i64_eq(pend, 0);
  }
  assert_int_equal(tallies_kept(f->h), before);
  /* a change still makes one entry, and reads of it are unchanged */
  assert_ok(lc_tally_add(f->h, "seen", -1));
  assert_int_equal(tallies_kept(f->h), before + 1);
  assert_i64_eq(total_of(f->h, "seen", &pend, NULL), 4);
  assert_i64_eq(pend, 1);
}

static void test_bad_input(void **state) {
  fx_t *f = *state;
  char long_name[LC_NAME_MAX + 2];
  memset(long_name, 'x', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  assert_rc(lc_tally_add(f->h, NULL, 1), LC_EINVAL);
  assert_rc(lc_tally_add(f->h, "", 1), LC_ENAME);
  assert_rc(lc_tally_add(f->h, "a b", 1), LC_ENAME);
  assert_rc(lc_tally_add(f->h, "tab\t", 1), LC_ENAME);
  assert_rc(lc_tally_add(f->h, long_name, 1), LC_ENAME);
  long_name[LC_NAME_MAX] = '\0';
  assert_ok(lc_tally_add(f->h, long_name, 1));
  assert_rc(lc_tally_add(f->h, "z", 0), LC_EDELTA);
  assert_rc(lc_tally_add(NULL, "z", 1), LC_EINVAL);
  assert_rc(lc_tally_get(f->h, "a b", NULL, NULL, NULL), LC_ENAME);
  assert_rc(lc_tally_flush(f->h, 0, 64, NULL), LC_EINVAL);
  assert_rc(lc_tally_set_window(f->h, 0), LC_EINVAL);
  assert_rc(lc_tally_list(f->h, NULL, NULL), LC_EINVAL);
  assert_string_equal(lc_err_name(LC_ETALLYRANGE), "ETALLYRANGE");
  assert_string_equal(lc_err_name(LC_EDELTA), "EDELTA");

  /* overflow up: pending counts before any flush */
  assert_ok(lc_tally_add(f->h, "up", INT64_MAX - 1));
  assert_ok(lc_tally_add(f->h, "up", 1));
  assert_rc(lc_tally_add(f->h, "up", 1), LC_ETALLYRANGE);
  assert_ok(lc_tally_add(f->h, "up", -5));
  /* a negative change does not make room for a positive one until it is
   * applied: the bound is on the worst case */
  assert_rc(lc_tally_add(f->h, "up", 1), LC_ETALLYRANGE);
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "up", NULL, NULL), INT64_MAX - 5);
  assert_ok(lc_tally_add(f->h, "up", 5));
  assert_rc(lc_tally_add(f->h, "up", 1), LC_ETALLYRANGE);
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "up", NULL, NULL), INT64_MAX);

  /* overflow down, INT64_MIN itself is a valid delta */
  assert_ok(lc_tally_add(f->h, "down", INT64_MIN));
  assert_rc(lc_tally_add(f->h, "down", -1), LC_ETALLYRANGE);
  flush_all(f->h);
  int64_t pend = 1;
  assert_i64_eq(total_of(f->h, "down", &pend, NULL), INT64_MIN);
  assert_i64_eq(pend, 0);
  assert_rc(lc_tally_add(f->h, "down", INT64_MIN), LC_ETALLYRANGE);
  assert_ok(lc_tally_add(f->h, "down", INT64_MAX));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "down", NULL, NULL), -1);
  /* a refused change left nothing behind after a reopen either */
  reopen(f);
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "up", NULL, NULL), INT64_MAX);
  assert_i64_eq(total_of(f->h, "down", NULL, NULL), -1);
  assert_rc(lc_tally_add(f->h, "up", 1), LC_ETALLYRANGE);

  /* separate namespaces: a serial counter and a tally share a name */
  int64_t v = 0;
  assert_ok(lc_next(f->h, "orders", &v));
  assert_i64_eq(v, 1);
  assert_ok(lc_tally_add(f->h, "orders", 100));
  flush_all(f->h);
  assert_ok(lc_next(f->h, "orders", &v));
  assert_i64_eq(v, 2);
  assert_i64_eq(total_of(f->h, "orders", NULL, NULL), 100);
}

static void test_sync_and_remote(void **state) {
  fx_t *f = *state;
  /* durability sync: every tally write is synced */
  lc_close(f->h);
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_SYNC, 0, &f->h));
  lc_stats a, b;
  assert_ok(lc_get_stats(f->h, &a));
  assert_ok(lc_tally_add(f->h, "s", 2));
  assert_ok(lc_tally_add(f->h, "s", 3));
  assert_i64_eq(flush_all(f->h), 1);
  assert_ok(lc_get_stats(f->h, &b));
  assert_i64_eq(b.log_syncs - a.log_syncs, 2); /* first record, flush */
  assert_i64_eq(b.log_writes - a.log_writes, 2);
  assert_i64_eq(total_of(f->h, "s", NULL, NULL), 5);
  /* a remote handle has no log: every tally call says so */
  lc_options o;
  lc_options_init(&o);
  o.server = "127.0.0.1:1";
  lc_t *r = NULL;
  assert_ok(lc_open(&o, &r));
  assert_rc(lc_tally_add(r, "s", 1), LC_EREMOTE);
  assert_rc(lc_tally_get(r, "s", NULL, NULL, NULL), LC_EREMOTE);
  assert_rc(lc_tally_flush(r, 0, 0, NULL), LC_EREMOTE);
  lc_tally_list_opts lo;
  memset(&lo, 0, sizeof lo);
  assert_rc(lc_tally_list(r, &lo, NULL), LC_EREMOTE);
  lc_close(r);
}

/* ---- 8 threads, 10 tallies, two flushers ----------------------------- */

#define NT 10
#define NTHREADS 8
static atomic_int adders_done;

typedef struct adder {
  lc_t *h;
  int index;
  long n;
  int64_t sum[NT];
  int errors;
} adder;

static void tname(char *buf, int i) {
  snprintf(buf, 32, "hits.%d", i);
}

static void *adder_main(void *p) {
  adder *a = p;
  unsigned seed = 77u + (unsigned)a->index;
  char name[32];
  for (long i = 0; i < a->n; i++) {
    int t = rand_r(&seed) % NT;
    int64_t d = (int64_t)(rand_r(&seed) % 2001) - 1000;
    if (d == 0) d = 1;
    tname(name, t);
    int rc = lc_tally_add(a->h, name, d);
    if (rc) {
      a->errors++;
      fprintf(stderr, "add: %s %s\n", lc_err_name(rc), lc_last_detail());
      continue;
    }
    a->sum[t] += d;
  }
  atomic_fetch_add(&adders_done, 1);
  return NULL;
}

typedef struct flusher {
  lc_t *h;
  int index;
  long rounds, errors;
} flusher;

static void *flusher_main(void *p) {
  flusher *fl = p;
  while (atomic_load(&adders_done) < NTHREADS) {
    int flags = (fl->rounds % 3 == 0) ? LC_TALLY_FORCE : 0;
    if (fl->rounds % 7 == 3) flags |= LC_TALLY_SWEEP;
    uint64_t n;
    if (lc_tally_flush(fl->h, fl->index ? 3 : 0, flags, &n)) fl->errors++;
    fl->rounds++;
    sleep_ms(1);
  }
  return NULL;
}

static void test_threads_exact(void **state) {
  fx_t *f = *state;
  assert_ok(lc_tally_set_window(f->h, 1));
  /* 25,000 changes a thread (200,000 in all): each flusher still runs
   * 1,000-2,000 rounds (forced, swept, due) among the adds; 100,000 a
   * thread took 26-38 s for some 5,500 each. */
  long per = scaled(25000, 500);
  adder a[NTHREADS];
  flusher fl[2];
  pthread_t ta[NTHREADS], tf[2];
  memset(a, 0, sizeof a);
  memset(fl, 0, sizeof fl);
  atomic_store(&adders_done, 0);
  for (int i = 0; i < 2; i++) {
    fl[i].h = f->h;
    fl[i].index = i;
    assert_int_equal(pthread_create(&tf[i], NULL, flusher_main, &fl[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) {
    a[i].h = f->h;
    a[i].index = i;
    a[i].n = per;
    assert_int_equal(pthread_create(&ta[i], NULL, adder_main, &a[i]), 0);
  }
  for (int i = 0; i < NTHREADS; i++) pthread_join(ta[i], NULL);
  for (int i = 0; i < 2; i++) pthread_join(tf[i], NULL);
  flush_all(f->h);
  lc_stats s;
  assert_ok(lc_get_stats(f->h, &s));
  fprintf(stderr,
          "  %ld changes, flusher rounds %ld + %ld, %llu flush "
          "writes, %llu windows\n",
          per * NTHREADS, fl[0].rounds, fl[1].rounds,
          (unsigned long long)s.tally_flushes,
          (unsigned long long)s.tally_schedules);
  for (int i = 0; i < NTHREADS; i++) assert_int_equal(a[i].errors, 0);
  assert_int_equal(fl[0].errors + fl[1].errors, 0);
  assert_i64_eq(s.tally_losses, 0);
  assert_i64_eq(s.tally_adds, per * NTHREADS);
  for (int t = 0; t < NT; t++) {
    int64_t want = 0, pend = 1;
    uint64_t losses = 1;
    for (int i = 0; i < NTHREADS; i++) want += a[i].sum[t];
    char name[32];
    tname(name, t);
    assert_i64_eq(total_of(f->h, name, &pend, &losses), want);
    assert_i64_eq(pend, 0);
    assert_i64_eq(losses, 0);
  }
  reopen(f);
  assert_i64_eq(flush_all(f->h), 0);
}

/* ---- a process that adds and flushes, SIGKILLed ---------------------- */

#define KT 4       /* tallies */
#define KTHREADS 2 /* adder threads in the child */
typedef struct msg {
  int32_t kind; /* 1: about to add, 2: acknowledged */
  int32_t thread, tally;
  int64_t delta;
} msg;

typedef struct kid {
  lc_t *h;
  int fd, index;
} kid;

static void kname(char *buf, int i) {
  snprintf(buf, 32, "k%d", i);
}

static void *kid_adder(void *p) {
  kid *k = p;
  unsigned seed = (unsigned)getpid() * 31u + (unsigned)k->index;
  for (;;) {
    msg m = {1, k->index, (int32_t)(rand_r(&seed) % KT),
             (int64_t)(rand_r(&seed) % 199) - 99};
    if (m.delta == 0) m.delta = 100;
    char name[32];
    kname(name, m.tally);
    if (write(k->fd, &m, sizeof m) != sizeof m) _exit(3);
    if (lc_tally_add(k->h, name, m.delta) == 0) {
      m.kind = 2;
      if (write(k->fd, &m, sizeof m) != sizeof m) _exit(3);
    }
  }
  return NULL;
}

static void *kid_flusher(void *p) {
  kid *k = p;
  for (unsigned i = 0;; i++) {
    uint64_t n;
    lc_tally_flush(
        k->h, 0,
        (i % 5 == 4) ? LC_TALLY_SWEEP | LC_TALLY_FORCE : LC_TALLY_FORCE, &n);
  }
  return NULL;
}

static void kid_main(const char *dir, int fd) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, dir, path);
  o.lock_wait_ms = 5000;
  lc_t *h;
  if (lc_open(&o, &h)) _exit(2);
  kid k[KTHREADS + 2];
  pthread_t t[KTHREADS + 2];
  for (int i = 0; i < KTHREADS + 2; i++) {
    k[i].h = h;
    k[i].fd = fd;
    k[i].index = i;
    pthread_create(&t[i], NULL, i < KTHREADS ? kid_adder : kid_flusher, &k[i]);
  }
  for (;;) pause();
}

/* Is want one of the subset sums of v[0..n)? */
static int subset_sum(const int64_t *v, int n, int64_t want) {
  if (n == 0) return want == 0;
  return subset_sum(v + 1, n - 1, want) ||
         subset_sum(v + 1, n - 1, want - v[0]);
}

static void test_sigkill_flusher(void **state) {
  fx_t *f = *state;
  lc_close(f->h); /* the children own the log */
  f->h = NULL;
  int64_t acked[KT] = {0};
  int64_t open_d[KT][64];
  int nopen[KT] = {0};
  unsigned seed = (unsigned)now_us();
  int rounds = 6;
  long acks = 0;
  for (int r = 0; r < rounds; r++) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(p[0]);
      kid_main(f->dir, p[1]);
    }
    close(p[1]);
    /* read while the child runs (a full pipe would stop it), kill it at
     * a random moment, then read what it wrote before it died */
    int64_t kill_at = mono_us() + 150000 + (int64_t)(rand_r(&seed) % 400000);
    int killed = 0;
    /* per child thread: the attempt not (yet) acknowledged */
    msg last[KTHREADS];
    int pending[KTHREADS] = {0};
    msg m;
    for (;;) {
      if (!killed && mono_us() >= kill_at) {
        kill(pid, SIGKILL);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        killed = 1;
      }
      if (!killed) {
        struct pollfd pfd = {p[0], POLLIN, 0};
        if (poll(&pfd, 1, 5) <= 0) continue;
      }
      if (read(p[0], &m, sizeof m) != sizeof m) {
        if (killed) break;
        continue;
      }
      if (m.kind == 1) {
        /* an earlier attempt of this thread that was never acknowledged
         * failed: it may still have counted */
        if (pending[m.thread]) {
          int t = last[m.thread].tally;
          assert_true(nopen[t] < 64);
          open_d[t][nopen[t]++] = last[m.thread].delta;
        }
        last[m.thread] = m;
        pending[m.thread] = 1;
      } else {
        acked[m.tally] += m.delta;
        pending[m.thread] = 0;
        acks++;
      }
    }
    close(p[0]);
    for (int i = 0; i < KTHREADS; i++) {
      if (!pending[i]) continue;
      int t = last[i].tally;
      assert_true(nopen[t] < 64);
      open_d[t][nopen[t]++] = last[i].delta;
    }
  }
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  flush_all(f->h);
  int unresolved = 0;
  for (int t = 0; t < KT; t++) {
    char name[32];
    kname(name, t);
    uint64_t losses = 1;
    int64_t pend = 1;
    int64_t got = total_of(f->h, name, &pend, &losses);
    assert_i64_eq(pend, 0);
    assert_i64_eq(losses, 0);
    unresolved += nopen[t];
    /* exactly the acknowledged changes plus some of the attempts whose
     * answer died with the child (each either counted or not) */
    if (nopen[t] > 20 || !subset_sum(open_d[t], nopen[t], got - acked[t]))
      fail_msg("tally %s: total %lld, acknowledged %lld, %d unresolved", name,
               (long long)got, (long long)acked[t], nopen[t]);
  }
  fprintf(stderr, "  %d kills, %ld acknowledged changes, %d unresolved\n",
          rounds, acks, unresolved);
  assert_true(acks > 100);
}

/* ---- memcached losing pending changes -------------------------------- */

static void test_memcached_loss(void **state) {
  fx_t *f = *state;
  uint64_t losses = 0, lm = 0;
  int64_t pend = 0;
  assert_ok(lc_tally_add(f->h, "a", 10));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 10);
  assert_i64_eq(losses, 0);
  /* 7 pending, then flush_all: lost; the next change re-seeds at 10 */
  assert_ok(lc_tally_add(f->h, "a", 7));
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_tally_add(f->h, "a", 3));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", &pend, &losses), 13); /* true: 20 */
  assert_i64_eq(pend, 0);
  assert_i64_eq(losses, 1);
  assert_i64_eq(lost_of(f->h, "a", &lm), 7); /* the amount: 20 - 13 */
  assert_i64_eq(lm, 0);
  /* later changes count exactly */
  assert_ok(lc_tally_add(f->h, "a", -5));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 8);
  assert_i64_eq(losses, 1);
  /* restart with changes pending, found by the flush itself */
  assert_ok(lc_tally_add(f->h, "a", 4));
  assert_ok(lc_tally_add(f->h, "a", -1));
  assert_ok(mcd_restart(&mc));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", &pend, &losses), 8); /* true: 11 */
  assert_i64_eq(losses, 2);
  assert_i64_eq(lost_of(f->h, "a", &lm), 7 + 4); /* each side's amount */
  assert_i64_eq(lm, 1);
  assert_ok(add_retry(f->h, "a", 2));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 10);
  /* a lowered sum (a stray set): a loss, never a negative correction */
  assert_ok(lc_tally_add(f->h, "a", 6));
  assert_ok(mcd_set(&mc, "lt+:a", "1"));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 10);
  assert_i64_eq(losses, 3);
  assert_i64_eq(lost_of(f->h, "a", &lm), 11 + 6);
  assert_i64_eq(lm, 1);
  assert_ok(lc_tally_add(f->h, "a", 1));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 11);
  /* memcached lost nothing pending: no loss counted */
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_tally_add(f->h, "a", 1));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 12);
  assert_i64_eq(losses, 3);
  lc_stats s;
  assert_ok(lc_get_stats(f->h, &s));
  assert_i64_eq(s.tally_losses, 3);
  assert_true(s.tally_seeds >= 3);
  assert_i64_eq(s.tally_lost_amount, 17 + 1);
  assert_i64_eq(lost_of(f->h, "a", &lm), 17); /* nothing pending lost */
  assert_i64_eq(lm, 1);
  reopen(f); /* the loss count and amount are in the log */
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 12);
  assert_i64_eq(losses, 3);
  assert_i64_eq(lost_of(f->h, "a", &lm), 17);
  assert_i64_eq(lm, 1);
  /* a change left pending by a closed handle, lost before the next one
   * opens: the closed handle recorded it as its carry, so the new one
   * measures the loss (4 + 1) and counts one loss (not one per sum) */
  assert_ok(lc_tally_add(f->h, "a", 4));
  assert_ok(lc_tally_add(f->h, "a", -1));
  lc_close(f->h);
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_ok(lc_tally_add(f->h, "a", 1));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 13);
  assert_i64_eq(losses, 4);
  assert_i64_eq(lost_of(f->h, "a", &lm), 17 + 4);
  assert_i64_eq(lm, 1 + 1);
  /* the same, found by a flush (sweep) rather than by a change */
  assert_ok(lc_tally_add(f->h, "a", 2));
  lc_close(f->h);
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 13);
  assert_i64_eq(losses, 5);
  assert_i64_eq(lost_of(f->h, "a", &lm), 21 + 2);
  assert_i64_eq(lm, 2);
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "a", NULL, &losses), 13);
  assert_i64_eq(losses, 5);
  assert_i64_eq(lost_of(f->h, "a", &lm), 23);
  assert_i64_eq(lm, 2);
  /* added +41 and -7 in all: 41 - 7 - (23 - 2) = 13, the total */
}

/* memcached set back to a sum between the applied one and the current one
 * (an older memory file): what lies above it is lost, measured, and what
 * is below it is applied; the changes made on the rewound sum count. */
static void test_rewind_between(void **state) {
  fx_t *f = *state;
  uint64_t losses = 9, lm = 9;
  assert_ok(lc_tally_add(f->h, "w", 10));
  flush_all(f->h);
  assert_ok(lc_tally_add(f->h, "w", 3));
  assert_ok(lc_tally_add(f->h, "w", 4)); /* memcached: 17, applied 10 */
  assert_ok(mcd_set(&mc, "lt+:w", "12"));
  assert_ok(lc_tally_add(f->h, "w", 5)); /* on the rewound sum: 17 */
  flush_all(f->h);
  /* 22 added; memcached holds 17 (12 + 5): 7 more applied, and of the
   * 7 acknowledged by the read only 2 were there: 5 lost */
  assert_i64_eq(total_of(f->h, "w", NULL, &losses), 17);
  assert_i64_eq(losses, 1);
  assert_i64_eq(lost_of(f->h, "w", &lm), 5);
  assert_i64_eq(lm, 0);
  assert_ok(lc_tally_add(f->h, "w", 1));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "w", NULL, &losses), 18);
  assert_i64_eq(losses, 1);
  assert_i64_eq(lost_of(f->h, "w", &lm), 5);
  reopen(f);
  assert_i64_eq(lost_of(f->h, "w", &lm), 5);
  /* pending changes rewound while no handle runs: the record's carry
   * (written at close) measures them */
  assert_ok(lc_tally_add(f->h, "w", 6)); /* memcached: 24, applied 18 */
  lc_close(f->h);
  f->h = NULL;
  assert_ok(mcd_set(&mc, "lt+:w", "20"));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "w", NULL, &losses), 20);
  assert_i64_eq(losses, 2);
  assert_i64_eq(lost_of(f->h, "w", &lm), 5 + 4);
  assert_i64_eq(lm, 0);
}

/* memcached set back twice (the chaos harness's memcached-rewind: warm
 * restarts from older memory files, or stray sets): first below what was
 * applied, then to a sum read in between, which holds changes applied
 * already.  The total must never go above what was added: the first
 * rewind must not lower the applied baseline (it lowered it to 40, and
 * the second rewind then applied 100 - 50 again: 160 for 110 added). */
static void test_rewind_twice(void **state) {
  fx_t *f = *state;
  char old[32], mid[32], now[32];
  uint64_t losses = 9;
  assert_ok(lc_tally_add(f->h, "r", 40));
  flush_all(f->h);
  assert_int_equal(mcd_get(&mc, "lt+:r", old, sizeof old), 1);
  assert_string_equal(old, "40");
  assert_ok(lc_tally_add(f->h, "r", 60));
  flush_all(f->h);
  assert_int_equal(mcd_get(&mc, "lt+:r", mid, sizeof mid), 1);
  assert_string_equal(mid, "100");
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 100);
  assert_i64_eq(losses, 0);
  /* back to the older sum: a loss (nothing was pending), nothing applied */
  assert_ok(mcd_set(&mc, "lt+:r", old));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 100);
  assert_i64_eq(losses, 1);
  reopen(f); /* the baseline in the log is the one kept */
  assert_ok(lc_tally_add(f->h, "r", 10));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 110);
  /* back to the sum read between the two: below the applied 110 again */
  assert_ok(mcd_set(&mc, "lt+:r", mid));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 110); /* was 160 */
  assert_i64_eq(losses, 2);
  /* a change made on the rewound sum (40 + 5, still below 110) is lost
   * with it; then the sum in between once more */
  assert_ok(mcd_set(&mc, "lt+:r", old));
  assert_ok(lc_tally_add(f->h, "r", 5));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 110);
  assert_i64_eq(losses, 3);
  assert_ok(mcd_set(&mc, "lt+:r", mid));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 110);
  assert_i64_eq(losses, 4);
  /* and later changes count exactly */
  assert_ok(lc_tally_add(f->h, "r", 7));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "r", NULL, &losses), 117);
  assert_i64_eq(losses, 4);
  assert_i64_eq(flush_all(f->h), 0);
  /* memcached holds the applied sum (set back up to it, never below) */
  assert_int_equal(mcd_get(&mc, "lt+:r", now, sizeof now), 1);
  assert_string_equal(now, "117");
}

/* memcached set back to a sum read before a loss (a warm restart from an
 * older memory file, the chaos harness's memcached-rewind "back N"): the
 * sum holds changes already measured as lost, above the baseline the loss
 * re-seeded.  A flush applies them, so they were not lost after all: the
 * amount lost goes down by what comes back (else total + lost exceeds
 * what was added: 150 + 50 for 151 added).  Only what lies above
 * everything the handle accepted counts as brought back, and never more
 * than was recorded lost. */
static void test_rewind_before_loss(void **state) {
  fx_t *f = *state;
  char old[32];
  uint64_t losses = 9, lm = 9;
  assert_ok(lc_tally_add(f->h, "b", 100));
  flush_all(f->h);
  assert_ok(lc_tally_add(f->h, "b", 50)); /* memcached: 150, applied 100 */
  assert_int_equal(mcd_get(&mc, "lt+:b", old, sizeof old), 1);
  assert_string_equal(old, "150");
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_tally_add(f->h, "b", 1)); /* the loss found, re-seeded */
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 101);
  assert_i64_eq(losses, 1);
  assert_i64_eq(lost_of(f->h, "b", &lm), 50);
  /* back to 150: 49 above the applied 101, nothing of it this handle's
   * (nothing pending) */
  assert_ok(mcd_set(&mc, "lt+:b", old));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 150);
  assert_i64_eq(losses, 1);
  assert_i64_eq(lost_of(f->h, "b", &lm), 1); /* 151 added, 150 held */
  assert_i64_eq(lm, 0);
  flush_all(f->h); /* given back once */
  assert_i64_eq(lost_of(f->h, "b", &lm), 1);
  reopen(f); /* and recorded */
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 150);
  assert_i64_eq(lost_of(f->h, "b", &lm), 1);
  /* changes pending when the old sum comes back are in it or lost with
   * what it overwrote: 7 made on 150, then the sum set back to 150 */
  assert_ok(lc_tally_add(f->h, "b", 7));
  assert_ok(mcd_set(&mc, "lt+:b", old));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 150);
  assert_i64_eq(losses, 2);
  assert_i64_eq(lost_of(f->h, "b", &lm), 1 + 7);
  /* a sum far above anything lost (a stray set): applied as memcached
   * holds it, and the amount lost goes down to 0, no further */
  assert_ok(mcd_set(&mc, "lt+:b", "1000"));
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 1000);
  assert_i64_eq(lost_of(f->h, "b", &lm), 0);
  assert_i64_eq(losses, 2);
  assert_ok(lc_tally_add(f->h, "b", 3)); /* later changes count exactly */
  flush_all(f->h);
  assert_i64_eq(total_of(f->h, "b", NULL, &losses), 1003);
  assert_i64_eq(lost_of(f->h, "b", &lm), 0);
}

/* Two servers, the first closing idle connections (memcached -o
 * idle_timeout): a flush's multi-get then finds the first server's
 * connection closed, and libmemcached (1.1) ends the fetch with NOT FOUND
 * once the second has answered, as if the first server's keys were
 * missing.  They are not: nothing may be measured as lost, nor counted as
 * a loss (the flush took the key for a vanished sum, counted its 5
 * pending as lost, and found it again when its add said EXISTS). */
static void test_mget_closed_server(void **state) {
  fx_t *f = *state;
  static const char *const idle[] = {"-o", "idle_timeout=1", NULL};
  mcd_t a = {0}, b = {0};
  assert_int_equal(mcd_start_with(&a, idle), 0);
  assert_int_equal(mcd_start(&b), 0);
  char config[160], path[TU_PATH_MAX];
  snprintf(config, sizeof config, "%s %s", a.config, b.config);
  lc_options o;
  tu_options(&o, &a, f->dir, path);
  o.memcached = config;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  /* a tally of each server's, by where its sum landed */
  char on_a[16] = "", on_b[16] = "", name[16], v[32];
  for (int i = 0; i < 64 && (!on_a[0] || !on_b[0]); i++) {
    snprintf(name, sizeof name, "m%d", i);
    assert_ok(lc_tally_add(h, name, 1));
    char key[24];
    snprintf(key, sizeof key, "lt+:%s", name);
    if (!on_a[0] && mcd_get(&a, key, v, sizeof v) == 1) strcpy(on_a, name);
    if (!on_b[0] && mcd_get(&b, key, v, sizeof v) == 1) strcpy(on_b, name);
  }
  assert_true(on_a[0] && on_b[0]);
  flush_all(h);
  assert_ok(lc_tally_add(h, on_a, 5));
  assert_ok(lc_tally_add(h, on_b, 3));
  /* the first server closes the pooled connections (its idle check runs
   * every few seconds) */
  long kicks = mcd_stat(&a, "idle_kicks");
  for (int i = 0; i < 100 && mcd_stat(&a, "idle_kicks") == kicks; i++)
    usleep(100000);
  assert_true(mcd_stat(&a, "idle_kicks") > kicks);
  usleep(300000);
  flush_all(h);
  uint64_t losses = 9, lm = 9;
  assert_i64_eq(total_of(h, on_a, NULL, &losses), 6);
  assert_i64_eq(losses, 0);
  assert_i64_eq(lost_of(h, on_a, &lm), 0);
  assert_i64_eq(total_of(h, on_b, NULL, &losses), 4);
  lc_stats s;
  assert_ok(lc_get_stats(h, &s));
  assert_i64_eq(s.tally_losses, 0);
  assert_i64_eq(s.tally_lost_amount, 0);
  lc_close(h);
  mcd_stop(&a);
  mcd_stop(&b);
}

/* A process acknowledges changes, its flush fails (memcached frozen), and
 * it is SIGKILLed; memcached then loses the sums.  The failed flush wrote
 * the carry (what was acknowledged), so the next handle measures the loss
 * exactly; without it, nothing of the kill's pending changes is measured. */
static void test_carry_at_failed_flush(void **state) {
  fx_t *f = *state;
  uint64_t lm = 9;
  assert_ok(lc_tally_add(f->h, "k", 2));
  flush_all(f->h); /* applied 2, carry 0 */
  lc_close(f->h);
  f->h = NULL;
  int p[2], go[2]; /* child to parent, parent to child */
  assert_int_equal(pipe(p), 0);
  assert_int_equal(pipe(go), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the child: adds 5 and 3, then flushes when told */
    close(p[0]);
    close(go[1]);
    lc_t *h = NULL;
    char c = 'x';
    if (tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 200, &h) != 0 ||
        lc_tally_add(h, "k", 5) != 0 || lc_tally_add(h, "k", 3) != 0)
      c = 'f';
    if (write(p[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    /* memcached frozen now: the flush times out */
    int rc = lc_tally_flush(h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, NULL);
    c = rc == LC_ETIMEDOUT || rc == LC_EMEMCACHED ? 'd' : 'f';
    if (write(p[1], &c, 1) != 1) _exit(1);
    pause(); /* until killed */
    _exit(0);
  }
  close(p[1]);
  close(go[0]);
  char c = 0;
  assert_int_equal(read(p[0], &c, 1), 1);
  assert_int_equal(c, 'x');
  assert_ok(mcd_freeze(&mc));
  assert_int_equal(write(go[1], "g", 1), 1);
  close(go[1]);
  assert_int_equal(read(p[0], &c, 1), 1);
  kill(pid, SIGKILL);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_ok(mcd_thaw(&mc));
  close(p[0]);
  assert_int_equal(c, 'd'); /* its flush failed, as meant */
  assert_ok(mcd_flush_all(&mc)); /* the pending 8 lost */
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  flush_all(f->h);
  uint64_t losses = 0;
  assert_i64_eq(total_of(f->h, "k", NULL, &losses), 2);
  assert_i64_eq(lost_of(f->h, "k", &lm), 8);
  assert_i64_eq(lm, 0);
  assert_i64_eq(losses, 1);
}

/* ---- one log write per tally per window ------------------------------ */

static void test_one_write_per_window(void **state) {
  fx_t *f = *state;
  assert_ok(lc_tally_set_window(f->h, 1));
  const char *names[3] = {"w1", "w2", "w3"};
  for (int i = 0; i < 3; i++) assert_ok(lc_tally_add(f->h, names[i], 1));
  flush_all(f->h); /* records exist now */
  sleep_ms(2500);  /* and their first windows' markers expired */
  for (int round = 0; round < 2; round++) {
    lc_stats a, b;
    assert_ok(lc_get_stats(f->h, &a));
    long n = scaled(3000, 300);
    for (long i = 0; i < n; i++)
      assert_ok(lc_tally_add(f->h, names[i % 3], (i & 1) ? 2 : -1));
    uint64_t w = 9;
    assert_ok(lc_tally_flush(f->h, 0, 0, &w)); /* not due yet */
    assert_i64_eq(w, 0);
    /* due 1 + 1.25 s after the first change; then 0.3 s more, in which
     * nothing else may be written */
    int64_t until = mono_us() + 4000000, quiet = 0;
    uint64_t total = 0;
    while (mono_us() < until && (quiet == 0 || mono_us() < quiet)) {
      assert_ok(lc_tally_flush(f->h, 0, 0, &w));
      total += w;
      if (total >= 3 && quiet == 0) quiet = mono_us() + 300000;
      sleep_ms(20);
    }
    assert_ok(lc_get_stats(f->h, &b));
    /* one record write per tally (a flush may put several tallies into
     * one LevelDB batch) */
    assert_i64_eq(total, 3);
    assert_i64_eq(b.tally_flushes - a.tally_flushes, 3);
    assert_i64_op(b.log_writes - a.log_writes, >=, 1);
    assert_i64_op(b.log_writes - a.log_writes, <=, 3);
    assert_i64_eq(b.tally_schedules - a.tally_schedules, 3);
    int64_t pend = 1;
    for (int i = 0; i < 3; i++) {
      total_of(f->h, names[i], &pend, NULL);
      assert_i64_eq(pend, 0);
    }
  }
}

/* ---- list against brute force ---------------------------------------- */

typedef struct item {
  char name[32];
  int64_t total;
} item;

#define NITEMS 150
static item items[NITEMS];

typedef struct collect {
  item got[NITEMS];
  int n;
} collect;

static int collect_cb(void *arg, const lc_tally_info *info) {
  collect *c = arg;
  if (c->n < NITEMS) {
    snprintf(c->got[c->n].name, 32, "%.31s", info->name);
    c->got[c->n].total = info->total;
  }
  c->n++;
  return 0;
}

static int by_name_cmp(const void *a, const void *b) {
  return strcmp(((const item *)a)->name, ((const item *)b)->name);
}

static int by_total_cmp(const void *a, const void *b) {
  const item *x = a, *y = b;
  if (x->total != y->total) return x->total > y->total ? -1 : 1;
  return -strcmp(x->name, y->name);
}

static void check_query(lc_t *h, const char *prefix, int has_min, int64_t min,
                        int has_max, int64_t max, lc_tally_order order,
                        uint64_t offset, uint64_t limit) {
  item want[NITEMS];
  int nw = 0;
  size_t pl = prefix ? strlen(prefix) : 0;
  for (int i = 0; i < NITEMS; i++) {
    if (pl && strncmp(items[i].name, prefix, pl) != 0) continue;
    if (has_min && items[i].total < min) continue;
    if (has_max && items[i].total > max) continue;
    want[nw++] = items[i];
  }
  qsort(want, (size_t)nw, sizeof *want,
        order == LC_TALLY_BY_NAME ? by_name_cmp : by_total_cmp);
  int from = (int)offset < nw ? (int)offset : nw;
  int to = limit && from + (int)limit < nw ? from + (int)limit : nw;
  collect c;
  memset(&c, 0, sizeof c);
  lc_tally_list_opts o;
  memset(&o, 0, sizeof o);
  o.prefix = prefix;
  o.has_min = has_min;
  o.min = min;
  o.has_max = has_max;
  o.max = max;
  o.order = order;
  o.offset = offset;
  o.limit = limit;
  o.cb = collect_cb;
  o.arg = &c;
  uint64_t count = 0;
  assert_ok(lc_tally_list(h, &o, &count));
  if (c.n != to - from || (int)count != c.n)
    fail_msg("prefix %s min %d:%lld max %d:%lld order %d offset %llu limit "
             "%llu: got %d (count %llu), want %d",
             prefix ? prefix : "-", has_min, (long long)min, has_max,
             (long long)max, (int)order, (unsigned long long)offset,
             (unsigned long long)limit, c.n, (unsigned long long)count,
             to - from);
  for (int i = 0; i < c.n; i++) {
    assert_string_equal(c.got[i].name, want[from + i].name);
    assert_i64_eq(c.got[i].total, want[from + i].total);
  }
}

static void test_list_brute_force(void **state) {
  fx_t *f = *state;
  unsigned seed = 4242;
  const char *pre[] = {"a", "ab", "abc", "b", "ba", "c"};
  for (int i = 0; i < NITEMS; i++) {
    snprintf(items[i].name, 32, "%s%d", pre[i % 6], i);
    int r = rand_r(&seed) % 10;
    items[i].total = r == 0   ? 0
                     : r == 1 ? INT64_MAX - i
                     : r == 2 ? INT64_MIN + i
                              : (int64_t)(rand_r(&seed) % 41) - 20; /* ties */
    if (items[i].total == 0) {
      /* a tally changed to 0 still has a record */
      assert_ok(lc_tally_add(f->h, items[i].name, 5));
      assert_ok(lc_tally_add(f->h, items[i].name, -5));
    } else {
      assert_ok(lc_tally_add(f->h, items[i].name, items[i].total));
    }
  }
  flush_all(f->h);
  /* change some totals again, so index entries move */
  for (int i = 0; i < NITEMS; i += 7) {
    if (items[i].total > INT64_MAX - 100 || items[i].total < INT64_MIN + 100)
      continue;
    assert_ok(lc_tally_add(f->h, items[i].name, 3));
    items[i].total += 3;
  }
  flush_all(f->h);
  const char *prefixes[] = {NULL, "", "a", "ab", "abc", "b", "c", "zz", "a1"};
  const int64_t bounds[] = {INT64_MIN, -20, -1, 0, 5, 20, INT64_MAX};
  for (int p = 0; p < 9; p++) {
    for (int order = 0; order < 2; order++) {
      check_query(f->h, prefixes[p], 0, 0, 0, 0, order, 0, 0);
      check_query(f->h, prefixes[p], 0, 0, 0, 0, order, 0, 5);
      check_query(f->h, prefixes[p], 0, 0, 0, 0, order, 7, 10);
      check_query(f->h, prefixes[p], 0, 0, 0, 0, order, 1000, 0);
      for (int i = 0; i < 7; i++) {
        check_query(f->h, prefixes[p], 1, bounds[i], 0, 0, order, 0, 0);
        check_query(f->h, prefixes[p], 0, 0, 1, bounds[i], order, 0, 0);
        for (int j = 0; j < 7; j++)
          check_query(f->h, prefixes[p], 1, bounds[i], 1, bounds[j], order, 1,
                      9);
      }
    }
  }
  /* a callback that stops */
  collect c;
  memset(&c, 0, sizeof c);
  lc_tally_list_opts o;
  memset(&o, 0, sizeof o);
  o.order = LC_TALLY_BY_TOTAL_DESC;
  o.cb = collect_cb;
  o.arg = &c;
  o.limit = 1;
  uint64_t count = 0;
  assert_ok(lc_tally_list(f->h, &o, &count));
  assert_i64_eq(count, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_add_get_flush, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_get_keeps_no_state, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_bad_input, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_sync_and_remote, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_memcached_loss, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_rewind_twice, tu_setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_rewind_before_loss, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_mget_closed_server, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_rewind_between, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_carry_at_failed_flush, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_list_brute_force, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_one_write_per_window, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_threads_exact, tu_setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_sigkill_flusher, tu_setup,
                                      tu_teardown),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
