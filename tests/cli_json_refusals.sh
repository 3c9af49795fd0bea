#!/bin/bash
# tests/cli_json_refusals.sh - every refusal is visible in --json as well as
# in the exit status: a command that fails with --json ends its stdout with
# one object {"error": {"code", "exit", "message"}} (the message is the
# stderr line's), a refused post --unique prints one object with the
# holder's uuid and the error, a refused --batch line names the holder and
# the line after the uuids posted before it, and a success holds no
# "error". Runs the built ./jobboard (or $JOBBOARD) on boards under one
# mktemp -d directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
program JOBBOARD ./jobboard
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
command -v "$PYTHON" >/dev/null 2>&1 || bail "no python3 to read the JSON"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-refusals.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$ROOT"'
unset JOBBOARD_DIR
B=$ROOT/board
jb() { run "$JOBBOARD" --board "$B" --quiet "$@"; }

# refused CODE NAME WHAT: the last run exited CODE, and its stdout's last
# line is an object whose "error" is {"code": NAME, "exit": CODE, "message":
# stderr's line without "jobboard: "}; every line before it is JSON too.
refused() {
  expect_rc "$1" "$3"
  local why
  why=$(printf '%s' "$out" | "$PYTHON" -c '
import json, sys
code, name, err = int(sys.argv[1]), sys.argv[2], sys.argv[3]
lines = sys.stdin.read().split("\n")
if not lines or not lines[-1]:
    sys.exit("nothing on stdout")
try:
    objs = [json.loads(l) for l in lines]
except ValueError as e:
    sys.exit("not one JSON object per line: %s" % e)
for o in objs[:-1]:
    if "error" in o:
        sys.exit("an error before the last line: %r" % o)
e = objs[-1].get("error")
if not isinstance(e, dict):
    sys.exit("the last line holds no error object: %r" % objs[-1])
want = {"code": name, "exit": code, "message": err}
if e != want:
    sys.exit("error is %r, expected %r" % (e, want))
' "$1" "$2" "${err#jobboard: }" 2>&1) || { fail "$3: $why"; h_show; }
}

# succeeded WHAT: exit 0, and no line of stdout holds "error".
succeeded() {
  expect_ok "$1"
  case $out in *'"error"'*) fail "$1: an error object on success: $out" ;; esac
}

jb init; expect_ok "init"

begin "post --unique refused: one object, the holder's uuid and the error"
jb post a --unique k --json; succeeded "first post"
holder=$(printf '%s' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
jb post a --unique k --json
refused 11 exists "second post"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "more than one line: $out"
got=$(printf '%s' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
[ "$got" = "$holder" ] || fail "uuid $got is not the holder $holder"
# Without --json: the holder's uuid alone, as before.
jb post a --unique k
expect_rc 11 "post without --json"; expect_out "$holder" "post without --json"
end

begin "post --batch: a held key's line, after the uuids posted before it"
printf '%s\n' '{"name": "b1"}' '{"name": "b2", "unique": "k"}' >"$ROOT/batch"
jb post --batch --json <"$ROOT/batch"
refused 11 exists "batch"
printf '%s' "$out" | tail -1 | "$PYTHON" -c '
import json, sys
o = json.load(sys.stdin)
assert o["uuid"] == sys.argv[1] and o["line"] == 2, o' "$holder" ||
  fail "the refusal does not name the holder and line 2: $out"
end

begin "claim, claim-next, consume, cancel, show: each refusal in --json"
jb claim-next --who w1 --json; succeeded "claim-next"
u=$(printf '%s' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
tok=$(printf '%s' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["claim"]["token"])')
jb claim-next --who w2 --json
refused 3 not_found "claim-next of nothing"
jb claim --who w2 "$u" --json
refused 4 claimed "claim of a claimed job"
jb consume --who w1 --token $((tok + 7)) "$u" --json
refused 5 not_owner "consume with a stale token"
jb consume --who w1 --token "$tok" "$u" --json; succeeded "consume"
jb consume --who w1 "$u" --json
refused 3 not_found "consume of a finished job"
jb cancel "$u" --json
refused 3 not_found "cancel of a finished job"
jb show 00000000-0000-4000-8000-000000000000 --json
refused 3 not_found "show of no job"
end

begin "usage errors, a timeout, a missing board: in --json too"
jb post a --priority nonsense --json
refused 2 usage "a bad priority"
jb --json list --bogus
refused 2 usage "an unknown option"
run "$JOBBOARD" --json nosuch
refused 2 usage "an unknown command"
jb post d --delay 600 --json; succeeded "a delayed post"
d=$(printf '%s' "$out" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["uuid"])')
jb claim --who w "$d" --json
refused 12 not_due "claim of a delayed job"
jb wait-done "$d" --timeout 0 --json
refused 7 timed_out "wait-done that runs out"
run "$JOBBOARD" --board "$ROOT/none" list --json
refused 3 not_found "list of a missing board"
end

begin "successes are unchanged: no error object"
jb post s --json; succeeded "post"
jb list --json; succeeded "list"
jb count --json; succeeded "count"
end

finish
