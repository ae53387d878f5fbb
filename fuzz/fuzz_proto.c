/*
 * fuzz_proto.c - libFuzzer target: logcounterd's request parser
 * (tools/logcounterd/lcd_proto.c), fed the input as a connection's byte stream, the way
 * tools/logcounterd/lcd_conn.c consumes it: frame a line, parse it, skip the data
 * block of a refused storage command, stop at binary, an over-long line
 * or a closing error.
 *
 * Properties checked besides "no crash, no out-of-bounds read":
 *  - framing: a line ends at the first '\n', is at most LINE_MAX bytes
 *    before "\r\n", and is framed the same whatever follows it; a proper
 *    prefix of a line asks for more; 0x80 first means binary;
 *  - parsing: tokens lie inside the line, are non-empty and hold no space;
 *    incr has one name that lc_check_name accepts (never "tally:...") and
 *    a count in 1..LC_BLOCK_MAX; incr/decr tally:NAME has a valid NAME and
 *    a delta of +-1..INT64_MAX; get has 1..LCD_PROTO_MAX_KEYS valid
 *    counter names or "tally:" names; stats tally names a valid tally;
 *    refused and bad requests carry a reason; a refused data block is at
 *    most LCD_PROTO_DATA_MAX + 2 bytes; noreply is only set by a last
 *    token "noreply"; the line's terminator changes nothing (the same
 *    request with "\r\n", "\n" or none);
 *  - round trip: an incr, a tally change or a get printed back canonically
 *    parses to the same request;
 *  - the pieces of a long get (lcd_proto_get_piece on what the daemon
 *    pulls up): at most LCD_PROTO_MAX_KEYS valid keys inside the bytes
 *    consumed, progress whenever a piece is taken, and a piece that ends
 *    the line ends at its '\n';
 *  - lcd_proto_number agrees with a strtoull-based reference on every
 *    token.
 */
#include "fuzz.h"

#include "logcounter.h"
#include "lcd_proto.h"

#include <errno.h>

static int tok_eq(const lcd_proto_token *a, const lcd_proto_token *b) {
  return a->len == b->len && (a->len == 0 || memcmp(a->s, b->s, a->len) == 0);
}

/* The reference: 1..20 decimal digits whose value fits 64 bits. */
static int ref_number(const char *s, size_t len, uint64_t *out) {
  if (len == 0 || len > 20) return -1;
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9') return -1;
  char buf[21];
  memcpy(buf, s, len);
  buf[len] = '\0';
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, 10);
  if (errno == ERANGE) return -1;
  *out = v;
  return 0;
}

static void check_number(const char *s, size_t len) {
  uint64_t a = 0, b = 0;
  char *copy = fuzz_dup(s, len, 0);
  int ra = lcd_proto_number(copy, len, &a);
  int rb = ref_number(copy, len, &b);
  free(copy);
  FUZZ_CHECK(ra == rb);
  FUZZ_CHECK(ra != 0 || a == b);
}

static int valid_name(const lcd_proto_token *t) {
  char buf[LC_NAME_MAX + 1];
  if (t->len == 0 || t->len > LC_NAME_MAX || memchr(t->s, '\0', t->len))
    return 0;
  memcpy(buf, t->s, t->len);
  buf[t->len] = '\0';
  return lc_check_name(buf) == 0;
}

static int is_tally_key(const lcd_proto_token *t) {
  return t->len >= 6 && memcmp(t->s, "tally:", 6) == 0;
}

/* A key of a get: "tally:" and a valid tally name, or a counter name. */
static int valid_key(const lcd_proto_token *t) {
  lcd_proto_token rest = {t->s + 6, t->len - 6};
  return is_tally_key(t) ? valid_name(&rest) : valid_name(t);
}

static void check_token(const lcd_proto_token *t, const char *line,
                        size_t len) {
  FUZZ_CHECK(t->s >= line && t->len > 0 && t->len <= len &&
             (size_t)(t->s - line) <= len - t->len);
  FUZZ_CHECK(memchr(t->s, ' ', t->len) == NULL);
}

/* Prints req (an incr or a get) canonically and parses it again. */
static void round_trip(const lcd_proto_req *req) {
  char buf[LCD_PROTO_MAX_KEYS * (LC_NAME_MAX + 1) + 64];
  size_t n = 0;
  if (req->cmd == LCD_PROTO_INCR) {
    n = (size_t)snprintf(buf, sizeof buf, "incr %.*s %llu%s\r\n",
                         (int)req->keys[0].len, req->keys[0].s,
                         (unsigned long long)req->count,
                         req->noreply ? " noreply" : "");
  } else if (req->cmd == LCD_PROTO_TALLY) {
    n = (size_t)snprintf(buf, sizeof buf, "%s tally:%.*s %llu%s\r\n",
                         req->delta < 0 ? "decr" : "incr", (int)req->tally.len,
                         req->tally.s,
                         req->delta < 0 ? (unsigned long long)-req->delta
                                        : (unsigned long long)req->delta,
                         req->noreply ? " noreply" : "");
  } else {
    n = (size_t)snprintf(buf, sizeof buf, "%s", req->gets ? "gets" : "get");
    for (size_t i = 0; i < req->nkeys; i++)
      n += (size_t)snprintf(buf + n, sizeof buf - n, " %.*s",
                            (int)req->keys[i].len, req->keys[i].s);
    n += (size_t)snprintf(buf + n, sizeof buf - n, "\r\n");
  }
  FUZZ_CHECK(n < sizeof buf);
  char *line = fuzz_dup(buf, n, 0);
  lcd_proto_req again;
  FUZZ_CHECK(lcd_proto_parse(line, n, &again) == req->cmd);
  FUZZ_CHECK(again.nkeys == req->nkeys && again.count == req->count &&
             again.noreply == req->noreply && again.gets == req->gets &&
             again.delta == req->delta && tok_eq(&again.tally, &req->tally));
  for (size_t i = 0; i < req->nkeys; i++)
    FUZZ_CHECK(tok_eq(&again.keys[i], &req->keys[i]));
  free(line);
}

/* Is the last space-separated token of line[0..len) "noreply"? */
static int ends_with_noreply(const char *line, size_t len) {
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
  while (len > 0 && line[len - 1] == ' ') len--;
  return len >= 8 && memcmp(line + len - 8, " noreply", 8) == 0;
}

/* Parses line[0..len) into *req and checks the result. */
static void check_request(const char *line, size_t len, lcd_proto_req *req) {
  lcd_proto_cmd cmd = lcd_proto_parse(line, len, req);
  FUZZ_CHECK(cmd == req->cmd);
  if (req->verb.s) check_token(&req->verb, line, len);
  FUZZ_CHECK(req->nkeys <= LCD_PROTO_MAX_KEYS);
  for (size_t i = 0; i < req->nkeys; i++) check_token(&req->keys[i], line, len);
  if (req->noreply) FUZZ_CHECK(ends_with_noreply(line, len));
  if (cmd == LCD_PROTO_INCR) {
    FUZZ_CHECK(req->nkeys == 1 && valid_name(&req->keys[0]));
    FUZZ_CHECK(!is_tally_key(&req->keys[0]));
    FUZZ_CHECK(req->count >= 1 && req->count <= LC_BLOCK_MAX);
    round_trip(req);
  } else if (cmd == LCD_PROTO_TALLY) {
    FUZZ_CHECK(req->nkeys == 1 && is_tally_key(&req->keys[0]));
    check_token(&req->tally, line, len);
    FUZZ_CHECK(req->tally.s == req->keys[0].s + 6 &&
               req->tally.len == req->keys[0].len - 6);
    FUZZ_CHECK(valid_name(&req->tally));
    FUZZ_CHECK(req->delta != 0 && req->delta != INT64_MIN);
    round_trip(req);
  } else if (cmd == LCD_PROTO_GET) {
    FUZZ_CHECK(req->nkeys >= 1);
    for (size_t i = 0; i < req->nkeys; i++)
      FUZZ_CHECK(valid_key(&req->keys[i]));
    round_trip(req);
  } else if (cmd == LCD_PROTO_STATS && req->stats_tally) {
    FUZZ_CHECK(req->nkeys == 1 && valid_name(&req->tally) &&
               tok_eq(&req->tally, &req->keys[0]));
  } else if (cmd == LCD_PROTO_REFUSED || cmd == LCD_PROTO_BAD) {
    FUZZ_CHECK(req->error != NULL && req->error[0] != '\0');
  }
  if (cmd == LCD_PROTO_REFUSED)
    FUZZ_CHECK(req->data_len <= LCD_PROTO_DATA_MAX + 2);
}

/* Tokens of the line for the number check: every space-separated run. */
static void check_numbers(const char *line, size_t len) {
  size_t i = 0;
  while (i < len) {
    while (i < len && line[i] == ' ') i++;
    size_t start = i;
    while (i < len && line[i] != ' ') i++;
    if (i > start) check_number(line + start, i - start);
  }
}

/* p[0..len) is an exact-size copy of the line framed in avail bytes. */
static void check_frame(const char *p, size_t avail, size_t len) {
  FUZZ_CHECK(len >= 1 && len <= avail && p[len - 1] == '\n');
  FUZZ_CHECK(memchr(p, '\n', len - 1) == NULL);
  size_t content = len - 1 - (len >= 2 && p[len - 2] == '\r');
  FUZZ_CHECK(content <= LCD_PROTO_LINE_MAX);
  /* The same line on its own: the same frame; one byte short: more. */
  size_t len2 = 0;
  FUZZ_CHECK(lcd_proto_frame(p, len, &len2) == LCD_PROTO_FRAME_LINE &&
             len2 == len);
  FUZZ_CHECK(lcd_proto_frame(p, len - 1, &len2) == LCD_PROTO_FRAME_MORE);
}

/* p[0..look) read as the rest of a get line. */
static void check_piece(const char *p, size_t look) {
  lcd_proto_req r;
  size_t used = 0;
  int rc = lcd_proto_get_piece(p, look, &r, &used);
  FUZZ_CHECK(rc >= -1 && rc <= 1 && used <= look);
  FUZZ_CHECK(r.nkeys <= LCD_PROTO_MAX_KEYS);
  if (rc < 0) FUZZ_CHECK(r.error != NULL);
  if (rc != 1) return;
  FUZZ_CHECK(used > 0);
  for (size_t i = 0; i < r.nkeys; i++) {
    check_token(&r.keys[i], p, used);
    FUZZ_CHECK(valid_key(&r.keys[i]));
  }
  if (!r.more) FUZZ_CHECK(p[used - 1] == '\n');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *in = (const char *)data;
  size_t pos = 0;
  uint64_t swallow = 0;
  while (pos < size) {
    if (swallow) {
      size_t n = size - pos < swallow ? size - pos : (size_t)swallow;
      pos += n;
      swallow -= n;
      continue;
    }
    size_t avail = size - pos, look = avail, len = 0;
    if (look > LCD_PROTO_LINE_MAX + 2) look = LCD_PROTO_LINE_MAX + 2;
    /* An exact copy of what the daemon would pull up. */
    char *p = fuzz_dup(in + pos, look, 0);
    check_piece(p, look);
    lcd_proto_frame_result fr = lcd_proto_frame(p, look, &len);
    if ((unsigned char)p[0] == 0x80) {
      FUZZ_CHECK(fr == LCD_PROTO_FRAME_BINARY);
    } else if (fr == LCD_PROTO_FRAME_MORE) {
      FUZZ_CHECK(look < LCD_PROTO_LINE_MAX + 2 && !memchr(p, '\n', look));
    } else if (fr == LCD_PROTO_FRAME_TOO_LONG) {
      const char *nl = memchr(p, '\n', look);
      FUZZ_CHECK(!nl || nl - p > LCD_PROTO_LINE_MAX);
    } else {
      FUZZ_CHECK(fr == LCD_PROTO_FRAME_LINE);
    }
    if (fr != LCD_PROTO_FRAME_LINE) {
      free(p);
      break;
    }
    char *line = fuzz_dup(p, len, 0);
    free(p);
    check_frame(line, look, len);
    check_numbers(line, len - 1);
    lcd_proto_req req, bare_req;
    /* The parser also accepts a line without its terminator, and the
     * terminator is not part of the last token. */
    size_t bare = len - 1 - (len >= 2 && line[len - 2] == '\r');
    check_request(line, bare, &bare_req);
    check_request(line, len, &req);
    if (bare == 0 || line[bare - 1] != '\r')
      FUZZ_CHECK(req.cmd == bare_req.cmd && req.nkeys == bare_req.nkeys &&
                 req.count == bare_req.count && req.delta == bare_req.delta &&
                 req.noreply == bare_req.noreply &&
                 req.data_len == bare_req.data_len &&
                 req.close == bare_req.close && req.error == bare_req.error);
    int stop =
        req.cmd == LCD_PROTO_QUIT || (req.cmd == LCD_PROTO_BAD && req.close);
    if (req.cmd == LCD_PROTO_REFUSED) swallow = req.data_len;
    free(line);
    pos += len;
    if (stop) break;
  }
  return 0;
}
