/*
 * test_concurrency.c - many threads on one handle (unique; no gap without a failure):
 *  - chaos: 8 threads x 20,000 ids on one counter while the main thread
 *    wipes memcached (flush_all) and SIGKILLs and restarts it several times;
 *    threads retry after ~1 ms on an error.  Zero duplicates over all ids,
 *    each thread's ids strictly increase, and the next id after the run is
 *    above all of them.  Variants: LC_DURABILITY_SYNC, lc_next_n blocks,
 *    several counters at once.
 *  - restorers released at once by a barrier on a flushed counter with a
 *    fresh handle: exactly one seeds it (stats.restores == 1), the values
 *    are exactly the next ones, no duplicates; also with lc_restore.
 *  - memcached moved backwards (a lower value set into the key) while
 *    threads allocate: no duplicates.
 * LC_TEST_SCALE=N divides the id counts by N (for sanitizer builds).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcd.h"

/* ---- workers ------------------------------------------------------------ */

#define MAX_THREADS 16
#define MAX_COUNTERS 4

typedef struct run_cfg {
  lc_durability_t durability;
  int threads;
  long per_thread; /* before LC_TEST_SCALE */
  int blocks;      /* 1: lc_next_n with 1..8 values, else lc_next */
  int counters;    /* counters used round robin (>= 1) */
  int kills;       /* 1: chaos kills and restarts memcached too */
  int backwards;   /* 1: chaos sets lower values instead */
} run_cfg;

typedef struct worker {
  lc_t *h;
  const run_cfg *cfg;
  int index;
  long n;                     /* ids wanted */
  int64_t *ids[MAX_COUNTERS]; /* per counter, in the order received */
  long got[MAX_COUNTERS];
  long total;
  long errors;
  int bad_rc; /* an error code that must not happen */
  char bad_detail[256];
  int gave_up;
  atomic_int finished; /* the only field main reads meanwhile */
} worker;

static atomic_long progress;
static atomic_int stop_flag;

static const char *counter_name(int i) {
  static const char *names[MAX_COUNTERS] = {"chaos", "chaos/1", "chaos-2",
                                            "c3"};
  return names[i];
}

static int transient(int rc) {
  return rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT || rc == LC_EAGAIN;
}

static void *worker_main(void *p) {
  worker *w = p;
  unsigned seed = 1000u + (unsigned)w->index;
  long consecutive = 0;
  int c = w->index % w->cfg->counters;
  while (w->total < w->n && !atomic_load(&stop_flag)) {
    int64_t v = 0;
    long k = 1;
    int rc;
    if (w->cfg->blocks) {
      k = 1 + rand_r(&seed) % 8;
      if (k > w->n - w->total) k = w->n - w->total;
      rc = lc_next_n(w->h, counter_name(c), (uint64_t)k, &v);
    } else {
      rc = lc_next(w->h, counter_name(c), &v);
    }
    if (rc == 0) {
      for (long i = 0; i < k; i++) w->ids[c][w->got[c]++] = v + i;
      w->total += k;
      atomic_fetch_add(&progress, k);
      consecutive = 0;
      c = (c + 1) % w->cfg->counters;
      continue;
    }
    w->errors++;
    if (!transient(rc)) {
      w->bad_rc = rc;
      snprintf(w->bad_detail, sizeof w->bad_detail, "%s", lc_last_detail());
      break;
    }
    if (++consecutive > 20000) { /* ~20 s of nothing but errors */
      w->gave_up = 1;
      break;
    }
    sleep_ms(1);
  }
  atomic_store(&w->finished, 1);
  return NULL;
}

typedef struct chaos_result {
  int flushes, kills, sets;
} chaos_result;

/* One disturbance: flush, kill -9 + restart, or a lower value set. */
static void disturb(const run_cfg *cfg, int i, chaos_result *cr) {
  if (cfg->backwards) {
    int before = cr->sets;
    for (int c = 0; c < cfg->counters; c++) {
      char key[64], buf[64];
      snprintf(key, sizeof key, "lc:%s", counter_name(c));
      if (mcd_get(&mc, key, buf, sizeof buf) == 1) {
        long long cur = atoll(buf);
        long long low = (i % 3 == 0) ? 1 : (i % 3 == 1) ? cur / 2 : cur - 5;
        if (low < 1) low = 1;
        snprintf(buf, sizeof buf, "%lld", low);
        if (mcd_set(&mc, key, buf) == 0 && cr->sets == before) cr->sets++;
      }
    }
    return;
  }
  if (cfg->kills && i % 2 == 1) {
    if (mcd_restart(&mc) == 0) cr->kills++;
  } else if (mcd_flush_all(&mc) == 0) {
    cr->flushes++;
  }
}

static void run_chaos(const run_cfg *cfg) {
  char *dir = tmpdir_make();
  assert_non_null(dir);
  assert_ok(mcd_flush_all(&mc));
  lc_t *h = NULL;
  assert_ok(tu_open(&mc, dir, cfg->durability, 500, &h));
  long per = scaled(cfg->per_thread, 200);
  long total = per * cfg->threads;
  worker w[MAX_THREADS];
  pthread_t t[MAX_THREADS];
  memset(w, 0, sizeof w);
  for (int i = 0; i < cfg->threads; i++) atomic_init(&w[i].finished, 0);
  atomic_store(&progress, 0);
  atomic_store(&stop_flag, 0);
  for (int i = 0; i < cfg->threads; i++) {
    w[i].h = h;
    w[i].cfg = cfg;
    w[i].index = i;
    w[i].n = per;
    for (int c = 0; c < cfg->counters; c++) {
      w[i].ids[c] = calloc((size_t)per, sizeof(int64_t));
      assert_non_null(w[i].ids[c]);
    }
  }
  for (int i = 0; i < cfg->threads; i++)
    assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);

  /* Disturb at 10%, 20%, ... 80% of the ids: "several times during the
   * run" whatever the speed of the machine. */
  const int events = 8;
  chaos_result cr = {0, 0, 0};
  int64_t deadline = mono_us() + 240 * 1000000LL;
  for (int e = 1; e <= events; e++) {
    long at = total * e / (events + 2);
    while (atomic_load(&progress) < at && mono_us() < deadline) {
      int alive = 0;
      for (int i = 0; i < cfg->threads; i++)
        if (!atomic_load(&w[i].finished)) alive = 1;
      if (!alive) break;
      sleep_ms(1);
    }
    if (mono_us() >= deadline) break;
    disturb(cfg, e, &cr);
  }
  while (atomic_load(&progress) < total && mono_us() < deadline) {
    int alive = 0;
    for (int i = 0; i < cfg->threads; i++)
      if (!atomic_load(&w[i].finished)) alive = 1;
    if (!alive) break;
    sleep_ms(5);
  }
  if (mono_us() >= deadline) atomic_store(&stop_flag, 1);
  for (int i = 0; i < cfg->threads; i++) pthread_join(t[i], NULL);

  long errors = 0;
  for (int i = 0; i < cfg->threads; i++) errors += w[i].errors;
  lc_stats st;
  assert_ok(lc_get_stats(h, &st));
  printf("# %d threads x %ld ids (%s%s, %d counter(s)): %d flushes, %d kills, "
         "%d lower sets; %ld errors retried; stats: increments %" PRIu64
         ", restores %" PRIu64 ", backwards %" PRIu64 ", log_writes %" PRIu64
         ", log_syncs %" PRIu64 "\n",
         cfg->threads, per, lc_durability_name(cfg->durability),
         cfg->blocks ? ", blocks" : "", cfg->counters, cr.flushes, cr.kills,
         cr.sets, errors, st.increments, st.restores, st.backwards,
         st.log_writes, st.log_syncs);
  for (int i = 0; i < cfg->threads; i++) {
    if (w[i].bad_rc)
      fail_msg("thread %d: unexpected error %s (%s)", i,
               lc_err_name(w[i].bad_rc), w[i].bad_detail);
    if (w[i].gave_up) fail_msg("thread %d: 20000 errors in a row", i);
    if (w[i].total != w[i].n) fail_msg("thread %d: timed out", i);
  }
  assert_int_equal(cr.flushes + cr.kills + cr.sets, events);

  int64_t max = 0;
  for (int c = 0; c < cfg->counters; c++) {
    size_t n = 0;
    for (int i = 0; i < cfg->threads; i++) n += (size_t)w[i].got[c];
    int64_t *all = malloc(n * sizeof *all);
    assert_non_null(all);
    size_t k = 0;
    for (int i = 0; i < cfg->threads; i++) {
      size_t bad = first_non_increasing(w[i].ids[c], (size_t)w[i].got[c]);
      if (bad != (size_t)-1)
        fail_msg("thread %d counter %s: id %lld then %lld", i, counter_name(c),
                 (long long)w[i].ids[c][bad], (long long)w[i].ids[c][bad + 1]);
      memcpy(all + k, w[i].ids[c], (size_t)w[i].got[c] * sizeof *all);
      k += (size_t)w[i].got[c];
    }
    size_t dups = count_duplicates(all, n);
    if (dups) {
      for (size_t i = 1; i < n; i++)
        if (all[i] == all[i - 1]) {
          fail_msg("counter %s: %zu duplicate ids among %zu, e.g. %lld",
                   counter_name(c), dups, n, (long long)all[i]);
        }
    }
    assert_i64_op(all[0], >=, 1);
    if (all[n - 1] > max) max = all[n - 1];
    /* After the storm, memcached wiped once more: next is above all. */
    assert_ok(mcd_flush_all(&mc));
    int64_t v = 0;
    assert_ok(lc_next(h, counter_name(c), &v));
    assert_i64_op(v, >, all[n - 1]);
    free(all);
  }
  if (cfg->backwards)
    assert_true(st.backwards >= 1);
  else
    assert_true(st.restores >= 2);
  for (int i = 0; i < cfg->threads; i++)
    for (int c = 0; c < cfg->counters; c++) free(w[i].ids[c]);
  assert_ok(lc_close(h));
  tmpdir_free(dir);
}

/* 8 threads x 20,000 lc_next, flushes and kill -9 + restarts. */
static void test_chaos_8x20000(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_DEFAULT, 8, 20000, 0, 1, 1, 0};
  run_chaos(&c);
}

/* The same in the fully synced mode (group commit), smaller. */
static void test_chaos_sync(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_SYNC, 4, 2500, 0, 1, 1, 0};
  run_chaos(&c);
}

/* lc_next_n blocks of 1..8: blocks never overlap. */
static void test_chaos_blocks(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_DEFAULT, 4, 20000, 1, 1, 1, 0};
  run_chaos(&c);
}

/* Three counters used round robin by six threads. */
static void test_chaos_counters(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_DEFAULT, 6, 6000, 0, 3, 1, 0};
  run_chaos(&c);
}

/* memcached moved backwards (1, half, value-5 set into the key). */
static void test_backwards_concurrent(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_DEFAULT, 4, 5000, 0, 2, 0, 1};
  run_chaos(&c);
}

static void test_backwards_blocks(void **state) {
  (void)state;
  static const run_cfg c = {LC_DURABILITY_DEFAULT, 4, 5000, 1, 1, 0, 1};
  run_chaos(&c);
}

/* ---- restorers at a barrier --------------------------------------------- */

#define RESTORERS 8

typedef struct restorer {
  lc_t *h;
  pthread_barrier_t *b;
  int use_restore;
  int rc;
  int64_t v;
} restorer;

static void *restorer_main(void *p) {
  restorer *r = p;
  pthread_barrier_wait(r->b);
  r->rc = r->use_restore ? lc_restore(r->h, "race", &r->v)
                         : lc_next(r->h, "race", &r->v);
  return NULL;
}

static void race_round(lc_t *h, int use_restore, int64_t last,
                       uint64_t restores_before) {
  pthread_barrier_t b;
  pthread_barrier_init(&b, NULL, RESTORERS);
  restorer r[RESTORERS];
  pthread_t t[RESTORERS];
  for (int i = 0; i < RESTORERS; i++) {
    r[i] = (restorer){
        .h = h, .b = &b, .use_restore = use_restore, .rc = 99, .v = -1};
    assert_int_equal(pthread_create(&t[i], NULL, restorer_main, &r[i]), 0);
  }
  for (int i = 0; i < RESTORERS; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&b);
  int64_t vals[RESTORERS];
  for (int i = 0; i < RESTORERS; i++) {
    assert_rc(r[i].rc, 0);
    vals[i] = r[i].v;
  }
  lc_stats st;
  assert_ok(lc_get_stats(h, &st));
  if (st.restores - restores_before != 1)
    fail_msg("%d racing %s: %llu seeded the counter, expected exactly 1",
             RESTORERS, use_restore ? "lc_restore" : "lc_next",
             (unsigned long long)(st.restores - restores_before));
  assert_int_equal(count_duplicates(vals, RESTORERS),
                   use_restore ? RESTORERS - 1 : 0);
  for (int i = 0; i < RESTORERS; i++) {
    /* sorted: lc_next gives exactly last+1 .. last+8 (no gap); every
     * lc_restore sees the counter at last. */
    assert_i64_eq(vals[i], use_restore ? last : last + 1 + i);
  }
  char buf[64], want[32];
  snprintf(want, sizeof want, "%lld",
           (long long)(use_restore ? last : last + RESTORERS));
  assert_int_equal(mcd_get(&mc, "lc:race", buf, sizeof buf), 1);
  assert_string_equal(buf, want);
}

static void run_restorers(lc_durability_t d, int use_restore) {
  char *dir = tmpdir_make();
  assert_non_null(dir);
  assert_ok(mcd_flush_all(&mc));
  lc_t *h = NULL;
  assert_ok(tu_open(&mc, dir, d, 0, &h));
  int64_t last = 0;
  for (int i = 0; i < 100; i++) assert_ok(lc_next(h, "race", &last));
  assert_ok(lc_close(h));
  int rounds = (int)scaled(20, 4);
  for (int round = 0; round < rounds; round++) {
    /* A fresh handle on a flushed counter. */
    assert_ok(mcd_flush_all(&mc));
    assert_ok(tu_open(&mc, dir, d, 0, &h));
    race_round(h, use_restore, last, 0);
    if (!use_restore) last += RESTORERS;
    /* The same handle, flushed again. */
    lc_stats st;
    assert_ok(lc_get_stats(h, &st));
    assert_ok(mcd_flush_all(&mc));
    race_round(h, use_restore, last, st.restores);
    if (!use_restore) last += RESTORERS;
    assert_ok(lc_close(h));
  }
  tmpdir_free(dir);
}

static void test_restorers_next(void **state) {
  (void)state;
  run_restorers(LC_DURABILITY_DEFAULT, 0);
}

static void test_restorers_restore(void **state) {
  (void)state;
  run_restorers(LC_DURABILITY_DEFAULT, 1);
}

static void test_restorers_sync(void **state) {
  (void)state;
  run_restorers(LC_DURABILITY_SYNC, 0);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chaos_8x20000),
      cmocka_unit_test(test_chaos_sync),
      cmocka_unit_test(test_chaos_blocks),
      cmocka_unit_test(test_chaos_counters),
      cmocka_unit_test(test_backwards_concurrent),
      cmocka_unit_test(test_backwards_blocks),
      cmocka_unit_test(test_restorers_next),
      cmocka_unit_test(test_restorers_restore),
      cmocka_unit_test(test_restorers_sync),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
