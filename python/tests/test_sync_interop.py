"""taskflow and the C tools on two boards sharing one Redis,
with real processes: a redis-server of the test's own (unix
socket in a temp dir), boards A and B each with its own replicator
(`jobboard sync`), and a shared taskflow persistence backend (its dir
backend).

1. A Python producer posts a taskflow job on board A through our taskflow
   backend (redis conf); a C worker (`jobboard work`) on board B runs it:
   its command (tf_sync_flow.py run-job) loads the logbook and runs the
   flow with taskflow.engines.
2. The C CLI posts a job with a logbook on board B (`jobboard post
   --book-name --book-uuid`); a taskflow BlockingConductor on board A runs
   it.

Each checks that the flow ran exactly once, that its flow detail is
SUCCESS, and that the job is COMPLETE on both boards and gone from
Redis's NS:listings. Skipped only when libjbsync is not built
(JOBBOARD_SYNC_LIBRARY unset or missing); a missing redis-server fails.
"""
import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
TOP = os.path.dirname(PYDIR)
PY = "/usr/bin/python3"
FLOW = os.path.join(HERE, "tf_sync_flow.py")

SYNC_LIB = os.environ.get("JOBBOARD_SYNC_LIBRARY")
if not SYNC_LIB or not os.path.exists(SYNC_LIB):
    pytest.skip("libjbsync is not built (JOBBOARD_SYNC_LIBRARY %s)"
                % ("is unset" if not SYNC_LIB else "names a missing file: "
                   + SYNC_LIB), allow_module_level=True)

if HERE not in sys.path:
    sys.path.insert(0, HERE)    # tf_sync_flow, whatever pytest's import mode

import redis  # noqa: E402  (python3-redis)
import tf_sync_flow  # noqa: E402
from taskflow import states  # noqa: E402
from taskflow.jobs import backends as j_backends  # noqa: E402

CLI = os.path.abspath(os.environ.get("JOBBOARD_CLI",
                                     os.path.join(TOP, "jobboard")))
# Bounds (s): replicators connecting; a worker or conductor waiting for
# its job (it then exits; the test waits RUN + 5 at most); a job's end
# reaching both boards. No test waits over ~60 s in all.
CONNECT = 10.0
RUN = 20.0
SETTLE = 10.0


def _site_dir(root):
    """The directory holding the jobboard dist-info (the taskflow entry
    point) on sys.path, for the child processes. tests/python.sh makes
    one; without it, one is made in `root` and put on sys.path (until the
    module's tests end)."""
    for ep in importlib.metadata.entry_points(group="taskflow.jobboards"):
        if ep.name == "jobboard" and ep.value.startswith("jobboard."):
            return os.path.dirname(os.path.abspath(str(ep.dist._path)))
    site = os.path.join(root, "site")
    info = os.path.join(site, "jobboard-0.1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: jobboard\nVersion: 0.1.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[taskflow.jobboards]\n"
                "jobboard = jobboard.taskflow_backend:JobboardJobBoard\n")
    sys.path.insert(0, site)
    return site


class Procs:
    """The processes the test started, killed (only these) at the end."""

    def __init__(self, root):
        self.root = root
        self.procs = []

    def start(self, argv, log, **kw):
        f = open(os.path.join(self.root, log), "ab")
        p = subprocess.Popen(argv, stdin=kw.pop("stdin", subprocess.DEVNULL),
                             stderr=f, **kw)
        f.close()
        p.log = os.path.join(self.root, log)
        self.procs.append(p)
        return p

    def killall(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def _tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


@pytest.fixture(scope="module")
def world():
    """One redis-server (unix socket, no persistence) for the module; a
    temp root removed at the end."""
    root = tempfile.mkdtemp(prefix="jb-interop.")
    procs = Procs(root)
    r = None
    path_before = list(sys.path)
    try:
        site = _site_dir(root)
        exe = shutil.which("redis-server")
        assert exe, "redis-server is not installed (apt-get install " \
            "redis-server): this test needs one"
        sock = os.path.join(root, "redis.sock")
        rdir = os.path.join(root, "redis")
        os.mkdir(rdir)
        srv = procs.start([exe, "--port", "0", "--unixsocket", sock,
                           "--unixsocketperm", "700", "--save", "",
                           "--appendonly", "no", "--dir", rdir,
                           "--logfile", os.path.join(rdir, "log")],
                          "redis-server.err")
        r = redis.Redis(unix_socket_path=sock)
        deadline = time.monotonic() + 10
        while True:
            try:
                if r.ping():
                    break
            except redis.exceptions.ConnectionError:
                pass
            assert srv.poll() is None and time.monotonic() < deadline, \
                "redis-server did not start:\n" + \
                _tail(os.path.join(rdir, "log"))
            time.sleep(0.05)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [site, PYDIR, HERE] + [p for p in os.environ.get(
                "PYTHONPATH", "").split(os.pathsep) if p])
        for k in ("JOBBOARD_DIR", "JOBBOARD_REDIS", "JOBBOARD_NAMESPACE",
                  "JOBBOARD_REDIS_PASSWORD"):
            env.pop(k, None)
        yield {"root": root, "url": "unix://" + sock, "redis": r,
               "env": env, "procs": procs}
    finally:
        if r is not None:
            r.close()
        procs.killall()
        sys.path[:] = [p for p in sys.path if p in path_before]
        shutil.rmtree(root, ignore_errors=True)


class Pair:
    """Boards A and B in their own directories, each with its replicator,
    sharing namespace `ns`, and a taskflow persistence backend (dir)."""

    def __init__(self, world, ns):
        self.w = world
        self.ns = ns
        self.dir = os.path.join(world["root"], ns)
        os.mkdir(self.dir)
        self.a = os.path.join(self.dir, "A")
        self.b = os.path.join(self.dir, "B")
        self.persist_dir = os.path.join(self.dir, "taskflow")
        self.persistence = tf_sync_flow.persistence(self.persist_dir)
        with contextlib.closing(self.persistence.get_connection()) as conn:
            conn.upgrade()
        self.syncs = {}
        for name, path in (("A", self.a), ("B", self.b)):
            self.cli("post", "--board", path, "setup")   # creates the board
            u = self.cli("claim-next", "--board", path, "--who", "setup")
            self.cli("consume", "--board", path, "--who", "setup", u)
            self.syncs[name] = world["procs"].start(
                [CLI, "--board", path, "sync", "--redis", world["url"],
                 "--namespace", ns, "--poll", "0.2"],
                "%s-sync-%s.log" % (ns, name), env=world["env"])
        for name, path in (("A", self.a), ("B", self.b)):
            self.until(lambda: json.loads(self.cli(
                "status", "--board", path, "--json"))["connected"],
                "replicator %s connected" % name,
                self.syncs[name].log, timeout=CONNECT)

    def cli(self, *args, check=True):
        p = subprocess.run([CLI] + list(args), capture_output=True,
                           text=True, env=self.w["env"], timeout=SETTLE)
        if check:
            assert p.returncode == 0, "jobboard %s: exit %d: %s" % (
                " ".join(args), p.returncode, p.stderr)
        return p.stdout.strip()

    def until(self, cond, what, log=None, timeout=SETTLE):
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                pytest.fail("not within %.0f s: %s%s" % (
                    timeout, what, "\n--- " + log + ":\n" + _tail(log)
                    if log else ""))
            time.sleep(0.05)

    def state(self, board, uuid):
        return self.cli("state", "--board", board, uuid)

    def history(self, board, uuid):
        for line in self.cli("history", "--board", board,
                             "--json").splitlines():
            rec = json.loads(line)
            if rec.get("uuid") == uuid:
                return rec
        return None

    def listings(self):
        return self.w["redis"].hgetall(self.ns + ":listings")

    def check_complete(self, uuid, owner):
        """The job is COMPLETE on both boards, each of whose history says
        `owner` consumed it, and gone from NS:listings. Returns board B's
        history record."""
        recs = {}
        for name, board in (("A", self.a), ("B", self.b)):
            self.until(lambda: self.state(board, uuid) == "COMPLETE",
                       "job %s COMPLETE on board %s" % (uuid, name),
                       self.syncs[name].log)
            rec = recs[name] = self.history(board, uuid)
            assert rec is not None, "board %s's history lacks %s" % (name,
                                                                     uuid)
            assert (rec["outcome"], rec["owner"]) == ("consumed", owner), \
                (name, rec)
        listed = self.listings()
        assert not any(uuid.encode() in k or uuid.encode() in v
                       for k, v in listed.items()), listed
        assert self.cli("count", "--board", self.a) == "0"
        assert self.cli("count", "--board", self.b) == "0"
        return recs["B"]

    def stop(self):
        """SIGTERM to both replicators: each exits 0."""
        for name, p in self.syncs.items():
            p.send_signal(signal.SIGTERM)
        for name, p in self.syncs.items():
            try:
                rc = p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                pytest.fail("replicator %s did not exit within 10 s of "
                            "SIGTERM" % name)
            assert rc == 0, "replicator %s exited %d:\n%s" % (
                name, rc, _tail(p.log))


def _flow_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def _flow_state(pair, book, fd):
    return tf_sync_flow.load_flow_detail(pair.persistence, book.uuid,
                                         fd.uuid).state


def test_taskflow_post_on_a_run_by_c_worker_on_b(world):
    """A flow posted with our taskflow backend on board A is run, once, by
    `jobboard work` on board B."""
    pair = Pair(world, "interop1")
    out = os.path.join(pair.dir, "flow.out")
    worker = world["procs"].start(
        [CLI, "--board", pair.b, "work", "--who", "c-worker-b", "--jobs",
         "1", "--timeout", str(RUN), "--json", "--", PY, FLOW, "run-job",
         pair.persist_dir],
        "interop1-work.log", stdout=subprocess.PIPE, env=world["env"])

    book, fd = tf_sync_flow.save_book(pair.persistence, "interop1-book")
    board = j_backends.fetch("producer-a", {
        "board": "jobboard", "path": pair.a, "create": True,
        "redis": world["url"], "namespace": pair.ns},
        persistence=pair.persistence)
    board.connect()
    try:
        job = board.post("interop1-job", book=book,
                         details={"flow_uuid": fd.uuid,
                                  "store": {"out": out}})
        try:
            stdout, _ = worker.communicate(timeout=RUN + 5)
        except subprocess.TimeoutExpired:
            pytest.fail("jobboard work did not end:\n" + _tail(worker.log))
        assert worker.returncode == 0, _tail(worker.log)
        # Each job's line; the last line is work's summary.
        runs = [r for r in map(json.loads, stdout.decode().splitlines())
                if "summary" not in r]
        assert [(r["uuid"], r["outcome"]) for r in runs] == \
            [(job.uuid, "consumed")], (runs, _tail(worker.log))

        assert _flow_lines(out) == ["first " + job.uuid,
                                    "second " + job.uuid]
        assert _flow_state(pair, book, fd) == states.SUCCESS
        rec = pair.check_complete(job.uuid, "c-worker-b")
        assert rec["result"] == {"flow_uuid": fd.uuid,
                                 "state": states.SUCCESS}, rec
        assert board.job_count == 0
        pair.until(lambda: job.state == states.COMPLETE,
                   "the taskflow job reads COMPLETE on board A")
    finally:
        board.close()
    pair.stop()
    assert _flow_lines(out) == ["first " + job.uuid, "second " + job.uuid]


def test_cli_post_on_b_run_by_taskflow_conductor_on_a(world):
    """A job posted with `jobboard post --book-name --book-uuid` on board B
    is run, once, by a taskflow BlockingConductor on board A."""
    pair = Pair(world, "interop2")
    out = os.path.join(pair.dir, "flow.out")
    book, fd = tf_sync_flow.save_book(pair.persistence, "interop2-book")
    conductor = world["procs"].start(
        [PY, FLOW, "conduct", pair.a, world["url"], pair.ns,
         pair.persist_dir, "conductor-a", str(RUN)],
        "interop2-conductor.log", stdout=subprocess.PIPE, env=world["env"])

    uuid = pair.cli("post", "--board", pair.b, "interop2-job",
                    "--book-name", book.name, "--book-uuid", book.uuid,
                    "--details", json.dumps({"flow_uuid": fd.uuid,
                                             "store": {"out": out}}))
    try:
        stdout, _ = conductor.communicate(timeout=RUN + 5)
    except subprocess.TimeoutExpired:
        pytest.fail("the conductor did not end:\n" + _tail(conductor.log))
    assert conductor.returncode == 0, _tail(conductor.log)
    events = [json.loads(x) for x in stdout.decode().splitlines()]
    assert {"event": "job_consumed", "uuid": uuid} in events, \
        (events, _tail(conductor.log))

    # The conductor ran the flow in its own process: no JOBBOARD_UUID.
    assert _flow_lines(out) == ["first -", "second -"]
    assert _flow_state(pair, book, fd) == states.SUCCESS
    pair.check_complete(uuid, "conductor-a")
    pair.stop()
    assert _flow_lines(out) == ["first -", "second -"]
