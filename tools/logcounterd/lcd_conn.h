/*
 * lcd_conn.h - a client connection (lcd_conn.c): its state, framing and
 * parsing requests, back-pressure, timeouts, closing.  A connection
 * belongs to one loop; only that loop's thread touches it (no locks).
 */
#ifndef LCD_CONN_H
#define LCD_CONN_H

#include "lcd_auth.h"
#include "lcd_job.h"
#include "lcd_proto.h"

#include <stdint.h>
#include <time.h>

struct bufferevent;
struct event;
typedef struct lcd_loop lcd_loop;
struct lcd_listener;

#define LCD_GARBAGE_MAX 16          /* error replies in a row before closing */
#define LCD_INPUT_MAX (64 * 1024)   /* stop reading above this */
#define LCD_CONN_JOBS 16            /* jobs of one connection in flight */
#define LCD_CONN_SPARE 2            /* finished jobs a connection keeps */
#define LCD_OUTPUT_MAX (256 * 1024) /* stop parsing above this */
/* A get line's answer held until its END (lcd_mget.c): above this the
 * line is refused. */
#define LCD_MGET_HOLD_MAX (1024 * 1024)

/* A client connection; lcd_conn.c and lcd_jobs.c, loop thread only. */
struct lcd_conn {
  lcd_conn *prev, *next;     /* the server's list */
  lcd_loop *loop;            /* the loop that owns it */
  struct bufferevent *bev;   /* NULL once the socket is closed */
  lcd_job *jobs, *jobs_tail; /* unanswered jobs, request order (cnext) */
  int njobs;                 /* how many */
  int inflight;              /* of them, not yet back from the pool */
  lcd_job *spare;            /* answered jobs kept for reuse (cnext) */
  int nspare;
  struct lcd_listener *li; /* accepted on (its nopen counts this) */
  int tls;            /* bev is an OpenSSL bufferevent (lcd_tls.c) */
  int tls_up;         /* its handshake completed */
  int tls_failed;     /* a TLS error: close without close_notify */
  int reading;        /* EV_READ is on */
  int closing;        /* close once the replies are written */
  int eof;            /* the peer closed its side */
  int draining;       /* SIGTERM: read nothing more */
  int out_blocked;    /* parsing paused until the output drains */
  size_t blocked_len; /* output left at the last progress check */
  int lingering;      /* replies sent and write side shut: reading
                                 and discarding until the peer closes */
  uint64_t swallow;   /* bytes of a refused data block to discard */
  int mget;           /* inside a get line of more keys than one job
                                 takes: its next piece follows (lcd_mget.c) */
  int mget_gets;      /* that line is a gets */
  struct evbuffer *mget_hold; /* that line's VALUE lines so far, held
                                 until its END (lcd_mget.c); NULL: none */
  int skip_line;      /* discard input up to the next line end (after an
                                 error inside a long get line) */
  int errors_in_row;
  time_t last_active;   /* last read or answer */
  time_t partial_since; /* an unfinished request is waiting; 0: none */
  time_t closing_since; /* waiting to write the last replies */
  time_t blocked_since; /* paused, or the output last shrank */
  const char *why;      /* why it is being closed */
  uint64_t id;
  char peer[64];
  /* lcd_gate.c: authentication and rights */
  int authed;                   /* the handshake succeeded */
  int auth_hold;                /* a failure's delay runs: no reading or
                                   parsing until auth_timer fires */
  int auth_wait;                /* held for its address's turn */
  int auth_turn;                /* the handshake took its address's turn
                                   (lcd_auth_turn): a failure counted */
  struct event *auth_timer;
  const char *auth_why;         /* the failure's reply */
  char user[LCD_AUTH_USER_MAX + 1];
  const lcd_rights_user *rights; /* cached lookup of user, for rights_gen */
  unsigned rights_gen;
  time_t unauth_since;           /* first sweep that saw it unauthenticated */
  char named[LCD_PROTO_KEY_MAX]; /* the last key lcd_rights_new_name allowed */
  size_t named_len;              /* 0: none */
  struct lcd_unfin *unfin; /* lcd_admit.c: counted as unfinished; NULL:
                              finished, or never counted */
  /* lcd_relay.c: after "admin", a relay to --admin-socket */
  struct bufferevent *relay; /* the admin socket's end; NULL: none */
  int relay_eof;             /* it closed, or failed */
  int relay_shut;            /* the client's EOF was passed on */
  int binary; /* lcd_binary_conn.c: speaks the binary protocol */
};

/* lcd_conn.c */
/* Takes over an accepted, non-blocking socket (on l's thread). */
/* REQUIRES: s->nopen and li->nopen already count it (lcd_loops_accept). */
void lcd_conn_new(lcd_loop *l, int fd, const char *peer,
                  struct lcd_listener *li);
/* Parses and answers buffered requests until a job is in flight, the
 * input holds no complete request, or the connection is closing.  May
 * free c. */
void lcd_conn_process(lcd_conn *c);
void lcd_conn_free(lcd_conn *c);
/* Marks c to be closed once its replies are written. */
void lcd_close_later(lcd_conn *c, const char *why);
/* Once a second: idle, unfinished-line and flush timeouts. */
void lcd_conn_sweep(lcd_loop *l);
/* SIGTERM: stop reading, answer what was read, then close. */
void lcd_conn_drain_all(lcd_loop *l);
/* Closes every socket now (a second signal, or the drain timeout). */
void lcd_conn_close_all(lcd_loop *l);
/* Closes c now: an unfinished connection pushed out by newer ones
 * (lcd_admit.c). */
void lcd_conn_drop_unfinished(lcd_conn *c);

/* 1 if the request req (of kind, text or binary) may be handled now:
 * after every job before it that it must follow (lcd.h, Ordering). */
int lcd_conn_may_start(const lcd_conn *c, const lcd_proto_req *req,
                       lcd_proto_cmd kind);

#endif /* LCD_CONN_H */
