"""The Python binding (jobboard.Board) over a real board directory."""

import math
import os
import subprocess
import sys
import threading
import time

import pytest

import jobboard
from jobboard import State, Priority, EventType, End
from jobboard._native import lib


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def test_version():
    assert jobboard.version() == jobboard.__version__


def test_open_options_and_errors(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(jobboard.NotFoundError) as e:
        jobboard.Board(missing)
    assert e.value.code == -1 and e.value.name == "JB_ENOTFOUND"
    assert missing in str(e.value)
    assert not os.path.exists(missing)  # nothing made
    with pytest.raises(jobboard.InvalidError) as e:
        jobboard.Board(missing, create=True, durability="sometimes")
    assert "sometimes" in str(e.value) and isinstance(e.value, ValueError)
    assert not os.path.exists(missing)
    with pytest.raises(TypeError, match="create must be a bool"):
        jobboard.Board(missing, create="yes")
    with pytest.raises(TypeError, match="path must be a str"):
        jobboard.Board(42)
    with pytest.raises(TypeError, match="map_size must be an int"):
        jobboard.Board(missing, create=True, map_size="big")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(jobboard.InvalidError):
        jobboard.Board(str(f))
    b = jobboard.Board(tmp_path / "pathlike", create=True,
                       durability=jobboard.Durability.NORMAL)
    assert b.path.endswith("pathlike") and b.durability.name == "NORMAL"
    b.close()
    assert b.closed
    with pytest.raises(jobboard.InvalidError, match="closed"):
        b.count()
    b.close()  # twice is harmless


def test_readonly(tmp_path):
    path = str(tmp_path / "ro")
    with jobboard.Board(path, create=True) as b:
        uuid = b.post("one")
        assert b.readonly == 0
    with pytest.raises(jobboard.InvalidError, match="exclude each other"):
        jobboard.Board(path, create=True, readonly=True)
    with pytest.raises(TypeError, match="readonly must be a bool"):
        jobboard.Board(path, readonly=1)
    with jobboard.Board(path, readonly=True) as ro:
        assert ro.readonly == 1
        assert ro.count() == 1 and ro.get(uuid).name == "one"
        with pytest.raises(jobboard.ReadOnlyError, match="read-only") as e:
            ro.post("two")
        assert e.value.code == -16 and isinstance(e.value, PermissionError)
        # LMDB allows one environment per process: no writer beside it.
        with pytest.raises(jobboard.ReadOnlyError,
                           match="open read-only in this process"):
            jobboard.Board(path)
    with jobboard.Board(path) as b:
        assert b.count() == 1


def test_post_get_iterate(board):
    u1 = board.post("low", {"n": 1}, priority="low")
    u2 = board.post("high", {"n": 2, "nested": {"a": [1, 2]}},
                    priority=Priority.HIGH)
    u3 = board.post("normal", book_name="book", book_uuid=
                    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f")
    u4 = board.post("very", priority=4)
    assert [j.uuid for j in board.iterate()] == [u4, u2, u3, u1]
    j = board.get(u2)
    assert j.name == "high" and j.details == {"n": 2,
                                              "nested": {"a": [1, 2]}}
    assert j.priority is Priority.HIGH and j.state is State.UNCLAIMED
    assert j.owner is None and j.token == 0 and j.book_uuid is None
    assert abs(j.created - time.time()) < 60 and j.modified >= j.created
    j3 = board.get(u3.upper())  # either case
    assert j3.book_name == "book" and j3.details == {}
    assert board.get(u1).sequence < j.sequence
    assert board.count() == 4 and len(board) == 4
    uuids = board.post_many([{"name": "a"}, {"name": "b", "details":
                                             {"x": 1}}])
    assert [board.get(u).name for u in uuids] == ["a", "b"]
    assert board.count() == 6


def test_bad_input_changes_nothing(board):
    board.post("one")
    cases = [
        (lambda: board.post(7), TypeError, "name must be a str"),
        (lambda: board.post("x", details=[1]), TypeError,
         "details must be a dict"),
        (lambda: board.post("x", details={"f": object()}), TypeError,
         "details cannot be encoded"),
        (lambda: board.post(""), jobboard.InvalidError, "name"),
        (lambda: board.post("x", priority="urgent"), jobboard.InvalidError,
         "urgent"),
        (lambda: board.post("x", priority=9), jobboard.InvalidError,
         "priority 9"),
        (lambda: board.post("x", priority=1.5), TypeError, "priority"),
        (lambda: board.post("x", book_name="b"), jobboard.InvalidError,
         "book"),
        (lambda: board.post("x", book=object()), TypeError, "book"),
        (lambda: board.post("a\0b"), jobboard.InvalidError, "NUL"),
        (lambda: board.post_many([{"name": "ok"}, {"nam": "typo"}]),
         TypeError, "posts\\[1\\]"),
        (lambda: board.post_many([{"name": "ok"}, {"name": ""}]),
         jobboard.InvalidError, "1"),
        (lambda: board.get("not-a-uuid"), jobboard.InvalidError,
         "not-a-uuid"),
        (lambda: board.get(None), TypeError, "uuid must be a str"),
        (lambda: board.claim_next(None), TypeError, "who must be a str"),
        (lambda: board.claim_next("w", lease=0), jobboard.InvalidError,
         "lease"),
        (lambda: board.claim_next("w", lease="5"), TypeError, "lease"),
        (lambda: board.claim_next("w", timeout=-1), jobboard.InvalidError,
         "timeout"),
        (lambda: board.claim_next("w", bind=1), TypeError, "bind"),
        (lambda: board.claim_next("x" * 300), jobboard.InvalidError, "who"),
        (lambda: board.consume(board.get(
            next(iter(board)).uuid).uuid, "w", result=[1]), TypeError,
         "result must be a dict"),
        (lambda: board.wait(timeout="1"), TypeError, "timeout"),
    ]
    for call, kind, text in cases:
        with pytest.raises(kind, match=text):
            call()
    assert board.count() == 1 and board.count(only_unclaimed=True) == 1


def test_claims_tokens_and_errors(board):
    u = board.post("job")
    c = board.claim(u, "w1")
    assert isinstance(c, jobboard.Claim) and c.token > 0
    assert board.state(u) is State.CLAIMED and board.find_owner(u) == "w1"
    with pytest.raises(jobboard.ClaimedError, match="w1") as e:
        board.claim(u, "w1")  # same owner: refreshed, still refused
    assert e.value.code == -2
    with pytest.raises(jobboard.ClaimedError, match="w1"):
        board.claim(u, "w2")
    with pytest.raises(jobboard.NotOwnerError, match="w1") as e:
        board.consume(u, "w2")
    assert isinstance(e.value, PermissionError)
    with pytest.raises(jobboard.NotOwnerError):
        board.consume(u, "w1", token=c.token + 1000)  # fenced
    board.abandon(u, "w1", token=c.token)
    assert board.state(u) is State.UNCLAIMED and board.find_owner(u) is None
    with pytest.raises(jobboard.NotFoundError):
        board.abandon(u, "w1")  # not claimed
    c2 = board.claim(u, "w1")
    assert c2.token > c.token
    with pytest.raises(jobboard.NotOwnerError):
        c.consume()  # an older claim's token
    c2.trash()
    assert board.state(u) is State.COMPLETE
    assert board.completion(u).end is End.TRASHED
    with pytest.raises(jobboard.NotFoundError):
        board.claim(u, "w1")
    assert board.find_owner(u) is None


def test_claim_next_order_and_none(board):
    assert board.claim_next("w") is None
    a = board.post("a")
    b = board.post("b", priority="high")
    c1 = board.claim_next("w")
    assert c1.uuid == b and c1.job.name == "b" and c1.job.owner == "w"
    assert board.claim_next("w").uuid == a
    assert board.claim_next("w") is None


def test_lease_extend_expiry(board):
    u = board.post("leased")
    c = board.claim(u, "w", lease=0.3)
    left = board.expires_in(u)
    assert 0 < left <= 0.3
    c.extend(0.6)
    assert 0.3 < board.expires_in(u) <= 0.6
    time.sleep(0.7)
    # Lapsed: unclaimed for every reader, with no call in between.
    assert board.state(u) is State.UNCLAIMED and board.expires_in(u) is None
    with pytest.raises(jobboard.NotFoundError):
        c.consume()
    u2 = board.post("plain")
    board.claim(u2, "w")
    assert board.expires_in(u2) == math.inf


def test_claim_bound_to_a_process(board, tmp_path):
    u = board.post("bound")
    code = ("import sys, jobboard\n"
            "b = jobboard.Board(sys.argv[1])\n"
            "c = b.claim(sys.argv[2], 'child', bind=True)\n"
            "print(b.get(sys.argv[2]).holder_pid, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code, board.path, u],
                         check=True, capture_output=True, text=True)
    child_pid = int(out.stdout)
    assert child_pid > 0
    # The child has exited: its claim lapsed with it.
    assert board.state(u) is State.UNCLAIMED
    c = board.claim(u, "me", bind=True)
    j = board.get(u)
    assert j.holder_pid == os.getpid() and j.holder_alive
    c.abandon()


def test_consume_result_and_wait_done(board):
    u = board.post("job")
    c = board.claim(u, "w")
    assert board.wait_done(u, timeout=0) is None
    assert board.wait_done(u, timeout=0.05) is None

    def finish():
        time.sleep(0.1)
        c.consume({"answer": 42})

    t = threading.Thread(target=finish)
    t.start()
    rec = board.wait_done(u, timeout=10)
    t.join()
    assert rec.end is End.CONSUMED and rec.succeeded
    assert rec.result == {"answer": 42} and rec.owner == "w"
    assert rec.name == "job" and rec.completed >= rec.posted
    u2 = board.post("fails")
    board.claim(u2, "w").consume({"why": "disk"}, failed=True)
    assert board.completion(u2).end is End.FAILED
    assert [r.uuid for r in board.history()] == [u2, u]
    assert [r.uuid for r in board.history(oldest_first=True)] == [u, u2]
    with pytest.raises(jobboard.NotFoundError):
        board.wait_done("3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f", timeout=0)
    u3 = board.post("on board")
    with pytest.raises(jobboard.NotFoundError, match="on the board"):
        board.completion(u3)


def test_history_keeps_the_job_and_filters(board):
    """History: details, book, posting and attempts kept; no
    result is None, {} is {}; filters by ending, name and time."""
    book = "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"
    a = board.post("resize", {"path": "a.png"}, book_name="photos",
                   book_uuid=book)
    posting = board.get(a)
    board.claim(a, "w").consume()
    b = board.post("resize")
    board.claim(b, "w").consume({})
    c = board.post("other")
    board.claim(c, "w").consume({"why": "disk"}, failed=True)
    rec = board.completion(a)
    assert rec.result is None
    assert rec.details == {"path": "a.png"}
    assert (rec.book_name, rec.book_uuid) == ("photos", book)
    assert rec.attempts == 0 and rec.posting and b"resize" in rec.posting
    assert posting.details == rec.details
    assert board.completion(b).result == {}
    assert board.completion(b).book_name is None
    uuids = lambda **kw: [r.uuid for r in board.history(oldest_first=True,
                                                        **kw)]
    assert uuids() == [a, b, c]
    assert uuids(ends=[End.FAILED]) == [c]
    assert uuids(ends=[End.CONSUMED, End.TRASHED]) == [a, b]
    assert uuids(name="resize") == [a, b]
    assert uuids(name_prefix="oth") == [c]
    mid = board.completion(b).completed
    assert uuids(since=mid) == [b, c]
    assert uuids(until=mid) == [a]
    assert uuids(since=mid, ends=[End.CONSUMED]) == [b]
    with pytest.raises(jobboard.InvalidError, match="until_us"):
        uuids(since=mid, until=mid)
    with pytest.raises(ValueError):
        uuids(ends=[9])
    with pytest.raises(TypeError):
        uuids(since="yesterday")


def test_claim_context_manager(board):
    u = board.post("ok")
    with board.claim(u, "w") as c:
        c.result = {"done": True}
    assert board.completion(u).result == {"done": True}
    assert c.ended == "consumed"
    u2 = board.post("boom")
    with pytest.raises(RuntimeError):
        with board.claim(u2, "w"):
            raise RuntimeError("boom")
    assert board.state(u2) is State.UNCLAIMED  # retried (test_life.py)
    u3 = board.post("trash me")
    with board.claim(u3, "w") as c:
        c.trash()  # ended inside: left as it is
    assert board.completion(u3).end is End.TRASHED


def test_waits(board):
    assert board.wait(timeout=0) is False
    assert board.wait(timeout=0.05) is False
    u = board.post("x")
    assert board.wait(timeout=0) is True
    board.claim(u, "w")
    assert board.wait(only_unclaimed=True, timeout=0.05) is False
    assert board.wait(timeout=0) is True

    def later():
        time.sleep(0.1)
        board.post("y")

    t = threading.Thread(target=later)
    t.start()
    assert board.wait(only_unclaimed=True, timeout=10) is True
    t.join()
    # claim_next that waits, woken by a post
    t = threading.Thread(target=later)
    board.claim_next("w")
    t.start()
    c = board.claim_next("w", timeout=10)
    t.join()
    assert c is not None and c.job.name == "y"
    assert board.claim_next("w", timeout=0.05) is None


def test_wait_names(board):
    board.post("b")
    assert board.wait(names=["a"], timeout=0.05) is False
    assert board.wait(names=["b"], timeout=0) is True
    assert board.wait(names=["a", "b*"], only_unclaimed=True, timeout=0)
    u = board.post("img.1")
    board.claim(u, "w")
    assert board.wait(names=["img.*"], timeout=0) is True
    assert board.wait(names=["img.*"], only_unclaimed=True,
                      timeout=0.05) is False

    def later():
        time.sleep(0.1)
        board.post("b")
        time.sleep(0.1)
        board.post("a")

    t = threading.Thread(target=later)
    t.start()
    t0 = time.monotonic()
    assert board.wait(names=["a"], timeout=10) is True
    assert time.monotonic() - t0 >= 0.15  # not ended by the post of "b"
    t.join()
    with pytest.raises(jobboard.InvalidError):
        board.wait(names=[""], timeout=0)
    with pytest.raises(jobboard.InvalidError):
        board.wait(names=[], timeout=0)


def test_interrupt(board):
    res = []

    def waiter():
        try:
            board.wait(timeout=None)
        except jobboard.InterruptedWaitError as e:
            res.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    board.interrupt()
    t.join(10)
    assert not t.is_alive() and res and res[0].code == -12
    assert res[0].name == "JB_EINTERRUPTED"
    board.reset_interrupt()
    assert board.wait(timeout=0) is False


def test_the_names_of_0_1_for_interrupt(board):
    # cancel(), reset_cancel() and CanceledError are the same objects.
    assert jobboard.CanceledError is jobboard.InterruptedWaitError
    assert jobboard.Board.cancel is jobboard.Board.interrupt
    assert jobboard.Board.reset_cancel is jobboard.Board.reset_interrupt
    board.cancel()
    with pytest.raises(jobboard.CanceledError):
        board.wait(timeout=None)
    with pytest.raises(jobboard.CanceledError):
        board.claim_next("w", timeout=None)
    board.reset_cancel()
    assert board.wait(timeout=0) is False


def test_watch_events(board):
    start = board.log_bounds()[1]
    u = board.post("w")
    c = board.claim(u, "me", lease=10)
    c.extend(20)
    c.abandon()
    board.claim(u, "me").consume()
    got = list(board.watch(start=start, timeout=0.05))
    assert [e.type for e in got] == [
        EventType.POSTED, EventType.CLAIMED, EventType.EXTENDED,
        EventType.ABANDONED, EventType.CLAIMED, EventType.CONSUMED]
    assert [e.seq for e in got] == list(range(start, start + 6))
    assert all(e.uuid == u for e in got) and got[1].owner == "me"
    assert got[0].owner is None
    only = list(board.watch(start=start, timeout=0.05,
                            types=[EventType.POSTED, "consumed"]))
    assert [e.type for e in only] == [EventType.POSTED, EventType.CONSUMED]
    # From now on: events written by another process, as they come.
    events = []

    def follow():
        for e in board.watch(timeout=5):
            events.append(e)
            if e.type == EventType.POSTED:
                break

    t = threading.Thread(target=follow)
    t.start()
    time.sleep(0.1)
    subprocess.run([sys.executable, "-c", "import sys, jobboard;"
                    "jobboard.Board(sys.argv[1]).post('from-child')",
                    board.path], check=True)
    t.join(10)
    assert [e.type for e in events] == [EventType.POSTED]
    assert board.get(events[0].uuid).name == "from-child"
    with pytest.raises(jobboard.InvalidError):
        list(board.watch(start=board.log_bounds()[1] + 10, timeout=0))


def test_watch_reports_trimmed(tmp_path):
    # A log bound of one event: a reader that falls behind is told how
    # many it missed, then resumes where the log starts.
    b = jobboard.Board(str(tmp_path / "t"), create=True, durability="none")
    b.close()
    from jobboard._native import ffi
    opts = ffi.new("jb_board_options *")
    opts.version, opts.durability, opts.log_keep = 2, 2, 1
    opts.log_max_age_ms = 1
    out = ffi.new("jb_board **")
    assert lib.jb_board_open(out, str(tmp_path / "t").encode(), opts) == 0
    h = out[0]
    try:
        for _ in range(200):
            assert lib.jb_job_post(ffi.new("char[37]"), h,
                                   ffi.new("jb_post *", {
                                       "version": 1,
                                       "name": ffi.new("char[]", b"x"),
                                       "priority": 2})) == 0
            time.sleep(0.002)
    finally:
        lib.jb_board_close(h)
    with jobboard.Board(str(tmp_path / "t"), durability="none") as b2:
        first, nxt = b2.log_bounds()
        assert first > 1
        got = list(b2.watch(start=1, timeout=0.05))
        assert got[0].type == EventType.TRIMMED
        assert got[0].seq == 1 and got[0].lost == first - 1
        assert got[1].seq == first and got[-1].seq == nxt - 1


def test_entities(board):
    board.register_entity("conductor-1", "conductor", {"host": "h",
                                                       "n": [1, 2]})
    board.register_entity("worker-1", "worker")
    ents = board.entities()
    assert [e.name for e in ents] == ["conductor-1", "worker-1"]
    assert ents[0].kind == "conductor" and ents[0].meta == {"host": "h",
                                                             "n": [1, 2]}
    assert ents[0].pid == os.getpid() and ents[1].meta == {}
    board.unregister_entity("worker-1")
    assert [e.name for e in board.entities()] == ["conductor-1"]
    with pytest.raises(jobboard.NotFoundError):
        board.unregister_entity("worker-1")
    with pytest.raises(TypeError, match="meta must be a dict"):
        board.register_entity("x", "worker", meta="no")


def test_threads_race_each_job_once(board):
    n = 300
    board.post_many([{"name": "j%d" % i} for i in range(n)])
    taken = []
    lock = threading.Lock()

    def worker(name):
        while True:
            c = board.claim_next(name)
            if c is None:
                return
            with lock:
                taken.append(c.uuid)
            c.consume()

    ts = [threading.Thread(target=worker, args=("w%d" % i,))
          for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(taken) == n and len(set(taken)) == n
    assert board.count() == 0


def test_processes_race_each_job_once(board, tmp_path):
    n = 200
    board.post_many([{"name": "j%d" % i} for i in range(n)])
    code = ("import sys, jobboard\n"
            "b = jobboard.Board(sys.argv[1], durability='none')\n"
            "while True:\n"
            "    c = b.claim_next(sys.argv[2], bind=True)\n"
            "    if c is None: break\n"
            "    print(c.uuid, flush=True)\n"
            "    c.consume()\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, board.path,
                               "p%d" % i], stdout=subprocess.PIPE, text=True)
             for i in range(3)]
    seen = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0
        seen += out.split()
    assert len(seen) == n and len(set(seen)) == n
    assert board.count() == 0 and sum(1 for _ in board.history()) == n


def test_gil_released_while_waiting_in_c(board):
    # A thread sits in one C call (no Python slices) for up to 5 s; the
    # main thread must be able to run Python and post meanwhile, which
    # wakes it at once. Were the GIL held during the call, the post
    # could only happen after the call timed out.
    h = board._h()
    res = {}

    def waiter():
        res["st"] = lib.jb_board_wait(h, 1, 5000)
        res["t"] = time.monotonic()

    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.2)
    posted = time.monotonic()
    board.post("wake")
    t.join(10)
    assert res["st"] == 0  # woken by the post, not timed out
    assert res["t"] - posted < 4.5


def test_error_messages_are_the_librarys(board):
    u = board.post("x")
    board.claim(u, "alice")
    with pytest.raises(jobboard.NotOwnerError) as e:
        board.abandon(u, "bob")
    assert u in str(e.value) and "alice" in str(e.value) and \
        "bob" in str(e.value)
    assert e.value.message == str(e.value)
    assert isinstance(e.value, jobboard.JobboardError)


def test_library_outlives_its_handle_at_exit(board):
    # At interpreter exit cffi closes the library while daemon threads (a
    # notification thread, the library's own watcher) may still be inside
    # it. Here that is made certain: a thread sits in one C wait while the
    # main thread closes cffi's handle on the library, then the wait
    # returns. The library is loaded RTLD_NODELETE, so its code stays
    # mapped; without that flag the thread returns into unmapped code
    # (SIGSEGV, exit -11).
    code = ("import sys, threading, time, jobboard\n"
            "from jobboard._native import ffi, lib\n"
            "b = jobboard.Board(sys.argv[1], durability='none')\n"
            "h = b._h()\n"
            "wait = lib.jb_board_wait\n"
            "t = threading.Thread(target=wait, args=(h, 1, 700),"
            " daemon=True)\n"
            "t.start(); time.sleep(0.2)\n"
            "ffi.dlclose(lib)\n"
            "t.join(5)\n"
            "print('survived', flush=True)\n"
            "import os; os._exit(0)\n")
    p = subprocess.run([sys.executable, "-c", code, board.path],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "survived" in p.stdout, (p.returncode,
                                                          p.stderr)


def test_close_ends_the_waits_of_other_threads(tmp_path):
    b = jobboard.Board(str(tmp_path / "c"), create=True, durability="none")
    out = {}

    def waiter():
        try:
            b.wait(timeout=None)
        except jobboard.JobboardError as e:
            out["wait"] = e

    def watcher():
        out["events"] = list(b.watch())

    def claimer():
        try:
            b.claim_next("w", timeout=None)
        except jobboard.JobboardError as e:
            out["claim"] = e

    ts = [threading.Thread(target=f) for f in (waiter, watcher, claimer)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    b.close()  # frees the handle only once the three waits have left C
    for t in ts:
        t.join(10)
        assert not t.is_alive()
    assert isinstance(out["wait"], jobboard.InterruptedWaitError)
    assert isinstance(out["claim"], jobboard.InterruptedWaitError)
    assert out["events"] == []


def test_close_under_other_threads_calls(tmp_path):
    # Threads reading (count, get, iterate) while another closes the
    # handle: each call either runs on the open handle or raises
    # InvalidError "closed"; the handle is freed only once none is in C.
    b = jobboard.Board(str(tmp_path / "r"), create=True, durability="none")
    uuids = b.post_many([{"name": "j%d" % i} for i in range(300)])
    bad = []
    started = threading.Barrier(4)

    def reader():
        started.wait()
        try:
            while True:
                b.count()
                b.get(uuids[7])
                for _ in b.iterate():
                    pass
        except jobboard.InvalidError as e:
            if "closed" not in str(e):
                bad.append(e)
        except Exception as e:  # anything else is a failure
            bad.append(e)

    ts = [threading.Thread(target=reader) for _ in range(3)]
    for t in ts:
        t.start()
    started.wait()
    time.sleep(0.2)
    b.close()
    for t in ts:
        t.join(10)
    assert bad == []


def test_iterators_after_close(tmp_path):
    b = jobboard.Board(str(tmp_path / "i"), create=True, durability="none")
    b.post_many([{"name": "j%d" % i} for i in range(200)])
    it = b.iterate()
    next(it)
    hist = b.history()
    b.close()
    with pytest.raises(jobboard.InvalidError, match="closed"):
        list(it)
    with pytest.raises(jobboard.InvalidError, match="closed"):
        list(hist)


def test_on_corrupt_goes_on(tmp_path):
    # A codec that cannot read one job's details: iterate raises (ending
    # the iteration) unless on_corrupt is given, which is told and goes on.
    def loads(raw):
        d = jobboard.board.MSGPACK[1](raw)
        if d.get("poison"):
            raise ValueError("cannot read this one")
        return d

    b = jobboard.Board(str(tmp_path / "c"), create=True, durability="none",
                       codec=(jobboard.board.MSGPACK[0], loads))
    b.post("a")
    bad = b.post("b", {"poison": True})
    b.post("c")
    with pytest.raises(jobboard.CorruptError, match="cannot read"):
        list(b.iterate())
    told = []
    assert [j.name for j in b.iterate(on_corrupt=told.append)] == ["a", "c"]
    assert len(told) == 1 and bad in str(told[0])
    b.close()
    with pytest.raises(TypeError, match="codec"):
        jobboard.Board(str(tmp_path / "c"), codec=len)


def test_out_of_range_numbers_name_the_argument(board):
    u = board.post("x")
    for call, text in [
            (lambda: board.claim(u, "w", lease=2 ** 62), "lease"),
            (lambda: board.claim(u, "w", lease=10 ** 400), "lease"),
            (lambda: board.consume(u, "w", token=-1), "token"),
            (lambda: board.abandon(u, "w", token=2 ** 64), "token"),
            (lambda: jobboard.Board(board.path, map_size=2 ** 64),
             "map_size"),
            (lambda: jobboard.Board(board.path, history_max_age=1e20),
             "history_max_age"),
            (lambda: list(board.watch(start=-1, timeout=0)), "start"),
            (lambda: list(board.watch(start=0, timeout=0)), "start")]:
        with pytest.raises(jobboard.InvalidError, match=text):
            call()
    assert board.state(u) is State.UNCLAIMED
    # A timeout longer than anything is no limit, not an error.
    assert board.claim_next("w", timeout=10 ** 400).uuid == u
