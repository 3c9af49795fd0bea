/*
 * txn.h - transactions inside store/: the handle and the wrappers that
 * retry after the map grows (here or in another process).
 */
#ifndef JOBBOARD_STORE_TXN_H
#define JOBBOARD_STORE_TXN_H

#include "store.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* Big-endian integers in keys (LMDB sorts keys bytewise). */
static inline uint64_t jb__be64(const void *p) {
  const uint8_t *b = p;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | b[i];
  return v;
}

static inline uint32_t jb__be32(const void *p) {
  const uint8_t *b = p;
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
         b[3];
}

static inline void jb__put_be32(uint8_t *o, uint32_t v) {
  for (int i = 0; i < 4; i++) o[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline void jb__put_be64(uint8_t *o, uint64_t v) {
  for (int i = 0; i < 8; i++) o[i] = (uint8_t)(v >> (56 - 8 * i));
}

struct jb_store {
  MDB_env *env;
  MDB_dbi meta, jobs, ready, claims, trash, log, quarantine;
  MDB_dbi leases, holders, entities;
  MDB_dbi history; /* schema 3 (history.h) */
  MDB_dbi logtail; /* schema 5 (store.h) */
  MDB_dbi histends; /* schema 6 (history.h) */
  MDB_dbi delayed, due, jobx, unique; /* schema 8 (store.h) */
  MDB_dbi schedules;                  /* schema 8 (store/schedule.c) */
  MDB_dbi byname, queues;             /* schema 10 (store/names.h) */
  MDB_dbi deadage;                    /* schema 10 (store/retain.c) */
  MDB_dbi expiry;                     /* schema 11 (store/expiry.c) */
  /* The lanes (names.h) whose jobs the write transaction under way made
   * ready, as wake bits (wake.h JB_WAKE_LANE): reset when a write
   * transaction begins, read by its commit's wake-up. */
  uint32_t wake_lanes;
  uint32_t epoch; /* meta "epoch" for this boot, read (or bumped) at open */
  /* claim-next's sweep of process-bound claims (ops.c): when it last ran
   * and the holders key it stopped at. Used only inside write
   * transactions, which LMDB runs one at a time. */
  int64_t sweep_bt;
  uint8_t sweep_after[JB_HOLDERKEY_LEN];
  bool sweep_wrapped;
  /* The posting of the job being completed, copied for its history record
   * (ops.c jb__job_complete): the job's removal changes the page it is
   * in. Used only inside write transactions. */
  jb_buf hist_posting;
  /* The change log's bounds (resolved from the options at open) and when
   * its oldest event may next be too old, a hint that spares most writes
   * a look at it (logread.c). The hint is used only inside write
   * transactions. */
  uint64_t log_keep;
  int64_t log_max_age_us;
  int64_t log_age_due_us;
  /* The history's bounds of the handle that opened the store (resolved
   * from its options), for a write that completes a job without a
   * handle's bounds at hand: a failed attempt that sends the job to the
   * dead letters (life.c), by a retry, an abandon or a lapse: trimmed to
   * the compiled-in defaults instead, a board kept with a smaller
   * history_max would grow past it. Handles with other bounds in the
   * same process trim to their own in their consumes and trashes. */
  jb_hist_bounds hist;
  /*
   * Resizing the map is safe only while no transaction of this process is
   * open (LMDB's rule). Every transaction holds this lock shared; growing
   * the map holds it exclusive. Writer-preferring, so a grower is not
   * starved by a stream of readers. A thread never takes it twice.
   */
  pthread_rwlock_t resize_lock;
  /* The signal file (wake.c): the map in use (older ones chained behind
   * it; its id names the file in meta), the lock for changing it, the
   * watcher thread (started by the first wait) and its count of changes
   * seen to the file. */
  struct jb_sigmap *_Atomic sig;
  pthread_mutex_t sig_lock;
  bool sig_ready;
  struct jb_watcher *watcher;
  atomic_uint sig_dirgen;
  bool writemap;   /* durability none: the file must be preallocated */
  /* Opened read-only (JB_OPEN_READONLY): 0 no, else JB_READONLY_ASKED or
   * JB_READONLY_NOLOCK (without LMDB's locks). No signal file is mapped
   * and no write runs; waits look at the board every 200 ms. */
  int readonly;
  jb_durability durability;
  /* Durability interval (steady.c): the steady file, the pins, the
   * flusher. NULL for a read-only store. The pins are read transactions
   * that live across other transactions without the resize lock: they
   * never read a page (only their reader slot in lock.mdb matters, which
   * a map resize leaves alone), so growing the map under them is safe;
   * beginning and ending them takes the lock. */
  struct jb_steady *steady;
  /* A commit of this process failed in a way that leaves unknown what
   * the system kept of its writes (env.c, "After a failed commit"): every
   * later write through the store is refused, and so is a new open of the
   * board in this process while the store lives. `failed_why` (the cause)
   * is written once, under env.c's fail_lock, before `failed` is set. */
  atomic_bool failed;
  char failed_why[256];
  unsigned fork_gen; /* jb__fork_generation() at open */
  /* Group commit (env.c, "Gathered commits"): the writes of this
   * process's threads waiting for their turn, in arrival order, and
   * whether a leader is running some of them now. Under gc_lock. */
  pthread_mutex_t gc_lock;
  struct jb_wreq *gc_head, *gc_tail;
  size_t gc_len;        /* writes queued */
  bool gc_busy;         /* a leader is running some */
  bool gc_lingering;    /* the next leader waits for more to come */
  size_t gc_last_n;     /* the size of the last group */
  int64_t gc_last_us;   /* how long its commit took */
  char *path;
  /* The registry of open stores (env.c), under its mutex. */
  dev_t dev;
  ino_t ino;
  unsigned refs;
  struct jb_store *next;
};

/*
 * A transaction body. It returns JB_OK to commit, a JB_E* code (message
 * set) to abort, or an LMDB / errno code that the wrapper translates
 * (MDB_MAP_FULL makes the wrapper grow the map and run the body again, so
 * a body must not keep effects outside the transaction: it may run more
 * than once). `*status` (JB_OK on entry) is returned after a successful
 * commit: a body can commit and still report, say, JB_ECLAIMED.
 */
typedef int (*jb_txn_body)(jb_store *s, MDB_txn *txn, void *ctx, int *status);

/* A write transaction running `body`. Writes that threads of this
 * process start while another one's commit is under way are gathered
 * into one LMDB transaction (env.c, "Gathered commits"): a body that
 * fails is run again in a child transaction of its own, so it leaves no
 * trace and fails alone; the result, the status and the message are the
 * caller's own, as if it had run alone. */
int jb__store_write(jb_store *s, jb_txn_body body, void *ctx);
/* Mark the store failed (env.c, "After a failed commit"): every later
 * write of this process on the board is refused. `rc`: the cause. */
void jb__store_mark_failed(jb_store *s, int rc);
/* Take the map size another process grew the board to (MDB_MAP_RESIZED).
 * Called with no transaction of this thread open. */
int jb__store_adopt_map(jb_store *s);
int jb__store_read(jb_store *s, jb_txn_body body, void *ctx);

/* One write of a jb__store_write_many group. */
typedef struct {
  jb_txn_body body;
  void *ctx;
  int rc;          /* out: JB_OK, the body's *status, or its error */
  char msg[1024];  /* out: the message when rc is not JB_OK */
} jb_store_req;

/* Run `n` writes in ONE write transaction, each body in a child
 * transaction of its own: a body that fails (its req's rc says how)
 * leaves nothing behind, and the others commit. Returns JB_OK when the
 * transaction committed (or when every body failed: nothing to commit),
 * or the error that kept it from committing (then every req that had
 * succeeded carries it too, and nothing was written). A group is one
 * commit: acknowledged together, lost together by nothing short of what
 * loses a single commit in the board's durability. */
int jb__store_write_many(jb_store *s, jb_store_req *reqs, size_t n);
/* Tests only: gathered commits (of more than one write) so far in this
 * process; and make every leader wait until `hold` writes are queued
 * (at most 10 s; 0 or 1: no waiting) before it takes its group, so a
 * test gathers exactly the writes it starts together. */
unsigned long jb__store_test_groups(void);
void jb__store_test_hold(unsigned hold);

/* ------------------------------------- job and claim records (store/ops.c)
 * Shared by the files of store/ that write jobs (ops.c, mirror.c). */

/* A job's header (copied) and its posting (pointing into the
 * transaction's pages), or MDB_NOTFOUND (no message). */
int jb__job_header(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   jb_jobhdr *hdr, MDB_val *posting);

/* The claim record of `jobkey` (copied) and its owner (pointing into the
 * transaction's pages: copy it before writing), or MDB_NOTFOUND. */
int jb__claim_get(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_claimrec *rec,
                  const char **owner);

/* Write the claim record of `jobkey` and the `leases` / `holders` entries
 * its flags call for (`who` must not point into the claims table). */
int jb__claim_put(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const jb_claimrec *rec,
                  const char *who, size_t who_len);

/* A consume or trash taking a job off the board: the trash copy (trash),
 * its claim record with its index entries (or its `ready` entry), the job,
 * its history record and its CONSUMED / TRASHED event naming `who`. */
typedef struct {
  jb_release op;            /* JB_RELEASE_CONSUME or JB_RELEASE_TRASH */
  const uint8_t *uuid;
  const jb_jobhdr *h;
  MDB_val posting;          /* in the jobs page, not yet changed */
  const jb_claimrec *claim; /* the claim record to drop; NULL: ready */
  int64_t claimed_us;       /* for the history record (0: none) */
  const char *who;          /* may be empty; not in a page this changes */
  size_t who_len;
  int64_t now_us;
  const jb_store_done *done; /* NULL: no result, the default bounds */
  int event;                 /* 0: CONSUMED / TRASHED by op; else JB_EV_* */
  const char *reason;        /* the history record's reason (may be NULL) */
  size_t reason_len;
  /* Schema 8. */
  bool unindexed;            /* in no index any more (claim == NULL): an
                                attempt's end already dropped the claim */
  int end;                   /* 0: by op and done; else the jb_end */
  uint8_t cause;             /* JB_RELEASE_TRASH: the jb_dead_cause */
  uint32_t attempts;         /* claims the job had, for the history record
                                (0: not counted) */
} jb_completing;
int jb__job_complete(jb_store *s, MDB_txn *txn, const jb_completing *c);

/* claim-next and consume / trash inside a transaction of the caller's
 * (store/batch.c gathers several into one): exactly what
 * jb__store_claim_next_x and jb__store_finish do in theirs, errors and
 * JB__REMOTE included. jb__txn_claim_next fills `job`'s posting and
 * `raw` (may be NULL) for decoding after the commit, as claim-next does,
 * and sets *moved (may be NULL) when its reap sent a job to the dead
 * letters: a change that must commit even when it returns JB_ENOTFOUND.
 * jb__txn_finish sets *refused when the ownership check refused the
 * release (nothing was written: the transaction may go on); any other
 * error may follow writes, and the transaction must be aborted. */
int jb__txn_claim_next(jb_store *s, MDB_txn *txn, const jb_store_claim_req *req,
                       const uint8_t *after, bool skip_remote,
                       uint8_t uuid_out[16], uint8_t key_out[JB_JOBKEY_LEN],
                       uint64_t *token, jb_job *job, jb_job_raw *raw,
                       bool *moved);
int jb__txn_finish(jb_store *s, MDB_txn *txn, jb_release op,
                   const uint8_t uuid[16], const char *who, size_t who_len,
                   uint64_t token, int64_t now_us, const jb_store_done *done,
                   bool *refused);
/* jb__store_post_x's writes inside a transaction of the caller's
 * (store/schedule.c posts a tick's runs with the schedules' new state).
 * Any error may follow writes: the transaction must be aborted. */
/* Mark job `uuid` for publication (JB_STORE_PUB_PENDING) inside the caller's
 * transaction, as jb__store_set_published does; a job gone, or delayed
 * and not due, is left as it is (0). */
int jb__txn_mark_pending(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                         int64_t now_us);
int jb__txn_post(jb_store *s, MDB_txn *txn, const jb_store_post *posts,
                 size_t n, int64_t now_us, uint8_t held_by[16],
                 size_t *held_idx);

/* Write a quarantine record (check.c): key `table` + uuid, value
 * jb_quarrec, `why`, then the value kept. flags: 0, or MDB_NOOVERWRITE
 * (an existing record stays: MDB_KEYEXIST). */
int jb__quarantine_put(jb_store *s, MDB_txn *txn, uint8_t table,
                       const uint8_t uuid[16], const char *why,
                       const void *value, size_t value_len, int64_t now_us,
                       unsigned flags);

/* Delete a job's claim record and its `leases` / `holders` entries
 * (store/ops.c). */
int jb__store_drop_claim(jb_store *s, MDB_txn *txn,
                         const uint8_t jobkey[JB_JOBKEY_LEN],
                         const jb_claimrec *rec);

/* Schema 7's two jobkey bands (store.h). jb__jobkey_remote_free: the
 * remote-band key of Redis sequence `rseq` with the lowest free
 * tie-breaker (`self`, may be NULL: a job whose own key counts as free),
 * or MDB_KEYEXIST. jb__job_rekey: job `uuid` (header `h`, updated) moved
 * to `key` with `flags`: its `ready` entry or its claim record (with the
 * claim's `leases` / `holders` entries) and its header; nothing else
 * changes (no event: the job's place in the order changed, not its
 * state). */
int jb__jobkey_remote_free(jb_store *s, MDB_txn *txn, jb_priority p,
                           uint64_t rseq, const uint8_t self[16],
                           uint8_t out[JB_JOBKEY_LEN]);
int jb__job_rekey(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_jobhdr *h, const uint8_t key[JB_JOBKEY_LEN],
                  uint8_t flags);

/* The `leases` / `holders` key a claim record calls for (store.h). */
void jb__lease_key(uint8_t out[JB_LEASEKEY_LEN], const jb_claimrec *rec,
                   const uint8_t jobkey[JB_JOBKEY_LEN]);
void jb__holder_key(uint8_t out[JB_HOLDERKEY_LEN], const jb_claimrec *rec,
                    const uint8_t jobkey[JB_JOBKEY_LEN]);

/* Appending to the change log (ops.c): open a writer (its `next` is the
 * sequence the next event gets), put events, and close it, which moves
 * the tail to `log` and trims the log if due; jb__log_close takes the
 * status so far and only closes on error. A writer's cursor (on
 * `logtail`) must be the only one appending in `txn` until it is closed
 * (jb__log_event opens its own). */
typedef struct {
  MDB_cursor *cur;
  uint64_t next;
  uint64_t first_new; /* the first sequence this writer appends */
  int64_t now_us;     /* the last event's time: the age bound's "now" */
  uint32_t counts[16]; /* events put, by type: the counters (stats.c) */
} jb_log_writer;
int jb__log_open(jb_store *s, MDB_txn *txn, jb_log_writer *lw);
/* jb__log_open for a writer about to append `expect` events: from
 * JB_LOGTAIL_MOVE on, the tail is moved to `log` now and the events are
 * appended to `log` directly (each would otherwise be written to the
 * tail and moved again in the same commit); fewer go to the tail
 * (logread.c). */
int jb__log_open_for(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                     size_t expect);
int jb__log_put(jb_log_writer *lw, int type, const uint8_t uuid[16],
                const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                size_t who_len, int64_t now_us);
/* jb__log_put of a PROGRESS event: its percentage in tenths and its
 * message (at most JB_PROGRESS_MESSAGE_MAX bytes) after the owner. */
int jb__log_put_progress(jb_log_writer *lw, const uint8_t uuid[16],
                         const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                         size_t who_len, int64_t now_us, unsigned permille,
                         const char *msg, size_t msg_len);
int jb__log_close(jb_store *s, MDB_txn *txn, jb_log_writer *lw, int rc);

/* Append one change-log event in `txn` (and trim the log if due). */
int jb__log_event(jb_store *s, MDB_txn *txn, int type, const uint8_t uuid[16],
                  const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                  size_t who_len, int64_t now_us);

/* The sequence the next event gets: one past the last of `logtail` (`cur`
 * is a cursor on it), else of `log`, else 1 (logread.c). */
int jb__log_next(jb_store *s, MDB_txn *txn, MDB_cursor *cur, uint64_t *next);
/* After a write appended to the change log: the tail's move to `log` when
 * it holds JB_LOGTAIL_MOVE events or the log must be trimmed, and the
 * trimming, by size and by age, at most JB_LOG_TRIM events, never the
 * newest (logread.c). */
int jb__log_trim(jb_store *s, MDB_txn *txn, int64_t now_us, uint64_t appended);
/* jb__store_log_bounds inside `txn` (logread.c). */
int jb__log_bounds_txn(jb_store *s, MDB_txn *txn, uint64_t *first,
                       uint64_t *next);
/* The log bounds `o` asks for, defaults resolved. */
void jb__log_limits(const jb_board_options *o, uint64_t *keep,
                    int64_t *max_age_us);

/* Check's page accounting (pagecheck.c), inside the read transaction
 * `txn` of the check: problem lines are appended to `report` (each
 * NUL-terminated) and counted in *problems; *unreadable says whether a
 * page of a tree could not be read (then LMDB must not walk the tables:
 * it trusts its pages and may crash on them). JB__PAGES_AGAIN: the meta page
 * of txn's snapshot was rewritten before it could be read (two commits
 * since txn began): run it again in a fresh transaction. */
#define JB__PAGES_AGAIN (-901)
int jb__check_pages(jb_store *s, MDB_txn *txn, jb_buf *report,
                    size_t *problems, bool *unreadable);

/* Walk the claim records in jobkey order inside `txn`: `visit` gets each
 * jobkey, record and why it lapsed (NULL: it holds; holders looked up in
 * /proc once per process, ops.c). A non-zero return stops the walk and
 * is returned. */
typedef int (*jb_claim_visit)(const uint8_t *jobkey, const jb_claimrec *rec,
                              const char *lapsed, void *arg);
int jb__claims_walk(jb_store *s, MDB_txn *txn, jb_claim_visit visit,
                    void *arg);

/* The board's monotonic counters (store/stats.c): one value, an array of
 * JB_CTR_N u64 (host order), added to in the write transaction of the
 * change they count. It is a plain record of LMDB's main tree
 * (JB_MAIN_COUNTERS), beside the records that name the tables: every
 * commit rewrites that tree's page anyway (each changed table's root is
 * recorded there), so the counters cost no page of their own, where a
 * value in `meta` cost one more page per commit. Boards that kept it in
 * meta (JB_META_COUNTERS) are read there until their first count moves
 * it. Slot JB_CTR_EV + t
 * counts the change-log events of type t (JB_EV_*) ever appended (a log
 * writer adds its events once, at jb__log_close), slot JB_CTR_END + e the
 * history records ever written with ending e (jb_end; jb__history_put).
 * A board without the value (older, or written by a release before
 * counters) reads zeros, and a shorter value reads zeros past its end, so
 * no schema change: a release without counters leaves them behind. */
#define JB_META_COUNTERS "counters"
#define JB_MAIN_COUNTERS "jobboard.counters" /* never a table's name */
#define JB_CTR_EV 0
#define JB_CTR_END 16
#define JB_CTR_N 24
/* Add add[0..JB_CTR_N) to the counters inside `txn` (one get and one put
 * of the meta value; nothing when every add is 0). */
int jb__counters_add(jb_store *s, MDB_txn *txn, const uint32_t *add);
/* Read them inside `txn` (zeros when the board has none). */
int jb__counters_get(jb_store *s, MDB_txn *txn, uint64_t out[JB_CTR_N]);

/* Translate an LMDB or errno code into a JB_E* code with a message. */
int jb__store_error(int rc, const char *what);

/* Walk the `entities` table in name order inside `txn`: `visit` gets each
 * key and value with the decoded record, or NULL for a record that does
 * not decode (check.c reports those; nothing deletes them). A non-zero
 * return stops the walk and is returned. */
typedef int (*jb_entity_visit)(const MDB_val *key, const MDB_val *val,
                               const jb_entityrec *rec, void *arg);
int jb__entity_walk(jb_store *s, MDB_txn *txn, jb_entity_visit visit,
                    void *arg);

/* Walk the `schedules` table in name order inside `txn` (store/schedule.c;
 * check.c decodes each record, the tick plans the due ones). A non-zero
 * return of `visit` stops the walk and is returned. */
typedef int (*jb_sched_visit)(const MDB_val *key, const MDB_val *val,
                              void *arg);
int jb__sched_walk(jb_store *s, MDB_txn *txn, jb_sched_visit visit,
                   void *arg);

#endif
