/*
 * job.h - a job as the library hands it out (jb_job), built from the
 * store's raw parts, and the `jobx` record's encoding (store/store.h, "A
 * job's life"). Not API. Pure functions of bytes: no transaction, no
 * file, so the store decodes what it reads without calling up into the
 * board, and a fuzzer can drive them alone.
 */
#ifndef JOBBOARD_CODEC_JOB_H
#define JOBBOARD_CODEC_JOB_H

#include "jobboard.h"
#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A job snapshot. `mem` holds the posting; the string pointers point into
 * `strs`, which holds copies with terminating NULs (the posting's strings
 * are not NUL-terminated). */
struct jb_job {
  char uuid[JB_UUID_STRLEN];
  char owner[JB_WHO_MAX + 1];
  bool claimed;
  jb_priority priority;
  uint64_t sequence;
  int64_t created_us;
  int64_t modified_us;
  uint64_t token;          /* claimed: the claim's fencing token */
  int64_t lease_expires_us;/* claimed with a lease: wall-clock estimate */
  int holder_pid;          /* claimed and bound to a process */
  bool holder_alive;
  bool remote;             /* Redis decides its ownership (authority rule) */
  bool publishing;         /* remote, and its publication not confirmed */
  bool ours;               /* remote, published from this board */
  const char *name;
  const char *book_name; /* NULL when none */
  const char *book_uuid;
  jb_buf posting;        /* the posting bytes as stored */
  jb_buf details;        /* the details map, re-encoded */
  jb_buf strs;           /* name, book name, book uuid, NUL-terminated */
  /* A job's life (schema 8; store/store.h "A job's life"). */
  int64_t not_before_us;   /* delayed: its due time; else 0 */
  uint32_t attempts, max_attempts;
  int64_t time_limit_ms;
  bool has_unique, has_reason;
  char unique[JB_UNIQUE_MAX + 1];
  char reason[JB_REASON_MAX + 1];
  /* Snoozes and the deadline to start (schema 11; jobx format 3). */
  uint32_t snoozes, max_snoozes;
  int64_t deadline_us;
  bool expires_dead;
  /* Its progress (schema 10; jobx format 2). */
  bool has_progress;
  uint16_t progress_permille;
  int64_t progress_at_us;
  char progress_msg[JB_PROGRESS_MESSAGE_MAX + 1];
};

/* What the store hands to jb__job_load: the raw parts of one job. */
typedef struct {
  const uint8_t *uuid;     /* 16 bytes */
  jb_priority priority;
  uint64_t sequence;
  int64_t modified_us;
  const char *owner;       /* NULL when unclaimed (or its claim lapsed); not
                              NUL-terminated */
  size_t owner_len;
  uint64_t token;          /* with owner */
  int64_t lease_expires_us;
  int holder_pid;
  bool holder_alive;
  bool remote;             /* Redis-decided */
  bool publishing;         /* its publication not confirmed yet */
  bool ours;               /* published from this board */
  const void *posting;
  size_t posting_len;
  int64_t not_before_us;   /* delayed: its due time; else 0 */
  const void *x;           /* its jobx record (below); NULL: none */
  size_t x_len;
} jb_job_raw;

/* Copy `raw` into `job` (reusing its buffers) and decode its posting.
 * Returns JB_OK, JB_ENOMEM, or JB_ECORRUPT with a message naming the job
 * and the reason. */
int jb__job_load(jb_job *job, const jb_job_raw *raw);
void jb__job_clear(jb_job *job); /* free the buffers, not the struct */

/* ---------------------------------------------------------- jobx records
 *
 * `jobx` (schema 8): uuid -> jb_jobxrec + unique key + last reason: what a
 * job's posting does not hold (the options it was posted with, its
 * attempts and the last reason given). Format 2 (schema 10) adds the
 * progress its claimant last reported: a jb_jobxprog and the message's
 * bytes after the reason. A record without progress is written as
 * format 1, so only a job that reports progress has a longer one.
 * Format 3 (schema 11) adds a jb_jobxsnz (snoozes, their limit, the
 * deadline to start) right after the reason, then the progress part when
 * `pad` has JB_JOBX_HAS_PROG; only a job that has such a part (posted
 * with max_snoozes or a deadline, or snoozed) is written as format 3. */
typedef struct {
  uint8_t format;        /* 1, 2: a jb_jobxprog follows the reason; 3: a
                            jb_jobxsnz follows it, then the progress part
                            when pad has JB_JOBX_HAS_PROG */
  uint8_t pad;           /* format 3: JB_JOBX_HAS_PROG; else 0 */
  uint16_t unique_len;   /* the unique key's bytes follow the record */
  uint16_t reason_len;   /* then the last reason's */
  uint16_t pad2;
  uint32_t attempts;     /* claims that ended without a completion */
  uint32_t max_attempts; /* 0: the board's policy */
  int64_t time_limit_ms; /* 0: none */
  int64_t backoff_ms;    /* 0: the board's policy */
  int64_t backoff_max_ms;
  int64_t limit_bt;      /* the current claim's time limit, CLOCK_BOOTTIME
                            (0: none); a lease never runs past it */
  int64_t last_us;       /* when the last attempt ended (0: none yet) */
  int64_t not_before_us; /* the due time it was posted with (0: none) */
} jb_jobxrec;

/* Format 2's progress part (jobboard.h, jb_progress). */
typedef struct {
  uint16_t permille;     /* the percentage in tenths: 0..1000 */
  uint8_t msg_len;       /* the message's bytes follow (0: none) */
  uint8_t pad;
  uint32_t pad2;
  int64_t at_us;         /* when it was reported, wall clock */
  uint64_t token;        /* the token of the claim that reported it */
} jb_jobxprog;

/* Format 3's part (jobboard.h, jb_snooze and jb_post's version 3). */
typedef struct {
  uint32_t snoozes;      /* snoozes so far (not attempts) */
  uint32_t max_snoozes;  /* 0: no limit */
  int64_t deadline_us;   /* not claimed by then: it ends expired (wall
                            clock; 0: none, or it was claimed) */
  uint8_t flags;         /* JB_JOBX_EXPIRES_DEAD */
  uint8_t pad[7];
} jb_jobxsnz;
#define JB_JOBX_HAS_PROG 1u     /* jb_jobxrec.pad of format 3 */
#define JB_JOBX_EXPIRES_DEAD 1u /* jb_jobxsnz.flags: expiry is a dead letter */

/* A jobx record with its strings, copied out of the transaction. */
typedef struct jb_jobx {
  bool found;
  bool garbled; /* jb__jobx_get: a record is there but does not decode */
  jb_jobxrec rec;
  char unique[JB_UNIQUE_MAX];
  char reason[JB_REASON_MAX];
  bool has_progress;     /* format 2 */
  jb_jobxprog prog;
  char prog_msg[JB_PROGRESS_MESSAGE_MAX];
  jb_jobxsnz snz;        /* format 3; all zero: none */
} jb_jobx;
#define JB_JOBX_MAXLEN                                                         \
  (sizeof(jb_jobxrec) + JB_UNIQUE_MAX + JB_REASON_MAX + sizeof(jb_jobxsnz) +   \
   sizeof(jb_jobxprog) + JB_PROGRESS_MESSAGE_MAX)
/* Whether x needs format 3 (a snooze part that is not all zero). */
bool jb__jobx_has_snz(const jb_jobx *x);

/* Write x's record into out (JB_JOBX_MAXLEN bytes at most); its length.
 * The format is 3 with a snooze part, else x's progress's: 2 with it, 1
 * without (so a record a schema 10 reader could read stays so). */
size_t jb__jobx_encode(const jb_jobx *x, uint8_t *out);
/* Read a record into x (found set): 0, or -1 when it does not decode. */
int jb__jobx_decode(jb_jobx *x, const void *data, size_t len);
/* Keep `reason` (cut to JB_REASON_MAX bytes) as the last reason. */
void jb__jobx_set_reason(jb_jobx *x, const char *reason, size_t len);

#endif
