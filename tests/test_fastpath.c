/*
 * test_fastpath.c - the lock-free paths of lc_next with prefetch
 * (src/seg_fast.c's window on the current segment, the per-thread name
 * cache, the striped call counts), raced by what may change a counter
 * under them, against a real memcached; run under ThreadSanitizer by
 * .ci/run:
 *  - 32 threads on one counter, blocks of 1 to 5, while another thread
 *    advances it and flushes memcached: each thread's values increase,
 *    none repeats across threads, lc_get_stats counts every id once, and
 *    after lc_close a new handle goes on above all of them;
 *  - 16 threads while the counter is released (once 1,000 ids went out):
 *    some are stopped by it, every call fails with LC_EOWNED once it is, every value handed out is at most the final
 *    value lc_release reported, and after lc_adopt the counter goes on
 *    above it;
 *  - 8 threads, then lc_close: a new handle goes on at exactly the
 *    largest value + 1 (the window's takes are all given back exactly);
 *  - two handles in one thread with the same names: the name cache never
 *    hands one handle's counter to the other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcd.h"

typedef struct th {
  pthread_t t;
  lc_t *h;
  const char *name;
  long n, got;  /* calls to make; values received */
  int64_t *v;   /* every value received, in order */
  int rc;       /* the first error */
  bool yield;   /* give the CPU up now and then (so a racer runs) */
} th;

static void *th_main(void *p) {
  th *a = p;
  unsigned seed = (unsigned)(uintptr_t)a;
  for (long i = 0; i < a->n; i++) {
    uint64_t k = 1 + (uint64_t)(rand_r(&seed) % 5);
    int64_t first;
    int rc = lc_next_n(a->h, a->name, k, &first);
    if (rc) {
      a->rc = rc;
      break;
    }
    for (uint64_t j = 0; j < k; j++) a->v[a->got++] = first + (int64_t)j;
    if (a->yield && i % 512 == 511) sched_yield();
  }
  return NULL;
}

/* Starts t threads of n calls each on name; all[] gets room for 5n each. */
static th *start_yielding(lc_t *h, const char *name, int t, long n,
                          int64_t **all, bool yield) {
  th *a = calloc((size_t)t, sizeof *a);
  *all = malloc(sizeof **all * (size_t)(5 * n * t));
  assert_non_null(a);
  assert_non_null(*all);
  for (int i = 0; i < t; i++) {
    a[i] = (th){.h = h, .name = name, .n = n, .v = *all + 5 * n * i,
                .yield = yield};
    assert_int_equal(pthread_create(&a[i].t, NULL, th_main, &a[i]), 0);
  }
  return a;
}

static th *start(lc_t *h, const char *name, int t, long n, int64_t **all) {
  return start_yielding(h, name, t, n, all, false);
}

/* Joins them; the values gathered at the front of all (their count) and
 * the largest in *max; each thread's increase. */
static size_t join(th *a, int t, int64_t *all, int64_t *max) {
  size_t n = 0;
  *max = 0;
  for (int i = 0; i < t; i++) {
    pthread_join(a[i].t, NULL);
    assert_true(first_non_increasing(a[i].v, (size_t)a[i].got) == (size_t)-1);
    for (long j = 0; j < a[i].got; j++) {
      if (a[i].v[j] > *max) *max = a[i].v[j];
      all[n++] = a[i].v[j];
    }
  }
  return n;
}

typedef struct racer {
  lc_t *h;
  const char *name;
  atomic_bool stop;
  int advances, flushes, rc;
} racer;

static void *race_main(void *p) {
  racer *r = p;
  for (int i = 0; !atomic_load(&r->stop); i++) {
    sleep_ms(2);
    int64_t cur = 0;
    int rc = lc_current(r->h, r->name, &cur);
    if (!rc) rc = lc_advance(r->h, r->name, cur + 700);
    if (rc && !r->rc) r->rc = rc;
    r->advances += rc == 0;
    if (i % 10 == 9 && mcd_flush_all(&mc) == 0) r->flushes++;
  }
  return NULL;
}

static void test_race_advance_flush(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  enum { T = 32 };
  long n = scaled(4000, 200);
  racer r = {.h = f->h, .name = "fw"};
  pthread_t rt;
  int64_t *all, max;
  th *a = start(f->h, "fw", T, n, &all);
  assert_int_equal(pthread_create(&rt, NULL, race_main, &r), 0);
  size_t got = join(a, T, all, &max);
  atomic_store(&r.stop, true);
  pthread_join(rt, NULL);
  for (int i = 0; i < T; i++) assert_ok(a[i].rc);
  assert_ok(r.rc);
  assert_true(r.advances > 0);
  assert_int_equal(count_duplicates(all, got), 0);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.ids, (uint64_t)got);
  assert_int_equal(st.allocations, (uint64_t)(n * T));
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  assert_i64_op(tu_next1(f->h, "fw"), >, max);
  free(a);
  free(all);
}

static void test_race_release(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  enum { T = 16 };
  long n = scaled(60000, 2000);
  int64_t *all, max, final = 0;
  /* they yield now and then, so that this thread gets the CPU while they
   * still run (with 16 busy threads on 2 CPUs it could come back only
   * after all had finished, and the release would race nothing) */
  th *a = start_yielding(f->h, "fr", T, n, &all, true);
  lc_stats st = {0}; /* release while they run: once ids have gone out */
  while (st.ids < 1000) {
    assert_ok(lc_get_stats(f->h, &st));
    sleep_ms(1);
  }
  assert_ok(lc_release(f->h, "fr", &final));
  size_t got = join(a, T, all, &max);
  int owned = 0;
  for (int i = 0; i < T; i++) {
    assert_true(a[i].rc == 0 || a[i].rc == LC_EOWNED);
    owned += a[i].rc == LC_EOWNED;
  }
  assert_true(owned > 0); /* the release did race the callers */
  assert_true(got > 0);
  assert_int_equal(count_duplicates(all, got), 0);
  assert_i64_op(max, <=, final);
  int64_t v;
  assert_rc(lc_next(f->h, "fr", &v), LC_EOWNED);
  assert_ok(lc_adopt(f->h, "fr", final));
  assert_i64_op(tu_next1(f->h, "fr"), >, final);
  free(a);
  free(all);
}

static void test_close_exact(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  enum { T = 8 };
  int64_t *all, max;
  th *a = start(f->h, "fx", T, scaled(5000, 200), &all);
  size_t got = join(a, T, all, &max);
  for (int i = 0; i < T; i++) assert_ok(a[i].rc);
  assert_int_equal(count_duplicates(all, got), 0);
  assert_i64_eq(max, (int64_t)got); /* 1..got, none skipped */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_i64_eq(mcd_counter_value(&mc, "fx"), max); /* set back exactly */
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  assert_i64_eq(tu_next1(f->h, "fx"), max + 1);
  free(a);
  free(all);
}

static void test_cache_per_handle(void **state) {
  fx_t *f = *state;
  char sub[TU_PATH_MAX];
  snprintf(sub, sizeof sub, "%s/second", f->dir);
  assert_int_equal(mkdir(sub, 0700), 0);
  lc_t *h2 = NULL;
  assert_ok(tu_open_prefetch(f->dir, LC_PREFETCH_AUTO, &f->h));
  assert_i64_eq(tu_next1(f->h, "same"), 1);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  /* a handle on another log, perhaps at the same address: its own state */
  assert_ok(tu_open_prefetch(sub, LC_PREFETCH_AUTO, &h2));
  assert_i64_eq(tu_next1(h2, "same"), 1);
  assert_i64_eq(tu_next1(h2, "same"), 2);
  assert_ok(lc_close(h2));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup_dir, tu_teardown)
      T(test_race_advance_flush),
      T(test_race_release),
      T(test_close_exact),
      T(test_cache_per_handle),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
