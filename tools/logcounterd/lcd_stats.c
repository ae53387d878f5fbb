/*
 * lcd_stats.c - logcounterd's "stats" and "stats settings" replies, in
 * memcached's format ("STAT name value" lines, then "END"): the daemon's
 * own figures (connections, commands, errors, closes), the library's
 * (lc_get_stats: allocations, ids, increments, restores, backwards, log
 * writes and syncs, errors), the tallies' (changes by the daemon, the
 * library's tally figures, the flusher's runs), the retention thread's
 * (lc_get_retention_status) and the settings in force.
 * Any loop thread: the figures are every loop's, summed.
 *
 * The figures are one list (lcd_stats_figures, lcd_metrics.h): each with
 * its name, its kind (counter, gauge or text) and a line of help; the
 * "STAT" writer here and the Prometheus writer (lcd_prom.c) both walk
 * it, so a figure added here is served by both.  Each loop's own
 * counters are one table (loop_figs), summed for "stats" and served per
 * loop at /metrics.  Reading takes what "stats" always took: atomics, and
 * the short locks of the library's getters, the flusher's and the queue's.
 */
#include "lcd_metrics.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *lcd_prefetch_text(uint64_t prefetch, char buf[24]) {
  if (prefetch == LC_PREFETCH_AUTO) return "auto";
  if (prefetch == 0) return "off";
  snprintf(buf, 24, "%llu", (unsigned long long)prefetch);
  return buf;
}

/* ---- the list ---------------------------------------------------------- */

typedef struct emit {
  lcd_fig_fn fn;
  void *arg;
} emit;

static void put(emit *e, lcd_fig f) { e->fn(e->arg, &f); }

/* A counter: only grows while the daemon runs. */
static void count(emit *e, const char *name, uint64_t v, const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_COUNTER,
                   .type = 'u', .u = v});
}

static void gauge(emit *e, const char *name, long long v, const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'i', .i = v});
}

static void gauge_u(emit *e, const char *name, uint64_t v, const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'u', .u = v});
}

/* A gauge in microseconds (Prometheus: seconds). */
static void gauge_us(emit *e, const char *name, long long v,
                     const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'i', .micros = 1, .i = v});
}

static void real(emit *e, const char *name, double v, int prec,
                 const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'f', .prec = prec, .f = v});
}

static void text(emit *e, const char *name, const char *v, const char *help) {
  put(e, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_TEXT,
                   .type = 's', .s = v});
}

static void octal(emit *e, const char *name, int v) {
  put(e, (lcd_fig){.name = name, .kind = LCD_FIG_GAUGE, .type = 'o', .i = v});
}

/* The settings ("stats settings" only; not served at /metrics). */
static void put_settings(lcd_server *s, emit *e) {
  const lcd_settings *set = s->set;
  char pbuf[24];
  text(e, "listen", set->listen, NULL);
  text(e, "socket", set->socket_path, NULL);
  octal(e, "socket_mode", set->socket_mode);
  text(e, "admin_socket", set->admin_socket, NULL);
  octal(e, "admin_socket_mode", set->admin_mode);
  text(e, "memcached", set->memcached, NULL);
  text(e, "db", set->db, NULL);
  text(e, "durability", lc_durability_name(set->durability), NULL);
  text(e, "prefetch", lcd_prefetch_text(set->prefetch, pbuf), NULL);
  gauge(e, "timeout_ms", set->timeout_ms, NULL);
  gauge(e, "threads", set->threads, NULL);
  gauge(e, "workers", set->workers, NULL);
  gauge(e, "max_connections", set->max_connections, NULL);
  gauge_u(e, "max_counters", set->max_counters, NULL);
  gauge_u(e, "max_tallies", set->max_tallies, NULL);
  gauge(e, "idle_timeout", set->idle_timeout, NULL);
  gauge(e, "line_timeout", set->line_timeout, NULL);
  gauge(e, "drain_timeout", set->drain_timeout, NULL);
  gauge(e, "reply_timeout", set->reply_timeout, NULL);
  gauge(e, "input_max", LCD_INPUT_MAX, NULL);
  gauge(e, "output_max", LCD_OUTPUT_MAX, NULL);
  gauge(e, "conn_jobs_max", LCD_CONN_JOBS, NULL);
  gauge(e, "backlog", set->backlog, NULL);
  gauge(e, "verbosity", set->verbose, NULL);
  text(e, "pidfile", set->pidfile, NULL);
  gauge(e, "line_max", LCD_PROTO_LINE_MAX, NULL);
  gauge(e, "max_keys", LCD_PROTO_MAX_KEYS, NULL);
  gauge_u(e, "block_max", LC_BLOCK_MAX, NULL);
  gauge(e, "flush_interval", set->flush_interval, NULL);
  gauge(e, "sweep_interval", set->sweep_interval, NULL);
  gauge_u(e, "retain_records", set->retain_records, NULL);
  gauge(e, "retain_age_us", (long long)set->retain_age_us, NULL);
  gauge(e, "retain_interval_ms",
        set->retain_records || set->retain_age_us
            ? (long long)set->retain_interval_ms
            : 0,
        NULL);
  text(e, "replication_listen", set->replication_listen, NULL);
  text(e, "standby_of", set->standby_of, NULL);
  text(e, "standby_mode",
       set->standby_mode == LC_STANDBY_PREFERRED ? "preferred" : "required",
       NULL);
  gauge(e, "standby_timeout_ms", (long long)set->standby_timeout_ms, NULL);
  text(e, "metrics_listen", set->metrics_listen, NULL);
}

/* Each loop's own counters (lcd_counters): summed in "stats", per loop
 * (label loop="N") at /metrics. */
static const struct {
  const char *name;
  size_t off;
  const char *help;
} loop_figs[] = {
#define F(name, field, help) {name, offsetof(lcd_counters, field), help}
    F("rejected_connections", rejected_connections,
      "Connections refused (--max-connections, or while draining)."),
    F("cmd_incr", cmd_incr, "incr requests of serial counters."),
    F("incr_ids", incr_ids, "Ids handed out by incr requests."),
    F("incr_merged", incr_merged,
      "incr requests that shared another's library call."),
    F("incr_errors", incr_errors, "incr requests answered SERVER_ERROR."),
    F("cmd_get", cmd_get, "Keys asked for by get and gets."),
    F("get_hits", get_hits, "Keys that get answered with a value."),
    F("get_misses", get_misses, "Keys that get found absent."),
    F("client_errors", client_errors, "Requests answered ERROR or CLIENT_ERROR."),
    F("server_errors", server_errors, "Requests answered SERVER_ERROR."),
    F("closed_idle", closed_idle, "Connections closed by --idle-timeout."),
    F("closed_garbage", closed_garbage,
      "Connections closed after too many errors in a row."),
    F("closed_binary", closed_binary,
      "Connections closed for speaking the binary protocol."),
    F("closed_line_too_long", closed_long,
      "Connections closed for a request line too long."),
    F("closed_unread", closed_unread,
      "Connections closed for leaving replies unread (--reply-timeout)."),
    F("read_paused", read_paused,
      "Times a connection's reading was paused (input buffered)."),
    F("output_paused", output_paused,
      "Times parsing paused for unread replies."),
    F("jobs_inline", jobs_inline, "Jobs run on an event-loop thread."),
    F("jobs_pooled", jobs_pooled, "Jobs handed to the worker threads."),
    F("incr_calls", incr_calls, "lc_next_n calls made for incr requests."),
    F("loop_backoffs", loop_backoffs,
      "Times a slow library call sent a loop's work to the workers."),
    F("cmd_tally_incr", cmd_tally_incr, "incr requests of tallies."),
    F("cmd_tally_decr", cmd_tally_decr, "decr requests of tallies."),
    F("tally_merged", tally_merged,
      "Tally changes that shared another's library call."),
    F("tally_errors", tally_errors, "Tally changes refused or failed."),
    F("get_tally", get_tally, "Tally keys asked for by get."),
#undef F
};
enum { LOOP_FIGS = sizeof loop_figs / sizeof *loop_figs };
static const char STALL_HELP[] =
    "The longest library call run on an event-loop thread, in seconds.";

static uint64_t loop_value(const lcd_counters *c, int k) {
  return atomic_load((const lcd_stat *)((const char *)c + loop_figs[k].off));
}

int lcd_loop_figure(const lcd_loop *l, int k, lcd_fig *f) {
  if (k < 0 || k > LOOP_FIGS) return 0;
  if (k == LOOP_FIGS)
    *f = (lcd_fig){.name = "loop_stall_max_us", .help = STALL_HELP,
                   .kind = LCD_FIG_GAUGE, .type = 'i', .micros = 1,
                   .i = (int64_t)atomic_load(&l->stall_max_us)};
  else
    *f = (lcd_fig){.name = loop_figs[k].name, .help = loop_figs[k].help,
                   .kind = LCD_FIG_COUNTER, .type = 'u',
                   .u = loop_value(&l->st, k)};
  return 1;
}

/* The daemon's own figures, summed over the loops. */
static void put_daemon(lcd_server *s, emit *e) {
  lcd_counters d;
  uint64_t stall_max;
  int nopen;
  lcd_loops_sum(s, &d, &stall_max, &nopen);
  time_t now = lcd_now();
  gauge(e, "pid", (long long)getpid(), "The daemon's process id.");
  gauge(e, "uptime", (long long)(now - s->started),
        "Seconds since the daemon started.");
  gauge(e, "time", (long long)(s->started_wall + (now - s->started)),
        "The daemon's clock, seconds since the epoch.");
  text(e, "version", lc_version(), "The version of liblogcounter.");
  text(e, "libevent", event_get_version(), "The version of libevent.");
  gauge(e, "pointer_size", (long long)(sizeof(void *) * 8),
        "Bits in a pointer.");
  gauge(e, "threads", s->set->threads, "Event-loop threads (--threads).");
  gauge(e, "workers", s->set->workers, "Worker threads (--workers).");
  text(e, "durability", lc_durability_name(s->set->durability),
       "The log's durability (--durability).");
  gauge(e, "curr_connections", nopen, "Open client connections.");
  count(e, "total_connections", atomic_load(&s->total_connections),
        "Client connections accepted.");
  gauge(e, "max_connections", s->set->max_connections,
        "The most open client connections (--max-connections).");
  gauge_u(e, "jobs_queued", lcd_pool_queued(s),
          "Jobs waiting for a worker thread.");
  for (int k = 0; k < LOOP_FIGS; k++)
    count(e, loop_figs[k].name, loop_value(&d, k), loop_figs[k].help);
  /* The requests per lc_next_n call (the coalescing factor); the longest
   * library call that held a loop. */
  real(e, "incr_per_call",
       d.incr_calls ? (double)d.cmd_incr / (double)d.incr_calls : 0.0, 2,
       "incr requests per lc_next_n call (the coalescing factor).");
  gauge_us(e, "loop_stall_max_us", (long long)stall_max, STALL_HELP);
}

/* The library's figures (lc_get_stats) and the flusher's. */
static void put_library(lcd_server *s, emit *e) {
  lc_stats ls;
  memset(&ls, 0, sizeof ls);
  lc_get_stats(s->lc, &ls);
  count(e, "allocations", ls.allocations,
        "Successful allocations (lc_next_n calls).");
  count(e, "ids", ls.ids, "Ids handed out by the library.");
  count(e, "increments", ls.increments, "memcached increments sent.");
  count(e, "restores", ls.restores, "Counters seeded in memcached from the log.");
  count(e, "backwards", ls.backwards,
        "memcached answers not above the last value handed out.");
  count(e, "log_writes", ls.log_writes, "LevelDB write batches.");
  count(e, "log_syncs", ls.log_syncs, "Synced LevelDB writes.");
  count(e, "errors", ls.errors, "Failed library calls on counters and tallies.");
  count(e, "segments", ls.segments, "Prefetched segments taken.");
  count(e, "segment_waits", ls.segment_waits,
        "Calls that found no segment and waited.");
  gauge_u(e, "counters", ls.counters, "Counters the daemon keeps state for.");
  gauge_u(e, "tallies", ls.tallies, "Tallies the daemon keeps state for.");
  count(e, "tally_adds", ls.tally_adds, "Successful tally changes.");
  count(e, "tally_flushes", ls.tally_flushes,
        "Tally records written by flushes.");
  count(e, "tally_schedules", ls.tally_schedules, "Tally flush windows opened.");
  count(e, "tally_schedule_failures", ls.tally_schedule_failures,
        "Tally window markers that could not be stored.");
  count(e, "tally_losses", ls.tally_losses,
        "Times memcached had lost or lowered a tally's pending counts.");
  count(e, "tally_seeds", ls.tally_seeds, "Tally keys re-seeded in memcached.");
  uint64_t runs, sweeps, ferrors, flushed;
  lcd_flusher_figures(s, &runs, &sweeps, &ferrors, &flushed);
  count(e, "flusher_runs", runs, "Tally flusher runs.");
  count(e, "flusher_sweeps", sweeps, "Tally flusher sweeps of the whole log.");
  count(e, "flusher_errors", ferrors, "Tally flusher runs that failed.");
  count(e, "flusher_written", flushed, "Tallies the flusher wrote to the log.");
}

/* The log's state: failures, reopens, and why (lc_get_log_status). */
static void put_log(lcd_server *s, emit *e) {
  lc_log_status st;
  if (lc_get_log_status(s->lc, &st) != 0) return;
  text(e, "log_state", lc_log_state_name(st.state),
       "The log's state: ok, failed, recovering or lost.");
  count(e, "log_failures", st.failures, "Times the log failed.");
  count(e, "log_recoveries", st.recoveries, "Reopens that brought the log back.");
  count(e, "log_reopen_attempts", st.attempts, "Reopens of the log tried.");
  gauge(e, "log_failed_at", (long long)(st.failed_us / 1000000),
        "When the log last failed, seconds since the epoch; 0: never.");
  gauge(e, "log_recovered_at", (long long)(st.recovered_us / 1000000),
        "When the log last recovered, seconds since the epoch; 0: never.");
  text(e, "log_error", st.error[0] ? st.error : NULL,
       "What failed last in the log.");
  text(e, "log_reopen_error", st.attempt_error[0] ? st.attempt_error : NULL,
       "Why the last reopen of the log failed.");
}

/* What retention has done (all 0 when it is off; no error: "none").  The
 * last error is one line: CR, LF and other control bytes become spaces. */
static void put_retention(lcd_server *s, emit *e) {
  lc_retention_status st;
  if (lc_get_retention_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  st.last_error[sizeof st.last_error - 1] = '\0';
  for (char *p = st.last_error; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  count(e, "retain_runs", st.runs, "Retention passes over the log finished.");
  count(e, "retain_counters", st.counters, "Counters pruned by retention.");
  count(e, "retain_records_deleted", st.records_deleted,
        "Records deleted by retention.");
  count(e, "retain_ledger_deleted", st.ledger_deleted,
        "Ledger entries deleted by retention.");
  count(e, "retain_errors", st.errors, "Counters whose retention prune failed.");
  gauge(e, "retain_last_run", (long long)(st.last_run_us / 1000000),
        "When the last retention run ended, seconds since the epoch; 0: never.");
  gauge_us(e, "retain_last_duration_us", (long long)st.last_duration_us,
           "How long the last retention run took, in seconds.");
  text(e, "retain_last_error", st.last_error[0] ? st.last_error : NULL,
       "The last retention failure.");
}

/* The standby, or the primary's view of its standby (role "alone" and
 * zeros without either option). */
static void put_replication(lcd_server *s, emit *e) {
  lc_replication_status st;
  if (lc_get_replication_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  text(e, "replication_role", lc_role_name(st.role),
       "The log's role: alone, primary or standby.");
  text(e, "replication_state", st.state[0] ? st.state : NULL,
       "The replication stream's state.");
  gauge(e, "replication_connected", st.connected,
        "1 while the standby (on a standby: the primary) is connected.");
  if (st.role == LC_ROLE_PRIMARY)
    text(e, "replication_standby", st.state,
         "The state of the standby that acknowledges floors.");
  gauge(e, "replication_stale", st.stale,
        "1 when this standby may be behind (promote needs force).");
  gauge_u(e, "replication_seq", st.seq,
          "Batches written (primary) or applied (standby).");
  gauge_u(e, "replication_acked", st.acked,
          "Batches the standby acknowledged (primary).");
  gauge_u(e, "replication_lag_records", st.lag_records,
          "Log entries of the primary not applied here yet (standby).");
  real(e, "replication_lag_seconds", st.lag_seconds, 3,
       "How old the oldest of them is, in seconds (standby).");
  count(e, "replication_ack_timeouts", st.ack_timeouts,
        "Floors the standby did not acknowledge in time (primary).");
  count(e, "replication_snapshots", st.snapshots,
        "Full copies sent (primary) or taken (standby).");
  count(e, "replication_connects", st.connects,
        "Connections of a standby so far.");
}

void lcd_stats_figures(lcd_server *s, int settings, lcd_fig_fn fn,
                       void *arg) {
  emit e = {fn, arg};
  if (settings) {
    put_settings(s, &e);
    return;
  }
  put_daemon(s, &e);
  put_library(s, &e);
  put_log(s, &e);
  put_retention(s, &e);
  put_replication(s, &e);
}

/* ---- "STAT name value" lines, as memcached's APPEND_STAT ---------------- */

static void stat_line(void *arg, const lcd_fig *f) {
  struct evbuffer *o = arg;
  switch (f->type) {
  case 'u': evbuffer_add_printf(o, "STAT %s %" PRIu64 "\r\n", f->name, f->u); break;
  case 'i':
    evbuffer_add_printf(o, "STAT %s %lld\r\n", f->name, (long long)f->i);
    break;
  case 'o':
    evbuffer_add_printf(o, "STAT %s %04llo\r\n", f->name,
                        (unsigned long long)f->i);
    break;
  case 'f':
    evbuffer_add_printf(o, "STAT %s %.*f\r\n", f->name, f->prec, f->f);
    break;
  default:
    evbuffer_add_printf(o, "STAT %s %s\r\n", f->name, f->s ? f->s : "none");
    break;
  }
}

lc_log_state_t lcd_log_watch(lcd_server *s) {
  lc_log_status st, *was = &s->log_seen;
  if (s->lc == NULL || lc_get_log_status(s->lc, &st) != 0) return LC_LOG_OK;
  if (st.state == LC_LOG_LOST && was->state != LC_LOG_LOST)
    lcd_log(s->set, 0,
            "LOG LOST: %s; nothing is written or handed out any "
            "more: stop this daemon and restore the log directory",
            st.error);
  else if (st.failures != was->failures)
    lcd_log(s->set, 0,
            "log failed: %s; every allocation and tally change "
            "is refused until it is reopened (retrying)",
            st.error);
  if (st.attempts != was->attempts && st.attempt_error[0] &&
      st.state != LC_LOG_OK &&
      (st.attempts - was->attempts > 1 || st.attempts % 10 == 1))
    lcd_log(s->set, 0, "log reopen failed (attempt %" PRIu64 "): %s",
            st.attempts, st.attempt_error);
  if (st.recoveries != was->recoveries && st.state == LC_LOG_OK)
    lcd_log(s->set, 0,
            "log recovered: reopened %.1f s after it failed; "
            "allocations go on",
            (double)(st.recovered_us - st.failed_us) / 1e6);
  *was = st;
  return st.state;
}

void lcd_put_stats(lcd_server *s, struct evbuffer *o, int settings) {
  lcd_stats_figures(s, settings, stat_line, o);
  evbuffer_add(o, "END\r\n", 5);
}
