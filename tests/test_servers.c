/*
 * test_servers.c - counters spread over three memcached servers (issue
 * 14): 8 threads allocate from 50 counters while one server fails.
 *
 *   - ejection off (the default): the failed server's counters fail with
 *     a clear error while it is down, and after it is back (empty) they
 *     are restored from the log; no id is handed out twice;
 *   - ejection on (--REMOVE-FAILED-SERVERS=1), the server frozen for
 *     1.5 s: no id is handed out twice, and after the thaw a new handle
 *     goes on above everything handed out.  (Seen here: the pooled
 *     connections time out on the frozen server rather than eject it, so
 *     its counters stay put; a server coming back with stale, lower
 *     values is the backwards check's case, tested in test_faults.c.)
 *
 * And one server alone, full (issue 21): its refusals reach the caller in
 * memcached's words.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcd.h"

#define SERVERS 3
#define NAMES 50
#define THREADS 8

static mcd_t srv[SERVERS];

typedef struct got {
  int idx;
  int64_t v;
} got;

typedef struct worker {
  pthread_t t;
  lc_t *h;
  int id;
  atomic_int *stop;
  got *g;
  size_t n, cap;
  atomic_long errors; /* read by the main thread while it runs */
  int last_err;
  char detail[256];
} worker;

static void *run(void *arg) {
  worker *w = arg;
  for (int i = w->id; !atomic_load(w->stop); i++) {
    char name[16];
    int idx = i % NAMES;
    snprintf(name, sizeof name, "s%d", idx);
    int64_t v;
    int rc = lc_next(w->h, name, &v);
    if (rc) {
      w->errors++;
      w->last_err = rc;
      snprintf(w->detail, sizeof w->detail, "%s", lc_last_detail());
      sleep_ms(1);
      continue;
    }
    if (w->n == w->cap) { /* no cmocka asserts in threads */
      got *g = realloc(w->g, (w->cap ? 2 * w->cap : 4096) * sizeof *g);
      if (g == NULL) {
        w->errors++;
        w->last_err = LC_ENOMEM;
        break;
      }
      w->g = g;
      w->cap = w->cap ? 2 * w->cap : 4096;
    }
    w->g[w->n++] = (got){idx, v};
  }
  return NULL;
}

static int cmp_got(const void *a, const void *b) {
  const got *x = a, *y = b;
  if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
  return x->v < y->v ? -1 : x->v > y->v;
}

/* Every value handed out, all threads: how many were handed out twice. */
static size_t duplicates(worker *w, size_t *total) {
  size_t n = 0;
  for (int i = 0; i < THREADS; i++) n += w[i].n;
  got *all = malloc((n ? n : 1) * sizeof *all);
  assert_non_null(all);
  size_t k = 0;
  for (int i = 0; i < THREADS; i++) {
    memcpy(all + k, w[i].g, w[i].n * sizeof *all);
    k += w[i].n;
  }
  qsort(all, n, sizeof *all, cmp_got);
  size_t dup = 0;
  for (size_t i = 1; i < n; i++)
    dup += all[i].idx == all[i - 1].idx && all[i].v == all[i - 1].v;
  free(all);
  *total = n;
  return dup;
}

static lc_t *open_spread(const char *dir, const char *extra) {
  char config[256], path[TU_PATH_MAX];
  snprintf(config, sizeof config, "%s %s %s%s", srv[0].config, srv[1].config,
           srv[2].config, extra);
  lc_options o;
  tu_options(&o, &srv[0], dir, path);
  o.memcached = config;
  o.timeout_ms = 200;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

static void start(worker *w, lc_t *h, atomic_int *stop) {
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.h = h, .id = i, .stop = stop};
    assert_int_equal(pthread_create(&w[i].t, NULL, run, &w[i]), 0);
  }
}

static long join(worker *w) {
  long errors = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(w[i].t, NULL);
    errors += atomic_load(&w[i].errors);
  }
  return errors;
}

/* After the outage every counter works again (libmemcached may keep a
 * failed server marked for a moment: retried for up to 5 s). */
static void all_work(lc_t *h) {
  for (int i = 0; i < NAMES; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", i);
    int64_t v;
    int rc = -1;
    for (int t = 0; t < 50 && rc; t++) {
      rc = lc_next(h, name, &v);
      if (rc) sleep_ms(100);
    }
    assert_ok(rc);
  }
}

static int group_setup(void **state) {
  (void)state;
  for (int i = 0; i < SERVERS; i++)
    if (mcd_start(&srv[i]) != 0) return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  for (int i = 0; i < SERVERS; i++) mcd_stop(&srv[i]);
  return 0;
}

/* One run: a fresh log on the three (flushed) servers, 8 threads already
 * allocating for 300 ms when run_begin returns. */
typedef struct outage {
  char *dir;
  lc_t *h;
  atomic_int stop;
  worker w[THREADS];
  long errors;       /* after run_end: calls that failed */
  size_t total, dup; /* ids handed out, and handed out twice */
  lc_stats st;
} outage;

static void run_begin(outage *r, const char *extra) {
  r->dir = tmpdir_make();
  assert_non_null(r->dir);
  for (int i = 0; i < SERVERS; i++) assert_ok(mcd_flush_all(&srv[i]));
  r->h = open_spread(r->dir, extra);
  atomic_store(&r->stop, 0);
  start(r->w, r->h, &r->stop);
  sleep_ms(300);
}

/* Stops the threads, checks every counter works again, and counts. */
static void run_end(outage *r) {
  atomic_store(&r->stop, 1);
  r->errors = join(r->w);
  all_work(r->h);
  r->dup = duplicates(r->w, &r->total);
  assert_ok(lc_get_stats(r->h, &r->st));
}

static void run_free(outage *r) {
  for (int i = 0; i < THREADS; i++) free(r->w[i].g);
  assert_ok(lc_close(r->h));
  tmpdir_free(r->dir);
}

static void test_server_killed_no_ejection(void **state) {
  (void)state;
  static outage r;
  run_begin(&r, "");
  worker *w = r.w;
  mcd_kill9(&srv[1]);
  sleep_ms(500);
  long during = 0;
  for (int i = 0; i < THREADS; i++) during += atomic_load(&w[i].errors);
  assert_int_equal(mcd_restart(&srv[1]), 0); /* back, empty */
  sleep_ms(1500);
  run_end(&r);
  int code = 0;
  const char *detail = "";
  for (int i = 0; i < THREADS; i++)
    if (atomic_load(&w[i].errors)) code = w[i].last_err, detail = w[i].detail;
  printf("# %zu ids, %ld errors (%ld while the server was down, last %s: "
         "%s), %llu restores\n",
         r.total, r.errors, during, lc_err_name(code), detail,
         (unsigned long long)r.st.restores);
  assert_true(during > 0); /* its counters failed ... */
  assert_true(code == LC_EMEMCACHED || code == LC_ETIMEDOUT); /* clearly */
  assert_true(r.st.restores > 0); /* ... and were restored */
  assert_int_equal(r.dup, 0);
  run_free(&r);
}

static void test_server_frozen_with_ejection(void **state) {
  (void)state;
  static outage r;
  run_begin(&r, " --REMOVE-FAILED-SERVERS=1");
  worker *w = r.w;
  assert_int_equal(mcd_freeze(&srv[1]), 0); /* keeps its values */
  sleep_ms(1500);
  assert_int_equal(mcd_thaw(&srv[1]), 0);
  sleep_ms(1000);
  run_end(&r);
  printf("# %zu ids, %ld errors, %llu restores, %llu backwards answers "
         "caught\n",
         r.total, r.errors, (unsigned long long)r.st.restores,
         (unsigned long long)r.st.backwards);
  assert_true(r.st.restores > 0); /* at least the first uses */
  assert_int_equal(r.dup, 0);
  /* After the thaw, a new handle (a restart) has every server in its
   * ring again: each next value must still be above all handed out. */
  int64_t top[NAMES] = {0};
  for (int i = 0; i < THREADS; i++)
    for (size_t k = 0; k < w[i].n; k++)
      if (w[i].g[k].v > top[w[i].g[k].idx]) top[w[i].g[k].idx] = w[i].g[k].v;
  assert_ok(lc_close(r.h));
  r.h = open_spread(r.dir, " --REMOVE-FAILED-SERVERS=1");
  for (int i = 0; i < NAMES; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", i);
    assert_true(tu_next1(r.h, name) > top[i]);
  }
  assert_ok(lc_get_stats(r.h, &r.st));
  printf("# reopened: every counter above all handed out (%llu stale "
         "answers caught)\n",
         (unsigned long long)r.st.backwards);
  run_free(&r);
}

/* The detail of the last failure says want, and not libmemcached's stale
 * "SUCCESS". */
static void assert_detail(const char *want) {
  const char *d = lc_last_detail();
  if (strstr(d, want) == NULL || strstr(d, "SUCCESS") != NULL)
    fail_msg("detail \"%s\", expected \"%s\" in it", d, want);
}

/* A memcached with -M and 2 MB, filled: an incr that needs a new item (9
 * -> 10 takes a digit more) is refused with "SERVER_ERROR out of memory",
 * and so is the add that seeds a new counter.  libmemcached turns that
 * reply into a code without recording it, and its last error message
 * then says "SUCCESS". */
static void test_server_out_of_memory(void **state) {
  (void)state;
  static const char *const tiny[] = {"-m", "2", "-o", "slab_automove=0", NULL};
  mcd_t m;
  assert_int_equal(mcd_start_with(&m, tiny), 0);
  char *dir = tmpdir_make();
  assert_non_null(dir);
  lc_t *h = NULL;
  assert_ok(tu_open(&m, dir, LC_DURABILITY_DEFAULT, 0, &h));
  for (int i = 1; i <= 9; i++) assert_i64_eq(tu_next1(h, "oom"), i);
  long stored = mcd_fill(&m);
  assert_true(stored > 0);
  int64_t v = -1;
  assert_rc(lc_next(h, "oom", &v), LC_EMEMCACHED);
  printf("# %ld values fill it; lc_next: %s\n", stored, lc_last_detail());
  assert_detail("memcached incr: SERVER_ERROR out of memory");
  assert_i64_eq(mcd_counter_value(&m, "oom"), 9); /* not incremented */
  assert_rc(lc_next(h, "new", &v), LC_EMEMCACHED);
  printf("# a new counter: %s\n", lc_last_detail());
  assert_detail("memcached add: SERVER_ERROR out of memory");
  assert_ok(lc_close(h));
  tmpdir_free(dir);
  mcd_stop(&m);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_killed_no_ejection),
      cmocka_unit_test(test_server_frozen_with_ejection),
      cmocka_unit_test(test_server_out_of_memory),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
