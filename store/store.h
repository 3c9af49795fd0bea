/*
 * store.h - the LMDB schema and the transactions of a board.
 *
 * One environment per board directory, named databases ("tables"):
 *
 *   meta     "schema"   -> u32 (JB_SCHEMA_VERSION)
 *            "board_id" -> 16 bytes, random at creation
 *            (also "boot_id", "epoch", "signal": see env.c and wake.c)
 *            "setting." + key -> text (settings: store/mirror.c)
 *   jobs     uuid (16 bytes) -> jb_jobhdr + posting bytes
 *   ready    jobkey -> jb_readyrec (uuid, modified time): unclaimed jobs
 *   claims   jobkey -> jb_claimrec + owner bytes: claimed jobs
 *   trash    uuid -> jb_trashrec + owner bytes + posting bytes
 *   deadage  trashed_us (u64 BE) + uuid -> empty: the dead letters in the
 *            order they died (schema 10; store/retain.c)
 *   log      event sequence (u64 big-endian) -> jb_eventrec + owner bytes
 *   logtail  the newest events, as in `log` (schema 5; see below)
 *   quarantine  table byte + original key -> jb_quarrec + reason + value
 *            ('j' + uuid: a job check moved; 'r' + uuid: a listing the
 *            mirror refused, value its posting bytes)
 *   delayed  jobkey -> jb_delayrec: jobs not claimable before a due time
 *            (schema 8; "A job's life" below)
 *   due      due time (u64 BE, wall-clock microseconds) + jobkey -> empty:
 *            the delayed jobs in due order
 *   jobx     uuid -> jb_jobxrec + unique key + last reason: a job's
 *            attempts and the options it was posted with (schema 8),
 *            and (format 2, schema 10) the progress last reported
 *            and (format 3, schema 11) its snoozes and deadline to start
 *   expiry   deadline (u64 BE, wall-clock microseconds) + uuid -> empty:
 *            the jobs with a deadline to start, unclaimed so far, in
 *            deadline order (schema 11; store/expiry.c)
 *   unique   unique key -> uuid (16 bytes): the live job holding the key
 *   schedules  schedule name -> jb_schedrec + spec + job name + book name
 *            + details: periodic jobs ("Periodic jobs" below; schema 8)
 *
 * A jobkey is 9 bytes: the priority's rank (0 = VERY_HIGH .. 4 = VERY_LOW)
 * and then a big-endian u64 in one of two bands (schema 7):
 *  - a job Redis decides (published, or mirrored in from Redis): Redis's
 *    sequence (NS:sequence, its posting order there, whoever posted it)
 *    << 16 | a tie-breaker, top bit clear. Two jobs share a Redis sequence
 *    only across a loss of Redis's data; the later one takes the next
 *    free tie-breaker;
 *  - a job decided here (including one marked for publication whose post
 *    is not confirmed): 1 << 63 | its board sequence.
 * LMDB sorts keys bytewise, so walking `ready` in key order IS the
 * claim-next order: priority, then Redis's jobs in Redis's posting order,
 * then the board's own jobs not yet published, oldest first (they will be
 * published after everything Redis holds now). Merging the `ready` and
 * `claims` walks is the listing order of the whole board: no sort and no
 * separate ordering index. A job's key changes when its publication is
 * confirmed (it takes the sequence Redis gave it) and when the mirror
 * finds Redis listing it under another sequence (published again after
 * Redis lost its data): the job moves, nothing else changes.
 *
 * The board sequence of a job decided here is the change-log sequence of
 * its POSTED event (a Redis-decided job's sequence is Redis's).
 * Both must be strictly increasing across the board, and the log already
 * keeps the last one (its last key), so no counter is written anywhere:
 * a post touches jobs, ready and log; a claim ready, claims and log; a
 * consume jobs, claims and log. (No meta counter and no separate uuid
 * index: every extra table a transaction touches costs a page copy and a
 * free-list entry at commit; docs/DESIGN-NOTES.md, "Storage layout", has
 * what that measured.) Sequences therefore have gaps (the
 * claims and consumes between posts), as taskflow's Redis sequences do.
 *
 * The change log is two tables (schema 5): a write appends its events to
 * `logtail`, a table of at most a page, and a write that finds
 * JB_LOGTAIL_MOVE events there (or must trim the log) first moves them
 * all to the end of `log`. LMDB copies every page on the path from a
 * table's root to the leaf a write changes: `log` keeps 100,000 events by
 * default, three levels, so appending there cost three pages per commit;
 * the tail costs one, and the move three for JB_LOGTAIL_MOVE events
 * (DESIGN-NOTES, "Pages per commit"). Every key of `logtail` is above
 * every key of `log`; the two hold the log's events first .. next-1
 * together, and readers read `log` and then `logtail`.
 *
 * Invariants (verified by jb__store_check):
 *  - every job is in exactly one of `ready` and `claims`, under the jobkey
 *    its header names, and that entry names the job's uuid;
 *  - every `ready` and `claims` entry belongs to a job;
 *  - every local-band job's sequence is a log sequence already used: below
 *    the next; a job decided here is in the local band, one Redis decides
 *    in the Redis band, one marked for publication in either;
 *  - the log is never trimmed to empty (its last key gives the next
 *    sequence), so sequences never repeat;
 *  - every posting decodes, and names the uuid, priority and sequence that
 *    its keys say (the sequence only for a job decided locally: a job
 *    mirrored from Redis keeps Redis's posting bytes, whose sequence is
 *    Redis's, and gets the board's next sequence in its jobkey);
 *  - every `entities` record decodes (store/entities.c).
 * The posting bytes are immutable once written. The modified time lives in
 * the ready record (post / abandon time) or the claim record (claim time),
 * so no operation rewrites a posting.
 *
 * Every operation is one write transaction that touches only LMDB: callers
 * encode postings and take the time before it starts.
 *
 * Records are little-endian fixed-layout structs (a board is a host's
 * local file; it is not moved between architectures) with a format byte
 * first so later schemas can tell them apart.
 */
#ifndef JOBBOARD_STORE_H
#define JOBBOARD_STORE_H

#include "jobboard.h"
#include "base/error.h"
#include "base/util.h"
#include "codec/job.h"

#include <stdatomic.h>

#include <stdbool.h>
#include <stdint.h>

/* 2: claim records of format 2 (token, lease, holder process), the boot
 * epoch in meta, tables leases, holders and entities. A board of schema 1
 * is upgraded when it is first opened (its claims become plain claims
 * with token 0).
 * 3: the `history` table (store/history.h). A board of schema 2 is
 * upgraded when it is first opened: the table is made, empty.
 * 4: nothing new in the data; the number keeps out the jobboard releases
 * that mapped the board with MDB_WRITEMAP in durability none (LMDB forbids
 * mixing processes with and without it on one environment; see env.c).
 * Such a release refuses a board of schema 4 ("upgrade jobboard"). A board
 * of schema 3 is marked 4 when it is first opened for writing.
 * 5: the table `logtail` (the change log's newest events, above), and
 * no 'u' entries in `history` (history.h). A release of schema 4 would
 * take the next sequence from `log` alone and reuse the tail's, and find
 * no completion by uuid, so it must refuse such a board: the number does
 * that. A board of schema 4 is upgraded when it is first opened: the
 * table is made, empty (all its events stay in `log`), and the history's
 * 'u' entries are deleted.
 * 6: the table `histends` (the completion history's oldest and newest
 * records, history.h). A release of schema 5 would read only `history`
 * and miss the records kept there, and number the next record after
 * `history`'s last, so it must refuse such a board: the number does that.
 * A board of schema 5 (or older) is upgraded when it is first opened: the
 * table is made, empty (every record stays in `history`).
 * 7: jobkeys in two bands (below): Redis-decided jobs ordered by Redis's
 * sequence, before the jobs decided here. A release of schema 6 would take
 * a local key's top bit for part of its sequence, so it must refuse such a
 * board. A board of schema 6 (or older) is upgraded when it is first
 * opened: every job is moved to its band (env.c upgrade_jobkeys). */
/* 8: the tables delayed, due, jobx, unique and schedules, trash records
 * of format 2 (the dead letters), and job header flag JB_JOB_F_X. A release of
 * schema 7 would not see a delayed job in any index (check would call the
 * board damaged) nor keep a job's unique key or attempts, so it must
 * refuse such a board. A board of schema 7 is upgraded when it is first
 * opened: the tables are made, empty. */
/* 9: the board may use durability interval (store/steady.c): its writers
 * keep a snapshot of the last recorded flushed state, and after a reboot
 * the first opener puts that state back. A release of schema 8 would do
 * neither: its commits could rewrite the pages the record needs, and its
 * acknowledged full commits could be rolled back; so it must refuse such a
 * board. Nothing in the data changes: a board of schema 8 is upgraded when
 * first opened. */
/* 10: job names as queues (store/names.h): the tables `byname` (every
 * ready job under its name's lane and jobkey) and `queues` (the names
 * seen, by lane, and their controls), and the lane in the job header
 * (jb_jobhdr.lane, was padding). A release of schema 9 would leave
 * `byname` behind as jobs move, so a claim by name would miss jobs or
 * find gone ones, and it would claim the jobs of a paused name: it must
 * refuse such a board. A board of schema 9 (or older) is upgraded when it
 * is first opened: every job's header gets its lane and every ready job
 * its `byname` entry (env.c upgrade_lanes), one pass over the jobs. */
/* 10 (also): jobx records of format 2 (a claimant's progress: codec/job.h) and
 * the change-log event PROGRESS, whose record carries the percentage and
 * the message after the owner (jb_eventrec). A release of schema 9 would
 * call both malformed (check would quarantine nothing but report the
 * board damaged, and readers of the log would stop at such an event), so
 * it must refuse such a board. A board of schema 9 is upgraded as said
 * above. */
/* 10 (also): the table `deadage` (the dead letters in the order they died, for
 * retention: store/retain.c) and the retention setting in meta
 * ("setting.retention"). A release of schema 9 would add and delete dead
 * letters without their `deadage` entries, so retention would miss some
 * and check would call the board damaged: it must refuse such a board.
 * A board of schema 9 is upgraded when it is first opened: the table is
 * made and filled from `trash` (one entry per dead letter, env.c
 * upgrade_deadage), beside the lanes' pass. */
/* 11: jobx records of format 3 (snoozes and the deadline to start:
 * codec/job.h), the change-log events SNOOZED and DEADLINE, the history
 * end JB_END_EXPIRED and the table `expiry` (every job with a deadline to
 * start, in deadline order). A release of schema 10 would call format 3
 * records and the new events malformed, claim a job past its deadline
 * and leave `expiry` behind as jobs leave: it must refuse such a board.
 * A board of schema 10 (or older) is upgraded when it is first opened:
 * the table is made, empty (no job had a deadline). */
/* 12: schedule records of format 2 (a time zone and an overlap policy:
 * store/schedule.c). A release of schema 11 would call them malformed and
 * pass the schedules over (check would call the board damaged), so it
 * must refuse such a board. A board of schema 11 is upgraded when first
 * opened: nothing changes (format 1 records stay readable). */
#define JB_SCHEMA_VERSION 12u
#define JB_JOBKEY_LEN 9

/* Names of the LMDB databases, as stored in the environment. */
#define JB_DB_META "meta"
#define JB_DB_JOBS "jobs"
#define JB_DB_READY "ready"
#define JB_DB_CLAIMS "claims"
#define JB_DB_TRASH "trash"
#define JB_DB_LOG "log"
#define JB_DB_LOGTAIL "logtail" /* schema 5 */
#define JB_DB_QUARANTINE "quarantine"
#define JB_DB_LEASES "leases"
#define JB_DB_HOLDERS "holders"
#define JB_DB_ENTITIES "entities"
#define JB_DB_HISTORY "history" /* schema 3: store/history.h */
#define JB_DB_HISTENDS "histends" /* schema 6: store/history.h */
#define JB_DB_DELAYED "delayed"   /* schema 8 */
#define JB_DB_DUE "due"           /* schema 8 */
#define JB_DB_JOBX "jobx"         /* schema 8 */
#define JB_DB_UNIQUE "unique"     /* schema 8 */
#define JB_DB_SCHEDULES "schedules" /* schema 8: store/schedule.c */
#define JB_DB_BYNAME "byname"       /* schema 10: store/names.h */
#define JB_DB_QUEUES "queues"       /* schema 10: store/names.h */
#define JB_DB_EXPIRY "expiry"       /* schema 11: store/expiry.c */
#define JB_DB_DEADAGE "deadage"     /* schema 10: store/retain.c */

/* Change-log event types (the `log` table). */
enum {
  JB_EV_POSTED = 1,
  JB_EV_CLAIMED = 2,
  JB_EV_ABANDONED = 3,
  JB_EV_CONSUMED = 4,
  JB_EV_TRASHED = 5,
  JB_EV_REFRESHED = 6, /* a same-owner re-claim refreshed the claim's time */
  JB_EV_EXPIRED = 7,   /* a lapsed claim ended: the job is ready again */
  JB_EV_EXTENDED = 8,  /* the owner extended its lease */
  JB_EV_REVOKED = 9,   /* check moved it to quarantine: it left the board */
  JB_EV_LOST = 10,     /* Redis lost it: it left the board (schema 7) */
  JB_EV_CANCELLED = 11, /* cancelled: it left the board (schema 8) */
  JB_EV_DEAD = 12,      /* moved to the dead letters: it left the board */
  JB_EV_PROGRESS = 13,  /* the owner reported progress (schema 10) */
  JB_EV_SNOOZED = 14,   /* the owner snoozed it: back later, no attempt
                           spent (schema 11) */
  JB_EV_DEADLINE = 15,  /* not claimed by its deadline: it left the board
                           (schema 11) */
};
#define JB_EV_LAST JB_EV_DEADLINE

/* The log keeps at least log_keep events (a board option, by default
 * JB_LOG_KEEP) and fewer than log_keep + JB_LOG_TRIM; a write that reaches
 * the upper bound deletes JB_LOG_TRIM of the oldest. Events older than
 * log_max_age_ms go too, at most JB_LOG_TRIM per write (logread.c). */
#define JB_LOG_KEEP JB_LOG_KEEP_DEFAULT
#define JB_LOG_TRIM 64u
/* A write that finds this many events in `logtail` moves them to `log`
 * (with the eventrec of 40 bytes and a short owner, 24 events fill about
 * 1.7 KiB: the tail stays one page). */
#define JB_LOGTAIL_MOVE 24u

/* Job flags (jb_jobhdr.flags): a byte that records of older releases
 * leave as zero padding, so they read 0 (decided locally) and no schema
 * change is needed. */
enum {
  JB_JOB_F_REMOTE = 1u << 0, /* Redis decides its ownership (authority rule) */
  /* With REMOTE: marked for publication, the post not confirmed yet (the
   * replicator resolves it by reading Redis's publication marker). */
  JB_JOB_F_PUBLISHING = 1u << 1,
  /* With REMOTE: published from this board (not mirrored in), so this
   * board publishes it again should Redis lose it. */
  JB_JOB_F_OURS = 1u << 2,
  /* It was posted with options (a time limit, a unique key, a maximum of
   * attempts or a back-off): its `jobx` record holds them (schema 8). A
   * job without the flag may still have a jobx record (its attempts). */
  JB_JOB_F_X = 1u << 3,
};

typedef struct {
  uint8_t format; /* 1 */
  uint8_t jobkey[JB_JOBKEY_LEN];
  uint8_t flags;  /* JB_JOB_F_*; was padding (0) */
  uint8_t lane[4]; /* schema 10: its name's lane, big-endian (names.h) */
  uint8_t pad;
  int64_t posted_us;
} jb_jobhdr; /* followed by the posting */

typedef struct {
  uint8_t uuid[16];
  int64_t modified_us;
} jb_readyrec;

/* Claim flags (jb_claimrec.flags). */
enum {
  JB_CLAIM_F_LEASE = 1u << 0, /* expires at expires_bt (a `leases` entry) */
  JB_CLAIM_F_BOUND = 1u << 1, /* lapses with its holder process (`holders`) */
};

typedef struct {
  uint8_t uuid[16];
  uint8_t format; /* 2 */
  uint8_t flags;  /* JB_CLAIM_F_* */
  uint16_t owner_len;
  uint32_t epoch;        /* boot epoch (meta) of expires_bt and the holder */
  int64_t claimed_us;    /* wall clock: the claim or its last refresh */
  uint64_t token;        /* fencing token: log sequence of the CLAIMED event */
  int64_t expires_bt;    /* CLOCK_BOOTTIME microseconds (JB_CLAIM_F_LEASE) */
  int64_t lease_ms;      /* the lease asked for (a refresh renews it) */
  uint32_t holder_pid;   /* JB_CLAIM_F_BOUND: the holder process */
  uint32_t pad;
  uint64_t holder_start; /* its start time, clock ticks after boot */
} jb_claimrec; /* followed by the owner's bytes */

/* The claim record of schema 1, upgraded at open. */
typedef struct {
  uint8_t uuid[16];
  uint8_t format; /* 1 */
  uint8_t pad;
  uint16_t owner_len;
  uint32_t pad2;
  int64_t claimed_us;
} jb_claimrec_v1;

/* `leases` key: epoch (u32 BE), expires_bt (u64 BE), jobkey; empty value.
 * `holders` key: epoch (u32 BE), pid (u32 BE), start (u64 BE), jobkey;
 * empty value. Both sort the claims of an earlier boot first. */
#define JB_LEASEKEY_LEN (4 + 8 + JB_JOBKEY_LEN)
#define JB_HOLDERKEY_LEN (4 + 4 + 8 + JB_JOBKEY_LEN)

/* `entities`: name (1..JB_WHO_MAX bytes: LMDB keys are at most 511) ->
 * jb_entityrec + kind bytes + metadata (a msgpack map). The entity lives
 * while its process (pid, start) runs in the board's current epoch. */
typedef struct {
  uint8_t format; /* 1 */
  uint8_t pad;
  uint16_t kind_len;
  uint32_t epoch;
  uint32_t pid;
  uint32_t meta_len;
  uint64_t start;
  int64_t registered_us;
} jb_entityrec;

typedef struct {
  uint8_t format; /* 1, or 2 (below) */
  uint8_t cause;  /* format 2: jb_dead_cause; was padding */
  uint16_t owner_len;
  uint32_t posting_len;
  int64_t trashed_us;
  uint8_t jobkey[JB_JOBKEY_LEN];
  uint8_t pad;
  uint16_t x_len; /* format 2: the job's jobx record, after the posting */
  uint32_t pad2;
  int64_t posted_us; /* format 2 */
} jb_trashrec; /* followed by the owner's bytes, then the posting, then (format
                  2) x_len bytes of jobx record (0: the job had none) */
/* A format 1 record is the first 32 bytes of this (cause, x_len and
 * posted_us read as 0). */
#define JB_TRASHREC_V1_SIZE 32

/*
 * A job's life (schema 8).
 *
 * A job posted with a due time in the future, or retried with a delay,
 * is in `delayed` (under its jobkey, as it would be in `ready`) and in
 * `due` (under its due time and jobkey) instead of `ready`. Claim-next
 * first moves the delayed jobs that are due to `ready` (at most
 * JB_PROMOTE_MAX per call, in due order), then walks `ready` as before:
 * it looks at `due`'s first key and never at a job that is not due.
 * Every job is in exactly one of ready, claims and delayed.
 *
 * `jobx` holds what a job's posting does not: the options it was posted
 * with (time limit, unique key, maximum of attempts, back-off) and its
 * attempts (claims that ended without a completion) with the last
 * reason given. A job posted with options has JB_JOB_F_X and its record
 * from the post; any job gets one at its first failed attempt. The
 * record goes when the job leaves the board (to a dead letter, a format
 * 2 trash record, with it).
 *
 * `unique` maps a unique key to the live job that holds it; the key is
 * freed in the transaction that takes the job off the board.
 */
typedef struct {
  uint8_t uuid[16];
  int64_t modified_us;
  int64_t due_us; /* wall clock, microseconds since the epoch */
} jb_delayrec;

#define JB_DUEKEY_LEN (8 + JB_JOBKEY_LEN)
#define JB_PROMOTE_MAX 256

/* jb_jobxrec, a `jobx` record's fixed part: codec/job.h. */

/*
 * Periodic jobs (schema 8; jobboard.h "Periodic jobs").
 *
 * `schedules` maps a schedule's name to its record: when it runs (an
 * interval, or a cron spec kept as text and parsed again when read), the
 * posting template, and its state: the next run not posted yet (next_us),
 * the last run posted and how many were. A tick is one write transaction
 * that reads every schedule, posts the due runs (each with the unique key
 * "schedule:NAME:RUN_US") and writes next_us past them: two processes
 * ticking at once are serialised by LMDB's writer lock, and the second
 * finds next_us already moved, so a run is posted once. A tick reads the
 * whole table (schedules are meant to number in the tens or hundreds, not
 * millions); one that finds nothing due writes nothing (a read
 * transaction looks first).
 */
enum {
  JB_SCHED_EVERY = 1, /* every_ms, runs at start_us + k * every_ms */
  JB_SCHED_CRON = 2,  /* the spec's minutes at or after start_us */
};
/* Format 2 (schema 12) adds the time zone and the overlap policy: the
 * zone's name follows the details, and the count of runs skipped for
 * overlap (u64, native order) ends the value. A record of format 1 reads
 * as zone UTC, overlap JB_OVERLAP_QUEUE, none skipped, and a tick writes
 * it back in format 1. */
typedef struct {
  uint8_t format;   /* 1 or 2 */
  uint8_t kind;     /* JB_SCHED_* */
  uint8_t catch_up; /* jb_catchup */
  uint8_t priority; /* the template's */
  uint8_t has_book; /* book_name and book_uuid are set */
  uint8_t overlap;  /* jb_overlap (format 2; 0 in format 1) */
  uint16_t spec_len;      /* the cron spec's bytes follow the record */
  uint16_t job_name_len;  /* then the job name's */
  uint16_t book_name_len; /* then the book name's, then the details */
  uint32_t details_len;   /* a msgpack map (0: the empty map) */
  uint32_t max_attempts;  /* the template's life options (jb_post v2) */
  uint32_t tz_len;        /* format 2: the zone name's (0: UTC) */
  int64_t every_ms;       /* JB_SCHED_EVERY */
  int64_t time_limit_ms;
  int64_t backoff_ms;
  int64_t backoff_max_ms;
  int64_t start_us;   /* the first run (EVERY) or the earliest (CRON) */
  int64_t next_us;    /* the next run not posted yet (INT64_MAX: none) */
  int64_t last_us;    /* the last run posted (0: none yet) */
  int64_t created_us;
  uint64_t runs;      /* runs posted */
  uint8_t book_uuid[16];
} jb_schedrec;

typedef struct {
  uint8_t type; /* JB_EV_* */
  uint8_t priority;
  uint16_t owner_len;
  uint16_t permille; /* JB_EV_PROGRESS: the percentage in tenths; else 0 */
  uint8_t msg_len;   /* JB_EV_PROGRESS: the message's bytes; else 0 */
  uint8_t pad;
  int64_t time_us;
  uint64_t job_seq;
  uint8_t uuid[16];
} jb_eventrec; /* followed by the owner's bytes (if any), then (PROGRESS)
                  the message's */

/* The length an event record of `ev` must have (the fields were padding
 * before schema 10, so they read 0 in older events). */
static inline size_t jb__eventrec_len(const jb_eventrec *ev) {
  return sizeof *ev + ev->owner_len + ev->msg_len;
}

typedef struct {
  int64_t quarantined_us;
  uint16_t reason_len;
  uint8_t pad[6];
} jb_quarrec; /* followed by the reason, then the original value */

/* ------------------------------------------------------------ interface */

/* ------------------------------------------------------------ waits */

/* A wait attempt's "not yet". */
#define JB__AGAIN 1

/* One attempt of a wait. It returns JB_OK or a JB_E* code to end the wait
 * (the wait returns it as is), or JB__AGAIN to sleep until the next commit
 * on the board. It may lower *retry_mono_us (CLOCK_MONOTONIC microseconds;
 * INT64_MAX on entry) to be tried again by then without a commit (a lease
 * lapsing). It runs outside any transaction and does its own reads and
 * writes. */
typedef int (*jb_wait_fn)(void *ctx, int64_t *retry_mono_us);


typedef struct jb_store jb_store;

/* Open the store of board `path`, or share the one this process already
 * has open on it (LMDB forbids opening an environment twice in a process:
 * closing one copy would drop the other's locks). Refcounted; a handle of
 * another durability on an open board is refused. */
int jb__store_open(jb_store **out, const char *path,
                   const jb_board_options *opts);
void jb__store_close(jb_store *s);
/* Tests only (tests/crash_step.c): make this process's later opens in
 * durability none map with MDB_WRITEMAP, as releases before schema 4 did,
 * to show the crash test catches the loss that made us drop it (env.c). */
void jb__store_test_writemap(bool on);

struct jb_jobx;
typedef struct {
  uint8_t uuid[16];
  jb_priority priority;
  const uint8_t *prefix; /* posting up to the "sequence" key (posting.h) */
  size_t prefix_len;
  int64_t due_us;        /* after the post's time: a delayed job */
  const struct jb_jobx *x; /* its options (store/life.h); NULL: none */
} jb_store_post;

/* Write n postings in one transaction, all or none. With a unique key a
 * live job holds, JB_EEXISTS (nothing written), that job's uuid to
 * held_by and the post's index to *held_idx (either may be NULL). */
int jb__store_post(jb_store *s, const jb_store_post *posts, size_t n,
                   int64_t now_us);
int jb__store_post_x(jb_store *s, const jb_store_post *posts, size_t n,
                     int64_t now_us, uint8_t held_by[16], size_t *held_idx);

/* Is `name` one of the names chosen: an exact name, or a prefix written
 * with a trailing '*' ("images.*" takes every name that starts with
 * "images.", "*" every name)? */
bool jb__name_chosen(const char *const *names, size_t n, const char *name,
                     size_t len);
/* Does a chosen name end in '*' (a prefix)? */
bool jb__name_is_prefix(const char *pattern, size_t len);
/* A name's lane (names.h). */
uint32_t jb__name_lane(const char *name, size_t len);

/* Names as queues (names.h). Pause (set JB_STORE_Q_PAUSED) or resume
 * (clear it) the name name[0..len) (JB_ENOTFOUND with a message when no
 * job of that name was ever posted), or the whole board (name NULL). One
 * write transaction; *changed (may be NULL): whether anything changed. */
#define JB_STORE_Q_PAUSED 1u
int jb__store_queue_set(jb_store *s, const char *name, size_t len,
                        uint8_t set, uint8_t clear, int64_t now_us,
                        bool *changed);
/* Every name ever posted, with whether it is paused, when that last
 * changed (0: never), its cap and its ready jobs; one read
 * transaction. A non-zero return of visit stops the walk and is returned. */
typedef struct {
  bool paused;
  int64_t changed_us;
  uint32_t cap;  /* 0: none */
  uint32_t held; /* claims now, counted while it has a cap */
  bool cap_each; /* the cap is its prefix's (jb__store_queue_cap_each) */
  size_t ready;
  uint32_t rate;         /* claims per period_ms (0: no rate limit) */
  uint64_t period_ms;
  int64_t next_token_us; /* rate: when its next claim may go (wall clock) */
  bool rate_each; /* the rate limit is its prefix's (jb__store_queue_rate_each) */
} jb_store_queue;
typedef int (*jb_store_queue_visit)(void *arg, const char *name, size_t len,
                                    const jb_store_queue *q);
int jb__store_queue_list(jb_store *s, jb_store_queue_visit visit, void *arg,
                         bool *board_paused);
/* Set the cap of claims at once of name[0..len) (0: none), in one write
 * transaction (JB_ENOTFOUND as jb__store_queue_set). */
int jb__store_queue_cap(jb_store *s, const char *name, size_t len,
                        uint32_t cap, int64_t now_us);
/* Cap each name starting with prefix[0..len) on its own (0: no more), in
 * one write transaction (names.h jb__queue_cap_each). */
int jb__store_queue_cap_each(jb_store *s, const char *prefix, size_t len,
                             uint32_t cap, int64_t now_us);
/* The two controls a prefix gives each of its names: a cap (meta
 * "capeach"), a rate limit ("rateeach"); both lists share their code
 * (names.c). A visit of one gets a prefix with its cap (period 0) or its
 * rate limit. */
typedef enum { JB_EACH_CAP, JB_EACH_RATE } jb_each_kind;
typedef int (*jb_each_visit)(void *arg, const char *prefix, size_t len,
                             uint32_t count, uint64_t period_ms);
/* Rate-limit each name starting with prefix[0..len) on its own (rate 0:
 * no more), in one write transaction (names.h jb__queue_rate_each). */
int jb__store_queue_rate_each(jb_store *s, const char *prefix, size_t len,
                              uint32_t rate, uint64_t period_ms,
                              int64_t now_us);
/* The prefixes capped (JB_EACH_CAP) or rate-limited (JB_EACH_RATE) for
 * each name, in one read transaction: visit gets the cap (period 0) or
 * the rate limit. A non-zero return of visit stops the walk and is
 * returned. */
int jb__store_each_prefixes(jb_store *s, jb_each_kind kind,
                            jb_each_visit visit, void *arg);
/* Set the rate limit of name[0..len): at most `rate` claims per period_ms
 * (rate 0: none; core checks the bounds), in one write transaction
 * (JB_ENOTFOUND as jb__store_queue_set). */
int jb__store_queue_rate(jb_store *s, const char *name, size_t len,
                         uint32_t rate, uint64_t period_ms, int64_t now_us);

/* What a claim asks for (core/board.c checks it first). */
typedef struct {
  const char *who;
  size_t who_len;
  int64_t now_us;   /* wall clock */
  int64_t lease_ms; /* 0: no expiry */
  bool bind;        /* bound to `holder` */
  jb_proc_id holder;
  /* claim-next: the names it takes jobs of (names.h); n_names 0: every
   * name */
  const char *const *names;
  size_t n_names;
  bool in_order; /* names: the first name with a job, not listing order */
  /* claim-next finding nothing (may be NULL): the earliest instant (wall
   * clock) a rate limit of a name it takes, with a ready job, gives a
   * token; 0: none. A waiter sleeps until then. */
  int64_t *next_token_us;
} jb_store_claim_req;

/*
 * Redis-decided jobs (JB_JOB_F_REMOTE). Without JB_STORE_DECIDED, claim,
 * release, finish and extend of such a job change nothing and return
 * JB__REMOTE (no message; the transaction is aborted): the caller must ask Redis first. With it, Redis
 * has decided and the outcome is recorded as Redis says: a claim replaces
 * whatever local claim there is; a release or extend does not check the
 * local owner or token (a consume or trash of a job with no local claim
 * takes it out of `ready`; an abandon of one is a no-op).
 */
#define JB__REMOTE (-900) /* internal: never returned by the API */
#define JB_STORE_DECIDED 1u
/* A Redis-decided job's claim checked on this board alone, as a local
 * claim is (progress: Redis has no part in it). */
#define JB_STORE_LOCAL 2u

/* Mark job `uuid` Redis-decided (one write transaction; the posting bytes
 * are not rewritten). JB_ENOTFOUND when not on the board. */
int jb__store_mark_remote(jb_store *s, const uint8_t uuid[16]);

/* ------------------------------------------- the mirror (store/mirror.c)
 *
 * Bringing jobs decided elsewhere (JB_JOB_F_REMOTE) into the board, as
 * the remote side lists them (core/sync_hook.h says what each case
 * means; core/ checks the arguments and decodes the postings first). */

/* One listing, prepared outside the transaction. */
typedef struct {
  uint8_t uuid[16];
  jb_priority priority;     /* the posting's (when it decodes) */
  uint64_t sequence;        /* the posting's: Redis's (when it decodes) */
  const void *posting;      /* the bytes, stored verbatim */
  size_t posting_len;
  const char *owner;        /* NULL: unclaimed */
  size_t owner_len;
  int64_t expires_us;       /* the claim's expiry, wall clock; 0: none */
  const char *quarantine;   /* non-NULL: why the posting must not go on
                               the board (the quarantine record's reason) */
} jb_store_listing;

/* What happened to each listing (same values as core/sync_hook.h's
 * jb_mirror_result). */
enum {
  JB_STORE_MIRROR_NEW = 1,
  JB_STORE_MIRROR_UPDATED,
  JB_STORE_MIRROR_SAME,
  JB_STORE_MIRROR_LOCAL,
  JB_STORE_MIRROR_DONE,
  JB_STORE_MIRROR_QUARANTINED,
};

/* Two expiries closer than this are the same: the remote side's expiry
 * comes with the jitter of reading it (a remaining time plus the time it
 * was read), and copying that jitter would write a change on every pass. */
#define JB_MIRROR_EXPIRY_SLACK_US ((int64_t)1000000)

/* A uuid completed here is left out of a mirror (DONE) when its history
 * record is no older than the mirror's read time less this: the wall
 * clock may step back a little between the read and the completion. */
#define JB_MIRROR_DONE_SLACK_US ((int64_t)2000000)

/* Quarantine key of a listing that was not put on the board: this byte,
 * then the listing's uuid (check.c's moved jobs use 'j'). */
#define JB_QUAR_LISTING 'r'

/* Mirror n listings in one write transaction; results (may be NULL) gets
 * a JB_STORE_MIRROR_* per listing. read_us: local records changed at or
 * after it are left alone (0: no such check). */
int jb__store_mirror(jb_store *s, const jb_store_listing *l, size_t n,
                     int64_t read_us, int64_t now_us, int *results);

struct jb_hist_bounds;
/* Take the remotely decided jobs among `uuids` off the board, consumed
 * (or trashed, trashed[i]; or lost from Redis, lost[i]: history end
 * JB_END_LOST with `lost_reason`, event LOST), in one write transaction;
 * others are skipped. trashed and lost may be NULL. *removed: how many
 * left. */
int jb__store_mirror_gone(jb_store *s, const uint8_t (*uuids)[16],
                          const bool *trashed, const bool *lost,
                          const char *lost_reason, size_t n, int64_t now_us,
                          const struct jb_hist_bounds *hist, size_t *removed);

/* Settings (store/mirror.c): small values in `meta` under
 * JB_META_SETTING_PREFIX + key, so that no key given can be one of the
 * board's own meta keys. core/ checks keys and values. */
#define JB_META_SETTING_PREFIX "setting."
#define JB_SETTING_KEY_MAX 64
#define JB_SETTING_VALUE_MAX 4096
/* The value into `out` (reset first); *found false when not set. */
int jb__store_setting_get(jb_store *s, const char *key, size_t key_len,
                          jb_buf *out, bool *found);
/* Write (value NULL: delete) the setting. */
int jb__store_setting_put(jb_store *s, const char *key, size_t key_len,
                          const char *value, size_t value_len);
/* Write it only if unset: JB_OK (written, or already `value`); else
 * *taken is set, `cur` holds the value, and nothing is written. */
int jb__store_setting_claim(jb_store *s, const char *key, size_t key_len,
                            const char *value, size_t value_len, jb_buf *cur,
                            bool *taken);
/* A synced board detached from Redis (store/detach.c), in one write
 * transaction: its Redis-decided jobs made local ones, claims not bound
 * to a live process of this host released, the dead letters of such
 * jobs keyed locally, the "sync." settings deleted but the detach record
 * (JB_STORE_SETTING_DETACHED), which gets the line `note` and the counts.
 * JB_ENOTFOUND (message set) when the board is not synced. */
#define JB_STORE_SETTING_DETACHED "sync.detached"
typedef struct {
  size_t jobs;     /* made local */
  size_t released; /* claims released: the job is ready again */
  size_t kept;     /* claims kept (bound to a live process of this host) */
  size_t letters;  /* dead letters keyed locally */
} jb_store_detach_result;
int jb__store_detach(jb_store *s, int64_t now_us, const char *note,
                     jb_store_detach_result *res);

/* A job's publication, as the job flags keep it: decided locally;
 * marked for publication (JB_JOB_F_REMOTE | JB_JOB_F_PUBLISHING);
 * published (JB_JOB_F_REMOTE). The board's sync hook names the same three
 * states jb_pub_state (core/sync_hook.h, which says what each means to
 * the replicator); core/board.c maps one onto the other. */
typedef enum {
  JB_STORE_PUB_LOCAL = 0,
  JB_STORE_PUB_PENDING = 1,
  JB_STORE_PUB_DONE = 2,
  /* As PENDING, but a job whose claim is bound to a live process of this
   * host is left as it is (results JB_ECLAIMED; a batch of one fails with
   * it): decided in the mark's own transaction. */
  JB_STORE_PUB_PENDING_UNHELD = 3
} jb_store_pub;

/* Set the publication state of n jobs in one write transaction.
 * results (may be NULL) gets JB_OK or
 * JB_ENOTFOUND per job; a batch of one fails with JB_ENOTFOUND. */
int jb__store_set_published(jb_store *s, const uint8_t (*uuids)[16], size_t n,
                            jb_store_pub state, const uint64_t *seqs,
                            int *results);

/* Claim `uuid`; the token (also on a same-owner refresh) to *token. */
int jb__store_claim(jb_store *s, const uint8_t uuid[16],
                    const jb_store_claim_req *req, uint64_t *token);
int jb__store_claim_x(jb_store *s, const uint8_t uuid[16],
                      const jb_store_claim_req *req, uint64_t *token,
                      unsigned xflags);

/* Record n claims Redis granted (JB_STORE_DECIDED) in one write
 * transaction, each exactly as jb__store_claim_x records one, in the
 * order given: tokens[i] its token, results[i] JB_OK or JB_ENOTFOUND
 * (that job is no longer on the board: nothing of it written; the others
 * commit). Returns JB_OK once committed, else the error that aborted the
 * whole transaction (results undefined). */
int jb__store_claim_decided_many(jb_store *s, const uint8_t (*uuids)[16],
                                 size_t n, const jb_store_claim_req *req,
                                 uint64_t *tokens, int *results);

/* The Redis-decided jobs claim-next would meet one after the other from
 * jobkey `from` on (itself included: the one jb__store_claim_next_x
 * stopped at), up to max of them and up to the first claimable job
 * decided here (jobs of names req does not choose, or paused, passed
 * over): uuids[i] and keys[i] (their jobkeys) for i < *n_out. One
 * read transaction; nothing changes. */
int jb__store_remote_run(jb_store *s, const uint8_t from[JB_JOBKEY_LEN],
                         const jb_store_claim_req *req, size_t max,
                         uint8_t (*uuids)[16], uint8_t (*keys)[JB_JOBKEY_LEN],
                         size_t *n_out);

/* Claim the first claimable job (lapsed claims are returned to the ready
 * index first, a bounded number per call). If `job` is not NULL it
 * receives a snapshot (decoded after the commit). Only jobs after jobkey
 * `after` are looked at (NULL: all). A Redis-decided job is skipped with
 * `skip_remote`; otherwise the walk stops at it and JB__REMOTE is
 * returned with its uuid in uuid_out and its jobkey in key_out (nothing
 * changes). */
int jb__store_claim_next(jb_store *s, uint8_t uuid_out[16], jb_job *job,
                         const jb_store_claim_req *req, uint64_t *token);
int jb__store_claim_next_x(jb_store *s, uint8_t uuid_out[16], jb_job *job,
                           const jb_store_claim_req *req, uint64_t *token,
                           const uint8_t *after, bool skip_remote,
                           uint8_t key_out[JB_JOBKEY_LEN]);

/* Extend the lease of `who`'s claim (token 0: not checked). */
int jb__store_extend(jb_store *s, const uint8_t uuid[16], const char *who,
                     size_t who_len, uint64_t token, int64_t lease_ms,
                     int64_t now_us, unsigned xflags);

/* `who`'s claim (token 0: not checked) reports progress: the job's jobx
 * record keeps `permille` (0..1000), the message and the time, and a
 * PROGRESS event is appended. The claim is checked on this board, also
 * for a Redis-decided job (Redis holds no progress). */
int jb__store_progress(jb_store *s, const uint8_t uuid[16], const char *who,
                       size_t who_len, uint64_t token, unsigned permille,
                       const char *msg, size_t msg_len, int64_t now_us);

/* The claim's expiry: *kind a jb_expiry, *ms_left for JB_EXPIRY_AT. */
int jb__store_expires_in(jb_store *s, const uint8_t uuid[16], int *kind,
                         int64_t *ms_left);

typedef enum {
  JB_RELEASE_ABANDON,
  JB_RELEASE_CONSUME,
  JB_RELEASE_TRASH,
} jb_release;

/* An abandon with a reason, a delay (< 0: the back-off's) or straight to
 * the dead letters (jb_retry). Redis-decided jobs: JB__REMOTE. */
typedef struct {
  const char *reason;
  size_t reason_len;
  int64_t delay_us;
  bool dead;
  bool snooze;  /* jb_snooze: no attempt spent, a snooze counted (refused
                   past the job's max_snoozes); delay_us >= 0 */
} jb_store_retry;
int jb__store_retry(jb_store *s, const uint8_t uuid[16], const char *who,
                    size_t who_len, uint64_t token, int64_t now_us,
                    const jb_store_retry *retry, jb_retry_result *out);

int jb__store_release(jb_store *s, jb_release op, const uint8_t uuid[16],
                      const char *who, size_t who_len, uint64_t token,
                      int64_t now_us, unsigned xflags);

int jb__store_get(jb_store *s, const uint8_t uuid[16], jb_job *job);

/* owner[0] = '\0' when unclaimed; *state COMPLETE when not on the board. */
int jb__store_owner(jb_store *s, const uint8_t uuid[16],
                    char owner[JB_WHO_MAX + 1], jb_state *state);

int jb__store_count(jb_store *s, size_t *out, unsigned flags);
/* jb__store_count's flag for a claim-next's wait (with JB_ONLY_UNCLAIMED):
 * the ready jobs count only when no name is chosen and no control is in
 * force; else only the lapsed claims and due jobs the next claim-next
 * returns to `ready` count (a ready job of another name, or a paused one,
 * is nothing this waiter can take, and must not make it look again every
 * millisecond). */
#define JB__COUNT_FOR_NAMES (1u << 30)
#define JB__COUNT_FOR_CLAIM (1u << 29)
/* jb__store_wait_state's flag for a wait by names (the caller counts the
 * jobs of its names): count nothing, only set the timers (the first lease
 * to lapse, the next delayed job due) and watch the holders. */
#define JB__WAIT_TIMERS (1u << 28)

/* The jobs on the board of the names chosen (n >= 1, as jb__name_chosen
 * takes them): ready ones (each exact name one seek in `byname`, a prefix
 * the lanes of the names in `queues` it takes), delayed ones once due, and
 * the claimed ones (with JB_ONLY_UNCLAIMED: only the lapsed claims).
 * `first`: stop at the first one found (*count 0 or 1). */
int jb__store_count_names(jb_store *s, unsigned flags,
                          const char *const *names, size_t n, bool first,
                          size_t *count);

/* One job of a scan batch: offsets point into the batch's byte buffer. */
typedef struct {
  uint8_t key[JB_JOBKEY_LEN];
  uint8_t uuid[16];
  int64_t modified_us;
  bool claimed;
  uint64_t token;
  int64_t lease_expires_us;
  int holder_pid;
  bool holder_alive;
  bool remote; /* JB_JOB_F_REMOTE */
  bool publishing; /* JB_JOB_F_PUBLISHING */
  bool ours;       /* JB_JOB_F_OURS */
  size_t owner_off, owner_len;
  size_t posting_off, posting_len;
  int64_t due_us;        /* delayed: its due time; else 0 */
  size_t x_off, x_len;   /* its jobx record (x_len 0: none) */
} jb_store_item;

/* Read up to `max` jobs in listing order after jobkey `after` (NULL: from
 * the start), only ready ones with JB_ONLY_UNCLAIMED, in one short read
 * transaction. Bytes are copied to `bytes` (reset first). */
int jb__store_scan(jb_store *s, unsigned flags,
                   const uint8_t after[JB_JOBKEY_LEN], jb_store_item *items,
                   size_t max, jb_buf *bytes, size_t *n_out);

/* jb__store_scan_ex's narrowing: only the tables of bit 0 (ready), 1
 * (claims), 2 (delayed) in `tables` (0: all), only the jobs of `lane`
 * (the ready ones through `byname`, names.h; the claimed and delayed ones
 * by their header), and at most `budget` index entries looked at per
 * call (0: no bound), so that a sparse filter never holds a long read. */
typedef struct {
  unsigned tables;
  bool has_lane;
  uint32_t lane;
  size_t budget;
} jb_store_scan_opts;

/* jb__store_scan narrowed by `o`: *looked when some key was looked at,
 * `resume` then the last one (every job up to it was returned or did not
 * match); *more when it stopped at the budget. */
int jb__store_scan_ex(jb_store *s, unsigned flags,
                      const uint8_t after[JB_JOBKEY_LEN],
                      const jb_store_scan_opts *o, jb_store_item *items,
                      size_t max, jb_buf *bytes, size_t *n_out,
                      uint8_t resume[JB_JOBKEY_LEN], bool *looked,
                      bool *more);

/* Entities (store/entities.c). `meta` is a checked msgpack map. */
int jb__store_entity_register(jb_store *s, const char *name, size_t name_len,
                              const char *kind, size_t kind_len,
                              const void *meta, size_t meta_len,
                              const jb_proc_id *proc, int64_t now_us);
int jb__store_entity_unregister(jb_store *s, const char *name,
                                size_t name_len);
/* One entity as jb__store_entity_read copies it: this header, then the
 * name, a NUL, the kind, a NUL, the metadata, and padding up to `size`
 * (the whole entry, a multiple of 8). See store/entities.c. */
typedef struct {
  jb_entityrec rec;
  uint32_t name_len;
  uint64_t size; /* meta alone may take 4 GiB */
} jb_store_entity;

/* Copy every well-formed entity record, in name order, into `bytes`
 * (reset first) as *n_out consecutive jb_store_entity entries, for the
 * caller to walk after the read. Liveness is not looked at. */
int jb__store_entity_read(jb_store *s, jb_buf *bytes, size_t *n_out);

/* A job's life (store/dead.c; store.h "A job's life"). */
int jb__store_policy_get(jb_store *s, jb_retry_policy *out);
int jb__store_policy_set(jb_store *s, const jb_retry_policy *p);
struct jb_hist_bounds;
/* Cancel one job (JB_ECLAIMED unless force when claimed). A Redis-decided
 * job: JB__REMOTE without JB_STORE_DECIDED in xflags; with it, Redis has
 * cancelled it and it goes whatever its local claim. */
int jb__store_cancel(jb_store *s, const uint8_t uuid[16], bool force,
                     int64_t now_us, const struct jb_hist_bounds *bounds,
                     unsigned xflags);
/* jb_job_run_now: a delayed job of the board moves to `ready` under its
 * jobkey, as a due one does (life.c jb__promote_one); one claimable
 * already is left (JB_OK, nothing written); JB_ENOTFOUND, JB_ECLAIMED. */
int jb__store_run_now(jb_store *s, const uint8_t uuid[16]);
/* Send a job that Redis does not decide (not published: decided here, or
 * marked for publication and refused by Redis) to the dead letters, cause
 * JB_DEAD_BURIED, `reason` its last reason, its claim (if any) with it;
 * with `cancel`, cancel it instead (history JB_END_CANCELLED with the
 * reason, event CANCELLED). JB_ENOTFOUND; JB_EINVAL when published
 * (JB_STORE_PUB_DONE). */
int jb__store_bury_unpublished(jb_store *s, const uint8_t uuid[16],
                               const char *reason, size_t reason_len,
                               int64_t now_us,
                               const struct jb_hist_bounds *bounds,
                               bool cancel);
/* Cancel up to `max` unclaimed jobs decided here; *more when some may be
 * left. */
int jb__store_flush(jb_store *s, int64_t now_us,
                    const struct jb_hist_bounds *bounds, size_t max,
                    size_t *done, bool *more);
/* The trash record of `uuid` copied to `out` (reset first). */
int jb__store_dead_get(jb_store *s, const uint8_t uuid[16], jb_buf *out);
/* Up to `max` trash records after uuid `after` (NULL: from the first),
 * each as u64 length, uuid (16), the record, into `out` (reset first). */
int jb__store_dead_read(jb_store *s, const uint8_t *after, size_t max,
                        jb_buf *out, size_t *n);
int jb__store_dead_count(jb_store *s, size_t *out);
/* The letter of `uuid` back on the board in one write transaction:
 * under its own uuid (to NULL), or posted again under the new uuid `to`
 * (a letter of a job Redis decided too). */
int jb__store_dead_requeue(jb_store *s, const uint8_t uuid[16],
                           const uint8_t *to, bool keep_attempts,
                           int64_t now_us, uint8_t held_by[16]);
/* The last check's record (store/check.c): written in a write transaction
 * of its own after a check; read as JB_ENOENT when no check recorded one. */
int jb__store_check_record(jb_store *s, const jb_check_record *r);
int jb__store_check_last(jb_store *s, jb_check_record *r);
/* Retention (store/retain.c): the setting the board stores (0 in a
 * field never set), and what a handle applies: the stored value, else
 * the handle's history bounds `hist` (NULL: the opener's), else the
 * default. The set stores the fields `fields` names and prunes a first
 * batch; *pruned_hist and *pruned_dead (may be NULL) say how many went. */
int jb__store_retention_get(jb_store *s, const struct jb_hist_bounds *hist,
                            jb_retention *stored, jb_retention *effective);
int jb__store_retention_set(jb_store *s, const struct jb_hist_bounds *hist,
                            const jb_retention *r, unsigned fields,
                            int64_t now_us);
/* Up to `max` per call, walking on from `resume` (when *has_resume; both
 * in/out: where the next call starts). */
int jb__store_dead_purge(jb_store *s, int64_t before_us, size_t max,
                         size_t *purged, bool *more, uint8_t resume[16],
                         bool *has_resume);
/* Delete the dead letter of `uuid` and its `deadage` entry; JB_ENOTFOUND
 * when there is none. */
int jb__store_dead_remove(jb_store *s, const uint8_t uuid[16]);
/* Why a claim record lapsed (NULL: it holds). */
const char *jb__claim_lapsed_why(jb_store *s, const jb_claimrec *rec);

/* Periodic jobs (store/schedule.c; "Periodic jobs" above). A record
 * decoded: the record and its strings, pointing into the value it was
 * decoded from (not NUL-terminated). */
typedef struct {
  jb_schedrec rec;
  const char *name;
  size_t name_len;
  const char *spec;       /* rec.spec_len bytes */
  const char *job_name;
  const char *book_name;
  const uint8_t *details; /* rec.details_len bytes */
  const char *tz;         /* rec.tz_len bytes */
  uint64_t skipped;       /* runs skipped for overlap */
} jb_sched_view;
#define JB_SCHED_NAME_MAX 200 /* jobboard.h JB_SCHEDULE_NAME_MAX */
/* Decode (and check) a record: JB_OK, or JB_ECORRUPT with why[]. The
 * decoder stands alone (no LMDB, no board). */
int jb__sched_decode(jb_sched_view *v, const void *key, size_t key_len,
                     const void *val, size_t val_len, char *why,
                     size_t whylen);
/* The first run strictly after `t` / the last run at or before `t`
 * (INT64_MAX / INT64_MIN: none) of a decoded schedule. */
int64_t jb__sched_after(const jb_sched_view *v, int64_t t);
int64_t jb__sched_at_or_before(const jb_sched_view *v, int64_t t);
/* Add a record (key, value as jb__sched_decode reads it; its next_us is
 * the first run). JB_EEXISTS when the name is taken, unless `replace`:
 * then the old record's runs, last run and created time are kept, and no
 * run at or before its last run is posted again. */
int jb__store_sched_put(jb_store *s, const void *key, size_t key_len,
                        const void *val, size_t val_len, bool replace);
/* JB_ENOTFOUND when there is no such schedule. */
int jb__store_sched_del(jb_store *s, const void *key, size_t key_len);
/* Copy the record of `key` (get) or every record in name order (read)
 * into `out` (reset first), each as u32 key length, u32 value length,
 * key, value (padded to 8 bytes). get: JB_ENOTFOUND. */
int jb__store_sched_get(jb_store *s, const void *key, size_t key_len,
                        jb_buf *out);
int jb__store_sched_read(jb_store *s, jb_buf *out, size_t *n);
/* The earliest next_us of the schedules (0: none), in a read
 * transaction. */
int jb__store_sched_next_due(jb_store *s, int64_t *out);
/* Build run `run_us` of schedule `v` as a post (core/schedule.c): its
 * posting prefix appended to `buf` with sp->prefix an offset into it (as
 * core/board.c's prepare leaves it) and sp->x its options, malloc'ed.
 * core/ passes it in as a function pointer because the checks and the
 * encoding of a post are the board's, and the store, below the board,
 * never calls up into it by name. */
typedef int (*jb_sched_prep_fn)(void *arg, const jb_sched_view *v,
                                int64_t run_us, int64_t now_us, jb_buf *buf,
                                jb_store_post *sp);
/* Post every due run at `now_us` in one write transaction (above). With
 * `publish`, the runs are marked for publication (JB_STORE_PUB_PENDING) in the
 * same transaction: on a board a replicator publishes, nobody claims a
 * run here before Redis decided that it is this board's copy that is
 * listed (another board ticking the same schedule may post it first). */
int jb__store_sched_tick(jb_store *s, int64_t now_us, size_t catchup_max,
                         jb_sched_prep_fn prep, void *arg, bool publish,
                         size_t *posted);

/* jb_stats_read (store/stats.c): the figures of one read transaction
 * into `st` (its version and flags set; names malloc'ed). */
int jb__store_stats(jb_store *s, jb_stats *st);

/* The boot epoch of this board (meta "epoch"), as of this process's open:
 * claims and entities of an earlier epoch belong to an earlier boot. */
uint32_t jb__store_epoch(const jb_store *s);
/* 0, or how the store is read-only (JB_READONLY_*). */
int jb__store_readonly(const jb_store *s);
/* jb_board_sync, jb_board_set_flush_interval, jb_board_flush_info
 * (steady.c does the work). */
int jb__store_sync(jb_store *s);
int jb__store_set_flush_interval(jb_store *s, int64_t ms);
void jb__store_flush_info(jb_store *s, jb_flush_info *out);


/* The change log (store/logread.c). The extent: oldest kept sequence and
 * the next one (first == next when empty). */
int jb__store_log_bounds(jb_store *s, uint64_t *first, uint64_t *next);
/* Up to `max` events from sequence `from` (>= 1) into `out`, count to
 * *n; *first the oldest kept. JB_ETRIMMED / JB_EINVAL with a message when
 * `from` is before the oldest kept / after the next sequence. */
int jb__store_log_read(jb_store *s, uint64_t from, jb_event *out, size_t max,
                       size_t *n, uint64_t *first);
/* PROGRESS event `seq`'s percentage in tenths and message (NUL-terminated
 * into JB_PROGRESS_MESSAGE_MAX + 1 bytes). JB_ENOTFOUND when it is no
 * progress event or beyond the end, JB_ETRIMMED when no longer kept. */
int jb__store_log_progress(jb_store *s, uint64_t seq, unsigned *permille,
                           char *msg);
/* The options this process's store was opened with (durability and the
 * log bounds, resolved), to open another handle like it. */
void jb__store_options(const jb_store *s, jb_board_options *o);

/* Verify the invariants above (and move undecodable postings to
 * quarantine, adding their history records with `hist`'s bounds). Lines
 * of the report are appended to `report`, each NUL-terminated. */
struct jb_hist_bounds;
int jb__store_check(jb_store *s, jb_check_stats *stats, jb_buf *report,
                    const struct jb_hist_bounds *hist);

/* jb_board_salvage (store/salvage.c): read the board in `src` with the
 * defensive page reader (never LMDB, never a write), then ask open_dst for
 * the new board's store (only once the source proved readable: nothing is
 * made when it is not) and copy the jobs and history into it. Lines go to
 * `cb`, counts to `st` (zeroed by the caller). */
int jb__salvage(const char *src, jb_salvage_stats *st, jb_salvage_cb cb,
                void *payload, jb_store *(*open_dst)(void *arg, int *rc),
                void *dst_arg);

/* ------------------------------------ the completion history (history.c) */

/* The history's bounds, as the writing handle has them (jb_board). */
typedef struct jb_hist_bounds {
  size_t max_count;   /* >= 1 */
  int64_t max_age_us; /* >= 1 */
} jb_hist_bounds;
#define JB_HISTORY_MAX_DEFAULT ((size_t)10000)
#define JB_HISTORY_AGE_DEFAULT_MS ((int64_t)7 * 24 * 3600 * 1000)

/* How consume or trash completes a job: its ending (jb_end), its result
 * (a checked msgpack map; NULL: none given, which the record tells from
 * the empty map) and the bounds the history is trimmed to. A trash may
 * say more (a job Redis decides goes to the dead letters through a trash
 * there): the letter's cause (jb_dead_cause) and the reason kept with it
 * and in the history record (NULL: the job's last reason, if any). */
typedef struct {
  int end;
  const void *result;
  size_t result_len;
  const jb_hist_bounds *bounds;
  uint8_t cause;
  const char *reason;
  size_t reason_len;
} jb_store_done;

/* jb__store_mirror_gone (above), with how each job ended as its
 * completer told Redis: dones[i] (end 0: unknown, the plain ending) and
 * owners[i] (NULL: none), the owner named when the board holds no claim.
 * dones and owners may be NULL. */
int jb__store_mirror_gone_x(jb_store *s, const uint8_t (*uuids)[16],
                            const bool *trashed, const bool *lost,
                            const char *lost_reason,
                            const jb_store_done *dones,
                            const char *const *owners, size_t n,
                            int64_t now_us, const struct jb_hist_bounds *hist,
                            size_t *removed);

/* Rewrite the history record of `uuid` with done's ending and result and
 * `who` as the owner (it becomes the newest record): for a completion
 * through Redis whose job the replicator's mirror took off the board, with
 * a plain record, before the caller's own local step. JB_ENOTFOUND when
 * the history holds no record of it. */
int jb__store_amend_completion(jb_store *s, const uint8_t uuid[16],
                               const jb_store_done *done, const char *who,
                               size_t who_len, int64_t now_us);

/* jb__store_release for JB_RELEASE_CONSUME and JB_RELEASE_TRASH, with the
 * history record `done` describes (jb__store_release writes one with no
 * result and the default bounds). */
int jb__store_finish(jb_store *s, jb_release op, const uint8_t uuid[16],
                     const char *who, size_t who_len, uint64_t token,
                     int64_t now_us, const jb_store_done *done,
                     unsigned xflags);

/* A history record read out of a transaction: its value in a jb_buf. */
typedef struct {
  uint64_t hseq;
  size_t off, len;
} jb_hist_item;

/* What jb__history_find found. */
enum {
  JB_HIST_FOUND = 0, /* the record is in `bytes` */
  JB_HIST_ON_BOARD,  /* no record; the job is on the board */
  JB_HIST_UNKNOWN,   /* neither on the board nor in the history */
};

/* Look up the newest record of `uuid` and, when there is none, whether
 * the job is on the board, in one read transaction: completing a job
 * removes it and adds its record in one commit, so one of the two is
 * always seen. `item` (into `bytes`, reset first) is set when found. */
int jb__history_find(jb_store *s, const uint8_t uuid[16], jb_buf *bytes,
                     jb_hist_item *item, int *found);

/* Which records a scan hands out (jb_history_filter, checked by
 * core/history.c): each condition set must hold. A record whose fixed
 * part or name cannot be read is handed out whatever the filter says, so
 * that the reader reports it. */
typedef struct {
  uint32_t ends;           /* bits 1 << jb_end; 0: every ending */
  const char *name;        /* the whole name; NULL: any */
  size_t name_len;
  const char *prefix;      /* the name's start; NULL: any */
  size_t prefix_len;
  int64_t since_us;        /* completed at or after; INT64_MIN: no bound */
  int64_t until_us;        /* completed before; INT64_MAX: no bound */
} jb_hist_filter;

/* Read up to `max` records that `f` selects (NULL: all; and about
 * `budget` bytes, but always one) after hseq `after` (oldest first) or
 * before it (newest first); with `from_end`, from the oldest or the
 * newest. Values are copied to `bytes` (reset first). At most
 * JB_HIST_EXAMINE records are looked at per call, so that a filter that
 * selects few never holds a snapshot long: *seen_out is the hseq of the
 * last record looked at (0: none was, the history has no more), where
 * the next call goes on from. */
#define JB_HIST_EXAMINE 4096
int jb__history_scan(jb_store *s, const jb_hist_filter *f, bool oldest_first,
                     bool from_end, uint64_t after, jb_hist_item *items,
                     size_t max, size_t budget, jb_buf *bytes, size_t *n_out,
                     uint64_t *seen_out);

/* Records in the history. */
int jb__history_count(jb_store *s, size_t *out);

/* Decode the record value `val` (from an item) into `c` and its strings
 * into `mem` (reset first; c's pointers point into it), all but the
 * fields read from the posting (details, book: the caller decodes
 * c->posting with jb__histrec_posting). JB_ECORRUPT with a message naming
 * the record when it does not decode. */
int jb__history_load(jb_completion *c, jb_buf *mem, uint64_t hseq,
                     const void *val, size_t len);

/* ------------------------------ the worker's path (store/batch.c)
 * Several operations in one write transaction, each exactly as its single
 * form does it (claim-next order, reaping, tokens, events, history). */

/* Claim up to `max` (>= 1) jobs in one write transaction, each as
 * jb__store_claim_next_x would claim it next: uuids[i] and tokens[i] for
 * i < *n_out, and with `jobs` (max zeroed snapshots) each job decoded
 * after the commit, load_rc[i] saying how that went (JB_ECORRUPT: the
 * posting does not decode; the claim stands). Returns JB_OK (1..max
 * claimed), JB_ENOTFOUND (none claimable), or JB__REMOTE (without
 * skip_remote: the walk met a Redis-decided job, whose uuid is
 * uuids[*n_out] and jobkey key_out; the *n_out claims before it,
 * possibly none, are committed). */
int jb__store_claim_many(jb_store *s, const jb_store_claim_req *req,
                         size_t max, const uint8_t *after, bool skip_remote,
                         uint8_t (*uuids)[16], uint64_t *tokens, jb_job *jobs,
                         int *load_rc, size_t *n_out,
                         uint8_t key_out[JB_JOBKEY_LEN]);

/* What jb__store_consume_claim claimed after its consume. */
enum {
  JB_STORE_NEXT_NONE = 0,    /* nothing claimable */
  JB_STORE_NEXT_CLAIMED = 1, /* next_uuid, next_token (and next_job) */
  JB_STORE_NEXT_REMOTE = 2,  /* the next job in claim-next order is
                                Redis-decided: not claimed here */
};

/* Consume `uuid` (as jb__store_finish with JB_RELEASE_CONSUME, no
 * JB_STORE_DECIDED) and claim the next job for req->who (as
 * jb__store_claim_next_x from the start) in one write transaction, at
 * req->now_us. When the consume is refused (any error, JB__REMOTE
 * included) nothing is written and that is returned. Else JB_OK with
 * *next a JB_STORE_NEXT_*; JB_ECORRUPT when next_job was asked for and
 * the posting does not decode (both stand). */
int jb__store_consume_claim(jb_store *s, const uint8_t uuid[16],
                            const char *who, size_t who_len, uint64_t token,
                            const jb_store_done *done,
                            const jb_store_claim_req *req, bool skip_remote,
                            uint8_t next_uuid[16], uint64_t *next_token,
                            jb_job *next_job, int *next);

/* One consume of jb__store_consume_many. */
typedef struct {
  uint8_t uuid[16];
  const char *who;
  size_t who_len;
  uint64_t token;
  jb_store_done done;
} jb_store_finish_item;

/* Consume n items in one write transaction. status[i]: JB_OK, or the
 * refusal of item i (nothing of it written; its message at msgs->data +
 * msg_off[i], NUL-terminated), or JB__REMOTE (Redis-decided: the caller
 * goes through Redis; empty message). Returns JB_OK once committed, else
 * the error that aborted the whole transaction (statuses undefined). */
int jb__store_consume_many(jb_store *s, const jb_store_finish_item *items,
                           size_t n, int64_t now_us, int *status,
                           jb_buf *msgs, size_t *msg_off);

/* -------------------------------------------------- inside store/ only */

/* Encode / decode a jobkey (schema 7: two bands, see the top of this
 * file). jb__jobkey: a job decided here, by its board sequence;
 * jb__jobkey_remote: a job Redis decides, by Redis's sequence (clamped to
 * JB_JOBKEY_RSEQ_MAX) and a tie-breaker (the lowest free one: two jobs
 * share a Redis sequence only across a loss of Redis's data).
 * jb__jobkey_seq gives the board sequence of the one and Redis's of the
 * other. */
#define JB_JOBKEY_LOCAL (UINT64_C(1) << 63)
#define JB_JOBKEY_RSEQ_MAX ((UINT64_C(1) << 47) - 1)
void jb__jobkey(uint8_t key[JB_JOBKEY_LEN], jb_priority p, uint64_t seq);
void jb__jobkey_remote(uint8_t key[JB_JOBKEY_LEN], jb_priority p,
                       uint64_t rseq, unsigned tie);
bool jb__jobkey_is_remote(const uint8_t key[JB_JOBKEY_LEN]);
/* In the Redis band under Redis sequence `rseq` (clamped as
 * jb__jobkey_remote clamps it)? */
bool jb__jobkey_has_rseq(const uint8_t key[JB_JOBKEY_LEN], uint64_t rseq);
/* The key's big-endian u64 as stored (either band). */
uint64_t jb__jobkey_value(const uint8_t key[JB_JOBKEY_LEN]);
jb_priority jb__jobkey_priority(const uint8_t key[JB_JOBKEY_LEN]);
uint64_t jb__jobkey_seq(const uint8_t key[JB_JOBKEY_LEN]);

#endif
