/*
 * schedule.c - periodic jobs (jobboard.h, "Periodic jobs"): argument
 * checks, the record a schedule is stored as, and the encoding of each
 * run's post (core/board.c's, through jb__post_prepare) for the tick,
 * which is store/schedule.c's.
 */
#include "internal.h"

#include "codec/cron.h"
#include "codec/mpscan.h"
#include "codec/posting.h"
#include "codec/tz.h"
#include "store/store.h"
#include "sync_hook.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The details key that carries a run's time. */
static const char RUN_KEY[] = "scheduled_at";
#define RUN_KEY_LEN (sizeof RUN_KEY - 1)

const char *jb_catchup_name(jb_catchup c) {
  switch (c) {
  case JB_CATCHUP_SKIP: return "skip";
  case JB_CATCHUP_ALL: return "all";
  }
  return NULL;
}

const char *jb_overlap_name(jb_overlap o) {
  switch (o) {
  case JB_OVERLAP_QUEUE: return "queue";
  case JB_OVERLAP_SKIP: return "skip";
  }
  return NULL;
}

/* ------------------------------------------------- details and run time */

/* The header of the msgpack map d[0..len): entries and header length.
 * The map was checked (jb__details_check or jb__sched_decode). */
static void map_header(const uint8_t *d, uint32_t *n, size_t *hdr) {
  if (d[0] >= 0x80 && d[0] <= 0x8f) {
    *n = d[0] & 0x0f;
    *hdr = 1;
  } else if (d[0] == 0xde) {
    *n = (uint32_t)d[1] << 8 | d[2];
    *hdr = 3;
  } else {
    *n = (uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 8 |
         d[4];
    *hdr = 5;
  }
}

/* Does the checked map d[0..len) have the key RUN_KEY? */
static bool has_run_key(const uint8_t *d, size_t len) {
  if (d == NULL || len == 0) return false;
  uint32_t n;
  size_t i;
  map_header(d, &n, &i);
  for (uint32_t e = 0; e < 2 * n && i < len; e++) {
    size_t end;
    if (jb__mp_scan(d + i, len - i, &end, JB_MP_MAX_DEPTH) != JB_MP_OK)
      return false;
    if (e % 2 == 0) {
      uint8_t b = d[i];
      size_t off = 0, slen = 0;
      if (b >= 0xa0 && b <= 0xbf) off = 1, slen = b & 0x1f;
      else if (b == 0xd9 && end >= 2) off = 2, slen = d[i + 1];
      if (off && slen == RUN_KEY_LEN && off + slen == end &&
          memcmp(d + i + off, RUN_KEY, RUN_KEY_LEN) == 0)
        return true;
    }
    i += end;
  }
  return false;
}

/* The checked map d[0..len) (NULL: empty) with RUN_KEY: run_us added, into
 * `out` (reset first). The value is always an int 64 (0xd3), so every run
 * of a schedule has a posting of one size. */
static int with_run(jb_buf *out, const uint8_t *d, size_t len,
                    int64_t run_us) {
  uint32_t n = 0;
  size_t hdr = 0;
  if (d && len) map_header(d, &n, &hdr);
  out->len = 0;
  uint8_t h[5];
  size_t hl;
  uint32_t m = n + 1;
  if (m <= 15) {
    h[0] = (uint8_t)(0x80 | m);
    hl = 1;
  } else if (m <= 0xffff) {
    h[0] = 0xde, h[1] = (uint8_t)(m >> 8), h[2] = (uint8_t)m;
    hl = 3;
  } else {
    h[0] = 0xdf;
    for (int k = 0; k < 4; k++) h[1 + k] = (uint8_t)(m >> (24 - 8 * k));
    hl = 5;
  }
  uint8_t tail[1 + RUN_KEY_LEN + 9];
  tail[0] = (uint8_t)(0xa0 | RUN_KEY_LEN);
  memcpy(tail + 1, RUN_KEY, RUN_KEY_LEN);
  tail[1 + RUN_KEY_LEN] = 0xd3;
  for (int k = 0; k < 8; k++)
    tail[2 + RUN_KEY_LEN + k] = (uint8_t)((uint64_t)run_us >> (56 - 8 * k));
  if (jb__buf_append(out, h, hl) ||
      (len > hdr && jb__buf_append(out, d + hdr, len - hdr)) ||
      jb__buf_append(out, tail, sizeof tail))
    return jb__err(JB_ENOMEM, "out of memory for a run's details");
  return JB_OK;
}

/* ------------------------------------------------------------ the post */

typedef struct {
  jb_board *b;
  jb_buf details;
} prep_arg;

/* A run's post (jb_sched_prep_fn): the template, its details with the
 * run time, the unique key of the run. */
static int prep_run(void *varg, const jb_sched_view *v, int64_t run_us,
                    int64_t now_us, jb_buf *buf, jb_store_post *sp) {
  prep_arg *a = varg;
  const jb_schedrec *r = &v->rec;
  char name[JB_NAME_MAX + 1], book[JB_NAME_MAX + 1], bu[JB_UUID_STRLEN];
  char key[JB_UNIQUE_MAX + 1];
  memcpy(name, v->job_name, r->job_name_len);
  name[r->job_name_len] = '\0';
  memcpy(book, v->book_name, r->book_name_len);
  book[r->book_name_len] = '\0';
  jb__uuid_format(bu, r->book_uuid);
  snprintf(key, sizeof key, "schedule:%.*s:%" PRId64, (int)v->name_len,
           v->name, run_us);
  int rc = with_run(&a->details, r->details_len ? v->details : NULL,
                    r->details_len, run_us);
  if (rc != JB_OK) return rc;
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.details = a->details.data;
  p.details_len = a->details.len;
  p.priority = (jb_priority)r->priority;
  p.book_name = r->has_book ? book : NULL;
  p.book_uuid = r->has_book ? bu : NULL;
  p.max_attempts = r->max_attempts;
  p.time_limit_ms = r->time_limit_ms;
  p.backoff_ms = r->backoff_ms;
  p.backoff_max_ms = r->backoff_max_ms;
  p.unique_key = key;
  rc = jb__post_prepare(a->b->max_posting, &p, buf, sp, now_us);
  if (rc != JB_OK) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    return jb__err(rc, "schedule %.*s: run %" PRId64 ": %s", (int)v->name_len,
                   v->name, run_us, msg);
  }
  return JB_OK;
}

/* ------------------------------------------------------------------ add */

static int name_check(const char *name, size_t *len) {
  if (name == NULL || name[0] == '\0')
    return jb__err(JB_EINVAL, "schedule name: must not be empty");
  *len = strnlen(name, JB_SCHEDULE_NAME_MAX + 1);
  if (*len > JB_SCHEDULE_NAME_MAX)
    return jb__err(JB_EINVAL, "schedule name: longer than %d bytes",
                   JB_SCHEDULE_NAME_MAX);
  if (!jb__utf8_valid(name, *len))
    return jb__err(JB_EINVAL, "schedule name: not valid UTF-8");
  return JB_OK;
}

/* Check `sc` and build its record (key = the name) into `rec`. */
static int build(jb_board *b, const jb_schedule *sc, int64_t now,
                 jb_buf *rec, size_t *name_len) {
  if (sc == NULL) return jb__err(JB_EINVAL, "schedule is NULL");
  if (sc->version < 1 || sc->version > JB_SCHEDULE_VERSION)
    return jb__err(JB_EINVAL, "schedule version %u is not 1..%u (use "
                   "JB_SCHEDULE_INIT)", sc->version, JB_SCHEDULE_VERSION);
  int rc = name_check(sc->name, name_len);
  if (rc != JB_OK) return rc;
  const char *nm = sc->name;
  int nl = (int)*name_len;
  if ((sc->every_ms != 0) == (sc->cron != NULL))
    return jb__err(JB_EINVAL, "schedule %.*s: give an interval (every_ms) or "
                   "a cron spec, %s", nl, nm, sc->cron ? "not both" :
                   "one of them");
  jb_schedrec r;
  memset(&r, 0, sizeof r);
  r.format = 2;
  const char *tz = sc->version >= 2 ? sc->tz : NULL;
  jb_overlap overlap = sc->version >= 2 ? sc->overlap : JB_OVERLAP_QUEUE;
  const jb_tz *zone = NULL;
  size_t tz_len = tz ? strnlen(tz, JB_TZ_NAME_MAX + 1) : 0;
  if (tz && sc->cron == NULL)
    return jb__err(JB_EINVAL, "schedule %.*s: tz: a time zone is for a "
                   "cron spec (an interval runs by the elapsed time)", nl,
                   nm);
  if (tz) {
    char why[300];
    if ((zone = jb__tz_get(tz, tz_len, why, sizeof why)) == NULL)
      return jb__err(JB_EINVAL, "schedule %.*s: tz: %s", nl, nm, why);
  }
  if (jb_overlap_name(overlap) == NULL)
    return jb__err(JB_EINVAL, "schedule %.*s: overlap: %d is not "
                   "JB_OVERLAP_QUEUE or JB_OVERLAP_SKIP", nl, nm,
                   (int)overlap);
  size_t spec_len = 0;
  jb_cron cron;
  if (sc->cron) {
    spec_len = strnlen(sc->cron, JB_CRON_SPEC_MAX + 1);
    char why[200];
    if (spec_len > JB_CRON_SPEC_MAX)
      return jb__err(JB_EINVAL, "schedule %.*s: cron: longer than %d bytes",
                     nl, nm, JB_CRON_SPEC_MAX);
    if (!jb__cron_parse(&cron, sc->cron, spec_len, why, sizeof why))
      return jb__err(JB_EINVAL, "schedule %.*s: cron '%s': %s", nl, nm,
                     sc->cron, why);
    r.kind = JB_SCHED_CRON;
  } else {
    if (sc->every_ms < JB_SCHEDULE_EVERY_MIN_MS ||
        sc->every_ms > JB_DELAY_MAX_MS)
      return jb__err(JB_EINVAL, "schedule %.*s: every_ms: %" PRId64 " is "
                     "outside %d..%" PRId64, nl, nm, sc->every_ms,
                     JB_SCHEDULE_EVERY_MIN_MS, JB_DELAY_MAX_MS);
    r.kind = JB_SCHED_EVERY;
    r.every_ms = sc->every_ms;
  }
  if (sc->start_us < 0 || sc->start_us > now + JB_DELAY_MAX_MS * 1000)
    return jb__err(JB_EINVAL, "schedule %.*s: start_us: %" PRId64 " is "
                   "negative or more than %" PRId64 " days ahead", nl, nm,
                   sc->start_us, JB_DELAY_MAX_MS / 86400000);
  if (jb_catchup_name(sc->catch_up) == NULL)
    return jb__err(JB_EINVAL, "schedule %.*s: catch_up: %d is not "
                   "JB_CATCHUP_SKIP or JB_CATCHUP_ALL", nl, nm,
                   (int)sc->catch_up);
  const jb_post *t = &sc->job;
  if (t->version >= 2 && (t->not_before_us || t->delay_ms))
    return jb__err(JB_EINVAL, "schedule %.*s: job.%s: a run is posted when "
                   "it is due (no delay)", nl, nm,
                   t->delay_ms ? "delay_ms" : "not_before_us");
  if (t->version >= 2 && t->unique_key)
    return jb__err(JB_EINVAL, "schedule %.*s: job.unique_key: the schedule "
                   "sets it (schedule:NAME:RUN)", nl, nm);
  /* The template as its runs will be posted: jb_job_post's checks, the
   * posting's size with the run time (fixed width) and the longest key. */
  jb_post p = *t;
  char key[JB_UNIQUE_MAX + 1];
  snprintf(key, sizeof key, "schedule:%.*s:%" PRId64, nl, nm, INT64_MIN);
  jb_buf details = {0}, scratch = {0};
  jb_store_post sp;
  memset(&sp, 0, sizeof sp);
  if (t->version >= 2) p.unique_key = key;
  rc = jb__details_check(t->details, t->details_len, JB_DETAILS_MAX_DEPTH,
                         "job.details");
  if (rc == JB_OK && has_run_key(t->details, t->details_len))
    rc = jb__err(JB_EINVAL, "job.details: the key \"%s\" is the schedule's "
                 "(each run's time)", RUN_KEY);
  if (rc == JB_OK) rc = with_run(&details, t->details, t->details_len, 0);
  if (rc == JB_OK) {
    p.details = details.data;
    p.details_len = details.len;
    rc = jb__post_prepare(b->max_posting, &p, &scratch, &sp, now);
  }
  free((void *)sp.x);
  jb__buf_free(&details);
  jb__buf_free(&scratch);
  if (rc != JB_OK) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    return jb__err(rc, "schedule %.*s: job %s", nl, nm, msg);
  }
  size_t jn = strlen(t->name), bn = t->book_name ? strlen(t->book_name) : 0;
  r.catch_up = (uint8_t)sc->catch_up;
  r.overlap = (uint8_t)overlap;
  r.tz_len = (uint32_t)tz_len;
  r.priority = (uint8_t)t->priority;
  r.has_book = t->book_name != NULL;
  if (t->book_name && (rc = jb__uuid_parse(r.book_uuid, t->book_uuid,
                                           "job.book_uuid")) != JB_OK)
    return rc;
  r.spec_len = (uint16_t)spec_len;
  r.job_name_len = (uint16_t)jn;
  r.book_name_len = (uint16_t)bn;
  r.details_len = (uint32_t)t->details_len;
  if (t->version >= 2) {
    r.max_attempts = t->max_attempts;
    r.time_limit_ms = t->time_limit_ms;
    r.backoff_ms = t->backoff_ms;
    r.backoff_max_ms = t->backoff_max_ms;
  }
  r.start_us = sc->start_us ? sc->start_us
               : r.kind == JB_SCHED_EVERY ? now + r.every_ms * 1000
                                          : now;
  r.created_us = now;
  if (r.kind == JB_SCHED_EVERY) {
    r.next_us = r.start_us;
  } else if (!jb__cron_next_tz(&cron, zone, r.start_us - 1, &r.next_us)) {
    r.next_us = INT64_MAX; /* cannot happen: jb__cron_parse looked */
  }
  rec->len = 0;
  if (jb__buf_append(rec, &r, sizeof r) ||
      jb__buf_append(rec, sc->cron, spec_len) ||
      jb__buf_append(rec, t->name, jn) ||
      jb__buf_append(rec, t->book_name, bn) ||
      jb__buf_append(rec, t->details, t->details_len) ||
      jb__buf_append(rec, tz, tz_len) ||
      jb__buf_append(rec, &(uint64_t){0}, sizeof(uint64_t)))
    return jb__err(JB_ENOMEM, "out of memory for a schedule");
  return JB_OK;
}

int jb_schedule_add(jb_board *b, const jb_schedule *sched, unsigned flags) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_SCHEDULE_REPLACE)
    return jb__err(JB_EINVAL, "schedule add: unknown flags 0x%x",
                   flags & ~(unsigned)JB_SCHEDULE_REPLACE);
  jb_buf rec = {0};
  size_t name_len;
  int rc = build(b, sched, jb__now_us(), &rec, &name_len);
  if (rc == JB_OK)
    rc = jb__store_sched_put(b->store, sched->name, name_len, rec.data,
                             rec.len, flags & JB_SCHEDULE_REPLACE);
  jb__buf_free(&rec);
  return rc;
}

int jb_schedule_remove(jb_board *b, const char *name) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  size_t len;
  int rc = name_check(name, &len);
  if (rc != JB_OK) return rc;
  return jb__store_sched_del(b->store, name, len);
}

/* ----------------------------------------------------------------- read */

/* A decoded record as a jb_schedule in `mem` (reset first): the struct,
 * then its strings with NULs; the pointers point into mem. */
static int to_schedule(jb_buf *mem, const jb_sched_view *v) {
  const jb_schedrec *r = &v->rec;
  size_t need = sizeof(jb_schedule) + v->name_len + 1 + r->spec_len + 1 +
                r->job_name_len + 1 + r->book_name_len + 1 + JB_UUID_STRLEN +
                r->details_len + r->tz_len + 1;
  mem->len = 0;
  if (jb__buf_reserve(mem, need))
    return jb__err(JB_ENOMEM, "out of memory for a schedule");
  jb_schedule *s = (jb_schedule *)mem->data;
  *s = (jb_schedule)JB_SCHEDULE_INIT;
  char *p = (char *)mem->data + sizeof *s;
#define PUT(dst, src, n)                                                       \
  do {                                                                         \
    memcpy(p, (src), (n));                                                     \
    p[(n)] = '\0';                                                             \
    (dst) = p;                                                                 \
    p += (n) + 1;                                                              \
  } while (0)
  PUT(s->name, v->name, v->name_len);
  const char *spec;
  PUT(spec, v->spec, r->spec_len);
  PUT(s->job.name, v->job_name, r->job_name_len);
  if (r->tz_len) PUT(s->tz, v->tz, r->tz_len);
  if (r->has_book) {
    PUT(s->job.book_name, v->book_name, r->book_name_len);
    jb__uuid_format(p, r->book_uuid);
    s->job.book_uuid = p;
    p += JB_UUID_STRLEN;
  }
#undef PUT
  if (r->details_len) {
    memcpy(p, v->details, r->details_len);
    s->job.details = p;
    s->job.details_len = r->details_len;
  }
  if (r->kind == JB_SCHED_CRON)
    s->cron = spec;
  else
    s->every_ms = r->every_ms;
  s->start_us = r->start_us;
  s->catch_up = (jb_catchup)r->catch_up;
  s->job.priority = (jb_priority)r->priority;
  s->job.max_attempts = r->max_attempts;
  s->job.time_limit_ms = r->time_limit_ms;
  s->job.backoff_ms = r->backoff_ms;
  s->job.backoff_max_ms = r->backoff_max_ms;
  s->next_us = r->next_us;
  s->last_run_us = r->last_us;
  s->runs = r->runs;
  s->created_us = r->created_us;
  s->overlap = (jb_overlap)r->overlap;
  s->skipped = v->skipped;
  mem->len = need;
  return JB_OK;
}

/* Entry `off` of a jb__store_sched_read / get copy, decoded. */
static int entry(const jb_buf *copy, size_t *off, jb_sched_view *v,
                 char *why, size_t whylen) {
  uint32_t lens[2];
  memcpy(lens, copy->data + *off, sizeof lens);
  const uint8_t *k = copy->data + *off + 8;
  *off += 8 + lens[0] + lens[1] + (8 - (lens[0] + lens[1]) % 8) % 8;
  return jb__sched_decode(v, k, lens[0], k + lens[0], lens[1], why, whylen);
}

int jb_schedule_get(jb_schedule **out, jb_board *b, const char *name) {
  if (out) *out = NULL;
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "schedule get: NULL argument");
  size_t len;
  int rc = name_check(name, &len);
  if (rc != JB_OK) return rc;
  jb_buf copy = {0}, mem = {0};
  if ((rc = jb__store_sched_get(b->store, name, len, &copy)) == JB_OK) {
    jb_sched_view v;
    char why[256];
    size_t off = 0;
    if (entry(&copy, &off, &v, why, sizeof why) != JB_OK)
      rc = jb__err(JB_ECORRUPT, "schedule %s: its record does not decode: "
                   "%s (run 'jobboard check')", name, why);
    else if ((rc = to_schedule(&mem, &v)) == JB_OK)
      *out = (jb_schedule *)mem.data;
  }
  jb__buf_free(&copy);
  if (rc != JB_OK) jb__buf_free(&mem);
  return rc;
}

void jb_schedule_free(jb_schedule *s) { free(s); }

int jb_schedule_foreach(jb_board *b, jb_schedule_cb cb, void *payload) {
  if (b == NULL || cb == NULL)
    return jb__err(JB_EINVAL, "schedule foreach: NULL argument");
  jb_buf copy = {0}, mem = {0};
  size_t n;
  int rc = jb__store_sched_read(b->store, &copy, &n);
  for (size_t i = 0, off = 0; rc == JB_OK && i < n; i++) {
    jb_sched_view v;
    char why[256];
    if (entry(&copy, &off, &v, why, sizeof why) != JB_OK) continue;
    if ((rc = to_schedule(&mem, &v)) == JB_OK)
      rc = cb((const jb_schedule *)mem.data, payload);
  }
  jb__buf_free(&copy);
  jb__buf_free(&mem);
  return rc;
}

/* ----------------------------------------------------------------- tick */

int jb_schedule_tick(size_t *posted, jb_board *b, int64_t now_us) {
  if (posted) *posted = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (now_us < 0)
    return jb__err(JB_EINVAL, "schedule tick: now_us %" PRId64 " is negative",
                   now_us);
  if (now_us == 0) now_us = jb__now_us();
  prep_arg a = {.b = b};
  size_t n = 0;
  /* On a board synced with Redis, the runs go to Redis before anyone
   * claims them: another board ticking the same schedule posts the same
   * runs (the same keys), and only the copy Redis lists may run (the
   * other is cancelled at its publication). Claimed here before that,
   * each board would run its own. That holds while no replicator runs
   * too (it was killed, it restarts): the runs then wait for it, or run
   * on a board whose replicator runs. */
  bool publish = jb__board_replicator_runs(b->path) || jb__board_synced(b);
  int rc = jb__store_sched_tick(b->store, now_us, JB_SCHEDULE_CATCHUP_MAX,
                                prep_run, &a, publish, &n);
  jb__buf_free(&a.details);
  if (posted) *posted = n;
  return rc;
}

int jb_schedule_next_due(int64_t *out, jb_board *b) {
  if (out) *out = 0;
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "schedule next due: NULL argument");
  return jb__store_sched_next_due(b->store, out);
}

static int due_try(void *vctx, int64_t *retry_mono_us) {
  jb_board *b = vctx;
  int64_t next;
  int rc = jb__store_sched_next_due(b->store, &next);
  if (rc != JB_OK) return rc;
  if (next == 0) return JB__AGAIN; /* no schedule: the next commit */
  int64_t now = jb__now_us();
  if (next <= now) return JB_OK;
  /* The wall clock may be stepped meanwhile: the wait looks again at the
   * next commit anyway, and a step back only makes us wake early. */
  int64_t at = jb__mono_us() + (next - now);
  if (at < *retry_mono_us) *retry_mono_us = at;
  return JB__AGAIN;
}

int jb_schedule_wait(jb_board *b, int64_t timeout_ms) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  int rc = jb__board_wait(b, due_try, b, timeout_ms);
  if (rc == JB_ETIMEDOUT)
    jb__err(JB_ETIMEDOUT, "board %s: no schedule due after %" PRId64 " ms",
            b->path, timeout_ms);
  return rc;
}
