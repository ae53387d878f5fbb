/*
 * follow.c - the standby's side of replication (see repl.h): a thread of
 * the handle connects to the primary, takes a full copy or resumes, then
 * applies each write group as one LevelDB write (synced when the
 * primary's was) together with its position, and acknowledges it.
 *
 * The position (LC__STANDBY_KEY: "1 EPOCH SEQ OPS STALE") is written in
 * the same batch as what it counts, so after a crash the standby resumes
 * exactly where its log stands.  STALE (1) means promotion needs force:
 * set while a copy is under way, whenever the primary runs in preferred
 * mode (it may go on alone once this standby is away), and for a log
 * that never caught up; cleared when a primary in required mode says
 * every floor now waits for this standby ('y').
 */
#include "repl/repl.h"
#include "handle.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HELLO_TIMEOUT_MS 5000
#define SILENCE_MS 3000 /* the primary sends at least every 100 ms */
#define RETRY_MS 200
#define WIPE_BATCH 10000

struct lc__follow {
  lc_t *h;
  pthread_t thread;
  pthread_mutex_t mu; /* all below */
  pthread_cond_t cv;
  bool stop;
  int fd;
  uint64_t epoch, seq, ops; /* where this log stands (persisted) */
  bool stale;               /* persisted */
  bool required, in_sync, connected;
  const char *state;
  uint64_t primary_seq, primary_ops;
  int64_t primary_us, applied_us; /* the primary's clock */
  uint64_t snapshots, connects;
  /* the last entries applied, contiguous up to seq (a promotion hands
   * them on: lc__follow_fork); at most LC__REPL_RING_MAX bytes */
  lc__repl_ent *ring, *ring_tail;
  size_t ring_bytes;
  struct ssl_ctx_st *ctx; /* h->repl_tls[1]: TLS to the primary, or NULL */
  char host[256];         /* the name its certificate must carry */
};

int lc__follow_primary_only(lc_t *h) {
  if (h && lc__cluster_lease_expired(h)) /* cluster.c: fenced */
    return lc__fail(LC_EFENCED, "the leadership lease's deadline passed");
  if (h == NULL || !atomic_load(&h->standby)) return 0;
  return lc__fail(LC_ESTANDBY, "it follows %s",
                  h->opt.standby_of ? h->opt.standby_of : "its primary");
}

int lc__follow_copy_check(lc_t *h) {
  char *v = NULL;
  size_t vlen = 0;
  int rc = lc__log_get(&h->log, LC__STANDBY_KEY, strlen(LC__STANDBY_KEY), &v,
                       &vlen, "the standby's position");
  if (rc || v == NULL) return rc;
  leveldb_free(v);
  return lc__fail(LC_ESTANDBY,
                  "%s is a standby's copy of a primary's log: open it as a "
                  "standby (standby_of, logcounterd --standby-of) and "
                  "promote it, so that it goes on above the old primary",
                  h->log.path);
}

/* One write to this log (the gate held), synced or not. */
static int apply(lc__follow *f, leveldb_writebatch_t *b, bool sync) {
  lc__log *l = &f->h->log;
  int rc = lc__log_enter(l);
  if (rc) return rc;
  if (sync && (rc = lc__log_sync_switched(l)) != 0) { /* log_write.c */
    char why[LC__DETAIL_MAX];
    snprintf(why, sizeof why, "%s", lc_last_detail());
    rc = lc__log_fail(l, why);
    lc__log_leave(l);
    return rc;
  }
  char *err = NULL;
  leveldb_write(l->db, sync ? l->sync : l->nosync, b, &err);
  if (err) {
    rc = lc__log_fail(l, err);
    leveldb_free(err);
  } else if (sync) { /* a synced write in a new log file stays (log.h) */
    rc = lc__log_check_dir(l, true);
  }
  lc__log_leave(l);
  return rc;
}

/* mu held: the position goes into b. */
static void put_state(lc__follow *f, leveldb_writebatch_t *b) {
  char v[128];
  snprintf(v, sizeof v, "1 %016" PRIx64 " %" PRIu64 " %" PRIu64 " %d",
           f->epoch, f->seq, f->ops, f->stale ? 1 : 0);
  leveldb_writebatch_put(b, LC__STANDBY_KEY, strlen(LC__STANDBY_KEY), v,
                         strlen(v));
}

static int save_state(lc__follow *f) {
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  pthread_mutex_lock(&f->mu);
  put_state(f, b);
  pthread_mutex_unlock(&f->mu);
  int rc = apply(f, b, true);
  leveldb_writebatch_destroy(b);
  return rc;
}

static void load_state(lc__follow *f) {
  char *v = NULL;
  size_t vlen = 0;
  f->stale = true; /* a log that never followed */
  if (lc__log_get(&f->h->log, LC__STANDBY_KEY, strlen(LC__STANDBY_KEY), &v,
                  &vlen, "the standby's position") != 0 ||
      v == NULL)
    return;
  char text[128];
  snprintf(text, sizeof text, "%.*s", (int)(vlen < 127 ? vlen : 127), v);
  leveldb_free(v);
  int version = 0, stale = 1;
  if (sscanf(text, "%d %" SCNx64 " %" SCNu64 " %" SCNu64 " %d", &version,
             &f->epoch, &f->seq, &f->ops, &stale) != 5 ||
      version != 1) {
    f->epoch = f->seq = f->ops = 0;
    return;
  }
  f->stale = stale != 0;
}

/* mu held: the ring emptied. */
static void ring_clear(lc__follow *f) {
  for (lc__repl_ent *e = f->ring, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  f->ring = f->ring_tail = NULL;
  f->ring_bytes = 0;
}

/* mu held: the entry just applied (payload p[0..n), seq) kept. */
static void ring_keep(lc__follow *f, uint64_t seq, const char *p, size_t n) {
  if (f->ring_tail && f->ring_tail->seq + 1 != seq) ring_clear(f);
  lc__repl_ent *e = malloc(sizeof *e + n);
  if (e == NULL) { /* not kept: the ring would have a hole */
    ring_clear(f);
    return;
  }
  *e = (lc__repl_ent){.seq = seq, .n = n};
  memcpy(e->p, p, n);
  if (f->ring_tail)
    f->ring_tail->next = e;
  else
    f->ring = e;
  f->ring_tail = e;
  f->ring_bytes += n;
  while (f->ring_bytes > LC__REPL_RING_MAX && f->ring != f->ring_tail) {
    lc__repl_ent *h = f->ring;
    f->ring = h->next;
    f->ring_bytes -= h->n;
    free(h);
  }
}

void lc__follow_fork(lc_t *h, lc__repl_fork *out) {
  lc__follow *f = h->follow;
  memset(out, 0, sizeof *out);
  if (f == NULL) return;
  pthread_mutex_lock(&f->mu);
  out->epoch = f->epoch;
  out->seq = f->seq;
  out->ops = f->ops;
  if (f->ring_tail && f->ring_tail->seq == f->seq) {
    out->head = f->ring;
    out->tail = f->ring_tail;
    out->bytes = f->ring_bytes;
    f->ring = f->ring_tail = NULL;
    f->ring_bytes = 0;
  }
  ring_clear(f);
  pthread_mutex_unlock(&f->mu);
}

static void set_state(lc__follow *f, const char *state) {
  pthread_mutex_lock(&f->mu);
  f->state = state;
  pthread_mutex_unlock(&f->mu);
}

typedef struct wiping {
  lc__follow *f;
  leveldb_writebatch_t *b;
  int n;
} wiping;

static bool wipe_take(void *arg, const char *k, size_t klen, const char *v,
                      size_t vlen) {
  (void)v;
  (void)vlen;
  wiping *w = arg;
  leveldb_writebatch_delete(w->b, k, klen);
  return ++w->n >= WIPE_BATCH;
}

static int wipe_round(void *arg) {
  wiping *w = arg;
  int rc = w->n ? apply(w->f, w->b, false) : 0;
  leveldb_writebatch_clear(w->b);
  w->n = 0;
  return rc;
}

/* Deletes every key but the position (a copy comes next). */
static int wipe(lc__follow *f) {
  wiping w = {.f = f, .b = leveldb_writebatch_create()};
  int rc = lc__repl_walk(f->h, wipe_take, wipe_round, &w);
  leveldb_writebatch_destroy(w.b);
  return rc;
}

/* A full copy: 'k' frames up to 'e' (seq, ops). */
static int take_copy(lc__follow *f, lc__wire *w, uint64_t epoch, lc__wire_buf *in) {
  pthread_mutex_lock(&f->mu);
  f->state = "snapshot";
  f->stale = true;
  f->epoch = f->seq = f->ops = 0;
  ring_clear(f);
  pthread_mutex_unlock(&f->mu);
  int rc = save_state(f);
  if (!rc) rc = wipe(f);
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  while (!rc) {
    char type;
    if ((rc = lc__wire_recv(w, &type, in, SILENCE_MS)) != 0) break;
    if (type == 'e' && in->n == 16) {
      pthread_mutex_lock(&f->mu);
      f->epoch = epoch;
      f->seq = lc__key_be64_get((unsigned char *)in->p);
      f->ops = lc__key_be64_get((unsigned char *)in->p + 8);
      f->snapshots++;
      pthread_mutex_unlock(&f->mu);
      rc = save_state(f);
      /* the copy brought the primary's identity: claims stay valid */
      if (!rc) rc = lc__log_identity(&f->h->log, f->h->log_id);
      if (!rc) memcpy(f->h->log.id, f->h->log_id, sizeof f->h->log.id);
      break;
    }
    if (type != 'k') {
      rc = lc__fail(LC_EREMOTE, "replication: frame '%c' in a copy", type);
      break;
    }
    leveldb_writebatch_clear(b);
    int64_t n = lc__wire_get_batch(in->p, in->n, b);
    rc = n < 0 ? (int)n : apply(f, b, false);
  }
  leveldb_writebatch_destroy(b);
  return rc;
}

/* One 'b' frame: applied with the position, then acknowledged. */
static int take_batch(lc__follow *f, lc__wire *w, const lc__wire_buf *in,
                      leveldb_writebatch_t *b) {
  if (in->n < 25) return lc__fail(LC_EREMOTE, "replication: a short batch");
  const unsigned char *p = (const unsigned char *)in->p;
  uint64_t seq = lc__key_be64_get(p), ops = lc__key_be64_get(p + 17);
  bool sync = p[8] & 1;
  int64_t t = (int64_t)lc__key_be64_get(p + 9);
  pthread_mutex_lock(&f->mu);
  uint64_t want = f->seq + 1;
  pthread_mutex_unlock(&f->mu);
  if (seq != want)
    return lc__fail(LC_EREMOTE, "replication: batch %" PRIu64 " after %" PRIu64,
                    seq, want - 1);
  leveldb_writebatch_clear(b);
  int64_t n = lc__wire_get_batch(in->p + 25, in->n - 25, b);
  if (n < 0) return (int)n;
  pthread_mutex_lock(&f->mu);
  f->seq = seq;
  f->ops = ops;
  put_state(f, b);
  pthread_mutex_unlock(&f->mu);
  int rc = apply(f, b, sync);
  pthread_mutex_lock(&f->mu);
  if (rc) {
    f->seq = seq - 1; /* not applied */
  } else {
    ring_keep(f, seq, in->p, in->n);
    f->applied_us = t;
    if (ops > f->primary_ops) f->primary_ops = ops;
    if (seq > f->primary_seq) f->primary_seq = seq;
  }
  pthread_mutex_unlock(&f->mu);
  if (rc) return rc;
  unsigned char a[8];
  lc__key_be64_put(a, seq);
  return lc__wire_send(w, 'a', a, sizeof a, SILENCE_MS);
}

/* With a replication secret, in holds the primary's 'c': its proof on our
 * nonce ns; then ours on its nonce (auth.c), and type and in become
 * the next frame. */
static int prove(lc__follow *f, lc__wire *w, const char *ns, char *type,
                 lc__wire_buf *in) {
  const char *secret = f->h->opt.replication_secret;
  char np[LC__REPL_HEX + 2] = "", mac[LC__REPL_HEX + 2] = "";
  if (sscanf(in->p, "%65s %65s", np, mac) != 2 ||
      strlen(np) != LC__REPL_HEX ||
      !lc__repl_mac_ok(secret, "primary", ns, np, mac))
    return lc__fail(LC_EREMOTE, "replication: the primary did not prove the "
                                "replication secret");
  lc__repl_mac(secret, "standby", np, ns, mac);
  int rc = lc__wire_send(w, 'v', mac, strlen(mac), HELLO_TIMEOUT_MS);
  return rc ? rc : lc__wire_recv(w, type, in, HELLO_TIMEOUT_MS);
}

static int session(lc__follow *f, lc__wire *w) {
  lc__wire_buf in = {0};
  const char *secret = f->h->opt.replication_secret;
  char hello[64 + LC__REPL_HEX], ns[LC__REPL_HEX + 1] = "", type = 0;
  int rc = secret ? lc__repl_nonce(ns) : 0;
  if (rc) return rc;
  pthread_mutex_lock(&f->mu);
  snprintf(hello, sizeof hello, "%d %016" PRIx64 " %" PRIu64 "%s%s",
           secret ? 2 : 1, f->epoch, f->seq, secret ? " " : "", ns);
  f->connects++;
  pthread_mutex_unlock(&f->mu);
  rc = lc__wire_send(w, 'h', hello, strlen(hello), HELLO_TIMEOUT_MS);
  if (!rc) rc = lc__wire_recv(w, &type, &in, HELLO_TIMEOUT_MS);
  if (!rc && secret && type == 'c')
    rc = prove(f, w, ns, &type, &in);
  else if (!rc && secret && type != 'x') /* a primary without the secret */
    rc = lc__fail(LC_EREMOTE, "replication: the primary has no replication "
                              "secret");
  char kind[16] = "", mode[16] = "";
  uint64_t epoch = 0, seq = 0, from = 0;
  if (!rc && type == 'x')
    rc = lc__fail(LC_EREMOTE, "replication: refused: %s", in.p);
  else if (!rc &&
           (type != 'm' ||
            sscanf(in.p, "%15s %" SCNx64 " %" SCNu64 " %15s %" SCNx64, kind,
                   &epoch, &seq, mode, &from) < 4))
    rc = lc__fail(LC_EREMOTE, "replication: not a primary's answer");
  if (!rc) {
    pthread_mutex_lock(&f->mu);
    f->required = strcmp(mode, "required") == 0;
    f->connected = true;
    f->in_sync = false;
    /* a resume in this epoch, or in the one a promoted standby of this
     * log's primary goes on from (from: its old epoch; it saw this log's
     * position in it, so this log is a prefix of its stream) */
    bool resume = strcmp(kind, "resume") == 0 && seq == f->seq &&
                  (epoch == f->epoch || (from && from == f->epoch));
    bool moved = resume && epoch != f->epoch; /* the new epoch saved */
    if (moved) f->epoch = epoch;
    /* stale until the primary says this is its synchronous standby ('y'):
     * in preferred mode it may go on alone later; in required mode it may
     * have other standbys, and floors acknowledged by another */
    bool mark = !f->stale || moved;
    f->stale = true;
    pthread_mutex_unlock(&f->mu);
    if (strcmp(kind, "full") == 0)
      rc = take_copy(f, w, epoch, &in);
    else if (!resume)
      rc = lc__fail(LC_EREMOTE, "replication: a resume from elsewhere");
    else if (mark)
      rc = save_state(f);
  }
  set_state(f, "catchup");
  leveldb_writebatch_t *b = leveldb_writebatch_create();
  while (!rc) {
    if ((rc = lc__wire_recv(w, &type, &in, SILENCE_MS)) != 0) break;
    if (type == 'b') {
      rc = take_batch(f, w, &in, b);
    } else if (type == 'p' && in.n == 24) {
      pthread_mutex_lock(&f->mu);
      f->primary_seq = lc__key_be64_get((unsigned char *)in.p);
      f->primary_us = (int64_t)lc__key_be64_get((unsigned char *)in.p + 8);
      f->primary_ops = lc__key_be64_get((unsigned char *)in.p + 16);
      pthread_mutex_unlock(&f->mu);
    } else if (type == 'y') {
      pthread_mutex_lock(&f->mu);
      f->in_sync = true;
      f->state = "sync";
      bool clear = f->required && f->stale;
      if (clear) f->stale = false;
      pthread_mutex_unlock(&f->mu);
      if (clear) rc = save_state(f);
    } else {
      rc = lc__fail(LC_EREMOTE, "replication: unexpected frame '%c'", type);
    }
  }
  leveldb_writebatch_destroy(b);
  lc__wire_buf_free(&in);
  return rc;
}

static void *follower(void *arg) {
  lc__follow *f = arg;
  lc_t *h = f->h;
  pthread_mutex_lock(&f->mu);
  while (!f->stop) {
    f->state = "connecting";
    pthread_mutex_unlock(&f->mu);
    int fd = -1;
    int rc = lc__net_connect("replication", h->opt.standby_of, 1000, &fd);
    pthread_mutex_lock(&f->mu);
    if (!rc && f->stop) rc = LC_EREMOTE;
    if (!rc) f->fd = fd;
    pthread_mutex_unlock(&f->mu);
    if (!rc) {
      lc__wire w;
      lc__wire_init(&w, fd);
      rc = f->ctx ? lc__wire_tls(&w, f->ctx, f->host, HELLO_TIMEOUT_MS) : 0;
      if (!rc) rc = session(f, &w);
      pthread_mutex_lock(&f->mu);
      f->fd = -1;
      f->connected = false;
      f->in_sync = false;
      pthread_mutex_unlock(&f->mu);
      lc__wire_close(&w);
    } else if (fd >= 0) {
      close(fd);
    }
    pthread_mutex_lock(&f->mu);
    if (rc == LC_ELOG || rc == LC_ECORRUPT || rc == LC_ENOMEM)
      f->epoch = 0; /* this log's state is in doubt: a full copy */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += RETRY_MS * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    if (!f->stop) pthread_cond_timedwait(&f->cv, &f->mu, &ts);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

int lc__follow_start(lc_t *h) {
  lc__follow *f = h->follow;
  if (f == NULL) {
    if ((f = calloc(1, sizeof *f)) == NULL)
      return lc__fail(LC_ENOMEM, "the standby's follower");
    f->h = h;
    f->fd = -1;
    f->ctx = h->repl_tls[1];
    int rc = f->ctx ? lc__net_addr_host("standby_of", h->opt.standby_of, f->host,
                                    sizeof f->host, NULL)
                    : 0;
    if (rc) {
      free(f);
      return rc;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    load_state(f);
    h->follow = f;
  }
  f->stop = false;
  f->state = "connecting";
  if (pthread_create(&f->thread, NULL, follower, f) != 0)
    return lc__fail(LC_ENOMEM, "cannot start the standby's follower");
  return 0;
}

void lc__follow_stop(lc_t *h) {
  lc__follow *f = h->follow;
  if (f == NULL) return;
  pthread_mutex_lock(&f->mu);
  bool running = !f->stop;
  f->stop = true;
  if (f->fd >= 0) shutdown(f->fd, SHUT_RDWR);
  pthread_cond_broadcast(&f->cv);
  pthread_mutex_unlock(&f->mu);
  if (running) pthread_join(f->thread, NULL);
  pthread_mutex_lock(&f->mu);
  f->state = "stopped";
  pthread_mutex_unlock(&f->mu);
}

void lc__follow_free(lc_t *h) {
  lc__follow *f = h->follow;
  if (f == NULL) return;
  lc__follow_stop(h);
  ring_clear(f);
  pthread_cond_destroy(&f->cv);
  pthread_mutex_destroy(&f->mu);
  free(f);
  h->follow = NULL;
}

bool lc__follow_stale(lc_t *h, char *why, size_t size) {
  lc__follow *f = h->follow;
  pthread_mutex_lock(&f->mu);
  bool stale = f->stale || f->epoch == 0;
  snprintf(why, size,
           "%s; it applied %" PRIu64 " batches of epoch %016" PRIx64,
           f->epoch == 0  ? "it never finished a copy of its primary's log"
           : !f->required ? "its primary runs in preferred mode and may go "
                            "on alone without it"
                          : "it had not caught up with its primary",
           f->seq, f->epoch);
  pthread_mutex_unlock(&f->mu);
  return stale;
}

void lc__follow_status(lc__follow *f, lc_replication_status *s) {
  pthread_mutex_lock(&f->mu);
  s->role = LC_ROLE_STANDBY;
  snprintf(s->state, sizeof s->state, "%s", f->state);
  s->connected = f->connected;
  s->stale = f->stale || f->epoch == 0; /* what promote would say */
  s->seq = f->seq;
  s->lag_records = f->primary_ops > f->ops ? f->primary_ops - f->ops : 0;
  s->lag_seconds = s->lag_records && f->primary_us > f->applied_us
                       ? (double)(f->primary_us - f->applied_us) / 1e6
                       : 0.0;
  s->snapshots = f->snapshots;
  s->connects = f->connects;
  pthread_mutex_unlock(&f->mu);
}

/* cluster.c: this standby's own address on its connection to the
 * primary (what the primary's lc__repl_peer sees), or "". */
void lc__follow_local(lc__follow *f, char *out, size_t size) {
  out[0] = '\0';
  pthread_mutex_lock(&f->mu);
  if (f->fd >= 0 && f->connected) lc__net_sock_name(f->fd, false, out, size);
  pthread_mutex_unlock(&f->mu);
}
