/*
 * lcd_binary_conn.c - a logcounterd connection that speaks memcached's
 * binary protocol: framing the request at the head of the input
 * (lcd_binary.c checks it), serving it with the text path's machinery,
 * and writing replies as binary frames.
 *
 * The frame becomes the lcd_proto_req the text parser would give
 * (lcd_bin_parse), with meta.bin set; from there it goes where a text
 * request goes: the same ordering (lcd_may_start), rights
 * (lcd_gate_request), jobs (lcd_start_incr/_get/_tally: pipelining,
 * coalescing of a buffered run through lcd_jobs.c's look-ahead, the
 * workers), back-pressure and timeouts (lcd_conn.c).  A buffered run of
 * gets with one opcode and opaque (a client's multi-get: getkq... noop)
 * becomes one get job of up to LCD_PROTO_MAX_KEYS keys (take_gets), as a
 * text get line does; lcd_jobs.c's answer_get answers it key by key
 * through lcd_bin_put_get.  A finished job's
 * reply comes back through lcd_put_meta and lcd_jobs.c's error writer,
 * which call lcd_bin_put_job / lcd_bin_put_error here for a binary job.
 * Requests answered on the spot (noop, version, stat, verbosity, quit,
 * refusals, errors) wait, as in text, until no job is in flight: so a
 * noop after a run of quiet gets is answered after them.
 *
 * Nonsense (lcd_bin_frame's LCD_BIN_BAD, an unknown opcode, a later
 * request without the 0x80 magic) is answered with its status and reason,
 * logged, counted in closed_binary, and the connection is closed.  SASL
 * and the authentication gate are lcd_sasl.c's.  Loop thread only.
 */
#include "lcd_conn.h"
#include "lcd_gate.h"
#include "lcd_job.h"
#include "lcd_server.h"
#include "lcd_binary.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(LCD_BIN_HEADER + LCD_BIN_BODY_MAX <= LCD_INPUT_MAX,
               "a whole binary frame fits the input bound");

void lcd_bin_put(lcd_conn *c, uint8_t opcode, uint16_t status,
                 uint32_t opaque, uint64_t cas, const void *ext,
                 uint8_t extlen, const void *key, uint16_t keylen,
                 const void *val, uint32_t vlen) {
  struct evbuffer *o = bufferevent_get_output(c->bev);
  unsigned char h[LCD_BIN_HEADER];
  lcd_bin_encode(h, opcode, status, opaque, cas, extlen, keylen, vlen);
  evbuffer_add(o, h, sizeof h);
  if (extlen) evbuffer_add(o, ext, extlen);
  if (keylen) evbuffer_add(o, key, keylen);
  if (vlen) evbuffer_add(o, val, vlen);
}

static uint32_t job_opaque(const lcd_job *j) {
  const unsigned char *p = (const unsigned char *)j->opaque;
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static void put_be64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--) {
    p[i] = (unsigned char)v;
    v >>= 8;
  }
}

static int is_getk(uint8_t op) {
  return op == LCD_BIN_GETK || op == LCD_BIN_GETKQ;
}

void lcd_bin_put_job(lcd_conn *c, const lcd_job *j, int hit, int64_t value) {
  uint8_t op = j->meta.bin_op;
  uint32_t opaque = job_opaque(j);
  if (j->kind != LCD_JOB_GET) { /* increment / decrement */
    if (j->meta.quiet) return;
    unsigned char v[8]; /* unsigned: a tally's negative total shows as 0 */
    uint64_t u = value > 0 ? (uint64_t)value : 0;
    put_be64(v, u);
    lcd_bin_put(c, op, LCD_BIN_OK, opaque, u, NULL, 0, NULL, 0, v, 8);
    return;
  }
  (void)hit; /* not reached for gets: lcd_jobs.c's answer_get asks */
  for (size_t i = 0; i < j->nkeys; i++) lcd_bin_put_get(c, j, i);
}

void lcd_bin_put_get(lcd_conn *c, const lcd_job *j, size_t i) {
  uint8_t op = j->meta.bin_op;
  uint32_t opaque = job_opaque(j);
  const char *key = j->names + j->name_off[i];
  uint16_t klen = is_getk(op) ? (uint16_t)strlen(key) : 0;
  if (!j->hit[i]) {
    if (j->meta.quiet) return;
    lcd_bin_put(c, op, LCD_BIN_ENOENT, opaque, 0, NULL, 0, key, klen,
                "Not found", 9);
    return;
  }
  int64_t value = j->values[i];
  char v[24];
  int n = snprintf(v, sizeof v, "%" PRId64, value);
  static const unsigned char flags[4] = {0, 0, 0, 0};
  lcd_bin_put(c, op, LCD_BIN_OK, opaque, value > 0 ? (uint64_t)value : 0,
              flags, 4, key, klen, v, (uint32_t)n);
}

/* The binary status for a job's failure. */
static uint16_t status_of(int rc) {
  switch (rc) {
  case LCD_BIN_ENOCREATE: return LCD_BIN_ENOENT;
  case LC_ENAME: case LC_EDELTA: case LC_ETALLYRANGE: case LC_ECOUNT:
  case LC_EINVAL:
    return LCD_BIN_EINVAL;
  case LC_EBADVALUE: return LCD_BIN_ENONNUMERIC;
  case LC_ENOMEM: return LCD_BIN_ENOMEM;
  case LC_ETIMEDOUT: case LC_EMEMCACHED: case LC_EAGAIN: case LC_ESTANDBY:
  case LC_ENOSTANDBY:
    return LCD_BIN_ETMPFAIL;
  default: return LCD_BIN_EINTERNAL;
  }
}

void lcd_bin_put_error(lcd_conn *c, const lcd_job *j, int rc,
                       const char *detail) {
  char msg[512];
  int n;
  if (rc == LCD_BIN_ENOCREATE)
    n = snprintf(msg, sizeof msg, "Not found");
  else
    n = snprintf(msg, sizeof msg, "%s %s%s%s", lc_err_name(rc),
                 lc_strerror(rc), detail[0] ? ": " : "", detail);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
  size_t nreplies = j->kind == LCD_JOB_GET ? j->nkeys : 1;
  for (size_t i = 0; i < nreplies; i++) {
    const char *key = j->names + (j->kind == LCD_JOB_GET ? j->name_off[i] : 0);
    uint16_t klen = j->kind == LCD_JOB_GET && is_getk(j->meta.bin_op)
                        ? (uint16_t)strlen(key)
                        : 0;
    lcd_bin_put(c, j->meta.bin_op, status_of(rc), job_opaque(j), 0, NULL, 0,
                key, klen, msg, (uint32_t)n);
  }
}

/* An error answered on the spot (status, reason); counted as a client
 * error; too many in a row close, as in text. */
static void spot_error(lcd_conn *c, const lcd_bin_header *h, uint16_t status,
                       const char *why) {
  lcd_loop *s = c->loop;
  s->st.client_errors++;
  lcd_bin_put(c, h->opcode, status, h->opaque, 0, NULL, 0, NULL, 0, why,
              (uint32_t)strlen(why));
  lcd_log(s->set, 2, "connection %" PRIu64 ": %s", c->id, why);
  if (++c->errors_in_row >= LCD_GARBAGE_MAX && !c->closing) {
    s->st.closed_garbage++;
    lcd_close_later(c, "too many errors in a row");
  }
}

/* Nonsense: the status and the reason, then the connection is closed. */
static void garbage(lcd_conn *c, struct evbuffer *in, const lcd_bin_header *h,
                    uint16_t status, const char *why) {
  lcd_loop *s = c->loop;
  s->st.client_errors++;
  s->st.closed_binary++;
  lcd_log(s->set, 0,
          "connection %" PRIu64 " (%s): bad binary request (opcode 0x%02x): "
          "%s; closing",
          c->id, c->peer, h->opcode, why);
  lcd_bin_put(c, h->opcode, status, h->opaque, 0, NULL, 0, NULL, 0, why,
              (uint32_t)strlen(why));
  evbuffer_drain(in, evbuffer_get_length(in));
  lcd_close_later(c, "bad binary request");
}

/* "STAT name value" lines (lcd_put_stats) as binary stat frames, then the
 * empty one that ends them. */
static void put_stats(lcd_conn *c, const lcd_bin_header *h, int settings,
                      int empty) {
  struct evbuffer *t = empty ? NULL : evbuffer_new();
  if (t) {
    lcd_put_stats(c->loop->srv, t, settings);
    size_t n = evbuffer_get_length(t);
    const char *p = (const char *)evbuffer_pullup(t, (ev_ssize_t)n);
    const char *end = p + n;
    while (p && p < end) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      if (!nl) break;
      size_t len = (size_t)(nl - p);
      if (len && p[len - 1] == '\r') len--;
      if (len > 5 && memcmp(p, "STAT ", 5) == 0) {
        const char *k = p + 5, *sp = memchr(k, ' ', len - 5);
        size_t klen = sp ? (size_t)(sp - k) : len - 5;
        const char *v = sp ? sp + 1 : k + klen;
        size_t vlen = (size_t)(p + len - v);
        lcd_bin_put(c, h->opcode, LCD_BIN_OK, h->opaque, 0, NULL, 0, k,
                    (uint16_t)klen, v, (uint32_t)vlen);
      }
      p = nl + 1;
    }
    evbuffer_free(t);
  }
  lcd_bin_put(c, h->opcode, LCD_BIN_OK, h->opaque, 0, NULL, 0, NULL, 0, NULL,
              0);
}

/* A get (req, one key, flen bytes at the head of in) and the buffered gets
 * that follow it with the same opcode and opaque become one get job, as a
 * text get line of many keys does (Dalli's and libmemcached's multi-gets
 * are runs of getkq): up to LCD_PROTO_MAX_KEYS keys whose names fit a job
 * (LCD_PROTO_LINE_MAX bytes), each allowed by the rights.  req's keys and
 * *flen are set anew (the input is pulled up once more: the old tokens
 * may have moved). */
static void take_gets(lcd_conn *c, struct evbuffer *in,
                      const lcd_bin_header *h0, lcd_proto_req *req,
                      size_t *flen) {
  size_t avail = evbuffer_get_length(in);
  size_t cap = (size_t)LCD_PROTO_MAX_KEYS * (LCD_BIN_HEADER + LCD_PROTO_KEY_MAX);
  size_t look = avail < cap ? avail : cap;
  const unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)look);
  size_t off = 0, used = 0, n = 0;
  lcd_proto_req one;
  while (n < LCD_PROTO_MAX_KEYS && off < look) {
    lcd_bin_header h;
    uint16_t st;
    const char *why;
    if (lcd_bin_frame(p + off, look - off, &h, &st, &why) != LCD_BIN_FRAME ||
        h.opcode != h0->opcode || h.opaque != h0->opaque ||
        lcd_bin_parse(&h, p + off, &one) != LCD_PROTO_GET ||
        used + one.keys[0].len + 1 > LCD_PROTO_LINE_MAX ||
        (n && !lcd_gate_allows(c, &one, LCD_PROTO_GET)))
      break;
    if (n == 0) req->meta = one.meta; /* its opaque points into p now */
    req->keys[n++] = one.keys[0];
    used += one.keys[0].len + 1;
    off += LCD_BIN_HEADER + (size_t)h.bodylen;
  }
  req->nkeys = n; /* n >= 1: the first frame is the one parsed before */
  *flen = off;
}

int lcd_bin_request(lcd_conn *c, struct evbuffer *in) {
  lcd_loop *s = c->loop;
  size_t avail = evbuffer_get_length(in);
  size_t look = avail < LCD_BIN_HEADER ? avail : LCD_BIN_HEADER;
  const unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)look);
  lcd_bin_header h;
  uint16_t status = 0;
  const char *why = NULL;
  lcd_bin_frame_result fr = lcd_bin_frame(p, look, &h, &status, &why);
  if (fr == LCD_BIN_FRAME || fr == LCD_BIN_MORE) { /* the body too */
    size_t need = LCD_BIN_HEADER + (size_t)h.bodylen;
    if (look < LCD_BIN_HEADER || avail < need) return 2;
    p = evbuffer_pullup(in, (ev_ssize_t)need);
    fr = lcd_bin_frame(p, need, &h, &status, &why);
  }
  if (fr == LCD_BIN_MORE) return 2;
  c->binary = 1;
  if (fr == LCD_BIN_BAD) {
    if (c->njobs) return 0; /* its turn comes after theirs */
    garbage(c, in, &h, status, why);
    return 1;
  }
  size_t flen = LCD_BIN_HEADER + (size_t)h.bodylen;
  if (lcd_auth_enabled() && !c->authed && h.opcode != LCD_BIN_VERSION &&
      h.opcode != LCD_BIN_QUIT && h.opcode != LCD_BIN_QUITQ &&
      h.opcode != LCD_BIN_NOOP && h.opcode != LCD_BIN_SASL_LIST &&
      h.opcode != LCD_BIN_SASL_AUTH && h.opcode != LCD_BIN_SASL_STEP) {
    if (c->njobs) return 0;
    lcd_sasl_refuse(c, in, &h, "unauthenticated");
    return 1;
  }
  if (fr == LCD_BIN_SWALLOW) { /* a storage command: refused, value dropped */
    if (c->njobs) return 0;
    s->st.cmd_set++;
    size_t n = avail < flen ? avail : flen;
    evbuffer_drain(in, n);
    c->swallow = flen - n;
    spot_error(c, &h, LCD_BIN_ENOTSUP,
               "not supported: logcounterd stores nothing; counters move "
               "by increment only");
    return 1;
  }
  if (h.opcode == LCD_BIN_SASL_LIST || h.opcode == LCD_BIN_SASL_AUTH ||
      h.opcode == LCD_BIN_SASL_STEP) {
    if (c->njobs) return 0;
    lcd_sasl_request(c, in, &h, p, flen);
    return 1;
  }
  lcd_proto_req req;
  lcd_proto_cmd kind = lcd_bin_parse(&h, p, &req);
  if (!lcd_conn_may_start(c, &req, kind)) return 0;
  if (!lcd_auth_enabled() || c->authed) /* rights; version, noop, quit */
    lcd_gate_request(c, in, flen, &req, &kind); /* pass before that */
  if (kind == LCD_PROTO_BAD && !lcd_conn_may_start(c, &req, kind)) return 0;
  switch (kind) {
  case LCD_PROTO_INCR: lcd_start_incr(c, in, &req, flen); return 1;
  case LCD_PROTO_GET:
    take_gets(c, in, &h, &req, &flen);
    lcd_start_get(c, in, &req, flen);
    return 1;
  case LCD_PROTO_TALLY: lcd_start_tally(c, in, &req, flen); return 1;
  default: break;
  }
  /* answered here: req's tokens point into the frame, still buffered */
  switch (kind) {
  case LCD_PROTO_MN:
    lcd_bin_put(c, h.opcode, LCD_BIN_OK, h.opaque, 0, NULL, 0, NULL, 0, NULL,
                0);
    break;
  case LCD_PROTO_VERSION:
    lcd_bin_put(c, h.opcode, LCD_BIN_OK, h.opaque, 0, NULL, 0, NULL, 0,
                LCD_PROTOCOL_VERSION, sizeof LCD_PROTOCOL_VERSION - 1);
    break;
  case LCD_PROTO_VERBOSITY:
    lcd_bin_put(c, h.opcode, LCD_BIN_OK, h.opaque, 0, NULL, 0, NULL, 0, NULL,
                0);
    break;
  case LCD_PROTO_STATS:
    put_stats(c, &h, req.stats_settings, req.stats_empty);
    break;
  case LCD_PROTO_QUIT:
    if (h.opcode == LCD_BIN_QUIT)
      lcd_bin_put(c, h.opcode, LCD_BIN_OK, h.opaque, 0, NULL, 0, NULL, 0,
                  NULL, 0);
    evbuffer_drain(in, flen);
    lcd_close_later(c, "quit");
    return 1;
  case LCD_PROTO_REFUSED:
    if (h.opcode != LCD_BIN_DECREMENT && h.opcode != LCD_BIN_DECREMENTQ)
      s->st.cmd_set++;
    spot_error(c, &h, LCD_BIN_ENOTSUP, req.error);
    evbuffer_drain(in, flen);
    return 1;
  case LCD_PROTO_BAD: /* a refused key, value or right */
    spot_error(c, &h, h.opcode == LCD_BIN_STAT ? LCD_BIN_ENOENT
                                               : LCD_BIN_EINVAL,
               req.error);
    evbuffer_drain(in, flen);
    return 1;
  default: /* not reached: lcd_bin_frame knows every opcode parsed here */
    garbage(c, in, &h, LCD_BIN_EUNKNOWN, "unknown command");
    return 1;
  }
  evbuffer_drain(in, flen);
  c->errors_in_row = 0;
  return 1;
}
