/*
 * util.c - small helpers of the chaos harness: monotonic time, a seeded
 * generator (splitmix64, so one seed gives the same sequence everywhere),
 * the shared control block, acknowledgement records, and one-shot
 * memcached text commands over loopback.
 */
#include "chaos.h"
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int64_t ch_now_ns(void) {
  return common_mono_ns();
}

void ch_sleep_ms(int64_t ms) {
  common_sleep_ms(ms);
}

uint64_t ch_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t ch_rand_between(uint64_t *s, uint64_t lo, uint64_t hi) {
  return lo + ch_rand(s) % (hi - lo + 1);
}

uint64_t ch_block_size(uint64_t *rng) {
  uint64_t p = ch_rand(rng) % 100;
  if (p < 60) return 1;
  if (p < 90) return ch_rand_between(rng, 2, 16);
  return ch_rand_between(rng, 17, 100);
}

ch_ctl *ch_ctl_map(const char *path, bool create) {
  int fd =
      open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
  if (fd < 0) return NULL;
  if (create && ftruncate(fd, sizeof(ch_ctl)) != 0) {
    close(fd);
    return NULL;
  }
  void *p =
      mmap(NULL, sizeof(ch_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? NULL : p;
}

int ch_rec_write(int fd, const ch_rec *r) {
  return write(fd, r, sizeof *r) == (ssize_t)sizeof *r ? 0 : -1;
}

const char *ch_counter_name(int i) {
  static const char *names[CH_COUNTERS] = {"e0", "e1", "e2", "d0", "d1"};
  return i >= 0 && i < CH_COUNTERS ? names[i] : "?";
}

const char *ch_tally_name(int i) {
  static const char *names[CH_TALLIES] = {"t0", "t1", "u0", "u1"};
  return i >= 0 && i < CH_TALLIES ? names[i] : "?";
}

int ch_connect_port(int port, int timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ch_port_open(int port) {
  int fd = ch_connect_port(port, 200);
  if (fd < 0) return false;
  close(fd);
  return true;
}

/* A free loopback port, below the ephemeral range (common.h). */
int ch_port_free(void) {
  return common_free_port();
}

/* Sends one command line (without CRLF) and reads one reply line. */
int ch_mc_command(int port, const char *cmd, char *reply, size_t size) {
  int fd = ch_connect_port(port, 2000);
  if (fd < 0) return -1;
  char line[256];
  int n = snprintf(line, sizeof line, "%s\r\n", cmd);
  int rc = -1;
  if (write(fd, line, (size_t)n) == n) {
    size_t got = 0;
    while (got + 1 < size) {
      ssize_t k = read(fd, reply + got, 1);
      if (k <= 0) break;
      if (reply[got] == '\n') {
        rc = 0;
        break;
      }
      got++;
    }
    reply[got] = '\0';
    if (got && reply[got - 1] == '\r') reply[got - 1] = '\0';
  }
  close(fd);
  return rc;
}

/* The value of key (a number), or -1 if absent or on error. */
long long ch_mc_get(int port, const char *key) {
  int fd = ch_connect_port(port, 2000);
  if (fd < 0) return -1;
  char buf[512];
  int n = snprintf(buf, sizeof buf, "get %s\r\n", key);
  long long v = -1;
  size_t got = 0;
  if (write(fd, buf, (size_t)n) == n) {
    while (got + 1 < sizeof buf) {
      ssize_t k = read(fd, buf + got, sizeof buf - 1 - got);
      if (k <= 0) break;
      got += (size_t)k;
      buf[got] = '\0';
      if (strstr(buf, "END\r\n")) break;
    }
    buf[got] = '\0';
    char *nl = strstr(buf, "\r\n");
    if (strncmp(buf, "VALUE ", 6) == 0 && nl) v = atoll(nl + 2);
  }
  close(fd);
  return v;
}

/* Stores a number under key with a plain set; 0 when STORED. */
int ch_mc_set(int port, const char *key, long long v) {
  char cmd[300], num[24], reply[64];
  int len = snprintf(num, sizeof num, "%lld", v);
  snprintf(cmd, sizeof cmd, "set %s 0 0 %d\r\n%s", key, len, num);
  return ch_mc_command(port, cmd, reply, sizeof reply) == 0 &&
                 strcmp(reply, "STORED") == 0
             ? 0
             : -1;
}
