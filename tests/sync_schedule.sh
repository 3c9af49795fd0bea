#!/bin/bash
# tests/sync_schedule.sh - one schedule on two boards synced through Redis
# runs each run once. Two boards (hosts A and B), each with its `jobboard
# sync` daemon, on a redis-server of the test's own, hold the same schedule
# (same name and start: the same runs, keyed schedule:beat:RUN_US). Both
# tick the same run and, at once, a worker on each host asks for a job
# (`claim-next --redis --wait`): exactly one of them gets the run (the copy
# Redis lists), the other gets nothing; the other board's copy is
# cancelled there (a board that claimed its own copy before publication
# would run the run on both hosts). Then the same with no
# replicator running at the tick (both killed -9): nobody gets the run
# until they are back, and then one host gets it. Last, the runs' keys
# stay held in Redis once they ended, the replicator prunes the
# reservations that ran out, and gives back the key of a job that ended
# on its board before its publication.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
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
# ask_both TAG WAIT: a worker on each host asks for a job at once
# (`claim-next --wait WAIT`), in the background; its uuid to claimed-TAG-X.
declare -A CPID
ask_both() {
  local X dir
  for X in A B; do
    dir=$A
    [ $X = B ] && dir=$B
    "${JB[@]}" --board "$dir" claim-next --who "w$X" --lease 60 --wait "$2" \
      --redis "$URL" --namespace "$NS" >"$ROOT/claimed-$1-$X" \
      2>"$ROOT/claim-$1-$X.err" &
    CPID[$X]=$!
    track "${CPID[$X]}"
  done
}
# got_both TAG: how many of the two got a job (exit 7: none in time).
got_both() {
  local X rc
  got=0
  for X in A B; do
    wait "${CPID[$X]}"
    rc=$?
    note "claim-next ($1) on $X: exit $rc $(cat "$ROOT/claimed-$1-$X")"
    case $rc in
      0) got=$((got + 1)) ;;
      7) ;;
      *) fail "claim-next ($1) on $X exited $rc: $(head -c 400 "$ROOT/claim-$1-$X.err")" ;;
    esac
  done
}
ask_both 1 4
sleep 1
kill -CONT "${SYNC_PID[A]}" "${SYNC_PID[B]}"
got_both 1
[ "$got" = 1 ] ||
  fail "the run was claimed $got times across the two hosts, expected once"
if [ "$got" = 2 ] && [ "$(cat "$ROOT/claimed-1-A")" != "$(cat "$ROOT/claimed-1-B")" ]; then
  fail "each host claimed its own copy of the run"
fi
cancelled_run() {
  jb --board "$A" history --json --outcome cancelled --name beat | grep -q . ||
    jb --board "$B" history --json --outcome cancelled --name beat | grep -q .
}
wait_until 20 "one copy of the run cancelled" cancelled_run

# 2. No replicator runs at the tick (both killed: they restart later). A
# synced board's run still waits for Redis: a worker asking then gets
# nothing; once the replicators are back, one copy is the run.
for X in A B; do
  kill -9 "${SYNC_PID[$X]}"
  wait "${SYNC_PID[$X]}" 2>/dev/null
done
jb --board "$A" schedule run --at @1790000660 >/dev/null || fail "tick 2 on A"
jb --board "$B" schedule run --at @1790000660 >/dev/null || fail "tick 2 on B"
for X in A B; do
  dir=$A
  [ $X = B ] && dir=$B
  out=$(jb --board "$dir" claim-next --who "w$X" --lease 60 --redis "$URL" \
    --namespace "$NS" 2>&1)
  rc=$?
  [ "$rc" = 3 ] ||
    fail "claim-next on $X with no replicator running: exit $rc, expected 3 (nothing claimable): $out"
done
ask_both 2 8
sleep 0.5
sync_start "$A" A --poll 0.5 --verify-every 1
sync_start "$B" B --poll 0.5
got_both 2
[ "$got" = 1 ] ||
  fail "the run ticked with no replicator was claimed $got times, expected once"
cancelled_runs() {
  [ $(( $(jb --board "$A" history --json --outcome cancelled --name beat | wc -l) +
        $(jb --board "$B" history --json --outcome cancelled --name beat | wc -l) )) = 2 ]
}
wait_until 20 "one copy of the second run cancelled" cancelled_runs

# 3. A run keeps its key in Redis once it ended (a copy published later is
# refused), for the outcome record's 7 days; the replicators' comparison on
# schedule prunes the reservations that ran out, and only those.
for X in A B; do
  dir=$A
  [ $X = B ] && dir=$B
  for u in $(cat "$ROOT/claimed-1-$X" "$ROOT/claimed-2-$X"); do
    jb --board "$dir" consume --who "w$X" --redis "$URL" --namespace "$NS" "$u" ||
      fail "consume of run $u on $X"
  done
done
for at in 1790000600000000 1790000660000000; do
  v=$(rcli hget "$NS:unique" "schedule:beat:$at")
  until_ms=${v#* }
  now_ms=$(( $(date +%s) * 1000 ))
  case $v in
    *-*" "*) [ $(( until_ms - now_ms )) -gt $(( 6 * 86400000 )) ] ||
      fail "run $at holds its key for $(( (until_ms - now_ms) / 1000 )) s only: $v" ;;
    *) fail "run $at does not hold its key once it ended: '$v'" ;;
  esac
done
ghost=00000000-0000-4000-8000-000000000001
rcli hset "$NS:unique" ran-out "$ghost 1000" pending-out "$ghost 1000 p" \
  held "$ghost $(( ($(date +%s) + 3600) * 1000 ))" >/dev/null
pruned() { [ "$(rcli hexists "$NS:unique" ran-out)$(rcli hexists "$NS:unique" pending-out)" = 00 ]; }
wait_until 10 "A's replicator pruned the reservations that ran out" pruned
[ "$(rcli hexists "$NS:unique" held)" = 1 ] ||
  fail "the prune took a reservation that has not run out"
grep -q "gave back 2 unique-key reservations" "$ROOT/sync-A.log" ||
  fail "A's replicator did not say what it pruned"

# 4. A job posted with a unique key and completed on its board before its
# publication (a local worker took it at once) leaves its reservation in
# Redis, which no script sees end: A's replicator gives it back at its next
# comparison, and B may post the key (else refused for the 5 minutes of
# the reservation, naming a job that ended).
sync_stop A
u=$(jb --board "$A" post --unique solo --redis "$URL" --namespace "$NS" solo) ||
  fail "post --unique solo on A"
jb --board "$A" claim --who wA "$u" && jb --board "$A" consume --who wA "$u" ||
  fail "claim and consume of $u on A before its publication"
sync_start "$A" A --poll 0.5 --verify-every 1
post_solo() {
  jb --board "$B" post --unique solo --redis "$URL" --namespace "$NS" solo-b \
    >"$ROOT/solo-b" 2>&1
}
wait_until 10 "key 'solo' free once A's job ended unpublished (B's post: $(cat "$ROOT/solo-b" 2>/dev/null))" post_solo
listed "$u" && fail "job $u, consumed on A before its publication, is listed in Redis"

sync_stop A
sync_stop B
grep ' sync: error' "$ROOT"/sync-*.log && fail "a sync daemon logged errors"
finish
