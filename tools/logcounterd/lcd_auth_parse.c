/*
 * lcd_auth_parse.c - the pure parsers of logcounterd's authentication:
 * the handshake's data block ("user password", memcached's -Y format),
 * auth-file lines ("user:password") and rights-file lines.
 *
 * Pure and allocation-free like lcd_proto.c: spans point into the
 * caller's bytes; nothing is logged (a line may hold a password).  User
 * names are 1..LCD_AUTH_USER_MAX printable bytes without space or ':';
 * passwords 1..LCD_AUTH_PASS_MAX bytes without control bytes (a space is
 * allowed, as in memcached, which splits at the first space).
 */
#include "lcd_auth.h"
#include "lcd_proto.h"

#include <string.h>

static int user_ok(const char *s, size_t len) {
  if (len == 0 || len > LCD_AUTH_USER_MAX) return 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char b = (unsigned char)s[i];
    if (b <= 0x20 || b >= 0x7f || b == ':') return 0;
  }
  return 1;
}

static int pass_ok(const char *s, size_t len) {
  if (len == 0 || len > LCD_AUTH_PASS_MAX) return 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char b = (unsigned char)s[i];
    if (b < 0x20 || b == 0x7f) return 0;
  }
  return 1;
}

int lcd_auth_token_parse(const char *buf, size_t len, lcd_auth_span *user,
                         lcd_auth_span *pass) {
  if (len > LCD_AUTH_TOKEN_MAX) return -1;
  const char *sp = memchr(buf, ' ', len);
  if (!sp) return -1;
  size_t ulen = (size_t)(sp - buf);
  if (!user_ok(buf, ulen) || !pass_ok(sp + 1, len - ulen - 1)) return -1;
  *user = (lcd_auth_span){buf, ulen};
  *pass = (lcd_auth_span){sp + 1, len - ulen - 1};
  return 0;
}

int lcd_auth_line_parse(const char *line, size_t len, lcd_auth_span *user,
                        lcd_auth_span *pass, const char **why) {
  if (len && line[len - 1] == '\r') len--;
  if (len == 0 || line[0] == '#') return 0;
  const char *colon = memchr(line, ':', len);
  if (!colon) {
    *why = "no ':' between user and password";
    return -1;
  }
  size_t ulen = (size_t)(colon - line);
  if (!user_ok(line, ulen)) {
    *why = "bad user name (1..64 printable bytes, no space or ':')";
    return -1;
  }
  if (!pass_ok(colon + 1, len - ulen - 1)) {
    *why = "bad password (1..256 bytes, no control bytes)";
    return -1;
  }
  *user = (lcd_auth_span){line, ulen};
  *pass = (lcd_auth_span){colon + 1, len - ulen - 1};
  return 1;
}

static int word_is(const char *w, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n >= l && memcmp(w, lit, l) == 0;
}

int lcd_rights_line_parse(const char *line, size_t len, lcd_rights_line *out,
                          const char **why) {
  memset(out, 0, sizeof *out);
  if (len && line[len - 1] == '\r') len--;
  size_t i = 0, nword = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == len || line[i] == '#') return 0;
  while (i < len) {
    size_t start = i;
    while (i < len && line[i] != ' ' && line[i] != '\t') i++;
    const char *w = line + start;
    size_t n = i - start;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (nword++ == 0) {
      if (!user_ok(w, n)) {
        *why = "bad user name (1..64 printable bytes, no space or ':')";
        return -1;
      }
      out->user = (lcd_auth_span){w, n};
    } else if (n == 5 && memcmp(w, "admin", 5) == 0) {
      out->admin = 1;
    } else if (word_is(w, n, "prefix=")) {
      w += 7;
      n -= 7;
      if (n == 1 && w[0] == '*') {
        out->any = 1;
        continue;
      }
      if (n == 0 || n > LC_NAME_MAX) {
        *why = "bad prefix= (a name's first bytes, or *)";
        return -1;
      }
      for (size_t k = 0; k < n; k++)
        if ((unsigned char)w[k] < 0x21 || (unsigned char)w[k] > 0x7e) {
          *why = "bad prefix= (printable bytes only)";
          return -1;
        }
      if (out->nprefix == LCD_RIGHTS_PREFIX_MAX) {
        *why = "too many prefix= words (at most 16)";
        return -1;
      }
      out->prefix[out->nprefix++] = (lcd_auth_span){w, n};
    } else if (word_is(w, n, "names=")) {
      if (out->has_limit || lcd_proto_number(w + 6, n - 6, &out->limit) != 0) {
        *why = "bad names= (one decimal number)";
        return -1;
      }
      out->has_limit = 1;
    } else {
      *why = "unknown word (expected prefix=P, names=N or admin)";
      return -1;
    }
  }
  return 1;
}
