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
# Then a job claimed by a worker on A before its publication: held back
# from Redis while the worker lives (A's replicator killed meanwhile, B's
# worker does not get it), published once the worker is killed, and run
# on B.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
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

# 2. A claim made on A before the job's publication (no replicator runs
# on A: a worker takes a job as soon as it is posted; a paused one could
# be holding the board's write lock). The job is held back from Redis
# while its holder lives, so that a claim nobody renews in Redis never
# lapses under it; A's replicator killed meanwhile changes nothing; the
# holder killed, the job is published and B runs it.
k=$(jb --board "$A" post held-here) || die "post on A"
: >"$ROOT/started.log"
"${JB[@]}" --board "$A" work --who A-early --redis "$URL" --namespace "$NS" \
  --jobs 1 -- sh -c 'echo $$ >"$1"; echo "$JOBBOARD_UUID" >>"$2"; exec sleep 600' \
  sh "$ROOT/early.cmdpid" "$ROOT/started.log" 2>"$ROOT/early.err" &
EPID=$!
track $EPID
started_k() { grep -qx "$k" "$ROOT/started.log" 2>/dev/null; }
wait_until 15 "the worker on A started job $k" started_k ||
  die "worker's stderr: $(head -c 800 "$ROOT/early.err")"
sync_start "$A" A --poll 0.5 --keepalive $KEEPALIVE
"${JB[@]}" --board "$B" work --who B-taker2 --redis "$URL" --namespace "$NS" \
  --jobs 1 --timeout 60 -- sh -c 'echo "$JOBBOARD_UUID" >>"$1"' sh \
  "$ROOT/run-B2.log" 2>"$ROOT/taker2.err" &
BPID=$!
track $BPID
sleep 2
listed "$k" && fail "job $k, claimed on A before its publication, was published while its holder runs"
kill -9 "${SYNC_PID[A]}"
wait "${SYNC_PID[A]}" 2>/dev/null
sleep $((4 * KEEPALIVE))
[ -s "$ROOT/run-B2.log" ] &&
  fail "B's worker ran $(cat "$ROOT/run-B2.log") while A's holder of $k was alive"
kill -9 $EPID
wait $EPID 2>/dev/null
[ -f "$ROOT/early.cmdpid" ] && kill -9 "$(cat "$ROOT/early.cmdpid")" 2>/dev/null
sync_start "$A" A --poll 0.5 --keepalive $KEEPALIVE
ran_k() { grep -qx "$k" "$ROOT/run-B2.log" 2>/dev/null; }
wait_until 20 "job $k published once its holder died, and run on B" ran_k ||
  kill $BPID
wait $BPID
rc=$?
[ "$rc" = 0 ] || fail "B's second worker exited $rc: $(tail -c 600 "$ROOT/taker2.err")"
sync_stop A
sync_stop B
finish
