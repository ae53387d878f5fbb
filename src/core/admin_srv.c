/*
 * admin_srv.c - the admin socket of a local handle (lc_options.admin_socket):
 * a unix socket, created with its mode set before it listens, served by
 * one accept thread and one thread per connection (at most
 * LC__ADMIN_CONNS), never by the caller's threads.  lc_close stops it
 * first: the listener closes, every connection is shut down, and close
 * waits for the calls already running to return.
 */
#include "core/core.h"
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#define LC__ADMIN_CONNS 32      /* connections served at once */
#define LC__ADMIN_IDLE_MS 60000 /* an idle or unread connection is closed */

typedef struct aconn_node {
  struct aconn_node *next;
  lc__admin_srv *srv;
  lc__aconn conn;
} aconn_node;

struct lc__admin_srv {
  lc_t *h;
  int fd;
  char *path;
  ino_t ino; /* the socket file made, removed at the stop if still ours */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
  int nconns;
  aconn_node *conns;
};

static void *conn_main(void *arg) {
  aconn_node *n = arg;
  lc__admin_srv *s = n->srv;
  char *line;
  int rc;
  while ((rc = lc__aconn_readline(&n->conn, &line)) == 1) {
    if (lc__admin_srv_serve(s->h, &n->conn, line) < 0) break;
    if (lc__aconn_flush(&n->conn) < 0) break;
  }
  if (rc < 0) { /* a line too long, or idle: say why, then close */
    lc__aconn_printf(&n->conn, "ERR %s %s", lc_err_name(rc), lc_last_detail());
    lc__aconn_flush(&n->conn);
  }
  pthread_mutex_lock(&s->mu);
  for (aconn_node **p = &s->conns; *p; p = &(*p)->next)
    if (*p == n) {
      *p = n->next;
      break;
    }
  close(n->conn.fd);
  free(n);
  s->nconns--;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Takes one connection: a thread for it, or a refusal when full. */
static void take(lc__admin_srv *s, int fd) {
  aconn_node *n = calloc(1, sizeof *n);
  pthread_mutex_lock(&s->mu);
  bool full = s->nconns >= LC__ADMIN_CONNS || s->stop;
  if (n && !full) {
    n->srv = s;
    lc__aconn_init(&n->conn, fd, LC__ADMIN_IDLE_MS);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    n->next = s->conns;
    s->conns = n;
    s->nconns++;
    if (pthread_create(&t, &a, conn_main, n) != 0) {
      s->conns = n->next;
      s->nconns--;
      full = true;
    }
    pthread_attr_destroy(&a);
  }
  pthread_mutex_unlock(&s->mu);
  if (n && !full) return;
  free(n);
  const char *msg = "ERR EBUSY too many admin connections at once\r\n";
  (void)!send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

static void *accept_main(void *arg) {
  lc__admin_srv *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    if (stop) break;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (poll(&p, 1, 100) <= 0) continue;
    int fd = accept(s->fd, NULL, NULL);
    if (fd >= 0) {
      fcntl(fd, F_SETFD, FD_CLOEXEC);
      take(s, fd);
    }
    else if (errno == EMFILE || errno == ENFILE)
      usleep(10000); /* no descriptor now: later */
  }
  return NULL;
}

/* Binds path, replacing a stale socket file (nobody answers on it) but
 * never a live one or anything that is not a socket. */
static int bind_path(lc__admin_srv *s, const char *path, unsigned mode) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path)
    return lc__fail(LC_EINVAL, "admin socket path over %zu bytes",
                    sizeof a.sun_path - 1);
  strcpy(a.sun_path, path);
  for (int attempt = 0; attempt < 2; attempt++) {
    if (bind(s->fd, (struct sockaddr *)&a, sizeof a) == 0) break;
    struct stat st;
    if (errno != EADDRINUSE || attempt > 0 || lstat(path, &st) != 0 ||
        !S_ISSOCK(st.st_mode))
      return lc__fail(LC_EINVAL, "admin socket %s: bind: %s", path,
                      strerror(errno));
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && connect(probe, (struct sockaddr *)&a,
                                      sizeof a) == 0;
    if (probe >= 0) close(probe);
    if (live)
      return lc__fail(LC_EBUSY, "admin socket %s: another process listens "
                                "on it", path);
    unlink(path); /* stale: its process is gone */
  }
  /* Not listening yet, so no connection can come before the mode is set. */
  struct stat st;
  if (chmod(path, mode) != 0 || stat(path, &st) != 0) {
    int e = errno;
    unlink(path);
    return lc__fail(LC_EINVAL, "admin socket %s: chmod: %s", path,
                    strerror(e));
  }
  s->ino = st.st_ino;
  if (listen(s->fd, 64) != 0) {
    int e = errno;
    unlink(path);
    return lc__fail(LC_EINVAL, "admin socket %s: listen: %s", path,
                    strerror(e));
  }
  return 0;
}

static void srv_free(lc__admin_srv *s) {
  if (s->fd >= 0) close(s->fd);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->path);
  free(s);
}

int lc__admin_srv_start(lc_t *h) {
  const char *path = h->opt.admin_socket;
  unsigned mode = h->opt.admin_socket_mode ? h->opt.admin_socket_mode : 0600;
  if (mode > 0777)
    return lc__fail(LC_EINVAL, "admin socket mode %o: at most 0777", mode);
  if (path[0] != '/')
    return lc__fail(LC_EINVAL, "admin socket %s: give an absolute path",
                    path);
  lc__admin_srv *s = calloc(1, sizeof *s);
  if (s == NULL || (s->path = strdup(path)) == NULL) {
    free(s);
    return lc__fail(LC_ENOMEM, "cannot allocate the admin socket");
  }
  s->h = h;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rc = s->fd < 0 ? lc__fail(LC_EINVAL, "admin socket: socket: %s",
                                strerror(errno))
                     : bind_path(s, path, mode);
  if (!rc) { /* its threads take no signals: the application's do */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (pthread_create(&s->thread, NULL, accept_main, s) != 0) {
      unlink(path);
      rc = lc__fail(LC_ENOMEM, "cannot start the admin socket's thread");
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (rc) {
    srv_free(s);
    return rc;
  }
  h->admin_srv = s;
  return 0;
}

void lc__admin_srv_stop(lc_t *h) {
  lc__admin_srv *s = h->admin_srv;
  if (s == NULL) return;
  pthread_mutex_lock(&s->mu);
  s->stop = true;
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  struct stat st;
  if (stat(s->path, &st) == 0 && st.st_ino == s->ino) unlink(s->path);
  pthread_mutex_lock(&s->mu);
  for (aconn_node *n = s->conns; n; n = n->next)
    shutdown(n->conn.fd, SHUT_RDWR); /* their next read or write fails */
  while (s->nconns > 0) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
  srv_free(s);
  h->admin_srv = NULL;
}
