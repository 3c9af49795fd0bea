#!/usr/bin/python3
"""bench-python.py - the job operations through the Python binding
(python/jobboard), through its taskflow backend, and through taskflow's
own Redis board on a local redis-server, beside the C API, in one run.

    /usr/bin/python3 bench/bench-python.py [--jobs N] [--details-bytes B]
        [--repeat R] [--modes LIST] [--sides LIST] [--json]
    /usr/bin/python3 bench/bench-python.py --profile SIDE [--modes MODE]

Run it from the build directory (it uses ./jobboard-bench and
./.libs/libjobboard.so.0 unless JOBBOARD_BENCH and JOBBOARD_LIBRARY say
otherwise, and the package in python/ beside this script unless
`jobboard` is importable already). It starts a redis-server of its own on
a unix socket in a temporary directory (no TCP, no persistence) and stops
it at the end.

Sides (--sides, default all four):
  taskflow-redis  taskflow's RedisJobBoard (taskflow.jobs.backends.
                  impl_redis, on a taskflow.utils.redis_utils.RedisClient
                  on that server, a namespace of its own)
  backend         jobboard.taskflow_backend.JobboardJobBoard through
                  taskflow's same API, on a fresh board per durability
                  (fetched through the taskflow.jobboards entry point
                  "jobboard" when installed, else imported directly)
  binding         jobboard.Board: post, claim_next, consume, on a fresh
                  board per durability
  c               `jobboard-bench` (the C API) in each durability, with
                  the same counts
Each Python side, per durability (taskflow-redis once: Redis has none),
after 50 untimed cycles, with the same job (--name, and details of
--details-bytes bytes as msgpack, a temporary taskflow logbook):
  post     N posts
  claim    taskflow's API: iterjobs(only_unclaimed=True), claiming each
           job it yields (the iteration is timed with the claims); the
           binding: N claim_next
  consume  each claimed job consumed
  cycle    N times post, claim (the job post returned; the binding:
           claim_next), consume
Each figure is the phase's wall time over N: us per operation (us per
job for the cycle) and operations per second; the median over --repeat
runs, the sides taken in turns within each run.

The binding's overhead over the C API: `jobboard-bench` measures single
posts (jb_job_post, its posting part) and the cycle (jb_job_post,
jb_claim_next, jb_consume) but no claim or consume alone, so
the overhead is given for post and for the cycle only. For it the
binding runs once more with bench's own job ("bench.resize-image",
{"task": "resize", "width": 640, "height": 480}, no logbook): the
"binding (C's job)" row. overhead = binding us/op - C us/op, and the
ratio binding / C.

--profile SIDE runs that side once (first of --modes) under cProfile and
prints where its time went, instead of the table.

It reports, it asserts nothing about speed; it exits 1 if an operation
fails or a job is left behind, 2 on a usage error.
"""
import argparse
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
WARMUP = 50
WHO = "bench-worker"
C_NAME = "bench.resize-image"
C_DETAILS = {"task": "resize", "width": 640, "height": 480}
MODES = ("full", "normal", "none")
SIDES = ("taskflow-redis", "backend", "binding", "c")
PHASES = ("post", "claim", "consume", "cycle")


class BenchError(Exception):
    pass


def find_first(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return os.path.abspath(p)
    return None


def setup_paths():
    """Point the package at the built library before it is imported."""
    if "JOBBOARD_LIBRARY" not in os.environ:
        lib = find_first(".libs/libjobboard.so.0",
                         os.path.join(TOP, ".libs/libjobboard.so.0"))
        if lib:
            os.environ["JOBBOARD_LIBRARY"] = lib
    try:
        import jobboard  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(TOP, "python"))


def make_details(size):
    """A details dict whose msgpack encoding is `size` bytes (or the
    nearest size above it that msgpack's string headers allow)."""
    import msgpack
    base = {"task": "resize", "data": ""}
    floor = len(msgpack.packb(base, use_bin_type=True))
    if size <= floor:
        return base
    for k in range(size + 8):
        d = {"task": "resize", "data": "x" * k}
        if len(msgpack.packb(d, use_bin_type=True)) >= size:
            return d
    return d


def packed_len(d):
    import msgpack
    return len(msgpack.packb(d, use_bin_type=True))


def timed(fn, n):
    """Call fn() n times; wall ns and the results."""
    gc.collect()
    clock = time.perf_counter_ns
    out = []
    t0 = clock()
    for _ in range(n):
        out.append(fn())
    return clock() - t0, out


def per_op(ns, n):
    return ns / 1000.0 / n


# ---------------------------------------------------------------- redis

class RedisServer:
    def __init__(self, exe, root):
        self.sock = os.path.join(root, "redis.sock")
        self.proc = subprocess.Popen(
            [exe, "--port", "0", "--unixsocket", self.sock,
             "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
             "--dir", root, "--logfile", os.path.join(root, "redis.log"),
             "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        import redis
        end = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise BenchError("redis-server exited (status %d); see %s"
                                 % (self.proc.returncode,
                                    os.path.join(root, "redis.log")))
            try:
                r = redis.Redis(unix_socket_path=self.sock)
                r.ping()
                self.version = r.info("server").get("redis_version")
                r.close()
                return
            except (redis.exceptions.ConnectionError, FileNotFoundError):
                if time.monotonic() > end:
                    self.stop()
                    raise BenchError("redis-server did not answer on %s "
                                     "within 10 s" % self.sock)
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------ the Python sides

def taskflow_phases(board, job, n):
    """post / claim (iterjobs + claim) / consume / cycle through taskflow's
    JobBoard API; us per op for each."""
    name, details, book = job
    for _ in range(WARMUP):
        j = board.post(name, book=book, details=details)
        board.claim(j, WHO)
        board.consume(j, WHO)
    figs = {}
    ns, _ = timed(lambda: board.post(name, book=book, details=details), n)
    figs["post"] = per_op(ns, n)

    gc.collect()
    claimed = []
    t0 = time.perf_counter_ns()
    for j in board.iterjobs(only_unclaimed=True):
        board.claim(j, WHO)
        claimed.append(j)
    figs["claim"] = per_op(time.perf_counter_ns() - t0, n)
    if len(claimed) != n:
        raise BenchError("claimed %d of %d jobs" % (len(claimed), n))

    it = iter(claimed)
    ns, _ = timed(lambda: board.consume(next(it), WHO), n)
    figs["consume"] = per_op(ns, n)

    def cycle():
        j = board.post(name, book=book, details=details)
        board.claim(j, WHO)
        board.consume(j, WHO)
    ns, _ = timed(cycle, n)
    figs["cycle"] = per_op(ns, n)
    left = board.job_count
    if left:
        raise BenchError("%d jobs left on the board" % left)
    return figs


def run_taskflow_redis(ctx, job, n):
    from taskflow.jobs.backends import impl_redis
    from taskflow.utils import redis_utils
    ns = "bench-python-%d-%s" % (os.getpid(), uuidlib.uuid4().hex[:8])
    client = redis_utils.RedisClient(unix_socket_path=ctx.redis.sock)
    board = impl_redis.RedisJobBoard("bench-python", {"namespace": ns},
                                     client=client)
    board.connect()
    try:
        return taskflow_phases(board, job, n)
    finally:
        board.close()
        client.close()


def open_backend(path, mode):
    """The backend through taskflow's entry point if it is registered,
    else imported directly; (board, how)."""
    from taskflow import exceptions as tf_exc
    from taskflow.jobs import backends
    conf = {"board": "jobboard", "path": path, "create": True,
            "durability": mode}
    try:
        return backends.fetch("jobboard", conf), "entry point"
    except tf_exc.NotFound:
        from jobboard import taskflow_backend
        conf = dict(conf)
        del conf["board"]
        return taskflow_backend.JobboardJobBoard("jobboard", conf), \
            "direct import"


def run_backend(ctx, job, n, mode):
    path = ctx.fresh_dir("backend-" + mode)
    board, ctx.backend_how = open_backend(path, mode)
    board.connect()
    try:
        return taskflow_phases(board, job, n)
    finally:
        board.close()
        shutil.rmtree(path, ignore_errors=True)


def binding_phases(b, job, n, phases=PHASES):
    name, details, book = job
    for _ in range(WARMUP):
        b.post(name, details, book=book)
        c = b.claim_next(WHO)
        b.consume(c.uuid, WHO)
    figs = {}
    if "claim" in phases:
        ns, _ = timed(lambda: b.post(name, details, book=book), n)
        figs["post"] = per_op(ns, n)
        ns, claims = timed(lambda: b.claim_next(WHO), n)
        figs["claim"] = per_op(ns, n)
        if any(c is None for c in claims):
            raise BenchError("claim_next found no job")
        it = iter(claims)
        ns, _ = timed(lambda: b.consume(next(it).uuid, WHO), n)
        figs["consume"] = per_op(ns, n)
    else:
        # Posts alone, as `jobboard-bench` times them; then claimed and
        # consumed untimed.
        ns, _ = timed(lambda: b.post(name, details, book=book), n)
        figs["post"] = per_op(ns, n)
        for _ in range(n):
            b.consume(b.claim_next(WHO).uuid, WHO)

    def cycle():
        b.post(name, details, book=book)
        c = b.claim_next(WHO)
        b.consume(c.uuid, WHO)
    ns, _ = timed(cycle, n)
    figs["cycle"] = per_op(ns, n)
    left = b.count()
    if left:
        raise BenchError("%d jobs left on the board" % left)
    return figs


def run_binding(ctx, job, n, mode, phases=PHASES, tag="binding"):
    import jobboard
    path = ctx.fresh_dir(tag + "-" + mode)
    b = jobboard.Board(path, create=True, durability=mode)
    try:
        return binding_phases(b, job, n, phases)
    finally:
        b.close()
        shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------- the C API

def run_c(ctx, n, mode):
    """One `jobboard-bench` run (one round) in `mode`: single posts and the
    cycle, us per op."""
    cmd = [ctx.bench, "--modes", mode, "--jobs", str(n),
           "--sync-jobs", str(n), "--post-jobs", str(n), "--batch", "2",
           "--procs", "0", "--threads", "0", "--wakes", "0", "--no-claims",
           "--rounds", "1", "--json"]
    ctx.c_command = " ".join(["./jobboard-bench"] + cmd[1:2] + ["MODE"] +
                             cmd[3:]) + "   (once per run)"
    env = dict(os.environ, TMPDIR=ctx.root)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, universal_newlines=True)
    if p.returncode != 0:
        raise BenchError("%s failed (%d): %s" % (" ".join(cmd), p.returncode,
                                                 p.stderr.strip()))
    figs = {}
    for line in p.stdout.splitlines():
        v = json.loads(line)
        if v.get("type") == "single" and v.get("mode") == mode:
            figs["cycle"] = v["jobboard_us_per_cycle"]
        elif v.get("type") == "batch" and v.get("batch") == 1:
            figs["post"] = v["jobboard_us_per_job"]
        elif v.get("type") == "setup":
            ctx.c_setup = v
    if set(figs) != {"cycle", "post"}:
        raise BenchError("jobboard-bench printed no single/batch line for "
                         "mode %s" % mode)
    return figs


# ---------------------------------------------------------------- driver

class Ctx:
    def __init__(self, args):
        self.root = tempfile.mkdtemp(prefix="bench-python.")
        self.redis = None
        self.bench = args.bench
        self.repeat = args.repeat
        self.backend_how = None
        self.c_command = None
        self.c_setup = None
        self.count = 0

    def fresh_dir(self, tag):
        self.count += 1
        return os.path.join(self.root, "%s-%d" % (tag, self.count))

    def close(self):
        if self.redis is not None:
            self.redis.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu": cpu,
            "kernel": os.uname().release,
            "python": sys.version.split()[0],
            "load": list(os.getloadavg())}


def versions():
    import jobboard
    import redis
    import taskflow.version
    return {"libjobboard": jobboard.version(),
            "taskflow": taskflow.version.version_string(),
            "redis_py": redis.__version__}


def one_run(ctx, args, job, cjob, results):
    n = args.jobs
    if "taskflow-redis" in args.sides:
        results.setdefault(("taskflow-redis", "-"), []).append(
            run_taskflow_redis(ctx, job, n))
    for mode in args.modes:
        if "backend" in args.sides:
            results.setdefault(("backend", mode), []).append(
                run_backend(ctx, job, n, mode))
        if "binding" in args.sides:
            results.setdefault(("binding", mode), []).append(
                run_binding(ctx, job, n, mode))
            if "c" in args.sides:
                results.setdefault(("binding-cjob", mode), []).append(
                    run_binding(ctx, cjob, n, mode, ("post", "cycle"),
                                "binding-cjob"))
        if "c" in args.sides:
            results.setdefault(("c", mode), []).append(run_c(ctx, n, mode))


LABELS = {"taskflow-redis": "taskflow RedisJobBoard",
          "backend": "taskflow JobboardJobBoard",
          "binding": "binding (jobboard.Board)",
          "binding-cjob": "binding (C's job)",
          "c": "C API (jobboard-bench)"}


def medians(runs):
    keys = runs[0].keys()
    return {k: statistics.median(r[k] for r in runs) for k in keys}


def print_table(out, med, args, setup):
    m = setup["machine"]
    v = setup["versions"]
    print("bench-python: %d jobs per phase after %d untimed cycles, median of"
          " %d runs" % (args.jobs, WARMUP, args.repeat), file=out)
    print("  machine   %d cpus, %s, Linux %s, load %.2f %.2f %.2f at start,"
          " %.2f %.2f %.2f at end"
          % (m["cpus"], m["cpu"], m["kernel"], *m["load"],
             *setup["load_end"]), file=out)
    print("  software  Python %s, libjobboard %s, taskflow %s, redis-py %s,"
          " redis-server %s" % (m["python"], v["libjobboard"], v["taskflow"],
                                v["redis_py"], setup.get("redis_server")),
          file=out)
    print("  job       %r, details of %d bytes (msgpack), %s; C's job: %r, "
          "%d bytes, no logbook" % (args.name, setup["details_bytes"],
                                    "a temporary logbook",
                                    C_NAME, setup["c_details_bytes"]),
          file=out)
    if setup.get("backend"):
        print("  backend   %s" % setup["backend"], file=out)
    print("  figures   ops/s and us per op (cycle: per job); claim through "
          "taskflow's API\n            includes iterjobs(only_unclaimed=True)"
          "\n", file=out)
    print("%-26s %-6s %16s %16s %16s %16s" % ("", "mode", "post",
                                              "claim", "consume", "cycle"),
          file=out)
    print("%-26s %-6s %s" % ("", "", "    ops/s    us/op" * 4), file=out)
    for (side, mode), f in med.items():
        cells = []
        for ph in PHASES:
            if ph in f:
                cells.append("%9.0f %8.1f" % (1e6 / f[ph], f[ph]))
            else:
                cells.append("%9s %8s" % ("-", "-"))
        print("%-26s %-6s %s" % (LABELS[side], mode, " ".join(cells)),
              file=out)
    over = setup.get("overhead")
    if over:
        print("\nbinding's overhead over the C API (same job, bench's; "
              "us per op)", file=out)
        print("%-8s %-8s %10s %10s %10s %8s" % ("mode", "op", "binding",
                                                "C", "overhead", "ratio"),
              file=out)
        for o in over:
            print("%-8s %-8s %10.2f %10.2f %+10.2f %7.2fx"
                  % (o["mode"], o["op"], o["binding_us"], o["c_us"],
                     o["overhead_us"], o["ratio"]), file=out)
    if setup.get("c_command"):
        print("\nC side, for each mode: %s" % setup["c_command"], file=out)


def profile(ctx, args, job):
    import cProfile
    import pstats
    mode = args.modes[0]
    prof = cProfile.Profile()
    side = args.profile
    prof.enable()
    if side == "taskflow-redis":
        figs = run_taskflow_redis(ctx, job, args.jobs)
    elif side == "backend":
        figs = run_backend(ctx, job, args.jobs, mode)
    else:
        figs = run_binding(ctx, job, args.jobs, mode)
    prof.disable()
    print("%s, mode %s, %d jobs per phase (under cProfile, slower): %s"
          % (side, mode, args.jobs,
             ", ".join("%s %.1f us" % kv for kv in figs.items())))
    st = pstats.Stats(prof, stream=sys.stdout)
    st.sort_stats("tottime").print_stats(25)
    st.sort_stats("cumulative").print_stats(35)


def parse_list(text, allowed, what):
    items = [x for x in text.split(",") if x]
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            "%s: %r; choose among %s" % (what, text, ",".join(allowed)))
    return items


def main(argv):
    ap = argparse.ArgumentParser(
        prog="bench-python.py",
        description="Post/claim/consume rates through the jobboard Python "
        "binding, its taskflow backend, taskflow's RedisJobBoard on a "
        "redis-server of its own, and the C API, in one run. It reports; "
        "it asserts nothing about speed.",
        epilog="See the docstring at the top of this file for what each "
        "side and phase runs.")
    ap.add_argument("--jobs", type=int, default=2000,
                    help="jobs per phase (default 2000)")
    ap.add_argument("--details-bytes", type=int, default=100,
                    help="size of the job's details as msgpack (default 100)")
    ap.add_argument("--name", default=C_NAME,
                    help="the job's name (default %s)" % C_NAME)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs; each figure is their median (default 3)")
    ap.add_argument("--modes", default="full,normal,none",
                    type=lambda t: parse_list(t, MODES, "--modes"),
                    help="durabilities for the jobboard sides (default "
                    "full,normal,none)")
    ap.add_argument("--sides", default=",".join(SIDES),
                    type=lambda t: parse_list(t, SIDES, "--sides"),
                    help="what to measure (default %s)" % ",".join(SIDES))
    ap.add_argument("--bench", default=os.environ.get("JOBBOARD_BENCH") or
                    find_first("./jobboard-bench",
                               os.path.join(TOP, "jobboard-bench")),
                    help="the jobboard-bench program for the C side "
                    "(default $JOBBOARD_BENCH, else ./jobboard-bench)")
    ap.add_argument("--redis-server", default=shutil.which("redis-server"),
                    help="the redis-server program (default: on PATH)")
    ap.add_argument("--profile", choices=SIDES[:3],
                    help="run this side once under cProfile (first of "
                    "--modes) and print its profile instead of the table")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON object (setup, every run, medians,"
                    " overhead) instead of the table")
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.repeat < 1 or args.details_bytes < 0:
        ap.error("--jobs and --repeat must be 1 or more, --details-bytes 0"
                 " or more")
    needs_redis = "taskflow-redis" in args.sides or \
        args.profile == "taskflow-redis"
    if needs_redis and not args.redis_server:
        ap.error("no redis-server (give --redis-server, or leave "
                 "taskflow-redis out of --sides)")
    if "c" in args.sides and not args.profile and not (
            args.bench and os.access(args.bench, os.X_OK)):
        ap.error("no jobboard-bench program (give --bench, or leave c out "
                 "of --sides)")

    setup_paths()
    from taskflow.utils import persistence_utils as p_utils
    book = p_utils.temporary_log_book()
    details = make_details(args.details_bytes)
    job = (args.name, details, book)
    cjob = (C_NAME, C_DETAILS, None)

    ctx = Ctx(args)

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    setup = {"machine": machine(), "versions": versions(), "jobs": args.jobs,
             "repeat": args.repeat, "warmup": WARMUP, "name": args.name,
             "details_bytes": packed_len(details),
             "c_details_bytes": packed_len(C_DETAILS),
             "modes": args.modes, "sides": args.sides}
    results = {}
    try:
        if needs_redis:
            ctx.redis = RedisServer(args.redis_server, ctx.root)
            setup["redis_server"] = ctx.redis.version
        if args.profile:
            profile(ctx, args, job)
            return 0
        for _ in range(args.repeat):
            one_run(ctx, args, job, cjob, results)
    except BenchError as e:
        print("bench-python: %s" % e, file=sys.stderr)
        return 1
    finally:
        ctx.close()
    setup["load_end"] = list(os.getloadavg())
    if ctx.backend_how:
        setup["backend"] = "jobboard.taskflow_backend.JobboardJobBoard (%s)" \
            % ctx.backend_how
    if ctx.c_command:
        setup["c_command"] = ctx.c_command
    med = {k: medians(v) for k, v in results.items()}
    over = []
    for mode in args.modes:
        b, c = med.get(("binding-cjob", mode)), med.get(("c", mode))
        if not b or not c:
            continue
        for op in ("post", "cycle"):
            over.append({"mode": mode, "op": op, "binding_us": b[op],
                         "c_us": c[op], "overhead_us": b[op] - c[op],
                         "ratio": b[op] / c[op]})
    setup["overhead"] = over
    if args.json:
        print(json.dumps({
            "setup": setup,
            "runs": [{"side": s, "mode": m, "us_per_op": r}
                     for (s, m), rs in results.items() for r in rs],
            "medians": [{"side": s, "mode": m, "us_per_op": f,
                         "ops_per_s": {k: 1e6 / x for k, x in f.items()}}
                        for (s, m), f in med.items()]}))
    else:
        print_table(sys.stdout, med, args, setup)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
