/*
 * replicate.c - the primary's side of replication (see repl.h): the ring
 * of recent write groups, the connections (each proves itself on a
 * thread of its own, at most PENDING_MAX at once), the standbys' sessions
 * (up to STANDBYS_MAX at once; each connection's thread sends, another
 * reads acknowledgments), and the wait of a synced write for the one
 * synchronous standby.
 *
 * Invariants:
 *  - a group enters the ring (and gets its seq) before it is written
 *    here, by log_write.c's one leader, so the ring's order is the log's;
 *  - one session at most is the synchronous standby (sync): the first
 *    to have acknowledged everything while there is none (with
 *    lc_replication_need_approval: only the approved one); the others
 *    stream behind it, their acknowledgments wait for nobody, and each
 *    is told nothing ('y' goes to the sync one only), so each stays
 *    stale (promotion needs force) until it is the sync one;
 *  - a synced group (a floor) is written here only after the synchronous
 *    standby acknowledged it (it acknowledges after its own synced
 *    write), or,
 *    in preferred mode, after the standby was given up; in required mode
 *    no standby in sync within the timeout fails the write (LC_ENOSTANDBY)
 *    and nothing of it is written here;
 *  - a floor the standby did not acknowledge in time (required mode) is
 *    written nowhere here, and the stream takes it back: the next entry
 *    puts every key it touched as this log holds it, so a standby that
 *    applied it late still ends up with this log's state;
 *  - once a floor has waited in vain, the next ones fail at once, until a
 *    standby is in sync again: the primary stops at the end of its window
 *    without a timeout per counter;
 *  - when the standby may hold what this log cannot take back (a group
 *    whose write failed here), the epoch changes and the ring is emptied:
 *    the standby gets a full copy next time, never a resume from a
 *    history this log lacks;
 *  - the ring holds at most RING_MAX bytes; an entry being sent is pinned
 *    (pins) and never freed under its sender; a session that would need
 *    an entry evicted is ended (it copies next time).
 */
#include "repl/repl.h"
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RING_MAX LC__REPL_RING_MAX
#define HEARTBEAT_MS 100
#define IO_TIMEOUT_MS 5000
#define HELLO_MS 2000  /* each step of a connection's proof, at most */
#define PROOF_MS 5000  /* the whole proof (TLS, hello, secret), at most */
#define PENDING_MAX 8  /* connections not yet a session; the oldest goes */
#define STANDBYS_MAX 4 /* sessions at once; a further proved one waits */
#define CHUNK_BYTES (1u << 20)

typedef lc__repl_ent ent; /* repl.h: pins, orphan: its last sender frees
                             an entry cleared from the ring while sent */

/* A standby's session (mu), in r->sessions from its handshake to its end;
 * freed by its own thread only. */
typedef struct sess {
  struct sess *next;
  int fd;
  uint64_t gen;           /* sessions so far, when it began */
  uint64_t acked, sent;   /* acknowledged by it; sent to it */
  bool dead;              /* ended: its threads leave */
  bool say_sync;          /* 'y' to send: it is the synchronous standby */
} sess;

struct lc__repl {
  lc_t *h;
  int mode, timeout_ms;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* entries, acknowledgments, the session's end */
  ent *head, *tail;
  size_t bytes;
  uint64_t seq, written, ops, epoch;
  /* the sessions */
  sess *sessions;
  int nsess;
  uint64_t gen;        /* sessions so far */
  sess *sync;          /* the synchronous standby, or NULL */
  bool gave_up;
  /* a promoted standby's: the old epoch and where this log left it (a
   * standby of it at or behind fork_seq may resume); 0: none */
  uint64_t fork_epoch, fork_seq;
  bool collecting; /* the promotion's writes: synced ones wait for nobody */ /* a floor waited in vain: the next fail at once, until
                   a standby is in sync again */
  bool stop;
  int lfd;
  struct ssl_ctx_st *ctx; /* h->repl_tls[0]: TLS (wire_tls.c), or NULL */
  pthread_t listener;
  /* connections not (yet) the session, each served by a thread of its
   * own (conn_main): proving itself, or proved and waiting for the
   * session to be free; at most PENDING_MAX, the oldest shut down */
  struct pend *pending;
  int npending, nthreads; /* nthreads: conn_main threads alive */
  pthread_cond_t scv;     /* a session ended, a connection kicked, threads */
  uint64_t ack_timeouts, snapshots, connects;
  /* cluster.c: with need_approval, a standby goes in sync only while
   * its address (getpeername of cfd) is approved (lc__repl_approve) */
  bool need_approval;
  char approved[LC__PEER_MAX];
};

static uint64_t random_epoch(void) {
  uint64_t v = lc__random64();
  return v ? v : 1; /* 0: a standby that never followed */
}

/* mu held.  An entry being sent outside mu (pinned) is left to its last
 * sender, who frees it when it finds it orphaned. */
static void ring_clear(lc__repl *r) {
  for (ent *e = r->head, *n; e; e = n) {
    n = e->next;
    if (e->pins)
      e->orphan = true;
    else
      free(e);
  }
  r->head = r->tail = NULL;
  r->bytes = 0;
}

static void maybe_sync(lc__repl *r, sess *s);

/* mu held: ends s (its threads see it and leave); when it was the
 * synchronous standby, another that has everything may take its place. */
static void drop(lc__repl *r, sess *s) {
  if (!s->dead) {
    s->dead = true;
    shutdown(s->fd, SHUT_RDWR);
  }
  if (r->sync == s) {
    r->sync = NULL;
    for (sess *o = r->sessions; o; o = o->next) maybe_sync(r, o);
  }
  pthread_cond_broadcast(&r->cv);
}

/* mu held: ends every session. */
static void drop_all(lc__repl *r) {
  r->sync = NULL;
  for (sess *s = r->sessions; s; s = s->next) drop(r, s);
}

/* mu held: the standbys may hold something this log does not. */
static void diverge(lc__repl *r) {
  r->epoch = random_epoch();
  ring_clear(r);
  drop_all(r);
}

static void ring_evict(lc__repl *r) {
  while (r->bytes > RING_MAX && r->head && !r->head->pins) {
    for (sess *s = r->sessions; s; s = s->next)
      if (!s->dead && r->head->seq >= s->sent)
        drop(r, s); /* it fell behind by more than the ring */
    ent *e = r->head;
    r->head = e->next;
    if (r->head == NULL) r->tail = NULL;
    r->bytes -= e->n;
    free(e);
  }
}

static int64_t deadline_of(int ms) {
  return lc__clock_mono_us() + (int64_t)ms * 1000;
}

/* mu held: waits on cv until the monotonic deadline; false when past. */
static bool wait_until(lc__repl *r, int64_t deadline) {
  int64_t left = deadline - lc__clock_mono_us();
  if (left <= 0) return false;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t ns = ts.tv_nsec + (left % 1000000) * 1000;
  ts.tv_sec += (time_t)(left / 1000000 + ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  pthread_cond_timedwait(&r->cv, &r->mu, &ts);
  return true;
}

/* b as a ring entry (its seq and the rest filled in by push), or NULL:
 * the entry's header and the 'b' frame's 25 bytes, then b's entries, built
 * in place. */
static ent *make_ent(leveldb_writebatch_t *b, uint64_t *ops) {
  static const char zero[offsetof(ent, p) + 25];
  lc__wire_buf f = {0};
  lc__wire_buf_put(&f, zero, sizeof zero);
  lc__wire_put_batch(&f, b, ops);
  if (f.nomem) {
    lc__wire_buf_free(&f);
    return NULL;
  }
  ent *e = (ent *)f.p; /* malloc'd: aligned for it */
  e->n = f.n - offsetof(ent, p);
  return e;
}

/* mu held: e gets the next seq and joins the ring. */
static uint64_t push(lc__repl *r, ent *e, bool sync, uint64_t ops) {
  e->seq = ++r->seq;
  r->ops += ops;
  lc__key_be64_put((unsigned char *)e->p, e->seq);
  e->p[8] = sync ? 1 : 0;
  lc__key_be64_put((unsigned char *)e->p + 9, (uint64_t)lc__clock_now_us());
  lc__key_be64_put((unsigned char *)e->p + 17, r->ops);
  if (r->tail)
    r->tail->next = e;
  else
    r->head = e;
  r->tail = e;
  r->bytes += e->n;
  ring_evict(r);
  pthread_cond_broadcast(&r->cv);
  return e->seq;
}

/* An undo of b: every key it touches as this log holds it now (b is not
 * written here), or NULL.  Called by the leader, so nothing changes them
 * meanwhile. */
typedef struct undo {
  lc__log *l;
  leveldb_writebatch_t *u;
  bool failed;
} undo;

static void undo_key(void *arg, const char *k, size_t klen) {
  undo *x = arg;
  char *err = NULL;
  size_t vlen = 0;
  char *v = leveldb_get(x->l->db, x->l->read, k, klen, &vlen, &err);
  if (err) {
    x->failed = true;
    leveldb_free(err);
  } else if (v) {
    leveldb_writebatch_put(x->u, k, klen, v, vlen);
    leveldb_free(v);
  } else {
    leveldb_writebatch_delete(x->u, k, klen);
  }
}

static void undo_put(void *arg, const char *k, size_t klen, const char *v,
                     size_t vlen) {
  (void)v;
  (void)vlen;
  undo_key(arg, k, klen);
}

static ent *undo_of(lc__repl *r, leveldb_writebatch_t *b, uint64_t *ops) {
  undo x = {.l = &r->h->log, .u = leveldb_writebatch_create()};
  leveldb_writebatch_iterate(b, &x, undo_put, undo_key);
  ent *e = x.failed ? NULL : make_ent(x.u, ops);
  leveldb_writebatch_destroy(x.u);
  return e;
}

int lc__repl_before(lc__repl *r, leveldb_writebatch_t *b, bool sync,
                    uint64_t *seq) {
  uint64_t ops;
  ent *e = make_ent(b, &ops);
  if (e == NULL) return lc__fail(LC_ENOMEM, "replication: a batch");
  pthread_mutex_lock(&r->mu);
  bool required = r->mode == LC_STANDBY_REQUIRED;
  bool waits = sync && !r->collecting; /* collecting: streamed, unwaited */
  if (waits && required) {
    int64_t deadline = deadline_of(r->timeout_ms);
    while (!r->sync && !r->gave_up && !r->stop && wait_until(r, deadline)) {
    }
    if (!r->sync) {
      bool some = r->nsess > 0;
      if (!r->gave_up) r->ack_timeouts++;
      r->gave_up = true;
      pthread_mutex_unlock(&r->mu);
      free(e);
      return lc__fail(LC_ENOSTANDBY, "no standby in sync (%s; waited %d ms)",
                      some ? "one is catching up" : "none connected",
                      r->timeout_ms);
    }
  }
  uint64_t seq_e = *seq = push(r, e, sync, ops);
  int rc = 0;
  if (waits && r->sync) {
    /* e may go while we wait: seq_e stays.  Whichever session is the
     * synchronous standby when the wait ends must have acknowledged it (a
     * new one has everything: it became it with acked == seq); r->sync is
     * cleared before its session is freed, so it is never a dangling one */
    int64_t deadline = deadline_of(r->timeout_ms);
    while (r->sync && r->sync->acked < seq_e && wait_until(r, deadline)) {
    }
    if (!r->sync || r->sync->acked < seq_e) {
      if (r->sync) {
        r->ack_timeouts++;
        drop(r, r->sync); /* slow: it resumes */
      }
      if (required) { /* not written here: the stream takes it back */
        r->gave_up = true;
        pthread_mutex_unlock(&r->mu);
        uint64_t uops;
        ent *u = undo_of(r, b, &uops);
        pthread_mutex_lock(&r->mu);
        if (u)
          push(r, u, false, uops);
        else
          diverge(r);
        r->written = r->seq; /* what this log holds: none is pending */
        rc = lc__fail(LC_ENOSTANDBY, "the standby did not acknowledge a "
                                     "floor within %d ms",
                      r->timeout_ms);
      }
    }
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void lc__repl_after(lc__repl *r, uint64_t seq, bool ok) {
  pthread_mutex_lock(&r->mu);
  if (seq > r->written) r->written = seq;
  if (!ok) diverge(r);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* ---- the session ------------------------------------------------------- */

/* A connection's place among those not yet the session (mu). */
typedef struct pend {
  struct pend *next;
  lc__repl *r;
  int fd;
  int64_t since;
  bool listed, kicked, proved;
} pend;

typedef struct session {
  lc__repl *r;
  lc__wire *w;
  sess *s; /* in r->sessions from the handshake on */
} session;

/* mu held: with no synchronous standby, a session that has everything
 * so far (and, with need_approval, is the approved one) becomes it; from
 * now on every floor waits for it (and the floors waiting for one go on). */
static bool peer_approved(lc__repl *r, const sess *s); /* at the end */
static void maybe_sync(lc__repl *r, sess *s) {
  if (r->sync || s->dead || s->acked != r->seq) return;
  if (r->need_approval && !peer_approved(r, s)) return;
  r->sync = s;
  s->say_sync = true;
  r->gave_up = false;
  pthread_cond_broadcast(&r->cv);
}

/* mu held: the session goes on. */
static bool live(const session *s) { return !s->r->stop && !s->s->dead; }

static void *ack_reader(void *arg) {
  session *s = arg;
  lc__repl *r = s->r;
  lc__wire_buf in = {0};
  for (;;) {
    char type;
    int rc = lc__wire_recv(s->w, &type, &in, 3600 * 1000);
    pthread_mutex_lock(&r->mu);
    bool ok = live(s) && !rc && type == 'a' && in.n == 8;
    if (ok) {
      uint64_t a = lc__key_be64_get((unsigned char *)in.p);
      if (a > s->s->acked && a <= r->seq) s->s->acked = a;
      maybe_sync(r, s->s);
      if (r->sync == s->s) pthread_cond_broadcast(&r->cv);
    } else {
      drop(r, s->s);
    }
    pthread_mutex_unlock(&r->mu);
    if (!ok) break;
  }
  lc__wire_buf_free(&in);
  return NULL;
}

/* The 'm' frame: "full|resume EPOCH SEQ MODE [FROM]" (FROM: the old
 * epoch a resume goes on from, after a promotion). */
static int send_mode(session *s, const char *kind, uint64_t epoch,
                     uint64_t seq, uint64_t from) {
  char m[128];
  snprintf(m, sizeof m, "%s %016llx %llu %s", kind, (unsigned long long)epoch,
           (unsigned long long)seq,
           s->r->mode == LC_STANDBY_REQUIRED ? "required" : "preferred");
  if (from)
    snprintf(m + strlen(m), sizeof m - strlen(m), " %016llx",
             (unsigned long long)from);
  return lc__wire_send(s->w, 'm', m, strlen(m), IO_TIMEOUT_MS);
}

typedef struct copying {
  session *s;
  lc__wire_buf chunk;
  uint64_t ops;
} copying;

static bool copy_take(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen) {
  copying *c = arg;
  lc__wire_put_entry(&c->chunk, k, klen, v, vlen);
  c->ops++;
  return c->chunk.n >= CHUNK_BYTES;
}

static int copy_round(void *arg) { /* a 'k' frame, while still wanted */
  copying *c = arg;
  int rc = c->chunk.nomem ? lc__fail(LC_ENOMEM, "replication: a copy chunk")
           : c->chunk.n
               ? lc__wire_send(c->s->w, 'k', c->chunk.p, c->chunk.n,
                               IO_TIMEOUT_MS)
               : 0;
  c->chunk.n = 0;
  pthread_mutex_lock(&c->s->r->mu);
  if (!rc && !live(c->s)) rc = lc__fail(LC_EREMOTE, "replication: ended");
  pthread_mutex_unlock(&c->s->r->mu);
  return rc;
}

/* Sends the whole log from a snapshot taken after every write up to *seq
 * was made here. */
static int send_copy(session *s, uint64_t *seq) {
  lc__repl *r = s->r;
  pthread_mutex_lock(&r->mu);
  *seq = r->written;
  s->s->sent = *seq;
  uint64_t epoch = r->epoch;
  pthread_mutex_unlock(&r->mu);
  copying c = {.s = s};
  int rc = send_mode(s, "full", epoch, *seq, 0);
  if (!rc) rc = lc__repl_walk(r->h, copy_take, copy_round, &c);
  lc__wire_buf_free(&c.chunk);
  if (!rc) {
    unsigned char e[16];
    lc__key_be64_put(e, *seq);
    lc__key_be64_put(e + 8, c.ops);
    rc = lc__wire_send(s->w, 'e', e, sizeof e, IO_TIMEOUT_MS);
  }
  if (!rc) {
    pthread_mutex_lock(&r->mu);
    r->snapshots++;
    pthread_mutex_unlock(&r->mu);
  }
  return rc;
}

/* Refuses the standby (an 'x' frame, then the session ends). */
static int refuse(session *s, const char *why) {
  (void)lc__wire_send(s->w, 'x', why, strlen(why), IO_TIMEOUT_MS);
  return lc__fail(LC_EREMOTE, "replication: refused a standby: %s", why);
}

/* With a replication secret the standby's hello is version 2 and carries
 * its nonce: prove the secret on it, then check the standby's proof on a
 * nonce of ours (auth.c).  Without one, only version 1 is served. */
static int prove(session *s, int version, const char *ns) {
  const char *secret = s->r->h->opt.replication_secret;
  if (!secret)
    return version == 1 ? 0
                        : refuse(s, "this primary has no replication secret");
  if (version != 2 || strlen(ns) != LC__REPL_HEX)
    return refuse(s, "this primary requires the replication secret");
  char np[LC__REPL_HEX + 1], mac[LC__REPL_HEX + 1], msg[2 * LC__REPL_HEX + 2];
  int rc = lc__repl_nonce(np);
  if (rc) return rc;
  lc__repl_mac(secret, "primary", ns, np, mac);
  snprintf(msg, sizeof msg, "%s %s", np, mac);
  rc = lc__wire_send(s->w, 'c', msg, strlen(msg), IO_TIMEOUT_MS);
  lc__wire_buf in = {0};
  char type;
  if (!rc) rc = lc__wire_recv(s->w, &type, &in, HELLO_MS);
  if (!rc &&
      (type != 'v' || !lc__repl_mac_ok(secret, "standby", np, ns, in.p)))
    rc = refuse(s, "wrong replication secret");
  lc__wire_buf_free(&in);
  return rc;
}

/* The hello and the secret's proof, before the connection counts as a
 * standby (HELLO_MS each step); *epoch, *seq: what the standby has. */
static int hello(session *s, unsigned long long *epoch_out,
                 unsigned long long *seq_out) {
  lc__wire_buf in = {0};
  char type, ns[LC__REPL_HEX + 2] = "";
  int rc = lc__wire_recv(s->w, &type, &in, HELLO_MS);
  unsigned long long epoch = 0, seq = 0;
  int version = 0;
  if (!rc && (type != 'h' ||
              sscanf(in.p, "%d %llx %llu %65s", &version, &epoch, &seq, ns) <
                  3 ||
              (version != 1 && version != 2)))
    rc = lc__fail(LC_EREMOTE, "replication: not a standby's hello");
  lc__wire_buf_free(&in);
  if (!rc) rc = prove(s, version, ns);
  *epoch_out = epoch;
  *seq_out = seq;
  return rc;
}

/* After the hello: a resume or a copy; *from: the seq the standby has. */
static int handshake(session *s, unsigned long long epoch,
                     unsigned long long seq, uint64_t *from) {
  lc__repl *r = s->r;
  pthread_mutex_lock(&r->mu);
  /* this epoch, or the old primary's up to where this log left it: the
   * standby's log is then a prefix of this stream */
  bool forked = r->fork_epoch && epoch == r->fork_epoch && seq <= r->fork_seq;
  bool resume = (epoch == r->epoch || forked) && seq <= r->seq &&
                (seq == r->seq || (r->head && r->head->seq <= seq + 1));
  if (resume) s->s->sent = seq;
  uint64_t now = r->epoch, old = r->fork_epoch;
  pthread_mutex_unlock(&r->mu);
  if (!resume) return send_copy(s, from);
  *from = seq;
  return send_mode(s, "resume", now, seq, forked ? old : 0);
}

/* The next entry after pos (mu held), or NULL. */
static ent *after(lc__repl *r, ent *last, uint64_t pos) {
  if (last && last->seq == pos) return last->next;
  for (ent *e = r->head; e; e = e->next)
    if (e->seq == pos + 1) return e;
  return NULL;
}

static void stream(session *s, uint64_t pos) {
  lc__repl *r = s->r;
  ent *last = NULL;
  int rc = 0;
  sess *me = s->s;
  pthread_mutex_lock(&r->mu);
  me->sent = pos;
  if (r->head && pos + 1 < r->head->seq && pos < r->seq) rc = LC_EREMOTE;
  while (!rc && live(s)) {
    ent *e = after(r, last, pos);
    if (e == NULL && pos < r->seq) break; /* evicted: a copy next time */
    if (e) {
      e->pins++; /* not freed while sent */
      pthread_mutex_unlock(&r->mu);
      rc = lc__wire_send(s->w, 'b', e->p, e->n, IO_TIMEOUT_MS);
      pthread_mutex_lock(&r->mu);
      e->pins--;
      pos = e->seq;
      me->sent = pos;
      last = e;
      if (e->orphan) { /* the ring was cleared meanwhile */
        if (!e->pins) free(e);
        last = NULL;
      }
      continue;
    }
    if (me->say_sync) {
      me->say_sync = false;
      pthread_mutex_unlock(&r->mu);
      rc = lc__wire_send(s->w, 'y', "", 0, IO_TIMEOUT_MS);
      pthread_mutex_lock(&r->mu);
      continue;
    }
    int64_t until = deadline_of(HEARTBEAT_MS);
    uint64_t seen = r->seq;
    while (live(s) && r->seq == seen && !me->say_sync &&
           wait_until(r, until)) {
    }
    if (live(s) && r->seq == seen && !me->say_sync) {
      unsigned char hb[24];
      lc__key_be64_put(hb, r->seq);
      lc__key_be64_put(hb + 8, (uint64_t)lc__clock_now_us());
      lc__key_be64_put(hb + 16, r->ops);
      pthread_mutex_unlock(&r->mu);
      rc = lc__wire_send(s->w, 'p', hb, sizeof hb, IO_TIMEOUT_MS);
      pthread_mutex_lock(&r->mu);
    }
  }
  drop(r, me);
  pthread_mutex_unlock(&r->mu);
}

/* mu held: n leaves the pending list (once). */
static void unlist(lc__repl *r, pend *n) {
  if (!n->listed) return;
  for (pend **pp = &r->pending; *pp; pp = &(*pp)->next)
    if (*pp == n) {
      *pp = n->next;
      break;
    }
  n->listed = false;
  r->npending--;
}

/* A connection's own thread: TLS and the secret first (each step within
 * HELLO_MS), so that until proved a connection is no standby and delays
 * nobody; then it waits for a session's place (STANDBYS_MAX) unless it
 * is shut down first, and serves its session. */
static void serve(pend *n) {
  lc__repl *r = n->r;
  int fd = n->fd;
  lc__wire w;
  lc__wire_init(&w, fd);
  session s = {.r = r, .w = &w};
  unsigned long long epoch = 0, seq = 0;
  int rc = r->ctx ? lc__wire_tls(&w, r->ctx, NULL, HELLO_MS) : 0;
  if (!rc) rc = hello(&s, &epoch, &seq);
  pthread_mutex_lock(&r->mu);
  n->proved = !rc;
  while (!rc && r->nsess >= STANDBYS_MAX && !n->kicked && !r->stop)
    pthread_cond_wait(&r->scv, &r->mu);
  sess *me = rc || n->kicked || r->stop ? NULL : calloc(1, sizeof *me);
  if (me == NULL) {
    pthread_mutex_unlock(&r->mu);
    lc__wire_close(&w);
    return;
  }
  unlist(r, n);
  *me = (sess){.next = r->sessions, .fd = fd, .gen = ++r->gen, .sent = seq};
  r->sessions = me;
  r->nsess++;
  r->connects++;
  s.s = me;
  pthread_mutex_unlock(&r->mu);
  uint64_t from = 0;
  rc = handshake(&s, epoch, seq, &from);
  pthread_t reader;
  bool reading = false;
  if (!rc) {
    pthread_mutex_lock(&r->mu);
    me->acked = from;
    maybe_sync(r, me);
    pthread_mutex_unlock(&r->mu);
    reading = pthread_create(&reader, NULL, ack_reader, &s) == 0;
  }
  if (reading) stream(&s, from);
  pthread_mutex_lock(&r->mu);
  drop(r, me);
  pthread_mutex_unlock(&r->mu);
  if (reading) pthread_join(reader, NULL);
  pthread_mutex_lock(&r->mu);
  for (sess **pp = &r->sessions; *pp; pp = &(*pp)->next)
    if (*pp == me) {
      *pp = me->next;
      break;
    }
  r->nsess--;
  pthread_cond_broadcast(&r->scv);
  pthread_mutex_unlock(&r->mu);
  lc__wire_close(&w);
  free(me);
}

static void *conn_main(void *arg) {
  pend *n = arg;
  lc__repl *r = n->r;
  serve(n);
  pthread_mutex_lock(&r->mu);
  unlist(r, n);
  r->nthreads--;
  pthread_cond_broadcast(&r->scv);
  pthread_mutex_unlock(&r->mu);
  free(n);
  return NULL;
}

/* mu held: n is shut down (its thread sees it and leaves). */
static void kick(lc__repl *r, pend *n) {
  n->kicked = true;
  shutdown(n->fd, SHUT_RDWR);
  unlist(r, n);
  pthread_cond_broadcast(&r->scv);
}

/* mu held: connections that have not proved themselves within PROOF_MS
 * (a hello sent a byte at a time) are shut down. */
static void kick_slow(lc__repl *r) {
  int64_t old = lc__clock_mono_us() - (int64_t)PROOF_MS * 1000;
  for (pend *p = r->pending, *next; p; p = next) {
    next = p->next;
    if (!p->proved && p->since < old) kick(r, p);
  }
}

/* mu held: a new connection fd gets a thread; over PENDING_MAX the
 * oldest connection not yet the session is shut down (its thread sees
 * it and leaves).  False: no memory or thread (fd is then closed). */
static bool take(lc__repl *r, int fd) {
  if (r->npending >= PENDING_MAX) {
    pend *oldest = r->pending;
    for (pend *p = r->pending; p; p = p->next)
      if (p->since < oldest->since) oldest = p;
    kick(r, oldest);
  }
  pend *n = calloc(1, sizeof *n);
  if (n == NULL) return false;
  *n = (pend){.next = r->pending, .r = r, .fd = fd,
              .since = lc__clock_mono_us(), .listed = true};
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  bool ok = pthread_create(&t, &a, conn_main, n) == 0;
  pthread_attr_destroy(&a);
  if (!ok) {
    free(n);
    return false;
  }
  r->pending = n;
  r->npending++;
  r->nthreads++;
  return true;
}

/* Accepts connections and gives each its own thread (take), so a
 * connection that says nothing, or says it slowly, never stands before
 * the standby; one not proved within PROOF_MS goes. */
static void *listener(void *arg) {
  lc__repl *r = arg;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    bool stop = r->stop;
    kick_slow(r);
    pthread_mutex_unlock(&r->mu);
    if (stop) break;
    struct pollfd p = {.fd = r->lfd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0) continue;
    int fd = accept(r->lfd, NULL, NULL);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) poll(NULL, 0, 100); /* a pause */
      continue;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    pthread_mutex_lock(&r->mu);
    bool ok = !r->stop && take(r, fd);
    pthread_mutex_unlock(&r->mu);
    if (!ok) close(fd);
  }
  return NULL;
}

/* The log's hook (log/log.h): every write group passes through here. */
static int hook_before(void *arg, leveldb_writebatch_t *b, bool sync,
                       uint64_t *seq) {
  return lc__repl_before(arg, b, sync, seq);
}
static void hook_after(void *arg, uint64_t seq, bool ok) {
  lc__repl_after(arg, seq, ok);
}
static const lc__log_hook repl_hook = {hook_before, hook_after};

static void fork_free(lc__repl_fork *fork) {
  for (ent *e = fork->head, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  fork->head = fork->tail = NULL;
}

int lc__repl_start(lc_t *h) { return lc__repl_start_fork(h, NULL); }

int lc__repl_start_fork(lc_t *h, lc__repl_fork *fork) {
  const char *addr = h->opt.replication_listen;
  if (addr == NULL || addr[0] == '\0') {
    if (fork) fork_free(fork);
    return 0;
  }
  lc__repl *r = calloc(1, sizeof *r);
  if (r == NULL) {
    if (fork) fork_free(fork);
    return lc__fail(LC_ENOMEM, "replication");
  }
  r->h = h;
  r->mode = h->opt.standby_mode;
  r->timeout_ms = h->opt.standby_timeout_ms ? h->opt.standby_timeout_ms : 2000;
  r->epoch = random_epoch();
  if (fork && fork->epoch) { /* the stream goes on from fork->seq */
    r->fork_epoch = fork->epoch;
    r->fork_seq = r->seq = r->written = fork->seq;
    r->ops = fork->ops;
    r->head = fork->head;
    r->tail = fork->tail;
    r->bytes = fork->bytes;
    fork->head = fork->tail = NULL;
    r->collecting = true;
    if (r->epoch == r->fork_epoch) r->epoch ^= 1; /* another epoch */
  } else if (fork) {
    fork_free(fork);
  }
  r->need_approval = lc__cluster_approval();
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_cond_init(&r->scv, NULL);
  pthread_mutex_init(&r->mu, NULL);
  r->ctx = h->repl_tls[0];
  int rc = lc__net_listen(addr, &r->lfd);
  if (!rc && pthread_create(&r->listener, NULL, listener, r) != 0) {
    close(r->lfd);
    rc = lc__fail(LC_ENOMEM, "replication: cannot start a thread");
  }
  if (rc) {
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->scv);
    pthread_mutex_destroy(&r->mu);
    ring_clear(r);
    free(r);
    return rc;
  }
  h->repl = r;
  h->log.hook_arg = r;
  h->log.hook = &repl_hook;
  return 0;
}

void lc__repl_collected(lc__repl *r) {
  pthread_mutex_lock(&r->mu);
  r->collecting = false;
  pthread_mutex_unlock(&r->mu);
}

void lc__repl_stop(lc_t *h) {
  lc__repl *r = h->repl;
  if (r == NULL) return;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  drop_all(r);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->listener, NULL); /* no new connection after this */
  pthread_mutex_lock(&r->mu);
  for (pend *p = r->pending; p; p = p->next) shutdown(p->fd, SHUT_RDWR);
  pthread_cond_broadcast(&r->scv);
  while (r->nthreads > 0) pthread_cond_wait(&r->scv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  close(r->lfd);
  h->log.hook = NULL;
  h->log.hook_arg = NULL;
  h->repl = NULL;
  ring_clear(r);
  pthread_cond_destroy(&r->cv);
  pthread_cond_destroy(&r->scv);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* mu held: the session the status and cluster.c speak of: the
 * synchronous standby, else the one furthest on (the first such), or
 * NULL with none. */
static sess *first_standby(lc__repl *r) {
  if (r->sync) return r->sync;
  sess *best = NULL;
  for (sess *s = r->sessions; s; s = s->next)
    if (!s->dead && (!best || s->acked > best->acked)) best = s;
  return best;
}

void lc__repl_status(lc__repl *r, lc_replication_status *s) {
  pthread_mutex_lock(&r->mu);
  sess *f = first_standby(r);
  s->role = LC_ROLE_PRIMARY;
  snprintf(s->state, sizeof s->state, "%s",
           r->sync ? "sync" : f ? "catchup" : "none");
  s->connected = f != NULL;
  s->seq = r->seq;
  s->acked = f ? f->acked : 0;
  s->ack_timeouts = r->ack_timeouts;
  s->snapshots = r->snapshots;
  s->connects = r->connects;
  pthread_mutex_unlock(&r->mu);
}

int lc__repl_standbys(lc__repl *r) {
  pthread_mutex_lock(&r->mu);
  int n = 0;
  for (sess *s = r->sessions; s; s = s->next) n += !s->dead;
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* ---- cluster.c's hooks (see repl.h) ------------------------------------- */

/* mu held: s's standby address, or "" with none. */
static void session_peer(const sess *s, char *out, size_t size) {
  out[0] = '\0';
  if (s && !s->dead) lc__net_sock_name(s->fd, true, out, size);
}

static bool peer_approved(lc__repl *r, const sess *s) {
  char peer[LC__PEER_MAX];
  session_peer(s, peer, sizeof peer);
  return peer[0] && strcmp(peer, r->approved) == 0;
}

void lc__repl_peer(lc__repl *r, char *out, size_t size, bool *in_sync) {
  pthread_mutex_lock(&r->mu);
  session_peer(first_standby(r), out, size);
  *in_sync = r->sync != NULL;
  pthread_mutex_unlock(&r->mu);
}

void lc__repl_approve(lc__repl *r, const char *peer) {
  pthread_mutex_lock(&r->mu);
  snprintf(r->approved, sizeof r->approved, "%s", peer ? peer : "");
  /* a synchronous standby no longer approved is ended: told nothing, it
   * would still believe itself in sync */
  if (r->sync && !peer_approved(r, r->sync)) drop(r, r->sync);
  for (sess *s = r->sessions; s; s = s->next) maybe_sync(r, s);
  pthread_mutex_unlock(&r->mu);
}
