/*
 * wire.c - the replication stream's frames (see repl.h) over a TCP
 * socket (or over TLS, wire_tls.c), with poll timeouts on every read and
 * write, write batches
 * turned into entries and back, and the walk over the whole log that a
 * copy (sending or wiping) takes.
 */
#include "repl/repl.h"
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void lc__wire_buf_put(lc__wire_buf *b, const void *p, size_t n) {
  if (b->nomem) return;
  if (b->cap - b->n < n) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) {
      b->nomem = true;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, p, n);
  b->n += n;
}

void lc__wire_buf_u64(lc__wire_buf *b, uint64_t v) {
  unsigned char x[8];
  lc__key_be64_put(x, v);
  lc__wire_buf_put(b, x, 8);
}

void lc__wire_buf_free(lc__wire_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* lc__net_poll_fd, with a timeout counted as the stream's failure. */
static int wait_fd(int fd, short ev, int timeout_ms, const char *what,
                   const char *who) {
  int rc = lc__net_poll_fd(fd, ev, timeout_ms, who, what);
  return rc == LC_ETIMEDOUT ? LC_EREMOTE : rc;
}

static int send_all(lc__wire *w, const char *p, size_t n, int timeout_ms) {
  if (w->ssl) return lc__wire_tls_io(w, 1, (char *)p, n, timeout_ms);
  int fd = w->fd;
  while (n) {
    ssize_t sent = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      p += sent;
      n -= (size_t)sent;
    } else if (sent < 0 && errno == EINTR) {
      continue;
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int rc = wait_fd(fd, POLLOUT, timeout_ms, "room to send", "replication");
      if (rc) return rc;
    } else {
      return lc__fail(LC_EREMOTE, "replication: send: %s",
                      sent < 0 ? strerror(errno) : "closed");
    }
  }
  return 0;
}

int lc__wire_send(lc__wire *w, char type, const void *p, size_t n,
                  int timeout_ms) {
  unsigned char hd[5] = {(unsigned char)type, (unsigned char)(n >> 24),
                         (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                         (unsigned char)n};
  int rc = send_all(w, (const char *)hd, sizeof hd, timeout_ms);
  return rc ? rc : send_all(w, p, n, timeout_ms);
}

static int recv_all(lc__wire *w, char *p, size_t n, int timeout_ms) {
  if (w->ssl) return lc__wire_tls_io(w, 0, p, n, timeout_ms);
  int fd = w->fd;
  size_t got = 0;
  while (got < n) {
    ssize_t r = recv(fd, p + got, n - got, MSG_DONTWAIT);
    if (r > 0) {
      got += (size_t)r;
    } else if (r == 0) {
      return lc__fail(LC_EREMOTE, "replication: the peer closed the "
                                  "connection");
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int rc = wait_fd(fd, POLLIN, timeout_ms, "frame", "replication");
      if (rc) return rc;
    } else {
      return lc__fail(LC_EREMOTE, "replication: recv: %s", strerror(errno));
    }
  }
  return 0;
}

int lc__wire_recv(lc__wire *w, char *type, lc__wire_buf *payload, int timeout_ms) {
  unsigned char hd[5];
  int rc = recv_all(w, (char *)hd, sizeof hd, timeout_ms);
  if (rc) return rc;
  size_t n = (size_t)hd[1] << 24 | (size_t)hd[2] << 16 | (size_t)hd[3] << 8 |
             hd[4];
  if (n > LC__REPL_FRAME_MAX)
    return lc__fail(LC_EREMOTE, "replication: a frame of %zu bytes", n);
  if (payload->cap < n + 1) {
    char *q = realloc(payload->p, n + 1);
    if (q == NULL) return lc__fail(LC_ENOMEM, "replication: a frame");
    payload->p = q;
    payload->cap = n + 1;
  }
  payload->n = 0;
  if ((rc = recv_all(w, payload->p, n, timeout_ms)) != 0) return rc;
  payload->n = n;
  payload->p[n] = '\0'; /* text frames */
  *type = (char)hd[0];
  return 0;
}

static void u32(lc__wire_buf *b, size_t v) {
  unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 8), (unsigned char)v};
  lc__wire_buf_put(b, x, 4);
}

void lc__wire_put_entry(lc__wire_buf *out, const char *k, size_t klen,
                        const char *v, size_t vlen) {
  lc__wire_buf_put(out, v ? "P" : "D", 1);
  u32(out, klen);
  lc__wire_buf_put(out, k, klen);
  if (v == NULL) return;
  u32(out, vlen);
  lc__wire_buf_put(out, v, vlen);
}

typedef struct put_state {
  lc__wire_buf *out;
  uint64_t ops;
} put_state;

static void on_put(void *arg, const char *k, size_t klen, const char *v,
                   size_t vlen) {
  put_state *s = arg;
  lc__wire_put_entry(s->out, k, klen, v ? v : "", vlen);
  s->ops++;
}

static void on_delete(void *arg, const char *k, size_t klen) {
  put_state *s = arg;
  lc__wire_put_entry(s->out, k, klen, NULL, 0);
  s->ops++;
}

void lc__wire_put_batch(lc__wire_buf *out, leveldb_writebatch_t *b, uint64_t *ops) {
  put_state s = {.out = out};
  leveldb_writebatch_iterate(b, &s, on_put, on_delete);
  *ops = s.ops;
}

static bool get32(const char **p, const char *end, size_t *v) {
  if (end - *p < 4) return false;
  const unsigned char *u = (const unsigned char *)*p;
  *v = (size_t)u[0] << 24 | (size_t)u[1] << 16 | (size_t)u[2] << 8 | u[3];
  *p += 4;
  return (size_t)(end - *p) >= *v;
}

int64_t lc__wire_get_batch(const char *p, size_t n, leveldb_writebatch_t *b) {
  const char *end = p + n;
  int64_t ops = 0;
  bool bad = false;
  while (p < end && !bad) {
    char op = *p++;
    size_t klen, vlen;
    if ((op != 'P' && op != 'D') || !get32(&p, end, &klen)) {
      bad = true;
      break;
    }
    const char *k = p;
    p += klen;
    if (op == 'D') {
      leveldb_writebatch_delete(b, k, klen);
    } else if (!(bad = !get32(&p, end, &vlen))) {
      leveldb_writebatch_put(b, k, klen, p, vlen);
      p += vlen;
    }
    ops++;
  }
  if (bad || p != end)
    return lc__fail(LC_ECORRUPT, "replication: a malformed batch entry at "
                                 "byte %zu of %zu",
                    n - (size_t)(end - p), n);
  return ops;
}

static bool is_position(const char *k, size_t klen) {
  return klen == strlen(LC__STANDBY_KEY) &&
         memcmp(k, LC__STANDBY_KEY, klen) == 0;
}

int lc__repl_walk(lc_t *h,
                  bool (*take)(void *arg, const char *k, size_t klen,
                               const char *v, size_t vlen),
                  int (*round)(void *arg), void *arg) {
  lc_iter *it = NULL;
  int64_t snap_us;
  int rc = lc__iter_open_log(h, &it, &snap_us);
  for (bool more = rc == 0; more && !rc;) {
    if ((rc = lc__log_enter(&h->log)) != 0) break;
    for (bool full = false; !full;) {
      const char *k, *v;
      size_t klen, vlen;
      int e = lc__iter_entry(it, &k, &klen, &v, &vlen);
      if (e <= 0) {
        rc = e;
        more = false;
        break;
      }
      if (!is_position(k, klen)) full = take(arg, k, klen, v, vlen);
      lc__iter_skip(it);
    }
    lc__log_leave(&h->log);
    if (!rc) rc = round(arg);
  }
  lc_iter_close(it);
  return rc;
}
