#!/bin/bash
# tests/run_now.sh - `jobboard run-now` and `jobboard dead purge UUID...`
# through the CLI: a delayed job made claimable at once in its place (no
# due time shown, its attempts kept, a waiting worker woken), a job
# claimable already left alone, a claimed job refused (exit 4), an unknown
# job (exit 3), a bad uuid (exit 2), each UUID on its own; dead letters
# deleted by uuid (the others stay, check finds the board sound), and the
# purge forms: UUIDs, or --older-than / --all, not both, not neither.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit. Each step is a TAP line (tests/lib/harness.sh).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/board.sh"

# bury NAME: a dead letter, its uuid in $uuid.
bury() {
  post "$1"
  jb claim --who w "$uuid"; expect_ok "claim $1"
  jb abandon --who w --dead "$uuid"; expect_ok "abandon --dead $1"
}

begin "run-now: a delayed job is claimable at once, in its place, its attempts kept"
post first
a=$uuid
post --delay 3600 --max-attempts 4 delayed
d=$uuid
post last
c=$uuid
jb claim --who w "$d"; expect_rc 12 "claim before the due time"
jb --json run-now "$d"; expect_ok "run-now"
pycheck 'j == {"uuid": "'"$d"'", "state": "UNCLAIMED"}' "run-now --json"
jb --json show "$d"
pycheck 'j["not_before"] is None and j["max_attempts"] == 4 and j["attempts"] == 0' "show after run-now"
jb --json list
pycheck '[l["uuid"] for l in lines] == ["'"$a"'", "'"$d"'", "'"$c"'"]' "its place in the listing"
jb run-now "$d"; expect_ok "run-now again: claimable already"
jb run-now "$a"; expect_ok "run-now of a ready job"
jb claim-next --who w; expect_out "$a" "claim-next order: first"
jb claim-next --who w; expect_out "$d" "claim-next order: the job run now"
jb check; expect_ok "check"
end

begin "run-now: a waiting worker is woken by it"
post --delay 3600 later
d=$uuid
"$JOBBOARD" --board "$B" claim-next --who waiter --wait 30 >"$ROOT/w.out" 2>&1 &
wpid=$!
sleep 0.3
jb run-now "$d"; expect_ok "run-now"
t0=$(date +%s)
wait "$wpid" || fail "claim-next --wait: exit $?: $(cat "$ROOT/w.out")"
[ "$(cat "$ROOT/w.out")" = "$d" ] || fail "the waiter claimed $(cat "$ROOT/w.out"), not $d"
[ $(($(date +%s) - t0)) -lt 20 ] || fail "the waiter waited for its timeout"
end

begin "run-now: claimed (exit 4), unknown (exit 3), bad uuid and no uuid (exit 2); each UUID on its own"
post --delay 3600 d1
d1=$uuid
post held
h=$uuid
jb claim --who holder-9 "$h"; expect_ok "claim"
before=$(digest)
jb run-now "$h"; expect_error 4 "claimed by holder-9"
jb run-now 00000000-0000-4000-8000-000000000000; expect_error 3 "not on the board"
jb run-now not-a-uuid; expect_rc 2 "bad uuid"
jb run-now; expect_rc 2 "no uuid"
jb run-now "$d1" not-a-uuid; expect_rc 2 "a bad uuid among them: nothing done"
[ "$(digest)" = "$before" ] || fail "a refused run-now changed the board"
jb run-now "$h" "$d1"; expect_rc 4 "the claimed one fails"
jb --json show "$d1"
pycheck 'j["not_before"] is None' "the other one ran now"
end

begin "dead purge UUID...: deletes those letters, the others stay; unknown uuid exit 3"
bury a
a=$uuid
bury b
b=$uuid
bury c
c=$uuid
jb dead purge "$b"; expect_ok "purge one"
jb --json dead list
pycheck 'sorted(l["uuid"] for l in lines) == sorted(["'"$a"'", "'"$c"'"])' "the others stay"
jb dead purge "$b" "$c"; expect_rc 3 "one already gone"
jb --json dead list
pycheck '[l["uuid"] for l in lines] == ["'"$a"'"]' "the known one deleted"
jb --json dead purge --yes "$a"; expect_ok "purge with --yes too"
pycheck 'j == {"uuid": "'"$a"'", "purged": True}' "purge --json"
jb dead purge "$a"; expect_error 3 "not in the dead letters"
jb dead purge not-a-uuid; expect_rc 2 "bad uuid"
jb check; expect_ok "check"
end

begin "dead purge: UUIDs or --older-than/--all, not both and not neither"
bury x
x=$uuid
jb dead purge; expect_error 2 "give the UUIDs"
jb dead purge --yes; expect_error 2 "give the UUIDs"
jb dead purge --all --yes "$x"; expect_error 2 "not both"
jb dead purge --older-than 1 --yes "$x"; expect_error 2 "not both"
jb dead purge --all; expect_error 2 "--yes"
jb --json dead list
pycheck '[l["uuid"] for l in lines] == ["'"$x"'"]' "nothing deleted"
jb dead purge --all --yes; expect_out "purged 1 dead letter" "purge --all"
end

finish
