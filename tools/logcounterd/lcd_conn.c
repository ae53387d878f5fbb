/*
 * lcd_conn.c - logcounterd's client connections: reading request lines,
 * answering them in order, and closing connections that misbehave.
 *
 * Runs in the event-loop thread only.  Per connection, up to LCD_CONN_JOBS
 * jobs are in flight, answered in request order (lcd.h, Ordering): a
 * request that may not start yet (its counter already has a job in flight,
 * the window is full, or it is answered on the spot while jobs are in
 * flight) stays unparsed in the input until a job comes back.  Requests
 * that need no library call that blocks (stats but "stats tally NAME",
 * version, verbosity, quit, errors) are answered on the spot.
 *
 * Bounds: a request line is at most LCD_PROTO_LINE_MAX bytes (longer:
 * CLIENT_ERROR line too long, then close), but for get and gets, which
 * take any number of keys piece by piece (lcd_mget.c); reading is switched off while
 * LCD_INPUT_MAX bytes or more are buffered (update_reading; no libevent
 * watermark, whose suspend/resume spun the loop when a job held the
 * input), so the rest waits in the kernel; parsing pauses while more
 * than LCD_OUTPUT_MAX bytes of replies wait for the client to read them,
 * and a client whose replies make no progress for --reply-timeout is
 * closed; LCD_GARBAGE_MAX error replies in a row close the connection.
 * A request whose first byte is 0x80 is memcached's binary protocol
 * (lcd_binary_conn.c), and so is every later one of that connection.
 *
 * A run of pipelined "incr NAME n" lines for one counter that is already
 * buffered becomes one job (LCD_RUN_MAX lines at most, lcd_jobs.c).
 *
 * Writing: replies are written to the socket at the end of each pass
 * (flush_out); only a remainder the socket does not take waits for an
 * EV_WRITE event.  A TLS connection (c->tls, lcd_tls.c) keeps EV_WRITE on
 * and lets its OpenSSL bufferevent encrypt and write the output in the
 * next loop turn (never evbuffer_write on its fd); write_cb comes when the
 * output is empty, as on plain TCP, so back-pressure and --reply-timeout
 * measure the same output buffer.  Its closes send close_notify (the
 * lingering close before shutdown(SHUT_WR)); a handshake that fails, or is
 * not done within --line-timeout, closes at once without it and counts in
 * ssl_handshake_errors.
 *
 * Closing: lcd_close_later() marks the connection; finish() closes it once its
 * replies are written, with a lingering close when unread input remains
 * (see finish).  A connection whose job is still in flight keeps its
 * struct (without a socket) until the job comes back.
 */
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_counters.h"
#include "lcd_gate.h"
#include "lcd_job.h"
#include "lcd_server.h"
#include "lcd_settings.h"
#include "lcd_tls.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lcd_binary.h" /* binary-protocol requests */

/* ---- closing ----------------------------------------------------------- */

void lcd_conn_free(lcd_conn *c) {
  lcd_loop *s = c->loop;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  lcd_conn_free_jobs(c);
  lcd_mget_drop(c);
  lcd_gate_free(c);
  free(c);
  s->nlive--;
  lcd_loop_check_drained(s);
}

/* Closes the socket now; the struct goes when no job is in flight. */
static void close_now(lcd_conn *c, const char *why) {
  if (!c->bev) return;
  lcd_admit_done(c);
  lcd_log(c->loop->set, 1, "connection %" PRIu64 " (%s) closed: %s", c->id,
          c->peer, why);
  lcd_relay_free(c);
  if (c->tls && !c->tls_failed) lcd_tls_shutdown(c->bev);
  bufferevent_free(c->bev);
  c->bev = NULL;
  c->loop->nopen--;
  atomic_fetch_sub(&c->loop->srv->nopen, 1);
  atomic_fetch_sub(&c->li->nopen, 1);
  if (!c->inflight) lcd_conn_free(c);
}

/* Writes the pending replies now.  Only what the socket does not take
 * waits for an EV_WRITE event (enabled here, disabled again in write_cb;
 * counted in write_waits): a reply then costs one write, not two
 * epoll_ctl calls and a loop turn.  A socket bufferevent keeps its
 * output's start frozen (only its own write callback unfreezes it), and
 * evbuffer_write on a frozen buffer writes nothing, so it is unfrozen
 * around the write, as libevent's callback does. */
static void flush_out(lcd_conn *c) {
  if (c->tls) return; /* its bufferevent writes (EV_WRITE stays on) */
  struct evbuffer *o = bufferevent_get_output(c->bev);
  if (evbuffer_get_length(o) == 0) return;
  evbuffer_unfreeze(o, 1);
  evbuffer_write(o, bufferevent_getfd(c->bev));
  evbuffer_freeze(o, 1);
  if (evbuffer_get_length(o) != 0) { /* a full socket, or an error that */
    bufferevent_enable(c->bev, EV_WRITE); /* the write event will report */
    c->loop->st.write_waits++;
  }
}

void lcd_close_later(lcd_conn *c, const char *why) {
  c->closing = 1;
  c->why = why;
}

/* Called with c->closing set: closes once the output is written.  May
 * free c.  If the client sent more than was read, closing would make the
 * kernel answer with a reset that can destroy the replies still in
 * flight; so the write side is shut (the client sees the replies, then
 * EOF) and the rest of the input is discarded until the client closes or
 * --line-timeout passes ("lingering close"). */
static void finish(lcd_conn *c) {
  if (!c->bev || c->lingering) return;
  if (c->njobs) { /* their replies first; read no more */
    if (c->reading) {
      bufferevent_disable(c->bev, EV_READ);
      c->reading = 0;
    }
    return;
  }
  if (!c->closing_since) c->closing_since = lcd_now();
  flush_out(c);
  if (evbuffer_get_length(bufferevent_get_output(c->bev)) != 0) {
    bufferevent_disable(c->bev, EV_READ);
    c->reading = 0;
    return; /* write_cb comes back here */
  }
  evutil_socket_t fd = bufferevent_getfd(c->bev);
  int unread = 0;
  if (evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
      (!c->tls || lcd_tls_pending(c->bev) == 0) &&
      (c->eof || ioctl(fd, FIONREAD, &unread) != 0 || unread == 0)) {
    close_now(c, c->why);
    return;
  }
  if (c->tls) lcd_tls_shutdown(c->bev); /* close_notify, then the FIN */
  shutdown(fd, SHUT_WR);
  c->lingering = 1;
  c->closing_since = lcd_now();
  evbuffer_drain(bufferevent_get_input(c->bev),
                 evbuffer_get_length(bufferevent_get_input(c->bev)));
  bufferevent_enable(c->bev, EV_READ);
  c->reading = 1;
}

/* Reads from the socket only while less than LCD_INPUT_MAX bytes wait to
 * be parsed; above it the client's further bytes stay in the kernel. */
static void update_reading(lcd_conn *c) {
  int want = !c->eof && !c->draining &&
             evbuffer_get_length(bufferevent_get_input(c->bev)) < LCD_INPUT_MAX;
  if (want == c->reading) return;
  c->reading = want;
  if (want) {
    bufferevent_enable(c->bev, EV_READ);
  } else {
    bufferevent_disable(c->bev, EV_READ);
    if (!c->eof && !c->draining) c->loop->st.read_paused++;
  }
}

/* ---- requests ---------------------------------------------------------- */

int lcd_conn_may_start(const lcd_conn *c, const lcd_proto_req *req,
                       lcd_proto_cmd kind) {
  switch (kind) {
  case LCD_PROTO_INCR:
    return lcd_may_start(c, LCD_JOB_INCR, req->keys[0].s, req->keys[0].len);
  case LCD_PROTO_TALLY:
    return lcd_may_start(c, LCD_JOB_TALLY, req->tally.s, req->tally.len);
  case LCD_PROTO_GET: return lcd_may_start(c, LCD_JOB_GET, NULL, 0);
  default: /* answered on the spot, after every job before it */
    return c->njobs == 0;
  }
}

/* One complete line of line_len bytes at the head of the input; 0 if it
 * must wait (left in the input) until a job comes back, 2 if it waits for
 * more input (the handshake's data block). */
static int handle_line(lcd_conn *c, struct evbuffer *in, const char *line,
                       size_t line_len) {
  lcd_proto_req req;
  lcd_proto_cmd kind = lcd_proto_parse(line, line_len, &req);
  if (!lcd_conn_may_start(c, &req, kind)) return 0;
  int g = lcd_gate_request(c, in, line_len, &req, &kind); /* lcd_gate.c */
  if (g) return g < 0 ? 2 : 1;
  if (kind == LCD_PROTO_BAD && !lcd_conn_may_start(c, &req, kind)) return 0;
  if (req.meta.on || kind == LCD_PROTO_MN) c->loop->st.cmd_meta++;
  switch (kind) {
  case LCD_PROTO_INCR: lcd_start_incr(c, in, &req, line_len); return 1;
  case LCD_PROTO_GET: /* more keys: lcd_mget.c reads on from rest */
    lcd_start_get(c, in, &req, req.more ? req.rest : line_len);
    return 1;
  case LCD_PROTO_TALLY: lcd_start_tally(c, in, &req, line_len); return 1;
  case LCD_PROTO_STATS:
    if (req.stats_tally) {
      lcd_start_stats_tally(c, in, &req, line_len);
      return 1;
    }
    break;
  default: break;
  }
  evbuffer_drain(in, line_len); /* req's tokens are gone now */
  switch (req.cmd) {
  case LCD_PROTO_STATS:
    if (req.stats_empty)
      lcd_puts(c, "END\r\n");
    else
      lcd_put_stats(c->loop->srv, bufferevent_get_output(c->bev),
                    req.stats_settings);
    break;
  case LCD_PROTO_MN: lcd_puts(c, "MN\r\n"); break;
  case LCD_PROTO_VERSION:
    /* libmemcached rejects a major version 0 (memcstat, memcping and
     * every libmemcached client send "version" first), so the memcached
     * protocol level comes first, then ours. */
    lcd_puts(c, "VERSION " LCD_PROTOCOL_VERSION " " LCD_PROG
                "-" LC_VERSION_STRING "\r\n");
    break;
  case LCD_PROTO_VERBOSITY:
    if (!req.noreply) lcd_puts(c, "OK\r\n");
    break;
  case LCD_PROTO_QUIT: lcd_close_later(c, "quit"); return 1;
  case LCD_PROTO_ADMIN: lcd_relay_start(c); return 1;
  case LCD_PROTO_REFUSED:
    if (req.data_len) c->loop->st.cmd_set++; /* a storage command */
    c->swallow = req.data_len;
    lcd_client_error(c, req.error, req.noreply);
    return 1;
  case LCD_PROTO_BAD:
    lcd_client_error(c, req.error, req.noreply && !req.close);
    if (req.close) lcd_close_later(c, req.error);
    return 1;
  default: /* LCD_PROTO_UNKNOWN */ lcd_client_error(c, NULL, 0); return 1;
  }
  c->errors_in_row = 0;
  return 1;
}

void lcd_conn_process(lcd_conn *c) {
  lcd_loop *s = c->loop;
  if (!c->bev || c->lingering || c->auth_hold) return;
  struct evbuffer *in = bufferevent_get_input(c->bev);
  struct evbuffer *out = bufferevent_get_output(c->bev);
  int waiting = 0; /* a request waits for a job */
  while (!c->closing && !c->out_blocked && !c->auth_hold && !c->relay) {
    if (evbuffer_get_length(out) > LCD_OUTPUT_MAX) flush_out(c);
    if (evbuffer_get_length(out) > LCD_OUTPUT_MAX) {
      c->out_blocked = 1; /* write_cb resumes */
      c->blocked_since = lcd_now();
      c->blocked_len = evbuffer_get_length(out);
      s->st.output_paused++;
      break;
    }
    size_t avail = evbuffer_get_length(in), len = 0;
    if (c->swallow) {
      size_t n = avail < c->swallow ? avail : (size_t)c->swallow;
      evbuffer_drain(in, n);
      c->swallow -= n;
      if (n) c->partial_since = 0;
      if (c->swallow) break;
      continue;
    }
    if (c->mget || c->skip_line) {
      if (lcd_mget_step(c, in)) continue;
      waiting = c->njobs > 0;
      break;
    }
    if (avail == 0) break;
    size_t look =
        avail < LCD_PROTO_LINE_MAX + 2 ? avail : LCD_PROTO_LINE_MAX + 2;
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
    if (c->binary || (unsigned char)p[0] == LCD_BIN_MAGIC_REQ) {
      int h = lcd_bin_request(c, in); /* lcd_binary_conn.c */
      if (h == 2) break;              /* more input: a partial request */
      if (!h) {
        waiting = 1;
        break;
      }
      c->partial_since = 0;
      continue;
    }
    lcd_proto_frame_result fr = lcd_proto_frame(p, look, &len);
    if (fr == LCD_PROTO_FRAME_MORE) break;
    if (fr == LCD_PROTO_FRAME_TOO_LONG && lcd_gate_long(c, in)) break;
    if (fr == LCD_PROTO_FRAME_TOO_LONG && lcd_mget_begin(c, in, p, look)) {
      c->partial_since = 0;
      continue;
    }
    if (fr == LCD_PROTO_FRAME_TOO_LONG) {
      if (c->njobs) { /* the error's turn comes later */
        waiting = 1;
        break;
      }
      s->st.closed_long++;
      s->st.client_errors++;
      lcd_puts(c, "CLIENT_ERROR line too long\r\n");
      lcd_close_later(c, "line too long");
      break;
    }
    c->partial_since = 0;
    int h = handle_line(c, in, p, len);
    if (h == 2) break; /* more input: a partial request */
    if (!h) {
      waiting = 1;
      break;
    }
  }
  if (c->relay && !c->out_blocked) lcd_relay_pump(c); /* lcd_relay.c */
  if (c->relay && !c->closing) return;
  if (c->auth_hold) { /* lcd_gate.c's timer resumes */
    flush_out(c);
    return;
  }
  if (c->closing) {
    finish(c);
    return;
  }
  if (!waiting && !c->out_blocked && c->njobs == 0) {
    int partial = evbuffer_get_length(in) || c->swallow || c->mget ||
                  c->skip_line;
    if (partial && !c->partial_since) c->partial_since = lcd_now();
    if (c->eof || c->draining) {
      lcd_close_later(c, c->draining ? "shutting down"
                         : partial
                             ? "input ended inside a request"
                             : "client closed");
      finish(c);
      return;
    }
  }
  update_reading(c);
  flush_out(c);
}

/* ---- libevent callbacks ------------------------------------------------ */

static void read_cb(struct bufferevent *bev, void *arg) {
  lcd_conn *c = arg;
  if (c->lingering) {
    struct evbuffer *in = bufferevent_get_input(bev);
    evbuffer_drain(in, evbuffer_get_length(in));
    return;
  }
  c->last_active = lcd_now();
  lcd_conn_process(c);
}

static void write_cb(struct bufferevent *bev, void *arg) {
  lcd_conn *c = arg;
  if (!c->tls) bufferevent_disable(bev, EV_WRITE); /* flush_out writes */
  if (c->lingering) return;
  if (c->closing) {
    finish(c);
  } else if (c->out_blocked) {
    c->out_blocked = 0;
    lcd_conn_process(c);
  }
}

/* A TLS connection's handshake ended (CONNECTED), or failed: closed at
 * once, counted, no close_notify. */
static int tls_event(lcd_conn *c, short what) {
  if (what & BEV_EVENT_CONNECTED) {
    c->tls_up = 1;
    lcd_admit_check(c); /* finished unless it must authenticate */
    return 1;
  }
  if (c->tls_up || !(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) return 0;
  char buf[256];
  const char *why = lcd_tls_error(c->bev, buf, sizeof buf);
  if (!why) why = "closed during the handshake";
  c->loop->st.tls_handshake_errors++;
  c->tls_failed = 1;
  lcd_log(c->loop->set, 1, "connection %" PRIu64 " (%s): TLS handshake "
          "failed: %s", c->id, c->peer, why);
  close_now(c, "TLS handshake failed");
  return 1;
}

static void event_cb(struct bufferevent *bev, short what, void *arg) {
  lcd_conn *c = arg;
  if (c->tls && tls_event(c, what)) return;
  if (c->tls && (what & BEV_EVENT_ERROR)) c->tls_failed = 1;
  if (c->lingering && (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) {
    close_now(c, c->why);
  } else if (what & BEV_EVENT_EOF) {
    c->eof = 1;
    bufferevent_disable(bev, EV_READ);
    c->reading = 0;
    if (c->tls) /* its EOF stopped writing too: the replies still go */
      bufferevent_enable(bev, EV_WRITE);
    lcd_conn_process(c);
  } else if (what & BEV_EVENT_ERROR) {
    char buf[256];
    const char *why = c->tls ? lcd_tls_error(bev, buf, sizeof buf) : NULL;
    close_now(c, why ? why
                     : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
  }
}

void lcd_conn_new(lcd_loop *s, int fd, const char *peer,
                  struct lcd_listener *li) {
  int tls = li->tls;
  lcd_conn *c = calloc(1, sizeof *c);
  struct bufferevent *bev =
      !c    ? NULL
      : tls ? lcd_tls_bev(s->srv, s->base, fd)
            : bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (!bev) {
    lcd_log(s->set, 0, "cannot set up a connection from %s: out of memory",
            peer);
    atomic_fetch_sub(&s->srv->nopen, 1);
    atomic_fetch_sub(&li->nopen, 1);
    close(fd);
    free(c);
    return;
  }
  c->loop = s;
  c->li = li;
  c->bev = bev;
  c->tls = tls;
  c->id = atomic_fetch_add(&s->srv->total_connections, 1) + 1;
  c->last_active = lcd_now();
  snprintf(c->peer, sizeof c->peer, "%s", peer);
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nopen++;
  s->nlive++;
  bufferevent_setcb(bev, read_cb, write_cb, event_cb, c);
  /* plain: EV_WRITE only for what flush_out leaves (a new socket
   * bufferevent has it on: off, or every reply would arm it); TLS: always */
  if (!tls) bufferevent_disable(bev, EV_WRITE);
  bufferevent_enable(bev, tls ? EV_READ | EV_WRITE : EV_READ);
  c->reading = 1;
  lcd_log(s->set, 1, "connection %" PRIu64 " from %s", c->id, c->peer);
  lcd_admit_new(c); /* TLS or must authenticate: counted as unfinished */
}

void lcd_conn_drop_unfinished(lcd_conn *c) {
  if (c->tls && !c->tls_up) c->tls_failed = 1; /* no close_notify */
  close_now(c, "unfinished, pushed out by newer ones "
               "(--max-unfinished, --max-unfinished-per-address)");
}

/* 1 (after closing c) if c's replies made no progress for
 * --reply-timeout: the client sends but does not read. */
static int unread_too_long(lcd_conn *c, time_t now) {
  size_t len = evbuffer_get_length(bufferevent_get_output(c->bev));
  if (len < c->blocked_len) { /* the client read some */
    c->blocked_len = len;
    c->blocked_since = now;
    return 0;
  }
  if (now - c->blocked_since < c->loop->set->reply_timeout) return 0;
  c->loop->st.closed_unread++;
  lcd_log(c->loop->set, 0,
          "connection %" PRIu64 " (%s): closed: %zu bytes of "
          "replies not read for %d s (--reply-timeout)",
          c->id, c->peer, len, c->loop->set->reply_timeout);
  close_now(c, "replies not read (--reply-timeout)");
  return 1;
}

void lcd_conn_sweep(lcd_loop *s) {
  const lcd_settings *set = s->set;
  time_t now = lcd_now();
  lcd_conn *next;
  for (lcd_conn *c = s->conns; c; c = next) {
    next = c->next;
    if (!c->bev) continue;
    if (c->out_blocked) {
      unread_too_long(c, now);
    } else if (c->njobs) {
      continue; /* busy, not idle */
    } else if (c->closing) {
      if (c->closing_since && now - c->closing_since >= set->line_timeout)
        close_now(c, "replies not read in time");
    } else if (c->tls && !c->tls_up && set->line_timeout &&
               now - c->last_active >= set->line_timeout) {
      s->st.tls_handshake_errors++; /* no handshake: --line-timeout */
      c->tls_failed = 1;
      close_now(c, "no TLS handshake within the line timeout");
    } else if (lcd_gate_late(c, now)) { /* lcd_gate.c */
      close_now(c, "not authenticated within --line-timeout");
    } else if (c->partial_since && set->line_timeout &&
               now - c->partial_since >= set->line_timeout) {
      close_now(c, "request not finished within the line timeout");
    } else if (set->idle_timeout && now - c->last_active >= set->idle_timeout) {
      s->st.closed_idle++;
      close_now(c, "idle timeout");
    }
  }
}

void lcd_conn_drain_all(lcd_loop *s) {
  lcd_conn *next;
  for (lcd_conn *c = s->conns; c; c = next) {
    next = c->next;
    if (!c->bev) continue;
    c->draining = 1;
    if (c->auth_hold) { /* a delayed failure, or a turn: nothing to answer */
      c->auth_hold = 0;
      if (c->auth_timer) evtimer_del(c->auth_timer); /* nor later */
      lcd_close_later(c, "shutting down");
    }
    if (!c->lingering) {
      bufferevent_disable(c->bev, EV_READ);
      c->reading = 0;
    }
    lcd_conn_process(c);
  }
}

void lcd_conn_close_all(lcd_loop *s) {
  lcd_conn *next;
  for (lcd_conn *c = s->conns; c; c = next) {
    next = c->next;
    close_now(c, "shutting down");
  }
}
