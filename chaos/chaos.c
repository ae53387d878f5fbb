/*
 * chaos.c - the chaos harness (make chaos): many clients against a few
 * counters and tallies while a nemesis injects faults on a seeded,
 * reproducible schedule; then the checker's report.
 *
 *   chaos run [options]     the driver (below; --help)
 *   chaos worker ...        the embedded owner (worker.c), run by the driver
 *   chaos dclient ...       logcounterd's clients (dclient.c), run by it
 *
 * The driver runs until both --seconds and --min-ids are reached and the
 * first round of faults (one of each kind) is injected, or --max-seconds,
 * heals every fault, lets the clients run a moment more,
 * stops everything and checks.  With --standby logcounterd is a primary
 * and its standby (procs.c), two more faults lose or partition the
 * primary and promote the standby (nemesis.c), and the checker reads the
 * surviving primary's log (logged.c).  With --cluster logcounterd is
 * three nodes on etcd (cluster.c) and the faults are the cluster's.
 * Exit status: 0 when the history is valid
 * (no duplicate, nothing out of order, every acknowledged block logged,
 * no corrupt record, tallies within their bounds, no owner that died by
 * itself, no owner's log still failed after the faults ended, no
 * sanitizer report), 1 when not, 2 on a usage error.
 */
#include "chaos.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

void ch_note(ch_run *r, const char *fmt, ...) {
  size_t used = strlen(r->findings);
  if (used + 4 >= sizeof r->findings) return;
  if (used)
    used +=
        (size_t)snprintf(r->findings + used, sizeof r->findings - used, "; ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->findings + used, sizeof r->findings - used, fmt, ap);
  va_end(ap);
  if (r->verbose) fprintf(stderr, "chaos: %s\n", r->findings + used);
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: chaos run [options]\n"
      "       chaos model DIR   (the power-cut windows' premise on this\n"
      "                         LevelDB, in the new empty directory DIR)\n"
      "\n"
      "Runs the embedded worker (library threads: counters e0..e2, tallies t0,\n"
      "t1) and logcounterd with client processes (counters d0, d1) against a\n"
      "private memcached while faults are injected on a seeded schedule, then\n"
      "checks every acknowledged id and tally change and prints a report.\n"
      "\n"
      "  --seconds N       run at least this long (default 180)\n"
      "  --min-ids N       and until this many ids were acknowledged (default 0)\n"
      "                    and one fault of each kind was injected\n"
      "  --max-seconds N   but never longer (default 4 x seconds + 600)\n"
      "  --seed N          the fault schedule's seed (default: from the clock;\n"
      "                    the report prints it: the same seed replays the same\n"
      "                    faults in the same order with the same timing)\n"
      "  --baseline seed   the embedded counters use the original, UNSAFE\n"
      "                    algorithm (set instead of add, no floor): the checker\n"
      "                    must find duplicates\n"
      "  --only KIND,...   inject only these kinds: memcached-kill,\n"
      "                    memcached-flush, memcached-freeze, owner-kill,\n"
      "                    pause-before-log, log-write-fail, power-cut,\n"
      "                    memcached-rewind, owner-restart, prune, disk-full,\n"
      "                    io-error; with --standby also primary-loss, partition;\n"
      "                    with --cluster its own (below) and the memcached ones\n"
      "  --threads N       embedded client threads (default 6)\n"
      "  --dclients N      daemon client processes, 1..8 (default 2)\n"
      "  --conns N         connections per daemon client (default 3)\n"
      "  --servers N       memcached servers, 1..3 (default 1); with several the\n"
      "                    counters spread over them (ketama) and each memcached\n"
      "                    fault hits one server (seeded)\n"
      "  --timeout MS      memcached timeout of the owners (default 300)\n"
      "  --dir DIR         the run directory (default: a new /tmp/chaos.XXXXXX,\n"
      "                    removed after a valid run)\n"
      "  --keep            keep the run directory\n"
      "  --schedule FILE   write the faults, one per line, as injected\n"
      "  --daemon PATH     logcounterd (default: next to this program)\n"
      "  --shim PATH       the LD_PRELOAD shim (default: chaos_powercut.so next\n"
      "                    to this program)\n"
      "  --faultfs PATH    the disk-fault shim, preloaded after it (default:\n"
      "                    tests/libfaultfs.so next to this program)\n"
      "  --standby         logcounterd runs as a primary (--replication-listen,\n"
      "                    --admin-socket) and its standby (--standby-of, its\n"
      "                    own directory); the daemon clients know both ports\n"
      "                    and move to the other on ESTANDBY, ENOSTANDBY or a\n"
      "                    lost connection; two more fault kinds: primary-loss\n"
      "                    (kill the primary, delete its directory, promote the\n"
      "                    standby, start a fresh one) and partition (stop the\n"
      "                    primary, promote the standby, resume the old one a\n"
      "                    moment, then kill it, start a fresh standby); the\n"
      "                    daemon's disk and power faults go to the embedded\n"
      "                    worker; the checker reads the surviving primary's log\n"
      "  --standby-timeout DURATION  the daemons' --standby-timeout (default:\n"
      "                    theirs, 2s)\n"
      "  --cli PATH        logcounter, for promote (default: next to this program)\n"
      "  --cluster         logcounterd runs as three nodes on a one-member etcd\n"
      "                    (--etcd, --cluster, --node, --leader-ttl), each\n"
      "                    reaching etcd through a TCP proxy of its own; the\n"
      "                    daemon clients use every node (a standby forwards to\n"
      "                    the primary) and move to the next on any error; the\n"
      "                    faults are primary-kill, primary-freeze (SIGSTOP past\n"
      "                    its lease), primary-disk-loss (killed, its log\n"
      "                    directory deleted, memcached flushed), etcd-cut (the\n"
      "                    primary's proxy cut), standby-kill (the synchronous\n"
      "                    standby) and etcd-restart; --only may add the\n"
      "                    memcached kinds; the report counts the failovers and\n"
      "                    each one's outage; the checker reads the last\n"
      "                    primary's log (needs etcd and python3)\n"
      "  --leader-ttl DURATION  the nodes' --leader-ttl (default 2s)\n"
      "  --cluster-tool PATH  the proxy (default: tests/daemon/cluster_tool.py\n"
      "                    of the source tree above this program)\n"
      "  -v, --verbose     tell each fault as it happens\n");
}

static int parse(ch_run *r, int argc, char **argv) {
  static const struct option opts[] = {{"seconds", 1, 0, 's'},
                                       {"min-ids", 1, 0, 'm'},
                                       {"max-seconds", 1, 0, 'M'},
                                       {"seed", 1, 0, 'S'},
                                       {"baseline", 1, 0, 'b'},
                                       {"threads", 1, 0, 't'},
                                       {"dclients", 1, 0, 'D'},
                                       {"conns", 1, 0, 'c'},
                                       {"timeout", 1, 0, 'T'},
                                       {"dir", 1, 0, 'd'},
                                       {"keep", 0, 0, 'k'},
                                       {"schedule", 1, 0, 'o'},
                                       {"daemon", 1, 0, 'L'},
                                       {"shim", 1, 0, 'P'},
                                       {"faultfs", 1, 0, 'F'},
                                       {"verbose", 0, 0, 'v'},
                                       {"only", 1, 0, 'O'},
                                       {"servers", 1, 0, 'N'},
                                       {"standby", 0, 0, 'B'},
                                       {"cli", 1, 0, 'C'},
                                       {"standby-timeout", 1, 0, 'W'},
                                       {"cluster", 0, 0, 'K'},
                                       {"leader-ttl", 1, 0, 'l'},
                                       {"cluster-tool", 1, 0, 'X'},
                                       {"help", 0, 0, 'h'},
                                       {0, 0, 0, 0}};
  r->seconds = 180;
  r->threads = 6;
  r->dclients = 2;
  r->conns = 3;
  r->nmc = 1;
  r->timeout_ms = 300;
  r->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 16);
  r->seed %= 1000000000;
  char exe[400];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 2;
  exe[n] = '\0';
  snprintf(r->self, sizeof r->self, "%s", exe);
  char *slash = strrchr(exe, '/');
  *slash = '\0';
  snprintf(r->daemon, sizeof r->daemon, "%s/logcounterd", exe);
  snprintf(r->shim, sizeof r->shim, "%s/chaos_powercut.so", exe);
  snprintf(r->faultfs, sizeof r->faultfs, "%s/tests/libfaultfs.so", exe);
  snprintf(r->cli, sizeof r->cli, "%s/logcounter", exe);
  snprintf(r->tool, sizeof r->tool, "%s/../tests/daemon/cluster_tool.py",
           exe);
  r->leader_ttl = "2s";
  int c;
  optind = 2;
  while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
    switch (c) {
    case 's': r->seconds = atoi(optarg); break;
    case 'm': r->min_ids = strtoull(optarg, NULL, 10); break;
    case 'M': r->max_seconds = atoi(optarg); break;
    case 'S': r->seed = strtoull(optarg, NULL, 10); break;
    case 'b':
      if (strcmp(optarg, "seed") != 0) {
        fprintf(stderr, "chaos: --baseline: only 'seed' exists\n");
        return 2;
      }
      r->baseline = true;
      break;
    case 't': r->threads = atoi(optarg); break;
    case 'D': r->dclients = atoi(optarg); break;
    case 'c': r->conns = atoi(optarg); break;
    case 'N': r->nmc = atoi(optarg); break;
    case 'T': r->timeout_ms = atoi(optarg); break;
    case 'd': snprintf(r->dir, sizeof r->dir, "%s", optarg); break;
    case 'k': r->keep = true; break;
    case 'o': r->schedule_out = optarg; break;
    case 'L': snprintf(r->daemon, sizeof r->daemon, "%s", optarg); break;
    case 'P': snprintf(r->shim, sizeof r->shim, "%s", optarg); break;
    case 'F': snprintf(r->faultfs, sizeof r->faultfs, "%s", optarg); break;
    case 'v': r->verbose = true; break;
    case 'B': r->standby = true; break;
    case 'C': snprintf(r->cli, sizeof r->cli, "%s", optarg); break;
    case 'W': r->standby_timeout = optarg; break;
    case 'K': r->cluster = true; break;
    case 'l': r->leader_ttl = optarg; break;
    case 'X': snprintf(r->tool, sizeof r->tool, "%s", optarg); break;
    case 'O':
      for (char *save, *k = strtok_r(optarg, ",", &save); k;
           k = strtok_r(NULL, ",", &save)) {
        int kind = ch_fault_kind(k);
        if (kind < 0) {
          fprintf(stderr, "chaos: --only: no fault kind '%s'\n", k);
          return 2;
        }
        r->only |= 1u << kind;
      }
      break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); return 2;
    }
  }
  if (optind != argc || r->seconds < 1 || r->threads < 1 || r->threads > 255 ||
      r->dclients < 1 || r->dclients > 8 || r->conns < 1 || r->conns > 255 ||
      r->timeout_ms < 50 || r->nmc < 1 || r->nmc > CH_MC_MAX) {
    usage(stderr);
    return 2;
  }
  if (!r->standby && (r->only & CH_STANDBY_KINDS)) {
    fprintf(stderr, "chaos: --only: primary-loss and partition need "
                    "--standby\n");
    return 2;
  }
  if (r->cluster && (r->standby || r->baseline)) {
    fprintf(stderr, "chaos: --cluster goes with neither --standby nor "
                    "--baseline\n");
    return 2;
  }
  if (r->cluster && (r->only & ~(CH_CLUSTER_KINDS | CH_CLUSTER_ALSO))) {
    fprintf(stderr, "chaos: --only: with --cluster only the cluster's kinds "
                    "and the memcached ones\n");
    return 2;
  }
  if (!r->cluster && (r->only & CH_CLUSTER_KINDS)) {
    fprintf(stderr, "chaos: --only: the cluster's kinds need --cluster\n");
    return 2;
  }
  if (r->cluster && access(r->tool, R_OK) != 0) {
    fprintf(stderr, "chaos: cannot find %s (--cluster-tool)\n", r->tool);
    return 2;
  }
  if (r->standby && r->baseline) {
    fprintf(stderr, "chaos: --standby and --baseline do not go together\n");
    return 2;
  }
  if (r->standby && access(r->cli, X_OK) != 0) {
    fprintf(stderr, "chaos: cannot find %s (make chaos builds it)\n", r->cli);
    return 2;
  }
  if (r->max_seconds <= 0) r->max_seconds = 4 * r->seconds + 600;
  if (r->max_seconds < r->seconds) r->max_seconds = r->seconds;
  if (access(r->daemon, X_OK) != 0 || access(r->shim, R_OK) != 0 ||
      access(r->faultfs, R_OK) != 0) {
    fprintf(stderr,
            "chaos: cannot find %s, %s or %s (make chaos builds them)\n",
            r->daemon, r->shim, r->faultfs);
    return 2;
  }
  return 0;
}

static int setup(ch_run *r) {
  if (!r->dir[0]) {
    snprintf(r->dir, sizeof r->dir, "/tmp/chaos.XXXXXX");
    if (mkdtemp(r->dir) == NULL) return -1;
  } else if (mkdir(r->dir, 0700) != 0 && errno != EEXIST) {
    return -1;
  }
  char abs[PATH_MAX];
  if (realpath(r->dir, abs) == NULL || strlen(abs) >= sizeof r->dir)
    return -1; /* absolute: the admin sockets need it */
  snprintf(r->dir, sizeof r->dir, "%s", abs);
  const char *sub[] = {"emb", "lcd", "emb.bak", "lcd.bak", "rec", "hits"};
  char p[1024];
  for (size_t i = 0; i < sizeof sub / sizeof *sub; i++) {
    ch_path(r, p, sizeof p, sub[i]);
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
  }
  const char *fault[] = {"emb.fault", "lcd.fault"}; /* faultfs: off */
  for (size_t i = 0; i < 2; i++) {
    ch_path(r, p, sizeof p, fault[i]);
    FILE *f = fopen(p, "w");
    if (f == NULL || fputs("off\n", f) < 0 || fclose(f) != 0) return -1;
  }
  ch_path(r, p, sizeof p, "emb.ctl");
  r->emb_ctl = ch_ctl_map(p, true);
  ch_path(r, p, sizeof p, "lcd.ctl");
  r->lcd_ctl = ch_ctl_map(p, true);
  ch_path(r, p, sizeof p, "dcl.ctl");
  r->dcl_ctl = ch_ctl_map(p, true);
  if (!r->emb_ctl || !r->lcd_ctl || !r->dcl_ctl) return -1;
  for (int s = 0; s < r->nmc; s++) {
    bool dup;
    do {
      r->mc_port[s] = ch_port_free();
      dup = false;
      for (int t = 0; t < s; t++) dup |= r->mc_port[t] == r->mc_port[s];
    } while (dup);
    if (r->mc_port[s] <= 0) return -1;
  }
  bool dup;
  do {
    r->lcd_port = ch_port_free();
    dup = false;
    for (int s = 0; s < r->nmc; s++) dup |= r->lcd_port == r->mc_port[s];
  } while (dup);
  if (r->lcd_port <= 0) return -1;
  if (r->cluster) { /* every node's three ports and etcd's two, distinct */
    int *cp[11] = {&r->cl_port[0], &r->cl_port[1], &r->cl_port[2],
                   &r->cl_repl[0], &r->cl_repl[1], &r->cl_repl[2],
                   &r->cl_xport[0], &r->cl_xport[1], &r->cl_xport[2],
                   &r->etcd_port, &r->etcd_peer};
    for (int k = 0; k < 11; k++) {
      do {
        *cp[k] = ch_port_free();
        dup = *cp[k] <= 0 || *cp[k] == r->lcd_port;
        for (int s = 0; s < r->nmc; s++) dup |= *cp[k] == r->mc_port[s];
        for (int j = 0; j < k; j++) dup |= *cp[k] == *cp[j];
      } while (dup && *cp[k] > 0);
      if (*cp[k] <= 0) return -1;
    }
    r->cl_prim = -1;
    /* etcd fsyncs every write: on tmpfs when there is one */
    snprintf(r->etcd_dir, sizeof r->etcd_dir, "/dev/shm/chaos-etcd.XXXXXX");
    if (access("/dev/shm", W_OK) != 0 || mkdtemp(r->etcd_dir) == NULL) {
      ch_path(r, r->etcd_dir, sizeof r->etcd_dir, "etcd");
      if (mkdir(r->etcd_dir, 0700) != 0 && errno != EEXIST) return -1;
    }
    return 0;
  }
  if (!r->standby) return 0;
  /* two slots' data and replication ports, all distinct */
  int *ports[4] = {&r->sb_port[0], &r->sb_port[1], &r->sb_repl[0],
                   &r->sb_repl[1]};
  r->sb_port[0] = r->lcd_port;
  for (int k = 1; k < 4; k++) {
    do {
      *ports[k] = ch_port_free();
      dup = *ports[k] <= 0;
      for (int s = 0; s < r->nmc; s++) dup |= *ports[k] == r->mc_port[s];
      for (int j = 0; j < k; j++) dup |= *ports[k] == *ports[j];
    } while (dup && *ports[k] > 0);
    if (*ports[k] <= 0) return -1;
  }
  r->prim = 0;
  return 0;
}

static uint64_t acked(const ch_run *r) {
  return atomic_load(&r->emb_ctl->ids_acked) +
         atomic_load(&r->dcl_ctl->ids_acked);
}

/* Waits ms, reaping children; false when the run should end (not before
 * the first round is done, unless --max-seconds or trouble). */
static bool wait_gap(ch_run *r, int64_t ms, bool first_round,
                     int64_t *next_progress) {
  int64_t until = ch_now_ns() + ms * 1000000;
  for (;;) {
    ch_reap(r);
    int64_t now = ch_now_ns();
    double el = (double)(now - r->start_ns) / 1e9;
    if (interrupted || el >= r->max_seconds || r->unexpected >= 20)
      return false;
    if (el >= r->seconds && acked(r) >= r->min_ids && !first_round)
      return false;
    if (now >= *next_progress) {
      fprintf(stderr, "chaos: %.0f s, %llu ids acknowledged, %zu faults\n", el,
              (unsigned long long)acked(r), r->nfaults);
      *next_progress = now + 10 * 1000000000ll;
    }
    if (now >= until) return true;
    ch_sleep_ms((until - now) / 1000000 < 50 ? (until - now) / 1000000 + 1
                                             : 50);
  }
}

/* A sanitizer build's report in any child's log is a finding. */
static void scan_logs(ch_run *r) {
  static const char *logs[] = {"emb.log",     "lcd.log", "dclient.log",
                               "promote.log", "n0.log",  "n1.log",
                               "n2.log"};
  /* every kind's report: "ERROR: AddressSanitizer", "ERROR:
   * UndefinedBehaviorSanitizer: SEGV", "WARNING: ThreadSanitizer",
   * "ERROR: ThreadSanitizer", LeakSanitizer's, MemorySanitizer's, and
   * UBSan's "runtime error:" lines */
  static const char *marks[] = {"Sanitizer: ", "Sanitizer:DEADLYSIGNAL",
                                "runtime error:"};
  char path[1024], line[1024];
  for (size_t i = 0; i < sizeof logs / sizeof *logs; i++) {
    ch_path(r, path, sizeof path, logs[i]);
    FILE *f = fopen(path, "r");
    unsigned found = 0;
    while (f && fgets(line, sizeof line, f))
      for (size_t m = 0; m < sizeof marks / sizeof *marks; m++)
        if (strstr(line, marks[m])) found++;
    if (f) fclose(f);
    if (found) {
      ch_note(r, "%u sanitizer reports in %s", found, logs[i]);
      r->unexpected++;
    }
  }
}

static void remove_tree(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "chaos: cannot remove %s\n", dir);
}

/* After the heal: a failed log comes back by itself (the library's
 * reopen, whose backoff is at most 5 s), so an owner whose log is still
 * failed 10 s after every fault ended is stuck (a finding: the log
 * refuses everything for good).  The embedded worker's flusher reports
 * its log's state every 100 ms or so; logcounterd's stats say it. */
static void logs_back(ch_run *r) {
  bool emb = false, lcd = false;
  for (int i = 0; i < 200 && !(emb && lcd); i++) {
    if (i) ch_sleep_ms(50);
    ch_reap(r);
    emb = r->emb_pid <= 0 || (atomic_load(&r->emb_ctl->ready) &&
                              !atomic_load(&r->emb_ctl->log_failed));
    lcd = lcd || r->cluster || r->lcd_pid <= 0 || ch_lcd_log_ok(r);
  }
  if (!emb) ch_note(r, "the embedded worker's log was still failed 10 s "
                       "after every fault ended");
  if (!lcd) ch_note(r, "logcounterd's log was still failed 10 s after every "
                       "fault ended");
  r->stuck_logs += !emb + !lcd;
}

static int run(ch_run *r) {
  if (setup(r) != 0) {
    fprintf(stderr, "chaos: cannot set up %s: %s\n", r->dir, strerror(errno));
    return 2;
  }
  char mc[160];
  ch_mc_config(r, mc, sizeof mc);
  fprintf(stderr,
          "chaos: seed %llu, run directory %s, memcached %s, "
          "logcounterd port %d\n",
          (unsigned long long)r->seed, r->dir, mc, r->lcd_port);
  if (r->cluster)
    fprintf(stderr,
            "chaos: cluster mode: data ports %d %d %d, etcd port %d (its "
            "data in %s)\n",
            r->cl_port[0], r->cl_port[1], r->cl_port[2], r->etcd_port,
            r->etcd_dir);
  if (r->standby)
    fprintf(stderr,
            "chaos: standby mode: data ports %d and %d, replication ports "
            "%d and %d\n",
            r->sb_port[0], r->sb_port[1], r->sb_repl[0], r->sb_repl[1]);
  FILE *sched = NULL;
  if (r->schedule_out && (sched = fopen(r->schedule_out, "w")) == NULL) {
    fprintf(stderr, "chaos: cannot write %s\n", r->schedule_out);
    return 2;
  }
  int mc_failed = 0;
  for (int s = 0; s < r->nmc; s++) mc_failed |= ch_start_memcached(r, s);
  if (mc_failed || ch_start_lcd(r) || (r->standby && ch_start_sby(r, true)) ||
      ch_start_emb(r) || ch_start_dclients(r)) {
    fprintf(stderr, "chaos: cannot start: %s (see %s/*.log)\n", r->findings,
            r->dir);
    ch_stop_all(r);
    return 2;
  }
  for (int i = 0; i < 500 && !atomic_load(&r->emb_ctl->ready); i++) {
    ch_reap(r);
    ch_sleep_ms(20);
  }
  r->start_ns = ch_now_ns();
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  r->wall_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec - r->start_ns;
  int64_t next_progress = r->start_ns + 10 * 1000000000ll;
  uint64_t rng = r->seed;
  /* A loaded machine or a sanitizer build makes restarts slow: every kind
   * is still injected once, however long the first round takes. */
  size_t kinds = 0;
  for (int k = 0; k < F_KINDS; k++)
    kinds += (!r->only || (r->only >> k & 1)) &&
             (r->cluster ? (CH_CLUSTER_KINDS >> k & 1) ||
                               (r->only && (CH_CLUSTER_ALSO >> k & 1))
                         : (r->standby || !(CH_STANDBY_KINDS >> k & 1)) &&
                               !(CH_CLUSTER_KINDS >> k & 1));
  for (size_t i = 0;; i++) {
    ch_fault f;
    int64_t gap;
    ch_schedule_next(&rng, i, r->timeout_ms, r->only, r->standby, r->cluster,
                     &f, &gap);
    if (!wait_gap(r, gap, i < kinds, &next_progress)) break;
    ch_inject(r, &f);
    if (r->nfaults == r->cap) {
      r->cap = r->cap ? 2 * r->cap : 256;
      r->faults = realloc(r->faults, r->cap * sizeof *r->faults);
    }
    r->faults[r->nfaults++] = f;
    const char *mode = ch_fault_mode(&f);
    char why[128] = "";
    if (f.missed)
      snprintf(why, sizeof why, " (not carried out: %s)", ch_missed_why(&f));
    if (sched)
      fprintf(sched, "%zu +%lldms %s%s%s %lldms back %d server %d%s%s%s\n", i,
              (long long)gap, ch_fault_name(f.kind), f.target ? " " : "",
              ch_target_name(f.target), (long long)f.arg_ms, f.back, f.server,
              mode ? " shim " : "", mode ? mode : "", why);
    if (r->verbose)
      fprintf(stderr, "chaos: %6.1f s %s %s %lld ms%s%s%s\n",
              (double)(f.t_ns - r->start_ns) / 1e9, ch_fault_name(f.kind),
              ch_target_name(f.target), (long long)f.arg_ms, mode ? " " : "",
              mode ? mode : "", why);
  }
  if (sched) fclose(sched);
  int64_t elapsed = ch_now_ns() - r->start_ns;

  /* heal, let the clients see it, then stop them and their owners */
  ch_heal(r);
  logs_back(r);
  ch_sleep_ms(1000);
  ch_reap(r);
  /* the clients finish the request in flight: no id left unacknowledged
   * by the harness itself */
  for (int i = 0; i < r->dclients; i++)
    if (r->dcl_pid[i] > 0) kill(r->dcl_pid[i], SIGTERM);
  /* --cluster: a pipelined batch of 1000 through a standby is forwarded
   * one request at a time (lcd_cluster_forward, blocking its worker), and
   * took more than 10 s at the end of runs here: a minute */
  int limit = r->cluster ? 1200 : 200;
  for (int i = 0; i < r->dclients; i++) {
    int waited = 0;
    while (r->dcl_pid[i] > 0 && waitpid(r->dcl_pid[i], NULL, WNOHANG) == 0 &&
           waited++ < limit)
      ch_sleep_ms(50);
    if (waited > limit) {
      ch_note(r, "daemon client %d did not finish in %d s", i, limit / 20);
      ch_kill_wait(&r->dcl_pid[i], SIGKILL);
    }
    r->dcl_pid[i] = 0;
  }
  if (r->emb_pid > 0) {
    kill(r->emb_pid, SIGTERM);
    int status = 0, waited = 0;
    while (waitpid(r->emb_pid, &status, WNOHANG) == 0 && waited++ < 600)
      ch_sleep_ms(50);
    if (waited > 600) {
      ch_note(r, "the embedded worker did not finish in 30 s");
      ch_kill_wait(&r->emb_pid, SIGKILL);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ch_note(r, "the embedded worker's last run failed (see emb.log)");
      r->unexpected++;
    }
    r->emb_pid = 0;
  }
  ch_lcd_log_stats(r);
  ch_kill_wait(&r->lcd_pid, SIGTERM);
  ch_kill_wait(&r->sby_pid, SIGTERM); /* after its primary: its last flush */
  if (r->cluster) ch_cl_stop(r);
  scan_logs(r);

  int rc = ch_check(r, elapsed); /* memcached still up: it opens logs */
  ch_stop_all(r);
  if (interrupted) rc = 1;
  if (rc == 0 && !r->keep)
    remove_tree(r->dir);
  else
    fprintf(stderr, "chaos: run directory kept: %s\n", r->dir);
  return rc;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "worker") == 0)
    return ch_worker_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "dclient") == 0)
    return ch_dclient_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "model") == 0)
    return ch_model_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "model-write") == 0)
    return ch_model_write_main(argc, argv);
  if (argc < 2 || strcmp(argv[1], "run") != 0) {
    usage(argc >= 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
    return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  static ch_run r;
  int rc = parse(&r, argc, argv);
  if (rc) return rc;
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return run(&r);
}
