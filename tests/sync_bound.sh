#!/bin/bash
# tests/sync_bound.sh - a claim bound to a worker process lapses with the
# worker, not with its host's replicator. Two boards (hosts A and B), each
# with its `jobboard sync` daemon (--keepalive 1), on a redis-server of the
# test's own.
#
# A `jobboard work --redis` worker on A (no --lease: its claim is bound to
# its process) claims a job and runs a CMD that sleeps. A's daemon is then
# killed -9 while the worker lives:
#  - 4 keep-alives later the claim is still the worker's in Redis, and a
#    worker on B waiting for work has not run the job (the worker's own
#    process renews its claim);
#  - the worker is then killed -9: nothing renews the claim, it leaves
#    Redis within the keep-alive (plus slack), and B's worker runs the job.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped,
# exit 77); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
B=$ROOT/hostB
KEEPALIVE=1
SLACK=1.5
redis_start
new_board "$A"
new_board "$B"
sync_start "$A" A --poll 0.5 --keepalive $KEEPALIVE
sync_start "$B" B --poll 0.5 --keepalive $KEEPALIVE
owner_key() { rcli get "$NS:$1.owned"; }

j=$(jb --board "$A" post bound) || die "post on A"
# Published: A's daemon was elected, and recorded its keep-alive on the
# board (the worker's claim takes its expiry from there).
wait_until 20 "job $j published from A" listed "$j" || finish
wait_until 20 "job $j reached B" on_board "$B" "$j" || finish

"${JB[@]}" --board "$A" work --who A-holder --redis "$URL" --namespace "$NS" \
  --jobs 1 -- sh -c 'echo $$ >"$1"; echo "$JOBBOARD_UUID" >>"$2"; exec sleep 600' \
  sh "$ROOT/holder.cmdpid" "$ROOT/started.log" 2>"$ROOT/holder.err" &
HPID=$!
track $HPID
started() { grep -qx "$j" "$ROOT/started.log" 2>/dev/null; }
wait_until 15 "the holder on A started job $j" started ||
  die "holder's stderr: $(head -c 800 "$ROOT/holder.err")"
[ "$(owner_key "$j")" = A-holder ] ||
  fail "Redis says job $j is owned by '$(owner_key "$j")', expected A-holder"

# A's replicator dies; the holder lives on.
kill -9 "${SYNC_PID[A]}"
wait "${SYNC_PID[A]}" 2>/dev/null
note "A's replicator killed; the holder of $j runs on"
"${JB[@]}" --board "$B" work --who B-taker --redis "$URL" --namespace "$NS" \
  --jobs 1 --timeout 60 -- sh -c 'echo "$JOBBOARD_UUID" >>"$1"' sh \
  "$ROOT/run-B.log" 2>"$ROOT/taker.err" &
BPID=$!
track $BPID
sleep $((4 * KEEPALIVE))
[ "$(owner_key "$j")" = A-holder ] ||
  fail "4 keep-alives after A's replicator died, with the holder alive, Redis says job $j is owned by '$(owner_key "$j")'"
[ -s "$ROOT/run-B.log" ] &&
  fail "B's worker ran $(cat "$ROOT/run-B.log") while A's holder of $j was alive"
kill -0 $BPID 2>/dev/null ||
  fail "B's worker exited early: $(head -c 600 "$ROOT/taker.err")"

# The holder dies: nothing renews its claim any more.
t0=$(date +%s%N)
kill -9 $HPID
wait $HPID 2>/dev/null
[ -f "$ROOT/holder.cmdpid" ] && kill -9 "$(cat "$ROOT/holder.cmdpid")" 2>/dev/null
lapsed() { [ "$(owner_key "$j")" != A-holder ]; }
wait_until 20 "the dead holder's claim of $j never left Redis" lapsed
ms=$((($(date +%s%N) - t0) / 1000000))
note "the dead holder's claim left Redis ${ms} ms after kill -9"
awk -v ms="$ms" -v k=$KEEPALIVE -v s=$SLACK 'BEGIN { exit !(ms <= (k + s) * 1000) }' ||
  fail "the claim left Redis ${ms} ms after the holder died: more than ${KEEPALIVE} s + ${SLACK} s"
ran() { grep -qx "$j" "$ROOT/run-B.log" 2>/dev/null; }
wait_until 20 "B's worker ran job $j" ran || kill $BPID
wait $BPID
rc=$?
[ "$rc" = 0 ] || fail "B's worker exited $rc: $(tail -c 600 "$ROOT/taker.err")"
[ "$(grep -cx "$j" "$ROOT/run-B.log")" = 1 ] ||
  fail "job $j ran $(grep -cx "$j" "$ROOT/run-B.log") times on B"
sync_stop B
finish
