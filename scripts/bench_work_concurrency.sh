#!/bin/bash
# scripts/bench_work_concurrency.sh - jobs/s of `jobboard work
# --concurrency N` for N = 1, 4, 16, with short commands (`true`, `sleep
# 0.05`), in durability none and full: the figures of docs/BENCHMARKS.md,
# section "work --concurrency".
#
# For each case: a fresh board in a temporary directory, J jobs posted in
# one batch (not timed), then `jobboard work --who bench --concurrency N
# --jobs J --durability MODE -- CMD` timed from its start to its exit
# (registering, claiming, running, completing, unregistering). Each case
# is run ROUNDS times (default 3); the median is printed.
#
# Usage: scripts/bench_work_concurrency.sh [JOBBOARD]   (default ./jobboard)
set -u
JOBBOARD=${1:-./jobboard}
ROUNDS=${ROUNDS:-3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-benchwork.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# jobs CMD N: how many jobs a case runs (about 2-6 s each).
jobs_for() {
  case $1 in
    true) echo 1000 ;;
    *) case $2 in 1) echo 60 ;; 4) echo 200 ;; *) echo 600 ;; esac ;;
  esac
}

printf '%-10s %-11s %3s %6s %10s\n' durability command N jobs "jobs/s"
for mode in none full; do
  for cmd in "true" "sleep 0.05"; do
    for n in 1 4 16; do
      jobs=$(jobs_for "$cmd" "$n")
      rates=()
      for r in $(seq 1 "$ROUNDS"); do
        B=$TMP/b-$mode-$n-$r
        for i in $(seq 1 "$jobs"); do echo '{"name": "bench"}'; done |
          "$JOBBOARD" post --batch --board "$B" --durability none >/dev/null ||
          exit 1
        t0=$(date +%s%N)
        # shellcheck disable=SC2086 # CMD is split on purpose
        "$JOBBOARD" work --board "$B" --durability "$mode" --who bench \
          --concurrency "$n" --jobs "$jobs" -- $cmd 2>/dev/null || exit 1
        t1=$(date +%s%N)
        left=$("$JOBBOARD" count --board "$B")
        [ "$left" = 0 ] || { echo "jobs left on the board: $left" >&2; exit 1; }
        rates+=("$(awk -v j="$jobs" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", j / (ns / 1e9) }')")
        rm -rf "$B"
      done
      median=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
      printf '%-10s %-11s %3d %6d %10s   (rounds: %s)\n' "$mode" "$cmd" "$n" \
        "$jobs" "$median" "${rates[*]}"
    done
  done
done
