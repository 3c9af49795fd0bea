#!/bin/bash
# tests/web.sh - `jobboard web` end to end, with python3's urllib: every
# page answers with what the board holds, a filter narrows the list and
# the cursor pages it, the text of jobs made to inject markup (in their
# details, reasons, owners and names) comes back escaped, a foreign Host
# header, a POST and a non-loopback --listen are refused, /events
# delivers a post made after connecting (within 4 s: a bound for a hang,
# and a stream the server closes ends the check), and anything else is
# 404.
#
# Under `make check` the working directory is the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/web.sh"

# Refused before anything is opened: no board is made.
begin "a non-loopback --listen is refused (exit 2, the reason said)"
for a in 0.0.0.0:0 :0 '[::]:0' 192.0.2.1:8080; do
  run "$JOBBOARD" web --listen "$a" --board "$TMP/refused"
  if [ "$a" = :0 ]; then expect_error 2 "every address" "--listen $a"
  else expect_error 2 "not a loopback" "--listen $a"; fi
  expect_stderr "--token" "--listen $a: the token to come is named"
done
for a in 127.0.0.1:99999 127.0.0.1:http 127.0.0.1:-1; do
  run "$JOBBOARD" web --listen "$a" --board "$TMP/refused"
  expect_error 2 "the port is a number from 0 to 65535" "--listen $a"
done
# A host name, even one that resolves to a loopback address, is refused:
# what it resolves to is up to the resolver; the server answers to
# loopback addresses and localhost.
for a in example.invalid:0 "$(hostname):0" localhost.localdomain:0; do
  run "$JOBBOARD" web --listen "$a" --board "$TMP/refused"
  expect_error 2 "give a numeric loopback address or localhost" "--listen $a"
done
[ -e "$TMP/refused" ] && fail "a refused --listen made the board"
end

XSS_SCRIPT='<script>alert(1)</script>'
XSS_IMG='"><img src=x onerror=alert(1)>'
jb post alpha --priority high --details "{\"note\": \"$XSS_SCRIPT\"}" >/dev/null || die "post"
jb post alpha --details "{\"note\": \"\\\"><img src=x onerror=alert(1)>\"}" >/dev/null || die "post"
jb post "$XSS_SCRIPT" >/dev/null || die "post a job named like a script"
jb post "$XSS_IMG" >/dev/null || die "post a job named like an img"
for i in $(seq 60); do echo "{\"name\": \"bulk.item\", \"details\": {\"i\": $i}}"; done |
  jb post --batch >/dev/null || die "post 60 bulk jobs"
held=$(jb claim-next --who "w<b>1" --lease 20 --name alpha) || die "claim alpha"
dead=$(jb post beta --details '{"k": 1}') || die "post beta"
jb claim --who "$XSS_IMG" "$dead" >/dev/null || die "claim beta"
jb abandon --who "$XSS_IMG" --dead --reason "$XSS_SCRIPT" "$dead" || die "beta to the dead letters"
jb schedule add nightly --every 3600 --job-name report >/dev/null || die "schedule add"

# start_server ADDR: `jobboard web --listen ADDR:0` (web_start; PORT empty
# when it says none).
web_port_optional=1
start_server() { web_start "$TMP/server.err" --listen "$1:0"; }
start_server 127.0.0.1
[ -n "$PORT" ] || { show_file "$TMP/server.err"; die "the server said no port"; }
pass "--listen 127.0.0.1:0 says the port it picked"

# The checks, in one Python program: one TAP line each, read back below.
"$PY" - "$PORT" "$held" "$dead" "$JOBBOARD" >"$TMP/checks" 2>&1 <<'PYEOF'
import json, re, socket, subprocess, sys, time, urllib.error, urllib.request
import webcheck as wc
from webcheck import check, no_raw
port, held, dead, jobboard = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
wc.setup(port, raw=["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<b>"])
base = wc.base

def get(path, headers=None, method="GET"):
    return wc.get(path, headers, method, follow=False)

pages = {}
for path, want in [("/", ["Jobs by name", "bulk.item", "oldest ready waits",
                          "Claims lapsing within 30 s", held, "map use",
                          "readers", "dead letters"]),
                   ("/jobs", ["bulk.item", "alpha", "next 50"]),
                   ("/job/" + held, ["claimed", "lease deadline", "w&lt;b&gt;1",
                                     "&lt;script&gt;alert(1)&lt;/script&gt;"]),
                   ("/job/" + dead, ["history record", "dead", "Dead letter"]),
                   ("/claims", [held, "w&lt;b&gt;1", "lease deadline"]),
                   ("/dead", ["buried",
                              "&lt;script&gt;alert(1)&lt;/script&gt;", dead]),
                   ("/schedules", ["nightly", "report", "every"])]:
    code, body, h = get(path)
    pages[path] = body
    path = path.replace(held, "HELD").replace(dead, "DEAD")
    missing = [w for w in want if w not in body]
    check("GET %s: 200 with %s" % (path, want), code == 200 and not missing,
          "code %d, missing %s" % (code, missing))
    check("GET %s: nothing of the board unescaped" % path, not no_raw(body), no_raw(body))
    why = wc.unbalanced(body)
    ok = why is None
    check("GET %s: every element closed in order" % path, ok, why)
    check("GET %s: text/html, a Content-Security-Policy" % path,
          h.get("Content-Type", "").startswith("text/html") and
          "script-src 'self'" in h.get("Content-Security-Policy", ""), dict(h))

# The jobs named like markup show as text, on the overview and the list.
for path in ["/", "/jobs"]:
    body = pages[path]
    check(path + ": the job named <script> shows as text",
          "&lt;script&gt;alert(1)&lt;/script&gt;" in body)
    check(path + ": the job named \"><img> shows as text",
          "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in body)
# The details of the jobs made to inject markup, on their pages.
code, body, _ = get("/jobs?q=onerror")
uuids = re.findall(r'href="/job/([0-9a-f-]{36})"', body)
check("/jobs?q=TEXT finds the job by its details", code == 200 and len(uuids) == 1, body[-1500:])
if uuids:
    code, body, _ = get("/job/" + uuids[0])
    check("its details come back escaped",
          code == 200 and "&lt;img src=x onerror=alert(1)&gt;" in body and not no_raw(body),
          no_raw(body))

# Filters narrow the list.
code, body, _ = get("/jobs?name=alpha")
names = re.findall(r'<tr><td><a href="/job/[^"]*">[^<]*</a></td><td>([^<]*)</td>', body)
check("name=alpha: the two alpha jobs only", names == ["alpha", "alpha"], names)
code, body, _ = get("/jobs?name=bulk.*&state=unclaimed")
n = len(re.findall(r'<tr><td><a href="/job/', body))
check("name=bulk.* (a prefix): a page of 50", n == 50, n)
m = re.search(r'<a rel="next" href="([^"]*)"', body)
check("a full page links to the next", m is not None)
if m:
    code, body2, _ = get(m.group(1).replace("&amp;", "&"))
    n2 = len(re.findall(r'<tr><td><a href="/job/', body2))
    first = set(re.findall(r'href="/job/([0-9a-f-]{36})"', body))
    second = set(re.findall(r'href="/job/([0-9a-f-]{36})"', body2))
    check("the next page: the other 10, none seen before",
          n2 == 10 and not (first & second) and 'rel="next"' not in body2, (n2, first & second))
code, body, _ = get("/jobs?state=claimed")
check("state=claimed: the held job only",
      re.findall(r'href="/job/([0-9a-f-]{36})"', body) == [held], body[-1500:])
code, body, _ = get("/jobs?owner=" + urllib.request.quote("w<b>1"))
check("owner=: the owner's job only",
      re.findall(r'href="/job/([0-9a-f-]{36})"', body) == [held])
code, body, h = get("/jobs?q=" + held)
check("q=UUID goes to the job (303)", code == 303 and h.get("Location") == "/job/" + held,
      (code, dict(h)))
# key=: the job holding that unique key, and no other.
keyed = subprocess.run([jobboard, "--durability", "none", "post", "keyed.one",
                        "--unique", "order-<42>"], capture_output=True,
                       text=True, check=True).stdout.strip()
code, body, h = get("/jobs?key=order-%3C42%3E")
found = re.findall(r'href="/job/([0-9a-f-]{36})"', body)
check("key=: the job holding the unique key only", code == 200 and found == [keyed],
      (code, found, keyed))
check("key=: the key's form field is escaped", 'value="order-&lt;42&gt;"' in body,
      re.findall(r'name="key"[^>]*', body))
code, body, _ = get("/jobs?state=bogus")
check("a bad filter: 400 naming it", code == 400 and "state" in body, code)
code, body, _ = get("/jobs?after=9-1")
check("a bad cursor: 400", code == 400, code)

# The built-in assets.
code, body, h = get("/static/web.js")
check("/static/web.js: the script, listening to /events",
      code == 200 and "EventSource('/events')" in body and "innerHTML" not in body)
code, body, h = get("/static/web.css")
check("/static/web.css", code == 200 and h.get("Content-Type", "").startswith("text/css"))

# Refusals. The Host header's host and port are parsed: any spelling of
# a loopback address or localhost, any case, with the listening port.
for host in ["evil.example:%d", "127.0.0.1:1", "attacker.test", "localhost",
             "127.0.0.1", "127.0.0.1.evil.test:%d", "localhost.evil.test:%d",
             "evil.test:%d", "[::1]:1", "[::2]:%d", "127.0.0.1:%d0",
             "127.0.0.1:+%d", "127.0.0.1:%d:%d", "[::1]x:%d", "[::1:%d",
             "128.0.0.1:%d", "0.0.0.0:%d", "127.1:%d", ":%d", ""]:
    host = host.replace("%d", str(port))
    code, body, _ = get("/", headers={"Host": host})
    check("Host: %r refused (421)" % host, code == 421, code)
for host in ["localhost:%d", "LOCALHOST:%d", "LocalHost:%d", "127.0.0.1:%d",
             "127.1.2.3:%d", "[::1]:%d", "[0:0:0:0:0:0:0:1]:%d",
             "[::FFFF:127.0.0.1]:%d"]:
    host = host.replace("%d", str(port))
    code, body, _ = get("/", headers={"Host": host})
    check("Host: %s taken" % host, code == 200, code)
raw = socket.create_connection(("127.0.0.1", port), timeout=5)
raw.sendall(b"GET / HTTP/1.0\r\n\r\n")
answer = b""
while True:
    chunk = raw.recv(4096)
    if not chunk:
        break
    answer += chunk
raw.close()
check("no Host header refused (421)", answer.startswith(b"HTTP/1.") and b" 421 " in answer.split(b"\r\n")[0],
      answer[:200])
code, body, _ = get("/", headers={"Host": "localhost:%d" % port})
check("Host: localhost:PORT taken", code == 200, code)
code, body, h = get("/", method="POST")
check("POST: 405, Allow: GET, HEAD", code == 405 and "GET" in h.get("Allow", ""), (code, dict(h)))
code, body, h = get("/jobs", method="HEAD")
check("HEAD: 200", code == 200, code)
for path in ["/nope", "/job/not-a-uuid", "/job/01a23f62-0000-7000-8000-000000000000", "/jobs/"]:
    code, body, _ = get(path)
    check("GET %s: 404 with a page" % path, code == 404 and "<h1>404" in body, code)

# A client that sends half a request and stops stalls nobody else; a
# request line and headers beyond the bound are refused, and the server
# goes on.
slow = socket.create_connection(("127.0.0.1", port), timeout=5)
slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
t0 = time.monotonic()
code, body, _ = get("/")
check("a stalled client stalls no other", code == 200 and time.monotonic() - t0 < 2,
      (code, time.monotonic() - t0))
slow.close()
code, body, _ = get("/jobs?q=" + "x" * 20000)
check("a request beyond 16 KiB refused", code in (413, 414, 431), code)
code, body, _ = get("/")
check("the server goes on", code == 200, code)

# The board's health says when `jobboard check` last ran, and what it found.
code, body, h = get("/")
check("overview: no check recorded yet", "never recorded" in body,
      re.findall(r"last check.{0,200}", body))
subprocess.run([jobboard, "check"], check=True, stdout=subprocess.DEVNULL)
code, body, h = get("/")
check("overview: the last check, 0 problems",
      re.search(r"last check</th><td[^>]*><time[^>]*>[^<]+</time>[^<]*: 0 problems", body)
      is not None, re.findall(r"last check.{0,200}", body))

# /events: a post made after connecting arrives within a few seconds.
def sse_open(host="127.0.0.1", hosthdr=None, extra=""):
    """Connect to /events and read its head and preamble: (socket, head,
    the rest), or (None, what came, why) when the server closed the
    connection or went silent first."""
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(("GET /events HTTP/1.1\r\nHost: %s\r\n%s\r\n" %
               (hosthdr or "127.0.0.1:%d" % port, extra)).encode())
    buf = b""
    try:
        while b"\r\n\r\n" not in buf or b"\n\n" not in buf.split(b"\r\n\r\n", 1)[1]:
            chunk = s.recv(4096)
            if not chunk:
                s.close()
                return None, buf, "the server closed the stream"
            buf += chunk
    except socket.timeout:
        s.close()
        return None, buf, "no preamble within 5 s"
    head, rest = buf.split(b"\r\n\r\n", 1)
    return s, head, rest

def sse_events(s, rest, until, secs):
    """The events read within `secs` until `until(event)` is true: (the
    events, the text read, why it stopped early or None)."""
    t0, got, why = time.monotonic(), [], "no such event within %g s" % secs
    chunk = b""  # what came with the preamble first
    while True:
        rest += chunk
        *blocks, tail = rest.split(b"\n\n")
        rest = tail
        for block in blocks:
            e = {}
            for line in block.decode(errors="replace").splitlines():
                if line.startswith("id: "):
                    e["id"] = line[4:]
                elif line.startswith("data: "):
                    e["data"] = json.loads(line[6:])
            if "data" in e:
                got.append(e)
                if until(e):
                    return got, rest, None
        if time.monotonic() - t0 >= secs:
            break
        s.settimeout(max(0.01, secs - (time.monotonic() - t0)))
        try:
            chunk = s.recv(4096)
        except socket.timeout:
            break
        if not chunk:
            why = "the server closed the stream"
            break
    return got, rest, why

s, head, rest = sse_open()
check("/events: 200 text/event-stream", s is not None and
      b" 200 " in head.split(b"\r\n")[0] and b"text/event-stream" in head,
      (head, rest))
if s is not None:
    t0 = time.monotonic()
    uuid = subprocess.run([jobboard, "--durability", "none", "post", "live.one"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # A bound for a hang, not a measure: the machine may be busy.
    got, rest, why = sse_events(s, rest, lambda e: e["data"].get("uuid") == uuid, 4)
    dt = time.monotonic() - t0
    e = got[-1]["data"] if why is None else None
    print("# /events: the post arrived after %.3f s" % dt)
    check("/events delivers the post within 4 s",
          e is not None and e["type"] == "POSTED" and e["name"] == "live.one",
          (why, got, rest[-500:]))
    s.close()

# A reconnect with Last-Event-ID goes on after that event: the events
# since, without a new change.
s, head, rest = sse_open()
if s is not None:
    uuids = [subprocess.run([jobboard, "--durability", "none", "post", "resume.%d" % i],
                            capture_output=True, text=True, check=True).stdout.strip()
             for i in range(3)]
    got, rest, why = sse_events(s, rest, lambda e: e["data"].get("uuid") == uuids[2], 4)
    s.close()
    ids = {e["data"]["uuid"]: e["id"] for e in got}
    check("/events: the three posts, each with its id",
          why is None and all(u in ids for u in uuids), (why, got))
    if why is None and all(u in ids for u in uuids):
        s, head, rest = sse_open(extra="Last-Event-ID: %s\r\n" % ids[uuids[0]])
        got, rest, why = sse_events(s, rest, lambda e: e["data"].get("uuid") == uuids[2], 4) \
            if s is not None else ([], rest, why)
        check("Last-Event-ID: the events after it, at once",
              why is None and [e["data"]["uuid"] for e in got] == uuids[1:] and
              [e["id"] for e in got] == [ids[u] for u in uuids[1:]], (why, got))
        if s is not None:
            s.close()
        s, head, rest = sse_open(extra="Last-Event-ID: 99999999\r\n")
        got, rest, why = sse_events(s, rest, lambda e: True, 0.5) \
            if s is not None else ([], rest, "the stream closed")
        check("Last-Event-ID past the end: from now (no event)",
              s is not None and got == [], (why, got))
        if s is not None:
            s.close()

# HEAD: the headers of GET, no body; HEAD /events does not stream.
for path, ctype in [("/", "text/html"), ("/jobs", "text/html"),
                    ("/static/web.css", "text/css"), ("/events", "text/event-stream")]:
    t0 = time.monotonic()
    code, body, h = get(path, method="HEAD")
    check("HEAD %s: 200 %s, no body, the security headers" % (path, ctype),
          code == 200 and body == "" and h.get("Content-Type", "").startswith(ctype) and
          "script-src 'self'" in h.get("Content-Security-Policy", "") and
          time.monotonic() - t0 < 4, (code, body[:200], dict(h)))
PYEOF
web_checks "$TMP/checks" $?

begin "SIGTERM with an /events stream open: exit 0 within 3 s, the stream ended"
"$PY" - "$PORT" >"$TMP/stream" 2>&1 <<'PYEOF' &
import socket, sys, time
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(("GET /events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port).encode())
buf = b""
while b"\n\n" not in buf.split(b"\r\n\r\n", 1)[-1] or b"\r\n\r\n" not in buf:
    chunk = s.recv(4096)
    if not chunk:
        print("closed before the preamble", flush=True)
        sys.exit(1)
    buf += chunk
print("open", flush=True)
try:
    while s.recv(4096):
        pass
    print("ended", flush=True)
except socket.timeout:
    print("not ended within 10 s", flush=True)
PYEOF
reader=$!
for i in $(seq 100); do grep -q open "$TMP/stream" && break; sleep 0.05; done
grep -q open "$TMP/stream" || fail "the stream did not open: $(cat "$TMP/stream")"
kill -TERM "$SERVER"
t0=$(date +%s%N)
for i in $(seq 60); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$SERVER" 2>/dev/null; then
  fail "still running 3 s after SIGTERM"
  kill -KILL "$SERVER"
fi
wait "$SERVER"; rc=$?
SERVER=
[ $rc = 0 ] || fail "exit $rc"
wait "$reader"
grep -q ended "$TMP/stream" || fail "the stream: $(cat "$TMP/stream")"
end

begin "[::1]: served on the IPv6 loopback address"
if ! "$PY" -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
  skip "no IPv6 loopback on this machine"
else
  start_server '[::1]'
  [ -n "$PORT" ] || fail "no port said: $(cat "$TMP/server.err")"
  out=$("$PY" - "$PORT" <<'PYEOF'
import sys, urllib.error, urllib.request
port = int(sys.argv[1])
def code(host):
    req = urllib.request.Request("http://[::1]:%d/" % port, headers={"Host": host} if host else {})
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as e:
        return e.code
got = [code(None), code("localhost:%d" % port), code("[::1]:%d" % port),
       code("127.0.0.1:%d" % port), code("evil.test:%d" % port)]
print(got)
PYEOF
)
  [ "$out" = "[200, 200, 200, 200, 421]" ] || fail "[::1]: the answers $out"
  web_stop
fi
end

finish
