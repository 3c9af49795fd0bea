#!/bin/bash
# tests/sync_unique.sh - unique keys and cancel on boards shared through
# Redis: two boards A and B, each with its
# `jobboard sync` daemon, on one namespace of a redis-server of the
# test's own, and a taskflow 5.0 worker (tests/sync_peer.py claim):
#  - `post --unique K` on A, then on B: refused on B (exit 11, A's job's
#    uuid printed); Redis names A's job as K's holder; once the job is
#    consumed (on B, through Redis) K is free on both boards, and the
#    other way round;
#  - Redis unreachable (paused): a post with a unique key is accepted on
#    A; when Redis answers again, A's replicator finds K held by B's live
#    job: A's job is not published and is a dead letter whose reason
#    names K and the holder; once B's job is consumed, `dead requeue`
#    brings it back and it is published;
#  - cancel of a published unclaimed job on A: gone from NS:listings and
#    from B's board, history "cancelled" on A; its unique key is free;
#  - cancel of a job claimed in Redis (by B): refused without --force
#    (exit 4, still listed and claimed); with --force gone from Redis, and
#    B's consume is refused (exit 3, not on the board);
#  - cancel --all --yes cancels the unclaimed Redis-decided jobs through
#    Redis;
#  - one schedule ticked on both boards: each run published once, the
#    other board's copy cancelled (history says why), no dead letter;
#  - taskflow's worker, started after the cancels, never runs a cancelled
#    job (it runs one posted beside them); a job it consumes (taskflow's
#    own script, which knows nothing of unique keys) leaves a stale
#    holder, and a post on B takes the key over.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
B=$ROOT/hostB
redis_start
new_board "$A"
new_board "$B"
R=(--redis "$URL" --namespace "$NS")
sync_start "$A" A --poll 0.5
sync_start "$B" B --poll 0.5
gone_from() { ! on_board "$1" "$2"; }
not_listed() { ! listed "$1"; }
# expect_exit CODE WHAT CMD...: run CMD (stdout kept in $out, stderr in
# $err); fail unless it exits CODE.
expect_exit() {
  local want=$1 what=$2 rc
  shift 2
  out=$("$@" 2>"$ROOT/err")
  rc=$?
  err=$(cat "$ROOT/err")
  [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want (out: $out; err: $err)"
}

# 1. One key across hosts.
u1=$(jb --board "$A" post first "${R[@]}" --unique K1) || die "post --unique K1 on A"
note "A posted $u1 with K1"
[ "$(rcli hget "$NS:unique" K1 | cut -d' ' -f1)" = "$u1" ] ||
  fail "Redis does not name $u1 as K1's holder: $(rcli hget "$NS:unique" K1)"
expect_exit 11 "post --unique K1 on B while A's job holds it" \
  jb --board "$B" post second "${R[@]}" --unique K1
[ "$out" = "$u1" ] || fail "B's refused post printed '$out', not A's job $u1"
case $err in *K1*"$u1"*) ;; *) fail "the refusal does not name K1 and $u1: $err" ;; esac
jb --board "$B" list --json | grep -q '"name":"second"' &&
  fail "B's refused post left a job on B"
wait_until 20 "job $u1 published" listed "$u1"
[ "$(rcli get "$NS:$u1.unique")" = K1 ] || fail "NS:$u1.unique is not K1"
# Still refused once published (the holder is listed now).
expect_exit 11 "post --unique K1 on B once $u1 is published" \
  jb --board "$B" post second "${R[@]}" --unique K1
wait_until 20 "job $u1 reached B" on_board "$B" "$u1"
jb --board "$B" claim --who wb "${R[@]}" "$u1" || fail "claim of $u1 on B"
jb --board "$B" consume --who wb "${R[@]}" "$u1" || fail "consume of $u1 on B"
[ -z "$(rcli hget "$NS:unique" K1)" ] || fail "K1 still held in Redis after the consume"
u2=$(jb --board "$B" post second "${R[@]}" --unique K1) ||
  fail "K1 is not free on B after $u1 was consumed"
note "B posted $u2 with K1"
wait_until 20 "job $u1 left A" gone_from "$A" "$u1"
expect_exit 11 "post --unique K1 on A while B's job holds it" \
  jb --board "$A" post third "${R[@]}" --unique K1
[ "$out" = "$u2" ] || fail "A's refused post printed '$out', not B's job $u2"
wait_until 20 "job $u2 published and on A" on_board "$A" "$u2"
jb --board "$A" claim --who wa "${R[@]}" "$u2" || fail "claim of $u2 on A"
jb --board "$A" consume --who wa "${R[@]}" "$u2" || fail "consume of $u2 on A"
wait_until 20 "job $u2 left B" gone_from "$B" "$u2"
u3=$(jb --board "$A" post third "${R[@]}" --unique K1) ||
  fail "K1 is not free on A after $u2 was consumed on A"
u3b=$(jb --board "$B" post fourth "${R[@]}" --unique K1 2>/dev/null)
[ $? = 11 ] && [ "$u3b" = "$u3" ] ||
  fail "B's post of K1 while $u3 holds it: '$u3b', expected exit 11 and $u3"

# 2. Redis unreachable: accepted here, refused at publication.
u5=$(jb --board "$B" post holder "${R[@]}" --unique K2) || die "post K2 on B"
wait_until 20 "job $u5 published" listed "$u5"
kill -STOP "$REDIS_PID"
note "redis paused"
u4=$(jb --board "$A" post offline "${R[@]}" --unique K2)
rc=$?
[ "$rc" = 0 ] && [ -n "$u4" ] ||
  fail "a post with a unique key while Redis is away: exit $rc (accepted here expected)"
on_board "$A" "$u4" || fail "the offline post $u4 is not on A"
kill -CONT "$REDIS_PID"
note "redis resumed; A posted $u4 with K2 offline, B's $u5 holds K2"
dead_u4() { jb --board "$A" dead show --json "$u4" >"$ROOT/dead4" 2>/dev/null; }
wait_until 30 "the offline job $u4 went to A's dead letters" dead_u4
listed "$u4" && fail "job $u4 was published although K2 is held by $u5"
grep -q K2 "$ROOT/dead4" && grep -q "$u5" "$ROOT/dead4" ||
  fail "the dead letter of $u4 does not name K2 and $u5: $(cat "$ROOT/dead4")"
on_board "$A" "$u4" && fail "job $u4 is still on A"
# Its history says dead with the same reason, as every dead letter's does.
h4=$(jb --board "$A" history --json | grep "$u4")
case $h4 in
  *'"outcome":"dead"'*'"reason":"not published: unique key \"K2\"'*) ;;
  *) fail "the history of the buried $u4: $h4 (expected outcome dead, its reason)" ;;
esac
[ "$(rcli hget "$NS:unique" K2)" = "$u5" ] || fail "K2's holder changed in Redis"
wait_until 20 "job $u5 on A" on_board "$A" "$u5"
jb --board "$A" claim --who wa "${R[@]}" "$u5" || fail "claim of $u5 on A"
jb --board "$A" consume --who wa "${R[@]}" "$u5" || fail "consume of $u5 on A"
jb --board "$A" dead requeue "$u4" || fail "requeue of $u4"
wait_until 20 "the requeued $u4 published" listed "$u4"
[ "$(rcli hget "$NS:unique" K2)" = "$u4" ] || fail "K2 is not $u4's in Redis"

# 3. Cancel of a published, unclaimed job.
u6=$(jb --board "$A" post cancelled "${R[@]}" --unique K3) || die "post u6"
wait_until 20 "job $u6 published and on B" on_board "$B" "$u6"
listed "$u6" || fail "job $u6 is not listed"
jb --board "$A" cancel "${R[@]}" "$u6" || fail "cancel of the published $u6 on A"
not_listed "$u6" || fail "Redis still lists the cancelled $u6"
[ -z "$(rcli hget "$NS:unique" K3)" ] || fail "K3 still held in Redis after the cancel"
on_board "$A" "$u6" && fail "the cancelled $u6 is still on A"
jb --board "$A" history --json --outcome cancelled 2>/dev/null | grep -q "$u6" ||
  fail "A's history does not say $u6 was cancelled"
wait_until 20 "the cancelled $u6 left B" gone_from "$B" "$u6"
u6b=$(jb --board "$B" post after-cancel "${R[@]}" --unique K3) ||
  fail "K3 is not free on B after $u6 was cancelled"

# 4. Cancel of a job claimed in Redis.
u7=$(jb --board "$A" post claimed "${R[@]}") || die "post u7"
wait_until 20 "job $u7 on B" on_board "$B" "$u7"
jb --board "$B" claim --who wb "${R[@]}" "$u7" || fail "claim of $u7 on B"
expect_exit 4 "cancel of $u7 claimed in Redis, without --force" \
  jb --board "$A" cancel "${R[@]}" "$u7"
case $err in *wb*) ;; *) fail "the refusal does not name the owner wb: $err" ;; esac
listed "$u7" || fail "the refused cancel took $u7 out of Redis"
[ "$(rcli get "$NS:$u7.owned")" = wb ] || fail "the refused cancel changed $u7's owner"
on_board "$A" "$u7" || fail "the refused cancel took $u7 off A"
jb --board "$A" cancel --force "${R[@]}" "$u7" || fail "cancel --force of $u7"
not_listed "$u7" || fail "Redis still lists $u7 after cancel --force"
[ -z "$(rcli get "$NS:$u7.owned")" ] || fail "$u7's owner key is left in Redis"
expect_exit 3 "B's consume of the force-cancelled $u7" \
  jb --board "$B" consume --who wb "${R[@]}" "$u7"
case $err in *"not on the board"*) ;; *) fail "B's refused consume says: $err" ;; esac

# 5. cancel --all --yes through Redis.
u8=$(jb --board "$B" post flushed "${R[@]}") || die "post u8"
u10=$(jb --board "$A" post kept "${R[@]}") || die "post u10"
wait_until 20 "job $u8 on A" on_board "$A" "$u8"
wait_until 20 "job $u10 on B" on_board "$B" "$u10"
jb --board "$A" claim --who wa "${R[@]}" "$u10" || fail "claim of $u10 on A"
n=$(jb --board "$A" cancel --all --yes "${R[@]}") || fail "cancel --all --yes: $n"
[ "$n" -ge 2 ] 2>/dev/null || fail "cancel --all --yes cancelled '$n' jobs (>= 2 expected: $u8, $u4, $u6b)"
not_listed "$u8" || fail "cancel --all left $u8 (posted on B) in Redis"
listed "$u10" || fail "cancel --all took the claimed $u10 out of Redis"
jb --board "$A" abandon --who wa "${R[@]}" "$u10" || fail "abandon of $u10"

# 6. taskflow's worker never runs a cancelled job.
u9=$(jb --board "$A" post cancelled-too "${R[@]}") || die "post u9"
u11=$(jb --board "$A" post runs "${R[@]}") || die "post u11"
u12=$(jb --board "$A" post taskflow-completes "${R[@]}" --unique K4) || die "post u12"
wait_until 20 "jobs $u9 and $u11 published" sh -c \
  "[ \"\$(redis-cli -s '$SOCK' hexists '$NS:listings' '$u9')\" = 1 ] &&
   [ \"\$(redis-cli -s '$SOCK' hexists '$NS:listings' '$u11')\" = 1 ]"
jb --board "$A" cancel "${R[@]}" "$u9" || fail "cancel of $u9"
STOP=$ROOT/stop
"$PY" "$PEER" claim "$SOCK" "$NS" tf "$ROOT/run-tf.log" "$STOP" \
  2>"$ROOT/tf.err" &
TFPID=$!
track $TFPID
ran() { grep -qx "$1" "$ROOT/run-tf.log" 2>/dev/null; }
wait_until 30 "taskflow's worker ran $u11" ran "$u11"
wait_until 30 "taskflow's worker ran $u10" ran "$u10"
# taskflow's consume knows nothing of NS:unique: K4 names a job Redis no
# longer lists, a stale holder, and B's post takes the key over.
wait_until 30 "taskflow's worker ran $u12" ran "$u12"
wait_until 20 "job $u12 left B" gone_from "$B" "$u12"
u13=$(jb --board "$B" post after-taskflow "${R[@]}" --unique K4) ||
  fail "K4 is not free on B after taskflow consumed its holder $u12"
[ "$(rcli hget "$NS:unique" K4 | cut -d' ' -f1)" = "$u13" ] ||
  fail "K4 is not $u13's in Redis: $(rcli hget "$NS:unique" K4)"
touch "$STOP"
wait "$TFPID" || fail "taskflow's worker exited $?: $(tail -5 "$ROOT/tf.err")"
for u in "$u6" "$u7" "$u8" "$u9"; do
  ran "$u" && fail "taskflow's worker ran the cancelled job $u"
done

# 6. One schedule ticked on both boards (same start: the same runs, the
# same keys schedule:beat:RUN_US): each run is published once across
# hosts; the other board's copy is cancelled there, not a dead letter.
for X in "$A" "$B"; do
  jb --board "$X" schedule add beat --every 60 --start @1790000000 \
    --job-name beat >/dev/null || die "schedule add on $X"
done
jb --board "$A" schedule run --at @1790000600 >/dev/null || fail "tick on A"
jb --board "$B" schedule run --at @1790000600 >/dev/null || fail "tick on B"
beats() { # beats DIR: the uuids of the beat jobs on the board
  jb --board "$1" list --json | "$PY" -c '
import json, sys
for l in sys.stdin:
    j = json.loads(l)
    if j["name"] == "beat": print(j["uuid"])'
}
cancelled_run() { # a board's history has the run cancelled
  jb --board "$A" history --json --outcome cancelled --name beat | grep -q . ||
    jb --board "$B" history --json --outcome cancelled --name beat | grep -q .
}
wait_until 30 "one copy of the run cancelled" cancelled_run
one_beat() {
  [ "$(beats "$A" | wc -l)" = 1 ] && [ "$(beats "$B" | wc -l)" = 1 ] &&
    [ "$(beats "$A")" = "$(beats "$B")" ] && listed "$(beats "$A")"
}
wait_until 30 "the run listed in Redis and on both boards, once" one_beat
for X in "$A" "$B"; do
  [ -z "$(jb --board "$X" dead list --json)" ] ||
    fail "a dead letter on $X for a run the other board posted"
done
h=$(jb --board "$A" history --json --outcome cancelled --name beat
    jb --board "$B" history --json --outcome cancelled --name beat)
case $h in
  *"posted by another board"*) ;;
  *) fail "the cancelled copy's history does not say why: $h" ;;
esac

sync_stop A
sync_stop B
grep ' sync: error' "$ROOT"/sync-*.log && fail "a sync daemon logged errors"
finish
