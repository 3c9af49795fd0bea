#!/usr/bin/python3
"""The taskflow side of test_sync_interop.py: a flow, its factory, the
logbooks it is saved in, and the two programs that run it for a job.

The flow (make_flow) is two tasks in a line; each appends one line
"<task name> <JOBBOARD_UUID or ->" to the file named by the store's
"out", so the file tells how many times the flow ran, and under which
`jobboard work` job. Its factory is saved in the flow detail
(engines.save_factory_details), as taskflow's conductors expect: whoever
runs the job rebuilds the flow by importing this module (tf_sync_flow
must be importable: python/tests on PYTHONPATH).

Programs (run with /usr/bin/python3):

  tf_sync_flow.py run-job PERSISTENCE_DIR
      the CMD of a C worker (`jobboard work -- ...`): reads the job as one
      JSON line on stdin (`jobboard show --json`), loads its logbook from
      the persistence backend, and runs the flow detail (details
      "flow_uuid", else the book's only one) with taskflow.engines
      (load_from_detail, run), the store being the flow detail's
      meta["store"] updated with the job's details["store"] (as a
      conductor does). Prints {"flow_uuid", "state"} (the job's result).
  tf_sync_flow.py conduct BOARD_DIR REDIS_URL NAMESPACE PERSISTENCE_DIR
                  NAME TIMEOUT
      a taskflow BlockingConductor named NAME on the jobboard backend
      (board DIR attached to Redis), stopped once it consumed or abandoned
      one job; exits 0 then, 3 when TIMEOUT seconds passed first. Prints
      one JSON line per conductor event (job_consumed, job_abandoned, ...).
"""
import contextlib
import json
import os
import sys
import threading

from taskflow import engines
from taskflow import task
from taskflow.patterns import linear_flow
from taskflow.persistence import backends as p_backends
from taskflow.persistence import models
from oslo_utils import uuidutils


class Mark(task.Task):
    """Appends "<name> <JOBBOARD_UUID>" to the file `out`."""

    def execute(self, out):
        line = "%s %s\n" % (self.name, os.environ.get("JOBBOARD_UUID", "-"))
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)


def make_flow():
    """The factory saved in the flow details."""
    return linear_flow.Flow("tf-sync-interop").add(Mark("first"),
                                                   Mark("second"))


def persistence(path):
    """taskflow's dir backend in directory `path` (files, locked across
    processes; Debian's taskflow lacks sqlalchemy_utils for sqlite)."""
    return p_backends.fetch({"connection": "dir", "path": path})


def save_book(backend, name, store=None):
    """A logbook holding one flow detail whose factory is make_flow;
    `store` goes to the flow detail's meta. Returns (book, flow_detail)."""
    book = models.LogBook(name)
    fd = models.FlowDetail("%s-flow" % name, uuidutils.generate_uuid())
    if store:
        fd.meta = {"store": dict(store)}
    book.add(fd)
    with contextlib.closing(backend.get_connection()) as conn:
        conn.save_logbook(book)
    engines.save_factory_details(fd, make_flow, [], {}, backend=backend)
    return book, fd


def load_flow_detail(backend, book_uuid, fd_uuid):
    with contextlib.closing(backend.get_connection()) as conn:
        return conn.get_logbook(book_uuid).find(fd_uuid)


def run_job(persistence_dir):
    job = json.loads(sys.stdin.readline())
    book_ref = job.get("book") or {}
    details = job.get("details") or {}
    book_uuid = book_ref.get("uuid") or details.get("book_uuid")
    if not book_uuid:
        sys.stderr.write("run-job: job %s has no logbook\n" % job.get("uuid"))
        return 1
    backend = persistence(persistence_dir)
    with contextlib.closing(backend.get_connection()) as conn:
        book = conn.get_logbook(book_uuid)
    if "flow_uuid" in details:
        fd = book.find(details["flow_uuid"])
    else:
        fd, = list(book)
    store = dict((fd.meta or {}).get("store", {}))
    store.update(details.get("store", {}))
    engine = engines.load_from_detail(fd, store=store, backend=backend)
    engine.run()
    print(json.dumps({"flow_uuid": fd.uuid,
                      "state": engine.storage.get_flow_state()}))
    return 0


def conduct(board_dir, redis_url, ns, persistence_dir, name, timeout):
    from taskflow.conductors import backends as conductors
    from taskflow.jobs import backends as j_backends
    backend = persistence(persistence_dir)
    board = j_backends.fetch(name, {"board": "jobboard", "path": board_dir,
                                    "create": True, "redis": redis_url,
                                    "namespace": ns}, persistence=backend)
    board.connect()
    cond = conductors.fetch("blocking", name, board, persistence=backend,
                            wait_timeout=0.1)

    def event(state, details):
        out = {"event": state}
        job = details.get("job") if isinstance(details, dict) else None
        if job is not None:
            out["uuid"] = job.uuid
        print(json.dumps(out), flush=True)

    cond.notifier.register(cond.notifier.ANY, event)
    finished = threading.Event()
    for ev in ("job_consumed", "job_abandoned"):
        cond.notifier.register(ev, lambda state, details: finished.set())
    failure = []

    def run():
        # Not run(max_dispatches=1): taskflow 5.0's count stops it only
        # when it claims a second job (iter_utils.iter_forever).
        try:
            cond.run()
        except BaseException as e:  # reported by the main thread
            failure.append(e)
        finally:
            finished.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    done = finished.wait(float(timeout))
    cond.stop()
    t.join(10)
    if t.is_alive():
        sys.stderr.write("conduct: the conductor did not stop within 10 s\n")
        return 4
    board.close()
    if failure:
        raise failure[0]
    if not done:
        sys.stderr.write("conduct: no job finished within %s s\n" % timeout)
        return 3
    return 0


def main(argv):
    cmds = {"run-job": (run_job, 1), "conduct": (conduct, 6)}
    if len(argv) < 2 or argv[1] not in cmds or \
            len(argv) - 2 != cmds[argv[1]][1]:
        sys.stderr.write(__doc__)
        return 2
    return cmds[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
