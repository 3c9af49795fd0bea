"""Exceptions: one class per status code of <jobboard.h>.

Every exception raised for a failed library call is a JobboardError whose
``code`` is the negative JB_E* status and whose message is the library's
own (``jb_errmsg()``: it names the job, owner or field).  The classes are
named after the codes:

=================  ================  =====================================
code               class             also a
=================  ================  =====================================
JB_ENOTFOUND       NotFoundError     LookupError
JB_ECLAIMED        ClaimedError
JB_ENOTOWNER       NotOwnerError     PermissionError
JB_EINVAL          InvalidError      ValueError
JB_ETIMEDOUT       TimedOutError     TimeoutError
JB_EOFFLINE        OfflineError      ConnectionError
JB_ECORRUPT        CorruptError
JB_EFULL           FullError
JB_EIO             IoError           OSError
JB_ENOMEM          NoMemoryError     MemoryError
JB_EVERSION        VersionError
JB_EINTERRUPTED    InterruptedWaitError
JB_ETRIMMED        TrimmedError
JB_EEXISTS         ExistsError
JB_ENOTDUE         NotDueError
JB_EREADONLY       ReadOnlyError     PermissionError
=================  ================  =====================================

CanceledError is InterruptedWaitError under its name of 0.1, when the code
was JB_ECANCELED (in the library "cancel" is taking jobs off the board):
code that catches either catches the same exceptions. The exceptions'
``name`` is "JB_EINTERRUPTED".
"""

__all__ = [
    "JobboardError", "NotFoundError", "ClaimedError", "NotOwnerError",
    "InvalidError", "TimedOutError", "OfflineError", "CorruptError",
    "FullError", "IoError", "NoMemoryError", "VersionError",
    "InterruptedWaitError", "CanceledError", "TrimmedError",
    "ExistsError", "NotDueError",
    "ReadOnlyError", "error_for",
]


class JobboardError(Exception):
    """A call into libjobboard failed.

    ``code``: the JB_E* status (a negative int); ``name``: its name
    ("JB_ECLAIMED"); ``message``: the library's message.
    """

    code = None
    name = "JB_E?"

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message

    def __str__(self):
        return self.message


def _make(name, code, doc, *bases):
    cls = type(name, (JobboardError,) + bases,
               {"__doc__": doc, "code": code, "__module__": __name__})
    return cls


NotFoundError = _make("NotFoundError", -1,
                      "JB_ENOTFOUND: no such job (or board directory).",
                      LookupError)
ClaimedError = _make("ClaimedError", -2,
                     "JB_ECLAIMED: the job is already claimed (the message"
                     " names the owner).")
NotOwnerError = _make("NotOwnerError", -3,
                      "JB_ENOTOWNER: the caller does not own the claim.",
                      PermissionError)
InvalidError = _make("InvalidError", -4,
                     "JB_EINVAL: an argument is invalid (the message names"
                     " it).", ValueError)
TimedOutError = _make("TimedOutError", -5, "JB_ETIMEDOUT: a wait ran out.",
                      TimeoutError)
OfflineError = _make("OfflineError", -6,
                     "JB_EOFFLINE: Redis, needed for the call, is away.",
                     ConnectionError)
CorruptError = _make("CorruptError", -7,
                     "JB_ECORRUPT: stored data does not decode.")
FullError = _make("FullError", -8, "JB_EFULL: no space left.")
IoError = _make("IoError", -9, "JB_EIO: an operating-system or storage"
                " error.", OSError)
NoMemoryError = _make("NoMemoryError", -10, "JB_ENOMEM: out of memory.",
                      MemoryError)
VersionError = _make("VersionError", -11,
                     "JB_EVERSION: the board was written by a newer"
                     " jobboard.")
# Not "InterruptedError": that is Python's own (EINTR), which a star
# import of this module would hide.
InterruptedWaitError = _make(
    "InterruptedWaitError", -12,
    "JB_EINTERRUPTED: the wait was interrupted (Board.interrupt, or the"
    " board was closed meanwhile). Also named CanceledError, its name"
    " before 0.2.")
# The name of 0.1, kept for the code that catches it.
CanceledError = InterruptedWaitError
TrimmedError = _make("TrimmedError", -13,
                     "JB_ETRIMMED: the change log no longer holds the"
                     " sequence asked for.")

ExistsError = _make("ExistsError", -14,
                    "JB_EEXISTS: a live job holds the unique key (Board.post"
                    " names it in ``holder``, its uuid), or a schedule of"
                    " that name exists.")
# The uuid of the job holding the key, where the call tells it.
ExistsError.holder = None
NotDueError = _make("NotDueError", -15,
                    "JB_ENOTDUE: the job is delayed, not due yet.")
ReadOnlyError = _make("ReadOnlyError", -16,
                      "JB_EREADONLY: the board is read-only here (opened"
                      " read-only, or its files cannot be written).",
                      PermissionError)

_BY_CODE = {c.code: c for c in (
    NotFoundError, ClaimedError, NotOwnerError, InvalidError, TimedOutError,
    OfflineError, CorruptError, FullError, IoError, NoMemoryError,
    VersionError, InterruptedWaitError, TrimmedError, ExistsError,
    NotDueError, ReadOnlyError)}

for _c, _n in ((NotFoundError, "JB_ENOTFOUND"), (ClaimedError, "JB_ECLAIMED"),
               (NotOwnerError, "JB_ENOTOWNER"), (InvalidError, "JB_EINVAL"),
               (TimedOutError, "JB_ETIMEDOUT"), (OfflineError, "JB_EOFFLINE"),
               (CorruptError, "JB_ECORRUPT"), (FullError, "JB_EFULL"),
               (IoError, "JB_EIO"), (NoMemoryError, "JB_ENOMEM"),
               (VersionError, "JB_EVERSION"),
               (InterruptedWaitError, "JB_EINTERRUPTED"),
               (TrimmedError, "JB_ETRIMMED"), (ExistsError, "JB_EEXISTS"),
               (NotDueError, "JB_ENOTDUE"), (ReadOnlyError, "JB_EREADONLY")):
    _c.name = _n


def error_for(code: int, message: str) -> JobboardError:
    """The exception for status `code` carrying `message`."""
    cls = _BY_CODE.get(code, JobboardError)
    return cls(message, code)
