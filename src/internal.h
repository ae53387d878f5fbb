/*
 * internal.h - the map of liblogcounter: its folders, bottom to top, and
 * what each holds.  A folder's files call only their own folder and the
 * folders listed before it; where a lower one must reach up, the higher
 * one installs a hook (the log's lc__log_hook, its on_fail).  Each folder
 * has one header, its face to the folders above (FOLDER/FOLDER.h, with
 * the contracts); handle.h holds struct lc, the handle, whose parts are
 * the folders' types.  `make test` checks the rule on the objects (nm):
 * tests/layers.py fails on a call that goes up, a cycle between folders,
 * or a name whose prefix does not name its folder or file.
 *
 * Internal non-static names start with lc__, then the folder or file they
 * live in: lc__log_* is in log/, lc__seg_* in counter/segment.c and
 * seg_fast.c, lc__key_* in base/keys.c.  Public ones (lc_*) are declared
 * in include/logcounter.h and defined in the folder of what they do.
 *
 *   base/     errors.c   the error table, the thread's failure detail
 *             keys.c     key and record formats (format.h)
 *             clock.c    the clocks
 *             names.c    the hash table of names (counters and tallies)
 *             latency.c  histograms of the floor writes' latency
 *             random.c   random bits; stripe.c  each thread's stripe
 *   net/      sock.c     TCP addresses, listen, connect, poll with a timeout
 *             ssl.c      OpenSSL on our non-blocking sockets
 *             aconn.c    the admin channel's line I/O (its protocol)
 *   cache/    cache.c    memcached through libmemcachedutil's pool
 *             cache_pipe.c  many commands in one round trip
 *   client/   remote.c   remote mode: the calls answered by a logcounterd
 *             tls.c      remote mode over TLS, the admin relay
 *             admin.c    the admin channel's client
 *   log/      log.c      the LevelDB log: open, lock, reads, reverse seek
 *             log_write.c  its writes, one group at a time; the first
 *                        failed write is the last
 *             recover.c  reopening a failed log
 *             identity.c the log's identity
 *             iter.c     iterators over a counter's records or the log
 *             prune.c    deleting old records in batches
 *             retain.c   retention: the log's counters, the pruning thread
 *             backup.c   lc_backup, restored logs and pending counters
 *   repl/     wire.c     the replication stream's frames; wire_tls.c over
 *                        mutual TLS; auth.c its HMAC handshake
 *             replicate.c  the primary's side (installs the log's hook)
 *             follow.c   the standby's side
 *             cluster.c  automatic failover's hooks: the lease deadline
 *                        that fences allocations, the standby's address
 *                        and approval, the log-kind probe, the term record
 *   counter/  in layers, each calling only those below it:
 *             first.c    lc_next_each: many counters, first uses batched
 *             records.c  lc_iter_open, lc_ledger_open: settled, then read
 *             next.c     lc_next_n's way in: remote, prefetch or counter
 *             counter_ops.c  the operations that run alone: current,
 *                        restore, advance, release, adopt, failover, void
 *             prefetch.c ids from held segments, fetches, the prefetcher
 *             counter.c  per-counter state, the name table, load, claim,
 *                        seed, increment, restore
 *             close.c    a counter leaving memory: lc_close, eviction
 *             the leaves, which take the counter they work on:
 *             segment.c  prefetched segments; seg_fast.c their lock-free
 *                        window and the counter's lock
 *             ledger.c   the gap ledger: why values are missing, voids
 *             claim.c    one owning log per counter, kept in memcached
 *             rare.c     the state most counters never fill, on demand
 *             and beside them:
 *             evict.c    idle eviction: the calls' gate, the passes
 *   tally/    tally.c    tallies: add, get, state; tally_flush.c the
 *                        write-behind flushes; tally_list.c listing;
 *                        tally_rec.c their records; tally_evict.c
 *                        idle tallies leaving memory (evict.c's hooks)
 *   core/     handle.c   lc_open / lc_close, options, stats
 *             promote.c  promotion of a standby
 *             admin_srv.c, admin_ops.c  the admin socket's server, verbs
 */
#ifndef LC_INTERNAL_H
#define LC_INTERNAL_H

/* Bottom to top; each header includes the ones below it. */
#include "base/base.h"
#include "net/net.h"
#include "cache/cache.h"
#include "client/client.h"
#include "log/log.h"
#include "repl/repl.h"
#include "counter/counter.h"
#include "tally/tally.h"
#include "handle.h"
#include "core/core.h"

#endif
