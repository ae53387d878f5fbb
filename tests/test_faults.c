/*
 * test_faults.c - failures injected under the library (unique; logged before returned; bounded; never waits forever; clear errors):
 *  - LevelDB writes that fail: this program is linked with
 *    -Wl,--wrap=leveldb_write, and __wrap_leveldb_write below fails on
 *    demand ("injected failure") without writing.  The call gets LC_ELOG,
 *    the value is never returned, later ids are unique and greater; also
 *    under threads (every 25th write fails), in the synced mode, in
 *    lc_advance, in lc_close's final write, and for a prefetched segment
 *    (none of its values goes out).  The gap ledger records the burned
 *    values (LC_GAP_BURNED) with the next write that succeeds.  After a
 *    failed write the log refuses everything (LC_ELOG, saying why) until
 *    it is reopened (lc_log_recover here, or the handle's own thread).
 *  - writes that land and then report failure (land_next: as a failed
 *    fsync after the batch reached LevelDB's write-ahead log) of the
 *    ownership and ledger records: a release, an adopt, a refusal, a
 *    void.  The caller gets LC_ELOG saying the outcome is unknown; after
 *    the reopen the handle acts as the log says (a landed release refuses
 *    the counter, a landed adopt lets it allocate), as a new handle does,
 *    and the same call again is safe (release: the same final value;
 *    void: 0).  And a tally flush that landed: the next change, finding
 *    memcached's sums gone, starts from the landed record (no false loss,
 *    and a later loss still measured).
 *  - synced writes delayed at random so that they complete out of order:
 *    the reservation in the log still covers every value returned.
 *  - memcached stopped and frozen (SIGSTOP): a clear error within the
 *    timeout (300 ms here; each call must return within 3 s: a "never
 *    hangs" bound, not a speed threshold), and allocation resumes with
 *    unique, greater ids after restart / thaw; lc_close of 40,000
 *    counters with memcached frozen returns within the same bound.
 *  - memcached holding a non-numeric value under the counter's key
 *    (LC_EBADVALUE, the value left as it is) and values near or past 2^64
 *    (never handed out: no wrap, no 0, no UINT64_MAX).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <leveldb/c.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h" /* the handle's synced write options */
#include "mcd.h"

/* ---- the leveldb_write seam ---------------------------------------------- */

static atomic_int fail_all;   /* 1: every write fails */
static atomic_int fail_every; /* n > 0: every n-th write fails */
static atomic_long writes_seen, writes_failed;
/* 1: the next write is made, then reported failed (a failed fsync after
 * the batch reached the write-ahead log); cleared by that write. */
static atomic_int land_next;
/* Synced writes with these options sleep 0-2 ms first, so that writes
 * made together complete in any order. */
static const leveldb_writeoptions_t *_Atomic slow_sync;
static atomic_uint slow_seed = 1;

void __real_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);
void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);

void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr) {
  long n = atomic_fetch_add(&writes_seen, 1) + 1;
  int every = atomic_load(&fail_every);
  if (atomic_load(&fail_all) || (every > 0 && n % every == 0)) {
    atomic_fetch_add(&writes_failed, 1);
    if (*errptr) leveldb_free(*errptr);
    *errptr = strdup("injected failure");
    return;
  }
  if (atomic_exchange(&land_next, 0)) {
    __real_leveldb_write(db, o, b, errptr);
    atomic_fetch_add(&writes_failed, 1);
    if (*errptr) leveldb_free(*errptr);
    *errptr = strdup("injected failure after the write landed");
    return;
  }
  if (o == atomic_load(&slow_sync)) {
    unsigned x = atomic_fetch_add(&slow_seed, 2654435761u);
    usleep((x >> 8) % 2000);
  }
  __real_leveldb_write(db, o, b, errptr);
}

static void inject_reset(void) {
  atomic_store(&fail_all, 0);
  atomic_store(&fail_every, 0);
  atomic_store(&land_next, 0);
  atomic_store(&writes_seen, 0);
  atomic_store(&writes_failed, 0);
}

/* ---- fixture -------------------------------------------------------------- */

static int setup_mode(void **state, lc_durability_t d) {
  inject_reset();
  if (mc.pid == 0 && mcd_restart(&mc) != 0) return -1;
  if (mc.frozen) mcd_thaw(&mc);
  return tu_setup_with(state, d, 300);
}

static int setup(void **state) {
  return setup_mode(state, LC_DURABILITY_DEFAULT);
}
static int setup_sync(void **state) {
  return setup_mode(state, LC_DURABILITY_SYNC);
}

static int teardown(void **state) {
  inject_reset();
  if (mc.frozen) mcd_thaw(&mc);
  if (mc.pid == 0) mcd_restart(&mc);
  return tu_teardown(state);
}

/* ---- log write failures (logged before returned) ------------------------------------------- */

/* After a failed write: the log is failed until reopened; reopen it now. */
static void reopen_log(lc_t *h) {
  lc_log_status st;
  assert_ok(lc_get_log_status(h, &st));
  assert_true(st.failures > 0);
  assert_ok(lc_log_recover(h));
  assert_ok(lc_get_log_status(h, &st));
  assert_int_equal(st.state, LC_LOG_OK);
}

static void test_log_write_failure(void **state) {
  fx_t *f = *state;
  int64_t last = 0;
  for (int i = 0; i < 5; i++) last = tu_next1(f->h, "lw");
  assert_i64_eq(last, 5);
  lc_stats before;
  assert_ok(lc_get_stats(f->h, &before));

  atomic_store(&fail_all, 1);
  int64_t burned_max = last;
  for (int i = 0; i < 3; i++) {
    int64_t v = 42;
    assert_rc(lc_next(f->h, "lw", &v), LC_ELOG);
    assert_i64_eq(v, 42); /* never returned */
    assert_non_null(strstr(lc_last_detail(), "injected failure"));
    assert_rc(lc_next_n(f->h, "lw", 10, &v), LC_ELOG);
    assert_i64_eq(v, 42);
    int64_t m = mcd_counter_value(&mc, "lw"); /* what incr reached */
    if (m > burned_max) burned_max = m;
  }
  atomic_store(&fail_all, 0);
  /* the first failure stops the log: later calls write nothing (unless
   * the handle's thread reopened it meanwhile) */
  assert_true(atomic_load(&writes_failed) >= 1);
  lc_stats st;
  assert_ok(lc_get_stats(f->h, &st));
  assert_int_equal(st.errors - before.errors, 6);
  assert_int_equal(st.allocations, before.allocations);
  reopen_log(f->h);

  /* The burned values are gone: the counter goes on above them. */
  int64_t v = tu_next1(f->h, "lw");
  assert_i64_op(v, >, burned_max);
  /* Nothing burned was logged: the records are 1..5 and v. */
  lc_record *r;
  assert_int_equal(tu_records(f->h, "lw", &r), 6);
  for (int i = 0; i < 5; i++) assert_i64_eq(r[i].last, i + 1);
  assert_i64_eq(r[5].last, v);
  free(r);
  /* The ledger says why 6..v-1 are missing (written with v's record). */
  tu_ledger l;
  assert_ok(tu_explain(f->h, "lw", &l));
  assert_i64_eq(l.values[0], 0);
  assert_i64_eq(l.values[LC_GAP_BURNED], v - 6);
  /* And after memcached loses the counter, still above everything. */
  assert_ok(mcd_flush_all(&mc));
  int64_t w = tu_next1(f->h, "lw");
  assert_i64_op(w, >, v);
}

/* Prefetch: a segment whose record cannot be written hands out none of
 * its values; the next segment starts above it. */
static void test_segment_write_failure(void **state) {
  fx_t *f = *state;
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options_sub(&o, &mc, f->dir, "pf", path);
  o.prefetch = 100;
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  int64_t v = 0;
  assert_ok(lc_next(h, "seg", &v));
  assert_i64_eq(v, 1);
  atomic_store(&fail_all, 1);
  int64_t burned = 0;
  for (int i = 0; i < 200; i++) { /* past the held segment */
    int64_t w = 42;
    int rc = lc_next(h, "seg", &w);
    if (rc) {
      assert_rc(rc, LC_ELOG);
      assert_i64_eq(w, 42); /* never returned */
      burned = mcd_counter_value(&mc, "seg");
      break;
    }
    assert_i64_eq(w, v + 1);
    v = w;
  }
  assert_i64_op(burned, >, v);
  atomic_store(&fail_all, 0);
  reopen_log(h);
  /* The failed fetch stopped the log, maybe before the held segment was
   * used up (the prefetcher fetches at half): what is left of it goes out
   * first, in order, then a new segment above the burned one. */
  int64_t w = 0;
  for (int i = 0; i < 200 && w <= burned; i++) {
    assert_ok(lc_next(h, "seg", &w));
    assert_i64_op(w, >, v);
    if (w <= burned) assert_i64_eq(w, v + 1); /* from the held segment */
    v = w;
  }
  assert_i64_op(w, >, burned);
  assert_ok(lc_close(h));
  /* Nothing is missing without a ledger entry; the burned segment is. */
  assert_ok(lc_open(&o, &h));
  tu_ledger l;
  assert_ok(tu_explain(h, "seg", &l));
  assert_i64_eq(l.values[0], 0);
  assert_i64_eq(l.conflicts, 0);
  assert_i64_op(l.values[LC_GAP_BURNED], >=, 1);
  assert_ok(lc_close(h));
}

/* Reservation writes of increments in flight together complete in any
 * order: the reservation in the log must still cover every value already
 * returned (a lower one written last would let a restore after a crash
 * start below them). */
typedef struct res_arg {
  lc_t *h;
  int rc;
  int64_t bad, bad_res;
} res_arg;

static void *res_main(void *p) {
  res_arg *a = p;
  for (int i = 0; i < 400 && !a->rc && !a->bad; i++) {
    int64_t v = 0, r = 0;
    if ((a->rc = lc_next(a->h, "res", &v)) != 0) break;
    if ((a->rc = lc_reservation(a->h, "res", &r)) != 0) break;
    if (r < v) a->bad = v, a->bad_res = r;
  }
  return NULL;
}

static void test_reservation_order(void **state) {
  fx_t *f = *state;
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options_sub(&o, &mc, f->dir, "res", path);
  o.reserve = 1; /* a reservation every 16 values */
  lc_t *h;
  assert_ok(lc_open(&o, &h));
  atomic_store(&slow_sync, h->log.sync);
  res_arg a[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (res_arg){.h = h};
    assert_int_equal(pthread_create(&t[i], NULL, res_main, &a[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  atomic_store(&slow_sync, NULL);
  for (int i = 0; i < 4; i++) {
    assert_ok(a[i].rc);
    if (a[i].bad)
      fail_msg("value %lld returned while the log's reservation was %lld",
               (long long)a[i].bad, (long long)a[i].bad_res);
  }
  assert_ok(lc_close(h));
}

/* A failing write on a fresh counter, with a reservation to write. */
static void test_log_write_failure_first_use(void **state) {
  fx_t *f = *state;
  atomic_store(&fail_all, 1);
  int64_t v = 42;
  assert_rc(lc_next(f->h, "first", &v), LC_ELOG);
  assert_i64_eq(v, 42);
  atomic_store(&fail_all, 0);
  reopen_log(f->h);
  v = tu_next1(f->h, "first");
  assert_i64_op(v, >=, 2); /* 1 was burned */
  tu_ledger l;
  assert_ok(tu_explain(f->h, "first", &l));
  assert_i64_eq(l.values[LC_GAP_BURNED], v - 1);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_op(tu_next1(f->h, "first"), >, v);
}

static void test_log_write_failure_sync(void **state) {
  fx_t *f = *state;
  int64_t ids[200];
  size_t n = 0;
  atomic_store(&fail_every, 3);
  long elog = 0;
  for (int i = 0; i < 150; i++) {
    int64_t v = 42;
    int rc = lc_next(f->h, "lws", &v);
    if (rc == 0) {
      ids[n++] = v;
    } else {
      assert_rc(rc, LC_ELOG);
      assert_i64_eq(v, 42);
      elog++;
      lc_log_recover(f->h);
    }
    if (i == 75) assert_ok(mcd_flush_all(&mc));
  }
  atomic_store(&fail_every, 0);
  reopen_log(f->h);
  assert_true(elog >= 40); /* a third of the writes failed */
  assert_int_equal(first_non_increasing(ids, n), (size_t)-1);
  /* Every returned value is in the log, and no burned one is. */
  lc_record *r;
  long nr = tu_records(f->h, "lws", &r);
  assert_int_equal(nr, (long)n);
  for (size_t i = 0; i < n; i++) assert_i64_eq(r[i].last, ids[i]);
  free(r);
  tu_next1(f->h, "lws"); /* the last burned ones ride with it */
  tu_ledger l;
  assert_ok(tu_explain(f->h, "lws", &l));
  assert_i64_eq(l.values[0], 0);
  /* each failed write burned its block; refused calls burn nothing */
  assert_i64_op(l.values[LC_GAP_BURNED], >=, atomic_load(&writes_failed));
}

typedef struct lw_worker {
  lc_t *h;
  long n;
  int64_t *ids;
  long got, elog;
  int bad_rc;
} lw_worker;

static void *lw_main(void *p) {
  lw_worker *w = p;
  long consecutive = 0;
  while (w->got < w->n) {
    int64_t v = 0;
    int rc = lc_next(w->h, "lwc", &v);
    if (rc == 0) {
      w->ids[w->got++] = v;
      consecutive = 0;
    } else if (rc == LC_ELOG && ++consecutive < 10000) {
      w->elog++;
      lc_log_recover(w->h); /* now, not at the next retry */
    } else {
      w->bad_rc = rc;
      break;
    }
  }
  return NULL;
}

static void test_log_write_failure_threads(void **state) {
  fx_t *f = *state;
  enum { T = 4 };
  long per = scaled(3000, 100);
  lw_worker w[T];
  pthread_t t[T];
  atomic_store(&fail_every, 25);
  for (int i = 0; i < T; i++) {
    w[i] = (lw_worker){.h = f->h, .n = per};
    w[i].ids = calloc((size_t)per, sizeof(int64_t));
    assert_non_null(w[i].ids);
    assert_int_equal(pthread_create(&t[i], NULL, lw_main, &w[i]), 0);
  }
  for (int k = 0; k < 3; k++) {
    sleep_ms(20);
    mcd_flush_all(&mc);
  }
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  atomic_store(&fail_every, 0);
  reopen_log(f->h);
  int64_t *all = malloc((size_t)(T * per) * sizeof *all);
  assert_non_null(all);
  long elog = 0;
  for (int i = 0; i < T; i++) {
    if (w[i].bad_rc) fail_msg("thread %d: %s", i, lc_err_name(w[i].bad_rc));
    assert_int_equal(first_non_increasing(w[i].ids, (size_t)per), (size_t)-1);
    memcpy(all + i * per, w[i].ids, (size_t)per * sizeof *all);
    elog += w[i].elog;
    free(w[i].ids);
  }
  printf("# %ld ids, %ld LC_ELOG, %ld of %ld writes failed\n", T * per, elog,
         atomic_load(&writes_failed), atomic_load(&writes_seen));
  assert_true(elog > 0);
  assert_int_equal(count_duplicates(all, (size_t)(T * per)), 0);
  /* Every returned value lies in a logged record. */
  lc_record *r;
  long nr = tu_records(f->h, "lwc", &r);
  assert_true(nr > 0);
  long j = 0;
  for (long i = 0; i < T * per; i++) {
    while (j < nr && r[j].last < all[i]) j++;
    if (j == nr || r[j].first > all[i])
      fail_msg("id %lld was returned but is in no record", (long long)all[i]);
  }
  free(r);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_op(tu_next1(f->h, "lwc"), >, all[T * per - 1]);
  free(all);
  tu_ledger l;
  assert_ok(tu_explain(f->h, "lwc", &l));
  assert_i64_eq(l.values[0], 0);
  assert_i64_eq(l.conflicts, 0);
  assert_i64_op(l.values[LC_GAP_BURNED], >=, atomic_load(&writes_failed));
}

static void test_advance_log_failure(void **state) {
  fx_t *f = *state;
  int64_t last = tu_next1(f->h, "adv");
  atomic_store(&fail_all, 1);
  assert_rc(lc_advance(f->h, "adv", 1000000), LC_ELOG);
  atomic_store(&fail_all, 0);
  reopen_log(f->h);
  int64_t v = tu_next1(f->h, "adv");
  assert_i64_op(v, >, last);
  assert_ok(lc_advance(f->h, "adv", 1000000));
  assert_i64_op(tu_next1(f->h, "adv"), >=, 1000000);
}

/* lc_close's final write fails: reported, handle freed, nothing reissued. */
static void test_close_log_failure(void **state) {
  fx_t *f = *state;
  int64_t last = 0;
  for (int i = 0; i < 20; i++) last = tu_next1(f->h, "cl");
  atomic_store(&fail_all, 1);
  assert_rc(lc_close(f->h), LC_ELOG);
  f->h = NULL;
  atomic_store(&fail_all, 0);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 300, &f->h));
  assert_i64_op(tu_next1(f->h, "cl"), >, last);
}

/* ---- ownership and ledger writes that land, then fail -------------------- */

/* The call's LC_ELOG says the outcome is unknown and a retry is safe. */
static void assert_unknown(int rc) {
  assert_rc(rc, LC_ELOG);
  assert_non_null(strstr(lc_last_detail(), "outcome is unknown"));
  assert_non_null(strstr(lc_last_detail(), "again is safe"));
}

/* A new handle on the same log (memcached untouched). */
static void reopen_handle(fx_t *f) {
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 300, &f->h));
}

/* A release that landed: after the reopen the counter is released here
 * (no id goes out), as in a new handle, and release again gives the
 * recorded final value. */
static void test_release_landed(void **state) {
  fx_t *f = *state;
  int64_t last = 0, final = 0, again = 0, v = 0;
  for (int i = 0; i < 5; i++) last = tu_next1(f->h, "rl");
  atomic_store(&land_next, 1);
  assert_unknown(lc_release(f->h, "rl", &final));
  reopen_log(f->h);
  assert_rc(lc_next(f->h, "rl", &v), LC_EOWNED);
  assert_non_null(strstr(lc_last_detail(), "released"));
  assert_ok(lc_release(f->h, "rl", &again)); /* the retry: idempotent */
  assert_i64_op(again, >=, last);
  reopen_handle(f);
  assert_rc(lc_next(f->h, "rl", &v), LC_EOWNED);
  assert_ok(lc_release(f->h, "rl", &final));
  assert_i64_eq(final, again);
  assert_ok(lc_adopt(f->h, "rl", final));
  assert_i64_op(tu_next1(f->h, "rl"), >, final);
}

/* An adopt that landed: after the reopen the counter allocates here, as in
 * a new handle; adopt again is harmless.  With prefetch too (its refused
 * counter is checked before any segment). */
static void adopt_landed(fx_t *f, uint64_t prefetch) {
  if (prefetch) {
    assert_ok(lc_close(f->h));
    assert_ok(tu_open_prefetch(f->dir, prefetch, &f->h));
  }
  int64_t final = 0;
  for (int i = 0; i < 5; i++) tu_next1(f->h, "ad");
  assert_ok(lc_release(f->h, "ad", &final));
  atomic_store(&land_next, 1);
  assert_unknown(lc_adopt(f->h, "ad", 0));
  reopen_log(f->h);
  int64_t a = tu_next1(f->h, "ad"); /* adopted: it landed */
  assert_i64_op(a, >, final);
  assert_ok(lc_adopt(f->h, "ad", 0));
  assert_i64_op(tu_next1(f->h, "ad"), >, a);
  reopen_handle(f);
  assert_i64_op(tu_next1(f->h, "ad"), >, a);
}

static void test_adopt_landed(void **state) { adopt_landed(*state, 0); }
static void test_adopt_landed_prefetch(void **state) {
  adopt_landed(*state, 100);
}

/* The refusal a claim held by another log writes, landed: refused after
 * the reopen and in a new handle, even once memcached lost the claim. */
static void test_refusal_landed(void **state) {
  fx_t *f = *state;
  int64_t v;
  assert_ok(mcd_set(&mc, "lo:rf", "0123456789abcdef otherhost 7"));
  atomic_store(&land_next, 1);
  assert_unknown(lc_next(f->h, "rf", &v));
  reopen_log(f->h);
  assert_rc(lc_next(f->h, "rf", &v), LC_EOWNED);
  assert_non_null(strstr(lc_last_detail(), "0123456789abcdef"));
  assert_ok(mcd_delete(&mc, "lo:rf"));
  reopen_handle(f);
  assert_rc(lc_next(f->h, "rf", &v), LC_EOWNED); /* the log's refusal */
}

/* A void that landed: the same void again answers 0, one with another
 * reason is EVOIDED, and the ledger holds it once. */
static void test_void_landed(void **state) {
  fx_t *f = *state;
  for (int i = 0; i < 3; i++) tu_next1(f->h, "vd");
  atomic_store(&land_next, 1);
  assert_unknown(lc_void(f->h, "vd", 2, "cancelled"));
  reopen_log(f->h);
  assert_ok(lc_void(f->h, "vd", 2, "cancelled")); /* the retry */
  assert_rc(lc_void(f->h, "vd", 2, "something else"), LC_EVOIDED);
  lc_iter *it = NULL;
  assert_ok(lc_ledger_open(f->h, "vd", &it));
  lc_gap g;
  int voids = 0;
  while (lc_ledger_next(it, &g) == 1)
    if (g.cause == LC_GAP_VOID) {
      voids++;
      assert_i64_eq(g.first, 2);
      assert_string_equal(g.reason, "cancelled");
    }
  lc_iter_close(it);
  assert_int_equal(voids, 1);
}

/* A tally flush that landed, then failed (a failed fsync after its batch
 * reached the write-ahead log): the handle's mirror of the record is
 * stale until it is read back.  memcached then loses the sums before the
 * next flush, so the next change finds its key gone (lc_tally_add seeds
 * it and records the loss).  That must start from the record as the log
 * holds it: no loss (all 80 were applied), the total never back below
 * them, and every acknowledged change counted once, as applied or as
 * lost, then and after a later loss (total + lost == acknowledged). */
static void test_tally_flush_landed(void **state) {
  fx_t *f = *state;
  int64_t acked = 0, total = 0, pending = 0;
  uint64_t lost = 0, lost_m = 0;
  for (int i = 0; i < 10; i++, acked += 3) assert_ok(lc_tally_add(f->h, "tl", 3));
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  for (int i = 0; i < 10; i++, acked += 5) assert_ok(lc_tally_add(f->h, "tl", 5));
  atomic_store(&land_next, 1);
  assert_rc(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL), LC_ELOG);
  reopen_log(f->h);
  assert_ok(mcd_flush_all(&mc)); /* the landed flush applied all 80 */
  assert_ok(lc_tally_add(f->h, "tl", 11)); /* finds the key gone */
  acked += 11;
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  assert_ok(lc_tally_get(f->h, "tl", &total, &pending, NULL));
  assert_ok(lc_tally_lost(f->h, "tl", &lost, &lost_m));
  printf("# after the landed flush and a loss of the sums: total %lld, "
         "pending %lld, lost %llu, acknowledged %lld\n", (long long)total,
         (long long)pending, (unsigned long long)lost, (long long)acked);
  /* nothing was lost: the sums memcached lost were applied (the durable
   * total never goes back below the 80 the landed flush applied) */
  assert_int_equal(lost, 0);
  assert_i64_eq(total + pending, acked);
  for (int i = 0; i < 10; i++, acked += 2) assert_ok(lc_tally_add(f->h, "tl", 2));
  assert_ok(mcd_flush_all(&mc)); /* these 20 are lost: measured */
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  assert_ok(lc_tally_get(f->h, "tl", &total, &pending, NULL));
  assert_ok(lc_tally_lost(f->h, "tl", &lost, &lost_m));
  printf("# after a later loss: total %lld, pending %lld, lost %llu, "
         "acknowledged %lld\n", (long long)total, (long long)pending,
         (unsigned long long)lost, (long long)acked);
  assert_i64_eq(total + pending + (int64_t)lost, acked);
  assert_int_equal(lost_m, 0);
}

/* ---- memcached down or hung (never waits forever) --------------------------------------- */

/* After memcached is back, allocation must work again soon: retries for up
 * to 5 s (libmemcached may keep a failed server disabled for a moment),
 * accepting only EMEMCACHED / ETIMEDOUT meanwhile. */
static int64_t next_after_recovery(lc_t *h, const char *name) {
  int64_t t0 = mono_us(), v = 42;
  long tries = 0;
  for (;;) {
    int rc = lc_next(h, name, &v);
    tries++;
    if (rc == 0) break;
    if (rc != LC_EMEMCACHED && rc != LC_ETIMEDOUT)
      fail_msg("after recovery: %s (%s)", lc_err_name(rc), lc_last_detail());
    if (mono_us() - t0 > 5000000)
      fail_msg("no allocation 5 s after memcached came back: %s (%s)",
               lc_err_name(rc), lc_last_detail());
    sleep_ms(5);
  }
  if (tries > 1)
    printf("# allocation worked again after %ld calls, %lld ms\n", tries,
           (long long)(mono_us() - t0) / 1000);
  return v;
}

#define NEVER_HANGS_US 3000000 /* a bound, not a speed threshold */

static int timed_next(lc_t *h, const char *name, int64_t *v, int64_t *us) {
  int64_t t0 = mono_us();
  int rc = lc_next(h, name, v);
  *us = mono_us() - t0;
  return rc;
}

static void test_memcached_stopped(void **state) {
  fx_t *f = *state;
  int64_t last = 0;
  for (int i = 0; i < 10; i++) last = tu_next1(f->h, "down");
  mcd_stop(&mc);
  for (int i = 0; i < 3; i++) {
    int64_t v = 42, us;
    int rc = timed_next(f->h, "down", &v, &us);
    if (rc != LC_EMEMCACHED && rc != LC_ETIMEDOUT)
      fail_msg("memcached stopped: lc_next = %s, want EMEMCACHED or ETIMEDOUT",
               lc_err_name(rc));
    assert_i64_eq(v, 42);
    assert_i64_op(us, <, NEVER_HANGS_US);
    assert_true(lc_last_detail()[0] != '\0');
  }
  int64_t t0 = mono_us(), v = 42;
  assert_true(lc_current(f->h, "down", &v) < 0);
  assert_true(lc_restore(f->h, "down", &v) < 0);
  assert_true(lc_advance(f->h, "down", 50) < 0);
  assert_true(lc_next_n(f->h, "down", 5, &v) < 0);
  assert_i64_eq(v, 42);
  assert_i64_op(mono_us() - t0, <, 4 * NEVER_HANGS_US);
  /* Back on the same port, empty: restored from the log. */
  assert_ok(mcd_restart(&mc));
  v = next_after_recovery(f->h, "down");
  assert_i64_op(v, >, last);
  assert_i64_op(tu_next1(f->h, "down"), >, v);
}

/* lc_close with memcached hung (a daemon's stop while memcached froze):
 * each of its lowering threads gives up after its first failed round, so
 * the close is bounded (not a timeout for each of its 79 rounds of
 * 512); the unused rests it could not set back are gaps, never reissued,
 * and the records are written exactly. */
static void test_close_memcached_hung(void **state) {
  fx_t *f = *state;
  enum { N = 40000, B = 100 };
  char path[TU_PATH_MAX], (*names)[16] = malloc(sizeof *names * N);
  int64_t *last = malloc(sizeof *last * N);
  lc_each v[B];
  assert_non_null(names);
  assert_non_null(last);
  lc_close(f->h);
  f->h = NULL;
  lc_options o;
  tu_options(&o, &mc, f->dir, path);
  o.prefetch = LC_PREFETCH_AUTO;
  o.timeout_ms = 300;
  assert_ok(lc_open(&o, &f->h));
  for (int i = 0; i < N; i += B) {
    for (int j = 0; j < B; j++) {
      snprintf(names[i + j], sizeof names[i + j], "hc%d", i + j);
      v[j] = (lc_each){.name = names[i + j], .n = 1};
    }
    assert_ok(lc_next_each(f->h, v, B));
    for (int j = 0; j < B; j++) last[i + j] = v[j].first;
  }
  assert_ok(mcd_freeze(&mc));
  int64_t t0 = mono_us();
  int rc = lc_close(f->h);
  int64_t us = mono_us() - t0;
  f->h = NULL;
  assert_ok(mcd_thaw(&mc));
  assert_ok(rc); /* the log took every record */
  printf("# lc_close of %d counters, memcached hung: %lld ms\n", N,
         (long long)us / 1000);
  assert_i64_op(us, <, NEVER_HANGS_US);
  assert_ok(lc_open(&o, &f->h));
  for (int i = 0; i < N; i += 97) {
    int64_t w = tu_next1(f->h, names[i]);
    if (w <= last[i])
      fail_msg("%s: %lld after a close with memcached hung, last was %lld",
               names[i], (long long)w, (long long)last[i]);
    if (i % 970 == 0) tu_check_explained(f->h, names[i]);
  }
  free(names);
  free(last);
}

static void test_open_with_memcached_down(void **state) {
  fx_t *f = *state;
  int64_t last = tu_next1(f->h, "od");
  lc_close(f->h);
  f->h = NULL;
  mcd_stop(&mc);
  int64_t t0 = mono_us();
  int rc = tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 300, &f->h);
  assert_i64_op(mono_us() - t0, <, NEVER_HANGS_US);
  if (rc == 0) {
    int64_t v = 42, us;
    rc = timed_next(f->h, "od", &v, &us);
    assert_true(rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT);
    assert_i64_op(us, <, NEVER_HANGS_US);
  } else {
    assert_true(rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT);
  }
  assert_ok(mcd_restart(&mc));
  if (f->h == NULL)
    assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 300, &f->h));
  assert_i64_op(next_after_recovery(f->h, "od"), >, last);
}

typedef struct frozen_arg {
  lc_t *h;
  int rc;
  int64_t us;
} frozen_arg;

static void *frozen_main(void *p) {
  frozen_arg *a = p;
  int64_t v;
  a->rc = timed_next(a->h, "frz", &v, &a->us);
  return NULL;
}

static void test_memcached_frozen(void **state) {
  fx_t *f = *state;
  int64_t ids[64];
  size_t n = 0;
  for (int i = 0; i < 10; i++) ids[n++] = tu_next1(f->h, "frz");
  assert_ok(mcd_freeze(&mc));
  for (int i = 0; i < 2; i++) {
    int64_t v = 42, us;
    int rc = timed_next(f->h, "frz", &v, &us);
    assert_rc(rc, LC_ETIMEDOUT);
    assert_i64_eq(v, 42);
    assert_i64_op(us, <, NEVER_HANGS_US);
    assert_true(lc_last_detail()[0] != '\0');
  }
  /* Several threads at once: each gets its error within the bound. */
  enum { T = 4 };
  frozen_arg a[T];
  pthread_t t[T];
  for (int i = 0; i < T; i++) {
    a[i] = (frozen_arg){.h = f->h};
    assert_int_equal(pthread_create(&t[i], NULL, frozen_main, &a[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(t[i], NULL);
    assert_rc(a[i].rc, LC_ETIMEDOUT);
    assert_i64_op(a[i].us, <, NEVER_HANGS_US);
  }
  int64_t t0 = mono_us(), v = 42;
  assert_rc(lc_current(f->h, "frz", &v), LC_ETIMEDOUT);
  assert_rc(lc_restore(f->h, "frz", &v), LC_ETIMEDOUT);
  assert_i64_op(mono_us() - t0, <, 2 * NEVER_HANGS_US);
  assert_ok(mcd_thaw(&mc));
  ids[n++] = next_after_recovery(f->h, "frz");
  for (int i = 0; i < 10; i++) ids[n++] = tu_next1(f->h, "frz");
  assert_int_equal(first_non_increasing(ids, n), (size_t)-1);
  /* Frozen while the counter is being restored. */
  assert_ok(mcd_flush_all(&mc));
  assert_ok(mcd_freeze(&mc));
  int64_t us;
  assert_rc(timed_next(f->h, "frz", &v, &us), LC_ETIMEDOUT);
  assert_i64_op(us, <, NEVER_HANGS_US);
  assert_ok(mcd_thaw(&mc));
  ids[n++] = next_after_recovery(f->h, "frz");
  for (int i = 0; i < 10; i++) ids[n++] = tu_next1(f->h, "frz");
  assert_int_equal(first_non_increasing(ids, n), (size_t)-1);
}

/* ---- what memcached holds (bounded; clear errors) --------------------------------------- */

static void test_nonnumeric_value(void **state) {
  fx_t *f = *state;
  int64_t last = 0;
  for (int i = 0; i < 5; i++) last = tu_next1(f->h, "nn");
  const char *bad[] = {"abc", "12abc", "-5", "", "1.5", "0x10"};
  char buf[64];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_ok(mcd_set(&mc, "lc:nn", bad[i]));
    int64_t v = 42;
    assert_rc(lc_next(f->h, "nn", &v), LC_EBADVALUE);
    assert_rc(lc_next_n(f->h, "nn", 3, &v), LC_EBADVALUE);
    assert_rc(lc_current(f->h, "nn", &v), LC_EBADVALUE);
    assert_rc(lc_restore(f->h, "nn", &v), LC_EBADVALUE);
    assert_i64_eq(v, 42);
    assert_true(lc_last_detail()[0] != '\0');
    /* left as it is */
    assert_int_equal(mcd_get(&mc, "lc:nn", buf, sizeof buf), 1);
    assert_string_equal(buf, bad[i]);
  }
  /* Someone repairs the key with a low number: the counter goes on above. */
  assert_ok(mcd_set(&mc, "lc:nn", "2"));
  assert_i64_op(tu_next1(f->h, "nn"), >, last);
  /* A counter the log has never seen, with garbage already in memcached. */
  assert_ok(mcd_set(&mc, "lc:fresh", "hello"));
  int64_t v = 42;
  assert_rc(lc_next(f->h, "fresh", &v), LC_EBADVALUE);
  assert_i64_eq(v, 42);
  assert_ok(mcd_delete(&mc, "lc:fresh"));
  assert_i64_eq(tu_next1(f->h, "fresh"), 1);
}

/* memcached's incr wraps at 2^64; values above 2^63-1 must never leak. */
static void test_huge_values(void **state) {
  fx_t *f = *state;
  const char *vals[] = {"9223372036854775807",  "9223372036854775806",
                        "9223372036854775800",  "18446744073709551614",
                        "18446744073709551615", "18446744073709551610"};
  for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
    for (int k = 0; k < 2; k++) {
      uint64_t n = k ? 10 : 1;
      char name[32], key[40];
      snprintf(name, sizeof name, "huge%zu-%d", i, k);
      snprintf(key, sizeof key, "lc:%s", name);
      int64_t last = 0;
      for (int j = 0; j < 5; j++) last = tu_next1(f->h, name);
      assert_ok(mcd_set(&mc, key, vals[i]));
      int64_t v = 42;
      int rc = lc_next_n(f->h, name, n, &v);
      if (rc == 0) {
        /* Only a block above everything handed out, within range. */
        assert_i64_op(v, >, last);
        assert_i64_op(v, <=, INT64_MAX - (int64_t)(n - 1));
        last = v + (int64_t)(n - 1);
      } else {
        assert_true(rc < 0);
        assert_i64_eq(v, 42);
      }
      /* Once the key is gone, allocation goes on above everything (or
       * the counter really is at its end). */
      assert_ok(mcd_delete(&mc, key));
      v = 42;
      rc = lc_next(f->h, name, &v);
      if (last == INT64_MAX) {
        assert_rc(rc, LC_EOVERFLOW);
      } else {
        assert_ok(rc);
        assert_i64_op(v, >, last);
      }
    }
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(test_log_write_failure),
      T(test_log_write_failure_first_use),
      T(test_segment_write_failure),
      T(test_reservation_order),
      cmocka_unit_test_setup_teardown(test_log_write_failure_sync, setup_sync,
                                      teardown),
      T(test_log_write_failure_threads),
      T(test_advance_log_failure),
      T(test_close_log_failure),
      T(test_release_landed),
      T(test_adopt_landed),
      T(test_adopt_landed_prefetch),
      T(test_refusal_landed),
      T(test_void_landed),
      T(test_tally_flush_landed),
      T(test_memcached_stopped),
      T(test_open_with_memcached_down),
      T(test_close_memcached_hung),
      T(test_memcached_frozen),
      T(test_nonnumeric_value),
      T(test_huge_values),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
