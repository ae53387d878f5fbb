/*
 * internal.h - declarations shared by the files of liblogcounter.
 *
 * Internal non-static names start with lc__.  The data layout (keys,
 * records, ledger entries, tallies) is in format.h.  The pieces:
 *   errors.c   the error table and the thread-local failure detail
 *   keys.c     counter names, memcached keys, LevelDB keys and record codecs
 *   cache.c    memcached through libmemcachedutil's pool, with timeouts;
 *              cache_pipe.c many commands in one round trip (first.c)
 *   log.c      the LevelDB log: open/lock, append, reverse seek, iteration;
 *              log_write.c its writes (one group at a time; the first
 *              failed write is the last), recover.c reopening a failed log
 *   prune.c    deleting old records in batches and compacting the range
 *   The counters, in layers (each calls only those below it):
 *   first.c    lc_next_each: many counters at once, first uses batched
 *   next.c     lc_next_n's way in: to remote.c, prefetch.c or counter.c
 *   counter_ops.c  the operations that run alone: current, restore,
 *              advance, release, adopt, failover, void
 *   prefetch.c with prefetch: ids from held segments, the fetches, the
 *              prefetcher thread
 *   counter.c  per-counter state and the name table, the leader role,
 *              load, claim, seed, increment, restore, skip; batching of
 *              concurrent callers without prefetch; close and eviction
 *   the leaves, which take the counter they work on and call none of
 *   the above:
 *   segment.c  prefetched segments' state: take, size, record, install;
 *              seg_fast.c their lock-free window and the counter's lock
 *   ledger.c   the gap ledger: why values are missing, and voids
 *   claim.c    one owning log per counter, enforced in memcached
 *   and beside them:
 *   evict.c    idle eviction: the calls' gate, the passes and their thread
 *   iter.c     reading a counter's records (and ledger) in order
 *   names.c    the hash table of names (counters and tallies)
 *   tally*.c   tallies: write-behind counts (tally.c: add, get, state;
 *              tally_flush.c, tally_list.c, tally_rec.c)
 *   backup.c   lc_backup (a copy of the log from one snapshot), restored
 *              logs and their pending counters
 *   remote.c   remote mode: the same calls, answered by a logcounterd;
 *              tls.c over TLS (and the admin relay), tls_sock.c the
 *              OpenSSL socket layer every TLS connection shares
 *   replicate.c, follow.c, promote.c, repl_*.c  the hot standby (repl.h;
 *              repl_tls.c replication over mutual TLS)
 *   cluster.c  automatic failover's hooks: the lease deadline that fences
 *              allocations, the standby's address and its approval, the
 *              log-kind probe, the term record (logcounterd --etcd)
 *   admin*.c   the admin socket: its server (admin_srv.c, admin_ops.c),
 *              its client (admin_cli.c), their line I/O (admin_io.c);
 *              admin.h
 *   retain.c   retention: listing the log's counters, the pruning thread
 *   handle.c   lc_open / lc_close, options, stats
 *   latency.c  histograms of the floor writes' latency (lc_get_latency)
 */
#ifndef LC_INTERNAL_H
#define LC_INTERNAL_H

#include "format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <sys/types.h>
#include <leveldb/c.h>
#include <libmemcached/memcached.h>
#include <libmemcached/util.h>

#define LC__STRIPES 16 /* h->calls */

struct ssl_st;     /* OpenSSL's SSL and SSL_CTX, for the TLS parts */
struct ssl_ctx_st;

/* Positive "not an error" results of internal calls. */
#define LC__MISS 1   /* memcached does not have the key */
#define LC__EXISTS 2 /* memcached add found the key present */

/* ---- errors.c ---- */
#define LC__DETAIL_MAX 256
/* Sets the calling thread's failure detail (printf-style) and returns err. */
int lc__fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void lc__detail_clear(void);
void lc__detail_set(const char *text);

/* ---- cache.c ---- */
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
int lc__cache_delete(lc__cache *c, const char *master, size_t mlen,
                     const char *key, size_t klen);
/* One multi-get of n keys: fn is called for each key found (in any
 * order); 0 or a negative code. */
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
/* memcached's decimal counter text (maybe space-padded) as a number. */
bool lc__cache_parse_u64(const char *v, size_t n, uint64_t *out);

/* ---- log.c, log_write.c: the LevelDB log ---- */
/* The log's state (lc__log.state).  Any failed write moves OK to FAILED:
 * from then on nothing is read or written through the handle (every call
 * gets LC_ELOG with the reason) until recover.c has reopened LevelDB
 * (RECOVERING while it works).  LOST: the directory was removed or
 * replaced; never reopened. */
enum { LC__LOG_OK, LC__LOG_FAILED, LC__LOG_RECOVERING, LC__LOG_LOST };

typedef struct lc__wreq lc__wreq; /* log_write.c: a write waiting its turn */

typedef struct lc__log {
  leveldb_t *db;
  leveldb_options_t *options;
  leveldb_writeoptions_t *sync, *nosync;
  leveldb_readoptions_t *read;
  char *path;
  char *owner_path;
  int owner_fd; /* DIR/OWNER, flock-ed while the log is open */
  bool owner_locked;
  char id[LC__ID_LEN + 1]; /* the log's identity, checked at a reopen */
  dev_t dev;               /* the directory, as opened */
  ino_t ino;
  /* Every use of db holds gate for reading (lc__log_enter); a reopen
   * holds it for writing.  Entry is refused unless state is OK, so a
   * reopen waits only for the calls already inside. */
  pthread_rwlock_t gate;
  _Atomic int state;
  _Atomic uint64_t gen; /* reopens so far (iterators of an older one die) */
  /* log_write.c: one write goes to LevelDB at a time (its leader takes
   * the queue's batches as one group), so no write can land behind a
   * failed one. */
  pthread_mutex_t wmu;
  lc__wreq *whead, *wtail;
  bool writing;
  leveldb_writebatch_t *group;
  _Atomic int64_t checked_us; /* last check of the directory (monotonic) */
  /* The failure record (fmu): what failed, when, and the recoveries. */
  pthread_mutex_t fmu;
  char why[LC__DETAIL_MAX]; /* the failure that made it FAILED or LOST */
  char last_attempt[LC__DETAIL_MAX]; /* the last failed reopen, or "" */
  int64_t failed_us, recovered_us;   /* wall clock; 0: never */
  uint64_t failures, recoveries, attempts;
  lc_iter *iters;             /* open iterators (fmu), closed by a reopen */
  void (*on_fail)(void *arg); /* called once per failure (recover.c) */
  void *on_fail_arg;
  struct lc__repl *repl; /* replicate.c: the stream to a standby, or NULL */
  _Atomic bool standby;  /* follow.c: writes only by the follower */
} lc__log;

int lc__log_open(lc__log *l, const char *path, int lock_wait_ms,
                 const char *owner);
void lc__log_close(lc__log *l);
/* Batch pieces: a record of the given version (LC_RECORD_*), the deletion
 * of the record whose last value is last, the reservation. */
void lc__log_batch_record(leveldb_writebatch_t *b, const char *name,
                          size_t nlen, int64_t last, int version,
                          uint64_t count, int64_t time_us);
void lc__log_batch_unrecord(leveldb_writebatch_t *b, const char *name,
                            size_t nlen, int64_t last);
void lc__log_batch_reservation(leveldb_writebatch_t *b, const char *name,
                               size_t nlen, int64_t reservation);
/* The value of key (free it with leveldb_free), *v NULL when absent; 0
 * or LC_ELOG (what: for the detail). */
int lc__log_get(lc__log *l, const char *key, size_t klen, char **v,
                size_t *vlen, const char *what);
int lc__log_get_reservation(lc__log *l, const char *name, size_t nlen,
                            int64_t *out);
/* The largest logged value of the counter (0 if none): one reverse seek. */
int lc__log_max(lc__log *l, const char *name, size_t nlen, int64_t *out);
/* An iterator on the last key at or below the keys under prefix (whose
 * last byte is '\0'), or invalid; the caller checks the prefix and holds
 * the gate (lc__log_enter) until it destroys it. */
leveldb_iterator_t *lc__log_seek_last(lc__log *l, const char *prefix,
                                      size_t plen);
/* The same for any prefix whose keys end in a be64 value (what: for the
 * error detail). */
int lc__log_last(lc__log *l, char *prefix, size_t plen, const char *what,
                 int64_t *out);
/* ledger.c: the last value of the counter's ledger entries (0 if none). */
int lc__ledger_max(lc__log *l, const char *name, size_t nlen, int64_t *out);
/* log_write.c.  Writes b (synced when sync), in turn with every other
 * write of the handle; the first failure fails the log (lc__log_fail). */
int lc__log_write(lc__log *l, leveldb_writebatch_t *b, bool sync);
/* lc__log_write of b, synced, through h's log, counted in h's stats
 * (log_writes, log_syncs) and, with lat >= 0, timed into that latency
 * histogram (LC__LAT_*).  b stays the caller's. */
int lc__log_sync(lc_t *h, leveldb_writebatch_t *b, int lat);
/* Enters the log for reading (0), or LC_ELOG when it is not OK; every 0
 * is paired with lc__log_leave. */
int lc__log_enter(lc__log *l);
void lc__log_leave(lc__log *l);
/* LC_ELOG saying why the log cannot be used now (its state). */
int lc__log_refuse(lc__log *l);
/* 0 while the log is OK, else lc__log_refuse: the check before anything
 * is taken from memcached or acknowledged. */
static inline int lc__log_ok(lc__log *l) {
  return atomic_load(&l->state) == LC__LOG_OK ? 0 : lc__log_refuse(l);
}
/* A write failed (err: LevelDB's words): OK -> FAILED, recorded, and
 * on_fail called; returns LC_ELOG with err. */
int lc__log_fail(lc__log *l, const char *err);
/* The directory is still the one opened (0), else the log is LOST and
 * LC_ELOG; at most every 100 ms unless force. */
int lc__log_check_dir(lc__log *l, bool force);
/* log.c, for recover.c only (gate held for writing, state RECOVERING):
 * closes LevelDB and opens it again; 0, or LC_ELOG (the state is then
 * FAILED again, or LOST when the directory or its identity changed). */
int lc__log_reopen(lc__log *l);
/* claim.c: the log's identity (read, or made and synced on first open). */
int lc__log_identity(lc__log *l, char id[LC__ID_LEN + 1]);
/* claim.c: 64 random bits from /dev/urandom (the time and pid if that
 * fails, which only weakens the randomness). */
uint64_t lc__random64(void);
/* claim.c: h->claim from h->log_id, the host name and the pid. */
void lc__claim_text(lc_t *h);

/* ---- names.c: the name table of counters and tallies ---- */
typedef struct lc__named { /* the first member of an entry */
  struct lc__named *next;  /* hash chain */
  const char *name;
  size_t nlen;
} lc__named;
typedef struct lc__names {
  lc__named **buckets; /* nbuckets (a power of two, doubling) */
  size_t nbuckets;
  uint64_t count, max; /* entries; the limit (kept by callers) */
} lc__names;
/* The entry named name (n bytes), or NULL. */
lc__named *lc__names_find(const lc__names *t, const char *name, size_t n);
/* Adds e (name and nlen set, not present); false when out of memory. */
bool lc__names_add(lc__names *t, lc__named *e);
/* Takes e (present) out of the table. */
void lc__names_remove(lc__names *t, lc__named *e);
/* Calls fn on every entry (fn may free it). */
void lc__names_each(const lc__names *t, void (*fn)(lc__named *e, void *arg),
                    void *arg);
/* Calls fn on the entries of whole buckets from `from` on, until at least
 * budget entries were seen (returns the next bucket) or fn returns false
 * (returns fn's bucket, to be walked again); nbuckets at the end.  fn may
 * not free the entry.  A walk over a table that grew meanwhile may miss
 * entries. */
size_t lc__names_walk(const lc__names *t, size_t from, size_t budget,
                      bool (*fn)(lc__named *e, void *arg), void *arg);
/* Forgets every entry (free them first, with lc__names_each). */
void lc__names_clear(lc__names *t);

/* ---- counter.c ---- */
typedef struct lc__counter lc__counter;
typedef struct lc__table {
  pthread_mutex_t mu;
  lc__names names; /* the counters, by name */
} lc__table;
void lc__table_init(lc__table *t);
/* evict.c, with no call inside: closes each of v[0..n) that nothing uses
 * (untouched since the scan, nothing under way) as lc__table_close does,
 * takes it out of the table and frees it; returns how many, or a negative
 * code (the write failed: none was). */
int lc__counters_evict(lc_t *h, lc__counter **v, size_t n);
/* Writes each counter's exact reservation (one synced batch), with the
 * records of its prefetched segments cut to what went out, lowers
 * memcached to match where it still holds what this handle left there,
 * and frees. */
int lc__table_close(lc__table *t, lc__log *log, lc__cache *cache);
/* prefetch.c: the prefetcher thread of a handle with prefetch on. */
int lc__prefetcher_start(lc_t *h);
void lc__prefetcher_stop(lc_t *h);
/* Test seam, only in the library that tests and chaos link (built with
 * LC_TEST_SEAMS): called between a block's increment and its log write
 * (after the leader role was handed on); NULL unless set. */
#ifdef LC_TEST_SEAMS
extern void (*lc__test_before_commit)(const char *name);
#define LC__SEAM_BEFORE_COMMIT(name) \
  (lc__test_before_commit ? lc__test_before_commit(name) : (void)0)
#else
#define LC__SEAM_BEFORE_COMMIT(name) ((void)0)
#endif
/* Test seam (evict.c): called between two chunks of an eviction walk, no
 * lock held, with the candidates found so far; NULL unless set. */
#ifdef LC_TEST_SEAMS
extern void (*lc__test_walk_chunk)(lc_t *h, size_t candidates);
#define LC__SEAM_WALK_CHUNK(h, n) \
  (lc__test_walk_chunk ? lc__test_walk_chunk(h, n) : (void)0)
#else
#define LC__SEAM_WALK_CHUNK(h, n) ((void)0)
#endif

/* ---- tally.c (tallies: write-behind counts) ---- */
typedef struct lc__tally lc__tally;
typedef struct lc__tallies {
  pthread_mutex_t mu;                 /* the name table and the dirty queue */
  lc__names names;                    /* the tallies, by name */
  lc__tally *dirty_head, *dirty_tail; /* scheduled, in schedule order */
  uint64_t seq;                       /* enqueues so far */
  _Atomic unsigned window_s;
} lc__tallies;
void lc__tallies_init(lc__tallies *t);
void lc__tallies_close(lc__tallies *t);

/* ---- tls_sock.c: OpenSSL on our non-blocking sockets ---- */
/* A TLS connection of ctx over fd, through a BIO that never blocks and
 * never raises SIGPIPE; NULL (LC_ENOMEM's detail set). */
struct ssl_st *lc__ssl_on(struct ssl_ctx_st *ctx, int fd);
/* Waits up to timeout_ms for fd to be readable (POLLIN) or writable:
 * 0, LC_ETIMEDOUT or LC_EREMOTE; who names the peer in the detail, what
 * the thing awaited (NULL: "answer" or "room to write"). */
int lc__poll_fd(int fd, short ev, int timeout_ms, const char *who,
                const char *what);
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
int lc__tls_ctx(const lc_options *o, bool server, struct ssl_ctx_st **out);
/* A client's ssl checks that the server's certificate names host (an IP
 * address or a DNS name, then also sent as SNI).  0 or LC_ENOMEM. */
int lc__ssl_expect_host(struct ssl_st *ssl, const char *host);

/* ---- tls.c: remote mode over TLS (lc_options.tls_ca) ---- */
typedef struct lc__tls lc__tls;
/* repl_tls.c: a local handle's replication is mutual TLS */
bool lc__repl_tls_on(const lc_options *o);
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
struct lc__aconn;
int lc__tls_admin(lc__tls *t, struct lc__aconn *c, int timeout_ms);

/* ---- remote.c ---- */
int lc__remote_config(const char *server, char *buf, size_t size);
/* Opens h->cache (and h->alt for "A,B"). */
int lc__remote_open(lc_t *h);
/* Closes every pool of the handle, local or remote: cache, alt and the
 * TLS ones (each safe unopened). */
void lc__pools_close(lc_t *h);
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

/* ---- backup.c: restored logs ---- */
/* At open: h->restored from the marker (LC_ELOG for a partial copy). */
int lc__restored_load(lc_t *h);
/* In a restored log: *pending unless 'k' NAME exists. */
int lc__pending_load(lc_t *h, const char *name, size_t nlen, bool *pending);
/* Adds 'k' NAME (reconciled at value) to b. */
void lc__batch_reconciled(leveldb_writebatch_t *b, const char *name,
                          size_t nlen, int64_t value);
/* LC_EBEHIND for a pending counter that memcached lost (held < 0) or
 * holds below what the log shows taken (floor: that value). */
int lc__behind(const char *name, int64_t held, int64_t floor);
/* iter.c, for backup.c: an iterator over the whole log from a snapshot
 * (*snap_us: when it was taken), killed by a reopen like the others;
 * entry and skip need the gate (lc__log_enter) held: entry gives the
 * current key and value (1), 0 at the end, or LC_ELOG. */
int lc__iter_open_log(lc_t *h, lc_iter **out, int64_t *snap_us);
int lc__iter_entry(lc_iter *i, const char **k, size_t *klen, const char **v,
                   size_t *vlen);
void lc__iter_skip(lc_iter *i);

/* ---- recover.c: reopening a failed log ---- */
void lc__recover_init(lc_t *h); /* sets h->log.on_fail */
void lc__recover_stop(lc_t *h);
/* One reopen of a failed log, now (0 when the log is OK after it). */
int lc__recover(lc_t *h);
/* iter.c: closes the LevelDB side of every open iterator (gate held for
 * writing): their next call fails. */
void lc__iters_kill(lc__log *l);

/* ---- retain.c: retention (lc_options.retain_*) ---- */
/* lc_open's check of the retain options (remote: the handle has no log). */
int lc__retain_check(const lc_options *o, bool remote);
/* Every counter in the log (lc_list_counters), packed "a\0b\0...": free
 * *names. */
int lc__counter_names(lc_t *h, char **names, uint64_t *count);
/* Inits ret (always, for a local handle) and starts the thread when
 * retention is on; lc__retain_stop (also after a failed start) stops it
 * and waits, before the counters table is closed. */
int lc__retain_start(lc_t *h);
void lc__retain_stop(lc_t *h);
/* prune.c: lc_prune that ends early, keeping what it did, when *stop is
 * set (returns 0) or the log is no longer OK (LC_ELOG); stop may be NULL. */
int lc__prune(lc_t *h, const char *name, const lc_prune_opts *o,
              lc_prune_result *res, const atomic_bool *stop);

/* ---- handle.c ---- */
typedef struct lc__admin_srv lc__admin_srv;
/* latency.c: one histogram of write latency, buckets as in
 * lc_latency_bound_us; every field a relaxed atomic. */
enum { LC__LAT_RESERVATION, LC__LAT_SEGMENT, LC__LAT_KINDS };
typedef struct lc__hist {
  atomic_uint_fast64_t n[LC_LATENCY_BUCKETS];
  atomic_uint_fast64_t sum_us;
} lc__hist;
/* Counts one write of kind that started at start_us (lc__mono_us). */
void lc__lat_record(lc_t *h, int kind, int64_t start_us);

struct lc {
  bool remote; /* talks to a logcounterd: no log, no counters */
  bool admin;  /* remote, on an admin socket: every call goes there */
  bool admin_tls; /* remote over TLS with a user: the log's calls go to
                     the daemon's admin socket through "admin" (tls.c) */
  lc__admin_srv *admin_srv; /* admin_srv.c: this handle's admin socket */
  lc_options opt;
  char *memcached;
  char *db_path;
  char *owner;
  char *server;
  char *repl_secret; /* opt.replication_secret's copy */
  lc__cache cache;
  /* remote.c: a remote handle on "A,B" has a pool to each daemon; calls
   * go to cache[active] and move to the other when it refuses as a
   * standby or cannot be reached */
  lc__cache alt;
  lc__tls *tls[2]; /* with tls_ca: the pools used instead of cache, alt */
  struct ssl_ctx_st *repl_tls[2]; /* local, replication over mutual TLS
                                     (repl_tls.c): the primary's context,
                                     the standby's; else NULL */
  bool has_alt;
  _Atomic int active;
  lc__log log;
  lc__table counters;
  lc__tallies tallies;
  char log_id[LC__ID_LEN + 1]; /* claim.c: this log's identity */
  bool restored;               /* backup.c: the log is a restored backup */
  char claim[LC__ID_LEN + 96]; /* "ID HOST PID": what a claim holds */
  struct {                     /* prefetch.c: the prefetcher (prefetch on) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lc__counter *head, *tail; /* counters waiting for a segment */
    bool started, stop;
    pthread_t thread;
  } pf;
  struct {               /* recover.c: the thread that reopens a failed log */
    pthread_mutex_t mu;  /* started, stop, the thread's sleep */
    pthread_mutex_t run; /* one reopen at a time */
    pthread_cond_t cv;
    bool started, stop;
    pthread_t thread;
  } rec;
  /* the calls counted per thread, in stripes of their own cache line (a
   * thread keeps its stripe), summed by lc_get_stats: no shared atomic
   * per allocation */
  struct lc__stripe {
    atomic_uint_fast64_t allocations, ids;
    atomic_long inside; /* evict.c: calls under way (with eviction on) */
    char pad[64 - 2 * sizeof(atomic_uint_fast64_t) - sizeof(atomic_long)];
  } calls[LC__STRIPES];
  struct {                /* evict.c: idle eviction (opt.idle_evict_ms) */
    bool on;              /* set at lc_open: the calls pass the gate */
    atomic_bool stop;     /* a pass runs: calls wait at the gate */
    atomic_uint_fast64_t gen; /* bumped by each pass that freed counters
                                 (counter.c's per-thread cache) */
    pthread_mutex_t mu;   /* the gate's wait, the thread's sleep */
    pthread_cond_t cv;    /* the gate open again; the thread's quit */
    bool inited, started, quit;
    pthread_t thread;
    atomic_uint_fast64_t evictions, skips;
    size_t resume; /* the evictor thread's: where a follow-up pass starts */
  } ev;
  uint64_t uid; /* unique per lc_open in this process (counter.c's cache) */
  struct {
    atomic_uint_fast64_t increments, restores, backwards,
        log_writes, log_syncs, errors, segments, segment_waits;
    atomic_uint_fast64_t tally_adds, tally_flushes, tally_schedules,
        tally_schedule_failures, tally_losses, tally_seeds;
  } st;
  /* latency.c: floor-write latency, relaxed atomics (lc_get_latency) */
  lc__hist lat[LC__LAT_KINDS];
  struct {                  /* retain.c: the retention thread */
    pthread_mutex_t mu;     /* st, and the thread's sleep */
    pthread_cond_t cv;      /* on CLOCK_MONOTONIC */
    atomic_bool stop;       /* set by lc__retain_stop */
    bool started;
    pthread_t thread;
    lc_retention_status st;
  } ret;
  /* follow.c, promote.c: a standby (opt.standby_of) until promoted */
  _Atomic bool standby;
  struct lc__follow *follow; /* stopped at promotion, freed by lc_close */
  pthread_mutex_t promote_mu; /* one promotion at a time */
  bool promoting;             /* the follower is stopped for good */
  /* cluster.c: lc_set_lease_deadline's deadline (CLOCK_MONOTONIC, us);
   * 0: none.  Checked by lc__primary_only (follow.c). */
  _Atomic int64_t lease_deadline_us;
};
/* evict.c: the gate every call that uses a counter's state passes while
 * eviction is on (h->ev.on): lc__gate_enter waits while a pass runs, and
 * a pass runs only once no call is inside.  Nested calls of one thread
 * on one handle pass once. */
void lc__gate_enter(lc_t *h);
void lc__gate_leave(lc_t *h);
int lc__evict_start(lc_t *h);
void lc__evict_stop(lc_t *h);
/* This thread's stripe of h->calls (handle.c). */
unsigned lc__stripe(void);
#define LC__GATE_IN(h) ((h)->ev.on ? lc__gate_enter(h) : (void)0)
#define LC__GATE_OUT(h) ((h)->ev.on ? lc__gate_leave(h) : (void)0)
#define LC__STAT(h, field, n) \
  atomic_fetch_add_explicit(&(h)->st.field, (n), memory_order_relaxed)

#endif
