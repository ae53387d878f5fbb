/*
 * chaos.h - shared by the parts of the chaos harness (make chaos).
 *
 *   chaos.c     the driver: options, the processes it runs, the run's end
 *   nemesis.c   the seeded fault schedule and each fault's injection
 *   procs.c     starting, killing and reaping memcached, logcounterd, the
 *               embedded worker and the daemon clients
 *   cut.c       the power cut: a log directory cut back to what was durable
 *   worker.c    "chaos worker": the embedded owner (library threads, tallies;
 *               or the seed algorithm with --baseline seed)
 *   dclient.c   "chaos dclient": connections to logcounterd (with --standby,
 *               to either of its two daemons, moving on refusals)
 *   cluster.c   --cluster: etcd, the proxies, three logcounterd nodes on
 *               it, and the cluster's faults
 *   check.c     the checker and its report
 *   logged.c    the checker's read-back of the owners' logs
 *   ledger.c    the checker's reading of their gap ledgers
 *   ledger_report.c  its part of the report (and which faults explain
 *               which causes)
 *   util.c      time, random numbers, the shared control block
 *   model.c     "chaos model": the premise of the power-cut windows
 *               checked on this LevelDB
 *   powercut.c  the LD_PRELOAD shim (its own .so): records what each file
 *               of a log directory had made durable, fails log writes
 *   (tests/shim/faultfs.c, preloaded after it: the disk faults beneath
 *   LevelDB, switched by a control file per owner; see nemesis.c)
 *
 * Invariant: a client appends an acknowledgement record only after the
 * value reached it, with one write(2), so a record never names an id the
 * client did not receive; ids in flight when a process dies are simply not
 * recorded (they may show up as gaps, never as duplicates).  A counter
 * call that failed appends a REC_FAIL record (which counter, when, why):
 * the per-gap cause check takes a failed call near a gap as the lost
 * answer that can leave it unlogged (ledger_report.c, ch_gap_unfit).
 */
#ifndef CHAOS_H
#define CHAOS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Counters: 0..2 owned by the embedded worker, 3..4 by logcounterd.
 * Tallies: 0..1 (t0, t1) the embedded worker's, 2..3 (u0, u1) changed
 * through logcounterd ("incr tally:u0 D"). */
#define CH_EMB_COUNTERS 3
#define CH_LCD_COUNTERS 2
#define CH_COUNTERS (CH_EMB_COUNTERS + CH_LCD_COUNTERS)
#define CH_EMB_TALLIES 2
#define CH_TALLIES 4

enum { REC_ID = 1, REC_TALLY_TRY = 2, REC_TALLY_ACK = 3, REC_FAIL = 4 };
/* REC_FAIL: a counter call that failed (t0_ns its start, t_ns when the
 * client saw it fail), value its class: */
enum {
  CH_FAIL_ELOG = 1,      /* refused: the owner's log failed (LC_ELOG) */
  CH_FAIL_NOSTANDBY = 2, /* refused: no standby in sync (ENOSTANDBY) */
  CH_FAIL_STANDBY = 3,   /* refused: not the primary (ESTANDBY) */
  CH_FAIL_OTHER = 4      /* timed out, connection lost, any other error */
};

/* One acknowledgement (or tally attempt), 40 bytes, one write(2) each. */
typedef struct ch_rec {
  int64_t t_ns;    /* CLOCK_MONOTONIC when it happened */
  int64_t t0_ns;   /* REC_ID: when the call began */
  int64_t value;   /* REC_ID: the block's last id; tallies: the delta */
  uint32_t n;      /* REC_ID: the block's length */
  uint32_t client; /* the client (thread or connection) */
  uint8_t kind;
  uint8_t obj; /* counter or tally index */
  uint8_t pad[6];
} ch_rec;

/* Client numbers: embedded incarnation K thread T is K * 256 + T; daemon
 * client process P connection C is CH_DCLIENT_BASE + P * 256 + C. */
#define CH_DCLIENT_BASE 0x40000000u

/* The control block: a small file mapped by the driver and one owner (and
 * the shim in it), so its fields survive the owner's death. */
typedef struct ch_ctl {
  _Atomic int64_t fail_until_ns;  /* shim: log writes fail until then */
  _Atomic uint64_t writes_failed; /* shim: writes failed on purpose */
  _Atomic int pause_req;          /* worker: next allocation pauses */
  _Atomic int paused;             /* worker: an allocation is paused */
  _Atomic int pause_release;
  _Atomic uint64_t pauses; /* allocations actually paused */
  _Atomic int ready;       /* worker: log open, clients running */
  _Atomic int prune_req;   /* worker: prune now (1), done (2) */
  _Atomic int64_t pruned_below[CH_EMB_COUNTERS]; /* records below these
                                       values may have been pruned */
  _Atomic uint64_t calls, calls_failed, ids_attempted, ids_acked;
  _Atomic uint64_t calls_lost; /* failed: connection closed under it */
  _Atomic uint64_t tally_calls, tally_failed;
  _Atomic uint64_t calls_elog; /* failed: refused with LC_ELOG ("SERVER_ERROR
                                  ELOG" through logcounterd) */
  _Atomic uint64_t log_failures, log_recoveries; /* worker: its handles'
                                  lc_get_log_status, summed over incarnations */
  _Atomic int log_failed; /* worker: its log was not OK at its last look */
  _Atomic uint64_t calls_estandby;   /* dclient: refused ESTANDBY (a standby) */
  _Atomic uint64_t calls_enostandby; /* refused ENOSTANDBY (no standby) */
  _Atomic uint64_t switches;         /* moved to the other daemon */
} ch_ctl;

/* util.c */
int64_t ch_now_ns(void);
void ch_sleep_ms(int64_t ms);
uint64_t ch_rand(uint64_t *state); /* splitmix64 */
uint64_t ch_rand_between(uint64_t *state, uint64_t lo, uint64_t hi);
ch_ctl *ch_ctl_map(const char *path, bool create);
int ch_rec_write(int fd, const ch_rec *r);
const char *ch_counter_name(int i); /* "e0".."e2", "d0", "d1" */
const char *ch_tally_name(int i);   /* "t0" "t1" "u0" "u1" */
int ch_mc_command(int port, const char *cmd, char *reply, size_t size);
long long ch_mc_get(int port, const char *key);
int ch_mc_set(int port, const char *key, long long v);
int ch_port_free(void);
bool ch_port_open(int port);
/* A socket connected to the loopback port with send and receive timeouts
 * of timeout_ms, or -1. */
int ch_connect_port(int port, int timeout_ms);
/* The "stats" reply of the logcounterd on port, whole, in buf; false if
 * none came within ms (procs.c). */
bool ch_port_stats(int port, int ms, char *buf, size_t size);
uint64_t ch_block_size(uint64_t *rng); /* 1 .. 100, mostly 1 */

/* worker.c, dclient.c */
int ch_worker_main(int argc, char **argv);
int ch_dclient_main(int argc, char **argv);
/* model.c: "chaos model DIR", the power-cut windows' premise checked on
 * this LevelDB (and "model-write", its child under the shim). */
int ch_model_main(int argc, char **argv);
int ch_model_write_main(int argc, char **argv);

/* cut.c: applies the cut to DIR from the shim's STATE file and backup
 * directory BAK; fills a one-line summary.  0 or -1. */
int ch_cut_apply(const char *state, const char *bak, char *summary,
                 size_t size);

/* ---- the driver (chaos.c, procs.c, nemesis.c, check.c) ---- */
enum {
  F_MC_KILL,
  F_MC_FLUSH,
  F_MC_FREEZE,
  F_OWNER_KILL,
  F_PAUSE,
  F_WRITE_FAIL,
  F_POWER_CUT,
  F_MC_REWIND,
  F_OWNER_RESTART,
  F_PRUNE,
  F_DISK_FULL, /* the faultfs shim's enospc on an owner's log directory */
  F_IO_ERROR,  /* its eio, short, fsync or eio-once */
  /* --standby only: */
  F_PRIMARY_LOSS, /* the primary killed, its directory deleted, the standby
                     promoted, a fresh standby started */
  F_PARTITION,    /* the primary stopped, the standby promoted, the old one
                     resumed a moment, then killed; a fresh standby */
  /* --cluster only (cluster.c): three nodes on etcd */
  F_CL_KILL,    /* the primary SIGKILLed, restarted once another leads */
  F_CL_FREEZE,  /* the primary SIGSTOPped past its lease, then resumed */
  F_CL_DISK,    /* the primary SIGKILLed, its log directory deleted and
                   memcached flushed; restarted empty */
  F_CL_CUT,     /* a node's proxy to etcd cut (the primary's), healed */
  F_CL_STANDBY, /* the synchronous standby SIGKILLed, restarted */
  F_CL_ETCD,    /* etcd SIGKILLed, restarted on its data */
  F_KINDS
};
#define CH_STANDBY_KINDS (1u << F_PRIMARY_LOSS | 1u << F_PARTITION)
#define CH_CLUSTER_KINDS                                                     \
  (1u << F_CL_KILL | 1u << F_CL_FREEZE | 1u << F_CL_DISK | 1u << F_CL_CUT |  \
   1u << F_CL_STANDBY | 1u << F_CL_ETCD)
/* The kinds --cluster allows besides its own: the memcached faults. */
#define CH_CLUSTER_ALSO                                                      \
  (1u << F_MC_KILL | 1u << F_MC_FLUSH | 1u << F_MC_FREEZE | 1u << F_MC_REWIND)
/* Does a fault of this kind stop (kill, freeze, cut off) logcounterd's
 * primary: a failover may follow, its unflushed tally changes may be
 * lost? */
bool ch_kind_stops_primary(int kind);
enum { T_NONE, T_EMB, T_LCD }; /* fault targets */

#define CH_MC_MAX 3 /* memcached servers in the multi-server mode */

typedef struct ch_fault {
  int64_t t_ns, end_ns; /* when it began and ended */
  int kind, target;
  int server;     /* a memcached fault's server (--servers) */
  int64_t arg_ms; /* duration or delay */
  int back;       /* memcached-rewind: to values read this many
                             faults ago (0: read now, set after arg_ms) */
  bool missed;    /* not carried out (a pause no allocation reached, a
                     prune with no worker, a disk fault that hit no call) */
  bool failover;  /* --cluster: another node became the primary */
  int64_t fo_ns;  /* when it was first seen primary */
  int mode;       /* io-error: index into the shim's modes (nemesis.c) */
  uint64_t hits;  /* disk faults: calls the shim failed meanwhile */
  /* power-cut: when the owner was dead (before the cut and the restart;
   * end_ns comes after the restart, and the new owner may have handed out
   * ids above its reservation by then); 0 for the other kinds */
  int64_t stop_ns;
  /* owner-kill, power-cut: when the new owner was started (what clients
   * record as acknowledged before it, the killed owner answered); 0 for
   * the other kinds */
  int64_t restart_ns;
} ch_fault;

typedef struct ch_run {
  /* settings */
  uint64_t seed;
  int seconds, max_seconds, threads, dclients, conns, timeout_ms;
  uint64_t min_ids;
  unsigned only; /* fault kinds allowed, a bit each; 0: all */
  bool baseline, keep, verbose;
  bool standby; /* --standby: logcounterd is a primary and a standby */
  const char *standby_timeout; /* --standby-timeout, passed on (or NULL) */
  bool cluster; /* --cluster: three logcounterd nodes on etcd (cluster.c) */
  const char *leader_ttl; /* --leader-ttl, passed on (default 2s) */
  char tool[512];         /* tests/daemon/cluster_tool.py (the proxies) */
  char etcd_dir[512];     /* etcd's data (on /dev/shm when there is one) */
  char dir[512], self[512], daemon[512], shim[512], faultfs[512], cli[512];
  const char *schedule_out;
  /* state */
  int nmc; /* memcached servers, 1..CH_MC_MAX (--servers) */
  int mc_port[CH_MC_MAX], lcd_port;
  int mc_pid[CH_MC_MAX], emb_pid, lcd_pid, dcl_pid[8];
  /* --standby: two slots, each a data port, a replication port and an
   * admin socket; the primary runs in slot prim (its port is lcd_port, its
   * pid lcd_pid), the standby in the other (sby_pid).  gen[s] names slot
   * s's directory: lcd (0) or lcd.G; a fresh standby gets a new one. */
  int sb_port[2], sb_repl[2], sb_gen[2], prim, sby_pid, gens;
  unsigned promotions, promote_failures, sby_starts;
  unsigned sync_waits_failed; /* ch_wait_sync calls that timed out */
  /* --cluster: slot s is node "nS": data, replication and proxy ports,
   * pids (the node, its proxy to etcd); prim the slot last seen primary
   * (-1: none); etcd's client and peer ports and pid */
  int cl_port[3], cl_repl[3], cl_xport[3], cl_pid[3], cl_xpid[3], cl_prim;
  bool cl_stopped[3], cl_cut[3];
  int etcd_port, etcd_peer, etcd_pid;
  unsigned failovers, settle_timeouts, node_starts, etcd_starts;
  unsigned idle_failovers; /* the primary changed between faults */
  unsigned alone_stops; /* clean stops that exited 1: a primary left
                           alone at the end could not close its log */
  bool mc_frozen[CH_MC_MAX];
  int emb_inc; /* embedded incarnations started */
  int lcd_inc; /* logcounterd's starts */
  uint64_t lcd_log_failures, lcd_log_recoveries; /* its stats' log_failures
                               and log_recoveries, summed over its starts */
  ch_ctl *emb_ctl, *lcd_ctl, *dcl_ctl;
  ch_fault *faults;
  size_t nfaults, cap;
  struct ch_start { /* each start of an owner, and its durability */
    int64_t t_ns;
    int target;
    bool sync;
  } * starts;
  size_t nstarts, scap;
  unsigned unexpected;         /* owner exits nobody caused */
  unsigned stuck_logs; /* owners whose log was still failed well after
                          every fault was healed (chaos.c, at the end) */
  unsigned open_failures;      /* owner could not open its log */
  unsigned flush_failed_stops; /* logcounterd's clean stops that exited 1
                                   because the final tally flush failed */
  long long snap[4][CH_COUNTERS + CH_TALLIES];       /* memcached's values at */
  signed char snap_srv[4][CH_COUNTERS + CH_TALLIES]; /* and the server */
  size_t nsnap; /* the last faults' starts */
  char findings[2048];
  int64_t start_ns;
  int64_t wall_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at start_ns: a
                      ledger entry's time (wall clock) on the run's clock */
  /* the checker's: every failed counter call (REC_FAIL), by t_ns */
  struct ch_failed {
    int64_t t0_ns, t_ns;
    int obj, why; /* counter, CH_FAIL_* */
  } * failed;
  size_t nfailed, fcap;
} ch_run;

const char *ch_fault_name(int kind);
const char *ch_target_name(int target);
/* A disk fault's word for the shim's control file ("enospc", "eio", ...);
 * NULL for the other kinds. */
const char *ch_fault_mode(const ch_fault *f);
/* Why f was not carried out (f->missed). */
const char *ch_missed_why(const ch_fault *f);
void ch_note(ch_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* procs.c */
/* The mode of an owner's n-th start: "default", "sync" or "prefetch"
 * (default durability with segments: 256 values for the embedded worker,
 * auto for logcounterd); the baseline alternates the first two.
 * Prefetch counts as synced: its segment records are. */
const char *ch_owner_mode(int incarnation, bool baseline);
void ch_started(ch_run *r, int target, bool sync);
/* Forks and execs argv, its stdout and stderr appended to the run
 * directory's LOG, with the extra "K=V" strings env (NULL-terminated, or
 * NULL); the child dies with the driver.  Its pid, or -1. */
int ch_spawn(const ch_run *r, char *const argv[], const char *log,
             const char *const env[]);
/* Waits at most ms until port accepts; false if not or pid ended. */
bool ch_wait_port(int port, int pid, int ms);
/* A logcounterd command line: what every start has (the log, memcached,
 * the timeout, the listener, 4 loops, this start's owner mode: lcd_inc's),
 * then ch_lcd_arg's pairs; argv stays NULL-terminated. */
typedef struct ch_lcd_cmd {
  char mc[160], to[16];
  char *argv[40];
  int n;
  const char *mode;
} ch_lcd_cmd;
void ch_lcd_cmd_init(ch_run *r, ch_lcd_cmd *c, const char *db,
                     const char *listen);
void ch_lcd_arg(ch_lcd_cmd *c, const char *opt, const char *val);
/* Starts memcached server s (0..nmc-1). */
int ch_start_memcached(ch_run *r, int s);
/* The libmemcached config naming every server. */
void ch_mc_config(const ch_run *r, char *buf, size_t size);
int ch_start_emb(ch_run *r);
int ch_start_lcd(ch_run *r);
int ch_start_dclients(ch_run *r);
/* --standby: the standby (in the slot that is not the primary's) on its
 * directory, or on a fresh one (fresh); waits for its port. */
int ch_start_sby(ch_run *r, bool fresh);
/* The primary's log directory, relative to the run directory ("lcd", or
 * "lcd.G" with --standby). */
const char *ch_lcd_dir(const ch_run *r);
/* The admin socket of slot s. */
void ch_admin_path(const ch_run *r, int s, char *buf, size_t size);
/* Waits (at most ms) until the primary's stats say its standby is in
 * sync; false if not. */
bool ch_wait_sync(ch_run *r, int ms);
/* Runs argv (output appended to LOG) and waits at most timeout_ms: its
 * exit status, or -1 (could not run, killed by a signal, or killed after
 * the timeout). */
int ch_run_wait(ch_run *r, char *const argv[], const char *log,
                int timeout_ms);
void ch_kill_wait(int *pid, int sig);
void ch_reap(ch_run *r);
void ch_stop_all(ch_run *r);
void ch_path(const ch_run *r, char *buf, size_t size, const char *name);
/* The faults the shim injected into target's processes so far (the sum of
 * their hits files, hits/emb-N and hits/lcd-N). */
uint64_t ch_owner_hits(const ch_run *r, int target);
/* Adds the running logcounterd's log_failures and log_recoveries (its
 * stats) to the run's; called just before it is stopped or killed. */
void ch_lcd_log_stats(ch_run *r);
/* Is logcounterd up, with its log OK (its stats' log_state)? */
bool ch_lcd_log_ok(ch_run *r);
/* nemesis.c */
/* only: a bit per kind allowed (0: all). */
/* standby: the --standby kinds are drawn too, and the daemon's disk and
 * power faults go to the embedded worker (see nemesis.c). */
/* cluster: only the --cluster kinds (and those --only names). */
void ch_schedule_next(uint64_t *rng, size_t index, int timeout_ms,
                      unsigned only, bool standby, bool cluster, ch_fault *f,
                      int64_t *gap_ms);
int ch_fault_kind(const char *name);
/* cluster.c (--cluster): etcd, the proxies and the three nodes started
 * (the first primary seen); a cluster fault injected (ch_inject calls
 * it); every node and proxy brought back (ch_heal); the nodes stopped,
 * the primary first (SIGTERM); everything killed; a child that ended by
 * itself (true if it was one of the cluster's, restarted). */
int ch_cl_start(ch_run *r);
void ch_cl_inject(ch_run *r, ch_fault *f);
void ch_cl_heal(ch_run *r);
void ch_cl_stop(ch_run *r);
void ch_cl_kill_all(ch_run *r);
bool ch_cl_reaped(ch_run *r, int pid, const char *how);

int ch_inject(ch_run *r, ch_fault *f);
void ch_heal(ch_run *r);
/* check.c: reads every record and prints the report; 0 when valid. */
int ch_check(ch_run *r, int64_t elapsed_ns);
int ch_owner_of(int obj); /* T_EMB or T_LCD */
/* tallywin.c: may a change of owner's tallies acknowledged at t have been
 * lost unmeasured by a kill of owner (after the owner's last record)? */
bool ch_tally_before_kill(const ch_run *r, int owner, int64_t t);
/* One acknowledged block, as the checker sees it. */
typedef struct ch_blk {
  int64_t first, last, t_ns, t0_ns;
  uint32_t client;
} ch_blk;
/* logged.c: reads counter c's records back from its owner's log and
 * accounts for each acknowledged block (sorted by first). */
typedef struct ch_logged {
  uint64_t unlogged, synced_lost, cut_away, pruned, corrupt, errors;
  uint64_t failover; /* --standby: not in the surviving log, but in its
                        failover gap (acked by a lost primary) */
  char example[200], error[1400];
} ch_logged;
/* A run of ids between two acknowledged blocks that nobody received, and
 * the fault kind check.c's blame() names for it (F_KINDS: none); t_lo and
 * t_hi: when the blocks on either side of it were acknowledged (the one
 * below and the one above it). */
typedef struct ch_gap {
  int64_t first, last;
  int kind;
  int64_t t_lo, t_hi;
} ch_gap;
/* What a power cut can take of one counter (default durability): the
 * records written since its last synced reservation, which is written once
 * per window of ids (reserve, 1000 by default, or 16 x the block for large
 * blocks: at most 16 x CH_BLOCK_MAX here), with the blocks in flight;
 * not the unsynced tail of an earlier stop of the owner (a kill, a
 * restart, a reopen: the next open makes it durable and syncs the
 * directory).  So what it takes lies near the largest id acknowledged
 * before the cut: the checker allows missing acknowledged blocks
 * CH_CUT_WINDOW below the largest acknowledged when the fault began and
 * above the largest acknowledged when the owner was dead (ch_fault.stop_ns:
 * not the fault's end, after the restart, whose first ids lie above the
 * reservation) (two windows, for the blocks in flight and a reservation
 * not yet moved), nothing elsewhere (logged.c, cuts_of); the holes it
 * leaves the restart explains (ledger.c).  "chaos model" checks the
 * premise on this LevelDB (model.c). */
#define CH_BLOCK_MAX 100 /* ch_block_size's largest */
#define CH_CUT_WINDOW (2 * 16 * CH_BLOCK_MAX)
typedef struct ch_cut {
  int64_t end_ns; /* the cut's end: the owner was dead by then */
  int64_t lo;     /* the counter's largest id acknowledged when it began */
  int64_t hi;     /* and when the owner was dead (stop_ns) */
} ch_cut;
/* Is [first, last] within one of the windows (and, t_ns >= 0,
 * acknowledged by its end)? */
bool ch_cut_covers(const ch_cut *k, size_t nk, int64_t first, int64_t last,
                   int64_t t_ns);
/* ledger.c: what the gap ledgers say, over every counter.  Causes are
 * indexed by LC_GAP_* (1..7); index 0 is "in no ledger entry". */
#define CH_CAUSES 8
typedef struct ch_ledger {
  bool read; /* at least one counter's ledger was read */
  uint64_t entries[CH_CAUSES], ids[CH_CAUSES]; /* entries between records */
  uint64_t owner_ids[3][CH_CAUSES]; /* the same by owner (T_EMB, T_LCD) */
  uint64_t unexplained, holes;      /* ids in no record and no entry */
  uint64_t unexplained_acked;       /* of those, acknowledged (their
                                         records a power cut took) */
  uint64_t conflicts;               /* overlaps, misplaced voids, undecodable
                                 entries, acknowledged ids in a gap */
  uint64_t c_unexplained[CH_COUNTERS], c_conflicts[CH_COUNTERS];
  uint64_t excused, excused_holes; /* unexplained ids in holes within a
                                 power cut's window (ch_cut_covers) */
  uint64_t unexcused_max;          /* the largest hole on a cut owner's
                                 counter that no cut's window covers */
  uint64_t below_oldest;  /* entries under a pruned counter's oldest
                                 record (not checked) */
  uint64_t acked_restart; /* acknowledged ids in restart gaps: their
                                 records a power cut took */
  uint64_t acked_failover; /* acknowledged ids in failover gaps: handed
                                 out by a lost primary (--standby) */
  /* the acknowledged gaps: ids by fault blamed (F_KINDS: none) and cause
   * (0: in no entry, and in no record: unexplained) */
  uint64_t ack[F_KINDS + 1][CH_CAUSES];
  uint64_t ack_handed[F_KINDS + 1]; /* in a record: handed out, never
                                         acknowledged */
  uint64_t ack_open[F_KINDS + 1];   /* of those, in an open segment */
  uint64_t ack_pruned[F_KINDS + 1]; /* below a pruned counter's oldest */
  /* acknowledged gaps holding ids of a cause that no fault near them in
   * time (nor a failed call, where one explains it) can produce
   * (ch_gap_unfit): gaps, ids, and the first one told; of how many
   * gaps with entries checked */
  uint64_t mislabeled, mislabeled_ids, c_mislabeled[CH_COUNTERS];
  uint64_t gaps_checked;
  uint64_t gaps_blamed_fit; /* of those, the fault blamed alone fits */
  char example[400], conflict[400], mislabel[600];
} ch_ledger;
/* Checks counter c's records (sorted, n of them) and ledger entries
 * (ne, bad of them undecodable) against each other, and the acknowledged
 * blocks and gaps (both sorted by first) against them; adds to out. */
struct lc_record;
typedef struct ch_entry {
  int64_t first, last;
  int cause;
  int64_t time_us; /* when the library wrote it (lc_gap.time_us) */
} ch_entry;
void ch_check_ledger(const ch_run *r, int c, const struct lc_record *rec,
                     size_t n, const ch_entry *e, size_t ne, uint64_t bad,
                     const ch_blk *blocks, size_t nb, const ch_gap *gaps,
                     size_t ng, const ch_cut *cuts, size_t ncuts,
                     ch_ledger *out);
/* ledger_report.c: prints the ledger's lines of the report; true when it
 * holds (nothing unexplained, no conflict, every cause fits the faults of
 * the run, and each acknowledged gap's causes the faults near it).  why
 * (wlen bytes) gets what failed, "; "-separated, or "". */
bool ch_ledger_report(const ch_run *r, const ch_ledger *l, char *why,
                      size_t wlen);
/* The per-gap check: why no fault near acknowledged gap g of counter c in
 * time (within CH_CAUSE_SLACK_NS of its neighbours' acknowledgements, or
 * of the cause's first entry in it where that was written earlier, as a
 * prefetched segment's is: ledger.c's gap_causes; on c's owner or on
 * memcached), nor a failed call of the owner then (where
 * one explains it), can have produced cause there; NULL when one can.
 * The rules (each cause and what makes it) are ledger_report.c's. */
#define CH_CAUSE_SLACK_NS 2000000000LL
const char *ch_gap_unfit(const ch_run *r, int c, const ch_gap *g, int cause);
/* Does the fault blamed for g alone (its kind, near it; no failed call)
 * explain cause there?  Reported, not required: several faults are often
 * near one gap, and blame() names one. */
bool ch_gap_fits_blamed(const ch_run *r, int c, const ch_gap *g, int cause);
void ch_check_logged(const ch_run *r, int c, const ch_blk *blocks, size_t n,
                     const ch_gap *gaps, size_t ngaps, ch_logged *out,
                     ch_ledger *led);
/* A tally's total, pending, losses and lost amount, from the log of who
 * ("lcd"). */
int ch_log_tally(const ch_run *r, const char *who, int t, int64_t *total,
                 int64_t *pending, uint64_t *losses, uint64_t *lost);

#endif
