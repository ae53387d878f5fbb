/*
 * lcd_flush.h - the tally flusher thread (lcd_flush.c, --flush-interval,
 * --sweep-interval) and the final flush at shutdown.
 */
#ifndef LCD_FLUSH_H
#define LCD_FLUSH_H

#include <pthread.h>
#include <stdint.h>

typedef struct lcd_server lcd_server;

/* The tally flusher (lcd_flush.c); its figures are read under mu. */
typedef struct lcd_flusher {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started, stop;
  pthread_t thread;
  uint64_t runs, sweeps, errors, flushed;
  int failing; /* the last run failed (logged once a streak) */
} lcd_flusher;

/* lcd_flush.c */
/* Starts the flusher thread (which sweeps first); 0 or -1. */
int lcd_flusher_start(lcd_server *s);
/* Stops and joins it (a run in progress finishes first). */
void lcd_flusher_stop(lcd_server *s);
/* The final flush at shutdown (every tally, with a sweep); 0 or an LC_E
 * code, logged. */
int lcd_flush_final(lcd_server *s);
/* A snapshot of the flusher's figures. */
void lcd_flusher_figures(lcd_server *s, uint64_t *runs, uint64_t *sweeps,
                         uint64_t *errors, uint64_t *flushed);

#endif /* LCD_FLUSH_H */
