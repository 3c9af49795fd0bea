/*
 * job.c - job snapshots: loading from the store's raw parts, accessors;
 * the jobx record's encoding.
 */
#include "codec/job.h"
#include "base/error.h"
#include "codec/posting.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int jb__job_load(jb_job *job, const jb_job_raw *raw) {
  char text[JB_UUID_STRLEN];
  char why[200];
  jb__uuid_format(text, raw->uuid);
  job->posting.len = 0;
  int rc = jb__buf_append(&job->posting, raw->posting, raw->posting_len);
  if (rc != JB_OK) return rc;
  rc = jb__posting_decode(job, job->posting.data, job->posting.len, why,
                          sizeof why);
  if (rc == JB_ECORRUPT)
    return jb__err(rc, "job %s: %s (run 'jobboard check')", text, why);
  if (rc != JB_OK) return rc;
  if (strcasecmp(job->uuid, text) != 0)
    return jb__err(JB_ECORRUPT,
                   "job %s: its posting names uuid %s (run 'jobboard check')",
                   text, job->uuid);
  memcpy(job->uuid, text, sizeof text);
  /* A job mirrored from Redis keeps Redis's posting bytes, whose sequence
   * is Redis's; its board sequence (the one that orders it here) is the
   * index's, and that is the job's sequence on this board. */
  if ((!raw->remote && job->sequence != raw->sequence) ||
      job->priority != raw->priority)
    return jb__err(JB_ECORRUPT,
                   "job %s: posting sequence/priority disagree with the "
                   "board's index (run 'jobboard check')",
                   text);
  job->sequence = raw->sequence;
  job->modified_us = raw->modified_us;
  job->claimed = raw->owner != NULL;
  job->token = job->claimed ? raw->token : 0;
  job->lease_expires_us = job->claimed ? raw->lease_expires_us : 0;
  job->holder_pid = job->claimed ? raw->holder_pid : 0;
  job->holder_alive = job->claimed && raw->holder_alive;
  job->remote = raw->remote;
  job->publishing = raw->publishing;
  job->ours = raw->ours;
  job->not_before_us = raw->not_before_us;
  job->attempts = job->max_attempts = 0;
  job->time_limit_ms = 0;
  job->snoozes = job->max_snoozes = 0;
  job->deadline_us = 0;
  job->expires_dead = false;
  job->has_unique = job->has_reason = job->has_progress = false;
  if (raw->x) {
    jb_jobx x;
    if (jb__jobx_decode(&x, raw->x, raw->x_len) != 0)
      return jb__err(JB_ECORRUPT, "job %s: its attempts record does not "
                     "decode (run 'jobboard check')", text);
    job->attempts = x.rec.attempts;
    job->max_attempts = x.rec.max_attempts;
    job->time_limit_ms = x.rec.time_limit_ms;
    job->has_unique = x.rec.unique_len > 0;
    memcpy(job->unique, x.unique, x.rec.unique_len);
    job->unique[x.rec.unique_len] = '\0';
    job->has_reason = x.rec.reason_len > 0;
    memcpy(job->reason, x.reason, x.rec.reason_len);
    job->reason[x.rec.reason_len] = '\0';
    job->snoozes = x.snz.snoozes;
    job->max_snoozes = x.snz.max_snoozes;
    job->deadline_us = x.snz.deadline_us;
    job->expires_dead = x.snz.flags & JB_JOBX_EXPIRES_DEAD;
    job->has_progress = x.has_progress;
    job->progress_permille = x.prog.permille;
    job->progress_at_us = x.prog.at_us;
    memcpy(job->progress_msg, x.prog_msg, x.prog.msg_len);
    job->progress_msg[x.prog.msg_len] = '\0';
  }
  job->owner[0] = '\0';
  if (raw->owner) {
    size_t n = raw->owner_len > JB_WHO_MAX ? JB_WHO_MAX : raw->owner_len;
    memcpy(job->owner, raw->owner, n);
    job->owner[n] = '\0';
  }
  return JB_OK;
}

void jb__job_clear(jb_job *job) {
  jb__buf_free(&job->posting);
  jb__buf_free(&job->details);
  jb__buf_free(&job->strs);
}

void jb_job_free(jb_job *job) {
  if (job == NULL) return;
  jb__job_clear(job);
  free(job);
}

const char *jb_job_uuid(const jb_job *job) { return job->uuid; }
const char *jb_job_name(const jb_job *job) { return job->name; }
jb_priority jb_job_priority(const jb_job *job) { return job->priority; }
uint64_t jb_job_sequence(const jb_job *job) { return job->sequence; }
int64_t jb_job_created(const jb_job *job) { return job->created_us; }
int64_t jb_job_modified(const jb_job *job) { return job->modified_us; }
jb_state jb_job_state(const jb_job *job) {
  return job->claimed ? JB_STATE_CLAIMED : JB_STATE_UNCLAIMED;
}
const char *jb_job_owner(const jb_job *job) {
  return job->claimed ? job->owner : NULL;
}
uint64_t jb_job_token(const jb_job *job) { return job->token; }
int64_t jb_job_lease_expires(const jb_job *job) {
  return job->lease_expires_us;
}
int jb_job_holder_pid(const jb_job *job) { return job->holder_pid; }
bool jb_job_holder_alive(const jb_job *job) { return job->holder_alive; }
bool jb_job_remote(const jb_job *job) { return job->remote; }

const char *jb_job_book_name(const jb_job *job) { return job->book_name; }
const char *jb_job_book_uuid(const jb_job *job) { return job->book_uuid; }

const void *jb_job_details(const jb_job *job, size_t *len) {
  if (len) *len = job->details.len;
  return job->details.data;
}

bool jb_job_progress(const jb_job *job, double *percent, const char **message,
                     int64_t *at_us) {
  bool has = job->has_progress;
  if (percent) *percent = has ? job->progress_permille / 10.0 : 0.0;
  if (message)
    *message = has && job->progress_msg[0] ? job->progress_msg : NULL;
  if (at_us) *at_us = has ? job->progress_at_us : 0;
  return has;
}

const void *jb_job_posting(const jb_job *job, size_t *len) {
  if (len) *len = job->posting.len;
  return job->posting.data;
}

/* ---------------------------------------------------------- jobx records */

bool jb__jobx_has_snz(const jb_jobx *x) {
  static const jb_jobxsnz zero;
  return memcmp(&x->snz, &zero, sizeof zero) != 0;
}

size_t jb__jobx_encode(const jb_jobx *x, uint8_t *out) {
  jb_jobxrec rec = x->rec;
  bool snz = jb__jobx_has_snz(x);
  rec.format = snz ? 3 : x->has_progress ? 2 : 1;
  rec.pad = snz && x->has_progress ? JB_JOBX_HAS_PROG : 0;
  memcpy(out, &rec, sizeof rec);
  size_t n = sizeof rec;
  memcpy(out + n, x->unique, rec.unique_len);
  n += rec.unique_len;
  memcpy(out + n, x->reason, rec.reason_len);
  n += rec.reason_len;
  if (snz) {
    memcpy(out + n, &x->snz, sizeof x->snz);
    n += sizeof x->snz;
  }
  if (x->has_progress) {
    memcpy(out + n, &x->prog, sizeof x->prog);
    n += sizeof x->prog;
    memcpy(out + n, x->prog_msg, x->prog.msg_len);
    n += x->prog.msg_len;
  }
  return n;
}

int jb__jobx_decode(jb_jobx *x, const void *data, size_t len) {
  memset(x, 0, sizeof *x);
  if (len < sizeof x->rec) return -1;
  memcpy(&x->rec, data, sizeof x->rec);
  size_t base = sizeof x->rec + x->rec.unique_len + x->rec.reason_len;
  if (x->rec.format < 1 || x->rec.format > 3 ||
      x->rec.unique_len > JB_UNIQUE_MAX || x->rec.reason_len > JB_REASON_MAX ||
      len < base || (x->rec.format == 1 && len != base) ||
      (x->rec.format == 3 && (x->rec.pad & ~JB_JOBX_HAS_PROG)))
    return -1;
  const uint8_t *d = (const uint8_t *)data + sizeof x->rec;
  memcpy(x->unique, d, x->rec.unique_len);
  memcpy(x->reason, d + x->rec.unique_len, x->rec.reason_len);
  bool prog = x->rec.format == 2;
  if (x->rec.format == 3) {
    if (len < base + sizeof x->snz) return -1;
    memcpy(&x->snz, (const uint8_t *)data + base, sizeof x->snz);
    base += sizeof x->snz;
    if (x->snz.flags & ~JB_JOBX_EXPIRES_DEAD) return -1;
    prog = x->rec.pad & JB_JOBX_HAS_PROG;
    if (!prog && len != base) return -1;
  }
  if (prog) {
    if (len < base + sizeof x->prog) return -1;
    memcpy(&x->prog, (const uint8_t *)data + base, sizeof x->prog);
    if (x->prog.permille > 1000 || x->prog.msg_len > JB_PROGRESS_MESSAGE_MAX ||
        len != base + sizeof x->prog + x->prog.msg_len)
      return -1;
    memcpy(x->prog_msg, (const uint8_t *)data + base + sizeof x->prog,
           x->prog.msg_len);
    x->has_progress = true;
  }
  x->rec.format = 1; /* encode writes the format its parts need */
  x->rec.pad = 0;
  x->found = true;
  return 0;
}

void jb__jobx_set_reason(jb_jobx *x, const char *reason, size_t len) {
  if (len > JB_REASON_MAX) len = JB_REASON_MAX;
  memcpy(x->reason, reason, len);
  x->rec.reason_len = (uint16_t)len;
}
