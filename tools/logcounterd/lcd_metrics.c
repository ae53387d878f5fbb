/*
 * lcd_metrics.c - --metrics-listen HOST:PORT: Prometheus's text format at
 * /metrics, served by libevent's own HTTP server (evhttp) on a thread and
 * an event_base of its own; and the histograms of allocation latency that
 * it serves (lcd_hist: one per event loop and one for the workers).
 *
 * Invariants:
 *  - the HTTP thread touches nothing of the loops' but what "stats" reads
 *    (atomics, short getter locks: lcd_stats.c), so a scrape, however
 *    slow its client, never holds a data loop; evhttp's own timeouts and
 *    size limits bound what a client may keep here;
 *  - the address is bound exactly as given (a bare PORT or ":PORT" means
 *    127.0.0.1:PORT), numeric, before the daemon reports ready;
 *  - with --tls-cert it is HTTPS, unless written notls:HOST:PORT: each
 *    connection's bufferevent comes from lcd_tls_bev (the data ports'
 *    context, under lcd_tls's lock, so a SIGHUP reload and --tls-verify
 *    apply here too); a client that fails the handshake is closed by
 *    evhttp, nothing else notices;
 *  - GET and HEAD of /metrics only; any other path is 404;
 *  - at most --metrics-max-connections at once: every connection's
 *    bufferevent comes from bevcb, which keeps a reference to it; a sweep
 *    every METRICS_SWEEP_MS drops those evhttp has freed (their callbacks
 *    cleared), which closes their sockets; at the bound the listener is
 *    disabled (further clients wait in the kernel's backlog, holding no
 *    descriptor of ours) until a connection ends, and one accepted beyond
 *    it anyway (a burst libevent takes in one accept callback) is shut
 *    down right after; so idle clients can neither run the daemon out of
 *    descriptors nor delay the data ports;
 *  - at most --metrics-max-per-address from one peer address: the sweep
 *    that follows each accept (once evhttp has set the socket) shuts down
 *    a new connection whose address already holds that many, so one
 *    address cannot take every place;
 *  - accept failing (out of descriptors) pauses accepting for
 *    METRICS_PAUSE_MS, logged at most once a second, instead of libevent's
 *    default (a warning per attempt, spinning);
 *  - without --metrics-listen nothing here runs and nothing is timed;
 *  - lcd_metrics_stop joins the thread before lc_close and lcd_loops_free.
 */
#include "lcd_server.h"
#include "lcd_settings.h"
#include "lcd_metrics.h"
#include "lcd_tls.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2 };
#define METRICS_TIMEOUT_S 10  /* a request must arrive and leave within */
#define METRICS_HEADERS 8192  /* request headers, at most */
#define METRICS_BACKLOG 64
#define METRICS_SWEEP_MS 100  /* connections evhttp freed: closed within */
#define METRICS_PAUSE_MS 100  /* accept failed: try again after */

/* A connection evhttp serves, with our reference to its bufferevent. */
struct mconn {
  struct bufferevent *bev;
  int over;  /* beyond the bound: shut down at the next sweep */
  int fresh; /* its peer address not read yet */
  int gone;  /* shut down (evhttp frees it soon): counts for no bound */
  char addr[INET6_ADDRSTRLEN]; /* the peer's address, "" unknown */
};

struct lcd_metrics {
  lcd_server *srv;
  struct event_base *base;
  int https;
  struct evhttp *http;
  pthread_t thread;
  int running;
  int nhist;      /* nloops + 1 */
  lcd_hist *hist; /* [i]: loop i's; [nloops]: the workers' */
  /* the connections (bevcb's references), on the HTTP thread only */
  struct evconnlistener *listener;
  struct mconn *conns;
  size_t nconns, capconns;
  int refusing;           /* an immediate sweep is scheduled */
  int paused;             /* accept failed: resume_cb comes */
  struct event *sweep;
  time_t log_sec;         /* accept failures: one log line a second */
  uint64_t unlogged;
  uint64_t refused_addr;  /* closed: over --metrics-max-per-address */
  time_t addr_log_sec;    /* ... logged at most once a second */
};

/* The buckets' bounds, read once from the library. */
static int64_t bounds[LC_LATENCY_BUCKETS];

void lcd_hist_record(lcd_hist *h, int64_t us) {
  if (us < 0) us = 0;
  int i = 0;
  while (i < LC_LATENCY_BUCKETS - 1 && us > bounds[i]) i++;
  atomic_fetch_add_explicit(&h->n[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum_us, (uint64_t)us, memory_order_relaxed);
}

lcd_hist *lcd_metrics_alloc_hist(lcd_server *s, int index) {
  lcd_metrics *m = s->metrics;
  if (!m) return NULL;
  return &m->hist[index < 0 || index >= m->nhist - 1 ? m->nhist - 1 : index];
}

void lcd_metrics_alloc_sum(lcd_server *s, lc_latency_hist *out) {
  memset(out, 0, sizeof *out);
  lcd_metrics *m = s->metrics;
  for (int h = 0; m && h < m->nhist; h++) {
    for (int i = 0; i < LC_LATENCY_BUCKETS; i++) {
      uint64_t n = atomic_load_explicit(&m->hist[h].n[i], memory_order_relaxed);
      out->buckets[i] += n;
      out->count += n;
    }
    out->sum_us +=
        atomic_load_explicit(&m->hist[h].sum_us, memory_order_relaxed);
  }
}

/* GET /metrics; everything else 404. */
static void request_cb(struct evhttp_request *req, void *arg) {
  lcd_metrics *m = arg;
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
  const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
  struct evbuffer *body = evbuffer_new();
  if (!body) {
    evhttp_send_error(req, HTTP_INTERNAL, NULL);
    return;
  }
  struct evkeyvalq *h = evhttp_request_get_output_headers(req);
  struct evhttp_connection *c = evhttp_request_get_connection(req);
  if (m->https &&
      !bufferevent_openssl_get_ssl(evhttp_connection_get_bufferevent(c))) {
    evbuffer_free(body); /* tls_bevcb failed: never the figures in clear */
    evhttp_send_error(req, HTTP_SERVUNAVAIL, NULL);
    return;
  }
  if (!path || strcmp(path, "/metrics") != 0) {
    evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
    evbuffer_add_printf(body, "not found: try /metrics\n");
    evhttp_send_reply(req, HTTP_NOTFOUND, "Not Found", body);
  } else {
    lcd_prom_write(m->srv, body);
    evhttp_add_header(h, "Content-Type",
                      "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, HTTP_OK, "OK", body);
  }
  evbuffer_free(body);
}

/* Accepting goes on only below the bound and outside a pause. */
static void update_accepting(lcd_metrics *m) {
  if (m->paused || m->nconns >= (size_t)m->srv->set->metrics_max)
    evconnlistener_disable(m->listener);
  else
    evconnlistener_enable(m->listener);
}

static void sweep_cb(evutil_socket_t fd, short what, void *arg);

/* Keeps a reference to bev (NULL: nothing) and counts it.  One beyond the
 * bound (libevent's accept loop may take a burst before the disable
 * counts) is shut down right after this accept callback: evhttp then
 * sees its EOF and frees it. */
static struct bufferevent *track(lcd_metrics *m, struct bufferevent *bev) {
  if (!bev) return NULL;
  if (m->nconns == m->capconns) {
    size_t cap = m->capconns ? 2 * m->capconns : 64;
    struct mconn *n = realloc(m->conns, cap * sizeof *n);
    if (!n) return bev; /* untracked: it still closes when evhttp frees it */
    m->conns = n;
    m->capconns = cap;
  }
  bufferevent_incref(bev);
  int over = m->nconns >= (size_t)m->srv->set->metrics_max;
  m->conns[m->nconns++] = (struct mconn){bev, over, 1, 0, ""};
  if (!m->refusing) { /* a sweep right after: its address, its bound */
    struct timeval now = {0, 0};
    m->refusing = event_base_once(m->base, -1, EV_TIMEOUT, sweep_cb, m,
                                  &now) == 0;
  }
  update_accepting(m);
  return bev;
}

/* evhttp's bevcb: a bufferevent for each accepted connection (evhttp
 * sets its fd), TLS with https.  On NULL (out of memory) evhttp falls back
 * to a plain bufferevent: request_cb then refuses to serve the figures on
 * it. */
static struct bufferevent *bevcb(struct event_base *base, void *arg) {
  lcd_metrics *m = arg;
  if (!m->https)
    return track(m, bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE));
  struct bufferevent *bev = lcd_tls_bev(m->srv, base, -1);
  if (!bev) lcd_log(m->srv->set, 0, "metrics: cannot set up a TLS connection");
  return track(m, bev);
}

/* c's peer address into c->addr ("" when it has none yet). */
static void read_addr(struct mconn *c) {
  evutil_socket_t s = bufferevent_getfd(c->bev);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  c->addr[0] = '\0';
  if (s < 0 || getpeername(s, (struct sockaddr *)&ss, &len) != 0) return;
  c->fresh = 0;
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->addr,
              sizeof c->addr);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->addr,
              sizeof c->addr);
}

/* New connections (fresh) whose address already holds
 * --metrics-max-per-address others are marked over (shut down below). */
static void bound_addresses(lcd_metrics *m) {
  for (size_t i = 0; i < m->nconns; i++) {
    struct mconn *c = &m->conns[i];
    if (!c->fresh) continue;
    read_addr(c);
    if (c->fresh || !c->addr[0]) continue;
    int same = 0;
    for (size_t j = 0; j < m->nconns; j++)
      if (j != i && !m->conns[j].fresh && !m->conns[j].over &&
          !m->conns[j].gone && strcmp(m->conns[j].addr, c->addr) == 0)
        same++;
    if (same < m->srv->set->metrics_max_addr) continue;
    c->over = 1;
    m->refused_addr++;
    time_t now = lcd_now();
    if (now != m->addr_log_sec) { /* one line a second at most */
      m->addr_log_sec = now;
      lcd_log(m->srv->set, 0,
              "metrics: closed a connection from %s: %d open from it "
              "(--metrics-max-per-address; %" PRIu64 " closed so)",
              c->addr, same, m->refused_addr);
    }
  }
}

/* Every METRICS_SWEEP_MS, and right after an accept: the connections
 * evhttp has freed (it clears their callbacks) lose our reference too,
 * which closes them; those over a bound are shut down. */
static void sweep_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_metrics *m = arg;
  m->refusing = 0;
  bound_addresses(m);
  for (size_t i = 0; i < m->nconns;) {
    struct mconn *c = &m->conns[i];
    bufferevent_data_cb r, w;
    bufferevent_event_cb e;
    void *cbarg;
    bufferevent_getcb(c->bev, &r, &w, &e, &cbarg);
    if (e || cbarg) { /* evhttp's still */
      evutil_socket_t s = c->over ? bufferevent_getfd(c->bev) : -1;
      if (s >= 0 && c->over) { /* beyond a bound: refused */
        shutdown(s, SHUT_RDWR);
        c->gone = 1;
      }
      c->over = 0;
      i++;
      continue;
    }
    bufferevent_decref(c->bev);
    *c = m->conns[--m->nconns];
  }
  update_accepting(m);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  lcd_metrics *m = arg;
  m->paused = 0;
  update_accepting(m);
}

/* The one metrics server, for accept_error_cb: a listener's error
 * callback gets the accept callback's argument, which evhttp owns. */
static lcd_metrics *the_metrics;

/* accept failed (out of descriptors and the like): a pause, not a spin. */
static void accept_error_cb(struct evconnlistener *l, void *arg) {
  (void)l;
  (void)arg; /* evhttp's */
  lcd_metrics *m = the_metrics;
  int e = EVUTIL_SOCKET_ERROR();
  time_t now = lcd_now();
  if (now != m->log_sec) {
    m->log_sec = now;
    lcd_log(m->srv->set, 0,
            "metrics: cannot accept a connection: %s; pausing for %d ms "
            "(%" PRIu64 " more such failures not logged)",
            evutil_socket_error_to_string(e), METRICS_PAUSE_MS, m->unlogged);
    m->unlogged = 0;
  } else {
    m->unlogged++;
  }
  m->paused = 1;
  update_accepting(m);
  struct timeval tv = {0, METRICS_PAUSE_MS * 1000};
  event_base_once(m->base, -1, EV_TIMEOUT, resume_cb, m, &tv);
}

static void *metrics_thread(void *arg) {
  lcd_metrics *m = arg;
  if (event_base_dispatch(m->base) < 0)
    lcd_log(m->srv->set, 0, "metrics: event loop failed");
  return NULL;
}

/* [notls:]HOST:PORT, or PORT / :PORT on 127.0.0.1, into ss (and buf, as
 * bound): 0 or -1. */
static int parse_addr(const char *text, struct sockaddr_storage *ss, int *len,
                      char buf[128]) {
  if (strncmp(text, "notls:", 6) == 0) text += 6;
  if (text[0] && strspn(text, "0123456789") == strlen(text))
    snprintf(buf, 128, "127.0.0.1:%s", text);
  else if (text[0] == ':')
    snprintf(buf, 128, "127.0.0.1%s", text);
  else
    snprintf(buf, 128, "%s", text);
  const char *colon = strrchr(buf, ':');
  *len = sizeof *ss;
  if (strlen(text) >= 128 - 16 || !colon || colon[1] == '\0' ||
      strchr(colon + 1, ']') ||
      evutil_parse_sockaddr_port(buf, (struct sockaddr *)ss, len) != 0)
    return -1;
  return 0;
}

int lcd_metrics_https(const lcd_settings *set) {
  return set->metrics_listen && set->tls_cert &&
         strncmp(set->metrics_listen, "notls:", 6) != 0;
}

int lcd_metrics_addr_ok(const char *text) {
  struct sockaddr_storage ss;
  int len;
  char buf[128];
  return parse_addr(text, &ss, &len, buf) == 0;
}

static void metrics_free(lcd_metrics *m) {
  if (m->http) evhttp_free(m->http); /* and its bound listener */
  for (size_t i = 0; i < m->nconns; i++) bufferevent_decref(m->conns[i].bev);
  free(m->conns);
  if (m->sweep) event_free(m->sweep);
  if (m->base) event_base_free(m->base);
  free(m->hist);
  free(m);
}

int lcd_metrics_start(lcd_server *s) {
  const char *addr = s->set->metrics_listen;
  if (!addr) return 0;
  struct sockaddr_storage ss;
  int len;
  char bound[128];
  if (parse_addr(addr, &ss, &len, bound) != 0) { /* parse_options checked */
    fprintf(stderr, LCD_PROG ": invalid address '%s' for --metrics-listen\n",
            addr);
    return EXIT_USAGE;
  }
  for (int i = 0; i < LC_LATENCY_BUCKETS; i++)
    bounds[i] = lc_latency_bound_us(i);
  lcd_metrics *m = calloc(1, sizeof *m);
  if (!m) return EXIT_RUNTIME;
  m->srv = s;
  m->nhist = s->nloops + 1;
  m->hist = calloc((size_t)m->nhist, sizeof *m->hist);
  m->base = m->hist ? event_base_new() : NULL;
  m->http = m->base ? evhttp_new(m->base) : NULL;
  if (!m->http) {
    fprintf(stderr, LCD_PROG ": cannot set up the metrics server\n");
    metrics_free(m);
    return EXIT_RUNTIME;
  }
  evhttp_set_timeout(m->http, METRICS_TIMEOUT_S);
  evhttp_set_max_headers_size(m->http, METRICS_HEADERS);
  evhttp_set_max_body_size(m->http, 0);
  evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_gencb(m->http, request_cb, m);
  m->https = lcd_metrics_https(s->set) && s->tls;
  evhttp_set_bevcb(m->http, bevcb, m);
  struct timeval every = {0, METRICS_SWEEP_MS * 1000};
  m->sweep = event_new(m->base, -1, EV_PERSIST, sweep_cb, m);
  if (!m->sweep || event_add(m->sweep, &every) != 0) {
    fprintf(stderr, LCD_PROG ": cannot set up the metrics server\n");
    metrics_free(m);
    return EXIT_RUNTIME;
  }
  struct evconnlistener *l = evconnlistener_new_bind(
      m->base, NULL, NULL,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
      METRICS_BACKLOG, (struct sockaddr *)&ss, len);
  if (!l || !evhttp_bind_listener(m->http, l)) {
    fprintf(stderr, LCD_PROG ": cannot listen on %s for --metrics-listen: %s\n",
            bound, strerror(errno));
    if (l) evconnlistener_free(l);
    metrics_free(m);
    return EXIT_RUNTIME;
  }
  m->listener = l;
  the_metrics = m;
  evconnlistener_set_error_cb(l, accept_error_cb);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old); /* signals go to loop 0 */
  int rc = pthread_create(&m->thread, NULL, metrics_thread, m);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    fprintf(stderr, LCD_PROG ": cannot start the metrics thread\n");
    metrics_free(m);
    return EXIT_RUNTIME;
  }
  m->running = 1;
  s->metrics = m;
  lcd_log(s->set, 0, "metrics: Prometheus text at %s://%s/metrics%s",
          m->https ? "https" : "http", bound,
          m->https && s->set->tls_verify == LCD_TLS_VERIFY_REQUIRE
              ? " (client certificates required)"
              : "");
  return 0;
}

void lcd_metrics_stop(lcd_server *s) {
  lcd_metrics *m = s->metrics;
  if (!m) return;
  if (m->running) {
    event_base_loopbreak(m->base);
    pthread_join(m->thread, NULL);
  }
  s->metrics = NULL; /* the pool times nothing more */
  metrics_free(m);
}
