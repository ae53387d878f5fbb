/*
 * newcounters.c - the new-counters workloads: every call is the first use
 * of a name, the cost that a burst of new names pays.
 *
 *   new-counters embedded   lc_next on a name never used before, one lc_t
 *                           shared by all threads: the log read, the
 *                           ownership claim, the seed in memcached and the
 *                           synced reservation of a new counter
 *   new-counters each100    lc_next_each of 100 never-used names per call
 *                           (their first uses batched: src/counter/first.c)
 *   new-counters daemon     "incr NAME 1" of a never-used name through the
 *                           logcounterd with coalescing (BENCH_DAEMON)
 *   new-counters daemon-pipe100, daemon-pipe1000
 *                           100 (1,000) such lines pipelined per call on
 *                           one connection per thread, then their answers
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
#include <unistd.h>

typedef struct nc_priv {
  lc_t *h;
  memcached_st *daemon;
  const char *daemon_config;
} nc_priv;

#define NC_BATCH 100 /* names per call: each100, daemon-pipe100 */
#define NC_DEEP 1000 /* daemon-pipe1000 */

typedef struct nc_thread {
  memcached_st *mc; /* daemon mode */
  int fd;           /* daemon-pipe100 */
  unsigned run;
  uint64_t i;
  char names[NC_BATCH][48];
  char in[8192];
  size_t in_len;
} nc_thread;

/* The thread's next never-used name, into buf; its length. */
static int nc_name(nc_thread *t, char *buf, size_t n) {
  return snprintf(buf, n, "nc-%u-%llu", t->run, (unsigned long long)t->i++);
}

static atomic_uint runs;

static int nc_open(void *shared, void **state, char *err, size_t n,
                   int daemon) {
  nc_priv *p = shared;
  nc_thread *t = calloc(1, sizeof *t);
  if (t == NULL ||
      (daemon == 1 && (t->mc = memcached_clone(NULL, p->daemon)) == NULL)) {
    free(t);
    snprintf(err, n, "out of memory");
    return -1;
  }
  t->fd = daemon == 2 ? config_connect(p->daemon_config) : -1;
  if (daemon == 2 && t->fd < 0) {
    free(t);
    snprintf(err, n, "cannot connect to the daemon (%s)", p->daemon_config);
    return -1;
  }
  t->run = atomic_fetch_add(&runs, 1);
  *state = t;
  return 0;
}

static int nc_open_embedded(void *shared, void **state, char *err, size_t n) {
  return nc_open(shared, state, err, n, 0);
}

static int nc_open_daemon(void *shared, void **state, char *err, size_t n) {
  return nc_open(shared, state, err, n, 1);
}

static int nc_open_pipe(void *shared, void **state, char *err, size_t n) {
  return nc_open(shared, state, err, n, 2);
}

static void nc_close(void *state) {
  nc_thread *t = state;
  if (t->mc) memcached_free(t->mc);
  if (t->fd >= 0) close(t->fd);
  free(t);
}

/* each100: one lc_next_each of NC_BATCH new names, each answered 1. */
static int64_t nc_each(void *shared, void *state, char *err, size_t n) {
  nc_priv *p = shared;
  nc_thread *t = state;
  lc_each e[NC_BATCH];
  for (int k = 0; k < NC_BATCH; k++) {
    nc_name(t, t->names[k], sizeof t->names[k]);
    e[k] = (lc_each){.name = t->names[k], .n = 1};
  }
  int rc = lc_next_each(p->h, e, NC_BATCH);
  for (int k = 0; k < NC_BATCH; k++)
    if (rc || e[k].first != 1) {
      snprintf(err, n, "%s: %s (%s), first %lld", e[k].name,
               lc_err_name(e[k].rc), lc_last_detail(), (long long)e[k].first);
      return -1;
    }
  return NC_BATCH;
}

/* daemon-pipe100 and -pipe1000: depth "incr NAME 1" lines in one write,
 * then their answers, each 1. */
static int64_t nc_pipe(nc_thread *t, int depth, char *err, size_t n) {
  static _Thread_local char req[NC_DEEP * 64];
  size_t len = 0;
  for (int k = 0; k < depth; k++) {
    char name[48];
    nc_name(t, name, sizeof name);
    len += (size_t)snprintf(req + len, sizeof req - len, "incr %s 1\r\n", name);
  }
  for (size_t off = 0; off < len;) {
    ssize_t w = write(t->fd, req + off, len - off);
    if (w <= 0) {
      snprintf(err, n, "write to the daemon failed");
      return -1;
    }
    off += (size_t)w;
  }
  for (int answers = 0; answers < depth;) {
    char *eol = memchr(t->in, '\n', t->in_len);
    if (eol == NULL) {
      ssize_t r = t->in_len < sizeof t->in
                      ? read(t->fd, t->in + t->in_len, sizeof t->in - t->in_len)
                      : -1;
      if (r <= 0) {
        snprintf(err, n, "the daemon closed the connection");
        return -1;
      }
      t->in_len += (size_t)r;
      continue;
    }
    if (strncmp(t->in, "1\r\n", 3) != 0) {
      snprintf(err, n, "a new counter answered '%.*s', not 1",
               (int)(eol - t->in), t->in);
      return -1;
    }
    answers++;
    size_t used = (size_t)(eol + 1 - t->in);
    memmove(t->in, eol + 1, t->in_len - used);
    t->in_len -= used;
  }
  return depth;
}

static int64_t nc_pipe100(void *shared, void *state, char *err, size_t n) {
  (void)shared;
  return nc_pipe(state, NC_BATCH, err, n);
}

static int64_t nc_pipe1000(void *shared, void *state, char *err, size_t n) {
  (void)shared;
  return nc_pipe(state, NC_DEEP, err, n);
}

static int64_t nc_op(void *shared, void *state, char *err, size_t n) {
  nc_priv *p = shared;
  nc_thread *t = state;
  char name[48];
  int len = nc_name(t, name, sizeof name);
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
  if (cs->n + 5 > BENCH_LINES_MAX) {
    fprintf(stderr, "bench: too many case lines\n");
    return -1;
  }
  cs->w[cs->n++] =
      (workload){"new-counters", "embedded", 1, p, nc_open_embedded,
                 nc_close,       nc_op,      0, 0, 0, 0};
  cs->w[cs->n++] = (workload){"new-counters", "each100", NC_BATCH, p,
                              nc_open_embedded, nc_close, nc_each, 0, 0, 0, 0};
  if (cfg->daemon && (p->daemon = mc_open(cfg->daemon)) != NULL) {
    p->daemon_config = cfg->daemon;
    cs->w[cs->n++] = (workload){"new-counters", "daemon", 1, p, nc_open_daemon,
                                nc_close,       nc_op,    0, 0, 0, 0};
    cs->w[cs->n++] = (workload){"new-counters", "daemon-pipe100", NC_BATCH,
                                p, nc_open_pipe, nc_close, nc_pipe100, 0, 0, 0, 0};
    cs->w[cs->n++] = (workload){"new-counters", "daemon-pipe1000", NC_DEEP,
                                p, nc_open_pipe, nc_close, nc_pipe1000, 0, 0, 0, 0};
  }
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
