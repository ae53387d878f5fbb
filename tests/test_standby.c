/*
 * test_standby.c - a primary and its standby in one process, on one
 * memcached (lc_options.replication_listen, standby_of, lc_promote):
 *  - partition: four threads allocate on five counters through the
 *    primary; the standby is promoted while the primary still runs; the
 *    old primary's later allocations fail (ENOSTANDBY) once its window
 *    ends, and every id it ever handed out is below every id of the new
 *    primary; the new primary's logs explain every gap (failover among
 *    them); the same with prefetch; the same with memcached flushed
 *    before the promotion;
 *  - required mode without a standby: ENOSTANDBY, nothing handed out, and
 *    allocation works once a standby has caught up;
 *  - a stale standby (its primary in preferred mode went on alone):
 *    promote is ESTALE, promote with force and above goes on above;
 *  - catching up: a standby closed and reopened resumes (no second copy)
 *    and holds everything;
 *  - two standbys at once: one synchronous, the other behind it and
 *    stale; when the first goes the other takes its place without a
 *    copy and is promoted without force, and the first, back behind it,
 *    is stale (ESTALE);
 *  - a resume across a promotion: a standby that stood behind, back and
 *    following the promoted one, resumes (no copy) and holds every id;
 *  - tallies: flushed and pending changes made through the old primary
 *    are exact after the promotion, none lost, none twice;
 *  - a standby refuses writes (ESTANDBY) and reads work; its directory
 *    opened as a plain log is refused.
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
#include <unistd.h>

#include "mcd.h"

#define NC 5
#define NT 4
#define MAXIDS 200000
static const char *const names[NC] = {"sa", "sb", "sc", "sd", "se"};

typedef struct opened {
  char addr[32];
  char path[TU_PATH_MAX];
} opened;

/* The replication secret of the next open_primary / open_standby (NULL:
 * none). */
static const char *secret;

static lc_t *open_primary(const fx_t *f, const char *sub, int mode,
                          int timeout_ms, uint64_t prefetch, opened *p) {
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, sub, p->path);
  o.replication_secret = secret;
  snprintf(p->addr, sizeof p->addr, "127.0.0.1:%d", mcd_free_port());
  o.replication_listen = p->addr;
  o.standby_mode = mode;
  o.standby_timeout_ms = timeout_ms;
  o.prefetch = prefetch;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

static lc_t *open_standby(const fx_t *f, const char *sub, const char *of,
                          uint64_t prefetch, char path[TU_PATH_MAX]) {
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, sub, path);
  o.replication_secret = secret;
  o.standby_of = of;
  o.prefetch = prefetch;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

static lc_replication_status status(lc_t *h) {
  lc_replication_status s;
  assert_ok(lc_get_replication_status(h, &s));
  return s;
}

/* Waits (at most 5 s) until the primary has a standby in sync. */
static void wait_sync(lc_t *primary) {
  for (int i = 0; i < 500 && strcmp(status(primary).state, "sync"); i++)
    usleep(10000);
}

/* Waits (at most 20 s) until the primary's standby is in sync and has
 * applied everything written so far. */
static void wait_caught_up(lc_t *primary, lc_t *standby) {
  for (int i = 0; i < 2000; i++) {
    lc_replication_status p = status(primary), s = status(standby);
    if (!strcmp(p.state, "sync") && s.seq == p.seq && p.acked == p.seq) return;
    usleep(10000);
  }
  lc_replication_status p = status(primary), s = status(standby);
  fail_msg("standby not caught up: primary %s seq %llu acked %llu, standby "
           "%s seq %llu",
           p.state, (unsigned long long)p.seq, (unsigned long long)p.acked,
           s.state, (unsigned long long)s.seq);
}

/* ---- allocating threads ------------------------------------------------ */

typedef struct ids {
  pthread_mutex_t mu;
  int64_t *v[NC];
  long n[NC];
} ids;

typedef struct worker {
  lc_t *h;
  ids *out;
  atomic_bool *stop;
  int t, rc;
  long got;
  char detail[256]; /* of a failure */
} worker;

static void keep(ids *s, int c, int64_t v) {
  pthread_mutex_lock(&s->mu);
  if (s->n[c] < MAXIDS) s->v[c][s->n[c]++] = v;
  pthread_mutex_unlock(&s->mu);
}

static void *alloc_main(void *p) {
  worker *w = p;
  int64_t prev[NC] = {0};
  for (long i = 0; !atomic_load(w->stop); i++) {
    int c = (int)((i + w->t) % NC);
    int64_t v;
    if ((w->rc = lc_next(w->h, names[c], &v)) != 0) {
      snprintf(w->detail, sizeof w->detail, "%s", lc_last_detail());
      break;
    }
    if (v <= prev[c]) {
      w->rc = LC_ECORRUPT; /* not increasing */
      break;
    }
    prev[c] = v;
    keep(w->out, c, v);
    w->got++;
  }
  return NULL;
}

static void ids_init(ids *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->mu, NULL);
  for (int c = 0; c < NC; c++) assert_non_null(s->v[c] = malloc(MAXIDS * 8));
}

static void ids_free(ids *s) {
  for (int c = 0; c < NC; c++) free(s->v[c]);
  pthread_mutex_destroy(&s->mu);
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* No id twice within s; its largest and smallest per counter. */
static void check_unique(ids *s, int64_t lo[NC], int64_t hi[NC]) {
  for (int c = 0; c < NC; c++) {
    qsort(s->v[c], (size_t)s->n[c], 8, cmp64);
    for (long i = 1; i < s->n[c]; i++)
      if (s->v[c][i] == s->v[c][i - 1])
        fail_msg("%s: id %lld twice", names[c], (long long)s->v[c][i]);
    lo[c] = s->n[c] ? s->v[c][0] : 0;
    hi[c] = s->n[c] ? s->v[c][s->n[c] - 1] : 0;
  }
}

static void run_for(lc_t *h, ids *out, int ms, bool tolerate) {
  atomic_bool stop = false;
  worker w[NT];
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) {
    w[i] = (worker){.h = h, .out = out, .stop = &stop, .t = i};
    assert_int_equal(pthread_create(&t[i], NULL, alloc_main, &w[i]), 0);
  }
  usleep((useconds_t)ms * 1000);
  atomic_store(&stop, true);
  for (int i = 0; i < NT; i++) {
    pthread_join(t[i], NULL);
    if (!tolerate && w[i].rc)
      fail_msg("thread %d: %s (%s)", i, lc_err_name(w[i].rc), w[i].detail);
  }
}

/* Every gap of name in h's log is explained; how many failover ones. */
static uint64_t explained(lc_t *h, const char *name) {
  tu_ledger l;
  assert_ok(tu_explain(h, name, &l));
  if (l.entries[0] || l.conflicts)
    fail_msg("%s: %llu unexplained gaps (%llu values), %llu conflicts", name,
             (unsigned long long)l.entries[0], (unsigned long long)l.values[0],
             (unsigned long long)l.conflicts);
  return l.entries[LC_GAP_FAILOVER];
}

/* Every failover gap of name has reason want; how many there are. */
static int failover_reasons(lc_t *h, const char *name, const char *want) {
  lc_iter *it;
  lc_gap g;
  int n = 0, rc;
  assert_ok(lc_ledger_open(h, name, &it));
  while ((rc = lc_ledger_next(it, &g)) == 1)
    if (g.cause == LC_GAP_FAILOVER) {
      assert_string_equal(g.reason, want);
      n++;
    }
  lc_iter_close(it);
  assert_int_equal(rc, 0);
  return n;
}

/* ---- partition --------------------------------------------------------- */

static void partition(void **state, uint64_t prefetch, bool flush) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *old = open_primary(f, "p", LC_STANDBY_REQUIRED, 3000, prefetch, &p);
  lc_t *sb = open_standby(f, "s", p.addr, prefetch, spath);
  ids before, after, fresh;
  ids_init(&before);
  ids_init(&after);
  ids_init(&fresh);
  run_for(old, &before, 600, false);
  wait_caught_up(old, sb);
  if (flush) assert_int_equal(mcd_flush_all(&mc), 0);
  int64_t t0 = mono_us();
  uint64_t raised = 0;
  assert_ok(lc_set_term(sb, 77)); /* as a coordinator's leadership would */
  assert_ok(lc_promote(sb, NULL, &raised));
  uint64_t used = 0;
  for (int c = 0; c < NC; c++) used += before.n[c] > 0;
  if (raised != used) {
    for (int c = 0; c < NC; c++) {
      int64_t res = -1, cur = -1;
      lc_reservation(sb, names[c], &res);
      lc_current(sb, names[c], &cur);
      printf("# %s: %ld ids before, reservation %lld, current %lld\n", names[c],
             before.n[c], (long long)res, (long long)cur);
    }
    fail_msg("%llu counters raised, %llu used", (unsigned long long)raised,
             (unsigned long long)used);
  }
  printf("# promoted in %lld us (%s, memcached %s)\n",
         (long long)(mono_us() - t0), prefetch ? "prefetch" : "no prefetch",
         flush ? "flushed" : "kept");
  assert_int_equal(status(sb).role, LC_ROLE_ALONE);
  /* both sides allocate: the old one until its window ends */
  run_for(sb, &fresh, 300, false);
  run_for(old, &after, 1500, true);
  int64_t r;
  /* what it still holds (a prefetched segment) goes out, then it stops */
  int rc = 0;
  for (long i = 0; i < 1000000 && rc == 0; i++)
    if ((rc = lc_next(old, names[0], &r)) == 0) keep(&after, 0, r);
  assert_rc(rc, LC_ENOSTANDBY);
  int64_t lo0[NC], hi0[NC], lo1[NC], hi1[NC], lo2[NC], hi2[NC];
  check_unique(&before, lo0, hi0);
  check_unique(&after, lo1, hi1);
  check_unique(&fresh, lo2, hi2);
  uint64_t failovers = 0, termed = 0;
  for (int c = 0; c < NC; c++) {
    assert_true(fresh.n[c] > 0);
    int64_t old_hi = hi1[c] > hi0[c] ? hi1[c] : hi0[c];
    if (old_hi >= lo2[c])
      fail_msg("%s: the old primary handed out %lld, the new one %lld", names[c],
               (long long)old_hi, (long long)lo2[c]);
    failovers += explained(sb, names[c]);
    termed += failover_reasons(sb, names[c], "term 77");
  }
  assert_int_equal(termed, failovers); /* each says the term */
  if (!prefetch) /* else the last segment may end where memcached stands */
    assert_true(failovers > 0);
  printf("# old primary: %ld ids after the promotion (of them on %s: %ld), "
         "the new one %ld; %llu failover gaps\n",
         after.n[0] + after.n[1] + after.n[2] + after.n[3] + after.n[4],
         names[0], after.n[0], fresh.n[0] + fresh.n[1] + fresh.n[2] +
             fresh.n[3] + fresh.n[4],
         (unsigned long long)failovers);
  lc_close(old); /* its exact reservations cannot be acknowledged */
  /* a restart of the promoted log goes on above everything */
  assert_ok(lc_close(sb));
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, "s", spath);
  lc_t *again = NULL;
  assert_ok(lc_open(&o, &again));
  for (int c = 0; c < NC; c++) assert_i64_op(tu_next1(again, names[c]), >, hi2[c]);
  lc_close(again);
  ids_free(&before);
  ids_free(&after);
  ids_free(&fresh);
}

static void test_partition(void **state) { partition(state, 0, false); }
static void test_partition_prefetch(void **state) { partition(state, 64, false); }
static void test_partition_flushed(void **state) { partition(state, 0, true); }

/* ---- required mode ----------------------------------------------------- */

static void test_required_without_standby(void **state) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_REQUIRED, 1000, 0, &p);
  int64_t v = 0, t0 = mono_us();
  assert_rc(lc_next(h, "x", &v), LC_ENOSTANDBY);
  int64_t waited = mono_us() - t0;
  assert_i64_op(waited, >=, 750000); /* the timeout, 1 s */
  assert_rc(lc_next(h, "x", &v), LC_ENOSTANDBY);
  lc_t *sb = open_standby(f, "s", p.addr, 0, spath);
  wait_sync(h);
  assert_string_equal(status(h).state, "sync");
  v = tu_next1(h, "x");
  assert_i64_op(v, >=, 1);
  wait_caught_up(h, sb);
  int64_t res = 0;
  assert_ok(lc_reservation(sb, "x", &res));
  assert_i64_op(res, >=, v); /* the floor reached the standby first */
  printf("# ENOSTANDBY after %lld us; first id %lld, the standby's floor "
         "%lld\n",
         (long long)waited, (long long)v, (long long)res);
  lc_close(sb);
  lc_close(h);
}

/* ---- the replication secret -------------------------------------------- */

/* Whether a standby opened with standby_secret reaches sync with a
 * primary opened with primary_secret (each the other's proof on a fresh
 * nonce; a side with a secret refuses a side without).  A refused one
 * keeps reconnecting, so it is given 1.5 s. */
static bool syncs(const fx_t *f, const char *sub, const char *primary_secret,
                  const char *standby_secret) {
  opened p;
  char spath[TU_PATH_MAX], psub[16], ssub[16];
  snprintf(psub, sizeof psub, "%s-p", sub);
  snprintf(ssub, sizeof ssub, "%s-s", sub);
  secret = primary_secret;
  lc_t *h = open_primary(f, psub, LC_STANDBY_PREFERRED, 500, 0, &p);
  secret = standby_secret;
  lc_t *sb = open_standby(f, ssub, p.addr, 0, spath);
  secret = NULL;
  for (int i = 0; i < 150 && strcmp(status(h).state, "sync"); i++)
    usleep(10000);
  bool ok = strcmp(status(h).state, "sync") == 0;
  if (ok) { /* the stream flows */
    int64_t v = tu_next1(h, sub); /* each log its own counter */
    wait_caught_up(h, sb);
    int64_t res = 0;
    assert_ok(lc_reservation(sb, sub, &res));
    assert_i64_op(res, >=, v);
  } else {
    assert_int_equal(status(sb).connected, 0);
  }
  assert_ok(lc_close(sb));
  assert_ok(lc_close(h));
  return ok;
}

static void test_replication_secret(void **state) {
  fx_t *f = *state;
  assert_true(syncs(f, "same", "s3cret-a", "s3cret-a"));
  assert_false(syncs(f, "wrong", "s3cret-a", "s3cret-b"));
  assert_false(syncs(f, "nosb", "s3cret-a", NULL));
  assert_false(syncs(f, "nopr", NULL, "s3cret-a"));
  assert_true(syncs(f, "none", NULL, NULL));
}

/* ---- a stale standby --------------------------------------------------- */

static void test_stale_standby(void **state) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_PREFERRED, 2000, 0, &p);
  lc_t *sb = open_standby(f, "s", p.addr, 0, spath);
  int64_t v = 0;
  for (int i = 0; i < 50; i++) v = tu_next1(h, "st");
  wait_caught_up(h, sb);
  assert_ok(lc_close(sb));
  int64_t last = 0;
  for (int i = 0; i < 3000; i++) last = tu_next1(h, "st"); /* alone */
  assert_i64_op(last, >, v);
  assert_ok(lc_close(h));
  assert_int_equal(mcd_flush_all(&mc), 0); /* and memcached lost it */
  sb = open_standby(f, "s", p.addr, 0, spath); /* the primary is gone */
  assert_true(status(sb).stale);
  uint64_t n = 0;
  assert_rc(lc_promote(sb, NULL, &n), LC_ESTALE);
  assert_non_null(strstr(lc_last_detail(), "preferred"));
  assert_rc(lc_next(sb, "st", &v), LC_ESTANDBY); /* still a standby */
  lc_promote_opts force = {.force = 1, .above = last};
  assert_ok(lc_promote(sb, &force, &n));
  assert_i64_op(tu_next1(sb, "st"), >, last);
  assert_true(explained(sb, "st") > 0);
  lc_close(sb);
}

/* ---- catching up ------------------------------------------------------- */

static void test_catch_up(void **state) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_PREFERRED, 2000, 0, &p);
  lc_t *sb = open_standby(f, "s", p.addr, 0, spath);
  ids a;
  ids_init(&a);
  run_for(h, &a, 300, false);
  wait_caught_up(h, sb);
  assert_ok(lc_close(sb));
  run_for(h, &a, 300, false); /* the standby is away: the ring keeps it */
  sb = open_standby(f, "s", p.addr, 0, spath);
  run_for(h, &a, 300, false);
  wait_caught_up(h, sb);
  lc_replication_status ps = status(h);
  printf("# %llu connects, %llu copies, seq %llu\n",
         (unsigned long long)ps.connects, (unsigned long long)ps.snapshots,
         (unsigned long long)ps.seq);
  assert_int_equal(ps.connects, 2);
  assert_int_equal(ps.snapshots, 1); /* the second one resumed */
  int64_t lo[NC], hi[NC];
  check_unique(&a, lo, hi);
  assert_ok(lc_close(h)); /* clean: its exact reservations replicated */
  lc_promote_opts force = {.force = 1}; /* preferred: stale by rule */
  assert_ok(lc_promote(sb, &force, NULL));
  for (int c = 0; c < NC; c++) {
    lc_record *r;
    long nr = tu_records(sb, names[c], &r);
    assert_true(nr > 0);
    assert_i64_eq(r[nr - 1].last, hi[c]); /* every record came across */
    free(r);
    assert_i64_eq(tu_next1(sb, names[c]), hi[c] + 1); /* nothing skipped */
    explained(sb, names[c]);
  }
  lc_close(sb);
  ids_free(&a);
}

/* ---- two standbys ----------------------------------------------------- */

/* Waits (at most 10 s) until sb has applied everything h wrote. */
static void wait_applied(lc_t *h, lc_t *sb) {
  for (int i = 0; i < 1000 && status(sb).seq != status(h).seq; i++)
    usleep(10000);
  assert_int_equal(status(sb).seq, status(h).seq);
}

static int standbys(lc_t *h) {
  int n = -1;
  assert_ok(lc_replication_standbys(h, &n));
  return n;
}

/* Two standbys stream at once (required mode): the first in sync is the
 * synchronous one, the other follows behind it, stale (it is told
 * nothing); when the synchronous one goes, the other takes its place
 * without a second copy, allocation goes on, and it is promoted without
 * force, holding every id. */
static void test_two_standbys(void **state) {
  fx_t *f = *state;
  opened p;
  char path1[TU_PATH_MAX], path2[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_REQUIRED, 2000, 0, &p);
  lc_t *s1 = open_standby(f, "s1", p.addr, 0, path1);
  wait_sync(h);
  lc_t *s2 = open_standby(f, "s2", p.addr, 0, path2);
  for (int i = 0; i < 500 && standbys(h) < 2; i++) usleep(10000);
  assert_int_equal(standbys(h), 2);
  ids a;
  ids_init(&a);
  run_for(h, &a, 300, false);
  wait_caught_up(h, s1);
  wait_applied(h, s2);
  assert_false(status(s1).stale); /* the synchronous one */
  assert_true(status(s2).stale);  /* behind it: promotion needs force */
  uint64_t copies = status(h).snapshots;
  assert_int_equal(copies, 2);
  assert_ok(lc_close(s1));
  run_for(h, &a, 300, false); /* required mode: s2 acknowledges now */
  wait_caught_up(h, s2);
  assert_int_equal(standbys(h), 1);
  assert_int_equal(status(h).snapshots, copies); /* s2 took no second copy */
  for (int i = 0; i < 200 && status(s2).stale; i++) usleep(10000);
  assert_false(status(s2).stale); /* told it is the synchronous one */
  s1 = open_standby(f, "s1", p.addr, 0, path1); /* back, behind s2 now */
  for (int i = 0; i < 500 && standbys(h) < 2; i++) usleep(10000);
  run_for(h, &a, 300, false);
  wait_applied(h, s1);
  assert_true(status(s1).stale); /* it was the synchronous one, no more */
  int64_t lo[NC], hi[NC];
  check_unique(&a, lo, hi);
  assert_ok(lc_close(h));
  assert_rc(lc_promote(s1, NULL, NULL), LC_ESTALE);
  assert_ok(lc_close(s1));
  assert_ok(lc_promote(s2, NULL, NULL)); /* not stale: no force */
  for (int c = 0; c < NC; c++) {
    assert_i64_op(tu_next1(s2, names[c]), >, hi[c]);
    explained(s2, names[c]);
  }
  lc_close(s2);
  ids_free(&a);
}

/* ---- a resume across a promotion ---------------------------------------- */

/* A standby that listens for standbys of its own once promoted. */
static lc_t *open_standby_listening(const fx_t *f, const char *sub,
                                    const char *of, opened *s) {
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, sub, s->path);
  o.standby_of = of;
  snprintf(s->addr, sizeof s->addr, "127.0.0.1:%d", mcd_free_port());
  o.replication_listen = s->addr;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

/* Two standbys of P; s2 goes away and P goes on with s1; P is lost; s1 is
 * promoted; s2, back and following s1, resumes from where it stood (s1
 * kept the old stream's last entries) instead of copying s1's whole log,
 * gets the promotion's own writes, reaches sync, and holds every id:
 * promoted in turn, it goes on above them all. */
static void test_resume_after_promotion(void **state) {
  fx_t *f = *state;
  opened p, s1;
  char path2[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_REQUIRED, 2000, 0, &p);
  lc_t *a = open_standby_listening(f, "s1", p.addr, &s1);
  wait_sync(h);
  lc_t *b = open_standby(f, "s2", p.addr, 0, path2);
  for (int i = 0; i < 500 && standbys(h) < 2; i++) usleep(10000);
  ids v;
  ids_init(&v);
  run_for(h, &v, 200, false);
  wait_caught_up(h, a);
  wait_applied(h, b);
  assert_ok(lc_close(b)); /* s2 away: it stands behind from now on */
  run_for(h, &v, 200, false);
  wait_caught_up(h, a);
  uint64_t behind = status(h).seq;
  assert_ok(lc_close(h)); /* the primary lost (its last writes reached s1) */
  assert_ok(lc_promote(a, NULL, NULL));
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, "s2", path2);
  o.standby_of = s1.addr;
  b = NULL;
  assert_ok(lc_open(&o, &b));
  wait_sync(a);
  run_for(a, &v, 200, false); /* required mode: s2 acknowledges */
  wait_caught_up(a, b);
  lc_replication_status ps = status(a);
  printf("# the promoted standby: seq %llu (the old primary's last %llu), "
         "%llu copies sent, %llu connects\n",
         (unsigned long long)ps.seq, (unsigned long long)behind,
         (unsigned long long)ps.snapshots, (unsigned long long)ps.connects);
  assert_int_equal(ps.snapshots, 0); /* s2 resumed: no copy */
  int64_t lo[NC], hi[NC];
  check_unique(&v, lo, hi);
  assert_ok(lc_close(a));
  assert_ok(lc_promote(b, NULL, NULL)); /* it was a's synchronous standby */
  for (int c = 0; c < NC; c++) {
    assert_i64_op(tu_next1(b, names[c]), >, hi[c]);
    explained(b, names[c]);
  }
  lc_close(b);
  ids_free(&v);
}

/* ---- tallies ----------------------------------------------------------- */

static void test_tallies(void **state) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_REQUIRED, 3000, 0, &p);
  lc_t *sb = open_standby(f, "s", p.addr, 0, spath);
  wait_sync(h);
  int64_t sum = 0;
  for (int i = 1; i <= 300; i++) {
    int64_t d = i % 7 ? i : -i;
    assert_ok(lc_tally_add(h, "views", d));
    sum += d;
    if (i % 100 == 0) assert_ok(lc_tally_flush(h, 0, LC_TALLY_FORCE, NULL));
  }
  wait_caught_up(h, sb);
  assert_ok(lc_promote(sb, NULL, NULL));
  for (int i = 0; i < 10; i++) { /* after the promotion, on the new one */
    assert_ok(lc_tally_add(sb, "views", 5));
    sum += 5;
  }
  lc_close(h); /* its last flush cannot be acknowledged: not applied */
  assert_ok(lc_tally_flush(sb, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, NULL));
  int64_t total = 0, pending = 0;
  assert_ok(lc_tally_get(sb, "views", &total, &pending, NULL));
  assert_i64_eq(total + pending, sum);
  assert_i64_eq(total, sum);
  lc_close(sb);
}

/* ---- what a standby refuses -------------------------------------------- */

static void test_standby_refuses(void **state) {
  fx_t *f = *state;
  opened p;
  char spath[TU_PATH_MAX];
  lc_t *h = open_primary(f, "p", LC_STANDBY_REQUIRED, 3000, 0, &p);
  lc_t *sb = open_standby(f, "s", p.addr, 0, spath);
  int64_t v = 0;
  wait_sync(h);
  int64_t last = 0;
  for (int i = 0; i < 10; i++) last = tu_next1(h, "rf");
  wait_caught_up(h, sb);
  assert_rc(lc_next(sb, "rf", &v), LC_ESTANDBY);
  assert_rc(lc_tally_add(sb, "t", 1), LC_ESTANDBY);
  assert_rc(lc_void(sb, "rf", 3, "test"), LC_ESTANDBY);
  assert_rc(lc_advance(sb, "rf", 100), LC_ESTANDBY);
  assert_ok(lc_current(sb, "rf", &v));
  assert_i64_eq(v, last);
  assert_int_equal(lc_next_quick(sb, "rf"), 0);
  lc_replication_status s = status(sb);
  assert_int_equal(s.role, LC_ROLE_STANDBY);
  assert_false(s.stale);
  assert_string_equal(s.state, "sync");
  lc_close(sb);
  lc_close(h);
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, "s", spath);
  lc_t *plain = NULL;
  assert_rc(lc_open(&o, &plain), LC_ESTANDBY);
  assert_non_null(strstr(lc_last_detail(), "promote"));
  /* and bad options */
  tu_options_sub(&o, &mc, f->dir, "q", spath);
  o.standby_mode = 7;
  assert_rc(lc_open(&o, &plain), LC_EINVAL);
  o.standby_mode = 0;
  o.replication_listen = "nowhere";
  assert_rc(lc_open(&o, &plain), LC_EINVAL);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup_dir, tu_teardown)
      T(test_standby_refuses),        T(test_required_without_standby),
      T(test_partition),              T(test_partition_prefetch),
      T(test_partition_flushed),      T(test_stale_standby),
      T(test_catch_up),               T(test_tallies),
      T(test_replication_secret),     T(test_two_standbys),
      T(test_resume_after_promotion),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
