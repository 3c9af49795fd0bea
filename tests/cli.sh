#!/bin/bash
# tests/cli.sh - the jobboard command line, end to end.
#
# Runs the built ./jobboard (or $JOBBOARD) against fresh boards under one
# mktemp -d directory, removed on exit. Each step is a TAP line
# (tests/lib/harness.sh); the script exits 1 if any failed. JSON output is
# checked with python3's json module (jq is not assumed).
#
# Under `make check` the working directory is the build directory.

set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
# A process that registers an entity and holds it (tests/entity_holder.c).
program ENTITY_HOLDER ./tests/entity_holder
HOLDER=$ENTITY_HOLDER
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-cli.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$ROOT"'
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

# Each step has a fresh board directory $B (not created).
step_setup() { B=$ROOT/board$step_no; }
# A failed command says one line "jobboard: ..." and nothing on stdout.
ERROR_PREFIX="jobboard: "

# jb ARGS: run jobboard on the step's board; sets $out, $err, $rc.
jb() {
  run "$JOBBOARD" --board "$B" "$@"
}

# Like run, with stdin from the file $1.
run_in() {
  local input=$1
  shift
  run "$@" <"$input"
}

is_uuid() {
  printf '%s\n' "$1" | grep -Eqx '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'
}

# count_is N WHAT: the board holds N jobs.
count_is() {
  local o=$out e=$err r=$rc
  jb count
  [ "$rc" = 0 ] && [ "$out" = "$1" ] ||
    fail "$2: count is '$out' (exit $rc), expected $1"
  out=$o err=$e rc=$r
}

# post NAME [ARGS]: post on $B and set $uuid; fails the test if it fails.
post() {
  jb post "$@"
  uuid=$out
  [ "$rc" = 0 ] && is_uuid "$uuid" || fail "post $*: exit $rc, '$out' $err"
}

# json_check PYTHON-EXPRESSION: each line of $out is a JSON object `j`
# (and `lines` is the list of them); the expression must be true.
json_check() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines()]
assert all(isinstance(j, dict) for j in lines), "not objects"
j = lines[0] if lines else None
ok = eval(sys.argv[1])
sys.exit(0 if ok else 1)
' "$1" 2>"$ROOT/pyerr" || fail "JSON check failed: $1 on: $out $(cat "$ROOT/pyerr")"
}

# --- tests ----------------------------------------------------------------

begin "version prints the library version"
run "$JOBBOARD" --version
expect_ok "--version"
printf '%s\n' "$out" | grep -Eqx 'jobboard [0-9]+\.[0-9]+\.[0-9]+' ||
  fail "--version printed '$out'"
end

begin "post creates the board and prints a uuid"
[ ! -e "$B" ] || fail "board exists before the test"
post first
[ -d "$B" ] || fail "post did not create $B"
count_is 1 "after one post"
end

begin "round trip: post, list, show, claim, owner, state, abandon, consume, trash"
post alpha --details '{"path": "/srv/a.png", "n": [1, 2.5, true, null]}' \
  --priority high --book-name book1 --book-uuid 0B1C2D3E-4F50-4617-8293-A4B5C6D7E8F9
a=$uuid
post beta
b=$uuid
jb list --no-header
expect_ok "list"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "list has not 2 lines: $out"
printf '%s\n' "$out" | head -1 | grep -q "^$a  HIGH *  UNCLAIMED  [0-9]*s *  0 *  - *  -      alpha\$" ||
  fail "list line for alpha: $out"
jb show "$a"
expect_ok "show"
printf '%s\n' "$out" | grep -qx 'name: *alpha' || fail "show name: $out"
printf '%s\n' "$out" | grep -qx 'priority: *HIGH' || fail "show priority: $out"
printf '%s\n' "$out" | grep -qx 'book: *book1 0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9' ||
  fail "show book (stored lowercase): $out"
printf '%s\n' "$out" | grep -qF '{"path":"/srv/a.png","n":[1,2.5,true,null]}' ||
  fail "show details: $out"
jb state "$a"; expect_out UNCLAIMED "state before claim"
jb owner "$a"; expect_ok "owner of unclaimed"; expect_out "" "owner of unclaimed"
jb claim --who w1 "$a"; expect_ok "claim"; expect_out "" "claim prints nothing"
jb owner "$a"; expect_out w1 "owner after claim"
jb state "$a"; expect_out CLAIMED "state after claim"
jb count --unclaimed; expect_out 1 "count --unclaimed after claim"
jb count; expect_out 2 "count after claim"
jb abandon --who w1 "$a"; expect_ok "abandon"
jb state "$a"; expect_out UNCLAIMED "state after abandon"
jb owner "$a"; expect_out "" "owner after abandon"
jb claim --who w2 "$a"; expect_ok "claim again after abandon"
jb consume --who w2 "$a"; expect_ok "consume"
jb state "$a"; expect_out COMPLETE "state after consume"
jb show "$a"; expect_error 3 "$a" "show a consumed job"
jb claim --who w3 "$b"; expect_ok "claim beta"
jb trash --who w3 "$b"; expect_ok "trash"
jb state "$b"; expect_out COMPLETE "state after trash"
count_is 0 "after consume and trash"
jb check; expect_ok "check after the round trip"
printf '%s\n' "$out" | grep -qx 'board OK' || fail "check: $out"
end

begin "--durability interval: posts flushed within the interval; a bad JOBBOARD_FLUSH_INTERVAL refused, nothing written"
BI=$ROOT/interval
run env JOBBOARD_FLUSH_INTERVAL=50ms "$JOBBOARD" --board "$BI" --durability interval --quiet post one
expect_ok "post --durability interval"
[ -s "$BI/steady" ] || fail "no steady file beside the interval board"
run env JOBBOARD_FLUSH_INTERVAL=2x "$JOBBOARD" --board "$BI" --durability interval post two
expect_error 2 "'2x' is not a duration for JOBBOARD_FLUSH_INTERVAL"
run env JOBBOARD_FLUSH_INTERVAL=0 "$JOBBOARD" --board "$BI" --durability interval post two
expect_error 2 "'0' is out of range for JOBBOARD_FLUSH_INTERVAL: from 1ms to 1d"
run "$JOBBOARD" --board "$BI" count
expect_out 1 "count after the refusals"
run "$JOBBOARD" --board "$BI" --durability sometimes count
expect_error 2 "expected full, normal, interval or none"
run "$JOBBOARD" --board "$BI" flush --interval 250ms --json
expect_ok "flush --interval 250ms"
printf '%s\n' "$out" | grep -q '"interval":true,"flush_interval_ms":250,' ||
  fail "flush --json: $out"
run "$JOBBOARD" --board "$BI" flush --interval 3x
expect_error 2 "'3x' is not a duration for --interval"
run "$JOBBOARD" --board "$BI" flush --json
printf '%s\n' "$out" | grep -q '"flush_interval_ms":250,' ||
  fail "the board's interval after a refused --interval: $out"
run "$JOBBOARD" --board "$ROOT/plain-flush" post x
run "$JOBBOARD" --board "$ROOT/plain-flush" flush
expect_ok "flush of a board that does not use interval"
printf '%s\n' "$out" |
  grep -Eqx 'flushed: newest commit [0-9]+ \(the board does not use durability interval\)' ||
  fail "flush of a plain board printed '$out'"
end

begin "claim-next takes VERY_HIGH before NORMAL before LOW, FIFO within one"
post n1; n1=$uuid
post l1 --priority low; l1=$uuid
post v1 --priority VERY_HIGH; v1=$uuid
post n2 --priority Normal; n2=$uuid
post v2 --priority very_high; v2=$uuid
post l2 --priority LOW; l2=$uuid
jb list --no-header
expect_ok "list"
got=$(printf '%s\n' "$out" | cut -c1-36 | tr '\n' ' ')
want="$v1 $v2 $n1 $n2 $l1 $l2 "
[ "$got" = "$want" ] || fail "list order: got $got want $want"
got=""
for i in 1 2 3 4 5 6; do
  jb claim-next --who w
  expect_ok "claim-next $i"
  got="$got$out "
done
[ "$got" = "$want" ] || fail "claim-next order: got $got want $want"
jb claim-next --who w
expect_error 3 "" "claim-next with everything claimed"
jb list --unclaimed; expect_ok "list --unclaimed"; expect_out "" "nothing unclaimed"
end

begin "list --limit stops early and --unclaimed skips claimed jobs"
post j1; j1=$uuid
post j2; j2=$uuid
post j3; j3=$uuid
jb claim --who w "$j1"
jb list --limit 2 --no-header; expect_ok "list --limit 2"
[ "$(printf '%s\n' "$out" | cut -c1-36 | tr '\n' ' ')" = "$j1 $j2 " ] ||
  fail "list --limit 2: $out"
jb list --unclaimed --no-header
[ "$(printf '%s\n' "$out" | cut -c1-36 | tr '\n' ' ')" = "$j2 $j3 " ] ||
  fail "list --unclaimed: $out"
jb list --limit 0; expect_ok "list --limit 0"; expect_out "" "list --limit 0"
end

begin "--json output is one JSON object per line with every field"
post jsonjob --details '{"k": {"deep": [1, "two"]}}' --priority low \
  --book-name bk --book-uuid 0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9
u1=$uuid
post plain
jb --json list
expect_ok "list --json"
json_check 'len(lines) == 2 and lines[0]["name"] == "plain" and lines[1]["uuid"] == "'"$u1"'"'
json_check 'set(lines[1]) == {"uuid","name","priority","sequence","created","modified","state","owner","claim","remote","book","details","not_before","attempts","max_attempts","time_limit","unique","last_reason","snoozes","max_snoozes","deadline","progress","paused"}'
json_check 'lines[0]["remote"] is False and lines[1]["remote"] is False'
json_check 'lines[1]["details"] == {"k": {"deep": [1, "two"]}} and lines[1]["priority"] == "LOW"'
json_check 'lines[1]["book"] == {"name": "bk", "uuid": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"} and lines[0]["book"] is None'
json_check 'lines[0]["owner"] is None and lines[0]["state"] == "UNCLAIMED" and lines[0]["sequence"] > lines[1]["sequence"]'
json_check '__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", j["created"]) is not None'
jb show --json "$u1"; expect_ok "show --json"
json_check 'len(lines) == 1 and j["uuid"] == "'"$u1"'" and j["details"]["k"]["deep"][1] == "two"'
jb claim-next --json --who w9; expect_ok "claim-next --json"
json_check 'j["name"] == "plain" and j["owner"] == "w9" and j["state"] == "CLAIMED"'
jb count --json; json_check 'j == {"count": 2}'
jb state --json "$u1"; json_check 'j == {"uuid": "'"$u1"'", "state": "UNCLAIMED"}'
jb owner --json "$u1"; json_check 'j["owner"] is None'
jb post --json another; json_check 'len(j["uuid"]) == 36'
jb check --json; expect_ok "check --json"; json_check 'lines[-1]["ok"] is True and lines[-1]["jobs"] == 3'
end

begin "global options work before and after the command"
post g1
run "$JOBBOARD" --json --board "$B" count
expect_ok "options before"; json_check 'j == {"count": 1}'
run "$JOBBOARD" count --board "$B" --json
expect_ok "options after"; json_check 'j == {"count": 1}'
JOBBOARD_DIR=$B run "$JOBBOARD" count
expect_ok "JOBBOARD_DIR"; expect_out 1 "count from \$JOBBOARD_DIR"
jb --durability NONE post g2; expect_ok "--durability NONE"
jb --durability normal count; expect_out 2 "--durability normal"
end

begin "post --batch posts every line in order"
printf '%s\n' '{"name": "b1"}' '' '{"name": "b2", "priority": "high", "details": {"x": 1}}' \
  '{"name": "b3", "book_name": "bk", "book_uuid": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"}' \
  >"$ROOT/batch"
run_in "$ROOT/batch" "$JOBBOARD" --board "$B" --quiet post --batch
expect_ok "post --batch"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] || fail "not 3 uuids: $out"
for u in $out; do is_uuid "$u" || fail "not a uuid: $u"; done
set -- $out
jb show --json "$1"; json_check 'j["name"] == "b1" and j["priority"] == "NORMAL"'
s1=$(printf '%s\n' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["sequence"])')
jb show --json "$2"; json_check 'j["name"] == "b2" and j["details"] == {"x": 1} and j["sequence"] == '"$s1"' + 1'
jb show --json "$3"; json_check 'j["name"] == "b3" and j["book"]["name"] == "bk" and j["sequence"] == '"$s1"' + 2'
end

begin "post --batch of 2500 lines posts them all, in order"
seq 1 2500 | sed 's/.*/{"name": "job-&"}/' >"$ROOT/big"
run_in "$ROOT/big" "$JOBBOARD" --board "$B" --durability none --quiet post --batch
expect_ok "big batch"
[ "$(printf '%s\n' "$out" | sort -u | wc -l)" -eq 2500 ] || fail "not 2500 distinct uuids"
first=$(printf '%s\n' "$out" | head -1)
last=$(printf '%s\n' "$out" | tail -1)
jb list --no-header
[ "$(printf '%s\n' "$out" | head -1 | cut -c1-36)" = "$first" ] || fail "first listed is not the first line"
[ "$(printf '%s\n' "$out" | tail -1 | cut -c1-36)" = "$last" ] || fail "last listed is not the last line"
printf '%s\n' "$out" | tail -1 | grep -q '  job-2500$' || fail "last job's name"
count_is 2500 "after the big batch"
end

begin "post --batch with a bad line anywhere posts nothing"
post existing
seq 1 1500 | sed 's/.*/{"name": "ok-&"}/' >"$ROOT/bad"
echo '{"name": "bad", "priority": "urgent"}' >>"$ROOT/bad"
seq 1 10 | sed 's/.*/{"name": "after-&"}/' >>"$ROOT/bad"
run_in "$ROOT/bad" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "line 1501" "bad priority on line 1501"
case $err in *urgent*) ;; *) fail "message does not name the priority: $err" ;; esac
count_is 1 "after the refused batch (line 1501 is past the first chunk)"
printf '%s\n' '{"name": "x"}' '{"name": "y", "details": [1]}' >"$ROOT/bad2"
run_in "$ROOT/bad2" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "line 2" "details not an object in a batch"
printf '%s\n' '{"name": "x"}' '{"name": "y"' >"$ROOT/bad3"
run_in "$ROOT/bad3" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "line 2" "invalid JSON in a batch"
printf '%s\n' '{"name": "x", "priorty": "high"}' >"$ROOT/bad4"
run_in "$ROOT/bad4" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "priorty" "unknown key in a batch"
count_is 1 "after every refused batch"
printf '%s\n' '{"name": "x"}' >"$ROOT/one"
run_in "$ROOT/bad3" "$JOBBOARD" --board "$ROOT/never-created" post --batch
expect_error 2 "line 2" "bad batch on a new board"
[ ! -e "$ROOT/never-created" ] || fail "a refused batch created the board"
end

begin "post --batch lines take the life options; a held or repeated unique key names its line"
printf '%s\n' \
  '{"name": "a", "delay": 30, "max_attempts": 3, "unique": "k1", "expires": "60", "max_snoozes": 2, "time_limit": 5}' \
  '{"name": "b", "not_before": "+3600", "expires": 0.5, "expires_dead": true}' >"$ROOT/life"
run_in "$ROOT/life" "$JOBBOARD" --board "$B" --quiet post --batch
expect_ok "a batch with life options"
jb list --json
json_check 'len(lines) == 2 and lines[0]["max_attempts"] == 3 and lines[0]["unique"] == "k1" and lines[0]["max_snoozes"] == 2 and lines[0]["time_limit"] == 5.0 and lines[0]["not_before"] and lines[0]["deadline"] and lines[1]["not_before"] and lines[1]["deadline"] and lines[1]["max_attempts"] is None'
printf '%s\n' '{"name": "c"}' '{"name": "c", "unique": "k1"}' >"$ROOT/held"
run_in "$ROOT/held" "$JOBBOARD" --board "$B" post --batch
expect_error 11 "line 2: unique key \"k1\" is held by job" "a held key in a batch"
printf '%s\n' '{"name": "c", "unique": "k2"}' '{"name": "d"}' '{"name": "c", "unique": "k2"}' >"$ROOT/twice"
run_in "$ROOT/twice" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "line 3: unique key \"k2\" is line 1's too" "a key twice in a batch"
for bad in '"delay": -1' '"delay": "5x"' '"max_attempts": 0' '"max_snoozes": "3"' \
    '"expires_dead": true' '"not_before": "tomorrow"' '"unique": 7' '"time_limit": 0'; do
  printf '{"name": "c", %s}\n' "$bad" >"$ROOT/badlife"
  run_in "$ROOT/badlife" "$JOBBOARD" --board "$B" post --batch
  expect_error 2 "line 1: ${bad%%:*}" "batch line with $bad"
done
count_is 2 "after the refused batches"
end

begin "an empty --who is refused (exit 2) and changes nothing"
post w1
jb claim --who "" "$uuid"; expect_error 2 "who" "claim --who ''"
jb claim-next --who ""; expect_error 2 "who" "claim-next --who ''"
jb state "$uuid"; expect_out UNCLAIMED "state after refused claims"
jb claim "$uuid"; expect_error 2 "--who" "claim without --who"
jb consume "$uuid"; expect_error 2 "--who" "consume without --who"
count_is 1 "after refused claims"
end

begin "an unknown priority is refused (exit 2) and posts nothing"
post p0
jb post p1 --priority urgent; expect_error 2 "urgent" "--priority urgent"
count_is 1 "after the refused post"
end

begin "details that are not a JSON object are refused (exit 2)"
post d0
jb post d1 --details '[1, 2]'; expect_error 2 "object" "--details array"
jb post d1 --details '"text"'; expect_error 2 "object" "--details string"
jb post d1 --details '{"a": 1,'; expect_error 2 "position" "--details malformed JSON"
count_is 1 "after the refused posts"
run "$JOBBOARD" --board "$ROOT/not-created" post d2 --details '[]'
expect_error 2 "object" "refused post on a new board"
[ ! -e "$ROOT/not-created" ] || fail "a refused post created the board"
end

begin "an empty key in details prints back as an empty key"
# msgpack-c gives an empty key no pointer, which must not print as
# {"$bin": ""} (an input tests/fuzz/fuzz_json.c found).
post emptykey --details '{"": {"t": 1}, "e": ""}'
jb show "$uuid" --json
json_check 'j["details"] == {"": {"t": 1}, "e": ""}'
end

begin "details keep a NUL inside a string; a name may not hold one"
post nul --details '{"s": "x\u0000y"}'
jb show "$uuid" --json
json_check 'j["details"] == {"s": "x\x00y"}'
printf '%s\n' '{"name": "n", "details": {"k": "v\u0000"}}' >"$ROOT/nul"
run_in "$ROOT/nul" "$JOBBOARD" --board "$B" post --batch
expect_rc 0 "batch line with a NUL in details"
printf '%s\n' '{"name": "a\u0000b"}' >"$ROOT/nulname"
run_in "$ROOT/nulname" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "NUL" "batch line with a NUL in the name"
# A raw NUL byte (not \u0000) is refused: a line taken for blank up to it
# would be skipped and the batch posted without it (an input
# tests/fuzz/fuzz_batch.c found).
printf '{"name": "a"}\n \000{"name": "b"}\n' >"$ROOT/nulbyte"
run_in "$ROOT/nulbyte" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "stdin line 2: a NUL byte at column 2" "batch line with a NUL byte"
count_is 2 "after the NUL posts"
end

begin "a refused post on a new board does not create it, whatever the field"
bad=$(printf 'bad-\377')
book=3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f
run "$JOBBOARD" --board "$B" post "$bad"
expect_error 2 "UTF-8" "name not UTF-8"
run "$JOBBOARD" --board "$B" post ok --book-name "$bad" --book-uuid "$book"
expect_error 2 "book name" "book name not UTF-8"
run "$JOBBOARD" --board "$B" post ok --book-name b --book-uuid 1234
expect_error 2 "book uuid" "malformed book uuid"
run "$JOBBOARD" --board "$B" post ok --book-name b
expect_error 2 "book" "book name without a uuid"
head -c 1100000 /dev/zero | tr '\0' a | sed 's/.*/{"name": "big", "details": {"blob": "&"}}/' >"$ROOT/big"
run_in "$ROOT/big" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "larger than" "posting over 1 MiB"
printf '{"name": "%s"}\n' "$bad" >"$ROOT/badname"
run_in "$ROOT/badname" "$JOBBOARD" --board "$B" post --batch
expect_error 2 "line 1" "batch line whose name is not UTF-8"
[ ! -e "$B" ] || fail "a refused post created the board directory"
end

begin "a malformed uuid is refused (exit 2) by every command taking one"
post m0
for cmd in show owner state "claim --who w" "abandon --who w" "consume --who w" "trash --who w"; do
  jb $cmd not-a-uuid
  expect_error 2 "not-a-uuid" "$cmd not-a-uuid"
done
jb state "${uuid}0"; expect_error 2 "not a uuid" "state with 37 characters"
jb state "$(printf '%s' "$uuid" | tr a-f A-F)"; expect_ok "uppercase uuid"
expect_out UNCLAIMED "uppercase uuid is the same job"
count_is 1 "after malformed uuids"
end

begin "a missing board directory is not found (exit 3) and is not created"
for cmd in list count check "claim-next --who w" "show 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f" \
  "state 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"; do
  jb $cmd
  expect_error 3 "$B" "$cmd on a missing board"
done
[ ! -e "$B" ] || fail "a read created the board directory"
end

begin "a board path that is a regular file is refused (exit 2)"
echo "not a board" >"$B"
jb count; expect_error 2 "$B" "count on a file"
jb post x; expect_error 2 "$B" "post on a file"
[ "$(cat "$B")" = "not a board" ] || fail "the file was changed"
end

begin "claiming a claimed job fails (exit 4) naming the owner"
post c1
jb claim --who alice "$uuid"; expect_ok "first claim"
jb claim --who bob "$uuid"; expect_error 4 "alice" "second claim"
jb claim --who alice "$uuid"; expect_error 4 "alice" "re-claim by the owner"
jb owner "$uuid"; expect_out alice "owner unchanged"
end

begin "consume, abandon and trash by a non-owner fail (exit 5) naming the owner"
post o1
jb claim --who alice "$uuid"
for op in consume abandon trash; do
  jb $op --who mallory "$uuid"
  expect_error 5 "alice" "$op by a non-owner"
done
jb owner "$uuid"; expect_out alice "owner unchanged"
count_is 1 "after refused operations"
post o2
jb consume --who alice "$uuid"; expect_error 3 "" "consume of an unclaimed job"
jb consume --who alice 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f
expect_error 3 "3f0d7e9c" "consume of an unknown job"
count_is 2 "after refused consumes"
end

begin "claim-next on an empty board exits 3"
post e1
jb claim --who w "$uuid"
jb consume --who w "$uuid"
count_is 0 "emptied"
jb claim-next --who w; expect_error 3 "" "claim-next on an empty board"
jb claim-next --json --who w; expect_rc 3 "claim-next --json on an empty board"
case $out in '{"error":{"code":"not_found","exit":3,'*) ;;
  *) fail "claim-next --json on an empty board: no error object: $out" ;; esac
end

begin "usage errors exit 2 with one line and a hint"
post u1
jb list --frobnicate; expect_error 2 "--frobnicate" "unknown option"
jb list --json=yes; expect_error 2 "--json" "value for a flag"
jb claim --who; expect_error 2 "--who" "missing option argument"
jb state "$uuid" extra; expect_error 2 "extra" "extra argument"
jb show; expect_error 2 "UUID" "missing operand"
jb list --limit -3; expect_error 2 "--limit" "negative limit"
jb count --durability sometimes; expect_error 2 "sometimes" "bad durability"
run "$JOBBOARD" frob; expect_error 2 "frob" "unknown command"
run "$JOBBOARD"; expect_error 2 "command" "no command"
run "$JOBBOARD" help frob; expect_error 2 "frob" "help for an unknown command"
count_is 1 "after usage errors"
end

begin "every subcommand's --help exits 0 and names its options"
check_help() { # check_help CMD OPTION...
  local cmd=$1 opt
  shift
  run "$JOBBOARD" "$cmd" --help
  expect_ok "$cmd --help"
  case $out in "Usage: jobboard $cmd"*) ;; *) fail "$cmd --help has no usage line" ;; esac
  for opt in "$@" --board --durability --json --help "Exit status" "Example"; do
    case $out in *"$opt"*) ;; *) fail "$cmd --help does not mention $opt" ;; esac
  done
  case $out in *"CORRUPT THE"*) ;; *) fail "$cmd --help lacks the durability warning" ;; esac
  run "$JOBBOARD" help "$cmd"
  expect_ok "help $cmd"
}
check_help post --details --priority --book-name --book-uuid --batch
check_help list --unclaimed --limit '$bin'
check_help show '$bin'
check_help claim --who --lease
check_help claim-next --who --lease
check_help abandon --who --token
check_help consume --who --token
check_help trash --who --token
check_help extend --who --lease --token
check_help expires-in
check_help owner
check_help state
check_help count --unclaimed
check_help check
check_help entities '$bin'
check_help cancel --force --all --yes
check_help dead --older-than --keep-attempts
check_help policy --max-attempts --backoff
check_help retention --history-max --dead-max-age none default
run "$JOBBOARD" demo --help
expect_rc 0 "demo --help"
[ -n "$out" ] || fail "demo --help printed nothing"
run "$JOBBOARD" --help
expect_ok "jobboard --help"
for cmd in post list show claim claim-next abandon consume trash extend expires-in owner state count check entities demo; do
  printf '%s\n' "$out" | grep -q "^  $cmd " || fail "global help does not list $cmd"
done
# The benchmarks are a program of their own: jobboard neither lists nor
# runs them, and says where they are.
printf '%s\n' "$out" | grep -q "^  bench " && fail "global help lists bench"
run "$JOBBOARD" bench --modes none
expect_error 2 "run jobboard-bench" "jobboard bench"
run "$JOBBOARD" help bench
expect_error 2 "run jobboard-bench" "jobboard help bench"
run "$JOBBOARD" --help claim
expect_ok "jobboard --help claim"
case $out in "Usage: jobboard claim "*) ;; *) fail "--help claim is not claim's help" ;; esac
end

begin "a lease lapses by itself; extend, expires-in and --token"
post leased
# A lease long enough for the checks below on a loaded machine (ASan
# commands take a second or more each), then cut to 1 s to see it lapse.
jb claim --who w1 --lease 60 --json "$uuid"
expect_ok "claim --lease"
token1=$(printf '%s\n' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["token"])')
jb expires-in --json "$uuid"
expect_ok "expires-in"
json_check '0 < j["expires_in_ms"] <= 60000'
jb claim --who w2 "$uuid"; expect_error 4 "w1" "claim while the lease holds"
jb show --json "$uuid"
json_check 'j["claim"]["token"] == '"$token1"' and j["claim"]["lease_expires"] and j["claim"]["holder_pid"] is None'
jb extend --who w1 --lease 1 --token "$token1" "$uuid"; expect_ok "extend to 1 s"
sleep 1.3
jb state "$uuid"; expect_out UNCLAIMED "state after the lease"
jb expires-in "$uuid"; expect_out "not claimed" "expires-in after the lease"
jb consume --who w1 "$uuid"; expect_error 3 "lapsed" "consume by the holder of a lapsed claim"
jb claim --who w1 --json "$uuid"
expect_ok "claim again under the same name"
token2=$(printf '%s\n' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["token"])')
[ "$token2" -gt "$token1" ] || fail "token $token2 is not above $token1"
jb expires-in "$uuid"; expect_out "no expiry" "expires-in of a plain claim"
jb consume --who w1 --token "$token1" "$uuid"
expect_error 5 "token $token1" "consume with the stale token"
jb extend --who w1 --lease 5 --token "$token1" "$uuid"
expect_error 5 "token" "extend with the stale token"
# 60 s, not 5: the consume below must come before the lease lapses on a
# loaded machine (a 5 s lease lapsed under an ASan run); the lower bound
# leaves 30 s for the commands between.
jb extend --who w1 --lease 60 --token "$token2" "$uuid"
expect_ok "extend with the current token"
jb expires-in --json "$uuid"
json_check '30000 < j["expires_in_ms"] <= 60000'
jb extend --who w1 "$uuid"; expect_error 2 "--lease" "extend without --lease"
jb claim --who w1 --lease 0 "$uuid"; expect_error 2 "lease" "--lease 0"
jb claim --who w1 --lease abc "$uuid"; expect_error 2 "lease" "--lease abc"
jb consume --who w1 --token 0 "$uuid"; expect_error 2 "token" "--token 0"
jb consume --who w1 --token "$token2" "$uuid"
expect_ok "consume with the current token"
jb state "$uuid"; expect_out COMPLETE "state after consume"
end

begin "text output escapes control characters: one job, one line"
post "$(printf 'two\nlines')"
jb list --no-header
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "list split a job over lines: $out"
case $out in *'two\nlines'*) ;; *) fail "name not escaped: $out" ;; esac
jb --json list
json_check 'j["name"] == "two\nlines"'
end

begin "entities on a board with none prints nothing and exits 0"
post first
jb entities; expect_ok "entities"; expect_out "" "entities with none"
jb --json entities; expect_ok "entities --json"; expect_out "" "entities --json with none"
jb entities extra; expect_error 2 "unexpected argument" "entities with an operand"
run "$JOBBOARD" --board "$ROOT/no-such-board" entities
expect_error 3 "no-such-board" "entities of a missing board"
end

begin "entities lists a running entity, and not once its process is killed"
post first
# entity_holder registers worker-7 of kind worker with {"zone": "a"}.
coproc HOLD { exec "$HOLDER" "$B" worker-7 worker 81a47a6f6e65a161; }
holder=$HOLD_PID
line=""
read -r -t 20 -u "${HOLD[0]}" line
[ "$line" = ready ] || fail "entity_holder did not register (said '$line')"
jb entities
expect_ok "entities with one running"
printf '%s\n' "$out" | grep -Eqx "worker-7  worker  $holder  [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z  \{\"zone\":\"a\"\}" ||
  fail "entities line: $out"
jb --json entities
expect_ok "entities --json with one running"
json_check "len(lines) == 1 and j['name'] == 'worker-7' and j['kind'] == 'worker' and j['pid'] == $holder and j['meta'] == {'zone': 'a'} and j['registered'].endswith('Z')"
kill -9 "$holder"
wait "$holder" 2>/dev/null
jb entities
expect_ok "entities after the kill"; expect_out "" "entities after the kill"
end

begin "an entity that unregisters is not listed"
post first
coproc HOLD { exec "$HOLDER" "$B" conductor-1 conductor; }
holder=$HOLD_PID
line=""
read -r -t 20 -u "${HOLD[0]}" line
[ "$line" = ready ] || fail "entity_holder did not register (said '$line')"
jb entities
printf '%s\n' "$out" | grep -q "^conductor-1  conductor  $holder  .*  {}\$" ||
  fail "entities line: $out"
eval "exec ${HOLD[1]}>&-" # its stdin closed: it unregisters and exits
wait "$holder"; rc=$?
[ "$rc" = 0 ] || fail "entity_holder exited with $rc"
jb entities
expect_ok "entities after unregister"; expect_out "" "entities after unregister"
end

begin "demo workers register as entities while they run, then unregister"
run "$JOBBOARD" demo --board "$B" --jobs 30 --workers 2 --durability none --json
expect_rc 0 "demo"
json_check "j['pass'] and j['registered'] == 2 and all(w['registered'] for w in j['workers'])"
jb entities
expect_ok "entities after the demo"; expect_out "" "entities after the demo"
end

# --- waits ----------------------------------------------------------------

begin "wait returns when a job is posted by another process, not before"
post first
jb claim-next --who holder
jb consume --who holder "$uuid" # the board exists, empty
"$JOBBOARD" --board "$B" wait --timeout 20 >"$ROOT/wait.out" 2>"$ROOT/wait.err" &
waiter=$!
sleep 0.4
kill -0 "$waiter" 2>/dev/null || fail "wait returned from an empty board"
post second
wait "$waiter"; rc=$?
[ "$rc" = 0 ] || fail "wait after a post: exit $rc ($(cat "$ROOT/wait.err"))"
[ "$(cat "$ROOT/wait.out")" = 1 ] || fail "wait printed '$(cat "$ROOT/wait.out")'"
jb claim-next --who holder # now one claimed job: `wait --claimable` must wait
"$JOBBOARD" --board "$B" wait --claimable --timeout 20 --json >"$ROOT/wait.out" 2>"$ROOT/wait.err" &
waiter=$!
sleep 0.4
kill -0 "$waiter" 2>/dev/null || fail "wait --claimable returned with nothing claimable"
post third
wait "$waiter"; rc=$?
[ "$rc" = 0 ] || fail "wait --claimable after a post: exit $rc ($(cat "$ROOT/wait.err"))"
out=$(cat "$ROOT/wait.out")
json_check "j == {'claimable': 1}"
end

begin "wait and claim-next --wait time out with exit 7"
post only
jb claim-next --who holder
jb wait --claimable --timeout 0.2
expect_error 7 "no claimable job after 200 ms" "wait --claimable --timeout 0.2"
jb claim-next --who w --wait 0.2
expect_error 7 "nothing claimable after 200 ms" "claim-next --wait 0.2"
jb claim-next --who w
expect_error 3 "" "claim-next without --wait"
jb wait --timeout 0
expect_ok "wait --timeout 0 with a job"; expect_out 1 "wait --timeout 0"
end

begin "claim-next --wait gets a job posted meanwhile; one of three gets it"
post seed
jb claim-next --who w0
for i in 1 2 3; do
  "$JOBBOARD" --board "$B" claim-next --who "w$i" --wait 3 >"$ROOT/cn$i.out" 2>"$ROOT/cn$i.err" &
  eval "cn$i=\$!"
done
sleep 0.4
post wanted
got=0 timedout=0
for i in 1 2 3; do
  eval "wait \$cn$i"; r=$?
  case $r in
    0) got=$((got + 1)); [ "$(cat "$ROOT/cn$i.out")" = "$uuid" ] || fail "w$i got '$(cat "$ROOT/cn$i.out")'" ;;
    7) timedout=$((timedout + 1)) ;;
    *) fail "claim-next --wait w$i: exit $r: $(cat "$ROOT/cn$i.err")" ;;
  esac
done
[ "$got" = 1 ] && [ "$timedout" = 2 ] || fail "got $got, timed out $timedout (expected 1 and 2)"
end

# Signal a background process until it is gone (at most 10 s). A
# background job of a non-interactive shell starts with SIGINT ignored,
# so a signal sent before the command installs its handler is lost: one
# kill after a fixed sleep hung the test on a loaded machine.
signal_until_gone() {
  for _ in $(seq 50); do
    kill -"$1" "$2" 2>/dev/null || return 0
    sleep 0.2
  done
}

begin "SIGINT and SIGTERM end a wait: exit 130 and 143"
post held
jb claim-next --who holder
"$JOBBOARD" --board "$B" wait --claimable --timeout 60 >/dev/null 2>"$ROOT/int.err" &
waiter=$!
sleep 0.3
signal_until_gone INT "$waiter"
wait "$waiter"; rc=$?
[ "$rc" = 130 ] || fail "SIGINT: exit $rc"
grep -q "interrupted" "$ROOT/int.err" || fail "SIGINT: stderr '$(cat "$ROOT/int.err")'"
"$JOBBOARD" --board "$B" claim-next --who w --wait 60 >/dev/null 2>&1 &
waiter=$!
sleep 0.3
signal_until_gone TERM "$waiter"
wait "$waiter"; rc=$?
[ "$rc" = 143 ] || fail "SIGTERM: exit $rc"
end

begin "bad --timeout and --wait values are usage errors"
post x
for v in -1 abc 1e12 ""; do
  jb wait --timeout "$v"
  expect_error 2 "--timeout" "wait --timeout '$v'"
  jb claim-next --who w --wait "$v"
  expect_error 2 "--wait" "claim-next --wait '$v'"
done
jb wait --claimable=yes
expect_error 2 "claimable" "wait --claimable=yes"
count_is 1 "after the bad commands"
# --- completion results and the history -----------------------------------

begin "consume --result keeps the result; --failed says failed; history lists both"
post done-ok
a=$uuid
post done-bad
b=$uuid
jb claim --who w1 "$a"; expect_ok "claim a"
jb claim --who w2 "$b"; expect_ok "claim b"
jb consume --who w1 --result '{"rows": 3, "files": ["x.png"]}' "$a"
expect_ok "consume with a result"; expect_out "" "consume prints nothing"
jb consume --who w2 --failed --result '{"error": "disk full"}' --json "$b"
expect_ok "consume --failed"
json_check "j == {'uuid': '$b', 'state': 'COMPLETE', 'outcome': 'failed'}"
jb state "$a"; expect_out COMPLETE "state after consume"
jb history
expect_ok "history"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 2 ] || fail "history has not 2 lines: $out"
printf '%s\n' "$out" | head -1 |
  grep -q "^[0-9T:.-]*Z  failed  $b  w2  done-bad  {\"error\":\"disk full\"}  0  -  {}\$" ||
  fail "history line for b (newest first): $out"
printf '%s\n' "$out" | tail -1 |
  grep -q "  consumed  $a  w1  done-ok  {\"rows\":3,\"files\":\[\"x.png\"\]}  0  -  {}\$" ||
  fail "history line for a: $out"
jb history --json
expect_ok "history --json"
json_check "len(lines) == 2 and lines[1]['uuid'] == '$a' and lines[1]['outcome'] == 'consumed' and lines[1]['result'] == {'rows': 3, 'files': ['x.png']} and lines[1]['owner'] == 'w1' and lines[1]['name'] == 'done-ok' and lines[1]['priority'] == 'NORMAL' and lines[1]['reason'] is None and lines[0]['outcome'] == 'failed' and lines[0]['history_seq'] > lines[1]['history_seq']"
jb history --json --limit 1
json_check "len(lines) == 1 and j['uuid'] == '$b'"
jb check --json
json_check "j['ok'] and j['history'] == 2"
end

begin "consume with a bad --result is a usage error and changes nothing"
post careful
a=$uuid
jb claim --who w1 "$a"; expect_ok "claim"
for bad in '{"rows": 3' '[1, 2]' '"text"' '3' '{"a": 1, "a": 2}'; do
  jb consume --who w1 --result "$bad" "$a"
  expect_error 2 "--result" "consume --result '$bad'"
done
jb owner "$a"; expect_out w1 "still claimed after bad results"
jb history; expect_ok "history"; expect_out "" "no record after bad results"
jb consume --who w1 --failed "$a"; expect_ok "consume --failed without a result"
jb history --json
json_check "j['outcome'] == 'failed' and j['result'] is None"
end

begin "trash is recorded in the history as trashed"
post poison
a=$uuid
jb claim --who admin "$a"; expect_ok "claim"
jb trash --who admin "$a"; expect_ok "trash"
jb history --json
json_check "len(lines) == 1 and j['outcome'] == 'trashed' and j['owner'] == 'admin' and j['result'] is None"
jb history --limit x
expect_error 2 "--limit" "history --limit x"
end

begin "history keeps the job's details, book and attempts; no result is null, --result {} is {}"
post resize --details '{"path": "a.png"}' --book-name photos --book-uuid 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f
a=$uuid
post resize
b=$uuid
jb claim --who w1 "$a"; expect_ok "claim a"
jb claim --who w1 "$b"; expect_ok "claim b"
jb consume --who w1 "$a"; expect_ok "consume a without a result"
jb consume --who w1 --result '{}' "$b"; expect_ok "consume b with {}"
jb history
expect_ok "history"
printf '%s\n' "$out" | tail -1 |
  grep -q "^[0-9T:.-]*Z  consumed  $a  w1  resize  no result  0  photos  {\"path\":\"a.png\"}\$" ||
  fail "history line for a (no result, book, details): $out"
printf '%s\n' "$out" | head -1 |
  grep -q "  consumed  $b  w1  resize  {}  0  -  {}\$" ||
  fail "history line for b (an explicit {}): $out"
jb history --json
expect_ok "history --json"
json_check "len(lines) == 2 and lines[1]['uuid'] == '$a' and lines[1]['result'] is None and lines[1]['details'] == {'path': 'a.png'} and lines[1]['book'] == {'name': 'photos', 'uuid': '3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f'} and lines[1]['attempts'] == 0 and lines[0]['result'] == {} and lines[0]['book'] is None and lines[0]['details'] == {}"
jb wait-done --timeout 0 "$a"
expect_ok "wait-done a"; expect_out 'consumed  no result' "wait-done of a job with no result"
jb wait-done --json --timeout 0 "$a"
json_check "j['result'] is None and j['details'] == {'path': 'a.png'}"
jb wait-done --timeout 0 "$b"
expect_ok "wait-done b"; expect_out 'consumed  {}' "wait-done of a job with {}"
end

begin "history --outcome, --name, --since and --until each select exactly their records"
post thumb; t1=$uuid
post render; r=$uuid
post thumb; t2=$uuid
for u in "$t1" "$r" "$t2"; do jb claim --who w "$u"; expect_ok "claim $u"; done
jb consume --who w "$t1"; expect_ok "consume thumb 1"
jb consume --who w --failed "$r"; expect_ok "fail render"
jb trash --who w "$t2"; expect_ok "trash thumb 2"
# selects WANT ARGS: `history ARGS` lists exactly the uuids WANT (oldest
# first, each followed by a space).
selects() {
  local want=$1 got
  shift
  jb history "$@"
  expect_ok "history $*"
  got=$(printf '%s\n' "$out" | awk 'NF { u = $3 " " u } END { printf "%s", u }')
  [ "$got" = "$want" ] || fail "history $*: listed '$got', expected '$want'"
}
selects "$t1 $r $t2 "
selects "$r " --outcome failed
selects "$t1 $t2 " --outcome consumed,trashed
selects "$r $t2 " --outcome trashed --outcome failed
selects "" --outcome revoked,lost
selects "$t1 $t2 " --name thumb
selects "$t2 " --name thumb --outcome trashed
selects "" --name thumbnail
selects "$t2 " --name thumb --limit 1
# The middle record's completion time, as history prints it, given back.
jb history --json --outcome failed
mid=$(printf '%s\n' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["completed"])')
selects "$r $t2 " --since "$mid"
selects "$t1 " --until "$mid"
selects "$r " --since "$mid" --outcome failed,consumed
jb history --since "$mid" --until "$mid"
expect_error 2 "--until is not after --since" "--until equal to --since"
selects "$r " --since @0 --outcome failed
selects "" --since 2000-01-01 --until 2000-01-02T00:00:00+01:00
selects "$t1 $r $t2 " --since 2000-01-01T00:00Z
selects "$t1 $r $t2 " --until 9999-12-31
jb history --outcome bogus
expect_error 2 "'bogus' is not an outcome (one of: consumed, failed, trashed, revoked, lost" "--outcome bogus"
jb history --outcome consumed,,failed
expect_error 2 "--outcome" "--outcome with an empty name"
for bad in yesterday 2024-13-01 2024-02-30 2023-02-29 2024-01-01T25:00 2024-01-01T10:00:00.1234567 @-5 @x 2024-01-01Zx; do
  jb history --since "$bad"
  expect_error 2 "'$bad' is not a time for --since" "--since $bad"
done
jb history --until 2024-01-01T00:00+1:00
expect_error 2 "--until" "--until with a short offset"
jb history --name ''
expect_error 2 "--name" "--name ''"
end

begin "wait-done prints the outcome and result written by another process"
post awaited
a=$uuid
jb claim --who w1 "$a"; expect_ok "claim"
( sleep 0.3
  "$JOBBOARD" --board "$B" consume --who w1 --result '{"rows": 7}' "$a" ) &
consumer=$!
jb wait-done --timeout 20 "$a"
wait "$consumer" || fail "the consumer failed"
expect_ok "wait-done"; expect_out 'consumed  {"rows":7}' "wait-done output"
jb wait-done --json --timeout 0 "$a"
expect_ok "wait-done --json on a completed job"
json_check "j['uuid'] == '$a' and j['outcome'] == 'consumed' and j['result'] == {'rows': 7} and j['owner'] == 'w1'"
end

begin "wait-done: never posted is not found (3) at once; still on the board times out (7)"
post pending
jb wait-done --timeout 20 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f
expect_error 3 "neither on the board nor in its history" "wait-done of a stranger"
jb wait-done --timeout 0.2 "$uuid"
expect_error 7 "did not complete" "wait-done with a timeout"
jb wait-done --timeout soon "$uuid"
expect_error 2 "--timeout" "wait-done --timeout soon"
jb wait-done not-a-uuid
expect_error 2 "not a uuid" "wait-done not-a-uuid"
end

# --- watch ----------------------------------------------------------------

# fields_are TEXT WHAT: $out's lines without their TIME field (the last).
fields_are() {
  local got
  got=$(printf '%s\n' "$out" | sed 's/  [^ ]*$//')
  [ "$got" = "$1" ] || fail "$2: lines were
$out
expected (without times)
$1"
}

begin "watch --from 1 prints every event in commit order, text and JSON"
post a; a=$uuid
post b; b=$uuid
jb claim --who "w 1" "$a"
jb abandon --who "w 1" "$a"
jb claim --who w2 "$a"
jb consume --who w2 "$a"
jb claim --who w3 "$b"
jb trash --who w3 "$b"
jb watch --from 1 --timeout 0
expect_ok "watch --from 1 --timeout 0"
fields_are "1  POSTED  $a  a  -
2  POSTED  $b  b  -
3  CLAIMED  $a  a  w 1
4  ABANDONED  $a  a  w 1
5  CLAIMED  $a  a  w2
6  CONSUMED  $a  a  w2
7  CLAIMED  $b  b  w3
8  TRASHED  $b  b  w3" "watch text"
printf '%s\n' "$out" | grep -Eq '  [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{15}Z$' ||
  fail "watch: no ISO-8601 time: $out"
jb watch --from 5 --count 2 --json
expect_ok "watch --from 5 --count 2 --json"
json_check "len(lines) == 2 and lines[0]['seq'] == 5 and lines[0]['type'] == 'CLAIMED' and lines[0]['uuid'] == '$a' and lines[0]['owner'] == 'w2' and lines[0]['job_seq'] == 1 and lines[0]['priority'] == 'NORMAL' and lines[1]['type'] == 'CONSUMED' and lines[1]['time'].endswith('Z')"
jb --json watch --from 1 --count 1
json_check "len(lines) == 1 and j['type'] == 'POSTED' and j['owner'] is None"
end

begin "watch follows other processes from now; --count ends it"
post before
"$JOBBOARD" --board "$B" watch --count 3 --timeout 20 >"$ROOT/watch.out" 2>"$ROOT/watch.err" &
watcher=$!
sleep 0.3
kill -0 "$watcher" 2>/dev/null || fail "watch ended with nothing new"
post live
jb claim --who w "$uuid"
jb consume --who w "$uuid"
wait "$watcher"; rc=$?
[ "$rc" = 0 ] || fail "watch --count 3: exit $rc ($(cat "$ROOT/watch.err"))"
out=$(cat "$ROOT/watch.out")
fields_are "2  POSTED  $uuid  live  -
3  CLAIMED  $uuid  live  w
4  CONSUMED  $uuid  live  w" "watch from now"
end

begin "watch --timeout: the normal end without --count; exit 7 when --count is unmet"
post x
jb watch --timeout 0.2
expect_ok "watch --timeout 0.2 with nothing new"; expect_out "" "watch with nothing new"
jb watch --from 1 --count 2 --timeout 0.2
expect_rc 7 "watch --count 2 with one event"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "watch --count 2: printed '$out'"
case $err in
  *"no event from sequence 2 on after 200 ms"*) ;;
  *) fail "watch --count 2 --timeout: stderr '$err'" ;;
esac
end

begin "watch --from a trimmed event: exit 8 naming the oldest kept"
# Past the default bound of 100,000 events: each batch write trims the log
# back to the bound, so 100,100 posts keep events 101 to 100,100.
yes '{"name": "n"}' | head -100100 >"$ROOT/many"
run_in "$ROOT/many" "$JOBBOARD" --board "$B" --durability none post --batch
expect_rc 0 "post --batch of 100,100"
jb watch --from 1 --timeout 0
expect_error 8 "event 1 is no longer kept (trimmed); the log now starts at 101 (watch --from 101 goes on from there)" "watch --from 1 after trimming"
jb watch --from 101 --count 1 --timeout 0
expect_ok "watch --from 101"
case $out in 101"  POSTED  "*) ;; *) fail "watch --from 101: '$out'" ;; esac
end

begin "SIGINT and SIGTERM end a watch: exit 130 and 143, events printed"
post x
for sig in INT TERM; do
  "$JOBBOARD" --board "$B" watch --timeout 60 >"$ROOT/watch.out" 2>"$ROOT/watch.err" &
  watcher=$!
  sleep 0.3
  post "y$sig"
  for _ in $(seq 50); do [ -s "$ROOT/watch.out" ] && break; sleep 0.1; done
  # Each event reaches the file as it comes, not when watch ends.
  [ -s "$ROOT/watch.out" ] || fail "SIG$sig: nothing printed while running"
  signal_until_gone "$sig" "$watcher"
  wait "$watcher"; rc=$?
  want=130; [ "$sig" = TERM ] && want=143
  [ "$rc" = "$want" ] || fail "SIG$sig: exit $rc, expected $want"
  grep -q "  POSTED  $uuid  y$sig  -  " "$ROOT/watch.out" ||
    fail "SIG$sig: the event was not printed: $(cat "$ROOT/watch.out")"
  [ ! -s "$ROOT/watch.err" ] || fail "SIG$sig: stderr '$(cat "$ROOT/watch.err")'"
done
end

begin "bad watch values are usage errors"
post x
jb watch --from 0
expect_error 2 "--from: '0' is not a log sequence" "watch --from 0"
jb watch --from -3
expect_error 2 "--from" "watch --from -3"
jb watch --from 3
expect_error 2 "sequence 3 is beyond its end (the next event will be 2)" "watch --from 3"
jb watch --count 0
expect_error 2 "--count: '0'" "watch --count 0"
jb watch --count x
expect_error 2 "--count" "watch --count x"
jb watch --timeout -1
expect_error 2 "--timeout" "watch --timeout -1"
jb watch 1
expect_error 2 "unexpected argument '1'" "watch 1"
run "$JOBBOARD" --board "$ROOT/none" watch --timeout 0
expect_error 3 "" "watch of a missing board"
end

# --- salvage --------------------------------------------------------------

begin "salvage copies a board into a new directory without writing the source"
post keep-1; u1=$uuid
post keep-2; u2=$uuid
post gone; u3=$uuid
jb claim --who w1 "$u2"; expect_ok "claim"
jb claim --who w1 "$u3"; jb consume --who w1 "$u3"; expect_ok "consume"
rm -f "$B/lock.mdb"
sum=$(md5sum <"$B/data.mdb")
chmod a-w "$B" "$B/data.mdb"
run "$JOBBOARD" salvage "$B" "$ROOT/salv$step_no"
expect_ok "salvage"
printf '%s\n' "$out" | grep -qx "copied: job $u1 (keep-1)" || fail "no copied line for $u1: $out"
printf '%s\n' "$out" | tail -1 | grep -q "^copied 2 (from unreachable pages 0), undecodable 0, completed 0, bad pages 0, bad tables 0, history 1$" ||
  fail "salvage summary: $out"
[ ! -e "$B/lock.mdb" ] || fail "salvage made a lock file in the source"
[ "$(md5sum <"$B/data.mdb")" = "$sum" ] || fail "salvage changed the source"
chmod u+w "$B" "$B/data.mdb"
run "$JOBBOARD" --board "$ROOT/salv$step_no" check; expect_ok "check of the salvaged board"
run "$JOBBOARD" --board "$ROOT/salv$step_no" state "$u2"; expect_out UNCLAIMED "the claim was dropped"
run "$JOBBOARD" --board "$ROOT/salv$step_no" state "$u3"; expect_out COMPLETE "the consumed job stays consumed"
run "$JOBBOARD" salvage --json "$B" "$ROOT/salvj$step_no"; expect_ok "salvage --json"
json_check 'lines[-1] == {"copied": 2, "orphaned": 0, "undecodable": 0, "completed": 0, "bad_pages": 0, "bad_tables": 0, "history": 1} and lines[0]["copied"].startswith("job ")'
run "$JOBBOARD" salvage "$B" "$ROOT/salv$step_no"
expect_error 2 "is not empty" "salvage into a board"
run "$JOBBOARD" salvage "$ROOT/no-such" "$ROOT/salvn$step_no"
expect_error 3 "does not exist" "salvage of a missing board"
run "$JOBBOARD" salvage "$B"
expect_error 2 "DST" "salvage without DST"
run "$JOBBOARD" --board "$B" salvage "$B" "$ROOT/salvb$step_no"
expect_error 2 "not --board" "salvage with --board"
end

begin "salvage of a board with both meta pages overwritten writes nothing, exit 9"
post one
"$PYTHON" -c 'import sys; f = open(sys.argv[1], "r+b"); f.write(bytes(8192))' "$B/data.mdb"
run "$JOBBOARD" salvage "$B" "$ROOT/salv$step_no"
expect_error 9 "neither meta page can be read" "salvage without a meta page"
[ ! -e "$ROOT/salv$step_no" ] || fail "salvage made its target anyway"
end

begin "claim-next --count N claims up to N in claim order; all there are when fewer"
post low --priority LOW; low=$uuid
post high --priority HIGH; high=$uuid
post mid; mid=$uuid
jb claim-next --who w1 --count 2
expect_ok "claim-next --count 2"
expect_out "$high
$mid" "claim-next --count 2"
jb --json claim-next --who w2 --count 10 --lease 30
expect_ok "claim-next --count 10 on a board of one claimable"
json_check 'len(lines) == 1 and j["uuid"] == "'"$low"'" and j["owner"] == "w2" and j["claim"]["token"] > 0 and j["claim"]["lease_expires"]'
jb claim-next --who w3 --count 5
expect_error 3 "no claimable job" "claim-next --count with nothing claimable"
jb claim-next --who w3 --count 0
expect_error 2 "number of jobs" "claim-next --count 0"
jb claim-next --who w3 --count 4097
expect_error 2 "4096" "claim-next --count 4097"
end

begin "consume of several uuids: one commit, a status each, exit of the first failure"
for i in 1 2 3; do post "c$i"; done
jb claim-next --who w1 --count 3
expect_ok "claim three"
set -- $out
jb --json consume --who w1 --result '{"rows": 3}' "$1" "$2"
expect_ok "consume two"
json_check 'len(lines) == 2 and all(l["state"] == "COMPLETE" and l["outcome"] == "consumed" for l in lines)'
jb history --json
json_check 'len(lines) == 2 and all(l["result"] == {"rows": 3} for l in lines)'
jb consume --who w2 "$3" "$1"
expect_rc 5 "consume: another owner's first, then one already consumed"
[ -z "$out" ] || fail "consume with failures printed: $out"
[ "$(printf '%s\n' "$err" | wc -l)" = 2 ] || fail "two failures, stderr: $err"
case $err in *"$3"*"not by w2"*"$1"*"not on the board"*) ;; *) fail "messages: $err" ;; esac
jb --json consume --who w1 "$1" "$3"
expect_rc 3 "consume: the first not found, the second consumed"
json_check 'lines[0]["uuid"] == "'"$1"'" and lines[0]["exit"] == 3 and lines[1]["outcome"] == "consumed"'
count_is 0 "after the consumes"
jb consume --who w1 "$1" not-a-uuid
expect_error 2 "not a uuid" "consume with a malformed uuid"
jb consume --who w1 --token 7 "$1" "$2"
expect_error 2 "one UUID" "consume --token with two uuids"
end

begin "demo: a plain API round on half the jobs, then the worker path on the rest, each verified; --api picks one"
run "$JOBBOARD" demo --board "$B" --jobs 40 --workers 2 --durability none --json
expect_rc 0 "demo"
json_check 'j["api"] == "worker" and j["pass"] and j["consumed"] == 20 and j["plain_round"]["jobs"] == 20 and j["plain_round"]["pass"] and j["worker_vs_plain"] > 0'
# The log tells the loops apart: on the worker path a CONSUMED and the
# same worker's next CLAIMED share one commit (one time); the plain
# round's jobs (the first 20 posted) never do.
jb watch --from 1 --json --timeout 0
json_check '(lambda ev: (lambda fused, plain: len(fused) > 0 and not (fused & plain))({(e["time"], e["owner"]) for e in ev if e["type"] == "CLAIMED"} & {(e["time"], e["owner"]) for e in ev if e["type"] == "CONSUMED"}, {(e["time"], e["owner"]) for e in ev if e["type"] in ("CLAIMED", "CONSUMED") and e["uuid"] in [p["uuid"] for p in ev if p["type"] == "POSTED"][:20]}))(lines)'
run "$JOBBOARD" demo --board "$B" --jobs 20 --workers 2 --durability none --json --api plain
expect_rc 0 "demo --api plain"
json_check 'j["api"] == "plain" and j["pass"] and j["plain_round"] is None and j["worker_vs_plain"] is None'
run "$JOBBOARD" demo --api sideways
expect_error 2 "--api" "demo --api sideways"
end

# --- a job's life ---------------------------------------------------------

begin "post --delay: listed and counted but not claimable until due; a waiter wakes at the due time"
jb post later --delay 3600
expect_rc 0 "post --delay"
late=$out
jb list
case $out in *"$late  NORMAL     DELAYED"*) ;; *) fail "list does not say DELAYED: $out" ;; esac
count_is 1 "a delayed job is counted"
jb count --unclaimed
expect_out 0 "a delayed job is not claimable"
jb claim-next --who w
expect_error 3 "no claimable job" "claim-next before the due time"
jb claim --who w "$late"
expect_error 12 "delayed" "claim of a delayed job"
jb show "$late" --json
json_check 'j["state"] == "UNCLAIMED" and j["not_before"] is not None and j["attempts"] == 0'
jb post soon --delay 1.5
soon=$out
start=$(date +%s)
jb claim-next --who w --wait 60
expect_ok "claim-next --wait for a job due in 1.5 s"
expect_out "$soon" "the job that became due"
[ $(( $(date +%s) - start )) -lt 50 ] || fail "the waiter slept to its timeout"
jb post bad --delay -1
expect_error 2 "--delay" "a negative delay"
jb post bad --not-before yesterday
expect_error 2 "--not-before" "a time that is none"
jb post bad --delay 1 --not-before +5
expect_error 2 "not both" "a delay and a not-before time"
jb post then --not-before "@$(( $(date +%s) + 7200 ))" --json
json_check 'j["uuid"]'
count_is 3 "after the --not-before post (the claimed one counts)"
end

begin "post --unique: a second post of a live key is refused with the holder's uuid (exit 11); the key is free once the job completes"
jb post first --unique nightly-report
first=$out
jb post second --unique nightly-report
expect_rc 11 "second post of the key"
expect_out "$first" "the holder's uuid on stdout"
case $err in *"nightly-report"*"$first"*) ;; *) fail "message names neither key nor holder: $err" ;; esac
count_is 1 "nothing posted"
jb claim --who w "$first"
jb consume --who w "$first"
jb post third --unique nightly-report
expect_ok "the key is free after the consume"
end

begin "attempts, dead letters and requeue: the maximum sends a job to the dead letters with its reason; requeue brings it back"
jb post fragile --max-attempts 2 --details '{"n": 1}'
u=$out
jb claim --who w "$u"
jb abandon --who w "$u" --reason "disk full" --json
json_check 'j["state"] == "UNCLAIMED" and j["attempts"] == 1'
jb claim --who w "$u"
jb abandon --who w "$u" --reason "disk still full" --json
json_check 'j["state"] == "DEAD" and j["attempts"] == 2'
count_is 0 "the job left the board"
jb dead list
case $out in "$u  attempts    2  "*"fragile") ;; *) fail "dead list: $out" ;; esac
jb dead show "$u" --json
json_check 'j["cause"] == "attempts" and j["reason"] == "disk still full" and j["details"] == {"n": 1} and j["owner"] == "w"'
jb history --json --limit 1
json_check 'j["outcome"] == "dead" and j["reason"] == "disk still full"'
jb dead requeue "$u"
expect_ok "requeue"
jb show "$u" --json
json_check 'j["state"] == "UNCLAIMED" and j["attempts"] == 0 and j["max_attempts"] == 2'
jb claim --who w "$u"
jb abandon --who w "$u" --dead --reason "give up"
jb dead show "$u" --json
json_check 'j["cause"] == "buried" and j["reason"] == "give up"'
jb dead purge --all
expect_error 2 "--yes" "purge without --yes"
jb dead purge --older-than 3600 --yes
expect_out "purged 0 dead letters" "nothing older than an hour"
jb dead purge --all --yes
expect_out "purged 1 dead letter" "purge --all"
jb dead show "$u"
expect_error 3 "not in the dead letters" "a purged letter"
jb dead frobnicate
expect_error 2 "unknown subcommand" "dead frobnicate"
end

begin "abandon --retry-in delays the job; --retry-in backoff uses the job's back-off; policy sets the board's"
jb post flaky --backoff 600
u=$out
jb claim --who w "$u"
jb abandon --who w "$u" --retry-in 3600 --json
json_check 'j["state"] == "UNCLAIMED" and j["not_before"] is not None'
jb claim-next --who w
expect_error 3 "no claimable job" "claim-next during the retry delay"
jb cancel "$u"
jb post flaky2 --backoff 600
u=$out
jb claim --who w "$u"
jb abandon --who w "$u" --retry-in backoff --json
json_check 'j["not_before"] is not None'
jb abandon --who w "$u" --retry-in soon
expect_error 2 "--retry-in" "a bad --retry-in"
jb policy --json
json_check 'j["max_attempts"] is None and j["backoff"] == 1.0 and j["backoff_max"] == 3600.0'
jb policy --max-attempts 1 --backoff 2
expect_rc 0 "policy set"
jb post once
u=$out
jb claim --who w "$u"
jb abandon --who w "$u" --json
json_check 'j["state"] == "DEAD"'
jb policy --max-attempts 0
expect_error 2 "--max-attempts" "policy --max-attempts 0"
end

begin "retention: shown with the defaults; set per bound (ages with units, none, default), stored in the board, pruning at once and at every completion; 0 and garbage refused"
jb init
jb retention --json
json_check 'j["history"] == {"max": 10000, "max_age": 604800.0, "max_set": False, "max_age_set": False, "records": 0} and j["dead"]["max"] == 10000 and j["dead"]["max_age"] == 2592000.0 and j["dead"]["letters"] == 0'
for i in 1 2 3 4 5; do
  jb post doomed
  u=$out
  jb claim --who w "$u"
  jb trash --who w "$u"
done
jb retention --dead-max 2 --dead-max-age 14d --history-max-age none --json
json_check 'j["dead"] == {"max": 2, "max_age": 1209600.0, "max_set": True, "max_age_set": True, "letters": 2} and j["history"]["max_age"] is None and j["history"]["max_age_set"] and not j["history"]["max_set"]'
jb dead list
[ "$(printf '%s\n' "$out" | grep -c doomed)" = 2 ] || fail "dead list after retention: $out"
jb post last
u=$out
jb claim --who w "$u"
jb trash --who w "$u"
jb retention
expect_ok "retention shows"
printf '%s\n' "$out" | grep -Eq '^dead letters: +2$' || fail "a completion keeps the bound: $out"
printf '%s\n' "$out" | grep -Eq '^dead_max_age: +14d$' || fail "the age as set: $out"
printf '%s\n' "$out" | grep -Eq '^history_max: +10000 \(default\)$' || fail "history_max default: $out"
jb retention --dead-max default --dead-max-age 90m --json
json_check 'j["dead"]["max"] == 10000 and not j["dead"]["max_set"] and j["dead"]["max_age"] == 5400.0'
jb retention --dead-max 0
expect_error 2 "--dead-max: 0 is not a bound" "retention --dead-max 0"
jb retention --history-max-age soon
expect_error 2 "--history-max-age" "retention --history-max-age soon"
jb retention --history-max -3
expect_error 2 "--history-max" "retention --history-max -3"
jb retention --json
json_check 'j["dead"]["max_age"] == 5400.0 and j["dead"]["letters"] == 2'
end

begin "cancel: unclaimed jobs go (history says cancelled); a claimed one needs --force; --all --yes flushes"
jb post a
a=$out
jb post b
b=$out
jb post c --delay 3600
jb cancel "$a"
expect_ok "cancel an unclaimed job"
jb history --json --limit 1
json_check 'j["outcome"] == "cancelled"'
jb claim --who w "$b"
jb cancel "$b"
expect_error 4 "claimed by w" "cancel of a claimed job"
jb cancel --force "$b"
expect_ok "cancel --force"
jb consume --who w "$b"
expect_rc 3 "the holder's consume after a forced cancel"
jb post d
jb cancel --all
expect_error 2 "--yes" "cancel --all without --yes"
jb cancel --all --yes
expect_out 2 "cancel --all (a ready and a delayed job)"
count_is 0 "the board after cancel --all"
jb check
expect_rc 0 "check after all of it"
end

begin "post --time-limit: a claim lapses at the limit however long its lease"
jb post bounded --time-limit 120
u=$out
jb claim --who w --lease 600 "$u"
jb expires-in "$u" --json
json_check 'j["expires_in_ms"] is not None and j["expires_in_ms"] <= 120000'
jb extend --who w --lease 600 "$u"
jb expires-in "$u" --json
json_check 'j["expires_in_ms"] is not None and j["expires_in_ms"] <= 120000'
end

begin "schedule add, list, remove; a taken name exits 11; bad specs name the field"
jb schedule add hb --every 60 --job-name ping --details '{"a": 1}' --start 2026-01-01T00:00:00Z
expect_out "hb  next run 2026-01-01T00:00:00.000000Z" "schedule add --every"
jb schedule add nightly --cron '30 2 * * 1-5' --job-name backup --catch-up all --max-attempts 3 --priority high --start 2026-01-01T00:00:00Z
expect_out "nightly  next run 2026-01-01T02:30:00.000000Z" "schedule add --cron"
jb schedule list
expect_out "hb  every 1m  skip  next 2026-01-01T00:00:00.000000Z  runs 0  ping
nightly  cron '30 2 * * 1-5'  all  next 2026-01-01T02:30:00.000000Z  runs 0  backup" "schedule list"
jb schedule list --json
json_check 'len(lines) == 2 and j["name"] == "hb" and j["every"] == 60 and j["cron"] is None and j["job"]["details"] == {"a": 1} and lines[1]["cron"] == "30 2 * * 1-5" and lines[1]["catch_up"] == "all" and lines[1]["job"]["max_attempts"] == 3 and lines[1]["job"]["priority"] == "HIGH"'
jb schedule add hb --every 5 --job-name other
expect_error 11 "schedule hb already exists" "schedule add of a taken name"
jb schedule add hb --every 5 --job-name other --replace
expect_rc 0 "schedule add --replace"
jb schedule add bad --cron '* 25 * * *' --job-name x
expect_error 2 "cron '* 25 * * *': field 2 (hour): 25 is outside 0..23" "a bad cron spec"
jb schedule add bad --cron '0 0 30 2 *' --job-name x
expect_error 2 "no day ever matches" "a cron spec no day matches"
jb schedule add bad --every 1 --cron '* * * * *' --job-name x
expect_error 2 "not both" "--every and --cron"
jb schedule add bad --every 1
expect_error 2 "--job-name" "add without --job-name"
jb schedule add bad --every 0.5 --job-name x
expect_error 2 "--every" "an interval under a second"
jb schedule add bad --every 1 --job-name x --unique k
expect_error 2 "--unique" "add --unique"
jb schedule add bad --every 1 --job-name x --details '{"scheduled_at": 1}'
expect_error 2 "scheduled_at" "details with the schedule's key"
jb schedule add bad --every 1 --job-name x --catch-up sometimes
expect_error 2 "--catch-up" "a bad --catch-up"
jb schedule list --at now
expect_error 2 "--at and --loop are for run" "list --at"
jb schedule frob
expect_error 2 "unknown subcommand" "schedule frob"
jb schedule remove hb nope
expect_error 3 "no schedule named nope" "remove of a missing schedule"
jb schedule list
expect_out "nightly  cron '30 2 * * 1-5'  all  next 2026-01-01T02:30:00.000000Z  runs 0  backup" "list after remove"
jb check
expect_rc 0 "check with schedules"
end

begin "schedule run --at: catch-up skip posts the latest missed run, all posts each"
jb schedule add s --every 60 --job-name report --start 2026-01-01T00:00:00Z
jb schedule add t --every 60 --job-name report-all --catch-up all --start 2026-01-01T00:00:00Z
jb schedule run --at 2026-01-01T00:05:30Z
expect_ok "run at 00:05:30"
printf '%s\n' "$out" | grep -Eq '^posted 1 job report [0-9a-f-]{36} \(schedule s, run 2026-01-01T00:05:00.000000Z\)$' ||
  fail "run at 00:05:30 (skip: 1 job): $out"
printf '%s\n' "$out" | grep -Eq '^posted 6 jobs report-all [0-9a-f-]{36} \(schedule t, last run 2026-01-01T00:05:00.000000Z\)$' ||
  fail "run at 00:05:30 (all: 6 jobs): $out"
jb schedule run --at 2026-01-01T00:05:30Z
expect_out "posted 0 jobs (next run 2026-01-01T00:06:00.000000Z)" "the same tick again"
jb list --json
json_check 'len(lines) == 7 and sorted(l["details"]["scheduled_at"] for l in lines if l["name"] == "report") == [1767225900000000] and sorted(l["details"]["scheduled_at"] for l in lines if l["name"] == "report-all") == [1767225600000000 + 60000000 * i for i in range(6)] and all(l["unique"] == "schedule:%s:%d" % ("s" if l["name"] == "report" else "t", l["details"]["scheduled_at"]) for l in lines)'
jb schedule list --json
json_check 'lines[0]["runs"] == 1 and lines[0]["next"] == "2026-01-01T00:06:00.000000Z" and lines[1]["runs"] == 6 and lines[1]["last_run"] == "2026-01-01T00:05:00.000000Z"'
jb schedule run --at 2026-01-01T00:06:00Z --json
json_check 'j["posted"] == 2 and j["skipped"] == [] and sorted((x["schedule"], x["name"], x["run"], x["count"], len(x["uuid"])) for x in j["jobs"]) == [("s", "report", "2026-01-01T00:06:00.000000Z", 1, 36), ("t", "report-all", "2026-01-01T00:06:00.000000Z", 1, 36)]'
end

begin "schedule run --loop ticks when a schedule is due, sees one added later, stops on SIGTERM with 0"
jb schedule add yearly --cron @yearly --job-name new-year # makes the board
"$JOBBOARD" --board "$B" schedule run --loop >"$ROOT/loop.out" 2>"$ROOT/loop.err" &
looper=$!
sleep 0.3
jb schedule add beat --every 1 --job-name ping --start now
n=0
for _ in $(seq 100); do
  jb count
  n=$out
  [ "$n" -ge 2 ] 2>/dev/null && break
  sleep 0.1
done
[ "$n" -ge 2 ] 2>/dev/null || fail "the loop posted $n runs in 10 s"
signal_until_gone TERM "$looper"
wait "$looper"; rc=$?
[ "$rc" = 0 ] || fail "SIGTERM: exit $rc ($(cat "$ROOT/loop.err"))"
grep -Eq '^[0-9T:.-]+Z  posted 1 job ping \(schedule beat, run [0-9T:.-]+Z\)$' "$ROOT/loop.out" || fail "loop output: $(cat "$ROOT/loop.out")"
jb list --json
json_check 'len(set(l["unique"] for l in lines)) == len(lines)'
end

begin "salvage keeps a job's life: due time, attempts and reason, unique key, dead letters, schedules"
post later --delay 3600; u1=$uuid
post keyed --unique nightly-42 --max-attempts 5; u2=$uuid
jb claim --who w1 "$u2"; expect_ok "claim"
jb abandon --who w1 --reason "disk full" --retry-in 0 "$u2"; expect_ok "abandon with a reason"
post doomed; u3=$uuid
jb claim --who w1 "$u3"; expect_ok "claim"
jb abandon --who w1 --reason "bad input" --dead "$u3"; expect_ok "abandon --dead"
jb schedule add beat --every 60 --job-name beat; expect_ok "schedule add"
rm -f "$B/lock.mdb"
run "$JOBBOARD" salvage "$B" "$ROOT/salv$step_no"
expect_ok "salvage"
printf '%s\n' "$out" | grep -q "copied as they were: 2 jobs' attempts, options, unique keys or due times; 1 dead letters; 1 schedules" ||
  fail "salvage's note: $out"
S=$ROOT/salv$step_no
run "$JOBBOARD" --board "$S" check; expect_ok "check of the salvaged board"
run "$JOBBOARD" --board "$S" show --json "$u1"
json_check 'j["not_before"] is not None'
run "$JOBBOARD" --board "$S" claim --who w2 "$u1"
expect_rc 12 "claim of the salvaged delayed job"
run "$JOBBOARD" --board "$S" show --json "$u2"
json_check 'j["attempts"] == 1 and j["last_reason"] == "disk full" and j["max_attempts"] == 5 and j["unique"] == "nightly-42" and j["state"] == "UNCLAIMED"'
run "$JOBBOARD" --board "$S" post other --unique nightly-42
expect_rc 11 "the unique key is held on the salvaged board"
expect_out "$u2" "the holder's uuid"
run "$JOBBOARD" --board "$S" dead list --json
json_check 'len(lines) == 1 and j["uuid"] == "'"$u3"'" and j["reason"] == "bad input"'
run "$JOBBOARD" --board "$S" dead requeue "$u3"; expect_ok "requeue of the salvaged dead letter"
run "$JOBBOARD" --board "$S" state "$u3"; expect_out UNCLAIMED "requeued"
run "$JOBBOARD" --board "$S" schedule list --json
json_check 'len(lines) == 1 and j["name"] == "beat" and j["every"] == 60.0'
end

begin "progress: the owner reports; show, list --json and watch print it; refusals change nothing; it outlives an abandon, goes at the next claim and with the job"
post long
u=$uuid
jb progress --who w "$u" 10 "no claim"
expect_error 3 "not claimed" "progress of an unclaimed job"
jb claim --who w "$u"; expect_ok "claim"
jb watch --from 1 --timeout 0
from=$(( $(printf '%s\n' "$out" | wc -l) + 1 ))
jb progress --who w "$u" 33.33 "3 of 9 files"; expect_ok "progress"
expect_out "" "progress prints nothing"
jb progress --who intruder "$u" 50; expect_error 5 "claimed by w" "another owner's progress"
jb progress --who w --token 999999 "$u" 50; expect_error 5 "token" "a stale token's progress"
jb progress --who w "$u" 100.5; expect_error 2 "PERCENT" "a percentage over 100"
jb progress --who w "$u" abc; expect_error 2 "PERCENT" "a percentage that is no number"
jb progress --who w "$u" 50 "$(printf 'two\nlines')"; expect_error 2 "control character" "a message of two lines"
jb progress --who w "$u" 50 "$(head -c 201 /dev/zero | tr '\0' m)"; expect_error 2 "too long" "a message over 200 bytes"
jb progress --who w "$u"; expect_error 2 "PERCENT" "no percentage"
jb show "$u"; expect_ok "show"
printf '%s\n' "$out" | grep -q '^progress: *33.3% 3 of 9 files (at 20[0-9-]*T' || fail "show's progress line: $out"
jb list --json; expect_ok "list --json"
json_check 'j["progress"]["percent"] == 33.3 and j["progress"]["message"] == "3 of 9 files" and j["progress"]["at"].endswith("Z")'
jb watch --from "$from" --timeout 0; expect_ok "watch"
expect_out "$from  PROGRESS  $u  long  w  $(printf '%s\n' "$out" | cut -d' ' -f11)  33.3%  3 of 9 files" "watch's PROGRESS line"
jb watch --json --from "$from" --timeout 0
json_check 'len(lines) == 1 and j["type"] == "PROGRESS" and j["percent"] == 33.3 and j["message"] == "3 of 9 files" and j["owner"] == "w"'
jb progress --json --who w "$u" 7; expect_ok "progress --json"
json_check 'j == {"uuid": "'"$u"'", "percent": 7.0, "message": None}'
jb metrics; expect_ok "metrics"
printf '%s\n' "$out" | grep -qx 'jobboard_claims_reporting_progress 1' &&
  printf '%s\n' "$out" | grep -qx 'jobboard_progress_kept_jobs 0' &&
  printf '%s\n' "$out" | grep -qx 'jobboard_progress_reports_total 2' &&
  printf '%s\n' "$out" | grep -q '^jobboard_progress_oldest_report_age_seconds [0-9]' ||
  fail "metrics of one held claim reporting: $(printf '%s\n' "$out" | grep progress)"
jb abandon --who w "$u"; expect_ok "abandon"
jb show --json "$u"
json_check 'j["state"] == "UNCLAIMED" and j["progress"]["percent"] == 7.0 and j["progress"]["message"] is None'
jb metrics
printf '%s\n' "$out" | grep -qx 'jobboard_claims_reporting_progress 0' &&
  printf '%s\n' "$out" | grep -qx 'jobboard_progress_kept_jobs 1' ||
  fail "metrics after the abandon: $(printf '%s\n' "$out" | grep progress)"
jb claim --who w2 "$u"; expect_ok "claim again"
jb show --json "$u"
json_check 'j["progress"] is None'
jb show "$u"
printf '%s\n' "$out" | grep -qx 'progress: *-' || fail "show without progress: $out"
jb progress --who w2 "$u" 99 "nearly"; expect_ok "the new owner reports"
jb consume --who w2 "$u"; expect_ok "consume"
jb show "$u"; expect_error 3 "$u" "show of the consumed job"
jb check; expect_ok "check"
end

finish
