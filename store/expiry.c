/*
 * expiry.c - deadlines to start (jobboard.h, jb_post.expires_ms; store.h,
 * schema 11): the `expiry` index and the ending of the jobs whose deadline
 * passed unclaimed.
 *
 * A job's deadline is in its jobx record (format 3). Finding the jobs past
 * theirs by reading every record would cost a whole pass: `expiry` holds
 * one empty entry per job with a deadline, under the deadline and the
 * uuid (the uuid, not the jobkey: a publication changes a job's jobkey),
 * so the first key is the next to expire and a sweep reads only what it
 * ends. The entry is put with the post, and goes when the job is claimed
 * (the claim started it: the deadline no longer applies), leaves the
 * board, or expires.
 */
#include "life.h"

#include <string.h>

#define EXKEY_LEN 24

static void exkey(uint8_t out[EXKEY_LEN], int64_t deadline_us,
                  const uint8_t uuid[16]) {
  jb__put_be64(out, (uint64_t)deadline_us);
  memcpy(out + 8, uuid, 16);
}

int jb__expiry_put(jb_store *s, MDB_txn *txn, int64_t deadline_us,
                   const uint8_t uuid[16]) {
  uint8_t key[EXKEY_LEN];
  exkey(key, deadline_us, uuid);
  MDB_val k = {sizeof key, key}, v = {0, ""};
  return mdb_put(txn, s->expiry, &k, &v, 0);
}

int jb__expiry_del(jb_store *s, MDB_txn *txn, int64_t deadline_us,
                   const uint8_t uuid[16]) {
  uint8_t key[EXKEY_LEN];
  exkey(key, deadline_us, uuid);
  MDB_val k = {sizeof key, key};
  int rc = mdb_del(txn, s->expiry, &k, NULL);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The deadline no longer applies to job `uuid` (a claim, or a job the
 * sweep does not end): its entry goes and its record forgets it. */
static int forget(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  int64_t deadline_us, jb_jobx *x) {
  int rc = jb__expiry_del(s, txn, deadline_us, uuid);
  if (rc || !x->found || x->snz.deadline_us != deadline_us) return rc;
  x->snz.deadline_us = 0;
  return jb__jobx_put(s, txn, uuid, x);
}

int jb__deadline_claim(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                       jb_jobx *x) {
  if (!x->found || x->snz.deadline_us == 0) return 0;
  return forget(s, txn, uuid, x->snz.deadline_us, x);
}

int jb__expire_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   const jb_jobhdr *h, MDB_val posting, const jb_jobx *x,
                   int64_t now_us) {
  bool dead = (x->snz.flags & JB_JOBX_EXPIRES_DEAD) != 0;
  static const char why[] = "expired";
  /* The letter keeps the reason as its last attempt's (the done's). */
  jb_store_done done = {.end = dead ? JB_END_DEAD : JB_END_EXPIRED,
                        .bounds = &s->hist,
                        .cause = dead ? JB_DEAD_EXPIRED : 0,
                        .reason = dead ? why : NULL,
                        .reason_len = dead ? sizeof why - 1 : 0};
  jb_completing c = {.op = dead ? JB_RELEASE_TRASH : JB_RELEASE_CONSUME,
                     .uuid = uuid, .h = h, .posting = posting, .claim = NULL,
                     .who = "", .who_len = 0, .now_us = now_us, .done = &done,
                     .event = JB_EV_DEADLINE, .end = done.end,
                     .cause = done.cause,
                     .reason = dead ? why : NULL,
                     .reason_len = dead ? sizeof why - 1 : 0};
  return jb__job_complete(s, txn, &c);
}

/* End the job of the expiry entry (deadline_us, uuid), or drop the entry
 * when it names no job to end: gone, claimed, Redis-decided (Redis keeps
 * no deadline), or a record that says another deadline. */
static int expire_entry(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                        int64_t deadline_us, int64_t now_us) {
  jb_jobhdr h;
  MDB_val posting;
  int rc = jb__job_header(s, txn, uuid, &h, &posting);
  if (rc == MDB_NOTFOUND) return jb__expiry_del(s, txn, deadline_us, uuid);
  if (rc) return rc;
  jb_jobx x;
  if ((rc = jb__jobx_get(s, txn, uuid, &x)) && rc != MDB_NOTFOUND) return rc;
  if (!x.found || x.snz.deadline_us != deadline_us)
    return jb__expiry_del(s, txn, deadline_us, uuid);
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (rc == 0 || (h.flags & JB_JOB_F_REMOTE))
    return forget(s, txn, uuid, deadline_us, &x);
  return jb__expire_job(s, txn, uuid, &h, posting, &x, now_us);
}

int jb__expire_due(jb_store *s, MDB_txn *txn, int64_t now_us, size_t max,
                   size_t *ended) {
  *ended = 0;
  while (*ended < max) {
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->expiry, &cur);
    if (rc) return rc;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    uint8_t key[EXKEY_LEN];
    if (rc == 0 && k.mv_size == EXKEY_LEN) memcpy(key, k.mv_data, EXKEY_LEN);
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) return 0;
    if (rc) return rc;
    if (k.mv_size != EXKEY_LEN) return MDB_CORRUPTED;
    int64_t deadline = (int64_t)jb__be64(key);
    if (deadline > now_us) return 0;
    /* Each round deletes the first entry (ends its job or drops it). */
    if ((rc = expire_entry(s, txn, key + 8, deadline, now_us))) return rc;
    (*ended)++;
  }
  return 0;
}
