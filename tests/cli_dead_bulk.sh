#!/bin/bash
# tests/cli_dead_bulk.sh - bulk and reversible operations through the CLI:
# `policy --max-attempts none` back to no maximum (0 refused, and none
# refused where a job is posted); `dead requeue` and `dead purge` of a
# selection (--all, --name NAME or PREFIX*, --cause, --older-than, the
# filters together) with the count printed, --dry-run changing nothing,
# --json with the count and the uuids; a letter that cannot be requeued
# (its unique key held) left dead while the others go; `dead requeue
# --as-new` (a new uuid, the letter gone, the posting kept); the usage
# errors, each changing nothing.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit. Each step is a TAP line (tests/lib/harness.sh).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/board.sh"

# digest: the jobs and the dead letters, for "nothing changed".
digest() {
  { "$JOBBOARD" --board "$B" --json list; "$JOBBOARD" --board "$B" --json dead list; } \
    2>/dev/null | md5sum
}
# bury NAME [POST OPTIONS]: a dead letter (cause buried), its uuid in $uuid.
bury() {
  post "$@"
  jb claim --who w "$uuid"; expect_ok "claim $1"
  jb abandon --who w --dead "$uuid"; expect_ok "abandon --dead $1"
}
# trashed NAME: a dead letter of cause trashed, its uuid in $uuid.
trashed() {
  post "$1"
  jb claim --who w "$uuid"; expect_ok "claim $1"
  jb trash --who w "$uuid"; expect_ok "trash $1"
}
dead_uuids() {
  "$JOBBOARD" --board "$B" --json dead list | "$PYTHON" -c '
import json, sys
print(" ".join(sorted(json.loads(l)["uuid"] for l in sys.stdin if l.strip())))'
}

begin "policy --max-attempts none: back to no maximum; 0 refused, none only for policy"
jb init; expect_ok "init"
jb policy --max-attempts 3; expect_ok "a maximum"
jb policy --max-attempts none --json; expect_ok "none"
pycheck 'j["max_attempts"] is None' "no maximum again"
jb policy
case $out in *"max_attempts: none"*) ;; *) fail "policy shows: $out" ;; esac
jb policy --max-attempts 4; expect_ok "a maximum again"
jb policy --max-attempts 0; expect_error 2 "none for no maximum" "0 refused"
jb --json policy
pycheck 'j["max_attempts"] == 4' "a refused 0 changed nothing"
jb post x --max-attempts none; expect_error 2 "jobboard policy" "post takes no none"
jb count; expect_out 0 "nothing posted"
end

begin "dead requeue by --name, a prefix, --cause: the count, the others stay"
bury resize-a; a1=$uuid
bury resize-b; b1=$uuid
bury mail; m1=$uuid
trashed resize-a; t1=$uuid
jb dead requeue --name resize-a --cause buried; expect_out "requeued 1 dead letter" "one by name and cause"
[ "$(dead_uuids)" = "$(printf '%s\n' "$b1" "$m1" "$t1" | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "the others stay: $(dead_uuids)"
jb show "$a1" --json
pycheck 'j["state"] == "UNCLAIMED" and j["attempts"] == 0' "back on the board under its uuid"
jb --json dead requeue --name 'resize*'
pycheck 'j["requeued"] == 2 and sorted(j["uuids"]) == sorted(["'"$b1"'", "'"$t1"'"]) and j["failed"] == 0' "a prefix, --json"
jb dead requeue --cause trashed; expect_out "requeued 0 dead letters" "none left of that cause"
jb dead requeue --all; expect_out "requeued 1 dead letter" "--all: mail"
jb dead list; expect_out "" "no letter left"
jb count; expect_out 4 "all four on the board"
end

begin "dead requeue/purge --dry-run: lists what would be done, changes nothing"
bury a; x1=$uuid
bury b; x2=$uuid
before=$(digest)
jb dead requeue --all --dry-run; expect_rc 0 "dry run"
case $out in *"$x1"*"$x2"*"would requeue 2 dead letters"*) ;; *) fail "dry run says: $out" ;; esac
jb --json dead purge --name b --dry-run
pycheck 'j == {"dry_run": True, "would_purge": 1, "uuids": ["'"$x2"'"]}' "purge dry run, --json"
[ "$(digest)" = "$before" ] || fail "a dry run changed the board"
end

begin "dead purge by --cause, --older-than: needs --yes, prints the count"
bury kept; k1=$uuid
trashed old; o1=$uuid
before=$(digest)
jb dead purge --cause trashed; expect_error 2 "--yes" "purge of a selection without --yes"
[ "$(digest)" = "$before" ] || fail "a refused purge changed the board"
sleep 6
trashed new; n1=$uuid
# The age asked: 2 s less than the old letter's now, more than the new
# one's by 4 s (the sleep), whatever the machine's load.
age=$("$JOBBOARD" --board "$B" --json dead show "$o1" | "$PYTHON" -c '
import json, sys, datetime
d = json.load(sys.stdin)["died"].replace("Z", "+00:00")
died = datetime.datetime.fromisoformat(d).timestamp()
print("%.3f" % (datetime.datetime.now().timestamp() - died - 2))')
jb dead purge --cause trashed --older-than "$age" --yes; expect_out "purged 1 dead letter" "the old trashed one"
[ "$(dead_uuids)" = "$(printf '%s\n' "$n1" "$k1" | sort | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "the new one and the buried one stay: $(dead_uuids)"
jb --json dead purge --older-than 0 --yes
pycheck 'j["purged"] == 2 and sorted(j["uuids"]) == sorted(["'"$n1"'", "'"$k1"'"])' "--older-than 0: every one"
jb check; expect_ok "check"
end

begin "dead requeue of a selection: a letter whose key is held stays, the others go (exit 11)"
bury keyed --unique K; d1=$uuid
post holder --unique K; h=$uuid
bury other; d2=$uuid
jb dead requeue --all; expect_rc 11 "one refused"
case $out in "requeued 1 dead letter") ;; *) fail "count: $out" ;; esac
case $err in *"K"*) ;; *) fail "the refusal names the key: $err" ;; esac
[ "$(dead_uuids)" = "$d1" ] || fail "the keyed letter stays: $(dead_uuids)"
jb show "$d2"; expect_rc 0 "the other requeued"
jb cancel "$h"; expect_ok "free the key"
jb --json dead requeue --all
pycheck 'j["requeued"] == 1 and j["uuids"] == ["'"$d1"'"]' "run again: the rest"
end

begin "dead requeue --as-new: a new uuid, the letter gone, name and details kept"
bury photo --details '{"n": 7}'; p1=$uuid
jb dead requeue --as-new "$p1"; expect_rc 0 "as new"
new=$out
case $new in ????????-????-????-????-????????????) ;; *) fail "prints the new uuid: $new" ;; esac
[ "$new" != "$p1" ] || fail "the same uuid"
jb show "$p1"; expect_rc 3 "the old uuid is not on the board"
jb dead show "$p1"; expect_rc 3 "the letter is gone"
jb --json show "$new"
pycheck 'j["name"] == "photo" and j["details"] == {"n": 7} and j["state"] == "UNCLAIMED" and j["attempts"] == 0' "the posting kept"
bury p2; q1=$uuid
bury p3; q2=$uuid
jb --json dead requeue --all --as-new
pycheck 'j["requeued"] == 2 and sorted(j["uuids"]) == sorted(["'"$q1"'", "'"$q2"'"]) and len(set(j["new_uuids"])) == 2 and not set(j["new_uuids"]) & set(j["uuids"])' "bulk --as-new, --json"
jb count; expect_out 3 "three new jobs"
jb check; expect_ok "check"
end

begin "usage errors: nothing changed"
bury u; u1=$uuid
before=$(digest)
jb dead requeue; expect_error 2 "give the UUIDs" "neither"
jb dead requeue --all "$u1"; expect_error 2 "not both" "UUIDs and a selection"
jb dead requeue --all --name u; expect_error 2 "--all takes every letter" "--all with a filter"
jb dead requeue --cause nonsense; expect_error 2 "not a cause" "bad cause"
jb dead requeue --dry-run "$u1"; expect_error 2 "--dry-run is for a selection" "dry run of UUIDs"
jb dead purge --as-new --all --yes; expect_error 2 "--as-new is for requeue" "--as-new on purge"
jb dead list --all; expect_error 2 "--all is" "list --all"
jb dead show "$u1" --name u; expect_error 2 "show takes one UUID" "show with a filter"
jb dead requeue --yes --all; expect_error 2 "--yes is for purge" "--yes on requeue"
[ "$(digest)" = "$before" ] || fail "a usage error changed the board"
jb dead list --name u; expect_rc 0 "list takes the filters"
case $out in "$u1 "*) ;; *) fail "list --name: $out" ;; esac
jb dead list --name other; expect_out "" "list --name of none"
end

finish
