/*
 * lcd_cluster_forward.c - a standby's forwarding (logcounterd --etcd): an
 * allocation its data port received goes to the primary's data port, one
 * "incr NAME N" on a connection of the worker's own, and the primary's
 * answer is relayed.  Plain TCP without authentication only (the cluster
 * names no primary to forward to otherwise).  lcd_cluster.c sets the
 * address at join and enables forwarding exactly while this node is a
 * standby.
 */
#include "lcd_cluster.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define FWD_TIMEOUT_MS 2000
#define ADDR_MAX 256

static char leader_data[ADDR_MAX]; /* set at join, before any worker runs */
static atomic_int enabled;
static _Atomic uint64_t forwarded, forward_errors;

void lcd_forward_set(const char *data_addr) {
  snprintf(leader_data, sizeof leader_data, "%s", data_addr ? data_addr : "");
}

void lcd_forward_enable(int on) { atomic_store(&enabled, on); }

void lcd_forward_counts(uint64_t *n, uint64_t *errors) {
  *n = atomic_load(&forwarded);
  *errors = atomic_load(&forward_errors);
}


static _Thread_local int fwd_fd = -1; /* each worker's connection */

static int fwd_connect(void) {
  char host[ADDR_MAX];
  snprintf(host, sizeof host, "%s", leader_data);
  char *colon = strrchr(host, ':');
  if (colon == NULL) return -1;
  *colon = '\0';
  const char *h = host;
  if (h[0] == '[') { /* [v6]:PORT */
    h++;
    host[strlen(host) - 1] = '\0';
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
  if (getaddrinfo(h, colon + 1, &hints, &ai) != 0) return -1;
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {FWD_TIMEOUT_MS / 1000, (FWD_TIMEOUT_MS % 1000) * 1000};
  if (fd >= 0 &&
      (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
       setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
       connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

/* One "incr NAME N" on fd: the answer line into line. */
static int fwd_once(int fd, const char *name, uint64_t n, char *line,
                    size_t size) {
  char req[LC_NAME_MAX + 48];
  int len = snprintf(req, sizeof req, "incr %s %llu\r\n", name,
                     (unsigned long long)n);
  if (len <= 0 || (size_t)len >= sizeof req ||
      send(fd, req, (size_t)len, MSG_NOSIGNAL) != len)
    return -1;
  size_t got = 0;
  while (got < size - 1) {
    ssize_t r = recv(fd, line + got, 1, 0); /* one line, never past it */
    if (r <= 0) return -1;
    if (line[got] == '\n') {
      line[got && line[got - 1] == '\r' ? got - 1 : got] = '\0';
      return 0;
    }
    got++;
  }
  return -1;
}

/* The LC_E code an answer "SERVER_ERROR ENAME ..." names, or ESTANDBY. */
static int fwd_code(const char *line) {
  const char *p = strncmp(line, "SERVER_ERROR ", 13) == 0 ? line + 13 : "";
  for (int rc = -1; rc >= -64; rc--) {
    const char *e = lc_err_name(rc);
    size_t n = strlen(e);
    if (strncmp(p, e, n) == 0 && (p[n] == ' ' || p[n] == '\0') &&
        strcmp(e, "EUNKNOWN") != 0)
      return rc;
  }
  return LC_ESTANDBY;
}

int lcd_cluster_forward(const char *name, uint64_t n, int64_t *first) {
  if (!atomic_load(&enabled) || !leader_data[0]) return LC_ESTANDBY;
  char line[256];
  for (int tries = 0; tries < 2; tries++) {
    int reused = fwd_fd >= 0;
    if (fwd_fd < 0 && (fwd_fd = fwd_connect()) < 0) break;
    if (fwd_once(fwd_fd, name, n, line, sizeof line) != 0) {
      close(fwd_fd);
      fwd_fd = -1;
      if (reused) continue; /* a connection the primary closed: once more */
      break;
    }
    char *end;
    errno = 0;
    long long v = strtoll(line, &end, 10);
    if (line[0] >= '0' && line[0] <= '9' && *end == '\0' && !errno &&
        v >= (long long)n) {
      *first = (int64_t)(v - (long long)n + 1);
      atomic_fetch_add(&forwarded, 1);
      return 0;
    }
    atomic_fetch_add(&forward_errors, 1);
    return fwd_code(line); /* the primary's own refusal */
  }
  atomic_fetch_add(&forward_errors, 1);
  return LC_ESTANDBY;
}
