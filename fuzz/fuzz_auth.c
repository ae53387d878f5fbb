/*
 * fuzz_auth.c - libFuzzer target: logcounterd's authentication parsers
 * (tools/logcounterd/lcd_auth_parse.c): the handshake's data block
 * "user password", auth-file lines "user:password" and rights-file lines.
 * The input's first byte picks the parser (0: token, 1: auth line, 2:
 * rights line, else all three on the rest); for the file parsers the rest
 * is split at '\n' as lcd_auth.c and lcd_rights.c split a file.
 *
 * Properties checked besides "no crash, no out-of-bounds read" (every
 * piece is a heap copy of exactly its size):
 *  - token: on success the user is 1..LCD_AUTH_USER_MAX bytes without
 *    space, ':' or control bytes, the password the rest after ONE space
 *    (1..LCD_AUTH_PASS_MAX bytes, no control byte), and user + ' ' +
 *    password is exactly the input; printing them back parses the same;
 *  - auth line: a skipped line is empty or a comment; a parsed one splits
 *    at the first ':' and its spans lie inside the line; a malformed one
 *    has a reason;
 *  - rights line: the user and every prefix lie inside the line, hold no
 *    space or tab, prefixes are 1..LC_NAME_MAX printable bytes, at most
 *    LCD_RIGHTS_PREFIX_MAX of them; a malformed one has a reason.
 */
#include "fuzz.h"

#include "lcd_auth.h"
#include "lcd_proto.h"

static int inside(const char *base, size_t len, const lcd_auth_span *s) {
  return s->s >= base && s->len <= len && (size_t)(s->s - base) <= len - s->len;
}

static void token(const char *d, size_t n) {
  char *p = fuzz_dup(d, n, 0);
  lcd_auth_span u, pw;
  if (lcd_auth_token_parse(p, n, &u, &pw) == 0) {
    FUZZ_CHECK(u.s == p && u.len >= 1 && u.len <= LCD_AUTH_USER_MAX);
    FUZZ_CHECK(pw.len >= 1 && pw.len <= LCD_AUTH_PASS_MAX);
    FUZZ_CHECK(u.len + 1 + pw.len == n && p[u.len] == ' ' &&
               pw.s == p + u.len + 1);
    for (size_t i = 0; i < u.len; i++)
      FUZZ_CHECK(u.s[i] > ' ' && u.s[i] != ':' && (unsigned char)u.s[i] < 0x7f);
    for (size_t i = 0; i < pw.len; i++)
      FUZZ_CHECK((unsigned char)pw.s[i] >= 0x20 && pw.s[i] != 0x7f);
    char back[LCD_AUTH_TOKEN_MAX + 1];
    memcpy(back, u.s, u.len);
    back[u.len] = ' ';
    memcpy(back + u.len + 1, pw.s, pw.len);
    lcd_auth_span u2, p2;
    FUZZ_CHECK(lcd_auth_token_parse(back, n, &u2, &p2) == 0 &&
               u2.len == u.len && p2.len == pw.len);
  }
  free(p);
}

static void auth_line(const char *d, size_t n) {
  char *p = fuzz_dup(d, n, 0);
  lcd_auth_span u, pw;
  const char *why = NULL;
  int r = lcd_auth_line_parse(p, n, &u, &pw, &why);
  size_t m = n && p[n - 1] == '\r' ? n - 1 : n;
  if (r == 0) FUZZ_CHECK(m == 0 || p[0] == '#');
  if (r < 0) FUZZ_CHECK(why && *why);
  if (r > 0) {
    FUZZ_CHECK(inside(p, m, &u) && inside(p, m, &pw) && u.s == p);
    FUZZ_CHECK(p[u.len] == ':' && !memchr(p, ':', u.len));
    FUZZ_CHECK(pw.s == p + u.len + 1 && u.len + 1 + pw.len == m);
  }
  free(p);
}

static void rights_line(const char *d, size_t n) {
  char *p = fuzz_dup(d, n, 0);
  lcd_rights_line r;
  const char *why = NULL;
  int rc = lcd_rights_line_parse(p, n, &r, &why);
  if (rc < 0) FUZZ_CHECK(why && *why);
  if (rc > 0) {
    FUZZ_CHECK(inside(p, n, &r.user) && r.user.len >= 1);
    FUZZ_CHECK(r.nprefix <= LCD_RIGHTS_PREFIX_MAX);
    for (size_t k = 0; k < r.nprefix; k++) {
      FUZZ_CHECK(inside(p, n, &r.prefix[k]));
      FUZZ_CHECK(r.prefix[k].len >= 1 && r.prefix[k].len <= LC_NAME_MAX);
      for (size_t i = 0; i < r.prefix[k].len; i++)
        FUZZ_CHECK(r.prefix[k].s[i] > ' ' && (unsigned char)r.prefix[k].s[i] < 0x7f);
    }
  }
  free(p);
}

/* Calls f on each '\n'-separated line of d[0..n). */
static void lines(const char *d, size_t n, void (*f)(const char *, size_t)) {
  while (1) {
    const char *nl = memchr(d, '\n', n);
    size_t l = nl ? (size_t)(nl - d) : n;
    f(d, l);
    if (!nl) return;
    d += l + 1;
    n -= l + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const char *d = (const char *)data + 1;
  size_t n = size - 1;
  switch (data[0]) {
  case 0: token(d, n); break;
  case 1: lines(d, n, auth_line); break;
  case 2: lines(d, n, rights_line); break;
  default:
    token(d, n);
    lines(d, n, auth_line);
    lines(d, n, rights_line);
  }
  return 0;
}
