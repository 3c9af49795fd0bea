#!/usr/bin/python3
"""The taskflow side of the replicator's integration tests, and their
accounting (tests/sync_fleet.sh, sync_outage.sh, sync_holder.sh).

Run with /usr/bin/python3 (Debian's python3-taskflow 5.0; never PyPI):

  sync_peer.py post SOCK NS N OUT [BATCH PAUSE]
      post N jobs with taskflow's RedisJobBoard.post, BATCH at a time with
      PAUSE seconds between batches; each uuid is appended to OUT (one per
      line, flushed) as soon as its post returned.
  sync_peer.py claim SOCK NS WHO LOG STOPFILE
      a taskflow worker: list the board, claim jobs (no expiry, as
      taskflow's conductors do), append each claimed uuid to LOG (the job's
      "run") and consume it. Runs until STOPFILE exists and the board
      lists nothing. Any consume refused after a successful claim is an
      error (exit 1): the claim was taken away from under us.
  sync_peer.py audit --posted NAME=FILE... --logs NAME=FILE...
      every posted uuid (union of the FILEs) must appear exactly once in
      the union of the logs: prints the lost, the duplicated and the
      unknown ones (exit 1 if any), and the table of who ran what.
  sync_peer.py seqs SOCK NS FILE
      for each uuid of FILE (in order), the Redis sequence it was
      published under, read from our publication marker NS:<uuid>.posted
      (written with the listing by our post script; docs/DESIGN-NOTES.md)
      or from the listed posting; "-" when Redis has neither.
"""
import os
import random
import sys
import time


def tf_board(sock, ns, name):
    from taskflow.jobs.backends import impl_redis
    board = impl_redis.RedisJobBoard(
        name, {"unix_socket_path": sock, "namespace": ns})
    board.connect()
    return board


def cmd_post(sock, ns, n, out, batch="100", pause="0.05"):
    n, batch, pause = int(n), int(batch), float(pause)
    board = tf_board(sock, ns, "tf-poster")
    with open(out, "a") as f:
        for i in range(n):
            job = board.post("tf-job-%d" % i, details={"i": i})
            f.write(job.uuid + "\n")
            f.flush()
            if (i + 1) % batch == 0 and pause > 0:
                time.sleep(pause)
    board.close()
    return 0


def cmd_claim(sock, ns, who, log, stopfile):
    from taskflow import exceptions as tf_exc
    board = tf_board(sock, ns, who)
    ran = 0
    with open(log, "a") as f:
        while True:
            jobs = list(board.iterjobs(ensure_fresh=True))
            if not jobs:
                if os.path.exists(stopfile):
                    break
                time.sleep(0.1)
                continue
            random.shuffle(jobs)
            got = 0
            for job in jobs:
                try:
                    board.claim(job, who)
                except (tf_exc.UnclaimableJob, tf_exc.NotFound):
                    continue
                f.write(job.uuid + "\n")
                f.flush()
                try:
                    board.consume(job, who)
                except Exception as e:  # the claim was not ours any more
                    sys.stderr.write("%s: consume of %s refused after our "
                                     "claim: %s\n" % (who, job.uuid, e))
                    return 1
                got += 1
                ran += 1
            if got == 0:
                time.sleep(0.05)
    board.close()
    sys.stderr.write("%s: ran %d jobs\n" % (who, ran))
    return 0


def read_lines(path):
    try:
        with open(path) as f:
            return [l.strip() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def cmd_audit(args):
    posted, logs, cur = {}, {}, None
    for a in args:
        if a in ("--posted", "--logs"):
            cur = posted if a == "--posted" else logs
            continue
        name, path = a.split("=", 1)
        cur.setdefault(name, []).extend(read_lines(path))
    origin = {}
    bad = 0
    for name, uuids in posted.items():
        for u in uuids:
            if u in origin:
                print("posted twice: %s (%s, %s)" % (u, origin[u], name))
                bad += 1
            origin[u] = name
    ran = {}
    table = {}
    dups = 0
    unknown = 0
    for name, uuids in logs.items():
        for u in uuids:
            if u in ran:
                dups += 1
                if dups <= 10:
                    print("RUN TWICE: %s (posted by %s; ran by %s and %s)"
                          % (u, origin.get(u, "?"), ran[u], name))
            elif u not in origin:
                unknown += 1
                if unknown <= 10:
                    print("ran but never posted: %s (by %s)" % (u, name))
            else:
                ran[u] = name
                k = (origin[u], name)
                table[k] = table.get(k, 0) + 1
    lost = [u for u in origin if u not in ran]
    for u in lost[:10]:
        print("LOST (never ran): %s (posted by %s)" % (u, origin[u]))
    print("posted %d, ran %d distinct; %d run twice, %d lost, %d unknown"
          % (len(origin), len(ran), dups, len(lost), unknown))
    runners = sorted(logs)
    print("%-10s" % "posted\\ran" + "".join("%9s" % r for r in runners))
    for p in sorted(posted):
        print("%-10s" % p +
              "".join("%9d" % table.get((p, r), 0) for r in runners))
    return 1 if (bad or dups or lost or unknown) else 0


def cmd_seqs(sock, ns, path):
    import msgpack
    import redis
    r = redis.Redis(unix_socket_path=sock)
    for u in read_lines(path):
        m = r.get("%s:%s.posted" % (ns, u))
        if m is not None:
            print(u, int(m))
            continue
        p = r.hget("%s:listings" % ns, u)
        if p is not None:
            print(u, msgpack.unpackb(p, strict_map_key=False,
                                     ext_hook=lambda c, d: None)["sequence"])
        else:
            print(u, "-")
    return 0


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "post":
        return cmd_post(*args)
    if cmd == "claim":
        return cmd_claim(*args)
    if cmd == "audit":
        return cmd_audit(args)
    if cmd == "seqs":
        return cmd_seqs(*args)
    sys.stderr.write("unknown command %s\n" % cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
