/*
 * logcounter.h - the one public header of liblogcounter.
 *
 * liblogcounter hands out unique serial numbers.  Each allocation bumps a
 * counter kept in memcached and appends a record for the value to a LevelDB
 * log before the value is returned.  When memcached loses the counter, the
 * next allocation restores it from the log.
 *
 * Values are in 1 .. 2^63-1 (they fit a signed 64-bit column).  A fresh
 * counter starts at 1.  Reaching 2^63-1 is an error (LC_EOVERFLOW), never a
 * wrap.
 *
 * Conventions:
 *  - Calls that can fail return int: 0 on success, a negative LC_E* code on
 *    failure.  Results come back through pointers, which are written only on
 *    success.
 *  - One handle (lc_t) is thread-safe: any number of threads may call any
 *    function on it at once, except lc_close, which must be the last call.
 *  - Functions that free something accept NULL.
 *  - The text of the last failure in the calling thread (memcached's or
 *    LevelDB's own words) is lc_last_detail(); it is thread-local.
 */
#ifndef LOGCOUNTER_H
#define LOGCOUNTER_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exported functions; everything else is hidden. */
#if defined(__GNUC__)
#define LC_EXTERN __attribute__((visibility("default")))
#else
#define LC_EXTERN
#endif

#define LC_VERSION_MAJOR 0
#define LC_VERSION_MINOR 10
#define LC_VERSION_PATCH 0
#define LC_VERSION_STRING "0.10.0"
/* Bumped on incompatible ABI changes; it is the shared library's soname.
 * 1: lc_prune_result grew (ledger_deleted), proto.c left the library.
 * 2: lc_options grew (the admin socket, retention).
 * 3: lc_options grew (replication).
 * 4: lc_options grew (user and password for remote mode).
 * 5: lc_options grew (TLS for remote mode).
 * 6: lc_options and lc_stats grew (idle eviction). */
#define LC_SOVERSION 6

#define LC_VALUE_MAX INT64_MAX /* the largest value ever handed out */
#define LC_NAME_MAX 200        /* longest counter name, in bytes */
/* logcounterd reads a key that starts with this as a tally's name (so no
 * serial counter can be reached through it under such a name). */
#define LC_DAEMON_TALLY_PREFIX "tally:"
#define LC_BLOCK_MAX 1000000000ULL /* largest n for lc_next_n */

/*
 * The error table: one line per code.  X(name, number, message).
 * It generates the LC_E* constants, lc_strerror() and lc_err_name().
 */
/* clang-format off */
#define LC_ERRNO_MAP(X)                                                      \
  X(EINVAL,     -1, "invalid argument")                                      \
  X(ENAME,      -2, "invalid counter name (1-200 bytes of printable ASCII, " \
                    "no space)")                                             \
  X(ECOUNT,     -3, "invalid count (must be 1 .. 1000000000)")               \
  X(EOVERFLOW,  -4, "counter exhausted: the next value would exceed "        \
                    "2^63-1")                                                \
  X(ENOMEM,     -5, "out of memory")                                         \
  X(ETIMEDOUT,  -6, "memcached did not answer within the timeout")           \
  X(EMEMCACHED, -7, "memcached error")                                       \
  X(EBADVALUE,  -8, "memcached holds a non-numeric value under the "         \
                    "counter's key")                                         \
  X(ELOG,       -9, "log (LevelDB) error")                                   \
  X(ELOCKED,   -10, "log directory is in use by another process")            \
  X(ECORRUPT,  -11, "corrupt log record")                                    \
  X(EFORMAT,   -12, "log directory was written by an unknown format "        \
                    "version")                                               \
  X(EAGAIN,    -13, "memcached kept losing the counter during restore; "     \
                    "try again")                                             \
  X(ECONFIG,   -14, "invalid memcached configuration string")           \
  X(EREMOTE,   -15, "not available through this server (a logcounterd "  \
                    "data port serves allocations and reads; the log's "  \
                    "commands go to its admin socket, --admin-socket)")   \
  X(ETALLYRANGE, -16, "tally change would take the total (with what is "  \
                      "pending) out of the signed 64-bit range")          \
  X(EDELTA,    -17, "invalid tally delta (must be non-zero)")              \
  X(EOWNED,    -18, "the counter is owned by another log (or was released "\
                    "from this one)")                                       \
  X(ELIMIT,    -19, "too many counters or tallies in this handle "          \
                    "(max_counters / max_tallies)")                         \
  X(ENOTISSUED, -20, "the value was never handed out (only issued values "  \
                     "can be voided)")                                      \
  X(EVOIDED,   -21, "the value is already voided")                        \
  X(EBEHIND,   -22, "the log is a restored backup and memcached no longer " \
                    "holds the counter: ids may have gone out after the "  \
                    "backup (adopt it with --above the last id issued)")   \
  X(EBUSY,     -23, "the admin socket is in use by a running process")    \
  X(ESTANDBY,  -24, "this log is a standby: it follows its primary and "    \
                    "hands out nothing until it is promoted")             \
  X(ENOSTANDBY, -25, "no standby acknowledged the next floor in time: the " \
                     "primary hands out nothing above its current window " \
                     "(standby mode required)")                           \
  X(ESTALE,    -26, "the standby may be behind what its primary handed "   \
                    "out (it was disconnected from a primary in preferred " \
                    "mode, or never caught up): promote it with force, "  \
                    "above the last id issued")                           \
  X(EAUTH,     -27, "logcounterd refused the user or password (remote "    \
                    "mode with lc_options.user)")                         \
  X(EFENCED,   -28, "this node's leadership lease may have expired (it "   \
                    "could not renew it in time): it hands out nothing "   \
                    "until it holds the lease again")                     \
  X(EWOULDBLOCK, -29, "the call would wait for a synced log write "         \
                      "(lc_try_next_n): nothing was handed out")
/* clang-format on */

typedef enum {
#define LC__ERR_ENUM(name, num, msg) LC_##name = (num),
  LC_ERRNO_MAP(LC__ERR_ENUM)
#undef LC__ERR_ENUM
} lc_errno_t;

/* A static message for an LC_E* code ("unknown error" for others). */
LC_EXTERN const char *lc_strerror(int err);
/* The code's name without the LC_ prefix, e.g. "ETIMEDOUT". */
LC_EXTERN const char *lc_err_name(int err);
/* The underlying detail of the last failure in this thread, or "".  The
 * string belongs to the thread and stays valid until its next lc_ call. */
LC_EXTERN const char *lc_last_detail(void);
/* LC_VERSION_STRING of the library actually linked. */
LC_EXTERN const char *lc_version(void);

typedef enum {
  /* Records are written unsynced; a synced reservation is kept ahead of the
   * values handed out, so that no value repeats even after an OS crash
   * followed by a memcached loss (the restore then starts above the
   * reservation, skipping at most the window). */
  LC_DURABILITY_DEFAULT = 0,
  /* Every record is synced before its value is returned.  Concurrent
   * callers share one sync (group commit). */
  LC_DURABILITY_SYNC = 1
} lc_durability_t;

/* "default" / "sync" to the enum; LC_EINVAL for anything else. */
LC_EXTERN int lc_durability_parse(const char *s, lc_durability_t *out);
LC_EXTERN const char *lc_durability_name(lc_durability_t d);

typedef struct lc_options {
  /* memcached servers in libmemcached's configuration syntax, e.g.
   * "--SERVER=127.0.0.1:11211".  NULL: "--SERVER=127.0.0.1:11211". */
  const char *memcached;
  /* The log directory (created if missing; its parent must exist).
   * Required.  One process at a time may hold it. */
  const char *db_path;
  lc_durability_t durability; /* default LC_DURABILITY_DEFAULT */
  int timeout_ms;             /* memcached connect/answer; 0: 1000 */
  int lock_wait_ms;           /* wait this long for a held log; 0: none */
  uint64_t reserve;           /* reservation window; 0: 1000 */
  int pool_size;              /* memcached connections; 0: 16.  A call
                                   finding none free waits for one, up to
                                   timeout_ms (then LC_ETIMEDOUT): give at
                                   least one per thread calling at once */
  const char *owner;          /* who holds the log, shown to processes
                                   that find it held; NULL: "liblogcounter" */
  /* Remote mode: "HOST:PORT" or a unix socket path of a logcounterd.  When
   * set, db_path and memcached are ignored: lc_next, lc_next_n and
   * lc_current go to the daemon (which owns the log); the calls that need
   * the log itself return LC_EREMOTE. */
  const char *server;
  /* Most lc_next_n calls of one counter merged into one memcached increment
   * (they queue while an increment is in flight).  0: no limit; 1: no
   * merging (one increment per call, for comparison). */
  unsigned batch_max;
  /* Prefetched segments.  0 (the default): off, every lc_next_n call
   * costs a memcached increment and a log record.  N (1..LC_BLOCK_MAX):
   * the handle takes segments of N values with one memcached "incr N" and
   * one synced record each, and hands values out of memory; the next
   * segment is fetched by a background thread when the current one is
   * half used.  LC_PREFETCH_AUTO: N adapts so that a segment lasts about
   * a second (LC_PREFETCH_AUTO_MIN..LC_PREFETCH_AUTO_MAX).  Values still
   * strictly increase per handle; lc_close writes the exact last value
   * handed out (and sets memcached back to it), so a clean restart goes on
   * at last+1; after a crash the unused rest of the held segments (two, rarely
   * three) is skipped, never reissued, and their records stay marked
   * LC_RECORD_SEGMENT_OPEN.  A record's time is when its segment was
   * taken.  lc_prefetch_parse reads "off", "auto" or N. */
  uint64_t prefetch;
  /* Limits on the state a handle keeps: counters and tallies it has used
   * (each costs memory for the life of the handle).  A new name beyond
   * the limit fails with LC_ELIMIT and creates nothing; names already in
   * use go on working, and reads (lc_current, lc_tally_get) of unused
   * names keep no state and are never refused.  0: the defaults,
   * LC_MAX_COUNTERS_DEFAULT and LC_MAX_TALLIES_DEFAULT. */
  uint64_t max_counters;
  uint64_t max_tallies;
  /* (0.4) The admin socket: when set, the handle listens on this unix
   * socket path (created with mode admin_socket_mode, 0: 0600; a stale
   * socket file is replaced, a live one is LC_EBUSY) and serves every
   * call, the log's included, to remote handles (lc_options.server set
   * to the path) and to "logcounter --server PATH".  Served by threads
   * of the handle, never by the caller's. */
  const char *admin_socket;
  unsigned admin_socket_mode;
  /* (0.4) Retention: when retain_records or retain_age_us is set, a
   * thread of the handle prunes every counter in the log every
   * retain_interval_ms (0: 60000), as lc_prune with keep =
   * retain_records and older_than_us = now - retain_age_us would (a
   * record is kept when either criterion keeps it; the newest record,
   * the reservation and the ledger entries of kept records stay). */
  uint64_t retain_records;
  int64_t retain_age_us;
  int64_t retain_interval_ms;
  /* (0.5) Replication (replicate.c, follow.c).  replication_listen
   * "HOST:PORT": the handle serves standbys there (up to 4; the first to
   * have everything is the synchronous one, the others follow behind it,
   * stale until it goes), from threads of its own.  Every synced write (a reservation, a segment, a claim, a ledger
   * entry, a tally flush: the floors) reaches the standby and is
   * acknowledged by it, synced, before it is written here and before any
   * value under it goes out; unsynced record writes stream behind (under
   * LC_DURABILITY_SYNC every write is synced, so every record waits).
   * standby_mode LC_STANDBY_REQUIRED (the default): without an
   * acknowledgment within standby_timeout_ms (0: 2000) the write fails
   * with LC_ENOSTANDBY, so the handle stops at the end of its current
   * window; LC_STANDBY_PREFERRED: it goes on alone, and the standby,
   * disconnected, knows it is stale.  standby_of "HOST:PORT": this handle
   * is a standby of that primary: its log (db_path) follows the
   * primary's, allocations fail with LC_ESTANDBY, reads work, and
   * lc_promote makes it the primary. */
  const char *replication_listen;
  int standby_mode;
  int standby_timeout_ms;
  const char *standby_of;
  /* (0.6) Remote mode against a logcounterd with --auth-file: every
   * connection first sends memcached's text-protocol handshake, a "set"
   * whose data is "USER PASSWORD", and a refusal is LC_EAUTH.  Both or
   * neither; the user has no space or control byte.  Copied at lc_open
   * and never logged.  NULL: no authentication. */
  const char *user;
  const char *password;
  /* (0.6) Replication's shared secret: when set (on the primary and its
   * standby alike), each side proves it knows it on the other's fresh
   * nonce (HMAC-SHA256) before a byte of the log is sent, so no stray
   * process can follow the primary or pose as it.  A side with the secret
   * refuses a side without.  Copied at lc_open, never logged or sent.
   * With tls_* below on a local handle the stream is mutual TLS. */
  const char *replication_secret;
  /* (0.7) Remote mode over TLS, to a logcounterd with --tls-cert: tls_ca
   * is the PEM file of the CAs the daemon's certificate must chain to,
   * and the certificate must name the host of server (an IP address or a
   * DNS name).  tls_cert and tls_key (PEM, both or neither) are this
   * client's certificate, for a daemon with --tls-verify require.  Read
   * at lc_open; a file that cannot be used is LC_EINVAL.  Not for a unix
   * socket server.  With a user, the log's calls (lc_void, lc_prune,
   * iterators, lc_backup...) go over TLS too, to the daemon's admin
   * socket through its "admin" relay (the user needs the admin right).
   * On a local handle with replication_listen or standby_of, all three
   * make replication mutual TLS: this log's certificate (tls_cert,
   * tls_key) is shown to the other side, whose certificate must chain to
   * tls_ca; a standby checks that the primary's names the host of
   * standby_of. */
  const char *tls_ca;
  const char *tls_cert;
  const char *tls_key;
  /* (0.9) Idle eviction: a counter no call has used for idle_evict_ms
   * (at most half as long again) is closed as lc_close closes it (its
   * segments given back, its exact reservation and pending ledger entries
   * written, synced) and dropped from memory; its next use loads it from
   * the log again, as after a clean restart.  So max_counters bounds the
   * counters in use at once, not the names ever used.  0 (the default):
   * never.  Evictions run in a thread of the handle, up to 512 counters
   * a pass; while a pass closes them (one synced write and, with
   * prefetch, two memcached round trips per counter) the handle's calls
   * wait.  A counter whose segment memcached could not take back stays,
   * its skipped rest in the ledger (LC_GAP_SEGMENT).  (0.10) Tallies
   * too: a tally no call has used for as long, and whose changes are all
   * flushed, is dropped (its record completed with its carries and
   * measured losses first, as at lc_close) and loaded again at its next
   * use, exactly as it was; lc_stats.tally_evictions counts them. */
  int64_t idle_evict_ms;
} lc_options;

#define LC_STANDBY_REQUIRED 0
#define LC_STANDBY_PREFERRED 1

#define LC_MAX_COUNTERS_DEFAULT 100000ULL
#define LC_MAX_TALLIES_DEFAULT 100000ULL

#define LC_PREFETCH_AUTO UINT64_MAX
#define LC_PREFETCH_AUTO_MIN 16ULL
#define LC_PREFETCH_AUTO_MAX (1ULL << 23)
/* "off" or "0": 0; "auto": LC_PREFETCH_AUTO; N: 1..LC_BLOCK_MAX.  0 or
 * LC_EINVAL. */
LC_EXTERN int lc_prefetch_parse(const char *text, uint64_t *out);

/* Fills *o with the defaults above (db_path stays NULL). */
LC_EXTERN void lc_options_init(lc_options *o);

typedef struct lc lc_t;

/* Opens the log and connects the memcached pool.  *out receives the handle;
 * the options are copied.  LC_ELOCKED when another process holds the log
 * (lc_last_detail() then names that process when it is known). */
LC_EXTERN int lc_open(const lc_options *o, lc_t **out);
/* Records every counter's exact last value (so a restart, even after
 * memcached lost the counter, goes on at last + 1 and skips nothing):
 * the reservation is set to it, unless the last value's own record
 * already says it (prefetch: lc_reservation may then stay below), syncs
 * and closes.  Returns the first error of
 * that final write; the handle is freed in every case.  NULL is a no-op. */
LC_EXTERN int lc_close(lc_t *h);

/* Counter names: 1..LC_NAME_MAX bytes, each 0x21..0x7e (printable ASCII,
 * no space).  Returns 0 or LC_ENAME. */
LC_EXTERN int lc_check_name(const char *name);

/* Allocates one value: *value receives it once its record is in the log. */
LC_EXTERN int lc_next(lc_t *h, const char *name, int64_t *value);
/* Allocates a contiguous block of n values (1 <= n <= LC_BLOCK_MAX) with
 * one memcached increment and one record: the block is
 * [*first, *first + n - 1]. */
LC_EXTERN int lc_next_n(lc_t *h, const char *name, uint64_t n, int64_t *first);
/* One request of lc_next_each: n values (1..LC_BLOCK_MAX) of counter name;
 * answered with rc (0 or an LC_E* code) and, when 0, first: the block is
 * [first, first + n - 1]. */
typedef struct lc_each {
  const char *name;
  uint64_t n;
  int64_t first;
  int rc;
} lc_each;
/* lc_next_n for each of v[0..count), as if one after another in array
 * order (a name given twice gets two blocks, the later one higher), with
 * every promise of lc_next_n.  Made for bursts of new names: the first
 * uses of counters among them share their memcached round trips (one
 * pipelined round of seeds and claims, one of increments) and one synced
 * log write, instead of three round trips and a sync each.  Returns 0 if
 * every request succeeded, else the code of the first that failed, whose
 * reason lc_last_detail() gives; each v[i].rc says how each went. */
LC_EXTERN int lc_next_each(lc_t *h, lc_each *v, size_t count);
/* A hint for event loops (logcounterd uses it to decide what to answer on
 * its own thread): 1 when the next lc_next_n of this counter should take
 * no longer than about one memcached round trip, because the counter is
 * already in use in this handle and, unless prefetch is on, durability is
 * not sync; 0 when it would first read the log or sync it (first use, a
 * sync handle, a remote handle, a bad name; with prefetch, a counter whose
 * held ids are used up, so that the call fetches or waits for a fetch).
 * Never creates state and never fails; a restore after memcached lost the
 * counter, a reservation refill, or (with prefetch) a call for more ids
 * than are held can still make a call slower than the hint says:
 * lc_try_next_n refuses those. */
LC_EXTERN int lc_next_quick(lc_t *h, const char *name);
/* lc_next_n for an event loop's own thread: the same call and promises,
 * except that where lc_next_n would wait for a synced log write (a first
 * use, a sync handle, a remote or standby handle, or with prefetch a
 * segment to fetch or one being fetched) it returns LC_EWOULDBLOCK at
 * once, handing out nothing and counting no error; the caller then makes
 * the call where waiting is fine (logcounterd: a worker thread).  It may
 * still take a memcached round trip. */
LC_EXTERN int lc_try_next_n(lc_t *h, const char *name, uint64_t n,
                            int64_t *first);
/* The value the counter stands at: the next allocation returns a value
 * greater than it (equal to it plus one unless something fails or the
 * counter is restored after a crash).  0 for a counter never used.  Does
 * not change anything. */
LC_EXTERN int lc_current(lc_t *h, const char *name, int64_t *value);
/* Restores the counter in memcached from the log if memcached has lost it
 * (or holds a value below what was handed out); *value receives the
 * value the counter now stands at.  lc_next does this by itself when
 * needed. */
LC_EXTERN int lc_restore(lc_t *h, const char *name, int64_t *value);
/* Raises the counter so that the next value is at least min_next; never
 * lowers it.  The raise is synced to the log before it returns.
 * 1 <= min_next <= LC_VALUE_MAX. */
LC_EXTERN int lc_advance(lc_t *h, const char *name, int64_t min_next);
/* The synced reservation of the counter (0 if none): after a crash the
 * restore starts above it. */
LC_EXTERN int lc_reservation(lc_t *h, const char *name, int64_t *value);

/* ==== Ownership =========================================================
 *
 * One log owns a counter.  A log has a random identity; before a handle
 * first increments, restores or raises a counter (and before it re-seeds
 * one that memcached lost) it claims the counter in memcached (the key
 * "lo:" NAME, on the counter's server, holding "LOGID HOST PID").  A
 * counter claimed by another log fails with LC_EOWNED, whose detail names
 * that log, and this log remembers the refusal in itself (durably, so
 * that a memcached loss does not undo it) until lc_adopt.  Reads
 * (lc_current) claim nothing.
 *
 * LC_ELOG from a write of an ownership or ledger record (the refusal a
 * claim writes, lc_release, lc_adopt, lc_void) means the outcome is
 * unknown: the write failed but may have reached the log (a failed
 * fsync), and then it takes effect.  The handle rereads the counter's
 * refusal, release, pending state and reservation from the log before
 * the counter's next use (after the log's reopen), so it acts as the log
 * says; the same call again is safe and idempotent (lc_release gives the
 * recorded final value, lc_void with the same reason answers 0). */

/* Gives the counter up so that another log may adopt it: no value goes
 * out of this handle any more, the final value (*final: the highest value
 * handed out or taken from memcached) is synced to the log with the mark
 * "released", and the claim is dropped.  This log then refuses the
 * counter (LC_EOWNED) until it adopts it back.  Called again on a
 * released counter (say memcached failed the first time, after the
 * release was recorded), it drops the claim again and gives the same
 * final value. */
LC_EXTERN int lc_release(lc_t *h, const char *name, int64_t *final);
/* Takes the counter over: forgets a refusal or release recorded in this
 * log, claims the counter (LC_EOWNED if another log still holds the
 * claim; in a restored log, a claim held by the log it was copied from is
 * taken over) and, when above > 0, raises it so that the next value is
 * above `above` (the value the old log's release printed; in a restored
 * log, a pending counter is reconciled only by an adopt with above > 0,
 * and stays pending without). */
LC_EXTERN int lc_adopt(lc_t *h, const char *name, int64_t above);

/* One log record: the block [first, last] (count values) and the time it
 * was written, in microseconds since the Unix epoch. */
typedef struct lc_record {
  int64_t first;
  int64_t last;
  uint64_t count;
  int64_t time_us;
  int version; /* what the record is, LC_RECORD_*: */
} lc_record;

#define LC_RECORD_BLOCK 1 /* a block handed out by lc_next_n */
#define LC_RECORD_SEGMENT_OPEN \
  2 /* a prefetched segment still held, or
                                     left by a crash: how much of it went
                                     out is unknown (at most all of it) */
#define LC_RECORD_SEGMENT \
  3 /* a prefetched segment, finished: every
                                     value of it went out */

typedef struct lc_iter lc_iter;

/* Iterates one counter's records in ascending order.  The iterator sees a
 * snapshot taken at lc_iter_open. */
LC_EXTERN int lc_iter_open(lc_t *h, const char *name, lc_iter **out);
/* 1: *rec holds the next record.  0: no more records.  LC_ECORRUPT: the
 * next record cannot be decoded (rec->last holds its key's value when the
 * key decodes, else 0); the call after it continues with the following
 * record. */
LC_EXTERN int lc_iter_next(lc_iter *it, lc_record *rec);
LC_EXTERN void lc_iter_close(lc_iter *it);

/*
 * The gap ledger: why values are missing from the log.  Whenever the
 * library knowingly skips values it writes a ledger entry (range, cause,
 * time) in the same write as the record or reservation that goes with it,
 * so a gap costs no extra sync.  A gap between records with no entry is
 * unexplained (a log from before the ledger, or a bug).  Voids (lc_void)
 * are entries too: values that were handed out and then declared unused.
 */
#define LC_REASON_MAX 200
typedef struct lc_gap {
  int64_t first;
  int64_t last;
  int64_t time_us;                /* when the entry was written */
  int cause;                      /* LC_GAP_* */
  char reason[LC_REASON_MAX + 1]; /* a void's reason; "" otherwise */
} lc_gap;

#define LC_GAP_BURNED 1 /* the block's log write failed: nobody got it */
#define LC_GAP_RESTART \
  2 /* reserved by a run that stopped without closing
                              (kill, crash, power cut), skipped at restart:
                              never handed out, or handed out with records a
                              power cut lost */
#define LC_GAP_UNLOGGED \
  3 /* memcached was ahead of this log: taken from
                              memcached by a run that died between its
                              increment and its log write, or by another
                              client */
#define LC_GAP_SEGMENT \
  4                      /* the unused rest of a prefetched segment, given
                              up (lc_advance, lc_release, or lc_close when
                              memcached could not be set back) */
#define LC_GAP_ADVANCE 5 /* skipped on purpose by lc_advance / lc_adopt */
#define LC_GAP_VOID \
  6 /* handed out, then voided (lc_void); lies inside
                              a record */
#define LC_GAP_FAILOVER \
  7 /* skipped by a promoted standby (lc_promote): up to
                              the last floor it held (or memcached's value,
                              or the operator's above); ids in it may have
                              gone out of the old primary, whose records of
                              them were not replicated yet */
#define LC_GAP_CAUSE_MAX LC_GAP_FAILOVER

/* "burned", "restart", "unlogged", "segment-unused", "advance", "void",
 * "failover" (or "unknown"). */
LC_EXTERN const char *lc_gap_cause_name(int cause);
/* Iterates one counter's ledger entries in ascending order (a snapshot),
 * with lc_ledger_next; close with lc_iter_close. */
LC_EXTERN int lc_ledger_open(lc_t *h, const char *name, lc_iter **out);
/* 1: *gap holds the next entry.  0: no more.  LC_ECORRUPT: the next entry
 * cannot be decoded (gap->last holds its key's value); the call after it
 * continues. */
LC_EXTERN int lc_ledger_next(lc_iter *it, lc_gap *gap);
/* Marks value, already handed out, as voided (never used: a cancelled
 * order), with a reason of 1..LC_REASON_MAX bytes; synced.  LC_ENOTISSUED
 * when no record holds the value (or this handle holds it unissued in a
 * segment); LC_EVOIDED when it is voided already with another reason, 0
 * with the same one (a retry after a failed write: see Ownership). */
LC_EXTERN int lc_void(lc_t *h, const char *name, int64_t value,
                      const char *reason);

typedef struct lc_prune_opts {
  /* Criteria; 0 means "not given".  At least one must be given.  Prune
   * deletes the oldest records, from the first on, up to (not including)
   * the first record that any given criterion keeps.  The newest record and
   * the reservation are never deleted. */
  uint64_t keep;         /* keep at least this many newest records (>= 1) */
  int64_t below;         /* delete records whose last value < below */
  int64_t older_than_us; /* delete records written before this time (us) */
  /* Called now and then during a long prune; may be NULL. */
  void (*progress)(void *arg, uint64_t scanned, uint64_t deleted);
  void *progress_arg;
} lc_prune_opts;

typedef struct lc_prune_result {
  uint64_t deleted;        /* records deleted */
  uint64_t kept;           /* records left */
  uint64_t ledger_deleted; /* (0.2) ledger entries (gaps, voids) below the
                               oldest record left, deleted with them */
} lc_prune_result;

/* Deletes old records of a counter in batches, then compacts the range so
 * that later reverse seeks stay fast. */
LC_EXTERN int lc_prune(lc_t *h, const char *name, const lc_prune_opts *opts,
                       lc_prune_result *result);

typedef struct lc_stats {
  uint64_t allocations;   /* successful lc_next / lc_next_n calls */
  uint64_t ids;           /* values handed out */
  uint64_t increments;    /* memcached increments sent */
  uint64_t restores;      /* counters seeded in memcached from the log */
  uint64_t backwards;     /* memcached answers not above the last value */
  uint64_t log_writes;    /* LevelDB write batches */
  uint64_t log_syncs;     /* synced LevelDB writes */
  uint64_t errors;        /* failed calls that allocate, read or change
                             a counter or tally: lc_next, lc_next_n,
                             lc_current, lc_restore, lc_advance,
                             lc_release, lc_adopt, lc_void, lc_tally_add,
                             lc_tally_flush (not lc_tally_get, listing,
                             iteration or prune) */
  uint64_t segments;      /* prefetched segments taken */
  uint64_t segment_waits; /* calls that found no segment and waited */
  /* Tallies (added in 0.1; see "Tallies" below). */
  uint64_t tally_adds;              /* successful lc_tally_add calls */
  uint64_t tally_flushes;           /* tally records written by flushes */
  uint64_t tally_schedules;         /* windows opened (marker add stored) */
  uint64_t tally_schedule_failures; /* marker adds that failed (the change
                                       still counted; a sweep recovers) */
  uint64_t tally_losses;            /* memcached found to have lost or
                                       lowered a tally's pending counts */
  uint64_t tally_seeds;             /* tally keys re-seeded in memcached */
  /* State kept (added in 0.2): counters and tallies in use in the handle
   * (see max_counters, max_tallies). */
  uint64_t counters;
  uint64_t tallies;
  /* (0.9) Idle eviction (lc_options.idle_evict_ms): counters dropped
   * from memory, and eviction passes given up because a call did not
   * finish in time (tried again at the next pass). */
  uint64_t evictions;
  uint64_t eviction_skips;
  /* (0.10) The amount of acknowledged tally changes memcached was found to
   * have lost, in magnitudes (lc_tally_lost's plus + minus, summed over
   * what this handle measured).  It only grows: a loss that memcached
   * later gives back (an older memory file) lowers lc_tally_lost, not
   * this count of what was measured. */
  uint64_t tally_lost_amount;
  /* (0.10) Idle eviction: tallies dropped from memory (flushed, unused
   * for idle_evict_ms; `tallies` counts those still in memory). */
  uint64_t tally_evictions;
} lc_stats;

/* A snapshot of the handle's counters since lc_open. */
LC_EXTERN int lc_get_stats(lc_t *h, lc_stats *out);

/* ==== When the log fails (added in 0.3) =================================
 *
 * LevelDB stays writable after a failed append to its write-ahead log, and
 * the next open drops every record written behind the torn one.  So the
 * first failed log write (disk full, EIO, a short write, a failed fsync,
 * no descriptor for a new file) is the last one through the handle: from
 * then on every call that reads or writes the log, allocates, or changes a
 * tally gets LC_ELOG with the system's reason, and nothing is
 * acknowledged, until a thread of the handle has closed and reopened
 * LevelDB (recovering from its write-ahead log, never syncing a failed
 * file again).  It retries with backoff (50 ms, doubling to 5 s) until
 * the cause is gone; nobody restarts anything.  Values taken from
 * memcached while the log was failing are burned, each with a ledger
 * entry.  A log directory removed or replaced while open is LOST: it is
 * never reopened (stop the process and restore the log).
 */
typedef enum {
  LC_LOG_OK,
  LC_LOG_FAILED,     /* a write failed; waiting for the next reopen */
  LC_LOG_RECOVERING, /* being reopened */
  LC_LOG_LOST        /* the directory was removed or replaced */
} lc_log_state_t;

typedef struct lc_log_status {
  lc_log_state_t state;
  uint64_t failures;       /* times the log failed */
  uint64_t recoveries;     /* reopens that brought it back */
  uint64_t attempts;       /* reopens tried, failed ones too */
  int64_t failed_us;       /* wall clock (us) of the last failure; 0: none */
  int64_t recovered_us;    /* of the last recovery; 0: none */
  char error[256];         /* what failed last ("" if nothing has) */
  char attempt_error[256]; /* why the last reopen failed ("" if it did not) */
} lc_log_status;

/* The state of the handle's log (a local handle; checks that the log
 * directory is still there).  Thread-safe. */
LC_EXTERN int lc_get_log_status(lc_t *h, lc_log_status *out);
/* "ok", "failed", "recovering", "lost". */
LC_EXTERN const char *lc_log_state_name(lc_log_state_t state);
/* (0.10) What the log's LevelDB holds in memory, by its own estimate
 * (leveldb.approximate-memory-usage: its memtables and block cache), in
 * *bytes: the share of the process's memory that is not the counters'
 * and tallies' (a local handle; LC_ELOG while the log is not OK).
 * Thread-safe. */
LC_EXTERN int lc_get_log_memory(lc_t *h, uint64_t *bytes);
/* Reopens a failed log now, without waiting for the next retry: 0 when
 * the log is OK afterwards, else LC_ELOG with the reason.  Thread-safe. */
LC_EXTERN int lc_log_recover(lc_t *h);
/* Not from inside a callback of lc_prune or lc_tally_list: those hold the
 * log open, and a reopen waits for them. */

/* ==== Retention and backup (added in 0.4) ============================== */

/* What the retention thread (lc_options.retain_*) has done since
 * lc_open.  All zero when retention is off. */
typedef struct lc_retention_status {
  uint64_t runs;            /* passes over the log finished */
  uint64_t counters;        /* counters pruned (summed over the runs) */
  uint64_t records_deleted; /* records deleted */
  uint64_t ledger_deleted;  /* ledger entries deleted with them */
  uint64_t errors;          /* counters whose prune failed */
  int64_t last_run_us;      /* wall clock when the last run ended; 0: none */
  int64_t last_duration_us; /* how long it took */
  char last_error[256];     /* the last failure ("" if none) */
} lc_retention_status;

LC_EXTERN int lc_get_retention_status(lc_t *h, lc_retention_status *out);

/* Calls fn for each counter that has records or a reservation in the log,
 * in ascending bytewise name order, from one snapshot; fn returns
 * non-zero to stop.  *count (may be NULL): how many were reported. */
LC_EXTERN int lc_list_counters(lc_t *h, int (*fn)(void *arg, const char *name),
                               void *arg, uint64_t *count);

typedef struct lc_backup_opts {
  /* Called now and then during the copy; may be NULL. */
  void (*progress)(void *arg, uint64_t keys_copied);
  void *progress_arg;
} lc_backup_opts;

typedef struct lc_backup_result {
  uint64_t keys;    /* LevelDB entries copied */
  uint64_t records; /* of which records */
  uint64_t bytes;   /* keys and values copied */
  int64_t time_us;  /* the snapshot's time (wall clock) */
} lc_backup_result;

/* Writes a consistent copy of the log (one LevelDB snapshot) to dir, a new
 * LevelDB directory (dir must not exist; its parent must), synced, while
 * the handle goes on serving.  Until its last, synced write the copy's
 * directory holds the file BACKUP-INCOMPLETE (from before anything else
 * is in it), and lc_open refuses it (LC_ELOG, "incomplete backup"): a
 * backup that fails or dies at any point never opens as a log.  The copy
 * is marked as a restored backup and takes a new identity at its first
 * open: a counter whose claim the original still holds is refused
 * (LC_EOWNED, naming the original) until lc_adopt(h, name, above), which
 * takes the claim over (stop the original first: the copy and its
 * original must never both allocate); a handle on the copy continues each
 * counter above both its own floor and memcached's value, and refuses a
 * counter that memcached no longer holds (LC_EBEHIND) until lc_adopt with
 * above at least the last id the original handed out, because ids may
 * have been handed out after the copy.  opts may be NULL. */
LC_EXTERN int lc_backup(lc_t *h, const char *dir, const lc_backup_opts *opts,
                        lc_backup_result *result);
/* 1 when the handle's log is a restored backup (see lc_backup), else 0. */
LC_EXTERN int lc_is_restored(lc_t *h);

/* ==== High availability (lc_options.replication_listen, standby_of) ==== */

typedef struct lc_promote_opts {
  /* Promote a stale standby (LC_ESTALE otherwise): each counter then goes
   * on above memcached's value and above, which must cover what the old
   * primary handed out after the standby lost it. */
  int force; /* nonzero: see below */
  int64_t above; /* every counter goes on above this too; 0: none */
} lc_promote_opts;
/* Makes a standby handle the primary, in place: it stops following, and
 * every counter in its log goes on above the largest of its last
 * replicated floor (reservation or segment), memcached's current value
 * and opts->above; the skipped range is a gap of cause LC_GAP_FAILOVER.
 * The log keeps its identity, so memcached's claims stay valid.  The old
 * primary cannot extend its window without this standby's
 * acknowledgment, so nothing it hands out afterwards can repeat an id of
 * the promoted one.  *counters (may be NULL): how many counters were
 * raised.  LC_EINVAL if the handle is not a standby; LC_ESTALE (the
 * standby goes on following) if it may be behind and !force. */
LC_EXTERN int lc_promote(lc_t *h, const lc_promote_opts *opts,
                         uint64_t *counters);

typedef enum {
  LC_ROLE_ALONE,   /* neither option given */
  LC_ROLE_PRIMARY, /* replication_listen */
  LC_ROLE_STANDBY  /* standby_of, not promoted yet */
} lc_role_t;
typedef struct lc_replication_status {
  lc_role_t role;
  /* primary: "none", "catchup" or "sync" (the standby that acknowledges
   * floors); standby: "connecting", "snapshot", "catchup" or "sync" */
  char state[16];
  int connected;  /* a standby (primary) / the primary (standby) */
  int stale;      /* standby: promote needs force */
  uint64_t seq;   /* primary: batches written; standby: applied */
  uint64_t acked; /* primary: acknowledged by the standby */
  uint64_t lag_records;  /* standby: log entries the primary wrote that
                            are not applied here yet */
  double lag_seconds;    /* standby: how old the oldest of them is */
  uint64_t ack_timeouts; /* primary: floors not acknowledged in time */
  uint64_t snapshots;    /* full copies sent (primary) / taken (standby) */
  uint64_t connects;     /* connections of a standby so far */
} lc_replication_status;
LC_EXTERN int lc_get_replication_status(lc_t *h, lc_replication_status *out);
/* (0.10) A primary: *n = the standbys streaming from it now (up to 4: one
 * synchronous, the one lc_get_replication_status describes, the others
 * behind it); 0 on a standby or without replication_listen. */
LC_EXTERN int lc_replication_standbys(lc_t *h, int *n);

/* ==== Automatic failover's hooks (src/cluster.c; logcounterd --etcd) ====
 * What a coordinator (a process holding a leadership lease in etcd) uses.
 * Each is safe from any thread without a lock of the caller's. */
/* CLOCK_MONOTONIC in microseconds: the clock of lc_set_lease_deadline. */
LC_EXTERN int64_t lc_monotonic_us(void);
/* Fencing: once CLOCK_MONOTONIC passes mono_us, h hands out nothing
 * (every allocation, from held windows and segments too, and every tally
 * change fails LC_EFENCED) until a later deadline is set; 0 (the
 * default): no deadline; a time already past fences at once.  Set it to
 * the last lease renewal's send time + the TTL - a margin.  Requires a
 * local handle (LC_EREMOTE otherwise).  Calls already past the check
 * when the deadline passes may still complete: the margin covers them. */
LC_EXTERN int lc_set_lease_deadline(lc_t *h, int64_t mono_us);
/* Process-wide, before lc_open: every primary opened or promoted after it
 * lets a standby go in sync (acknowledge floors, 'y') only once
 * lc_replication_approve named that standby's address, so a coordinator
 * can name the standby in its store before the standby holds a floor the
 * one named before lacks.  Until approved, floors wait and fail
 * (LC_ENOSTANDBY) as with no standby. */
LC_EXTERN void lc_replication_need_approval(void);
/* Primary: the address "HOST:PORT" of the standby connected now ("" with
 * none) and in *in_sync whether it is in sync.  Standby: its own local
 * address on its connection to the primary ("" while not connected), the
 * same text the primary sees.  out gets at most size bytes. */
LC_EXTERN int lc_replication_peer(lc_t *h, char *out, size_t size,
                                  int *in_sync);
/* Primary (LC_EINVAL otherwise): the standby at peer may go in sync; it
 * does at once when it has caught up.  "" approves none. */
LC_EXTERN int lc_replication_approve(lc_t *h, const char *peer);
/* What db_path holds, in *kind: LC_LOG_KIND_NONE (no log there yet),
 * LC_LOG_KIND_STANDBY (a standby's copy: open it with standby_of, then
 * promote it) or LC_LOG_KIND_PRIMARY (a log of its own; also when the
 * directory could not be opened: lc_open then says why).  Opens and
 * closes the directory: call it before lc_open. */
enum { LC_LOG_KIND_NONE, LC_LOG_KIND_PRIMARY, LC_LOG_KIND_STANDBY };
LC_EXTERN int lc_log_kind(const char *db_path, int *kind);
/* Writes the leadership term (the etcd leader key's create revision) and
 * the node's name into the log ("!logcounter-term": "1 TERM UNIXTIME
 * NODE"), replicated like any write; not synced (it records, it guards
 * nothing).  A primary only (LC_ESTANDBY otherwise). */
LC_EXTERN int lc_record_term(lc_t *h, uint64_t term, const char *node);
/* (0.10) The term under which h's next promotion happens (a standby's
 * lc_promote): its failover gaps carry it as their reason, "term TERM".
 * 0 (the default): none, reason "".  Any handle, any time. */
LC_EXTERN int lc_set_term(lc_t *h, uint64_t term);
LC_EXTERN const char *lc_role_name(lc_role_t role);

/* ==== Write latency (added in 0.6) =====================================
 *
 * How long the handle's floor writes take: the synced log writes that
 * raise a counter's reservation (lc_next_n with the default durability,
 * lc_advance, a dropped segment), and those that write a prefetched
 * segment's record (lc_options.prefetch), each timed from the call into
 * the log writer until it returns (queueing behind other writes, the
 * write, the fsync, the standby's acknowledgment), failed ones too.
 * Timing costs two clock reads per floor write, and the counts are
 * relaxed atomics: no lock is taken.  Buckets are fixed and log-spaced
 * (1-2-5 steps); bucket i counts the writes that took more than
 * lc_latency_bound_us(i - 1) and at most lc_latency_bound_us(i)
 * microseconds; the last one has no upper bound.  A remote handle
 * reports zeros. */
#define LC_LATENCY_BUCKETS 20
typedef struct lc_latency_hist {
  uint64_t count;  /* writes timed: the sum of buckets[] */
  uint64_t sum_us; /* their total time in microseconds */
  uint64_t buckets[LC_LATENCY_BUCKETS]; /* not cumulative */
} lc_latency_hist;
typedef struct lc_latency {
  lc_latency_hist reservation; /* writes that raise a reservation */
  lc_latency_hist segment;     /* writes of a new segment's record */
} lc_latency;
/* A snapshot since lc_open (each bucket read on its own: a write timed
 * meanwhile may show in count but not yet in sum_us).  Thread-safe. */
LC_EXTERN int lc_get_latency(lc_t *h, lc_latency *out);
/* The upper bound of bucket i in microseconds (5, 10, 20, 50, 100, ...
 * 5000000); INT64_MAX for the last bucket and for any i out of range. */
LC_EXTERN int64_t lc_latency_bound_us(int i);

/* ==== Tallies ===========================================================
 *
 * A tally is a write-behind signed 64-bit count (page views, likes, stock
 * levels): lc_tally_add costs one memcached round trip, and changes are
 * applied to the log in bundles by lc_tally_flush, one log write per tally
 * per flush however often it changed.  Tally names follow the rules of
 * counter names (lc_check_name) and live in their own namespace: a tally
 * and a serial counter may share a name without touching each other.
 *
 * In memcached, "lt+:NAME" and "lt-:NAME" hold the sums of the positive
 * deltas and of the magnitudes of the negative ones (both only grow);
 * "lt@:NAME" is the window marker.  The log holds per tally the durable
 * total and how much of each memcached sum it has applied, updated in one
 * atomic write, so a flush applies exactly the difference: no change is
 * applied twice, whichever flusher dies or however many run at once.
 *
 * What can be lost: changes still pending in memcached when memcached loses
 * them (restart, eviction, flush_all).  Such a loss is detected (a sum that
 * went backwards or vanished), counted in the tally's record (losses), in
 * lc_stats.tally_losses, and never turned into a wrong correction: the
 * durable total never exceeds the true sum of changes.  Flushing often
 * keeps it small.
 *
 * All tally calls are thread-safe on one handle.  They need the log:
 * remote handles get LC_EREMOTE.
 */

/* Applies delta (non-zero; LC_EDELTA otherwise) to the tally in memcached.
 * The first change in a window schedules the tally for the next
 * lc_tally_flush; a failure to schedule does not fail the call.
 * LC_ETALLYRANGE (nothing applied) when the durable total plus everything
 * pending plus delta could leave [INT64_MIN, INT64_MAX]. */
LC_EXTERN int lc_tally_add(lc_t *h, const char *name, int64_t delta);
/* lc_tally_add, and *after: the tally's total (durable + pending) right
 * after the change, from the sum its own memcached increment answered and
 * one read of the other side's sum (one more round trip).  It includes
 * this change and every change acknowledged before this one began;
 * concurrent changes may or may not be in it.  Once the change is made the
 * call succeeds: if the other sum cannot be read, that side counts as
 * having nothing pending; a loss detected meanwhile can also make it
 * approximate.  (logcounterd's incr/decr replies.) */
LC_EXTERN int lc_tally_add_total(lc_t *h, const char *name, int64_t delta,
                                 int64_t *after);

/* The window in seconds (1 .. 2592000; default 1): the first change of a
 * tally in a window schedules it, and a scheduled tally is due for flushing
 * one second after its window ends. */
LC_EXTERN int lc_tally_set_window(lc_t *h, unsigned seconds);

/* *total: the durable total in the log; *pending: the net change still in
 * memcached, not yet applied; *losses: how many times memcached was found
 * to have lost pending changes of it.  Any pointer may be NULL.  A tally
 * never changed reads as 0, 0, 0. */
LC_EXTERN int lc_tally_get(lc_t *h, const char *name, int64_t *total,
                           int64_t *pending, uint64_t *losses);
/* (0.10) *plus, *minus: the amounts of acknowledged changes memcached
 * lost (P14): the sum of the lost positive deltas, and of the magnitudes
 * of the lost negative ones (so the total is short by *plus - *minus),
 * as the tally's record holds them (with what was measured since, not yet
 * written).  Measured by the owner: what it acknowledged and had not
 * applied that memcached no longer held (a sum vanished, or went below
 * the applied sum plus what was acknowledged by the read; the record's
 * carry, written with each record and at lc_close, extends this across a
 * restart).  A lower bound: changes whose acknowledgement was lost, and
 * changes acknowledged by an earlier process after its last record write
 * (a process killed), are not in it.  Either pointer may be NULL. */
LC_EXTERN int lc_tally_lost(lc_t *h, const char *name, uint64_t *plus,
                            uint64_t *minus);

#define LC_TALLY_FORCE 1 /* also flush scheduled tallies not yet due */
#define LC_TALLY_SWEEP \
  2 /* also compare every tally in the log with
                             memcached and flush those with pending changes
                             (recovers schedules lost with a crash) */

/* Flushes scheduled tallies that are due (at most max of them; 0: all),
 * each in one atomic log write.  *flushed (may be NULL) receives how many
 * tally records were written.  Returns the first error; a tally that
 * failed stays scheduled. */
LC_EXTERN int lc_tally_flush(lc_t *h, uint64_t max, int flags,
                             uint64_t *flushed);

/* One tally as lc_tally_list reports it; name is NUL-terminated. */
typedef struct lc_tally_info {
  char name[LC_NAME_MAX + 1];
  int64_t total; /* durable total */
  uint64_t losses;
} lc_tally_info;

typedef enum {
  LC_TALLY_BY_NAME = 0,      /* ascending bytewise name */
  LC_TALLY_BY_TOTAL_DESC = 1 /* descending total, then descending name */
} lc_tally_order;

typedef struct lc_tally_list_opts {
  const char *prefix;   /* NULL or "": every name */
  int has_min, has_max; /* bounds on the durable total (inclusive) */
  int64_t min, max;
  lc_tally_order order;
  uint64_t offset; /* skip this many matches (pagination) */
  uint64_t limit;  /* report at most this many; 0: all */
  /* Called per match, in order; return non-zero to stop.  info is valid
   * only during the call. */
  int (*cb)(void *arg, const lc_tally_info *info);
  void *arg;
} lc_tally_list_opts;

/* Lists tallies by their durable totals, from one snapshot of the log.
 * By total, the total index is seeked to the bounds, so "top K" and
 * "above N" read only what they report (plus names the prefix rejects);
 * by name, only the prefix's range is read.  *count (may be NULL)
 * receives how many were reported. */
LC_EXTERN int lc_tally_list(lc_t *h, const lc_tally_list_opts *opts,
                            uint64_t *count);

#ifdef __cplusplus
}
#endif

#endif /* LOGCOUNTER_H */
