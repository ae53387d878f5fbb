/*
 * test_memory.c - what a counter in memory costs (issue 42: at most 256
 * bytes of RSS), white box, against a real memcached:
 *  - the state with its key fits one small allocation: no mutex or
 *    condition variable of its own (those are shared lock stripes), no
 *    segment arrays inline;
 *  - the segment side structure (c->segs) exists only while the counter
 *    holds a segment or fetches one: none without prefetch, one after the
 *    first call with it, none once lc_advance dropped the segment, one
 *    again with the next call, and the values go on above;
 *  - lc_get_log_memory (LevelDB's share, shown beside the counters'):
 *    it grows with the records written;
 *  - two counters that share a lock stripe, each used at once by a thread
 *    taking values and two advancing it: each one's values increase and
 *    nothing hangs (a wake-up for one is spurious for the other).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mcd.h"

static void test_state_size(void **state) {
  (void)state;
  /* a name of up to 8 bytes ("m9999999"): state and key in one 192-byte
   * malloc chunk */
  size_t bytes = offsetof(lc__counter, key) + strlen(LC__MC_PREFIX) + 8 + 1;
  /* holding one segment: segs with room for one (a 48-byte chunk: at
   * most 40 bytes asked for) */
  size_t one = sizeof(lc__segs) + sizeof(lc__seg);
  printf("counter state %zu bytes with an 8-byte name; segs %zu with one\n",
         bytes, one);
  assert_true(bytes <= LC__COUNTER_STATE_MAX);
  assert_true(one <= 40);
}

/* c->segs and c->nseg, read under the counter's lock. */
static bool has_segs(lc__counter *c, int *nseg) {
  lc__counter_lock(c);
  bool has = c->segs != NULL;
  *nseg = c->nseg;
  lc__counter_unlock(c);
  return has;
}

static void test_segs_lifetime(void **state) {
  fx_t *f = *state;
  int64_t v = 0;
  int nseg = -1;
  lc__counter *c = NULL;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h)); /* prefetch off */
  assert_ok(lc_next(f->h, "plain", &v));
  assert_ok(lc__counter_find(f->h, "plain", &c));
  assert_non_null(c);
  assert_false(has_segs(c, &nseg));
  assert_int_equal(nseg, 0);
  assert_ok(lc_close(f->h));

  assert_ok(tu_open_prefetch(f->dir, 16, &f->h));
  assert_ok(lc_next(f->h, "seg", &v));
  assert_i64_eq(v, 1);
  assert_ok(lc__counter_find(f->h, "seg", &c));
  assert_non_null(c);
  assert_true(has_segs(c, &nseg)); /* 1..16 held, 1 out */
  assert_int_equal(nseg, 1);
  assert_ok(lc_advance(f->h, "seg", 100)); /* drops the held segment */
  assert_false(has_segs(c, &nseg));
  assert_int_equal(nseg, 0);
  assert_ok(lc_next(f->h, "seg", &v));
  assert_true(v >= 100);
  assert_true(has_segs(c, &nseg));
  assert_int_equal(nseg, 1);
  assert_ok(lc_close(f->h)); /* frees it with the counter */
  f->h = NULL;
}

/* lc_get_log_memory: LevelDB's memtable grows with the records written
 * (what the bench shows beside a counter's bytes, as the log's share). */
static void test_log_memory(void **state) {
  fx_t *f = *state;
  uint64_t before = 0, after = 0;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  assert_rc(lc_get_log_memory(f->h, NULL), LC_EINVAL);
  assert_ok(lc_get_log_memory(f->h, &before));
  char name[32];
  int64_t v = 0;
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof name, "lm%d", i);
    assert_ok(lc_next(f->h, name, &v));
  }
  assert_ok(lc_get_log_memory(f->h, &after));
  printf("log memory %llu -> %llu bytes\n", (unsigned long long)before,
         (unsigned long long)after);
  assert_true(after >= before + 2000 * 16); /* a record and a reservation
                                               each, at least */
}

typedef struct user {
  pthread_t t;
  lc_t *h;
  const char *name;
  bool advance; /* lc_advance instead of lc_next */
  int rc;
  bool ordered;
} user;

#define CALLS 3000
static void *use(void *arg) {
  user *u = arg;
  int64_t last = 0, v = 0;
  u->ordered = true;
  for (int i = 0; i < CALLS && !u->rc; i++) {
    if (u->advance) {
      u->rc = lc_advance(u->h, u->name, 10 * (int64_t)i + 1);
    } else {
      u->rc = lc_next(u->h, u->name, &v);
      if (!u->rc && v <= last) u->ordered = false;
      last = v;
    }
  }
  return NULL;
}

static void test_shared_stripe(void **state) {
  fx_t *f = *state;
  for (int pf = 0; pf < 2; pf++) {
    assert_ok(tu_open_prefetch(f->dir, pf ? 4 : 0, &f->h));
    int64_t v;
    lc__counter *a = NULL, *b = NULL;
    char names[2][32], name[32];
    snprintf(names[0], sizeof names[0], "st%d-a", pf);
    assert_ok(lc_next(f->h, names[0], &v));
    assert_ok(lc__counter_find(f->h, names[0], &a));
    for (int i = 0; b == NULL && i < 100000; i++) { /* 1 in 1,024 share */
      snprintf(name, sizeof name, "st%d-%d", pf, i);
      lc__counter *x = NULL;
      assert_ok(lc__counter_lookup(f->h, name, &x));
      if (lc__counter_stripe(x) == lc__counter_stripe(a)) {
        b = x;
        snprintf(names[1], sizeof names[1], "%s", name);
      }
    }
    assert_non_null(b);
    /* each counter: one thread taking values, two advancing it (their
     * exclusive turns wait on the stripe's cv beside the other's) */
    user u[6];
    for (int i = 0; i < 6; i++)
      u[i] = (user){.h = f->h, .name = names[i % 2], .advance = i >= 2};
    for (int i = 0; i < 6; i++) pthread_create(&u[i].t, NULL, use, &u[i]);
    for (int i = 0; i < 6; i++) {
      pthread_join(u[i].t, NULL);
      assert_ok(u[i].rc);
      assert_true(u[i].ordered);
    }
    assert_ok(lc_close(f->h));
    f->h = NULL;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_state_size),
      cmocka_unit_test_setup_teardown(test_log_memory, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_segs_lifetime, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_shared_stripe, tu_setup_dir,
                                      tu_teardown),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
