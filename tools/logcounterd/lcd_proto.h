/*
 * lcd_proto.h - the memcached text-protocol request parser used by logcounterd.
 *
 * Pure functions over caller-owned bytes: no allocation, no global state,
 * no I/O, so they can be unit-tested and fuzzed on their own.  Parsed
 * tokens point into the caller's buffer, which must outlive the request.
 *
 * The daemon frames its input with lcd_proto_frame (one request line at a
 * time, bounded length, binary protocol detected), then classifies the line
 * with lcd_proto_parse, which checks every argument (counter names with
 * lc_check_name, counts, key count, noreply) and, for a command the daemon
 * refuses, says why and how many data bytes follow the line.
 *
 * Tallies: a key "tally:NAME" (LCD_PROTO_TALLY_PREFIX, then a name that
 * passes lc_check_name) names the tally NAME, never a serial counter:
 * "incr tally:NAME D" / "decr tally:NAME D" (D 1..INT64_MAX) are
 * LCD_PROTO_TALLY with delta +D / -D, get/gets may mix tally and counter
 * keys, and "stats tally NAME" asks for one tally's figures.  decr of a
 * serial counter is refused (serials never go down).
 */
#ifndef LCD_PROTO_H
#define LCD_PROTO_H

#include "logcounter.h"

#include <stddef.h>
#include <stdint.h>

/* Longest request line, in bytes, not counting its "\r\n" or "\n". */
#define LCD_PROTO_LINE_MAX 2048
/* Most counter names in one get job: a get/gets line may carry any
 * number of keys (as in memcached); the daemon takes them this many at a
 * time (lcd_proto_get_piece). */
#define LCD_PROTO_MAX_KEYS 128
/* memcached's longest key; a longer token in a get is refused. */
#define LCD_PROTO_KEY_MAX 250
/* Longest opaque token (O flag) of a meta command, as in memcached. */
#define LCD_PROTO_OPAQUE_MAX 32
/* Keys that start with this name a tally (the rest is its name). */
#define LCD_PROTO_TALLY_PREFIX LC_DAEMON_TALLY_PREFIX
#define LCD_PROTO_TALLY_PREFIX_LEN (sizeof LC_DAEMON_TALLY_PREFIX - 1)
/* Largest data block of a storage command that is read and discarded;
 * a larger declared length closes the connection (memcached's default
 * item size limit is 1 MiB). */
#define LCD_PROTO_DATA_MAX (1024 * 1024)

/* What lcd_proto_frame found at the start of the input. */
typedef enum lcd_proto_frame_result {
  LCD_PROTO_FRAME_MORE = 0, /* no complete line yet: read more */
  LCD_PROTO_FRAME_LINE,     /* a complete line of *line_len bytes */
  LCD_PROTO_FRAME_TOO_LONG, /* no line end within LCD_PROTO_LINE_MAX */
  LCD_PROTO_FRAME_BINARY    /* first byte 0x80: binary protocol */
} lcd_proto_frame_result;

/*
 * Looks at buf[0..len), the start of a request.  On LCD_PROTO_FRAME_LINE,
 * *line_len is the length including the terminator ("\n", usually preceded
 * by "\r"), so the caller consumes exactly that many bytes.
 */
lcd_proto_frame_result lcd_proto_frame(const char *buf, size_t len,
                                       size_t *line_len);

/* The kinds of request; each tells the daemon what to do. */
typedef enum lcd_proto_cmd {
  LCD_PROTO_INCR,  /* allocate: name, count, noreply */
  LCD_PROTO_GET,   /* get or gets (gets set): keys[0..nkeys) */
  LCD_PROTO_STATS, /* stats (group: "" or "settings") */
  LCD_PROTO_VERSION,
  LCD_PROTO_VERBOSITY, /* answer OK (unless noreply) */
  LCD_PROTO_QUIT,
  LCD_PROTO_REFUSED, /* a memcached command the daemon refuses:
                             reply "CLIENT_ERROR <error>", then discard
                             data_len bytes that follow the line */
  LCD_PROTO_BAD,     /* malformed: reply "CLIENT_ERROR <error>";
                             close the connection if close is set */
  LCD_PROTO_UNKNOWN, /* not a command: reply "ERROR" */
  LCD_PROTO_TALLY,   /* incr/decr tally:NAME: keys[0] is the whole
                             key, tally its NAME, delta the signed change
                             (+-1..INT64_MAX), noreply */
  LCD_PROTO_MN,      /* meta no-op: answer "MN" */
  LCD_PROTO_ADMIN    /* "admin": the rest of the connection goes to the
                             admin socket (lcd_relay.c) */
} lcd_proto_cmd;

typedef struct lcd_proto_token {
  const char *s; /* into the caller's line; not NUL-terminated */
  size_t len;
} lcd_proto_token;

/* A meta command's reply options (ma is an INCR or TALLY request, mg a
 * GET of one key, with meta.on set). */
typedef struct lcd_proto_meta {
  int on;     /* answer in meta style (HD/VA/EN) */
  int value;  /* v: VA with the value */
  int quiet;  /* q: no HD (ma), no EN (mg) */
  char ret[8]; /* flags to return, in request order: k O c t s f */
  size_t nret;
  lcd_proto_token opaque; /* O<token>, at most LCD_PROTO_OPAQUE_MAX */
  int has_init;           /* ma N.. J<n>: a new counter starts at init */
  uint64_t init;
  int bin;                /* a binary-protocol request (lcd_binary.h):
                             answered in binary, opaque its 4 bytes */
  uint8_t bin_op;         /* its opcode */
} lcd_proto_meta;

typedef struct lcd_proto_req {
  lcd_proto_cmd cmd;
  lcd_proto_token verb; /* the command word as sent */
  /* incr: keys[0] is the counter, count the block size (1..LC_BLOCK_MAX).
   * get/gets: keys[0..nkeys). */
  lcd_proto_token keys[LCD_PROTO_MAX_KEYS];
  size_t nkeys;
  uint64_t count;
  int noreply;           /* incr, verbosity, refused storage commands */
  int gets;              /* the command was gets (answer a cas column) */
  int stats_settings;    /* "stats settings" */
  int stats_empty;       /* "stats slabs", "stats items": only END
                             (logcounterd has no slabs; monitoring asks) */
  int stats_tally;       /* "stats tally NAME": keys[0] and tally are
                             NAME, nkeys 1 */
  lcd_proto_token tally; /* TALLY and stats tally: the tally's name */
  int64_t delta;         /* TALLY: the change, never 0 */
  /* REFUSED: bytes (data block + "\r\n") to read and discard after the
   * line; 0 when nothing follows. */
  uint64_t data_len;
  /* GET: the line goes on after keys[nkeys - 1] (more than
   * LCD_PROTO_MAX_KEYS keys): rest is the offset of what follows in the
   * line; the daemon reads it with lcd_proto_get_piece. */
  int more;
  size_t rest;
  lcd_proto_meta meta; /* ma, mg */
  int close;         /* BAD: close the connection after replying */
  const char *error; /* REFUSED/BAD: static text after CLIENT_ERROR */
} lcd_proto_req;

/*
 * Parses one request line line[0..len) (its terminator may be included or
 * not).  Fills *req (its tokens point into line) and returns req->cmd.
 * Never fails: malformed input is LCD_PROTO_BAD or LCD_PROTO_UNKNOWN with
 * the reason in req->error.
 */
lcd_proto_cmd lcd_proto_parse(const char *line, size_t len, lcd_proto_req *req);

/*
 * The next piece of a get/gets line whose start has been consumed:
 * buf[0..len) follows it (at most LCD_PROTO_LINE_MAX + 2 bytes are
 * looked at).  Takes up to LCD_PROTO_MAX_KEYS complete keys into
 * req->keys (a key is complete when a space or the line end follows it)
 * and sets req->more unless the line end was reached (then *used includes
 * the terminator).  Returns 1 with *used bytes to consume (nkeys may be 0:
 * only spaces, or the line end), 0 if more input is needed, -1 for a bad
 * key (req->error; *used: the bytes up to it; the rest of the line is to
 * be discarded).
 */
int lcd_proto_get_piece(const char *buf, size_t len, lcd_proto_req *req,
                        size_t *used);

/*
 * Whether a line that is too long to frame starts a get or gets (whose
 * keys are then read piece by piece).  Returns the bytes of "get " or
 * "gets " (setting *gets), else 0.
 */
size_t lcd_proto_get_start(const char *buf, size_t len, int *gets);

/*
 * The meta commands ma, mg and mn (lcd_meta.c), given the line's tokens
 * t[0..ntok) (t[0] the verb; ntok may exceed the tokens kept, max).
 * Fills req: ma NAME is LCD_PROTO_INCR (count D, default 1) or
 * LCD_PROTO_TALLY for tally:NAME (MI/M+ add D, MD/M- take it away); mg
 * NAME is LCD_PROTO_GET of one key; mn is LCD_PROTO_MN.  Bad flags are
 * LCD_PROTO_BAD with the reason.
 */
lcd_proto_cmd lcd_proto_meta_parse(const lcd_proto_token *t, size_t ntok,
                                   size_t max, lcd_proto_req *req);

/*
 * Parses a decimal unsigned number: digits only (no sign, space or other
 * byte), at most 20 of them, no overflow.  Returns 0 and *out, or -1.
 */
int lcd_proto_number(const char *s, size_t len, uint64_t *out);

/*
 * Checks a counter name given as a token with lc_check_name.  Returns 0 or
 * LC_ENAME.
 */
int lcd_proto_check_name(const lcd_proto_token *t);

/*
 * Checks a key of get, gets or mg: a counter name, or tally:NAME.
 * Returns NULL, or the reason (static text) it is refused.
 */
const char *lcd_proto_check_key(const lcd_proto_token *t);

/*
 * Whether the key t is in the tally namespace (starts with "tally:").
 * Returns 1 and *name (the part after the prefix, pointing into t; it may
 * be empty), or 0 (a serial counter's key; *name untouched).  The name is
 * not checked: lcd_proto_check_name does that.  So no serial counter
 * reachable through the daemon has a name starting with "tally:".
 */
int lcd_proto_tally_name(const lcd_proto_token *t, lcd_proto_token *name);

#endif /* LCD_PROTO_H */
