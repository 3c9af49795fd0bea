#!/usr/bin/python3
"""taskflow's own Redis jobboard client (Debian's python3-taskflow 5.0,
RedisJobBoard) doing what `jobboard-bench --redis` does, against the same
kind of server, for a side-by-side comparison (bench/bench-redis.sh runs
both against one redis-server of its own).

    /usr/bin/python3 bench/bench-taskflow.py --socket PATH [--jobs N]
        [--namespace NS] [--json]
    /usr/bin/python3 bench/bench-taskflow.py --compare OURS TASKFLOW

Measured, one process, one board connected to the server, after 50
untimed jobs:
  round trip  the board's redis client's PING (redis-py)
  post        board.post(): INCR of NS:sequence, then HSETNX of the posting
  claim       board.claim(job, who): taskflow's claim script (EVALSHA)
  consume     board.consume(job, who): taskflow's consume script
all jobs posted, then all claimed, then all consumed, as `jobboard-bench
--redis` does. Per operation p50, p99 and max in microseconds, and each
phase's operations per second over its wall time.

--json prints one line: {"type": "taskflow", ..., "NAME_p50_us", ...} with
the key names of `jobboard-bench --redis --json` (ping, post, claim,
consume). --compare reads a file of `jobboard-bench --redis --json` lines
and a file of this script's --json line, and prints them side by side,
then jobboard's replicator figures from the first file (its redis_wake
and redis_cycles lines), when it has them.

It reports, it asserts nothing about speed; it exits 1 if an operation
fails or a job is left behind.
"""
import argparse
import json
import os
import sys
import time

DETAILS = {"task": "resize", "width": 640, "height": 480}
NAME = "bench.resize-image"
WHO = "bench-worker"
WARMUP = 50


def summarise(samples_ns, wall_ns):
    v = sorted(samples_ns)
    n = len(v)
    return {"p50_us": v[n // 2] / 1000.0,
            "p99_us": v[(n * 99) // 100] / 1000.0,
            "max_us": v[-1] / 1000.0,
            "per_s": n * 1e9 / wall_ns if wall_ns > 0 else 0.0}


def timed(fn, items):
    """Call fn(item) for each item; per-call ns, results, wall ns."""
    clock = time.perf_counter_ns
    out, lat = [], []
    start = clock()
    for it in items:
        t0 = clock()
        out.append(fn(it))
        lat.append(clock() - t0)
    return lat, out, clock() - start


def run(args):
    from taskflow.jobs.backends import impl_redis
    conf = {"namespace": args.namespace}
    if args.socket:
        conf["unix_socket_path"] = args.socket
    else:
        conf["host"] = args.host
        conf["port"] = args.port
    board = impl_redis.RedisJobBoard("bench-taskflow", conf)
    board.connect()
    try:
        client = board._client
        for _ in range(WARMUP):
            client.ping()
            job = board.post(NAME, details=DETAILS)
            board.claim(job, WHO)
            board.consume(job, WHO)
        n = args.jobs
        figs = {}
        lat, _, wall = timed(lambda _: client.ping(), range(n))
        figs["ping"] = summarise(lat, wall)
        lat, jobs, wall = timed(lambda _: board.post(NAME, details=DETAILS),
                                range(n))
        figs["post"] = summarise(lat, wall)
        lat, _, wall = timed(lambda j: board.claim(j, WHO), jobs)
        figs["claim"] = summarise(lat, wall)
        lat, _, wall = timed(lambda j: board.consume(j, WHO), jobs)
        figs["consume"] = summarise(lat, wall)
        left = board.job_count
        if left != 0:
            print("bench-taskflow: %d jobs left on the board" % left,
                  file=sys.stderr)
            return 1
        info = client.info("server")
    finally:
        board.close()
    import taskflow.version
    line = {"type": "taskflow", "namespace": args.namespace, "jobs": n,
            "server": info.get("redis_version"),
            "taskflow": taskflow.version.version_string(),
            "python": sys.version.split()[0]}
    for op, f in figs.items():
        for k, v in f.items():
            line[op + "_" + k] = v
    if args.json:
        print(json.dumps(line))
    else:
        print("taskflow %s RedisJobBoard, Python %s, Redis %s, namespace %s,"
              " %d jobs per phase after %d untimed"
              % (line["taskflow"], line["python"], line["server"],
                 args.namespace, n, WARMUP))
        print("%-20s %10s %10s %10s %10s"
              % ("", "ops/s", "p50 us", "p99 us", "max us"))
        for op in ("ping", "post", "claim", "consume"):
            f = figs[op]
            print("  %-18s %10.0f %10.1f %10.1f %10.1f"
                  % (op, f["per_s"], f["p50_us"], f["p99_us"], f["max_us"]))
    return 0


def read_line(path, kind):
    lines = read_all(path, kind)
    if not lines:
        raise SystemExit("bench-taskflow: no \"%s\" line in %s"
                         % (kind, path))
    return lines[0]


def compare(ours_path, theirs_path):
    ours = read_line(ours_path, "redis")
    tf = read_line(theirs_path, "taskflow")
    print("Same redis-server (Redis %s), %d jobs per phase each; jobboard "
          "board in mode %s;\ntaskflow %s on Python %s.\n"
          % (ours["server"], ours["jobs"], ours["mode"], tf["taskflow"],
             tf["python"]))
    print("%-16s %27s   %27s   %s" % ("", "jobboard (C, libjbsync)",
                                      "taskflow (Python)", "speedup"))
    print("%-16s %8s %8s %9s   %8s %8s %9s   %7s %7s"
          % ("", "ops/s", "p50 us", "p99 us", "ops/s", "p50 us", "p99 us",
             "ops/s", "p50"))
    rows = (("round trip", "ping", "ping"), ("post", "post_publish", "post"),
            ("claim", "claim", "claim"), ("consume", "consume", "consume"))
    for label, ok, tk in rows:
        o_rate, t_rate = ours[ok + "_per_s"], tf[tk + "_per_s"]
        o50, t50 = ours[ok + "_p50_us"], tf[tk + "_p50_us"]
        print("%-16s %8.0f %8.1f %9.1f   %8.0f %8.1f %9.1f   %6.1fx %6.1fx"
              % (label, o_rate, o50, ours[ok + "_p99_us"], t_rate, t50,
                 tf[tk + "_p99_us"], o_rate / t_rate if t_rate else 0,
                 t50 / o50 if o50 else 0))
    print("\njobboard's post is jb_job_post + jb_sync_publish (two local "
          "commits, one script);\ntaskflow's is INCR + HSETNX (two round "
          "trips). Claim and consume: one script each,\nplus jobboard's "
          "local commit. Round trip: PING from each client.")
    print("jobboard claim p50 / (round trip p50 + local claim p50): %.2f "
          "(aim: at most 1.5)" % ours["claim_ratio"])
    if "floor_ratio" in ours:
        print("jobboard claim p50 / (PING + local commit, timed together) "
              "p50: %.2f (%.1f / %.1f us)"
              % (ours["floor_ratio"], ours["claim_p50_us"],
                 ours["floor_p50_us"]))
    print_sync(ours_path)
    return 0


def read_all(path, kind):
    """Every JSON line of type `kind` in the file, in order."""
    out = []
    with open(path) as f:
        for text in f:
            text = text.strip()
            if text.startswith("{"):
                d = json.loads(text)
                if d.get("type") == kind:
                    out.append(d)
    return out


def print_sync(ours_path):
    """jobboard's replicator figures (redis_wake, redis_cycles lines)."""
    wakes = read_all(ours_path, "redis_wake")
    if wakes:
        print("\nWake-up through Redis (jobboard): post -> jb_board_wait "
              "returns on board B,\nwhose replicator runs in the bench "
              "process; taskflow = INCR + HSETNX, no notice")
        print("%-12s %7s %6s %9s %9s %9s %9s"
              % ("poster", "poll ms", "n", "min us", "p50 us", "p99 us",
                 "mean us"))
        for w in wakes:
            print("%-12s %7d %6d %9.1f %9.1f %9.1f %9.1f"
                  % (w["poster"], w["poll_ms"], w["samples"], w["min_us"],
                     w["p50_us"], w["p99_us"], w["mean_us"]))
    for c in read_all(ours_path, "redis_cycles"):
        print("\nLocal cycle with the sync on (jobboard), %d cycles x %d "
              "rounds:" % (c["cycles"], c["rounds"]))
        for k in ("plain", "attached", "replicator"):
            print("%-12s %9.0f cycles/s %7.2f us/cycle  p50 %6.1f us  "
                  "p99 %7.1f us"
                  % (k, c[k + "_cycles_per_s"], c[k + "_us_per_cycle"],
                     c[k + "_p50_us"], c[k + "_p99_us"]))
        print("replicator: %d cycles kept local (mean %.2f us), %d through "
              "Redis (mean %.1f us)"
              % (c["replicator_kept_local_cycles"],
                 c["replicator_kept_local_mean_us"],
                 c["replicator_via_redis_cycles"],
                 c["replicator_via_redis_mean_us"]))


def main():
    ap = argparse.ArgumentParser(
        description="taskflow's RedisJobBoard: post, claim, consume rates")
    ap.add_argument("--socket", help="redis unix socket path")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    ap.add_argument("--namespace",
                    default="taskflow-bench-%d-%d" % (os.getpid(),
                                                      time.time_ns() // 1000))
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--compare", nargs=2, metavar=("OURS", "TASKFLOW"),
                    help="print jobboard's and taskflow's JSON side by side")
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
