"""Flows, tasks and the child processes of test_conductor.py.

Imported by the test and by its child processes (python/tests is on their
PYTHONPATH), so that taskflow finds the flow factory by its name,
"tf_flows.make_flow", in whichever process runs the job. The children are
started as ``python3 -c "import tf_flows; tf_flows.main()" ROLE ...``
(not as a script: the factory's module must be ``tf_flows``, not
``__main__``).

Roles:
  poster DIR PERSIST MANIFEST OUTDIR LOG COUNT DELAY
      creates COUNT logbooks, each with one flow detail whose factory is
      make_flow(delay=DELAY), posts one job per logbook on the board at DIR
      and writes MANIFEST (JSON: one entry per job, as posted).
  conductor DIR PERSIST NAME ENGINE EVENTS
      runs a taskflow BlockingConductor NAME over the board at DIR until
      SIGTERM (or SIGINT), then stops it and exits 0. EVENTS gets one line
      per conductor event ("ready", "dispatch JOB", "consumed JOB",
      "abandoned JOB"), each with the process id.

Every task appends one line "KEY TASK PID" to the log (O_APPEND, one
write), KEY being the job's key (its logbook's uuid), before it sleeps
DELAY/3 seconds.
"""

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
import traceback

from taskflow import engines
from taskflow import task
from taskflow.patterns import linear_flow
from taskflow.persistence import backends as p_backends
from taskflow.persistence import models
from oslo_utils import uuidutils

OFFSET = 7


def record(path, line):
    """Append one line to `path` in one write(2) with O_APPEND: lines of
    several processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


class _Recorded(task.Task):
    """A task that records that it ran (job key, task name, pid) and takes
    `delay` seconds."""

    def __init__(self, delay=0.0, **kwargs):
        super().__init__(**kwargs)
        self._delay = delay

    def _ran(self, key, log_path):
        record(log_path, "%s %s %d" % (key, self.name, os.getpid()))
        if self._delay:
            time.sleep(self._delay)


class Square(_Recorded):
    default_provides = "square"

    def execute(self, key, log_path, n):
        self._ran(key, log_path)
        return n * n


class AddOffset(_Recorded):
    default_provides = "total"

    def execute(self, key, log_path, square, offset):
        self._ran(key, log_path)
        return square + offset


class WriteResult(_Recorded):
    def execute(self, key, log_path, total, out_path):
        self._ran(key, log_path)
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % total)
        os.rename(tmp, out_path)


TASK_NAMES = ("square", "add_offset", "write_result")


def make_flow(delay=0.0):
    """n -> n*n -> n*n + offset -> written to out_path. Needs key,
    log_path, n, offset and out_path in the store."""
    each = delay / 3.0
    return linear_flow.Flow("compute").add(
        Square(delay=each, name="square"),
        AddOffset(delay=each, name="add_offset"),
        WriteResult(delay=each, name="write_result"))


def expected_output(n):
    return "%d\n" % (n * n + OFFSET)


def persistence(path):
    """taskflow's dir persistence backend at `path` (made when missing)."""
    backend = p_backends.fetch({"connection": "dir", "path": path})
    with contextlib.closing(backend.get_connection()) as conn:
        conn.upgrade()
    return backend


def fetch_board(board_dir, backend):
    """Our taskflow jobboard backend, found by its entry point."""
    from taskflow.jobs import backends as j_backends
    board = j_backends.fetch("jobboard", {"board": "jobboard",
                                          "path": board_dir,
                                          "create": True},
                             persistence=backend)
    board.connect()
    return board


# ------------------------------------------------------------------ poster

def poster(board_dir, persist_dir, manifest, outdir, log_path, count,
           delay):
    backend = persistence(persist_dir)
    board = fetch_board(board_dir, backend)
    posted = []
    try:
        for i in range(count):
            book = models.LogBook("book-%d" % i)
            fd = models.FlowDetail("compute-%d" % i,
                                   uuidutils.generate_uuid())
            book.add(fd)
            out_path = os.path.join(outdir, "out-%d" % i)
            # The flow detail's store (taskflow's conductor merges it with
            # the job's details['store']).
            fd.meta = {"store": {"n": i, "offset": OFFSET,
                                 "out_path": out_path,
                                 "log_path": log_path}}
            with contextlib.closing(backend.get_connection()) as conn:
                conn.save_logbook(book)
            engines.save_factory_details(fd, make_flow, [],
                                         {"delay": delay}, backend=backend)
            # The key travels in the job's details: a job whose details
            # are lost or garbled fails (no 'key' to give the tasks).
            job = board.post("compute-%d" % i, book=book,
                             details={"flow_uuid": fd.uuid,
                                      "store": {"key": book.uuid}})
            posted.append({"job": job.uuid, "key": book.uuid,
                           "book": book.uuid, "flow": fd.uuid, "n": i,
                           "out_path": out_path})
    finally:
        tmp = manifest + ".tmp"
        with open(tmp, "w") as f:
            json.dump(posted, f)
        os.rename(tmp, manifest)
        board.close()
        backend.close()


# --------------------------------------------------------------- conductor

def conductor(board_dir, persist_dir, name, engine, events):
    from taskflow.conductors import backends as c_backends
    # Stop signals are taken by sigwait() in the main thread, never by a
    # handler running in the middle of the conductor's own locking.
    sigs = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    backend = persistence(persist_dir)
    board = fetch_board(board_dir, backend)
    cond = c_backends.fetch("blocking", name, board, persistence=backend,
                            engine=engine, wait_timeout=0.05)
    pid = os.getpid()

    def on(event):
        def note(_state, details):
            record(events, "%s %s %d" % (event, details["job"].uuid, pid))
        return note

    cond.notifier.register("running_start", on("dispatch"))
    cond.notifier.register("job_consumed", on("consumed"))
    cond.notifier.register("job_abandoned", on("abandoned"))
    failed = []

    def run():
        try:
            cond.run()
        except BaseException:
            failed.append(traceback.format_exc())

    worker = threading.Thread(target=run, name="conductor-" + name)
    worker.start()
    record(events, "ready - %d" % pid)
    while worker.is_alive():
        if signal.sigtimedwait(sigs, 0.2) is not None:
            break
    cond.stop()
    worker.join(20)
    if worker.is_alive():
        sys.stderr.write("conductor %s did not stop\n" % name)
        os._exit(3)
    cond.close()
    backend.close()
    if failed:
        sys.stderr.write(failed[0])
        return 1
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(process)d %(name)s %(levelname)s "
                               "%(message)s")
    role, args = argv[0], argv[1:]
    if role == "poster":
        board_dir, persist_dir, manifest, outdir, log_path, count, delay \
            = args
        poster(board_dir, persist_dir, manifest, outdir, log_path,
               int(count), float(delay))
        return 0
    if role == "conductor":
        return conductor(*args)
    raise SystemExit("unknown role %r" % role)


if __name__ == "__main__":
    raise SystemExit("run as: python3 -c 'import tf_flows; "
                     "tf_flows.main()' ROLE ...")
