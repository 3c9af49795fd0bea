#!/bin/bash
# tests/web_browser.sh - `jobboard web` in a real browser: headless
# chromium driven by Selenium (tests/web_browser.py). Every page loads
# with no error in the browser's console (a CSP violation is one); a
# filter typed into /jobs' form narrows the list; a job posted with the
# CLI shows in the page's live list within a second; the board's texts
# made to inject markup show as text, with no alert and no injected
# element; the pages read without JavaScript; and, with --actions, a
# requeue without logging in is refused and one after /login is made.
# Screenshots of the overview, /jobs and a job page are kept, with the
# rest of the test's directory, when a check fails (the path is said).
#
# Needs Debian's chromium, chromium-driver and python3-selenium; without
# one of them the test is skipped, naming what is missing.
#
# Under `make check` the working directory is the build directory.
set -u
# Where a failed run's directory is kept: TMPDIR as the test found it
# (the harness points TMPDIR into its own directory, removed at exit).
keep_in=${TMPDIR:-/tmp}
. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PY=/usr/bin/python3
CHROMIUM=${JB_CHROMIUM:-/usr/bin/chromium}
CHROMEDRIVER=${JB_CHROMEDRIVER:-/usr/bin/chromedriver}

missing=""
[ -x "$CHROMIUM" ] || missing="$missing chromium ($CHROMIUM)"
[ -x "$CHROMEDRIVER" ] || missing="$missing chromium-driver ($CHROMEDRIVER)"
"$PY" -c 'import selenium' 2>/dev/null ||
  missing="$missing python3-selenium (import selenium in $PY)"
[ -z "$missing" ] || skip_all "missing:$missing"
if "$JOBBOARD" web --listen 127.0.0.1:0 --board "$h_tmp/none" 2>&1 |
  grep -q "without HTTP support"; then
  skip_all "built without libmicrohttpd"
fi

TMP=$(mktemp -d "$keep_in/jb-web-browser.XXXXXX") || bail "mktemp failed"
SERVER=
ACTIONS=
PYPID=
stop() { # stop PID: SIGTERM, then wait for it
  kill -TERM "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}
cleanup() {
  # Chromium and chromedriver are in the Python program's process group.
  [ -z "$PYPID" ] || kill -KILL -- "-$PYPID" 2>/dev/null
  [ -z "$SERVER" ] || stop "$SERVER"
  [ -z "$ACTIONS" ] || stop "$ACTIONS"
  if [ "$h_failed" = 0 ]; then
    rm -rf "$TMP"
  else
    rm -rf "$TMP"/profile-* "$TMP/board"
    echo "# the screenshots and the servers' stderr are kept in $TMP"
  fi
}
at_exit cleanup
export JOBBOARD_DIR=$TMP/board
jb() { "$JOBBOARD" --durability none "$@"; }

# A board with a job of each kind, and texts made to inject markup in a
# name, details, an owner and a reason.
XSS_SCRIPT='<script>alert(1)</script>'
XSS_IMG='"><img src=x onerror=alert(1)>'
xss_job=$(jb post alpha --details "{\"note\": \"$XSS_SCRIPT\", \"img\": \"<img src=x onerror=alert(1)>\"}") ||
  die "post"
jb post alpha >/dev/null || die "post"
jb post "$XSS_SCRIPT" >/dev/null || die "post a job named like a script"
jb post "$XSS_IMG" >/dev/null || die "post a job named like an img"
for i in $(seq 12); do echo "{\"name\": \"bulk.item\", \"details\": {\"i\": $i}}"; done |
  jb post --batch >/dev/null || die "post 12 bulk jobs"
jb post report --delay 3600 >/dev/null || die "post a delayed job"
held=$(jb post held.one) || die "post"
jb claim --who "$XSS_IMG" --lease 600 "$held" >/dev/null || die "claim"
dead=$(jb post beta --details '{"k": 1}') || die "post beta"
jb claim --who "$XSS_IMG" "$dead" >/dev/null || die "claim beta"
jb abandon --who "$XSS_IMG" --dead --reason "$XSS_SCRIPT" "$dead" || die "beta to the dead letters"
dead2=$(jb post gamma) || die "post gamma"
jb claim --who w1 "$dead2" >/dev/null || die "claim gamma"
jb abandon --who w1 --dead --reason "to be requeued" "$dead2" || die "gamma to the dead letters"
jb schedule add nightly --every 3600 --job-name report >/dev/null || die "schedule add"

# said FILE PATTERN PID: print what PATTERN's \(...\) matches in the
# line of FILE it matches, once there (waiting 5 s at most, and not
# after PID exits).
said() {
  for i in $(seq 100); do
    what=$(sed -n "s|^$2\$|\\1|p" "$1")
    [ -n "$what" ] && { echo "$what"; return 0; }
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
# serve VAR ERRFILE ARGS...: start `jobboard web ARGS`, its pid in VAR,
# and print the port it says on stderr.
serve() {
  "$JOBBOARD" web --listen 127.0.0.1:0 "${@:3}" >/dev/null 2>"$2" &
  eval "$1=\$!"
  said "$2" 'jobboard: web: listening on http://127\.0\.0\.1:\([0-9]*\)/' "${!1}"
}
serve SERVER "$TMP/server.err" >"$TMP/port" ||
  { show_file "$TMP/server.err"; die "the server said no port"; }
PORT=$(cat "$TMP/port")
pass "jobboard web --listen 127.0.0.1:0 says its port"

# The actions, when this jobboard has them (without, --actions is a
# usage error: exit 2).
actions_skip="" actions_base="" token=""
if ! serve ACTIONS "$TMP/actions.err" --actions >"$TMP/port2"; then
  wait "$ACTIONS"
  rc=$?
  ACTIONS=
  [ $rc = 2 ] || die "jobboard web --actions said no port (exit $rc)"
  actions_skip="jobboard web --actions: $(head -1 "$TMP/actions.err")"
  rm "$TMP/actions.err"
else
  actions_base=http://127.0.0.1:$(cat "$TMP/port2")
  token=$(said "$TMP/actions.err" 'jobboard: web: token: \([0-9a-f]*\)' "$ACTIONS")
  [ -n "$token" ] || { show_file "$TMP/actions.err"; die "--actions said no token"; }
  pass "jobboard web --actions says its port and its token"
fi

"$PY" - "$TMP/setup.json" <<PYEOF || die "setup.json"
import json, sys
json.dump({"base": "http://127.0.0.1:$PORT", "dir": "$TMP",
           "jobboard": "$JOBBOARD", "held": "$held", "dead": "$dead",
           "dead2": "$dead2", "xss_job": "$xss_job",
           "chromium": "$CHROMIUM", "chromedriver": "$CHROMEDRIVER",
           "actions_base": "$actions_base", "token": "$token",
           "actions_skip": "$actions_skip"}, open(sys.argv[1], "w"))
PYEOF

t0=$(date +%s.%N)
"$PY" "$(dirname "$0")/web_browser.py" "$TMP/setup.json" >"$TMP/checks" 2>&1 &
PYPID=$!
wait "$PYPID"
rc=$?
PYPID=
note "the browser checks took $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
while IFS= read -r line; do
  case $line in
  "ok - "*) pass "${line#ok - }" ;;
  "not ok - "*) fail "${line#not ok - }" ;;
  "skip - "*)
    line=${line#skip - }
    begin "${line%% # *}"
    skip "${line#* # }"
    end
    ;;
  *) printf '%s\n' "$line" ;; # the diagnostics, already "# ..."
  esac
done <"$TMP/checks"
[ $rc = 0 ] || fail "the browser checks ended with $rc"

begin "the servers: no error on stderr, exit 0 on SIGTERM"
for v in SERVER ACTIONS; do
  pid=${!v}
  [ -n "$pid" ] || continue
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  eval "$v="
  [ $rc = 0 ] || fail "$v: exit $rc"
done
# The servers' own lines ("jobboard: web: ...") are notes; a browser
# leaving a page closes its /events, which libmicrohttpd says on stderr;
# anything else (libmicrohttpd's errors, a sanitizer's report) is an error.
grep -hv -e '^jobboard: web: ' \
  -e "^Failed to send the .* for the request for \`/events'" \
  "$TMP/server.err" "$TMP/actions.err" 2>/dev/null >"$TMP/stderr-rest"
[ -s "$TMP/stderr-rest" ] && { show_file "$TMP/stderr-rest"; fail "the servers said more"; }
end

finish
