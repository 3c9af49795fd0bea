#!/usr/bin/python3
"""The job model across hosts: boards synced through one redis-server,
with `jobboard work` runners, `jobboard sync` daemons, posters and Redis
itself killed with SIGKILL and started again at random.

Setup (everything under one temporary directory, every process the test
starts is killed at its end, and only those): a redis-server on a unix
socket with --appendonly yes --appendfsync always (a restarted server
keeps what it acknowledged: jobboard's promise across a Redis restart is
about such a server); --hosts boards, each with its replicator (`jobboard
sync --keepalive 9 --verify-every 1`) and its `jobboard work --redis` workers (one with
claims bound to its process and --concurrency 2, one with --lease 9). The
same schedule ("beat", every 2 s from one start, catch-up all) is added on
every board. Every worker runs one CMD (written below) that appends
"start" and "end" lines, with the time, to its worker's run log, and acts
by the job's name:
  ok-*     exit 0, result {"ok": 1}       (also beat, the schedule's runs)
  fail-*   exit 1, result {"err": "x"}    (outcome failed)
  retry-*  exit 75 the first time, 0 after (one failed attempt)
  dead-*   exit 100                       (to the dead letters)
  long-*   exit 0 after 2 s               (claims held across kills)
The jobs are posted on every board (single, --batch, and with a unique
key from a small pool), some posts killed 0-40 ms in.

Chaos: for --seconds, at random: a worker SIGKILLed (its CMD gets SIGTERM
from the worker's death and writes no "end"), a replicator SIGKILLed,
redis-server SIGKILLed (one at a time), a post SIGKILLed; each started
again later: a worker within 2 s, Redis within 2 s (see REDIS_AWAY_MAX),
a replicator within 3 s or, one time in three, 4.5-13.5 s later (longer
than the keep-alive). Then everything runs again, the posting stops, the schedule
is removed and the work drains; one more post of every unique key is
made on a board in turn (a key must be free once its jobs are done) and
drained; then every process is stopped with SIGTERM.

Checked at the end (the audit):
  1. never two holders at once: the runs of one job (from "start" to
     "end", or to its worker's kill) never overlap, and no run of a job
     starts after a run of it that ended the job (exit 0, 1 or 100) and
     whose worker reported that ending;
  2. every job runs once: every acknowledged post's job has a run that
     ended it, or is a dead letter (a unique key taken elsewhere while
     Redis could not decide it); a job is ended by one run whose worker
     reported it, or (its worker was killed between the run's end and the
     report) by no reported run; every schedule run ran once across the
     hosts (by its scheduled_at, whichever board's copy), every run from
     the start to the removal was posted;
  3. one outcome everywhere: each board that records the job (history or
     dead letters) records the same outcome, result, cause and reason,
     and it is the one its run asked for; no job is "lost";
  4. no ghost unique key: the final post of every key is accepted;
  5. Redis lists nothing and holds no owner key, every board counts 0
     and passes `jobboard check`, every worker and replicator exits 0 on
     SIGTERM, and no worker had a completion refused by a board (a claim
     taken from under it).

Detach (--detach, on by default): once, at a random moment of the chaos,
one board's replicator is stopped (SIGTERM, exit 0), its workers are
SIGKILLed, its schedule is removed (its runs would be posted here and
elsewhere) and it is detached (`sync --detach --json`); its workers then
run on it without Redis, posts to it go on, and it stays local. Checked
at once, against what the board held just before: the same jobs, the
same dead letters and history; no job Redis-decided; every job ready or
delayed and unclaimed (no worker of it lives, so every claim is
released), its attempts unchanged (no attempt counted); the counts it
printed (jobs: those Redis decided, kept 0); `check` passes and `status`
says not synced. At the end: every job it held is recorded on it
(history or dead letters: nothing lost). A job Redis decided at the
detach stays listed in Redis and other boards may run it too: its runs
by the detached board after the detach are audited on their own (checks
1 to 3 against that board's records only), the others' against the
other boards' records.
A failure prints the seed; --keep keeps the directory.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NS = "jbx"
# A claim's lease (and a worker's keep-alive) runs on in Redis while Redis
# is away, and nobody can renew it then: an outage longer than what is left
# of it (two thirds of it, renewed every third) lets the claim lapse there,
# and the job runs again once Redis is back (the first completion refused).
# That is the promise of a lease, so Redis stays away at most 2 s here (plus
# its start), well inside the 6 s left of a 9 s lease.
KEEPALIVE = 9
REDIS_AWAY_MAX = 2.0
ACTS = ["ok"] * 6 + ["fail", "retry", "dead", "long"]

CMD = r"""#!/bin/sh
# $1: this worker's run log; $2: the directory of retry marks.
u=$JOBBOARD_UUID
n=$JOBBOARD_NAME
echo "start $u $n $$ $PPID $(date +%s.%N)" >>"$1"
case $n in
  long-*) sleep 2 ;;
  *) sleep 0.$(( ($$ % 4) + 1 )) ;;
esac
rc=0
case $n in
  fail-*) rc=1; echo '{"err": "x"}' ;;
  dead-*) rc=100 ;;
  retry-*) if [ ! -e "$2/$u" ]; then : >"$2/$u"; rc=75; else echo '{"ok": 1}'; fi ;;
  *) echo '{"ok": 1}' ;;
esac
echo "end $u $n $$ $PPID $(date +%s.%N) $rc" >>"$1"
exit $rc
"""


class Failed(Exception):
    pass


class Fleet:
    def __init__(self, args):
        self.a = args
        self.rng = random.Random(args.seed)
        self.jb = os.path.abspath(args.jobboard)
        self.root = tempfile.mkdtemp(prefix="jb-xhost.")
        self.sock = os.path.join(self.root, "redis.sock")
        self.url = "unix://" + self.sock
        self.hosts = ["h%d" % i for i in range(args.hosts)]
        self.dirs = {h: os.path.join(self.root, h) for h in self.hosts}
        self.procs = {}        # name -> Popen (the running ones)
        self.restart_at = {}   # name -> when to start it again
        self.kills = {}        # pid -> time of our SIGKILL (workers)
        self.worker_pids = {}  # pid -> its stderr log
        self.lives = 0
        self.started = []      # every Popen, for the cleanup
        self.posts = []        # dicts: host, names, unique, uuids, acked
        self.inflight = []     # (Popen, post dict, kill_at or None)
        self.failures = []
        self.counts = {"worker": 0, "sync": 0, "redis": 0, "post": 0}
        self.n = 0
        self.detached = None   # the detached board's host, once detached
        self.detach_t = None   # when its workers were killed for it
        self.held = {}         # uuid -> its job (list --json) at the detach
        os.makedirs(os.path.join(self.root, "redis"))
        os.makedirs(os.path.join(self.root, "tries"))
        self.cmd = os.path.join(self.root, "cmd.sh")
        with open(self.cmd, "w") as f:
            f.write(CMD)
        os.chmod(self.cmd, 0o755)

    # ------------------------------------------------------------ helpers
    def log(self, msg):
        print("[%6.1fs] %s" % (time.time() - self.t0, msg), flush=True)

    def fail(self, msg):
        self.failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr, flush=True)

    def run(self, argv, check=True, **kw):
        r = subprocess.run([self.jb] + argv, capture_output=True, text=True,
                           timeout=120, **kw)
        if check and r.returncode != 0:
            raise Failed("jobboard %s exited %d: %s" %
                         (" ".join(argv), r.returncode, r.stderr.strip()))
        return r

    def spawn(self, name, argv, log):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=open(log, "a"))
        self.procs[name] = p
        self.started.append(p)
        return p

    def rcli(self, *args):
        r = subprocess.run(["redis-cli", "-s", self.sock] + list(args),
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip()

    # ---------------------------------------------------------- processes
    def start(self, name):
        if name == "redis":
            self.spawn(name, [
                "redis-server", "--port", "0", "--unixsocket", self.sock,
                "--unixsocketperm", "700", "--save", "", "--appendonly",
                "yes", "--appendfsync", "always", "--dir",
                os.path.join(self.root, "redis"), "--logfile",
                os.path.join(self.root, "redis", "log")],
                os.path.join(self.root, "redis", "stderr"))
            for _ in range(200):
                if self.rcli("ping") == "PONG":
                    return
                time.sleep(0.05)
            raise Failed("redis-server did not start")
        kind, host = name.split(":")[0], name.split(":")[1]
        d = self.dirs[host]
        if kind == "sync":
            self.spawn(name, [self.jb, "--board", d, "sync", "--redis",
                              self.url, "--namespace", NS, "--poll", "0.5",
                              "--keepalive", str(KEEPALIVE),
                              "--verify-every", "1"],
                       os.path.join(self.root, "sync-%s.log" % host))
        else:
            w = name.split(":")[2]
            who = "%s-%s" % (host, w)
            extra = (["--concurrency", "2"] if w == "w0" else
                     ["--lease", str(KEEPALIVE)])
            # a log per life: what a life reported is told from the others'
            self.lives += 1
            err = os.path.join(self.root, "err-%s.%d.log" % (who, self.lives))
            if host != self.detached:
                extra += ["--redis", self.url, "--namespace", NS]
            p = self.spawn(name, [self.jb, "--durability", "none", "--board",
                                  d, "work", "--who", who] + extra +
                           ["--", self.cmd,
                            os.path.join(self.root, "run-%s.log" % who),
                            os.path.join(self.root, "tries")], err)
            self.worker_pids[p.pid] = err

    def kill(self, name, later):
        p = self.procs.pop(name)
        if name.startswith("worker:"):
            self.kills[p.pid] = time.time()
        p.send_signal(signal.SIGKILL)
        p.wait()
        self.restart_at[name] = time.time() + later
        self.counts[name.split(":")[0]] += 1

    def names(self):
        out = ["redis"]
        for h in self.hosts:
            out.append("sync:" + h)
            out += ["worker:%s:w0" % h, "worker:%s:w1" % h]
        return out

    def restart_due(self, force=False):
        now = time.time()
        for name, at in sorted(self.restart_at.items()):
            if force or at <= now:
                del self.restart_at[name]
                self.start(name)

    def check_alive(self):
        for name, p in list(self.procs.items()):
            if p.poll() is not None:
                raise Failed("%s exited %d by itself (see %s)" %
                             (name, p.returncode, self.root))

    # -------------------------------------------------------------- posts
    def post(self, may_kill):
        host = self.rng.choice(self.hosts)
        self.n += 1
        kind = self.rng.random()
        argv = [self.jb, "--durability", "none", "--board", self.dirs[host],
                "post"]
        stdin = None
        unique = None
        if kind < 0.25:
            unique = "u%d" % self.rng.randrange(self.a.keys)
            names = ["ok-%s-%d" % (host, self.n)]
            argv += ["--unique", unique, names[0]]
        elif kind < 0.5:
            k = self.rng.randint(2, 5)
            names = ["%s-%s-%d.%d" % (self.rng.choice(ACTS), host, self.n, i)
                     for i in range(k)]
            argv += ["--batch"]
            stdin = "".join(json.dumps({"name": n}) + "\n" for n in names)
        else:
            names = ["%s-%s-%d" % (self.rng.choice(ACTS), host, self.n)]
            argv += [names[0]]
        rec = {"host": host, "names": names, "unique": unique, "uuids": [],
               "acked": False, "rc": None}
        self.posts.append(rec)
        p = subprocess.Popen(argv, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.started.append(p)
        if stdin is not None:
            try:
                p.stdin.write(stdin)
            except BrokenPipeError:
                pass
        p.stdin.close()
        kill_at = None
        if may_kill and self.rng.random() < 0.2:
            kill_at = time.time() + self.rng.uniform(0, 0.04)
        self.inflight.append((p, rec, kill_at))

    def reap_posts(self, wait=False):
        keep = []
        for p, rec, kill_at in self.inflight:
            if kill_at is not None and p.poll() is None and \
                    time.time() >= kill_at:
                p.send_signal(signal.SIGKILL)
                self.counts["post"] += 1
            if wait:
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            if p.poll() is None:
                keep.append((p, rec, kill_at))
                continue
            out, err = p.stdout.read(), p.stderr.read()
            p.stdout.close()
            p.stderr.close()
            rec["rc"] = p.returncode
            uu = out.split()
            if p.returncode == 0:
                rec["acked"] = True
                rec["uuids"] = uu
                if len(uu) != len(rec["names"]):
                    self.fail("post of %s printed %d uuids" %
                              (rec["names"], len(uu)))
            elif p.returncode == 11 and rec["unique"]:
                rec["held_by"] = uu[0] if uu else None
            elif p.returncode != -9:
                self.fail("post of %s on %s exited %d: %s" %
                          (rec["names"], rec["host"], p.returncode,
                           err.strip()))
        self.inflight = keep

    # ---------------------------------------------------------- the run
    def setup(self):
        self.t0 = time.time()
        self.start("redis")
        for h in self.hosts:
            self.run(["init", self.dirs[h]])
            self.start("sync:" + h)
        # the replicators record the URL and namespace in their boards
        deadline = time.time() + 20
        for h in self.hosts:
            while "not synced" in self.run(["status", "--board",
                                            self.dirs[h]], check=False).stdout:
                if time.time() > deadline:
                    raise Failed("board %s never synced" % h)
                time.sleep(0.1)
        self.beat0 = int(time.time()) + 3
        for h in self.hosts:
            self.run(["--board", self.dirs[h], "schedule", "add", "beat",
                      "--every", "2", "--start", "@%d" % self.beat0,
                      "--job-name", "beat", "--catch-up", "all"])
        for name in self.names():
            if name.startswith("worker:"):
                self.start(name)
        self.log("redis, %d boards with replicators and workers; schedule "
                 "beat every 2 s from @%d" % (len(self.hosts), self.beat0))

    def jobs_of(self, h):
        r = self.run(["--board", self.dirs[h], "list", "--json"])
        return {j["uuid"]: j for j in map(json.loads, r.stdout.splitlines())}

    def detach(self, h):
        """Stop board h's replicator and workers, detach it, and check it
        against what it held just before (the docstring's "Detach")."""
        self.reap_posts(wait=True)
        self.restart_at.pop("sync:" + h, None)
        p = self.procs.pop("sync:" + h, None)
        if p is not None:
            p.send_signal(signal.SIGTERM)
            rc = p.wait(timeout=30)
            if rc != 0:
                self.fail("sync:%s exited %d on SIGTERM" % (h, rc))
        for name in ["worker:%s:w0" % h, "worker:%s:w1" % h]:
            if name in self.procs:
                self.kill(name, self.rng.uniform(0, 2))
        self.detach_t = time.time()
        self.run(["--board", self.dirs[h], "schedule", "remove", "beat"])
        before = self.jobs_of(h)
        dead0 = self.records(h)
        r = self.run(["--board", self.dirs[h], "sync", "--detach", "--json"])
        self.detached = h
        self.held = before
        said = json.loads(r.stdout)
        after = self.jobs_of(h)
        dead1 = self.records(h)
        remote = [u for u, j in before.items() if j.get("remote")]
        if set(after) != set(before):
            self.fail("detach of %s: jobs lost %s, added %s" %
                      (h, sorted(set(before) - set(after)),
                       sorted(set(after) - set(before))))
        if dead1 != dead0:
            self.fail("detach of %s changed its history or dead letters" % h)
        for u, j in after.items():
            if j.get("remote"):
                self.fail("detach of %s: job %s still Redis-decided" % (h, u))
            if j["owner"] is not None or j["claim"] is not None or \
                    j["state"] not in ("UNCLAIMED", "DELAYED"):
                self.fail("detach of %s: job %s not released: %s %s %s" %
                          (h, u, j["state"], j["owner"], j["claim"]))
            if u in before and j["attempts"] != before[u]["attempts"]:
                self.fail("detach of %s: job %s's attempts %s -> %s" %
                          (h, u, before[u]["attempts"], j["attempts"]))
        if said.get("jobs") != len(remote) or said.get("kept") != 0 or \
                said.get("released", -1) > len(remote) or \
                said.get("namespace") != NS:
            self.fail("detach of %s said %s; %d jobs were Redis-decided" %
                      (h, said, len(remote)))
        r = self.run(["check", "--board", self.dirs[h]], check=False)
        if r.returncode != 0:
            self.fail("check of %s after its detach: %s %s" %
                      (h, r.stdout.strip(), r.stderr.strip()))
        if "not synced" not in self.run(["status", "--board",
                                         self.dirs[h]]).stdout:
            self.fail("status of %s after its detach: still synced" % h)
        self.log("detached %s: %d jobs held (%d Redis-decided, %d claims "
                 "released), %d dead letters" %
                 (h, len(before), len(remote), said.get("released", -1),
                  said.get("dead_letters", -1)))

    def chaos(self):
        end = time.time() + self.a.seconds
        victims = [n for n in self.names()]
        detach_at = None
        if self.a.detach:
            detach_at = time.time() + self.a.seconds * self.rng.uniform(0.3, 0.7)
            detach_host = self.rng.choice(self.hosts)
        while time.time() < end:
            if detach_at is not None and time.time() >= detach_at:
                detach_at = None
                self.detach(detach_host)
            self.restart_due()
            self.reap_posts()
            self.check_alive()
            r = self.rng.random()
            if r < 0.55:
                self.post(may_kill=True)
            elif r < 0.8:
                live = [n for n in victims if n.startswith("worker:")
                        and n in self.procs]
                if live:
                    self.kill(self.rng.choice(live), self.rng.uniform(0, 2))
            elif r < 0.93:
                live = [n for n in victims if n.startswith("sync:")
                        and n in self.procs]
                if live:
                    later = self.rng.uniform(0, 3)
                    if self.rng.random() < 0.3:
                        later = self.rng.uniform(KEEPALIVE / 2, KEEPALIVE * 1.5)
                    self.kill(self.rng.choice(live), later)
            elif "redis" in self.procs:
                self.kill("redis", self.rng.uniform(0.3, REDIS_AWAY_MAX))
            time.sleep(self.rng.uniform(0.05, 0.3))
        self.reap_posts(wait=True)
        self.restart_due(force=True)
        self.log("chaos over: %d posts (%d killed), killed %d workers, %d "
                 "replicators, redis %d times" %
                 (len(self.posts), self.counts["post"], self.counts["worker"],
                  self.counts["sync"], self.counts["redis"]))

    def quiet(self):
        """Redis lists nothing and every board counts 0."""
        if self.rcli("hlen", NS + ":listings") != "0":
            return False
        for h in self.hosts:
            r = self.run(["count", "--board", self.dirs[h]], check=False)
            if r.stdout.strip() != "0":
                return False
        return True

    def dump_stuck(self):
        """What Redis and the boards hold of the jobs left (for a failure's
        diagnosis)."""
        listed = self.rcli("hkeys", NS + ":listings").split()
        for u in listed:
            print("stuck %s: owner %r pttl %s claim %r" %
                  (u, self.rcli("get", "%s:%s.owned" % (NS, u)),
                   self.rcli("pttl", "%s:%s.owned" % (NS, u)),
                   self.rcli("hgetall", "%s:%s.claim" % (NS, u))),
                  file=sys.stderr)
            for h in self.hosts:
                r = self.run(["--board", self.dirs[h], "show", "--json", u],
                             check=False)
                print("  %s: %s" % (h, (r.stdout or r.stderr).strip()[:600]),
                      file=sys.stderr)

    def drain(self, what, limit):
        t = time.time()
        while not self.quiet():
            self.check_alive()
            if time.time() - t > limit:
                counts = {h: self.run(["count", "--board", self.dirs[h]],
                                      check=False).stdout.strip()
                          for h in self.hosts}
                self.dump_stuck()
                raise Failed("%s: not drained after %d s: Redis lists %s, "
                             "boards count %s" %
                             (what, limit,
                              self.rcli("hlen", NS + ":listings"), counts))
            time.sleep(0.3)
        self.log("%s: drained in %.1f s" % (what, time.time() - t))

    def finish(self):
        # every due run ticked by the live workers, then no more runs
        time.sleep(3)
        self.beat_sure = time.time() - 3
        for h in self.hosts:
            if h != self.detached:
                self.run(["--board", self.dirs[h], "schedule", "remove",
                          "beat"])
        self.beat_last = time.time()
        self.drain("after the chaos", 180)
        # the replicators give back the keys of jobs that ended unpublished
        # at their next comparison (--verify-every 1)
        time.sleep(2.5)
        # a key must be free once its jobs are done: post each once more
        for i in range(self.a.keys):
            host = self.hosts[i % len(self.hosts)]
            name = "ok-final-%d" % i
            r = self.run(["--durability", "none", "--board", self.dirs[host],
                          "post", "--unique", "u%d" % i, name], check=False)
            rec = {"host": host, "names": [name], "unique": "u%d" % i,
                   "uuids": r.stdout.split(), "acked": r.returncode == 0,
                   "rc": r.returncode}
            self.posts.append(rec)
            if r.returncode != 0:
                self.fail("unique key u%d is not free once its jobs are done: "
                          "post on %s exited %d: %s %s" %
                          (i, host, r.returncode, r.stdout.strip(),
                           r.stderr.strip()))
        self.drain("the final unique posts", 60)
        for name in list(self.procs):
            if name == "redis":
                continue
            p = self.procs.pop(name)
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = "none (killed after 30 s)"
            if rc != 0:
                self.fail("%s exited %s on SIGTERM" % (name, rc))

    # ----------------------------------------------------------- the audit
    def records(self, h):
        """uuid -> ("history", record) or ("dead", record) on board h."""
        out = {}
        r = self.run(["--board", self.dirs[h], "history", "--json"])
        for line in r.stdout.splitlines():
            rec = json.loads(line)
            if rec["uuid"] in out:
                self.fail("board %s: job %s twice in the history" %
                          (h, rec["uuid"]))
            out[rec["uuid"]] = ("history", rec)
        r = self.run(["--board", self.dirs[h], "dead", "list", "--json"])
        for line in r.stdout.splitlines():
            rec = json.loads(line)
            # a job sent to the dead letters leaves a history record too
            # (outcome dead, the same reason)
            was = out.get(rec["uuid"])
            if was is not None and (was[1]["outcome"] != "dead" or
                                    was[1]["reason"] != rec["reason"]):
                self.fail("board %s: job %s is a dead letter (%s) and its "
                          "history says %s" % (h, rec["uuid"], rec["reason"],
                                               was[1]))
            out[rec["uuid"]] = ("dead", rec)
        for u, (kind, rec) in out.items():
            if kind == "history" and rec["outcome"] == "dead":
                self.fail("board %s: job %s's history says dead, and it is "
                          "no dead letter" % (h, u))
        return out

    @staticmethod
    def ending(kind, rec):
        """What a board says of a job: comparable across boards."""
        if kind == "dead":
            return ("dead", rec["cause"], rec.get("reason"))
        return (rec["outcome"], json.dumps(rec.get("result"), sort_keys=True),
                rec.get("reason") if rec["outcome"] != "consumed" else None)

    def audit(self):
        # the runs
        runs = {}  # uuid -> list of run dicts
        for f in os.listdir(self.root):
            m = re.match(r"run-(.*)\.log$", f)
            if not m:
                continue
            open_runs = {}
            for line in open(os.path.join(self.root, f)):
                w = line.split()
                if w[0] == "start":
                    r = {"uuid": w[1], "name": w[2], "pid": int(w[3]),
                         "worker": int(w[4]), "start": float(w[5]),
                         "end": None, "rc": None, "who": m.group(1)}
                    open_runs[(w[1], int(w[3]))] = r
                    runs.setdefault(w[1], []).append(r)
                elif w[0] == "end":
                    r = open_runs.pop((w[1], int(w[3])), None)
                    if r is None:
                        self.fail("run log %s: an end without a start: %s" %
                                  (f, line.strip()))
                        continue
                    r["end"], r["rc"] = float(w[5]), int(w[6])
        # what each worker process reported, from its stderr
        reported = {}  # (worker pid, uuid) -> outcomes
        refused = []
        for pid, f in self.worker_pids.items():
            for line in open(f):
                m = re.match(r"work: ([0-9a-f-]{36}) \S+: (\w+)", line)
                if m:
                    reported.setdefault((pid, m.group(1)), []).append(
                        m.group(2))
                    if m.group(2) == "refused":
                        refused.append(line.strip())
        for line in refused:
            self.fail("a worker's completion was refused (its claim was "
                      "taken): " + line)

        boards = {h: self.records(h) for h in self.hosts}
        posted = {}   # uuid -> post record (acknowledged)
        names = {}    # name -> post record
        for rec in self.posts:
            for n in rec["names"]:
                names[n] = rec
            for u in rec["uuids"]:
                posted[u] = rec

        # a job Redis decided at the detach: the detached board's runs of it
        # after the detach are one job, the others' runs another
        groups = []
        D = self.detached
        for u, rs in sorted(runs.items()):
            j = self.held.get(u)
            if j is None or not j.get("remote"):
                groups.append((u, rs, self.hosts))
                continue
            mine = [r for r in rs if r["who"].startswith(D + "-") and
                    r["start"] >= self.detach_t]
            rest = [r for r in rs if r not in mine]
            if mine:
                groups.append((u, mine, [D]))
            if rest:
                groups.append((u, rest, [h for h in self.hosts if h != D]))
        runs_of_beat = {}
        for u, rs, hs in groups:
            rs.sort(key=lambda r: r["start"])
            name = rs[0]["name"]
            if name != "beat" and name not in names:
                self.fail("job %s (%s) ran but was never posted" % (u, name))
            prev_end = None
            final_confirmed = None
            finals = 0
            for r in rs:
                end = r["end"]
                kill = self.kills.get(r["worker"])
                if end is None:
                    if kill is None:
                        self.fail("run of %s by %s (pid %d) has no end and its "
                                  "worker was not killed" %
                                  (u, r["who"], r["worker"]))
                        end = r["start"]
                    else:
                        end = kill
                if prev_end is not None and r["start"] < prev_end:
                    self.fail("job %s: two holders at once: a run by %s began "
                              "at %.3f before the run before it ended (%.3f)" %
                              (u, r["who"], r["start"], prev_end))
                if final_confirmed is not None:
                    self.fail("job %s ran again (by %s at %.3f) after its run "
                              "by %s ended it (exit %d)" %
                              (u, r["who"], r["start"], final_confirmed["who"],
                               final_confirmed["rc"]))
                prev_end = max(prev_end or 0, end)
                if r["rc"] in (0, 1, 100):
                    finals += 1
                    said = reported.get((r["worker"], u), [])
                    if any(o in ("consumed", "failed", "dead") for o in said):
                        final_confirmed = r
            r_last = rs[-1]
            if finals == 0:
                # its runs were killed, and then its publication found its
                # unique key taken (posted while Redis was away): buried
                buried = [boards[h][u][1] for h in hs
                          if u in boards[h] and boards[h][u][0] == "dead"
                          and boards[h][u][1]["cause"] == "buried" and
                          "unique key" in (boards[h][u][1]["reason"] or "")]
                if not buried:
                    self.fail("job %s (%s) never ran to its end (%d runs)" %
                              (u, name, len(rs)))
                continue
            if name == "beat":
                runs_of_beat.setdefault(u, r_last)
            # one outcome, everywhere it is recorded
            endings = {h: self.ending(*boards[h][u])
                       for h in hs if u in boards[h]}
            if not endings:
                self.fail("job %s (%s) ran but no board records how it "
                          "ended" % (u, name))
                continue
            if len(set(endings.values())) > 1:
                self.fail("job %s (%s) ended differently: %s" %
                          (u, name, endings))
            last = [r for r in rs if r["rc"] in (0, 1, 100)][-1]
            want = {0: ("consumed", json.dumps({"ok": 1}), None),
                    1: ("failed", json.dumps({"err": "x"}), None),
                    100: ("dead", "buried", "exit 100")}[last["rc"]]
            got = next(iter(endings.values()))
            if got[:2] != want[:2] and not (want[0] == "failed" and
                                            got[0] == "failed"):
                if not (got[0] == "dead" and got[1] == "buried" and
                        "unique key" in (got[2] or "")):
                    self.fail("job %s (%s): its run asked for %s, the boards "
                              "say %s" % (u, name, want, got))
            elif want[0] == "dead" and got[2] != "exit 100":
                self.fail("job %s: dead letter reason %r, expected 'exit 100'"
                          % (u, got[2]))
            if any(e[0] == "lost" for e in endings.values()):
                self.fail("job %s (%s) is 'lost' on a board" % (u, name))

        # every acknowledged job ended
        dead_any = set()
        for h in self.hosts:
            dead_any |= {u for u, (k, _) in boards[h].items() if k == "dead"}
        for u, rec in posted.items():
            if u not in runs and u not in dead_any:
                self.fail("job %s (%s), acknowledged on %s, never ran and is "
                          "no dead letter" % (u, rec["names"], rec["host"]))
            if u not in runs and u in dead_any:
                k = [boards[h][u][1] for h in self.hosts if u in boards[h]][0]
                if k["cause"] != "buried" or "unique" not in (k["reason"] or ""):
                    self.fail("job %s never ran and is a dead letter: %s" %
                              (u, k))

        # the detached board keeps every job it held: each one ended there
        for u, j in sorted(self.held.items()):
            if u not in boards[D]:
                self.fail("job %s (%s), held by %s when it was detached, is "
                          "recorded nowhere on it" % (u, j["name"], D))

        # the schedule: each run once, none missing
        by_run = {}
        for h in self.hosts:
            for u, (kind, rec) in boards[h].items():
                if rec.get("name") != "beat":
                    continue
                at = (rec.get("details") or {}).get("scheduled_at")
                if at is None:
                    self.fail("beat job %s on %s has no scheduled_at" % (u, h))
                    continue
                by_run.setdefault(at, set())
                if u in runs:
                    by_run[at].add(u)
        for at, uu in sorted(by_run.items()):
            # a run the detached board held, unpublished, runs there and
            # is posted again elsewhere: two jobs, by the detach's promise
            if len(uu) > 1 and not uu & set(self.held):
                self.fail("schedule run %d ran as %d jobs: %s" %
                          (at, len(uu), sorted(uu)))
        k = 0
        while self.beat0 + 2 * k <= self.beat_sure:
            at = (self.beat0 + 2 * k) * 1000000
            if not by_run.get(at):
                self.fail("schedule run @%d never ran" % (at // 1000000))
            k += 1
        for at in by_run:
            if at // 1000000 > self.beat_last + 2:
                self.fail("schedule run @%d ran after the schedule was "
                          "removed" % (at // 1000000))

        # Redis and the boards
        if self.rcli("hlen", NS + ":listings") != "0":
            self.fail("Redis still lists jobs")
        owned = self.rcli("--scan", "--pattern", NS + ":*.owned")
        if owned:
            self.fail("owner keys left in Redis: %s" % owned.split()[:5])
        for h in self.hosts:
            r = self.run(["check", "--board", self.dirs[h]], check=False)
            if r.returncode != 0:
                self.fail("check of board %s: %s %s" %
                          (h, r.stdout.strip(), r.stderr.strip()))
        nruns = sum(len(v) for v in runs.values())
        self.log("audit: %d jobs ran (%d runs), %d schedule runs, %d posts "
                 "(%d acknowledged)" %
                 (len(runs), nruns, len(by_run), len(self.posts),
                  sum(1 for p in self.posts if p["acked"])))

    def cleanup(self):
        for p in self.started:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                except OSError:
                    pass
        if self.a.keep or self.failures:
            print("kept %s" % self.root, file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobboard", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-detach", dest="detach", action="store_false",
                    help="detach no board")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = random.randrange(1 << 30)
    if not 2 <= a.hosts <= 9:
        ap.error("--hosts: 2 to 9")
    print("xhost: seed %d, %d hosts, %.0f s of chaos" %
          (a.seed, a.hosts, a.seconds), flush=True)
    f = Fleet(a)
    try:
        f.setup()
        f.chaos()
        f.finish()
        f.audit()
    except Failed as e:
        f.fail(str(e))
    finally:
        f.cleanup()
    if f.failures:
        print("xhost: %d failure(s), seed %d (--seed %d to run it again)" %
              (len(f.failures), a.seed, a.seed), file=sys.stderr)
        sys.exit(1)
    print("xhost: PASS (seed %d)" % a.seed)


if __name__ == "__main__":
    main()
