"""Board.repost_dead: a dead letter posted again as a new job (a new uuid,
its name, details and options, attempts from 0 unless kept), the letter
gone; an unknown letter and a held unique key refused."""

import pytest

import jobboard
from jobboard import State


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def bury(board, name, **kw):
    u = board.post(name, **kw)
    board.claim(u, "w")
    board.retry(u, "w", reason="no", dead=True)
    return u


def test_repost_makes_a_new_job_and_removes_the_letter(board):
    u = bury(board, "photo", details={"n": 7}, max_attempts=3)
    new = board.repost_dead(u)
    assert new != u
    with pytest.raises(jobboard.NotFoundError):
        board.dead_letter(u)
    with pytest.raises(jobboard.NotFoundError):
        board.get(u)
    j = board.get(new)
    assert j.name == "photo" and j.details == {"n": 7}
    assert j.state is State.UNCLAIMED and j.attempts == 0
    assert j.max_attempts == 3
    with pytest.raises(jobboard.NotFoundError):
        board.repost_dead(u)


def test_repost_keeps_attempts_when_asked(board):
    u = bury(board, "k")
    new = board.repost_dead(u, keep_attempts=True)
    assert board.get(new).attempts == 1


def test_repost_refused_while_its_key_is_held(board):
    u = bury(board, "keyed", unique_key="K")
    holder = board.post("other", unique_key="K")
    with pytest.raises(jobboard.ExistsError):
        board.repost_dead(u)
    assert board.dead_letter(u).uuid == u
    board.cancel_job(holder)
    new = board.repost_dead(u)
    assert board.get(new).unique_key == "K"
