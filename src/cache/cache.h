/*
 * cache/cache.h - memcached: one command at a time through
 * libmemcachedutil's pool, with timeouts (cache.c), and many commands in
 * one round trip on connections of our own (cache_pipe.c).  Calls only
 * base/.
 */
#ifndef LC_CACHE_H
#define LC_CACHE_H

#include "base/base.h"

#include <libmemcached/memcached.h>
#include <libmemcached/util.h>

#define LC__PIPES 16 /* cache_pipe.c's idle connections kept */
typedef struct lc__cache {
  memcached_pool_st *pool;
  memcached_st *master;
  struct timespec fetch_wait;
  char *auth; /* remote mode: "USER PASSWORD", sent first on each
                 connection (lc__cache_set_auth); NULL: none */
  size_t auth_len;
  pthread_mutex_t pipe_mu; /* cache_pipe.c: its idle connections */
  struct {
    char host[128];
    unsigned port;
    int fd;
  } pipes[LC__PIPES];
  int npipe;
} lc__cache;

int lc__cache_open(lc__cache *c, const char *config, int timeout_ms,
                   int pool_size);
void lc__cache_close(lc__cache *c);
/* Remote mode: every connection authenticates with memcached's text
 * handshake ("set" of "USER PASSWORD") before its first request.  0 or
 * LC_ENOMEM. */
int lc__cache_set_auth(lc__cache *c, const char *user, const char *password);
/* 0 and *out, LC__MISS, or a negative code (LC_EBADVALUE for a key that
 * holds something that is not a number). */
int lc__cache_incr(lc__cache *c, const char *key, size_t klen, uint64_t delta,
                   uint64_t *out);
int lc__cache_get(lc__cache *c, const char *key, size_t klen, uint64_t *out);
/* Sets key to `to` if it still holds exactly `expect` (gets + cas): 0,
 * LC__EXISTS when it holds something else or changed meanwhile,
 * LC__MISS, or negative. */
int lc__cache_lower(lc__cache *c, const char *key, size_t klen, uint64_t expect,
                    uint64_t to);
/* 0 when stored, LC__EXISTS when the key is present, or negative. */
int lc__cache_add(lc__cache *c, const char *key, size_t klen, uint64_t v);
/* Text values kept on the server of master (the counter's key): add
 * (0, LC__EXISTS or negative), get into buf (NUL-terminated, cut to
 * size - 1; 0, LC__MISS or negative) and delete (0, LC__MISS or
 * negative). */
int lc__cache_add_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, const char *v, size_t vlen,
                       time_t ttl);
int lc__cache_get_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, char *buf, size_t size);
/* set, no expiry: 0 or negative. */
int lc__cache_set_text(lc__cache *c, const char *master, size_t mlen,
                       const char *key, size_t klen, const char *v,
                       size_t vlen);
int lc__cache_delete(lc__cache *c, const char *master, size_t mlen,
                     const char *key, size_t klen);
/* One multi-get of n keys: fn is called for each key found (in any
 * order); 0 or a negative code.  0 means every key not found is missing:
 * a server whose connection failed during the call fails it, though the
 * others answered. */
typedef void (*lc__cache_got)(void *arg, const char *key, size_t klen,
                              const char *val, size_t vlen);
int lc__cache_mget(lc__cache *c, const char *const *keys, const size_t *lens,
                   size_t n, lc__cache_got fn, void *arg);
/* cache_pipe.c: commands sent together, each to the server of its master
 * key, replies read in order.  Each op's rc: 0; LC__EXISTS (add: not
 * stored); LC__MISS (incr: no such key; get: none); or negative.  The
 * call returns 0 when it ran (each op has its rc), LC__MISS when the
 * config is not one this speaks (not TCP, a namespace, binary protocol,
 * authentication: go one command at a time), or negative. */
/* ADD: 0 stored, LC__EXISTS.  INCR: 0 and num, LC__MISS.  GET, GETS: 0
 * and text (and GETS's cas), LC__MISS.  CAS (val if the key's cas is
 * still cas): 0 stored, LC__EXISTS when it changed or is gone. */
enum { LC__OP_ADD, LC__OP_INCR, LC__OP_GET, LC__OP_GETS, LC__OP_CAS };
typedef struct lc__op {
  int kind;
  const char *master, *key, *val; /* val: ADD's, CAS's value (text, no NUL) */
  size_t mlen, klen, vlen;
  uint64_t delta; /* INCR */
  int rc;
  uint64_t num;   /* INCR: the new value */
  uint64_t cas;   /* GETS: the key's cas unique; CAS: the one expected */
  char text[128]; /* GET, GETS: the value, NUL-terminated (cut) */
} lc__op;
int lc__cache_pipe(lc__cache *c, lc__op *ops, size_t n);
void lc__cache_pipe_close(lc__cache *c); /* its kept connections */
/* The reply to op at the start of buf[0..len), as the server host:port
 * sent it (host, port: for the error detail).  Returns 0 with *used > 0:
 * one whole reply, its bytes; op->rc set as lc__cache_pipe gives it (see
 * above; negative with the detail for a reply that is an error or not
 * one op expects: SERVER_ERROR, CLIENT_ERROR, ERROR, a number past
 * 2^64-1, a line meant for another op: the replies after it still
 * match) and num (INCR), text, cas (GET, GETS).  0 with *used 0: not all
 * here yet, op untouched.  Negative (lc__fail's code): buf does not start
 * with a reply to op (a line not ended by CR LF; a GET answered by
 * anything but END or VALUE op's key, or by a length that wraps):
 * nothing after it can be matched, op untouched.  A value longer than op->text is cut. */
int lc__cache_pipe_reply(lc__op *op, const char *buf, size_t len,
                         const char *host, unsigned port, size_t *used);
/* memcached's decimal counter text (maybe space-padded) as a number. */
bool lc__cache_parse_u64(const char *v, size_t n, uint64_t *out);

#endif
