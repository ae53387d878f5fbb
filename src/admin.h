/*
 * admin.h - the admin channel, shared by its server (admin_srv.c,
 * admin_ops.c) and its client (admin_cli.c): a unix socket on which a
 * handle serves every call, the log's included, to operators.
 *
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
#ifndef LC_ADMIN_H
#define LC_ADMIN_H

#include "internal.h"

#include <stdarg.h>

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

/* ---- admin_srv.c: the listener of a local handle (h->admin_srv) */
int lc__admin_start(lc_t *h);
void lc__admin_stop(lc_t *h);

/* ---- admin_ops.c: one request, answered on c (0, or negative when the
 * connection should be dropped) */
int lc__admin_serve(lc_t *h, lc__aconn *c, char *line);

/* ---- admin_cli.c: a remote handle on an admin socket (h->admin) */
typedef struct lc__astream lc__astream; /* one request and its answer */
/* Sets h->admin when h->server answers "hello" as an admin socket. */
int lc__admin_probe(lc_t *h);
/* One call: the request (formatted), then up to nout numbers after OK
 * into out; 0 or the call's error (with the server's detail). */
int lc__admin_call(lc_t *h, int64_t *out, int nout, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int lc__astream_open(lc_t *h, lc__astream **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 and *item (the next item line), 0 after OK, or the error; progress
 * lines go to progress (may be NULL). */
int lc__astream_next(lc__astream *s, char **item,
                     void (*progress)(void *, uint64_t, uint64_t), void *arg);
void lc__astream_close(lc__astream *s);
/* VERB NAME [ARG]: the calls on one name; up to nout numbers back. */
int lc__admin_op(lc_t *h, const char *verb, const char *name, const int64_t *arg,
                 int64_t *out, int nout);
int lc__admin_iter_next(lc__astream *s, lc_record *rec, lc_gap *gap);
int lc__admin_prune(lc_t *h, const char *name, const lc_prune_opts *o,
                    lc_prune_result *res);
int lc__admin_backup(lc_t *h, const char *dir, const lc_backup_opts *o,
                     lc_backup_result *res);
int lc__admin_tally_list(lc_t *h, const lc_tally_list_opts *o,
                         uint64_t *count);
int lc__admin_promote(lc_t *h, const lc_promote_opts *o, uint64_t *counters);
int lc__admin_list_counters(lc_t *h, int (*fn)(void *, const char *),
                            void *arg, uint64_t *count);

#endif
