/*
 * test_walkgrow.c - an eviction walk (src/evict.c) while the name table
 * doubles under it.  A walk holds the table's mutex for 4,096 entries at
 * a time; between two chunks new names may double the buckets, and
 * entries already walked move to buckets not walked yet.  Taken twice, an
 * idle counter was evicted, freed, then evicted again (a double free, or
 * a crash in the table's remove).  Through the seam lc__test_walk_chunk
 * (this program links the library built with LC_TEST_SEAMS):
 *  - 300 idle names and 5,700 kept busy (6,000 in 4,096 buckets); when a
 *    walk has found idle ones in its first chunk, the seam adds 2,300 new
 *    names (the table doubles), and the walk goes on: the process does
 *    not crash, every name not kept busy leaves memory (lc_stats counters
 *    falls to the 5,700 busy ones), and each idle one reloads at exactly
 *    its last value + 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "mcd.h"

enum { IDLE = 300, BUSY = 5700, GROW = 2300, PER = 100 };

static char idle_names[IDLE][16], busy_names[BUSY][16], grow_names[GROW][16];
static atomic_bool armed, fired, stop_busy;
static atomic_size_t found; /* the candidates of the walk that grew */
static atomic_int grow_rc;

/* Uses every name in names once, PER at a time; the first failure. */
static int use_all(lc_t *h, char (*names)[16], int n, int64_t *first) {
  lc_each v[PER];
  for (int i = 0; i < n; i += PER) {
    int k = n - i < PER ? n - i : PER;
    for (int j = 0; j < k; j++) v[j] = (lc_each){.name = names[i + j], .n = 1};
    int rc = lc_next_each(h, v, (size_t)k);
    if (rc) return rc;
    for (int j = 0; first && j < k; j++) first[i + j] = v[j].first;
  }
  return 0;
}

/* The seam, on the eviction thread between two chunks of a walk: once
 * idle names were found, the table is made to double. */
static void grow_now(lc_t *h, size_t candidates) {
  if (!atomic_load(&armed) || candidates == 0 || atomic_exchange(&fired, true))
    return;
  atomic_store(&found, candidates);
  atomic_store(&grow_rc, use_all(h, grow_names, GROW, NULL));
}

static void *keep_busy(void *arg) {
  lc_t *h = arg;
  while (!atomic_load(&stop_busy)) {
    if (use_all(h, busy_names, BUSY, NULL)) break;
    sleep_ms(20);
  }
  return NULL;
}

static void test_grows_mid_walk(void **state) {
  fx_t *f = *state;
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options(&o, &mc, f->dir, path);
  o.prefetch = LC_PREFETCH_AUTO;
  o.idle_evict_ms = 1000; /* a pass every 250 ms */
  static int64_t last[IDLE], again[IDLE];
  for (int i = 0; i < IDLE; i++) snprintf(idle_names[i], 16, "idle%d", i);
  for (int i = 0; i < BUSY; i++) snprintf(busy_names[i], 16, "busy%d", i);
  for (int i = 0; i < GROW; i++) snprintf(grow_names[i], 16, "grow%d", i);
  lc__test_walk_chunk = grow_now;
  assert_ok(lc_open(&o, &f->h));
  assert_ok(use_all(f->h, idle_names, IDLE, last));
  assert_ok(use_all(f->h, busy_names, BUSY, NULL));
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, keep_busy, f->h), 0);
  atomic_store(&armed, true);
  for (int i = 0; i < 1000 && !atomic_load(&fired); i++) sleep_ms(10);
  assert_true(atomic_load(&fired)); /* a walk found idle names and grew */
  print_message("the table doubled after a chunk that found %zu idle names\n",
                atomic_load(&found));
  assert_ok(atomic_load(&grow_rc));
  /* every name not kept busy (the idle ones, the ones the seam added)
   * leaves memory: counters falls to BUSY */
  lc_stats st = {0};
  for (int i = 0; i < 1000 && st.counters != BUSY; i++) {
    assert_ok(lc_get_stats(f->h, &st));
    sleep_ms(10);
  }
  atomic_store(&stop_busy, true);
  pthread_join(t, NULL);
  assert_int_equal(st.counters, BUSY);
  assert_true(st.evictions >= IDLE + GROW);
  assert_ok(use_all(f->h, idle_names, IDLE, again));
  for (int i = 0; i < IDLE; i++) assert_i64_eq(again[i], last[i] + 1);
  tu_check_explained(f->h, idle_names[0]);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_grows_mid_walk, tu_setup_dir,
                                      tu_teardown),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
