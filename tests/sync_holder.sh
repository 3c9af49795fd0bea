#!/bin/bash
# tests/sync_holder.sh - a process-bound claim on a Redis-decided job whose
# holder dies. Two boards (hosts A and B), each with its
# `jobboard sync` daemon, on a redis-server of the test's own.
#
# A job posted on A is published; a `jobboard work --redis` worker on A (no
# --lease: its claim is bound to its process, which Redis cannot see) claims
# it and runs a CMD that sleeps. Then:
#  - while the holder lives, its claim stays in Redis: the owner key names
#    the holder and (a second after the claim: the daemon's first round)
#    has an expiry of at most the keep-alive (2 s), and it is
#    still there after 5 s (the daemon renews it); a worker on B meanwhile
#    does not get the job;
#  - the holder is killed -9, and:
#     a. with A's daemon alive (--keepalive 6): the daemon abandons the
#        dead holder's claim in Redis at its next round: the owner key is
#        gone (or is B's) within a third of the keep-alive (plus 1.5 s);
#     b. with A's daemon killed -9 too (host A dies whole; --keepalive 2):
#        the owner key lapses by itself within the keep-alive (plus 1.5 s);
#  - B's worker then claims the job, runs it and consumes it: Redis lists
#    nothing, B counts 0, and A counts 0 too (in b, once A's daemon is
#    started again: the job done elsewhere leaves A and is not run there).
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
B=$ROOT/hostB
SLACK=1.5

redis_start
new_board "$A"
new_board "$B"

owner_key() { rcli get "$NS:$1.owned"; }
ms_since() { # ms_since T0 (T0 from date +%s%N)
  echo $((($(date +%s%N) - $1) / 1000000))
}

scenario() { # scenario a|b KEEPALIVE
  local sc=$1 j holder=A-holder-$1 taker=B-taker-$1 hpid bpid t0 ms rc pttl
  KEEPALIVE=$2
  note "scenario $sc (--keepalive $KEEPALIVE)"
  sync_start "$A" A --poll 0.5 --keepalive $KEEPALIVE
  sync_start "$B" B --poll 0.5 --keepalive $KEEPALIVE
  j=$(jb --board "$A" post "hold-$sc") || die "post on A"
  wait_until 20 "job $j published from A" listed "$j" || return
  wait_until 20 "job $j reached B" on_board "$B" "$j" || return

  "${JB[@]}" --board "$A" work --who "$holder" --redis "$URL" --namespace "$NS" \
    --jobs 1 -- sh -c 'echo $$ >"$1"; echo "$JOBBOARD_UUID" >>"$2"; exec sleep 600' \
    sh "$ROOT/holder-$sc.cmdpid" "$ROOT/started-$sc.log" \
    2>"$ROOT/holder-$sc.err" &
  hpid=$!
  track $hpid
  started() { grep -qx "$j" "$ROOT/started-$sc.log" 2>/dev/null; }
  if ! wait_until 15 "the holder on A did not start job $j" started; then
    fail "  holder's stderr: $(head -c 800 "$ROOT/holder-$sc.err")"
    return
  fi
  [ "$(owner_key "$j")" = "$holder" ] ||
    fail "$sc: Redis says job $j is owned by '$(owner_key "$j")', expected $holder"
  # The claim is sent with the default keep-alive (30 s: the worker does
  # not know the daemon's); the daemon's first round (every third of
  # --keepalive) brings it down to the keep-alive.
  note "$sc: PTTL of the holder's owner key right after the claim: $(rcli pttl "$NS:$j.owned") ms"
  sleep "$(awk -v k=$KEEPALIVE 'BEGIN { print k / 3 + 0.7 }')"
  pttl=$(rcli pttl "$NS:$j.owned")
  if [ "$pttl" -le 0 ] || [ "$pttl" -gt $((KEEPALIVE * 1000)) ]; then
    fail "$sc: the holder's owner key has PTTL $pttl ms: a process-bound claim must expire in Redis within the keep-alive (${KEEPALIVE}000 ms), or it never lapses if host A dies"
  fi

  # The taker on B waits; it must not get the job while the holder lives.
  "${JB[@]}" --board "$B" work --who "$taker" --redis "$URL" --namespace "$NS" \
    --jobs 1 --timeout 60 -- sh -c 'echo "$JOBBOARD_UUID" >>"$1"' sh \
    "$ROOT/run-$sc.log" 2>"$ROOT/taker-$sc.err" &
  bpid=$!
  track $bpid
  sleep 5
  [ "$(owner_key "$j")" = "$holder" ] ||
    fail "$sc: 5 s later, with the holder alive, Redis says job $j is owned by '$(owner_key "$j")' (the keep-alive did not renew it?)"
  [ -s "$ROOT/run-$sc.log" ] &&
    fail "$sc: B's worker ran $(cat "$ROOT/run-$sc.log") while A's holder of $j was alive"
  kill -0 $bpid 2>/dev/null ||
    fail "$sc: B's worker exited early: $(head -c 600 "$ROOT/taker-$sc.err")"

  # The holder dies (with its host in b).
  t0=$(date +%s%N)
  kill -9 $hpid
  [ "$sc" = b ] && kill -9 "${SYNC_PID[A]}"
  wait $hpid 2>/dev/null
  [ -f "$ROOT/holder-$sc.cmdpid" ] && kill -9 "$(cat "$ROOT/holder-$sc.cmdpid")" 2>/dev/null
  lapsed() { [ "$(owner_key "$j")" != "$holder" ]; }
  wait_until 20 "$sc: the dead holder's claim of $j never left Redis" lapsed
  ms=$(ms_since "$t0")
  note "$sc: the dead holder's claim left Redis ${ms} ms after kill -9"
  # a: the daemon abandons a dead holder's claim at its next round (every
  # third of the keep-alive); b: nothing renews it, it expires.
  local within=$KEEPALIVE
  [ "$sc" = a ] && within=$(awk -v k=$KEEPALIVE 'BEGIN { print k / 3 }')
  awk -v ms="$ms" -v k="$within" -v s=$SLACK 'BEGIN { exit !(ms <= (k + s) * 1000) }' ||
    fail "$sc: the claim left Redis ${ms} ms after the holder died: more than ${within} s + ${SLACK} s"

  ran() { grep -qx "$j" "$ROOT/run-$sc.log" 2>/dev/null; }
  wait_until 20 "$sc: B's worker did not run job $j" ran || kill $bpid
  wait $bpid
  rc=$?
  [ "$rc" = 0 ] || fail "$sc: B's worker exited $rc: $(tail -c 600 "$ROOT/taker-$sc.err")"
  grep -q ": consumed" "$ROOT/taker-$sc.err" ||
    fail "$sc: B's worker did not consume $j: $(tail -c 600 "$ROOT/taker-$sc.err")"
  [ "$(rcli hexists "$NS:listings" "$j")" = 0 ] ||
    fail "$sc: job $j still listed in Redis after B consumed it"
  [ -z "$(owner_key "$j")" ] || fail "$sc: job $j still has an owner key in Redis"
  if [ "$sc" = b ]; then
    sync_start "$A" A --poll 0.5 --keepalive $KEEPALIVE
  fi
  zero() { [ "$(count "$A")" = 0 ] && [ "$(count "$B")" = 0 ]; }
  wait_until 20 "$sc: boards not empty" zero ||
    fail "  A counts $(count "$A"), B $(count "$B")"
  [ "$(grep -cx "$j" "$ROOT/run-$sc.log")" = 1 ] ||
    fail "$sc: job $j ran $(grep -cx "$j" "$ROOT/run-$sc.log") times on B"
  sync_alive A
  sync_alive B
  sync_stop A
  sync_stop B
}

# a: 6 s, so that the abandon at the daemon's next round (2 s) and the
# lapse of the last renewal (4 to 6 s) are told apart.
scenario a 6
scenario b 2
note "total $(since)s"
finish
