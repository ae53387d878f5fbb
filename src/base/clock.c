/*
 * clock.c - the clocks: the wall clock in microseconds (records' times),
 * the monotonic one (timeouts, latency), and an absolute deadline on the
 * wall clock for pthread_cond_timedwait.
 */
#include "base/base.h"

#include <time.h>

int64_t lc__clock_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct timespec lc__clock_realtime_in(int ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long ns = ts.tv_nsec + (long)(ms % 1000) * 1000000L;
  ts.tv_sec += ms / 1000 + ns / 1000000000L;
  ts.tv_nsec = ns % 1000000000L;
  return ts;
}

int64_t lc__clock_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
