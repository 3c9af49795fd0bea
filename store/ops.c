/*
 * ops.c - the board's operations, each one LMDB write (or read)
 * transaction over the tables described in store.h.
 */
#include "txn.h"
#include "core/posting.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

void jb__jobkey(uint8_t key[JB_JOBKEY_LEN], jb_priority p, uint64_t seq) {
  key[0] = (uint8_t)(JB_PRIORITY_VERY_HIGH - p); /* 0 sorts first */
  for (int i = 0; i < 8; i++) key[1 + i] = (uint8_t)(seq >> (56 - 8 * i));
}

jb_priority jb__jobkey_priority(const uint8_t key[JB_JOBKEY_LEN]) {
  return (jb_priority)(JB_PRIORITY_VERY_HIGH - key[0]);
}

uint64_t jb__jobkey_seq(const uint8_t key[JB_JOBKEY_LEN]) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | key[1 + i];
  return v;
}

static uint64_t be64(const void *p) {
  const uint8_t *b = p;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | b[i];
  return v;
}

/*
 * The change log, appended to by every write. Its sequence is the last
 * event's plus one: trimming removes the oldest events only and always
 * keeps JB_LOG_KEEP of them, so the last event is never removed and
 * sequences never repeat, with no counter to write per event.
 *
 * Trimming is batched: once the log holds JB_LOG_TRIM events more than it
 * keeps, one write deletes JB_LOG_TRIM of the oldest with one cursor
 * descent. A write never deletes more than that.
 */
typedef struct {
  MDB_cursor *cur;
  uint64_t next;
} log_writer;

static int log_open(jb_store *s, MDB_txn *txn, log_writer *lw) {
  int rc = mdb_cursor_open(txn, s->log, &lw->cur);
  if (rc) return rc;
  MDB_val k, v;
  rc = mdb_cursor_get(lw->cur, &k, &v, MDB_LAST);
  lw->next = 1;
  if (rc == 0 && k.mv_size != 8) rc = MDB_CORRUPTED;
  if (rc == 0) lw->next = be64(k.mv_data) + 1;
  if (rc == MDB_NOTFOUND) rc = 0;
  if (rc) mdb_cursor_close(lw->cur);
  return rc;
}

static int log_put(log_writer *lw, int type, const uint8_t uuid[16],
                   const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                   size_t who_len, int64_t now_us) {
  uint8_t key[8];
  uint64_t seq = lw->next;
  for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seq >> (56 - 8 * i));
  MDB_val k = {8, key}, v = {sizeof(jb_eventrec) + who_len, NULL};
  int rc = mdb_cursor_put(lw->cur, &k, &v, MDB_APPEND | MDB_RESERVE);
  if (rc) return rc;
  lw->next++;
  jb_eventrec ev = {.type = (uint8_t)type,
                    .priority = (uint8_t)jb__jobkey_priority(jobkey),
                    .owner_len = (uint16_t)who_len,
                    .time_us = now_us,
                    .job_seq = jb__jobkey_seq(jobkey)};
  memcpy(ev.uuid, uuid, 16);
  memcpy(v.mv_data, &ev, sizeof ev);
  if (who_len) memcpy((uint8_t *)v.mv_data + sizeof ev, who, who_len);
  return 0;
}

/* Trim if due, and close. `rc` is the status so far: on error, only close. */
static int log_close(jb_store *s, MDB_txn *txn, log_writer *lw, int rc) {
  MDB_stat st;
  if (rc == 0) rc = mdb_stat(txn, s->log, &st);
  if (rc == 0 && st.ms_entries >= JB_LOG_KEEP + JB_LOG_TRIM) {
    MDB_val k, v;
    rc = mdb_cursor_get(lw->cur, &k, &v, MDB_FIRST);
    for (size_t i = 0; rc == 0 && i < JB_LOG_TRIM; i++) {
      rc = mdb_cursor_del(lw->cur, 0);
      if (rc == 0 && i + 1 < JB_LOG_TRIM)
        rc = mdb_cursor_get(lw->cur, &k, &v, MDB_GET_CURRENT);
    }
  }
  mdb_cursor_close(lw->cur);
  return rc;
}

/* Append one event (open, put, close). */
static int log_event(jb_store *s, MDB_txn *txn, int type,
                     const uint8_t uuid[16], const uint8_t jobkey[JB_JOBKEY_LEN],
                     const char *who, size_t who_len, int64_t now_us) {
  log_writer lw;
  int rc = log_open(s, txn, &lw);
  if (rc) return rc;
  rc = log_put(&lw, type, uuid, jobkey, who, who_len, now_us);
  return log_close(s, txn, &lw, rc);
}

static void fmt_uuid(char out[JB_UUID_STRLEN], const uint8_t uuid[16]) {
  jb__uuid_format(out, uuid);
}

/* Find a job by uuid: its header (copied) and its posting (pointing into
 * the transaction's pages). JB_ENOTFOUND with a message when absent. */
static int find_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_jobhdr *hdr, MDB_val *posting) {
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, uuid);
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", t);
  }
  if (rc) return rc;
  if (v.mv_size < sizeof *hdr) return MDB_CORRUPTED;
  memcpy(hdr, v.mv_data, sizeof *hdr);
  if (posting)
    *posting = (MDB_val){v.mv_size - sizeof *hdr,
                         (uint8_t *)v.mv_data + sizeof *hdr};
  return 0;
}

/* The claim record of a job, or MDB_NOTFOUND. */
static int get_claim(jb_store *s, MDB_txn *txn, const uint8_t jobkey[JB_JOBKEY_LEN],
                     jb_claimrec *rec, const char **owner) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
  int rc = mdb_get(txn, s->claims, &k, &v);
  if (rc) return rc;
  if (v.mv_size < sizeof *rec) return MDB_CORRUPTED;
  memcpy(rec, v.mv_data, sizeof *rec);
  if (v.mv_size != sizeof *rec + rec->owner_len) return MDB_CORRUPTED;
  *owner = (const char *)v.mv_data + sizeof *rec;
  return 0;
}

static int put_claim(jb_store *s, MDB_txn *txn, const uint8_t jobkey[JB_JOBKEY_LEN],
                     const uint8_t uuid[16], const char *who, size_t who_len,
                     int64_t now_us) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  MDB_val v = {sizeof(jb_claimrec) + who_len, NULL};
  int rc = mdb_put(txn, s->claims, &k, &v, MDB_RESERVE);
  if (rc) return rc;
  jb_claimrec rec = {.format = 1, .owner_len = (uint16_t)who_len,
                     .claimed_us = now_us};
  memcpy(rec.uuid, uuid, 16);
  memcpy(v.mv_data, &rec, sizeof rec);
  memcpy((uint8_t *)v.mv_data + sizeof rec, who, who_len);
  return 0;
}

static bool same_owner(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && memcmp(a, b, alen) == 0;
}

/* ------------------------------------------------------------------ post */

typedef struct {
  const jb_store_post *posts;
  size_t n;
  int64_t now_us;
} post_ctx;

static int post_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  post_ctx *ctx = vctx;
  (void)status;
  log_writer lw;
  int rc = log_open(s, txn, &lw);
  if (rc) return rc;
  for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
    const jb_store_post *p = &ctx->posts[i];
    uint8_t jobkey[JB_JOBKEY_LEN], seqbuf[JB_SEQ_MAXLEN];
    uint64_t seq = lw.next; /* the sequence of this job's POSTED event */
    size_t seqlen = jb__posting_seq(seqbuf, seq);
    jb__jobkey(jobkey, p->priority, seq);

    MDB_val k = {16, (void *)p->uuid};
    MDB_val v = {sizeof(jb_jobhdr) + p->prefix_len + seqlen, NULL};
    rc = mdb_put(txn, s->jobs, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST) {
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, p->uuid);
      rc = jb__err(JB_EINVAL, "job %s is already on the board", t);
    }
    if (rc) break;
    jb_jobhdr h = {.format = 1, .posted_us = ctx->now_us};
    memcpy(h.jobkey, jobkey, JB_JOBKEY_LEN);
    uint8_t *d = v.mv_data;
    memcpy(d, &h, sizeof h);
    memcpy(d + sizeof h, p->prefix, p->prefix_len);
    memcpy(d + sizeof h + p->prefix_len, seqbuf, seqlen);

    jb_readyrec r = {.modified_us = ctx->now_us};
    memcpy(r.uuid, p->uuid, 16);
    k = (MDB_val){JB_JOBKEY_LEN, jobkey};
    v = (MDB_val){sizeof r, &r};
    if ((rc = mdb_put(txn, s->ready, &k, &v, 0))) break;
    rc = log_put(&lw, JB_EV_POSTED, p->uuid, jobkey, NULL, 0, ctx->now_us);
  }
  return log_close(s, txn, &lw, rc);
}

int jb__store_post(jb_store *s, const jb_store_post *posts, size_t n,
                   int64_t now_us) {
  post_ctx ctx = {posts, n, now_us};
  return jb__store_write(s, post_body, &ctx);
}

/* ----------------------------------------------------------------- claim */

typedef struct {
  const uint8_t *uuid;
  const char *who;
  size_t who_len;
  int64_t now_us;
  uint8_t *uuid_out;  /* claim-next */
  jb_job *job;        /* claim-next: wants a snapshot */
  jb_job_raw raw;     /* claim-next: what to decode after commit */
} claim_ctx;

static int claim_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  claim_ctx *ctx = vctx;
  jb_jobhdr h;
  int rc = find_job(s, txn, ctx->uuid, &h, NULL);
  if (rc) return rc;
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, h.jobkey, &rec, &owner);
  if (rc == 0) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, ctx->uuid);
    if (!same_owner(owner, rec.owner_len, ctx->who, ctx->who_len))
      return jb__err(JB_ECLAIMED, "job %s is already claimed by %.*s", t,
                     (int)rec.owner_len, owner);
    /* taskflow 5.0: a same-owner re-claim refreshes the claim's time (and,
     * later, its lease) but still reports "already claimed". */
    *status = jb__err(JB_ECLAIMED, "job %s is already claimed by %.*s (the "
                      "caller itself; its claim was refreshed)",
                      t, (int)rec.owner_len, owner);
    if ((rc = put_claim(s, txn, h.jobkey, ctx->uuid, ctx->who, ctx->who_len,
                        ctx->now_us)))
      return rc;
    return log_event(s, txn, JB_EV_REFRESHED, ctx->uuid, h.jobkey, ctx->who,
                     ctx->who_len, ctx->now_us);
  }
  if (rc != MDB_NOTFOUND) return rc;
  MDB_val k = {JB_JOBKEY_LEN, h.jobkey};
  rc = mdb_del(txn, s->ready, &k, NULL);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  if ((rc = put_claim(s, txn, h.jobkey, ctx->uuid, ctx->who, ctx->who_len,
                      ctx->now_us)))
    return rc;
  return log_event(s, txn, JB_EV_CLAIMED, ctx->uuid, h.jobkey, ctx->who,
                   ctx->who_len, ctx->now_us);
}

int jb__store_claim(jb_store *s, const uint8_t uuid[16], const char *who,
                    size_t who_len, int64_t now_us) {
  claim_ctx ctx = {.uuid = uuid, .who = who, .who_len = who_len,
                   .now_us = now_us};
  return jb__store_write(s, claim_body, &ctx);
}

static int claim_next_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  claim_ctx *ctx = vctx;
  (void)status;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->ready, &cur);
  if (rc) return rc;
  MDB_val k, v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  uint8_t jobkey[JB_JOBKEY_LEN];
  if (rc == 0 && (k.mv_size != JB_JOBKEY_LEN || v.mv_size != sizeof(jb_readyrec)))
    rc = MDB_CORRUPTED;
  if (rc == 0) {
    memcpy(jobkey, k.mv_data, JB_JOBKEY_LEN);
    memcpy(ctx->uuid_out, v.mv_data, 16); /* jb_readyrec.uuid is first */
    rc = mdb_cursor_del(cur, 0);
  }
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "no claimable job on the board");
  if (rc) return rc;
  if ((rc = put_claim(s, txn, jobkey, ctx->uuid_out, ctx->who, ctx->who_len,
                      ctx->now_us)))
    return rc;
  if ((rc = log_event(s, txn, JB_EV_CLAIMED, ctx->uuid_out, jobkey, ctx->who,
                      ctx->who_len, ctx->now_us)))
    return rc;
  if (ctx->job) {
    /* Copy the posting out now; decode it after the commit, outside the
     * writer lock. */
    jb_jobhdr h;
    MDB_val posting;
    if ((rc = find_job(s, txn, ctx->uuid_out, &h, &posting)))
      return rc == JB_ENOTFOUND ? MDB_CORRUPTED : rc;
    ctx->job->posting.len = 0;
    if ((rc = jb__buf_append(&ctx->job->posting, posting.mv_data,
                             posting.mv_size)))
      return rc;
    ctx->raw = (jb_job_raw){.priority = jb__jobkey_priority(jobkey),
                            .sequence = jb__jobkey_seq(jobkey),
                            .modified_us = ctx->now_us,
                            .owner = ctx->who,
                            .owner_len = ctx->who_len};
  }
  return 0;
}

int jb__store_claim_next(jb_store *s, uint8_t uuid_out[16], jb_job *job,
                         const char *who, size_t who_len, int64_t now_us) {
  claim_ctx ctx = {.who = who, .who_len = who_len, .now_us = now_us,
                   .uuid_out = uuid_out, .job = job};
  int rc = jb__store_write(s, claim_next_body, &ctx);
  if (rc != JB_OK || job == NULL) return rc;
  /* jb__job_load copies from raw.posting into job->posting: decode from a
   * buffer of our own instead. */
  jb_buf posting = job->posting;
  job->posting = (jb_buf){0};
  ctx.raw.uuid = uuid_out;
  ctx.raw.posting = posting.data;
  ctx.raw.posting_len = posting.len;
  rc = jb__job_load(job, &ctx.raw);
  jb__buf_free(&posting);
  return rc;
}

/* -------------------------------------------- abandon, consume, trash */

typedef struct {
  jb_release op;
  const uint8_t *uuid;
  const char *who;
  size_t who_len;
  int64_t now_us;
} release_ctx;

static const char *release_verb(jb_release op) {
  return op == JB_RELEASE_ABANDON ? "abandon"
         : op == JB_RELEASE_CONSUME ? "consume"
                                    : "trash";
}

static int release_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  release_ctx *ctx = vctx;
  (void)status;
  jb_jobhdr h;
  MDB_val posting;
  int rc = find_job(s, txn, ctx->uuid, &h, &posting);
  if (rc) return rc;
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, h.jobkey, &rec, &owner);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, ctx->uuid);
    return jb__err(JB_ENOTFOUND, "cannot %s job %s: it is not claimed (no "
                   "owner known)", release_verb(ctx->op), t);
  }
  if (rc) return rc;
  if (!same_owner(owner, rec.owner_len, ctx->who, ctx->who_len)) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, ctx->uuid);
    return jb__err(JB_ENOTOWNER, "cannot %s job %s: it is claimed by %.*s, "
                   "not by %.*s", release_verb(ctx->op), t, (int)rec.owner_len,
                   owner, (int)ctx->who_len, ctx->who);
  }
  MDB_val k = {JB_JOBKEY_LEN, h.jobkey}, v;
  if ((rc = mdb_del(txn, s->claims, &k, NULL))) return rc;
  int event;
  if (ctx->op == JB_RELEASE_ABANDON) {
    event = JB_EV_ABANDONED;
    jb_readyrec r = {.modified_us = ctx->now_us};
    memcpy(r.uuid, ctx->uuid, 16);
    v = (MDB_val){sizeof r, &r};
    if ((rc = mdb_put(txn, s->ready, &k, &v, 0))) return rc;
  } else {
    event = ctx->op == JB_RELEASE_CONSUME ? JB_EV_CONSUMED : JB_EV_TRASHED;
    MDB_val uk = {16, (void *)ctx->uuid};
    if (ctx->op == JB_RELEASE_TRASH) {
      MDB_val tv = {sizeof(jb_trashrec) + ctx->who_len + posting.mv_size, NULL};
      if ((rc = mdb_put(txn, s->trash, &uk, &tv, MDB_RESERVE))) return rc;
      jb_trashrec tr = {.format = 1, .owner_len = (uint16_t)ctx->who_len,
                        .posting_len = (uint32_t)posting.mv_size,
                        .trashed_us = ctx->now_us};
      memcpy(tr.jobkey, h.jobkey, JB_JOBKEY_LEN);
      uint8_t *d = tv.mv_data;
      memcpy(d, &tr, sizeof tr);
      memcpy(d + sizeof tr, ctx->who, ctx->who_len);
      /* Only trash and claims pages changed since find_job: the jobs page
       * that `posting` points into is intact until the delete below. */
      memcpy(d + sizeof tr + ctx->who_len, posting.mv_data, posting.mv_size);
    }
    if ((rc = mdb_del(txn, s->jobs, &uk, NULL))) return rc;
  }
  return log_event(s, txn, event, ctx->uuid, h.jobkey, ctx->who, ctx->who_len,
                   ctx->now_us);
}

int jb__store_release(jb_store *s, jb_release op, const uint8_t uuid[16],
                      const char *who, size_t who_len, int64_t now_us) {
  release_ctx ctx = {op, uuid, who, who_len, now_us};
  return jb__store_write(s, release_body, &ctx);
}

/* ----------------------------------------------------------------- reads */

/* Fill `raw` (pointers into the transaction's pages) for job `uuid`. */
static int read_raw(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_job_raw *raw) {
  jb_jobhdr h;
  MDB_val posting;
  int rc = find_job(s, txn, uuid, &h, &posting);
  if (rc) return rc;
  *raw = (jb_job_raw){.uuid = uuid,
                      .priority = jb__jobkey_priority(h.jobkey),
                      .sequence = jb__jobkey_seq(h.jobkey),
                      .modified_us = h.posted_us,
                      .posting = posting.mv_data,
                      .posting_len = posting.mv_size};
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, h.jobkey, &rec, &owner);
  if (rc == 0) {
    raw->owner = owner;
    raw->owner_len = rec.owner_len;
    raw->modified_us = rec.claimed_us;
    return 0;
  }
  if (rc != MDB_NOTFOUND) return rc;
  MDB_val k = {JB_JOBKEY_LEN, h.jobkey}, rv;
  rc = mdb_get(txn, s->ready, &k, &rv);
  if (rc == 0 && rv.mv_size == sizeof(jb_readyrec)) {
    jb_readyrec r;
    memcpy(&r, rv.mv_data, sizeof r);
    raw->modified_us = r.modified_us;
  }
  return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* in neither index */
}

typedef struct {
  const uint8_t *uuid;
  jb_job *job;
  char *owner;
  jb_state *state;
  size_t *count;
  unsigned flags;
} read_ctx;

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  jb_job_raw raw;
  int rc = read_raw(s, txn, ctx->uuid, &raw);
  return rc ? rc : jb__job_load(ctx->job, &raw);
}

int jb__store_get(jb_store *s, const uint8_t uuid[16], jb_job *job) {
  read_ctx ctx = {.uuid = uuid, .job = job};
  return jb__store_read(s, get_body, &ctx);
}

static int owner_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  ctx->owner[0] = '\0';
  MDB_val k = {16, (void *)ctx->uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc == MDB_NOTFOUND) {
    *ctx->state = JB_STATE_COMPLETE;
    return 0;
  }
  if (rc) return rc;
  jb_jobhdr h;
  if (v.mv_size < sizeof h) return MDB_CORRUPTED;
  memcpy(&h, v.mv_data, sizeof h);
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, h.jobkey, &rec, &owner);
  if (rc == MDB_NOTFOUND) {
    *ctx->state = JB_STATE_UNCLAIMED;
    return 0;
  }
  if (rc) return rc;
  *ctx->state = JB_STATE_CLAIMED;
  size_t n = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
  memcpy(ctx->owner, owner, n);
  ctx->owner[n] = '\0';
  return 0;
}

int jb__store_owner(jb_store *s, const uint8_t uuid[16],
                    char owner[JB_WHO_MAX + 1], jb_state *state) {
  read_ctx ctx = {.uuid = uuid, .owner = owner, .state = state};
  return jb__store_read(s, owner_body, &ctx);
}

static int count_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  MDB_stat st;
  int rc = mdb_stat(txn, (ctx->flags & JB_ONLY_UNCLAIMED) ? s->ready : s->jobs,
                    &st);
  if (rc == 0) *ctx->count = st.ms_entries;
  return rc;
}

int jb__store_count(jb_store *s, size_t *out, unsigned flags) {
  read_ctx ctx = {.count = out, .flags = flags};
  return jb__store_read(s, count_body, &ctx);
}

/* ------------------------------------------------------------------ scan */

typedef struct {
  unsigned flags;
  const uint8_t *after;
  jb_store_item *items;
  size_t max;
  jb_buf *bytes;
  size_t n;
} scan_ctx;

/* Position `cur` on the first key after ctx->after (or the first key). */
static int scan_start(MDB_cursor *cur, const uint8_t *after, MDB_val *k,
                      MDB_val *v) {
  if (after == NULL) return mdb_cursor_get(cur, k, v, MDB_FIRST);
  *k = (MDB_val){JB_JOBKEY_LEN, (void *)after};
  int rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
  if (rc == 0 && k->mv_size == JB_JOBKEY_LEN &&
      memcmp(k->mv_data, after, JB_JOBKEY_LEN) == 0)
    rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
  return rc;
}

static int scan_add(jb_store *s, MDB_txn *txn, scan_ctx *ctx,
                    const MDB_val *k, const uint8_t uuid[16]) {
  if (k->mv_size != JB_JOBKEY_LEN) return MDB_CORRUPTED;
  jb_job_raw raw;
  int rc = read_raw(s, txn, uuid, &raw);
  if (rc == JB_ENOTFOUND) return MDB_CORRUPTED; /* index entry, no job */
  if (rc) return rc;
  jb_store_item *it = &ctx->items[ctx->n++];
  memcpy(it->key, k->mv_data, JB_JOBKEY_LEN);
  memcpy(it->uuid, uuid, 16);
  it->modified_us = raw.modified_us;
  it->claimed = raw.owner != NULL;
  it->owner_off = ctx->bytes->len;
  it->owner_len = raw.owner_len;
  if (raw.owner && (rc = jb__buf_append(ctx->bytes, raw.owner, raw.owner_len)))
    return rc;
  it->posting_off = ctx->bytes->len;
  it->posting_len = raw.posting_len;
  return jb__buf_append(ctx->bytes, raw.posting, raw.posting_len);
}

/*
 * The whole board in listing order is the merge of two walks in jobkey
 * order: `ready` (unclaimed) and `claims` (claimed). Each job is in exactly
 * one of them, so the merge sees each job once.
 */
static int scan_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  scan_ctx *ctx = vctx;
  (void)status;
  ctx->n = 0;
  ctx->bytes->len = 0;
  bool all = !(ctx->flags & JB_ONLY_UNCLAIMED);
  MDB_cursor *rcur = NULL, *ccur = NULL;
  MDB_val rk, rv, ck, cv;
  int rr, cr = MDB_NOTFOUND;
  int rc = mdb_cursor_open(txn, s->ready, &rcur);
  if (rc == 0 && all) rc = mdb_cursor_open(txn, s->claims, &ccur);
  if (rc) goto out;
  rr = scan_start(rcur, ctx->after, &rk, &rv);
  if (all) cr = scan_start(ccur, ctx->after, &ck, &cv);
  while (rc == 0 && ctx->n < ctx->max) {
    if ((rr && rr != MDB_NOTFOUND) || (cr && cr != MDB_NOTFOUND)) {
      rc = rr && rr != MDB_NOTFOUND ? rr : cr;
      break;
    }
    if (rr == MDB_NOTFOUND && cr == MDB_NOTFOUND) break;
    bool take_ready = cr == MDB_NOTFOUND ||
                      (rr == 0 && memcmp(rk.mv_data, ck.mv_data,
                                         JB_JOBKEY_LEN) < 0);
    if (take_ready) {
      if (rv.mv_size != sizeof(jb_readyrec)) { rc = MDB_CORRUPTED; break; }
      rc = scan_add(s, txn, ctx, &rk, rv.mv_data);
      rr = mdb_cursor_get(rcur, &rk, &rv, MDB_NEXT);
    } else {
      if (cv.mv_size < sizeof(jb_claimrec)) { rc = MDB_CORRUPTED; break; }
      rc = scan_add(s, txn, ctx, &ck, cv.mv_data);
      cr = mdb_cursor_get(ccur, &ck, &cv, MDB_NEXT);
    }
  }
out:
  if (rcur) mdb_cursor_close(rcur);
  if (ccur) mdb_cursor_close(ccur);
  return rc;
}

int jb__store_scan(jb_store *s, unsigned flags,
                   const uint8_t after[JB_JOBKEY_LEN], jb_store_item *items,
                   size_t max, jb_buf *bytes, size_t *n_out) {
  scan_ctx ctx = {flags, after, items, max, bytes, 0};
  int rc = jb__store_read(s, scan_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  return rc;
}
