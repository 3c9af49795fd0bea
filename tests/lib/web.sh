# tests/lib/web.sh - sourced by the `jobboard web` tests, after harness.sh:
#   . "$(dirname "$0")/lib/harness.sh"
#   . "$(dirname "$0")/lib/web.sh"
# It sets JOBBOARD (./jobboard unless set), PY (Debian's python3: the
# packages the tests use are Debian's), TMP (a directory removed at exit
# unless $web_keep_tmp is 1), JOBBOARD_DIR=$TMP/board and jb (the CLI,
# without fsync: the tests do not cut power); it puts tests/lib on
# PYTHONPATH for webcheck.py, the Python side; and it skips the whole test
# when the CLI is built without libmicrohttpd. Then:
#   web_start ERRFILE ARGS...  `jobboard web ARGS...` in the background:
#                              SERVER its pid, PORT the port its
#                              "listening on" line says (empty when it
#                              says none within 5 s; web_start dies then
#                              unless $web_port_optional is 1)
#   web_stop                   SIGTERM to SERVER and wait; a failure of
#                              the current step when it exits non-zero
#   web_checks FILE STATUS     the TAP lines a Python check program wrote
#                              to FILE ("ok - ...", "not ok - ...", the
#                              rest diagnostics), and a failure when the
#                              program exited with STATUS other than 0
# At exit a server still running is stopped (SIGTERM, then waited for),
# after the command in $web_cleanup_first if any (a test's own processes
# or mounts, gone before TMP is removed).

program JOBBOARD ./jobboard
PY=/usr/bin/python3
TMP=$(mktemp -d) || bail "mktemp failed"
SERVER=
PORT=
web_keep_tmp=0
web_port_optional=0
web_cleanup_first=
export JOBBOARD_DIR=$TMP/board
jb() { "$JOBBOARD" --durability none "$@"; }
PYTHONPATH=$(cd "$(dirname "$0")/lib" && pwd)${PYTHONPATH:+:$PYTHONPATH}
export PYTHONPATH

web_cleanup() {
  [ -z "$web_cleanup_first" ] || $web_cleanup_first
  if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; fi
  SERVER=
  [ "$web_keep_tmp" = 1 ] || rm -rf "$TMP"
}
at_exit web_cleanup

if "$JOBBOARD" web --listen 127.0.0.1:0 --board "$TMP/none" 2>&1 |
  grep -q "without HTTP support"; then
  skip_all "built without libmicrohttpd"
fi

web_start() {
  local errf=$1
  shift
  "$JOBBOARD" web "$@" 2>"$errf" &
  SERVER=$!
  PORT=
  for _ in $(seq 100); do
    PORT=$(sed -n 's|^jobboard: web: listening on http://.*:\([0-9]*\)/$|\1|p' "$errf")
    [ -n "$PORT" ] && break
    sleep 0.05
  done
  [ -n "$PORT" ] || [ "$web_port_optional" = 1 ] ||
    { show_file "$errf"; die "the server said no port"; }
}

web_stop() {
  local src
  kill -TERM "$SERVER"
  wait "$SERVER"; src=$?
  SERVER=
  [ $src = 0 ] || fail "the server's exit status $src"
}

web_checks() {
  local line
  while IFS= read -r line; do
    case $line in
    "ok - "*) pass "${line#ok - }" ;;
    "not ok - "*) fail "${line#not ok - }" ;;
    "# "*) printf '%s\n' "$line" ;;
    *) printf '# %s\n' "$line" ;;
    esac
  done <"$1"
  [ "$2" = 0 ] || fail "the Python checks ended with $2"
}
