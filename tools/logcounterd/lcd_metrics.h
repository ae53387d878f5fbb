/*
 * lcd_metrics.h - logcounterd's figures as one list, shared by the
 * memcached "stats" reply and the Prometheus text at /metrics
 * (--metrics-listen), and the histogram of allocation latency.
 *
 *   lcd_stats.c    enumerates the figures (lcd_stats_figures, and each
 *                  loop's own with lcd_loop_figure); writes "stats"
 *   lcd_metrics.c  the HTTP thread (evhttp) and the allocation-latency
 *                  histograms
 *   lcd_prom.c     the Prometheus text writer
 *
 * Every figure is read the way "stats" reads it (atomics, or the short
 * locks of the library's getters): a scrape never holds a data loop.
 */
#ifndef LCD_METRICS_H
#define LCD_METRICS_H

#include "lcd_server.h"
#include "lcd_settings.h"

#include <stdatomic.h>
#include <stdint.h>

struct evbuffer;

/* Defaults of --metrics-max-connections and --metrics-max-per-address. */
#define LCD_METRICS_MAX_DEFAULT 64
#define LCD_METRICS_MAX_ADDR_DEFAULT 16

/* What a figure is, for Prometheus: a counter (only grows; served as
 * logcounterd_NAME_total), a gauge, or a text (served as a gauge
 * logcounterd_NAME_info{NAME="text"} 1). */
typedef enum { LCD_FIG_COUNTER, LCD_FIG_GAUGE, LCD_FIG_TEXT } lcd_fig_kind;

typedef struct lcd_fig {
  const char *name; /* its "STAT name" */
  const char *help; /* one line, for "# HELP" */
  lcd_fig_kind kind;
  char type;    /* the value: 'u' u, 'i' i, 'f' f, 's' s, 'o' i (octal) */
  int prec;     /* 'f': digits after the point in "stats" */
  int micros;   /* the value is in microseconds (Prometheus: seconds, and
                   the name's "_us" becomes "_seconds") */
  uint64_t u;
  int64_t i;
  double f;
  const char *s; /* NULL: "none" */
} lcd_fig;

typedef void (*lcd_fig_fn)(void *arg, const lcd_fig *f);

/* lcd_stats.c */
/* Calls fn for every figure of "stats" (settings: of "stats settings"),
 * in the order of the reply. */
void lcd_stats_figures(lcd_server *s, int settings, lcd_fig_fn fn, void *arg);
/* Loop l's own figure number k (its lcd_counters and its longest stall):
 * 1 with *f filled, 0 when k is past the last. */
int lcd_loop_figure(const lcd_loop *l, int k, lcd_fig *f);

/* A latency histogram, buckets as lc_latency_bound_us; relaxed atomics,
 * written by one or a few threads, read by the HTTP thread. */
typedef struct lcd_hist {
  _Atomic uint64_t n[LC_LATENCY_BUCKETS];
  _Atomic uint64_t sum_us;
} lcd_hist;

/* The metrics server (lcd_metrics.c). */
typedef struct lcd_metrics lcd_metrics;
/* 1 if text is an address --metrics-listen takes ([notls:]HOST:PORT). */
int lcd_metrics_addr_ok(const char *text);
/* 1 if /metrics is served over TLS: --metrics-listen and --tls-cert
 * given, the address not written notls:. */
int lcd_metrics_https(const lcd_settings *set);
/* Starts the HTTP thread on set->metrics_listen (nothing when NULL): 0, or
 * an exit status after printing why.  After lcd_loops_init and lc_open. */
int lcd_metrics_start(lcd_server *s);
/* Stops and joins it; before lc_close and lcd_loops_free. */
void lcd_metrics_stop(lcd_server *s);
/* The allocation-latency histogram of loop index (or of the workers when
 * index < 0); NULL without --metrics-listen (nothing is timed then). */
lcd_hist *lcd_metrics_alloc_hist(lcd_server *s, int index);
/* Counts one lc_next_n call that took us microseconds. */
void lcd_hist_record(lcd_hist *h, int64_t us);

/* lcd_prom.c: the whole /metrics body. */
void lcd_prom_write(lcd_server *s, struct evbuffer *o);
/* The sum of the loops' and the workers' allocation histograms. */
void lcd_metrics_alloc_sum(lcd_server *s, lc_latency_hist *out);

#endif /* LCD_METRICS_H */
