/*
 * recover.c - bringing a failed log back: a thread of the handle that
 * closes and reopens LevelDB after a failed write, with backoff, and the
 * log's status (lc_get_log_status).
 *
 * The thread starts at the first failure (lc__log.on_fail), sleeps while
 * the log is OK, and exits at lc_close.  An attempt that fails, at any
 * step, leaves the log FAILED (or LOST), and the next one follows after
 * the backoff: the log comes back once the disk does.  A reopen takes the gate for
 * writing: every call inside the log finishes first, and none enters
 * while the state is not OK.  LevelDB's open replays its write-ahead log:
 * a torn record at its end is dropped, and nothing was written behind it
 * (log_write.c), so every acknowledged write survives.  What the handle
 * keeps in memory stays valid (floors only ever went up, and a value was
 * acknowledged only after its write succeeded); a failed write that
 * reached the log after all (a failed sync leaves its batch in the
 * write-ahead log) is reconciled by the ledger (lc__ledger_recheck) and
 * the tallies (lc__tally_refresh) before their next write.
 */
#include "log/log.h"
#include "handle.h"

#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 5000

static void *recoverer(void *arg) {
  lc_t *h = arg;
  int backoff = BACKOFF_MIN_MS;
  pthread_mutex_lock(&h->rec.mu);
  while (!h->rec.stop) {
    if (atomic_load(&h->log.state) != LC__LOG_FAILED) {
      backoff = BACKOFF_MIN_MS;
      pthread_cond_wait(&h->rec.cv, &h->rec.mu);
      continue;
    }
    struct timespec until = lc__clock_realtime_in(backoff);
    int w = 0;
    while (!h->rec.stop && w != ETIMEDOUT)
      w = pthread_cond_timedwait(&h->rec.cv, &h->rec.mu, &until);
    if (h->rec.stop) break;
    pthread_mutex_unlock(&h->rec.mu);
    int rc = lc__recover(h);
    pthread_mutex_lock(&h->rec.mu);
    backoff = rc == 0                        ? BACKOFF_MIN_MS
              : backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS
                                             : backoff * 2;
  }
  pthread_mutex_unlock(&h->rec.mu);
  return NULL;
}

/* on_fail: the first failure starts the thread, later ones wake it. */
static void kick(void *arg) {
  lc_t *h = arg;
  pthread_mutex_lock(&h->rec.mu);
  if (!h->rec.started && !h->rec.stop) {
    sigset_t all, old; /* the application's threads take the signals */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    h->rec.started = pthread_create(&h->rec.thread, NULL, recoverer, h) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_cond_signal(&h->rec.cv);
  pthread_mutex_unlock(&h->rec.mu);
  /* without the thread, lc_log_recover (and lc_close) still reopen */
}

void lc__recover_init(lc_t *h) {
  pthread_mutex_init(&h->rec.mu, NULL);
  pthread_mutex_init(&h->rec.run, NULL);
  pthread_cond_init(&h->rec.cv, NULL);
  h->log.on_fail = kick;
  h->log.on_fail_arg = h;
}

void lc__recover_stop(lc_t *h) {
  pthread_mutex_lock(&h->rec.mu);
  h->rec.stop = true;
  bool started = h->rec.started;
  pthread_cond_signal(&h->rec.cv);
  pthread_mutex_unlock(&h->rec.mu);
  if (started) pthread_join(h->rec.thread, NULL);
  h->log.on_fail = NULL;
  pthread_cond_destroy(&h->rec.cv);
  pthread_mutex_destroy(&h->rec.run);
  pthread_mutex_destroy(&h->rec.mu);
}

int lc__recover(lc_t *h) {
  lc__log *l = &h->log;
  pthread_mutex_lock(&h->rec.run);
  int expect = LC__LOG_FAILED;
  if (!atomic_compare_exchange_strong(&l->state, &expect, LC__LOG_RECOVERING)) {
    pthread_mutex_unlock(&h->rec.run);
    return expect == LC__LOG_OK ? 0 : lc__log_refuse(l);
  }
  pthread_rwlock_wrlock(&l->gate); /* every call inside the log is out */
  lc__iters_kill(l);
  int rc = lc__log_reopen(l); /* FAILED or LOST again when it fails */
  atomic_fetch_add(&l->gen, 1);
  pthread_rwlock_unlock(&l->gate);
  pthread_mutex_lock(&l->fmu);
  l->attempts++;
  if (rc) {
    snprintf(l->last_attempt, sizeof l->last_attempt, "%s", lc_last_detail());
    /* FAILED again for the next attempt, whichever step failed (LOST
     * stays): left RECOVERING, the log would refuse everything for good,
     * as nothing retries a log in that state (a failed sync of the
     * directory before LevelDB's open left it so: chaos seed 9) */
    expect = LC__LOG_RECOVERING;
    atomic_compare_exchange_strong(&l->state, &expect, LC__LOG_FAILED);
  } else {
    l->last_attempt[0] = '\0';
    l->recoveries++;
    l->recovered_us = lc__clock_now_us();
    atomic_store(&l->state, LC__LOG_OK);
  }
  pthread_mutex_unlock(&l->fmu);
  pthread_mutex_unlock(&h->rec.run);
  return rc;
}

const char *lc_log_state_name(lc_log_state_t s) {
  switch (s) {
  case LC_LOG_OK: return "ok";
  case LC_LOG_FAILED: return "failed";
  case LC_LOG_RECOVERING: return "recovering";
  case LC_LOG_LOST: return "lost";
  }
  return "unknown";
}

int lc_get_log_memory(lc_t *h, uint64_t *bytes) {
  lc__detail_clear();
  if (h == NULL || bytes == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = LC__LOCAL_ONLY(h);
  if (rc || (rc = lc__log_enter(&h->log)) != 0) return rc;
  char *v =
      leveldb_property_value(h->log.db, "leveldb.approximate-memory-usage");
  lc__log_leave(&h->log);
  *bytes = v ? strtoull(v, NULL, 10) : 0;
  leveldb_free(v);
  return 0;
}

int lc_get_log_status(lc_t *h, lc_log_status *out) {
  lc__detail_clear();
  if (h == NULL || out == NULL) return lc__fail(LC_EINVAL, "NULL argument");
  int rc = LC__LOCAL_ONLY(h);
  if (rc) return rc;
  lc__log *l = &h->log;
  if (atomic_load(&l->state) == LC__LOG_OK) {
    lc__log_check_dir(l, false); /* notices a removed directory when idle */
    lc__detail_clear();
  }
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&l->fmu);
  switch (atomic_load(&l->state)) {
  case LC__LOG_OK: out->state = LC_LOG_OK; break;
  case LC__LOG_FAILED: out->state = LC_LOG_FAILED; break;
  case LC__LOG_RECOVERING: out->state = LC_LOG_RECOVERING; break;
  default: out->state = LC_LOG_LOST; break;
  }
  out->failures = l->failures;
  out->recoveries = l->recoveries;
  out->attempts = l->attempts;
  out->failed_us = l->failed_us;
  out->recovered_us = l->recovered_us;
  snprintf(out->error, sizeof out->error, "%s", l->why);
  snprintf(out->attempt_error, sizeof out->attempt_error, "%s",
           l->last_attempt);
  pthread_mutex_unlock(&l->fmu);
  return 0;
}

int lc_log_recover(lc_t *h) {
  lc__detail_clear();
  if (h == NULL) return lc__fail(LC_EINVAL, "NULL handle");
  int rc = LC__LOCAL_ONLY(h);
  return rc ? rc : lc__recover(h);
}
