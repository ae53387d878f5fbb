/*
 * daemon.c - the daemon-incr workloads: ids from logcounterd, the
 * LogCounter service, over loopback TCP, as any memcached client gets them.
 *
 *   daemon-incr coalesce     one call = memcached_increment(key, 1) sent to
 *                            a logcounterd started with its defaults
 *                            (concurrent requests for one counter are
 *                            merged into one memcached incr)
 *   daemon-incr no-coalesce  the same against a logcounterd started with
 *                            --no-coalesce (one memcached incr per request)
 *   daemon-incr prefetch     the same against a logcounterd started with
 *                            --prefetch auto (ids from segments in memory)
 *
 * Each thread is one client connection: its own memcached_st (libmemcached,
 * TCP_NODELAY, text protocol), all on ONE counter.  A thread checks that
 * its answers strictly increase.  bench/run.sh starts the two daemons on
 * free 127.0.0.1 ports, each with its own log and the bench's memcached,
 * and passes them in BENCH_DAEMON and BENCH_DAEMON_NOCOALESCE; without
 * BENCH_DAEMON the case is skipped.  These workloads also run at the wide
 * thread counts (BENCH_WIDE_THREADS), as memcached-incr does, so that each
 * point has a raw baseline with the same number of connections.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAEMON_KEY "bench-daemon"

typedef struct daemon_shared {
  memcached_st *master;
  const char *config;
} daemon_shared;

typedef struct daemon_priv {
  daemon_shared d[3];       /* coalesce, no-coalesce, prefetch */
  const char *mode[3];
} daemon_priv;

typedef struct daemon_thread {
  memcached_st *mc;
  uint64_t last;
} daemon_thread;

static int daemon_thread_open(void *shared, void **state, char *err, size_t n) {
  daemon_shared *s = shared;
  daemon_thread *t = calloc(1, sizeof *t);
  if (t == NULL || (t->mc = memcached_clone(NULL, s->master)) == NULL) {
    free(t);
    snprintf(err, n, "memcached_clone failed");
    return -1;
  }
  *state = t;
  return 0;
}

static void daemon_thread_close(void *state) {
  daemon_thread *t = state;
  memcached_free(t->mc);
  free(t);
}

static int64_t daemon_op(void *shared, void *state, char *err, size_t n) {
  (void)shared;
  daemon_thread *t = state;
  uint64_t v = 0;
  memcached_return_t rc = memcached_increment(t->mc, DAEMON_KEY,
                                              strlen(DAEMON_KEY), 1, &v);
  if (rc != MEMCACHED_SUCCESS) {
    snprintf(err, n, "incr: %s", memcached_last_error_message(t->mc));
    return -1;
  }
  if (v <= t->last) {  /* one connection's answers only ever go up */
    snprintf(err, n, "went backwards: %llu after %llu", (unsigned long long)v,
             (unsigned long long)t->last);
    return -1;
  }
  t->last = v;
  return 1;
}

int daemon_cases_open(const bench_cfg *cfg, case_set *cs) {
  if (!bench_case_selected(cfg, "daemon-incr")) return 0;
  if (cfg->daemon == NULL) {
    if (cfg->cases)  /* asked for by name: say why it is missing */
      fprintf(stderr, "bench: daemon-incr needs BENCH_DAEMON (bench/run.sh "
              "starts logcounterd): skipped\n");
    return 0;
  }
  daemon_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->daemon_priv = p;
  const char *configs[3] = {cfg->daemon, cfg->daemon_nc, cfg->daemon_pf};
  p->mode[0] = "coalesce";
  p->mode[1] = "no-coalesce";
  p->mode[2] = "prefetch";
  for (int i = 0; i < 3; i++) {
    if (configs[i] == NULL) continue;
    if (cs->n >= BENCH_LINES_MAX) {
      fprintf(stderr, "bench: too many case lines\n");
      return -1;
    }
    daemon_shared *d = &p->d[i];
    d->config = configs[i];
    if ((d->master = mc_open(configs[i])) == NULL) return -1;
    workload *w = &cs->w[cs->n++];
    *w = (workload){"daemon-incr", p->mode[i], 1, d, daemon_thread_open,
                    daemon_thread_close, daemon_op, BENCH_MAX_THREADS, 0};
  }
  return 0;
}

/* One STAT value from a daemon's "stats" (memcached_stat_execute). */
typedef struct stat_want {
  uint64_t cmd_incr, increments, incr_merged;
  int seen;
} stat_want;

static memcached_return_t stat_cb(const memcached_instance_st *server,
                                  const char *key, size_t key_length,
                                  const char *value, size_t value_length,
                                  void *context) {
  (void)server;
  stat_want *w = context;
  char v[32];
  size_t n = value_length < sizeof v - 1 ? value_length : sizeof v - 1;
  memcpy(v, value, n);
  v[n] = '\0';
  uint64_t x = strtoull(v, NULL, 10);
#define IS(name) (key_length == strlen(name) && memcmp(key, name, key_length) == 0)
  if (IS("cmd_incr")) w->cmd_incr = x, w->seen++;
  else if (IS("increments")) w->increments = x, w->seen++;
  else if (IS("incr_merged")) w->incr_merged = x, w->seen++;
#undef IS
  return MEMCACHED_SUCCESS;
}

void daemon_cases_close(case_set *cs) {
  daemon_priv *p = cs->daemon_priv;
  if (p == NULL) return;
  for (int i = 0; i < 3; i++) {
    daemon_shared *d = &p->d[i];
    if (d->master == NULL) continue;
    stat_want w = {0, 0, 0, 0};
    memcached_return_t rc = memcached_stat_execute(d->master, NULL, stat_cb, &w);
    if (rc == MEMCACHED_SUCCESS && w.seen == 3 && w.increments)
      printf("daemon stats, %-12s: %llu incr requests, %llu memcached incr "
             "(%.2f requests per incr), %llu merged from pipelined lines\n",
             p->mode[i], (unsigned long long)w.cmd_incr,
             (unsigned long long)w.increments,
             (double)w.cmd_incr / (double)w.increments,
             (unsigned long long)w.incr_merged);
    memcached_free(d->master);
  }
  free(p);
  cs->daemon_priv = NULL;
}
