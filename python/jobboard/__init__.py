"""jobboard: a shared, crash-safe job board for the programs of one host.

A Python binding of libjobboard (C, through cffi). A board is a directory
holding an LMDB environment; every state change is one transaction of the
C library, so a claim is atomic across threads and processes::

    import jobboard
    with jobboard.Board("/srv/board", create=True) as board:
        board.post("resize", {"path": "a.png"})
        claim = board.claim_next("worker-1", lease=30, timeout=None)
        with claim:                 # consumed on success, retried on error
            print(claim.job.details)

The taskflow jobboard backend is jobboard.taskflow_backend (entry point
``jobboard`` in the group ``taskflow.jobboards``).
"""

from .errors import (JobboardError, NotFoundError, ClaimedError,  # noqa
                     NotOwnerError, InvalidError, TimedOutError,
                     OfflineError, CorruptError, FullError, IoError,
                     NoMemoryError, VersionError, InterruptedWaitError,
                     CanceledError, TrimmedError, ExistsError, NotDueError,
                     ReadOnlyError)
from .board import (Board, Job, Claim, Event, Entity, Completion,  # noqa
                    DeadLetter, Schedule, RetryPolicy, Retention,
                    RetryResult, Stats, Progress, PROGRESS_MESSAGE_MAX,
                    CheckReport, CheckRecord, SalvageReport, Priority,
                    State, Durability,
                    EventType, End, DeadCause, CatchUp, Outcome, Queue,
                    Overlap,
                    REMOVAL, ITER_READY, ITER_CLAIMED, ITER_DELAYED,
                    version, check_post, salvage, name_matches)

__version__ = "0.2.0"

__all__ = [
    "Board", "Job", "Claim", "Event", "Entity", "Completion", "DeadLetter",
    "Schedule", "RetryPolicy", "Retention", "RetryResult", "Stats",
    "Progress", "PROGRESS_MESSAGE_MAX", "CheckReport", "CheckRecord",
    "SalvageReport", "Priority", "State", "Durability", "EventType", "End",
    "DeadCause", "CatchUp", "Outcome", "Queue", "REMOVAL", "version",
    "Overlap",
    "check_post", "salvage", "name_matches", "ITER_READY", "ITER_CLAIMED",
    "ITER_DELAYED",
    "JobboardError", "NotFoundError", "ClaimedError", "NotOwnerError",
    "InvalidError", "TimedOutError", "OfflineError", "CorruptError",
    "FullError", "IoError", "NoMemoryError", "VersionError",
    "InterruptedWaitError", "CanceledError", "TrimmedError", "ExistsError",
    "NotDueError", "ReadOnlyError",
]
