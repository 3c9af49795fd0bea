#!/bin/bash
# tests/sync_dead_requeue.sh - dead letters of jobs Redis decided, posted
# again as new jobs. Two boards (hosts A and B), each with its `jobboard
# sync` daemon, on a redis-server of the test's own. Jobs posted on A are
# published, claimed on B through Redis and sent to the dead letters
# (`abandon --dead`); then on A:
#  1. `dead requeue UUID` is refused (exit 2, the message names --as-new)
#     and the letter stays;
#  2. `dead requeue --as-new UUID` prints a new uuid: the letter leaves A's
#     dead letters, the new job is published (NS:listings) and reaches B
#     with the posting's name and details, and the old uuid stays out of
#     the listings;
#  3. `dead requeue --all` of two such letters requeues none (exit 2,
#     "requeued 0"), and `dead requeue --all --as-new --json` posts both
#     again (their new uuids published).
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
R=(--redis "$URL" --namespace "$NS")

# dead_shared NAME: a job posted on A, published, claimed on B and buried
# there; its uuid once A holds its dead letter.
dead_shared() {
  local j
  j=$(jb --board "$A" post "$1" --details '{"n": 5}') || die "post $1 on A"
  wait_until 20 "job $j published from A" listed "$j" || return 1
  wait_until 20 "job $j reached B" on_board "$B" "$j" || return 1
  jb --board "$B" claim --who wb "${R[@]}" "$j" >/dev/null || fail "claim $j on B"
  jb --board "$B" abandon --who wb --dead --reason poison "${R[@]}" "$j" ||
    fail "abandon --dead of $j on B"
  wait_until 20 "the dead letter of $j on A" dead_on "$A" "$j" || return 1
  echo "$j"
}
dead_on() { jb --board "$1" dead show "$2" >/dev/null 2>&1; }
not_dead_on() { ! dead_on "$@"; }
has() { # has WHAT TEXT NEEDLE
  case $2 in *"$3"*) ;; *) fail "$1: no $3 in: $2" ;; esac
}

# 1. Refused under the same uuid.
j=$(dead_shared poisoned) || finish
out=$(jb --board "$A" dead requeue "$j" 2>"$ROOT/err")
rc=$?
[ "$rc" = 2 ] || fail "dead requeue of the Redis-decided $j: exit $rc, expected 2"
has "the refusal" "$(cat "$ROOT/err")" "--as-new"
dead_on "$A" "$j" || fail "the refused letter $j left A's dead letters"

# 2. Posted again as a new job.
n=$(jb --board "$A" dead requeue --as-new "$j") || fail "dead requeue --as-new $j"
case $n in ????????-????-????-????-????????????) ;; *) fail "--as-new printed '$n'" ;; esac
[ "$n" != "$j" ] || fail "--as-new kept the uuid"
not_dead_on "$A" "$j" || fail "the letter $j is still dead on A"
wait_until 20 "the new job $n published from A" listed "$n"
wait_until 20 "the new job $n reached B" on_board "$B" "$n"
s=$(jb --board "$B" show --json "$n")
has "B's copy of $n" "$s" '"name":"poisoned"'
has "B's copy of $n" "$s" '"details":{"n":5}'
listed "$j" && fail "the old uuid $j is listed again"

# 3. In bulk.
j1=$(dead_shared bulk-1) || finish
j2=$(dead_shared bulk-2) || finish
out=$(jb --board "$A" dead requeue --all 2>"$ROOT/err")
rc=$?
[ "$rc" = 2 ] || fail "dead requeue --all of Redis-decided letters: exit $rc, expected 2"
[ "$out" = "requeued 0 dead letters" ] || fail "dead requeue --all printed '$out'"
has "the bulk refusal" "$(cat "$ROOT/err")" "--as-new"
dead_on "$A" "$j1" && dead_on "$A" "$j2" || fail "refused letters left A's dead letters"
js=$(jb --board "$A" --json dead requeue --all --as-new) ||
  fail "dead requeue --all --as-new"
news=$(printf '%s' "$js" | "$PY" -c '
import json, sys
j = json.load(sys.stdin)
assert j["requeued"] == 2 and sorted(j["uuids"]) == sorted(sys.argv[1:]), j
print(" ".join(j["new_uuids"]))' "$j1" "$j2") || fail "--json of the bulk --as-new: $js"
for u in $news; do
  wait_until 20 "the new job $u published from A" listed "$u"
done
[ "$(jb --board "$A" dead list)" = "" ] || fail "letters left on A: $(jb --board "$A" dead list)"

sync_stop A
sync_stop B
finish
