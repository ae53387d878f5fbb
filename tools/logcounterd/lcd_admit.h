/*
 * lcd_admit.h - admission of unfinished connections (lcd_admit.c): a
 * connection that has not finished its TLS handshake, or (with
 * --auth-file) its authentication handshake, is "unfinished"; at most
 * --max-unfinished of them are open in all and at most
 * --max-unfinished-per-address from one peer address, the oldest dropped
 * first to make room for a new one, so stalled handshakes never fill
 * --max-connections nor keep a working client out.  Any loop thread; the
 * table is shared under its own lock.
 */
#ifndef LCD_ADMIT_H
#define LCD_ADMIT_H

typedef struct lcd_conn lcd_conn;
typedef struct lcd_loop lcd_loop;

/* Defaults of --max-unfinished and --max-unfinished-per-address. */
#define LCD_UNFINISHED_DEFAULT 256
#define LCD_UNFINISHED_ADDR_DEFAULT 64

/* c (new, on its loop's thread) starts unfinished if it is TLS or must
 * authenticate: registered, and the oldest unfinished over either bound
 * are marked and their loops told (lcd_admit_evicted closes them). */
void lcd_admit_new(lcd_conn *c);
/* c finished its handshakes (or is closing): no longer counted.  Safe to
 * call on any connection, any number of times; c's loop thread. */
void lcd_admit_done(lcd_conn *c);
/* Call after c's TLS handshake or authentication: lcd_admit_done once
 * neither is left. */
void lcd_admit_check(lcd_conn *c);
/* On l's thread (its command event): closes l's connections marked. */
void lcd_admit_evicted(lcd_loop *l);
/* For stats: unfinished connections open now, and dropped so far. */
void lcd_admit_figures(int *open, unsigned long long *dropped);

#endif /* LCD_ADMIT_H */
