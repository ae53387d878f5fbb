/*
 * lcd_binary.h - memcached's binary protocol in logcounterd: the frame
 * parser (pure, lcd_binary.c: unit-tested by tests/test_binary.c, fuzzed
 * by fuzz/fuzz_binary.c), the connection side (lcd_binary_conn.c) and
 * SASL PLAIN (lcd_sasl.c).
 *
 * A connection whose request starts with the byte 0x80 speaks binary
 * from then on (c->binary); every later request must start with 0x80 too.
 * A frame is the 24-byte header (magic, opcode, key length, extras length,
 * data type, vbucket, total body length, opaque, cas; big-endian), then
 * extras, key and value.  The parser checks every field before the body
 * is read: magic 0x80, a known opcode, data type 0 (raw), the extras and
 * key lengths each opcode takes (key 1..LCD_PROTO_KEY_MAX where one is
 * needed, none where none is), extras + key <= body, and a body of at
 * most LCD_BIN_BODY_MAX bytes (so a whole frame fits the connection's
 * LCD_INPUT_MAX input bound) but for the storage commands, whose value
 * (at most LCD_PROTO_DATA_MAX) is discarded unread.  Anything else is
 * LCD_BIN_BAD: the daemon answers the status and the reason, then closes.
 *
 * What each opcode means (docs/protocol.md, "The binary protocol"):
 *   increment/decrement (and their quiet forms) are the text incr/decr:
 *     a counter's block of <delta> ids (answered with its last id), a
 *     tally:NAME's change; the expiration 0xffffffff never creates: a
 *     counter that has handed out no id is answered "not found"; any other
 *     expiration with an initial value >= 1 starts such a counter at the
 *     initial value (as ma N J<n>); decrement of a serial counter is
 *     refused;
 *   get, getq, getk, getkq answer a counter's current value, a tally's
 *     total (as text get), flags 0; a counter never used is not found;
 *   noop, version, stat ("", "settings"; "slabs"/"items": only the end),
 *     verbosity, quit, quitq;
 *   sasl list mechs / sasl auth (PLAIN) against --auth-file;
 *   set, add, replace, append, prepend, delete, flush, touch, gat and
 *     their quiet forms are refused with "not supported" (nothing is
 *     changed; a value is discarded).
 * Quiet forms drop the success reply only; errors are always answered.
 */
#ifndef LCD_BINARY_H
#define LCD_BINARY_H

#include "lcd_auth.h"
#include "lcd_proto.h"

#include <stddef.h>
#include <stdint.h>

#define LCD_BIN_MAGIC_REQ 0x80
#define LCD_BIN_MAGIC_RES 0x81
#define LCD_BIN_HEADER 24
/* Largest body of a frame that is read whole: header + body fit in the
 * connection's 64 KiB input bound (LCD_INPUT_MAX). */
#define LCD_BIN_BODY_MAX (64 * 1024 - LCD_BIN_HEADER)
/* Longest SASL mechanism name accepted (memcached's MAX_SASL_MECH_LEN). */
#define LCD_BIN_MECH_MAX 32

/* Opcodes (memcached's protocol_binary.h). */
enum {
  LCD_BIN_GET = 0x00,
  LCD_BIN_SET = 0x01,
  LCD_BIN_ADD = 0x02,
  LCD_BIN_REPLACE = 0x03,
  LCD_BIN_DELETE = 0x04,
  LCD_BIN_INCREMENT = 0x05,
  LCD_BIN_DECREMENT = 0x06,
  LCD_BIN_QUIT = 0x07,
  LCD_BIN_FLUSH = 0x08,
  LCD_BIN_GETQ = 0x09,
  LCD_BIN_NOOP = 0x0a,
  LCD_BIN_VERSION = 0x0b,
  LCD_BIN_GETK = 0x0c,
  LCD_BIN_GETKQ = 0x0d,
  LCD_BIN_APPEND = 0x0e,
  LCD_BIN_PREPEND = 0x0f,
  LCD_BIN_STAT = 0x10,
  LCD_BIN_SETQ = 0x11,
  LCD_BIN_ADDQ = 0x12,
  LCD_BIN_REPLACEQ = 0x13,
  LCD_BIN_DELETEQ = 0x14,
  LCD_BIN_INCREMENTQ = 0x15,
  LCD_BIN_DECREMENTQ = 0x16,
  LCD_BIN_QUITQ = 0x17,
  LCD_BIN_FLUSHQ = 0x18,
  LCD_BIN_APPENDQ = 0x19,
  LCD_BIN_PREPENDQ = 0x1a,
  LCD_BIN_VERBOSITY = 0x1b,
  LCD_BIN_TOUCH = 0x1c,
  LCD_BIN_GAT = 0x1d,
  LCD_BIN_GATQ = 0x1e,
  LCD_BIN_SASL_LIST = 0x20,
  LCD_BIN_SASL_AUTH = 0x21,
  LCD_BIN_SASL_STEP = 0x22,
  LCD_BIN_GATK = 0x23,
  LCD_BIN_GATKQ = 0x24
};

/* Response statuses. */
enum {
  LCD_BIN_OK = 0x0000,
  LCD_BIN_ENOENT = 0x0001,
  LCD_BIN_E2BIG = 0x0003,
  LCD_BIN_EINVAL = 0x0004,
  LCD_BIN_ENONNUMERIC = 0x0006,
  LCD_BIN_EAUTH = 0x0020,
  LCD_BIN_EUNKNOWN = 0x0081,
  LCD_BIN_ENOMEM = 0x0082,
  LCD_BIN_ENOTSUP = 0x0083,
  LCD_BIN_EINTERNAL = 0x0084,
  LCD_BIN_ETMPFAIL = 0x0086
};

/* meta.init of a binary increment whose expiration is 0xffffffff: never
 * create (lcd_pool.c's start_at answers LCD_BIN_ENOCREATE for a counter
 * that has handed out no id; no J<n> reaches it: J is <= LC_VALUE_MAX). */
#define LCD_BIN_NO_CREATE UINT64_MAX
#define LCD_BIN_ENOCREATE (-1000) /* a job's rc: not found, not created */

/* A request header, in host order. */
typedef struct lcd_bin_header {
  uint8_t magic, opcode, extlen, datatype;
  uint16_t keylen, vbucket;
  uint32_t bodylen, opaque;
  uint64_t cas;
} lcd_bin_header;

typedef enum lcd_bin_frame_result {
  LCD_BIN_MORE = 0, /* fewer bytes than the header or the whole frame */
  LCD_BIN_FRAME,    /* a complete, well-formed frame: LCD_BIN_HEADER +
                       h->bodylen bytes */
  LCD_BIN_SWALLOW,  /* a refused storage command's well-formed header: its
                       LCD_BIN_HEADER + h->bodylen bytes are discarded */
  LCD_BIN_BAD       /* nonsense: answer *status and *why, then close */
} lcd_bin_frame_result;

/*
 * Looks at buf[0..len), the start of a binary request.  Decodes the header
 * into *h once LCD_BIN_HEADER bytes are there and checks it (see above).
 * On LCD_BIN_BAD, *status and *why (static text) say what is wrong (h
 * holds what was decoded: the opcode and opaque for the reply).
 */
lcd_bin_frame_result lcd_bin_frame(const unsigned char *buf, size_t len,
                                   lcd_bin_header *h, uint16_t *status,
                                   const char **why);

/*
 * Turns the complete frame frame[0..LCD_BIN_HEADER + h->bodylen) (checked
 * by lcd_bin_frame) into the request the text parser would give: INCR,
 * TALLY, GET (one key), MN (noop), VERSION, STATS, VERBOSITY, QUIT,
 * REFUSED (not supported), BAD (req->error; the key or a field's value is
 * refused), or UNKNOWN (the SASL opcodes, which the caller serves).  Its
 * tokens point into frame.  req->meta.on and .bin are set and .bin_op is
 * the opcode, .quiet for the quiet forms, .opaque the 4 opaque bytes as
 * sent; req->noreply is 0 (a quiet form still answers errors).
 */
lcd_proto_cmd lcd_bin_parse(const lcd_bin_header *h,
                            const unsigned char *frame, lcd_proto_req *req);

/*
 * For the jobs' look-ahead (lcd_jobs.c's next_line): a complete frame at
 * buf[0..len) parsed into *req: its command and *flen, the frame's length;
 * -1 when the bytes hold no complete well-formed frame.
 */
int lcd_bin_next(const char *buf, size_t len, lcd_proto_req *req,
                 size_t *flen);

/*
 * Writes a response header into out: magic 0x81, the opcode, status and
 * opaque, the lengths (body = extlen + keylen + vlen) and cas.
 */
void lcd_bin_encode(unsigned char out[LCD_BIN_HEADER], uint8_t opcode,
                    uint16_t status, uint32_t opaque, uint64_t cas,
                    uint8_t extlen, uint16_t keylen, uint32_t vlen);

/*
 * SASL PLAIN's message msg[0..len): [authzid] NUL authcid NUL password
 * (RFC 4616).  0 and the user (authcid) and password, or -1: not two
 * NULs, an empty user or password, an authzid other than the user, a
 * user longer than LCD_AUTH_USER_MAX or holding a control byte, ':' or a
 * space, a password longer than LCD_AUTH_PASS_MAX or holding a NUL.
 */
int lcd_sasl_plain_parse(const char *msg, size_t len, lcd_auth_span *user,
                         lcd_auth_span *pass);

/* ---- the connection side (lcd_binary_conn.c, lcd_sasl.c) -------------- */

struct lcd_conn;
struct lcd_job;
struct evbuffer;

/*
 * lcd_conn.c, for a connection that speaks binary (or whose next request
 * starts with 0x80; c->binary is set then): serves the request at the head
 * of in.  1 if it was consumed (or c is closing), 0 if it must wait for
 * the jobs before it (left in the input), 2 if more input is needed.
 */
int lcd_bin_request(struct lcd_conn *c, struct evbuffer *in);

/* A finished increment or tally job's success reply (lcd_put_meta's, for
 * a binary request): value is the last id or the tally's total after the
 * change (a quiet form: nothing).  A get job (which lcd_jobs.c answers
 * with lcd_bin_put_get) gets every key's reply; hit is not used. */
void lcd_bin_put_job(struct lcd_conn *c, const struct lcd_job *j, int hit,
                     int64_t value);
/* The reply to key i of a finished get job (a run of gets of one opcode
 * and opaque is one job, lcd_binary_conn.c): hit[i], values[i]. */
void lcd_bin_put_get(struct lcd_conn *c, const struct lcd_job *j, size_t i);
/* A finished job's failure rc (an LC_E code, or LCD_BIN_ENOCREATE) as a
 * binary error reply, with the text "<ERRNAME> <message>[: <detail>]"
 * (a get job: one for each of its keys). */
void lcd_bin_put_error(struct lcd_conn *c, const struct lcd_job *j, int rc,
                       const char *detail);
/* A response frame with the given parts, appended to c's output. */
void lcd_bin_put(struct lcd_conn *c, uint8_t opcode, uint16_t status,
                 uint32_t opaque, uint64_t cas, const void *ext,
                 uint8_t extlen, const void *key, uint16_t keylen,
                 const void *val, uint32_t vlen);

/*
 * lcd_sasl.c: a SASL frame (list mechs, auth, step), complete, at the head
 * of in (flen bytes); consumes it and answers (a failure: after the peer's
 * delay, then the connection is closed, as the text handshake's).
 */
void lcd_sasl_request(struct lcd_conn *c, struct evbuffer *in,
                      const lcd_bin_header *h, const unsigned char *frame,
                      size_t flen);
/* A binary request before authentication (--auth-file): an auth error,
 * counted, after the delay; the connection is closed. */
void lcd_sasl_refuse(struct lcd_conn *c, struct evbuffer *in,
                     const lcd_bin_header *h, const char *why);

/* lcd_sasl.c: the auth error a delayed SASL failure is answered with
 * (lcd_gate.c's hold ends with it on a binary connection). */
void lcd_sasl_put_failure(struct lcd_conn *c);

#endif /* LCD_BINARY_H */
