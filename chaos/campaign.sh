#!/bin/bash
# campaign.sh - many chaos runs, one per seed, and a summary (make
# chaos-campaign).  Every fault kind; every fourth seed runs --standby.
#
#   chaos/campaign.sh CHAOS SEEDS SECONDS FIRST_SEED [FLAGS...]
#
# One line per seed: the seed, the mode, VALID or INVALID, acknowledged
# ids, duplicates, ledger ids in no record and no entry (and of them those
# within a power cut's window, no longer excused), and each tally's shortfall beyond
# its recorded loss (acknowledged - held - lost); an INVALID run gets a
# second line with the report's reason (its "result INVALID: ..." line)
# and keeps its directory and report
# (campaign.DIR/seed-N.out) for replay (the same seed replays the same
# schedule).  Ends with "campaign: N valid, M invalid" and exits 1 if any
# run was INVALID.  Talks to 127.0.0.1 only.
set -u
CHAOS=$1 SEEDS=$2 SECONDS_EACH=$3 FIRST=$4
shift 4
OUT=$(mktemp -d "${TMPDIR:-/tmp}/campaign.XXXXXX") || exit 1
valid=0 invalid=0
echo "campaign: $SEEDS seeds from $FIRST, $SECONDS_EACH s each, reports in $OUT"
for ((i = 0; i < SEEDS; i++)); do
  seed=$((FIRST + i))
  mode=default extra=()
  if [ $((i % 4)) = 3 ]; then mode=standby extra=(--standby); fi
  "$CHAOS" run --seconds "$SECONDS_EACH" --min-ids 1 --seed "$seed" \
    --dir "$OUT/seed-$seed.run" "${extra[@]}" "$@" >"$OUT/seed-$seed.out" 2>&1
  rc=$?
  r=$OUT/seed-$seed.out
  acked=$(sed -n 's/^acknowledged *\([0-9]*\).*/\1/p' "$r")
  dups=$(sed -n 's/^duplicated *\([0-9]*\).*/\1/p' "$r")
  unex=$(sed -n 's/^ledger .*; \([0-9]*\) ids unexplained.*/\1/p' "$r")
  excused=$(sed -n "s/^ledger .*, \([0-9]*\) in [0-9]* holes within a power cut's window.*/\1/p" "$r")
  why=$(sed -n 's/^result *INVALID[^:]*: *//p' "$r")
  short=$(grep -o 'acknowledged - held - lost = -*[0-9]*' "$r" | awk '{ printf "%s ", $NF }')
  if [ "$rc" = 0 ]; then
    valid=$((valid + 1)) verdict=VALID
    rm -rf "$OUT/seed-$seed.run"
  else
    invalid=$((invalid + 1)) verdict=INVALID
  fi
  printf 'seed %-8s %-8s %-8s acked %-10s dup %-4s holes %-6s (in a cut window %-6s) short-beyond-lost %s\n' \
    "$seed" "$mode" "$verdict" "${acked:-?}" "${dups:-?}" "${unex:-?}" "${excused:-0}" "${short:-?}"
  [ -n "$why" ] && printf '  seed %s INVALID: %s\n' "$seed" "$why"
done
echo "campaign: $valid valid, $invalid invalid (reports in $OUT)"
[ "$invalid" = 0 ]
