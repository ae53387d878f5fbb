/*
 * lcd_counters.h - stats: each loop's figures (lcd_counters, summed by
 * "stats" and /metrics) and the "stats" reply (lcd_stats.c).  A figure is
 * changed by its own loop thread only and read by any (atomics, no
 * lock).
 */
#ifndef LCD_COUNTERS_H
#define LCD_COUNTERS_H

#include "logcounter.h"

#include <stdatomic.h>
#include <stdint.h>

struct evbuffer;
typedef struct lcd_server lcd_server;

/* A loop's figures for "stats", all uint64_t: "stats" sums every loop's.
 * Each is changed by its own loop thread only, and atomic so that another
 * loop may read it while it changes (uncontended: no cost to speak of). */
typedef _Atomic uint64_t lcd_stat;
typedef struct lcd_counters {
  lcd_stat rejected_connections;
  lcd_stat cmd_incr, incr_ids, incr_merged, incr_errors;
  lcd_stat cmd_get, get_hits, get_misses;
  lcd_stat cmd_set;  /* storage commands (all refused) */
  lcd_stat cmd_meta; /* ma, mg, mn */
  lcd_stat client_errors, server_errors;
  lcd_stat closed_idle, closed_garbage, closed_binary, closed_long;
  lcd_stat closed_unread; /* replies unread for --reply-timeout */
  lcd_stat read_paused;   /* times a connection's reading was paused */
  lcd_stat output_paused; /* times parsing paused for unread replies */
  lcd_stat write_waits;   /* times replies waited for EV_WRITE */
  lcd_stat cmd_tally_incr, cmd_tally_decr, tally_errors, get_tally;
  lcd_stat tally_merged;
  lcd_stat incr_calls;    /* lc_next_n calls for incr requests */
  lcd_stat jobs_inline;   /* jobs run on a loop thread */
  lcd_stat jobs_pooled;   /* jobs handed to the workers */
  lcd_stat jobs_deferred; /* of those, tried on a loop first: they would
                             have waited for a segment (lc_try_next_n) */
  lcd_stat loop_backoffs; /* times a slow call sent work to the pool */
  lcd_stat auth_cmds;     /* authentication handshakes ("set" before auth) */
  lcd_stat admin_relays;  /* connections turned admin relays (lcd_relay.c) */
  lcd_stat auth_errors;   /* failed handshakes and unauthenticated commands */
  lcd_stat tls_handshake_errors; /* TLS connections closed before or in
                                    the handshake */
} lcd_counters;

/* lcd_stats.c */
void lcd_put_stats(lcd_server *s, struct evbuffer *o, int settings);
/* Loop 0, every second: logs the log's failures, reopens and loss; the
 * state now. */
lc_log_state_t lcd_log_watch(lcd_server *s);
/* "off", "auto" or the segment size (written into buf). */
const char *lcd_prefetch_text(uint64_t prefetch, char buf[24]);

#endif /* LCD_COUNTERS_H */
