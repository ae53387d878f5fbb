/*
 * lcd_tls.h - TLS for logcounterd's data ports (lcd_tls.c).
 */
#ifndef LCD_TLS_H
#define LCD_TLS_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;
typedef struct lcd_server lcd_server;
typedef struct lcd_settings lcd_settings;

/* --tls-verify */
enum { LCD_TLS_VERIFY_NONE, LCD_TLS_VERIFY_REQUEST, LCD_TLS_VERIFY_REQUIRE };

/* Builds the server's SSL_CTX from the settings (nothing without
 * --tls-cert); 0, or an exit status after printing why. */
int lcd_tls_init(lcd_server *s);
/* SIGHUP (loop 0): a new SSL_CTX from the same files for new
 * connections; on failure the old one stays and the reason is logged. */
void lcd_tls_reload(lcd_server *s);
/* Frees the server's context (connections still open keep theirs). */
void lcd_tls_free(lcd_server *s);
/* A TLS bufferevent on the accepted socket fd (closed with it), in the
 * accepting state; NULL on failure (fd is then not closed).  fd may be
 * -1 (evhttp's bevcb: it sets the fd later).  Takes the context in use
 * under lcd_tls's lock, so any thread may call it (lcd_metrics.c's HTTP
 * thread does). */
struct bufferevent *lcd_tls_bev(lcd_server *s, struct event_base *base,
                                int fd);
/* A clean close: sends close_notify if the handshake completed (never
 * blocks; what the socket does not take is lost). */
void lcd_tls_shutdown(struct bufferevent *bev);
/* Decrypted bytes OpenSSL holds that the bufferevent has not read. */
size_t lcd_tls_pending(struct bufferevent *bev);
/* The last OpenSSL error the bufferevent saw, as text in buf (the others
 * are dropped); NULL if none. */
const char *lcd_tls_error(struct bufferevent *bev, char *buf, size_t n);
/* For "stats": reloads done and failed, seconds since the context in use
 * was built (0 without TLS). */
void lcd_tls_figures(lcd_server *s, uint64_t *reloads, uint64_t *failed,
                     int64_t *since_refresh);
const char *lcd_tls_verify_name(int mode);

#endif /* LCD_TLS_H */
