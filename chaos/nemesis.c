/*
 * nemesis.c - the fault schedule and the faults.
 *
 * The schedule is a pure function of the seed: fault i (its kind, target,
 * duration and the pause before it) comes from a splitmix64 stream, so the
 * same seed replays the same faults in the same order with the same
 * timing, whatever the clients do.  The first F_KINDS faults are a seeded
 * permutation of every kind, so even a short run injects each at least
 * once (they come 0.15 to 0.4 s apart, later ones 0.25 to 0.9 s); later
 * ones are drawn by weight.  --only restricts the kinds (a
 * different schedule, as reproducible).  Each fault is injected to the end
 * (a frozen memcached is resumed, a killed owner restarted) before the
 * next one's pause begins.
 *
 * The disk faults (disk-full, io-error) go through the faultfs shim
 * preloaded into each owner (tests/shim/faultfs.c, procs.c): the nemesis
 * writes a mode word to the owner's control file (emb.fault, lcd.fault;
 * replaced by rename, so the shim reads it whole), holds it, and writes
 * "off".  disk-full is enospc on every write under the owner's log
 * directory; io-error one of eio (every write), short (a torn write, then
 * eio), fsync (syncs fail) and eio-once (one write), from the seed.  Their
 * end is the space or the disk coming back; the owner's log then
 * recovers by itself (the library's reopen, with backoff), possibly while
 * the next fault is on.  A disk fault in which the shim failed no call
 * (nothing wrote or synced meanwhile) is counted as not carried out.
 *
 * --cluster draws only its own kinds (primary-kill, primary-freeze,
 * primary-disk-loss, etcd-cut, standby-kill, etcd-restart; --only may add
 * the memcached ones), each carried out by cluster.c; none of the others.
 */
#include "chaos.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *fault_names[F_KINDS] = {
    "memcached-kill", "memcached-flush",  "memcached-freeze",
    "owner-kill",     "pause-before-log", "log-write-fail",
    "power-cut",      "memcached-rewind", "owner-restart",
    "prune",          "disk-full",        "io-error",
    "primary-loss",   "partition",        "primary-kill",
    "primary-freeze", "primary-disk-loss", "etcd-cut",
    "standby-kill",   "etcd-restart"};

bool ch_kind_stops_primary(int kind) {
  return kind == F_PRIMARY_LOSS || kind == F_PARTITION || kind == F_CL_KILL ||
         kind == F_CL_FREEZE || kind == F_CL_DISK || kind == F_CL_CUT ||
         kind == F_CL_ETCD;
}

/* io-error's modes of the shim, drawn by the seed. */
static const char *io_modes[] = {"eio", "short", "fsync", "eio-once"};
#define IO_MODES ((int)(sizeof io_modes / sizeof *io_modes))

const char *ch_fault_mode(const ch_fault *f) {
  if (f->kind == F_DISK_FULL) return "enospc";
  if (f->kind == F_IO_ERROR && f->mode >= 0 && f->mode < IO_MODES)
    return io_modes[f->mode];
  return NULL;
}

const char *ch_missed_why(const ch_fault *f) {
  switch (f->kind) {
  case F_PAUSE: return "no allocation reached the seam";
  case F_PRUNE: return "the worker did not prune";
  case F_PRIMARY_LOSS:
  case F_PARTITION: return "the standby could not be promoted";
  case F_CL_KILL:
  case F_CL_FREEZE:
  case F_CL_DISK:
  case F_CL_CUT:
  case F_CL_STANDBY:
  case F_CL_ETCD: return "no primary (or no synchronous standby) to hit";
  default: return "the shim failed no call: nothing wrote meanwhile";
  }
}

const char *ch_fault_name(int kind) {
  return kind >= 0 && kind < F_KINDS ? fault_names[kind] : "none";
}

const char *ch_target_name(int target) {
  return target == T_EMB ? "embedded" : target == T_LCD ? "logcounterd" : "";
}

int ch_fault_kind(const char *name) {
  for (int i = 0; i < F_KINDS; i++)
    if (strcmp(name, fault_names[i]) == 0) return i;
  return -1;
}

void ch_schedule_next(uint64_t *rng, size_t index, int timeout_ms,
                      unsigned only, bool standby, bool cluster, ch_fault *f,
                      int64_t *gap_ms) {
  static int perm[F_KINDS], nperm;
  static const int base_weight[F_KINDS] = {2, 3, 2, 3, 2, 2, 2, 2, 2, 2,
                                           2, 2, 2, 2, 3, 2, 2, 2, 2, 1};
  int weight[F_KINDS];
  for (int i = 0; i < F_KINDS; i++) {
    bool mode_ok = cluster ? (CH_CLUSTER_KINDS >> i & 1) ||
                                 (only && (CH_CLUSTER_ALSO >> i & 1))
                           : (standby || !(CH_STANDBY_KINDS >> i & 1)) &&
                                 !(CH_CLUSTER_KINDS >> i & 1);
    weight[i] = (!only || (only >> i & 1)) && mode_ok ? base_weight[i] : 0;
  }
  if (index == 0) {
    nperm = 0;
    for (int i = 0; i < F_KINDS; i++)
      if (weight[i]) perm[nperm++] = i;
    for (int i = nperm - 1; i > 0; i--) {
      int j = (int)(ch_rand(rng) % (uint64_t)(i + 1)), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
  }
  memset(f, 0, sizeof *f);
  /* the first round, one of each kind, comes faster */
  *gap_ms = index < (size_t)nperm ? (int64_t)ch_rand_between(rng, 150, 400)
                                  : (int64_t)ch_rand_between(rng, 250, 900);
  if (index < (size_t)nperm) {
    f->kind = perm[index];
  } else {
    int total = 0;
    for (int i = 0; i < F_KINDS; i++) total += weight[i];
    int w = (int)(ch_rand(rng) % (uint64_t)total);
    for (f->kind = 0; w >= weight[f->kind]; f->kind++) w -= weight[f->kind];
  }
  uint64_t coin = ch_rand(rng) % 2;
  uint64_t t = (uint64_t)timeout_ms;
  switch (f->kind) {
  case F_MC_KILL: f->arg_ms = (int64_t)ch_rand_between(rng, 0, 300); break;
  case F_MC_FLUSH: break;
  case F_MC_FREEZE:
    f->arg_ms = (int64_t)ch_rand_between(rng, t + t / 2, 4 * t);
    break;
  case F_OWNER_KILL:
    f->target = coin ? T_LCD : T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 300);
    break;
  case F_PAUSE:
    f->target = T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 100, 500);
    break;
  case F_WRITE_FAIL:
  case F_DISK_FULL:
    f->target = coin ? T_LCD : T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 100, 800);
    break;
  case F_POWER_CUT:
    f->target = coin ? T_LCD : T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 200);
    break;
  case F_MC_REWIND:
    f->arg_ms = (int64_t)ch_rand_between(rng, 50, 500);
    f->back = (int)(ch_rand(rng) % 4);
    break;
  case F_OWNER_RESTART:
    f->target = coin ? T_LCD : T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 200);
    break;
  case F_PRUNE: f->target = T_EMB; break;
  case F_IO_ERROR:
    f->target = coin ? T_LCD : T_EMB;
    f->arg_ms = (int64_t)ch_rand_between(rng, 100, 800);
    f->mode = (int)(ch_rand(rng) % IO_MODES);
    break;
  case F_PRIMARY_LOSS:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 300);
    break;
  case F_PARTITION:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 200, 800);
    break;
  /* --cluster: how long the node stays down (killed, cut) or etcd (a
   * restart) after the failover; a freeze holds on past the failover */
  case F_CL_KILL:
  case F_CL_DISK:
  case F_CL_FREEZE:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 1000);
    break;
  case F_CL_CUT:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 1500);
    break;
  case F_CL_STANDBY:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 200, 2000);
    break;
  case F_CL_ETCD:
    f->target = T_LCD;
    f->arg_ms = (int64_t)ch_rand_between(rng, 0, 1500);
    break;
  }
  /* --standby: the daemon's disk and power faults hit the embedded worker */
  if (standby && f->target == T_LCD &&
      (f->kind == F_WRITE_FAIL || f->kind == F_DISK_FULL ||
       f->kind == F_IO_ERROR || f->kind == F_POWER_CUT))
    f->target = T_EMB;
}

/* The memcached keys of the counters and tally sums, in snapshot order. */
static int rewind_key_names(const ch_run *r, char keys[][16]) {
  int n = 0;
  for (int i = 0; i < CH_COUNTERS; i++)
    snprintf(keys[n++], 16, "%s:%s",
             r->baseline && i < CH_EMB_COUNTERS ? "sd" : "lc",
             ch_counter_name(i));
  for (int i = 0; i < CH_TALLIES; i++)
    snprintf(keys[n++], 16, "lt+:%s", ch_tally_name(i));
  return n;
}

/* Reads every counter's and tally sum's value (-1: absent) and the
 * server that holds it (the first that has it). */
static void snapshot(ch_run *r, long long *v, signed char *srv) {
  char keys[CH_COUNTERS + CH_TALLIES][16];
  int n = rewind_key_names(r, keys);
  for (int i = 0; i < n; i++) {
    v[i] = -1;
    srv[i] = 0;
    for (int s = 0; s < r->nmc && v[i] < 0; s++) {
      if (r->mc_pid[s] <= 0 || r->mc_frozen[s]) continue;
      v[i] = ch_mc_get(r->mc_port[s], keys[i]);
      srv[i] = (signed char)s;
    }
  }
}

/* memcached goes backwards (a warm restart from an old memory file, a
 * stray set): every counter and tally sum is set back to the value read
 * at the start of the fault `back` faults ago (across owner restarts and
 * power cuts, then), or with back 0 read now and set back after arg_ms
 * while the clients go on. */
static void rewind_keys(ch_run *r, ch_fault *f) {
  char keys[CH_COUNTERS + CH_TALLIES][16];
  int n = rewind_key_names(r, keys);
  long long now[CH_COUNTERS + CH_TALLIES], *v = now;
  signed char now_srv[CH_COUNTERS + CH_TALLIES], *srv = now_srv;
  size_t back = (size_t)f->back;
  if (back == 0 || back > r->nsnap) {
    snapshot(r, now, now_srv);
    ch_sleep_ms(f->arg_ms);
  } else {
    v = r->snap[(r->nsnap - back) % 4];
    srv = r->snap_srv[(r->nsnap - back) % 4];
  }
  for (int i = 0; i < n; i++)
    if (v[i] >= 0 && ch_mc_set(r->mc_port[srv[i]], keys[i], v[i]) != 0)
      ch_note(r, "memcached-rewind: cannot set %s", keys[i]);
}

/* flush_all on server s, or on every server (s < 0). */
static int flush_all(ch_run *r, int s) {
  int rc = 0;
  for (int t = 0; t < r->nmc; t++) {
    char reply[64];
    if (s >= 0 && t != s) continue;
    if (ch_mc_command(r->mc_port[t], "flush_all", reply, sizeof reply) == 0 &&
        strcmp(reply, "OK") == 0)
      continue;
    ch_note(r, "flush_all failed on memcached %d", t);
    rc = -1;
  }
  return rc;
}

static void kill_owner(ch_run *r, int target) {
  if (target == T_LCD) ch_lcd_log_stats(r);
  ch_kill_wait(target == T_EMB ? &r->emb_pid : &r->lcd_pid, SIGKILL);
}

/* Did logcounterd pid say, in lcd.log, that only its final tally flush
 * failed?  Then its exit status 1 is what it documents (the changes stay
 * pending in memcached for the next start's sweep). */
static bool only_flush_failed(const ch_run *r, int pid) {
  char path[1024], line[1024], tag[48];
  ch_path(r, path, sizeof path, "lcd.log");
  snprintf(tag, sizeof tag, "logcounterd[%d]: ", pid);
  FILE *f = fopen(path, "r");
  bool flush = false, other = false;
  while (f && fgets(line, sizeof line, f)) {
    char *p = strstr(line, tag);
    if (p == NULL) continue;
    p += strlen(tag);
    if (strncmp(p, "final tally flush failed", 24) == 0) flush = true;
    if (strncmp(p, "cannot close", 12) == 0) other = true;
  }
  if (f) fclose(f);
  return flush && !other;
}

/* A clean stop: SIGTERM, and the owner must exit 0 by itself. */
static void stop_owner(ch_run *r, int target) {
  int *pid = target == T_EMB ? &r->emb_pid : &r->lcd_pid;
  if (*pid <= 0) return;
  if (target == T_LCD) ch_lcd_log_stats(r);
  kill(*pid, SIGTERM);
  int status = 0, waited = 0;
  while (waitpid(*pid, &status, WNOHANG) == 0 && waited++ < 600)
    ch_sleep_ms(50);
  if (waited > 600) {
    ch_note(r, "%s did not stop within 30 s of SIGTERM",
            ch_target_name(target));
    ch_kill_wait(pid, SIGKILL);
    r->unexpected++;
  } else if (target == T_LCD && WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
             only_flush_failed(r, *pid)) {
    r->flush_failed_stops++;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ch_note(r, "%s failed its clean stop (status %d)", ch_target_name(target),
            status);
    r->unexpected++;
  }
  *pid = 0;
}

static void start_owner(ch_run *r, int target) {
  if (target == T_EMB) {
    if (ch_start_emb(r) != 0) ch_note(r, "cannot start the embedded worker");
  } else if (ch_start_lcd(r) != 0) {
    ch_note(r, "logcounterd did not come back (see lcd.log)");
  }
}

/* The seam: the next allocation stops between its increment and its log
 * write; meanwhile memcached is flushed and the other threads restore. */
static int pause_before_log(ch_run *r, ch_fault *f) {
  ch_ctl *c = r->emb_ctl;
  atomic_store(&c->pause_release, 0);
  atomic_store(&c->pause_req, 1);
  bool paused = false;
  for (int i = 0; i < 1000 && !paused; i++) {
    paused = atomic_load(&c->paused) != 0;
    if (!paused) ch_sleep_ms(1);
  }
  if (!paused && atomic_exchange(&c->pause_req, 0) == 1) {
    f->missed = true; /* no allocation reached the seam */
    return 0;
  }
  while (!atomic_load(&c->paused)) ch_sleep_ms(1); /* taken just now */
  flush_all(r, -1);
  ch_sleep_ms(f->arg_ms);
  atomic_store(&c->pause_release, 1);
  for (int i = 0; i < 2000 && atomic_load(&c->paused); i++) ch_sleep_ms(1);
  return 0;
}

/* Writes word to target's faultfs control file, whole (rename). */
static void set_disk(ch_run *r, int target, const char *word) {
  char path[1024], tmp[1100];
  ch_path(r, path, sizeof path, target == T_EMB ? "emb.fault" : "lcd.fault");
  snprintf(tmp, sizeof tmp, "%s.new", path);
  FILE *f = fopen(tmp, "w");
  bool ok = f && fprintf(f, "%s\n", word) > 0;
  if (f && fclose(f) != 0) ok = false;
  if (!ok || rename(tmp, path) != 0)
    ch_note(r, "cannot write %s to %s", word, path);
}

/* Waits (at most 3 s) until target is up with its log OK: a disk fault
 * strikes a log in use, not one still recovering from the last (which
 * writes nothing, so the fault would fail nothing). */
static void wait_log_ok(ch_run *r, int target) {
  for (int i = 0; i < 150; i++) {
    ch_reap(r);
    if (target == T_EMB ? r->emb_pid > 0 && atomic_load(&r->emb_ctl->ready) &&
                              !atomic_load(&r->emb_ctl->log_failed)
                        : ch_lcd_log_ok(r))
      return;
    ch_sleep_ms(20);
  }
}

/* disk-full, io-error: the shim's mode on the owner's log directory for
 * arg_ms, and on until the shim has failed a call (at most 2 s more: an
 * owner serving from a prefetched segment may not write for a while),
 * then off.  The shim re-reads its control file every few ms (the coarse
 * clock's tick), so the fault ends once every process has seen "off":
 * 20 ms later. */
static void disk_fault(ch_run *r, ch_fault *f) {
  wait_log_ok(r, f->target);
  f->t_ns = ch_now_ns();
  uint64_t before = ch_owner_hits(r, f->target);
  set_disk(r, f->target, ch_fault_mode(f));
  ch_sleep_ms(f->arg_ms);
  for (int i = 0; i < 100 && ch_owner_hits(r, f->target) == before; i++)
    ch_sleep_ms(20);
  set_disk(r, f->target, "off");
  ch_sleep_ms(20);
  f->hits = ch_owner_hits(r, f->target) - before;
  if (f->hits == 0) f->missed = true;
}

static void power_cut(ch_run *r, ch_fault *f) {
  const char *who = f->target == T_EMB ? "emb" : "lcd";
  char state[1024], bak[1024], summary[256];
  kill_owner(r, f->target);
  f->stop_ns = ch_now_ns();
  snprintf(state, sizeof state, "%s/%s.state", r->dir, who);
  snprintf(bak, sizeof bak, "%s/%s.bak", r->dir, who);
  if (ch_cut_apply(state, bak, summary, sizeof summary) != 0)
    ch_note(r, "power cut of %s: %s", who, summary);
  if (r->verbose) fprintf(stderr, "chaos: power cut %s: %s\n", who, summary);
  flush_all(r, -1); /* memcached wiped too */
  ch_sleep_ms(f->arg_ms);
  f->restart_ns = ch_now_ns();
  start_owner(r, f->target);
}

/* --standby: promotes the standby (slot 1 - prim) with the CLI; on
 * success the roles swap: the promoted one is the primary (lcd_pid,
 * lcd_port) and no standby runs.  The old primary's pid in *old. */
static bool promote(ch_run *r, int *old) {
  int s = 1 - r->prim;
  char adm[1024];
  ch_admin_path(r, s, adm, sizeof adm);
  char *argv[] = {r->cli, "--server", adm, "promote", NULL};
  int rc = -1;
  for (int attempt = 0; attempt < 3 && rc != 0; attempt++) {
    if (attempt) ch_sleep_ms(500);
    int64_t t = ch_now_ns();
    rc = ch_run_wait(r, argv, "promote.log", 30000);
    if (r->verbose)
      fprintf(stderr, "chaos: promote slot %d: status %d in %lld ms\n", s, rc,
              (long long)((ch_now_ns() - t) / 1000000));
  }
  if (rc != 0) {
    r->promote_failures++;
    r->unexpected++;
    ch_note(r, "promote of the standby (%s) failed (status %d; see "
            "promote.log)", adm, rc);
    return false;
  }
  r->promotions++;
  *old = r->lcd_pid;
  r->prim = s;
  r->lcd_pid = r->sby_pid;
  r->sby_pid = 0;
  r->lcd_port = r->sb_port[s];
  return true;
}

/* -v: a step of a standby fault, with the time since the run began. */
static void step(const ch_run *r, const char *what) {
  if (r->verbose)
    fprintf(stderr, "chaos: %6.1f s   %s (primary slot %d pid %d, standby pid "
            "%d)\n", (double)(ch_now_ns() - r->start_ns) / 1e9, what, r->prim,
            r->lcd_pid, r->sby_pid);
}

static void remove_dir(ch_run *r, const char *name) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s/%s'", r->dir, name);
  if (system(cmd) != 0) ch_note(r, "cannot remove %s", name);
}

/* A standby that is up and in sync before a promotion (its copy done);
 * one that is not is a finding only if the promotion then fails. */
static void standby_ready(ch_run *r) {
  if (r->sby_pid <= 0) ch_start_sby(r, false);
  ch_wait_sync(r, 5000);
  step(r, "standby ready");
}

static void primary_loss(ch_run *r, ch_fault *f) {
  standby_ready(r);
  f->t_ns = ch_now_ns();
  char dead[64];
  snprintf(dead, sizeof dead, "%s", ch_lcd_dir(r));
  kill_owner(r, T_LCD);
  remove_dir(r, dead); /* the host's disk is gone with it */
  step(r, "primary killed, its directory removed");
  ch_sleep_ms(f->arg_ms);
  int old = 0;
  if (!promote(r, &old)) {
    f->missed = true;
    /* the standby goes on as one; a primary of the old slot comes back
     * on an empty directory, which the standby's copy does not match:
     * the run is invalid anyway (promote failed) */
    start_owner(r, T_LCD);
    return;
  }
  step(r, "promoted");
  if (ch_start_sby(r, true) != 0) ch_note(r, "no fresh standby (see lcd.log)");
  step(r, "fresh standby started");
  ch_wait_sync(r, 5000);
  step(r, "fresh standby in sync (or not: above)");
}

static void partition(ch_run *r, ch_fault *f) {
  standby_ready(r);
  f->t_ns = ch_now_ns();
  ch_lcd_log_stats(r);
  int stopped = r->lcd_pid;
  if (stopped > 0) kill(stopped, SIGSTOP);
  int old = 0;
  if (!promote(r, &old)) {
    f->missed = true;
    if (stopped > 0) kill(stopped, SIGCONT);
    return;
  }
  /* the old primary, resumed: its clients get the rest of its window or
   * ENOSTANDBY; then it is gone for good (its directory is kept, unread) */
  step(r, "promoted while the old primary is stopped");
  if (old > 0) kill(old, SIGCONT);
  ch_sleep_ms(f->arg_ms);
  ch_kill_wait(&old, SIGKILL);
  step(r, "old primary resumed, then killed");
  if (ch_start_sby(r, true) != 0) ch_note(r, "no fresh standby (see lcd.log)");
  step(r, "fresh standby started");
  ch_wait_sync(r, 5000);
  step(r, "fresh standby in sync (or not: above)");
}

int ch_inject(ch_run *r, ch_fault *f) {
  f->t_ns = ch_now_ns();
  /* which server a memcached fault hits: reproducible from the seed */
  int s = f->server = (int)((r->seed + r->nfaults * 7919u) % (unsigned)r->nmc);
  if (f->kind == F_MC_REWIND) rewind_keys(r, f);
  if (r->mc_pid[0] > 0) {
    snapshot(r, r->snap[r->nsnap % 4], r->snap_srv[r->nsnap % 4]);
    r->nsnap++;
  }
  switch (f->kind) {
  case F_MC_KILL:
    ch_kill_wait(&r->mc_pid[s], SIGKILL);
    ch_sleep_ms(f->arg_ms);
    ch_start_memcached(r, s);
    break;
  case F_MC_FLUSH: flush_all(r, s); break;
  case F_MC_FREEZE:
    kill(r->mc_pid[s], SIGSTOP);
    r->mc_frozen[s] = true;
    ch_sleep_ms(f->arg_ms);
    kill(r->mc_pid[s], SIGCONT);
    r->mc_frozen[s] = false;
    break;
  case F_OWNER_KILL:
    kill_owner(r, f->target);
    ch_sleep_ms(f->arg_ms);
    f->restart_ns = ch_now_ns();
    start_owner(r, f->target);
    break;
  case F_PAUSE: pause_before_log(r, f); break;
  case F_WRITE_FAIL: {
    ch_ctl *c = f->target == T_EMB ? r->emb_ctl : r->lcd_ctl;
    atomic_store(&c->fail_until_ns, ch_now_ns() + f->arg_ms * 1000000);
    ch_sleep_ms(f->arg_ms);
    break;
  }
  case F_POWER_CUT: power_cut(r, f); break;
  case F_MC_REWIND: /* above, before this fault's snapshot */ break;
  case F_OWNER_RESTART:
    stop_owner(r, f->target);
    ch_sleep_ms(f->arg_ms);
    start_owner(r, f->target);
    break;
  case F_DISK_FULL:
  case F_IO_ERROR: disk_fault(r, f); break;
  case F_PRIMARY_LOSS: primary_loss(r, f); break;
  case F_PARTITION: partition(r, f); break;
  case F_CL_KILL:
  case F_CL_FREEZE:
  case F_CL_DISK:
  case F_CL_CUT:
  case F_CL_STANDBY:
  case F_CL_ETCD: ch_cl_inject(r, f); break;
  case F_PRUNE: { /* the embedded owner prunes old records, then memcached
                       is flushed: restores must find the newest record */
    ch_ctl *c = r->emb_ctl;
    atomic_store(&c->prune_req, 1);
    for (int i = 0; i < 5000 && atomic_load(&c->prune_req) == 1; i++)
      ch_sleep_ms(1);
    if (atomic_exchange(&c->prune_req, 0) != 2) f->missed = true;
    flush_all(r, -1);
    break;
  }
  }
  f->end_ns = ch_now_ns();
  return 0;
}

/* Ends every fault in progress and brings every process back. */
void ch_heal(ch_run *r) {
  for (int s = 0; s < r->nmc; s++) {
    if (r->mc_pid[s] > 0 && r->mc_frozen[s]) kill(r->mc_pid[s], SIGCONT);
    r->mc_frozen[s] = false;
    if (r->mc_pid[s] <= 0) ch_start_memcached(r, s);
  }
  atomic_store(&r->emb_ctl->fail_until_ns, 0);
  atomic_store(&r->lcd_ctl->fail_until_ns, 0);
  set_disk(r, T_EMB, "off");
  set_disk(r, T_LCD, "off");
  atomic_store(&r->emb_ctl->pause_req, 0);
  atomic_store(&r->emb_ctl->pause_release, 1);
  if (r->emb_pid <= 0) start_owner(r, T_EMB);
  if (r->cluster)
    ch_cl_heal(r);
  else if (r->lcd_pid <= 0)
    start_owner(r, T_LCD);
  if (r->standby && r->sby_pid <= 0) ch_start_sby(r, false);
}
