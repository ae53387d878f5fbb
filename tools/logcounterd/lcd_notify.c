/*
 * lcd_notify.c - readiness and shutdown notices to systemd (sd_notify).
 *
 * The shipped unit (dist/logcounterd.service.in) is Type=notify: systemd
 * counts the daemon as started only when it says READY=1, which main()
 * sends where it logs "ready" (the listeners are bound, the log is open,
 * every thread runs, so a client that connects is answered at once).  The
 * first SIGTERM/SIGINT sends STOPPING=1 as the drain begins; STATUS=
 * lines say what it is doing ("systemctl status" shows the last one).
 * SIGHUP reloads only --auth-file and --rights-file, at once (lcd_auth.c),
 * so there is no RELOADING=1.
 *
 * libsystemd's sd_notify speaks the $NOTIFY_SOCKET datagram protocol
 * (a path, or an abstract socket when it starts with '@'); it is the
 * reference implementation, so the address forms and the credentials
 * systemd checks are its problem, not ours.  The price: on Debian 12
 * libsystemd0 brings libcap, libgcrypt, liblz4, liblzma and libzstd into
 * the process (loaded, never called here); the protocol is documented
 * and stable, so a 30-line sender could replace it if that ever matters.
 * $NOTIFY_SOCKET unset: no socket is opened, nothing is sent.  The
 * variable is left in the environment (the daemon starts no children).
 */
#include "lcd_settings.h"
#include "lcd_notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

int lcd_notify(const char *fmt, ...) {
  const char *where = getenv("NOTIFY_SOCKET");
  if (!where || !*where) return 0;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int rc = sd_notify(0, msg);
  if (rc > 0) return 0;
  /* 0: libsystemd saw no socket after all; < 0: -errno */
  size_t first = strcspn(msg, "\n");
  lcd_log(NULL, 0, "cannot notify the service manager on '%s' of %.*s: %s",
          where, (int)first, msg, rc < 0 ? strerror(-rc) : "no socket");
  return rc < 0 ? rc : -1;
}
