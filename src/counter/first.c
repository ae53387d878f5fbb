/*
 * first.c - lc_next_each: many counters' blocks in one call, the first
 * uses among them batched.
 *
 * A counter's first use in a handle costs its log reads, a seed (add) and
 * a claim (add) in memcached, an increment, and a synced write: three
 * round trips and a sync, one name after another.  Here the first uses of
 * a call (up to CHUNK at a time) share them: the log reads, ONE pipelined
 * round of seeds and claims (cache_pipe.c), one of gets for the claims
 * already present (and their burned notes, claim.c), ONE of increments,
 * and ONE synced write holding every record (with its reservation, or as
 * a prefetched segment).  Keys that
 * memcached lost since this log used them (a memcached restart under a
 * log of many counters) cost one more round of seeds (add at floor) and
 * one of increments, together.
 *
 * Each step works exactly as the one-name path does, only for many names
 * at once: the batch holds each counter's leader role (lc__counter_try_
 * first: only a counter nobody else is working on), the block of an
 * increment is accepted only if it lies above the counter's floor, a
 * failed write burns the blocks (ledger; so does a later round that fails
 * with blocks already taken), and nothing goes out before the write.  Anything off the common path leaves the batch for the
 * one-name path (lc_next_n), which knows every case: a counter already
 * in use, a claim another log holds (the refusal is written there), a
 * restored log's pending counter, a key memcached holds below floor (or
 * lost again right after its seed), a config cache_pipe.c does not
 * speak.  A name that fails keeps
 * no half-made state: at worst it is loaded and claimed, as after a
 * one-name call that failed at its increment, and its next call goes on
 * from there.
 */
#include "counter/counter.h"
#include "handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 512 /* first uses batched at once */

enum { TODO = 1 }; /* an entry's rc before it has one */

typedef struct cand {
  lc__counter *c;
  size_t i;   /* its entry */
  int state;  /* below */
  int op;     /* its op's index in the round under way */
  uint64_t delta;
  bool missed; /* memcached did not hold its key: seeded, then again */
  char num[24]; /* its seed's text */
  lc__block b; /* b.n: memcached handed it the block b */
  bool written; /* b went to its write (which settles it) */
  char ckey[LC_NAME_MAX + 8];
  size_t cklen;
  char nkey[LC_NAME_MAX + 8]; /* its burned note's (claim.c) */
  size_t nklen;
} cand;

enum { LIVE, LATER, DONE }; /* in the batch; to lc_next_n; answered */

typedef struct batch {
  lc_t *h;
  lc_each *v;
  cand *cd;
  size_t n;
  lc__op *ops;
  size_t failed_at; /* the first failed entry so far (its detail kept) */
  char detail[LC__DETAIL_MAX];
} batch;

/* Entry i has failed just now: its detail is kept if it is the first. */
static void note_failure(batch *bt, size_t i) {
  if (i < bt->failed_at) {
    bt->failed_at = i;
    memcpy(bt->detail, lc_last_detail(), sizeof bt->detail);
  }
}

static void fail_entry(batch *bt, size_t i, int rc) {
  bt->v[i].rc = lc__next_count_call(bt->h, rc, bt->v[i].n);
  note_failure(bt, i);
}

/* Entry i the one-name way (lc_next_n, which counts it). */
static void one(batch *bt, size_t i) {
  lc_each *e = &bt->v[i];
  e->rc = lc__next_n(bt->h, e->name, e->n, &e->first);
  if (e->rc) note_failure(bt, i);
}

static void fail(batch *bt, cand *x, int rc) {
  x->state = DONE;
  /* a block taken and never written (a later round failed): burned */
  if (x->b.n && !x->written) {
    lc__counter_first_burn(x->c, x->b.last, x->b.n);
    lc__claim_note_burned(bt->h, x->c);
  }
  x->b.n = 0;
  fail_entry(bt, x->i, rc);
}

/* Runs ops[0..n) (cache_pipe.c); LC__MISS: the config is not one it
 * speaks, every live candidate goes to lc_next_n; negative: each fails. */
static int pipe_ops(batch *bt, size_t n, bool unclaimed_only) {
  int rc = lc__cache_pipe(&bt->h->cache, bt->ops, n);
  for (size_t k = 0; rc && k < bt->n; k++)
    if (bt->cd[k].state == LIVE &&
        !(unclaimed_only && bt->cd[k].c->claimed)) {
      if (rc == LC__MISS)
        bt->cd[k].state = LATER;
      else
        fail(bt, &bt->cd[k], rc);
    }
  return rc;
}

static lc__op op(int kind, const lc__counter *c, const char *key, size_t klen) {
  return (lc__op){.kind = kind, .master = c->key, .mlen = c->klen, .key = key,
                  .klen = klen};
}

/* The log reads of each candidate; pending and refused ones go the
 * one-name way. */
static void load(batch *bt) {
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    int rc = lc__counter_load(bt->h, x->c);
    if (rc)
      fail(bt, x, rc);
    else if (x->c->pending || atomic_load(&x->c->refusal))
      x->state = LATER;
  }
}

/* Seeds (a counter this log never used) and claims, in one round; the
 * claims found present are read in a second: this log's, or another's
 * (the one-name path then writes the refusal). */
static void claim(batch *bt) {
  lc_t *h = bt->h;
  size_t n = 0, tlen = strlen(h->claim);
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE) continue;
    if (x->c->floor == 0) {
      bt->ops[n] = op(LC__OP_ADD, x->c, x->c->key, x->c->klen);
      bt->ops[n].val = "0";
      bt->ops[n++].vlen = 1;
    }
    x->cklen = lc__claim_key(x->ckey, x->c);
    x->op = (int)n;
    bt->ops[n] = op(LC__OP_ADD, x->c, x->ckey, x->cklen);
    bt->ops[n].val = h->claim;
    bt->ops[n++].vlen = tlen;
  }
  if (n == 0 || pipe_ops(bt, n, false)) return;
  size_t g = 0;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE) continue;
    const lc__op *seed = x->c->floor == 0 ? &bt->ops[x->op - 1] : NULL;
    int rc = bt->ops[x->op].rc;
    if ((seed && seed->rc < 0) || rc < 0) {
      fail(bt, x, seed && seed->rc < 0 ? seed->rc : rc);
      continue;
    }
    if (seed && seed->rc == 0) LC__STAT(h, restores, 1);
    if (rc == 0) {
      lc__claim_mark(x->c);
    } else { /* present: read it and its burned note (ops before g are
                done with) */
      bt->ops[g] = op(LC__OP_GET, x->c, x->ckey, x->cklen);
      x->op = (int)g++;
      x->nklen = lc__claim_note_key(x->nkey, x->c);
      bt->ops[g++] = op(LC__OP_GET, x->c, x->nkey, x->nklen);
    }
  }
  if (g == 0 || pipe_ops(bt, g, true)) return;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE || x->c->claimed) continue;
    const lc__op *o = &bt->ops[x->op], *note = o + 1;
    if (o->rc < 0) {
      fail(bt, x, o->rc);
    } else if (o->rc == 0 && lc__claim_ours(h, o->text)) {
      if (note->rc == 0) /* what an earlier run of this log burned */
        lc__claim_note_read(h, x->c, note->text,
                            strlen(note->text) == sizeof note->text - 1);
      lc__claim_mark(x->c);
    } else { /* another log's, or gone meanwhile */
      x->state = LATER;
    }
  }
}

/* Sends an increment for each live candidate that wants one (all on the
 * first round; on the second those whose key memcached had lost, seeded
 * meanwhile) and judges the answers: a block above floor is accepted, a
 * missing key is marked for a seed, a key below floor goes the one-name
 * way (it raises).  False when the round could not be sent. */
static bool increments(batch *bt, bool again) {
  lc_t *h = bt->h;
  size_t n = 0;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    x->op = -1;
    if (x->state != LIVE || (again && !x->missed)) continue;
    x->missed = false;
    x->op = (int)n;
    bt->ops[n] = op(LC__OP_INCR, x->c, x->c->key, x->c->klen);
    bt->ops[n++].delta = x->delta;
  }
  if (n == 0 || pipe_ops(bt, n, false)) return false;
  LC__STAT(h, increments, n);
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE || x->op < 0) continue;
    const lc__op *o = &bt->ops[x->op];
    uint64_t v = o->num;
    if (o->rc < 0) {
      fail(bt, x, o->rc);
    } else if (o->rc == 0 && v <= (uint64_t)LC_VALUE_MAX && v >= x->delta &&
               (int64_t)(v - x->delta) >= x->c->floor) {
      x->b = (lc__block){.last = (int64_t)v, .n = x->delta,
                         .time_us = lc__clock_now_us()};
    } else if (o->rc == LC__MISS && !again) {
      x->missed = true;
    } else {
      if (o->rc == 0) LC__STAT(h, backwards, 1);
      x->state = LATER;
    }
  }
  return true;
}

/* The keys memcached lost (it restarted since this log used them), seeded
 * in one round as the one-name path seeds them: add (never set) at floor,
 * the counter claimed already.  True when there is any to increment
 * again. */
static bool seed_missing(batch *bt) {
  size_t n = 0;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    x->op = -1;
    if (x->state != LIVE || !x->missed) continue;
    x->op = (int)n;
    bt->ops[n] = op(LC__OP_ADD, x->c, x->c->key, x->c->klen);
    bt->ops[n].val = x->num;
    bt->ops[n++].vlen = (size_t)snprintf(x->num, sizeof x->num, "%lld",
                                         (long long)x->c->floor);
  }
  if (n == 0 || pipe_ops(bt, n, false)) return false;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE || x->op < 0) continue;
    int rc = bt->ops[x->op].rc;
    if (rc < 0)
      fail(bt, x, rc);
    else if (rc == 0) /* LC__EXISTS: seeded by someone else meanwhile */
      LC__STAT(bt->h, restores, 1);
  }
  return true;
}

/* The increments, with one round of seeds and one more of increments for
 * the keys memcached lost. */
static void increment(batch *bt) {
  lc_t *h = bt->h;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE) continue;
    uint64_t want = bt->v[x->i].n;
    x->delta = h->opt.prefetch ? lc__seg_size(h, x->c, want) : want;
    x->missed = false;
    if (x->delta < want || want > (uint64_t)(LC_VALUE_MAX - x->c->floor))
      x->state = LATER; /* near the end: it says so */
  }
  if (increments(bt, false) && seed_missing(bt)) increments(bt, true);
}

/* Every accepted block in one synced write, then handed out. */
static void write_out(batch *bt) {
  lc_t *h = bt->h;
  leveldb_writebatch_t *wb = leveldb_writebatch_create();
  size_t n = 0;
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE) continue;
    if (h->opt.prefetch)
      lc__seg_block(h, x->c, &x->b, wb);
    else
      lc__counter_first_block(h, x->c, x->b.last, x->b.n, &x->b, wb);
    LC__SEAM_BEFORE_COMMIT(lc__counter_name(x->c));
    n++;
  }
  int rc = 0;
  if (n > 0) {
    int64_t t0 = lc__clock_mono_us();
    rc = lc__log_write(&h->log, wb, true);
    lc__lat_record(
        &h->lat[h->opt.prefetch ? LC__LAT_SEGMENT : LC__LAT_RESERVATION], t0);
    LC__STAT(h, log_writes, 1);
    LC__STAT(h, log_syncs, 1);
  }
  leveldb_writebatch_destroy(wb);
  for (size_t k = 0; k < bt->n; k++) {
    cand *x = &bt->cd[k];
    if (x->state != LIVE) continue;
    lc_each *e = &bt->v[x->i];
    x->written = true;
    if (h->opt.prefetch) {
      lc__seg_install(h, x->c, &x->b, rc, e->n, &e->first);
    } else {
      lc__counter_first_done(x->c, &x->b, rc);
      e->first = x->b.last - (int64_t)(e->n - 1);
    }
    if (rc) {
      lc__claim_note_burned(h, x->c); /* burned */
      fail(bt, x, rc);
    } else {
      e->rc = lc__next_count_call(h, 0, e->n);
    }
    x->state = DONE;
  }
}

/* The first uses among the candidates, batched. */
static void run(batch *bt) {
  load(bt);
  int rc = lc__log_ok(&bt->h->log); /* nothing taken from memcached */
  for (size_t k = 0; rc && k < bt->n; k++)
    if (bt->cd[k].state == LIVE) fail(bt, &bt->cd[k], rc);
  claim(bt);
  increment(bt);
  write_out(bt);
  for (size_t k = 0; k < bt->n; k++) lc__counter_end_first(bt->h, bt->cd[k].c);
}

/* The entries v[from..to): the first uses batched, the rest (and those
 * the batch leaves) one by one after it, in entry order. */
static void chunk(batch *bt, size_t from, size_t to) {
  lc_t *h = bt->h;
  bt->n = 0;
  /* each chunk asks again: a lease deadline (repl/cluster.c) may pass
   * between chunks, or the handle become a standby; then every entry
   * goes the one-name way, which refuses it */
  if (lc__follow_primary_only(h) != 0) {
    lc__detail_clear();
    for (size_t i = from; i < to; i++) one(bt, i);
    return;
  }
  for (size_t i = from; i < to; i++) {
    lc_each *e = &bt->v[i];
    lc__counter *c;
    int rc = e->n == 0 || e->n > LC_BLOCK_MAX
                 ? lc__fail(LC_ECOUNT, "count %llu", (unsigned long long)e->n)
                 : lc__counter_lookup(h, e->name, &c);
    if (rc)
      fail_entry(bt, i, rc);
    else if (lc__counter_try_first(h, c))
      bt->cd[bt->n++] = (cand){.c = c, .i = i, .state = LIVE};
  }
  if (bt->n > 0) run(bt);
  for (size_t i = from; i < to; i++)
    if (bt->v[i].rc == TODO) one(bt, i);
}

static int each(lc_t *h, lc_each *v, size_t count) {
  for (size_t i = 0; i < count; i++) v[i].rc = TODO;
  batch bt = {.h = h, .v = v, .failed_at = count};
  /* remote, a standby, one entry: lc_next_n says it all */
  if (count > 1 && !h->remote && lc__follow_primary_only(h) == 0) {
    size_t most = count < CHUNK ? count : CHUNK;
    bt.cd = malloc(most * sizeof *bt.cd);
    bt.ops = malloc(2 * most * sizeof *bt.ops);
  }
  for (size_t from = 0; from < count; from += CHUNK) {
    size_t to = count - from > CHUNK ? from + CHUNK : count;
    if (bt.cd && bt.ops)
      chunk(&bt, from, to);
    else
      for (size_t i = from; i < to; i++) one(&bt, i);
  }
  free(bt.cd);
  free(bt.ops);
  if (bt.failed_at == count) return 0;
  lc__detail_set(bt.detail);
  return v[bt.failed_at].rc;
}

int lc_next_each(lc_t *h, lc_each *v, size_t count) {
  lc__detail_clear();
  if (h == NULL || (v == NULL && count > 0))
    return lc__fail(LC_EINVAL, "NULL handle or request array");
  LC__GATE_IN(h);
  int rc = each(h, v, count);
  LC__GATE_OUT(h);
  return rc;
}
