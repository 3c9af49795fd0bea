#!/bin/bash
# tests/web_perf.sh - `jobboard web` reads the indexes, not every job, and
# shows what a full walk shows: the /jobs pages joined by their next links
# are the whole listing (`jobboard list`), with no filter and with each of
# the name, state and owner filters and their mixes, on a board large
# enough that a sparse filter runs out of its per-transaction budget; a
# text search stops after a bounded number of jobs and links to go on,
# and going on finds the job; the overview's counts by name and state are
# `jobboard stats --by-name`'s; every response says its server time
# (Server-Timing).
#
# Under `make check` the working directory is the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/web.sh"

# 11,000 jobs: 5,000 delayed "bulk" ones (more than a filtered batch looks
# at), then a few of other names, priorities and states; the text searched
# for is in the last job only.
"$PY" - >"$TMP/jobs" <<'PYEOF'
import json
pr = ["very_high", "high", "normal", "low", "very_low"]
for i in range(11000):
    d = {"name": "bulk", "details": {"i": i}, "priority": pr[i % 5]}
    if i < 5000:
        d["delay"] = 3600
    print(json.dumps(d))
for i in range(120):
    d = {"name": ["img.a", "img.b", "rare"][i % 3], "details": {"i": i},
         "priority": pr[i % 5]}
    if i % 7 == 0:
        d["delay"] = 3600
    print(json.dumps(d))
print(json.dumps({"name": "rare", "details": {"needle": "findme"},
                  "priority": "very_low"}))
PYEOF
jb post --batch <"$TMP/jobs" >/dev/null || die "post the jobs"
for i in 1 2 3 4 5 6; do
  jb claim-next --who "w$((i % 2))" --lease 600 --name img.a >/dev/null || die "claim img.a"
  jb claim-next --who "w$((i % 2))" --name rare >/dev/null || die "claim rare"
done
jb list --json >"$TMP/list" || die "list"
jb stats --by-name --json >"$TMP/stats" || die "stats"

web_start "$TMP/server.err" --listen 127.0.0.1:0

"$PY" - "$PORT" "$TMP/list" "$TMP/stats" >"$TMP/checks" 2>&1 <<'PYEOF'
import html, json, re, sys
import webcheck as wc
port, list_file, stats_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
wc.setup(port)
jobs = [json.loads(l) for l in open(list_file)]
stats = json.load(open(stats_file))

def get(path):
    return wc.get(path, timeout=30)

def check(name, cond, detail=""):
    wc.check(name, cond, detail, limit=1500)

def state(j):
    if j.get("state") == "CLAIMED":
        return "claimed"
    return "delayed" if j.get("not_before") else "unclaimed"

UUID = re.compile(r'<tr><td><a href="/job/([0-9a-f-]{36})">')
NEXT = re.compile(r'<a rel="next" href="([^"]+)">')

def walk(path):
    """The uuids of every page, following the next links."""
    out, pages = [], 0
    while path and pages < 400:
        code, body, _ = get(path)
        if code != 200:
            return None, "%s: %d" % (path, code)
        out += UUID.findall(body)
        m = NEXT.search(body)
        path = html.unescape(m.group(1)) if m else None
        pages += 1
    return out, pages

check("the listing has the board's jobs", len(jobs) == 11121, len(jobs))
for q, keep in [
        ("", lambda j: True),
        ("?name=rare", lambda j: j["name"] == "rare"),
        ("?name=img.a", lambda j: j["name"] == "img.a"),
        ("?name=img.*", lambda j: j["name"].startswith("img.")),
        ("?state=claimed", lambda j: state(j) == "claimed"),
        ("?state=delayed", lambda j: state(j) == "delayed"),
        ("?state=unclaimed", lambda j: state(j) == "unclaimed"),
        ("?name=rare&state=delayed", lambda j: j["name"] == "rare" and state(j) == "delayed"),
        ("?name=bulk&state=unclaimed", lambda j: j["name"] == "bulk" and state(j) == "unclaimed"),
        ("?name=img.a&state=claimed", lambda j: j["name"] == "img.a" and state(j) == "claimed"),
        ("?owner=w1", lambda j: j.get("owner") == "w1"),
        ("?name=rare&owner=w0", lambda j: j["name"] == "rare" and j.get("owner") == "w0"),
        ("?name=nosuch", lambda j: False)]:
    want = [j["uuid"] for j in jobs if keep(j)]
    got, pages = walk("/jobs" + q)
    check("/jobs%s: the pages joined are the listing (%d jobs)" % (q, len(want)),
          got == want, (pages, len(got or []), (got or [])[:3], want[:3]))

# A deep page opened at its cursor is the same page the walk reached.
code, body, _ = get("/jobs?after=1-5000")
first = UUID.findall(body)
check("a cursor opens the listing just after its job",
      code == 200 and len(first) == 50, (code, len(first)))
code, body, _ = get("/jobs?after=x-1")
check("a malformed cursor: 400", code == 400, code)

# The text search looks at a bounded number of jobs, then links on.
found, path, rounds = [], "/jobs?q=findme", 0
while path and not found and rounds < 5:
    code, body, _ = get(path)
    found = UUID.findall(body)
    m = NEXT.search(body)
    path = html.unescape(m.group(1)) if m else None
    rounds += 1
    if rounds == 1:
        check("a text search stops at its bound and says so",
              not found and "Looked at 5000 jobs" in body and path, body[-600:])
want = [j["uuid"] for j in jobs if "findme" in json.dumps(j.get("details"))]
check("searching on finds the job", found == want and rounds == 3,
      (found, want, rounds))

# The overview's counts are stats --by-name's.
code, body, headers = get("/")
rows = re.findall(r'<tr><td><a href="/jobs\?name=[^"]*">([^<]*)</a></td>'
                  r'((?:<td class="n"><a href="[^"]*">(?:\d+|list)</a></td>){3})',
                  body)
got = {html.unescape(n): [int(x) if x.isdigit() else x
                          for x in re.findall(r'>(\d+|list)</a>', c)]
       for n, c in rows}
# Past 2,000 delayed jobs the overview does not count them by name (that
# reads each one): the column links to their list, and a note says why.
many = stats["jobs"]["delayed"] > 2000
want = {n: [v["unclaimed"], v["claimed"], "list" if many else v["delayed"]]
        for n, v in stats["by_name"].items()}
check("the overview's rows are stats --by-name's", got == want, (got, want))
check("past 2,000 delayed jobs a note says they are not counted by name",
      many == ("delayed jobs are not counted by name here" in body),
      (many, stats["jobs"]["delayed"]))
for label, key in [("unclaimed", "unclaimed"), ("claimed", "claimed"),
                   ("delayed", "delayed"), ("jobs on the board", "total")]:
    m = re.search(r'<tr><th>%s</th><td class="n">(\d+)</td>' % label, body)
    check("the overview's %s is stats'" % label,
          m and int(m.group(1)) == stats["jobs"][key],
          (m and m.group(1), stats["jobs"]))

# Every response says the server's time.
for path in ["/", "/jobs", "/jobs?name=rare", "/claims", "/static/web.css",
             "/nosuch", "/jobs?state=bad"]:
    code, _, headers = get(path)
    st = headers.get("Server-Timing") or ""
    check("%s (%d): Server-Timing app;dur=MS" % (path, code),
          re.fullmatch(r"app;dur=\d+\.\d", st) is not None, st)
PYEOF
web_checks "$TMP/checks" $?

begin "SIGTERM: exit 0"
web_stop
end

finish
