/*
 * dead.c - the dead letters (the `trash` table, store.h), cancel and
 * run-now: each operation one transaction, as in ops.c.
 */
#include "life.h"
#include "names.h"
#include "history.h"
#include "codec/posting.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- policy */

typedef struct {
  jb_retry_policy *get;
  const jb_retry_policy *set;
} policy_ctx;

static int policy_get_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  (void)status;
  policy_ctx *c = vctx;
  return jb__policy_read(s, txn, c->get);
}

static int policy_set_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  (void)status;
  policy_ctx *c = vctx;
  return jb__policy_write(s, txn, c->set);
}

int jb__store_policy_get(jb_store *s, jb_retry_policy *out) {
  policy_ctx c = {.get = out};
  return jb__store_read(s, policy_get_body, &c);
}

int jb__store_policy_set(jb_store *s, const jb_retry_policy *p) {
  policy_ctx c = {.set = p};
  return jb__store_write(s, policy_set_body, &c);
}

/* --------------------------------------------------------------- cancel */

typedef struct {
  const uint8_t *uuid;
  bool force;
  int64_t now_us;
  const jb_hist_bounds *bounds;
  size_t max;     /* flush: per transaction */
  size_t done;    /* flush: cancelled so far in this transaction */
  bool more;      /* flush: stopped at max */
  unsigned xflags; /* JB_STORE_DECIDED: Redis cancelled it */
} cancel_ctx;

/* Take job `uuid` (header h, posting) off the board as cancelled, or
 * with `bury` to the dead letters (cause JB_DEAD_BURIED); `claim` its
 * live claim record (NULL: unclaimed). */
static int leave_one(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                     const jb_jobhdr *h, MDB_val posting,
                     const jb_claimrec *claim, const char *owner,
                     int64_t now_us, const jb_hist_bounds *bounds, bool bury) {
  char who[JB_WHO_MAX];
  size_t who_len = 0;
  if (claim) {
    who_len = claim->owner_len > JB_WHO_MAX ? JB_WHO_MAX : claim->owner_len;
    memcpy(who, owner, who_len); /* before the claims page changes */
  }
  /* Buried, its history says dead, as every dead letter's does. */
  jb_store_done done = {.end = bury ? JB_END_DEAD : JB_END_CANCELLED,
                        .bounds = bounds};
  jb_completing cp = {.op = bury ? JB_RELEASE_TRASH : JB_RELEASE_CONSUME,
                      .uuid = uuid, .h = h,
                      .posting = posting, .claim = claim,
                      .claimed_us = claim ? claim->claimed_us : 0,
                      .who = who, .who_len = who_len, .now_us = now_us,
                      .done = &done, .event = bury ? 0 : JB_EV_CANCELLED,
                      .end = bury ? 0 : JB_END_CANCELLED,
                      .cause = bury ? JB_DEAD_BURIED : 0};
  return jb__job_complete(s, txn, &cp);
}

static int cancel_one(jb_store *s, MDB_txn *txn, const cancel_ctx *c,
                      const uint8_t uuid[16], const jb_jobhdr *h,
                      MDB_val posting, const jb_claimrec *claim,
                      const char *owner) {
  return leave_one(s, txn, uuid, h, posting, claim, owner, c->now_us,
                   c->bounds, false);
}

/* Job `uuid`'s header and posting, its uuid text to t; JB_ENOTFOUND with
 * a message when it is not on the board. */
static int job_on_board(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                        char t[JB_UUID_STRLEN], jb_jobhdr *h,
                        MDB_val *posting) {
  jb__uuid_format(t, uuid);
  int rc = jb__job_header(s, txn, uuid, h, posting);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", t);
  return rc;
}

static int cancel_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  cancel_ctx *c = vctx;
  char t[JB_UUID_STRLEN];
  jb_jobhdr h;
  MDB_val posting;
  int rc = job_on_board(s, txn, c->uuid, t, &h, &posting);
  if (rc) return rc;
  bool decided = c->xflags & JB_STORE_DECIDED;
  if ((h.flags & JB_JOB_F_REMOTE) && !decided) return JB__REMOTE;
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc == MDB_NOTFOUND)
    return cancel_one(s, txn, c, c->uuid, &h, posting, NULL, NULL);
  if (rc) return rc;
  if (decided) /* Redis has cancelled it: its local claim goes too */
    return cancel_one(s, txn, c, c->uuid, &h, posting, &rec, owner);
  const char *why = jb__claim_lapsed_why(s, &rec);
  if (!why && !c->force)
    return jb__err(JB_ECLAIMED, "job %s is claimed by %.*s: not cancelled "
                   "(force it to cancel a claimed job)", t,
                   (int)rec.owner_len, owner);
  return cancel_one(s, txn, c, c->uuid, &h, posting, &rec, owner);
}

int jb__store_cancel(jb_store *s, const uint8_t uuid[16], bool force,
                     int64_t now_us, const jb_hist_bounds *bounds,
                     unsigned xflags) {
  cancel_ctx c = {.uuid = uuid, .force = force, .now_us = now_us,
                  .bounds = bounds, .xflags = xflags};
  return jb__store_write(s, cancel_body, &c);
}

/* -------------------------------------------------------------- run now */

/* A delayed job becomes due now: the move a due job makes when claim-next
 * promotes it (same jobkey, so its sequence and listing place stay; its
 * `ready` entry wakes the waiters of its lane, and every commit the
 * others). */
static int run_now_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  const uint8_t *uuid = vctx;
  char t[JB_UUID_STRLEN];
  jb_jobhdr h;
  MDB_val posting;
  int rc = job_on_board(s, txn, uuid, t, &h, &posting);
  if (rc) return rc;
  jb_delayrec r;
  rc = jb__delay_get(s, txn, h.jobkey, &r);
  if (rc == 0) return jb__promote_one(s, txn, h.jobkey, INT64_MAX);
  if (rc != MDB_NOTFOUND) return rc;
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc == MDB_NOTFOUND) return 0; /* ready: claimable already */
  if (rc) return rc;
  if (jb__claim_lapsed_why(s, &rec)) return 0; /* claimable: its claim lapsed */
  return jb__err(JB_ECLAIMED, "job %s is claimed by %.*s: only a job waiting "
                 "for its due time can be run now", t, (int)rec.owner_len,
                 owner);
}

int jb__store_run_now(jb_store *s, const uint8_t uuid[16]) {
  return jb__store_write(s, run_now_body, (void *)uuid);
}

/* --------------------------------------------- a publication refused */

typedef struct {
  const uint8_t *uuid;
  const char *reason;
  size_t reason_len;
  int64_t now_us;
  const jb_hist_bounds *bounds;
  bool cancel; /* cancelled (history "cancelled"), not a dead letter */
} bury_ctx;

static int bury_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  bury_ctx *c = vctx;
  char t[JB_UUID_STRLEN];
  jb_jobhdr h;
  MDB_val posting;
  int rc = job_on_board(s, txn, c->uuid, t, &h, &posting);
  if (rc) return rc;
  if ((h.flags & JB_JOB_F_REMOTE) && !(h.flags & JB_JOB_F_PUBLISHING))
    return jb__err(JB_EINVAL, "job %s is published (Redis decides it): not "
                   "sent to the dead letters here", t);
  /* The reason goes into its jobx record, which the dead letter keeps. */
  jb_jobx x;
  if ((rc = jb__jobx_get(s, txn, c->uuid, &x)) && rc != MDB_NOTFOUND)
    return rc;
  if (!x.found) x.rec.format = 1;
  jb__jobx_set_reason(&x, c->reason, c->reason_len);
  if ((rc = jb__jobx_put(s, txn, c->uuid, &x)) ||
      (rc = jb__job_header(s, txn, c->uuid, &h, &posting)))
    return rc;
  jb_claimrec rec;
  const char *owner = NULL;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc && rc != MDB_NOTFOUND) return rc;
  return leave_one(s, txn, c->uuid, &h, posting, rc == 0 ? &rec : NULL, owner,
                   c->now_us, c->bounds, !c->cancel);
}

int jb__store_bury_unpublished(jb_store *s, const uint8_t uuid[16],
                               const char *reason, size_t reason_len,
                               int64_t now_us, const jb_hist_bounds *bounds,
                               bool cancel) {
  bury_ctx c = {uuid, reason, reason_len, now_us, bounds, cancel};
  return jb__store_write(s, bury_body, &c);
}

/* Flush: the unclaimed jobs decided here, from `ready` and then
 * `delayed`, up to c->max per transaction. */
static int flush_table(jb_store *s, MDB_txn *txn, cancel_ctx *c, MDB_dbi db) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, db, &cur);
  if (rc) return rc;
  MDB_val k, v;
  uint8_t after[JB_JOBKEY_LEN];
  bool have_after = false;
  while (c->done < c->max) {
    if (have_after) {
      k = (MDB_val){JB_JOBKEY_LEN, after};
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
      if (rc == 0 && memcmp(k.mv_data, after, JB_JOBKEY_LEN) == 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    } else {
      rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    }
    if (rc) break;
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size < 16) { rc = MDB_CORRUPTED; break; }
    memcpy(after, k.mv_data, JB_JOBKEY_LEN);
    have_after = true;
    uint8_t uuid[16];
    memcpy(uuid, v.mv_data, 16);
    jb_jobhdr h;
    MDB_val posting;
    if ((rc = jb__job_header(s, txn, uuid, &h, &posting)))
      break;
    if (h.flags & JB_JOB_F_REMOTE) continue; /* Redis's: not here */
    if ((rc = cancel_one(s, txn, c, uuid, &h, posting, NULL, NULL))) break;
    c->done++;
  }
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) rc = 0;
  if (rc == 0 && c->done >= c->max) c->more = true;
  return rc;
}

static int flush_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  cancel_ctx *c = vctx;
  c->done = 0;
  c->more = false;
  int rc = flush_table(s, txn, c, s->ready);
  if (rc == 0 && !c->more) rc = flush_table(s, txn, c, s->delayed);
  return rc;
}

int jb__store_flush(jb_store *s, int64_t now_us, const jb_hist_bounds *bounds,
                    size_t max, size_t *done, bool *more) {
  cancel_ctx c = {.now_us = now_us, .bounds = bounds, .max = max};
  int rc = jb__store_write(s, flush_body, &c);
  *done = rc == JB_OK ? c.done : 0;
  *more = rc == JB_OK && c.more;
  return rc;
}

/* ---------------------------------------------------------- dead letters */

typedef struct {
  const uint8_t *uuid; /* get, requeue */
  jb_buf *out;         /* get: the record; read: records */
  /* read: a batch after `after` (by trash key, uuid order) */
  const uint8_t *after;
  size_t max, n;
  /* requeue; `to`: the uuid the job takes on the board (NULL: its own;
   * a repost gives a new one) */
  const uint8_t *to;
  bool keep_attempts;
  int64_t now_us;
  uint8_t held_by[16];
  /* purge: where the last transaction stopped (the key to look at next) */
  int64_t before_us;
  size_t purged;
  bool more;
  uint8_t *resume;
  bool *has_resume;
} dead_ctx;

static int dead_get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  dead_ctx *c = vctx;
  MDB_val k = {16, (void *)c->uuid}, v;
  int rc = mdb_get(txn, s->trash, &k, &v);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    jb__uuid_format(t, c->uuid);
    return jb__err(JB_ENOTFOUND, "job %s is not in the dead letters", t);
  }
  if (rc) return rc;
  c->out->len = 0;
  return jb__buf_append(c->out, v.mv_data, v.mv_size);
}

int jb__store_dead_get(jb_store *s, const uint8_t uuid[16], jb_buf *out) {
  dead_ctx c = {.uuid = uuid, .out = out};
  return jb__store_read(s, dead_get_body, &c);
}

/* Records are appended to c->out as: u64 length, the uuid, the value. */
static int dead_read_body(jb_store *s, MDB_txn *txn, void *vctx,
                          int *status) {
  (void)status;
  dead_ctx *c = vctx;
  c->out->len = 0;
  c->n = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->trash, &cur);
  if (rc) return rc;
  MDB_val k, v;
  if (c->after) {
    k = (MDB_val){16, (void *)c->after};
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && k.mv_size == 16 && memcmp(k.mv_data, c->after, 16) == 0)
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  } else {
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  }
  for (; rc == 0 && c->n < c->max; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 16) continue;
    uint64_t len = v.mv_size;
    if ((rc = jb__buf_append(c->out, &len, sizeof len)) ||
        (rc = jb__buf_append(c->out, k.mv_data, 16)) ||
        (rc = jb__buf_append(c->out, v.mv_data, v.mv_size)))
      break;
    c->n++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__store_dead_read(jb_store *s, const uint8_t *after, size_t max,
                        jb_buf *out, size_t *n) {
  dead_ctx c = {.after = after, .max = max, .out = out};
  int rc = jb__store_read(s, dead_read_body, &c);
  *n = rc == JB_OK ? c.n : 0;
  return rc;
}

static int dead_count_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  (void)status;
  MDB_stat st;
  int rc = mdb_stat(txn, s->trash, &st);
  if (rc == 0) *(size_t *)vctx = st.ms_entries;
  return rc;
}

int jb__store_dead_count(jb_store *s, size_t *out) {
  return jb__store_read(s, dead_count_body, out);
}

/* Requeue: the job back on the board under a new sequence (its posting
 * re-encoded with it: the posting's sequence is the last field), ready,
 * with its jobx record (attempts reset unless kept) and unique key. */
static int requeue_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  dead_ctx *c = vctx;
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, c->uuid);
  MDB_val k = {16, (void *)c->uuid}, v;
  int rc = mdb_get(txn, s->trash, &k, &v);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "job %s is not in the dead letters", t);
  if (rc) return rc;
  jb_trashrec tr;
  size_t hl;
  if (!jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl))
    return jb__err(JB_ECORRUPT, "dead letter %s does not decode (run "
                   "'jobboard check')", t);
  /* A job Redis decided (published, or mirrored in) left Redis under this
   * uuid, and Redis keeps the mark of its publication (30 days, so that a
   * completed job is never published and run twice): back on the board
   * under the same uuid, it would be taken for that job and dropped at
   * its next publication. */
  if (jb__jobkey_is_remote(tr.jobkey) && c->to == NULL)
    return jb__err(JB_EINVAL, "dead letter %s was a job Redis decided (its "
                   "uuid was published): it cannot be requeued under the "
                   "same uuid (Redis would take it for the job already "
                   "completed); post it again as a new job instead "
                   "('jobboard dead requeue --as-new')", t);
  /* The job's uuid on the board; a repost's new one was never published. */
  const uint8_t *to = c->to ? c->to : c->uuid;
  /* Copied out: the trash page changes below. */
  jb_buf rec = {0};
  if ((rc = jb__buf_append(&rec, v.mv_data, v.mv_size))) return rc;
  const uint8_t *posting = rec.data + hl + tr.owner_len;
  jb_job job = {0};
  char why[200];
  rc = jb__posting_decode(&job, posting, tr.posting_len, why, sizeof why);
  jb_priority prio = job.priority;
  uint64_t oldseq = job.sequence;
  /* A repost's posting names its new uuid and is created now: its prefix
   * is encoded again, after the record in `rec` (which every path frees);
   * the record's own length stays `rec_len`. */
  size_t rec_len = rec.len, fresh_off = 0;
  if (rc == JB_OK && c->to) {
    char to_text[JB_UUID_STRLEN];
    jb__uuid_format(to_text, c->to);
    jb_posting_fields f = {
        .uuid = to_text, .name = job.name, .name_len = strlen(job.name),
        .priority = job.priority, .created_us = c->now_us,
        .details = job.details.data, .details_len = job.details.len,
        .book_name = job.book_name, .book_uuid = job.book_uuid};
    fresh_off = rec.len;
    rc = jb__posting_prefix(&rec, &f);
    posting = rec.data + hl + tr.owner_len; /* rec may have moved */
  }
  jb__job_clear(&job);
  if (rc != JB_OK) {
    jb__buf_free(&rec);
    return rc == JB_ECORRUPT
               ? jb__err(JB_ECORRUPT, "dead letter %s: its posting does not "
                         "decode (%s): it cannot be requeued", t, why)
               : rc;
  }
  uint8_t seqbuf[JB_SEQ_MAXLEN];
  size_t oldlen = jb__posting_seq(seqbuf, oldseq);
  if (oldlen > tr.posting_len ||
      memcmp(posting + tr.posting_len - oldlen, seqbuf, oldlen) != 0) {
    jb__buf_free(&rec);
    return jb__err(JB_ECORRUPT, "dead letter %s: its posting does not end "
                   "with its sequence: it cannot be requeued", t);
  }
  size_t prefix_len = tr.posting_len - oldlen;
  const uint8_t *prefix = posting;
  if (c->to) {
    prefix = rec.data + fresh_off;
    prefix_len = rec.len - fresh_off;
  }
  jb_jobx x = {0};
  if (tr.x_len &&
      jb__jobx_decode(&x, rec.data + hl + tr.owner_len + tr.posting_len,
                      tr.x_len) != 0) {
    jb__buf_free(&rec);
    return jb__err(JB_ECORRUPT, "dead letter %s: its attempts record does "
                   "not decode", t);
  }
  jb_log_writer lw;
  if ((rc = jb__log_open(s, txn, &lw))) {
    jb__buf_free(&rec);
    return rc;
  }
  uint64_t seq = lw.next;
  uint8_t jobkey[JB_JOBKEY_LEN];
  jb__jobkey(jobkey, prio, seq);
  size_t seqlen = jb__posting_seq(seqbuf, seq);
  if (x.found && x.rec.unique_len &&
      (rc = jb__unique_take(s, txn, x.unique, x.rec.unique_len, to,
                            c->held_by)))
    goto out;
  /* Its options stay (max_snoozes too); its counts, snoozes with
   * attempts, start again unless kept. A letter has no deadline. */
  bool keep_x = x.found && (x.rec.unique_len || x.rec.time_limit_ms ||
                            x.rec.max_attempts || x.rec.backoff_ms ||
                            x.rec.backoff_max_ms || x.snz.max_snoozes ||
                            c->keep_attempts);
  if (x.found) {
    x.rec.limit_bt = 0;
    x.snz.deadline_us = 0;
    if (!c->keep_attempts) {
      x.rec.attempts = 0;
      x.rec.reason_len = 0;
      x.rec.last_us = 0;
      x.snz.snoozes = 0;
    }
    if (keep_x && (rc = jb__jobx_put(s, txn, to, &x))) goto out;
  }
  bool has_opts = x.found && (x.rec.unique_len || x.rec.time_limit_ms ||
                              x.rec.max_attempts || x.rec.backoff_ms ||
                              x.rec.backoff_max_ms || x.snz.max_snoozes);
  jb_jobhdr h = {.format = 1, .flags = has_opts ? JB_JOB_F_X : 0,
                 .posted_us = tr.posted_us && !c->to ? tr.posted_us
                                                     : c->now_us};
  memcpy(h.jobkey, jobkey, JB_JOBKEY_LEN);
  {
    const char *name;
    size_t name_len;
    if (jb__history_posting_name(prefix, prefix_len, &name, &name_len)) {
      jb__hdr_set_lane(&h, jb__lane(name, name_len));
      if ((rc = jb__queue_note(s, txn, jb__hdr_lane(&h), name, name_len)))
        goto out;
    }
  }
  MDB_val jk = {16, (void *)to};
  MDB_val jv = {sizeof h + prefix_len + seqlen, NULL};
  rc = mdb_put(txn, s->jobs, &jk, &jv, MDB_NOOVERWRITE | MDB_RESERVE);
  if (rc == MDB_KEYEXIST) {
    rc = jb__err(JB_EINVAL, "job %s is on the board already", t);
    goto out;
  }
  if (rc) goto out;
  uint8_t *d = jv.mv_data;
  memcpy(d, &h, sizeof h);
  memcpy(d + sizeof h, prefix, prefix_len);
  memcpy(d + sizeof h + prefix_len, seqbuf, seqlen);
  if ((rc = jb__ready_add(s, txn, jobkey, to, c->now_us,
                          jb__hdr_lane(&h), MDB_NOOVERWRITE))) {
    if (rc == MDB_KEYEXIST) rc = MDB_CORRUPTED;
    goto out;
  }
  if ((rc = jb__deadage_del_rec(s, txn, c->uuid, rec.data, rec_len)) ||
      (rc = mdb_del(txn, s->trash, &k, NULL)))
    goto out;
  rc = jb__log_put(&lw, JB_EV_POSTED, to, jobkey, NULL, 0, c->now_us);
out:
  rc = jb__log_close(s, txn, &lw, rc);
  jb__buf_free(&rec);
  return rc;
}

int jb__store_dead_requeue(jb_store *s, const uint8_t uuid[16],
                           const uint8_t *to, bool keep_attempts,
                           int64_t now_us, uint8_t held_by[16]) {
  dead_ctx c = {.uuid = uuid, .to = to, .keep_attempts = keep_attempts,
                .now_us = now_us};
  int rc = jb__store_write(s, requeue_body, &c);
  if (rc == JB_EEXISTS && held_by) memcpy(held_by, c.held_by, 16);
  return rc;
}

static int purge_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  dead_ctx *c = vctx;
  c->purged = 0;
  c->more = false;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->trash, &cur);
  if (rc) return rc;
  MDB_val k, v;
  /* On from where the last transaction stopped: the records kept are not
   * read again by every batch. */
  if (*c->has_resume) {
    k = (MDB_val){16, c->resume};
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  } else {
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  }
  while (rc == 0) {
    if (c->purged >= c->max) {
      c->more = k.mv_size == 16; /* a malformed key ends the walk */
      if (c->more) memcpy(c->resume, k.mv_data, 16);
      *c->has_resume = c->more;
      break;
    }
    jb_trashrec tr;
    size_t hl;
    /* A record that does not decode goes only with "all". */
    bool old = jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl)
                   ? tr.trashed_us < c->before_us
                   : c->before_us == INT64_MAX;
    if (old) {
      uint8_t at[16];
      bool keyed = k.mv_size == sizeof at;
      if (keyed) memcpy(at, k.mv_data, sizeof at);
      /* Its `deadage` entry first: the time is read from the record. */
      if ((keyed && (rc = jb__deadage_del_rec(s, txn, at, v.mv_data,
                                              v.mv_size))) ||
          (rc = mdb_cursor_del(cur, 0)))
        break;
      c->purged++;
      /* On to the key after the deleted one (a cursor on a deleted last
       * record answers GET_CURRENT with EINVAL). */
      k = (MDB_val){sizeof at, at};
      rc = keyed ? mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)
                 : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    } else {
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* One letter by uuid, as purge deletes each: its `deadage` entry (found
 * by the time its record holds; a record that does not decode, whose
 * time cannot be read, has its entries looked for by uuid), then the
 * record. */
static int dead_remove_body(jb_store *s, MDB_txn *txn, void *vctx,
                            int *status) {
  (void)status;
  const uint8_t *uuid = vctx;
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->trash, &k, &v);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    jb__uuid_format(t, uuid);
    return jb__err(JB_ENOTFOUND, "job %s is not in the dead letters", t);
  }
  if (rc) return rc;
  jb_trashrec tr;
  size_t hl;
  if (jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl)) {
    rc = jb__deadage_del_rec(s, txn, uuid, v.mv_data, v.mv_size);
  } else {
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, s->deadage, &cur))) return rc;
    MDB_val dk, dv;
    for (rc = mdb_cursor_get(cur, &dk, &dv, MDB_FIRST); rc == 0;) {
      if (dk.mv_size == 8 + 16 &&
          memcmp((const uint8_t *)dk.mv_data + 8, uuid, 16) == 0) {
        uint8_t at[8 + 16];
        memcpy(at, dk.mv_data, sizeof at);
        if ((rc = mdb_cursor_del(cur, 0))) break;
        /* Re-seek: a cursor on a deleted last record answers EINVAL. */
        dk = (MDB_val){sizeof at, at};
        rc = mdb_cursor_get(cur, &dk, &dv, MDB_SET_RANGE);
      } else {
        rc = mdb_cursor_get(cur, &dk, &dv, MDB_NEXT);
      }
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  if (rc) return rc;
  return mdb_del(txn, s->trash, &k, NULL);
}

int jb__store_dead_remove(jb_store *s, const uint8_t uuid[16]) {
  return jb__store_write(s, dead_remove_body, (void *)uuid);
}

int jb__store_dead_purge(jb_store *s, int64_t before_us, size_t max,
                         size_t *purged, bool *more, uint8_t resume[16],
                         bool *has_resume) {
  dead_ctx c = {.before_us = before_us, .max = max, .resume = resume,
                .has_resume = has_resume};
  int rc = jb__store_write(s, purge_body, &c);
  *purged = rc == JB_OK ? c.purged : 0;
  *more = rc == JB_OK && c.more;
  return rc;
}
