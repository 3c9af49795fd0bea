#!/bin/bash
# tests/service.sh - running jobboard as a service: boards made before the
# first job (init, --create, waiting for a board to appear), read-only
# access (a read-only bind mount, another user's board), --details from a
# file or stdin, a --batch line too long to read, and a full disk giving
# one message from every writing command.
#
# Parts that need root (mount, useradd) are skipped, with the reason
# printed, when not run as root. Runs the built ./jobboard (or $JOBBOARD)
# on boards under one mktemp -d directory, removed on exit with any mount
# it made and any process it started.

set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-service.XXXXXX") || bail "mktemp failed"
MOUNTS=""
PIDS=""
cleanup() {
  for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
  for m in $MOUNTS; do umount "$m" 2>/dev/null; done
  [ -n "${RO_USER:-}" ] && userdel "$RO_USER" 2>/dev/null
  rm -rf "$ROOT"
}
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

is_root=0
[ "$(id -u)" = 0 ] && is_root=1

# Each step has a fresh board directory $B (not created).
step_setup() { B=$ROOT/board$step_no; }
jb() { run "$JOBBOARD" --board "$B" "$@"; }
# wait_for_file FILE SECONDS
wait_for_file() {
  local i=0
  while [ ! -s "$1" ] && [ "$i" -lt $(($2 * 10)) ]; do
    sleep 0.1
    i=$((i + 1))
  done
  [ -s "$1" ]
}

# --- 1. boards that exist before the first job -----------------------------

begin "init makes an empty board; again: exit 0; files 0660 under umask 007"
(umask 007 && "$JOBBOARD" init "$B" >"$ROOT/out" 2>"$ROOT/err")
rc=$?
expect_rc 0 "init"
[ "$(cat "$ROOT/out")" = "created board $B" ] || fail "init said: $(cat "$ROOT/out")"
[ "$(stat -c %a "$B/data.mdb")" = 660 ] || fail "data.mdb is $(stat -c %a "$B/data.mdb"), expected 660"
[ "$(stat -c %a "$B/lock.mdb")" = 660 ] || fail "lock.mdb is $(stat -c %a "$B/lock.mdb")"
[ "$(stat -c %a "$B")" = 770 ] || fail "the directory is $(stat -c %a "$B"), expected 770"
jb count; expect_ok "count on the new board"
[ "$out" = 0 ] || fail "count: $out"
jb init --json; expect_ok "init of an existing board"
[ "$out" = "{\"board\":\"$B\",\"created\":false}" ] || fail "init --json: $out"
end

begin "init refuses a directory holding something else, and changes nothing"
mkdir -p "$B" && echo precious >"$B/notes.txt"
jb init
expect_rc 1 "init in a foreign directory"
expect_stderr "holds 'notes.txt' and no board" "init in a foreign directory"
[ ! -e "$B/data.mdb" ] && [ ! -e "$B/lock.mdb" ] || fail "init wrote into the directory"
mkdir -p "$ROOT/notboard" && echo "not lmdb" >"$ROOT/notboard/data.mdb"
run "$JOBBOARD" init "$ROOT/notboard"
expect_rc 1 "init on a data.mdb that is no board"
[ "$(cat "$ROOT/notboard/data.mdb")" = "not lmdb" ] || fail "data.mdb was changed"
run "$JOBBOARD" init --map-size 10 "$ROOT/x"
expect_rc 2 "a map size below 64K"
run "$JOBBOARD" init "$ROOT/no/such/parent"
expect_rc 3 "init under a missing parent"
end

begin "an empty directory counts as no board yet; init --map-size is kept"
mkdir -p "$B"
jb count
expect_rc 3 "count in an empty directory"
run "$JOBBOARD" init --map-size 1M "$B"; expect_rc 0 "init --map-size 1M"
# Kept with the board: a later open (another process) maps 1 MiB.
jb stats --json
[ "$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["file"]["map_size"])' <"$run_out")" = 1048576 ] ||
  fail "the map size of a later open is not the board's 1 MiB: $out"
# 300 jobs of 4 KiB do not fit in 1 MiB: the map grows by itself.
"$PYTHON" -c 'import json
for i in range(300): print(json.dumps({"name": "j%d" % i, "details": {"p": "x" * 4000}}))' >"$ROOT/jobs.jsonl"
run "$JOBBOARD" --board "$B" post --batch --durability none <"$ROOT/jobs.jsonl"
expect_rc 0 "a batch larger than the map"
jb count; [ "$out" = 300 ] || fail "count after the batch: $out"
end

begin "a worker started before init waits, then runs the first job posted"
"$JOBBOARD" --board "$B" work --who svc --jobs 1 --timeout 60 -- \
  sh -c 'cat >"$0"' "$ROOT/ran" >"$ROOT/work.out" 2>"$ROOT/work.err" &
wpid=$!
PIDS="$PIDS $wpid"
sleep 1
kill -0 "$wpid" 2>/dev/null || fail "the worker exited before the board existed: $(cat "$ROOT/work.err")"
grep -q "waiting for the board to appear" "$ROOT/work.err" ||
  fail "the worker did not say it waits: $(cat "$ROOT/work.err")"
run "$JOBBOARD" init "$B"; expect_rc 0 "init"
jb post first-job --details '{"n": 1}'; expect_rc 0 "post"
uuid=$out
wait "$wpid"
wrc=$?
[ "$wrc" = 0 ] || fail "the worker exited $wrc: $(cat "$ROOT/work.err")"
wait_for_file "$ROOT/ran" 5 || fail "the job's command did not run"
grep -q "$uuid" "$ROOT/ran" || fail "the command's stdin lacks the job: $(cat "$ROOT/ran")"
jb state "$uuid"; [ "$out" = COMPLETE ] || fail "the job is $out"
end

begin "wait, watch, claim-next --wait wait for the board; --create makes it"
jb wait --timeout 0.5
expect_rc 7 "wait for a board that never comes"
expect_stderr "did not appear within the timeout" "wait's timeout"
jb claim-next --who w --wait 0.3
expect_rc 7 "claim-next --wait with no board"
jb claim-next --who w
expect_rc 3 "claim-next without --wait: no board is not found"
"$JOBBOARD" --board "$B" watch --count 1 --timeout 30 >"$ROOT/watch.out" 2>"$ROOT/watch.err" &
wpid=$!
PIDS="$PIDS $wpid"
sleep 0.5
jb post appeared; expect_rc 0 "post makes the board"
wait "$wpid" || fail "watch exited $?: $(cat "$ROOT/watch.err")"
grep -q POSTED "$ROOT/watch.out" || fail "watch saw: $(cat "$ROOT/watch.out")"
run "$JOBBOARD" --board "$ROOT/made" wait --create --timeout 0
expect_rc 7 "wait --create on an empty new board: nothing to wait for"
[ -s "$ROOT/made/data.mdb" ] || fail "--create made no board"
run "$JOBBOARD" --board "$ROOT/made2" claim-next --who w --create
expect_rc 3 "claim-next --create: a board, no job"
[ -s "$ROOT/made2/data.mdb" ] || fail "claim-next --create made no board"
"$JOBBOARD" --board "$ROOT/late" wait >/dev/null 2>&1 &
wpid=$!
PIDS="$PIDS $wpid"
sleep 0.5
kill -TERM "$wpid"
wait "$wpid"
wrc=$?
[ "$wrc" = 143 ] || fail "a signal while waiting for the board: exit $wrc, expected 143"
end

begin "an empty post --batch makes the board"
run "$JOBBOARD" --board "$B" post --batch </dev/null
expect_rc 0 "empty batch"
[ "$err" = "jobboard: note: created a new board at $B" ] ||
  fail "empty batch: the new board is not said: $err"
jb count; [ "$out" = 0 ] || fail "count: $out ($err)"
end

# --- 2. read-only access ---------------------------------------------------

# check_read_only DIR WHAT: the reading commands work on DIR with one note,
# the writing ones exit 13 naming the cause, and nothing changed.
check_read_only() {
  local d=$1 what=$2 u=$3
  for cmd in "count" "list" "show $u" "state $u" "owner $u" "history" \
             "check" "wait --timeout 0.2" "wait-done --timeout 0.2 $u" \
             "watch --from 1 --timeout 0"; do
    # shellcheck disable=SC2086
    run "$JOBBOARD" --board "$d" $cmd
    case $cmd in
      wait-done*) expect_rc 7 "$what: $cmd" ;;
      *) expect_rc 0 "$what: $cmd" ;;
    esac
    expect_stderr "a read-only view" "$what: $cmd"
    [ "$(printf '%s\n' "$err" | grep -c 'read-only view')" = 1 ] ||
      fail "$what: $cmd: the note is not said once: $err"
  done
  run "$JOBBOARD" --board "$d" count
  [ "$out" = 2 ] || fail "$what: count is $out"
  run "$JOBBOARD" --board "$d" watch --from 1 --count 1 --json
  case $out in *POSTED*) ;; *) fail "$what: watch --from 1: $out ($err)" ;; esac
  for cmd in "post x" "claim --who w $u" "claim-next --who w" \
             "consume --who w $u" "trash --who w $u" "init"; do
    # shellcheck disable=SC2086
    run "$JOBBOARD" --board "$d" $cmd
    expect_rc 13 "$what: $cmd"
    expect_stderr "read-only" "$what: $cmd"
  done
}

begin "a read-only bind mount: reading commands work, writes exit 13"
if [ "$is_root" = 0 ]; then
  skip "needs root to mount (run as root to test it)"
else
  jb post one; u=$out
  jb post two
  mkdir -p "$ROOT/ro"
  if mount --bind "$B" "$ROOT/ro" 2>"$ROOT/err"; then
    MOUNTS="$ROOT/ro $MOUNTS"
    if mount -o remount,bind,ro "$ROOT/ro" 2>>"$ROOT/err" &&
       ! touch "$ROOT/ro/probe" 2>/dev/null; then
      check_read_only "$ROOT/ro" "read-only mount" "$u"
      # A commit through the writable path is seen through the mount.
      jb consume --who nobody "$u"
      jb claim --who w "$u"; jb consume --who w "$u"
      run "$JOBBOARD" --board "$ROOT/ro" state "$u"
      [ "$out" = COMPLETE ] || fail "the mount does not show a later commit: $out"
      jb check; expect_ok "the board is sound"
      # A board without its lock file (a copy) under a read-only mount:
      # read, and a write refused as read-only, not an I/O error.
      L=$ROOT/lockless
      run "$JOBBOARD" init "$L"; run "$JOBBOARD" --board "$L" post a
      rm -f "$L/lock.mdb"
      mkdir -p "$ROOT/ro2"
      if mount --bind "$L" "$ROOT/ro2" && MOUNTS="$ROOT/ro2 $MOUNTS" &&
         mount -o remount,bind,ro "$ROOT/ro2"; then
        run "$JOBBOARD" --board "$ROOT/ro2" count
        expect_rc 0 "count without lock.mdb"
        [ "$out" = 1 ] || fail "count without lock.mdb: $out"
        run "$JOBBOARD" --board "$ROOT/ro2" post b
        expect_rc 13 "post without lock.mdb on a read-only mount"
      else
        fail "could not mount $L read-only"
      fi
    else
      fail "could not make the bind mount read-only: $(cat "$ROOT/err")"
    fi
  else
    skip "mount --bind failed here: $(cat "$ROOT/err")"
  fi
fi
end

begin "another user's board, group-readable: reading works, writes exit 13"
if [ "$is_root" = 0 ]; then
  skip "needs root to create a user (run as root to test it)"
elif ! command -v useradd >/dev/null; then
  skip "useradd is not installed"
else
  RO_USER=jbsvc$$
  if useradd -M -N -g nogroup -s /bin/sh "$RO_USER" 2>"$ROOT/err"; then
    chmod 755 "$ROOT"
    (umask 027 && "$JOBBOARD" init "$B" >/dev/null)
  else
    skip "useradd failed: $(cat "$ROOT/err")"
    RO_USER=""
  fi
  if [ -z "$RO_USER" ]; then
    :
  elif ! su "$RO_USER" -s /bin/sh -c '"$0" --version' -- "$JOBBOARD" >/dev/null 2>&1; then
    # A build directory under a 0700 one (make check in mktemp -d).
    skip "user $RO_USER cannot run $JOBBOARD (its directory is private)"
  else
    jb post one; u=$out
    jb post two
    chgrp -R nogroup "$B"
    [ "$(stat -c %a "$B/lock.mdb")" = 640 ] || fail "lock.mdb is $(stat -c %a "$B/lock.mdb")"
    as_user() { # as_user ARGS: jobboard as $RO_USER, sets out/err/rc
      su "$RO_USER" -s /bin/sh -c '"$0" "$@"' -- "$JOBBOARD" "$@" \
        >"$ROOT/out" 2>"$ROOT/err"
      rc=$?
      out=$(cat "$ROOT/out")
      err=$(cat "$ROOT/err")
    }
    as_user --board "$B" count
    expect_rc 0 "count as another user"
    [ "$out" = 2 ] || fail "count as another user: $out"
    expect_stderr "read-only view" "count as another user"
    expect_stderr "Permission denied" "count as another user"
    as_user --board "$B" list --json
    [ "$(printf '%s\n' "$out" | wc -l)" = 2 ] || fail "list as another user: $out"
    as_user --board "$B" post x
    expect_rc 13 "post as another user"
    expect_stderr "read-only" "post as another user"
    jb count; [ "$out" = 2 ] || fail "the board changed: $out"
    # With group write (umask 007) the group is a full user of the board.
    chmod -R g+w "$B"
    as_user --board "$B" post y
    expect_rc 0 "post by the group once it may write"
    [ -z "$err" ] || fail "post with group write said: $err"
  fi
fi
end

# --- 5. input ---------------------------------------------------------------

begin "--details @FILE and --details - take details beyond the argument limit"
"$PYTHON" -c 'import json; print(json.dumps({"blob": "y" * 300000}))' >"$ROOT/big.json"
jb post big --details @"$ROOT/big.json"; expect_rc 0 "post --details @FILE"
u=$out
jb show --json "$u"
[ "$("$PYTHON" -c 'import json,sys; print(len(json.loads(sys.stdin.read())["details"]["blob"]))' <"$run_out")" = 300000 ] ||
  fail "the details read from the file are not whole"
run "$JOBBOARD" --board "$B" post piped --details - <"$ROOT/big.json"
expect_rc 0 "post --details -"
jb post x --details @"$ROOT/missing.json"
expect_rc 3 "--details @ a missing file"
expect_stderr "missing.json" "--details @ a missing file"
echo '[1, 2]' >"$ROOT/arr.json"
jb post x --details @"$ROOT/arr.json"
expect_rc 2 "--details @ a file holding an array"
expect_stderr "must be a JSON object" "--details @ an array"
jb count; [ "$out" = 2 ] || fail "count: $out"
end

# The bound: 64 MiB, well under the 100 MiB line a reader of the whole line
# would hold (the old reader peaked at 412 MiB), and above what a build
# with AddressSanitizer's shadow memory uses (38 MiB; 10 MiB without).
begin "a 100 MB --batch line is refused unread, RSS under 64 MiB"
# The line is streamed from a generator: the test itself never holds it.
"$PYTHON" - "$ROOT/rss" "$JOBBOARD" "$B" <<'EOF'
import resource, subprocess, sys
rss_file, jobboard, board = sys.argv[1:4]
p = subprocess.Popen([jobboard, "--board", board, "post", "--batch"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
try:
    p.stdin.write(b'{"name": "small"}\n{"name": "big", "details": {"p": "')
    chunk = b"x" * (1 << 20)
    for _ in range(100):
        p.stdin.write(chunk)
    p.stdin.write(b'"}}\n')
    p.stdin.close()
except BrokenPipeError:
    pass  # refused before reading it all: the point
out, err = p.communicate()
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(rss_file, "w") as f:
    f.write("%d %d %s" % (p.returncode, kb, err.decode().strip()))
EOF
read -r prc rss msg <"$ROOT/rss"
[ "$prc" = 2 ] || fail "exit status $prc, expected 2 ($msg)"
case $msg in *"stdin line 2: longer than 4194304 bytes"*) ;; *) fail "message: $msg" ;; esac
[ "$rss" -lt 65536 ] || fail "peak RSS $rss KiB, bound 65536 KiB"
note "peak RSS of the refusing process: $rss KiB"
jb count
[ "$rc" = 3 ] || [ "$out" = 0 ] || fail "something was posted: $out"
end

# --- 5. a full disk ---------------------------------------------------------

begin "a full disk: every writing command says 'no space left', exit 1"
if [ "$is_root" = 0 ]; then
  skip "needs root to mount a small tmpfs (run as root to test it)"
else
  mkdir -p "$ROOT/full"
  if mount -t tmpfs -o size=2m tmpfs "$ROOT/full" 2>"$ROOT/err"; then
    MOUNTS="$ROOT/full $MOUNTS"
    F=$ROOT/full/b
    run "$JOBBOARD" init "$F"; expect_rc 0 "init on the small disk"
    run "$JOBBOARD" --board "$F" post keep; keep=$out
    run "$JOBBOARD" --board "$F" post keep2; keep2=$out
    # Fill the disk to its last block.
    dd if=/dev/zero of="$ROOT/full/filler" bs=64k 2>/dev/null
    "$PYTHON" -c 'import json
for i in range(2000): print(json.dumps({"name": "n%d" % i, "details": {"p": "x" * 500}}))' >"$ROOT/batch.jsonl"
    "$PYTHON" -c 'import json; print(json.dumps({"p": "z" * 200000}))' >"$ROOT/d.json"
    for mode in full normal none; do
      run "$JOBBOARD" --board "$F" --durability "$mode" post --batch <"$ROOT/batch.jsonl"
      expect_rc 1 "post --batch ($mode)"
      expect_stderr "no space left on its device" "post --batch ($mode)"
      run "$JOBBOARD" --board "$F" --durability "$mode" post one --details @"$ROOT/d.json"
      expect_rc 1 "post ($mode)"
      expect_stderr "no space left on its device" "post ($mode)"
    done
    # Smaller writes may fit in the board's free pages; those that do not
    # must say the same. (consume and trash run only after their claim.)
    for cmd in "claim --who w $keep" "consume --who w $keep" \
               "claim --who w $keep2" "trash --who w $keep2" \
               "schedule add beat --every 60 --job-name b --details @$ROOT/d.json"; do
      case $cmd in
        consume*|trash*) [ "$claimed" = 1 ] || continue ;;
      esac
      # shellcheck disable=SC2086
      run "$JOBBOARD" --board "$F" $cmd
      claimed=0
      [ "$rc" = 0 ] && claimed=1
      if [ "$rc" != 0 ]; then
        expect_rc 1 "$cmd"
        expect_stderr "no space left" "$cmd"
      fi
    done
    run "$JOBBOARD" init "$ROOT/full/new"
    if [ "$rc" != 0 ]; then
      expect_rc 1 "init on a full disk"
      expect_stderr "No space left" "init on a full disk"
    fi
    rm -f "$ROOT/full/filler"
    run "$JOBBOARD" --board "$F" check; expect_rc 0 "the board is sound after all that ($out $err)"
    run "$JOBBOARD" --board "$F" post after; expect_rc 0 "a post once there is room"
  else
    skip "mount -t tmpfs failed here: $(cat "$ROOT/err")"
  fi
fi
end

finish
