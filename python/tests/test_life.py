"""A job's life through the Python binding, on real boards: post options
(delay, due time, unique key, attempts, time limit, back-off), retries,
dead letters, cancel, schedules, the retry policy, stats, the history's
outcome and result, the worker's batch calls, check and salvage."""

import inspect
import time
import typing

import pytest

import jobboard
from jobboard import (State, Priority, End, DeadCause, CatchUp, EventType,
                      RetryPolicy)


@pytest.fixture
def board(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True,
                        durability="none") as b:
        yield b


# ------------------------------------------------------------ post options

def test_delay_makes_the_job_wait_until_not_before(board):
    t0 = time.time()
    u = board.post("later", delay=0.4)
    j = board.get(u)
    assert j.state is State.UNCLAIMED
    assert t0 + 0.35 < j.not_before < time.time() + 0.45
    assert board.count() == 1
    if time.time() < j.not_before - 0.05:  # (a machine that stalls)
        assert board.count(only_unclaimed=True) == 0
        assert board.claim_next("w") is None
        with pytest.raises(jobboard.NotDueError) as e:
            board.claim(u, "w")
        assert u in str(e.value)
    c = board.claim_next("w", timeout=5)
    assert c is not None and c.uuid == u
    assert time.time() >= j.not_before
    assert board.get(u).not_before is None  # due: claimable now


def test_not_before_is_a_wall_clock_time(board):
    when = time.time() + 3600
    u = board.post("tomorrowish", not_before=when)
    assert abs(board.get(u).not_before - when) < 1e-3
    assert board.claim_next("w") is None
    with pytest.raises(jobboard.InvalidError, match="not_before|delay"):
        board.post("both", delay=1, not_before=when)
    with pytest.raises(jobboard.InvalidError, match="delay"):
        board.post("negative", delay=-1)
    with pytest.raises(TypeError, match="delay"):
        board.post("text", delay="1s")
    assert board.count() == 1  # the refused posts wrote nothing


def test_unique_key_refuses_a_second_post_naming_the_holder(board):
    u = board.post("once", unique_key="report:2026-12")
    assert board.get(u).unique_key == "report:2026-12"
    with pytest.raises(jobboard.ExistsError) as e:
        board.post("twice", unique_key="report:2026-12")
    assert e.value.holder == u and u in str(e.value)
    assert e.value.code == -14 and e.value.name == "JB_EEXISTS"
    assert board.count() == 1
    # The key is free once the job leaves the board.
    board.claim(u, "w").consume()
    u2 = board.post("again", unique_key="report:2026-12")
    assert u2 != u
    with pytest.raises(jobboard.InvalidError, match="unique"):
        board.post("runs' keys are the schedules'", unique_key="schedule:x")
    with pytest.raises(jobboard.InvalidError):
        board.post_many([{"name": "a", "unique_key": "k"},
                         {"name": "b", "unique_key": "k"}])


def test_post_many_takes_the_options(board):
    a, b = board.post_many([{"name": "a", "max_attempts": 3,
                             "time_limit": 60},
                            {"name": "b", "delay": 3600,
                             "unique_key": "b"}])
    ja, jb = board.get(a), board.get(b)
    assert ja.max_attempts == 3 and ja.time_limit == 60.0
    assert jb.not_before is not None and jb.unique_key == "b"
    with pytest.raises(TypeError, match="unknown argument"):
        board.post_many([{"name": "a", "dealy": 1}])


def test_max_attempts_sends_the_job_to_the_dead_letters(board):
    u = board.post("flaky", max_attempts=2)
    assert board.get(u).max_attempts == 2
    board.claim(u, "w").abandon()
    j = board.get(u)
    assert j.attempts == 1 and j.state is State.UNCLAIMED
    board.claim(u, "w").abandon()  # the second failed attempt
    assert board.state(u) is State.COMPLETE
    assert board.count() == 0
    d = board.dead_letter(u)
    assert d.cause is DeadCause.ATTEMPTS and d.attempts == 2
    assert d.max_attempts == 2 and d.owner == "w"
    assert board.completion(u).end is End.DEAD


def test_time_limit_ends_a_claim_whatever_its_holder_renews(board):
    u = board.post("bounded", time_limit=0.3)
    assert board.get(u).time_limit == pytest.approx(0.3)
    c = board.claim(u, "w", lease=60)
    c.extend(60)
    time.sleep(0.45)
    j = board.get(u)
    assert j.state is State.UNCLAIMED and j.owner is None
    c2 = board.claim_next("w2")
    assert c2.uuid == u and board.get(u).attempts == 1
    with pytest.raises(jobboard.JobboardError):
        c.consume()  # the lapsed claim's token is refused


def test_check_post_needs_no_board():
    jobboard.check_post("fine", {"a": 1}, unique_key="k", delay=1)
    with pytest.raises(jobboard.InvalidError, match="name"):
        jobboard.check_post("")
    with pytest.raises(jobboard.InvalidError):
        jobboard.check_post("big", {"x": "y" * 2000}, max_posting=1024)


# ----------------------------------------------------------------- retries

def test_retry_honours_the_back_off(board):
    board.set_retry_policy(backoff=0.5, backoff_max=10)
    u = board.post("r")
    c = board.claim(u, "w")
    t0 = time.time()
    r = c.retry("disk full")
    assert not r.dead and r.attempts == 1 and c.ended == "retried"
    # 0.5 s +- 20 % jitter
    assert t0 + 0.35 <= r.due <= time.time() + 0.65
    j = board.get(u)
    assert j.state is State.UNCLAIMED and j.attempts == 1
    assert j.last_reason == "disk full"
    assert j.not_before == pytest.approx(r.due, abs=1e-3)
    if time.time() < r.due - 0.05:
        assert board.claim_next("w") is None
    c = board.claim_next("w", timeout=5)
    assert c.uuid == u and time.time() >= r.due
    # The second back-off doubles.
    t1 = time.time()
    r2 = c.retry()
    assert t1 + 0.75 <= r2.due <= time.time() + 1.25 and r2.attempts == 2


def test_retry_with_delay_dead_and_a_job_own_back_off(board):
    u = board.post("own", backoff=5, backoff_max=5)
    t0 = time.time()
    r = board.claim(u, "w").retry()
    assert 4 <= r.due - t0 <= 6.1  # the job's back-off, not the board's
    u2 = board.post("now")
    r = board.claim(u2, "w").retry(delay=0)
    c = board.claim_next("w")
    assert r.due is None and c.uuid == u2
    r = c.retry("hopeless", dead=True)
    assert r.dead and r.due is None
    d = board.dead_letter(u2)
    assert d.cause is DeadCause.BURIED and d.reason == "hopeless"
    with pytest.raises(TypeError):
        board.retry(u, "w", delay=1, dead=True)
    u3 = board.post("x")
    c = board.claim(u3, "w")
    with pytest.raises(jobboard.InvalidError, match="reason"):
        c.retry("x" * 2000)
    assert board.get(u3).state is State.CLAIMED  # refused: nothing changed


def test_retry_refuses_another_owner_and_a_stale_token(board):
    u = board.post("r")
    c = board.claim(u, "w")
    with pytest.raises(jobboard.NotOwnerError):
        board.retry(u, "intruder")
    with pytest.raises(jobboard.NotOwnerError):
        board.retry(u, "w", token=c.token + 1)
    assert board.get(u).state is State.CLAIMED


# ------------------------------------------------------ the context manager

def test_claim_context_manager_retries_with_back_off(board):
    board.set_retry_policy(max_attempts=2, backoff=30, backoff_max=60)
    u = board.post("fails")
    t0 = time.time()
    with pytest.raises(ValueError, match="bad input"):
        with board.claim(u, "w") as c:
            raise ValueError("bad input")
    assert c.ended == "retried" and c.retried.attempts == 1
    j = board.get(u)
    assert j.state is State.UNCLAIMED and j.attempts == 1
    assert j.last_reason == "ValueError: bad input"
    assert j.not_before is not None and j.not_before >= t0 + 24  # 30 s - 20 %
    assert board.claim_next("w") is None  # not claimable at once
    with pytest.raises(jobboard.NotDueError):
        board.claim(u, "w")


def test_claim_context_manager_dead_after_max_attempts(board):
    board.set_retry_policy(max_attempts=2, backoff=0.05, backoff_max=0.05)
    u = board.post("fails twice")
    for attempt in (1, 2):
        c = board.claim_next("w", timeout=5)
        assert c.uuid == u
        with pytest.raises(RuntimeError):
            with c:
                raise RuntimeError("attempt %d" % attempt)
        assert c.retried.attempts == attempt
    assert c.ended == "dead" and c.retried.dead
    assert board.state(u) is State.COMPLETE and board.count() == 0
    d = board.dead_letter(u)
    assert d.cause is DeadCause.ATTEMPTS and d.attempts == 2
    assert d.reason == "RuntimeError: attempt 2"
    h = board.completion(u)
    assert h.end is End.DEAD and h.reason == "RuntimeError: attempt 2"


def test_claim_context_manager_other_exits(board):
    u = board.post("ok")
    with board.claim(u, "w") as c:
        c.result = {"n": 1}
    assert c.ended == "consumed" and board.completion(u).result == {"n": 1}
    # Not a failure of the job: given back at once, an attempt counted.
    u2 = board.post("interrupted")
    with pytest.raises(KeyboardInterrupt):
        with board.claim(u2, "w") as c:
            raise KeyboardInterrupt
    assert c.ended == "abandoned"
    assert board.claim_next("w").uuid == u2
    # A reason longer than the library keeps is cut, not refused.
    u3 = board.post("long")
    with pytest.raises(ValueError):
        with board.claim(u3, "w"):
            raise ValueError("\u00e9" * 2000)
    reason = board.get(u3).last_reason
    assert reason.startswith("ValueError: \u00e9")
    assert len(reason.encode()) <= 1024


# ------------------------------------------------------------ dead letters

def test_dead_letters_list_get_requeue_purge(board):
    a = board.post("a", {"k": 1}, priority="high", unique_key="ka")
    b = board.post("b")
    board.claim(a, "w1").trash()
    board.claim(b, "w2").retry("no use", dead=True)
    assert board.dead_count() == 2
    letters = board.dead_letters()
    assert [d.uuid for d in letters] == [a, b]  # oldest first
    da, db = letters
    assert da.cause is DeadCause.TRASHED and da.owner == "w1"
    assert da.name == "a" and da.details == {"k": 1}
    assert da.priority is Priority.HIGH and da.unique_key == "ka"
    assert da.posted is not None and da.dead >= da.posted
    assert da.posting and da.sequence == 1
    assert db.cause is DeadCause.BURIED and db.reason == "no use"
    with pytest.raises(jobboard.NotFoundError):
        board.dead_letter(board.post("alive"))
    # Requeue: back under its uuid, key held again, attempts from 0.
    board.requeue(b)
    j = board.get(b)
    assert j.state is State.UNCLAIMED and j.attempts == 0
    assert board.dead_count() == 1
    board.post("holder", unique_key="ka")
    with pytest.raises(jobboard.ExistsError):
        board.requeue(a)  # its key was taken meanwhile: the letter stays
    assert board.dead_count() == 1
    board.claim(b, "w").retry(dead=True)
    board.requeue(b, keep_attempts=True)
    assert board.get(b).attempts == 1
    # Purge.
    assert board.purge_dead(before=0.000001) == 0
    assert board.purge_dead() == 1
    assert board.dead_count() == 0 and board.dead_letters() == []


# ------------------------------------------------------------------ cancel

def test_cancel_job_and_flush(board):
    u = board.post("c", unique_key="c")
    board.cancel_job(u)
    assert board.state(u) is State.COMPLETE
    assert board.completion(u).end is End.CANCELLED
    board.post("c again", unique_key="c")  # its key is free
    u2 = board.post("claimed")
    c = board.claim(u2, "w")
    with pytest.raises(jobboard.ClaimedError, match="w"):
        board.cancel_job(u2)
    board.cancel_job(u2, force=True)
    with pytest.raises(jobboard.NotFoundError):
        c.consume()  # its holder is refused
    with pytest.raises(jobboard.NotFoundError, match="cancelled"):
        c.abandon()
    with pytest.raises(jobboard.NotFoundError):
        board.cancel_job(u2)
    board.post("d", delay=3600)
    kept = board.claim(board.post("held"), "w")
    assert board.cancel_unclaimed() == 2  # "c again" and the delayed one
    assert board.count() == 1 and board.get(kept.uuid).owner == "w"
    board.post("e")
    assert board.flush() == 1  # the name of 0.1


# --------------------------------------------------------------- schedules

def test_schedules_add_list_get_tick_remove(board):
    t0 = time.time()
    s = board.add_schedule("nightly", "backup", {"disk": "a"}, every=60,
                           start=t0 - 1, priority="high", max_attempts=3)
    assert s.name == "nightly" and s.job_name == "backup"
    assert s.every == 60.0 and s.cron is None
    assert s.details == {"disk": "a"} and s.priority is Priority.HIGH
    assert s.max_attempts == 3 and s.catch_up is CatchUp.SKIP
    assert s.runs == 0 and s.last_run is None
    assert s.next_run == pytest.approx(t0 - 1, abs=1e-3)
    assert board.next_due() == pytest.approx(t0 - 1, abs=1e-3)
    assert board.wait_schedule(timeout=0) is True  # due already
    # Its earliest run is two hours away: the ticks below (now and 59.5 s
    # on) are never due for it, whatever the minute the test runs at.
    c = board.add_schedule("hourly", "report", cron="0 * * * *",
                           catch_up="all", start=t0 + 7200)
    assert c.cron == "0 * * * *" and c.catch_up is CatchUp.ALL
    assert [x.name for x in board.schedules()] == ["hourly", "nightly"]
    assert board.tick() == 1
    [j] = list(board)
    assert j.name == "backup" and j.priority is Priority.HIGH
    assert j.max_attempts == 3
    run_us = int(round((t0 - 1) * 1e6))
    assert j.details == {"disk": "a", "scheduled_at": run_us}
    assert j.unique_key == "schedule:nightly:%d" % run_us
    s = board.schedule("nightly")
    assert s.runs == 1 and s.last_run == pytest.approx(t0 - 1, abs=1e-3)
    assert s.next_run == pytest.approx(t0 + 59, abs=1e-3)
    assert board.tick() == 0  # nothing due: nothing posted again
    assert board.tick(now=t0 + 59.5) == 1
    with pytest.raises(jobboard.ExistsError):
        board.add_schedule("nightly", "backup", every=60)
    s = board.add_schedule("nightly", "backup2", every=120, replace=True)
    assert s.job_name == "backup2" and s.runs == 2
    board.remove_schedule("nightly")
    with pytest.raises(jobboard.NotFoundError):
        board.schedule("nightly")
    with pytest.raises(jobboard.NotFoundError):
        board.remove_schedule("nightly")
    assert board.count() == 2  # the runs stay
    with pytest.raises(jobboard.InvalidError, match="cron"):
        board.add_schedule("bad", "x", cron="61 * * * *")
    with pytest.raises(jobboard.InvalidError):
        board.add_schedule("both", "x", every=60, cron="* * * * *")
    with pytest.raises(jobboard.InvalidError, match="catch_up"):
        board.add_schedule("c", "x", every=60, catch_up="some")
    board.remove_schedule("hourly")
    assert board.next_due() is None and board.schedules() == []


# ------------------------------------------------------------------ policy

def test_retry_policy_get_set(board):
    assert board.retry_policy() == RetryPolicy(0, 1.0, 3600.0)
    p = board.set_retry_policy(max_attempts=5)
    assert p == RetryPolicy(5, 1.0, 3600.0) == board.retry_policy()
    board.set_retry_policy(RetryPolicy(0, 0.25, 2))
    assert board.retry_policy() == RetryPolicy(0, 0.25, 2.0)
    with pytest.raises(jobboard.InvalidError, match="backoff"):
        board.set_retry_policy(backoff=10, backoff_max=1)
    with pytest.raises(jobboard.InvalidError):
        board.set_retry_policy(max_attempts=-1)
    assert board.retry_policy() == RetryPolicy(0, 0.25, 2.0)


# ------------------------------------------------------------------- stats

def _dead_letters(board, n, name="doomed"):
    """n jobs trashed into the dead letters, oldest first."""
    us = board.post_many([dict(name=name) for _ in range(n)])
    for c in board.claim_next_many("w", n):
        board.trash(c.uuid, "w")
    return us


def test_retention_defaults_set_and_back(board):
    r = board.retention()
    assert r == jobboard.Retention(10000, 7 * 86400.0, 10000, 30 * 86400.0,
                                   frozenset())
    r = board.set_retention(dead_max=5, dead_max_age=3600,
                            history_max_age="none")
    assert r == jobboard.Retention(10000, None, 5, 3600.0, frozenset(
        {"dead_max", "dead_max_age", "history_max_age"}))
    r = board.set_retention(dead_max="default", history_max=3)
    assert (r.history_max, r.dead_max) == (3, 10000)
    assert r.stored == {"history_max", "history_max_age", "dead_max_age"}
    for bad in (dict(dead_max=0), dict(history_max=-2),
                dict(dead_max_age=0), dict(history_max_age="forever")):
        with pytest.raises(jobboard.InvalidError):
            board.set_retention(**bad)
    with pytest.raises(TypeError):
        board.set_retention()
    assert board.retention() == r  # the refused sets changed nothing


def test_retention_prunes_dead_letters_and_history(board):
    _dead_letters(board, 8)
    assert board.dead_count() == 8
    board.set_retention(dead_max=3, history_max=5)
    # The set's own write prunes (fewer than 64 to go: all of them).
    assert board.dead_count() == 3
    assert len(list(board.history())) == 5
    # Later completions keep the bound.
    _dead_letters(board, 2)
    assert board.dead_count() == 3
    assert len(list(board.history())) == 5
    assert board.check().ok


def test_a_recorded_check_is_kept(board):
    assert board.last_check() is None
    board.post("a")
    assert board.check().ok and board.last_check() is None
    before = time.time()
    r = board.check(record=True)
    assert r.ok and r.lines == []
    last = board.last_check()
    assert last is not None
    assert before - 1 <= last.time <= time.time() + 1
    assert (last.problems, last.moved, last.jobs) == (0, 0, 1)
    assert last.seconds >= 0
    with pytest.raises(TypeError):
        board.check(record="yes")


def test_retention_is_the_board_s_not_the_opener_s(tmp_path):
    path = str(tmp_path / "b")
    with jobboard.Board(path, create=True, durability="none") as admin:
        admin.set_retention(history_max=4)
    # A worker asking for a larger history: the stored bound wins.
    with jobboard.Board(path, durability="none", history_max=1000) as w:
        assert w.retention().history_max == 4
        _dead_letters(w, 10)
        assert len(list(w.history())) == 4


def test_stats_figures(board):
    board.post("a", priority="high")
    board.post("a")
    board.post("b", delay=3600)
    c = board.claim_next("w", lease=60)
    done = board.claim(board.post("c"), "w")
    done.consume({"ok": 1})
    board.claim(board.post("d"), "w").trash()
    st = board.stats(by_name=True)
    assert st.jobs == 3 == board.count()
    assert st.by_state == {"unclaimed": 1, "claimed": 1, "delayed": 1}
    assert st.by_priority[Priority.HIGH] == {"unclaimed": 0, "claimed": 1,
                                            "delayed": 0}
    assert st.by_priority[Priority.NORMAL]["delayed"] == 1
    assert st.dead_letters == 1 and st.history == 2
    assert st.claims_leased == 1 and st.claims_plain == 0
    assert st.completed_1m[End.CONSUMED] == 1
    assert st.completed_1h[End.TRASHED] == 1
    assert st.ends_total[End.CONSUMED] == 1
    assert st.events_total[EventType.POSTED] == 5
    assert st.log_next - st.log_first == sum(st.events_total.values())
    assert st.oldest_unclaimed is not None and st.now >= st.oldest_unclaimed
    assert st.names == {"a": {"unclaimed": 1, "claimed": 1, "delayed": 0},
                        "b": {"unclaimed": 0, "claimed": 0, "delayed": 1}}
    assert st.map_size > 0 and st.page_size > 0 and st.readers >= 1
    assert board.stats().names is None
    assert c.uuid and board.history_count() == 2


# ----------------------------------------------------------------- history

def test_history_outcome_and_result(board):
    ok, bad, none = board.post("ok"), board.post("bad"), board.post("none")
    board.claim(ok, "w").consume({"rows": 3})
    board.claim(bad, "w").consume({"error": "x"}, failed=True)
    board.claim(none, "w").consume()
    h = {c.uuid: c for c in board.history()}
    assert h[ok].end is End.CONSUMED and h[ok].result == {"rows": 3}
    # attempts: the failed ones before it completed (as Job.attempts)
    assert h[ok].succeeded and h[ok].owner == "w" and h[ok].attempts == 0
    assert h[bad].end is End.FAILED and h[bad].result == {"error": "x"}
    assert not h[bad].succeeded
    assert h[none].result is None
    assert [c.uuid for c in board.history(ends=[End.FAILED])] == [bad]


# --------------------------------------------------------- the worker's path

def test_claim_next_many_consume_many_and_consume_and_claim_next(board):
    us = board.post_many([{"name": "j%d" % i} for i in range(5)])
    with pytest.raises(jobboard.InvalidError):
        board.claim_next_many("w", 0)
    claims = board.claim_next_many("w", 3, lease=60)
    assert [c.uuid for c in claims] == us[:3]
    assert all(c.job.state is State.CLAIMED for c in claims)
    assert claims[0].token < claims[1].token < claims[2].token
    claims[0].result = {"i": 0}
    out = board.consume_many([claims[0], {"uuid": claims[1].uuid,
                                          "who": "w", "failed": True},
                              {"uuid": claims[2].uuid, "who": "x"}])
    assert out[0] is None and out[1] is None
    assert isinstance(out[2], jobboard.NotOwnerError)
    assert claims[0].ended == "consumed"
    assert board.completion(us[0]).result == {"i": 0}
    assert board.completion(us[1]).end is End.FAILED
    nxt = claims[2].consume_and_claim_next({"r": 2})
    assert nxt.uuid == us[3] and nxt.job.name == "j3"
    assert board.completion(us[2]).result == {"r": 2}
    last = nxt.consume_and_claim_next()
    assert last.uuid == us[4]
    assert last.consume_and_claim_next() is None
    assert board.count() == 0 and board.claim_next_many("w", 4) == []


# --------------------------------------------------------- check, salvage

def test_log_bounds_options(tmp_path):
    with jobboard.Board(str(tmp_path / "b"), create=True, durability="none",
                        log_keep=1, log_max_age=0.001) as b:
        for i in range(200):
            b.post("j%d" % i)
        first, nxt = b.log_bounds()
        assert nxt == 201 and first > 1  # trimmed behind the bounds
    with pytest.raises(jobboard.InvalidError, match="log_max_age"):
        jobboard.Board(str(tmp_path / "c"), create=True, log_max_age=-1)


def test_check_and_salvage(board, tmp_path):
    board.post("a")
    board.claim(board.post("b"), "w").retry(dead=True)
    r = board.check()
    assert r.ok and r.jobs == 1 and r.problems == 0
    s = jobboard.salvage(board.path, str(tmp_path / "copy"))
    assert s.copied == 1
    assert any(kind == "copied" for kind, _ in s.lines)
    with jobboard.Board(str(tmp_path / "copy")) as b2:
        assert [j.name for j in b2] == ["a"]
        assert b2.dead_count() == 1


def test_public_api_has_type_hints():
    from jobboard import board as module
    missing = []

    def check(qual, f):
        for n, p in inspect.signature(f).parameters.items():
            if n != "self" and p.kind not in (p.VAR_POSITIONAL,
                                              p.VAR_KEYWORD) and \
                    n not in f.__annotations__:
                missing.append("%s(%s)" % (qual, n))
        if "return" not in f.__annotations__:
            missing.append(qual + " -> ?")
        typing.get_type_hints(f, globalns=vars(module))  # they resolve

    for name in jobboard.__all__:
        obj = getattr(jobboard, name)
        if inspect.isfunction(obj):
            check(name, obj)
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for an, a in vars(obj).items():
                if an.startswith("_") and an not in ("__init__", "__enter__",
                                                     "__exit__"):
                    continue
                a = a.fget if isinstance(a, property) else a
                a = a.__func__ if isinstance(a, staticmethod) else a
                if inspect.isfunction(a):
                    check(name + "." + an, a)
    assert not missing
