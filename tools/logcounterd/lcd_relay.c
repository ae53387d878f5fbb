/*
 * lcd_relay.c - the admin commands over TCP: "admin" on a TLS connection,
 * authenticated as a user with the admin right (--rights-file), answers
 * "OK admin" and from then on the connection is a byte relay to the
 * daemon's own --admin-socket.  The admin protocol (src/net/net.h) is
 * spoken end to end by the client and the library's admin server; the
 * daemon neither parses nor changes it, so the operator commands have
 * one implementation and one set of limits (its connection cap, its idle
 * close) whichever way they come.
 *
 * Loop thread only, like the connection.  Back-pressure both ways: the
 * client is not read while more than LCD_OUTPUT_MAX bytes wait for the
 * admin socket, and the admin socket is not read while more than
 * LCD_OUTPUT_MAX bytes wait for the client (out_blocked, so the sweep's
 * --reply-timeout closes a client that stops reading, as on the data
 * path).  The client's EOF is passed on as a half close (the admin server
 * answers what it read, then closes); the admin socket's close ends the
 * connection once what it sent is written.  SIGTERM's drain closes
 * relays at once: the library stops its admin server anyway.
 */
#include "lcd_conn.h"
#include "lcd_gate.h"
#include "lcd_job.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void relay_cb(struct bufferevent *bev, void *arg) {
  (void)bev;
  lcd_conn *c = arg;
  c->last_active = lcd_now();
  lcd_conn_process(c);
}

static void relay_event_cb(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  lcd_conn *c = arg;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) c->relay_eof = 1;
  lcd_conn_process(c);
}

/* A non-blocking connection to the admin socket: the fd, or -1 and why. */
static int dial(const char *path, const char **why) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
  int e = errno;
  *why = e == EAGAIN ? "admin socket busy: try again"
                     : "admin socket unreachable";
  if (fd >= 0) close(fd);
  errno = e;
  return -1;
}

void lcd_relay_start(lcd_conn *c) {
  lcd_loop *s = c->loop;
  const char *why = lcd_gate_admin(c);
  int fd = -1;
  if (!why && !s->set->admin_socket)
    why = "admin over TCP needs logcounterd --admin-socket PATH";
  if (!why && (fd = dial(s->set->admin_socket, &why)) < 0)
    lcd_log(s->set, 0, "connection %" PRIu64 " (%s): admin relay: %s: %s",
            c->id, c->peer, s->set->admin_socket, strerror(errno));
  if (why) {
    lcd_client_error(c, why, 0);
    return;
  }
  c->relay = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (!c->relay) {
    close(fd);
    lcd_client_error(c, "out of memory", 0);
    return;
  }
  bufferevent_setcb(c->relay, relay_cb, relay_cb, relay_event_cb, c);
  bufferevent_enable(c->relay, EV_READ | EV_WRITE);
  s->st.admin_relays++;
  lcd_log(s->set, 1, "connection %" PRIu64 " (%s, user %s): admin relay to %s",
          c->id, c->peer, c->user, s->set->admin_socket);
  lcd_puts(c, "OK admin\r\n");
}

void lcd_relay_free(lcd_conn *c) {
  if (c->relay) bufferevent_free(c->relay);
  c->relay = NULL;
}

/* Turns reading of bev on or off (on: want). */
static void read_on(struct bufferevent *bev, int want) {
  if (want)
    bufferevent_enable(bev, EV_READ);
  else
    bufferevent_disable(bev, EV_READ);
}

void lcd_relay_pump(lcd_conn *c) {
  struct evbuffer *cin = bufferevent_get_input(c->bev);
  struct evbuffer *cout = bufferevent_get_output(c->bev);
  struct evbuffer *rin = bufferevent_get_input(c->relay);
  struct evbuffer *rout = bufferevent_get_output(c->relay);
  c->partial_since = 0;
  evbuffer_add_buffer(rout, cin);
  evbuffer_add_buffer(cout, rin);
  if (c->draining || c->relay_eof) {
    lcd_relay_free(c);
    lcd_close_later(c, c->draining ? "shutting down" : "admin socket closed");
    return;
  }
  if (c->eof && !c->relay_shut && evbuffer_get_length(rout) == 0) {
    shutdown(bufferevent_getfd(c->relay), SHUT_WR);
    c->relay_shut = 1;
  }
  c->reading = !c->eof && evbuffer_get_length(rout) < LCD_OUTPUT_MAX;
  read_on(c->bev, c->reading);
  size_t unsent = evbuffer_get_length(cout);
  int full = unsent > LCD_OUTPUT_MAX;
  read_on(c->relay, !full);
  if (full && !c->out_blocked) { /* write_cb resumes; the sweep times it */
    c->out_blocked = 1;
    c->blocked_since = lcd_now();
    c->blocked_len = unsent;
    c->loop->st.output_paused++;
  }
}
