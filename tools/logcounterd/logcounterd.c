/*
 * logcounterd.c - the LogCounter service: owns one log directory and hands
 * out ids to any memcached client ("incr NAME n"), so that processes in any
 * language share counters without each opening the log.
 *
 * This file: logging, signals (libevent signal
 * events, so the handlers run in the loop, not in signal context), the
 * idle sweep, the pidfile, startup and the orderly shutdown; the
 * settings' defaults and the options are lcd_options.c's.  lcd.h
 * describes the threads and lists the other files.
 *
 * Shutdown (SIGTERM/SIGINT): stop accepting, stop reading, answer every
 * request already read, close each connection once its replies are
 * written (at most --drain-timeout seconds; a second signal cuts it
 * short), let the workers finish, stop the tally flusher, flush every
 * tally once more (with a sweep), lc_close (which records the exact last
 * values and syncs), remove the pidfile and the socket, exit 0 (1 if the
 * final flush or the close failed).
 * Under systemd (Type=notify, dist/logcounterd.service.in): READY=1 where
 * "ready" is logged, STOPPING=1 at the first signal (lcd_notify.c).
 * SIGKILL needs nothing here: the library's synced reservation keeps the
 * ids unique after any crash.
 */
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_counters.h"
#include "lcd_flush.h"
#include "lcd_pool.h"
#include "lcd_server.h"
#include "lcd_settings.h"
#include "lcd_cluster.h"
#include "lcd_metrics.h"
#include "lcd_notify.h"
#include "lcd_tls.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
#define LCD_LIMIT_MAX 1000000000ULL /* --max-counters, --max-tallies */
#define DEFAULT_LISTEN "127.0.0.1:11311"
#define LCD_STR(x) #x
#define LCD_XSTR(x) LCD_STR(x) /* a number macro as text, for --help */
#define DEFAULT_MEMCACHED "--SERVER=127.0.0.1:11211"

/* ---- logging ----------------------------------------------------------- */

void lcd_log(const lcd_settings *set, int level, const char *fmt, ...) {
  if (set && level > set->verbose) return;
  char when[32];
  time_t t = time(NULL);
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s %s[%ld]: %s\n", when, LCD_PROG, (long)getpid(), msg);
}

time_t lcd_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

/* ---- signals and timers ------------------------------------------------ */

/* The drain timeout or a second signal: every socket is closed now. */
static void close_everything(lcd_server *s) {
  lcd_loops_close(s);
  event_base_loopbreak(s->loops[0].base);
}

static void drain_timeout_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_server *s = arg;
  lcd_log(s->set, 0, "drain timeout: closing %d remaining connections",
          atomic_load(&s->nopen));
  close_everything(s);
}

static const char *signame(int sig) {
  return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
}

/* A SIGTERM or SIGINT before the event loop's handlers are in place
 * (the cluster join may wait for etcd as long as it is away, the log's
 * open for its files): noted, and the start ends at its next step with a
 * clean exit, the log closed if it was open, instead of the process dying
 * of the signal. */
static volatile sig_atomic_t early_signal;

static void early_cb(int sig) {
  early_signal = sig;
  lcd_cluster_interrupt();
}

static void early_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = early_cb; /* no SA_RESTART: a wait is cut short */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

/* 1 (and says so) when a signal came while starting: the start ends. */
static int stopped_early(const lcd_settings *set) {
  if (!early_signal) return 0;
  lcd_log(set, 0, "%s while starting: not starting; exiting",
          signame(early_signal));
  return 1;
}

static void signal_cb(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  lcd_server *s = arg;
  if (sig == SIGHUP) {
    lcd_auth_reload(); /* --auth-file, --rights-file (lcd_auth.c) */
    lcd_tls_reload(s); /* the TLS certificates; logs what it did */
    return;
  }
  if (s->draining) {
    lcd_log(s->set, 0, "%s again: closing every connection now",
            signame((int)sig));
    close_everything(s);
    return;
  }
  s->draining = 1;
  lcd_log(s->set, 0, "%s: no new connections; answering %d open ones",
          signame((int)sig), atomic_load(&s->nopen));
  lcd_notify("STOPPING=1\nSTATUS=%s: draining %d connections (at most %d s)",
             signame((int)sig), atomic_load(&s->nopen),
             s->set->drain_timeout);
  lcd_stop_listening(s);
  struct timeval tv = {s->set->drain_timeout, 0};
  event_base_once(s->loops[0].base, -1, EV_TIMEOUT, drain_timeout_cb, s, &tv);
  lcd_loops_drain(s);
}

/* ---- pidfile ----------------------------------------------------------- */

static int write_pidfile(const char *path) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, buf, (size_t)n) != n || close(fd) != 0) {
    fprintf(stderr, LCD_PROG ": cannot write the pidfile '%s': %s\n", path,
            strerror(errno));
    return EXIT_RUNTIME;
  }
  return 0;
}

/* Removes the pidfile if it still names this process. */
static void remove_pidfile(const char *path) {
  char buf[32] = "";
  FILE *f = fopen(path, "r");
  if (!f) return;
  int mine = fgets(buf, sizeof buf, f) && atol(buf) == (long)getpid();
  fclose(f);
  if (mine) unlink(path);
}

/* ---- main -------------------------------------------------------------- */

/* Makes room for max_connections descriptors if the hard limit allows. */
static void raise_fd_limit(const lcd_settings *set) {
  struct rlimit rl;
  rlim_t want = (rlim_t)set->max_connections + 64;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want) return;
  rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
  setrlimit(RLIMIT_NOFILE, &rl);
}

static int open_log(lcd_server *s, char *owner, size_t size) {
  lc_options o;
  lc_options_init(&o);
  o.memcached = s->set->memcached;
  o.db_path = s->set->db;
  o.durability = s->set->durability;
  o.prefetch = s->set->prefetch;
  o.timeout_ms = s->set->timeout_ms;
  o.max_counters = s->set->max_counters;
  o.max_tallies = s->set->max_tallies;
  o.idle_evict_ms = s->set->idle_evict_us / 1000;
  o.admin_socket = s->set->admin_socket;
  o.admin_socket_mode = (unsigned)s->set->admin_mode;
  o.replication_listen = s->set->replication_listen;
  o.standby_of = s->set->standby_of;
  o.replication_secret = s->set->repl_secret[0] ? s->set->repl_secret : NULL;
  o.standby_mode = s->set->standby_mode;
  if (lcd_settings_repl_tls(s->set)) { /* replication over mutual TLS (repl_tls.c) */
    o.tls_ca = s->set->tls_ca;
    o.tls_cert = s->set->tls_cert;
    o.tls_key = s->set->tls_key;
  }
  o.standby_timeout_ms = (int)s->set->standby_timeout_ms;
  o.retain_records = s->set->retain_records;
  o.retain_age_us = s->set->retain_age_us;
  if (o.retain_records || o.retain_age_us)
    o.retain_interval_ms = s->set->retain_interval_ms;
  /* a memcached connection for every thread that calls the library at
   * once (loops, workers, the flusher, the prefetcher): a call that waits
   * for one gives up after the timeout */
  o.pool_size = s->set->threads + s->set->workers + 2;
  if (o.pool_size < 16) o.pool_size = 16;
  snprintf(owner, size, LCD_PROG " (pid %ld)", (long)getpid());
  o.owner = owner;
  if (!s->set->coalesce)
    o.batch_max = 1; /* one memcached increment per lc_next_n */
  int rc = lc_open(&o, &s->lc);
  if (rc) {
    const char *d = lc_last_detail();
    int mc = rc == LC_ECONFIG || rc == LC_EMEMCACHED || rc == LC_ETIMEDOUT;
    fprintf(stderr, LCD_PROG ": cannot %s '%s': %s%s%s%s\n",
            mc ? "connect to memcached" : "open the log",
            mc ? s->set->memcached : s->set->db, lc_strerror(rc),
            *d ? " (" : "", d, *d ? ")" : "");
    s->lc = NULL;
    return EXIT_RUNTIME;
  }
  for (int i = 0; i < s->nloops; i++) s->loops[i].lc = s->lc;
  return 0;
}

/* glibc's malloc arenas: at most LCD_ARENAS unless MALLOC_ARENA_MAX says
 * otherwise.  Its default (8 a CPU) spreads the counters, made by the
 * workers' first uses, over as many arenas, each with its own slack:
 * 300,000 new names cost 294 B a counter of RssAnon with it, 275 B with
 * two (bench/stop.sh; docs/benchmarks.md, with the CPU a request of
 * either). */
#define LCD_ARENAS 2
static void limit_arenas(void) {
  if (getenv("MALLOC_ARENA_MAX") == NULL) mallopt(M_ARENA_MAX, LCD_ARENAS);
}

int main(int argc, char **argv) {
  limit_arenas();
  lcd_settings set;
  lcd_settings_init(&set);
  int status = lcd_cluster_options(&argc, argv); /* --etcd ... */
  if (!status) status = lcd_options_parse(&set, argc, argv);
  if (status == -1)
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : EXIT_RUNTIME;
  if (!status) status = lcd_cluster_check(&set);
  if (status) return status;

  lcd_server s;
  memset(&s, 0, sizeof s);
  s.set = &set;
  signal(SIGPIPE, SIG_IGN);
  early_handlers();
  raise_fd_limit(&set);
  char owner[64];
  struct event *sigs[3] = {NULL, NULL, NULL};
  int pidfile_written = 0;
  if (evthread_use_pthreads() != 0 || lcd_loops_init(&s) != 0) {
    fprintf(stderr, LCD_PROG ": cannot set up libevent\n");
    status = EXIT_RUNTIME;
    goto out;
  }
  struct event_base *base = s.loops[0].base;
  if ((status = lcd_tls_init(&s)) || (status = lcd_listen(&s)) ||
      (status = lcd_cluster_join(&set)) || stopped_early(&set) ||
      (status = open_log(&s, owner, sizeof owner)) || stopped_early(&set) ||
      (status = lcd_cluster_start(&s)) || stopped_early(&set))
    goto out;
  if (set.pidfile) {
    if ((status = write_pidfile(set.pidfile))) goto out;
    pidfile_written = 1;
  }
  const int signums[3] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    sigs[i] = evsignal_new(base, signums[i], signal_cb, &s);
    if (!sigs[i] || event_add(sigs[i], NULL) != 0) {
      fprintf(stderr, LCD_PROG ": cannot set up signal handling\n");
      status = EXIT_RUNTIME;
      goto out;
    }
  }
  /* one that came after the last check, before libevent's took over:
   * the event loop's own handling (the drain) */
  if (early_signal) event_active(sigs[early_signal == SIGINT], EV_SIGNAL, 1);
  s.started = lcd_now();
  s.started_wall = time(NULL);
  if ((status = lcd_metrics_start(&s))) goto out; /* before the threads */
  if (lcd_pool_start(&s) != 0 || lcd_flusher_start(&s) != 0 ||
      lcd_loops_start(&s) != 0) {
    fprintf(stderr, LCD_PROG ": cannot start the threads\n");
    status = EXIT_RUNTIME;
    goto out;
  }
  char pbuf[24];
  lcd_log(&set, 0,
          "%s ready: listening on %s%s%s, log %s (%s, prefetch %s), "
          "memcached %s, %d event-loop threads, %d workers%s, tally flush "
          "every %d s%s%s%s%s",
          lc_version(), set.listen, set.socket_path ? " and " : "",
          set.socket_path ? set.socket_path : "", set.db,
          lc_durability_name(set.durability),
          lcd_prefetch_text(set.prefetch, pbuf), set.memcached, set.threads,
          set.workers, set.coalesce ? "" : ", no coalescing",
          set.flush_interval, set.standby_of ? "; STANDBY of " : "",
          set.standby_of ? set.standby_of : "",
          set.replication_listen ? "; a standby may follow on " : "",
          set.replication_listen ? set.replication_listen : "");
  lcd_notify("READY=1\nSTATUS=ready: listening on %s%s%s, log %s",
             set.listen, set.socket_path ? " and " : "",
             set.socket_path ? set.socket_path : "", set.db);
  if (set.retain_records || set.retain_age_us)
    lcd_log(&set, 0,
            "retention: every %lld ms, keep the newest %llu records "
            "(0: no limit) and those younger than %lld s (0: no limit)",
            (long long)set.retain_interval_ms,
            (unsigned long long)set.retain_records,
            (long long)(set.retain_age_us / 1000000));
  if (event_base_dispatch(base) < 0) {
    lcd_log(&set, 0, "event loop failed");
    status = EXIT_RUNTIME;
  }
  lcd_log(&set, 0, "stopping: waiting for the threads");
  lcd_notify("STATUS=stopping: flushing the tallies, closing the log");

out:
  lcd_stop_listening(&s);
  if (s.loops) {
    lcd_loops_join(&s); /* the other loops end; sockets closed */
    lcd_pool_stop(&s);  /* every job comes back; conns freed */
  }
  lcd_flusher_stop(&s);
  lcd_metrics_stop(&s);
  lcd_cluster_stop(&s);
  if (s.lc && s.started && lcd_flush_final(&s) != 0) status = EXIT_RUNTIME;
  if (s.lc && lcd_log_watch(&s) == LC_LOG_LOST) {
    lcd_log(&set, 0, "exiting with the log lost: %s", s.log_seen.error);
    status = EXIT_RUNTIME;
  }
  if (s.lc) {
    /* how long the close took, and of how many counters: what
     * TimeoutStopSec must cover besides the drain (the unit's comment) */
    lc_stats st = {0};
    lc_get_stats(s.lc, &st);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = lc_close(s.lc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc) {
      lcd_log(&set, 0, "cannot close the log '%s': %s (%s)", set.db,
              lc_strerror(rc), lc_last_detail());
      status = EXIT_RUNTIME;
    } else if (s.started) {
      lcd_log(&set, 0, "log closed; exiting (%llu counters closed in %.2f s)",
              (unsigned long long)st.counters, took);
    }
  }
  lcd_cluster_leave();
  if (pidfile_written) remove_pidfile(set.pidfile);
  for (int i = 0; i < 3; i++)
    if (sigs[i]) event_free(sigs[i]);
  lcd_loops_free(&s);
  lcd_auth_free();
  lcd_tls_free(&s);
  return status;
}
