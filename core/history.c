/*
 * history.c - the public completion API: consume with an outcome and a
 * result, reading the history (one job's record, or all of them through a
 * streaming iterator). Arguments are checked and results validated here,
 * before any transaction; store/history.c keeps the table.
 */
#include "internal.h"
#include "codec/posting.h"
#include "store/history.h"
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
  case JB_END_EXPIRED: return "expired";
  }
  return NULL;
}

/* A record handed to the caller: the public struct first, so that
 * jb_completion_free can find the rest. */
typedef struct {
  jb_completion c;
  jb_buf mem;
  jb_job job; /* the posting decoded: details and book point into it */
} completion_box;

void jb_completion_free(jb_completion *completion) {
  if (completion == NULL) return;
  completion_box *box = (completion_box *)completion;
  jb__buf_free(&box->mem);
  jb__job_clear(&box->job);
  free(box);
}

/* Record `val` into `c` (jb__history_load), with the fields its posting
 * gives decoded into `job` (details, book). */
static int completion_load(jb_completion *c, jb_buf *mem, jb_job *job,
                           uint64_t hseq, const void *val, size_t len) {
  int rc = jb__history_load(c, mem, hseq, val, len);
  if (rc != JB_OK || c->posting == NULL) return rc;
  char why[200];
  uint8_t raw[16];
  jb__uuid_parse(raw, c->uuid, "job uuid");
  rc = jb__histrec_posting(job, c->posting, c->posting_len, raw, why,
                           sizeof why);
  if (rc == JB_ECORRUPT)
    return jb__err(rc, "history record %llu (job %s): posting: %s (run "
                   "'jobboard check')", (unsigned long long)hseq, c->uuid,
                   why);
  if (rc != JB_OK) return rc;
  c->details = job->details.data;
  c->details_len = job->details.len;
  c->book_name = job->book_name;
  c->book_uuid = job->book_uuid;
  return JB_OK;
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
  *done = (jb_store_done){.end = outcome == JB_OUTCOME_SUCCESS
                                     ? JB_END_CONSUMED
                                     : JB_END_FAILED,
                          .result = result, .result_len = result_len,
                          .bounds = hb};
  return JB_OK;
}

int jb__consume_opts_args(jb_board *b, const char *uuid, const char *who,
                          const jb_consume_options *opts, uint8_t raw[16],
                          size_t *who_len, jb_hist_bounds *hb,
                          jb_store_done *done) {
  static const jb_consume_options plain = JB_CONSUME_OPTIONS_INIT;
  if (opts == NULL) opts = &plain;
  if (opts->version != JB_CONSUME_OPTIONS_VERSION)
    return jb__err(JB_EINVAL, "consume options: version %u is not %u (use "
                   "JB_CONSUME_OPTIONS_INIT)", opts->version,
                   JB_CONSUME_OPTIONS_VERSION);
  return jb__consume_args(b, uuid, who, opts->outcome, opts->result,
                          opts->result_len, raw, who_len, hb, done);
}

int jb_consume(jb_board *b, const char *uuid, const char *who, uint64_t token,
               const jb_consume_options *opts) {
  uint8_t raw[16];
  size_t who_len;
  jb_hist_bounds hb;
  jb_store_done done;
  int rc = jb__consume_opts_args(b, uuid, who, opts, raw, &who_len, &hb,
                                 &done);
  if (rc != JB_OK) return rc;
  return jb__board_say_if_cancelled(
      b, jb__board_release(b, JB_RELEASE_CONSUME, raw, who, who_len, token,
                           &done), raw);
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
    rc = completion_load(&box->c, &box->mem, &box->job, item.hseq,
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
  bool done;
  uint64_t last; /* hseq of the last record looked at */
  jb_hist_filter filter;
  bool filtered;
  char *strs;    /* the filter's name and prefix */
  jb_hist_item items[HIST_BATCH];
  size_t n, pos;
  jb_buf bytes;
  jb_completion c;
  jb_buf mem;
  jb_job job;
};

/* Check `f` (jobboard.h) and make it the store's `out`, its strings
 * copied to *strs (malloc'ed; the caller frees it). */
static int filter_take(jb_hist_filter *out, char **strs,
                       const jb_history_options *f) {
  *strs = NULL;
  for (unsigned e = 0; e < 32; e++)
    if ((f->ends & (UINT32_C(1) << e)) && jb_end_name((jb_end)e) == NULL)
      return jb__err(JB_EINVAL, "history filter: ends: bit %u is not a "
                     "jb_end", e);
  size_t nlen = f->name ? strlen(f->name) : 0;
  size_t plen = f->name_prefix ? strlen(f->name_prefix) : 0;
  if (nlen > JB_NAME_MAX || plen > JB_NAME_MAX)
    return jb__err(JB_EINVAL, "history filter: %s: %zu bytes is longer "
                   "than a name (JB_NAME_MAX, %d)",
                   nlen > JB_NAME_MAX ? "name" : "name_prefix",
                   nlen > JB_NAME_MAX ? nlen : plen, JB_NAME_MAX);
  if (f->since_us && f->until_us && f->until_us <= f->since_us)
    return jb__err(JB_EINVAL, "history filter: until_us %lld is not after "
                   "since_us %lld", (long long)f->until_us,
                   (long long)f->since_us);
  if ((*strs = malloc(nlen + plen + 2)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for a history filter");
  char *name = *strs, *prefix = *strs + nlen + 1;
  memcpy(name, f->name ? f->name : "", nlen + 1);
  memcpy(prefix, f->name_prefix ? f->name_prefix : "", plen + 1);
  *out = (jb_hist_filter){.ends = f->ends,
                          .name = f->name ? name : NULL,
                          .name_len = nlen,
                          .prefix = f->name_prefix ? prefix : NULL,
                          .prefix_len = plen,
                          .since_us = f->since_us ? f->since_us : INT64_MIN,
                          .until_us = f->until_us ? f->until_us : INT64_MAX};
  return JB_OK;
}

int jb_history_query(jb_history_iter **out, jb_board *b,
                     const jb_history_options *opts) {
  if (opts && opts->version != 1 && opts->version != JB_HISTORY_OPTIONS_VERSION) {
    if (out) *out = NULL;
    return jb__err(JB_EINVAL, "history options: version %u is not %d "
                   "(JB_HISTORY_OPTIONS_INIT)", opts->version,
                   JB_HISTORY_OPTIONS_VERSION);
  }
  /* Version 1 (0.1's jb_history_filter) ends before flags. */
  unsigned flags = opts && opts->version >= 2 ? opts->flags : 0;
  return jb__history_query(out, b, flags, opts);
}

int jb__history_query(jb_history_iter **out, jb_board *b, unsigned flags,
                      const jb_history_options *filter) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_history_query: out is NULL");
  *out = NULL;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_HISTORY_OLDEST_FIRST)
    return jb__err(JB_EINVAL, "history: unknown flags 0x%x",
                   flags & ~(unsigned)JB_HISTORY_OLDEST_FIRST);
  jb_history_iter *it = calloc(1, sizeof *it);
  if (it == NULL) return jb__err(JB_ENOMEM, "out of memory for an iterator");
  if (filter) {
    int rc = filter_take(&it->filter, &it->strs, filter);
    if (rc != JB_OK) {
      free(it);
      return rc;
    }
    it->filtered = true;
  }
  it->board = b;
  it->oldest_first = (flags & JB_HISTORY_OLDEST_FIRST) != 0;
  *out = it;
  return JB_OK;
}

int jb_history_next(const jb_completion **out, jb_history_iter *it) {
  if (out == NULL || it == NULL)
    return jb__err(JB_EINVAL, "jb_history_next: NULL argument");
  *out = NULL;
  /* A batch may hold no record the filter selects: the next one goes on
   * from the last record looked at, until one looks at none. */
  while (it->pos == it->n) {
    /* Newest first never goes below hseq 1: nothing is older. */
    if (it->done || (it->started && !it->oldest_first && it->last <= 1))
      return JB_OK;
    uint64_t seen;
    int rc = jb__history_scan(it->board->store,
                              it->filtered ? &it->filter : NULL,
                              it->oldest_first, !it->started, it->last,
                              it->items, HIST_BATCH, HIST_BUDGET, &it->bytes,
                              &it->n, &seen);
    it->pos = 0;
    if (rc != JB_OK) {
      it->n = 0;
      return rc;
    }
    if (seen == 0) {
      /* Oldest first sees records added later: look again next call. */
      if (!it->oldest_first) it->done = it->started;
      return JB_OK;
    }
    it->last = seen;
    it->started = true;
  }
  const jb_hist_item *item = &it->items[it->pos++];
  int rc = completion_load(&it->c, &it->mem, &it->job, item->hseq,
                           it->bytes.data + item->off, item->len);
  if (rc != JB_OK) return rc;
  *out = &it->c;
  return JB_OK;
}

void jb_history_close(jb_history_iter *it) {
  if (it == NULL) return;
  jb__buf_free(&it->bytes);
  jb__buf_free(&it->mem);
  jb__job_clear(&it->job);
  free(it->strs);
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
