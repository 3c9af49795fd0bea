/*
 * web_perf.c - what keeps `jobboard web`'s pages fast on a big board: the
 * overview reads the indexes (the names' ready counts, the first ready
 * job of each priority) and not every job, and /jobs opens the listing at
 * its cursor and through the filters' indexes (jb_iter_open_opts), so a
 * page costs about the same on the first page and the ten-thousandth.
 * Only built with libmicrohttpd (JB_WITH_MICROHTTPD).
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include "cli_common.h"
#include "web.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

unsigned web_state_tables(const char *state, const char *owner) {
  unsigned t = 0;
  /* A lapsed claim's job reads unclaimed: it is found among the claims. */
  if (state && strcmp(state, "unclaimed") == 0)
    t = JB_ITER_READY | JB_ITER_CLAIMED;
  else if (state && strcmp(state, "claimed") == 0) t = JB_ITER_CLAIMED;
  else if (state && strcmp(state, "delayed") == 0) t = JB_ITER_DELAYED;
  /* Only a claimed job has an owner. */
  if (owner) t = JB_ITER_CLAIMED;
  return t;
}

const char *web_exact_name(const char *name) {
  if (name == NULL) return NULL;
  size_t n = strlen(name);
  return n && name[n - 1] == '*' ? NULL : name;
}

typedef struct {
  int64_t oldest;
  int priority;
} head_walk;

static int head_visit(const jb_job *j, jb_iter *it, void *arg) {
  (void)it;
  head_walk *h = arg;
  int64_t m = jb_job_modified(j);
  if (m > 0 && (h->oldest == 0 || m < h->oldest)) h->oldest = m;
  h->priority = (int)jb_job_priority(j);
  return 1;
}

int web_oldest_ready(jb_board *b, const char *name, int64_t *out) {
  *out = 0;
  head_walk h = {0, -1};
  char after[JB_ITER_CURSOR_MAX];
  jb_iter_options o = {.version = JB_ITER_OPTIONS_VERSION, .name = name,
                       .where = JB_ITER_READY, .batch = 1};
  for (;;) {
    h.priority = -1;
    int rc = cli_walk_jobs_opts(b, &o, head_visit, &h);
    if (rc != JB_OK && rc != 1) return rc;
    if (h.priority <= JB_PRIORITY_VERY_LOW) break;
    /* The next priority's first job: after the last position the one just
     * found could have. */
    snprintf(after, sizeof after, "%d-%" PRId64, h.priority, INT64_MAX);
    o.after = after;
  }
  *out = h.oldest;
  return JB_OK;
}

#endif /* JB_WITH_MICROHTTPD */
