/*
 * lcd_flush.c - logcounterd's tally flusher: one thread of its own that
 * applies the changes pending in memcached to the log every
 * --flush-interval seconds (lc_tally_flush with LC_TALLY_FORCE: every
 * tally changed since the last run, one log write each), with a sweep
 * (LC_TALLY_SWEEP: every tally in the log compared with memcached) at
 * startup and every --sweep-interval seconds, which applies what an
 * earlier process left pending when it died and recovers failed
 * schedules.
 *
 * Why a thread and not a libevent timer: a flush blocks on memcached and
 * LevelDB, and the event loop must never block; the worker pool is for
 * requests, and a long sweep there would hold a worker away from them.
 *
 * Invariants: the flusher touches nothing of the loop's (connections,
 * counters); its figures are under flusher.mu; lcd_flusher_stop joins it,
 * so the final flush (lcd_flush_final, at shutdown, after the workers are
 * joined) runs alone, before lc_close.  lc_tally_flush itself makes a
 * flush exactly-once whoever else flushes at the same time.
 */
#include "lcd_flush.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct timespec mono_after(int seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += seconds;
  return ts;
}

/* One run; called without mu. */
static void run_once(lcd_server *s, int sweep) {
  lcd_flusher *f = &s->flusher;
  uint64_t n = 0;
  int rc = lc_tally_flush(s->lc, 0,
                          LC_TALLY_FORCE | (sweep ? LC_TALLY_SWEEP : 0), &n);
  if (rc == LC_ESTANDBY) rc = 0; /* a standby's primary flushes */
  char detail[256];
  snprintf(detail, sizeof detail, "%s", lc_last_detail());
  pthread_mutex_lock(&f->mu);
  f->runs++;
  f->sweeps += (uint64_t)(sweep != 0);
  f->flushed += n;
  int was_failing = f->failing;
  f->failing = rc != 0;
  if (rc) f->errors++;
  pthread_mutex_unlock(&f->mu);
  /* Log the first failure of a streak and the recovery, not every run. */
  if (rc && !was_failing)
    lcd_log(s->set, 0, "tally flush failed (will retry every %d s): %s %s%s%s",
            s->set->flush_interval ? s->set->flush_interval : 1,
            lc_err_name(rc), lc_strerror(rc), detail[0] ? ": " : "", detail);
  else if (!rc && was_failing)
    lcd_log(s->set, 0, "tally flush works again (%" PRIu64 " tallies written)",
            n);
  else if (n)
    lcd_log(s->set, 2, "tally flush: %" PRIu64 " tallies written%s", n,
            sweep ? " (with a sweep)" : "");
}

static void *flusher(void *arg) {
  lcd_server *s = arg;
  lcd_flusher *f = &s->flusher;
  const int every = s->set->flush_interval;
  const int sweep_every = s->set->sweep_interval;
  time_t next_sweep = 0;
  int sweep_pending = 1; /* the startup sweep */
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    int sweep =
        sweep_pending || (sweep_every && mono_after(0).tv_sec >= next_sweep);
    pthread_mutex_unlock(&f->mu);
    run_once(s, sweep);
    pthread_mutex_lock(&f->mu);
    if (sweep) { /* a failed sweep is tried again */
      sweep_pending = f->failing;
      next_sweep = mono_after(sweep_every).tv_sec;
    }
    /* Wait an interval.  --flush-interval 0: once the startup sweep has
     * worked, wait only to be stopped; until then retry every second. */
    if (!every && !f->failing && !sweep_pending) {
      while (!f->stop) pthread_cond_wait(&f->cv, &f->mu);
      break;
    }
    struct timespec until = mono_after(every ? every : 1);
    while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0) {
    }
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

int lcd_flusher_start(lcd_server *s) {
  lcd_flusher *f = &s->flusher;
  pthread_condattr_t ca;
  pthread_mutex_init(&f->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&f->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (s->set->flush_interval > 1) /* a tally is scheduled (its window
                                         marker set) once per interval */
    lc_tally_set_window(s->lc, (unsigned)s->set->flush_interval);
  /* Like the workers, the flusher takes no signals. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&f->thread, NULL, flusher, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return -1;
  f->started = 1;
  return 0;
}

void lcd_flusher_stop(lcd_server *s) {
  lcd_flusher *f = &s->flusher;
  if (!f->started) return;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->thread, NULL);
  f->started = 0;
}

int lcd_flush_final(lcd_server *s) {
  uint64_t n = 0;
  int rc = lc_tally_flush(s->lc, 0, LC_TALLY_FORCE | LC_TALLY_SWEEP, &n);
  if (rc == LC_ESTANDBY) return 0; /* a standby's primary flushes */
  if (rc)
    lcd_log(s->set, 0,
            "final tally flush failed: %s %s (%s); the changes stay "
            "pending in memcached and the next start's sweep applies them "
            "if memcached keeps them",
            lc_err_name(rc), lc_strerror(rc), lc_last_detail());
  else
    lcd_log(s->set, 0, "final tally flush: %" PRIu64 " tallies written", n);
  return rc;
}

void lcd_flusher_figures(lcd_server *s, uint64_t *runs, uint64_t *sweeps,
                         uint64_t *errors, uint64_t *flushed) {
  lcd_flusher *f = &s->flusher;
  if (!f->started) {
    *runs = *sweeps = *errors = *flushed = 0;
    return;
  }
  pthread_mutex_lock(&f->mu);
  *runs = f->runs;
  *sweeps = f->sweeps;
  *errors = f->errors;
  *flushed = f->flushed;
  pthread_mutex_unlock(&f->mu);
}
