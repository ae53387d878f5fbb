/*
 * client/client.h - a handle that talks to a logcounterd instead of its
 * own log (remote mode, remote.c), over TLS (tls.c), and the client of the
 * admin channel (admin.c), through which a remote handle's log calls go.
 * The layers above (log/, counter/, tally/) route a remote handle's calls
 * here.  Calls net/, cache/ and base/.
 */
#ifndef LC_CLIENT_H
#define LC_CLIENT_H

#include "cache/cache.h"
#include "net/net.h"

/* ---- tls.c: remote mode over TLS (lc_options.tls_ca) ---- */
typedef struct lc__tls lc__tls;
/* A pool of TLS connections to addr "HOST:PORT" (the options' CA, client
 * certificate, user, timeout and pool size); none is opened yet. */
int lc__tls_open(lc__tls **out, const lc_options *o, const char *addr);
void lc__tls_close(lc__tls *t);
/* As lc__cache_incr and lc__cache_get: 0 and *v, LC__MISS, or negative
 * (the daemon's SERVER_ERROR line in the detail). */
int lc__tls_incr(lc__tls *t, const char *key, uint64_t n, uint64_t *v);
int lc__tls_get(lc__tls *t, const char *key, uint64_t *v);
/* A new connection into c (not pooled), authenticated, that said "admin"
 * and was answered "OK admin": from then on it speaks admin.h's
 * protocol.  A refusal is LC_EAUTH with the daemon's reason. */
int lc__tls_admin(lc__tls *t, lc__aconn *c, int timeout_ms);

/* ---- remote.c ---- */
int lc__remote_config(const char *server, char *buf, size_t size);
/* Opens h->cache (and h->alt for "A,B"). */
int lc__remote_open(lc_t *h);
/* Closes every pool of the handle, local or remote: cache, alt and the
 * TLS ones (each safe unopened). */
void lc__remote_pools_close(lc_t *h);
int lc__remote_next(lc_t *h, const char *name, uint64_t n, int64_t *first);
int lc__remote_current(lc_t *h, const char *name, int64_t *value);
/* The log's calls go to an admin channel: an admin socket, or the
 * daemon's "admin" over TLS. */
#define LC__ADMIN_WAY(h) ((h)->admin || (h)->admin_tls)
/* Fails remote handles for calls that need the log; 0 otherwise (an
 * admin channel answers the log's calls: those route LC__ADMIN_WAY
 * first). */
#define LC__LOCAL_ONLY(h)                                                  \
  ((h)->remote ? lc__fail(LC_EREMOTE, "%s is not an admin socket (over "  \
                          "TCP, the log's calls need TLS and a user with " \
                          "the admin right)", (h)->opt.server)             \
               : 0)

/* ---- admin.c: a remote handle on an admin socket (h->admin) */
typedef struct lc__admin_stream lc__admin_stream; /* one request and its answer */
/* Sets h->admin when h->server answers "hello" as an admin socket. */
int lc__admin_probe(lc_t *h);
/* One call: the request (formatted), then up to nout numbers after OK
 * into out; 0 or the call's error (with the server's detail). */
int lc__admin_call(lc_t *h, int64_t *out, int nout, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int lc__admin_stream_open(lc_t *h, lc__admin_stream **out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 1 and *item (the next item line), 0 after OK, or the error; progress
 * lines go to progress (may be NULL). */
int lc__admin_stream_next(lc__admin_stream *s, char **item,
                     void (*progress)(void *, uint64_t, uint64_t), void *arg);
void lc__admin_stream_close(lc__admin_stream *s);
/* VERB NAME [ARG]: the calls on one name; up to nout numbers back. */
int lc__admin_op(lc_t *h, const char *verb, const char *name, const int64_t *arg,
                 int64_t *out, int nout);
int lc__admin_iter_next(lc__admin_stream *s, lc_record *rec, lc_gap *gap);
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
