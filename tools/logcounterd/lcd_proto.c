/*
 * lcd_proto.c - the memcached text-protocol request parser of logcounterd.
 *
 * Pure and allocation-free (see proto.h): lcd_proto_frame finds one request
 * line in the input, lcd_proto_parse classifies it and checks its
 * arguments.  Nothing here touches memcached, the log or a socket.
 *
 * Rules kept (memcached's, unless noted):
 *  - tokens are separated by runs of spaces; a line ends with "\n",
 *    usually "\r\n"; the terminator is not part of the last token;
 *  - command words are case-sensitive; an empty line or an unknown word is
 *    LCD_PROTO_UNKNOWN ("ERROR");
 *  - a last token "noreply" on a command that accepts it sets noreply,
 *    even when the rest of the line is malformed (so the daemon stays
 *    silent, as the client expects);
 *  - logcounterd only: counter names must pass lc_check_name, counts are
 *    1..LC_BLOCK_MAX, and every command that would store, move back,
 *    delete or expire a value is refused with its reason; a refused
 *    storage command's data block is measured so that the daemon can
 *    discard it and stay in sync;
 *  - logcounterd only: a key "tally:..." is always a tally, never a serial
 *    counter (its name after the prefix must pass lc_check_name); incr and
 *    decr of a tally take 1..INT64_MAX, decr of a serial counter is
 *    refused;
 *  - get/gets take any number of keys, as in memcached (only their lines
 *    have no length limit): the first line, or lcd_proto_get_start's
 *    start of a longer one, then lcd_proto_get_piece's pieces of at most
 *    LCD_PROTO_MAX_KEYS keys each;
 *  - the meta commands ma, mg and mn are lcd_meta.c's; ms, md and me are
 *    refused.
 */
#include "lcd_proto.h"

#include "logcounter.h"

#include <stdbool.h>
#include <string.h>

lcd_proto_frame_result lcd_proto_frame(const char *buf, size_t len,
                                       size_t *line_len) {
  if (len == 0) return LCD_PROTO_FRAME_MORE;
  if ((unsigned char)buf[0] == 0x80) return LCD_PROTO_FRAME_BINARY;
  /* The longest acceptable line is LINE_MAX bytes and "\r\n". */
  size_t scan = len < LCD_PROTO_LINE_MAX + 2 ? len : LCD_PROTO_LINE_MAX + 2;
  const char *nl = memchr(buf, '\n', scan);
  if (!nl)
    return len >= LCD_PROTO_LINE_MAX + 2 ? LCD_PROTO_FRAME_TOO_LONG
                                         : LCD_PROTO_FRAME_MORE;
  size_t content = (size_t)(nl - buf);
  if (content > 0 && buf[content - 1] == '\r') content--;
  if (content > LCD_PROTO_LINE_MAX) return LCD_PROTO_FRAME_TOO_LONG;
  *line_len = (size_t)(nl - buf) + 1;
  return LCD_PROTO_FRAME_LINE;
}

int lcd_proto_number(const char *s, size_t len, uint64_t *out) {
  if (len == 0 || len > 20) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned d = (unsigned char)s[i] - '0';
    if (d > 9) return -1;
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

int lcd_proto_check_name(const lcd_proto_token *t) {
  char name[LC_NAME_MAX + 1];
  if (t->len == 0 || t->len > LC_NAME_MAX || memchr(t->s, '\0', t->len))
    return LC_ENAME;
  memcpy(name, t->s, t->len);
  name[t->len] = '\0';
  return lc_check_name(name) == 0 ? 0 : LC_ENAME;
}

int lcd_proto_tally_name(const lcd_proto_token *t, lcd_proto_token *name) {
  if (t->len < LCD_PROTO_TALLY_PREFIX_LEN ||
      memcmp(t->s, LCD_PROTO_TALLY_PREFIX, LCD_PROTO_TALLY_PREFIX_LEN) != 0)
    return 0;
  name->s = t->s + LCD_PROTO_TALLY_PREFIX_LEN;
  name->len = t->len - LCD_PROTO_TALLY_PREFIX_LEN;
  return 1;
}

/* ---- tokens ------------------------------------------------------------ */

/* The command word and up to MAX_KEYS + 1 arguments are kept; ntok counts
 * every token of the line. */
#define MAX_TOK (LCD_PROTO_MAX_KEYS + 2)

typedef struct toks {
  lcd_proto_token t[MAX_TOK];
  size_t ntok;
} toks;

static void tokenize(const char *s, size_t len, toks *tk) {
  tk->ntok = 0;
  size_t i = 0;
  while (i < len) {
    while (i < len && s[i] == ' ') i++;
    if (i == len) break;
    size_t start = i;
    while (i < len && s[i] != ' ') i++;
    if (tk->ntok < MAX_TOK) {
      tk->t[tk->ntok].s = s + start;
      tk->t[tk->ntok].len = i - start;
    }
    tk->ntok++;
  }
}

static int tok_is(const lcd_proto_token *t, const char *word) {
  size_t n = strlen(word);
  return t->len == n && memcmp(t->s, word, n) == 0;
}

/* Sets req->noreply when the last token is "noreply"; returns how many
 * tokens remain before it. */
static size_t take_noreply(const toks *tk, lcd_proto_req *req) {
  if (tk->ntok >= 2 && tk->ntok <= MAX_TOK &&
      tok_is(&tk->t[tk->ntok - 1], "noreply")) {
    req->noreply = 1;
    return tk->ntok - 1;
  }
  return tk->ntok;
}

static lcd_proto_cmd bad(lcd_proto_req *req, const char *why) {
  req->error = why;
  return req->cmd = LCD_PROTO_BAD;
}

static lcd_proto_cmd refused(lcd_proto_req *req, const char *why) {
  req->error = why;
  return req->cmd = LCD_PROTO_REFUSED;
}

/* ---- commands ---------------------------------------------------------- */

static const char *const tally_delta_why =
    "invalid numeric delta argument (a tally takes 1..9223372036854775807)";

/* incr/decr tally:NAME D [noreply]: n tokens before noreply; req->tally
 * already holds NAME. */
static lcd_proto_cmd parse_tally(const toks *tk, size_t n, int minus,
                                 lcd_proto_req *req) {
  req->keys[0] = tk->t[1];
  req->nkeys = 1;
  if (n != 3)
    return bad(req, minus ? "bad command line format: usage: decr "
                            "tally:<name> <delta> [noreply]"
                          : "bad command line format: usage: incr "
                            "tally:<name> <delta> [noreply]");
  if (lcd_proto_check_name(&req->tally) != 0)
    return bad(req, "invalid tally name (tally: then 1-200 bytes of "
                    "printable ASCII, no space)");
  uint64_t v;
  if (lcd_proto_number(tk->t[2].s, tk->t[2].len, &v) != 0 || v < 1 ||
      v > (uint64_t)INT64_MAX)
    return bad(req, tally_delta_why);
  req->delta = minus ? -(int64_t)v : (int64_t)v;
  return req->cmd = LCD_PROTO_TALLY;
}

static lcd_proto_cmd parse_incr(const toks *tk, lcd_proto_req *req) {
  size_t n = take_noreply(tk, req);
  if (n >= 2 && lcd_proto_tally_name(&tk->t[1], &req->tally))
    return parse_tally(tk, n, 0, req);
  if (n != 3)
    return bad(req, "bad command line format: usage: incr <name> <count> "
                    "[noreply]");
  req->keys[0] = tk->t[1];
  req->nkeys = 1;
  if (lcd_proto_check_name(&tk->t[1]) != 0)
    return bad(req, "invalid counter name");
  uint64_t v;
  if (lcd_proto_number(tk->t[2].s, tk->t[2].len, &v) != 0 || v < 1 ||
      v > LC_BLOCK_MAX)
    return bad(req, "invalid numeric delta argument");
  req->count = v;
  return req->cmd = LCD_PROTO_INCR;
}

/* decr: only tallies go down. */
static lcd_proto_cmd parse_decr(const toks *tk, lcd_proto_req *req) {
  size_t n = take_noreply(tk, req);
  if (n >= 2 && lcd_proto_tally_name(&tk->t[1], &req->tally))
    return parse_tally(tk, n, 1, req);
  return refused(req, "decr is not supported on serial counters: they only "
                      "move forward (decr works on tally:<name>)");
}

const char *lcd_proto_check_key(const lcd_proto_token *t) {
  lcd_proto_token name;
  if (lcd_proto_tally_name(t, &name))
    return lcd_proto_check_name(&name) == 0
               ? NULL
               : "invalid tally name (tally: then 1-200 bytes of printable "
                 "ASCII, no space)";
  return lcd_proto_check_name(t) == 0 ? NULL : "invalid counter name";
}

/* get/gets: the first LCD_PROTO_MAX_KEYS keys; more is set when the line
 * goes on (lcd_proto_get_piece reads the rest). */
static lcd_proto_cmd parse_get(const toks *tk, const char *line,
                               lcd_proto_req *req) {
  if (tk->ntok < 2)
    return bad(req, "bad command line format: usage: get <name> ...");
  size_t n = tk->ntok - 1;
  if (n > LCD_PROTO_MAX_KEYS) {
    n = LCD_PROTO_MAX_KEYS;
    req->more = 1;
    req->rest = (size_t)(tk->t[n + 1].s - line);
  }
  for (size_t i = 1; i <= n; i++) {
    const char *why = lcd_proto_check_key(&tk->t[i]);
    if (why) return bad(req, why);
    req->keys[req->nkeys++] = tk->t[i];
  }
  return req->cmd = LCD_PROTO_GET;
}

size_t lcd_proto_get_start(const char *buf, size_t len, int *gets) {
  if (len >= 4 && memcmp(buf, "get ", 4) == 0) {
    *gets = 0;
    return 4;
  }
  if (len >= 5 && memcmp(buf, "gets ", 5) == 0) {
    *gets = 1;
    return 5;
  }
  return 0;
}

/* Bytes of the line end at buf[i..len): 1 ("\n"), 2 ("\r\n"), 0 (none),
 * -1 (a "\r" that may start one: more input is needed). */
static int line_end_at(const char *buf, size_t i, size_t len) {
  if (buf[i] == '\n') return 1;
  if (buf[i] != '\r') return 0;
  if (i + 1 == len) return -1;
  return buf[i + 1] == '\n' ? 2 : 0;
}

int lcd_proto_get_piece(const char *buf, size_t len, lcd_proto_req *req,
                        size_t *used) {
  memset(req, 0, sizeof *req);
  req->cmd = LCD_PROTO_GET;
  req->more = 1;
  if (len > LCD_PROTO_LINE_MAX + 2) len = LCD_PROTO_LINE_MAX + 2;
  size_t i = 0;
  for (;;) {
    while (i < len && buf[i] == ' ') i++;
    *used = i;
    if (i == len) return i > 0 || req->nkeys > 0;
    int end = line_end_at(buf, i, len);
    if (end < 0) return i > 0 || req->nkeys > 0;
    if (end > 0) {
      req->more = 0;
      *used = i + (size_t)end;
      return 1;
    }
    size_t start = i;
    while (i < len && buf[i] != ' ' && line_end_at(buf, i, len) == 0) i++;
    lcd_proto_token t = {buf + start, i - start};
    if (t.len > LCD_PROTO_KEY_MAX) {
      req->error = "key too long (at most 250 bytes)";
      return -1;
    }
    if (i == len || line_end_at(buf, i, len) < 0) /* it may go on: kept */
      return start > 0 || req->nkeys > 0;
    const char *why = lcd_proto_check_key(&t);
    if (why) {
      req->error = why;
      return -1;
    }
    req->keys[req->nkeys++] = t;
    *used = i;
    if (req->nkeys == LCD_PROTO_MAX_KEYS) return 1;
  }
}

/* set/add/replace/append/prepend <key> <flags> <exptime> <bytes>
 * [noreply], cas with one more number; ms <key> <datalen> <flags>*. */
static lcd_proto_cmd parse_storage(const toks *tk, lcd_proto_req *req,
                                   size_t len_index, size_t min_args,
                                   size_t max_args, const char *why) {
  size_t n = take_noreply(tk, req);
  if (n - 1 < min_args || n - 1 > max_args)
    return bad(req, "bad command line format");
  uint64_t bytes;
  if (lcd_proto_number(tk->t[len_index].s, tk->t[len_index].len, &bytes))
    return bad(req, "bad data chunk length");
  if (bytes > LCD_PROTO_DATA_MAX) {
    req->close = 1;
    return bad(req, "data block too large (at most 1048576 bytes); closing "
                    "the connection");
  }
  req->data_len = bytes + 2;
  return refused(req, why);
}

static const char *const storage_why =
    "storage commands are not supported: logcounterd counters change only "
    "by incr";

/* stats, stats settings, stats tally NAME. */
static lcd_proto_cmd parse_stats(const toks *tk, lcd_proto_req *req) {
  if (tk->ntok == 1) return req->cmd = LCD_PROTO_STATS;
  if (tk->ntok == 2 && tok_is(&tk->t[1], "settings")) {
    req->stats_settings = 1;
    return req->cmd = LCD_PROTO_STATS;
  }
  if (tk->ntok == 2 &&
      (tok_is(&tk->t[1], "slabs") || tok_is(&tk->t[1], "items"))) {
    req->stats_empty = 1;
    return req->cmd = LCD_PROTO_STATS;
  }
  if (tk->ntok == 3 && tok_is(&tk->t[1], "tally")) {
    lcd_proto_token name = tk->t[2], rest;
    if (lcd_proto_tally_name(&name, &rest))
      name = rest; /* "stats tally tally:NAME" too */
    if (lcd_proto_check_name(&name) != 0)
      return bad(req, "invalid tally name (1-200 bytes of printable "
                      "ASCII, no space)");
    req->stats_tally = 1;
    req->tally = name;
    req->keys[0] = name;
    req->nkeys = 1;
    return req->cmd = LCD_PROTO_STATS;
  }
  return bad(req, "unknown stats group (logcounterd has 'stats', "
                  "'stats settings', 'stats tally <name>', and 'stats slabs' "
                  "and 'stats items', which are empty)");
}

/* The admin socket's verbs (src/core/admin_ops.c) and the CLI's names for
 * them: refused on a data port, so that no memcached client can reach
 * them. */
static bool is_admin_verb(const lcd_proto_token *v) {
  static const char *const verbs[] = {
      "hello",   "records", "ledger",  "void",        "prune",
      "verify",  "gaps",    "dump",    "advance",     "restore",
      "release", "adopt",   "backup",  "reservation", "counters",
      "tally",   "tally-add", "tally-get", "tally-flush", "tally-list",
      "promote"};
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (tok_is(v, verbs[i])) return true;
  return false;
}

/* The commands logcounterd refuses, each with its reason (decr: tallies
 * only); LCD_PROTO_UNKNOWN for a verb memcached does not have either. */
static lcd_proto_cmd parse_refused(toks *tk, lcd_proto_req *req) {
  const lcd_proto_token *v = &tk->t[0];
  if (tok_is(v, "decr")) return parse_decr(tk, req);
  if (tok_is(v, "set") || tok_is(v, "add") || tok_is(v, "replace") ||
      tok_is(v, "append") || tok_is(v, "prepend"))
    return parse_storage(tk, req, 4, 4, 4, storage_why);
  if (tok_is(v, "cas")) return parse_storage(tk, req, 4, 5, 5, storage_why);
  if (tok_is(v, "delete") || tok_is(v, "flush_all")) {
    take_noreply(tk, req);
    return refused(req, tok_is(v, "delete")
                            ? "delete is not supported: counters are never "
                              "deleted"
                            : "flush_all is not supported: counters are "
                              "never deleted");
  }
  if (tok_is(v, "touch") || tok_is(v, "gat") || tok_is(v, "gats")) {
    if (tok_is(v, "touch")) take_noreply(tk, req);
    return refused(req, "touch, gat and gats are not supported: counters "
                        "never expire");
  }
  if (tok_is(v, "ms")) {
    if (tk->ntok < 3) return bad(req, "bad command line format");
    return parse_storage(tk, req, 2, 2, MAX_TOK,
                         "ms is not supported: counters change only by "
                         "incr or ma");
  }
  if (tok_is(v, "md"))
    return refused(req, "md is not supported: counters are never deleted");
  if (tok_is(v, "me"))
    return refused(req, "me (meta debug) is not supported: use mg or "
                        "stats");
  if (tok_is(v, "ma") || tok_is(v, "mg") || tok_is(v, "mn"))
    return lcd_proto_meta_parse(tk->t, tk->ntok, MAX_TOK, req);
  if (is_admin_verb(v))
    return refused(req, "admin commands are served on logcounterd's "
                        "admin socket (--admin-socket PATH; logcounter "
                        "--server PATH), or after \"admin\" over TLS by a "
                        "user with the admin right");
  req->error = "unknown command";
  return req->cmd = LCD_PROTO_UNKNOWN;
}

lcd_proto_cmd lcd_proto_parse(const char *line, size_t len,
                              lcd_proto_req *req) {
  toks tk;
  memset(req, 0, sizeof *req);
  if (len > 0 && line[len - 1] == '\n') len--;
  if (len > 0 && line[len - 1] == '\r') len--;
  tokenize(line, len, &tk);
  if (tk.ntok == 0) {
    req->error = "empty line";
    return req->cmd = LCD_PROTO_UNKNOWN;
  }
  const lcd_proto_token *v = &tk.t[0];
  req->verb = *v;
  if (tok_is(v, "incr")) return parse_incr(&tk, req);
  if (tok_is(v, "get") || tok_is(v, "gets")) {
    req->gets = tok_is(v, "gets");
    return parse_get(&tk, line, req);
  }
  if (tok_is(v, "stats")) return parse_stats(&tk, req);
  if (tok_is(v, "version"))
    return tk.ntok == 1 ? (req->cmd = LCD_PROTO_VERSION)
                        : bad(req, "bad command line format: usage: version");
  if (tok_is(v, "admin"))
    return tk.ntok == 1 ? (req->cmd = LCD_PROTO_ADMIN)
                        : bad(req, "bad command line format: usage: admin");
  if (tok_is(v, "quit"))
    return tk.ntok == 1 ? (req->cmd = LCD_PROTO_QUIT)
                        : bad(req, "bad command line format: usage: quit");
  if (tok_is(v, "verbosity")) {
    size_t n = take_noreply(&tk, req);
    uint64_t level;
    if (n != 2 || lcd_proto_number(tk.t[1].s, tk.t[1].len, &level))
      return bad(req, "bad command line format: usage: verbosity <level> "
                      "[noreply]");
    return req->cmd = LCD_PROTO_VERBOSITY;
  }
  return parse_refused(&tk, req);
}
