/*
 * test_binary.c - unit tests of logcounterd's binary-protocol parser
 * (tools/logcounterd/lcd_binary.c): the header checks of lcd_bin_frame
 * (magic, opcode, data type, extras and key lengths per opcode, the body
 * against extras + key and the 64 KiB bound, a frame cut short), the
 * requests lcd_bin_parse makes (increment with its initial value and
 * expiration, tallies, decrement refused on serial counters, the gets and
 * their quiet forms, noop, version, stat groups, quit, the refused storage
 * commands), the look-ahead lcd_bin_next, the response header and SASL
 * PLAIN's message.  Pure: no daemon, no memcached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logcounter.h"
#include "lcd_binary.h"

/* A request frame in buf: header, extras, key, value; its length. */
static size_t frame(unsigned char *buf, uint8_t op, const void *ext,
                    uint8_t extlen, const char *key, const void *val,
                    size_t vlen, uint32_t opaque) {
  size_t klen = key ? strlen(key) : 0;
  uint32_t body = (uint32_t)(extlen + klen + vlen);
  memset(buf, 0, LCD_BIN_HEADER);
  buf[0] = 0x80;
  buf[1] = op;
  buf[2] = (unsigned char)(klen >> 8);
  buf[3] = (unsigned char)klen;
  buf[4] = extlen;
  buf[8] = (unsigned char)(body >> 24);
  buf[9] = (unsigned char)(body >> 16);
  buf[10] = (unsigned char)(body >> 8);
  buf[11] = (unsigned char)body;
  buf[12] = (unsigned char)(opaque >> 24);
  buf[13] = (unsigned char)(opaque >> 16);
  buf[14] = (unsigned char)(opaque >> 8);
  buf[15] = (unsigned char)opaque;
  size_t n = LCD_BIN_HEADER;
  if (extlen) memcpy(buf + n, ext, extlen);
  n += extlen;
  if (klen) memcpy(buf + n, key, klen);
  n += klen;
  if (vlen) memcpy(buf + n, val, vlen);
  return n + vlen;
}

static void be64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (unsigned char)v;
}

/* increment/decrement extras. */
static void arith(unsigned char ext[20], uint64_t delta, uint64_t initial,
                  uint32_t exp) {
  be64(ext, delta);
  be64(ext + 8, initial);
  ext[16] = (unsigned char)(exp >> 24);
  ext[17] = (unsigned char)(exp >> 16);
  ext[18] = (unsigned char)(exp >> 8);
  ext[19] = (unsigned char)exp;
}

static void set_body(unsigned char *buf, uint32_t body) {
  buf[8] = (unsigned char)(body >> 24);
  buf[9] = (unsigned char)(body >> 16);
  buf[10] = (unsigned char)(body >> 8);
  buf[11] = (unsigned char)body;
}

/* Frames buf[0..n) and, when complete, parses it. */
static lcd_bin_frame_result check(const unsigned char *buf, size_t n,
                                  lcd_bin_header *h, uint16_t *st,
                                  const char **why) {
  *st = 0;
  *why = NULL;
  return lcd_bin_frame(buf, n, h, st, why);
}

static lcd_proto_cmd parse(const unsigned char *buf, size_t n,
                           lcd_proto_req *req) {
  lcd_bin_header h;
  uint16_t st;
  const char *why;
  assert_int_equal(check(buf, n, &h, &st, &why), LCD_BIN_FRAME);
  return lcd_bin_parse(&h, buf, req);
}

static int tok_eq(const lcd_proto_token *t, const char *s) {
  return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

static void test_header_fields(void **state) {
  (void)state;
  unsigned char b[512], ext[20];
  lcd_bin_header h;
  uint16_t st;
  const char *why;
  arith(ext, 1, 0, 0);
  size_t n = frame(b, LCD_BIN_INCREMENT, ext, 20, "abc", NULL, 0, 0x01020304);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_FRAME);
  assert_int_equal(h.opcode, LCD_BIN_INCREMENT);
  assert_int_equal(h.keylen, 3);
  assert_int_equal(h.extlen, 20);
  assert_int_equal(h.bodylen, 23);
  assert_int_equal(h.opaque, 0x01020304);
  /* cut short: the header, then the body */
  for (size_t k = 1; k < n; k++)
    assert_int_equal(check(b, k, &h, &st, &why), LCD_BIN_MORE);
  /* bad magic */
  b[0] = 0x81;
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  assert_non_null(strstr(why, "magic"));
  assert_int_equal(check(b, 1, &h, &st, &why), LCD_BIN_BAD);
  b[0] = 0x80;
  /* unknown opcodes */
  unsigned char unknown[] = {0x1f, 0x25, 0x30, 0x48, 0x83, 0xff};
  for (size_t i = 0; i < sizeof unknown; i++) {
    unsigned char u[LCD_BIN_HEADER];
    frame(u, unknown[i], NULL, 0, NULL, NULL, 0, 0);
    assert_int_equal(check(u, sizeof u, &h, &st, &why), LCD_BIN_BAD);
    assert_int_equal(st, LCD_BIN_EUNKNOWN);
  }
  /* data type */
  b[5] = 1;
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  assert_int_equal(st, LCD_BIN_EINVAL);
  b[5] = 0;
  /* extras length wrong for increment */
  n = frame(b, LCD_BIN_INCREMENT, ext, 19, "abc", NULL, 0, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  assert_non_null(strstr(why, "extras"));
  /* get with extras, get without a key, noop with a key */
  n = frame(b, LCD_BIN_GET, ext, 4, "abc", NULL, 0, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  n = frame(b, LCD_BIN_GET, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  assert_non_null(strstr(why, "needs a key"));
  n = frame(b, LCD_BIN_NOOP, NULL, 0, "k", NULL, 0, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  /* a value where none is taken */
  n = frame(b, LCD_BIN_GET, NULL, 0, "abc", "xy", 2, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  assert_non_null(strstr(why, "no value"));
  /* body shorter than extras + key */
  n = frame(b, LCD_BIN_GET, NULL, 0, "abc", NULL, 0, 0);
  set_body(b, 2);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_BAD);
  /* key too long: 251 bytes */
  char key[300];
  memset(key, 'k', 251);
  key[251] = '\0';
  n = frame(b, LCD_BIN_GET, NULL, 0, key, NULL, 0, 0);
  assert_int_equal(check(b, LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_BAD);
  assert_non_null(strstr(why, "key too long"));
  key[250] = '\0';
  n = frame(b, LCD_BIN_GET, NULL, 0, key, NULL, 0, 0);
  assert_int_equal(check(b, n, &h, &st, &why), LCD_BIN_FRAME);
}

static void test_body_bound(void **state) {
  (void)state;
  /* room for the key frame() writes after the header; check() is given
   * the header alone */
  unsigned char b[LCD_BIN_HEADER + 16];
  lcd_bin_header h;
  uint16_t st;
  const char *why;
  /* sasl auth takes a value: up to the bound, it waits for the body */
  frame(b, LCD_BIN_SASL_AUTH, NULL, 0, "PLAIN", NULL, 0, 0);
  set_body(b, LCD_BIN_BODY_MAX);
  assert_int_equal(check(b, (size_t)LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_MORE);
  set_body(b, LCD_BIN_BODY_MAX + 1);
  assert_int_equal(check(b, (size_t)LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_BAD);
  assert_int_equal(st, LCD_BIN_E2BIG);
  set_body(b, 0xffffffffu);
  assert_int_equal(check(b, (size_t)LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_BAD);
  /* a set's value is discarded, up to 1 MiB, once the header is seen */
  unsigned char e8[8] = {0};
  unsigned char s[64];
  frame(s, LCD_BIN_SET, e8, 8, "k", NULL, 0, 7);
  set_body(s, 9 + 100000);
  assert_int_equal(check(s, LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_SWALLOW);
  assert_int_equal(h.opaque, 7);
  set_body(s, LCD_PROTO_DATA_MAX + 1);
  assert_int_equal(check(s, LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_BAD);
  assert_int_equal(st, LCD_BIN_E2BIG);
  /* a set without its 8 bytes of extras is nonsense, not a swallow */
  frame(s, LCD_BIN_SET, NULL, 0, "k", "v", 1, 0);
  assert_int_equal(check(s, LCD_BIN_HEADER, &h, &st, &why), LCD_BIN_BAD);
}

static void test_increment(void **state) {
  (void)state;
  unsigned char b[512], ext[20];
  lcd_proto_req req;
  arith(ext, 5, 0, 0);
  size_t n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 9);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_INCR);
  assert_true(tok_eq(&req.keys[0], "orders"));
  assert_int_equal(req.count, 5);
  assert_int_equal(req.noreply, 0);
  assert_true(req.meta.on && req.meta.bin);
  assert_int_equal(req.meta.bin_op, LCD_BIN_INCREMENT);
  assert_int_equal(req.meta.quiet, 0);
  assert_int_equal(req.meta.has_init, 0);
  assert_int_equal(req.meta.opaque.len, 4);
  assert_memory_equal(req.meta.opaque.s, "\0\0\0\x09", 4);
  /* initial value: a new counter starts there */
  arith(ext, 1, 500, 0);
  n = frame(b, LCD_BIN_INCREMENTQ, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_INCR);
  assert_int_equal(req.meta.quiet, 1);
  assert_int_equal(req.meta.has_init, 1);
  assert_int_equal(req.meta.init, 500);
  /* expiration 0xffffffff: never create, whatever the initial value */
  arith(ext, 1, 500, 0xffffffffu);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_INCR);
  assert_int_equal(req.meta.has_init, 1);
  assert_true(req.meta.init == LCD_BIN_NO_CREATE);
  /* delta bounds */
  arith(ext, 0, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  arith(ext, LC_BLOCK_MAX + 1, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  arith(ext, LC_BLOCK_MAX, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_INCR);
  /* an initial value above 2^63-1 */
  arith(ext, 1, (uint64_t)INT64_MAX + 1, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  /* a bad name */
  arith(ext, 1, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "a b", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  /* decrement: refused on a serial counter */
  n = frame(b, LCD_BIN_DECREMENT, ext, 20, "orders", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  assert_non_null(strstr(req.error, "decrement"));
}

static void test_tally(void **state) {
  (void)state;
  unsigned char b[512], ext[20];
  lcd_proto_req req;
  arith(ext, 7, 100, 0);
  size_t n = frame(b, LCD_BIN_DECREMENTQ, ext, 20, "tally:stock", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_TALLY);
  assert_true(tok_eq(&req.tally, "stock"));
  assert_true(tok_eq(&req.keys[0], "tally:stock"));
  assert_int_equal(req.delta, -7);
  assert_int_equal(req.meta.quiet, 1);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "tally:stock", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_TALLY);
  assert_int_equal(req.delta, 7);
  arith(ext, (uint64_t)INT64_MAX + 1, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "tally:stock", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  arith(ext, 1, 0, 0);
  n = frame(b, LCD_BIN_INCREMENT, ext, 20, "tally:", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
}

static void test_gets(void **state) {
  (void)state;
  unsigned char b[512];
  lcd_proto_req req;
  struct {
    uint8_t op;
    int quiet;
  } g[] = {{LCD_BIN_GET, 0}, {LCD_BIN_GETQ, 1}, {LCD_BIN_GETK, 0},
           {LCD_BIN_GETKQ, 1}};
  for (size_t i = 0; i < 4; i++) {
    size_t n = frame(b, g[i].op, NULL, 0, "tally:t1", NULL, 0, 3);
    assert_int_equal(parse(b, n, &req), LCD_PROTO_GET);
    assert_int_equal(req.nkeys, 1);
    assert_true(tok_eq(&req.keys[0], "tally:t1"));
    assert_int_equal(req.meta.quiet, g[i].quiet);
    assert_int_equal(req.meta.bin_op, g[i].op);
    assert_int_equal(req.more, 0);
  }
  size_t n = frame(b, LCD_BIN_GET, NULL, 0, "bad\x01name", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
}

static void test_others(void **state) {
  (void)state;
  unsigned char b[512], e4[4] = {0}, e8[8] = {0};
  lcd_proto_req req;
  size_t n = frame(b, LCD_BIN_NOOP, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_MN);
  n = frame(b, LCD_BIN_VERSION, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_VERSION);
  n = frame(b, LCD_BIN_QUIT, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_QUIT);
  n = frame(b, LCD_BIN_QUITQ, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_QUIT);
  assert_int_equal(req.meta.quiet, 1);
  n = frame(b, LCD_BIN_VERBOSITY, e4, 4, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_VERBOSITY);
  n = frame(b, LCD_BIN_STAT, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_STATS);
  assert_int_equal(req.stats_settings, 0);
  n = frame(b, LCD_BIN_STAT, NULL, 0, "settings", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_STATS);
  assert_int_equal(req.stats_settings, 1);
  n = frame(b, LCD_BIN_STAT, NULL, 0, "items", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_STATS);
  assert_int_equal(req.stats_empty, 1);
  n = frame(b, LCD_BIN_STAT, NULL, 0, "detail", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_BAD);
  /* refused, nothing changed: delete, flush (with or without extras),
   * touch, gat; the storage commands are swallowed (test_body_bound) */
  n = frame(b, LCD_BIN_DELETE, NULL, 0, "k", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  n = frame(b, LCD_BIN_FLUSH, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  n = frame(b, LCD_BIN_FLUSHQ, e4, 4, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  n = frame(b, LCD_BIN_TOUCH, e4, 4, "k", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  n = frame(b, LCD_BIN_GATKQ, e4, 4, "k", NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_REFUSED);
  /* SASL: served by the caller */
  n = frame(b, LCD_BIN_SASL_LIST, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_UNKNOWN);
  n = frame(b, LCD_BIN_SASL_AUTH, NULL, 0, "PLAIN", "\0u\0p", 4, 0);
  assert_int_equal(parse(b, n, &req), LCD_PROTO_UNKNOWN);
  (void)e8;
}

static void test_next(void **state) {
  (void)state;
  unsigned char b[512], ext[20];
  lcd_proto_req req;
  size_t flen = 0;
  arith(ext, 2, 0, 0);
  size_t n = frame(b, LCD_BIN_INCREMENT, ext, 20, "c1", NULL, 0, 0);
  size_t m = frame(b + n, LCD_BIN_NOOP, NULL, 0, NULL, NULL, 0, 0);
  assert_int_equal(lcd_bin_next((const char *)b, n + m, &req, &flen),
                   LCD_PROTO_INCR);
  assert_int_equal(flen, n);
  assert_int_equal(req.count, 2);
  assert_int_equal(lcd_bin_next((const char *)b, n - 1, &req, &flen), -1);
  assert_int_equal(lcd_bin_next((const char *)b + n, m, &req, &flen),
                   LCD_PROTO_MN);
  b[n] = 'g'; /* not a binary frame */
  assert_int_equal(lcd_bin_next((const char *)b + n, m, &req, &flen), -1);
}

static void test_encode(void **state) {
  (void)state;
  unsigned char h[LCD_BIN_HEADER];
  lcd_bin_encode(h, LCD_BIN_GETK, LCD_BIN_ENOENT, 0xa1b2c3d4, 0x0102030405060708ULL,
                 4, 3, 9);
  static const unsigned char want[LCD_BIN_HEADER] = {
      0x81, 0x0c, 0x00, 0x03, 0x04, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10,
      0xa1, 0xb2, 0xc3, 0xd4, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  assert_memory_equal(h, want, sizeof want);
}

static void test_sasl_plain(void **state) {
  (void)state;
  lcd_auth_span u, p;
  static const char m1[] = "\0alice\0s3cret pw";
  assert_int_equal(lcd_sasl_plain_parse(m1, sizeof m1 - 1, &u, &p), 0);
  assert_int_equal(u.len, 5);
  assert_memory_equal(u.s, "alice", 5);
  assert_int_equal(p.len, 9);
  assert_memory_equal(p.s, "s3cret pw", 9);
  static const char m2[] = "alice\0alice\0pw";
  assert_int_equal(lcd_sasl_plain_parse(m2, sizeof m2 - 1, &u, &p), 0);
  static const char m3[] = "bob\0alice\0pw"; /* authzid not the user */
  assert_int_equal(lcd_sasl_plain_parse(m3, sizeof m3 - 1, &u, &p), -1);
  static const char m4[] = "\0alice\0"; /* empty password */
  assert_int_equal(lcd_sasl_plain_parse(m4, sizeof m4 - 1, &u, &p), -1);
  static const char m5[] = "\0\0pw"; /* empty user */
  assert_int_equal(lcd_sasl_plain_parse(m5, sizeof m5 - 1, &u, &p), -1);
  static const char m6[] = "\0alice pw"; /* one NUL */
  assert_int_equal(lcd_sasl_plain_parse(m6, sizeof m6 - 1, &u, &p), -1);
  static const char m7[] = "\0al:ce\0pw";
  assert_int_equal(lcd_sasl_plain_parse(m7, sizeof m7 - 1, &u, &p), -1);
  static const char m8[] = "\0alice\0p\0w";
  assert_int_equal(lcd_sasl_plain_parse(m8, sizeof m8 - 1, &u, &p), -1);
  assert_int_equal(lcd_sasl_plain_parse("", 0, &u, &p), -1);
  char big[400];
  big[0] = '\0';
  memset(big + 1, 'u', 65);
  big[66] = '\0';
  big[67] = 'p';
  assert_int_equal(lcd_sasl_plain_parse(big, 68, &u, &p), -1);
  big[65] = '\0'; /* a 64-byte user */
  big[66] = 'p';
  assert_int_equal(lcd_sasl_plain_parse(big, 67, &u, &p), 0);
  assert_int_equal(u.len, 64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_fields), cmocka_unit_test(test_body_bound),
      cmocka_unit_test(test_increment),     cmocka_unit_test(test_tally),
      cmocka_unit_test(test_gets),          cmocka_unit_test(test_others),
      cmocka_unit_test(test_next),          cmocka_unit_test(test_encode),
      cmocka_unit_test(test_sasl_plain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
