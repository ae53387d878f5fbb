/*
 * internal.h - declarations shared by the files of liblogcounter.
 *
 * Internal non-static names start with lc__.  The data layout (keys,
 * records, ledger entries, tallies) is in format.h.  The pieces:
 *   errors.c   the error table and the thread-local failure detail
 *   keys.c     counter names, memcached keys, LevelDB keys and record codecs
 *   cache.c    memcached through libmemcachedutil's pool, with timeouts
 *   log.c      the LevelDB log: open/lock, append, reverse seek, iteration
 *   prune.c    deleting old records in batches and compacting the range
 *   counter.c  per-counter state, batching of concurrent callers, restore
 *   segment.c  prefetched segments: ids handed out from memory
 *   iter.c     reading a counter's records (and ledger) in order
 *   ledger.c   the gap ledger: why values are missing, and voids
 *   names.c    the hash table of names (counters and tallies)
 *   tally*.c   tallies: write-behind counts (tally.c: add, get, state;
 *              tally_flush.c, tally_list.c, tally_rec.c)
 *   remote.c   remote mode: the same calls, answered by a logcounterd
 *   handle.c   lc_open / lc_close, options, stats
 */
#ifndef LC_INTERNAL_H
#define LC_INTERNAL_H

#include "format.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <leveldb/c.h>
#include <libmemcached/memcached.h>
#include <libmemcached/util.h>

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
typedef struct lc__cache {
  memcached_pool_st *pool;
  memcached_st *master;
  struct timespec fetch_wait;
} lc__cache;

int lc__cache_open(lc__cache *c, const char *config, int timeout_ms,
                   int pool_size);
void lc__cache_close(lc__cache *c);
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
/* memcached's decimal counter text (maybe space-padded) as a number. */
bool lc__cache_parse_u64(const char *v, size_t n, uint64_t *out);

/* ---- log.c ---- */
typedef struct lc__log {
  leveldb_t *db;
  leveldb_options_t *options;
  leveldb_writeoptions_t *sync, *nosync;
  leveldb_readoptions_t *read;
  char *owner_path;
  int owner_fd; /* DIR/OWNER, flock-ed while the log is open */
  bool owner_locked;
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
int lc__log_get_reservation(lc__log *l, const char *name, size_t nlen,
                            int64_t *out);
/* The largest logged value of the counter (0 if none): one reverse seek. */
int lc__log_max(lc__log *l, const char *name, size_t nlen, int64_t *out);
/* An iterator on the last key at or below the keys under prefix (whose
 * last byte is '\0'), or invalid; the caller checks the prefix. */
leveldb_iterator_t *lc__log_seek_last(lc__log *l, const char *prefix,
                                      size_t plen);
/* The same for any prefix whose keys end in a be64 value (what: for the
 * error detail). */
int lc__log_last(lc__log *l, char *prefix, size_t plen, const char *what,
                 int64_t *out);
/* ledger.c: the last value of the counter's ledger entries (0 if none). */
int lc__ledger_max(lc__log *l, const char *name, size_t nlen, int64_t *out);
int lc__log_write(lc__log *l, leveldb_writebatch_t *b, bool sync);
/* claim.c: the log's identity (read, or made and synced on first open). */
int lc__log_identity(lc__log *l, char id[LC__ID_LEN + 1]);
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
/* Calls fn on every entry (fn may free it). */
void lc__names_each(const lc__names *t, void (*fn)(lc__named *e, void *arg),
                    void *arg);
/* Forgets every entry (free them first, with lc__names_each). */
void lc__names_clear(lc__names *t);

/* ---- counter.c ---- */
typedef struct lc__counter lc__counter;
typedef struct lc__table {
  pthread_mutex_t mu;
  lc__names names; /* the counters, by name */
} lc__table;
void lc__table_init(lc__table *t);
/* Writes each counter's exact reservation (one synced batch), with the
 * records of its prefetched segments cut to what went out, lowers
 * memcached to match where it still holds what this handle left there,
 * and frees. */
int lc__table_close(lc__table *t, lc__log *log, lc__cache *cache);
/* segment.c: the prefetcher thread of a handle with prefetch on. */
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

/* ---- remote.c ---- */
int lc__remote_config(const char *server, char *buf, size_t size);
int lc__remote_next(lc_t *h, const char *name, uint64_t n, int64_t *first);
int lc__remote_current(lc_t *h, const char *name, int64_t *value);
/* Fails remote handles for calls that need the log; 0 otherwise. */
#define LC__LOCAL_ONLY(h)                                                 \
  ((h)->remote                                                            \
       ? lc__fail(LC_EREMOTE, "this handle talks to %s", (h)->opt.server) \
       : 0)

/* ---- handle.c ---- */
struct lc {
  bool remote; /* talks to a logcounterd: no log, no counters */
  lc_options opt;
  char *memcached;
  char *db_path;
  char *owner;
  char *server;
  lc__cache cache;
  lc__log log;
  lc__table counters;
  lc__tallies tallies;
  char log_id[LC__ID_LEN + 1]; /* claim.c: this log's identity */
  char claim[LC__ID_LEN + 96]; /* "ID HOST PID": what a claim holds */
  struct {                     /* segment.c: the prefetcher (prefetch on) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lc__counter *head, *tail; /* counters waiting for a segment */
    bool started, stop;
    pthread_t thread;
  } pf;
  struct {
    atomic_uint_fast64_t allocations, ids, increments, restores, backwards,
        log_writes, log_syncs, errors, segments, segment_waits;
    atomic_uint_fast64_t tally_adds, tally_flushes, tally_schedules,
        tally_schedule_failures, tally_losses, tally_seeds;
  } st;
};
#define LC__STAT(h, field, n) \
  atomic_fetch_add_explicit(&(h)->st.field, (n), memory_order_relaxed)

#endif
