/*
 * mirror.c - bringing jobs decided elsewhere (JB_JOB_F_REMOTE) into the
 * board as the remote side lists them, taking them off when it no longer
 * does, and the board's settings (store.h, "the mirror").
 *
 * Each call is one write transaction over the tables of store.h, written
 * with the helpers of ops.c (txn.h) so that the indexes (ready, claims,
 * leases, holders) and the change log stay as every other write leaves
 * them: check.c finds nothing to report after any of these.
 */
#include "txn.h"
#include "history.h"
#include "life.h"
#include "names.h"

#include <string.h>

/* ------------------------------------------------------------- listings */

typedef struct {
  const jb_store_listing *l;
  size_t n;
  int64_t read_us;
  int64_t now_us;
  int64_t now_bt;
  int *results;
  jb_hist_set *done; /* the history's uuids, read once per transaction */
} mirror_ctx;

/* Give `rec` the wall-clock expiry `expires_us` (0: none) as a lease on
 * CLOCK_BOOTTIME. An expiry already past is kept as a lease that has
 * lapsed (readers see the job unclaimed; claim-next reaps it). */
static void set_expiry(jb_store *s, jb_claimrec *rec, int64_t expires_us,
                       const mirror_ctx *ctx) {
  if (expires_us <= 0) {
    rec->flags &= (uint8_t)~JB_CLAIM_F_LEASE;
    rec->expires_bt = 0;
    rec->lease_ms = 0;
    return;
  }
  int64_t left_us = expires_us - ctx->now_us;
  rec->flags |= JB_CLAIM_F_LEASE;
  rec->epoch = s->epoch;
  rec->expires_bt = ctx->now_bt + left_us;
  rec->lease_ms = left_us >= 1000 ? left_us / 1000 : 1;
}

/* Does the claim `rec` already expire when the listing says (within
 * JB_MIRROR_EXPIRY_SLACK_US)? */
static bool same_expiry(const jb_store *s, const jb_claimrec *rec,
                        int64_t expires_us, const mirror_ctx *ctx) {
  bool lease = (rec->flags & JB_CLAIM_F_LEASE) != 0;
  if (expires_us <= 0) return !lease;
  if (!lease || rec->epoch != s->epoch) return false;
  int64_t local_us = ctx->now_us + (rec->expires_bt - ctx->now_bt);
  int64_t d = local_us - expires_us;
  return d > -JB_MIRROR_EXPIRY_SLACK_US && d < JB_MIRROR_EXPIRY_SLACK_US;
}

/* The listing's claim, as a new claim record of job `jobkey` (whose ready
 * entry or earlier claim is already gone), and its CLAIMED event; the
 * token is that event's sequence, as for every claim (ops.c). */
static int put_listed_claim(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                            const uint8_t jobkey[JB_JOBKEY_LEN],
                            const jb_store_listing *l, const mirror_ctx *ctx) {
  jb_claimrec rec = {.format = 2, .owner_len = (uint16_t)l->owner_len,
                     .epoch = s->epoch, .claimed_us = ctx->now_us,
                     .token = lw->next};
  memcpy(rec.uuid, l->uuid, 16);
  set_expiry(s, &rec, l->expires_us, ctx);
  int rc = jb__claim_put(s, txn, jobkey, &rec, l->owner, l->owner_len);
  /* A new claim starts without the progress of an earlier one. */
  if (rc == 0) rc = jb__progress_clear(s, txn, l->uuid);
  if (rc) return rc;
  return jb__log_put(lw, JB_EV_CLAIMED, l->uuid, jobkey, l->owner,
                     l->owner_len, ctx->now_us);
}

static int put_ready(jb_store *s, MDB_txn *txn,
                     const uint8_t jobkey[JB_JOBKEY_LEN],
                     const uint8_t uuid[16], int64_t now_us) {
  return jb__ready_add_job(s, txn, jobkey, uuid, now_us, 0);
}

/* A job not on the board: on it, in Redis's order (the remote band under
 * the posting's sequence: store.h), its posting verbatim, POSTED, and its
 * claim if listed with an owner. */
static int insert_listing(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                          const jb_store_listing *l, const mirror_ctx *ctx) {
  uint8_t jobkey[JB_JOBKEY_LEN];
  int rc = jb__jobkey_remote_free(s, txn, l->priority, l->sequence, NULL,
                                  jobkey);
  if (rc) return rc;
  MDB_val k = {16, (void *)l->uuid};
  MDB_val v = {sizeof(jb_jobhdr) + l->posting_len, NULL};
  rc = mdb_put(txn, s->jobs, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
  if (rc) return rc;
  jb_jobhdr h = {.format = 1, .flags = JB_JOB_F_REMOTE,
                 .posted_us = ctx->now_us};
  memcpy(h.jobkey, jobkey, JB_JOBKEY_LEN);
  const char *name;
  size_t name_len;
  if (jb__history_posting_name(l->posting, l->posting_len, &name,
                               &name_len)) {
    jb__hdr_set_lane(&h, jb__lane(name, name_len));
    if ((rc = jb__queue_note(s, txn, jb__hdr_lane(&h), name, name_len)))
      return rc;
  }
  memcpy(v.mv_data, &h, sizeof h);
  memcpy((uint8_t *)v.mv_data + sizeof h, l->posting, l->posting_len);
  if ((rc = jb__log_put(lw, JB_EV_POSTED, l->uuid, jobkey, NULL, 0,
                        ctx->now_us)))
    return rc;
  if (l->owner == NULL) return put_ready(s, txn, jobkey, l->uuid, ctx->now_us);
  return put_listed_claim(s, txn, lw, jobkey, l, ctx);
}

/* A job decided remotely that is on the board: in Redis's order under the
 * listing's sequence (a job Redis lost and that was published again has a
 * new one), and its claim made to match the listing's (core/sync_hook.h),
 * unless changed here at or after read_us. */
static int update_listing(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                          const jb_store_listing *l, jb_jobhdr *h,
                          const mirror_ctx *ctx, int *res) {
  const uint8_t *jobkey = h->jobkey;
  bool moved = false;
  int rc;
  if (!(h->flags & JB_JOB_F_PUBLISHING) &&
      !jb__jobkey_has_rseq(jobkey, l->sequence)) {
    uint8_t key[JB_JOBKEY_LEN];
    if ((rc = jb__jobkey_remote_free(s, txn, jb__jobkey_priority(jobkey),
                                     l->sequence, l->uuid, key)) ||
        (rc = jb__job_rekey(s, txn, l->uuid, h, key, h->flags)))
      return rc;
    moved = true;
  }
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, jobkey, &rec, &owner);
  if (rc && rc != MDB_NOTFOUND) return rc;
  bool claimed = rc == 0;
  int64_t changed_us;
  if (claimed) {
    changed_us = rec.claimed_us;
  } else {
    MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
    /* Redis lists it: a delayed job here is due there (life.h). */
    if ((rc = jb__promote_one(s, txn, jobkey, INT64_MAX))) return rc;
    if ((rc = mdb_get(txn, s->ready, &k, &v)))
      return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* in neither */
    jb_readyrec r;
    if (v.mv_size != sizeof r) return MDB_CORRUPTED;
    memcpy(&r, v.mv_data, sizeof r);
    changed_us = r.modified_us;
  }
  *res = moved ? JB_STORE_MIRROR_UPDATED : JB_STORE_MIRROR_SAME;
  if (ctx->read_us > 0 && changed_us >= ctx->read_us) return 0;
  if (l->owner == NULL) {
    if (!claimed) return 0;
    /* Unclaimed there: the local claim ends, ABANDONED naming its owner
     * (copied before the claims page changes). */
    char was[JB_WHO_MAX];
    size_t was_len = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
    memcpy(was, owner, was_len);
    if ((rc = jb__store_drop_claim(s, txn, jobkey, &rec)) ||
        (rc = put_ready(s, txn, jobkey, l->uuid, ctx->now_us)))
      return rc;
    *res = JB_STORE_MIRROR_UPDATED;
    return jb__log_put(lw, JB_EV_ABANDONED, l->uuid, jobkey, was, was_len,
                       ctx->now_us);
  }
  bool same = claimed && rec.owner_len == l->owner_len &&
              memcmp(owner, l->owner, l->owner_len) == 0;
  if (!same) {
    /* Another owner, or one where there was none: the claim replaced. */
    rc = claimed ? jb__store_drop_claim(s, txn, jobkey, &rec)
                 : jb__ready_remove(s, txn, jobkey, jb__hdr_lane(h));
    if (rc) return rc;
    *res = JB_STORE_MIRROR_UPDATED;
    return put_listed_claim(s, txn, lw, jobkey, l, ctx);
  }
  /* The same owner: only a different expiry is copied. A claim bound to a
   * process here without a lease keeps both (the process binding is what
   * ends it; the remote side's short expiry is kept alive for it). */
  bool bound_no_lease = (rec.flags & JB_CLAIM_F_BOUND) &&
                        !(rec.flags & JB_CLAIM_F_LEASE);
  if (bound_no_lease || same_expiry(s, &rec, l->expires_us, ctx)) return 0;
  jb_claimrec fresh = rec;
  set_expiry(s, &fresh, l->expires_us, ctx);
  if ((rc = jb__store_drop_claim(s, txn, jobkey, &rec)) ||
      (rc = jb__claim_put(s, txn, jobkey, &fresh, l->owner, l->owner_len)))
    return rc;
  *res = JB_STORE_MIRROR_UPDATED;
  return jb__log_put(lw, JB_EV_EXTENDED, l->uuid, jobkey, l->owner,
                     l->owner_len, ctx->now_us);
}

static int mirror_one(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                      const jb_store_listing *l, const mirror_ctx *ctx,
                      int *res) {
  jb_jobhdr h;
  int rc = jb__job_header(s, txn, l->uuid, &h, NULL);
  if (rc == 0) {
    if (!(h.flags & JB_JOB_F_REMOTE)) {
      *res = JB_STORE_MIRROR_LOCAL;
      return 0;
    }
    return update_listing(s, txn, lw, l, &h, ctx, res);
  }
  if (rc != MDB_NOTFOUND) return rc;
  bool done;
  if ((rc = jb__history_set_has(s, txn, ctx->done, l->uuid, &done)))
    return rc;
  if (done) {
    *res = JB_STORE_MIRROR_DONE;
    return 0;
  }
  if (l->quarantine) {
    /* Kept once per uuid: an existing record stays as it is. */
    *res = JB_STORE_MIRROR_QUARANTINED;
    rc = jb__quarantine_put(s, txn, JB_QUAR_LISTING, l->uuid, l->quarantine,
                            l->posting, l->posting_len, ctx->now_us,
                            MDB_NOOVERWRITE);
    return rc == MDB_KEYEXIST ? 0 : rc;
  }
  *res = JB_STORE_MIRROR_NEW;
  return insert_listing(s, txn, lw, l, ctx);
}

static int mirror_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  mirror_ctx *ctx = vctx;
  (void)status;
  ctx->now_bt = jb__boottime_us();
  ctx->done->built = false; /* the body may run again: read afresh */
  jb_log_writer lw;
  /* A listing that changed logs one or two events: many go to `log`. */
  int rc = jb__log_open_for(s, txn, &lw, ctx->n);
  if (rc) return rc;
  for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
    int res = 0;
    rc = mirror_one(s, txn, &lw, &ctx->l[i], ctx, &res);
    if (ctx->results) ctx->results[i] = res;
  }
  return jb__log_close(s, txn, &lw, rc);
}

int jb__store_mirror(jb_store *s, const jb_store_listing *l, size_t n,
                     int64_t read_us, int64_t now_us, int *results) {
  /* Completed here at or after the read (less a slack for the wall clock
   * stepping back): a pass that read Redis before our completion reached
   * it must not bring the job back. Completed before the read, and listed
   * all the same: Redis lists it again (it lost the completion, or the job
   * was published anew), and the board shows what Redis lists. */
  jb_hist_set done = {.since_us = read_us > 0 ? read_us - JB_MIRROR_DONE_SLACK_US
                                              : INT64_MIN};
  mirror_ctx ctx = {.l = l, .n = n, .read_us = read_us, .now_us = now_us,
                    .results = results, .done = &done};
  int rc = jb__store_write(s, mirror_body, &ctx);
  jb__history_set_free(&done);
  return rc;
}

/* ----------------------------------------------------------------- gone */

typedef struct {
  const uint8_t (*uuids)[16];
  const bool *trashed;
  const bool *lost;
  const char *lost_reason;
  const jb_store_done *dones; /* may be NULL */
  const char *const *owners;  /* may be NULL */
  size_t n;
  int64_t now_us;
  const jb_hist_bounds *hist;
  size_t removed;
} gone_ctx;

static int gone_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  gone_ctx *ctx = vctx;
  (void)status;
  ctx->removed = 0; /* the body may run again after the map grows */
  for (size_t i = 0; i < ctx->n; i++) {
    const uint8_t *uuid = ctx->uuids[i];
    jb_jobhdr h;
    MDB_val posting;
    int rc = jb__job_header(s, txn, uuid, &h, &posting);
    if (rc == MDB_NOTFOUND || (rc == 0 && !(h.flags & JB_JOB_F_REMOTE)))
      continue;
    if (rc) return rc;
    jb_claimrec rec;
    const char *owner;
    char who[JB_WHO_MAX];
    size_t who_len = 0;
    rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
    if (rc && rc != MDB_NOTFOUND) return rc;
    bool claimed = rc == 0;
    if (claimed) {
      /* The owner is named by the history record and the event: copied
       * before the claims page changes. */
      who_len = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
      memcpy(who, owner, who_len);
    }
    bool trash = ctx->trashed && ctx->trashed[i];
    bool lost = !trash && ctx->lost && ctx->lost[i];
    jb_store_done done = {trash  ? JB_END_TRASHED
                          : lost ? JB_END_LOST
                                 : JB_END_CONSUMED,
                          NULL, 0, ctx->hist, 0, NULL, 0};
    /* How its completer said it ended (Redis's outcome record): a
     * failure, a result, a dead letter, a cancel. */
    const jb_store_done *told = ctx->dones && !lost ? &ctx->dones[i] : NULL;
    int event = lost ? JB_EV_LOST : 0;
    if (told && told->end) {
      done = *told;
      done.bounds = ctx->hist;
      event = told->end == JB_END_DEAD        ? JB_EV_DEAD
              : told->end == JB_END_CANCELLED ? JB_EV_CANCELLED
                                              : 0;
      if (told->end == JB_END_DEAD || told->end == JB_END_TRASHED)
        trash = true; /* a letter is kept */
      const char *o = ctx->owners ? ctx->owners[i] : NULL;
      if (!claimed && o) {
        who_len = strnlen(o, JB_WHO_MAX);
        memcpy(who, o, who_len);
      }
    }
    const char *why = lost && ctx->lost_reason ? ctx->lost_reason : NULL;
    jb_completing c = {.op = trash ? JB_RELEASE_TRASH : JB_RELEASE_CONSUME,
                       .uuid = uuid, .h = &h, .posting = posting,
                       .claim = claimed ? &rec : NULL,
                       .claimed_us = claimed ? rec.claimed_us : 0,
                       .who = who, .who_len = who_len,
                       .now_us = ctx->now_us, .done = &done,
                       .event = event,
                       .reason = why, .reason_len = why ? strlen(why) : 0};
    if ((rc = jb__job_complete(s, txn, &c))) return rc;
    ctx->removed++;
  }
  return 0;
}

int jb__store_mirror_gone(jb_store *s, const uint8_t (*uuids)[16],
                          const bool *trashed, const bool *lost,
                          const char *lost_reason, size_t n, int64_t now_us,
                          const jb_hist_bounds *hist, size_t *removed) {
  return jb__store_mirror_gone_x(s, uuids, trashed, lost, lost_reason, NULL,
                                 NULL, n, now_us, hist, removed);
}

int jb__store_mirror_gone_x(jb_store *s, const uint8_t (*uuids)[16],
                            const bool *trashed, const bool *lost,
                            const char *lost_reason,
                            const jb_store_done *dones,
                            const char *const *owners, size_t n,
                            int64_t now_us, const jb_hist_bounds *hist,
                            size_t *removed) {
  gone_ctx ctx = {.uuids = uuids, .trashed = trashed, .lost = lost,
                  .lost_reason = lost_reason, .dones = dones,
                  .owners = owners, .n = n, .now_us = now_us, .hist = hist};
  int rc = jb__store_write(s, gone_body, &ctx);
  if (removed) *removed = rc == JB_OK ? ctx.removed : 0;
  return rc;
}

/* ------------------------------------------------------------- settings */

typedef struct {
  char key[sizeof JB_META_SETTING_PREFIX + JB_SETTING_KEY_MAX];
  size_t key_len;
  const char *value; /* put, claim */
  size_t value_len;
  jb_buf *out;       /* get, claim: the value found */
  bool found;
} setting_ctx;

static void setting_key(setting_ctx *ctx, const char *key, size_t key_len) {
  size_t p = sizeof JB_META_SETTING_PREFIX - 1;
  if (key_len > JB_SETTING_KEY_MAX) key_len = JB_SETTING_KEY_MAX; /* core checks */
  memcpy(ctx->key, JB_META_SETTING_PREFIX, p);
  memcpy(ctx->key + p, key, key_len);
  ctx->key_len = p + key_len;
}

/* Read the setting into ctx->out (ctx->found). */
static int setting_read(jb_store *s, MDB_txn *txn, setting_ctx *ctx) {
  MDB_val k = {ctx->key_len, ctx->key}, v;
  ctx->out->len = 0;
  int rc = mdb_get(txn, s->meta, &k, &v);
  ctx->found = rc == 0;
  if (rc) return rc == MDB_NOTFOUND ? 0 : rc;
  return jb__buf_append(ctx->out, v.mv_data, v.mv_size);
}

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  return setting_read(s, txn, vctx);
}

int jb__store_setting_get(jb_store *s, const char *key, size_t key_len,
                          jb_buf *out, bool *found) {
  setting_ctx ctx = {.out = out};
  setting_key(&ctx, key, key_len);
  int rc = jb__store_read(s, get_body, &ctx);
  *found = rc == JB_OK && ctx.found;
  return rc;
}

static int put_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  setting_ctx *ctx = vctx;
  (void)status;
  MDB_val k = {ctx->key_len, ctx->key};
  if (ctx->value == NULL) {
    int rc = mdb_del(txn, s->meta, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
  }
  MDB_val v = {ctx->value_len, (void *)ctx->value};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

int jb__store_setting_put(jb_store *s, const char *key, size_t key_len,
                          const char *value, size_t value_len) {
  setting_ctx ctx = {.value = value, .value_len = value_len};
  setting_key(&ctx, key, key_len);
  return jb__store_write(s, put_body, &ctx);
}

static int claim_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  setting_ctx *ctx = vctx;
  int rc = setting_read(s, txn, ctx);
  if (rc || !ctx->found) return rc ? rc : put_body(s, txn, ctx, status);
  if (ctx->out->len == ctx->value_len &&
      memcmp(ctx->out->data, ctx->value, ctx->value_len) == 0)
    return 0;
  return JB_ECLAIMED; /* no message: core/ names the values */
}

int jb__store_setting_claim(jb_store *s, const char *key, size_t key_len,
                            const char *value, size_t value_len, jb_buf *cur,
                            bool *taken) {
  setting_ctx ctx = {.value = value, .value_len = value_len, .out = cur};
  setting_key(&ctx, key, key_len);
  int rc = jb__store_write(s, claim_body, &ctx);
  *taken = rc == JB_ECLAIMED;
  return *taken ? JB_OK : rc;
}
