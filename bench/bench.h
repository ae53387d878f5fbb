/*
 * bench.h - declarations shared by the files of the benchmark harness.
 *
 *   bench.c    main: settings from the environment, the order of the
 *              runs, medians, ratios, the table, the CSV files, --check
 *   runner.c   runs one workload at N threads for a while and measures it
 *   cases.c    the throughput workloads: memcached-incr, seed, next,
 *              next_n, leveldb-put
 *   daemon.c   the daemon-incr workloads: logcounterd over TCP, with
 *              and without coalescing
 *   tally.c    the tally cases: tally-add (throughput), tally-flush and
 *              the durable writes per tally per window
 *   restore.c  the restore and prune cases on big logs
 *   peers.c    the comparison with the peers (Redis INCR, PostgreSQL
 *              nextval): the second table, latest-peers.csv, the
 *              durability notes
 *   nopeers.c  build/bench's stand-in for bench/peers/ (the peer cases
 *              live only in build/bench-peers, which links hiredis and
 *              libpq: see bench/peers/peers.h)
 *   util.c     clocks, directories, LevelDB and memcached helpers
 *   hist.c     the latency histogram
 *
 * The harness measures; it never judges speed.  --check only verifies that
 * each case ran and produced sane numbers.
 */
#ifndef LC_BENCH_H
#define LC_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <leveldb/c.h>
#include <libmemcached/memcached.h>

#include "logcounter.h"

#define BENCH_MAX_THREADS 64
#define BENCH_MAX_RUNS 99
/* The largest wide thread count at which next, next_n x100/x1000 and the
 * peers run (memcached-incr and daemon-incr run at every wide count). */
#define BENCH_PEER_WIDE_MAX 32
/* The peers' runs are this much shorter than logcounter's, to keep make
 * bench near 9 minutes (1 s instead of 2 s by default). */
#define BENCH_PEER_SHARE 0.5

typedef struct bench_cfg {
  double seconds;  /* per case line: all thread counts and runs */
  int runs;        /* runs per point; the median run is reported */
  int threads[16]; /* thread counts */
  int nthreads;
  int wide[8]; /* extra thread counts for the wide workloads
                              (memcached-incr, daemon-incr) only */
  int nwide;
  uint64_t records_max;   /* largest log for restore/prune */
  int restore_repeats;    /* timed restores per log state */
  uint64_t tallies;       /* tally-flush: dirty tallies flushed at once */
  uint64_t tally_changes; /* changes of one tally in one window */
  const char *memcached;  /* libmemcached configuration string */
  const char *daemon;     /* logcounterd, coalescing (NULL: no daemon) */
  const char *daemon_nc;  /* logcounterd --no-coalesce (NULL: none) */
  const char *daemon_pf;  /* logcounterd --prefetch auto (NULL: none) */
  const char *daemon_tls; /* the prefetch daemon's TLS port (NULL: none) */
  const char *daemon_sb;  /* BENCH_STANDBY: a default daemon serving a
                             standby (NULL: none) */
  const char *daemon_cl;  /* BENCH_CLUSTER: the primary of a three-node
                             cluster on etcd (NULL: none) */
  /* The server processes, for their CPU time per request (0: unknown) */
  int pid_memcached, pid_daemon_pf, pid_daemon_sb, pid_daemon_cl;
  /* The peers (build/bench-peers only): an address, "none: WHY" when
   * bench/run.sh could not start it, or NULL when not asked for. */
  const char *redis_everysec; /* redis-server, AOF appendfsync everysec */
  const char *redis_always;   /* redis-server, AOF appendfsync always */
  const char *pg;             /* PostgreSQL conninfo */
  const char *peers_why;      /* set: the peers were wanted but could not
                                  be built; each peer row says this */
  const char *dir;            /* scratch directory for the LevelDB logs */
  const char *out;            /* where latest.csv and latest-restore.csv go */
  const char *cases;          /* comma-separated case names, or NULL: all */
  const char *daemon_modes;   /* comma-separated modes of daemon-incr (and
                                 raw-pipe100), or NULL: all */
  bool check;                 /* print the bench-smoke verdict */
} bench_cfg;

/* One row of latest.csv.  Negative ratio: not applicable. */
typedef struct point {
  char kase[24];
  char mode[32];
  int threads;
  uint64_t block;
  double ids_per_s, p50_us, p99_us, p999_us, ratio;
  uint64_t errors;
  /* The server's own CPU (user + system) per million requests, in ms,
   * over the median run; its ratio to the baseline's (memcached) at the
   * same thread count; and, for the standby and cluster lines, ids/s over
   * the lone default daemon's.  Each valid only when its has_ is set
   * (zeroed points, as restore and tally-flush make, have none). */
  double cpu_ms_per_m, cpu_ratio, ratio_daemon;
  bool has_cpu, has_cpu_ratio, has_ratio_daemon;
} point;

/* One row of latest-restore.csv.  Negative rate: not applicable. */
typedef struct restore_row {
  char kase[16];
  char mode[24];
  uint64_t records, pruned;
  double seconds, records_per_s;
  uint64_t bytes_before, bytes_after;
  bool ok; /* the operation did what it should */
} restore_row;

/* A peer line that did not run, and why (printed in its row). */
typedef struct skipped {
  char kase[24];
  char mode[32];
  uint64_t block;
  char why[200];
} skipped;

#define BENCH_SKIPPED_MAX 16

typedef struct results {
  point *p;
  size_t np, pcap;
  skipped skip[BENCH_SKIPPED_MAX];
  int nskip;
  char peer_notes[512]; /* the peers' settings as they reported them */
  restore_row *r;
  size_t nr, rcap;
  /* tally-flush: log writes of tally_changes changes of one tally in one
   * window plus a forced flush (-1: not measured; must be 1) */
  int64_t tally_writes;
  uint64_t tally_changes, tally_flushed;
} results;

point *results_add_point(results *res);
restore_row *results_add_restore(results *res);
bool bench_case_selected(const bench_cfg *cfg, const char *name);
/* Whether a daemon-incr mode (or memcached-pipe's raw-pipe100) is among
 * BENCH_DAEMON_MODES (unset: every mode). */
bool bench_daemon_mode_selected(const bench_cfg *cfg, const char *mode);

/* ---- runner.c ---- */
typedef struct workload {
  const char *kase, *mode;
  uint64_t block; /* ids per call */
  void *shared;
  /* Per-thread state, made in the thread before timing starts. */
  int (*thread_open)(void *shared, void **state, char *err, size_t errlen);
  void (*thread_close)(void *state);
  /* One call: the number of ids obtained, or -1 with err filled. */
  int64_t (*op)(void *shared, void *state, char *err, size_t errlen);
  int wide_max;      /* also run at the cfg->wide thread counts up
                              to this one (0: only at cfg->threads) */
  double time_share; /* the part of a point's time its runs get
                              (0: all of it; the peers: BENCH_PEER_SHARE) */
  int threads_max;   /* runs only at counts up to this (0: all) */
  int cpu_pid;       /* the server process whose CPU time per request
                              is measured (0: none); one id = one request */
} workload;

/* Does w run at this thread count (wide_only: not among cfg->threads)? */
static inline bool workload_runs_at(const workload *w, int threads,
                                    bool wide_only) {
  return !(wide_only && threads > w->wide_max) &&
         !(w->threads_max > 0 && threads > w->threads_max);
}

typedef struct sample {
  double ids_per_s, p50_us, p99_us, p999_us;
  uint64_t calls, errors;
  double cpu_ms_per_m; /* w->cpu_pid's CPU per million ids (-1: none) */
} sample;

/* Runs w at the given thread count for about `seconds`; false if the
 * threads could not be started at all, or if w->cpu_pid is set and its
 * CPU time cannot be read from /proc. */
bool run_once(const workload *w, int threads, double seconds, sample *out);

/* ---- cases.c ---- */
#define BENCH_LINES_MAX 40
typedef struct case_set {
  workload w[BENCH_LINES_MAX];
  int n;
  void *priv;
  void *daemon_priv; /* daemon.c's */
  void *tally_priv;  /* tally.c's */
  void *nc_priv;     /* newcounters.c's */
  void *ceiling_priv; /* ceiling.c's */
  void *peer_priv;   /* bench/peers/'s */
} case_set;
/* Opens the shared state of every selected throughput workload. */
/* A fresh, empty directory cfg->dir/name (its path into path). */
int bench_fresh_dir(const bench_cfg *cfg, const char *name, char *path,
                    size_t size);
/* A handle on the log at path; NULL (and a message) on failure. */
lc_t *bench_open(const bench_cfg *cfg, const char *path, lc_durability_t d);
/* The same with lc_options.prefetch set. */
lc_t *bench_open_prefetch(const bench_cfg *cfg, const char *path,
                          lc_durability_t d, uint64_t prefetch);
int cases_open(const bench_cfg *cfg, case_set *cs);
void cases_close(case_set *cs);

/* ---- daemon.c ---- */
/* Adds the daemon-incr workloads (when selected and a daemon is given). */
int daemon_cases_open(const bench_cfg *cfg, case_set *cs);
/* Prints each daemon's merge figures from its "stats" and frees. */
void daemon_cases_close(case_set *cs);

/* ---- ceiling.c ---- */
/* Adds the ceiling workloads (one shared atomic; one shared mutex). */
int ceiling_cases_open(const bench_cfg *cfg, case_set *cs);
void ceiling_cases_close(case_set *cs);

/* ---- tally.c ---- */
/* Adds the tally-add workload (when selected). */
int tally_cases_open(const bench_cfg *cfg, case_set *cs);
/* ---- newcounters.c ---- */
/* Adds the new-counters workloads (first use of a name per call). */
int newcounters_cases_open(const bench_cfg *cfg, case_set *cs);
void newcounters_cases_close(case_set *cs);
/* Prints the tally handle's stats and closes it. */
void tally_cases_close(case_set *cs);
/* tally-flush: one forced flush of cfg->tallies dirty tallies (a restore
 * row and a point), then the writes per tally per window into
 * res->tally_writes. */
int tally_run(const bench_cfg *cfg, results *res);

/* ---- the peers: bench/peers/ in build/bench-peers, nopeers.c in
 * build/bench ---- */
/* Adds the peer workloads that are selected and were started; a selected
 * peer that cannot run gets a skipped row in res saying why. */
int peer_cases_open(const bench_cfg *cfg, case_set *cs, results *res);
/* Closes the peers' connections. */
void peer_cases_close(case_set *cs);
/* Whether this binary has the peer cases at all. */
extern const bool bench_has_peers;

/* ---- peers.c ---- */
/* A skipped row for a peer line. */
void peer_skip(results *res, const char *kase, const char *mode, uint64_t block,
               const char *why);
/* The comparison table (logcounter against each peer), its CSV
 * (OUT/latest-peers.csv) and the durability notes; nothing when no peer
 * was asked for. */
void peers_print(const results *res);
int peers_write_csv(const bench_cfg *cfg, const results *res);
/* Appends text to res->peer_notes (a line each). */
void peer_note(results *res, const char *text);
/* Skipped rows saying why for every selected peer line whose server is
 * among those given (redis: the two Redis servers, pg: PostgreSQL). */
void peer_skip_all(const bench_cfg *cfg, results *res, bool redis, bool pg,
                   const char *why);
/* Whether a point is a peer's (redis-*, pg-*). */
bool is_peer(const char *kase);

/* ---- restore.c ---- */
/* Builds logs of each size, times restores before and after a 90% prune,
 * and the prune itself.  incr_per_s: memcached-incr at 1 thread, for the
 * ratio column (<= 0: none). */
int restore_run(const bench_cfg *cfg, results *res, double incr_per_s);

/* ---- util.c ---- */
uint64_t now_ns(void);
void sleep_s(double s);
int mkdir_p(const char *path);
int rm_rf(const char *path);
/* Total size of the regular files under path, in bytes. */
uint64_t du_bytes(const char *path);
/* A LevelDB handle on path (created); NULL with a message on stderr. */
leveldb_t *db_open(const char *path, size_t write_buffer);
/* A memcached_st for config with TCP_NODELAY and 1 s timeouts, like the
 * library's; NULL with a message on stderr. */
memcached_st *mc_open(const char *config);
/* Sets key to "0" (an incr of a missing key is NOT_FOUND); 0 or -1, said
 * on stderr. */
int mc_set_zero(memcached_st *mc, const char *key);
/* A TCP connection (TCP_NODELAY) to 127.0.0.1 at the port of a
 * "--SERVER=127.0.0.1:PORT" config; the socket, or -1. */
int config_connect(const char *config);
/* The largest value under a record prefix: one reverse seek (0: none). */
uint64_t db_max(leveldb_t *db, const char *prefix, size_t plen);
double median(double *v, int n);
/* A process's user + system CPU time so far, in clock ticks (fields 14
 * and 15 of /proc/PID/stat: every thread's); -1 if it cannot be read. */
long long proc_cpu_ticks(int pid);

#endif
