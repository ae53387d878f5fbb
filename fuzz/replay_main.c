/*
 * replay_main.c - runs a fuzz target without libFuzzer: every file given
 * (a directory: every regular file in it, in name order) is passed once to
 * LLVMFuzzerTestOneInput.  make test builds each target with it and
 * replays the seed and regression corpora (tests/suite_fuzz.sh).
 *
 * A broken property or a sanitizer finding aborts the process; an
 * unreadable file or an empty argument list exits 1.  On success it
 * prints "replayed N inputs" and exits 0.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

/* Defined by targets that need one-time setup. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, len = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (!buf) abort();
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    free(buf);
    return -1;
  }
  /* An exact-size copy, so that overreads are caught as in libFuzzer. */
  unsigned char *exact = (unsigned char *)fuzz_dup(buf, len, 0);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays path (a file, or the files of a directory); returns how many,
 * or -1. */
static long replay(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path) == 0 ? 1 : -1;
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      names = realloc(names, cap * sizeof *names);
      if (!names) abort();
    }
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) abort();
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  long done = 0;
  for (size_t i = 0; i < n; i++) {
    if (done >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
      done = replay_file(names[i]) == 0 ? done + 1 : -1;
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR ...\n", argv[0]);
    return 1;
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  long total = 0;
  for (int i = 1; i < argc; i++) {
    long n = replay(argv[i]);
    if (n < 0) return 1;
    total += n;
  }
  dprintf(1, "replayed %ld inputs\n", total); /* a target may have
                                                  redirected stdout */
  return 0;
}
