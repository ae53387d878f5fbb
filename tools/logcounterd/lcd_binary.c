/*
 * lcd_binary.c - the memcached binary protocol's frames, parsed for
 * logcounterd: header checks (lcd_bin_frame), a frame turned into the
 * request the text parser would give (lcd_bin_parse), the response header
 * (lcd_bin_encode) and SASL PLAIN's message (lcd_sasl_plain_parse).
 *
 * Pure functions over caller-owned bytes, like lcd_proto.c: no
 * allocation, no global state, no I/O (unit-tested by tests/test_binary.c,
 * fuzzed by fuzz/fuzz_binary.c).  lcd_binary.h says what each opcode
 * means here and which header fields are checked.
 */
#include "lcd_binary.h"

#include "logcounter.h"

#include <string.h>

static uint16_t be16(const unsigned char *p) {
  return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static uint64_t be64(const unsigned char *p) {
  return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)(v >> 8);
  p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v) {
  put16(p, (uint16_t)(v >> 16));
  put16(p + 2, (uint16_t)v);
}

void lcd_bin_encode(unsigned char out[LCD_BIN_HEADER], uint8_t opcode,
                    uint16_t status, uint32_t opaque, uint64_t cas,
                    uint8_t extlen, uint16_t keylen, uint32_t vlen) {
  out[0] = LCD_BIN_MAGIC_RES;
  out[1] = opcode;
  put16(out + 2, keylen);
  out[4] = extlen;
  out[5] = 0;
  put16(out + 6, status);
  put32(out + 8, (uint32_t)extlen + keylen + vlen);
  put32(out + 12, opaque);
  put32(out + 16, (uint32_t)(cas >> 32));
  put32(out + 20, (uint32_t)cas);
}

/* What an opcode takes: extras lengths allowed (ext_a, or ext_b), a key
 * (KEY_NO, KEY_YES, KEY_MAY), a value (0: none; 1: any), and whether it
 * is a storage command whose body is discarded (swallow). */
enum { KEY_NO, KEY_YES, KEY_MAY };
typedef struct op_rule {
  signed char ext_a, ext_b; /* -1: unknown opcode */
  unsigned char key, value, swallow;
} op_rule;

static op_rule rule(uint8_t op) {
  switch (op) {
  case LCD_BIN_GET: case LCD_BIN_GETQ: case LCD_BIN_GETK: case LCD_BIN_GETKQ:
    return (op_rule){0, 0, KEY_YES, 0, 0};
  case LCD_BIN_INCREMENT: case LCD_BIN_DECREMENT:
  case LCD_BIN_INCREMENTQ: case LCD_BIN_DECREMENTQ:
    return (op_rule){20, 20, KEY_YES, 0, 0};
  case LCD_BIN_QUIT: case LCD_BIN_QUITQ: case LCD_BIN_NOOP:
  case LCD_BIN_VERSION: case LCD_BIN_SASL_LIST:
    return (op_rule){0, 0, KEY_NO, 0, 0};
  case LCD_BIN_STAT: return (op_rule){0, 0, KEY_MAY, 0, 0};
  case LCD_BIN_VERBOSITY: return (op_rule){4, 4, KEY_NO, 0, 0};
  case LCD_BIN_SASL_AUTH: case LCD_BIN_SASL_STEP:
    return (op_rule){0, 0, KEY_YES, 1, 0};
  case LCD_BIN_SET: case LCD_BIN_ADD: case LCD_BIN_REPLACE:
  case LCD_BIN_SETQ: case LCD_BIN_ADDQ: case LCD_BIN_REPLACEQ:
    return (op_rule){8, 8, KEY_YES, 1, 1};
  case LCD_BIN_APPEND: case LCD_BIN_PREPEND:
  case LCD_BIN_APPENDQ: case LCD_BIN_PREPENDQ:
    return (op_rule){0, 0, KEY_YES, 1, 1};
  case LCD_BIN_DELETE: case LCD_BIN_DELETEQ:
    return (op_rule){0, 0, KEY_YES, 0, 0};
  case LCD_BIN_FLUSH: case LCD_BIN_FLUSHQ:
    return (op_rule){0, 4, KEY_NO, 0, 0};
  case LCD_BIN_TOUCH: case LCD_BIN_GAT: case LCD_BIN_GATQ:
  case LCD_BIN_GATK: case LCD_BIN_GATKQ:
    return (op_rule){4, 4, KEY_YES, 0, 0};
  default: return (op_rule){-1, -1, KEY_NO, 0, 0};
  }
}

static lcd_bin_frame_result bad(uint16_t *status, const char **why,
                                uint16_t st, const char *text) {
  *status = st;
  *why = text;
  return LCD_BIN_BAD;
}

lcd_bin_frame_result lcd_bin_frame(const unsigned char *buf, size_t len,
                                   lcd_bin_header *h, uint16_t *status,
                                   const char **why) {
  memset(h, 0, sizeof *h);
  if (len >= 1 && buf[0] != LCD_BIN_MAGIC_REQ)
    return bad(status, why, LCD_BIN_EINVAL,
               "bad magic byte (a binary request starts with 0x80)");
  if (len < LCD_BIN_HEADER) return LCD_BIN_MORE;
  h->magic = buf[0];
  h->opcode = buf[1];
  h->keylen = be16(buf + 2);
  h->extlen = buf[4];
  h->datatype = buf[5];
  h->vbucket = be16(buf + 6);
  h->bodylen = be32(buf + 8);
  h->opaque = be32(buf + 12);
  h->cas = be64(buf + 16);
  op_rule r = rule(h->opcode);
  if (r.ext_a < 0) return bad(status, why, LCD_BIN_EUNKNOWN, "unknown opcode");
  if (h->datatype != 0)
    return bad(status, why, LCD_BIN_EINVAL, "bad data type (only 0, raw)");
  if (h->extlen != (unsigned)r.ext_a && h->extlen != (unsigned)r.ext_b)
    return bad(status, why, LCD_BIN_EINVAL,
               "bad extras length for this opcode");
  if (r.key == KEY_YES && h->keylen == 0)
    return bad(status, why, LCD_BIN_EINVAL, "this opcode needs a key");
  if (r.key == KEY_NO && h->keylen != 0)
    return bad(status, why, LCD_BIN_EINVAL, "this opcode takes no key");
  if (h->keylen > LCD_PROTO_KEY_MAX)
    return bad(status, why, LCD_BIN_EINVAL, "key too long (at most 250 bytes)");
  if ((uint64_t)h->extlen + h->keylen > h->bodylen)
    return bad(status, why, LCD_BIN_EINVAL,
               "total body length is less than extras + key");
  if (!r.value && h->bodylen != (uint32_t)h->extlen + h->keylen)
    return bad(status, why, LCD_BIN_EINVAL, "this opcode takes no value");
  if (r.swallow) {
    if (h->bodylen > LCD_PROTO_DATA_MAX)
      return bad(status, why, LCD_BIN_E2BIG,
                 "value too large (at most 1048576 bytes)");
    return LCD_BIN_SWALLOW;
  }
  if (h->bodylen > LCD_BIN_BODY_MAX)
    return bad(status, why, LCD_BIN_E2BIG,
               "total body length too large (a frame is at most 64 KiB)");
  if (len - LCD_BIN_HEADER < h->bodylen) return LCD_BIN_MORE;
  return LCD_BIN_FRAME;
}

static lcd_proto_cmd parse_bad(lcd_proto_req *req, const char *why) {
  req->error = why;
  return req->cmd = LCD_PROTO_BAD;
}

static lcd_proto_cmd parse_refused(lcd_proto_req *req, const char *why) {
  req->error = why;
  return req->cmd = LCD_PROTO_REFUSED;
}

/* increment / decrement: extras delta (8), initial (8), expiration (4). */
static lcd_proto_cmd parse_arith(const lcd_bin_header *h,
                                 const unsigned char *ext,
                                 lcd_proto_req *req) {
  int minus = h->opcode == LCD_BIN_DECREMENT ||
              h->opcode == LCD_BIN_DECREMENTQ;
  uint64_t delta = be64(ext), initial = be64(ext + 8);
  uint32_t exptime = be32(ext + 16);
  const lcd_proto_token *key = &req->keys[0];
  const char *why = lcd_proto_check_key(key);
  if (why) return parse_bad(req, why);
  if (lcd_proto_tally_name(key, &req->tally)) { /* a tally starts at 0 */
    if (delta == 0 || delta > (uint64_t)INT64_MAX)
      return parse_bad(req, "invalid delta (a tally takes "
                            "1..9223372036854775807)");
    req->delta = minus ? -(int64_t)delta : (int64_t)delta;
    return req->cmd = LCD_PROTO_TALLY;
  }
  if (minus)
    return parse_refused(req, "decrement is not supported on serial "
                              "counters: they only move forward (it works "
                              "on tally:<name>)");
  if (delta == 0 || delta > LC_BLOCK_MAX)
    return parse_bad(req, "invalid delta (a block is 1..1000000000 ids)");
  req->count = delta;
  if (exptime == 0xffffffffu) {
    req->meta.has_init = 1;
    req->meta.init = LCD_BIN_NO_CREATE;
  } else if (initial > 0) {
    if (initial > LC_VALUE_MAX)
      return parse_bad(req, "invalid initial value (at most 2^63-1)");
    req->meta.has_init = 1;
    req->meta.init = initial;
  }
  return req->cmd = LCD_PROTO_INCR;
}

lcd_proto_cmd lcd_bin_parse(const lcd_bin_header *h,
                            const unsigned char *frame, lcd_proto_req *req) {
  memset(req, 0, sizeof *req);
  const unsigned char *ext = frame + LCD_BIN_HEADER;
  const char *key = (const char *)ext + h->extlen;
  uint8_t op = h->opcode;
  req->meta.on = 1;
  req->meta.bin = 1;
  req->meta.bin_op = op;
  req->meta.opaque = (lcd_proto_token){(const char *)frame + 12, 4};
  req->verb = (lcd_proto_token){(const char *)frame + 1, 1};
  req->keys[0] = (lcd_proto_token){key, h->keylen};
  req->nkeys = h->keylen ? 1 : 0;
  switch (op) {
  case LCD_BIN_GETQ: case LCD_BIN_GETKQ: case LCD_BIN_INCREMENTQ:
  case LCD_BIN_DECREMENTQ: case LCD_BIN_QUITQ: case LCD_BIN_SETQ:
  case LCD_BIN_ADDQ: case LCD_BIN_REPLACEQ: case LCD_BIN_DELETEQ:
  case LCD_BIN_FLUSHQ: case LCD_BIN_APPENDQ: case LCD_BIN_PREPENDQ:
  case LCD_BIN_GATQ: case LCD_BIN_GATKQ:
    req->meta.quiet = 1;
    break;
  default: break;
  }
  switch (op) {
  case LCD_BIN_GET: case LCD_BIN_GETQ: case LCD_BIN_GETK: case LCD_BIN_GETKQ: {
    const char *why = lcd_proto_check_key(&req->keys[0]);
    if (why) return parse_bad(req, why);
    return req->cmd = LCD_PROTO_GET;
  }
  case LCD_BIN_INCREMENT: case LCD_BIN_DECREMENT:
  case LCD_BIN_INCREMENTQ: case LCD_BIN_DECREMENTQ:
    return parse_arith(h, ext, req);
  case LCD_BIN_QUIT: case LCD_BIN_QUITQ: return req->cmd = LCD_PROTO_QUIT;
  case LCD_BIN_NOOP: return req->cmd = LCD_PROTO_MN;
  case LCD_BIN_VERSION: return req->cmd = LCD_PROTO_VERSION;
  case LCD_BIN_VERBOSITY: return req->cmd = LCD_PROTO_VERBOSITY;
  case LCD_BIN_STAT: {
    const lcd_proto_token *k = &req->keys[0];
    req->nkeys = 0;
    if (k->len == 0) return req->cmd = LCD_PROTO_STATS;
    if (k->len == 8 && memcmp(k->s, "settings", 8) == 0) {
      req->stats_settings = 1;
      return req->cmd = LCD_PROTO_STATS;
    }
    if ((k->len == 5 && memcmp(k->s, "slabs", 5) == 0) ||
        (k->len == 5 && memcmp(k->s, "items", 5) == 0)) {
      req->stats_empty = 1;
      return req->cmd = LCD_PROTO_STATS;
    }
    return parse_bad(req, "unknown stat group (\"\", settings, slabs, "
                          "items)");
  }
  case LCD_BIN_SASL_LIST: case LCD_BIN_SASL_AUTH: case LCD_BIN_SASL_STEP:
    req->error = "SASL";
    return req->cmd = LCD_PROTO_UNKNOWN;
  default: /* the storage commands, delete, flush, touch, gat */
    return parse_refused(req, "not supported: logcounterd stores nothing; "
                              "counters move by increment only");
  }
}

int lcd_bin_next(const char *buf, size_t len, lcd_proto_req *req,
                 size_t *flen) {
  lcd_bin_header h;
  uint16_t st;
  const char *why;
  const unsigned char *p = (const unsigned char *)buf;
  if (lcd_bin_frame(p, len, &h, &st, &why) != LCD_BIN_FRAME) return -1;
  *flen = LCD_BIN_HEADER + (size_t)h.bodylen;
  return (int)lcd_bin_parse(&h, p, req);
}

static int user_byte_ok(unsigned char ch) {
  return ch > 0x20 && ch < 0x7f && ch != ':';
}

int lcd_sasl_plain_parse(const char *msg, size_t len, lcd_auth_span *user,
                         lcd_auth_span *pass) {
  const char *z1 = memchr(msg, '\0', len);
  if (!z1) return -1;
  size_t zlen = (size_t)(z1 - msg);
  const char *u = z1 + 1;
  const char *z2 = memchr(u, '\0', len - zlen - 1);
  if (!z2) return -1;
  size_t ulen = (size_t)(z2 - u);
  const char *pw = z2 + 1;
  size_t plen = len - zlen - 1 - ulen - 1;
  if (ulen == 0 || ulen > LCD_AUTH_USER_MAX || plen == 0 ||
      plen > LCD_AUTH_PASS_MAX || memchr(pw, '\0', plen))
    return -1;
  for (size_t i = 0; i < ulen; i++)
    if (!user_byte_ok((unsigned char)u[i])) return -1;
  if (zlen && (zlen != ulen || memcmp(msg, u, ulen) != 0)) return -1;
  *user = (lcd_auth_span){u, ulen};
  *pass = (lcd_auth_span){pw, plen};
  return 0;
}
