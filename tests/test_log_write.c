/*
 * test_log_write.c - the log's group commit (src/log/log_write.c) against
 * a real LevelDB in a temporary directory, no memcached, no handle: an
 * lc__log opened with lc__log_open, written with lc__log_write.
 *
 * The program is linked with -Wl,--wrap=leveldb_write: __wrap_leveldb_write
 * below counts and records every write that reaches LevelDB (how many
 * batches it carries, synced or not), can hold the first one (so that a
 * known set of writers queues behind it) and can fail on demand without
 * writing.  Checked:
 *  - grouping: writers queued behind a held leader go out as one LevelDB
 *    write each group of at most 64 (GROUP_MAX), in queue order; under
 *    free-running threads fewer LevelDB writes than requests, and every
 *    record is there;
 *  - sync: a group is synced when any of its requests is (a synced request
 *    is never acknowledged by an unsynced write); a group of unsynced
 *    requests is not synced;
 *  - failure (the first failed write is the last): the failed request, every
 *    request of its group and every later one get LC_ELOG with LevelDB's
 *    words, the log is FAILED, leveldb_write is never called again, nothing
 *    of them is in LevelDB, on_fail is called exactly once;
 *  - the hook (lc__log_hook, replication's): before and after once per
 *    group, with the group's batch, its sync and before's seq; after(ok =
 *    false) for a failed write; a non-zero before fails the whole group
 *    with its code and LevelDB is not called (the log stays OK: a write
 *    the standby refused is written nowhere, the next one goes on);
 *  - a standby's log takes no write (LC_ESTANDBY).
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

#include "internal.h"

/* ---- the leveldb_write seam ---------------------------------------------- */

#define MAX_SEEN 4096
static atomic_long seen;      /* calls of leveldb_write */
static atomic_int hold;       /* 1: the next call waits while it stays 1 */
static atomic_int held;       /* a call is waiting in hold */
static atomic_int fail_at;    /* n > 0: the n-th call fails (not written) */
static atomic_int fail_after; /* n > 0: every call from the n-th fails */
static const leveldb_writeoptions_t *_Atomic sync_opts;
static int seen_ops[MAX_SEEN]; /* per call: the records in its batch */
static bool seen_sync[MAX_SEEN];

static void count_put(void *arg, const char *k, size_t kl, const char *v,
                      size_t vl) {
  (void)k, (void)kl, (void)v, (void)vl;
  (*(int *)arg)++;
}
static void count_del(void *arg, const char *k, size_t kl) {
  (void)k, (void)kl;
  (*(int *)arg)++;
}
static int ops_of(leveldb_writebatch_t *b) {
  int n = 0;
  leveldb_writebatch_iterate(b, &n, count_put, count_del);
  return n;
}

void __real_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);
void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);
void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr) {
  long n = atomic_fetch_add(&seen, 1) + 1;
  if (n <= MAX_SEEN) {
    seen_ops[n - 1] = ops_of(b);
    seen_sync[n - 1] = o == atomic_load(&sync_opts);
  }
  if (atomic_load(&hold)) {
    atomic_store(&held, 1);
    while (atomic_load(&hold)) usleep(500);
  }
  int at = atomic_load(&fail_at), after = atomic_load(&fail_after);
  if ((at > 0 && n == at) || (after > 0 && n >= after)) {
    if (*errptr) leveldb_free(*errptr);
    *errptr = strdup("injected failure");
    return;
  }
  __real_leveldb_write(db, o, b, errptr);
}

/* ---- fixture -------------------------------------------------------------- */

typedef struct fixture {
  char dir[64];
  lc__log log;
  atomic_int on_fail_calls;
} fixture;

static void on_fail(void *arg) {
  atomic_fetch_add(&((fixture *)arg)->on_fail_calls, 1);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/test_log_write.XXXXXX");
  if (mkdtemp(f->dir) == NULL) return -1;
  if (lc__log_open(&f->log, f->dir, 0, "test_log_write") != 0) {
    fprintf(stderr, "lc__log_open %s: %s\n", f->dir, lc_last_detail());
    return -1;
  }
  f->log.on_fail = on_fail;
  f->log.on_fail_arg = f;
  atomic_store(&sync_opts, f->log.sync);
  atomic_store(&seen, 0);
  atomic_store(&hold, 0);
  atomic_store(&held, 0);
  atomic_store(&fail_at, 0);
  atomic_store(&fail_after, 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  lc__log_close(&f->log);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* ---- writers -------------------------------------------------------------- */

typedef struct writer {
  lc__log *l;
  int id;
  bool sync;
  int rc;
  char detail[LC__DETAIL_MAX];
  pthread_t t;
} writer;

static atomic_int calling; /* writers about to call lc__log_write */

static void key_of(char *k, size_t size, int id) {
  snprintf(k, size, "w%05d", id);
}

static void *write_one(void *arg) {
  writer *w = arg;
  char k[16];
  key_of(k, sizeof k, w->id);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, k, strlen(k), "v", 1);
  atomic_fetch_add(&calling, 1);
  w->rc = lc__log_write(w->l, b, w->sync);
  snprintf(w->detail, sizeof w->detail, "%s", w->rc ? lc_last_detail() : "");
  leveldb_writebatch_destroy(b);
  return NULL;
}

static void start(writer *w, lc__log *l, int id, bool sync) {
  *w = (writer){.l = l, .id = id, .sync = sync, .rc = 12345};
  assert_int_equal(pthread_create(&w->t, NULL, write_one, w), 0);
}

static void wait_for(atomic_int *v, int want) {
  for (int i = 0; i < 20000 && atomic_load(v) < want; i++) usleep(500);
  assert_true(atomic_load(v) >= want);
}

/* A leader (id 0, sync as given) held inside its LevelDB write, then k
 * writers (ids 1..k, synced as sync_of says) queued behind it. */
static void queue_behind_leader(fixture *f, writer *w, int k, bool lead_sync,
                                bool (*sync_of)(int id)) {
  atomic_store(&calling, 0);
  atomic_store(&hold, 1);
  atomic_store(&held, 0);
  start(&w[0], &f->log, 0, lead_sync);
  wait_for(&held, 1);
  for (int i = 1; i <= k; i++) start(&w[i], &f->log, i, sync_of(i));
  wait_for(&calling, k + 1);
  /* from lc__log_write's entry to its wait takes microseconds; this is
   * the time for every queued thread to be scheduled once */
  usleep(200 * 1000);
}

static void release_and_join(writer *w, int n) {
  atomic_store(&hold, 0);
  for (int i = 0; i < n; i++) pthread_join(w[i].t, NULL);
}

static bool in_log(fixture *f, int id) {
  char k[16], *v = NULL;
  size_t vlen = 0;
  key_of(k, sizeof k, id);
  assert_int_equal(lc__log_get(&f->log, k, strlen(k), &v, &vlen, "test"), 0);
  bool there = v != NULL;
  leveldb_free(v);
  return there;
}

static bool never(int id) {
  (void)id;
  return false;
}
static bool always(int id) {
  (void)id;
  return true;
}
static bool only_7(int id) {
  return id == 7;
}

/* ---- grouping ------------------------------------------------------------- */

/* 70 writers queued behind a held leader: the leader's write alone, then
 * the queue in groups of at most 64, in order; all acknowledged, all in
 * LevelDB. */
static void test_queued_writers_are_grouped(void **state) {
  fixture *f = *state;
  enum { K = 70 };
  writer w[K + 1];
  queue_behind_leader(f, w, K, false, never);
  release_and_join(w, K + 1);
  for (int i = 0; i <= K; i++) assert_int_equal(w[i].rc, 0);
  assert_int_equal(atomic_load(&seen), 3);
  assert_int_equal(seen_ops[0], 1);
  assert_int_equal(seen_ops[1], 64);
  assert_int_equal(seen_ops[2], K - 64);
  for (int i = 0; i <= K; i++) assert_true(in_log(f, i));
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_OK);
  assert_int_equal(atomic_load(&f->on_fail_calls), 0);
}

/* Free-running threads (LevelDB writes slowed by nothing): fewer LevelDB
 * writes than requests, each record written exactly once. */
typedef struct runner {
  lc__log *l;
  int base, n;
  bool sync;
  int failures;
  pthread_t t;
} runner;

static void *run_many(void *arg) {
  runner *r = arg;
  for (int i = 0; i < r->n; i++) {
    char k[16];
    key_of(k, sizeof k, r->base + i);
    leveldb_writebatch_t *b = leveldb_writebatch_create();
    leveldb_writebatch_put(b, k, strlen(k), "v", 1);
    if (lc__log_write(r->l, b, r->sync) != 0) r->failures++;
    leveldb_writebatch_destroy(b);
  }
  return NULL;
}

static void test_concurrent_writers_share_writes(void **state) {
  fixture *f = *state;
  enum { T = 8, N = 200 };
  runner r[T];
  for (int t = 0; t < T; t++) {
    /* half synced: a group shares one fsync, which is where it pays */
    r[t] = (runner){.l = &f->log, .base = t * N, .n = N, .sync = t % 2};
    assert_int_equal(pthread_create(&r[t].t, NULL, run_many, &r[t]), 0);
  }
  for (int t = 0; t < T; t++) pthread_join(r[t].t, NULL);
  for (int t = 0; t < T; t++) assert_int_equal(r[t].failures, 0);
  long writes = atomic_load(&seen);
  long ops = 0;
  for (long i = 0; i < writes && i < MAX_SEEN; i++) {
    assert_true(seen_ops[i] >= 1 && seen_ops[i] <= 64);
    ops += seen_ops[i];
  }
  print_message("%d requests in %ld LevelDB writes\n", T * N, writes);
  assert_int_equal(ops, T * N);
  assert_true(writes < T * N);
  for (int i = 0; i < T * N; i++) assert_true(in_log(f, i));
}

/* ---- sync ----------------------------------------------------------------- */

/* An unsynced leader alone: not synced.  Then a queue of unsynced writers
 * with one synced among them (id 7): their group is synced. */
static void test_one_synced_request_syncs_its_group(void **state) {
  fixture *f = *state;
  enum { K = 20 };
  writer w[K + 1];
  queue_behind_leader(f, w, K, false, only_7);
  release_and_join(w, K + 1);
  for (int i = 0; i <= K; i++) assert_int_equal(w[i].rc, 0);
  assert_int_equal(atomic_load(&seen), 2);
  assert_false(seen_sync[0]);
  assert_int_equal(seen_ops[1], K);
  assert_true(seen_sync[1]);
}

/* Only unsynced requests: no group is synced. */
static void test_unsynced_group_is_not_synced(void **state) {
  fixture *f = *state;
  enum { K = 20 };
  writer w[K + 1];
  queue_behind_leader(f, w, K, false, never);
  release_and_join(w, K + 1);
  assert_int_equal(atomic_load(&seen), 2);
  assert_false(seen_sync[0]);
  assert_false(seen_sync[1]);
  /* and all synced: synced */
  atomic_store(&seen, 0);
  writer v[K + 1];
  queue_behind_leader(f, v, K, true, always);
  release_and_join(v, K + 1);
  assert_int_equal(atomic_load(&seen), 2);
  assert_true(seen_sync[0]);
  assert_true(seen_sync[1]);
}

/* ---- failure -------------------------------------------------------------- */

static void assert_failed_write(const writer *w) {
  assert_int_equal(w->rc, LC_ELOG);
  if (strstr(w->detail, "injected failure") == NULL &&
      strstr(w->detail, "log failed") == NULL)
    fail_msg("writer %d: detail \"%s\"", w->id, w->detail);
}

/* The second group fails: every one of its requests gets LC_ELOG with
 * LevelDB's words, the log is FAILED, on_fail ran once, none of the group
 * is in LevelDB, and no later write reaches it. */
static void test_failed_group_fails_all_of_it(void **state) {
  fixture *f = *state;
  enum { K = 30 };
  writer w[K + 1];
  atomic_store(&fail_at, 2);
  queue_behind_leader(f, w, K, false, never);
  release_and_join(w, K + 1);
  assert_int_equal(w[0].rc, 0);
  for (int i = 1; i <= K; i++) {
    assert_failed_write(&w[i]);
    assert_non_null(strstr(w[i].detail, "injected failure"));
  }
  assert_int_equal(atomic_load(&seen), 2);
  assert_int_equal(seen_ops[1], K);
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_FAILED);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
  /* later writes, synced or not: refused, never written */
  for (int i = 0; i < 10; i++) {
    leveldb_writebatch_t *b = leveldb_writebatch_create();
    leveldb_writebatch_put(b, "later", 5, "v", 1);
    assert_int_equal(lc__log_write(&f->log, b, i % 2), LC_ELOG);
    assert_non_null(strstr(lc_last_detail(), "injected failure"));
    leveldb_writebatch_destroy(b);
  }
  assert_int_equal(atomic_load(&seen), 2);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
  /* the leader's record is in LevelDB, nothing of the failed group is
   * (read past the log, which refuses reads now) */
  for (int i = 0; i <= K; i++) {
    char k[16], *err = NULL;
    size_t vlen;
    key_of(k, sizeof k, i);
    char *v = leveldb_get(f->log.db, f->log.read, k, strlen(k), &vlen, &err);
    assert_null(err);
    if (i == 0)
      assert_non_null(v);
    else
      assert_null(v);
    leveldb_free(v);
  }
}

/* The leader's own write fails while others are queued behind it: they
 * were a later group, and are refused without a write. */
static void test_requests_queued_behind_a_failure_are_not_written(
    void **state) {
  fixture *f = *state;
  enum { K = 30 };
  writer w[K + 1];
  atomic_store(&fail_at, 1);
  queue_behind_leader(f, w, K, true, never);
  release_and_join(w, K + 1);
  assert_failed_write(&w[0]);
  assert_non_null(strstr(w[0].detail, "injected failure"));
  for (int i = 1; i <= K; i++) {
    assert_failed_write(&w[i]);
    assert_non_null(strstr(w[i].detail, "injected failure"));
  }
  assert_int_equal(atomic_load(&seen), 1);
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_FAILED);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
}

/* Threads writing freely when every write from the 5th on fails: after
 * the first failure no call reaches LevelDB, on_fail ran once. */
static void test_failure_under_threads_is_the_last_write(void **state) {
  fixture *f = *state;
  enum { T = 8, N = 100 };
  atomic_store(&fail_after, 5);
  runner r[T];
  for (int t = 0; t < T; t++) {
    r[t] = (runner){.l = &f->log, .base = t * N, .n = N, .sync = t % 2};
    assert_int_equal(pthread_create(&r[t].t, NULL, run_many, &r[t]), 0);
  }
  for (int t = 0; t < T; t++) pthread_join(r[t].t, NULL);
  assert_int_equal(atomic_load(&seen), 5);
  int failures = 0;
  for (int t = 0; t < T; t++) failures += r[t].failures;
  long written = 0;
  for (int i = 0; i < 4; i++) written += seen_ops[i];
  assert_int_equal(failures, T * N - written);
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_FAILED);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
}

/* lc__log_fail called again (a second failure noticed elsewhere): on_fail
 * is not called again. */
static void test_on_fail_once_per_failure(void **state) {
  fixture *f = *state;
  assert_int_equal(lc__log_fail(&f->log, "first"), LC_ELOG);
  assert_int_equal(lc__log_fail(&f->log, "second"), LC_ELOG);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_FAILED);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, "k", 1, "v", 1);
  assert_int_equal(lc__log_write(&f->log, b, false), LC_ELOG);
  assert_non_null(strstr(lc_last_detail(), "first"));
  leveldb_writebatch_destroy(b);
  assert_int_equal(atomic_load(&seen), 0);
}

/* ---- the hook ------------------------------------------------------------- */

typedef struct hook_log {
  atomic_int before, after, after_ok;
  atomic_int refuse_at; /* n > 0: the n-th before returns LC_ENOSTANDBY */
  uint64_t next_seq;
  int ops[MAX_SEEN];
  bool sync[MAX_SEEN];
  uint64_t after_seq[MAX_SEEN];
  atomic_int inside; /* before called, after not yet */
  atomic_int overlap;
} hook_log;

static int h_before(void *arg, leveldb_writebatch_t *b, bool sync,
                    uint64_t *seq) {
  hook_log *h = arg;
  if (atomic_fetch_add(&h->inside, 1) != 0) atomic_store(&h->overlap, 1);
  int n = atomic_fetch_add(&h->before, 1) + 1;
  if (n <= MAX_SEEN) {
    h->ops[n - 1] = ops_of(b);
    h->sync[n - 1] = sync;
  }
  *seq = ++h->next_seq;
  if (n == atomic_load(&h->refuse_at)) {
    atomic_fetch_sub(&h->inside, 1);
    return lc__fail(LC_ENOSTANDBY, "test: refused");
  }
  return 0;
}

static void h_after(void *arg, uint64_t seq, bool ok) {
  hook_log *h = arg;
  int n = atomic_fetch_add(&h->after, 1) + 1;
  if (ok) atomic_fetch_add(&h->after_ok, 1);
  if (n <= MAX_SEEN) h->after_seq[n - 1] = seq;
  atomic_fetch_sub(&h->inside, 1);
}

static const lc__log_hook test_hook = {h_before, h_after};

/* Every group passes the hook once, before and after, with its batch, its
 * sync and before's seq; one at a time. */
static void test_hook_sees_each_group_once(void **state) {
  fixture *f = *state;
  static hook_log h;
  memset(&h, 0, sizeof h);
  f->log.hook = &test_hook;
  f->log.hook_arg = &h;
  enum { K = 20 };
  writer w[K + 1];
  queue_behind_leader(f, w, K, false, only_7);
  release_and_join(w, K + 1);
  for (int i = 0; i <= K; i++) assert_int_equal(w[i].rc, 0);
  assert_int_equal(atomic_load(&seen), 2);
  assert_int_equal(atomic_load(&h.before), 2);
  assert_int_equal(atomic_load(&h.after), 2);
  assert_int_equal(atomic_load(&h.after_ok), 2);
  assert_int_equal(h.ops[0], 1);
  assert_false(h.sync[0]);
  assert_int_equal(h.ops[1], K);
  assert_true(h.sync[1]);
  assert_int_equal(h.after_seq[0], 1);
  assert_int_equal(h.after_seq[1], 2);
  /* free-running threads: once per LevelDB write, never overlapping */
  runner r[4];
  for (int t = 0; t < 4; t++) {
    r[t] =
        (runner){.l = &f->log, .base = 100 + t * 100, .n = 100, .sync = t % 2};
    assert_int_equal(pthread_create(&r[t].t, NULL, run_many, &r[t]), 0);
  }
  for (int t = 0; t < 4; t++) pthread_join(r[t].t, NULL);
  for (int t = 0; t < 4; t++) assert_int_equal(r[t].failures, 0);
  long writes = atomic_load(&seen);
  assert_int_equal(atomic_load(&h.before), writes);
  assert_int_equal(atomic_load(&h.after), writes);
  long ops = 0;
  for (long i = 0; i < writes; i++) {
    assert_int_equal(h.ops[i], seen_ops[i]);
    assert_int_equal(h.sync[i], seen_sync[i]);
    assert_int_equal(h.after_seq[i], i + 1);
    ops += h.ops[i];
  }
  assert_int_equal(ops, K + 1 + 400);
  assert_int_equal(atomic_load(&h.overlap), 0);
  f->log.hook = NULL;
}

/* A non-zero before fails its whole group with its code, and LevelDB is
 * not called (nor after).  The log itself stays OK: a refusal by the
 * standby is not a failed write (log_write.c: "one it refuses is written
 * nowhere"), and the next group is written. */
static void test_hook_refusal_fails_the_group_unwritten(void **state) {
  fixture *f = *state;
  static hook_log h;
  memset(&h, 0, sizeof h);
  atomic_store(&h.refuse_at, 2);
  f->log.hook = &test_hook;
  f->log.hook_arg = &h;
  enum { K = 20 };
  writer w[K + 1];
  queue_behind_leader(f, w, K, false, only_7);
  release_and_join(w, K + 1);
  assert_int_equal(w[0].rc, 0);
  for (int i = 1; i <= K; i++) {
    assert_int_equal(w[i].rc, LC_ENOSTANDBY);
    assert_non_null(strstr(w[i].detail, "test: refused"));
  }
  assert_int_equal(atomic_load(&seen), 1);
  assert_int_equal(atomic_load(&h.before), 2);
  assert_int_equal(atomic_load(&h.after), 1);
  for (int i = 1; i <= K; i++) assert_false(in_log(f, i));
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_OK);
  assert_int_equal(atomic_load(&f->on_fail_calls), 0);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, "after", 5, "v", 1);
  assert_int_equal(lc__log_write(&f->log, b, true), 0);
  leveldb_writebatch_destroy(b);
  assert_int_equal(atomic_load(&seen), 2);
  assert_int_equal(atomic_load(&h.before), 3);
  f->log.hook = NULL;
}

/* A failed LevelDB write is reported to after (ok false), once. */
static void test_hook_after_hears_of_a_failure(void **state) {
  fixture *f = *state;
  static hook_log h;
  memset(&h, 0, sizeof h);
  f->log.hook = &test_hook;
  f->log.hook_arg = &h;
  atomic_store(&fail_at, 1);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, "k", 1, "v", 1);
  assert_int_equal(lc__log_write(&f->log, b, true), LC_ELOG);
  assert_int_equal(lc__log_write(&f->log, b, true), LC_ELOG);
  leveldb_writebatch_destroy(b);
  assert_int_equal(atomic_load(&h.before), 1);
  assert_int_equal(atomic_load(&h.after), 1);
  assert_int_equal(atomic_load(&h.after_ok), 0);
  assert_int_equal(atomic_load(&seen), 1);
  assert_int_equal(atomic_load(&f->on_fail_calls), 1);
  f->log.hook = NULL;
}

/* A standby's log takes no write through lc__log_write. */
static void test_standby_log_is_not_written(void **state) {
  fixture *f = *state;
  atomic_store(&f->log.standby, true);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  leveldb_writebatch_put(b, "k", 1, "v", 1);
  assert_int_equal(lc__log_write(&f->log, b, true), LC_ESTANDBY);
  leveldb_writebatch_destroy(b);
  assert_int_equal(atomic_load(&seen), 0);
  assert_int_equal(atomic_load(&f->log.state), LC__LOG_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_queued_writers_are_grouped, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_writers_share_writes,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_synced_request_syncs_its_group,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_unsynced_group_is_not_synced, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_failed_group_fails_all_of_it, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_requests_queued_behind_a_failure_are_not_written, setup,
          teardown),
      cmocka_unit_test_setup_teardown(
          test_failure_under_threads_is_the_last_write, setup, teardown),
      cmocka_unit_test_setup_teardown(test_on_fail_once_per_failure, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_hook_sees_each_group_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          test_hook_refusal_fails_the_group_unwritten, setup, teardown),
      cmocka_unit_test_setup_teardown(test_hook_after_hears_of_a_failure, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_standby_log_is_not_written, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
