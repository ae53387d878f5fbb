/*
 * test_owner.c - one owning log per counter: the claim in
 * memcached, LC_EOWNED and its detail, the refusal remembered in the log
 * across memcached losses and restarts, release and adopt, and what the
 * claim cannot catch (a brand-new log after a memcached loss).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mcd.h"

/* A second log, DIR/SUB, on the suite's memcached. */
static lc_t *open_sub(const fx_t *f, const char *sub, uint64_t prefetch) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options_sub(&o, &mc, f->dir, sub, path);
  o.prefetch = prefetch;
  lc_t *h = NULL;
  assert_ok(lc_open(&o, &h));
  return h;
}

/* The claim key's text: "LOGID HOST PID". */
static void claim_text(const char *name, char *buf, size_t len) {
  char key[256];
  snprintf(key, sizeof key, "lo:%s", name);
  assert_int_equal(mcd_get(&mc, key, buf, len), 1);
}

/* Two logs, one counter: the second is refused, by name of the first;
 * nothing it does hands out an id. */
static void test_second_log_refused(void **state) {
  fx_t *f = *state;
  assert_i64_eq(tu_next1(f->h, "inv"), 1);
  char owner[128];
  claim_text("inv", owner, sizeof owner);
  lc_t *b = open_sub(f, "b", 0);
  int64_t v = 0;
  assert_rc(lc_next(b, "inv", &v), LC_EOWNED);
  char id[17];
  assert_int_equal(sscanf(owner, "%16s", id), 1);
  assert_non_null(strstr(lc_last_detail(), id)); /* names the owner */
  assert_non_null(strstr(lc_last_detail(), "pid"));
  assert_rc(lc_next_n(b, "inv", 10, &v), LC_EOWNED);
  assert_rc(lc_advance(b, "inv", 100), LC_EOWNED);
  assert_rc(lc_restore(b, "inv", &v), LC_EOWNED);
  assert_int_equal(lc_next_quick(b, "inv"), 0);
  assert_ok(lc_current(b, "inv", &v)); /* reads are fine */
  assert_i64_eq(v, 1);
  assert_i64_eq(mcd_counter_value(&mc, "inv"), 1); /* nothing taken */
  assert_i64_eq(tu_next1(f->h, "inv"), 2);
  assert_int_equal(lc_next_quick(f->h, "inv"), 1);
  /* another name is free for b */
  assert_i64_eq(tu_next1(b, "other"), 1);
  assert_rc(lc_next(f->h, "other", &v), LC_EOWNED);
  assert_ok(lc_close(b));
}

/* After flush_all the claims are gone; the refused log asks first and is
 * still refused (it remembers), the owner goes on above what it handed
 * out; and across restarts of both. */
static void test_refusal_survives_flush_and_restart(void **state) {
  fx_t *f = *state;
  for (int i = 1; i <= 5; i++) assert_i64_eq(tu_next1(f->h, "cnt"), i);
  lc_t *b = open_sub(f, "b", 0);
  int64_t v;
  assert_rc(lc_next(b, "cnt", &v), LC_EOWNED);
  assert_ok(mcd_flush_all(&mc));
  assert_rc(lc_next(b, "cnt", &v), LC_EOWNED);      /* b first */
  assert_i64_eq(mcd_counter_value(&mc, "cnt"), -1); /* b took nothing */
  assert_i64_eq(tu_next1(f->h, "cnt"), 6);          /* a restores */
  assert_ok(lc_close(b));
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  b = open_sub(f, "b", 0);
  assert_rc(lc_next(b, "cnt", &v), LC_EOWNED); /* still, reopened */
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  v = tu_next1(f->h, "cnt");
  assert_true(v >= 7); /* never a repeat */
  assert_rc(lc_next(b, "cnt", &v), LC_EOWNED);
  assert_ok(lc_close(b));
}

/* release on the old log, adopt on the new: ids keep going up, and the
 * old log refuses the counter afterwards, until it adopts it back. */
static void test_release_adopt(void **state) {
  fx_t *f = *state;
  for (int i = 1; i <= 7; i++) assert_i64_eq(tu_next1(f->h, "mv"), i);
  lc_t *b = open_sub(f, "b", 0);
  int64_t v;
  assert_rc(lc_adopt(b, "mv", 7), LC_EOWNED); /* still a's */
  int64_t final = 0;
  assert_ok(lc_release(f->h, "mv", &final));
  assert_i64_eq(final, 7);
  assert_rc(lc_next(f->h, "mv", &v), LC_EOWNED);
  assert_non_null(strstr(lc_last_detail(), "released"));
  assert_ok(lc_adopt(b, "mv", final));
  assert_i64_eq(tu_next1(b, "mv"), 8);
  assert_i64_eq(tu_next1(b, "mv"), 9);
  assert_rc(lc_next(f->h, "mv", &v), LC_EOWNED);
  assert_rc(lc_adopt(f->h, "mv", 0), LC_EOWNED); /* b holds it */
  /* the release is in a's log: it survives a restart and a flush */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_rc(lc_next(f->h, "mv", &v), LC_EOWNED);
  v = tu_next1(b, "mv"); /* b restores */
  assert_true(v >= 10);
  /* and back: b releases, a adopts above b's final */
  assert_ok(lc_release(b, "mv", &final));
  assert_true(final >= v);
  assert_ok(lc_adopt(f->h, "mv", final));
  assert_i64_eq(tu_next1(f->h, "mv"), final + 1);
  /* released again (a retry): the same final value, and a's claim is
   * left alone */
  int64_t again = 0;
  assert_ok(lc_release(b, "mv", &again));
  assert_i64_eq(again, final);
  assert_i64_eq(tu_next1(f->h, "mv"), final + 2);
  assert_rc(lc_release(f->h, "mv", NULL), LC_EINVAL);
  assert_rc(lc_adopt(f->h, "mv", -1), LC_EINVAL);
  assert_ok(lc_close(b));
}

/* A prefetching handle: release gives up its segments; the final value
 * covers everything handed out; the adopter goes on above it. */
static void test_release_with_prefetch(void **state) {
  fx_t *f = *state;
  lc_t *p = open_sub(f, "p", 64);
  int64_t last = 0;
  for (int i = 0; i < 100; i++) last = tu_next1(p, "seg");
  int64_t final = 0, v;
  assert_ok(lc_release(p, "seg", &final));
  assert_true(final >= last);
  assert_rc(lc_next(p, "seg", &v), LC_EOWNED);
  assert_ok(lc_adopt(f->h, "seg", final));
  assert_i64_eq(tu_next1(f->h, "seg"), final + 1);
  assert_ok(lc_close(p));
}

/* Calls in flight or waiting when lc_release runs: none of them gets a
 * value above the final value, and from then on they fail. */
typedef struct racer {
  pthread_t t;
  lc_t *h;
  const char *name;
  int64_t max;
  long ok, owned, other;
} racer;

static void *race(void *arg) {
  racer *r = arg;
  for (int i = 0; i < 200000 && r->owned < 50; i++) {
    int64_t v;
    int rc = lc_next(r->h, r->name, &v);
    if (rc == 0) {
      r->ok++;
      if (v > r->max) r->max = v;
    } else if (rc == LC_EOWNED) {
      r->owned++;
    } else {
      r->other++;
    }
  }
  return NULL;
}

static void test_release_under_load(void **state) {
  fx_t *f = *state;
  for (int pf = 0; pf < 2; pf++) {
    lc_t *h = pf ? open_sub(f, "pr", 64) : f->h;
    const char *name = pf ? "race-pf" : "race";
    tu_next1(h, name);
    racer r[4];
    for (int i = 0; i < 4; i++) {
      r[i] = (racer){.h = h, .name = name};
      assert_int_equal(pthread_create(&r[i].t, NULL, race, &r[i]), 0);
    }
    sleep_ms(100);
    int64_t final = 0;
    assert_ok(lc_release(h, name, &final));
    for (int i = 0; i < 4; i++) {
      pthread_join(r[i].t, NULL);
      assert_true(r[i].max <= final); /* nothing past the release */
      assert_true(r[i].owned > 0);    /* and refused after it */
      assert_int_equal(r[i].other, 0);
    }
    /* another log adopts it above the final value and goes on */
    lc_t *b = open_sub(f, pf ? "pb" : "b", 0);
    assert_ok(lc_adopt(b, name, final));
    assert_i64_eq(tu_next1(b, name), final + 1);
    assert_ok(lc_close(b));
    if (pf) assert_ok(lc_close(h));
  }
}

/* What the claim cannot catch: after memcached lost everything, a new log
 * that uses the name first gets it; the real owner then fails loudly at
 * its next restore instead of handing out ids. */
static void test_new_log_after_loss(void **state) {
  fx_t *f = *state;
  for (int i = 1; i <= 3; i++) tu_next1(f->h, "lost");
  assert_ok(mcd_flush_all(&mc));
  lc_t *c = open_sub(f, "c", 0);
  assert_i64_eq(tu_next1(c, "lost"), 1); /* documented hole */
  int64_t v;
  assert_ok(mcd_flush_all(&mc)); /* a's next seed */
  assert_ok(lc_close(c));
  assert_ok(lc_close(f->h));
  f->h = NULL;
  c = open_sub(f, "c", 0);
  assert_i64_eq(tu_next1(c, "lost"), 2); /* c claims again */
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  assert_rc(lc_next(f->h, "lost", &v), LC_EOWNED); /* loudly */
  assert_ok(lc_close(c));
}

/* The claim holds "LOGID HOST PID"; the identity belongs to the log and
 * survives a reopen. */
static void test_claim_key_format(void **state) {
  fx_t *f = *state;
  tu_next1(f->h, "fmt");
  char text[128], id[32], host[80];
  long pid = 0;
  claim_text("fmt", text, sizeof text);
  assert_int_equal(sscanf(text, "%31s %79s %ld", id, host, &pid), 3);
  assert_int_equal(strlen(id), 16);
  assert_int_equal(pid, (long)getpid());
  /* the identity is the log's: the same after a reopen */
  assert_ok(lc_close(f->h));
  f->h = NULL;
  assert_ok(mcd_flush_all(&mc));
  assert_ok(tu_open(&mc, f->dir, LC_DURABILITY_DEFAULT, 0, &f->h));
  tu_next1(f->h, "fmt");
  char again[128];
  claim_text("fmt", again, sizeof again);
  assert_memory_equal(again, text, 16);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, tu_setup, tu_teardown)
      T(test_second_log_refused), T(test_refusal_survives_flush_and_restart),
      T(test_release_adopt),      T(test_release_with_prefetch),
      T(test_release_under_load), T(test_new_log_after_loss),
      T(test_claim_key_format),
#undef T
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
