/*
 * crash_step.c - SIGKILL at every instruction of a write.
 *
 * A writer process is stopped by this test (ptrace) at a chosen
 * instruction of one operation, killed there with SIGKILL, and a fresh
 * process then checks the board. Kill points are not left to luck: the
 * operation's instructions are first recorded by single-stepping one run,
 * and each later run is stopped at exactly one of them.
 *
 *  1. A base board is made by a process of its own: HISTORY_KEPT jobs
 *     completed (the history full at its bound, which every process here
 *     opens the board with, and its newest records in the tail of
 *     `histends`, so that a consume moves the tail to `history` and a
 *     chunk of `history`'s oldest to the head: store/history.h), five
 *     jobs posted (base-0..4), the oldest claimed by "holder", two more
 *     posted and claimed by holder (held-1, held-2); the newer write
 *     paths' fixtures: a retry policy (at most 2 attempts, a back-off of a
 *     day, so that a retried job stays delayed however long a sweep
 *     runs), "tired" (claimed by holder, retried once with a reason and
 *     claimed again: its next failed attempt is its last), "keyed" (ready,
 *     holding a unique key), two dead letters ("corpse", posted with a
 *     unique key and buried by a retry with JB_RETRY_DEAD, which frees the
 *     key, and "junk", trashed by holder), a schedule (every minute,
 *     its first run 30 s before the writer's clock) and a stored retention
 *     of two dead letters (so that an operation adding a third prunes
 *     corpse, the oldest, in its own write); and a last job posted
 *     (the last
 *     acknowledged commit before the killed one, which is what an LMDB
 *     meta page torn under MDB_WRITEMAP loses). Each run gets a fresh copy
 *     of it (all its files but the lock file).
 *  2. For each operation (post, claim-next, consume, a batch post of 24,
 *     consume-claim: jb_consume_and_claim_next of the holder's job;
 *     claim-many: jb_claim_next_many of three; consume-many:
 *     jb_consume_many of holder's three jobs; gathered: one group of
 *     jb__store_write_many, store/env.c's gathered commit, of three
 *     writes: holder's consume of base-0, a claim-next for "ghost" that
 *     fails after writing its claim (the group runs again with it in a
 *     child transaction, which must be aborted) and a claim-next for
 *     "crasher"; publish: the replicator's confirmation of two
 *     publications, base-0 claimed by holder and last (ready), both moving
 *     to the Redis band of schema 7's jobkeys, claim and lease entries and
 *     all: both there in Redis's order, or neither; retry: holder retries
 *     held-1 with the policy's back-off; retry-dead: holder retries tired,
 *     its last attempt, to the dead letters; requeue: jb_dead_requeue of
 *     corpse; purge: jb_dead_purge of both dead letters; cancel:
 *     jb_job_cancel of keyed; post-unique: a post with a free unique key;
 *     post-held: a post with keyed's key, refused (JB_EEXISTS): its write
 *     transaction is aborted, so its window has no commit and every kill
 *     point comes before one; tick: jb_schedule_tick at the writer's
 *     clock, posting the schedule's due run; sched-add, sched-remove: of a
 *     second schedule, of the base board's; policy:
 *     jb_board_set_retry_policy; abandon-dead: holder abandons tired, its
 *     last attempt (jb_abandon); trash: holder trashes held-2
 *     (jb_trash); progress: holder reports 42.5 % and a message on
 *     held-1 (jb_progress); retention: jb_board_set_retention of one
 *     dead letter, which prunes corpse in its write; snooze: holder
 *     snoozes held-1 for a day (jb_snooze: delayed, no attempt spent,
 *     one snooze counted); expire: on a board made from the base one
 *     with a job of "doomed" whose deadline to start passed 10 s before
 *     the writer's clock, crasher's claim-next, which ends doomed
 *     (history "expired", a DEADLINE event) and claims base-1 in one
 *     write;
 *     names as queues: pause: jb_pause of base-2, pause-board:
 *     jb_pause of the board, claim-names: crasher's claim-next of the
 *     names "keyed" and "base-3*" (an exact name and a prefix), and on
 *     a board made from the base one with 70 jobs of "stalled", listed
 *     first and paused, and base-1 capped at 2: resume: jb_resume of
 *     stalled, claim-paused: crasher's claim-next of every name, which
 *     passes stalled's jobs over (more than claim-next looks at one by
 *     one before it walks the names' index) and counts its claim of
 *     base-1 against the cap; cap: jb_set_cap of base-2 at 1 on the base
 *     board; cap-each: jb_set_cap of "base-*" at 1 (each of base-0 to
 *     base-4 capped, base-0's claim counted) on the base board;
 *     rate-each: jb_set_rate of "base-*" at 2 a minute (each of base-0
 *     to base-4 limited, its tokens full) on the base board;
 *     check-record: jb_board_check_ex of the base board with
 *     JB_CHECK_RECORD (the record whole or not there); and on that board with the whole board paused too:
 *     resume-board; a post of a new name is the post, batch and
 *     post-unique above ("crash-new", recorded with the post));
 *     run-now: on the delayed board (the base board with held-1 given
 *     back by holder with the back-off: delayed a day, one attempt),
 *     jb_job_run_now of held-1, which makes it ready in its place (its
 *     sequence, its attempt and reason kept; no event); dead-remove:
 *     jb_dead_remove of corpse (its `deadage` entry with it));
 *     dead-repost: jb_dead_repost of corpse (a new job of its name and
 *     details under a new uuid, and the letter gone, in one commit))
 *     and durability (none, normal, full): the writer is this program run
 *     again (--tracee) without address randomisation, so that every run
 *     starts from the same state at the same addresses. It opens the copy,
 *     calls crash_step_window_begin(), runs the operation, calls
 *     crash_step_window_end() and acknowledges (one write() on a pipe).
 *     The test single-steps one run and records every instruction (address
 *     and stack pointer): N of them. Uuids come from getrandom(), whose
 *     bytes the test replaces by fixed ones in every run, and the writer's
 *     clock reads whole seconds and a half (see writer_clock), so that
 *     every run takes the same path (a job's key decides where it goes in
 *     the B-trees, its time's value how long its posting is). Inside mdb_txn_commit it also notes each syscall and each
 *     instruction after which the data file's meta pages (read through the
 *     writer's map of it) changed. The transaction's commit is the
 *     writer's last call of mdb_txn_commit in the window (a gathered
 *     group's writes commit their child transactions into it first:
 *     "before mdb_txn_commit" below means before that last call).
 *  3. For each kill point i, a fresh writer on a fresh copy is brought to
 *     instruction i (a breakpoint on an instruction at or before i that
 *     runs few times, counting its hits, then single steps), the test
 *     checks it stands where the recorded run stood (address and stack:
 *     else it fails, naming both), and kills it with SIGKILL.
 *  4. A fresh process (a child that never opened the board), in the same
 *     durability for every second kill point and in another one for the
 *     others, opens the board read-write and checks: jb_board_check finds
 *     nothing; every acknowledged job of the base board is there as it was
 *     (its posting, and holder's claims); the killed operation is wholly
 *     there or wholly absent: each base job it changes is as it was or as
 *     the operation leaves it, all of them one way (a post: the job with
 *     its posting intact, or nothing; a batch: all 24 or none;
 *     claim-next: the oldest ready job claimed by the killed owner, or
 *     unclaimed; consume: the job gone with its history record, or still
 *     claimed by its owner, without one; consume-claim: that, and the
 *     oldest ready job claimed by the holder exactly when the consume is
 *     there; claim-many: base-1..3, the three oldest ready jobs, claimed
 *     by the killed owner (their fencing tokens increasing in that order,
 *     the listing's), or all three ready; consume-many: base-0,
 *     held-1 and held-2 all gone, each with its history record, or all
 *     claimed by holder, with none; gathered: the consume of base-0 and
 *     crasher's claim of base-1 both there or neither, and at no kill
 *     point any trace of ghost's failed write: no job claimed by ghost, no
 *     event of ghost's in the change log; retry: held-1 claimed by
 *     holder with no attempt, or unclaimed, delayed to exactly the
 *     recorded run's due time (the back-off of the writer's clock, its
 *     jitter drawn from the fixed random bytes), one attempt and the
 *     reason counted; retry-dead: tired claimed with its one attempt, or
 *     off the board as a dead letter (cause "attempts", two attempts, the
 *     reason, holder the owner) with its history record (ending "dead",
 *     the reason); requeue: corpse a dead letter (cause "buried", its
 *     key), or back on the board, ready, the newest job, attempts reset,
 *     holding its unique key again; dead-repost: corpse a dead letter, or
 *     gone and a new job of its name, details and key, created at the
 *     writer's clock, ready with no attempt (never both); purge: both dead letters there or
 *     neither; cancel: keyed ready with its key, or gone with its history
 *     record (ending "cancelled") and its key free; post-unique: the job
 *     holding its key in the unique index, or neither; post-held: nothing
 *     changed at any kill point; tick: the run (its unique key
 *     "schedule:NAME:RUN", created at the tick's time) and the schedule
 *     moved past it (next run a minute on, last run, one run counted), or
 *     neither; sched-add, sched-remove: the schedule there as added, or
 *     not; policy: the old policy or the new, whole; abandon-dead: as
 *     retry-dead, the reason its first attempt gave kept; trash: held-2
 *     claimed by holder, or a dead letter (cause "trashed") with its
 *     history record (ending "trashed", holder); retry-dead, abandon-dead
 *     and trash also prune corpse (gone exactly when their letter is
 *     there); progress: held-1 with its report (that percentage and
 *     message) or with none, and no other job with one; retention: the
 *     old retention with both dead letters, or the new one with junk
 *     alone;
 *     pause, resume: the
 *     name's pause and the time of its change as before or both as the
 *     op leaves them; pause-board, resume-board: the board's pause;
 *     claim-names: base-3 claimed by crasher, or ready; claim-paused:
 *     base-1 claimed by crasher, or ready, stalled's jobs untouched, and
 *     base-1's count of claims held against its cap what check finds
 *     (check compares every capped name's count with its claims); cap:
 *     base-2's cap and the time of its change as before (none) or both
 *     as the op leaves them; cap-each: base-0 to base-4 all as before
 *     (no cap) or all capped by the prefix with the time of the change,
 *     and the prefix listed exactly then; rate-each: the same with
 *     their rate limits (none, or the prefix's, full).
 *     Every kill point
 *     also checks what the operations do not touch: each job's attempts,
 *     due time, unique key and last reason, each dead letter, the unique
 *     index (read directly: one entry per job holding a key, naming it,
 *     no other), the schedules, the policy and the retention; the names
 *     recorded
 *     (jb_queues_foreach): exactly those posted, a new one exactly when
 *     its first job is there, each with as many ready jobs by the index
 *     as listed, no pause but the fixtures' and the op's, and the meta
 *     record "queuectl" (read directly) as the pauses say (jb_board_check
 *     verifies the index entry by entry); the change log holds
 *     exactly the operation's events since the base board when it is
 *     there and none when not; and jb_stats_read agrees with a recount
 *     of the board (jobs by state, due delayed jobs, claims, dead letters,
 *     history records kept and of the last hour by ending, the log's
 *     bounds), its meta counters too: the events counted by type equal
 *     the log's (never trimmed here), and the history records counted by
 *     ending equal the events of those endings and the newest record's
 *     place in the history; after every op the history holds
 *     HISTORY_KEPT records);
 *     absent when the kill came before mdb_txn_commit, there when it came
 *     after mdb_txn_commit returned; and a next writer works (posts,
 *     claims and consumes a job, posts another; all checked again).
 *     The recorded run itself was acknowledged: its change must be there
 *     (post-held's: no change).
 *     Every second pair of kill points has a bystander: a process that
 *     opened the board before the writer and keeps it open until the
 *     verifier is done, as a board's other workers would. Without one the
 *     verifier finds no process on the board and LMDB resets the lock file;
 *     with one the lock file stays as the dead writer left it, and the next
 *     writer recovers the dead writer's mutex (LMDB's EOWNERDEAD path). A
 *     killed operation that readers do not see at first but the next
 *     writer does is allowed only there: with a bystander, killed between
 *     the meta page's write and mdb_txn_commit's return (LMDB publishes a
 *     commit to readers, in the lock file, after writing its meta page);
 *     such kill points are counted and printed ("readers' lag").
 *
 * Kill points. The key points are taken in every form: every instruction
 * from two before the first change of the meta pages to three after the
 * last (without WRITEMAP the one pwrite; with it, the stores into the
 * map), and the instructions just before and after each syscall of the
 * commit. Then every k-th instruction:
 *  - the short form (make check) records from the first instruction of
 *    mdb_txn_commit to the window's end (an op without a commit: the
 *    whole window), and takes every k-th of those, k from a time budget
 *    (5/3 s for each op and mode of the first nine ops, 45 s in all,
 *    1.4 s for each of the newer ones, 0.8 s for each of the names' six:
 *    about 120 s by default, --budget
 *    scales them; visited coarse to fine, so a run cut by the budget is
 *    still spread evenly); before the commit, where the window is not
 *    single-stepped,
 *    it kills the writer on entering each LMDB call of the transaction's
 *    body (mdb_txn_begin, mdb_get, mdb_put, mdb_cursor_put, mdb_txn_abort,
 *    ... and a gathered group's child commits: found by breakpoints on
 *    their entries, and counted);
 *  - --whole records the whole window (from before the transaction
 *    begins), k from the budget or --every;
 *  - --full: the whole window, k = 1: every instruction of every operation
 *    and mode (days: the window of a retry is about 100,000 instructions,
 *    at about 20 ms a kill point; --ops and --modes pick parts);
 *  - --every=1 without --whole: every instruction from mdb_txn_commit to
 *    the window's end and every LMDB call before it, the long form that
 *    fits in minutes per op.
 * N, k, the kill points, the coverage (of the window, and of the commit
 * from its first write syscall to its return, with mdb_txn_commit's own
 * code apart) and the time per kill point are printed for each.
 *
 * Recorded long runs of the newer ops (a 2-core machine shared with
 * other builds, load 5 to 13, two sweeps at once under nice 19; none
 * failed):
 *   tests/crash_step --every=1 --modes=normal --no-demo --ops=OP
 *     OP            kill points (instructions + LMDB calls)   time
 *     retry         16027 (15981 + 46)                         324 s
 *     retry-dead    18279 (18205 + 74)                         347 s
 *     abandon-dead  18264 (18190 + 74)                         395 s
 *     trash         15450 (15382 + 68)                         365 s
 *     requeue       18270 (18225 + 45)                         344 s
 *     purge         11834 (11825 + 9)                          300 s
 *     cancel        18346 (18275 + 71)                         344 s
 *     post-unique   15834 (15792 + 42)                         374 s
 *     tick          18716 (18663 + 53)                         404 s
 *     sched-add     11841 (11835 + 6)                          310 s
 *     sched-remove  11747 (11742 + 5)                          216 s
 *     policy        11844 (11839 + 5)                          217 s
 *   tests/crash_step --full --modes=normal --no-demo --ops=policy
 *     28161 kill points (the whole window), 576 s
 *   tests/crash_step --full --modes=normal --no-demo --ops=post-held
 *     46159 kill points (the whole window, no commit, and its 11 LMDB
 *     calls), 642 s
 *   --full of retry (104722 instructions) and retry-dead (131373) was
 *   stopped after about 6,400 and 6,700 kill points (spread evenly, coarse
 *   to fine), none failed.
 * The short form (all ops and modes and the demonstration) takes 101 s
 * there (46 s with the first nine ops only).
 *
 * Last, the demonstration that the test finds what it guards against:
 * the key points of a post in durability none with MDB_WRITEMAP forced
 * in the killed writer (jb__store_test_writemap, tests only) must include
 * one after which the last acknowledged job is lost (LMDB 0.9.24 on
 * x86-64 stores the meta page's txnid before the main tree's root, at
 * mdb_txn_commit+3399 and +3406); the test fails if none does, and prints
 * where the losing kill point is.
 *
 * The boards live in /dev/shm when it is writable (a kill -9 leaves the
 * page cache as it was whatever the file system; a disk's flushes would
 * only slow the sweep), else in $TMPDIR or /tmp; CRASH_STEP_DIR overrides.
 *
 * Usage:
 *   tests/crash_step                 the short form (as make check runs it)
 *   tests/crash_step --full          every instruction, every op and mode
 *   options: --ops=post,claim-next,consume,batch,consume-claim,claim-many,
 *                  consume-many,gathered,publish,retry,retry-dead,requeue,
 *                  purge,cancel,post-unique,post-held,tick,sched-add,
 *                  sched-remove,policy,abandon-dead,trash,progress,pause,
 *                  pause-board,resume,resume-board,claim-names,
 *                  claim-paused,retention,cap,cap-each,snooze,expire,
 *                  rate,claim-rated,rate-each,run-now,dead-remove,
 *                  check-record,dead-repost
 *            --modes=none,normal,full
 *            --whole, --every=K (k fixed), --budget=SECONDS,
 *            --no-demo, --demo-only, -v (every failed kill point)
 * Output is TAP. Exit status: 0 all passed, 1 a check failed, 2 bad usage,
 * 77 skipped (not x86-64 Linux, or ptrace is not allowed here).
 */
#include "jobboard.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/txn.h"
#include "store/names.h"
#include "core/sync_hook.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__linux__)
#define CRASH_STEP_SUPPORTED 1
#include <ftw.h>
#include <sys/ptrace.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#endif

#ifndef CRASH_STEP_SUPPORTED
int main(void) {
  printf("1..0 # SKIP crash_step needs x86-64 Linux (ptrace registers)\n");
  return 77;
}
#else

#define MAP_SIZE ((size_t)1 << 20)
/* A batch post: JB_LOGTAIL_MOVE (24) posts, so that it takes the batch's
 * own path to the change log (the tail moved to `log` first, the events
 * appended there: store/logread.c, jb__log_open_for). */
#define BATCH 24
#define ACK_MAX (16 + BATCH * (JB_UUID_STRLEN + 1))
/* The base board's jobs: base-0 (claimed by holder), base-1..4, held-1
 * and held-2 (claimed by holder), tired (claimed by holder, one attempt
 * counted), keyed (holding a unique key), last; then two dead letters,
 * corpse (buried by a retry, its unique key freed) and junk (trashed). */
#define K_HELD1 5
#define K_HELD2 6
#define K_TIRED 7
#define K_KEYED 8
#define K_LAST 9
#define K_CORPSE 10
#define K_JUNK 11
#define NBASE 12
#define CLAIM_MANY 3 /* claim-many claims base-1..3 */
#define HOLDER "holder"
#define CRASHER "crasher"
#define VERIFIER "verifier"
#define GHOST "ghost" /* the gathered group's failing write claims for it */
/* The steps of one recorded run are limited to this (a runaway). */
#define MAX_STEPS ((size_t)20000000)
/* Cost of reaching an instruction by a breakpoint hit, in single steps. */
#define TRAP_COST 4

typedef enum { OP_POST, OP_CLAIM, OP_CONSUME, OP_BATCH, OP_FUSED,
               OP_CLAIM_MANY, OP_CONSUME_MANY, OP_GATHERED, OP_PUBLISH,
               OP_RETRY, OP_RETRY_DEAD, OP_REQUEUE, OP_PURGE, OP_CANCEL,
               OP_POST_UNIQUE, OP_POST_HELD, OP_TICK, OP_SCHED_ADD,
               OP_SCHED_REMOVE, OP_POLICY, OP_ABANDON_DEAD, OP_TRASH,
               OP_PROGRESS, OP_PAUSE, OP_PAUSE_BOARD, OP_RESUME,
               OP_RESUME_BOARD, OP_CLAIM_NAMES, OP_CLAIM_PAUSED,
               OP_RETENTION, OP_CAP, OP_CAP_EACH, OP_SNOOZE, OP_EXPIRE,
               OP_RATE, OP_CLAIM_RATED, OP_RATE_EACH, OP_RUN_NOW,
               OP_DEAD_REMOVE, OP_CHECK_RECORD, OP_DEAD_REPOST, OP_DETACH,
               OP_COUNT } op_kind;
static const char *const op_names[OP_COUNT] = {
    "post", "claim-next", "consume", "batch", "consume-claim",
    "claim-many", "consume-many", "gathered", "publish",
    "retry", "retry-dead", "requeue", "purge", "cancel",
    "post-unique", "post-held", "tick", "sched-add",
    "sched-remove", "policy", "abandon-dead", "trash", "progress", "pause",
    "pause-board", "resume", "resume-board", "claim-names", "claim-paused",
    "retention", "cap", "cap-each", "snooze", "expire", "rate", "claim-rated",
    "rate-each", "run-now", "dead-remove", "check-record", "dead-repost",
    "detach"};
/* The change-log events each operation appends when it is there (the
 * next writer's four come on top). */
static const int op_events[OP_COUNT] = {1, 1, 1, BATCH, 2, CLAIM_MANY, 3, 2, 0,
                                        1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1,
                                        1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 2, 0, 1,
                                        0, 0, 0, 0, 1, 3};
/* detach (on the synced board: the base board with base-0 and last
 * published as publish leaves them, and the sync settings): both jobs
 * local again under new sequences (two POSTED events), holder's claim of
 * base-0 released (ABANDONED: not bound to a process), the settings gone
 * but the detach record. */
/* publish: the replicator's confirmation of two publications (base-0,
 * claimed by holder, and last, ready): each moves to the Redis band
 * under the number Redis gave it (store.h, schema 7), claim and all. */
#define PUBLISHED_A 0
#define PUBLISHED_B K_LAST
/* An operation that writes nothing: its transaction is aborted (a post
 * refused for its unique key), so the window has no commit. */
static bool op_no_commit(int op) { return op == OP_POST_HELD; }

/* The fixtures of the newer write paths (point 1 of the comment above). */
#define KEYED_KEY "crash-key"   /* held by keyed */
#define CORPSE_KEY "corpse-key" /* corpse's, free while it is dead */
#define FRESH_KEY "fresh-key"   /* post-unique's */
#define SCHED "crash-sched"     /* due at the writer's clock */
#define SCHED_EVERY_MS 60000
#define SCHED2 "crash-sched-2"  /* sched-add's */
#define SCHED2_EVERY_MS 120000
#define RUN_NAME "sched-run"    /* the job of SCHED's runs */
#define SCHED2_NAME "sched-two"
#define TIRED_REASON "first try"
/* progress's report: holder's on held-1. */
#define PROGRESS_PCT 42.5
#define PROGRESS_MSG "crash step"
#define CORPSE_REASON "buried on purpose"
#define RETRY_REASON "try later"
#define DEAD_REASON "gave up"
/* Names as queues. pause: of base-2 (ready); claim-names: by CHOSEN, an
 * exact name and a prefix, whose oldest ready job is base-3. The other
 * three run on boards of their own, made from the base board (the base
 * board has no control in force, so that the other ops' claim-nexts take
 * the path of a board without one): the queues board adds NSTALLED jobs
 * of STALLED, listed first (a higher priority) and paused: resume resumes
 * it, and claim-paused (a claim-next of every name) passes them over,
 * more than store/ops.c's PLAIN_SKIP_MAX, so that it takes the walk by
 * lanes to base-1; the paused board is that board with the whole board
 * paused (resume-board). */
#define K_PAUSED 2
#define K_CHOSEN 3
/* Caps: on the queues board (and so the paused board) base-1 is capped at
 * CAP_QUEUES, so that claim-paused's claim of it counts against the cap
 * in the same write (check compares the count with the claims after
 * every kill); cap caps base-2 on the base board at CAP_NEW. */
#define K_CAPPED 1
#define CAP_QUEUES 2
#define CAP_NEW 1
/* cap-each caps each name of EACH_PREFIX on the base board at CAP_NEW:
 * base-0 to base-4 in one write (base-0 claimed by holder: its count is 1
 * at once). */
#define EACH_PREFIX "base-"
/* Rate limits. rate: base-2 gets RATE_N claims per RATE_MS (format 1 to
 * 2 of its queues entry); claim-rated runs on the rated board, the base
 * board with base-1 limited to one claim an hour, its token full: the
 * claim-next takes base-1 and spends it, in one write. */
#define RATE_N 2
#define RATE_MS 60000
#define RATED_MS 3600000
#define K_RATED 1
/* rate-each limits each name of EACH_PREFIX on the base board to RATE_N
 * claims per RATE_MS: base-0 to base-4 in one write, each its tokens
 * full. */
static const char *const chosen_names[2] = {"keyed", "base-3*"};
#define STALLED "stalled"
#define NSTALLED 70
/* snooze: how long holder snoozes held-1 (a day: it stays delayed). */
#define SNOOZE_MS ((int64_t)86400 * 1000)
/* The doomed board (expire): the base board and one job of DOOMED posted
 * with a deadline to start DOOMED_S seconds before the writer's clock. */
#define DOOMED "doomed"
#define DOOMED_S 10
#define STALLED_K 90 /* their details: {"k": 90} */
#define QUEUES_MAX 32 /* the names a board here holds, at most */
/* The base board's policy: a job's second failed attempt is its last; the
 * back-off is a day, so a retried job stays delayed however long a sweep
 * runs (a due one would be made claimable by the next claim). */
static const jb_retry_policy policy_base = {JB_RETRY_POLICY_VERSION, 2, 86400000,
                                            864000000};
static const jb_retry_policy policy_new = {JB_RETRY_POLICY_VERSION, 5, 30000,
                                           600000};
/* The base board's retention (two dead letters kept) and retention's
 * (one). */
static const jb_retention retain_base = {0, 0, 2, 0};
static const jb_retention retain_new = {0, 0, 1, 0};
static const jb_durability modes[3] = {JB_DURABILITY_NONE, JB_DURABILITY_NORMAL,
                                       JB_DURABILITY_FULL};

/* --------------------------------------------------------------- markers */

/* Different bodies and noipa: never merged, inlined or left out. */
static volatile int window_marker;
void crash_step_window_begin(void);
void crash_step_window_end(void);
__attribute__((noipa)) void crash_step_window_begin(void) { window_marker = 1; }
__attribute__((noipa)) void crash_step_window_end(void) { window_marker = 2; }

/* --------------------------------------------------------- the clock */

/*
 * The killed writer's clock reads whole seconds and a half: a posting
 * encodes its time's microseconds in 1, 2, 3 or 5 bytes by their value, so
 * with the real clock a run whose microseconds fall below 65536 takes
 * another path than the recorded one (it did, once in about 15). This
 * program's clock_gettime interposes libc's for the library (linked into
 * it); it asks the kernel (a syscall, not the vDSO, whose reads loop as
 * often as the timing makes them), and only the writer (--tracee) rounds.
 */
static bool writer_clock;
/* The writer's wall clock also stands still at one second, fixed by the
 * main process for the whole run (WRITER_SECONDS in the environment): a
 * job's uuid begins with the time in milliseconds (version 7, base/util.c),
 * so every run of the writer must post the same uuid at the same time. */
static time_t writer_seconds;
#define WRITER_SECONDS "JB_CRASH_STEP_WALL_SECONDS"

int clock_gettime(clockid_t clock, struct timespec *ts) {
  int rc = (int)syscall(SYS_clock_gettime, clock, ts);
  if (rc == 0 && writer_clock) {
    ts->tv_nsec = 500000000;
    if (clock == CLOCK_REALTIME && writer_seconds) ts->tv_sec = writer_seconds;
  }
  return rc;
}

/* The writer's clock, microseconds (the same in every process: the main
 * one fixes WRITER_SECONDS before anything else runs). */
static int64_t writer_now_us(void) {
  const char *secs = getenv(WRITER_SECONDS);
  return (secs ? (int64_t)strtoll(secs, NULL, 10) : 0) * 1000000 + 500000;
}

/* SCHED's first run: 30 s before the writer's clock (its every_ms is 60 s,
 * so a tick by the writer posts exactly that run). */
static int64_t sched_start_us(void) { return writer_now_us() - 30500000; }

/* ------------------------------------------------------------- utilities */

static bool verbose;
static char cleanup_root[4096]; /* removed at exit by the main process */
static pid_t main_pid;

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("Bail out! crash_step: ", stdout);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
  fflush(stdout);
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rmtree(const char *path);

static void cleanup(void) {
  if (getpid() == main_pid && cleanup_root[0]) rmtree(cleanup_root);
}

static int rm_one(const char *path, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

static void rmtree(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void copy_file(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0664);
  if (in < 0 || out < 0) die("copying %s: %s", src, strerror(errno));
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) die("copying %s: %s", dst, strerror(errno));
  if (n < 0) die("reading %s: %s", src, strerror(errno));
  close(in);
  close(out);
}

/* A fresh directory `dir` holding a copy of the base board: its files but
 * the lock file (the killed child makes it, the verifier inherits it). The
 * signal file goes too: without it the child's open would write a new
 * name for it, and that write, not the base's last post, would be the
 * commit before the killed one. */
static void fresh_copy(const char *base, const char *dir) {
  rmtree(dir);
  if (mkdir(dir, 0775) != 0) die("mkdir %s: %s", dir, strerror(errno));
  DIR *d = opendir(base);
  if (d == NULL) die("opendir %s: %s", base, strerror(errno));
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "lock.mdb") == 0) continue;
    char src[4400], dst[4400];
    snprintf(src, sizeof src, "%s/%s", base, e->d_name);
    snprintf(dst, sizeof dst, "%s/%s", dir, e->d_name);
    copy_file(src, dst);
  }
  closedir(d);
}

/* Read all of fd into buf (NUL-terminated, truncated to size). */
static void read_all(int fd, char *buf, size_t size) {
  size_t len = 0;
  ssize_t n;
  while ((n = read(fd, buf + len, size - 1 - len)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) len += (size_t)n;
  buf[len] = '\0';
}

/* The history's count bound, and the completions the base board starts
 * with (point 1 above). */
#define HISTORY_KEPT 100

static jb_board *open_board(const char *dir, jb_durability mode, bool create) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = mode;
  o.history_max = HISTORY_KEPT;
  o.map_size = MAP_SIZE;
  if (create) o.flags = JB_OPEN_CREATE;
  jb_board *b = NULL;
  return jb_board_open(&b, dir, &o) == JB_OK ? b : NULL;
}

/* Details {"k": i}: each posted job's details say which it is. */
static void details_of(unsigned char d[4], int i) {
  d[0] = 0x81, d[1] = 0xa1, d[2] = 'k', d[3] = (unsigned char)i;
}

static jb_post post_of(const char *name, unsigned char d[4], int i) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  details_of(d, i);
  p.details = d;
  p.details_len = 4;
  return p;
}

/* ------------------------------------------------------------ the board */

/* What the base board holds; new[] are the killed operation's jobs (the
 * same in every run: the uuids come from fixed bytes). */
typedef struct {
  char base[NBASE][JB_UUID_STRLEN];
  char fresh[BATCH][JB_UUID_STRLEN];
  int nfresh;
  int64_t due_us;    /* retry, snooze: the due time of the recorded run */
  bool snoozed;      /* snooze: held-1, delayed, has snoozed once */
  uint64_t log_next; /* the base board's next change-log sequence */
  /* The queues board and the paused board (names as queues, above). */
  int nstalled;              /* STALLED's jobs (0: the base board) */
  bool board_paused;         /* the paused board */
  int64_t stalled_changed_us; /* when STALLED was paused */
  int64_t capped_changed_us;  /* when base-1 was capped (queues board) */
  int ndoomed;               /* DOOMED's jobs (the doomed board: 1) */
  bool rated;                /* the rated board */
  int64_t rated_changed_us;  /* when base-1's limit was set */
  int64_t rated_next_us;     /* and its next token then */
  uint64_t held1_seq;        /* the delayed board: held-1's sequence */
} scenario;

/* The delayed board (run-now): held-1 given back by holder with the
 * policy's back-off (a day), so delayed, one attempt and RETRY_REASON
 * counted. Set by main for run-now's sweep, before it forks anything. */
static bool held1_delayed;

static const char *const base_names[NBASE] = {
    "base-0", "base-1", "base-2", "base-3", "base-4", "held-1", "held-2", "tired",
    "keyed", "last", "corpse", "junk"};

/* The base board's jobs claimed by holder that consume-many consumes. */
static bool base_held(int k) { return k == 0 || k == K_HELD1 || k == K_HELD2; }

/* The template of SCHED's runs, and SCHED2 (sched-add). */
static jb_schedule sched_of(bool second, unsigned char d[4]) {
  jb_schedule sd = JB_SCHEDULE_INIT;
  sd.name = second ? SCHED2 : SCHED;
  sd.every_ms = second ? SCHED2_EVERY_MS : SCHED_EVERY_MS;
  sd.start_us = second ? 0 : sched_start_us();
  sd.job = post_of(second ? SCHED2_NAME : RUN_NAME, d, second ? 61 : 60);
  /* Records of format 2 with a policy: the tick's killed transaction
   * also looks for an unfinished run (there is none: the run is posted). */
  sd.overlap = JB_OVERLAP_SKIP;
  return sd;
}

static jb_retry_options retry_opts(unsigned flags, const char *reason) {
  jb_retry_options o = JB_RETRY_OPTIONS_INIT;
  o.flags = flags;
  o.reason = reason;
  return o;
}

/* A board is made by a process of its own (the child of fork_maker), its
 * scenario sent back on a pipe (scenario_send) and read (scenario_back). */
static pid_t fork_maker(int p[2]) {
  if (pipe(p) != 0) die("pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) close(p[0]);
  else close(p[1]);
  return pid;
}

static void scenario_send(jb_board *b, scenario *s, int fd) {
  if (jb_log_bounds(NULL, &s->log_next, b) != JB_OK) _exit(22);
  jb_board_close(b);
  _exit(write(fd, s, sizeof *s) == (ssize_t)sizeof *s ? 0 : 14);
}

static void scenario_back(pid_t pid, int fd, scenario *sc, const char *what) {
  ssize_t n = read(fd, sc, sizeof *sc);
  close(fd);
  int st;
  waitpid(pid, &st, 0);
  if (n != (ssize_t)sizeof *sc || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    die("making the %s board failed (status %d): %s", what, st, jb_errmsg());
}

/* The base board; the uuids come back in *sc. */
static void make_base(const char *dir, scenario *sc) {
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s;
    memset(&s, 0, sizeof s);
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, true);
    if (b == NULL) _exit(10);
    for (int i = 0; i < HISTORY_KEPT; i++) {
      unsigned char d[4];
      jb_post post = post_of("done", d, i);
      char u[JB_UUID_STRLEN];
      if (jb_job_post(u, b, &post) != JB_OK ||
          jb_claim(NULL, b, u, HOLDER, NULL) != JB_OK ||
          jb_consume(b, u, HOLDER, 0, NULL) != JB_OK)
        _exit(15);
    }
    for (int i = 0; i <= K_LAST; i++) {
      unsigned char d[4];
      jb_post post = post_of(base_names[i], d, i);
      if (jb_job_post(s.base[i], b, &post) != JB_OK) _exit(11);
      /* The oldest is claimed by holder (claim-next) once base-4 is
       * posted, held-1 and held-2 as they are: all before the last job is
       * posted. */
      if (i == 4) {
        char u[JB_UUID_STRLEN];
        if (jb_claim_next(u, NULL, NULL, b, HOLDER, NULL) != JB_OK) _exit(12);
        if (strcmp(u, s.base[0]) != 0) _exit(13);
      } else if (i > 0 && base_held(i) && jb_claim(NULL, b, s.base[i], HOLDER, NULL) != JB_OK) {
        _exit(15);
      }
      if (i != K_HELD2) continue;
      /* The newer write paths' fixtures, before the last job: the policy;
       * tired, retried once at once and claimed again; keyed; corpse,
       * buried by a retry; junk, trashed; SCHED. */
      jb_retry_options first = retry_opts(0, TIRED_REASON);
      jb_retry_options bury = retry_opts(JB_RETRY_DEAD, CORPSE_REASON);
      jb_post fx;
      if (jb_board_set_retry_policy(b, &policy_base) != JB_OK) _exit(16);
      fx = post_of(base_names[K_TIRED], d, K_TIRED);
      if (jb_job_post(s.base[K_TIRED], b, &fx) != JB_OK ||
          jb_claim(NULL, b, s.base[K_TIRED], HOLDER, NULL) != JB_OK ||
          jb_retry(NULL, b, s.base[K_TIRED], HOLDER, &first) != JB_OK ||
          jb_claim(NULL, b, s.base[K_TIRED], HOLDER, NULL) != JB_OK)
        _exit(17);
      fx = post_of(base_names[K_KEYED], d, K_KEYED);
      fx.unique_key = KEYED_KEY;
      if (jb_job_post(s.base[K_KEYED], b, &fx) != JB_OK) _exit(18);
      fx = post_of(base_names[K_CORPSE], d, K_CORPSE);
      fx.unique_key = CORPSE_KEY;
      if (jb_job_post(s.base[K_CORPSE], b, &fx) != JB_OK ||
          jb_claim(NULL, b, s.base[K_CORPSE], HOLDER, NULL) != JB_OK ||
          jb_retry(NULL, b, s.base[K_CORPSE], HOLDER, &bury) != JB_OK)
        _exit(19);
      fx = post_of(base_names[K_JUNK], d, K_JUNK);
      if (jb_job_post(s.base[K_JUNK], b, &fx) != JB_OK ||
          jb_claim(NULL, b, s.base[K_JUNK], HOLDER, NULL) != JB_OK ||
          jb_trash(b, s.base[K_JUNK], HOLDER, 0) != JB_OK)
        _exit(20);
      unsigned char sd[4];
      jb_schedule sched = sched_of(false, sd);
      if (jb_schedule_add(b, &sched, 0) != JB_OK) _exit(21);
      /* Two dead letters kept: a write that adds a third prunes corpse. */
      if (jb_board_set_retention(b, &retain_base, JB_RETAIN_DEAD_MAX) != JB_OK)
        _exit(23);
      i = K_LAST - 1; /* last */
    }
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, "base");
}

/* The names recorded (jb_queues_foreach) and the controls in force. */
typedef struct {
  size_t n;
  bool odd;
  char name[QUEUES_MAX][48];
  bool paused[QUEUES_MAX];
  int64_t changed_us[QUEUES_MAX];
  size_t ready[QUEUES_MAX];
  uint32_t cap[QUEUES_MAX], held[QUEUES_MAX];
  bool each[QUEUES_MAX], rate_each[QUEUES_MAX];
  uint32_t rate[QUEUES_MAX];
  uint64_t period_ms[QUEUES_MAX];
  int64_t next_us[QUEUES_MAX];
} queue_tab;

static int queue_visit(const jb_queue_info *q, void *payload) {
  queue_tab *t = payload;
  if (t->n == QUEUES_MAX || strlen(q->name) >= sizeof t->name[0]) {
    t->odd = true;
    return 0;
  }
  snprintf(t->name[t->n], sizeof t->name[0], "%s", q->name);
  t->paused[t->n] = q->paused != 0;
  t->changed_us[t->n] = q->changed_us;
  t->cap[t->n] = q->cap;
  t->held[t->n] = q->held;
  t->each[t->n] = q->cap_each != 0;
  t->rate[t->n] = q->rate;
  t->rate_each[t->n] = q->rate_each != 0;
  t->period_ms[t->n] = q->period_ms;
  t->next_us[t->n] = q->next_token_us;
  t->ready[t->n++] = q->ready;
  return 0;
}

/* The prefixes capped for each name, as "prefix=cap;" (cut short past 63
 * bytes: never here). */
static int prefix_text(const char *prefix, uint32_t cap, void *arg) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 64 - n, "%s=%u;", prefix, cap);
  return 0;
}

/* The prefixes rate-limited for each name, as "prefix=count/ms;". */
static int rate_prefix_text(const char *prefix, uint32_t count,
                            uint64_t period_ms, void *arg) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 64 - n, "%s=%u/%" PRIu64 ";", prefix, count, period_ms);
  return 0;
}

/* The rated board from a copy of the base board `from`, by a process of
 * its own; *sc becomes its scenario. */
static void make_rated_base(const char *from, const char *dir, scenario *sc) {
  fresh_copy(from, dir);
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s = *sc;
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, false);
    if (b == NULL) _exit(10);
    if (jb_set_rate(b, base_names[K_RATED], 1, RATED_MS) != JB_OK) _exit(12);
    queue_tab t;
    memset(&t, 0, sizeof t);
    if (jb_queues_foreach(b, queue_visit, &t, NULL) != JB_OK) _exit(15);
    for (size_t i = 0; i < t.n; i++)
      if (strcmp(t.name[i], base_names[K_RATED]) == 0) {
        s.rated_changed_us = t.changed_us[i];
        s.rated_next_us = t.next_us[i];
      }
    s.rated = true;
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, "rated");
}

/* The queues board (`paused` false) or the paused board from a copy of
 * `from` (the base board, or the queues board), by a process of its
 * own; *sc becomes `from`'s scenario with its fixtures. */
static void make_queue_base(const char *from, const char *dir, bool paused,
                            scenario *sc) {
  fresh_copy(from, dir);
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s = *sc;
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, false);
    if (b == NULL) _exit(10);
    for (int i = 0; !paused && i < NSTALLED; i++) {
      unsigned char d[4];
      jb_post post = post_of(STALLED, d, STALLED_K);
      post.priority = JB_PRIORITY_HIGH;
      char u[JB_UUID_STRLEN];
      if (jb_job_post(u, b, &post) != JB_OK) _exit(11);
    }
    if (jb_pause(b, paused ? NULL : STALLED) != JB_OK) _exit(12);
    if (!paused && jb_set_cap(b, base_names[K_CAPPED], CAP_QUEUES) != JB_OK) _exit(13);
    if (!paused) {
      /* The times of the pause and the cap, as the board recorded them. */
      queue_tab t;
      memset(&t, 0, sizeof t);
      if (jb_queues_foreach(b, queue_visit, &t, NULL) != JB_OK) _exit(15);
      for (size_t i = 0; i < t.n; i++) {
        if (strcmp(t.name[i], STALLED) == 0) s.stalled_changed_us = t.changed_us[i];
        if (strcmp(t.name[i], base_names[K_CAPPED]) == 0)
          s.capped_changed_us = t.changed_us[i];
      }
      s.nstalled = NSTALLED;
    }
    s.board_paused = paused;
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, paused ? "paused" : "queues");
}

/* The delayed board from a copy of the base board, by a process of its
 * own: holder retries held-1 with the back-off; its due time and
 * sequence go to the scenario. */
static void make_delayed_base(const char *from, const char *dir, scenario *sc) {
  fresh_copy(from, dir);
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s = *sc;
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, false);
    if (b == NULL) _exit(10);
    jb_retry_options o = retry_opts(JB_RETRY_BACKOFF, RETRY_REASON);
    jb_retry_result res;
    if (jb_retry(&res, b, s.base[K_HELD1], HOLDER, &o) != JB_OK || res.due_us <= 0)
      _exit(11);
    jb_job *j = NULL;
    if (jb_job_get(&j, b, s.base[K_HELD1]) != JB_OK) _exit(12);
    s.due_us = res.due_us;
    s.held1_seq = jb_job_sequence(j);
    jb_job_free(j);
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, "delayed");
}

/* The doomed board from a copy of the base board, by a process of its
 * own: one job of DOOMED, posted at a clock fixed so that its deadline
 * to start (1 s after its post) passed DOOMED_S s before the writer's
 * clock. */
static void make_doomed_base(const char *from, const char *dir, scenario *sc) {
  fresh_copy(from, dir);
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s = *sc;
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, false);
    if (b == NULL) _exit(10);
    unsigned char d[4];
    jb_post post = post_of(DOOMED, d, STALLED_K);
    post.expires_ms = 1000;
    char u[JB_UUID_STRLEN];
    jb__test_clock_fix(writer_now_us() - (DOOMED_S + 1) * 1000000LL);
    if (jb_job_post(u, b, &post) != JB_OK) _exit(11);
    jb__test_clock_fix(0);
    s.ndoomed = 1;
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, "doomed");
}

/* The synced board from a copy of the base board, by a process of its
 * own: base-0 and last published as publish leaves them, and the settings
 * of a synced board. */
static void make_synced_base(const char *from, const char *dir, scenario *sc) {
  fresh_copy(from, dir);
  int p[2];
  pid_t pid = fork_maker(p);
  if (pid == 0) {
    scenario s = *sc;
    jb_board *b = open_board(dir, JB_DURABILITY_NORMAL, false);
    if (b == NULL) _exit(10);
    const char *u[2] = {s.base[PUBLISHED_A], s.base[PUBLISHED_B]};
    uint64_t seqs[2] = {7, 3};
    if (jb__board_setting_set(b, JB_SETTING_SYNC_NAMESPACE, "crash") != JB_OK ||
        jb__board_setting_set(b, "sync.url", "redis://crash.invalid/0") != JB_OK ||
        jb__board_set_published(b, u, 2, JB_PUB_DONE, seqs, NULL) != JB_OK)
      _exit(11);
    scenario_send(b, &s, p[1]);
  }
  scenario_back(pid, p[0], sc, "synced");
}

/* The writes of the gathered group (jb__store_write_many): holder's
 * consume of base-0, and claim-nexts as the single operations make them.
 * A claim with `fail` returns an error after its claim is written: its
 * child transaction must be aborted, and the next claim takes the same
 * job. */
typedef struct {
  uint8_t uuid[16]; /* the consume's job; the claim's, once claimed */
  size_t who_len;
  jb_hist_bounds hb;
  jb_store_done done;
  jb_store_claim_req req;
  bool fail;
} gather_ctx;

static int gather_consume(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  gather_ctx *c = vctx;
  bool refused;
  return jb__txn_finish(s, txn, JB_RELEASE_CONSUME, c->uuid, HOLDER, c->who_len, 0,
                        jb__now_us(), &c->done, &refused);
}

static int gather_claim(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  gather_ctx *c = vctx;
  uint8_t key[JB_JOBKEY_LEN];
  uint64_t token;
  int rc = jb__txn_claim_next(s, txn, &c->req, NULL, true, c->uuid, key, &token,
                              NULL, NULL, NULL);
  if (rc == 0 && c->fail)
    return jb__err(JB_EINVAL, "%s's claim refused on purpose, after it was written",
                   c->req.who);
  return rc;
}

/* One group of three writes, the second failing; JB_OK when each write
 * returned what it should (the claim's uuid to out[0]). */
static int run_gathered(jb_board *b, char (*out)[JB_UUID_STRLEN], const scenario *sc) {
  gather_ctx w[3];
  memset(w, 0, sizeof w);
  w[1].fail = true;
  int rc = jb__consume_args(b, sc->base[0], HOLDER, JB_OUTCOME_SUCCESS, NULL, 0,
                            w[0].uuid, &w[0].who_len, &w[0].hb, &w[0].done);
  if (rc == JB_OK) rc = jb__board_claim_req(&w[1].req, GHOST, NULL);
  if (rc == JB_OK) rc = jb__board_claim_req(&w[2].req, CRASHER, NULL);
  if (rc != JB_OK) return rc;
  jb_store_req reqs[3] = {{gather_consume, &w[0], 0, ""},
                          {gather_claim, &w[1], 0, ""},
                          {gather_claim, &w[2], 0, ""}};
  if ((rc = jb__store_write_many(b->store, reqs, 3)) != JB_OK) return rc;
  if (reqs[0].rc != JB_OK || reqs[1].rc != JB_EINVAL || reqs[2].rc != JB_OK)
    return jb__err(JB_EIO, "the gathered writes returned %d, %d, %d (expected %d, "
                   "%d, %d): %s / %s / %s", reqs[0].rc, reqs[1].rc, reqs[2].rc, JB_OK,
                   JB_EINVAL, JB_OK, reqs[0].msg, reqs[1].msg, reqs[2].msg);
  jb__uuid_format(out[0], w[2].uuid);
  return JB_OK;
}

/* The killed operation. */
static int run_op(jb_board *b, op_kind op, char (*out)[JB_UUID_STRLEN],
                  const scenario *sc) {
  unsigned char d[BATCH][4];
  jb_post posts[BATCH];
  for (int i = 0; i < BATCH; i++) posts[i] = post_of("crash-new", d[i], 100 + i);
  switch (op) {
  case OP_POST: return jb_job_post(out[0], b, &posts[0]);
  case OP_CLAIM: return jb_claim_next(out[0], NULL, NULL, b, CRASHER, NULL);
  case OP_CONSUME: return jb_consume(b, sc->base[0], HOLDER, 0, NULL);
  case OP_BATCH: return jb_job_post_batch(out, b, posts, BATCH);
  case OP_FUSED: /* holder consumes its job and claims the oldest ready */
    return jb_consume_and_claim_next(out[0], NULL, NULL, b, sc->base[0],
                                         HOLDER, 0, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}, NULL);
  case OP_CLAIM_MANY: { /* crasher claims the three oldest ready jobs */
    size_t n = 0;
    int rc = jb_claim_next_many(&n, out, NULL, NULL, b, CRASHER, NULL, CLAIM_MANY);
    return rc == JB_OK && n != CLAIM_MANY
               ? jb__err(JB_EIO, "claim-many claimed %zu jobs, not %d", n, CLAIM_MANY)
               : rc;
  }
  case OP_CONSUME_MANY: { /* holder consumes its three jobs */
    jb_consume_item items[NBASE];
    int status[NBASE];
    size_t n = 0;
    for (int k = 0; k < NBASE; k++)
      if (base_held(k))
        items[n++] = (jb_consume_item){sc->base[k], HOLDER, 0, JB_OUTCOME_SUCCESS,
                                       NULL, 0};
    int rc = jb_consume_many(status, b, items, n, NULL, NULL);
    for (size_t i = 0; rc == JB_OK && i < n; i++)
      if (status[i] != JB_OK)
        rc = jb__err(JB_EIO, "consume-many: item %zu: %s", i, jb_errmsg());
    return rc;
  }
  case OP_GATHERED: return run_gathered(b, out, sc);
  case OP_PUBLISH: {
    const char *u[2] = {sc->base[PUBLISHED_A], sc->base[PUBLISHED_B]};
    uint64_t seqs[2] = {7, 3};
    return jb__board_set_published(b, u, 2, JB_PUB_DONE, seqs, NULL);
  }
  case OP_RETRY: /* holder gives held-1 back after the policy's back-off */
  case OP_RETRY_DEAD: { /* and tired, at its last attempt: dead */
    bool dead = op == OP_RETRY_DEAD;
    jb_retry_options o = retry_opts(dead ? 0 : JB_RETRY_BACKOFF,
                                 dead ? DEAD_REASON : RETRY_REASON);
    jb_retry_result res;
    int rc = jb_retry(&res, b, sc->base[dead ? K_TIRED : K_HELD1], HOLDER, &o);
    if (rc == JB_OK && (res.dead != dead || res.attempts != (dead ? 2u : 1u) ||
                        (!dead && res.due_us <= 0)))
      return jb__err(JB_EIO, "retry: dead %d, attempts %u, due %" PRId64, res.dead,
                     res.attempts, res.due_us);
    /* The due time goes back with the acknowledgement. */
    if (rc == JB_OK && !dead) snprintf(out[0], JB_UUID_STRLEN, "%" PRId64, res.due_us);
    return rc;
  }
  case OP_REQUEUE: return jb_dead_requeue(b, sc->base[K_CORPSE], 0);
  case OP_PURGE: {
    size_t n = 0;
    int rc = jb_dead_purge(&n, b, INT64_MAX);
    return rc == JB_OK && n != 2 ? jb__err(JB_EIO, "purge: %zu letters, not 2", n) : rc;
  }
  case OP_CANCEL: return jb_job_cancel(b, sc->base[K_KEYED], 0);
  case OP_POST_UNIQUE:
    posts[0].unique_key = FRESH_KEY;
    return jb_job_post(out[0], b, &posts[0]);
  case OP_POST_HELD: { /* refused: keyed holds the key */
    posts[0].unique_key = KEYED_KEY;
    char u[JB_UUID_STRLEN] = "";
    int rc = jb_job_post(u, b, &posts[0]);
    if (rc == JB_EEXISTS && strcmp(u, sc->base[K_KEYED]) == 0) return JB_OK;
    return jb__err(JB_EIO, "post-held: %d (%s), holder '%s'", rc, jb_errmsg(), u);
  }
  case OP_TICK: {
    size_t n = 0;
    int rc = jb_schedule_tick(&n, b, 0);
    return rc == JB_OK && n != 1 ? jb__err(JB_EIO, "tick posted %zu runs", n) : rc;
  }
  case OP_SCHED_ADD: {
    unsigned char sd[4];
    jb_schedule sched = sched_of(true, sd);
    return jb_schedule_add(b, &sched, 0);
  }
  case OP_SCHED_REMOVE: return jb_schedule_remove(b, SCHED);
  case OP_POLICY: return jb_board_set_retry_policy(b, &policy_new);
  /* holder abandons tired, its last attempt: dead, with the reason its
   * first attempt gave */
  case OP_ABANDON_DEAD: return jb_abandon(b, sc->base[K_TIRED], HOLDER, 0);
  case OP_TRASH: return jb_trash(b, sc->base[K_HELD2], HOLDER, 0);
  case OP_PROGRESS: /* holder reports how far held-1 got */
    return jb_progress(b, sc->base[K_HELD1], HOLDER, 0, PROGRESS_PCT,
                       PROGRESS_MSG);
  case OP_PAUSE: return jb_pause(b, base_names[K_PAUSED]);
  case OP_PAUSE_BOARD: return jb_pause(b, NULL);
  case OP_RESUME: return jb_resume(b, STALLED);
  case OP_RESUME_BOARD: return jb_resume(b, NULL);
  case OP_CLAIM_NAMES: { /* crasher claims base-3, of the names chosen */
    jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
    o.names = chosen_names;
    o.n_names = 2;
    return jb_claim_next(out[0], NULL, NULL, b, CRASHER, &o);
  }
  /* crasher claims base-1, past STALLED's paused jobs */
  case OP_CLAIM_PAUSED: return jb_claim_next(out[0], NULL, NULL, b, CRASHER, NULL);
  case OP_RETENTION: return jb_board_set_retention(b, &retain_new, JB_RETAIN_DEAD_MAX);
  case OP_CAP: return jb_set_cap(b, base_names[K_PAUSED], CAP_NEW);
  case OP_CAP_EACH: return jb_set_cap(b, EACH_PREFIX "*", CAP_NEW);
  case OP_SNOOZE: { /* holder snoozes held-1 for a day: no attempt spent */
    int rc = jb_snooze(b, sc->base[K_HELD1], HOLDER, 0, SNOOZE_MS);
    /* The due time goes back with the acknowledgement, as retry's. */
    jb_job *j = NULL;
    if (rc == JB_OK && (rc = jb_job_get(&j, b, sc->base[K_HELD1])) == JB_OK)
      snprintf(out[0], JB_UUID_STRLEN, "%" PRId64, jb_job_not_before(j));
    jb_job_free(j);
    return rc;
  }
  /* crasher's claim-next on the doomed board: it ends DOOMED's job, past
   * its deadline to start (history "expired", a DEADLINE event), and
   * claims base-1, in one write */
  case OP_EXPIRE: return jb_claim_next(out[0], NULL, NULL, b, CRASHER, NULL);
  case OP_RATE: return jb_set_rate(b, base_names[K_PAUSED], RATE_N, RATE_MS);
  /* crasher claims base-1, spending its name's token */
  case OP_CLAIM_RATED: return jb_claim_next(out[0], NULL, NULL, b, CRASHER, NULL);
  case OP_RATE_EACH: return jb_set_rate(b, EACH_PREFIX "*", RATE_N, RATE_MS);
  /* held-1, delayed on the delayed board, claimable at once */
  case OP_RUN_NOW: return jb_job_run_now(b, sc->base[K_HELD1]);
  case OP_DEAD_REMOVE: return jb_dead_remove(b, sc->base[K_CORPSE]);
  case OP_DEAD_REPOST: /* the new uuid goes back with the ack */
    return jb_dead_repost(b, sc->base[K_CORPSE], 0, out[0]);
  /* a check of the base board that records its result (one write after
   * the read) */
  case OP_CHECK_RECORD:
    return jb_board_check_ex(NULL, b, JB_CHECK_RECORD, NULL, NULL);
  case OP_DETACH: return jb__board_detach(b, "crash step", NULL);
  default: return JB_EINVAL;
  }
}

/* ------------------------------------------------------------- verifier */

typedef struct {
  char why[600];
} verdict;

static bool vfail(verdict *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->why, sizeof v->why, fmt, ap);
  va_end(ap);
  return false;
}

static void first_problem(const char *line, void *payload) {
  verdict *v = payload;
  if (v->why[0] == '\0') snprintf(v->why, sizeof v->why, "check: %s", line);
}

static bool is_fresh(const scenario *sc, const char *u, int *idx) {
  for (int i = 0; i < sc->nfresh; i++)
    if (strcmp(sc->fresh[i], u) == 0) return *idx = i, true;
  return false;
}

/* A base job's state: gone, ready, claimed (by holder, crasher or someone
 * else), delayed (unclaimed until its due time), or a dead letter. */
typedef enum { ST_GONE, ST_READY, ST_HOLDER, ST_CRASHER, ST_OTHER, ST_DELAYED,
               ST_DEAD } job_state;

static job_state before_state(int k) {
  if (k == K_CORPSE || k == K_JUNK) return ST_DEAD;
  if (k == K_HELD1 && held1_delayed) return ST_DELAYED;
  return base_held(k) || k == K_TIRED ? ST_HOLDER : ST_READY;
}

/* What the killed operation makes of base job k (its state before, when
 * it does not touch it). */
static job_state after_state(op_kind op, int k) {
  switch (op) {
  case OP_CLAIM: return k == 1 ? ST_CRASHER : before_state(k);
  case OP_CONSUME: return k == 0 ? ST_GONE : before_state(k);
  case OP_FUSED: /* holder consumes base-0 and claims the oldest ready */
    return k == 0 ? ST_GONE : k == 1 ? ST_HOLDER : before_state(k);
  case OP_CLAIM_MANY: return k >= 1 && k <= CLAIM_MANY ? ST_CRASHER : before_state(k);
  case OP_CONSUME_MANY: return base_held(k) ? ST_GONE : before_state(k);
  case OP_GATHERED: /* the consume and crasher's claim; not ghost's */
    return k == 0 ? ST_GONE : k == 1 ? ST_CRASHER : before_state(k);
  case OP_RETRY: /* fall through */
  case OP_SNOOZE: return k == K_HELD1 ? ST_DELAYED : before_state(k);
  case OP_EXPIRE: return k == 1 ? ST_CRASHER : before_state(k);
  /* A third dead letter: retention (two kept) prunes corpse, the oldest,
   * in the same write. */
  case OP_RETRY_DEAD: /* fall through */
  case OP_ABANDON_DEAD:
    return k == K_TIRED ? ST_DEAD : k == K_CORPSE ? ST_GONE : before_state(k);
  case OP_TRASH:
    return k == K_HELD2 ? ST_DEAD : k == K_CORPSE ? ST_GONE : before_state(k);
  case OP_RETENTION: return k == K_CORPSE ? ST_GONE : before_state(k);
  case OP_REQUEUE: return k == K_CORPSE ? ST_READY : before_state(k);
  case OP_PURGE: return k == K_CORPSE || k == K_JUNK ? ST_GONE : before_state(k);
  case OP_CANCEL: return k == K_KEYED ? ST_GONE : before_state(k);
  case OP_CLAIM_NAMES: return k == K_CHOSEN ? ST_CRASHER : before_state(k);
  case OP_CLAIM_PAUSED: return k == 1 ? ST_CRASHER : before_state(k);
  case OP_CLAIM_RATED: return k == K_RATED ? ST_CRASHER : before_state(k);
  case OP_RUN_NOW: return k == K_HELD1 ? ST_READY : before_state(k);
  case OP_DEAD_REMOVE: /* fall through: corpse leaves the dead letters */
  case OP_DEAD_REPOST: return k == K_CORPSE ? ST_GONE : before_state(k);
  case OP_DETACH: return k == PUBLISHED_A ? ST_READY : before_state(k);
  default: return before_state(k);
  }
}

static const char *state_text(job_state st, const char *other, char *buf, size_t len) {
  static const char *const names[] = {"gone", "ready", "claimed by " HOLDER,
                                      "claimed by " CRASHER, "", "delayed",
                                      "a dead letter"};
  if (st != ST_OTHER) return names[st];
  snprintf(buf, len, "claimed by %.60s", other);
  return buf;
}

/* Two strings alike, NULL being the empty one. */
static bool str_is(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

/* The killed operation's changes: each there or not, all of them one way. */
typedef struct {
  int n, there;
  char what[400];
  size_t len;
} aspects;

static void aspect(aspects *a, bool there, const char *fmt, ...) {
  a->n++;
  a->there += there;
  if (a->len >= sizeof a->what) return;
  if (a->len) a->len += (size_t)snprintf(a->what + a->len, sizeof a->what - a->len, ", ");
  if (a->len >= sizeof a->what) return;
  va_list ap;
  va_start(ap, fmt);
  a->len += (size_t)vsnprintf(a->what + a->len, sizeof a->what - a->len, fmt, ap);
  va_end(ap);
}

/* What the board holds, counted while it is checked: the figures
 * jb_stats_read must agree with (check_stats). */
typedef struct {
  size_t jobs, ready, claimed, delayed, dead;
  int64_t due[NBASE + BATCH + 8]; /* the delayed jobs' due times */
  size_t ndue;
  uint64_t log_first, log_next, by_type[16], since_base;
  /* The names of the jobs listed, and the ready jobs of each. */
  char name[QUEUES_MAX][48];
  size_t name_ready[QUEUES_MAX];
  size_t nnames;
  bool names_odd; /* more names, or a longer one */
} recount;

static void count_name(recount *rc, const char *name, bool ready) {
  size_t i = 0;
  while (i < rc->nnames && strcmp(rc->name[i], name) != 0) i++;
  if (i == rc->nnames) {
    if (i == QUEUES_MAX || strlen(name) >= sizeof rc->name[0]) {
      rc->names_odd = true;
      return;
    }
    snprintf(rc->name[i], sizeof rc->name[i], "%s", name);
    rc->name_ready[i] = 0;
    rc->nnames++;
  }
  rc->name_ready[i] += ready;
}

/* Read the whole change log: its events by type, those since the base
 * board, and no event of ghost's (the gathered group's failed write: its
 * claim left no trace). */
static bool scan_log(jb_board *b, const scenario *sc, recount *rc, verdict *v) {
  uint64_t from = 0, next = 0;
  if (jb_log_bounds(&from, &next, b) != JB_OK) return vfail(v, "log: %s", jb_errmsg());
  rc->log_first = from, rc->log_next = next;
  jb_event ev[32];
  while (from < next) {
    size_t n = 0;
    if (jb_log_read(ev, &n, NULL, b, from, 32) != JB_OK || n == 0)
      return vfail(v, "log: %s", n ? jb_errmsg() : "no event where one should be");
    for (size_t i = 0; i < n; i++) {
      if (strcmp(ev[i].owner, GHOST) == 0)
        return vfail(v, "the gathered group's failed write left a trace: a %s event "
                     "of job %s by %s in the change log",
                     jb_event_type_name(ev[i].type), ev[i].uuid, GHOST);
      rc->by_type[(unsigned)ev[i].type & 15u]++;
      rc->since_base += ev[i].seq >= sc->log_next;
    }
    from = ev[n - 1].seq + 1;
  }
  return true;
}

/* A base job on the board in state st: its attempts, due time, unique key
 * and last reason as the base board or the killed operation left them. */
static bool job_life_ok(const scenario *sc, int k, job_state st, const jb_job *j,
                        verdict *v) {
  uint32_t att = 0;
  int64_t due = 0;
  const char *key = NULL, *why = NULL;
  bool snoozed = k == K_HELD1 && st == ST_DELAYED && sc->snoozed;
  if (k == K_HELD1 && st == ST_DELAYED)
    att = snoozed ? 0 : 1, due = sc->due_us, why = snoozed ? NULL : RETRY_REASON;
  else if (k == K_HELD1 && held1_delayed) /* run now: its attempt kept */
    att = 1, why = RETRY_REASON;
  if (jb_job_snoozes(j) != (snoozed ? 1u : 0u))
    return vfail(v, "job %s (%s) has %u snoozes, not %u", sc->base[k], base_names[k],
                 jb_job_snoozes(j), snoozed ? 1u : 0u);
  if (k == K_TIRED) att = 1, why = TIRED_REASON;
  if (k == K_KEYED) key = KEYED_KEY;
  if (k == K_CORPSE) key = CORPSE_KEY; /* requeued: its attempts start again */
  if (jb_job_attempts(j) == att && jb_job_not_before(j) == due &&
      str_is(jb_job_unique_key(j), key) && str_is(jb_job_last_reason(j), why))
    return true;
  return vfail(v, "job %s (%s) is %s with attempts %u, due %" PRId64 ", unique key "
               "'%s', reason '%s'; not %u, %" PRId64 ", '%s', '%s'", sc->base[k],
               base_names[k], st == ST_DELAYED ? "delayed" : "on the board",
               jb_job_attempts(j), jb_job_not_before(j),
               jb_job_unique_key(j) ? jb_job_unique_key(j) : "",
               jb_job_last_reason(j) ? jb_job_last_reason(j) : "", att, due,
               key ? key : "", why ? why : "");
}

/* The dead letters: each a base job's, as the base board or the killed
 * operation left it. */
typedef struct {
  const scenario *sc;
  op_kind op;
  verdict *v;
  bool ok;
  bool seen[NBASE];
  size_t n;
} dead_walk;

static int dead_visit(const jb_dead_letter *d, void *payload) {
  dead_walk *w = payload;
  w->n++;
  int k = -1;
  for (int i = 0; i < NBASE; i++)
    if (strcmp(d->uuid, w->sc->base[i]) == 0) k = i;
  jb_dead_cause cause = JB_DEAD_TRASHED;
  uint32_t att = 0;
  const char *why = NULL, *key = NULL;
  if (k == K_CORPSE) cause = JB_DEAD_BURIED, att = 1, why = CORPSE_REASON, key = CORPSE_KEY;
  else if (k == K_TIRED)
    cause = JB_DEAD_ATTEMPTS, att = 2,
    why = w->op == OP_ABANDON_DEAD ? TIRED_REASON : DEAD_REASON;
  else if (k != K_JUNK && k != K_HELD2) {
    w->ok = vfail(w->v, "unexpected dead letter %s (%s)", d->uuid,
                  k >= 0 ? base_names[k] : d->name ? d->name : "?");
    return 1;
  }
  w->seen[k] = true;
  unsigned char want[4];
  details_of(want, k);
  if (d->cause != cause || d->attempts != att || !str_is(d->reason, why) ||
      !str_is(d->unique_key, key) || !str_is(d->owner, HOLDER) ||
      !str_is(d->name, base_names[k]) || d->details == NULL || d->details_len != 4 ||
      memcmp(d->details, want, 4) != 0) {
    w->ok = vfail(w->v, "dead letter %s (%s): cause %s, attempts %u, reason '%s', "
                  "unique key '%s', owner '%s'; not %s, %u, '%s', '%s', '%s' (or its "
                  "posting differs)", d->uuid, base_names[k], jb_dead_cause_name(d->cause),
                  d->attempts, d->reason ? d->reason : "",
                  d->unique_key ? d->unique_key : "", d->owner ? d->owner : "",
                  jb_dead_cause_name(cause), att, why ? why : "", key ? key : "", HOLDER);
    return 1;
  }
  return 0;
}

/* The unique index (store.h: key -> uuid), read directly. */
#define UNIQ_MAX 16
typedef struct {
  size_t n;
  bool odd; /* more entries, or one that is not key -> 16 bytes */
  char key[UNIQ_MAX][JB_UNIQUE_MAX + 1];
  char uuid[UNIQ_MAX][JB_UUID_STRLEN];
} uniq_tab;

static int uniq_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  uniq_tab *t = vctx;
  t->n = 0, t->odd = false;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->unique, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (t->n == UNIQ_MAX || k.mv_size > JB_UNIQUE_MAX || v.mv_size != 16) {
      t->odd = true;
      continue;
    }
    memcpy(t->key[t->n], k.mv_data, k.mv_size);
    t->key[t->n][k.mv_size] = '\0';
    jb__uuid_format(t->uuid[t->n], v.mv_data);
    t->n++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The schedules: SCHED as added (or ticked, or removed) and SCHED2 when
 * added, nothing else. */
typedef struct {
  bool seen[2], odd;
  int64_t every_ms[2], next_us[2], last_us[2];
  uint64_t runs[2];
  bool job_ok[2];
  char other[80];
} sched_walk;

static int sched_visit(const jb_schedule *sd, void *payload) {
  sched_walk *w = payload;
  int i = strcmp(sd->name, SCHED) == 0 ? 0 : strcmp(sd->name, SCHED2) == 0 ? 1 : -1;
  if (i < 0) {
    w->odd = true;
    snprintf(w->other, sizeof w->other, "%s", sd->name);
    return 0;
  }
  w->seen[i] = true;
  w->every_ms[i] = sd->every_ms, w->next_us[i] = sd->next_us;
  w->last_us[i] = sd->last_run_us, w->runs[i] = sd->runs;
  w->job_ok[i] = str_is(sd->job.name, i ? SCHED2_NAME : RUN_NAME) && sd->cron == NULL &&
                 sd->overlap == JB_OVERLAP_SKIP && sd->skipped == 0;
  return 0;
}

static bool check_schedules(jb_board *b, op_kind op, aspects *a, verdict *v) {
  sched_walk w;
  memset(&w, 0, sizeof w);
  if (jb_schedule_foreach(b, sched_visit, &w) != JB_OK)
    return vfail(v, "schedules: %s", jb_errmsg());
  if (w.odd) return vfail(v, "unexpected schedule %s", w.other);
  int64_t s0 = sched_start_us();
  if (w.seen[0]) {
    bool ticked = w.next_us[0] == s0 + SCHED_EVERY_MS * 1000 && w.last_us[0] == s0 &&
                  w.runs[0] == 1;
    bool fresh = w.next_us[0] == s0 && w.last_us[0] == 0 && w.runs[0] == 0;
    if (w.every_ms[0] != SCHED_EVERY_MS || !w.job_ok[0] || !(fresh || ticked) ||
        (ticked && op != OP_TICK))
      return vfail(v, "schedule %s: every %" PRId64 " ms, next run %" PRId64 ", last "
                   "%" PRId64 ", %" PRIu64 " runs: neither as added (next %" PRId64
                   ") nor as the tick leaves it", SCHED, w.every_ms[0], w.next_us[0],
                   w.last_us[0], w.runs[0], s0);
    if (op == OP_TICK)
      aspect(a, ticked, "%s %s", SCHED, ticked ? "moved past its run" : "not ticked");
  } else if (op != OP_SCHED_REMOVE) {
    return vfail(v, "schedule %s is missing", SCHED);
  }
  if (op == OP_SCHED_REMOVE)
    aspect(a, !w.seen[0], "%s %s", SCHED, w.seen[0] ? "there" : "removed");
  if (w.seen[1]) {
    if (op != OP_SCHED_ADD)
      return vfail(v, "schedule %s is there: the killed %s does not add it", SCHED2,
                   op_names[op]);
    int64_t next = writer_now_us() + SCHED2_EVERY_MS * 1000;
    if (w.every_ms[1] != SCHED2_EVERY_MS || !w.job_ok[1] || w.next_us[1] != next ||
        w.runs[1] != 0 || w.last_us[1] != 0)
      return vfail(v, "schedule %s is not as added: every %" PRId64 " ms, next run %"
                   PRId64 " (not %" PRId64 "), %" PRIu64 " runs", SCHED2, w.every_ms[1],
                   w.next_us[1], next, w.runs[1]);
  }
  if (op == OP_SCHED_ADD)
    aspect(a, w.seen[1], "%s %s", SCHED2, w.seen[1] ? "added" : "not there");
  return true;
}

/* The meta record claim-next reads first (store/names.h), read directly:
 * a count that disagrees with the names' pauses would let claim-next take
 * a paused name's job or skip the names' controls. */
static int queuectl_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  uint32_t *out = vctx;
  MDB_val k = {sizeof JB_QUEUECTL_KEY - 1, JB_QUEUECTL_KEY}, v;
  *out = 0;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == 0 && v.mv_size != sizeof *out) return MDB_CORRUPTED;
  if (rc == 0) memcpy(out, v.mv_data, sizeof *out);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Name t->name[e]'s rate limit (and, with one, the time of its change):
 * none but base-1's on the rated board, whose token claim-rated spends
 * with its claim, base-2's that rate sets, limit, time and token
 * together, and base-0 to base-4's that rate-each gives them all or none
 * (*each_seen: whether its names were seen limited, -1 before one). */
static bool check_rate(const queue_tab *t, size_t e, op_kind op, const scenario *sc,
                       aspects *a, verdict *v, bool *own_changed, int *each_seen) {
  const char *n = t->name[e];
  *own_changed = true; /* the time of the change is the limit's */
  int64_t now = writer_now_us();
  bool each = op == OP_RATE_EACH && strncmp(n, EACH_PREFIX, 5) == 0;
  if ((op == OP_RATE && strcmp(n, base_names[K_PAUSED]) == 0) || each) {
    bool done = t->rate[e] == RATE_N && t->period_ms[e] == RATE_MS &&
                t->changed_us[e] == now && t->rate_each[e] == each &&
                t->next_us[e] == now - (int64_t)(RATE_N - 1) * (RATE_MS * 1000 / RATE_N);
    if (!done && (t->rate[e] || t->changed_us[e] || t->rate_each[e]))
      return vfail(v, "name %s: rate %u per %" PRIu64 " ms, changed at %" PRId64
                   ", next token %" PRId64 ": neither none nor as the killed %s sets it",
                   n, t->rate[e], t->period_ms[e], t->changed_us[e], t->next_us[e],
                   op_names[op]);
    if (each && *each_seen >= 0 && *each_seen != done)
      return vfail(v, "name %s is %srate-limited by the prefix, and another name of "
                   "it is %s", n, done ? "" : "not ", done ? "not" : "");
    if (each) *each_seen = done;
    aspect(a, done, "%s rate-limited", n);
    return true;
  }
  if (sc->rated && strcmp(n, base_names[K_RATED]) == 0) {
    if (t->rate[e] != 1 || t->period_ms[e] != RATED_MS ||
        t->changed_us[e] != sc->rated_changed_us)
      return vfail(v, "name %s: rate %u per %" PRIu64 " ms changed at %" PRId64
                   ", not the rated board's", n, t->rate[e], t->period_ms[e],
                   t->changed_us[e]);
    int64_t from = sc->rated_next_us > now ? sc->rated_next_us : now;
    int64_t spent = from + (int64_t)RATED_MS * 1000;
    bool done = t->next_us[e] == spent;
    if (!done && t->next_us[e] != sc->rated_next_us)
      return vfail(v, "name %s: next token at %" PRId64 ", neither %" PRId64
                   " (full) nor %" PRId64 " (spent)", n, t->next_us[e],
                   sc->rated_next_us, spent);
    if (op == OP_CLAIM_RATED) aspect(a, done, "%s's token spent", n);
    else if (done)
      return vfail(v, "name %s: its token is spent: the killed %s claims none of it",
                   n, op_names[op]);
    return true;
  }
  *own_changed = false;
  if (t->rate[e])
    return vfail(v, "name %s is rate-limited: the killed %s sets no limit", n,
                 op_names[op]);
  return true;
}

/* The names recorded: exactly the names posted on this board (the base
 * board's, "done", STALLED on the queues board) and those the killed
 * operation and the next writer post, each of them there exactly when a
 * job of it was posted (a new name's record is a write of the post's
 * transaction); each with its ready jobs as listed (the `byname` index,
 * which check verifies entry by entry, counted by name); each unpaused
 * but STALLED on the queues board and base-2 when paused; the board
 * paused on the paused board; the pause ops' changes each there or not;
 * and the meta record "queuectl" as the pauses say. */
static bool check_queues(jb_board *b, op_kind op, const scenario *sc, bool next,
                         bool fresh, bool run, const recount *cnt, aspects *a,
                         verdict *v) {
  queue_tab t;
  memset(&t, 0, sizeof t);
  int board_paused = -1;
  if (jb_queues_foreach(b, queue_visit, &t, &board_paused) != JB_OK)
    return vfail(v, "names: %s", jb_errmsg());
  uint32_t ctl = 0;
  if (jb__store_read(b->store, queuectl_body, &ctl) != JB_OK)
    return vfail(v, "the meta record %s: %s", JB_QUEUECTL_KEY, jb_errmsg());
  if (t.odd || cnt->names_odd)
    return vfail(v, "more than %d names, or a longer one than expected", QUEUES_MAX);
  /* Each name listed is recorded, with its ready jobs. */
  for (size_t i = 0; i < cnt->nnames; i++) {
    size_t e = 0;
    while (e < t.n && strcmp(t.name[e], cnt->name[i]) != 0) e++;
    if (e == t.n)
      return vfail(v, "name %s has jobs on the board but is not recorded", cnt->name[i]);
    if (t.ready[e] != cnt->name_ready[i])
      return vfail(v, "name %s: %zu ready jobs counted by the index, %zu listed",
                   cnt->name[i], t.ready[e], cnt->name_ready[i]);
  }
  bool seen_new = false, seen_run = false, seen_next = false;
  unsigned npaused = 0, ncontrolled = 0;
  int each_seen = -1; /* cap-each: whether its names were seen capped */
  int rate_each_seen = -1; /* rate-each: whether its names were limited */
  for (size_t e = 0; e < t.n; e++) {
    const char *n = t.name[e];
    bool listed = false, known = strcmp(n, "done") == 0 ||
                                 (sc->nstalled && strcmp(n, STALLED) == 0) ||
                                 (sc->ndoomed && strcmp(n, DOOMED) == 0);
    for (size_t i = 0; i < cnt->nnames; i++) listed |= strcmp(cnt->name[i], n) == 0;
    for (int k = 0; k < NBASE; k++) known |= strcmp(n, base_names[k]) == 0;
    if (!listed && t.ready[e] != 0)
      return vfail(v, "name %s: %zu ready jobs counted by the index, none listed", n,
                   t.ready[e]);
    if (strcmp(n, "crash-new") == 0) seen_new = known = true;
    if (strcmp(n, RUN_NAME) == 0 && op == OP_TICK) seen_run = known = true;
    if (strcmp(n, "next") == 0) seen_next = known = true;
    if (!known) return vfail(v, "name %s is recorded: no job of it was posted", n);
    npaused += t.paused[e];
    bool own = false;
    bool stalled = sc->nstalled && strcmp(n, STALLED) == 0;
    bool capped = sc->nstalled && strcmp(n, base_names[K_CAPPED]) == 0;
    bool mine = (op == OP_PAUSE && strcmp(n, base_names[K_PAUSED]) == 0) ||
                (op == OP_RESUME && stalled);
    bool was = stalled;
    int64_t was_us = stalled ? sc->stalled_changed_us
                     : capped ? sc->capped_changed_us : 0;
    /* The cap: the killed cap's name has its old one (none) or the new
     * one with the time of the change; the queues board's capped name
     * keeps its cap; none other has one. The count of claims held is
     * check's (it compares it with the claims). */
    bool cap_mine = (op == OP_CAP && strcmp(n, base_names[K_PAUSED]) == 0) ||
                    (op == OP_CAP_EACH && strncmp(n, EACH_PREFIX, 5) == 0);
    uint32_t cap_was = capped ? CAP_QUEUES : 0;
    ncontrolled += t.paused[e] || t.cap[e] || t.rate[e];
    if (cap_mine) {
      bool done = t.cap[e] == CAP_NEW && t.changed_us[e] == writer_now_us() &&
                  t.each[e] == (op == OP_CAP_EACH);
      /* cap-each's names change together: all of them, or none. */
      if (op == OP_CAP_EACH && each_seen >= 0 && each_seen != done)
        return vfail(v, "name %s is %scapped by the prefix, and another name of it "
                     "is %s", n, done ? "" : "not ", done ? "not" : "");
      if (op == OP_CAP_EACH) each_seen = done;
      if (!done && (t.cap[e] != cap_was || t.changed_us[e] != was_us || t.each[e]))
        return vfail(v, "name %s: capped at %u, changed at %" PRId64 ": neither as it "
                     "was (%u, %" PRId64 ") nor as the killed %s leaves it", n,
                     t.cap[e], t.changed_us[e], cap_was, was_us, op_names[op]);
      aspect(a, done, "%s capped", n);
      if (t.paused[e]) return vfail(v, "name %s is paused: the killed cap does not "
                                    "pause", n);
      continue;
    }
    if (t.cap[e] != cap_was)
      return vfail(v, "name %s: capped at %u, not %u (the killed %s does not touch "
                   "its cap)", n, t.cap[e], cap_was, op_names[op]);
    if (capped && op == OP_CLAIM_PAUSED)
      aspect(a, t.held[e] == 1, "%s holds %u claim(s) of its cap", n, t.held[e]);
    if (mine) {
      /* Its pause and the time of its change go together. */
      bool done = t.paused[e] == !was && t.changed_us[e] == writer_now_us();
      if (!done && (t.paused[e] != was || t.changed_us[e] != was_us))
        return vfail(v, "name %s: paused %d, changed at %" PRId64 ": neither as it "
                     "was (%d, %" PRId64 ") nor as the killed %s leaves it", n,
                     t.paused[e], t.changed_us[e], was, was_us, op_names[op]);
      aspect(a, done, "%s %s", n, t.paused[e] ? "paused" : "not paused");
    } else if (!check_rate(&t, e, op, sc, a, v, &own, &rate_each_seen)) {
      return false;
    } else if (t.paused[e] != was || (!own && t.changed_us[e] != was_us)) {
      return vfail(v, "name %s: paused %d, changed at %" PRId64 "; not %d, %" PRId64
                   " (the killed %s does not touch it)", n, t.paused[e],
                   t.changed_us[e], was, was_us, op_names[op]);
    }
  }
  /* The prefixes capped for each name: "base-" exactly when cap-each's
   * names are capped. */
  char prefixes[64] = "";
  if (jb_cap_prefixes(b, prefix_text, prefixes) != JB_OK)
    return vfail(v, "the capped prefixes: %s", jb_errmsg());
  const char *want_prefixes = each_seen == 1 ? EACH_PREFIX "=1;" : "";
  if (strcmp(prefixes, want_prefixes) != 0)
    return vfail(v, "the capped prefixes are '%s', not '%s'", prefixes, want_prefixes);
  /* The prefixes rate-limited for each name: "base-" exactly when
   * rate-each's names are limited. */
  prefixes[0] = '\0';
  if (jb_rate_prefixes(b, rate_prefix_text, prefixes) != JB_OK)
    return vfail(v, "the rate-limited prefixes: %s", jb_errmsg());
  char want_rates[64] = "";
  if (rate_each_seen == 1)
    snprintf(want_rates, sizeof want_rates, "%s=%d/%d;", EACH_PREFIX, RATE_N,
             RATE_MS);
  if (strcmp(prefixes, want_rates) != 0)
    return vfail(v, "the rate-limited prefixes are '%s', not '%s'", prefixes,
                 want_rates);
  /* A new name is recorded with its first job's post. */
  if (seen_new != fresh)
    return vfail(v, "name crash-new is %srecorded, and the killed %s's jobs %s there",
                 seen_new ? "" : "not ", op_names[op], fresh ? "are" : "are not");
  if (op == OP_TICK && seen_run != run)
    return vfail(v, "name %s is %srecorded, and the tick's run %s there", RUN_NAME,
                 seen_run ? "" : "not ", run ? "is" : "is not");
  if (seen_next != next)
    return vfail(v, "name next is %srecorded: the next writer %s", seen_next ? "" : "not ",
                 next ? "posted it" : "has not run");
  bool bwas = sc->board_paused;
  if (op == OP_PAUSE_BOARD || op == OP_RESUME_BOARD)
    aspect(a, board_paused == (op == OP_PAUSE_BOARD), "the board %s",
           board_paused ? "paused" : "not paused");
  else if (board_paused != bwas)
    return vfail(v, "the board is %spaused: the killed %s does not touch it",
                 board_paused ? "" : "not ", op_names[op]);
  uint32_t want = (board_paused ? JB_QUEUECTL_BOARD : 0) | ncontrolled;
  if (ctl != want)
    return vfail(v, "the meta record %s is %#x, not %#x (the board %spaused, %u "
                 "names paused, %u paused or capped)", JB_QUEUECTL_KEY, ctl, want,
                 board_paused ? "" : "not ", npaused, ncontrolled);
  return true;
}

static bool same_policy(const jb_retry_policy *x, const jb_retry_policy *y) {
  return x->max_attempts == y->max_attempts && x->backoff_ms == y->backoff_ms &&
         x->backoff_max_ms == y->backoff_max_ms;
}

static bool same_retention(const jb_retention *x, const jb_retention *y) {
  return memcmp(x, y, sizeof *x) == 0;
}

/* The board's jobs against the scenario (check_board): each base job as
 * acknowledged, or (those the killed operation changes) as it leaves
 * them, and each other change of the operation (a dead letter, a unique
 * key, a schedule, the policy, its events), all of them or none; a job
 * that leaves the board has its history record exactly when it is gone. */
static bool check_jobs(jb_board *b, op_kind op, const scenario *sc,
                       const char *extra, bool *applied, recount *cnt, verdict *v) {
  int rc;
  job_state obs[NBASE];
  char owner[NBASE][JB_WHO_MAX + 1];
  uint64_t token[NBASE] = {0}, seq[NBASE] = {0};
  bool remote[NBASE] = {false};
  bool extra_seen = false;
  int nfresh = 0, nrun = 0, nstalled = 0, ndoomed = 0;
  bool progress_there = false; /* progress: held-1 has its report */
  size_t nkeyed = 0;
  char keyed_uuid[UNIQ_MAX][JB_UUID_STRLEN], keyed_key[UNIQ_MAX][JB_UNIQUE_MAX + 1];
  char run_key[JB_UNIQUE_MAX + 1];
  snprintf(run_key, sizeof run_key, JB_SCHEDULE_KEY_PREFIX "%s:%" PRId64, SCHED,
           sched_start_us());
  uniq_tab ut;
  memset(&ut, 0, sizeof ut);
  if ((rc = jb__store_read(b->store, uniq_body, &ut)) != JB_OK)
    return vfail(v, "the unique index: %s", jb_errmsg());
  for (int k = 0; k < NBASE; k++) obs[k] = ST_GONE, owner[k][0] = '\0';
  jb_iter *it = NULL;
  if (jb_iter_open(&it, b, 0) != JB_OK) return vfail(v, "iter: %s", jb_errmsg());
  const jb_job *j;
  bool ok = true;
  while (ok && (rc = jb_iter_next(&j, it)) == JB_OK && j != NULL) {
    const char *u = jb_job_uuid(j), *who = jb_job_owner(j);
    bool claimed = jb_job_state(j) == JB_STATE_CLAIMED;
    bool delayed = !claimed && jb_job_not_before(j) != 0;
    cnt->jobs++;
    if (claimed) cnt->claimed++;
    else if (delayed) cnt->delayed++;
    else cnt->ready++;
    if (delayed && cnt->ndue < sizeof cnt->due / sizeof cnt->due[0])
      cnt->due[cnt->ndue++] = jb_job_not_before(j);
    count_name(cnt, jb_job_name(j), !claimed && !delayed);
    if (jb_job_unique_key(j) && nkeyed < UNIQ_MAX) {
      snprintf(keyed_uuid[nkeyed], JB_UUID_STRLEN, "%s", u);
      snprintf(keyed_key[nkeyed++], JB_UNIQUE_MAX + 1, "%s", jb_job_unique_key(j));
    }
    int k = -1;
    for (int i = 0; i < NBASE; i++)
      if (strcmp(u, sc->base[i]) == 0) k = i;
    size_t dl = 0;
    const unsigned char *det = jb_job_details(j, &dl);
    unsigned char want[4];
    if (claimed && strcmp(who, GHOST) == 0) {
      ok = vfail(v, "the gathered group's failed write left a trace: job %s (%s) is "
                 "claimed by %s", u, k >= 0 ? base_names[k] : jb_job_name(j), GHOST);
    } else if (k >= 0) {
      details_of(want, k);
      if (strcmp(jb_job_name(j), base_names[k]) != 0 || dl != 4 || memcmp(det, want, 4))
        ok = vfail(v, "acknowledged job %s (%s): its posting changed", u, base_names[k]);
      obs[k] = !claimed                     ? (delayed ? ST_DELAYED : ST_READY)
               : strcmp(who, HOLDER) == 0  ? ST_HOLDER
               : strcmp(who, CRASHER) == 0 ? ST_CRASHER
                                           : ST_OTHER;
      if (claimed) snprintf(owner[k], sizeof owner[k], "%s", who);
      token[k] = claimed ? jb_job_token(j) : 0;
      remote[k] = jb_job_remote(j);
      seq[k] = jb_job_sequence(j);
      ok = ok && job_life_ok(sc, k, obs[k], j, v);
      /* progress: held-1's report, whole or absent; no other job has one. */
      double pct = 0;
      const char *pmsg = NULL;
      if (jb_job_progress(j, &pct, &pmsg, NULL)) {
        if (op == OP_PROGRESS && k == K_HELD1 && pct == PROGRESS_PCT &&
            str_is(pmsg, PROGRESS_MSG))
          progress_there = true;
        else
          ok = vfail(v, "job %s (%s) has progress %.1f '%s': the killed %s "
                     "reports none such", u, base_names[k], pct,
                     pmsg ? pmsg : "", op_names[op]);
      }
    } else if (is_fresh(sc, u, &k) && op == OP_DEAD_REPOST) {
      /* corpse posted again: its name and details, a new uuid */
      nfresh++;
      details_of(want, K_CORPSE);
      if (strcmp(jb_job_name(j), base_names[K_CORPSE]) != 0 || dl != 4 ||
          memcmp(det, want, 4) || claimed || delayed ||
          jb_job_attempts(j) != 0 || jb_job_created(j) != writer_now_us() ||
          !str_is(jb_job_unique_key(j), CORPSE_KEY))
        ok = vfail(v, "the repost of corpse, %s, is there but not intact", u);
    } else if (is_fresh(sc, u, &k)) {
      nfresh++;
      details_of(want, 100 + k);
      if (strcmp(jb_job_name(j), "crash-new") != 0 || dl != 4 || memcmp(det, want, 4) ||
          claimed || delayed || jb_job_attempts(j) != 0 ||
          !str_is(jb_job_unique_key(j), op == OP_POST_UNIQUE ? FRESH_KEY : NULL))
        ok = vfail(v, "the killed post's job %s is there but not intact", u);
    } else if (extra && strcmp(u, extra) == 0) {
      extra_seen = true;
    } else if (sc->nstalled && strcmp(jb_job_name(j), STALLED) == 0) {
      nstalled++;
      details_of(want, STALLED_K);
      if (claimed || delayed || jb_job_attempts(j) != 0 || dl != 4 ||
          memcmp(det, want, 4) != 0 || jb_job_priority(j) != JB_PRIORITY_HIGH)
        ok = vfail(v, "job %s of the paused name %s is not as posted (%s)", u, STALLED,
                   claimed ? "claimed" : delayed ? "delayed" : "changed");
    } else if (sc->ndoomed && strcmp(jb_job_name(j), DOOMED) == 0) {
      ndoomed++;
      if (claimed || delayed || jb_job_deadline(j) == 0 ||
          jb_job_deadline(j) > writer_now_us())
        ok = vfail(v, "job %s of %s is not as posted (%s, deadline %" PRId64 ")", u,
                   DOOMED, claimed ? "claimed" : delayed ? "delayed" : "unclaimed",
                   jb_job_deadline(j));
    } else if (op == OP_TICK && strcmp(jb_job_name(j), RUN_NAME) == 0) {
      nrun++;
      if (claimed || delayed || !str_is(jb_job_unique_key(j), run_key) ||
          jb_job_created(j) != writer_now_us() || nrun > 1)
        ok = vfail(v, "the tick's run %s is there but not intact (unique key '%s', "
                   "created %" PRId64 ", %s)", u,
                   jb_job_unique_key(j) ? jb_job_unique_key(j) : "", jb_job_created(j),
                   nrun > 1 ? "a second run" : claimed ? "claimed" : "unclaimed");
    } else {
      ok = vfail(v, "unexpected job %s (%s) on the board", u, jb_job_name(j));
    }
  }
  if (ok && rc != JB_OK) ok = vfail(v, "iter: %s", jb_errmsg());
  jb_iter_close(it);
  if (!ok || !scan_log(b, sc, cnt, v)) return false;
  if (extra && !extra_seen) return vfail(v, "the next writer's job %s is missing", extra);
  if (nstalled != sc->nstalled)
    return vfail(v, "%d jobs of %s on the board, not %d", nstalled, STALLED,
                 sc->nstalled);
  if (ndoomed > sc->ndoomed || (ndoomed < sc->ndoomed && op != OP_EXPIRE))
    return vfail(v, "%d jobs of %s on the board, not %d", ndoomed, DOOMED,
                 sc->ndoomed);
  int doomed_gone = sc->ndoomed - ndoomed;
  if (doomed_gone && cnt->by_type[JB_EVENT_DEADLINE] != 1)
    return vfail(v, "the doomed job is gone with %" PRIu64 " DEADLINE events",
                 cnt->by_type[JB_EVENT_DEADLINE]);
  /* The dead letters: the base jobs off the board that are there are
   * dead, the others gone. */
  dead_walk dw = {sc, op, v, true, {false}, 0};
  if ((rc = jb_dead_foreach(b, dead_visit, &dw)) != JB_OK && dw.ok)
    return vfail(v, "dead letters: %s", jb_errmsg());
  if (!dw.ok) return false;
  cnt->dead = dw.n;
  for (int k = 0; k < NBASE; k++) {
    if (dw.seen[k] && obs[k] != ST_GONE)
      return vfail(v, "job %s (%s) is both on the board and a dead letter", sc->base[k],
                   base_names[k]);
    if (dw.seen[k]) obs[k] = ST_DEAD;
  }
  /* The unique index: one entry for each job on the board with a key,
   * naming it, and no other. */
  if (ut.odd || ut.n != nkeyed)
    return vfail(v, "the unique index holds %s%zu entries for the %zu jobs on the "
                 "board with a unique key", ut.odd ? "more than " : "", ut.n, nkeyed);
  for (size_t i = 0; i < nkeyed; i++) {
    size_t e = 0;
    while (e < ut.n && strcmp(ut.key[e], keyed_key[i]) != 0) e++;
    if (e == ut.n || strcmp(ut.uuid[e], keyed_uuid[i]) != 0)
      return vfail(v, "job %s holds unique key '%s', but the index %s", keyed_uuid[i],
                   keyed_key[i], e == ut.n ? "has no such entry" : "names another job");
  }
  /* The base jobs: unchanged, or (those the op changes) changed. */
  aspects a = {0};
  for (int k = 0; k < NBASE; k++) {
    job_state was = before_state(k), to = after_state(op, k);
    const char *name = base_names[k];
    char b1[80], b2[80], b3[80];
    const char *is = state_text(obs[k], owner[k], b1, sizeof b1);
    if (to == was) {
      if (obs[k] == was) continue;
      if (obs[k] == ST_GONE)
        return vfail(v, "acknowledged job %s (%s) is missing", sc->base[k], name);
      if (was == ST_HOLDER)
        return vfail(v, "acknowledged claim of %s (%s) by %s is lost (it is %s)",
                     sc->base[k], name, HOLDER, is);
      return vfail(v, "job %s (%s) is %s: the killed %s does not touch it", sc->base[k],
                   name, is, op_names[op]);
    }
    if (obs[k] != was && obs[k] != to)
      return vfail(v, "job %s (%s) is %s: neither %s as acknowledged nor %s as the "
                   "killed %s leaves it", sc->base[k], name, is,
                   state_text(was, "", b2, sizeof b2), state_text(to, "", b3, sizeof b3),
                   op_names[op]);
    aspect(&a, obs[k] == to, "%s %s", name, is);
    if ((to != ST_GONE && to != ST_DEAD) || was == ST_DEAD) continue;
    /* A job that leaves the board has its history record exactly when it
     * is gone: consumed or trashed by holder, dead (its last attempt's
     * reason), or cancelled (no owner). */
    bool dead = op == OP_RETRY_DEAD || op == OP_ABANDON_DEAD;
    jb_end end = dead               ? JB_END_DEAD
                 : op == OP_CANCEL ? JB_END_CANCELLED
                 : op == OP_TRASH  ? JB_END_TRASHED
                                   : JB_END_CONSUMED;
    jb_completion *c = NULL;
    rc = jb_job_completion(&c, b, sc->base[k]);
    bool rec = rc == JB_OK && c->end == end &&
               str_is(c->owner, op == OP_CANCEL ? NULL : HOLDER) &&
               (!dead || str_is(c->reason, op == OP_RETRY_DEAD ? DEAD_REASON
                                                               : TIRED_REASON));
    bool any = rc == JB_OK;
    jb_completion_free(c);
    if ((obs[k] == to) != rec)
      return vfail(v, "%s: the job %s (%s) is %s but its history record is %s",
                   op_names[op], sc->base[k], name, obs[k] == to ? "gone" : "there",
                   rec ? "there" : any ? "not as it should be" : "not there");
  }
  /* run-now: held-1 keeps its sequence (its place), delayed or not. */
  if (held1_delayed && obs[K_HELD1] != ST_GONE && seq[K_HELD1] != sc->held1_seq)
    return vfail(v, "job %s (held-1) has sequence %" PRIu64 ", not its own %" PRIu64,
                 sc->base[K_HELD1], seq[K_HELD1], sc->held1_seq);
  /* requeue: corpse is the newest job (a new sequence). */
  if (obs[K_CORPSE] == ST_READY && seq[K_CORPSE] <= seq[K_LAST])
    return vfail(v, "requeued job %s has sequence %" PRIu64 ", not after last's %" PRIu64,
                 sc->base[K_CORPSE], seq[K_CORPSE], seq[K_LAST]);
  /* claim-many claims in listing order: its fencing tokens increase so. */
  for (int k = 2; op == OP_CLAIM_MANY && a.there && k <= CLAIM_MANY; k++)
    if (token[k] <= token[k - 1])
      return vfail(v, "claim-many's claims are not in listing order: %s has token %" PRIu64
                   ", %s token %" PRIu64, base_names[k - 1], token[k - 1], base_names[k],
                   token[k]);
  /* publish: both jobs Redis-decided (and in Redis's order), or neither;
   * no other job touched. */
  int npub = 0;
  for (int k = 0; k < NBASE; k++) {
    bool mine = (op == OP_PUBLISH || op == OP_DETACH) &&
                (k == PUBLISHED_A || k == PUBLISHED_B);
    if (remote[k] && !mine)
      return vfail(v, "job %s (%s) is Redis-decided: the killed %s does not "
                   "touch it", sc->base[k], base_names[k], op_names[op]);
    npub += remote[k];
  }
  if (npub == 1)
    return vfail(v, "the killed publish is torn: one of its two jobs is "
                 "Redis-decided");
  if (npub == 2) {
    char order[2][JB_UUID_STRLEN];
    jb_iter *oi = NULL;
    size_t no = 0;
    const jb_job *oj;
    if (jb_iter_open(&oi, b, 0) != JB_OK) return vfail(v, "iter: %s", jb_errmsg());
    while (no < 2 && jb_iter_next(&oj, oi) == JB_OK && oj != NULL)
      snprintf(order[no++], JB_UUID_STRLEN, "%s", jb_job_uuid(oj));
    jb_iter_close(oi);
    /* Redis numbered last 3 and base-0 7: they list first, in that order. */
    if (no != 2 || strcmp(order[0], sc->base[PUBLISHED_B]) != 0 ||
        strcmp(order[1], sc->base[PUBLISHED_A]) != 0)
      return vfail(v, "the published jobs are not first in Redis's order");
  }
  if (op == OP_PUBLISH) aspect(&a, npub == 2, "published %d", npub);
  if (op == OP_DETACH) {
    /* Local again, in the order they had (last first), after the rest. */
    aspect(&a, npub == 0, "%d jobs Redis-decided", npub);
    if (npub == 0 && (seq[PUBLISHED_B] >= seq[PUBLISHED_A] ||
                      seq[PUBLISHED_B] <= seq[K_KEYED]))
      return vfail(v, "the detached jobs' sequences are %" PRIu64 " (last) and %"
                   PRIu64 " (base-0): not in their order after the others",
                   seq[PUBLISHED_B], seq[PUBLISHED_A]);
    bool synced = jb__board_synced(b);
    char rec[4097];
    bool recorded = jb__board_setting_get(b, "sync.detached", rec, sizeof rec,
                                          NULL) == JB_OK;
    aspect(&a, !synced, "the board %s", synced ? "synced" : "not synced");
    aspect(&a, recorded, "the detach record %s", recorded ? "there" : "not");
  }
  /* The new jobs: the posts' (all or none), the tick's run. */
  if (sc->nfresh) aspect(&a, nfresh != 0, "%d of %d new jobs", nfresh, sc->nfresh);
  if (nfresh != 0 && nfresh != sc->nfresh)
    return vfail(v, "%d of the batch's %d jobs are there", nfresh, sc->nfresh);
  if (op == OP_TICK) aspect(&a, nrun == 1, "the tick's run %s", nrun ? "there" : "not");
  if (op == OP_PROGRESS)
    aspect(&a, progress_there, "held-1's progress %s",
           progress_there ? "there" : "not");
  /* expire: the doomed job ended with crasher's claim, or both not. */
  if (op == OP_EXPIRE)
    aspect(&a, doomed_gone == 1, "the doomed job %s",
           doomed_gone ? "expired" : "there");
  /* The schedules and the policy. */
  if (!check_schedules(b, op, &a, v)) return false;
  jb_retry_policy pol;
  if (jb_board_get_retry_policy(&pol, b) != JB_OK)
    return vfail(v, "retry policy: %s", jb_errmsg());
  bool pol_new = op == OP_POLICY && same_policy(&pol, &policy_new);
  if (!pol_new && !same_policy(&pol, &policy_base))
    return vfail(v, "the retry policy is max %u, back-off %" PRId64 "..%" PRId64
                 " ms: neither the base board's nor the killed %s's", pol.max_attempts,
                 pol.backoff_ms, pol.backoff_max_ms, op_names[op]);
  if (op == OP_POLICY) aspect(&a, pol_new, "policy %s", pol_new ? "new" : "old");
  /* A repost's job is of corpse's name, recorded already: no new name. */
  if (!check_queues(b, op, sc, extra != NULL,
                    nfresh != 0 && op != OP_DEAD_REPOST, nrun != 0, cnt, &a, v))
    return false;
  jb_retention ret;
  if (jb_board_get_retention(&ret, NULL, b) != JB_OK)
    return vfail(v, "retention: %s", jb_errmsg());
  bool ret_new = op == OP_RETENTION && same_retention(&ret, &retain_new);
  if (!ret_new && !same_retention(&ret, &retain_base))
    return vfail(v, "the retention keeps %" PRId64 " dead letters: neither the base "
                 "board's nor the killed %s's", ret.dead_max, op_names[op]);
  if (op == OP_RETENTION)
    aspect(&a, ret_new, "retention %s", ret_new ? "new" : "old");
  /* The last check's record: none on the base board; check-record's,
   * whole, when it is there. */
  jb_check_record rec;
  int lrc = jb_board_last_check(&rec, b);
  if (lrc != JB_OK && lrc != JB_ENOTFOUND)
    return vfail(v, "the last check's record: %s", jb_errmsg());
  if (lrc == JB_OK && op != OP_CHECK_RECORD)
    return vfail(v, "a last check's record is there after the killed %s",
                 op_names[op]);
  if (lrc == JB_OK && (rec.problems != 0 || rec.moved != 0 || rec.jobs == 0 ||
                       rec.time_us <= 0 || rec.duration_us < 0))
    return vfail(v, "the last check's record is not the killed check's: "
                 "%" PRIu64 " problems, %" PRIu64 " moved, %" PRIu64 " jobs",
                 rec.problems, rec.moved, rec.jobs);
  if (op == OP_CHECK_RECORD)
    aspect(&a, lrc == JB_OK, "the check's record %s",
           lrc == JB_OK ? "there" : "not");
  if (a.there != 0 && a.there != a.n)
    return vfail(v, "the killed %s is torn: %d of its %d changes are there (%s)",
                 op_names[op], a.there, a.n, a.what);
  *applied = a.there != 0;
  /* Its events: all of them exactly when it is there (the next writer's
   * four after them). */
  uint64_t want_ev = (*applied ? (uint64_t)op_events[op] : 0) + (extra ? 4 : 0);
  if (cnt->since_base != want_ev)
    return vfail(v, "the change log holds %" PRIu64 " events since the base board, not %"
                 PRIu64 " (the killed %s %s%s)", cnt->since_base, want_ev, op_names[op],
                 *applied ? "there" : "not there", extra ? ", and the next writer's" : "");
  size_t nh = 0;
  if ((rc = jb_history_count(&nh, b)) != JB_OK || nh != HISTORY_KEPT)
    return vfail(v, "the history holds %zu records, not %d (%s)", nh,
                 HISTORY_KEPT, rc == JB_OK ? "ok" : jb_errmsg());
  return true;
}

/* The figures of jb_stats_read, the board's meta counters among them,
 * against a recount of the board (check_jobs's): the jobs by state, the
 * dead letters, the history kept and of the last hour by ending, the
 * change log's bounds; the events counted since the board was made equal
 * those in the log by type (it is never trimmed here), and the history
 * records counted by ending equal both the events of the endings that
 * have one and the newest record's place in the history. */
static bool check_stats(jb_board *b, const recount *cnt, verdict *v) {
  jb_stats st = JB_STATS_INIT;
  if (jb_stats_read(&st, b) != JB_OK) return vfail(v, "stats: %s", jb_errmsg());
  size_t due = 0;
  for (size_t i = 0; i < cnt->ndue; i++) due += cnt->due[i] <= st.now_us;
  jb_history_iter *hi = NULL;
  const jb_completion *c;
  size_t nh = 0;
  uint64_t hour[8] = {0}, newest = 0;
  int rc = jb_history_query(&hi, b, NULL);
  while (rc == JB_OK && (rc = jb_history_next(&c, hi)) == JB_OK && c != NULL) {
    if (nh++ == 0) newest = c->history_seq;
    if (st.now_us - c->completed_us <= INT64_C(3600000000)) hour[c->end & 7]++;
  }
  jb_history_close(hi);
  bool ok = true;
  char why[300] = "";
  const uint64_t *ev = st.events_total, *end = st.ends_total;
  uint64_t ends = 0;
  for (int e = 0; e < 8; e++) ends += end[e];
#define DIFF(cond, ...) \
  if (ok && !(cond)) ok = false, snprintf(why, sizeof why, __VA_ARGS__)
  DIFF(rc == JB_OK, "history: %s", jb_errmsg());
  DIFF(st.jobs == cnt->jobs, "jobs %zu, the board lists %zu", st.jobs, cnt->jobs);
  DIFF(st.by_state[JB_STATS_UNCLAIMED] == cnt->ready, "unclaimed %zu, the board lists %zu",
       st.by_state[JB_STATS_UNCLAIMED], cnt->ready);
  DIFF(st.by_state[JB_STATS_CLAIMED] == cnt->claimed, "claimed %zu, the board lists %zu",
       st.by_state[JB_STATS_CLAIMED], cnt->claimed);
  DIFF(st.by_state[JB_STATS_DELAYED] == cnt->delayed, "delayed %zu, the board lists %zu",
       st.by_state[JB_STATS_DELAYED], cnt->delayed);
  DIFF(st.delayed_due == due, "delayed and due %zu, the board lists %zu", st.delayed_due,
       due);
  DIFF(st.claims_bound + st.claims_leased + st.claims_plain == cnt->claimed,
       "claims by kind %zu + %zu + %zu, the board lists %zu claimed", st.claims_bound,
       st.claims_leased, st.claims_plain, cnt->claimed);
  DIFF(st.dead_letters == cnt->dead, "dead letters %zu, listed %zu", st.dead_letters,
       cnt->dead);
  DIFF(st.history == nh, "history %zu records, listed %zu", st.history, nh);
  for (int e = 0; e < 8; e++)
    DIFF(st.completed_1h[e] == hour[e], "%s in the last hour %" PRIu64 ", listed %" PRIu64,
         jb_end_name((jb_end)e), st.completed_1h[e], hour[e]);
  DIFF(st.log_first == cnt->log_first && st.log_next == cnt->log_next,
       "log %" PRIu64 "..%" PRIu64 ", read %" PRIu64 "..%" PRIu64, st.log_first,
       st.log_next, cnt->log_first, cnt->log_next);
  for (int t = 0; t < 16 && cnt->log_first == 1; t++)
    DIFF(ev[t] == cnt->by_type[t], "%s events counted %" PRIu64 ", the log holds %"
         PRIu64, jb_event_type_name((jb_event_type)t) ? jb_event_type_name((jb_event_type)t)
                                                      : "untyped",
         ev[t], cnt->by_type[t]);
  DIFF(ev[JB_EVENT_CONSUMED] == end[JB_END_CONSUMED] + end[JB_END_FAILED] &&
           ev[JB_EVENT_TRASHED] == end[JB_END_TRASHED] &&
           ev[JB_EVENT_REVOKED] == end[JB_END_REVOKED] &&
           ev[JB_EVENT_LOST] == end[JB_END_LOST] &&
           ev[JB_EVENT_CANCELLED] == end[JB_END_CANCELLED] &&
           ev[JB_EVENT_DEAD] == end[JB_END_DEAD] &&
           /* expired ends are counted at [8 & 7] (no job here expires
            * to the dead letters) */
           ev[JB_EVENT_DEADLINE] == end[JB_END_EXPIRED & 7],
       "endings counted (consumed %" PRIu64 ", failed %" PRIu64 ", trashed %" PRIu64
       ", cancelled %" PRIu64 ", dead %" PRIu64 ", expired %" PRIu64 ") differ from "
       "their events (consumed %" PRIu64 ", trashed %" PRIu64 ", cancelled %" PRIu64
       ", dead %" PRIu64 ", deadline %" PRIu64 ")",
       end[JB_END_CONSUMED], end[JB_END_FAILED], end[JB_END_TRASHED],
       end[JB_END_CANCELLED], end[JB_END_DEAD], end[JB_END_EXPIRED & 7],
       ev[JB_EVENT_CONSUMED], ev[JB_EVENT_TRASHED], ev[JB_EVENT_CANCELLED],
       ev[JB_EVENT_DEAD], ev[JB_EVENT_DEADLINE]);
  DIFF(ends == newest, "%" PRIu64 " history records counted, the newest is number %"
       PRIu64, ends, newest);
#undef DIFF
  jb_stats_clear(&st);
  return ok ? true : vfail(v, "jb_stats_read disagrees with the board: %s", why);
}

/* Check the board against the scenario; *applied: the killed operation is
 * there. `extra`: the next writer's job, which must be there (or NULL).
 * A board that jb_board_check finds damaged (its page accounting finds
 * the torn WRITEMAP meta) is still read for its jobs, so that a lost
 * acknowledged change is named as such, with the check's finding after. */
static bool check_board(jb_board *b, op_kind op, const scenario *sc,
                        const char *extra, bool *applied, verdict *v) {
  jb_check_stats st;
  memset(&st, 0, sizeof st);
  int rc = jb_board_check(&st, b, first_problem, v);
  if (rc != JB_OK && st.problems == 0) /* the check could not run */
    return v->why[0] ? false
                     : vfail(v, "jb_board_check: %s (%s)", jb_strerror(rc), jb_errmsg());
  char damage[sizeof v->why];
  snprintf(damage, sizeof damage, "%s", st.problems ? v->why : "");
  if (st.problems && !damage[0])
    snprintf(damage, sizeof damage, "check: %zu problems", (size_t)st.problems);
  v->why[0] = '\0';
  recount cnt;
  memset(&cnt, 0, sizeof cnt);
  bool ok = check_jobs(b, op, sc, extra, applied, &cnt, v) && check_stats(b, &cnt, v);
  if (!damage[0]) return ok;
  if (ok) return vfail(v, "%s", damage);
  char jobs[sizeof v->why];
  snprintf(jobs, sizeof jobs, "%s", v->why);
  return vfail(v, "%.300s; and %.280s", jobs, damage);
}

/* The next writer: post X, claim and consume it, post Y; *y gets Y. */
static bool next_writer(jb_board *b, char y[JB_UUID_STRLEN], verdict *v) {
  char x[JB_UUID_STRLEN];
  unsigned char d[4];
  jb_post p = post_of("next", d, 120);
  int rc;
  if ((rc = jb_job_post(x, b, &p)) != JB_OK)
    return vfail(v, "next writer: post: %s", jb_errmsg());
  if ((rc = jb_claim(NULL, b, x, VERIFIER, NULL)) != JB_OK)
    return vfail(v, "next writer: claim: %s", jb_errmsg());
  if ((rc = jb_consume(b, x, VERIFIER, 0, NULL)) != JB_OK)
    return vfail(v, "next writer: consume: %s", jb_errmsg());
  if ((rc = jb_job_post(y, b, &p)) != JB_OK)
    return vfail(v, "next writer: second post: %s", jb_errmsg());
  return true;
}

/* In a fresh process: "ok 0|1" (the op absent|there) or "FAIL why". */
static void verify_child(const char *dir, jb_durability mode, op_kind op,
                         const scenario *sc, int fd) {
  alarm(60);
  verdict v = {{0}};
  char out[700], y[JB_UUID_STRLEN];
  bool applied = false, again = false;
  /* Each stage is announced first, so a crash says where it happened. */
  dprintf(fd, "stage opening the board\n");
  jb_board *b = open_board(dir, mode, false);
  bool ok = b != NULL ? true : vfail(&v, "open: %s", jb_errmsg());
  if (ok) dprintf(fd, "stage checking the board\n");
  ok = ok && check_board(b, op, sc, NULL, &applied, &v);
  if (ok) dprintf(fd, "stage the next writer (the board passed its check)\n");
  ok = ok && next_writer(b, y, &v);
  if (ok) dprintf(fd, "stage checking after the next writer\n");
  ok = ok && check_board(b, op, sc, y, &again, &v);
  /* present for readers, then gone: never (the parent judges the rest) */
  if (ok && applied && !again)
    ok = vfail(&v, "the killed operation was there, and gone after the next write");
  if (ok) snprintf(out, sizeof out, "ok %d %d\n", applied, again);
  else snprintf(out, sizeof out, "FAIL %s\n", v.why);
  if (write(fd, out, strlen(out)) < 0) _exit(3);
  jb_board_close(b);
  _exit(ok ? 0 : 1);
}

/* Verify `dir` in a fresh process; *applied as check_board. */
/* *applied: the killed operation is there for readers; *later: after the
 * next writer's first write. */
static bool verify(const char *dir, jb_durability mode, op_kind op,
                   const scenario *sc, bool *applied, bool *later, char *why,
                   size_t why_len) {
  int p[2];
  if (pipe(p) != 0) die("pipe: %s", strerror(errno));
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    close(p[0]);
    verify_child(dir, mode, op, sc, p[1]);
  }
  close(p[1]);
  char all[2000], *buf = all, stage[200] = "";
  read_all(p[0], all, sizeof all);
  close(p[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  /* the stage lines, then the verdict */
  while (strncmp(buf, "stage ", 6) == 0 && strchr(buf, '\n')) {
    char *nl = strchr(buf, '\n');
    snprintf(stage, sizeof stage, "%.*s", (int)(nl - buf - 6), buf + 6);
    buf = nl + 1;
  }
  if (strncmp(buf, "ok ", 3) == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    *applied = buf[3] == '1';
    *later = buf[5] == '1';
    return true;
  }
  buf[strcspn(buf, "\n")] = '\0';
  if (strncmp(buf, "FAIL ", 5) == 0)
    snprintf(why, why_len, "%.600s", buf + 5);
  else if (WIFSIGNALED(st))
    snprintf(why, why_len, "the verifier died of signal %d (%s) %s", WTERMSIG(st),
             strsignal(WTERMSIG(st)), stage);
  else
    snprintf(why, why_len, "the verifier exited with %d: %.600s", WEXITSTATUS(st), buf);
  return false;
}

/* ------------------------------------------------------------- the tracee */

typedef struct {
  const char *dir;
  jb_durability mode;
  op_kind op;
  bool writemap;
  const scenario *sc;
} run_cfg;

static uint64_t win_begin, win_end;  /* the markers, in the tracees */
/* LMDB's calls that make up a transaction's body: the short form kills the
 * writer on entering each call it makes before mdb_txn_commit. */
static const char *const lmdb_calls[] = {
    "mdb_txn_begin",   "mdb_get",        "mdb_put",        "mdb_del",
    "mdb_cursor_open", "mdb_cursor_get", "mdb_cursor_put", "mdb_cursor_del",
    "mdb_txn_abort"};
#define NCALLS (sizeof lmdb_calls / sizeof lmdb_calls[0])
static uint64_t call_at[NCALLS]; /* their addresses, in the tracees */
static uint64_t commit_lo, commit_hi; /* mdb_txn_commit's code, in them */
static void find_commit(void);

/* The tracee: a fresh process (this program run again, without address
 * randomisation), so that every run starts from the same state. It tells
 * the tracer where its markers and mdb_txn_commit are, then stops. */
static void tracee_main(const run_cfg *c, int fd) {
  const char *secs = getenv(WRITER_SECONDS);
  writer_seconds = secs ? (time_t)strtoll(secs, NULL, 10) : 0;
  writer_clock = true;
  find_commit();
  dprintf(fd, "addr %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 "\n",
          (uint64_t)(uintptr_t)crash_step_window_begin,
          (uint64_t)(uintptr_t)crash_step_window_end, commit_lo, commit_hi);
  dprintf(fd, "calls");
  for (size_t i = 0; i < NCALLS; i++)
    dprintf(fd, " %" PRIx64, (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, lmdb_calls[i]));
  dprintf(fd, "\n");
  if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(90);
  raise(SIGSTOP);
  if (c->writemap) jb__store_test_writemap(true);
  jb_board *b = open_board(c->dir, c->mode, false);
  if (b == NULL) {
    dprintf(fd, "FAIL open: %s\n", jb_errmsg());
    _exit(91);
  }
  char out[BATCH][JB_UUID_STRLEN];
  memset(out, 0, sizeof out);
  crash_step_window_begin();
  int rc = run_op(b, c->op, out, c->sc);
  crash_step_window_end();
  /* Acknowledged: one line, one write(). */
  char line[ACK_MAX];
  int n = snprintf(line, sizeof line, "ack %d", rc);
  for (int i = 0; i < BATCH; i++)
    if (out[i][0]) n += snprintf(line + n, sizeof line - (size_t)n, " %s", out[i]);
  line[n++] = '\n';
  if (write(fd, line, (size_t)n) != n) _exit(92);
  _exit(rc == JB_OK ? 0 : 93);
}

/* ------------------------------------------------------------- the tracer */

/* An instruction: its address, and the stack pointer relative to the one
 * at the window's start (each tracee is forked at another stack depth). */
typedef struct {
  uint64_t rip, rsp;
} step_rec;

typedef struct {
  pid_t pid;
  int fd;          /* the tracee's report pipe (read end) */
  bool in_syscall; /* between a syscall-enter and -exit stop */
  uint64_t rng;    /* the fixed bytes given to getrandom */
  struct user_regs_struct regs;
  int status;      /* wait status once it ended */
  bool gone;
} tracee;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* getrandom returned `len` bytes at `addr` in the tracee: make them ours. */
static void fix_random(tracee *t, uint64_t addr, size_t len) {
  unsigned char buf[4096];
  while (len > 0) {
    size_t n = len < sizeof buf ? len : sizeof buf;
    for (size_t i = 0; i < n; i += 8) {
      uint64_t r = splitmix(&t->rng);
      memcpy(buf + i, &r, n - i < 8 ? n - i : 8);
    }
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};
    if (process_vm_writev(t->pid, &local, 1, &remote, 1, 0) != (ssize_t)n)
      die("writing the tracee's random bytes: %s", strerror(errno));
    addr += n, len -= n;
  }
}

static void get_regs(tracee *t) {
  if (ptrace(PTRACE_GETREGS, t->pid, NULL, &t->regs) != 0)
    die("PTRACE_GETREGS: %s", strerror(errno));
}

static void set_regs(tracee *t) {
  if (ptrace(PTRACE_SETREGS, t->pid, NULL, &t->regs) != 0)
    die("PTRACE_SETREGS: %s", strerror(errno));
}

static long peek(tracee *t, uint64_t addr) {
  errno = 0;
  long w = ptrace(PTRACE_PEEKTEXT, t->pid, (void *)(uintptr_t)addr, NULL);
  if (errno) die("PTRACE_PEEKTEXT %#" PRIx64 ": %s", addr, strerror(errno));
  return w;
}

static void poke(tracee *t, uint64_t addr, long w) {
  if (ptrace(PTRACE_POKETEXT, t->pid, (void *)(uintptr_t)addr, (void *)w) != 0)
    die("PTRACE_POKETEXT %#" PRIx64 ": %s", addr, strerror(errno));
}

static void wait_stop(tracee *t) {
  while (waitpid(t->pid, &t->status, 0) < 0)
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  if (WIFEXITED(t->status) || WIFSIGNALED(t->status)) t->gone = true;
}

static char self_exe[4096];
#define TRACEE_FD 100

/* Start the tracee (this program with --tracee, no address randomisation)
 * and wait for it to stop at its raise(SIGSTOP). */
static void spawn(tracee *t, const run_cfg *c) {
  memset(t, 0, sizeof *t);
  t->rng = 0x6a6f62626f617264ull; /* the same bytes in every run */
  int p[2];
  if (pipe(p) != 0) die("pipe: %s", strerror(errno));
  fflush(stdout);
  t->pid = fork();
  if (t->pid < 0) die("fork: %s", strerror(errno));
  if (t->pid == 0) {
    close(p[0]);
    if (dup2(p[1], TRACEE_FD) < 0) _exit(94);
    char op[8], mode[8];
    snprintf(op, sizeof op, "%d", (int)c->op);
    snprintf(mode, sizeof mode, "%d", (int)c->mode);
    if (personality(ADDR_NO_RANDOMIZE) == -1) _exit(95);
    char *args[7 + NBASE] = {self_exe, "--tracee", op, mode, c->writemap ? "1" : "0",
                             (char *)c->dir};
    for (int k = 0; k < NBASE; k++) args[6 + k] = (char *)c->sc->base[k];
    args[6 + NBASE] = NULL;
    execv(self_exe, args);
    _exit(96);
  }
  close(p[1]);
  t->fd = p[0];
  wait_stop(t);
  if (t->gone || !WIFSTOPPED(t->status) || WSTOPSIG(t->status) != SIGSTOP) {
    char buf[200];
    read_all(t->fd, buf, sizeof buf);
    if (WIFEXITED(t->status) && WEXITSTATUS(t->status) == 90) {
      printf("1..0 # SKIP ptrace is not allowed here (PTRACE_TRACEME failed)\n");
      exit(77);
    }
    if (WIFEXITED(t->status) && WEXITSTATUS(t->status) == 95) {
      printf("1..0 # SKIP address randomisation cannot be turned off here "
             "(personality(ADDR_NO_RANDOMIZE) refused)\n");
      exit(77);
    }
    die("the tracee did not stop (status %#x): %s", t->status, buf);
  }
  if (ptrace(PTRACE_SETOPTIONS, t->pid, NULL,
             (void *)(long)(PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD)) != 0)
    die("PTRACE_SETOPTIONS: %s", strerror(errno));
  /* Its addresses: the same in every run, or the runs cannot be compared. */
  char line[200];
  size_t n = 0;
  while (n < sizeof line - 1 && read(t->fd, line + n, 1) == 1 && line[n] != '\n') n++;
  line[n] = '\0';
  uint64_t a[4];
  if (sscanf(line, "addr %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64, &a[0], &a[1],
             &a[2], &a[3]) != 4)
    die("the tracee did not say where it is: '%s'", line);
  uint64_t calls[NCALLS];
  n = 0;
  while (n < sizeof line - 1 && read(t->fd, line + n, 1) == 1 && line[n] != '\n') n++;
  line[n] = '\0';
  char *cur = strncmp(line, "calls", 5) == 0 ? line + 5 : NULL;
  for (size_t i = 0; i < NCALLS; i++) {
    char *end = NULL;
    calls[i] = cur ? strtoull(cur, &end, 16) : 0;
    if (cur == NULL || end == cur || calls[i] == 0)
      die("the tracee did not say where LMDB's %s is: '%s'", lmdb_calls[i], line);
    cur = end;
  }
  if (win_begin == 0) {
    win_begin = a[0], win_end = a[1], commit_lo = a[2], commit_hi = a[3];
    memcpy(call_at, calls, sizeof call_at);
  } else if (win_begin != a[0] || win_end != a[1] || commit_lo != a[2] ||
             commit_hi != a[3] || memcmp(call_at, calls, sizeof call_at) != 0) {
    die("the tracee's addresses moved from run to run (address randomisation "
        "could not be turned off)");
  }
}

static void reap(tracee *t) {
  if (!t->gone) {
    kill(t->pid, SIGKILL);
    while (waitpid(t->pid, &t->status, 0) < 0 && errno == EINTR) {
    }
    t->gone = true;
  }
  close(t->fd);
}

/* Resume until a breakpoint's SIGTRAP (true) or the tracee's end (false).
 * Syscall stops on the way are handled: getrandom's bytes are replaced. */
static bool resume(tracee *t) {
  int sig = 0;
  for (;;) {
    if (ptrace(PTRACE_SYSCALL, t->pid, NULL, (void *)(long)sig) != 0)
      die("PTRACE_SYSCALL: %s", strerror(errno));
    sig = 0;
    wait_stop(t);
    if (t->gone) return false;
    int s = WSTOPSIG(t->status);
    if (s == (SIGTRAP | 0x80)) {
      t->in_syscall = !t->in_syscall;
      if (!t->in_syscall) {
        get_regs(t);
        if (t->regs.orig_rax == SYS_getrandom && (int64_t)t->regs.rax > 0)
          fix_random(t, t->regs.rdi, (size_t)t->regs.rax);
      }
      continue;
    }
    if (s == SIGTRAP) return true;
    sig = s; /* the tracee's own signal: deliver it */
  }
}

/* One instruction; t->regs holds the registers before and after. True
 * when it was a syscall. */
static bool step(tracee *t) {
  struct user_regs_struct before = t->regs;
  if (ptrace(PTRACE_SINGLESTEP, t->pid, NULL, NULL) != 0)
    die("PTRACE_SINGLESTEP: %s", strerror(errno));
  wait_stop(t);
  if (t->gone) die("the tracee ended while single-stepped (status %#x)", t->status);
  if (WSTOPSIG(t->status) != SIGTRAP)
    die("the tracee stopped with signal %d while single-stepped", WSTOPSIG(t->status));
  get_regs(t);
  /* A syscall instruction (0f 05) just ran: getrandom's bytes are ours. */
  if (t->regs.rip != before.rip + 2 || (peek(t, before.rip) & 0xffff) != 0x050f)
    return false;
  if (before.rax == SYS_getrandom && (int64_t)t->regs.rax > 0)
    fix_random(t, before.rdi, (size_t)t->regs.rax);
  return true;
}

/* Run to the `count`-th execution of `addr` (from now on): stopped before
 * it. False if the tracee ended first. */
static bool run_to(tracee *t, uint64_t addr, size_t count) {
  long orig = peek(t, addr);
  long trap = (orig & ~0xffL) | 0xcc;
  for (size_t hits = 0;;) {
    poke(t, addr, trap);
    if (!resume(t)) return false;
    get_regs(t);
    if (t->regs.rip != addr + 1)
      die("unexpected SIGTRAP at %#llx (breakpoint at %#" PRIx64 ")",
          (unsigned long long)t->regs.rip, addr);
    poke(t, addr, orig);
    t->regs.rip = addr;
    set_regs(t);
    if (++hits == count) return true;
    step(t);
  }
}


/* The tracees' vDSO: its clock_gettime loops until it reads the clock
 * undisturbed, as many times as the timing of the run makes it, so it is
 * never recorded instruction by instruction: a call into it is run to its
 * return as one step (step_over). */
static uint64_t vdso_lo, vdso_hi;

static void find_vdso(pid_t pid) {
  char name[64], line[1024];
  snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(name, "r");
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "[vdso]"))
      sscanf(line, "%" SCNx64 "-%" SCNx64, &vdso_lo, &vdso_hi);
  if (f) fclose(f);
}

/* One step of a recording: an instruction, or a whole call into the vDSO
 * (run to its return address). True when it was a syscall. */
static bool step_over(tracee *t) {
  bool sys = step(t);
  if (t->regs.rip >= vdso_lo && t->regs.rip < vdso_hi) {
    uint64_t ret = (uint64_t)peek(t, t->regs.rsp);
    if (!run_to(t, ret, 1)) die("the tracee ended in the vDSO (status %#x)", t->status);
  }
  return sys;
}

/* -------------------------------------------------------- recorded run */

enum {
  F_OWN = 1,     /* mdb_txn_commit's own code */
  F_SYSCALL = 2, /* a syscall instruction inside mdb_txn_commit */
  F_META = 4,    /* it changed the data file's meta pages */
  F_KEY = 8,     /* a kill point of the short form whatever k is */
  F_DONE = 16,   /* killed there */
};

typedef struct {
  bool whole;         /* from the window's start; else from mdb_txn_commit's */
  bool calls;         /* not every instruction: the entries of LMDB's calls
                         before mdb_txn_commit (record_calls) */
  step_rec *steps;
  size_t n;
  uint32_t *occ;      /* occ[i]: how many times steps[i].rip ran up to i */
  size_t ncommits;    /* calls of mdb_txn_commit in the window: the last is
                         the transaction's own (a gathered group's writes
                         first commit child transactions into it) */
  size_t commit_in;   /* first instruction of that commit (n if none) */
  size_t commit_out;  /* first after it returned (n if none) */
  size_t first_write; /* its first syscall (n if none) */
  uint8_t *flags;     /* F_* per instruction */
  size_t ndense;      /* instructions of mdb_txn_commit's own code */
  size_t meta_first, meta_last; /* those that changed the meta pages */
  char ack[ACK_MAX];
} recording;

static void find_commit(void) {
  void *f = dlsym(RTLD_DEFAULT, "mdb_txn_commit");
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (f == NULL || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL)
    die("cannot find mdb_txn_commit's code (dlsym/dladdr1)");
  commit_lo = (uint64_t)(uintptr_t)f;
  commit_hi = commit_lo + sym->st_size;
}

/* The tracees' mappings (the same in every run), to name addresses. */
typedef struct {
  uint64_t lo, hi, off;
  char path[512];
} mapping;
static mapping tmaps[512];
static int ntmaps;

static int read_maps(pid_t pid, mapping *m, int max) {
  char name[64], line[1024];
  snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(name, "r");
  int n = 0;
  while (f && n < max && fgets(line, sizeof line, f)) {
    mapping x = {0};
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %511s", &x.lo,
               &x.hi, &x.off, x.path) == 4 && x.path[0] == '/')
      m[n++] = x;
  }
  if (f) fclose(f);
  return n;
}

/* "liblmdb.so.0: mdb_txn_commit+3406" for an address of the tracees: the
 * same file and offset in this process, named by dladdr. */
static void where(uint64_t addr, char *out, size_t len) {
  snprintf(out, len, "%#" PRIx64, addr);
  const mapping *t = NULL;
  for (int i = 0; i < ntmaps; i++)
    if (addr >= tmaps[i].lo && addr < tmaps[i].hi) t = &tmaps[i];
  if (t == NULL) return;
  uint64_t fo = addr - t->lo + t->off;
  const char *base = strrchr(t->path, '/') + 1;
  snprintf(out, len, "%s+%#" PRIx64, base, fo);
  static mapping self[512];
  int ns = read_maps(getpid(), self, 512);
  for (int i = 0; i < ns; i++) {
    if (strcmp(self[i].path, t->path) != 0 || fo < self[i].off ||
        fo >= self[i].off + (self[i].hi - self[i].lo))
      continue;
    Dl_info info;
    void *local = (void *)(uintptr_t)(self[i].lo + fo - self[i].off);
    if (dladdr(local, &info) && info.dli_sname)
      snprintf(out, len, "%s: %s+%" PRIu64, base, info.dli_sname,
               (uint64_t)((uintptr_t)local - (uintptr_t)info.dli_saddr));
    return;
  }
}

/* Open-addressing count of executions per address. */
typedef struct {
  uint64_t *key;
  uint32_t *val;
  size_t cap;
} counter;

static uint32_t *count_slot(counter *c, uint64_t k) {
  size_t i = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (c->cap - 1);
  while (c->key[i] && c->key[i] != k) i = (i + 1) & (c->cap - 1);
  c->key[i] = k;
  return &c->val[i];
}

/* The tracee's map of the data file's two meta pages (0 if not found). */
static uint64_t meta_map(pid_t pid) {
  static mapping m[512];
  int n = read_maps(pid, m, 512);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(m[i].path);
    if (len >= 9 && strcmp(m[i].path + len - 9, "/data.mdb") == 0 && m[i].off == 0)
      return m[i].lo;
  }
  return 0;
}

#define META_BYTES 8192 /* two pages of 4 KiB */

static void read_meta(tracee *t, uint64_t at, unsigned char *buf) {
  struct iovec local = {buf, META_BYTES}, remote = {(void *)(uintptr_t)at, META_BYTES};
  if (process_vm_readv(t->pid, &local, 1, &remote, 1, 0) != META_BYTES)
    die("reading the tracee's meta pages: %s", strerror(errno));
}

/* Bring a fresh tracee to the recording's first instruction: the window's
 * start, or the transaction's own call of mdb_txn_commit (the last in the
 * window). */
static void reach_start(tracee *t, const recording *r) {
  if (!run_to(t, win_begin, 1))
    die("the tracee ended before the window (status %#x)", t->status);
  if (!r->whole && !run_to(t, commit_lo, r->ncommits))
    die("the tracee ended before mdb_txn_commit (status %#x)", t->status);
}

/* Single-step one run through the window (or from the commit on). Inside mdb_txn_commit, note its
 * syscalls and the instructions after which the meta pages (read through
 * the tracee's map of the data file) differ: a pwrite without WRITEMAP,
 * the stores into the map with it. */
static void record_run(const run_cfg *c, recording *r, bool whole, size_t ncommits) {
  memset(r, 0, sizeof *r);
  r->whole = whole;
  r->ncommits = ncommits;
  size_t entries = 0, want = whole ? ncommits : 1; /* the commit's call */
  tracee t;
  spawn(&t, c);
  reach_start(&t, r);
  size_t cap = 1 << 16;
  r->steps = malloc(cap * sizeof *r->steps);
  r->flags = malloc(cap);
  if (ntmaps == 0) ntmaps = read_maps(t.pid, tmaps, 512), find_vdso(t.pid);
  uint64_t meta_at = meta_map(t.pid);
  if (meta_at == 0) die("the tracee has no map of data.mdb");
  static unsigned char meta[2][META_BYTES];
  read_meta(&t, meta_at, meta[0]);
  uint64_t commit_ret = 0, commit_rsp = 0, sp0 = t.regs.rsp;
  r->commit_in = r->commit_out = r->first_write = SIZE_MAX;
  r->meta_first = r->meta_last = SIZE_MAX;
  while (t.regs.rip != win_end) {
    if (r->n == cap) {
      if (cap >= MAX_STEPS) die("more than %zu instructions in the window", cap);
      cap *= 2;
      r->steps = realloc(r->steps, cap * sizeof *r->steps);
      r->flags = realloc(r->flags, cap);
    }
    if (r->steps == NULL || r->flags == NULL) die("out of memory");
    uint64_t rip = t.regs.rip;
    size_t i = r->n++;
    r->steps[i] = (step_rec){rip, t.regs.rsp - sp0};
    r->flags[i] = rip >= commit_lo && rip < commit_hi ? F_OWN : 0;
    if (rip == commit_lo && ++entries == want) {
      r->commit_in = i;
      commit_rsp = t.regs.rsp;
      commit_ret = (uint64_t)peek(&t, commit_rsp);
    }
    if (commit_ret && rip == commit_ret && t.regs.rsp == commit_rsp + 8 &&
        r->commit_out == SIZE_MAX)
      r->commit_out = i;
    bool in_commit = r->commit_in != SIZE_MAX && r->commit_out == SIZE_MAX;
    bool sys = step_over(&t);
    if (!in_commit) continue;
    if (sys) {
      r->flags[i] |= F_SYSCALL;
      if (r->first_write == SIZE_MAX) r->first_write = i;
    }
    read_meta(&t, meta_at, meta[1]);
    if (memcmp(meta[0], meta[1], META_BYTES) != 0) {
      r->flags[i] |= F_META;
      if (r->meta_first == SIZE_MAX) r->meta_first = i;
      r->meta_last = i;
      memcpy(meta[0], meta[1], META_BYTES);
    }
  }
  /* Let it finish and acknowledge. */
  if (resume(&t)) die("unexpected SIGTRAP after the window");
  read_all(t.fd, r->ack, sizeof r->ack);
  reap(&t);
  if (!WIFEXITED(t.status) || WEXITSTATUS(t.status) != 0)
    die("the recorded %s failed (status %#x): %s", op_names[c->op], t.status, r->ack);
  if (op_no_commit(c->op)) { /* the whole window is before a commit */
    if (r->commit_in != SIZE_MAX)
      die("the recorded %s went through mdb_txn_commit", op_names[c->op]);
    r->commit_in = r->commit_out = r->n;
  }
  if (r->commit_in == SIZE_MAX || r->commit_out == SIZE_MAX)
    die("the recorded %s never went through mdb_txn_commit", op_names[c->op]);
  if (r->meta_first == SIZE_MAX && !op_no_commit(c->op))
    die("the recorded %s's commit never changed the meta pages", op_names[c->op]);
  if (r->first_write == SIZE_MAX) r->first_write = r->n;
  /* mdb_txn_commit's own code in the transaction's commit (not in the
   * child commits before it) */
  for (size_t i = r->commit_in; i < r->commit_out; i++) r->ndense += r->flags[i] & F_OWN;
  /* The short form's key points: every instruction from two before the
   * first change of the meta pages to two after the last, and the
   * instructions just before and after each syscall of the commit. */
  for (size_t i = 0; i < r->n; i++) {
    bool near_meta = i + 2 >= r->meta_first && i <= r->meta_last + 3;
    bool near_sys = (r->flags[i] & F_SYSCALL) || (i > 0 && (r->flags[i - 1] & F_SYSCALL));
    if (near_meta || near_sys) r->flags[i] |= F_KEY;
  }
  /* how often each address ran up to each instruction */
  counter cnt = {NULL, NULL, 1};
  while (cnt.cap < r->n * 2 + 16) cnt.cap <<= 1;
  cnt.key = calloc(cnt.cap, sizeof *cnt.key);
  cnt.val = calloc(cnt.cap, sizeof *cnt.val);
  r->occ = malloc(r->n * sizeof *r->occ);
  if (!cnt.key || !cnt.val || !r->occ) die("out of memory");
  for (size_t i = 0; i < r->n; i++) r->occ[i] = ++*count_slot(&cnt, r->steps[i].rip);
  free(cnt.key);
  free(cnt.val);
}

static void free_recording(recording *r) {
  free(r->steps);
  free(r->occ);
  free(r->flags);
}

/* The entries of the LMDB calls the writer makes in the window before
 * the transaction's commit, in order (a breakpoint on each; the run is
 * not single-stepped), and how many times it calls mdb_txn_commit there
 * (r->ncommits): the transaction's own commit is the last, and the
 * earlier ones (a gathered group's child transactions) are kill points
 * too, as the entries of the calls are. */
static void record_calls(const run_cfg *c, recording *r) {
  memset(r, 0, sizeof *r);
  r->whole = r->calls = true;
  tracee t;
  spawn(&t, c);
  reach_start(&t, r);
  enum { COMMIT = NCALLS, END = NCALLS + 1 };
  uint64_t sp0 = t.regs.rsp, at[END + 1];
  long orig[END + 1];
  memcpy(at, call_at, sizeof call_at);
  at[COMMIT] = commit_lo;
  at[END] = win_end;
  for (size_t k = 0; k <= END; k++) {
    orig[k] = peek(&t, at[k]);
    poke(&t, at[k], (orig[k] & ~0xffL) | 0xcc);
  }
  size_t cap = 0, last_commit = SIZE_MAX;
  uint32_t hits[COMMIT + 1] = {0};
  for (;;) {
    if (!resume(&t)) die("the tracee ended in the window (status %#x)", t.status);
    get_regs(&t);
    size_t k = 0;
    while (k <= END && at[k] != t.regs.rip - 1) k++;
    if (k > END) die("unexpected SIGTRAP at %#llx", (unsigned long long)t.regs.rip);
    if (k == END) break;
    if (r->n == cap) {
      cap = cap ? cap * 2 : 64;
      r->steps = realloc(r->steps, cap * sizeof *r->steps);
      r->occ = realloc(r->occ, cap * sizeof *r->occ);
      if (r->steps == NULL || r->occ == NULL) die("out of memory");
    }
    if (k == COMMIT) last_commit = r->n;
    r->steps[r->n] = (step_rec){at[k], t.regs.rsp - sp0};
    r->occ[r->n++] = ++hits[k];
    poke(&t, at[k], orig[k]);
    t.regs.rip = at[k];
    set_regs(&t);
    step(&t);
    poke(&t, at[k], (orig[k] & ~0xffL) | 0xcc);
  }
  reap(&t);
  /* An operation that writes nothing has no commit: every call is before
   * it. */
  if (op_no_commit(c->op) && last_commit == SIZE_MAX) last_commit = r->n;
  if (last_commit == SIZE_MAX)
    die("the recorded %s never went through mdb_txn_commit", op_names[c->op]);
  r->ncommits = hits[COMMIT];
  r->n = last_commit; /* the calls before the transaction's commit */
  r->commit_in = r->commit_out = r->first_write = r->n; /* all before it */
  r->meta_first = r->meta_last = SIZE_MAX;
  r->flags = calloc(r->n + 1, 1);
  if (r->flags == NULL) die("out of memory");
}

/* The cheapest way to stand before instruction i: a breakpoint at some
 * j <= i hit occ[j] times, then i - j single steps. */
static size_t anchor(const recording *r, size_t i) {
  if (r->calls) return i;
  size_t best = i;
  uint64_t best_cost = (uint64_t)r->occ[i] * TRAP_COST;
  for (size_t j = i; j-- > 0;) {
    uint64_t walk = i - j;
    if (walk >= best_cost) break;
    uint64_t cost = (uint64_t)r->occ[j] * TRAP_COST + walk;
    if (cost < best_cost) best = j, best_cost = cost;
  }
  return best;
}

/* A fresh tracee on a fresh copy, killed before instruction i. */
static void kill_at(const run_cfg *c, const recording *r, size_t i) {
  tracee t;
  spawn(&t, c);
  reach_start(&t, r);
  uint64_t sp0 = t.regs.rsp;
  size_t j = anchor(r, i);
  if ((j > 0 || r->calls) && !run_to(&t, r->steps[j].rip, r->occ[j]))
    die("kill point %zu: the tracee ended before it (status %#x)", i, t.status);
  for (size_t s = j; s < i; s++) step_over(&t);
  char at[200];
  where(r->steps[i].rip, at, sizeof at);
  if (t.regs.rip != r->steps[i].rip || t.regs.rsp - sp0 != r->steps[i].rsp) {
    char aj[200];
    where(r->steps[j].rip, aj, sizeof aj);
    die("kill point %zu: the run took another path than the recorded one "
        "(at %#llx sp %#llx, recorded %s sp %#" PRIx64 "; reached through "
        "execution %u of %s)",
        i, (unsigned long long)t.regs.rip, (unsigned long long)(t.regs.rsp - sp0),
        at, r->steps[i].rsp, r->occ[j], aj);
  }
  kill(t.pid, SIGKILL);
  while (waitpid(t.pid, &t.status, 0) < 0 && errno == EINTR) {
  }
  t.gone = true;
  char buf[200];
  read_all(t.fd, buf, sizeof buf);
  reap(&t);
  if (!WIFSIGNALED(t.status) || WTERMSIG(t.status) != SIGKILL)
    die("kill point %zu: the tracee did not die of SIGKILL (status %#x)", i, t.status);
  if (buf[0]) die("kill point %zu: killed, but it acknowledged: %s", i, buf);
}

/* ----------------------------------------------------------- the sweeps */

/* The short form's time for one op and mode, key points included: the
 * first nine ops share 45 s (5/3 s each); each newer one, whose
 * transaction is as short, gets 1.4 s (its key points and LMDB calls take
 * about 1 s), so that they add under a minute to make check; the six of
 * names as queues, whose commits are as short again, 0.8 s (mostly their
 * key points: about 20 s in all). --budget scales them all. */
static double op_share(int op) {
  return op < OP_RETRY ? 45.0 / 27 : op < OP_PAUSE ? 1.4 : 0.8;
}

typedef struct {
  bool full;       /* every instruction of the window */
  bool whole;      /* the window from its start (else from the commit's) */
  size_t every;    /* 0: from the budget */
  double budget;   /* seconds, the short form's whole sweep (0: the sum of
                      the sweeps' shares) */
  double shares;   /* the sum of the shares of this run's sweeps */
  int ncombos;     /* op x mode sweeps in this run */
  int tests;
  int failed;
} sweep_opts;

typedef struct {
  size_t points, fails;
  size_t lost_ack;     /* failures that lost an acknowledged change */
  char first_why[1600]; /* the first failure (the first such loss if any) */
  size_t flip;       /* first kill point where the op is there */
  size_t k;
  bool cut; /* the budget ran out before every k-th instruction */
  size_t lag, first_lag; /* readers saw the change only after the next write */
  double secs, per_kill;
} sweep_result;

static void scenario_fresh(scenario *sc, const char *ack) {
  sc->nfresh = 0;
  const char *p = strchr(ack, ' ');
  if (p) p = strchr(p + 1, ' ');
  while (p && sc->nfresh < BATCH && strlen(p + 1) >= 36) {
    memcpy(sc->fresh[sc->nfresh], p + 1, 36);
    sc->fresh[sc->nfresh][36] = '\0';
    sc->nfresh++;
    p = strchr(p + 1, ' ');
  }
}

/* A process that has the board open across the kill, as a board's other
 * workers would: the lock file is then not reset when the verifier opens
 * the board (it is when every process that had it open is gone), and the
 * next writer takes LMDB's dead-owner path of the writer's robust mutex.
 * Returns its pid; closing *release ends it. */
static pid_t bystander_start(const char *dir, jb_durability mode, int *release) {
  int up[2], hold[2];
  if (pipe(up) != 0 || pipe(hold) != 0) die("pipe: %s", strerror(errno));
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    close(up[0]);
    close(hold[1]);
    alarm(120);
    jb_board *b = open_board(dir, mode, false);
    char ch = b ? 'r' : 'x';
    if (write(up[1], &ch, 1) != 1) _exit(2);
    while (read(hold[0], &ch, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(up[1]);
  close(hold[0]);
  char ch = 0;
  while (read(up[0], &ch, 1) < 0 && errno == EINTR) {
  }
  close(up[0]);
  if (ch != 'r') die("the bystander could not open the board");
  *release = hold[1];
  return pid;
}

static void bystander_end(pid_t pid, int release) {
  close(release);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* One kill point: kill, verify, judge. True when it passed. */
static bool one_point(const run_cfg *c, recording *r, const char *base,
                      scenario *sc, size_t i, size_t ordinal, sweep_result *res) {
  r->flags[i] |= F_DONE;
  fresh_copy(base, c->dir);
  /* Every second kill point is verified in another durability; every
   * second pair has a bystander (never with WRITEMAP, which LMDB forbids
   * mixing with other processes' maps). */
  jb_durability vm = ordinal % 2 ? (jb_durability)((c->mode + 1) % 3) : c->mode;
  bool by = !c->writemap && (ordinal / 2) % 2 == 1;
  int release = -1;
  pid_t bpid = by ? bystander_start(c->dir, c->mode, &release) : 0;
  kill_at(c, r, i);
  bool applied = false, later = false;
  char why[700] = "";
  bool ok = verify(c->dir, vm, c->op, sc, &applied, &later, why, sizeof why);
  if (by) bystander_end(bpid, release);
  if (ok && i < r->commit_in && later)
    ok = false, snprintf(why, sizeof why, "the operation is there, killed before mdb_txn_commit");
  if (ok && i >= r->commit_out && !applied)
    ok = false, snprintf(why, sizeof why, "the operation is lost, killed after mdb_txn_commit returned");
  if (ok && !applied && later) {
    /* Readers did not see it, the next writer did. LMDB publishes a commit
     * to readers (the lock file's txnid) after writing its meta page: a
     * writer killed in between leaves, while other processes keep the lock
     * file, a commit that readers see only once the next writer has
     * recovered the dead writer's mutex. Allowed there, and counted. */
    bool lmdb_window = by && r->meta_first != SIZE_MAX && i > r->meta_first &&
                       i < r->commit_out;
    if (!lmdb_window)
      ok = false, snprintf(why, sizeof why, "the operation was not there for readers, "
                           "and there after the next write");
    else if (res->lag++ == 0)
      res->first_lag = i;
  }
  res->points++;
  if (ok && later && res->flip == SIZE_MAX) res->flip = i;
  static double last_note;
  if (now_s() - last_note > 60) { /* long runs say how far they are */
    if (last_note > 0)
      printf("# ... %s/%s%s: %zu kill points done, at instruction %zu of %zu\n",
             op_names[c->op], jb_durability_name(c->mode), c->writemap ? "+WRITEMAP" : "",
             res->points, i, r->n);
    last_note = now_s();
  }
  if (!ok) {
    res->fails++;
    bool lost = strstr(why, "acknowledged") != NULL;
    char at[200];
    where(r->steps[i].rip, at, sizeof at);
    if (res->fails == 1 || (lost && res->lost_ack == 0))
      snprintf(res->first_why, sizeof res->first_why, "kill point %zu of %zu at %s "
               "(verified in %s): %s", i, r->n, at, jb_durability_name(vm), why);
    res->lost_ack += lost;
    if (verbose || (!c->writemap && res->fails <= 5))
      printf("# %s/%s%s: kill point %zu at %s (verified in %s): %s\n",
             op_names[c->op], jb_durability_name(c->mode), c->writemap ? "+WRITEMAP" : "",
             i, at, jb_durability_name(vm), why);
  }
  return ok;
}

/* Points are visited coarse to fine (bit-reversed order), so that a run
 * stopped by its deadline is still spread evenly. */
static size_t spread_bits(size_t m) {
  size_t bits = 0;
  while (((size_t)1 << bits) < m) bits++;
  return bits;
}

static size_t spread(size_t x, size_t bits) {
  size_t j = 0;
  for (size_t b = 0; b < bits; b++) j |= ((x >> b) & 1) << (bits - 1 - b);
  return j;
}

static void sweep(const run_cfg *c0, const char *base, const char *work, scenario *sc,
                  sweep_opts *o, bool key_only, sweep_result *res) {
  run_cfg c = *c0;
  c.dir = work;
  c.sc = sc;
  memset(res, 0, sizeof *res);
  res->flip = SIZE_MAX;
  double t0 = now_s();
  recording r, rc;
  /* The LMDB calls first (where the transaction's own commit is), then
   * the instructions. */
  fresh_copy(base, work);
  record_calls(&c, &rc);
  fresh_copy(base, work);
  bool nocommit = op_no_commit(c.op);
  record_run(&c, &r, o->whole || o->full || nocommit, rc.ncommits);
  double rec_secs = now_s() - t0;
  sc->nfresh = 0;
  if (c.op == OP_POST || c.op == OP_BATCH || c.op == OP_POST_UNIQUE ||
      c.op == OP_DEAD_REPOST)
    scenario_fresh(sc, r.ack);
  /* retry: the due time the recorded run acknowledged, within the policy's
   * back-off and its jitter (+-20 %) of the writer's clock; every run
   * draws the same jitter (its random bytes are fixed). */
  if (c.op != OP_RUN_NOW) sc->due_us = 0; /* the delayed board's is kept */
  sc->snoozed = c.op == OP_SNOOZE;
  if (c.op == OP_SNOOZE &&
      (sscanf(r.ack, "ack %*d %" SCNd64, &sc->due_us) != 1 ||
       sc->due_us != writer_now_us() + SNOOZE_MS * 1000))
    die("the recorded snooze's due time is not a day from the writer's "
        "clock: '%s'", r.ack);
  if (c.op == OP_RETRY) {
    int64_t d = policy_base.backoff_ms * 1000, w = writer_now_us();
    if (sscanf(r.ack, "ack %*d %" SCNd64, &sc->due_us) != 1 ||
        sc->due_us < w + d / 10 * 8 || sc->due_us > w + d / 10 * 12)
      die("the recorded retry's due time is not the back-off's: '%s'", r.ack);
  }
  /* The recorded run was acknowledged: its change must be there (an
   * operation that writes nothing: absent). */
  bool applied = false, later = false;
  char why[700] = "";
  if (!verify(work, c.mode, c.op, sc, &applied, &later, why, sizeof why) ||
      applied == nocommit || later == nocommit) {
    res->fails++;
    snprintf(res->first_why, sizeof res->first_why, "after the acknowledged %s: %s",
             op_names[c.op], why[0] ? why : nocommit ? "a change is there"
                                                     : "the change is not there");
    printf("# %s\n", res->first_why);
  }
  /* The key points first, then every k-th instruction. */
  size_t ordinal = 0, nkey = 0;
  double td = now_s();
  for (size_t i = 0; i < r.n; i++)
    if (r.flags[i] & F_KEY) nkey++, one_point(&c, &r, base, sc, i, ordinal++, res);
  /* Before the commit (short form): on entering each LMDB call of the
   * transaction's body. */
  size_t ncalls = 0, ncalls_points = 0, calls_failed = 0;
  double mine = op_share(c.op) * (o->budget > 0 ? o->budget / o->shares : 1);
  double deadline = t0 + mine;
  bool timed = !o->full && !o->every; /* the budget decides */
  if ((!r.whole || nocommit) && !key_only) {
    size_t failed = res->fails, before = res->points;
    size_t bits = spread_bits(rc.n);
    for (size_t x = 0; x < ((size_t)1 << bits); x++) {
      size_t i = spread(x, bits);
      if (i >= rc.n) continue;
      if (timed && now_s() > deadline) {
        res->cut = true;
        break;
      }
      one_point(&c, &rc, base, sc, i, ordinal++, res);
    }
    ncalls = rc.n;
    ncalls_points = res->points - before;
    calls_failed = res->fails - failed;
  }
  free_recording(&rc);
  double per = ordinal ? (now_s() - td) / (double)ordinal : 0.01;
  size_t k = 1;
  if (!key_only) {
    if (o->full) {
      k = 1;
    } else if (o->every) {
      k = o->every;
    } else {
      double left = mine - (now_s() - t0);
      double can = left > 0 ? left / per : 0;
      if (can < 10) can = 10; /* a few outside the key points */
      k = (size_t)((double)r.n / can) + 1;
    }
    size_t m = (r.n + k - 1) / k, bits = spread_bits(m);
    for (size_t x = 0; x < ((size_t)1 << bits); x++) {
      size_t j = spread(x, bits);
      if (j >= m || (r.flags[j * k] & F_DONE)) continue;
      if (timed && now_s() > deadline) {
        res->cut = true;
        break;
      }
      one_point(&c, &r, base, sc, j * k, ordinal++, res);
    }
  }
  res->k = key_only ? 0 : k;
  res->secs = now_s() - t0;
  res->per_kill = (now_s() - td) / (double)(ordinal ? ordinal : 1);
  /* Coverage of the commit from its first write syscall on (without
   * WRITEMAP, the data pages' pwrite; with it there is none: from the
   * commit's start), its callees included, and of its own code. */
  size_t from = r.first_write < r.commit_out ? r.first_write : r.commit_in;
  size_t ext = 0, ext_done = 0, own = 0, own_done = 0;
  for (size_t i = from; i < r.commit_out; i++) {
    bool done = (r.flags[i] & F_DONE) != 0;
    ext++, ext_done += done;
    if (r.flags[i] & F_OWN) own++, own_done += done;
  }
  char at[200] = "none", fw[64] = "none (WRITEMAP: no syscall)", m1[200], m2[200];
  if (res->flip != SIZE_MAX) where(r.steps[res->flip].rip, at, sizeof at);
  if (r.first_write < r.commit_out) snprintf(fw, sizeof fw, "%zu", r.first_write);
  snprintf(m1, sizeof m1, "none: no commit");
  snprintf(m2, sizeof m2, "none");
  if (r.meta_first != SIZE_MAX) {
    where(r.steps[r.meta_first].rip, m1, sizeof m1);
    where(r.steps[r.meta_last].rip, m2, sizeof m2);
  }
  const char *name = op_names[c.op], *mode = jb_durability_name(c.mode);
  const char *wm = c.writemap ? "+WRITEMAP" : "";
  if (nocommit)
    printf("# %s/%s%s: N=%zu instructions in the window (recorded in %.1f s); no "
           "commit: its write transaction is aborted\n", name, mode, wm, r.n, rec_secs);
  else
    printf("# %s/%s%s: N=%zu instructions %s (recorded in %.1f s); "
           "mdb_txn_commit runs %zu..%zu (%zu of them its own code), its first syscall "
           "at %s; the meta pages change at %zu (%s) .. %zu (%s)\n",
           name, mode, wm, r.n,
           r.whole ? "in the window" : "from mdb_txn_commit to the window's end",
           rec_secs, r.commit_in, r.commit_out, r.ndense, fw,
           r.meta_first, m1, r.meta_last, m2);
  if (key_only)
    printf("#   the %zu key points only (around the meta change and each syscall of the "
           "commit)\n", nkey);
  else if (k == 1)
    printf("#   k=1: every instruction\n");
  else
    printf("#   k=%zu: the %zu key points (around the meta change and each syscall of "
           "the commit) and one instruction in every %zu%s\n", k, nkey, k,
           o->every ? "" : res->cut ? " (k from the time budget, which ran out first)"
                            : " (k from the time budget)");
  if (ncalls)
    printf("#   and before mdb_txn_commit: killed on entering %zu of the %zu LMDB calls "
           "of the transaction%s (%zu failed)\n", ncalls_points, ncalls,
           ncalls_points < ncalls ? " (the budget ran out)" : "", calls_failed);
  if (rc.ncommits > 1)
    printf("#   the transaction's commit is the last of the writer's %zu calls of "
           "mdb_txn_commit; the %zu before it (a gathered group's child transactions) "
           "are among the LMDB calls\n", rc.ncommits, rc.ncommits - 1);
  if (res->lag) {
    char lag_at[200];
    where(r.steps[res->first_lag].rip, lag_at, sizeof lag_at);
    printf("#   readers' lag: %zu kill point%s with a bystander, between the meta "
           "page's write and mdb_txn_commit's return (the first: %zu, %s), left a "
           "commit that readers saw only after the next write\n", res->lag,
           res->lag == 1 ? "" : "s", res->first_lag, lag_at);
  }
  printf("#   verified in %s, every second kill point in %s; every second pair with "
         "a bystander%s\n", mode, jb_durability_name((jb_durability)((c.mode + 1) % 3)),
         c.writemap ? " (not with WRITEMAP)" : "");
  size_t in_rec = res->points - ncalls_points;
  char flip[32] = "none";
  if (res->flip != SIZE_MAX) snprintf(flip, sizeof flip, "%zu", res->flip);
  printf("#   kill points %zu: %zu = %.2f%% of the N recorded instructions (from the "
         "commit's first write syscall to its return %zu/%zu, its own code %zu/%zu), "
         "%zu on LMDB calls; the change is there from kill point %s (%s) on; %zu "
         "failed; %.1f s (%.1f ms per kill point: k=1 would take about %.0f s)\n",
         res->points, in_rec, 100.0 * (double)in_rec / (double)r.n, ext_done, ext, own_done,
         own, ncalls_points, flip, at, res->fails, res->secs, res->per_kill * 1e3,
         res->per_kill * (double)r.n);
  free_recording(&r);
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f) {
  fputs("usage: crash_step [--full | --whole] [--ops=LIST] [--modes=LIST]\n"
        "                  [--every=K] [--budget=SECONDS] [--no-demo | --demo-only] [-v]\n"
        "SIGKILL a writer at chosen instructions of a post, claim-next, consume,\n"
        "batch post, consume-claim, claim-many, consume-many, a gathered\n"
        "commit with a failing write, a publication, a retry (back-off, and to\n"
        "the dead letters), an abandon at the last attempt, a trash, a dead\n"
        "letter's requeue and purge, a cancel, a post\n"
        "with a unique key (free, and held: refused), a schedule's tick, add and\n"
        "remove, a retry policy's change, a progress report, a pause and resume\n"
        "of a name and of the board, claim-nexts by names and past a paused\n"
        "name, and a retention change (ptrace), in each durability, and\n"
        "check the board after each kill in a fresh process (tests/crash_step.c\n"
        "says what is checked).\n"
        "Every form kills at the key points: around the change of the meta pages\n"
        "and each syscall of the commit; then at every k-th instruction:\n"
        "  (default)     the short form of make check: of the instructions from\n"
        "                mdb_txn_commit's start to the window's end, k from\n"
        "                --budget (default: 5/3 s for each op and mode of\n"
        "                the first nine ops, 1.4 s for each newer one,\n"
        "                0.8 s for those of names as queues)\n"
        "  --whole       of the whole window (from before the transaction begins)\n"
        "  --full        every instruction of the whole window (k = 1), every op\n"
        "                and mode: the long form (hours; --ops/--modes pick parts)\n"
        "  --every=K     k fixed instead of from the budget\n"
        "  --ops=LIST    of post,claim-next,consume,batch,consume-claim,\n"
        "                claim-many,consume-many,gathered,publish,retry,\n"
        "                retry-dead,requeue,purge,cancel,post-unique,\n"
        "                post-held,tick,sched-add,sched-remove,policy,\n"
        "                abandon-dead,trash,pause,pause-board,resume,\n"
        "                resume-board,claim-names,claim-paused,\n"
        "                progress,retention,cap,cap-each,snooze,expire,\n"
        "                rate,claim-rated,rate-each,run-now,\n"
        "                dead-remove,check-record,dead-repost (default all)\n"
        "  --modes=LIST  of none,normal,full (default all)\n"
        "  --no-demo     skip the MDB_WRITEMAP demonstration\n"
        "  --demo-only   only the demonstration: a post in none with MDB_WRITEMAP\n"
        "                forced must lose an acknowledged job (fails if not); its\n"
        "                key points, or with --full every instruction\n"
        "  -v            print every failed kill point\n"
        "Boards go to /dev/shm if writable, else $TMPDIR or /tmp (CRASH_STEP_DIR\n"
        "overrides). Exit: 0 passed, 1 failed, 2 usage, 77 skipped.\n",
        f);
}

static bool in_list(const char *list, const char *name) {
  if (list == NULL) return true;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, name, n) == 0) return true;
    p += len + (p[len] == ',');
  }
  return false;
}

static bool list_ok(const char *list, const char *const *names, size_t n,
                    const char *what) {
  for (const char *p = list; p && *p;) {
    size_t len = strcspn(p, ",");
    bool found = false;
    for (size_t i = 0; i < n; i++)
      if (strlen(names[i]) == len && strncmp(p, names[i], len) == 0) found = true;
    if (!found) {
      fprintf(stderr, "crash_step: unknown %s '%.*s'\n", what, (int)len, p);
      return false;
    }
    p += len + (p[len] == ',');
  }
  return true;
}

int main(int argc, char **argv) {
  if (argc == 6 + NBASE && strcmp(argv[1], "--tracee") == 0) {
    scenario sc;
    memset(&sc, 0, sizeof sc);
    for (int k = 0; k < NBASE; k++)
      snprintf(sc.base[k], sizeof sc.base[k], "%s", argv[6 + k]);
    run_cfg c = {argv[5], (jb_durability)atoi(argv[3]), (op_kind)atoi(argv[2]),
                 strcmp(argv[4], "1") == 0, &sc};
    tracee_main(&c, TRACEE_FD);
  }
  sweep_opts o = {.budget = 0};
  /* Every writer's wall clock: a second after now, fixed for the run. */
  char secs[32];
  snprintf(secs, sizeof secs, "%lld", (long long)time(NULL) + 1);
  setenv(WRITER_SECONDS, secs, 1);
  const char *ops = NULL, *mlist = NULL;
  bool demo = true, only_demo = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    char *end;
    if (strcmp(a, "--full") == 0) o.full = true;
    else if (strcmp(a, "--whole") == 0) o.whole = true;
    else if (strncmp(a, "--ops=", 6) == 0) ops = a + 6;
    else if (strncmp(a, "--modes=", 8) == 0) mlist = a + 8;
    else if (strncmp(a, "--every=", 8) == 0) {
      o.every = strtoul(a + 8, &end, 10);
      if (*end || o.every == 0) {
        fprintf(stderr, "crash_step: --every needs a whole number above 0: %s\n", a + 8);
        return 2;
      }
    } else if (strncmp(a, "--budget=", 9) == 0) {
      o.budget = strtod(a + 9, &end);
      if (*end || !(o.budget > 0)) {
        fprintf(stderr, "crash_step: --budget needs seconds above 0: %s\n", a + 9);
        return 2;
      }
    } else if (strcmp(a, "--no-demo") == 0) demo = false;
    else if (strcmp(a, "--demo-only") == 0) only_demo = true;
    else if (strcmp(a, "-v") == 0) verbose = true;
    else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "crash_step: unknown argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  static const char *const mode_names[] = {"none", "normal", "full"};
  if (!list_ok(ops, op_names, OP_COUNT, "operation") ||
      !list_ok(mlist, mode_names, 3, "durability"))
    return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (readlink("/proc/self/exe", self_exe, sizeof self_exe - 1) <= 0)
    die("readlink /proc/self/exe: %s", strerror(errno));
  /* The boards live in memory when they can: a kill -9 leaves the page
   * cache as it was whatever the file system, and a disk's flushes would
   * only slow the sweep (the modes' syncs are still made). */
  const char *tmp = getenv("CRASH_STEP_DIR");
  if (tmp == NULL || *tmp == '\0')
    tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
  if (tmp == NULL || *tmp == '\0') tmp = "/tmp";
  char root[4096], base[4200], work[4200], baseq[4200], basep[4200], baser[4200];
  char based[4200], basel[4200], basesy[4200];
  snprintf(root, sizeof root, "%s/crash_step.XXXXXX", tmp);
  if (mkdtemp(root) == NULL) die("mkdtemp %s: %s", root, strerror(errno));
  snprintf(cleanup_root, sizeof cleanup_root, "%s", root);
  main_pid = getpid();
  atexit(cleanup);
  snprintf(base, sizeof base, "%s/base", root);
  snprintf(work, sizeof work, "%s/work", root);
  snprintf(baseq, sizeof baseq, "%s/base-queues", root);
  snprintf(basep, sizeof basep, "%s/base-paused", root);
  snprintf(based, sizeof based, "%s/base-doomed", root);
  snprintf(baser, sizeof baser, "%s/base-rated", root);
  snprintf(basel, sizeof basel, "%s/base-delayed", root);
  snprintf(basesy, sizeof basesy, "%s/base-synced", root);
  scenario sc;
  make_base(base, &sc);
  /* The boards of resume, resume-board and claim-paused (names as queues,
   * above), when they run. */
  scenario scq = sc, scp = sc;
  if (!only_demo && (in_list(ops, "resume") || in_list(ops, "resume-board") ||
                     in_list(ops, "claim-paused"))) {
    make_queue_base(base, baseq, false, &scq);
    scp = scq;
    make_queue_base(baseq, basep, true, &scp);
  }
  /* The board of expire. */
  scenario scd = sc;
  if (!only_demo && in_list(ops, "expire")) make_doomed_base(base, based, &scd);
  scenario scr = sc;
  if (!only_demo && in_list(ops, "claim-rated")) make_rated_base(base, baser, &scr);
  scenario scl = sc;
  if (!only_demo && in_list(ops, "run-now")) make_delayed_base(base, basel, &scl);
  scenario scs = sc;
  if (!only_demo && in_list(ops, "detach")) make_synced_base(base, basesy, &scs);
  printf("# crash_step: %s\n",
         o.full ? "full sweep (k = 1)" : o.whole ? "the whole window, every k-th instruction" : "short form (--full: every instruction)");

  o.ncombos = 0;
  for (int op = 0; op < OP_COUNT; op++)
    for (int m = 0; m < 3; m++)
      if (in_list(ops, op_names[op]) && in_list(mlist, jb_durability_name(modes[m])))
        o.ncombos++, o.shares += op_share(op);
  if (only_demo) o.ncombos = 0;
  double t0 = now_s();
  for (int op = 0; op < OP_COUNT && o.ncombos; op++)
    for (int m = 0; m < 3; m++) {
      if (!in_list(ops, op_names[op]) || !in_list(mlist, jb_durability_name(modes[m])))
        continue;
      run_cfg c = {NULL, modes[m], (op_kind)op, false, NULL};
      sweep_result res;
      bool q = op == OP_RESUME || op == OP_CLAIM_PAUSED, p = op == OP_RESUME_BOARD,
           r = op == OP_CLAIM_RATED, d = op == OP_EXPIRE, l = op == OP_RUN_NOW,
           y = op == OP_DETACH;
      held1_delayed = l;
      sweep(&c, q ? baseq : p ? basep : r ? baser : d ? based : l ? basel : y ? basesy : base,
            work, q ? &scq : p ? &scp : r ? &scr : d ? &scd : l ? &scl : y ? &scs : &sc, &o,
            false, &res);
      held1_delayed = false;
      o.tests++;
      if (res.fails) o.failed++;
      printf("%s %d - %s/%s: %zu kill points, none lost or tore a change%s%s\n",
             res.fails ? "not ok" : "ok", o.tests, op_names[op],
             jb_durability_name(modes[m]), res.points, res.fails ? ": " : "",
             res.fails ? res.first_why : "");
    }
  if (demo) {
    /* A post in none, the killed child mapping with MDB_WRITEMAP. */
    run_cfg c = {NULL, JB_DURABILITY_NONE, OP_POST, true, NULL};
    sweep_result res;
    sweep_opts d = o;
    /* the key points; with --full, every instruction of the window */
    sweep(&c, base, work, &sc, &d, !o.full, &res);
    o.tests++;
    if (res.lost_ack == 0) o.failed++;
    if (res.lost_ack)
      printf("# writemap demo: %zu of %zu kill points lost an acknowledged change; "
             "the first: %s\n", res.lost_ack, res.points, res.first_why);
    printf("%s %d - writemap demo: with MDB_WRITEMAP forced, the sweep %s\n",
           res.lost_ack ? "ok" : "not ok", o.tests,
           res.lost_ack ? "catches the loss of the acknowledged commit before the killed one"
                        : "found no loss: it would not catch what it guards against");
  }
  printf("1..%d\n# %d failed; %.1f s in all\n", o.tests, o.failed, now_s() - t0);
  return o.failed ? 1 : 0;
}
#endif
