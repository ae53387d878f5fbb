/*
 * redis.c - the Redis peer cases, with hiredis, one connection per thread:
 *
 *   redis-incr   aof-everysec  INCR on one key of a redis-server with
 *                              appendonly yes, appendfsync everysec
 *   redis-incr   aof-always    the same with appendfsync always (each
 *                              write is fsynced before its reply)
 *   redis-incrby aof-everysec  INCRBY key 100 and INCRBY key 1000: a block
 *                              per call (ids = calls x block)
 *
 * Each line has its own key, deleted before the run; each connection
 * checks that its answers strictly increase (by at least the block).  The
 * servers' own words on their settings (CONFIG GET appendonly,
 * appendfsync, the version) go into the peer notes, so the table shows
 * what was really measured.
 */
#include "peers.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REDIS_TIMEOUT_S 5

typedef struct redis_shared {
  char host[64];
  int port;
  char key[32];
  uint64_t block;
} redis_shared;

typedef struct redis_priv {
  redis_shared line[4]; /* incr everysec, incr always, incrby 100, 1000 */
} redis_priv;

typedef struct redis_thread {
  redisContext *c;
  long long last;
} redis_thread;

static int parse_addr(const char *addr, char *host, size_t hsize, int *port) {
  const char *colon = strrchr(addr, ':');
  if (colon == NULL || (size_t)(colon - addr) >= hsize) return -1;
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = '\0';
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < 1 || p > 65535) return -1;
  *port = (int)p;
  return 0;
}

static redisContext *connect_to(const char *host, int port, char *err,
                                size_t n) {
  struct timeval tv = {REDIS_TIMEOUT_S, 0};
  redisContext *c = redisConnectWithTimeout(host, port, tv);
  if (c == NULL || c->err) {
    snprintf(err, n, "cannot connect to redis-server: %s",
             c ? c->errstr : "out of memory");
    redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  return c;
}

static int redis_thread_open(void *shared, void **state, char *err, size_t n) {
  redis_shared *s = shared;
  redis_thread *t = calloc(1, sizeof *t);
  if (t == NULL) return snprintf(err, n, "out of memory"), -1;
  if ((t->c = connect_to(s->host, s->port, err, n)) == NULL) {
    free(t);
    return -1;
  }
  *state = t;
  return 0;
}

static void redis_thread_close(void *state) {
  redis_thread *t = state;
  redisFree(t->c);
  free(t);
}

static int64_t redis_op(void *shared, void *state, char *err, size_t n) {
  redis_shared *s = shared;
  redis_thread *t = state;
  redisReply *r = s->block == 1 ? redisCommand(t->c, "INCR %s", s->key)
                                : redisCommand(t->c, "INCRBY %s %llu", s->key,
                                               (unsigned long long)s->block);
  if (r == NULL) {
    snprintf(err, n, "redis: %s", t->c->errstr);
    return -1;
  }
  int64_t got = -1;
  if (r->type != REDIS_REPLY_INTEGER)
    snprintf(err, n, "redis: %s",
             r->type == REDIS_REPLY_ERROR ? r->str : "not an integer");
  else if (r->integer - (long long)s->block < t->last)
    snprintf(err, n, "redis went backwards: %lld after %lld", r->integer,
             t->last);
  else {
    t->last = r->integer;
    got = (int64_t)s->block;
  }
  freeReplyObject(r);
  return got;
}

/* The value of CONFIG GET name into buf ("?" if none). */
static void config_get(redisContext *c, const char *name, char *buf,
                       size_t size) {
  snprintf(buf, size, "?");
  redisReply *r = redisCommand(c, "CONFIG GET %s", name);
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      r->element[1]->type == REDIS_REPLY_STRING)
    snprintf(buf, size, "%s", r->element[1]->str);
  if (r) freeReplyObject(r);
}

static void version(redisContext *c, char *buf, size_t size) {
  snprintf(buf, size, "?");
  redisReply *r = redisCommand(c, "INFO server");
  const char *v = r && r->type == REDIS_REPLY_STRING
                      ? strstr(r->str, "redis_version:")
                      : NULL;
  if (v) {
    v += strlen("redis_version:");
    snprintf(buf, size, "%.*s", (int)strcspn(v, "\r\n"), v);
  }
  if (r) freeReplyObject(r);
}

/* Connects to one server, checks it, notes its settings (unless res is
 * NULL) and deletes the keys of its nlines lines s[]; -1 (why in err) when
 * it cannot be used. */
static int prepare(const char *addr, const char *want_fsync, redis_shared *s,
                   int nlines, results *res, char *err, size_t n) {
  char host[64];
  int port;
  if (parse_addr(addr, host, sizeof host, &port) != 0)
    return snprintf(err, n, "bad redis address '%s' (want HOST:PORT)", addr),
           -1;
  redisContext *c = connect_to(host, port, err, n);
  if (c == NULL) return -1;
  char aof[16], fsync[16], ver[32], note[128];
  config_get(c, "appendonly", aof, sizeof aof);
  config_get(c, "appendfsync", fsync, sizeof fsync);
  version(c, ver, sizeof ver);
  int rc = 0;
  if (strcmp(aof, "yes") != 0 || strcmp(fsync, want_fsync) != 0) {
    snprintf(err, n,
             "redis-server runs with appendonly %s, appendfsync %s; "
             "want yes, %s",
             aof, fsync, want_fsync);
    rc = -1;
  }
  for (int i = 0; rc == 0 && i < nlines; i++) {
    snprintf(s[i].host, sizeof s[i].host, "%s", host);
    s[i].port = port;
    redisReply *r = redisCommand(c, "DEL %s", s[i].key);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
      snprintf(err, n, "redis DEL: %s", r ? r->str : c->errstr);
      rc = -1;
    }
    if (r) freeReplyObject(r);
  }
  if (rc == 0 && res) {
    snprintf(note, sizeof note, "redis %s (%s): appendonly %s, appendfsync %s",
             ver, want_fsync, aof, fsync);
    peer_note(res, note);
  }
  redisFree(c);
  return rc;
}

static int add(case_set *cs, const char *kase, const char *mode,
               redis_shared *s) {
  if (cs->n >= BENCH_LINES_MAX)
    return fprintf(stderr, "bench: too many case lines\n"), -1;
  cs->w[cs->n++] = (workload){kase,
                              mode,
                              s->block,
                              s,
                              redis_thread_open,
                              redis_thread_close,
                              redis_op,
                              BENCH_PEER_WIDE_MAX,
                              BENCH_PEER_SHARE,
                              0,
                              0};
  return 0;
}

/* Why the server at addr cannot be used ("none: WHY" from bench/run.sh,
 * or not given at all), or NULL: it can. */
static const char *unavailable(const bench_cfg *cfg, const char *addr) {
  if (addr == NULL)
    return cfg->cases ? "not started (bench/run.sh --peers starts it)" : "";
  if (strncmp(addr, "none:", 5) == 0) return addr + 5 + (addr[5] == ' ');
  return NULL;
}

int redis_cases_open(const bench_cfg *cfg, case_set *cs, results *res,
                     void **priv) {
  bool incr = bench_case_selected(cfg, "redis-incr");
  bool incrby = bench_case_selected(cfg, "redis-incrby");
  if (!incr && !incrby) return 0;
  redis_priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  *priv = p;
  static const char *keys[4] = {"bench:incr", "bench:incr", "bench:incrby100",
                                "bench:incrby1000"};
  static const uint64_t blocks[4] = {1, 1, 100, 1000};
  for (int i = 0; i < 4; i++) {
    snprintf(p->line[i].key, sizeof p->line[i].key, "%s", keys[i]);
    p->line[i].block = blocks[i];
  }
  char err[256];
  int rc = 0;
  /* the everysec server: INCR and the INCRBY blocks */
  const char *why = unavailable(cfg, cfg->redis_everysec);
  if (why == NULL &&
      prepare(cfg->redis_everysec, "everysec", &p->line[0], 1, res, err,
              sizeof err) == 0 &&
      prepare(cfg->redis_everysec, "everysec", &p->line[2], 2, NULL, err,
              sizeof err) == 0) {
    if (incr) rc |= add(cs, "redis-incr", "aof-everysec", &p->line[0]);
    if (incrby) {
      rc |= add(cs, "redis-incrby", "aof-everysec", &p->line[2]);
      rc |= add(cs, "redis-incrby", "aof-everysec", &p->line[3]);
    }
  } else if (why == NULL || *why) {
    if (why == NULL) why = err;
    if (incr) peer_skip(res, "redis-incr", "aof-everysec", 1, why);
    if (incrby) {
      peer_skip(res, "redis-incrby", "aof-everysec", 100, why);
      peer_skip(res, "redis-incrby", "aof-everysec", 1000, why);
    }
  }
  if (!incr) return rc;
  why = unavailable(cfg, cfg->redis_always);
  if (why == NULL && prepare(cfg->redis_always, "always", &p->line[1], 1, res,
                             err, sizeof err) == 0)
    rc |= add(cs, "redis-incr", "aof-always", &p->line[1]);
  else if (why == NULL || *why)
    peer_skip(res, "redis-incr", "aof-always", 1, why ? why : err);
  return rc;
}

void redis_cases_close(void *priv) {
  free(priv);
}
