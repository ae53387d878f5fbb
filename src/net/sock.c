/*
 * sock.c - TCP sockets for every connection the library makes or takes
 * (replication, remote mode over TLS, the admin relay): HOST:PORT
 * addresses, a listener, a connect bounded by a timeout, and the poll with
 * a timeout that every socket's reads and writes wait in.
 */
#include "net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int lc__net_poll_fd(int fd, short ev, int timeout_ms, const char *who,
                const char *what) {
  struct pollfd p = {.fd = fd, .events = ev};
  for (;;) {
    int n = poll(&p, 1, timeout_ms);
    if (n > 0) return 0;
    if (n == 0)
      return lc__fail(LC_ETIMEDOUT, "%s: no %s within %d ms", who,
                      what ? what : ev == POLLIN ? "answer" : "room to write",
                      timeout_ms);
    if (errno != EINTR)
      return lc__fail(LC_EREMOTE, "%s: poll: %s", who, strerror(errno));
  }
}

int lc__net_addr_host(const char *what, const char *addr, char *host,
                  size_t size, const char **port) {
  const char *colon = addr ? strrchr(addr, ':') : NULL;
  if (colon == NULL || colon == addr || colon[1] == '\0')
    return lc__fail(LC_EINVAL, "%s address '%s': use HOST:PORT", what,
                    addr ? addr : "(null)");
  const char *h = addr;
  size_t n = (size_t)(colon - addr);
  if (h[0] == '[' && n >= 2 && h[n - 1] == ']') {
    h++;
    n -= 2;
  }
  if (n >= size)
    return lc__fail(LC_EINVAL, "%s address '%s': host too long", what, addr);
  memcpy(host, h, n);
  host[n] = '\0';
  if (port) *port = colon + 1;
  return 0;
}

static int resolve(const char *what, const char *addr, bool passive,
                   struct addrinfo **out) {
  char host[256];
  const char *port;
  int rc = lc__net_addr_host(what, addr, host, sizeof host, &port);
  if (rc) return rc;
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = passive ? AI_PASSIVE : 0};
  int e = getaddrinfo(host, port, &hints, out);
  if (e)
    return lc__fail(LC_EINVAL, "%s address '%s': %s", what, addr,
                    gai_strerror(e));
  return 0;
}

int lc__net_listen(const char *addr, int *fd) {
  struct addrinfo *ai;
  int rc = resolve("replication", addr, true, &ai);
  if (rc) return rc;
  int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  if (s >= 0) setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (s < 0 || bind(s, ai->ai_addr, ai->ai_addrlen) != 0 || listen(s, 4) != 0) {
    rc = lc__fail(LC_EINVAL, "replication listen on %s: %s", addr,
                  strerror(errno));
    if (s >= 0) close(s);
  } else {
    *fd = s;
  }
  freeaddrinfo(ai);
  return rc;
}

/* lc__net_poll_fd, with a timeout counted as the connection's failure. */
static int net_wait(int fd, short ev, int timeout_ms, const char *what,
                        const char *who) {
  int rc = lc__net_poll_fd(fd, ev, timeout_ms, who, what);
  return rc == LC_ETIMEDOUT ? LC_EREMOTE : rc;
}

int lc__net_connect(const char *what, const char *addr, int timeout_ms,
                     int *fd) {
  struct addrinfo *ai;
  int rc = resolve(what, addr, false, &ai);
  if (rc) return rc;
  int s = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
  if (s < 0) {
    rc = lc__fail(LC_EREMOTE, "%s: socket: %s", what, strerror(errno));
  } else {
    fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
    int err = 0;
    socklen_t len = sizeof err;
    if (connect(s, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS &&
          (rc = net_wait(s, POLLOUT, timeout_ms, "connection", what)) == 0 &&
          getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    }
    if (!rc && err)
      rc = lc__fail(LC_EREMOTE, "%s: connect to %s: %s", what, addr,
                    strerror(err));
    int one = 1;
    if (!rc) setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  freeaddrinfo(ai);
  if (rc) {
    if (s >= 0) close(s);
    return rc;
  }
  *fd = s;
  return 0;
}

void lc__net_sock_name(int fd, bool peer, char *out, size_t size) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  out[0] = '\0';
  if ((peer ? getpeername(fd, (struct sockaddr *)&ss, &len)
            : getsockname(fd, (struct sockaddr *)&ss, &len)) != 0)
    return;
  char host[INET6_ADDRSTRLEN] = "";
  unsigned port = 0;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    snprintf(out, size, "%s:%u", host, port);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    snprintf(out, size, "[%s]:%u", host, port);
  }
}
