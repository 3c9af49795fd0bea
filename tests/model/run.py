#!/usr/bin/python3
"""Random operations on a real board and on its model (model.py), compared
after every step.

    run.py [--seed N] [--sequences K] [--steps S] [--procs P] [--kills]
           [--board-dir DIR] [--verbose]

Each sequence is made from its seed: SEED, SEED+1, ... A sequence is a
list of abstract operations (post, batch post, claim, claim-next, claim
many, extend, abandon, retry, trash, consume with outcome and result,
consume-and-claim-next, cancel, run-now, dead-letter requeue, repost as
a new job, purge and removal by uuid, the retry
policy, the retention, schedules added, removed and ticked, pause and
resume of a name or of the board, caps of names, the clocks moved, and with --procs
worker processes killed and started again). The claim-nexts are given
names at random (exact ones and prefixes, from names that share a
prefix) or none. Operations name jobs
by index into the jobs seen so far, so a sequence means the same when
steps are taken out of it: a failing sequence is shrunk (steps removed
while it still fails) and printed with its seed, for `--replay`.

The board is driven through the Python binding (python/jobboard), with
--procs P by P worker processes (each its own handle, each op sent to one
of them and answered before the next), and read by the controller after
every step: the jobs in listing order with their state, owner, attempts,
due time, unique key and reason; both counts; the stats (by state, dead
letters, the counters of posts and of history records by outcome); the
dead letters; the schedules; the history with outcome and result; the
names recorded with their pause and cap, the last change of either,
their ready jobs and claims held against a cap,
and whether the board is paused; and check. With --kills a worker is also killed (SIGKILL) in the middle of an
operation at a random moment: the board must then equal the model with
that operation wholly done or wholly not done, and a later salvage must
hold what the model holds.

The clocks are the test's (fakeclock.c, preloaded: this script starts
itself again under it): the model and the board read the same instant.
Exit 0 when every sequence agreed; 1 with the seed and the shortest
failing sequence otherwise.
"""

import argparse
import json
import mmap
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as M  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# ------------------------------------------------------------ the clocks


class Clock:
    """The two clocks of fakeclock.c, in a file every process maps (the
    one $JB_FAKECLOCK names: a process maps it at its first reading)."""

    def __init__(self, path):
        self.path = path
        self.f = open(path, "r+b")
        self.m = mmap.mmap(self.f.fileno(), 16)

    def set(self, wall, boot):
        self.m[0:16] = struct.pack("qq", wall, boot)


# ----------------------------------------------- the board under test

def status_of(exc):
    """The status name of an exception of the binding."""
    from jobboard import errors as E
    for cls, name in ((E.NotFoundError, "notfound"),
                      (E.ClaimedError, "claimed"),
                      (E.NotOwnerError, "notowner"),
                      (E.ExistsError, "exists"),
                      (E.InvalidError, "invalid"),
                      (E.NotDueError, "notdue")):
        if isinstance(exc, cls):
            return name
    raise exc


def sut_do(board, op, me):
    """Run one operation on `board` (a jobboard.Board) and answer a dict:
    st (status name) and what the board gave back. `me`: this process's
    name for bound claims."""
    kind = op["op"]
    try:
        if kind == "post":
            u = board.post(op["name"], {"k": op.get("n", 0)},
                           priority=M.PRIORITIES[op["prio"]],
                           delay=op["delay_ms"] / 1000 if op["delay_ms"]
                           else None,
                           unique_key=op["unique"],
                           max_attempts=op["max_attempts"] or None,
                           max_snoozes=op.get("max_snoozes") or None,
                           expires=op["expires_ms"] / 1000
                           if op.get("expires_ms") else None,
                           expires_dead=op.get("expires_dead", False))
            return {"st": "ok", "uuid": u, "seq": board.get(u).sequence}
        if kind == "batch":
            us = board.post_many([
                dict(name=p["name"], details={"k": p.get("n", 0)},
                     priority=M.PRIORITIES[p["prio"]],
                     unique_key=p["unique"]) for p in op["posts"]])
            return {"st": "ok", "uuids": us,
                    "seqs": [board.get(u).sequence for u in us]}
        if kind == "claim":
            c = board.claim(op["uuid"], op["who"], lease=op["lease"],
                            bind=op["bind"])
            return {"st": "ok", "token": c.token}
        if kind == "claim_next":
            c = board.claim_next(op["who"], lease=op["lease"],
                                 bind=op["bind"], names=op.get("names"))
            if c is None:
                return {"st": "notfound"}
            return {"st": "ok", "uuid": c.uuid, "token": c.token}
        if kind == "claim_many":
            cs = board.claim_next_many(op["who"], op["max"],
                                       lease=op["lease"], bind=op["bind"],
                                       names=op.get("names"))
            return {"st": "ok", "uuids": [c.uuid for c in cs],
                    "tokens": [c.token for c in cs]}
        if kind == "extend":
            board.extend(op["uuid"], op["who"], op["lease"])
            return {"st": "ok"}
        if kind == "progress":
            board.progress(op["uuid"], op["who"], op["percent"],
                           op["message"], token=op["token"])
            return {"st": "ok"}
        if kind == "abandon":
            board.abandon(op["uuid"], op["who"])
            return {"st": "ok"}
        if kind == "snooze":
            board.snooze(op["uuid"], op["who"], op["delay_ms"] / 1000,
                         token=op["token"])
            return {"st": "ok"}
        if kind == "retry":
            r = board.retry(op["uuid"], op["who"], reason=op["reason"],
                            delay=(op["delay_ms"] / 1000
                                   if op["mode"] == "delay" else None),
                            dead=op["mode"] == "dead")
            due = 0
            if not r.dead and op["mode"] == "backoff":
                due = board.get(op["uuid"]).not_before
                due = round(due * 1e6) if due else 0
            return {"st": "ok", "dead": r.dead, "due": due}
        if kind == "trash":
            board.trash(op["uuid"], op["who"])
            return {"st": "ok"}
        if kind == "consume":
            board.consume(op["uuid"], op["who"], result=op["result"],
                          failed=op["failed"])
            return {"st": "ok"}
        if kind == "consume_next":
            c = board.consume_and_claim_next(op["uuid"], op["who"],
                                             result=op["result"],
                                             failed=op["failed"],
                                             names=op.get("names"))
            if c is None:
                return {"st": "ok", "uuid": None}
            return {"st": "ok", "uuid": c.uuid, "token": c.token}
        if kind == "cancel":
            board.cancel_job(op["uuid"], force=op["force"])
            return {"st": "ok"}
        if kind == "pause":
            board.pause(op["name"])
            return {"st": "ok"}
        if kind == "resume":
            board.resume(op["name"])
            return {"st": "ok"}
        if kind == "cap":
            board.set_cap(op["name"], op["cap"])
            return {"st": "ok"}
        if kind == "rate":
            board.set_rate(op["name"], op["count"], op["period_ms"] / 1000)
            return {"st": "ok"}
        if kind == "requeue":
            board.requeue(op["uuid"], keep_attempts=op["keep"])
            return {"st": "ok", "seq": board.get(op["uuid"]).sequence}
        if kind == "run_now":
            board.run_now(op["uuid"])
            return {"st": "ok"}
        if kind == "dead_rm":
            board.remove_dead(op["uuid"])
            return {"st": "ok"}
        if kind == "repost":
            u = board.repost_dead(op["uuid"], keep_attempts=op["keep"])
            return {"st": "ok", "uuid": u, "seq": board.get(u).sequence}
        if kind == "purge":
            n = board.purge_dead(before=op["before"] / 1e6
                                 if op["before"] else None)
            return {"st": "ok", "n": n}
        if kind == "policy":
            board.set_retry_policy(max_attempts=op["max_attempts"],
                                   backoff=op["backoff_ms"] / 1000,
                                   backoff_max=op["backoff_max_ms"] / 1000)
            return {"st": "ok"}
        if kind == "retention":
            r = board.set_retention(**op["set"])
            return {"st": "ok", "r": tuple(r[:4])}
        if kind == "sched_add":
            board.add_schedule(op["name"], "job-" + op["name"],
                               every=op["every_ms"] / 1000,
                               overlap=op.get("overlap", "queue"))
            return {"st": "ok"}
        if kind == "sched_rm":
            board.remove_schedule(op["name"])
            return {"st": "ok"}
        if kind == "check_record":
            return {"st": "ok" if board.check(record=True).ok else "corrupt"}
        if kind == "tick":
            before = {j.uuid for j in board.iterate()}
            n = board.tick()
            new = [j for j in board.iterate() if j.uuid not in before]
            return {"st": "ok", "n": n,
                    "posted": sorted([(j.unique_key, j.uuid, j.sequence)
                                      for j in new], key=lambda t: t[2])}
        raise ValueError("unknown op %r" % kind)
    except Exception as e:  # noqa: BLE001 - the binding's errors
        return {"st": status_of(e), "msg": str(e)}


# ---------------------------------------------------- worker processes

def durability():
    """The durability every handle of the run uses (--durability), and in
    interval a flush every 20 ms, so that records and pins move during a
    run."""
    d = os.environ.get("JB_MODEL_DURABILITY", "normal")
    return {"durability": d,
            "flush_interval": 0.02 if d == "interval" else None}


def worker_main(path):
    """A worker: one handle, ops from stdin, answers on stdout."""
    import jobboard
    board = jobboard.Board(path, history_max=Run.HISTORY_MAX, **durability())
    me = os.environ.get("JB_MODEL_PROC", "?")
    for line in sys.stdin:
        op = json.loads(line)
        r = sut_do(board, op, me)
        sys.stdout.write(json.dumps(r) + "\n")
        sys.stdout.flush()


class Worker:
    def __init__(self, path, index):
        env = dict(os.environ, JB_MODEL_PROC=str(index))
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            text=True, bufsize=1)
        self.index = index

    def do(self, op):
        self.p.stdin.write(json.dumps(op) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("worker %d died" % self.index)
        return json.loads(line)

    def start(self, op):
        self.p.stdin.write(json.dumps(op) + "\n")
        self.p.stdin.flush()

    def kill(self):
        try:
            self.p.kill()
        except ProcessLookupError:
            pass
        self.p.wait()

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        self.p.wait()


# ------------------------------------------------------- observations

def observe_board(board):
    jobs = []
    for j in board.iterate():
        nb = round(j.not_before * 1e6) if j.not_before else 0
        prog = (round(j.progress.percent * 10), j.progress.message) \
            if j.progress else None
        dl = round(j.deadline * 1e6) if j.deadline else 0
        jobs.append((j.uuid, j.name, M.PRIORITIES[int(j.priority)],
                     j.state.name, j.owner, j.attempts, nb, j.unique_key,
                     j.max_attempts, reason_class(j.last_reason), prog,
                     j.snoozes, j.max_snoozes, dl))
    st = board.stats()
    dead = sorted((d.uuid, d.cause.name, d.attempts, reason_class(d.reason))
                  for d in board.dead_letters())
    scheds = sorted((s.name, round(s.next_run * 1e6) if s.next_run else 0,
                     s.runs, round(s.last_run * 1e6) if s.last_run else 0,
                     s.overlap.name.lower(), s.skipped)
                    for s in board.schedules())
    hist = [(c.uuid, c.end.name, c.result) for c in board.history()]
    queues = [(q.name, q.paused, round(q.changed * 1e6) if q.changed else 0,
               q.ready, q.cap or 0, q.held, q.cap_each,
               q.rate or 0, round(q.period * 1000) if q.rate else 0,
               round(q.next_token * 1e6) if q.rate else 0, q.rate_each)
              for q in board.queues()]
    ret = board.retention()
    chk = board.check()
    lc = board.last_check()
    return {
        "jobs": jobs,
        "count": board.count(),
        "count_unclaimed": board.count(only_unclaimed=True),
        "stats": {"jobs": st.jobs,
                  "by_state": {str(k).upper(): v
                               for k, v in st.by_state.items()},
                  "dead_letters": st.dead_letters,
                  "posted": st.events_total.get(_ev("POSTED"), 0),
                  "snoozed": st.events_total.get(_ev("SNOOZED"), 0),
                  "deadline": st.events_total.get(_ev("DEADLINE"), 0),
                  "ends": {(k.name if hasattr(k, "name") else str(k)).upper():
                           v for k, v in st.ends_total.items() if v}},
        "dead": dead,
        "schedules": scheds,
        "history": hist,
        "queues": queues,
        "board_paused": board.board_paused(),
        "cap_prefixes": board.cap_prefixes(),
        "rate_prefixes": board.rate_prefixes(),
        "retention": (ret.history_max, ret.history_max_age, ret.dead_max,
                      ret.dead_max_age),
        "check": (chk.ok, chk.problems),
        "last_check": (lc.problems, lc.moved, lc.jobs, round(lc.time * 1e6))
        if lc else None,
    }


def _ev(name):
    from jobboard import EventType
    return EventType[name]


def reason_class(reason):
    """Reasons the board words itself (a lapse) are compared by kind."""
    if reason is None:
        return None
    if "lapsed" in reason:
        return "<lapsed>"
    return reason


def observe_model(m):
    jobs = []
    for j in m.order():
        why = m.lapse_why(j)
        state = "CLAIMED" if j.claimed() and not why else "UNCLAIMED"
        jobs.append((j.uuid, j.name, M.PRIORITIES[j.prio], state,
                     j.owner if state == "CLAIMED" else None, j.attempts,
                     j.not_before, j.unique, j.max_attempts,
                     "<lapsed>" if (j.reason or "").startswith("lapsed")
                     else j.reason, j.progress, j.snoozes, j.max_snoozes,
                     j.deadline))
    by_state = {"UNCLAIMED": 0, "CLAIMED": 0, "DELAYED": 0}
    for j in m.jobs.values():
        if j.claimed() and not m.lapse_why(j):
            by_state["CLAIMED"] += 1
        elif j.not_before and not j.claimed():
            by_state["DELAYED"] += 1
        else:
            by_state["UNCLAIMED"] += 1
    dead = sorted((u, cause, j.attempts,
                   "<lapsed>" if (j.reason or "").startswith("lapsed")
                   else j.reason)
                  for u, (j, cause, _) in m.dead.items())
    scheds = sorted((n, s["next"], s["runs"], s["last"], s["overlap"],
                     s["skipped"])
                    for n, s in m.schedules.items())
    hist = [(u, e, r) for (u, e, r, _) in reversed(m.history)]
    queues = [(n, q[0], q[1], m.ready_of(n), q[2],
               m.held(n) if q[2] else 0, q[3], q[4], q[5], m.next_token(n),
               q[7])
              for n, q in sorted(m.queues.items())]
    hmax, hage, dmax, dage = m.bounds()
    return {
        "jobs": jobs,
        "count": len(m.jobs),
        "count_unclaimed": sum(1 for j in m.jobs.values() if m.claimable(j)),
        "stats": {"jobs": len(m.jobs), "by_state": by_state,
                  "dead_letters": len(m.dead), "posted": m.posted_total,
                  "snoozed": m.snoozed_total, "deadline": m.expirations,
                  "ends": dict(m.ends)},
        "dead": dead,
        "schedules": scheds,
        "history": hist,
        "queues": queues,
        "board_paused": m.board_paused,
        "cap_prefixes": [(p + "*", c) for p, c in m.capeach],
        "rate_prefixes": [(p + "*", c, ms / 1e3) for p, c, ms in m.rateeach],
        "retention": (hmax, hage / 1e6 if hage is not None else None, dmax,
                      dage / 1e6 if dage is not None else None),
        "check": (True, 0),
        "last_check": m.last_check,
    }


def differences(board_view, model_view):
    out = []
    for k in model_view:
        b, m = board_view[k], model_view[k]
        if b == m:
            continue
        if isinstance(b, list) and isinstance(m, list):
            i = next((i for i, (x, y) in enumerate(zip(b, m)) if x != y),
                     min(len(b), len(m)))
            out.append("%s: %d entries on the board, %d in the model; the "
                       "first difference at [%d]:\n    board %r\n    "
                       "model %r" % (k, len(b), len(m), i,
                                     b[i] if i < len(b) else "(none)",
                                     m[i] if i < len(m) else "(none)"))
        else:
            out.append("%s:\n    board %r\n    model %r" % (k, b, m))
    return out


# --------------------------------------------------------- generation

# Job names share a prefix, so that a claim-next's names ("a.*") take some
# and not others; the schedules' jobs are "job-s1" and "job-s2".
NAMES = ["a.x", "a.y", "b"]
WHOS = ["w1", "w2", "w3"]
# What claim-next is given: exact names, prefixes ("*": every name), one
# never posted; None (no names) the most often.
CHOOSE = ["a.x", "a.y", "b", "a.*", "job-*", "*", "zz"]
# What pause and resume name: the names posted, a schedule's, one never
# posted (refused: not found), a prefix (refused: invalid), the board.
PAUSE = ["a.x", "a.y", "b", "job-s1", "zz", "a.*", None]
# What cap names: as pause, but a cap is always a name's or a prefix's
# (each name under it capped on its own).
CAP = [n for n in PAUSE if n is not None] + ["*", "job-*", "a.x*"]
# What rate limits name: the names posted (often), one never posted, and
# prefixes (each name under one limited on its own; "a.x*" under "a.*").
RATE = ["a.x", "a.x", "a.y", "b", "b", "zz", "a.*", "a.*", "a.x*", "*"]


def gen_names(rng):
    if rng.random() < 0.5:
        return None
    return rng.sample(CHOOSE, rng.randrange(1, 3))


def gen_op(rng, procs):
    """One abstract operation: jobs and owners are indexes."""
    r = rng.random()
    proc = rng.randrange(procs + 1) if procs else 0
    lease_kind = rng.choice(["none", "none", "short", "long", "bind"])
    common = {"proc": proc, "job": rng.randrange(1 << 30),
              "who": rng.choice(WHOS), "lease_kind": lease_kind}
    table = [
        (14, lambda: {"op": "post", "name": rng.choice(NAMES),
                      "prio": rng.randrange(5),
                      "delay_ms": rng.choice([0, 0, 0, 30000, 90000]),
                      "unique": rng.choice([None, None, "k1", "k2"]),
                      "max_attempts": rng.choice([0, 0, 1, 2, 3]),
                      "max_snoozes": rng.choice([0, 0, 1, 2]),
                      "expires_ms": rng.choice([0, 0, 0, 10000, 60000]),
                      "expires_dead": rng.random() < 0.3}),
        (3, lambda: {"op": "batch", "posts": [
            {"name": rng.choice(NAMES), "prio": rng.randrange(5),
             "unique": rng.choice([None, None, None, "k1", "k3"])}
            for _ in range(rng.randrange(1, 4))]}),
        (8, lambda: {"op": "claim"}),
        (12, lambda: {"op": "claim_next", "names": gen_names(rng)}),
        (3, lambda: {"op": "claim_many", "max": rng.randrange(1, 4),
                     "names": gen_names(rng)}),
        (3, lambda: {"op": "extend", "lease_ms": rng.choice([20000, 200000])}),
        (6, lambda: {"op": "abandon"}),
        (5, lambda: {"op": "snooze",
                     "delay_ms": rng.choice([0, 0, 20000, 90000, -1000]),
                     "stale": rng.random() < 0.15}),
        (5, lambda: {"op": "progress",
                     "percent": rng.choice([0, 12.34, 50, 99.95, 100, 100.5,
                                            -1]),
                     "message": rng.choice([None, "", "step 2", "x" * 200,
                                            "x" * 201, "two\nlines"]),
                     "stale": rng.random() < 0.15}),
        (6, lambda: {"op": "retry", "mode": rng.choice(["delay", "backoff",
                                                        "dead"]),
                     "delay_ms": rng.choice([0, 20000]),
                     "reason": rng.choice([None, "oops"])}),
        (3, lambda: {"op": "trash"}),
        (10, lambda: {"op": "consume", "failed": rng.random() < 0.3,
                      "result": rng.choice([None, {"r": 1}, {}])}),
        (3, lambda: {"op": "consume_next", "failed": rng.random() < 0.3,
                     "result": rng.choice([None, {"r": 2}]),
                     "names": gen_names(rng)}),
        (3, lambda: {"op": "cancel", "force": rng.random() < 0.3}),
        (3, lambda: {"op": "requeue", "keep": rng.random() < 0.3}),
        (1, lambda: {"op": "purge", "all": rng.random() < 0.5}),
        (3, lambda: {"op": "run_now", "pick": rng.random() < 0.7}),
        (2, lambda: {"op": "dead_rm", "pick": rng.random() < 0.7}),
        (2, lambda: {"op": "repost", "pick": rng.random() < 0.7,
                     "keep": rng.random() < 0.3}),
        (1, lambda: {"op": "policy", "max_attempts": rng.choice([0, 2, 4]),
                     "backoff_ms": rng.choice([1000, 5000]),
                     "backoff_max_ms": rng.choice([5000, 60000])}),
        (3, lambda: {"op": "retention", "set": {
            k: v for k, v in (
                ("history_max", rng.choice([None, None, 3, 8, 20, "none",
                                            "default"])),
                ("history_max_age", rng.choice([None, None, 60, 300, "none",
                                                "default"])),
                ("dead_max", rng.choice([1, 1, 2, 5, "none", "default"])),
                ("dead_max_age", rng.choice([None, 30, 30, 200, "none",
                                             "default"])))
            if v is not None}}),
        (2, lambda: {"op": "sched_add", "name": rng.choice(["s1", "s2"]),
                     "every_ms": rng.choice([10000, 60000]),
                     "overlap": rng.choice(["queue", "skip"])}),
        (1, lambda: {"op": "sched_rm", "name": rng.choice(["s1", "s2"])}),
        (3, lambda: {"op": "tick"}),
        (1, lambda: {"op": "check_record"}),
        (3, lambda: {"op": "pause", "name": rng.choice(PAUSE)}),
        (3, lambda: {"op": "resume", "name": rng.choice(PAUSE)}),
        (3, lambda: {"op": "cap", "name": rng.choice(CAP),
                     "cap": rng.choice([0, 1, 1, 2, 3])}),
        (3, lambda: {"op": "rate", "name": rng.choice(RATE),
                     "count": rng.choice([0, 1, 1, 2, 3]),
                     "period_ms": rng.choice([0, 1000, 20000, 60000])}),
        (7, lambda: {"op": "advance",
                     "ms": rng.choice([1000, 15000, 45000, 120000])}),
    ]
    if procs:
        table.append((2, lambda: {"op": "kill",
                                  "proc": rng.randrange(1, procs + 1)}))
    total = sum(w for w, _ in table)
    x = r * total
    for w, f in table:
        if x < w:
            op = f()
            break
        x -= w
    for k, v in common.items():
        op.setdefault(k, v)
    if procs and op["proc"] and op["op"] in KILLABLE and rng.random() < 0.3:
        # SIGKILL the worker this long after the op is sent: before, in
        # or after its write transaction.
        op["kill_us"] = rng.choice([0, 1000, 3000, 6000, 12000, 25000])
    return op


# Operations a worker may be killed in: the board must then hold them
# wholly or not at all.
KILLABLE = {"post", "batch", "claim", "claim_next", "claim_many", "abandon",
            "snooze",
            "retry", "trash", "consume", "consume_next", "cancel",
            "requeue", "pause", "resume", "cap", "rate", "run_now",
            "dead_rm", "check_record", "repost"}
# Of those, the writes that append no event to the change log: whether
# one committed is told by the board's state alone.
UNLOGGED = {"pause", "resume", "cap", "rate", "run_now", "dead_rm",
            "check_record"}


# ---------------------------------------------------------- execution

class Failure(Exception):
    pass


class Run:
    # A small history, so that sequences reach its bound and prune it.
    HISTORY_MAX = 12
    SALVAGE_EVERY = 40

    def __init__(self, ops, procs, root, verbose=False):
        self.kills = {"done": 0, "undone": 0}
        self.ops = ops
        self.procs = procs
        self.root = root
        self.verbose = verbose

    def lease_args(self, op):
        k = op["lease_kind"]
        if k == "short":
            return 10000, False       # ms, bind
        if k == "long":
            return 1_000_000, False
        if k == "bind":
            return 0, True
        return 0, False

    def run(self):
        import jobboard
        d = tempfile.mkdtemp(prefix="seq.", dir=self.root)
        try:
            clock = Clock(os.environ["JB_FAKECLOCK"])
            wall, boot = 1_900_000_000 * M.SEC, 1000 * M.SEC
            clock.set(wall, boot)
            path = os.path.join(d, "board")
            board = jobboard.Board(path, create=True,
                                   history_max=self.HISTORY_MAX, **durability())
            m = M.Model(wall, boot, history_max=self.HISTORY_MAX)
            workers = {i: Worker(path, i) for i in range(1, self.procs + 1)}
            gen = {i: 0 for i in workers}
            known = []  # every uuid seen, in the order first seen
            try:
                for i, op in enumerate(self.ops):
                    m = self.step(i, op, board, m, workers, gen, known,
                                  clock)
                    bv, mv = observe_board(board), observe_model(m)
                    if self.verbose:
                        for j in bv["jobs"]:
                            print("      %s" % (j,))
                    diff = differences(bv, mv)
                    if diff:
                        raise Failure("after step %d %s:\n  %s"
                                      % (i, describe(op), "\n  ".join(diff)))
                    if (i + 1) % self.SALVAGE_EVERY == 0 or \
                            i + 1 == len(self.ops):
                        self.salvage(board, m, d, i)
            finally:
                for w in workers.values():
                    w.close()
                board.close()
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def salvage(self, board, m, d, i):
        """Salvage the board (no process writes it meanwhile: every op is
        answered) and compare the copy with what the model holds."""
        import jobboard
        dst = os.path.join(d, "salvaged-%d" % i)
        jobboard.salvage(board.path, dst)
        with jobboard.Board(dst, durability="none") as s:
            got = {
                "jobs": sorted((j.uuid, j.name, M.PRIORITIES[int(j.priority)],
                                j.state.name, j.attempts,
                                round(j.not_before * 1e6) if j.not_before
                                else 0, j.unique_key, j.max_attempts)
                               for j in s.iterate()),
                "dead": sorted((x.uuid, x.cause.name, x.attempts)
                               for x in s.dead_letters()),
                "schedules": sorted((x.name, round(x.next_run * 1e6)
                                     if x.next_run else 0, x.runs,
                                     round(x.last_run * 1e6)
                                     if x.last_run else 0)
                                    for x in s.schedules()),
                "policy": tuple(s.retry_policy()),
                # Every job's name is recorded (a claim-next by a prefix
                # finds names there), and no name the board never had.
                "names": _names_check(s, m),
                "check": s.check().ok,
                # the copy is a new board: no check recorded yet
                "last_check": s.last_check(),
            }
        shutil.rmtree(dst, ignore_errors=True)
        want = {
            "jobs": sorted((j.uuid, j.name, M.PRIORITIES[j.prio], "UNCLAIMED",
                            j.attempts, j.not_before, j.unique,
                            j.max_attempts) for j in m.jobs.values()),
            "dead": sorted((u, cause, j.attempts)
                           for u, (j, cause, _) in m.dead.items()),
            "schedules": sorted((n, x["next"], x["runs"], x["last"])
                                for n, x in m.schedules.items()),
            "policy": (m.policy[0], m.policy[1] / 1000, m.policy[2] / 1000),
            "names": ([], []),
            "check": True,
            "last_check": None,
        }
        # A due time already past is no due time: salvage may copy a due
        # job as ready (it is claimable either way).
        for view in (got, want):
            view["jobs"] = [j[:5] + (j[5] if j[5] > m.wall else 0,) + j[6:]
                            for j in view["jobs"]]
        diff = differences(got, want)
        if diff:
            raise Failure("salvage after step %d:\n  %s"
                          % (i, "\n  ".join(diff)))

    def step(self, i, op, board, m, workers, gen, known, clock):
        kind = op["op"]
        if self.verbose:
            print("  step %d: %s" % (i, describe(op)), flush=True)
        if kind == "advance":
            m.advance(op["ms"] * 1000)
            clock.set(m.wall, m.boot)
            return m
        if kind == "kill":
            self.restart(op["proc"], board, m, workers, gen)
            return m
        proc = op["proc"] if op["proc"] in workers else 0
        holder = (proc, gen.get(proc, 0))
        lease_ms, bind = self.lease_args(op)
        c = dict(op)
        c["lease"] = lease_ms / 1000 if lease_ms else None
        c["bind"] = bind
        if known:
            c["uuid"] = known[op["job"] % len(known)]
        else:
            c["uuid"] = "00000000-0000-7000-8000-000000000000"
        if kind == "extend":
            c["lease"] = op["lease_ms"] / 1000
        if kind in ("progress", "snooze"):
            # The claim's token, or (stale) one it does not hold.
            j = m.jobs.get(c["uuid"])
            c["token"] = (j.token if j and j.token else 0) + \
                (1000 if op["stale"] else 0)
        if kind == "purge":
            c["before"] = 0 if op["all"] else m.wall
        # run-now and dead-letter removal mostly name a job they apply to
        # (a delayed job, a dead letter), by index into those the model
        # holds; else any job seen.
        pool = []
        if kind == "run_now" and op.get("pick"):
            pool = [j.uuid for j in sorted(m.jobs.values(), key=lambda j: j.seq)
                    if j.not_before and not j.claimed()]
        elif kind in ("dead_rm", "repost") and op.get("pick"):
            pool = sorted(m.dead)
        if pool:
            c["uuid"] = pool[op["job"] % len(pool)]
        if proc and op.get("kill_us") is not None:
            return self.killed_in(i, op, c, board, m, workers, gen, known,
                                  lease_ms, holder if bind else None, holder)
        r = workers[proc].do(c) if proc else sut_do(board, c, "0")
        exp = self.model_step(kind, c, r, m, known, lease_ms,
                              holder if bind else None, holder)
        if exp[0] != r["st"]:
            raise Failure("step %d %s: the board answered %s (%s), the "
                          "model %s (%s)" % (i, describe(op), r["st"],
                                             r.get("msg", r), exp[0],
                                             exp[1]))
        return m

    def restart(self, proc, board, m, workers, gen):
        """SIGKILL worker `proc` and start a new one (a new process: the
        killed one's bound claims lapse)."""
        workers[proc].kill()
        m.kill((proc, gen[proc]))
        gen[proc] += 1
        workers[proc] = Worker(w_path(board), proc)

    def killed_in(self, i, op, c, board, m, workers, gen, known, lease_ms,
                  bind_holder, holder):
        """Send `op` to its worker, SIGKILL it kill_us later, and take the
        model that equals the board: the op wholly done, or not at all."""
        w = workers[op["proc"]]
        # Every write appends to the change log in its transaction: the
        # log's end tells whether the op committed (a claim whose holder
        # was killed reads as no claim: the board alone cannot tell).
        before = board.log_bounds()[1]
        # The op ran while its worker lived: the "done" copy applies it to
        # the model as it was, and only then marks the worker gone.
        base = m.clone()
        w.start(c)
        time.sleep(op["kill_us"] / 1e6)
        self.restart(op["proc"], board, m, workers, gen)
        committed = board.log_bounds()[1] != before
        seen = observe_board(board)
        undone = m.clone()
        if not committed:
            diff = differences(seen, observe_model(undone))
            if not diff:
                self.kills["undone"] += 1
                return undone
            if op["op"] not in UNLOGGED:
                raise Failure("step %d %s, its worker killed %d us after, "
                              "before its commit: the board is not as "
                              "without it:\n  %s"
                              % (i, describe(op), op["kill_us"],
                                 "\n  ".join(diff)))
        done = base
        known2 = list(known)
        r = infer_answer(op["op"], c, board, done, holder, before)
        try:
            # Its answer is not compared: a refused op writes nothing, but
            # a same-owner re-claim answers "claimed" and commits its
            # refresh; the state after the model's step is what the board
            # must show either way.
            self.model_step(op["op"], c, r, done, known2, lease_ms,
                            bind_holder, holder)
            done.kill(holder)
            diff = differences(seen, observe_model(done))
        except (Failure, AssertionError) as e:
            diff = [str(e)]
        if not diff:
            known[:] = known2
            self.kills["done"] += 1
            return done
        raise Failure("step %d %s, its worker killed %d us after, after "
                      "its commit: the board is not as with it:\n  %s"
                      % (i, describe(op), op["kill_us"], "\n  ".join(diff)))

    def model_step(self, kind, c, r, m, known, lease_ms, holder, me):
        ok = r["st"] == "ok"
        if kind == "post":
            if ok:
                known.append(r["uuid"])
            return m.post(r.get("uuid"), r.get("seq"), c["name"], c["prio"],
                          c["delay_ms"], c["unique"], c["max_attempts"],
                          c.get("max_snoozes", 0), c.get("expires_ms", 0),
                          c.get("expires_dead", False))
        if kind == "batch":
            exp = m.post_batch_check(c["posts"])
            if exp[0] == "ok" and ok:
                for p, u, s in zip(c["posts"], r["uuids"], r["seqs"]):
                    known.append(u)
                    m.post(u, s, p["name"], p["prio"], 0, p["unique"], 0)
            return exp
        if kind == "claim":
            return m.claim(c["uuid"], c["who"], r.get("token", m.last_token + 1),
                           lease_ms, holder)
        if kind == "claim_next":
            exp = m.claim_next(r.get("uuid"), c["who"],
                               r.get("token", m.last_token + 1), lease_ms,
                               holder, me, c.get("names"))
            if ok and exp[1] != r["uuid"]:
                raise Failure("claim-next took %s, the model %s"
                              % (r["uuid"], exp[1]))
            return exp
        if kind == "claim_many":
            got = r.get("uuids", [])
            want = []
            before = m.checkpoint()
            for _ in range(c["max"]):
                j = m.claim_next_pick(me, c.get("names"))
                if j is None:
                    break
                tok = r["tokens"][len(want)] if len(want) < len(got) else \
                    m.last_token + 1
                m._claim(j, c["who"], tok, lease_ms, holder)
                want.append(j.uuid)
            if not want:
                m.took_nothing(before)
            if want != got:
                raise Failure("claim-many took %s, the model %s"
                              % (got, want))
            return "ok", None
        if kind == "extend":
            return m.extend(c["uuid"], c["who"], c["lease_ms"])
        if kind == "progress":
            return m.progress(c["uuid"], c["who"], c["token"], c["percent"],
                              c["message"])
        if kind == "abandon":
            return m.abandon(c["uuid"], c["who"])
        if kind == "snooze":
            return m.snooze(c["uuid"], c["who"], c["token"], c["delay_ms"])
        if kind == "retry":
            return m.retry(c["uuid"], c["who"], c["mode"], c["delay_ms"],
                           c["reason"], r.get("due", 0))
        if kind == "trash":
            return m.trash(c["uuid"], c["who"])
        if kind == "consume":
            return m.consume(c["uuid"], c["who"], c["failed"], c["result"])
        if kind == "consume_next":
            exp = m.consume(c["uuid"], c["who"], c["failed"], c["result"])
            if exp[0] == "ok":
                nxt = m.claim_next(r.get("uuid"), c["who"],
                                   r.get("token", m.last_token + 1), 0, None,
                                   me, c.get("names"), alone=False)
                if nxt[1] != r.get("uuid"):
                    raise Failure("consume-and-claim-next took %s, the "
                                  "model %s" % (r.get("uuid"), nxt[1]))
            return exp
        if kind == "cancel":
            return m.cancel(c["uuid"], c["force"])
        if kind in ("pause", "resume"):
            return m.set_paused(c["name"], kind == "pause")
        if kind == "cap":
            return m.set_cap(c["name"], c["cap"])
        if kind == "rate":
            return m.set_rate(c["name"], c["count"], c["period_ms"])
        if kind == "requeue":
            return m.requeue(c["uuid"], c["keep"], r.get("seq"))
        if kind == "run_now":
            return m.run_now(c["uuid"])
        if kind == "dead_rm":
            return m.remove_dead(c["uuid"])
        if kind == "repost":
            exp = m.repost(c["uuid"], c["keep"], r.get("uuid"), r.get("seq"))
            if exp[0] == "ok" and ok:
                known.append(r["uuid"])
            return exp
        if kind == "purge":
            exp = m.purge(c["before"] or (1 << 62))
            if ok and exp[1] != r["n"]:
                raise Failure("purge removed %d, the model %d"
                              % (r["n"], exp[1]))
            return exp
        if kind == "policy":
            return m.set_policy(c["max_attempts"], c["backoff_ms"],
                                c["backoff_max_ms"])
        if kind == "retention":
            conv = {}
            for k, v in c["set"].items():
                conv[k] = (0 if v == "default" else m.NONE if v == "none"
                           else v * 1000 if k.endswith("_age") else v)
            return m.set_retention(**conv)
        if kind == "sched_add":
            return m.schedule_add(c["name"], c["every_ms"],
                                  "job-" + c["name"],
                                  c.get("overlap", "queue"))
        if kind == "sched_rm":
            return m.schedule_remove(c["name"])
        if kind == "check_record":
            return m.check_record()
        if kind == "tick":
            runs = m.tick_runs()
            posted = {k: (u, s) for k, u, s in r.get("posted", [])}
            apply = []
            for name, run, key in runs:
                u, s = posted.pop(key, (None, None))
                if u is not None:
                    known.append(u)
                elif key not in m.unique and not m.busy(name):
                    raise Failure("tick did not post run %s" % key)
                apply.append((name, run, key, u, s))
            if posted:
                raise Failure("tick posted runs the model has not due: %s"
                              % sorted(posted))
            return m.tick_apply(apply)
        raise ValueError(kind)


def infer_answer(kind, c, board, m, me, since):
    """What the killed worker's op would have answered, read off the board
    (uuids, sequences, due times) and its change log from `since` (a
    claim's fencing token is its CLAIMED event's sequence: a bound claim
    whose holder was killed reads as no claim), for the model's "done"
    copy."""
    tokens = {e.uuid: e.seq for e in board.watch(start=since, timeout=0.001)
              if e.type.name == "CLAIMED"}

    def snap(uuid):
        try:
            return board.get(uuid)
        except Exception:  # noqa: BLE001 - gone, or never there
            return None
    r = {"st": "ok"}
    if kind in ("post", "batch", "repost"):
        new = sorted((j for j in board.iterate()
                      if j.uuid not in m.jobs and j.uuid not in m.dead),
                     key=lambda j: j.sequence)
        if kind in ("post", "repost") and new:
            r.update(uuid=new[0].uuid, seq=new[0].sequence)
        elif kind == "batch":
            r.update(uuids=[j.uuid for j in new],
                     seqs=[j.sequence for j in new])
    elif kind in ("claim", "retry", "requeue"):
        j = snap(c["uuid"])
        if j is not None:
            r.update(token=tokens.get(c["uuid"], j.token), seq=j.sequence,
                     due=round(j.not_before * 1e6) if j.not_before else 0)
    elif kind in ("claim_next", "claim_many", "consume_next"):
        probe = m.clone()
        if kind == "consume_next":
            probe.consume(c["uuid"], c["who"], c["failed"], c["result"])
        picks = []
        for _ in range(c.get("max", 1)):
            j = probe.claim_next_pick(me, c.get("names"))
            if j is None:
                break
            probe._claim(j, c["who"], probe.last_token + 1, 0, None)
            picks.append(j.uuid)
        toks = [tokens.get(u, 0) for u in picks]
        if kind == "claim_many":
            r.update(uuids=picks, tokens=toks)
        elif picks:
            r.update(uuid=picks[0], token=toks[0])
        elif kind == "claim_next":
            r = {"st": "notfound"}
        else:
            r.update(uuid=None)
    return r


def w_path(board):
    return board.path


def describe(op):
    keep = {k: v for k, v in op.items()
            if k not in ("proc", "job", "who", "lease_kind") or
            op["op"] not in ("post", "batch", "advance", "tick", "purge",
                             "policy", "retention", "sched_add", "sched_rm",
                             "kill", "pause", "resume", "cap", "rate")}
    return json.dumps(keep, sort_keys=True)


def _names_check(s, m):
    """A salvaged copy's names: (the names of its jobs it has not
    recorded, the names recorded that the model never saw)."""
    recorded = {q.name for q in s.queues()}
    return (sorted({j.name for j in s.iterate()} - recorded),
            sorted(recorded - set(m.queues)))


# ------------------------------------------------------------ shrinking

def fails(ops, procs, root, verbose=False):
    try:
        Run(ops, procs, root, verbose).run()
        return None
    except Failure as e:
        return str(e)


def shrink(ops, procs, root, first):
    """Remove chunks of steps while the sequence still fails."""
    why = first
    n = max(1, len(ops) // 2)
    while n >= 1:
        i = 0
        changed = False
        while i < len(ops):
            cand = ops[:i] + ops[i + n:]
            w = fails(cand, procs, root) if cand else None
            if w:
                ops, why, changed = cand, w, True
            else:
                i += n
        if not changed:
            n //= 2
    return ops, why


# ----------------------------------------------------------------- main

def reexec_with_clock():
    """Start again with fakeclock.so preloaded (built by tests/model.sh)."""
    lib = os.environ.get("JB_FAKECLOCK_LIB")
    if not lib or os.environ.get("JB_MODEL_PRELOADED"):
        return
    pre = os.environ.get("LD_PRELOAD", "")
    fd, path = tempfile.mkstemp(prefix="jobboard-model-clock.")
    os.write(fd, b"\0" * 16)
    os.close(fd)
    env = dict(os.environ, JB_MODEL_PRELOADED="1", JB_FAKECLOCK=path,
               LD_PRELOAD=(pre + " " if pre else "") + lib)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--sequences", type=int, default=10)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--procs", type=int, default=0)
    ap.add_argument("--root", default=None)
    ap.add_argument("--replay", default=None,
                    help="a JSON file of operations (a printed sequence)")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--durability", default="normal",
                    choices=("full", "normal", "interval", "none"),
                    help="of every handle")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.environ["JB_MODEL_DURABILITY"] = a.durability
    if a.worker:
        worker_main(a.worker)
        return 0
    reexec_with_clock()
    if not os.environ.get("JB_MODEL_PRELOADED"):
        print("run.py: JB_FAKECLOCK_LIB must name fakeclock.so "
              "(tests/model.sh builds it)", file=sys.stderr)
        return 2
    root = tempfile.mkdtemp(prefix="jobboard-model.", dir=a.root)
    try:
        if a.replay:
            with open(a.replay) as f:
                ops = json.load(f)
            why = fails(ops, a.procs, root, a.verbose)
            print(why or "replay: no difference")
            return 1 if why else 0
        seed = a.seed if a.seed is not None else int(time.time()) % 100000
        total = 0
        kills = {"done": 0, "undone": 0}
        for k in range(a.sequences):
            s = seed + k
            rng = random.Random(s)
            ops = [gen_op(rng, a.procs) for _ in range(a.steps)]
            run = Run(ops, a.procs, root, a.verbose)
            try:
                run.run()
                for k in kills:
                    kills[k] += run.kills[k]
            except Failure as e:
                print("seed %d: a difference after %d steps:\n%s"
                      % (s, len(ops), e), flush=True)
                small, why = shrink(ops, a.procs, root, str(e))
                print("\nshortest failing sequence (%d steps; replay with "
                      "--replay FILE --procs %d):\n%s\n\n%s"
                      % (len(small), a.procs,
                         json.dumps(small, indent=None), why))
                return 1
            total += len(ops)
        print("model: %d sequences from seed %d, %d operations, %d worker "
              "processes, %d workers killed inside an operation (%d after "
              "its commit, %d before): no difference"
              % (a.sequences, seed, total, a.procs,
                 kills["done"] + kills["undone"], kills["done"],
                 kills["undone"]))
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.unlink(os.environ["JB_FAKECLOCK"])


if __name__ == "__main__":
    sys.exit(main())
