/*
 * lcd_tls.c - TLS for logcounterd's data ports and /metrics: one SSL_CTX
 * per server (--tls-cert, --tls-key, --tls-ca, --tls-verify), an SSL per
 * connection inside a libevent OpenSSL bufferevent (lcd_conn.c uses it as
 * any bufferevent, but writes only through it: see flush_out there;
 * lcd_metrics.c hands it to evhttp, from the HTTP thread).
 *
 * Invariants:
 *  - TLS 1.2 at least; no renegotiation, no compression;
 *  - the context in use is ctx, under mu: a connection's SSL_new takes a
 *    reference to it (OpenSSL counts it), so SIGHUP (lcd_tls_reload)
 *    builds a new context from the files, swaps it in for new
 *    connections and drops the server's reference to the old one, which
 *    goes when its last connection is freed.  A reload that fails (a
 *    missing file, a key that does not match) keeps the old context and
 *    logs why;
 *  - handshake failures are the connection's (lcd_conn.c counts them in
 *    ssl_handshake_errors and closes it); nothing here blocks.
 */
#include "lcd_server.h"
#include "lcd_settings.h"
#include "lcd_tls.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lcd_tls {
  pthread_mutex_t mu;
  SSL_CTX *ctx;        /* for new connections; under mu */
  time_t refreshed;    /* lcd_now() when ctx was built */
  _Atomic uint64_t reloads, reload_errors;
};

const char *lcd_tls_verify_name(int mode) {
  return mode == LCD_TLS_VERIFY_REQUIRE   ? "require"
         : mode == LCD_TLS_VERIFY_REQUEST ? "request"
                                          : "none";
}

/* OpenSSL's last error as text, into buf. */
static const char *ssl_reason(char *buf, size_t n) {
  unsigned long e = ERR_get_error();
  if (!e) {
    snprintf(buf, n, "unknown error");
  } else {
    ERR_error_string_n(e, buf, n);
  }
  ERR_clear_error();
  return buf;
}

/* A new context from the settings' files; NULL with why in err. */
static SSL_CTX *build_ctx(const lcd_settings *set, char *err, size_t n) {
  char why[256];
  const char *what = "cannot set up TLS";
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) goto fail;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* IGNORE_UNEXPECTED_EOF: OpenSSL 3 makes a TCP close without
   * close_notify an SSL error; most clients close that way, and it is an
   * EOF as on plain TCP (with the bufferevent's allow_dirty_shutdown). */
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_IGNORE_UNEXPECTED_EOF);
  static const unsigned char sid[] = LCD_PROG;
  SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
  what = set->tls_cert;
  if (SSL_CTX_use_certificate_chain_file(ctx, set->tls_cert) != 1) goto fail;
  what = set->tls_key;
  if (SSL_CTX_use_PrivateKey_file(ctx, set->tls_key, SSL_FILETYPE_PEM) != 1)
    goto fail;
  what = "the key does not match the certificate";
  if (SSL_CTX_check_private_key(ctx) != 1) goto fail;
  int mode = SSL_VERIFY_NONE;
  if (set->tls_ca) {
    what = set->tls_ca;
    if (SSL_CTX_load_verify_locations(ctx, set->tls_ca, NULL) != 1) goto fail;
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(set->tls_ca);
    if (names) SSL_CTX_set_client_CA_list(ctx, names);
  }
  if (set->tls_verify == LCD_TLS_VERIFY_REQUEST) mode = SSL_VERIFY_PEER;
  if (set->tls_verify == LCD_TLS_VERIFY_REQUIRE)
    mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(ctx, mode, NULL);
  return ctx;
fail:
  snprintf(err, n, "%s: %s", what, ssl_reason(why, sizeof why));
  SSL_CTX_free(ctx);
  return NULL;
}

int lcd_tls_init(lcd_server *s) {
  if (!s->set->tls_cert) return 0;
  char err[512];
  SSL_CTX *ctx = build_ctx(s->set, err, sizeof err);
  if (!ctx) {
    fprintf(stderr, LCD_PROG ": cannot set up TLS: %s\n", err);
    return 1;
  }
  struct lcd_tls *t = calloc(1, sizeof *t);
  if (!t) {
    SSL_CTX_free(ctx);
    fprintf(stderr, LCD_PROG ": cannot set up TLS: out of memory\n");
    return 1;
  }
  pthread_mutex_init(&t->mu, NULL);
  t->ctx = ctx;
  t->refreshed = lcd_now();
  s->tls = t;
  return 0;
}

void lcd_tls_reload(lcd_server *s) {
  struct lcd_tls *t = s->tls;
  if (!t) return;
  char err[512];
  SSL_CTX *ctx = build_ctx(s->set, err, sizeof err);
  if (!ctx) {
    atomic_fetch_add(&t->reload_errors, 1);
    lcd_log(s->set, 0, "SIGHUP: certificates not reloaded, keeping the old "
                       "ones: %s", err);
    return;
  }
  pthread_mutex_lock(&t->mu);
  SSL_CTX *old = t->ctx;
  t->ctx = ctx;
  t->refreshed = lcd_now();
  pthread_mutex_unlock(&t->mu);
  SSL_CTX_free(old); /* the connections' SSLs hold their own references */
  atomic_fetch_add(&t->reloads, 1);
  lcd_log(s->set, 0, "SIGHUP: certificates reloaded from %s and %s%s%s",
          s->set->tls_cert, s->set->tls_key, s->set->tls_ca ? " (CA " : "",
          s->set->tls_ca ? s->set->tls_ca : "");
}

void lcd_tls_free(lcd_server *s) {
  struct lcd_tls *t = s->tls;
  if (!t) return;
  SSL_CTX_free(t->ctx);
  pthread_mutex_destroy(&t->mu);
  free(t);
  s->tls = NULL;
}

struct bufferevent *lcd_tls_bev(lcd_server *s, struct event_base *base,
                                int fd) {
  struct lcd_tls *t = s->tls;
  pthread_mutex_lock(&t->mu);
  SSL *ssl = SSL_new(t->ctx); /* takes a reference to the context */
  pthread_mutex_unlock(&t->mu);
  if (!ssl) {
    ERR_clear_error();
    return NULL;
  }
  struct bufferevent *bev = bufferevent_openssl_socket_new(
      base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
  if (!bev) {
    SSL_free(ssl);
    return NULL;
  }
  /* A client that closes TCP without close_notify (most memcached
   * clients) is an EOF, as on plain TCP, not an error. */
  bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
  return bev;
}

void lcd_tls_shutdown(struct bufferevent *bev) {
  SSL *ssl = bufferevent_openssl_get_ssl(bev);
  if (ssl && SSL_is_init_finished(ssl) &&
      !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
    SSL_shutdown(ssl); /* non-blocking socket: one try */
  ERR_clear_error();
}

size_t lcd_tls_pending(struct bufferevent *bev) {
  SSL *ssl = bufferevent_openssl_get_ssl(bev);
  int n = ssl ? SSL_pending(ssl) : 0;
  return n > 0 ? (size_t)n : 0;
}

const char *lcd_tls_error(struct bufferevent *bev, char *buf, size_t n) {
  unsigned long e = bufferevent_get_openssl_error(bev);
  if (!e) return NULL;
  ERR_error_string_n(e, buf, n);
  while (bufferevent_get_openssl_error(bev)) continue; /* the rest */
  return buf;
}

void lcd_tls_figures(lcd_server *s, uint64_t *reloads, uint64_t *failed,
                     int64_t *since_refresh) {
  struct lcd_tls *t = s->tls;
  *reloads = *failed = 0;
  *since_refresh = 0;
  if (!t) return;
  *reloads = atomic_load(&t->reloads);
  *failed = atomic_load(&t->reload_errors);
  pthread_mutex_lock(&t->mu);
  *since_refresh = (int64_t)(lcd_now() - t->refreshed);
  pthread_mutex_unlock(&t->mu);
}
