/*
 * cache_pipe.c - many memcached text commands in one round trip.
 *
 * libmemcached answers one command at a time (its buffered mode gives no
 * reply per command).  A batch of first uses (first.c) needs the replies
 * of hundreds of adds and increments at once (and a close or an eviction
 * pass the gets and cas of hundreds of lowerings), so this file speaks
 * memcached's text protocol (doc/protocol.txt) itself, on connections of
 * its own, to the servers libmemcached would choose: each command goes to
 * the server of its master key (memcached_server_by_key on a pooled
 * handle, so the distribution is exactly libmemcached's).  All of one
 * server's commands are written at once, and its replies are read, in
 * order, while writing (one poll over every server: a server that stops
 * reading is never written into a full buffer).  Every wait is bounded by
 * the cache's timeout.
 *
 * Only where nothing changes the keys or the protocol on the wire
 * (lc__cache_pipe returns LC__MISS otherwise, and the caller goes one
 * command at a time): TCP servers, no namespace, the text protocol, no
 * authentication.  Connections are kept for the next call (up to
 * LC__PIPES, closed after any failure) and closed by lc__cache_close.
 */
#include "cache/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVERS 16 /* distinct servers in one call (more: LC__MISS) */

typedef struct server {
  char host[128];
  in_port_t port;
  int fd;
  char *out; /* every command, one after another */
  size_t olen, osent;
  char *in; /* replies read, not yet parsed */
  size_t ilen, icap;
  size_t next, left; /* its next op to answer (index into ops), how many */
  int err;           /* the failure that ended it, or 0 */
} server;

static bool appendf(server *s, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool appendf(server *s, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->out + s->olen, *cap - s->olen, fmt, ap);
    va_end(ap);
    if (n < 0) return false;
    if ((size_t)n < *cap - s->olen) {
      s->olen += (size_t)n;
      return true;
    }
    size_t want = *cap * 2 + (size_t)n;
    char *p = realloc(s->out, want);
    if (p == NULL) return false;
    s->out = p;
    *cap = want;
  }
}

/* Is what goes on the wire memcached's text protocol over TCP? */
static bool plain_config(memcached_st *m) {
  memcached_return_t r;
  const char *ns = memcached_callback_get(m, MEMCACHED_CALLBACK_NAMESPACE, &r);
  return !memcached_behavior_get(m, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL) &&
         !memcached_behavior_get(m, MEMCACHED_BEHAVIOR_USE_UDP) &&
         (ns == NULL || ns[0] == '\0');
}

/* A connection kept from an earlier call to s's server, or -1.  One that
 * has anything to read (the server closed it: a restart) is closed. */
static int reuse(lc__cache *c, const server *s) {
  for (;;) {
    int fd = -1;
    pthread_mutex_lock(&c->pipe_mu);
    for (int i = 0; i < c->npipe; i++)
      if (c->pipes[i].port == s->port &&
          strcmp(c->pipes[i].host, s->host) == 0) {
        fd = c->pipes[i].fd;
        c->pipes[i] = c->pipes[--c->npipe];
        break;
      }
    pthread_mutex_unlock(&c->pipe_mu);
    struct pollfd p = {fd, POLLIN, 0};
    if (fd < 0 || poll(&p, 1, 0) == 0) return fd;
    close(fd);
  }
}

/* After a call: s's connection kept for the next (if it ended clean,
 * every reply read) or closed.  Kept, because a connection per call
 * would leave a TIME_WAIT socket per call. */
static void keep(lc__cache *c, server *s) {
  if (s->fd < 0) return;
  if (s->err == 0 && s->left == 0 && s->ilen == 0) {
    pthread_mutex_lock(&c->pipe_mu);
    if (c->npipe < LC__PIPES) {
      c->pipes[c->npipe].fd = s->fd;
      c->pipes[c->npipe].port = s->port;
      memcpy(c->pipes[c->npipe].host, s->host, sizeof s->host);
      c->npipe++;
      s->fd = -1;
    }
    pthread_mutex_unlock(&c->pipe_mu);
  }
  if (s->fd >= 0) close(s->fd);
}

void lc__cache_pipe_close(lc__cache *c) {
  for (int i = 0; i < c->npipe; i++) close(c->pipes[i].fd);
  c->npipe = 0;
}

/* A non-blocking TCP connection to s, begun (connect in progress). */
static int connect_to(lc__cache *c, server *s) {
  if ((s->fd = reuse(c, s)) >= 0) return 0;
  char port[8];
  snprintf(port, sizeof port, "%u", (unsigned)s->port);
  /* no AI_ADDRCONFIG: it opens a netlink socket, which the systemd
   * unit's RestrictAddressFamilies refuses; every address is tried */
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV},
                  *ai = NULL;
  if (getaddrinfo(s->host, port, &hints, &ai) != 0 || ai == NULL)
    return lc__fail(LC_EMEMCACHED, "memcached %s:%s: cannot resolve", s->host,
                    port);
  int rc = 0;
  /* each address in turn, as libmemcached does, while one fails at once
   * (a connect still in progress is the one used) */
  for (struct addrinfo *a = ai; a && s->fd < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    a->ai_protocol);
    if (fd < 0) {
      rc = lc__fail(LC_EMEMCACHED, "memcached %s:%s: socket: %s", s->host,
                    port, strerror(errno));
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      rc = lc__fail(LC_EMEMCACHED, "memcached %s:%s: connect: %s", s->host,
                    port, strerror(errno));
      close(fd);
      continue;
    }
    s->fd = fd;
    rc = 0;
  }
  freeaddrinfo(ai);
  return rc;
}

/* The line at buf[0..len), or NULL if it is not all here; *n: its length
 * with the CR LF. */
static const char *line(const char *buf, size_t len, size_t *n) {
  const char *nl = memchr(buf, '\n', len);
  if (nl == NULL) return NULL;
  *n = (size_t)(nl - buf) + 1;
  return buf;
}

static int reply_error(const char *host, unsigned port, const char *l,
                       size_t n) {
  while (n > 0 && (l[n - 1] == '\r' || l[n - 1] == '\n')) n--;
  return lc__fail(LC_EMEMCACHED, "memcached %s:%u: %.*s", host, port,
                  (int)(n > 120 ? 120 : n), l);
}

int lc__cache_pipe_reply(lc__op *op, const char *buf, size_t len,
                         const char *host, unsigned port, size_t *used) {
  *used = 0;
  size_t n;
  const char *l = line(buf, len, &n);
  if (l == NULL) return 0;
  if (n < 2 || l[n - 2] != '\r') /* not memcached's: nothing after it */
    return reply_error(host, port, l, n);
  if (op->kind == LC__OP_ADD) {
    op->rc = strncmp(l, "STORED\r", 7) == 0 ? 0
             : strncmp(l, "NOT_STORED\r", 11) == 0
                 ? LC__EXISTS
                 : reply_error(host, port, l, n);
  } else if (op->kind == LC__OP_CAS) {
    op->rc =
        strncmp(l, "STORED\r", 7) == 0 ? 0
        : strncmp(l, "EXISTS\r", 7) == 0 || strncmp(l, "NOT_FOUND\r", 10) == 0
            ? LC__EXISTS
            : reply_error(host, port, l, n);
  } else if (op->kind == LC__OP_INCR) {
    if (strncmp(l, "NOT_FOUND\r", 10) == 0)
      op->rc = LC__MISS;
    else if (strncmp(l, "CLIENT_ERROR", 12) == 0) /* not a number */
      op->rc = lc__fail(LC_EBADVALUE,
                        "memcached holds a value that is "
                        "not a number for %.*s",
                        (int)op->klen, op->key);
    else if (!lc__cache_parse_u64(l, n - 2, &op->num))
      op->rc = reply_error(host, port, l, n);
    else
      op->rc = 0;
  } else { /* GET(S): VALUE key flags bytes [cas], the data, END; or END */
    if (strncmp(l, "END\r", 4) == 0) {
      op->rc = LC__MISS;
    } else {
      unsigned flags;
      size_t bytes = 0;
      char head[300]; /* the VALUE line, NUL-terminated */
      size_t hn = n - 2 < sizeof head - 1 ? n - 2 : sizeof head - 1;
      memcpy(head, l, hn);
      head[hn] = '\0';
      unsigned long long cas = 0;
      int want = op->kind == LC__OP_GETS ? 3 : 2;
      /* (a length that would wrap need: sscanf's %zu takes "-1") */
      if (strncmp(head, "VALUE ", 6) != 0 || hn < 7 + op->klen ||
          memcmp(head + 6, op->key, op->klen) != 0 ||
          head[6 + op->klen] != ' ' || /* not a longer key */
          sscanf(head + 6 + op->klen, " %u %zu %llu", &flags, &bytes, &cas) <
              want ||
          bytes > SIZE_MAX - n - 7)
        /* not the reply to this get: what follows cannot be matched */
        return reply_error(host, port, l, n);
      size_t need = n + bytes + 2 + 5; /* data CR LF "END" CR LF */
      if (len < need) return 0;
      if (memcmp(l + n + bytes, "\r\nEND\r\n", 7) != 0)
        /* the data is not as long as it said: the stream is lost */
        return reply_error(host, port, l, n);
      size_t k = bytes < sizeof op->text - 1 ? bytes : sizeof op->text - 1;
      memcpy(op->text, l + n, k);
      op->text[k] = '\0';
      op->cas = cas;
      op->rc = 0;
      n = need;
    }
  }
  *used = n;
  return 0;
}

/* Parses the replies of s's ops that have fully arrived. */
static void parse(server *s, lc__op *ops, const unsigned *order) {
  size_t at = 0;
  while (s->left > 0) {
    size_t used;
    s->err = lc__cache_pipe_reply(&ops[order[s->next]], s->in + at,
                                  s->ilen - at, s->host, s->port, &used);
    if (s->err || used == 0) break;
    at += used;
    s->next++;
    s->left--;
  }
  memmove(s->in, s->in + at, s->ilen - at);
  s->ilen -= at;
}

/* Moves bytes for s, as poll said it may (revents). */
static void step(server *s, short revents, lc__op *ops, const unsigned *order) {
  if ((revents & POLLOUT) && s->osent < s->olen) {
    ssize_t w = send(s->fd, s->out + s->osent, s->olen - s->osent,
                     MSG_NOSIGNAL);
    if (w > 0)
      s->osent += (size_t)w;
    else if (w < 0 && errno != EAGAIN && errno != EINTR)
      s->err = lc__fail(LC_EMEMCACHED, "memcached %s:%u: send: %s", s->host,
                        (unsigned)s->port, strerror(errno));
  }
  if (!s->err && (revents & (POLLIN | POLLHUP | POLLERR))) {
    if (s->icap - s->ilen < 4096) {
      size_t want = s->icap ? s->icap * 2 : 16384;
      char *p = realloc(s->in, want);
      if (p == NULL) {
        s->err = lc__fail(LC_ENOMEM, "memcached replies: out of memory");
        return;
      }
      s->in = p;
      s->icap = want;
    }
    ssize_t r = recv(s->fd, s->in + s->ilen, s->icap - s->ilen, 0);
    if (r > 0) {
      s->ilen += (size_t)r;
      parse(s, ops, order);
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      int e = r == 0 ? 0 : errno;
      s->err = lc__fail(LC_EMEMCACHED, "memcached %s:%u: %s", s->host,
                        (unsigned)s->port,
                        e ? strerror(e) : "closed the connection");
    }
  }
}

/* Builds each server's commands; 0, LC__MISS (a server this file does
 * not speak to) or negative. */
static int route(lc__cache *c, lc__op *ops, size_t n, server *sv, int *nsv,
                 unsigned *order, unsigned *which) {
  memcached_return_t r;
  struct timespec wait = c->fetch_wait;
  memcached_st *mc = memcached_pool_fetch(c->pool, &wait, &r);
  if (mc == NULL)
    return lc__fail(LC_ETIMEDOUT, "no free memcached connection");
  int rc = c->auth || !plain_config(mc) ? LC__MISS : 0;
  for (size_t i = 0; i < n && !rc; i++) {
    const memcached_instance_st *in =
        memcached_server_by_key(mc, ops[i].master, ops[i].mlen, &r);
    const char *type = in ? memcached_server_type(in) : NULL;
    if (in == NULL || type == NULL || strcmp(type, "TCP") != 0) {
      rc = LC__MISS;
      break;
    }
    const char *host = memcached_server_name(in);
    in_port_t port = memcached_server_port(in);
    if (strlen(host) >= sizeof sv[0].host) {
      rc = LC__MISS;
      break;
    }
    int k = 0;
    while (k < *nsv && !(sv[k].port == port && strcmp(sv[k].host, host) == 0))
      k++;
    if (k == *nsv) {
      if (k == SERVERS) {
        rc = LC__MISS;
        break;
      }
      sv[k] = (server){.port = port, .fd = -1};
      strcpy(sv[k].host, host);
      (*nsv)++;
    }
    which[i] = (unsigned)k;
    sv[k].left++;
  }
  /* order: each server's ops, in call order, one server after another */
  size_t at = 0;
  for (int k = 0; k < *nsv && !rc; k++) {
    sv[k].next = at;
    for (size_t i = 0; i < n; i++)
      if (which[i] == (unsigned)k) order[at++] = (unsigned)i;
  }
  for (int k = 0; k < *nsv && !rc; k++) {
    server *s = &sv[k];
    size_t cap = 64 * s->left + 64;
    if ((s->out = malloc(cap)) == NULL) {
      rc = lc__fail(LC_ENOMEM, "memcached commands: out of memory");
      break;
    }
    for (size_t j = s->next; j < s->next + s->left && !rc; j++) {
      const lc__op *op = &ops[order[j]];
      bool ok;
      if (op->kind == LC__OP_ADD)
        ok = appendf(s, &cap, "add %.*s 0 0 %zu\r\n%.*s\r\n", (int)op->klen,
                     op->key, op->vlen, (int)op->vlen, op->val);
      else if (op->kind == LC__OP_INCR)
        ok = appendf(s, &cap, "incr %.*s %llu\r\n", (int)op->klen, op->key,
                     (unsigned long long)op->delta);
      else if (op->kind == LC__OP_CAS)
        ok = appendf(s, &cap, "cas %.*s 0 0 %zu %llu\r\n%.*s\r\n",
                     (int)op->klen, op->key, op->vlen,
                     (unsigned long long)op->cas, (int)op->vlen, op->val);
      else
        ok = appendf(s, &cap, "%s %.*s\r\n",
                     op->kind == LC__OP_GETS ? "gets" : "get", (int)op->klen,
                     op->key);
      if (!ok) rc = lc__fail(LC_ENOMEM, "memcached commands: out of memory");
    }
  }
  memcached_pool_release(c->pool, mc);
  return rc;
}

int lc__cache_pipe(lc__cache *c, lc__op *ops, size_t n) {
  if (n == 0) return 0;
  server sv[SERVERS];
  int nsv = 0;
  unsigned *order = malloc(n * sizeof *order);
  unsigned *which = malloc(n * sizeof *which);
  int rc = order && which ? 0 : lc__fail(LC_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) ops[i].rc = LC_EMEMCACHED;
  if (!rc) rc = route(c, ops, n, sv, &nsv, order, which);
  for (int k = 0; k < nsv && !rc; k++) sv[k].err = connect_to(c, &sv[k]);
  /* each wait at most the timeout, the whole call at most twice it */
  int timeout_ms = (int)(c->fetch_wait.tv_sec * 1000 +
                         c->fetch_wait.tv_nsec / 1000000);
  int64_t deadline = lc__clock_mono_us() + 2000 * (int64_t)timeout_ms;
  while (!rc) {
    struct pollfd pf[SERVERS];
    int live = 0, map[SERVERS];
    for (int k = 0; k < nsv; k++) {
      server *s = &sv[k];
      if (s->err || s->left == 0) continue;
      pf[live] = (struct pollfd){s->fd, POLLIN, 0};
      if (s->osent < s->olen) pf[live].events |= POLLOUT;
      map[live++] = k;
    }
    if (live == 0) break;
    int64_t left = (deadline - lc__clock_mono_us()) / 1000;
    int p = left <= 0 ? 0
                      : poll(pf, (nfds_t)live,
                             left < timeout_ms ? (int)left : timeout_ms);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) { /* every server still owing a reply has timed out */
      for (int i = 0; i < live; i++)
        sv[map[i]].err =
            lc__fail(p == 0 ? LC_ETIMEDOUT : LC_EMEMCACHED,
                     "memcached %s:%u: %s", sv[map[i]].host,
                     (unsigned)sv[map[i]].port,
                     p == 0 ? "no answer within the timeout" : strerror(errno));
      break;
    }
    for (int i = 0; i < live; i++)
      if (pf[i].revents) step(&sv[map[i]], pf[i].revents, ops, order);
  }
  for (int k = 0; k < nsv; k++) {
    server *s = &sv[k];
    keep(c, s);
    /* unanswered: the failure (not when routing failed: then order may
     * not be filled, and the caller reads only the call's result) */
    for (; !rc && s->left > 0; s->left--, s->next++)
      ops[order[s->next]].rc = s->err ? s->err : LC_EMEMCACHED;
    free(s->out);
    free(s->in);
  }
  free(order);
  free(which);
  return rc;
}
