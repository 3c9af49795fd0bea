#!/usr/bin/python3
"""Our Lua scripts (sync/scripts/*.lua) against the real peer: Debian's
taskflow 5.0 RedisJobBoard on a redis-server this test starts and stops.

Run by tests/test_sync_scripts.sh (which checks the packages first):
    /usr/bin/python3 tests/sync_scripts_test.py SRCDIR

Every check counts; the first failing one is reported with what was seen and
the run exits 1. The postings we publish are encoded here by hand, byte by
byte as taskflow lays them out (docs/DESIGN-NOTES.md, "Redis keys and
encodings"; as the C side does), never with
taskflow's or oslo's encoder, so comparing them with taskflow's bytes tests
something.
"""
import datetime
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import msgpack
import redis
from taskflow import exceptions as tf_exc
from taskflow.jobs import base as tf_base
from taskflow.jobs.backends import impl_redis
from taskflow.persistence import models as tf_models

SRCDIR = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("srcdir", ".")
SCRIPTS = ("claim", "abandon", "consume", "trash", "extend", "post", "reserve",
           "cancel", "claim_many")
RACE_JOBS = int(os.environ.get("JB_RACE_JOBS", "200"))
RACE_PROCS = int(os.environ.get("JB_RACE_PROCS", "4"))
# JB_SYNC_TESTS=test_race,test_notices runs only those (for debugging).

checks = 0


def check(cond, what, seen=None):
    global checks
    checks += 1
    if not cond:
        msg = "FAIL: " + what
        if seen is not None:
            msg += "\n  seen: %r" % (seen,)
        raise AssertionError(msg)


def expect_raises(exc_type, fn, what, contains=None):
    try:
        fn()
    except exc_type as e:
        check(contains is None or contains in str(e), what, str(e))
        return e
    check(False, what + " (no %s raised)" % exc_type.__name__)


# --------------------------------------------------------------- encoding
# msgpack as oslo_serialization writes it (wire doc section 2), by hand.

def mp_str(s):
    b = s.encode("utf-8")
    n = len(b)
    if n < 32:
        return bytes([0xA0 | n]) + b
    if n < 256:
        return b"\xd9" + bytes([n]) + b
    if n < 65536:
        return b"\xda" + n.to_bytes(2, "big") + b
    return b"\xdb" + n.to_bytes(4, "big") + b


def mp_uint(n):
    assert n >= 0
    if n <= 0x7F:
        return bytes([n])
    if n <= 0xFF:
        return b"\xcc" + bytes([n])
    if n <= 0xFFFF:
        return b"\xcd" + n.to_bytes(2, "big")
    if n <= 0xFFFFFFFF:
        return b"\xce" + n.to_bytes(4, "big")
    return b"\xcf" + n.to_bytes(8, "big")


def mp_map(pairs):
    assert len(pairs) < 16
    return bytes([0x80 | len(pairs)]) + b"".join(k + v for k, v in pairs)


def mp_value(v):
    """str, non-negative int and dict (of those) only: what the tests use."""
    if isinstance(v, str):
        return mp_str(v)
    if isinstance(v, int):
        return mp_uint(v)
    if isinstance(v, dict):
        return mp_map([(mp_str(k), mp_value(x)) for k, x in v.items()])
    raise TypeError(v)


def mp_datetime(dt):
    """oslo's DateTimeHandler: ext8 type 1 around a 7-entry map (naive UTC)."""
    payload = mp_map([(mp_str(k), mp_uint(getattr(dt, k))) for k in
                      ("day", "month", "year", "hour", "minute", "second",
                       "microsecond")])
    return b"\xc7" + bytes([len(payload)]) + b"\x01" + payload


def posting_prefix(job_uuid, name, priority, created_on, details=None,
                   book=None):
    """The posting without its sequence value: what post.lua takes."""
    pairs = [(mp_str("uuid"), mp_str(job_uuid)),
             (mp_str("name"), mp_str(name)),
             (mp_str("priority"), mp_str(priority)),
             (mp_str("created_on"), mp_datetime(created_on)),
             (mp_str("details"), mp_value(details or {}))]
    if book is not None:
        pairs.append((mp_str("book"), mp_value(book)))
    head = bytes([0x80 | (len(pairs) + 1)])
    return head + b"".join(k + v for k, v in pairs) + mp_str("sequence")


def utcnow():
    return datetime.datetime.utcnow()


# ------------------------------------------------------------ our client

# The publication marker's lifetime our C client sends
# (JB__REMOTE_POSTED_TTL_MS in sync/remote.h): 30 days.
POSTED_TTL_MS = 30 * 24 * 3600 * 1000
OUTCOME_TTL_MS = 7 * 24 * 3600 * 1000


def read_script(name):
    with open(os.path.join(SRCDIR, "sync", "scripts", name + ".lua"),
              "rb") as f:
        return f.read()


class Ours:
    """The calls the C side will make, with the keys and arguments of each
    script's header. Scripts are read from the .lua files, lib.lua first
    (the embedding test checks the C strings hold the same bytes)."""

    def __init__(self, sock, ns):
        self.r = redis.Redis(unix_socket_path=sock)
        self.ns = ns
        self.sha = {}
        lib = read_script("lib")
        for n in SCRIPTS:
            self.sha[n] = self.r.script_load(lib + read_script(n))

    def key(self, piece):
        return (self.ns + ":" + piece).encode()

    @property
    def channel(self):
        return self.key("notices")

    def run(self, name, keys, args):
        raw = self.r.evalsha(self.sha[name], len(keys), *(keys + args))
        check(isinstance(raw, bytes), name + " replies one bulk string", raw)
        return msgpack.unpackb(raw, raw=False)

    def claim(self, k, who, ms, cid, channel=True):
        return self.run("claim",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".last_modified"), self.key(k + ".claim"),
                         self.key("fence")],
                        [who, k, mp_datetime(utcnow()),
                         "none" if ms is None else str(ms), cid,
                         self.channel if channel else b""])

    def claim_many(self, ks, who, ms, cids, channel=True):
        keys = [self.key("listings"), self.key("fence")]
        args = [who, mp_datetime(utcnow()), "none" if ms is None else str(ms),
                self.channel if channel else b""]
        for k, cid in zip(ks, cids):
            keys += [self.key(k + ".owned"), self.key(k + ".last_modified"),
                     self.key(k + ".claim")]
            args += [k, cid]
        raw = self.r.evalsha(self.sha["claim_many"], len(keys),
                             *(keys + args))
        if isinstance(raw, bytes):  # a bad argument: one map
            return msgpack.unpackb(raw, raw=False)
        check(isinstance(raw, list) and len(raw) == len(ks),
              "claim_many replies one string per job", raw)
        return [msgpack.unpackb(x, raw=False) for x in raw]

    def abandon(self, k, who, cid, lm=None):
        return self.run("abandon",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".last_modified"), self.key(k + ".claim")],
                        [who, k, lm or mp_datetime(utcnow()), cid,
                         self.channel])

    def consume(self, k, who, cid, outcome=b"", ttl=OUTCOME_TTL_MS):
        return self.run("consume",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".last_modified"), self.key(k + ".claim"),
                         self.key("unique"), self.key(k + ".unique"),
                         self.key(k + ".outcome")],
                        [who, k, cid, self.channel, outcome, str(ttl)])

    def trash(self, k, who, cid, lm=None, outcome=b"", ttl=OUTCOME_TTL_MS):
        return self.run("trash",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".last_modified"), self.key("trash"),
                         self.key(k + ".claim"), self.key("unique"),
                         self.key(k + ".unique"), self.key(k + ".outcome")],
                        [who, k, lm or mp_datetime(utcnow()), cid,
                         self.channel, outcome, str(ttl)])

    def extend(self, k, who, ms, cid):
        return self.run("extend",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".claim")],
                        [who, k, str(ms), cid, self.channel])

    def post(self, k, prefix, who="", lm=b"", ms=None, cid="",
             marker_ms=POSTED_TTL_MS, unique=""):
        return self.run("post",
                        [self.key("listings"), self.key("sequence"),
                         self.key(k + ".owned"), self.key(k + ".last_modified"),
                         self.key(k + ".claim"), self.key("fence"),
                         self.key(k + ".posted"), self.key("unique"),
                         self.key(k + ".unique")],
                        [k, prefix, self.channel, who, lm,
                         "none" if ms is None else str(ms), cid,
                         str(marker_ms), unique])

    def reserve(self, key, k, hold, mark=""):
        return self.run("reserve",
                        [self.key("unique"), self.key("listings"),
                         self.key(k + ".unique")],
                        [key, k, str(hold), mark])

    def cancel(self, k, force=False):
        return self.run("cancel",
                        [self.key(k + ".owned"), self.key("listings"),
                         self.key(k + ".last_modified"), self.key(k + ".claim"),
                         self.key("unique"), self.key(k + ".unique"),
                         self.key(k + ".outcome")],
                        [k, "1" if force else "", self.channel,
                         msgpack.packb({"end": "cancelled"}),
                         str(OUTCOME_TTL_MS)])

    def post_new(self, name="jb-job", priority="NORMAL", details=None, **kw):
        k = str(uuid.uuid4())
        rep = self.post(k, posting_prefix(k, name, priority, utcnow(),
                                          details), **kw)
        check(rep.get("status") == "ok", "our post of %s" % k, rep)
        return k, rep


def taskflow_board(sock, ns, name="tf"):
    board = impl_redis.RedisJobBoard(
        name, {"unix_socket_path": sock, "namespace": ns})
    board.connect()
    return board


def tf_job(board, k):
    for job in board.iterjobs(ensure_fresh=True):
        if job.key.decode() == k:
            return job
    return None


def err(rep, reason, owner=None):
    ok = rep.get("status") == "error" and rep.get("reason") == reason
    if owner is not None:
        ok = ok and rep.get("owner") == owner
    return ok


# ------------------------------------------------------------------ server

class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="jb-redis-")
        self.sock = os.path.join(self.dir, "redis.sock")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.sock,
             "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--logfile", os.path.join(self.dir, "log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis.Redis(unix_socket_path=self.sock).ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start (%s)" % self.dir)
            time.sleep(0.02)
        info = redis.Redis(unix_socket_path=self.sock).info("server")
        self.version = info["redis_version"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------------- tests

def test_taskflow_posts_we_claim_and_consume(srv):
    ns = "t1"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    job = tf.post("tf-job", details={"store": {"x": 1}},
                  priority=tf_base.JobPriority.HIGH)
    k = job.key.decode()
    before = utcnow()
    rep = ours.claim(k, "jb-worker-1", 5000, "cid-1")
    check(rep.get("status") == "ok" and rep.get("claim") == "cid-1"
          and isinstance(rep.get("fence"), int) and rep["fence"] >= 1,
          "our claim of a taskflow posting succeeds with a claim id and a fence",
          rep)
    check(tf.find_owner(job) == "jb-worker-1",
          "taskflow's find_owner sees our owner", tf.find_owner(job))
    check(tf_job(tf, k).state == tf_base.states.CLAIMED,
          "taskflow lists it as CLAIMED")
    expect_raises(tf_exc.UnclaimableJob,
                  lambda: tf.claim(job, "tf-worker"),
                  "taskflow's own claim fails: already claimed by us",
                  "already claimed by jb-worker-1")
    pttl = ours.r.pttl(ours.key(k + ".owned"))
    check(4000 < pttl <= 5000, "owner key PTTL is our 5000 ms", pttl)
    exp = tf_job(tf, k).expires_in()
    check(4.0 < exp <= 5.0, "taskflow's expires_in reads the ms expiry", exp)
    cpttl = ours.r.pttl(ours.key(k + ".claim"))
    check(abs(cpttl - pttl) <= 5, "claim record expires with the owner key",
          (cpttl, pttl))
    lm = tf_job(tf, k).last_modified
    check(lm is not None and before <= lm <= utcnow(),
          "taskflow decodes the last_modified our claim wrote", lm)
    rep = ours.consume(k, "jb-worker-1", "cid-1")
    check(rep == {"status": "ok"}, "our consume succeeds", rep)
    check(tf_job(tf, k) is None, "taskflow's listing no longer has it")
    left = sorted(ours.r.keys(ns + ":*"))
    check(left == [ours.key("fence"), ours.key("listings"),
                   ours.key("sequence")] or
          left == [ours.key("fence"), ours.key("sequence")],
          "nothing of the consumed job is left in Redis", left)
    check(ours.r.hlen(ours.key("listings")) == 0, "listings empty")


def test_we_post_taskflow_lists_claims_consumes(srv):
    ns = "t2"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    first = tf.post("tf-before")
    k = str(uuid.uuid4())
    created = utcnow().replace(microsecond=654321)
    details = {"store": {"y": 2}, "note": "hello"}
    prefix = posting_prefix(k, "jb-job", "LOW", created, details)
    rep = ours.post(k, prefix)
    check(rep == {"status": "ok", "sequence": first.sequence + 1},
          "our post takes the next number of the shared counter", rep)
    check(int(ours.r.get(ours.key("sequence"))) == first.sequence + 1,
          "NS:sequence is the posting's sequence")
    last = tf.post("tf-after")
    check(last.sequence == first.sequence + 2,
          "taskflow's next post continues the counter", last.sequence)

    again = ours.post(k, prefix)
    check(err(again, "Job already posted!") and
          again.get("sequence") == first.sequence + 1
          and again.get("listed") is True,
          "posting the same job again is refused and names its sequence", again)
    other = posting_prefix(k, "another", "LOW", created, details)
    again = ours.post(k, other)
    check(err(again, "Job already posted!") and "sequence" not in again
          and again.get("listed") is True,
          "a different posting under a listed uuid is refused, no sequence",
          again)
    # A listed taskflow posting (no marker) is refused the same way.
    again = ours.post(first.uuid, posting_prefix(first.uuid, "x", "LOW",
                                                 created))
    check(err(again, "Job already posted!") and "sequence" not in again
          and not ours.r.exists(ours.key(first.uuid + ".posted")),
          "our post of a uuid taskflow listed is refused, writes no marker",
          again)
    check(int(ours.r.get(ours.key("sequence"))) == last.sequence,
          "a refused post takes no number")
    bad = ours.post(str(uuid.uuid4()), prefix[:-3])
    check(err(bad, "Invalid argument!"),
          "a posting not ending with the key 'sequence' is refused", bad)
    k_bad = str(uuid.uuid4())
    p_bad = posting_prefix(k_bad, "x", "NORMAL", created)
    for kw in (dict(who="jb", lm=b"x", ms=0, cid="c"),
               dict(who="jb", lm=b"x", ms="soon", cid="c"),
               dict(who="jb", lm=b"x", ms=None, cid=""),
               dict(who="jb", lm=b"", ms=None, cid="c"),
               dict(marker_ms=0), dict(marker_ms="none"),
               dict(marker_ms="")):
        bad = ours.post(k_bad, p_bad, **kw)
        check(err(bad, "Invalid argument!"),
              "a claimed post with a bad argument is refused %r" % kw, bad)
    check(ours.r.hlen(ours.key("listings")) == 3
          and int(ours.r.get(ours.key("sequence"))) == last.sequence
          and not ours.r.exists(ours.key(k_bad + ".owned"),
                                ours.key(k_bad + ".posted")),
          "refusals wrote nothing")

    jobs = list(tf.iterjobs(ensure_fresh=True))
    check(ours.r.hlen(ours.key("listings")) == 3,
          "taskflow's listing deleted no posting as malformed")
    check([j.name for j in jobs] == ["tf-after", "tf-before", "jb-job"],
          "taskflow orders ours among its own (priority, then newest first)",
          [j.name for j in jobs])
    job = jobs[2]
    check(job.uuid == k and job.name == "jb-job" and job.details == details
          and job.priority == tf_base.JobPriority.LOW
          and job.sequence == first.sequence + 1 and job.created_on == created
          and job.book is None and job.state == tf_base.states.UNCLAIMED,
          "taskflow decodes uuid, name, details, priority, sequence, created_on",
          (job.uuid, job.name, job.details, job.priority, job.sequence,
           job.created_on, job.state))
    tf.claim(job, "tf-worker")
    check(tf.find_owner(job) == "tf-worker", "taskflow claims our posting")
    rep = ours.claim(k, "jb-worker", None, "cid-x")
    check(err(rep, "Job already claimed!", "tf-worker") and "claim" not in rep,
          "our claim is refused: taskflow's owner, no claim record", rep)
    tf.consume(job, "tf-worker")
    check(tf_job(tf, k) is None, "taskflow consumed our posting")
    check(not ours.r.exists(ours.key(k + ".owned"), ours.key(k + ".claim"),
                            ours.key(k + ".last_modified")),
          "no key of it left")

    # Posted already claimed (a job claimed locally before publication).
    k2 = str(uuid.uuid4())
    lm = mp_datetime(utcnow())
    rep = ours.post(k2, posting_prefix(k2, "pre-claimed", "NORMAL", utcnow()),
                    who="jb-local", lm=lm, ms=7000, cid="cid-pre")
    check(rep.get("status") == "ok" and rep.get("claim") == "cid-pre"
          and isinstance(rep.get("fence"), int),
          "a job can be posted together with its owner", rep)
    job2 = tf_job(tf, k2)
    check(job2 is not None and job2.state == tf_base.states.CLAIMED
          and tf.find_owner(job2) == "jb-local",
          "taskflow sees it CLAIMED by our owner")
    check(ours.r.get(ours.key(k2 + ".last_modified")) == lm,
          "its last_modified is the value we sent")
    check(6000 < ours.r.pttl(ours.key(k2 + ".owned")) <= 7000,
          "with our expiry")
    expect_raises(tf_exc.UnclaimableJob, lambda: tf.claim(job2, "tf-worker"),
                  "taskflow cannot claim it", "already claimed by jb-local")
    check(ours.consume(k2, "jb-local", "cid-pre") == {"status": "ok"},
          "and we consume it with the claim id of the post")


def test_posted_marker(srv):
    """The publication marker: a uuid is posted once, even after the job
    was consumed (nothing else of it left) or trashed; taskflow's listing,
    consume and trash ignore the marker."""
    ns = "t7"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    tf.post("tf-first")
    k = str(uuid.uuid4())
    prefix = posting_prefix(k, "jb-once", "NORMAL", utcnow())
    rep = ours.post(k, prefix)
    check(rep.get("status") == "ok", "our post", rep)
    seq = rep["sequence"]
    marker = ours.key(k + ".posted")
    check(ours.r.get(marker) == str(seq).encode(),
          "the marker holds the sequence as decimal text", ours.r.get(marker))
    pttl = ours.r.pttl(marker)
    check(POSTED_TTL_MS - 60000 < pttl <= POSTED_TTL_MS,
          "the marker's PTTL is the marker ms (30 days)", pttl)
    size = ours.r.memory_usage(marker)
    check(size is not None and size < 200,
          "the marker costs well under 200 bytes (MEMORY USAGE)", size)
    print("  marker: MEMORY USAGE %d bytes (plus its expiry entry)" % size)

    # Claimed and consumed by a taskflow worker: nothing of the job is left
    # but the marker.
    job = tf_job(tf, k)
    check(job is not None and job.sequence == seq,
          "taskflow lists our posting with the marker beside it")
    tf.claim(job, "tf-owner")
    check(tf.find_owner(job) == "tf-owner", "taskflow claims it")
    tf.consume(job, "tf-owner")
    check(tf_job(tf, k) is None, "taskflow consumed it")
    left = sorted(x for x in ours.r.keys(ns + ":*") if k.encode() in x)
    check(left == [marker], "only the marker is left of the job", left)
    again = ours.post(k, prefix)
    check(err(again, "Job already posted!") and again.get("sequence") == seq
          and again.get("listed") is False,
          "re-posting the consumed uuid is refused with its sequence", again)
    check(tf_job(tf, k) is None and not ours.r.hexists(ours.key("listings"), k),
          "and it is not listed again")
    again = ours.post(k, prefix, who="jb", lm=mp_datetime(utcnow()), ms=None,
                      cid="cid-2")
    check(err(again, "Job already posted!") and again.get("sequence") == seq
          and not ours.r.exists(ours.key(k + ".owned")),
          "a claimed re-post is refused too and claims nothing", again)
    check(int(ours.r.get(ours.key("sequence"))) == seq,
          "refused re-posts took no number")

    # Our consume and taskflow's trash leave the marker too.
    k2, rep2 = ours.post_new(name="jb-consumed")
    check(ours.claim(k2, "jb", None, "c2").get("status") == "ok", "claim k2")
    check(ours.consume(k2, "jb", "c2") == {"status": "ok"}, "consume k2")
    k3, rep3 = ours.post_new(name="jb-trashed")
    job3 = tf_job(tf, k3)
    tf.claim(job3, "tf-trasher")
    tf.trash(job3, "tf-trasher")
    check(ours.r.hexists(ours.key("trash"), k3) and tf_job(tf, k3) is None,
          "taskflow trashed our posting")
    k4, rep4 = ours.post_new(name="jb-abandoned")
    check(ours.claim(k4, "jb", None, "c4").get("status") == "ok", "claim k4")
    check(ours.abandon(k4, "jb", "c4") == {"status": "ok"}, "abandon k4")
    for kk, r0, what in ((k2, rep2, "our consume"), (k3, rep3, "a trash"),
                         (k4, rep4, "our abandon")):
        check(ours.r.get(ours.key(kk + ".posted")) ==
              str(r0["sequence"]).encode(),
              "the marker survives " + what)
        again = ours.post(kk, posting_prefix(kk, "again", "NORMAL", utcnow()))
        check(err(again, "Job already posted!")
              and again.get("sequence") == (None if kk == k4
                                            else r0["sequence"]),
              "re-post after %s refused" % what, again)
    # taskflow still lists, claims and consumes normally beside markers.
    names = sorted(j.name for j in tf.iterjobs(ensure_fresh=True))
    check(names == ["jb-abandoned", "tf-first"],
          "taskflow lists exactly the listed jobs", names)
    job4 = tf_job(tf, k4)
    tf.claim(job4, "tf-w")
    tf.consume(job4, "tf-w")
    check(tf_job(tf, k4) is None and ours.r.exists(ours.key(k4 + ".posted")),
          "taskflow consumes beside the marker, which stays")


def test_bytes_match_taskflow(srv):
    r = redis.Redis(unix_socket_path=srv.sock)
    # Same job posted by taskflow (namespace a) and by us (namespace b), both
    # counters fresh: the stored postings must be identical bytes.
    cases = [
        ("plain", dict(priority=tf_base.JobPriority.NORMAL), "NORMAL", None),
        ("high-details", dict(priority=tf_base.JobPriority.HIGH,
                              details={"store": {"x": 1}, "flow_uuid": "f"}),
         "HIGH", {"store": {"x": 1}, "flow_uuid": "f"}),
        ("a-name-longer-than-thirty-one-bytes-to-take-str8",
         dict(priority=tf_base.JobPriority.VERY_LOW), "VERY_LOW", None),
    ]
    for i, (name, kw, prio, details) in enumerate(cases):
        tf = taskflow_board(srv.sock, "ta%d" % i)
        job = tf.post(name, **kw)
        theirs = r.hget(("ta%d:listings" % i).encode(), job.key)
        ours = Ours(srv.sock, "tb%d" % i)
        rep = ours.post(job.uuid, posting_prefix(job.uuid, name, prio,
                                                 job.created_on, details))
        check(rep.get("sequence") == job.sequence == 1, "fresh counters", rep)
        mine = r.hget(("tb%d:listings" % i).encode(), job.key)
        check(mine == theirs, "our posting bytes equal taskflow's (%s)" % name,
              (mine.hex(), theirs.hex()))

    # With a logbook.
    book = tf_models.LogBook("my-book")
    tf = taskflow_board(srv.sock, "tbook-a")
    job = tf.post("booked", book=book)
    theirs = r.hget(b"tbook-a:listings", job.key)
    ours = Ours(srv.sock, "tbook-b")
    ours.post(job.uuid, posting_prefix(job.uuid, "booked", "NORMAL",
                                       job.created_on, None,
                                       {"name": "my-book", "uuid": book.uuid}))
    mine = r.hget(b"tbook-b:listings", job.key)
    check(mine == theirs, "posting with a book: equal bytes",
          (mine.hex(), theirs.hex()))

    # The wire document's full example (section 2.4), sequence 42.
    ours = Ours(srv.sock, "tdoc")
    r.set(b"tdoc:sequence", 41)
    k = "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"
    rep = ours.post(k, posting_prefix(
        k, "demo-job", "HIGH", datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
        {"store": {"x": 1}},
        {"name": "my-book", "uuid": "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"}))
    check(rep.get("sequence") == 42, "sequence 42", rep)
    doc = bytes.fromhex(
        "87a475756964d92433663064376539632d316232612d346335642d386536662d30"
        "6131623263336434653566a46e616d65a864656d6f2d6a6f62a87072696f726974"
        "79a448494748aa637265617465645f6f6ec7380187a364617902a56d6f6e746801"
        "a479656172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d69"
        "63726f7365636f6e6406a764657461696c7381a573746f726581a17801a4626f6f"
        "6b82a46e616d65a76d792d626f6f6ba475756964d92430623163326433652d3466"
        "35302d343631372d383239332d613462356336643765386639a873657175656e63"
        "652a")
    check(r.hget(b"tdoc:listings", k) == doc,
          "the wire document's example posting, byte for byte")

    # The sequence is the smallest msgpack int at every width.
    for seq, enc in ((127, "7f"), (128, "cc80"), (255, "ccff"), (256, "cd0100"),
                     (65535, "cdffff"), (65536, "ce00010000"),
                     (2**32, "cf0000000100000000")):
        r.set(b"tdoc:sequence", seq - 1)
        k = str(uuid.uuid4())
        prefix = posting_prefix(k, "w", "NORMAL", utcnow())
        ours.post(k, prefix)
        got = r.hget(b"tdoc:listings", k)
        check(got == prefix + bytes.fromhex(enc),
              "sequence %d encoded as %s" % (seq, enc), got[len(prefix):].hex())
    tf = taskflow_board(srv.sock, "tdoc")
    seqs = sorted(j.sequence for j in tf.iterjobs(ensure_fresh=True))
    check(seqs == [42, 127, 128, 255, 256, 65535, 65536, 2**32],
          "taskflow reads every width", seqs)

    # last_modified values: ours equal taskflow's encoder at every width of
    # the microsecond, and what the claim stores is exactly what was sent.
    for us in (0, 127, 128, 255, 256, 65535, 65536, 999999):
        dt = datetime.datetime(2031, 12, 31, 23, 59, 58, us)
        check(mp_datetime(dt) == impl_redis.RedisJobBoard._dumps(dt),
              "datetime with microsecond %d encodes as taskflow's" % us)
    ours = Ours(srv.sock, "tlm")
    k, _ = ours.post_new()
    owned_lm_key = ours.key(k + ".last_modified")
    dt = datetime.datetime(2031, 12, 31, 23, 59, 58, 70000)
    rep = ours.run("claim", [ours.key(k + ".owned"), ours.key("listings"),
                             owned_lm_key, ours.key(k + ".claim"),
                             ours.key("fence")],
                   ["wörker-ü", k, mp_datetime(dt), "none", "c", b""])
    check(rep.get("status") == "ok", "claim with a non-ASCII owner", rep)
    check(r.get(ours.key(k + ".owned")) == "wörker-ü".encode("utf-8"),
          "owner key holds the raw UTF-8 owner name, no msgpack")
    check(r.pttl(ours.key(k + ".owned")) == -1, "no expiry: PTTL -1")
    check(r.get(owned_lm_key) == mp_datetime(dt), "last_modified as sent")
    tf = taskflow_board(srv.sock, "tlm")
    job = tf_job(tf, k)
    check(tf.find_owner(job) == "wörker-ü" and job.last_modified == dt,
          "taskflow decodes the owner and the last_modified",
          (tf.find_owner(job), job.last_modified))
    check(job.expires_in() == impl_redis.ru.UnknownExpire.DOES_NOT_EXPIRE,
          "taskflow: DOES_NOT_EXPIRE", job.expires_in())

    # The replies of taskflow's reasons are taskflow's exact bytes where the
    # map holds the same entries (one-entry maps have no order to differ in).
    raw = r.evalsha(ours.sha["claim"], 5, b"x.owned", ours.key("listings"),
                    b"x.lm", b"x.claim", b"x.fence", "w", "nope",
                    b"", "none", "c", b"")
    check(msgpack.unpackb(raw) == msgpack.unpackb(bytes.fromhex(
        "82a6737461747573a56572726f72a6726561736f6eac556e6b6e6f776e206a6f6221")),
        "Unknown job! reply decodes as taskflow's")
    raw = r.evalsha(ours.sha["consume"], 4, ours.key(k + ".owned"),
                    ours.key("listings"), owned_lm_key, ours.key(k + ".claim"),
                    "wörker-ü", k, "c", b"")
    check(raw == bytes.fromhex("81a6737461747573a26f6b"),
          "ok reply is taskflow's bytes", raw.hex())


def test_refusals_and_expiry(srv):
    ns = "t4"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    r = ours.r
    k, _ = ours.post_new()
    owned = ours.key(k + ".owned")
    claimk = ours.key(k + ".claim")
    lmk = ours.key(k + ".last_modified")
    check(err(ours.abandon(k, "jb-a", ""), "Unknown owner!"),
          "abandon of an unclaimed job: Unknown owner!")
    check(err(ours.consume(k, "jb-a", ""), "Unknown owner!"),
          "consume of an unclaimed job: Unknown owner!")
    check(err(ours.trash(k, "jb-a", ""), "Unknown owner!"),
          "trash of an unclaimed job: Unknown owner!")
    check(err(ours.extend(k, "jb-a", 1000, ""), "Unknown owner!"),
          "extend of an unclaimed job: Unknown owner!")
    nope = str(uuid.uuid4())
    for name, rep in (("claim", ours.claim(nope, "jb-a", None, "c")),
                      ("abandon", ours.abandon(nope, "jb-a", "")),
                      ("consume", ours.consume(nope, "jb-a", "")),
                      ("trash", ours.trash(nope, "jb-a", "")),
                      ("extend", ours.extend(nope, "jb-a", 5, ""))):
        check(err(rep, "Unknown job!"), name + " of an unknown job", rep)
    for ms in ("0", "-5", "abc", "1.5", ""):
        rep = ours.run("claim", [owned, ours.key("listings"), lmk, claimk,
                                 ours.key("fence")],
                       ["jb-a", k, mp_datetime(utcnow()), ms, "c", b""])
        check(err(rep, "Invalid argument!"), "claim expiry %r refused" % ms, rep)
    check(err(ours.claim(k, "", None, "c"), "Invalid argument!"),
          "empty owner refused")
    check(err(ours.claim(k, "jb-a", None, ""), "Invalid argument!"),
          "empty claim id refused")
    check(not r.exists(owned, claimk, lmk), "refused claims wrote nothing")

    check(ours.claim(k, "jb-a", 3000, "A").get("status") == "ok", "claim")
    lm_before = r.get(lmk)
    for name, fn in (("abandon", lambda: ours.abandon(k, "jb-b", "")),
                     ("consume", lambda: ours.consume(k, "jb-b", "")),
                     ("trash", lambda: ours.trash(k, "jb-b", "")),
                     ("extend", lambda: ours.extend(k, "jb-b", 60000, ""))):
        rep = fn()
        check(err(rep, "Not expected owner!", "jb-a"),
              name + " by another owner: Not expected owner!, owner jb-a", rep)
    for name, fn in (("abandon", lambda: ours.abandon(k, "jb-a", "B")),
                     ("consume", lambda: ours.consume(k, "jb-a", "B")),
                     ("trash", lambda: ours.trash(k, "jb-a", "B")),
                     ("extend", lambda: ours.extend(k, "jb-a", 60000, "B"))):
        rep = fn()
        check(err(rep, "Not expected claim!", "jb-a") and rep.get("claim") == "A",
              name + " with another claim id: Not expected claim!", rep)
    job = tf_job(tf, k)
    expect_raises(tf_exc.JobFailure, lambda: tf.abandon(job, "tf-x"),
                  "taskflow's abandon by another owner fails")
    expect_raises(tf_exc.JobFailure, lambda: tf.consume(job, "tf-x"),
                  "taskflow's consume by another owner fails")
    check(r.get(owned) == b"jb-a" and r.hget(claimk, "id") == b"A"
          and r.get(lmk) == lm_before and r.hexists(ours.key("listings"), k)
          and 0 < r.pttl(owned) <= 3000,
          "refusals changed nothing", (r.get(owned), r.pttl(owned)))
    for ms in ("0", "-1", "x", "none", "1e3"):
        rep = ours.run("extend", [owned, ours.key("listings"), claimk],
                       ["jb-a", k, ms, "A", b""])
        check(err(rep, "Invalid argument!"), "extend by %r refused" % ms, rep)

    rep = ours.extend(k, "jb-a", 60000, "A")
    check(rep == {"status": "ok"}, "extend by the owner", rep)
    check(59000 < r.pttl(owned) <= 60000 and 59000 < r.pttl(claimk) <= 60000,
          "extend sets both expiries in ms", (r.pttl(owned), r.pttl(claimk)))
    check(59.0 < job.expires_in() <= 60.0, "taskflow reads the extended expiry",
          job.expires_in())
    check(r.get(lmk) == lm_before, "extend leaves last_modified alone")
    rep = ours.extend(k, "jb-a", 2500, "")
    check(rep == {"status": "ok"} and 2000 < r.pttl(owned) <= 2500,
          "extend can shorten, and without a claim id checks the name only")

    # Same-owner re-claim: taskflow 5.0's reply, the holder's claim id
    # reported (how a caller resolves a lost reply). Another claim under the
    # same name (a new process of a worker whose old one died holding it)
    # leaves the expiry alone, so the dead one's claim lapses; the same
    # claim sent again refreshes it.
    p = r.pttl(owned)
    rep = ours.claim(k, "jb-a", 9000, "A2")
    check(err(rep, "Job already claimed!", "jb-a") and rep.get("claim") == "A",
          "same-owner re-claim: already claimed, the held claim id", rep)
    check(r.pttl(owned) <= p and r.get(lmk) == lm_before,
          "another claim under the same name refreshes nothing", r.pttl(owned))
    rep = ours.claim(k, "jb-a", 9000, "A")
    check(err(rep, "Job already claimed!", "jb-a"), "the same claim again", rep)
    check(8000 < r.pttl(owned) <= 9000 and 8000 < r.pttl(claimk) <= 9000,
          "the same claim sent again refreshes the expiry")
    check(r.get(lmk) != lm_before, "and last_modified")
    p = r.pttl(owned)
    ours.claim(k, "jb-a", None, "A")
    check(r.pttl(owned) <= p, "re-claim with none keeps the running expiry")
    check(err(ours.claim(k, "jb-b", 1, "B"), "Job already claimed!", "jb-a"),
          "another owner's claim is refused")

    lm_abandon = mp_datetime(utcnow())
    rep = ours.abandon(k, "jb-a", "A", lm=lm_abandon)
    check(rep == {"status": "ok"}, "abandon by the owner", rep)
    check(not r.exists(owned) and not r.exists(claimk)
          and r.get(lmk) == lm_abandon
          and tf_job(tf, k).state == tf_base.states.UNCLAIMED,
          "abandon: owner key and claim record gone, last_modified set")
    check(err(ours.abandon(k, "jb-a", "A"), "Unknown owner!"),
          "second abandon: Unknown owner!")

    # A lapsed lease: Redis drops owner key and claim record; taskflow takes
    # the job; the old holder's calls are refused.
    check(ours.claim(k, "jb-a", 150, "A3").get("status") == "ok", "short claim")
    time.sleep(0.4)
    check(r.pttl(owned) == -2 and not r.exists(claimk),
          "the lease lapsed: both keys gone")
    job = tf_job(tf, k)
    check(job.state == tf_base.states.UNCLAIMED, "taskflow sees it UNCLAIMED")
    tf.claim(job, "tf-w", expiry=2.5)
    check(2000 < r.pttl(owned) <= 2500, "taskflow's expiry is ms on the same key")
    for name, rep in (("abandon", ours.abandon(k, "jb-a", "A3")),
                      ("extend", ours.extend(k, "jb-a", 9000, "A3")),
                      ("consume", ours.consume(k, "jb-a", "A3"))):
        check(err(rep, "Not expected owner!", "tf-w"),
              "old holder's %s after the lapse is refused" % name, rep)
    tf.abandon(job, "tf-w")

    # Trash by the owner.
    check(ours.claim(k, "jb-t", None, "T").get("status") == "ok", "claim")
    posting = r.hget(ours.key("listings"), k)
    lm_trash = mp_datetime(utcnow())
    check(ours.trash(k, "jb-t", "T", lm=lm_trash) == {"status": "ok"}, "trash")
    check(r.hget(ours.key("trash"), k) == posting
          and not r.hexists(ours.key("listings"), k)
          and not r.exists(owned) and not r.exists(claimk)
          and r.get(lmk) == lm_trash and tf_job(tf, k) is None,
          "trash: posting copied verbatim, listing and claim gone, "
          "last_modified kept")


def test_notices(srv):
    ns = "t6"
    ours = Ours(srv.sock, ns)
    ps = ours.r.pubsub()
    ps.subscribe(ours.channel)
    check(ps.get_message(timeout=2)["type"] == "subscribe", "subscribed")
    k, rep = ours.post_new()
    seq = rep["sequence"]
    fence = ours.claim(k, "jb", 1000, "C")["fence"]
    ours.extend(k, "jb", 2000, "C")
    ours.claim(k, "other", None, "D")            # refused: no notice
    ours.abandon(k, "jb", "C")
    ours.abandon(k, "jb", "C")                   # refused: no notice
    fence2 = ours.claim(k, "jb", None, "E")["fence"]
    ours.consume(k, "jb", "E")
    k2, rep2 = ours.post_new()
    ours.claim(k2, "jb", None, "F", channel=False)   # "" channel: silent
    ours.trash(k2, "jb", "F")
    got = []
    while True:
        m = ps.get_message(timeout=0.5)
        if m is None:
            break
        got.append(m["data"].decode())
    want = ["post %s %d" % (k, seq), "claim %s %d" % (k, fence),
            "extend %s 2000" % k, "abandon %s" % k,
            "claim %s %d" % (k, fence2), "consume %s" % k,
            "post %s %d" % (k2, rep2["sequence"]), "trash %s" % k2]
    check(got == want, "one notice per change, in order, none for refusals",
          got)
    check(fence2 > fence, "fencing tokens increase", (fence, fence2))
    ps.close()


# ----------------------------------------------------------------- racing

def racer(fn):
    """Run a racer; report its exception instead of dying silently (the
    parent would wait for a result that never comes)."""
    def run(sock, ns, who, *rest):
        out = rest[-1]
        try:
            fn(sock, ns, who, *rest)
        except BaseException as e:
            out.put((who, None, repr(e)))
            raise
    return run


@racer
def race_taskflow(sock, ns, who, barrier, out):
    board = taskflow_board(sock, ns, who)
    jobs = list(board.iterjobs(ensure_fresh=True))
    random.Random(who).shuffle(jobs)
    barrier.wait()
    won, lost = [], 0
    for job in jobs:
        try:
            board.claim(job, who)
            won.append(job.key.decode())
        except tf_exc.UnclaimableJob:
            lost += 1
    out.put((who, won, lost))


@racer
def race_ours(sock, ns, who, keys, barrier, out):
    ours = Ours(sock, ns)
    keys = list(keys)
    random.Random(who).shuffle(keys)
    barrier.wait()
    won, lost = [], 0
    for k in keys:
        rep = ours.claim(k, who, 60000, "cid-" + who + "-" + k)
        if rep.get("status") == "ok":
            won.append(k)
        elif rep.get("reason") == "Job already claimed!":
            lost += 1
        else:
            raise RuntimeError(rep)
    out.put((who, won, lost))


def test_race(srv):
    ns = "t5"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    keys = []
    for i in range(RACE_JOBS):
        if i % 2:
            keys.append(tf.post("race-%d" % i).key.decode())
        else:
            keys.append(ours.post_new("race-%d" % i)[0])
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2 * RACE_PROCS)
    out = ctx.Queue()
    procs = []
    for i in range(RACE_PROCS):
        procs.append(ctx.Process(target=race_taskflow,
                                 args=(srv.sock, ns, "tf-%d" % i, barrier, out)))
        procs.append(ctx.Process(target=race_ours,
                                 args=(srv.sock, ns, "jb-%d" % i, keys, barrier,
                                       out)))
    t0 = time.monotonic()
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for who, won, lost in results:
        check(won is not None, "racer %s ran to the end" % who, lost)
    for p in procs:
        p.join(60)
        check(p.exitcode == 0, "racer exited cleanly", p.exitcode)
    elapsed = time.monotonic() - t0
    winners = {}
    for who, won, lost in results:
        for k in won:
            winners.setdefault(k, []).append(who)
    double = {k: w for k, w in winners.items() if len(w) != 1}
    check(not double, "no job has two owners", double)
    check(sorted(winners) == sorted(keys), "every job has an owner",
          len(winners))
    r = ours.r
    for k, (who,) in winners.items():
        check(r.get(ours.key(k + ".owned")) == who.encode(),
              "the owner key names the winner")
        if who.startswith("jb-"):
            check(r.hget(ours.key(k + ".claim"), "id") ==
                  ("cid-" + who + "-" + k).encode(),
                  "our winner's claim record holds its claim id")
    by_tf = sum(len(won) for who, won, _ in results if who.startswith("tf-"))
    lost_tf = sum(lost for who, _, lost in results if who.startswith("tf-"))
    lost_jb = sum(lost for who, _, lost in results if who.startswith("jb-"))
    check(lost_tf + lost_jb == (2 * RACE_PROCS - 1) * RACE_JOBS,
          "every other attempt was refused as already claimed",
          (lost_tf, lost_jb))
    # Winners consume, each through its own side.
    jobs = {j.key.decode(): j for j in tf.iterjobs(ensure_fresh=True)}
    for k, (who,) in winners.items():
        if who.startswith("tf-"):
            tf.consume(jobs[k], who)
        else:
            check(ours.consume(k, who, "cid-" + who + "-" + k) ==
                  {"status": "ok"}, "our winner consumes")
    check(r.hlen(ours.key("listings")) == 0 and
          not [x for x in r.keys(ns + ":*")
               if x.endswith((b".owned", b".claim", b".last_modified"))],
          "all consumed, no owner, claim or last_modified key left")
    print("  race: %d jobs, %d taskflow + %d jobboard claimers: taskflow won "
          "%d, jobboard %d; refused %d + %d; %.2f s"
          % (RACE_JOBS, RACE_PROCS, RACE_PROCS, by_tf, RACE_JOBS - by_tf,
             lost_tf, lost_jb, elapsed))


def test_claim_over_a_record_left_behind(srv):
    """The claim writes its record over whatever is there instead
    of deleting it first. A record left behind with an expiry (taskflow's
    release of a claim of ours under the same owner name leaves it) must
    not make a claim without expiry lapse: it is made persistent; with an
    expiry the record gets the owner key's."""
    ns = "t7"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    r = ours.r
    k, _ = ours.post_new()
    owned, claimk = ours.key(k + ".owned"), ours.key(k + ".claim")
    check(ours.claim(k, "jb-a", 60000, "A")["status"] == "ok", "claim A")
    check(50000 < r.pttl(claimk) <= 60000, "the record has the lease")
    tf.abandon(tf_job(tf, k), "jb-a")   # taskflow's abandon: owner key only
    check(not r.exists(owned) and r.exists(claimk) and r.pttl(claimk) > 0,
          "taskflow's abandon left our record, with its expiry")
    rep = ours.claim(k, "jb-b", None, "B")
    check(rep["status"] == "ok" and rep["claim"] == "B", "claim B over it", rep)
    check(r.hmget(claimk, "id", "fence") == [b"B", str(rep["fence"]).encode()]
          and r.pttl(claimk) == -1 and r.pttl(owned) == -1,
          "the record is B's and, like the owner key, has no expiry",
          (r.hgetall(claimk), r.pttl(claimk), r.pttl(owned)))

    tf.abandon(tf_job(tf, k), "jb-b")   # leaves B's record, no expiry
    rep = ours.claim(k, "jb-c", 7000, "C")
    check(rep["status"] == "ok" and r.hget(claimk, "id") == b"C"
          and 6000 < r.pttl(claimk) <= 7000 and 6000 < r.pttl(owned) <= 7000,
          "a claim with an expiry over a record without one sets both",
          (r.pttl(claimk), r.pttl(owned)))

    # A refused claim (SET NX finds the owner key) leaves it as it was.
    before = (r.get(owned), r.pttl(owned), r.hgetall(claimk))
    check(err(ours.claim(k, "jb-d", None, "D"), "Job already claimed!",
              "jb-c"), "another owner is refused")
    after = (r.get(owned), r.pttl(owned), r.hgetall(claimk))
    check(after[0] == before[0] and after[2] == before[2]
          and 0 < after[1] <= before[1], "and nothing changed", (before, after))
    check(ours.consume(k, "jb-c", "C") == {"status": "ok"}, "consume")


def test_claim_many(srv):
    """claim_many claims each job as claim does, in one call: taskflow's
    postings and ours, each with its own fencing token in order; one
    taskflow holds, one no longer listed and one this owner already holds
    under the same claim id are answered as claim answers them; the keys
    are claim's (taskflow reads the owner and its last_modified); a bad
    argument writes nothing."""
    ns = "t9"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    r = ours.r
    tf.post("tf-job")
    ks = [ours.post_new()[0] for _ in range(4)]
    tfk = [j.key.decode() for j in tf.iterjobs(ensure_fresh=True)
           if j.name == "tf-job"][0]
    tf.claim(tf_job(tf, ks[1]), "tf-worker")
    gone = str(uuid.uuid4())
    check(ours.claim(ks[3], "jb", 60000, "C3")["status"] == "ok",
          "claim of the fourth beforehand")
    order = [tfk, ks[0], ks[1], gone, ks[2], ks[3]]
    cids = ["C%d" % i for i in range(len(order))]
    cids[5] = "C3"
    reps = ours.claim_many(order, "jb", 60000, cids)
    ok = [i for i, rep in enumerate(reps) if rep["status"] == "ok"]
    check(ok == [0, 1, 4], "the free jobs are claimed", reps)
    fences = [reps[i]["fence"] for i in ok]
    check(fences == sorted(fences) and len(set(fences)) == 3,
          "each its own fencing token, in order", fences)
    check(err(reps[2], "Job already claimed!", "tf-worker"),
          "one taskflow holds is refused, naming its owner", reps[2])
    check(err(reps[3], "Unknown job!"), "one not listed is unknown", reps[3])
    check(err(reps[5], "Job already claimed!", "jb")
          and reps[5].get("claim") == "C3",
          "our own claim under the same id: held, as claim says", reps[5])
    for i in ok:
        k = order[i]
        check(r.get(ours.key(k + ".owned")) == b"jb"
              and 50000 < r.pttl(ours.key(k + ".owned")) <= 60000
              and r.hmget(ours.key(k + ".claim"), "id", "fence")
              == [cids[i].encode(), str(reps[i]["fence"]).encode()],
              "owner key with the lease, and the claim record", k)
        check(tf_job(tf, k).state == "CLAIMED"
              and tf.find_owner(tf_job(tf, k)) == "jb",
              "taskflow sees the claim", k)
    bad = ours.claim_many([ks[2]], "", None, ["X"])
    check(err(bad, "Invalid argument!"), "an empty owner is refused", bad)
    bad = ours.claim_many([ks[2]], "jb", None, [""])
    check(err(bad, "Invalid argument!"), "an empty claim id is refused", bad)


def test_server_calls(srv):
    """The claim script makes the fewest server calls that write
    taskflow's keys and ours (each costs about a microsecond of server time):
    HEXISTS, SET NX, INCR, SET, HSET, PUBLISH without an expiry, and
    PEXPIRE of the record with one. Counted by INFO commandstats."""
    ours = Ours(srv.sock, "t8")
    r = ours.r

    def calls(fn):
        r.config_resetstat()
        fn()
        st = r.info("commandstats")
        return {name[len("cmdstat_"):]: v["calls"] for name, v in st.items()
                if name not in ("cmdstat_config|resetstat", "cmdstat_info")}

    k, _ = ours.post_new()
    got = calls(lambda: ours.claim(k, "jb", None, "A"))
    want = {"evalsha": 1, "hexists": 1, "set": 2, "incr": 1, "hset": 1,
            "publish": 1}
    check(got == want, "a claim without expiry: one EVALSHA, six calls", got)
    k, _ = ours.post_new()
    got = calls(lambda: ours.claim(k, "jb", 5000, "B"))
    want["pexpire"] = 1
    check(got == want, "a claim with an expiry: one more (PEXPIRE)", got)
    got = calls(lambda: ours.post_new())
    check(got == {"evalsha": 1, "hget": 1, "get": 1, "incr": 1, "hsetnx": 1,
                  "set": 1, "publish": 1},
          "a post: the marker's expiry set with it (SET PX)", got)


def test_unique_and_cancel(srv):
    """Unique keys held in NS:unique (reserve.lua, post.lua,
    freed by consume, trash and cancel; a holder Redis no longer lists is
    stale) and cancel.lua, as taskflow sees them."""
    ns = "t9"
    ours = Ours(srv.sock, ns)
    tf = taskflow_board(srv.sock, ns)
    uq = ours.key("unique")
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    check(err(ours.reserve("", a, 1000), "Invalid argument!"),
          "reserve: an empty key is refused")
    check(err(ours.reserve("K", a, "x"), "Invalid argument!"),
          "reserve: a hold that is not a number is refused")
    check(ours.reserve("K", a, 60000) == {"status": "ok"}, "a reserves K")
    v = ours.r.hget(uq, "K").decode()
    check(v.startswith(a + " "), "NS:unique holds a's reservation", v)
    rep = ours.reserve("K", b, 60000)
    check(err(rep, "Unique key held!") and rep.get("holder") == a,
          "b's reservation of K is refused, naming a", rep)
    # b's post with K is refused too, writing nothing, taking no number.
    seq = ours.r.get(ours.key("sequence"))
    rep = ours.post(b, posting_prefix(b, "b", "NORMAL", utcnow()), unique="K")
    check(err(rep, "Unique key held!") and rep.get("holder") == a,
          "b's post with K is refused, naming a", rep)
    check(ours.r.get(ours.key("sequence")) == seq and
          not ours.r.hexists(ours.key("listings"), b),
          "the refused post wrote nothing")
    rep = ours.post(a, posting_prefix(a, "a", "NORMAL", utcnow()), unique="K")
    check(rep.get("status") == "ok", "a's post with its reservation", rep)
    check(ours.r.hget(uq, "K") == a.encode(), "K is the listed a's")
    check(ours.r.get(ours.key(a + ".unique")) == b"K" and
          ours.r.pttl(ours.key(a + ".unique")) == -1,
          "NS:a.unique holds K, with no expiry once posted")
    check(ours.reserve("K", a, 0) == {"status": "ok"} and
          ours.r.hget(uq, "K") == a.encode(),
          "a give-back does not free the key of a listed holder")
    # Cancel: unclaimed.
    check(tf_job(tf, a) is not None, "taskflow lists a")
    check(ours.cancel(a) == {"status": "ok"}, "cancel of the unclaimed a")
    check(tf_job(tf, a) is None, "taskflow no longer lists the cancelled a")
    check(ours.r.hget(uq, "K") is None and
          not ours.r.exists(ours.key(a + ".unique")),
          "the cancel freed K")
    check(err(ours.cancel(a), "Unknown job!"), "a second cancel: Unknown job!")
    # Cancel: claimed.
    c, _ = ours.post_new(unique="C")
    ours.claim(c, "bob", None, "cid-c")
    rep = ours.cancel(c)
    check(err(rep, "Job already claimed!", "bob"),
          "cancel of a claimed job refused, naming bob", rep)
    check(ours.r.hexists(ours.key("listings"), c), "still listed")
    rep = ours.cancel(c, force=True)
    check(rep == {"status": "ok", "owner": "bob"}, "forced, naming bob", rep)
    check(not ours.r.exists(ours.key(c + ".owned")) and
          not ours.r.exists(ours.key(c + ".claim")) and
          not ours.r.exists(ours.key(c + ".last_modified")) and
          ours.r.hget(uq, "C") is None,
          "nothing of the cancelled job is left but its marker")
    check(err(ours.consume(c, "bob", "cid-c"), "Unknown job!"),
          "the forced-off holder's consume: Unknown job!")
    # consume and trash free the key; taskflow's consume leaves a stale one.
    d, _ = ours.post_new(unique="D")
    ours.claim(d, "w", None, "cid-d")
    ours.consume(d, "w", "cid-d")
    check(ours.r.hget(uq, "D") is None, "our consume freed D")
    e, _ = ours.post_new(unique="E")
    ours.claim(e, "w", None, "cid-e")
    ours.trash(e, "w", "cid-e")
    check(ours.r.hget(uq, "E") is None, "our trash freed E")
    f, _ = ours.post_new(unique="F")
    job = tf_job(tf, f)
    tf.claim(job, "tf")
    tf.consume(job, "tf")
    check(ours.r.hget(uq, "F") == f.encode(),
          "taskflow's consume leaves F naming f")
    g = str(uuid.uuid4())
    check(ours.reserve("F", g, 60000) == {"status": "ok"},
          "f is no longer listed: a stale holder, F is taken over")


def test_outcome_record(srv):
    """How a job ended, beyond taskflow's keys: our consume, trash and
    cancel keep it in K.outcome (the caller's msgpack map, with its
    expiry); taskflow's keys are left exactly as a plain consume or trash
    leaves them, and taskflow's board reads the job as before. A plain
    consume deletes an older record of the uuid."""
    ns = "t11"
    tf = taskflow_board(srv.sock, ns)
    ours = Ours(srv.sock, ns)
    failed = msgpack.packb({"end": "failed", "result": msgpack.packb(
        {"err": "x"}), "owner": "jb"})
    k, _ = ours.post_new(name="fails")
    check(ours.claim(k, "jb", None, "c1").get("status") == "ok", "claim")
    check(ours.consume(k, "jb", "c1", outcome=failed) == {"status": "ok"},
          "a failed consume")
    check(ours.r.get(ours.key(k + ".outcome")) == failed,
          "K.outcome holds the record as given")
    pttl = ours.r.pttl(ours.key(k + ".outcome"))
    check(OUTCOME_TTL_MS - 60000 < pttl <= OUTCOME_TTL_MS,
          "with the ttl given", pttl)
    check(tf_job(tf, k) is None and
          not ours.r.exists(ours.key(k + ".owned")) and
          not ours.r.exists(ours.key(k + ".last_modified")),
          "taskflow's keys are gone as after a plain consume")
    k5, _ = ours.post_new(name="bad ttl")
    check(ours.claim(k5, "jb", None, "c5").get("status") == "ok", "claim k5")
    check(err(ours.consume(k5, "jb", "c5", outcome=failed, ttl="0"),
              "Invalid argument!"), "an outcome without a ttl is refused")

    dead = msgpack.packb({"end": "dead", "cause": "buried",
                          "reason": "poison"})
    k2, _ = ours.post_new(name="poisoned")
    check(ours.claim(k2, "jb", None, "c2").get("status") == "ok", "claim k2")
    check(ours.trash(k2, "jb", "c2", outcome=dead) == {"status": "ok"},
          "a trash with a dead letter's cause")
    check(ours.r.get(ours.key(k2 + ".outcome")) == dead, "its record")
    check(ours.r.hexists(ours.key("trash"), k2) and tf_job(tf, k2) is None,
          "taskflow's trash holds it, its listing does not")

    k3, _ = ours.post_new(name="cancelled")
    check(ours.cancel(k3) == {"status": "ok"}, "a cancel")
    check(msgpack.unpackb(ours.r.get(ours.key(k3 + ".outcome"))) ==
          {"end": "cancelled"}, "its record says cancelled")

    # A record left by an earlier ending of the uuid goes with a plain
    # consume of it.
    k4, _ = ours.post_new(name="plain")
    ours.r.set(ours.key(k4 + ".outcome"), failed)
    check(ours.claim(k4, "jb", None, "c4").get("status") == "ok", "claim k4")
    check(ours.consume(k4, "jb", "c4") == {"status": "ok"}, "plain consume")
    check(not ours.r.exists(ours.key(k4 + ".outcome")),
          "a plain consume leaves no record")
    names = sorted(j.name for j in tf.iterjobs(ensure_fresh=True))
    check(names == ["bad ttl"], "taskflow lists none of them but the job "
          "whose consume was refused", names)


def test_pending_reservation(srv):
    """A pending reservation (made before a board's local post commits)
    refuses nobody: another reservation is told to wait ("Unique key
    pending!"), a publication takes the key over, and once it ran out the
    key is free. Confirmed (reserved again without "p"), it holds."""
    ns = "t12"
    ours = Ours(srv.sock, ns)
    g, n = str(uuid.uuid4()), str(uuid.uuid4())
    check(ours.reserve("P", g, 300, "p") == {"status": "ok"}, "pending")
    check(ours.r.hget(ours.key("unique"), "P").endswith(b" p"),
          "marked pending")
    rep = ours.reserve("P", n, 60000)
    check(err(rep, "Unique key pending!") and rep.get("holder") == g,
          "another reservation waits", rep)
    time.sleep(0.4)
    check(ours.reserve("P", n, 60000, "p") == {"status": "ok"},
          "run out: the key is free")
    check(ours.reserve("P", n, 60000) == {"status": "ok"}, "confirmed")
    check(not ours.r.hget(ours.key("unique"), "P").endswith(b" p"),
          "no longer pending")
    rep = ours.reserve("P", g, 60000, "p")
    check(err(rep, "Unique key held!") and rep.get("holder") == n,
          "a confirmed reservation refuses", rep)
    # A publication takes a pending reservation over.
    check(ours.reserve("Q", g, 60000, "p") == {"status": "ok"}, "pending Q")
    k, rep = ours.post_new(name="publishes", unique="Q")
    check(rep.get("status") == "ok", "the publication takes Q", rep)
    check(ours.r.hget(ours.key("unique"), "Q") == k.encode(), "held by it")
    rep = ours.reserve("Q", g, 60000)
    check(err(rep, "Unique key held!") and rep.get("holder") == k,
          "the pending one's confirmation finds it held", rep)


def test_schedule_run_keeps_its_key(srv):
    """A schedule's run (unique key schedule:NAME:RUN) keeps its key once it
    ends, for the outcome record's lifetime: every board holding the
    schedule posts its own copy of the run, and a copy published after the
    first ended must be refused, not run again. Consume, trash and cancel
    alike; any other key is freed at once."""
    ns = "t13"
    ours = Ours(srv.sock, ns)
    uq = ours.key("unique")
    ends = {
        "consume": lambda k: ours.consume(k, "jb", "c", outcome=msgpack.packb(
            {"end": "consumed"})),
        "trash": lambda k: ours.trash(k, "jb", "c", outcome=msgpack.packb(
            {"end": "dead", "cause": "trashed"})),
        "cancel": lambda k: ours.cancel(k, force=True),
    }
    for i, (how, end) in enumerate(sorted(ends.items())):
        run = "schedule:beat:%d" % (1790000000000000 + i)
        k, rep = ours.post_new(name="beat", unique=run)
        check(rep.get("status") == "ok", "post run %s" % run, rep)
        if how != "cancel":
            check(ours.claim(k, "jb", None, "c").get("status") == "ok",
                  "claim the run")
        check(end(k) == {"status": "ok"}, how + " the run")
        v = ours.r.hget(uq, run)
        check(v is not None and v.startswith(k.encode() + b" "),
              "after its %s the run still holds its key" % how, v)
        until = int(v.split()[1])
        sec, usec = ours.r.time()
        now_ms = int(sec) * 1000 + int(usec) // 1000
        check(OUTCOME_TTL_MS - 60000 < until - now_ms <= OUTCOME_TTL_MS,
              "for the outcome record's lifetime", until - now_ms)
        k2 = str(uuid.uuid4())
        rep = ours.post(k2, posting_prefix(k2, "beat", "NORMAL", utcnow()),
                        unique=run)
        check(err(rep, "Unique key held!") and rep.get("holder") == k,
              "another board's copy of the run is refused (%s)" % how, rep)
        check(not ours.r.hexists(ours.key("listings"), k2),
              "and not listed")
    k, rep = ours.post_new(name="plain", unique="schedulex:1")
    check(ours.claim(k, "jb", None, "c").get("status") == "ok", "claim")
    check(ours.consume(k, "jb", "c", outcome=msgpack.packb(
        {"end": "consumed"})) == {"status": "ok"}, "consume")
    check(not ours.r.hexists(uq, "schedulex:1"), "any other key is freed")


def main():
    srv = Server()
    try:
        print("redis-server %s, taskflow RedisJobBoard (%s)"
              % (srv.version, impl_redis.__file__))
        for t in (test_taskflow_posts_we_claim_and_consume,
                  test_we_post_taskflow_lists_claims_consumes,
                  test_posted_marker,
                  test_bytes_match_taskflow,
                  test_refusals_and_expiry,
                  test_notices,
                  test_claim_over_a_record_left_behind,
                  test_server_calls,
                  test_claim_many,
                  test_unique_and_cancel,
                  test_outcome_record,
                  test_pending_reservation,
                  test_schedule_run_keeps_its_key,
                  test_race):
            only = os.environ.get("JB_SYNC_TESTS")
            if only and t.__name__ not in only.split(","):
                continue
            before = checks
            t(srv)
            print("ok: %s (%d checks)" % (t.__name__, checks - before))
    except AssertionError as e:
        print(e, file=sys.stderr)
        return 1
    except Exception:  # a taskflow error where a check expected none
        import traceback
        traceback.print_exc()
        print("FAIL: unexpected exception (above)", file=sys.stderr)
        return 1
    finally:
        srv.stop()
    print("all %d checks passed" % checks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
