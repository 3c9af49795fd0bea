/*
 * batch.c - the worker's path: several operations in one write
 * transaction. A commit costs the same whether it carries one
 * change or ten (LMDB copies and writes each dirty page once, and in
 * durability full flushes twice), so a worker that ends a job and claims
 * the next in one commit, or claims or consumes several jobs at once,
 * pays for fewer commits per job.
 *
 * Each operation here is made of the very bodies the single operations
 * run (jb__txn_claim_next, jb__txn_finish in ops.c), in one transaction:
 * the claim-next order, the reaping of lapsed claims, the fencing tokens,
 * the change-log events and the history records are theirs. What is new
 * is only how their results are gathered, and the rule that a refused
 * item of a batch changes nothing while the others commit: the ownership
 * check of a release writes nothing before it refuses (ops.c marks such
 * a refusal), so the transaction can go on past it.
 */
#include "txn.h"

#include <stdlib.h>
#include <string.h>

/* Decode the snapshot of a job claimed in a committed transaction: `job`
 * holds its posting bytes and then its jobx record's, raw->x_len of them
 * (copied out of the pages), `raw` the rest. */
static int load_claimed(jb_job *job, jb_job_raw *raw, const uint8_t uuid[16]) {
  jb_buf posting = job->posting;
  job->posting = (jb_buf){0};
  raw->uuid = uuid;
  raw->posting = posting.data;
  raw->posting_len = posting.len - raw->x_len;
  raw->x = raw->x_len ? posting.data + raw->posting_len : NULL;
  int rc = jb__job_load(job, raw);
  jb__buf_free(&posting);
  return rc;
}

/* ------------------------------------------------------- claim many */

typedef struct {
  const jb_store_claim_req *req;
  size_t max;
  const uint8_t *after;
  bool skip_remote;
  uint8_t (*uuids)[16];
  uint64_t *tokens;
  jb_job *jobs;     /* NULL, or max snapshots to fill */
  jb_job_raw *raws; /* with jobs */
  uint8_t *key_out;
  size_t n;
} many_ctx;

static int claim_many_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  many_ctx *c = vctx;
  c->n = 0; /* a body may run again (the map grew): start afresh */
  int rc = 0;
  bool moved = false;
  while (c->n < c->max) {
    /* Each claim walks from the start (or from `after`) again: a lapsed
     * claim reaped by this claim's walk sorts before the jobs claimed so
     * far, and claim-next would hand it out next. */
    rc = jb__txn_claim_next(s, txn, c->req, c->after, c->skip_remote,
                            c->uuids[c->n], c->key_out, &c->tokens[c->n],
                            c->jobs ? &c->jobs[c->n] : NULL,
                            c->raws ? &c->raws[c->n] : NULL, &moved);
    if (rc) break;
    c->n++;
  }
  if (rc == JB__REMOTE && (c->n > 0 || moved)) {
    /* The claims so far (and the reap's moves to the dead letters) stand;
     * the caller asks Redis about this one. */
    *status = JB__REMOTE;
    return 0;
  }
  if (rc == JB_ENOTFOUND && c->n > 0) return 0; /* fewer than max */
  if (rc == JB_ENOTFOUND && moved) {
    /* None claimed, but lapses sent jobs to the dead letters: commit. */
    *status = rc;
    return 0;
  }
  return rc;
}

int jb__store_claim_many(jb_store *s, const jb_store_claim_req *req,
                         size_t max, const uint8_t *after, bool skip_remote,
                         uint8_t (*uuids)[16], uint64_t *tokens, jb_job *jobs,
                         int *load_rc, size_t *n_out,
                         uint8_t key_out[JB_JOBKEY_LEN]) {
  *n_out = 0;
  many_ctx c = {.req = req, .max = max, .after = after,
                .skip_remote = skip_remote, .uuids = uuids, .tokens = tokens,
                .jobs = jobs, .key_out = key_out};
  if (jobs && (c.raws = calloc(max, sizeof *c.raws)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for %zu claims", max);
  int rc = jb__store_write(s, claim_many_body, &c);
  if (rc == JB_OK || rc == JB__REMOTE) *n_out = c.n;
  if (rc == JB__REMOTE && c.n == 0) {
    free(c.raws);
    return rc; /* nothing claimed: uuids[0] is the Redis-decided job */
  }
  /* Decode the snapshots after the commit, outside the writer lock. A
   * posting that does not decode leaves its snapshot empty and its
   * load_rc JB_ECORRUPT: its claim stands. */
  for (size_t i = 0; jobs && i < *n_out; i++)
    load_rc[i] = load_claimed(&jobs[i], &c.raws[i], uuids[i]);
  free(c.raws);
  return rc;
}

/* ------------------------------------------- consume and claim next */

typedef struct {
  const uint8_t *uuid;
  const char *who;
  size_t who_len;
  uint64_t token;
  const jb_store_done *done;
  const jb_store_claim_req *req;
  bool skip_remote;
  uint8_t *next_uuid;
  uint64_t next_token;
  jb_job *next_job;
  jb_job_raw raw;
  int next; /* JB_STORE_NEXT_* */
} fused_ctx;

static int fused_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  fused_ctx *c = vctx;
  (void)status;
  bool refused;
  int rc = jb__txn_finish(s, txn, JB_RELEASE_CONSUME, c->uuid, c->who,
                          c->who_len, c->token, c->req->now_us, c->done,
                          &refused);
  if (rc) return rc; /* refused or not, nothing is claimed: abort */
  uint8_t key[JB_JOBKEY_LEN];
  rc = jb__txn_claim_next(s, txn, c->req, NULL, c->skip_remote, c->next_uuid,
                          key, &c->next_token, c->next_job, &c->raw, NULL);
  c->next = rc == 0              ? JB_STORE_NEXT_CLAIMED
            : rc == JB_ENOTFOUND ? JB_STORE_NEXT_NONE
                                 : JB_STORE_NEXT_REMOTE;
  /* Nothing claimable, or a Redis-decided job first: the consume commits
   * alone (the caller claims that job through Redis). */
  return rc == JB_ENOTFOUND || rc == JB__REMOTE ? 0 : rc;
}

int jb__store_consume_claim(jb_store *s, const uint8_t uuid[16],
                            const char *who, size_t who_len, uint64_t token,
                            const jb_store_done *done,
                            const jb_store_claim_req *req, bool skip_remote,
                            uint8_t next_uuid[16], uint64_t *next_token,
                            jb_job *next_job, int *next) {
  fused_ctx c = {.uuid = uuid, .who = who, .who_len = who_len,
                 .token = token, .done = done, .req = req,
                 .skip_remote = skip_remote, .next_uuid = next_uuid,
                 .next_job = next_job, .next = JB_STORE_NEXT_NONE};
  int rc = jb__store_write(s, fused_body, &c);
  *next = rc == JB_OK ? c.next : JB_STORE_NEXT_NONE;
  *next_token = *next == JB_STORE_NEXT_CLAIMED ? c.next_token : 0;
  if (rc != JB_OK || *next != JB_STORE_NEXT_CLAIMED || next_job == NULL)
    return rc;
  return load_claimed(next_job, &c.raw, next_uuid);
}

/* ----------------------------------------------------- consume many */

typedef struct {
  const jb_store_finish_item *items;
  size_t n;
  int64_t now_us;
  int *status;
  jb_buf *msgs;
  size_t *msg_off;
} consume_many_ctx;

static int consume_many_body(jb_store *s, MDB_txn *txn, void *vctx,
                             int *status) {
  consume_many_ctx *c = vctx;
  (void)status;
  c->msgs->len = 0;
  for (size_t i = 0; i < c->n; i++) {
    const jb_store_finish_item *it = &c->items[i];
    bool refused;
    int rc = jb__txn_finish(s, txn, JB_RELEASE_CONSUME, it->uuid, it->who,
                            it->who_len, it->token, c->now_us, &it->done,
                            &refused);
    c->status[i] = rc;
    if (rc == 0) continue;
    if (!refused) return rc; /* after writes: the whole batch fails */
    /* Refused before any write: this item alone fails. Its message is
     * kept (the next refusal overwrites the thread's). */
    c->msg_off[i] = c->msgs->len;
    const char *m = rc == JB__REMOTE ? "" : jb_errmsg();
    int r2 = jb__buf_append(c->msgs, m, strlen(m) + 1);
    if (r2) return r2;
  }
  return 0;
}

int jb__store_consume_many(jb_store *s, const jb_store_finish_item *items,
                           size_t n, int64_t now_us, int *status,
                           jb_buf *msgs, size_t *msg_off) {
  consume_many_ctx c = {items, n, now_us, status, msgs, msg_off};
  return jb__store_write(s, consume_many_body, &c);
}
