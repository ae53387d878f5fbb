/*
 * cluster.c - chaos run --cluster: logcounterd as three nodes on etcd
 * (the daemon's --etcd, --cluster, --node, --leader-ttl), as
 * tests/suite_cluster.sh runs them, under the cluster's faults.
 *
 * A one-member etcd on loopback ports (its data on /dev/shm when there is
 * one: it fsyncs every write, and a loaded disk would starve the leases),
 * and three nodes n0 n1 n2, each with its own log directory (nS/ under
 * the run directory), data, replication and admin endpoints, reaching
 * etcd only through a TCP proxy of its own (tests/daemon/cluster_tool.py
 * proxy: SIGUSR1 cuts it, every connection held without a byte forwarded,
 * SIGUSR2 heals it).  The daemon clients use every node's data port (a
 * standby forwards an allocation to the primary) and move to the next on
 * any error.
 *
 * Each fault finds the node that is the primary (its stats'
 * cluster_role), hurts it (or its synchronous standby, or etcd), waits
 * (at most 20 s) until another node says primary: a failover, with the
 * moment it was seen (the checker measures each failover's outage from
 * the acknowledgements); then brings the hurt one back and waits (at most
 * 30 s) until the cluster has settled: one primary, the other nodes its
 * standbys, one of them named its synchronous standby.  A settle that
 * times out is counted and told on stderr (a liveness figure, not a
 * violation of the checker's rules).  The run ends with the primary
 * stopped (SIGTERM: it must exit 0), then the others (one may be promoted
 * meanwhile: the last one, alone, may exit 1 for want of a standby to
 * acknowledge its closing floor, counted); the checker reads the last
 * primary's log.
 */
#include "chaos.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAIT_PRIMARY_MS 20000
#define SETTLE_MS 30000

static void stat_value(const char *buf, const char *name, char *out,
                       size_t size) {
  char key[96];
  snprintf(key, sizeof key, "STAT %s ", name);
  out[0] = '\0';
  const char *p = strstr(buf, key);
  if (p == NULL) return;
  p += strlen(key);
  size_t n = strcspn(p, "\r\n");
  if (n >= size) n = size - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}

/* What each live node says: its role ("down" when it is dead, stopped
 * or silent) and the synchronous standby it names (a slot, or -1). */
typedef struct node_st {
  char role[16];
  int sync;
} node_st;

static void roles(const ch_run *r, node_st st[3]) {
  char buf[16384], v[32];
  for (int s = 0; s < 3; s++) {
    snprintf(st[s].role, sizeof st[s].role, "down");
    st[s].sync = -1;
    if (r->cl_pid[s] <= 0 || r->cl_stopped[s] ||
        !ch_port_stats(r->cl_port[s], 500, buf, sizeof buf))
      continue;
    stat_value(buf, "cluster_role", st[s].role, sizeof st[s].role);
    stat_value(buf, "cluster_sync_standby", v, sizeof v);
    if (v[0] == 'n' && v[1] >= '0' && v[1] <= '2' && v[2] == '\0')
      st[s].sync = v[1] - '0';
  }
}

static void tell_roles(const ch_run *r, const char *what) {
  node_st st[3];
  roles(r, st);
  fprintf(stderr, "chaos: %.1f s: %s: n0 %s, n1 %s, n2 %s\n",
          (double)(ch_now_ns() - r->start_ns) / 1e9, what, st[0].role,
          st[1].role, st[2].role);
}

/* The slot that says primary (the first, if several), or -1. */
static int primary_now(const ch_run *r, node_st st[3]) {
  roles(r, st);
  for (int s = 0; s < 3; s++)
    if (strcmp(st[s].role, "primary") == 0) return s;
  return -1;
}

/* -v: a step of a cluster fault. */
static void step(const ch_run *r, const char *what, int slot) {
  if (r->verbose)
    fprintf(stderr, "chaos: %6.1f s   %s n%d\n",
            (double)(ch_now_ns() - r->start_ns) / 1e9, what, slot);
}

/* etcd answers /health with "true" (within 1 s). */
static bool etcd_ok(const ch_run *r) {
  int fd = ch_connect_port(r->etcd_port, 1000);
  if (fd < 0) return false;
  char buf[1024];
  size_t got = 0;
  ssize_t k;
  static const char req[] = "GET /health HTTP/1.0\r\n\r\n";
  if (write(fd, req, sizeof req - 1) == (ssize_t)sizeof req - 1)
    while (got + 1 < sizeof buf &&
           (k = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
      got += (size_t)k;
  buf[got] = '\0';
  close(fd);
  return strstr(buf, "\"health\":\"true\"") != NULL;
}

static int start_etcd(ch_run *r) {
  char client[64], peer[64], init[96];
  snprintf(client, sizeof client, "http://127.0.0.1:%d", r->etcd_port);
  snprintf(peer, sizeof peer, "http://127.0.0.1:%d", r->etcd_peer);
  snprintf(init, sizeof init, "c0=%s", peer);
  char *argv[] = {"etcd", "--name", "c0", "--data-dir", r->etcd_dir,
                  "--listen-client-urls", client, "--advertise-client-urls",
                  client, "--listen-peer-urls", peer,
                  "--initial-advertise-peer-urls", peer, "--initial-cluster",
                  init, "--initial-cluster-token", "chaos", NULL};
  r->etcd_starts++;
  r->etcd_pid = ch_spawn(r, argv, "etcd.log", NULL);
  for (int i = 0; i < 200 && r->etcd_pid > 0; i++) {
    if (etcd_ok(r)) return 0;
    ch_sleep_ms(50);
  }
  ch_note(r, "etcd did not become healthy (see etcd.log)");
  return -1;
}

static int start_proxy(ch_run *r, int s) {
  char map[32], log[32];
  snprintf(map, sizeof map, "%d:%d", r->cl_xport[s], r->etcd_port);
  snprintf(log, sizeof log, "proxy%d.log", s);
  char *argv[] = {"python3", r->tool, "proxy", map, NULL};
  r->cl_cut[s] = false;
  r->cl_xpid[s] = ch_spawn(r, argv, log, NULL);
  if (r->cl_xpid[s] > 0 && ch_wait_port(r->cl_xport[s], r->cl_xpid[s], 10000))
    return 0;
  ch_note(r, "the proxy of n%d did not start (see %s)", s, log);
  return -1;
}

/* Node s on its directory nS/ (made if it is gone), not waited for: a
 * node joins etcd and copies the primary's log before it listens. */
static int start_node(ch_run *r, int s) {
  char dir[1024], db[1100], listen[32], repl[32], adm[1100], etcd[64],
      node[8], log[16];
  snprintf(node, sizeof node, "n%d", s);
  snprintf(log, sizeof log, "n%d.log", s);
  ch_path(r, dir, sizeof dir, node);
  mkdir(dir, 0700);
  snprintf(db, sizeof db, "%s/log", dir);
  snprintf(adm, sizeof adm, "%s/adm-%s.sock", r->dir, node);
  unlink(adm); /* its last daemon is dead */
  snprintf(listen, sizeof listen, "127.0.0.1:%d", r->cl_port[s]);
  snprintf(repl, sizeof repl, "127.0.0.1:%d", r->cl_repl[s]);
  snprintf(etcd, sizeof etcd, "http://127.0.0.1:%d", r->cl_xport[s]);
  r->lcd_inc++;
  ch_lcd_cmd c;
  ch_lcd_cmd_init(r, &c, db, listen);
  ch_lcd_arg(&c, "--admin-socket", adm);
  ch_lcd_arg(&c, "--replication-listen", repl);
  ch_lcd_arg(&c, "--etcd", etcd);
  ch_lcd_arg(&c, "--cluster", "chaos");
  ch_lcd_arg(&c, "--node", node);
  ch_lcd_arg(&c, "--leader-ttl", r->leader_ttl);
  if (r->standby_timeout) ch_lcd_arg(&c, "--standby-timeout", r->standby_timeout);
  ch_started(r, T_LCD, strcmp(c.mode, "default") != 0);
  r->node_starts++;
  r->cl_stopped[s] = false;
  r->cl_pid[s] = ch_spawn(r, c.argv, log, NULL);
  step(r, "started", s);
  if (r->cl_pid[s] > 0) return 0;
  ch_note(r, "cannot start n%d", s);
  return -1;
}

/* Waits (at most ms) until a node other than `not` says primary; its
 * slot (and when in *t_ns), or -1. */
static int wait_primary(ch_run *r, int not, int ms, int64_t *t_ns) {
  node_st st[3];
  int64_t until = ch_now_ns() + (int64_t)ms * 1000000;
  while (ch_now_ns() < until) {
    ch_reap(r);
    roles(r, st);
    for (int s = 0; s < 3; s++) {
      if (s != not && strcmp(st[s].role, "primary") == 0) {
        *t_ns = ch_now_ns();
        return s;
      }
    }
    ch_sleep_ms(50);
  }
  return -1;
}

/* Waits (at most ms) until one node is primary, the other live ones say
 * standby and the primary names one of them its synchronous standby;
 * r->cl_prim is the primary seen last.  False (counted) if it did not. */
static bool settle(ch_run *r, int ms) {
  node_st st[3];
  int64_t until = ch_now_ns() + (int64_t)ms * 1000000;
  while (ch_now_ns() < until) {
    ch_reap(r);
    int p = primary_now(r, st), standbys = 0;
    if (p >= 0) r->cl_prim = p;
    for (int s = 0; s < 3; s++)
      standbys += s != p && strcmp(st[s].role, "standby") == 0;
    if (p >= 0 && standbys == 2 && st[p].sync >= 0 && st[p].sync != p)
      return true;
    ch_sleep_ms(100);
  }
  r->settle_timeouts++;
  tell_roles(r, "not settled (one primary, two standbys, one in sync)");
  return false;
}

int ch_cl_start(ch_run *r) {
  r->start_ns = ch_now_ns(); /* for -v; the run's clock starts later */
  if (start_etcd(r) != 0) return -1;
  for (int s = 0; s < 3; s++)
    if (start_proxy(r, s) != 0) return -1;
  for (int s = 0; s < 3; s++) {
    if (start_node(r, s) != 0) return -1;
    ch_sleep_ms(300); /* n0 most likely leads first */
  }
  if (!settle(r, SETTLE_MS) && r->cl_prim < 0) {
    ch_note(r, "no node became the primary (see n0.log)");
    return -1;
  }
  return 0;
}

static void kill_node(ch_run *r, int s) {
  if (r->cl_stopped[s] && r->cl_pid[s] > 0) kill(r->cl_pid[s], SIGCONT);
  r->cl_stopped[s] = false;
  ch_kill_wait(&r->cl_pid[s], SIGKILL);
}

static void flush_memcached(ch_run *r) {
  for (int s = 0; s < r->nmc; s++) {
    char reply[64];
    if (ch_mc_command(r->mc_port[s], "flush_all", reply, sizeof reply) != 0 ||
        strcmp(reply, "OK") != 0)
      ch_note(r, "flush_all failed on memcached %d", s);
  }
}

/* The failover after a fault on primary p: another node says primary. */
static void await_failover(ch_run *r, ch_fault *f, int p) {
  int64_t t = 0;
  int q = wait_primary(r, p, WAIT_PRIMARY_MS, &t);
  if (q < 0) {
    tell_roles(r, "no other node became the primary within 20 s");
    return;
  }
  f->failover = true;
  f->fo_ns = t;
  r->cl_prim = q;
  step(r, "now the primary:", q);
}

void ch_cl_inject(ch_run *r, ch_fault *f) {
  node_st st[3];
  int before = r->cl_prim;
  int p = primary_now(r, st);
  /* none said primary (a stats reply slower than 500 ms, a lease renewal
   * late): ask again for up to 3 s before the fault is given up */
  for (int i = 0; p < 0 && i < 30; i++) {
    ch_sleep_ms(100);
    p = primary_now(r, st);
  }
  if (p < 0) tell_roles(r, "no primary to hit");
  if (p >= 0 && before >= 0 && p != before) { /* between faults */
    r->idle_failovers++;
    tell_roles(r, "another node became the primary between faults");
  }
  if (p < 0 && f->kind != F_CL_ETCD) {
    f->missed = true; /* nothing to hit: settle below */
    settle(r, SETTLE_MS);
    return;
  }
  f->t_ns = ch_now_ns();
  char dir[16], cmd[1200];
  switch (f->kind) {
  case F_CL_KILL:
  case F_CL_DISK:
    kill_node(r, p);
    step(r, "primary killed:", p);
    if (f->kind == F_CL_DISK) { /* the host's disk and memcached lost */
      snprintf(dir, sizeof dir, "n%d", p);
      snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", r->dir, dir);
      if (system(cmd) != 0) ch_note(r, "cannot remove %s", dir);
      flush_memcached(r);
      step(r, "its directory removed, memcached flushed:", p);
    }
    await_failover(r, f, p);
    ch_sleep_ms(f->arg_ms);
    start_node(r, p);
    break;
  case F_CL_FREEZE:
    kill(r->cl_pid[p], SIGSTOP);
    r->cl_stopped[p] = true;
    step(r, "primary stopped:", p);
    await_failover(r, f, p);
    ch_sleep_ms(f->arg_ms);
    if (r->cl_pid[p] > 0) kill(r->cl_pid[p], SIGCONT);
    r->cl_stopped[p] = false;
    step(r, "resumed:", p);
    break;
  case F_CL_CUT:
    kill(r->cl_xpid[p], SIGUSR1);
    r->cl_cut[p] = true;
    step(r, "cut from etcd:", p);
    await_failover(r, f, p);
    ch_sleep_ms(f->arg_ms);
    if (r->cl_xpid[p] > 0) kill(r->cl_xpid[p], SIGUSR2);
    r->cl_cut[p] = false;
    step(r, "healed:", p);
    break;
  case F_CL_STANDBY: {
    int sb = st[p].sync;
    if (sb < 0 || sb == p || r->cl_pid[sb] <= 0) {
      f->missed = true;
      break;
    }
    kill_node(r, sb);
    step(r, "synchronous standby killed:", sb);
    ch_sleep_ms(f->arg_ms);
    start_node(r, sb);
    break;
  }
  case F_CL_ETCD:
    ch_kill_wait(&r->etcd_pid, SIGKILL);
    step(r, "etcd killed; primary then:", p);
    ch_sleep_ms(f->arg_ms);
    start_etcd(r);
    step(r, "etcd back; primary before:", p);
    break;
  }
  settle(r, SETTLE_MS);
  /* a failover the fault brought later (etcd back, a standby's loss) */
  if (!f->missed && !f->failover && before >= 0 && r->cl_prim >= 0 &&
      r->cl_prim != before) {
    f->failover = true;
    f->fo_ns = ch_now_ns();
  }
  if (f->failover) r->failovers++;
}

void ch_cl_heal(ch_run *r) {
  if (r->etcd_pid <= 0) start_etcd(r);
  for (int s = 0; s < 3; s++) {
    if (r->cl_xpid[s] <= 0)
      start_proxy(r, s);
    else if (r->cl_cut[s])
      kill(r->cl_xpid[s], SIGUSR2);
    r->cl_cut[s] = false;
    if (r->cl_pid[s] > 0 && r->cl_stopped[s]) kill(r->cl_pid[s], SIGCONT);
    r->cl_stopped[s] = false;
    if (r->cl_pid[s] <= 0) start_node(r, s);
  }
  settle(r, SETTLE_MS);
}

/* Did node s's log (nS.log) say, for pid, that it could not close its
 * log because no standby acknowledged the closing floor?  Then its exit
 * status 1 is what standby mode required documents for a primary left
 * alone (the last nodes stopped, one of them promoted meanwhile). */
static bool only_alone(const ch_run *r, int s, int pid) {
  char path[1024], name[16], line[1024], tag[48];
  snprintf(name, sizeof name, "n%d.log", s);
  ch_path(r, path, sizeof path, name);
  snprintf(tag, sizeof tag, "logcounterd[%d]: ", pid);
  FILE *f = fopen(path, "r");
  bool alone = false, other = false;
  while (f && fgets(line, sizeof line, f)) {
    char *p = strstr(line, tag);
    if (p == NULL || strncmp(p + strlen(tag), "cannot close", 12) != 0)
      continue;
    if (strstr(p, "no standby acknowledged"))
      alone = true;
    else
      other = true;
  }
  if (f) fclose(f);
  return alone && !other;
}

/* SIGTERM, and the node must exit 0 by itself within 30 s (or, alone
 * may be true, 1 as only_alone says). */
static void stop_node(ch_run *r, int s, bool alone) {
  if (r->cl_pid[s] <= 0) return;
  kill(r->cl_pid[s], SIGTERM);
  int status = 0, waited = 0;
  while (waitpid(r->cl_pid[s], &status, WNOHANG) == 0 && waited++ < 600)
    ch_sleep_ms(50);
  if (waited > 600) {
    ch_note(r, "n%d did not stop within 30 s of SIGTERM", s);
    ch_kill_wait(&r->cl_pid[s], SIGKILL);
    r->unexpected++;
  } else if (alone && WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
             only_alone(r, s, r->cl_pid[s])) {
    r->alone_stops++;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ch_note(r, "n%d failed its clean stop (status %d; see n%d.log)", s,
            status, s);
    r->unexpected++;
  }
  r->cl_pid[s] = 0;
}

/* The primary first, while its standbys acknowledge its closing floor
 * (its log is the one the checker reads); then the others, one of which
 * may have been promoted meanwhile, and the last of them is alone. */
void ch_cl_stop(ch_run *r) {
  int p = r->cl_prim;
  if (r->verbose) tell_roles(r, "the end");
  if (p >= 0) stop_node(r, p, false);
  for (int s = 0; s < 3; s++)
    if (s != p) stop_node(r, s, true);
}

void ch_cl_kill_all(ch_run *r) {
  for (int s = 0; s < 3; s++) {
    kill_node(r, s);
    ch_kill_wait(&r->cl_xpid[s], SIGKILL);
  }
  ch_kill_wait(&r->etcd_pid, SIGKILL);
  if (r->etcd_dir[0]) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->etcd_dir);
    if (system(cmd) != 0) fprintf(stderr, "chaos: cannot remove etcd's data\n");
    r->etcd_dir[0] = '\0';
  }
}

bool ch_cl_reaped(ch_run *r, int pid, const char *how) {
  for (int s = 0; s < 3; s++) {
    if (pid == r->cl_pid[s]) {
      r->cl_pid[s] = 0;
      r->cl_stopped[s] = false;
      r->unexpected++;
      ch_note(r, "node n%d ended by itself (%s; see n%d.log)", s, how, s);
      if (r->unexpected < 20) start_node(r, s);
      return true;
    }
    if (pid == r->cl_xpid[s]) {
      r->cl_xpid[s] = 0;
      r->unexpected++;
      ch_note(r, "the proxy of n%d ended by itself (%s)", s, how);
      start_proxy(r, s);
      return true;
    }
  }
  if (pid == r->etcd_pid) {
    r->etcd_pid = 0;
    r->unexpected++;
    ch_note(r, "etcd ended by itself (%s; see etcd.log)", how);
    start_etcd(r);
    return true;
  }
  return false;
}
