/*
 * lcd_client.c - the test and throughput client of tests/daemon_test.sh.
 *
 *   lcd_client load -p PORT -k NAME -c CONNS (-n COUNT | -t SECONDS)
 *              [-b BLOCK] [-d DEPTH] [-o FILE] [-e] [-r] [--raw]
 *     CONNS threads, one TCP connection each (127.0.0.1), send "incr NAME
 *     BLOCK" COUNT times (or for SECONDS), DEPTH requests in flight per
 *     connection.  Checks that every reply is a number, that each
 *     connection's replies strictly increase by at least BLOCK, and (with
 *     -n) that no two blocks [v-BLOCK+1, v] overlap across connections.
 *     -o writes every value, one per line; -e tolerates SERVER_ERROR
 *     replies (counted); -r reconnects when the connection drops (the
 *     daemon was killed), for up to 20 s; --raw seeds NAME with set first
 *     (for a plain memcached).  Prints one "ok ..." or "FAIL ..." line with
 *     the rate; exits 0 or 1.
 *
 *   lcd_client hold -p PORT -c CONNS -t SECONDS
 *     Opens CONNS idle connections, keeps them SECONDS, then checks that
 *     each still answers "version".
 *
 *   lcd_client tally -p PORT -k NAME -c CONNS -n COUNT [-K TALLIES]
 *              [-d DEPTH] [-s SEED] [-U]
 *     CONNS threads, one connection each, send COUNT random changes each
 *     ("incr tally:NAMEi D" or "decr tally:NAMEi D", D 1..1000, a quarter
 *     of them noreply) over TALLIES tallies NAME0.. (default 1), DEPTH in
 *     flight; -U: incr only.  Every reply must be a number; at the end each connection
 *     sends "version" so that its noreply changes are done.  Prints
 *     "sum NAMEi S" per tally (the exact sum of the changes sent), then
 *     "ok ..." or "FAIL ..." with the rate.
 *
 *   lcd_client libmc-tally PORT NAME
 *     libmemcached's memcached_increment / memcached_decrement / memcached_get
 *     on "tally:NAME" (a fresh tally): +5, -2, -10 (answer floored at 0,
 *     get gives -7), +20; exits 0 when each answer is as documented.
 *
 *   lcd_client libmc PORT NAME
 *     A stock client: libmemcached (text protocol) memcached_increment,
 *     memcached_increment_by_key, memcached_get, and the refused
 *     memcached_decrement / memcached_set.  Prints what it got and
 *     exits 0 when the daemon answered as documented.
 *
 * Only ever connects to 127.0.0.1.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libmemcached/memcached.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lcd_io.h"

static int port, conns = 1, depth = 1, allow_errors, reconnect, raw;
static long count, seconds;
static uint64_t block = 1;
static const char *name, *outfile;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_daemon(void) {
  return lcd_io_dial(port, 10);
}

typedef struct worker {
  pthread_t t;
  int64_t *values;
  size_t nvalues, cap;
  long sent, answered, errors, reconnects;
  char fail[256];
} worker;

static void *run(void *arg) {
  worker *w = arg;
  char req[300], line[512];
  int n = snprintf(req, sizeof req, "incr %s %" PRIu64 "\r\n", name, block);
  double deadline = seconds ? now_s() + (double)seconds : 0;
  int64_t last = 0;
  int fd = connect_daemon();
  lcd_rbuf rb = {.start = 0, .end = 0};
  if (fd < 0) {
    snprintf(w->fail, sizeof w->fail, "cannot connect: %s", strerror(errno));
    return NULL;
  }
  long inflight = 0;
  for (;;) {
    int more = seconds ? now_s() < deadline : w->sent < count;
    if (more && inflight < depth) {
      if (lcd_io_send_all(fd, req, (size_t)n) != 0) goto lost;
      w->sent++;
      inflight++;
      continue;
    }
    if (inflight == 0) break;
    if (lcd_io_read_line(fd, &rb, line, sizeof line) != 0) goto lost;
    inflight--;
    w->answered++;
    char *end;
    errno = 0;
    long long v = strtoll(line, &end, 10);
    if (line[0] < '0' || line[0] > '9' || *end || errno) {
      if (allow_errors && strncmp(line, "SERVER_ERROR ", 13) == 0) {
        w->errors++;
        continue;
      }
      snprintf(w->fail, sizeof w->fail, "reply '%.200s'", line);
      break;
    }
    /* signed: a reply at or below the last one fails, however far below
     * (an unsigned difference would wrap and pass it) */
    if (last && (v <= last || (uint64_t)(v - last) < block)) {
      snprintf(w->fail, sizeof w->fail,
               "replies not increasing: %" PRId64 " then %lld", last, v);
      break;
    }
    last = v;
    if (!seconds || outfile) {
      if (w->nvalues == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 1024;
        int64_t *nv = realloc(w->values, w->cap * sizeof *nv);
        if (!nv) {
          snprintf(w->fail, sizeof w->fail, "out of memory");
          break;
        }
        w->values = nv;
      }
      w->values[w->nvalues++] = v;
    }
    continue;
  lost:
    close(fd);
    fd = -1;
    if (!reconnect) {
      snprintf(w->fail, sizeof w->fail, "connection lost after %ld replies",
               w->answered);
      return NULL;
    }
    /* The requests in flight are lost: their ids may be burned, never
     * reissued.  Reconnect and go on. */
    w->sent -= inflight;
    inflight = 0;
    rb.start = rb.end = 0;
    w->reconnects++;
    double give_up = now_s() + 20;
    while ((fd = connect_daemon()) < 0 && now_s() < give_up) usleep(20000);
    if (fd < 0) {
      snprintf(w->fail, sizeof w->fail, "cannot reconnect");
      return NULL;
    }
  }
  if (fd >= 0) close(fd);
  return NULL;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Seeds a plain memcached's key so that incr has something to add to. */
static int seed_raw(void) {
  int fd = connect_daemon();
  char req[300], line[128];
  lcd_rbuf rb = {.start = 0, .end = 0};
  int n = snprintf(req, sizeof req, "set %s 0 0 1\r\n0\r\n", name);
  int ok = fd >= 0 && lcd_io_send_all(fd, req, (size_t)n) == 0 &&
           lcd_io_read_line(fd, &rb, line, sizeof line) == 0 &&
           strcmp(line, "STORED") == 0;
  if (fd >= 0) close(fd);
  return ok ? 0 : -1;
}

static int load(void) {
  if (raw && seed_raw() != 0) {
    printf("FAIL cannot seed %s\n", name);
    return 1;
  }
  worker *ws = calloc((size_t)conns, sizeof *ws);
  double t0 = now_s();
  for (int i = 0; i < conns; i++) pthread_create(&ws[i].t, NULL, run, &ws[i]);
  long answered = 0, errors = 0, reconnects = 0;
  size_t total = 0;
  const char *fail = NULL;
  for (int i = 0; i < conns; i++) {
    pthread_join(ws[i].t, NULL);
    answered += ws[i].answered;
    errors += ws[i].errors;
    reconnects += ws[i].reconnects;
    total += ws[i].nvalues;
    if (ws[i].fail[0] && !fail) fail = ws[i].fail;
  }
  double secs = now_s() - t0;
  int64_t *all = malloc((total ? total : 1) * sizeof *all);
  size_t k = 0;
  for (int i = 0; i < conns; i++) {
    if (ws[i].nvalues) /* -t keeps no values: values is NULL */
      memcpy(all + k, ws[i].values, ws[i].nvalues * sizeof *all);
    k += ws[i].nvalues;
  }
  qsort(all, total, sizeof *all, cmp64);
  size_t overlaps = 0;
  for (size_t i = 1; i < total; i++)
    if ((uint64_t)(all[i] - all[i - 1]) < block) overlaps++;
  if (outfile) {
    FILE *f = fopen(outfile, "w");
    for (size_t i = 0; f && i < total; i++) fprintf(f, "%" PRId64 "\n", all[i]);
    if (!f || fclose(f) != 0) fail = "cannot write the output file";
  }
  printf("%s conns=%d depth=%d block=%" PRIu64 " replies=%ld errors=%ld "
         "reconnects=%ld overlaps=%zu min=%" PRId64 " max=%" PRId64
         " seconds=%.3f rate=%.0f/s%s%s\n",
         fail || overlaps ? "FAIL" : "ok", conns, depth, block, answered,
         errors, reconnects, overlaps, total ? all[0] : 0,
         total ? all[total - 1] : 0, secs, (double)answered / secs,
         fail ? " reason: " : "", fail ? fail : "");
  for (int i = 0; i < conns; i++) free(ws[i].values);
  free(ws);
  free(all);
  return fail || overlaps ? 1 : 0;
}

/* ---- libmemcached, a client this project did not write ----------------- */

/* A libmemcached handle for the daemon on port; NULL after saying why. */
static memcached_st *libmc_open(const char *portarg) {
  char cfg[64];
  snprintf(cfg, sizeof cfg, "--SERVER=127.0.0.1:%s", portarg);
  memcached_st *m = memcached(cfg, strlen(cfg));
  if (!m) printf("FAIL cannot create a libmemcached handle\n");
  return m;
}

static int libmc(const char *portarg, const char *key) {
  memcached_st *m = libmc_open(portarg);
  if (!m) return 1;
  int bad = 0;
  uint64_t a = 0, b = 0, c = 0;
  memcached_return_t rc = memcached_increment(m, key, strlen(key), 1, &a);
  printf("memcached_increment 1: %s %" PRIu64 "\n", memcached_strerror(m, rc),
         a);
  bad |= rc != MEMCACHED_SUCCESS;
  rc = memcached_increment(m, key, strlen(key), 10, &b);
  printf("memcached_increment 10: %s %" PRIu64 "\n", memcached_strerror(m, rc),
         b);
  bad |= rc != MEMCACHED_SUCCESS || b != a + 10;
  rc = memcached_increment_by_key(m, "any", 3, key, strlen(key), 1, &c);
  printf("memcached_increment_by_key 1: %s %" PRIu64 "\n",
         memcached_strerror(m, rc), c);
  bad |= rc != MEMCACHED_SUCCESS || c != b + 1;
  size_t len = 0;
  uint32_t flags = 0;
  char *v = memcached_get(m, key, strlen(key), &len, &flags, &rc);
  printf("memcached_get: %s %.*s\n", memcached_strerror(m, rc), (int)len,
         v ? v : "");
  bad |= rc != MEMCACHED_SUCCESS || !v || strtoull(v, NULL, 10) != c;
  free(v);
  v = memcached_get(m, "never-used", 10, &len, &flags, &rc);
  printf("memcached_get never-used: %s\n", memcached_strerror(m, rc));
  bad |= rc != MEMCACHED_NOTFOUND || v != NULL;
  free(v);
  uint64_t d = 0;
  rc = memcached_decrement(m, key, strlen(key), 1, &d);
  printf("memcached_decrement: %s\n", memcached_strerror(m, rc));
  bad |= rc == MEMCACHED_SUCCESS;
  rc = memcached_set(m, key, strlen(key), "1", 1, 0, 0);
  printf("memcached_set: %s\n", memcached_strerror(m, rc));
  bad |= rc == MEMCACHED_SUCCESS;
  /* The connection still works after the refusals. */
  uint64_t e = 0;
  rc = memcached_increment(m, key, strlen(key), 1, &e);
  printf("memcached_increment after refusals: %s %" PRIu64 "\n",
         memcached_strerror(m, rc), e);
  bad |= rc != MEMCACHED_SUCCESS || e != c + 1;
  memcached_free(m);
  printf("%s\n", bad ? "FAIL libmemcached" : "ok libmemcached");
  return bad;
}

/* ---- tally: random signed changes over many connections ---------------- */

static int ntallies = 1, up_only;
static uint64_t seed = 1;

typedef struct tworker {
  pthread_t t;
  uint64_t rng;
  int64_t *sums; /* per tally */
  long sent, replies;
  char fail[256];
} tworker;

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static void *run_tally(void *arg) {
  tworker *w = arg;
  char req[300], line[512];
  lcd_rbuf rb = {.start = 0, .end = 0};
  int fd = connect_daemon();
  if (fd < 0) {
    snprintf(w->fail, sizeof w->fail, "cannot connect: %s", strerror(errno));
    return NULL;
  }
  long expect = 0; /* replies owed */
  int sent_version = 0;
  for (;;) {
    if (w->sent < count && expect < depth) {
      uint64_t r = xorshift(&w->rng);
      int k = (int)(r % (uint64_t)ntallies);
      int minus = !up_only && ((r >> 16) & 1), noreply = ((r >> 17) & 3) == 0;
      int64_t d = (int64_t)((r >> 20) % 1000) + 1;
      int n = snprintf(req, sizeof req, "%s tally:%s%d %" PRId64 "%s\r\n",
                       minus ? "decr" : "incr", name, k, d,
                       noreply ? " noreply" : "");
      if (lcd_io_send_all(fd, req, (size_t)n) != 0) {
        snprintf(w->fail, sizeof w->fail, "send failed");
        break;
      }
      w->sums[k] += minus ? -d : d;
      w->sent++;
      expect += !noreply;
      continue;
    }
    if (w->sent == count && !sent_version) {
      if (lcd_io_send_all(fd, "version\r\n", 9) != 0) {
        snprintf(w->fail, sizeof w->fail, "send failed");
        break;
      }
      sent_version = 1;
      expect++;
    }
    if (expect == 0) break;
    if (lcd_io_read_line(fd, &rb, line, sizeof line) != 0) {
      snprintf(w->fail, sizeof w->fail, "connection lost after %ld replies",
               w->replies);
      break;
    }
    expect--;
    if (strncmp(line, "VERSION ", 8) == 0 && expect == 0 && sent_version) break;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(line, &end, 10);
    (void)v;
    if (line[0] < '0' || line[0] > '9' || *end || errno) {
      snprintf(w->fail, sizeof w->fail, "reply '%.200s'", line);
      break;
    }
    w->replies++;
  }
  close(fd);
  return NULL;
}

static int tally_load(void) {
  tworker *ws = calloc((size_t)conns, sizeof *ws);
  double t0 = now_s();
  for (int i = 0; i < conns; i++) {
    ws[i].rng = seed * 0x9e3779b97f4a7c15ULL + (uint64_t)i + 1;
    ws[i].sums = calloc((size_t)ntallies, sizeof *ws[i].sums);
    pthread_create(&ws[i].t, NULL, run_tally, &ws[i]);
  }
  const char *fail = NULL;
  long sent = 0, replies = 0;
  for (int i = 0; i < conns; i++) {
    pthread_join(ws[i].t, NULL);
    sent += ws[i].sent;
    replies += ws[i].replies;
    if (ws[i].fail[0] && !fail) fail = ws[i].fail;
  }
  double secs = now_s() - t0;
  for (int k = 0; k < ntallies; k++) {
    int64_t sum = 0;
    for (int i = 0; i < conns; i++) sum += ws[i].sums[k];
    printf("sum %s%d %" PRId64 "\n", name, k, sum);
  }
  printf("%s conns=%d depth=%d tallies=%d changes=%ld replies=%ld "
         "seconds=%.3f rate=%.0f/s%s%s\n",
         fail ? "FAIL" : "ok", conns, depth, ntallies, sent, replies, secs,
         (double)sent / secs, fail ? " reason: " : "", fail ? fail : "");
  for (int i = 0; i < conns; i++) free(ws[i].sums);
  free(ws);
  return fail ? 1 : 0;
}

static int libmc_tally(const char *portarg, const char *tname) {
  char key[256];
  snprintf(key, sizeof key, "tally:%s", tname);
  memcached_st *m = libmc_open(portarg);
  if (!m) return 1;
  int bad = 0;
  size_t kl = strlen(key);
  uint64_t v = 99;
  memcached_return_t rc = memcached_increment(m, key, kl, 5, &v);
  printf("memcached_increment 5: %s %" PRIu64 "\n", memcached_strerror(m, rc),
         v);
  bad |= rc != MEMCACHED_SUCCESS || v != 5;
  rc = memcached_decrement(m, key, kl, 2, &v);
  printf("memcached_decrement 2: %s %" PRIu64 "\n", memcached_strerror(m, rc),
         v);
  bad |= rc != MEMCACHED_SUCCESS || v != 3;
  rc = memcached_decrement(m, key, kl, 10, &v);
  printf("memcached_decrement 10: %s %" PRIu64 " (floored)\n",
         memcached_strerror(m, rc), v);
  bad |= rc != MEMCACHED_SUCCESS || v != 0;
  size_t len = 0;
  uint32_t flags = 0;
  char *g = memcached_get(m, key, kl, &len, &flags, &rc);
  printf("memcached_get: %s %.*s\n", memcached_strerror(m, rc), (int)len,
         g ? g : "");
  bad |= rc != MEMCACHED_SUCCESS || !g || len != 2 || memcmp(g, "-7", 2);
  free(g);
  rc = memcached_increment(m, key, kl, 20, &v);
  printf("memcached_increment 20: %s %" PRIu64 "\n", memcached_strerror(m, rc),
         v);
  bad |= rc != MEMCACHED_SUCCESS || v != 13;
  memcached_free(m);
  printf("%s\n", bad ? "FAIL libmemcached tally" : "ok libmemcached tally");
  return bad;
}

static int hold(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)conns + 64) {
    rl.rlim_cur =
        rl.rlim_max < (rlim_t)conns + 64 ? rl.rlim_max : (rlim_t)conns + 64;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int *fds = calloc((size_t)conns, sizeof *fds);
  int opened = 0, answered = 0;
  for (int i = 0; i < conns; i++)
    if ((fds[i] = connect_daemon()) >= 0) opened++;
  printf("holding %d of %d connections\n", opened, conns);
  fflush(stdout);
  sleep((unsigned)seconds);
  for (int i = 0; i < conns; i++) {
    lcd_rbuf rb = {.start = 0, .end = 0};
    char line[128];
    if (fds[i] >= 0 && lcd_io_send_all(fds[i], "version\r\n", 9) == 0 &&
        lcd_io_read_line(fds[i], &rb, line, sizeof line) == 0 &&
        strncmp(line, "VERSION ", 8) == 0)
      answered++;
    if (fds[i] >= 0) close(fds[i]);
  }
  free(fds);
  printf("%s held=%d answered=%d of %d\n", answered == conns ? "ok" : "FAIL",
         opened, answered, conns);
  return answered == conns ? 0 : 1;
}

static int usage(void) {
  fprintf(stderr, "usage: lcd_client load -p PORT -k NAME -c CONNS "
                  "(-n COUNT | -t SECONDS) [-b BLOCK] [-d DEPTH] [-o FILE] "
                  "[-e] [-r] [--raw]\n"
                  "       lcd_client hold -p PORT -c CONNS -t SECONDS\n"
                  "       lcd_client tally -p PORT -k NAME -c CONNS -n COUNT "
                  "[-K TALLIES] [-d DEPTH] [-s SEED] [-U]\n"
                  "       lcd_client libmc-tally PORT NAME\n"
                  "       lcd_client libmc PORT NAME\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "libmc") == 0)
    return argc == 4 ? libmc(argv[2], argv[3]) : usage();
  if (argc >= 2 && strcmp(argv[1], "libmc-tally") == 0)
    return argc == 4 ? libmc_tally(argv[2], argv[3]) : usage();
  int holding = argc >= 2 && strcmp(argv[1], "hold") == 0;
  int tallying = argc >= 2 && strcmp(argv[1], "tally") == 0;
  if (argc < 2 || (strcmp(argv[1], "load") != 0 && !holding && !tallying))
    return usage();
  static const struct option lo[] = {{"raw", no_argument, NULL, 'R'},
                                     {NULL, 0, NULL, 0}};
  int opt;
  optind = 2;
  while ((opt = getopt_long(argc, argv, "p:k:c:n:t:b:d:o:erK:s:U", lo, NULL)) !=
         -1) {
    switch (opt) {
    case 'p': port = atoi(optarg); break;
    case 'k': name = optarg; break;
    case 'c': conns = atoi(optarg); break;
    case 'n': count = atol(optarg); break;
    case 't': seconds = atol(optarg); break;
    case 'b': block = strtoull(optarg, NULL, 10); break;
    case 'd': depth = atoi(optarg); break;
    case 'o': outfile = optarg; break;
    case 'e': allow_errors = 1; break;
    case 'r': reconnect = 1; break;
    case 'R': raw = 1; break;
    case 'K': ntallies = atoi(optarg); break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'U': up_only = 1; break;
    default: return usage();
    }
  }
  if (holding) return port && seconds > 0 ? hold() : usage();
  if (tallying)
    return port && name && conns >= 1 && depth >= 1 && count > 0 &&
                   ntallies >= 1 && seed
               ? tally_load()
               : usage();
  if (!port || !name || conns < 1 || depth < 1 || block < 1 ||
      (!count == !seconds))
    return usage();
  return load();
}
