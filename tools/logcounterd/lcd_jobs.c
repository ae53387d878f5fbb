/*
 * lcd_jobs.c - logcounterd's replies and jobs: starting an incr, tally or
 * get job for a connection (a buffered run of pipelined incr lines for one
 * counter, or of changes of one tally, becomes one job), and turning a
 * finished job into reply lines, in request order ("<last id>",
 * "VALUE ... END", "SERVER_ERROR <ERRNAME> <message>: <detail>").
 * Tallies: "incr/decr tally:NAME D" answers the total after the change,
 * floored at 0 (memcached clients read incr/decr answers as unsigned;
 * memcached's own decr stops at 0), a refused change "CLIENT_ERROR
 * <ERRNAME> <message>: <detail>"; get answers the signed total (durable +
 * pending); "stats tally NAME" its three figures.  Loop thread only;
 * lcd_conn.c owns the connections and calls in here.
 */
#include "lcd_conn.h"
#include "lcd_counters.h"
#include "lcd_gate.h"
#include "lcd_job.h"
#include "lcd_pool.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lcd_binary.h" /* binary-protocol requests */

/* ---- replies ----------------------------------------------------------- */

void lcd_put(lcd_conn *c, const char *s, size_t n) {
  evbuffer_add(bufferevent_get_output(c->bev), s, n);
}

void lcd_puts(lcd_conn *c, const char *s) {
  lcd_put(c, s, strlen(s));
}

/* Decimal value and "\r\n". */
static void put_value_line(lcd_conn *c, int64_t v) {
  char buf[24];
  int n = sizeof buf;
  buf[--n] = '\n';
  buf[--n] = '\r';
  uint64_t u = (uint64_t)v;
  do {
    buf[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  lcd_put(c, buf + n, sizeof buf - (size_t)n);
}

/* An error reply caused by the client ("ERROR" or "CLIENT_ERROR why");
 * too many in a row close the connection. */
void lcd_client_error(lcd_conn *c, const char *why, int noreply) {
  lcd_loop *s = c->loop;
  s->st.client_errors++;
  if (!noreply) {
    if (why) {
      lcd_puts(c, "CLIENT_ERROR ");
      lcd_puts(c, why);
      lcd_puts(c, "\r\n");
    } else {
      lcd_puts(c, "ERROR\r\n");
    }
  }
  lcd_log(s->set, 2, "connection %" PRIu64 ": %s", c->id, why ? why : "ERROR");
  if (++c->errors_in_row >= LCD_GARBAGE_MAX && !c->closing) {
    s->st.closed_garbage++;
    lcd_close_later(c, "too many errors in a row");
  }
}

void lcd_put_error(lcd_conn *c, const char *kind, int rc,
                   const char *detail) {
  evbuffer_add_printf(bufferevent_get_output(c->bev), "%s %s %s%s%s\r\n", kind,
                      lc_err_name(rc), lc_strerror(rc), detail[0] ? ": " : "",
                      detail);
}

/* A job's error reply: text, or a binary frame for a binary request. */
static void job_error(lcd_conn *c, const lcd_job *j, const char *kind, int rc,
                      const char *detail) {
  if (j->meta.bin)
    lcd_bin_put_error(c, j, rc, detail);
  else
    lcd_put_error(c, kind, rc, detail);
}

static void server_error(lcd_conn *c, const lcd_job *j) {
  job_error(c, j, "SERVER_ERROR", j->rc, j->detail);
}

/* Logs a failed job: every one at -vv, else at most one a second. */
static void log_failure(lcd_loop *s, const char *what, const lcd_job *j) {
  time_t now = lcd_now();
  if (s->set->verbose < 2 && now == s->last_error_log) return;
  s->last_error_log = now;
  lcd_log(s->set, 0, "%s '%s' failed: %s %s%s%s", what, j->names,
          lc_err_name(j->rc), lc_strerror(j->rc), j->detail[0] ? ": " : "",
          j->detail);
}

/* ---- jobs -------------------------------------------------------------- */

/* A job for c: a spare one, else a new one; reset. */
static lcd_job *job_get(lcd_conn *c) {
  lcd_job *j = c->spare;
  if (j) {
    c->spare = j->cnext;
    c->nspare--;
  } else if (!(j = malloc(sizeof *j))) {
    return NULL;
  }
  j->next = j->cnext = NULL;
  j->conn = c;
  j->done = 0;
  j->nreq = 0;
  j->total = 0;
  j->nkeys = 0;
  j->gets = 0;
  j->last = 1;
  j->stats_tally = 0;
  memset(j->filt, 0, sizeof j->filt);
  return j;
}

/* An answered job goes back to c's spares, or is freed. */
static void job_put(lcd_conn *c, lcd_job *j) {
  if (c->nspare >= LCD_CONN_SPARE) {
    free(j);
    return;
  }
  j->cnext = c->spare;
  c->spare = j;
  c->nspare++;
}

/* Appends j to c's unanswered jobs and hands it to the pool. */
static void submit(lcd_conn *c, lcd_job *j) {
  if (c->jobs_tail)
    c->jobs_tail->cnext = j;
  else
    c->jobs = j;
  c->jobs_tail = j;
  c->njobs++;
  c->inflight++;
  lcd_pool_submit(c->loop, j);
}

int lcd_may_start(const lcd_conn *c, lcd_job_kind kind, const char *name,
                  size_t len) {
  if (c->njobs == 0) return 1;
  if (kind == LCD_JOB_GET || c->njobs >= LCD_CONN_JOBS) return 0;
  uint32_t h = lcd_job_name_hash(name, len);
  for (const lcd_job *j = c->jobs; j; j = j->cnext) {
    if (j->kind == LCD_JOB_GET) return 0;
    int many = j->kind == LCD_JOB_MANY && kind == LCD_JOB_INCR;
    if ((many || j->kind == kind) && lcd_job_holds(j, many, name, len, h))
      return 0;
  }
  return 1;
}

void lcd_conn_free_jobs(lcd_conn *c) {
  for (lcd_job *l = c->jobs; l;) {
    lcd_job *n = l->cnext;
    free(l);
    l = n;
  }
  for (lcd_job *l = c->spare; l;) {
    lcd_job *n = l->cnext;
    free(l);
    l = n;
  }
  c->jobs = c->jobs_tail = c->spare = NULL;
  c->njobs = c->nspare = 0;
}

/* The connection's job, reset, of this kind, for the request line of
 * line_len bytes at the head of in (not consumed); names[0] is name if
 * given; a meta request's reply style is req_meta's.  NULL after consuming the line and answering ENOMEM. */
static lcd_job *job_start(lcd_conn *c, struct evbuffer *in, size_t line_len,
                          lcd_job_kind kind, const lcd_proto_token *name,
                          const lcd_proto_meta *req_meta) {
  lcd_job *j = job_get(c);
  if (!j) {
    evbuffer_drain(in, line_len);
    c->loop->st.server_errors++;
    lcd_puts(c, "SERVER_ERROR ENOMEM out of memory\r\n");
    return NULL;
  }
  j->kind = kind;
  /* ma, mg: the reply's style, the opaque copied into the job */
  j->meta = req_meta && req_meta->on ? *req_meta : (lcd_proto_meta){0};
  if (j->meta.opaque.len)
    memcpy(j->opaque, j->meta.opaque.s, j->meta.opaque.len);
  j->opaque[j->meta.opaque.len] = '\0';
  j->meta.opaque.s = j->opaque;
  if (name) { /* fits: a name < the line */
    memcpy(j->names, name->s, name->len);
    j->names[name->len] = '\0';
    lcd_job_name(j, 0, lcd_job_name_hash(name->s, name->len));
  }
  return j;
}

/* The next buffered request line, parsed into *req: its command, with
 * *len its length; -1 when no complete line is buffered. */
static int next_line(struct evbuffer *in, lcd_proto_req *req, size_t *len) {
  size_t avail = evbuffer_get_length(in);
  if (avail == 0) return -1;
  if (avail > LCD_PROTO_LINE_MAX + 2) avail = LCD_PROTO_LINE_MAX + 2;
  const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)avail);
  if ((unsigned char)p[0] == LCD_BIN_MAGIC_REQ) /* a binary frame */
    return lcd_bin_next(p, avail, req, len);
  if (lcd_proto_frame(p, avail, len) != LCD_PROTO_FRAME_LINE) return -1;
  return (int)lcd_proto_parse(p, *len, req);
}

/* Whether req is answered in j's style (plain, or meta with the same
 * flags and opaque), so that it may join j's run. */
static int same_style(const lcd_job *j, const lcd_proto_req *req) {
  const lcd_proto_meta *a = &j->meta, *b = &req->meta;
  if (!a->on || !b->on) return a->on == b->on;
  return a->value == b->value && a->quiet == b->quiet &&
         a->nret == b->nret && memcmp(a->ret, b->ret, a->nret) == 0 &&
         a->has_init == b->has_init && a->init == b->init &&
         a->bin == b->bin && a->bin_op == b->bin_op &&
         a->opaque.len == b->opaque.len &&
         (a->opaque.len == 0 ||
          memcmp(a->opaque.s, b->opaque.s, a->opaque.len) == 0);
}

static void count_tally_change(lcd_counters *st, int64_t delta) {
  if (delta > 0)
    st->cmd_tally_incr++;
  else
    st->cmd_tally_decr++;
}

/* A one-request incr job j of a counter's first use: the buffered lines
 * that follow and are plain incr of other counters' first uses (which
 * may start: none in flight on c, rights allowing) join it, and it
 * becomes a MANY job, served by one lc_next_each (their first uses share
 * their memcached round trips and one synced write): a burst of new
 * names from one pipelining client takes a few jobs, not one each.  Not
 * with --no-coalesce or sync durability (there every call syncs anyway,
 * and one after another would be slower than the workers side by
 * side). */
static void take_first_uses(lcd_conn *c, struct evbuffer *in,
                            lcd_proto_req *req, lcd_job *j) {
  lcd_loop *l = c->loop;
  if (!l->set->coalesce || l->set->durability == LC_DURABILITY_SYNC ||
      j->nreq != 1 || j->meta.on)
    return;
  size_t used = strlen(j->names) + 1, len;
  /* a plain incr line must follow before the library is asked (most
   * jobs have none: no lookup for them) */
  int more = next_line(in, req, &len) == LCD_PROTO_INCR && !req->meta.on;
  if (!more || lc_next_quick(l->lc, j->names)) return;
  int n = 1;
  j->name_off[0] = 0;
  for (; more && n < LCD_RUN_MAX &&
         used + req->keys[0].len + 1 <= sizeof j->names;
       more = next_line(in, req, &len) == LCD_PROTO_INCR && !req->meta.on) {
    const lcd_proto_token *k = &req->keys[0];
    char *name = j->names + used;
    memcpy(name, k->s, k->len);
    name[k->len] = '\0';
    if (lc_next_quick(l->lc, name) || !lcd_may_start(c, LCD_JOB_INCR, k->s, k->len) ||
        !lcd_gate_allows(c, req, LCD_PROTO_INCR))
      break;
    j->name_off[n] = (uint16_t)used;
    lcd_job_name(j, n, lcd_job_name_hash(k->s, k->len));
    j->count[n] = req->count;
    j->noreply[n] = (unsigned char)req->noreply;
    j->total += req->count;
    used += k->len + 1;
    n++;
    evbuffer_drain(in, len);
  }
  if (n > 1) {
    j->kind = LCD_JOB_MANY;
    j->nreq = n;
  }
}

/* incr: the line is req (in the input, line_len bytes).  Buffered lines
 * that follow and are incr of the same counter join the same job; else
 * those of other counters' first uses may (take_first_uses). */
void lcd_start_incr(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                    size_t line_len) {
  lcd_job *j = job_start(c, in, line_len, LCD_JOB_INCR, &req->keys[0],
                         &req->meta);
  if (!j) return;
  size_t nlen = req->keys[0].len;
  j->count[0] = req->count;
  j->noreply[0] = (unsigned char)req->noreply;
  j->total = req->count;
  j->nreq = 1;
  evbuffer_drain(in, line_len);
  size_t len;
  while (c->loop->set->coalesce && j->nreq < LCD_RUN_MAX) {
    if (next_line(in, req, &len) != LCD_PROTO_INCR || !same_style(j, req) ||
        req->keys[0].len != nlen || memcmp(req->keys[0].s, j->names, nlen) ||
        req->count > LC_BLOCK_MAX - j->total)
      break;
    j->count[j->nreq] = req->count;
    j->noreply[j->nreq] = (unsigned char)req->noreply;
    j->total += req->count;
    j->nreq++;
    c->loop->st.incr_merged++;
    c->loop->st.cmd_meta += (uint64_t)req->meta.on; /* as handle_line */
    evbuffer_drain(in, len);
  }
  take_first_uses(c, in, req, j);
  c->loop->st.cmd_incr += (uint64_t)j->nreq;
  submit(c, j);
}

void lcd_start_get(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                   size_t line_len) {
  lcd_job *j = job_start(c, in, line_len, LCD_JOB_GET, NULL, &req->meta);
  if (!j) return;
  j->gets = req->gets;
  j->last = !req->more;
  size_t off = 0;
  for (size_t i = 0; i < req->nkeys; i++) { /* fits: names < the line */
    j->name_off[i] = (uint16_t)off;
    memcpy(j->names + off, req->keys[i].s, req->keys[i].len);
    off += req->keys[i].len;
    j->names[off++] = '\0';
  }
  j->nkeys = req->nkeys;
  evbuffer_drain(in, line_len);
  c->loop->st.cmd_get += req->nkeys; /* per key, as memcached counts */
  if (req->more) {
    c->mget = 1;
    c->mget_gets = req->gets;
    if (lcd_mget_hold(c) != 0) { /* out of memory: its END still comes */
      c->mget = 0;
      c->skip_line = 1;
      j->last = 1;
    }
  }
  submit(c, j);
}

/* incr/decr tally:NAME D: a job; buffered lines that follow and change
 * the same tally join it. */
void lcd_start_tally(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                     size_t line_len) {
  lcd_job *j = job_start(c, in, line_len, LCD_JOB_TALLY, &req->tally,
                         &req->meta);
  if (!j) return;
  lcd_counters *st = &c->loop->st;
  size_t nlen = req->tally.len;
  j->tdelta[0] = req->delta;
  j->noreply[0] = (unsigned char)req->noreply;
  j->nreq = 1;
  evbuffer_drain(in, line_len);
  count_tally_change(st, req->delta);
  size_t len;
  while (c->loop->set->coalesce && j->nreq < LCD_RUN_MAX) {
    if (next_line(in, req, &len) != LCD_PROTO_TALLY || !same_style(j, req) ||
        req->tally.len != nlen ||
        memcmp(req->tally.s, j->names, nlen))
      break;
    j->tdelta[j->nreq] = req->delta;
    j->noreply[j->nreq] = (unsigned char)req->noreply;
    j->nreq++;
    count_tally_change(st, req->delta);
    st->cmd_meta += (uint64_t)req->meta.on; /* as handle_line */
    evbuffer_drain(in, len);
  }
  submit(c, j);
}

void lcd_start_stats_tally(lcd_conn *c, struct evbuffer *in, lcd_proto_req *req,
                           size_t line_len) {
  lcd_job *j = job_start(c, in, line_len, LCD_JOB_GET, &req->tally, NULL);
  if (!j) return;
  j->stats_tally = 1;
  j->name_off[0] = 0;
  j->nkeys = 1;
  evbuffer_drain(in, line_len);
  submit(c, j);
}

/* The reply to change i of a finished tally job; 1 if it was an error
 * caused by the client. */
static int tally_reply(lcd_conn *c, const lcd_job *j, int i) {
  lcd_loop *s = c->loop;
  int rc = j->trc[i];
  const char *detail = i >= j->tdet_lo && i < j->tdet_hi ? j->detail : "";
  if (rc == 0) {
    if (j->meta.on)
      lcd_put_meta(c, j, 1, j->tafter[i]);
    else if (!j->noreply[i])
      put_value_line(c, j->tafter[i] > 0 ? j->tafter[i] : 0);
    return 0;
  }
  s->st.tally_errors++;
  if (lcd_client_caused(rc)) {
    s->st.client_errors++;
    if (!j->noreply[i]) job_error(c, j, "CLIENT_ERROR", rc, detail);
    return 1;
  }
  s->st.server_errors++;
  if (!j->noreply[i]) job_error(c, j, "SERVER_ERROR", rc, detail);
  return 0;
}

static void stats_tally_done(lcd_conn *c, const lcd_job *j) {
  evbuffer_add_printf(
      bufferevent_get_output(c->bev),
      "STAT name %s\r\nSTAT total %" PRId64 "\r\n"
      "STAT pending %" PRId64 "\r\nSTAT losses %" PRIu64 "\r\n"
      "STAT lost %" PRIu64 "\r\nSTAT lost_increments %" PRIu64
      "\r\nSTAT lost_decrements %" PRIu64 "\r\nEND\r\n",
      j->names, j->tally_total, j->tally_pending, j->tally_losses,
      j->tally_lost_p + j->tally_lost_m, j->tally_lost_p, j->tally_lost_m);
}

/* The figures and the log line of a finished job (answered or not). */
static void account(lcd_loop *s, const lcd_job *j) {
  if (j->kind == LCD_JOB_TALLY) {
    s->st.tally_merged += (uint64_t)j->merged;
    if (j->rc && !lcd_client_caused(j->rc))
      log_failure(s, "tally change of", j);
    return;
  }
  if (j->kind == LCD_JOB_INCR && j->rc == LCD_BIN_ENOCREATE) {
    s->st.get_misses++; /* a binary increment that may not create */
    return;
  }
  if (j->kind == LCD_JOB_INCR) {
    s->st.incr_calls += (uint64_t)j->lead;
    if (j->rc == 0)
      s->st.incr_ids += j->total;
    else
      s->st.incr_errors += (uint64_t)j->nreq;
  }
  if (j->kind == LCD_JOB_MANY) {
    s->st.incr_calls += (uint64_t)j->lead; /* MANY jobs share a call */
    for (int i = 0; i < j->nreq; i++) {
      if (j->trc[i] == 0) {
        s->st.incr_ids += j->count[i];
      } else {
        s->st.incr_errors++;
        s->st.server_errors++;
      }
    }
    if (j->rc) log_failure(s, "incr", j);
    return;
  }
  if (j->rc) {
    s->st.server_errors++;
    log_failure(s, j->kind == LCD_JOB_INCR ? "incr" : "get", j);
  }
}

static void answer_get(lcd_conn *c, const lcd_job *j) {
  lcd_loop *s = c->loop;
  struct evbuffer *o = lcd_mget_out(c); /* a long line's: held (lcd_mget.c) */
  for (size_t i = 0; i < j->nkeys; i++) {
    if (!j->hit[i]) {
      s->st.get_misses++;
      if (j->meta.bin) /* a binary get: one reply per key */
        lcd_bin_put_get(c, j, i);
      else if (j->meta.on)
        lcd_put_meta(c, j, 0, 0);
      continue;
    }
    s->st.get_hits++;
    if (strncmp(j->names + j->name_off[i], LCD_PROTO_TALLY_PREFIX,
                LCD_PROTO_TALLY_PREFIX_LEN) == 0)
      s->st.get_tally++;
    if (j->meta.bin) {
      lcd_bin_put_get(c, j, i);
      continue;
    }
    if (j->meta.on) {
      lcd_put_meta(c, j, 1, j->values[i]);
      continue;
    }
    char v[24];
    int n = snprintf(v, sizeof v, "%" PRId64, j->values[i]);
    evbuffer_add_printf(o, "VALUE %s 0 %d", j->names + j->name_off[i], n);
    if (j->gets) /* cas: unsigned (a tally may be < 0) */
      evbuffer_add_printf(o, " %s", j->values[i] >= 0 ? v : "0");
    evbuffer_add_printf(o, "\r\n%s\r\n", v);
  }
  if (j->last && !j->meta.on) lcd_mget_end(c);
}

/* Writes the replies of j, whose turn it is. */
static void answer(lcd_conn *c, const lcd_job *j) {
  lcd_loop *s = c->loop;
  c->last_active = lcd_now();
  if (j->kind == LCD_JOB_TALLY) {
    for (int i = 0; i < j->nreq; i++) {
      if (!tally_reply(c, j, i))
        c->errors_in_row = 0;
      else if (++c->errors_in_row >= LCD_GARBAGE_MAX && !c->closing) {
        s->st.closed_garbage++;
        lcd_close_later(c, "too many errors in a row");
      }
    }
    return;
  }
  if (j->kind == LCD_JOB_MANY) {
    for (int i = 0; i < j->nreq; i++) {
      if (j->noreply[i]) continue;
      if (j->trc[i]) /* the reason is known for the code in rc */
        lcd_put_error(c, "SERVER_ERROR", j->trc[i],
                      j->trc[i] == j->rc ? j->detail : "");
      else
        put_value_line(c, j->values[i] + (int64_t)j->count[i] - 1);
    }
  } else if (j->kind == LCD_JOB_INCR) {
    int64_t end = j->first - 1;
    for (int i = 0; i < j->nreq; i++) {
      end += (int64_t)j->count[i];
      if (j->noreply[i]) continue;
      if (j->rc)
        server_error(c, j);
      else if (j->meta.on)
        lcd_put_meta(c, j, 1, end);
      else
        put_value_line(c, end);
    }
  } else if (j->rc) {
    lcd_mget_drop(c); /* a long get line is refused whole */
    server_error(c, j);
    if (!j->last) { /* the rest of its get line is not answered */
      c->mget = 0;
      c->skip_line = 1;
    }
  } else if (j->stats_tally) {
    stats_tally_done(c, j);
  } else {
    answer_get(c, j);
  }
  if (j->rc == 0) c->errors_in_row = 0;
}

void lcd_conn_job_done(lcd_job *j) {
  lcd_conn *c = j->conn;
  j->done = 1;
  c->inflight--;
  account(c->loop, j);
  /* Closed meanwhile: the answers are lost (the tally changes are made,
   * the ids are logged and become a gap). */
  if (!c->bev) {
    if (c->inflight == 0) lcd_conn_free(c);
    return;
  }
  /* Answer, in request order, every job whose turn has come. */
  while (c->jobs && c->jobs->done) {
    lcd_job *k = c->jobs;
    c->jobs = k->cnext;
    if (!c->jobs) c->jobs_tail = NULL;
    c->njobs--;
    answer(c, k);
    job_put(c, k);
  }
  if (c->out_blocked) { /* more to read: not a lack of progress */
    size_t len = evbuffer_get_length(bufferevent_get_output(c->bev));
    if (len > c->blocked_len) c->blocked_len = len;
  }
  lcd_conn_process(c);
}
