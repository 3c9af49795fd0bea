/*
 * batch.c - the worker's path in the public API (jobboard.h "the worker's
 * path"): claim-next of many jobs, consume-and-claim-next, consume of
 * many jobs, each one write transaction in store/batch.c. Arguments are
 * checked here first; a Redis-decided job is decided by Redis first,
 * through the handle's hook (board.c), never inside a local transaction:
 * only the claims Redis granted to claim-next many are then recorded
 * together, in one transaction of their own.
 */
#include "internal.h"
#include "sync_hook.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------- claim next many */

/* The claims of the store's walk, and what it stopped at. */
typedef struct {
  jb_board *b;
  const jb_store_claim_req *req;
  size_t max, n;
  uint8_t (*raw)[16];
  uint64_t *tokens;
  jb_job *jobs;  /* NULL: no snapshots */
  int *load_rc;  /* with jobs */
} many_run;

/* Claim the Redis-decided job raw[r->n] through Redis, as claim-next
 * does. JB_OK: claimed (counted); JB_ECLAIMED / JB_ENOTFOUND: passed over;
 * else the error. */
static int claim_remote_one(many_run *r) {
  size_t i = r->n;
  int rc = jb__board_remote_claim(r->b, r->raw[i], r->req, &r->tokens[i]);
  if (rc != JB_OK) return rc;
  if (r->jobs) {
    r->load_rc[i] = jb__store_get(r->b->store, r->raw[i], &r->jobs[i]);
    if (r->load_rc[i] != JB_OK) r->load_rc[i] = JB_ECORRUPT;
  }
  r->n++;
  return JB_OK;
}

/* Whether job raw is marked for publication, its post not confirmed:
 * Redis's "not on the board" may be the moment before the post runs. */
static bool publishing(jb_board *b, const uint8_t raw[16]) {
  jb_job job;
  memset(&job, 0, sizeof job);
  bool marked = jb__store_get(b->store, raw, &job) == JB_OK && job.publishing;
  jb__job_clear(&job);
  return marked;
}

/* Record the k claims Redis granted (g[]) in one local transaction, in
 * that order, each as a claim of one records it (stamped now, after
 * Redis decided: see board.c's remote_claim), and count them. A job gone
 * from the board meanwhile is passed over, as the single path passes it. */
static int record_granted(many_run *r, const uint8_t (*g)[16], size_t k) {
  if (k == 0) return JB_OK;
  uint64_t *tokens = malloc(k * sizeof *tokens);
  int *results = malloc(k * sizeof *results);
  jb_store_claim_req now = *r->req;
  now.now_us = jb__now_us();
  int rc = tokens && results
               ? jb__store_claim_decided_many(r->b->store, g, k, &now, tokens,
                                              results)
               : jb__err(JB_ENOMEM, "out of memory for %zu claims", k);
  if (rc != JB_OK) {
    free(tokens);
    free(results);
    return rc;
  }
  for (size_t j = 0; j < k; j++) {
    if (results[j] != JB_OK) continue;
    size_t i = r->n;
    memcpy(r->raw[i], g[j], 16);
    r->tokens[i] = tokens[j];
    if (r->jobs) {
      r->load_rc[i] = jb__store_get(r->b->store, r->raw[i], &r->jobs[i]);
      if (r->load_rc[i] != JB_OK) r->load_rc[i] = JB_ECORRUPT;
    }
    r->n++;
  }
  free(tokens);
  free(results);
  return JB_OK;
}

/*
 * Claim the run of Redis-decided jobs the walk met at jobkey `key`, up to
 * what is left of max, through the hook's claim_many: one round trip for
 * all of them instead of one each. The run ends at the first job decided
 * here, so the claims still come in claim-next order. Each job is decided
 * by Redis on its own; one Redis refuses is passed over (the walk then
 * tries the jobs after the run), one whose publication has not run yet is
 * claimed alone, waiting for it as the single path waits. What Redis
 * granted is recorded in one local transaction, in the run's order.
 * `after` becomes the run's last key. JB_OK; JB_EOFFLINE (`away` holds
 * why: Redis-decided jobs are skipped from then on); else the error that
 * ends the walk (what Redis granted is recorded first all the same).
 */
static int claim_remote_run(many_run *r, const uint8_t key[JB_JOBKEY_LEN],
                            uint8_t after[JB_JOBKEY_LEN], char *away,
                            size_t away_size) {
  jb_board *b = r->b;
  size_t want = r->max - r->n, m = 0;
  uint8_t(*cand)[16] = malloc(want * sizeof *cand);
  uint8_t(*keys)[JB_JOBKEY_LEN] = malloc(want * sizeof *keys);
  uint8_t(*g)[16] = malloc(want * sizeof *g);
  char(*texts)[JB_UUID_STRLEN] = malloc(want * sizeof *texts);
  const char **ptrs = malloc(want * sizeof *ptrs);
  uint64_t *fences = malloc(want * sizeof *fences);
  int *results = malloc(want * sizeof *results);
  int rc = JB_OK;
  if (!cand || !keys || !g || !texts || !ptrs || !fences || !results) {
    rc = jb__err(JB_ENOMEM, "out of memory for %zu claims", want);
    goto out;
  }
  memcpy(after, key, JB_JOBKEY_LEN);
  if ((rc = jb__store_remote_run(b->store, key, r->req, want, cand, keys, &m)) ||
      m == 0)
    goto out;
  memcpy(after, keys[m - 1], JB_JOBKEY_LEN);
  for (size_t i = 0; i < m; i++) {
    jb__uuid_format(texts[i], cand[i]);
    ptrs[i] = texts[i];
  }
  /* As a claim of one: a claim bound to this process with no lease is
   * kept alive in Redis by the replicator (board.c, remote_claim). */
  int64_t lease_ms = r->req->lease_ms;
  if (r->req->bind && lease_ms <= 0) lease_ms = JB_REMOTE_KEEPALIVE;
  rc = b->remote_ops->claim_many(b->remote_ctx, b, m, ptrs, r->req->who,
                                 lease_ms, fences, results);
  if (rc != JB_OK) {
    if (rc == JB_EOFFLINE) snprintf(away, away_size, "%s", jb_errmsg());
    goto out;
  }
  /* The hook's message is its first failed job's. */
  char hook_msg[1024], offline[1024] = "", error_msg[1024] = "";
  snprintf(hook_msg, sizeof hook_msg, "%s", jb_errmsg());
  int first_error = JB_OK;
  size_t k = 0;
  for (size_t i = 0; i < m; i++) {
    int res = results[i];
    if (res == JB_OK) {
      memcpy(g[k++], cand[i], 16);
    } else if (res == JB_ENOTFOUND && publishing(b, cand[i])) {
      /* The claims before it first, so that tokens follow the order. */
      if ((rc = record_granted(r, (const uint8_t(*)[16])g, k))) goto out;
      k = 0;
      memcpy(r->raw[r->n], cand[i], 16);
      res = claim_remote_one(r);
      snprintf(hook_msg, sizeof hook_msg, "%s", jb_errmsg());
    }
    if (res == JB_EOFFLINE && !offline[0])
      snprintf(offline, sizeof offline, "%s", hook_msg);
    if (res != JB_OK && res != JB_ECLAIMED && res != JB_ENOTFOUND &&
        res != JB_EOFFLINE && first_error == JB_OK) {
      first_error = res;
      snprintf(error_msg, sizeof error_msg, "%s", hook_msg);
    }
  }
  if ((rc = record_granted(r, (const uint8_t(*)[16])g, k))) goto out;
  if (first_error != JB_OK) {
    rc = jb__err(first_error, "%s", error_msg);
  } else if (offline[0]) {
    /* Cut to the caller's buffer if need be: it is a message. */
    if (snprintf(away, away_size, "%s", offline) < 0) away[0] = '\0';
    rc = JB_EOFFLINE;
  }
out:
  free(cand);
  free(keys);
  free(g);
  free(texts);
  free(ptrs);
  free(fences);
  free(results);
  return rc;
}

/* The walk of jb_claim_next, many jobs per transaction. */
static int claim_walk(many_run *r) {
  uint8_t after[JB_JOBKEY_LEN], key[JB_JOBKEY_LEN];
  bool started = false, skip = r->b->remote_ops == NULL;
  char away[256] = "";
  int rc = JB_OK;
  while (r->n < r->max) {
    size_t got = 0;
    rc = jb__store_claim_many(r->b->store, r->req, r->max - r->n,
                              started ? after : NULL, skip, r->raw + r->n,
                              r->tokens + r->n, r->jobs ? r->jobs + r->n : NULL,
                              r->jobs ? r->load_rc + r->n : NULL, &got, key);
    if (rc == JB_OK || rc == JB__REMOTE) r->n += got;
    if (rc != JB__REMOTE) break;
    started = true;
    /* Two or more claims still wanted: the run of Redis-decided jobs
     * here in one round trip, when the hook can. */
    if (r->b->remote_ops->claim_many && r->max - r->n > 1) {
      rc = claim_remote_run(r, key, after, away, sizeof away);
      if (rc == JB_EOFFLINE) {
        skip = true;
        rc = JB_OK;
        continue;
      }
      if (rc != JB_OK) break;
      continue;
    }
    memcpy(after, key, JB_JOBKEY_LEN);
    rc = claim_remote_one(r);
    if (rc == JB_EOFFLINE) {
      snprintf(away, sizeof away, "%s", jb_errmsg());
      skip = true;
    } else if (rc != JB_OK && rc != JB_ECLAIMED && rc != JB_ENOTFOUND) {
      break;
    }
    rc = JB_OK;
  }
  /* Claims committed: they are the answer, whatever ended the walk. */
  if (r->n > 0) return JB_OK;
  if (rc == JB_ENOTFOUND && away[0])
    rc = jb__err(JB_ENOTFOUND, "no claimable job on the board (Redis-decided "
                 "jobs were not tried: %s)", away);
  if (rc == JB_OK) /* every Redis-decided job met was refused */
    rc = jb__err(JB_ENOTFOUND, "no claimable job on the board");
  return rc;
}

int jb__claim_next_many_once(size_t *n_out,
                             char (*uuids_out)[JB_UUID_STRLEN],
                             uint64_t *tokens_out, jb_job **jobs_out,
                             jb_board *b, const char *who,
                             const jb_claim_options *opts, size_t max,
                             int64_t *next_token_us) {
  if (n_out) *n_out = 0;
  if (n_out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "claim next many: NULL n_out or board");
  if (max == 0 || max > JB_BATCH_MAX)
    return jb__err(JB_EINVAL, "claim next many: max %zu is not a number of "
                   "jobs (1..%d)", max, JB_BATCH_MAX);
  for (size_t i = 0; jobs_out && i < max; i++) jobs_out[i] = NULL;
  jb_store_claim_req req;
  int rc = jb__board_claim_req(&req, who, opts);
  if (rc != JB_OK) return rc;
  req.next_token_us = next_token_us;
  many_run r = {.b = b, .req = &req, .max = max};
  r.raw = malloc(max * sizeof *r.raw);
  r.tokens = malloc(max * sizeof *r.tokens);
  if (jobs_out) {
    r.jobs = calloc(max, sizeof *r.jobs);
    r.load_rc = calloc(max, sizeof *r.load_rc);
  }
  if (!r.raw || !r.tokens || (jobs_out && (!r.jobs || !r.load_rc))) {
    rc = jb__err(JB_ENOMEM, "out of memory for %zu claims", max);
    goto out;
  }
  rc = claim_walk(&r);
  if (rc != JB_OK) goto out;
  *n_out = r.n;
  char bad[1024] = "";
  for (size_t i = 0; i < r.n; i++) {
    if (uuids_out) jb__uuid_format(uuids_out[i], r.raw[i]);
    if (tokens_out) tokens_out[i] = r.tokens[i];
    if (r.jobs == NULL) continue;
    jb_job *job = NULL;
    if (r.load_rc[i] == JB_OK && (job = malloc(sizeof *job)) != NULL) {
      *job = r.jobs[i]; /* the snapshot moves to the caller's */
      memset(&r.jobs[i], 0, sizeof r.jobs[i]);
    } else if (bad[0] == '\0') {
      char t[JB_UUID_STRLEN];
      jb__uuid_format(t, r.raw[i]);
      snprintf(bad, sizeof bad, "job %s was claimed, but %s", t,
               job == NULL && r.load_rc[i] == JB_OK
                   ? "there was no memory for its snapshot"
                   : "its posting does not decode (run 'jobboard check')");
    }
    jobs_out[i] = job;
  }
  if (bad[0]) rc = jb__err(JB_ECORRUPT, "%s", bad);
out:
  for (size_t i = 0; r.jobs && i < max; i++) jb__job_clear(&r.jobs[i]);
  free(r.jobs);
  free(r.load_rc);
  free(r.raw);
  free(r.tokens);
  return rc;
}

/* ------------------------------------------- consume and claim next */

/* The separate operations, for a Redis-decided job (or the retry of a
 * release whose reply was lost): the consume, then claim-next. */
static int consume_then_claim(char next_uuid_out[JB_UUID_STRLEN],
                              jb_job **next_job_out, uint64_t *next_token_out,
                              jb_board *b, const uint8_t raw[16],
                              const char *who, size_t who_len, uint64_t token,
                              const jb_store_done *done,
                              const jb_claim_options *opts) {
  int rc = jb__board_release(b, JB_RELEASE_CONSUME, raw, who, who_len, token,
                             done);
  if (rc != JB_OK) return rc;
  char uuid[JB_UUID_STRLEN] = "";
  uint64_t next_token = 0;
  rc = jb__claim_next_once(uuid, next_job_out, &next_token, b, who, opts,
                           NULL);
  if (rc != JB_OK && rc != JB_ECORRUPT) return JB_OK; /* consumed; none */
  if (next_uuid_out) memcpy(next_uuid_out, uuid, JB_UUID_STRLEN);
  if (next_token_out) *next_token_out = next_token;
  return rc;
}

int jb_consume_and_claim_next(char next_uuid_out[JB_UUID_STRLEN],
                              jb_job **next_job_out, uint64_t *next_token_out,
                              jb_board *b, const char *uuid, const char *who,
                              uint64_t token, const jb_consume_options *how,
                              const jb_claim_options *opts) {
  uint8_t raw[16];
  size_t who_len;
  jb_hist_bounds hb;
  jb_store_done done;
  jb_store_claim_req req;
  /* `uuid` is read before the outputs are cleared: a loop may pass the
   * same buffer as uuid and next_uuid_out. */
  int rc = jb__consume_opts_args(b, uuid, who, how, raw, &who_len, &hb,
                                 &done);
  if (next_uuid_out) next_uuid_out[0] = '\0';
  if (next_job_out) *next_job_out = NULL;
  if (next_token_out) *next_token_out = 0;
  if (rc == JB_OK) rc = jb__board_claim_req(&req, who, opts);
  if (rc != JB_OK) return rc;
  jb_job *job = NULL;
  if (next_job_out && (job = calloc(1, sizeof *job)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for a job");
  uint8_t next_raw[16];
  uint64_t next_token = 0;
  int next = JB_STORE_NEXT_NONE;
  rc = jb__store_consume_claim(b->store, raw, who, who_len, token, &done,
                               &req, b->remote_ops == NULL, next_raw,
                               &next_token, job, &next);
  bool settle = rc == JB_ENOTFOUND && b->remote_ops && b->remote_ops->settle;
  if (rc == JB__REMOTE || settle) {
    /* Redis decides this job (or may have consumed it already): the
     * separate operations, Redis first. */
    jb_job_free(job);
    return consume_then_claim(next_uuid_out, next_job_out, next_token_out, b,
                              raw, who, who_len, token, &done, opts);
  }
  if (rc == JB_OK && next == JB_STORE_NEXT_REMOTE) {
    /* Consumed; the next job in claim-next order is Redis's to give. */
    jb_job_free(job);
    char t[JB_UUID_STRLEN] = "";
    uint64_t nt = 0;
    rc = jb__claim_next_once(t, next_job_out, &nt, b, who, opts, NULL);
    if (rc != JB_OK && rc != JB_ECORRUPT) return JB_OK;
    if (next_uuid_out) memcpy(next_uuid_out, t, JB_UUID_STRLEN);
    if (next_token_out) *next_token_out = nt;
    return rc;
  }
  if ((rc == JB_OK || rc == JB_ECORRUPT) && next == JB_STORE_NEXT_CLAIMED) {
    if (next_uuid_out) jb__uuid_format(next_uuid_out, next_raw);
    if (next_token_out) *next_token_out = next_token;
    if (rc == JB_OK && next_job_out) {
      *next_job_out = job;
      job = NULL;
    }
  }
  jb_job_free(job);
  return rc;
}

/* ----------------------------------------------------- consume many */

/* A failed item's message, kept with "item I: " before it. */
static int item_msg(jb_buf *msgs, size_t *off, size_t i, const char *m) {
  char line[1100];
  int len = snprintf(line, sizeof line, "item %zu: %s", i, m);
  *off = msgs->len;
  return jb__buf_append(msgs, line, (size_t)len + 1);
}

int jb_consume_many(int *status_out, jb_board *b,
                    const jb_consume_item *items, size_t n, jb_item_cb cb,
                    void *payload) {
  if (status_out == NULL || b == NULL || items == NULL)
    return jb__err(JB_EINVAL, "consume many: NULL status_out, board or "
                   "items");
  if (n == 0 || n > JB_BATCH_MAX)
    return jb__err(JB_EINVAL, "consume many: %zu is not a number of items "
                   "(1..%d)", n, JB_BATCH_MAX);
  jb_store_finish_item *it = calloc(n, sizeof *it);
  jb_hist_bounds *hb = calloc(n, sizeof *hb);
  size_t *idx = calloc(n, sizeof *idx);  /* store item -> caller's index */
  int *st = calloc(n, sizeof *st);
  size_t *off = calloc(n, sizeof *off);  /* each failed item's message */
  size_t *soff = calloc(n, sizeof *soff);
  jb_buf msgs = {0}, smsgs = {0};
  int rc = JB_OK;
  if (!it || !hb || !idx || !st || !off || !soff) {
    rc = jb__err(JB_ENOMEM, "out of memory for %zu items", n);
    goto out;
  }
  /* Every item is checked before the transaction: a bad one fails alone,
   * named by its index. */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const jb_consume_item *c = &items[i];
    status_out[i] = jb__consume_args(b, c->uuid, c->who, c->outcome,
                                     c->result, c->result_len, it[k].uuid,
                                     &it[k].who_len, &hb[k], &it[k].done);
    if (status_out[i] != JB_OK) {
      if ((rc = item_msg(&msgs, &off[i], i, jb_errmsg())) != JB_OK) goto out;
      continue;
    }
    it[k].who = c->who;
    it[k].token = c->token;
    it[k].done.bounds = &hb[k];
    idx[k++] = i;
  }
  if (k > 0 &&
      (rc = jb__store_consume_many(b->store, it, k, jb__now_us(), st, &smsgs,
                                   soff)) != JB_OK)
    goto out;
  for (size_t j = 0; j < k; j++) {
    size_t i = idx[j];
    int s = st[j];
    bool settle = s == JB_ENOTFOUND && b->remote_ops && b->remote_ops->settle;
    if (s == JB__REMOTE || settle) {
      /* Redis decides this one: consumed through Redis, on its own. */
      s = jb__board_release(b, JB_RELEASE_CONSUME, it[j].uuid, it[j].who,
                            it[j].who_len, it[j].token, &it[j].done);
      if (s != JB_OK && (rc = item_msg(&msgs, &off[i], i, jb_errmsg())))
        goto out;
    } else if (s != JB_OK &&
               (rc = item_msg(&msgs, &off[i], i,
                              (const char *)smsgs.data + soff[j]))) {
      goto out;
    }
    status_out[i] = s;
  }
  /* The messages, in item order, after everything is done. */
  const char *first = NULL;
  for (size_t i = 0; i < n; i++) {
    if (status_out[i] == JB_OK) continue;
    const char *m = (const char *)msgs.data + off[i];
    if (first == NULL) first = m;
    if (cb) cb(i, status_out[i], m, payload);
  }
  if (first) jb__err(JB_OK, "%s", first);
out:
  jb__buf_free(&msgs);
  jb__buf_free(&smsgs);
  free(it);
  free(hb);
  free(idx);
  free(st);
  free(off);
  free(soff);
  return rc;
}
