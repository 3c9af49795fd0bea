#!/bin/bash
# bench/bench-compare.sh - what a comparison in full costs: a
# redis-server of its own on a unix socket, board A posts N jobs
# (default 10,000) that its replicator publishes, board B's
# replicator pulls them and then compares the board with Redis in full
# every --verify-every seconds. Prints, for the comparisons on schedule:
# Redis's own time per call of HGETALL, GET and PTTL (INFO commandstats
# after CONFIG RESETSTAT), the calls per comparison, how long each took
# in B's replicator (status: last_compared_seconds), and the wall time of
# `jobboard status --verify` (the same reads, and one read of the board).
#
# Usage: bench/bench-compare.sh [--jobs N] [--every SECONDS] [--rounds R]
# Needs redis-server and redis-cli; run from the build directory (./jobboard).
set -euo pipefail
N=10000
EVERY=2
ROUNDS=5
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) N=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench-compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
JB=${JOBBOARD:-./jobboard}
PY=/usr/bin/python3
ROOT=$(mktemp -d /tmp/jb-compare.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$ROOT"
}
trap cleanup EXIT
SOCK=$ROOT/redis.sock
redis-server --port 0 --unixsocket "$SOCK" --save '' --appendonly no \
  --dir "$ROOT" --logfile "$ROOT/redis.log" >/dev/null 2>&1 &
PIDS+=($!)
disown
until [ "$(redis-cli -s "$SOCK" ping 2>/dev/null)" = PONG ]; do sleep 0.05; done
R() { redis-cli -s "$SOCK" "$@"; }
field() { "$JB" status --board "$1" --json |
  "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"; }

seq 1 "$N" | sed 's/^/{"name": "job-/; s/$/"}/' |
  "$JB" post --board "$ROOT/A" --durability none --batch >/dev/null
# A publishes and then stays quiet; B's polls (which read three keys per
# job: docs/DESIGN-NOTES.md) are put off, so that Redis's counters hold
# B's comparisons alone.
"$JB" sync --board "$ROOT/A" --redis "unix://$SOCK" --namespace bench \
  --poll 86400 --verify-every 0 2>"$ROOT/A.log" &
PIDS+=($!)
disown
until [ "$(R hlen bench:listings)" = "$N" ]; do sleep 0.2; done
"$JB" post --board "$ROOT/B" --durability none setup >/dev/null
"$JB" sync --board "$ROOT/B" --redis "unix://$SOCK" --namespace bench \
  --poll 86400 --verify-every "$EVERY" 2>"$ROOT/B.log" &
PIDS+=($!)
disown
until [ "$("$JB" count --board "$ROOT/B")" = $((N + 1)) ]; do sleep 0.2; done
sleep 1
R config resetstat >/dev/null
t0=$(date +%s.%N)
took=()
for _ in $(seq 1 "$ROUNDS"); do
  last=$(field "$ROOT/B" last_compared)
  until [ "$(field "$ROOT/B" last_compared)" != "$last" ]; do sleep 0.1; done
  took+=("$(field "$ROOT/B" last_compared_seconds)")
done
t1=$(date +%s.%N)
stats=$(R info commandstats)
calls() { echo "$stats" | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),usec=\([0-9]*\),usec_per_call=\([0-9.]*\).*/\1 \2 \3/p"; }
read -r hc hu hp <<<"$(calls hgetall)"
read -r gc gu gp <<<"$(calls get)"
read -r pc pu pp <<<"$(calls pttl)"
echo "listings: $N; comparisons on schedule timed: $ROUNDS (every $EVERY s)"
echo "B's replicator, seconds per comparison: ${took[*]}"
echo "redis: HGETALL $hc calls, $hp us each; GET $gc calls, $gp us each;" \
  "PTTL $pc calls, $pp us each"
awk -v hu="$hu" -v gu="$gu" -v pu="$pu" -v hc="$hc" 'BEGIN {
  printf "redis time per comparison: %.1f ms (HGETALL %.1f ms, GET+PTTL %.1f ms)\n",
    (hu + gu + pu) / hc / 1000, hu / hc / 1000, (gu + pu) / hc / 1000 }'
for i in 1 2 3; do
  s=$(date +%s.%N)
  "$JB" status --board "$ROOT/B" --verify >/dev/null
  e=$(date +%s.%N)
  awk -v s="$s" -v e="$e" 'BEGIN { printf "status --verify: %.3f s\n", e - s }'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
