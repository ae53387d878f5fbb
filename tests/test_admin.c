/*
 * test_admin.c - the library's admin socket (lc_options.admin_socket): an
 * embedded service's handle serves every call to a remote handle opened on
 * the socket, while its own threads allocate: allocation, records and the
 * ledger streamed in order, void, prune, advance, release and adopt,
 * tallies, backup; errors come back with their code and the server's
 * detail; the socket is mode 0600 (or the mode given), a stale socket file
 * is replaced, a live one is LC_EBUSY, a path that is not a socket is
 * refused, and lc_close removes it.  A remote handle on a path where no
 * admin socket answers is a plain data-port handle (LC_EREMOTE for the
 * log's calls).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mcd.h"

typedef struct afx {
  char *dir;
  char sock[TU_PATH_MAX], db[TU_PATH_MAX];
  lc_t *h; /* the service's own handle, serving the socket */
  lc_t *r; /* a remote handle on its socket */
} afx;

static int open_service(afx *f, unsigned mode, lc_t **out) {
  lc_options o;
  tu_options(&o, &mc, f->dir, f->db);
  o.admin_socket = f->sock;
  o.admin_socket_mode = mode;
  o.reserve = 3; /* a reservation write every few ids: batches wait for
                     one another's (test_beside_allocation's snapshots) */
  return lc_open(&o, out);
}

static int open_remote(const char *path, lc_t **out) {
  lc_options o;
  lc_options_init(&o);
  o.server = path;
  return lc_open(&o, out);
}

static int setup(void **state) {
  afx *f = calloc(1, sizeof *f);
  if (!f || tu_setup_dir(state)) return -1;
  fx_t *base = *state;
  f->dir = base->dir;
  free(base);
  snprintf(f->sock, sizeof f->sock, "%s/admin.sock", f->dir);
  if (mcd_flush_all(&mc) || open_service(f, 0, &f->h) ||
      open_remote(f->sock, &f->r))
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  afx *f = *state;
  lc_close(f->r);
  int rc = lc_close(f->h);
  tmpdir_remove(f->dir);
  tmpdir_free(f->dir);
  free(f);
  return rc;
}

/* ---- calls through the socket ---- */

static void test_calls(void **state) {
  afx *f = *state;
  struct stat st;
  assert_int_equal(stat(f->sock, &st), 0);
  assert_true(S_ISSOCK(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0600);
  int64_t v = 0, first = 0;
  for (int i = 1; i <= 5; i++) {
    assert_ok(lc_next(f->r, "orders", &v));
    assert_i64_eq(v, i);
  }
  assert_ok(lc_next_n(f->r, "orders", 10, &first));
  assert_i64_eq(first, 6);
  assert_ok(lc_next(f->h, "orders", &v)); /* the service's own call */
  assert_i64_eq(v, 16);
  assert_ok(lc_current(f->r, "orders", &v));
  assert_i64_eq(v, 16);
  assert_ok(lc_void(f->r, "orders", 3, "cancelled order"));
  assert_int_equal(lc_void(f->r, "orders", 3, "again"), LC_EVOIDED);
  assert_non_null(strstr(lc_last_detail(), "cancelled order"));
  assert_int_equal(lc_void(f->r, "orders", 999, "never"), LC_ENOTISSUED);
  assert_int_equal(lc_void(f->r, "orders", 4, "bad\nreason"), LC_EINVAL);
  /* the records stream as the local iterator gives them */
  lc_record *lr, *rr;
  long ln = tu_records(f->h, "orders", &lr);
  long rn = tu_records(f->r, "orders", &rr);
  assert_int_equal(rn, 7);
  assert_int_equal(ln, rn);
  assert_memory_equal(lr, rr, (size_t)ln * sizeof *lr);
  free(lr);
  free(rr);
  lc_iter *it;
  lc_gap g;
  assert_ok(lc_ledger_open(f->r, "orders", &it));
  assert_int_equal(lc_ledger_next(it, &g), 1);
  assert_i64_eq(g.first, 3);
  assert_int_equal(g.cause, LC_GAP_VOID);
  assert_string_equal(g.reason, "cancelled order");
  assert_int_equal(lc_ledger_next(it, &g), 0);
  assert_int_equal(lc_ledger_next(it, &g), 0); /* and stays at the end */
  lc_iter_close(it);
  lc_prune_opts po = {.keep = 2};
  lc_prune_result pr;
  assert_ok(lc_prune(f->r, "orders", &po, &pr));
  assert_int_equal(pr.deleted, 5);
  assert_int_equal(pr.kept, 2);
  assert_int_equal(pr.ledger_deleted, 1);
  assert_ok(lc_advance(f->r, "orders", 100));
  assert_ok(lc_next(f->r, "orders", &v));
  assert_i64_eq(v, 100);
  assert_ok(lc_reservation(f->r, "orders", &v));
  assert_i64_op(v, >=, 100);
  int64_t fin = 0;
  assert_ok(lc_release(f->r, "orders", &fin));
  assert_i64_eq(fin, 100);
  assert_int_equal(lc_next(f->h, "orders", &v), LC_EOWNED);
  assert_ok(lc_adopt(f->r, "orders", 200));
  assert_ok(lc_next(f->r, "orders", &v));
  assert_i64_eq(v, 201);
  assert_int_equal(lc_next(f->r, "bad name", &v), LC_ENAME);
}

static int count_tally(void *arg, const lc_tally_info *t) {
  (*(int *)arg)++;
  return strcmp(t->name, "views") == 0 && t->total == 7 ? 0 : 1;
}

static void test_tallies_and_backup(void **state) {
  afx *f = *state;
  int64_t after = 0, total = 0, pending = 0;
  uint64_t losses = 1, flushed = 0, n = 0;
  assert_ok(lc_tally_add_total(f->r, "views", 9, &after));
  assert_i64_eq(after, 9);
  assert_ok(lc_tally_add(f->r, "views", -2));
  assert_ok(lc_tally_get(f->r, "views", &total, &pending, &losses));
  assert_i64_eq(total + pending, 7);
  assert_ok(lc_tally_flush(f->r, 0, LC_TALLY_FORCE, &flushed));
  assert_int_equal(flushed, 1);
  int seen = 0;
  lc_tally_list_opts lo = {.cb = count_tally, .arg = &seen};
  assert_ok(lc_tally_list(f->r, &lo, &n));
  assert_int_equal(n, 1);
  assert_int_equal(seen, 1);
  int64_t v;
  assert_ok(lc_next(f->r, "b", &v));
  char dir[TU_PATH_MAX];
  snprintf(dir, sizeof dir, "%s/bk", f->dir);
  lc_backup_result br;
  assert_ok(lc_backup(f->r, dir, NULL, &br));
  assert_int_equal(br.records, 1);
  assert_int_equal(lc_backup(f->r, dir, NULL, &br), LC_EINVAL); /* exists */
}

/* ---- several threads of the service allocate while remote calls run */

typedef struct worker {
  lc_t *h;
  atomic_bool *stop;
  long n;
  int rc;
} worker;

static void *allocate(void *arg) {
  worker *w = arg;
  int64_t v, last = 0;
  while (!atomic_load(w->stop) && w->rc == 0) {
    w->rc = lc_next(w->h, "busy", &v);
    if (!w->rc && v <= last) w->rc = -100;
    last = v;
    w->n++;
  }
  return NULL;
}

static void test_beside_allocation(void **state) {
  afx *f = *state;
  atomic_bool stop = false;
  worker w[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){f->h, &stop, 0, 0};
    assert_int_equal(pthread_create(&t[i], NULL, allocate, &w[i]), 0);
  }
  long rounds = scaled(40, 8);
  /* a failure stops the workers before it is reported: a failed assert
   * here would leave them allocating on a handle teardown then closes */
  char why[200] = "";
  for (long i = 0; i < rounds && !why[0]; i++) {
    lc_record *r;
    long n = tu_records(f->r, "busy", &r);
    if (n < 0) {
      snprintf(why, sizeof why, "records: %s", lc_last_detail());
      break;
    }
    for (long k = 1; k < n && !why[0]; k++)
      if (r[k].first <= r[k - 1].last)
        snprintf(why, sizeof why, "record %ld overlaps the one before", k);
    free(r);
    /* the snapshot settles the counter first: no hole that a write under
     * way would fill, so nothing unexplained even while allocating */
    tu_ledger led;
    int rc = tu_explain(f->r, "busy", &led);
    if (rc)
      snprintf(why, sizeof why, "explain: %s (%s)", lc_err_name(rc),
               lc_last_detail());
    else if (led.values[0] != 0)
      snprintf(why, sizeof why, "%lld values unexplained",
               (long long)led.values[0]);
  }
  atomic_store(&stop, true);
  long total = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    if (!why[0] && w[i].rc)
      snprintf(why, sizeof why, "worker %d: rc %d (%s; -100: not increasing)",
               i, w[i].rc, lc_err_name(w[i].rc));
    total += w[i].n;
  }
  if (why[0]) fail_msg("%s", why);
  int64_t cur;
  assert_ok(lc_current(f->r, "busy", &cur));
  assert_i64_eq(cur, total);
  tu_ledger led;
  assert_ok(tu_explain(f->r, "busy", &led));
  assert_int_equal(led.values[0], 0); /* nothing unexplained */
}

/* ---- the socket file ---- */

static void test_socket_file(void **state) {
  afx *f = *state;
  lc_t *h2 = NULL;
  char dir2[TU_PATH_MAX];
  /* a live socket: another handle cannot take it */
  lc_options o;
  snprintf(dir2, sizeof dir2, "%s/other", f->dir);
  tu_options(&o, &mc, dir2, f->db);
  mkdir(dir2, 0700);
  o.admin_socket = f->sock;
  assert_int_equal(lc_open(&o, &h2), LC_EBUSY);
  /* closed: the socket file is gone */
  lc_close(f->r);
  f->r = NULL;
  assert_ok(lc_close(f->h));
  f->h = NULL;
  struct stat st;
  assert_int_not_equal(stat(f->sock, &st), 0);
  /* a stale socket file (nobody listening) is replaced, with the mode */
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  assert_true(strlen(f->sock) < sizeof a.sun_path);
  memcpy(a.sun_path, f->sock, strlen(f->sock) + 1);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  close(fd);
  assert_ok(open_service(f, 0640, &f->h));
  assert_int_equal(stat(f->sock, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  assert_ok(open_remote(f->sock, &f->r));
  int64_t v;
  assert_ok(lc_next(f->r, "again", &v));
  lc_close(f->r);
  f->r = NULL;
  assert_ok(lc_close(f->h));
  f->h = NULL;
  /* a path that is not a socket is never removed */
  FILE *file = fopen(f->sock, "w");
  assert_non_null(file);
  fclose(file);
  assert_int_equal(open_service(f, 0, &f->h), LC_EINVAL);
  assert_int_equal(stat(f->sock, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  unlink(f->sock);
  /* relative paths, bad modes and remote handles are refused */
  tu_options(&o, &mc, f->dir, f->db);
  o.admin_socket = "admin.sock";
  assert_int_equal(lc_open(&o, &h2), LC_EINVAL);
  o.admin_socket = f->sock;
  o.admin_socket_mode = 01777;
  assert_int_equal(lc_open(&o, &h2), LC_EINVAL);
  lc_options_init(&o);
  o.server = "127.0.0.1:1";
  o.admin_socket = f->sock;
  assert_int_equal(lc_open(&o, &h2), LC_EINVAL);
  /* no admin socket at the path: a data-port handle, which refuses the
   * log's calls */
  assert_ok(open_remote(f->sock, &f->r));
  lc_iter *it;
  assert_int_equal(lc_iter_open(f->r, "x", &it), LC_EREMOTE);
  assert_ok(open_service(f, 0, &f->h)); /* for the teardown */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tallies_and_backup, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_beside_allocation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_socket_file, setup, teardown),
  };
  return cmocka_run_group_tests(tests, tu_group_setup, tu_group_teardown);
}
