#!/bin/bash
# tests/work.sh - `jobboard work`, the worker runner, end to end: real
# boards, real worker processes, real signals.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit with every process the tests started. Each step is a TAP
# line (tests/lib/harness.sh); the script exits 1 if any failed. JSON is
# checked with python3 (jq is not assumed).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/work_lib.sh"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-work.XXXXXX") || bail "mktemp failed"
# The workers started in the background, and the CMD processes they ran
# (each test CMD writes its pid to a file named *.pid).
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for f in "$ROOT"/*.pid; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$ROOT"
}
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

# Each step has $B, a fresh board with nothing on it.
step_setup() {
  B=$ROOT/b$step_no
  "$JOBBOARD" post --board "$B" setup >/dev/null &&
    "$JOBBOARD" claim-next --board "$B" --who setup >"$ROOT/u" &&
    "$JOBBOARD" consume --board "$B" --who setup "$(cat "$ROOT/u")" ||
    fail "cannot make a board"
}

# jb ARGS: jobboard on $B; sets $out, $err and $rc.
jb() {
  run "$JOBBOARD" --board "$B" "$@"
}
# post NAME [ARGS]: sets $uuid.
post() {
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
# pycheck EXPR WHAT: $out is JSON lines, `lines` their list, `j` the first;
# work --json's last line, its summary, is left out (tests/work_friendly.sh
# checks it).
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines() if l]
lines = [l for l in lines if not (isinstance(l, dict) and "summary" in l and
                                  "uuid" not in l)]
j = lines[0] if lines else None
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
# record UUID: $out is the history record of job UUID as JSON (or empty).
record() {
  jb history --json
  out=$(printf '%s\n' "$out" | grep -F "\"uuid\":\"$1\"")
}
state_is() { # state_is UUID STATE WHAT
  jb state "$1"
  [ "$out" = "$2" ] || fail "$3: job is '$out', expected $2 ($err)"
}

# wait_file FILE: up to 10 s for FILE to exist (CMD started).
wait_file() {
  local i=0
  while [ ! -s "$1" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  [ -s "$1" ] || fail "$1 did not appear"
}
# start_job NAME WORK-ARGS...: post job NAME ($a its uuid), start a worker
# with WORK-ARGS in the background and wait until its CMD runs ($cmd_pid).
start_job() {
  post "$1"
  a=$uuid
  shift
  rm -f "$CMD_PIDFILE"
  work_bg "$@"
  wait_file "$CMD_PIDFILE"
  cmd_pid=$(cat "$CMD_PIDFILE" 2>/dev/null)
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A CMD that writes its pid to $ROOT/cmd.pid, then becomes `sleep S`
# (same pid: killing it kills the sleep), then prints {"slept": S}.
cat >"$ROOT/sleeper" <<'EOF'
#!/bin/sh
echo $$ >"$CMD_PIDFILE.tmp" && mv "$CMD_PIDFILE.tmp" "$CMD_PIDFILE"
sleep "$1"
printf '{"slept": %s}\n' "$1"
EOF
cat >"$ROOT/exec-sleeper" <<'EOF'
#!/bin/sh
echo $$ >"$CMD_PIDFILE.tmp" && mv "$CMD_PIDFILE.tmp" "$CMD_PIDFILE"
exec sleep "$1"
EOF
# A CMD that sleeps S seconds, but on SIGTERM writes TERM to $MARK and
# exits 0 (the sleep, in its process group, gets the SIGTERM too).
cat >"$ROOT/term-trap" <<'EOF'
#!/bin/sh
trap 'echo TERM >"$MARK"; exit 0' TERM
echo $$ >"$CMD_PIDFILE.tmp" && mv "$CMD_PIDFILE.tmp" "$CMD_PIDFILE"
sleep "$1" &
wait
EOF
chmod +x "$ROOT/sleeper" "$ROOT/exec-sleeper" "$ROOT/term-trap"
export CMD_PIDFILE=$ROOT/cmd.pid
export MARK=$ROOT/mark

# --- tests ----------------------------------------------------------------

begin "the job on stdin and in the environment; CMD's JSON is the result"
cat >"$ROOT/echo-job" <<'EOF'
#!/bin/sh
# The result: the job as read, the environment, and n doubled.
exec python3 -c '
import json, os, sys
job = json.loads(sys.stdin.readline())
rest = sys.stdin.read()
print(json.dumps({"job": job, "rest": rest, "double": job["details"]["n"] * 2,
                  "env": [os.environ.get(k) for k in
                          ("JOBBOARD_UUID", "JOBBOARD_NAME", "JOBBOARD_BOARD")]}))
'
EOF
chmod +x "$ROOT/echo-job"
post resize --details '{"n": 21, "path": "/srv/a.png"}' --priority high
a=$uuid
# A relative --board: JOBBOARD_BOARD must still be absolute.
(cd "$ROOT" && "$JOBBOARD" work --board "b$step_no" --who w1 --jobs 1 -- \
  "$ROOT/echo-job" >"$ROOT/out" 2>"$ROOT/err")
rc=$?
out=$(cat "$ROOT/out") err=$(cat "$ROOT/err")
expect_rc 0 "work --jobs 1"
[ -z "$out" ] || fail "stdout should be empty without --json: $out"
has "$err" "work: $a resize: consumed (exit 0, " "progress line"
record "$a"
pycheck 'j["outcome"] == "consumed" and j["owner"] == "w1"' "history"
pycheck 'j["result"]["double"] == 42' "result computed from the details"
pycheck 'j["result"]["job"]["uuid"] == "'"$a"'" and
  j["result"]["job"]["name"] == "resize" and
  j["result"]["job"]["details"] == {"n": 21, "path": "/srv/a.png"} and
  j["result"]["job"]["state"] == "CLAIMED" and
  j["result"]["job"]["owner"] == "w1" and
  j["result"]["job"]["priority"] == "HIGH" and
  j["result"]["job"]["claim"]["holder_pid"] > 0' "stdin is show --json's object"
pycheck 'j["result"]["rest"] == ""' "one line on stdin, nothing after it"
pycheck 'j["result"]["env"] == ["'"$a"'", "resize", "'"$B"'"]' "environment"
end

begin "a Redis password in work's environment does not reach the job's command"
post secret-env
# The command writes its environment to stderr, which passes through.
JOBBOARD_REDIS_PASSWORD=s3cretZ JOBBOARD_KEEP_ME=yes "$JOBBOARD" work \
  --board "$B" --who w1 --jobs 1 -- sh -c 'env >&2' >"$ROOT/out" 2>"$ROOT/err"
rc=$?
expect_rc 0 "work --jobs 1"
grep -q s3cretZ "$ROOT/err" && fail "the job saw JOBBOARD_REDIS_PASSWORD"
grep -q '^JOBBOARD_KEEP_ME=yes$' "$ROOT/err" ||
  fail "the job lost an ordinary variable: $(cat "$ROOT/err")"
end

begin "exit 3 fails the job (its result kept), exit 100 sends it to the dead letters, a signal fails it"
post three
a=$uuid
post hundred
b=$uuid
post killed
c=$uuid
# Jobs are claimed oldest first: three, hundred, killed.
cat >"$ROOT/by-name" <<'EOF'
#!/bin/sh
case $JOBBOARD_NAME in
  three) echo '{"error": "bad input"}'; exit 3 ;;
  hundred) exit 100 ;;
  killed) kill -9 $$ ;;
esac
EOF
chmod +x "$ROOT/by-name"
jb work --who w --jobs 3 --json -- "$ROOT/by-name"
expect_rc 0 "work --jobs 3"
pycheck 'len(lines) == 3' "three progress lines"
pycheck '[l["outcome"] for l in lines] == ["failed", "dead", "failed"]' "outcomes"
pycheck '[l["exit"] for l in lines] == [3, 100, None] and
  [l["signal"] for l in lines] == [None, None, 9]' "exit and signal"
pycheck '[l["uuid"] for l in lines] == ["'"$a"'", "'"$b"'", "'"$c"'"] and
  lines[0]["name"] == "three" and all(l["seconds"] >= 0 for l in lines)' "uuids"
record "$a"
pycheck 'j["outcome"] == "failed" and j["result"] == {"error": "bad input"}' "exit 3"
record "$b"
pycheck 'j["outcome"] == "dead" and j["reason"] == "exit 100"' "exit 100"
jb dead list --json
pycheck 'len(lines) == 1 and j["uuid"] == "'"$b"'" and j["cause"] == "buried" and
  j["attempts"] == 1 and j["reason"] == "exit 100"' "exit 100: the dead letter"
record "$c"
pycheck 'j["outcome"] == "failed" and j["result"] is None' "killed by SIGKILL"
jb count
[ "$out" = 0 ] || fail "jobs left on the board: $out"
end

begin "output that is not a JSON object: no result, a warning naming the job"
post plain
a=$uuid
post array
b=$uuid
jb work --who w --jobs 2 -- sh -c \
  'if [ "$JOBBOARD_NAME" = plain ]; then echo hello; else echo "[1, 2]"; fi'
expect_rc 0 "work"
has "$err" "job $a: CMD's output is not a JSON object" "warning for text"
has "$err" "job $b: CMD's output is not a JSON object" "warning for an array"
record "$a"
pycheck 'j["outcome"] == "consumed" and j["result"] is None' "text output"
record "$b"
pycheck 'j["outcome"] == "consumed" and j["result"] is None' "array output"
end

begin "output {} is a result, the empty map; no output is none"
post empty
a=$uuid
post silent
b=$uuid
jb work --who w --jobs 2 -- sh -c \
  'if [ "$JOBBOARD_NAME" = empty ]; then echo "{}"; fi'
expect_rc 0 "work"
record "$a"
pycheck 'j["outcome"] == "consumed" and j["result"] == {}' "{} output"
record "$b"
pycheck 'j["outcome"] == "consumed" and j["result"] is None' "no output"
end

begin "stdout beyond 1 MiB fails the job, without a result"
post big
a=$uuid
jb work --who w --jobs 1 -- sh -c 'head -c 2000000 /dev/zero | tr "\0" x'
expect_rc 0 "work"
has "$err" "job $a: CMD wrote more than 1048576 bytes" "message"
record "$a"
pycheck 'j["outcome"] == "failed" and j["result"] is None' "history"
end

begin "CMD's own options are not the worker's (with or without --)"
post one
a=$uuid
post two
b=$uuid
jb work --who w --jobs 1 sh -c 'echo "{\"argv\": \"$0 $1\"}"' x --who
expect_rc 0 "without --"
record "$a"
pycheck 'j["result"] == {"argv": "x --who"}' "CMD's arguments"
jb work --who w --jobs 1 -- sh -c 'echo "{\"argv\": \"$0\"}"' --jobs
expect_rc 0 "with --"
record "$b"
pycheck 'j["result"] == {"argv": "--jobs"}' "CMD's arguments after --"
end

begin "a worker killed with SIGKILL mid-job: the job is claimable at once, CMD ends"
start_job victim --who w --lease 3600 -- "$ROOT/exec-sleeper" 60
jb claim-next --who other
expect_rc 3 "claim-next while the worker runs"
jb entities --json
pycheck 'any(e["name"] == "w" and e["kind"] == "worker" and
  e["pid"] == '"$wpid"' for e in lines)' "the worker is a registered entity"
kill -9 "$wpid"
wait "$wpid" 2>/dev/null
# Bound to the worker's process: no lease (an hour here) to wait for.
jb claim-next --who other
expect_rc 0 "claim-next after the kill"
[ "$out" = "$a" ] || fail "claim-next got '$out', expected $a"
# CMD got SIGTERM when its worker died (it would run beside a new owner).
i=0
while kill -0 "$cmd_pid" 2>/dev/null && [ $i -lt 100 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -0 "$cmd_pid" 2>/dev/null && fail "CMD $cmd_pid still runs"
end

begin "SIGTERM while CMD runs: the job is finished and consumed, exit 0"
start_job long --who w -- "$ROOT/sleeper" 1
# The signal first: a job posted before it could be claimed by the first
# job's consume when posting takes longer than CMD (ASan, a loaded machine).
kill -TERM "$wpid"
post next
b=$uuid
wait_exit "$wpid" 10
expect_rc 0 "worker"
record "$a"
pycheck 'j["outcome"] == "consumed" and j["result"] == {"slept": 1}' "history"
state_is "$b" UNCLAIMED "the next job (not taken after the signal)"
jb entities --json
pycheck 'not any(e["name"] == "w" for e in lines)' "unregistered on exit"
end

begin "SIGINT while CMD runs: the same"
start_job long --who w -- "$ROOT/sleeper" 1
kill -INT "$wpid"
wait_exit "$wpid" 10
expect_rc 0 "worker"
record "$a"
pycheck 'j["outcome"] == "consumed"' "history"
end

begin "a second SIGTERM abandons the job, stops CMD, exit 143"
start_job doomed --who w --json -- "$ROOT/exec-sleeper" 60
kill -TERM "$wpid"
sleep 0.2
kill -TERM "$wpid"
wait_exit "$wpid" 10
expect_rc 143 "worker"
has "$err" "job $a abandoned" "message"
out=$(cat "$ROOT/wout")
pycheck 'j["outcome"] == "abandoned" and j["signal"] == 15' "progress line"
kill -0 "$cmd_pid" 2>/dev/null && fail "CMD $cmd_pid still runs"
state_is "$a" UNCLAIMED "after the abandon"
jb claim-next --who other
[ "$out" = "$a" ] || fail "claim-next got '$out' (exit $rc)"
end

begin "SIGTERM or SIGINT while waiting for a job: exit 0 at once"
for sig in TERM INT; do
  work_bg --who "idle-$sig" -- true
  # Registered: it is past its set-up and waiting.
  i=0
  until "$JOBBOARD" entities --board "$B" | grep -q "idle-$sig" || [ $i -ge 200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  t0=$(now_ms)
  kill -"$sig" "$wpid"
  wait_exit "$wpid" 5
  ms=$(($(now_ms) - t0))
  expect_rc 0 "SIG$sig"
  [ "$ms" -lt 1000 ] || fail "SIG$sig: the worker took $ms ms to stop"
done
end

begin "--jobs N stops after N jobs; --timeout S stops when idle that long"
for n in 1 2 3; do post "job$n"; done
jb work --who w --jobs 2 -- true
expect_rc 0 "--jobs 2"
jb count
[ "$out" = 1 ] || fail "--jobs 2 left $out jobs, expected 1"
t0=$(now_ms)
jb work --who w --timeout 0.5 -- true
ms=$(($(now_ms) - t0))
expect_rc 0 "--timeout 0.5"
jb count
[ "$out" = 0 ] || fail "--timeout: the last job was not done: $out left"
[ "$ms" -ge 450 ] && [ "$ms" -lt 3000 ] ||
  fail "--timeout 0.5 returned after $ms ms"
end

begin "bad command lines: clear errors, exit 2, no job claimed"
post waiting
a=$uuid
jb work -- true
expect_rc 2 "no --who"
has "$err" "--who NAME is required" "no --who"
jb work --who w
expect_rc 2 "no CMD"
has "$err" "missing CMD" "no CMD"
jb work --who w --
expect_rc 2 "only --"
has "$err" "missing CMD" "only --"
jb work --who w --frobnicate -- true
expect_rc 2 "unknown option"
has "$err" "unknown option '--frobnicate'" "unknown option"
jb work --who w --jobs 0 -- true
expect_rc 2 "--jobs 0"
has "$err" "--jobs: '0' is not a number of jobs" "--jobs 0"
jb work --who w --jobs
expect_rc 2 "--jobs without a value"
has "$err" "option '--jobs' needs an argument" "--jobs without a value"
jb work --who w --lease soon -- true
expect_rc 2 "bad --lease"
has "$err" "'soon' is not a duration for --lease" "bad --lease"
for v in 0 -1 soon inf 1e9; do
  jb work --who w --time-limit "$v" -- true
  expect_rc 2 "--time-limit $v"
  has "$err" "'$v' is " "--time-limit $v"
  has "$err" "for --time-limit: " "--time-limit $v"
done
for v in -1 soon inf 86401; do
  jb work --who w --grace "$v" -- true
  expect_rc 2 "--grace $v"
  has "$err" "'$v' is " "--grace $v"
  has "$err" "for --grace: " "--grace $v"
done
jb work --who w -- no-such-command-jobboard-test
expect_rc 2 "CMD not in PATH"
has "$err" "cannot execute 'no-such-command-jobboard-test': not found in PATH" "CMD"
jb work --who w -- "$ROOT/no-such-file"
expect_rc 2 "CMD not there"
has "$err" "No such file or directory" "CMD not there"
jb work --who w -- /dev/null
expect_rc 2 "CMD not executable"
has "$err" "Permission denied" "CMD not executable"
state_is "$a" UNCLAIMED "the job after the bad command lines"
# A worker waits for its board to appear (tests/service.sh); --timeout 0
# looks once.
jb work --board "$ROOT/no-such-board" --who w --timeout 0 -- true
expect_rc 3 "no board, --timeout 0"
jb work --board "$ROOT/no-such-board" --who w --timeout 0.3 -- true
expect_rc 7 "no board within --timeout"
has "$err" "did not appear within the timeout" "no board within --timeout"
end

begin "CMD that fails to execute when its job comes: the job is abandoned, exit 2"
post unlucky
a=$uuid
# Executable, so it passes the check at start, but its interpreter is gone.
printf '#!/no/such/interpreter\n' >"$ROOT/broken"
chmod +x "$ROOT/broken"
jb work --who w -- "$ROOT/broken"
expect_rc 2 "worker"
has "$err" "job $a: cannot execute '$ROOT/broken': No such file or directory" "message"
has "$err" "job $a abandoned: it is claimable again" "says what became of the job"
state_is "$a" UNCLAIMED "the job"
end

# A 2 s lease renewed every 2/3 s: a renewal would have to be over 1.3 s
# late (a loaded CI machine running the other tests) to let it lapse.
begin "--lease 2 with a 10 s CMD: the lease is kept alive, nobody else gets the job"
start_job slow --who w --lease 2 --jobs 1 -- "$ROOT/sleeper" 10
# A producer waits for the result in another process.
"$JOBBOARD" wait-done --board "$B" --json --timeout 40 "$a" >"$ROOT/done" 2>&1 &
dpid=$!
PIDS+=("$dpid")
for t in 1 2 3; do
  sleep 0.9 # past the 2 s lease by the third look
  jb claim-next --who other
  expect_rc 3 "claim-next by another worker ($t)"
done
# (10 s: each jobboard call takes up to half a second on a loaded machine,
# and the claim must still be held when it is shown.)
jb show --json "$a"
pycheck 'j["claim"]["lease_expires"] is not None' "the claim has a lease"
wait_exit "$wpid" 30
expect_rc 0 "worker"
record "$a"
pycheck 'j["outcome"] == "consumed" and j["owner"] == "w" and
  j["result"] == {"slept": 10}' "consumed by its worker at the end"
wait "$dpid" || fail "wait-done: exit $?: $(cat "$ROOT/done")"
out=$(cat "$ROOT/done")
pycheck 'j["outcome"] == "consumed" and j["result"] == {"slept": 10}' "wait-done"
end

begin "a worker whose lease lapsed (stopped) is refused when it completes"
start_job fenced --who w --lease 0.5 --jobs 1 -- "$ROOT/sleeper" 2
kill -STOP "$wpid" # CMD, in its own process group, runs on
sleep 1
# Claimed again under the same name: only the token tells the claims apart.
jb claim-next --who w --lease 60
expect_rc 0 "claim-next once the lease lapsed"
[ "$out" = "$a" ] || fail "claim-next got '$out'"
kill -CONT "$wpid"
wait_exit "$wpid" 10
expect_rc 0 "worker"
has "$err" "the claim was lost" "warning when the renewal fails"
has "$err" "job $a: consume refused" "refusal"
has "$err" "work: $a fenced: refused" "progress line"
state_is "$a" CLAIMED "the job, still the new claim's"
end

begin "a consume claims the next job in its commit; the last of --jobs claims none"
for n in 1 2 3; do post "job$n"; done
jb work --who w --jobs 2 -- true
expect_rc 0 "--jobs 2"
jb state "$uuid"
[ "$out" = UNCLAIMED ] || fail "the third job is '$out', expected UNCLAIMED"
jb watch --from 1 --json --timeout 0
# The setup job's events come first; then job1 claimed by a wait, its
# CONSUMED and job2's CLAIMED in one commit (one time), job2 CONSUMED,
# and no claim after it.
pycheck '[(e["type"], e["owner"]) for e in lines[-5:]] == [("POSTED", None), ("CLAIMED", "w"), ("CONSUMED", "w"), ("CLAIMED", "w"), ("CONSUMED", "w")] and lines[-3]["time"] == lines[-2]["time"] and lines[-3]["uuid"] != lines[-2]["uuid"]' "events"
end

begin "--time-limit: CMD past it gets SIGTERM, the job is retried after its back-off though CMD exits 0"
# A back-off of 4 s (3.2 to 4.8 with its jitter).
post overrun --backoff 4
a=$uuid
rm -f "$MARK"
t0=$(now_ms)
jb work --who w --jobs 1 --time-limit 1 -- "$ROOT/term-trap" 60
ms=$(($(now_ms) - t0))
expect_rc 0 "work"
[ "$(cat "$MARK" 2>/dev/null)" = TERM ] || fail "CMD did not get SIGTERM"
[ "$ms" -lt 30000 ] || fail "the worker took $ms ms (CMD sleeps 60 s)"
has "$err" "job $a: time limit 1.00 s exceeded: stopping CMD" "message"
has "$err" "work: $a overrun: retried (exit 0, " "progress line"
has "$err" "s): time limit 1.00 s exceeded (attempt 1 of 10, claimable again in " \
  "progress line's reason"
jb show --json "$a"
# Retried at least 1 s after t0, with a back-off of at least 3.2 s.
pycheck 'j["state"] == "UNCLAIMED" and j["attempts"] == 1 and
  j["last_reason"] == "time limit 1.00 s exceeded" and
  j["not_before"] is not None and
  __import__("datetime").datetime.fromisoformat(j["not_before"].replace(
    "Z", "+00:00")).timestamp() * 1000 >= '"$t0"' + 4000' \
  "the job, back with its back-off"
# Not claimable before then (looked at only while over 1.5 s are left).
left=$(printf '%s\n' "$out" | "$PYTHON" -c '
import datetime, json, sys, time
j = json.loads(sys.stdin.readline())
t = datetime.datetime.fromisoformat(j["not_before"].replace("Z", "+00:00"))
print(int((t.timestamp() - time.time()) * 1000))' 2>/dev/null || echo 0)
if [ "$left" -gt 1500 ]; then
  jb claim-next --who other
  expect_rc 3 "claim-next during the back-off"
fi
record "$a"
[ -z "$out" ] || fail "the job has a history record: $out"
# After its back-off, a run within the limit consumes it.
jb work --who w --jobs 1 --timeout 60 --json --time-limit 30 -- \
  "$ROOT/term-trap" 0
expect_rc 0 "second work"
pycheck 'j["uuid"] == "'"$a"'" and j["outcome"] == "consumed" and
  j["reason"] is None and j["attempts"] is None' "second run"
record "$a"
pycheck 'j["outcome"] == "consumed"' "history"
end

begin "--grace: CMD that ignores SIGTERM gets SIGKILL that much later"
post stubborn
a=$uuid
jb work --who w --jobs 1 --json --time-limit 0.5 --grace 1.5 -- \
  sh -c 'trap "" TERM; sleep 60'
expect_rc 0 "work"
# Not killed before its limit and grace (2 s) are over; long before 60 s.
pycheck 'j["uuid"] == "'"$a"'" and j["outcome"] == "retried" and
  j["exit"] is None and j["signal"] == 9 and j["attempts"] == 1 and
  j["reason"] == "time limit 0.50 s exceeded" and
  2.0 <= j["seconds"] < 30' "progress line"
has "$err" "SIGKILL 1.50 s later" "message"
end

begin "--time-limit is per job: CMDs within it are consumed, with no reason"
post in-time-1
a=$uuid
post in-time-2
b=$uuid
# Each 3 s, together past the 5 s limit.
jb work --who w --jobs 2 --json --time-limit 5 -- "$ROOT/sleeper" 3
expect_rc 0 "work"
pycheck '[l["outcome"] for l in lines] == ["consumed", "consumed"] and
  [l["reason"] for l in lines] == [None, None]' "progress lines"
record "$b"
pycheck 'j["outcome"] == "consumed" and j["result"] == {"slept": 3}' "history"
end

begin "exit 75 retries the job after its back-off; at its maximum of attempts it is dead"
post tempfail --backoff 0.1 --max-attempts 2
a=$uuid
jb work --who w --jobs 1 --json -- sh -c 'exit 75'
expect_rc 0 "work"
pycheck 'j["uuid"] == "'"$a"'" and j["outcome"] == "retried" and
  j["exit"] == 75 and j["reason"] == "exit 75" and j["attempts"] == 1 and
  j["not_before"] is not None' "progress line"
jb show --json "$a"
pycheck 'j["state"] == "UNCLAIMED" and j["attempts"] == 1 and
  j["last_reason"] == "exit 75"' "the job, back on the board"
# The second attempt, after its back-off (0.1 s), is the last.
jb work --who w --jobs 1 --timeout 60 -- sh -c 'exit 75'
expect_rc 0 "second work"
has "$err" "work: $a tempfail: dead (exit 75, " "progress line"
has "$err" "s): exit 75 (attempt 2 of 2, to the dead letters)" "progress line's end"
jb dead list --json
pycheck 'len(lines) == 1 and j["uuid"] == "'"$a"'" and
  j["cause"] == "attempts" and j["attempts"] == 2' "the dead letter"
record "$a"
pycheck 'j["outcome"] == "dead" and j["reason"] == "exit 75"' "history"
end

begin "a job's own time limit stops CMD before its claim lapses; it is retried"
post limited --time-limit 3 --backoff 0.1
a=$uuid
rm -f "$MARK"
jb work --who w --jobs 1 --json -- "$ROOT/term-trap" 60
expect_rc 0 "work"
[ "$(cat "$MARK" 2>/dev/null)" = TERM ] || fail "CMD did not get SIGTERM"
# Stopped 1 s before the claim lapses at 3 s; CMD sleeps 60 s.
pycheck 'j["uuid"] == "'"$a"'" and j["outcome"] == "retried" and
  j["reason"] == "the job\x27s time limit 3.00 s reached" and
  j["attempts"] == 1 and 1.9 <= j["seconds"] < 30' "progress line"
has "$err" "its claim lapses at the job's time limit, 3.00 s, in 1.00 s" "message"
# Counted once: by the retry, not by a lapse too.
jb show --json "$a"
pycheck 'j["attempts"] == 1 and j["time_limit"] == 3' "the job"
end

begin "workers tick the board's schedules: each 1-second run is posted once"
jb schedule add beat --every 1 --job-name beat
expect_rc 0 "schedule add"
# Two workers, started before the first run is due, wait for a job: the
# wait ends when a run falls due, one of them posts it (each run once,
# whichever ticks) and one runs it.
work_bg --who w1 --jobs 3 --json -- cat
w1=$wpid
"$JOBBOARD" work --board "$B" --who w2 --jobs 3 --json -- cat \
  >"$ROOT/wout2" 2>"$ROOT/werr2" &
w2=$!
PIDS+=("$w2")
wait_exit "$w1" 30
expect_rc 0 "worker 1"
wait_exit "$w2" 30
expect_rc 0 "worker 2"
# Six jobs run; at most one more run posted (a tick before a worker's
# last job); every run posted once, as the schedule counts its runs.
jb history --json
hist=$(printf '%s\n' "$out" | grep '"name":"beat"')
jb list --json
onboard=$(printf '%s\n' "$out" | grep '"name":"beat"')
jb schedule list --json
runs=$(printf '%s\n' "$out" | "$PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.readline())["runs"])')
out=$hist
pycheck 'len(lines) == 6 and all(l["outcome"] == "consumed" for l in lines)' \
  "six runs consumed"
out=$(printf '%s\n%s\n' "$hist" "$onboard")
pycheck 'len(set(l["details"]["scheduled_at"] for l in lines)) == len(lines) == '"$runs"' and
  6 <= len(lines) <= 7' "each run posted once ($runs runs)"
end

begin "work --no-schedules leaves the schedules alone"
jb schedule add beat --every 1 --job-name beat
work_bg --who w --no-schedules --timeout 2.5 -- cat
wait_exit "$wpid" 30
expect_rc 0 "work"
jb count
[ "$out" = 0 ] || fail "a run was posted: count $out"
jb schedule list --json
pycheck 'j["runs"] == 0' "no run"
end

# --- --concurrency -----------------------------------------------------

# A CMD for the tests of --concurrency: it writes its pid to a marker named
# after its job in $MEET, then waits (up to 20 s) until $MEET holds
# $MEET_N markers: a CMD alone never gets there, so CMDs that get there
# ran at the same time. Then it waits for $GO, when set, to exist (up to
# 20 s), sleeps $MEET_SLEEP seconds and prints {"met": markers seen}.
cat >"$ROOT/meet" <<'EOF'
#!/bin/sh
echo $$ >"$MEET/$JOBBOARD_UUID.tmp" && mv "$MEET/$JOBBOARD_UUID.tmp" "$MEET/$JOBBOARD_UUID"
i=0
while [ "$(ls "$MEET" | wc -l)" -lt "$MEET_N" ]; do
  i=$((i + 1))
  [ $i -gt 400 ] && exit 3
  sleep 0.05
done
if [ -n "${GO:-}" ]; then
  i=0
  while [ ! -e "$GO" ]; do
    i=$((i + 1))
    [ $i -gt 400 ] && exit 4
    sleep 0.05
  done
fi
sleep "${MEET_SLEEP:-0}"
printf '{"met": %d}\n' "$(ls "$MEET" | wc -l)"
EOF
chmod +x "$ROOT/meet"
# running PID: the process is there and not a zombie.
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null)
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}
# meet_reset: a fresh, empty $MEET; $GO not there.
meet_reset() {
  export MEET=$ROOT/meet$step_no GO=$ROOT/go$step_no MEET_N=4 MEET_SLEEP=0
  rm -rf "$MEET" "$GO"
  mkdir "$MEET"
}

begin "--concurrency 4: four 1-second CMDs run at once, each job consumed once"
meet_reset
MEET_SLEEP=1 GO=
posted=()
for i in 1 2 3 4; do
  post "meet-$i"
  posted+=("$uuid")
done
t0=$(now_ms)
jb work --who w --concurrency 4 --jobs 4 --json -- "$ROOT/meet"
t1=$(now_ms)
expect_rc 0 "work --concurrency 4"
# Each CMD waits for the four markers, then sleeps 1 s: run one after the
# other they would fail (exit 3, after 20 s); run together, about 1 s.
[ $((t1 - t0)) -lt 3500 ] || fail "four 1-second CMDs took $((t1 - t0)) ms"
pycheck 'len(lines) == 4 and all(l["outcome"] == "consumed" and
  l["exit"] == 0 for l in lines) and
  sorted(l["uuid"] for l in lines) == sorted("'"${posted[*]}"'".split())' \
  "four progress lines, one a job"
jb history --json
pycheck 'len([l for l in lines if l["name"].startswith("meet-")]) == 4 and
  len(set(l["uuid"] for l in lines if l["name"].startswith("meet-"))) == 4 and
  all(l["outcome"] == "consumed" and l["result"] == {"met": 4}
      for l in lines if l["name"].startswith("meet-"))' \
  "history: each job consumed once, its CMD met the three others"
jb count
[ "$out" = 0 ] || fail "jobs left on the board: $out"
end

begin "--concurrency 4 --jobs 20: twenty jobs of twenty-three, each consumed once"
for i in $(seq 1 23); do post "many-$i"; done
jb work --who w --concurrency 4 --jobs 20 --json -- cat
expect_rc 0 "work"
pycheck 'len(lines) == 20 and len(set(l["uuid"] for l in lines)) == 20 and
  all(l["outcome"] == "consumed" for l in lines)' "twenty progress lines"
jb history --json
pycheck 'len([l for l in lines if l["name"].startswith("many-")]) == 20 and
  len(set(l["uuid"] for l in lines)) == len(lines)' "history: twenty, once each"
jb count
[ "$out" = 3 ] || fail "jobs left on the board: $out, expected 3"
end

begin "SIGTERM while 4 CMDs run: each runs to its end and is consumed, none more, exit 0"
meet_reset
for i in 1 2 3 4 5; do post "stop-$i"; done
work_bg --who w --concurrency 4 --json -- "$ROOT/meet"
meet_wait 4
kill -TERM "$wpid"
sleep 0.3
kill -0 "$wpid" 2>/dev/null || fail "the worker did not wait for its CMDs"
touch "$GO" # the CMDs finish only now, after the signal
wait_exit "$wpid" 30
expect_rc 0 "worker"
out=$(cat "$ROOT/wout")
pycheck 'len(lines) == 4 and all(l["outcome"] == "consumed" for l in lines)' \
  "four jobs consumed"
jb history --json
pycheck 'len([l for l in lines if l["name"].startswith("stop-")]) == 4 and
  all(l["result"] == {"met": 4} for l in lines if l["name"].startswith("stop-"))' \
  "history"
jb list --json
pycheck 'len(lines) == 1 and j["state"] == "UNCLAIMED"' "the fifth job, not taken"
jb entities --json
pycheck 'not any(e["name"] == "w" for e in lines)' "unregistered on exit"
end

begin "a second SIGTERM while 4 CMDs run: all abandoned, their CMDs stopped, exit 143"
meet_reset
MEET_N=4
for i in 1 2 3 4; do post "abandon-$i"; done
work_bg --who w --concurrency 4 --grace 1 -- "$ROOT/meet"
meet_wait 4
kill -TERM "$wpid"
sleep 0.2
kill -TERM "$wpid"
wait_exit "$wpid" 30
expect_rc 143 "worker"
n=$(grep -c "abandoned: it is claimable again" "$ROOT/werr")
[ "$n" = 4 ] || fail "$n jobs said abandoned, expected 4: $err"
jb list --json
pycheck 'len(lines) == 4 and all(l["state"] == "UNCLAIMED" for l in lines)' \
  "the four jobs, claimable again"
sleep 0.2
for f in "$MEET"/*; do
  kill -0 "$(cat "$f")" 2>/dev/null && fail "CMD $(cat "$f") still runs"
done
jb history --json
out=$(printf '%s\n' "$out" | grep '"name":"abandon-')
[ -z "$out" ] || fail "a job was completed: $out"
end

begin "--concurrency: each CMD's stderr comes through whole lines at a time"
meet_reset
for i in 1 2 3 4; do post "log-$i"; done
# Each CMD writes one line in three pieces, the others writing theirs in
# between: passed through as it comes, the pieces would mix.
jb work --who w --concurrency 4 --jobs 4 -- sh -c '
  echo $$ >"$MEET/$JOBBOARD_UUID"
  while [ "$(ls "$MEET" | wc -l)" -lt 4 ]; do sleep 0.05; done
  printf "line of %s: " "$JOBBOARD_NAME" >&2; sleep 0.2
  printf "one, " >&2; sleep 0.2
  printf "two\n" >&2
  printf "no newline at the end of %s" "$JOBBOARD_NAME" >&2'
expect_rc 0 "work"
# Each after its job's prefix, "[NAME UUID8] " (--prefix's default).
for i in 1 2 3 4; do
  grep -qx "\[log-$i [0-9a-f]\{8\}\] line of log-$i: one, two" "$run_err" ||
    fail "log-$i's line is not whole: $err"
  grep -qx "\[log-$i [0-9a-f]\{8\}\] no newline at the end of log-$i" "$run_err" ||
    fail "log-$i's last line is not whole: $err"
done
end

begin "--concurrency 2: a job posted while a CMD runs is claimed at once; SIGTERM then"
meet_reset
MEET_N=2
post first
a=$uuid
work_bg --who w --concurrency 2 --json -- "$ROOT/meet"
meet_wait 1
# The worker waits for a job beside its running CMD: the job posted now
# is claimed and the two CMDs meet.
post second
b=$uuid
meet_wait 2
kill -TERM "$wpid"
touch "$GO"
wait_exit "$wpid" 30
expect_rc 0 "worker"
out=$(cat "$ROOT/wout")
pycheck 'sorted(l["uuid"] for l in lines) == sorted(["'"$a"'", "'"$b"'"]) and
  all(l["outcome"] == "consumed" for l in lines)' "both consumed"
end

begin "--concurrency 2: a CMD's large output is read while the worker waits for a job"
post big
a=$uuid
# 300 KB on stdout: more than a pipe holds. The worker, waiting for a job
# in its other slot, must read it as it comes (SIGIO ends the wait).
work_bg --who w --concurrency 2 --timeout 4 --json -- "$PYTHON" -c '
import json; print(json.dumps({"blob": "x" * 300000}))'
wait_exit "$wpid" 30
expect_rc 0 "worker"
out=$(cat "$ROOT/wout")
# A worker that did not read while it waited would never end (no lease,
# no limit: nothing else wakes it), which wait_exit above catches; the
# bound below only says it was not left to some later wake-up, and is
# loose because a loaded machine (the ASan run) starts Python slowly.
pycheck 'len(lines) == 1 and j["outcome"] == "consumed" and j["seconds"] < 20' \
  "consumed while the worker waited ($(cat "$ROOT/wout" | head -c 300))"
end

begin "--concurrency 3 --lease 2: each CMD's claim is kept while the worker waits for a job; SIGKILL frees them all"
meet_reset
MEET_N=2
post leased-1
a=$uuid
post leased-2
b=$uuid
work_bg --who w --concurrency 3 --lease 2 -- "$ROOT/meet"
meet_wait 2
# Two CMDs run (they wait for $GO, never made), the third slot waits for a
# job: the leases must be renewed all the same.
for t in 1 2 3; do
  sleep 1 # past the 2 s lease by the third look
  jb claim-next --who other
  expect_rc 3 "claim-next by another worker ($t)"
done
kill -9 "$wpid"
wait "$wpid" 2>/dev/null
# Bound to the worker's process: both claimable at once.
jb claim-next --who other
expect_rc 0 "first claim-next after the kill"
got=$out
jb claim-next --who other
expect_rc 0 "second claim-next after the kill"
[ "$(printf '%s\n' "$got" "$out" | sort)" = "$(printf '%s\n' "$a" "$b" | sort)" ] ||
  fail "claimed '$got' and '$out', expected $a and $b"
# CMDs got SIGTERM when their worker died: gone, or zombies of init.
for f in "$MEET"/*; do
  i=0
  while running "$(cat "$f")" && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  running "$(cat "$f")" && fail "CMD $(cat "$f") still runs"
done
end

begin "--concurrency 2 --time-limit 2: each CMD is stopped at its own limit, both jobs retried"
post slow-1 --backoff 60
a=$uuid
post slow-2 --backoff 60
b=$uuid
jb work --who w --concurrency 2 --jobs 2 --json --time-limit 2 --grace 0.5 -- sleep 30
expect_rc 0 "work"
pycheck 'sorted(l["uuid"] for l in lines) == sorted(["'"$a"'", "'"$b"'"]) and
  all(l["outcome"] == "retried" and l["reason"] == "time limit 2.00 s exceeded"
      and l["signal"] == 15 and 1.9 <= l["seconds"] < 10 for l in lines)' \
  "both stopped and retried"
# Side by side, not one after the other: both claims are in the change
# log before either job is given back (the order, not a wall-clock bound,
# which a loaded machine stretches).
jb watch --from 1 --timeout 0.1 --json
pycheck 'len([l for l in lines if l["type"] == "CLAIMED" and l["owner"] == "w"]) == 2 and
  max(i for i, l in enumerate(lines) if l["type"] == "CLAIMED" and l["owner"] == "w") <
  min(i for i, l in enumerate(lines) if l["type"] == "ABANDONED")' \
  "both CMDs ran side by side ($out)"
state_is "$a" UNCLAIMED "slow-1"
state_is "$b" UNCLAIMED "slow-2"
end

begin "--concurrency: a status line on stderr when it is a terminal, none otherwise"
for i in 1 2 3 4; do post "status-$i"; done
jb work --who w --concurrency 2 --jobs 2 -- sleep 0.3
expect_rc 0 "work, stderr a file"
case $err in
  *"work: running"*) fail "a status line on a file: $err" ;;
esac
if command -v script >/dev/null 2>&1; then
  # script(1) gives the worker a terminal; its output is what it shows.
  script -qec "'$JOBBOARD' work --board '$B' --who w --concurrency 2 --jobs 2 -- sleep 0.3" \
    /dev/null </dev/null >"$ROOT/tty" 2>&1
  rc=$?
  expect_rc 0 "work, stderr a terminal"
  grep -q "work: running 2/2, done 0 (consumed 0, failed 0, retried 0)" "$ROOT/tty" ||
    fail "no status line: $(head -c 400 "$ROOT/tty" | od -c | head -5)"
  grep -q "$(printf '\r\033\\[K')" "$ROOT/tty" || fail "the status line is never erased"
else
  note "no script(1): the terminal half skipped"
fi
end

begin "--concurrency: bad values are usage errors naming the option, no job claimed"
post waiting
a=$uuid
for v in 0 abc -1 1025 4x ""; do
  jb work --who w --concurrency "$v" -- true
  expect_rc 2 "--concurrency '$v'"
  has "$err" "--concurrency: '$v' is not a number of commands at once (1 to 1024)" \
    "--concurrency '$v'"
done
jb work --who w --concurrency
expect_rc 2 "--concurrency without a value"
has "$err" "option '--concurrency' needs an argument" "no value"
state_is "$a" UNCLAIMED "the job"
end

begin "progress through JOBBOARD_PROGRESS_FD: another process sees it while CMD runs; bad lines warned once; rate-limited; the last line recorded before the job ends"
cat >"$ROOT/reporter" <<'EOF'
#!/bin/sh
cat >/dev/null
[ "$JOBBOARD_PROGRESS_FD" = 3 ] || { echo "JOBBOARD_PROGRESS_FD=$JOBBOARD_PROGRESS_FD" >&2; exit 9; }
echo "42 halfway there" >&3
# Wait until the test saw it (at most 20 s).
i=0
while [ ! -e "$MARK.go" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
echo "not a report" >&3
echo "150 too much" >&3
i=0
while [ $i -lt 300 ]; do echo "$((i / 3)) burst $i"; i=$((i + 1)); done >&3
echo "100 all done" >&3
EOF
chmod +x "$ROOT/reporter"
rm -f "$MARK.go"
post long
a=$uuid
"$JOBBOARD" work --board "$B" --who w1 --jobs 1 -- "$ROOT/reporter" \
  >"$ROOT/out" 2>"$ROOT/err" &
wpid=$!
PIDS+=("$wpid")
seen=""
for i in $(seq 1 200); do
  "$JOBBOARD" show --board "$B" --json "$a" >"$ROOT/show" 2>/dev/null &&
    "$PYTHON" -c '
import json, sys
j = json.load(open(sys.argv[1]))
p = j["progress"]
sys.exit(0 if j["state"] == "CLAIMED" and p and p["percent"] == 42.0 and
         p["message"] == "halfway there" else 1)' "$ROOT/show" && { seen=1; break; }
  sleep 0.1
done
[ -n "$seen" ] || fail "another process did not see the progress while CMD ran: $(cat "$ROOT/show")"
touch "$MARK.go"
wait "$wpid"
rc=$?
out=$(cat "$ROOT/out") err=$(cat "$ROOT/err")
expect_rc 0 "work --jobs 1"
has "$err" "work: $a long: consumed (exit 0, " "progress line"
has "$err" "a progress line was ignored" "the bad line's warning"
[ "$(printf '%s\n' "$err" | grep -c 'progress line was ignored')" = 1 ] ||
  fail "bad lines warned more than once: $err"
jb watch --from 1 --timeout 0 --json
expect_ok "watch"
"$PYTHON" -c '
import json, sys
ev = [json.loads(l) for l in sys.argv[1].splitlines()]
p = [e for e in ev if e["type"] == "PROGRESS" and e["uuid"] == sys.argv[2]]
assert p[0]["percent"] == 42.0 and p[0]["message"] == "halfway there", p[0]
assert p[-1]["percent"] == 100.0 and p[-1]["message"] == "all done", p[-1]
# 302 reports after the first, in well under a second: a handful of commits.
assert 2 <= len(p) <= 12, len(p)
kinds = [e["type"] for e in ev if e["uuid"] == sys.argv[2]]
assert kinds.index("CONSUMED") > max(i for i, k in enumerate(kinds) if k == "PROGRESS")
' "$out" "$a" 2>"$ROOT/pyerr" || fail "progress events: $(cat "$ROOT/pyerr")"
end

finish
