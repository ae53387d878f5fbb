/*
 * log_write.c - writing the log, and what happens when a write fails.
 *
 * LevelDB stays writable after a failed or short write(2) of its
 * write-ahead log (only a failed sync sets its error state), and its log
 * writer's block offset moves on anyway: every later record lands behind
 * the torn one, and the next open drops them all, synced or not.  So the
 * first failed write must be the last one through that handle.
 *
 * Invariants:
 *  - one write at a time reaches LevelDB: callers queue, and the first in
 *    the queue (the leader) writes every queued batch as ONE group (synced
 *    if any of them asks for it), as LevelDB's own group commit does, so
 *    concurrent synced writes still share one fsync;
 *  - a leader writes only while the state is OK; the failure of its write
 *    moves the state to FAILED before any later leader can look, so no
 *    write ever follows a failed one, and every caller of the group gets
 *    the error (nothing of it is acknowledged);
 *  - a synced write is acknowledged only if the directory is still the one
 *    opened (checked after the sync); unsynced ones check at most every
 *    100 ms.  A directory removed or replaced makes the log LOST;
 *  - with a standby, a group enters the replication stream before it is
 *    written here (the hook repl/replicate.c installs), and a synced one only once the standby
 *    has it; one it refuses is written nowhere.
 */
#include "log/log.h"
#include "handle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define GROUP_MAX 64          /* batches written as one group, at most */
#define CHECK_EVERY_US 100000 /* directory checks of unsynced writes */

struct lc__wreq {
  leveldb_writebatch_t *b;
  bool sync, done;
  int rc;
  char detail[LC__DETAIL_MAX];
  pthread_cond_t cv;
  lc__wreq *next;
};

int lc__log_refuse(lc__log *l) {
  char why[LC__DETAIL_MAX];
  pthread_mutex_lock(&l->fmu);
  snprintf(why, sizeof why, "%s", l->why[0] ? l->why : "not open");
  pthread_mutex_unlock(&l->fmu);
  if (atomic_load(&l->state) == LC__LOG_LOST)
    return lc__fail(LC_ELOG, "log lost, not written any more: %s", why);
  return lc__fail(LC_ELOG,
                  "log failed, nothing written until it is reopened:"
                  " %s",
                  why);
}

int lc__log_enter(lc__log *l) {
  int rc = lc__log_ok(l);
  if (rc) return rc;
  pthread_rwlock_rdlock(&l->gate);
  if (atomic_load(&l->state) == LC__LOG_OK && l->db) return 0;
  pthread_rwlock_unlock(&l->gate);
  return lc__log_refuse(l);
}

void lc__log_leave(lc__log *l) {
  pthread_rwlock_unlock(&l->gate);
}

/* OK or FAILED -> to, with why; the first failure calls on_fail. */
static void set_failed(lc__log *l, int to, const char *why) {
  pthread_mutex_lock(&l->fmu);
  int was = atomic_load(&l->state);
  bool first = was == LC__LOG_OK;
  if (first || (to == LC__LOG_LOST && was != LC__LOG_LOST)) {
    snprintf(l->why, sizeof l->why, "%s", why);
    atomic_store(&l->state, to);
    if (first) {
      l->failures++;
      l->failed_us = lc__clock_now_us();
    }
  }
  pthread_mutex_unlock(&l->fmu);
  if (first && l->on_fail) l->on_fail(l->on_fail_arg);
}

int lc__log_fail(lc__log *l, const char *err) {
  set_failed(l, LC__LOG_FAILED, err);
  return lc__fail(LC_ELOG, "leveldb write: %s", err);
}

int lc__log_check_dir(lc__log *l, bool force) {
  int64_t now = lc__clock_mono_us();
  if (!force && now - atomic_load(&l->checked_us) < CHECK_EVERY_US) return 0;
  atomic_store(&l->checked_us, now);
  struct stat st;
  char why[LC__DETAIL_MAX];
  if (stat(l->path, &st) != 0)
    snprintf(why, sizeof why, "log directory %s: %s", l->path, strerror(errno));
  else if (st.st_dev != l->dev || st.st_ino != l->ino)
    snprintf(why, sizeof why,
             "log directory %s was replaced (inode %llu, "
             "opened as %llu)",
             l->path, (unsigned long long)st.st_ino,
             (unsigned long long)l->ino);
  else if (force && (st.st_mtim.tv_sec != l->synced_mtime.tv_sec ||
                     st.st_mtim.tv_nsec != l->synced_mtime.tv_nsec))
    return lc__log_sync_switched(l); /* a synced write in a new file
                                        stays, and what the old one held */
  else
    return 0;
  set_failed(l, LC__LOG_LOST, why);
  return lc__fail(LC_ELOG, "log lost: %s", why);
}

/* The leader's write of its group g[0..n) (wmu not held). */
static int write_group(lc__log *l, lc__wreq **g, int n) {
  int rc = lc__log_enter(l);
  if (rc) return rc;
  bool sync = false;
  leveldb_writebatch_t *b = g[0]->b;
  if (n > 1) {
    b = l->group;
    leveldb_writebatch_clear(b);
  }
  for (int i = 0; i < n; i++) {
    sync = sync || g[i]->sync;
    if (n > 1) leveldb_writebatch_append(b, g[i]->b);
  }
  uint64_t seq = 0;
  if (l->hook && (rc = l->hook->before(l->hook_arg, b, sync, &seq)) != 0) {
    lc__log_leave(l);
    return rc; /* not written: the standby did not take it */
  }
  /* a memtable switch since the last synced write: the old log's
   * unsynced tail made durable before this write's sync makes later
   * records durable in the new one */
  if (sync && (rc = lc__log_sync_switched(l)) != 0) {
    if (l->hook) l->hook->after(l->hook_arg, seq, false);
    set_failed(l, LC__LOG_FAILED, lc_last_detail());
    lc__log_leave(l);
    return rc;
  }
  char *err = NULL;
  leveldb_write(l->db, sync ? l->sync : l->nosync, b, &err);
  if (l->hook) l->hook->after(l->hook_arg, seq, err == NULL);
  if (err) {
    rc = lc__log_fail(l, err);
    leveldb_free(err);
  } else {
    rc = lc__log_check_dir(l, sync);
  }
  lc__log_leave(l);
  return rc;
}

int lc__log_sync(lc_t *h, leveldb_writebatch_t *b, int lat) {
  int64_t t0 = lat >= 0 ? lc__clock_mono_us() : 0;
  int rc = lc__log_write(&h->log, b, true);
  if (lat >= 0) lc__lat_record(&h->lat[lat], t0);
  LC__STAT(h, log_writes, 1);
  LC__STAT(h, log_syncs, 1);
  return rc;
}

int lc__log_write(lc__log *l, leveldb_writebatch_t *b, bool sync) {
  if (atomic_load(&l->standby))
    return lc__fail(LC_ESTANDBY, "the log follows its primary");
  int rc = lc__log_ok(l);
  if (rc) return rc;
  lc__wreq w = {.b = b, .sync = sync};
  pthread_cond_init(&w.cv, NULL);
  pthread_mutex_lock(&l->wmu);
  if (l->wtail)
    l->wtail->next = &w;
  else
    l->whead = &w;
  l->wtail = &w;
  while (!w.done && (l->whead != &w || l->writing))
    pthread_cond_wait(&w.cv, &l->wmu);
  if (!w.done) { /* the leader: the group is the queue's first GROUP_MAX */
    lc__wreq *g[GROUP_MAX];
    int n = 0;
    for (lc__wreq *q = &w; q && n < GROUP_MAX; q = q->next) g[n++] = q;
    l->writing = true;
    pthread_mutex_unlock(&l->wmu);
    rc = write_group(l, g, n);
    pthread_mutex_lock(&l->wmu);
    l->writing = false;
    l->whead = g[n - 1]->next;
    if (l->whead == NULL) l->wtail = NULL;
    for (int i = 0; i < n; i++) {
      g[i]->rc = rc;
      if (rc && i > 0) memcpy(g[i]->detail, lc_last_detail(), LC__DETAIL_MAX);
      g[i]->done = true;
      if (i > 0) pthread_cond_signal(&g[i]->cv);
    }
    if (l->whead) pthread_cond_signal(&l->whead->cv);
  }
  pthread_mutex_unlock(&l->wmu);
  pthread_cond_destroy(&w.cv);
  if (w.rc && w.detail[0]) lc__detail_set(w.detail);
  return w.rc;
}
