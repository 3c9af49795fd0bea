/*
 * history.c - the public completion API: consume with an outcome and a
 * result, reading the history (one job's record, or all of them through a
 * streaming iterator). Arguments are checked and results validated here,
 * before any transaction; store/history.c keeps the table.
 */
#include "internal.h"
#include "posting.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

const char *jb_end_name(jb_end end) {
  switch (end) {
  case JB_END_CONSUMED: return "consumed";
  case JB_END_FAILED: return "failed";
  case JB_END_TRASHED: return "trashed";
  case JB_END_REVOKED: return "revoked";
  case JB_END_LOST: return "lost";
  case JB_END_CANCELLED: return "cancelled";
  case JB_END_DEAD: return "dead";
  }
  return NULL;
}

/* A record handed to the caller: the public struct first, so that
 * jb_completion_free can find the rest. */
typedef struct {
  jb_completion c;
  jb_buf mem;
} completion_box;

void jb_completion_free(jb_completion *completion) {
  if (completion == NULL) return;
  completion_box *box = (completion_box *)completion;
  jb__buf_free(&box->mem);
  free(box);
}

int jb__consume_args(jb_board *b, const char *uuid, const char *who,
                     jb_outcome outcome, const void *result,
                     size_t result_len, uint8_t raw[16], size_t *who_len,
                     jb_hist_bounds *hb, jb_store_done *done) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc == JB_OK) rc = jb__who_check(who, who_len);
  if (rc != JB_OK) return rc;
  if (outcome != JB_OUTCOME_SUCCESS && outcome != JB_OUTCOME_FAILURE)
    return jb__err(JB_EINVAL, "outcome: %d is neither JB_OUTCOME_SUCCESS nor "
                   "JB_OUTCOME_FAILURE", (int)outcome);
  /* The result is kept beside its job's record: the board's limit on a
   * posting bounds it too. */
  if (result_len > b->max_posting)
    return jb__err(JB_EINVAL, "result: %zu bytes is larger than the board's "
                   "limit of %zu bytes", result_len, b->max_posting);
  if ((rc = jb__details_check(result, result_len, JB_MP_MAX_DEPTH,
                              "result")) != JB_OK)
    return rc;
  *hb = (jb_hist_bounds){b->history_max, b->history_max_age_us};
  *done = (jb_store_done){outcome == JB_OUTCOME_SUCCESS ? JB_END_CONSUMED
                                                        : JB_END_FAILED,
                          result, result_len, hb};
  return JB_OK;
}

int jb_job_consume_result(jb_board *b, const char *uuid, const char *who,
                          uint64_t token, jb_outcome outcome,
                          const void *result, size_t result_len) {
  uint8_t raw[16];
  size_t who_len;
  jb_hist_bounds hb;
  jb_store_done done;
  int rc = jb__consume_args(b, uuid, who, outcome, result, result_len, raw,
                            &who_len, &hb, &done);
  if (rc != JB_OK) return rc;
  return jb__board_release(b, JB_RELEASE_CONSUME, raw, who, who_len, token,
                           &done);
}

/* ---------------------------------------------------------------- lookup */

/* One look at job `raw`: its record into *out (JB_OK), or JB_ENOTFOUND
 * with a message, and in *found what was seen (store.h JB_HIST_*). */
static int completion_lookup(jb_completion **out, jb_board *b,
                             const uint8_t raw[16], int *found) {
  *out = NULL;
  jb_buf bytes = {0};
  jb_hist_item item;
  int rc = jb__history_find(b->store, raw, &bytes, &item, found);
  char text[JB_UUID_STRLEN];
  jb__uuid_format(text, raw);
  if (rc == JB_OK && *found == JB_HIST_ON_BOARD)
    rc = jb__err(JB_ENOTFOUND, "job %s has not completed: it is on the "
                 "board", text);
  else if (rc == JB_OK && *found == JB_HIST_UNKNOWN)
    rc = jb__err(JB_ENOTFOUND, "job %s is neither on the board nor in its "
                 "history (never posted here, or its record was dropped by "
                 "the history's bounds)", text);
  completion_box *box = NULL;
  if (rc == JB_OK && (box = calloc(1, sizeof *box)) == NULL)
    rc = jb__err(JB_ENOMEM, "out of memory reading a history record");
  if (rc == JB_OK)
    rc = jb__history_load(&box->c, &box->mem, item.hseq,
                          bytes.data + item.off, item.len);
  jb__buf_free(&bytes);
  if (rc != JB_OK) {
    jb_completion_free(box ? &box->c : NULL);
    return rc;
  }
  *out = &box->c;
  return JB_OK;
}

int jb_job_completion(jb_completion **out, jb_board *b, const char *uuid) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_job_completion: out is NULL");
  *out = NULL;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  uint8_t raw[16];
  int rc = jb__uuid_parse(raw, uuid, "job uuid");
  if (rc != JB_OK) return rc;
  int found;
  return completion_lookup(out, b, raw, &found);
}

int jb_history_count(size_t *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_history_count: NULL argument");
  *out = 0;
  return jb__history_count(b->store, out);
}

/* ------------------------------------------------------------- iterator */

/* Records read per read transaction, and the bytes that end a batch
 * early (results may be large): a slow reader never holds a snapshot. */
#define HIST_BATCH 32
#define HIST_BUDGET ((size_t)1 << 20)

struct jb_history_iter {
  jb_board *board;
  bool oldest_first;
  bool started;
  uint64_t last; /* hseq of the last record handed out */
  jb_hist_item items[HIST_BATCH];
  size_t n, pos;
  jb_buf bytes;
  jb_completion c;
  jb_buf mem;
};

int jb_history_open(jb_history_iter **out, jb_board *b, unsigned flags) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_history_open: out is NULL");
  *out = NULL;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_HISTORY_OLDEST_FIRST)
    return jb__err(JB_EINVAL, "history: unknown flags 0x%x",
                   flags & ~(unsigned)JB_HISTORY_OLDEST_FIRST);
  jb_history_iter *it = calloc(1, sizeof *it);
  if (it == NULL) return jb__err(JB_ENOMEM, "out of memory for an iterator");
  it->board = b;
  it->oldest_first = (flags & JB_HISTORY_OLDEST_FIRST) != 0;
  *out = it;
  return JB_OK;
}

int jb_history_next(const jb_completion **out, jb_history_iter *it) {
  if (out == NULL || it == NULL)
    return jb__err(JB_EINVAL, "jb_history_next: NULL argument");
  *out = NULL;
  if (it->pos == it->n) {
    /* Newest first never goes below hseq 1: nothing is older. */
    if (it->started && !it->oldest_first && it->last <= 1) return JB_OK;
    int rc = jb__history_scan(it->board->store, it->oldest_first,
                              !it->started, it->last, it->items, HIST_BATCH,
                              HIST_BUDGET, &it->bytes, &it->n);
    it->pos = 0;
    if (rc != JB_OK) {
      it->n = 0;
      return rc;
    }
    if (it->n == 0) return JB_OK;
  }
  const jb_hist_item *item = &it->items[it->pos++];
  it->last = item->hseq;
  it->started = true;
  int rc = jb__history_load(&it->c, &it->mem, item->hseq,
                            it->bytes.data + item->off, item->len);
  if (rc != JB_OK) return rc;
  *out = &it->c;
  return JB_OK;
}

void jb_history_close(jb_history_iter *it) {
  if (it == NULL) return;
  jb__buf_free(&it->bytes);
  jb__buf_free(&it->mem);
  free(it);
}

/* ----------------------------------------------------------------- wait */

typedef struct {
  jb_board *b;
  uint8_t raw[16];
  jb_completion *out;
} done_ctx;

/* One look: the record ends the wait, a job still on the board sleeps
 * until the next commit, and a uuid that is neither ends it (not found):
 * the look is one read transaction, so a job that completes in between
 * is seen in one place or the other, never in neither. */
static int done_try(void *vctx, int64_t *retry) {
  done_ctx *c = vctx;
  (void)retry; /* only a commit completes a job */
  int found;
  int rc = completion_lookup(&c->out, c->b, c->raw, &found);
  if (rc == JB_ENOTFOUND && found == JB_HIST_ON_BOARD) return JB__AGAIN;
  return rc;
}

int jb_job_wait_done(jb_completion **out, jb_board *b, const char *uuid,
                     int64_t timeout_ms) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_job_wait_done: out is NULL");
  *out = NULL;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  done_ctx c = {.b = b};
  int rc = jb__uuid_parse(c.raw, uuid, "job uuid");
  if (rc != JB_OK) return rc;
  rc = jb__board_wait(b, done_try, &c, timeout_ms);
  if (rc == JB_ETIMEDOUT) {
    char text[JB_UUID_STRLEN];
    jb__uuid_format(text, c.raw);
    jb__err(JB_ETIMEDOUT, "job %s did not complete within %lld ms", text,
            (long long)timeout_ms);
  }
  if (rc == JB_OK) *out = c.out;
  return rc;
}
