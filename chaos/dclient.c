/*
 * dclient.c - "chaos dclient": one process of CONNS connections to
 * logcounterd, each a thread sending "incr NAME N" (counters d0, d1) and
 * now and then "incr tally:u0 D" (tallies u0, u1), one request at a time,
 * and appending an acknowledgement record for every number it reads back
 * (for a tally change, a record of the attempt before it too).  An error
 * reply ("SERVER_ERROR ELOG ..." while a disk fault has the daemon's log
 * failed, counted), a timeout or a dropped connection is a failed call
 * (unacknowledged); the thread reconnects and goes on, so
 * one client's sequence spans the daemon's restarts.  SIGTERM ends it once
 * each connection has its answer to the request in flight.  Connection 0
 * of client 0 pipelines instead: it writes CH_PIPE_DEPTH "incr" lines at
 * once (counters d0, d1 at random), then reads their replies in order; a
 * connection lost mid-batch loses the rest of the batch (unacknowledged).
 *
 * With --standby PORT is "P0,P1", the two daemons' data ports: each
 * connection talks to one and moves to the other (counted) when it
 * answers SERVER_ERROR ESTANDBY (a standby) or ENOSTANDBY (a primary with
 * no standby, or cut off from it), or when the connection fails or times
 * out; a refusal is a failed call like any other, never an id.  After a
 * few moves in a row without an answer it backs off (at most 50 ms).
 *
 * With --cluster PORT is "P0,P1,P2", the three nodes' data ports:
 * connection C starts on node C mod 3 (so every node is used; a standby
 * forwards an allocation to the primary) and moves to the next on any
 * error answer (a fenced primary, a standby that knows no primary, ...),
 * a failed connection or a timeout.
 *
 *   chaos dclient PORT CTL OUT INDEX CONNS SEED
 */
#include "chaos.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static atomic_int stopping; /* set by SIGTERM, read by every thread */
static int ports[3], nports = 1, out_fd;
static unsigned index_;
static uint64_t seed;
static ch_ctl *ctl;

static void on_term(int sig) {
  (void)sig;
  stopping = 1;
}

/* Timeouts of 5 s: longer than any fault keeps the daemon silent. */
static int dial(int which) {
  int fd = ch_connect_port(ports[which], 5000);
  int one = 1;
  if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* Reads the one-line reply (without CRLF); -1 when the connection was
 * closed or broke, -2 on a timeout.  One request is in flight at a time,
 * so nothing follows the line. */
static int read_line(int fd, char *buf, size_t size) {
  size_t n = 0;
  while (n + 1 < size) {
    ssize_t k = read(fd, buf + n, size - 1 - n);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
    if (k <= 0) return -1;
    char *nl = memchr(buf + n, '\n', (size_t)k);
    n += (size_t)k;
    if (nl) {
      *nl = '\0';
      if (nl > buf && nl[-1] == '\r') nl[-1] = '\0';
      return 0;
    }
  }
  return -1;
}

/* The daemon refused the call because its log failed. */
static bool is_elog(const char *line) {
  return strncmp(line, "SERVER_ERROR ELOG", 17) == 0;
}

/* The daemon is not the primary, or has no standby: ask the other one.
 * Counted; true if so. */
static bool refused(const char *line) {
  if (strncmp(line, "SERVER_ERROR ESTANDBY", 21) == 0) {
    atomic_fetch_add(&ctl->calls_estandby, 1);
    return true;
  }
  if (strncmp(line, "SERVER_ERROR ENOSTANDBY", 23) == 0) {
    atomic_fetch_add(&ctl->calls_enostandby, 1);
    return true;
  }
  return false;
}

/* The class of a failed call (CH_FAIL_*): line the daemon's answer, or
 * NULL when none came. */
static int fail_class(const char *line) {
  if (line == NULL) return CH_FAIL_OTHER;
  if (is_elog(line)) return CH_FAIL_ELOG;
  if (strncmp(line, "SERVER_ERROR ENOSTANDBY", 23) == 0)
    return CH_FAIL_NOSTANDBY;
  if (strncmp(line, "SERVER_ERROR ESTANDBY", 21) == 0) return CH_FAIL_STANDBY;
  return CH_FAIL_OTHER;
}

/* Appends a REC_FAIL record of r's counter (its t0_ns set). */
static void write_fail(const ch_rec *r, const char *line) {
  ch_rec f = *r;
  f.kind = REC_FAIL;
  f.value = fail_class(line);
  f.n = 0;
  f.t_ns = ch_now_ns();
  ch_rec_write(out_fd, &f);
}

/* Connection 0 of client 0: batches of CH_PIPE_DEPTH pipelined requests. */
#define CH_PIPE_DEPTH 1000

typedef struct pipe_buf {
  char b[1 << 15];
  size_t start, end;
} pipe_buf;

/* The next reply line of a pipelined batch; -1 closed, -2 timeout. */
static int pipe_line(int fd, pipe_buf *p, char *line, size_t size) {
  for (;;) {
    char *nl = memchr(p->b + p->start, '\n', p->end - p->start);
    if (nl) {
      size_t n = (size_t)(nl - (p->b + p->start));
      size_t k = n && nl[-1] == '\r' ? n - 1 : n;
      if (k >= size) k = size - 1;
      memcpy(line, p->b + p->start, k);
      line[k] = '\0';
      p->start += n + 1;
      return 0;
    }
    memmove(p->b, p->b + p->start, p->end - p->start);
    p->end -= p->start;
    p->start = 0;
    if (p->end == sizeof p->b) return -1;
    ssize_t k = read(fd, p->b + p->end, sizeof p->b - p->end);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -2;
    if (k <= 0) return -1;
    p->end += (size_t)k;
  }
}

/* One batch on fd: 0, 1 when a reply said to ask the other daemon, or -1
 * when the connection must be dropped. */
static int pipe_batch(int fd, uint32_t me, uint64_t *rng, pipe_buf *p) {
  static __thread char req[CH_PIPE_DEPTH * 32];
  static __thread ch_rec recs[CH_PIPE_DEPTH];
  size_t len = 0;
  for (int i = 0; i < CH_PIPE_DEPTH; i++) {
    ch_rec *r = &recs[i];
    memset(r, 0, sizeof *r);
    r->client = me;
    r->kind = REC_ID;
    r->obj = (uint8_t)(CH_EMB_COUNTERS + ch_rand(rng) % CH_LCD_COUNTERS);
    r->n = (uint32_t)ch_block_size(rng);
    len += (size_t)snprintf(req + len, sizeof req - len, "incr %s %u\r\n",
                            ch_counter_name(r->obj), r->n);
    atomic_fetch_add(&ctl->calls, 1);
    atomic_fetch_add(&ctl->ids_attempted, r->n);
  }
  int64_t t0 = ch_now_ns();
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, req + off, len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  int i = 0, rc = off == len ? 0 : -1;
  bool other = false;
  p->start = p->end = 0;
  for (; rc == 0 && i < CH_PIPE_DEPTH; i++) {
    char line[256], *end;
    rc = pipe_line(fd, p, line, sizeof line);
    if (rc) break;
    unsigned long long v = strtoull(line, &end, 10);
    if (line[0] < '0' || line[0] > '9' || *end) { /* SERVER_ERROR ... */
      atomic_fetch_add(&ctl->calls_failed, 1);
      recs[i].t0_ns = t0;
      write_fail(&recs[i], line);
      if (is_elog(line)) atomic_fetch_add(&ctl->calls_elog, 1);
      if (refused(line) || nports == 3) other = true;
      continue;
    }
    recs[i].t0_ns = t0;
    recs[i].t_ns = ch_now_ns();
    recs[i].value = (int64_t)v;
    ch_rec_write(out_fd, &recs[i]);
    atomic_fetch_add(&ctl->ids_acked, recs[i].n);
  }
  if (rc == 0) return other ? 1 : 0;
  /* The rest of the batch is lost: burned or never made, not acked. */
  for (; i < CH_PIPE_DEPTH; i++) {
    atomic_fetch_add(&ctl->calls_failed, 1);
    atomic_fetch_add(&ctl->calls_lost, 1);
    recs[i].t0_ns = t0;
    write_fail(&recs[i], NULL);
  }
  return -1;
}

static void *conn(void *arg) {
  unsigned c = (unsigned)(uintptr_t)arg;
  uint32_t me = CH_DCLIENT_BASE + index_ * 256 + c;
  uint64_t rng = seed ^ ((uint64_t)me << 20);
  int fd = -1;
  int backoff = 1;
  /* the daemon asked; moves without an answer */
  int which = nports == 3 ? (int)((c + index_) % 3) : 0, moves = 0;
  while (!stopping) {
    if (fd < 0 && (fd = dial(which)) < 0) {
      if (nports > 1) { /* the other one may be up */
        which = (which + 1) % nports;
        atomic_fetch_add(&ctl->switches, 1);
      }
      ch_sleep_ms(backoff);
      if (backoff < 100) backoff *= 2;
      continue;
    }
    backoff = 1;
    if (c == 0 && index_ == 0) { /* the pipelining connection */
      static __thread pipe_buf pb;
      int k = pipe_batch(fd, me, &rng, &pb);
      if (k != 0) {
        close(fd);
        fd = -1;
      }
      if (k != 0 && nports > 1) {
        which = (which + 1) % nports;
        atomic_fetch_add(&ctl->switches, 1);
        ch_sleep_ms(moves < 3 ? 1 : moves < 10 ? 10 : 50);
        moves++;
      } else if (k == 0) {
        moves = 0;
      }
      continue;
    }
    char req[96], line[256];
    ch_rec r = {.client = me};
    bool tally = ch_rand(&rng) % 100 < 15;
    uint64_t n = 0;
    int len;
    if (tally) { /* a tally change through the daemon */
      r.kind = REC_TALLY_TRY;
      r.obj = (uint8_t)(CH_EMB_TALLIES + ch_rand(&rng) % 2);
      r.value = (int64_t)ch_rand_between(&rng, 1, 100);
      len = snprintf(req, sizeof req, "incr tally:%s %lld\r\n",
                     ch_tally_name(r.obj), (long long)r.value);
      r.t_ns = ch_now_ns();
      ch_rec_write(out_fd, &r);
      atomic_fetch_add(&ctl->tally_calls, 1);
    } else {
      r.kind = REC_ID;
      r.obj = (uint8_t)(CH_EMB_COUNTERS + ch_rand(&rng) % CH_LCD_COUNTERS);
      n = ch_block_size(&rng);
      len = snprintf(req, sizeof req, "incr %s %llu\r\n",
                     ch_counter_name(r.obj), (unsigned long long)n);
      atomic_fetch_add(&ctl->calls, 1);
      atomic_fetch_add(&ctl->ids_attempted, n);
    }
    r.t0_ns = ch_now_ns(); /* the connection's daemon is the one running */
    int rc = write(fd, req, (size_t)len) == len
                 ? read_line(fd, line, sizeof line)
                 : -1;
    char *end = line;
    unsigned long long v = rc ? 0 : strtoull(line, &end, 10);
    bool number = rc == 0 && line[0] >= '0' && line[0] <= '9' && *end == '\0';
    if (!number) { /* lost, timed out, or SERVER_ERROR ... */
      atomic_fetch_add(tally ? &ctl->tally_failed : &ctl->calls_failed, 1);
      if (rc == 0 && !tally && is_elog(line))
        atomic_fetch_add(&ctl->calls_elog, 1);
      if (rc == -1 && !tally) atomic_fetch_add(&ctl->calls_lost, 1);
      if (!tally) write_fail(&r, rc == 0 ? line : NULL);
      /* a cluster node that refuses: ask the next (any error) */
      bool other = nports > 1 && (rc != 0 || refused(line) || nports == 3);
      if (rc != 0 || other) {
        close(fd);
        fd = -1;
      } else {
        ch_sleep_ms(1);
      }
      if (other) {
        which = (which + 1) % nports;
        atomic_fetch_add(&ctl->switches, 1);
        ch_sleep_ms(moves < 3 ? 1 : moves < 10 ? 10 : 50);
        moves++;
      }
      continue;
    }
    moves = 0;
    r.t_ns = ch_now_ns();
    if (tally) {
      r.kind = REC_TALLY_ACK;
    } else {
      r.value = (int64_t)v;
      r.n = (uint32_t)n;
    }
    ch_rec_write(out_fd, &r);
    if (!tally) atomic_fetch_add(&ctl->ids_acked, n);
  }
  if (fd >= 0) close(fd);
  return NULL;
}

int ch_dclient_main(int argc, char **argv) {
  if (argc != 8) {
    fprintf(stderr, "usage: chaos dclient PORT CTL OUT INDEX CONNS SEED\n");
    return 2;
  }
  nports = 0;
  for (char *p = argv[2]; p && nports < 3; p = strchr(p, ',')) {
    if (*p == ',') p++;
    ports[nports++] = atoi(p);
  }
  index_ = (unsigned)atoi(argv[5]);
  int conns = atoi(argv[6]);
  seed = strtoull(argv[7], NULL, 10);
  if (conns < 1 || conns > 255) conns = 2;
  signal(SIGTERM, on_term);
  signal(SIGPIPE, SIG_IGN);
  if ((ctl = ch_ctl_map(argv[3], false)) == NULL) return 1;
  out_fd = open(argv[4], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (out_fd < 0) return 1;
  pthread_t tid[256];
  for (int c = 0; c < conns; c++)
    pthread_create(&tid[c], NULL, conn, (void *)(uintptr_t)c);
  for (int c = 0; c < conns; c++) pthread_join(tid[c], NULL);
  close(out_fd);
  return 0;
}
