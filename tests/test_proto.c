/*
 * test_proto.c - unit tests of logcounterd's request parser (tools/logcounterd/lcd_proto.c):
 * framing (line ends, the length bound, the binary-protocol byte), every
 * command shape the daemon answers, noreply, counter names, counts, the
 * key limit of get, the refused commands and the data blocks they carry,
 * numbers, and the tally namespace (incr/decr tally:NAME, get of tally
 * keys, stats tally NAME, decr of a serial counter refused).  No
 * memcached, no log: the parser is pure.  Also the names a job holds
 * (lcd_job.h: the check that keeps two jobs of a counter in flight at once).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logcounter.h"
#include "lcd_proto.h"
#include "lcd_job.h" /* the names a job holds (pure) */

/* Parses a NUL-terminated line. */
static lcd_proto_cmd parse(const char *line, lcd_proto_req *req) {
  return lcd_proto_parse(line, strlen(line), req);
}

static int tok_eq(const lcd_proto_token *t, const char *s) {
  return t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

#define assert_tok(tok, want)                                          \
  do {                                                                 \
    if (!tok_eq(&(tok), (want)))                                       \
      fail_msg("token '%.*s', expected '%s'", (int)(tok).len, (tok).s, \
               (want));                                                \
  } while (0)

#define assert_error_has(req, text)                                           \
  do {                                                                        \
    if (!(req).error || !strstr((req).error, (text)))                         \
      fail_msg("error '%s' lacks '%s'", (req).error ? (req).error : "(null)", \
               (text));                                                       \
  } while (0)

/* Lines that must parse as want, each with a reason and noreply. */
typedef struct err_case {
  const char *line, *why;
  int noreply;
} err_case;

static void check_error_cases(const err_case *cases, size_t n,
                              lcd_proto_cmd want) {
  lcd_proto_req r;
  for (size_t i = 0; i < n; i++) {
    if (parse(cases[i].line, &r) != want)
      fail_msg("'%s' parsed as %d, expected %d", cases[i].line, (int)r.cmd,
               (int)want);
    assert_error_has(r, cases[i].why);
    assert_int_equal(r.noreply, cases[i].noreply);
    assert_int_equal(r.data_len, 0);
    assert_int_equal(r.close, 0);
  }
}

/* "incr tally:" and a name of len bytes, then " 1\r\n", in buf. */
static const char *tally_line(char *buf, size_t size, size_t len) {
  int n = snprintf(buf, size, "incr tally:");
  assert_true((size_t)n + len + 5 <= size);
  memset(buf + n, 'n', len);
  snprintf(buf + n + len, 5, " 1\r\n");
  return buf;
}

/* ---- framing ----------------------------------------------------------- */

static void test_frame_lines(void **state) {
  (void)state;
  size_t len = 0;
  assert_int_equal(lcd_proto_frame("", 0, &len), LCD_PROTO_FRAME_MORE);
  assert_int_equal(lcd_proto_frame("incr a 1", 8, &len), LCD_PROTO_FRAME_MORE);
  assert_int_equal(lcd_proto_frame("incr a 1\r", 9, &len),
                   LCD_PROTO_FRAME_MORE);
  assert_int_equal(lcd_proto_frame("incr a 1\r\nget a\r\n", 17, &len),
                   LCD_PROTO_FRAME_LINE);
  assert_int_equal(len, 10); /* the first line only */
  assert_int_equal(lcd_proto_frame("version\nquit\n", 13, &len),
                   LCD_PROTO_FRAME_LINE); /* a bare "\n" ends a line */
  assert_int_equal(len, 8);
  assert_int_equal(lcd_proto_frame("\r\n", 2, &len), LCD_PROTO_FRAME_LINE);
  assert_int_equal(len, 2);
}

static void test_frame_binary(void **state) {
  (void)state;
  size_t len = 0;
  const char bin[] = "\x80\x05\x00\x03incr\r\n";
  assert_int_equal(lcd_proto_frame(bin, sizeof bin - 1, &len),
                   LCD_PROTO_FRAME_BINARY);
  assert_int_equal(lcd_proto_frame("\x80", 1, &len), LCD_PROTO_FRAME_BINARY);
  /* Only the first byte of a request tells. */
  assert_int_equal(lcd_proto_frame("get \x80\r\n", 7, &len),
                   LCD_PROTO_FRAME_LINE);
}

static void test_frame_long_lines(void **state) {
  (void)state;
  static char buf[LCD_PROTO_LINE_MAX + 64];
  size_t max = LCD_PROTO_LINE_MAX, len = 0;
  memset(buf, 'a', max + 64);
  /* Exactly the limit, with "\r\n" or "\n": accepted. */
  memcpy(buf + max, "\r\n", 2);
  assert_int_equal(lcd_proto_frame(buf, max + 2, &len), LCD_PROTO_FRAME_LINE);
  assert_int_equal(len, max + 2);
  buf[max] = '\n';
  assert_int_equal(lcd_proto_frame(buf, max + 1, &len), LCD_PROTO_FRAME_LINE);
  assert_int_equal(len, max + 1);
  /* One byte more: too long, with or without its terminator seen. */
  memset(buf, 'a', max + 64);
  memcpy(buf + max + 1, "\r\n", 2);
  assert_int_equal(lcd_proto_frame(buf, max + 3, &len),
                   LCD_PROTO_FRAME_TOO_LONG);
  memset(buf, 'a', max + 64);
  assert_int_equal(lcd_proto_frame(buf, max + 2, &len),
                   LCD_PROTO_FRAME_TOO_LONG);
  assert_int_equal(lcd_proto_frame(buf, max + 64, &len),
                   LCD_PROTO_FRAME_TOO_LONG);
  /* Still below the limit and unfinished: wait. */
  assert_int_equal(lcd_proto_frame(buf, max, &len), LCD_PROTO_FRAME_MORE);
}

/* ---- incr -------------------------------------------------------------- */

static void test_incr(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("incr orders 1\r\n", &r), LCD_PROTO_INCR);
  assert_tok(r.keys[0], "orders");
  assert_int_equal(r.nkeys, 1);
  assert_int_equal(r.count, 1);
  assert_int_equal(r.noreply, 0);
  assert_tok(r.verb, "incr");

  assert_int_equal(parse("incr   orders   250  noreply\r\n", &r),
                   LCD_PROTO_INCR);
  assert_tok(r.keys[0], "orders");
  assert_int_equal(r.count, 250);
  assert_int_equal(r.noreply, 1);

  /* Without "\r\n", or with a bare "\n". */
  assert_int_equal(parse("incr a 7", &r), LCD_PROTO_INCR);
  assert_int_equal(r.count, 7);
  assert_int_equal(parse("incr a 7\n", &r), LCD_PROTO_INCR);
  assert_int_equal(r.count, 7);

  /* The largest block. */
  char line[64];
  snprintf(line, sizeof line, "incr a %llu\r\n",
           (unsigned long long)LC_BLOCK_MAX);
  assert_int_equal(parse(line, &r), LCD_PROTO_INCR);
  assert_int_equal(r.count, LC_BLOCK_MAX);
}

static void test_incr_bad_numbers(void **state) {
  (void)state;
  const char *bad[] = {"incr a 0",
                       "incr a -1",
                       "incr a +1",
                       "incr a 1x",
                       "incr a x",
                       "incr a 1.5",
                       "incr a 0x10",
                       "incr a 1000000001",
                       "incr a 18446744073709551615",
                       "incr a 18446744073709551616",
                       "incr a 99999999999999999999999",
                       "incr a \t1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lcd_proto_req r;
    if (parse(bad[i], &r) != LCD_PROTO_BAD)
      fail_msg("'%s' was accepted", bad[i]);
    assert_string_equal(r.error, "invalid numeric delta argument");
    assert_int_equal(r.close, 0);
  }
}

static void test_incr_bad_shape(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("incr\r\n", &r), LCD_PROTO_BAD);
  assert_error_has(r, "usage: incr");
  assert_int_equal(parse("incr a\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("incr a 1 2\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("incr a 1 noreply x\r\n", &r), LCD_PROTO_BAD);
  /* noreply is honoured even on a malformed line: the client expects
   * silence. */
  assert_int_equal(parse("incr a noreply\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(r.noreply, 1);
  assert_int_equal(parse("incr a x noreply\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(r.noreply, 1);
  /* Case matters, as in memcached. */
  assert_int_equal(parse("INCR a 1\r\n", &r), LCD_PROTO_UNKNOWN);
  assert_int_equal(parse("incr a 1 NOREPLY\r\n", &r), LCD_PROTO_BAD);
}

static void test_names(void **state) {
  (void)state;
  lcd_proto_req r;
  char line[LC_NAME_MAX + 64];
  char name[LC_NAME_MAX + 2];
  memset(name, 'n', sizeof name);
  name[LC_NAME_MAX] = '\0';
  snprintf(line, sizeof line, "incr %s 1", name);
  assert_int_equal(parse(line, &r), LCD_PROTO_INCR);
  assert_int_equal(r.keys[0].len, LC_NAME_MAX);
  name[LC_NAME_MAX] = 'n';
  name[LC_NAME_MAX + 1] = '\0';
  snprintf(line, sizeof line, "incr %s 1", name);
  assert_int_equal(parse(line, &r), LCD_PROTO_BAD);
  assert_string_equal(r.error, "invalid counter name");

  assert_int_equal(parse("incr a:b/c-d_e.f~!# 1", &r), LCD_PROTO_INCR);
  const char *bad[] = {"incr a\tb 1", "incr \x7f 1", "incr caf\xc3\xa9 1",
                       "incr a\rb 1", "incr a\x01 1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (parse(bad[i], &r) != LCD_PROTO_BAD)
      fail_msg("name in '%s' was accepted", bad[i]);
    assert_string_equal(r.error, "invalid counter name");
  }
  /* A NUL byte inside a name must not shorten it into a valid one. */
  const char nul[] = "incr ab\0c 1\r\n";
  assert_int_equal(lcd_proto_parse(nul, sizeof nul - 1, &r), LCD_PROTO_BAD);
  assert_string_equal(r.error, "invalid counter name");
  lcd_proto_token t = {"ab\0c", 4};
  assert_int_equal(lcd_proto_check_name(&t), LC_ENAME);
  t.len = 2;
  assert_int_equal(lcd_proto_check_name(&t), 0);
  t.len = 0;
  assert_int_equal(lcd_proto_check_name(&t), LC_ENAME);
}

/* ---- get --------------------------------------------------------------- */

static void test_get(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("get a\r\n", &r), LCD_PROTO_GET);
  assert_int_equal(r.nkeys, 1);
  assert_int_equal(r.gets, 0);
  assert_tok(r.keys[0], "a");
  assert_int_equal(parse("gets a bb  ccc\r\n", &r), LCD_PROTO_GET);
  assert_int_equal(r.gets, 1);
  assert_int_equal(r.nkeys, 3);
  assert_tok(r.keys[1], "bb");
  assert_tok(r.keys[2], "ccc");
  /* "noreply" is just a name here. */
  assert_int_equal(parse("get noreply\r\n", &r), LCD_PROTO_GET);
  assert_int_equal(r.noreply, 0);
  assert_int_equal(parse("get\r\n", &r), LCD_PROTO_BAD);
  assert_error_has(r, "usage: get");
  assert_int_equal(parse("get a b\x01\r\n", &r), LCD_PROTO_BAD);
  assert_string_equal(r.error, "invalid counter name");
}

/* More keys than one job takes: the first LCD_PROTO_MAX_KEYS, and where
 * the rest of the line starts. */
static void test_get_many_keys(void **state) {
  (void)state;
  char line[LCD_PROTO_LINE_MAX];
  lcd_proto_req r;
  size_t n = (size_t)snprintf(line, sizeof line, "get");
  for (int i = 0; i < LCD_PROTO_MAX_KEYS; i++)
    n += (size_t)snprintf(line + n, sizeof line - n, " k%d", i);
  assert_int_equal(lcd_proto_parse(line, n, &r), LCD_PROTO_GET);
  assert_int_equal(r.nkeys, LCD_PROTO_MAX_KEYS);
  assert_int_equal(r.more, 0);
  assert_tok(r.keys[LCD_PROTO_MAX_KEYS - 1], "k127");
  size_t at = n + 1;
  n += (size_t)snprintf(line + n, sizeof line - n, " one-more two\r\n");
  assert_int_equal(lcd_proto_parse(line, n, &r), LCD_PROTO_GET);
  assert_int_equal(r.nkeys, LCD_PROTO_MAX_KEYS);
  assert_int_equal(r.more, 1);
  assert_int_equal(r.rest, at);
  assert_memory_equal(line + r.rest, "one-more", 8);
  /* a bad key among the first is refused at once */
  line[at - 3] = '\x01';
  assert_int_equal(lcd_proto_parse(line, n, &r), LCD_PROTO_BAD);
}

static int piece(const char *buf, lcd_proto_req *r, size_t *used) {
  return lcd_proto_get_piece(buf, strlen(buf), r, used);
}

static void test_get_pieces(void **state) {
  (void)state;
  lcd_proto_req r;
  size_t used = 99;
  assert_int_equal(piece("a bb\r\n", &r, &used), 1);
  assert_int_equal(r.nkeys, 2);
  assert_tok(r.keys[1], "bb");
  assert_int_equal(r.more, 0);
  assert_int_equal(used, 6);
  /* a key not yet ended waits for the next piece */
  assert_int_equal(piece("a bb", &r, &used), 1);
  assert_int_equal(r.nkeys, 1);
  assert_int_equal(r.more, 1);
  assert_int_equal(used, 2);
  assert_int_equal(piece("bb", &r, &used), 0);
  assert_int_equal(piece("bb\r", &r, &used), 0); /* "\r\n" or a key byte */
  assert_int_equal(piece("", &r, &used), 0);
  /* spaces alone are consumed; the line end ends it with no key */
  assert_int_equal(piece("   ", &r, &used), 1);
  assert_int_equal(r.nkeys, 0);
  assert_int_equal(used, 3);
  assert_int_equal(piece("  \n", &r, &used), 1);
  assert_int_equal(r.nkeys, 0);
  assert_int_equal(r.more, 0);
  assert_int_equal(used, 3);
  assert_int_equal(piece("tally:t x\n", &r, &used), 1);
  assert_int_equal(r.nkeys, 2);
  /* at most LCD_PROTO_MAX_KEYS at a time */
  char buf[LCD_PROTO_LINE_MAX];
  size_t n = 0;
  for (int i = 0; i < LCD_PROTO_MAX_KEYS + 5; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "k%d ", i);
  snprintf(buf + n, sizeof buf - n, "\r\n");
  assert_int_equal(piece(buf, &r, &used), 1);
  assert_int_equal(r.nkeys, LCD_PROTO_MAX_KEYS);
  assert_int_equal(r.more, 1);
  assert_int_equal(piece(buf + used, &r, &used), 1);
  assert_int_equal(r.nkeys, 5);
  assert_int_equal(r.more, 0);
  /* bad keys: the bytes before them, then the reason */
  assert_int_equal(piece("a b\x01 c\r\n", &r, &used), -1);
  assert_int_equal(used, 2);
  assert_string_equal(r.error, "invalid counter name");
  memset(buf, 'x', 300);
  buf[300] = '\0';
  assert_int_equal(piece(buf, &r, &used), -1);
  assert_error_has(r, "key too long");
  /* the start of a line too long to frame */
  int gets = -1;
  assert_int_equal(lcd_proto_get_start("gets a", 6, &gets), 5);
  assert_int_equal(gets, 1);
  assert_int_equal(lcd_proto_get_start("get a", 5, &gets), 4);
  assert_int_equal(gets, 0);
  assert_int_equal(lcd_proto_get_start("getx a", 6, &gets), 0);
  assert_int_equal(lcd_proto_get_start("incr a", 6, &gets), 0);
}

/* ---- meta commands ------------------------------------------------------ */

static void test_meta_ma(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("ma orders\r\n", &r), LCD_PROTO_INCR);
  assert_int_equal(r.meta.on, 1);
  assert_int_equal(r.count, 1);
  assert_tok(r.keys[0], "orders");
  assert_int_equal(parse("ma orders D500 v q Oab12 k t c\r\n", &r),
                   LCD_PROTO_INCR);
  assert_int_equal(r.count, 500);
  assert_int_equal(r.meta.value, 1);
  assert_int_equal(r.meta.quiet, 1);
  assert_int_equal(r.meta.nret, 4);
  assert_memory_equal(r.meta.ret, "Okt" "c", 4);
  assert_tok(r.meta.opaque, "ab12");
  assert_int_equal(r.meta.has_init, 0);
  assert_int_equal(parse("ma o N0 J1000 T0 MI M+\r\n", &r), LCD_PROTO_INCR);
  assert_int_equal(r.meta.has_init, 1);
  assert_true(r.meta.init == 1000);
  assert_int_equal(parse("ma o J1000\r\n", &r), LCD_PROTO_INCR);
  assert_int_equal(r.meta.has_init, 0); /* J needs N, as in memcached */
  assert_int_equal(parse("ma tally:t D7 MD v\r\n", &r), LCD_PROTO_TALLY);
  assert_true(r.delta == -7);
  assert_tok(r.tally, "t");
  assert_int_equal(parse("ma tally:t M-\r\n", &r), LCD_PROTO_TALLY);
  assert_true(r.delta == -1);
  assert_int_equal(parse("ma tally:t\r\n", &r), LCD_PROTO_TALLY);
  assert_true(r.delta == 1);
  const err_case bad[] = {
      {"ma\r\n", "usage: ma", 0},
      {"ma o D0\r\n", "delta", 0},
      {"ma o D1000000001\r\n", "at most 1000000000", 0},
      {"ma o Dx\r\n", "delta", 0},
      {"ma o MD\r\n", "only move forward", 0},
      {"ma o Mx\r\n", "invalid mode", 0},
      {"ma o b\r\n", "base64", 0},
      {"ma o C12\r\n", "cas", 0},
      {"ma o vv\r\n", "take no token", 0},
      {"ma o O\r\n", "opaque", 0},
      {"ma o O123456789012345678901234567890123\r\n", "opaque", 0},
      {"ma o Z\r\n", "invalid flag", 0},
      {"ma o Nx\r\n", "TTL", 0},
      {"ma bad\x01 v\r\n", "invalid counter name", 0},
      {"ma tally: v\r\n", "invalid tally name", 0},
      {"ma tally:t N0 J5\r\n", "serial counters", 0},
  };
  check_error_cases(bad, sizeof bad / sizeof bad[0], LCD_PROTO_BAD);
}

static void test_meta_mg_mn(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("mg orders v\r\n", &r), LCD_PROTO_GET);
  assert_int_equal(r.meta.on, 1);
  assert_int_equal(r.nkeys, 1);
  assert_int_equal(r.more, 0);
  assert_int_equal(r.meta.value, 1);
  assert_int_equal(parse("mg tally:t s f k O1 u q t c\r\n", &r),
                   LCD_PROTO_GET);
  assert_int_equal(r.meta.nret, 6);
  assert_memory_equal(r.meta.ret, "sfkOtc", 6);
  assert_int_equal(r.meta.quiet, 1);
  assert_int_equal(parse("mn\r\n", &r), LCD_PROTO_MN);
  const err_case bad[] = {
      {"mg\r\n", "usage: mg", 0},
      {"mg o h\r\n", "not supported by mg", 0},
      {"mg o N30\r\n", "not supported by mg", 0},
      {"mg o b\r\n", "base64", 0},
      {"mg o x\r\n", "invalid flag", 0},
      {"mg o D5\r\n", "invalid flag", 0},
      {"mg bad\x01\r\n", "invalid counter name", 0},
      {"mn x\r\n", "usage: mn", 0},
  };
  check_error_cases(bad, sizeof bad / sizeof bad[0], LCD_PROTO_BAD);
}

/* ---- the small commands ------------------------------------------------ */

static void test_small_commands(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("stats\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_settings, 0);
  assert_int_equal(parse("stats settings\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_settings, 1);
  assert_int_equal(parse("stats slabs\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_empty, 1);
  assert_int_equal(parse("stats items\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_empty, 1);
  assert_int_equal(parse("stats\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_empty, 0);
  assert_int_equal(parse("stats sizes\r\n", &r), LCD_PROTO_BAD);
  assert_error_has(r, "unknown stats group");
  assert_int_equal(parse("version\r\n", &r), LCD_PROTO_VERSION);
  assert_int_equal(parse("version 2\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("quit\r\n", &r), LCD_PROTO_QUIT);
  assert_int_equal(parse("quit now\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("verbosity 1\r\n", &r), LCD_PROTO_VERBOSITY);
  assert_int_equal(r.noreply, 0);
  assert_int_equal(parse("verbosity 1 noreply\r\n", &r), LCD_PROTO_VERBOSITY);
  assert_int_equal(r.noreply, 1);
  assert_int_equal(parse("verbosity\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("verbosity x\r\n", &r), LCD_PROTO_BAD);
}

static void test_unknown(void **state) {
  (void)state;
  lcd_proto_req r;
  const char *lines[] = {
      "",           "\r\n",         "   \r\n",  "helo\r\n", "shutdown\r\n",
      "getx a\r\n", "\x01\x02\r\n", "GET a\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    if (parse(lines[i], &r) != LCD_PROTO_UNKNOWN)
      fail_msg("'%s' is not UNKNOWN", lines[i]);
}

/* ---- refused commands -------------------------------------------------- */

/* The admin socket's verbs and the CLI's log commands: refused on a data
 * port, naming the admin socket, never unknown (ERROR) and never served. */
static void test_admin_refused(void **state) {
  (void)state;
  const char *lines[] = {"void orders 42 cancelled\r\n", "prune orders 1 0 0\r\n",
                         "verify orders\r\n",  "dump orders\r\n",
                         "gaps orders\r\n",    "release orders\r\n",
                         "adopt orders 9\r\n", "advance orders 9\r\n",
                         "restore orders\r\n", "backup /tmp/x\r\n",
                         "records orders\r\n", "ledger orders\r\n",
                         "hello\r\n",          "tally-flush 0 0\r\n",
                         "counters\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    lcd_proto_req r;
    if (parse(lines[i], &r) != LCD_PROTO_REFUSED || r.error == NULL ||
        strstr(r.error, "admin socket") == NULL)
      fail_msg("'%s' is not refused for the admin socket", lines[i]);
  }
  /* "admin" alone asks for the relay (lcd_relay.c); with words, usage */
  lcd_proto_req r;
  assert_int_equal(parse("admin\r\n", &r), LCD_PROTO_ADMIN);
  assert_int_equal(parse("admin now\r\n", &r), LCD_PROTO_BAD);
  assert_non_null(strstr(r.error, "usage: admin"));
}

static void test_refused_without_data(void **state) {
  (void)state;
  const err_case cases[] = {
      {"decr a 1\r\n", "not supported on serial counters", 0},
      {"decr a 1 noreply\r\n", "only move forward", 1},
      {"decr tallyx 1\r\n", "decr works on tally:<name>", 0},
      {"decr a\r\n", "serial counters", 0},
      {"delete a\r\n", "never deleted", 0},
      {"delete a noreply\r\n", "never deleted", 1},
      {"flush_all\r\n", "never deleted", 0},
      {"flush_all 0 noreply\r\n", "never deleted", 1},
      {"touch a 10\r\n", "never expire", 0},
      {"gat 10 a\r\n", "never expire", 0},
      {"gats 10 a b\r\n", "never expire", 0},
      {"md a\r\n", "never deleted", 0},
      {"me a\r\n", "meta debug", 0},
  };
  check_error_cases(cases, sizeof cases / sizeof cases[0], LCD_PROTO_REFUSED);
}

static void test_refused_storage(void **state) {
  (void)state;
  lcd_proto_req r;
  const char *verbs[] = {"set", "add", "replace", "append", "prepend"};
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
    char line[64];
    snprintf(line, sizeof line, "%s a 0 0 5\r\n", verbs[i]);
    assert_int_equal(parse(line, &r), LCD_PROTO_REFUSED);
    assert_int_equal(r.data_len, 7); /* 5 bytes and "\r\n" */
    assert_int_equal(r.noreply, 0);
    assert_error_has(r, "only by incr");
    snprintf(line, sizeof line, "%s a 0 0 0 noreply\r\n", verbs[i]);
    assert_int_equal(parse(line, &r), LCD_PROTO_REFUSED);
    assert_int_equal(r.data_len, 2);
    assert_int_equal(r.noreply, 1);
  }
  assert_int_equal(parse("cas a 0 0 3 99\r\n", &r), LCD_PROTO_REFUSED);
  assert_int_equal(r.data_len, 5);
  assert_int_equal(parse("cas a 0 0 3 99 noreply\r\n", &r), LCD_PROTO_REFUSED);
  assert_int_equal(r.noreply, 1);
  assert_int_equal(parse("ms a 4 T0\r\n", &r), LCD_PROTO_REFUSED);
  assert_int_equal(r.data_len, 6);

  /* Malformed: no data length to trust, nothing swallowed. */
  assert_int_equal(parse("set a 0 0\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(r.data_len, 0);
  assert_int_equal(parse("set a 0 0 x\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("set a 0 0 -1\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("set a 0 0 1 2 3\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(parse("cas a 0 0 3\r\n", &r), LCD_PROTO_BAD);
  assert_int_equal(r.close, 0);

  /* The largest block still read; one more closes the connection. */
  char line[64];
  snprintf(line, sizeof line, "set a 0 0 %d\r\n", LCD_PROTO_DATA_MAX);
  assert_int_equal(parse(line, &r), LCD_PROTO_REFUSED);
  assert_int_equal(r.data_len, LCD_PROTO_DATA_MAX + 2);
  snprintf(line, sizeof line, "set a 0 0 %d\r\n", LCD_PROTO_DATA_MAX + 1);
  assert_int_equal(parse(line, &r), LCD_PROTO_BAD);
  assert_int_equal(r.close, 1);
  assert_int_equal(parse("set a 0 0 99999999999999999999999\r\n", &r),
                   LCD_PROTO_BAD);
}

/* ---- numbers ----------------------------------------------------------- */

static void test_numbers(void **state) {
  (void)state;
  uint64_t v = 42;
  assert_int_equal(lcd_proto_number("0", 1, &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(lcd_proto_number("18446744073709551615", 20, &v), 0);
  assert_true(v == UINT64_MAX);
  assert_int_equal(lcd_proto_number("18446744073709551616", 20, &v), -1);
  assert_int_equal(lcd_proto_number("00000000000000000000001", 23, &v), -1);
  assert_int_equal(lcd_proto_number("", 0, &v), -1);
  assert_int_equal(lcd_proto_number("12", 1, &v), 0); /* only len bytes */
  assert_int_equal(v, 1);
  assert_int_equal(lcd_proto_number(" 1", 2, &v), -1);
  assert_int_equal(lcd_proto_number("1 ", 2, &v), -1);
}

/* ---- tallies ----------------------------------------------------------- */

static void test_tally_incr_decr(void **state) {
  (void)state;
  lcd_proto_req r;
  assert_int_equal(parse("incr tally:views 5\r\n", &r), LCD_PROTO_TALLY);
  assert_tok(r.keys[0], "tally:views");
  assert_tok(r.tally, "views");
  assert_int_equal(r.nkeys, 1);
  assert_true(r.delta == 5);
  assert_int_equal(r.noreply, 0);
  assert_int_equal(parse("decr  tally:views  7  noreply\r\n", &r),
                   LCD_PROTO_TALLY);
  assert_tok(r.tally, "views");
  assert_true(r.delta == -7);
  assert_int_equal(r.noreply, 1);
  /* The whole signed range but INT64_MIN, both ways. */
  assert_int_equal(parse("incr tally:x 9223372036854775807", &r),
                   LCD_PROTO_TALLY);
  assert_true(r.delta == INT64_MAX);
  assert_int_equal(parse("decr tally:x 9223372036854775807", &r),
                   LCD_PROTO_TALLY);
  assert_true(r.delta == -INT64_MAX);
  /* The count limit of serial counters does not apply to tallies. */
  char line[80];
  snprintf(line, sizeof line, "incr tally:x %llu\r\n",
           (unsigned long long)LC_BLOCK_MAX + 1);
  assert_int_equal(parse(line, &r), LCD_PROTO_TALLY);
  assert_true(r.delta == (int64_t)LC_BLOCK_MAX + 1);
  /* A name with more colons, and the longest name. */
  assert_int_equal(parse("incr tally:a:b:c 1\r\n", &r), LCD_PROTO_TALLY);
  assert_tok(r.tally, "a:b:c");
  char longest[LC_NAME_MAX + 40];
  assert_int_equal(parse(tally_line(longest, sizeof longest, LC_NAME_MAX), &r),
                   LCD_PROTO_TALLY);
  assert_int_equal(r.tally.len, LC_NAME_MAX);
}

static void test_tally_bad(void **state) {
  (void)state;
  lcd_proto_req r;
  const err_case cases[] = {
      {"incr tally:v 0\r\n", "a tally takes 1..", 0},
      {"decr tally:v 0\r\n", "a tally takes 1..", 0},
      {"incr tally:v -1\r\n", "a tally takes 1..", 0},
      {"decr tally:v -1\r\n", "a tally takes 1..", 0},
      {"incr tally:v +1\r\n", "a tally takes 1..", 0},
      {"incr tally:v x\r\n", "invalid numeric delta", 0},
      {"incr tally:v 1.5\r\n", "invalid numeric delta", 0},
      {"incr tally:v 9223372036854775808\r\n", "a tally takes 1..", 0},
      {"decr tally:v 9223372036854775808\r\n", "a tally takes 1..", 0},
      {"incr tally:v 18446744073709551616\r\n", "a tally takes 1..", 0},
      {"incr tally:v x noreply\r\n", "invalid numeric delta", 1},
      {"incr tally: 1\r\n", "invalid tally name", 0},
      {"decr tally: 1 noreply\r\n", "invalid tally name", 1},
      {"incr tally:\x01 1\r\n", "invalid tally name", 0},
      {"incr tally:v\r\n", "usage: incr tally:<name>", 0},
      {"decr tally:v\r\n", "usage: decr tally:<name>", 0},
      {"decr tally:v 1 2\r\n", "usage: decr tally:<name>", 0},
      {"get tally:\r\n", "invalid tally name", 0},
      {"get a tally: b\r\n", "invalid tally name", 0},
      {"stats tally\r\n", "unknown stats group", 0},
      {"stats tally tally:\r\n", "invalid tally name", 0},
      {"stats tally a b\r\n", "unknown stats group", 0},
  };
  check_error_cases(cases, sizeof cases / sizeof cases[0], LCD_PROTO_BAD);
  /* A name longer than LC_NAME_MAX after the prefix. */
  char line[LC_NAME_MAX + 40];
  assert_int_equal(parse(tally_line(line, sizeof line, LC_NAME_MAX + 1), &r),
                   LCD_PROTO_BAD);
  assert_error_has(r, "invalid tally name");
}

/* The prefix is the whole test: "tally:" keys are never serial counters,
 * keys that merely look alike are. */
static void test_tally_namespace(void **state) {
  (void)state;
  lcd_proto_req r;
  lcd_proto_token name;
  const struct {
    const char *key;
    int tally;
    const char *rest;
  } keys[] = {
      {"tally:v", 1, "v"},
      {"tally:", 1, ""},
      {"tally:tally:v", 1, "tally:v"},
      {"tally", 0, NULL},
      {"Tally:v", 0, NULL},
      {"tallyv", 0, NULL},
      {"xtally:v", 0, NULL},
      {"tally;v", 0, NULL},
      {"t", 0, NULL},
  };
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    lcd_proto_token t = {keys[i].key, strlen(keys[i].key)};
    int got = lcd_proto_tally_name(&t, &name);
    if (got != keys[i].tally)
      fail_msg("'%s': tally %d, expected %d", keys[i].key, got, keys[i].tally);
    if (got) assert_tok(name, keys[i].rest);
  }
  assert_int_equal(parse("incr Tally:v 1\r\n", &r), LCD_PROTO_INCR);
  assert_int_equal(parse("incr tallyv 1\r\n", &r), LCD_PROTO_INCR);
  assert_int_equal(parse("incr tally:v 1\r\n", &r), LCD_PROTO_TALLY);
  /* get mixes both kinds; keys keep their prefix (the VALUE line). */
  assert_int_equal(parse("gets orders tally:views tallyx\r\n", &r),
                   LCD_PROTO_GET);
  assert_int_equal(r.nkeys, 3);
  assert_int_equal(r.gets, 1);
  assert_tok(r.keys[1], "tally:views");
  assert_int_equal(lcd_proto_tally_name(&r.keys[1], &name), 1);
  assert_int_equal(lcd_proto_tally_name(&r.keys[2], &name), 0);
  /* stats tally NAME, with or without the prefix. */
  assert_int_equal(parse("stats tally views\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_tally, 1);
  assert_int_equal(r.stats_settings, 0);
  assert_tok(r.tally, "views");
  assert_int_equal(r.nkeys, 1);
  assert_int_equal(parse("stats tally tally:views\r\n", &r), LCD_PROTO_STATS);
  assert_tok(r.tally, "views");
  assert_int_equal(parse("stats\r\n", &r), LCD_PROTO_STATS);
  assert_int_equal(r.stats_tally, 0);
}

/* Every prefix of every valid request, and bytes flipped in them, parse
 * without crashing and give a known kind (sanitizers watch the reads). */
static void test_prefixes_and_noise(void **state) {
  (void)state;
  const char *lines[] = {
      "incr orders 10 noreply\r\n", "gets a b c\r\n",
      "set k 1 2 3 noreply\r\n",    "cas k 1 2 3 4\r\n",
      "stats settings\r\n",         "verbosity 1 noreply\r\n",
      "ms k 12 T0 F1\r\n",          "decr tally:v 9 noreply\r\n",
      "stats tally v\r\n"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    size_t n = strlen(lines[i]);
    for (size_t k = 0; k <= n; k++) {
      char *copy = malloc(k ? k : 1); /* exact size: ASan checks */
      assert_non_null(copy);
      memcpy(copy, lines[i], k);
      for (int flip = -1; flip < (int)k; flip++) {
        if (flip >= 0) copy[flip] ^= (char)0x5a;
        lcd_proto_req r;
        size_t len;
        lcd_proto_cmd cmd = lcd_proto_parse(copy, k, &r);
        assert_true(cmd >= LCD_PROTO_INCR && cmd <= LCD_PROTO_TALLY);
        if (cmd == LCD_PROTO_BAD || cmd == LCD_PROTO_REFUSED)
          assert_non_null(r.error);
        (void)lcd_proto_frame(copy, k, &len);
        if (flip >= 0) copy[flip] ^= (char)0x5a;
      }
      free(copy);
    }
  }
}

/* The names a job holds (lcd_job.h, lcd_may_start's check): a MANY job
 * of 64 names holds each of them and no other, also as a plain incr's
 * (request 0 only), a prefix or an extension of one; a filter bit set
 * by another name is not enough. */
static void test_job_holds(void **state) {
  (void)state;
  static lcd_job j; /* big: not on the stack */
  memset(j.filt, 0, sizeof j.filt);
  size_t used = 0;
  char name[32];
  for (int i = 0; i < LCD_RUN_MAX; i++) {
    int n = snprintf(name, sizeof name, "np-7-%d", i);
    memcpy(j.names + used, name, (size_t)n + 1);
    j.name_off[i] = (uint16_t)used;
    lcd_job_name(&j, i, lcd_job_name_hash(name, (size_t)n));
    used += (size_t)n + 1;
  }
  j.nreq = LCD_RUN_MAX;
  for (int i = 0; i < LCD_RUN_MAX; i++) {
    int n = snprintf(name, sizeof name, "np-7-%d", i);
    uint32_t h = lcd_job_name_hash(name, (size_t)n);
    if (!lcd_job_holds(&j, 1, name, (size_t)n, h))
      fail_msg("the MANY job does not hold %s", name);
    assert_int_equal(lcd_job_holds(&j, 0, name, (size_t)n, h), i == 0);
  }
  int others = 0;
  for (int i = LCD_RUN_MAX; i < LCD_RUN_MAX + 2000; i++) {
    int n = snprintf(name, sizeof name, "np-7-%d", i);
    uint32_t h = lcd_job_name_hash(name, (size_t)n);
    if (lcd_job_holds(&j, 1, name, (size_t)n, h))
      fail_msg("the MANY job holds %s, never added", name);
    others += (j.filt[h >> 30] >> ((h >> 24) & 63)) & 1;
  }
  assert_true(others > 0); /* some passed the filter: the names compared */
  /* a prefix of a held name, and a held name extended */
  assert_false(lcd_job_holds(&j, 1, "np-7-", 5, lcd_job_name_hash("np-7-", 5)));
  assert_false(
      lcd_job_holds(&j, 1, "np-7-10x", 8, lcd_job_name_hash("np-7-10x", 8)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frame_lines),
      cmocka_unit_test(test_frame_binary),
      cmocka_unit_test(test_frame_long_lines),
      cmocka_unit_test(test_incr),
      cmocka_unit_test(test_incr_bad_numbers),
      cmocka_unit_test(test_incr_bad_shape),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_get),
      cmocka_unit_test(test_get_many_keys),
      cmocka_unit_test(test_get_pieces),
      cmocka_unit_test(test_meta_ma),
      cmocka_unit_test(test_meta_mg_mn),
      cmocka_unit_test(test_small_commands),
      cmocka_unit_test(test_unknown),
      cmocka_unit_test(test_admin_refused),
      cmocka_unit_test(test_refused_without_data),
      cmocka_unit_test(test_refused_storage),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_tally_incr_decr),
      cmocka_unit_test(test_tally_bad),
      cmocka_unit_test(test_tally_namespace),
      cmocka_unit_test(test_prefixes_and_noise),
      cmocka_unit_test(test_job_holds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
