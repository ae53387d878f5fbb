#!/bin/bash
# mutate.sh - each check that an audit found unable to fail, shown able to:
# every patch in tests/mutate/ breaks the code the way the check must
# catch, and the check must then fail.  Run by hand (minutes; not part of
# make test):
#
#   bash tests/mutate.sh [NAME...]      (default: every patch)
#
# It copies the working tree (git ls-files) to a scratch directory, builds
# there once, then per mutation: applies the patch, rebuilds (make is
# incremental), runs the check that must catch it, and takes the patch
# back.  Prints one line per mutation, "caught" or "ESCAPED", and a
# summary; exits 1 if any escaped or did not apply.
#
#   mutation                         the check that must fail
#   client-unsigned-order            daemon_test.sh (load against a fake
#                                    server answering decreasing values)
#   dump-json-undecodable-missing    cli_test.sh (dump --json marks the
#                                    undecodable record)
#   tally-report-total-1             chaos, seed 7 rewind+restart: the
#                                    tally check (total vs acknowledged -
#                                    lost)
#   record-not-written               chaos, power cuts: an acknowledged
#                                    block missing outside every cut's
#                                    window
#   nemesis-injects-nothing          chaos, three servers: no fault
#                                    injected is INVALID
#   tally-rewind-between-unmeasured  test_tally (test_rewind_between)
#   tally-no-carry-at-close          test_tally (test_memcached_loss)
#   tally-no-carry-at-failed-flush   test_tally (test_carry_at_failed_flush)
#   first-no-burn                    test_first (test_second_round_fails)
#   promote-floor-ignored            chaos --cluster, primary killed (with
#                                    its log and memcached lost): a
#                                    promoted node not raised above the
#                                    replicated floors hands out ids
#                                    again (duplicates, out of order)
#
# Talks to 127.0.0.1 only (the suites' own memcached).
set -u
cd "$(dirname "$0")/.." || exit 1
SRC=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mutate.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
JOBS=${JOBS:-2}

git ls-files -z | tar -C "$SRC" --null -T - -cf - | tar -C "$WORK" -xf -
cd "$WORK" || exit 1
TARGETS="all build/chaos build/chaos_powercut.so build/tests/libfaultfs.so
  build/tests/lcd_client build/tests/test_tally build/tests/test_first"
# shellcheck disable=SC2086
if ! nice make -j"$JOBS" $TARGETS >"$WORK/build.log" 2>&1; then
  echo "mutate: the unmutated tree does not build (see $WORK/build.log)" >&2
  trap - EXIT
  exit 1
fi

# check NAME: runs the check that must catch mutation NAME; non-zero when
# it failed (the mutation was caught).
check() {
  case $1 in
    client-unsigned-order) BUILD=build bash tests/daemon_test.sh ;;
    dump-json-undecodable-missing) BUILD=build bash tests/cli_test.sh ;;
    tally-report-total-1)
      build/chaos run --only memcached-rewind,owner-restart --seconds 15 --seed 7 ;;
    record-not-written)
      build/chaos run --only power-cut,owner-kill,memcached-flush --seconds 20 --seed 21 ;;
    nemesis-injects-nothing)
      build/chaos run --seconds 8 --seed 1 --threads 4 --conns 2 --servers 3 ;;
    promote-floor-ignored)
      build/chaos run --cluster --only primary-disk-loss,primary-kill \
        --seconds 25 --seed 5 --threads 2 ;;
    tally-*) build/tests/test_tally ;;
    first-no-burn) build/tests/test_first ;;
    *) echo "mutate: no check for $1" >&2; return 0 ;;
  esac
}

if [ $# -eq 0 ]; then
  set --
  for p in "$SRC"/tests/mutate/*.patch; do set -- "$@" "$(basename "$p" .patch)"; done
fi
caught=0 escaped=0
for name in "$@"; do
  patch=$SRC/tests/mutate/$name.patch
  if ! patch -p1 -s <"$patch" >"$WORK/$name.apply" 2>&1; then
    echo "ESCAPED $name: the patch does not apply ($(head -n 1 "$WORK/$name.apply"))"
    escaped=$((escaped + 1))
    continue
  fi
  # shellcheck disable=SC2086
  nice make -j"$JOBS" $TARGETS >"$WORK/$name.build" 2>&1
  if check "$name" >"$WORK/$name.log" 2>&1; then
    echo "ESCAPED $name: its check passed (log: $WORK/$name.log)"
    escaped=$((escaped + 1))
    trap - EXIT # keep the logs
  else
    echo "caught  $name"
    caught=$((caught + 1))
  fi
  patch -p1 -R -s <"$patch" || { echo "mutate: cannot take $name back" >&2; exit 1; }
done
nice make -j"$JOBS" $TARGETS >/dev/null 2>&1
echo "mutate: $caught caught, $escaped escaped"
[ "$escaped" -eq 0 ]
