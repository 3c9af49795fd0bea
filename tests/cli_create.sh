#!/bin/bash
# tests/cli_create.sh - boards are made on purpose: every command that
# makes a board (init, post, post --batch, schedule add, --create) refuses
# a directory holding other files, as init does (same message, exit 1,
# nothing written there), and says on stderr that it made a new board
# (naming the default ./jobboard.d when no board was given), except with
# --quiet; --json's stdout stays one object. The read-only view's note is
# said once and not with --quiet (a read-only bind mount: as root). Runs
# the built ./jobboard (or $JOBBOARD) under one mktemp -d directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
program JOBBOARD ./jobboard

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-create.XXXXXX") || bail "mktemp failed"
MOUNTS=""
cleanup() {
  for m in $MOUNTS; do umount "$m" 2>/dev/null; done
  rm -rf "$ROOT"
}
at_exit cleanup
unset JOBBOARD_DIR

REFUSED="holds 'notes.txt' and no board: refusing to make a board among other files"
# A directory holding someone's file, fresh for each step.
step_setup() {
  D=$ROOT/other$step_no
  mkdir -p "$D" && echo precious >"$D/notes.txt"
}
# untouched: D holds notes.txt alone, as it was.
untouched() {
  [ "$(ls -A "$D")" = notes.txt ] || fail "$1: $D now holds: $(ls -A "$D" | tr '\n' ' ')"
  [ "$(cat "$D/notes.txt")" = precious ] || fail "$1: notes.txt changed"
}

begin "every command that makes a board refuses a directory of other files, as init does"
run "$JOBBOARD" init "$D"
expect_error 1 "$REFUSED" "init"
init_err=$err
untouched "init"
for cmd in "post x" "post x --json" "post x --unique k" "schedule add s --every 60 --job-name x" \
  "claim-next --who w --create" "wait --create --timeout 0" \
  "watch --create --count 1 --timeout 0"; do
  # shellcheck disable=SC2086
  run "$JOBBOARD" --board "$D" $cmd
  expect_error 1 "$REFUSED" "$cmd"
  [ "$err" = "$init_err" ] || fail "$cmd: not init's message: $err"
  [ -z "$out" ] || [ "${cmd%--json}" != "$cmd" ] || fail "$cmd: stdout: $out"
  untouched "$cmd"
done
run "$JOBBOARD" --board "$D" post --batch <<<'{"name": "x"}'
expect_error 1 "$REFUSED" "post --batch"
untouched "post --batch"
# JOBBOARD_DIR names it: the same.
run env JOBBOARD_DIR="$D" "$JOBBOARD" post x
expect_error 1 "$REFUSED" "post with JOBBOARD_DIR"
untouched "JOBBOARD_DIR"
end

begin "a directory holding only a board's own files or lost+found is used"
mkdir "$D/lost+found"; rm "$D/notes.txt"
run "$JOBBOARD" --board "$D" post x
expect_rc 0 "post next to lost+found"
expect_stderr "created a new board at $D" "post next to lost+found"
end

begin "a new board is said on stderr; an existing one is not; --quiet says nothing"
B=$ROOT/new$step_no
run "$JOBBOARD" --board "$B" post x
expect_rc 0 "first post"
[ "$err" = "jobboard: note: created a new board at $B" ] || fail "first post said: $err"
run "$JOBBOARD" --board "$B" post y
expect_ok "second post"
B2=$ROOT/new${step_no}b
run "$JOBBOARD" --board "$B2" --quiet post x
expect_ok "post --quiet"
[ -f "$B2/data.mdb" ] || fail "post --quiet made no board"
B3=$ROOT/new${step_no}c
run "$JOBBOARD" --board "$B3" schedule add s --every 60 --job-name x
expect_rc 0 "schedule add"
[ "$err" = "jobboard: note: created a new board at $B3" ] || fail "schedule add said: $err"
B4=$ROOT/new${step_no}d
run "$JOBBOARD" --board "$B4" claim-next --who w --create
expect_rc 3 "claim-next --create"
expect_stderr "created a new board at $B4" "claim-next --create"
# init says it on stdout, as before: not twice.
B5=$ROOT/new${step_no}e
run "$JOBBOARD" init "$B5"
expect_ok "init"
expect_out "created board $B5" "init"
end

begin "--json: the note goes to stderr, stdout is one JSON object"
B=$ROOT/new$step_no
run "$JOBBOARD" --board "$B" post x --json
expect_rc 0 "post --json"
expect_stderr "created a new board" "post --json"
printf '%s\n' "$out" | grep -qx '{"uuid":"[-0-9a-f]\{36\}"}' || fail "stdout: $out"
end

begin "without --board or JOBBOARD_DIR the note names the default ./jobboard.d"
mkdir -p "$ROOT/cwd$step_no" && cd "$ROOT/cwd$step_no" || die "cd"
run "$JOBBOARD" post x
expect_rc 0 "post in a new directory"
expect_stderr "created a new board at ./jobboard.d (the default: no --board and no \$JOBBOARD_DIR)" "default board"
# A typo'd default in a directory of other files: refused.
cd "$D" || die "cd $D"
mkdir jobboard.d && touch jobboard.d/readme
run "$JOBBOARD" post x
expect_error 1 "holds 'readme' and no board" "default board among files"
cd "$ROOT" || die "cd"
end

begin "--quiet is a global option: before or after the command, in --help"
run "$JOBBOARD" --quiet --board "$ROOT/q$step_no" post x
expect_ok "--quiet before the command"
run "$JOBBOARD" --board "$ROOT/q${step_no}b" post --quiet x
expect_ok "--quiet after the command"
run "$JOBBOARD" --help
expect_stderr "" "--help"
case $out in *"--quiet"*) ;; *) fail "jobboard --help does not name --quiet" ;; esac
run "$JOBBOARD" list --help
case $out in *"--quiet"*) ;; *) fail "list --help does not name --quiet" ;; esac
end

begin "a read-only view: the note once, none with --quiet"
if [ "$(id -u)" != 0 ]; then
  skip "needs root to mount (run as root to test it)"
else
  B=$ROOT/ro-src; R=$ROOT/ro
  "$JOBBOARD" --board "$B" --quiet post x >/dev/null
  mkdir -p "$R"
  if mount --bind "$B" "$R" 2>"$ROOT/err" && MOUNTS="$R" &&
     mount -o remount,bind,ro "$R" 2>>"$ROOT/err"; then
    run "$JOBBOARD" --board "$R" list
    expect_rc 0 "list read-only"
    [ "$(printf '%s\n' "$err" | grep -c 'read-only view')" = 1 ] ||
      fail "the note is not said once: $err"
    for cmd in "list" "count" "history" "stats"; do
      # shellcheck disable=SC2086
      run "$JOBBOARD" --board "$R" --quiet $cmd
      expect_ok "$cmd --quiet on a read-only view"
    done
  else
    skip "mount --bind failed here: $(cat "$ROOT/err")"
  fi
fi
end

finish
