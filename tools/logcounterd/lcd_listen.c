/*
 * lcd_listen.c - logcounterd's listeners: TCP (numeric ADDR:PORT, loopback
 * by default; up to LCD_LISTEN_MAX of them, comma-separated; with
 * --tls-cert each is TLS unless written notls:ADDR:PORT, the unix socket
 * always plain) and an optional unix socket (created with --socket-mode; a
 * stale socket file left by a dead process is replaced, a live one is an
 * error).  Accepted connections beyond --max-connections in all, or
 * beyond --max-connections-per-listener on their listener, get
 * "SERVER_ERROR too many open connections" and are closed; when accept
 * itself fails (out of descriptors), accepting pauses for 100 ms instead
 * of spinning.  Loop 0 only; new connections go to the loops in turn
 * (lcd_loops_accept).
 */
#include "lcd_server.h"
#include "lcd_settings.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int len, void *arg) {
  (void)l;
  (void)len;
  lcd_listener *li = arg;
  lcd_server *s = li->srv;
  int nopen = atomic_load(&s->nopen), here = atomic_load(&li->nopen);
  bool all = nopen >= s->set->max_connections;
  if (all || here >= s->set->listener_max || s->draining) {
    static const char msg[] = "SERVER_ERROR too many open connections\r\n";
    s->loops[0].st.rejected_connections++;
    if (!s->draining)
      (void)!send(fd, msg, sizeof msg - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    evutil_closesocket(fd);
    lcd_log(s->set, 1, "connection refused: %d open%s", all ? nopen : here,
            all ? " (--max-connections)"
                : " on this listener (--max-connections-per-listener)");
    return;
  }
  char peer[64] = "unix";
  if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char host[INET6_ADDRSTRLEN] = "?";
    int port;
    if (sa->sa_family == AF_INET) {
      struct sockaddr_in *in = (struct sockaddr_in *)sa;
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      port = ntohs(in->sin_port);
    } else {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)sa;
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      port = ntohs(in6->sin6_port);
    }
    snprintf(peer, sizeof peer, "%s:%d", host, port);
  }
  lcd_loops_accept(s, fd, peer, li);
}

/* Out of descriptors and the like: pause accepting for a moment. */
static void resume_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_server *s = arg;
  if (s->draining) return;
  for (int i = 0; i < s->ntcp; i++) evconnlistener_enable(s->tcp[i].ev);
  if (s->local.ev) evconnlistener_enable(s->local.ev);
}

static void accept_error_cb(struct evconnlistener *l, void *arg) {
  lcd_server *s = ((lcd_listener *)arg)->srv;
  int e = EVUTIL_SOCKET_ERROR();
  lcd_log(s->set, 0, "cannot accept a connection: %s; pausing for 100 ms",
          evutil_socket_error_to_string(e));
  evconnlistener_disable(l);
  struct timeval tv = {0, 100000};
  event_base_once(s->loops[0].base, -1, EV_TIMEOUT, resume_cb, s, &tv);
}

static const unsigned LISTEN_FLAGS =
    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE;

/* One address of --listen (addr, n bytes), "notls:" already taken off. */
static int listen_one(lcd_server *s, const char *addr, size_t n, int tls) {
  char buf[128];
  struct sockaddr_storage ss;
  int len = sizeof ss;
  snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1),
           addr);
  const char *colon = strrchr(buf, ':');
  if (n >= sizeof buf || !colon || colon[1] == '\0' ||
      strchr(colon + 1, ']') ||
      evutil_parse_sockaddr_port(buf, (struct sockaddr *)&ss, &len) != 0) {
    fprintf(stderr,
            LCD_PROG ": invalid address '%.*s' for --listen (numeric "
                     "[notls:]ADDR:PORT, e.g. 127.0.0.1:11311 or [::1]:11311)\n",
            (int)n, addr);
    return EXIT_USAGE;
  }
  if (s->ntcp == LCD_LISTEN_MAX) {
    fprintf(stderr, LCD_PROG ": at most %d addresses in --listen\n",
            LCD_LISTEN_MAX);
    return EXIT_USAGE;
  }
  lcd_listener *li = &s->tcp[s->ntcp];
  li->srv = s;
  li->tls = tls;
  li->ev = evconnlistener_new_bind(s->loops[0].base, accept_cb, li,
                                   LISTEN_FLAGS, s->set->backlog,
                                   (struct sockaddr *)&ss, len);
  if (!li->ev) {
    fprintf(stderr, LCD_PROG ": cannot listen on %s: %s\n", buf,
            strerror(errno));
    return EXIT_RUNTIME;
  }
  s->ntcp++;
  evconnlistener_set_error_cb(li->ev, accept_error_cb);
  return 0;
}

static int listen_tcp(lcd_server *s) {
  const char *addr = s->set->listen;
  if (strcmp(addr, "none") == 0) return 0;
  for (const char *p = addr;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    int tls = s->tls != NULL;
    if (n >= 6 && memcmp(p, "notls:", 6) == 0) {
      tls = 0;
      p += 6;
      n -= 6;
    }
    int rc = listen_one(s, p, n, tls);
    if (rc) return rc;
    if (!end) return 0;
    p = end + 1;
  }
}

static int listen_unix(lcd_server *s) {
  const char *path = s->set->socket_path;
  if (!path) return 0;
  struct sockaddr_un sun;
  memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof sun.sun_path) {
    fprintf(stderr,
            LCD_PROG ": socket path '%s' is too long (at most %zu "
                     "bytes)\n",
            path, sizeof sun.sun_path - 1);
    return EXIT_USAGE;
  }
  memcpy(sun.sun_path, path, strlen(path));
  bool bound = false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) goto fail;
  /* A socket file left by a process that died is removed; a live one is
   * an error. */
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int live =
        probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof sun) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      fprintf(stderr,
              LCD_PROG ": cannot listen on %s: another process is "
                       "serving it\n",
              path);
      close(fd);
      return EXIT_RUNTIME;
    }
    unlink(path);
  }
  mode_t old = umask(0777 & ~(mode_t)s->set->socket_mode);
  bound = bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
  umask(old);
  if (!bound || chmod(path, (mode_t)s->set->socket_mode) != 0) goto fail;
  s->local.srv = s;
  s->local.tls = 0;
  s->local.ev = evconnlistener_new(s->loops[0].base, accept_cb, &s->local,
                                   LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                   s->set->backlog, fd);
  if (!s->local.ev) goto fail;
  evconnlistener_set_error_cb(s->local.ev, accept_error_cb);
  return 0;
fail:
  fprintf(stderr, LCD_PROG ": cannot listen on %s: %s\n", path,
          strerror(errno));
  if (fd >= 0) close(fd);
  if (bound) /* the socket file is ours: no stale file */
    unlink(path);
  return EXIT_RUNTIME;
}

void lcd_stop_listening(lcd_server *s) {
  for (int i = 0; i < s->ntcp; i++) evconnlistener_free(s->tcp[i].ev);
  s->ntcp = 0;
  if (s->local.ev) {
    evconnlistener_free(s->local.ev);
    unlink(s->set->socket_path);
  }
  s->local.ev = NULL;
}

int lcd_listen(lcd_server *s) {
  int rc = listen_tcp(s);
  return rc ? rc : listen_unix(s);
}
