"""Boards, jobs, claims, events: a thin layer over libjobboard.

Every rule (atomic claims, leases, tokens, ordering, the history, the change
log) is the C library's; this module converts arguments, copies results
into Python objects and turns status codes into exceptions.
"""

import enum
import math
import threading
import time
from collections.abc import Mapping

import msgpack

from . import errors
from ._native import ffi, lib, sync_lib

__all__ = [
    "Board", "Job", "Claim", "Event", "Entity", "Completion", "Priority",
    "State", "Durability", "EventType", "End", "version",
]

UUID_STRLEN = 37
WHO_MAX = 255
ONLY_UNCLAIMED = 1
OPEN_CREATE = 1
OPEN_READONLY = 2
CLAIM_BIND_PROCESS = 1
HISTORY_OLDEST_FIRST = 1
HISTORY_FILTER_VERSION = 1
OPTIONS_VERSION = 2
POST_VERSION = 1
CLAIM_OPTS_VERSION = 1
EXPIRY_NOT_CLAIMED, EXPIRY_NONE, EXPIRY_AT = 0, 1, 2

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


#: Event types that remove a job from the board (taskflow's REMOVAL).
REMOVAL = frozenset({EventType.CONSUMED, EventType.TRASHED,
                     EventType.REVOKED, EventType.LOST,
                     EventType.CANCELLED, EventType.DEAD})


def version():
    """The version of the libjobboard loaded ("0.1.0")."""
    return ffi.string(lib.jb_version(ffi.NULL, ffi.NULL, ffi.NULL)).decode()


# ----------------------------------------------------------- conversions

def _raise(st):
    raise errors.error_for(st, ffi.string(lib.jb_errmsg()).decode(
        "utf-8", "replace"))


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

    Times are seconds since the Unix epoch (floats, like ``time.time()``).
    """

    __slots__ = ("uuid", "name", "details", "priority", "sequence",
                 "created", "modified", "state", "owner", "token",
                 "lease_expires", "holder_pid", "holder_alive", "remote",
                 "book_name", "book_uuid")

    def __init__(self, cjob, loads=_msgpack_loads):
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

    def __repr__(self):
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
    `attempts` is how many times the job was claimed (0: not counted)."""

    __slots__ = ("uuid", "end", "name", "priority", "sequence", "owner",
                 "posted", "claimed", "completed", "result", "reason",
                 "history_seq", "details", "book_name", "book_uuid",
                 "attempts", "posting")

    def __init__(self, c, loads=_msgpack_loads):
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
        self.posting = bytes(ffi.buffer(c.posting, c.posting_len)) \
            if c.posting != ffi.NULL else None

    @property
    def succeeded(self):
        """True when the owner consumed it with success."""
        return self.end == End.CONSUMED

    def __repr__(self):
        return "<Completion %s %s by %r>" % (self.uuid, self.end.name,
                                             self.owner)


class Event:
    """One event of the change log."""

    __slots__ = ("seq", "type", "uuid", "owner", "time", "job_seq",
                 "priority", "lost")

    def __init__(self, e):
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

    def __repr__(self):
        name = getattr(self.type, "name", self.type)
        return "<Event %d %s %s%s>" % (self.seq, name, self.uuid,
                                       " by %r" % self.owner
                                       if self.owner else "")


class Entity:
    """A registered entity (a worker or conductor)."""

    __slots__ = ("name", "kind", "meta", "pid", "registered")

    def __init__(self, e, loads=_msgpack_loads):
        self.name = _str(e.name)
        self.kind = _str(e.kind)
        self.meta = _unpack_map(e.meta, e.meta_len, "entity " + self.name,
                                loads)
        self.pid = e.pid
        self.registered = e.registered_us / 1e6

    def __repr__(self):
        return "<Entity %r kind=%r pid=%d>" % (self.name, self.kind, self.pid)


# ------------------------------------------------------------------ claim

class Claim:
    """A claim held by ``who`` on job ``uuid`` (returned by Board.claim and
    Board.claim_next). Its ``token`` fences the holder: once the claim has
    lapsed and the job was claimed again, this claim's calls are refused.

    As a context manager it ends itself: consumed (with ``result``, set it
    inside the block) when the block succeeds, abandoned when it raises.
    A claim already ended inside the block is left as it is.
    """

    __slots__ = ("board", "uuid", "who", "token", "job", "result", "ended")

    def __init__(self, board, uuid, who, token, job=None):
        self.board = board
        self.uuid = uuid
        self.who = who
        self.token = token
        self.job = job          # a snapshot at claim time (claim_next)
        self.result = None      # consumed with this by the context manager
        self.ended = None       # "consumed", "failed", "abandoned", ...

    def consume(self, result=None, failed=False):
        """Complete the job (history: consumed, or failed with failed=True),
        keeping `result` (a dict) in its history record."""
        self.board.consume(self.uuid, self.who, result=result,
                           failed=failed, token=self.token)
        self.ended = "failed" if failed else "consumed"

    def abandon(self):
        """Give the job back: claimable again."""
        self.board.abandon(self.uuid, self.who, token=self.token)
        self.ended = "abandoned"

    def trash(self):
        """Remove a bad job (kept in the board's trash area)."""
        self.board.trash(self.uuid, self.who, token=self.token)
        self.ended = "trashed"

    def extend(self, lease):
        """The claim now lapses `lease` seconds from now."""
        self.board.extend(self.uuid, self.who, lease, token=self.token)

    def expires_in(self):
        """Seconds left on the lease (see Board.expires_in)."""
        return self.board.expires_in(self.uuid)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.ended is not None:
            return False
        if exc_type is None:
            self.consume(self.result)
        else:
            try:
                self.abandon()
            except errors.JobboardError:
                # The claim may have lapsed meanwhile; the exception that
                # ended the block is the one the caller needs to see.
                pass
        return False

    def __repr__(self):
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
      durability   "full" (default), "normal" or "none" (see jobboard.h);
                   one process must use one durability per board
      map_size     initial map size in bytes (0: 64 MiB; it grows)
      max_posting  largest posting in bytes (0: 1 MiB)
      history_max  completion records kept (0: 10,000)
      history_max_age  seconds the history keeps a record (None: 7 days)
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

    def __init__(self, path, create=False, durability="full", map_size=0,
                 max_posting=0, history_max=0, history_max_age=None,
                 redis=None, namespace=None, codec=None, readonly=False):
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
                             ("history_max", history_max)):
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
    def path(self):
        """The board's directory."""
        return self._path

    @property
    def readonly(self):
        """0 when this handle writes; 1 opened read-only with LMDB's
        locks; 2 read-only without them (the lock file cannot be
        written: see JB_OPEN_READONLY in jobboard.h)."""
        return lib.jb_board_readonly(self._b)

    @property
    def durability(self):
        return self._durability

    @property
    def closed(self):
        return self._b == ffi.NULL

    def close(self):
        """Close the handle. Jobs, claims and events already read stay
        valid (they are copies); calls after close raise InvalidError.
        Calls of other threads still inside the library are let finish
        first; their waits are ended (they raise CanceledError, a watch
        ends). Calls made after close, and iterators taken before it, raise
        InvalidError."""
        use = self.__dict__.get("_use")
        if use is None:  # the open failed
            return
        with use.cv:
            b, self._b = self._b, ffi.NULL
            if b != ffi.NULL and use.busy:
                # No new call gets the handle now; end the waits of the
                # calls inside, and let every call leave C first.
                lib.jb_board_cancel(b)
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
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
        _check_config(slib.jb_sync_board_resolve(
            self._h(), url or sffi.NULL, ns or sffi.NULL, url_out, ns_out))
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
        opts = sffi.new("jb_sync_options *")
        slib.jb_sync_options_init(opts)
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
                _check_config(slib.jb_sync_board_config(
                    self._h(), u or sffi.NULL, n or sffi.NULL, uo, no))
                slib.free(uo[0])
                slib.free(no[0])
        elif st != errors.OfflineError.code:
            _raise(st)

    @property
    def synced(self):
        """True while the handle is attached to Redis."""
        return self._conn is not None

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

    def post(self, name, details=None, priority=Priority.NORMAL, book=None,
             book_name=None, book_uuid=None):
        """Post a job; returns its uuid. `details` is a dict (stored as a
        msgpack map); `book` an object with .name and .uuid (a taskflow
        LogBook) or give book_name and book_uuid."""
        post, keep = self._post_struct(name, details, priority, book,
                                       book_name, book_uuid, "",
                                       self._dumps)
        out = ffi.new("char[37]")
        with self._use as h:
            _check(lib.jb_job_post(out, h, post))
        return ffi.string(out).decode()

    def post_many(self, posts):
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
            unknown = set(p) - {"name", "details", "priority", "book",
                                "book_name", "book_uuid"}
            if unknown:
                raise TypeError("posts[%d]: unknown argument %s"
                                % (i, ", ".join(sorted(unknown))))
            if "name" not in p:
                raise TypeError("posts[%d]: name is required" % i)
            one, k = self._post_struct(
                p["name"], p.get("details"), p.get("priority",
                                                   Priority.NORMAL),
                p.get("book"), p.get("book_name"), p.get("book_uuid"),
                "posts[%d]." % i, self._dumps)
            arr[i] = one[0]
            keep.append((one, k))
        out = ffi.new("char[][37]", len(items))
        with self._use as h:
            _check(lib.jb_job_post_batch(out, h, arr, len(items)))
        return [ffi.string(out[i]).decode() for i in range(len(items))]

    @staticmethod
    def _post_struct(name, details, priority, book, book_name, book_uuid,
                     where, dumps=_msgpack_dumps):
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
        return post, keep

    def get(self, uuid):
        """A snapshot of job `uuid`. NotFoundError when it is not on the
        board."""
        out = ffi.new("jb_job **")
        with self._use as h:
            _check(lib.jb_job_get(out, h, _uuid(uuid)))
        try:
            return Job(out[0], self._loads)
        finally:
            lib.jb_job_free(out[0])

    def iterate(self, only_unclaimed=False, on_corrupt=None):
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

    def count(self, only_unclaimed=False):
        """Jobs on the board (or only the claimable ones). O(1)."""
        out = ffi.new("size_t *")
        with self._use as h:
            _check(lib.jb_board_count(out, h,
                                      ONLY_UNCLAIMED if only_unclaimed else 0))
        return out[0]

    def __len__(self):
        return self.count()

    # -- claims

    @staticmethod
    def _claim_opts(lease, bind):
        if not isinstance(bind, bool):
            raise TypeError("bind must be a bool, not %s"
                            % type(bind).__name__)
        opts = ffi.new("jb_claim_opts *")
        opts.version = CLAIM_OPTS_VERSION
        opts.flags = CLAIM_BIND_PROCESS if bind else 0
        opts.lease_ms = _lease_ms(lease)
        return opts

    def claim(self, uuid, who, lease=None, bind=False):
        """Claim job `uuid` for `who`; returns a Claim. `lease` (seconds):
        the claim lapses after it unless extended; `bind`: it lapses when
        this process ends. ClaimedError when claimed (also by `who`: the
        claim is then refreshed), NotFoundError when not on the board."""
        u, w = _uuid(uuid), _text(who, "who")
        opts = self._claim_opts(lease, bind)
        tok = ffi.new("uint64_t *")
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_claim_ex(tok, h, u, w, opts))
        return Claim(self, uuid.lower(), who, tok[0])

    def claim_next(self, who, lease=None, bind=False, timeout=0):
        """Claim the first claimable job (highest priority, then oldest) for
        `who`; returns a Claim (its .job a snapshot), or None when nothing
        was claimable within `timeout` seconds (0: look once; None: wait
        without limit). Waiting sleeps on the board's commit signal."""
        w = _text(who, "who")
        opts = self._claim_opts(lease, bind)
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
                with self._use as h:
                    st = lib.jb_job_claim_next_wait(uuid, job, tok, h, w,
                                                    opts, ms)
            else:
                # The Redis connection serves one thread at a time: claim
                # under the lock, wait for a change without it.
                with self._remote():
                    with self._use as h:
                        st = lib.jb_job_claim_next_ex(uuid, job, tok, h,
                                                      w, opts)
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

    def extend(self, uuid, who, lease, token=0):
        """The owner's claim on `uuid` now lapses `lease` seconds from
        now."""
        u, w = _uuid(uuid), _text(who, "who")
        ms = _lease_ms(lease)
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_extend(h, u, w, _token(token), ms))

    def abandon(self, uuid, who, token=0):
        """Release `who`'s claim: the job is claimable again."""
        u, w = _uuid(uuid), _text(who, "who")
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_abandon_ex(h, u, w, _token(token)))

    def consume(self, uuid, who, result=None, failed=False, token=0):
        """The owner completes the job; its history keeps `result` (a
        dict) and says consumed (or failed, with failed=True)."""
        u, w = _uuid(uuid), _text(who, "who")
        res = _pack_map(result, "result", self._dumps)
        if not isinstance(failed, bool):
            raise TypeError("failed must be a bool, not %s"
                            % type(failed).__name__)
        buf = ffi.from_buffer(res) if res else ffi.NULL
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_consume_result(h, u, w, _token(token),
                                                 1 if failed else 0, buf,
                                                 len(res)))

    def trash(self, uuid, who, token=0):
        """The owner removes a bad job (kept in the trash area)."""
        u, w = _uuid(uuid), _text(who, "who")
        with self._remote():
            with self._use as h:
                _check(lib.jb_job_trash_ex(h, u, w, _token(token)))

    def find_owner(self, uuid):
        """The owner of `uuid`, or None when unclaimed or not on the
        board."""
        out = ffi.new("char[256]")
        with self._use as h:
            _check(lib.jb_job_find_owner(out, h, _uuid(uuid)))
        return ffi.string(out).decode("utf-8", "replace") or None

    def state(self, uuid):
        """State.UNCLAIMED, CLAIMED, or COMPLETE when not on the board."""
        out = ffi.new("jb_state *")
        with self._use as h:
            _check(lib.jb_job_get_state(out, h, _uuid(uuid)))
        return State(out[0])

    def expires_in(self, uuid):
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

    def wait(self, only_unclaimed=False, timeout=None):
        """Block until the board holds a job (or a claimable one); True, or
        False when `timeout` seconds (None: no limit) pass first."""
        flags = ONLY_UNCLAIMED if only_unclaimed else 0
        dl = _Deadline(_timeout_ms(timeout))
        while True:
            ms = dl.next_ms()
            if ms is None:
                return False
            with self._use as h:
                st = lib.jb_board_wait(h, flags, ms)
            if st == 0:
                return True
            if st != errors.TimedOutError.code:
                _raise(st)

    def wait_done(self, uuid, timeout=None):
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

    def completion(self, uuid):
        """The history record of a completed job (NotFoundError while it is
        on the board or when the history does not hold it)."""
        out = ffi.new("jb_completion **")
        with self._use as h:
            _check(lib.jb_job_completion(out, h, _uuid(uuid)))
        try:
            return Completion(out[0], self._loads)
        finally:
            lib.jb_completion_free(out[0])

    def history(self, oldest_first=False, on_corrupt=None, ends=None,
                name=None, name_prefix=None, since=None, until=None):
        """The completion history, newest first (or oldest first). A record
        that does not decode raises CorruptError (ending the iteration),
        or with `on_corrupt` is passed to it and skipped.

        Filters, applied as the records stream (None: no condition):
        `ends`, an iterable of End (the endings wanted); `name`, the exact
        job name; `name_prefix`, the name's start; `since` and `until`,
        seconds since the epoch (as Completion.completed): completed in
        [since, until)."""
        flt = ffi.new("jb_history_filter *")
        flt.version = HISTORY_FILTER_VERSION
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
            _check(lib.jb_history_open_filtered(
                out, h, HISTORY_OLDEST_FIRST if oldest_first else 0, flt))
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

    def cancel(self):
        """Make every wait on this handle (now and later, in any thread)
        raise CanceledError, until reset_cancel()."""
        with self._use as h:
            _check(lib.jb_board_cancel(h))

    def reset_cancel(self):
        with self._use as h:
            _check(lib.jb_board_cancel_reset(h))

    # -- the change log

    def log_bounds(self):
        """(first, next): the oldest kept event's sequence and the one the
        next event will get."""
        first, nxt = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        with self._use as h:
            _check(lib.jb_log_bounds(first, nxt, h))
        return first[0], nxt[0]

    def watch(self, start=None, types=None, timeout=None):
        """Iterate over the change log's events, written by any process, in
        order: from sequence `start` (None: from the next event), only
        those of `types` (EventType values; None: all), woken by commits
        (no polling). Ends when no event arrives for `timeout` seconds
        (None: never) or when the handle is cancelled (Board.cancel). When
        the log was trimmed past the reader, one TRIMMED event says how
        many were lost, then events resume where the log now starts."""
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
            if st == errors.CanceledError.code:
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
                    yield ev
            dl = _Deadline(t_ms)

    # -- entities

    def register_entity(self, name, kind, meta=None):
        """Announce entity `name` (a worker, a conductor) of `kind` with
        metadata `meta` (a dict), bound to this process: it is listed while
        the process lives."""
        n, k = _text(name, "name"), _text(kind, "kind")
        m = _pack_map(meta, "meta", self._dumps)
        buf = ffi.from_buffer(m) if m else ffi.NULL
        with self._use as h:
            _check(lib.jb_entity_register(h, n, k, buf, len(m)))

    def unregister_entity(self, name):
        with self._use as h:
            _check(lib.jb_entity_unregister(h, _text(name, "name")))

    def entities(self):
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


def _token(token):
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError("token must be an int, not %s"
                        % type(token).__name__)
    if not 0 <= token < 1 << 64:
        raise errors.InvalidError("token %d is out of range" % token, -4)
    return token


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
