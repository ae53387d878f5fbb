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
#include "lcd_cluster.h"
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_counters.h"
#include "lcd_flush.h"
#include "lcd_pool.h"
#include "lcd_server.h"
#include "lcd_settings.h"
#include "lcd_metrics.h"
#include "lcd_tls.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stddef.h>
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

/* ---- the list ---------------------------------------------------------- */

typedef struct emit {
  lcd_fig_fn fn;
  void *arg;
} emit;

static void put(emit *o, lcd_fig f) { o->fn(o->arg, &f); }

/* A counter: only grows while the daemon runs. */
static void count(emit *o, const char *name, uint64_t v, const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_COUNTER,
                   .type = 'u', .u = v});
}

static void gauge(emit *o, const char *name, long long v, const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'i', .i = v});
}

static void gauge_u(emit *o, const char *name, uint64_t v, const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'u', .u = v});
}

/* A gauge in microseconds (Prometheus: seconds). */
static void gauge_us(emit *o, const char *name, long long v,
                     const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'i', .micros = 1, .i = v});
}

static void real(emit *o, const char *name, double v, int prec,
                 const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_GAUGE,
                   .type = 'f', .prec = prec, .f = v});
}

static void text(emit *o, const char *name, const char *v, const char *help) {
  put(o, (lcd_fig){.name = name, .help = help, .kind = LCD_FIG_TEXT,
                   .type = 's', .s = v});
}

/* Figures without a kind or help (the settings): gauges at /metrics. */
static void stat_u(emit *o, const char *name, uint64_t v) {
  put(o, (lcd_fig){.name = name, .kind = LCD_FIG_GAUGE, .type = 'u', .u = v});
}

static void stat_i(emit *o, const char *name, long long v) {
  put(o, (lcd_fig){.name = name, .kind = LCD_FIG_GAUGE, .type = 'i', .i = v});
}

static void stat_s(emit *o, const char *name, const char *v) {
  put(o, (lcd_fig){.name = name, .kind = LCD_FIG_TEXT, .type = 's', .s = v});
}

static void octal(emit *o, const char *name, int v) {
  put(o, (lcd_fig){.name = name, .kind = LCD_FIG_GAUGE, .type = 'o', .i = v});
}

/* The settings ("stats settings" only; not served at /metrics). */
static void put_settings(lcd_server *s, emit *o) {
  const lcd_settings *set = s->set;
  char pbuf[24];
  stat_s(o, "listen", set->listen);
  stat_s(o, "socket", set->socket_path);
  octal(o, "socket_mode", set->socket_mode);
  stat_s(o, "admin_socket", set->admin_socket);
  octal(o, "admin_socket_mode", set->admin_mode);
  stat_s(o, "memcached", set->memcached);
  stat_s(o, "db", set->db);
  stat_s(o, "durability", lc_durability_name(set->durability));
  stat_s(o, "prefetch", lcd_prefetch_text(set->prefetch, pbuf));
  stat_i(o, "timeout_ms", set->timeout_ms);
  stat_i(o, "threads", set->threads);
  stat_i(o, "workers", set->workers);
  stat_i(o, "max_connections", set->max_connections);
  stat_i(o, "max_connections_per_listener", set->listener_max);
  stat_i(o, "max_unfinished", set->max_unfinished);
  stat_i(o, "max_unfinished_per_address", set->max_unfinished_addr);
  stat_u(o, "max_counters", set->max_counters);
  stat_i(o, "idle_evict_us", (long long)set->idle_evict_us);
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
  stat_s(o, "replication_secret", set->repl_secret[0] ? "yes" : "no");
  stat_s(o, "standby_mode", set->standby_mode == LC_STANDBY_PREFERRED
                                ? "preferred"
                                : "required");
  stat_i(o, "standby_timeout_ms", (long long)set->standby_timeout_ms);
  stat_s(o, "metrics_listen", set->metrics_listen);
  stat_i(o, "metrics_max_connections", set->metrics_max);
  stat_i(o, "metrics_max_per_address", set->metrics_max_addr);
  stat_s(o, "auth_enabled_ascii", set->auth_file ? "yes" : "no");
  stat_s(o, "auth_file", set->auth_file);
  stat_s(o, "rights_file", set->rights_file);
  stat_s(o, "insecure_listen", set->insecure_listen ? "yes" : "no");
  /* TLS, with memcached's names (ssl_verify_mode: ours in words) */
  stat_s(o, "ssl_enabled", s->tls ? "yes" : "no");
  stat_s(o, "ssl_chain_cert", set->tls_cert);
  stat_s(o, "ssl_key", set->tls_key);
  stat_s(o, "ssl_ca_cert", set->tls_ca);
  stat_s(o, "ssl_verify_mode", lcd_tls_verify_name(set->tls_verify));
  stat_s(o, "ssl_min_version", "tlsv1.2");
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
    F("cmd_set", cmd_set, "Storage commands (set, add, cas, ms...), all "
                          "refused."),
    F("cmd_meta", cmd_meta, "Meta commands (ma, mg, mn)."),
    F("client_errors", client_errors, "Requests answered ERROR or CLIENT_ERROR."),
    F("server_errors", server_errors, "Requests answered SERVER_ERROR."),
    F("closed_idle", closed_idle, "Connections closed by --idle-timeout."),
    F("closed_garbage", closed_garbage,
      "Connections closed after too many errors in a row."),
    F("closed_binary", closed_binary,
      "Connections closed for a malformed binary-protocol request."),
    F("closed_line_too_long", closed_long,
      "Connections closed for a request line too long."),
    F("closed_unread", closed_unread,
      "Connections closed for leaving replies unread (--reply-timeout)."),
    F("read_paused", read_paused,
      "Times a connection's reading was paused (input buffered)."),
    F("output_paused", output_paused,
      "Times parsing paused for unread replies."),
    F("write_waits", write_waits,
      "Times replies waited for the socket to take them (a client slow to read)."),
    F("jobs_inline", jobs_inline, "Jobs run on an event-loop thread."),
    F("jobs_pooled", jobs_pooled, "Jobs handed to the worker threads."),
    F("jobs_deferred", jobs_deferred,
      "Jobs tried on an event-loop thread and handed to the workers: they would have waited for a synced log write."),
    F("incr_calls", incr_calls, "lc_next_n calls made for incr requests."),
    F("loop_backoffs", loop_backoffs,
      "Times a slow library call sent a loop's work to the workers."),
    F("cmd_tally_incr", cmd_tally_incr, "incr requests of tallies."),
    F("cmd_tally_decr", cmd_tally_decr, "decr requests of tallies."),
    F("tally_merged", tally_merged,
      "Tally changes that shared another's library call."),
    F("tally_errors", tally_errors, "Tally changes refused or failed."),
    F("get_tally", get_tally, "Tally keys asked for by get."),
    F("admin_relays", admin_relays,
      "Connections turned into relays to --admin-socket (admin over TLS)."),
    F("auth_cmds", auth_cmds,
      "Authentication handshakes (the first set of a connection)."),
    F("auth_errors", auth_errors,
      "Failed handshakes and commands refused as unauthenticated."),
    F("ssl_handshake_errors", tls_handshake_errors,
      "TLS connections closed before or in their handshake."),
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
static void put_daemon(lcd_server *s, emit *o) {
  lcd_counters d;
  uint64_t stall_max;
  int nopen;
  lcd_loops_sum(s, &d, &stall_max, &nopen);
  time_t now = lcd_now();
  gauge(o, "pid", (long long)getpid(), "The daemon's process id.");
  gauge(o, "uptime", (long long)(now - s->started),
        "Seconds since the daemon started.");
  gauge(o, "time", (long long)(s->started_wall + (now - s->started)),
        "The daemon's clock, seconds since the epoch.");
  text(o, "version", lc_version(), "The version of liblogcounter.");
  text(o, "libevent", event_get_version(), "The version of libevent.");
  gauge(o, "pointer_size", (long long)(sizeof(void *) * 8),
        "Bits in a pointer.");
  gauge(o, "threads", s->set->threads, "Event-loop threads (--threads).");
  gauge(o, "workers", s->set->workers, "Worker threads (--workers).");
  text(o, "durability", lc_durability_name(s->set->durability),
       "The log's durability (--durability).");
  gauge(o, "curr_connections", nopen, "Open client connections.");
  count(o, "total_connections", atomic_load(&s->total_connections),
        "Client connections accepted.");
  gauge(o, "max_connections", s->set->max_connections,
        "The most open client connections (--max-connections).");
  int unfin;
  unsigned long long unfin_dropped;
  lcd_admit_figures(&unfin, &unfin_dropped);
  gauge(o, "curr_unfinished", unfin,
        "Open connections before their TLS or authentication handshake.");
  count(o, "unfinished_dropped", unfin_dropped,
        "Unfinished connections closed to make room for newer ones "
        "(--max-unfinished, --max-unfinished-per-address).");
  gauge_u(o, "jobs_queued", lcd_pool_queued(s),
          "Jobs waiting for a worker thread.");
  for (int k = 0; k < LOOP_FIGS; k++)
    count(o, loop_figs[k].name, loop_value(&d, k), loop_figs[k].help);
  count(o, "incr_batched_calls", atomic_load(&s->pool.each_calls),
        "lc_next_each calls: several counters' incr requests served at "
        "once (a burst of new names shares its synced writes).");
  count(o, "incr_batched_counters", atomic_load(&s->pool.each_chains),
        "Counters' requests served by those calls.");
  /* What memcached's exporters read: storage and cas commands are refused
   * (none stores or compares), so cmd_set counts refusals and the cas
   * figures stay 0; an incr of a new name creates it (no miss). */
  count(o, "cas_hits", 0, "cas commands that matched (cas is refused).");
  count(o, "cas_misses", 0, "cas commands of a missing key (cas is refused).");
  count(o, "cas_badval", 0, "cas commands that did not match (cas is refused).");
  count(o, "auth_delayed", lcd_auth_delayed(),
        "Authentication failures answered after a delay (repeated "
        "failures from one address).");
  count(o, "incr_hits", d.cmd_incr - d.incr_errors,
        "incr requests answered with an id.");
  count(o, "incr_misses", 0, "incr requests of a missing key (none: a new "
                             "name is created).");
  uint64_t tls_reloads, tls_reload_errors;
  int64_t tls_age;
  lcd_tls_figures(s, &tls_reloads, &tls_reload_errors, &tls_age);
  count(o, "ssl_cert_reloads", tls_reloads,
        "TLS certificate reloads (SIGHUP) that took effect.");
  count(o, "ssl_cert_reload_errors", tls_reload_errors,
        "TLS certificate reloads that failed (the old ones stay).");
  gauge(o, "time_since_server_cert_refresh", (long long)tls_age,
        "Seconds since the TLS certificates in use were loaded.");
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0) {
    real(o, "rusage_user",
         (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, 6,
         "User CPU seconds used by the daemon.");
    real(o, "rusage_system",
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, 6,
         "System CPU seconds used by the daemon.");
  }
  /* The requests per lc_next_n call (the coalescing factor); the longest
   * library call that held a loop. */
  real(o, "incr_per_call",
       d.incr_calls ? (double)d.cmd_incr / (double)d.incr_calls : 0.0, 2,
       "incr requests per lc_next_n call (the coalescing factor).");
  gauge_us(o, "loop_stall_max_us", (long long)stall_max, STALL_HELP);
}

/* The library's figures (lc_get_stats) and the flusher's. */
static void put_library(lcd_server *s, emit *o) {
  lc_stats ls;
  memset(&ls, 0, sizeof ls);
  lc_get_stats(s->lc, &ls);
  count(o, "allocations", ls.allocations,
        "Successful allocations (lc_next_n calls).");
  count(o, "ids", ls.ids, "Ids handed out by the library.");
  count(o, "increments", ls.increments, "memcached increments sent.");
  count(o, "restores", ls.restores, "Counters seeded in memcached from the log.");
  count(o, "backwards", ls.backwards,
        "memcached answers not above the last value handed out.");
  count(o, "log_writes", ls.log_writes, "LevelDB write batches.");
  count(o, "log_syncs", ls.log_syncs, "Synced LevelDB writes.");
  count(o, "errors", ls.errors, "Failed library calls on counters and tallies.");
  count(o, "segments", ls.segments, "Prefetched segments taken.");
  count(o, "segment_waits", ls.segment_waits,
        "Calls that found no segment and waited.");
  gauge_u(o, "counters", ls.counters, "Counters the daemon keeps state for.");
  uint64_t lm = 0;
  if (lc_get_log_memory(s->lc, &lm) == 0)
    gauge_u(o, "log_memory_bytes", lm,
            "The log's LevelDB in memory (memtables, block cache), by its "
            "estimate.");
  count(o, "evictions", ls.evictions,
        "Idle counters dropped from memory (--idle-evict).");
  count(o, "eviction_skips", ls.eviction_skips,
        "Eviction passes given up: a call did not finish in time.");
  gauge_u(o, "tallies", ls.tallies, "Tallies the daemon keeps state for.");
  count(o, "tally_adds", ls.tally_adds, "Successful tally changes.");
  count(o, "tally_flushes", ls.tally_flushes,
        "Tally records written by flushes.");
  count(o, "tally_schedules", ls.tally_schedules, "Tally flush windows opened.");
  count(o, "tally_schedule_failures", ls.tally_schedule_failures,
        "Tally window markers that could not be stored.");
  count(o, "tally_losses", ls.tally_losses,
        "Times memcached had lost or lowered a tally's pending counts.");
  count(o, "tally_seeds", ls.tally_seeds, "Tally keys re-seeded in memcached.");
  count(o, "tally_lost_amount", ls.tally_lost_amount,
        "Amount of acknowledged tally changes memcached lost.");
  count(o, "tally_evictions", ls.tally_evictions,
        "Idle flushed tallies dropped from memory (--idle-evict).");
  uint64_t runs, sweeps, ferrors, flushed;
  lcd_flusher_figures(s, &runs, &sweeps, &ferrors, &flushed);
  count(o, "flusher_runs", runs, "Tally flusher runs.");
  count(o, "flusher_sweeps", sweeps, "Tally flusher sweeps of the whole log.");
  count(o, "flusher_errors", ferrors, "Tally flusher runs that failed.");
  count(o, "flusher_written", flushed, "Tallies the flusher wrote to the log.");
}

/* The log's state: failures, reopens, and why (lc_get_log_status). */
static void put_log(lcd_server *s, emit *o) {
  lc_log_status st;
  if (lc_get_log_status(s->lc, &st) != 0) return;
  text(o, "log_state", lc_log_state_name(st.state),
       "The log's state: ok, failed, recovering or lost.");
  count(o, "log_failures", st.failures, "Times the log failed.");
  count(o, "log_recoveries", st.recoveries, "Reopens that brought the log back.");
  count(o, "log_reopen_attempts", st.attempts, "Reopens of the log tried.");
  gauge(o, "log_failed_at", (long long)(st.failed_us / 1000000),
        "When the log last failed, seconds since the epoch; 0: never.");
  gauge(o, "log_recovered_at", (long long)(st.recovered_us / 1000000),
        "When the log last recovered, seconds since the epoch; 0: never.");
  text(o, "log_error", st.error[0] ? st.error : NULL,
       "What failed last in the log.");
  text(o, "log_reopen_error", st.attempt_error[0] ? st.attempt_error : NULL,
       "Why the last reopen of the log failed.");
}

/* What retention has done (all 0 when it is off; no error: "none").  The
 * last error is one line: CR, LF and other control bytes become spaces. */
static void put_retention(lcd_server *s, emit *o) {
  lc_retention_status st;
  if (lc_get_retention_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  st.last_error[sizeof st.last_error - 1] = '\0';
  for (char *p = st.last_error; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
  count(o, "retain_runs", st.runs, "Retention passes over the log finished.");
  count(o, "retain_counters", st.counters, "Counters pruned by retention.");
  count(o, "retain_records_deleted", st.records_deleted,
        "Records deleted by retention.");
  count(o, "retain_ledger_deleted", st.ledger_deleted,
        "Ledger entries deleted by retention.");
  count(o, "retain_errors", st.errors, "Counters whose retention prune failed.");
  gauge(o, "retain_last_run", (long long)(st.last_run_us / 1000000),
        "When the last retention run ended, seconds since the epoch; 0: never.");
  gauge_us(o, "retain_last_duration_us", (long long)st.last_duration_us,
           "How long the last retention run took, in seconds.");
  text(o, "retain_last_error", st.last_error[0] ? st.last_error : NULL,
       "The last retention failure.");
}

/* The standby, or the primary's view of its standby (role "alone" and
 * zeros without either option). */
static void put_replication(lcd_server *s, emit *o) {
  lc_replication_status st;
  if (lc_get_replication_status(s->lc, &st) != 0) memset(&st, 0, sizeof st);
  text(o, "replication_role", lc_role_name(st.role),
       "The log's role: alone, primary or standby.");
  text(o, "replication_state", st.state[0] ? st.state : NULL,
       "The replication stream's state.");
  gauge(o, "replication_connected", st.connected,
        "1 while the standby (on a standby: the primary) is connected.");
  int standbys = 0;
  if (st.role == LC_ROLE_PRIMARY) {
    text(o, "replication_standby", st.state,
         "The state of the standby that acknowledges floors.");
    (void)lc_replication_standbys(s->lc, &standbys);
  }
  gauge(o, "replication_standbys", standbys,
        "Standbys streaming from this primary (one synchronous, the "
        "others behind it).");
  gauge(o, "replication_stale", st.stale,
        "1 when this standby may be behind (promote needs force).");
  gauge_u(o, "replication_seq", st.seq,
          "Batches written (primary) or applied (standby).");
  gauge_u(o, "replication_acked", st.acked,
          "Batches the standby acknowledged (primary).");
  gauge_u(o, "replication_lag_records", st.lag_records,
          "Log entries of the primary not applied here yet (standby).");
  real(o, "replication_lag_seconds", st.lag_seconds, 3,
       "How old the oldest of them is, in seconds (standby).");
  count(o, "replication_ack_timeouts", st.ack_timeouts,
        "Floors the standby did not acknowledge in time (primary).");
  count(o, "replication_snapshots", st.snapshots,
        "Full copies sent (primary) or taken (standby).");
  count(o, "replication_connects", st.connects,
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
  lcd_cluster_figures(s, fn, arg); /* --etcd (lcd_cluster.c) */
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
