#!/bin/bash
# tests/web_timeline.sh - the parts of `jobboard web` that read the change
# log and the history, with python3's urllib against a real server: a
# job's timeline on /job/UUID (its steps in order, with owner, reason and
# result, escaped), a dead letter's timeline, the holder process of a
# claim (alive while a real worker process holds it, the claim lapsed
# once that process is killed), /history's filters and paging, the
# overview's sparklines (their points, and their values against a count
# of the history), and a log trimmed past a job's first events.
#
# Under `make check` the working directory is the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/web.sh"

WORKER=
stop_worker() {
  if [ -n "$WORKER" ]; then kill -KILL "$WORKER" 2>/dev/null; wait "$WORKER" 2>/dev/null; fi
}
web_cleanup_first=stop_worker

NAME='tl<i>job'
O1='o<1>'
O2='o"2'
REASON='<script>alert(1)</script>'
life=$(jb post "$NAME" --details '{"k": 1}') || die "post"
jb claim --who "$O1" --lease 30 "$life" >/dev/null || die "claim"
jb extend --who "$O1" --lease 60 "$life" || die "extend"
jb abandon --who "$O1" --reason "$REASON" "$life" || die "abandon"
jb claim --who "$O2" "$life" >/dev/null || die "claim again"
jb consume --who "$O2" --result '{"r": "<b>done</b>"}' "$life" || die "consume"
dead=$(jb post dead.one) || die "post dead.one"
jb claim --who "$O1" "$dead" >/dev/null || die "claim dead.one"
jb abandon --who "$O1" --dead --reason "$REASON" "$dead" || die "dead.one to the dead letters"
# History to search: 60 of h.a (the odd ones failed), 5 of h.b.
for i in $(seq 60); do
  u=$(jb post h.a --details "{\"i\": $i}") || die "post h.a"
  jb claim --who hw "$u" >/dev/null || die "claim h.a"
  if [ $((i % 2)) = 1 ]; then
    jb consume --who hw --failed --result "{\"n\": $i, \"tag\": \"odd$i\"}" "$u" || die "consume --failed"
  else
    jb consume --who hw --result "{\"n\": $i}" "$u" || die "consume"
  fi
done
for i in $(seq 5); do
  u=$(jb post h.b) || die "post h.b"
  jb claim --who hw "$u" >/dev/null || die "claim h.b"
  jb consume --who hw "$u" || die "consume h.b"
done
hold=$(jb post hold.job) || die "post hold.job"
# A worker process that holds its claim (bound to its pid) while CMD runs.
"$JOBBOARD" --durability none work --who 'h<w>' --jobs 1 -- sleep 60 \
  2>"$TMP/work.err" &
WORKER=$!
for i in $(seq 100); do
  [ "$(jb state "$hold")" = CLAIMED ] && break
  sleep 0.05
done
[ "$(jb state "$hold")" = CLAIMED ] || die "the worker did not claim hold.job"

# Serve $JOBBOARD_DIR: SERVER and PORT.
start_server() { web_start "$TMP/server.err" --listen 127.0.0.1:0; }
read_checks() { web_checks "$TMP/checks" "$1"; }
stop_server() { web_stop; }
start_server

"$PY" - "$PORT" "$life" "$dead" "$hold" "$WORKER" "$JOBBOARD" >"$TMP/checks" 2>&1 <<'PYEOF'
import html, json, os, re, signal, subprocess, sys, time
import webcheck as wc
from webcheck import check, no_raw, text
port, life, dead, hold, worker, jobboard = sys.argv[1:7]
wc.setup(port, raw=["<script>alert(1)</script>", "<b>done</b>", "tl<i>job", "o<1>", "h<w>"])

def get(path):
    code, body, _ = wc.get(path)
    return code, body

def timeline(body):
    """The timeline's rows: (event, owner, what), oldest first."""
    m = re.search(r'<table class="timeline">(.*?)</table>', body, re.S)
    if not m:
        return []
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)[1:]:
        tds = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
        rows.append((text(tds[2]), text(tds[3]), text(tds[4])))
    return rows

# A job's life, in order, with owners, the reason and the result.
code, body = get("/job/" + life)
rows = timeline(body)
check("/job/LIFE: 200 with a timeline", code == 200 and rows, body[-1500:])
check("the steps in order: posted, claimed, extended, abandoned, claimed, consumed",
      [r[0] for r in rows] == ["posted", "claimed", "extended", "abandoned",
                               "claimed", "consumed"], rows)
check("each step's owner", [r[1] for r in rows] ==
      ["-", "o<1>", "o<1>", "o<1>", 'o"2', 'o"2'], rows)
check("the abandon carries its reason",
      len(rows) > 3 and "<script>alert(1)</script>" in rows[3][2], rows)
check("the consume carries outcome and result",
      len(rows) > 5 and "outcome consumed" in rows[5][2] and
      '"r":"<b>done</b>"' in rows[5][2], rows)
check("/job/LIFE: nothing of the board unescaped", not no_raw(body), no_raw(body))
check("/job/LIFE: says how much of the change log it read",
      re.search(r"Read \d+ change-log events", body) is not None)

# A dead letter's timeline: its cause and reason on the last step.
code, body = get("/job/" + dead)
rows = timeline(body)
check("/job/DEAD: posted, claimed, dead",
      [r[0] for r in rows] == ["posted", "claimed", "dead"], rows)
check("the dead step: cause and reason",
      rows and "dead letter: buried" in rows[-1][2] and
      "<script>alert(1)</script>" in rows[-1][2] and rows[-1][1] == "o<1>", rows)
check("/job/DEAD: nothing unescaped", not no_raw(body), no_raw(body))

# The holder: a live worker process, then killed.
code, body = get("/job/" + hold)
check("/job/HOLD: holder %s alive, the registered worker" % "PID",
      re.search(r"<th>holder</th><td>%s alive</td>" % worker, body) is not None and
      "registered worker, pid %s" % worker in body, body[-2500:])
code, body = get("/claims")
check("/claims: a holder column with the pid, alive",
      "<th>holder</th>" in body and ("%s alive" % worker) in body, body[-2000:])
check("/claims: nothing unescaped", not no_raw(body), no_raw(body))
os.kill(int(worker), signal.SIGKILL)
os.waitpid(int(worker), 0) if False else None
time.sleep(0.5)
code, body = get("/job/" + hold)
rows = timeline(body)
check("after the kill: the claim lapsed, its holder gone",
      "<th>state</th><td>unclaimed</td>" in body and rows and
      rows[-1][0] == "claim lapsed" and "holder process is gone" in rows[-1][2]
      and rows[-1][1] == "h<w>", rows)
code, body = get("/claims")
check("after the kill: no longer in /claims", hold not in body and "alive" not in body)

# /history: filters narrow, pages page.
def uuids(body):
    return re.findall(r'<tr><td><time[^>]*>[^<]*</time>[^<]*</td><td><a href="/job/([0-9a-f-]{36})"', body)
code, body = get("/history")
check("/history: 200, 50 a page, a next link", code == 200 and len(uuids(body)) == 50 and
      'rel="next"' in body, len(uuids(body)))
check("/history is in the navigation", '<a href="/history" aria-current="page">history</a>' in body)
first = set(uuids(body))
seen = set(first)
pages = 1
while True:
    m = re.search(r'<a rel="next" href="([^"]*)"', body)
    if not m:
        break
    code, body = get(html.unescape(m.group(1)))
    page = set(uuids(body))
    check("/history page %d: new records only" % (pages + 1), not (page & seen), page & seen)
    seen |= page
    pages += 1
total = int(subprocess.run([jobboard, "history", "--json"], capture_output=True,
                           text=True).stdout.count("\n"))
check("/history: the pages hold every record once (%d)" % total, len(seen) == total,
      (len(seen), total))
code, body = get("/history?name=h.a")
check("name=h.a: 50 and a next page", len(uuids(body)) == 50 and 'rel="next"' in body)
m = re.search(r'<a rel="next" href="([^"]*)"', body)
code, body2 = get(html.unescape(m.group(1))) if m else (0, "")
check("its next page: the other 10, the filter kept", len(uuids(body2)) == 10 and
      "name=h.a" in html.unescape(m.group(1) if m else ""), len(uuids(body2)))
code, body = get("/history?name=h.a&outcome=failed")
check("outcome=failed: the 30 odd ones", len(uuids(body)) == 30, len(uuids(body)))
code, body = get("/history?name=h.*")
check("name=h.* (a prefix): 50 of 65", len(uuids(body)) == 50)
code, body = get("/history?q=odd7")
check("q=odd7: the results holding it (7, 71.. none: 7 only)", len(uuids(body)) == 1, len(uuids(body)))
code, body = get("/history?q=%3Cb%3Edone")
check("q=<b>done: the life job, escaped", uuids(body) == [life] and not no_raw(body), uuids(body))
code, body = get("/history?until=2000-01-01")
check("until=2000-01-01: none", code == 200 and "No record matches" in body)
code, body = get("/history?since=2000-01-01&outcome=trashed")
check("outcome=trashed: none", code == 200 and "No record matches" in body)
for bad in ["outcome=bogus", "since=yesterday", "after=12", "since=2030-01-01&until=2020-01-01"]:
    code, body = get("/history?" + bad)
    check("/history?%s: 400" % bad, code == 400, code)

# The sparklines: 60 points each; the completions per minute as counted
# from the history.
code, body = get("/")
svgs = re.findall(r'<svg class="spark (\w+)"[^>]*data-start="(\d+)" data-step="(\d+)" '
                  r'data-values="([^"]*)">.*?<polyline points="([^"]*)"/></svg>', body, re.S)
check("/: two sparklines", [s[0] for s in svgs] == ["done", "wait"], [s[0] for s in svgs])
if svgs:
    kind, start, step, values, points = svgs[0]
    values = [float(v) for v in values.split()]
    check("each of 60 points", len(values) == 60 and len(points.split()) == 60 and
          all(len(s[4].split()) == 60 for s in svgs), (len(values), len(points.split())))
    start, step = int(start), int(step)
    want = [0] * 60
    for line in subprocess.run([jobboard, "history", "--json"], capture_output=True,
                               text=True).stdout.splitlines():
        rec = json.loads(line)
        t = rec["completed"]
        # "completed" as printed: RFC 3339 with microseconds.
        from datetime import datetime
        us = int(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1e6 + 0.5)
        i = (us - start) // step
        if 0 <= i < 60 and us >= start:
            want[i] += 1
    check("the completions per minute match the history (%d)" % sum(want),
          values == want and sum(want) == total, (values, want))
    check("no style attribute (the CSP allows none)", "style=" not in body)
PYEOF
read_checks $?
WORKER=

begin "SIGTERM: exit 0"
stop_server
end

# A log trimmed past a job's first events: the page says so, and shows
# the post from the job's own record. 100,200 posts in 101 writes and four
# more writes trim the log (100,000 events kept, 64 dropped a write) past
# the job's post and claim.
export JOBBOARD_DIR=$TMP/trimmed
old=$(jb post first.one) || die "post first.one"
jb claim --who 'z<z>' "$old" >/dev/null || die "claim first.one"
seq 100200 | sed 's/.*/{"name": "bulk"}/' | jb post --batch >/dev/null || die "post 100,200"
for i in 1 2 3 4; do jb post later >/dev/null || die "post later"; done
first=$(jb stats --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["log"]["first"])')
[ "$first" -gt 2 ] || die "the log was not trimmed (first $first)"
start_server
"$PY" - "$PORT" "$old" "$first" >"$TMP/checks" 2>&1 <<'PYEOF'
import re, sys
import webcheck as wc
from webcheck import check
port, old, first = sys.argv[1:4]
wc.setup(port)
body = wc.get("/job/" + old)[1]
check("a trimmed log: the page says the early events are gone (first kept %s)" % first,
      "no longer holds the job's early events: its first kept event is seq %s" % first
      in body, body[-3000:])
check("the post from the job's record",
      re.search(r"<td>posted</td><td>-</td><td>\(from the job's record\)", body) is not None)
m = re.search(r"Read \d+ change-log events \(seq \d+ to \d+ of (\d+) to", body)
check("it says the log's extent", m is not None and m.group(1) == first,
      m and m.group(0))
check("a claim bound to no process says so",
      "<th>holder</th><td>not bound to a process</td>" in body)
PYEOF
read_checks $?
begin "SIGTERM: exit 0 (the trimmed board)"
stop_server
end

finish
