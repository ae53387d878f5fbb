/*
 * admin_io.c - line I/O on an admin connection, with a timeout on every
 * wait (poll), so neither side of the admin channel waits forever.
 */
#include "admin.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

void lc__aconn_init(lc__aconn *c, int fd, int timeout_ms) {
  c->fd = fd;
  c->timeout_ms = timeout_ms;
  c->rpos = c->rlen = c->wlen = 0;
}

/* Waits for fd to become readable (POLLIN) or writable (POLLOUT). */
static int wait_fd(lc__aconn *c, short what) {
  struct pollfd p = {.fd = c->fd, .events = what};
  for (;;) {
    int n = poll(&p, 1, c->timeout_ms);
    if (n > 0) return 0;
    if (n == 0)
      return lc__fail(LC_ETIMEDOUT, "admin socket: no %s within %d ms",
                      what == POLLIN ? "answer" : "room to write",
                      c->timeout_ms);
    if (errno != EINTR)
      return lc__fail(LC_EREMOTE, "admin socket: poll: %s", strerror(errno));
  }
}

int lc__aconn_readline(lc__aconn *c, char **line) {
  for (;;) {
    char *start = c->rbuf + c->rpos;
    char *nl = memchr(start, '\n', c->rlen - c->rpos);
    if (nl) {
      size_t n = (size_t)(nl - start);
      c->rpos += n + 1;
      if (n > 0 && start[n - 1] == '\r') n--;
      start[n] = '\0';
      *line = start;
      return 1;
    }
    if (c->rpos > 0) { /* move the partial line to the front */
      memmove(c->rbuf, start, c->rlen - c->rpos);
      c->rlen -= c->rpos;
      c->rpos = 0;
    }
    if (c->rlen >= LC__ADMIN_LINE_MAX)
      return lc__fail(LC_EREMOTE, "admin socket: a line over %d bytes",
                      LC__ADMIN_LINE_MAX);
    int rc = wait_fd(c, POLLIN);
    if (rc) return rc;
    ssize_t got = recv(c->fd, c->rbuf + c->rlen, LC__ADMIN_LINE_MAX - c->rlen,
                       0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0)
      return lc__fail(LC_EREMOTE, "admin socket: read: %s", strerror(errno));
    if (got == 0) {
      if (c->rlen == 0) return 0;
      return lc__fail(LC_EREMOTE, "admin socket: closed in mid-line");
    }
    c->rlen += (size_t)got;
  }
}

int lc__aconn_flush(lc__aconn *c) {
  size_t done = 0;
  while (done < c->wlen) {
    ssize_t n = send(c->fd, c->wbuf + done, c->wlen - done,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int rc = wait_fd(c, POLLOUT);
      if (rc) return rc;
      continue;
    }
    return lc__fail(LC_EREMOTE, "admin socket: write: %s", strerror(errno));
  }
  c->wlen = 0;
  return 0;
}

int lc__aconn_printf(lc__aconn *c, const char *fmt, ...) {
  if (LC__ADMIN_WBUF - c->wlen < LC__ADMIN_LINE_MAX + 2) {
    int rc = lc__aconn_flush(c);
    if (rc) return rc;
  }
  char *p = c->wbuf + c->wlen;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(p, LC__ADMIN_LINE_MAX, fmt, ap);
  va_end(ap);
  if (n < 0) return lc__fail(LC_EINVAL, "admin socket: bad format");
  if (n >= LC__ADMIN_LINE_MAX) n = LC__ADMIN_LINE_MAX - 1; /* cut */
  for (int i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) p[i] = '?';
  p[n] = '\r';
  p[n + 1] = '\n';
  c->wlen += (size_t)n + 2;
  return 0;
}
