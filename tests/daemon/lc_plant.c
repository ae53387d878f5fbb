/*
 * lc_plant.c - writes many records into a closed log quickly, as the
 * library encodes them, for the admin suite's and bench's large dumps and
 * prunes (one lc_next per record would spend minutes on memcached round
 * trips).
 *
 *   lc_plant DIR NAME FIRST N
 *     Records of one id each, FIRST .. FIRST+N-1, for counter NAME in the
 *     log DIR (made by the library before: its format and identity keys),
 *     with the current time; then the reservation at the last.  Exit 0, or
 *     1 with the reason.
 */
#include "plant.h"

#include "base/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: lc_plant DIR NAME FIRST N\n");
    return 2;
  }
  const char *dir = argv[1], *name = argv[2];
  long long first = atoll(argv[3]), n = atoll(argv[4]);
  if (lc_check_name(name) || first < 1 || n < 1) {
    fprintf(stderr, "lc_plant: bad name, FIRST or N\n");
    return 2;
  }
  char *err = NULL;
  if (tu_plant(dir, name, first, first + n - 1, lc__clock_now_us(), first + n - 1,
               &err)) {
    fprintf(stderr, "lc_plant: %s: %s\n", dir, err);
    return 1;
  }
  return 0;
}
