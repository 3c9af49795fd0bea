#!/bin/bash
# tests/sync_schedule.sh - one schedule on two boards synced through Redis
# runs each run once. Two boards (hosts A and B), each with its `jobboard
# sync` daemon, on a redis-server of the test's own, hold the same schedule
# (same name and start: the same runs, keyed schedule:beat:RUN_US). Both
# tick the same run and, at once, a worker on each host asks for a job
# (`claim-next --redis --wait`): exactly one of them gets the run (the copy
# Redis lists), the other gets nothing; the other board's copy is
# cancelled there. Each board used to claim its own copy before
# publication, so the run ran on both hosts.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped,
# exit 77); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
B=$ROOT/hostB
redis_start
new_board "$A"
new_board "$B"
sync_start "$A" A --poll 0.5
sync_start "$B" B --poll 0.5
# Both daemons elected (a job published from each).
for X in A B; do
  dir=$A
  [ $X = B ] && dir=$B
  j=$(jb --board "$dir" post "ready-$X") || die "post on $X"
  wait_until 20 "$X's daemon published" listed "$j" || finish
  jb --board "$dir" cancel --redis "$URL" --namespace "$NS" "$j" ||
    die "cancel $j"
done

for X in "$A" "$B"; do
  jb --board "$X" schedule add beat --every 60 --start @1790000000 \
    --job-name beat >/dev/null || die "schedule add on $X"
done
# The daemons are stopped (SIGSTOP: still elected, publishing nothing)
# while the boards tick and the workers ask: a worker must not get its
# board's copy before Redis decided which copy is the run.
kill -STOP "${SYNC_PID[A]}" "${SYNC_PID[B]}"
jb --board "$A" schedule run --at @1790000600 >/dev/null || fail "tick on A"
jb --board "$B" schedule run --at @1790000600 >/dev/null || fail "tick on B"
declare -A CPID
for X in A B; do
  dir=$A
  [ $X = B ] && dir=$B
  "${JB[@]}" --board "$dir" claim-next --who "w$X" --lease 60 --wait 4 \
    --redis "$URL" --namespace "$NS" >"$ROOT/claimed-$X" 2>"$ROOT/claim-$X.err" &
  CPID[$X]=$!
  track "${CPID[$X]}"
done
sleep 1
kill -CONT "${SYNC_PID[A]}" "${SYNC_PID[B]}"
got=0
for X in A B; do
  wait "${CPID[$X]}"
  rc=$?
  note "claim-next on $X: exit $rc $(cat "$ROOT/claimed-$X")"
  case $rc in
    0) got=$((got + 1)) ;;
    7) ;;
    *) fail "claim-next on $X exited $rc: $(head -c 400 "$ROOT/claim-$X.err")" ;;
  esac
done
[ "$got" = 1 ] ||
  fail "the run was claimed $got times across the two hosts, expected once"
if [ "$got" = 2 ] && [ "$(cat "$ROOT/claimed-A")" != "$(cat "$ROOT/claimed-B")" ]; then
  fail "each host claimed its own copy of the run"
fi
cancelled_run() {
  jb --board "$A" history --json --outcome cancelled --name beat | grep -q . ||
    jb --board "$B" history --json --outcome cancelled --name beat | grep -q .
}
wait_until 20 "one copy of the run cancelled" cancelled_run

sync_stop A
sync_stop B
grep ' sync: error' "$ROOT"/sync-*.log && fail "a sync daemon logged errors"
finish
