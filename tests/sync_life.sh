#!/bin/bash
# tests/sync_life.sh - a job's life on a board shared through Redis,
# with a `jobboard sync` daemon and a taskflow 5.0
# worker (tests/sync_peer.py claim: taskflow's RedisJobBoard) on a
# redis-server of the test's own:
#  - a job posted with --not-before T on the board is not published (Redis
#    does not list it, taskflow's worker does not run it) while it is not
#    due, although a plain job posted after it is published and run; once
#    T passes, it is published and taskflow's worker runs it, and it
#    leaves the board;
#  - a job Redis decides, retried with a delay, is refused (taskflow's
#    board has no delays) and stays claimed; retried with --dead it is
#    trashed through Redis (NS:trash holds its posting) and is a dead
#    letter on the board that sent it there, cause buried, with its reason;
#  - attempts are the board's: a plain retry of a Redis-decided job goes
#    through Redis as an abandon and counts one attempt here;
#  - a deadline to start (post --expires) does not hold once the job is
#    published: a claim after it gets the job.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
redis_start
new_board "$A"
sync_start "$A" A --poll 0.5
STOP=$ROOT/stop
"$PY" "$PEER" claim "$SOCK" "$NS" tf "$ROOT/run-tf.log" "$STOP" \
  2>"$ROOT/tf.err" &
TFPID=$!
track $TFPID
ran() { grep -qx "$1" "$ROOT/run-tf.log" 2>/dev/null; }
now_s() { date +%s.%N; }

# 1. A delayed job is published when due, not before.
DELAY=8
due=$(awk -v t="$(now_s)" -v d=$DELAY 'BEGIN { printf "%.6f", t + d }')
late=$(jb --board "$A" post later --not-before "@$due") || die "post --not-before"
plain=$(jb --board "$A" post plain) || die "post plain"
note "posted $late (due at @$due) and $plain"
wait_until 30 "taskflow's worker ran the plain job $plain" ran "$plain"
# Until shortly before the due time: not listed in Redis, not run.
while awk -v t="$(now_s)" -v d="$due" 'BEGIN { exit !(t < d - 0.5) }'; do
  if listed "$late" || ran "$late"; then
    fail "job $late was published before its due time (now $(now_s), due $due)"
    break
  fi
  sleep 0.2
done
wait_until 40 "taskflow's worker ran job $late once it was due" ran "$late"
awk -v t="$(now_s)" -v d="$due" 'BEGIN { exit !(t >= d) }' ||
  fail "job $late ran before its due time"
wait_until 20 "job $late left board A after taskflow consumed it" \
  sh -c "! '$JOBBOARD' show --board '$A' '$late' >/dev/null 2>&1"

# taskflow's worker stops now: the jobs below must stay unclaimed by it.
touch "$STOP"
wait "$TFPID" || fail "taskflow's worker exited $?: $(tail -5 "$ROOT/tf.err")"

# 2. Retries of a job Redis decides.
j=$(jb --board "$A" post retried) || die "post"
wait_until 20 "job $j published" listed "$j"
wait_until 20 "job $j is Redis-decided on A" sh -c \
  "'$JOBBOARD' show --board '$A' --json '$j' | grep -q '\"remote\":true'"
jb --board "$A" claim --who w --redis "$URL" --namespace "$NS" "$j" ||
  fail "claim of $j through Redis"
out=$(jb --board "$A" abandon --who w --retry-in 30 --redis "$URL" \
  --namespace "$NS" "$j" 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "a delayed retry of a Redis-decided job: exit $rc, expected 2 ($out)"
case $out in *"decided by Redis"*) ;; *) fail "message does not say why: $out" ;; esac
[ "$(rcli get "$NS:$j.owned")" = w ] || fail "the refused retry changed the claim in Redis"
out=$(jb --board "$A" abandon --who w --reason flaky --json --redis "$URL" \
  --namespace "$NS" "$j") || fail "a plain retry through Redis: $out"
case $out in *'"attempts":1'*) ;; *) fail "the retry counted no attempt: $out" ;; esac
[ -z "$(rcli get "$NS:$j.owned")" ] || fail "Redis still names an owner after the retry"
# A back-off is the board's policy, which Redis cannot keep: the job is
# given back at once (a worker that claimed it before its publication
# asks for the back-off, and must not be refused).
jb --board "$A" claim --who w --redis "$URL" --namespace "$NS" "$j" ||
  fail "claim of $j for the back-off retry"
out=$(jb --board "$A" abandon --who w --retry-in backoff --json --redis "$URL" \
  --namespace "$NS" "$j") || fail "a back-off retry through Redis: $out"
case $out in *'"attempts":2'*'"not_before":null'*) ;;
  *) fail "the back-off retry: $out (expected attempts 2, at once)" ;; esac
[ -z "$(rcli get "$NS:$j.owned")" ] || fail "Redis still names an owner after the back-off retry"
jb --board "$A" claim --who w --redis "$URL" --namespace "$NS" "$j" ||
  fail "second claim of $j"
jb --board "$A" abandon --who w --dead --reason "give up" --redis "$URL" \
  --namespace "$NS" "$j" || fail "retry --dead through Redis"
[ "$(rcli hexists "$NS:trash" "$j")" = 1 ] || fail "NS:trash does not hold $j"
listed "$j" && fail "Redis still lists $j"
out=$(jb --board "$A" dead show --json "$j") || fail "no dead letter of $j on A"
case $out in *'"cause":"buried"'*'"reason":"give up"'*) ;; *) fail "dead letter: $out" ;; esac

# 3. A deadline to start is the board's alone: once the job is published
# Redis decides it and keeps no deadline, so a claim after the deadline
# gets it (the sweep drops the entry rather than ending a job another
# host may be claiming).
posted=$(now_s)
e=$(jb --board "$A" post deadline --expires 6) || die "post --expires"
wait_until 20 "job $e is Redis-decided on A" sh -c \
  "'$JOBBOARD' show --board '$A' --json '$e' | grep -q '\"remote\":true'"
awk -v t="$(now_s)" -v p="$posted" 'BEGIN { exit !(t < p + 6) }' ||
  fail "job $e was published after its deadline (the step cannot show anything)"
while awk -v t="$(now_s)" -v p="$posted" 'BEGIN { exit !(t < p + 6.5) }'; do
  sleep 0.2
done
out=$(jb --board "$A" claim-next --who w --redis "$URL" --namespace "$NS" 2>&1) ||
  fail "claim-next after the deadline of a published job: $out"
[ "$out" = "$e" ] || fail "claim-next after the deadline gave '$out', expected $e"
[ "$(rcli get "$NS:$e.owned")" = w ] || fail "Redis does not name w the owner of $e"
out=$(jb --board "$A" history --json 2>&1)
case $out in *"$e"*) fail "job $e is in the history: $out" ;; esac
jb --board "$A" check >/dev/null || fail "check after the published deadline"

sync_stop A
# The daemon met no error on the way (a delayed job published when due
# once made its mirror call the board damaged).
grep ' sync: error' "$ROOT/sync-A.log" &&
  fail "the sync daemon logged errors"
finish
