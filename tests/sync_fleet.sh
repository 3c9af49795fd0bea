#!/bin/bash
# tests/sync_fleet.sh - a fleet on one Redis: two boards
# ("hosts" A and B), each with its `jobboard sync` daemon, plus taskflow
# processes, on one redis-server of the test's own.
#
# Jobs are posted from all three sides while they are being run: on A and
# B with `jobboard post --batch`, and by taskflow's RedisJobBoard.post; in
# all $JB_FLEET_JOBS (default 10000; a third each). Four `jobboard work
# --redis` workers per board and four taskflow claimers (processes: claim,
# run, consume) run them; every run appends the job's uuid to its worker's
# log. At the end:
#  - every posted uuid ran exactly once across all logs (none lost, none
#    run twice, nothing run that was not posted);
#  - no worker had a completion refused (a lost claim), every worker and
#    claimer and both daemons exit 0 when stopped;
#  - Redis lists nothing and holds no owner key; both boards count 0;
#  - with 1000 jobs or more: jobs posted on each side ran on the other
#    sides too (A's on B and by taskflow, B's on A, taskflow's on A and B),
#    so replication carried work both ways.
# Run time is printed per phase. JB_FLEET_DEADLINE (default 900) bounds the
# wait for the jobs to be run.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

N=${JB_FLEET_JOBS:-10000}
DEADLINE=${JB_FLEET_DEADLINE:-900}
NA=$((N / 3))
NB=$((N / 3))
NT=$((N - NA - NB))
A=$ROOT/hostA
B=$ROOT/hostB
STOP=$ROOT/stop

redis_start
new_board "$A"
new_board "$B"
sync_start "$A" A --poll 0.5
sync_start "$B" B --poll 0.5
note "redis-server and two sync daemons started; $N jobs ($NA on A, $NB on B, $NT by taskflow)"

# --- the workers
WORKERS=()
declare -A WPID
for h in A B; do
  dir=$A
  [ $h = B ] && dir=$B
  for i in 1 2 3 4; do
    w=$h-w$i
    "${JB[@]}" --board "$dir" work --who "$w" --redis "$URL" --namespace "$NS" -- \
      sh -c 'echo "$JOBBOARD_UUID" >>"$1"' sh "$ROOT/run-$w.log" \
      2>"$ROOT/$w.err" &
    WPID[$w]=$!
    track $!
    WORKERS+=("$w")
  done
done
for i in 1 2 3 4; do
  w=tf-$i
  "$PY" "$PEER" claim "$SOCK" "$NS" "$w" "$ROOT/run-$w.log" "$STOP" \
    2>"$ROOT/$w.err" &
  WPID[$w]=$!
  track $!
  WORKERS+=("$w")
done
sleep 1
for w in "${WORKERS[@]}"; do
  kill -0 "${WPID[$w]}" 2>/dev/null ||
    die "worker $w exited at once: $(head -c 600 "$ROOT/$w.err")"
done
sync_alive A
sync_alive B

# --- the posters (all three at once, while the workers run)
post_batches() { # post_batches DIR COUNT OUT NAME: batches of 250
  local dir=$1 n=$2 out=$3 tag=$4 done=0 k
  while [ $done -lt "$n" ]; do
    k=$((n - done))
    [ $k -gt 250 ] && k=250
    seq $((done + 1)) $((done + k)) |
      sed "s/.*/{\"name\": \"$tag-&\", \"details\": {\"i\": &}}/" |
      jb --board "$dir" post --batch >>"$out" || return 1
    done=$((done + k))
    sleep 0.2
  done
}
post_batches "$A" "$NA" "$ROOT/posted-A" A &
PA=$!
track $PA
post_batches "$B" "$NB" "$ROOT/posted-B" B &
PB=$!
track $PB
"$PY" "$PEER" post "$SOCK" "$NS" "$NT" "$ROOT/posted-tf" 100 0.05 &
PT=$!
track $PT
wait $PA || fail "posting on A failed"
wait $PB || fail "posting on B failed"
wait $PT || fail "taskflow's posting failed"
T_POSTED=$(since)
note "all posted ($(cat "$ROOT"/posted-* | wc -l) uuids)"

# --- wait for every job to be run
ran() { cat "$ROOT"/run-*.log 2>/dev/null | wc -l; }
last=0
while :; do
  r=$(ran)
  [ "$r" -ge "$N" ] && break
  if [ "$(since | cut -d. -f1)" -ge "$DEADLINE" ]; then
    fail "after ${DEADLINE}s only $r of $N jobs ran"
    break
  fi
  now=$(since | cut -d. -f1)
  if [ $((now / 10)) != $((last / 10)) ]; then
    last=$now
    note "ran $r/$N; Redis lists $(rcli hlen "$NS:listings"); boards A $(count "$A"), B $(count "$B")"
    sync_alive A
    sync_alive B
  fi
  sleep 0.5
done
T_RAN=$(since)
note "$(ran) runs logged"

# Redis and both boards empty (the boards follow Redis within a poll).
empty() {
  [ "$(rcli hlen "$NS:listings")" = 0 ] && [ "$(count "$A")" = 0 ] &&
    [ "$(count "$B")" = 0 ]
}
wait_until 30 "Redis and both boards empty: Redis lists" empty ||
  fail "  Redis lists $(rcli hlen "$NS:listings"), A counts $(count "$A"), B counts $(count "$B")"
owned=$(rcli --scan --pattern "$NS:*.owned" | head -5)
[ -z "$owned" ] || fail "owner keys left in Redis: $owned"
T_EMPTY=$(since)

# --- stop everything we started, checking the exits
touch "$STOP"
for w in "${WORKERS[@]}"; do
  case $w in tf-*) ;; *) kill -TERM "${WPID[$w]}" 2>/dev/null ;; esac
done
for w in "${WORKERS[@]}"; do
  wait "${WPID[$w]}"
  rc=$?
  [ "$rc" = 0 ] || fail "worker $w exited $rc: $(tail -c 600 "$ROOT/$w.err")"
  if grep -q ': refused\|: failed\|: abandoned' "$ROOT/$w.err"; then
    fail "worker $w had jobs refused/failed/abandoned:" \
      "$(grep ': refused\|: failed\|: abandoned' "$ROOT/$w.err" | head -3)"
  fi
done
sync_stop A
sync_stop B

# --- the accounting
posted=(--posted A="$ROOT/posted-A" B="$ROOT/posted-B" tf="$ROOT/posted-tf")
logs=(--logs)
for w in "${WORKERS[@]}"; do logs+=("$w=$ROOT/run-$w.log"); done
"$PY" "$PEER" audit "${posted[@]}" "${logs[@]}" >"$ROOT/audit" ||
  fail "the jobs did not run exactly once each"
cat "$ROOT/audit"
[ "$(cat "$ROOT"/posted-* | wc -l)" = "$N" ] ||
  fail "posted $(cat "$ROOT"/posted-* | wc -l) uuids, expected $N"

# Cross-host: who ran the jobs of each poster (by side).
if [ "$N" -ge 1000 ]; then
  side_runs() { # side_runs POSTED-FILE SIDE: how many of them SIDE ran
    cat "$ROOT"/run-"$2"*.log 2>/dev/null | grep -cxFf "$1"
  }
  # Replication carried work between the sides: each board's daemon
  # published its jobs, and some jobs ran on another side than the one
  # that posted them. (Which directions is timing: a board's own workers
  # take its jobs first and taskflow's claimers are slower, so no single
  # direction is guaranteed.)
  for b in A B; do
    n=$(grep -c "published job" "$ROOT/sync-$b.log" || true)
    [ "$n" -gt 0 ] || fail "board $b's daemon published no job"
  done
  cross=0
  for p in A:B A:tf B:A B:tf tf:A tf:B; do
    cross=$((cross + $(side_runs "$ROOT/posted-${p%%:*}" "${p##*:}")))
  done
  [ "$cross" -gt 0 ] ||
    fail "no job ran on another side than its poster's: replication carried no work"
  note "jobs run on another side than their poster's: $cross"
fi

note "timings: posted at ${T_POSTED}s, all ran at ${T_RAN}s, Redis and boards empty at ${T_EMPTY}s, total $(since)s for $N jobs"
finish
