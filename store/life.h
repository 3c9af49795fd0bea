/*
 * life.h - a job's life beyond claim and consume (schema 8): delayed
 * jobs, attempts and the retry policy, `jobx` records, unique keys, dead
 * letters and cancel (store.h, "A job's life"). Inside store/ only.
 */
#ifndef JOBBOARD_STORE_LIFE_H
#define JOBBOARD_STORE_LIFE_H

#include "txn.h"

/* jb_jobx and its encoding: codec/job.h. */

/* The board's retry policy (meta "setting.retry"; the defaults when it
 * was never set). */
void jb__policy_default(jb_retry_policy *p);
/* The retry policy's key in `meta`, and its stored size. */
#define JB_POLICY_KEY "setting.retry"
#define JB_POLICY_LEN 24
int jb__policy_read(jb_store *s, MDB_txn *txn, jb_retry_policy *p);
int jb__policy_write(jb_store *s, MDB_txn *txn, const jb_retry_policy *p);

/* jobx records: MDB_NOTFOUND (x->found false) when the job has none, or
 * when its record does not decode (x->garbled: check reports it; the job
 * is claimed and completed as one without, and the record is replaced
 * by the next write of it or dropped with the job). */
int jb__jobx_get(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                 jb_jobx *x);
int jb__jobx_put(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                 const jb_jobx *x);
/* A new claim of job `uuid`: the progress an earlier claim reported goes
 * (its record is written only when it has some: one read otherwise). */
int jb__progress_clear(jb_store *s, MDB_txn *txn, const uint8_t uuid[16]);
/* The job leaves the board: its record goes (copied to *x) and its
 * unique key is freed. */
int jb__jobx_drop(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_jobx *x);

/* Unique keys: take (JB_EEXISTS with the holder's uuid in held_by and a
 * message when a live job holds it) and free (only if it names uuid). */
int jb__unique_take(jb_store *s, MDB_txn *txn, const char *key,
                    size_t key_len, const uint8_t uuid[16],
                    uint8_t held_by[16]);
int jb__unique_free(jb_store *s, MDB_txn *txn, const jb_jobx *x,
                    const uint8_t uuid[16]);

/* Delayed jobs: put one in `delayed` and `due`, read or delete it (both
 * entries), move up to `max` due ones to `ready`, and count the due ones
 * not moved yet (and the next due time after now, 0: none). */
void jb__due_key(uint8_t out[JB_DUEKEY_LEN], int64_t due_us,
                 const uint8_t jobkey[JB_JOBKEY_LEN]);
int jb__delay_put(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const uint8_t uuid[16],
                  int64_t modified_us, int64_t due_us);
int jb__delay_get(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_delayrec *r);
int jb__delay_del(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_delayrec *r);
int jb__promote_due(jb_store *s, MDB_txn *txn, int64_t now_us, size_t max);
/* Move job `jobkey` to `ready` if it is delayed and due (else nothing). */
int jb__promote_one(jb_store *s, MDB_txn *txn,
                    const uint8_t jobkey[JB_JOBKEY_LEN], int64_t now_us);
int jb__due_scan(jb_store *s, MDB_txn *txn, int64_t now_us, size_t *n_due,
                 int64_t *next_due_us);

/* The back-off before retry number `attempts` (>= 1), microseconds, with
 * jitter; and the maximum of attempts that applies (0: none). */
int64_t jb__backoff_us(const jb_retry_policy *board, const jb_jobx *x,
                       uint32_t attempts);
uint32_t jb__max_attempts(const jb_retry_policy *board, const jb_jobx *x);

/* A claim of a job posted with a time limit (JB_JOB_F_X): the claim's
 * lease ends at the limit at the latest (ops.c). */
int jb__limit_claim(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_claimrec *rec, int64_t now_bt);
/* Cap a renewed lease at the claim's limit. */
int jb__limit_cap(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_claimrec *rec);

/* A claim ended without a completion (abandon, retry, lapse): count the
 * attempt, keep the reason, and put the job back (ready, or delayed by
 * `delay_us`) or, when its attempts reached the maximum or `dead`, in the
 * dead letters. The claim record is already dropped. `jobkey` in h. */
typedef struct {
  const uint8_t *uuid;
  const jb_jobhdr *h;
  MDB_val posting;          /* in the jobs page */
  int64_t claimed_us;
  const char *who;          /* the last owner (not in a page this changes) */
  size_t who_len;
  const char *reason;
  size_t reason_len;
  int64_t now_us;
  int64_t delay_us;         /* < 0: the back-off's */
  bool dead;                /* to the dead letters now */
  bool snooze;              /* jb_snooze: a snooze, not an attempt */
  int event;                /* the event when it goes back: ABANDONED... */
} jb_attempt;
typedef struct {
  bool dead;
  int64_t due_us;
  uint32_t attempts;
} jb_attempt_out;
/* Count an attempt (and keep its reason) of a job whose claim is already
 * gone here: an abandon through Redis that the mirror recorded first. */
int jb__attempt_count(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                      const char *reason, size_t reason_len, int64_t now_us,
                      uint32_t *attempts);
int jb__attempt_end(jb_store *s, MDB_txn *txn, const jb_attempt *a,
                    jb_attempt_out *out);

/* A trash record's header (format 1 or 2; format 1 reads cause
 * JB_DEAD_TRASHED and no jobx record): false when malformed. */
bool jb__trashrec_read(const void *data, size_t len, jb_trashrec *t,
                       size_t *hdr_len);

/* Deadlines to start (store/expiry.c; store.h, `expiry`). An entry per
 * job with a deadline; jb__expiry_del of an absent entry is no error. */
int jb__expiry_put(jb_store *s, MDB_txn *txn, int64_t deadline_us,
                   const uint8_t uuid[16]);
int jb__expiry_del(jb_store *s, MDB_txn *txn, int64_t deadline_us,
                   const uint8_t uuid[16]);
/* A claim of job `uuid` (its record in x): the deadline no longer
 * applies (its entry goes, x forgets it and is written). */
int jb__deadline_claim(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                       jb_jobx *x);
/* End job `uuid` (unclaimed, posting in its jobs page, not changed yet)
 * as expired: history JB_END_EXPIRED, or a dead letter of cause
 * JB_DEAD_EXPIRED when it was posted with JB_POST_EXPIRES_DEAD; a
 * DEADLINE event. */
int jb__expire_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   const jb_jobhdr *h, MDB_val posting, const jb_jobx *x,
                   int64_t now_us);
/* End the jobs whose deadline is at or before now_us, at most `max`
 * (bounded work for a claim-next); how many entries it took to *ended. */
int jb__expire_due(jb_store *s, MDB_txn *txn, int64_t now_us, size_t max,
                   size_t *ended);
/* The most expired jobs one claim-next ends. */
#define JB_EXPIRE_MAX 256

/* Retention (store/retain.c; jobboard.h "retention"). The stored
 * setting's key in `meta` and its size (four i64: history_max,
 * history_max_age_ms, dead_max, dead_max_age_ms). */
#define JB_RETAIN_KEY "setting.retention"
#define JB_RETAIN_LEN 32
/* The last check's record (jb_board_check_ex with JB_CHECK_RECORD): five
 * 8-byte fields in host order, as jb_check_record lists them. */
#define JB_LASTCHECK_KEY "check.last"
#define JB_LASTCHECK_LEN 40
int jb__retention_read(jb_store *s, MDB_txn *txn, jb_retention *r);
/* The bounds a write applies: the stored setting's, else `hist`'s (the
 * writing handle's history bounds; NULL: the compiled-in defaults), else
 * the defaults; no bound is SIZE_MAX / INT64_MAX. */
int jb__retention_bounds(jb_store *s, MDB_txn *txn, const jb_hist_bounds *hist,
                         jb_hist_bounds *hist_out, jb_hist_bounds *dead_out);
/* `deadage` entries (store.h): one per dead letter, put and deleted with
 * its `trash` record. jb__deadage_del_rec deletes the entry of the trash
 * record `val` (none when it does not decode). */
int jb__deadage_put(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    int64_t trashed_us);
int jb__deadage_del_rec(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                        const void *val, size_t len);
/* Drop the oldest dead letters the bounds call for (beyond dead->max_count,
 * or older than dead->max_age_us at `now_us`), at most `max`; their
 * number to *pruned (may be NULL). */
int jb__dead_prune(jb_store *s, MDB_txn *txn, const jb_hist_bounds *dead,
                   int64_t now_us, size_t max, size_t *pruned);
/* A completion's retention step (ops.c jb__job_complete): the dead
 * letters pruned to the board's bounds, at most JB_RETAIN_PRUNE_MAX. */
int jb__retention_after_complete(jb_store *s, MDB_txn *txn,
                                 const jb_hist_bounds *hist, int64_t now_us);

#endif
