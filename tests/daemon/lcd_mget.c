/*
 * lcd_mget.c - one multi-get through libmemcached, as a C service calls
 * it: memcached_mget of every key read from standard input (one per
 * line) against 127.0.0.1:PORT, then memcached_fetch_result until the
 * end.  Prints "KEY VALUE" for each hit and, last, "fetched N" with the
 * number of hits; exits 0, or 1 with the libmemcached error on stderr.
 * Used by tests/suite_clients.sh (libmemcached's mget of 10,000 keys).
 *
 *   lcd_mget PORT < keys
 */
#include <libmemcached/memcached.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEYS 100000

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: lcd_mget PORT < keys\n");
    return 2;
  }
  static char *keys[MAX_KEYS];
  static size_t lens[MAX_KEYS];
  size_t n = 0;
  char line[512];
  while (n < MAX_KEYS && fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    lens[n] = strlen(line);
    if (!(keys[n] = strdup(line))) return 1;
    n++;
  }
  memcached_st *mc = memcached_create(NULL);
  memcached_server_add(mc, "127.0.0.1", (in_port_t)atoi(argv[1]));
  memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_POLL_TIMEOUT, 20000);
  memcached_return_t rc =
      memcached_mget(mc, (const char *const *)keys, lens, n);
  if (rc != MEMCACHED_SUCCESS) {
    fprintf(stderr, "memcached_mget: %s\n", memcached_strerror(mc, rc));
    return 1;
  }
  memcached_result_st *r;
  size_t got = 0;
  while ((r = memcached_fetch_result(mc, NULL, &rc)) != NULL) {
    printf("%.*s %.*s\n", (int)memcached_result_key_length(r),
           memcached_result_key_value(r), (int)memcached_result_length(r),
           memcached_result_value(r));
    memcached_result_free(r);
    got++;
  }
  if (rc != MEMCACHED_END && rc != MEMCACHED_SUCCESS &&
      rc != MEMCACHED_NOTFOUND) {
    fprintf(stderr, "memcached_fetch_result: %s\n",
            memcached_strerror(mc, rc));
    return 1;
  }
  printf("fetched %zu\n", got);
  memcached_free(mc);
  for (size_t i = 0; i < n; i++) free(keys[i]);
  return 0;
}
