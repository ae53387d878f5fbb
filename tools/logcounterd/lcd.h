/*
 * lcd.h - the map of logcounterd (the LogCounter service): its parts, their
 * headers, and how they meet.  No file includes it: each .c includes the
 * headers of what it uses (below), each header says what it is for.
 *
 *   logcounterd.c  logging, signals, startup and the orderly shutdown
 *                  (drain, lc_close, pidfile)
 *   lcd_options.c  the settings' defaults, --help and the options
 *   lcd_loops.c    the event-loop threads, handing them connections and
 *                  commands (drain, close)
 *   lcd_conn.c     connections: framing and parsing requests (lcd_proto.c),
 *                  timeouts, closing
 *   lcd_jobs.c     incr/get jobs and the replies, in request order
 *   lcd_pool.c     running jobs: on the loop thread when the library
 *                  answers quickly, else on the worker threads
 *   lcd_listen.c   the TCP and unix-socket listeners, --max-connections
 *   lcd_tls.c      TLS on the TCP listeners and /metrics: the SSL_CTX, its
 *                  SIGHUP reload
 *   lcd_stats.c    the "stats" and "stats settings" replies
 *   lcd_flush.c    the tally flusher thread (--flush-interval)
 *   lcd_notify.c   READY=1 / STOPPING=1 to systemd (sd_notify)
 *   lcd_proto.c    the request parser (pure functions; lcd_proto.h)
 *   lcd_metrics.c  --metrics-listen: Prometheus text at /metrics, on its
 *                  own thread (lcd_prom.c writes it; lcd_metrics.h)
 *   lcd_relay.c    "admin" over TLS: the connection becomes a relay to
 *                  --admin-socket
 *   lcd_gate.c     what a connection may do: the --auth-file handshake and
 *                  the --rights-file checks, called from lcd_conn.c and
 *                  lcd_mget.c (lcd_auth.h)
 *   lcd_admit.c    unfinished connections (TLS or auth handshake to come):
 *                  --max-unfinished[-per-address], the oldest dropped
 *   lcd_cluster.c  --etcd: the leader key on a lease, /sync, fencing by
 *                  the lease's deadline, promotion, re-exec to follow a
 *                  new primary (lcd_etcd.c: etcd's JSON gateway over
 *                  libcurl and json-c; lcd_cluster_forward.c: a standby
 *                  forwards allocations to the primary)
 *   lcd_binary.c   the memcached binary protocol's frames (pure; fuzzed);
 *                  lcd_binary_conn.c serves them on a connection whose
 *                  first byte is 0x80, lcd_sasl.c its SASL PLAIN
 *   lcd_auth.c     the users and password digests, SIGHUP reloads, the
 *                  failure delays per peer address; lcd_rights.c the
 *                  rights and the names each user used; lcd_auth_parse.c
 *                  their pure parsers (fuzzed)
 *
 * The headers, by concern, lowest first (a header includes only those
 * above it):
 *
 *   lcd_settings.h the settings and limits, lcd_log, lcd_now
 *   lcd_proto.h    the protocol: the request parser (pure)
 *   lcd_auth.h     the user and rights tables and their pure parsers
 *   lcd_tls.h      TLS contexts and bufferevents
 *   lcd_notify.h   sd_notify
 *   lcd_job.h      jobs: requests become jobs, replies in request order
 *                  (lcd_jobs.c, lcd_mget.c, lcd_meta_reply.c)
 *   lcd_counters.h stats: each loop's figures and the "stats" reply
 *   lcd_pool.h     the worker threads and the inline runs
 *   lcd_flush.h    the tally flusher
 *   lcd_conn.h     a client connection (lcd_conn.c)
 *   lcd_server.h   connections and loops: the server, its loops, the
 *                  listeners (lcd_loops.c, lcd_listen.c)
 *   lcd_gate.h     access control: the handshake, rights, the admin relay
 *                  (lcd_gate.c, lcd_relay.c)
 *   lcd_admit.h    admission: the bound on unfinished connections
 *   lcd_metrics.h  the figures as one list, /metrics
 *   lcd_binary.h   the binary protocol: frames, serving, SASL
 *   lcd_etcd.h, lcd_cluster.h  the etcd client; the cluster
 *
 * The daemon uses liblogcounter's public API only (include/logcounter.h).
 *
 * Threads, as in memcached: --threads event loops (default: the CPUs).
 * Loop 0 runs on the main thread and also owns the listeners and the
 * signals; it gives each new connection to the next loop in turn, and
 * that loop alone touches the connection from then on (no locks).  Jobs
 * parsed in one loop iteration are handled together at its end (the
 * last-priority submit event): those the library serves quickly
 * (lc_next_quick: a counter in use, not sync; tally changes; gets) run
 * right there, the jobs of one counter sharing one lc_next_n split in
 * order, and are answered at once, with no thread hand-off; the library
 * merges again the calls that loops make at once for one counter.  Slow
 * jobs (first use of a name, sync durability, --no-coalesce) and work
 * beyond LCD_INLINE_CALLS calls per iteration go to --workers worker
 * threads through one queue (one lock, one wake-up per batch); a worker
 * also takes every queued job of the same counter; a finished job goes
 * back to its loop's done list and wakes that loop with event_active
 * (thread-safe after evthread_use_pthreads).  A call on a loop that stalls
 * (memcached slow or down) sends that loop's work to the workers for a
 * second.
 *
 * Ordering: a connection keeps its jobs in request order (c->jobs) and
 * writes a job's replies only once every job before it is answered, so
 * replies go out in request order.  Up to LCD_CONN_JOBS jobs of one
 * connection are in flight at once, but never two of the same counter or
 * tally (a later request of it waits, unparsed, until the earlier job is
 * answered), so each connection's incr answers of a counter strictly
 * increase; a get waits until nothing else is in flight and holds the next
 * request back until it is answered; a request answered on the spot
 * (stats, version, an error) waits until no job is in flight.  A run of
 * pipelined "incr NAME n" lines for the same counter that is already
 * buffered becomes one job (one lc_next_n for the total, split in order).
 *
 * Back-pressure (lcd_conn.c): a connection is read only while fewer than
 * LCD_INPUT_MAX bytes of it are buffered (reading is switched off, not
 * spun on: the rest waits in the kernel's socket buffer and the client's
 * writes block); parsing stops while more than LCD_OUTPUT_MAX bytes of
 * replies wait to be written; a client whose replies make no progress for
 * --reply-timeout seconds is closed and logged.  So one connection never
 * holds more than about LCD_INPUT_MAX + LCD_OUTPUT_MAX bytes and
 * LCD_CONN_JOBS jobs, and never delays another.
 * --no-coalesce (settings.coalesce = 0) turns off every merge (the
 * pipelined run of one counter, the pipelined run of first uses (MANY
 * jobs), the worker's same-counter take, its batch of first uses
 * (run_each), and the library's, with lc_options.batch_max = 1): every
 * request costs its own memcached incr.
 *
 * Tallies: "incr/decr tally:NAME D" is a job; like incr, a buffered run
 * of changes of one tally becomes one job and a worker takes every queued
 * job of the same tally, and the changes share ONE lc_tally_add_total of
 * their sum (one by one if the sum is 0 or out of range, or the shared one
 * is refused); each is answered with the total after it in queue order
 * (--no-coalesce: one call per change).  get/gets answer tally keys with
 * lc_tally_get (durable + pending); "stats tally NAME" is a get job too.
 * A separate flusher thread (lcd_flush.c) applies pending changes every
 * --flush-interval seconds, sweeps now and then, and is stopped before
 * the final flush and lc_close at shutdown.
 *
 * Lifetime: a connection's struct lives until its socket is closed AND no
 * job of it is in flight; a job's results are dropped if its connection
 * died meanwhile (the ids it got are logged, never reissued: a gap).
 */
