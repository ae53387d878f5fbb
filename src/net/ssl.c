/*
 * net/ssl.c - OpenSSL on our own non-blocking sockets, for every TLS
 * connection the library makes or takes (remote mode and its admin relay,
 * tls.c and net/aconn.c; replication, wire.c): the BIO, the wait for
 * what OpenSSL asks, and its error text; the poll with a timeout is every
 * socket's, TLS or not (net/aconn.c, wire.c).
 *
 * OpenSSL reaches the socket through our BIO, which sends with
 * MSG_NOSIGNAL and never blocks: OpenSSL's socket BIO writes with
 * write(2), and a peer that is gone would raise SIGPIPE in the caller's
 * process.  A wait is a poll bounded by the caller's timeout.
 */
#include "net/net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

static ssize_t bio_io(BIO *b, int want, char *p, int n) {
  int fd = (int)(intptr_t)BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t r = want ? send(fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT)
                   : recv(fd, p, (size_t)n, MSG_DONTWAIT);
  if (r == 0 && !want) BIO_set_flags(b, BIO_FLAGS_IN_EOF);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    if (want)
      BIO_set_retry_write(b);
    else
      BIO_set_retry_read(b);
  }
  return r;
}

static int bio_write(BIO *b, const char *p, int n) {
  return (int)bio_io(b, 1, (char *)p, n);
}

static int bio_read(BIO *b, char *p, int n) { return (int)bio_io(b, 0, p, n); }

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)num;
  (void)ptr;
  if (cmd == BIO_CTRL_FLUSH) return 1;
  if (cmd == BIO_CTRL_EOF) return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
  return 0;
}

static BIO_METHOD *sock_method;
static pthread_once_t sock_once = PTHREAD_ONCE_INIT;

static void make_method(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                               "logcounter socket");
  if (m && (BIO_meth_set_write(m, bio_write) != 1 ||
            BIO_meth_set_read(m, bio_read) != 1 ||
            BIO_meth_set_ctrl(m, bio_ctrl) != 1)) {
    BIO_meth_free(m);
    m = NULL;
  }
  sock_method = m;
}

SSL *lc__ssl_on(SSL_CTX *ctx, int fd) {
  pthread_once(&sock_once, make_method);
  BIO *b = sock_method ? BIO_new(sock_method) : NULL;
  SSL *ssl = b ? SSL_new(ctx) : NULL;
  if (ssl == NULL) {
    BIO_free(b);
    lc__fail(LC_ENOMEM, "TLS: cannot make a connection");
    return NULL;
  }
  BIO_set_data(b, (void *)(intptr_t)fd);
  BIO_set_init(b, 1);
  SSL_set_bio(ssl, b, b);
  return ssl;
}

const char *lc__ssl_reason(char *buf, size_t n) {
  unsigned long e = ERR_get_error();
  if (e == 0) return NULL;
  ERR_error_string_n(e, buf, n);
  ERR_clear_error();
  return buf;
}

int lc__ssl_wait(int e, int fd, int timeout_ms, const char *who,
                 const char *op) {
  if (e == SSL_ERROR_ZERO_RETURN) return 1;
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
    return lc__net_poll_fd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                       timeout_ms, who, NULL);
  if (e == SSL_ERROR_SYSCALL && errno == EINTR) return 0;
  char buf[160];
  const char *why = lc__ssl_reason(buf, sizeof buf);
  if (why == NULL)
    why = e == SSL_ERROR_SYSCALL && errno ? strerror(errno)
                                          : "the peer closed the connection";
  return lc__fail(LC_EREMOTE, "%s: TLS %s: %s", who, op, why);
}

/* Why OpenSSL failed, never NULL. */
static const char *reason(char *buf, size_t n) {
  const char *why = lc__ssl_reason(buf, n);
  return why ? why : "no reason given";
}

int lc__ssl_ctx(const lc_options *o, bool server, SSL_CTX **out) {
  char why[200];
  SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == NULL) return lc__fail(LC_ENOMEM, "TLS: %s", reason(why, sizeof why));
  int rc = 0;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
                              (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                     NULL);
  if (SSL_CTX_load_verify_locations(ctx, o->tls_ca, NULL) != 1)
    rc = lc__fail(LC_EINVAL, "tls_ca '%s': %s", o->tls_ca,
                  reason(why, sizeof why));
  else if (o->tls_cert && o->tls_cert[0] &&
           SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1)
    rc = lc__fail(LC_EINVAL, "tls_cert '%s': %s", o->tls_cert,
                  reason(why, sizeof why));
  else if (o->tls_key && o->tls_key[0] &&
           (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1))
    rc = lc__fail(LC_EINVAL, "tls_key '%s': %s", o->tls_key,
                  reason(why, sizeof why));
  if (rc) {
    SSL_CTX_free(ctx);
    return rc;
  }
  *out = ctx;
  return 0;
}

int lc__ssl_expect_host(SSL *ssl, const char *host) {
  unsigned char ip[16];
  X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
  bool is_ip = inet_pton(AF_INET, host, ip) == 1 ||
               inet_pton(AF_INET6, host, ip) == 1;
  if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(p, host) != 1
            : (SSL_set1_host(ssl, host) != 1 ||
               SSL_set_tlsext_host_name(ssl, host) != 1))
    return lc__fail(LC_ENOMEM, "TLS: cannot set the host to check");
  return 0;
}
