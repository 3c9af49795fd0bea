/*
 * wait.c - blocking waits: for jobs, for a claimable job, and the cancel
 * of a handle's waits. The sleeping is store/wake.c's.
 */
#include "internal.h"

#include "store/store.h"
#include "store/wake.h"

#include <inttypes.h>
#include <string.h>

int jb__board_wait(jb_board *b, jb_wait_fn fn, void *ctx, int64_t timeout_ms) {
  return jb__store_wait(b->store, fn, ctx, timeout_ms, &b->cancelled);
}

int jb_board_interrupt(jb_board *b) {
  if (b == NULL) return JB_EINVAL; /* no message: signal handlers call this */
  atomic_store(&b->cancelled, 1);
  jb__signal_poke(b->store);
  return JB_OK;
}

int jb_board_interrupt_reset(jb_board *b) {
  if (b == NULL)
    return jb__err(JB_EINVAL, "jb_board_interrupt_reset: board is NULL");
  atomic_store(&b->cancelled, 0);
  return JB_OK;
}

typedef struct {
  jb_board *b;
  unsigned flags;
} jobs_ctx;

static int jobs_try(void *vctx, int64_t *retry) {
  jobs_ctx *c = vctx;
  size_t n = 0;
  int rc = jb__store_wait_state(c->b->store, c->flags, &n, retry);
  if (rc != JB_OK) return rc;
  return n > 0 ? JB_OK : JB__AGAIN;
}

int jb_board_wait(jb_board *b, unsigned flags, int64_t timeout_ms) {
  if (b == NULL) return jb__err(JB_EINVAL, "jb_board_wait: board is NULL");
  if (flags & ~(unsigned)JB_ONLY_UNCLAIMED)
    return jb__err(JB_EINVAL, "wait: unknown flags 0x%x",
                   flags & ~(unsigned)JB_ONLY_UNCLAIMED);
  jobs_ctx c = {b, flags};
  int rc = jb__board_wait(b, jobs_try, &c, timeout_ms);
  if (rc == JB_ETIMEDOUT)
    jb__err(JB_ETIMEDOUT, "board %s: no %sjob after %" PRId64 " ms", b->path,
            flags & JB_ONLY_UNCLAIMED ? "claimable " : "", timeout_ms);
  return rc;
}

/* The wake bits a wait for some names sleeps for (store/wake.h): every
 * commit's without names, else only the commits that make ready a job of
 * one of their lanes (a prefix: any lane's), and pokes. */
static uint32_t names_mask(const char *const *names, size_t n) {
  if (!n || !names) return JB_WAKE_ANY;
  uint32_t m = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]);
    if (jb__name_is_prefix(names[i], len)) return JB_WAKE_LANES;
    m |= JB_WAKE_LANE(jb__name_lane(names[i], len));
  }
  return m;
}

typedef struct {
  jb_board *b;
  unsigned flags;
  const char *const *names;
  size_t n;
} names_ctx;

static int names_try(void *vctx, int64_t *retry) {
  names_ctx *c = vctx;
  size_t n = 0;
  int rc = jb__store_count_names(c->b->store, c->flags, c->names, c->n, true,
                                 &n);
  if (rc != JB_OK || n > 0) return rc;
  /* None: the timers (a lease lapses, a delayed job falls due) and the
   * holders' watch, without counting again. */
  rc = jb__store_wait_state(c->b->store, c->flags | JB__WAIT_TIMERS, &n,
                            retry);
  return rc != JB_OK ? rc : JB__AGAIN;
}

static int wait_names(jb_board *b, unsigned flags, const char *const *names,
                      size_t n_names, int64_t timeout_ms) {
  if (n_names == 0) return jb_board_wait(b, flags, timeout_ms);
  if (flags & ~(unsigned)JB_ONLY_UNCLAIMED)
    return jb__err(JB_EINVAL, "wait: unknown flags 0x%x",
                   flags & ~(unsigned)JB_ONLY_UNCLAIMED);
  names_ctx c = {b, flags, names, n_names};
  int rc = jb__store_wait_mask(b->store, names_try, &c, timeout_ms,
                               &b->cancelled, names_mask(names, n_names));
  if (rc == JB_ETIMEDOUT)
    jb__err(JB_ETIMEDOUT, "board %s: no %sjob of the names chosen (%zu) after %"
            PRId64 " ms", b->path, flags & JB_ONLY_UNCLAIMED ? "claimable " : "",
            n_names, timeout_ms);
  return rc;
}

int jb_board_wait_names(jb_board *b, unsigned flags, const char *const *names,
                        size_t n_names, int64_t timeout_ms, size_t *count_out) {
  if (count_out) *count_out = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "jb_board_wait_names: board is NULL");
  int rc = jb__names_check("wait", names, n_names);
  if (rc == JB_OK) rc = wait_names(b, flags, names, n_names, timeout_ms);
  if (rc != JB_OK || count_out == NULL) return rc;
  if (n_names == 0) return jb_board_count(count_out, b, flags);
  return jb__store_count_names(b->store, flags, names, n_names, false,
                               count_out);
}

typedef struct {
  char *uuid_out;
  jb_job **job_out;
  uint64_t *token_out;
  jb_board *b;
  const char *who;
  const jb_claim_options *opts;
  /* jb_claim_next_many's (max > 0) */
  size_t max, *n_out;
  char (*uuids_out)[JB_UUID_STRLEN];
  uint64_t *tokens_out;
  jb_job **jobs_out;
} claim_ctx;

static int claim_try(void *vctx, int64_t *retry) {
  claim_ctx *c = vctx;
  int64_t token_us = 0;
  int rc = c->max > 0
               ? jb__claim_next_many_once(c->n_out, c->uuids_out,
                                          c->tokens_out, c->jobs_out, c->b,
                                          c->who, c->opts, c->max, &token_us)
               : jb__claim_next_once(c->uuid_out, c->job_out, c->token_out,
                                     c->b, c->who, c->opts, &token_us);
  if (rc != JB_ENOTFOUND) return rc;
  size_t n = 0;
  bool names = c->opts && c->opts->version >= 3 && c->opts->n_names;
  rc = jb__store_wait_state(c->b->store,
                            JB_ONLY_UNCLAIMED | (names ? JB__COUNT_FOR_NAMES
                                                       : JB__COUNT_FOR_CLAIM),
                            &n, retry);
  if (rc != JB_OK) return rc;
  if (token_us) {
    /* A rate limit's next token: no commit marks it, so the wait wakes by
     * itself then (wall clock to monotonic, now). */
    int64_t left = token_us - jb__now_us();
    int64_t t = jb__mono_us() + (left > 0 ? left : 0);
    if (t < *retry) *retry = t;
  }
  /* Claimable, yet claim-next found nothing: the claim-next after this one
   * returns the lapsed claims to the ready index. Not a busy loop: a
   * millisecond apart. */
  if (n > 0) *retry = jb__mono_us() + 1000;
  return JB__AGAIN;
}

static uint32_t claim_mask(const jb_claim_options *o) {
  if (!o || o->version < 3) return JB_WAKE_ANY;
  return names_mask(o->names, o->n_names);
}

static int claim_wait(claim_ctx *c, int64_t timeout_ms) {
  int rc = jb__store_wait_mask(c->b->store, claim_try, c, timeout_ms,
                               &c->b->cancelled, claim_mask(c->opts));
  if (rc == JB_ETIMEDOUT)
    jb__err(JB_ETIMEDOUT, "board %s: nothing claimable after %" PRId64 " ms",
            c->b->path, timeout_ms);
  return rc;
}

int jb__claim_next_wait(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                        uint64_t *token_out, jb_board *b, const char *who,
                        const jb_claim_options *opts, int64_t timeout_ms) {
  if (job_out) *job_out = NULL;
  if (token_out) *token_out = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  claim_ctx c = {.uuid_out = uuid_out, .job_out = job_out,
                 .token_out = token_out, .b = b, .who = who, .opts = opts};
  return claim_wait(&c, timeout_ms);
}

int jb_claim_next(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                  uint64_t *token_out, jb_board *b, const char *who,
                  const jb_claim_options *opts) {
  int64_t wait_ms = jb__claim_wait_ms(opts);
  if (wait_ms == 0)
    return jb__claim_next_once(uuid_out, job_out, token_out, b, who, opts,
                               NULL);
  /* Any wait below 0 is without limit, as every timeout of the board. */
  return jb__claim_next_wait(uuid_out, job_out, token_out, b, who, opts,
                             wait_ms);
}

int jb_claim_next_many(size_t *n_out, char (*uuids_out)[JB_UUID_STRLEN],
                       uint64_t *tokens_out, jb_job **jobs_out, jb_board *b,
                       const char *who, const jb_claim_options *opts,
                       size_t max) {
  int64_t wait_ms = jb__claim_wait_ms(opts);
  int rc = jb__claim_next_many_once(n_out, uuids_out, tokens_out, jobs_out,
                                    b, who, opts, max, NULL);
  if (rc != JB_ENOTFOUND || wait_ms == 0) return rc;
  claim_ctx c = {.b = b, .who = who, .opts = opts, .max = max,
                 .n_out = n_out, .uuids_out = uuids_out,
                 .tokens_out = tokens_out, .jobs_out = jobs_out};
  return claim_wait(&c, wait_ms);
}
