/*
 * fuzz.h - what the libFuzzer targets in fuzz/ share.
 *
 * Each target defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize).  It is built twice: with clang and libFuzzer
 * (make fuzz), and with the project's compiler and replay_main.c (make
 * test), which replays the committed corpora.  A broken property aborts
 * through FUZZ_CHECK, which both builds report as a crash.
 *
 * fuzz_dup copies input into a heap block of exactly that size (plus an
 * optional NUL), so that AddressSanitizer catches a read one byte past
 * what a parser was given.
 */
#ifndef LC_FUZZ_H
#define LC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* dprintf: FUZZ_CHECK writes to fd 2 even when
                          a target sends stderr to /dev/null */
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      dprintf(2, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                               \
    }                                                                        \
  } while (0)

/* A malloc'd copy of data[0..n), NUL-terminated when nul is set; aborts
 * when out of memory.  malloc(0) is avoided: one byte is asked for. */
static inline char *fuzz_dup(const void *data, size_t n, int nul) {
  char *p = malloc(n + (nul ? 1 : 0) + (n == 0 && !nul ? 1 : 0));
  if (!p) abort();
  if (n)
    memcpy(p, data, n);
  else
    p[0] = '\0';
  if (nul) p[n] = '\0';
  return p;
}

#endif /* LC_FUZZ_H */
