"""Schedules with a time zone and an overlap policy (Board.add_schedule tz=,
overlap=; Schedule.tz, .overlap, .skipped). Needs tzdata."""
import calendar

import pytest

import jobboard
from jobboard import Overlap


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


def utc(y, mo, d, h, mi):
    return calendar.timegm((y, mo, d, h, mi, 0))


def test_schedule_in_a_zone_across_the_spring_forward(board):
    s = board.add_schedule("n", "backup", cron="30 2 * * *",
                           tz="Europe/Berlin",
                           start=utc(2026, 3, 28, 2, 0))
    assert s.tz == "Europe/Berlin" and s.overlap is Overlap.QUEUE
    # 02:30 does not exist on 29 March 2026 in Berlin: it runs at 03:00.
    assert s.next_run == utc(2026, 3, 29, 1, 0)
    assert board.tick(now=utc(2026, 3, 29, 1, 0)) == 1
    assert board.schedule("n").next_run == utc(2026, 3, 30, 0, 30)
    assert board.add_schedule("u", "x", cron="0 0 * * MON").tz is None


def test_zone_refusals(board):
    with pytest.raises(jobboard.InvalidError, match="no time zone"):
        board.add_schedule("n", "x", cron="0 0 * * *", tz="Mars/Olympus")
    with pytest.raises(jobboard.InvalidError, match="for a cron spec"):
        board.add_schedule("n", "x", every=60, tz="Europe/Berlin")
    with pytest.raises(jobboard.InvalidError, match="overlap"):
        board.add_schedule("n", "x", every=60, overlap="sometimes")
    assert board.schedules() == []


def test_overlap_skip_counts_the_runs_not_posted(board):
    t0 = utc(2026, 1, 1, 0, 0)
    s = board.add_schedule("m", "report", cron="* * * * *", overlap="skip",
                           start=t0)
    assert s.overlap is Overlap.SKIP and s.skipped == 0
    assert board.tick(now=t0) == 1
    assert board.tick(now=t0 + 60) == 0
    assert board.tick(now=t0 + 120) == 0
    s = board.schedule("m")
    assert s.skipped == 2 and s.runs == 1
    board.cancel_unclaimed()
    assert board.tick(now=t0 + 180) == 1
