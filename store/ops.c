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

static int get_next_seq(jb_store *s, MDB_txn *txn, uint64_t *next) {
  MDB_val k = {8, "next_seq"}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  if (v.mv_size != sizeof *next) return MDB_CORRUPTED;
  memcpy(next, v.mv_data, sizeof *next);
  return 0;
}

static int put_next_seq(jb_store *s, MDB_txn *txn, uint64_t next) {
  MDB_val k = {8, "next_seq"}, v = {sizeof next, &next};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

/*
 * Append one event to the change log. Its sequence is the last event's
 * plus one: trimming removes the oldest events only and always keeps
 * JB_LOG_KEEP of them, so the last event is never removed and log
 * sequences never repeat (and no counter has to be written per event).
 *
 * Trimming is batched: once the log holds JB_LOG_TRIM events more than it
 * keeps, one write deletes that many from the front. A write never does
 * more than JB_LOG_TRIM deletes, and one cursor descent serves them all.
 */
static int log_event(jb_store *s, MDB_txn *txn, int type,
                     const uint8_t uuid[16], const uint8_t jobkey[JB_JOBKEY_LEN],
                     const char *who, size_t who_len, int64_t now_us) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->log, &cur);
  if (rc) return rc;
  MDB_val k, v;
  uint64_t seq = 1;
  rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  if (rc == 0 && k.mv_size == 8) {
    seq = 0;
    for (int i = 0; i < 8; i++) seq = seq << 8 | ((uint8_t *)k.mv_data)[i];
    seq++;
  } else if (rc == 0) {
    rc = MDB_CORRUPTED;
  } else if (rc == MDB_NOTFOUND) {
    rc = 0;
  }
  uint8_t key[8];
  for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seq >> (56 - 8 * i));
  k = (MDB_val){8, key};
  v = (MDB_val){sizeof(jb_eventrec) + who_len, NULL};
  if (rc == 0) rc = mdb_cursor_put(cur, &k, &v, MDB_APPEND | MDB_RESERVE);
  if (rc == 0) {
    jb_eventrec ev = {.type = (uint8_t)type,
                      .priority = (uint8_t)jb__jobkey_priority(jobkey),
                      .owner_len = (uint16_t)who_len,
                      .time_us = now_us,
                      .job_seq = jb__jobkey_seq(jobkey)};
    memcpy(ev.uuid, uuid, 16);
    memcpy(v.mv_data, &ev, sizeof ev);
    if (who_len) memcpy((uint8_t *)v.mv_data + sizeof ev, who, who_len);
  }
  MDB_stat st;
  if (rc == 0) rc = mdb_stat(txn, s->log, &st);
  if (rc == 0 && st.ms_entries >= JB_LOG_KEEP + JB_LOG_TRIM) {
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    for (size_t i = 0; rc == 0 && i < JB_LOG_TRIM; i++) {
      rc = mdb_cursor_del(cur, 0);
      if (rc == 0 && i + 1 < JB_LOG_TRIM)
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
  }
  mdb_cursor_close(cur);
  return rc;
}

static void fmt_uuid(char out[JB_UUID_STRLEN], const uint8_t uuid[16]) {
  jb__uuid_format(out, uuid);
}

/* Find a job's key by uuid, or JB_ENOTFOUND with a message. */
static int find_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    uint8_t jobkey[JB_JOBKEY_LEN]) {
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->uuids, &k, &v);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, uuid);
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", t);
  }
  if (rc) return rc;
  if (v.mv_size != JB_JOBKEY_LEN) return MDB_CORRUPTED;
  memcpy(jobkey, v.mv_data, JB_JOBKEY_LEN);
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
                     const char *who, size_t who_len, int64_t now_us) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  MDB_val v = {sizeof(jb_claimrec) + who_len, NULL};
  int rc = mdb_put(txn, s->claims, &k, &v, MDB_RESERVE);
  if (rc) return rc;
  jb_claimrec rec = {.format = 1, .owner_len = (uint16_t)who_len,
                     .claimed_us = now_us};
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
  uint64_t next_seq;
  int rc = get_next_seq(s, txn, &next_seq);
  for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
    const jb_store_post *p = &ctx->posts[i];
    uint8_t jobkey[JB_JOBKEY_LEN], seqbuf[JB_SEQ_MAXLEN];
    uint64_t seq = next_seq++;
    size_t seqlen = jb__posting_seq(seqbuf, seq);
    jb__jobkey(jobkey, p->priority, seq);

    MDB_val k = {16, (void *)p->uuid}, v = {JB_JOBKEY_LEN, jobkey};
    rc = mdb_put(txn, s->uuids, &k, &v, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST) {
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, p->uuid);
      return jb__err(JB_EINVAL, "job %s is already on the board", t);
    }
    if (rc) return rc;

    k = (MDB_val){JB_JOBKEY_LEN, jobkey};
    v = (MDB_val){sizeof(jb_jobhdr) + p->prefix_len + seqlen, NULL};
    if ((rc = mdb_put(txn, s->jobs, &k, &v, MDB_RESERVE)) != 0) return rc;
    jb_jobhdr h = {.format = 1, .priority = (uint8_t)p->priority,
                   .posted_us = ctx->now_us};
    memcpy(h.uuid, p->uuid, 16);
    uint8_t *d = v.mv_data;
    memcpy(d, &h, sizeof h);
    memcpy(d + sizeof h, p->prefix, p->prefix_len);
    memcpy(d + sizeof h + p->prefix_len, seqbuf, seqlen);

    jb_readyrec r = {.modified_us = ctx->now_us};
    memcpy(r.uuid, p->uuid, 16);
    v = (MDB_val){sizeof r, &r};
    if ((rc = mdb_put(txn, s->ready, &k, &v, 0)) != 0) return rc;
    rc = log_event(s, txn, JB_EV_POSTED, p->uuid, jobkey, NULL, 0,
                   ctx->now_us);
  }
  if (rc == 0) rc = put_next_seq(s, txn, next_seq);
  return rc;
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
  uint8_t jobkey[JB_JOBKEY_LEN];
  int rc = find_job(s, txn, ctx->uuid, jobkey);
  if (rc) return rc;
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, jobkey, &rec, &owner);
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
    return put_claim(s, txn, jobkey, ctx->who, ctx->who_len, ctx->now_us);
  }
  if (rc != MDB_NOTFOUND) return rc;
  MDB_val k = {JB_JOBKEY_LEN, jobkey};
  rc = mdb_del(txn, s->ready, &k, NULL);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  if ((rc = put_claim(s, txn, jobkey, ctx->who, ctx->who_len, ctx->now_us)))
    return rc;
  return log_event(s, txn, JB_EV_CLAIMED, ctx->uuid, jobkey, ctx->who,
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
  if ((rc = put_claim(s, txn, jobkey, ctx->who, ctx->who_len, ctx->now_us)))
    return rc;
  if ((rc = log_event(s, txn, JB_EV_CLAIMED, ctx->uuid_out, jobkey,
                      ctx->who, ctx->who_len, ctx->now_us)))
    return rc;
  if (ctx->job) {
    /* Copy the posting out now; decode it after the commit, outside the
     * writer lock. */
    MDB_val jk = {JB_JOBKEY_LEN, jobkey}, jv;
    rc = mdb_get(txn, s->jobs, &jk, &jv);
    if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    if (jv.mv_size < sizeof(jb_jobhdr)) return MDB_CORRUPTED;
    ctx->job->posting.len = 0;
    if ((rc = jb__buf_append(&ctx->job->posting,
                             (uint8_t *)jv.mv_data + sizeof(jb_jobhdr),
                             jv.mv_size - sizeof(jb_jobhdr))))
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
  uint8_t jobkey[JB_JOBKEY_LEN];
  int rc = find_job(s, txn, ctx->uuid, jobkey);
  if (rc) return rc;
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, jobkey, &rec, &owner);
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
  MDB_val k = {JB_JOBKEY_LEN, jobkey}, v;
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
    if (ctx->op == JB_RELEASE_TRASH) {
      MDB_val jv;
      if ((rc = mdb_get(txn, s->jobs, &k, &jv)))
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
      if (jv.mv_size < sizeof(jb_jobhdr)) return MDB_CORRUPTED;
      size_t plen = jv.mv_size - sizeof(jb_jobhdr);
      MDB_val tk = {16, (void *)ctx->uuid};
      MDB_val tv = {sizeof(jb_trashrec) + ctx->who_len + plen, NULL};
      if ((rc = mdb_put(txn, s->trash, &tk, &tv, MDB_RESERVE))) return rc;
      jb_trashrec tr = {.format = 1, .owner_len = (uint16_t)ctx->who_len,
                        .posting_len = (uint32_t)plen,
                        .trashed_us = ctx->now_us};
      memcpy(tr.jobkey, jobkey, JB_JOBKEY_LEN);
      uint8_t *d = tv.mv_data;
      memcpy(d, &tr, sizeof tr);
      memcpy(d + sizeof tr, ctx->who, ctx->who_len);
      /* The jobs page is untouched until the delete below, so jv is valid. */
      memcpy(d + sizeof tr + ctx->who_len,
             (uint8_t *)jv.mv_data + sizeof(jb_jobhdr), plen);
    }
    if ((rc = mdb_del(txn, s->jobs, &k, NULL))) return rc;
    MDB_val uk = {16, (void *)ctx->uuid};
    if ((rc = mdb_del(txn, s->uuids, &uk, NULL))) return rc;
  }
  return log_event(s, txn, event, ctx->uuid, jobkey, ctx->who, ctx->who_len,
                   ctx->now_us);
}

int jb__store_release(jb_store *s, jb_release op, const uint8_t uuid[16],
                      const char *who, size_t who_len, int64_t now_us) {
  release_ctx ctx = {op, uuid, who, who_len, now_us};
  return jb__store_write(s, release_body, &ctx);
}

/* ----------------------------------------------------------------- reads */

/* Fill `raw` (pointers into the transaction's pages) for job `jobkey`. */
static int read_raw(jb_store *s, MDB_txn *txn, const uint8_t jobkey[JB_JOBKEY_LEN],
                    jb_job_raw *raw) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc) return rc;
  if (v.mv_size < sizeof(jb_jobhdr)) return MDB_CORRUPTED;
  const jb_jobhdr *h = v.mv_data; /* LMDB data is 2-byte aligned at least;
                                     read the fields by copy */
  jb_jobhdr hdr;
  memcpy(&hdr, h, sizeof hdr);
  *raw = (jb_job_raw){.uuid = (const uint8_t *)v.mv_data +
                              offsetof(jb_jobhdr, uuid),
                      .priority = jb__jobkey_priority(jobkey),
                      .sequence = jb__jobkey_seq(jobkey),
                      .modified_us = hdr.posted_us,
                      .posting = (uint8_t *)v.mv_data + sizeof hdr,
                      .posting_len = v.mv_size - sizeof hdr};
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, jobkey, &rec, &owner);
  if (rc == 0) {
    raw->owner = owner;
    raw->owner_len = rec.owner_len;
    raw->modified_us = rec.claimed_us;
    return 0;
  }
  if (rc != MDB_NOTFOUND) return rc;
  MDB_val rv;
  rc = mdb_get(txn, s->ready, &k, &rv);
  if (rc == 0 && rv.mv_size == sizeof(jb_readyrec)) {
    jb_readyrec r;
    memcpy(&r, rv.mv_data, sizeof r);
    raw->modified_us = r.modified_us;
  }
  return 0;
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
  uint8_t jobkey[JB_JOBKEY_LEN];
  int rc = find_job(s, txn, ctx->uuid, jobkey);
  if (rc) return rc;
  jb_job_raw raw;
  if ((rc = read_raw(s, txn, jobkey, &raw)))
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  return jb__job_load(ctx->job, &raw);
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
  int rc = mdb_get(txn, s->uuids, &k, &v);
  if (rc == MDB_NOTFOUND) {
    *ctx->state = JB_STATE_COMPLETE;
    return 0;
  }
  if (rc) return rc;
  if (v.mv_size != JB_JOBKEY_LEN) return MDB_CORRUPTED;
  jb_claimrec rec;
  const char *owner;
  rc = get_claim(s, txn, v.mv_data, &rec, &owner);
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

static int scan_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  scan_ctx *ctx = vctx;
  (void)status;
  ctx->n = 0;
  ctx->bytes->len = 0;
  MDB_cursor *cur;
  MDB_dbi dbi = (ctx->flags & JB_ONLY_UNCLAIMED) ? s->ready : s->jobs;
  int rc = mdb_cursor_open(txn, dbi, &cur);
  if (rc) return rc;
  MDB_val k, v;
  if (ctx->after) {
    k = (MDB_val){JB_JOBKEY_LEN, (void *)ctx->after};
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && k.mv_size == JB_JOBKEY_LEN &&
        memcmp(k.mv_data, ctx->after, JB_JOBKEY_LEN) == 0)
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  } else {
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  }
  while (rc == 0 && ctx->n < ctx->max) {
    if (k.mv_size != JB_JOBKEY_LEN) {
      rc = MDB_CORRUPTED;
      break;
    }
    jb_job_raw raw;
    rc = read_raw(s, txn, k.mv_data, &raw);
    if (rc == MDB_NOTFOUND) rc = MDB_CORRUPTED; /* ready entry, no job */
    if (rc) break;
    jb_store_item *it = &ctx->items[ctx->n++];
    memcpy(it->key, k.mv_data, JB_JOBKEY_LEN);
    memcpy(it->uuid, raw.uuid, 16);
    it->modified_us = raw.modified_us;
    it->claimed = raw.owner != NULL;
    it->owner_off = ctx->bytes->len;
    it->owner_len = raw.owner_len;
    if (raw.owner && (rc = jb__buf_append(ctx->bytes, raw.owner, raw.owner_len)))
      break;
    it->posting_off = ctx->bytes->len;
    it->posting_len = raw.posting_len;
    if ((rc = jb__buf_append(ctx->bytes, raw.posting, raw.posting_len))) break;
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__store_scan(jb_store *s, unsigned flags,
                   const uint8_t after[JB_JOBKEY_LEN], jb_store_item *items,
                   size_t max, jb_buf *bytes, size_t *n_out) {
  scan_ctx ctx = {flags, after, items, max, bytes, 0};
  int rc = jb__store_read(s, scan_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  return rc;
}
