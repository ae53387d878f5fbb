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
 *                            --prefetch auto (ids from segments in memory),
 *                            the daemon's default: "the lone daemon"
 *   daemon-incr standby      (BENCH_STANDBY=1) the same against a default
 *                            daemon with --replication-listen serving a
 *                            standby (standby-mode required: every floor
 *                            waits for the standby): its ratio to
 *                            prefetch is the cost of a standby
 *   daemon-incr cluster      (BENCH_CLUSTER=1) the same against the
 *                            primary of three default nodes on one etcd:
 *                            the cost of a cluster
 *                            (standby and cluster: at the thread counts
 *                            up to 32 only)
 *   daemon-incr coalesce-pipe100, prefetch-pipe100
 *                            one connection (1 thread only) pipelining:
 *                            one call writes 100 "incr KEY 1" lines at
 *                            once on a raw socket, then reads the 100
 *                            answers (block 100: the ids of one call)
 *   memcached-pipe raw-pipe100
 *                            the same 100-deep pipelining straight to the
 *                            bench's memcached (its key set to 0 first):
 *                            the baseline of the pipe100 lines, whose
 *                            "x incr" is their ratio to it
 *   daemon-incr tls-pipe100  the same as prefetch-pipe100 over TLS, to the
 *                            same daemon's TLS port (BENCH_DAEMON_TLS;
 *                            bench/run.sh makes a throwaway certificate):
 *                            the price of TLS is its ratio to
 *                            prefetch-pipe100, where the daemon's own work
 *                            shows, not memcached's (the client does not check
 *                            the certificate: a measurement, not a client
 *                            to copy)
 *
 * Each thread is one client connection: its own memcached_st (libmemcached,
 * TCP_NODELAY, text protocol), all on ONE counter.  A thread checks that
 * its answers strictly increase.  bench/run.sh starts the two daemons on
 * free 127.0.0.1 ports, each with its own log and the bench's memcached,
 * and passes them in BENCH_DAEMON and BENCH_DAEMON_NOCOALESCE; without
 * BENCH_DAEMON the case is skipped.  These workloads also run at the wide
 * thread counts (BENCH_WIDE_THREADS), as memcached-incr does, so that each
 * point has a raw baseline with the same number of connections.
 *
 * With the server processes' PIDs (BENCH_DAEMON_PREFETCH_PID, _STANDBY_PID,
 * _CLUSTER_PID, BENCH_MEMCACHED_PID), the prefetch, standby and cluster
 * lines, prefetch-pipe100 and raw-pipe100 also measure their server's own
 * CPU time per request (runner.c).
 */
#include "bench.h"

#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One daemon: its connection settings and its counter (each daemon has
 * its own log, and one log owns a counter: each its own name). */
typedef struct daemon_shared {
  memcached_st *master;
  const char *config;
  const char *key;
  int tls; /* pipelined over TLS */
} daemon_shared;

#define PIPE_DEPTH 100
#define PIPE_LINE_MAX 48 /* "incr KEY 1\r\n" */

typedef struct daemon_priv {
  daemon_shared d[5]; /* coalesce, no-coalesce, prefetch, standby, cluster */
  const char *mode[5];
  daemon_shared pipe[4]; /* coalesce, prefetch, prefetch over TLS, raw */
} daemon_priv;

/* A pipelining connection: a raw socket, the 100 request lines, and the
 * answers read so far. */
typedef struct pipe_thread {
  int fd;
  SSL_CTX *ctx; /* tls-pipe100: the connection's TLS; NULL: plain */
  SSL *ssl;
  uint64_t last;
  char req[PIPE_DEPTH * PIPE_LINE_MAX];
  size_t req_len;
  char in[8192];
  size_t in_len;
} pipe_thread;

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
  const daemon_shared *s = shared;
  daemon_thread *t = state;
  uint64_t v = 0;
  memcached_return_t rc =
      memcached_increment(t->mc, s->key, strlen(s->key), 1, &v);
  if (rc != MEMCACHED_SUCCESS) {
    snprintf(err, n, "incr: %s", memcached_last_error_message(t->mc));
    return -1;
  }
  if (v <= t->last) { /* one connection's answers only ever go up */
    snprintf(err, n, "went backwards: %llu after %llu", (unsigned long long)v,
             (unsigned long long)t->last);
    return -1;
  }
  t->last = v;
  return 1;
}

static void pipe_thread_close(void *state) {
  pipe_thread *t = state;
  if (t->ssl) SSL_shutdown(t->ssl);
  SSL_free(t->ssl);
  SSL_CTX_free(t->ctx);
  close(t->fd);
  free(t);
}

static ssize_t pipe_write(pipe_thread *t, const char *p, size_t len) {
  if (!t->ssl) return write(t->fd, p, len);
  int w = SSL_write(t->ssl, p, (int)len);
  return w > 0 ? w : -1;
}

static ssize_t pipe_read(pipe_thread *t, char *p, size_t len) {
  if (!t->ssl) return read(t->fd, p, len);
  int r = SSL_read(t->ssl, p, (int)len);
  return r > 0 ? r : -1;
}

static int pipe_thread_open(void *shared, void **state, char *err, size_t n) {
  daemon_shared *s = shared;
  pipe_thread *t = calloc(1, sizeof *t);
  if (t == NULL) {
    snprintf(err, n, "out of memory");
    return -1;
  }
  if ((t->fd = config_connect(s->config)) < 0) {
    snprintf(err, n, "cannot connect to the daemon (%s)", s->config);
    free(t);
    return -1;
  }
  if (s->tls) {
    t->ctx = SSL_CTX_new(TLS_client_method());
    t->ssl = t->ctx ? SSL_new(t->ctx) : NULL;
    if (!t->ssl || SSL_set_fd(t->ssl, t->fd) != 1 || SSL_connect(t->ssl) != 1) {
      snprintf(err, n, "TLS handshake with the daemon failed (%s)", s->config);
      ERR_clear_error();
      pipe_thread_close(t);
      return -1;
    }
  }
  for (int i = 0; i < PIPE_DEPTH; i++)
    t->req_len += (size_t)snprintf(t->req + t->req_len, PIPE_LINE_MAX,
                                   "incr %s 1\r\n", s->key);
  *state = t;
  return 0;
}


/* One call: 100 requests in one write, then their 100 answers, each a
 * number above the one before. */
static int64_t pipe_op(void *shared, void *state, char *err, size_t n) {
  (void)shared; /* the request lines hold the key */
  pipe_thread *t = state;
  for (size_t off = 0; off < t->req_len;) {
    ssize_t w = pipe_write(t, t->req + off, t->req_len - off);
    if (w <= 0) {
      snprintf(err, n, "write to the daemon failed");
      return -1;
    }
    off += (size_t)w;
  }
  int answers = 0;
  while (answers < PIPE_DEPTH) {
    char *eol = memchr(t->in, '\n', t->in_len);
    if (eol == NULL) {
      if (t->in_len == sizeof t->in) {
        snprintf(err, n, "answer line too long");
        return -1;
      }
      ssize_t r = pipe_read(t, t->in + t->in_len, sizeof t->in - t->in_len);
      if (r <= 0) {
        snprintf(err, n, "the daemon closed the connection");
        return -1;
      }
      t->in_len += (size_t)r;
      continue;
    }
    char *end;
    uint64_t v = strtoull(t->in, &end, 10);
    if (end == t->in || v <= t->last) {
      snprintf(err, n, "bad answer '%.*s' after %llu", (int)(eol - t->in),
               t->in, (unsigned long long)t->last);
      return -1;
    }
    t->last = v;
    answers++;
    size_t used = (size_t)(eol + 1 - t->in);
    memmove(t->in, eol + 1, t->in_len - used);
    t->in_len -= used;
  }
  return PIPE_DEPTH;
}

/* raw-pipe100: its key in memcached starts at 0. */
static int raw_seed(const char *config, const char *key) {
  memcached_st *mc = mc_open(config);
  int rc = mc ? mc_set_zero(mc, key) : -1;
  if (mc) memcached_free(mc);
  return rc;
}

int daemon_cases_open(const bench_cfg *cfg, case_set *cs) {
  if (!bench_case_selected(cfg, "daemon-incr")) return 0;
  if (cfg->daemon == NULL) {
    if (cfg->cases) /* asked for by name: say why it is missing */
      fprintf(stderr, "bench: daemon-incr needs BENCH_DAEMON (bench/run.sh "
                      "starts logcounterd): skipped\n");
    return 0;
  }
  daemon_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->daemon_priv = p;
  const char *configs[5] = {cfg->daemon, cfg->daemon_nc, cfg->daemon_pf,
                            cfg->daemon_sb, cfg->daemon_cl};
  const int pids[5] = {0, 0, cfg->pid_daemon_pf, cfg->pid_daemon_sb,
                       cfg->pid_daemon_cl};
  p->mode[0] = "coalesce";
  p->mode[1] = "no-coalesce";
  p->mode[2] = "prefetch";
  p->mode[3] = "standby";
  p->mode[4] = "cluster";
  for (int i = 0; i < 5; i++) {
    if (configs[i] == NULL || !bench_daemon_mode_selected(cfg, p->mode[i]))
      continue;
    if (cs->n >= BENCH_LINES_MAX) {
      fprintf(stderr, "bench: too many case lines\n");
      return -1;
    }
    daemon_shared *d = &p->d[i];
    d->config = configs[i];
    static const char *keys[5] = {
        "bench-daemon-coalesce", "bench-daemon-no-coalesce",
        "bench-daemon-prefetch", "bench-daemon-standby", "bench-daemon-cluster"};
    d->key = keys[i];
    if ((d->master = mc_open(configs[i])) == NULL) return -1;
    workload *w = &cs->w[cs->n++];
    *w = (workload){"daemon-incr",
                    p->mode[i],
                    1,
                    d,
                    daemon_thread_open,
                    daemon_thread_close,
                    daemon_op,
                    /* standby, cluster: up to 32 connections, where
                       their cost is asked for (and the smoke run stays
                       short) */
                    i >= 3 ? BENCH_PEER_WIDE_MAX : BENCH_MAX_THREADS,
                    0,
                    0,
                    pids[i]};
  }
  const char *pipes[4] = {cfg->daemon, cfg->daemon_pf, cfg->daemon_tls,
                          cfg->memcached};
  /* tls-pipe100: the prefetch daemon's TLS port */
  static const char *pipe_mode[4] = {"coalesce-pipe100", "prefetch-pipe100",
                                     "tls-pipe100", "raw-pipe100"};
  static const char *pipe_key[4] = {"bench-pipe-coalesce",
                                    "bench-pipe-prefetch", "bench-pipe-tls",
                                    "bench-pipe-raw"};
  static const char *pipe_case[4] = {"daemon-incr", "daemon-incr",
                                     "daemon-incr", "memcached-pipe"};
  /* prefetch-pipe100: the default daemon's CPU; raw-pipe100: memcached's */
  const int pipe_pid[4] = {0, cfg->pid_daemon_pf, 0, cfg->pid_memcached};
  for (int i = 0; i < 4; i++) {
    if (pipes[i] == NULL || !bench_daemon_mode_selected(cfg, pipe_mode[i]))
      continue;
    if (i == 3 && raw_seed(pipes[i], pipe_key[i]) != 0) return -1;
    if (cs->n >= BENCH_LINES_MAX) {
      fprintf(stderr, "bench: too many case lines\n");
      return -1;
    }
    p->pipe[i].config = pipes[i];
    p->pipe[i].key = pipe_key[i];
    p->pipe[i].tls = i == 2;
    cs->w[cs->n++] = (workload){pipe_case[i],
                                pipe_mode[i],
                                PIPE_DEPTH,
                                &p->pipe[i],
                                pipe_thread_open,
                                pipe_thread_close,
                                pipe_op,
                                0,
                                0,
                                1,
                                pipe_pid[i]};
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
#define IS(name) \
  (key_length == strlen(name) && memcmp(key, name, key_length) == 0)
  if (IS("cmd_incr"))
    w->cmd_incr = x, w->seen++;
  else if (IS("increments"))
    w->increments = x, w->seen++;
  else if (IS("incr_merged"))
    w->incr_merged = x, w->seen++;
#undef IS
  return MEMCACHED_SUCCESS;
}

void daemon_cases_close(case_set *cs) {
  daemon_priv *p = cs->daemon_priv;
  if (p == NULL) return;
  for (int i = 0; i < 5; i++) {
    daemon_shared *d = &p->d[i];
    if (d->master == NULL) continue;
    stat_want w = {0, 0, 0, 0};
    memcached_return_t rc =
        memcached_stat_execute(d->master, NULL, stat_cb, &w);
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
