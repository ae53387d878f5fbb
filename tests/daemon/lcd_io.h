/*
 * lcd_io.h - the raw text-protocol client under the daemon tests'
 * programs (lcd_client.c, lcd_pipe.c): a loopback connection, a write
 * that sends everything, and a buffered reader of reply lines.
 */
#ifndef LCD_IO_H
#define LCD_IO_H

#include <stddef.h>

/* A TCP connection to 127.0.0.1:port, TCP_NODELAY, receive timeout of
 * rcv_timeout_s seconds; -1 when it cannot connect. */
int lcd_io_dial(int port, int rcv_timeout_s);
/* Sends all n bytes (no SIGPIPE); 0 or -1. */
int lcd_io_send_all(int fd, const char *s, size_t n);

/* One connection's read buffer; start zeroed. */
typedef struct lcd_rbuf {
  char b[16384];
  size_t start, end;
} lcd_rbuf;
/* The next line, without "\r\n", cut to cap-1 bytes: 0, or -1 when the
 * connection closed, failed or timed out. */
int lcd_io_read_line(int fd, lcd_rbuf *r, char *line, size_t cap);

#endif
