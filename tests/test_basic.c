/*
 * test_basic.c - single-threaded behaviour of the public API against a real
 * memcached: lc_next / lc_next_n / lc_current / lc_restore / lc_advance,
 * continuing without a gap after memcached loses the counter, clean
 * close and reopen, the reservation (survives power loss), bounds and
 * overflow, counter names, counts and NULL arguments (clear errors), the
 * error table and the thread-local detail, options, durability names,
 * stats, and iteration (including a corrupt record planted with LevelDB
 * directly).
 *
 * Each test gets a fresh log directory and a flushed memcached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/format.h"
#include "mcd.h"

static int reopen(fx_t *f) {
  lc_close(f->h);
  f->h = NULL;
  return tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h);
}

/* ---- allocation -------------------------------------------------------- */

static void test_fresh_counter_starts_at_one(void **state) {
  fx_t *f = *state;
  int64_t v = -1;
  assert_ok(lc_current(f->h, "orders", &v));
  assert_i64_eq(v, 0);
  for (int64_t want = 1; want <= 5; want++)
    assert_i64_eq(tu_next1(f->h, "orders"), want);
  assert_ok(lc_current(f->h, "orders", &v));
  assert_i64_eq(v, 5);
  char buf[64];
  assert_int_equal(mcd_get(&mc, "lc:orders", buf, sizeof buf), 1);
  assert_string_equal(buf, "5");
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.allocations, 5);
  assert_int_equal(st.ids, 5);
  assert_int_equal(st.restores, 1); /* the first use seeded it */
  assert_int_equal(st.errors, 0);
  /* The first allocation wrote a reservation (0.6: its latency). */
  lc_latency lat;
  assert_ok(lc_get_latency(f->h, &lat));
  assert_true(lat.reservation.count >= 1);
  uint64_t sum = 0;
  for (int i = 0; i < LC_LATENCY_BUCKETS; i++) sum += lat.reservation.buckets[i];
  assert_int_equal(sum, lat.reservation.count);
  assert_int_equal(lat.segment.count, 0); /* no prefetch */
}

static void test_next_n_contiguous(void **state) {
  fx_t *f = *state;
  int64_t first = -1;
  assert_ok(lc_next_n(f->h, "blk", 5, &first));
  assert_i64_eq(first, 1);
  assert_i64_eq(tu_next1(f->h, "blk"), 6);
  assert_ok(lc_next_n(f->h, "blk", 1000, &first));
  assert_i64_eq(first, 7);
  assert_ok(lc_next_n(f->h, "blk", 1, &first));
  assert_i64_eq(first, 1007);
  assert_i64_eq(tu_next1(f->h, "blk"), 1008);
  int64_t cur = -1;
  assert_ok(lc_current(f->h, "blk", &cur));
  assert_i64_eq(cur, 1008);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.allocations, 5);
  assert_int_equal(st.ids, 5 + 1 + 1000 + 1 + 1);
}

static void test_block_max(void **state) {
  fx_t *f = *state;
  int64_t first = -1;
  assert_ok(lc_next_n(f->h, "big", LC_BLOCK_MAX, &first));
  assert_i64_eq(first, 1);
  assert_i64_eq(tu_next1(f->h, "big"), (int64_t)LC_BLOCK_MAX + 1);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_next_n(f->h, "big", LC_BLOCK_MAX, &first));
  assert_i64_eq(first, (int64_t)LC_BLOCK_MAX + 2);
}

static void test_counters_independent(void **state) {
  fx_t *f = *state;
  /* "a" is a byte prefix of the others: their records must not mix. */
  const char *names[] = {"a", "ab", "a/b", "users/eu", "A"};
  for (int round = 1; round <= 3; round++)
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
      assert_i64_eq(tu_next1(f->h, names[i]), round);
  assert_ok(mcd_flush_all(&mc));
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    assert_i64_eq(tu_next1(f->h, names[i]), 4);
  lc_record *r;
  assert_int_equal(tu_records(f->h, "a", &r), 4);
  for (int i = 0; i < 4; i++) assert_i64_eq(r[i].last, i + 1);
  free(r);
}

/* No gap: memcached loses the counter while the owner runs: no skip. */
static void test_flush_continues_without_gap(void **state) {
  fx_t *f = *state;
  srand(12345);
  int64_t last = 0;
  for (int round = 0; round < 10; round++) {
    int k = 1 + rand() % 20;
    for (int i = 0; i < k; i++) {
      int64_t v = tu_next1(f->h, "gapless");
      assert_i64_eq(v, last + 1);
      last = v;
    }
    if (round % 3 == 2) {
      int64_t first = -1;
      assert_ok(lc_next_n(f->h, "gapless", 7, &first));
      assert_i64_eq(first, last + 1);
      last += 7;
    }
    if (round % 2)
      assert_ok(mcd_flush_all(&mc));
    else
      assert_ok(mcd_delete(&mc, "lc:gapless"));
  }
  assert_i64_eq(tu_next1(f->h, "gapless"), last + 1);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.restores, 11); /* first use + 10 losses */
}

static void test_restore(void **state) {
  fx_t *f = *state;
  int64_t v = -1;
  for (int i = 0; i < 10; i++) tu_next1(f->h, "rs");
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_restore(f->h, "rs", &v));
  assert_i64_eq(v, 10);
  char buf[64];
  assert_int_equal(mcd_get(&mc, "lc:rs", buf, sizeof buf), 1);
  assert_string_equal(buf, "10");
  /* Restoring a counter memcached has changes nothing. */
  v = -1;
  assert_ok(lc_restore(f->h, "rs", &v));
  assert_i64_eq(v, 10);
  assert_i64_eq(tu_next1(f->h, "rs"), 11);
  /* A counter never used stands at 0 and then starts at 1. */
  v = -1;
  assert_ok(lc_restore(f->h, "never", &v));
  assert_i64_eq(v, 0);
  assert_i64_eq(tu_next1(f->h, "never"), 1);
}

static void test_current_changes_nothing(void **state) {
  fx_t *f = *state;
  int64_t v = -1;
  assert_ok(lc_current(f->h, "cur", &v));
  assert_i64_eq(v, 0);
  lc_record *r;
  assert_int_equal(tu_records(f->h, "cur", &r), 0);
  free(r);
  for (int i = 0; i < 3; i++) tu_next1(f->h, "cur");
  assert_ok(mcd_flush_all(&mc));
  v = -1;
  assert_ok(lc_current(f->h, "cur", &v));
  assert_i64_eq(v, 3);
  char buf[64];
  assert_int_equal(mcd_get(&mc, "lc:cur", buf, sizeof buf), 0);
  assert_i64_eq(tu_next1(f->h, "cur"), 4);
}

/* Counters the handle keeps state for (lc_stats.counters). */
static long table_entries(lc_t *h) {
  lc_stats st;
  assert_ok(lc_get_stats(h, &st));
  return (long)st.counters;
}

/* lc_current keeps no state for counters the handle has not used (a
 * daemon answering "get <any name>" must not grow), and still answers
 * from the log and memcached. */
static void test_current_keeps_no_state(void **state) {
  fx_t *f = *state;
  for (int i = 0; i < 5; i++) tu_next1(f->h, "used");
  assert_ok(lc_close(f->h));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  int64_t v = -1;
  assert_ok(lc_current(f->h, "used", &v));
  assert_i64_eq(v, 5);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(lc_current(f->h, "used", &v));
  assert_i64_eq(v, 5); /* from the log alone */
  char name[32];
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "never-%d", i);
    assert_ok(lc_current(f->h, name, &v));
    assert_i64_eq(v, 0);
  }
  assert_int_equal(table_entries(f->h), 0);
  assert_i64_eq(tu_next1(f->h, "used"), 6);
  assert_int_equal(table_entries(f->h), 1);
  assert_ok(lc_current(f->h, "used", &v));
  assert_i64_eq(v, 6);
}

static void test_advance(void **state) {
  fx_t *f = *state;
  assert_ok(lc_advance(f->h, "adv", 1000000));
  int64_t v = tu_next1(f->h, "adv");
  assert_i64_op(v, >=, 1000000);
  int64_t prev = v;
  /* Never lowers. */
  assert_ok(lc_advance(f->h, "adv", 10));
  v = tu_next1(f->h, "adv");
  assert_i64_op(v, >, prev);
  prev = v;
  assert_ok(lc_advance(f->h, "adv", prev));
  v = tu_next1(f->h, "adv");
  assert_i64_op(v, >, prev);
  /* Raised, then memcached loses it: still at least the raise. */
  assert_ok(lc_advance(f->h, "adv", 5000000));
  assert_ok(mcd_flush_all(&mc));
  v = tu_next1(f->h, "adv");
  assert_i64_op(v, >=, 5000000);
  /* Raised, closed, memcached lost, reopened. */
  assert_ok(lc_advance(f->h, "adv", 7000000));
  assert_ok(reopen(f));
  assert_ok(mcd_flush_all(&mc));
  v = tu_next1(f->h, "adv");
  assert_i64_op(v, >=, 7000000);
  prev = v;
  /* Out of range. */
  int rc = lc_advance(f->h, "adv", 0);
  assert_true(rc == LC_EINVAL || rc == LC_ECOUNT);
  rc = lc_advance(f->h, "adv", -5);
  assert_true(rc == LC_EINVAL || rc == LC_ECOUNT);
  rc = lc_advance(f->h, "adv", INT64_MIN);
  assert_true(rc == LC_EINVAL || rc == LC_ECOUNT);
  assert_rc(lc_advance(f->h, "bad name", 5), LC_ENAME);
  assert_i64_op(tu_next1(f->h, "adv"), >, prev);
  /* A raise on a fresh counter, then memcached loses it before any next. */
  assert_ok(lc_advance(f->h, "adv2", 300));
  assert_ok(mcd_flush_all(&mc));
  assert_i64_op(tu_next1(f->h, "adv2"), >=, 300);
}

/* ---- bounds ------------------------------------------------------------ */

static void test_overflow(void **state) {
  fx_t *f = *state;
  assert_ok(lc_advance(f->h, "x", INT64_MAX - 1));
  assert_i64_eq(tu_next1(f->h, "x"), INT64_MAX - 1);
  assert_i64_eq(tu_next1(f->h, "x"), INT64_MAX);
  for (int i = 0; i < 3; i++) {
    int64_t v = 42;
    assert_rc(lc_next(f->h, "x", &v), LC_EOVERFLOW);
    assert_i64_eq(v, 42); /* written only on success */
    assert_rc(lc_next_n(f->h, "x", 1, &v), LC_EOVERFLOW);
    assert_i64_eq(v, 42);
  }
  /* memcached loses the counter: the restore must not wrap either. */
  assert_ok(mcd_flush_all(&mc));
  int64_t v = 42;
  assert_rc(lc_next(f->h, "x", &v), LC_EOVERFLOW);
  assert_i64_eq(v, 42);
  assert_ok(reopen(f));
  assert_ok(mcd_flush_all(&mc));
  assert_rc(lc_next(f->h, "x", &v), LC_EOVERFLOW);
  assert_i64_eq(v, 42);
  int64_t cur = -1;
  assert_ok(lc_current(f->h, "x", &cur));
  assert_i64_eq(cur, INT64_MAX);
}

static void test_overflow_block(void **state) {
  fx_t *f = *state;
  assert_ok(lc_advance(f->h, "y", INT64_MAX - 9));
  int64_t v = 42;
  /* 11 values would pass the end; the 10 that remain fit. */
  assert_rc(lc_next_n(f->h, "y", 11, &v), LC_EOVERFLOW);
  assert_i64_eq(v, 42);
  assert_rc(lc_next_n(f->h, "y", LC_BLOCK_MAX, &v), LC_EOVERFLOW);
  assert_ok(lc_next_n(f->h, "y", 10, &v));
  assert_i64_eq(v, INT64_MAX - 9);
  assert_rc(lc_next(f->h, "y", &v), LC_EOVERFLOW);
  /* advance to the very last value */
  assert_ok(lc_advance(f->h, "z", INT64_MAX));
  assert_i64_eq(tu_next1(f->h, "z"), INT64_MAX);
  assert_rc(lc_next(f->h, "z", &v), LC_EOVERFLOW);
}

static void test_bad_counts(void **state) {
  fx_t *f = *state;
  assert_i64_eq(tu_next1(f->h, "cnt"), 1);
  uint64_t bad[] = {0, LC_BLOCK_MAX + 1, UINT64_MAX, (uint64_t)INT64_MAX + 1};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int64_t v = 42;
    assert_rc(lc_next_n(f->h, "cnt", bad[i], &v), LC_ECOUNT);
    assert_i64_eq(v, 42);
  }
  assert_i64_eq(tu_next1(f->h, "cnt"), 2); /* nothing was consumed */
}

static void test_names(void **state) {
  fx_t *f = *state;
  char n200[LC_NAME_MAX + 1], n201[LC_NAME_MAX + 2], n251[252];
  memset(n251, 'x', 251);
  n251[251] = '\0';
  memset(n200, 'n', LC_NAME_MAX);
  n200[LC_NAME_MAX] = '\0';
  memset(n201, 'n', LC_NAME_MAX + 1);
  n201[LC_NAME_MAX + 1] = '\0';
  const char *good[] = {"a",   "orders",  "users/eu", "!~",
                        "a:b", "x.y-z_1", n200};
  const char *bad[] = {"",     "a b",  " ",     "a\tb", "a\nb",
                       "a\rb", "\x01", "a\x7f", "\x80", "caf\xc3\xa9",
                       "\xff", n201,   n251};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    assert_ok(lc_check_name(good[i]));
    assert_i64_eq(tu_next1(f->h, good[i]), 1);
  }
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int64_t v = 42;
    assert_rc(lc_check_name(bad[i]), LC_ENAME);
    assert_rc(lc_next(f->h, bad[i], &v), LC_ENAME);
    assert_rc(lc_next_n(f->h, bad[i], 2, &v), LC_ENAME);
    assert_rc(lc_current(f->h, bad[i], &v), LC_ENAME);
    assert_rc(lc_restore(f->h, bad[i], &v), LC_ENAME);
    assert_rc(lc_reservation(f->h, bad[i], &v), LC_ENAME);
    assert_rc(lc_advance(f->h, bad[i], 5), LC_ENAME);
    assert_i64_eq(v, 42);
    lc_iter *it = NULL;
    assert_rc(lc_iter_open(f->h, bad[i], &it), LC_ENAME);
    lc_prune_opts po = {.keep = 1};
    lc_prune_result pr;
    assert_rc(lc_prune(f->h, bad[i], &po, &pr), LC_ENAME);
  }
  /* The longest name survives a memcached loss. */
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, n200), 2);
  char key[LC_NAME_MAX + 8], buf[64];
  snprintf(key, sizeof key, "lc:%s", n200);
  assert_int_equal(mcd_get(&mc, key, buf, sizeof buf), 1);
  assert_string_equal(buf, "2");
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_true(st.errors >= sizeof bad / sizeof *bad);
}

/* Credentials (remote mode against logcounterd --auth-file): both or
 * neither, remote only, no space in the user, no control byte in the
 * password; all refused before anything is connected. */
static void test_remote_credentials_checked(void **state) {
  fx_t *f = *state;
  lc_t *h2 = NULL;
  lc_options o;
  lc_options_init(&o);
  o.server = "127.0.0.1:1";
  o.user = "u";
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* no password */
  o.password = "";
  assert_rc(lc_open(&o, &h2), LC_EINVAL);
  o.password = "p\r\nincr x 1";
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* a line break */
  o.password = "secret words";
  o.user = "a b";
  assert_rc(lc_open(&o, &h2), LC_EINVAL);
  o.user = NULL;
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* a password alone */
  o.user = "u";
  o.server = NULL;
  o.db_path = f->dir;
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* not remote */
  assert_null(h2);
  assert_true(strstr(lc_last_detail(), "remote") != NULL);
  assert_true(strstr(lc_last_detail(), "secret") == NULL);
}

/* TLS on a local handle is for replication only, and mutual: all three
 * files with a replication role; anything else is refused at lc_open. */
static void test_local_tls_checked(void **state) {
  fx_t *f = *state;
  lc_t *h2 = NULL;
  lc_options o;
  lc_options_init(&o);
  o.db_path = f->dir;
  o.tls_ca = o.tls_cert = o.tls_key = "/nonexistent.pem";
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* no replication role */
  assert_non_null(strstr(lc_last_detail(), "replication"));
  o.replication_listen = "127.0.0.1:1";
  o.tls_key = NULL;
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* not all three */
  o.tls_key = "/nonexistent.pem";
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* files that do not load */
  assert_non_null(strstr(lc_last_detail(), "/nonexistent.pem"));
  assert_null(h2);
}

static void test_null_args(void **state) {
  fx_t *f = *state;
  int64_t v = 42;
  lc_t *h2 = NULL;
  lc_options o;
  lc_options_init(&o);
  assert_rc(lc_open(NULL, &h2), LC_EINVAL);
  assert_rc(lc_open(&o, &h2), LC_EINVAL); /* db_path NULL */
  o.db_path = f->dir;
  assert_rc(lc_open(&o, NULL), LC_EINVAL);
  assert_null(h2);
  assert_rc(lc_next(NULL, "a", &v), LC_EINVAL);
  assert_rc(lc_next(f->h, NULL, &v), LC_EINVAL);
  assert_rc(lc_next(f->h, "a", NULL), LC_EINVAL);
  assert_rc(lc_next_n(NULL, "a", 1, &v), LC_EINVAL);
  assert_rc(lc_next_n(f->h, NULL, 1, &v), LC_EINVAL);
  assert_rc(lc_next_n(f->h, "a", 1, NULL), LC_EINVAL);
  assert_rc(lc_current(NULL, "a", &v), LC_EINVAL);
  assert_rc(lc_current(f->h, NULL, &v), LC_EINVAL);
  assert_rc(lc_current(f->h, "a", NULL), LC_EINVAL);
  assert_rc(lc_restore(NULL, "a", &v), LC_EINVAL);
  assert_rc(lc_restore(f->h, NULL, &v), LC_EINVAL);
  assert_rc(lc_restore(f->h, "a", NULL), LC_EINVAL);
  assert_rc(lc_reservation(NULL, "a", &v), LC_EINVAL);
  assert_rc(lc_reservation(f->h, NULL, &v), LC_EINVAL);
  assert_rc(lc_reservation(f->h, "a", NULL), LC_EINVAL);
  assert_rc(lc_advance(NULL, "a", 5), LC_EINVAL);
  assert_rc(lc_advance(f->h, NULL, 5), LC_EINVAL);
  assert_rc(lc_check_name(NULL), LC_EINVAL);
  lc_iter *it = NULL;
  assert_rc(lc_iter_open(NULL, "a", &it), LC_EINVAL);
  assert_rc(lc_iter_open(f->h, NULL, &it), LC_EINVAL);
  assert_rc(lc_iter_open(f->h, "a", NULL), LC_EINVAL);
  assert_null(it);
  lc_record rec;
  assert_rc(lc_iter_next(NULL, &rec), LC_EINVAL);
  lc_prune_opts po = {.keep = 1};
  lc_prune_result pr;
  assert_rc(lc_prune(NULL, "a", &po, &pr), LC_EINVAL);
  assert_rc(lc_prune(f->h, NULL, &po, &pr), LC_EINVAL);
  assert_rc(lc_prune(f->h, "a", NULL, &pr), LC_EINVAL);
  lc_prune_opts none = {0};
  assert_rc(lc_prune(f->h, "a", &none, &pr), LC_EINVAL); /* no criterion */
  lc_stats st;
  assert_rc(lc_get_stats(NULL, &st), LC_EINVAL);
  assert_rc(lc_get_stats(f->h, NULL), LC_EINVAL);
  lc_latency lat;
  assert_rc(lc_get_latency(NULL, &lat), LC_EINVAL);
  assert_rc(lc_get_latency(f->h, NULL), LC_EINVAL);
  assert_i64_eq(lc_latency_bound_us(0), 5);
  assert_i64_eq(lc_latency_bound_us(LC_LATENCY_BUCKETS - 2), 5000000);
  assert_true(lc_latency_bound_us(LC_LATENCY_BUCKETS - 1) == INT64_MAX);
  assert_true(lc_latency_bound_us(-1) == INT64_MAX);
  for (int i = 1; i < LC_LATENCY_BUCKETS - 1; i++)
    assert_true(lc_latency_bound_us(i) > lc_latency_bound_us(i - 1));
  lc_durability_t d = LC_DURABILITY_SYNC;
  assert_rc(lc_durability_parse(NULL, &d), LC_EINVAL);
  assert_rc(lc_durability_parse("sync", NULL), LC_EINVAL);
  assert_i64_eq(v, 42);
  /* Nothing above consumed a value. */
  assert_i64_eq(tu_next1(f->h, "a"), 1);
}

static void test_bad_options(void **state) {
  fx_t *f = *state;
  char path[512];
  lc_t *h2 = NULL;
  lc_options o;
  lc_options_init(&o);
  snprintf(path, sizeof path, "%s/db2", f->dir);
  o.db_path = path;
  o.memcached = "--THIS-IS-NOT-AN-OPTION=1";
  assert_rc(lc_open(&o, &h2), LC_ECONFIG);
  assert_null(h2);
  o.memcached = mcd_config(&mc);
  snprintf(path, sizeof path, "%s/missing/parent/db", f->dir);
  int rc = lc_open(&o, &h2);
  assert_true(rc < 0);
  assert_null(h2);
  assert_true(lc_last_detail()[0] != '\0');
  /* A log directory that is a file. */
  snprintf(path, sizeof path, "%s/file", f->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fclose(fp);
  rc = lc_open(&o, &h2);
  assert_true(rc < 0);
  assert_null(h2);
}

static void test_options_init(void **state) {
  (void)state;
  lc_options o;
  memset(&o, 0xa5, sizeof o);
  lc_options_init(&o);
  assert_null(o.db_path);
  assert_int_equal(o.durability, LC_DURABILITY_DEFAULT);
  assert_true(o.timeout_ms >= 0);
  assert_true(o.lock_wait_ms >= 0);
  assert_true(o.pool_size >= 0);
}

/* ---- errors ----------------------------------------------------------- */

static void test_error_table(void **state) {
  (void)state;
  static const struct {
    int code;
    const char *name;
  } all[] = {
#define X(name, num, msg) {LC_##name, #name},
      LC_ERRNO_MAP(X)
#undef X
  };
  size_t n = sizeof all / sizeof *all;
  assert_true(n >= 14);
  const char *unknown = lc_strerror(-9999);
  assert_non_null(unknown);
  assert_true(unknown[0] != '\0');
  for (size_t i = 0; i < n; i++) {
    assert_true(all[i].code < 0);
    const char *m = lc_strerror(all[i].code), *nm = lc_err_name(all[i].code);
    assert_non_null(m);
    assert_non_null(nm);
    assert_true(m[0] != '\0');
    assert_string_equal(nm, all[i].name);
    assert_string_not_equal(m, unknown);
    for (size_t j = 0; j < i; j++) {
      assert_int_not_equal(all[i].code, all[j].code);
      assert_string_not_equal(m, lc_strerror(all[j].code));
      assert_string_not_equal(nm, lc_err_name(all[j].code));
    }
  }
  int minc = 0;
  for (size_t i = 0; i < n; i++)
    if (all[i].code < minc) minc = all[i].code;
  int odd[] = {1, minc - 1, -1000, 12345, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
    const char *m = lc_strerror(odd[i]), *nm = lc_err_name(odd[i]);
    assert_non_null(m);
    assert_non_null(nm);
    assert_true(m[0] != '\0' && nm[0] != '\0');
    assert_string_equal(m, unknown);
    for (size_t j = 0; j < n; j++) assert_string_not_equal(nm, all[j].name);
  }
  assert_non_null(lc_strerror(0));
  assert_non_null(lc_err_name(0));
}

/* A handle on a port nobody listens on. */
static int open_dead(const char *dir, lc_t **out) {
  char path[512], cfg[64];
  snprintf(path, sizeof path, "%s/dead", dir);
  snprintf(cfg, sizeof cfg, "--SERVER=127.0.0.1:%d", mcd_free_port());
  lc_options o;
  lc_options_init(&o);
  o.memcached = cfg;
  o.db_path = path;
  o.timeout_ms = 300;
  return lc_open(&o, out);
}

typedef struct detail_arg {
  lc_t *h;
  int rc;
  char before[300];
  char after[300];
} detail_arg;

static void *detail_fresh_thread(void *p) {
  detail_arg *a = p;
  snprintf(a->before, sizeof a->before, "%s", lc_last_detail());
  int64_t v;
  /* A failure of another kind, with its own detail. */
  a->rc = lc_next(a->h, "bad name", &v);
  a->rc = lc_next(a->h, "dead", &v);
  snprintf(a->after, sizeof a->after, "%s", lc_last_detail());
  return NULL;
}

static void test_last_detail_thread_local(void **state) {
  fx_t *f = *state;
  lc_t *dead = NULL;
  assert_ok(open_dead(f->dir, &dead));
  int64_t v = 42;
  int rc = lc_next(dead, "dead", &v);
  assert_true(rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT);
  assert_i64_eq(v, 42);
  char mine[300];
  snprintf(mine, sizeof mine, "%s", lc_last_detail());
  assert_true(mine[0] != '\0');
  /* Another thread starts with an empty detail, gets its own, and does
   * not change ours. */
  detail_arg a = {.h = dead};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, detail_fresh_thread, &a), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_string_equal(a.before, "");
  assert_true(a.rc == LC_EMEMCACHED || a.rc == LC_ETIMEDOUT);
  assert_true(a.after[0] != '\0');
  assert_string_equal(lc_last_detail(), mine);
  /* A different failure in a thread, then ours is still ours. */
  detail_arg b = {.h = f->h};
  assert_ok(mcd_set(&mc, "lc:dead", "not-a-number"));
  assert_int_equal(pthread_create(&t, NULL, detail_fresh_thread, &b), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_rc(b.rc, LC_EBADVALUE);
  assert_true(b.after[0] != '\0');
  assert_string_not_equal(b.after, mine);
  assert_string_equal(lc_last_detail(), mine);
  lc_close(dead);
}

/* ---- small API pieces ---------------------------------------------------- */

static void test_version(void **state) {
  (void)state;
  assert_string_equal(lc_version(), LC_VERSION_STRING);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", LC_VERSION_MAJOR, LC_VERSION_MINOR,
           LC_VERSION_PATCH);
  assert_string_equal(LC_VERSION_STRING, want);
}

static void test_durability_parse(void **state) {
  (void)state;
  lc_durability_t d = LC_DURABILITY_SYNC;
  assert_ok(lc_durability_parse("default", &d));
  assert_int_equal(d, LC_DURABILITY_DEFAULT);
  assert_ok(lc_durability_parse("sync", &d));
  assert_int_equal(d, LC_DURABILITY_SYNC);
  const char *bad[] = {"", "syncx", "defaults", "fsync", " sync", "sync "};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    d = LC_DURABILITY_SYNC;
    assert_rc(lc_durability_parse(bad[i], &d), LC_EINVAL);
    assert_int_equal(d, LC_DURABILITY_SYNC); /* untouched */
  }
  assert_string_equal(lc_durability_name(LC_DURABILITY_DEFAULT), "default");
  assert_string_equal(lc_durability_name(LC_DURABILITY_SYNC), "sync");
  assert_ok(lc_durability_parse(lc_durability_name(LC_DURABILITY_SYNC), &d));
  assert_int_equal(d, LC_DURABILITY_SYNC);
  assert_non_null(lc_durability_name((lc_durability_t)7));
}

static void test_free_null(void **state) {
  (void)state;
  assert_int_equal(lc_close(NULL), 0);
  lc_iter_close(NULL);
}

/* batch_max = 1: concurrent callers are not merged, each costs its own
 * increment; the values stay unique and each thread's increase. */
typedef struct nomerge_arg {
  lc_t *h;
  int64_t ids[500];
  int rc;
} nomerge_arg;

static void *nomerge_main(void *p) {
  nomerge_arg *a = p;
  for (int i = 0; i < 500 && !a->rc; i++)
    a->rc = lc_next(a->h, "nm", &a->ids[i]);
  return NULL;
}

static void test_batch_max_one(void **state) {
  fx_t *f = *state;
  char path[512];
  snprintf(path, sizeof path, "%s/db2", f->dir);
  lc_options o;
  lc_options_init(&o);
  o.memcached = mcd_config(&mc);
  o.db_path = path;
  o.batch_max = 1;
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  static nomerge_arg args[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    args[i].h = h;
    args[i].rc = 0;
    assert_int_equal(pthread_create(&th[i], NULL, nomerge_main, &args[i]), 0);
  }
  int64_t all[2000];
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_rc(args[i].rc, 0);
    assert_int_equal(first_non_increasing(args[i].ids, 500), (size_t)-1);
    memcpy(all + i * 500, args[i].ids, sizeof args[i].ids);
  }
  assert_int_equal(count_duplicates(all, 2000), 0);
  lc_stats st;
  assert_ok(lc_get_stats(h, &st));
  assert_int_equal(st.allocations, 2000);
  /* one increment per call (a new counter's key is seeded before its
   * first increment: none misses) */
  if (st.increments != st.allocations)
    fail_msg("increments %llu, allocations %llu, restores %llu, backwards "
             "%llu",
             (unsigned long long)st.increments,
             (unsigned long long)st.allocations,
             (unsigned long long)st.restores, (unsigned long long)st.backwards);
  assert_int_equal(st.log_writes, 2000);
  assert_ok(lc_close(h));
}

static void test_stats(void **state) {
  fx_t *f = *state;
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.allocations + st.ids + st.increments + st.restores +
                       st.backwards + st.errors,
                   0);
  for (int i = 0; i < 10; i++) tu_next1(f->h, "s");
  int64_t v;
  assert_ok(lc_next_n(f->h, "s", 5, &v));
  assert_rc(lc_next_n(f->h, "s", 0, &v), LC_ECOUNT);
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.allocations, 11);
  assert_int_equal(st.ids, 15);
  /* single thread: one per call; the first use seeds the key before its
   * first increment, so that one does not miss */
  assert_int_equal(st.increments, 11);
  assert_int_equal(st.restores, 1);
  assert_int_equal(st.backwards, 0);
  assert_true(st.log_writes >= 11);
  assert_i64_eq(st.errors, 1); /* the lc_next_n(n = 0) that failed */
  /* memcached moved backwards: counted. */
  assert_ok(mcd_set(&mc, "lc:s", "3"));
  assert_i64_op(tu_next1(f->h, "s"), >, 15);
  assert_ok(lc_get_stats(f->h, &st));
  assert_true(st.backwards >= 1);
}

/* ---- iteration ---------------------------------------------------------- */

static void test_iteration(void **state) {
  fx_t *f = *state;
  int64_t t0 = now_us(), v;
  tu_next1(f->h, "it");                    /* [1,1] */
  assert_ok(lc_next_n(f->h, "it", 5, &v)); /* [2,6] */
  tu_next1(f->h, "it");                    /* [7,7] */
  assert_ok(lc_next_n(f->h, "it", 3, &v)); /* [8,10] */
  tu_next1(f->h, "itx");                   /* another counter */
  tu_next1(f->h, "i");
  int64_t t1 = now_us();
  static const int64_t want[][3] = {
      {1, 1, 1}, {2, 6, 5}, {7, 7, 1}, {8, 10, 3}};
  lc_iter *it = NULL;
  assert_ok(lc_iter_open(f->h, "it", &it));
  /* Allocations after the snapshot are not seen. */
  tu_next1(f->h, "it");
  lc_record r;
  for (size_t i = 0; i < 4; i++) {
    memset(&r, 0, sizeof r);
    assert_int_equal(lc_iter_next(it, &r), 1);
    assert_i64_eq(r.first, want[i][0]);
    assert_i64_eq(r.last, want[i][1]);
    assert_int_equal(r.count, (uint64_t)want[i][2]);
    assert_int_equal(r.count, (uint64_t)(r.last - r.first + 1));
    assert_i64_op(r.time_us, >=, t0 - 1000000);
    assert_i64_op(r.time_us, <=, t1 + 1000000);
    assert_true(r.version >= 1);
  }
  assert_int_equal(lc_iter_next(it, &r), 0);
  assert_int_equal(lc_iter_next(it, &r), 0);
  lc_iter_close(it);
  /* A fresh iterator sees the later record; times do not go backwards. */
  lc_record *rs;
  assert_int_equal(tu_records(f->h, "it", &rs), 5);
  assert_i64_eq(rs[4].first, 11);
  for (int i = 1; i < 5; i++) {
    assert_i64_op(rs[i].first, >, rs[i - 1].last);
    assert_i64_op(rs[i].time_us, >=, rs[i - 1].time_us);
  }
  free(rs);
  assert_int_equal(tu_records(f->h, "never-used", &rs), 0);
  free(rs);
  /* Records survive close and reopen. */
  assert_ok(reopen(f));
  assert_int_equal(tu_records(f->h, "it", &rs), 5);
  free(rs);
}

/* Plants undecodable records with LevelDB directly (the key layout of
 * src/keys.c: 'r' NAME '\0' then the last value as 8 big-endian bytes). */
static void put_raw(leveldb_t *db, const char *name, uint64_t last,
                    const char *val, size_t vlen) {
  char key[LC_NAME_MAX + 16];
  size_t n = strlen(name);
  key[0] = 'r';
  memcpy(key + 1, name, n);
  key[n + 1] = '\0';
  for (int i = 0; i < 8; i++) key[n + 2 + i] = (char)(last >> (56 - 8 * i));
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char *err = NULL;
  leveldb_put(db, wo, key, n + 10, val, vlen, &err);
  leveldb_writeoptions_destroy(wo);
  assert_null(err);
}

static void test_iter_corrupt_record(void **state) {
  fx_t *f = *state;
  for (int i = 0; i < 3; i++) tu_next1(f->h, "cr");
  lc_close(f->h);
  f->h = NULL;
  char path[512];
  snprintf(path, sizeof path, "%s/db", f->dir);
  leveldb_options_t *lo = leveldb_options_create();
  char *err = NULL;
  leveldb_t *db = leveldb_open(lo, path, &err);
  assert_null(err);
  put_raw(db, "cr", 50, "garbage", 7);
  put_raw(db, "cr", 60, "", 0);
  leveldb_close(db);
  leveldb_options_destroy(lo);
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  lc_iter *it = NULL;
  assert_ok(lc_iter_open(f->h, "cr", &it));
  lc_record r;
  for (int i = 1; i <= 3; i++) {
    assert_int_equal(lc_iter_next(it, &r), 1);
    assert_i64_eq(r.last, i);
  }
  assert_rc(lc_iter_next(it, &r), LC_ECORRUPT);
  assert_i64_eq(r.last, 50);
  assert_true(lc_last_detail()[0] != '\0');
  assert_rc(lc_iter_next(it, &r), LC_ECORRUPT);
  assert_i64_eq(r.last, 60);
  assert_int_equal(lc_iter_next(it, &r), 0);
  lc_iter_close(it);
  /* The counter itself goes on above every key in the log. */
  assert_ok(mcd_flush_all(&mc));
  assert_i64_op(tu_next1(f->h, "cr"), >, 60);
}

/* Writes one raw key into the test's log, which must be closed. */
static void put_closed(fx_t *f, const char *k, size_t kl, const char *v,
                       size_t vl) {
  char path[512];
  snprintf(path, sizeof path, "%s/db", f->dir);
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  char *err = NULL;
  leveldb_t *db = leveldb_open(lo, path, &err);
  assert_null(err);
  leveldb_put(db, wo, k, kl, v, vl, &err);
  assert_null(err);
  leveldb_close(db);
  leveldb_writeoptions_destroy(wo);
  leveldb_options_destroy(lo);
}

/* A log directory of an unknown format version is refused (clear errors); the
 * marker key is the one src/log.c writes. */
static void test_unknown_format(void **state) {
  fx_t *f = *state;
  tu_next1(f->h, "fmt");
  lc_close(f->h);
  f->h = NULL;
  const char *k = "!logcounter-format";
  put_closed(f, k, strlen(k), "99", 2);
  lc_t *h = NULL;
  assert_rc(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &h), LC_EFORMAT);
  assert_null(h);
  assert_true(lc_last_detail()[0] != '\0');
  /* Put back, it opens again and goes on. */
  put_closed(f, k, strlen(k), "1", 1);
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "fmt"), 2);
}

/* An undecodable reservation ('v' NAME in src/keys.c): the counter must
 * not restore below it blindly: either a clear LC_ECORRUPT, or a value
 * above everything logged. */
static void test_corrupt_reservation(void **state) {
  fx_t *f = *state;
  for (int i = 0; i < 5; i++) tu_next1(f->h, "cres");
  lc_close(f->h);
  f->h = NULL;
  put_closed(f, "vcres", 5, "junk", 4);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  int64_t v = 42;
  int rc = lc_next(f->h, "cres", &v);
  if (rc == 0) {
    assert_i64_op(v, >, 5);
  } else {
    assert_rc(rc, LC_ECORRUPT);
    assert_i64_eq(v, 42);
    assert_true(lc_last_detail()[0] != '\0');
  }
  /* Other counters are not affected. */
  assert_i64_eq(tu_next1(f->h, "other"), 1);
}

/* ---- close, reopen, reservation (survives power loss; no gap without a failure) ------------------------------- */

static void test_close_reopen_no_skip(void **state) {
  fx_t *f = *state;
  for (int i = 0; i < 100; i++) tu_next1(f->h, "cl");
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  int64_t r = -1;
  assert_ok(lc_reservation(f->h, "cl", &r));
  assert_i64_eq(r, 100);                    /* exact after a clean close */
  assert_i64_eq(tu_next1(f->h, "cl"), 101); /* memcached still had it */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "cl"), 102); /* restored from the log */
}

static void test_reservation_ahead(void **state) {
  fx_t *f = *state;
  lc_close(f->h);
  f->h = NULL;
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, f->dir, path);
  o.reserve = 10; /* small: crossed many times below */
  assert_ok(lc_open(&o, &f->h));
  int64_t r = -1;
  assert_ok(lc_reservation(f->h, "res", &r));
  assert_i64_eq(r, 0);
  for (int i = 0; i < 100; i++) {
    int64_t v = tu_next1(f->h, "res");
    assert_ok(lc_reservation(f->h, "res", &r));
    assert_i64_op(r, >=, v);
    if (i % 10 == 3) {
      assert_ok(lc_next_n(f->h, "res", 25, &v)); /* a block past the window */
      assert_ok(lc_reservation(f->h, "res", &r));
      assert_i64_op(r, >=, v + 24);
    }
  }
  /* lc_reservation reads, it does not change the counter. */
  int64_t c1 = -1, c2 = -1;
  assert_ok(lc_current(f->h, "res", &c1));
  assert_ok(lc_reservation(f->h, "res", &r));
  assert_ok(lc_current(f->h, "res", &c2));
  assert_i64_eq(c1, c2);
}

static void test_sync_mode(void **state) {
  fx_t *f = *state;
  lc_close(f->h);
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_SYNC, 0, &f->h));
  for (int64_t i = 1; i <= 20; i++) assert_i64_eq(tu_next1(f->h, "sy"), i);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "sy"), 21);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.allocations, 21);
  assert_true(st.log_syncs >= 21); /* every record synced */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "sy"), 22);
}

/* lc_next_quick: 0 until the counter is in use in the handle, 1 after,
 * 0 again for a fresh handle; always 0 in sync durability, for bad names
 * and NULL; it creates no state (stats and the log stay untouched). */
static void test_next_quick(void **state) {
  fx_t *f = *state;
  assert_int_equal(lc_next_quick(f->h, "qk"), 0);
  assert_int_equal(lc_next_quick(f->h, "bad name"), 0);
  assert_int_equal(lc_next_quick(NULL, "qk"), 0);
  assert_int_equal(lc_next_quick(f->h, NULL), 0);
  int64_t v = 0;
  assert_ok(lc_current(f->h, "qk", &v));
  assert_i64_eq(v, 0); /* nothing was created by the hints */
  assert_i64_eq(tu_next1(f->h, "qk"), 1);
  assert_int_equal(lc_next_quick(f->h, "qk"), 1);
  assert_int_equal(lc_next_quick(f->h, "other"), 0);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_SYNC, 0, &f->h));
  assert_int_equal(lc_next_quick(f->h, "qk"), 0);
  assert_i64_eq(tu_next1(f->h, "qk"), 2);
  assert_int_equal(lc_next_quick(f->h, "qk"), 0); /* every call syncs */
  assert_rc(lc_try_next_n(f->h, "qk", 1, &v), LC_EWOULDBLOCK);
}

/* lc_try_next_n without prefetch: LC_EWOULDBLOCK where lc_next_quick says
 * 0 (first use: nothing created, no error counted), else lc_next_n; bad
 * arguments get lc_next_n's errors at once, not a refusal to wait. */
static void test_try_next(void **state) {
  fx_t *f = *state;
  int64_t v = 0;
  assert_rc(lc_try_next_n(f->h, "tn", 1, &v), LC_EWOULDBLOCK);
  assert_rc(lc_try_next_n(f->h, "bad name", 1, &v), LC_ENAME);
  assert_rc(lc_try_next_n(f->h, "tn", 0, &v), LC_ECOUNT);
  assert_rc(lc_try_next_n(NULL, "tn", 1, &v), LC_EINVAL);
  assert_rc(lc_try_next_n(f->h, "tn", 1, NULL), LC_EINVAL);
  assert_ok(lc_current(f->h, "tn", &v));
  assert_i64_eq(v, 0); /* nothing was created */
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.errors, 2); /* the name and the count, not the
                                      refusal to wait */
  assert_i64_eq(tu_next1(f->h, "tn"), 1);
  assert_ok(lc_try_next_n(f->h, "tn", 5, &v));
  assert_i64_eq(v, 2);
  assert_i64_eq(tu_next1(f->h, "tn"), 7);
}

/* max_counters / max_tallies: a new name beyond the limit gets LC_ELIMIT
 * and creates nothing (not in memcached, not in the log); names in use go
 * on; reads of unused names are not refused; stats count the state. */
static void test_limits(void **state) {
  fx_t *f = *state;
  assert_ok(lc_close(f->h));
  f->h = NULL;
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, f->dir, path);
  o.max_counters = 3;
  o.max_tallies = 2;
  assert_ok(lc_open(&o, &f->h));
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "l%d", i);
    assert_i64_eq(tu_next1(f->h, name), 1);
  }
  int64_t v = 0;
  assert_rc(lc_next(f->h, "l3", &v), LC_ELIMIT);
  assert_non_null(strstr(lc_last_detail(), "max_counters 3"));
  assert_rc(lc_advance(f->h, "l3", 10), LC_ELIMIT);
  assert_i64_eq(mcd_counter_value(&mc, "l3"), -1);
  assert_ok(lc_current(f->h, "l3", &v)); /* reads: no state */
  assert_i64_eq(v, 0);
  assert_i64_eq(tu_next1(f->h, "l0"), 2); /* in use: goes on */
  assert_ok(lc_tally_add(f->h, "ta", 1));
  assert_ok(lc_tally_add(f->h, "tb", 1));
  assert_rc(lc_tally_add(f->h, "tc", 1), LC_ELIMIT);
  assert_ok(lc_tally_add(f->h, "ta", 1));
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.counters, 3);
  assert_int_equal(st.tallies, 2);
  /* the defaults when 0 */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  o.max_counters = o.max_tallies = 0;
  assert_ok(lc_open(&o, &f->h));
  assert_i64_eq(tu_next1(f->h, "l3"), 1);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup, tu_teardown)
      T(test_fresh_counter_starts_at_one),
      T(test_next_n_contiguous),
      T(test_block_max),
      T(test_counters_independent),
      T(test_flush_continues_without_gap),
      T(test_restore),
      T(test_current_changes_nothing),
      T(test_current_keeps_no_state),
      T(test_advance),
      T(test_overflow),
      T(test_overflow_block),
      T(test_bad_counts),
      T(test_names),
      T(test_null_args),
      T(test_remote_credentials_checked),
      T(test_local_tls_checked),
      T(test_bad_options),
      T(test_options_init),
      T(test_error_table),
      T(test_last_detail_thread_local),
      T(test_version),
      T(test_durability_parse),
      T(test_free_null),
      T(test_stats),
      T(test_batch_max_one),
      T(test_iteration),
      T(test_iter_corrupt_record),
      T(test_unknown_format),
      T(test_corrupt_reservation),
      T(test_close_reopen_no_skip),
      T(test_reservation_ahead),
      T(test_sync_mode),
      T(test_next_quick),
      T(test_try_next),
      T(test_limits),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
