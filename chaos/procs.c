/*
 * procs.c - the processes of a chaos run, all children of the driver:
 * a private memcached (foreground, on a loopback port of its own), the
 * embedded worker and logcounterd (each with its own log directory and two
 * shims preloaded: the power-cut shim, then the disk-fault shim faultfs,
 * so the power cut sees only the syncs faultfs let through), and the
 * daemon client processes.
 *
 * Every child dies with the driver (PR_SET_PDEATHSIG), so nothing outlives
 * a run, even one that crashes.  Layout under the run directory:
 *   emb/ lcd/            the owners' directories (the cut applies there)
 *   emb.state, lcd.state the shim's records; emb.bak/, lcd.bak/ its links
 *   NAME.ctl             control blocks; rec/ the acknowledgement records
 *   emb.fault, lcd.fault each owner's faultfs mode word (nemesis.c)
 *   hits/emb-N, hits/lcd-N  the faults faultfs injected into start N
 *   NAME.log             each process's stderr
 * With --standby (logcounterd as a primary and its standby, both logging
 * to lcd.log): lcd/ is the first primary's directory, lcd.G/ (G = 1, 2,
 * ...) each fresh standby's (the power-cut shim's records lcd.G.state and
 * lcd.G.bak/ beside it; the control block and the faultfs word are lcd's,
 * shared); adm-S.sock the admin socket of slot S; promote.log the CLI's
 * output.
 */
#include "chaos.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void ch_path(const ch_run *r, char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", r->dir, name);
}

/* Forks and execs argv with stdout and stderr appended to LOG; extra
 * environment "K=V" strings (NULL-terminated) are added. */
int ch_spawn(const ch_run *r, char *const argv[], const char *log,
                 const char *const env[]) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  char path[1024];
  ch_path(r, path, sizeof path, log);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0600);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  for (size_t i = 0; env && env[i]; i++) putenv((char *)env[i]);
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv);
  fprintf(stderr, "chaos: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

bool ch_wait_port(int port, int pid, int ms) {
  for (int i = 0; i < ms / 20; i++) {
    if (ch_port_open(port)) return true;
    if (waitpid(pid, NULL, WNOHANG) == pid) return false;
    ch_sleep_ms(20);
  }
  return false;
}

int ch_start_memcached(ch_run *r, int s) {
  char port[16];
  snprintf(port, sizeof port, "%d", r->mc_port[s]);
  char *argv[] = {"memcached",
                  "-l",
                  "127.0.0.1",
                  "-p",
                  port,
                  "-U",
                  "0",
                  "-M",
                  "-m",
                  "64",
                  geteuid() == 0 ? "-u" : NULL,
                  "root",
                  NULL};
  r->mc_pid[s] = ch_spawn(r, argv, "memcached.log", NULL);
  r->mc_frozen[s] = false;
  if (r->mc_pid[s] > 0 && ch_wait_port(r->mc_port[s], r->mc_pid[s], 5000))
    return 0;
  ch_note(r, "memcached did not start on port %d", r->mc_port[s]);
  return -1;
}

void ch_mc_config(const ch_run *r, char *buf, size_t size) {
  size_t n = 0;
  buf[0] = '\0';
  for (int s = 0; s < r->nmc && n < size; s++)
    n += (size_t)snprintf(buf + n, size - n, "%s--SERVER=127.0.0.1:%d",
                          s ? " " : "", r->mc_port[s]);
}

/* The environment of an owner's start n: the power-cut shim records DIR
 * and obeys CTL; faultfs fails calls on DIR's files as WHO.fault says and
 * counts them in hits/WHO-n. */
#define OWNER_ENV 9
static void owner_env(const ch_run *r, const char *who, int n,
                      char env[OWNER_ENV][1100]) {
  char p[1024];
  snprintf(env[0], 1100, "LD_PRELOAD=%s %s", r->shim, r->faultfs);
  ch_path(r, p, sizeof p, who);
  snprintf(env[1], 1100, "CHAOS_CUT_DIR=%s", p);
  snprintf(env[2], 1100, "CHAOS_CUT_STATE=%s.state", p);
  snprintf(env[3], 1100, "CHAOS_CUT_BAK=%s.bak", p);
  snprintf(env[4], 1100, "CHAOS_CTL=%s.ctl", p);
  /* a sanitizer build: the shims come before its runtime */
  const char *a = getenv("ASAN_OPTIONS");
  snprintf(env[5], 1100, "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
           a ? a : "", a && *a ? ":" : "");
  snprintf(env[6], 1100, "LC_FAULT_DIR=%s", p);
  snprintf(env[7], 1100, "LC_FAULT_CTL=%s.fault", p);
  snprintf(env[8], 1100, "LC_FAULT_HITS=%s/hits/%s-%d", r->dir, who, n);
}

uint64_t ch_owner_hits(const ch_run *r, int target) {
  char dir[1024], path[1400];
  const char *prefix = target == T_EMB ? "emb-" : "lcd-";
  ch_path(r, dir, sizeof dir, "hits");
  DIR *d = opendir(dir);
  struct dirent *de;
  uint64_t sum = 0;
  while (d && (de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, prefix, 4) != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "r");
    unsigned long long n = 0;
    if (f && fscanf(f, "%llu", &n) == 1) sum += n;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return sum;
}

bool ch_port_stats(int port, int ms, char *buf, size_t size) {
  buf[0] = '\0';
  int fd = ch_connect_port(port, ms);
  if (fd < 0) return false;
  size_t got = 0;
  bool end = false;
  if (write(fd, "stats\r\n", 7) == 7) {
    ssize_t k;
    while (!end && got + 1 < size &&
           (k = read(fd, buf + got, size - 1 - got)) > 0) {
      got += (size_t)k;
      buf[got] = '\0';
      end = strstr(buf, "END\r\n") != NULL;
    }
  }
  close(fd);
  return end;
}

/* logcounterd's (the primary's) "stats" reply. */
static bool lcd_stats(const ch_run *r, char *buf, size_t size) {
  buf[0] = '\0';
  return r->lcd_pid > 0 && ch_port_stats(r->lcd_port, 1000, buf, size);
}

/* Its replication_* lines, on one line ("" if none). */
static void repl_lines(int port, char *out, size_t size) {
  char buf[16384];
  size_t n = 0;
  out[0] = '\0';
  if (!ch_port_stats(port, 1000, buf, sizeof buf)) return;
  for (char *save, *l = strtok_r(buf, "\r\n", &save); l && n + 1 < size;
       l = strtok_r(NULL, "\r\n", &save))
    if (strncmp(l, "STAT replication_", 17) == 0)
      n += (size_t)snprintf(out + n, size - n, "%s%s", n ? " " : "", l + 17);
}

void ch_lcd_log_stats(ch_run *r) {
  char buf[16384];
  if (!lcd_stats(r, buf, sizeof buf)) return;
  const char *p;
  unsigned long long v;
  if ((p = strstr(buf, "STAT log_failures ")) &&
      sscanf(p + 18, "%llu", &v) == 1)
    r->lcd_log_failures += v;
  if ((p = strstr(buf, "STAT log_recoveries ")) &&
      sscanf(p + 20, "%llu", &v) == 1)
    r->lcd_log_recoveries += v;
}

bool ch_lcd_log_ok(ch_run *r) {
  char buf[16384];
  return lcd_stats(r, buf, sizeof buf) &&
         strstr(buf, "STAT log_state ok\r\n") != NULL;
}

void ch_started(ch_run *r, int target, bool sync) {
  if (r->nstarts == r->scap) {
    r->scap = r->scap ? 2 * r->scap : 64;
    r->starts = realloc(r->starts, r->scap * sizeof *r->starts);
  }
  r->starts[r->nstarts++] = (struct ch_start){ch_now_ns(), target, sync};
}

const char *ch_owner_mode(int incarnation, bool baseline) {
  static const char *modes[3] = {"prefetch", "default", "sync"};
  return baseline ? (incarnation % 2 ? "default" : "sync")
                  : modes[incarnation % 3];
}

int ch_start_emb(ch_run *r) {
  char dir[1024], ctl[1024], out[1024], fin[1024], mc[160], inc[16], thr[16],
      to[16], seed[32];
  static char env[OWNER_ENV][1100];
  r->emb_inc++;
  ch_path(r, dir, sizeof dir, "emb");
  ch_path(r, ctl, sizeof ctl, "emb.ctl");
  snprintf(out, sizeof out, "%s/rec/emb-%d.bin", r->dir, r->emb_inc);
  ch_path(r, fin, sizeof fin, "emb.final");
  ch_mc_config(r, mc, sizeof mc);
  snprintf(inc, sizeof inc, "%d", r->emb_inc);
  snprintf(thr, sizeof thr, "%d", r->threads);
  snprintf(to, sizeof to, "%d", r->timeout_ms);
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
  owner_env(r, "emb", r->emb_inc, env);
  const char *envp[] = {env[0], env[1], env[2], env[3], env[4],
                        env[5], env[6], env[7], env[8], NULL};
  /* Each restart the next mode: default, sync, prefetch (the baseline:
   * default and sync only, it has no prefetch). */
  const char *mode = ch_owner_mode(r->emb_inc, r->baseline);
  char *argv[] = {r->self,
                  "worker",
                  dir,
                  mc,
                  ctl,
                  out,
                  fin,
                  inc,
                  thr,
                  to,
                  seed,
                  (char *)mode,
                  r->baseline ? "1" : "0",
                  NULL};
  atomic_store(&r->emb_ctl->ready, 0);
  ch_started(r, T_EMB, strcmp(mode, "default") != 0);
  r->emb_pid = ch_spawn(r, argv, "emb.log", envp);
  return r->emb_pid > 0 ? 0 : -1;
}

const char *ch_lcd_dir(const ch_run *r) {
  static char buf[32];
  if (r->cluster) {
    snprintf(buf, sizeof buf, "n%d", r->cl_prim < 0 ? 0 : r->cl_prim);
    return buf;
  }
  if (!r->standby || r->sb_gen[r->prim] == 0) return "lcd";
  snprintf(buf, sizeof buf, "lcd.%d", r->sb_gen[r->prim]);
  return buf;
}

void ch_admin_path(const ch_run *r, int s, char *buf, size_t size) {
  snprintf(buf, size, "%s/adm-%d.sock", r->dir, s);
}

void ch_lcd_arg(ch_lcd_cmd *c, const char *opt, const char *val) {
  c->argv[c->n++] = (char *)opt;
  c->argv[c->n++] = (char *)val;
  c->argv[c->n] = NULL;
}

void ch_lcd_cmd_init(ch_run *r, ch_lcd_cmd *c, const char *db,
                     const char *listen) {
  memset(c, 0, sizeof *c);
  ch_mc_config(r, c->mc, sizeof c->mc);
  snprintf(c->to, sizeof c->to, "%d", r->timeout_ms);
  c->mode = ch_owner_mode(r->lcd_inc, false);
  bool pf = strcmp(c->mode, "prefetch") == 0;
  c->argv[c->n++] = r->daemon;
  ch_lcd_arg(c, "--db", db);
  ch_lcd_arg(c, "--memcached", c->mc);
  ch_lcd_arg(c, "--timeout", c->to);
  ch_lcd_arg(c, "-l", listen);
  ch_lcd_arg(c, "-t", "4");
  ch_lcd_arg(c, "--durability", pf ? "default" : c->mode);
  ch_lcd_arg(c, "--prefetch", pf ? "auto" : "off");
}

/* --standby: starts a daemon in slot s on directory generation gen, a
 * primary (serving a standby on the slot's replication port) or the
 * standby of the other slot's primary (with the replication port too, for
 * the standby it serves once promoted). */
static int start_slot(ch_run *r, int s, bool standby) {
  char who[32], db[1100], listen[32], repl[32], of[32], adm[1024], p[1024];
  static char env[OWNER_ENV][1100];
  r->lcd_inc++;
  if (r->sb_gen[s] == 0)
    snprintf(who, sizeof who, "lcd");
  else
    snprintf(who, sizeof who, "lcd.%d", r->sb_gen[s]);
  ch_path(r, p, sizeof p, who);
  mkdir(p, 0700);
  snprintf(db, sizeof db, "%s/log", p);
  snprintf(p + strlen(p), sizeof p - strlen(p), ".bak");
  mkdir(p, 0700);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", r->sb_port[s]);
  snprintf(repl, sizeof repl, "127.0.0.1:%d", r->sb_repl[s]);
  snprintf(of, sizeof of, "127.0.0.1:%d", r->sb_repl[1 - s]);
  ch_admin_path(r, s, adm, sizeof adm);
  unlink(adm); /* its last daemon is dead */
  owner_env(r, who, r->lcd_inc, env);
  ch_path(r, p, sizeof p, "lcd");
  snprintf(env[4], 1100, "CHAOS_CTL=%s.ctl", p);
  snprintf(env[7], 1100, "LC_FAULT_CTL=%s.fault", p);
  const char *envp[] = {env[0], env[1], env[2], env[3], env[4],
                        env[5], env[6], env[7], env[8], NULL};
  ch_lcd_cmd c;
  ch_lcd_cmd_init(r, &c, db, listen);
  ch_lcd_arg(&c, "--admin-socket", adm);
  ch_lcd_arg(&c, "--replication-listen", repl);
  if (r->standby_timeout) ch_lcd_arg(&c, "--standby-timeout", r->standby_timeout);
  if (standby) ch_lcd_arg(&c, "--standby-of", of);
  ch_started(r, T_LCD, strcmp(c.mode, "default") != 0);
  int pid = ch_spawn(r, c.argv, "lcd.log", envp);
  if (standby)
    r->sby_pid = pid, r->sby_starts++;
  else
    r->lcd_pid = pid;
  if (pid > 0 && ch_wait_port(r->sb_port[s], pid, 10000)) return 0;
  return -1;
}

int ch_start_sby(ch_run *r, bool fresh) {
  int s = 1 - r->prim;
  if (fresh) r->sb_gen[s] = ++r->gens;
  return start_slot(r, s, true);
}

bool ch_wait_sync(ch_run *r, int ms) {
  char buf[16384];
  int64_t until = ch_now_ns() + (int64_t)ms * 1000000;
  while (ch_now_ns() < until) { /* a stats reply can take its timeout */
    if (lcd_stats(r, buf, sizeof buf) &&
        strstr(buf, "STAT replication_standby sync\r\n") != NULL)
      return true;
    ch_sleep_ms(20);
  }
  r->sync_waits_failed++;
  char p[600], s[600];
  repl_lines(r->lcd_port, p, sizeof p);
  repl_lines(r->sb_port[1 - r->prim], s, sizeof s);
  fprintf(stderr,
          "chaos: %.1f s: standby not in sync after %d ms: primary (pid %d, "
          "port %d): %s; standby (pid %d, port %d): %s\n",
          (double)(ch_now_ns() - r->start_ns) / 1e9, ms, r->lcd_pid,
          r->lcd_port, p, r->sby_pid, r->sb_port[1 - r->prim], s);
  return false;
}

int ch_run_wait(ch_run *r, char *const argv[], const char *log,
                int timeout_ms) {
  int pid = ch_spawn(r, argv, log, NULL);
  if (pid <= 0) return -1;
  int status = 0;
  for (int i = 0; i < timeout_ms / 10; i++) {
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    ch_sleep_ms(10);
  }
  ch_note(r, "%s %s did not finish in %d ms (killed)", argv[0],
          argv[3] ? argv[3] : "", timeout_ms);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

int ch_start_lcd(ch_run *r) {
  if (r->cluster) return ch_cl_start(r);
  if (r->standby) return start_slot(r, r->prim, false);
  char db[1024], listen[32];
  static char env[OWNER_ENV][1100];
  r->lcd_inc++;
  snprintf(db, sizeof db, "%s/lcd/log", r->dir);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", r->lcd_port);
  owner_env(r, "lcd", r->lcd_inc, env);
  const char *envp[] = {env[0], env[1], env[2], env[3], env[4],
                        env[5], env[6], env[7], env[8], NULL};
  ch_lcd_cmd c;
  ch_lcd_cmd_init(r, &c, db, listen);
  ch_started(r, T_LCD, strcmp(c.mode, "default") != 0);
  r->lcd_pid = ch_spawn(r, c.argv, "lcd.log", envp);
  if (r->lcd_pid > 0 && ch_wait_port(r->lcd_port, r->lcd_pid, 10000)) return 0;
  return -1;
}

int ch_start_dclients(ch_run *r) {
  char port[32], ctl[1024], out[1024], idx[16], conns[16], seed[32];
  for (int i = 0; i < r->dclients; i++) {
    if (r->cluster) /* every node: a standby forwards to the primary */
      snprintf(port, sizeof port, "%d,%d,%d", r->cl_port[0], r->cl_port[1],
               r->cl_port[2]);
    else if (r->standby) /* both daemons: the clients find the primary */
      snprintf(port, sizeof port, "%d,%d", r->sb_port[0], r->sb_port[1]);
    else
      snprintf(port, sizeof port, "%d", r->lcd_port);
    ch_path(r, ctl, sizeof ctl, "dcl.ctl");
    snprintf(out, sizeof out, "%s/rec/dcl-%d.bin", r->dir, i);
    snprintf(idx, sizeof idx, "%d", i);
    snprintf(conns, sizeof conns, "%d", r->conns);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    char *argv[] = {r->self, "dclient", port, ctl, out, idx, conns, seed, NULL};
    if ((r->dcl_pid[i] = ch_spawn(r, argv, "dclient.log", NULL)) <= 0) return -1;
  }
  return 0;
}

void ch_kill_wait(int *pid, int sig) {
  if (*pid <= 0) return;
  kill(*pid, sig);
  waitpid(*pid, NULL, 0);
  *pid = 0;
}

static void describe(int status, char *buf, size_t size) {
  if (WIFEXITED(status))
    snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
  else
    snprintf(buf, size, "signal %d", WTERMSIG(status));
}

/* The memcached server whose process is pid, or -1. */
static int ch_mc_index(const ch_run *r, pid_t pid) {
  for (int s = 0; s < r->nmc; s++)
    if (r->mc_pid[s] == pid) return s;
  return -1;
}

/* Collects children that ended without the nemesis killing them: each is
 * a finding, and is started again. */
void ch_reap(ch_run *r) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    char how[64];
    describe(status, how, sizeof how);
    if (r->cluster && ch_cl_reaped(r, pid, how)) continue;
    if (pid == r->emb_pid) {
      r->emb_pid = 0;
      r->unexpected++;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 3) r->open_failures++;
      ch_note(r, "embedded worker %d ended by itself (%s; see emb.log)",
              r->emb_inc, how);
      if (r->unexpected < 20) ch_start_emb(r);
    } else if (pid == r->lcd_pid) {
      r->lcd_pid = 0;
      r->unexpected++;
      ch_note(r, "logcounterd%s ended by itself (%s; see lcd.log)",
              r->standby ? " (the primary)" : "", how);
      if (r->unexpected < 20) ch_start_lcd(r);
    } else if (r->standby && pid == r->sby_pid) {
      r->sby_pid = 0;
      r->unexpected++;
      ch_note(r, "the standby logcounterd ended by itself (%s; see lcd.log)",
              how);
      if (r->unexpected < 20) ch_start_sby(r, false);
    } else if (ch_mc_index(r, pid) >= 0) {
      int s = ch_mc_index(r, pid);
      r->mc_pid[s] = 0;
      ch_note(r, "memcached %d ended by itself (%s)", s, how);
      ch_start_memcached(r, s);
    } else {
      for (int i = 0; i < r->dclients; i++)
        if (pid == r->dcl_pid[i]) {
          r->dcl_pid[i] = 0;
          r->unexpected++;
          ch_note(r, "daemon client %d ended by itself (%s)", i, how);
        }
    }
  }
}

void ch_stop_all(ch_run *r) {
  for (int s = 0; s < r->nmc; s++)
    if (r->mc_pid[s] > 0 && r->mc_frozen[s]) kill(r->mc_pid[s], SIGCONT);
  for (int i = 0; i < r->dclients; i++) ch_kill_wait(&r->dcl_pid[i], SIGKILL);
  ch_kill_wait(&r->emb_pid, SIGKILL);
  ch_kill_wait(&r->lcd_pid, SIGKILL);
  ch_kill_wait(&r->sby_pid, SIGKILL);
  if (r->cluster) ch_cl_kill_all(r);
  for (int s = 0; s < r->nmc; s++) ch_kill_wait(&r->mc_pid[s], SIGKILL);
}
