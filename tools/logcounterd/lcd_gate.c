/*
 * lcd_gate.c - what a connection may do: the authentication handshake
 * (memcached's: the first command is "set <key> <flags> <exptime> <len>"
 * whose data block is "user password"; STORED on success) and the rights
 * checks of every request that names a counter or a tally.  lcd_conn.c
 * calls in here from handle_line (lcd_gate_request), before a long line
 * becomes a get (lcd_gate_long), and lcd_mget.c for each piece of a long
 * get (lcd_gate_keys).  Loop thread only; the tables are lcd_auth.c's and
 * lcd_rights.c's.
 *
 * Invariants:
 *  - with --auth-file, a connection not yet authenticated runs nothing
 *    but the handshake, version and quit; anything else, a malformed
 *    handshake or a wrong user or password is a failure: its data is
 *    discarded, "CLIENT_ERROR unauthenticated" (a command before the
 *    handshake) or "CLIENT_ERROR authentication failed" is written, after
 *    the peer address's delay (lcd_auth_fail) during which the
 *    connection is neither read nor parsed (auth_hold), and the
 *    connection is closed;
 *  - after a failure from its address, a handshake waits for the
 *    address's turn (lcd_auth_turn; auth_wait while held) before its
 *    password is checked, and is then answered at once, right or wrong
 *    (auth_turn): parallel guesses from one address are as slow as
 *    sequential ones;
 *  - authenticated stays authenticated: a reload changes who may log in
 *    next, not who is in (but the rights of a user in are looked up again
 *    after a reload, so a revoked prefix is revoked at once);
 *  - a refusal is the request turned into LCD_PROTO_BAD with the reason,
 *    answered in its turn like any CLIENT_ERROR; nothing is created;
 *  - a connection that has not authenticated within --line-timeout
 *    seconds (counted from the first once-a-second sweep that sees it,
 *    so up to a second more) is closed: unauthenticated clients cannot
 *    hold connections (version keeps no one in);
 *  - no reply or log line holds a password; log lines name the user.
 */
#include "lcd_admit.h"
#include "lcd_conn.h"
#include "lcd_gate.h"
#include "lcd_binary.h" /* lcd_sasl_put_failure */
#include "lcd_job.h"
#include "lcd_server.h"
#include "lcd_settings.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

/* The end of a hold (lcd_auth_hold): a turn waited for is asked for
 * again (lcd_conn_process parses the request again); a delayed failure is
 * answered, in the connection's protocol, and c closed. */
static void hold_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_conn *c = arg;
  c->auth_hold = 0;
  if (!c->bev) return;
  if (c->auth_wait) {
    char b;
    c->auth_wait = 0;
    if (recv(bufferevent_getfd(c->bev), &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
      lcd_close_later(c, "client left while its handshake waited its turn");
    lcd_conn_process(c);
    return;
  }
  if (c->binary) {
    lcd_sasl_put_failure(c);
  } else {
    lcd_puts(c, "CLIENT_ERROR ");
    lcd_puts(c, c->auth_why ? c->auth_why : "authentication failed");
    lcd_puts(c, "\r\n");
  }
  lcd_close_later(c, "authentication failed");
  lcd_conn_process(c); /* closing: finish writes and closes */
}

int lcd_auth_hold(lcd_conn *c, unsigned ms) {
  if (!c->auth_timer) c->auth_timer = evtimer_new(c->loop->base, hold_cb, c);
  if (!c->auth_timer) return -1;
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  bufferevent_disable(c->bev, EV_READ);
  c->reading = 0;
  c->auth_hold = 1;
  evtimer_add(c->auth_timer, &tv);
  return 0;
}

/* A failed handshake or an unauthenticated command: everything buffered
 * is discarded, the error written (after the delay) and c closed. */
static void fail(lcd_conn *c, struct evbuffer *in, const char *why) {
  lcd_loop *s = c->loop;
  s->st.auth_errors++;
  s->st.client_errors++;
  evbuffer_drain(in, evbuffer_get_length(in));
  /* a handshake that waited its turn was counted then: answered at once */
  unsigned ms = c->auth_turn ? 0 : lcd_auth_fail(c->peer), dropped;
  c->auth_turn = 0;
  if (lcd_auth_log_ok(c->peer, &dropped))
    lcd_log(s->set, 0, "connection %" PRIu64 " (%s): %s%s (%u more not logged)",
            c->id, c->peer, why,
            ms ? " (answered after a delay: repeated failures)" : "", dropped);
  c->auth_why = why;
  if (ms && lcd_auth_hold(c, ms) == 0) return;
  lcd_puts(c, "CLIENT_ERROR ");
  lcd_puts(c, why);
  lcd_puts(c, "\r\n");
  lcd_close_later(c, "authentication failed");
}

/* The handshake's "set" line (line_len bytes, data_len bytes of data
 * and "\r\n" after it): -1 if not all of it is buffered yet, else 1. */
static int handshake(lcd_conn *c, struct evbuffer *in, size_t line_len,
                     uint64_t data_len, int noreply) {
  lcd_loop *s = c->loop;
  if (data_len < 2 || data_len - 2 > LCD_AUTH_TOKEN_MAX) {
    s->st.auth_cmds++;
    fail(c, in, "bad authentication token format");
    return 1;
  }
  size_t need = line_len + (size_t)data_len;
  if (evbuffer_get_length(in) < need) return -1;
  /* after a failure from its address: wait for the address's turn */
  unsigned ms = lcd_auth_turn(c->peer, &c->auth_turn);
  if (ms) {
    c->auth_wait = 1;
    if (lcd_auth_hold(c, ms) == 0) return 1; /* hold_cb parses it again */
    c->auth_wait = 0;
  }
  s->st.auth_cmds++;
  const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)need);
  const char *d = p ? p + line_len : NULL;
  size_t dlen = (size_t)data_len - 2;
  lcd_auth_span user, pass;
  if (!d || d[dlen] != '\r' || d[dlen + 1] != '\n' ||
      lcd_auth_token_parse(d, dlen, &user, &pass) != 0) {
    fail(c, in, "bad authentication token format");
    return 1;
  }
  if (!lcd_auth_check(&user, &pass)) {
    fail(c, in, "authentication failed");
    return 1;
  }
  memcpy(c->user, user.s, user.len);
  c->user[user.len] = '\0';
  c->authed = 1;
  if (c->auth_turn) lcd_auth_passed(c->peer);
  lcd_admit_check(c); /* a working connection now: never pushed out */
  c->auth_turn = 0;
  evbuffer_drain(in, need);
  lcd_log(s->set, 1, "connection %" PRIu64 " (%s): authenticated as %s", c->id,
          c->peer, c->user);
  /* memcached 1.6 answers STORED even to noreply, which desyncs clients
   * that sent noreply (pymemcache's default); we keep quiet then */
  if (!noreply) lcd_puts(c, "STORED\r\n");
  return 1;
}

/* c's rights entry, looked up again after a reload (which also forgets
 * the last name counted). */
static const lcd_rights_user *rights(lcd_conn *c) {
  unsigned g = lcd_rights_gen();
  if (c->rights_gen != g) {
    c->rights = lcd_rights_lookup(c->user);
    c->rights_gen = g;
    c->named_len = 0;
  }
  return c->rights;
}

/* lcd_rights_new_name, but a connection that repeats the key it was last
 * allowed (a counter's stream of incr) takes no lock: the user's set of
 * names never shrinks, so the answer stays yes. */
static const char *new_name(lcd_conn *c, const lcd_rights_user *u,
                            const lcd_proto_token *key) {
  if (c->named_len == key->len && memcmp(c->named, key->s, key->len) == 0)
    return NULL;
  const char *why = lcd_rights_new_name(u, key->s, key->len);
  if (!why && key->len <= LCD_PROTO_KEY_MAX) {
    memcpy(c->named, key->s, key->len);
    c->named_len = key->len;
  }
  return why;
}

/* The name a key's prefix rights apply to: a tally's NAME, else the key. */
static const char *key_right(const lcd_rights_user *u, const lcd_proto_token *k) {
  lcd_proto_token name = *k;
  lcd_proto_tally_name(k, &name);
  return lcd_rights_prefix(u, name.s, name.len);
}

const char *lcd_gate_keys(lcd_conn *c, const lcd_proto_req *req) {
  if (!lcd_rights_enabled()) return NULL;
  const lcd_rights_user *u = rights(c);
  for (size_t i = 0; i < req->nkeys; i++) {
    const char *why = key_right(u, &req->keys[i]);
    if (why) return why;
  }
  return NULL;
}

/* The rights of an authenticated connection's request: NULL or why. */
static const char *check(lcd_conn *c, const lcd_proto_req *req,
                         lcd_proto_cmd kind) {
  const lcd_rights_user *u = rights(c);
  const char *why = NULL;
  switch (kind) {
  case LCD_PROTO_INCR:
  case LCD_PROTO_TALLY: /* keys[0]: the counter, or tally:NAME */
    why = key_right(u, &req->keys[0]);
    if (!why) why = new_name(c, u, &req->keys[0]);
    break;
  case LCD_PROTO_GET: why = lcd_gate_keys(c, req); break;
  case LCD_PROTO_STATS:
    if (req->stats_tally) why = lcd_rights_prefix(u, req->tally.s, req->tally.len);
    break;
  default: break;
  }
  if (why)
    lcd_log(c->loop->set, 2, "connection %" PRIu64 " (%s, user %s): %s",
            c->id, c->peer, c->user, why);
  return why;
}

int lcd_gate_request(lcd_conn *c, struct evbuffer *in, size_t line_len,
                     lcd_proto_req *req, lcd_proto_cmd *kind) {
  if (lcd_auth_enabled() && !c->authed) {
    if (*kind == LCD_PROTO_VERSION || *kind == LCD_PROTO_QUIT) return 0;
    if (*kind == LCD_PROTO_REFUSED && req->data_len &&
        req->verb.len == 3 && memcmp(req->verb.s, "set", 3) == 0)
      return handshake(c, in, line_len, req->data_len, req->noreply);
    if (req->verb.len == 3 && memcmp(req->verb.s, "set", 3) == 0) {
      c->loop->st.auth_cmds++;
      fail(c, in, "bad authentication token format");
    } else {
      fail(c, in, "unauthenticated");
    }
    return 1;
  }
  if (!lcd_rights_enabled()) return 0;
  const char *why = check(c, req, *kind);
  if (why) {
    req->cmd = *kind = LCD_PROTO_BAD;
    req->error = why;
    req->close = 0;
  }
  return 0;
}

int lcd_gate_allows(lcd_conn *c, const lcd_proto_req *req,
                    lcd_proto_cmd kind) {
  if (lcd_auth_enabled() && !c->authed) return 0;
  return !lcd_rights_enabled() || check(c, req, kind) == NULL;
}

int lcd_gate_long(lcd_conn *c, struct evbuffer *in) {
  if (!lcd_auth_enabled() || c->authed) return 0;
  fail(c, in, "unauthenticated");
  return 1;
}

int lcd_gate_late(lcd_conn *c, time_t now) {
  /* a failure's delayed answer is not late; a handshake waiting for its
   * address's turn is, after --line-timeout and the longest delay more */
  if (!lcd_auth_enabled() || c->authed || (c->auth_hold && !c->auth_wait))
    return 0;
  if (!c->unauth_since) c->unauth_since = now; /* the first sweep */
  int allow = c->loop->set->line_timeout +
              (c->auth_wait ? LCD_AUTH_DELAY_MAX_MS / 1000 + 1 : 0);
  if (now - c->unauth_since < allow) return 0;
  c->loop->st.auth_errors++;
  unsigned dropped;
  if (lcd_auth_log_ok(c->peer, &dropped))
    lcd_log(c->loop->set, 0,
            "connection %" PRIu64 " (%s): not authenticated within "
            "--line-timeout (%d s); closing (%u more not logged)",
            c->id, c->peer, c->loop->set->line_timeout, dropped);
  return 1;
}

void lcd_gate_free(lcd_conn *c) {
  if (c->auth_timer) event_free(c->auth_timer);
  c->auth_timer = NULL;
}

const char *lcd_gate_admin(lcd_conn *c) {
  const char *why = NULL;
  if (!c->tls)
    why = "permission denied: admin commands over TCP need TLS (a TLS "
          "listener) and a user with the admin right";
  else if (!lcd_auth_enabled() || !lcd_rights_enabled())
    why = "permission denied: admin commands over TCP need --auth-file and "
          "--rights-file with the admin right";
  else if (!lcd_rights_admin(rights(c)))
    why = "permission denied: no admin right for this user";
  if (why)
    lcd_log(c->loop->set, 1, "connection %" PRIu64 " (%s, user %s): admin "
            "refused: %s", c->id, c->peer, c->user[0] ? c->user : "-", why);
  return why;
}
