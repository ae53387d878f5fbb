/*
 * lcd_auth.h - logcounterd's authentication (--auth-file, memcached's
 * format and handshake) and per-user rights (--rights-file).
 *
 * Three layers:
 *  - pure parsers (lcd_auth_parse.c): the handshake's data block
 *    "user password", an auth-file line "user:password", a rights-file
 *    line; no allocation, no I/O, fuzzed (fuzz/fuzz_auth.c);
 *  - the tables (lcd_auth.c: users and password digests, failures per
 *    peer address; lcd_rights.c: rights and the names each user used),
 *    shared by every loop, replaced whole on SIGHUP (lcd_auth_reload);
 *  - the connection hooks (lcd_gate.c): what handle_line asks before a
 *    request runs.
 * Secrets: a password is never logged, never answered, never kept in
 * clear after loading (only its SHA-256 digest is).
 */
#ifndef LCD_AUTH_H
#define LCD_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Longest user name, password and handshake data block accepted. */
#define LCD_AUTH_USER_MAX 64
#define LCD_AUTH_PASS_MAX 256
#define LCD_AUTH_TOKEN_MAX (LCD_AUTH_USER_MAX + 1 + LCD_AUTH_PASS_MAX)
/* Most prefixes on one rights line. */
#define LCD_RIGHTS_PREFIX_MAX 16

typedef struct lcd_auth_span {
  const char *s; /* into the caller's buffer; not NUL-terminated */
  size_t len;
} lcd_auth_span;

/* ---- pure parsers (lcd_auth_parse.c) ---------------------------------- */

/* The handshake's data block buf[0..len) (without its "\r\n"): "user
 * password", one space between, as memcached splits it (the password is
 * everything after the first space and may hold spaces).  0 and the two
 * spans, or -1 (empty user or password, no space, a control byte, too
 * long). */
int lcd_auth_token_parse(const char *buf, size_t len, lcd_auth_span *user,
                         lcd_auth_span *pass);

/* One auth-file line (without its "\n"; a "\r" before it is dropped):
 * "user:password" (the first ':' splits; the password may hold ':').
 * Returns 1 and the spans, 0 for a line to skip (empty, or '#' first),
 * -1 if malformed (*why: static text). */
int lcd_auth_line_parse(const char *line, size_t len, lcd_auth_span *user,
                        lcd_auth_span *pass, const char **why);

/* One rights-file line: "user [prefix=P]... [names=N] [admin]" (words
 * separated by spaces or tabs; prefix=* or several prefix= words; no
 * prefix= word: no name at all).  Returns 1, 0 (skip), or -1 (*why). */
typedef struct lcd_rights_line {
  lcd_auth_span user;
  lcd_auth_span prefix[LCD_RIGHTS_PREFIX_MAX];
  size_t nprefix;
  int any;            /* prefix=*: every name */
  int has_limit;      /* names=N given */
  uint64_t limit;     /* names this user may use since start */
  int admin;          /* the admin right (reserved: not served yet) */
} lcd_rights_line;
int lcd_rights_line_parse(const char *line, size_t len, lcd_rights_line *out,
                          const char **why);

/* ---- the tables (lcd_auth.c, lcd_rights.c) ----------------------------- */

/* Loads --auth-file and --rights-file (either may be NULL) at start: 0,
 * or -1 after printing why to stderr. */
int lcd_auth_init(const char *auth_file, const char *rights_file);
/* SIGHUP: reloads both; a file that fails keeps its old table (logged). */
void lcd_auth_reload(void);
/* Whether --auth-file is in force. */
int lcd_auth_enabled(void);
/* Checks user/password in constant time (the password's SHA-256 against
 * each stored digest with CRYPTO_memcmp; an unknown user costs the same).
 * 1 if they match. */
int lcd_auth_check(const lcd_auth_span *user, const lcd_auth_span *pass);
/* One more failure from peer (its address without the port): the delay in
 * ms before its error reply (0 for the first in LCD_AUTH_FAIL_WINDOW s,
 * then 100 ms doubling per failure, at most LCD_AUTH_DELAY_MAX_MS); the
 * address's next turn (lcd_auth_turn) is no sooner. */
#define LCD_AUTH_FAIL_WINDOW 60
#define LCD_AUTH_DELAY_MAX_MS 3200
#define LCD_AUTH_FAIL_SLOTS 256
#define LCD_AUTH_LOG_PER_S 5
unsigned lcd_auth_fail(const char *peer);
/* A handshake from peer, before its password is checked: 0 to check it
 * now (*taken 1: it took its address's turn, counted as a failure ahead,
 * so a failure is answered at once; 0: the address has no failure in the
 * window), else the ms until the address's next turn (ask again then).
 * One turn at a time per address, whatever the number of connections. */
unsigned lcd_auth_turn(const char *peer, int *taken);
/* The handshake that took a turn succeeded: the failure it counted ahead
 * is given back. */
void lcd_auth_passed(const char *peer);
/* 1 if a failure of peer may be logged now (at most LCD_AUTH_LOG_PER_S a
 * second per address); *dropped: lines left out since the last one. */
int lcd_auth_log_ok(const char *peer, unsigned *dropped);
/* 0 if the open file fd (path) is private to its owner, else -1 with
 * why in err (group or others may read or write it). */
int lcd_auth_private(int fd, const char *path, char *err, size_t errlen);
/* Figures for stats: failures answered after a delay. */
uint64_t lcd_auth_delayed(void);
/* Whether the numeric ADDR:PORT is a loopback address (127.0.0.0/8,
 * ::1, ::ffff:127.x): 1, 0, or -1 if it does not parse. */
int lcd_auth_loopback(const char *addr);
/* The first address of a --listen list ("A,B", each maybe "notls:A")
 * that parses and is not a loopback address, copied into out: 1; else 0
 * (one that does not parse is refused later, as an invalid address). */
#define LCD_ADDR_TEXT 256
int lcd_auth_public(const char *list, char *out, size_t n);
/* Frees the tables at exit. */
void lcd_auth_free(void);

/* Rights.  A connection caches its user's entry (lcd_rights_user), good
 * until the generation changes (a reload). */
typedef struct lcd_rights_user lcd_rights_user;
int lcd_rights_enabled(void);
unsigned lcd_rights_gen(void);
/* The current entry of user (NUL-terminated), NULL if the rights file
 * has no line for it (then it may do nothing). */
const lcd_rights_user *lcd_rights_lookup(const char *user);
/* NULL if u may use the name name[0..len) (a counter name, or a tally's
 * name without "tally:"), else the reason (static text). */
const char *lcd_rights_prefix(const lcd_rights_user *u, const char *name,
                              size_t len);
/* NULL if u may create (use for the first time since start) the key
 * key[0..len) (whole key, "tally:" included), counting it once; else the
 * reason. */
const char *lcd_rights_new_name(const lcd_rights_user *u, const char *key,
                                size_t len);
int lcd_rights_admin(const lcd_rights_user *u);

/* Internal, between lcd_auth.c and lcd_rights.c: the whole file (at
 * most 1 MiB, NUL-terminated; NULL and err on failure; private: refused
 * unless only its owner may read it); loading the rights
 * table (0 or -1 and err; the old one stays on failure); freeing it. */
char *lcd__read_file(const char *path, size_t *len, char *err, size_t errlen,
                     int private);
int lcd__rights_load(const char *path, char *err, size_t errlen);
void lcd__rights_free(void);

#endif /* LCD_AUTH_H */
