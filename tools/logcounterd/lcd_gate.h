/*
 * lcd_gate.h - access control on a connection: the --auth-file handshake
 * and the --rights-file checks (lcd_gate.c, over the tables of
 * lcd_auth.h), and "admin" over TLS as a relay to --admin-socket
 * (lcd_relay.c).  Loop thread only, like the connection.
 */
#ifndef LCD_GATE_H
#define LCD_GATE_H

#include "lcd_proto.h"

#include <stddef.h>
#include <time.h>

struct evbuffer;
typedef struct lcd_conn lcd_conn;

/* lcd_gate.c: authentication and rights.  lcd_gate_request, from
 * handle_line after parsing: 0 to go on with req (*kind may have become
 * LCD_PROTO_BAD: a refused right), 1 if it handled the line (the
 * handshake, or a failure), -1 if the handshake's data is not all
 * buffered yet. */
int lcd_gate_request(lcd_conn *c, struct evbuffer *in, size_t line_len,
                     lcd_proto_req *req, lcd_proto_cmd *kind);
/* 1 if lcd_gate_request would let req through as it is (lcd_jobs.c
 * asks before it takes a buffered line into a job). */
int lcd_gate_allows(lcd_conn *c, const lcd_proto_req *req,
                    lcd_proto_cmd kind);
/* A line too long to frame: 1 if it was an unauthenticated failure. */
int lcd_gate_long(lcd_conn *c, struct evbuffer *in);
/* NULL if c may read every key of req, else why. */
const char *lcd_gate_keys(lcd_conn *c, const lcd_proto_req *req);
/* From the sweep: 1 if c, unauthenticated, is past --line-timeout (the
 * caller closes it). */
int lcd_gate_late(lcd_conn *c, time_t now);
void lcd_gate_free(lcd_conn *c);
/* Neither reads nor parses c for ms (a failure's delay, or a wait for its
 * address's turn, c->auth_wait), then goes on: the request parsed again
 * after a turn, the failure answered (text or binary) and c closed after a
 * delay.  0, or -1 (no timer: go on at once).  Loop thread; both
 * handshakes' (here and lcd_sasl.c). */
int lcd_auth_hold(lcd_conn *c, unsigned ms);
/* NULL if c may run the admin commands over TCP (TLS, authenticated, the
 * admin right), else why not. */
const char *lcd_gate_admin(lcd_conn *c);

/* lcd_relay.c: "admin" (after every job before it): c becomes a relay to
 * --admin-socket, or gets the CLIENT_ERROR why not */
void lcd_relay_start(lcd_conn *c);
/* Moves bytes both ways (from lcd_conn_process while c->relay is set);
 * may end the relay and mark c closing. */
void lcd_relay_pump(lcd_conn *c);
void lcd_relay_free(lcd_conn *c);

#endif /* LCD_GATE_H */
