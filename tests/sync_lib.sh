# tests/sync_lib.sh - shared by the replicator's integration tests
# (tests/sync_fleet.sh, tests/sync_outage.sh, tests/sync_holder.sh), which
# source it with bash. Not a test itself.
#
# What it gives:
#  - the checks every test makes first: redis-server, redis-cli and
#    /usr/bin/python3 with Debian's python3-taskflow (never PyPI). Any of
#    them missing skips the test (TAP: 1..0 # SKIP), and so does
#    JOBBOARD_SKIP_REDIS=1. The built ./jobboard (or $JOBBOARD) is needed
#    (a TAP "Bail out!" without it) and must have the `sync` command: without it the
#    test FAILS (the product piece it tests is missing).
#  - $ROOT, one mktemp -d directory, removed at exit with every process the
#    test started (only those: their pids are recorded, see track); the
#    EXIT trap kills them with SIGKILL after a SIGCONT (a paused redis).
#  - redis_start / redis_kill / redis_restart / rcli: a redis-server of the
#    test's own on a unix socket in $ROOT (--port 0 --save '' and, unless
#    the test asks for AOF, --appendonly no).
#  - sync_start DIR NAME [ARGS]: a `jobboard sync` daemon for board DIR,
#    its stderr in $ROOT/NAME.log; sync_stop NAME checks it exits 0 on
#    SIGTERM.
#  - worker_start / worker_stop / poster: `jobboard work` workers that log
#    every job they run, and posters of batches of jobs.
#  - tests/lib/harness.sh, sourced here: fail / note / die / finish (TAP;
#    the test exits 1 if any check failed), and on a failure the daemons'
#    logs.

set -u
. "$(dirname "$0")/lib/harness.sh"

[ "${JOBBOARD_SKIP_REDIS:-}" != 1 ] || skip_all "JOBBOARD_SKIP_REDIS=1"
missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v redis-cli >/dev/null 2>&1 || missing="$missing redis-cli(redis-tools)"
PY=/usr/bin/python3
if [ ! -x "$PY" ]; then
  missing="$missing python3"
else
  "$PY" -c 'import taskflow.jobs.backends.impl_redis' 2>/dev/null ||
    missing="$missing python3-taskflow"
  "$PY" -c 'import redis' 2>/dev/null || missing="$missing python3-redis"
fi
[ -z "$missing" ] || skip_all "missing:$missing (apt-get install -y" \
  "redis-server python3-taskflow python3-redis)"

srcdir=${srcdir:-.}
case $srcdir in
  /*) ;;
  *) srcdir=$PWD/$srcdir ;;
esac
PEER=$srcdir/tests/sync_peer.py
program JOBBOARD ./jobboard
unset JOBBOARD_DIR JOBBOARD_REDIS JOBBOARD_NAMESPACE

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jb-sync.XXXXXX") || bail "mktemp failed"
PIDS=()
REDIS_PID=""
track() { PIDS+=("$1"); }
cleanup() {
  local p
  [ -n "$REDIS_PID" ] && kill -CONT "$REDIS_PID" 2>/dev/null
  for p in "${PIDS[@]}"; do
    kill -CONT "$p" 2>/dev/null
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  # The CMDs our workers ran write their pid to *.cmdpid.
  for p in "$ROOT"/*.cmdpid; do
    [ -f "$p" ] && kill -9 "$(cat "$p")" 2>/dev/null
  done
  if [ "${JB_SYNC_KEEP:-}" = 1 ]; then
    echo "kept $ROOT" >&2
  else
    rm -rf "$ROOT"
  fi
}
at_exit cleanup
trap 'exit 130' INT TERM

# When a check failed, the daemons' logs (finish prints the failures after
# them, last).
daemon_logs() {
  local f
  for f in "$ROOT"/sync-*.log; do
    [ -f "$f" ] || continue
    note "--- $f (last 30 lines but the routine 'published job' ones)"
    note "$(grep -v ' sync: published job ' "$f" | tail -n 30)"
  done
}
on_failure daemon_logs

# The product piece every test needs.
"$JOBBOARD" sync --help >/dev/null 2>&1 ||
  die "'$JOBBOARD sync --help' fails: the replicator daemon (jobboard sync)" \
    "is missing: $("$JOBBOARD" sync --help 2>&1 | head -3)"

# ------------------------------------------------------------------ redis
SOCK=$ROOT/redis.sock
URL=unix://$SOCK
NS=${NS:-jbt}
REDIS_EXTRA=()
mkdir -p "$ROOT/redis"
redis_start() {
  redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 \
    --save '' --appendonly no --dir "$ROOT/redis" \
    --logfile "$ROOT/redis/log" "${REDIS_EXTRA[@]}" >/dev/null 2>&1 &
  REDIS_PID=$!
  track "$REDIS_PID"
  local i=0
  while [ "$(redis-cli -s "$SOCK" ping 2>/dev/null)" != PONG ]; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$REDIS_PID" 2>/dev/null; then
      tail -5 "$ROOT/redis/log" >&2
      die "redis-server did not start"
    fi
    sleep 0.05
  done
}
redis_kill() {
  kill -9 "$REDIS_PID"
  wait "$REDIS_PID" 2>/dev/null
  REDIS_PID=""
}
rcli() { redis-cli -s "$SOCK" "$@"; }

# ----------------------------------------------------------------- boards
# new_board DIR: an initialised empty board (a job posted and consumed
# before any replicator runs: decided locally, never published).
new_board() {
  local u
  u=$("$JOBBOARD" post --board "$1" --durability none setup) &&
    "$JOBBOARD" claim --board "$1" --who setup "$u" &&
    "$JOBBOARD" consume --board "$1" --who setup "$u" ||
    die "cannot make board $1"
}
jb() { "$JOBBOARD" --durability none "$@"; }
# For processes started in the background ($! must be jobboard itself, not
# a subshell running a function): "${JB[@]}" ARGS &
JB=("$JOBBOARD" --durability none)
count() { "$JOBBOARD" count --board "$1" 2>/dev/null; }

# sync_start DIR NAME [ARGS]: the replicator daemon of board DIR; pid in
# SYNC_PID[NAME], log in $ROOT/sync-NAME.log.
declare -A SYNC_PID
sync_start() {
  local dir=$1 name=$2
  shift 2
  "$JOBBOARD" --board "$dir" sync --redis "$URL" --namespace "$NS" "$@" \
    2>>"$ROOT/sync-$name.log" &
  SYNC_PID[$name]=$!
  track $!
}
# sync_stop NAME: SIGTERM; it must exit 0 within 15 s.
sync_stop() {
  local p=${SYNC_PID[$1]} i=0 rc
  kill -TERM "$p" 2>/dev/null
  while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  if kill -0 "$p" 2>/dev/null; then
    fail "sync daemon $1 did not exit within 15 s of SIGTERM"
    kill -9 "$p"
    wait "$p" 2>/dev/null
    return
  fi
  wait "$p"
  rc=$?
  [ "$rc" = 0 ] || fail "sync daemon $1 exited $rc on SIGTERM, expected 0"
}
sync_alive() { # sync_alive NAME: fail if the daemon died
  kill -0 "${SYNC_PID[$1]}" 2>/dev/null || {
    wait "${SYNC_PID[$1]}"
    die "sync daemon $1 is not running (exit $?)"
  }
}

# wait_until SECONDS WHAT CMD...: poll CMD every 0.1 s until it succeeds;
# fail naming WHAT when it has not within SECONDS. Returns CMD's last status.
wait_until() {
  local limit=$1 what=$2 i=0
  shift 2
  local n
  n=$(awk -v s="$limit" 'BEGIN { printf "%d", s * 10 }')
  until "$@"; do
    i=$((i + 1))
    if [ $i -ge "$n" ]; then
      fail "$what (waited $limit s)"
      return 1
    fi
    sleep 0.1
  done
  return 0
}
# worker_start NAME DIR SECONDS [OPTIONS...]: a `jobboard work --redis
# "$URL"` worker (with OPTIONS) on board DIR whose CMD appends the job's
# uuid to $ROOT/run-NAME.log and sleeps SECONDS; its pid in WPID[NAME],
# its stderr in $ROOT/NAME.err.
declare -A WPID
worker_start() {
  "${JB[@]}" --board "$2" work --who "$1" --redis "$URL" --namespace "$NS" \
    "${@:4}" -- sh -c 'echo "$JOBBOARD_UUID" >>"$1"; sleep "$2"' sh \
    "$ROOT/run-$1.log" "$3" 2>"$ROOT/$1.err" &
  WPID[$1]=$!
  track $!
}
# worker_stop NAME: SIGTERM; it must exit 0 and have had no completion
# refused (a claim it held lapsed and was taken again).
worker_stop() {
  local rc
  kill -TERM "${WPID[$1]}" 2>/dev/null
  wait "${WPID[$1]}"
  rc=$?
  [ "$rc" = 0 ] || fail "worker $1 exited $rc: $(tail -c 600 "$ROOT/$1.err")"
  grep -q ': refused' "$ROOT/$1.err" &&
    fail "worker $1 had completions refused: $(grep ': refused' "$ROOT/$1.err" | head -3)"
}
# poster DIR TAG SIZE PAUSE [LIMIT]: post SIZE jobs (named TAG-1, TAG-2,
# ...) on board DIR every PAUSE s, their uuids to $ROOT/posted-TAG, until
# $STOP exists or LIMIT jobs are posted; run it in the background.
poster() {
  local i=0 limit=${5:-0}
  while [ ! -e "${STOP:-/nonexistent}" ] &&
    { [ "$limit" = 0 ] || [ $i -lt "$limit" ]; }; do
    seq $((i + 1)) $((i + $3)) | sed "s/.*/{\"name\": \"$2-&\"}/" |
      jb --board "$1" post --batch >>"$ROOT/posted-$2" ||
      echo "post on $2 failed" >>"$ROOT/poster-errors"
    i=$((i + $3))
    sleep "$4"
  done
}
listed() { # listed UUID: Redis lists the job
  [ "$(rcli hexists "$NS:listings" "$1")" = 1 ]
}
on_board() { # on_board DIR UUID
  "$JOBBOARD" show --board "$1" "$2" >/dev/null 2>&1
}
