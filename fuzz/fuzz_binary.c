/*
 * fuzz_binary.c - libFuzzer target: logcounterd's binary-protocol parser
 * (tools/logcounterd/lcd_binary.c), fed the input as a connection's byte
 * stream, the way tools/logcounterd/lcd_binary_conn.c consumes it: frame a
 * request (header checks), parse a complete frame, skip a refused storage
 * command's body, stop at nonsense or a frame cut short.
 *
 * Properties checked besides "no crash, no out-of-bounds read" (each frame
 * is copied into a heap block of exactly its size):
 *  - framing: nonsense carries a status and a reason; a frame that is
 *    taken has magic 0x80, data type 0, extras + key <= body <= the 64 KiB
 *    bound (a swallowed one: <= LCD_PROTO_DATA_MAX), a key of at most 250
 *    bytes; every proper prefix of a complete frame asks for more, and what
 *    follows it changes nothing;
 *  - parsing: tokens lie inside the frame; the request is binary (meta.on,
 *    meta.bin, the opcode, the 4 opaque bytes, noreply 0); increment is a
 *    valid counter name (never "tally:...") and a count in 1..LC_BLOCK_MAX
 *    with an initial value of at most LC_VALUE_MAX or LCD_BIN_NO_CREATE;
 *    a tally change a valid NAME and a delta of +-1..INT64_MAX; a get one
 *    valid key; refused and bad requests carry a reason;
 *  - lcd_bin_next agrees with framing and parsing;
 *  - SASL PLAIN: the user and password lie inside the message, within
 *    their bounds, the password holds no NUL, the user no ':' or space.
 */
#include "fuzz.h"

#include "logcounter.h"
#include "lcd_binary.h"

static int inside(const lcd_proto_token *t, const unsigned char *f,
                  size_t n) {
  const char *b = (const char *)f;
  return t->len == 0 || (t->s >= b && t->s + t->len <= b + n);
}

static void check_frame(const unsigned char *data, size_t n,
                        const lcd_bin_header *h0) {
  unsigned char *f = (unsigned char *)fuzz_dup(data, n, 0);
  lcd_bin_header h;
  uint16_t st;
  const char *why;
  FUZZ_CHECK(lcd_bin_frame(f, n, &h, &st, &why) == LCD_BIN_FRAME);
  FUZZ_CHECK(h.opcode == h0->opcode && h.keylen == h0->keylen &&
             h.extlen == h0->extlen && h.bodylen == h0->bodylen &&
             h.opaque == h0->opaque && h.cas == h0->cas);
  FUZZ_CHECK(h.magic == LCD_BIN_MAGIC_REQ && h.datatype == 0);
  FUZZ_CHECK((uint32_t)h.extlen + h.keylen <= h.bodylen);
  FUZZ_CHECK(h.bodylen <= LCD_BIN_BODY_MAX && h.keylen <= LCD_PROTO_KEY_MAX);
  FUZZ_CHECK(n == LCD_BIN_HEADER + (size_t)h.bodylen);
  /* proper prefixes ask for more (a few, to stay fast) */
  for (size_t k = n > 8 ? n - 8 : 1; k < n; k++)
    FUZZ_CHECK(lcd_bin_frame(f, k, &h, &st, &why) == LCD_BIN_MORE);
  lcd_bin_frame(f, n, &h, &st, &why);
  lcd_proto_req req;
  lcd_proto_cmd cmd = lcd_bin_parse(&h, f, &req);
  FUZZ_CHECK(req.cmd == cmd);
  FUZZ_CHECK(req.meta.on && req.meta.bin && req.meta.bin_op == h.opcode);
  FUZZ_CHECK(req.meta.opaque.len == 4 && req.meta.opaque.s == (char *)f + 12);
  FUZZ_CHECK(req.noreply == 0 && req.more == 0);
  FUZZ_CHECK(inside(&req.keys[0], f, n) && inside(&req.tally, f, n));
  switch (cmd) {
  case LCD_PROTO_INCR:
    FUZZ_CHECK(lcd_proto_check_name(&req.keys[0]) == 0);
    FUZZ_CHECK(!lcd_proto_tally_name(&req.keys[0], &req.tally));
    FUZZ_CHECK(req.count >= 1 && req.count <= LC_BLOCK_MAX);
    FUZZ_CHECK(!req.meta.has_init || req.meta.init == LCD_BIN_NO_CREATE ||
               (req.meta.init >= 1 && req.meta.init <= LC_VALUE_MAX));
    FUZZ_CHECK(h.opcode == LCD_BIN_INCREMENT || h.opcode == LCD_BIN_INCREMENTQ);
    break;
  case LCD_PROTO_TALLY:
    FUZZ_CHECK(lcd_proto_check_name(&req.tally) == 0);
    FUZZ_CHECK(req.delta != 0 && req.delta != INT64_MIN);
    break;
  case LCD_PROTO_GET:
    FUZZ_CHECK(req.nkeys == 1 && lcd_proto_check_key(&req.keys[0]) == NULL);
    break;
  case LCD_PROTO_REFUSED:
  case LCD_PROTO_BAD: FUZZ_CHECK(req.error != NULL); break;
  case LCD_PROTO_UNKNOWN:
    FUZZ_CHECK(h.opcode == LCD_BIN_SASL_LIST || h.opcode == LCD_BIN_SASL_AUTH ||
               h.opcode == LCD_BIN_SASL_STEP);
    break;
  default: break;
  }
  if (h.opcode == LCD_BIN_SASL_AUTH) {
    const char *msg = (const char *)f + LCD_BIN_HEADER + h.extlen + h.keylen;
    size_t mlen = h.bodylen - h.extlen - h.keylen;
    lcd_auth_span u, p;
    char *m = fuzz_dup(msg, mlen, 0);
    if (lcd_sasl_plain_parse(m, mlen, &u, &p) == 0) {
      FUZZ_CHECK(u.s >= m && u.s + u.len <= m + mlen);
      FUZZ_CHECK(p.s >= m && p.s + p.len <= m + mlen);
      FUZZ_CHECK(u.len >= 1 && u.len <= LCD_AUTH_USER_MAX);
      FUZZ_CHECK(p.len >= 1 && p.len <= LCD_AUTH_PASS_MAX);
      FUZZ_CHECK(!memchr(p.s, '\0', p.len) && !memchr(u.s, ':', u.len) &&
                 !memchr(u.s, ' ', u.len));
    }
    free(m);
  }
  free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t off = 0;
  while (off < size) {
    const unsigned char *p = data + off;
    size_t left = size - off;
    lcd_bin_header h;
    uint16_t st = 0;
    const char *why = NULL;
    lcd_bin_frame_result r = lcd_bin_frame(p, left, &h, &st, &why);
    if (r == LCD_BIN_MORE) {
      FUZZ_CHECK(left < LCD_BIN_HEADER ||
                 left < LCD_BIN_HEADER + (size_t)h.bodylen);
      break;
    }
    if (r == LCD_BIN_BAD) {
      FUZZ_CHECK(st != 0 && why != NULL);
      break;
    }
    if (r == LCD_BIN_SWALLOW) {
      FUZZ_CHECK(h.bodylen <= LCD_PROTO_DATA_MAX);
      FUZZ_CHECK((uint32_t)h.extlen + h.keylen <= h.bodylen);
      off += LCD_BIN_HEADER + (size_t)h.bodylen;
      continue;
    }
    size_t n = LCD_BIN_HEADER + (size_t)h.bodylen;
    FUZZ_CHECK(n <= left);
    check_frame(p, n, &h);
    lcd_proto_req req;
    size_t flen = 0;
    FUZZ_CHECK(lcd_bin_next((const char *)p, left, &req, &flen) ==
                   (int)lcd_bin_parse(&h, p, &req) &&
               flen == n);
    off += n;
  }
  return 0;
}
