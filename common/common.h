/*
 * common.h - the helpers that the test programs (tests/), the benchmark
 * harness (bench/) and the chaos harness (chaos/) share, in the spirit of
 * libuv's test/task.h: clocks, sleeping, directories, and a free port.
 * Not part of liblogcounter.
 */
#ifndef LC_COMMON_H
#define LC_COMMON_H

#include <stdint.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t common_mono_ns(void);
/* Sleeps ms milliseconds (through EINTR); nothing for ms <= 0. */
void common_sleep_ms(int64_t ms);
/* mkdir -p with mode; 0 or -1. */
int common_mkdir_p(const char *path, mode_t mode);
/* rm -rf; 0 (also when path does not exist) or -1. */
int common_rm_rf(const char *path);
/* A TCP port on 127.0.0.1 that is free now, picked at random from 20000 up
 * to the kernel's ephemeral range (client sockets take their ports from
 * that range, so a port from it may be taken between the pick and the
 * bind: the hazard of binding port 0); -1 if none was found. */
int common_free_port(void);

#endif
