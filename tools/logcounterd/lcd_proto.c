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
 *    1..LC_BLOCK_MAX, a get carries at most LCD_PROTO_MAX_KEYS names, and
 *    every command that would store, move back, delete or expire a value
 *    is refused with its reason; a refused storage command's data block is
 *    measured so that the daemon can discard it and stay in sync;
 *  - logcounterd only: a key "tally:..." is always a tally, never a serial
 *    counter (its name after the prefix must pass lc_check_name); incr and
 *    decr of a tally take 1..INT64_MAX, decr of a serial counter is
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

static lcd_proto_cmd parse_get(const toks *tk, lcd_proto_req *req) {
  if (tk->ntok < 2)
    return bad(req, "bad command line format: usage: get <name> ...");
  if (tk->ntok - 1 > LCD_PROTO_MAX_KEYS)
    return bad(req, "too many keys (at most 128 in one get)");
  for (size_t i = 1; i < tk->ntok; i++) {
    lcd_proto_token name;
    if (lcd_proto_tally_name(&tk->t[i], &name)) {
      if (lcd_proto_check_name(&name) != 0)
        return bad(req, "invalid tally name (tally: then 1-200 bytes of "
                        "printable ASCII, no space)");
    } else if (lcd_proto_check_name(&tk->t[i]) != 0) {
      return bad(req, "invalid counter name");
    }
    req->keys[req->nkeys++] = tk->t[i];
  }
  return req->cmd = LCD_PROTO_GET;
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
                  "'stats settings' and 'stats tally <name>')");
}

/* The admin socket's verbs (src/admin_ops.c) and the CLI's names for
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
                         "meta commands are not "
                         "supported: use incr and get");
  }
  if (tok_is(v, "mg") || tok_is(v, "md") || tok_is(v, "ma") ||
      tok_is(v, "mn") || tok_is(v, "me"))
    return refused(req, "meta commands are not supported: use incr and get");
  if (is_admin_verb(v))
    return refused(req, "admin commands are served only on logcounterd's "
                        "admin socket (--admin-socket PATH; logcounter "
                        "--server PATH), never on a data port");
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
    return parse_get(&tk, req);
  }
  if (tok_is(v, "stats")) return parse_stats(&tk, req);
  if (tok_is(v, "version"))
    return tk.ntok == 1 ? (req->cmd = LCD_PROTO_VERSION)
                        : bad(req, "bad command line format: usage: version");
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
