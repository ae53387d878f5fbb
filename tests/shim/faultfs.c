/*
 * faultfs.c - an LD_PRELOAD shim for the tests that injects disk faults
 * beneath LevelDB (1.23 writes with write(2), syncs with fdatasync and
 * opens with open: nm -D libleveldb.so), so a test can tear the write-ahead
 * log the way a failing disk does.  Built as $(BUILD)/tests/libfaultfs.so
 * (mk/faultfs.mk); tests/shim/faultfs_test.sh is its self-test.
 *
 * Environment, read at the first intercepted call:
 *   LC_FAULT_DIR   only files at or under this directory are affected (the
 *                  fd's path from /proc/self/fd/N at the time of the call;
 *                  the directory is canonicalized with realpath, retried
 *                  until it exists)
 *   LC_FAULT_CTL   a file holding one mode word (echo eio > ctl); missing
 *                  or empty means off.  Re-read at most once per
 *                  millisecond of CLOCK_MONOTONIC_COARSE, whose tick is
 *                  coarser (4 ms here): a change takes effect within one
 *                  tick, so a test waits ~10 ms after writing it.
 *   LC_FAULT_HITS  optional: rewritten with "N\n" on every injected fault,
 *                  N counting this process's faults (created, truncated,
 *                  at its first fault; missing means none yet)
 * Without LC_FAULT_DIR and LC_FAULT_CTL every call passes straight through.
 *
 * Modes (write = write, pwrite, pwrite64, writev):
 *   off       nothing
 *   eio       every affected write fails with EIO, nothing written
 *   enospc    the same with ENOSPC
 *   short     the next affected write writes half its bytes (rounded
 *             down; a 1-byte one fails instead) and returns that count;
 *             every later affected write fails with EIO
 *   eio-once  one affected write fails with EIO, then as off
 *   fsync     fsync and fdatasync of affected fds fail with EIO, unsynced
 *   emfile    open, open64, openat, openat64, creat, creat64 with O_CREAT
 *             of a path under the directory fail with EMFILE
 * Each change of the ctl file (its word, or its inode or times when the
 * same word is written again) starts a new episode: short and eio-once are
 * armed again.  An unknown word means off, with one line on stderr.
 *
 * Invariants: the shim never calls itself (its own open, pwrite and the
 * fallbacks go to the real functions, found with dlsym(RTLD_NEXT)), does
 * not count its own files as affected, keeps errno on pass-through, and
 * takes a lock only on the slow paths (the ctl re-read, a fault).  Only
 * calls through the dynamic symbols are seen: stdio's writes inside libc
 * (LevelDB's info LOG) are not.
 *
 * Sanitizer builds: it is built without a sanitizer and forwards to the
 * runtime's interceptors.  ASan insists on coming first, so run with
 * ASAN_OPTIONS=verify_asan_link_order=0 (or put libasan.so first in
 * LD_PRELOAD); TSan needs nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { M_OFF, M_EIO, M_ENOSPC, M_SHORT, M_EIO_ONCE, M_FSYNC, M_EMFILE };
static const char *const mode_names[] = {"off",      "eio",   "enospc", "short",
                                         "eio-once", "fsync", "emfile"};

/* The functions this file stands in front of (dlsym(RTLD_NEXT): libc's,
 * or a sanitizer's interceptors).  Until init has run (or if one is
 * missing) the do_ helpers below make the system call themselves. */
static struct {
  ssize_t (*write)(int, const void *, size_t);
  ssize_t (*pwrite)(int, const void *, size_t, off_t);
  ssize_t (*pwrite64)(int, const void *, size_t, off64_t);
  ssize_t (*writev)(int, const struct iovec *, int);
  int (*fsync)(int);
  int (*fdatasync)(int);
  int (*open)(const char *, int, ...);
  int (*open64)(const char *, int, ...);
  int (*openat)(int, const char *, int, ...);
  int (*openat64)(int, const char *, int, ...);
  int (*creat)(const char *, mode_t);
  int (*creat64)(const char *, mode_t);
} real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Set while this thread runs init: a call made from inside dlsym passes
 * through by system call instead of waiting for itself in pthread_once. */
static _Thread_local int in_init __attribute__((tls_model("initial-exec")));
static bool active; /* LC_FAULT_DIR and LC_FAULT_CTL are set */
static char *dir_env, *ctl_path, *hits_path;

/* The ctl file: the state below is the slow path's, under ctl_mu. */
static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long long next_ms; /* re-read when the clock reaches it */
static _Atomic int cur_mode;      /* M_OFF.. */
static atomic_bool once_armed;    /* eio-once: the failure is still due */
static atomic_bool short_armed;   /* short: the short write is still due */
static int ctl_fd = -1;
struct seen { /* what the last re-read saw */
  bool present;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtim, ctim;
  char word[32];
};
static struct seen last;

/* LC_FAULT_DIR once it exists: dir_ok publishes dir. */
static pthread_mutex_t dir_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool dir_ok;
static char dir[PATH_MAX];
static size_t dir_len;

static pthread_mutex_t hits_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned long hits;
static int hits_fd = -1;

static ssize_t do_write(int fd, const void *b, size_t n) {
  return real.write ? real.write(fd, b, n) : syscall(SYS_write, fd, b, n);
}
static ssize_t do_pwrite(int fd, const void *b, size_t n, off_t off) {
  return real.pwrite ? real.pwrite(fd, b, n, off)
                     : syscall(SYS_pwrite64, fd, b, n, off);
}
static ssize_t do_pwrite64(int fd, const void *b, size_t n, off64_t off) {
  return real.pwrite64 ? real.pwrite64(fd, b, n, off)
                       : syscall(SYS_pwrite64, fd, b, n, off);
}
static ssize_t do_writev(int fd, const struct iovec *v, int n) {
  return real.writev ? real.writev(fd, v, n) : syscall(SYS_writev, fd, v, n);
}
static int do_fsync(int fd) {
  return real.fsync ? real.fsync(fd) : (int)syscall(SYS_fsync, fd);
}
static int do_fdatasync(int fd) {
  return real.fdatasync ? real.fdatasync(fd) : (int)syscall(SYS_fdatasync, fd);
}
static int do_openat(int (*f)(int, const char *, int, ...), int dirfd,
                     const char *path, int flags, mode_t mode) {
  return f ? f(dirfd, path, flags, mode)
           : (int)syscall(SYS_openat, dirfd, path, flags, mode);
}
static int do_open(int (*f)(const char *, int, ...), const char *path,
                   int flags, mode_t mode) {
  return f ? f(path, flags, mode)
           : do_openat(NULL, AT_FDCWD, path, flags, mode);
}

static char *env_copy(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strdup(v) : NULL;
}

/* A fork while another thread holds a lock must not leave it held. */
static void fork_prepare(void) {
  pthread_mutex_lock(&ctl_mu);
  pthread_mutex_lock(&dir_mu);
  pthread_mutex_lock(&hits_mu);
}
static void fork_done(void) {
  pthread_mutex_unlock(&hits_mu);
  pthread_mutex_unlock(&dir_mu);
  pthread_mutex_unlock(&ctl_mu);
}

#define RESOLVE(f) real.f = (__typeof__(real.f))dlsym(RTLD_NEXT, #f)
static void init(void) {
  in_init = 1;
  RESOLVE(write);
  RESOLVE(pwrite);
  RESOLVE(pwrite64);
  RESOLVE(writev);
  RESOLVE(fsync);
  RESOLVE(fdatasync);
  RESOLVE(open);
  RESOLVE(open64);
  RESOLVE(openat);
  RESOLVE(openat64);
  RESOLVE(creat);
  RESOLVE(creat64);
  dir_env = env_copy("LC_FAULT_DIR");
  ctl_path = env_copy("LC_FAULT_CTL");
  hits_path = env_copy("LC_FAULT_HITS");
  active = dir_env && ctl_path;
  pthread_atfork(fork_prepare, fork_done, fork_done);
  in_init = 0;
}

static bool same_stat(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
         a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
         a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
         a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
         a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Reads the ctl file into *s; false when it changed while being read (try
 * again at the next tick).  A file replaced by rename is opened again. */
static bool read_ctl(struct seen *s) {
  struct stat sp, s1, s2;
  memset(s, 0, sizeof *s);
  if (stat(ctl_path, &sp) != 0) {
    if (ctl_fd >= 0) close(ctl_fd);
    ctl_fd = -1;
    return true;
  }
  if (ctl_fd >= 0 && (fstat(ctl_fd, &s1) != 0 || s1.st_dev != sp.st_dev ||
                      s1.st_ino != sp.st_ino)) {
    close(ctl_fd);
    ctl_fd = -1;
  }
  if (ctl_fd < 0)
    ctl_fd = do_open(real.open, ctl_path, O_RDONLY | O_CLOEXEC, 0);
  if (ctl_fd < 0) return true;
  char buf[64];
  if (fstat(ctl_fd, &s1) != 0) return true;
  ssize_t n = pread(ctl_fd, buf, sizeof buf - 1, 0);
  if (fstat(ctl_fd, &s2) != 0 || !same_stat(&s1, &s2)) return false;
  if (n < 0) n = 0;
  buf[n] = '\0';
  char *w = buf + strspn(buf, " \t\r\n");
  size_t len = strcspn(w, " \t\r\n");
  if (len >= sizeof s->word) len = sizeof s->word - 1;
  memcpy(s->word, w, len);
  s->present = true;
  s->dev = s1.st_dev;
  s->ino = s1.st_ino;
  s->size = s1.st_size;
  s->mtim = s1.st_mtim;
  s->ctim = s1.st_ctim;
  return true;
}

static bool same_seen(const struct seen *a, const struct seen *b) {
  return a->present == b->present && a->dev == b->dev && a->ino == b->ino &&
         a->size == b->size && a->mtim.tv_sec == b->mtim.tv_sec &&
         a->mtim.tv_nsec == b->mtim.tv_nsec &&
         a->ctim.tv_sec == b->ctim.tv_sec &&
         a->ctim.tv_nsec == b->ctim.tv_nsec && strcmp(a->word, b->word) == 0;
}

static int parse_mode(const char *word) {
  if (*word == '\0') return M_OFF;
  for (int m = 0; m < (int)(sizeof mode_names / sizeof *mode_names); m++)
    if (strcmp(word, mode_names[m]) == 0) return m;
  char msg[256];
  int n = snprintf(msg, sizeof msg,
                   "faultfs: %s: unknown mode '%s', treated as off\n", ctl_path,
                   word);
  if (n > 0)
    (void)do_write(2, msg, n < (int)sizeof msg ? (size_t)n : sizeof msg - 1);
  return M_OFF;
}

/* The slow path: re-reads the ctl file (one thread at a time; the others
 * go on with the mode they see). */
static void refresh(long long ms) {
  if (pthread_mutex_trylock(&ctl_mu) != 0) return;
  if (ms >= atomic_load(&next_ms)) {
    struct seen s;
    if (read_ctl(&s) && !same_seen(&s, &last)) {
      last = s;
      int m = parse_mode(s.word);
      atomic_store(&once_armed, m == M_EIO_ONCE);
      atomic_store(&short_armed, m == M_SHORT);
      atomic_store(&cur_mode, m);
    }
    atomic_store(&next_ms, ms + 1);
  }
  pthread_mutex_unlock(&ctl_mu);
}

/* Every intercepted call starts here (after init, pthread_once is a load). */
static bool ready(void) {
  if (in_init) return false;
  pthread_once(&once, init);
  return active;
}

/* The mode now: the fast path is a clock read and two loads. */
static int mode_now(void) {
  if (!ready()) return M_OFF;
  int saved = errno;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  long long ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  if (ms >= atomic_load_explicit(&next_ms, memory_order_relaxed)) refresh(ms);
  errno = saved;
  return atomic_load(&cur_mode);
}

static bool dir_ready(void) {
  if (atomic_load(&dir_ok)) return true;
  pthread_mutex_lock(&dir_mu);
  if (!atomic_load(&dir_ok)) {
    char buf[PATH_MAX];
    if (realpath(dir_env, buf)) {
      memcpy(dir, buf, sizeof dir);
      dir_len = strlen(dir);
      atomic_store(&dir_ok, true);
    }
  }
  pthread_mutex_unlock(&dir_mu);
  return atomic_load(&dir_ok);
}

/* path (canonical) is the directory or lies under it. */
static bool under(const char *path) {
  if (dir_len == 1) return path[0] == '/'; /* LC_FAULT_DIR=/ */
  return strncmp(path, dir, dir_len) == 0 &&
         (path[dir_len] == '/' || path[dir_len] == '\0');
}

static bool fd_path(int fd, char *out, size_t size) {
  char link[40];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, size - 1);
  if (n <= 0) return false;
  out[n] = '\0';
  return true;
}

/* fd is open on a file under the directory (errno kept). */
static bool fd_affected(int fd) {
  int saved = errno;
  char path[PATH_MAX];
  bool yes = dir_ready() && fd_path(fd, path, sizeof path) && under(path);
  errno = saved;
  return yes;
}

/* openat(dirfd, path, O_CREAT) would create or open a file under the
 * directory: its parent, canonicalized, is the directory or under it. */
static bool path_affected(int dirfd, const char *path) {
  int saved = errno;
  char full[2 * PATH_MAX], parent[PATH_MAX];
  bool yes = false;
  if (!path || !dir_ready()) goto out;
  int n;
  if (path[0] == '/' || dirfd == AT_FDCWD) {
    n = snprintf(full, sizeof full, "%s", path);
  } else {
    if (!fd_path(dirfd, parent, sizeof parent)) goto out;
    n = snprintf(full, sizeof full, "%s/%s", parent, path);
  }
  if (n <= 0 || (size_t)n >= sizeof full) goto out; /* ENAMETOOLONG anyway */
  size_t len = strlen(full);
  while (len > 1 && full[len - 1] == '/') full[--len] = '\0';
  char *slash = strrchr(full, '/');
  const char *pdir = full, *base = full;
  if (!slash) {
    pdir = ".";
  } else if (slash == full) {
    pdir = "/", base = full + 1;
  } else {
    *slash = '\0';
    base = slash + 1;
  }
  if (!realpath(pdir, parent)) goto out;
  if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || !*base) {
    yes = under(parent); /* close enough: O_CREAT of a directory fails */
  } else {
    char cand[2 * PATH_MAX + 2];
    size_t plen = strlen(parent);
    n = snprintf(cand, sizeof cand, "%s%s%s", parent,
                 parent[plen - 1] == '/' ? "" : "/", base);
    yes = n > 0 && (size_t)n < sizeof cand && under(cand);
  }
out:
  errno = saved;
  return yes;
}

/* Counts an injected fault and rewrites the hits file (the value loaded
 * under the lock only grows, so each rewrite covers the one before). */
static void hit(void) {
  atomic_fetch_add(&hits, 1);
  if (!hits_path) return;
  int saved = errno;
  pthread_mutex_lock(&hits_mu);
  if (hits_fd < 0)
    hits_fd = do_open(real.open, hits_path,
                      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (hits_fd >= 0) {
    char b[32];
    int n = snprintf(b, sizeof b, "%lu\n", atomic_load(&hits));
    (void)do_pwrite(hits_fd, b, (size_t)n, 0);
  }
  pthread_mutex_unlock(&hits_mu);
  errno = saved;
}

static int fail(int err) {
  hit();
  errno = err;
  return -1;
}

/* What a write of count bytes to fd does now: 0 pass through, -1 fail
 * (errno set), 1 write only *keep bytes. */
static int write_fault(int fd, size_t count, size_t *keep) {
  int m = mode_now();
  if (m != M_EIO && m != M_ENOSPC && m != M_SHORT && m != M_EIO_ONCE) return 0;
  if (m == M_EIO_ONCE && !atomic_load(&once_armed)) return 0;
  if (!fd_affected(fd)) return 0;
  switch (m) {
  case M_EIO_ONCE: return atomic_exchange(&once_armed, false) ? fail(EIO) : 0;
  case M_SHORT:
    if (count == 0 && atomic_load(&short_armed)) return 0;
    if (!atomic_exchange(&short_armed, false) || count < 2) return fail(EIO);
    hit();
    *keep = count / 2;
    return 1;
  default: return fail(m == M_ENOSPC ? ENOSPC : EIO);
  }
}

ssize_t write(int fd, const void *buf, size_t count) {
  size_t keep = count;
  if (write_fault(fd, count, &keep) < 0) return -1;
  return do_write(fd, buf, keep);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t off) {
  size_t keep = count;
  if (write_fault(fd, count, &keep) < 0) return -1;
  return do_pwrite(fd, buf, keep, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t off) {
  size_t keep = count;
  if (write_fault(fd, count, &keep) < 0) return -1;
  return do_pwrite64(fd, buf, keep, off);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  size_t total = 0, keep;
  for (int i = 0; i < iovcnt; i++) total += iov[i].iov_len;
  keep = total;
  int r = write_fault(fd, total, &keep);
  if (r < 0) return -1;
  if (r == 0) return do_writev(fd, iov, iovcnt);
  /* The first keep bytes: a copy of the vector, its last entry cut. */
  struct iovec small[16],
      *v = iovcnt <= 16 ? small : malloc((size_t)iovcnt * sizeof *v);
  if (!v) return fail(EIO);
  int n = 0;
  for (size_t left = keep; left > 0; n++) {
    v[n] = iov[n];
    if (v[n].iov_len > left) v[n].iov_len = left;
    left -= v[n].iov_len;
  }
  ssize_t w = do_writev(fd, v, n);
  if (v != small) {
    int saved = errno;
    free(v);
    errno = saved;
  }
  return w;
}

static bool sync_fault(int fd) {
  if (mode_now() != M_FSYNC || !fd_affected(fd)) return false;
  fail(EIO);
  return true;
}

int fsync(int fd) {
  return sync_fault(fd) ? -1 : do_fsync(fd);
}

int fdatasync(int fd) {
  return sync_fault(fd) ? -1 : do_fdatasync(fd);
}

static bool open_fault(int dirfd, const char *path, int flags) {
  if (!ready() || !(flags & O_CREAT) || mode_now() != M_EMFILE) return false;
  if (!path_affected(dirfd, path)) return false;
  fail(EMFILE);
  return true;
}

/* The mode argument is there only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                                   \
  do {                                                           \
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) { \
      va_list ap;                                                \
      va_start(ap, flags);                                       \
      mode = (mode_t)va_arg(ap, int);                            \
      va_end(ap);                                                \
    }                                                            \
  } while (0)

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  OPEN_MODE(flags, mode);
  if (open_fault(AT_FDCWD, path, flags)) return -1;
  return do_open(real.open, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  mode_t mode = 0;
  OPEN_MODE(flags, mode);
  if (open_fault(AT_FDCWD, path, flags)) return -1;
  return do_open(real.open64, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
  mode_t mode = 0;
  OPEN_MODE(flags, mode);
  if (open_fault(dirfd, path, flags)) return -1;
  return do_openat(real.openat, dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
  mode_t mode = 0;
  OPEN_MODE(flags, mode);
  if (open_fault(dirfd, path, flags)) return -1;
  return do_openat(real.openat64, dirfd, path, flags, mode);
}

int creat(const char *path, mode_t mode) {
  if (open_fault(AT_FDCWD, path, O_CREAT)) return -1;
  if (real.creat) return real.creat(path, mode);
  return do_open(NULL, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

int creat64(const char *path, mode_t mode) {
  if (open_fault(AT_FDCWD, path, O_CREAT)) return -1;
  if (real.creat64) return real.creat64(path, mode);
  return do_open(NULL, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}
