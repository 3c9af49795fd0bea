#!/bin/bash
# tests/sync_outage.sh - Redis going away under a running fleet: three
# boards (hosts A, B, C), each with its `jobboard sync`
# daemon; two `jobboard work --redis` workers on A and two on B (the
# second of each with --concurrency 3), whose CMD
# logs the job's uuid and sleeps 50 ms (so claims and consumes are in
# flight when Redis goes); A and B post jobs all along. C has no workers:
# the jobs posted there while Redis is away stay unclaimed until published.
#
#  1. SIGKILL: redis-server is killed and, 4 s later, started again on the
#     same socket and data directory. While it is away:
#      - 20 jobs are posted on C, and later found published in Redis in
#        their local order (the Redis sequence numbers of those postings,
#        read from our publication markers, increase in posting order);
#      - claim, abandon, extend, consume and trash of P1 (a published job
#        claimed on C by "parker" with a lease) fail with exit 6 and leave
#        P1 claimed by parker on C; after Redis is back, parker consumes it.
#  2. SIGSTOP past the command timeout (5 s): redis-server is paused for
#     8 s, then SIGCONT. While it is paused, 20 more jobs are posted on C
#     (published in order afterwards, as above) and a claim of P2 (claimed
#     by parker) by someone else fails with exit 6 (and is refused by
#     Redis when it runs late: P2 stays parker's).
#  At the end every posted job ran exactly once (none lost, none twice),
#  no worker had a completion refused, Redis lists nothing and every board
#  counts 0.
#
# Redis runs with --appendonly yes --appendfsync always (and --save ''):
# the test restarts the server it killed, and a restart must find what the
# server acknowledged. A server that comes back empty is another failure
# (Redis, the authority, forgot the jobs), which this test does not model.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

REDIS_EXTRA=(--appendonly yes --appendfsync always)
A=$ROOT/hostA
B=$ROOT/hostB
C=$ROOT/hostC
STOP=$ROOT/stop
POLL=0.5

redis_start
for d in "$A" "$B" "$C"; do new_board "$d"; done
sync_start "$A" A --poll $POLL
sync_start "$B" B --poll $POLL
sync_start "$C" C --poll $POLL

# rjb DIR ARGS: jobboard on board DIR through Redis; sets $rc, $err.
rjb() {
  local dir=$1
  shift
  jb --board "$dir" "$@" --redis "$URL" --namespace "$NS" \
    >"$ROOT/out" 2>"$ROOT/err"
  rc=$?
  err=$(cat "$ROOT/err")
}

# --- the parked jobs: published from C, claimed there by parker (1 h lease)
park() { # park NAME: sets $uuid
  uuid=$(jb --board "$C" post "$1") || die "post $1 on C"
  wait_until 20 "$1 ($uuid) published from C" listed "$uuid" || finish
  rjb "$C" claim --who parker --lease 3600 "$uuid"
  [ "$rc" = 0 ] || die "claim of $1 by parker through Redis: exit $rc: $err"
}
park P1
P1=$uuid
park P2
P2=$uuid
[ "$(rcli get "$NS:$P1.owned")" = parker ] || die "Redis does not hold parker's claim of P1"
note "P1 $P1 and P2 $P2 published from C and claimed by parker"

# --- the workers and the posters on A and B
WORKERS=(A-w1 A-w2 B-w1 B-w2)
for w in "${WORKERS[@]}"; do
  dir=$A
  [ "${w%%-*}" = B ] && dir=$B
  # The second worker of each board runs 3 CMDs at once (--concurrency).
  case $w in
    *-w2) worker_start "$w" "$dir" 0.05 --concurrency 3 ;;
    *) worker_start "$w" "$dir" 0.05 ;;
  esac
done
# 20 jobs every 0.3 s on A and on B until $STOP exists
poster "$A" A 20 0.3 &
PPA=$!
track $PPA
poster "$B" B 20 0.3 &
PPB=$!
track $PPB
sleep 4
for w in "${WORKERS[@]}"; do
  kill -0 "${WPID[$w]}" 2>/dev/null ||
    die "worker $w is not running: $(head -c 600 "$ROOT/$w.err")"
done
[ -s "$ROOT/run-A-w1.log" ] || [ -s "$ROOT/run-A-w2.log" ] ||
  fail "A's workers ran nothing in 4 s with Redis up"

# post_offline FILE: 20 jobs on C while Redis is away, uuids to FILE
post_offline() {
  seq 1 20 | sed 's/.*/{"name": "offline-&"}/' |
    jb --board "$C" post --batch >"$1" || fail "post on C while Redis is away"
}
# published_in_order FILE WHAT: every uuid of FILE published (listed or
# marked) within 45 s, under sequence numbers increasing in FILE's order.
published_in_order() {
  local f=$1 what=$2
  all_published() {
    "$PY" "$PEER" seqs "$SOCK" "$NS" "$f" >"$f.seqs" 2>/dev/null &&
      ! grep -q ' -$' "$f.seqs"
  }
  wait_until 45 "$what: the posts made on C were not all published" \
    all_published || { cat "$f.seqs" >&2; return; }
  if ! awk 'NR > 1 && $2 <= prev { bad = 1 } { prev = $2 } END { exit bad }' \
    "$f.seqs"; then
    fail "$what: posts published out of their local order (uuid, Redis sequence, in posting order):"
    cat "$f.seqs" >&2
  else
    note "$what: 20 posts published in order, sequences $(head -1 "$f.seqs" | cut -d' ' -f2)..$(tail -1 "$f.seqs" | cut -d' ' -f2)"
  fi
}
# offline_op WHAT EXPECTED-OWNER ARGS: a Redis-decided operation on C
# while Redis is away: exit 6, P's local owner unchanged.
offline_op() {
  local what=$1 job=$2
  shift 2
  local t0=$SECONDS
  rjb "$C" "$@"
  [ "$rc" = 6 ] || fail "$what while Redis is away: exit $rc, expected 6 (backend unavailable): $err"
  [ $((SECONDS - t0)) -le 12 ] || fail "$what took $((SECONDS - t0)) s to fail"
  local o
  o=$(jb --board "$C" owner "$job" 2>&1)
  [ "$o" = parker ] || fail "after the refused $what, C says $job is owned by '$o', expected parker"
}

# --- 1. SIGKILL and restart
note "SIGKILL redis-server"
redis_kill
post_offline "$ROOT/offline-kill"
offline_op "claim P1 by intruder" "$P1" claim --who intruder "$P1"
offline_op "abandon P1 by parker" "$P1" abandon --who parker "$P1"
offline_op "extend P1 by parker" "$P1" extend --who parker --lease 60 "$P1"
offline_op "consume P1 by parker" "$P1" consume --who parker "$P1"
offline_op "trash P1 by parker" "$P1" trash --who parker "$P1"
sleep 4
note "redis-server started again"
redis_start
[ "$(rcli get "$NS:$P1.owned")" = parker ] ||
  fail "after the restart Redis says P1 is owned by '$(rcli get "$NS:$P1.owned")' (the AOF lost it?)"
published_in_order "$ROOT/offline-kill" "after SIGKILL"
rjb "$C" consume --who parker "$P1"
if [ "$rc" = 0 ]; then
  echo "$P1" >>"$ROOT/run-parker.log"
else
  fail "parker's consume of P1 after Redis came back: exit $rc: $err"
fi
for d in A B C; do sync_alive $d; done

# --- 2. SIGSTOP past the command timeout, then SIGCONT
sleep 2
note "SIGSTOP redis-server for 8 s"
kill -STOP "$REDIS_PID"
post_offline "$ROOT/offline-stop"
t0=$SECONDS
rjb "$C" claim --who intruder "$P2"
[ "$rc" = 6 ] || fail "claim of P2 by intruder while Redis is paused: exit $rc, expected 6: $err"
[ $((SECONDS - t0)) -le 10 ] || fail "claim of P2 while Redis is paused took $((SECONDS - t0)) s to fail"
[ "$(jb --board "$C" owner "$P2" 2>&1)" = parker ] ||
  fail "after the refused claim, C says P2 is owned by '$(jb --board "$C" owner "$P2" 2>&1)'"
while [ $((SECONDS - t0)) -lt 8 ]; do sleep 0.2; done
kill -CONT "$REDIS_PID"
note "SIGCONT redis-server"
published_in_order "$ROOT/offline-stop" "after SIGSTOP"
sleep 1
[ "$(rcli get "$NS:$P2.owned")" = parker ] ||
  fail "Redis says P2 is owned by '$(rcli get "$NS:$P2.owned")' after the late claim by intruder ran"
rjb "$C" consume --who parker "$P2"
if [ "$rc" = 0 ]; then
  echo "$P2" >>"$ROOT/run-parker.log"
else
  fail "parker's consume of P2 after Redis resumed: exit $rc: $err"
fi

# The workers must have lived through both outages (a worker that stops
# leaves its job in hand to lapse and run again, and the rest to nobody).
declare -A WDEAD=()
for w in "${WORKERS[@]}"; do
  if ! kill -0 "${WPID[$w]}" 2>/dev/null; then
    wait "${WPID[$w]}"
    WDEAD[$w]=$?
    fail "worker $w exited ${WDEAD[$w]} during the outages: $(grep -v ': consumed (' "$ROOT/$w.err" | tail -3)"
  fi
done
[ "${#WDEAD[@]}" = "${#WORKERS[@]}" ] && die "no worker left to run the jobs"

# --- the end: stop posting, let everything run
sleep 2
touch "$STOP"
wait $PPA
wait $PPB
[ -e "$ROOT/poster-errors" ] && fail "$(sort "$ROOT/poster-errors" | uniq -c)"
cat "$ROOT/posted-A" "$ROOT/posted-B" "$ROOT/offline-kill" \
  "$ROOT/offline-stop" >"$ROOT/all-posted"
printf '%s\n%s\n' "$P1" "$P2" >>"$ROOT/all-posted"
N=$(wc -l <"$ROOT/all-posted")
ran() { cat "$ROOT"/run-*.log 2>/dev/null | wc -l; }
all_ran() { [ "$(ran)" -ge "$N" ]; }
wait_until 90 "all $N jobs run: only $(ran)" all_ran
empty() {
  [ "$(rcli hlen "$NS:listings")" = 0 ] && [ "$(count "$A")" = 0 ] &&
    [ "$(count "$B")" = 0 ] && [ "$(count "$C")" = 0 ]
}
wait_until 30 "Redis and the boards empty" empty ||
  fail "  Redis lists $(rcli hlen "$NS:listings"); boards count A $(count "$A"), B $(count "$B"), C $(count "$C")"
for w in "${WORKERS[@]}"; do
  [ -n "${WDEAD[$w]:-}" ] || worker_stop "$w"
done
for d in A B C; do sync_stop $d; done

logs=(--logs parker="$ROOT/run-parker.log")
for w in "${WORKERS[@]}"; do logs+=("$w=$ROOT/run-$w.log"); done
"$PY" "$PEER" audit --posted all="$ROOT/all-posted" "${logs[@]}" \
  >"$ROOT/audit" || fail "the jobs did not run exactly once each"
cat "$ROOT/audit"
note "$N jobs, total $(since)s"
finish
