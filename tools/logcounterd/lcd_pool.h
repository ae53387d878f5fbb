/*
 * lcd_pool.h - the worker threads and the loops' inline runs
 * (lcd_pool.c): which jobs run on the loop thread, which go to the
 * workers, and how a finished job goes back to its loop.  The queue is
 * shared by every loop under lcd_workers.mu; the rest runs on a loop's
 * own thread.
 */
#ifndef LCD_POOL_H
#define LCD_POOL_H

#include "lcd_job.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lcd_server lcd_server;
typedef struct lcd_loop lcd_loop;

#define LCD_MERGE_SCAN \
  1024                              /* queue entries a worker looks through for
                                   jobs of the same counter */
/* Library calls a loop makes itself per iteration (lcd_pool.c). */
#define LCD_INLINE_CALLS 4
/* Most counters' INCR chains a worker serves with one lc_next_each (a
 * burst of new names: lcd_pool.c's run_each). */
#define LCD_EACH_MAX 256
/* Most requests of MANY jobs (pipelined runs of first uses) a worker
 * serves with one lc_next_each (lcd_pool.c's run_many): the library's
 * batch of first uses (first.c's CHUNK). */
#define LCD_MANY_NAMES 512
/* A library call on the loop thread longer than this sends the loop's
 * jobs to the workers for LCD_BACKOFF_US (lcd_pool.c). */
#define LCD_STALL_US 20000
#define LCD_BACKOFF_US 1000000

/* The worker threads' queue (lcd_pool.c), shared by every loop. */
typedef struct lcd_workers {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lcd_job *head, *tail; /* waiting jobs, FIFO */
  size_t queued;
  int idle; /* workers waiting on cv */
  int stop;
  /* lc_next_each calls (run_each, MANY jobs), and the counters' requests
   * they served */
  _Atomic uint64_t each_calls, each_chains;
  pthread_t *threads;
  int nthreads;
} lcd_workers;

/* lcd_pool.c */
/* Starts the workers; 0 or -1. */
int lcd_pool_start(lcd_server *s);
/* Sets up l's submit and done events; 0 or -1. */
int lcd_pool_attach(lcd_loop *l);
/* Queues j (l's thread); it runs at the end of the loop iteration. */
void lcd_pool_submit(lcd_loop *l, lcd_job *j);
/* After the loops have stopped: lets the workers finish every job, joins
 * them, and hands the finished jobs back to lcd_conn_job_done. */
void lcd_pool_stop(lcd_server *s);
size_t lcd_pool_queued(lcd_server *s);

#endif /* LCD_POOL_H */
