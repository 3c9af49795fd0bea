/*
 * watch.c - the public change log: reading it from a cursor, waiting for
 * more, and subscriptions that call back on a thread of their own.
 *
 * Every read is one short read transaction (store/logread.c); waiting is
 * jb__board_wait's, woken by the commits of any process; callbacks run on
 * the subscription's thread between reads, so never inside a transaction
 * and never holding anything a write needs.
 */
#include "internal.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *jb_event_type_name(jb_event_type type) {
  switch (type) {
  case JB_EVENT_POSTED: return "POSTED";
  case JB_EVENT_CLAIMED: return "CLAIMED";
  case JB_EVENT_ABANDONED: return "ABANDONED";
  case JB_EVENT_CONSUMED: return "CONSUMED";
  case JB_EVENT_TRASHED: return "TRASHED";
  case JB_EVENT_REFRESHED: return "REFRESHED";
  case JB_EVENT_EXPIRED: return "EXPIRED";
  case JB_EVENT_EXTENDED: return "EXTENDED";
  case JB_EVENT_REVOKED: return "REVOKED";
  case JB_EVENT_LOST: return "LOST";
  case JB_EVENT_CANCELLED: return "CANCELLED";
  case JB_EVENT_DEAD: return "DEAD";
  case JB_EVENT_PROGRESS: return "PROGRESS";
  case JB_EVENT_SNOOZED: return "SNOOZED";
  case JB_EVENT_DEADLINE: return "DEADLINE";
  case JB_EVENT_TRIMMED: return "TRIMMED";
  }
  return NULL;
}

int jb_log_bounds(uint64_t *first_out, uint64_t *next_out, jb_board *b) {
  if (b == NULL) return jb__err(JB_EINVAL, "log bounds: board handle is NULL");
  uint64_t first, next;
  int rc = jb__store_log_bounds(b->store, &first, &next);
  if (rc != JB_OK) return rc;
  if (first_out) *first_out = first;
  if (next_out) *next_out = next;
  return JB_OK;
}

static int read_args(const char *what, jb_event *events, size_t *n_out,
                     jb_board *b, uint64_t from, size_t max) {
  if (n_out) *n_out = 0;
  if (events == NULL || n_out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "%s: NULL events, n_out or board", what);
  if (max == 0)
    return jb__err(JB_EINVAL, "%s: max is 0 (room for no event)", what);
  if (from == 0)
    return jb__err(JB_EINVAL, "%s: sequence 0 is not an event (the log "
                   "starts at 1)", what);
  return JB_OK;
}

int jb_log_read(jb_event *events, size_t *n_out, uint64_t *first_out,
                jb_board *b, uint64_t from, size_t max) {
  int rc = read_args("log read", events, n_out, b, from, max);
  if (rc != JB_OK) return rc;
  uint64_t first = 0;
  rc = jb__store_log_read(b->store, from, events, max, n_out, &first);
  if (first_out && (rc == JB_OK || rc == JB_ETRIMMED)) *first_out = first;
  return rc;
}

int jb_log_progress(double *percent_out, char *message_out, jb_board *b,
                    uint64_t seq) {
  if (percent_out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "log progress: %s is NULL",
                   b == NULL ? "the board" : "percent_out");
  *percent_out = 0.0;
  char msg[JB_PROGRESS_MESSAGE_MAX + 1];
  unsigned permille = 0;
  int rc = jb__store_log_progress(b->store, seq, &permille, msg);
  if (rc != JB_OK) return rc;
  *percent_out = permille / 10.0;
  if (message_out) memcpy(message_out, msg, strlen(msg) + 1);
  return JB_OK;
}

/* ----------------------------------------------------------------- wait */

typedef struct {
  jb_store *store;
  uint64_t from;
  jb_event *events;
  size_t max;
  size_t n;
  uint64_t first;
} wait_ctx;

/* One attempt: events at the cursor end the wait, so do errors (trimmed
 * included); nothing yet sleeps until the next commit. */
static int wait_attempt(void *vctx, int64_t *retry_mono_us) {
  wait_ctx *ctx = vctx;
  (void)retry_mono_us; /* only a commit brings an event */
  int rc = jb__store_log_read(ctx->store, ctx->from, ctx->events, ctx->max,
                              &ctx->n, &ctx->first);
  if (rc == JB_OK && ctx->n == 0) return JB__AGAIN;
  return rc;
}

int jb_log_wait(jb_event *events, size_t *n_out, uint64_t *first_out,
                jb_board *b, uint64_t from, size_t max, int64_t timeout_ms) {
  int rc = read_args("log wait", events, n_out, b, from, max);
  if (rc != JB_OK) return rc;
  wait_ctx ctx = {b->store, from, events, max, 0, 0};
  rc = jb__board_wait(b, wait_attempt, &ctx, timeout_ms);
  if (rc == JB_OK) *n_out = ctx.n;
  if (rc == JB_ETIMEDOUT)
    jb__err(JB_ETIMEDOUT, "board %s: no event from sequence %llu on after "
            "%lld ms", b->path, (unsigned long long)from,
            (long long)timeout_ms);
  if (first_out && ctx.first) *first_out = ctx.first;
  return rc;
}

/* --------------------------------------------------------- subscriptions */

/* Events read per transaction: enough to amortise it, and the callbacks
 * run after it ends, so no snapshot is held while they run. */
#define SUB_BATCH 64

struct jb_subscription {
  jb_board *board; /* its own handle: cancelling it stops only this */
  pthread_t thread;
  unsigned fork_gen; /* a child of fork() has no such thread */
  unsigned mask;
  jb_event_cb fn;
  void *payload;
  uint64_t cursor; /* the next sequence to deliver */
  atomic_bool stop;
  int status;      /* what ended the thread, JB_OK if unsubscribed */
  char msg[1024];  /* and its message (errors are per thread) */
  jb_event batch[SUB_BATCH];
};

static void *sub_thread(void *arg) {
  jb_subscription *sub = arg;
  wait_ctx ctx = {sub->board->store, 0, sub->batch, SUB_BATCH, 0, 0};
  while (!atomic_load(&sub->stop)) {
    ctx.from = sub->cursor;
    int rc = jb__board_wait(sub->board, wait_attempt, &ctx, -1);
    if (rc == JB_ETRIMMED) {
      /* Fell behind the log's bounds: say what was lost, go on from the
       * oldest kept event. */
      jb_event e = {.seq = sub->cursor, .type = JB_EVENT_TRIMMED,
                    .time_us = jb__now_us(), .lost = ctx.first - sub->cursor};
      sub->fn(&e, sub->payload);
      sub->cursor = ctx.first;
      continue;
    }
    if (rc == JB_EINTERRUPTED) break; /* jb_unsubscribe */
    if (rc != JB_OK) {
      sub->status = rc;
      snprintf(sub->msg, sizeof sub->msg, "%s", jb_errmsg());
      break;
    }
    for (size_t i = 0; i < ctx.n && !atomic_load(&sub->stop); i++) {
      const jb_event *e = &sub->batch[i];
      sub->cursor = e->seq + 1;
      if (sub->mask & JB_EVENT_BIT(e->type)) sub->fn(e, sub->payload);
    }
  }
  return NULL;
}

int jb_subscribe(jb_subscription **out, jb_board *b, uint64_t from,
                 unsigned mask, jb_event_cb fn, void *payload) {
  if (out == NULL) return jb__err(JB_EINVAL, "subscribe: out is NULL");
  *out = NULL;
  if (b == NULL || fn == NULL)
    return jb__err(JB_EINVAL, "subscribe: NULL board or callback");
  if ((mask & JB_EVENTS_ALL) == 0)
    return jb__err(JB_EINVAL, "subscribe: mask 0x%x names no event type "
                   "(use JB_EVENTS_ALL, JB_EVENTS_POSTED, JB_EVENTS_REMOVAL "
                   "or JB_EVENT_BIT(type))", mask);
  if (from == 0)
    return jb__err(JB_EINVAL, "subscribe: sequence 0 is not an event (the "
                   "log starts at 1; JB_LOG_NOW starts with the next)");
  /* Where to start, checked now: a cursor already trimmed or beyond the
   * end is the caller's mistake to hear of here, not in a callback. */
  uint64_t first, next;
  int rc = jb__store_log_bounds(b->store, &first, &next);
  if (rc != JB_OK) return rc;
  if (from == JB_LOG_NOW) {
    from = next;
  } else {
    size_t n;
    jb_event probe;
    if ((rc = jb__store_log_read(b->store, from, &probe, 0, &n, &first)))
      return rc;
  }
  jb_subscription *sub = calloc(1, sizeof *sub);
  if (sub == NULL) return jb__err(JB_ENOMEM, "out of memory to subscribe");
  jb_board_options o;
  jb__store_options(b->store, &o);
  if ((rc = jb_board_open(&sub->board, b->path, &o)) != JB_OK) {
    free(sub);
    return rc;
  }
  sub->mask = mask;
  sub->fn = fn;
  sub->payload = payload;
  sub->cursor = from;
  sub->fork_gen = jb__fork_generation();
  atomic_init(&sub->stop, false);
  int err = pthread_create(&sub->thread, NULL, sub_thread, sub);
  if (err != 0) {
    jb_board_close(sub->board);
    free(sub);
    return jb__err_errno(err, "subscribe: cannot start its thread");
  }
  *out = sub;
  return JB_OK;
}

int jb_unsubscribe(jb_subscription *sub) {
  if (sub == NULL) return JB_OK;
  if (sub->fork_gen != jb__fork_generation()) {
    /* Inherited across fork(): the thread stayed in the parent. Free what
     * the child holds; closing the inherited handle is allowed. */
    jb_board_close(sub->board);
    free(sub);
    return JB_OK;
  }
  if (pthread_equal(pthread_self(), sub->thread))
    return jb__err(JB_EINVAL, "unsubscribe: called from the subscription's "
                   "own callback (it would wait for itself); call it from "
                   "another thread");
  atomic_store(&sub->stop, true);
  jb_board_interrupt(sub->board); /* wakes the thread if it waits */
  pthread_join(sub->thread, NULL);
  int rc = sub->status;
  if (rc != JB_OK) jb__err(rc, "%s", sub->msg);
  jb_board_close(sub->board);
  free(sub);
  return rc;
}
