/*
 * commit.c - the log's writes, ordered by the library so that LevelDB's
 * own writer queue never has to park a thread on a condition variable.
 *
 *  - Synced writes commit in groups: a writer that finds no sync running
 *    becomes the committer, takes every synced write queued so far, appends
 *    them into one batch and makes ONE synced leveldb_write; writers that
 *    arrive meanwhile queue and go together in the next group.  Each gets
 *    the group's result (a failed group fails every write in it, and none
 *    of them is in the log).
 *  - Unsynced writes take a short lock that spins a little before it
 *    sleeps: a LevelDB write without a sync takes a few microseconds, less
 *    than a sleep and a wake-up.
 * Ordering between the two is LevelDB's, as before: a write is in the log
 * once its call returns 0.
 */
#include "internal.h"

#include <sched.h>
#include <string.h>

#define SPINS 200           /* trylock rounds before sleeping on the lock */

typedef struct lc__commit {
  leveldb_writebatch_t *b;
  int rc;
  bool done;
  char detail[LC__DETAIL_MAX];
  struct lc__commit *next;
} lc__commit;

void lc__commit_init(lc__log *l) {
  pthread_mutex_init(&l->gc_mu, NULL);
  pthread_cond_init(&l->gc_cv, NULL);
  pthread_mutex_init(&l->w_mu, NULL);
}

void lc__commit_destroy(lc__log *l) {
  pthread_cond_destroy(&l->gc_cv);
  pthread_mutex_destroy(&l->gc_mu);
  pthread_mutex_destroy(&l->w_mu);
}

static int write_now(lc__log *l, leveldb_writebatch_t *b, bool sync) {
  char *err = NULL;
  leveldb_write(l->db, sync ? l->sync : l->nosync, b, &err);
  return err ? lc__log_error(err, "write") : 0;
}

static int write_unsynced(lc__log *l, leveldb_writebatch_t *b) {
  int spins = 0;
  while (pthread_mutex_trylock(&l->w_mu) != 0) {
    if (++spins == SPINS) {
      pthread_mutex_lock(&l->w_mu);
      break;
    }
    sched_yield();
  }
  int rc = write_now(l, b, false);
  pthread_mutex_unlock(&l->w_mu);
  return rc;
}

int lc__log_write(lc__log *l, leveldb_writebatch_t *b, bool sync) {
  if (!sync) return write_unsynced(l, b);
  lc__commit me = {.b = b};
  pthread_mutex_lock(&l->gc_mu);
  if (l->gc_tail) l->gc_tail->next = &me; else l->gc_head = &me;
  l->gc_tail = &me;
  while (!me.done) {
    if (l->gc_syncing) {
      pthread_cond_wait(&l->gc_cv, &l->gc_mu);
      continue;
    }
    /* the committer: every write queued so far, in one synced write */
    l->gc_syncing = true;
    lc__commit *group = l->gc_head;
    l->gc_head = l->gc_tail = NULL;
    pthread_mutex_unlock(&l->gc_mu);
    leveldb_writebatch_t *all = group->b;
    for (lc__commit *w = group->next; w; w = w->next)
      leveldb_writebatch_append(all, w->b);
    lc__detail_clear();
    int rc = write_now(l, all, true);
    pthread_mutex_lock(&l->gc_mu);
    for (lc__commit *w = group; w; w = w->next) {
      w->rc = rc;
      if (rc) memcpy(w->detail, lc_last_detail(), LC__DETAIL_MAX);
      w->done = true;
    }
    l->gc_syncing = false;
    pthread_cond_broadcast(&l->gc_cv);
  }
  pthread_mutex_unlock(&l->gc_mu);
  if (me.rc) lc__detail_set(me.detail);
  return me.rc;
}
