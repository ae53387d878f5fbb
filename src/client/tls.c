/*
 * tls.c - remote mode over TLS (lc_options.tls_ca): a pool of TLS
 * connections to one logcounterd, speaking the two requests remote mode
 * needs ("incr NAME n", "get NAME") and memcached's auth handshake.
 * libmemcached has no TLS, so this is our own small client: OpenSSL on a
 * non-blocking socket, lines through net/aconn.c's buffered connection,
 * every wait bounded by timeout_ms (connect, each wait of the handshake,
 * each read and write, and the wait for a free connection).
 *
 * The server's certificate must chain to tls_ca and name the host of
 * "HOST:PORT" (an IP address or a DNS name); tls_cert/tls_key give the
 * client's own certificate for mutual TLS.  A connection is used by one
 * call at a time; after any failure or error reply it is closed, so no
 * late answer is ever read as another request's.  A request that fails
 * on a connection reused from the pool (the daemon may have closed it
 * while idle) is tried once more on a new one: an increment that did
 * happen on the first is a gap, never a repeat.  lc__tls_admin opens a
 * connection outside the pool for the log's calls: after "admin" the
 * daemon relays it to its admin socket.
 */
#include "client/client.h"
#include "handle.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lc__tls {
  SSL_CTX *ctx;
  char *addr;
  char host[256]; /* the name the certificate must carry */
  char *auth;     /* "USER PASSWORD", or NULL */
  int timeout_ms, max, total, nidle;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lc__aconn **idle;
};

static void close_idle(lc__tls *t);

void lc__tls_close(lc__tls *t) {
  if (t == NULL) return;
  close_idle(t);
  free(t->idle);
  if (t->ctx) SSL_CTX_free(t->ctx);
  if (t->auth) {
    explicit_bzero(t->auth, strlen(t->auth));
    free(t->auth);
  }
  free(t->addr);
  pthread_mutex_destroy(&t->mu);
  pthread_cond_destroy(&t->cv);
  free(t);
}

int lc__tls_open(lc__tls **out, const lc_options *o, const char *addr) {
  char host[sizeof ((lc__tls *)0)->host];
  int rc = lc__net_addr_host("server", addr, host, sizeof host, NULL);
  if (rc) return rc;
  lc__tls *t = calloc(1, sizeof *t);
  if (t == NULL) return lc__fail(LC_ENOMEM, "cannot allocate a TLS pool");
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  memcpy(t->host, host, sizeof host);
  t->timeout_ms = o->timeout_ms;
  t->max = o->pool_size;
  t->addr = strdup(addr);
  t->idle = calloc((size_t)t->max, sizeof *t->idle);
  size_t alen = o->user ? strlen(o->user) + strlen(o->password) + 2 : 0;
  if (alen && (t->auth = malloc(alen)) != NULL)
    snprintf(t->auth, alen, "%s %s", o->user, o->password);
  if (!t->addr || !t->idle || (alen && !t->auth))
    rc = lc__fail(LC_ENOMEM, "cannot allocate a TLS pool");
  else
    rc = lc__ssl_ctx(o, false, &t->ctx);
  if (rc) {
    lc__tls_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* The handshake on c: the certificate is checked against the CA and the
 * host. */
static int handshake(lc__tls *t, lc__aconn *c) {
  if (lc__ssl_expect_host(c->ssl, t->host)) return LC_ENOMEM;
  int rc = lc__aconn_handshake(c);
  long v = SSL_get_verify_result(c->ssl);
  if (rc && rc != LC_ETIMEDOUT && v != X509_V_OK)
    return lc__fail(LC_EREMOTE, "TLS to %s: the server's certificate: %s",
                    t->addr, X509_verify_cert_error_string(v));
  return rc;
}

/* memcached's text handshake: "set" with data "USER PASSWORD". */
static int authenticate(lc__tls *t, lc__aconn *c) {
  char *line;
  int rc = lc__aconn_printf(c, "set auth 0 0 %zu", strlen(t->auth));
  if (!rc) rc = lc__aconn_printf(c, "%s", t->auth);
  if (!rc) rc = lc__aconn_flush(c);
  explicit_bzero(c->wbuf, sizeof c->wbuf);
  if (!rc && (rc = lc__aconn_readline(c, &line)) == 0)
    rc = lc__fail(LC_EAUTH, "authentication refused: the server closed the "
                            "connection");
  if (rc < 0) return rc;
  if (strcmp(line, "STORED") != 0)
    return lc__fail(LC_EAUTH, "authentication refused: %s", line);
  return 0;
}

/* A new connection into c, handshaken and authenticated (closed on
 * failure). */
static int dial_into(lc__tls *t, lc__aconn *c) {
  int fd = -1, rc = lc__net_connect("server", t->addr, t->timeout_ms, &fd);
  lc__aconn_init(c, fd, t->timeout_ms);
  if (!rc) rc = lc__aconn_tls(c, t->ctx);
  if (!rc) rc = handshake(t, c);
  if (!rc && t->auth) rc = authenticate(t, c);
  if (rc) lc__aconn_close(c);
  return rc;
}

static int dial(lc__tls *t, lc__aconn **out) {
  lc__aconn *c = malloc(sizeof *c);
  if (c == NULL) return lc__fail(LC_ENOMEM, "cannot allocate a connection");
  int rc = dial_into(t, c);
  if (rc) {
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int lc__tls_admin(lc__tls *t, lc__aconn *c, int timeout_ms) {
  char *line = NULL;
  int rc = dial_into(t, c);
  if (rc) return rc;
  if (!(rc = lc__aconn_printf(c, "admin")) && !(rc = lc__aconn_flush(c)) &&
      (rc = lc__aconn_readline(c, &line)) == 0)
    rc = lc__fail(LC_EREMOTE, "%s closed the connection after \"admin\"",
                  t->addr);
  if (rc == 1 && strcmp(line, "OK admin") != 0)
    rc = lc__fail(LC_EREMOTE, "%s refused the admin commands: %s", t->addr,
                  line);
  if (rc != 1) {
    lc__aconn_close(c);
    return rc;
  }
  c->timeout_ms = timeout_ms;
  return 0;
}

/* A connection for one call: an idle one (*reused), or a new one when
 * fewer than max are open; otherwise waits up to timeout_ms. */
static int take(lc__tls *t, lc__aconn **out, bool *reused) {
  struct timespec until = lc__clock_realtime_in(t->timeout_ms);
  pthread_mutex_lock(&t->mu);
  while (t->nidle == 0 && t->total >= t->max)
    if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == ETIMEDOUT) {
      pthread_mutex_unlock(&t->mu);
      return lc__fail(LC_ETIMEDOUT, "no free connection to %s within %d ms",
                      t->addr, t->timeout_ms);
    }
  if ((*reused = t->nidle > 0)) {
    *out = t->idle[--t->nidle];
    pthread_mutex_unlock(&t->mu);
    return 0;
  }
  t->total++;
  pthread_mutex_unlock(&t->mu);
  int rc = dial(t, out);
  if (rc) {
    pthread_mutex_lock(&t->mu);
    t->total--;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
  }
  return rc;
}

/* Back to the pool, or closed after a failure (keep false). */
static void give(lc__tls *t, lc__aconn *c, bool keep) {
  if (!keep) {
    lc__aconn_close(c);
    free(c);
  }
  pthread_mutex_lock(&t->mu);
  if (keep)
    t->idle[t->nidle++] = c;
  else
    t->total--;
  pthread_cond_signal(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

/* The daemon's error line as this call's failure: SERVER_ERROR keeps its
 * words (remote.c maps the code it names), CLIENT_ERROR is a refusal. */
static int error_reply(lc__tls *t, const char *what, const char *line) {
  if (!strncmp(line, "SERVER_ERROR ", 13))
    return lc__fail(LC_EMEMCACHED, "%s %s: %s", t->addr, what, line);
  if (strstr(line, "unauthenticated"))
    return lc__fail(LC_EAUTH, "%s %s: %s", t->addr, what, line);
  return lc__fail(LC_EBADVALUE, "%s %s: %s", t->addr, what, line);
}

/* One request on c: incr (n > 0) or get; 0 and *v, LC__MISS, or the
 * failure (*transport: of the connection, not an answer). */
static int request(lc__tls *t, lc__aconn *c, const char *key, uint64_t n,
                   uint64_t *v, bool *transport) {
  char *line;
  int rc = n ? lc__aconn_printf(c, "incr %s %llu", key, (unsigned long long)n)
             : lc__aconn_printf(c, "get %s", key);
  *transport = true;
  if (!rc) rc = lc__aconn_flush(c);
  if (!rc && (rc = lc__aconn_readline(c, &line)) == 0)
    rc = lc__fail(LC_EMEMCACHED, "%s closed the connection", t->addr);
  if (rc < 0) return rc;
  *transport = false;
  if (!strncmp(line, "SERVER_ERROR", 12) || !strncmp(line, "CLIENT_ERROR", 12) ||
      !strcmp(line, "ERROR"))
    return error_reply(t, n ? "incr" : "get", line);
  if (n) {
    if (!strcmp(line, "NOT_FOUND")) return LC__MISS;
    if (lc__cache_parse_u64(line, strlen(line), v)) return 0;
    return lc__fail(LC_EMEMCACHED, "%s answered '%s' to incr", t->addr, line);
  }
  if (!strcmp(line, "END")) return LC__MISS;
  if (strncmp(line, "VALUE ", 6) != 0)
    return lc__fail(LC_EMEMCACHED, "%s answered '%s' to get", t->addr, line);
  *transport = true;
  if ((rc = lc__aconn_readline(c, &line)) <= 0)
    return rc ? rc : lc__fail(LC_EMEMCACHED, "%s closed the connection",
                              t->addr);
  bool ok = lc__cache_parse_u64(line, strlen(line), v);
  if ((rc = lc__aconn_readline(c, &line)) <= 0 || strcmp(line, "END") != 0)
    return rc < 0 ? rc
                  : lc__fail(LC_EMEMCACHED, "%s: no END after the value",
                             t->addr);
  *transport = false;
  return ok ? 0 : lc__fail(LC_EBADVALUE, "%s holds a value that is not a "
                                         "number", key);
}

/* The transport's own failures (LC_EREMOTE) are the server's absence to
 * remote mode, as libmemcached's are (LC_EMEMCACHED). */
static int absent(int rc) {
  if (rc != LC_EREMOTE) return rc;
  char why[LC__DETAIL_MAX];
  snprintf(why, sizeof why, "%s", lc_last_detail());
  return lc__fail(LC_EMEMCACHED, "%s", why);
}

static int call(lc__tls *t, const char *key, uint64_t n, uint64_t *v) {
  int rc;
  for (int tries = 0;; tries++) {
    lc__aconn *c = NULL;
    bool reused = false, transport = false;
    if ((rc = take(t, &c, &reused)) != 0) break;
    rc = request(t, c, key, n, v, &transport);
    give(t, c, rc == 0 || rc == LC__MISS);
    if (!(rc < 0 && transport && reused && tries == 0)) break;
  }
  return rc < 0 ? absent(rc) : rc;
}

int lc__tls_incr(lc__tls *t, const char *key, uint64_t n, uint64_t *v) {
  return call(t, key, n, v);
}

int lc__tls_get(lc__tls *t, const char *key, uint64_t *v) {
  return call(t, key, 0, v);
}

/* The idle connections closed, each with a close_notify. */
static void close_idle(lc__tls *t) {
  for (int i = 0; i < t->nidle; i++) {
    lc__aconn_close(t->idle[i]);
    free(t->idle[i]);
  }
  t->nidle = 0;
}
