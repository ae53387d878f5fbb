/*
 * lcd_sasl.c - SASL PLAIN over memcached's binary protocol, against the
 * same --auth-file, rights and failure delays as the text handshake
 * (lcd_gate.c), as memcached 1.6 built with SASL answers it:
 *   list mechs (0x20)  "PLAIN" (without --auth-file: unknown command, as
 *                      memcached without SASL, which clients take as "no
 *                      authentication needed");
 *   auth (0x21)        key "PLAIN", value [authzid] NUL user NUL password:
 *                      "Authenticated", and the connection is in as user;
 *   step (0x22)        refused (PLAIN has one step).
 * A failure (a wrong user or password, another mechanism, a malformed
 * message, any other request before authenticating) is counted in
 * auth_errors, logged by user (never the password), answered with the auth
 * error status after the peer address's delay (lcd_auth_fail; during it
 * the connection is neither read nor parsed), and the connection is
 * closed.  After a failure from an address, each SASL request from it
 * first waits for that address's turn (lcd_auth_turn), as the text
 * handshake does, and a connection is unfinished (lcd_admit) until it
 * authenticates.  A delayed answer carries the opaque 0.  Loop thread only.
 */
#include "lcd_admit.h"
#include "lcd_auth.h"
#include "lcd_conn.h"
#include "lcd_gate.h"
#include "lcd_server.h"
#include "lcd_binary.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <string.h>

#define AUTH_ERROR "Auth failure"

void lcd_sasl_put_failure(lcd_conn *c) {
  lcd_bin_put(c, LCD_BIN_SASL_AUTH, LCD_BIN_EAUTH, 0, 0, NULL, 0, NULL, 0,
              AUTH_ERROR, sizeof AUTH_ERROR - 1);
}

/* Everything buffered is discarded, the auth error written (after the
 * delay) and c closed. */
static void fail(lcd_conn *c, struct evbuffer *in, const lcd_bin_header *h,
                 const char *why, const char *user) {
  lcd_loop *s = c->loop;
  s->st.auth_errors++;
  s->st.client_errors++;
  evbuffer_drain(in, evbuffer_get_length(in));
  /* a request that waited its address's turn was counted then: at once */
  unsigned ms = c->auth_turn ? 0 : lcd_auth_fail(c->peer), dropped;
  c->auth_turn = 0;
  if (lcd_auth_log_ok(c->peer, &dropped))
    lcd_log(s->set, 0,
            "connection %" PRIu64 " (%s): binary: %s%s%s%s (%u more not "
            "logged)",
            c->id, c->peer, why, user ? " (user " : "", user ? user : "",
            user ? ")" : "", dropped);
  if (ms && lcd_auth_hold(c, ms) == 0) return;
  lcd_bin_put(c, h->opcode, LCD_BIN_EAUTH, h->opaque, 0, NULL, 0, NULL, 0,
              AUTH_ERROR, sizeof AUTH_ERROR - 1);
  lcd_close_later(c, "authentication failed");
}

void lcd_sasl_refuse(lcd_conn *c, struct evbuffer *in, const lcd_bin_header *h,
                     const char *why) {
  fail(c, in, h, why, NULL);
}

void lcd_sasl_request(lcd_conn *c, struct evbuffer *in,
                      const lcd_bin_header *h, const unsigned char *frame,
                      size_t flen) {
  lcd_loop *s = c->loop;
  if (!lcd_auth_enabled()) {
    static const char no[] = "Unknown command (no --auth-file: no SASL)";
    evbuffer_drain(in, flen);
    lcd_bin_put(c, h->opcode, LCD_BIN_EUNKNOWN, h->opaque, 0, NULL, 0, NULL,
                0, no, sizeof no - 1);
    return;
  }
  if (h->opcode == LCD_BIN_SASL_LIST) {
    evbuffer_drain(in, flen);
    lcd_bin_put(c, h->opcode, LCD_BIN_OK, h->opaque, 0, NULL, 0, NULL, 0,
                "PLAIN", 5);
    return;
  }
  /* after a failure from its address: wait for the address's turn, as the
   * text handshake does (lcd_gate.c), so parallel guesses are one at a
   * time whichever protocol they use */
  unsigned turn = lcd_auth_turn(c->peer, &c->auth_turn);
  if (turn) {
    c->auth_wait = 1;
    if (lcd_auth_hold(c, turn) == 0) return; /* hold_cb parses it again */
    c->auth_wait = 0;
  }
  s->st.auth_cmds++;
  const char *mech = (const char *)frame + LCD_BIN_HEADER + h->extlen;
  const char *msg = mech + h->keylen;
  size_t mlen = h->bodylen - h->extlen - h->keylen;
  if (h->opcode == LCD_BIN_SASL_STEP) {
    fail(c, in, h, "SASL step: PLAIN has one step", NULL);
    return;
  }
  if (h->keylen != 5 || memcmp(mech, "PLAIN", 5) != 0) {
    fail(c, in, h, "SASL mechanism is not PLAIN", NULL);
    return;
  }
  lcd_auth_span user, pass;
  if (lcd_sasl_plain_parse(msg, mlen, &user, &pass) != 0) {
    fail(c, in, h, "bad SASL PLAIN message", NULL);
    return;
  }
  char name[LCD_AUTH_USER_MAX + 1];
  memcpy(name, user.s, user.len);
  name[user.len] = '\0';
  if (!lcd_auth_check(&user, &pass)) {
    fail(c, in, h, "authentication failed", name);
    return;
  }
  if (c->authed && strcmp(c->user, name) != 0) {
    fail(c, in, h, "already authenticated as another user", name);
    return;
  }
  memcpy(c->user, name, user.len + 1);
  c->authed = 1;
  if (c->auth_turn) lcd_auth_passed(c->peer);
  lcd_admit_check(c); /* a working connection now: never pushed out */
  c->auth_turn = 0;
  evbuffer_drain(in, flen); /* user, pass point into it: not used below */
  lcd_log(s->set, 1, "connection %" PRIu64 " (%s): authenticated as %s (SASL "
          "PLAIN)", c->id, c->peer, c->user);
  lcd_bin_put(c, h->opcode, LCD_BIN_OK, h->opaque, 0, NULL, 0, NULL, 0,
              "Authenticated", 13);
}
