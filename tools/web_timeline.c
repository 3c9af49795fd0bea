/*
 * web_timeline.c - a job's life on /job/UUID, oldest first, read from the
 * change log (jb_log_read), with what its events do not carry (the reason
 * of a failed attempt, the outcome and result, the dead letter's cause)
 * taken from the job, its history record and its dead letter; and the
 * holder of a claim (its process, alive or gone) for /job/UUID and
 * /claims.
 *
 * The change log has no index by uuid, so a job's events are found by
 * reading the log. The read is bounded: it starts where the job was
 * posted (found by bisecting the log on time, a few dozen reads), ends
 * where the job left the board, reads the newest events first, and stops
 * after TL_SCAN_MAX events or TL_BUDGET_US, saying how far it looked.
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "json.h"
#include "web.h"
#include "web_html.h"

#define TL_BATCH 2048        /* events a read of the scan */
#define TL_SCAN_MAX 2000000  /* events looked at, at most */
#define TL_BUDGET_US 60000   /* and for at most this long */
#define TL_ROWS_MAX 500      /* the newest events of the job shown */
/* The board's processes stamp events with their own wall clocks, read
 * before their commits: the log is in time order only within this. */
#define TL_SLACK_US 2000000
#define TL_RESULT_MAX 2000   /* bytes of a result shown in the timeline */

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The first sequence in [lo, hi) whose event is at or after `t_us`, hi
 * when none is: the log is in commit order, its times nearly so. */
static uint64_t seek_time(jb_board *b, uint64_t lo, uint64_t hi,
                          int64_t t_us) {
  jb_event ev;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    size_t n = 0;
    if (jb_log_read(&ev, &n, NULL, b, mid, 1) != JB_OK || n == 0)
      return lo; /* trimmed meanwhile: read from the start */
    if (ev.time_us < t_us) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

typedef struct {
  jb_event *v;
  size_t n, cap;
} tl_rows;

static int cmp_seq(const void *a, const void *b) {
  const jb_event *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* What the scan saw. */
typedef struct {
  uint64_t first, next; /* the log's extent */
  uint64_t from, to;    /* looked at [from, to) */
  uint64_t lo;          /* where it meant to start */
  int64_t first_us;     /* the time of the first kept event (0: none) */
  size_t looked;
  bool budget, full, trimmed, oom;
  int64_t took_us;
} tl_scan;

static int scan(tl_rows *r, tl_scan *s, jb_board *b, const char *uuid,
                int64_t posted_us, int64_t left_us) {
  int rc = jb_log_bounds(&s->first, &s->next, b);
  if (rc != JB_OK) return rc;
  uint64_t lo = s->first, hi = s->next;
  jb_event ev;
  size_t got = 0;
  if (lo < hi && jb_log_read(&ev, &got, NULL, b, lo, 1) == JB_OK && got)
    s->first_us = ev.time_us;
  if (posted_us > TL_SLACK_US)
    lo = seek_time(b, lo, hi, posted_us - TL_SLACK_US);
  if (left_us > 0 && left_us < INT64_MAX - TL_SLACK_US)
    hi = seek_time(b, lo, hi, left_us + TL_SLACK_US);
  s->lo = lo;
  s->from = s->to = hi;
  jb_event *batch = malloc(TL_BATCH * sizeof *batch);
  if (batch == NULL) return JB_ENOMEM;
  int64_t t0 = mono_us();
  /* Newest first: when the bound stops the read, what is missing is the
   * oldest part, as when the log is trimmed. */
  while (s->from > lo) {
    if (s->looked >= TL_SCAN_MAX || mono_us() - t0 >= TL_BUDGET_US) {
      s->budget = true;
      break;
    }
    uint64_t from = s->from - lo > TL_BATCH ? s->from - TL_BATCH : lo;
    size_t n = 0;
    uint64_t first = 0;
    rc = jb_log_read(batch, &n, &first, b, from, (size_t)(s->from - from));
    if (rc == JB_ETRIMMED) {
      s->trimmed = true; /* trimmed while read: it starts later now */
      s->first = first;
      rc = JB_OK;
      break;
    }
    if (rc != JB_OK) break;
    for (size_t i = 0; i < n; i++) {
      if (memcmp(batch[i].uuid, uuid, JB_UUID_STRLEN) != 0) continue;
      if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        jb_event *v = realloc(r->v, cap * sizeof *v);
        if (v == NULL) {
          s->oom = true;
          break;
        }
        r->v = v;
        r->cap = cap;
      }
      r->v[r->n++] = batch[i];
    }
    s->looked += n;
    s->from = from;
    if (r->n >= TL_ROWS_MAX || s->oom) {
      s->full = true;
      break;
    }
  }
  s->took_us = mono_us() - t0;
  free(batch);
  return rc;
}

/* One line of JSON of a msgpack map, escaped, cut at TL_RESULT_MAX. */
static void json_line(FILE *f, const void *data, size_t len) {
  json_t *v = data && len ? cli_msgpack_to_json(data, len) : json_object();
  char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  fputs("<code>", f);
  web_esc_n(f, text ? text : "(does not decode)", TL_RESULT_MAX);
  if (text && strlen(text) > TL_RESULT_MAX) fputs("...", f);
  fputs("</code>", f);
  free(text);
  json_decref(v);
}

static bool leaves(jb_event_type t) {
  return t == JB_EVENT_CONSUMED || t == JB_EVENT_TRASHED ||
         t == JB_EVENT_REVOKED || t == JB_EVENT_LOST ||
         t == JB_EVENT_CANCELLED || t == JB_EVENT_DEAD ||
         t == JB_EVENT_DEADLINE;
}

/* What the job's record says of its end: on the row of the event that
 * ended it, or on a row of its own when the log no longer has it. */
static void end_text(FILE *f, const jb_completion *h,
                     const jb_dead_letter *d) {
  if (h) {
    fputs("outcome ", f);
    web_esc(f, jb_end_name(h->end));
    if (h->has_result) {
      fputs(", result ", f);
      json_line(f, h->result, h->result_len);
    }
  }
  if (d) {
    fputs(h ? "; " : "", f);
    fputs("dead letter: ", f);
    web_esc(f, jb_dead_cause_name(d->cause));
  }
  /* A record's reason is its last failed attempt's (on that row) unless
   * it is why the job ended. */
  bool why = h && (h->end == JB_END_DEAD || h->end == JB_END_REVOKED ||
                   h->end == JB_END_LOST);
  const char *reason = d && d->reason ? d->reason : why ? h->reason : NULL;
  if (reason) {
    fputs(", reason ", f);
    web_esc(f, reason);
  }
}

static void row_begin(FILE *f, const char *seq, int64_t us, int64_t now,
                      const char *what, const char *owner) {
  fprintf(f, "<tr><td class=\"n\">%s</td><td>", seq);
  web_time(f, us, now);
  fprintf(f, "</td><td>%s</td><td>", what);
  web_esc(f, owner && *owner ? owner : "-");
  fputs("</td><td>", f);
}

static const char *what_of(const jb_event *e, bool after_dead) {
  switch (e->type) {
  case JB_EVENT_POSTED: return after_dead ? "requeued" : "posted";
  case JB_EVENT_CLAIMED: return "claimed";
  case JB_EVENT_ABANDONED: return "abandoned";
  case JB_EVENT_CONSUMED: return "consumed";
  case JB_EVENT_TRASHED: return "trashed";
  case JB_EVENT_REFRESHED: return "claim renewed";
  case JB_EVENT_EXPIRED: return "claim lapsed";
  case JB_EVENT_EXTENDED: return "extended";
  case JB_EVENT_REVOKED: return "revoked";
  case JB_EVENT_LOST: return "lost";
  case JB_EVENT_CANCELLED: return "cancelled";
  case JB_EVENT_DEAD: return "dead";
  case JB_EVENT_PROGRESS: return "progress";
  case JB_EVENT_SNOOZED: return "snoozed";
  case JB_EVENT_DEADLINE: return "deadline passed";
  default: return "event";
  }
}

void web_timeline(FILE *f, jb_board *b, const char *uuid, const jb_job *j,
                  const jb_completion *h, const jb_dead_letter *d,
                  int64_t now) {
  int64_t posted = j ? jb_job_created(j)
                 : h && h->posted_us ? h->posted_us
                 : d ? d->posted_us : 0;
  int64_t left = 0;
  if (j == NULL) {
    if (h) left = h->completed_us;
    if (d && d->dead_us > left) left = d->dead_us;
  }
  tl_rows r = {0};
  tl_scan s = {0};
  fputs("<h2>Timeline</h2>\n", f);
  int rc = scan(&r, &s, b, uuid, posted, left);
  if (rc != JB_OK) {
    fputs("<p class=\"warn\">The change log could not be read: ", f);
    web_esc(f, jb_errmsg());
    fputs("</p>\n", f);
    free(r.v);
    return;
  }
  if (r.n) qsort(r.v, r.n, sizeof *r.v, cmp_seq); /* v NULL when 0 */
  size_t skip = r.n > TL_ROWS_MAX ? r.n - TL_ROWS_MAX : 0;
  /* The reason of the last failed attempt goes with the last release. */
  const char *reason = j ? jb_job_last_reason(j)
                     : h && h->reason ? h->reason
                     : d ? d->reason : NULL;
  size_t last_fail = SIZE_MAX, last_end = SIZE_MAX;
  bool posted_seen = false;
  for (size_t i = skip; i < r.n; i++) {
    if (r.v[i].type == JB_EVENT_ABANDONED || r.v[i].type == JB_EVENT_EXPIRED)
      last_fail = i;
    if (leaves(r.v[i].type)) last_end = i;
    if (r.v[i].type == JB_EVENT_POSTED) posted_seen = true;
  }
  /* The job's post is stamped with its creation time: a first kept
   * event after it means the log was trimmed past the post. */
  if (!posted_seen && posted && s.first > 1 && s.first_us > posted) {
    fprintf(f, "<p class=\"warn\">The change log no longer holds the job's "
               "early events: its first kept event is seq %" PRIu64 " (",
            s.first);
    web_time(f, s.first_us, now);
    fputs(").</p>\n", f);
  }
  if (s.budget)
    fprintf(f, "<p class=\"warn\">Only the newest %zu events of the change "
               "log were looked at (seq %" PRIu64 " to %" PRIu64 ", %.1f ms):"
               " the job's earlier events are not shown.</p>\n",
            s.looked, s.from, s.to - 1, (double)s.took_us / 1000);
  if (s.full)
    fprintf(f, "<p>The newest %d of the job's events (seq %" PRIu64
               " on).</p>\n", TL_ROWS_MAX, r.v[skip].seq);
  fputs("<table class=\"timeline\"><tr><th>seq</th><th>time</th>"
        "<th>event</th><th>owner</th><th>what</th></tr>\n",
        f);
  if (!posted_seen && posted) {
    row_begin(f, "-", posted, now, "posted", NULL);
    fputs("(from the job's record)</td></tr>\n", f);
  }
  bool after_dead = false;
  for (size_t i = skip; i < r.n; i++) {
    const jb_event *e = &r.v[i];
    char seq[24];
    snprintf(seq, sizeof seq, "%" PRIu64, e->seq);
    row_begin(f, seq, e->time_us, now, what_of(e, after_dead), e->owner);
    after_dead = e->type == JB_EVENT_DEAD || e->type == JB_EVENT_DEADLINE;
    if (e->type == JB_EVENT_PROGRESS) {
      double pct = 0;
      char msg[JB_PROGRESS_MESSAGE_MAX + 1] = "";
      if (jb_log_progress(&pct, msg, b, e->seq) == JB_OK) {
        fprintf(f, "%.1f%% ", pct);
        web_esc(f, msg);
      }
    }
    if (i == last_fail && reason) {
      fputs("reason ", f);
      web_esc(f, reason);
    }
    if (i == last_end && (h || d)) end_text(f, h, d);
    fputs("</td></tr>\n", f);
  }
  /* A claim held in the log but not in the snapshot lapsed: the board
   * counts it unclaimed at once, and the next write records it. */
  jb_event_type lt = r.n ? r.v[r.n - 1].type : JB_EVENT_POSTED;
  if (j && jb_job_state(j) != JB_STATE_CLAIMED &&
      (lt == JB_EVENT_CLAIMED || lt == JB_EVENT_REFRESHED ||
       lt == JB_EVENT_EXTENDED || lt == JB_EVENT_PROGRESS)) {
    row_begin(f, "-", now, now, "claim lapsed", r.v[r.n - 1].owner);
    fputs("its holder process is gone or its lease ran out: claimable "
          "again (the next write records it)</td></tr>\n", f);
  }
  if (last_end == SIZE_MAX && (h || d)) {
    row_begin(f, "-", h ? h->completed_us : d->dead_us, now, "left the board",
              h ? h->owner : d->owner);
    end_text(f, h, d);
    fputs(" (from its record)</td></tr>\n", f);
  }
  fputs("</table>\n", f);
  /* A claim whose holder is gone counts as lapsed (unclaimed) at once,
   * but the snapshot may still name the process. */
  if (j && (jb_job_state(j) == JB_STATE_CLAIMED || jb_job_holder_pid(j))) {
    fputs("<p>The claim's process, as far as the board knows: ", f);
    web_holder(f, b, jb_job_owner(j), jb_job_holder_pid(j),
               jb_job_holder_alive(j), now);
    fputs(".</p>\n", f);
  }
  fprintf(f, "<p class=\"note\">Read %zu change-log events (seq %" PRIu64
             " to %" PRIu64 " of %" PRIu64 " to %" PRIu64 ") in %.1f ms.</p>\n",
          s.looked, s.from, s.to ? s.to - 1 : 0, s.first,
          s.next ? s.next - 1 : 0, (double)s.took_us / 1000);
  free(r.v);
}

typedef struct {
  const char *owner;
  int pid;
  char kind[JB_NAME_MAX + 1];
  int64_t since_us;
} entity_find;

static int entity_visit(const jb_entity *e, void *arg) {
  entity_find *w = arg;
  if (strcmp(e->name, w->owner) != 0) return 0;
  w->pid = e->pid;
  snprintf(w->kind, sizeof w->kind, "%s", e->kind);
  w->since_us = e->registered_us;
  return 1;
}

void web_holder(FILE *f, jb_board *b, const char *owner, int pid, bool alive,
                int64_t now) {
  if (pid) fprintf(f, "%d %s", pid, alive ? "alive" : "gone");
  else fputs("not bound to a process", f);
  if (b == NULL || owner == NULL || *owner == '\0') return;
  /* What else the board knows of the owner's process: the entity it
   * registered under that name, while that process runs. */
  entity_find w = {.owner = owner};
  if (jb_entity_list(b, entity_visit, &w) != JB_OK || w.pid == 0) return;
  fputs("; registered ", f);
  web_esc(f, w.kind);
  fprintf(f, ", pid %d, since ", w.pid);
  web_time(f, w.since_us, now);
}

#endif /* JB_WITH_MICROHTTPD */
