#!/bin/bash
# tests/sync_detach.sh - a synced board detached from Redis (`jobboard sync
# --detach`), its namespace changed, and the replicator's words about its
# namespace and about standing by:
#  - a board with jobs in every state Redis decides (published here and
#    unclaimed, posted by another board, claimed through Redis by a worker
#    elsewhere, a dead letter Redis decided) and one decided here (delayed,
#    never published) is detached: every job stays, as a local job; the
#    claim held through Redis is released (UNCLAIMED, an ABANDONED event);
#    the dead letter stays, now requeueable here; the board forgets its
#    URL and namespace; `status` says when and from what it was detached;
#    jobs are claimed and consumed with Redis gone;
#  - the namespace changed: detach, then sync with --namespace, the jobs
#    published under the new one;
#  - the first sync says which namespace it chose when none was given;
#  - a second sync on the same board says it stands by, and when it takes
#    over;
#  - refusals, nothing changed: a board not synced; a replicator running;
#    --detach with --namespace;
#  - a claim bound to a live `jobboard work` of this host is kept, and the
#    worker finishes the job on the detached board.
# Needs redis-server (tests/sync_lib.sh: skipped without it).
NS=taskflow # the default namespace: the first sync chooses it
. "${srcdir:-.}/tests/sync_lib.sh"

redis_start
A=$ROOT/a
B=$ROOT/b
new_board "$A"
new_board "$B"

# field DIR UUID KEY: the job's field in `show --json` (Python repr).
field() {
  "$JOBBOARD" show --board "$1" --json "$2" |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$3"
}
remote_count() { # remote_count DIR: jobs Redis decides on the board
  "$JOBBOARD" list --board "$1" --json |
    "$PY" -c 'import json,sys; print(sum(json.loads(l)["remote"] for l in sys.stdin if l.strip()))'
}

begin "the first sync says which namespace it chose"
"$JOBBOARD" --board "$A" sync --redis "$URL" 2>"$ROOT/first.log" &
p=$!
track $p
wait_until 10 "the first sync connected" grep -q 'elected' "$ROOT/first.log"
grep -q 'using namespace taskflow (the default; --namespace to choose)' \
  "$ROOT/first.log" || fail "no namespace line: $(head -3 "$ROOT/first.log")"
kill -TERM $p
wait $p
run "$JOBBOARD" --board "$A" status --json
case $out in
  *'"namespace": "taskflow"'* | *'"namespace":"taskflow"'*) ;;
  *) fail "board a is not synced with namespace taskflow: $out" ;;
esac
end

begin "a second sync on the board stands by, then takes over"
sync_start "$A" one
wait_until 10 "sync one elected" grep -q 'elected' "$ROOT/sync-one.log"
sync_start "$A" two
wait_until 10 "sync two says it stands by" \
  grep -q 'standing by: another replicator (pid '"${SYNC_PID[one]}"')' \
  "$ROOT/sync-two.log"
grep -q 'using namespace' "$ROOT/sync-two.log" &&
  fail "a sync of a synced board named the namespace as chosen"
sync_stop one
wait_until 10 "sync two says it takes over" \
  grep -q 'taking over: the other replicator stopped' "$ROOT/sync-two.log"
end

begin "refusal: detach while a replicator runs (nothing changed)"
run "$JOBBOARD" --board "$A" sync --detach
expect_error 2 "its replicator is running (pid ${SYNC_PID[two]})" "refused"
run "$JOBBOARD" --board "$A" status --json
case $out in
  *'"synced": true'* | *'"synced":true'*) ;;
  *) fail "board a is no longer synced after a refused detach: $out" ;;
esac
end

# Board a's jobs: detached with jobs in every state Redis decides.
begin "a board with jobs in every state is detached"
"$JOBBOARD" --board "$B" sync --redis "$URL" --namespace taskflow \
  2>>"$ROOT/sync-b.log" &
SYNC_PID[b]=$!
track $!
ours=$(jb --board "$A" post ours-ready)
claimed=$(jb --board "$A" post ours-claimed)
theirs=$(jb --board "$B" post theirs)
dead=$(jb --board "$A" post doomed)
later=$(jb --board "$A" post later --delay 3600)
listed_ns() { [ "$(rcli hexists "taskflow:listings" "$1")" = 1 ]; }
wait_until 10 "the jobs are published" \
  sh -c "[ \"\$(redis-cli -s '$SOCK' hlen taskflow:listings)\" -ge 4 ]"
wait_until 10 "theirs reaches board a" on_board "$A" "$theirs"
# Claimed through Redis by a worker elsewhere (board b's), and one that
# is trashed there: a dead letter Redis decided.
wait_until 10 "the claim reaches board b" on_board "$B" "$claimed"
jb --board "$B" claim --who elsewhere "$claimed" >/dev/null ||
  fail "cannot claim on board b"
wait_until 10 "doomed reaches board b" on_board "$B" "$dead"
jb --board "$B" claim --who elsewhere "$dead" >/dev/null &&
  jb --board "$B" trash --who elsewhere "$dead" >/dev/null ||
  fail "cannot claim and trash doomed on board b"
wait_until 10 "the claim is seen on board a" \
  sh -c "[ \"\$('$JOBBOARD' show --board '$A' --json '$claimed' | grep -c '\"owner\":\"elsewhere\"')\" = 1 ]"
wait_until 10 "doomed leaves board a" sh -c "! '$JOBBOARD' show --board '$A' '$dead' >/dev/null 2>&1"
sync_stop two
before=$("$JOBBOARD" count --board "$A")
[ "$(remote_count "$A")" -ge 3 ] || fail "board a holds $(remote_count "$A") Redis-decided jobs, expected 3"
run "$JOBBOARD" --board "$A" sync --detach
expect_ok "sync --detach"
case $out in
  *"detached board $A from $URL, namespace taskflow: 3 jobs are local now (1 claims released, 0 kept by live workers of this host), 1 dead letters kept"*) ;;
  *) fail "detach said: $out" ;;
esac
[ "$("$JOBBOARD" count --board "$A")" = "$before" ] ||
  fail "jobs lost: $before before, $("$JOBBOARD" count --board "$A") after"
[ "$(remote_count "$A")" = 0 ] || fail "Redis-decided jobs left: $(remote_count "$A")"
[ "$(field "$A" "$claimed" state)" = UNCLAIMED ] ||
  fail "the claim held through Redis is not released: $(field "$A" "$claimed" state)"
[ "$(field "$A" "$later" state)" = UNCLAIMED ] || fail "the delayed job changed"
for u in $ours $claimed $theirs $later; do
  on_board "$A" "$u" || fail "job $u left the board"
done
run "$JOBBOARD" --board "$A" check
expect_rc 0 "check of the detached board (keys, sequences, postings)"
end

begin "the detach is in the board's record, its events and status"
run "$JOBBOARD" --board "$A" status
case $out in
  *"not synced"*"last detach:"*"detached from $URL namespace taskflow: 3 jobs made local, 1 claims released"*) ;;
  *) fail "status does not say the detach: $out" ;;
esac
run "$JOBBOARD" --board "$A" status --json
case $out in
  *'"synced": false'*'"last_detach": "'*' detached from '*) ;;
  *'"synced":false'*'"last_detach":"'*' detached from '*) ;;
  *) fail "status --json does not say the detach: $out" ;;
esac
run timeout 2 "$JOBBOARD" --board "$A" watch --from 1 --json
case $out in
  *ABANDONED*"$claimed"* | *"$claimed"*ABANDONED* | *abandoned*"$claimed"* | *"$claimed"*abandoned*) ;;
  *) fail "no ABANDONED event for the released claim" ;;
esac
[ -e "$A/sync.status" ] && fail "sync.status is still there"
end

begin "the detached board's jobs are local: claimed and consumed without redis"
redis_kill
run "$JOBBOARD" --board "$A" claim --who here "$theirs"
expect_ok "claim of a job posted on another board"
run "$JOBBOARD" --board "$A" consume --who here "$theirs"
expect_ok "consume"
run "$JOBBOARD" --board "$A" dead list --json
case $out in
  *"$dead"*) ;;
  *) fail "the dead letter Redis decided is gone: $out" ;;
esac
run "$JOBBOARD" --board "$A" dead requeue "$dead"
expect_rc 0 "the dead letter is requeued here"
redis_start
end

begin "refusal: detach a board that is not synced (nothing changed)"
run "$JOBBOARD" --board "$A" sync --detach
expect_error 2 "is not synced with redis: nothing to detach" "refused"
run "$JOBBOARD" --board "$A" sync --detach --namespace other
expect_error 2 "--detach takes no --namespace" "refused"
end

begin "the namespace is changed: sync again with --namespace"
run "$JOBBOARD" --board "$B" sync --detach
expect_error 2 "its replicator is running" "refused on board b"
"$JOBBOARD" --board "$A" sync --redis "$URL" --namespace fresh \
  2>>"$ROOT/sync-fresh.log" &
SYNC_PID[fresh]=$!
track $!
wait_until 10 "board a's jobs are published under namespace fresh" \
  sh -c "[ \"\$(redis-cli -s '$SOCK' hexists fresh:listings '$ours')\" = 1 ]"
grep -q 'using namespace' "$ROOT/sync-fresh.log" &&
  fail "a sync given --namespace said it chose one"
run "$JOBBOARD" --board "$A" status --json
case $out in
  *'"namespace": "fresh"'* | *'"namespace":"fresh"'*) ;;
  *) fail "board a is not synced with namespace fresh: $out" ;;
esac
sync_stop fresh
end

begin "a claim bound to a live worker of this host is kept, and finished here"
k=$(jb --board "$B" post kept-job)
wait_until 10 "kept-job is published" listed "$k"
worker_start wk "$B" 3 --name kept-job
wait_until 10 "the worker runs kept-job" grep -qs "$k" "$ROOT/run-wk.log"
sync_stop b
run "$JOBBOARD" --board "$B" sync --detach
expect_ok "sync --detach with a worker holding a job"
case $out in
  *"claims released, 1 kept by live workers of this host)"*) ;;
  *) fail "detach said: $out" ;;
esac
[ "$(field "$B" "$k" owner)" = wk ] || fail "the worker's claim is not kept: $(field "$B" "$k" owner)"
wait_until 15 "the worker finishes kept-job here" \
  sh -c "! '$JOBBOARD' show --board '$B' '$k' >/dev/null 2>&1"
run "$JOBBOARD" --board "$B" history --json
case $out in
  *"$k"*) ;;
  *) fail "kept-job is not in board b's history" ;;
esac
worker_stop wk
end

finish
