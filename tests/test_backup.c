/*
 * test_backup.c - lc_backup and restored logs (no id twice): a backup
 * taken while four threads allocate on three counters (and a planted
 * counter of 120,000 records, so the copy takes several batches) opens,
 * iterates in order without overlap and is a prefix of the source (every
 * record in it is in the source, unchanged; two increments of a counter
 * may be in flight, so their records can reach the log out of order); a
 * handle on the copy, after the original handed out more ids and
 * stopped, continues every counter above every id the original handed
 * out when memcached still holds them (a counter created after the
 * backup too), and after that survives a flush; with memcached flushed
 * every counter is LC_EBEHIND (lc_next, lc_restore, lc_advance), nothing
 * is seeded (an adopt without --above changes nothing there), until
 * lc_adopt --above the last id, after which it goes on
 * above it and a later flush restores from the log; memcached below the
 * log's floor is LC_EBEHIND too; a backup of a restored, partly
 * reconciled log has every counter pending again; the same with prefetch
 * on; an existing directory or a missing parent is refused; a partial
 * copy is refused at open, and so is a copy whose first write failed
 * (this program is linked with -Wl,--wrap=leveldb_write: the backup's
 * directory then holds an empty LevelDB and its mark, which must not
 * open as a new log); a complete copy whose mark was left (a crash before
 * its removal) opens; lc_is_restored is 0 on the source, 1 on the copy.
 * The copy takes a new identity at its first open (kept afterwards):
 * while the original holds a counter's claim the copy refuses it
 * (LC_EOWNED, naming the original and adopt), even with the original
 * running, until lc_adopt takes the claim over.
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
#include <sys/stat.h>

#include <leveldb/c.h>

#include "base/format.h"
#include "mcd.h"
#include "plant.h"

/* ---- the leveldb_write seam: fails writes while fail_writes is set ---- */

static atomic_int fail_writes;

void __real_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);
void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr);
void __wrap_leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                          leveldb_writebatch_t *b, char **errptr) {
  if (atomic_load(&fail_writes)) {
    if (*errptr) leveldb_free(*errptr);
    *errptr = strdup("injected failure");
    return;
  }
  __real_leveldb_write(db, o, b, errptr);
}

#define NAMES 3
static const char *const names[NAMES] = {"ca", "cb", "cc"};

static void sub_path(const fx_t *f, const char *sub, char path[TU_PATH_MAX]) {
  snprintf(path, TU_PATH_MAX, "%s/%s", f->dir, sub);
}

static lc_t *open_sub(const fx_t *f, const char *sub, uint64_t prefetch) {
  lc_options o;
  char path[TU_PATH_MAX];
  tu_options_sub(&o, &mc, f->dir, sub, path);
  o.prefetch = prefetch;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

static uint64_t progress_calls;
static void on_progress(void *arg, uint64_t keys) {
  (void)arg;
  (void)keys;
  progress_calls++;
}

static lc_backup_result backup(lc_t *h, const fx_t *f, const char *sub) {
  char path[TU_PATH_MAX];
  sub_path(f, sub, path);
  lc_backup_opts o = {.progress = on_progress};
  lc_backup_result r;
  memset(&r, 0, sizeof r);
  assert_ok(lc_backup(h, path, &o, &r));
  return r;
}

/* Records of name: in order, without overlap; how many (*out: them). */
static long ordered_records(lc_t *h, const char *name, lc_record **out) {
  long n = tu_records(h, name, out);
  if (n < 0)
    fail_msg("iterating %s: %s (%s)", name, lc_err_name((int)n),
             lc_last_detail());
  for (long i = 1; i < n; i++) assert_i64_op((*out)[i].first, >, (*out)[i - 1].last);
  return n;
}

static bool has_record(const lc_record *r, long n, const lc_record *x) {
  long lo = 0, hi = n - 1;
  while (lo <= hi) {
    long mid = lo + (hi - lo) / 2;
    if (r[mid].last == x->last)
      return r[mid].first == x->first && r[mid].count == x->count &&
             r[mid].time_us == x->time_us;
    if (r[mid].last < x->last)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return false;
}

/* ---- a backup while four threads allocate ---- */

typedef struct worker {
  lc_t *h;
  int id;
  atomic_bool *stop;
  long n;
  int64_t max[NAMES];
} worker;

static void *allocate(void *arg) {
  worker *w = arg;
  for (long i = 0; !atomic_load(w->stop); i++) {
    int k = (int)((i + w->id) % NAMES);
    int64_t v;
    if (lc_next(w->h, names[k], &v) != 0) {
      fprintf(stderr, "lc_next: %s\n", lc_last_detail());
      break;
    }
    if (v > w->max[k]) w->max[k] = v;
    w->n++;
  }
  return NULL;
}

/* Closes the handle and writes n single-value records of name straight
 * into the log (as test_prune does: lc_next would spend minutes). */
static void plant(fx_t *f, const char *name, long n) {
  lc_close(f->h);
  f->h = NULL;
  char path[TU_PATH_MAX];
  sub_path(f, "db", path);
  char *err = NULL;
  if (tu_plant(path, name, 1, n, now_us(), 0, &err))
    fail_msg("planting %s: %s", name, err);
  f->h = open_sub(f, "db", 0);
}

static void test_backup_while_allocating(void **state) {
  fx_t *f = *state;
  plant(f, "bulk", 120000);
  atomic_bool stop = false;
  worker w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){.h = f->h, .id = i, .stop = &stop};
    assert_int_equal(pthread_create(&t[i], NULL, allocate, &w[i]), 0);
  }
  sleep_ms(200);
  progress_calls = 0;
  lc_backup_result r = backup(f->h, f, "copy");
  sleep_ms(100);
  atomic_store(&stop, true);
  long total = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    total += w[i].n;
  }
  assert_true(total > 0);
  assert_true(r.records >= 120000);
  assert_true(r.keys > r.records);
  assert_true(r.bytes > r.keys);
  assert_true(progress_calls >= 3); /* 120,000 keys: three batches */
  assert_i64_op(r.time_us, >, 0);
  assert_int_equal(lc_is_restored(f->h), 0);

  lc_t *c = open_sub(f, "copy", 0);
  assert_int_equal(lc_is_restored(c), 1);
  uint64_t in_copy = 0;
  for (int k = 0; k < NAMES + 1; k++) {
    const char *name = k < NAMES ? names[k] : "bulk";
    lc_record *src, *cp;
    long ns = ordered_records(f->h, name, &src);
    long nc = ordered_records(c, name, &cp);
    assert_true(nc <= ns);
    for (long i = 0; i < nc; i++)
      if (!has_record(src, ns, &cp[i]))
        fail_msg("%s: the copy's record %lld-%lld is not in the source", name,
                 (long long)cp[i].first, (long long)cp[i].last);
    in_copy += (uint64_t)nc;
    free(src);
    free(cp);
  }
  assert_int_equal(in_copy, r.records);
  assert_ok(lc_close(c));
}

/* ---- a copy, the original going on after it ---- */

typedef struct story {
  int64_t last[NAMES + 1]; /* the last id the original handed out */
} story;
static const char *const story_names[NAMES + 1] = {"ca", "cb", "cc", "late"};

/* The original (f->h, prefetch as given) hands out ids, is backed up to
 * sub, hands out more (and a counter the copy never saw, "late"), and
 * stops. */
static story original(fx_t *f, const char *sub, uint64_t prefetch) {
  if (prefetch) {
    lc_close(f->h);
    f->h = open_sub(f, "db", prefetch);
  }
  story s;
  memset(&s, 0, sizeof s);
  for (int k = 0; k < NAMES; k++)
    for (int i = 0; i < 10 + k; i++) s.last[k] = tu_next1(f->h, names[k]);
  backup(f->h, f, sub);
  for (int k = 0; k < NAMES; k++)
    for (int i = 0; i < 2000; i++) s.last[k] = tu_next1(f->h, names[k]);
  for (int i = 0; i < 7; i++) s.last[NAMES] = tu_next1(f->h, "late");
  assert_ok(lc_close(f->h));
  f->h = NULL;
  return s;
}

/* The copy refuses a counter whose claim the original holds, naming the
 * original and adopt; adopted (explicitly), it goes on. */
static void refused_then_adopted(lc_t *c, const char *name) {
  int64_t v;
  assert_rc(lc_next(c, name, &v), LC_EOWNED);
  assert_non_null(strstr(lc_last_detail(), "original"));
  char adopt[64];
  snprintf(adopt, sizeof adopt, "adopt %s", name);
  assert_non_null(strstr(lc_last_detail(), adopt));
  assert_rc(lc_next(c, name, &v), LC_EOWNED); /* remembered */
  assert_ok(lc_adopt(c, name, 0));
}

/* Every counter of the copy, once adopted, goes on above the original,
 * memcached intact; then a flush restores from the copy's log, above it
 * too. */
static void continues(fx_t *f, const char *sub, uint64_t prefetch) {
  story s = original(f, sub, prefetch);
  lc_t *c = open_sub(f, sub, prefetch);
  assert_int_equal(lc_is_restored(c), 1);
  int64_t got[NAMES + 1];
  for (int k = 0; k < NAMES + 1; k++) {
    refused_then_adopted(c, story_names[k]);
    got[k] = tu_next1(c, story_names[k]);
    assert_i64_op(got[k], >, s.last[k]);
    assert_i64_op(tu_next1(c, story_names[k]), >, got[k]);
    got[k] = tu_next1(c, story_names[k]);
  }
  assert_ok(mcd_flush_all(&mc));
  for (int k = 0; k < NAMES + 1; k++)
    assert_i64_op(tu_next1(c, story_names[k]), >, got[k]);
  assert_ok(lc_close(c));
  /* reopened, memcached flushed again: reconciled counters restore */
  assert_ok(mcd_flush_all(&mc));
  c = open_sub(f, sub, prefetch);
  for (int k = 0; k < NAMES + 1; k++)
    assert_i64_op(tu_next1(c, story_names[k]), >, got[k]);
  assert_ok(lc_close(c));
}

static void test_restored_memcached_intact(void **state) {
  continues(*state, "copy", 0);
}

/* memcached lost everything: nothing goes out until adopt. */
static void behind(fx_t *f, const char *sub, uint64_t prefetch) {
  story s = original(f, sub, prefetch);
  assert_ok(mcd_flush_all(&mc));
  lc_t *c = open_sub(f, sub, prefetch);
  int64_t v;
  for (int k = 0; k < NAMES + 1; k++) {
    const char *name = story_names[k];
    assert_rc(lc_next(c, name, &v), LC_EBEHIND);
    assert_non_null(strstr(lc_last_detail(), "adopt"));
    assert_non_null(strstr(lc_last_detail(), name));
    assert_rc(lc_next(c, name, &v), LC_EBEHIND);
    assert_rc(lc_restore(c, name, &v), LC_EBEHIND);
    assert_rc(lc_advance(c, name, 5), LC_EBEHIND);
    assert_i64_eq(mcd_counter_value(&mc, name), -1); /* nothing seeded */
  }
  /* memcached set back below the log's floor: behind too */
  assert_ok(mcd_set(&mc, "lc:cb", "1"));
  assert_rc(lc_next(c, "cb", &v), LC_EBEHIND);
  /* an adopt without a value vouches for nothing: still pending */
  assert_ok(lc_adopt(c, "cc", 0));
  assert_rc(lc_next(c, "cc", &v), LC_EBEHIND);
  assert_i64_eq(mcd_counter_value(&mc, "cc"), -1);
  for (int k = 0; k < NAMES + 1; k++) {
    const char *name = story_names[k];
    assert_ok(lc_adopt(c, name, s.last[k]));
    int64_t a = tu_next1(c, name);
    assert_i64_op(a, >, s.last[k]);
    if (!prefetch) assert_i64_eq(a, s.last[k] + 1);
    assert_ok(mcd_flush_all(&mc)); /* restored from the log now */
    int64_t b = tu_next1(c, name);
    assert_i64_op(b, >, a);
    if (!prefetch) assert_i64_eq(b, a + 1);
  }
  assert_ok(lc_close(c));
  assert_ok(mcd_flush_all(&mc));
  c = open_sub(f, sub, prefetch); /* adopted for good */
  for (int k = 0; k < NAMES + 1; k++)
    assert_i64_op(tu_next1(c, story_names[k]), >, s.last[k] + 1);
  assert_ok(lc_close(c));
}

static void test_restored_memcached_flushed(void **state) {
  behind(*state, "copy", 0);
}

static void test_restored_prefetch_intact(void **state) {
  continues(*state, "copy", 100);
}

static void test_restored_prefetch_flushed(void **state) {
  behind(*state, "copy", 100);
}

/* A backup of a restored log, one counter reconciled, one adopted: in the
 * second copy every counter is pending again. */
static void test_backup_of_restored(void **state) {
  fx_t *f = *state;
  story s = original(f, "copy", 0);
  lc_t *c = open_sub(f, "copy", 0);
  assert_ok(lc_adopt(c, "ca", 0)); /* the original's claim taken over */
  int64_t a = tu_next1(c, "ca"); /* reconciled, through memcached */
  assert_i64_op(a, >, s.last[0]);
  assert_ok(lc_adopt(c, "cb", s.last[1])); /* reconciled, by adopt */
  int64_t b = tu_next1(c, "cb");
  assert_ok(lc_adopt(c, "cc", 0));
  assert_i64_op(tu_next1(c, "cc"), >, s.last[2]); /* through memcached */
  char path[TU_PATH_MAX];
  sub_path(f, "copy2", path);
  lc_backup_result r;
  assert_ok(lc_backup(c, path, NULL, &r));
  int64_t a2 = tu_next1(c, "ca"); /* the copy goes on after its backup */
  assert_ok(lc_close(c));

  /* memcached intact: above what the first copy handed out (its
   * reservation ran ahead of memcached: raised past it) */
  lc_t *c2 = open_sub(f, "copy2", 0);
  assert_int_equal(lc_is_restored(c2), 1);
  refused_then_adopted(c2, "ca"); /* the first copy is copy2's original */
  int64_t a3 = tu_next1(c2, "ca"); /* reconciled in copy2 now */
  assert_i64_op(a3, >, a2);
  assert_ok(lc_close(c2));
  /* flushed: every counter not reconciled in copy2 is pending, those
   * reconciled in copy1 (cb by adopt, cc through memcached) too */
  assert_ok(mcd_flush_all(&mc));
  c2 = open_sub(f, "copy2", 0);
  int64_t v;
  for (int k = 1; k < NAMES + 1; k++)
    assert_rc(lc_next(c2, story_names[k], &v), LC_EBEHIND);
  assert_i64_op(tu_next1(c2, "ca"), >, a3); /* from copy2's log */
  assert_ok(lc_adopt(c2, "cb", b + 100));
  assert_i64_op(tu_next1(c2, "cb"), >, b + 100); /* and its reservation */
  assert_ok(lc_close(c2));
}

static void test_backup_refusals(void **state) {
  fx_t *f = *state;
  tu_next1(f->h, "x");
  lc_backup_result r;
  char path[TU_PATH_MAX];
  assert_int_equal(lc_is_restored(f->h), 0);
  sub_path(f, "db", path); /* the log itself */
  assert_rc(lc_backup(f->h, path, NULL, &r), LC_EINVAL);
  assert_non_null(strstr(lc_last_detail(), "exists"));
  sub_path(f, "here", path);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_rc(lc_backup(f->h, path, NULL, &r), LC_EINVAL);
  sub_path(f, "no/such", path);
  assert_rc(lc_backup(f->h, path, NULL, &r), LC_EINVAL);
  assert_non_null(strstr(lc_last_detail(), "parent"));
  assert_rc(lc_backup(f->h, NULL, NULL, &r), LC_EINVAL);
  assert_rc(lc_backup(NULL, path, NULL, &r), LC_EINVAL);
  assert_rc(lc_is_restored(NULL), LC_EINVAL);

  /* a copy whose marker says partial (a backup that stopped) is refused */
  backup(f->h, f, "copy");
  sub_path(f, "copy", path);
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  assert_null(err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  const char *partial = "1 0123456789abcdef 1 partial";
  leveldb_put(db, wo, LC__RESTORED_KEY, strlen(LC__RESTORED_KEY), partial,
              strlen(partial), &err);
  assert_null(err);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(o);
  lc_options lo;
  char p2[TU_PATH_MAX];
  tu_options_sub(&lo, &mc, f->dir, "copy", p2);
  lc_t *h = NULL;
  assert_rc(lc_open(&lo, &h), LC_ELOG);
  assert_non_null(strstr(lc_last_detail(), "incomplete"));
}

/* The identity in the (closed) log at path, into id. */
static void read_id(const char *path, char id[LC__ID_LEN + 1]) {
  leveldb_options_t *o = leveldb_options_create();
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  assert_null(err);
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  size_t vlen = 0;
  char *v = leveldb_get(db, ro, LC__ID_KEY, strlen(LC__ID_KEY), &vlen, &err);
  assert_null(err);
  assert_non_null(v);
  assert_int_equal(vlen, LC__ID_LEN);
  memcpy(id, v, LC__ID_LEN);
  id[LC__ID_LEN] = '\0';
  leveldb_free(v);
  leveldb_readoptions_destroy(ro);
  leveldb_close(db);
  leveldb_options_destroy(o);
}

/* The original goes on running beside its copy: the copy has its own
 * identity (made at its first open, kept at the next), so the claims the
 * original holds refuse it; only an explicit adopt takes a counter over. */
static void test_copy_and_original_apart(void **state) {
  fx_t *f = *state;
  int64_t last = 0;
  for (int i = 0; i < 5; i++) last = tu_next1(f->h, "ca");
  backup(f->h, f, "copy");
  lc_t *c = open_sub(f, "copy", 0);
  int64_t v;
  for (int i = 0; i < 3; i++) {
    assert_rc(lc_next(c, "ca", &v), LC_EOWNED);
    assert_non_null(strstr(lc_last_detail(), "original"));
    last = tu_next1(f->h, "ca"); /* the original alone allocates */
  }
  assert_ok(lc_close(c));
  assert_ok(lc_close(f->h));
  f->h = NULL;
  char src[TU_PATH_MAX], cp[TU_PATH_MAX];
  sub_path(f, "db", src);
  sub_path(f, "copy", cp);
  char src_id[LC__ID_LEN + 1], cp_id[LC__ID_LEN + 1], again[LC__ID_LEN + 1];
  read_id(src, src_id);
  read_id(cp, cp_id);
  assert_string_not_equal(src_id, cp_id);
  c = open_sub(f, "copy", 0); /* reopened: the same identity, still refused */
  assert_rc(lc_next(c, "ca", &v), LC_EOWNED);
  assert_ok(lc_close(c));
  read_id(cp, again);
  assert_string_equal(cp_id, again);
  c = open_sub(f, "copy", 0);
  assert_ok(lc_adopt(c, "ca", 0)); /* explicit: the original is stopped */
  assert_i64_op(tu_next1(c, "ca"), >, last);
  assert_ok(lc_close(c));
}

static bool exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* A backup whose first write fails leaves its directory with an empty
 * LevelDB (as one that died before its first synced write): refused at
 * open, never taken for a new log.  A complete copy whose mark stayed (a
 * crash just before its removal) opens, and loses the mark. */
static void test_backup_without_any_mark(void **state) {
  fx_t *f = *state;
  tu_next1(f->h, "x");
  char path[TU_PATH_MAX], mark[TU_PATH_MAX + 32];
  sub_path(f, "dead", path);
  lc_backup_result r;
  atomic_store(&fail_writes, 1);
  int rc = lc_backup(f->h, path, NULL, &r);
  atomic_store(&fail_writes, 0);
  assert_rc(rc, LC_ELOG);
  assert_non_null(strstr(lc_last_detail(), "incomplete"));
  snprintf(mark, sizeof mark, "%s/%s", path, LC__BACKUP_MARK);
  assert_true(exists(mark));
  lc_options lo;
  char p2[TU_PATH_MAX];
  tu_options_sub(&lo, &mc, f->dir, "dead", p2);
  lc_t *h = NULL;
  for (int i = 0; i < 2; i++) { /* and again: the refusal wrote nothing */
    assert_rc(lc_open(&lo, &h), LC_ELOG);
    assert_non_null(strstr(lc_last_detail(), "incomplete"));
  }
  assert_i64_op(tu_next1(f->h, "x"), >, 1); /* the source is unharmed */

  /* complete: no mark, nothing beside it; a mark left by hand is taken
   * for a crash after the last write */
  sub_path(f, "good", path);
  backup(f->h, f, "good");
  snprintf(mark, sizeof mark, "%s/%s", path, LC__BACKUP_MARK);
  assert_false(exists(mark));
  char side[TU_PATH_MAX + 32];
  snprintf(side, sizeof side, "%s.lcbackup-", path);
  char cmd[3 * TU_PATH_MAX];
  snprintf(cmd, sizeof cmd, "ls -d '%s'* >/dev/null 2>&1", side);
  assert_int_not_equal(system(cmd), 0);
  FILE *m = fopen(mark, "w");
  assert_non_null(m);
  fclose(m);
  tu_options_sub(&lo, &mc, f->dir, "good", p2);
  assert_ok(lc_open(&lo, &h));
  assert_int_equal(lc_is_restored(h), 1);
  assert_ok(lc_close(h));
  assert_false(exists(mark));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup, tu_teardown)
      T(test_backup_while_allocating),
      T(test_restored_memcached_intact),
      T(test_restored_memcached_flushed),
      T(test_restored_prefetch_intact),
      T(test_restored_prefetch_flushed),
      T(test_backup_of_restored),
      T(test_backup_refusals),
      T(test_copy_and_original_apart),
      T(test_backup_without_any_mark),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
