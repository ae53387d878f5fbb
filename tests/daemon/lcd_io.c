/*
 * lcd_io.c - the raw text-protocol client of the daemon tests (lcd_io.h).
 * Only ever connects to 127.0.0.1.
 */
#include "lcd_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int lcd_io_dial(int port, int rcv_timeout_s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  struct timeval tv = {rcv_timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int lcd_io_send_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

int lcd_io_read_line(int fd, lcd_rbuf *r, char *line, size_t cap) {
  for (;;) {
    char *nl = memchr(r->b + r->start, '\n', r->end - r->start);
    if (nl) {
      size_t n = (size_t)(nl - (r->b + r->start));
      size_t k = n && nl[-1] == '\r' ? n - 1 : n;
      if (k >= cap) k = cap - 1;
      memcpy(line, r->b + r->start, k);
      line[k] = '\0';
      r->start += n + 1;
      return 0;
    }
    memmove(r->b, r->b + r->start, r->end - r->start);
    r->end -= r->start;
    r->start = 0;
    if (r->end == sizeof r->b) return -1;
    ssize_t got = recv(fd, r->b + r->end, sizeof r->b - r->end, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    r->end += (size_t)got;
  }
}
