/*
 * internal.h - what core/ and store/ share inside the library. Not API:
 * nothing here is exported (the library is built -fvisibility=hidden).
 */
#ifndef JOBBOARD_INTERNAL_H
#define JOBBOARD_INTERNAL_H

#include "jobboard.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- errors */

/* jb__err and jb__err_errno: see errmsg.h (shared with sync/). */
#include "errmsg.h"

/* ---------------------------------------------------------------- uuids */

/* Parse 36-character uuid text (either case) into 16 bytes. On bad input
 * sets a message naming `field` and returns JB_EINVAL. */
int jb__uuid_parse(uint8_t out[16], const char *text, const char *field);
/* Write the lowercase hyphenated text of `in` (36 chars + NUL). */
void jb__uuid_format(char out[JB_UUID_STRLEN], const uint8_t in[16]);
/* A new random (version 4) uuid. JB_OK, or JB_EIO if the kernel gives no
 * randomness. */
int jb__uuid_generate(uint8_t out[16]);
/* A job's uuid: version 7, time-ordered (util.c says why). */
int jb__uuid_generate_job(uint8_t out[16]);

/* Incremented in every child after fork(): state made before a fork (a
 * board handle, the uuid pool) sees a different generation. */
unsigned jb__fork_generation(void);

/* ------------------------------------------------------------ validation */

/* true when s[0..len) is well-formed UTF-8 without NUL bytes. */
bool jb__utf8_valid(const char *s, size_t len);
/* Check an owner name: non-NULL, 1..JB_WHO_MAX bytes of UTF-8.
 * Returns JB_OK (and its length in *len) or JB_EINVAL with a message. */
int jb__who_check(const char *who, size_t *len);

/* ------------------------------------------------------------------ time */

/* Wall-clock time in microseconds since the Unix epoch (UTC). */
int64_t jb__now_us(void);
/* Tests only: make jb__now_us return `us` in this process (0: the real
 * clock again), to put a due time exactly before or after "now". */
void jb__test_clock_fix(int64_t us);

/* Microseconds on CLOCK_BOOTTIME: the same for every process of the host,
 * unmoved by changes of the wall clock, counting time spent suspended.
 * Lease expiries are kept on it (with the boot they belong to). */
int64_t jb__boottime_us(void);

/* ------------------------------------------------------------- processes */

/* A process: pid and start time (clock ticks after boot, from
 * /proc/PID/stat), so that a reused pid is a different process. */
typedef struct {
  uint32_t pid;
  uint64_t start;
} jb_proc_id;

/* This process (cached; a forked child finds its own). JB_OK or JB_EIO. */
int jb__proc_self(jb_proc_id *out);
/* 1 while process `p` runs, 0 once it is gone (exited, a zombie, or its
 * pid reused). When /proc cannot tell, 1: a claim is never taken from a
 * holder that may be alive. */
int jb__proc_alive(const jb_proc_id *p);
/* The kernel's id of this boot (/proc/sys/kernel/random/boot_id). */
int jb__boot_id(uint8_t out[16]);

/* ------------------------------------------------------------ growable buf */

typedef struct {
  uint8_t *data;
  size_t len;
  size_t cap;
} jb_buf;

int jb__buf_reserve(jb_buf *b, size_t more); /* JB_OK or JB_ENOMEM */
int jb__buf_append(jb_buf *b, const void *p, size_t n);
void jb__buf_free(jb_buf *b);

/* ----------------------------------------------------------------- board */

/* A board handle (board.c opens it; entity.c reaches the store through
 * it). */
struct jb_board {
  struct jb_store *store; /* shared by every handle of this process on the
                             board */
  char *path;
  size_t max_posting;
  int readonly;         /* jb_board_readonly */
  atomic_int cancelled; /* jb_board_cancel: every wait ends (sticky) */
  /* The completion history's bounds (jb_board_options): the records this
   * handle's writes add trim the history to them. */
  size_t history_max;
  int64_t history_max_age_us;
  /* Redis-decided jobs go through these first (remote_hook.h); NULL: none. */
  const struct jb_remote_ops *remote_ops;
  void *remote_ctx;
};

/* ------------------------------------------------------------------ waits */

/* A wait attempt's "not yet". */
#define JB__AGAIN 1

/* One attempt of a wait. It returns JB_OK or a JB_E* code to end the wait
 * (the wait returns it as is), or JB__AGAIN to sleep until the next commit
 * on the board. It may lower *retry_mono_us (CLOCK_MONOTONIC microseconds;
 * INT64_MAX on entry) to be tried again by then without a commit (a lease
 * lapsing). It runs outside any transaction and does its own reads and
 * writes. */
typedef int (*jb_wait_fn)(void *ctx, int64_t *retry_mono_us);

/* Attempt, then sleep on the board's signal and attempt again after each
 * commit, until the attempt ends it, `timeout_ms` passes (JB_ETIMEDOUT;
 * < 0: no limit; 0: one attempt) or the handle is cancelled
 * (JB_ECANCELED). */
int jb__board_wait(jb_board *b, jb_wait_fn fn, void *ctx, int64_t timeout_ms);

/* CLOCK_MONOTONIC in microseconds. */
int64_t jb__mono_us(void);

/* ------------------------------------------------------------------ jobs */

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
  bool remote;             /* Redis decides its ownership (DESIGN 6) */
  bool publishing;         /* remote, and its publication not confirmed */
  bool ours;               /* remote, published from this board */
  const char *name;
  const char *book_name; /* NULL when none */
  const char *book_uuid;
  jb_buf posting;        /* the posting bytes as stored */
  jb_buf details;        /* the details map, re-encoded */
  jb_buf strs;           /* name, book name, book uuid, NUL-terminated */
  /* A job's life (schema 8; store/life.h). */
  int64_t not_before_us;   /* delayed: its due time; else 0 */
  uint32_t attempts, max_attempts;
  int64_t time_limit_ms;
  bool has_unique, has_reason;
  char unique[JB_UNIQUE_MAX + 1];
  char reason[JB_REASON_MAX + 1];
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
  const void *x;           /* its jobx record (store/life.h); NULL: none */
  size_t x_len;
} jb_job_raw;

/* Copy `raw` into `job` (reusing its buffers) and decode its posting.
 * Returns JB_OK, JB_ENOMEM, or JB_ECORRUPT with a message naming the job
 * and the reason. */
int jb__job_load(jb_job *job, const jb_job_raw *raw);
void jb__job_clear(jb_job *job); /* free the buffers, not the struct */

/* `rc` as a release, retry or extend of job raw returned it; JB_ENOTFOUND
 * gets " (it was cancelled)" added to its message when the job's history
 * says a cancel ended it (forced from its holder). core/board.c. */
int jb__board_say_if_cancelled(jb_board *b, int rc, const uint8_t raw[16]);

#endif
