"""Our taskflow backend beyond taskflow's mixin: notifications from other
processes, job properties, configuration errors, entities."""

import datetime
import subprocess
import sys
import threading
import time

import pytest
from taskflow import exceptions as exc
from taskflow.jobs import backends
from taskflow.jobs import base
from taskflow import states
from taskflow.types import entity
from taskflow.utils import persistence_utils as p_utils

import jobboard
from jobboard import taskflow_backend


def fetch(path, **conf):
    conf.update({"board": "jobboard", "path": str(path)})
    return backends.fetch("test", conf)


@pytest.fixture
def board(tmp_path):
    b = fetch(tmp_path / "b", create=True, durability="none")
    b.connect()
    yield b
    b.close()


def test_conf_errors(tmp_path):
    with pytest.raises(ValueError, match="path"):
        backends.fetch("x", {"board": "jobboard"})
    with pytest.raises(ValueError, match="create"):
        fetch(tmp_path / "b", create="maybe")
    b = fetch(tmp_path / "missing")
    assert not b.connected
    with pytest.raises(exc.JobFailure, match="missing"):
        b.connect()  # no create: the board must exist
    with pytest.raises(exc.JobFailure, match="not connected"):
        b.job_count
    b2 = fetch(tmp_path / "b", create="true", durability="sometimes")
    with pytest.raises(exc.JobFailure, match="sometimes"):
        b2.connect()


def test_job_properties(board):
    before = datetime.datetime.utcnow().replace(microsecond=0)
    book = p_utils.temporary_log_book()
    j = board.post("props", book=book, details={"k": "v"},
                   priority=base.JobPriority.HIGH)
    assert j.priority is base.JobPriority.HIGH
    assert j.details == {"k": "v"} and j.book_uuid == book.uuid
    assert j.created_on >= before and j.created_on.tzinfo is None
    assert j.sequence > 0 and j.state == states.UNCLAIMED
    assert j.expires_in() == taskflow_backend.KEY_NOT_FOUND
    [listed] = list(board.iterjobs())
    assert listed == j and hash(listed) == hash(j)
    assert listed.book_name == book.name and listed.book is None  # no
    # persistence given: nothing to load the book from
    board.claim(j, "me", expiry=30)
    assert 0 < j.expires_in() <= 30
    assert j.extend_expiry(60) and 30 < j.expires_in() <= 60
    assert j.last_modified >= j.created_on
    board.abandon(j, "me")
    assert not j.extend_expiry(10)  # not claimed any more
    board.claim(j, "me")
    assert j.expires_in() == taskflow_backend.DOES_NOT_EXPIRE
    with pytest.raises(ValueError):
        board.claim(j, "other", expiry=0)
    with pytest.raises(exc.JobFailure, match="me"):
        board.consume(j, "other")  # not owner
    with pytest.raises(TypeError):
        board.claim(j, 5)  # taskflow's own check of `who`
    board.trash(j, "me")
    assert j.state == states.COMPLETE and j.wait(0)
    with pytest.raises(exc.NotFound):
        board.trash(j, "me")


def test_priority_order(board):
    low = board.post("low", priority=base.JobPriority.LOW)
    high = board.post("high", priority="HIGH")
    normal = board.post("normal")
    assert [j.name for j in board.iterjobs()] == ["high", "normal", "low"]
    assert sorted([low, normal, high]) == [high, normal, low]


def test_wait_and_job_wait(board):
    with pytest.raises(exc.NotFound):
        board.wait(timeout=0.05)
    j = board.post("x")
    assert [k.uuid for k in board.wait(timeout=1)] == [j.uuid]
    assert not j.wait(0.05)
    board.claim(j, "me")
    t = threading.Timer(0.1, board.consume, (j, "me"))
    t.start()
    assert j.wait(10)
    t.join()


def test_register_entity(board):
    ent = entity.Entity("conductor", "c-1", {"pid": 1, "when":
                                              datetime.datetime.now()})
    board.register_entity(ent)
    h = jobboard.Board(board.path, durability="none")
    try:
        [e] = h.entities()
    finally:
        h.close()
    assert (e.name, e.kind, e.meta["pid"]) == ("c-1", "conductor", 1)
    assert isinstance(e.meta["when"], str)


def test_notifications_from_other_processes(board):
    got = []
    cond = threading.Condition()

    def listener(event_type, details):
        with cond:
            got.append((event_type, details["job"].uuid,
                        details["job"].name))
            cond.notify_all()

    board.notifier.register(base.POSTED, listener)
    board.notifier.register(base.REMOVAL, listener)
    code = ("import sys, jobboard\n"
            "b = jobboard.Board(sys.argv[1])\n"
            "u = b.post('from-child')\n"
            "b.claim(u, 'child').consume()\n"
            "print(u)\n")
    out = subprocess.run([sys.executable, "-c", code, board.path],
                         check=True, capture_output=True, text=True)
    uuid = out.stdout.strip()
    with cond:
        assert cond.wait_for(lambda: len(got) >= 2, timeout=10), got
    assert got == [(base.POSTED, uuid, "from-child"),
                   (base.REMOVAL, uuid, "from-child")]
    # Our own changes too; claims and abandons are not notified.
    j = board.post("mine")
    board.claim(j, "me")
    board.abandon(j, "me")
    board.claim(j, "me")
    board.trash(j, "me")
    with cond:
        assert cond.wait_for(lambda: len(got) >= 4, timeout=10), got
    time.sleep(0.1)
    assert got[2:] == [(base.POSTED, j.uuid, "mine"),
                       (base.REMOVAL, j.uuid, "mine")]


def test_close_stops_notifications_and_reads(tmp_path):
    b = fetch(tmp_path / "c", create=True, durability="none")
    b.connect()
    j = b.post("x")
    b.close()
    assert not b.connected
    with pytest.raises(exc.JobFailure):
        j.state
    b.connect()  # again, after close
    assert j.state == states.UNCLAIMED
    b.close()


def test_posted_is_notified_for_a_job_already_gone(board):
    # The watcher is held inside the first POSTED callback while a second
    # job is posted and consumed: when it reads the second POSTED, the job
    # has left the board; it is announced all the same (its name from the
    # history), then removed.
    got = []
    release = threading.Event()
    cond = threading.Condition()

    def listener(event_type, details):
        if not got:
            release.wait(10)
        with cond:
            got.append((event_type, details["job"].name))
            cond.notify_all()

    board.notifier.register(base.POSTED, listener)
    board.notifier.register(base.REMOVAL, listener)
    board.post("first")
    time.sleep(0.2)  # the watcher is now blocked in the callback
    j = board.post("second")
    board.claim(j, "me")
    board.consume(j, "me")
    release.set()
    with cond:
        assert cond.wait_for(lambda: len(got) >= 3, timeout=10), got
    assert got == [(base.POSTED, "first"), (base.POSTED, "second"),
                   (base.REMOVAL, "second")]


def _notify_threads():
    return [t for t in threading.enumerate()
            if t.name.startswith("jobboard-notify")]


def test_change_log_followed_only_while_someone_listens(tmp_path):
    b = fetch(tmp_path / "n", create=True, durability="none")
    b.connect()
    assert _notify_threads() == []
    got = []
    b.notifier.register(base.POSTED, lambda event_type, details:
                      got.append(details["job"].name))
    assert len(_notify_threads()) == 1
    b.post("seen")
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    assert got == ["seen"]
    b.close()
    assert _notify_threads() == []
    b.connect()  # a listener is registered: followed from connect on
    assert len(_notify_threads()) == 1
    b.close()


def test_details_encoded_as_taskflows_redis_board_does(board):
    # taskflow stores datetimes, uuids and sets in job details through
    # oslo.serialization's msgpackutils (its Redis board does): the backend
    # takes and gives them back the same, and its bytes are what taskflow's
    # Redis board would read.
    import uuid as uuidlib
    from oslo_serialization import msgpackutils
    when = datetime.datetime(2026, 11, 27, 12, 30, 0)
    key = uuidlib.uuid4()
    j = board.post("typed", details={"when": when, "id": key,
                                     "tags": {"a", "b"}})
    [listed] = list(board.iterjobs())
    assert listed.details == {"when": when, "id": key, "tags": {"a", "b"}}
    h = jobboard.Board(board.path, durability="none",
                       codec=(msgpackutils.dumps, msgpackutils.loads))
    try:
        assert h.get(j.uuid).details["when"] == when
    finally:
        h.close()


def test_a_job_that_does_not_decode_is_skipped(board):
    # A job whose details taskflow's codec cannot read (posted by another
    # program) is skipped with a warning: the other jobs are still listed
    # and claimable, so a conductor is not stopped by one bad posting.
    import msgpack
    bad = msgpack.packb({"x": msgpack.ExtType(1, b"\xc1garbage")})
    h = jobboard.Board(board.path, durability="none",
                       codec=(lambda d: bad, jobboard.board.MSGPACK[1]))
    try:
        h.post("unreadable", {"placeholder": 1})
    finally:
        h.close()
    board.post("good")
    assert [j.name for j in board.iterjobs()] == ["good"]
    assert [j.name for j in board.iterjobs(only_unclaimed=True)] == ["good"]
    assert board.job_count == 2
