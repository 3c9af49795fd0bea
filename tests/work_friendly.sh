#!/bin/bash
# tests/work_friendly.sh - `jobboard work` says what it does: the first
# stop signal's message, the job's prefix on each forwarded stderr line,
# the summary at exit, and the attempt limit it applies to jobs that have
# none. Real boards, real worker processes, real signals.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit with every process the tests started. JSON and stderr
# are checked with python3.

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/work_lib.sh"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check the output"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-work-friendly.XXXXXX") ||
  bail "mktemp failed"
PIDS=()
cleanup() {
  local p f
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for f in "$ROOT"/meet*/*; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$ROOT"
}
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

# Each step has $B, a fresh board, and $MEET, an empty directory where
# the CMDs of tests/work.sh's kind leave their pid (a file named after
# their job's uuid); $GO is not there.
step_setup() {
  B=$ROOT/b$step_no
  MEET=$ROOT/meet$step_no
  GO=$ROOT/go$step_no
  export MEET GO
  mkdir "$MEET"
  "$JOBBOARD" init "$B" >/dev/null 2>&1 ||
    "$JOBBOARD" post --board "$B" setup >/dev/null ||
    fail "cannot make a board"
}

jb() {
  run "$JOBBOARD" --board "$B" "$@"
}
post() { # post NAME [ARGS]: sets $uuid
  jb post "$@"
  uuid=$out
  [ "$rc" = 0 ] || fail "post $*: exit $rc: $err"
}
has() { # has TEXT SUBSTRING WHAT
  case $1 in
    *"$2"*) ;;
    *) fail "$3: '$2' not in: $1" ;;
  esac
}
hasnt() { # hasnt TEXT SUBSTRING WHAT
  case $1 in
    *"$2"*) fail "$3: '$2' in: $1" ;;
  esac
}
# pycheck EXPR WHAT: $out is JSON lines, `lines` their list, `j` the first.
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines() if l]
j = lines[0] if lines else None
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
# werr_wait TEXT: up to 10 s for the worker's stderr to say TEXT.
werr_wait() {
  local i=0
  until grep -qF -- "$1" "$ROOT/werr" || [ $i -ge 200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  grep -qF -- "$1" "$ROOT/werr" ||
    fail "the worker did not say '$1': $(cat "$ROOT/werr")"
}

# A CMD that leaves its pid in $MEET, then waits (up to 60 s) for $GO.
cat >"$ROOT/hold" <<'EOF'
#!/bin/sh
echo $$ >"$MEET/$JOBBOARD_UUID.tmp" && mv "$MEET/$JOBBOARD_UUID.tmp" "$MEET/$JOBBOARD_UUID"
i=0
while [ ! -e "$GO" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
EOF
# A CMD whose stderr is hard to pass on: when the two CMDs have started,
# a line in three pieces with the other CMD's pieces in between, a line of
# 5000 bytes, binary bytes, and a last line without a newline.
cat >"$ROOT/chatty" <<'EOF'
#!/bin/sh
echo $$ >"$MEET/$JOBBOARD_UUID"
i=0
while [ "$(ls "$MEET" | wc -l)" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
printf "line of %s: " "$JOBBOARD_NAME" >&2; sleep 0.2
printf "one, " >&2; sleep 0.2
printf "two\n" >&2
head -c 5000 /dev/zero | tr '\0' x >&2; printf '\n' >&2
printf '\001\002\377 binary of %s\n' "$JOBBOARD_NAME" >&2
printf "no newline at the end of %s" "$JOBBOARD_NAME" >&2
EOF
chmod +x "$ROOT/hold" "$ROOT/chatty"

# check_prefixed FILE PREFIX-OF-NAME...: each CMD's lines in FILE whole and
# after their prefix (PREFIX-OF-NAME: NAME=PREFIX), and no line of a CMD
# without one.
check_prefixed() {
  "$PYTHON" - "$@" <<'EOF' 2>"$ROOT/pyerr" || fail "forwarded lines: $(cat "$ROOT/pyerr")"
import sys
data = open(sys.argv[1], "rb").read()
lines = data.split(b"\n")
assert lines[-1] == b"", "stderr does not end with a newline"
lines = lines[:-1]
for arg in sys.argv[2:]:
    name, prefix = arg.split("=", 1)
    p = prefix.encode()
    want = [p + b"line of " + name.encode() + b": one, two",
            p + b"x" * 4096, p + b"x" * 904,
            p + b"\x01\x02\xff binary of " + name.encode(),
            p + b"no newline at the end of " + name.encode()]
    got = [l for l in lines if l.startswith(p)]
    assert got == want, "%s: %r, expected %r" % (name, [g[:80] for g in got], [w[:80] for w in want])
ours = (b"work: ", b"jobboard: work: ")
for l in lines:
    assert l.startswith(ours) or any(l.startswith(a.split("=", 1)[1].encode())
                                     for a in sys.argv[2:]), "a line without a prefix: %r" % l[:100]
EOF
}

# --- the first signal ------------------------------------------------------

begin "the first SIGTERM says what the worker waits for (jobs, names, times) and how to stop now"
post resize
a=$uuid
post thumbnail
b=$uuid
work_bg --who w --concurrency 2 -- "$ROOT/hold"
meet_wait 2
sleep 0.3
kill -TERM "$wpid"
# Said while the CMDs still run ($GO not there yet).
werr_wait "SIGTERM: no more jobs are claimed; waiting for the 2 commands running to end"
err=$(cat "$ROOT/werr")
has "$err" "jobboard: work:   $a resize (running " "the first job, its time so far"
has "$err" "jobboard: work:   $b thumbnail (running " "the second job"
printf '%s\n' "$err" | grep -q "$a resize (running [0-9]*\.[0-9] s)" ||
  fail "no time so far: $err"
has "$err" "to stop now, send a second SIGINT (Ctrl-C) or SIGTERM" "how to stop now"
has "$err" "its job is abandoned: claimable again at once, the attempt counted" \
  "what becomes of the jobs then"
hasnt "$err" "second SIGTERM: stopping" "the second signal's message, too early"
touch "$GO"
wait_exit "$wpid" 20
expect_rc 0 "the worker, its jobs finished"
[ "$(grep -c "waiting for the" "$ROOT/werr")" = 1 ] || fail "said more than once: $err"
jb history --json
pycheck 'sorted(l["uuid"] for l in lines if l["outcome"] == "consumed") ==
  sorted(["'"$a"'", "'"$b"'"])' "both jobs finished and consumed"
# A worker waiting for a job, with no CMD running, stops at once: it has
# nothing to wait for, and says nothing of the kind.
work_bg --who idle -- true
i=0
until "$JOBBOARD" entities --board "$B" | grep -q idle || [ $i -ge 200 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -TERM "$wpid"
wait_exit "$wpid" 10
expect_rc 0 "the idle worker"
hasnt "$err" "waiting for the" "the idle worker's message"
end

begin "a second SIGINT with --concurrency 1: stopping 1 command, its job abandoned, exit 130"
post slow
a=$uuid
work_bg --who w --grace 0.5 -- "$ROOT/hold"
meet_wait 1
kill -INT "$wpid"
werr_wait "SIGINT: no more jobs are claimed; waiting for the 1 command running to end"
has "$(cat "$ROOT/werr")" "jobboard: work:   $a slow (running " "the job"
kill -INT "$wpid"
wait_exit "$wpid" 20
expect_rc 130 "the worker"
has "$err" "second SIGINT: stopping 1 command (SIGTERM, SIGKILL 0.50 s later) and abandoning its job" \
  "the second signal's message"
has "$err" "job $a abandoned: it is claimable again" "the abandon"
jb show --json "$a"
pycheck 'j["state"] == "UNCLAIMED" and j["attempts"] == 1' "the job, back with its attempt counted"
end

# --- prefixes --------------------------------------------------------------

begin "--concurrency 2: each forwarded stderr line after its job's [NAME UUID8], whole, partial and long lines, binary, no newline at exit"
post alpha
a=$uuid
post beta
b=$uuid
jb work --who w --concurrency 2 --jobs 2 -- "$ROOT/chatty"
expect_rc 0 "work"
check_prefixed "$run_err" "alpha=[alpha ${a: -8}] " "beta=[beta ${b: -8}] "
end

begin "--prefix uuid, name, a template, none"
for mode in uuid name '{who}:{name}/{uuid8} {{}} | ' none; do
  rm -f "$MEET"/*
  post "alpha"
  a=$uuid
  post "beta"
  b=$uuid
  jb work --who w7 --concurrency 2 --jobs 2 --prefix "$mode" -- "$ROOT/chatty"
  expect_rc 0 "work --prefix $mode"
  case $mode in
    uuid) check_prefixed "$run_err" "alpha=[$a] " "beta=[$b] " ;;
    name) check_prefixed "$run_err" "alpha=[alpha] " "beta=[beta] " ;;
    none)
      grep -qx "line of alpha: one, two" "$run_err" ||
        fail "--prefix none: the line is not whole, or prefixed: $err"
      grep -q '^\[' "$run_err" && fail "--prefix none: a prefix: $err" ;;
    *) check_prefixed "$run_err" "alpha=w7:alpha/${a: -8} {} | " \
         "beta=w7:beta/${b: -8} {} | " ;;
  esac
done
end

begin "--concurrency 1: CMD's stderr unprefixed by default; --prefix name prefixes it"
post solo
a=$uuid
jb work --who w --jobs 1 -- sh -c 'printf "plain\n" >&2; printf "tail" >&2'
expect_rc 0 "work"
grep -qx "plain" "$run_err" || fail "the default at 1 is not the plain line: $err"
post solo
a=$uuid
jb work --who w --jobs 1 --prefix name -- sh -c 'printf "plain\n" >&2; printf "tail" >&2'
expect_rc 0 "work --prefix name"
grep -qx "\[solo\] plain" "$run_err" || fail "--prefix name at 1: $err"
grep -qx "\[solo\] tail" "$run_err" || fail "--prefix name at 1, the last line: $err"
end

begin "--prefix: a bad mode or template is a usage error naming it, no job claimed"
post waiting
a=$uuid
for v in bogus '{nope}' '{name' 'x}y' ''; do
  jb work --who w --jobs 1 --prefix "$v" -- true
  expect_rc 2 "--prefix '$v'"
  has "$err" "--prefix: " "--prefix '$v': the message"
done
jb state "$a"
[ "$out" = UNCLAIMED ] || fail "the job was touched: $out"
end

# --- the summary -----------------------------------------------------------

begin "a summary at exit: jobs by outcome, the time limit, total and mean time; with --json the last line"
cat >"$ROOT/by-name" <<'EOF'
#!/bin/sh
case "$JOBBOARD_NAME" in
  ok*) exit 0 ;;
  bad) exit 3 ;;
  again) exit 75 ;;
  doomed) exit 100 ;;
  slow) exec sleep 30 ;;
esac
EOF
chmod +x "$ROOT/by-name"
for n in ok1 ok2 bad again doomed slow; do post "$n" --backoff 60; done
jb work --who w --jobs 6 --time-limit 1 --grace 0.2 -- "$ROOT/by-name"
expect_rc 0 "work"
line=$(printf '%s\n' "$err" | grep '^work: summary: ')
printf '%s\n' "$line" | grep -qE '^work: summary: 6 jobs in [0-9]+\.[0-9]{2} s \(consumed 2, failed 1, retried 2, dead 1, at a time limit 1\), mean run [0-9]+\.[0-9]{2} s$' ||
  fail "the summary: '$line' in: $err"
[ "$(printf '%s\n' "$err" | tail -n 1)" = "$line" ] || fail "the summary is not the last line: $err"
for n in ok3 ok4 bad; do post "$n"; done
jb work --who w --jobs 3 --json -- "$ROOT/by-name"
expect_rc 0 "work --json"
pycheck 'len(lines) == 4 and all("uuid" in l for l in lines[:3]) and
  "uuid" not in lines[3] and lines[3]["summary"]["jobs"] == 3 and
  lines[3]["summary"]["outcomes"] == {"consumed": 2, "failed": 1,
    "retried": 0, "snoozed": 0, "dead": 0, "abandoned": 0, "refused": 0} and
  lines[3]["summary"]["timed_out"] == 0 and
  lines[3]["summary"]["seconds"] >= lines[3]["summary"]["mean_run_seconds"] > 0' \
  "the JSON summary"
has "$err" "work: summary: 3 jobs in " "the summary on stderr with --json too"
end

begin "a summary with no job: idle for --timeout"
jb work --who w --timeout 0.2 -- true
expect_rc 0 "work"
printf '%s\n' "$err" | grep -qE '^work: summary: 0 jobs in [0-9]+\.[0-9]{2} s$' ||
  fail "the summary: $err"
end

# --- the attempt limit -----------------------------------------------------

begin "exit 75 with no maximum anywhere: the worker's default, 10 attempts, then the dead letters"
post flaky --backoff 0.01 --backoff-max 0.02
a=$uuid
jb work --who w --jobs 10 --timeout 20 --json -- sh -c 'exit 75'
expect_rc 0 "work"
pycheck 'len(lines) == 11 and [l["outcome"] for l in lines[:10]] == ["retried"] * 9 + ["dead"] and
  [l["attempts"] for l in lines[:10]] == list(range(1, 11)) and
  all(l["max_attempts"] == 10 for l in lines[:10]) and
  lines[9]["reason"] == "exit 75; attempt 10 of 10, the worker\x27s --max-attempts"' \
  "progress lines"
jb dead list --json
pycheck 'len(lines) == 1 and j["uuid"] == "'"$a"'" and j["attempts"] == 10 and
  j["cause"] == "buried"' "the dead letter"
jb dead show --json "$a"
has "$out" "attempt 10 of 10, the worker's --max-attempts" "the dead letter's reason"
post flaky2 --backoff 0.01 --backoff-max 0.02
jb work --who w --jobs 1 -- sh -c 'exit 75'
has "$err" "(attempt 1 of 10, claimable again in " "the progress line names the maximum"
end

begin "--max-attempts N overrides the default; none retries for ever; a job's or the board's own maximum wins"
post flaky --backoff 0.01 --backoff-max 0.02
a=$uuid
jb work --who w --jobs 3 --max-attempts 3 --timeout 20 -- sh -c 'exit 75'
expect_rc 0 "work --max-attempts 3"
has "$err" "(attempt 3 of 3, to the dead letters)" "dead at 3"
jb dead purge --all >/dev/null 2>&1 || jb dead purge "$a"
post forever --backoff 0.01 --backoff-max 0.02
b=$uuid
jb work --who w --jobs 12 --max-attempts none --timeout 20 --json -- sh -c 'exit 75'
expect_rc 0 "work --max-attempts none"
pycheck 'len(lines) == 13 and all(l["outcome"] == "retried" and l["max_attempts"] is None
  for l in lines[:12])' "12 retries, no maximum"
jb show --json "$b"
pycheck 'j["state"] == "UNCLAIMED" and j["attempts"] == 12' "the job, still on the board"
jb cancel "$b" >/dev/null 2>&1
post own --backoff 0.01 --max-attempts 2
c=$uuid
jb work --who w --jobs 2 --max-attempts 5 --timeout 20 -- sh -c 'exit 75'
has "$err" "work: $c own: dead (exit 75, " "the job's own maximum"
has "$err" "s): exit 75 (attempt 2 of 2, to the dead letters)" "its progress line"
jb policy --max-attempts 4
expect_rc 0 "policy"
post board --backoff 0.01 --backoff-max 0.02
d=$uuid
jb work --who w --jobs 4 --timeout 20 -- sh -c 'exit 75'
has "$err" "work: $d board: dead (exit 75, " "the board's maximum"
has "$err" "s): exit 75 (attempt 4 of 4, to the dead letters)" "its progress line"
jb dead list --json
pycheck 'sorted(l["cause"] for l in lines if l["uuid"] in ("'"$c"'", "'"$d"'")) ==
  ["attempts", "attempts"]' "the library's own dead letters"
end

begin "--max-attempts: bad values are usage errors naming the option, no job claimed"
post waiting
a=$uuid
for v in 0 -1 abc 4294967296 1x ""; do
  jb work --who w --jobs 1 --max-attempts "$v" -- true
  expect_rc 2 "--max-attempts '$v'"
  has "$err" "--max-attempts: '$v' is not a number of attempts (1 to 4294967295, or none)" \
    "--max-attempts '$v': the message"
done
jb state "$a"
[ "$out" = UNCLAIMED ] || fail "the job was touched: $out"
end

begin "work --help documents the prefix, the summary, the signal message and the attempt limit"
jb work --help
for t in "--prefix MODE" "--max-attempts N|none" "default 10" "work: summary:" \
  "how to stop now" "[NAME 1b2c3d4e]"; do
  has "$out" "$t" "work --help"
done
end

finish
