/*
 * test_cache_pipe.c - cache_pipe.c's reply parser (lc__cache_pipe_reply)
 * on byte strings, no memcached, no network: memcached's text-protocol
 * replies to ADD, INCR, GET, GETS and CAS.  Checked:
 *  - each reply kind gives its op's rc (0, LC__EXISTS, LC__MISS, or the
 *    error with the server's words), num, text and cas, and takes exactly
 *    its own bytes (what follows is left for the next op);
 *  - a reply cut at any byte is "not all here" (0, nothing taken, the op
 *    untouched), and a stream of replies to several ops split at every
 *    one and every two byte boundaries parses as if read at once;
 *  - a value longer than the op's text buffer is cut (NUL-terminated), its
 *    bytes still all taken; data holding CR LF and "END" is data;
 *  - a reply that doesn't match its op: an error for that op that keeps
 *    the stream (ADD answered "42"), or the end of the stream (a GET
 *    answered by anything but END or VALUE of its key, a line without CR);
 *  - numbers: 2^64-1 is read, 2^64 and beyond are an error, never wrapped;
 *    a VALUE length that would wrap (-1, 2^64-1) ends the stream;
 *  - garbage: random bytes never make it read past the buffer (each case
 *    is copied into a buffer of exactly its length, for AddressSanitizer)
 *    nor take more than it was given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HOST "10.0.0.1"
#define PORT 11211

static lc__op op_of(int kind, const char *key) {
  lc__op op;
  memset(&op, 0, sizeof op);
  op.kind = kind;
  op.key = op.master = key;
  op.klen = op.mlen = strlen(key);
  op.rc = 12345; /* not a code: shows the parser left it */
  return op;
}

/* The parser on exactly buf[0..len) (a copy of that size, so that a read
 * past it is AddressSanitizer's finding). */
static int reply(lc__op *op, const char *buf, size_t len, size_t *used) {
  char *copy = malloc(len ? len : 1);
  assert_non_null(copy);
  memcpy(copy, buf, len);
  int rc = lc__cache_pipe_reply(op, copy, len, HOST, PORT, used);
  free(copy);
  assert_true(*used <= len);
  return rc;
}

/* One whole reply s to a fresh op of kind/key: returns the op; the call
 * returned 0 and took all of s. */
static lc__op whole(int kind, const char *key, const char *s, size_t len) {
  lc__op op = op_of(kind, key);
  size_t used = 99;
  assert_int_equal(reply(&op, s, len, &used), 0);
  assert_int_equal(used, len);
  return op;
}
#define WHOLE(kind, key, lit) whole(kind, key, lit, sizeof lit - 1)

static void assert_detail_has(const char *want) {
  if (strstr(lc_last_detail(), want) == NULL)
    fail_msg("detail \"%s\" lacks \"%s\"", lc_last_detail(), want);
}

/* ---- each reply kind ------------------------------------------------------ */

static void test_add(void **state) {
  (void)state;
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "STORED\r\n").rc, 0);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "NOT_STORED\r\n").rc, LC__EXISTS);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "SERVER_ERROR out of memory\r\n").rc,
                   LC_EMEMCACHED);
  assert_detail_has("memcached 10.0.0.1:11211: SERVER_ERROR out of memory");
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "CLIENT_ERROR bad data chunk\r\n").rc,
                   LC_EMEMCACHED);
  assert_detail_has("CLIENT_ERROR bad data chunk");
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "ERROR\r\n").rc, LC_EMEMCACHED);
  assert_detail_has("11211: ERROR");
}

static void test_cas(void **state) {
  (void)state;
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "STORED\r\n").rc, 0);
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "EXISTS\r\n").rc, LC__EXISTS);
  /* gone since the gets: changed, as lc__cache_lower says */
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "NOT_FOUND\r\n").rc, LC__EXISTS);
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "NOT_STORED\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "SERVER_ERROR busy\r\n").rc,
                   LC_EMEMCACHED);
  assert_detail_has("SERVER_ERROR busy");
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "ERROR\r\n").rc, LC_EMEMCACHED);
}

static void test_incr(void **state) {
  (void)state;
  lc__op op = WHOLE(LC__OP_INCR, "k", "42\r\n");
  assert_int_equal(op.rc, 0);
  assert_int_equal(op.num, 42);
  op = WHOLE(LC__OP_INCR, "k", "0\r\n");
  assert_int_equal(op.rc, 0);
  assert_int_equal(op.num, 0);
  op = WHOLE(LC__OP_INCR, "k", "7   \r\n"); /* space-padded */
  assert_int_equal(op.rc, 0);
  assert_int_equal(op.num, 7);
  op = WHOLE(LC__OP_INCR, "k", "18446744073709551615\r\n");
  assert_int_equal(op.rc, 0);
  assert_true(op.num == UINT64_MAX);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "NOT_FOUND\r\n").rc, LC__MISS);
  op = WHOLE(LC__OP_INCR, "key9",
             "CLIENT_ERROR cannot increment or decrement non-numeric "
             "value\r\n");
  assert_int_equal(op.rc, LC_EBADVALUE);
  assert_detail_has("not a number for key9");
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "SERVER_ERROR out of memory\r\n").rc,
                   LC_EMEMCACHED);
  assert_detail_has("SERVER_ERROR out of memory");
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "ERROR\r\n").rc, LC_EMEMCACHED);
}

static void test_get(void **state) {
  (void)state;
  lc__op op = WHOLE(LC__OP_GET, "k", "VALUE k 0 2\r\n42\r\nEND\r\n");
  assert_int_equal(op.rc, 0);
  assert_string_equal(op.text, "42");
  op = WHOLE(LC__OP_GET, "name", "VALUE name 5 0\r\n\r\nEND\r\n");
  assert_int_equal(op.rc, 0);
  assert_string_equal(op.text, "");
  assert_int_equal(WHOLE(LC__OP_GET, "k", "END\r\n").rc, LC__MISS);
  /* a GET also reads a GETS-style line (the cas is ignored) */
  op = WHOLE(LC__OP_GET, "k", "VALUE k 0 1 77\r\n9\r\nEND\r\n");
  assert_int_equal(op.rc, 0);
  assert_string_equal(op.text, "9");
}

static void test_gets(void **state) {
  (void)state;
  lc__op op = WHOLE(LC__OP_GETS, "k",
                    "VALUE k 0 2 18446744073709551615\r\n42\r\nEND\r\n");
  assert_int_equal(op.rc, 0);
  assert_string_equal(op.text, "42");
  assert_true(op.cas == UINT64_MAX);
  op = WHOLE(LC__OP_GETS, "k", "VALUE k 0 3 987654321\r\n100\r\nEND\r\n");
  assert_int_equal(op.rc, 0);
  assert_string_equal(op.text, "100");
  assert_int_equal(op.cas, 987654321);
  assert_int_equal(WHOLE(LC__OP_GETS, "k", "END\r\n").rc, LC__MISS);
}

/* Each reply takes its own bytes only: the next reply stays in the buffer. */
static void test_takes_only_its_reply(void **state) {
  (void)state;
  static const struct {
    int kind;
    const char *one, *next;
  } cases[] = {
      {LC__OP_ADD, "STORED\r\n", "NOT_STORED\r\n"},
      {LC__OP_CAS, "EXISTS\r\n", "STORED\r\n"},
      {LC__OP_INCR, "42\r\n", "43\r\n"},
      {LC__OP_INCR, "SERVER_ERROR x\r\n", "43\r\n"},
      {LC__OP_GET, "VALUE k 0 2\r\n42\r\nEND\r\n", "END\r\n"},
      {LC__OP_GET, "END\r\n", "VALUE k 0 2\r\n42\r\nEND\r\n"},
      {LC__OP_GETS, "VALUE k 0 2 5\r\n42\r\nEND\r\n", "VALUE k 0 2 6\r\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[256];
    size_t a = strlen(cases[i].one);
    snprintf(buf, sizeof buf, "%s%s", cases[i].one, cases[i].next);
    lc__op op = op_of(cases[i].kind, "k");
    size_t used = 0;
    assert_int_equal(reply(&op, buf, strlen(buf), &used), 0);
    assert_int_equal(used, a);
    assert_int_not_equal(op.rc, 12345);
  }
}

/* ---- partial reads -------------------------------------------------------- */

/* Every proper prefix of a reply is "not all here": 0, nothing taken, the
 * op as it was; the whole reply then gives what it gives alone. */
static void test_every_prefix_is_incomplete(void **state) {
  (void)state;
  static const struct {
    int kind;
    const char *s;
  } cases[] = {
      {LC__OP_ADD, "STORED\r\n"},
      {LC__OP_ADD, "NOT_STORED\r\n"},
      {LC__OP_ADD, "SERVER_ERROR out of memory storing object\r\n"},
      {LC__OP_CAS, "EXISTS\r\n"},
      {LC__OP_CAS, "NOT_FOUND\r\n"},
      {LC__OP_INCR, "18446744073709551615\r\n"},
      {LC__OP_INCR, "NOT_FOUND\r\n"},
      {LC__OP_INCR, "CLIENT_ERROR cannot increment\r\n"},
      {LC__OP_GET, "END\r\n"},
      {LC__OP_GET, "VALUE k 0 2\r\n42\r\nEND\r\n"},
      {LC__OP_GET, "VALUE k 0 9\r\na\r\nEND\r\nb\r\nEND\r\n"},
      {LC__OP_GETS, "VALUE k 0 2 12345\r\n42\r\nEND\r\n"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *s = cases[c].s;
    size_t len = strlen(s);
    for (size_t i = 0; i < len; i++) {
      lc__op op = op_of(cases[c].kind, "k"), before = op;
      size_t used = 99;
      int rc = reply(&op, s, i, &used);
      if (rc != 0 || used != 0 || memcmp(&op, &before, sizeof op) != 0)
        fail_msg("\"%.*s\" cut at %zu of %zu: rc %d, used %zu", (int)len - 2, s,
                 i, len, rc, used);
    }
    lc__op op = whole(cases[c].kind, "k", s, len);
    assert_int_not_equal(op.rc, 12345);
  }
}

/* A stream of replies to several ops, fed in pieces as parse() does (what
 * is taken is dropped, the rest waits for more). */
enum { NOPS = 9 };
static const char *const stream = "STORED\r\n"
                                  "NOT_STORED\r\n"
                                  "41\r\n"
                                  "NOT_FOUND\r\n"
                                  "VALUE k 0 9\r\na\r\nEND\r\nb\r\nEND\r\n"
                                  "END\r\n"
                                  "VALUE k 0 3 99\r\n100\r\nEND\r\n"
                                  "EXISTS\r\n"
                                  "SERVER_ERROR out of memory\r\n";
static const int stream_kinds[NOPS] = {LC__OP_ADD,  LC__OP_ADD, LC__OP_INCR,
                                       LC__OP_INCR, LC__OP_GET, LC__OP_GET,
                                       LC__OP_GETS, LC__OP_CAS, LC__OP_ADD};

typedef struct feeder {
  lc__op ops[NOPS];
  size_t next;
  char in[512];
  size_t ilen;
} feeder;

static void feed(feeder *f, const char *p, size_t n) {
  assert_true(f->ilen + n <= sizeof f->in);
  memcpy(f->in + f->ilen, p, n);
  f->ilen += n;
  size_t at = 0;
  while (f->next < NOPS) {
    size_t used;
    assert_int_equal(reply(&f->ops[f->next], f->in + at, f->ilen - at, &used),
                     0);
    if (used == 0) break;
    at += used;
    f->next++;
  }
  memmove(f->in, f->in + at, f->ilen - at);
  f->ilen -= at;
}

static void feeder_init(feeder *f) {
  memset(f, 0, sizeof *f);
  for (int i = 0; i < NOPS; i++) f->ops[i] = op_of(stream_kinds[i], "k");
}

static void check_stream(const feeder *f, const char *how) {
  static const int rc[NOPS] = {
      0, LC__EXISTS, 0, LC__MISS, 0, LC__MISS, 0, LC__EXISTS, LC_EMEMCACHED};
  if (f->next != NOPS || f->ilen != 0) fail_msg("%s: %zu ops", how, f->next);
  for (int i = 0; i < NOPS; i++)
    if (f->ops[i].rc != rc[i])
      fail_msg("%s: op %d rc %d, not %d", how, i, f->ops[i].rc, rc[i]);
  assert_int_equal(f->ops[2].num, 41);
  assert_string_equal(f->ops[4].text, "a\r\nEND\r\nb");
  assert_string_equal(f->ops[6].text, "100");
  assert_int_equal(f->ops[6].cas, 99);
}

static void test_stream_split_anywhere(void **state) {
  (void)state;
  size_t len = strlen(stream);
  feeder f;
  feeder_init(&f);
  feed(&f, stream, len);
  check_stream(&f, "at once");
  char how[64];
  for (size_t i = 0; i <= len; i++) {
    feeder_init(&f);
    feed(&f, stream, i);
    feed(&f, stream + i, len - i);
    snprintf(how, sizeof how, "split at %zu", i);
    check_stream(&f, how);
  }
  for (size_t i = 1; i < len; i++)
    for (size_t j = i + 1; j < len; j++) {
      feeder_init(&f);
      feed(&f, stream, i);
      feed(&f, stream + i, j - i);
      feed(&f, stream + j, len - j);
      snprintf(how, sizeof how, "split at %zu and %zu", i, j);
      check_stream(&f, how);
    }
  /* and a byte at a time */
  feeder_init(&f);
  for (size_t i = 0; i < len; i++) feed(&f, stream + i, 1);
  check_stream(&f, "a byte at a time");
}

/* ---- long values ---------------------------------------------------------- */

static void test_value_longer_than_text(void **state) {
  (void)state;
  lc__op probe;
  enum { BYTES = 1000 };
  assert_true(BYTES > sizeof probe.text);
  char buf[BYTES + 64];
  int h = snprintf(buf, sizeof buf, "VALUE k 0 %d\r\n", BYTES);
  for (int i = 0; i < BYTES; i++) buf[h + i] = (char)('a' + i % 26);
  memcpy(buf + h + BYTES, "\r\nEND\r\nEND\r\n", 12);
  size_t total = (size_t)h + BYTES + 7;
  lc__op op = op_of(LC__OP_GET, "k");
  size_t used;
  /* not all here until the END */
  assert_int_equal(reply(&op, buf, total - 1, &used), 0);
  assert_int_equal(used, 0);
  assert_int_equal(op.rc, 12345);
  assert_int_equal(reply(&op, buf, total + 5, &used), 0);
  assert_int_equal(used, total);
  assert_int_equal(op.rc, 0);
  assert_int_equal(strlen(op.text), sizeof op.text - 1);
  assert_memory_equal(op.text, buf + h, sizeof op.text - 1);
  /* the next reply is where it should be */
  lc__op next = op_of(LC__OP_GET, "k");
  assert_int_equal(reply(&next, buf + used, 5, &used), 0);
  assert_int_equal(used, 5);
  assert_int_equal(next.rc, LC__MISS);
}

/* ---- replies that do not match their op ----------------------------------- */

/* An answer another op would get: an error for this op, the stream goes on
 * (the line is taken). */
static void test_wrong_answer_is_an_error_for_the_op(void **state) {
  (void)state;
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "42\r\n").rc, LC_EMEMCACHED);
  assert_detail_has("11211: 42");
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "EXISTS\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "NOT_FOUND\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "END\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_CAS, "k", "42\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "STORED\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "NOT_STORED\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "END\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "-1\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "42x\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", " 42\r\n").rc, LC_EMEMCACHED);
  /* prefixes of the right words are not the words */
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "STORE\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "STOREDX\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_ADD, "k", "NOT_STORE\r\n").rc, LC_EMEMCACHED);
  assert_int_equal(WHOLE(LC__OP_INCR, "k", "NOT_FOUNDX\r\n").rc, LC_EMEMCACHED);
}

/* What cannot be matched ends the stream: negative, nothing taken, the op
 * untouched. */
static void assert_fatal(int kind, const char *key, const char *s) {
  lc__op op = op_of(kind, key), before = op;
  size_t used = 99;
  int rc = reply(&op, s, strlen(s), &used);
  if (rc >= 0 || used != 0 || memcmp(&op, &before, sizeof op) != 0)
    fail_msg("\"%s\" to op %d: rc %d, used %zu, op rc %d", s, kind, rc, used,
             op.rc);
  assert_int_equal(rc, LC_EMEMCACHED);
}

static void test_unmatched_reply_ends_the_stream(void **state) {
  (void)state;
  /* a GET answered by what is neither END nor VALUE of its key */
  assert_fatal(LC__OP_GET, "k", "STORED\r\n");
  assert_fatal(LC__OP_GET, "k", "42\r\n");
  assert_fatal(LC__OP_GET, "k", "SERVER_ERROR out of memory\r\n");
  assert_detail_has("memcached 10.0.0.1:11211: SERVER_ERROR out of memory");
  assert_fatal(LC__OP_GET, "k", "ERROR\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE other 0 2\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE j 0 2\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GETS, "key", "VALUE kez 0 2 7\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "key", "VALUE k 0 2\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE k 0\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE k x 2\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE\r\n");
  /* a longer key that starts with this one ("k1" for "k": its 1 is no
   * flags field), and data that is not as long as the line said */
  assert_fatal(LC__OP_GET, "k", "VALUE k1 0 2\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE k 0 2\r\n423\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE k 0 3\r\n42\r\nEND\r\nX");
  /* a length that wraps the sum of the reply's parts (sscanf's %zu reads
   * "-1" as SIZE_MAX, 2^64 and beyond too): not a wait for 2^64 bytes,
   * nor a value read from past the buffer */
  assert_fatal(LC__OP_GET, "k", "VALUE k 0 -1\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "VALUE k 0 -7\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k",
               "VALUE k 0 18446744073709551615\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GETS, "k",
               "VALUE k 0 99999999999999999999 1\r\n42\r\nEND\r\n");
  assert_fatal(LC__OP_GET, "k", "ENDX\r\n"); /* not END, not VALUE */
  /* a GETS without its cas */
  assert_fatal(LC__OP_GETS, "k", "VALUE k 0 2\r\n42\r\nEND\r\n");
  /* a line not ended by CR LF, for any op */
  assert_fatal(LC__OP_ADD, "k", "STORED\n");
  assert_fatal(LC__OP_CAS, "k", "STORED\n");
  assert_fatal(LC__OP_INCR, "k", "42\n");
  assert_fatal(LC__OP_GET, "k", "END\n");
  assert_fatal(LC__OP_ADD, "k", "\n");
}

/* ---- numbers -------------------------------------------------------------- */

static void test_number_out_of_range(void **state) {
  (void)state;
  static const char *const big[] = {
      "18446744073709551616\r\n",                    /* 2^64 */
      "18446744073709551617\r\n",                    /* 2^64 + 1 */
      "99999999999999999999\r\n",                    /* 20 digits, > 2^64 */
      "184467440737095516150\r\n",                   /* (2^64-1) * 10 */
      "340282366920938463463374607431768211456\r\n", /* 2^128 */
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    lc__op op = whole(LC__OP_INCR, "k", big[i], strlen(big[i]));
    assert_int_equal(op.rc, LC_EMEMCACHED);
    assert_int_equal(op.num, 0);
    assert_detail_has("11211: ");
  }
  lc__op op = WHOLE(LC__OP_INCR, "k", "18446744073709551614\r\n");
  assert_int_equal(op.rc, 0);
  assert_true(op.num == UINT64_MAX - 1);
}

/* ---- garbage -------------------------------------------------------------- */

/* Random bytes (with CR, LF, spaces, digits and the words memcached uses
 * mixed in) to every op: never a read past the buffer (AddressSanitizer),
 * never more taken than given; a whole reply taken sets the op's rc. */
static void test_garbage(void **state) {
  (void)state;
  static const char *const words[] = {
      "VALUE ", "k ", "0 ", "2 ", "END",  "STORED", "\r\n",
      "\r",     "\n", "42", " ",  "NOT_", "-1",     "18446744073709551615"};
  uint64_t x = 88172645463325252u;
  char buf[300];
  for (int round = 0; round < 200000; round++) {
    size_t len = 0, want = 0;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    want = x % sizeof buf;
    while (len < want) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (x % 3 == 0) {
        const char *w = words[(x >> 8) % (sizeof words / sizeof words[0])];
        size_t n = strlen(w);
        if (len + n > want) n = want - len;
        memcpy(buf + len, w, n);
        len += n;
      } else {
        buf[len++] = (char)(x >> 16);
      }
    }
    lc__op op = op_of(round % 5, "k");
    size_t used = 0;
    int rc = reply(&op, buf, len, &used);
    if (rc == 0 && used > 0) assert_int_not_equal(op.rc, 12345);
    if (rc != 0 || used == 0) assert_int_equal(op.rc, 12345);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add),
      cmocka_unit_test(test_cas),
      cmocka_unit_test(test_incr),
      cmocka_unit_test(test_get),
      cmocka_unit_test(test_gets),
      cmocka_unit_test(test_takes_only_its_reply),
      cmocka_unit_test(test_every_prefix_is_incomplete),
      cmocka_unit_test(test_stream_split_anywhere),
      cmocka_unit_test(test_value_longer_than_text),
      cmocka_unit_test(test_wrong_answer_is_an_error_for_the_op),
      cmocka_unit_test(test_unmatched_reply_ends_the_stream),
      cmocka_unit_test(test_number_out_of_range),
      cmocka_unit_test(test_garbage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
