/*
 * test_evict.c - idle eviction (lc_options.idle_evict_ms, src/evict.c)
 * against a real memcached; run under ThreadSanitizer by .ci/run:
 *  - idle counters, with and without prefetch, are evicted (lc_stats
 *    counts them, none is left in memory), memcached stands exactly at
 *    their last value, and each goes on at exactly last + 1, loaded from
 *    the log, with nothing unexplained in its ledger;
 *  - after eviction and a memcached flush, a counter is restored from the
 *    log above everything handed out;
 *  - a released counter, evicted and loaded again, is still released
 *    until lc_adopt;
 *  - memcached frozen during passes: the counters whose segments could
 *    not be given back stay, and go on above their last value after the
 *    thaw with every gap explained, then are evicted;
 *  - 8 threads on 64 names whose working set moves (by the clock), so that
 *    names go idle,
 *    are evicted and come back while others allocate, with a racer that
 *    advances or restores them and flushes memcached: per name no value
 *    repeats,
 *    each thread's values of a name increase, evictions happened, and
 *    after lc_close a new handle goes on above all of them;
 *  - the same without the racer: every gap of every name is explained;
 *  - a process killed while names are evicted and reloaded: a new handle
 *    goes on above everything it handed out, every gap explained;
 *  - many counters at once (more than ten passes' worth, first used in
 *    batches by lc_next_each): every one is evicted, and each, reloaded in
 *    batches again, goes on at exactly last + 1;
 *  - a negative idle_evict_ms is refused;
 *  - idle flushed tallies are evicted (lc_stats: tally_evictions, none
 *    left in memory) while one with changes not flushed stays; each
 *    reloads exactly (total, losses, lost amounts), also after a
 *    memcached flush while evicted (which lost nothing: no loss counted);
 *    a sweep does not bring them back into memory; a new handle agrees;
 *  - 4 threads change 16 tallies in bursts (so that they go idle, are
 *    flushed by a flusher thread, evicted and loaded again meanwhile):
 *    each total ends exactly at the sum of the changes acknowledged.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcd.h"

#define NAMES 64

static int open_evict(const char *dir, uint64_t prefetch, int64_t idle_ms,
                      lc_t **out) {
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options(&o, &mc, dir, path);
  o.prefetch = prefetch;
  o.idle_evict_ms = idle_ms;
  return lc_open(&o, out);
}

/* Waits (up to 10 s) until at least n evictions have happened. */
static void wait_evictions(lc_t *h, uint64_t n) {
  lc_stats st = {0};
  for (int i = 0; i < 1000; i++) {
    assert_ok(lc_get_stats(h, &st));
    if (st.evictions >= n) return;
    sleep_ms(10);
  }
  fail_msg("%llu evictions after 10 s, expected %llu",
           (unsigned long long)st.evictions, (unsigned long long)n);
}

static void name_of(char *buf, size_t n, int i) {
  snprintf(buf, n, "ev%02d", i);
}

static void exact(void **state, uint64_t prefetch) {
  fx_t *f = *state;
  enum { N = 40 };
  int64_t last[N];
  char name[32];
  assert_ok(open_evict(f->dir, prefetch, 40, &f->h));
  for (int i = 0; i < N; i++) {
    name_of(name, sizeof name, i);
    for (int j = 0; j <= i; j++) last[i] = tu_next1(f->h, name);
  }
  wait_evictions(f->h, N);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.counters, 0);
  for (int i = 0; i < N; i++) {
    name_of(name, sizeof name, i);
    assert_i64_eq(mcd_counter_value(&mc, name), last[i]); /* set back */
    assert_i64_eq(tu_next1(f->h, name), last[i] + 1);     /* reloaded */
    tu_check_explained(f->h, name);
  }
}

static void test_exact_prefetch(void **state) {
  exact(state, LC_PREFETCH_AUTO);
}

static void test_exact_per_id(void **state) { exact(state, 0); }

static void test_reload_after_flush(void **state) {
  fx_t *f = *state;
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 40, &f->h));
  int64_t v = 0;
  for (int i = 0; i < 500; i++) v = tu_next1(f->h, "flushed");
  wait_evictions(f->h, 1);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_op(tu_next1(f->h, "flushed"), >, v);
  tu_check_explained(f->h, "flushed");
}

/* memcached frozen while a pass evicts: the lowering fails (once, then
 * is not tried again in that pass), the counters stay with their gap
 * pending, and after the thaw each goes on above its last value with
 * every gap explained. */
static void test_frozen_memcached(void **state) {
  fx_t *f = *state;
  lc_options o;
  char path[TU_PATH_MAX], name[32];
  tu_options(&o, &mc, f->dir, path);
  o.prefetch = LC_PREFETCH_AUTO;
  o.idle_evict_ms = 40;
  o.timeout_ms = 200;
  assert_ok(lc_open(&o, &f->h));
  enum { N = 20 };
  int64_t last[N];
  for (int i = 0; i < N; i++) {
    name_of(name, sizeof name, i);
    last[i] = tu_next1(f->h, name);
  }
  assert_int_equal(mcd_freeze(&mc), 0);
  sleep_ms(600); /* passes run against the frozen memcached */
  assert_int_equal(mcd_thaw(&mc), 0);
  int jumped = 0; /* not given back: the segment's rest is a gap */
  for (int i = 0; i < N; i++) {
    name_of(name, sizeof name, i);
    int64_t v = tu_next1(f->h, name);
    assert_i64_op(v, >, last[i]);
    jumped += v > last[i] + 1;
    tu_check_explained(f->h, name);
  }
  assert_true(jumped > 0); /* the pass did meet the frozen memcached */
  wait_evictions(f->h, N); /* and, memcached back, they are evicted */
}

/* A released counter, evicted, stays released when loaded again (the
 * refusal is in the log): EOWNED until lc_adopt, then above its final
 * value. */
static void test_released_stays(void **state) {
  fx_t *f = *state;
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 40, &f->h));
  int64_t v = 0, final = 0;
  for (int i = 0; i < 100; i++) v = tu_next1(f->h, "rel");
  assert_ok(lc_release(f->h, "rel", &final));
  assert_i64_op(final, >=, v);
  wait_evictions(f->h, 1);
  assert_rc(lc_next(f->h, "rel", &v), LC_EOWNED);
  assert_ok(lc_adopt(f->h, "rel", final));
  assert_i64_op(tu_next1(f->h, "rel"), >, final);
  tu_check_explained(f->h, "rel");
}

/* ---- threads on a moving working set ---- */

typedef struct th {
  pthread_t t;
  lc_t *h;
  int id;
  long n;             /* calls at least; then on until *enough */
  atomic_bool *enough;
  int64_t t0;         /* mono_us() at the start: the window's clock */
  int rc;
  int64_t *v[NAMES]; /* values received, per name, in order */
  size_t got[NAMES], cap[NAMES];
} th;

static void *th_main(void *p) {
  th *a = p;
  unsigned seed = (unsigned)a->id * 7919u + 1;
  char name[32];
  for (long i = 0; i < a->n || !atomic_load(a->enough); i++) {
    /* 8 names at a time, the window moving by two every 10 ms: each name
     * is used for 40 ms, then idle for 280 ms (evicted: idle_evict_ms is
     * 20), and comes back when the window wraps */
    int base = (int)((mono_us() - a->t0) / 10000 * 2 % NAMES);
    int k = (base + (int)(rand_r(&seed) % 8)) % NAMES;
    uint64_t count = 1 + (uint64_t)(rand_r(&seed) % 3);
    int64_t first;
    name_of(name, sizeof name, k);
    int rc = lc_next_n(a->h, name, count, &first);
    if (rc) {
      a->rc = rc;
      break;
    }
    for (uint64_t j = 0; j < count; j++) {
      if (a->got[k] == a->cap[k]) {
        a->cap[k] = a->cap[k] ? 2 * a->cap[k] : 256;
        a->v[k] = realloc(a->v[k], a->cap[k] * sizeof *a->v[k]);
      }
      a->v[k][a->got[k]++] = first + (int64_t)j;
    }
    if (i % 64 == 0) sleep_ms(1); /* let names go idle */
  }
  return NULL;
}

typedef struct racer {
  lc_t *h;
  atomic_bool stop;
  int advances, flushes, rc;
} racer;

static void *race_main(void *p) {
  racer *r = p;
  unsigned seed = 99;
  char name[32];
  for (int i = 0; !atomic_load(&r->stop); i++) {
    sleep_ms(3);
    name_of(name, sizeof name, (int)(rand_r(&seed) % NAMES));
    int64_t cur = 0;
    int rc = lc_current(r->h, name, &cur);
    if (!rc) rc = i % 2 ? lc_advance(r->h, name, cur + 50)
                        : lc_restore(r->h, name, &cur);
    if (rc && !r->rc) r->rc = rc;
    r->advances += rc == 0;
    if (i % 20 == 19 && mcd_flush_all(&mc) == 0) r->flushes++;
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void moving(void **state, uint64_t prefetch, bool race) {
  fx_t *f = *state;
  enum { T = 8 };
  assert_ok(open_evict(f->dir, prefetch, 20, &f->h));
  th *a = calloc(T, sizeof *a);
  atomic_bool enough = false;
  int64_t t0 = mono_us();
  assert_non_null(a);
  for (int i = 0; i < T; i++) {
    a[i].h = f->h;
    a[i].id = i;
    a[i].n = scaled(6000, 600);
    a[i].enough = &enough;
    a[i].t0 = t0;
    assert_int_equal(pthread_create(&a[i].t, NULL, th_main, &a[i]), 0);
  }
  racer r = {.h = f->h};
  pthread_t rt;
  if (race) assert_int_equal(pthread_create(&rt, NULL, race_main, &r), 0);
  /* the threads go on (past their calls) until names have been evicted
   * while they ran: a short run (a sanitizer's scale) might see none */
  lc_stats st0 = {0};
  for (int i = 0; i < 2000 && st0.evictions < NAMES; i++) {
    sleep_ms(10);
    assert_ok(lc_get_stats(f->h, &st0));
  }
  atomic_store(&enough, true);
  for (int i = 0; i < T; i++) pthread_join(a[i].t, NULL);
  if (race) {
    atomic_store(&r.stop, true);
    pthread_join(rt, NULL);
    assert_ok(r.rc);
    assert_true(r.advances > 0);
  }
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  print_message("%llu evictions, %llu skipped passes\n",
                (unsigned long long)st.evictions,
                (unsigned long long)st.eviction_skips);
  assert_true(st.evictions >= NAMES); /* names evicted while others ran */
  int64_t max[NAMES] = {0};
  char name[32];
  for (int k = 0; k < NAMES; k++) {
    size_t n = 0;
    for (int i = 0; i < T; i++) n += a[i].got[k];
    int64_t *all = malloc((n + 1) * sizeof *all);
    assert_non_null(all);
    n = 0;
    for (int i = 0; i < T; i++) {
      assert_ok(a[i].rc);
      if (first_non_increasing(a[i].v[k], a[i].got[k]) != (size_t)-1)
        fail_msg("thread %d: ev%02d went down", i, k);
      if (a[i].got[k] > 0) /* a short run may give a thread none */
        memcpy(all + n, a[i].v[k], a[i].got[k] * sizeof *all);
      n += a[i].got[k];
    }
    qsort(all, n, sizeof *all, cmp64);
    for (size_t j = 1; j < n; j++)
      if (all[j] == all[j - 1])
        fail_msg("ev%02d: %lld handed out twice", k, (long long)all[j]);
    max[k] = n ? all[n - 1] : 0;
    free(all);
    if (!race) {
      name_of(name, sizeof name, k);
      tu_check_explained(f->h, name);
    }
  }
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(open_evict(f->dir, prefetch, 20, &f->h));
  for (int k = 0; k < NAMES; k++) {
    name_of(name, sizeof name, k);
    assert_i64_op(tu_next1(f->h, name), >, max[k]);
  }
  for (int i = 0; i < T; i++)
    for (int k = 0; k < NAMES; k++) free(a[i].v[k]);
  free(a);
}

static void test_moving_race_prefetch(void **state) {
  moving(state, LC_PREFETCH_AUTO, true);
}

static void test_moving_race_per_id(void **state) { moving(state, 0, true); }

static void test_moving_explained(void **state) {
  moving(state, LC_PREFETCH_AUTO, false);
}

/* ---- a crash while names are evicted ---- */

static void child(const char *dir, int fd) {
  lc_t *h;
  if (open_evict(dir, LC_PREFETCH_AUTO, 15, &h)) _exit(3);
  char name[32];
  for (long i = 0;; i++) {
    int k = (int)(i / 200 % 16); /* each name idles while the others run */
    name_of(name, sizeof name, k);
    int64_t v;
    if (lc_next(h, name, &v)) _exit(4);
    int64_t rec[2] = {k, v};
    if (write(fd, rec, sizeof rec) != (ssize_t)sizeof rec) _exit(5);
    if (i % 100 == 0) usleep(2000);
  }
}

static void test_crash_while_evicting(void **state) {
  fx_t *f = *state;
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    child(f->dir, p[1]);
  }
  close(p[1]);
  int64_t max[16] = {0}, rec[2];
  long n = 0;
  while (n < 6000 && read(p[0], rec, sizeof rec) == (ssize_t)sizeof rec) {
    assert_true(rec[0] >= 0 && rec[0] < 16);
    if (rec[1] <= max[rec[0]]) fail_msg("ev%02lld went down", (long long)rec[0]);
    max[rec[0]] = rec[1];
    n++;
  }
  assert_int_equal(kill(pid, SIGKILL), 0);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status)); /* killed, not failed */
  close(p[0]);
  assert_int_equal(n, 6000);
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 15, &f->h));
  lc_stats st;
  char name[32];
  for (int k = 0; k < 16; k++) {
    name_of(name, sizeof name, k);
    assert_i64_op(tu_next1(f->h, name), >, max[k]);
    tu_check_explained(f->h, name);
  }
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.errors, 0);
}

/* Passes take at most 512 counters each and walk on from where the last
 * one filled up: none may be left behind. */
static void test_many_evicted(void **state) {
  fx_t *f = *state;
  enum { N = 6000, PER = 100 };
  static char names[N][16];
  static lc_each v[N];
  static int64_t last[N];
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 40, &f->h));
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "many%d", i);
    v[i] = (lc_each){.name = names[i], .n = (uint64_t)(i % 3 + 1)};
  }
  for (int i = 0; i < N; i += PER) assert_ok(lc_next_each(f->h, v + i, PER));
  for (int i = 0; i < N; i++) last[i] = v[i].first + (int64_t)v[i].n - 1;
  wait_evictions(f->h, N);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.counters, 0);
  for (int i = 0; i < N; i++) v[i] = (lc_each){.name = names[i], .n = 1};
  for (int i = 0; i < N; i += PER) assert_ok(lc_next_each(f->h, v + i, PER));
  for (int i = 0; i < N; i++) assert_i64_eq(v[i].first, last[i] + 1);
  tu_check_explained(f->h, names[0]);
  tu_check_explained(f->h, names[N - 1]);
}

static void wait_tally_evictions(lc_t *h, uint64_t n) {
  lc_stats st = {0};
  for (int i = 0; i < 1000; i++) {
    assert_ok(lc_get_stats(h, &st));
    if (st.tally_evictions >= n) return;
    sleep_ms(10);
  }
  fail_msg("%llu tally evictions after 10 s, expected %llu",
           (unsigned long long)st.tally_evictions, (unsigned long long)n);
}

/* total, losses and lost amounts as h reports them (loading the tally if
 * h keeps it). */
static void tally_state(lc_t *h, const char *name, int64_t *total,
                        uint64_t *losses, uint64_t *lp, uint64_t *lm) {
  int64_t pending;
  assert_ok(lc_tally_get(h, name, total, &pending, losses));
  assert_i64_eq(pending, 0);
  assert_ok(lc_tally_lost(h, name, lp, lm));
}

static void test_tallies_evicted(void **state) {
  fx_t *f = *state;
  enum { N = 40 };
  char name[32];
  int64_t total[N + 1];
  uint64_t losses[N + 1], lp[N + 1], lm[N + 1];
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 40, &f->h));
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tev%02d", i);
    for (int j = 0; j <= i % 5; j++)
      assert_ok(lc_tally_add(f->h, name, j % 2 ? -(i + 3) : 10 * i + j + 1));
  }
  /* tev00 loses acknowledged changes: 7 up, 4 down, measured at flush */
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  assert_ok(lc_tally_add(f->h, "tev00", 7));
  assert_ok(lc_tally_add(f->h, "tev00", -4));
  assert_ok(mcd_delete(&mc, "lt+:tev00"));
  assert_ok(mcd_delete(&mc, "lt-:tev00"));
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tev%02d", i);
    tally_state(f->h, name, &total[i], &losses[i], &lp[i], &lm[i]);
  }
  assert_i64_eq(total[0], 1);
  assert_int_equal(lp[0], 7);
  assert_int_equal(lm[0], 4);
  assert_int_equal(losses[0], 1);
  wait_tally_evictions(f->h, N);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.tallies, 0);
  uint64_t tally_losses = st.tally_losses;
  /* memcached loses every sum while they are out of memory */
  assert_ok(mcd_flush_all(&mc));
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tev%02d", i);
    int64_t t, after;
    uint64_t l, p, m;
    /* reload through a change: the total goes on from exactly where it
     * was, and nothing is counted lost */
    assert_ok(lc_tally_add_total(f->h, name, 2, &after));
    assert_i64_eq(after, total[i] + 2);
    assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
    tally_state(f->h, name, &t, &l, &p, &m);
    assert_i64_eq(t, total[i] + 2);
    assert_int_equal(l, losses[i]);
    assert_int_equal(p, lp[i]);
    assert_int_equal(m, lm[i]);
    total[i] += 2;
  }
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.tally_losses, tally_losses);
  assert_int_equal(st.tally_lost_amount, 7 + 4);
  /* one tally keeps a change not flushed (a long window): it stays while
   * the others are evicted again; a sweep, memcached as they left it,
   * loads none of them */
  assert_ok(lc_tally_set_window(f->h, 3600));
  assert_ok(lc_tally_add(f->h, "tevpending", 5));
  wait_tally_evictions(f->h, 2 * N);
  sleep_ms(200); /* many passes: tevpending is not evicted */
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.tallies, 1);
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_SWEEP, NULL));
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.tallies, 1);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  /* a new handle: the totals, the pending change, the losses */
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 0, &f->h));
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, NULL));
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof name, "tev%02d", i);
    int64_t t;
    uint64_t l, p, m;
    tally_state(f->h, name, &t, &l, &p, &m);
    assert_i64_eq(t, total[i]);
    assert_int_equal(l, losses[i]);
    assert_int_equal(p, lp[i]);
    assert_int_equal(m, lm[i]);
  }
  int64_t t;
  uint64_t l, p, m;
  tally_state(f->h, "tevpending", &t, &l, &p, &m);
  assert_i64_eq(t, 5);
  assert_int_equal(l + p + m, 0);
}

enum { TR_NAMES = 16, TR_THREADS = 4 };
typedef struct trace {
  pthread_t t;
  lc_t *h;
  int id;
  int64_t sum[TR_NAMES];
  int failures;
} trace;
static atomic_bool tr_stop;

static void *tr_adder(void *p) {
  trace *x = p;
  char name[32];
  for (int round = 0; round < 12; round++) {
    /* a burst on a quarter of the names, then idle past the idle time */
    for (int k = 0; k < 40; k++) {
      int i = (round * 4 + x->id + k) % TR_NAMES;
      if (i % 4 != round % 4) continue;
      snprintf(name, sizeof name, "trace%02d", i);
      int64_t d = (k % 3 == 2) ? -(x->id + 1) : (k + 1);
      if (lc_tally_add(x->h, name, d) == 0)
        x->sum[i] += d;
      else
        x->failures++;
    }
    sleep_ms(60);
  }
  return NULL;
}

static void *tr_flusher(void *p) {
  lc_t *h = p;
  while (!atomic_load(&tr_stop)) {
    lc_tally_flush(h, 0, LC_TALLY_FORCE, NULL);
    sleep_ms(15);
  }
  return NULL;
}

static void test_tallies_evicted_racing(void **state) {
  fx_t *f = *state;
  static trace x[TR_THREADS];
  pthread_t fl;
  assert_ok(open_evict(f->dir, LC_PREFETCH_AUTO, 40, &f->h));
  atomic_store(&tr_stop, false);
  assert_int_equal(pthread_create(&fl, NULL, tr_flusher, f->h), 0);
  for (int i = 0; i < TR_THREADS; i++) {
    x[i] = (trace){.h = f->h, .id = i};
    assert_int_equal(pthread_create(&x[i].t, NULL, tr_adder, &x[i]), 0);
  }
  for (int i = 0; i < TR_THREADS; i++) pthread_join(x[i].t, NULL);
  atomic_store(&tr_stop, true);
  pthread_join(fl, NULL);
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  printf("%llu tally evictions, %llu skipped passes\n",
         (unsigned long long)st.tally_evictions,
         (unsigned long long)st.eviction_skips);
  assert_true(st.tally_evictions > 0);
  assert_int_equal(st.tally_losses, 0);
  char name[32];
  for (int i = 0; i < TR_NAMES; i++) {
    int64_t want = 0, total, pending;
    uint64_t losses;
    for (int t = 0; t < TR_THREADS; t++) {
      want += x[t].sum[i];
      assert_int_equal(x[t].failures, 0);
    }
    snprintf(name, sizeof name, "trace%02d", i);
    assert_ok(lc_tally_get(f->h, name, &total, &pending, &losses));
    assert_i64_eq(total + pending, want);
    assert_int_equal(losses, 0);
  }
}

static void test_negative_refused(void **state) {
  fx_t *f = *state;
  lc_t *h = NULL;
  assert_rc(open_evict(f->dir, 0, -1, &h), LC_EINVAL);
  assert_null(h);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup_dir, tu_teardown)
      T(test_exact_prefetch),
      T(test_exact_per_id),
      T(test_reload_after_flush),
      T(test_frozen_memcached),
      T(test_released_stays),
      T(test_moving_race_prefetch),
      T(test_moving_race_per_id),
      T(test_moving_explained),
      T(test_crash_while_evicting),
      T(test_many_evicted),
      T(test_negative_refused),
      T(test_tallies_evicted),
      T(test_tallies_evicted_racing),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
