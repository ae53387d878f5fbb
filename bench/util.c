/*
 * util.c - small helpers of the benchmark harness: the monotonic clock,
 * scratch directories (create, remove, measure), opening LevelDB and
 * memcached the way the library does, and medians.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "base/format.h"

uint64_t now_ns(void) {
  return (uint64_t)common_mono_ns();
}

void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int mkdir_p(const char *path) {
  return common_mkdir_p(path, 0755);
}

/* Calls fn on each entry of a directory tree, children first. */
static int walk(const char *path,
                void (*fn)(const char *, const struct stat *, void *),
                void *arg) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d == NULL) return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char sub[PATH_MAX];
      if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >=
          (int)sizeof sub)
        continue;
      walk(sub, fn, arg);
    }
    closedir(d);
  }
  fn(path, &st, arg);
  return 0;
}

int rm_rf(const char *path) {
  return common_rm_rf(path);
}

static void add_size(const char *path, const struct stat *st, void *arg) {
  (void)path;
  if (S_ISREG(st->st_mode)) *(uint64_t *)arg += (uint64_t)st->st_size;
}

uint64_t du_bytes(const char *path) {
  uint64_t total = 0;
  walk(path, add_size, &total);
  return total;
}

leveldb_t *db_open(const char *path, size_t write_buffer) {
  leveldb_options_t *o = leveldb_options_create();
  leveldb_options_set_create_if_missing(o, 1);
  if (write_buffer) leveldb_options_set_write_buffer_size(o, write_buffer);
  char *err = NULL;
  leveldb_t *db = leveldb_open(o, path, &err);
  leveldb_options_destroy(o);
  if (db == NULL) {
    fprintf(stderr, "bench: cannot open LevelDB %s: %s\n", path,
            err ? err : "?");
    leveldb_free(err);
  }
  return db;
}

memcached_st *mc_open(const char *config) {
  memcached_st *mc = memcached(config, strlen(config));
  if (mc == NULL) {
    fprintf(stderr, "bench: cannot parse memcached config '%s'\n", config);
    return NULL;
  }
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, 1000);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 1000);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_SND_TIMEOUT, 1000000);
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_RCV_TIMEOUT, 1000000);
  return mc;
}

int mc_set_zero(memcached_st *mc, const char *key) {
  if (memcached_set(mc, key, strlen(key), "0", 1, 0, 0) == MEMCACHED_SUCCESS)
    return 0;
  fprintf(stderr, "bench: memcached set %s: %s\n", key,
          memcached_last_error_message(mc));
  return -1;
}

uint64_t db_max(leveldb_t *db, const char *prefix, size_t plen) {
  char end[LC_NAME_MAX + 10];
  memcpy(end, prefix, plen);
  end[plen - 1] = '\1'; /* just past every key under the prefix */
  leveldb_readoptions_t *ro = leveldb_readoptions_create();
  leveldb_iterator_t *it = leveldb_create_iterator(db, ro);
  leveldb_iter_seek(it, end, plen);
  if (leveldb_iter_valid(it))
    leveldb_iter_prev(it);
  else
    leveldb_iter_seek_to_last(it);
  uint64_t max = 0;
  if (leveldb_iter_valid(it)) {
    size_t klen;
    const char *k = leveldb_iter_key(it, &klen);
    if (klen == plen + 8 && memcmp(k, prefix, plen) == 0)
      max = lc__key_be64_get((const unsigned char *)k + plen);
  }
  leveldb_iter_destroy(it);
  leveldb_readoptions_destroy(ro);
  return max;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int config_connect(const char *config) {
  const char *colon = strrchr(config, ':');
  int port = colon ? atoi(colon + 1) : 0;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

long long proc_cpu_ticks(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so the
   * fields are counted from its last ')'; STATE is field 3 */
  char *p = strrchr(buf, ')');
  if (p == NULL) return -1;
  p++;
  long long utime = -1, stime = -1;
  for (int field = 3; field <= 15; field++) {
    while (*p == ' ') p++;
    if (*p == '\0') return -1;
    char *end = p;
    if (field == 14 || field == 15) {
      long long v = strtoll(p, &end, 10);
      if (end == p || v < 0) return -1;
      if (field == 14)
        utime = v;
      else
        stime = v;
    }
    while (*end && *end != ' ') end++;
    p = end;
  }
  return utime + stime;
}
