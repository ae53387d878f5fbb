/*
 * cases.c - the throughput workloads, one call = one allocation:
 *
 *   memcached-incr  raw: memcached_increment on one key, one memcached_st
 *                   per thread.  The ceiling of one round trip per id;
 *                   with BENCH_MEMCACHED_PID, memcached's CPU per request.
 *   seed            UNSAFE: the original LogCounter (seeds/002): incr; on
 *                   a miss (or any failure) the log's largest value + 1,
 *                   stored with a plain set, no lock; then the record is
 *                   written AFTER, unsynced, its failure ignored.  Two
 *                   restorers can hand out the same value, and a value
 *                   can be returned without its record.
 *   next            lc_next, default and sync durability, one lc_t shared
 *                   by all threads (the intended use); mode prefetch:
 *                   default durability with lc_options.prefetch =
 *                   LC_PREFETCH_AUTO (ids from segments held in memory).
 *   next_n          lc_next_n with blocks of 10, 100, 1000 (ids = calls x
 *                   block).
 *   next and next_n x100, x1000 also run at the wide thread counts up to
 *   32 (BENCH_PEER_WIDE_MAX), where the peers are compared with them;
 *   memcached-incr runs at every wide count.
 *   leveldb-put     LevelDB alone, one put per id, unsynced and synced:
 *                   the log's own ceiling.
 *   (daemon-incr is in daemon.c, tally-add in tally.c, new-counters in
 *   newcounters.c, ceiling in ceiling.c.)
 *
 * Every LevelDB directory is the case's own, under cfg->dir, and starts
 * empty.  Records use the library's key format ('r' NAME '\0' + 8-byte
 * big-endian value) and value format.
 */
#include "bench.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/format.h"

typedef struct mc_shared {
  memcached_st *master;
  const char *key;
} mc_shared;

typedef struct seed_shared {
  mc_shared mc;
  leveldb_t *db;
  leveldb_writeoptions_t *wo;
  char prefix[32];
  size_t plen;
} seed_shared;

typedef struct next_shared {
  lc_t *h;
  const char *name;
  uint64_t block;
} next_shared;

typedef struct put_shared {
  leveldb_t *db;
  leveldb_writeoptions_t *wo;
  atomic_uint_fast64_t next;
  char prefix[32];
  size_t plen;
} put_shared;

typedef struct priv {
  mc_shared incr;
  seed_shared seed;
  lc_t *h[4]; /* next default, next sync, next_n, prefetch */
  next_shared next[3], next_n[3];
  put_shared put[2];
} priv;

/* ---- memcached-incr ---- */

static int mc_thread_open(void *shared, void **state, char *err, size_t n) {
  mc_shared *s = shared;
  *state = memcached_clone(NULL, s->master);
  if (*state == NULL) {
    snprintf(err, n, "memcached_clone failed");
    return -1;
  }
  return 0;
}

static void mc_thread_close(void *state) {
  memcached_free(state);
}

static int64_t incr_op(void *shared, void *state, char *err, size_t n) {
  mc_shared *s = shared;
  memcached_st *mc = state;
  uint64_t v = 0;
  memcached_return_t rc =
      memcached_increment(mc, s->key, strlen(s->key), 1, &v);
  if (rc != MEMCACHED_SUCCESS) {
    snprintf(err, n, "incr: %s", memcached_last_error_message(mc));
    return -1;
  }
  return 1;
}

/* ---- seed (UNSAFE, the original algorithm) ---- */

static void record_put(leveldb_t *db, leveldb_writeoptions_t *wo,
                       const char *prefix, size_t plen, uint64_t v,
                       char **err) {
  char key[48];
  unsigned char val[LC__RECORD_LEN];
  memcpy(key, prefix, plen);
  lc__key_be64_put((unsigned char *)key + plen, v);
  lc__key_record_encode(val, 1, lc__clock_now_us());
  leveldb_put(db, wo, key, plen + 8, (const char *)val, sizeof val, err);
}

static int64_t seed_op(void *shared, void *state, char *err, size_t n) {
  (void)err, (void)n;
  seed_shared *s = shared;
  memcached_st *mc = state;
  size_t klen = strlen(s->mc.key);
  uint64_t v = 0;
  if (memcached_increment(mc, s->mc.key, klen, 1, &v) != MEMCACHED_SUCCESS) {
    /* restore: largest logged value + 1 by one reverse seek, then a plain
     * set (no add, no lock), and that value is used */
    v = db_max(s->db, s->prefix, s->plen) + 1;
    char buf[24];
    int len = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    memcached_set(mc, s->mc.key, klen, buf, (size_t)len, 0, 0);
  }
  char *e = NULL; /* the record comes after; its failure is ignored */
  record_put(s->db, s->wo, s->prefix, s->plen, v, &e);
  leveldb_free(e);
  return 1;
}

/* ---- next / next_n ---- */

static int next_thread_open(void *shared, void **state, char *err, size_t n) {
  (void)shared;
  *state = calloc(1, sizeof(int64_t)); /* the last value this thread got */
  if (*state == NULL) snprintf(err, n, "out of memory");
  return *state ? 0 : -1;
}

static int64_t next_op(void *shared, void *state, char *err, size_t n) {
  next_shared *s = shared;
  int64_t *last = state, v = 0;
  int rc = s->block == 1 ? lc_next(s->h, s->name, &v)
                         : lc_next_n(s->h, s->name, s->block, &v);
  if (rc) {
    snprintf(err, n, "%s: %s (%s)", lc_err_name(rc), lc_strerror(rc),
             lc_last_detail());
    return -1;
  }
  if (v <= *last) { /* one handle's values only ever go up */
    snprintf(err, n, "went backwards: %lld after %lld", (long long)v,
             (long long)*last);
    return -1;
  }
  *last = v + (int64_t)s->block - 1;
  return (int64_t)s->block;
}

/* ---- leveldb-put ---- */

static int64_t put_op(void *shared, void *state, char *err, size_t n) {
  (void)state;
  put_shared *s = shared;
  uint64_t v = atomic_fetch_add(&s->next, 1) + 1;
  char *e = NULL;
  record_put(s->db, s->wo, s->prefix, s->plen, v, &e);
  if (e) {
    snprintf(err, n, "leveldb put: %s", e);
    leveldb_free(e);
    return -1;
  }
  return 1;
}

/* ---- setup ---- */

int bench_fresh_dir(const bench_cfg *cfg, const char *name, char *path,
                    size_t size) {
  snprintf(path, size, "%s/%s", cfg->dir, name);
  if (rm_rf(path) != 0 || mkdir_p(cfg->dir) != 0) {
    fprintf(stderr, "bench: cannot prepare %s\n", path);
    return -1;
  }
  return 0;
}

lc_t *bench_open(const bench_cfg *cfg, const char *path, lc_durability_t d) {
  return bench_open_prefetch(cfg, path, d, 0);
}

lc_t *bench_open_prefetch(const bench_cfg *cfg, const char *path,
                          lc_durability_t d, uint64_t prefetch) {
  lc_options o;
  lc_options_init(&o);
  o.memcached = cfg->memcached;
  o.db_path = path;
  o.durability = d;
  o.prefetch = prefetch;
  o.owner = "bench";
  /* new-counters makes a name per call: the harness measures speed, so
   * its handles keep state for every name (no LC_ELIMIT) */
  o.max_counters = o.max_tallies = UINT64_MAX;
  /* a pooled memcached connection for every thread calling at once */
  for (int i = 0; i < cfg->nthreads; i++)
    if (cfg->threads[i] > o.pool_size) o.pool_size = cfg->threads[i];
  for (int i = 0; i < cfg->nwide; i++)
    if (cfg->wide[i] > o.pool_size) o.pool_size = cfg->wide[i];
  lc_t *h = NULL;
  int rc = lc_open(&o, &h);
  if (rc)
    fprintf(stderr, "bench: cannot open %s: %s (%s)\n", path, lc_strerror(rc),
            lc_last_detail());
  return h;
}

static lc_t *open_handle(const bench_cfg *cfg, const char *name,
                         lc_durability_t d, uint64_t prefetch) {
  char path[4096];
  if (bench_fresh_dir(cfg, name, path, sizeof path)) return NULL;
  return bench_open_prefetch(cfg, path, d, prefetch);
}

static leveldb_t *open_db(const bench_cfg *cfg, const char *name) {
  char path[4096];
  if (bench_fresh_dir(cfg, name, path, sizeof path)) return NULL;
  return db_open(path, 0);
}

static leveldb_writeoptions_t *write_options(bool sync) {
  leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(wo, sync);
  return wo;
}

static void add(case_set *cs, const char *kase, const char *mode,
                uint64_t block, void *shared,
                int (*open)(void *, void **, char *, size_t),
                void (*close)(void *),
                int64_t (*op)(void *, void *, char *, size_t), int wide_max) {
  workload *w = &cs->w[cs->n++];
  *w = (workload){kase, mode, block, shared, open, close, op, wide_max, 0, 0, 0};
}

int cases_open(const bench_cfg *cfg, case_set *cs) {
  memset(cs, 0, sizeof *cs);
  priv *p = calloc(1, sizeof *p);
  if (p == NULL) return -1;
  cs->priv = p;
  memcached_st *master = mc_open(cfg->memcached);
  if (master == NULL) return -1;
  p->incr = (mc_shared){master, "bench:incr"};
  p->seed.mc = (mc_shared){master, "bench:seed"};

  if (bench_case_selected(cfg, "memcached-incr")) {
    if (mc_set_zero(master, p->incr.key)) return -1;
    /* the baseline of daemon-incr and the peers: every wide count */
    add(cs, "memcached-incr", "raw", 1, &p->incr, mc_thread_open,
        mc_thread_close, incr_op, BENCH_MAX_THREADS);
    cs->w[cs->n - 1].cpu_pid = cfg->pid_memcached; /* its CPU per request */
  }
  if (bench_case_selected(cfg, "seed")) {
    seed_shared *s = &p->seed;
    memcached_delete(master, s->mc.key, strlen(s->mc.key), 0);
    if ((s->db = open_db(cfg, "seed")) == NULL) return -1;
    s->wo = write_options(false);
    s->plen = lc__key_record_prefix(s->prefix, "seed", 4);
    add(cs, "seed", "unsafe", 1, s, mc_thread_open, mc_thread_close, seed_op,
        0);
  }
  if (bench_case_selected(cfg, "next")) {
    static const char *dirs[3] = {"next-default", "next-sync", "next-prefetch"};
    static const int slot[3] = {0, 1, 3};
    for (int i = 0; i < 3; i++) {
      lc_durability_t d = i == 1 ? LC_DURABILITY_SYNC : LC_DURABILITY_DEFAULT;
      lc_t **h = &p->h[slot[i]];
      if ((*h = open_handle(cfg, dirs[i], d, i == 2 ? LC_PREFETCH_AUTO : 0)) ==
          NULL)
        return -1;
      /* one log owns a counter: each handle its own name */
      static const char *names[3] = {"bench-default", "bench-sync",
                                     "bench-prefetch"};
      p->next[i] = (next_shared){*h, names[i], 1};
      add(cs, "next", i == 2 ? "prefetch" : lc_durability_name(d), 1,
          &p->next[i], next_thread_open, free, next_op, BENCH_PEER_WIDE_MAX);
    }
  }
  if (bench_case_selected(cfg, "next_n")) {
    static const char *names[3] = {"bench-10", "bench-100", "bench-1000"};
    static const uint64_t blocks[3] = {10, 100, 1000};
    if ((p->h[2] = open_handle(cfg, "next_n", LC_DURABILITY_DEFAULT, 0)) ==
        NULL)
      return -1;
    for (int i = 0; i < 3; i++) {
      p->next_n[i] = (next_shared){p->h[2], names[i], blocks[i]};
      add(cs, "next_n", "default", blocks[i], &p->next_n[i], next_thread_open,
          free, next_op, blocks[i] >= 100 ? BENCH_PEER_WIDE_MAX : 0);
    }
  }
  if (bench_case_selected(cfg, "leveldb-put")) {
    static const char *dirs[2] = {"put-nosync", "put-sync"};
    for (int i = 0; i < 2; i++) {
      put_shared *s = &p->put[i];
      if ((s->db = open_db(cfg, dirs[i])) == NULL) return -1;
      s->wo = write_options(i == 1);
      s->plen = lc__key_record_prefix(s->prefix, "bench", 5);
      add(cs, "leveldb-put", i ? "sync" : "nosync", 1, s, NULL, NULL, put_op,
          0);
    }
  }
  if (ceiling_cases_open(cfg, cs)) return -1;
  if (tally_cases_open(cfg, cs)) return -1;
  if (daemon_cases_open(cfg, cs)) return -1;
  /* last: it leaves a new counter in the daemon with every call */
  return newcounters_cases_open(cfg, cs);
}

void cases_close(case_set *cs) {
  daemon_cases_close(cs);
  ceiling_cases_close(cs);
  newcounters_cases_close(cs);
  tally_cases_close(cs);
  priv *p = cs->priv;
  if (p == NULL) return;
  static const char *what[4] = {"next default", "next sync", "next_n",
                                "next prefetch"};
  for (int i = 0; i < 4; i++) {
    lc_stats st;
    if (p->h[i] && lc_get_stats(p->h[i], &st) == 0 && st.increments)
      printf("library stats, %-13s: %llu calls, %llu memcached incr (%.2f "
             "calls per incr), %llu log writes, %llu syncs, %llu restores\n",
             what[i], (unsigned long long)st.allocations,
             (unsigned long long)st.increments,
             (double)st.allocations / (double)st.increments,
             (unsigned long long)st.log_writes,
             (unsigned long long)st.log_syncs, (unsigned long long)st.restores);
    int rc = lc_close(p->h[i]);
    if (rc)
      fprintf(stderr, "bench: lc_close: %s (%s)\n", lc_strerror(rc),
              lc_last_detail());
  }
  seed_shared *s = &p->seed;
  if (s->db) leveldb_close(s->db);
  if (s->wo) leveldb_writeoptions_destroy(s->wo);
  for (int i = 0; i < 2; i++) {
    if (p->put[i].db) leveldb_close(p->put[i].db);
    if (p->put[i].wo) leveldb_writeoptions_destroy(p->put[i].wo);
  }
  if (p->incr.master) memcached_free(p->incr.master);
  free(p);
  memset(cs, 0, sizeof *cs);
}
