/*
 * lcd_pipe.c - deep-pipelining clients for tests/suite_pipeline.sh: what
 * real clients do to logcounterd that a request-reply test never does.
 *
 *   lcd_pipe pipe -p PORT -k PREFIX -n LINES [-K NAMES] [-b BLOCK] [-N]
 *                 [-O OTHERS] [-P PID -R KIB] [-x]
 *     One connection writes LINES pipelined "incr PREFIXi BLOCK" lines
 *     (i = line % NAMES, default 1 name; -N: each with noreply), then
 *     "version" as the fence, from one thread, while the main thread reads.
 *     With replies, reply j must be the value of line j: PREFIXi's previous
 *     reply + BLOCK (the names must be new, so the first is BLOCK).  Then
 *     (replies or not) each counter's get must be BLOCK times its lines,
 *     and "stats" cmd_incr / incr_ids must have grown by exactly what was
 *     sent (OTHERS' requests included).  Meanwhile OTHERS connections
 *     allocate one id at a time from PREFIXo<k>, each answer larger than
 *     the last; the largest wait any of them saw is reported.  -P PID:
 *     the daemon's RSS is sampled every 20 ms and must stay below KIB
 *     more than before the pipeline.  -x: the daemon is being stopped
 *     (SIGTERM): the connection may close early; what came back must still
 *     be the expected values in order, and the counts are not checked.
 *
 *   lcd_pipe unread -p PORT -k PREFIX -m MB [-O OTHERS] -T SECONDS
 *     One connection writes MB megabytes of "incr PREFIX 1" lines and never
 *     reads.  The daemon must close it within SECONDS (its --reply-timeout
 *     plus slack) while OTHERS connections keep being answered.
 *
 *   lcd_pipe libmc -p PORT -k NAME -n COUNT
 *     libmemcached with MEMCACHED_BEHAVIOR_NOREPLY and
 *     MEMCACHED_BEHAVIOR_BUFFER_REQUESTS: COUNT memcached_increment calls,
 *     memcached_flush_buffers, then memcached_get on the same handle (so
 *     on the same connection, behind them) must give COUNT (NAME new).
 *
 * Each prints "ok ..." or "FAIL ..." lines and exits 0 or 1.  Only ever
 * connects to 127.0.0.1.
 */
#include <errno.h>
#include <inttypes.h>
#include <libmemcached/memcached.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lcd_io.h"

static int port;
static const char *prefix = "p";
static long lines_n = 1000, names_n = 1, others_n, pid_n, rss_bound_kib, mb;
static long seconds_n = 10;
static uint64_t block = 1;
static int noreply, tolerate_close;
static atomic_int stop_others;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(int rcv_timeout_s) {
  return lcd_io_dial(port, rcv_timeout_s);
}

/* Prints "FAIL ..." and a newline; returns 1. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL ", stdout);
  vprintf(fmt, ap);
  va_end(ap);
  return 1;
}

/* A connection and its reply buffer. */
typedef struct rbuf {
  int fd;
  lcd_rbuf rb;
} rbuf;

static int read_line(rbuf *r, char *line, size_t cap) {
  return lcd_io_read_line(r->fd, &r->rb, line, cap);
}

/* One request, one reply line. */
static int ask(rbuf *r, const char *req, char *line, size_t cap) {
  if (lcd_io_send_all(r->fd, req, strlen(req)) != 0) return -1;
  return read_line(r, line, cap);
}

/* "STAT name value" from a "stats" reply; -1 if absent. */
static int stats(const char *n1, uint64_t *v1, const char *n2, uint64_t *v2) {
  rbuf *r = calloc(1, sizeof *r);
  int rc = -1;
  char line[512];
  r->fd = dial(10);
  if (r->fd < 0 || lcd_io_send_all(r->fd, "stats\r\n", 7) != 0) goto out;
  int seen = 0;
  while (read_line(r, line, sizeof line) == 0 && strcmp(line, "END") != 0) {
    char name[64];
    unsigned long long v;
    if (sscanf(line, "STAT %63s %llu", name, &v) != 2) continue;
    if (strcmp(name, n1) == 0) *v1 = v, seen |= 1;
    if (strcmp(name, n2) == 0) *v2 = v, seen |= 2;
  }
  rc = seen == 3 ? 0 : -1;
out:
  if (r->fd >= 0) close(r->fd);
  free(r);
  return rc;
}

/* ---- the other clients: one id at a time --------------------------------- */

typedef struct other {
  pthread_t t;
  int k;
  long ids;
  double max_wait;
  char fail[400];
} other;

static void *run_other(void *arg) {
  other *o = arg;
  rbuf *r = calloc(1, sizeof *r);
  r->fd = dial(30);
  char req[128], line[256];
  snprintf(req, sizeof req, "incr %so%d 1\r\n", prefix, o->k);
  uint64_t last = 0;
  if (r->fd < 0) snprintf(o->fail, sizeof o->fail, "cannot connect");
  while (r->fd >= 0 && !atomic_load(&stop_others)) {
    double t0 = now_s();
    if (ask(r, req, line, sizeof line) != 0) {
      if (!tolerate_close)
        snprintf(o->fail, sizeof o->fail, "no answer (after %ld ids)", o->ids);
      break;
    }
    double w = now_s() - t0;
    if (w > o->max_wait) o->max_wait = w;
    char *end;
    uint64_t v = strtoull(line, &end, 10);
    if (*end || v <= last) {
      snprintf(o->fail, sizeof o->fail, "answer '%s' after %" PRIu64, line,
               last);
      break;
    }
    last = v;
    o->ids++;
  }
  if (r->fd >= 0) close(r->fd);
  free(r);
  return NULL;
}

static other *others_start(void) {
  other *os = calloc((size_t)others_n + 1, sizeof *os);
  atomic_store(&stop_others, 0);
  for (long k = 0; k < others_n; k++) {
    os[k].k = (int)k;
    pthread_create(&os[k].t, NULL, run_other, &os[k]);
  }
  return os;
}

/* Joins them; 0, or 1 after printing why.  *ids: answers in all. */
static int others_stop(other *os, long *ids, double *max_wait) {
  atomic_store(&stop_others, 1);
  int bad = 0;
  *ids = 0;
  *max_wait = 0;
  for (long k = 0; k < others_n; k++) {
    pthread_join(os[k].t, NULL);
    *ids += os[k].ids;
    if (os[k].max_wait > *max_wait) *max_wait = os[k].max_wait;
    if (os[k].fail[0]) {
      printf("FAIL other connection %ld: %s\n", k, os[k].fail);
      bad = 1;
    }
    if (os[k].ids == 0 && !tolerate_close) {
      printf("FAIL other connection %ld got no answer at all\n", k);
      bad = 1;
    }
  }
  free(os);
  return bad;
}

/* ---- RSS ------------------------------------------------------------------ */

static long rss_kib(void) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%ld/status", pid_n);
  FILE *f = fopen(path, "r");
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

static atomic_long rss_max;
static atomic_int rss_stop;

static void *run_rss(void *arg) {
  (void)arg;
  while (!atomic_load(&rss_stop)) {
    long k = rss_kib();
    if (k > atomic_load(&rss_max)) atomic_store(&rss_max, k);
    usleep(20000);
  }
  return NULL;
}

/* ---- pipe ----------------------------------------------------------------- */

typedef struct writer {
  pthread_t t;
  int fd;
  int failed;
} writer;

static void *run_writer(void *arg) {
  writer *w = arg;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (long i = 0; i <= lines_n && !w->failed; i++) {
    if (i == lines_n)
      n += (size_t)snprintf(buf + n, cap - n, "version\r\n");
    else
      n += (size_t)snprintf(buf + n, cap - n, "incr %s%ld %" PRIu64 "%s\r\n",
                            prefix, i % names_n, block,
                            noreply ? " noreply" : "");
    if (n > cap - 512 || i == lines_n) {
      if (lcd_io_send_all(w->fd, buf, n) != 0) w->failed = 1;
      n = 0;
    }
  }
  free(buf);
  return NULL;
}

/* Reads the counters' values with multi-key gets; 0 when each is
 * BLOCK times its share of the lines. */
static int check_gets(rbuf *r) {
  char line[4096];
  int bad = 0;
  for (long i = 0; i < names_n && !bad; i += 100) {
    char req[8192];
    size_t n = (size_t)snprintf(req, sizeof req, "get");
    long hi = i + 100 < names_n ? i + 100 : names_n;
    for (long k = i; k < hi; k++)
      n += (size_t)snprintf(req + n, sizeof req - n, " %s%ld", prefix, k);
    snprintf(req + n, sizeof req - n, "\r\n");
    if (lcd_io_send_all(r->fd, req, strlen(req)) != 0)
      return fail("get: cannot send\n");
    for (long k = i; k < hi; k++) {
      char key[256];
      unsigned long long v = 0;
      uint64_t want =
          block * (uint64_t)(lines_n / names_n + (k < lines_n % names_n));
      if (read_line(r, line, sizeof line) != 0 ||
          sscanf(line, "VALUE %255s", key) != 1 ||
          read_line(r, line, sizeof line) != 0 ||
          sscanf(line, "%llu", &v) != 1 || v != want) {
        printf("FAIL get %s%ld: '%s', want %" PRIu64 "\n", prefix, k, line,
               want);
        bad = 1;
        break;
      }
    }
    if (!bad &&
        (read_line(r, line, sizeof line) != 0 || strcmp(line, "END") != 0))
      bad = fail("get: no END but '%s'\n", line);
  }
  return bad;
}

static int pipe_main(void) {
  uint64_t cmd0 = 0, ids0 = 0, cmd1 = 0, ids1 = 0;
  if (!tolerate_close && stats("cmd_incr", &cmd0, "incr_ids", &ids0))
    return fail("cannot read stats\n");
  long rss0 = pid_n ? rss_kib() : 0;
  pthread_t rt;
  atomic_store(&rss_max, rss0);
  if (pid_n) pthread_create(&rt, NULL, run_rss, NULL);
  rbuf *r = calloc(1, sizeof *r);
  writer w = {0};
  r->fd = w.fd = dial(60);
  if (r->fd < 0) return fail("cannot connect\n");
  other *os = others_start();
  uint64_t *last = calloc((size_t)names_n, sizeof *last);
  double t0 = now_s();
  pthread_create(&w.t, NULL, run_writer, &w);
  char line[512];
  long got = 0;
  int bad = 0, fenced = 0;
  for (long i = 0; !bad; i++) {
    if (read_line(r, line, sizeof line) != 0) {
      if (!tolerate_close)
        bad = fail("connection closed after %ld replies\n", got);
      break;
    }
    if (strncmp(line, "VERSION ", 8) == 0) {
      fenced = 1;
      break;
    }
    if (noreply || i >= lines_n) {
      bad = fail("unexpected reply '%s'\n", line);
      break;
    }
    long k = i % names_n;
    char *end;
    uint64_t v = strtoull(line, &end, 10);
    if (*end || !line[0] || v != last[k] + block) {
      bad = fail("reply %ld (%s%ld): '%s', want %" PRIu64 "\n", i, prefix, k,
                 line, last[k] + block);
      break;
    }
    last[k] = v;
    got++;
  }
  double secs = now_s() - t0;
  pthread_join(w.t, NULL);
  long oids;
  double owait;
  bad |= others_stop(os, &oids, &owait);
  if (pid_n) {
    atomic_store(&rss_stop, 1);
    pthread_join(rt, NULL);
  }
  if (!bad && !noreply && fenced && got != lines_n)
    bad = fail("%ld replies for %ld lines\n", got, lines_n);
  if (!bad && fenced && !tolerate_close) bad = check_gets(r);
  if (!bad && !tolerate_close) {
    if (stats("cmd_incr", &cmd1, "incr_ids", &ids1))
      bad = fail("cannot read stats\n");
    else if (cmd1 - cmd0 != (uint64_t)(lines_n + oids) ||
             ids1 - ids0 != (uint64_t)lines_n * block + (uint64_t)oids)
      bad = fail("stats: cmd_incr +%" PRIu64 " incr_ids +%" PRIu64
                 ", want +%ld +%" PRIu64 "\n",
                 cmd1 - cmd0, ids1 - ids0, lines_n + oids,
                 (uint64_t)lines_n * block + (uint64_t)oids);
  }
  long grew = pid_n ? atomic_load(&rss_max) - rss0 : 0;
  if (!bad && pid_n && grew > rss_bound_kib)
    bad = fail("RSS grew by %ld KiB, bound %ld KiB\n", grew, rss_bound_kib);
  printf("%s pipe: %ld lines%s on %ld counter(s), %ld replies in %.2f s "
         "(%.0f lines/s)%s; %ld others: %ld ids, largest wait %.1f ms",
         bad ? "FAIL" : "ok", lines_n, noreply ? " (noreply)" : "", names_n,
         got, secs, (double)lines_n / secs, fenced ? "" : ", not fenced",
         others_n, oids, owait * 1e3);
  if (pid_n)
    printf("; RSS %ld KiB before, at most +%ld KiB (bound %ld)", rss0, grew,
           rss_bound_kib);
  printf("\n");
  close(r->fd);
  free(r);
  free(last);
  return bad;
}

/* ---- unread --------------------------------------------------------------- */

static int unread_main(void) {
  int fd = dial(60);
  if (fd < 0) return fail("cannot connect\n");
  struct timeval tv = {seconds_n + 5, 0}; /* a send that never returns */
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  other *os = others_start();
  char chunk[1 << 16];
  size_t n = 0;
  const char *l = "incr ";
  while (n + 300 < sizeof chunk)
    n += (size_t)snprintf(chunk + n, sizeof chunk - n, "%s%s 1\r\n", l, prefix);
  double t0 = now_s(), closed_at = 0;
  long long sent = 0, want = mb * 1024LL * 1024LL;
  while (sent < want) {
    ssize_t w = send(fd, chunk, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (errno == EPIPE || errno == ECONNRESET) closed_at = now_s();
      break;
    }
    sent += w;
  }
  /* All written without a close: wait for the reset, without reading. */
  while (!closed_at && now_s() - t0 < (double)seconds_n) {
    struct pollfd p = {fd, 0, 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & (POLLERR | POLLHUP)))
      closed_at = now_s();
  }
  long oids;
  double owait;
  int bad = others_stop(os, &oids, &owait);
  if (!closed_at)
    bad = fail("the daemon did not close the connection within "
               "%ld s (%lld bytes sent)\n",
               seconds_n, sent);
  printf("%s unread: %.1f MB of %ld MB sent, closed by the daemon after "
         "%.1f s; %ld others: %ld ids, largest wait %.1f ms\n",
         bad ? "FAIL" : "ok", (double)sent / 1048576.0, mb,
         closed_at ? closed_at - t0 : -1.0, others_n, oids, owait * 1e3);
  close(fd);
  return bad;
}

/* ---- libmemcached NOREPLY + BUFFER_REQUESTS ------------------------------- */

static int libmc_main(void) {
  char cfg[64];
  snprintf(cfg, sizeof cfg, "--SERVER=127.0.0.1:%d", port);
  memcached_st *m = memcached(cfg, strlen(cfg));
  if (!m) return fail("cannot create a libmemcached handle\n");
  memcached_behavior_set(m, MEMCACHED_BEHAVIOR_NOREPLY, 1);
  memcached_behavior_set(m, MEMCACHED_BEHAVIOR_BUFFER_REQUESTS, 1);
  int bad = 0;
  double t0 = now_s();
  for (long i = 0; i < lines_n && !bad; i++) {
    uint64_t v;
    memcached_return_t rc =
        memcached_increment(m, prefix, strlen(prefix), 1, &v);
    if (rc != MEMCACHED_SUCCESS && rc != MEMCACHED_BUFFERED)
      bad = fail("memcached_increment %ld: %s\n", i,
                 memcached_last_error_message(m));
  }
  memcached_return_t rc = memcached_flush_buffers(m);
  if (!bad && rc != MEMCACHED_SUCCESS)
    bad = fail("memcached_flush_buffers: %s\n", memcached_strerror(m, rc));
  /* The get goes on the same connection, behind the increments (setting
   * a behavior back would make libmemcached reconnect: no order then). */
  size_t len = 0;
  uint32_t flags = 0;
  char *v =
      bad ? NULL : memcached_get(m, prefix, strlen(prefix), &len, &flags, &rc);
  double secs = now_s() - t0;
  if (!bad && (!v || strtoull(v, NULL, 10) != (uint64_t)lines_n))
    bad = fail("memcached_get %s: %s '%.*s', want %ld\n", prefix,
               memcached_strerror(m, rc), (int)len, v ? v : "", lines_n);
  free(v);
  memcached_free(m);
  printf("%s libmemcached noreply+buffered: %ld increments, counter read "
         "back in %.2f s\n",
         bad ? "FAIL" : "ok", lines_n, secs);
  return bad;
}

static int usage(void) {
  fprintf(stderr, "usage: lcd_pipe pipe -p PORT -k PREFIX -n LINES [-K NAMES] "
                  "[-b BLOCK] [-N] [-O OTHERS] [-P PID -R KIB] [-x]\n"
                  "       lcd_pipe unread -p PORT -k PREFIX -m MB [-O OTHERS] "
                  "-T SECONDS\n"
                  "       lcd_pipe libmc -p PORT -k NAME -n COUNT\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage();
  const char *mode = argv[1];
  int opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "p:k:n:K:b:NO:P:R:xm:T:")) != -1) {
    switch (opt) {
    case 'p': port = atoi(optarg); break;
    case 'k': prefix = optarg; break;
    case 'n': lines_n = atol(optarg); break;
    case 'K': names_n = atol(optarg); break;
    case 'b': block = strtoull(optarg, NULL, 10); break;
    case 'N': noreply = 1; break;
    case 'O': others_n = atol(optarg); break;
    case 'P': pid_n = atol(optarg); break;
    case 'R': rss_bound_kib = atol(optarg); break;
    case 'x': tolerate_close = 1; break;
    case 'm': mb = atol(optarg); break;
    case 'T': seconds_n = atol(optarg); break;
    default: return usage();
    }
  }
  if (port <= 0 || lines_n < 1 || names_n < 1 || block < 1) return usage();
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(mode, "pipe") == 0) return pipe_main();
  if (strcmp(mode, "unread") == 0) return unread_main();
  if (strcmp(mode, "libmc") == 0) return libmc_main();
  return usage();
}
