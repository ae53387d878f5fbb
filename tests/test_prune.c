/*
 * test_prune.c - lc_prune (unique; no gap without a failure): each criterion (keep, below,
 * older_than_us) and their combination deletes exactly the oldest records
 * up to the first one a criterion keeps; the newest record and the
 * reservation are never deleted (below = INT64_MAX still keeps one); after
 * a prune and a memcached wipe the next id continues right above every id
 * handed out, also across close and reopen; prune while other threads
 * allocate; and a prune of 1,000,000 records (divided by LC_TEST_SCALE; all
 * but the newest 10,000 written straight into the closed log with the
 * library's own encoding, since one lc_next per record would spend minutes
 * on memcached round trips; the rest made with lc_next on top) leaving the
 * newest record, the reservation, and records that iterate in order
 * without overlap or corruption.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "base/format.h"
#include "mcd.h"
#include "plant.h"

static int64_t fill(lc_t *h, const char *name, long n) {
  int64_t v = 0;
  for (long i = 0; i < n; i++) assert_ok(lc_next(h, name, &v));
  return v;
}

static int64_t reservation(lc_t *h, const char *name) {
  int64_t r = -1;
  assert_ok(lc_reservation(h, name, &r));
  return r;
}

/* Records must be ascending, non-overlapping, decodable; returns count. */
static long check_records(lc_t *h, const char *name, int64_t want_first,
                          int64_t want_last) {
  lc_record *r;
  long n = tu_records(h, name, &r);
  if (n < 0)
    fail_msg("iterating %s: %s (%s)", name, lc_err_name((int)n),
             lc_last_detail());
  for (long i = 0; i < n; i++) {
    assert_int_equal(r[i].count, (uint64_t)(r[i].last - r[i].first + 1));
    if (i) assert_i64_op(r[i].first, >, r[i - 1].last);
  }
  if (n > 0) {
    if (want_first) assert_i64_eq(r[0].first, want_first);
    assert_i64_eq(r[n - 1].last, want_last);
  }
  free(r);
  return n;
}

static lc_prune_result prune(lc_t *h, const char *name, lc_prune_opts o) {
  lc_prune_result res = {99, 99, 99};
  assert_ok(lc_prune(h, name, &o, &res));
  return res;
}

static void test_prune_keep(void **state) {
  fx_t *f = *state;
  int64_t last = fill(f->h, "k", 100);
  int64_t res = reservation(f->h, "k");
  lc_prune_result r = prune(f->h, "k", (lc_prune_opts){.keep = 10});
  assert_int_equal(r.deleted, 90);
  assert_int_equal(r.kept, 10);
  assert_int_equal(check_records(f->h, "k", 91, 100), 10);
  assert_i64_eq(reservation(f->h, "k"), res);
  /* keep more than there are: nothing */
  r = prune(f->h, "k", (lc_prune_opts){.keep = 1000});
  assert_int_equal(r.deleted, 0);
  assert_int_equal(r.kept, 10);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "k"), last + 1);
}

static void test_prune_below(void **state) {
  fx_t *f = *state;
  int64_t last = fill(f->h, "b", 100);
  lc_prune_result r = prune(f->h, "b", (lc_prune_opts){.below = 50});
  assert_int_equal(r.deleted, 49);
  assert_int_equal(r.kept, 51);
  assert_int_equal(check_records(f->h, "b", 50, 100), 51);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "b"), last + 1);
  /* Blocks: a record is deleted only when its last value is below. */
  int64_t first;
  for (int i = 0; i < 10; i++) assert_ok(lc_next_n(f->h, "bb", 10, &first));
  r = prune(f->h, "bb", (lc_prune_opts){.below = 15}); /* [11,20] stays */
  assert_int_equal(r.deleted, 1);
  assert_int_equal(check_records(f->h, "bb", 11, 100), 9);
  r = prune(f->h, "bb", (lc_prune_opts){.below = 41}); /* up to [31,40] */
  assert_int_equal(r.deleted, 3);
  assert_int_equal(check_records(f->h, "bb", 41, 100), 6);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "bb"), 101);
}

static void test_prune_older_than(void **state) {
  fx_t *f = *state;
  fill(f->h, "o", 50);
  sleep_ms(20);
  int64_t mid = now_us();
  sleep_ms(20);
  int64_t last = fill(f->h, "o", 50);
  lc_prune_result r = prune(f->h, "o", (lc_prune_opts){.older_than_us = mid});
  assert_int_equal(r.deleted, 50);
  assert_int_equal(r.kept, 50);
  lc_record *rec;
  assert_int_equal(tu_records(f->h, "o", &rec), 50);
  for (int i = 0; i < 50; i++) assert_i64_op(rec[i].time_us, >=, mid);
  assert_i64_eq(rec[0].first, 51);
  free(rec);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "o"), last + 1);
}

static void test_prune_combined(void **state) {
  fx_t *f = *state;
  int64_t last = fill(f->h, "c", 100);
  /* Deletes up to the first record that any criterion keeps. */
  lc_prune_result r =
      prune(f->h, "c", (lc_prune_opts){.keep = 90, .below = 50});
  assert_int_equal(r.deleted, 10); /* keep stops at 11 */
  r = prune(f->h, "c", (lc_prune_opts){.keep = 10, .below = 50});
  assert_int_equal(r.deleted, 39); /* below stops at 50 */
  r = prune(f->h, "c", (lc_prune_opts){.keep = 10, .below = 95});
  assert_int_equal(r.deleted, 41); /* keep stops at 91 */
  assert_int_equal(r.kept, 10);
  r = prune(f->h, "c", (lc_prune_opts){.below = 95, .older_than_us = 1});
  assert_int_equal(r.deleted, 0); /* nothing that old */
  assert_int_equal(check_records(f->h, "c", 91, 100), 10);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "c"), last + 1);
}

static void test_prune_never_newest(void **state) {
  fx_t *f = *state;
  int64_t last = fill(f->h, "n", 30);
  int64_t res = reservation(f->h, "n");
  assert_i64_op(res, >=, last);
  lc_prune_result r = prune(f->h, "n", (lc_prune_opts){.below = INT64_MAX});
  assert_int_equal(r.deleted, 29);
  assert_int_equal(r.kept, 1);
  assert_int_equal(check_records(f->h, "n", last, last), 1);
  assert_i64_eq(reservation(f->h, "n"), res);
  r = prune(f->h, "n",
            (lc_prune_opts){.older_than_us = now_us() + 3600000000LL});
  assert_int_equal(r.deleted, 0);
  assert_int_equal(r.kept, 1);
  r = prune(f->h, "n",
            (lc_prune_opts){
                .keep = 1, .below = INT64_MAX, .older_than_us = INT64_MAX});
  assert_int_equal(r.deleted, 0);
  assert_int_equal(r.kept, 1);
  assert_i64_eq(reservation(f->h, "n"), res);
  /* A counter without records. */
  r = prune(f->h, "nothing", (lc_prune_opts){.below = INT64_MAX});
  assert_int_equal(r.deleted, 0);
  assert_int_equal(r.kept, 0);
  /* memcached wiped: the next id continues above. */
  assert_ok(mcd_flush_all(&mc));
  int64_t v = tu_next1(f->h, "n");
  assert_i64_eq(v, last + 1);
  /* Prune again, close, wipe, reopen: still above everything. */
  r = prune(f->h, "n", (lc_prune_opts){.below = INT64_MAX});
  assert_int_equal(r.deleted, 1);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "n"), v + 1);
}

static void test_prune_bad_options(void **state) {
  fx_t *f = *state;
  fill(f->h, "bad", 5);
  lc_prune_result r;
  lc_prune_opts o = {.below = -1};
  assert_rc(lc_prune(f->h, "bad", &o, &r), LC_EINVAL);
  o = (lc_prune_opts){.older_than_us = -1};
  assert_rc(lc_prune(f->h, "bad", &o, &r), LC_EINVAL);
  o = (lc_prune_opts){.keep = 1};
  assert_rc(lc_prune(f->h, "bad", &o, NULL), LC_EINVAL);
  assert_int_equal(check_records(f->h, "bad", 1, 5), 5);
}

/* ---- prune while allocating -------------------------------------------- */

typedef struct alloc_arg {
  lc_t *h;
  long n;
  int64_t *ids;
  int rc;
  atomic_int done;
} alloc_arg;

static void *alloc_main(void *p) {
  alloc_arg *a = p;
  for (long i = 0; i < a->n; i++) {
    a->rc = lc_next(a->h, "pc", &a->ids[i]);
    if (a->rc) break;
  }
  atomic_store(&a->done, 1);
  return NULL;
}

static void test_prune_while_allocating(void **state) {
  fx_t *f = *state;
  enum { T = 3 };
  long per = scaled(20000, 500);
  alloc_arg a[T];
  pthread_t t[T];
  fill(f->h, "pc", 10);
  for (int i = 0; i < T; i++) {
    a[i].h = f->h;
    a[i].n = per;
    a[i].rc = 0;
    atomic_init(&a[i].done, 0);
    a[i].ids = calloc((size_t)per, sizeof(int64_t));
    assert_non_null(a[i].ids);
    assert_int_equal(pthread_create(&t[i], NULL, alloc_main, &a[i]), 0);
  }
  long prunes = 0;
  uint64_t deleted = 0;
  for (;;) {
    int running = 0;
    for (int i = 0; i < T; i++)
      if (!atomic_load(&a[i].done)) running = 1;
    if (!running && prunes > 0) break;
    lc_prune_result r =
        prune(f->h, "pc", (lc_prune_opts){.keep = 1 + (uint64_t)(prunes % 3)});
    deleted += r.deleted;
    prunes++;
    sleep_ms(2);
  }
  int64_t *all = malloc((size_t)(T * per) * sizeof *all);
  assert_non_null(all);
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    assert_rc(a[i].rc, 0);
    assert_int_equal(first_non_increasing(a[i].ids, (size_t)per), (size_t)-1);
    memcpy(all + i * per, a[i].ids, (size_t)per * sizeof *all);
    free(a[i].ids);
  }
  printf("# %ld prunes deleted %llu records during the run\n", prunes,
         (unsigned long long)deleted);
  assert_int_equal(count_duplicates(all, (size_t)(T * per)), 0);
  int64_t max = all[T * per - 1];
  check_records(f->h, "pc", 0, max); /* the newest record is there */
  assert_i64_op(reservation(f->h, "pc"), >=, max);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "pc"), max + 1);
  free(all);
}

/* ---- one million records ------------------------------------------------ */

typedef struct progress_log {
  long calls;
  uint64_t last_scanned, last_deleted;
  int went_back;
} progress_log;

static void on_progress(void *arg, uint64_t scanned, uint64_t deleted) {
  progress_log *p = arg;
  if (scanned < p->last_scanned || deleted < p->last_deleted ||
      deleted > scanned)
    p->went_back = 1;
  p->last_scanned = scanned;
  p->last_deleted = deleted;
  p->calls++;
}

/* Writes records 1..n of counter name (one id each) into the closed log at
 * dir, in batches, exactly as the library encodes them. */
static void write_records(const char *dir, const char *name, long n) {
  char path[4096], *err = NULL;
  snprintf(path, sizeof path, "%s/db", dir);
  if (tu_plant(path, name, 1, n, lc__clock_now_us(), 0, &err))
    fail_msg("planting %s in %s: %s", name, path, err);
}

static void test_prune_million(void **state) {
  fx_t *f = *state;
  long n = scaled(1000000, 20000);
  const long by_next = 10000;
  const uint64_t keep = 1000;
  int64_t t0 = mono_us();
  assert_ok(lc_close(f->h));
  f->h = NULL;
  write_records(f->dir, "m", n - by_next);
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(fill(f->h, "m", by_next), n);
  int64_t last = n;
  assert_i64_eq(last, n);
  int64_t t1 = mono_us();
  int64_t res = reservation(f->h, "m");
  assert_i64_op(res, >=, last);
  progress_log pl = {0};
  lc_prune_opts o = {
      .keep = keep, .progress = on_progress, .progress_arg = &pl};
  lc_prune_result r = {0};
  assert_ok(lc_prune(f->h, "m", &o, &r));
  int64_t t2 = mono_us();
  printf(
      "# %ld records made in %.1f s, pruned in %.1f s (%ld progress calls)\n",
      n, (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6, pl.calls);
  assert_int_equal(r.deleted, (uint64_t)n - keep);
  assert_int_equal(r.kept, keep);
  assert_true(pl.calls >= 1);
  assert_false(pl.went_back);
  assert_int_equal(pl.last_deleted, r.deleted);
  /* verify: what is left is in order, decodable, ends with the newest. */
  assert_int_equal(check_records(f->h, "m", last - (int64_t)keep + 1, last),
                   (long)keep);
  assert_i64_eq(reservation(f->h, "m"), res);
  /* The restore's reverse seek still finds the newest record. */
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "m"), last + 1);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "m"), last + 2);
  assert_int_equal(check_records(f->h, "m", last - (int64_t)keep + 1, last + 2),
                   (long)keep + 2);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup, tu_teardown)
      T(test_prune_keep),
      T(test_prune_below),
      T(test_prune_older_than),
      T(test_prune_combined),
      T(test_prune_never_newest),
      T(test_prune_bad_options),
      T(test_prune_while_allocating),
      T(test_prune_million),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
