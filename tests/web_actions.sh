#!/bin/bash
# tests/web_actions.sh - `jobboard web --actions` end to end, with
# python3's http.client against a real server on a real board: read-only
# by default, the token (from a file, checked; or printed), the login and
# its cookie, CSRF and Origin refusals that change nothing, each action on
# one job and on all a filter matches (the board checked with the CLI
# afterwards), a read-only board served read-only, a non-loopback address
# refused without a token and served with one (every page behind the
# login), and the bound on a form's size.
#
# Under `make check` the working directory is the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/web.sh"

MOUNTED=
unmount() { [ -z "$MOUNTED" ] || umount "$MOUNTED" 2>/dev/null; }
web_cleanup_first=unmount
start_server() { web_start "$@"; }
stop_server() { web_stop; }

# py NAME ARGS...: the Python checks in $TMP/NAME.py, one TAP line each.
py() {
  local name=$1
  shift
  "$PY" "$TMP/lib.py" "$TMP/$name.py" "$@" >"$TMP/$name.out" 2>&1
  web_checks "$TMP/$name.out" $?
}

cat >"$TMP/lib.py" <<'PYEOF'
import http.client, os, re, subprocess, sys, time, urllib.parse
import webcheck as wc
from webcheck import check
port = int(sys.argv[2])
args = sys.argv[3:]
HOST = "127.0.0.1:%d" % port
SEC = ["Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options",
       "Referrer-Policy", "Cache-Control"]

def req(method, path, body=None, headers=None, cookie=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    h = {"Host": HOST}
    if cookie:
        h["Cookie"] = "jb_session=" + cookie
    if body is not None and not isinstance(body, bytes):
        body = urllib.parse.urlencode(body, doseq=True).encode()
        h["Content-Type"] = "application/x-www-form-urlencoded"
    h.update(headers or {})
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode(errors="replace")
    c.close()
    return r.status, data, r.headers

def secure(h):
    return all(k in h for k in SEC)

def login(token, nxt=None):
    body = {"token": token}
    if nxt:
        body["next"] = nxt
    code, _, h = req("POST", "/login", body)
    m = re.match(r"jb_session=([0-9a-f]{32});", h.get("Set-Cookie", ""))
    return code, h, m.group(1) if m else None

def csrf_of(page):
    m = re.search(r'name="csrf" value="([0-9a-f]{32})"', page)
    return m.group(1) if m else None

def balanced(body):
    return wc.unbalanced(body) is None

def jb(*a):
    r = subprocess.run([os.environ["JOBBOARD"], "--durability", "none"] + list(a),
                       capture_output=True, text=True)
    return r.stdout.strip()

exec(open(sys.argv[1]).read())
PYEOF
export JOBBOARD

# --- the board --------------------------------------------------------
jb init >/dev/null
one=$(jb post single.job) || die "post"
later=$(jb post later.job --delay 3600) || die "post delayed"
for i in $(seq 12); do echo "{\"name\": \"bulk.item\", \"details\": {\"i\": $i}}"; done |
  jb post --batch >/dev/null || die "post bulk"
held=$(jb post bulk.held) && jb claim --who w1 "$held" >/dev/null || die "claim"
dead1=$(jb post gone.job) && jb claim --who w "$dead1" >/dev/null &&
  jb abandon --who w --dead --reason "bad input" "$dead1" || die "dead 1"
dead2=$(jb post gone.job) && jb claim --who w "$dead2" >/dev/null &&
  jb abandon --who w --dead --reason "bad input" "$dead2" || die "dead 2"
dead3=$(jb post gone.job) && jb claim --who w "$dead3" >/dev/null &&
  jb abandon --who w --dead --reason "other" "$dead3" || die "dead 3"
jb schedule add nightly --every 3600 --job-name report >/dev/null || die "schedule"

# --- read-only by default -------------------------------------------
start_server "$TMP/ro.err" --listen 127.0.0.1:0
cat >"$TMP/default.py" <<'PYEOF'
one = args[0]
for path in ["/", "/jobs", "/job/" + one, "/dead", "/schedules"]:
    code, body, h = req("GET", path)
    check("default: GET %s has no action form" % path,
          code == 200 and 'class="action"' not in body and "<form class=\"action" not in body, body[:300])
code, body, _ = req("GET", "/")
check("default: a note says how to enable actions", "--actions" in body)
code, body, h = req("POST", "/action", {"op": "cancel", "uuid": one})
check("default: POST /action is 403, saying actions are off",
      code == 403 and "--actions" in body and secure(h), (code, body[-400:]))
check("default: the job is still there", jb("state", one) == "UNCLAIMED")
code, body, h = req("GET", "/action")
check("GET /action: 405, Allow: POST, the security headers",
      code == 405 and h.get("Allow") == "POST" and secure(h), (code, dict(h)))
code, body, h = req("POST", "/login", {"token": "x" * 32})
check("default: no token, so no login (403)", code == 403 and "Set-Cookie" not in h, code)
code, body, h = req("POST", "/", {"a": "b"})
check("POST /: still 405, with the security headers", code == 405 and secure(h), (code, dict(h)))
PYEOF
py default "$PORT" "$one"
stop_server

# --- the token ------------------------------------------------------
begin "--token-file: a file others can read, or a short token, is refused before the board is touched"
printf 'abcdefghijklmnopqrstuvwxyz012345\n' >"$TMP/tok"
chmod 644 "$TMP/tok"
run "$JOBBOARD" web --actions --token-file "$TMP/tok" --listen 127.0.0.1:0 --board "$TMP/nb"
expect_error 2 "others can read it" "mode 644"
chmod 600 "$TMP/tok"
printf 'short-token\n' >"$TMP/short"
chmod 600 "$TMP/short"
run "$JOBBOARD" web --actions --token-file "$TMP/short" --listen 127.0.0.1:0 --board "$TMP/nb"
expect_error 2 "at least 16" "a short token"
run "$JOBBOARD" web --actions --token-file "$TMP/missing" --listen 127.0.0.1:0 --board "$TMP/nb"
expect_error 2 "--token-file" "a missing file"
[ -e "$TMP/nb" ] && fail "a refused token made the board"
end

TOKEN=abcdefghijklmnopqrstuvwxyz012345
start_server "$TMP/act.err" --actions --token-file "$TMP/tok" --listen 127.0.0.1:0
grep -q "token:" "$TMP/act.err" && fail "a --token-file token is printed"
cat >"$TMP/actions.py" <<'PYEOF'
token, one, later, held, dead1, dead2, dead3 = args[:7]

# Login.
t0 = time.monotonic()
code, h, sid = login("wrong-" + token)
dt = time.monotonic() - t0
check("a wrong token: 403, no cookie, after a delay",
      code == 403 and sid is None and dt >= 0.4 and secure(h), (code, dt))
code, h, sid = login(token)
cookie = h.get("Set-Cookie", "")
check("the token: 303 to /", code == 303 and h.get("Location") == "/" and secure(h), (code, dict(h)))
check("the session cookie: HttpOnly, SameSite=Strict, Path=/",
      sid and "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie, cookie)
code, h, sid2 = login(token, "/dead")
check("next=/dead: 303 there, another session", code == 303 and h.get("Location") == "/dead" and sid2 and sid2 != sid)
code, h, _ = login(token, "//evil.example/")
check("next=//evil.example/: 303 to / instead", h.get("Location") == "/", h.get("Location"))
code, body, h = req("GET", "/login")
check("GET /login: the form", code == 200 and 'id="token"' in body and 'id="login"' in body and 'name="token"' in body)

# Without a session the pages read but offer no form.
code, body, _ = req("GET", "/jobs")
check("not logged in: no action form, a link to log in", 'class="action"' not in body and 'href="/login"' in body)

code, page, _ = req("GET", "/job/" + one, cookie=sid)
csrf = csrf_of(page)
check("logged in: /job/UUID has a cancel button with a csrf field",
      csrf and '<button name="op" value="cancel">' in page and 'class="action"' in page, page[-800:])
code, page2, _ = req("GET", "/job/" + one, cookie=sid2)
check("the csrf value is the session's", csrf_of(page2) and csrf_of(page2) != csrf)

for path in ["/", "/jobs?name=bulk.*", "/job/" + one, "/job/" + later, "/job/" + dead1,
             "/dead", "/schedules", "/login"]:
    code, body, _ = req("GET", path, cookie=sid)
    check("logged in: GET %s: every element closed in order, forms included" % path,
          code == 200 and balanced(body), (code, body[:300]))

# Refusals, and nothing changed.
def act(fields, cookie=sid, headers=None):
    return req("POST", "/action", fields, headers=headers, cookie=cookie)
code, body, h = act({"op": "cancel", "uuid": one, "back": "/"})
check("no csrf: 403, the form is stale", code == 403 and "stale" in body and secure(h), (code, body[-300:]))
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": "0" * 32})
check("a wrong csrf: 403", code == 403 and "stale" in body, code)
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": csrf_of(page2)})
check("another session's csrf: 403", code == 403, code)
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": csrf}, cookie=None)
check("no session cookie: 403, log in with the token", code == 403 and "log in with the token" in body, code)
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": csrf}, cookie="f" * 32)
check("an unknown session: 403", code == 403, code)
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": csrf},
                    headers={"Origin": "http://evil.example"})
check("Origin of another site: 403", code == 403 and "Origin" in body, code)
code, body, _ = req("GET", "/action?op=cancel&uuid=" + one + "&csrf=" + csrf, cookie=sid)
check("GET /action with every field: 405", code == 405, code)
code, body, _ = req("POST", "/action", b"op=cancel&uuid=" + one.encode() + b"&csrf=" + csrf.encode(),
                    headers={"Content-Type": "text/plain"}, cookie=sid)
check("not a form: 415", code == 415, code)
check("after the refusals the job is still there", jb("state", one) == "UNCLAIMED", jb("state", one))

# cancel one, with the flash and the CLI command.
code, body, h = act({"op": "cancel", "uuid": one, "csrf": csrf, "back": "/job/" + one},
                    headers={"Origin": "http://" + HOST})
check("cancel one: 303 back to its page", code == 303 and h.get("Location") == "/job/" + one and secure(h),
      (code, dict(h), body[-300:]))
check("cancel one: the CLI sees it completed", jb("state", one) == "COMPLETE", jb("state", one))
code, body, _ = req("GET", "/job/" + one, cookie=sid)
m = re.search(r'<p class="flash"[^>]*>([^<]*)</p>', body)
check("the result is shown once, with the CLI command",
      m and "cancel: 1 done" in m.group(1) and "jobboard cancel" in m.group(1) and one in m.group(1),
      m.group(1) if m else body[:1500])
code, body, _ = req("GET", "/job/" + one, cookie=sid)
check("... and only once", 'class="flash"' not in body)
code, body, _ = act({"op": "cancel", "uuid": one, "csrf": csrf, "back": "/"})
code, body, _ = req("GET", "/", cookie=sid)
check("cancel of a job no longer there: 0 done, 1 skipped, why said",
      "0 done, 1 skipped" in body, re.findall(r'class="flash"[^>]*>[^<]*', body))

# cancel refuses a claimed job.
code, body, _ = act({"op": "cancel", "uuid": held, "csrf": csrf, "back": "/"})
check("cancel of a claimed job: skipped, it stays claimed", jb("state", held) == "CLAIMED")
req("GET", "/", cookie=sid)

# retry (run now) a delayed job.
code, page, _ = req("GET", "/job/" + later, cookie=sid)
check("a delayed job offers run now", '<button name="op" value="retry">' in page)
code, body, h = act({"op": "retry", "uuid": later, "csrf": csrf, "back": "/job/" + later})
code, page, _ = req("GET", "/job/" + later, cookie=sid)
check("retry: the delayed job is unclaimed now", code == 200 and "<td>unclaimed</td>" in page and "1 done" in page,
      re.findall(r'class="flash"[^>]*>[^<]*', page))

# requeue one dead letter, purge another.
code, page, _ = req("GET", "/job/" + dead1, cookie=sid)
check("a dead letter offers requeue and purge",
      '<button name="op" value="requeue">' in page and '<button name="op" value="purge">' in page)
code, body, h = act({"op": "requeue", "uuid": dead1, "csrf": csrf, "back": "/dead"})
check("requeue one: 303 to /dead", code == 303 and h.get("Location") == "/dead")
check("requeue one: back on the board", jb("state", dead1) == "UNCLAIMED", jb("state", dead1))
code, body, _ = req("GET", "/dead", cookie=sid)
check("requeue: the CLI command shown", "jobboard dead requeue" in body)
code, body, h = act({"op": "purge", "uuid": dead3, "csrf": csrf, "back": "/dead"})
check("purge one: gone from the dead letters", dead3 not in jb("dead", "list"), jb("dead", "list"))

# The dead letters' groups.
code, page, _ = req("GET", "/dead", cookie=sid)
check("/dead: requeue all and purge all per group",
      "requeue all" in page and "purge all" in page, page[-1500:])
dead4 = jb("post", "gone.job"); jb("claim", "--who", "w", dead4)
jb("abandon", "--who", "w", "--dead", "--reason", "bad input", dead4)
code, body, h = act({"op": "requeue", "all": "1", "cause": "buried", "reason": "bad input",
                     "csrf": csrf, "back": "/dead"})
check("requeue all of a group: both letters of that reason back",
      jb("state", dead2) == "UNCLAIMED" and jb("state", dead4) == "UNCLAIMED",
      (jb("state", dead2), jb("state", dead4)))
code, body, _ = req("GET", "/dead", cookie=sid)
check("requeue all: 2 done said", "requeue: 2 done" in body, re.findall(r'class="flash"[^>]*>[^<]*', body))

# cancel all matching a filter: a confirm page first.
before = jb("count")
code, page, _ = req("GET", "/jobs?name=bulk.*", cookie=sid)
check("/jobs: cancel all matching, with a box to tick",
      'name="confirm"' in page and '<button name="op" value="cancel">' in page)
fields = {"op": "cancel", "all": "1", "name": "bulk.*", "csrf": csrf, "back": "/jobs?name=bulk.*"}
code, body, _ = act(fields)
check("cancel all without the box: a confirm page, nothing done",
      code == 200 and "13 jobs" in body and 'value="1"' in body and jb("count") == before,
      (code, body[-600:], jb("count"), before))
fields["confirm"] = "1"
code, body, h = act(fields)
check("cancel all confirmed: 303 back to the filtered list",
      code == 303 and h.get("Location") == "/jobs?name=bulk.*", dict(h))
left = jb("list", "--no-header", "--name", "bulk.*")
check("cancel all: only the claimed bulk job is left", left.split() and held in left and len(left.splitlines()) == 1, left)
code, body, _ = req("GET", "/jobs?name=bulk.*", cookie=sid)
check("cancel all: 12 done, 1 skipped (claimed)", "12 done, 1 skipped" in body,
      re.findall(r'class="flash"[^>]*>[^<]*', body))

# pause and resume a name, and the board.
code, page, _ = req("GET", "/", cookie=sid)
check("overview: pause per name and for the board",
      '<button name="op" value="pause">' in page and "pause the board" in page)
act({"op": "pause", "name": "later.job", "csrf": csrf, "back": "/"})
q = jb("queues", "--json")
check("pause: the CLI shows later.job paused",
      re.search(r'"name": ?"later.job"[^}]*"paused": ?true', q), q)
code, page, _ = req("GET", "/", cookie=sid)
check("the paused name offers resume", "jobboard pause" in page and '<button name="op" value="resume">' in page)
act({"op": "resume", "name": "later.job", "csrf": csrf, "back": "/"})
q = jb("queues", "--json")
check("resume: not paused", re.search(r'"name": ?"later.job"[^}]*"paused": ?false', q), q)
act({"op": "pause", "all": "1", "csrf": csrf, "back": "/"})
code, page, _ = req("GET", "/", cookie=sid)
check("pause the board: the overview says so", '<strong class="warn">yes</strong>' in page and re.search(r"jobboard pause --board \S+ --all", page), re.findall(r"whole board paused.*", page) + re.findall(r'class="flash"[^>]*>[^<]*', page))
act({"op": "resume", "all": "1", "csrf": csrf, "back": "/"})
code, body, _ = act({"op": "pause", "csrf": csrf, "back": "/"})
check("pause without a name or all=1: 400", code == 400, code)

# unschedule.
code, page, _ = req("GET", "/schedules", cookie=sid)
check("/schedules: a remove button", '<button name="op" value="unschedule">' in page)
act({"op": "unschedule", "schedule": "nightly", "csrf": csrf, "back": "/schedules"})
check("unschedule: the CLI lists no schedule", "nightly" not in jb("schedule", "list"), jb("schedule", "list"))

# Bad requests.
code, body, _ = act({"op": "explode", "uuid": one, "csrf": csrf})
check("an unknown op: 400", code == 400, code)
code, body, _ = act({"op": "cancel", "uuid": "not-a-uuid", "csrf": csrf})
check("a bad uuid: 400", code == 400, code)
code, body, h = act({"op": "cancel", "uuid": held, "csrf": csrf, "back": "//evil.example/"})
check("a back that is not a local path: 303 to /", h.get("Location") == "/", h.get("Location"))
big = b"op=cancel&csrf=" + csrf.encode() + b"&q=" + b"x" * (70 * 1024)
code, body, h = req("POST", "/action", big, cookie=sid,
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
check("a body over 64 KiB: 413", code == 413 and secure(h), code)
code, body, _ = req("GET", "/", cookie=sid)
check("the server goes on", code == 200)

# Log out: the session ends.
c = csrf_of(req("GET", "/", cookie=sid2)[1])
code, body, h = req("POST", "/logout", {"csrf": c}, cookie=sid2)
check("logout: 303, the cookie cleared", code == 303 and "Max-Age=0" in h.get("Set-Cookie", ""), dict(h))
code, body, _ = act({"op": "cancel", "uuid": held, "csrf": c}, cookie=sid2)
check("after logout the session acts no more", code == 403 and "log in" in body, code)
PYEOF
py actions "$PORT" "$TOKEN" "$one" "$later" "$held" "$dead1" "$dead2" "$dead3"
begin "each action is said on stderr: what, by which session, from where, how many"
grep -q "^jobboard: web: cancel $one by [0-9a-f]\{8\} from 127.0.0.1: 1 done$" "$TMP/act.err" ||
  fail "no line for the cancel of one"
grep -q "^jobboard: web: cancel all matching name=bulk.\* by [0-9a-f]\{8\} from 127.0.0.1: 12 done, 1 skipped$" "$TMP/act.err" ||
  fail "no line for the cancel of all bulk.*"
grep -q "^jobboard: web: a login with a wrong token from 127.0.0.1$" "$TMP/act.err" ||
  fail "no line for the wrong token"
[ -n "$(jb history --name single.job)" ] || fail "the cancel is not in the history"
show_file "$TMP/act.err"
end
stop_server

# --- a printed token ------------------------------------------------
start_server "$TMP/printed.err" --actions --listen 127.0.0.1:0
begin "--actions without --token-file: a random token printed once"
PRINTED=$(sed -n 's/^jobboard: web: token: \([0-9a-f]*\)$/\1/p' "$TMP/printed.err")
[ ${#PRINTED} = 32 ] || fail "no 32 hex digit token on stderr: $(cat "$TMP/printed.err")"
end
cat >"$TMP/printed.py" <<'PYEOF'
code, h, sid = login(args[0])
check("the printed token logs in", code == 303 and sid, code)
code, h, _ = login("0" * 32)
check("another token does not", code == 403, code)
PYEOF
py printed "$PORT" "$PRINTED"
stop_server

# --- a read-only board ----------------------------------------------
begin "a read-only board: --actions says so, the pages stay read-only"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$TMP/ro"
  if mount --bind "$JOBBOARD_DIR" "$TMP/ro" 2>/dev/null && MOUNTED=$TMP/ro &&
     mount -o remount,bind,ro "$TMP/ro" 2>/dev/null; then
    start_server "$TMP/robrd.err" --actions --listen 127.0.0.1:0 --board "$TMP/ro"
    grep -q "read-only" "$TMP/robrd.err" || fail "--actions on a read-only board is not said"
    PRINTED=$(sed -n 's/^jobboard: web: token: \([0-9a-f]*\)$/\1/p' "$TMP/robrd.err")
    cat >"$TMP/robrd.py" <<'PYEOF'
code, h, sid = login(args[0])
code, body, _ = req("GET", "/jobs", cookie=sid)
check("read-only board: a note, no form", "read-only" in body and 'class="action"' not in body, body[:800])
code, body, _ = req("POST", "/action", {"op": "pause", "all": "1", "csrf": "0" * 32}, cookie=sid)
check("read-only board: POST /action 403", code == 403 and "read-only" in body, code)
PYEOF
    py robrd "$PORT" "$PRINTED"
    stop_server
  else
    skip "mount --bind is not allowed here"
  fi
else
  skip "needs root to mount the board read-only"
fi
end
[ -n "$MOUNTED" ] && umount "$MOUNTED" && MOUNTED=

# --- not on loopback ------------------------------------------------
begin "a non-loopback --listen: refused without a token"
run "$JOBBOARD" web --listen 0.0.0.0:0
expect_error 2 "--token-file" "0.0.0.0 without a token"
end
# Every address, with a token: the pages are behind the login. The
# checks connect through loopback (no traffic leaves for another address).
start_server "$TMP/any.err" --token-file "$TMP/tok" --listen 0.0.0.0:0
cat >"$TMP/any.py" <<'PYEOF'
token = args[0]
for path in ["/", "/jobs?name=x", "/events"]:
    code, body, h = req("GET", path, headers={"Host": "board.example:%d" % port})
    check("not on loopback: GET %s without a session goes to /login" % path,
          code == 303 and h.get("Location", "").startswith("/login?next=%2F"), (code, dict(h)))
code, body, _ = req("GET", "/static/web.css")
check("the stylesheet needs no session", code == 200)
code, h, sid = login(token, "/jobs")
code, body, _ = req("GET", "/jobs", cookie=sid)
check("with the session the pages read", code == 200 and "<h1>Jobs</h1>" in body, code)
check("no --actions: no form even logged in", 'class="action"' not in body)
code, body, _ = req("POST", "/action", {"op": "pause", "all": "1", "csrf": "0" * 32}, cookie=sid)
check("no --actions: POST /action 403", code == 403, code)
PYEOF
py any "$PORT" "$TOKEN"
stop_server
begin "the machine's own non-loopback address, with a token: served"
addr=$(ip -o -4 addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n 1)
if [ -z "$addr" ]; then
  skip "this machine has no non-loopback IPv4 address"
else
  run "$JOBBOARD" web --listen "$addr:0"
  expect_error 2 "not a loopback" "$addr without a token"
  # Bound and listening only: the checks above send no traffic there.
  start_server "$TMP/addr.err" --token-file "$TMP/tok" --listen "$addr:0"
  grep -q "listening on http://$addr:" "$TMP/addr.err" || fail "not served: $(cat "$TMP/addr.err")"
  stop_server
fi
end

finish
