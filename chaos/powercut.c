/*
 * powercut.c - the LD_PRELOAD shim of the chaos harness, loaded into each
 * owner (the embedded worker, logcounterd).  Two jobs:
 *
 * 1. It records, for every file under $CHAOS_CUT_DIR, what a power cut
 *    would keep, as lines appended to $CHAOS_CUT_STATE (one write(2) each,
 *    so they survive the process's SIGKILL, as page cache does):
 *      C PATH          PATH was created (open with O_CREAT, did not exist)
 *      S PATH LEN      fsync/fdatasync of PATH: its first LEN bytes are
 *                      durable (the size just before the sync)
 *      D DIR           fsync/fdatasync of the directory DIR: every entry
 *                      operation in it so far is durable
 *      R SRC DST BAK   rename; BAK is a hard link to the DST it replaced
 *                      (in $CHAOS_CUT_BAK), or "-"
 *      U PATH BAK      unlink; BAK a hard link to what was removed
 *    cut.c replays these after the owner is killed (see there for the
 *    model).  LevelDB 1.23 calls open, write, fdatasync (for files and, for
 *    a MANIFEST, its directory), rename and unlink: those are the calls
 *    seen here (nm -D libleveldb.so).
 *
 * 2. It fails log writes on purpose: leveldb_write and leveldb_put report
 *    an IO error while the control block ($CHAOS_CTL) says so.
 *
 * Without the environment variables it only passes calls through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <leveldb/c.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chaos.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *cut_dir, *bak_dir;
static size_t cut_len;
static int state_fd = -1;
static ch_ctl *ctl;
static _Atomic unsigned long bak_seq;

static int (*real_open)(const char *, int, ...);
static int (*real_fdatasync)(int);
static int (*real_fsync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_unlink)(const char *);
static void (*real_leveldb_write)(leveldb_t *, const leveldb_writeoptions_t *,
                                  leveldb_writebatch_t *, char **);
static void (*real_leveldb_put)(leveldb_t *, const leveldb_writeoptions_t *,
                                const char *, size_t, const char *, size_t,
                                char **);

static void init(void) {
  real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
  real_leveldb_write = (void (*)(leveldb_t *, const leveldb_writeoptions_t *,
                                 leveldb_writebatch_t *,
                                 char **))dlsym(RTLD_NEXT, "leveldb_write");
  real_leveldb_put = (void (*)(leveldb_t *, const leveldb_writeoptions_t *,
                               const char *, size_t, const char *, size_t,
                               char **))dlsym(RTLD_NEXT, "leveldb_put");
  cut_dir = getenv("CHAOS_CUT_DIR");
  bak_dir = getenv("CHAOS_CUT_BAK");
  const char *state = getenv("CHAOS_CUT_STATE");
  if (cut_dir && bak_dir && state) {
    cut_len = strlen(cut_dir);
    state_fd =
        real_open(state, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  }
  const char *c = getenv("CHAOS_CTL");
  if (c) {
    int fd = real_open(c, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
      void *p =
          mmap(NULL, sizeof(ch_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) ctl = p;
      close(fd);
    }
  }
}

static bool tracked(const char *path) {
  return state_fd >= 0 && path && strncmp(path, cut_dir, cut_len) == 0 &&
         (path[cut_len] == '/' || path[cut_len] == '\0');
}

static void note(const char *fmt, ...) {
  char line[3 * 4096 + 64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0 && (size_t)n < sizeof line) {
    ssize_t w = write(state_fd, line, (size_t)n);
    (void)w;
  }
}

/* A hard link to path in the backup directory; "-" if there is nothing. */
static void backup(const char *path, char *out, size_t size) {
  snprintf(out, size, "%s/%ld-%lu", bak_dir, (long)getpid(),
           (unsigned long)++bak_seq);
  if (link(path, out) != 0) snprintf(out, size, "-");
}

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  pthread_once(&once, init);
  bool created = false;
  if ((flags & O_CREAT) && tracked(path)) created = access(path, F_OK) != 0;
  int fd = real_open(path, flags, mode);
  if (fd >= 0 && created) note("C %s\n", path);
  return fd;
}

/* The same call (off_t is 64 bits here; real_open passes the flags on). */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));

/* Runs the real sync; on success notes what it made durable. */
static int synced(int fd, int (*real)(int)) {
  pthread_once(&once, init);
  struct stat st;
  bool have = state_fd >= 0 && fstat(fd, &st) == 0;
  int rc = real(fd);
  if (rc != 0 || !have) return rc;
  int saved = errno;
  char link_path[64], path[4096];
  snprintf(link_path, sizeof link_path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link_path, path, sizeof path - 1);
  if (n > 0) {
    path[n] = '\0';
    if (tracked(path)) {
      if (S_ISDIR(st.st_mode))
        note("D %s\n", path);
      else
        note("S %s %lld\n", path, (long long)st.st_size);
    }
  }
  errno = saved;
  return rc;
}

int fdatasync(int fd) {
  pthread_once(&once, init);
  return synced(fd, real_fdatasync);
}

int fsync(int fd) {
  pthread_once(&once, init);
  return synced(fd, real_fsync);
}

int rename(const char *src, const char *dst) {
  pthread_once(&once, init);
  if (!tracked(src) && !tracked(dst)) return real_rename(src, dst);
  char bak[4096] = "-";
  if (access(dst, F_OK) == 0) backup(dst, bak, sizeof bak);
  int rc = real_rename(src, dst);
  int saved = errno;
  if (rc == 0)
    note("R %s %s %s\n", src, dst, bak);
  else if (strcmp(bak, "-") != 0)
    real_unlink(bak);
  errno = saved;
  return rc;
}

int unlink(const char *path) {
  pthread_once(&once, init);
  if (!tracked(path)) return real_unlink(path);
  char bak[4096] = "-";
  backup(path, bak, sizeof bak);
  int rc = real_unlink(path);
  int saved = errno;
  if (rc == 0)
    note("U %s %s\n", path, bak);
  else if (strcmp(bak, "-") != 0)
    real_unlink(bak);
  errno = saved;
  return rc;
}

/* True (and counted) while the control block says log writes fail. */
static bool failing(char **errptr) {
  if (ctl == NULL) return false;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (now >= atomic_load(&ctl->fail_until_ns)) return false;
  atomic_fetch_add(&ctl->writes_failed, 1);
  if (errptr) {
    free(*errptr);
    *errptr = strdup("IO error: chaos: injected write failure");
  }
  return true;
}

void leveldb_write(leveldb_t *db, const leveldb_writeoptions_t *o,
                   leveldb_writebatch_t *b, char **errptr) {
  pthread_once(&once, init);
  if (!failing(errptr)) real_leveldb_write(db, o, b, errptr);
}

void leveldb_put(leveldb_t *db, const leveldb_writeoptions_t *o, const char *k,
                 size_t klen, const char *v, size_t vlen, char **errptr) {
  pthread_once(&once, init);
  if (!failing(errptr)) real_leveldb_put(db, o, k, klen, v, vlen, errptr);
}
