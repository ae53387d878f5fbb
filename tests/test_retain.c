/*
 * test_retain.c - retention (lc_options.retain_*) and lc_list_counters.
 *
 *  - retain_records = 100 every 100 ms while 4 threads allocate on 3
 *    counters for about 2 s: sampled every 200 ms, no counter holds more
 *    records than 100 plus what its measured allocation rate writes in an
 *    interval and two runs (doubled, for jitter); afterwards exactly 100;
 *    the newest record and the reservation always cover every id handed
 *    out; the status counts runs and exactly the records that went;
 *  - retain_age_us deletes the records older than the age (planted with old
 *    times), keeps the newer ones and the newest; with retain_records too,
 *    a record either criterion keeps stays;
 *  - after retention and a memcached wipe the next id is above every id
 *    handed out, also across close and reopen;
 *  - bad options are LC_EINVAL; lc_list_counters lists exactly the names
 *    in the log (one with only a reservation; not tallies), in order, each
 *    once, and stops when fn says so;
 *  - lc_close during a prune of a few hundred thousand records returns
 *    with the prune cut short, the log intact;
 *  - how long lc_next on the pruned counter waits while retention deletes
 *    a few hundred thousand of its records (printed, not asserted).
 * No timing thresholds: bounds come from measured rates and durations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leveldb/c.h>

#include "base/format.h"
#include "mcd.h"
#include "plant.h"

#define HOUR_US 3600000000LL

static int open_retain(fx_t *f, uint64_t records, int64_t age_us,
                       int64_t interval_ms, lc_t **out) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, f->dir, path);
  o.retain_records = records;
  o.retain_age_us = age_us;
  o.retain_interval_ms = interval_ms;
  o.batch_max = 1; /* one record per lc_next: records = ids */
  return lc_open(&o, out);
}

static lc_retention_status status(lc_t *h) {
  lc_retention_status st;
  assert_ok(lc_get_retention_status(h, &st));
  return st;
}

/* Waits until runs >= want (fails after 60 s: something is stuck). */
static lc_retention_status wait_runs(lc_t *h, uint64_t want) {
  int64_t until = mono_us() + 60000000LL;
  lc_retention_status st = status(h);
  while (st.runs < want) {
    if (mono_us() > until)
      fail_msg("retention made %llu runs, waited for %llu",
               (unsigned long long)st.runs, (unsigned long long)want);
    sleep_ms(5);
    st = status(h);
  }
  return st;
}

/* The counter's records: how many, the first value of the oldest and
 * the last of the newest; every record in order and of count 1 when
 * single. */
static long records(lc_t *h, const char *name, int64_t *first, int64_t *last,
                    bool single) {
  lc_iter *it;
  lc_record r;
  long n = 0;
  int rc;
  int64_t prev = 0;
  *first = *last = 0;
  assert_ok(lc_iter_open(h, name, &it));
  while ((rc = lc_iter_next(it, &r)) == 1) {
    if (n++ == 0) *first = r.first;
    assert_i64_op(r.first, >, prev);
    if (single) assert_int_equal(r.count, 1);
    prev = *last = r.last;
  }
  lc_iter_close(it);
  assert_rc(rc, 0);
  return n;
}

static int64_t reservation(lc_t *h, const char *name) {
  int64_t r = -1;
  assert_ok(lc_reservation(h, name, &r));
  return r;
}

/* Plants records [from, to] (one value each, written at time_us) and, when
 * res > 0, a reservation, into the closed log at DIR/db. */
static void plant(const char *dir, const char *name, int64_t from, int64_t to,
                  int64_t time_us, int64_t res) {
  char path[4096], *err = NULL;
  snprintf(path, sizeof path, "%s/db", dir);
  if (tu_plant(path, name, from, to, time_us, res, &err))
    fail_msg("planting %s in %s: %s", name, path, err);
}

static void close_fixture_handle(fx_t *f) {
  assert_ok(lc_close(f->h));
  f->h = NULL;
}

/* ---- retain_records while allocating ----------------------------------- */

enum { NC = 3, NT = 4, KEEP = 100, INTERVAL_MS = 100 };
static const char *const cnames[NC] = {"ra", "rb", "rc"};

typedef struct shared {
  lc_t *h;
  atomic_bool stop;
  atomic_uint_fast64_t allocs[NC];
  _Atomic int64_t acked[NC]; /* the largest id handed out */
} shared;

typedef struct worker {
  shared *s;
  int c;
  int rc;
  int64_t max_lat_us, prev;
  long n;
} worker;

static void *alloc_main(void *p) {
  worker *w = p;
  shared *s = w->s;
  while (!atomic_load(&s->stop)) {
    int64_t v, t0 = mono_us();
    if ((w->rc = lc_next(s->h, cnames[w->c], &v)) != 0) break;
    int64_t lat = mono_us() - t0;
    if (lat > w->max_lat_us) w->max_lat_us = lat;
    if (v <= w->prev) {
      w->rc = LC_ECORRUPT; /* not increasing: caught below */
      break;
    }
    w->prev = v;
    w->n++;
    int64_t m = atomic_load(&s->acked[w->c]);
    while (v > m && !atomic_compare_exchange_weak(&s->acked[w->c], &m, v)) {
    }
    atomic_fetch_add(&s->allocs[w->c], 1);
  }
  return NULL;
}

static void test_retain_records_while_allocating(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  shared s;
  memset(&s, 0, sizeof s);
  assert_ok(open_retain(f, KEEP, 0, INTERVAL_MS, &s.h));
  f->h = s.h;
  worker w[NT];
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) {
    w[i] = (worker){.s = &s, .c = i % NC};
    assert_int_equal(pthread_create(&t[i], NULL, alloc_main, &w[i]), 0);
  }
  /* Every counter has a record before the runs counted below begin: a run
   * that listed the log before that prunes fewer than NC. */
  for (int c = 0; c < NC; c++)
    while (atomic_load(&s.acked[c]) == 0) sleep_ms(1);
  lc_retention_status base = status(s.h);
  int64_t t_prev = mono_us(), t_end = t_prev + 2000000, opened = now_us();
  uint64_t a_prev[NC] = {0};
  double peak_rate[NC] = {0}; /* allocations per us, over a sample */
  int64_t max_dur = 0, max_window = 0;
  long peak[NC] = {0}, peak_allow[NC] = {0}, samples = 0, over_keep = 0;
  char why[512] = "";
  while (mono_us() < t_end) {
    sleep_ms(200);
    lc_retention_status st = status(s.h);
    if (st.last_duration_us > max_dur) max_dur = st.last_duration_us;
    /* Every record of a counter written before the last finished run
     * began, except the KEEP newest, is gone: what can be there is what
     * was written since then (or since the open). */
    int64_t since = st.runs ? st.last_run_us - st.last_duration_us : opened;
    int64_t window = now_us() - since;
    if (window > max_window) max_window = window;
    int64_t now = mono_us();
    for (int c = 0; c < NC; c++) {
      int64_t acked = atomic_load(&s.acked[c]);
      uint64_t a = atomic_load(&s.allocs[c]);
      double rate = (double)(a - a_prev[c]) / (double)(now - t_prev);
      if (rate > peak_rate[c]) peak_rate[c] = rate;
      a_prev[c] = a;
      int64_t first, last;
      long n = records(s.h, cnames[c], &first, &last, true);
      /* that at the peak rate, doubled for jitter */
      long allow = KEEP + (long)(2.0 * peak_rate[c] * (double)window) + 20;
      if (n > allow)
        snprintf(why, sizeof why,
                 "%s: %ld records, allowed %ld (peak %.0f ids/s, %lld us "
                 "since the last finished run began; %llu runs, longest "
                 "%lld us)",
                 cnames[c], n, allow, peak_rate[c] * 1e6, (long long)window,
                 (unsigned long long)st.runs, (long long)max_dur);
      if (n > peak[c]) {
        peak[c] = n;
        peak_allow[c] = allow;
      }
      if (n > KEEP) over_keep++;
      /* the newest record and the reservation cover what went out */
      int64_t res = -1;
      if (last < acked || lc_reservation(s.h, cnames[c], &res) != 0 ||
          res < acked)
        snprintf(why, sizeof why,
                 "%s: newest record %lld, reservation %lld, below %lld "
                 "handed out",
                 cnames[c], (long long)last, (long long)res, (long long)acked);
    }
    t_prev = now;
    if (why[0]) break; /* the threads are joined first */
    samples++;
  }
  atomic_store(&s.stop, true);
  int64_t max_lat = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(t[i], NULL);
    assert_rc(w[i].rc, 0);
    if (w[i].max_lat_us > max_lat) max_lat = w[i].max_lat_us;
  }
  if (why[0]) fail_msg("%s", why);
  /* Two more runs, both after the last write: each counter at KEEP. */
  lc_retention_status st = wait_runs(s.h, status(s.h).runs + 2);
  uint64_t gone = 0;
  int64_t max[NC];
  for (int c = 0; c < NC; c++) {
    int64_t first, last;
    max[c] = atomic_load(&s.acked[c]);
    assert_int_equal(atomic_load(&s.allocs[c]), (uint64_t)max[c]);
    assert_i64_op(max[c], >, KEEP);
    assert_int_equal(records(s.h, cnames[c], &first, &last, true), KEEP);
    assert_i64_eq(last, max[c]);
    assert_i64_eq(first, max[c] - KEEP + 1);
    assert_i64_op(reservation(s.h, cnames[c]), >=, max[c]);
    gone += (uint64_t)(first - 1);
  }
  st = status(s.h); /* a run under way now deletes nothing */
  assert_int_equal(st.errors, 0);
  assert_string_equal(st.last_error, "");
  assert_int_equal(st.records_deleted, gone);
  assert_int_equal(st.ledger_deleted, 0);
  assert_true(st.runs >= 3);
  /* the run under way when base was read may have listed the log early */
  assert_true(st.counters >= base.counters + NC * (st.runs - base.runs - 1));
  assert_true(st.counters <= NC * (st.runs + 1));
  assert_i64_op(st.last_run_us, <=, now_us());
  assert_i64_op(st.last_run_us, >, now_us() - 60000000LL);
  assert_i64_op(st.last_duration_us, >, 0);
  printf("# %llu runs deleted %llu records; %ld samples, %ld above %d; "
         "longest run %lld us, longest since a run began %lld us (interval "
         "%d ms); longest lc_next %lld us\n",
         (unsigned long long)st.runs, (unsigned long long)st.records_deleted,
         samples, over_keep, KEEP, (long long)max_dur, (long long)max_window,
         INTERVAL_MS, (long long)max_lat);
  for (int c = 0; c < NC; c++)
    printf("# %s: %lld ids, peak %ld records (allowed %ld, %.0f ids/s)\n",
           cnames[c], (long long)max[c], peak[c], peak_allow[c],
           peak_rate[c] * 1e6);
  /* memcached wiped: every counter goes on above what went out */
  assert_ok(mcd_flush_all(&mc));
  for (int c = 0; c < NC; c++)
    assert_i64_eq(tu_next1(s.h, cnames[c]), max[c] + 1);
}

/* ---- retain_age_us ------------------------------------------------------ */

static void test_retain_age(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  int64_t now = now_us(), old = now - 2 * HOUR_US;
  plant(f->dir, "age", 1, 50, old, 0);    /* deleted */
  plant(f->dir, "age", 51, 80, now, 0);   /* kept */
  plant(f->dir, "allold", 1, 40, old, 0); /* only the newest stays */
  plant(f->dir, "new", 1, 30, now, 0);    /* nothing deleted */
  assert_ok(mcd_flush_all(&mc));
  assert_ok(open_retain(f, 0, HOUR_US, 20, &f->h));
  lc_retention_status st = wait_runs(f->h, 1);
  int64_t first, last;
  assert_int_equal(records(f->h, "age", &first, &last, true), 30);
  assert_i64_eq(first, 51);
  assert_i64_eq(last, 80);
  assert_int_equal(records(f->h, "allold", &first, &last, true), 1);
  assert_i64_eq(first, 40);
  assert_int_equal(records(f->h, "new", &first, &last, true), 30);
  assert_i64_eq(first, 1);
  assert_int_equal(st.errors, 0);
  assert_int_equal(st.records_deleted, 50 + 39);
  /* the restore continues above the newest record */
  assert_i64_eq(tu_next1(f->h, "age"), 81);
  assert_i64_eq(tu_next1(f->h, "allold"), 41);
  close_fixture_handle(f);

  /* Both criteria: a record either one keeps stays (10 newest). */
  plant(f->dir, "both", 1, 50, old, 0);
  plant(f->dir, "both", 51, 55, now, 0);
  assert_ok(open_retain(f, 10, HOUR_US, 20, &f->h));
  wait_runs(f->h, 1);
  assert_int_equal(records(f->h, "both", &first, &last, true), 10);
  assert_i64_eq(first, 46);
  assert_int_equal(records(f->h, "age", &first, &last, true), 31);
}

/* ---- the next id after retention and a memcached wipe ------------------ */

static void test_retain_wipe_next_above(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  assert_ok(open_retain(f, 5, 0, 20, &f->h));
  int64_t v = 0;
  for (int i = 0; i < 300; i++) v = tu_next1(f->h, "w");
  int64_t res = reservation(f->h, "w");
  wait_runs(f->h, status(f->h).runs + 2);
  int64_t first, last;
  assert_int_equal(records(f->h, "w", &first, &last, true), 5);
  assert_i64_eq(last, v);
  assert_i64_eq(reservation(f->h, "w"), res);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "w"), v + 1);
  /* more runs, then close, wipe, reopen without retention */
  wait_runs(f->h, status(f->h).runs + 2);
  close_fixture_handle(f);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "w"), v + 2);
  lc_retention_status st = status(f->h);
  assert_int_equal(st.runs, 0); /* retention off: all zero */
  assert_int_equal(st.last_run_us, 0);
}

/* ---- options ------------------------------------------------------------ */

static int dummy(void *a, const char *name) {
  (void)a;
  (void)name;
  return 0;
}

static void test_retain_bad_options(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  char path[TU_PATH_MAX];
  lc_options o;
  lc_t *h = NULL;
  tu_options(&o, &mc, f->dir, path);
  o.retain_age_us = -1;
  assert_rc(lc_open(&o, &h), LC_EINVAL);
  assert_non_null(strstr(lc_last_detail(), "retain_age_us"));
  o.retain_age_us = 0;
  o.retain_records = 10;
  o.retain_interval_ms = -5;
  assert_rc(lc_open(&o, &h), LC_EINVAL);
  assert_non_null(strstr(lc_last_detail(), "retain_interval_ms"));
  o.retain_interval_ms = INT64_MAX;
  assert_rc(lc_open(&o, &h), LC_EINVAL);
  o.retain_records = 0; /* an interval alone */
  o.retain_interval_ms = 1000;
  assert_rc(lc_open(&o, &h), LC_EINVAL);
  /* remote handles: retention runs where the log is */
  lc_options r;
  lc_options_init(&r);
  r.server = "127.0.0.1:1";
  r.retain_records = 10;
  assert_rc(lc_open(&r, &h), LC_EINVAL);
  assert_non_null(strstr(lc_last_detail(), "where the log is"));
  assert_null(h);
  r.retain_records = 0;
  if (lc_open(&r, &h) == 0) { /* the pool connects lazily */
    lc_retention_status st;
    assert_rc(lc_get_retention_status(h, &st), LC_EREMOTE);
    assert_rc(lc_list_counters(h, NULL, NULL, NULL), LC_EINVAL);
    uint64_t n = 7;
    assert_rc(lc_list_counters(h, dummy, NULL, &n), LC_EREMOTE);
    assert_int_equal(n, 7);
    lc_close(h);
    h = NULL;
  }
  /* a valid set opens; the default interval is long */
  tu_options(&o, &mc, f->dir, path);
  o.retain_records = 3;
  assert_ok(lc_open(&o, &f->h));
  assert_rc(lc_get_retention_status(f->h, NULL), LC_EINVAL);
  assert_rc(lc_get_retention_status(NULL, &(lc_retention_status){0}),
            LC_EINVAL);
  for (int i = 0; i < 10; i++) tu_next1(f->h, "d");
  sleep_ms(50);
  assert_int_equal(status(f->h).runs, 0);
}

/* ---- lc_list_counters --------------------------------------------------- */

typedef struct seen {
  char names[16][LC_NAME_MAX + 1];
  int n, stop_at;
} seen;

static int on_name(void *arg, const char *name) {
  seen *s = arg;
  assert_true(s->n < 16);
  snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
  s->n++;
  return s->stop_at && s->n == s->stop_at;
}

static void test_list_counters(void **state) {
  fx_t *f = *state;
  seen s = {0};
  uint64_t n = 99;
  assert_ok(lc_list_counters(f->h, on_name, &s, &n)); /* empty log */
  assert_int_equal(n, 0);
  assert_int_equal(s.n, 0);
  const char *used[] = {"b", "a!", "ab", "a", "z~", "many"};
  for (size_t i = 0; i < sizeof used / sizeof *used; i++) tu_next1(f->h, used[i]);
  for (int i = 0; i < 2000; i++) tu_next1(f->h, "many");
  assert_ok(lc_tally_add(f->h, "tally-only", 3));
  assert_ok(lc_tally_flush(f->h, 0, LC_TALLY_FORCE, NULL));
  close_fixture_handle(f);
  plant(f->dir, "res-only", 1, 0, 0, 500); /* a reservation, no record */
  plant(f->dir, "rec-only", 1, 3, now_us(), 0);
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  const char *want[] = {"a",    "a!",       "ab",       "b",
                        "many", "rec-only", "res-only", "z~"};
  int nw = (int)(sizeof want / sizeof *want);
  assert_ok(lc_list_counters(f->h, on_name, &s, &n));
  assert_int_equal(n, (uint64_t)nw);
  assert_int_equal(s.n, nw);
  for (int i = 0; i < nw; i++) assert_string_equal(s.names[i], want[i]);
  /* fn stops it */
  memset(&s, 0, sizeof s);
  s.stop_at = 3;
  assert_ok(lc_list_counters(f->h, on_name, &s, &n));
  assert_int_equal(n, 3);
  assert_int_equal(s.n, 3);
  assert_string_equal(s.names[2], "ab");
  assert_ok(lc_list_counters(f->h, on_name, &s, NULL)); /* count may be NULL */
  /* retention over a reservation-only counter is not an error */
  close_fixture_handle(f);
  assert_ok(open_retain(f, 1, 0, 10, &f->h));
  lc_retention_status st = wait_runs(f->h, 2);
  assert_int_equal(st.errors, 0);
  assert_true(st.counters >= 2 * (uint64_t)nw);
  assert_int_equal(st.records_deleted, 2000 + 2); /* many, rec-only */
  assert_i64_eq(reservation(f->h, "res-only"), 500);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "res-only"), 501);
}

/* ---- lc_close during a run ---------------------------------------------- */

/* The first value of the counter's oldest record (0: none). */
static int64_t oldest(lc_t *h, const char *name) {
  lc_iter *it;
  lc_record r;
  assert_ok(lc_iter_open(h, name, &it));
  int rc = lc_iter_next(it, &r);
  lc_iter_close(it);
  assert_true(rc >= 0);
  return rc == 1 ? r.first : 0;
}

static void test_retain_close_during_run(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  long total = scaled(300000, 100000);
  plant(f->dir, "big", 1, total, now_us(), total);
  assert_ok(open_retain(f, 1, 0, 1, &f->h));
  int64_t until = mono_us() + 60000000LL;
  while (oldest(f->h, "big") == 1) { /* the first batch is not gone yet */
    if (mono_us() > until) fail_msg("the prune never started");
    sleep_ms(1);
  }
  int64_t t0 = mono_us();
  assert_ok(lc_close(f->h));
  int64_t closed = mono_us() - t0;
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  int64_t first, last;
  long n = records(f->h, "big", &first, &last, true);
  printf("# lc_close took %lld us during a prune of %ld records; %ld left\n",
         (long long)closed, total, n);
  assert_i64_eq(last, total);
  assert_true(n > 1); /* the prune was cut short */
  assert_i64_eq(first, total - n + 1);
  assert_i64_op(reservation(f->h, "big"), >=, total);
  assert_i64_eq(tu_next1(f->h, "big"), total + 1);
}

/* ---- lc_next while retention deletes many records ----------------------- */

typedef struct prober {
  lc_t *h;
  atomic_bool stop, pruning;
  int rc;
  long n, n_pruning;
  int64_t max_before, max_during, prev;
} prober;

static void *probe_main(void *p) {
  prober *q = p;
  while (!atomic_load(&q->stop)) {
    bool during = atomic_load(&q->pruning);
    int64_t v, t0 = mono_us();
    if ((q->rc = lc_next(q->h, "big", &v)) != 0) break;
    int64_t lat = mono_us() - t0;
    if (v <= q->prev) q->rc = LC_ECORRUPT;
    q->prev = v;
    q->n++;
    if (during) {
      q->n_pruning++;
      if (lat > q->max_during) q->max_during = lat;
    } else if (lat > q->max_before) {
      q->max_before = lat;
    }
  }
  return NULL;
}

static void test_retain_next_during_big_prune(void **state) {
  fx_t *f = *state;
  close_fixture_handle(f);
  long total = scaled(400000, 100000);
  plant(f->dir, "big", 1, total, now_us(), total);
  assert_ok(open_retain(f, KEEP, 0, 1000, &f->h));
  prober q = {.h = f->h};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, probe_main, &q), 0);
  int64_t until = mono_us() + 60000000LL;
  while (oldest(f->h, "big") == 1) { /* before the first deletions */
    if (mono_us() > until) fail_msg("the prune never started");
    sleep_ms(1);
  }
  atomic_store(&q.pruning, true);
  lc_retention_status st = wait_runs(f->h, 1);
  atomic_store(&q.stop, true);
  pthread_join(t, NULL);
  assert_rc(q.rc, 0);
  printf("# a retention run deleted %llu records in %lld us; lc_next on the "
         "same counter: longest %lld us during it (%ld calls), %lld us "
         "before\n",
         (unsigned long long)st.records_deleted, (long long)st.last_duration_us,
         (long long)q.max_during, q.n_pruning, (long long)q.max_before);
  assert_true(st.records_deleted >= (uint64_t)total - KEEP);
  int64_t first, last;
  long n = records(f->h, "big", &first, &last, true);
  assert_i64_eq(last, q.prev);
  assert_true(n >= KEEP);
  assert_ok(mcd_flush_all(&mc));
  assert_i64_eq(tu_next1(f->h, "big"), q.prev + 1);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup, tu_teardown)
      T(test_retain_records_while_allocating),
      T(test_retain_age),
      T(test_retain_wipe_next_above),
      T(test_retain_bad_options),
      T(test_list_counters),
      T(test_retain_close_during_run),
      T(test_retain_next_during_big_prune),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
