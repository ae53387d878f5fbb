/*
 * net/aconn.c - line I/O on an admin connection, with a timeout on every
 * wait (poll), so neither side of the admin channel waits forever.  The
 * same buffered lines carry remote mode over TLS (tls.c): with c->ssl set,
 * bytes go through OpenSSL on the non-blocking socket, and a wait is for
 * what OpenSSL asks (reading or writing, in either direction), through
 * net/ssl.c.
 */
#include "net/net.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

void lc__aconn_init(lc__aconn *c, int fd, int timeout_ms) {
  c->fd = fd;
  c->ssl = NULL;
  c->timeout_ms = timeout_ms;
  c->rpos = c->rlen = c->wlen = 0;
}

static const char *where(const lc__aconn *c) {
  return c->ssl ? "server" : "admin socket";
}

static int wait_fd(lc__aconn *c, short what) {
  return lc__net_poll_fd(c->fd, what, c->timeout_ms, where(c), NULL);
}

void lc__aconn_close(lc__aconn *c) {
  if (c->ssl) {
    SSL_shutdown(c->ssl); /* close_notify, if the socket takes it now */
    SSL_free(c->ssl);
    c->ssl = NULL;
  }
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* After an OpenSSL call on c returned ret: lc__ssl_wait's answer. */
static int ssl_again(lc__aconn *c, int ret, const char *op) {
  return lc__ssl_wait(SSL_get_error(c->ssl, ret), c->fd, c->timeout_ms,
                      where(c), op);
}

int lc__aconn_tls(lc__aconn *c, struct ssl_ctx_st *ctx) {
  return (c->ssl = lc__ssl_on(ctx, c->fd)) ? 0 : LC_ENOMEM;
}

int lc__aconn_handshake(lc__aconn *c) {
  for (;;) {
    ERR_clear_error();
    int r = SSL_connect(c->ssl), rc;
    if (r == 1) return 0;
    if ((rc = ssl_again(c, r, "handshake")) != 0)
      return rc < 0 ? rc
                    : lc__fail(LC_EREMOTE, "%s: TLS handshake: closed",
                               where(c));
  }
}

/* One read (want 0) or write (want 1) of up to n bytes: the count, 0 at
 * the end of the stream (reads), or a negative code; waits as needed. */
static ssize_t io(lc__aconn *c, int want, char *p, size_t n) {
  for (;;) {
    if (c->ssl == NULL) {
      ssize_t got = want ? send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                         : recv(c->fd, p, n, MSG_DONTWAIT);
      if (got >= 0) return got;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        return lc__fail(LC_EREMOTE, "%s: %s: %s", where(c),
                        want ? "write" : "read", strerror(errno));
      int rc = wait_fd(c, want ? POLLOUT : POLLIN);
      if (rc) return rc;
      continue;
    }
    int len = n > INT32_MAX ? INT32_MAX : (int)n;
    ERR_clear_error();
    int got = want ? SSL_write(c->ssl, p, len) : SSL_read(c->ssl, p, len);
    if (got > 0) return got;
    int rc = ssl_again(c, got, want ? "write" : "read");
    if (rc == 1 && !want) return 0;
    if (rc) return rc < 0 ? rc : lc__fail(LC_EREMOTE, "%s: TLS write: "
                                          "closed", where(c));
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
      return lc__fail(LC_EREMOTE, "%s: a line over %d bytes", where(c),
                      LC__ADMIN_LINE_MAX);
    ssize_t got = io(c, 0, c->rbuf + c->rlen, LC__ADMIN_LINE_MAX - c->rlen);
    if (got < 0) return (int)got;
    if (got == 0) {
      if (c->rlen == 0) return 0;
      return lc__fail(LC_EREMOTE, "%s: closed in mid-line", where(c));
    }
    c->rlen += (size_t)got;
  }
}

int lc__aconn_flush(lc__aconn *c) {
  size_t done = 0;
  while (done < c->wlen) {
    ssize_t n = io(c, 1, c->wbuf + done, c->wlen - done);
    if (n < 0) return (int)n;
    done += (size_t)n;
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
