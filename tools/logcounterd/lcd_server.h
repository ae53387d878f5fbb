/*
 * lcd_server.h - the server and its loops: what every loop shares
 * (lcd_server), one event-loop thread (lcd_loop, lcd_loops.c), the
 * listeners (lcd_listen.c) and how an accepted socket reaches a loop.
 * Loop 0 (the main thread) owns the listeners, the signals and the
 * shutdown; a loop's fields are its own thread's, except those under
 * cmd_mu and done_mu.
 */
#ifndef LCD_SERVER_H
#define LCD_SERVER_H

#include "lcd_counters.h"
#include "lcd_flush.h"
#include "lcd_job.h"
#include "lcd_pool.h"
#include "lcd_settings.h"
#include "logcounter.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

struct event_base;
struct event;
struct evconnlistener;
typedef struct lcd_conn lcd_conn;

/* Event priorities: everything runs at the default (1) except the submit
 * event, which runs after all I/O of a loop iteration. */
#define LCD_PRIORITIES 3
#define LCD_PRIO_LAST 2

/* A connection handed from the listener to a loop (lcd_loops.c). */
typedef struct lcd_newconn {
  struct lcd_newconn *next;
  int fd;
  struct lcd_listener *li; /* accepted on */
  char peer[64];
} lcd_newconn;

/* A listener (lcd_listen.c, loop 0) and how its connections speak. */
typedef struct lcd_listener {
  lcd_server *srv;
  struct evconnlistener *ev;
  int tls; /* TLS (lcd_tls.c), else plain text */
  _Atomic int nopen; /* its open connections (--max-connections-per-listener) */
} lcd_listener;

/* One event-loop thread and everything it owns (lcd_loops.c).  Loop 0 runs
 * on the main thread and also owns the listeners, the signals and the
 * shutdown; loops 1..n-1 run on their own threads.  Only the fields under
 * cmd_mu and done_mu are touched by other threads. */
struct lcd_loop {
  lcd_server *srv;
  const lcd_settings *set; /* srv->set, srv->lc: for short access */
  lc_t *lc;
  int index;
  struct event_base *base;
  pthread_t thread; /* loops 1..: started */
  int running;      /* loops 1..: the thread was started */
  lcd_conn *conns;  /* every live connection struct */
  int nopen;        /* connections with an open socket */
  int nlive;        /* connection structs not yet freed */
  int draining;     /* stop reading, answer, close, then stop */
  int stopped;      /* drained: its loop has been told to end */
  lcd_counters st;
  _Atomic uint64_t stall_max_us; /* longest call run on this loop */
  int64_t inline_off_until;      /* monotonic us: no inline runs before */
  time_t last_error_log;         /* rate limit for SERVER_ERROR log lines */
  struct event *tick;            /* once a second: lcd_conn_sweep */
  /* jobs parsed in this iteration, run or queued by submit_ev (last
   * priority) */
  lcd_jlist pend;
  struct event *submit_ev;
  /* finished jobs from the workers, for this loop */
  pthread_mutex_t done_mu;
  lcd_job *done;
  int done_pending; /* event_active already called */
  struct event *done_ev;
  /* commands from loop 0: new connections, drain, close */
  pthread_mutex_t cmd_mu;
  lcd_newconn *inbox;
  int cmd_drain, cmd_close;
  int cmd_evict; /* lcd_admit.c marked connections of this loop */
  struct event *cmd_ev;
};

/* What the loops share. */
struct lcd_server {
  const lcd_settings *set;
  lc_t *lc;
  lcd_listener tcp[LCD_LISTEN_MAX]; /* on loop 0; ntcp of them */
  int ntcp;
  lcd_listener local;              /* --socket (plain), on loop 0 */
  struct lcd_tls *tls;             /* lcd_tls.c; NULL: no TLS */
  lcd_loop *loops; /* set->threads of them; loops[0] is main */
  int nloops;
  unsigned next_loop; /* round robin for new connections (loop 0) */
  _Atomic int nopen;  /* open connections, every loop */
  _Atomic uint64_t total_connections;
  _Atomic int loops_running; /* loops 1.. not yet stopped */
  int draining;              /* SIGTERM/SIGINT seen (loop 0) */
  time_t started;            /* monotonic seconds */
  time_t started_wall;
  lcd_workers pool;
  lcd_flusher flusher;
  lc_log_status log_seen; /* lcd_stats.c: the log's state at the last tick */
  struct lcd_metrics *metrics; /* lcd_metrics.c; NULL: none */
};

/* lcd_listen.c: 0, or an exit status after printing why */
int lcd_listen(lcd_server *s);
/* Closes the listeners and removes the socket file. */
void lcd_stop_listening(lcd_server *s);

/* lcd_loops.c */
/* Sets up loop 0 (the caller's thread) and loops 1..n-1 (not started);
 * 0 or -1. */
int lcd_loops_init(lcd_server *s);
/* Starts the threads of loops 1..n-1; 0 or -1. */
int lcd_loops_start(lcd_server *s);
/* Loop 0: gives an accepted socket to the next loop in turn. */
void lcd_loops_accept(lcd_server *s, int fd, const char *peer,
                      lcd_listener *li);
/* Loop 0: every loop stops reading, answers, closes, then stops. */
void lcd_loops_drain(lcd_server *s);
/* Loop 0: every loop closes its sockets now and stops. */
void lcd_loops_close(lcd_server *s);
/* Called when a connection struct is freed: a draining loop with none
 * left stops (loop 0 once the others have stopped too). */
void lcd_loop_check_drained(lcd_loop *l);
/* Joins the loop threads (after loop 0 returned) and frees the loops. */
void lcd_loops_join(lcd_server *s);
void lcd_loops_free(lcd_server *s);
/* Sums of every loop's figures, and the longest stall of any. */
void lcd_loops_sum(lcd_server *s, lcd_counters *out, uint64_t *stall_max,
                   int *nopen);

#endif /* LCD_SERVER_H */
