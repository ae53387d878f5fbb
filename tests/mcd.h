/*
 * mcd.h - test helpers: a real, private memcached per test program, raw
 * text-protocol access to it, temporary directories, and small utilities
 * shared by the cmocka programs in tests/.
 *
 * The server listens on 127.0.0.1 on a port picked free at start, without
 * UDP and with -M (no eviction).  It is started with PR_SET_PDEATHSIG so a
 * crashed test program never leaves it running, and an atexit handler
 * kills every server still running at a normal exit.
 *
 * PR_SET_PDEATHSIG fires when the *thread* that forked the server ends, so
 * start and restart a server only from a thread that outlives it (the main
 * thread, which is where cmocka runs the tests).
 *
 * All functions return 0 on success and -1 on failure (with a message on
 * stderr) unless said otherwise.
 */
#ifndef LC_TESTS_MCD_H
#define LC_TESTS_MCD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "logcounter.h"

typedef struct mcd {
  pid_t pid;       /* the server process, 0 when not running */
  int port;        /* kept across stop/kill9 so restart reuses it */
  int frozen;      /* 1 between mcd_freeze and mcd_thaw */
  char config[64]; /* "--SERVER=127.0.0.1:PORT" */
  /* mcd_start_with's arguments, or NULL */
  const char *const *extra;
} mcd_t;

/* Picks a free port and starts a server on it; waits (<= 5 s) until it
 * accepts connections. */
int mcd_start(mcd_t *m);
/* mcd_start with more memcached arguments after the usual ones (NULL-
 * terminated, at most 16; a later -m wins over the usual -m 64); they are
 * kept for mcd_restart, so extra must outlive the server. */
int mcd_start_with(mcd_t *m, const char *const *extra);
/* SIGTERM (after SIGCONT if frozen) and waitpid.  No-op when not running. */
void mcd_stop(mcd_t *m);
/* SIGKILL and waitpid: the server loses everything at once. */
void mcd_kill9(mcd_t *m);
/* Kills the server if it runs and starts a new, empty one on the same
 * port; waits until it accepts connections. */
int mcd_restart(mcd_t *m);
/* SIGSTOP / SIGCONT: a hung server that still accepts TCP connections. */
int mcd_freeze(mcd_t *m);
int mcd_thaw(mcd_t *m);
/* A loopback port free a moment ago (bind port 0, read it, close). */
int mcd_free_port(void);
/* "--SERVER=127.0.0.1:PORT" for lc_options.memcached. */
const char *mcd_config(const mcd_t *m);

/* Raw text-protocol commands over a fresh connection (2 s timeout). */
int mcd_flush_all(const mcd_t *m);
int mcd_set(const mcd_t *m, const char *key, const char *value);
int mcd_delete(const mcd_t *m, const char *key); /* 0 also when missing */
/* 1 and the value in buf when found, 0 when missing, -1 on error. */
int mcd_get(const mcd_t *m, const char *key, char *buf, size_t len);
/* A figure of memcached's "stats" (total_connections...), or -1. */
long mcd_stat(const mcd_t *m, const char *name);
/* Fills a -M server: over one connection, sets 100 kB values until one is
 * refused (its memory is all handed out), then 2-byte values (the
 * smallest slab class, where a counter's few digits live) until one is
 * refused too.  Keys mcd_fill:N.  How many were stored, or -1 (also when
 * a size is never refused: a server without -M evicts instead). */
long mcd_fill(const mcd_t *m);

/* A fresh directory /tmp/lctest.XXXXXX; the caller frees the string. */
char *tmpdir_make(void);
/* Removes a directory tree; NULL is a no-op. */
int tmpdir_remove(const char *path);
/* tmpdir_remove, then free. */
void tmpdir_free(char *path);

/* LC_TEST_SCALE (>= 1, default 1): tests divide their big counts by it. */
int test_scale(void);
/* n / test_scale(), at least min. */
long scaled(long n, long min);
/* Microseconds: wall clock (for record times) and monotonic (for bounds). */
int64_t now_us(void);
int64_t mono_us(void);
void sleep_ms(int ms);
/* Sorts v and returns how many adjacent equal pairs it holds. */
size_t count_duplicates(int64_t *v, size_t n);
/* Index of the first i with v[i] >= v[i+1], or (size_t)-1 when strictly
 * increasing. */
size_t first_non_increasing(const int64_t *v, size_t n);

/* The value memcached holds under the counter's key lc:NAME, or -1 when
 * it is missing or not a number. */
int64_t mcd_counter_value(const mcd_t *m, const char *name);

/* Default options for the log DIR/db on m; path receives that path and
 * must outlive o.  tu_options_sub: the log DIR/SUB instead. */
#define TU_PATH_MAX 512
void tu_options(lc_options *o, const mcd_t *m, const char *dir,
                char path[TU_PATH_MAX]);
void tu_options_sub(lc_options *o, const mcd_t *m, const char *dir,
                    const char *sub, char path[TU_PATH_MAX]);
/* Opens a handle on DIR/db against m with the given durability and
 * timeout (0: the library's default); returns the lc_open code. */
int tu_open(const mcd_t *m, const char *dir, lc_durability_t d, int timeout_ms,
            lc_t **out);
/* Opens a handle on DIR/db against the suite's memcached with prefetch
 * (lc_options.prefetch; 0: off). */
int tu_open_prefetch(const char *dir, uint64_t prefetch, lc_t **out);
/* Collects a counter's records; returns how many (or a negative code),
 * *recs is malloc'd (free it).  Stops at the first non-record result. */
long tu_records(lc_t *h, const char *name, lc_record **recs);

/* A counter's gap ledger checked against its records, by cause (index
 * LC_GAP_*): values and entries; index 0 counts the holes between records
 * (or entries) that no ledger entry explains.  conflicts: gap entries over
 * logged values, voids outside every record.  0 or a negative code. */
typedef struct tu_ledger {
  uint64_t values[LC_GAP_CAUSE_MAX + 1];
  uint64_t entries[LC_GAP_CAUSE_MAX + 1];
  uint64_t conflicts;
} tu_ledger;
int tu_explain(lc_t *h, const char *name, tu_ledger *out);

/* The fixture most test programs share.  mc is the suite's memcached,
 * started and stopped by the cmocka group fixtures tu_group_setup and
 * tu_group_teardown.  tu_setup gives each test a fresh log directory and a
 * handle on it (an fx_t in *state), with memcached flushed. */
extern mcd_t mc;
typedef struct fx {
  char *dir;
  lc_t *h;
} fx_t;
int tu_group_setup(void **state);
int tu_group_teardown(void **state);
int tu_setup_with(void **state, lc_durability_t d, int timeout_ms);
int tu_setup(void **state);     /* default durability and timeout */
int tu_setup_dir(void **state); /* a fresh directory, no handle yet */
int tu_teardown(void **state);

/* Assertions with readable messages; include <cmocka.h> before this. */
#ifdef fail_msg
#define assert_rc(expr, want)                                                  \
  do {                                                                         \
    int rc_ = (expr), want_ = (want);                                          \
    if (rc_ != want_)                                                          \
      fail_msg("%s = %d %s (detail \"%s\"), expected %d %s", #expr, rc_,       \
               lc_err_name(rc_), lc_last_detail(), want_, lc_err_name(want_)); \
  } while (0)
#define assert_ok(expr) assert_rc(expr, 0)
#define assert_i64_op(a, op, b)                                               \
  do {                                                                        \
    int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                             \
    if (!(a_ op b_))                                                          \
      fail_msg("expected %s %s %s: %lld vs %lld", #a, #op, #b, (long long)a_, \
               (long long)b_);                                                \
  } while (0)
#define assert_i64_eq(a, b) assert_i64_op(a, ==, b)
/* Fails the test unless every gap of name is explained (tu_explain). */
static inline void tu_check_explained(lc_t *h, const char *name) {
  tu_ledger l;
  assert_ok(tu_explain(h, name, &l));
  if (l.values[0] != 0 || l.conflicts != 0)
    fail_msg("%s: %llu values unexplained, %llu conflicts", name,
             (unsigned long long)l.values[0], (unsigned long long)l.conflicts);
}
/* One lc_next that must succeed; its value. */
static inline int64_t tu_next1(lc_t *h, const char *name) {
  int64_t v = -1;
  assert_ok(lc_next(h, name, &v));
  return v;
}
#endif

#endif /* LC_TESTS_MCD_H */
