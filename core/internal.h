/*
 * internal.h - what the files of core/ (the board API) share. Not API:
 * nothing here is exported (the library is built -fvisibility=hidden).
 * It brings in the folders below: base/ (errors, buffers, uuids, clocks),
 * codec/ (the job snapshot) and store/ (the LMDB transactions).
 */
#ifndef JOBBOARD_INTERNAL_H
#define JOBBOARD_INTERNAL_H

#include "jobboard.h"
#include "base/error.h"
#include "base/util.h"
#include "codec/job.h"
#include "store/store.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ----------------------------------------------------------------- board */

/* A board handle (board.c opens it; entity.c reaches the store through
 * it). */
struct jb_board {
  struct jb_store *store; /* shared by every handle of this process on the
                             board */
  char *path;
  size_t max_posting;
  int readonly;         /* jb_board_readonly */
  atomic_int cancelled; /* jb_board_interrupt: every wait ends (sticky) */
  /* The completion history's bounds (jb_board_options): the records this
   * handle's writes add trim the history to them. */
  size_t history_max;
  int64_t history_max_age_us;
  /* Redis-decided jobs go through these first (sync_hook.h); NULL: none. */
  const struct jb_remote_ops *remote_ops;
  void *remote_ctx;
};

/* ------------------------------------------------------------------ waits */

/* Attempt, then sleep on the board's signal and attempt again after each
 * commit, until the attempt ends it, `timeout_ms` passes (JB_ETIMEDOUT;
 * < 0: no limit; 0: one attempt) or the handle is cancelled
 * (JB_EINTERRUPTED). */
int jb__board_wait(jb_board *b, jb_wait_fn fn, void *ctx, int64_t timeout_ms);
/* Check the names a caller chose (claim-next's, a wait's): at most
 * JB_CLAIM_NAMES_MAX, each 1..JB_NAME_MAX bytes of UTF-8 (a trailing '*'
 * a prefix); JB_EINVAL naming `what` and the bad one. */
int jb__names_check(const char *what, const char *const *names, size_t n);

/* ------------------------------------------- the board over the store */

/* A release through the board handle (board.c): local, or for a
 * Redis-decided job through the handle's hook first (the authority rule).
 * `done` for consume and trash, NULL for abandon. */
int jb__board_release(jb_board *b, jb_release op, const uint8_t raw[16],
                      const char *who, size_t who_len, uint64_t token,
                      const jb_store_done *done);
/* A cancel of a Redis-decided job through the handle's hook (board.c):
 * Redis first (JB_EOFFLINE without the hook), then the local record. */
int jb__board_remote_cancel(jb_board *b, const uint8_t raw[16], bool force);

/* jb_consume's argument checks (history.c): the uuid
 * into `raw`, the owner's length, and `done` (pointing at `hb`, the
 * handle's history bounds) for the release. JB_EINVAL naming the field. */
int jb__consume_args(jb_board *b, const char *uuid, const char *who,
                     jb_outcome outcome, const void *result,
                     size_t result_len, uint8_t raw[16], size_t *who_len,
                     jb_hist_bounds *hb, jb_store_done *done);
/* The same from a jb_consume_options (NULL: success, no result), its
 * version checked. */
int jb__consume_opts_args(jb_board *b, const char *uuid, const char *who,
                          const jb_consume_options *opts, uint8_t raw[16],
                          size_t *who_len, jb_hist_bounds *hb,
                          jb_store_done *done);

/* core/board.c's check and encoding of one post (jb_job_post's): its
 * posting prefix appended to `buf`, sp->prefix left as the offset of it
 * there, sp->x its options (malloc'ed; the caller frees it). For posts
 * made inside a transaction of store/ (store/schedule.c, through
 * core/schedule.c's jb_sched_prep_fn). */
int jb__post_prepare(size_t max_posting, const jb_post *p, jb_buf *buf,
                     jb_store_post *sp, int64_t now_us);

/* claim-next's request from a claim's options, and a claim of a
 * Redis-decided job through the handle's hook (board.c). */
int jb__board_claim_req(jb_store_claim_req *req, const char *who,
                        const jb_claim_options *opts);

/* A claim's wait_ms: 0 for NULL options and for version 1, which ends
 * before it. */
static inline int64_t jb__claim_wait_ms(const jb_claim_options *opts) {
  return opts && opts->version >= 2 ? opts->wait_ms : 0;
}

/* jb_claim_next without its wait (board.c), and with a wait of
 * `timeout_ms` (wait.c; JB_ETIMEDOUT when nothing came, also for 0).
 * next_token_us (may be NULL): as jb_store_claim_req's. */
int jb__claim_next_once(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                        uint64_t *token_out, jb_board *b, const char *who,
                        const jb_claim_options *opts, int64_t *next_token_us);
int jb__claim_next_wait(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                        uint64_t *token_out, jb_board *b, const char *who,
                        const jb_claim_options *opts, int64_t timeout_ms);

/* jb_history_query with the flags apart (history.c): 0.1's
 * jb_history_open_filtered takes them so. */
int jb__history_query(jb_history_iter **out, jb_board *b, unsigned flags,
                      const jb_history_options *opts);

/* jb_claim_next_many without its wait (batch.c); next_token_us as
 * jb__claim_next_once's. */
int jb__claim_next_many_once(size_t *n_out,
                             char (*uuids_out)[JB_UUID_STRLEN],
                             uint64_t *tokens_out, jb_job **jobs_out,
                             jb_board *b, const char *who,
                             const jb_claim_options *opts, size_t max,
                             int64_t *next_token_us);
int jb__board_remote_claim(jb_board *b, const uint8_t raw[16],
                           const jb_store_claim_req *req, uint64_t *token);

/* `rc` as a release, retry or extend of job raw returned it; JB_ENOTFOUND
 * gets " (it was cancelled)" added to its message when the job's history
 * says a cancel ended it (forced from its holder). core/board.c. */
int jb__board_say_if_cancelled(jb_board *b, int rc, const uint8_t raw[16]);

#endif
