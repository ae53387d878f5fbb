/*
 * lcd_prom.c - the body of /metrics: Prometheus's text format (0.0.4)
 * written from the figure list that "stats" is written from
 * (lcd_stats_figures, lcd_metrics.h), plus each loop's counters and the
 * latency histograms.
 *
 * Names (promtool's lint holds):
 *   logcounterd_NAME_total       a counter figure of "stats"
 *   logcounterd_NAME             a gauge figure; one in microseconds
 *                                (NAME_us) is NAME_seconds, in seconds
 *   logcounterd_NAME_info{NAME="text"} 1   a text figure
 *   logcounterd_per_loop_NAME_total{loop="N"}  each loop's own counters
 *                                (a leading "loop_" of NAME dropped)
 *   logcounterd_alloc_latency_seconds                the daemon's lc_next_n
 *   logcounterd_reservation_write_latency_seconds    calls for incr, and
 *   logcounterd_segment_write_latency_seconds        the library's floor
 *                                writes (lc_get_latency): histograms
 * Every family has its # HELP and # TYPE lines and its samples together.
 * Text is escaped as label values must be; bytes outside printable ASCII
 * become '?', so the body is always valid UTF-8.
 */
#include "lcd_server.h"
#include "lcd_metrics.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "logcounterd_"

/* The family name of f: PREFIX, before, f's name (micros: "_us" ->
 * "_seconds"), then "_total" for a counter, "_info" for a text. */
static void family(char *out, size_t size, const char *before,
                   const lcd_fig *f) {
  const char *name = f->name;
  size_t n = strlen(name);
  const char *unit = "";
  if (f->micros && n > 3 && strcmp(name + n - 3, "_us") == 0) {
    n -= 3;
    unit = "_seconds";
  }
  const char *suffix = f->kind == LCD_FIG_COUNTER ? "_total"
                       : f->kind == LCD_FIG_TEXT  ? "_info"
                                                  : "";
  snprintf(out, size, PREFIX "%s%.*s%s%s", before, (int)n, name, unit,
           suffix);
}

static void header(struct evbuffer *o, const char *fam, const char *help,
                   const char *type) {
  if (help)
    evbuffer_add_printf(o, "# HELP %s %s\n", fam, help);
  else
    evbuffer_add_printf(o, "# HELP %s The stats figure of that name.\n", fam);
  evbuffer_add_printf(o, "# TYPE %s %s\n", fam, type);
}

/* A label value: \ " and newline escaped, other bytes outside printable
 * ASCII as '?'. */
static void label_value(struct evbuffer *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\\' || *p == '"')
      evbuffer_add_printf(o, "\\%c", *p);
    else if (*p == '\n')
      evbuffer_add(o, "\\n", 2);
    else if (*p < 0x20 || *p >= 0x7f)
      evbuffer_add(o, "?", 1);
    else
      evbuffer_add(o, p, 1);
  }
}

/* The sample's value (after its name and labels). */
static void value(struct evbuffer *o, const lcd_fig *f) {
  if (f->micros)
    evbuffer_add_printf(o, " %.6f\n",
                        (f->type == 'u' ? (double)f->u : (double)f->i) / 1e6);
  else if (f->type == 'u')
    evbuffer_add_printf(o, " %" PRIu64 "\n", f->u);
  else if (f->type == 'f')
    evbuffer_add_printf(o, " %.9g\n", f->f);
  else
    evbuffer_add_printf(o, " %lld\n", (long long)f->i);
}

/* One figure of "stats": a family with one sample. */
static void stat_family(void *arg, const lcd_fig *f) {
  struct evbuffer *o = arg;
  char fam[160];
  family(fam, sizeof fam, "", f);
  header(o, fam, f->help, f->kind == LCD_FIG_COUNTER ? "counter" : "gauge");
  if (f->kind == LCD_FIG_TEXT) {
    evbuffer_add_printf(o, "%s{%s=\"", fam, f->name);
    label_value(o, f->s ? f->s : "none");
    evbuffer_add(o, "\"} 1\n", 5);
    return;
  }
  evbuffer_add_printf(o, "%s", fam);
  value(o, f);
}

/* Each loop's own figures: one family per figure, one sample per loop. */
static void per_loop(lcd_server *s, struct evbuffer *o) {
  lcd_fig f;
  for (int k = 0; s->nloops > 0 && lcd_loop_figure(&s->loops[0], k, &f); k++) {
    char fam[160];
    lcd_fig g = f;
    if (strncmp(g.name, "loop_", 5) == 0) g.name += 5;
    family(fam, sizeof fam, "per_loop_", &g);
    char help[256];
    snprintf(help, sizeof help, "%s Per event loop.", f.help);
    header(o, fam, help, f.kind == LCD_FIG_COUNTER ? "counter" : "gauge");
    for (int i = 0; i < s->nloops; i++) {
      if (!lcd_loop_figure(&s->loops[i], k, &f)) break;
      evbuffer_add_printf(o, "%s{loop=\"%d\"}", fam, i);
      value(o, &f);
    }
  }
}

/* A histogram family from non-cumulative buckets (lc_latency_bound_us). */
static void histogram(struct evbuffer *o, const char *name, const char *help,
                      const lc_latency_hist *h) {
  char fam[160];
  snprintf(fam, sizeof fam, PREFIX "%s", name);
  header(o, fam, help, "histogram");
  uint64_t cum = 0;
  for (int i = 0; i < LC_LATENCY_BUCKETS - 1; i++) {
    cum += h->buckets[i];
    evbuffer_add_printf(o, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", fam,
                        (double)lc_latency_bound_us(i) / 1e6, cum);
  }
  cum += h->buckets[LC_LATENCY_BUCKETS - 1];
  evbuffer_add_printf(o, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", fam, cum);
  evbuffer_add_printf(o, "%s_sum %.6f\n", fam, (double)h->sum_us / 1e6);
  evbuffer_add_printf(o, "%s_count %" PRIu64 "\n", fam, cum);
}

void lcd_prom_write(lcd_server *s, struct evbuffer *o) {
  lcd_stats_figures(s, 0, stat_family, o);
  per_loop(s, o);
  lc_latency_hist alloc;
  lcd_metrics_alloc_sum(s, &alloc);
  histogram(o, "alloc_latency_seconds",
            "Time of each lc_next_n call the daemon makes for incr "
            "requests (on a loop or a worker), in seconds.",
            &alloc);
  lc_latency lat;
  memset(&lat, 0, sizeof lat);
  lc_get_latency(s->lc, &lat);
  histogram(o, "reservation_write_latency_seconds",
            "Time of each synced log write that raises a counter's "
            "reservation, in seconds (lc_get_latency).",
            &lat.reservation);
  histogram(o, "segment_write_latency_seconds",
            "Time of each synced log write of a new prefetched segment, in "
            "seconds (lc_get_latency).",
            &lat.segment);
}
