#!/bin/bash
# tests/metrics.sh - `jobboard stats` and `jobboard metrics` end to end:
# the exposition parsed with
# prometheus_client's parser, counters rising after a consume, the JSON
# figures, and (when built with libmicrohttpd) `metrics --listen` scraped
# with curl and http.client, a 404, and a clean stop on SIGTERM.
#
# Under `make check` the working directory is the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PY=/usr/bin/python3
$PY -c 'import prometheus_client.parser' 2>/dev/null ||
  bail "python3-prometheus-client is missing (apt-get install python3-prometheus-client)"

TMP=$(mktemp -d)
SERVER=
cleanup() {
  if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; fi
  rm -rf "$TMP"
}
at_exit cleanup
export JOBBOARD_DIR=$TMP/board
jb() { "$JOBBOARD" --durability none "$@"; }

# The value of one sample of an exposition (file $1) by name and labels.
PARSE='
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
want_name, want_labels = sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
fams = list(text_string_to_metric_families(text))
for f in fams:
    for s in f.samples:
        if s.name == want_name and all(s.labels.get(k) == v for k, v in want_labels.items()):
            print(int(s.value) if s.value == int(s.value) else s.value)
            sys.exit(0)
sys.exit("no sample %s %s" % (want_name, want_labels))
'
val() { $PY -c "$PARSE" "$@"; }

for i in 1 2 3; do jb post alpha --priority high >/dev/null || fail "post"; done
jb post beta >/dev/null
u=$(jb claim-next --who w1 | head -1)
jb metrics >"$TMP/m1" || fail "metrics exits 0"
# Every family has HELP and TYPE, the parser reads it all.
if $PY - "$TMP/m1" <<'PYEOF'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
fams = list(text_string_to_metric_families(text))
names = {f.name for f in fams}
for need in ["jobboard_jobs", "jobboard_claims", "jobboard_jobs_posted",
             "jobboard_consumes", "jobboard_map_size_bytes", "jobboard_readers"]:
    assert need in names, (need, sorted(names))
for f in fams:
    assert f.documentation, f.name
    assert f.type in ("gauge", "counter"), (f.name, f.type)
    assert f.name.startswith("jobboard_"), f.name
    if f.type == "counter":
        assert all(s.name.endswith("_total") for s in f.samples), f.name
PYEOF
then pass "exposition parses, HELP and TYPE everywhere"; else fail "exposition parses"; fi
[ "$(val "$TMP/m1" jobboard_jobs state=unclaimed priority=high)" = 2 ] && pass "unclaimed high" || fail "unclaimed high"
[ "$(val "$TMP/m1" jobboard_jobs state=claimed priority=high)" = 1 ] && pass "claimed high" || fail "claimed high"
[ "$(val "$TMP/m1" jobboard_jobs_posted_total)" = 4 ] && pass "posted_total 4" || fail "posted_total"
[ "$(val "$TMP/m1" jobboard_consumes_total outcome=success)" = 0 ] && pass "no consume yet" || fail "consumes before"

jb consume "$u" --who w1 || fail "consume"
jb metrics >"$TMP/m2"
[ "$(val "$TMP/m2" jobboard_consumes_total outcome=success)" = 1 ] && pass "consumes_total rose" || fail "consumes_total rose"
[ "$(val "$TMP/m2" jobboard_claims_total)" = 1 ] && pass "claims_total" || fail "claims_total"
[ "$(val "$TMP/m2" jobboard_recent_completions window=1m outcome=consumed)" = 1 ] && pass "recent completions" || fail "recent completions"

# stats --json: the same figures.
jb stats --json --by-name >"$TMP/s.json" || fail "stats --json exits 0"
if $PY - "$TMP/s.json" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
s = json.loads(lines[0])
assert s["jobs"]["total"] == 3, s["jobs"]
assert s["jobs"]["unclaimed"] == 3, s["jobs"]
assert s["jobs"]["by_priority"]["HIGH"]["unclaimed"] == 2
assert s["totals"]["posted"] == 4 and s["totals"]["claimed"] == 1
assert s["totals"]["outcomes"]["consumed"] == 1
assert s["completions"]["last_minute"]["consumed"] == 1
assert s["completions"]["history"] == 1
assert s["by_name"] == {"alpha": {"unclaimed": 2, "claimed": 0, "delayed": 0, "paused": False},
                        "beta": {"unclaimed": 1, "claimed": 0, "delayed": 0, "paused": False}}, s["by_name"]
assert s["paused"] == {"board": False, "names": []}, s["paused"]
assert s["log"]["first"] == 1 and s["log"]["last"] == 6, s["log"]
assert s["file"]["page_size"] > 0 and s["file"]["readers"] >= 1
assert s["jobs"]["oldest_unclaimed_seconds"] >= 0
PYEOF
then pass "stats --json figures"; else fail "stats --json figures"; fi
jb stats | grep -q "^jobs" && pass "stats human" || fail "stats human"

# Over HTTP, when built with libmicrohttpd.
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
if "$JOBBOARD" metrics --listen 999.1.1.1:1 2>&1 | grep -q "without HTTP support"; then
  begin "metrics over HTTP"
  skip "built without libmicrohttpd"
  end
else
  "$JOBBOARD" metrics --listen 127.0.0.1:$PORT 2>"$TMP/server.err" &
  SERVER=$!
  for i in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" && break
    sleep 0.1
  done
  curl -s -D "$TMP/h" -o "$TMP/m3" "http://127.0.0.1:$PORT/metrics" || fail "curl scrape"
  grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' "$TMP/h" && pass "content type" || fail "content type"
  [ "$(val "$TMP/m3" jobboard_consumes_total outcome=success)" = 1 ] && pass "scrape via curl" || fail "scrape via curl"
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nope")
  [ "$code" = 404 ] && pass "404 elsewhere" || fail "404 elsewhere ($code)"
  # A second one on the same port: a clear error, exit 2.
  "$JOBBOARD" metrics --listen 127.0.0.1:$PORT 2>"$TMP/busy.err"; rc=$?
  [ $rc = 2 ] && grep -q "in use" "$TMP/busy.err" && pass "port in use" || fail "port in use ($rc)"
  jb post gamma >/dev/null
  if $PY - "$PORT" <<'PYEOF'
import http.client, sys
from prometheus_client.parser import text_string_to_metric_families
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", "/metrics")
r = c.getresponse()
assert r.status == 200, r.status
body = r.read().decode()
v = {s.name + str(sorted(s.labels.items())): s.value
     for f in text_string_to_metric_families(body) for s in f.samples}
# A fresh read transaction per scrape: the post after the server started.
assert v["jobboard_jobs_posted_total[]"] == 5, v["jobboard_jobs_posted_total[]"]
PYEOF
  then pass "scrape via http.client sees a later post"; else fail "scrape via http.client"; fi
  kill -TERM "$SERVER"
  wait "$SERVER"; rc=$?
  SERVER=
  [ $rc = 0 ] && pass "SIGTERM: exit 0" || fail "SIGTERM: exit $rc"
fi

# A lapsed lease's job is unclaimed in the metrics as in list and count
# (a board of its own: the figures above stay as they are).
lapse() { JOBBOARD_DIR=$TMP/lapse jb "$@"; }
lapse post alpha --priority high >/dev/null || fail "post (lapse)"
lapse claim-next --who w-lapse --lease 0.2 >/dev/null || fail "claim with a lease"
sleep 0.5
lapse metrics >"$TMP/m3"
[ "$(lapse count --unclaimed)" = 1 ] || fail "count --unclaimed after the lapse"
[ "$(val "$TMP/m3" jobboard_jobs state=unclaimed priority=high)" = 1 ] &&
  [ "$(val "$TMP/m3" jobboard_jobs state=claimed priority=high)" = 0 ] &&
  pass "a lapsed lease counts as unclaimed" || fail "a lapsed lease counts as unclaimed"

# Pauses: a name's and the board's, in stats and metrics; a resumed name
# stays exported, at 0.
begin "paused names and board in stats and metrics"
jb metrics >"$TMP/p0"
[ "$(val "$TMP/p0" jobboard_board_paused)" = 0 ] || fail "board_paused before: $(grep paused "$TMP/p0")"
grep -q '^jobboard_name_paused{' "$TMP/p0" && fail "a name paused before any pause"
jb pause alpha && jb pause beta && jb resume beta && jb pause --all || fail "pause"
jb metrics >"$TMP/p1"
[ "$(val "$TMP/p1" jobboard_board_paused)" = 1 ] || fail "board_paused: $(grep paused "$TMP/p1")"
[ "$(val "$TMP/p1" jobboard_name_paused name=alpha)" = 1 ] || fail "alpha paused"
[ "$(val "$TMP/p1" jobboard_name_paused name=beta)" = 0 ] || fail "beta resumed"
jb post delta >/dev/null
jb metrics --by-name >"$TMP/p2"
[ "$(val "$TMP/p2" jobboard_name_paused name=delta)" = 0 ] || fail "--by-name: delta"
[ "$(val "$TMP/p2" jobboard_jobs_by_name name=delta state=unclaimed)" = 1 ] || fail "--by-name: jobs"
jb stats --json --by-name >"$TMP/p.json" || fail "stats --json"
$PY - "$TMP/p.json" <<'PYEOF' || fail "stats --json: paused"
import json, sys
s = json.loads(open(sys.argv[1]).read())
assert s["paused"] == {"board": True, "names": ["alpha"]}, s["paused"]
assert s["by_name"]["alpha"]["paused"] is True, s["by_name"]
assert s["by_name"]["beta"]["paused"] is False, s["by_name"]
PYEOF
jb stats --by-name >"$TMP/p.txt"
grep -Eq '^  alpha +2 +0 +0  paused$' "$TMP/p.txt" || fail "stats: alpha paused: $(cat "$TMP/p.txt")"
grep -Eq '^  beta +1 +0 +0  $' "$TMP/p.txt" || fail "stats: beta not paused"
grep -Eq '^  the whole board +yes$' "$TMP/p.txt" || fail "stats: the board paused"
jb resume --all && jb resume alpha || fail "resume"
jb trash --who w1 "$(jb claim-next --who w1 --name delta)" || fail "delta away"
jb metrics >"$TMP/p3"
[ "$(val "$TMP/p3" jobboard_board_paused)" = 0 ] || fail "board resumed"
[ "$(val "$TMP/p3" jobboard_name_paused name=alpha)" = 0 ] || fail "alpha resumed"
end

finish
