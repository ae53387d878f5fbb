/*
 * wire_tls.c - replication over mutual TLS.  A local handle with all of
 * tls_ca, tls_cert and tls_key (logcounterd's --tls-ca, --tls-cert and
 * --tls-key) and a replication role speaks TLS on the replication
 * connection: the primary presents its certificate and requires the
 * standby's, the standby checks that the primary's names the host of
 * standby_of; both must chain to tls_ca.  The replication secret, when
 * set, is proved inside TLS as before.
 *
 * The primary reads acknowledgments on one thread while it sends on
 * another, and one SSL object must not be used by two threads at once:
 * every OpenSSL call on a wire is made under w->mu, and every wait for
 * the socket (poll) outside it, so neither direction waits on the other.
 */
#include "repl/repl.h"
#include "handle.h"

#include <errno.h>
#include <openssl/ssl.h>
#include <string.h>
#include <unistd.h>

bool lc__repl_tls_on(const lc_options *o) {
  return o->tls_ca && o->tls_ca[0] && o->tls_cert && o->tls_cert[0] &&
         o->tls_key && o->tls_key[0];
}

void lc__wire_init(lc__wire *w, int fd) {
  w->fd = fd;
  w->ssl = NULL;
  pthread_mutex_init(&w->mu, NULL);
}

/* The error code after an OpenSSL call that returned ret, taken under
 * w->mu (it reads the calling thread's error queue, which is its own). */
static int ssl_error(lc__wire *w, int ret) { return SSL_get_error(w->ssl, ret); }

/* lc__ssl_wait, with its timeout counted as the stream's failure. */
static int again(lc__wire *w, int e, int timeout_ms, const char *op) {
  int rc = lc__ssl_wait(e, w->fd, timeout_ms, "replication", op);
  if (rc == 1)
    rc = lc__fail(LC_EREMOTE, "replication: the peer closed the connection");
  return rc == LC_ETIMEDOUT ? LC_EREMOTE : rc;
}

int lc__wire_tls(lc__wire *w, SSL_CTX *ctx, const char *host, int timeout_ms) {
  if ((w->ssl = lc__ssl_on(ctx, w->fd)) == NULL) return LC_ENOMEM;
  if (host && lc__ssl_expect_host(w->ssl, host)) return LC_ENOMEM;
  for (;;) {
    int r = host ? SSL_connect(w->ssl) : SSL_accept(w->ssl);
    if (r == 1) return 0;
    int rc = again(w, ssl_error(w, r), timeout_ms, "handshake");
    if (rc) {
      long v = SSL_get_verify_result(w->ssl);
      if (v != X509_V_OK)
        return lc__fail(LC_EREMOTE, "replication: TLS handshake: the %s's "
                        "certificate: %s", host ? "primary" : "standby",
                        X509_verify_cert_error_string(v));
      return rc;
    }
  }
}

int lc__wire_tls_io(lc__wire *w, int want, char *p, size_t n, int timeout_ms) {
  while (n) {
    size_t done = 0;
    pthread_mutex_lock(&w->mu);
    int r = want ? SSL_write_ex(w->ssl, p, n, &done)
                 : SSL_read_ex(w->ssl, p, n, &done);
    int e = r == 1 ? SSL_ERROR_NONE : ssl_error(w, r);
    pthread_mutex_unlock(&w->mu);
    if (r == 1) {
      p += done;
      n -= done;
      continue;
    }
    int rc = again(w, e, timeout_ms, want ? "send" : "recv");
    if (rc) return rc;
  }
  return 0;
}

void lc__wire_close(lc__wire *w) {
  if (w->ssl) {
    SSL_shutdown(w->ssl);
    SSL_free(w->ssl);
    w->ssl = NULL;
  }
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  pthread_mutex_destroy(&w->mu);
}
