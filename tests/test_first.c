/*
 * test_first.c - lc_next_each and its batched first uses (src/first.c,
 * src/cache_pipe.c) against real memcached servers; run under both
 * sanitizers by .ci/run:
 *  - a burst of new names, with and without prefetch: each starts at 1,
 *    the first uses of a call share one synced write per chunk (the
 *    stats count the syncs), memcached holds exactly what was taken, and
 *    after a reopen each goes on above, every gap explained;
 *  - the same names after lc_close and a memcached flush: restored from
 *    the log in the batch (one round of seeds), each at exactly last + 1,
 *    still one synced write per chunk;
 *  - a mix in one call: a counter in use, new names, a name twice (two
 *    blocks, the later higher), blocks of several ids, a bad name and a
 *    bad count: each entry answered on its own, the call returns the
 *    first failure's code with its reason;
 *  - a name another log owns: LC_EOWNED for it alone, the refusal kept;
 *  - one of two memcached servers frozen halfway through a burst: the
 *    names on it fail with a timeout and have no record, the others go
 *    on; after the thaw every failed name succeeds, no value twice;
 *  - the pipelined rounds keep their connections (the open descriptors
 *    do not grow), and after a memcached restart a call goes on;
 *  - threads calling lc_next_each on the same new names while others call
 *    lc_next on them: per name no value twice, each thread's increasing;
 *  - the second round of increments (for the keys memcached lost) fails
 *    as a whole (lc__cache_pipe wrapped: -Wl,--wrap): the names whose
 *    blocks the first round took fail too, and their blocks are burned
 *    (ledger: burned, not unlogged), as if their write had failed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mcd.h"

/* -Wl,--wrap=lc__cache_pipe: the pipelined rounds of first.c, passed
 * through, but for the fail_incr_round-th round of increments (counted
 * from the arming), which fails whole with LC_ETIMEDOUT, unsent. */
int __real_lc__cache_pipe(lc__cache *c, lc__op *ops, size_t n);
int __wrap_lc__cache_pipe(lc__cache *c, lc__op *ops, size_t n);
static int fail_incr_round; /* 0: never */
int __wrap_lc__cache_pipe(lc__cache *c, lc__op *ops, size_t n) {
  if (fail_incr_round > 0 && n > 0 && ops[0].kind == LC__OP_INCR &&
      --fail_incr_round == 0)
    return lc__fail(LC_ETIMEDOUT, "test: the round of increments failed");
  return __real_lc__cache_pipe(c, ops, n);
}

static int open_first(const char *dir, const mcd_t *m, uint64_t prefetch,
                      int timeout_ms, lc_t **out) {
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options(&o, m, dir, path);
  o.prefetch = prefetch;
  o.timeout_ms = timeout_ms;
  return lc_open(&o, out);
}

/* count entries named PREFIX-i, one id each. */
static lc_each *entries(const char *prefix, size_t count, char **names) {
  lc_each *v = calloc(count, sizeof *v);
  *names = malloc(count * 32);
  assert_non_null(v);
  assert_non_null(*names);
  for (size_t i = 0; i < count; i++) {
    char *n = *names + i * 32;
    snprintf(n, 32, "%s-%zu", prefix, i);
    v[i] = (lc_each){.name = n, .n = 1};
  }
  return v;
}

static void burst(void **state, uint64_t prefetch) {
  fx_t *f = *state;
  size_t total = (size_t)scaled(10000, 1000), per = 1000;
  char *names;
  lc_each *v = entries("burst", total, &names);
  assert_ok(open_first(f->dir, &mc, prefetch, 0, &f->h));
  lc_stats a, b;
  assert_ok(lc_get_stats(f->h, &a));
  for (size_t i = 0; i < total; i += per)
    assert_ok(lc_next_each(f->h, v + i, total - i < per ? total - i : per));
  assert_ok(lc_get_stats(f->h, &b));
  for (size_t i = 0; i < total; i++) {
    assert_int_equal(v[i].rc, 0);
    assert_i64_eq(v[i].first, 1);
  }
  /* one synced write per chunk of at most 512 first uses (first.c) */
  uint64_t chunks = 0;
  for (size_t i = 0; i < total; i += per) chunks += (per + 511) / 512;
  if (b.log_syncs - a.log_syncs > chunks)
    fail_msg("%llu synced writes for %zu new names in %llu chunks",
             (unsigned long long)(b.log_syncs - a.log_syncs), total,
             (unsigned long long)chunks);
  /* memcached holds what was taken: one id, or the first segment */
  int64_t held = mcd_counter_value(&mc, v[total / 2].name);
  if (prefetch)
    assert_i64_op(held, >=, 1);
  else
    assert_i64_eq(held, 1);
  for (size_t i = 0; i < total; i += total / 16)
    assert_i64_eq(tu_next1(f->h, v[i].name), 2);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(open_first(f->dir, &mc, prefetch, 0, &f->h));
  for (size_t i = 0; i < total; i += total / 16) {
    assert_i64_op(tu_next1(f->h, v[i].name), >=, 3); /* 1, 2, then above */
    tu_check_explained(f->h, v[i].name);
  }
  tu_check_explained(f->h, v[total - 1].name);
  /* memcached lost them all: the batch restores them from the log */
  int64_t *last = malloc(total * sizeof *last);
  assert_non_null(last);
  for (size_t i = 0; i < total; i++) {
    assert_ok(lc_current(f->h, v[i].name, &last[i]));
    v[i].n = 1;
  }
  assert_ok(lc_close(f->h));
  assert_ok(mcd_flush_all(&mc));
  assert_ok(open_first(f->dir, &mc, prefetch, 0, &f->h));
  assert_ok(lc_get_stats(f->h, &a));
  for (size_t i = 0; i < total; i += per)
    assert_ok(lc_next_each(f->h, v + i, total - i < per ? total - i : per));
  assert_ok(lc_get_stats(f->h, &b));
  for (size_t i = 0; i < total; i++) assert_i64_eq(v[i].first, last[i] + 1);
  assert_int_equal(b.restores - a.restores, total);
  if (b.log_syncs - a.log_syncs > chunks)
    fail_msg("%llu synced writes to restore %zu names in %llu chunks",
             (unsigned long long)(b.log_syncs - a.log_syncs), total,
             (unsigned long long)chunks);
  free(last);
  free(v);
  free(names);
}

static void test_burst_prefetch(void **state) {
  burst(state, LC_PREFETCH_AUTO);
}

static void test_burst_per_id(void **state) { burst(state, 0); }

static void test_mixed(void **state) {
  fx_t *f = *state;
  assert_ok(open_first(f->dir, &mc, 0, 0, &f->h));
  int64_t used = 0;
  for (int i = 0; i < 5; i++) used = tu_next1(f->h, "mix-used");
  lc_each v[] = {
      {.name = "mix-new1", .n = 1}, {.name = "mix-used", .n = 1},
      {.name = "mix-twice", .n = 3}, {.name = "bad name", .n = 1},
      {.name = "mix-twice", .n = 2}, {.name = "mix-new2", .n = 0},
      {.name = "mix-new3", .n = 10},
  };
  size_t n = sizeof v / sizeof v[0];
  assert_rc(lc_next_each(f->h, v, n), LC_ENAME);
  assert_non_null(strstr(lc_last_detail(), "name"));
  assert_int_equal(v[0].rc, 0);
  assert_i64_eq(v[0].first, 1);
  assert_int_equal(v[1].rc, 0);
  assert_i64_eq(v[1].first, used + 1);
  assert_int_equal(v[2].rc, 0);
  assert_i64_eq(v[2].first, 1); /* 1..3 */
  assert_int_equal(v[3].rc, LC_ENAME);
  assert_int_equal(v[4].rc, 0);
  assert_i64_op(v[4].first, >, 3); /* the later block, higher */
  assert_int_equal(v[5].rc, LC_ECOUNT);
  assert_int_equal(v[6].rc, 0);
  assert_i64_eq(v[6].first, 1); /* 1..10 */
  assert_i64_eq(tu_next1(f->h, "mix-new3"), 11);
  assert_ok(lc_next_each(f->h, v, 0)); /* nothing to do */
  assert_rc(lc_next_each(f->h, NULL, 1), LC_EINVAL);
}

static void test_owned_elsewhere(void **state) {
  fx_t *f = *state;
  char *other = tmpdir_make();
  assert_non_null(other);
  lc_t *h2;
  assert_ok(open_first(other, &mc, 0, 0, &h2));
  assert_i64_eq(tu_next1(h2, "theirs"), 1);
  assert_ok(open_first(f->dir, &mc, LC_PREFETCH_AUTO, 0, &f->h));
  lc_each v[] = {{.name = "mine1", .n = 1},
                 {.name = "theirs", .n = 1},
                 {.name = "mine2", .n = 1}};
  assert_rc(lc_next_each(f->h, v, 3), LC_EOWNED);
  assert_non_null(strstr(lc_last_detail(), "owned"));
  assert_int_equal(v[0].rc, 0);
  assert_int_equal(v[1].rc, LC_EOWNED);
  assert_int_equal(v[2].rc, 0);
  int64_t x;
  assert_rc(lc_next(f->h, "theirs", &x), LC_EOWNED); /* still refused */
  assert_i64_eq(tu_next1(h2, "theirs"), 2);           /* its owner goes on */
  assert_ok(lc_close(h2));
  tmpdir_remove(other);
  tmpdir_free(other);
}

/* Two servers; the second frozen after half of the calls. */
static void test_frozen_halfway(void **state) {
  fx_t *f = *state;
  mcd_t m2 = {0};
  assert_int_equal(mcd_start(&m2), 0);
  lc_options o;
  char path[TU_PATH_MAX], config[160];
  tu_options(&o, &mc, f->dir, path);
  snprintf(config, sizeof config, "%s %s", mcd_config(&mc), mcd_config(&m2));
  o.memcached = config;
  o.timeout_ms = 300;
  o.prefetch = LC_PREFETCH_AUTO;
  assert_ok(lc_open(&o, &f->h));
  size_t total = (size_t)scaled(4000, 800), per = 200;
  char *names;
  lc_each *v = entries("frz", total, &names);
  size_t failed = 0, ok_after = 0;
  for (size_t i = 0; i < total; i += per) {
    if (i == total / 2) assert_int_equal(mcd_freeze(&m2), 0);
    int rc = lc_next_each(f->h, v + i, per);
    if (i < total / 2) assert_ok(rc);
  }
  for (size_t i = 0; i < total; i++) {
    if (v[i].rc == 0) {
      assert_i64_eq(v[i].first, 1);
      if (i >= total / 2) ok_after++;
      continue;
    }
    if (v[i].rc != LC_ETIMEDOUT && v[i].rc != LC_EMEMCACHED)
      fail_msg("%s: %s", v[i].name, lc_err_name(v[i].rc));
    assert_true(i >= total / 2);
    lc_record *recs = NULL;
    assert_int_equal(tu_records(f->h, v[i].name, &recs), 0); /* nothing */
    free(recs);
    failed++;
  }
  /* both servers hold names: some failed, some did not */
  assert_true(failed > 0);
  assert_true(ok_after > 0);
  assert_int_equal(mcd_thaw(&m2), 0);
  for (size_t i = total / 2; i < total; i += per) {
    lc_each *w = v + i;
    size_t k = 0;
    for (size_t j = 0; j < per; j++)
      if (w[j].rc) w[k++] = (lc_each){.name = w[j].name, .n = 1};
    if (k == 0) continue;
    assert_ok(lc_next_each(f->h, w, k)); /* they succeed later */
    for (size_t j = 0; j < k; j++) {
      assert_i64_op(w[j].first, >=, 1);
      assert_i64_op(tu_next1(f->h, w[j].name), >, w[j].first);
    }
  }
  assert_ok(lc_close(f->h));
  f->h = NULL;
  mcd_stop(&m2);
  free(v);
  free(names);
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* The pipelined rounds keep their connections (no socket per call), and
 * one that memcached closed (a restart) is not used again. */
static void test_connections_kept(void **state) {
  fx_t *f = *state;
  assert_ok(open_first(f->dir, &mc, 0, 0, &f->h));
  char *names;
  lc_each *v = entries("kept", 2000, &names);
  assert_ok(lc_next_each(f->h, v, 20)); /* connections made */
  int fds = open_fds();
  long conns = mcd_stat(&mc, "total_connections");
  for (size_t i = 20; i < 1000; i += 20) assert_ok(lc_next_each(f->h, v + i, 20));
  assert_i64_op(open_fds(), <=, fds);
  /* 49 calls of 3 rounds: a few new connections at most (the pool's),
   * not one per round; the stats call itself is one */
  assert_i64_op(mcd_stat(&mc, "total_connections") - conns, <=, 4);
  assert_int_equal(mcd_restart(&mc), 0);
  assert_ok(lc_next_each(f->h, v + 1000, 1000)); /* fresh connections */
  for (size_t i = 0; i < 2000; i++) assert_i64_eq(v[i].first, 1);
  free(v);
  free(names);
}

/* Threads on the same new names: lc_next_each bursts and lc_next. */
#define RNAMES 64
typedef struct racer {
  lc_t *h;
  bool each;
  int rounds;
  int64_t v[RNAMES][64];
  int got[RNAMES];
  int rc;
  pthread_t t;
} racer;

static void *race_main(void *p) {
  racer *r = p;
  char names[RNAMES][16];
  lc_each e[RNAMES];
  for (int k = 0; k < RNAMES; k++) snprintf(names[k], 16, "race-%d", k);
  for (int round = 0; round < r->rounds && !r->rc; round++) {
    if (r->each) {
      for (int k = 0; k < RNAMES; k++) e[k] = (lc_each){.name = names[k], .n = 1};
      r->rc = lc_next_each(r->h, e, RNAMES);
      for (int k = 0; k < RNAMES && !r->rc; k++)
        r->v[k][r->got[k]++] = e[k].first;
    } else {
      for (int k = 0; k < RNAMES && !r->rc; k++) {
        int64_t x;
        r->rc = lc_next(r->h, names[(k * 7 + round) % RNAMES], &x);
        int j = (k * 7 + round) % RNAMES;
        if (!r->rc) r->v[j][r->got[j]++] = x;
      }
    }
  }
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void race(void **state, uint64_t prefetch) {
  fx_t *f = *state;
  assert_ok(open_first(f->dir, &mc, prefetch, 0, &f->h));
  enum { T = 6 };
  static racer a[T];
  memset(a, 0, sizeof a);
  for (int i = 0; i < T; i++) {
    a[i] = (racer){.h = f->h, .each = i % 3 != 2, .rounds = 40};
    assert_int_equal(pthread_create(&a[i].t, NULL, race_main, &a[i]), 0);
  }
  for (int i = 0; i < T; i++) pthread_join(a[i].t, NULL);
  for (int k = 0; k < RNAMES; k++) {
    int64_t all[T * 64];
    size_t n = 0;
    for (int i = 0; i < T; i++) {
      assert_ok(a[i].rc);
      if (first_non_increasing(a[i].v[k], (size_t)a[i].got[k]) != (size_t)-1)
        fail_msg("thread %d: race-%d went down", i, k);
      if (a[i].got[k] > 0)
        memcpy(all + n, a[i].v[k], (size_t)a[i].got[k] * sizeof *all);
      n += (size_t)a[i].got[k];
    }
    qsort(all, n, sizeof *all, cmp64);
    for (size_t j = 1; j < n; j++)
      if (all[j] == all[j - 1]) fail_msg("race-%d: %lld twice", k,
                                         (long long)all[j]);
    char name[16];
    snprintf(name, sizeof name, "race-%d", k);
    tu_check_explained(f->h, name);
  }
}

static void test_race_prefetch(void **state) { race(state, LC_PREFETCH_AUTO); }
static void test_race_per_id(void **state) { race(state, 0); }

/* Ten names used, the handle closed, and memcached losing the keys of
 * half of them: a new handle's lc_next_each takes the other half's blocks
 * in its first round of increments, seeds the lost keys, and its second
 * round fails whole.  Every name fails; the blocks taken are burned. */
static void test_second_round_fails(void **state) {
  fx_t *f = *state;
  char *names;
  size_t n = 10;
  lc_each *v = entries("two", n, &names);
  assert_ok(open_first(f->dir, &mc, 0, 1000, &f->h));
  assert_ok(lc_next_each(f->h, v, n));
  assert_ok(lc_close(f->h));
  f->h = NULL;
  char key[64];
  for (size_t i = n / 2; i < n; i++) {
    snprintf(key, sizeof key, "lc:%s", v[i].name);
    assert_ok(mcd_delete(&mc, key));
  }
  assert_ok(open_first(f->dir, &mc, 0, 1000, &f->h));
  for (size_t i = 0; i < n; i++) v[i] = (lc_each){.name = v[i].name, .n = 3};
  fail_incr_round = 2;
  int rc = lc_next_each(f->h, v, n);
  assert_int_equal(fail_incr_round, 0); /* the second round was the one */
  assert_rc(rc, LC_ETIMEDOUT);
  for (size_t i = 0; i < n; i++) assert_rc(v[i].rc, LC_ETIMEDOUT);
  /* each goes on above what it took (the five kept keys: 1, then 2..4
   * burned; the five lost ones: seeded at 1, nothing taken) */
  for (size_t i = 0; i < n; i++)
    assert_i64_eq(tu_next1(f->h, v[i].name), i < n / 2 ? 5 : 2);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(open_first(f->dir, &mc, 0, 1000, &f->h));
  for (size_t i = 0; i < n / 2; i++) {
    tu_ledger l;
    assert_ok(tu_explain(f->h, v[i].name, &l));
    if (l.values[LC_GAP_BURNED] != 3 || l.values[LC_GAP_UNLOGGED] != 0 ||
        l.values[0] != 0)
      fail_msg("%s: burned %llu, unlogged %llu, unexplained %llu (want 3, "
               "0, 0)",
               v[i].name, (unsigned long long)l.values[LC_GAP_BURNED],
               (unsigned long long)l.values[LC_GAP_UNLOGGED],
               (unsigned long long)l.values[0]);
  }
  for (size_t i = n / 2; i < n; i++) tu_check_explained(f->h, v[i].name);
  free(v);
  free(names);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup_dir, tu_teardown)
  const struct CMUnitTest tests[] = {
      T(test_burst_prefetch),  T(test_burst_per_id), T(test_mixed),
      T(test_owned_elsewhere), T(test_frozen_halfway), T(test_connections_kept),
      T(test_race_prefetch),
      T(test_race_per_id),     T(test_second_round_fails),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
