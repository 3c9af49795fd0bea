"""Board.run_now (a delayed job claimable at once, in its place, its
attempts kept; a claimable one left alone; claimed and unknown refused)
and Board.remove_dead (one dead letter by uuid) through the binding."""

import time

import pytest

import jobboard
from jobboard import State


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def test_a_delayed_job_runs_now_in_its_place(board):
    a = board.post("a")
    d = board.post("d", delay=3600, max_attempts=3)
    c = board.post("c")
    seq = board.get(d).sequence
    with pytest.raises(jobboard.NotDueError):
        board.claim(d, "w")
    start = board.log_bounds()[1]
    board.run_now(d)
    assert board.log_bounds()[1] == start  # no event
    j = board.get(d)
    assert j.not_before is None and j.sequence == seq
    assert j.state is State.UNCLAIMED and j.max_attempts == 3
    assert [x.uuid for x in board.iterate()] == [a, d, c]
    board.run_now(d)  # claimable already: left as it is
    board.run_now(a)
    assert [board.claim_next("w").uuid for _ in range(3)] == [a, d, c]


def test_a_retried_job_keeps_its_attempt(board):
    u = board.post("r")
    board.claim(u, "w")
    res = board.retry(u, "w", reason="later", delay=600)
    assert res.due > time.time() + 500
    board.run_now(u)
    j = board.get(u)
    assert j.attempts == 1 and j.last_reason == "later"
    assert j.not_before is None
    assert board.claim(u, "w").uuid == u


def test_refusals(board):
    u = board.post("held")
    board.claim(u, "holder-3")
    with pytest.raises(jobboard.ClaimedError, match="holder-3"):
        board.run_now(u)
    with pytest.raises(jobboard.NotFoundError):
        board.run_now("00000000-0000-4000-8000-000000000000")
    with pytest.raises(jobboard.InvalidError):
        board.run_now("bogus")


def test_remove_dead_takes_one_letter(board):
    uuids = []
    for name in ("x", "y"):
        u = board.post(name)
        board.claim(u, "w")
        board.retry(u, "w", dead=True)
        uuids.append(u)
    board.remove_dead(uuids[0])
    assert [d.uuid for d in board.dead_letters()] == [uuids[1]]
    with pytest.raises(jobboard.NotFoundError):
        board.remove_dead(uuids[0])
    with pytest.raises(jobboard.NotFoundError):
        board.dead_letter(uuids[0])
    assert board.check().ok
