/*
 * core/core.h - the top layer: the handle's life, lc_open and lc_close,
 * options and stats (handle.c), promotion (promote.c), and the admin
 * socket's server (admin_srv.c, its verbs admin_ops.c; the protocol is in
 * net/net.h).  It calls every folder below; none calls it.
 */
#ifndef LC_CORE_H
#define LC_CORE_H

#include "handle.h"

typedef struct lc__admin_srv lc__admin_srv;

/* ---- admin_srv.c: the listener of a local handle (h->admin_srv) */
int lc__admin_srv_start(lc_t *h);
void lc__admin_srv_stop(lc_t *h);

/* ---- admin_ops.c: one request, answered on c (0, or negative when the
 * connection should be dropped) */
int lc__admin_srv_serve(lc_t *h, lc__aconn *c, char *line);

#endif
