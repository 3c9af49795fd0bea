"""Boards, jobs, claims, events: a thin layer over libjobboard.

Every rule (atomic claims, leases, tokens, ordering, the history, the change
log) is the C library's; this module converts arguments, copies results
into Python objects and turns status codes into exceptions.
"""

from __future__ import annotations

import enum
import math
import os
import threading
import time
import traceback
from collections.abc import Mapping
from typing import (Any, Callable, Dict, Iterable, Iterator, List, NamedTuple,
                    Optional, Tuple, Union)

import msgpack

from . import errors
from ._native import ffi, lib, sync_lib

__all__ = [
    "Board", "Job", "Claim", "Event", "Entity", "Completion", "DeadLetter",
    "Schedule", "RetryPolicy", "Retention", "RetryResult", "Stats",
    "Overlap",
    "CheckReport",
    "SalvageReport", "Priority", "State", "Durability", "EventType", "End",
    "DeadCause", "CatchUp", "Outcome", "Queue", "version", "check_post",
    "salvage", "name_matches",
]

# The header's constants, as the binding declares them (test_header_match
# compares them with jobboard.h).
UUID_STRLEN = lib.JB_UUID_STRLEN
WHO_MAX = lib.JB_WHO_MAX
ONLY_UNCLAIMED = lib.JB_ONLY_UNCLAIMED
ITER_READY = lib.JB_ITER_READY
ITER_CLAIMED = lib.JB_ITER_CLAIMED
ITER_DELAYED = lib.JB_ITER_DELAYED
OPEN_CREATE = lib.JB_OPEN_CREATE
OPEN_READONLY = lib.JB_OPEN_READONLY
CLAIM_BIND_PROCESS = lib.JB_CLAIM_BIND_PROCESS
HISTORY_OLDEST_FIRST = lib.JB_HISTORY_OLDEST_FIRST
HISTORY_OPTIONS_VERSION = lib.JB_HISTORY_OPTIONS_VERSION
OPTIONS_VERSION = lib.JB_BOARD_OPTIONS_VERSION
POST_VERSION = lib.JB_POST_VERSION
CLAIM_OPTIONS_VERSION = lib.JB_CLAIM_OPTIONS_VERSION
CONSUME_OPTIONS_VERSION = lib.JB_CONSUME_OPTIONS_VERSION
EXPIRY_NOT_CLAIMED = lib.JB_EXPIRY_NOT_CLAIMED
EXPIRY_NONE = lib.JB_EXPIRY_NONE
EXPIRY_AT = lib.JB_EXPIRY_AT
REASON_MAX = lib.JB_REASON_MAX
CLAIM_NAMES_MAX = lib.JB_CLAIM_NAMES_MAX
INT64_MAX = (1 << 63) - 1

# Long waits are made of slices of at most this many milliseconds, so that
# a signal (Ctrl-C) reaches Python's handlers while a thread waits in C.
# Each slice sleeps on the board's commit signal: no polling.
_SLICE_MS = 500


class Priority(enum.IntEnum):
    """A job's priority; listings and claim-next take the highest first."""
    VERY_LOW = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    VERY_HIGH = 4


class State(enum.IntEnum):
    """A job's state. A job not on the board reads COMPLETE."""
    UNCLAIMED = 0
    CLAIMED = 1
    COMPLETE = 2


class Durability(enum.IntEnum):
    """What a commit survives (see jb_board_options in <jobboard.h>)."""
    FULL = 0
    NORMAL = 1
    NONE = 2
    INTERVAL = 3


class EventType(enum.IntEnum):
    """Events of the board's change log."""
    POSTED = 1
    CLAIMED = 2
    ABANDONED = 3
    CONSUMED = 4
    TRASHED = 5
    REFRESHED = 6
    EXPIRED = 7
    EXTENDED = 8
    REVOKED = 9
    LOST = 10
    CANCELLED = 11
    DEAD = 12
    #: The owner reported progress (Event.percent, Event.message).
    PROGRESS = 13
    #: The owner snoozed it (Board.snooze): claimable again later.
    SNOOZED = 14
    #: Not claimed by its deadline to start: it left the board.
    DEADLINE = 15
    #: Not a log event: events were trimmed before they could be read
    #: (``Event.seq`` is the first missed, ``Event.lost`` how many).
    TRIMMED = 128


class End(enum.IntEnum):
    """How a job reached COMPLETE (its history record)."""
    CONSUMED = 1
    FAILED = 2
    TRASHED = 3
    REVOKED = 4
    LOST = 5
    CANCELLED = 6
    DEAD = 7
    EXPIRED = 8  #: not claimed by its deadline to start (post's expires)


class DeadCause(enum.IntEnum):
    """Why a job is in the dead letters."""
    TRASHED = 0   #: its owner trashed it
    ATTEMPTS = 1  #: its attempts reached the maximum
    BURIED = 2    #: retried with dead=True (or refused by Redis)
    EXPIRED = 3   #: not claimed by its deadline, posted with expires_dead


class CatchUp(enum.IntEnum):
    """What a schedule's tick does with runs missed meanwhile."""
    SKIP = 0  #: post only the latest due run
    ALL = 1   #: post every missed run, each once


class Overlap(enum.IntEnum):
    """What a schedule's tick does with a run due while an earlier run's
    job is still on the board (queued, delayed or running)."""
    QUEUE = 0  #: post it anyway (the default)
    SKIP = 1   #: do not post it; counted in Schedule.skipped


class Outcome(enum.IntEnum):
    """What the owner says of a job it consumes."""
    SUCCESS = 0
    FAILURE = 1


#: Event types that remove a job from the board (taskflow's REMOVAL).
REMOVAL = frozenset({EventType.CONSUMED, EventType.TRASHED,
                     EventType.REVOKED, EventType.LOST,
                     EventType.CANCELLED, EventType.DEAD,
                     EventType.DEADLINE})


def version() -> str:
    """The version of the libjobboard loaded ("0.2.0")."""
    return ffi.string(lib.jb_version(ffi.NULL, ffi.NULL, ffi.NULL)).decode()


# ----------------------------------------------------------- conversions

def _raise(st, **attrs):
    e = errors.error_for(st, ffi.string(lib.jb_errmsg()).decode(
        "utf-8", "replace"))
    for k, v in attrs.items():
        setattr(e, k, v)
    raise e


def _check(st):
    if st != 0:
        _raise(st)


def _check_config(st):
    """A sync configuration call: another namespace than the board's
    (JB_ECLAIMED from libjbsync) is a bad argument, as the CLI says."""
    if st == errors.ClaimedError.code:
        st = errors.InvalidError.code
    _check(st)


def _text(value, what, empty_ok=False):
    """`value` as NUL-terminated UTF-8 for C: a str is required."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (what,
                                                      type(value).__name__))
    if "\0" in value:
        raise errors.InvalidError("%s contains a NUL character" % what, -4)
    if not value and not empty_ok:
        raise errors.InvalidError("%s is empty" % what, -4)
    return value.encode("utf-8", "surrogatepass")


def _uuid(value):
    return _text(value, "uuid")


def _str(cdata):
    return None if cdata == ffi.NULL else ffi.string(cdata).decode(
        "utf-8", "replace")


def _seconds(us):
    return us / 1e6 if us else None


def _msgpack_dumps(value):
    return msgpack.packb(value, use_bin_type=True)


def _msgpack_loads(raw):
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


#: The default codec of a Board's maps (details, results, entity metadata).
MSGPACK = (_msgpack_dumps, _msgpack_loads)


def _pack_map(value, what, dumps=_msgpack_dumps):
    """A mapping as one msgpack map; None is the empty map."""
    if value is None:
        return b""
    if not isinstance(value, Mapping):
        raise TypeError("%s must be a dict (a msgpack map), not %s"
                        % (what, type(value).__name__))
    try:
        return dumps(dict(value))
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError("%s cannot be encoded as msgpack: %s" % (what, e))
    except Exception as e:  # a codec's own error (oslo's, msgpack's)
        raise TypeError("%s cannot be encoded as msgpack: %s" % (what, e))


def _unpack_map(ptr, size, what, loads=_msgpack_loads):
    if ptr == ffi.NULL or size == 0:
        return {}
    raw = bytes(ffi.buffer(ptr, size))
    try:
        return loads(raw)
    except Exception as e:  # msgpack raises several kinds
        raise errors.CorruptError("%s does not decode: %s" % (what, e), -7)


def _priority(value):
    if isinstance(value, Priority):
        return int(value)
    if isinstance(value, bool):
        raise TypeError("priority must be a Priority, a name or an int, "
                        "not bool")
    if isinstance(value, int):
        if not 0 <= value <= 4:
            raise errors.InvalidError(
                "priority %d is not one of VERY_LOW (0) .. VERY_HIGH (4)"
                % value, -4)
        return value
    if isinstance(value, str):
        out = ffi.new("jb_priority *")
        _check(lib.jb_priority_parse(out, _text(value, "priority", True)))
        return out[0]
    # taskflow's JobPriority (an Enum whose value is the name)
    name = getattr(value, "value", None)
    if isinstance(name, str):
        return _priority(name)
    raise TypeError("priority must be a Priority, a name or an int, not %s"
                    % type(value).__name__)


def _lease_ms(lease, what="lease"):
    """Seconds (int or float) as milliseconds for C; None: no lease (0)."""
    if lease is None:
        return 0
    if isinstance(lease, bool) or not isinstance(lease, (int, float)):
        raise TypeError("%s must be a number of seconds, not %s"
                        % (what, type(lease).__name__))
    if not lease > 0 or (isinstance(lease, float) and
                         math.isinf(lease)):
        raise errors.InvalidError("%s must be more than 0 seconds, not %r"
                                  % (what, lease), -4)
    if lease > _MAX_SECONDS:
        raise errors.InvalidError("%s of %r seconds is too long" %
                                  (what, lease), -4)
    return max(1, int(math.ceil(lease * 1000)))


# Seconds beyond which a duration is not representable in the library's
# int64 milliseconds (and longer than anything means).
_MAX_SECONDS = 2 ** 62 // 1000


def _ms(value, what):
    """A duration in seconds (int or float) as int milliseconds for C;
    None is 0 (the C default: not asked for). The range is the C
    library's to check: it names the field."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be a number of seconds, not %s"
                        % (what, type(value).__name__))
    if not math.isfinite(value) or abs(value) > _MAX_SECONDS:
        raise errors.InvalidError("%s of %r seconds is out of range"
                                  % (what, value), -4)
    return int(math.ceil(value * 1000))


def _us(value, what):
    """A time in seconds since the epoch as int microseconds for C; None
    is 0 (not given)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be seconds since the epoch (a number), "
                        "not %s" % (what, type(value).__name__))
    if not math.isfinite(value) or abs(value) > _MAX_SECONDS:
        raise errors.InvalidError("%s of %r is out of range"
                                  % (what, value), -4)
    return int(round(value * 1e6))


def _uint(value, what, bits=32):
    """A count for C; None is 0 (the default)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s"
                        % (what, type(value).__name__))
    if not 0 <= value < 1 << bits:
        raise errors.InvalidError("%s %d is outside 0..%d"
                                  % (what, value, (1 << bits) - 1), -4)
    return value


def _flag(value, what):
    if not isinstance(value, bool):
        raise TypeError("%s must be a bool, not %s"
                        % (what, type(value).__name__))
    return value


def _ms_seconds(ms):
    """Milliseconds from C as seconds; 0 (none) is None."""
    return ms / 1000.0 if ms else None


def _reason_of(exc):
    """The failure reason kept with a retried job: the exception's last
    traceback line ("ValueError: bad input"), cut to what the library
    keeps (JB_REASON_MAX bytes of UTF-8, at a character's boundary)."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    raw = text.replace("\0", "\\0").encode("utf-8", "replace")
    if len(raw) > REASON_MAX:
        raw = raw[:REASON_MAX].decode("utf-8", "ignore").encode("utf-8")
    return raw.decode("utf-8")


def _timeout_ms(timeout):
    """Seconds as milliseconds for C; None waits without limit (-1)."""
    if timeout is None:
        return -1
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError("timeout must be a number of seconds or None, not %s"
                        % type(timeout).__name__)
    if (isinstance(timeout, float) and math.isnan(timeout)) or \
            timeout < 0:
        raise errors.InvalidError("timeout must be 0 or more seconds (None:"
                                  " no limit), not %r" % (timeout,), -4)
    if timeout > _MAX_SECONDS:  # inf included
        return -1  # longer than any machine will run: no limit
    return int(math.ceil(timeout * 1000))


class _Deadline:
    """Slices of a wait in C: each at most _SLICE_MS, the last up to the
    deadline. ``None`` timeout: no deadline."""

    def __init__(self, timeout_ms):
        self.end = None if timeout_ms < 0 else time.monotonic() + \
            timeout_ms / 1000.0
        self.first = True

    def next_ms(self):
        """The next slice in ms, or None once the deadline has passed
        (after at least one slice, so a 0 timeout looks once)."""
        if self.end is None:
            self.first = False
            return _SLICE_MS
        left = int(math.ceil((self.end - time.monotonic()) * 1000))
        if left <= 0:
            if self.first:
                self.first = False
                return 0
            return None
        self.first = False
        return min(left, _SLICE_MS)


# ------------------------------------------------------------- snapshots

class Job:
    """A snapshot of one job, as read at one moment (it does not change:
    read the board again for a fresh one).

    Times are seconds since the Unix epoch (floats, like ``time.time()``),
    durations seconds; None where the library says 0 (not set).

    Its life: ``not_before``, the due time of a delayed job (None when it
    is claimable); ``attempts``, its claims that ended without a
    completion; ``max_attempts``, as posted (0: the board's retry policy);
    ``time_limit``, seconds a claim of it may last; ``unique_key``;
    ``last_reason``, the reason given with its last failed attempt;
    ``posting``, the posting's bytes as stored (taskflow's layout);
    ``snoozes``, times it was snoozed (not attempts); ``max_snoozes``, as
    posted (0: no limit); ``deadline``, its deadline to start (seconds since
    the epoch; None: none, or it was claimed).
    """

    __slots__ = ("uuid", "name", "details", "priority", "sequence",
                 "created", "modified", "state", "owner", "token",
                 "lease_expires", "holder_pid", "holder_alive", "remote",
                 "book_name", "book_uuid", "not_before", "attempts",
                 "max_attempts", "time_limit", "unique_key", "last_reason",
                 "posting", "progress", "snoozes", "max_snoozes", "deadline")

    uuid: str
    name: str
    details: Dict[Any, Any]
    priority: Priority
    sequence: int
    created: float
    modified: float
    state: State
    owner: Optional[str]
    token: int
    lease_expires: Optional[float]
    holder_pid: Optional[int]
    holder_alive: bool
    remote: bool
    book_name: Optional[str]
    book_uuid: Optional[str]
    not_before: Optional[float]
    attempts: int
    max_attempts: int
    time_limit: Optional[float]
    unique_key: Optional[str]
    last_reason: Optional[str]
    posting: bytes
    snoozes: int
    max_snoozes: int
    deadline: Optional[float]
    progress: Optional["Progress"]

    def __init__(self, cjob: Any, loads: Callable[[bytes], Any] =
                 _msgpack_loads) -> None:
        self.uuid = _str(lib.jb_job_uuid(cjob))
        self.name = _str(lib.jb_job_name(cjob))
        size = ffi.new("size_t *")
        ptr = lib.jb_job_details(cjob, size)
        self.details = _unpack_map(ptr, size[0], "details of job " +
                                   self.uuid, loads)
        self.priority = Priority(lib.jb_job_priority(cjob))
        self.sequence = lib.jb_job_sequence(cjob)
        self.created = lib.jb_job_created(cjob) / 1e6
        self.modified = lib.jb_job_modified(cjob) / 1e6
        self.state = State(lib.jb_job_state(cjob))
        self.owner = _str(lib.jb_job_owner(cjob))
        self.token = lib.jb_job_token(cjob)
        self.lease_expires = _seconds(lib.jb_job_lease_expires(cjob))
        self.holder_pid = lib.jb_job_holder_pid(cjob) or None
        self.holder_alive = bool(lib.jb_job_holder_alive(cjob))
        self.remote = bool(lib.jb_job_remote(cjob))
        self.book_name = _str(lib.jb_job_book_name(cjob))
        self.book_uuid = _str(lib.jb_job_book_uuid(cjob))
        self.not_before = _seconds(lib.jb_job_not_before(cjob))
        self.attempts = lib.jb_job_attempts(cjob)
        self.max_attempts = lib.jb_job_max_attempts(cjob)
        self.time_limit = _ms_seconds(lib.jb_job_time_limit(cjob))
        self.unique_key = _str(lib.jb_job_unique_key(cjob))
        self.last_reason = _str(lib.jb_job_last_reason(cjob))
        self.snoozes = lib.jb_job_snoozes(cjob)
        self.max_snoozes = lib.jb_job_max_snoozes(cjob)
        self.deadline = _seconds(lib.jb_job_deadline(cjob))
        pct = ffi.new("double *")
        msg = ffi.new("const char **")
        at = ffi.new("int64_t *")
        self.progress = Progress(pct[0], _str(msg[0]), at[0] / 1e6) \
            if lib.jb_job_progress(cjob, pct, msg, at) else None
        ptr = lib.jb_job_posting(cjob, size)
        self.posting = bytes(ffi.buffer(ptr, size[0])) \
            if ptr != ffi.NULL else b""

    def __repr__(self) -> str:
        return "<Job %s %r %s %s%s>" % (
            self.uuid, self.name, self.priority.name, self.state.name,
            " owner=%r" % self.owner if self.owner else "")


class Completion:
    """A job's history record: how it left the board, its result, and what
    the job was.

    `result` is None when the owner gave none (a dict, maybe empty,
    otherwise). `details` (a dict), `book_name`, `book_uuid` and `posting`
    (the posting's bytes, taskflow's layout) are the job's as posted; None
    when the record does not keep the posting (a revoked job, or a record
    written by jobboard 0.1.0, whose `result` is {} when none was given).
    `attempts` is the job's count of failed attempts when it left the
    board (as Job.attempts: 0 for a job its first claim completed, and in
    a record that does not keep it); `snoozes` its snoozes (0 in a record
    of a release before schema 11)."""

    __slots__ = ("uuid", "end", "name", "priority", "sequence", "owner",
                 "posted", "claimed", "completed", "result", "reason",
                 "history_seq", "details", "book_name", "book_uuid",
                 "attempts", "posting", "snoozes")

    def __init__(self, c: Any, loads: Callable[[bytes], Any] =
                 _msgpack_loads) -> None:
        self.uuid = ffi.string(c.uuid).decode()
        self.end = End(c.end)
        self.name = _str(c.name)
        self.priority = Priority(c.priority) if 0 <= c.priority <= 4 \
            else None
        self.sequence = c.sequence or None
        self.owner = _str(c.owner)
        self.posted = _seconds(c.posted_us)
        self.claimed = _seconds(c.claimed_us)
        self.completed = _seconds(c.completed_us)
        self.result = _unpack_map(c.result, c.result_len,
                                  "result of job " + self.uuid, loads) \
            if c.has_result else None
        self.reason = _str(c.reason)
        self.history_seq = c.history_seq
        self.details = _unpack_map(c.details, c.details_len,
                                   "details of job " + self.uuid, loads) \
            if c.details != ffi.NULL else None
        self.book_name = _str(c.book_name)
        self.book_uuid = _str(c.book_uuid)
        self.attempts = c.attempts
        self.snoozes = c.snoozes
        self.posting = bytes(ffi.buffer(c.posting, c.posting_len)) \
            if c.posting != ffi.NULL else None

    @property
    def succeeded(self) -> bool:
        """True when the owner consumed it with success."""
        return self.end == End.CONSUMED

    def __repr__(self):
        return "<Completion %s %s by %r>" % (self.uuid, self.end.name,
                                             self.owner)


class Event:
    """One event of the change log. A PROGRESS event has the report's
    ``percent`` and ``message`` (None when none was given); other events
    have None for both."""

    __slots__ = ("seq", "type", "uuid", "owner", "time", "job_seq",
                 "priority", "lost", "percent", "message")

    def __init__(self, e: Any) -> None:
        self.seq = e.seq
        try:
            self.type = EventType(e.type)
        except ValueError:  # a type added by a later release
            self.type = e.type
        self.uuid = ffi.string(e.uuid).decode()
        self.owner = ffi.string(e.owner).decode("utf-8", "replace") or None
        self.time = e.time_us / 1e6
        self.job_seq = e.job_seq
        self.priority = Priority(e.priority) if 0 <= e.priority <= 4 \
            else None
        self.lost = e.lost
        self.percent: Optional[float] = None
        self.message: Optional[str] = None

    def __repr__(self):
        name = getattr(self.type, "name", self.type)
        return "<Event %d %s %s%s>" % (self.seq, name, self.uuid,
                                       " by %r" % self.owner
                                       if self.owner else "")


class Entity:
    """A registered entity (a worker or conductor)."""

    __slots__ = ("name", "kind", "meta", "pid", "registered")

    def __init__(self, e: Any, loads: Callable[[bytes], Any] =
                 _msgpack_loads) -> None:
        self.name = _str(e.name)
        self.kind = _str(e.kind)
        self.meta = _unpack_map(e.meta, e.meta_len, "entity " + self.name,
                                loads)
        self.pid = e.pid
        self.registered = e.registered_us / 1e6

    def __repr__(self):
        return "<Entity %r kind=%r pid=%d>" % (self.name, self.kind, self.pid)


class DeadLetter:
    """A job in the dead letters (the board's trash area), copied out.

    ``cause`` (DeadCause) says why it is there and ``reason`` is the one
    given with its last failed attempt; ``owner`` is its last claim's;
    ``posted`` and ``dead`` are seconds since the epoch (``posted`` None
    when not known). ``name`` and ``details`` are None when its posting
    does not decode; ``posting`` is its bytes as stored.
    """

    __slots__ = ("uuid", "cause", "name", "priority", "sequence", "owner",
                 "attempts", "max_attempts", "reason", "unique_key",
                 "posted", "dead", "details", "posting")

    def __init__(self, d: Any, loads: Callable[[bytes], Any] =
                 _msgpack_loads) -> None:
        self.uuid = ffi.string(d.uuid).decode()
        self.cause = DeadCause(d.cause)
        self.name = _str(d.name)
        self.priority = Priority(d.priority) if 0 <= d.priority <= 4 \
            else None
        self.sequence = d.sequence
        self.owner = _str(d.owner)
        self.attempts = d.attempts
        self.max_attempts = d.max_attempts
        self.reason = _str(d.reason)
        self.unique_key = _str(d.unique_key)
        self.posted = _seconds(d.posted_us)
        self.dead = d.dead_us / 1e6
        self.details = _unpack_map(d.details, d.details_len,
                                   "details of dead letter " + self.uuid,
                                   loads) if d.details != ffi.NULL else None
        self.posting = bytes(ffi.buffer(d.posting, d.posting_len)) \
            if d.posting != ffi.NULL else b""

    def __repr__(self) -> str:
        return "<DeadLetter %s %r %s%s>" % (
            self.uuid, self.name, self.cause.name,
            " reason=%r" % self.reason if self.reason else "")


class Schedule:
    """A periodic job stored in the board (Board.add_schedule).

    When it runs: ``every`` seconds, or at the minutes of ``cron`` (in
    UTC, or the IANA time zone ``tz``), from ``start`` (seconds since the
    epoch; None: from the add); ``overlap``: what a run due while an
    earlier one is unfinished does (Overlap). What each
    run posts: a job ``job_name`` with ``details`` (plus "scheduled_at",
    the run time in microseconds), ``priority``, book, ``max_attempts``,
    ``time_limit``, ``backoff`` and ``backoff_max``. Its state, read from
    the board: ``next_run`` (None: it never runs again), ``last_run``
    (None: no run yet), ``runs`` posted, ``skipped`` (runs not posted for
    overlap), ``created``.
    """

    __slots__ = ("name", "every", "cron", "start", "catch_up", "job_name",
                 "details", "priority", "book_name", "book_uuid",
                 "max_attempts", "time_limit", "backoff", "backoff_max",
                 "next_run", "last_run", "runs", "created", "tz", "overlap",
                 "skipped")

    def __init__(self, c: Any, loads: Callable[[bytes], Any] =
                 _msgpack_loads) -> None:
        self.name = _str(c.name)
        self.every = _ms_seconds(c.every_ms)
        self.cron = _str(c.cron)
        self.start = _seconds(c.start_us)
        self.catch_up = CatchUp(c.catch_up)
        j = c.job
        self.job_name = _str(j.name)
        self.details = _unpack_map(j.details, j.details_len,
                                   "details of schedule " + self.name, loads)
        self.priority = Priority(j.priority)
        self.book_name = _str(j.book_name)
        self.book_uuid = _str(j.book_uuid)
        self.max_attempts = j.max_attempts
        self.time_limit = _ms_seconds(j.time_limit_ms)
        self.backoff = _ms_seconds(j.backoff_ms)
        self.backoff_max = _ms_seconds(j.backoff_max_ms)
        self.next_run = None if c.next_us == INT64_MAX else c.next_us / 1e6
        self.last_run = _seconds(c.last_run_us)
        self.runs = c.runs
        self.created = c.created_us / 1e6
        self.tz = _str(c.tz)
        self.overlap = Overlap(c.overlap)
        self.skipped = c.skipped

    def __repr__(self) -> str:
        return "<Schedule %r %s -> %r runs=%d>" % (
            self.name, "every %gs" % self.every if self.every else
            "cron %r" % self.cron, self.job_name, self.runs)


class Progress(NamedTuple):
    """The progress a claimant last reported (Board.progress):
    ``percent`` (0 to 100, in tenths), ``message`` (None when none was
    given) and ``at``, when (seconds since the epoch)."""
    percent: float
    message: Optional[str]
    at: float


#: The longest progress message, in bytes of UTF-8.
PROGRESS_MESSAGE_MAX = 200


#: jb_retention's "no bound" (JB_RETAIN_NONE).
_RETAIN_NONE = -1


class RetryPolicy(NamedTuple):
    """The board's retry policy: the most attempts a job gets (0: no
    maximum) and the back-off of its retries, in seconds: ``backoff`` *
    2**(attempts - 1), at most ``backoff_max``, +-20 % jitter."""
    max_attempts: int
    backoff: float
    backoff_max: float


class Retention(NamedTuple):
    """The board's retention (stored in the board; every process that
    writes it prunes to it): the history records and dead letters kept,
    and the age of the oldest of each, in seconds. None: no bound.
    ``stored``: the fields the board stores (the others are defaults)."""
    history_max: Optional[int]
    history_max_age: Optional[float]
    dead_max: Optional[int]
    dead_max_age: Optional[float]
    stored: frozenset


class RetryResult(NamedTuple):
    """What a retry did: ``dead``, the job went to the dead letters;
    ``due``, when it is claimable again (seconds since the epoch; None: at
    once, or dead); ``attempts``, its attempts now."""
    dead: bool
    due: Optional[float]
    attempts: int


class Queue(NamedTuple):
    """A name jobs were posted with (Board.queues): whether it is
    ``paused``, when its pause or cap last ``changed`` (seconds since the
    epoch; None: never), its ``ready`` jobs (claimable, or held back by a
    pause, a cap or a rate limit; not delayed, not claimed), its ``cap`` of
    claims at once (None: none), the claims it ``held`` (with a cap; else
    0), its rate limit: ``rate`` claims per ``period`` seconds (both None:
    none) and when its ``next_token`` is due (seconds since the epoch; at
    or before now while it has one; None without a limit), whether the
    cap is its prefix's (``cap_each``: Board.set_cap of "prefix*") and
    whether the rate limit is (``rate_each``: Board.set_rate of
    "prefix*")."""
    name: str
    paused: bool
    changed: Optional[float]
    ready: int
    cap: Optional[int] = None
    held: int = 0
    rate: Optional[int] = None
    period: Optional[float] = None
    next_token: Optional[float] = None
    cap_each: bool = False
    rate_each: bool = False


_STATS_STATES = ("unclaimed", "claimed", "delayed")


def _by_end(arr):
    """{End: n} of a jb_stats array by end, indexed by end & 7 (End.EXPIRED,
    8, is in slot 0, which no other end uses)."""
    return {e: arr[e.value & 7] for e in End}


def _by_enum(arr, n, cls):
    out = {}
    for i in range(n):
        try:
            key = cls(i)
        except ValueError:  # a slot with no member (0, or added later)
            if not arr[i]:
                continue
            key = i
        out[key] = arr[i]
    return out


class Stats:
    """A board's figures at one moment (Board.stats), read in one read
    transaction. The fields are jb_stats's (see jobboard.h), with times as
    seconds since the epoch:

      now, jobs, by_state ({"unclaimed", "claimed", "delayed": n}),
      by_priority ({Priority: by_state}), delayed_due, oldest_unclaimed
      (None: no unclaimed job), dead_letters, claims_bound, claims_leased,
      claims_plain, lapsing_lease, lapsing_holder, history, completed_1m
      and completed_1h ({End: n}), log_first, log_next, events_total
      ({EventType: n}), ends_total ({End: n}), map_size, page_size,
      pages_used, readers, readers_max, names ({name: by_state}, or None
      without by_name).
    """

    __slots__ = ("now", "jobs", "by_state", "by_priority", "delayed_due",
                 "oldest_unclaimed", "dead_letters", "claims_bound",
                 "claims_leased", "claims_plain", "lapsing_lease",
                 "lapsing_holder", "history", "completed_1m",
                 "completed_1h", "log_first", "log_next", "events_total",
                 "ends_total", "map_size", "page_size", "pages_used",
                 "readers", "readers_max", "names")

    def __init__(self, st: Any, by_name: bool) -> None:
        def states(arr):
            return {k: arr[i] for i, k in enumerate(_STATS_STATES)}
        self.now = st.now_us / 1e6
        self.jobs = st.jobs
        self.by_state = states(st.by_state)
        self.by_priority = {p: states(st.by_priority[int(p)])
                            for p in Priority}
        self.delayed_due = st.delayed_due
        self.oldest_unclaimed = _seconds(st.oldest_unclaimed_us)
        for f in ("dead_letters", "claims_bound", "claims_leased",
                  "claims_plain", "lapsing_lease", "lapsing_holder",
                  "history", "log_first", "log_next", "map_size",
                  "page_size", "pages_used", "readers", "readers_max"):
            setattr(self, f, getattr(st, f))
        self.completed_1m = _by_end(st.completed_1m)
        self.completed_1h = _by_end(st.completed_1h)
        self.events_total = _by_enum(st.events_total, 16, EventType)
        self.ends_total = _by_end(st.ends_total)
        self.names = None
        if by_name:
            self.names = {}
            for i in range(st.n_names):
                n = st.names[i]
                self.names[ffi.string(n.name).decode("utf-8", "replace")] = \
                    states(n.jobs)

    def __repr__(self) -> str:
        return "<Stats jobs=%d %r dead_letters=%d history=%d>" % (
            self.jobs, self.by_state, self.dead_letters, self.history)


class CheckReport(NamedTuple):
    """What Board.check found: ``ok`` (no problem, nothing quarantined),
    the counts of jb_check_stats, and the report's ``lines``."""
    ok: bool
    jobs: int
    ready: int
    claimed: int
    log_events: int
    trashed: int
    quarantined: int
    moved: int
    problems: int
    history: int
    lines: List[str]


class CheckRecord(NamedTuple):
    """The last recorded check (Board.last_check): when it ended (Unix
    time), how long it ran (seconds), what it found."""
    time: float
    seconds: float
    problems: int
    moved: int
    jobs: int


class SalvageReport(NamedTuple):
    """What salvage() copied (jb_salvage_stats) and its report's
    ``lines``, each (kind, text): kind "copied", "undecodable",
    "bad_page", "bad_table" or "note"."""
    copied: int
    orphaned: int
    undecodable: int
    completed: int
    bad_pages: int
    bad_tables: int
    history: int
    lines: List[Tuple[str, str]]


_SALVAGE_KINDS = {1: "copied", 2: "undecodable", 3: "bad_page",
                  4: "bad_table", 5: "note"}


def _collect(ctype, make):
    """A cffi callback of `ctype` for a C walk (foreach, check) that
    appends make(args) to a list, and that list and the failure list.
    An exception never crosses into C: the walk stops (returns 1) and the
    caller raises it."""
    found, failure = [], []
    returns = not ctype.startswith("void")

    def each(*args):
        try:
            found.append(make(*args[:-1]))
            return 0 if returns else None
        except BaseException as ex:
            failure.append(ex)
            return 1 if returns else None
    return ffi.callback(ctype, each), found, failure


# ------------------------------------------------------------------ claim

class Claim:
    """A claim held by ``who`` on job ``uuid`` (returned by Board.claim and
    Board.claim_next). Its ``token`` fences the holder: once the claim has
    lapsed and the job was claimed again, this claim's calls are refused.

    As a context manager it ends itself: consumed (with ``result``, set it
    inside the block) when the block succeeds; retried with the board's
    back-off when it raises an Exception (the failure's reason is the
    exception's last traceback line, ``attempts`` counts one more, and a
    job out of attempts goes to the dead letters, as the board's retry
    policy or the job's own options say); abandoned (claimable at once)
    when it raises anything else (KeyboardInterrupt, SystemExit: the
    worker stops, the job did not fail). A claim already ended inside the
    block is left as it is. ``ended`` says how it ended and ``retried``
    holds the RetryResult of a retry.
    """

    __slots__ = ("board", "uuid", "who", "token", "job", "result", "ended",
                 "retried")

    def __init__(self, board: "Board", uuid: str, who: str, token: int,
                 job: Optional[Job] = None) -> None:
        self.board = board
        self.uuid = uuid
        self.who = who
        self.token = token
        self.job = job          # a snapshot at claim time (claim_next)
        self.result = None      # consumed with this by the context manager
        self.ended = None       # "consumed", "failed", "abandoned", ...
        self.retried = None     # the RetryResult of retry()

    def consume(self, result: Optional[Mapping] = None,
                failed: bool = False) -> None:
        """Complete the job (history: consumed, or failed with failed=True),
        keeping `result` (a dict) in its history record."""
        self.board.consume(self.uuid, self.who, result=result,
                           failed=failed, token=self.token)
        self.ended = "failed" if failed else "consumed"

    def abandon(self) -> None:
        """Give the job back: claimable again."""
        self.board.abandon(self.uuid, self.who, token=self.token)
        self.ended = "abandoned"

    def trash(self) -> None:
        """Remove a bad job (kept in the board's dead letters)."""
        self.board.trash(self.uuid, self.who, token=self.token)
        self.ended = "trashed"

    def retry(self, reason: Optional[str] = None,
              delay: Optional[float] = None,
              dead: bool = False) -> RetryResult:
        """Give the job back to be tried again (see Board.retry): after the
        back-off (delay None) or `delay` seconds, or to the dead letters
        (dead=True, or out of attempts). ``ended`` becomes "retried" or
        "dead"."""
        r = self.board.retry(self.uuid, self.who, reason=reason,
                             delay=delay, dead=dead, token=self.token)
        self.retried = r
        self.ended = "dead" if r.dead else "retried"
        return r

    def extend(self, lease: float) -> None:
        """The claim now lapses `lease` seconds from now."""
        self.board.extend(self.uuid, self.who, lease, token=self.token)

    def snooze(self, delay: float) -> None:
        """Give the job back for `delay` seconds without spending an
        attempt (see Board.snooze). ``ended`` becomes "snoozed"."""
        self.board.snooze(self.uuid, self.who, delay, token=self.token)
        self.ended = "snoozed"

    def progress(self, percent: float,
                 message: Optional[str] = None) -> None:
        """Report how far the job has got (see Board.progress)."""
        self.board.progress(self.uuid, self.who, percent, message,
                            token=self.token)

    def expires_in(self) -> Optional[float]:
        """Seconds left on the lease (see Board.expires_in)."""
        return self.board.expires_in(self.uuid)

    def consume_and_claim_next(self, result: Optional[Mapping] = None,
                               failed: bool = False,
                               lease: Optional[float] = None,
                               bind: bool = False,
                               names: Optional[Iterable[str]] = None
                               ) -> Optional["Claim"]:
        """Consume this claim's job and claim the next claimable one (of
        `names`, None: any) in one commit (see
        Board.consume_and_claim_next)."""
        nxt = self.board.consume_and_claim_next(
            self.uuid, self.who, result=result, failed=failed,
            token=self.token, lease=lease, bind=bind, names=names)
        self.ended = "failed" if failed else "consumed"
        return nxt

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, exc_type: Optional[type],
                 exc: Optional[BaseException], tb: Any) -> bool:
        if self.ended is not None:
            return False
        try:
            if exc_type is None:
                self.consume(self.result)
                return False
            if isinstance(exc, Exception):
                self.retry(reason=_reason_of(exc))
            else:
                self.abandon()
        except errors.JobboardError:
            if exc_type is None:
                raise
            # The claim may have lapsed meanwhile; the exception that
            # ended the block is the one the caller needs to see.
        return False

    def __repr__(self) -> str:
        return "<Claim %s by %r token=%d%s>" % (
            self.uuid, self.who, self.token,
            " " + self.ended if self.ended else "")


# ------------------------------------------------------------------ board

class Board:
    """A handle on the board in directory `path`.

    Options:
      create       make the board directory (not its parents) when missing
      readonly     open for reading only (JB_OPEN_READONLY): for a board
                   this process may only read (another user's, a read-only
                   mount); every write raises ReadOnlyError. Not with
                   create. Board.readonly says how (see jobboard.h).
      durability   "full" (default), "normal", "interval" or "none" (see
                   jobboard.h); one process must use one durability per
                   board
      flush_interval  durability interval: seconds between flushes for
                   this process (None: the board's, else 1 s)
      map_size     initial map size in bytes (0: 64 MiB; it grows)
      max_posting  largest posting in bytes (0: 1 MiB)
      history_max  completion records kept (0: 10,000)
      history_max_age  seconds the history keeps a record (None: 7 days)
      log_keep     change-log events kept at least (0: 100,000)
      log_max_age  seconds after which events are trimmed (None: 7 days);
                   like durability, one process uses one pair per board
      redis        a Redis URL, or True for the URL the board remembers (or
                   $JOBBOARD_REDIS): jobs Redis decides are then claimed,
                   abandoned, consumed and trashed through Redis
                   (libjbsync's jb_sync_attach). Needs libjbsync.
      namespace    the Redis key namespace (None: the board's, else
                   "taskflow")
      codec        (dumps, loads) for the maps: details, results, entity
                   metadata (default: plain msgpack; the taskflow backend
                   gives oslo.serialization's msgpackutils, as taskflow's
                   Redis board encodes them). dumps must give one msgpack
                   map.

    A Board may be used from many threads at once; the GIL is released
    while a call waits or writes. Use it as a context manager to close it.
    A handle opened before os.fork() must not be used in the child: open
    the board again there.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"],
                 create: bool = False,
                 durability: Union[str, Durability] = "full",
                 map_size: int = 0, max_posting: int = 0,
                 history_max: int = 0,
                 history_max_age: Optional[float] = None,
                 log_keep: int = 0, log_max_age: Optional[float] = None,
                 redis: Union[str, bool, None] = None,
                 namespace: Optional[str] = None,
                 codec: Optional[Tuple[Callable[[Any], bytes],
                                       Callable[[bytes], Any]]] = None,
                 readonly: bool = False,
                 flush_interval: Optional[float] = None) -> None:
        self._b = ffi.NULL
        self._conn = None
        if codec is None:
            codec = MSGPACK
        if (not isinstance(codec, tuple) or len(codec) != 2 or
                not all(callable(f) for f in codec)):
            raise TypeError("codec must be a (dumps, loads) pair of "
                            "callables, not %s" % type(codec).__name__)
        self._dumps, self._loads = codec
        path_b = _text(path if not hasattr(path, "__fspath__")
                       else path.__fspath__(), "path")
        if not isinstance(create, bool):
            raise TypeError("create must be a bool, not %s"
                            % type(create).__name__)
        opts = ffi.new("jb_board_options *")
        opts.version = OPTIONS_VERSION
        if not isinstance(readonly, bool):
            raise TypeError("readonly must be a bool, not %s"
                            % type(readonly).__name__)
        opts.flags = ((OPEN_CREATE if create else 0) |
                      (OPEN_READONLY if readonly else 0))
        if isinstance(durability, Durability):
            opts.durability = int(durability)
        else:
            d = ffi.new("jb_durability *")
            _check(lib.jb_durability_parse(d, _text(durability, "durability",
                                                    True)))
            opts.durability = d[0]
        for field, value in (("map_size", map_size),
                             ("max_posting", max_posting),
                             ("history_max", history_max),
                             ("log_keep", log_keep)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError("%s must be an int, not %s"
                                % (field, type(value).__name__))
            if value < 0 or value >= 1 << 64:
                raise errors.InvalidError("%s must be 0 (the default) or "
                                          "more and below 2**64, not %d"
                                          % (field, value), -4)
            setattr(opts, field, value)
        if history_max_age is not None:
            opts.history_max_age_ms = _lease_ms(history_max_age,
                                                "history_max_age")
        if log_max_age is not None:
            opts.log_max_age_ms = _lease_ms(log_max_age, "log_max_age")
        if flush_interval is not None:
            opts.flush_interval_ms = _lease_ms(flush_interval,
                                               "flush_interval")
        out = ffi.new("jb_board **")
        _check(lib.jb_board_open(out, path_b, opts))
        self._b = out[0]
        self._path = _str(lib.jb_board_path(self._b))
        self._durability = Durability(opts.durability)
        self._lock = threading.Lock()       # guards the Redis connection
        self._use = _Use(self)              # every call into C
        self._sync = None                   # (url, ns, next_try)
        if redis is not None or namespace is not None:
            try:
                self._sync_setup(redis, namespace)
            except BaseException:
                self.close()
                raise

    # -- lifetime

    @property
    def path(self) -> str:
        """The board's directory."""
        return self._path

    @property
    def readonly(self) -> int:
        """0 when this handle writes; 1 opened read-only with LMDB's
        locks; 2 read-only without them (the lock file cannot be
        written: see JB_OPEN_READONLY in jobboard.h)."""
        return lib.jb_board_readonly(self._b)

    @property
    def durability(self) -> Durability:
        return self._durability

    def sync(self) -> None:
        """Flush the board now (jb_board_sync): every commit made so far,
        by any process, is on the disk when this returns."""
        with self._use as h:
            _check(lib.jb_board_sync(h))

    def set_flush_interval(self, seconds: float) -> None:
        """The board's own flush interval for durability interval (0: the
        default of 1 s), for processes that do not set one."""
        ms = 0 if seconds == 0 else _lease_ms(seconds, "flush interval")
        with self._use as h:
            _check(lib.jb_board_set_flush_interval(h, ms))

    @property
    def flush_info(self) -> Dict[str, int]:
        """What durability interval does for this process: on, the
        period in ms, flushes made, the recorded and the newest txnid."""
        out = ffi.new("jb_flush_info *")
        with self._use as h:
            _check(lib.jb_board_flush_info(out, h))
        return {"on": bool(out.on),
                "flush_interval_ms": out.flush_interval_ms,
                "flushes": out.flushes,
                "recorded_txnid": out.recorded_txnid,
                "latest_txnid": out.latest_txnid}

    @property
    def closed(self) -> bool:
        return self._b == ffi.NULL

    def close(self) -> None:
        """Close the handle. Jobs, claims and events already read stay
        valid (they are copies); calls after close raise InvalidError.
        Calls of other threads still inside the library are let finish
        first; their waits are ended (they raise InterruptedWaitError, a
        watch ends). Calls made after close, and iterators taken before it,
        raise InvalidError."""
        use = self.__dict__.get("_use")
        if use is None:  # the open failed
            return
        with use.cv:
            b, self._b = self._b, ffi.NULL
            if b != ffi.NULL and use.busy:
                # No new call gets the handle now; end the waits of the
                # calls inside, and let every call leave C first.
                lib.jb_board_interrupt(b)
                use.cv.wait_for(lambda: use.busy == 0)
        if self._conn is not None and b != ffi.NULL:
            sffi, slib = sync_lib()
            slib.jb_sync_detach(b)
        if b != ffi.NULL:
            lib.jb_board_close(b)
        if self._conn is not None:
            sffi, slib = sync_lib()
            slib.jb_sync_close(self._conn)
            self._conn = None

    def __enter__(self) -> "Board":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "<Board %r%s>" % (self._path, " closed" if self.closed
                                 else "")

    def _h(self):
        b = self._b
        if b == ffi.NULL:
            raise errors.InvalidError("board %s is closed" % self._path, -4)
        return b


    # -- Redis (libjbsync)

    def _sync_setup(self, redis, namespace):
        sffi, slib = sync_lib()
        if redis is True:
            url = None
        elif redis is None:
            url = None
        else:
            url = _text(redis, "redis")
        ns = None if namespace is None else _text(namespace, "namespace")
        url_out = sffi.new("char **")
        ns_out = sffi.new("char **")
        _check_config(slib.jb_sync_board_lookup(
            url_out, ns_out, self._h(), url or sffi.NULL, ns or sffi.NULL))
        try:
            if url_out[0] == sffi.NULL:
                raise errors.InvalidError(
                    "no Redis URL is known for board %s: give redis=URL or "
                    "set JOBBOARD_REDIS" % self._path, -4)
            r_url = sffi.string(url_out[0])
            r_ns = sffi.string(ns_out[0])
        finally:
            slib.free(url_out[0])
            slib.free(ns_out[0])
        self._sync = [r_url, r_ns, 0.0]
        self._given = (url, ns)
        self._sync_try(first=True)

    def _sync_try(self, first=False):
        """Connect and attach; a Redis that is away is tried again 2 s
        later by the next call that may need it."""
        sffi, slib = sync_lib()
        url, ns, _ = self._sync
        opts = sffi.new("jb_sync_options *")  # zeroed: every default
        keep = (sffi.new("char[]", url), sffi.new("char[]", ns))
        opts.url, opts.ns = keep
        conn = sffi.new("jb_sync_conn **")
        self._sync[2] = time.monotonic() + 2.0
        st = slib.jb_sync_connect(conn, opts)
        if st == 0:
            with self._use as h:
                st = slib.jb_sync_attach(h, conn[0])
            if st != 0:
                msg = ffi.string(lib.jb_errmsg())
                slib.jb_sync_close(conn[0])
                if st != errors.OfflineError.code:
                    raise errors.error_for(st, msg.decode())
                return
            self._conn = conn[0]
            if first and any(self._given):
                u, n = self._given
                uo, no = sffi.new("char **"), sffi.new("char **")
                _check_config(slib.jb_sync_board_configure(
                    uo, no, self._h(), u or sffi.NULL, n or sffi.NULL))
                slib.free(uo[0])
                slib.free(no[0])
        elif st != errors.OfflineError.code:
            _raise(st)

    @property
    def synced(self) -> bool:
        """True while the handle is attached to Redis."""
        return self._conn is not None

    def sync_detach(self) -> dict:
        """Detach the board from Redis (`jobboard sync --detach`): it
        forgets its URL, namespace and password and keeps every job as a
        local one; a claim held through Redis is released unless bound to
        a live process of this host. Returns {"url", "namespace", "jobs",
        "released", "kept", "dead_letters"}. NotFoundError when the board
        is not synced, ClaimedError while a replicator runs on it."""
        sffi, slib = sync_lib()
        out = sffi.new("jb_sync_detach_result *")
        with self._use as h:
            st = slib.jb_sync_board_detach(out, h)
        _check(st)
        return {"url": sffi.string(out.url).decode(),
                "namespace": sffi.string(out.ns).decode(),
                "jobs": out.jobs, "released": out.released,
                "kept": out.kept, "dead_letters": out.letters}

    def sync_detached(self) -> Optional[str]:
        """The board's record of its detaches (one line each, oldest
        first), or None when it was never detached."""
        sffi, slib = sync_lib()
        text = sffi.new("char **")
        with self._use as h:
            _check(slib.jb_sync_board_detached(text, h))
        if text[0] == sffi.NULL:
            return None
        try:
            return sffi.string(text[0]).decode()
        finally:
            slib.free(text[0])

    def _remote(self):
        """The lock to hold around a call that may go through Redis (the
        connection serves one thread at a time); a no-op lock when the
        board is not synced."""
        if self._sync is None:
            return _NOLOCK
        if self._conn is None and time.monotonic() >= self._sync[2]:
            with self._lock:
                if self._conn is None:
                    self._sync_try()
        return self._lock

    # -- jobs

    def post(self, name: str, details: Optional[Mapping] = None,
             priority: Union[Priority, str, int] = Priority.NORMAL,
             book: Any = None, book_name: Optional[str] = None,
             book_uuid: Optional[str] = None, *,
             delay: Optional[float] = None,
             not_before: Optional[float] = None,
             unique_key: Optional[str] = None,
             max_attempts: Optional[int] = None,
             time_limit: Optional[float] = None,
             backoff: Optional[float] = None,
             backoff_max: Optional[float] = None,
             max_snoozes: Optional[int] = None,
             expires: Optional[float] = None,
             expires_dead: bool = False) -> str:
        """Post a job; returns its uuid. `details` is a dict (stored as a
        msgpack map); `book` an object with .name and .uuid (a taskflow
        LogBook) or give book_name and book_uuid.

        Its life (None: not asked for):
          delay        seconds after the post before it is claimable
          not_before   or the time (seconds since the epoch) it is
                       claimable from; the job is listed and counted
                       meanwhile, and Job.not_before says when
          unique_key   refused with ExistsError while a live job holds the
                       key (the error's ``holder`` is that job's uuid)
          max_attempts to the dead letters after this many failed attempts
                       (None: the board's retry policy)
          time_limit   seconds a claim of it lasts, whatever its holder
                       renews
          backoff, backoff_max  its retries' back-off in seconds (None:
                       the board's retry policy)
          max_snoozes  snooze() is refused (InvalidError) once it snoozed
                       this many times (None: no limit)
          expires      a deadline to start, seconds from now: not claimed
                       by then it ends EXPIRED (End.EXPIRED) and is never
                       claimed
          expires_dead with expires: it goes to the dead letters
                       (DeadCause.EXPIRED) instead
        """
        post, keep = self._post_struct(
            name, details, priority, book, book_name, book_uuid, "",
            self._dumps, delay=delay, not_before=not_before,
            unique_key=unique_key, max_attempts=max_attempts,
            time_limit=time_limit, backoff=backoff, backoff_max=backoff_max,
            max_snoozes=max_snoozes, expires=expires,
            expires_dead=expires_dead)
        out = ffi.new("char[37]")
        with self._use as h:
            st = lib.jb_job_post(out, h, post)
        if st == errors.ExistsError.code:
            _raise(st, holder=ffi.string(out).decode() or None)
        _check(st)
        return ffi.string(out).decode()

    _POST_KEYS = frozenset({"name", "details", "priority", "book",
                            "book_name", "book_uuid", "delay", "not_before",
                            "unique_key", "max_attempts", "time_limit",
                            "backoff", "backoff_max", "max_snoozes",
                            "expires", "expires_dead"})

    def post_many(self, posts: Iterable[Mapping[str, Any]]) -> List[str]:
        """Post several jobs in one transaction, all or none. `posts` is an
        iterable of dicts with the keywords of post() (name required).
        Returns the uuids in order."""
        items = list(posts)
        if not items:
            return []
        arr = ffi.new("jb_post[]", len(items))
        keep = []
        for i, p in enumerate(items):
            if not isinstance(p, Mapping):
                raise TypeError("posts[%d] must be a dict of post()'s "
                                "arguments, not %s" % (i, type(p).__name__))
            unknown = set(p) - self._POST_KEYS
            if unknown:
                raise TypeError("posts[%d]: unknown argument %s"
                                % (i, ", ".join(sorted(unknown))))
            if "name" not in p:
                raise TypeError("posts[%d]: name is required" % i)
            kw = dict(p)
            one, k = self._post_struct(
                kw.pop("name"), kw.pop("details", None),
                kw.pop("priority", Priority.NORMAL), kw.pop("book", None),
                kw.pop("book_name", None), kw.pop("book_uuid", None),
                "posts[%d]." % i, self._dumps, **kw)
            arr[i] = one[0]
            keep.append((one, k))
        out = ffi.new("char[][37]", len(items))
        with self._use as h:
            _check(lib.jb_job_post_batch(out, h, arr, len(items)))
        return [ffi.string(out[i]).decode() for i in range(len(items))]

    @staticmethod
    def _post_struct(name, details, priority, book, book_name, book_uuid,
                     where, dumps=_msgpack_dumps, delay=None,
                     not_before=None, unique_key=None, max_attempts=None,
                     time_limit=None, backoff=None, backoff_max=None,
                     max_snoozes=None, expires=None, expires_dead=False):
        """A jb_post (and the buffers it points into, to keep alive)."""
        name_b = _text(name, where + "name", True)
        det = _pack_map(details, where + "details", dumps)
        if book is not None:
            if book_name is not None or book_uuid is not None:
                raise TypeError("give book, or book_name and book_uuid, not "
                                "both")
            book_name, book_uuid = getattr(book, "name", None), \
                getattr(book, "uuid", None)
            if book_name is None or book_uuid is None:
                raise TypeError("%sbook must have .name and .uuid (a taskflow"
                                " LogBook), not %s" % (where,
                                                       type(book).__name__))
        post = ffi.new("jb_post *")
        post.version = POST_VERSION
        keep = []
        if det:
            buf = ffi.from_buffer(det)
            keep.append(buf)
            post.details = buf
            post.details_len = len(det)
        post.priority = _priority(priority)
        if book_name is not None:
            keep.append(ffi.new("char[]", _text(book_name, where +
                                                "book_name", True)))
            post.book_name = keep[-1]
        if book_uuid is not None:
            keep.append(ffi.new("char[]", _text(book_uuid, where +
                                                "book_uuid", True)))
            post.book_uuid = keep[-1]
        keep.append(ffi.new("char[]", name_b))
        post.name = keep[-1]
        post.delay_ms = _ms(delay, where + "delay")
        post.not_before_us = _us(not_before, where + "not_before")
        post.max_attempts = _uint(max_attempts, where + "max_attempts")
        post.time_limit_ms = _ms(time_limit, where + "time_limit")
        post.backoff_ms = _ms(backoff, where + "backoff")
        post.backoff_max_ms = _ms(backoff_max, where + "backoff_max")
        post.max_snoozes = _uint(max_snoozes, where + "max_snoozes")
        post.expires_ms = _ms(expires, where + "expires")
        if expires_dead:
            post.flags |= lib.JB_POST_EXPIRES_DEAD
        if unique_key is not None:
            keep.append(ffi.new("char[]", _text(unique_key, where +
                                                "unique_key", True)))
            post.unique_key = keep[-1]
        return post, keep

    def get(self, uuid: str) -> Job:
        """A snapshot of job `uuid`. NotFoundError when it is not on the
        board."""
        out = ffi.new("jb_job **")
        with self._use as h:
            _check(lib.jb_job_get(out, h, _uuid(uuid)))
        try:
            return Job(out[0], self._loads)
        finally:
            lib.jb_job_free(out[0])

    def iterate(self, only_unclaimed: bool = False,
                on_corrupt: Optional[Callable[[errors.CorruptError], Any]]
                = None) -> Iterator[Job]:
        """The board's jobs in listing order (priority, then oldest first),
        streamed: a few dozen per short read, never a snapshot held across
        iterations. A job whose posting does not decode raises
        CorruptError, which ends the iteration (as any exception ends a
        generator); give `on_corrupt`, a callable taking that CorruptError,
        to be told of such a job and go on past it (`jobboard check`
        quarantines it)."""
        out = ffi.new("jb_iter **")
        with self._use as h:
            _check(lib.jb_iter_open(out, h,
                                    ONLY_UNCLAIMED if only_unclaimed else 0))
        it = ffi.gc(out[0], lib.jb_iter_close)
        job = ffi.new("jb_job **")
        while True:
            with self._use:
                st = lib.jb_iter_next(ffi.cast("const jb_job **", job), it)
            if st != 0:
                if st == errors.CorruptError.code and on_corrupt is not None:
                    on_corrupt(errors.error_for(st, ffi.string(
                        lib.jb_errmsg()).decode("utf-8", "replace")))
                    continue  # the C iterator moved past it
                _raise(st)
            if job[0] == ffi.NULL:
                break
            try:
                snap = Job(job[0], self._loads)
            except errors.CorruptError as e:
                if on_corrupt is None:
                    raise
                on_corrupt(e)
                continue
            yield snap
        ffi.release(it)

    __iter__ = iterate

    def page(self, after: Optional[str] = None, name: Optional[str] = None,
             where: int = 0, limit: int = 50) -> Tuple[List[Job], str]:
        """Up to `limit` jobs in listing order just after the cursor `after`
        (None: from the first), only of the exact `name` and of `where`
        (ITER_READY | ITER_CLAIMED | ITER_DELAYED; 0: all), and the cursor
        after the last one ("" when none): pass it as `after` for the next
        page. The read seeks to the cursor and through the names' index
        (jb_iter_open_opts), so a deep page costs what the first does."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        opts = ffi.new("jb_iter_options *")
        opts.version = lib.JB_ITER_OPTIONS_VERSION
        keep = []
        if after is not None:
            keep.append(ffi.new("char[]", after.encode("utf-8")))
            opts.after = keep[-1]
        if name is not None:
            keep.append(ffi.new("char[]", name.encode("utf-8")))
            opts.name = keep[-1]
        opts.where = where
        opts.batch = min(limit, 64)
        out = ffi.new("jb_iter **")
        with self._use as h:
            _check(lib.jb_iter_open_opts(out, h, opts))
        it = ffi.gc(out[0], lib.jb_iter_close)
        job = ffi.new("jb_job **")
        cursor = ffi.new("char[48]")
        jobs: List[Job] = []
        while len(jobs) < limit:
            with self._use:
                st = lib.jb_iter_next(ffi.cast("const jb_job **", job), it)
            if st != 0:
                _raise(st)
            if job[0] == ffi.NULL:
                break
            jobs.append(Job(job[0], self._loads))
            lib.jb_iter_cursor(it, cursor)
        ffi.release(it)
        return jobs, ffi.string(cursor).decode("ascii")

    def count(self, only_unclaimed: bool = False) -> int:
        """Jobs on the board (or only the claimable ones). O(1)."""
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_board_count(out, h,
                                      ONLY_UNCLAIMED if only_unclaimed else 0))
        return out[0]

    def __len__(self) -> int:
        return self.count()

    # -- claims

    @staticmethod
    def _claim_opts(lease, bind):
        if not isinstance(bind, bool):
            raise TypeError("bind must be a bool, not %s"
                            % type(bind).__name__)
        opts = ffi.new("jb_claim_options *")
        opts.version = CLAIM_OPTIONS_VERSION
        opts.flags = CLAIM_BIND_PROCESS if bind else 0
        opts.lease_ms = _lease_ms(lease)
        return opts

    @staticmethod
    def _claim_names(opts, names):
        """Point `opts` at `names` (claim-next: exact names and prefixes
        ending in '*'; None: every name) and return what must be kept
        alive while the options are in use (cffi does not tie them)."""
        if names is None:
            return None
        arr, keep = _names_array(names)
        opts.names = arr
        opts.n_names = len(keep)
        return arr, keep

    @staticmethod
    def _consume_opts(res, failed):
        """The jb_consume_options of result `res` (msgpack bytes; b"":
        none) and outcome `failed`, and the buffer they point into: keep
        it while the options are in use (cffi does not tie the two)."""
        opts = ffi.new("jb_consume_options *")
        opts.version = CONSUME_OPTIONS_VERSION
        opts.outcome = lib.JB_OUTCOME_FAILURE if failed else \
            lib.JB_OUTCOME_SUCCESS
        buf = ffi.from_buffer(res) if res else ffi.NULL
        opts.result = buf
        opts.result_len = len(res)
        return opts, buf

    def claim(self, uuid: str, who: str, lease: Optional[float] = None,
              bind: bool = False) -> Claim:
        """Claim job `uuid` for `who`; returns a Claim. `lease` (seconds):
        the claim lapses after it unless extended; `bind`: it lapses when
        this process ends. ClaimedError when claimed (also by `who`: the
        claim is then refreshed), NotFoundError when not on the board."""
        u, w = _uuid(uuid), _text(who, "who")
        opts = self._claim_opts(lease, bind)
        tok = ffi.new("uint64_t *")
        with self._remote():
            with self._use as h:
                _check(lib.jb_claim(tok, h, u, w, opts))
        return Claim(self, uuid.lower(), who, tok[0])

    def claim_next(self, who: str, lease: Optional[float] = None,
                   bind: bool = False,
                   timeout: Optional[float] = 0,
                   names: Optional[Iterable[str]] = None) -> Optional[Claim]:
        """Claim the first claimable job (highest priority, then oldest) for
        `who`; returns a Claim (its .job a snapshot), or None when nothing
        was claimable within `timeout` seconds (0: look once; None: wait
        without limit). Waiting sleeps on the board's commit signal.
        `names`: only jobs of these names (exact, or a prefix ending in
        '*': "images.*"), in listing order across them; None: every name.
        Jobs of a paused name (Board.pause) are never taken."""
        w = _text(who, "who")
        opts = self._claim_opts(lease, bind)
        keep = self._claim_names(opts, names)  # noqa: F841 - kept alive
        dl = _Deadline(_timeout_ms(timeout))
        backoff = 0.01
        uuid = ffi.new("char[37]")
        job = ffi.new("jb_job **")
        tok = ffi.new("uint64_t *")
        while True:
            ms = dl.next_ms()
            if ms is None:
                return None
            if self._sync is None:
                opts.wait_ms = ms
                with self._use as h:
                    st = lib.jb_claim_next(uuid, job, tok, h, w, opts)
                if st == errors.NotFoundError.code:
                    # wait_ms 0 (the one slice of timeout=0) looks once
                    # and reports nothing claimable as JB_ENOTFOUND, where
                    # a slice that waits reports JB_ETIMEDOUT. Both mean
                    # "nothing in this slice": the deadline decides, so
                    # timeout=0 keeps returning None after one look.
                    st = errors.TimedOutError.code
            else:
                # The Redis connection serves one thread at a time: claim
                # under the lock (not waiting), wait for a change without
                # it.
                opts.wait_ms = 0
                with self._remote():
                    with self._use as h:
                        st = lib.jb_claim_next(uuid, job, tok, h, w, opts)
                if st == errors.NotFoundError.code and ms > 0:
                    with self._use as h:
                        w_st = lib.jb_board_wait(h, ONLY_UNCLAIMED, ms)
                    if w_st not in (0, errors.TimedOutError.code):
                        _raise(w_st)
                    if w_st == 0:
                        # Claimable here but refused by Redis (or Redis is
                        # away): back off, 10 ms doubling to 0.5 s, until
                        # the replicator brings Redis's view.
                        time.sleep(min(backoff, ms / 1000.0))
                        backoff = min(backoff * 2, 0.5)
                    else:
                        backoff = 0.01
                    continue
                elif st == errors.NotFoundError.code:
                    st = errors.TimedOutError.code
            if st in (errors.TimedOutError.code,):
                continue
            if st == errors.NotFoundError.code:
                return None
            if st == errors.CorruptError.code and job[0] == ffi.NULL:
                # Claimed, but its posting does not decode: the claim
                # stands; give it back as a claim without a snapshot.
                return Claim(self, ffi.string(uuid).decode(), who, tok[0])
            _check(st)
            try:
                snap = Job(job[0], self._loads)
            finally:
                lib.jb_job_free(job[0])
            return Claim(self, snap.uuid, who, tok[0], snap)

    def extend(self, uuid: str, who: str, lease: float,
               token: int = 0) -> None:
        """The owner's claim on `uuid` now lapses `lease` seconds from
        now."""
        u, w = _uuid(uuid), _text(who, "who")
        ms = _lease_ms(lease)
        with self._remote():
            with self._use as h:
                _check(lib.jb_extend(h, u, w, _token(token), ms))

    def progress(self, uuid: str, who: str, percent: float,
                 message: Optional[str] = None, token: int = 0) -> None:
        """The owner of the claim on `uuid` reports how far it has got:
        `percent` (0 to 100, kept in tenths) and an optional `message` (at
        most PROGRESS_MESSAGE_MAX bytes of UTF-8, no control characters).
        Job.progress reads it; it outlives a lapsed or abandoned claim until
        the job is claimed again, and goes with the job."""
        u, w = _uuid(uuid), _text(who, "who")
        if isinstance(percent, bool) or not isinstance(percent, (int, float)):
            raise TypeError("percent must be a number, not %s"
                            % type(percent).__name__)
        m = ffi.NULL if message is None else _text(message, "message",
                                                   empty_ok=True)
        with self._use as h:
            _check(lib.jb_progress(h, u, w, _token(token), float(percent), m))

    def snooze(self, uuid: str, who: str, delay: float,
               token: int = 0) -> None:
        """The owner of the claim on `uuid` gives it back for `delay`
        seconds without spending an attempt: the job is unclaimed, not
        claimable before then, and Job.snoozes counts one more. Refused
        (InvalidError, the claim stands) once it snoozed its max_snoozes."""
        u, w = _uuid(uuid), _text(who, "who")
        if delay is None:
            raise TypeError("delay must be a number of seconds, not None")
        ms = _ms(delay, "delay")  # out of range: the library names it
        with self._use as h:
            _check(lib.jb_snooze(h, u, w, _token(token), ms))

    def abandon(self, uuid: str, who: str, token: int = 0) -> None:
        """Release `who`'s claim: the job is claimable again."""
        u, w = _uuid(uuid), _text(who, "who")
        with self._remote():
            with self._use as h:
                _check(lib.jb_abandon(h, u, w, _token(token)))

    def consume(self, uuid: str, who: str,
                result: Optional[Mapping] = None, failed: bool = False,
                token: int = 0) -> None:
        """The owner completes the job; its history keeps `result` (a
        dict) and says consumed (or failed, with failed=True)."""
        u, w = _uuid(uuid), _text(who, "who")
        res = _pack_map(result, "result", self._dumps)
        if not isinstance(failed, bool):
            raise TypeError("failed must be a bool, not %s"
                            % type(failed).__name__)
        done, keep = self._consume_opts(res, failed)
        with self._remote():
            with self._use as h:
                _check(lib.jb_consume(h, u, w, _token(token), done))

    def trash(self, uuid: str, who: str, token: int = 0) -> None:
        """The owner removes a bad job (kept in the dead letters, cause
        TRASHED)."""
        u, w = _uuid(uuid), _text(who, "who")
        with self._remote():
            with self._use as h:
                _check(lib.jb_trash(h, u, w, _token(token)))

    def find_owner(self, uuid: str) -> Optional[str]:
        """The owner of `uuid`, or None when unclaimed or not on the
        board."""
        out = ffi.new("char[256]")
        with self._use as h:
            _check(lib.jb_job_find_owner(out, h, _uuid(uuid)))
        return ffi.string(out).decode("utf-8", "replace") or None

    def state(self, uuid: str) -> State:
        """State.UNCLAIMED, CLAIMED, or COMPLETE when not on the board."""
        out = ffi.new("jb_state *")
        with self._use as h:
            _check(lib.jb_job_get_state(out, h, _uuid(uuid)))
        return State(out[0])

    def expires_in(self, uuid: str) -> Optional[float]:
        """Seconds left on the claim's lease; math.inf for a claim without
        expiry; None when the job is not claimed."""
        kind = ffi.new("jb_expiry *")
        ms = ffi.new("int64_t *")
        with self._use as h:
            _check(lib.jb_job_expires_in(kind, ms, h, _uuid(uuid)))
        if kind[0] == EXPIRY_NOT_CLAIMED:
            return None
        if kind[0] == EXPIRY_NONE:
            return math.inf
        return ms[0] / 1000.0

    # -- waits

    def wait(self, only_unclaimed: bool = False,
             timeout: Optional[float] = None,
             names: Optional[Iterable[str]] = None) -> bool:
        """Block until the board holds a job (or a claimable one), of one
        of `names` if given (exact names and prefixes ending in '*', as
        claim_next takes them; None: every name); True, or False when
        `timeout` seconds (None: no limit) pass first. A wait by names is
        not woken by the posts of other names; a delayed job of its names
        counts once due."""
        flags = ONLY_UNCLAIMED if only_unclaimed else 0
        arr, keep = _names_array(names) if names is not None else (ffi.NULL,
                                                                   [])
        dl = _Deadline(_timeout_ms(timeout))
        while True:
            ms = dl.next_ms()
            if ms is None:
                return False
            with self._use as h:
                st = lib.jb_board_wait_names(h, flags, arr, len(keep), ms,
                                             ffi.NULL)
            if st == 0:
                return True
            if st != errors.TimedOutError.code:
                _raise(st)

    def wait_done(self, uuid: str,
                  timeout: Optional[float] = None) -> Optional[Completion]:
        """Wait until job `uuid` completes and return its Completion, or
        None when `timeout` seconds pass first. NotFoundError at once for
        a uuid neither on the board nor in the history."""
        u = _uuid(uuid)
        dl = _Deadline(_timeout_ms(timeout))
        out = ffi.new("jb_completion **")
        while True:
            ms = dl.next_ms()
            if ms is None:
                return None
            with self._use as h:
                st = lib.jb_job_wait_done(out, h, u, ms)
            if st == 0:
                try:
                    return Completion(out[0], self._loads)
                finally:
                    lib.jb_completion_free(out[0])
            if st != errors.TimedOutError.code:
                _raise(st)

    def completion(self, uuid: str) -> Completion:
        """The history record of a completed job (NotFoundError while it is
        on the board or when the history does not hold it)."""
        out = ffi.new("jb_completion **")
        with self._use as h:
            _check(lib.jb_job_completion(out, h, _uuid(uuid)))
        try:
            return Completion(out[0], self._loads)
        finally:
            lib.jb_completion_free(out[0])

    def history(self, oldest_first: bool = False,
                on_corrupt: Optional[Callable[[errors.CorruptError], Any]]
                = None, ends: Optional[Iterable[End]] = None,
                name: Optional[str] = None,
                name_prefix: Optional[str] = None,
                since: Optional[float] = None,
                until: Optional[float] = None) -> Iterator[Completion]:
        """The completion history, newest first (or oldest first). A record
        that does not decode raises CorruptError (ending the iteration),
        or with `on_corrupt` is passed to it and skipped.

        Filters, applied as the records stream (None: no condition):
        `ends`, an iterable of End (the endings wanted); `name`, the exact
        job name; `name_prefix`, the name's start; `since` and `until`,
        seconds since the epoch (as Completion.completed): completed in
        [since, until)."""
        flt = ffi.new("jb_history_options *")
        flt.version = HISTORY_OPTIONS_VERSION
        flt.flags = HISTORY_OLDEST_FIRST if oldest_first else 0
        keep = []  # the filter's strings live as long as the call
        if ends is not None:
            for e in ends:
                flt.ends |= 1 << int(End(e))
        if name is not None:
            keep.append(ffi.new("char[]", _text(name, "name")))
            flt.name = keep[-1]
        if name_prefix is not None:
            keep.append(ffi.new("char[]", _text(name_prefix, "name_prefix")))
            flt.name_prefix = keep[-1]
        for field, value in (("since_us", since), ("until_us", until)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise TypeError("%s must be seconds since the epoch (a "
                                "number), not %r" % (field[:5], value))
            setattr(flt, field, max(1, int(round(value * 1e6))))
        out = ffi.new("jb_history_iter **")
        with self._use as h:
            _check(lib.jb_history_query(out, h, flt))
        it = ffi.gc(out[0], lib.jb_history_close)
        rec = ffi.new("jb_completion **")
        while True:
            with self._use:
                st = lib.jb_history_next(
                    ffi.cast("const jb_completion **", rec), it)
            if st != 0:
                if st == errors.CorruptError.code and on_corrupt is not None:
                    on_corrupt(errors.error_for(st, ffi.string(
                        lib.jb_errmsg()).decode("utf-8", "replace")))
                    continue
                _raise(st)
            if rec[0] == ffi.NULL:
                break
            try:
                done = Completion(rec[0], self._loads)
            except errors.CorruptError as e:
                if on_corrupt is None:
                    raise
                on_corrupt(e)
                continue
            yield done
        ffi.release(it)

    def interrupt(self) -> None:
        """Make every wait on this handle (now and later, in any thread)
        raise InterruptedWaitError, until reset_interrupt(). Also named
        cancel(), its name before 0.2: in the library "cancel" is taking
        jobs off the board (cancel_job, cancel_unclaimed)."""
        with self._use as h:
            _check(lib.jb_board_interrupt(h))

    def reset_interrupt(self) -> None:
        """Undo interrupt(): later waits on the handle wait again. Also
        named reset_cancel(), its name before 0.2."""
        with self._use as h:
            _check(lib.jb_board_interrupt_reset(h))

    # The names of 0.1, kept for the code that calls them.
    cancel = interrupt
    reset_cancel = reset_interrupt

    # -- the change log

    def _progress_figures(self, ev: Event) -> None:
        """Fill a PROGRESS event's percent and message from the log (left
        None should the event have been trimmed meanwhile)."""
        pct = ffi.new("double *")
        msg = ffi.new("char[]", PROGRESS_MESSAGE_MAX + 1)
        with self._use as h:
            st = lib.jb_log_progress(pct, msg, h, ev.seq)
        if st == 0:
            ev.percent = pct[0]
            ev.message = ffi.string(msg).decode("utf-8", "replace") or None

    def log_bounds(self) -> Tuple[int, int]:
        """(first, next): the oldest kept event's sequence and the one the
        next event will get."""
        first, nxt = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        with self._use as h:
            _check(lib.jb_log_bounds(first, nxt, h))
        return first[0], nxt[0]

    def watch(self, start: Optional[int] = None,
              types: Optional[Iterable[Union[EventType, str]]] = None,
              timeout: Optional[float] = None) -> Iterator[Event]:
        """Iterate over the change log's events, written by any process, in
        order: from sequence `start` (None: from the next event), only
        those of `types` (EventType values; None: all), woken by commits
        (no polling). Ends when no event arrives for `timeout` seconds
        (None: never) or when the handle is interrupted (Board.interrupt).
        When the log was trimmed past the reader, one TRIMMED event says
        how many were lost, then events resume where the log now starts."""
        want = None if types is None else {EventType(t) if not
                                           isinstance(t, str) else
                                           EventType[t.upper()]
                                           for t in types}
        t_ms = _timeout_ms(timeout)
        if start is None:
            cursor = self.log_bounds()[1]
        else:
            if isinstance(start, bool) or not isinstance(start, int):
                raise TypeError("start must be a log sequence (int) or None,"
                                " not %s" % type(start).__name__)
            if not 1 <= start < 1 << 64:
                raise errors.InvalidError("start %d is not a log sequence "
                                          "(1 or more)" % start, -4)
            cursor = start
        batch = 64
        events = ffi.new("jb_event[]", batch)
        n = ffi.new("size_t *")
        first = ffi.new("uint64_t *")
        dl = _Deadline(t_ms)
        while True:
            ms = dl.next_ms()
            if ms is None:
                return
            with self._use as h:
                st = lib.jb_log_wait(events, n, first, h, cursor, batch, ms)
            if st == errors.TimedOutError.code:
                continue
            if st == errors.InterruptedWaitError.code:
                return
            if st == errors.TrimmedError.code:
                lost = first[0] - cursor
                gap = ffi.new("jb_event *")
                gap.seq = cursor
                gap.type = int(EventType.TRIMMED)
                gap.lost = lost
                cursor = first[0]
                yield Event(gap)
                dl = _Deadline(t_ms)
                continue
            _check(st)
            for i in range(n[0]):
                ev = Event(events[i])
                cursor = ev.seq + 1
                if want is None or ev.type in want:
                    if ev.type == EventType.PROGRESS:
                        self._progress_figures(ev)
                    yield ev
            dl = _Deadline(t_ms)

    # -- entities

    def register_entity(self, name: str, kind: str,
                        meta: Optional[Mapping] = None) -> None:
        """Announce entity `name` (a worker, a conductor) of `kind` with
        metadata `meta` (a dict), bound to this process: it is listed while
        the process lives."""
        n, k = _text(name, "name"), _text(kind, "kind")
        m = _pack_map(meta, "meta", self._dumps)
        buf = ffi.from_buffer(m) if m else ffi.NULL
        with self._use as h:
            _check(lib.jb_entity_register(h, n, k, buf, len(m)))

    def unregister_entity(self, name: str) -> None:
        """Remove entity `name` (NotFoundError when not registered)."""
        with self._use as h:
            _check(lib.jb_entity_unregister(h, _text(name, "name")))

    def entities(self) -> List[Entity]:
        """The live entities, in name order."""
        found = []
        failure = []

        @ffi.callback("int(const jb_entity *, void *)")
        def each(e, _payload):
            try:
                found.append(Entity(e, self._loads))
                return 0
            except BaseException as ex:  # never let it cross into C
                failure.append(ex)
                return 1

        with self._use as h:
            _check(lib.jb_entity_list(h, each, ffi.NULL))
        if failure:
            raise failure[0]
        return found

    # -- names as queues

    def pause(self, name: Optional[str] = None) -> None:
        """Pause the name `name` (exact; a job of it was posted once:
        NotFoundError if not), or with None the whole board: no claim_next
        of any process takes its jobs until resume(). Claims held are not
        touched; claim() by uuid still works. Stored in the board."""
        n = ffi.NULL if name is None else _text(name, "name")
        with self._use as h:
            _check(lib.jb_pause(h, n))

    def resume(self, name: Optional[str] = None) -> None:
        """Resume what pause(name) paused (the same arguments)."""
        n = ffi.NULL if name is None else _text(name, "name")
        with self._use as h:
            _check(lib.jb_resume(h, n))

    def set_cap(self, name: str, max_claims: Optional[int]) -> None:
        """Let at most `max_claims` jobs named `name` be claimed at once by
        every process together (None or 0: no cap); claim_next passes the
        name over while the cap is full, claim() of one is refused
        (NotDueError). NotFoundError if no job of it was ever posted.

        A `name` ending in '*' caps EACH name under that prefix on its own
        (a key in the name: "resize.*" caps "resize.customer42" and every
        other customer's name apart), names posted later too; a name's own
        cap beats its prefix's (see cap_prefixes)."""
        n = _text(name, "name")
        cap = 0 if max_claims is None else int(max_claims)
        if not 0 <= cap <= 0xFFFFFFFF:
            raise errors.InvalidError(
                "max_claims: %r is not 0..2^32-1" % max_claims, -4)
        with self._use as h:
            _check(lib.jb_set_cap(h, n, cap))

    def cap_prefixes(self) -> List[Tuple[str, int]]:
        """The prefixes whose names are capped each on its own
        (set_cap("prefix*", n)): (prefix with its '*', cap), in the order
        they were set."""
        each, found, failure = _collect(
            "int(const char *, uint32_t, void *)",
            lambda p, cap: (ffi.string(p).decode("utf-8", "replace") + "*",
                            cap))
        with self._use as h:
            _check(lib.jb_cap_prefixes(h, each, ffi.NULL))
        if failure:
            raise failure[0]
        return found

    def set_rate(self, name: str, count: Optional[int],
                 period: float = 0) -> None:
        """Let at most `count` jobs named `name` be claimed per `period`
        seconds (to the millisecond) by every process together (None or 0:
        no limit): `count` at once, then one every period/count seconds.
        claim_next passes the name over while it has no token (a waiter
        sleeps until the next one), claim() of one is refused
        (NotDueError); every claim made on this board spends a token.
        NotFoundError if no job of it was ever posted; InvalidError for a
        period not above 0 (or above 366 days).

        A `name` ending in '*' limits EACH name under that prefix on its
        own (a key in the name: "api.*" limits "api.customer42" and every
        other customer's name apart), names posted later too; a name's own
        limit beats its prefix's (see rate_prefixes)."""
        n = _text(name, "name")
        c = 0 if count is None else int(count)
        if not 0 <= c <= 0xFFFFFFFF:
            raise errors.InvalidError(
                "count: %r is not 0..2^32-1" % count, -4)
        ms = 0
        if c:
            ms = round(float(period) * 1000)
            if not 0 < ms <= 0xFFFFFFFFFFFFFFFF:
                raise errors.InvalidError(
                    "period: %r is not a number of seconds above 0" % period,
                    -4)
        with self._use as h:
            _check(lib.jb_set_rate(h, n, c, ms))

    def rate_prefixes(self) -> List[Tuple[str, int, float]]:
        """The prefixes whose names are rate-limited each on its own
        (set_rate("prefix*", count, period)): (prefix with its '*', count,
        period in seconds), in the order they were set."""
        each, found, failure = _collect(
            "int(const char *, uint32_t, uint64_t, void *)",
            lambda p, count, ms: (
                ffi.string(p).decode("utf-8", "replace") + "*", count,
                ms / 1e3))
        with self._use as h:
            _check(lib.jb_rate_prefixes(h, each, ffi.NULL))
        if failure:
            raise failure[0]
        return found

    def queues(self) -> List[Queue]:
        """Every name a job was ever posted with, by name: its pause and its
        ready jobs (counted: the time grows with the ready jobs)."""
        each, found, failure = _collect(
            "int(const jb_queue_info *, void *)",
            lambda q: Queue(ffi.string(q.name).decode("utf-8", "replace"),
                            bool(q.paused), _seconds(q.changed_us),
                            q.ready, q.cap or None, q.held, q.rate or None,
                            q.period_ms / 1e3 if q.rate else None,
                            _seconds(q.next_token_us) if q.rate else None,
                            bool(q.cap_each), bool(q.rate_each)))
        with self._use as h:
            _check(lib.jb_queues_foreach(h, each, ffi.NULL, ffi.NULL))
        if failure:
            raise failure[0]
        return sorted(found)

    def board_paused(self) -> bool:
        """Whether the whole board is paused (pause(None))."""
        out = ffi.new("int *")

        @ffi.callback("int(const jb_queue_info *, void *)")
        def first(_q, _arg):
            return 1  # the flag is all that is wanted: stop at once

        with self._use as h:
            st = lib.jb_queues_foreach(h, first, ffi.NULL, out)
        if st not in (0, 1):
            _raise(st)
        return bool(out[0])

    # -- retries and dead letters

    def retry(self, uuid: str, who: str, reason: Optional[str] = None,
              delay: Optional[float] = None, dead: bool = False,
              token: int = 0) -> RetryResult:
        """The owner gives the job back to be tried again: its claim ends
        and its attempts count one more. It is claimable again after
        `delay` seconds (0: at once), or with delay None after the
        back-off (the job's own, else the board's retry policy:
        backoff * 2**(attempts - 1), at most backoff_max, +-20 % jitter).
        With dead=True, or when its attempts reach the maximum, it goes to
        the dead letters instead. `reason` (at most 1024 bytes of UTF-8)
        is kept with the job (Job.last_reason, DeadLetter.reason, the
        history's reason)."""
        u, w = _uuid(uuid), _text(who, "who")
        opts = ffi.new("jb_retry_options *")
        opts.version = lib.JB_RETRY_OPTIONS_VERSION
        opts.token = _token(token)
        if _flag(dead, "dead"):
            if delay is not None:
                raise TypeError("give a delay or dead=True, not both")
            opts.flags = lib.JB_RETRY_DEAD
        elif delay is None:
            opts.flags = lib.JB_RETRY_BACKOFF
        else:
            opts.delay_ms = _ms(delay, "delay")
        keep = None
        if reason is not None:
            keep = ffi.new("char[]", _text(reason, "reason", True))
            opts.reason = keep
        out = ffi.new("jb_retry_result *")
        with self._remote():
            with self._use as h:
                _check(lib.jb_retry(out, h, u, w, opts))
        return RetryResult(bool(out.dead), _seconds(out.due_us),
                           out.attempts)

    def retry_policy(self) -> RetryPolicy:
        """The board's retry policy (the defaults when none was set: no
        maximum, back-off 1 s doubling up to an hour)."""
        out = ffi.new("jb_retry_policy *")
        with self._use as h:
            _check(lib.jb_board_get_retry_policy(out, h))
        return RetryPolicy(out.max_attempts, out.backoff_ms / 1000.0,
                           out.backoff_max_ms / 1000.0)

    def set_retry_policy(self, policy: Optional[RetryPolicy] = None, *,
                         max_attempts: Optional[int] = None,
                         backoff: Optional[float] = None,
                         backoff_max: Optional[float] = None) -> RetryPolicy:
        """Store the board's retry policy (every process uses it): a
        RetryPolicy, or the fields given as keywords, the others keeping
        their current values (read first, in a transaction of its own).
        max_attempts 0 is no maximum; backoff is 0.001 s .. 10 years and
        backoff_max at least backoff. Returns the policy stored."""
        cur = policy if policy is not None else self.retry_policy()
        if not isinstance(cur, tuple) or len(cur) != 3:
            raise TypeError("policy must be a RetryPolicy, not %s"
                            % type(policy).__name__)
        cur = RetryPolicy(*cur)
        if max_attempts is not None:
            cur = cur._replace(max_attempts=max_attempts)
        if backoff is not None:
            cur = cur._replace(backoff=backoff)
        if backoff_max is not None:
            cur = cur._replace(backoff_max=backoff_max)
        p = ffi.new("jb_retry_policy *")
        p.version = lib.JB_RETRY_POLICY_VERSION
        p.max_attempts = _uint(cur.max_attempts, "max_attempts")
        p.backoff_ms = _ms(cur.backoff, "backoff")
        p.backoff_max_ms = _ms(cur.backoff_max, "backoff_max")
        with self._use as h:
            _check(lib.jb_board_set_retry_policy(h, p))
        return RetryPolicy(p.max_attempts, p.backoff_ms / 1000.0,
                           p.backoff_max_ms / 1000.0)

    def retention(self) -> Retention:
        """The retention this handle's writes apply: the board's stored
        setting, else (history) this handle's history_max options, else
        the defaults (10,000 records and 7 days of history; 10,000 dead
        letters and 30 days)."""
        st = ffi.new("jb_retention *")
        eff = ffi.new("jb_retention *")
        with self._use as h:
            _check(lib.jb_board_get_retention(st, eff, h))

        def count(v):
            return None if v == _RETAIN_NONE else v

        def age(v):
            return None if v == _RETAIN_NONE else v / 1000.0
        return Retention(count(eff.history_max), age(eff.history_max_age_ms),
                         count(eff.dead_max), age(eff.dead_max_age_ms),
                         frozenset(f for f, v in (
                             ("history_max", st.history_max),
                             ("history_max_age", st.history_max_age_ms),
                             ("dead_max", st.dead_max),
                             ("dead_max_age", st.dead_max_age_ms)) if v))

    def set_retention(self, *,
                      history_max: Union[int, str, None] = None,
                      history_max_age: Union[float, str, None] = None,
                      dead_max: Union[int, str, None] = None,
                      dead_max_age: Union[float, str, None] = None
                      ) -> Retention:
        """Store the bounds given (the others keep their stored value), in
        one write that also prunes a first batch (at most 64 records of
        each kind). Counts are ints >= 1, ages seconds > 0; "none" is no
        bound, "default" the default again. Returns the retention now."""
        r = ffi.new("jb_retention *")
        fields = 0
        for name, value, bit, is_age in (
                ("history_max", history_max, lib.JB_RETAIN_HISTORY_MAX,
                 False),
                ("history_max_age", history_max_age,
                 lib.JB_RETAIN_HISTORY_AGE, True),
                ("dead_max", dead_max, lib.JB_RETAIN_DEAD_MAX, False),
                ("dead_max_age", dead_max_age, lib.JB_RETAIN_DEAD_AGE, True)):
            if value is None:
                continue
            fields |= bit
            cname = name + "_ms" if is_age else name
            if value == "none":
                setattr(r, cname, _RETAIN_NONE)
            elif value == "default":
                setattr(r, cname, 0)
            elif isinstance(value, str):
                raise errors.InvalidError(
                    "%s %r is not a bound (a number, \"none\" or "
                    "\"default\")" % (name, value), -4)
            else:
                v = _ms(value, name) if is_age else _uint(value, name, 63)
                if v <= 0:
                    raise errors.InvalidError(
                        "%s %r is not a bound (say \"none\" for no bound, "
                        "\"default\" for the default)" % (name, value), -4)
                setattr(r, cname, v)
        if not fields:
            raise TypeError("set_retention: give at least one of history_max,"
                            " history_max_age, dead_max, dead_max_age")
        with self._use as h:
            _check(lib.jb_board_set_retention(h, r, fields))
        return self.retention()

    def dead_count(self) -> int:
        """Jobs in the dead letters."""
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_dead_count(out, h))
        return out[0]

    def dead_letters(self) -> List[DeadLetter]:
        """The dead letters, oldest first (by the time they died)."""
        cb, found, failure = _collect(
            "int(const jb_dead_letter *, void *)",
            lambda d: DeadLetter(d, self._loads))
        with self._use as h:
            st = lib.jb_dead_foreach(h, cb, ffi.NULL)
        if failure:
            raise failure[0]
        _check(st)
        return found

    def dead_letter(self, uuid: str) -> DeadLetter:
        """The dead letter of `uuid` (NotFoundError when there is none)."""
        out = ffi.new("jb_dead_letter **")
        with self._use as h:
            _check(lib.jb_dead_get(out, h, _uuid(uuid)))
        try:
            return DeadLetter(out[0], self._loads)
        finally:
            lib.jb_dead_free(out[0])

    def requeue(self, uuid: str, keep_attempts: bool = False) -> None:
        """Put a dead letter back on the board under its uuid, claimable at
        once, as the newest job of its priority; its attempts start again
        from 0 unless keep_attempts. ExistsError when another live job took
        its unique key meanwhile (the letter stays)."""
        flags = lib.JB_REQUEUE_KEEP_ATTEMPTS \
            if _flag(keep_attempts, "keep_attempts") else 0
        with self._use as h:
            _check(lib.jb_dead_requeue(h, _uuid(uuid), flags))

    def repost_dead(self, uuid: str, keep_attempts: bool = False) -> str:
        """Post a dead letter again as a NEW job (a new uuid, returned),
        claimable at once, with its posting and options; its attempts start
        again from 0 unless keep_attempts. The letter leaves in the same
        commit. Takes the letter of a job Redis decided too, which requeue
        refuses. ExistsError when another live job took its unique key
        (the letter stays)."""
        flags = lib.JB_REQUEUE_KEEP_ATTEMPTS \
            if _flag(keep_attempts, "keep_attempts") else 0
        out = ffi.new("char[37]")
        with self._use as h:
            _check(lib.jb_dead_repost(h, _uuid(uuid), flags, out))
        return ffi.string(out).decode()

    def purge_dead(self, before: Optional[float] = None) -> int:
        """Delete the dead letters that died before `before` (seconds since
        the epoch; None: all of them); returns how many."""
        us = INT64_MAX if before is None else _us(before, "before")
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_dead_purge(out, h, us))
        return out[0]

    def remove_dead(self, uuid: str) -> None:
        """Delete the dead letter of `uuid` (NotFoundError when there is
        none); the others stay, and so does the job's history record."""
        with self._use as h:
            _check(lib.jb_dead_remove(h, _uuid(uuid)))

    # -- run now

    def run_now(self, uuid: str) -> None:
        """Make a job that waits for its due time (a delay, a retry's
        back-off, a snooze) claimable at once, in its place: its sequence,
        priority, attempts and options stay, no event is logged, waiters
        are woken. A job claimable already is left as it is; a claimed one
        raises ClaimedError (naming the owner), one not on the board
        NotFoundError."""
        with self._use as h:
            _check(lib.jb_job_run_now(h, _uuid(uuid)))

    # -- cancel

    def cancel_job(self, uuid: str, force: bool = False) -> None:
        """Take a job that is not claimed off the board: it is COMPLETE,
        its history says CANCELLED and its unique key is free. A claimed
        job raises ClaimedError (naming the owner) unless force=True; its
        holder's next call is then refused. (Board.interrupt(), also
        named Board.cancel(), is another thing: it ends this handle's
        waits.)"""
        flags = lib.JB_CANCEL_FORCE if _flag(force, "force") else 0
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_cancel(h, _uuid(uuid), flags))

    def cancel_unclaimed(self) -> int:
        """Cancel every job that is not claimed (delayed ones included);
        returns how many. Also named flush(), its name before 0.2."""
        out = ffi.new("size_t *")
        with self._remote():
            with self._use as h:
                _check(lib.jb_board_cancel_unclaimed(out, h))
        return out[0]

    flush = cancel_unclaimed  # the name of 0.1

    # -- schedules

    def add_schedule(self, name: str, job_name: str,
                     details: Optional[Mapping] = None, *,
                     every: Optional[float] = None,
                     cron: Optional[str] = None,
                     start: Optional[float] = None,
                     catch_up: Union[CatchUp, str] = CatchUp.SKIP,
                     priority: Union[Priority, str, int] = Priority.NORMAL,
                     book: Any = None, book_name: Optional[str] = None,
                     book_uuid: Optional[str] = None,
                     max_attempts: Optional[int] = None,
                     time_limit: Optional[float] = None,
                     backoff: Optional[float] = None,
                     backoff_max: Optional[float] = None,
                     replace: bool = False, tz: Optional[str] = None,
                     overlap: Union[Overlap, str] = Overlap.QUEUE
                     ) -> Schedule:
        """Store schedule `name`: a job `job_name` (with `details` and the
        post options given) is posted at each run, `every` seconds (at
        least 1) or at the minutes of `cron` (a UTC cron spec, or @daily
        and the like): exactly one of the two. `start` (seconds since the
        epoch) is the first run (every) or the earliest (cron); None: one
        interval after now (every), now (cron). `catch_up` ("skip" or
        "all") says what a tick does with runs missed. `tz`: the IANA time
        zone of the cron fields ("Europe/Berlin"; None: UTC), read from the
        system's zoneinfo (InvalidError names an unknown one); a local time
        a change to daylight time skips runs at the change, one that
        happens twice runs once. `overlap` ("queue" or "skip"): whether a
        run due while an earlier run's job is on the board is posted.
        Runs are posted by
        tick() (Board.tick, `jobboard work`, `jobboard schedule run`).
        ExistsError when the name is taken, unless replace=True. Returns
        the stored schedule."""
        n = _text(name, "name", True)
        post, keep = self._post_struct(
            job_name, details, priority, book, book_name, book_uuid, "job.",
            self._dumps, max_attempts=max_attempts, time_limit=time_limit,
            backoff=backoff, backoff_max=backoff_max)
        sc = ffi.new("jb_schedule *")
        sc.version = lib.JB_SCHEDULE_VERSION
        keep.append(ffi.new("char[]", n))
        sc.name = keep[-1]
        sc.every_ms = _ms(every, "every")
        if cron is not None:
            keep.append(ffi.new("char[]", _text(cron, "cron", True)))
            sc.cron = keep[-1]
        sc.start_us = _us(start, "start")
        if isinstance(catch_up, str):
            try:
                catch_up = CatchUp[catch_up.upper()]
            except KeyError:
                raise errors.InvalidError("catch_up %r is not \"skip\" or "
                                          "\"all\"" % catch_up, -4)
        sc.catch_up = int(CatchUp(catch_up))
        if tz is not None:
            keep.append(ffi.new("char[]", _text(tz, "tz", True)))
            sc.tz = keep[-1]
        if isinstance(overlap, str):
            try:
                overlap = Overlap[overlap.upper()]
            except KeyError:
                raise errors.InvalidError("overlap %r is not \"queue\" or "
                                          "\"skip\"" % overlap, -4)
        sc.overlap = int(Overlap(overlap))
        sc.job = post[0]
        flags = lib.JB_SCHEDULE_REPLACE if _flag(replace, "replace") else 0
        with self._use as h:
            _check(lib.jb_schedule_add(h, sc, flags))
        return self.schedule(name)

    def remove_schedule(self, name: str) -> None:
        """Remove schedule `name` (the jobs it posted stay)."""
        with self._use as h:
            _check(lib.jb_schedule_remove(h, _text(name, "name", True)))

    def schedule(self, name: str) -> Schedule:
        """Schedule `name`, with its state (NotFoundError when none)."""
        out = ffi.new("jb_schedule **")
        with self._use as h:
            _check(lib.jb_schedule_get(out, h, _text(name, "name", True)))
        try:
            return Schedule(out[0], self._loads)
        finally:
            lib.jb_schedule_free(out[0])

    def schedules(self) -> List[Schedule]:
        """The board's schedules in name order."""
        cb, found, failure = _collect("int(const jb_schedule *, void *)",
                                      lambda c: Schedule(c, self._loads))
        with self._use as h:
            st = lib.jb_schedule_foreach(h, cb, ffi.NULL)
        if failure:
            raise failure[0]
        _check(st)
        return found

    def tick(self, now: Optional[float] = None) -> int:
        """Post the schedules' runs due at `now` (seconds since the epoch;
        None: the wall clock) in one transaction, each run once whoever
        else ticks; returns the number of jobs posted."""
        us = _us(now, "now")
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_schedule_tick(out, h, us))
        return out[0]

    def next_due(self) -> Optional[float]:
        """The earliest next run of the schedules (seconds since the
        epoch; maybe past: a tick is due), or None when there is no
        schedule."""
        out = ffi.new("int64_t *")
        with self._use as h:
            _check(lib.jb_schedule_next_due(out, h))
        if out[0] == 0 or out[0] == INT64_MAX:
            return None
        return out[0] / 1e6

    def wait_schedule(self, timeout: Optional[float] = None) -> bool:
        """Sleep until a schedule is due (a schedule added or changed
        meanwhile counts); True, or False when `timeout` seconds (None:
        no limit) pass first."""
        dl = _Deadline(_timeout_ms(timeout))
        while True:
            ms = dl.next_ms()
            if ms is None:
                return False
            with self._use as h:
                st = lib.jb_schedule_wait(h, ms)
            if st == 0:
                return True
            if st != errors.TimedOutError.code:
                _raise(st)

    # -- the worker's path: fewer commits per job

    def claim_next_many(self, who: str, max: int,
                        lease: Optional[float] = None,
                        bind: bool = False,
                        names: Optional[Iterable[str]] = None
                        ) -> List[Claim]:
        """Claim up to `max` (1..4096) claimable jobs for `who` in one
        commit, in claim-next order (of `names` as claim_next's; None:
        every name); [] when nothing is claimable. Each Claim has its own
        token and a snapshot (.job; None for a job whose posting does not
        decode: its claim stands, trash it)."""
        w = _text(who, "who")
        n = _uint(max, "max", 16)
        opts = self._claim_opts(lease, bind)
        keep = self._claim_names(opts, names)  # noqa: F841 - kept alive
        n_out = ffi.new("size_t *")
        uuids = ffi.new("char[][37]", n or 1)
        toks = ffi.new("uint64_t[]", n or 1)
        jobs = ffi.new("jb_job *[]", n or 1)
        with self._remote():
            with self._use as h:
                st = lib.jb_claim_next_many(n_out, uuids, toks, jobs, h, w,
                                            opts, n)
        if st == errors.NotFoundError.code:
            return []
        if st not in (0, errors.CorruptError.code):
            _raise(st)
        out = []
        try:
            for i in range(n_out[0]):
                snap = None
                if jobs[i] != ffi.NULL:
                    snap = Job(jobs[i], self._loads)
                out.append(Claim(self, ffi.string(uuids[i]).decode(), who,
                                 toks[i], snap))
        finally:
            for i in range(n_out[0]):
                lib.jb_job_free(jobs[i])
        return out

    def consume_and_claim_next(self, uuid: str, who: str,
                               result: Optional[Mapping] = None,
                               failed: bool = False, token: int = 0,
                               lease: Optional[float] = None,
                               bind: bool = False,
                               names: Optional[Iterable[str]] = None
                               ) -> Optional[Claim]:
        """consume() job `uuid` and claim_next() (of `names`, as
        claim_next's) for the same owner in one commit. Returns the new
        Claim, or None when nothing was claimable. If the consume fails,
        nothing is claimed."""
        u, w = _uuid(uuid), _text(who, "who")
        res = _pack_map(result, "result", self._dumps)
        done, keep = self._consume_opts(res, _flag(failed, "failed"))
        opts = self._claim_opts(lease, bind)
        keep_names = self._claim_names(opts, names)  # noqa: F841
        nu = ffi.new("char[37]")
        job = ffi.new("jb_job **")
        tok = ffi.new("uint64_t *")
        with self._remote():
            with self._use as h:
                st = lib.jb_consume_and_claim_next(
                    nu, job, tok, h, u, w, _token(token), done, opts)
        if st == errors.CorruptError.code and nu[0] != b"\0":
            return Claim(self, ffi.string(nu).decode(), who, tok[0])
        _check(st)
        if nu[0] == b"\0":
            return None
        try:
            snap = Job(job[0], self._loads)
        finally:
            lib.jb_job_free(job[0])
        return Claim(self, snap.uuid, who, tok[0], snap)

    def consume_many(self, items: Iterable[Union[Claim, Mapping[str, Any]]]
                     ) -> List[Optional[errors.JobboardError]]:
        """Consume several claimed jobs in one commit. Each item is a Claim
        (consumed with its .result) or a dict with uuid, who and optionally
        token, result and failed. Returns one entry per item: None when it
        was consumed, else the exception its consume() would have raised
        (that item changed nothing; the others committed). A Claim that
        was consumed gets ended "consumed"."""
        items = list(items)
        if not items:
            return []
        arr = ffi.new("jb_consume_item[]", len(items))
        keep = []
        for i, it in enumerate(items):
            if isinstance(it, Claim):
                kw = {"uuid": it.uuid, "who": it.who, "token": it.token,
                      "result": it.result}
            elif isinstance(it, Mapping):
                kw = dict(it)
                unknown = set(kw) - {"uuid", "who", "token", "result",
                                     "failed"}
                if unknown or "uuid" not in kw or "who" not in kw:
                    raise TypeError("items[%d] needs uuid and who (and may "
                                    "have token, result, failed), not %s"
                                    % (i, sorted(kw)))
            else:
                raise TypeError("items[%d] must be a Claim or a dict, not %s"
                                % (i, type(it).__name__))
            keep.append(ffi.new("char[]", _uuid(kw["uuid"])))
            arr[i].uuid = keep[-1]
            keep.append(ffi.new("char[]", _text(kw["who"], "who")))
            arr[i].who = keep[-1]
            arr[i].token = _token(kw.get("token", 0))
            arr[i].outcome = lib.JB_OUTCOME_FAILURE \
                if _flag(kw.get("failed", False), "failed") else \
                lib.JB_OUTCOME_SUCCESS
            res = _pack_map(kw.get("result"), "items[%d].result" % i,
                            self._dumps)
            if res:
                keep.append(ffi.from_buffer(res))
                arr[i].result = keep[-1]
                arr[i].result_len = len(res)
        status = ffi.new("int[]", len(items))
        messages = {}

        @ffi.callback("void(size_t, int, const char *, void *)")
        def each(index, _status, message, _payload):
            messages[index] = ffi.string(message).decode("utf-8", "replace")

        with self._remote():
            with self._use as h:
                _check(lib.jb_consume_many(status, h, arr, len(items),
                                           each, ffi.NULL))
        out = []
        for i, it in enumerate(items):
            if status[i] == 0:
                out.append(None)
                if isinstance(it, Claim):
                    it.ended = "consumed"
            else:
                out.append(errors.error_for(status[i], messages.get(
                    i, ffi.string(lib.jb_strerror(status[i])).decode())))
        return out

    # -- figures and upkeep

    def history_count(self) -> int:
        """Records in the completion history now."""
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_history_count(out, h))
        return out[0]

    def stats(self, by_name: bool = False) -> Stats:
        """The board's figures, all of one moment (see Stats); by_name also
        counts the jobs on the board by name (reads every posting)."""
        st = ffi.new("jb_stats *")
        st.version = lib.JB_STATS_VERSION
        st.flags = lib.JB_STATS_BY_NAME if _flag(by_name, "by_name") else 0
        with self._use as h:
            _check(lib.jb_stats_read(st, h))
        try:
            return Stats(st, by_name)
        finally:
            lib.jb_stats_clear(st)

    def check(self, record: bool = False) -> CheckReport:
        """Verify the board's invariants (`jobboard check`): a posting that
        does not decode is moved to quarantine. Returns the report; ok is
        False when a problem was found or something quarantined. With
        record=True the check's time and result are kept in the board
        (last_check); a record that could not be kept is a line of the
        report starting "not recorded: "."""
        flags = lib.JB_CHECK_RECORD if _flag(record, "record") else 0
        cb, lines, failure = _collect(
            "void(const char *, void *)",
            lambda line: ffi.string(line).decode("utf-8", "replace"))
        stats = ffi.new("jb_check_stats *")
        with self._use as h:
            st = lib.jb_board_check_ex(stats, h, flags, cb, ffi.NULL)
        if failure:
            raise failure[0]
        if st not in (0, errors.CorruptError.code):
            _raise(st)
        return CheckReport(st == 0, stats.jobs, stats.ready, stats.claimed,
                           stats.log_events, stats.trashed,
                           stats.quarantined, stats.moved, stats.problems,
                           stats.history, lines)


    def last_check(self) -> Optional[CheckRecord]:
        """The board's last recorded check (check(record=True), `jobboard
        check`), or None when none was recorded."""
        r = ffi.new("jb_check_record *")
        with self._use as h:
            st = lib.jb_board_last_check(r, h)
        if st == errors.NotFoundError.code:
            return None
        _check(st)
        return CheckRecord(r.time_us / 1e6, r.duration_us / 1e6, r.problems,
                           r.moved, r.jobs)


def _names_array(names):
    """A C array of the NUL-terminated names, and the buffers it points
    into (keep them while the array is in use)."""
    if isinstance(names, (str, bytes)):
        raise TypeError("names must be a list of str, not one %s"
                        % type(names).__name__)
    keep = [_text(n, "names[%d]" % i) for i, n in enumerate(names)]
    if not keep:
        # C reads no names as every name; a filter that came out empty
        # must not claim everything.
        raise errors.InvalidError("names is empty (None: every name)", -4)
    bufs = [ffi.new("char[]", k) for k in keep]
    arr = ffi.new("const char *[]", bufs)
    return arr, bufs


def name_matches(names: Iterable[str], name: str) -> bool:
    """Does `name` match one of `names` (exact, or a prefix ending in
    '*')? The rule claim_next applies."""
    arr, keep = _names_array(names)
    return bool(lib.jb_name_matches(arr, len(keep), _text(name, "name")))


def _token(token):
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError("token must be an int, not %s"
                        % type(token).__name__)
    if not 0 <= token < 1 << 64:
        raise errors.InvalidError("token %d is out of range" % token, -4)
    return token


def check_post(name: str, details: Optional[Mapping] = None,
               priority: Union[Priority, str, int] = Priority.NORMAL,
               book: Any = None, book_name: Optional[str] = None,
               book_uuid: Optional[str] = None, *, max_posting: int = 0,
               **options: Any) -> None:
    """Check a post by the rules Board.post applies (the keywords of
    post(), and the size against `max_posting`, 0: 1 MiB) without a
    board: InvalidError names what is wrong."""
    unknown = set(options) - Board._POST_KEYS
    if unknown:
        raise TypeError("check_post: unknown argument %s"
                        % ", ".join(sorted(unknown)))
    post, keep = Board._post_struct(name, details, priority, book,
                                    book_name, book_uuid, "", **options)
    _check(lib.jb_post_check(post, _uint(max_posting, "max_posting", 64)))


def salvage(src: Union[str, "os.PathLike[str]"],
            dst: Union[str, "os.PathLike[str]"]) -> SalvageReport:
    """Copy what can be read of the damaged board in `src` (only read)
    into a new board in `dst` (`jobboard salvage`); returns what was
    copied and the report's lines."""
    cb, lines, failure = _collect(
        "void(jb_salvage_kind, const char *, void *)",
        lambda kind, line: (_SALVAGE_KINDS.get(kind, str(kind)),
                            ffi.string(line).decode("utf-8", "replace")))
    st = ffi.new("jb_salvage_stats *")
    rc = lib.jb_board_salvage(st, _text(os.fspath(src), "src"),
                              _text(os.fspath(dst), "dst"), cb, ffi.NULL)
    if failure:
        raise failure[0]
    _check(rc)
    return SalvageReport(st.copied, st.orphaned, st.undecodable, st.completed,
                         st.bad_pages, st.bad_tables, st.history, lines)


class _Use:
    """Counts the threads inside a call on a board handle, so that close()
    frees it only once they have all left C (the C library forbids closing
    a handle in use). ``with board._use as h`` gives the handle or raises
    InvalidError once it is closed."""

    __slots__ = ("board", "cv", "busy")

    def __init__(self, board):
        self.board = board
        self.cv = threading.Condition(threading.Lock())
        self.busy = 0

    def __enter__(self):
        with self.cv:
            b = self.board._h()
            self.busy += 1
        return b

    def __exit__(self, *exc):
        with self.cv:
            self.busy -= 1
            if self.busy == 0:
                self.cv.notify_all()
        return False


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NOLOCK = _NoLock()
