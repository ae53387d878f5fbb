/*
 * lcd_meta.c - the meta commands of memcached's text protocol, parsed for
 * logcounterd (pure and allocation-free, like lcd_proto.c, which calls in
 * here for ma, mg and mn).
 *
 * What each one means here (memcached's doc/protocol.txt, mapped onto
 * allocation):
 *   ma NAME [flags]   allocates a block of D ids (default 1), answered
 *                     "HD" or, with v, "VA <len>" and the block's last
 *                     id; ma tally:NAME changes the tally by +D (MI, M+,
 *                     the default) or -D (MD, M-), answered with the total
 *                     after the change.  Counters exist from their first
 *                     use, so there is no NF: N<ttl> is accepted and, as
 *                     T<ttl>, has nothing to do (counters never expire).
 *                     J<n> with N: a counter that has handed out no id
 *                     yet starts at n.  q drops "HD" (errors always come).
 *   mg NAME [flags]   reads a counter (its last id) or a tally (its
 *                     total): "VA <len>" with v, else "HD"; a counter
 *                     never used is a miss, "EN" (q drops it).
 *   mn                answers "MN".
 * Flags returned, in the order asked: k (the key), O<opaque> (copied
 * back), c (a cas: the value), t (-1: no expiry), s (the value's size,
 * mg), f (0, mg).  b (base64 keys), C and E (compare or set a cas), and
 * mg's h, l, N, R, T are refused with CLIENT_ERROR naming the flag; u is
 * accepted (there is no LRU).
 */
#include "lcd_proto.h"

#include "logcounter.h"

#include <string.h>

static lcd_proto_cmd bad(lcd_proto_req *req, const char *why) {
  req->error = why;
  return req->cmd = LCD_PROTO_BAD;
}

static int number(const lcd_proto_token *t, uint64_t *v) {
  return lcd_proto_number(t->s + 1, t->len - 1, v);
}

/* Adds a returned flag (once) in request order. */
static void ret(lcd_proto_meta *m, char f) {
  if (memchr(m->ret, f, m->nret) == NULL && m->nret < sizeof m->ret)
    m->ret[m->nret++] = f;
}

/* A flag common to ma and mg (v q k O c t): 1 taken, 0 not one of them,
 * -1 malformed (req->error). */
static int common_flag(const lcd_proto_token *t, lcd_proto_req *req) {
  lcd_proto_meta *m = &req->meta;
  char f = t->s[0];
  if (f == 'O') {
    if (t->len < 2 || t->len - 1 > LCD_PROTO_OPAQUE_MAX) {
      req->error = "bad opaque token (O then 1-32 bytes)";
      return -1;
    }
    m->opaque = (lcd_proto_token){t->s + 1, t->len - 1};
    ret(m, 'O');
    return 1;
  }
  if (!strchr("vqkct", f)) return 0;
  if (t->len != 1) {
    req->error = "invalid flag (v, q, k, c and t take no token)";
    return -1;
  }
  if (f == 'v')
    m->value = 1;
  else if (f == 'q')
    m->quiet = 1;
  else
    ret(m, f);
  return 1;
}

static const char *refused_flag(char f) {
  switch (f) {
  case 'b': return "b (base64 keys) is not supported: names are printable";
  case 'C':
  case 'E': return "C and E (cas) are not supported: an allocation never "
                   "compares or sets a cas";
  default: return NULL;
  }
}

static lcd_proto_cmd parse_ma(const lcd_proto_token *t, size_t ntok,
                              lcd_proto_req *req) {
  uint64_t delta = 1, v;
  int minus = 0, has_n = 0, has_j = 0;
  for (size_t i = 2; i < ntok; i++) {
    int c = common_flag(&t[i], req);
    if (c < 0) return bad(req, req->error);
    if (c > 0) continue;
    const char *why = refused_flag(t[i].s[0]);
    if (why) return bad(req, why);
    switch (t[i].s[0]) {
    case 'D':
      if (number(&t[i], &delta) != 0 || delta < 1)
        return bad(req, "invalid numeric delta argument (D then 1 or more)");
      break;
    case 'M':
      if (t[i].len != 2 || !strchr("I+D-", t[i].s[1]))
        return bad(req, "invalid mode for ma (MI, M+, MD or M-)");
      minus = t[i].s[1] == 'D' || t[i].s[1] == '-';
      break;
    case 'N':
    case 'T':
      if (number(&t[i], &v) != 0)
        return bad(req, "bad token in command line format (N and T take a "
                        "TTL)");
      has_n |= t[i].s[0] == 'N';
      break;
    case 'J':
      if (number(&t[i], &req->meta.init) != 0 ||
          req->meta.init > LC_VALUE_MAX)
        return bad(req, "bad token in command line format (J takes an "
                        "initial value)");
      has_j = 1;
      break;
    default: return bad(req, "invalid flag");
    }
  }
  const char *why = lcd_proto_check_key(&t[1]);
  if (why) return bad(req, why);
  if (lcd_proto_tally_name(&t[1], &req->tally)) {
    if (has_j)
      return bad(req, "J (initial value) is for serial counters: a tally "
                      "starts at 0");
    if (delta > (uint64_t)INT64_MAX)
      return bad(req, "invalid numeric delta argument (a tally takes "
                      "1..9223372036854775807)");
    req->delta = minus ? -(int64_t)delta : (int64_t)delta;
    return req->cmd = LCD_PROTO_TALLY;
  }
  if (minus)
    return bad(req, "MD is not supported on serial counters: they only "
                    "move forward (MD works on tally:<name>)");
  if (delta > LC_BLOCK_MAX)
    return bad(req, "invalid numeric delta argument (a block is at most "
                    "1000000000 ids)");
  req->count = delta;
  req->meta.has_init = has_n && has_j && req->meta.init > 0;
  return req->cmd = LCD_PROTO_INCR;
}

static lcd_proto_cmd parse_mg(const lcd_proto_token *t, size_t ntok,
                              lcd_proto_req *req) {
  for (size_t i = 2; i < ntok; i++) {
    int c = common_flag(&t[i], req);
    if (c < 0) return bad(req, req->error);
    if (c > 0) continue;
    char f = t[i].s[0];
    const char *why = refused_flag(f);
    if (why) return bad(req, why);
    if ((f == 's' || f == 'f' || f == 'u') && t[i].len == 1) {
      if (f != 'u') ret(&req->meta, f);
      continue;
    }
    if (strchr("hlNRT", f))
      return bad(req, "h, l, N, R and T are not supported by mg: counters "
                      "never expire and have no LRU");
    return bad(req, "invalid flag");
  }
  const char *why = lcd_proto_check_key(&t[1]);
  if (why) return bad(req, why);
  return req->cmd = LCD_PROTO_GET;
}

lcd_proto_cmd lcd_proto_meta_parse(const lcd_proto_token *t, size_t ntok,
                                   size_t max, lcd_proto_req *req) {
  int ma = t[0].s[1] == 'a', mg = t[0].s[1] == 'g';
  if (!ma && !mg) /* mn */
    return ntok == 1 ? (req->cmd = LCD_PROTO_MN)
                     : bad(req, "bad command line format: usage: mn");
  if (ntok < 2)
    return bad(req, ma ? "bad command line format: usage: ma <name> [flags]"
                       : "bad command line format: usage: mg <name> "
                         "[flags]");
  if (ntok > max) return bad(req, "too many flags");
  req->meta.on = 1;
  req->keys[0] = t[1];
  req->nkeys = 1;
  return ma ? parse_ma(t, ntok, req) : parse_mg(t, ntok, req);
}
