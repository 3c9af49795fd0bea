"""Snoozes and deadlines to start through the Python binding:
Board.snooze and Claim.snooze (no attempt spent, Job.snoozes, refused past
max_snoozes and to anyone but the owner), post(max_snoozes=, expires=,
expires_dead=), the EXPIRED outcome in the history, the dead letter of
cause EXPIRED, and the SNOOZED and DEADLINE events."""

import time

import pytest

import jobboard
from jobboard import DeadCause, End, EventType, State


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def test_a_snooze_delays_the_job_without_an_attempt(board):
    u = board.post("s", max_snoozes=3)
    assert board.get(u).max_snoozes == 3
    start = board.log_bounds()[1]
    c = board.claim(u, "w")
    c.snooze(60)
    assert c.ended == "snoozed"
    j = board.get(u)
    assert j.state is State.UNCLAIMED
    assert j.snoozes == 1 and j.attempts == 0
    assert j.not_before is not None and j.not_before > time.time() + 50
    with pytest.raises(jobboard.NotDueError):
        board.claim(u, "w")
    evs = [e for e in board.watch(start=start, timeout=0)
           if e.type == EventType.SNOOZED]
    assert len(evs) == 1 and evs[0].owner == "w" and evs[0].uuid == u


def test_past_max_snoozes_it_is_refused_and_the_claim_stands(board):
    u = board.post("s", max_snoozes=1)
    board.claim(u, "w")
    board.snooze(u, "w", 0)
    c = board.claim(u, "w")
    with pytest.raises(jobboard.InvalidError, match="max_snoozes"):
        c.snooze(0)
    assert board.get(u).state is State.CLAIMED
    c.consume()
    rec = board.completion(u)
    assert rec.snoozes == 1 and rec.attempts == 0


def test_only_the_owner_may_snooze_and_bad_delays_are_refused(board):
    u = board.post("s")
    with pytest.raises(jobboard.NotFoundError):
        board.snooze(u, "w", 1)
    board.claim(u, "w")
    with pytest.raises(jobboard.NotOwnerError):
        board.snooze(u, "x", 1)
    with pytest.raises(jobboard.InvalidError):
        board.snooze(u, "w", -1)
    with pytest.raises(TypeError):
        board.snooze(u, "w", "soon")
    with pytest.raises(TypeError):
        board.snooze(u, "w", None)
    assert board.get(u).snoozes == 0


def test_an_unclaimed_job_expires_at_its_deadline(board):
    e = board.post("e", expires=0.05)
    d = board.post("e", expires=0.05, expires_dead=True)
    k = board.post("kept", expires=600)
    assert board.get(e).deadline is not None
    time.sleep(0.1)
    with pytest.raises(jobboard.NotFoundError, match="deadline"):
        board.claim(e, "w")
    c = board.claim_next("w")
    assert c is not None and c.uuid == k
    assert board.get(k).deadline is None  # a claim started it
    assert board.completion(e).end is End.EXPIRED
    assert board.completion(d).end is End.DEAD
    assert board.dead_letter(d).cause is DeadCause.EXPIRED
    types = [ev.type for ev in board.watch(start=1, timeout=0)]
    assert types.count(EventType.DEADLINE) == 2


def test_bad_post_options_are_refused(board):
    with pytest.raises(jobboard.InvalidError, match="expires_ms"):
        board.post("bad", expires=-1)
    with pytest.raises(jobboard.InvalidError, match="EXPIRES_DEAD"):
        board.post("bad", expires_dead=True)
    with pytest.raises(TypeError):
        board.post("bad", expires="soon")
    with pytest.raises(TypeError):
        board.post_many([{"name": "x", "snoozes": 1}])
    uu = board.post_many([{"name": "x", "max_snoozes": 2, "expires": 60}])
    assert board.get(uu[0]).max_snoozes == 2
    assert board.count() == 1
