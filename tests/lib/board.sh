# tests/lib/board.sh - sourced by CLI tests that give each step a board of
# its own, after harness.sh:
#   . "$(dirname "$0")/lib/harness.sh"
#   . "$(dirname "$0")/lib/board.sh"
# It sets JOBBOARD (./jobboard unless set), PYTHON (python3 unless set;
# the JSON checks need it), ROOT (a directory removed at exit), and
# JOBBOARD_DIR unset (every command names its board). Then:
#   $B              the board of the current step ($ROOT/bN; step_setup)
#   jb ARGS...      `jobboard --board $B ARGS...` through run: $out, $err,
#                   $rc
#   post ARGS...    jb post ARGS...; $uuid the job posted (a failure of the
#                   step when the post fails)
#   pycheck EXPR WHAT  EXPR, a Python expression over $out read as JSON
#                   lines (`lines` their list, `j` the first), is true
#   digest          an md5 of every job as `list --json` prints it, for
#                   "nothing changed"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-${h_name%.sh}.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$ROOT"'
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

step_setup() {
  B=$ROOT/b$step_no
}

jb() {
  run "$JOBBOARD" --board "$B" "$@"
}
post() {
  jb post "$@"
  uuid=$out
  [ "$rc" = 0 ] || fail "post $*: exit $rc: $err"
}
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines() if l]
j = lines[0] if lines else None
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
digest() {
  "$JOBBOARD" --board "$B" --json list 2>/dev/null | md5sum
}
