/*
 * deprecated.c - the names of 0.1 (jobboard.h, "deprecated"), each a call
 * of the function that replaced it. They stay for one release so that a
 * program written for 0.1 builds (with warnings) and links; tests/
 * test_deprecated.c calls every one of them.
 */
#undef JB_NO_DEPRECATED
#include <jobboard.h>

#include "internal.h"

/* This file defines what it declares deprecated. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

int jb_job_claim(jb_board *b, const char *uuid, const char *who) {
  return jb_claim(NULL, b, uuid, who, NULL);
}

int jb_job_claim_ex(uint64_t *token_out, jb_board *b, const char *uuid,
                    const char *who, const jb_claim_options *opts) {
  return jb_claim(token_out, b, uuid, who, opts);
}

int jb_job_claim_next(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                      jb_board *b, const char *who) {
  return jb_claim_next(uuid_out, job_out, NULL, b, who, NULL);
}

int jb_job_claim_next_ex(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                         uint64_t *token_out, jb_board *b, const char *who,
                         const jb_claim_options *opts) {
  return jb_claim_next(uuid_out, job_out, token_out, b, who, opts);
}

int jb_job_claim_next_wait(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                           uint64_t *token_out, jb_board *b, const char *who,
                           const jb_claim_options *opts, int64_t timeout_ms) {
  return jb__claim_next_wait(uuid_out, job_out, token_out, b, who, opts,
                             timeout_ms);
}

int jb_job_claim_next_many(size_t *n_out, char (*uuids_out)[JB_UUID_STRLEN],
                           uint64_t *tokens_out, jb_job **jobs_out,
                           jb_board *b, const char *who,
                           const jb_claim_options *opts, size_t max) {
  return jb_claim_next_many(n_out, uuids_out, tokens_out, jobs_out, b, who,
                            opts, max);
}

int jb_job_extend(jb_board *b, const char *uuid, const char *who,
                  uint64_t token, int64_t lease_ms) {
  return jb_extend(b, uuid, who, token, lease_ms);
}

int jb_job_abandon(jb_board *b, const char *uuid, const char *who) {
  return jb_abandon(b, uuid, who, 0);
}

int jb_job_abandon_ex(jb_board *b, const char *uuid, const char *who,
                      uint64_t token) {
  return jb_abandon(b, uuid, who, token);
}

int jb_job_consume(jb_board *b, const char *uuid, const char *who) {
  return jb_consume(b, uuid, who, 0, NULL);
}

int jb_job_consume_ex(jb_board *b, const char *uuid, const char *who,
                      uint64_t token) {
  return jb_consume(b, uuid, who, token, NULL);
}

int jb_job_consume_result(jb_board *b, const char *uuid, const char *who,
                          uint64_t token, jb_outcome outcome,
                          const void *result, size_t result_len) {
  jb_consume_options o = {JB_CONSUME_OPTIONS_VERSION, outcome, result,
                          result_len};
  return jb_consume(b, uuid, who, token, &o);
}

int jb_job_consume_and_claim_next(char next_uuid_out[JB_UUID_STRLEN],
                                  jb_job **next_job_out,
                                  uint64_t *next_token_out, jb_board *b,
                                  const char *uuid, const char *who,
                                  uint64_t token, jb_outcome outcome,
                                  const void *result, size_t result_len,
                                  const jb_claim_options *opts) {
  jb_consume_options o = {JB_CONSUME_OPTIONS_VERSION, outcome, result,
                          result_len};
  return jb_consume_and_claim_next(next_uuid_out, next_job_out,
                                   next_token_out, b, uuid, who, token, &o,
                                   opts);
}

int jb_job_consume_many(int *status_out, jb_board *b,
                        const jb_consume_item *items, size_t n, jb_item_cb cb,
                        void *payload) {
  return jb_consume_many(status_out, b, items, n, cb, payload);
}

int jb_job_trash(jb_board *b, const char *uuid, const char *who) {
  return jb_trash(b, uuid, who, 0);
}

int jb_job_trash_ex(jb_board *b, const char *uuid, const char *who,
                    uint64_t token) {
  return jb_trash(b, uuid, who, token);
}

int jb_job_retry(jb_board *b, const char *uuid, const char *who,
                 const jb_retry_options *opts, jb_retry_result *out) {
  return jb_retry(out, b, uuid, who, opts);
}

int jb_board_flush(size_t *out, jb_board *b) {
  return jb_board_cancel_unclaimed(out, b);
}

int jb_board_cancel(jb_board *b) { return jb_board_interrupt(b); }

int jb_board_cancel_reset(jb_board *b) { return jb_board_interrupt_reset(b); }

int jb_history_open(jb_history_iter **out, jb_board *b, unsigned flags) {
  return jb__history_query(out, b, flags, NULL);
}

int jb_history_open_filtered(jb_history_iter **out, jb_board *b,
                             unsigned flags,
                             const jb_history_options *filter) {
  if (out) *out = NULL;
  /* 0.1's filter has version 1 and no flags: they come apart. */
  if (filter && filter->version != 1)
    return jb__err(JB_EINVAL, "history filter: version %u is not 1 "
                   "(JB_HISTORY_FILTER_INIT; jb_history_query takes "
                   "version 2)", filter->version);
  return jb__history_query(out, b, flags, filter);
}

int jb_board_stats(jb_board *b, jb_stats *out) {
  return jb_stats_read(out, b);
}
