#!/usr/bin/python3
"""bench/bench-web.py - how long `jobboard web` takes for its pages that
read the change log and the history: /job/UUID (the timeline) and / (the
sparklines of the last hour), on a board whose log holds EVENTS events
and whose history holds a third as many records, all of the last hour.

Run from the build directory (the python binding and ./jobboard):
  LD_LIBRARY_PATH=.libs JOBBOARD_LIBRARY=.libs/libjobboard.so.0 \\
    PYTHONPATH=python bench/bench-web.py [EVENTS] [ROUNDS]
The board is made with log_keep = EVENTS (the log's bound is the writers'
log_keep, default 100,000, and log_max_age, default 7 days) and the
history without a bound. Prints the median and slowest of ROUNDS GETs.
"""
import os, re, subprocess, sys, tempfile, time, urllib.request

import jobboard

events = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
tmp = tempfile.mkdtemp(prefix="bench-web.")
path = os.path.join(tmp, "board")
t0 = time.monotonic()
b = jobboard.Board(path, create=True, durability="none", log_keep=events,
                   map_size=8 << 30)
b.set_retention(history_max="none")
# The oldest job stays on the board: its timeline spans the whole log.
oldest = b.post("bench.oldest")
jobs = (events - 1) // 3
BATCH = 4096
done = 0
while done < jobs:
    n = min(BATCH, jobs - done)
    b.post_many([{"name": "bench.item", "details": {"i": done + i}}
                 for i in range(n)])
    claims = b.claim_next_many("bench-worker", n, names=["bench.item"])
    for c in claims:
        c.result = {"ok": True}
    b.consume_many(claims)
    done += n
recent = claims[-1].uuid
b.close()
print("made %d jobs (%d events) in %.1f s" % (jobs + 1, 3 * jobs + 1,
                                               time.monotonic() - t0))

server = subprocess.Popen(["./jobboard", "--board", path, "web", "--listen",
                           "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
try:
    port = re.search(r":(\d+)/$", server.stderr.readline().strip()).group(1)
    base = "http://127.0.0.1:%s" % port

    def measure(label, url, note):
        times, body = [], ""
        for _ in range(rounds):
            t = time.monotonic()
            body = urllib.request.urlopen(base + url).read().decode()
            times.append((time.monotonic() - t) * 1000)
        times.sort()
        m = re.search(note, body)
        print("%-34s median %6.1f ms  max %6.1f ms  (%s)" %
              (label, times[len(times) // 2], times[-1],
               m.group(0) if m else "-"))

    measure("GET /job/OLDEST (whole log)", "/job/" + oldest,
            r"Read \d+ change-log events[^<]*|Only the newest[^<]*")
    measure("GET /job/RECENT (completed)", "/job/" + recent,
            r"Read \d+ change-log events[^<]*")
    measure("GET / (sparklines)", "/", r"From \d+ history records[^<]*")
    measure("GET /history", "/history", r"next 50")
    measure("GET /history?q=nothing", "/history?q=nothing", r"Looked at[^<]*")
finally:
    server.terminate()
    server.wait()
    subprocess.run(["rm", "-rf", tmp])
