/*
 * lcd_admit.c - the table of unfinished connections (lcd_admit.h): every
 * TLS connection before its handshake completes and, with --auth-file,
 * every connection before it authenticates.
 *
 * Invariants:
 *  - one list under mu, oldest first; an entry belongs to its connection
 *    (c->unfin), which frees it; the list holds only entries not yet
 *    marked, so its length is what counts against --max-unfinished;
 *  - a new unfinished connection always gets in: over --max-unfinished
 *    (in all) or --max-unfinished-per-address (its address) the oldest
 *    entry (of all, or of that address) is marked and leaves the list,
 *    and its loop is told through its command event (cmd_evict); that
 *    loop closes it (lcd_admit_evicted), so a stalled handshake lasts
 *    until newer ones push it out or --line-timeout, never longer, and
 *    working connections (finished ones) are never dropped;
 *  - lock order: mu, then a loop's cmd_mu (never the other way).
 */
#include "lcd_admit.h"
#include "lcd_auth.h"
#include "lcd_conn.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lcd_unfin {
  struct lcd_unfin *prev, *next;
  lcd_loop *loop;
  int marked; /* under mu: dropped, its loop closes it */
  char addr[64];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct lcd_unfin *head, *tail;
static int count;
static _Atomic unsigned long long dropped;

/* The address part of "host:port", "[v6]:port" or "unix". */
static void addr_of(const char *peer, char out[64]) {
  snprintf(out, 64, "%s", peer);
  char *colon = strrchr(out, ':');
  if (colon && (out[0] != '[' || colon > strchr(out, ']'))) *colon = '\0';
}

/* mu held */
static void unlink_entry(struct lcd_unfin *u) {
  if (u->prev)
    u->prev->next = u->next;
  else
    head = u->next;
  if (u->next)
    u->next->prev = u->prev;
  else
    tail = u->prev;
  u->prev = u->next = NULL;
  count--;
}

/* mu held: u leaves the list, marked; its loop is told. */
static void drop(struct lcd_unfin *u) {
  unlink_entry(u);
  u->marked = 1;
  atomic_fetch_add(&dropped, 1);
  lcd_loop *l = u->loop;
  pthread_mutex_lock(&l->cmd_mu);
  l->cmd_evict = 1;
  pthread_mutex_unlock(&l->cmd_mu);
  event_active(l->cmd_ev, EV_READ, 0);
}

void lcd_admit_new(lcd_conn *c) {
  const lcd_settings *set = c->loop->set;
  if (!c->tls && !lcd_auth_enabled()) return;
  struct lcd_unfin *u = calloc(1, sizeof *u);
  if (!u) return; /* uncounted: --line-timeout still closes it */
  u->loop = c->loop;
  addr_of(c->peer, u->addr);
  c->unfin = u;
  pthread_mutex_lock(&mu);
  u->prev = tail;
  if (tail)
    tail->next = u;
  else
    head = u;
  tail = u;
  count++;
  int same = 0;
  struct lcd_unfin *first_same = NULL;
  for (struct lcd_unfin *e = head; e; e = e->next)
    if (strcmp(e->addr, u->addr) == 0 && same++ == 0) first_same = e;
  if (same > set->max_unfinished_addr && first_same != u) drop(first_same);
  while (count > set->max_unfinished && head != u) drop(head);
  pthread_mutex_unlock(&mu);
}

void lcd_admit_done(lcd_conn *c) {
  struct lcd_unfin *u = c->unfin;
  if (!u) return;
  pthread_mutex_lock(&mu);
  if (!u->marked) unlink_entry(u);
  pthread_mutex_unlock(&mu);
  free(u);
  c->unfin = NULL;
}

void lcd_admit_check(lcd_conn *c) {
  if (c->unfin && (!c->tls || c->tls_up) && (!lcd_auth_enabled() || c->authed))
    lcd_admit_done(c);
}

void lcd_admit_evicted(lcd_loop *l) {
  lcd_conn *next;
  for (lcd_conn *c = l->conns; c; c = next) {
    next = c->next;
    if (!c->unfin || !c->bev) continue;
    pthread_mutex_lock(&mu);
    int marked = c->unfin->marked;
    pthread_mutex_unlock(&mu);
    if (marked) lcd_conn_drop_unfinished(c);
  }
}

void lcd_admit_figures(int *open, unsigned long long *n) {
  pthread_mutex_lock(&mu);
  *open = count;
  pthread_mutex_unlock(&mu);
  *n = atomic_load(&dropped);
}
