/*
 * lcd_stats.c - logcounterd's "stats" and "stats settings" replies, in
 * memcached's format ("STAT name value" lines, then "END"): the daemon's
 * own figures (connections, commands, errors, closes), the library's
 * (lc_get_stats: allocations, ids, increments, restores, backwards, log
 * writes and syncs, errors), the tallies' (changes by the daemon, the
 * library's tally figures, the flusher's runs), the retention thread's
 * (lc_get_retention_status) and the settings in force.
 * Any loop thread: the figures are every loop's, summed.
 */
#include "lcd.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

const char *lcd_prefetch_text(uint64_t prefetch, char buf[24]) {
  if (prefetch == LC_PREFETCH_AUTO) return "auto";
  if (prefetch == 0) return "off";
  snprintf(buf, 24, "%llu", (unsigned long long)prefetch);
  return buf;
}

/* One "STAT name value" line each, as memcached's APPEND_STAT. */
static void stat_u(struct evbuffer *o, const char *name, uint64_t v) {
  evbuffer_add_printf(o, "STAT %s %" PRIu64 "\r\n", name, v);
}

static void stat_i(struct evbuffer *o, const char *name, long long v) {
  evbuffer_add_printf(o, "STAT %s %lld\r\n", name, v);
}

static void stat_s(struct evbuffer *o, const char *name, const char *v) {
  evbuffer_add_printf(o, "STAT %s %s\r\n", name, v ? v : "none");
}

/* rusage_user and rusage_system as memcached writes them (seconds.micro). */
static void put_rusage(struct evbuffer *o) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return;
  evbuffer_add_printf(o, "STAT rusage_user %ld.%06ld\r\n",
                      (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
  evbuffer_add_printf(o, "STAT rusage_system %ld.%06ld\r\n",
                      (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
}

static void put_settings(lcd_server *s, struct evbuffer *o) {
  const lcd_settings *set = s->set;
  char pbuf[24];
  stat_s(o, "listen", set->listen);
  stat_s(o, "socket", set->socket_path);
  evbuffer_add_printf(o, "STAT socket_mode %04o\r\n", set->socket_mode);
  stat_s(o, "admin_socket", set->admin_socket);
  evbuffer_add_printf(o, "STAT admin_socket_mode %04o\r\n", set->admin_mode);
  stat_s(o, "memcached", set->memcached);
  stat_s(o, "db", set->db);
  stat_s(o, "durability", lc_durability_name(set->durability));
  stat_s(o, "prefetch", lcd_prefetch_text(set->prefetch, pbuf));
  stat_i(o, "timeout_ms", set->timeout_ms);
  stat_i(o, "threads", set->threads);
  stat_i(o, "workers", set->workers);
  stat_i(o, "max_connections", set->max_connections);
  stat_u(o, "max_counters", set->max_counters);
  stat_u(o, "max_tallies", set->max_tallies);
  stat_i(o, "idle_timeout", set->idle_timeout);
  stat_i(o, "line_timeout", set->line_timeout);
  stat_i(o, "drain_timeout", set->drain_timeout);
  stat_i(o, "reply_timeout", set->reply_timeout);
  stat_i(o, "input_max", LCD_INPUT_MAX);
  stat_i(o, "output_max", LCD_OUTPUT_MAX);
  stat_i(o, "conn_jobs_max", LCD_CONN_JOBS);
  stat_i(o, "backlog", set->backlog);
  stat_i(o, "verbosity", set->verbose);
  stat_s(o, "pidfile", set->pidfile);
  stat_i(o, "line_max", LCD_PROTO_LINE_MAX);
  stat_i(o, "max_keys", LCD_PROTO_MAX_KEYS);
  stat_u(o, "block_max", LC_BLOCK_MAX);
  stat_i(o, "flush_interval", set->flush_interval);
  stat_i(o, "sweep_interval", set->sweep_interval);
  stat_u(o, "retain_records", set->retain_records);
  stat_i(o, "retain_age_us", (long long)set->retain_age_us);
  stat_i(o, "retain_interval_ms",
         set->retain_records || set->retain_age_us
             ? (long long)set->retain_interval_ms
             : 0);
  stat_s(o, "replication_listen", set->replication_listen);
  stat_s(o, "standby_of", set->standby_of);
  stat_s(o, "standby_mode", set->standby_mode == LC_STANDBY_PREFERRED
                                ? "preferred"
                                : "required");
  stat_i(o, "standby_timeout_ms", (long long)set->standby_timeout_ms);
}

/* The daemon's own figures, summed over the loops. */
static void put_daemon(lcd_server *s, struct evbuffer *o) {
  lcd_counters d;
  uint64_t stall_max;
  int nopen;
  lcd_loops_sum(s, &d, &stall_max, &nopen);
  time_t now = lcd_now();
  stat_i(o, "pid", (long long)getpid());
  stat_i(o, "uptime", (long long)(now - s->started));
  stat_i(o, "time", (long long)(s->started_wall + (now - s->started)));
  stat_s(o, "version", lc_version());
  stat_s(o, "libevent", event_get_version());
  stat_i(o, "pointer_size", (long long)(sizeof(void *) * 8));
  stat_i(o, "threads", s->set->threads);
  stat_i(o, "workers", s->set->workers);
  stat_s(o, "durability", lc_durability_name(s->set->durability));
  stat_i(o, "curr_connections", nopen);
  stat_u(o, "total_connections", atomic_load(&s->total_connections));
  stat_u(o, "rejected_connections", d.rejected_connections);
  stat_i(o, "max_connections", s->set->max_connections);
  stat_u(o, "cmd_incr", d.cmd_incr);
  stat_u(o, "incr_ids", d.incr_ids);
  stat_u(o, "incr_merged", d.incr_merged);
  stat_u(o, "incr_errors", d.incr_errors);
  stat_u(o, "cmd_get", d.cmd_get);
  stat_u(o, "get_hits", d.get_hits);
  stat_u(o, "get_misses", d.get_misses);
  /* What memcached's exporters read: storage and cas commands are refused
   * (none stores or compares), so cmd_set counts refusals and the cas
   * figures stay 0; an incr of a new name creates it (no miss). */
  stat_u(o, "cmd_set", d.cmd_set);
  stat_u(o, "cas_hits", 0);
  stat_u(o, "cas_misses", 0);
  stat_u(o, "cas_badval", 0);
  stat_u(o, "incr_hits", d.cmd_incr - d.incr_errors);
  stat_u(o, "incr_misses", 0);
  stat_u(o, "cmd_meta", d.cmd_meta);
  put_rusage(o);
  stat_u(o, "client_errors", d.client_errors);
  stat_u(o, "server_errors", d.server_errors);
  stat_u(o, "closed_idle", d.closed_idle);
  stat_u(o, "closed_garbage", d.closed_garbage);
  stat_u(o, "closed_binary", d.closed_binary);
  stat_u(o, "closed_line_too_long", d.closed_long);
  stat_u(o, "jobs_queued", lcd_pool_queued(s));
  stat_u(o, "closed_unread", d.closed_unread);
  stat_u(o, "read_paused", d.read_paused);
  stat_u(o, "output_paused", d.output_paused);
  /* Where the work ran: on the loop thread or handed to the workers; the
   * requests per lc_next_n call (the coalescing factor); the longest
   * library call that held the loop, and how often one was slow enough to
   * send the loop's work to the workers for a while. */
  stat_u(o, "jobs_inline", d.jobs_inline);
  stat_u(o, "jobs_pooled", d.jobs_pooled);
  stat_u(o, "incr_calls", d.incr_calls);
  evbuffer_add_printf(
      o, "STAT incr_per_call %.2f\r\n",
      d.incr_calls ? (double)d.cmd_incr / (double)d.incr_calls : 0.0);
  stat_u(o, "loop_stall_max_us", stall_max);
  stat_u(o, "loop_backoffs", d.loop_backoffs);
  stat_u(o, "cmd_tally_incr", d.cmd_tally_incr);
  stat_u(o, "cmd_tally_decr", d.cmd_tally_decr);
  stat_u(o, "tally_merged", d.tally_merged);
  stat_u(o, "tally_errors", d.tally_errors);
  stat_u(o, "get_tally", d.get_tally);
}

/* The library's figures (lc_get_stats) and the flusher's. */
static void put_library(lcd_server *s, struct evbuffer *o) {
  lc_stats ls;
  memset(&ls, 0, sizeof ls);
  lc_get_stats(s->lc, &ls);
  stat_u(o, "allocations", ls.allocations);
  stat_u(o, "ids", ls.ids);
  stat_u(o, "increments", ls.increments);
  stat_u(o, "restores", ls.restores);
  stat_u(o, "backwards", ls.backwards);
  stat_u(o, "log_writes", ls.log_writes);
  stat_u(o, "log_syncs", ls.log_syncs);
  stat_u(o, "errors", ls.errors);
  stat_u(o, "segments", ls.segments);
  stat_u(o, "segment_waits", ls.segment_waits);
  stat_u(o, "counters", ls.counters);
  stat_u(o, "tallies", ls.tallies);
  stat_u(o, "tally_adds", ls.tally_adds);
  stat_u(o, "tally_flushes", ls.tally_flushes);
  stat_u(o, "tally_schedules", ls.tally_schedules);
  stat_u(o, "tally_schedule_failures", ls.tally_schedule_failures);
  stat_u(o, "tally_losses", ls.tally_losses);
  stat_u(o, "tally_seeds", ls.tally_seeds);
  uint64_t runs, sweeps, ferrors, flushed;
  lcd_flusher_figures(s, &runs, &sweeps, &ferrors, &flushed);
  stat_u(o, "flusher_runs", runs);
  stat_u(o, "flusher_sweeps", sweeps);
  stat_u(o, "flusher_errors", ferrors);
  stat_u(o, "flusher_written", flushed);
}

/* The log's state: failures, reopens, and why (lc_get_log_status). */
static void put_log(lcd_server *s, struct evbuffer *o) {
  lc_log_status st;
  if (lc_get_log_status(s->lc, &st) != 0) return;
  stat_s(o, "log_state", lc_log_state_name(st.state));
  stat_u(o, "log_failures", st.failures);
  stat_u(o, "log_recoveries", st.recoveries);
  stat_u(o, "log_reopen_attempts", st.attempts);
  stat_i(o, "log_failed_at", (long long)(st.failed_us / 1000000));
  stat_i(o, "log_recovered_at", (long long)(st.recovered_us / 1000000));
  stat_s(o, "log_error", st.error[0] ? st.error : NULL);
  stat_s(o, "log_reopen_error", st.attempt_error[0] ? st.attempt_error : NULL);
}

/* What retention has done (all 0 when it is off; no error: "none").  The
 * last error is one line: CR, LF and other control bytes become spaces. */
static void put_retention(lcd_server *s, struct evbuffer *o) {
  lc_retention_status st;
  if (lc_get_retention_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  st.last_error[sizeof st.last_error - 1] = '\0';
  for (char *p = st.last_error; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  stat_u(o, "retain_runs", st.runs);
  stat_u(o, "retain_counters", st.counters);
  stat_u(o, "retain_records_deleted", st.records_deleted);
  stat_u(o, "retain_ledger_deleted", st.ledger_deleted);
  stat_u(o, "retain_errors", st.errors);
  stat_i(o, "retain_last_run", (long long)(st.last_run_us / 1000000));
  stat_i(o, "retain_last_duration_us", (long long)st.last_duration_us);
  stat_s(o, "retain_last_error", st.last_error[0] ? st.last_error : NULL);
}

/* The standby, or the primary's view of its standby (role "alone" and
 * zeros without either option). */
static void put_replication(lcd_server *s, struct evbuffer *o) {
  lc_replication_status st;
  if (lc_get_replication_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  stat_s(o, "replication_role", lc_role_name(st.role));
  stat_s(o, "replication_state", st.state[0] ? st.state : NULL);
  stat_u(o, "replication_connected", (uint64_t)st.connected);
  if (st.role == LC_ROLE_PRIMARY)
    stat_s(o, "replication_standby", st.state);
  stat_u(o, "replication_stale", (uint64_t)st.stale);
  stat_u(o, "replication_seq", st.seq);
  stat_u(o, "replication_acked", st.acked);
  stat_u(o, "replication_lag_records", st.lag_records);
  evbuffer_add_printf(o, "STAT replication_lag_seconds %.3f\r\n",
                      st.lag_seconds);
  stat_u(o, "replication_ack_timeouts", st.ack_timeouts);
  stat_u(o, "replication_snapshots", st.snapshots);
  stat_u(o, "replication_connects", st.connects);
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
  if (settings) {
    put_settings(s, o);
  } else {
    put_daemon(s, o);
    put_library(s, o);
    put_log(s, o);
    put_retention(s, o);
    put_replication(s, o);
  }
  evbuffer_add(o, "END\r\n", 5);
}
