#!/bin/bash
# tests/sync_outcome.sh - how a job ended reaches every board synced
# through Redis. Two boards (hosts A and B), each with its `jobboard sync`
# daemon, on a redis-server of the test's own. Jobs posted on A are claimed
# and completed on B through Redis; then on A:
#  1. a `consume --failed --result '{"err":"x"}'` on B: A's history says
#     failed with that result, and so does `wait-done` (it said consumed,
#     no result); Redis keeps the record beside taskflow's keys
#     (NS:U.outcome, with an expiry of at most 7 days) and taskflow's keys
#     are left as a consume leaves them;
#  2. an `abandon --dead --reason poison` on B: a dead letter on A and on B
#     with cause buried and reason poison (it said trashed, no reason);
#  3. a `cancel` on B: A's history says cancelled;
#  4. a plain consume on B: A's history says consumed, no result, and no
#     outcome record is left in Redis.
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

# post_shared NAME: a job posted on A, published and mirrored on B.
post_shared() {
  local j
  j=$(jb --board "$A" post "$1") || die "post $1 on A"
  wait_until 20 "job $j published from A" listed "$j" || return 1
  wait_until 20 "job $j reached B" on_board "$B" "$j" || return 1
  echo "$j"
}
gone_from_a() { ! on_board "$A" "$1"; }
has() { # has WHAT TEXT NEEDLE
  case $2 in *"$3"*) ;; *) fail "$1: no $3 in: $2" ;; esac
}

# 1. A failure with a result.
j=$(post_shared failing) || finish
jb --board "$B" claim --who wb "${R[@]}" "$j" || fail "claim $j on B"
jb --board "$B" consume --who wb --failed --result '{"err":"x"}' "${R[@]}" \
  "$j" || fail "consume --failed of $j on B"
wait_until 20 "job $j left A" gone_from_a "$j"
h=$(jb --board "$A" history --json | grep "\"uuid\":\"$j\"")
has "A's history of $j" "$h" '"outcome":"failed"'
has "A's history of $j" "$h" '"result":{"err":"x"}'
has "A's history of $j" "$h" '"owner":"wb"'
w=$(jb --board "$A" wait-done --timeout 5 --json "$j") ||
  fail "wait-done $j on A"
has "A's wait-done of $j" "$w" '"outcome":"failed"'
has "A's wait-done of $j" "$w" '"result":{"err":"x"}'
[ "$(rcli exists "$NS:$j.owned")$(rcli hexists "$NS:listings" "$j")" = 00 ] ||
  fail "taskflow's keys of $j are not as a consume leaves them"
ttl=$(rcli pttl "$NS:$j.outcome")
if [ "$ttl" -le 0 ] || [ "$ttl" -gt $((7 * 24 * 3600 * 1000)) ]; then
  fail "NS:$j.outcome has PTTL $ttl ms, expected 1..7 days"
fi

# 2. A dead letter with a reason.
j=$(post_shared poisoned) || finish
jb --board "$B" claim --who wb "${R[@]}" "$j" || fail "claim $j on B"
jb --board "$B" abandon --who wb --dead --reason poison "${R[@]}" "$j" ||
  fail "abandon --dead of $j on B"
wait_until 20 "job $j left A" gone_from_a "$j"
for side in A B; do
  dir=$A
  [ $side = B ] && dir=$B
  d=$(jb --board "$dir" dead show --json "$j") ||
    { fail "no dead letter of $j on $side"; continue; }
  has "$side's dead letter of $j" "$d" '"cause":"buried"'
  has "$side's dead letter of $j" "$d" '"reason":"poison"'
done
[ "$(rcli hexists "$NS:trash" "$j")" = 1 ] || fail "NS:trash does not hold $j"

# 3. A cancel.
j=$(post_shared cancelled) || finish
jb --board "$B" cancel "${R[@]}" "$j" || fail "cancel $j on B"
wait_until 20 "job $j left A" gone_from_a "$j"
w=$(jb --board "$A" wait-done --timeout 5 --json "$j") ||
  fail "wait-done $j on A"
has "A's wait-done of $j" "$w" '"outcome":"cancelled"'

# 4. A plain consume stays plain, and leaves no record.
j=$(post_shared plain) || finish
jb --board "$B" claim --who wb "${R[@]}" "$j" || fail "claim $j on B"
jb --board "$B" consume --who wb "${R[@]}" "$j" || fail "consume $j on B"
wait_until 20 "job $j left A" gone_from_a "$j"
w=$(jb --board "$A" wait-done --timeout 5 --json "$j") ||
  fail "wait-done $j on A"
has "A's wait-done of $j" "$w" '"outcome":"consumed"'
has "A's wait-done of $j" "$w" '"result":null'
[ "$(rcli exists "$NS:$j.outcome")" = 0 ] ||
  fail "a plain consume left an outcome record"

sync_stop A
sync_stop B
grep ' sync: error' "$ROOT"/sync-*.log && fail "a sync daemon logged errors"
finish
