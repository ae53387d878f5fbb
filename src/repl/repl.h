/*
 * repl/repl.h - replication to one standby: the frames both ends speak
 * (wire.c, over TLS wire_tls.c, authenticated auth.c), the primary's side
 * (replicate.c) and the standby's (follow.c); promotion is core/'s
 * (promote.c).  Calls log/ and below; log_write.c reaches the primary's
 * side only through the hook replicate.c installs.
 *
 * The stream is the log's own write groups, in the order log_write.c's
 * one leader writes them, numbered by seq within an epoch (a random
 * number the primary picks when it starts and again whenever the standby
 * may hold something the primary does not: a write that failed here, or
 * a floor the standby did not acknowledge in time).  A standby that comes
 * back with the current epoch and a seq still in the primary's ring goes
 * on from there; any other gets a full copy from a LevelDB snapshot.
 * Every entry of a batch is a put or a delete of a whole key, so applying
 * a batch that a snapshot already holds changes nothing: the copy's seq is
 * one that every earlier write is in.
 *
 * Frames: a type byte, a 4-byte big-endian length, the payload.
 *   standby -> primary  'h' hello "1 EPOCH SEQ"      'a' ack: seq (8)
 *                       (with a replication secret: "2 EPOCH SEQ NONCE",
 *                       then 'c' and 'v', auth.c)
 *   primary -> standby  'm' "full|resume EPOCH SEQ required|preferred"
 *                       'k' snapshot entries   'e' end of copy: seq, ops
 *                       'b' batch: seq, flags, time, ops, entries
 *                       'p' heartbeat: seq, time, ops
 *                       'y' in sync: every floor now waits for this standby
 *                       'x' refusal (text), then the primary closes
 * Entries: 'P' klen(4) key vlen(4) value | 'D' klen(4) key.
 */
#ifndef LC_REPL_H
#define LC_REPL_H

#include "log/log.h"

#define LC__STANDBY_KEY "!logcounter-standby" /* the standby's position */
#define LC__REPL_HEX 64 /* nonces and MACs: 32 bytes in hex */

/* auth.c: a fresh nonce (0 or LC_EREMOTE); HMAC-SHA256 of
 * "ROLE A B" under the secret, in hex; its check, in constant time. */
int lc__repl_nonce(char out[LC__REPL_HEX + 1]);
void lc__repl_mac(const char *secret, const char *role, const char *a,
                  const char *b, char out[LC__REPL_HEX + 1]);
bool lc__repl_mac_ok(const char *secret, const char *role, const char *a,
                     const char *b, const char *got);
#define LC__REPL_FRAME_MAX (64u << 20)

typedef struct lc__wire_buf {
  char *p;
  size_t n, cap;
  bool nomem;
} lc__wire_buf;
void lc__wire_buf_put(lc__wire_buf *b, const void *p, size_t n);
void lc__wire_buf_u64(lc__wire_buf *b, uint64_t v);
void lc__wire_buf_free(lc__wire_buf *b);

/* One end of a replication connection: a socket, TLS on it or not. */
typedef struct lc__wire {
  int fd;
  struct ssl_st *ssl; /* TLS (wire_tls.c), or NULL: plain */
  pthread_mutex_t mu; /* TLS: one OpenSSL call at a time (the primary
                         reads acknowledgments while it sends) */
} lc__wire;
/* One frame; LC_EREMOTE (closed, timed out, too long) with the detail.
 * One sender and one receiver may use w at once. */
int lc__wire_send(lc__wire *w, char type, const void *p, size_t n,
                  int timeout_ms);
int lc__wire_recv(lc__wire *w, char *type, lc__wire_buf *payload, int timeout_ms);

/* ---- wire_tls.c: replication over mutual TLS (a local handle's tls_ca,
 * tls_cert and tls_key, with replication_listen or standby_of) */
/* A local handle's replication is mutual TLS (its options). */
bool lc__repl_tls_on(const lc_options *o);
void lc__wire_init(lc__wire *w, int fd);
/* The TLS handshake on w's connected socket: the primary's side (host
 * NULL) or the standby's, which checks that the primary's certificate
 * names host.  Each wait within timeout_ms; 0 or LC_EREMOTE. */
int lc__wire_tls(lc__wire *w, struct ssl_ctx_st *ctx, const char *host,
                 int timeout_ms);
/* Sends (want 1) or receives all n bytes over w's TLS. */
int lc__wire_tls_io(lc__wire *w, int want, char *p, size_t n, int timeout_ms);
/* Ends TLS (close_notify when the socket takes it) and closes the fd. */
void lc__wire_close(lc__wire *w);
/* Appends one entry: a put of k, or its delete when v is NULL. */
void lc__wire_put_entry(lc__wire_buf *out, const char *k, size_t klen,
                        const char *v, size_t vlen);
/* Appends b's entries to out; how many there were in *ops. */
void lc__wire_put_batch(lc__wire_buf *out, leveldb_writebatch_t *b, uint64_t *ops);
/* Adds the entries in p[0..n) to b: their count, or LC_ECORRUPT. */
int64_t lc__wire_get_batch(const char *p, size_t n, leveldb_writebatch_t *b);

/* Every entry of the log but the standby's position, from one snapshot,
 * in rounds: take (the gate held) until it returns true (the round is
 * full) or the log ends, then round (without the gate).  0, or the first
 * error (the iterator's, take's round's). */
int lc__repl_walk(lc_t *h,
                  bool (*take)(void *arg, const char *k, size_t klen,
                               const char *v, size_t vlen),
                  int (*round)(void *arg), void *arg);

/* A write group of the stream as it is sent: the 'b' frame's payload
 * (seq, sync, time, ops, the entries).  The primary's ring and a
 * standby's (kept for the day it is promoted) hold these. */
typedef struct lc__repl_ent {
  struct lc__repl_ent *next;
  uint64_t seq;
  size_t n;
  int pins;    /* primary: sessions sending it now (outside its mu) */
  bool orphan; /* primary: out of the ring while pinned */
  char p[];
} lc__repl_ent;
#define LC__REPL_RING_MAX (64u << 20) /* bytes of entries kept, at most */

/* What a standby hands its promotion (lc__follow_fork): where its log
 * stands in its old primary's stream, and the last entries of that
 * stream it applied (head..tail, in order, ending at seq; may be empty). */
typedef struct lc__repl_fork {
  uint64_t epoch, seq, ops;
  lc__repl_ent *head, *tail;
  size_t bytes;
} lc__repl_fork;

/* ---- replicate.c: the primary ---- */
typedef struct lc__repl lc__repl;
int lc__repl_start(lc_t *h);
/* A promoted standby's start (fork from lc__follow_fork, taken over):
 * the stream goes on from fork->seq under a new epoch, so that another
 * standby of the old primary that stands at or behind fork->seq within
 * the ring resumes instead of copying.  Until lc__repl_collected, synced
 * writes wait for no standby (the promotion's own, as before any
 * standby could be there). */
int lc__repl_start_fork(lc_t *h, lc__repl_fork *fork);
void lc__repl_collected(lc__repl *r);
void lc__repl_stop(lc_t *h);
/* The hook's two halves (lc__log_hook, installed by lc__repl_start).
 * log_write.c's leader, before its group b goes to LevelDB: the group
 * enters the stream; a synced one waits for the standby (see
 * lc_options.standby_mode).  Nonzero: not to be written. */
int lc__repl_before(lc__repl *r, leveldb_writebatch_t *b, bool sync,
                    uint64_t *seq);
/* After the group's local write (ok: it succeeded). */
void lc__repl_after(lc__repl *r, uint64_t seq, bool ok);
void lc__repl_status(lc__repl *r, lc_replication_status *s);
/* The standbys connected now (sessions that have not ended); takes r->mu. */
int lc__repl_standbys(lc__repl *r);

/* ---- follow.c: the standby ---- */
typedef struct lc__follow lc__follow;
/* After lc__follow_stop: the log's position and the entries kept, into
 * *out (the standby keeps none after it). */
void lc__follow_fork(lc_t *h, lc__repl_fork *out);
int lc__follow_start(lc_t *h);
/* Stops following (joins the thread); lc__follow_free also frees. */
void lc__follow_stop(lc_t *h);
void lc__follow_free(lc_t *h);
/* Whether promotion needs force, and why (after lc__follow_stop). */
bool lc__follow_stale(lc_t *h, char *why, size_t size);
void lc__follow_status(lc__follow *f, lc_replication_status *s);

/* lc_open of a log that is a standby's copy, without standby_of:
 * LC_ESTANDBY (it must be promoted, never just opened). */
int lc__follow_copy_check(lc_t *h);
/* LC_ESTANDBY while h is a standby. */
int lc__follow_primary_only(lc_t *h);

/* ---- cluster.c: automatic failover's hooks (lc_set_lease_deadline,
 * lc_replication_peer, lc_replication_approve in logcounter.h) ---- */
#define LC__PEER_MAX 64 /* "HOST:PORT" of one end of a connection */
/* Whether the handle's lease deadline has passed (0: there is none). */
bool lc__cluster_lease_expired(lc_t *h);
/* Whether lc_replication_need_approval was called (before lc_open). */
bool lc__cluster_approval(void);
/* The primary: its standby's address ("" with none) and whether it is in
 * sync; takes r->mu. */
void lc__repl_peer(lc__repl *r, char *out, size_t size, bool *in_sync);
/* The primary: the standby at peer may go in sync (and does now, if it
 * has caught up); takes r->mu. */
void lc__repl_approve(lc__repl *r, const char *peer);
/* The standby: its own address on the connection, or ""; takes f->mu. */
void lc__follow_local(lc__follow *f, char *out, size_t size);

#endif
