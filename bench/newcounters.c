/*
 * newcounters.c - the new-counters workloads: every call is the first use
 * of a name, the cost that a burst of new names pays.
 *
 *   new-counters embedded   lc_next on a name never used before, one lc_t
 *                           shared by all threads: the log read, the
 *                           ownership claim, the seed in memcached and the
 *                           synced reservation of a new counter
 *   new-counters daemon     "incr NAME 1" of a never-used name through the
 *                           logcounterd with coalescing (BENCH_DAEMON)
 *
 * Names are "nc-" RUN "-" THREAD "-" I, with RUN different for every run
 * and thread state, so that no name is ever reused.  Each answer must be
 * 1 (a new counter starts at 1).
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nc_priv {
  lc_t *h;
  memcached_st *daemon;
  const char *daemon_config;
} nc_priv;

typedef struct nc_thread {
  memcached_st *mc; /* daemon mode */
  unsigned run;
  uint64_t i;
} nc_thread;

static atomic_uint runs;

static int nc_open(void *shared, void **state, char *err, size_t n,
                   bool daemon) {
  nc_priv *p = shared;
  nc_thread *t = calloc(1, sizeof *t);
  if (t == NULL ||
      (daemon && (t->mc = memcached_clone(NULL, p->daemon)) == NULL)) {
    free(t);
    snprintf(err, n, "out of memory");
    return -1;
  }
  t->run = atomic_fetch_add(&runs, 1);
  *state = t;
  return 0;
}

static int nc_open_embedded(void *shared, void **state, char *err, size_t n) {
  return nc_open(shared, state, err, n, false);
}

static int nc_open_daemon(void *shared, void **state, char *err, size_t n) {
  return nc_open(shared, state, err, n, true);
}

static void nc_close(void *state) {
  nc_thread *t = state;
  if (t->mc) memcached_free(t->mc);
  free(t);
}

static int64_t nc_op(void *shared, void *state, char *err, size_t n) {
  nc_priv *p = shared;
  nc_thread *t = state;
  char name[48];
  int len = snprintf(name, sizeof name, "nc-%u-%llu", t->run,
                     (unsigned long long)t->i++);
  uint64_t v = 0;
  if (t->mc) {
    memcached_return_t rc =
        memcached_increment(t->mc, name, (size_t)len, 1, &v);
    if (rc != MEMCACHED_SUCCESS) {
      snprintf(err, n, "incr %s: %s", name,
               memcached_last_error_message(t->mc));
      return -1;
    }
  } else {
    int64_t x = 0;
    int rc = lc_next(p->h, name, &x);
    if (rc) {
      snprintf(err, n, "%s: %s (%s)", lc_err_name(rc), lc_strerror(rc),
               lc_last_detail());
      return -1;
    }
    v = (uint64_t)x;
  }
  if (v != 1) {
    snprintf(err, n, "new counter %s answered %llu, not 1", name,
             (unsigned long long)v);
    return -1;
  }
  return 1;
}

int newcounters_cases_open(const bench_cfg *cfg, case_set *cs) {
  if (!bench_case_selected(cfg, "new-counters")) return 0;
  nc_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->nc_priv = p;
  char path[4096];
  if (bench_fresh_dir(cfg, "new-counters", path, sizeof path) ||
      (p->h = bench_open(cfg, path, LC_DURABILITY_DEFAULT)) == NULL)
    return -1;
  if (cs->n + 2 > BENCH_LINES_MAX) {
    fprintf(stderr, "bench: too many case lines\n");
    return -1;
  }
  cs->w[cs->n++] =
      (workload){"new-counters", "embedded", 1, p, nc_open_embedded,
                 nc_close,       nc_op,      0, 0, 0};
  if (cfg->daemon && (p->daemon = mc_open(cfg->daemon)) != NULL)
    cs->w[cs->n++] = (workload){"new-counters", "daemon", 1, p, nc_open_daemon,
                                nc_close,       nc_op,    0, 0, 0};
  return 0;
}

void newcounters_cases_close(case_set *cs) {
  nc_priv *p = cs->nc_priv;
  if (p == NULL) return;
  if (p->daemon) memcached_free(p->daemon);
  if (p->h) lc_close(p->h);
  free(p);
  cs->nc_priv = NULL;
}
