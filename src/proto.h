/*
 * proto.h - the memcached text-protocol request parser used by logcounterd.
 *
 * Pure functions over caller-owned bytes: no allocation, no global state,
 * no I/O, so they can be unit-tested and fuzzed on their own.  Parsed
 * tokens point into the caller's buffer, which must outlive the request.
 *
 * The daemon frames its input with lc__proto_frame (one request line at a
 * time, bounded length, binary protocol detected), then classifies the line
 * with lc__proto_parse, which checks every argument (counter names with
 * lc_check_name, counts, key count, noreply) and, for a command the daemon
 * refuses, says why and how many data bytes follow the line.
 *
 * Tallies: a key "tally:NAME" (LC__PROTO_TALLY_PREFIX, then a name that
 * passes lc_check_name) names the tally NAME, never a serial counter:
 * "incr tally:NAME D" / "decr tally:NAME D" (D 1..INT64_MAX) are
 * LC__PROTO_TALLY with delta +D / -D, get/gets may mix tally and counter
 * keys, and "stats tally NAME" asks for one tally's figures.  decr of a
 * serial counter is refused (serials never go down).
 */
#ifndef LC_PROTO_H
#define LC_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* Longest request line, in bytes, not counting its "\r\n" or "\n". */
#define LC__PROTO_LINE_MAX 2048
/* Most counter names in one get/gets. */
#define LC__PROTO_MAX_KEYS 128
/* Keys that start with this name a tally (the rest is its name). */
#define LC__PROTO_TALLY_PREFIX "tally:"
#define LC__PROTO_TALLY_PREFIX_LEN 6
/* Largest data block of a storage command that is read and discarded;
 * a larger declared length closes the connection (memcached's default
 * item size limit is 1 MiB). */
#define LC__PROTO_DATA_MAX (1024 * 1024)

/* What lc__proto_frame found at the start of the input. */
typedef enum lc__proto_frame_result {
  LC__PROTO_FRAME_MORE = 0,   /* no complete line yet: read more */
  LC__PROTO_FRAME_LINE,       /* a complete line of *line_len bytes */
  LC__PROTO_FRAME_TOO_LONG,   /* no line end within LC__PROTO_LINE_MAX */
  LC__PROTO_FRAME_BINARY      /* first byte 0x80: binary protocol */
} lc__proto_frame_result;

/*
 * Looks at buf[0..len), the start of a request.  On LC__PROTO_FRAME_LINE,
 * *line_len is the length including the terminator ("\n", usually preceded
 * by "\r"), so the caller consumes exactly that many bytes.
 */
lc__proto_frame_result lc__proto_frame(const char *buf, size_t len,
                                       size_t *line_len);

/* The kinds of request; each tells the daemon what to do. */
typedef enum lc__proto_cmd {
  LC__PROTO_INCR,         /* allocate: name, count, noreply */
  LC__PROTO_GET,          /* get or gets (gets set): keys[0..nkeys) */
  LC__PROTO_STATS,        /* stats (group: "" or "settings") */
  LC__PROTO_VERSION,
  LC__PROTO_VERBOSITY,    /* answer OK (unless noreply) */
  LC__PROTO_QUIT,
  LC__PROTO_REFUSED,      /* a memcached command the daemon refuses:
                             reply "CLIENT_ERROR <error>", then discard
                             data_len bytes that follow the line */
  LC__PROTO_BAD,          /* malformed: reply "CLIENT_ERROR <error>";
                             close the connection if close is set */
  LC__PROTO_UNKNOWN,      /* not a command: reply "ERROR" */
  LC__PROTO_TALLY         /* incr/decr tally:NAME: keys[0] is the whole
                             key, tally its NAME, delta the signed change
                             (+-1..INT64_MAX), noreply */
} lc__proto_cmd;

typedef struct lc__proto_token {
  const char *s;          /* into the caller's line; not NUL-terminated */
  size_t len;
} lc__proto_token;

typedef struct lc__proto_req {
  lc__proto_cmd cmd;
  lc__proto_token verb;   /* the command word as sent */
  /* incr: keys[0] is the counter, count the block size (1..LC_BLOCK_MAX).
   * get/gets: keys[0..nkeys). */
  lc__proto_token keys[LC__PROTO_MAX_KEYS];
  size_t nkeys;
  uint64_t count;
  int noreply;            /* incr, verbosity, refused storage commands */
  int gets;               /* the command was gets (answer a cas column) */
  int stats_settings;     /* "stats settings" */
  int stats_tally;        /* "stats tally NAME": keys[0] and tally are
                             NAME, nkeys 1 */
  lc__proto_token tally;  /* TALLY and stats tally: the tally's name */
  int64_t delta;          /* TALLY: the change, never 0 */
  /* REFUSED: bytes (data block + "\r\n") to read and discard after the
   * line; 0 when nothing follows. */
  uint64_t data_len;
  int close;              /* BAD: close the connection after replying */
  const char *error;      /* REFUSED/BAD: static text after CLIENT_ERROR */
} lc__proto_req;

/*
 * Parses one request line line[0..len) (its terminator may be included or
 * not).  Fills *req (its tokens point into line) and returns req->cmd.
 * Never fails: malformed input is LC__PROTO_BAD or LC__PROTO_UNKNOWN with
 * the reason in req->error.
 */
lc__proto_cmd lc__proto_parse(const char *line, size_t len,
                              lc__proto_req *req);

/*
 * Parses a decimal unsigned number: digits only (no sign, space or other
 * byte), at most 20 of them, no overflow.  Returns 0 and *out, or -1.
 */
int lc__proto_number(const char *s, size_t len, uint64_t *out);

/*
 * Checks a counter name given as a token with lc_check_name.  Returns 0 or
 * LC_ENAME.
 */
int lc__proto_check_name(const lc__proto_token *t);

/*
 * Whether the key t is in the tally namespace (starts with "tally:").
 * Returns 1 and *name (the part after the prefix, pointing into t; it may
 * be empty), or 0 (a serial counter's key; *name untouched).  The name is
 * not checked: lc__proto_check_name does that.  So no serial counter
 * reachable through the daemon has a name starting with "tally:".
 */
int lc__proto_tally_name(const lc__proto_token *t, lc__proto_token *name);

#endif /* LC_PROTO_H */
