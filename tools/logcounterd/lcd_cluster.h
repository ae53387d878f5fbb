/*
 * lcd_cluster.h - automatic failover on etcd (--etcd, lcd_cluster.c):
 * which node is the primary (the holder of /logcounter/CLUSTER/leader,
 * bound to its lease), the others following it as standbys, the one
 * named in /logcounter/CLUSTER/sync taking over when the leader key
 * goes, and fencing (a primary hands out nothing once its lease may have
 * expired: lc_set_lease_deadline).
 *
 * Call order, from main: lcd_cluster_options before parse_options,
 * lcd_cluster_check after it, lcd_cluster_join before open_log,
 * lcd_cluster_start after it (before the loops serve), lcd_cluster_stop
 * before lc_close, lcd_cluster_leave after it.  Without --etcd each is a no-op returning 0.
 */
#ifndef LCD_CLUSTER_H
#define LCD_CLUSTER_H

#include "lcd_metrics.h"

/* Takes --etcd URL[,URL...], --cluster NAME, --node NAME,
 * --leader-ttl DURATION, --etcd-cacert FILE, --etcd-cert FILE,
 * --etcd-key FILE, --etcd-user USER and --etcd-password-file FILE out
 * of argv (*argc and argv compacted, the rest
 * left in order for getopt), keeping the full argv for a re-exec.
 * 0, or EXIT_USAGE with a message on stderr. */
int lcd_cluster_options(int *argc, char **argv);
/* After parse_options: the cluster's needs of the other settings
 * (--replication-listen, no --standby-of, --standby-mode required).
 * 0 or EXIT_USAGE. */
int lcd_cluster_check(const lcd_settings *set);
/* Before open_log: connects to etcd (waiting while it cannot be
 * reached), takes a lease and either wins the leader key (when it is
 * absent and /sync names this node or nothing) or learns the leader, and
 * sets set->standby_of to what open_log must follow (the leader's
 * replication address; for a standby's copy that won, its own, so that
 * lcd_cluster_start can promote it).  0 or EXIT_RUNTIME. */
int lcd_cluster_join(lcd_settings *set);
/* Async-signal-safe: a SIGTERM/SIGINT came before the daemon's own
 * handlers were in place; lcd_cluster_join stops waiting (for etcd, for
 * the leader's lease) and returns 0 at once, its caller seeing the stop. */
void lcd_cluster_interrupt(void);
/* After open_log, before any request is served: sets the lease deadline,
 * promotes a standby's copy that won, and starts the cluster's thread.
 * 0 or EXIT_RUNTIME (the leadership given up). */
int lcd_cluster_start(lcd_server *s);
/* Stops the thread (the lease is no longer renewed; the deadline still
 * fences a close that outlasts it). */
void lcd_cluster_stop(lcd_server *s);
/* After lc_close: revokes the lease, so that the leader key of a primary
 * goes at once and its synchronous standby takes over without waiting
 * for the TTL. */
void lcd_cluster_leave(void);
/* A standby's forwarding of an allocation its data port received: one
 * "incr NAME N" to the primary's data port over this thread's own
 * connection (each worker keeps one), the answer's block in *first.  0;
 * the primary's refusal (its code); LC_ESTANDBY when this node is not a
 * standby, knows no primary to forward to (the primary's data port with
 * --auth-file or TLS is not forwarded to), or the primary did not answer
 * within 2 s.  Worker threads (it blocks); the ids keep the order of the
 * calls of one thread. */
int lcd_cluster_forward(const char *name, uint64_t n, int64_t *first);
/* lcd_cluster_forward.c, for lcd_cluster.c: the primary's data address
 * ("" or NULL: none; set before the workers run), whether this node
 * forwards now (a standby), and the figures (forwarded, refused). */
void lcd_forward_set(const char *data_addr);
void lcd_forward_enable(int on);
void lcd_forward_counts(uint64_t *forwarded, uint64_t *errors);
/* The cluster's figures for "stats" and /metrics (none without --etcd). */
void lcd_cluster_figures(lcd_server *s, lcd_fig_fn fn, void *arg);

#endif
