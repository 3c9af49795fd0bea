# tests/lib/work_lib.sh - sourced by the tests of `jobboard work`
# (tests/work.sh, tests/work_friendly.sh) after tests/lib/harness.sh:
# workers in the background and the CMDs they run. They use $JOBBOARD,
# $B (the step's board), $ROOT (the test's directory), $PIDS (an array of
# the pids to kill at exit) and $MEET (a directory where CMDs leave their
# pid, a file a job).

# work_bg ARGS: start `jobboard work` on $B in the background; $wpid its
# pid, its stdout and stderr in $ROOT/wout and $ROOT/werr.
work_bg() {
  "$JOBBOARD" work --board "$B" "$@" >"$ROOT/wout" 2>"$ROOT/werr" &
  wpid=$!
  PIDS+=("$wpid")
}
# wait_exit PID SECONDS: wait for the worker to end; sets $rc (124 if it
# did not end in time: it is then killed) and $err (its stderr).
wait_exit() {
  local i=0 limit=$(($2 * 20))
  while kill -0 "$1" 2>/dev/null && [ $i -lt $limit ]; do
    sleep 0.05
    i=$((i + 1))
  done
  if kill -0 "$1" 2>/dev/null; then
    kill -9 "$1"
    wait "$1" 2>/dev/null
    rc=124
  else
    wait "$1"
    rc=$?
  fi
  err=$(cat "$ROOT/werr")
}
# meet_wait N: up to 20 s for N CMDs to have left their pid in $MEET.
meet_wait() {
  local i=0
  while [ "$(ls "$MEET" | wc -l)" -lt "$1" ] && [ $i -lt 400 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  [ "$(ls "$MEET" | wc -l)" -ge "$1" ] || fail "$1 CMDs did not start: $(ls "$MEET" | wc -l) did"
}
