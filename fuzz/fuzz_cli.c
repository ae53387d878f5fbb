/*
 * fuzz_cli.c - libFuzzer target: the logcounter CLI's option and number
 * parsing (tools/logcounter.c, tools/cli_util.c, the subcommands).
 *
 * Every CLI file but cli_main.c is linked as it is (the parsers are
 * declared in tools/cli.h), with cli_open
 * replaced (-Wl,--wrap=cli_open) by a stub that opens nothing and returns
 * OPENED, so a subcommand runs exactly up to the point where it would
 * touch memcached, a log or a daemon.  stdout goes to /dev/null, stderr
 * to a memory stream that is checked after each input.
 *
 * Input: byte 0 picks the parser, byte 1 a variant, the rest is split at
 * NUL bytes into arguments (each an exact-size heap string).
 *
 * Properties checked:
 *  - cli_parse_number agrees with a strtoull-based reference (digits only,
 *    no overflow, within min..max) for several ranges;
 *  - cli_parse_duration agrees with a reference (digits, then ms, s, m, h,
 *    d, w or nothing; the product fits int64) and gives value * unit;
 *  - the tally delta parser agrees with a strtoll-based reference;
 *  - cli_check_server accepts only addresses of at most 1000 printable,
 *    quote-free bytes that are an absolute path or end in :PORT, 1..65535;
 *  - the global options end in 0, help or a usage error, and on 0 every
 *    setting is in its documented range;
 *  - every subcommand returns 0, help, a usage error or OPENED, reaches
 *    cli_open at most once, and never reports a usage error after it;
 *  - stderr (captured per input) is empty unless there is a usage error,
 *    whose message starts with "logcounter: ", ends with the usage line,
 *    and shows the user's bytes escaped (printable ASCII and '\n' only);
 *    an option it names is one the user typed.
 */
#include "cli.h"

#include "fuzz.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define OPENED 77 /* what the stub cli_open returns */
#define MAX_ARGS 16

static int opens;

int __wrap_cli_open(struct cli *c);
int __wrap_cli_open(struct cli *c) {
  (void)c;
  opens++;
  return OPENED;
}

static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  devnull = fopen("/dev/null", "w");
  FUZZ_CHECK(devnull != NULL);
  stdout = devnull;
  stderr = devnull;
  unsetenv("LOGCOUNTER_DURABILITY");
  return 0;
}

/* ---- references ---- */

static int all_digits(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static int ref_number(const char *s, uint64_t min, uint64_t max,
                      uint64_t *out) {
  if (!all_digits(s)) return -1;
  errno = 0;
  unsigned long long v = strtoull(s, NULL, 10);
  if (errno == ERANGE || v < min || v > max) return -1;
  *out = v;
  return 0;
}

static int ref_duration(const char *s, int64_t *out) {
  static const struct {
    const char *unit;
    uint64_t us;
  } units[] = {{"ms", 1000ULL},       {"s", 1000000ULL},
               {"m", 60000000ULL},    {"h", 3600000000ULL},
               {"d", 86400000000ULL}, {"w", 604800000000ULL},
               {"", 1000000ULL}};
  size_t d = 0;
  while (s[d] >= '0' && s[d] <= '9') d++;
  if (d == 0 || d >= 32) return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcmp(s + d, units[i].unit) != 0) continue;
    char num[32];
    memcpy(num, s, d);
    num[d] = '\0';
    uint64_t v;
    if (ref_number(num, 0, (uint64_t)INT64_MAX / units[i].us, &v)) return -1;
    *out = (int64_t)(v * units[i].us);
    return 0;
  }
  return -1;
}

static int ref_i64(const char *s, int64_t *out) {
  const char *p = s + (*s == '+' || *s == '-');
  if (!all_digits(p)) return -1;
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno == ERANGE) return -1;
  *out = v;
  return 0;
}

/* ---- the parsers ---- */

static int fuzz_number(const char *text, unsigned variant) {
  static const uint64_t ranges[][2] = {
      {1, LC_BLOCK_MAX},   {1, LC_VALUE_MAX}, {0, UINT64_MAX}, {1, UINT64_MAX},
      {1, MAX_TIMEOUT_MS}, {0, MAX_WAIT_MS},  {1, UINT32_MAX}};
  const uint64_t *r = ranges[variant % (sizeof ranges / sizeof ranges[0])];
  uint64_t got = 12345, want = 0;
  int rc = cli_parse_number(NULL, "number", "--fuzz", text, r[0], r[1], &got);
  int ref = ref_number(text, r[0], r[1], &want);
  FUZZ_CHECK(rc == 0 || rc == EXIT_USAGE);
  FUZZ_CHECK((rc == 0) == (ref == 0));
  FUZZ_CHECK(rc != 0 || got == want);
  FUZZ_CHECK(rc == 0 || got == 12345); /* untouched on failure */
  return rc;
}

static int fuzz_duration(const char *text) {
  int64_t got = -1, want = 0;
  int rc = cli_parse_duration(NULL, "--older-than", text, &got);
  int ref = ref_duration(text, &want);
  FUZZ_CHECK(rc == 0 || rc == EXIT_USAGE);
  FUZZ_CHECK((rc == 0) == (ref == 0));
  FUZZ_CHECK(rc != 0 || (got == want && got >= 0));
  return rc;
}

static int fuzz_i64(const char *text) {
  int64_t got = 0, want = 0;
  int rc = cli_parse_i64(NULL, "delta", text, &got);
  int ref = ref_i64(text, &want);
  FUZZ_CHECK(rc == 0 || rc == EXIT_USAGE);
  FUZZ_CHECK((rc == 0) == (ref == 0));
  FUZZ_CHECK(rc != 0 || got == want);
  return rc;
}

static int fuzz_server(const char *text) {
  int rc = cli_check_server(text, "--server");
  FUZZ_CHECK(rc == 0 || rc == EXIT_USAGE);
  if (rc != 0) return rc;
  size_t len = strlen(text);
  FUZZ_CHECK(len >= 1 && len <= MAX_SERVER_LEN);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    FUZZ_CHECK(*p > 0x20 && *p < 0x7f && *p != '"');
  if (text[0] != '/') {
    const char *colon = strrchr(text, ':');
    FUZZ_CHECK(colon && colon != text && all_digits(colon + 1));
    unsigned long port = strtoul(colon + 1, NULL, 10);
    FUZZ_CHECK(port >= 1 && port <= 65535);
  }
  return 0;
}

/* What the CLI printed on stderr for status rc: nothing on success, help
 * or reaching the open; for a usage error, lines that start with
 * "logcounter: ", then the usage line.  Every message shows the user's
 * bytes escaped: no control character but the line ends, nothing outside
 * ASCII. */
/* An option named by "unknown option 'Q'" or "option 'Q' ..." (Q without
 * escapes) was typed by the user: Q starts one of the arguments ("--long"
 * or "--long=value", or a whole argument), or Q is "-c" and c is a byte of
 * a short-option cluster.  argv[0] is not an argument. */
static void check_option_named(const char *msg, char **argv) {
  const char *p;
  if (!strncmp(msg, PROG ": unknown option '",
               strlen(PROG ": unknown "
                           "option '")))
    p = msg + strlen(PROG ": unknown option '");
  else if (!strncmp(msg, PROG ": option '", strlen(PROG ": option '")))
    p = msg + strlen(PROG ": option '");
  else
    return;
  const char *end = strchr(p, '\'');
  if (!end || memchr(p, '\\', (size_t)(end - p)) || end - p < 2) return;
  size_t n = (size_t)(end - p);
  int found = 0;
  for (int i = 1; argv[i] && !found; i++)
    found = strncmp(argv[i], p, n) == 0 ||
            (p[1] != '-' && n == 2 && argv[i][0] == '-' && argv[i][1] != '-' &&
             strchr(argv[i] + 1, p[1]) != NULL);
  if (!found) dprintf(2, "the message: %s", msg);
  FUZZ_CHECK(found);
}

static void check_messages(int rc, const char *msg, size_t len, char **argv) {
  if (rc == 0 || rc == HELP_SHOWN || rc == OPENED) {
    FUZZ_CHECK(len == 0);
    return;
  }
  FUZZ_CHECK(rc == EXIT_USAGE);
  FUZZ_CHECK(len > 0 && msg[len - 1] == '\n');
  FUZZ_CHECK(strncmp(msg, PROG ": ", strlen(PROG ": ")) == 0);
  const char *last = msg + len - 1;
  while (last > msg && last[-1] != '\n') last--;
  FUZZ_CHECK(strncmp(last, "usage: " PROG " ", strlen("usage: " PROG " ")) ==
             0);
  for (size_t i = 0; i < len; i++) {
    unsigned char b = (unsigned char)msg[i];
    FUZZ_CHECK(b == '\n' || (b >= 0x20 && b < 0x7f));
  }
  check_option_named(msg, argv);
}

static void init_cli(struct cli *c) {
  memset(c, 0, sizeof *c);
  c->memcached = DEFAULT_MEMCACHED;
  c->durability = LC_DURABILITY_DEFAULT;
  c->timeout_ms = DEFAULT_TIMEOUT_MS;
  c->wait_ms = DEFAULT_WAIT_MS;
}

static int fuzz_globals(int argc, char **argv) {
  struct cli c;
  init_cli(&c);
  int rc = cli_parse_globals(&c, argc, argv);
  FUZZ_CHECK(rc == 0 || rc == HELP_SHOWN || rc == EXIT_USAGE);
  if (rc != 0) return rc;
  FUZZ_CHECK(optind >= 1 && optind <= argc);
  FUZZ_CHECK(c.timeout_ms >= 1 && c.timeout_ms <= MAX_TIMEOUT_MS);
  FUZZ_CHECK(c.wait_ms >= 0 && c.wait_ms <= MAX_WAIT_MS);
  FUZZ_CHECK(c.durability == LC_DURABILITY_DEFAULT ||
             c.durability == LC_DURABILITY_SYNC);
  if (c.server) {
    FUZZ_CHECK(*c.server && strlen(c.server) <= MAX_SERVER_LEN);
    FUZZ_CHECK(strstr(c.via, c.server) != NULL);
  }
  /* What main does next: the command word, if any, must be known. */
  if (optind < argc && cli_find_command(argv[optind]))
    FUZZ_CHECK(strcmp(cli_find_command(argv[optind])->name, argv[optind]) == 0);
  return 0;
}

static int fuzz_command(unsigned variant, int argc, char **argv) {
  struct cli c;
  init_cli(&c);
  c.cmd = &cli_commands[variant % cli_ncommands];
  argv[0] = (char *)c.cmd->name;
  opens = 0;
  int rc = c.cmd->run(&c, argc, argv);
  FUZZ_CHECK(rc == 0 || rc == HELP_SHOWN || rc == EXIT_USAGE || rc == OPENED);
  FUZZ_CHECK(opens <= 1);
  FUZZ_CHECK((opens == 1) == (rc == OPENED));
  FUZZ_CHECK(c.h == NULL);
  free(c.db_alloc);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  unsigned mode = data[0] % 6, variant = data[1];
  char *argv[MAX_ARGS + 2];
  int argc = 1;
  argv[0] = "logcounter";
  size_t i = 2;
  while (argc <= MAX_ARGS) {
    const uint8_t *end = memchr(data + i, '\0', size - i);
    size_t n = end ? (size_t)(end - (data + i)) : size - i;
    argv[argc++] = fuzz_dup(data + i, n, 1);
    i += n + 1;
    if (!end || i >= size) break;
  }
  argv[argc] = NULL;
  char **owned = argv + 1;
  int nowned = argc - 1;
  char *saved[MAX_ARGS + 1];
  memcpy(saved, owned, (size_t)nowned * sizeof *saved);
  /* A fresh process: getopt's state (optind, and inside glibc the
   * position within a cluster of short options) starts over.  optind = 0
   * makes glibc's next getopt call reinitialize everything, including the
   * ordering, which the CLI sets with its first optstring ("+": stop at
   * the first non-option) and which later calls keep. */
  static char *none[] = {"logcounter", NULL};
  optind = 0;
  FUZZ_CHECK(getopt(1, none, "+") == -1);

  char *msg = NULL;
  size_t msglen = 0;
  FILE *err = open_memstream(&msg, &msglen);
  FUZZ_CHECK(err != NULL);
  stderr = err;
  int rc;
  switch (mode) {
  case 0: rc = fuzz_number(argv[1], variant); break;
  case 1: rc = fuzz_duration(argv[1]); break;
  case 2: rc = fuzz_i64(argv[1]); break;
  case 3: rc = fuzz_server(argv[1]); break;
  case 4: rc = fuzz_globals(argc, argv); break;
  default: rc = fuzz_command(variant, argc, argv); break;
  }
  stderr = devnull;
  FUZZ_CHECK(fclose(err) == 0);
  check_messages(rc, msg, msglen, argv);
  free(msg);
  /* getopt may have permuted argv: free what was allocated. */
  for (int k = 0; k < nowned; k++) free(saved[k]);
  return 0;
}
