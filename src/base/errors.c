/*
 * errors.c - the error table (LC_ERRNO_MAP in logcounter.h) turned into
 * lc_strerror() and lc_err_name(), and the thread-local detail of the last
 * failure (the words of memcached or LevelDB), so that threads never see
 * each other's messages.
 */
#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char detail[LC__DETAIL_MAX];

const char *lc_strerror(int err) {
  switch (err) {
#define LC__ERR_MSG(name, num, msg) \
  case num: return msg;
    LC_ERRNO_MAP(LC__ERR_MSG)
#undef LC__ERR_MSG
  case 0: return "success";
  default: return "unknown error";
  }
}

const char *lc_err_name(int err) {
  switch (err) {
#define LC__ERR_NAME(name, num, msg) \
  case num: return #name;
    LC_ERRNO_MAP(LC__ERR_NAME)
#undef LC__ERR_NAME
  case 0: return "OK";
  default: return "EUNKNOWN";
  }
}

const char *lc_last_detail(void) {
  return detail;
}

void lc__detail_clear(void) {
  detail[0] = '\0';
}

void lc__detail_set(const char *text) {
  snprintf(detail, sizeof detail, "%s", text ? text : "");
}

int lc__fail(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return err;
}
