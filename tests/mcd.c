/*
 * mcd.c - test helpers: runs a real private memcached for a test program,
 * talks to it over raw sockets with the text protocol, and manages temporary
 * directories.  See mcd.h.
 *
 * Invariants: a server this file started is killed when the program exits
 * (atexit for normal exits, PR_SET_PDEATHSIG for crashes); the forked child
 * only calls async-signal-safe functions before exec, and closes every
 * inherited descriptor so that it never holds a test's pipe open.
 */
#include "mcd.h"
#include "common.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- servers still running at exit ---------------------------------- */

#define MCD_MAX_LIVE 16
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t live[MCD_MAX_LIVE];
static int atexit_done;

static void kill_live(void) {
  for (int i = 0; i < MCD_MAX_LIVE; i++) {
    if (live[i] > 0) {
      kill(live[i], SIGKILL);
      waitpid(live[i], NULL, 0);
      live[i] = 0;
    }
  }
}

static void live_add(pid_t pid) {
  pthread_mutex_lock(&live_mu);
  if (!atexit_done) {
    atexit(kill_live);
    atexit_done = 1;
  }
  for (int i = 0; i < MCD_MAX_LIVE; i++) {
    if (live[i] == 0) {
      live[i] = pid;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
}

static void live_del(pid_t pid) {
  pthread_mutex_lock(&live_mu);
  for (int i = 0; i < MCD_MAX_LIVE; i++)
    if (live[i] == pid) live[i] = 0;
  pthread_mutex_unlock(&live_mu);
}

/* ---- sockets ---------------------------------------------------------- */

int mcd_free_port(void) {
  return common_free_port();
}

/* A connected socket with 2 s send/receive timeouts, or -1. */
static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct timeval tv = {2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Connects to port and sends the whole request; the socket, or -1. */
static int send_request(int port, const char *req, size_t reqlen) {
  int fd = connect_port(port);
  if (fd < 0) return -1;
  for (size_t off = 0; off < reqlen;) {
    ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t)w;
  }
  return fd;
}

/* Sends req and reads until the reply ends with one of the terminators
 * (each must end in "\r\n").  Returns the reply length or -1. */
static int roundtrip(int port, const char *req, size_t reqlen, char *buf,
                     size_t cap, const char *const *ends) {
  int fd = send_request(port, req, reqlen);
  if (fd < 0) return -1;
  size_t got = 0;
  for (;;) {
    if (got + 1 >= cap) break;
    ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
    buf[got] = '\0';
    if (got >= 2 && buf[got - 2] == '\r' && buf[got - 1] == '\n') {
      int done = 0;
      for (const char *const *e = ends; *e; e++) {
        size_t el = strlen(*e);
        /* A terminator line: the whole reply, or a line after "\r\n". */
        if (got >= el && memcmp(buf + got - el, *e, el) == 0 &&
            (got == el ||
             (buf[got - el - 2] == '\r' && buf[got - el - 1] == '\n'))) {
          done = 1;
          break;
        }
      }
      if (done) {
        close(fd);
        return (int)got;
      }
    }
  }
  close(fd);
  return -1;
}

/* A single-line reply: accept any complete line. */
static int line_cmd(const mcd_t *m, const char *req, char *buf, size_t cap) {
  int fd = send_request(m->port, req, strlen(req));
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < cap) {
    ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
    buf[got] = '\0';
    if (strstr(buf, "\r\n")) {
      close(fd);
      return (int)got;
    }
  }
  close(fd);
  return -1;
}

/* ---- server process ---------------------------------------------------- */

static int wait_ready(mcd_t *m) {
  int64_t deadline = mono_us() + 5000000;
  while (mono_us() < deadline) {
    int st;
    pid_t r = waitpid(m->pid, &st, WNOHANG);
    if (r == m->pid) { /* it exited: port taken, bad option ... */
      live_del(m->pid);
      m->pid = 0;
      return -1;
    }
    int fd = connect_port(m->port);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    sleep_ms(10);
  }
  return -1;
}

static int spawn(mcd_t *m) {
  char port[16];
  snprintf(port, sizeof port, "%d", m->port);
  const char *argv[32];
  int n = 0;
  argv[n++] = "memcached";
  argv[n++] = "-l";
  argv[n++] = "127.0.0.1";
  argv[n++] = "-p";
  argv[n++] = port;
  argv[n++] = "-U";
  argv[n++] = "0";
  argv[n++] = "-m";
  argv[n++] = "64";
  argv[n++] = "-M";
  if (geteuid() == 0) {
    argv[n++] = "-u";
    argv[n++] = "root";
  }
  for (const char *const *e = m->extra; e && *e; e++) {
    if (n + 1 >= (int)(sizeof argv / sizeof argv[0])) {
      fprintf(stderr, "mcd: too many memcached arguments\n");
      return -1;
    }
    argv[n++] = *e;
  }
  argv[n] = NULL;
  long maxfd = sysconf(_SC_OPEN_MAX);
  if (maxfd < 0 || maxfd > 65536) maxfd = 65536;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    perror("mcd: fork");
    return -1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {
      dup2(dn, 0);
      dup2(dn, 1);
    }
    for (long fd = 3; fd < maxfd; fd++) close((int)fd);
    execvp("memcached", (char *const *)argv);
    _exit(127);
  }
  m->pid = pid;
  live_add(pid);
  return 0;
}

int mcd_start(mcd_t *m) {
  return mcd_start_with(m, NULL);
}

int mcd_start_with(mcd_t *m, const char *const *extra) {
  memset(m, 0, sizeof *m);
  m->extra = extra;
  for (int tries = 0; tries < 10; tries++) {
    m->port = mcd_free_port();
    if (m->port <= 0) continue;
    if (spawn(m) != 0) return -1;
    if (wait_ready(m) == 0) {
      snprintf(m->config, sizeof m->config, "--SERVER=127.0.0.1:%d", m->port);
      return 0;
    }
    mcd_kill9(m);
  }
  fprintf(stderr, "mcd: cannot start memcached\n");
  return -1;
}

static void signal_wait(mcd_t *m, int sig) {
  if (m->pid <= 0) return;
  if (m->frozen && sig != SIGKILL) kill(m->pid, SIGCONT);
  kill(m->pid, sig);
  int64_t deadline = mono_us() + 5000000;
  for (;;) {
    pid_t r = waitpid(m->pid, NULL, sig == SIGKILL ? 0 : WNOHANG);
    if (r == m->pid || (r < 0 && errno != EINTR)) break;
    if (mono_us() > deadline) {
      kill(m->pid, SIGKILL);
      waitpid(m->pid, NULL, 0);
      break;
    }
    sleep_ms(5);
  }
  live_del(m->pid);
  m->pid = 0;
  m->frozen = 0;
}

void mcd_stop(mcd_t *m) {
  signal_wait(m, SIGTERM);
}
void mcd_kill9(mcd_t *m) {
  signal_wait(m, SIGKILL);
}

int mcd_restart(mcd_t *m) {
  mcd_kill9(m);
  /* The port may linger briefly; memcached sets SO_REUSEADDR, but retry a
   * few times in case it is not free yet. */
  for (int tries = 0; tries < 50; tries++) {
    if (spawn(m) != 0) return -1;
    if (wait_ready(m) == 0) return 0;
    mcd_kill9(m);
    sleep_ms(50);
  }
  fprintf(stderr, "mcd: cannot restart memcached on port %d\n", m->port);
  return -1;
}

/* The state letter of a process in /proc/PID/stat ('T' once stopped). */
static char proc_state(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return '?';
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the name may hold spaces */
  return p && p[1] == ' ' ? p[2] : '?';
}

int mcd_freeze(mcd_t *m) {
  if (m->pid <= 0 || kill(m->pid, SIGSTOP) != 0) return -1;
  m->frozen = 1;
  /* kill() only queues the signal: wait until it has stopped (<= 2 s) */
  for (int i = 0; i < 2000 && proc_state(m->pid) != 'T'; i++) usleep(1000);
  return proc_state(m->pid) == 'T' ? 0 : -1;
}

int mcd_thaw(mcd_t *m) {
  if (m->pid <= 0 || kill(m->pid, SIGCONT) != 0) return -1;
  m->frozen = 0;
  return 0;
}

const char *mcd_config(const mcd_t *m) {
  return m->config;
}

/* ---- raw commands ------------------------------------------------------ */

int mcd_flush_all(const mcd_t *m) {
  char buf[256];
  if (line_cmd(m, "flush_all\r\n", buf, sizeof buf) < 0) return -1;
  return strncmp(buf, "OK\r\n", 4) == 0 ? 0 : -1;
}

int mcd_set(const mcd_t *m, const char *key, const char *value) {
  size_t len = strlen(key) + strlen(value) + 64;
  char *req = malloc(len);
  if (!req) return -1;
  snprintf(req, len, "set %s 0 0 %zu\r\n%s\r\n", key, strlen(value), value);
  char buf[256];
  int r = line_cmd(m, req, buf, sizeof buf);
  free(req);
  if (r < 0) return -1;
  if (strncmp(buf, "STORED\r\n", 8) != 0) {
    fprintf(stderr, "mcd: set %s: %s", key, buf);
    return -1;
  }
  return 0;
}

int mcd_delete(const mcd_t *m, const char *key) {
  char req[512], buf[256];
  snprintf(req, sizeof req, "delete %s\r\n", key);
  if (line_cmd(m, req, buf, sizeof buf) < 0) return -1;
  return strncmp(buf, "DELETED\r\n", 9) == 0 ||
                 strncmp(buf, "NOT_FOUND\r\n", 11) == 0
             ? 0
             : -1;
}

int mcd_get(const mcd_t *m, const char *key, char *out, size_t len) {
  char req[512];
  static const char *const ends[] = {"END\r\n", "ERROR\r\n", NULL};
  snprintf(req, sizeof req, "get %s\r\n", key);
  char *buf = malloc(65536);
  if (!buf) return -1;
  int r = roundtrip(m->port, req, strlen(req), buf, 65536, ends);
  int ret = -1;
  if (r >= 0) {
    if (strcmp(buf, "END\r\n") == 0) {
      ret = 0;
    } else if (strncmp(buf, "VALUE ", 6) == 0) {
      char *nl = strstr(buf, "\r\n");
      unsigned flags;
      size_t n;
      char k[300];
      if (nl && sscanf(buf, "VALUE %299s %u %zu", k, &flags, &n) == 3) {
        char *data = nl + 2;
        if (len > 0) {
          size_t c = n < len - 1 ? n : len - 1;
          memcpy(out, data, c);
          out[c] = '\0';
        }
        ret = 1;
      }
    }
  }
  free(buf);
  return ret;
}

long mcd_stat(const mcd_t *m, const char *name) {
  static const char *const ends[] = {"END\r\n", "ERROR\r\n", NULL};
  char *buf = malloc(65536);
  if (!buf) return -1;
  long v = -1;
  if (roundtrip(m->port, "stats\r\n", 7, buf, 65536, ends) >= 0) {
    char want[128];
    snprintf(want, sizeof want, "STAT %s ", name);
    char *p = strstr(buf, want);
    if (p) v = strtol(p + strlen(want), NULL, 10);
  }
  free(buf);
  return v;
}

/* One reply line on fd into buf (without its "\r\n"); its length or -1.
 * For one request at a time: nothing follows the line. */
static int read_line(int fd, char *buf, size_t cap) {
  size_t got = 0;
  while (got + 1 < cap) {
    ssize_t r = recv(fd, buf + got, cap - 1 - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
    buf[got] = '\0';
    char *end = strstr(buf, "\r\n");
    if (end) {
      *end = '\0';
      return (int)(end - buf);
    }
  }
  return -1;
}

long mcd_fill(const mcd_t *m) {
  static const size_t sizes[] = {100000, 2};
  const long cap = 1000000; /* sets of one size before giving up */
  char *req = malloc(sizes[0] + 64);
  int fd = connect_port(m->port), one = 1;
  long stored = 0, key = 0;
  if (req == NULL || fd < 0) goto fail;
  /* one send per set, sent at once: thousands of round trips */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (long i = 0;; i++) {
      char line[256];
      if (i == cap) {
        fprintf(stderr, "mcd: fill: %zu-byte values never refused\n", sizes[s]);
        goto fail;
      }
      int n =
          snprintf(req, 64, "set mcd_fill:%ld 0 0 %zu\r\n", key++, sizes[s]);
      memset(req + n, 'x', sizes[s]);
      memcpy(req + n + sizes[s], "\r\n", 2);
      size_t len = (size_t)n + sizes[s] + 2;
      if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len ||
          read_line(fd, line, sizeof line) < 0)
        goto fail;
      if (strcmp(line, "STORED") == 0) {
        stored++;
      } else if (strncmp(line, "SERVER_ERROR", 12) == 0) {
        break; /* refused: the next size */
      } else {
        fprintf(stderr, "mcd: fill: %s\n", line);
        goto fail;
      }
    }
  }
  close(fd);
  free(req);
  return stored;
fail:
  if (fd >= 0) close(fd);
  free(req);
  return -1;
}

/* ---- temporary directories -------------------------------------------- */

char *tmpdir_make(void) {
  char tmpl[] = "/tmp/lctest.XXXXXX";
  if (!mkdtemp(tmpl)) {
    perror("mkdtemp");
    return NULL;
  }
  return strdup(tmpl);
}

int tmpdir_remove(const char *path) {
  return common_rm_rf(path);
}

void tmpdir_free(char *path) {
  tmpdir_remove(path);
  free(path);
}

/* ---- utilities ------------------------------------------------------- */

int test_scale(void) {
  const char *s = getenv("LC_TEST_SCALE");
  if (!s || !*s) return 1;
  long v = strtol(s, NULL, 10);
  return v >= 1 ? (int)v : 1;
}

long scaled(long n, long min) {
  long v = n / test_scale();
  return v < min ? min : v;
}

int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t mono_us(void) {
  return common_mono_ns() / 1000;
}

void sleep_ms(int ms) {
  common_sleep_ms(ms);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

size_t count_duplicates(int64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_i64);
  size_t d = 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] == v[i - 1]) d++;
  return d;
}

size_t first_non_increasing(const int64_t *v, size_t n) {
  for (size_t i = 0; i + 1 < n; i++)
    if (v[i] >= v[i + 1]) return i;
  return (size_t)-1;
}

/* ---- logcounter helpers ----------------------------------------------- */

void tu_options_sub(lc_options *o, const mcd_t *m, const char *dir,
                    const char *sub, char path[TU_PATH_MAX]) {
  snprintf(path, TU_PATH_MAX, "%s/%s", dir, sub);
  lc_options_init(o);
  o->memcached = mcd_config(m);
  o->db_path = path;
}

void tu_options(lc_options *o, const mcd_t *m, const char *dir,
                char path[TU_PATH_MAX]) {
  tu_options_sub(o, m, dir, "db", path);
}

int64_t mcd_counter_value(const mcd_t *m, const char *name) {
  char key[256], buf[64];
  snprintf(key, sizeof key, "lc:%s", name);
  if (mcd_get(m, key, buf, sizeof buf) != 1) return -1;
  char *end;
  long long v = strtoll(buf, &end, 10);
  return *end == '\0' ? v : -1;
}

int tu_open(const mcd_t *m, const char *dir, lc_durability_t d, int timeout_ms,
            lc_t **out) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, m, dir, path);
  o.durability = d;
  o.timeout_ms = timeout_ms;
  return lc_open(&o, out);
}

int tu_open_prefetch(const char *dir, uint64_t prefetch, lc_t **out) {
  char path[TU_PATH_MAX];
  lc_options o;
  tu_options(&o, &mc, dir, path);
  o.prefetch = prefetch;
  return lc_open(&o, out);
}

long tu_records(lc_t *h, const char *name, lc_record **recs) {
  *recs = NULL;
  lc_iter *it = NULL;
  int rc = lc_iter_open(h, name, &it);
  if (rc != 0) return rc;
  size_t n = 0, cap = 0;
  lc_record *v = NULL, r;
  while ((rc = lc_iter_next(it, &r)) == 1) {
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      lc_record *nv = realloc(v, cap * sizeof *v);
      if (!nv) {
        rc = LC_ENOMEM;
        break;
      }
      v = nv;
    }
    v[n++] = r;
  }
  lc_iter_close(it);
  if (rc != 0) {
    free(v);
    return rc;
  }
  *recs = v;
  return (long)n;
}

/* The ledger's entries, in order; how many, or a negative code. */
static long ledger_entries(lc_t *h, const char *name, lc_gap **out) {
  *out = NULL;
  lc_iter *it = NULL;
  int rc = lc_ledger_open(h, name, &it);
  if (rc != 0) return rc;
  size_t n = 0, cap = 0;
  lc_gap *v = NULL, g;
  while ((rc = lc_ledger_next(it, &g)) == 1) {
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      lc_gap *nv = realloc(v, cap * sizeof *v);
      if (!nv) {
        rc = LC_ENOMEM;
        break;
      }
      v = nv;
    }
    v[n++] = g;
  }
  lc_iter_close(it);
  if (rc != 0) {
    free(v);
    return rc;
  }
  *out = v;
  return (long)n;
}

int tu_explain(lc_t *h, const char *name, tu_ledger *out) {
  memset(out, 0, sizeof *out);
  lc_record *r;
  lc_gap *g;
  long nr = tu_records(h, name, &r);
  if (nr < 0) return (int)nr;
  long ng = ledger_entries(h, name, &g);
  if (ng < 0) {
    free(r);
    return (int)ng;
  }
  /* Walk both in value order (a record before an entry at the same first
   * value: a void lies inside its record). */
  int64_t prev = 0;
  for (long i = 0, j = 0; i < nr || j < ng;) {
    bool rec = i < nr && (j == ng || r[i].first <= g[j].first);
    int64_t first = rec ? r[i].first : g[j].first;
    int64_t last = rec ? r[i].last : g[j].last;
    if (!rec && g[j].cause == LC_GAP_VOID) {
      if (first > prev) out->conflicts++;
      out->entries[LC_GAP_VOID]++;
      out->values[LC_GAP_VOID]++;
      j++;
      continue;
    }
    if (prev && first <= prev) {
      if (!rec) out->conflicts++; /* a gap entry over logged values */
    } else if (prev && first > prev + 1) {
      out->values[0] += (uint64_t)(first - prev - 1); /* unexplained */
      out->entries[0]++;
    }
    if (!rec) {
      int c = g[j].cause >= 1 && g[j].cause <= LC_GAP_CAUSE_MAX ? g[j].cause : 0;
      out->values[c] += (uint64_t)(last - first + 1);
      out->entries[c]++;
    }
    if (last > prev) prev = last;
    if (rec)
      i++;
    else
      j++;
  }
  free(r);
  free(g);
  return 0;
}

/* ---- the shared fixture ------------------------------------------------ */

mcd_t mc;

int tu_group_setup(void **state) {
  (void)state;
  return mcd_start(&mc);
}

int tu_group_teardown(void **state) {
  (void)state;
  mcd_stop(&mc);
  return 0;
}

int tu_setup_with(void **state, lc_durability_t d, int timeout_ms) {
  fx_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  *state = f;
  f->dir = tmpdir_make();
  if (!f->dir || mcd_flush_all(&mc) != 0) return -1;
  int rc = tu_open(&mc, f->dir, d, timeout_ms, &f->h);
  if (rc != 0) {
    fprintf(stderr, "lc_open: %s: %s\n", lc_err_name(rc), lc_last_detail());
    return -1;
  }
  return 0;
}

int tu_setup_dir(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  *state = f;
  f->dir = tmpdir_make();
  return f->dir && mcd_flush_all(&mc) == 0 ? 0 : -1;
}

int tu_setup(void **state) {
  return tu_setup_with(state, LC_DURABILITY_DEFAULT, 0);
}

int tu_teardown(void **state) {
  fx_t *f = *state;
  if (!f) return 0;
  lc_close(f->h);
  if (f->dir) tmpdir_free(f->dir);
  free(f);
  return 0;
}
