/*
 * test_auth.c - unit tests of logcounterd's authentication and rights
 * (tools/logcounterd/lcd_auth_parse.c, lcd_auth.c, lcd_rights.c): the
 * handshake's token, auth-file and rights-file lines, loading and
 * reloading the files (a bad one keeps the old table), the password check,
 * the prefix and names= checks, the failure delays per address, and the
 * loopback test of --listen.  No daemon, no memcached.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lcd_auth.h"
#include "lcd_proto.h"

static int span_is(lcd_auth_span s, const char *want) {
  return s.len == strlen(want) && memcmp(s.s, want, s.len) == 0;
}

static int tok(const char *t, lcd_auth_span *u, lcd_auth_span *p) {
  return lcd_auth_token_parse(t, strlen(t), u, p);
}

static void test_token(void **state) {
  (void)state;
  lcd_auth_span u, p;
  assert_int_equal(tok("alice s3cret", &u, &p), 0);
  assert_true(span_is(u, "alice") && span_is(p, "s3cret"));
  assert_int_equal(tok("alice two words", &u, &p), 0);
  assert_true(span_is(p, "two words"));
  assert_int_equal(tok("alice", &u, &p), -1);
  assert_int_equal(tok(" pw", &u, &p), -1);
  assert_int_equal(tok("alice ", &u, &p), -1);
  assert_int_equal(tok("al:ce pw", &u, &p), -1);
  assert_int_equal(tok("alice p\tw", &u, &p), -1);
  char big[LCD_AUTH_TOKEN_MAX + 8];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  big[5] = ' ';
  assert_int_equal(tok(big, &u, &p), -1);
}

static int line(const char *l, lcd_auth_span *u, lcd_auth_span *p,
                const char **why) {
  return lcd_auth_line_parse(l, strlen(l), u, p, why);
}

static void test_auth_line(void **state) {
  (void)state;
  lcd_auth_span u, p;
  const char *why = NULL;
  assert_int_equal(line("", &u, &p, &why), 0);
  assert_int_equal(line("# users", &u, &p, &why), 0);
  assert_int_equal(line("alice:pw\r", &u, &p, &why), 1);
  assert_true(span_is(u, "alice") && span_is(p, "pw"));
  assert_int_equal(line("bob:p:w", &u, &p, &why), 1);
  assert_true(span_is(p, "p:w"));
  assert_int_equal(line("nocolon", &u, &p, &why), -1);
  assert_non_null(strstr(why, "':'"));
  assert_int_equal(line(":pw", &u, &p, &why), -1);
  assert_int_equal(line("alice:", &u, &p, &why), -1);
  assert_non_null(strstr(why, "password"));
}

static void test_rights_line(void **state) {
  (void)state;
  lcd_rights_line r;
  const char *why = NULL;
  const char *l = "alice\tprefix=orders- prefix=tenant42: names=10 admin";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), 1);
  assert_true(span_is(r.user, "alice"));
  assert_int_equal(r.nprefix, 2);
  assert_true(span_is(r.prefix[1], "tenant42:"));
  assert_true(r.has_limit && r.limit == 10 && r.admin && !r.any);
  l = "ops prefix=*";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), 1);
  assert_true(r.any && !r.has_limit);
  l = "  # comment";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), 0);
  l = "x names=1 names=2";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), -1);
  l = "x size=3";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), -1);
  assert_non_null(strstr(why, "unknown word"));
  l = "x prefix=";
  assert_int_equal(lcd_rights_line_parse(l, strlen(l), &r, &why), -1);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(path, 0600), 0); /* an auth file must be private */
}

static int check(const char *user, const char *pass) {
  lcd_auth_span u = {user, strlen(user)}, p = {pass, strlen(pass)};
  return lcd_auth_check(&u, &p);
}

static void test_tables(void **state) {
  (void)state;
  char dir[] = "/tmp/test_auth.XXXXXX";
  assert_non_null(mkdtemp(dir));
  char auth[64], rights[64];
  snprintf(auth, sizeof auth, "%s/auth", dir);
  snprintf(rights, sizeof rights, "%s/rights", dir);
  write_file(auth, "alice:one\nbob:two words\n");
  write_file(rights, "alice prefix=orders- names=2\nbob prefix=*\n");
  assert_int_equal(lcd_auth_init(auth, rights), 0);
  assert_true(lcd_auth_enabled() && lcd_rights_enabled());
  assert_true(check("alice", "one") && check("bob", "two words"));
  assert_false(check("alice", "two words") || check("carol", "one") ||
               check("alice", "on"));
  /* reload: a bad file keeps the table, a good one replaces it */
  write_file(auth, "alice one\n");
  lcd_auth_reload();
  assert_true(check("alice", "one"));
  write_file(auth, "alice:uno\n");
  lcd_auth_reload();
  assert_true(check("alice", "uno") && !check("alice", "one") &&
              !check("bob", "two words"));
  /* rights */
  const lcd_rights_user *a = lcd_rights_lookup("alice");
  assert_non_null(a);
  assert_null(lcd_rights_prefix(a, "orders-1", 8));
  assert_non_null(lcd_rights_prefix(a, "order", 5));
  assert_null(lcd_rights_new_name(a, "orders-1", 8));
  assert_null(lcd_rights_new_name(a, "orders-1", 8)); /* counted once */
  assert_null(lcd_rights_new_name(a, "tally:orders-1", 14));
  assert_non_null(lcd_rights_new_name(a, "orders-2", 8));
  assert_null(lcd_rights_new_name(a, "orders-1", 8)); /* still allowed */
  assert_null(lcd_rights_prefix(lcd_rights_lookup("bob"), "x", 1));
  assert_null(lcd_rights_lookup("carol"));
  assert_non_null(lcd_rights_prefix(NULL, "x", 1));
  unsigned g = lcd_rights_gen();
  write_file(rights, "alice prefix=orders- names=5\n");
  lcd_auth_reload();
  assert_true(lcd_rights_gen() != g);
  assert_null(lcd_rights_lookup("bob"));
  a = lcd_rights_lookup("alice");
  assert_null(lcd_rights_new_name(a, "orders-2", 8)); /* the count stays 2 */
  /* an auth file group or others may read is refused (the old table
   * stays); so is one that names a user twice */
  write_file(auth, "alice:dos\n");
  assert_int_equal(chmod(auth, 0644), 0);
  lcd_auth_reload();
  assert_true(check("alice", "uno") && !check("alice", "dos"));
  assert_int_equal(chmod(auth, 0600), 0);
  lcd_auth_reload();
  assert_true(check("alice", "dos"));
  write_file(auth, "alice:tres\nbob:x\nalice:quatro\n");
  lcd_auth_reload();
  assert_true(check("alice", "dos") && !check("alice", "tres"));
  lcd_auth_free();
  unlink(auth);
  unlink(rights);
  rmdir(dir);
}

static void test_delays(void **state) {
  (void)state;
  assert_int_equal(lcd_auth_fail("10.1.2.3:5555"), 0);
  assert_int_equal(lcd_auth_fail("10.1.2.3:5556"), 100); /* the same address */
  assert_int_equal(lcd_auth_fail("10.1.2.3:5557"), 200);
  assert_int_equal(lcd_auth_fail("[::1]:7"), 0);         /* another one */
  for (int i = 0; i < 10; i++) lcd_auth_fail("10.1.2.3:1");
  assert_int_equal(lcd_auth_fail("10.1.2.3:1"), LCD_AUTH_DELAY_MAX_MS);
  assert_int_equal(lcd_auth_fail("[::1]:8"), 100);
  /* handshakes: checked at once until the address fails; then one turn
   * at a time, whatever the number of connections */
  int taken;
  assert_int_equal(lcd_auth_turn("10.9.9.9:1", &taken), 0);
  assert_int_equal(taken, 0);
  assert_int_equal(lcd_auth_fail("10.9.9.9:2"), 0); /* next turn: now */
  assert_int_equal(lcd_auth_turn("10.9.9.9:3", &taken), 0);
  assert_int_equal(taken, 1); /* the 2nd failure, ahead: next in 100 ms */
  unsigned w = lcd_auth_turn("10.9.9.9:4", &taken);
  assert_true(w > 0 && w <= 100 && !taken);
  assert_true(lcd_auth_turn("10.9.9.9:5", &taken) > 0 && !taken);
  /* log lines: at most LCD_AUTH_LOG_PER_S a second per address (the
   * loop runs well within one second, or its second half starts anew) */
  unsigned dropped, ok = 0;
  lcd_auth_fail("10.7.7.7:1"); /* a failure is logged after it counted */
  for (int i = 0; i < 4 * LCD_AUTH_LOG_PER_S; i++)
    ok += (unsigned)lcd_auth_log_ok("10.7.7.7:1", &dropped);
  assert_true(ok >= LCD_AUTH_LOG_PER_S && ok <= 2 * LCD_AUTH_LOG_PER_S);
}

static void test_loopback(void **state) {
  (void)state;
  assert_int_equal(lcd_auth_loopback("127.0.0.1:11311"), 1);
  assert_int_equal(lcd_auth_loopback("127.5.0.1:1"), 1);
  assert_int_equal(lcd_auth_loopback("[::1]:11311"), 1);
  assert_int_equal(lcd_auth_loopback("0.0.0.0:11311"), 0);
  assert_int_equal(lcd_auth_loopback("[::]:11311"), 0);
  assert_int_equal(lcd_auth_loopback("10.0.0.5:11311"), 0);
  assert_int_equal(lcd_auth_loopback("[::ffff:127.0.0.1]:1"), 1);
  assert_int_equal(lcd_auth_loopback("localhost:1"), -1);
  char bad[LCD_ADDR_TEXT];
  assert_int_equal(lcd_auth_public("127.0.0.1:1,notls:[::1]:2", bad,
                                   sizeof bad), 0);
  assert_int_equal(lcd_auth_public("127.0.0.1:1,notls:0.0.0.0:2", bad,
                                   sizeof bad), 1);
  assert_string_equal(bad, "0.0.0.0:2");
  assert_int_equal(lcd_auth_public("notls:10.0.0.5:2", bad, sizeof bad), 1);
  assert_string_equal(bad, "10.0.0.5:2");
  assert_int_equal(lcd_auth_public("nonsense", bad, sizeof bad), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token),       cmocka_unit_test(test_auth_line),
      cmocka_unit_test(test_rights_line), cmocka_unit_test(test_tables),
      cmocka_unit_test(test_delays),      cmocka_unit_test(test_loopback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
