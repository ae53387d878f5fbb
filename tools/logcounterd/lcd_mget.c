/*
 * lcd_mget.c - get and gets of any number of keys, as memcached takes
 * them: only these lines have no length limit.
 *
 * A get line is answered piece by piece: the first LCD_PROTO_MAX_KEYS
 * keys of a line that fits (lcd_proto_parse sets req.more) or of a line
 * too long to frame (lcd_mget_begin consumes its verb), then
 * lcd_proto_get_piece's pieces of the rest, each one get job.  Only the
 * job of the piece that ends the line writes END.  A piece starts only
 * when no job is in flight on the connection (as every get does), so the
 * VALUE lines come in key order, and memory stays bounded: one job, the
 * input (LCD_INPUT_MAX) and the output (LCD_OUTPUT_MAX) as for any
 * request, plus the held answer (below).
 *
 * A get line is answered whole or refused whole, whatever its length, as
 * a short one is: the VALUE lines of its pieces are held (c->mget_hold)
 * until the piece that ends the line, then written with END.  A bad key,
 * a key the user may not read, or a failed job drops what was held and
 * answers the line with its one error line (CLIENT_ERROR or
 * SERVER_ERROR, no VALUE, no END), the rest of the line discarded
 * (skip_line); so does an answer that would pass LCD_MGET_HOLD_MAX bytes
 * (some 30,000 short keys; 3,500 of 250 bytes).  Loop thread only.
 */
#include "lcd_conn.h"
#include "lcd_gate.h"
#include "lcd_job.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <string.h>

int lcd_mget_hold(lcd_conn *c) {
  if (!c->mget_hold) c->mget_hold = evbuffer_new();
  return c->mget_hold ? 0 : -1;
}

struct evbuffer *lcd_mget_out(lcd_conn *c) {
  return c->mget_hold ? c->mget_hold : bufferevent_get_output(c->bev);
}

void lcd_mget_end(lcd_conn *c) {
  if (c->mget_hold) {
    evbuffer_add_buffer(bufferevent_get_output(c->bev), c->mget_hold);
    evbuffer_free(c->mget_hold);
    c->mget_hold = NULL;
  }
  lcd_puts(c, "END\r\n");
}

void lcd_mget_drop(lcd_conn *c) {
  if (c->mget_hold) evbuffer_free(c->mget_hold);
  c->mget_hold = NULL;
}

/* Discards input through the next line end. */
static int skip(lcd_conn *c, struct evbuffer *in) {
  size_t avail = evbuffer_get_length(in);
  if (avail == 0) return 0;
  struct evbuffer_ptr nl = evbuffer_search(in, "\n", 1, NULL);
  if (nl.pos < 0) {
    evbuffer_drain(in, avail);
    return 0;
  }
  evbuffer_drain(in, (size_t)nl.pos + 1);
  c->skip_line = 0;
  return 1;
}

int lcd_mget_step(lcd_conn *c, struct evbuffer *in) {
  if (c->skip_line) return skip(c, in);
  if (c->njobs) return 0; /* the piece before it comes first */
  size_t avail = evbuffer_get_length(in);
  if (avail == 0) return 0;
  size_t look = avail < LCD_PROTO_LINE_MAX + 2 ? avail : LCD_PROTO_LINE_MAX + 2;
  const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
  lcd_proto_req req;
  size_t used = 0;
  int r = lcd_proto_get_piece(p, look, &req, &used);
  if (r == 0) return 0;
  c->partial_since = 0;
  if (r > 0 && c->mget_hold &&
      evbuffer_get_length(c->mget_hold) > LCD_MGET_HOLD_MAX) {
    r = -1;
    req.error = "get line too long: its answer passes 1 MiB (split it)";
    used = 0;
  }
  if (r < 0) {
    lcd_mget_drop(c);
    evbuffer_drain(in, used);
    c->mget = 0;
    c->skip_line = 1;
    lcd_client_error(c, req.error, 0);
    return 1;
  }
  const char *why = lcd_gate_keys(c, &req); /* rights: lcd_gate.c */
  if (why) {
    lcd_mget_drop(c);
    evbuffer_drain(in, used);
    c->skip_line = req.more;
    c->mget = 0;
    lcd_client_error(c, why, 0);
    return 1;
  }
  req.gets = c->mget_gets;
  if (!req.more) c->mget = 0;
  if (req.nkeys) {
    lcd_start_get(c, in, &req, used); /* sets mget again if more */
    return 1;
  }
  evbuffer_drain(in, used);
  if (!req.more) lcd_mget_end(c);
  return 1;
}

int lcd_mget_begin(lcd_conn *c, struct evbuffer *in, const char *p,
                   size_t len) {
  int gets = 0;
  size_t n = lcd_proto_get_start(p, len, &gets);
  if (!n) return 0;
  evbuffer_drain(in, n);
  c->mget = 1;
  c->mget_gets = gets;
  if (lcd_mget_hold(c) != 0) { /* out of memory: refused */
    c->mget = 0;
    c->skip_line = 1;
    lcd_client_error(c, "out of memory", 0);
  }
  return 1;
}
