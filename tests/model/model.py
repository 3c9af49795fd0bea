"""The executable model of a board: what a board must hold after any
sequence of operations, written to be read and believed.

It keeps jobs (state, owner, token, lease, holder, attempts, not-before,
unique key, options), dead letters, schedules, the history with outcome
and result, the retry policy, the retention (what the history and the
dead letters keep, pruned by every completion), the board's counters, and
the names jobs were posted with (a name is a queue: claim-next can be
given names, exact or "prefix*", and a name or the whole board can be
paused; a paused job is never taken by claim-next, but a claim by uuid
takes it and held claims go on; a name's cap of claims at once makes
claim-next pass its jobs over and a claim by uuid refused while its claims
fill it, a lapsed claim holding its slot until a write returns it),
snoozes (a claim given back for a while, no attempt spent, refused past
the job's max_snoozes) and deadlines to start (a job not claimed by its
deadline ends EXPIRED, or as a dead letter of cause EXPIRED, when
claim-next's sweep or a claim of it comes across it; a claim clears the
deadline), and it answers
each operation the way the C library's documentation (jobboard.h, the man
pages) says the board answers it: a status name ("ok", "notfound",
"claimed", "notowner", "exists", "invalid", "notdue") and a value.

Time is two clocks the test sets (tests/model/fakeclock.c): the wall
clock (due times, schedules, dead letters' times) and the boot clock
(leases), both in microseconds. A claim lapses when its lease or time
limit has run out or its holder process is gone; a lapsed claim reads as
UNCLAIMED at once, and its record is returned (an attempt counted, or the
dead letters when that was the last) by the next write that comes across
it: a claim of the job, claim-next, or a call of its old owner. Until
then the model keeps the job "lapsing": the attempt is not counted yet.

What the board decides and the model cannot (uuids, sequences, fencing
tokens, the jitter of a back-off) the model learns from the board's
answer, after checking it is one the rules allow (a sequence above every
earlier one, a token above every earlier one, a back-off within +-20 %).
"""

import copy

PRIORITIES = ["VERY_LOW", "LOW", "NORMAL", "HIGH", "VERY_HIGH"]
SEC = 1_000_000
BACKOFF_DEFAULT_MS = 1000
BACKOFF_MAX_DEFAULT_MS = 3_600_000
RATE_PERIOD_MAX_MS = 366 * 24 * 3600 * 1000   # JB_RATE_PERIOD_MAX_MS

# jb_end names, as the binding's End enum spells them.
CONSUMED, FAILED, TRASHED, CANCELLED, DEAD, EXPIRED = (
    "CONSUMED", "FAILED", "TRASHED", "CANCELLED", "DEAD", "EXPIRED")


class Job:
    def __init__(self, uuid, name, prio, seq, now, unique=None,
                 max_attempts=0, time_limit_ms=0, backoff_ms=0,
                 backoff_max_ms=0, not_before=0, max_snoozes=0,
                 deadline=0, expires_dead=False):
        self.uuid = uuid
        self.name = name
        self.prio = prio              # index into PRIORITIES
        self.seq = seq
        self.posted = now
        self.unique = unique
        self.max_attempts = max_attempts
        self.time_limit_ms = time_limit_ms
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.not_before = not_before  # wall us; 0: claimable
        self.attempts = 0
        self.reason = None
        self.owner = None             # a claim: owner, token, deadlines
        self.token = 0
        self.lease_until = 0          # boot us; 0: no lease
        self.lease_ms = 0             # the lease asked for (a refresh)
        self.limit_until = 0          # boot us; 0: no time limit
        self.holder = None            # the worker (process) it is bound to
        self.progress = None          # the last report: (tenths, message)
        self.snoozes = 0              # snoozes: not attempts
        self.max_snoozes = max_snoozes    # 0: no limit
        self.deadline = deadline      # wall us to be claimed by; 0: none
        self.expires_dead = expires_dead  # expiry makes a dead letter

    def claimed(self):
        return self.owner is not None


class Model:
    SWEEP_US = 50_000     # a handle's sweep of bound claims' holders
    PRUNE_MAX = 64        # JB_RETAIN_PRUNE_MAX: per completion, per kind
    NONE = -1             # JB_RETAIN_NONE

    def __init__(self, wall, boot, history_max):
        self.wall = wall
        self.boot = boot
        self.history_max = history_max    # the handles' open option
        # The board's stored retention (jb_retention: counts, ages in ms;
        # 0: not stored, NONE: no bound).
        self.retention = {"history_max": 0, "history_max_age": 0,
                          "dead_max": 0, "dead_max_age": 0}
        self.jobs = {}        # uuid -> Job
        self.dead = {}        # uuid -> (Job, cause, dead_at)
        self.unique = {}      # key -> uuid
        self.schedules = {}   # name -> dict
        self.history = []     # oldest first: (uuid, end, result, wall)
        self.policy = (0, BACKOFF_DEFAULT_MS, BACKOFF_MAX_DEFAULT_MS)
        self.ends = {}        # end -> records written (the counters)
        self.posted_total = 0
        self.last_seq = 0
        self.last_token = 0
        self.dead_procs = set()   # workers killed: their bound claims lapse
        self.sweeps = {}          # process -> boot time of its last sweep
        # every name posted -> [paused, changed, cap, cap is its prefix's,
        #                        rate, period_ms, tat_us,
        #                        rate is its prefix's]
        self.queues = {}
        self.capeach = []         # [prefix, cap] capping each name, in order
        self.rateeach = []        # [prefix, count, period_ms] likewise
        self.board_paused = False
        self.deaths = 0           # jobs moved to the dead letters so far
        self.expirations = 0      # jobs ended at their deadline so far
        self.snoozed_total = 0    # snoozes so far (SNOOZED events)
        # the last recorded check: (problems, moved, jobs, wall time)
        self.last_check = None

    def clone(self):
        return copy.deepcopy(self)

    # ------------------------------------------------------------ time

    def advance(self, us):
        self.wall += us
        self.boot += us
        return "ok", None

    def kill(self, proc):
        self.dead_procs.add(proc)
        return "ok", None

    # -------------------------------------------------------- helpers

    def lapse_why(self, j):
        """Why a claim has lapsed, or None while it holds."""
        if not j.claimed():
            return None
        if j.lease_until and j.lease_until <= self.boot:
            return "lease"
        if j.limit_until and j.limit_until <= self.boot:
            return "time limit"
        if j.holder is not None and j.holder in self.dead_procs:
            return "holder"
        return None

    def visible_owner(self, j):
        return None if self.lapse_why(j) else j.owner

    def max_of(self, j):
        return j.max_attempts or self.policy[0]

    # ------------------------------------------------------ retention

    def bounds(self):
        """The bounds every write applies (jb_retention(3)): the stored
        value, else the handles' history_max option (history), else the
        default; None for no bound. Ages in wall us."""
        inf = None
        r = self.retention

        def count(v, fallback):
            return fallback if v == 0 else inf if v == self.NONE else v

        def age(v, fallback_s):
            return (fallback_s * SEC if v == 0 else inf if v == self.NONE
                    else v * 1000)
        return (count(r["history_max"], self.history_max),
                age(r["history_max_age"], 7 * 86400),
                count(r["dead_max"], 10000),
                age(r["dead_max_age"], 30 * 86400))

    def _prune_history(self, adding):
        """The oldest records beyond the bounds go, at most PRUNE_MAX, room
        kept for `adding` more (history.c trim)."""
        hmax, hage, _, _ = self.bounds()
        for _ in range(self.PRUNE_MAX):
            if not self.history:
                break
            over = hmax is not None and len(self.history) + adding > hmax
            old = hage is not None and self.history[0][3] < self.wall - hage
            if not over and not old:
                break
            del self.history[0]

    def _prune_dead(self):
        """The dead letters that died first (then by uuid) beyond the
        bounds go, at most PRUNE_MAX (retain.c)."""
        _, _, dmax, dage = self.bounds()
        order = sorted(self.dead, key=lambda u: (self.dead[u][2], u))
        for u in order[: self.PRUNE_MAX]:
            over = dmax is not None and len(self.dead) > dmax
            old = dage is not None and self.dead[u][2] < self.wall - dage
            if not over and not old:
                break
            del self.dead[u]

    def set_retention(self, **fields):
        """Store the fields given (ms for ages), then a first batch goes."""
        for k, v in fields.items():
            self.retention[k] = v
        self._prune_history(0)
        self._prune_dead()
        return "ok", None

    def _end(self, uuid, end, result=None):
        self._prune_history(1)
        self.history.append((uuid, end, result, self.wall))
        self.ends[end] = self.ends.get(end, 0) + 1
        self._prune_dead()

    def _free_claim(self, j):
        j.owner, j.token, j.lease_until, j.limit_until, j.holder = (
            None, 0, 0, 0, None)
        j.lease_ms = 0

    def _to_dead(self, j, cause, end):
        del self.jobs[j.uuid]
        j.progress = None             # it left the board: no letter keeps it
        if j.unique is not None:
            self.unique.pop(j.unique, None)
        self._free_claim(j)
        self.deaths += 1
        self.dead[j.uuid] = (j, cause, self.wall)
        self._end(j.uuid, end)

    def _expire(self, j):
        """Not claimed by its deadline: it ends EXPIRED, or as a dead
        letter (cause EXPIRED, reason "expired") when posted so."""
        self.expirations += 1
        if j.expires_dead:
            j.reason = "expired"
            self._to_dead(j, "EXPIRED", DEAD)
            return
        del self.jobs[j.uuid]
        j.progress = None
        if j.unique is not None:
            self.unique.pop(j.unique, None)
        self._end(j.uuid, EXPIRED)

    def _failed_attempt(self, j, reason, delay_us=0):
        """A claim ended without a completion: counted; the dead letters
        when it was the last attempt. True when the job stays. An attempt
        without a reason keeps the last one given (the reason says why the
        job last failed with a cause known)."""
        j.attempts += 1
        if reason is not None:
            j.reason = reason
        self._free_claim(j)
        m = self.max_of(j)
        if m and j.attempts >= m:
            self._to_dead(j, "ATTEMPTS", DEAD)
            return False
        j.not_before = self.wall + delay_us if delay_us > 0 else 0
        return True

    def reap(self, j):
        """Return a lapsed claim (the write that comes across it)."""
        why = self.lapse_why(j)
        if why is None:
            return True
        return self._failed_attempt(j, "lapsed: " + why)

    def lapsing(self):
        """The lapsed claims in the order a sweep returns them: leases by
        expiry, then by listing order (the board's lease index), then the
        claims of gone holders by holder, in listing order."""
        return sorted((j for j in self.jobs.values() if self.lapse_why(j)),
                      key=lambda j: (j.lease_until == 0, j.lease_until,
                                     str(j.holder), -j.prio, j.seq))

    def claimable(self, j):
        return (not j.claimed() or self.lapse_why(j)) and \
            j.not_before <= self.wall

    def _claim(self, j, who, token, lease_ms, bind_proc):
        self.check_token(token)
        self.spend(j.name)            # every claim spends a token
        j.progress = None             # a new claim starts without one
        j.owner = who
        j.token = token
        j.lease_until = self.boot + lease_ms * 1000 if lease_ms else 0
        j.lease_ms = lease_ms
        j.limit_until = self.boot + j.time_limit_ms * 1000 \
            if j.time_limit_ms else 0
        if j.time_limit_ms and (not j.lease_until or
                                j.lease_until > j.limit_until):
            j.lease_until = j.limit_until
        j.holder = bind_proc
        j.not_before = 0
        j.deadline = 0                # a claim starts it: no deadline now

    def check_token(self, token):
        if token <= self.last_token:
            raise AssertionError("fencing token %d is not above %d"
                                 % (token, self.last_token))
        self.last_token = token

    def check_seq(self, seq):
        if seq <= self.last_seq:
            raise AssertionError("sequence %d is not above %d"
                                 % (seq, self.last_seq))
        self.last_seq = seq

    def order(self):
        """The listing order: priority (highest first), then sequence."""
        return sorted(self.jobs.values(), key=lambda j: (-j.prio, j.seq))

    # ---------------------------------------------------------- names

    def note_name(self, name):
        """A job of `name` is on the board: the name is recorded for good
        (a first post, not paused, its controls never changed; capped
        when a prefix caps each of its names, rate-limited, its tokens
        full, when a prefix rate-limits each of them)."""
        if name not in self.queues:
            each = self.each_cap(name)
            count, period_ms = self.each_rate(name)
            self.queues[name] = [False, 0, each, each > 0, count, period_ms,
                                 self.wall if count else 0, count > 0]

    @staticmethod
    def longest(entries, name):
        """The entry [prefix, ...] of the longest prefix of `name`."""
        best = None
        for e in entries:
            if name.startswith(e[0]) and (best is None or
                                          len(e[0]) > len(best[0])):
                best = e
        return best

    def each_cap(self, name):
        """The cap the longest prefix capping each name gives `name`."""
        best = self.longest(self.capeach, name)
        return best[1] if best else 0

    def each_rate(self, name):
        """(count, period_ms) the longest prefix rate-limiting each name
        gives `name` ((0, 0): none)."""
        best = self.longest(self.rateeach, name)
        return (best[1], best[2]) if best else (0, 0)

    @staticmethod
    def chosen(names, name):
        """Does `name` pass claim-next's names (None: every name)? Each is
        exact, or a prefix ending in '*'."""
        if names is None:
            return True
        return any(name.startswith(n[:-1]) if n.endswith("*") else name == n
                   for n in names)

    def held(self, name):
        """Its claims now: a lapsed claim holds its slot until a write
        returns it."""
        return sum(1 for j in self.jobs.values()
                   if j.name == name and j.claimed())

    def at_cap(self, name):
        cap = self.queues[name][2]
        return cap > 0 and self.held(name) >= cap

    def blocked(self, name):
        return self.board_paused or self.queues[name][0] or \
            self.at_cap(name) or self.next_token(name) > self.wall

    def set_cap(self, name, cap):
        """Cap a name's own claims at once (0: none of its own, its
        prefix's applies again); the time of the change is kept even when
        the cap stays. "prefix*" caps each name under the prefix (those
        posted later too) unless it has its own; the longest prefix wins;
        a name it changes has the time of the change."""
        if name == "":
            return "invalid", None
        if name.endswith("*"):
            prefix = name[:-1]
            self.capeach = [e for e in self.capeach if e[0] != prefix]
            if cap:
                self.capeach.append([prefix, cap])
            for n, q in self.queues.items():
                if not n.startswith(prefix) or (q[2] and not q[3]):
                    continue
                want = self.each_cap(n)
                if q[2] != want:
                    q[2], q[3], q[1] = want, want > 0, self.wall
            return "ok", None
        q = self.queues.get(name)
        if q is None:
            return "notfound", None
        each = self.each_cap(name) if cap == 0 else 0
        q[2], q[3], q[1] = cap or each, each > 0, self.wall
        return "ok", None

    # A rate limit is GCRA on one timestamp (store/names.h): T = period /
    # rate, tau = (rate - 1) * T; `rate` claims at once, then one per T.
    def next_token(self, name):
        """When the name's next claim may go (0: no limit)."""
        rate, period_ms, tat = self.queues[name][4:7]
        if not rate:
            return 0
        period = period_ms * 1000
        return min(tat, self.wall + period) - (rate - 1) * (period // rate)

    def spend(self, name):
        q = self.queues.get(name)
        if q is None or not q[4]:
            return
        period = q[5] * 1000
        q[6] = max(min(q[6], self.wall + period), self.wall) + period // q[4]

    def check_record(self):
        """A check that records its result: the model's board holds its
        invariants, so no problem, nothing moved, every job seen."""
        self.last_check = (0, 0, len(self.jobs), self.wall)
        return "ok", None

    def set_rate(self, name, count, period_ms):
        """jb_set_rate: count claims per period_ms (count 0: none). A name's
        own limit beats its prefix's; count 0 on it brings the prefix's
        back, full. "prefix*" limits each name under the prefix (those
        posted later too) unless it has its own; the longest prefix wins;
        a name whose limit it changes starts full with the time of the
        change, one whose limit it leaves keeps its tokens."""
        if name == "":
            return "invalid", None
        if count and not 0 < period_ms <= RATE_PERIOD_MAX_MS:
            return "invalid", None
        if count and period_ms * 1000 < count:
            return "invalid", None
        if not count:
            period_ms = 0
        if name.endswith("*"):
            prefix = name[:-1]
            self.rateeach = [e for e in self.rateeach if e[0] != prefix]
            if count:
                self.rateeach.append([prefix, count, period_ms])
            for n, q in self.queues.items():
                if not n.startswith(prefix) or (q[4] and not q[7]):
                    continue
                want = self.each_rate(n)
                if (q[4], q[5]) != want:
                    q[1] = self.wall
                    q[4:8] = ([want[0], want[1], self.wall, True] if want[0]
                              else [0, 0, 0, False])
            return "ok", None
        q = self.queues.get(name)
        if q is None:
            return "notfound", None
        each = self.each_rate(name) if count == 0 else (0, 0)
        if each[0]:
            count, period_ms = each
        # Set or changed, a limit starts full; every call stamps the
        # change.
        q[1] = self.wall
        q[4:8] = ([count, period_ms, self.wall, each[0] > 0] if count
                  else [0, 0, 0, False])
        return "ok", None

    def set_paused(self, name, paused):
        """pause (paused True) or resume a name, or the board (None)."""
        if name is not None and (name == "" or name.endswith("*")):
            return "invalid", None
        if name is None:
            self.board_paused = paused
            return "ok", None
        q = self.queues.get(name)
        if q is None:
            return "notfound", None
        if q[0] != paused:
            q[0], q[1] = paused, self.wall
        return "ok", None

    def ready_of(self, name):
        """Its jobs neither claimed (a lapsed claim not yet returned is
        still one) nor delayed (due or not, until claim-next moves it)."""
        return sum(1 for j in self.jobs.values()
                   if j.name == name and not j.claimed() and
                   not j.not_before)

    # ---------------------------------------------------------- posts

    def post(self, sut_uuid, sut_seq, name, prio, delay_ms=0, unique=None,
             max_attempts=0, max_snoozes=0, expires_ms=0,
             expires_dead=False):
        """The board gave uuid/seq (None when it refused)."""
        if expires_dead and not expires_ms:
            return "invalid", None    # expires_dead needs a deadline
        if unique is not None and unique in self.unique:
            return "exists", self.unique[unique]
        self.check_seq(sut_seq)
        j = Job(sut_uuid, name, prio, sut_seq, self.wall, unique,
                max_attempts,
                not_before=self.wall + delay_ms * 1000 if delay_ms else 0,
                max_snoozes=max_snoozes,
                deadline=self.wall + expires_ms * 1000 if expires_ms else 0,
                expires_dead=expires_dead)
        self.jobs[j.uuid] = j
        if unique is not None:
            self.unique[unique] = j.uuid
        self.note_name(name)
        self.posted_total += 1
        return "ok", j.uuid

    def post_batch_check(self, posts):
        keys = [p["unique"] for p in posts if p.get("unique") is not None]
        if len(keys) != len(set(keys)):
            return "invalid", None
        for k in keys:
            if k in self.unique:
                return "exists", self.unique[k]
        return "ok", None

    # --------------------------------------------------------- claims

    def claim(self, uuid, who, token, lease_ms, bind_proc):
        j = self.jobs.get(uuid)
        if j is None:
            return "notfound", None
        if not self.reap(j):
            return "notfound", None      # its lapse was its last attempt
        if j.claimed():
            if j.owner == who:           # a refresh, still "claimed"
                if bind_proc is not None:    # bound to the caller now
                    j.holder = bind_proc
                if lease_ms or j.lease_ms:
                    j.lease_ms = lease_ms or j.lease_ms
                    j.lease_until = self.boot + j.lease_ms * 1000
                    if j.limit_until and j.lease_until > j.limit_until:
                        j.lease_until = j.limit_until
            return "claimed", j.owner
        if j.deadline and j.deadline <= self.wall:
            # Past its deadline to start: never claimed; the refusal ends
            # it (committed).
            self._expire(j)
            return "notfound", None
        if self.at_cap(j.name):
            # Refused, naming the cap (a lapse just returned stays done).
            return "notdue", None
        if self.next_token(j.name) > self.wall:
            return "notdue", None        # no token of its rate limit
        if j.not_before > self.wall:
            # A delayed job is not claimable before its due time.
            return "notdue", None
        self._claim(j, who, token, lease_ms, bind_proc)
        return "ok", None

    def claim_next_pick(self, proc, names=None):
        """Reap what claim-next reaps, then the job it must take: the first
        in listing order that is claimable, of a name chosen (`names`,
        None: every name) and not paused. `proc`: the process calling (its
        handle's sweep of holders)."""
        for j in list(self.lapsing()):
            if self.lapse_why(j) != "holder":
                self.reap(j)
        # Claims bound to a process that is gone are found by a sweep of
        # the holders' processes, which a handle makes at most every
        # SWEEP_US of the boot clock, or whenever nothing is ready: within
        # that window a claim-next may take a job listed after one whose
        # holder has just died (the board documents the window).
        if any(j.claimed() and j.holder is not None
               for j in self.jobs.values()):
            nothing_ready = not any(
                not j.claimed() and not j.not_before
                for j in self.jobs.values())
            last = self.sweeps.get(proc)
            if nothing_ready or last is None or \
                    self.boot - last >= self.SWEEP_US:
                self.sweeps[proc] = self.boot
                for j in list(self.lapsing()):
                    self.reap(j)
        # Claim-next moves the delayed jobs that are due to the ready ones
        # first: they are no longer delayed.
        for j in self.jobs.values():
            if j.not_before and j.not_before <= self.wall and \
                    not j.claimed():
                j.not_before = 0
        # Then it ends the jobs past their deadline to start (unclaimed:
        # a claim cleared the deadline), in deadline order.
        for j in sorted((j for j in self.jobs.values()
                         if j.deadline and j.deadline <= self.wall),
                        key=lambda j: (j.deadline, j.uuid)):
            self._expire(j)
        for j in self.order():
            if not j.claimed() and j.not_before <= self.wall and \
                    self.chosen(names, j.name) and not self.blocked(j.name):
                return j
        return None

    def checkpoint(self):
        """Before a claim-next (or claim-many): see took_nothing."""
        return self.clone()

    def took_nothing(self, before):
        """A claim-next that took nothing commits only when its reap sent
        a job to the dead letters; else its transaction is rolled back,
        and with it the reap's returns of lapsed claims and the delayed
        jobs it made ready (a later write does them again). The holders'
        sweep is the handle's, in memory: it stays done."""
        if self.deaths != before.deaths or \
                self.expirations != before.expirations:
            return
        sweeps = self.sweeps
        self.__dict__.update(before.__dict__)
        self.sweeps = sweeps

    def claim_next(self, sut_uuid, who, token, lease_ms, bind_proc, proc,
                   names=None, alone=True):
        """`alone`: the claim-next is its transaction's only write (not
        consume-and-claim-next's, whose consume commits regardless)."""
        before = self.checkpoint() if alone else None
        j = self.claim_next_pick(proc, names)
        if j is None and alone:
            self.took_nothing(before)
        if j is None:
            return ("notfound", None) if sut_uuid is None else \
                ("ok", "board claimed %s, the model has nothing" % sut_uuid)
        self._claim(j, who, token, lease_ms, bind_proc)
        return "ok", j.uuid

    def _owned(self, uuid, who, token=0):
        """The job when `who` holds its claim (token 0: not checked); else
        the status the board answers."""
        j = self.jobs.get(uuid)
        if j is None:
            return None, "notfound"
        if self.lapse_why(j):
            return None, "notfound"
        if not j.claimed():
            return None, "notfound"
        if j.owner != who or (token and token != j.token):
            return None, "notowner"
        return j, "ok"

    def extend(self, uuid, who, lease_ms):
        j, st = self._owned(uuid, who)
        if j is None:
            return st, None
        j.lease_until = self.boot + lease_ms * 1000
        j.lease_ms = lease_ms   # a later refresh renews this lease
        if j.limit_until and j.lease_until > j.limit_until:
            j.lease_until = j.limit_until
        return "ok", None

    def progress(self, uuid, who, token, percent, message):
        """The owner reports: percent kept in tenths, rounded; the report
        outlives its claim (a lapse, an abandon, a retry keep it) until the
        next claim. The arguments are checked before the claim."""
        msg = (message or "").encode()
        if not 0 <= percent <= 100 or len(msg) > 200 or \
                any(b < 0x20 or b == 0x7f for b in msg):
            return "invalid", None
        j, st = self._owned(uuid, who, token)
        if j is None:
            return st, None
        j.progress = (int(percent * 10 + 0.5), message or None)
        return "ok", None

    def snooze(self, uuid, who, token, delay_ms):
        """The owner gives the claim back for delay_ms, no attempt spent;
        refused (the claim stands) once it snoozed max_snoozes times."""
        if not 0 <= delay_ms <= 3650 * 86400 * 1000:
            return "invalid", None
        j, st = self._owned(uuid, who, token)
        if j is None:
            return st, None
        if j.max_snoozes and j.snoozes >= j.max_snoozes:
            return "invalid", None
        j.snoozes += 1
        self.snoozed_total += 1
        self._free_claim(j)
        j.not_before = self.wall + delay_ms * 1000 if delay_ms else 0
        return "ok", None

    def abandon(self, uuid, who):
        j, st = self._owned(uuid, who)
        if j is None:
            return st, None
        self._failed_attempt(j, None)
        return "ok", None

    def retry(self, uuid, who, mode, delay_ms, reason, sut_due):
        """mode: "delay" (delay_ms), "backoff" or "dead". `sut_due` is the
        board's due time (wall us, 0 when claimable at once or dead)."""
        j, st = self._owned(uuid, who)
        if j is None:
            return st, None
        if mode == "dead":
            j.attempts += 1
            if reason is not None:
                j.reason = reason
            self._to_dead(j, "BURIED", DEAD)
            return "ok", "dead"
        if mode == "backoff":
            base = j.backoff_ms or self.policy[1]
            cap = j.backoff_max_ms or self.policy[2]
            cap = max(cap, base)
            d = base
            for _ in range(1, j.attempts + 1):
                if d >= cap:
                    break
                d *= 2
            d = min(d, cap)
            lo, hi = max(1, int(d * 0.8)), min(cap, int(d * 1.2) + 1)
            if sut_due:
                got = (sut_due - self.wall) // 1000
                if not lo <= got <= hi:
                    raise AssertionError("back-off %d ms is outside %d..%d"
                                         % (got, lo, hi))
                delay_us = sut_due - self.wall
            else:
                delay_us = lo * 1000     # the job goes dead: unused
        else:
            delay_us = delay_ms * 1000
        stays = self._failed_attempt(j, reason, delay_us)
        return "ok", "retried" if stays else "dead"

    def trash(self, uuid, who):
        j, st = self._owned(uuid, who)
        if j is None:
            return st, None
        self._to_dead(j, "TRASHED", TRASHED)
        return "ok", None

    def consume(self, uuid, who, failed=False, result=None):
        j, st = self._owned(uuid, who)
        if j is None:
            return st, None
        del self.jobs[uuid]
        if j.unique is not None:
            self.unique.pop(j.unique, None)
        self._end(uuid, FAILED if failed else CONSUMED, result)
        return "ok", None

    def run_now(self, uuid):
        """jb_job_run_now: a job waiting for its due time is due now (its
        sequence, attempts and options stay); one claimable already (a
        lapsed claim too) is left; a claimed one is refused."""
        j = self.jobs.get(uuid)
        if j is None:
            return "notfound", None
        if j.claimed():
            return ("ok", None) if self.lapse_why(j) else ("claimed", j.owner)
        j.not_before = 0
        return "ok", None

    # ------------------------------------------------ off the board

    def cancel(self, uuid, force):
        j = self.jobs.get(uuid)
        if j is None:
            return "notfound", None
        if j.claimed() and not self.lapse_why(j) and not force:
            return "claimed", j.owner
        del self.jobs[uuid]
        if j.unique is not None:
            self.unique.pop(j.unique, None)
        self._end(uuid, CANCELLED)
        return "ok", None

    def requeue(self, uuid, keep_attempts, sut_seq):
        return self._undead(uuid, keep_attempts, None, sut_seq)

    def repost(self, uuid, keep_attempts, new_uuid, sut_seq):
        """jb_dead_repost: the letter's job posted again under a new uuid
        (posted now), the letter gone; its key held again or refused as
        requeue's."""
        return self._undead(uuid, keep_attempts, new_uuid, sut_seq)

    def _undead(self, uuid, keep_attempts, new_uuid, sut_seq):
        """A dead letter back on the board: under its uuid (new_uuid
        None), or as a new job."""
        d = self.dead.get(uuid)
        if d is None:
            return "notfound", None
        j = d[0]
        if j.unique is not None and j.unique in self.unique:
            return "exists", self.unique[j.unique]
        self.check_seq(sut_seq)
        del self.dead[uuid]
        if new_uuid is not None:
            j = copy.deepcopy(j)
            j.uuid = uuid = new_uuid
            j.posted = self.wall
        j.seq = sut_seq
        j.not_before = 0
        j.deadline = 0                # a letter has no deadline
        if not keep_attempts:
            j.attempts = 0
            j.reason = None
            j.snoozes = 0             # counted again, as attempts
        self.jobs[uuid] = j
        if j.unique is not None:
            self.unique[j.unique] = uuid
        self.posted_total += 1
        return "ok", new_uuid

    def remove_dead(self, uuid):
        """jb_dead_remove: that one letter, no other."""
        if uuid not in self.dead:
            return "notfound", None
        del self.dead[uuid]
        return "ok", None

    def purge(self, before):
        """Dead letters that died before `before` (wall us)."""
        gone = [u for u, d in self.dead.items() if d[2] < before]
        for u in gone:
            del self.dead[u]
        return "ok", len(gone)

    def set_policy(self, max_attempts, backoff_ms, backoff_max_ms):
        if backoff_ms < 1 or backoff_max_ms < backoff_ms:
            return "invalid", None
        self.policy = (max_attempts, backoff_ms, backoff_max_ms)
        return "ok", None

    # ------------------------------------------------------- schedules

    def schedule_add(self, name, every_ms, job_name, overlap="queue"):
        if name in self.schedules:
            return "exists", None
        self.schedules[name] = {"every": every_ms * 1000,
                                "next": self.wall + every_ms * 1000,
                                "runs": 0, "last": 0, "job": job_name,
                                "overlap": overlap, "skipped": 0}
        return "ok", None

    def busy(self, name):
        """Overlap "skip" holds back the runs of `name` while a live job
        holds a key of one of its runs ("schedule:NAME:" and a number)."""
        if self.schedules[name]["overlap"] != "skip":
            return False
        pre = "schedule:%s:" % name
        return any(k.startswith(pre) and k[len(pre):].lstrip("-").isdigit()
                   for k in self.unique)

    def schedule_remove(self, name):
        if self.schedules.pop(name, None) is None:
            return "notfound", None
        return "ok", None

    def tick_runs(self):
        """The runs a tick now posts, in order: (schedule, run time, key),
        catch-up "skip": only the latest due run of each schedule."""
        runs = []
        for name in sorted(self.schedules):
            s = self.schedules[name]
            if s["next"] > self.wall:
                continue
            n = (self.wall - s["next"]) // s["every"]
            run = s["next"] + n * s["every"]
            runs.append((name, run, "schedule:%s:%d" % (name, run)))
        return runs

    def tick_apply(self, posted):
        """posted: [(name, run, key, uuid, seq)] as the board posted them;
        a run whose key a live job holds is not posted."""
        for name, run, key, uuid, seq in posted:
            s = self.schedules[name]
            s["last"] = run
            s["next"] = run + s["every"]
            if self.busy(name):
                s["skipped"] += 1
                continue
            if key in self.unique:
                continue
            s["runs"] += 1
            self.check_seq(seq)
            j = Job(uuid, s["job"], 2, seq, self.wall, key)
            self.note_name(j.name)
            self.jobs[uuid] = j
            self.unique[key] = uuid
            self.posted_total += 1
        return "ok", None
