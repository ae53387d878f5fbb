/*
 * lcd_pool.c - where jobs run: on the loop thread that parsed them when
 * the library answers quickly (submit_pending), else on the worker
 * threads, which make the blocking library calls (first use of a name,
 * sync durability, --no-coalesce, more counters at once than a loop
 * should wait for one after another) so that a loop never waits on them.
 *
 * Worker jobs come in through a FIFO under pool.mu; a finished job goes
 * to its loop's done list under done_mu and that loop is woken with
 * event_active (only when the list was empty, so a burst of results costs
 * one wake-up).  A loop never touches a job between queueing and done; a
 * worker never touches a connection.
 *
 * Coalescing: a loop, or a worker, that takes an incr job also takes
 * every queued incr job of the same counter (arrival order, one block of
 * at most LC_BLOCK_MAX) and serves them with ONE lc_next_n, splitting the
 * block in queue order; and loops and workers busy on the same counter at
 * once are merged again by the library.  A connection never has two jobs
 * of one counter in flight, so its answers still increase.  --no-coalesce: no take, one
 * lc_next_n per job (and the library merges nothing: batch_max = 1).
 * A worker that takes a MANY job (a connection's pipelined run of first
 * uses) also takes the MANY jobs queued right after it, up to
 * LCD_MANY_NAMES requests, for one lc_next_each (run_many).
 *
 * Tally jobs (incr/decr tally:NAME) are merged the same way: a worker
 * takes every queued tally job of the same tally, and each run of
 * consecutive changes of one sign among them (each job may hold a
 * pipelined run) shares ONE lc_tally_add_total of its sum (one memcached
 * incr, one read for the reply); change i is answered with the total after
 * the shared call minus the changes of the run after it, i.e. as if they
 * were applied one after another in queue order at that moment.  One sign
 * keeps the range check exact: the shared call is refused (ETALLYRANGE,
 * nothing applied) exactly when some change alone would be, and then each
 * change is made on its own.  A get job
 * answers tally keys with lc_tally_get.
 *
 * Invariant at stop: every submitted job has run and come back through
 * lcd_conn_job_done, so no id is allocated without its connection knowing.
 *
 * With --metrics-listen, each lc_next_n call for incr jobs is timed into
 * its loop's histogram, or the workers' (lcd_metrics.c; relaxed atomics).
 */
#include "lcd_cluster.h"
#include "lcd_conn.h"
#include "lcd_job.h"
#include "lcd_pool.h"
#include "lcd_server.h"
#include "lcd_metrics.h"

#include <event2/event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lcd_binary.h" /* the binary protocol's never-create */

/* Copies the failure detail of this thread's last lc_ call into out
 * (sizeof lcd_job.detail bytes), without control characters (it goes
 * into a protocol line). */
static void copy_detail(char *out) {
  const char *d = lc_last_detail();
  size_t i = 0;
  for (; d[i] && i < sizeof((lcd_job *)0)->detail - 1; i++)
    out[i] = (d[i] < 0x20 || d[i] == 0x7f) ? ' ' : d[i];
  out[i] = '\0';
}

static void keep_detail(lcd_job *j) {
  copy_detail(j->detail);
}

/* A position in a chain of TALLY jobs: change i of job k. */
typedef struct tpos {
  lcd_job *k;
  int i;
} tpos;

static void tpos_next(tpos *p) {
  if (++p->i >= p->k->nreq) {
    p->k = p->k->next;
    p->i = 0;
  }
}

/* Change p failed with rc in library call number call (detail d).  Its
 * job keeps one detail: of its first failure that the server caused, else
 * of its first; tdet_lo..tdet_hi are its changes that share that call. */
static void tally_failed(const tpos *p, int rc, int call, const char *d) {
  lcd_job *k = p->k;
  if (!k->rc || (lcd_client_caused(k->rc) && !lcd_client_caused(rc))) {
    k->rc = rc;
    memcpy(k->detail, d, sizeof k->detail);
    k->tdet_call = call;
    k->tdet_lo = p->i;
  }
  if (k->tdet_call == call) k->tdet_hi = p->i + 1;
}

/* A chain of TALLY jobs of one tally (see the top of the file): each run
 * of consecutive changes of one sign whose sum fits int64 shares one
 * call.  One sign only, so that every prefix of the run lies between the
 * totals before and after it: the shared call is accepted exactly when
 * each change, made alone in that order, would be. */
static void run_tally(lc_t *lc, lcd_job *j) {
  for (lcd_job *k = j; k; k = k->next) {
    k->rc = 0;
    k->merged = 0;
    k->detail[0] = '\0';
    k->tdet_lo = k->tdet_hi = 0;
  }
  char d[sizeof j->detail];
  int call = 0;
  tpos p = {j, 0};
  while (p.k) {
    tpos start = p;
    int64_t sum = 0;
    int n = 0;
    while (p.k) {
      int64_t delta = p.k->tdelta[p.i];
      if (n > 0 &&
          ((delta > 0) != (sum > 0) ||
           (delta > 0 ? delta > INT64_MAX - sum : delta < -INT64_MAX - sum)))
        break;
      sum += delta;
      n++;
      tpos_next(&p);
    }
    int64_t after = 0;
    int rc = lc_tally_add_total(lc, j->names, sum, &after);
    call++;
    if (n > 1 && lcd_client_caused(rc)) {
      /* refused as a whole (nothing applied): some prefix may fit */
      for (tpos q = start; q.k != p.k || q.i != p.i; tpos_next(&q)) {
        rc = lc_tally_add_total(lc, j->names, q.k->tdelta[q.i], &after);
        call++;
        q.k->trc[q.i] = rc;
        q.k->tafter[q.i] = after;
        if (rc) {
          copy_detail(d);
          tally_failed(&q, rc, call, d);
        }
      }
      continue;
    }
    if (rc) copy_detail(d);
    /* change by change, the total after each: the total before the run
     * plus the changes up to it */
    __int128 cur = (__int128)after - sum;
    for (tpos q = start; q.k != p.k || q.i != p.i; tpos_next(&q)) {
      cur += q.k->tdelta[q.i];
      q.k->trc[q.i] = rc;
      q.k->tafter[q.i] = cur > INT64_MAX   ? INT64_MAX
                         : cur < INT64_MIN ? INT64_MIN
                                           : (int64_t)cur;
      if (rc) tally_failed(&q, rc, call, d);
    }
    j->merged += n - 1;
  }
}

/* ma N J<n>: a counter that has handed out no id yet starts at n (ids
 * only move up, so two such requests at once leave the larger start). */
static int start_at(lc_t *lc, const char *name, uint64_t n) {
  int64_t cur = 0;
  int rc = lc_current(lc, name, &cur);
  if (rc || cur != 0) return rc;
  if (n == LCD_BIN_NO_CREATE) return LCD_BIN_ENOCREATE; /* lcd_binary.h */
  return lc_advance(lc, name, (int64_t)n);
}

static int64_t now_us(void);

/* Runs a chain of jobs (linked by next): several INCR jobs of one counter
 * share one lc_next_n, split in queue order; a GET job runs alone.  lat
 * (NULL: none): where the lc_next_n call's time is counted.  on_loop (an
 * event loop's thread): the INCR call is lc_try_next_n, and when it would
 * wait for a synced log write the chain is left unanswered and false
 * returned (the caller hands it to the workers); otherwise true. */
static bool run_jobs(lc_t *lc, lcd_job *j, lcd_hist *lat, bool on_loop) {
  j->rc = 0;
  j->detail[0] = '\0';
  if (j->kind == LCD_JOB_INCR) {
    uint64_t total = 0;
    for (lcd_job *k = j; k; k = k->next) total += k->total;
    int64_t first = 0;
    int64_t t0 = lat ? now_us() : 0;
    int rc = j->meta.has_init ? start_at(lc, j->names, j->meta.init) : 0;
    if (!rc)
      rc = on_loop ? lc_try_next_n(lc, j->names, total, &first)
                   : lc_next_n(lc, j->names, total, &first);
    if (rc == LC_EWOULDBLOCK && on_loop) return false;
    if (lat) lcd_hist_record(lat, now_us() - t0);
    if (rc) keep_detail(j);
    if (rc == LC_ESTANDBY && !j->meta.has_init) /* --etcd: to the primary */
      rc = lcd_cluster_forward(j->names, total, &first);
    for (lcd_job *k = j; k; k = k->next) {
      k->rc = rc;
      k->first = first;
      first += (int64_t)k->total;
      if (rc && k != j) memcpy(k->detail, j->detail, sizeof k->detail);
    }
    return true;
  }
  if (j->kind == LCD_JOB_MANY) {
    lc_each e[LCD_RUN_MAX];
    for (int i = 0; i < j->nreq; i++)
      e[i] = (lc_each){.name = j->names + j->name_off[i], .n = j->count[i]};
    int64_t t0 = lat ? now_us() : 0;
    j->rc = lc_next_each(lc, e, (size_t)j->nreq);
    if (lat) lcd_hist_record(lat, now_us() - t0);
    if (j->rc) keep_detail(j);
    for (int i = 0; i < j->nreq; i++) {
      if (e[i].rc == LC_ESTANDBY) /* --etcd: to the primary */
        e[i].rc = lcd_cluster_forward(e[i].name, e[i].n, &e[i].first);
      j->trc[i] = e[i].rc;
      j->values[i] = e[i].first;
    }
    return true;
  }
  if (j->kind == LCD_JOB_TALLY) {
    run_tally(lc, j);
    return true;
  }
  if (j->stats_tally) {
    j->rc = lc_tally_get(lc, j->names, &j->tally_total, &j->tally_pending,
                         &j->tally_losses);
    if (!j->rc)
      j->rc = lc_tally_lost(lc, j->names, &j->tally_lost_p, &j->tally_lost_m);
    if (j->rc) keep_detail(j);
    return true;
  }
  for (size_t i = 0; i < j->nkeys; i++) {
    const char *key = j->names + j->name_off[i];
    if (strncmp(key, LCD_PROTO_TALLY_PREFIX, LCD_PROTO_TALLY_PREFIX_LEN) == 0) {
      int64_t total = 0, pending = 0;
      j->rc = lc_tally_get(lc, key + LCD_PROTO_TALLY_PREFIX_LEN, &total,
                           &pending, NULL);
      __int128 v = (__int128)total + pending;
      j->values[i] = v > INT64_MAX   ? INT64_MAX
                     : v < INT64_MIN ? INT64_MIN
                                     : (int64_t)v;
      j->hit[i] = 1;
    } else {
      j->rc = lc_current(lc, key, &j->values[i]);
      j->hit[i] = j->values[i] > 0;
    }
    if (j->rc) {
      keep_detail(j);
      return true;
    }
  }
  return true;
}

/* Unlinks the INCR jobs of j's counter that fit in one block (or the
 * TALLY jobs of j's tally) from the list *head (last *tail, *count long),
 * up to LCD_MERGE_SCAN entries, and chains them after j in list order.
 * The pool's queue (under p->mu) and the loop's own runs use it. */
static void take_same_counter(lcd_job **head, lcd_job **tailp, size_t *count,
                              lcd_job *j) {
  uint64_t total = j->total;
  lcd_job **link = head, *prev = NULL, *tail = j;
  int scanned = 0;
  while (*link && scanned++ < LCD_MERGE_SCAN) {
    lcd_job *k = *link;
    if (k->kind == j->kind &&
        (j->kind == LCD_JOB_TALLY || k->total <= LC_BLOCK_MAX - total) &&
        strcmp(k->names, j->names) == 0) {
      *link = k->next;
      if (*tailp == k) *tailp = prev;
      (*count)--;
      total += k->total;
      tail->next = k;
      tail = k;
      continue;
    }
    prev = k;
    link = &k->next;
  }
  tail->next = NULL;
}

/* Takes the first job of the list and, coalescing, the rest of its
 * counter's (or tally's) jobs: one library call's chain, lead first. */
static lcd_job *take_chain(lcd_job **head, lcd_job **tail, size_t *count,
                           int coalesce) {
  lcd_job *j = *head;
  *head = j->next;
  if (!*head) *tail = NULL;
  (*count)--;
  j->next = NULL;
  j->lead = 1;
  if ((j->kind == LCD_JOB_INCR || j->kind == LCD_JOB_TALLY) && coalesce)
    take_same_counter(head, tail, count, j);
  for (lcd_job *k = j->next; k; k = k->next) k->lead = 0;
  return j;
}

/* Hands a finished job to its connection's loop: onto the loop's done
 * list, waking the loop only when the list was empty (a burst of results
 * costs one wake-up). */
static void give_back(lcd_job *j) {
  lcd_loop *l = j->conn->loop;
  pthread_mutex_lock(&l->done_mu);
  j->next = l->done;
  l->done = j;
  int wake = !l->done_pending;
  l->done_pending = 1;
  pthread_mutex_unlock(&l->done_mu);
  if (wake) event_active(l->done_ev, EV_READ, 0);
}

/* Chains of INCR jobs of several counters, ONE lc_next_each: the first
 * uses among them (a burst of new names) share their memcached round
 * trips and one synced write (the library's first.c). */
static void run_each(lc_t *lc, lcd_job **chains, int n, lcd_hist *lat) {
  lc_each e[LCD_EACH_MAX];
  for (int i = 0; i < n; i++) {
    e[i] = (lc_each){.name = chains[i]->names, .n = 0};
    for (lcd_job *k = chains[i]; k; k = k->next) e[i].n += k->total;
  }
  int64_t t0 = lat ? now_us() : 0;
  int first_rc = lc_next_each(lc, e, (size_t)n);
  if (lat) lcd_hist_record(lat, now_us() - t0);
  char detail[sizeof chains[0]->detail] = "";
  if (first_rc) copy_detail(detail);
  for (int i = 0; i < n; i++) /* --etcd: a standby's go to the primary */
    if (e[i].rc == LC_ESTANDBY)
      e[i].rc = lcd_cluster_forward(e[i].name, e[i].n, &e[i].first);
  for (int i = 0; i < n; i++) {
    int64_t first = e[i].first;
    for (lcd_job *k = chains[i]; k; k = k->next) {
      k->rc = e[i].rc;
      k->first = first;
      first += (int64_t)k->total;
      /* the reason is known for the first failure's code */
      if (e[i].rc == first_rc && first_rc)
        memcpy(k->detail, detail, sizeof k->detail);
      else
        k->detail[0] = '\0';
    }
  }
}

/* MANY jobs (each a connection's pipelined run of first uses), ONE
 * lc_next_each for all of their requests: their first uses share one
 * round of claims, one of increments and one synced write (first.c), so
 * a burst of new names costs a sync per LCD_MANY_NAMES, not per job.
 * Each job's detail is that of the first failure with its code, as
 * run_each shares it. */
static void run_many(lc_t *lc, lcd_job **jobs, int n, lcd_hist *lat) {
  lc_each e[LCD_MANY_NAMES];
  size_t count = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < jobs[i]->nreq; k++)
      e[count++] = (lc_each){.name = jobs[i]->names + jobs[i]->name_off[k],
                             .n = jobs[i]->count[k]};
  int64_t t0 = lat ? now_us() : 0;
  int first_rc = lc_next_each(lc, e, count);
  if (lat) lcd_hist_record(lat, now_us() - t0);
  char detail[sizeof jobs[0]->detail] = "";
  if (first_rc) copy_detail(detail);
  count = 0;
  for (int i = 0; i < n; i++) {
    lcd_job *j = jobs[i];
    j->rc = 0;
    j->detail[0] = '\0';
    for (int k = 0; k < j->nreq; k++, count++) {
      if (e[count].rc == LC_ESTANDBY) /* --etcd: to the primary */
        e[count].rc = lcd_cluster_forward(e[count].name, e[count].n,
                                          &e[count].first);
      j->trc[k] = e[count].rc;
      j->values[k] = e[count].first;
      if (e[count].rc && !j->rc) j->rc = e[count].rc;
    }
    if (j->rc && j->rc == first_rc) memcpy(j->detail, detail, sizeof detail);
  }
}

/* May chain j join (or lead) a run_each?  INCR chains of first uses
 * only (lc_next_quick: 0), with coalescing, not with sync durability:
 * what lc_next_each would serve one after another is faster side by side
 * on the workers. */
static int joins_each(const lcd_server *s, const lcd_job *j) {
  return s->set->coalesce && s->set->durability != LC_DURABILITY_SYNC &&
         j->kind == LCD_JOB_INCR && !j->meta.has_init &&
         !lc_next_quick(s->lc, j->names);
}

/* May the worker that took chain j take more?  Only while the queue
 * holds more than the idle workers can take one by one (each worker then
 * takes its share, so a burst is still spread over every worker). */
static int takes_more(const lcd_server *s, const lcd_job *j) {
  const lcd_workers *p = &s->pool;
  return p->queued > (size_t)p->idle && joins_each(s, j);
}

static void *worker(void *arg) {
  lcd_server *s = arg;
  lcd_workers *p = &s->pool;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    while (!p->head && !p->stop) {
      p->idle++;
      pthread_cond_wait(&p->cv, &p->mu);
      p->idle--;
    }
    if (!p->head) { /* stopping and nothing left */
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    lcd_job *chains[LCD_EACH_MAX];
    int n = 0;
    chains[n++] =
        take_chain(&p->head, &p->tail, &p->queued, s->set->coalesce);
    size_t names =
        chains[0]->kind == LCD_JOB_MANY ? (size_t)chains[0]->nreq : 0;
    if (names) { /* every MANY job that follows, up to LCD_MANY_NAMES */
      while (n < LCD_EACH_MAX && p->head && p->head->kind == LCD_JOB_MANY &&
             names + (size_t)p->head->nreq <= LCD_MANY_NAMES) {
        names += (size_t)p->head->nreq;
        chains[n] = take_chain(&p->head, &p->tail, &p->queued, 0);
        chains[n++]->lead = 0; /* one library call: the first's */
      }
    } else if (takes_more(s, chains[0])) {
      size_t share = p->queued / (size_t)(p->idle + 1);
      while (n < LCD_EACH_MAX && (size_t)n <= share && p->head &&
             joins_each(s, p->head))
        chains[n++] = take_chain(&p->head, &p->tail, &p->queued, 1);
    }
    if (p->head && p->idle > 0) /* more work: pass the wake-up on */
      pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);

    lcd_hist *lat = lcd_metrics_alloc_hist(s, -1);
    if (names)
      run_many(s->lc, chains, n, lat);
    else if (n > 1)
      run_each(s->lc, chains, n, lat);
    else
      run_jobs(s->lc, chains[0], lat, false);
    if (n > 1 || names) {
      atomic_fetch_add(&p->each_calls, 1);
      atomic_fetch_add(&p->each_chains, (uint64_t)(names ? names : (size_t)n));
    }
    for (int i = 0; i < n; i++)
      for (lcd_job *j = chains[i]; j;) { /* a chain may span loops */
        lcd_job *next = j->next;
        give_back(j);
        j = next;
      }
  }
}

/* Hands every finished job back to its connection (the loop's thread). */
static void take_done(lcd_loop *l) {
  pthread_mutex_lock(&l->done_mu);
  lcd_job *list = l->done;
  l->done = NULL;
  l->done_pending = 0;
  pthread_mutex_unlock(&l->done_mu);
  /* The list is newest first; answer in completion order. */
  lcd_job *rev = NULL;
  while (list) {
    lcd_job *n = list->next;
    list->next = rev;
    rev = list;
    list = n;
  }
  while (rev) {
    lcd_job *n = rev->next;
    rev->next = NULL;
    lcd_conn_job_done(rev);
    rev = n;
  }
}

static void done_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  take_done(arg);
}

/* Appends j to q. */
static void jlist_add(lcd_jlist *q, lcd_job *j) {
  j->next = NULL;
  if (q->tail)
    q->tail->next = j;
  else
    q->head = j;
  q->tail = j;
  q->n++;
}

/* Jobs parsed during one loop iteration wait in the loop's own list; the
 * lowest-priority submit event, which runs after every I/O callback of the
 * iteration, runs or queues them all together (submit_pending). */
/* Appends the chain j (linked by next) to q. */
static void jlist_add_chain(lcd_jlist *q, lcd_job *j) {
  for (lcd_job *n; j; j = n) {
    n = j->next;
    jlist_add(q, j);
  }
}

void lcd_pool_submit(lcd_loop *l, lcd_job *j) {
  jlist_add(&l->pend, j);
  if (l->pend.n == 1) event_active(l->submit_ev, EV_READ, 0);
}

/* Queues a list of jobs for the workers under one lock and one wake-up. */
static void queue_jobs(lcd_server *s, lcd_jlist *q) {
  lcd_workers *p = &s->pool;
  if (!q->head) return;
  pthread_mutex_lock(&p->mu);
  if (p->tail)
    p->tail->next = q->head;
  else
    p->head = q->head;
  p->tail = q->tail;
  p->queued += q->n;
  if (p->idle > 0) pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  *q = (lcd_jlist){NULL, NULL, 0};
}

/* A loop hands q to the workers (counted in stats). */
static void to_workers(lcd_loop *l, lcd_jlist *q) {
  l->st.jobs_pooled += q->n;
  queue_jobs(l->srv, q);
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* May the loop thread run j itself?  Only what the library should answer
 * within about a memcached round trip (lc_next_quick; tally changes and
 * gets never sync), with coalescing on (--no-coalesce keeps the old
 * hand-off, for comparison), and not while the loop backs off after a
 * stall. */
static int runs_inline(lcd_loop *l, const lcd_job *j, int64_t now) {
  if (!l->set->coalesce || now < l->inline_off_until) return 0;
  if (j->kind == LCD_JOB_MANY) return 0; /* first uses: they sync */
  return j->kind != LCD_JOB_INCR || lc_next_quick(l->lc, j->names);
}

/* The submit event (last priority, after every read of the iteration).
 * The jobs parsed in this iteration that the library answers quickly are
 * grouped by counter; the first LCD_INLINE_CALLS groups run right here,
 * one library call each, and are answered at once (no thread hand-off at
 * all).  Everything else goes to the workers in one batch, before the
 * loop starts its own calls, so that they run alongside: slow jobs (first
 * use of a name, sync durability, --no-coalesce) and the groups beyond
 * LCD_INLINE_CALLS (many counters at once are served faster by several
 * threads than by round trips one after another).  A call here that takes
 * longer than LCD_STALL_US (memcached slow or down, a restore) sends the
 * loop's work to the workers for the next LCD_BACKOFF_US, so a failing
 * memcached holds a loop for one call at a time, not one per request.
 * Jobs that the answers let start (lcd_conn_job_done parses on) join the
 * next iteration's list. */
static void submit_pending(lcd_loop *l) {
  lcd_jlist fast = {NULL, NULL, 0}, slow = {NULL, NULL, 0};
  lcd_job *list = l->pend.head;
  l->pend = (lcd_jlist){NULL, NULL, 0};
  int64_t now = now_us();
  while (list) {
    lcd_job *j = list;
    list = j->next;
    jlist_add(runs_inline(l, j, now) ? &fast : &slow, j);
  }
  lcd_job *calls[LCD_INLINE_CALLS];
  int ncalls = 0;
  while (fast.head && ncalls < LCD_INLINE_CALLS)
    calls[ncalls++] = take_chain(&fast.head, &fast.tail, &fast.n, 1);
  jlist_add_chain(&slow, fast.head);
  to_workers(l, &slow);
  for (int i = 0; i < ncalls; i++) {
    lcd_job *j = calls[i];
    if (now_us() < l->inline_off_until) { /* backing off: hand over */
      jlist_add_chain(&slow, j);
      to_workers(l, &slow);
      continue;
    }
    int64_t t0 = now_us();
    if (!run_jobs(l->lc, j, lcd_metrics_alloc_hist(l->srv, l->index), true)) {
      jlist_add_chain(&slow, j); /* it would wait for a fetch */
      l->st.jobs_deferred += slow.n;
      to_workers(l, &slow);
      continue;
    }
    int64_t took = now_us() - t0;
    if ((uint64_t)took > l->stall_max_us) l->stall_max_us = (uint64_t)took;
    if (took > LCD_STALL_US) {
      l->st.loop_backoffs++;
      l->inline_off_until = t0 + took + LCD_BACKOFF_US;
    }
    while (j) {
      lcd_job *n = j->next;
      j->next = NULL;
      l->st.jobs_inline++;
      lcd_conn_job_done(j);
      j = n;
    }
  }
}

static void submit_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  submit_pending(arg);
}

int lcd_pool_attach(lcd_loop *l) {
  pthread_mutex_init(&l->done_mu, NULL);
  l->done_ev = event_new(l->base, -1, 0, done_cb, l);
  l->submit_ev = event_new(l->base, -1, 0, submit_cb, l);
  return l->done_ev && l->submit_ev &&
                 event_priority_set(l->submit_ev, LCD_PRIO_LAST) == 0
             ? 0
             : -1;
}

int lcd_pool_start(lcd_server *s) {
  lcd_workers *p = &s->pool;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->threads = calloc((size_t)s->set->workers, sizeof *p->threads);
  if (!p->threads) return -1;
  /* Workers take no signals: the main loop handles them. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = 0;
  for (int i = 0; i < s->set->workers; i++) {
    if (pthread_create(&p->threads[i], NULL, worker, s) != 0) {
      rc = -1;
      break;
    }
    p->nthreads++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

size_t lcd_pool_queued(lcd_server *s) {
  pthread_mutex_lock(&s->pool.mu);
  size_t n = s->pool.queued;
  pthread_mutex_unlock(&s->pool.mu);
  return n;
}

/* After the loop threads have stopped: every loop's unsent jobs go to the
 * workers, the workers finish and are joined, and each loop gets its
 * finished jobs back (from this thread: no loop runs any more). */
void lcd_pool_stop(lcd_server *s) {
  lcd_workers *p = &s->pool;
  for (int i = 0; i < s->nloops; i++) {
    lcd_loop *l = &s->loops[i];
    if (p->threads) queue_jobs(s, &l->pend);
  }
  if (p->threads) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    p->threads = NULL;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
  }
  for (int i = 0; i < s->nloops; i++) {
    lcd_loop *l = &s->loops[i];
    if (!l->done_ev) continue;
    take_done(l);
    event_free(l->done_ev);
    l->done_ev = NULL;
    if (l->submit_ev) event_free(l->submit_ev);
    l->submit_ev = NULL;
    pthread_mutex_destroy(&l->done_mu);
  }
}
