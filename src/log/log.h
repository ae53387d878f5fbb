/*
 * log/log.h - the LevelDB log: open and lock (log.c), writes one group at
 * a time whose first failure is the last (log_write.c), reopening a
 * failed log (recover.c), the log's identity (identity.c), iterators
 * (iter.c), pruning (prune.c), retention (retain.c), backups and restored
 * logs (backup.c).  A remote handle's log calls go to client/'s admin
 * channel.  Calls client/, net/, cache/ and base/; the replication layer
 * above sees each write through the hook it installs (lc__log_hook).
 */
#ifndef LC_LOG_H
#define LC_LOG_H

#include "client/client.h"

#include <leveldb/c.h>

/* ---- log.c, log_write.c: the LevelDB log ---- */
/* The log's state (lc__log.state).  Any failed write moves OK to FAILED:
 * from then on nothing is read or written through the handle (every call
 * gets LC_ELOG with the reason) until recover.c has reopened LevelDB
 * (RECOVERING while it works).  LOST: the directory was removed or
 * replaced; never reopened. */
enum { LC__LOG_OK, LC__LOG_FAILED, LC__LOG_RECOVERING, LC__LOG_LOST };

typedef struct lc__wreq lc__wreq; /* log_write.c: a write waiting its turn */

/* Called by log_write.c's one writer around each write group: before it
 * is written here (b, synced or not; a non-zero return fails every
 * request of the group with that code, writes it nowhere, and leaves the
 * log OK: replication's refusal, when no standby holds it), and after
 * (ok: LevelDB wrote it; not called for a refused group).  seq is
 * before's, handed to after. */
typedef struct lc__log_hook {
  int (*before)(void *arg, leveldb_writebatch_t *b, bool sync, uint64_t *seq);
  void (*after)(void *arg, uint64_t seq, bool ok);
} lc__log_hook;

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
  struct timespec synced_mtime; /* the directory's mtime at its last fsync
                                   (lc__log_sync_dir; the writer's) */
  /* The failure record (fmu): what failed, when, and the recoveries. */
  pthread_mutex_t fmu;
  char why[LC__DETAIL_MAX]; /* the failure that made it FAILED or LOST */
  char last_attempt[LC__DETAIL_MAX]; /* the last failed reopen, or "" */
  int64_t failed_us, recovered_us;   /* wall clock; 0: never */
  uint64_t failures, recoveries, attempts;
  lc_iter *iters;             /* open iterators (fmu), closed by a reopen */
  void (*on_fail)(void *arg); /* called once per failure (recover.c) */
  void *on_fail_arg;
  /* A hook around every write group (lc__log_hook), installed by the
   * layer that ships the log to a standby (repl/replicate.c); NULL when
   * none.  Set and cleared only while no write is under way. */
  const struct lc__log_hook *hook;
  void *hook_arg;
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
/* lc__log_max and lc__ledger_max (the last ledger entry's value) of the
 * counter in one call: one iterator for both seeks (a counter's load). */
int lc__log_max_both(lc__log *l, const char *name, size_t nlen, int64_t *max,
                     int64_t *gapmax);
/* An iterator on the last key under prefix (whose last byte is '\0'),
 * or, when there is none, on a key not under it or invalid; the caller
 * checks the prefix and holds the gate (lc__log_enter) until it destroys
 * it.  No key under prefix costs one forward seek. */
leveldb_iterator_t *lc__log_seek_last(lc__log *l, const char *prefix,
                                      size_t plen);
/* The same for any prefix whose keys end in a be64 value (what: for the
 * error detail). */
int lc__log_last(lc__log *l, char *prefix, size_t plen, const char *what,
                 int64_t *out);
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
/* fsyncs l's directory (0 or LC_ELOG), remembering its mtime as it was
 * just before: a later synced write that finds it changed (a file LevelDB
 * created or removed since, its new write-ahead log at a memtable switch
 * among them, whose entry LevelDB syncs only with its next MANIFEST)
 * syncs it again before it returns (lc__log_check_dir).  Open, reopen, or
 * the write leader. */
int lc__log_sync_dir(lc__log *l);
/* If l's directory changed since its last sync (a memtable switch made a
 * new write-ahead log, among others): fdatasyncs every write-ahead log
 * file in it (the old one's unsynced tail, which LevelDB never syncs),
 * then the directory.  The write leader, before and after a synced
 * write.  0 or LC_ELOG. */
int lc__log_sync_switched(lc__log *l);
/* log.c, for recover.c only (gate held for writing, state RECOVERING):
 * closes LevelDB and opens it again; 0, or LC_ELOG (the state is then
 * LOST when the directory or its identity changed; lc__recover makes it
 * FAILED again otherwise, whichever step failed). */
int lc__log_reopen(lc__log *l);
/* identity.c: the log's identity (read, or made and synced on first
 * open). */
int lc__log_identity(lc__log *l, char id[LC__ID_LEN + 1]);
/* A new random identity, synced, into id (unchanged on LC_ELOG). */
int lc__log_identity_renew(lc__log *l, char id[LC__ID_LEN + 1]);

/* ---- backup.c: restored logs ---- */
/* lc__log_open, before LevelDB is opened for good (OWNER held): 0 when
 * path holds no LC__BACKUP_MARK, or holds one beside a copy whose marker
 * says complete (a backup stopped between its last write and the mark's
 * removal: the mark is removed now); else LC_ELOG, an incomplete backup
 * (one with no LevelDB, an empty one, or a partial marker). */
int lc__backup_mark_check(const char *path);
/* At open: h->restored and h->restored_from from the marker (LC_ELOG for
 * a partial copy). */
int lc__backup_restored_load(lc_t *h);
/* lc_open of a restored log (not a standby's): while the log still has
 * the identity of the log it was copied from (h->restored_from), it takes
 * a new one (synced) into h->log_id, so that memcached's claims tell the
 * copy from its original: a counter the original claimed is refused
 * (LC_EOWNED) until lc_adopt takes it over. */
int lc__backup_identity(lc_t *h);
/* In a restored log: *pending unless 'k' NAME exists. */
int lc__backup_pending_load(lc_t *h, const char *name, size_t nlen, bool *pending);
/* Adds 'k' NAME (reconciled at value) to b. */
void lc__backup_reconciled(leveldb_writebatch_t *b, const char *name,
                           size_t nlen, int64_t value);
/* LC_EBEHIND for a pending counter that memcached lost (held < 0) or
 * holds below what the log shows taken (floor: that value). */
int lc__backup_behind(const char *name, int64_t held, int64_t floor);
/* ---- iter.c ---- */
/* An iterator from a snapshot, on the first key under name's records or
 * ledger entries (name NULL: the first key of the log); *snap_us (may be
 * NULL): the wall clock when the snapshot was taken.  The caller settles
 * the counter first if it is in use (counter/records.c). */
int lc__iter_make(lc_t *h, const char *name, bool ledger, lc_iter **out,
                  int64_t *snap_us);
/* An iterator of a handle on an admin socket: the stream of one request. */
int lc__iter_remote(lc_t *h, const char *name, bool ledger, lc_iter **out);
/* For backup.c: an iterator over the whole log from a snapshot
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
int lc__log_counter_names(lc_t *h, char **names, uint64_t *count);
/* Inits ret (always, for a local handle) and starts the thread when
 * retention is on; lc__retain_stop (also after a failed start) stops it
 * and waits, before the counters table is closed. */
int lc__retain_start(lc_t *h);
void lc__retain_stop(lc_t *h);
/* prune.c: lc_prune that ends early, keeping what it did, when *stop is
 * set (returns 0) or the log is no longer OK (LC_ELOG); stop may be NULL. */
int lc__prune(lc_t *h, const char *name, const lc_prune_opts *o,
              lc_prune_result *res, const atomic_bool *stop);

#endif
