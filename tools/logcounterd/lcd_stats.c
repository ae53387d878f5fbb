/*
 * lcd_stats.c - logcounterd's "stats" and "stats settings" replies, in
 * memcached's format ("STAT name value" lines, then "END"): the daemon's
 * own figures (connections, commands, errors, closes), the library's
 * (lc_get_stats: allocations, ids, increments, restores, backwards, log
 * writes and syncs, errors), the tallies' (changes by the daemon, the
 * library's tally figures, the flusher's runs) and the settings in force.
 * Any loop thread: the figures are every loop's, summed.
 */
#include "lcd.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *lcd_prefetch_text(uint64_t prefetch, char buf[24]) {
  if (prefetch == LC_PREFETCH_AUTO)
    return "auto";
  if (prefetch == 0)
    return "off";
  snprintf(buf, 24, "%llu", (unsigned long long)prefetch);
  return buf;
}

void lcd_put_stats(lcd_server *s, struct evbuffer *o, int settings) {
  const lcd_settings *set = s->set;
  if (settings) {
    char pbuf[24];
    const char *prefetch = lcd_prefetch_text(set->prefetch, pbuf);
    evbuffer_add_printf(o,
        "STAT listen %s\r\nSTAT socket %s\r\nSTAT socket_mode %04o\r\n"
        "STAT memcached %s\r\nSTAT db %s\r\nSTAT durability %s\r\n"
        "STAT prefetch %s\r\n"
        "STAT timeout_ms %d\r\nSTAT threads %d\r\nSTAT workers %d\r\n"
        "STAT max_connections %d\r\nSTAT max_counters %llu\r\n"
        "STAT max_tallies %llu"
        "\r\nSTAT idle_timeout %d\r\nSTAT line_timeout %d\r\n"
        "STAT drain_timeout %d\r\nSTAT reply_timeout %d\r\n"
        "STAT input_max %d\r\nSTAT output_max %d\r\n"
        "STAT conn_jobs_max %d\r\nSTAT backlog %d\r\nSTAT verbosity %d\r\n"
        "STAT pidfile %s\r\nSTAT line_max %d\r\nSTAT max_keys %d\r\n"
        "STAT block_max %llu\r\nSTAT flush_interval %d\r\n"
        "STAT sweep_interval %d\r\nEND\r\n",
        set->listen, set->socket_path ? set->socket_path : "none",
        set->socket_mode, set->memcached, set->db,
        lc_durability_name(set->durability), prefetch, set->timeout_ms,
        set->threads, set->workers,
        set->max_connections, (unsigned long long)set->max_counters,
        (unsigned long long)set->max_tallies, set->idle_timeout, set->line_timeout,
        set->drain_timeout, set->reply_timeout, LCD_INPUT_MAX, LCD_OUTPUT_MAX,
        LCD_CONN_JOBS, set->backlog, set->verbose,
        set->pidfile ? set->pidfile : "none", LCD_PROTO_LINE_MAX,
        LCD_PROTO_MAX_KEYS, (unsigned long long)LC_BLOCK_MAX,
        set->flush_interval, set->sweep_interval);
    return;
  }
  lc_stats ls;
  memset(&ls, 0, sizeof ls);
  lc_get_stats(s->lc, &ls);
  lcd_counters sum;
  uint64_t stall_max;
  int nopen;
  lcd_loops_sum(s, &sum, &stall_max, &nopen);
  const lcd_counters *d = &sum;
  time_t now = lcd_now();
  evbuffer_add_printf(o,
      "STAT pid %ld\r\nSTAT uptime %lld\r\nSTAT time %lld\r\n"
      "STAT version %s\r\nSTAT libevent %s\r\nSTAT pointer_size %d\r\n"
      "STAT threads %d\r\nSTAT workers %d\r\nSTAT durability %s\r\n"
      "STAT curr_connections %d\r\nSTAT total_connections %" PRIu64 "\r\n"
      "STAT rejected_connections %" PRIu64 "\r\n"
      "STAT max_connections %d\r\nSTAT cmd_incr %" PRIu64 "\r\n"
      "STAT incr_ids %" PRIu64 "\r\nSTAT incr_merged %" PRIu64 "\r\n"
      "STAT incr_errors %" PRIu64 "\r\nSTAT cmd_get %" PRIu64 "\r\n"
      "STAT get_hits %" PRIu64 "\r\nSTAT get_misses %" PRIu64 "\r\n"
      "STAT allocations %" PRIu64 "\r\nSTAT ids %" PRIu64 "\r\n"
      "STAT increments %" PRIu64 "\r\nSTAT restores %" PRIu64 "\r\n"
      "STAT backwards %" PRIu64 "\r\nSTAT log_writes %" PRIu64 "\r\n"
      "STAT log_syncs %" PRIu64 "\r\nSTAT errors %" PRIu64 "\r\n"
      "STAT segments %" PRIu64 "\r\nSTAT segment_waits %" PRIu64 "\r\n"
      "STAT counters %" PRIu64 "\r\nSTAT tallies %" PRIu64 "\r\n"
      "STAT client_errors %" PRIu64 "\r\nSTAT server_errors %" PRIu64 "\r\n"
      "STAT closed_idle %" PRIu64 "\r\nSTAT closed_garbage %" PRIu64 "\r\n"
      "STAT closed_binary %" PRIu64 "\r\nSTAT closed_line_too_long %" PRIu64
      "\r\nSTAT jobs_queued %zu\r\n",
      (long)getpid(), (long long)(now - s->started),
      (long long)(s->started_wall + (now - s->started)), lc_version(),
      event_get_version(), (int)(sizeof(void *) * 8), set->threads,
      set->workers,
      lc_durability_name(set->durability), nopen,
      (uint64_t)atomic_load(&s->total_connections),
      d->rejected_connections, set->max_connections, d->cmd_incr,
      d->incr_ids, d->incr_merged, d->incr_errors, d->cmd_get, d->get_hits,
      d->get_misses, ls.allocations, ls.ids, ls.increments, ls.restores,
      ls.backwards, ls.log_writes, ls.log_syncs, ls.errors, ls.segments,
      ls.segment_waits, ls.counters, ls.tallies,
      d->client_errors, d->server_errors, d->closed_idle, d->closed_garbage,
      d->closed_binary, d->closed_long, lcd_pool_queued(s));
  evbuffer_add_printf(o,
      "STAT closed_unread %" PRIu64 "\r\nSTAT read_paused %" PRIu64
      "\r\nSTAT output_paused %" PRIu64 "\r\n",
      d->closed_unread, d->read_paused, d->output_paused);
  /* Where the work ran: on the loop thread or handed to the workers; the
   * requests per lc_next_n call (the coalescing factor); the longest
   * library call that held the loop, and how often one was slow enough to
   * send the loop's work to the workers for a while. */
  evbuffer_add_printf(o,
      "STAT jobs_inline %" PRIu64 "\r\nSTAT jobs_pooled %" PRIu64
      "\r\nSTAT incr_calls %" PRIu64 "\r\nSTAT incr_per_call %.2f"
      "\r\nSTAT loop_stall_max_us %" PRIu64 "\r\nSTAT loop_backoffs %"
      PRIu64 "\r\n",
      d->jobs_inline, d->jobs_pooled, d->incr_calls,
      d->incr_calls ? (double)d->cmd_incr / (double)d->incr_calls : 0.0,
      stall_max, d->loop_backoffs);
  uint64_t runs, sweeps, ferrors, flushed;
  lcd_flusher_figures(s, &runs, &sweeps, &ferrors, &flushed);
  evbuffer_add_printf(o,
      "STAT cmd_tally_incr %" PRIu64 "\r\nSTAT cmd_tally_decr %" PRIu64
      "\r\nSTAT tally_merged %" PRIu64
      "\r\nSTAT tally_errors %" PRIu64 "\r\nSTAT get_tally %" PRIu64
      "\r\nSTAT tally_adds %" PRIu64 "\r\nSTAT tally_flushes %" PRIu64
      "\r\nSTAT tally_schedules %" PRIu64
      "\r\nSTAT tally_schedule_failures %" PRIu64
      "\r\nSTAT tally_losses %" PRIu64 "\r\nSTAT tally_seeds %" PRIu64
      "\r\nSTAT flusher_runs %" PRIu64 "\r\nSTAT flusher_sweeps %" PRIu64
      "\r\nSTAT flusher_errors %" PRIu64 "\r\nSTAT flusher_written %"
      PRIu64 "\r\nEND\r\n",
      d->cmd_tally_incr, d->cmd_tally_decr, d->tally_merged, d->tally_errors,
      d->get_tally,
      ls.tally_adds, ls.tally_flushes, ls.tally_schedules,
      ls.tally_schedule_failures, ls.tally_losses, ls.tally_seeds, runs,
      sweeps, ferrors, flushed);
}

