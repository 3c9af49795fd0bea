"""Names as queues through the binding: claim-next of chosen names, pause
and resume of a name or of the board, the names listed."""

import threading
import time

import pytest

import jobboard


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def _post_all(board, names):
    return [board.post(n) for n in names]


def test_claim_next_of_names_exact_and_prefix(board):
    b1, ax, c, ay, ax2 = _post_all(board, ["b", "a.x", "c", "a.y", "a.x"])
    assert board.claim_next("w", names=["nothing"]) is None
    # A prefix: both a.* names, in listing order across them.
    got = board.claim_next("w", names=["a.*"])
    assert got.uuid == ax and got.job.name == "a.x"
    assert board.claim_next("w", names=["c", "a.y"]).uuid == c
    # Exact names do not match longer ones; a tuple or a generator is fine.
    assert board.claim_next("w", names=("a",)) is None
    assert board.claim_next("w", names=(n for n in ["a.y"])).uuid == ay
    # Priority first, as without names.
    hi = board.post("a.y", priority="high")
    assert board.claim_next("w", names=["a.*", "zzz"]).uuid == hi
    assert board.claim_next("w", names=["*"]).uuid == b1
    assert board.claim_next("w").uuid == ax2
    assert board.claim_next("w", names=["*"]) is None


def test_claim_next_many_and_consume_and_claim_next_of_names(board):
    u = _post_all(board, ["a.x", "b", "a.y", "b", "a.x"])
    cs = board.claim_next_many("w", 10, names=["a.*"])
    assert [c.uuid for c in cs] == [u[0], u[2], u[4]]
    assert board.claim_next_many("w", 10, names=["a.*"]) == []
    nxt = cs[0].consume_and_claim_next(names=["b"])
    assert nxt.uuid == u[1] and nxt.job.name == "b"
    assert board.consume_and_claim_next(nxt.uuid, "w",
                                        names=["a.*"]) is None
    with pytest.raises(jobboard.NotFoundError):
        board.get(nxt.uuid)  # consumed, though nothing was claimed next
    last = board.consume_and_claim_next(cs[1].uuid, "w", names=["b", "c"])
    assert last.uuid == u[3]


def test_bad_names_are_refused_and_claim_nothing(board):
    u = board.post("a.x")
    with pytest.raises(TypeError, match="names must be a list of str"):
        board.claim_next("w", names="a.x")
    with pytest.raises(TypeError, match=r"names\[1\] must be a str"):
        board.claim_next("w", names=["a.x", 3])
    with pytest.raises(jobboard.InvalidError, match="names is empty"):
        board.claim_next_many("w", 2, names=[])
    with pytest.raises(jobboard.InvalidError, match="NUL"):
        board.claim_next("w", names=["a\0x"])
    # The library's own checks: a name too long, too many names.
    with pytest.raises(jobboard.InvalidError):
        board.claim_next("w", names=["x" * (jobboard.board.lib.JB_NAME_MAX +
                                            1)])
    many = ["n%d" % i for i in range(jobboard.board.CLAIM_NAMES_MAX + 1)]
    with pytest.raises(jobboard.InvalidError):
        board.claim_next("w", names=many)
    # A held claim's consume-and-claim with bad names consumes nothing.
    c = board.claim(u, "w")
    with pytest.raises(jobboard.InvalidError):
        board.consume_and_claim_next(u, "w", names=[""])
    assert board.get(u).state == jobboard.State.CLAIMED
    c.consume()


def test_name_matches():
    assert jobboard.name_matches(["a.*", "b"], "a.x")
    assert jobboard.name_matches(["a.*", "b"], "b")
    assert not jobboard.name_matches(["a.*", "b"], "bb")
    assert not jobboard.name_matches(["a.x"], "a")
    assert jobboard.name_matches(["*"], "anything")
    with pytest.raises(TypeError):
        jobboard.name_matches("a.*", "a.x")


def test_pause_and_resume_a_name(board):
    ax, b, ay = _post_all(board, ["a.x", "b", "a.y"])
    held = board.claim(ay, "h")
    assert board.queues() == [
        jobboard.Queue("a.x", False, None, 1),
        jobboard.Queue("a.y", False, None, 0),
        jobboard.Queue("b", False, None, 1)]
    before = time.time()
    board.pause("a.x")
    board.pause("a.x")  # twice: nothing more
    q = {x.name: x for x in board.queues()}
    assert q["a.x"].paused and q["a.x"].ready == 1
    assert before - 1 <= q["a.x"].changed <= time.time() + 1
    assert not q["b"].paused and q["b"].changed is None
    assert not board.board_paused()
    # Never picked by claim-next, with or without names.
    assert board.claim_next("w", names=["a.x"]) is None
    assert board.claim_next("w", names=["a.*"]) is None
    assert board.claim_next("w").uuid == b
    assert board.claim_next("w") is None
    assert board.claim_next_many("w", 5) == []
    # Held claims go on; a claim by uuid still works.
    held.consume()
    c = board.claim(ax, "op")
    c.abandon()
    assert board.claim_next("w") is None
    board.resume("a.x")
    assert not {x.name: x for x in board.queues()}["a.x"].paused
    assert board.claim_next("w", names=["a.*"]).uuid == ax


def test_pause_the_board(board):
    a, b = _post_all(board, ["a", "b"])
    board.pause()
    assert board.board_paused()
    assert [x.paused for x in board.queues()] == [False, False]
    assert board.claim_next("w") is None
    assert board.claim_next("w", names=["b"]) is None
    assert board.claim_next_many("w", 3) == []
    c = board.claim(a, "op")  # by uuid: an operator's act
    assert c.consume_and_claim_next() is None  # consumed; nothing next
    board.resume(None)
    assert not board.board_paused()
    assert board.claim_next("w").uuid == b


def test_a_waiter_sleeps_through_a_pause(board):
    u = board.post("a")
    board.pause("a")
    t = threading.Timer(0.3, board.resume, args=("a",))
    t.start()
    try:
        t0 = time.monotonic()
        c = board.claim_next("w", timeout=10)
        assert c is not None and c.uuid == u
        assert time.monotonic() - t0 >= 0.25
    finally:
        t.join()


def test_pause_errors_change_nothing(board):
    board.post("a.x")
    with pytest.raises(jobboard.NotFoundError, match="was ever posted"):
        board.pause("a.y")
    with pytest.raises(jobboard.InvalidError, match="prefix"):
        board.pause("a.*")
    with pytest.raises(jobboard.InvalidError, match="empty"):
        board.resume("")
    with pytest.raises(TypeError, match="name must be a str"):
        board.pause(b"a.x")
    assert board.queues() == [jobboard.Queue("a.x", False, None, 1)]
    assert not board.board_paused()


def test_the_pause_is_stored_in_the_board(tmp_path):
    path = str(tmp_path / "b")
    with jobboard.Board(path, create=True) as b:
        u = b.post("a")
        b.pause("a")
    with jobboard.Board(path, readonly=True) as ro:
        assert ro.queues()[0].paused
        with pytest.raises(jobboard.ReadOnlyError):
            ro.resume("a")
    with jobboard.Board(path) as b:
        assert b.claim_next("w") is None
        b.resume("a")
        assert b.claim_next("w").uuid == u


def test_cap_of_a_name(board):
    a1 = board.post("api")
    board.post("api")
    o = board.post("other")
    board.set_cap("api", 1)
    assert board.claim_next("w").uuid == a1
    assert board.claim_next("w").uuid == o
    assert board.claim_next("w") is None
    q = {x.name: x for x in board.queues()}
    assert (q["api"].cap, q["api"].held, q["api"].cap_each) == (1, 1, False)
    board.set_cap("api", None)
    assert board.claim_next("w") is not None
    with pytest.raises(jobboard.InvalidError, match="max_claims"):
        board.set_cap("api", -1)
    with pytest.raises(jobboard.NotFoundError, match="was ever posted"):
        board.set_cap("never", 2)


def test_cap_of_each_name_of_a_prefix(board):
    for n in ("r.c1", "r.c1", "r.c2", "r.c2"):
        board.post(n)
    board.set_cap("r.*", 1)
    assert board.cap_prefixes() == [("r.*", 1)]
    got = [board.claim_next("w", names=["r.*"]) for _ in range(3)]
    assert got[2] is None
    assert sorted(board.get(c.uuid).name for c in got[:2]) == ["r.c1", "r.c2"]
    board.post("r.c3")
    q = {x.name: x for x in board.queues()}
    assert (q["r.c3"].cap, q["r.c3"].cap_each) == (1, True)
    # Its own cap beats its prefix's.
    board.set_cap("r.c1", 2)
    assert board.get(board.claim_next("w", names=["r.*"]).uuid).name in \
        ("r.c1", "r.c3")
    board.set_cap("r.*", 0)
    assert board.cap_prefixes() == []
    q = {x.name: x for x in board.queues()}
    assert q["r.c2"].cap is None and q["r.c1"].cap == 2


def test_a_rate_limit_and_a_cap(board):
    a = [board.post("api") for _ in range(4)]
    other = board.post("other", priority="low")
    board.set_rate("api", 2, 60)
    q = {x.name: x for x in board.queues()}
    assert q["api"].rate == 2 and q["api"].period == 60.0
    assert q["api"].next_token <= time.time() + 1
    assert q["other"].rate is None and q["other"].next_token is None
    assert [board.claim_next("w").uuid for _ in range(3)] == \
        [a[0], a[1], other]
    assert board.claim_next("w") is None
    with pytest.raises(jobboard.NotDueError, match="rate limit of 2"):
        board.claim(a[2], "w")
    api = [x for x in board.queues() if x.name == "api"][0]
    assert 25 < api.next_token - time.time() <= 30
    # A waiter sleeps until the next token: 0.2 s with a faster limit.
    board.set_rate("api", 1, 0.2)
    assert board.claim_next("w").uuid == a[2]
    t0 = time.monotonic()
    assert board.claim_next("w", timeout=5).uuid == a[3]
    assert time.monotonic() - t0 >= 0.1
    board.set_rate("api", None)
    assert [x for x in board.queues() if x.name == "api"][0].rate is None
    # A cap, through the binding too.
    c = board.post("capped")
    board.set_cap("capped", 1)
    assert [x for x in board.queues() if x.name == "capped"][0].cap == 1
    assert board.claim_next("w").uuid == c
    with pytest.raises(jobboard.InvalidError, match="period"):
        board.set_rate("api", 1, 0)
    with pytest.raises(jobboard.InvalidError, match="period"):
        board.set_rate("api", 1, -1)
    with pytest.raises(jobboard.NotFoundError, match="was ever posted"):
        board.set_rate("nosuch", 1, 1)
    with pytest.raises(jobboard.InvalidError, match="period"):
        board.set_rate("api*", 1, 0)
    assert board.rate_prefixes() == []


def test_rate_limit_of_each_name_of_a_prefix(board):
    for n in ("r.c1", "r.c1", "r.c2", "r.c2"):
        board.post(n)
    board.set_rate("r.*", 1, 60)
    assert board.rate_prefixes() == [("r.*", 1, 60.0)]
    got = [board.claim_next("w", names=["r.*"]) for _ in range(3)]
    assert got[2] is None
    assert sorted(board.get(c.uuid).name for c in got[:2]) == ["r.c1", "r.c2"]
    # A name posted later is limited from its first post.
    board.post("r.c3")
    board.post("r.c3")
    q = {x.name: x for x in board.queues()}
    assert (q["r.c3"].rate, q["r.c3"].period, q["r.c3"].rate_each) == \
        (1, 60.0, True)
    assert board.get(board.claim_next("w", names=["r.*"]).uuid).name == "r.c3"
    assert board.claim_next("w", names=["r.*"]) is None
    # Its own limit beats its prefix's; None on it brings the prefix's back.
    board.set_rate("r.c1", 5, 60)
    q = {x.name: x for x in board.queues()}
    assert (q["r.c1"].rate, q["r.c1"].rate_each) == (5, False)
    assert board.get(board.claim_next("w", names=["r.*"]).uuid).name == "r.c1"
    board.set_rate("r.c1", None)
    q = {x.name: x for x in board.queues()}
    assert (q["r.c1"].rate, q["r.c1"].rate_each) == (1, True)
    board.set_rate("r.*", None)
    assert board.rate_prefixes() == []
    q = {x.name: x for x in board.queues()}
    assert q["r.c2"].rate is None and not q["r.c2"].rate_each
