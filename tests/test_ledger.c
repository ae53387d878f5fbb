/*
 * test_ledger.c - the gap ledger and lc_void, against a real memcached.
 * Every test checks the ledger against the records with tu_explain, which
 * also finds holes that no entry explains:
 *  - a child process that exits without lc_close: the restart skips the
 *    rest of its reservation (LC_GAP_RESTART), and values memcached gave
 *    out beyond it are LC_GAP_UNLOGGED; with memcached flushed as well,
 *    the restore makes no further gap;
 *  - memcached set back (backwards) while running: no gap at all;
 *  - memcached moved ahead by another client: LC_GAP_UNLOGGED, exactly;
 *  - lc_advance: LC_GAP_ADVANCE, exactly, and nothing for an advance
 *    below the counter;
 *  - prefetch: the unused rest of a segment given up by lc_advance, and
 *    at lc_close when memcached cannot be set back (LC_GAP_SEGMENT), and
 *    a crash mid-segment (an open record, no unexplained hole);
 *  - a ledger entry deleted by hand shows as unexplained;
 *  - an entry a crash lost (pending below a record that was written): the
 *    next run explains the hole among the last records as a restart gap;
 *  - lc_void: only issued values, once, with a checked reason; shown in
 *    the ledger; kept by a prune below it, deleted with its record;
 *  - many threads: the ledger stays consistent with the records;
 *  - the frontier itself (white box): a hole is never settled while an
 *    increment in flight can still fill it, however many blocks complete
 *    meanwhile; holes split at the restart window;
 *  - the recheck after a failed write (white box): every record and entry
 *    over a pending gap takes its values out, however many there are.
 * A failed log write (LC_GAP_BURNED) is in test_faults.c.
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
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h" /* the frontier, tested directly below */
#include "mcd.h"

/* The ledger of name, checked: no unexplained hole, no conflict. */
static tu_ledger explained(lc_t *h, const char *name) {
  tu_ledger l;
  assert_ok(tu_explain(h, name, &l));
  if (l.values[0] || l.conflicts)
    fail_msg("%s: %llu values unexplained, %llu conflicts", name,
             (unsigned long long)l.values[0], (unsigned long long)l.conflicts);
  return l;
}

/* A child opens the log, takes n values of name and exits without
 * lc_close (as a kill would leave it); returns the last value. */
static int64_t crash_after(const char *dir, const char *name, int n) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lc_t *h;
    int64_t v = 0;
    if (tu_open_prefetch(dir, 0, &h) != 0) _exit(1);
    for (int i = 0; i < n; i++)
      if (lc_next(h, name, &v) != 0) _exit(1);
    if (write(p[1], &v, sizeof v) != (ssize_t)sizeof v) _exit(1);
    _exit(0);
  }
  close(p[1]);
  int64_t last = 0;
  assert_int_equal(read(p[0], &last, sizeof last), (ssize_t)sizeof last);
  close(p[0]);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  return last;
}

/* ---- a restart without lc_close ------------------------------------------- */

static void test_restart(void **state) {
  fx_t *f = *state;
  int64_t last = crash_after(f->dir, "rs", 3);
  assert_i64_eq(last, 3);
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  int64_t res = 0;
  assert_ok(lc_reservation(f->h, "rs", &res));
  assert_i64_op(res, >, last);
  assert_i64_eq(tu_next1(f->h, "rs"), res + 1);
  tu_ledger l = explained(f->h, "rs");
  assert_i64_eq(l.values[LC_GAP_RESTART], res - last);
  assert_i64_eq(l.entries[LC_GAP_RESTART], 1);
  assert_i64_eq(l.values[LC_GAP_UNLOGGED], 0);
  /* a clean close and reopen adds nothing */
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "rs"), res + 2);
  tu_ledger l2 = explained(f->h, "rs");
  assert_i64_eq(l2.entries[LC_GAP_RESTART], 1);
  assert_i64_eq(l2.values[LC_GAP_RESTART] + l2.values[LC_GAP_UNLOGGED],
                res - last);
}

/* Memcached went on past the reservation meanwhile: the rest of the
 * reservation is a restart gap, the values beyond it unlogged. */
static void test_restart_memcached_ahead(void **state) {
  fx_t *f = *state;
  int64_t last = crash_after(f->dir, "ra", 5);
  char ahead[32];
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  int64_t res = 0;
  assert_ok(lc_reservation(f->h, "ra", &res));
  snprintf(ahead, sizeof ahead, "%lld", (long long)(res + 50));
  assert_ok(mcd_set(&mc, "lc:ra", ahead));
  assert_i64_eq(tu_next1(f->h, "ra"), res + 51);
  tu_ledger l = explained(f->h, "ra");
  assert_i64_eq(l.values[LC_GAP_RESTART], res - last);
  assert_i64_eq(l.values[LC_GAP_UNLOGGED], 50);
}

/* Memcached lost the counter too: the restore starts at the reservation,
 * whose rest is the only gap. */
static void test_restart_memcached_flushed(void **state) {
  fx_t *f = *state;
  int64_t last = crash_after(f->dir, "rf", 4);
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  int64_t res = 0;
  assert_ok(lc_reservation(f->h, "rf", &res));
  assert_i64_eq(tu_next1(f->h, "rf"), res + 1);
  tu_ledger l = explained(f->h, "rf");
  assert_i64_eq(l.values[LC_GAP_RESTART], res - last);
  assert_i64_eq(l.values[LC_GAP_UNLOGGED], 0);
}

/* ---- memcached backwards or ahead while running --------------------------- */

static void test_backwards_no_gap(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < 5; i++) tu_next1(f->h, "bw");
  assert_ok(mcd_set(&mc, "lc:bw", "2"));  /* a stray set, backwards */
  assert_i64_eq(tu_next1(f->h, "bw"), 6); /* raised exactly past */
  assert_ok(mcd_flush_all(&mc));          /* lost: restored */
  assert_i64_eq(tu_next1(f->h, "bw"), 7);
  tu_ledger l = explained(f->h, "bw");
  for (int k = 1; k <= LC_GAP_VOID; k++) assert_int_equal(l.entries[k], 0);
}

static void test_memcached_ahead(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < 5; i++) tu_next1(f->h, "ah");
  assert_ok(mcd_set(&mc, "lc:ah", "105")); /* another client's incrs */
  assert_i64_eq(tu_next1(f->h, "ah"), 106);
  tu_ledger l = explained(f->h, "ah");
  assert_i64_eq(l.values[LC_GAP_UNLOGGED], 100);
  assert_i64_eq(l.entries[LC_GAP_UNLOGGED], 1);
  assert_i64_eq(l.values[LC_GAP_RESTART], 0);
}

/* ---- advance ---------------------------------------------------------------- */

static void test_advance(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < 5; i++) tu_next1(f->h, "adv");
  assert_ok(lc_advance(f->h, "adv", 100));
  assert_ok(lc_advance(f->h, "adv", 50)); /* below: nothing */
  assert_i64_eq(tu_next1(f->h, "adv"), 100);
  tu_ledger l = explained(f->h, "adv");
  assert_i64_eq(l.values[LC_GAP_ADVANCE], 94);
  assert_i64_eq(l.entries[LC_GAP_ADVANCE], 1);
  /* an advance past everything, with no value taken since: the entry
   * is above the last record, and a restart goes on above it */
  assert_ok(lc_advance(f->h, "adv", 1000));
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  assert_i64_eq(tu_next1(f->h, "adv"), 1000);
  l = explained(f->h, "adv");
  assert_i64_eq(l.values[LC_GAP_ADVANCE], 94 + 899);
}

/* lc_adopt --above skips on purpose too: an advance entry, even though
 * adopting raises the reservation first. */
static void test_adopt_above(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < 3; i++) tu_next1(f->h, "ad");
  int64_t final = 0;
  assert_ok(lc_release(f->h, "ad", &final));
  assert_i64_eq(final, 3);
  assert_ok(lc_adopt(f->h, "ad", 100));
  assert_i64_eq(tu_next1(f->h, "ad"), 101);
  tu_ledger l = explained(f->h, "ad");
  assert_i64_eq(l.values[LC_GAP_ADVANCE], 97); /* 4..100 */
  assert_i64_eq(l.values[LC_GAP_UNLOGGED] + l.values[LC_GAP_RESTART], 0);
}

/* ---- prefetch --------------------------------------------------------------- */

static void test_segment_advance(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 1000, &f->h));
  assert_i64_eq(tu_next1(f->h, "sa"), 1); /* holds 1..1000 */
  assert_ok(lc_advance(f->h, "sa", 500)); /* gives the rest up */
  int64_t v = tu_next1(f->h, "sa");
  assert_i64_eq(v, 1001);
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 1000, &f->h));
  tu_ledger l = explained(f->h, "sa");
  assert_i64_eq(l.values[LC_GAP_SEGMENT], 999); /* 2..1000 */
  assert_i64_eq(l.values[LC_GAP_ADVANCE], 0);
}

/* Someone moves memcached on before lc_close: the unused rest cannot be
 * given back, and the ledger says so. */
static void test_segment_close_not_given_back(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 100, &f->h));
  for (int i = 0; i < 60; i++) tu_next1(f->h, "sc"); /* holds 1..100 */
  for (int i = 0; i < 100 && mcd_counter_value(&mc, "sc") < 200; i++)
    sleep_ms(10); /* the prefetch: ..200 */
  assert_i64_eq(mcd_counter_value(&mc, "sc"), 200);
  assert_ok(mcd_set(&mc, "lc:sc", "250")); /* 201..250 elsewhere */
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 100, &f->h));
  assert_i64_eq(tu_next1(f->h, "sc"), 251);
  tu_ledger l = explained(f->h, "sc");
  assert_i64_eq(l.values[LC_GAP_SEGMENT], 140); /* 61..200 */
  assert_i64_eq(l.values[LC_GAP_UNLOGGED], 50); /* 201..250 */
}

/* The same with memcached left alone: given back, no gap. */
static void test_segment_close_given_back(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 100, &f->h));
  for (int i = 0; i < 10; i++) tu_next1(f->h, "sg");
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 100, &f->h));
  assert_i64_eq(tu_next1(f->h, "sg"), 11);
  tu_ledger l = explained(f->h, "sg");
  for (int k = 1; k <= LC_GAP_VOID; k++) assert_int_equal(l.entries[k], 0);
}

static void test_segment_crash(void **state) {
  fx_t *f = *state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    lc_t *h;
    int64_t v;
    if (tu_open_prefetch(f->dir, 1000, &h) != 0) _exit(1);
    for (int i = 0; i < 10; i++)
      if (lc_next(h, "sk", &v) != 0) _exit(1);
    _exit(0); /* no lc_close */
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_ok(tu_open_prefetch(f->dir, 1000, &f->h));
  int64_t v = tu_next1(f->h, "sk");
  assert_i64_op(v, >, 1000);
  explained(f->h, "sk"); /* the open record covers 1..1000 */
  lc_record *r;
  assert_true(tu_records(f->h, "sk", &r) >= 2);
  assert_int_equal(r[0].version, LC_RECORD_SEGMENT_OPEN);
  free(r);
}

/* ---- a ledger entry deleted by hand ---------------------------------------- */

/* Deletes the key KIND NAME '\0' be64(last) (a record 'r', a ledger
 * entry 'g') from DIR/db with LevelDB itself, the handle closed. */
static void raw_delete(const char *dir, char kind, const char *name,
                       uint64_t last) {
  char key[LC_NAME_MAX + 10];
  size_t n = strlen(name);
  key[0] = kind;
  memcpy(key + 1, name, n + 1);
  for (int i = 0; i < 8; i++) key[n + 2 + i] = (char)(last >> (56 - 8 * i));
  char path[TU_PATH_MAX], *err = NULL;
  lc_options o;
  tu_options(&o, &mc, dir, path);
  leveldb_options_t *lo = leveldb_options_create();
  leveldb_t *db = leveldb_open(lo, path, &err);
  assert_null(err);
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_delete(db, wo, key, n + 10, &err);
  assert_null(err);
  leveldb_writeoptions_destroy(wo);
  leveldb_close(db);
  leveldb_options_destroy(lo);
}

static void test_deleted_entry_unexplained(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  tu_next1(f->h, "del");
  assert_ok(lc_advance(f->h, "del", 11));
  assert_i64_eq(tu_next1(f->h, "del"), 11);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  raw_delete(f->dir, 'g', "del", 10); /* advance's entry, 2..10 */
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  tu_ledger l;
  assert_ok(tu_explain(f->h, "del", &l));
  assert_i64_eq(l.values[0], 9); /* 2..10 */
  assert_i64_eq(l.entries[LC_GAP_ADVANCE], 0);
}

/* A gap entry still pending when a run died (a burned block below a
 * block whose write went through): n values of name, record `lost`
 * removed by hand (as if its write had failed and the run died before the
 * next write carried the burned entry); the next run finds the hole among
 * the last records and explains it as a restart gap. */
static void lost_pending(fx_t *f, const char *name, int n, int64_t lost) {
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < n; i++) tu_next1(f->h, name);
  assert_ok(lc_close(f->h));
  f->h = NULL;
  raw_delete(f->dir, 'r', name, lost);
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  tu_ledger l;
  assert_ok(tu_explain(f->h, name, &l));
  assert_i64_eq(l.values[0], 1); /* before any use */
  assert_i64_eq(tu_next1(f->h, name), n + 1);
  l = explained(f->h, name);
  assert_i64_eq(l.values[LC_GAP_RESTART], 1);
}

static void test_lost_pending_gap(void **state) {
  lost_pending(*state, "lp", 5, 3);
}

/* The same 30 records below the last (a daemon writes a record per request
 * group, and a stalled write lies that far down: chaos seed 6). */
static void test_lost_pending_gap_deep(void **state) {
  lost_pending(*state, "ld", 40, 10);
}

/* ---- lc_void ---------------------------------------------------------------- */

static void test_void(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 0; i < 10; i++) tu_next1(f->h, "vd");
  assert_ok(lc_void(f->h, "vd", 5, "order 5 cancelled"));
  assert_rc(lc_void(f->h, "vd", 5, "again"), LC_EVOIDED);
  assert_rc(lc_void(f->h, "vd", 11, "not yet"), LC_ENOTISSUED);
  assert_rc(lc_void(f->h, "never", 1, "no such counter"), LC_ENOTISSUED);
  assert_rc(lc_void(f->h, "vd", 0, "zero"), LC_EINVAL);
  assert_rc(lc_void(f->h, "vd", 6, ""), LC_EINVAL);
  assert_rc(lc_void(f->h, "vd", 6, NULL), LC_EINVAL);
  assert_rc(lc_void(f->h, "vd", 6, "two\nlines"), LC_EINVAL);
  char longer[LC_REASON_MAX + 2];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  assert_rc(lc_void(f->h, "vd", 6, longer), LC_EINVAL);
  longer[LC_REASON_MAX] = '\0';
  assert_ok(lc_void(f->h, "vd", 6, longer)); /* exactly the maximum */
  assert_rc(lc_void(f->h, "bad name", 6, "x"), LC_ENAME);

  lc_iter *it;
  lc_gap g;
  assert_ok(lc_ledger_open(f->h, "vd", &it));
  assert_int_equal(lc_ledger_next(it, &g), 1);
  assert_i64_eq(g.first, 5);
  assert_i64_eq(g.last, 5);
  assert_int_equal(g.cause, LC_GAP_VOID);
  assert_string_equal(g.reason, "order 5 cancelled");
  assert_string_equal(lc_gap_cause_name(g.cause), "void");
  assert_int_equal(lc_ledger_next(it, &g), 1);
  assert_int_equal(strlen(g.reason), LC_REASON_MAX);
  assert_int_equal(lc_ledger_next(it, &g), 0);
  lc_record rec;
  assert_rc(lc_iter_next(it, &rec), LC_EINVAL); /* not a record iterator */
  lc_iter_close(it);
  tu_ledger l = explained(f->h, "vd");
  assert_int_equal(l.entries[LC_GAP_VOID], 2);

  /* a prune below it keeps it; one that deletes its record deletes it */
  lc_prune_opts po = {.below = 4};
  lc_prune_result pr;
  assert_ok(lc_prune(f->h, "vd", &po, &pr));
  assert_int_equal(pr.deleted, 3);
  assert_int_equal(pr.ledger_deleted, 0);
  assert_ok(lc_void(f->h, "vd", 4, "still issued")); /* its record kept */
  po.below = 6;
  assert_ok(lc_prune(f->h, "vd", &po, &pr));
  assert_int_equal(pr.deleted, 2);        /* 4 and 5 */
  assert_int_equal(pr.ledger_deleted, 2); /* their voids */
  l = explained(f->h, "vd");
  assert_int_equal(l.entries[LC_GAP_VOID], 1); /* 6's */
}

/* A value held in a segment and not handed out cannot be voided. */
static void test_void_prefetched(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 100, &f->h));
  for (int i = 0; i < 3; i++) tu_next1(f->h, "vp");
  assert_ok(lc_void(f->h, "vp", 3, "issued"));
  assert_rc(lc_void(f->h, "vp", 4, "held"), LC_ENOTISSUED);
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct th {
  pthread_t t;
  lc_t *h;
  int rc;
} th;

static void *th_main(void *p) {
  th *a = p;
  for (int i = 0; i < 300 && !a->rc; i++) {
    int64_t v;
    a->rc = lc_next_n(a->h, "mt", 1 + (uint64_t)(i % 3), &v);
  }
  return NULL;
}

/* Eight threads while another client moves memcached ahead now and then:
 * every hole is explained, and exactly by those jumps. */
static void test_threads(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  th t[8];
  for (int i = 0; i < 8; i++) {
    t[i] = (th){.h = f->h};
    assert_int_equal(pthread_create(&t[i].t, NULL, th_main, &t[i]), 0);
  }
  uint64_t jumped = 0;
  for (int k = 0; k < 5; k++) {
    sleep_ms(5);
    char buf[32];
    int64_t m = mcd_counter_value(&mc, "mt");
    if (m < 0) continue;
    /* not atomic with the threads' increments: the jump is whatever
     * the ledger and records show, checked below */
    snprintf(buf, sizeof buf, "%lld", (long long)(m + 1000));
    if (mcd_set(&mc, "lc:mt", buf) == 0) jumped++;
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i].t, NULL);
    assert_ok(t[i].rc);
  }
  assert_ok(lc_close(f->h));
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  tu_ledger l = explained(f->h, "mt");
  assert_true(l.values[LC_GAP_UNLOGGED] <= jumped * 1000 + 1000);
  assert_int_equal(l.values[LC_GAP_RESTART] + l.values[LC_GAP_BURNED], 0);
}

/* ---- the frontier, white box ------------------------------------------ */

static void test_frontier(void **state) {
  (void)state;
  lc__counter *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->gap_low = 5;
  c->restart_to = 7;
  lc__gap g[LC__GAPS];
  /* a log that cannot be read: the recheck after a failed write waits */
  lc__log nolog = {.state = LC__LOG_FAILED};
  /* An increment sent at floor 5 is slow; 40 blocks above it complete,
   * each with it still in flight (low 5): nothing is settled. */
  for (int64_t v = 20; v < 60; v++) {
    lc__ledger_taken(c, v, v, 5);
    assert_int_equal(c->ngaps, 0);
  }
  assert_int_equal(c->nahead, 1); /* 20..59 merged */
  assert_non_null(c->rare);       /* waiting blocks: the side structure */
  /* It lands at 10..14: holes 6..9 and 15..19 are final now. */
  lc__ledger_taken(c, 10, 14, 59);
  assert_int_equal(lc__ledger_take(&nolog, c, g), 3);
  assert_i64_eq(g[0].first, 6); /* split at the restart window */
  assert_i64_eq(g[0].last, 7);
  assert_int_equal(g[0].cause, LC_GAP_RESTART);
  assert_i64_eq(g[1].first, 8);
  assert_i64_eq(g[1].last, 9);
  assert_int_equal(g[1].cause, LC_GAP_UNLOGGED);
  assert_i64_eq(g[2].first, 15);
  assert_i64_eq(g[2].last, 19);
  assert_i64_eq(c->gap_low, 59);
  assert_int_equal(c->nahead, 0);
  assert_null(c->rare); /* nothing waits, nothing pending: freed */
  /* Blocks in order allocate nothing. */
  for (int64_t v = 60; v < 60 + 1000; v++) {
    lc__ledger_taken(c, v, v, v);
    assert_null(c->rare);
  }
  c->gap_low = 59;
  /* A block that touches the frontier moves it on; a hole above the low
   * waits. */
  lc__ledger_taken(c, 60, 61, 61);
  lc__ledger_taken(c, 70, 71, 61);
  assert_int_equal(c->ngaps, 0);
  lc__ledger_settle(c, 71);
  assert_int_equal(lc__ledger_take(&nolog, c, g), 1);
  assert_i64_eq(g[0].first, 62);
  assert_i64_eq(g[0].last, 69);
  /* Burned blocks failing in any order stay one entry. */
  assert_int_equal(lc__ledger_take(&nolog, c, g), 0);
  lc__ledger_gap(c, 220, 229, LC_GAP_BURNED);
  lc__ledger_gap(c, 200, 209, LC_GAP_BURNED);
  lc__ledger_gap(c, 230, 239, LC_GAP_BURNED);
  lc__ledger_gap(c, 210, 219, LC_GAP_BURNED);
  lc__ledger_gap(c, 240, 240, LC_GAP_UNLOGGED); /* another cause */
  assert_int_equal(lc__ledger_take(&nolog, c, g), 2);
  assert_i64_eq(g[0].first, 200);
  assert_i64_eq(g[0].last, 239);
  assert_int_equal(g[1].cause, LC_GAP_UNLOGGED);
  lc__ledger_putback(c, g, 2); /* a failed write */
  assert_true(c->recheck);
  assert_int_equal(lc__ledger_take(&nolog, c, g), 2);
  assert_true(c->recheck); /* not checked yet: the log cannot be read */
  c->recheck = false;
  /* Full of separate spans (never seen): merged, never a wrong entry. */
  for (int64_t v = 100; v < 100 + 3 * (LC__ACCEPTED + 4); v += 3)
    lc__ledger_taken(c, v, v, 71);
  assert_int_equal(c->ngaps, 0);
  assert_true(c->nahead <= LC__ACCEPTED);
  free(c->rare);
  free(c);
}

/* The recheck after a failed write (a write that failed may have landed:
 * the values the log's records and entries hold leave the pending gaps)
 * takes out every covering span, however many: a pending burned gap over
 * 40 records and 5 entries, with 2 holes between them, keeps exactly the
 * holes (it took out at most 32 spans per side once, so a gap entry
 * would have been written over records 33..40). */
static void test_recheck_many_spans(void **state) {
  fx_t *f = *state;
  assert_ok(tu_open_prefetch(f->dir, 0, &f->h));
  for (int i = 1; i <= 40; i++) assert_i64_eq(tu_next1(f->h, "rk"), i);
  lc__counter *c = lc__counter_new("rk", 2);
  assert_non_null(c);
  /* entries over 41..45 and 51..60 (5 of them), holes 46..50, 61..70 */
  lc__gap e[5] = {{41, 42, LC_GAP_UNLOGGED}, {43, 45, LC_GAP_RESTART},
                  {51, 52, LC_GAP_UNLOGGED}, {53, 55, LC_GAP_BURNED},
                  {56, 60, LC_GAP_SEGMENT}};
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  lc__ledger_batch(b, c, e, 5);
  assert_ok(lc__log_sync(f->h, b, -1));
  leveldb_writebatch_destroy(b);
  lc__gap g[LC__GAPS];
  lc__counter_lock(c);
  lc__ledger_gap(c, 1, 70, LC_GAP_BURNED);
  c->recheck = true;
  int n = lc__ledger_take(&f->h->log, c, g);
  lc__counter_unlock(c);
  assert_false(c->recheck);
  assert_int_equal(n, 2);
  assert_i64_eq(g[0].first, 46);
  assert_i64_eq(g[0].last, 50);
  assert_int_equal(g[0].cause, LC_GAP_BURNED);
  assert_i64_eq(g[1].first, 61);
  assert_i64_eq(g[1].last, 70);
  lc__counter_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_restart, tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_restart_memcached_ahead,
                                      tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_restart_memcached_flushed,
                                      tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_backwards_no_gap, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_memcached_ahead, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_advance, tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_adopt_above, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_segment_advance, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_segment_close_not_given_back,
                                      tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_segment_close_given_back,
                                      tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_segment_crash, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_deleted_entry_unexplained,
                                      tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_lost_pending_gap_deep, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_lost_pending_gap, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_void, tu_setup_dir, tu_teardown),
      cmocka_unit_test_setup_teardown(test_void_prefetched, tu_setup_dir,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_threads, tu_setup_dir, tu_teardown),
      cmocka_unit_test(test_frontier),
      cmocka_unit_test_setup_teardown(test_recheck_many_spans, tu_setup_dir,
                                      tu_teardown),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
