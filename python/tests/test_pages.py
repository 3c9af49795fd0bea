"""Pages of the listing through the binding (Board.page, jb_iter_open_opts):
the pages joined by their cursors are the whole listing, with a name and
with where filters."""

import pytest

import jobboard


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def _pages(board, **kw):
    out, after = [], None
    for _ in range(1000):
        jobs, after = board.page(after=after, limit=7, **kw)
        out += [j.uuid for j in jobs]
        if len(jobs) < 7:
            break
    return out


def test_pages_joined_are_the_listing(board):
    prios = ["very_high", "high", "normal", "low", "very_low"]
    for i in range(60):
        board.post("a" if i % 3 else "b", priority=prios[i % 5],
                   delay=3600 if i % 4 == 0 else None)
    for _ in range(5):
        board.claim_next("w", names=["a"])
    every = list(board.iterate())
    assert _pages(board) == [j.uuid for j in every]
    assert _pages(board, name="a") == [j.uuid for j in every if j.name == "a"]
    assert _pages(board, where=jobboard.ITER_DELAYED) == \
        [j.uuid for j in every if j.not_before]
    assert _pages(board, name="a", where=jobboard.ITER_CLAIMED) == \
        [j.uuid for j in every if j.name == "a" and j.owner]
    assert board.page(name="nothing") == ([], "")
    with pytest.raises(jobboard.JobboardError):
        board.page(after="not a cursor")
