#!/usr/bin/python3
"""bench-claim-script.py - the Redis server's time per claim script call.

    bench/bench-claim-script.py --socket SOCK [--jobs N] [--rounds R]
                                [--scripts DIR]...

For each script: N fresh jobs are listed (HSET of the listings hash), then
claimed, one EVALSHA each, sent in one pipeline (so the client's speed does
not matter), and INFO commandstats (after CONFIG RESETSTAT) gives the
server's microseconds per EVALSHA and the calls the script made per claim.
The scripts, in turns, R rounds (median, min and max printed):
  - return1:  a script that only returns 1, with the claim's KEYS and ARGV:
              what EVALSHA itself costs;
  - taskflow: taskflow's own claim script (python3-taskflow's template);
  - ours:     lib.lua + claim.lua of sync/scripts/ in each --scripts DIR
              (default: this source tree's), e.g. an older checkout's to
              compare.
Claims without expiry, with notices on a channel nobody listens to, as
`jobboard-bench --redis` makes them. Use a server of your own: it runs
CONFIG RESETSTAT and leaves nothing behind (each round's keys are
deleted). It only reports; it asserts no speed.
"""
import argparse
import os
import string
import sys
import uuid

import redis
from taskflow.jobs.backends import impl_redis

HERE = os.path.dirname(os.path.abspath(__file__))
LM = b"\xc7\x40\x01" + b"y" * 64   # the size of an oslo datetime blob


def taskflow_claim():
    b = impl_redis.RedisJobBoard
    return string.Template(b.SCRIPT_TEMPLATES["claim"]).substitute(
        ok=b.SCRIPT_STATUS_OK, error=b.SCRIPT_STATUS_ERROR,
        not_expected_owner=b.SCRIPT_NOT_EXPECTED_OWNER,
        unknown_owner=b.SCRIPT_UNKNOWN_OWNER,
        unknown_job=b.SCRIPT_UNKNOWN_JOB,
        already_claimed=b.SCRIPT_ALREADY_CLAIMED).encode()


def ours(scripts_dir):
    with open(os.path.join(scripts_dir, "lib.lua"), "rb") as a, \
            open(os.path.join(scripts_dir, "claim.lua"), "rb") as b:
        return a.read() + b.read()


def one_round(r, source, n):
    """Server us per EVALSHA and calls per claim, over n fresh jobs."""
    sha = r.script_load(source)
    ns = "bench-claim-script-%s" % uuid.uuid4().hex[:12]
    jobs = [str(uuid.uuid4()) for _ in range(n)]
    p = r.pipeline(transaction=False)
    for j in jobs:
        p.hset(ns + ":listings", j, b"p" * 200)
    p.execute()
    r.config_resetstat()
    p = r.pipeline(transaction=False)
    for j in jobs:
        keys = [ns + ":" + j + ".owned", ns + ":listings",
                ns + ":" + j + ".last_modified", ns + ":" + j + ".claim",
                ns + ":fence"]
        args = ["worker-1", j, LM, "none", str(uuid.uuid4()),
                ns + ":notices"]
        p.evalsha(sha, len(keys), *(keys + args))
    replies = p.execute()
    st = r.info("commandstats")
    ev = st["cmdstat_evalsha"]
    calls = sum(v["calls"] for k, v in st.items()
                if k not in ("cmdstat_evalsha", "cmdstat_info")
                and not k.startswith("cmdstat_config"))
    for k in r.scan_iter(ns + "*", count=10000):
        r.unlink(k)
    if replies and isinstance(replies[0], bytes) and b"error" in replies[0]:
        raise SystemExit("bench-claim-script: a claim was refused: %r"
                         % replies[0])
    return ev["usec"] / ev["calls"], calls / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scripts", action="append", default=[],
                    help="a sync/scripts directory (repeatable)")
    o = ap.parse_args()
    dirs = o.scripts or [os.path.join(HERE, "..", "sync", "scripts")]
    sides = [("return1", b"return 1"), ("taskflow", taskflow_claim())]
    for i, d in enumerate(dirs):
        sides.append(("ours" if len(dirs) == 1 else "ours%d" % (i + 1),
                      ours(d)))
    r = redis.Redis(unix_socket_path=o.socket)
    got = {name: [] for name, _ in sides}
    calls = {}
    for _ in range(o.rounds):
        for name, src in sides:
            us, c = one_round(r, src, o.jobs)
            got[name].append(us)
            calls[name] = c
    print("Redis %s, %d claims per round, %d rounds; server us per EVALSHA "
          "(INFO commandstats)" % (r.info("server")["redis_version"],
                                   o.jobs, o.rounds))
    print("%-10s %8s %8s %8s %16s" % ("script", "median", "min", "max",
                                      "calls per claim"))
    for name, _ in sides:
        v = sorted(got[name])
        print("%-10s %8.2f %8.2f %8.2f %16.1f"
              % (name, v[len(v) // 2], v[0], v[-1], calls[name]))
    for i, d in enumerate(dirs):
        if len(dirs) > 1:
            print("ours%d: %s" % (i + 1, os.path.abspath(d)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
