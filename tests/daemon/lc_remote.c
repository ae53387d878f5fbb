/*
 * lc_remote.c - the library's remote mode from many threads at once, as a
 * C service uses it: one handle (lc_options.server, and tls_ca /
 * tls_cert / tls_key / user from the arguments and $LC_REMOTE_PASSWORD),
 * THREADS threads each taking CALLS ids of one counter with lc_next.
 * The pool is smaller than the thread count, so calls wait for a free
 * connection.  Checks that every thread's ids increase and that no id
 * is seen twice; prints "ok N ids, distinct, in order per thread, max M"
 * and exits 0, or prints the first failure and exits 1.  Used by
 * tests/suite_tls.sh.
 *
 *   lc_remote HOST:PORT NAME THREADS CALLS POOL CA [CERT KEY] [USER]
 */
#include <logcounter.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lc_t *h;
static const char *name;
static int calls;
static int64_t *seen; /* thread t's ids at seen[t * calls ...] */
static int failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
  int64_t *mine = seen + (size_t)(intptr_t)arg * (size_t)calls;
  for (int i = 0; i < calls; i++) {
    int rc = lc_next(h, name, &mine[i]);
    if (rc || (i > 0 && mine[i] <= mine[i - 1])) {
      pthread_mutex_lock(&mu);
      if (failures++ == 0)
        printf("FAIL call %d: %s (%s), id %lld after %lld\n", i,
               rc ? lc_err_name(rc) : "not increasing", lc_last_detail(),
               (long long)mine[i], (long long)(i ? mine[i - 1] : 0));
      pthread_mutex_unlock(&mu);
      return NULL;
    }
  }
  return NULL;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: lc_remote HOST:PORT NAME THREADS CALLS POOL CA "
                    "[CERT KEY] [USER]\n");
    return 2;
  }
  int threads = atoi(argv[3]);
  calls = atoi(argv[4]);
  name = argv[2];
  if (threads < 1 || threads > 64 || calls < 1 || calls > 100000) return 2;
  lc_options o;
  lc_options_init(&o);
  o.server = argv[1];
  o.pool_size = atoi(argv[5]);
  o.tls_ca = argv[6];
  o.timeout_ms = 5000;
  if (argc >= 9) {
    o.tls_cert = argv[7];
    o.tls_key = argv[8];
  }
  if (argc >= 10) {
    o.user = argv[9];
    o.password = getenv("LC_REMOTE_PASSWORD");
  }
  int rc = lc_open(&o, &h);
  if (rc) {
    printf("FAIL lc_open: %s (%s)\n", lc_err_name(rc), lc_last_detail());
    return 1;
  }
  seen = calloc((size_t)threads * (size_t)calls, sizeof *seen);
  pthread_t t[64];
  for (int i = 0; i < threads; i++)
    pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  lc_close(h);
  size_t n = (size_t)threads * (size_t)calls;
  if (failures) return 1;
  qsort(seen, n, sizeof *seen, cmp);
  for (size_t i = 1; i < n; i++)
    if (seen[i] == seen[i - 1]) {
      printf("FAIL id %lld handed out twice\n", (long long)seen[i]);
      return 1;
    }
  printf("ok %zu ids, distinct, in order per thread, max %lld\n", n,
         (long long)seen[n - 1]);
  free(seen);
  return 0;
}
