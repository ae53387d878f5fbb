/*
 * lcd_loops.c - logcounterd's event-loop threads, as in memcached: loop 0
 * runs on the main thread and owns the listeners, the signals and the
 * shutdown; loops 1..n-1 run on their own threads.  Each loop owns the
 * connections it was given (round robin at accept), parses their
 * requests, runs the quick library calls itself and writes the replies
 * (lcd_pool.c); no connection ever moves.
 *
 * Loop 0 talks to the others through each loop's command event under
 * cmd_mu: a new connection (its socket in the inbox), "drain" (SIGTERM:
 * stop reading, answer, close) and "close" (a second signal or the drain
 * timeout: close every socket now).  A draining loop with no connection
 * left ends its event loop; loop 0 ends its own once it has none left
 * and every other loop has ended (loops_running), then main joins them.
 */
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_counters.h"
#include "lcd_pool.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void tick_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_loop *l = arg;
  lcd_conn_sweep(l);
  if (l->index == 0) lcd_log_watch(l->srv);
}

/* A loop's commands from loop 0 (on the loop's thread). */
static void cmd_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_loop *l = arg;
  pthread_mutex_lock(&l->cmd_mu);
  lcd_newconn *in = l->inbox;
  l->inbox = NULL;
  int drain = l->cmd_drain, close_all = l->cmd_close, evict = l->cmd_evict;
  l->cmd_drain = l->cmd_close = l->cmd_evict = 0;
  pthread_mutex_unlock(&l->cmd_mu);
  while (in) {
    lcd_newconn *n = in->next;
    lcd_conn_new(l, in->fd, in->peer, in->li);
    free(in);
    in = n;
  }
  if (evict) lcd_admit_evicted(l);
  if (close_all) {
    lcd_conn_close_all(l);
    l->draining = 1;
    l->stopped = 1;
    event_base_loopbreak(l->base);
    return;
  }
  if (drain && !l->draining) {
    l->draining = 1;
    lcd_conn_drain_all(l);
  }
  lcd_loop_check_drained(l);
}

static void post(lcd_loop *l, int drain, int close_all) {
  pthread_mutex_lock(&l->cmd_mu);
  l->cmd_drain |= drain;
  l->cmd_close |= close_all;
  pthread_mutex_unlock(&l->cmd_mu);
  event_active(l->cmd_ev, EV_READ, 0);
}

void lcd_loop_check_drained(lcd_loop *l) {
  lcd_server *s = l->srv;
  if (!l->draining || l->nlive != 0) return;
  if (l->index == 0) {
    if (atomic_load(&s->loops_running) == 0) event_base_loopbreak(l->base);
    return;
  }
  if (l->stopped) return;
  l->stopped = 1;
  event_base_loopbreak(l->base);
  atomic_fetch_sub(&s->loops_running, 1);
  post(&s->loops[0], 0, 0); /* loop 0 checks again */
}

static int loop_init(lcd_server *s, lcd_loop *l, int index) {
  l->srv = s;
  l->set = s->set;
  l->lc = s->lc;
  l->index = index;
  pthread_mutex_init(&l->cmd_mu, NULL);
  struct timeval sec = {1, 0};
  if (!(l->base = event_base_new()) ||
      event_base_priority_init(l->base, LCD_PRIORITIES) != 0)
    return -1;
  l->cmd_ev = event_new(l->base, -1, 0, cmd_cb, l);
  l->tick = event_new(l->base, -1, EV_PERSIST, tick_cb, l);
  if (!l->cmd_ev || !l->tick || event_add(l->tick, &sec) != 0) return -1;
  return lcd_pool_attach(l);
}

int lcd_loops_init(lcd_server *s) {
  s->nloops = s->set->threads;
  s->loops = calloc((size_t)s->nloops, sizeof *s->loops);
  if (!s->loops) return -1;
  for (int i = 0; i < s->nloops; i++)
    if (loop_init(s, &s->loops[i], i) != 0) return -1;
  return 0;
}

static void *loop_thread(void *arg) {
  lcd_loop *l = arg;
  event_base_dispatch(l->base);
  return NULL;
}

int lcd_loops_start(lcd_server *s) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to loop 0 */
  int rc = 0;
  for (int i = 1; i < s->nloops && rc == 0; i++) {
    lcd_loop *l = &s->loops[i];
    atomic_fetch_add(&s->loops_running, 1);
    if (pthread_create(&l->thread, NULL, loop_thread, l) != 0) {
      atomic_fetch_sub(&s->loops_running, 1);
      rc = -1;
    } else {
      l->running = 1;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

void lcd_loops_accept(lcd_server *s, int fd, const char *peer,
                      lcd_listener *li) {
  lcd_loop *l = &s->loops[s->next_loop++ % (unsigned)s->nloops];
  atomic_fetch_add(&s->nopen, 1);
  atomic_fetch_add(&li->nopen, 1);
  if (l->index == 0) {
    lcd_conn_new(l, fd, peer, li);
    return;
  }
  lcd_newconn *n = malloc(sizeof *n);
  if (!n) {
    atomic_fetch_sub(&s->nopen, 1);
    atomic_fetch_sub(&li->nopen, 1);
    lcd_log(s->set, 0, "cannot set up a connection from %s: out of memory",
            peer);
    close(fd);
    return;
  }
  n->fd = fd;
  n->li = li;
  snprintf(n->peer, sizeof n->peer, "%s", peer);
  pthread_mutex_lock(&l->cmd_mu);
  n->next = l->inbox;
  l->inbox = n;
  pthread_mutex_unlock(&l->cmd_mu);
  event_active(l->cmd_ev, EV_READ, 0);
}

void lcd_loops_drain(lcd_server *s) {
  for (int i = 1; i < s->nloops; i++)
    if (s->loops[i].running) post(&s->loops[i], 1, 0);
  lcd_loop *l0 = &s->loops[0];
  l0->draining = 1;
  lcd_conn_drain_all(l0);
  lcd_loop_check_drained(l0);
}

void lcd_loops_close(lcd_server *s) {
  for (int i = 1; i < s->nloops; i++)
    if (s->loops[i].running) post(&s->loops[i], 0, 1);
  lcd_conn_close_all(&s->loops[0]);
}

void lcd_loops_join(lcd_server *s) {
  for (int i = 1; i < s->nloops; i++) {
    lcd_loop *l = &s->loops[i];
    if (!l->running) continue;
    post(l, 0, 1); /* a no-op for a loop already stopped */
    pthread_join(l->thread, NULL);
    l->running = 0;
  }
  /* Connections whose jobs were in flight at a forced close: their
   * structs go once the jobs come back (lcd_pool_stop). */
  for (int i = 0; i < s->nloops; i++) lcd_conn_close_all(&s->loops[i]);
}

void lcd_loops_free(lcd_server *s) {
  for (int i = 0; s->loops && i < s->nloops; i++) {
    lcd_loop *l = &s->loops[i];
    for (lcd_newconn *n = l->inbox, *next; n; n = next) {
      next = n->next;
      close(n->fd);
      free(n);
    }
    if (l->cmd_ev) event_free(l->cmd_ev);
    if (l->tick) event_free(l->tick);
    pthread_mutex_destroy(&l->cmd_mu);
    if (l->base) event_base_free(l->base);
  }
  free(s->loops);
  s->loops = NULL;
}

void lcd_loops_sum(lcd_server *s, lcd_counters *out, uint64_t *stall_max,
                   int *nopen) {
  enum { N = sizeof(lcd_counters) / sizeof(lcd_stat) };
  _Static_assert(sizeof(lcd_counters) % sizeof(lcd_stat) == 0,
                 "lcd_counters holds lcd_stat fields only");
  lcd_stat *o = (lcd_stat *)out;
  for (int k = 0; k < N; k++) atomic_store(&o[k], 0);
  *stall_max = 0;
  for (int i = 0; i < s->nloops; i++) {
    const lcd_stat *f = (const lcd_stat *)&s->loops[i].st;
    for (int k = 0; k < N; k++) atomic_fetch_add(&o[k], atomic_load(&f[k]));
    uint64_t m = atomic_load(&s->loops[i].stall_max_us);
    if (m > *stall_max) *stall_max = m;
  }
  *nopen = atomic_load(&s->nopen);
}
