/*
 * net/net.h - sockets, below everything that talks to a peer: TCP
 * addresses, listening and connecting with timeouts (sock.c), OpenSSL on
 * our non-blocking sockets (ssl.c), and the admin channel's line I/O
 * (aconn.c), which its server (core/admin_srv.c) and client
 * (client/admin.c) share.  Calls only base/.
 *
 * The admin channel: a unix socket (or the daemon's "admin" over TLS) on
 * which a handle serves every call, the log's included, to operators.
 * The wire format (version 1) is text, one line per message, "\r\n" ended:
 *   request:  VERB ARGS...            (one per line; a connection may send
 *                                      several, one after the other)
 *   items:    R first last count time_us version     a record
 *             B last detail                          an undecodable one
 *             G first last time_us cause [reason]    a ledger entry
 *             T total losses name                    a tally
 *             N name                                 a counter
 *             P n m                                  progress, keep-alive
 *   the end:  OK [numbers...]  or  ERR ENAME detail
 * Items stream as they are read from a snapshot, so a dump of any size
 * needs no more memory than the socket's buffers on either side; a client
 * that stops reading stops the server's thread, never an allocation.
 * The verbs are in admin_ops.c; logcounterd's data ports refuse them.
 */
#ifndef LC_NET_H
#define LC_NET_H

#include "base/base.h"

#include <stdarg.h>

struct ssl_st;     /* OpenSSL's SSL and SSL_CTX */
struct ssl_ctx_st;

/* ---- sock.c: TCP ---- */
/* Waits up to timeout_ms for fd to be readable (POLLIN) or writable:
 * 0, LC_ETIMEDOUT or LC_EREMOTE; who names the peer in the detail, what
 * the thing awaited (NULL: "answer" or "room to write"). */
int lc__net_poll_fd(int fd, short ev, int timeout_ms, const char *who,
                    const char *what);
/* The HOST of "HOST:PORT" ("[v6]:PORT" too; the last colon) into host,
 * and where the port starts (port may be NULL); LC_EINVAL naming what. */
int lc__net_addr_host(const char *what, const char *addr, char *host,
                      size_t size, const char **port);
/* A listening TCP socket on "HOST:PORT" (numeric or a name; IPv4 or
 * IPv6) into *fd; LC_EINVAL naming the address. */
int lc__net_listen(const char *addr, int *fd);
/* A connected non-blocking TCP socket (TCP_NODELAY) into *fd, the connect
 * bounded by timeout_ms; what names the connection in errors
 * ("replication", "server"): LC_EINVAL or LC_EREMOTE. */
int lc__net_connect(const char *what, const char *addr, int timeout_ms,
                    int *fd);
/* fd's peer (peer) or local address as "HOST:PORT" ("[v6]:PORT"), or "". */
void lc__net_sock_name(int fd, bool peer, char *out, size_t size);

/* ---- ssl.c: OpenSSL on our non-blocking sockets ---- */
/* A TLS connection of ctx over fd, through a BIO that never blocks and
 * never raises SIGPIPE; NULL (LC_ENOMEM's detail set). */
struct ssl_st *lc__ssl_on(struct ssl_ctx_st *ctx, int fd);
/* After an OpenSSL call on fd failed with SSL_get_error e (op names the
 * call): 0 to call it again (after waiting for what OpenSSL asked), 1 at
 * a clean end of the stream (close_notify), or the failure. */
int lc__ssl_wait(int e, int fd, int timeout_ms, const char *who,
                 const char *op);
/* The oldest OpenSSL error as text in buf (the queue is then cleared);
 * NULL if there is none. */
const char *lc__ssl_reason(char *buf, size_t n);
/* A context from o's tls_ca (every peer's certificate must chain to it),
 * tls_cert and tls_key (ours, if given); TLS 1.2 at least.  A server's
 * requires the client's certificate.  0, LC_EINVAL (a file that does not
 * load, OpenSSL's words) or LC_ENOMEM. */
int lc__ssl_ctx(const lc_options *o, bool server, struct ssl_ctx_st **out);
/* A client's ssl checks that the server's certificate names host (an IP
 * address or a DNS name, then also sent as SNI).  0 or LC_ENOMEM. */
int lc__ssl_expect_host(struct ssl_st *ssl, const char *host);

/* ---- aconn.c: the admin channel's lines ---- */
#define LC__ADMIN_PROTO 1
#define LC__ADMIN_LINE_MAX 4096 /* longest line either side sends */
#define LC__ADMIN_WBUF 65536    /* output buffered before a write */

/* One end of an admin connection: a socket with a read buffer, a write
 * buffer, and a timeout for each wait. */
typedef struct lc__aconn {
  int fd;
  struct ssl_st *ssl; /* TLS over fd (lc__aconn_tls), or NULL: plain */
  int timeout_ms; /* for each read or write wait */
  size_t rpos, rlen, wlen;
  char rbuf[LC__ADMIN_LINE_MAX + 2];
  char wbuf[LC__ADMIN_WBUF];
} lc__aconn;

void lc__aconn_init(lc__aconn *c, int fd, int timeout_ms);
/* Closes fd (after a TLS close_notify when ssl is set). */
void lc__aconn_close(lc__aconn *c);
/* Sets c->ssl: a TLS connection of ctx over c->fd (lc__ssl_on).  0 or
 * LC_ENOMEM. */
int lc__aconn_tls(lc__aconn *c, struct ssl_ctx_st *ctx);
/* With c->ssl set on a connected fd: the client's TLS handshake, each
 * wait bounded by the timeout.  0 or negative. */
int lc__aconn_handshake(lc__aconn *c);
/* The next line (without its "\r\n", NUL-terminated, valid until the next
 * call): 1, 0 at a clean end of the stream, or a negative code. */
int lc__aconn_readline(lc__aconn *c, char **line);
/* Buffers one formatted line (the "\r\n" is added; control characters in
 * it become '?'); flushes when the buffer fills.  0 or negative. */
int lc__aconn_printf(lc__aconn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int lc__aconn_flush(lc__aconn *c);

#endif
