/*
 * lcd_meta_reply.c - the replies of logcounterd's meta commands (ma, mg;
 * lcd_meta.c parses them): "VA <len> <flags>" and the value when v was
 * asked, else "HD <flags>" (dropped by q on ma), and mg's miss "EN"
 * (dropped by q).  The flags asked to be returned come back in the order
 * asked: k<key>, O<opaque>, c<cas> (the value; 0 for a negative tally),
 * t-1 (no expiry), s<size of the value>, f0.  Errors are written by
 * lcd_jobs.c as for every command.  Loop thread only.
 */
#include "lcd_conn.h"
#include "lcd_job.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stdio.h>

#include "lcd_binary.h" /* binary-protocol requests */

/* The flags of j's reply, each after a space. */
static void put_flags(struct evbuffer *o, const lcd_job *j, const char *v,
                      int vlen, int64_t value) {
  for (size_t i = 0; i < j->meta.nret; i++) {
    switch (j->meta.ret[i]) {
    case 'k': /* as sent: a tally job holds the name without tally: */
      evbuffer_add_printf(o, " k%s%s",
                          j->kind == LCD_JOB_TALLY ? LCD_PROTO_TALLY_PREFIX
                                                   : "",
                          j->names);
      break;
    case 'O': evbuffer_add_printf(o, " O%s", j->opaque); break;
    case 'c': evbuffer_add_printf(o, " c%s", value >= 0 ? v : "0"); break;
    case 't': evbuffer_add(o, " t-1", 4); break;
    case 's': evbuffer_add_printf(o, " s%d", vlen); break;
    case 'f': evbuffer_add(o, " f0", 3); break;
    default: break;
    }
  }
}

void lcd_put_meta(lcd_conn *c, const lcd_job *j, int hit, int64_t value) {
  if (j->meta.bin) { /* a binary request (lcd_binary_conn.c) */
    lcd_bin_put_job(c, j, hit, value);
    return;
  }
  struct evbuffer *o = bufferevent_get_output(c->bev);
  if (!hit) {
    if (!j->meta.quiet) evbuffer_add(o, "EN\r\n", 4);
    return;
  }
  char v[24];
  int n = snprintf(v, sizeof v, "%" PRId64, value);
  if (j->meta.value) {
    evbuffer_add_printf(o, "VA %d", n);
    put_flags(o, j, v, n, value);
    evbuffer_add_printf(o, "\r\n%s\r\n", v);
  } else if (!j->meta.quiet || j->kind == LCD_JOB_GET) {
    /* q on mg drops only EN: a hit is what the client asked for */
    evbuffer_add(o, "HD", 2);
    put_flags(o, j, v, n, value);
    evbuffer_add(o, "\r\n", 2);
  }
}
