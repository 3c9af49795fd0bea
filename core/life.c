/*
 * life.c - a job's life beyond claim and consume: retries and the retry
 * policy, the dead letters, cancel and flush, and the accessors of the
 * fields a job's life adds (jobboard.h, "Retries and dead letters").
 * Arguments are checked here; the work is store/life.c's and dead.c's.
 */
#include "internal.h"
#include "sync_hook.h"

#include "store/store.h"
#include "store/life.h"
#include "codec/posting.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ accessors */

int64_t jb_job_not_before(const jb_job *job) {
  return job ? job->not_before_us : 0;
}
uint32_t jb_job_attempts(const jb_job *job) { return job ? job->attempts : 0; }
uint32_t jb_job_max_attempts(const jb_job *job) {
  return job ? job->max_attempts : 0;
}
int64_t jb_job_time_limit(const jb_job *job) {
  return job ? job->time_limit_ms : 0;
}
const char *jb_job_unique_key(const jb_job *job) {
  return job && job->has_unique ? job->unique : NULL;
}
const char *jb_job_last_reason(const jb_job *job) {
  return job && job->has_reason ? job->reason : NULL;
}
uint32_t jb_job_snoozes(const jb_job *job) { return job ? job->snoozes : 0; }
uint32_t jb_job_max_snoozes(const jb_job *job) {
  return job ? job->max_snoozes : 0;
}
int64_t jb_job_deadline(const jb_job *job) {
  return job ? job->deadline_us : 0;
}

const char *jb_dead_cause_name(jb_dead_cause cause) {
  switch (cause) {
  case JB_DEAD_TRASHED: return "trashed";
  case JB_DEAD_ATTEMPTS: return "attempts";
  case JB_DEAD_BURIED: return "buried";
  case JB_DEAD_EXPIRED: return "expired";
  }
  return NULL;
}

/* --------------------------------------------------------------- policy */

static int policy_check(const jb_retry_policy *p) {
  if (p == NULL) return jb__err(JB_EINVAL, "retry policy is NULL");
  if (p->version != JB_RETRY_POLICY_VERSION)
    return jb__err(JB_EINVAL, "retry policy version %u is not %u (use "
                   "JB_RETRY_POLICY_INIT)", p->version,
                   JB_RETRY_POLICY_VERSION);
  if (p->backoff_ms < 1 || p->backoff_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "backoff_ms: %" PRId64 " is outside 1..%" PRId64,
                   p->backoff_ms, JB_DELAY_MAX_MS);
  if (p->backoff_max_ms < p->backoff_ms || p->backoff_max_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "backoff_max_ms: %" PRId64 " is outside "
                   "backoff_ms..%" PRId64 " (%" PRId64 "..%" PRId64 ")",
                   p->backoff_max_ms, JB_DELAY_MAX_MS, p->backoff_ms,
                   JB_DELAY_MAX_MS);
  return JB_OK;
}

int jb_board_get_retry_policy(jb_retry_policy *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "get retry policy: NULL argument");
  return jb__store_policy_get(b->store, out);
}

int jb_board_set_retry_policy(jb_board *b, const jb_retry_policy *p) {
  if (b == NULL) return jb__err(JB_EINVAL, "set retry policy: board is NULL");
  int rc = policy_check(p);
  if (rc != JB_OK) return rc;
  return jb__store_policy_set(b->store, p);
}

/* ------------------------------------------------------------ retention */

int jb_board_get_retention(jb_retention *stored, jb_retention *effective,
                           jb_board *b) {
  if (b == NULL) return jb__err(JB_EINVAL, "get retention: board is NULL");
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  return jb__store_retention_get(b->store, &hb, stored, effective);
}

/* One field of a retention setting: 0, JB_RETAIN_NONE or a bound. */
static int retain_check(const char *field, int64_t v, bool age) {
  if (v < JB_RETAIN_NONE)
    return jb__err(JB_EINVAL, "retention: %s %" PRId64 " is not a bound (a "
                   "positive number, 0 for the default or JB_RETAIN_NONE "
                   "for no bound)", field, v);
  if (age && v > INT64_MAX / 1000)
    return jb__err(JB_EINVAL, "retention: %s %" PRId64 " is above %" PRId64
                   " ms", field, v, INT64_MAX / 1000);
  return JB_OK;
}

int jb_board_set_retention(jb_board *b, const jb_retention *r,
                           unsigned int fields) {
  if (b == NULL || r == NULL)
    return jb__err(JB_EINVAL, "set retention: NULL argument");
  if (fields == 0 || (fields & ~(unsigned)JB_RETAIN_ALL))
    return jb__err(JB_EINVAL, "set retention: fields 0x%x name no field or "
                   "an unknown one (JB_RETAIN_* bits)", fields);
  int rc;
  if (((fields & JB_RETAIN_HISTORY_MAX) &&
       (rc = retain_check("history_max", r->history_max, false))) ||
      ((fields & JB_RETAIN_HISTORY_AGE) &&
       (rc = retain_check("history_max_age_ms", r->history_max_age_ms,
                          true))) ||
      ((fields & JB_RETAIN_DEAD_MAX) &&
       (rc = retain_check("dead_max", r->dead_max, false))) ||
      ((fields & JB_RETAIN_DEAD_AGE) &&
       (rc = retain_check("dead_max_age_ms", r->dead_max_age_ms, true))))
    return rc;
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  return jb__store_retention_set(b->store, &hb, r, fields, jb__now_us());
}

/* ---------------------------------------------------------------- retry */

int jb_retry(jb_retry_result *out, jb_board *b, const char *uuid,
             const char *who, const jb_retry_options *opts) {
  if (out) *out = (jb_retry_result){0};
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  uint8_t raw[16];
  size_t who_len;
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc == JB_OK) rc = jb__who_check(who, &who_len);
  if (rc != JB_OK) return rc;
  jb_retry_options o = JB_RETRY_OPTIONS_INIT;
  if (opts) {
    if (opts->version != JB_RETRY_OPTIONS_VERSION)
      return jb__err(JB_EINVAL, "retry options version %u is not %u (use "
                     "JB_RETRY_OPTIONS_INIT)", opts->version,
                     JB_RETRY_OPTIONS_VERSION);
    o = *opts;
  }
  unsigned known = JB_RETRY_BACKOFF | JB_RETRY_DEAD;
  if (o.flags & ~known)
    return jb__err(JB_EINVAL, "retry: unknown flags 0x%x", o.flags & ~known);
  if (o.delay_ms < 0 || o.delay_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "retry delay: %" PRId64 " ms is outside 0..%"
                   PRId64, o.delay_ms, JB_DELAY_MAX_MS);
  if ((o.flags & JB_RETRY_BACKOFF) && o.delay_ms)
    return jb__err(JB_EINVAL, "retry: give a delay or JB_RETRY_BACKOFF, not "
                   "both");
  size_t reason_len = 0;
  if (o.reason) {
    reason_len = strnlen(o.reason, JB_REASON_MAX + 1);
    if (reason_len > JB_REASON_MAX)
      return jb__err(JB_EINVAL, "reason: longer than %d bytes",
                     JB_REASON_MAX);
    if (!jb__utf8_valid(o.reason, reason_len))
      return jb__err(JB_EINVAL, "reason: not valid UTF-8");
  }
  jb_store_retry sr = {.reason = o.reason, .reason_len = reason_len,
                       .delay_us = (o.flags & JB_RETRY_BACKOFF)
                                       ? -1
                                       : o.delay_ms * 1000,
                       .dead = (o.flags & JB_RETRY_DEAD) != 0};
  rc = jb__store_retry(b->store, raw, who, who_len, o.token, jb__now_us(),
                       &sr, out);
  if (rc != JB__REMOTE) return jb__board_say_if_cancelled(b, rc, raw);
  /* Redis decides this job (the authority rule): a plain retry is an abandon
   * through Redis, to the dead letters a trash through Redis; a delay is
   * not kept there (taskflow's board has none). Its last attempt goes to
   * the dead letters through Redis too (the store never buries a job
   * Redis lists). */
  if (!sr.dead) {
    jb_job *job = NULL;
    jb_retry_policy pol;
    if (jb_job_get(&job, b, uuid) == JB_OK &&
        jb__store_policy_get(b->store, &pol) == JB_OK) {
      uint32_t max = jb_job_max_attempts(job) ? jb_job_max_attempts(job)
                                              : pol.max_attempts;
      if (max > 0 && jb_job_attempts(job) + 1 >= max) sr.dead = true;
    }
    jb_job_free(job);
  }
  if (sr.dead) {
    /* A dead letter, as the store makes one: its cause and reason, here
     * and (through Redis) on every board mirroring the job. */
    jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
    jb_store_done done = {JB_END_DEAD, NULL, 0, &hb,
                          (o.flags & JB_RETRY_DEAD) ? JB_DEAD_BURIED
                                                    : JB_DEAD_ATTEMPTS,
                          sr.reason, sr.reason_len};
    rc = jb__board_release(b, JB_RELEASE_TRASH, raw, who, who_len, o.token,
                           &done);
    if (rc == JB_OK && out) out->dead = true;
    return rc;
  }
  /* A back-off is the board's policy, not the caller's demand: a job
   * published while its claim was held (the claimant read it as local)
   * is given back at once, as `work` does for the jobs it knows Redis
   * decides. An explicit delay is refused: the caller asked for it. */
  if (sr.delay_us != 0 && !(o.flags & JB_RETRY_BACKOFF)) {
    char t[JB_UUID_STRLEN];
    jb__uuid_format(t, raw);
    return jb__err(JB_EINVAL, "job %s is decided by Redis (published or "
                   "mirrored): a delayed retry cannot be kept there; retry "
                   "it with no delay, or abandon it", t);
  }
  rc = jb__board_release(b, JB_RELEASE_ABANDON, raw, who, who_len, o.token,
                         NULL);
  if (rc == JB_OK && out) { /* what the local step counted */
    jb_job *job = NULL;
    if (jb_job_get(&job, b, uuid) == JB_OK) out->attempts = jb_job_attempts(job);
    jb_job_free(job);
  }
  return rc;
}

/* --------------------------------------------------------------- snooze */

int jb_snooze(jb_board *b, const char *uuid, const char *who, uint64_t token,
              int64_t delay_ms) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  uint8_t raw[16];
  size_t who_len;
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc == JB_OK) rc = jb__who_check(who, &who_len);
  if (rc != JB_OK) return rc;
  if (delay_ms < 0 || delay_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "snooze delay: %" PRId64 " ms is outside 0..%"
                   PRId64, delay_ms, JB_DELAY_MAX_MS);
  jb_store_retry sr = {.delay_us = delay_ms * 1000, .snooze = true};
  rc = jb__store_retry(b->store, raw, who, who_len, token, jb__now_us(), &sr,
                       NULL);
  if (rc != JB__REMOTE) return jb__board_say_if_cancelled(b, rc, raw);
  /* Redis decides this job (the authority rule) and keeps no due time: a
   * snooze cannot be kept there, so it is refused, nothing changed. */
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  return jb__err(JB_EINVAL, "job %s is decided by Redis (published or "
                 "mirrored): a snooze cannot be kept there; abandon or retry "
                 "it", t);
}

/* --------------------------------------------------------------- cancel */

int jb_job_cancel(jb_board *b, const char *uuid, unsigned flags) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_CANCEL_FORCE)
    return jb__err(JB_EINVAL, "cancel: unknown flags 0x%x",
                   flags & ~(unsigned)JB_CANCEL_FORCE);
  uint8_t raw[16];
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc != JB_OK) return rc;
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  bool force = flags & JB_CANCEL_FORCE;
  /* A job decided here may hold a reservation of its unique key in Redis
   * (made at its post): given back once it is cancelled (best effort; it
   * runs out by itself). */
  char key[JB_UNIQUE_MAX + 1] = "";
  if (b->remote_ops && b->remote_ops->unreserve) {
    jb_job *job = NULL;
    if (jb_job_get(&job, b, uuid) == JB_OK && !jb_job_remote(job) &&
        jb_job_unique_key(job))
      snprintf(key, sizeof key, "%s", jb_job_unique_key(job));
    jb_job_free(job);
  }
  rc = jb__store_cancel(b->store, raw, force, jb__now_us(), &hb, 0);
  if (rc == JB_OK && key[0]) {
    char t[JB_UUID_STRLEN]; /* the uuid as Redis holds it: lower case */
    jb__uuid_format(t, raw);
    b->remote_ops->unreserve(b->remote_ctx, key, t);
  }
  if (rc != JB__REMOTE) return rc;
  /* Redis decides this job (the authority rule): Redis cancels it first. */
  return jb__board_remote_cancel(b, raw, force);
}

/* -------------------------------------------------------------- run now */

/* The board and uuid of a write on one job or letter, checked. */
static int board_uuid(jb_board *b, const char *uuid, uint8_t raw[16]) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  return jb__uuid_parse(raw, uuid, "job uuid");
}

int jb_job_run_now(jb_board *b, const char *uuid) {
  uint8_t raw[16];
  int rc = board_uuid(b, uuid, raw);
  if (rc != JB_OK) return rc;
  /* A job Redis decides is never delayed (published once due, made due
   * when mirrored in): the store finds it claimable or claimed, as it
   * finds every job, and nothing is asked of Redis. */
  return jb__store_run_now(b->store, raw);
}

/* The Redis-decided jobs a flush cancels through Redis: the ones not
 * claimed here (Redis refuses those it finds claimed). */
static int flush_remote(size_t *done, jb_board *b) {
  jb_iter *it = NULL;
  int rc = jb_iter_open(&it, b, 0);
  if (rc != JB_OK) return rc;
  char (*uuids)[JB_UUID_STRLEN] = NULL;
  size_t n = 0, cap = 0;
  const jb_job *job;
  while ((rc = jb_iter_next(&job, it)) == JB_OK && job) {
    if (!jb_job_remote(job) || jb_job_owner(job)) continue;
    if (n == cap) {
      size_t c = cap ? cap * 2 : 64;
      void *p = realloc(uuids, c * sizeof *uuids);
      if (p == NULL) {
        rc = jb__err(JB_ENOMEM, "out of memory flushing the board");
        break;
      }
      uuids = p;
      cap = c;
    }
    memcpy(uuids[n++], jb_job_uuid(job), JB_UUID_STRLEN);
  }
  jb_iter_close(it);
  for (size_t i = 0; rc == JB_OK && i < n; i++) {
    uint8_t raw[16];
    if ((rc = jb__uuid_parse(raw, uuids[i], "job uuid")) != JB_OK) break;
    int c = jb__board_remote_cancel(b, raw, false);
    if (c == JB_OK)
      (*done)++;
    else if (c != JB_ECLAIMED && c != JB_ENOTFOUND)
      rc = c; /* Redis away: the rest stay (the message says why) */
  }
  free(uuids);
  return rc;
}

int jb_board_cancel_unclaimed(size_t *out, jb_board *b) {
  if (out) *out = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  size_t total = 0;
  for (;;) {
    size_t n;
    bool more;
    int rc = jb__store_flush(b->store, jb__now_us(), &hb, 256, &n, &more);
    if (rc != JB_OK) return rc;
    total += n;
    if (out) *out = total;
    if (!more) break;
  }
  /* On a handle attached to Redis, the jobs Redis decides that are not
   * claimed are cancelled through Redis, one by one; without the hook
   * they stay (a flush cancels what this board decides). */
  if (b->remote_ops == NULL || b->remote_ops->cancel == NULL) return JB_OK;
  int rc = flush_remote(&total, b);
  if (out) *out = total;
  return rc;
}

/* --------------------------------------------------------- dead letters */

/* A dead letter handed out: the public struct first, its strings after. */
typedef struct {
  jb_dead_letter pub;
  jb_buf rec;    /* the trash record */
  char *strs;    /* name, owner, reason, unique key */
  jb_buf details;
} dead_letter;

void jb_dead_free(jb_dead_letter *l) {
  if (l == NULL) return;
  dead_letter *d = (dead_letter *)l;
  jb__buf_free(&d->rec);
  jb__buf_free(&d->details);
  free(d->strs);
  free(d);
}

/* Decode trash record `val` (len) of `uuid` into a new letter. */
static int letter_load(dead_letter **out, const uint8_t uuid[16],
                       const uint8_t *val, size_t len) {
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, uuid);
  jb_trashrec tr;
  size_t hl;
  if (!jb__trashrec_read(val, len, &tr, &hl))
    return jb__err(JB_ECORRUPT, "dead letter %s does not decode (run "
                   "'jobboard check')", t);
  dead_letter *d = calloc(1, sizeof *d);
  if (d == NULL) return jb__err(JB_ENOMEM, "out of memory for a dead letter");
  int rc = jb__buf_append(&d->rec, val, len);
  if (rc != JB_OK) {
    free(d);
    return rc;
  }
  const uint8_t *base = d->rec.data;
  const char *owner = (const char *)base + hl;
  const uint8_t *posting = base + hl + tr.owner_len;
  jb_jobx x = {0};
  if (tr.x_len)
    jb__jobx_decode(&x, posting + tr.posting_len, tr.x_len);
  jb_job job = {0};
  char why[200];
  bool decoded = jb__posting_decode(&job, posting, tr.posting_len, why,
                                    sizeof why) == JB_OK;
  size_t name_len = decoded ? strlen(job.name) : 0;
  size_t need = name_len + 1 + tr.owner_len + 1 + x.rec.reason_len + 1 +
                x.rec.unique_len + 1;
  d->strs = malloc(need);
  if (d->strs == NULL ||
      (decoded && jb__buf_append(&d->details, job.details.data,
                                 job.details.len) != JB_OK)) {
    jb__job_clear(&job);
    jb_dead_free(&d->pub);
    return jb__err(JB_ENOMEM, "out of memory for a dead letter");
  }
  char *p = d->strs;
  jb_dead_letter *l = &d->pub;
  memcpy(l->uuid, t, sizeof t);
  l->cause = (jb_dead_cause)tr.cause;
  if (decoded) {
    memcpy(p, job.name, name_len + 1);
    l->name = p;
    p += name_len + 1;
    l->priority = job.priority;
    l->sequence = job.sequence;
    l->details = d->details.data;
    l->details_len = d->details.len;
  } else {
    l->priority = jb__jobkey_priority(tr.jobkey);
    l->sequence = jb__jobkey_seq(tr.jobkey);
  }
  jb__job_clear(&job);
  if (tr.owner_len) {
    memcpy(p, owner, tr.owner_len);
    p[tr.owner_len] = '\0';
    l->owner = p;
    p += tr.owner_len + 1;
  }
  if (x.rec.reason_len) {
    memcpy(p, x.reason, x.rec.reason_len);
    p[x.rec.reason_len] = '\0';
    l->reason = p;
    p += x.rec.reason_len + 1;
  }
  if (x.rec.unique_len) {
    memcpy(p, x.unique, x.rec.unique_len);
    p[x.rec.unique_len] = '\0';
    l->unique_key = p;
  }
  l->attempts = x.rec.attempts;
  l->max_attempts = x.rec.max_attempts;
  l->posted_us = tr.posted_us;
  l->dead_us = tr.trashed_us;
  l->posting = posting;
  l->posting_len = tr.posting_len;
  *out = d;
  return JB_OK;
}

int jb_dead_get(jb_dead_letter **out, jb_board *b, const char *uuid) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "dead letter: NULL argument");
  *out = NULL;
  uint8_t raw[16];
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc != JB_OK) return rc;
  jb_buf buf = {0};
  rc = jb__store_dead_get(b->store, raw, &buf);
  dead_letter *d = NULL;
  if (rc == JB_OK) rc = letter_load(&d, raw, buf.data, buf.len);
  jb__buf_free(&buf);
  if (rc == JB_OK) *out = &d->pub;
  return rc;
}

int jb_dead_count(size_t *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "dead count: NULL argument");
  return jb__store_dead_count(b->store, out);
}

int jb_dead_foreach(jb_board *b, jb_dead_cb cb, void *payload) {
  if (b == NULL || cb == NULL)
    return jb__err(JB_EINVAL, "dead letters: NULL argument");
  jb_buf buf = {0};
  uint8_t after[16];
  bool have_after = false;
  int rc = JB_OK;
  for (;;) {
    size_t n = 0;
    rc = jb__store_dead_read(b->store, have_after ? after : NULL, 32, &buf,
                             &n);
    if (rc != JB_OK || n == 0) break;
    size_t off = 0;
    for (size_t i = 0; i < n && rc == JB_OK; i++) {
      uint64_t len;
      memcpy(&len, buf.data + off, sizeof len);
      const uint8_t *uuid = buf.data + off + sizeof len;
      const uint8_t *val = uuid + 16;
      memcpy(after, uuid, 16);
      have_after = true;
      off += sizeof len + 16 + len;
      dead_letter *d = NULL;
      rc = letter_load(&d, uuid, val, (size_t)len);
      if (rc == JB_ECORRUPT) { /* one bad record does not hide the rest */
        rc = JB_OK;
        continue;
      }
      if (rc != JB_OK) break;
      rc = cb(&d->pub, payload);
      jb_dead_free(&d->pub);
    }
    if (rc != JB_OK) break;
  }
  jb__buf_free(&buf);
  return rc;
}

int jb_dead_requeue(jb_board *b, const char *uuid, unsigned flags) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_REQUEUE_KEEP_ATTEMPTS)
    return jb__err(JB_EINVAL, "requeue: unknown flags 0x%x",
                   flags & ~(unsigned)JB_REQUEUE_KEEP_ATTEMPTS);
  uint8_t raw[16];
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc != JB_OK) return rc;
  return jb__store_dead_requeue(b->store, raw, NULL,
                                flags & JB_REQUEUE_KEEP_ATTEMPTS,
                                jb__now_us(), NULL);
}

int jb_dead_repost(jb_board *b, const char *uuid, unsigned flags,
                   char new_uuid[JB_UUID_STRLEN]) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_REQUEUE_KEEP_ATTEMPTS)
    return jb__err(JB_EINVAL, "repost: unknown flags 0x%x",
                   flags & ~(unsigned)JB_REQUEUE_KEEP_ATTEMPTS);
  uint8_t raw[16], to[16];
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc != JB_OK || (rc = jb__uuid_generate_job(to)) != JB_OK) return rc;
  rc = jb__store_dead_requeue(b->store, raw, to,
                              flags & JB_REQUEUE_KEEP_ATTEMPTS, jb__now_us(),
                              NULL);
  if (rc == JB_OK && new_uuid) jb__uuid_format(new_uuid, to);
  return rc;
}

int jb_dead_remove(jb_board *b, const char *uuid) {
  uint8_t raw[16];
  int rc = board_uuid(b, uuid, raw);
  if (rc != JB_OK) return rc;
  return jb__store_dead_remove(b->store, raw);
}

int jb_dead_purge(size_t *out, jb_board *b, int64_t before_us) {
  if (out) *out = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  size_t total = 0;
  uint8_t resume[16];
  bool has_resume = false;
  for (;;) {
    size_t n;
    bool more;
    int rc = jb__store_dead_purge(b->store, before_us, 512, &n, &more,
                                  resume, &has_resume);
    if (rc != JB_OK) return rc;
    total += n;
    if (out) *out = total;
    if (!more) break;
  }
  return JB_OK;
}
