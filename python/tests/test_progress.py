"""Progress reports through the Python binding: Board.progress and
Claim.progress, Job.progress, PROGRESS events with their figures, the
owner checks, bad inputs, and the report's life (kept through an abandon,
gone at the next claim and with the job)."""

import math

import pytest

import jobboard
from jobboard import EventType, State


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def test_the_owner_reports_and_the_job_shows_it(board):
    u = board.post("long")
    c = board.claim(u, "w")
    assert board.get(u).progress is None
    c.progress(12.34, "step 1 of 8")
    p = board.get(u).progress
    assert isinstance(p, jobboard.Progress)
    assert p.percent == 12.3 and p.message == "step 1 of 8"
    assert p.at > 0
    board.progress(u, "w", 100)
    assert board.get(u).progress.percent == 100.0
    assert board.get(u).progress.message is None
    c.consume()
    assert board.state(u) is State.COMPLETE


def test_only_the_current_claims_owner_may_report(board):
    u = board.post("long")
    with pytest.raises(jobboard.NotFoundError):
        board.progress(u, "w", 10)
    c = board.claim(u, "w")
    with pytest.raises(jobboard.NotOwnerError) as e:
        board.progress(u, "intruder", 10)
    assert "claimed by w" in str(e.value)
    with pytest.raises(jobboard.NotOwnerError):
        board.progress(u, "w", 10, token=c.token + 1000)
    assert board.get(u).progress is None


@pytest.mark.parametrize("percent, message, says", [
    (-1, None, "not a percentage"),
    (100.5, None, "not a percentage"),
    (math.nan, None, "not a percentage"),
    (5, "x" * 201, "too long"),
    (5, "two\nlines", "control character"),
])
def test_bad_reports_are_refused(board, percent, message, says):
    u = board.post("long")
    board.claim(u, "w")
    first, nxt = board.log_bounds()
    with pytest.raises(jobboard.InvalidError) as e:
        board.progress(u, "w", percent, message)
    assert says in str(e.value)
    assert board.log_bounds() == (first, nxt)
    assert board.get(u).progress is None


def test_bad_types_are_type_errors(board):
    u = board.post("long")
    board.claim(u, "w")
    with pytest.raises(TypeError):
        board.progress(u, "w", "50")
    with pytest.raises(TypeError):
        board.progress(u, "w", True)
    with pytest.raises(TypeError):
        board.progress(u, "w", 50, b"bytes")


def test_watch_gives_progress_events_with_their_figures(board):
    u = board.post("long")
    c = board.claim(u, "w")
    start = board.log_bounds()[1]
    c.progress(25, "a quarter")
    c.progress(50)
    evs = list(board.watch(start=start, timeout=0))
    assert [e.type for e in evs] == [EventType.PROGRESS] * 2
    assert (evs[0].percent, evs[0].message) == (25.0, "a quarter")
    assert (evs[1].percent, evs[1].message) == (50.0, None)
    assert evs[0].owner == "w" and evs[0].uuid == u
    claimed = [e for e in board.watch(start=1, timeout=0)
               if e.type == EventType.CLAIMED]
    assert claimed[0].percent is None and claimed[0].message is None


def test_kept_through_an_abandon_cleared_by_the_next_claim(board):
    u = board.post("long")
    c = board.claim(u, "w")
    c.progress(70, "most")
    c.abandon()
    j = board.get(u)
    assert j.state is State.UNCLAIMED and j.progress.percent == 70.0
    c2 = board.claim_next("w2")
    assert c2.uuid == u
    assert board.get(u).progress is None
    c2.progress(1)
    c2.consume()
    with pytest.raises(jobboard.NotFoundError):
        board.get(u)
