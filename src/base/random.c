/*
 * random.c - random bits for identities, epochs and nonces' seeds: from
 * /dev/urandom, falling back to the time and pid (weaker, never failing).
 */
#include "base/base.h"

#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

uint64_t lc__random64(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v;
  if (fd >= 0) close(fd);
  if (!ok) v = (uint64_t)lc__clock_now_us() ^ ((uint64_t)getpid() << 40);
  return v;
}
