#!/bin/bash
# suite_chaos.sh - the short chaos round of make test (about 45 s, the
# standby round's 15 to 40 s and the cluster round's 45 to 60 s).
#
# Runs $BUILD/chaos (chaos/) three times under one seed: logcounter under
# every fault kind for 20 s (the disk faults too: the owners preload
# $BUILD/tests/libfaultfs.so); logcounter under only the faults that fail
# nothing (memcached flushed or set back, an allocation paused before its
# log write, an owner stopped cleanly and restarted, old records pruned)
# for 6 s; the
# seed-faithful baseline (the original algorithm) under the first schedule
# for 6 s.  Checks from their reports:
# logcounter's histories are valid (no duplicate, nothing out of order,
# tallies never above the true sum and below it only with the loss
# reported, no owner died by itself), every counter got ids, every fault
# kind was injected, the disk faults (disk-full, io-error) failed calls
# beneath LevelDB, the owners refused calls with ELOG meanwhile and their
# logs recovered by themselves, no id was skipped where nothing failed,
# the baseline's checker found duplicates (the checker can fail), and the
# baseline run injected the same faults in the same order (the seed
# replays the schedule).  First, "chaos model" (chaos/model.c): the
# premise of the power-cut windows, on this LevelDB.
#
# A fourth round runs with three memcached servers (--servers 3): valid,
# ids acknowledged on every counter, faults (memcached ones among them)
# injected; a fifth with a standby (--standby: logcounterd as a primary
# and its standby; the primary lost with its directory, or stopped behind
# a partition, and the standby promoted, with memcached frozen, killed,
# flushed and rewound, and owner kills between; every kind at least once,
# --min-ids 1), for 6 s or more: valid (each tally's shortfall is its
# recorded loss, but for changes acknowledged by a primary in the seconds
# before it was lost), no duplicate, those kinds injected, every
# promotion done, and the daemon's counters got ids; a sixth with three
# nodes on etcd (--cluster: the primary killed, stopped past its lease,
# killed with its log directory deleted and memcached flushed, cut from
# etcd, the synchronous standby killed, etcd restarted; clients through
# every node) for 35 s or more: valid, no duplicate, nothing out of order,
# every one of those kinds injected, at least 2 failovers, the daemon's
# counters got ids (tests/mutate.sh promote-floor-ignored shows this
# round's checker catching a promoted node that does not raise its
# counters above the floors: duplicates).
# CHAOS_SEED=N replays a seed; LC_TEST_SCALE=N (sanitizer builds) divides
# the client threads and connections, not the time.  Ends with
# "chaos: N passed, M failed".
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CHAOS=$BUILD/chaos
SCALE=${LC_TEST_SCALE:-1}
[ "$SCALE" -ge 1 ] 2>/dev/null || SCALE=1
SEED=${CHAOS_SEED:-$(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 1000000000 ))}
THREADS=$(( 6 / SCALE )); [ "$THREADS" -lt 2 ] && THREADS=2
CONNS=$(( 3 / SCALE )); [ "$CONNS" -lt 1 ] && CONNS=1

passed=0 failed=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"
  fi
}
finish() {
  echo "chaos: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

if [ ! -x "$CHAOS" ] || [ ! -f "$BUILD/chaos_powercut.so" ] ||
   [ ! -f "$BUILD/tests/libfaultfs.so" ]; then
  echo "suite_chaos: $CHAOS not built (make $CHAOS $BUILD/chaos_powercut.so $BUILD/tests/libfaultfs.so)" >&2
  failed=1
  finish
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/suite_chaos.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# The premise of the checker's power-cut windows, on this LevelDB: a
# reopen's unsynced tail is cut until the directory is synced (the
# library syncs it at every open), and stays once it is.
mkdir "$TMP/model"
"$CHAOS" model "$TMP/model"
check "chaos model: a reopen's unsynced tail stays once the directory is synced, not before" [ $? -eq 0 ]

echo "chaos: seed $SEED (CHAOS_SEED=$SEED replays it)"
"$CHAOS" run --seconds 20 --seed "$SEED" --threads "$THREADS" --dir "$TMP/lc.run" \
  --conns "$CONNS" --schedule "$TMP/lc.sched" >"$TMP/lc.out" 2>"$TMP/lc.err"
lc_rc=$?
cat "$TMP/lc.out"
"$CHAOS" run --seconds 6 --seed "$SEED" --threads "$THREADS" --dir "$TMP/p4.run" \
  --conns "$CONNS" \
  --only memcached-flush,memcached-rewind,pause-before-log,owner-restart,prune \
  --timeout 2000 \
  >"$TMP/p4.out" 2>"$TMP/p4.err"
p4_rc=$?
cat "$TMP/p4.out"
"$CHAOS" run --seconds 6 --seed "$SEED" --threads "$THREADS" --dir "$TMP/seed.run" \
  --conns "$CONNS" --baseline seed --schedule "$TMP/seed.sched" \
  >"$TMP/seed.out" 2>"$TMP/seed.err"
seed_rc=$?
cat "$TMP/seed.out"
"$CHAOS" run --seconds 8 --seed "$SEED" --threads "$THREADS" --dir "$TMP/ms.run" \
  --conns "$CONNS" --servers 3 >"$TMP/ms.out" 2>"$TMP/ms.err"
ms_rc=$?
cat "$TMP/ms.out"
"$CHAOS" run --seconds 6 --seed "$SEED" --threads "$THREADS" --dir "$TMP/sb.run" \
  --conns "$CONNS" --standby --min-ids 1 \
  --only primary-loss,partition,memcached-freeze,owner-kill,memcached-kill,memcached-flush,memcached-rewind \
  >"$TMP/sb.out" 2>"$TMP/sb.err"
sb_rc=$?
cat "$TMP/sb.out"
TTL=2s; [ "$SCALE" -gt 1 ] && TTL=3s
"$CHAOS" run --seconds 35 --seed "$SEED" --threads 2 --dir "$TMP/cl.run" \
  --conns "$CONNS" --cluster --min-ids 1 --leader-ttl "$TTL" \
  --cluster-tool tests/daemon/cluster_tool.py >"$TMP/cl.out" 2>"$TMP/cl.err"
cl_rc=$?
cat "$TMP/cl.out"

# field LABEL FILE: the first number after the label on its report line
field() { sed -n "s/^$1 *\([0-9][0-9]*\).*/\1/p" "$2" | head -n 1; }
lc_dups=$(field duplicated "$TMP/lc.out")
lc_ooo=$(field "out of order" "$TMP/lc.out")
lc_acked=$(field acknowledged "$TMP/lc.out")
seed_dups=$(field duplicated "$TMP/seed.out")

check "logcounter run exits 0 (valid history)" [ "$lc_rc" -eq 0 ]
check "report says VALID" grep -q '^result *VALID' "$TMP/lc.out"
check "ids acknowledged (${lc_acked:-none})" [ "${lc_acked:-0}" -gt 0 ]
check "duplicated ids: ${lc_dups:-missing} (must be 0)" [ "${lc_dups:-x}" = 0 ]
check "out of order: ${lc_ooo:-missing} (must be 0)" [ "${lc_ooo:-x}" = 0 ]
for c in e0 e1 e2 d0 d1; do
  n=$(sed -n "s/^.* $c ([a-z]*): \([0-9]*\) ids.*/\1/p" "$TMP/lc.out")
  check "counter $c got ids (${n:-none})" [ "${n:-0}" -gt 0 ]
done
for t in t0 t1 u0 u1; do
  l=$(grep -E "^(tallies)? *$t \([a-z]*\): durable total" "$TMP/lc.out")
  check "tally $t within bounds" bash -c '[ -n "$1" ] && ! echo "$1" | grep -q FAIL' _ "$l"
done
for k in memcached-kill memcached-flush memcached-freeze owner-kill \
         pause-before-log log-write-fail power-cut memcached-rewind \
         owner-restart prune disk-full io-error; do
  n=$(sed -n "s/^faults.* $k \([0-9]*\).*/\1/p" "$TMP/lc.out")
  check "fault $k injected (${n:-0})" [ "${n:-0}" -gt 0 ]
done
# The disk faults: the shim failed writes or syncs beneath LevelDB, the
# owners refused calls with ELOG meanwhile, and their logs came back by
# themselves (the library's reopen; nobody restarted them for it).
dl=$(grep '^disk faults' "$TMP/lc.out")
d_hits=$(echo "$dl" | sed -n 's/^disk faults *\([0-9]*\) calls failed by the shim.*/\1/p')
d_elog=$(echo "$dl" | sed -n 's/.*; \([0-9]*\) calls refused with ELOG.*/\1/p')
d_rec=$(echo "$dl" | sed -n 's/.*log failures [0-9]*, recoveries \([0-9]*\).*/\1/p')
check "disk faults: ${d_hits:-no} calls failed beneath LevelDB" [ "${d_hits:-0}" -gt 0 ]
check "disk faults: ${d_elog:-no} calls refused with ELOG" [ "${d_elog:-0}" -gt 0 ]
check "disk faults: ${d_rec:-no} logs recovered by themselves" [ "${d_rec:-0}" -gt 0 ]
check "no findings (owners restarted and reopened their logs)" \
  grep -q '^findings *none' "$TMP/lc.out"
# Nothing fails in this run (a long timeout: the machine may be loaded),
# so no id may be skipped (a clean restart skips nothing).  A call
# that failed anyway (timed out) may burn one run of ids, no more; one
# whose connection was closed by a clean stop burns none.
p4_gaps=$(field gaps "$TMP/p4.out")
p4_runs=$(sed -n 's/^gaps .* ids in \([0-9]*\) runs.*/\1/p' "$TMP/p4.out")
p4_failed=$(sed -n 's/^attempted .*; \([0-9]*\) calls failed, \([0-9]*\) of them.*/\1 - \2/p' "$TMP/p4.out")
[ -n "$p4_failed" ] && p4_failed=$(( p4_failed ))
p4_acked=$(field acknowledged "$TMP/p4.out")
check "no-failure run valid (exit $p4_rc)" [ "$p4_rc" -eq 0 ]
p4_ok=0
[ "${p4_acked:-0}" -gt 0 ] && [ -n "$p4_gaps" ] && [ -n "$p4_failed" ] &&
  [ "${p4_runs:-0}" -le "$p4_failed" ] && p4_ok=1
check "no-failure run (flush, rewind, pause, restart, prune): ${p4_acked:-no} ids, ${p4_gaps:-?} skipped in ${p4_runs:-?} runs, ${p4_failed:-?} calls failed (no skip without a failure)" \
  [ "$p4_ok" = 1 ]
check "baseline run finished with a report" grep -q '^result' "$TMP/seed.out"
check "baseline (seed algorithm) has duplicates: ${seed_dups:-missing}" \
  [ "${seed_dups:-0}" -gt 0 ]
check "baseline reported INVALID (exit $seed_rc)" [ "$seed_rc" -eq 1 ]
n=$(wc -l <"$TMP/seed.sched")
check "same seed, same schedule (first $n faults)" \
  bash -c '[ "$3" -gt 0 ] && cmp -s <(head -n "$3" "$1" | sed "s/ (not carried out.*//") <(head -n "$3" "$2" | sed "s/ (not carried out.*//")' \
  _ "$TMP/lc.sched" "$TMP/seed.sched" "$n"
ms_dups=$(field duplicated "$TMP/ms.out")
check "three memcached servers, one fault at a time: valid (exit $ms_rc)" [ "$ms_rc" -eq 0 ]
check "three memcached servers: duplicated ids ${ms_dups:-missing} (must be 0)" [ "${ms_dups:-x}" = 0 ]
# ... and it did something: ids acknowledged on every counter, faults
# injected, memcached faults among them (each hits one of the servers)
ms_acked=$(field acknowledged "$TMP/ms.out")
check "three memcached servers: ids acknowledged (${ms_acked:-none})" [ "${ms_acked:-0}" -gt 0 ]
for c in e0 e1 e2 d0 d1; do
  n=$(sed -n "s/^.* $c ([a-z]*): \([0-9]*\) ids.*/\1/p" "$TMP/ms.out")
  check "three memcached servers: counter $c got ids (${n:-none})" [ "${n:-0}" -gt 0 ]
done
# the faults line without its "(embedded N, logcounterd M)" parts
ms_kinds=$(sed -n 's/^faults *//p' "$TMP/ms.out" | sed 's/([^)]*)//g' | tr ',' '\n')
ms_faults=$(awk '{ n += $2 } END { print n + 0 }' <<<"$ms_kinds")
ms_mc=$(grep '^ *memcached-' <<<"$ms_kinds" | awk '{ n += $2 } END { print n + 0 }')
check "three memcached servers: faults injected (${ms_faults:-0})" [ "${ms_faults:-0}" -gt 0 ]
check "three memcached servers: memcached faults among them (${ms_mc:-0})" [ "${ms_mc:-0}" -gt 0 ]
sb_dups=$(field duplicated "$TMP/sb.out")
check "standby: valid (exit $sb_rc)" [ "$sb_rc" -eq 0 ]
check "standby: duplicated ids ${sb_dups:-missing} (must be 0)" [ "${sb_dups:-x}" = 0 ]
for k in primary-loss partition memcached-kill memcached-flush memcached-rewind; do
  n=$(sed -n "s/^faults.* $k \([0-9]*\).*/\1/p" "$TMP/sb.out")
  check "standby: fault $k injected (${n:-0})" [ "${n:-0}" -gt 0 ]
done
sb_prom=$(sed -n 's/^standby *\([0-9]*\) promotions (\([0-9]*\) failed).*/\1 \2/p' "$TMP/sb.out")
check "standby: promotions, none failed (${sb_prom:-none})" \
  bash -c '[ -n "$1" ] && [ "${1% *}" -gt 0 ] && [ "${1#* }" = 0 ]' _ "$sb_prom"
for c in d0 d1; do
  n=$(sed -n "s/^.* $c ([a-z]*): \([0-9]*\) ids.*/\1/p" "$TMP/sb.out")
  check "standby: counter $c got ids (${n:-none})" [ "${n:-0}" -gt 0 ]
done
cl_dups=$(field duplicated "$TMP/cl.out")
cl_ooo=$(field "out of order" "$TMP/cl.out")
check "cluster: valid (exit $cl_rc)" [ "$cl_rc" -eq 0 ]
check "cluster: report says VALID" grep -q '^result *VALID' "$TMP/cl.out"
check "cluster: duplicated ids ${cl_dups:-missing} (must be 0)" [ "${cl_dups:-x}" = 0 ]
check "cluster: out of order ${cl_ooo:-missing} (must be 0)" [ "${cl_ooo:-x}" = 0 ]
for k in primary-kill primary-freeze primary-disk-loss etcd-cut standby-kill etcd-restart; do
  n=$(sed -n "s/^faults.* $k \([0-9]*\).*/\1/p" "$TMP/cl.out")
  check "cluster: fault $k injected (${n:-0})" [ "${n:-0}" -gt 0 ]
done
cl_fo=$(field cluster "$TMP/cl.out")
cl_out=$(sed -n 's/^cluster .*outage per failover[^:]*: \(median [0-9.]* s, largest [0-9.]* s\).*/\1/p' "$TMP/cl.out")
check "cluster: at least 2 failovers (${cl_fo:-none}; outage ${cl_out:-not measured})" [ "${cl_fo:-0}" -ge 2 ]
for c in d0 d1; do
  n=$(sed -n "s/^.* $c ([a-z]*): \([0-9]*\) ids.*/\1/p" "$TMP/cl.out")
  check "cluster: counter $c got ids (${n:-none})" [ "${n:-0}" -gt 0 ]
done
if [ "$failed" -ne 0 ]; then
  echo "--- stderr of the logcounter run"; tail -n 20 "$TMP/lc.err"
  echo "--- stderr of the three-server run"; tail -n 20 "$TMP/ms.err"
  echo "--- stderr of the no-failure run"; tail -n 20 "$TMP/p4.err"
  echo "--- stderr of the baseline run"; tail -n 20 "$TMP/seed.err"
  echo "--- stderr of the standby run"; tail -n 20 "$TMP/sb.err"
  echo "--- stderr of the cluster run"; tail -n 20 "$TMP/cl.err"
fi
finish
