/*
 * bench.c - the logcounter benchmark harness: main.
 *
 * Measures, side by side in one run, raw memcached incr (the ceiling of
 * one round trip per id) and every allocation path, at each thread count,
 * plus a forced tally flush, the durable writes per tally per window, and
 * restore and prune on big logs.  Runs are interleaved (run 1 of
 * every case at 1 thread, then at 2 threads ..., then run 2 ...) so that a
 * noisy neighbour hurts all cases alike and each case is measured close in
 * time to the memcached-incr it is compared with; each point reports its
 * median run.  Built as build/bench-peers, it also runs the peers (Redis
 * INCR, PostgreSQL nextval: bench/peers/) and compares (peers.c).  Writes a
 * table to stdout, OUT/latest.csv, OUT/latest-restore.csv and, with peers,
 * OUT/latest-peers.csv.  With --check it prints
 * "bench-smoke: N passed, M failed" and fails on insane numbers (never on
 * slow ones).  Settings come from the environment: see usage().
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "logcounter.h"

static const char *const CASES[] = {
    "memcached-incr", "seed",        "next",        "next_n",
    "leveldb-put",    "daemon-incr", "tally-add",   "tally-flush",
    "restore",        "prune",       "new-counters", "ceiling"};
#define NCASES (sizeof CASES / sizeof CASES[0])

static void usage(FILE *f) {
  fputs(
      "usage: bench [--check]\n"
      "Runs the logcounter benchmark against a running memcached; normally\n"
      "started by bench/run.sh (make bench).  Settings, from the environment:\n"
      "  BENCH_MEMCACHED     libmemcached config (default --SERVER=127.0.0.1:11211)\n"
      "  BENCH_SECONDS       time budget of each case line (a case in one mode\n"
      "                      and block: 12 lines, 19 with the peers), for all\n"
      "                      its thread counts and runs together (default 24:\n"
      "                      4 thread counts x 3 runs of 2 s); the wide counts\n"
      "                      add points of the same length.  The throughput\n"
      "                      part takes about 14.5 x BENCH_SECONDS (19 x with\n"
      "                      the peers, whose runs are half as long);\n"
      "                      tally-flush, restore and prune\n"
      "                      are not timed runs and take what their work\n"
      "                      takes (restore and prune: about 15-30 s at\n"
      "                      10,000,000 records on 2 cores).\n"
      "  BENCH_RUNS          runs per point, the median is reported (default 3)\n"
      "  BENCH_THREADS       thread counts (default 1,2,4,8)\n"
      "  BENCH_WIDE_THREADS  extra thread (connection) counts, each point\n"
      "                      timed like the others (default 32,64; 0: none):\n"
      "                      memcached-incr and daemon-incr run at all of\n"
      "                      them; next, next_n x100 and x1000 and the peers\n"
      "                      at those up to 32\n"
      "  BENCH_DAEMON        libmemcached config of a logcounterd with\n"
      "                      coalescing (bench/run.sh starts one); unset:\n"
      "                      daemon-incr is skipped\n"
      "  BENCH_DAEMON_NOCOALESCE  the same for a logcounterd --no-coalesce\n"
      "  BENCH_DAEMON_PREFETCH    the same for a logcounterd --prefetch auto\n"
      "  BENCH_DAEMON_TLS    --SERVER=127.0.0.1:PORT: the TLS port of the\n"
      "                      prefetch daemon (daemon-incr tls-pipe100);\n"
      "                      unset: none\n"
      "  BENCH_DAEMON_STANDBY --SERVER=127.0.0.1:PORT: a default daemon\n"
      "                      (--prefetch auto) serving a standby: the line\n"
      "                      daemon-incr standby (bench/run.sh starts it with\n"
      "                      BENCH_STANDBY=1); unset: none\n"
      "  BENCH_DAEMON_CLUSTER --SERVER=127.0.0.1:PORT: the primary of three\n"
      "                      default nodes on one etcd: daemon-incr cluster\n"
      "                      (bench/run.sh, BENCH_CLUSTER=1); unset: none\n"
      "                      Both lines run at the thread counts up to 32,\n"
      "                      and the footer gives their ids/s over\n"
      "                      daemon-incr prefetch's (the lone daemon) at each\n"
      "  BENCH_MEMCACHED_PID, BENCH_DAEMON_PREFETCH_PID, BENCH_DAEMON_STANDBY_PID,\n"
      "  BENCH_DAEMON_CLUSTER_PID  the servers' process ids (bench/run.sh sets\n"
      "                      them): memcached-incr, raw-pipe100, daemon-incr\n"
      "                      prefetch, prefetch-pipe100, standby and cluster\n"
      "                      then report their server's own CPU time (user +\n"
      "                      system, /proc/PID/stat) per million requests,\n"
      "                      the CSV's cpu_ms_per_M and a footer table, with\n"
      "                      the ratio to memcached's at the same connections\n"
      "                      (cpu_ratio_to_incr); unset or 0: not measured\n"
      "  BENCH_REDIS_EVERYSEC, BENCH_REDIS_ALWAYS  HOST:PORT of a redis-server\n"
      "                      with appendonly yes and appendfsync everysec /\n"
      "                      always (build/bench-peers only; bench/run.sh\n"
      "                      --peers starts them); \"none: WHY\": not started\n"
      "  BENCH_PG            libpq conninfo of a PostgreSQL (the same)\n"
      "  BENCH_PEERS_WHY     the peers were wanted but not built: why\n"
      "  BENCH_RECORDS_MAX   largest log for restore/prune (default 10000000);\n"
      "                      logs of 10000, 1000000, 10000000 records below it\n"
      "                      are measured, and one of exactly this size\n"
      "  BENCH_RESTORE_REPEATS  timed restores per log state (default 5)\n"
      "  BENCH_TALLIES       tally-flush: tallies made dirty, then flushed by\n"
      "                      one forced lc_tally_flush (default 100000)\n"
      "  BENCH_TALLY_CHANGES changes of one tally in one window before a\n"
      "                      forced flush: its log writes must be 1\n"
      "                      (default 10000)\n"
      "  BENCH_CASES         comma-separated subset of memcached-incr, seed,\n"
      "                      next, next_n, leveldb-put, daemon-incr, tally-add,\n"
      "                      tally-flush, restore, prune, new-counters,\n"
      "                      ceiling (one shared atomic / mutex: the limit\n"
      "                      of one ordered counter), and\n"
      "                      the peers\n"
      "                      redis-incr, redis-incrby, pg-nextval,\n"
      "                      pg-nextval-block\n"
      "  BENCH_DAEMON_MODES  comma-separated subset of daemon-incr's modes\n"
      "                      (coalesce, no-coalesce, prefetch, standby,\n"
      "                      cluster, coalesce-pipe100, prefetch-pipe100,\n"
      "                      tls-pipe100) and raw-pipe100 (default: all)\n"
      "  BENCH_DIR           scratch directory for logs (default build/bench-data)\n"
      "  BENCH_OUT           where the CSV files go (default bench/results)\n"
      "bench/run.sh also reads BENCH_STANDBY=1 (start the standby line's\n"
      "primary and standby), BENCH_CLUSTER=1 (start etcd and the three\n"
      "nodes; needs etcd, Debian's etcd-server), BENCH_MEMCACHED_MB and\n"
      "BENCH_DAEMON_FLAGS (see bench/run.sh --help).\n"
      "--check prints 'bench-smoke: N passed, M failed' and exits 1 on any\n"
      "failure: a case that did not run, a non-positive rate, an error,\n"
      "p50 > p99 > p999, tally writes per window other than 1, a server\n"
      "whose process was given without its CPU time, a standby or cluster\n"
      "line given that did not run, or (in\n"
      "build/bench-peers) a peer asked for that did not run.  Speed is\n"
      "never judged.\n",
      f);
}

static const char *env(const char *name, const char *def) {
  const char *v = getenv(name);
  return v && *v ? v : def;
}

static int parse_cfg(bench_cfg *c) {
  char *end;
  c->seconds = strtod(env("BENCH_SECONDS", "24"), &end);
  if (*end || !(c->seconds > 0))
    return fprintf(stderr, "bench: bad BENCH_SECONDS\n"), -1;
  c->runs = atoi(env("BENCH_RUNS", "3"));
  c->restore_repeats = atoi(env("BENCH_RESTORE_REPEATS", "5"));
  if (c->runs < 1 || c->runs > BENCH_MAX_RUNS || c->restore_repeats < 1 ||
      c->restore_repeats > BENCH_MAX_RUNS)
    return fprintf(stderr,
                   "bench: BENCH_RUNS and BENCH_RESTORE_REPEATS: 1..%d\n",
                   BENCH_MAX_RUNS),
           -1;
  c->records_max = strtoull(env("BENCH_RECORDS_MAX", "10000000"), &end, 10);
  if (*end || c->records_max < 10 || c->records_max > 1000000000)
    return fprintf(stderr, "bench: BENCH_RECORDS_MAX: 10..1000000000\n"), -1;
  const char *t = env("BENCH_THREADS", "1,2,4,8");
  for (c->nthreads = 0; *t && c->nthreads < 16;) {
    long n = strtol(t, &end, 10);
    if (end == t || n < 1 || n > BENCH_MAX_THREADS || (*end && *end != ','))
      return fprintf(stderr, "bench: bad BENCH_THREADS\n"), -1;
    c->threads[c->nthreads++] = (int)n;
    t = *end ? end + 1 : end;
  }
  t = env("BENCH_WIDE_THREADS", "32,64");
  for (c->nwide = 0; *t && strcmp(t, "0") != 0 && c->nwide < 8;) {
    long n = strtol(t, &end, 10);
    if (end == t || n < 1 || n > BENCH_MAX_THREADS || (*end && *end != ','))
      return fprintf(stderr, "bench: bad BENCH_WIDE_THREADS\n"), -1;
    c->wide[c->nwide++] = (int)n;
    t = *end ? end + 1 : end;
  }
  c->memcached = env("BENCH_MEMCACHED", "--SERVER=127.0.0.1:11211");
  c->daemon = env("BENCH_DAEMON", NULL);
  c->daemon_nc = env("BENCH_DAEMON_NOCOALESCE", NULL);
  c->daemon_pf = env("BENCH_DAEMON_PREFETCH", NULL);
  c->daemon_tls = env("BENCH_DAEMON_TLS", NULL);
  c->daemon_sb = env("BENCH_DAEMON_STANDBY", NULL);
  c->daemon_cl = env("BENCH_DAEMON_CLUSTER", NULL);
  static const char *pid_names[4] = {
      "BENCH_MEMCACHED_PID", "BENCH_DAEMON_PREFETCH_PID",
      "BENCH_DAEMON_STANDBY_PID", "BENCH_DAEMON_CLUSTER_PID"};
  int *pids[4] = {&c->pid_memcached, &c->pid_daemon_pf, &c->pid_daemon_sb,
                  &c->pid_daemon_cl};
  for (int i = 0; i < 4; i++) {
    long v = strtol(env(pid_names[i], "0"), &end, 10);
    if (*end || v < 0 || v > 1L << 30)
      return fprintf(stderr, "bench: bad %s\n", pid_names[i]), -1;
    *pids[i] = (int)v;
  }
  c->redis_everysec = env("BENCH_REDIS_EVERYSEC", NULL);
  c->redis_always = env("BENCH_REDIS_ALWAYS", NULL);
  c->pg = env("BENCH_PG", NULL);
  c->peers_why = env("BENCH_PEERS_WHY", NULL);
  c->dir = env("BENCH_DIR", "build/bench-data");
  c->out = env("BENCH_OUT", "bench/results");
  c->tallies = strtoull(env("BENCH_TALLIES", "100000"), &end, 10);
  if (*end || c->tallies < 1 || c->tallies > 100000000)
    return fprintf(stderr, "bench: BENCH_TALLIES: 1..100000000\n"), -1;
  c->tally_changes = strtoull(env("BENCH_TALLY_CHANGES", "10000"), &end, 10);
  if (*end || c->tally_changes < 1 || c->tally_changes > 100000000)
    return fprintf(stderr, "bench: BENCH_TALLY_CHANGES: 1..100000000\n"), -1;
  c->cases = getenv("BENCH_CASES");
  if (c->cases && !*c->cases) c->cases = NULL;
  c->daemon_modes = getenv("BENCH_DAEMON_MODES");
  if (c->daemon_modes && !*c->daemon_modes) c->daemon_modes = NULL;
  return 0;
}

/* Whether name is in a comma-separated list (NULL: everything is). */
static bool in_list(const char *list, const char *name) {
  if (list == NULL) return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

bool bench_case_selected(const bench_cfg *cfg, const char *name) {
  return in_list(cfg->cases, name);
}

bool bench_daemon_mode_selected(const bench_cfg *cfg, const char *mode) {
  return in_list(cfg->daemon_modes, mode);
}

point *results_add_point(results *r) {
  if (r->np == r->pcap) {
    r->pcap = r->pcap ? 2 * r->pcap : 64;
    if ((r->p = realloc(r->p, r->pcap * sizeof *r->p)) == NULL) abort();
  }
  memset(&r->p[r->np], 0, sizeof *r->p);
  return &r->p[r->np++];
}

restore_row *results_add_restore(results *r) {
  if (r->nr == r->rcap) {
    r->rcap = r->rcap ? 2 * r->rcap : 32;
    if ((r->r = realloc(r->r, r->rcap * sizeof *r->r)) == NULL) abort();
  }
  memset(&r->r[r->nr], 0, sizeof *r->r);
  return &r->r[r->nr++];
}

static void machine(char *buf, size_t size) {
  char model[128] = "unknown CPU", line[256];
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) == 0 && colon) {
      snprintf(model, sizeof model, "%s", colon + 2);
      model[strcspn(model, "\n")] = '\0';
      break;
    }
  }
  if (f) fclose(f);
  struct utsname u;
  if (uname(&u) != 0) strcpy(u.release, "?");
  snprintf(buf, size, "%s, %ld cores online, Linux %s", model,
           sysconf(_SC_NPROCESSORS_ONLN), u.release);
}

/* Runs every point cfg->runs times, interleaved, and keeps the median run
 * (by ids/s) of each. */
/* The case a point's "x incr" divides by: raw memcached pipelined the
 * same way for the one-connection pipe100 lines of daemon-incr (and the
 * raw pipelined line itself), memcached-incr for every other. */
static const char *baseline(const point *p) {
  bool pipe = strcmp(p->kase, "memcached-pipe") == 0 ||
              (strcmp(p->kase, "daemon-incr") == 0 && strstr(p->mode, "-pipe100"));
  return pipe ? "memcached-pipe" : "memcached-incr";
}

/* daemon-incr standby / cluster: compared with the lone default daemon. */
static bool is_ha_line(const point *p) {
  return strcmp(p->kase, "daemon-incr") == 0 &&
         (strcmp(p->mode, "standby") == 0 || strcmp(p->mode, "cluster") == 0);
}

static bool throughput(const bench_cfg *cfg, const case_set *cs, results *res) {
  /* every thread count: cfg->threads, then the wide ones not among them;
   * narrow workloads skip the wide-only counts */
  int counts[24], wide_only[24], nt = 0;
  for (int i = 0; i < cfg->nthreads; i++)
    counts[nt] = cfg->threads[i], wide_only[nt++] = 0;
  for (int i = 0; i < cfg->nwide; i++) {
    bool dup = false;
    for (int j = 0; j < nt; j++) dup |= counts[j] == cfg->wide[i];
    if (!dup) counts[nt] = cfg->wide[i], wide_only[nt++] = 1;
  }
  int np = cs->n * nt;
  sample *s = calloc((size_t)(np * cfg->runs), sizeof *s);
  if (s == NULL) return false;
  bool ok = true;
  double each = cfg->seconds / cfg->runs / cfg->nthreads;
  for (int r = 0; r < cfg->runs; r++) {
    for (int t = 0; t < nt; t++) { /* each case close in time to its incr */
      for (int i = 0; i < cs->n; i++) {
        const workload *w = &cs->w[i];
        if (!workload_runs_at(w, counts[t], wide_only[t])) continue;
        sample *x = &s[(i * nt + t) * cfg->runs + r];
        bool ran = run_once(w, counts[t],
                            w->time_share > 0 ? each * w->time_share : each, x);
        ok &= ran || is_peer(w->kase); /* a peer's failure is only reported */
        fprintf(stderr,
                "bench: run %d/%d %-14s %-7s %4llu x %d threads: "
                "%.0f ids/s\n",
                r + 1, cfg->runs, w->kase, w->mode,
                (unsigned long long)w->block, counts[t], x->ids_per_s);
      }
    }
  }
  for (int i = 0; i < cs->n; i++) {
    for (int t = 0; t < nt; t++) {
      if (!workload_runs_at(&cs->w[i], counts[t], wide_only[t])) continue;
      sample *runs = &s[(i * nt + t) * cfg->runs], *med = runs;
      double rates[BENCH_MAX_RUNS];
      for (int r = 0; r < cfg->runs; r++) rates[r] = runs[r].ids_per_s;
      median(rates, cfg->runs); /* sorts: the middle one is a real run */
      double want = rates[(cfg->runs - 1) / 2];
      uint64_t errors = 0;
      for (int r = 0; r < cfg->runs; r++) {
        errors += runs[r].errors;
        if (runs[r].ids_per_s == want) med = &runs[r];
      }
      point *p = results_add_point(res);
      *p = (point){"",
                   "",
                   counts[t],
                   cs->w[i].block,
                   med->ids_per_s,
                   med->p50_us,
                   med->p99_us,
                   med->p999_us,
                   -1,
                   errors,
                   med->cpu_ms_per_m,
                   0,
                   0,
                   med->cpu_ms_per_m >= 0,
                   false,
                   false};
      snprintf(p->kase, sizeof p->kase, "%s", cs->w[i].kase);
      snprintf(p->mode, sizeof p->mode, "%s", cs->w[i].mode);
    }
  }
  free(s);
  /* ratio to its baseline at the same thread count */
  for (size_t i = 0; i < res->np; i++) {
    const char *base = baseline(&res->p[i]);
    for (size_t j = 0; j < res->np; j++) {
      const point *b = &res->p[j];
      if (strcmp(b->kase, base) == 0 && b->threads == res->p[i].threads &&
          b->ids_per_s > 0)
        res->p[i].ratio = res->p[i].ids_per_s / b->ids_per_s;
      /* the server's CPU per request over the baseline server's (raw
       * memcached) at the same thread count */
      if (strcmp(b->kase, base) == 0 && b->threads == res->p[i].threads &&
          res->p[i].has_cpu && b->has_cpu && b->cpu_ms_per_m > 0 && b != &res->p[i]) {
        res->p[i].cpu_ratio = res->p[i].cpu_ms_per_m / b->cpu_ms_per_m;
        res->p[i].has_cpu_ratio = true;
      }
    }
  }
  /* the standby and cluster lines over the lone default daemon */
  for (size_t i = 0; i < res->np; i++) {
    point *a = &res->p[i];
    if (!is_ha_line(a)) continue;
    for (size_t j = 0; j < res->np; j++) {
      const point *b = &res->p[j];
      if (strcmp(b->kase, "daemon-incr") == 0 &&
          strcmp(b->mode, "prefetch") == 0 && b->threads == a->threads &&
          b->ids_per_s > 0) {
        a->ratio_daemon = a->ids_per_s / b->ids_per_s;
        a->has_ratio_daemon = true;
      }
    }
  }
  return ok;
}

static double incr_rate(const results *res, int threads) {
  for (size_t i = 0; i < res->np; i++)
    if (strcmp(res->p[i].kase, "memcached-incr") == 0 &&
        res->p[i].threads == threads)
      return res->p[i].ids_per_s;
  return 0;
}

/* daemon-incr coalesce ids/s divided by no-coalesce ids/s at the largest
 * connection count both ran at (64 by default); returns that count, or 0
 * when the two did not both run. */
static int coalescing_factor(const results *res, double *factor) {
  int at = 0;
  for (size_t i = 0; i < res->np; i++) {
    const point *a = &res->p[i];
    if (strcmp(a->kase, "daemon-incr") || strcmp(a->mode, "coalesce")) continue;
    for (size_t j = 0; j < res->np; j++) {
      const point *b = &res->p[j];
      if (strcmp(b->kase, "daemon-incr") == 0 &&
          strcmp(b->mode, "no-coalesce") == 0 && b->threads == a->threads &&
          a->threads > at && b->ids_per_s > 0) {
        at = a->threads;
        *factor = a->ids_per_s / b->ids_per_s;
      }
    }
  }
  return at;
}

/* Microseconds in a 10-wide column: one decimal while it fits. */
static const char *us(char *buf, size_t size, double v) {
  snprintf(buf, size, v < 1e6 ? "%.1f" : "%.0f", v);
  return buf;
}

/* The CPU footer: per line whose server's CPU was measured, its ms per
 * million requests at each thread count, with its ratio to memcached's
 * (the same baseline as "x incr") in parentheses. */
static void print_cpu(const results *res) {
  int counts[24], nt = 0;
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    bool seen = false;
    for (int t = 0; t < nt; t++) seen |= counts[t] == p->threads;
    if (p->has_cpu && !seen && nt < 24) counts[nt++] = p->threads;
  }
  if (nt == 0) return;
  printf("\nCPU per million requests: the server process's own user + system "
         "time (/proc/PID/stat,\n%ld ticks a second) in ms over each point's "
         "median run; in parentheses, over raw\nmemcached's at the same "
         "connections (the daemon's line: daemon / memcached)\n",
         sysconf(_SC_CLK_TCK));
  printf("%-18s %-16s", "case", "mode");
  for (int t = 0; t < nt; t++) printf(" %14d", counts[t]);
  printf("   (connections)\n");
  for (size_t i = 0; i < res->np; i++) {
    const point *a = &res->p[i];
    bool first = a->has_cpu;
    for (size_t j = 0; first && j < i; j++)
      first = !(res->p[j].has_cpu && strcmp(res->p[j].kase, a->kase) == 0 &&
                strcmp(res->p[j].mode, a->mode) == 0 &&
                res->p[j].block == a->block);
    if (!first) continue;
    printf("%-18s %-16s", a->kase, a->mode);
    for (int t = 0; t < nt; t++) {
      char cell[32] = "-";
      for (size_t j = i; j < res->np; j++) {
        const point *b = &res->p[j];
        if (!b->has_cpu || b->threads != counts[t] ||
            strcmp(b->kase, a->kase) || strcmp(b->mode, a->mode) ||
            b->block != a->block)
          continue;
        if (b->has_cpu_ratio)
          snprintf(cell, sizeof cell, "%.0f (%.2f)", b->cpu_ms_per_m,
                   b->cpu_ratio);
        else
          snprintf(cell, sizeof cell, "%.0f", b->cpu_ms_per_m);
      }
      printf(" %14s", cell);
    }
    printf("\n");
  }
}

/* The standby and cluster footer: each line's ids/s over the lone default
 * daemon's at the same connections, in the same run. */
static void print_ha(const results *res) {
  static const char *what[2][2] = {
      {"standby", "a default daemon (--prefetch auto) serving a standby "
                  "(--standby-of, standby-mode required)"},
      {"cluster", "the primary of three default nodes on one etcd"}};
  for (int k = 0; k < 2; k++) {
    bool any = false;
    for (size_t i = 0; i < res->np; i++) {
      const point *p = &res->p[i];
      if (!is_ha_line(p) || strcmp(p->mode, what[k][0]) || !p->has_ratio_daemon)
        continue;
      if (!any)
        printf("\ndaemon-incr %s: %s,\nover the lone default daemon "
               "(daemon-incr prefetch) at the same connections:\n",
               what[k][0], what[k][1]);
      any = true;
      double lone = p->ids_per_s / p->ratio_daemon;
      printf("  %2d connections: %10.0f / %10.0f ids/s = %.3f (%+.1f%%)\n",
             p->threads, p->ids_per_s, lone, p->ratio_daemon,
             (p->ratio_daemon - 1) * 100);
    }
  }
}

static void print_table(const results *res) {
  printf("\n%-18s %-12s %7s %8s %12s %10s %10s %10s %8s %6s\n", "case", "mode",
         "threads", "block", "ids/s", "p50 us", "p99 us", "p999 us", "x incr",
         "errors");
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    char kase[48], ratio[16] = "-";
    bool seed = strcmp(p->kase, "seed") == 0;
    snprintf(kase, sizeof kase, "%s%s", p->kase, seed ? " (UNSAFE)" : "");
    if (p->ratio >= 0) snprintf(ratio, sizeof ratio, "%.2f", p->ratio);
    char a[24], b[24], c[24];
    printf("%-18s %-12s %7d %8llu %12.0f %10s %10s %10s %8s %6llu\n", kase,
           p->mode, p->threads, (unsigned long long)p->block, p->ids_per_s,
           us(a, sizeof a, p->p50_us), us(b, sizeof b, p->p99_us),
           us(c, sizeof c, p->p999_us), ratio, (unsigned long long)p->errors);
  }
  for (int i = 0; i < res->nskip; i++) /* a peer that did not run: why */
    printf("%-18s %-12s %7s %8llu  not run: %s\n", res->skip[i].kase,
           res->skip[i].mode, "-", (unsigned long long)res->skip[i].block,
           res->skip[i].why);
  printf(
      "seed (UNSAFE) is the original LogCounter: set instead of add, no lock,"
      " record written\nafter the value is used and its failure ignored.  "
      "For restore and prune rows, block is\nthe log's record count, ids/s "
      "is operations per second; for tally-flush, block is the\nnumber of "
      "dirty tallies and ids/s is tallies flushed per second.\n");
  double factor = 0;
  int at = coalescing_factor(res, &factor);
  if (at > 0)
    printf("daemon-incr: threads = client connections to logcounterd, one "
           "counter.  Coalescing\nfactor at %d connections: %.2f (coalesce "
           "ids/s / no-coalesce ids/s).\n",
           at, factor);
  if (res->tally_writes >= 0)
    printf("tally-flush: durable writes per tally per window: %lld (log writes "
           "for %llu changes of\none tally in one window and a forced flush "
           "that wrote %llu tally record(s); must be 1).\n",
           (long long)res->tally_writes, (unsigned long long)res->tally_changes,
           (unsigned long long)res->tally_flushed);
  print_cpu(res);
  print_ha(res);
  peers_print(res);
  if (res->nr == 0) return;
  printf("\n%-11s %-12s %10s %10s %10s %12s %14s %14s %3s\n", "case", "mode",
         "records", "pruned", "seconds", "records/s", "bytes before",
         "bytes after", "ok");
  for (size_t i = 0; i < res->nr; i++) {
    const restore_row *r = &res->r[i];
    char rate[24] = "-";
    if (r->records_per_s >= 0)
      snprintf(rate, sizeof rate, "%.0f", r->records_per_s);
    printf("%-11s %-12s %10llu %10llu %10.6f %12s %14llu %14llu %3s\n", r->kase,
           r->mode, (unsigned long long)r->records,
           (unsigned long long)r->pruned, r->seconds, rate,
           (unsigned long long)r->bytes_before,
           (unsigned long long)r->bytes_after, r->ok ? "yes" : "NO");
  }
}

static int write_csv(const bench_cfg *cfg, const results *res) {
  char path[4096];
  if (mkdir_p(cfg->out) != 0)
    return fprintf(stderr, "bench: cannot create %s\n", cfg->out), -1;
  snprintf(path, sizeof path, "%s/latest.csv", cfg->out);
  FILE *f = fopen(path, "w");
  if (f == NULL) return fprintf(stderr, "bench: cannot write %s\n", path), -1;
  fprintf(
      f,
      "case,mode,threads,block,ids_per_s,p50_us,p99_us,p999_us,ratio_to_incr,"
      "cpu_ms_per_M,cpu_ratio_to_incr,ratio_to_daemon\n");
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    fprintf(f, "%s,%s,%d,%llu,%.1f,%.2f,%.2f,%.2f,", p->kase, p->mode,
            p->threads, (unsigned long long)p->block, p->ids_per_s, p->p50_us,
            p->p99_us, p->p999_us);
    if (p->ratio >= 0) fprintf(f, "%.3f", p->ratio);
    fputc(',', f);
    if (p->has_cpu) fprintf(f, "%.1f", p->cpu_ms_per_m);
    fputc(',', f);
    if (p->has_cpu_ratio) fprintf(f, "%.3f", p->cpu_ratio);
    fputc(',', f);
    if (p->has_ratio_daemon) fprintf(f, "%.3f", p->ratio_daemon);
    fputc('\n', f);
  }
  int bad = ferror(f) | fclose(f);
  snprintf(path, sizeof path, "%s/latest-restore.csv", cfg->out);
  if ((f = fopen(path, "w")) == NULL)
    return fprintf(stderr, "bench: cannot write %s\n", path), -1;
  fprintf(
      f,
      "case,mode,records,pruned,seconds,records_per_s,db_bytes_before,db_bytes_after\n");
  for (size_t i = 0; i < res->nr; i++) {
    const restore_row *r = &res->r[i];
    fprintf(f, "%s,%s,%llu,%llu,%.6f,", r->kase, r->mode,
            (unsigned long long)r->records, (unsigned long long)r->pruned,
            r->seconds);
    if (r->records_per_s >= 0) fprintf(f, "%.0f", r->records_per_s);
    fprintf(f, ",%llu,%llu\n", (unsigned long long)r->bytes_before,
            (unsigned long long)r->bytes_after);
  }
  bad |= ferror(f) | fclose(f);
  if (bad) return fprintf(stderr, "bench: cannot write the CSV files\n"), -1;
  return peers_write_csv(cfg, res);
}

/* Whether a point's server CPU must have been measured: the lines whose
 * server process bench/run.sh named (cases.c and daemon.c set cpu_pid on
 * the same lines). */
static bool cpu_wanted(const bench_cfg *cfg, const point *p) {
  if (strcmp(p->kase, "memcached-incr") == 0 ||
      strcmp(p->kase, "memcached-pipe") == 0)
    return cfg->pid_memcached > 0;
  if (strcmp(p->kase, "daemon-incr")) return false;
  if (strcmp(p->mode, "prefetch") == 0 ||
      strcmp(p->mode, "prefetch-pipe100") == 0)
    return cfg->pid_daemon_pf > 0;
  if (strcmp(p->mode, "standby") == 0) return cfg->pid_daemon_sb > 0;
  if (strcmp(p->mode, "cluster") == 0) return cfg->pid_daemon_cl > 0;
  return false;
}

/* The sanity checks; returns the number of failures. */
static int check(const bench_cfg *cfg, const results *res, bool quiet) {
  int passed = 0, failed = 0;
#define VERDICT(cond, ...)                                           \
  do {                                                               \
    if (cond)                                                        \
      passed++;                                                      \
    else {                                                           \
      failed++;                                                      \
      if (!quiet) fprintf(stderr, "bench-smoke: FAIL " __VA_ARGS__); \
    }                                                                \
  } while (0)
  for (size_t c = 0; c < NCASES; c++) {
    if (!bench_case_selected(cfg, CASES[c])) continue;
    bool daemon = strcmp(CASES[c], "daemon-incr") == 0;
    if (daemon && cfg->daemon == NULL) continue; /* no daemon: skipped */
    int n = 0, nc = 0;
    for (size_t i = 0; i < res->np; i++) {
      n += strcmp(res->p[i].kase, CASES[c]) == 0;
      nc += daemon && strcmp(res->p[i].kase, CASES[c]) == 0 &&
            strcmp(res->p[i].mode, "no-coalesce") == 0;
    }
    VERDICT(n > 0, "%s did not run\n", CASES[c]);
    if (daemon && cfg->daemon_nc &&
        bench_daemon_mode_selected(cfg, "coalesce") &&
        bench_daemon_mode_selected(cfg, "no-coalesce"))
      VERDICT(nc > 0 && nc < n, "daemon-incr: both modes must run\n");
  }
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    if (is_peer(p->kase) && !cfg->check) continue; /* reported, not fatal */
    VERDICT(p->ids_per_s > 0 && p->errors == 0 && p->p50_us > 0 &&
                p->p50_us <= p->p99_us && p->p99_us <= p->p999_us,
            "%s %s block %llu at %d threads: %.1f ids/s, %llu errors, p50 "
            "%.1f p99 %.1f p999 %.1f us\n",
            p->kase, p->mode, (unsigned long long)p->block, p->threads,
            p->ids_per_s, (unsigned long long)p->errors, p->p50_us, p->p99_us,
            p->p999_us);
  }
  /* the servers' CPU, where their processes were given, and the standby
   * and cluster lines beside the lone daemon, where they were started */
  for (size_t i = 0; i < res->np; i++) {
    const point *p = &res->p[i];
    if (cpu_wanted(cfg, p))
      VERDICT(p->has_cpu && p->cpu_ms_per_m >= 0,
              "%s %s at %d threads: no CPU time of its server\n", p->kase,
              p->mode, p->threads);
    if (is_ha_line(p) && cfg->daemon_pf &&
        bench_daemon_mode_selected(cfg, "prefetch"))
      VERDICT(p->has_ratio_daemon && p->ratio_daemon > 0,
              "daemon-incr %s at %d threads: no lone daemon to compare\n",
              p->mode, p->threads);
  }
  static const char *ha_mode[2] = {"standby", "cluster"};
  const char *ha_cfg[2] = {cfg->daemon_sb, cfg->daemon_cl};
  for (int k = 0; k < 2; k++) {
    if (ha_cfg[k] == NULL || !bench_case_selected(cfg, "daemon-incr") ||
        !bench_daemon_mode_selected(cfg, ha_mode[k]))
      continue;
    int n = 0;
    for (size_t i = 0; i < res->np; i++)
      n += strcmp(res->p[i].kase, "daemon-incr") == 0 &&
           strcmp(res->p[i].mode, ha_mode[k]) == 0;
    VERDICT(n > 0, "daemon-incr %s did not run\n", ha_mode[k]);
  }
  if (bench_case_selected(cfg, "tally-flush"))
    VERDICT(res->tally_writes == 1 && res->tally_flushed == 1,
            "tally-flush: %lld durable writes per tally per window (%llu "
            "records flushed), want 1\n",
            (long long)res->tally_writes,
            (unsigned long long)res->tally_flushed);
  /* a peer that did not run fails only the smoke run of build/bench-peers
   * (make bench-peers-smoke); make bench goes on without it */
  for (int i = 0; cfg->check && bench_has_peers && i < res->nskip; i++)
    VERDICT(false, "%s %s x%llu did not run: %s\n", res->skip[i].kase,
            res->skip[i].mode, (unsigned long long)res->skip[i].block,
            res->skip[i].why);
  for (size_t i = 0; i < res->nr; i++) {
    const restore_row *r = &res->r[i];
    VERDICT(r->ok && r->seconds > 0, "%s %s of %llu records\n", r->kase,
            r->mode, (unsigned long long)r->records);
  }
#undef VERDICT
  if (cfg->check) printf("bench-smoke: %d passed, %d failed\n", passed, failed);
  return failed;
}

int main(int argc, char **argv) {
  bench_cfg cfg = {0};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0)
      cfg.check = true;
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (parse_cfg(&cfg) != 0) return 2;
  char mach[512];
  machine(mach, sizeof mach);
  printf("logcounter %s benchmark on %s\n", lc_version(), mach);
  printf("memcached %s; %.3g s per case line: %d run(s) of %.3g s per "
         "point, median run reported; threads",
         cfg.memcached, cfg.seconds, cfg.runs,
         cfg.seconds / cfg.runs / cfg.nthreads);
  for (int i = 0; i < cfg.nthreads; i++)
    printf("%s%d", i ? "," : " ", cfg.threads[i]);
  if (cfg.nwide) {
    printf(" (memcached-incr, daemon-incr also");
    for (int i = 0; i < cfg.nwide; i++)
      printf("%s%d", i ? "," : " ", cfg.wide[i]);
    printf("; next, next_n x100/x1000 and the peers also those up to %d)",
           BENCH_PEER_WIDE_MAX);
  }
  if (bench_has_peers)
    printf("; the peers' runs are %.3g s",
           cfg.seconds / cfg.runs / cfg.nthreads * BENCH_PEER_SHARE);
  printf("; logs up to %llu records\n", (unsigned long long)cfg.records_max);
  fflush(stdout);

  results res = {0};
  res.tally_writes = -1;
  case_set cs;
  bool ok = cases_open(&cfg, &cs) == 0 && peer_cases_open(&cfg, &cs, &res) == 0;
  if (ok && cs.n > 0) ok = throughput(&cfg, &cs, &res);
  peer_cases_close(&cs);
  cases_close(&cs);
  if (ok && bench_case_selected(&cfg, "tally-flush"))
    ok = tally_run(&cfg, &res) == 0 && ok;
  if (ok && (bench_case_selected(&cfg, "restore") ||
             bench_case_selected(&cfg, "prune")))
    ok = restore_run(&cfg, &res, incr_rate(&res, 1)) == 0 && ok;
  print_table(&res);
  if (write_csv(&cfg, &res) != 0) ok = false;
  int failed = check(&cfg, &res, !cfg.check);
  if (fflush(stdout) != 0 || ferror(stdout)) ok = false;
  free(res.p);
  free(res.r);
  if (!cfg.check && failed)
    fprintf(stderr, "bench: %d measurement(s) had errors (see above)\n",
            failed);
  return ok && failed == 0 ? 0 : 1;
}
