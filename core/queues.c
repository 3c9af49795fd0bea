/*
 * queues.c - names as queues: pause and resume, the names seen
 * (store/names.h has the tables).
 */
#include "internal.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

int jb_name_matches(const char *const *names, size_t n, const char *name) {
  if ((n && names == NULL) || name == NULL) return 0;
  for (size_t i = 0; i < n; i++)
    if (names[i] == NULL) return 0;
  return jb__name_chosen(names, n, name, strlen(name));
}

/* A name argument of pause, resume and cap (NULL allowed: the board). */
static int name_arg(const char *name, const char *verb, size_t *len) {
  *len = 0;
  if (name) {
    size_t n = strnlen(name, JB_NAME_MAX + 1);
    *len = n;
    if (n == 0)
      return jb__err(JB_EINVAL, "a name to %s is not empty", verb);
    if (n > JB_NAME_MAX)
      return jb__err(JB_EINVAL, "name: longer than %d bytes", JB_NAME_MAX);
    if (!jb__utf8_valid(name, n))
      return jb__err(JB_EINVAL, "name: not valid UTF-8");
    if (jb__name_is_prefix(name, n))
      return jb__err(JB_EINVAL, "name '%s': a %s is by exact name, not by "
                     "prefix", name, verb);
  }
  return JB_OK;
}

static int pause_set(jb_board *b, const char *name, bool pause) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  size_t len;
  int rc = name_arg(name, pause ? "pause" : "resume", &len);
  if (rc != JB_OK) return rc;
  return jb__store_queue_set(b->store, name, len,
                             pause ? JB_STORE_Q_PAUSED : 0,
                             pause ? 0 : JB_STORE_Q_PAUSED, jb__now_us(),
                             NULL);
}

int jb_pause(jb_board *b, const char *name) { return pause_set(b, name, true); }

int jb_set_cap(jb_board *b, const char *name, uint32_t max_claims) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (name == NULL)
    return jb__err(JB_EINVAL, "jb_set_cap: name is NULL (a cap is a name's)");
  size_t len = strnlen(name, JB_NAME_MAX + 1);
  if (len <= JB_NAME_MAX && jb__name_is_prefix(name, len)) {
    /* "prefix*": each name under it, on its own. */
    if (!jb__utf8_valid(name, len))
      return jb__err(JB_EINVAL, "name: not valid UTF-8");
    return jb__store_queue_cap_each(b->store, name, len - 1, max_claims,
                                    jb__now_us());
  }
  int rc = name_arg(name, "cap", &len);
  if (rc != JB_OK) return rc;
  return jb__store_queue_cap(b->store, name, len, max_claims, jb__now_us());
}

int jb_set_rate(jb_board *b, const char *name, uint32_t count,
                uint64_t period_ms) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (name == NULL)
    return jb__err(JB_EINVAL, "jb_set_rate: name is NULL (a rate limit is a "
                   "name's)");
  size_t len = strnlen(name, JB_NAME_MAX + 1);
  bool each = len <= JB_NAME_MAX && jb__name_is_prefix(name, len);
  int rc = JB_OK;
  if (each && !jb__utf8_valid(name, len))
    rc = jb__err(JB_EINVAL, "name: not valid UTF-8");
  else if (!each)
    rc = name_arg(name, "rate limit", &len);
  if (rc != JB_OK) return rc;
  if (count > 0 && (period_ms == 0 || period_ms > JB_RATE_PERIOD_MAX_MS))
    return jb__err(JB_EINVAL, "rate limit: a period of %llu ms is not a "
                   "period (expected 1..%llu ms)",
                   (unsigned long long)period_ms,
                   (unsigned long long)JB_RATE_PERIOD_MAX_MS);
  if (count > 0 && period_ms * 1000 < count)
    return jb__err(JB_EINVAL, "rate limit: %u claims per %llu ms is more "
                   "than one a microsecond", count,
                   (unsigned long long)period_ms);
  if (count == 0) period_ms = 0;
  /* "prefix*": each name under it, on its own. */
  if (each)
    return jb__store_queue_rate_each(b->store, name, len - 1, count,
                                     period_ms, jb__now_us());
  return jb__store_queue_rate(b->store, name, len, count, period_ms,
                              jb__now_us());
}

int jb_resume(jb_board *b, const char *name) {
  return pause_set(b, name, false);
}

typedef struct {
  int (*visit)(const jb_queue_info *q, void *arg);
  void *arg;
  char *buf;
} fe_ctx;

static int fe_visit(void *arg, const char *name, size_t len,
                    const jb_store_queue *sq) {
  fe_ctx *c = arg;
  /* The name is copied out, NUL-terminated (names are at most
   * JB_NAME_MAX bytes). */
  memcpy(c->buf, name, len);
  c->buf[len] = '\0';
  jb_queue_info q = {.name = c->buf, .paused = sq->paused,
                     .changed_us = sq->changed_us, .ready = sq->ready,
                     .cap = sq->cap, .held = sq->held,
                     .cap_each = sq->cap_each, .rate = sq->rate,
                     .period_ms = sq->period_ms,
                     .next_token_us = sq->next_token_us,
                     .rate_each = sq->rate_each};
  return c->visit(&q, c->arg);
}

/* A walk of the prefixes of caps or of rate limits: one visit is set. */
typedef struct {
  int (*cap_visit)(const char *prefix, uint32_t max_claims, void *arg);
  int (*rate_visit)(const char *prefix, uint32_t count, uint64_t period_ms,
                    void *arg);
  void *arg;
  char *buf;
} cp_ctx;

static int cp_visit(void *arg, const char *prefix, size_t len,
                    uint32_t count, uint64_t period_ms) {
  cp_ctx *c = arg;
  if (len > JB_NAME_MAX) len = JB_NAME_MAX; /* check reports such a record */
  memcpy(c->buf, prefix, len);
  c->buf[len] = '\0';
  return c->cap_visit ? c->cap_visit(c->buf, count, c->arg)
                      : c->rate_visit(c->buf, count, period_ms, c->arg);
}

static int each_prefixes(jb_board *b, const char *fn, jb_each_kind kind,
                         cp_ctx *c) {
  if (b == NULL || (c->cap_visit == NULL && c->rate_visit == NULL))
    return jb__err(JB_EINVAL, "%s: %s is NULL", fn,
                   b == NULL ? "the board handle" : "visit");
  if ((c->buf = malloc(JB_NAME_MAX + 1)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory listing prefixes");
  int rc = jb__store_each_prefixes(b->store, kind, cp_visit, c);
  free(c->buf);
  return rc;
}

int jb_cap_prefixes(jb_board *b,
                    int (*visit)(const char *prefix, uint32_t max_claims,
                                 void *arg),
                    void *arg) {
  cp_ctx c = {.cap_visit = visit, .arg = arg};
  return each_prefixes(b, "jb_cap_prefixes", JB_EACH_CAP, &c);
}

int jb_rate_prefixes(jb_board *b,
                     int (*visit)(const char *prefix, uint32_t count,
                                  uint64_t period_ms, void *arg),
                     void *arg) {
  cp_ctx c = {.rate_visit = visit, .arg = arg};
  return each_prefixes(b, "jb_rate_prefixes", JB_EACH_RATE, &c);
}

int jb_queues_foreach(jb_board *b,
                      int (*visit)(const jb_queue_info *q, void *arg),
                      void *arg, int *board_paused) {
  if (board_paused) *board_paused = 0;
  if (b == NULL || visit == NULL)
    return jb__err(JB_EINVAL, "jb_queues_foreach: %s is NULL",
                   b == NULL ? "the board handle" : "visit");
  char *buf = malloc(JB_NAME_MAX + 1);
  if (buf == NULL) return jb__err(JB_ENOMEM, "out of memory listing names");
  fe_ctx c = {visit, arg, buf};
  bool paused = false;
  int rc = jb__store_queue_list(b->store, fe_visit, &c, &paused);
  free(buf);
  if (board_paused) *board_paused = paused;
  return rc;
}
