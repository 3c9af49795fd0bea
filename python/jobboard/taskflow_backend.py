"""A taskflow jobboard on a local jobboard board: no Redis, no ZooKeeper.

taskflow finds it through the entry point ``jobboard`` of the group
``taskflow.jobboards``::

    from taskflow.jobs import backends
    board = backends.fetch("my-conductor",
                           {"board": "jobboard", "path": "/srv/board"},
                           persistence=persistence)
    board.connect()

Configuration (``conf``):
  path        the board directory (required)
  create      make the board when it does not exist (default False)
  durability  "full" (default), "normal" or "none" (see jobboard(1))
  redis       a Redis URL: jobs Redis decides (a board shared through
              Redis, run `jobboard sync` beside it) are claimed, abandoned,
              consumed and trashed through Redis; "remembered" (or True)
              takes the URL the board remembers
  namespace   the Redis namespace (default: the board's, else "taskflow")

Every rule is the C library's: a claim is one LMDB transaction, so two
conductors (threads or processes) never hold one job. Errors map as
taskflow's Redis board maps them: already claimed (also by the same owner)
-> UnclaimableJob, not on the board -> NotFound, another owner ->
JobFailure; a closed board -> JobFailure.

The board is a NotifyingJobBoard: POSTED and REMOVAL are emitted for jobs
posted and removed by any process, read from the board's change log by a
thread of the board (woken by commits, no polling), from the moment the
first listener registers (or from connect() when one was registered
before): with no listener there is no such thread.
"""

import contextlib
import datetime
import functools
import logging
import threading
import time

from oslo_serialization import msgpackutils
from taskflow import exceptions as exc
from taskflow.jobs import base
from taskflow import states
from taskflow.types import notifier as tf_notifier

from . import board as jb
from . import errors

LOG = logging.getLogger(__name__)

#: What expires_in() returns for a claim without expiry and for a job that
#: is not claimed: the values of taskflow.utils.redis_utils.UnknownExpire.
DOES_NOT_EXPIRE = -1
KEY_NOT_FOUND = -2

#: Details are encoded as taskflow's Redis board encodes its postings
#: (oslo.serialization's msgpackutils: datetimes, uuids, sets... as msgpack
#: extension types), so jobs read the same whichever board posted them.
CODEC = (msgpackutils.dumps, msgpackutils.loads)

_STATES = {
    jb.State.UNCLAIMED: states.UNCLAIMED,
    jb.State.CLAIMED: states.CLAIMED,
    jb.State.COMPLETE: states.COMPLETE,
}


def _utc(seconds):
    """Seconds since the epoch as a naive UTC datetime (taskflow's
    timeutils.utcnow() convention)."""
    if seconds is None:
        return None
    return datetime.datetime.fromtimestamp(
        seconds, datetime.timezone.utc).replace(tzinfo=None)


def _truthy(value):
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes", "on"):
            return True
        if v in ("0", "false", "no", "off", ""):
            return False
        raise ValueError("create must be true or false, not %r" % value)
    return bool(value)


@contextlib.contextmanager
def _translate(what, uuid=None):
    """Library errors as taskflow's exceptions (as its Redis board does)."""
    try:
        yield
    except errors.ClaimedError as e:
        exc.raise_with_cause(exc.UnclaimableJob, str(e), cause=e)
    except errors.NotFoundError as e:
        exc.raise_with_cause(exc.NotFound, str(e), cause=e)
    except errors.JobboardError as e:
        exc.raise_with_cause(exc.JobFailure, "cannot %s%s: %s" % (
            what, " job %s" % uuid if uuid else "", e), cause=e)


def _connected(meth):
    @functools.wraps(meth)
    def wrapper(self, *args, **kwargs):
        self._handle()  # JobFailure when not connected
        return meth(self, *args, **kwargs)
    return wrapper


class _Notifier(tf_notifier.Notifier):
    """taskflow's Notifier that tells its board when a listener comes: the
    board follows its change log only while someone listens (a thread that
    wakes at every commit costs the board's own calls the GIL)."""

    def __init__(self, on_register):
        super().__init__()
        self._on_register = on_register

    def register(self, *args, **kwargs):
        super().register(*args, **kwargs)
        self._on_register()


@functools.total_ordering
class JobboardJob(base.Job):
    """A job of a jobboard board, as taskflow sees it."""

    def __init__(self, board, snap, backend=None, book=None):
        book_data = None
        if snap.book_uuid is not None:
            book_data = {"name": snap.book_name, "uuid": snap.book_uuid}
        super().__init__(board, snap.name, uuid=snap.uuid,
                         details=snap.details, backend=backend, book=book,
                         book_data=book_data)
        self._sequence = snap.sequence
        self._created_on = _utc(snap.created)
        self._modified = _utc(snap.modified)
        self._priority = base.JobPriority(snap.priority.name)

    @property
    def sequence(self):
        """The job's board-wide sequence number."""
        return self._sequence

    @property
    def priority(self):
        return self._priority

    @property
    def created_on(self):
        return self._created_on

    @property
    def last_modified(self):
        """When the job was last claimed or abandoned (or posted): read
        from the board; the last value seen once it has left it."""
        h = self._board._handle()
        try:
            snap = h.get(self._uuid)
        except errors.NotFoundError:
            return self._modified
        except errors.JobboardError as e:
            exc.raise_with_cause(exc.JobFailure, "cannot read job %s: %s"
                                 % (self._uuid, e), cause=e)
        self._modified = _utc(snap.modified)
        return self._modified

    @property
    def state(self):
        h = self._board._handle()
        with _translate("read the state of", self._uuid):
            return _STATES[h.state(self._uuid)]

    def expires_in(self):
        """Seconds until the claim lapses; DOES_NOT_EXPIRE (-1) for a claim
        without expiry, KEY_NOT_FOUND (-2) when the job is not claimed (as
        taskflow's Redis job answers)."""
        h = self._board._handle()
        with _translate("read the expiry of", self._uuid):
            left = h.expires_in(self._uuid)
        if left is None:
            return KEY_NOT_FOUND
        if left == float("inf"):
            return DOES_NOT_EXPIRE
        return left

    def extend_expiry(self, expiry):
        """The claim now lapses `expiry` seconds from now (a claim without
        expiry gets one). True when done, False when the job is not
        claimed any more."""
        h = self._board._handle()
        with _translate("find the owner of", self._uuid):
            owner = h.find_owner(self._uuid)
        if owner is None:
            return False
        try:
            h.extend(self._uuid, owner, expiry)
        except (errors.NotFoundError, errors.NotOwnerError):
            return False
        except errors.InvalidError as e:
            raise ValueError(str(e))
        except errors.JobboardError as e:
            exc.raise_with_cause(exc.JobFailure, "cannot extend the claim of"
                                 " job %s: %s" % (self._uuid, e), cause=e)
        return True

    def wait(self, timeout=None, delay=0.01, delay_multiplier=2.0,
             max_delay=60.0, sleep_func=None):
        """True once the job is complete, False when `timeout` seconds pass
        first. Woken by the board's commits (the delay arguments of
        taskflow's polling wait are accepted and unused)."""
        h = self._board._handle()
        try:
            return h.wait_done(self._uuid, timeout=timeout) is not None
        except errors.NotFoundError:
            # Neither on the board nor in the (bounded) history: it left
            # the board, so it is complete.
            return True
        except errors.JobboardError as e:
            exc.raise_with_cause(exc.JobFailure, "cannot wait for job %s: %s"
                                 % (self._uuid, e), cause=e)

    def _key(self):
        return (self._board.listings_key, self._priority_rank(),
                self._sequence)

    def _priority_rank(self):
        return jb.Priority[self._priority.name]

    def __lt__(self, other):
        if not isinstance(other, JobboardJob):
            return NotImplemented
        # Listing order: higher priority first, then lower sequence.
        a, b = self._key(), other._key()
        if a[0] != b[0]:
            return a[0] < b[0]
        if a[1] != b[1]:
            return a[1] > b[1]
        return a[2] < b[2]

    def __eq__(self, other):
        if not isinstance(other, JobboardJob):
            return NotImplemented
        return (self._board.listings_key, self._uuid) == \
            (other._board.listings_key, other._uuid)

    def __hash__(self):
        return hash((self._board.listings_key, self._uuid))


class JobboardJobBoard(base.NotifyingJobBoard):
    """taskflow's JobBoard contract on a local jobboard board."""

    def __init__(self, name, conf, persistence=None, client=None):
        super().__init__(name, conf)
        if not isinstance(self._conf, dict):
            raise TypeError("conf must be a dict, not %s"
                            % type(self._conf).__name__)
        path = self._conf.get("path")
        if not path:
            raise ValueError("jobboard: conf needs 'path', the board "
                             "directory")
        if not isinstance(path, str):
            raise TypeError("jobboard: conf 'path' must be a str, not %s"
                            % type(path).__name__)
        self._path = path
        self._create = _truthy(self._conf.get("create", False))
        self._durability = self._conf.get("durability", "full")
        redis = self._conf.get("redis")
        if redis in ("remembered", True, "true"):
            redis = True
        self._redis = redis
        self._namespace = self._conf.get("namespace")
        self._persistence = persistence
        self._client = client          # a jobboard.Board given by the caller
        self._h = None
        self._lock = threading.RLock()
        self._watcher = None           # (thread, its own handle)
        self._seen = {}                # uuid -> job, for REMOVAL details
        self.notifier = _Notifier(self._listening)

    # -- connection

    @property
    def path(self):
        return self._path

    @property
    def listings_key(self):
        """What tells this board's jobs apart from another board's (its
        directory), as taskflow's Redis jobs use their listings key."""
        return self._path

    @property
    def connected(self):
        h = self._h
        return h is not None and not h.closed

    def connect(self):
        with self._lock:
            self.close()
            if self._client is not None:
                self._h = self._client
            else:
                try:
                    self._h = jb.Board(
                        self._path, create=self._create,
                        durability=self._durability,
                        redis=self._redis, namespace=self._namespace,
                        codec=CODEC)
                except (errors.JobboardError, ImportError) as e:
                    # ImportError: conf names Redis and libjbsync is not
                    # installed (jobboard built without hiredis).
                    exc.raise_with_cause(exc.JobFailure,
                                         "cannot open board %s: %s"
                                         % (self._path, e), cause=e)
            if len(self.notifier):
                self._start_watcher()

    def _listening(self):
        """A listener registered: follow the change log from now on (if
        connected; else from connect())."""
        with self._lock:
            if self._watcher is None and self.connected:
                self._start_watcher()

    def close(self):
        with self._lock:
            self._stop_watcher()
            h, self._h = self._h, None
            if h is not None and h is not self._client:
                h.close()

    def _handle(self):
        h = self._h
        if h is None or h.closed:
            raise exc.JobFailure("jobboard %s (board %s) is not connected"
                                 % (self._name, self._path))
        return h

    # -- notifications from the change log

    def _start_watcher(self):
        try:
            wh = jb.Board(self._path, durability=self._h.durability,
                          codec=CODEC)
        except errors.JobboardError as e:
            exc.raise_with_cause(exc.JobFailure, "cannot watch board %s: %s"
                                 % (self._path, e), cause=e)
        start = wh.log_bounds()[1]
        t = threading.Thread(target=self._watch, args=(wh, start),
                             name="jobboard-notify %s" % self._path,
                             daemon=True)
        self._watcher = (t, wh)
        t.start()

    def _stop_watcher(self):
        w, self._watcher = self._watcher, None
        if w is None:
            return
        t, wh = w
        wh.interrupt()
        if t is not threading.current_thread():  # closed by a listener
            t.join()
            wh.close()
        self._seen.clear()

    def _watch(self, wh, start):
        types = {jb.EventType.POSTED} | jb.REMOVAL
        try:
            for ev in wh.watch(start=start):
                if ev.type == jb.EventType.TRIMMED:
                    LOG.warning("jobboard %s: %d events were trimmed from "
                                "the change log before they were read",
                                self._name, ev.lost)
                    continue
                if ev.type not in types or not len(self.notifier):
                    continue
                self._emit(wh, ev)
        except errors.InterruptedWaitError:
            pass
        except Exception:
            LOG.exception("jobboard %s: the notification thread stopped",
                          self._name)

    def _emit(self, wh, ev):
        if ev.type == jb.EventType.POSTED:
            try:
                job = JobboardJob(self, wh.get(ev.uuid),
                                  backend=self._persistence)
            except errors.NotFoundError:
                # Gone already (its removal follows): still announced, as
                # its history record describes it.
                job = self._gone_job(wh, ev)
            if len(self._seen) > 10000:
                self._seen.clear()
            self._seen[ev.uuid] = job
            self.notifier.notify(base.POSTED, {"job": job})
        else:
            job = self._seen.pop(ev.uuid, None)
            if job is None:
                job = self._gone_job(wh, ev)
            self.notifier.notify(base.REMOVAL, {"job": job})

    def _gone_job(self, wh, ev):
        """A job object for a job that left the board before we saw it
        posted: what its history record says."""
        name, posted = "", ev.time
        try:
            rec = wh.completion(ev.uuid)
            name, posted = rec.name or "", rec.posted or ev.time
        except errors.JobboardError:
            pass  # not in the (bounded) history any more
        prio = jb.Priority.NORMAL if ev.priority is None else ev.priority
        s = _Snapshot(ev.uuid, name, {}, prio, sequence=ev.job_seq,
                      created=posted, modified=ev.time)
        return JobboardJob(self, s, backend=self._persistence)

    # -- the contract

    @property
    def job_count(self):
        h = self._handle()
        with _translate("count the jobs of"):
            return h.count()

    def _fetch(self, only_unclaimed=False):
        h = self._handle()
        def corrupt(e):
            # taskflow's Redis board deletes such a posting; ours stays
            # for `jobboard check` to quarantine: skipped, never fatal.
            LOG.warning("jobboard %s: skipping a job that does not decode:"
                        " %s (run `jobboard check`)", self._name, e)

        with _translate("list the jobs of"):
            return [JobboardJob(self, s, backend=self._persistence)
                    for s in h.iterate(only_unclaimed=only_unclaimed,
                                       on_corrupt=corrupt)]

    def iterjobs(self, only_unclaimed=False, ensure_fresh=False):
        """The board's jobs in listing order (priority, then oldest first);
        always fresh (every read is of the board itself)."""
        self._handle()
        return base.JobBoardIterator(
            self, LOG, only_unclaimed=only_unclaimed,
            ensure_fresh=ensure_fresh,
            board_fetch_func=lambda ensure_fresh: self._fetch(
                only_unclaimed))

    def wait(self, timeout=None):
        """Block until the board holds a job; returns an iterator over the
        jobs then on it. NotFound when `timeout` seconds pass first."""
        h = self._handle()
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None
            if end is not None:
                left = max(0.0, end - time.monotonic())
            with _translate("wait for jobs on"):
                got = h.wait(timeout=left)
            if got:
                jobs = self._fetch()
                if jobs:
                    return base.JobBoardIterator(
                        self, LOG, board_fetch_func=lambda ensure_fresh: jobs)
            if not got:
                raise exc.NotFound("Expired waiting for jobs to arrive;"
                                   " waited %s seconds" % timeout)

    def find_owner(self, job):
        h = self._handle()
        with _translate("find the owner of", job.uuid):
            return h.find_owner(job.uuid)

    def post(self, name, book=None, details=None,
             priority=base.JobPriority.NORMAL):
        h = self._handle()
        prio = base.JobPriority.convert(priority)
        with _translate("post a job on"):
            uuid = h.post(name, details=details or None, priority=prio.value,
                          book=book)
        try:
            snap = h.get(uuid)
        except errors.JobboardError:
            # Posted, and already gone (claimed and consumed by another
            # process) or unreadable: described from what we posted.
            snap = _Snapshot(uuid, name, details or {}, prio, book)
        return JobboardJob(self, snap, backend=self._persistence, book=book)

    @base.check_who
    def claim(self, job, who, expiry=None):
        h = self._handle()
        lease = None
        if expiry is not None:
            if int(expiry * 1000.0) <= 0:
                raise ValueError("Provided expiry (when converted to"
                                 " milliseconds) must be greater than zero"
                                 " instead of %s" % (expiry,))
            lease = expiry
        with _translate("claim", job.uuid):
            h.claim(job.uuid, who, lease=lease)

    @base.check_who
    def abandon(self, job, who):
        h = self._handle()
        with _translate("abandon", job.uuid):
            h.abandon(job.uuid, who)

    @base.check_who
    def consume(self, job, who):
        h = self._handle()
        with _translate("consume", job.uuid):
            h.consume(job.uuid, who)

    @base.check_who
    def trash(self, job, who):
        h = self._handle()
        with _translate("trash", job.uuid):
            h.trash(job.uuid, who)

    def register_entity(self, entity):
        """Register a conductor (taskflow.types.entity.Entity) on the board,
        bound to this process: listed (`jobboard entities`) while it
        lives."""
        h = self._handle()
        meta = _plain(getattr(entity, "metadata", None) or {})
        with _translate("register entity %r on" % (entity.name,)):
            h.register_entity(entity.name, entity.kind, meta)


class _Snapshot:
    """What a JobboardJob is built from when the board cannot be read for
    it (the job left the board already)."""

    def __init__(self, uuid, name, details, prio, book=None, sequence=0,
                 created=None, modified=None):
        self.uuid, self.name, self.details = uuid, name, details
        self.priority = jb.Priority[prio.name] if not isinstance(
            prio, jb.Priority) else prio
        self.sequence = sequence
        self.created = time.time() if created is None else created
        self.modified = self.created if modified is None else modified
        self.book_name = getattr(book, "name", None)
        self.book_uuid = getattr(book, "uuid", None)


def _plain(value):
    """Metadata as msgpack can carry it (other objects as their text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool, bytes)):
        return value
    return str(value)
