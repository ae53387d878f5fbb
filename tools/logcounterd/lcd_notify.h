/*
 * lcd_notify.h - telling a service manager (systemd, Type=notify) how
 * logcounterd is doing: lcd_notify.c.
 */
#ifndef LCD_NOTIFY_H
#define LCD_NOTIFY_H

/* Sends one sd_notify message, newline-separated "KEY=value" lines built
 * like printf, e.g. lcd_notify("READY=1\nSTATUS=%s", what).  Does nothing
 * when $NOTIFY_SOCKET is unset (not started by systemd, or by a unit that
 * is not Type=notify).  Returns 0 when sent or not wanted; a failure to
 * send is logged and returned as a negative value; the daemon carries on
 * either way.  Safe from any thread. */
int lcd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
