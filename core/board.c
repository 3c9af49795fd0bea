/*
 * board.c - the public board API: argument checks, posting encoding and
 * uuids outside the transaction, then one call into store/.
 */
#include "internal.h"
#include "codec/posting.h"
#include "sync_hook.h"
#include "store/store.h"
#include "store/life.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* Largest posting when the options say 0, and the least a board may set. */
#define DEFAULT_MAX_POSTING ((size_t)1 << 20)
#define MIN_MAX_POSTING ((size_t)256)

/* The history bounds of `opts` (version 2) into `b`, defaults for 0. */
static int history_options(jb_board *b, const jb_board_options *opts) {
  b->history_max = JB_HISTORY_MAX_DEFAULT;
  b->history_max_age_us = JB_HISTORY_AGE_DEFAULT_MS * 1000;
  if (opts->version < 2) return JB_OK;
  if (opts->history_max_age_ms < 0 ||
      opts->history_max_age_ms > INT64_MAX / 1000)
    return jb__err(JB_EINVAL, "board options: history_max_age_ms %lld is "
                   "not an age (expected milliseconds > 0, or 0 for the "
                   "default of 7 days)", (long long)opts->history_max_age_ms);
  if (opts->history_max) b->history_max = opts->history_max;
  if (opts->history_max_age_ms)
    b->history_max_age_us = opts->history_max_age_ms * 1000;
  return JB_OK;
}

int jb_board_open(jb_board **out, const char *path,
                  const jb_board_options *opts) {
  jb_board_options defaults = JB_BOARD_OPTIONS_INIT;
  if (out == NULL) return jb__err(JB_EINVAL, "jb_board_open: out is NULL");
  *out = NULL;
  if (opts == NULL) opts = &defaults;
  /* Version 1 ended at max_posting: the history and log bounds are not
   * read from it (they take their defaults). */
  if (opts->version < 1 || opts->version > JB_BOARD_OPTIONS_VERSION)
    return jb__err(JB_EINVAL, "board options: version %u is not %u (use "
                   "JB_BOARD_OPTIONS_INIT)", opts->version, JB_BOARD_OPTIONS_VERSION);
  if (opts->version >= 2 &&
      (opts->log_max_age_ms < 0 || opts->log_max_age_ms > INT64_MAX / 1000))
    return jb__err(JB_EINVAL, "board options: log_max_age_ms %lld is not an "
                   "age (expected 1..%lld ms, or 0 for the default)",
                   (long long)opts->log_max_age_ms,
                   (long long)(INT64_MAX / 1000));
  if (path == NULL || path[0] == '\0')
    return jb__err(JB_EINVAL, "board path: must not be empty");
  if (opts->version >= 3 && (opts->flush_interval_ms < 0 ||
                             opts->flush_interval_ms > 24 * 3600 * 1000))
    return jb__err(JB_EINVAL, "board options: flush_interval_ms %lld is out "
                   "of range (1 ms to one day, or 0 for the board's)",
                   (long long)opts->flush_interval_ms);
  if ((unsigned)opts->durability > JB_DURABILITY_INTERVAL)
    return jb__err(JB_EINVAL, "board options: unknown durability %d",
                   (int)opts->durability);
  const unsigned known = JB_OPEN_CREATE | JB_OPEN_READONLY;
  if (opts->flags & ~known)
    return jb__err(JB_EINVAL, "board options: unknown flags 0x%x",
                   opts->flags & ~known);
  if ((opts->flags & JB_OPEN_CREATE) && (opts->flags & JB_OPEN_READONLY))
    return jb__err(JB_EINVAL, "board options: JB_OPEN_CREATE and "
                   "JB_OPEN_READONLY exclude each other");
  if (opts->max_posting && opts->max_posting < MIN_MAX_POSTING)
    return jb__err(JB_EINVAL, "board options: max_posting %zu is below the "
                   "smallest posting (%zu bytes)", opts->max_posting,
                   MIN_MAX_POSTING);
  jb_board *b = calloc(1, sizeof *b);
  if (b == NULL || (b->path = strdup(path)) == NULL) {
    free(b);
    return jb__err(JB_ENOMEM, "out of memory opening board %s", path);
  }
  int rc;
  b->max_posting = opts->max_posting ? opts->max_posting : DEFAULT_MAX_POSTING;
  if ((rc = history_options(b, opts)) != JB_OK) {
    free(b->path);
    free(b);
    return rc;
  }
  rc = jb__store_open(&b->store, path, opts);
  if (rc != JB_OK) {
    free(b->path);
    free(b);
    return rc;
  }
  b->readonly = jb__store_readonly(b->store);
  if (b->readonly == 0 && (opts->flags & JB_OPEN_READONLY))
    b->readonly = JB_READONLY_ASKED;
  *out = b;
  return JB_OK;
}

int jb_board_readonly(const jb_board *b) { return b ? b->readonly : 0; }

void jb_board_close(jb_board *b) {
  if (b == NULL) return;
  jb__store_close(b->store);
  free(b->path);
  free(b);
}

const char *jb_board_path(const jb_board *b) { return b->path; }

int jb_board_count(size_t *out, jb_board *b, unsigned flags) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_board_count: NULL argument");
  if (flags & ~(unsigned)JB_ONLY_UNCLAIMED)
    return jb__err(JB_EINVAL, "count: unknown flags 0x%x", flags);
  return jb__store_count(b->store, out, flags);
}

int jb_stats_read(jb_stats *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_stats_read: NULL argument");
  if (out->version != JB_STATS_VERSION)
    return jb__err(JB_EINVAL, "jb_stats_read: unknown jb_stats version %u",
                   out->version);
  if (out->flags & ~(JB_STATS_BY_NAME | JB_STATS_NO_WALK))
    return jb__err(JB_EINVAL, "jb_stats_read: unknown flags 0x%x",
                   out->flags);
  if ((out->flags & JB_STATS_NO_WALK) && (out->flags & JB_STATS_BY_NAME))
    return jb__err(JB_EINVAL, "jb_stats_read: JB_STATS_NO_WALK does not go "
                   "with JB_STATS_BY_NAME (names need every job read)");
  out->names = NULL;
  out->n_names = 0;
  return jb__store_stats(b->store, out);
}

void jb_stats_clear(jb_stats *st) {
  if (st == NULL) return;
  for (size_t i = 0; i < st->n_names; i++) free(st->names[i].name);
  free(st->names);
  st->names = NULL;
  st->n_names = 0;
}

/* ------------------------------------------------------------------ post */

/* Validate one post and encode its posting prefix into `buf` (appended at
 * buf->len). `idx` names the post in messages of a batch (-1: single). */
static const char *where_of(long idx, char buf[40]) {
  if (idx < 0) return "";
  snprintf(buf, 40, "post %ld: ", idx);
  return buf;
}

/* A post's life options (version 2): its due time and, when it has any
 * other option, a jobx record for the store (sp->x, freed by the
 * caller). `where` prefixes messages. */
/* The size of a version 1 jb_post (its fields up to book_uuid). */
#define JB_POST_V1_SIZE offsetof(jb_post, not_before_us)
/* The size of a version 2 jb_post (its fields up to unique_key). */
#define JB_POST_V2_SIZE offsetof(jb_post, max_snoozes)

static int life_options(const jb_post *p, const char *where,
                        jb_store_post *sp, int64_t now_us) {
  sp->due_us = 0;
  sp->x = NULL;
  if (p->not_before_us < 0)
    return jb__err(JB_EINVAL, "%snot_before_us: %" PRId64 " is negative",
                   where, p->not_before_us);
  if (p->delay_ms < 0 || p->delay_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "%sdelay_ms: %" PRId64 " is outside 0..%" PRId64,
                   where, p->delay_ms, JB_DELAY_MAX_MS);
  if (p->not_before_us && p->delay_ms)
    return jb__err(JB_EINVAL, "%sgive a delay or a not-before time, not both",
                   where);
  if (p->not_before_us > now_us + JB_DELAY_MAX_MS * 1000)
    return jb__err(JB_EINVAL, "%snot_before_us: more than %" PRId64 " days "
                   "ahead", where, JB_DELAY_MAX_MS / 86400000);
  sp->due_us = p->delay_ms ? now_us + p->delay_ms * 1000 : p->not_before_us;
  if (p->time_limit_ms < 0 || p->time_limit_ms > JB_LEASE_MAX_MS)
    return jb__err(JB_EINVAL, "%stime_limit_ms: %" PRId64 " is outside 0..%"
                   PRId64, where, p->time_limit_ms, JB_LEASE_MAX_MS);
  if (p->backoff_ms < 0 || p->backoff_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "%sbackoff_ms: %" PRId64 " is outside 0..%"
                   PRId64, where, p->backoff_ms, JB_DELAY_MAX_MS);
  if (p->backoff_max_ms < 0 || p->backoff_max_ms > JB_DELAY_MAX_MS)
    return jb__err(JB_EINVAL, "%sbackoff_max_ms: %" PRId64 " is outside 0..%"
                   PRId64, where, p->backoff_max_ms, JB_DELAY_MAX_MS);
  if (p->backoff_ms && p->backoff_max_ms && p->backoff_max_ms < p->backoff_ms)
    return jb__err(JB_EINVAL, "%sbackoff_max_ms: %" PRId64 " is below "
                   "backoff_ms (%" PRId64 ")", where, p->backoff_max_ms,
                   p->backoff_ms);
  size_t ulen = 0;
  if (p->unique_key) {
    ulen = strnlen(p->unique_key, JB_UNIQUE_MAX + 1);
    if (ulen == 0 || ulen > JB_UNIQUE_MAX)
      return jb__err(JB_EINVAL, "%sunique key: must be 1..%d bytes", where,
                     JB_UNIQUE_MAX);
    if (!jb__utf8_valid(p->unique_key, ulen))
      return jb__err(JB_EINVAL, "%sunique key: not valid UTF-8", where);
  }
  uint32_t max_snoozes = 0;
  int64_t expires_ms = 0;
  unsigned flags = 0;
  if (p->version >= 3) {
    max_snoozes = p->max_snoozes;
    expires_ms = p->expires_ms;
    flags = p->flags;
    if (flags & ~(unsigned)JB_POST_EXPIRES_DEAD)
      return jb__err(JB_EINVAL, "%sflags: unknown flags 0x%x", where,
                     flags & ~(unsigned)JB_POST_EXPIRES_DEAD);
    if (expires_ms < 0 || expires_ms > JB_DELAY_MAX_MS)
      return jb__err(JB_EINVAL, "%sexpires_ms: %" PRId64 " is outside 0..%"
                     PRId64, where, expires_ms, JB_DELAY_MAX_MS);
    if ((flags & JB_POST_EXPIRES_DEAD) && !expires_ms)
      return jb__err(JB_EINVAL, "%sflags: JB_POST_EXPIRES_DEAD without "
                     "expires_ms (a deadline to start)", where);
  }
  if (!ulen && !p->time_limit_ms && !p->max_attempts && !p->backoff_ms &&
      !p->backoff_max_ms && !max_snoozes && !expires_ms)
    return JB_OK; /* a delay alone needs no record */
  jb_jobx *x = calloc(1, sizeof *x);
  if (x == NULL) return jb__err(JB_ENOMEM, "out of memory for a post");
  x->rec.format = 1;
  x->rec.unique_len = (uint16_t)ulen;
  memcpy(x->unique, p->unique_key ? p->unique_key : "", ulen);
  x->rec.max_attempts = p->max_attempts;
  x->rec.time_limit_ms = p->time_limit_ms;
  x->rec.backoff_ms = p->backoff_ms;
  x->rec.backoff_max_ms = p->backoff_max_ms;
  x->rec.not_before_us = sp->due_us;
  x->snz.max_snoozes = max_snoozes;
  x->snz.deadline_us = expires_ms ? now_us + expires_ms * 1000 : 0;
  x->snz.flags = (flags & JB_POST_EXPIRES_DEAD) ? JB_JOBX_EXPIRES_DEAD : 0;
  sp->x = x;
  return JB_OK;
}

static int prepare(size_t max, const jb_post *p, long idx, jb_buf *buf,
                   jb_store_post *sp, int64_t now_us) {
  /* The batch index for messages, made only when one is needed: this
   * runs for every job of a batch. */
  char wbuf[40];
#define where where_of(idx, wbuf)
  if (p == NULL) return jb__err(JB_EINVAL, "%spost is NULL", where);
  if (p->version < 1 || p->version > JB_POST_VERSION)
    return jb__err(JB_EINVAL, "%spost version %u is not 1..%u (use "
                   "JB_POST_INIT)", where, p->version, JB_POST_VERSION);
  if (p->name == NULL || p->name[0] == '\0')
    return jb__err(JB_EINVAL, "%sname: must not be empty", where);
  size_t name_len = strnlen(p->name, JB_NAME_MAX + 1);
  if (name_len > JB_NAME_MAX)
    return jb__err(JB_EINVAL, "%sname: longer than %d bytes", where, JB_NAME_MAX);
  if (!jb__utf8_valid(p->name, name_len))
    return jb__err(JB_EINVAL, "%sname: not valid UTF-8", where);
  if (jb_priority_name(p->priority) == NULL)
    return jb__err(JB_EINVAL, "%spriority: %d is not a priority (expected "
                   "JB_PRIORITY_VERY_LOW..JB_PRIORITY_VERY_HIGH)", where,
                   (int)p->priority);
  char field[64];
  int rc = jb__details_check(p->details, p->details_len,
                             JB_DETAILS_MAX_DEPTH, "details");
  if (rc != JB_OK && idx >= 0) { /* again, for the message */
    snprintf(field, sizeof field, "%sdetails", where);
    rc = jb__details_check(p->details, p->details_len, JB_DETAILS_MAX_DEPTH,
                           field);
  }
  if (rc != JB_OK) return rc;
  if ((p->book_name == NULL) != (p->book_uuid == NULL))
    return jb__err(JB_EINVAL, "%sbook: give both a book name and a book uuid, "
                   "or neither", where);
  char book_uuid[JB_UUID_STRLEN];
  if (p->book_name) {
    size_t bl = strnlen(p->book_name, JB_NAME_MAX + 1);
    if (bl == 0 || bl > JB_NAME_MAX || !jb__utf8_valid(p->book_name, bl))
      return jb__err(JB_EINVAL, "%sbook name: must be 1..%d bytes of UTF-8",
                     where, JB_NAME_MAX);
    uint8_t raw[16];
    snprintf(field, sizeof field, "%sbook uuid", where);
    if ((rc = jb__uuid_parse(raw, p->book_uuid, field)) != JB_OK) return rc;
    jb__uuid_format(book_uuid, raw); /* stored lowercase, as taskflow does */
  }
  if ((rc = jb__uuid_generate_job(sp->uuid)) != JB_OK) return rc;
  char text[JB_UUID_STRLEN];
  jb__uuid_format(text, sp->uuid);
  jb_posting_fields f = {.uuid = text, .name = p->name, .name_len = name_len,
                         .priority = p->priority, .created_us = now_us,
                         .details = p->details, .details_len = p->details_len,
                         .book_name = p->book_name,
                         .book_uuid = p->book_name ? book_uuid : NULL};
  size_t start = buf->len;
  if ((rc = jb__posting_prefix(buf, &f)) != JB_OK) return rc;
  size_t size = buf->len - start + JB_SEQ_MAXLEN;
  if (size > max) {
    buf->len = start;
    return jb__err(JB_EINVAL, "%sposting of %zu bytes is larger than the "
                   "board's limit of %zu bytes", where, size, max);
  }
  if (p->version >= 2 && (rc = life_options(p, where, sp, now_us))) {
    buf->len = start;
    return rc;
  }
  sp->priority = p->priority;
  sp->prefix_len = buf->len - start;
  sp->prefix = (const uint8_t *)(uintptr_t)start; /* an offset until done */
  return JB_OK;
}
#undef where

int jb__post_prepare(size_t max_posting, const jb_post *p, jb_buf *buf,
                     jb_store_post *sp, int64_t now_us) {
  return prepare(max_posting, p, -1, buf, sp, now_us);
}

/* Order of posts by unique key (bytes, then length). */
static int unique_cmp(const void *a, const void *b) {
  const jb_jobx *x = (*(const jb_store_post *const *)a)->x;
  const jb_jobx *y = (*(const jb_store_post *const *)b)->x;
  size_t xl = x->rec.unique_len, yl = y->rec.unique_len;
  int c = memcmp(x->unique, y->unique, xl < yl ? xl : yl);
  return c ? c : (xl > yl) - (xl < yl);
}

/* Two posts of one batch with one unique key are refused before anything
 * is written: the store would refuse the second (JB_EEXISTS) naming the
 * first, a job that is never posted. */
static int unique_twice(const jb_store_post *sp, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (sp[i].x && sp[i].x->rec.unique_len) k++;
  if (k < 2) return JB_OK;
  const jb_store_post **v = malloc(k * sizeof *v);
  if (v == NULL) return jb__err(JB_ENOMEM, "out of memory for %zu posts", n);
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (sp[i].x && sp[i].x->rec.unique_len) v[k++] = &sp[i];
  qsort(v, k, sizeof *v, unique_cmp);
  int rc = JB_OK;
  for (size_t j = 1; j < k && rc == JB_OK; j++) {
    if (unique_cmp(&v[j - 1], &v[j]) != 0) continue;
    size_t a = (size_t)(v[j - 1] - sp), c = (size_t)(v[j] - sp);
    if (a > c) {
      size_t t = a;
      a = c;
      c = t;
    }
    rc = jb__err(JB_EINVAL, "post %zu: unique key \"%.*s\" is post %zu's "
                 "too (a batch holds a key once)", c,
                 (int)(v[j]->x->rec.unique_len > 200
                           ? 200
                           : v[j]->x->rec.unique_len),
                 v[j]->x->unique, a);
  }
  free(v);
  return rc;
}

/* How long a unique key reserved in Redis before the post waits for the
 * job's publication (after its due time, for a delayed job): the
 * replicator publishes a due job within moments. A reservation that runs
 * out first only lets another host take the key, and then the publication
 * finds it held and the job goes to the dead letters (nothing is lost);
 * one whose job completes here before it was published (no replicator
 * running) blocks the key elsewhere until it runs out: short, then. */
#define RESERVE_HOLD_MS (INT64_C(300) * 1000)

/* Post p's unique key and uuid as text; false when it has no key. */
static bool unique_text(const jb_store_post *p, char key[JB_UNIQUE_MAX + 1],
                        char t[JB_UUID_STRLEN]) {
  if (p->x == NULL || p->x->rec.unique_len == 0) return false;
  memcpy(key, p->x->unique, p->x->rec.unique_len);
  key[p->x->rec.unique_len] = '\0';
  jb__uuid_format(t, p->uuid);
  return true;
}

/* The hold of post p's reservation once it committed. */
static int64_t reserve_hold(const jb_store_post *p, int64_t now) {
  int64_t hold = RESERVE_HOLD_MS;
  if (p->due_us > now) hold += (p->due_us - now) / 1000;
  return hold;
}

/* Confirm the pending reservations of posts sp[0..n), which committed
 * (best effort: see jb_remote_ops.confirm). */
static void confirm_remote(jb_board *b, const jb_store_post *sp, size_t n,
                           int64_t now) {
  if (b->remote_ops == NULL || b->remote_ops->confirm == NULL) return;
  char key[JB_UNIQUE_MAX + 1], t[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++)
    if (unique_text(&sp[i], key, t))
      b->remote_ops->confirm(b->remote_ctx, key, t, reserve_hold(&sp[i], now));
}

/* Give back the reservations of posts sp[0..n) (best effort). */
static void unreserve_remote(jb_board *b, const jb_store_post *sp, size_t n) {
  if (b->remote_ops == NULL || b->remote_ops->unreserve == NULL) return;
  char key[JB_UNIQUE_MAX + 1], t[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++)
    if (unique_text(&sp[i], key, t))
      b->remote_ops->unreserve(b->remote_ctx, key, t);
}

/*
 * The unique keys of posts sp[0..n) on a handle attached to Redis: each is
 * reserved there first (the authority rule: Redis decides first), so that
 * one key is held by one live job across every board of the namespace. The
 * reservation is pending until the local post committed (confirm_remote):
 * a post killed in between leaves no holder that refuses anyone (sync/
 * scripts/lib.lua, "pending"). JB_EEXISTS
 * (nothing reserved is kept; *held_idx the post, holder the uuid) when
 * another job holds one. Redis away (JB_EOFFLINE): the posts go on locally
 * and their keys are checked when the replicator publishes them (the
 * publication takes the key in the same script, or the job goes to the
 * dead letters). *reserved: how many of sp[] were looked at, for a give
 * back when the local post fails.
 */
static int reserve_remote(jb_board *b, const jb_store_post *sp, size_t n,
                          int64_t now, size_t *reserved, size_t *held_idx,
                          char holder[JB_UUID_STRLEN]) {
  *reserved = 0;
  if (b->remote_ops == NULL || b->remote_ops->reserve == NULL) return JB_OK;
  char key[JB_UNIQUE_MAX + 1], t[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++) {
    if (!unique_text(&sp[i], key, t)) continue;
    int rc = b->remote_ops->reserve(b->remote_ctx, key, t,
                                    reserve_hold(&sp[i], now), holder);
    if (rc == JB_EOFFLINE) return JB_OK; /* decided at publication */
    if (rc != JB_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", jb_errmsg());
      unreserve_remote(b, sp, i);
      *held_idx = i;
      if (rc != JB_EEXISTS) holder[0] = '\0';
      return jb__err(rc, "%s", msg);
    }
    *reserved = i + 1;
  }
  *reserved = n;
  return JB_OK;
}

int jb_job_post_batch(char (*uuids_out)[JB_UUID_STRLEN], jb_board *b,
                      const jb_post *posts, size_t n) {
  if (b == NULL || (n && posts == NULL))
    return jb__err(JB_EINVAL, "post: NULL board or posts");
  if (n == 0) return JB_OK;
  jb_store_post stack_sp[1] = {{{0}, 0, NULL, 0, 0, NULL}};
  jb_store_post *sp = n == 1 ? stack_sp : calloc(n, sizeof *sp);
  if (sp == NULL) return jb__err(JB_ENOMEM, "out of memory for %zu posts", n);
  jb_buf buf = {0};
  int64_t now = jb__now_us();
  int rc = JB_OK;
  /* A caller built against version 1 of jb_post passes an array of the
   * smaller struct: its first element's version says which (ABI). */
  size_t stride = posts[0].version == 1   ? JB_POST_V1_SIZE
                  : posts[0].version == 2 ? JB_POST_V2_SIZE
                                          : sizeof *posts;
  for (size_t i = 0; rc == JB_OK && i < n; i++) {
    const jb_post *p = (const jb_post *)(const void *)((const char *)posts +
                                                       i * stride);
    if (i > 0 && p->version != posts[0].version)
      rc = jb__err(JB_EINVAL, "post %zu: version %u differs from post 0's "
                   "(%u): one batch, one version", i, p->version,
                   posts[0].version);
    else if (p->version >= 2 && p->unique_key &&
             strncmp(p->unique_key, JB_SCHEDULE_KEY_PREFIX,
                     strlen(JB_SCHEDULE_KEY_PREFIX)) == 0)
      /* The schedules' runs' own (a run another synced board posted is
       * cancelled here, not buried: sync/attach.c tells them by it). */
      rc = n == 1 ? jb__err(JB_EINVAL, "unique key \"%.40s\": keys that "
                            "start with \"" JB_SCHEDULE_KEY_PREFIX "\" are "
                            "the schedules' runs' own", p->unique_key)
                  : jb__err(JB_EINVAL, "post %zu: unique key \"%.40s\": keys "
                            "that start with \"" JB_SCHEDULE_KEY_PREFIX "\" "
                            "are the schedules' runs' own", i, p->unique_key);
    else
      rc = prepare(b->max_posting, p, n == 1 ? -1 : (long)i, &buf, &sp[i],
                   now);
  }
  if (rc == JB_OK && n > 1) rc = unique_twice(sp, n);
  uint8_t held[16];
  size_t held_idx = 0, reserved = 0;
  char remote_holder[JB_UUID_STRLEN] = "";
  if (rc == JB_OK)
    rc = reserve_remote(b, sp, n, now, &reserved, &held_idx, remote_holder);
  if (rc == JB_OK) {
    for (size_t i = 0; i < n; i++)
      sp[i].prefix = buf.data + (uintptr_t)sp[i].prefix;
    rc = jb__store_post_x(b->store, sp, n, now, held, &held_idx);
    if (rc == JB_OK && reserved) confirm_remote(b, sp, reserved, now);
    if (rc != JB_OK && reserved) {
      char msg[1024]; /* the post's message, kept over the give-back */
      snprintf(msg, sizeof msg, "%s", jb_errmsg());
      unreserve_remote(b, sp, reserved);
      jb__err(rc, "%s", msg);
    }
  }
  if (rc == JB_OK && uuids_out)
    for (size_t i = 0; i < n; i++) jb__uuid_format(uuids_out[i], sp[i].uuid);
  if (rc == JB_EEXISTS && uuids_out) { /* the job that holds the key */
    if (remote_holder[0])
      memcpy(uuids_out[held_idx], remote_holder, JB_UUID_STRLEN);
    else
      jb__uuid_format(uuids_out[held_idx], held);
  }
  for (size_t i = 0; i < n; i++) free((void *)sp[i].x);
  jb__buf_free(&buf);
  if (sp != stack_sp) free(sp);
  return rc;
}

int jb_post_check(const jb_post *post, size_t max_posting) {
  if (max_posting && max_posting < MIN_MAX_POSTING)
    return jb__err(JB_EINVAL, "max_posting %zu is below the smallest posting "
                   "(%zu bytes)", max_posting, MIN_MAX_POSTING);
  jb_buf buf = {0};
  jb_store_post sp = {{0}, 0, NULL, 0, 0, NULL};
  int rc = prepare(max_posting ? max_posting : DEFAULT_MAX_POSTING, post, -1,
                   &buf, &sp, jb__now_us());
  free((void *)sp.x);
  jb__buf_free(&buf);
  return rc;
}

int jb_job_post(char uuid_out[JB_UUID_STRLEN], jb_board *b,
                const jb_post *post) {
  if (post == NULL) return jb__err(JB_EINVAL, "post: NULL post");
  return jb_job_post_batch((char (*)[JB_UUID_STRLEN])uuid_out, b, post, 1);
}

/* ------------------------------------------------------- job operations */

static int args(jb_board *b, const char *uuid, uint8_t raw[16]) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  return jb__uuid_parse(raw, uuid, "job uuid");
}

int jb_job_get(jb_job **out, jb_board *b, const char *uuid) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_job_get: out is NULL");
  *out = NULL;
  uint8_t raw[16];
  int rc = args(b, uuid, raw);
  if (rc != JB_OK) return rc;
  jb_job *job = calloc(1, sizeof *job);
  if (job == NULL) return jb__err(JB_ENOMEM, "out of memory reading a job");
  rc = jb__store_get(b->store, raw, job);
  if (rc != JB_OK) {
    jb_job_free(job);
    return rc;
  }
  *out = job;
  return JB_OK;
}

int jb__names_check(const char *what, const char *const *names, size_t n) {
  if (n && names == NULL)
    return jb__err(JB_EINVAL, "%s: n_names is %zu but names is NULL", what, n);
  if (n > JB_CLAIM_NAMES_MAX)
    return jb__err(JB_EINVAL, "%s: %zu names chosen (at most %d)", what, n,
                   JB_CLAIM_NAMES_MAX);
  for (size_t i = 0; i < n; i++) {
    const char *nm = names[i];
    size_t len = nm ? strlen(nm) : 0;
    if (len == 0 || len > JB_NAME_MAX)
      return jb__err(JB_EINVAL, "%s: names[%zu] is %s (a job name is 1..%d "
                     "bytes; a trailing '*' makes it a prefix)", what, i,
                     nm == NULL ? "NULL" : len ? "too long" : "empty",
                     JB_NAME_MAX);
    if (!jb__utf8_valid(nm, len))
      return jb__err(JB_EINVAL, "%s: names[%zu] is not UTF-8", what, i);
  }
  return JB_OK;
}

/* Check a claim's options and fill the store's request. */
static int claim_req(jb_store_claim_req *req, const char *who,
                     const jb_claim_options *opts) {
  *req = (jb_store_claim_req){.who = who};
  int rc = jb__who_check(who, &req->who_len);
  if (rc != JB_OK) return rc;
  if (opts) {
    /* Version 1 (0.1's jb_claim_opts) ends before wait_ms, version 2
     * before names. */
    if (opts->version < 1 || opts->version > JB_CLAIM_OPTIONS_VERSION)
      return jb__err(JB_EINVAL, "claim options: version %u is not %u (use "
                     "JB_CLAIM_OPTIONS_INIT)", opts->version,
                     JB_CLAIM_OPTIONS_VERSION);
    if (opts->version >= 3 && opts->n_names) {
      if ((rc = jb__names_check("claim options", opts->names,
                                opts->n_names)) != JB_OK)
        return rc;
      req->names = opts->names;
      req->n_names = opts->n_names;
      req->in_order = (opts->flags & JB_CLAIM_NAMES_IN_ORDER) != 0;
    }
    const unsigned known = JB_CLAIM_BIND_PROCESS | JB_CLAIM_NAMES_IN_ORDER;
    if (opts->flags & ~known)
      return jb__err(JB_EINVAL, "claim options: unknown flags 0x%x",
                     opts->flags & ~known);
    if ((opts->flags & JB_CLAIM_NAMES_IN_ORDER) &&
        (opts->version < 3 || opts->n_names == 0))
      return jb__err(JB_EINVAL, "claim options: JB_CLAIM_NAMES_IN_ORDER "
                     "without names (it orders the names chosen)");
    if (opts->lease_ms < 0 || opts->lease_ms > JB_LEASE_MAX_MS)
      return jb__err(JB_EINVAL, "lease: %lld ms is not a lease (expected "
                     "1..%lld ms, or 0 for no expiry)",
                     (long long)opts->lease_ms, (long long)JB_LEASE_MAX_MS);
    req->lease_ms = opts->lease_ms;
    if (opts->flags & JB_CLAIM_BIND_PROCESS) {
      req->bind = true;
      if ((rc = jb__proc_self(&req->holder)) != JB_OK) return rc;
    }
  }
  req->now_us = jb__now_us();
  return JB_OK;
}

/* -------------------------------------------------- Redis-decided jobs */

bool jb__board_replicator_runs(const char *path) {
  char lp[4096];
  if (path == NULL ||
      snprintf(lp, sizeof lp, "%s/sync.lock", path) >= (int)sizeof lp)
    return false;
  int fd = open(lp, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

void jb__board_set_remote(jb_board *b, const jb_remote_ops *ops, void *ctx) {
  if (b == NULL) return;
  b->remote_ops = ops;
  b->remote_ctx = ops ? ctx : NULL;
}

int jb__board_set_published(jb_board *b, const char *const *uuids, size_t n,
                            jb_pub_state state, const uint64_t *seqs,
                            int *results) {
  if (b == NULL || (n && uuids == NULL) ||
      (unsigned)state > JB_PUB_PENDING_UNHELD)
    return jb__err(JB_EINVAL, "set_published: bad arguments");
  uint8_t(*raw)[16] = n ? malloc(n * sizeof *raw) : NULL;
  if (n && raw == NULL)
    return jb__err(JB_ENOMEM, "out of memory marking %zu jobs", n);
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++)
    rc = jb__uuid_parse(raw[i], uuids[i], "job uuid");
  static const jb_store_pub to_store[] = {
      [JB_PUB_LOCAL] = JB_STORE_PUB_LOCAL,
      [JB_PUB_PENDING] = JB_STORE_PUB_PENDING,
      [JB_PUB_DONE] = JB_STORE_PUB_DONE,
      [JB_PUB_PENDING_UNHELD] = JB_STORE_PUB_PENDING_UNHELD};
  if (rc == JB_OK)
    rc = jb__store_set_published(b->store, (const uint8_t(*)[16])raw, n,
                                 to_store[state], seqs, results);
  free(raw);
  return rc;
}

int jb__board_mark_remote(jb_board *b, const char *uuid) {
  uint8_t raw[16];
  int rc = args(b, uuid, raw);
  return rc != JB_OK ? rc : jb__store_mark_remote(b->store, raw);
}

/* The refusal of a Redis-decided job on a handle without the hook. */
static int not_attached(const char *verb, const uint8_t raw[16]) {
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  return jb__err(JB_EOFFLINE, "cannot %s job %s: backend unavailable (job %s "
                 "is decided by Redis and this handle is not connected to "
                 "it)", verb, t, t);
}

/*
 * Whether Redis's "not on the board" for job `raw` may be the moment
 * between the replicator marking it for publication and its post running
 * (a few hundred microseconds, but the post's commit may wait on a busy
 * disk): then the caller's operation is tried again, for up to about five
 * seconds, rather than failed. Returns true after a short sleep when the
 * job is still marked; false at once otherwise.
 */
static bool wait_publication(jb_board *b, const uint8_t raw[16], int round) {
  if (round >= 1000) return false;
  /* With no replicator running, the publication is a program's own
   * (jb_sync_publish: one round trip), or nobody's before a replicator
   * starts (a schedule's run ticked on a synced board): about a second
   * then, not five, for a claim-next that passes it over. */
  if (round >= 200 && !jb__board_replicator_runs(b->path)) return false;
  jb_job job;
  memset(&job, 0, sizeof job);
  bool marked = jb__store_get(b->store, raw, &job) == JB_OK && job.publishing;
  jb__job_clear(&job);
  if (!marked) return false;
  struct timespec ts = {0, (round < 10 ? 1 : 5) * 1000000L};
  nanosleep(&ts, NULL);
  return true;
}

/* A claim of a Redis-decided job: Redis first, then the same claim
 * recorded locally (nothing local changes when Redis refuses or is away). */
static int remote_claim(jb_board *b, const uint8_t raw[16],
                        const jb_store_claim_req *req, uint64_t *token) {
  if (b->remote_ops == NULL) return not_attached("claim", raw);
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  /* Redis cannot see this host's processes: a claim bound to one, with no
   * lease, is kept alive in Redis by the board's replicator (the hook
   * checks that one runs) with a short expiry renewed while the holder
   * lives (JB_REMOTE_KEEPALIVE). */
  int64_t lease_ms = req->lease_ms;
  if (req->bind && lease_ms <= 0) lease_ms = JB_REMOTE_KEEPALIVE;
  uint64_t fence = 0;
  int rc;
  for (int i = 0;; i++) {
    rc = b->remote_ops->claim(b->remote_ctx, b, t, req->who, lease_ms,
                              &fence);
    if (rc != JB_ENOTFOUND || !wait_publication(b, raw, i)) break;
  }
  if (rc != JB_OK) return rc;
  /* Stamped now, after Redis decided: the replicator's mirror leaves alone
   * a local claim changed at or after its read of Redis began, and a
   * stamp from before the Redis claim (the request was built earlier:
   * claim-next's walk, a wait for publication) could make a claim Redis
   * granted look older than a read that found the job unclaimed, and be
   * undone by it. */
  jb_store_claim_req now = *req;
  now.now_us = jb__now_us();
  return jb__store_claim_x(b->store, raw, &now, token, JB_STORE_DECIDED);
}

int jb_claim(uint64_t *token_out, jb_board *b, const char *uuid,
             const char *who, const jb_claim_options *opts) {
  if (token_out) *token_out = 0;
  uint8_t raw[16];
  jb_store_claim_req req;
  int rc = args(b, uuid, raw);
  if (rc == JB_OK && jb__claim_wait_ms(opts) != 0)
    rc = jb__err(JB_EINVAL, "claim options: wait_ms %lld: a claim of one "
                 "job by uuid does not wait (wait_ms is for claim-next)",
                 (long long)jb__claim_wait_ms(opts));
  if (rc == JB_OK) rc = claim_req(&req, who, opts);
  if (rc == JB_OK && req.n_names)
    rc = jb__err(JB_EINVAL, "claim options: names: a claim of one job by "
                 "uuid takes no names (names are for claim-next)");
  if (rc != JB_OK) return rc;
  uint64_t token = 0;
  rc = jb__store_claim(b->store, raw, &req, &token);
  if (rc == JB__REMOTE) rc = remote_claim(b, raw, &req, &token);
  if (token_out && (rc == JB_OK || rc == JB_ECLAIMED)) *token_out = token;
  return rc;
}

int jb__claim_next_once(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                        uint64_t *token_out, jb_board *b, const char *who,
                        const jb_claim_options *opts, int64_t *next_token_us) {
  if (job_out) *job_out = NULL;
  if (token_out) *token_out = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  jb_store_claim_req req;
  int rc = claim_req(&req, who, opts);
  if (rc != JB_OK) return rc;
  req.next_token_us = next_token_us;
  jb_job *job = NULL;
  if (job_out && (job = calloc(1, sizeof *job)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for a job");
  uint8_t raw[16];
  uint64_t token = 0;
  /* Redis-decided jobs: skipped without the hook; with it, the walk stops
   * at each one in claim-next order and it is claimed through Redis; one
   * Redis refuses (claimed elsewhere, gone) is passed over, and when Redis
   * is away the rest are skipped so that local jobs can still be claimed. */
  const struct jb_remote_ops *ops = b->remote_ops;
  uint8_t after[JB_JOBKEY_LEN], key[JB_JOBKEY_LEN];
  bool started = false, skip = ops == NULL;
  char away[256] = "";
  for (;;) {
    rc = jb__store_claim_next_x(b->store, raw, job, &req, &token,
                                started ? after : NULL, skip, key);
    if (rc != JB__REMOTE) break;
    memcpy(after, key, JB_JOBKEY_LEN);
    started = true;
    rc = remote_claim(b, raw, &req, &token);
    if (rc == JB_OK) {
      if (job) rc = jb__store_get(b->store, raw, job);
      if (rc != JB_OK) rc = JB_ECORRUPT; /* the claim stands */
      break;
    }
    if (rc == JB_EOFFLINE) {
      snprintf(away, sizeof away, "%s", jb_errmsg());
      skip = true;
    } else if (rc != JB_ECLAIMED && rc != JB_ENOTFOUND) {
      break;
    }
  }
  if (rc == JB_ENOTFOUND && away[0])
    rc = jb__err(JB_ENOTFOUND, "no claimable job on the board (Redis-decided "
                 "jobs were not tried: %s)", away);
  /* JB_ECORRUPT after the commit still means the claim stands. */
  if (rc == JB_OK || rc == JB_ECORRUPT) {
    if (uuid_out) jb__uuid_format(uuid_out, raw);
    if (token_out) *token_out = token;
  }
  if (rc == JB_OK && job_out)
    *job_out = job;
  else
    jb_job_free(job);
  return rc;
}


/* A release or extend refused because the job is not on the board: when
 * its history says it was cancelled (forced from its holder), the message
 * says so (jobboard.h, jb_job_cancel). Other codes pass through. */
int jb__board_say_if_cancelled(jb_board *b, int rc, const uint8_t raw[16]) {
  if (rc != JB_ENOTFOUND) return rc;
  char msg[1024]; /* as long as any message (base/error.c) */
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  jb_completion *c = NULL;
  bool cancelled = jb_job_completion(&c, b, t) == JB_OK &&
                   c->end == JB_END_CANCELLED;
  jb_completion_free(c);
  return jb__err(JB_ENOTFOUND, "%s%s", msg,
                 cancelled ? " (it was cancelled)" : "");
}

int jb_extend(jb_board *b, const char *uuid, const char *who,
                  uint64_t token, int64_t lease_ms) {
  uint8_t raw[16];
  size_t who_len;
  int rc = args(b, uuid, raw);
  if (rc == JB_OK) rc = jb__who_check(who, &who_len);
  if (rc != JB_OK) return rc;
  if (lease_ms <= 0 || lease_ms > JB_LEASE_MAX_MS)
    return jb__err(JB_EINVAL, "lease: %lld ms is not a lease (expected "
                   "1..%lld ms)", (long long)lease_ms,
                   (long long)JB_LEASE_MAX_MS);
  rc = jb__store_extend(b->store, raw, who, who_len, token, lease_ms,
                        jb__now_us(), 0);
  if (rc != JB__REMOTE) return jb__board_say_if_cancelled(b, rc, raw);
  if (b->remote_ops == NULL) return not_attached("extend the claim on", raw);
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  for (int i = 0;; i++) {
    rc = b->remote_ops->extend(b->remote_ctx, t, who, lease_ms);
    if (rc != JB_ENOTFOUND || !wait_publication(b, raw, i)) break;
  }
  if (rc != JB_OK) return rc;
  return jb__store_extend(b->store, raw, who, who_len, token, lease_ms,
                          jb__now_us(), JB_STORE_DECIDED);
}

int jb_progress(jb_board *b, const char *uuid, const char *who,
                uint64_t token, double percent, const char *message) {
  uint8_t raw[16];
  size_t who_len;
  int rc = args(b, uuid, raw);
  if (rc == JB_OK) rc = jb__who_check(who, &who_len);
  if (rc != JB_OK) return rc;
  if (!(percent >= 0.0 && percent <= 100.0)) /* NaN too */
    return jb__err(JB_EINVAL, "progress: %g is not a percentage (expected a "
                   "number from 0 to 100)", percent);
  size_t len = message ? strlen(message) : 0;
  if (len > JB_PROGRESS_MESSAGE_MAX)
    return jb__err(JB_EINVAL, "progress message: %zu bytes is too long (at "
                   "most %d)", len, JB_PROGRESS_MESSAGE_MAX);
  if (!jb__utf8_valid(message ? message : "", len))
    return jb__err(JB_EINVAL, "progress message: not valid UTF-8");
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)message[i];
    if (c < 0x20 || c == 0x7f)
      return jb__err(JB_EINVAL, "progress message: a control character "
                     "(0x%02x) at byte %zu (it must print on one line)", c,
                     i);
  }
  unsigned permille = (unsigned)(percent * 10.0 + 0.5);
  return jb__board_say_if_cancelled(
      b,
      jb__store_progress(b->store, raw, who, who_len, token, permille,
                         message, len, jb__now_us()),
      raw);
}

int jb_job_expires_in(jb_expiry *out, int64_t *ms_out, jb_board *b,
                      const char *uuid) {
  if (out == NULL) return jb__err(JB_EINVAL, "expires in: out is NULL");
  *out = JB_EXPIRY_NOT_CLAIMED;
  if (ms_out) *ms_out = 0;
  uint8_t raw[16];
  int rc = args(b, uuid, raw);
  if (rc != JB_OK) return rc;
  int kind = JB_EXPIRY_NOT_CLAIMED;
  int64_t ms = 0;
  rc = jb__store_expires_in(b->store, raw, &kind, &ms);
  if (rc != JB_OK) return rc;
  *out = (jb_expiry)kind;
  if (ms_out && kind == JB_EXPIRY_AT) *ms_out = ms;
  return JB_OK;
}

/* One local attempt of a release (xflags: JB_STORE_DECIDED or 0). */
static int release_local(jb_board *b, jb_release op, const uint8_t raw[16],
                         const char *who, size_t who_len, uint64_t token,
                         const jb_store_done *done, unsigned xflags) {
  if (op == JB_RELEASE_ABANDON)
    return jb__store_release(b->store, op, raw, who, who_len, token,
                             jb__now_us(), xflags);
  return jb__store_finish(b->store, op, raw, who, who_len, token, jb__now_us(),
                          done, xflags);
}

/*
 * A release of a job that is not on the board, by a handle whose earlier
 * try of the same release lost its reply (Redis went away after the script
 * was sent): if the script ran, the replicator may have seen the job leave
 * Redis and taken it off the board before this retry. Then the release
 * happened, and the retry says so (the mirror's plain history record gets
 * the caller's ending and result) instead of "not on the board".
 */
static int settle_lost(jb_board *b, jb_release op, const uint8_t raw[16],
                       const char *who, size_t who_len,
                       const jb_store_done *done) {
  char msg[1024]; /* as long as any message (base/error.c) */
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  int rop = op == JB_RELEASE_ABANDON ? JB_REMOTE_ABANDON
            : op == JB_RELEASE_CONSUME ? JB_REMOTE_CONSUME
                                       : JB_REMOTE_TRASH;
  int ran = b->remote_ops->settle(b->remote_ctx, rop, t, who);
  if (ran < 0) return ran;
  if (ran == 0) return jb__err(JB_ENOTFOUND, "%s", msg);
  if (done) {
    int arc = jb__store_amend_completion(b->store, raw, done, who, who_len,
                                         jb__now_us());
    if (arc != JB_OK && arc != JB_ENOTFOUND) return arc;
  }
  return JB_OK;
}

int jb__board_remote_cancel(jb_board *b, const uint8_t raw[16], bool force) {
  if (b->remote_ops == NULL || b->remote_ops->cancel == NULL)
    return not_attached("cancel", raw);
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  int rc;
  for (int i = 0;; i++) {
    rc = b->remote_ops->cancel(b->remote_ctx, t, force);
    if (rc != JB_ENOTFOUND || !wait_publication(b, raw, i)) break;
  }
  if (rc != JB_OK) return rc;
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  rc = jb__store_cancel(b->store, raw, true, jb__now_us(), &hb,
                        JB_STORE_DECIDED);
  /* Redis has cancelled it; gone here means the replicator saw it leave
   * Redis first and recorded a plain ending: it becomes "cancelled". */
  if (rc == JB_ENOTFOUND) {
    jb_store_done done = {.end = JB_END_CANCELLED, .bounds = &hb};
    int arc = jb__store_amend_completion(b->store, raw, &done, "", 0,
                                         jb__now_us());
    if (arc != JB_OK && arc != JB_ENOTFOUND) return arc;
    rc = JB_OK;
  }
  return rc;
}

int jb__board_bury_unpublished(jb_board *b, const char *uuid,
                               const char *reason, bool cancel) {
  uint8_t raw[16];
  int rc = args(b, uuid, raw);
  if (rc != JB_OK) return rc;
  size_t len = reason ? strnlen(reason, JB_REASON_MAX) : 0;
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  return jb__store_bury_unpublished(b->store, raw, reason ? reason : "", len,
                                    jb__now_us(), &hb, cancel);
}

int jb__board_release(jb_board *b, jb_release op, const uint8_t raw[16],
                      const char *who, size_t who_len, uint64_t token,
                      const jb_store_done *done) {
  int rc = release_local(b, op, raw, who, who_len, token, done, 0);
  if (rc == JB_ENOTFOUND && b->remote_ops && b->remote_ops->settle)
    return settle_lost(b, op, raw, who, who_len, done);
  if (rc != JB__REMOTE) return rc;
  static const char *const verbs[] = {"abandon", "consume", "trash"};
  if (b->remote_ops == NULL) return not_attached(verbs[op], raw);
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, raw);
  const struct jb_remote_ops *o = b->remote_ops;
  /* How the job ends goes to Redis with the release, so that every board
   * mirroring it records the same ending (a plain consume or trash says
   * nothing more than taskflow's keys do). */
  jb_remote_outcome how = {0}, *hp = NULL;
  if (done && (done->end != (op == JB_RELEASE_CONSUME ? JB_END_CONSUMED
                                                      : JB_END_TRASHED) ||
               done->result || done->reason || done->cause)) {
    how = (jb_remote_outcome){.end = done->end, .result = done->result,
                              .result_len = done->result_len,
                              .cause = done->cause, .reason = done->reason,
                              .reason_len = done->reason_len, .owner = who};
    hp = &how;
  }
  for (int i = 0;; i++) {
    rc = op == JB_RELEASE_ABANDON ? o->abandon(b->remote_ctx, t, who)
         : op == JB_RELEASE_CONSUME ? o->consume(b->remote_ctx, t, who, hp)
                                    : o->trash(b->remote_ctx, t, who, hp);
    if (rc != JB_ENOTFOUND || !wait_publication(b, raw, i)) break;
  }
  if (rc != JB_OK) return rc;
  rc = release_local(b, op, raw, who, who_len, token, done, JB_STORE_DECIDED);
  /* Redis has done it; the job can only be gone here because the
   * replicator saw it leave Redis (our own release) first and removed it
   * with a plain history record: what the caller asked for happened, and
   * the record is given the caller's ending and result. */
  if (rc == JB_ENOTFOUND) {
    if (done) {
      int arc = jb__store_amend_completion(b->store, raw, done, who, who_len,
                                           jb__now_us());
      if (arc != JB_OK && arc != JB_ENOTFOUND) return arc;
    }
    rc = JB_OK;
  }
  return rc;
}

static int release(jb_board *b, jb_release op, const char *uuid,
                   const char *who, uint64_t token) {
  uint8_t raw[16];
  size_t who_len;
  int rc = args(b, uuid, raw);
  if (rc == JB_OK) rc = jb__who_check(who, &who_len);
  if (rc != JB_OK) return rc;
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  jb_store_done done = {.end = op == JB_RELEASE_CONSUME ? JB_END_CONSUMED
                                                        : JB_END_TRASHED,
                        .bounds = &hb};
  rc = jb__board_release(b, op, raw, who, who_len, token,
                         op == JB_RELEASE_ABANDON ? NULL : &done);
  return jb__board_say_if_cancelled(b, rc, raw);
}

int jb_abandon(jb_board *b, const char *uuid, const char *who,
               uint64_t token) {
  return release(b, JB_RELEASE_ABANDON, uuid, who, token);
}

int jb_trash(jb_board *b, const char *uuid, const char *who, uint64_t token) {
  return release(b, JB_RELEASE_TRASH, uuid, who, token);
}

int jb_job_find_owner(char out[JB_WHO_MAX + 1], jb_board *b,
                      const char *uuid) {
  if (out == NULL) return jb__err(JB_EINVAL, "find owner: out is NULL");
  out[0] = '\0';
  uint8_t raw[16];
  int rc = args(b, uuid, raw);
  if (rc != JB_OK) return rc;
  jb_state st;
  return jb__store_owner(b->store, raw, out, &st);
}

int jb_job_get_state(jb_state *out, jb_board *b, const char *uuid) {
  if (out == NULL) return jb__err(JB_EINVAL, "get state: out is NULL");
  uint8_t raw[16];
  char owner[JB_WHO_MAX + 1];
  int rc = args(b, uuid, raw);
  if (rc != JB_OK) return rc;
  return jb__store_owner(b->store, raw, owner, out);
}

/* -------------------------------------------------------------- iterate */

/* Jobs read per read transaction: enough to amortise the transaction,
 * few enough that a slow consumer never holds a snapshot. */
#define ITER_BATCH 64

/* Index entries a filtered batch looks at, at most, per read
 * transaction. */
#define ITER_BUDGET 4096

struct jb_iter {
  jb_board *board;
  unsigned flags;
  bool started;
  uint8_t last[JB_JOBKEY_LEN]; /* key of the last job handed out */
  bool handed;                 /* some job was (last is set) */
  bool scanned;                /* from is set */
  uint8_t from[JB_JOBKEY_LEN]; /* the next batch starts after it */
  jb_store_scan_opts o;
  char *name;                  /* jb_iter_options.name, or NULL */
  jb_store_item items[ITER_BATCH];
  size_t n, pos;
  size_t batch; /* jobs per read transaction, 1..ITER_BATCH */
  jb_buf bytes;
  jb_job job;
};

int jb_iter_open(jb_iter **out, jb_board *b, unsigned flags) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_iter_open: out is NULL");
  *out = NULL;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_ONLY_UNCLAIMED)
    return jb__err(JB_EINVAL, "iterate: unknown flags 0x%x", flags);
  jb_iter *it = calloc(1, sizeof *it);
  if (it == NULL) return jb__err(JB_ENOMEM, "out of memory for an iterator");
  it->board = b;
  it->flags = flags;
  it->batch = ITER_BATCH;
  *out = it;
  return JB_OK;
}

/* A cursor's text: "P-SEQ" for a key of the local band, "P-SEQ.TIE" for
 * one of Redis's band (store.h, "A jobkey"). */
static int cursor_parse(const char *text, uint8_t key[JB_JOBKEY_LEN]) {
  unsigned pr, tie = 0;
  uint64_t seq;
  int used = 0, used2 = 0;
  if (sscanf(text, "%u-%" SCNu64 "%n", &pr, &seq, &used) != 2 ||
      pr > JB_PRIORITY_VERY_HIGH || text[0] < '0' || text[0] > '9')
    return -1;
  if (text[used] == '.') {
    if (sscanf(text + used, ".%u%n", &tie, &used2) != 1 || tie > 0xffffu ||
        text[used + used2] != 0 || seq > (UINT64_MAX >> 17))
      return -1;
    jb__jobkey_remote(key, (jb_priority)pr, seq, tie);
    return 0;
  }
  if (text[used] != 0 || seq >= (UINT64_C(1) << 63)) return -1;
  jb__jobkey(key, (jb_priority)pr, seq);
  return 0;
}

int jb_iter_open_opts(jb_iter **out, jb_board *b, const jb_iter_options *o) {
  if (out == NULL) return jb__err(JB_EINVAL, "jb_iter_open_opts: out is NULL");
  *out = NULL;
  if (o == NULL) return jb__err(JB_EINVAL, "jb_iter_open_opts: opts is NULL");
  if (o->version != JB_ITER_OPTIONS_VERSION)
    return jb__err(JB_EINVAL, "iterate: options version %u unknown (this "
                   "library knows %u)", o->version, JB_ITER_OPTIONS_VERSION);
  if (o->where & ~(unsigned)(JB_ITER_READY | JB_ITER_CLAIMED |
                             JB_ITER_DELAYED))
    return jb__err(JB_EINVAL, "iterate: unknown where bits 0x%x", o->where);
  uint8_t after[JB_JOBKEY_LEN];
  if (o->after && cursor_parse(o->after, after) != 0)
    return jb__err(JB_EINVAL, "iterate: '%.60s' is not a cursor (P-SEQ as "
                   "jb_iter_cursor gives)", o->after);
  if (o->batch > ITER_BATCH)
    return jb__err(JB_EINVAL, "iterate: a batch of %u jobs (at most %d)",
                   o->batch, ITER_BATCH);
  size_t name_len = o->name ? strlen(o->name) : 0;
  if (o->name && (name_len == 0 || name_len > JB_NAME_MAX))
    return jb__err(JB_EINVAL, "iterate: the name is %s",
                   name_len ? "longer than JB_NAME_MAX" : "empty");
  int rc = jb_iter_open(out, b, o->flags);
  if (rc != JB_OK) return rc;
  jb_iter *it = *out;
  it->o.tables = o->where;
  if (o->batch) it->batch = o->batch;
  if (o->name) {
    if ((it->name = strdup(o->name)) == NULL) {
      jb_iter_close(it);
      *out = NULL;
      return jb__err(JB_ENOMEM, "out of memory for an iterator");
    }
    it->o.has_lane = true;
    it->o.lane = jb__name_lane(o->name, name_len);
  }
  if (o->where || o->name) it->o.budget = ITER_BUDGET;
  if (o->after) {
    memcpy(it->from, after, JB_JOBKEY_LEN);
    memcpy(it->last, after, JB_JOBKEY_LEN);
    it->scanned = it->handed = true;
  }
  return JB_OK;
}

int jb_iter_cursor(const jb_iter *it, char out[JB_ITER_CURSOR_MAX]) {
  if (it == NULL || out == NULL)
    return jb__err(JB_EINVAL, "jb_iter_cursor: NULL argument");
  out[0] = 0;
  if (!it->handed) return JB_OK;
  unsigned pr = (unsigned)jb__jobkey_priority(it->last);
  uint64_t v = jb__jobkey_value(it->last);
  if (jb__jobkey_is_remote(it->last))
    snprintf(out, JB_ITER_CURSOR_MAX, "%u-%" PRIu64 ".%u", pr, v >> 16,
             (unsigned)(v & 0xffffu));
  else
    snprintf(out, JB_ITER_CURSOR_MAX, "%u-%" PRIu64, pr,
             jb__jobkey_seq(it->last));
  return JB_OK;
}

int jb_iter_next(const jb_job **out, jb_iter *it) {
  if (out == NULL || it == NULL)
    return jb__err(JB_EINVAL, "jb_iter_next: NULL argument");
  *out = NULL;
again:
  if (it->pos == it->n) {
    /* Next batch, from just after the last key the last batch looked at.
     * An empty batch is the end (calling again looks again: a job posted
     * after the cursor since then is seen), unless it stopped at its
     * budget: then the next transaction goes on from there. */
    bool looked, more;
    uint8_t resume[JB_JOBKEY_LEN];
    int rc = jb__store_scan_ex(it->board->store, it->flags,
                               it->scanned ? it->from : NULL, &it->o,
                               it->items, it->batch, &it->bytes, &it->n,
                               resume, &looked, &more);
    it->pos = 0;
    if (rc != JB_OK) {
      it->n = 0;
      return rc;
    }
    if (looked) {
      memcpy(it->from, resume, JB_JOBKEY_LEN);
      it->scanned = true;
    }
    if (it->n == 0) {
      if (more) goto again;
      return JB_OK;
    }
  }
  const jb_store_item *item = &it->items[it->pos++];
  memcpy(it->last, item->key, JB_JOBKEY_LEN);
  it->started = it->handed = true;
  jb_job_raw raw = {.uuid = item->uuid,
                    .priority = jb__jobkey_priority(item->key),
                    .sequence = jb__jobkey_seq(item->key),
                    .modified_us = item->modified_us,
                    .owner = item->claimed
                                 ? (const char *)it->bytes.data + item->owner_off
                                 : NULL,
                    .owner_len = item->owner_len,
                    .token = item->token,
                    .lease_expires_us = item->lease_expires_us,
                    .holder_pid = item->holder_pid,
                    .holder_alive = item->holder_alive,
                    .remote = item->remote,
                    .publishing = item->publishing,
                    .ours = item->ours,
                    .posting = it->bytes.data + item->posting_off,
                    .posting_len = item->posting_len,
                    .not_before_us = item->due_us,
                    .x = item->x_len ? it->bytes.data + item->x_off : NULL,
                    .x_len = item->x_len};
  int rc = jb__job_load(&it->job, &raw);
  if (rc != JB_OK) return rc;
  /* Two names may share a lane (names.h): the other's jobs are passed. */
  if (it->name && strcmp(jb_job_name(&it->job), it->name) != 0) goto again;
  *out = &it->job;
  return JB_OK;
}

void jb_iter_close(jb_iter *it) {
  if (it == NULL) return;
  free(it->name);
  jb__job_clear(&it->job);
  jb__buf_free(&it->bytes);
  free(it);
}

int jb_board_sync(jb_board *b) {
  if (b == NULL) return jb__err(JB_EINVAL, "jb_board_sync: board is NULL");
  if (b->readonly)
    return jb__err(JB_EREADONLY, "board %s is open read-only: nothing to "
                   "flush", b->path);
  return jb__store_sync(b->store);
}

int jb_board_set_flush_interval(jb_board *b, int64_t ms) {
  if (b == NULL)
    return jb__err(JB_EINVAL, "jb_board_set_flush_interval: board is NULL");
  if (b->readonly)
    return jb__err(JB_EREADONLY, "board %s is open read-only: cannot set its "
                   "flush interval", b->path);
  return jb__store_set_flush_interval(b->store, ms);
}

int jb_board_flush_info(jb_flush_info *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_board_flush_info: NULL argument");
  memset(out, 0, sizeof *out);
  if (b->readonly) return JB_OK;
  jb__store_flush_info(b->store, out);
  return JB_OK;
}

/* ----------------------------------------------------------------- check */

int jb_board_check(jb_check_stats *stats, jb_board *b, jb_check_cb cb,
                   void *payload) {
  return jb_board_check_ex(stats, b, 0, cb, payload);
}

int jb_board_check_ex(jb_check_stats *stats, jb_board *b, unsigned flags,
                      jb_check_cb cb, void *payload) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (flags & ~(unsigned)JB_CHECK_RECORD)
    return jb__err(JB_EINVAL, "jb_board_check_ex: unknown flags %#x",
                   flags & ~(unsigned)JB_CHECK_RECORD);
  jb_check_stats local;
  if (stats == NULL) stats = &local;
  jb_buf report = {0};
  jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
  int64_t t0 = jb__mono_us();
  int rc = jb__store_check(b->store, stats, &report, &hb);
  if ((flags & JB_CHECK_RECORD) && (rc == JB_OK || rc == JB_ECORRUPT)) {
    /* The check's own error message stays this thread's jb_errmsg. */
    char why[256] = "the handle is read-only";
    char *keep = strdup(jb_errmsg());
    jb_check_record r = {jb__now_us(), jb__mono_us() - t0, stats->problems,
                         stats->moved, stats->jobs};
    int wrc = b->readonly ? JB_EREADONLY
                          : jb__store_check_record(b->store, &r);
    if (wrc != JB_OK) {
      if (!b->readonly) snprintf(why, sizeof why, "%s", jb_errmsg());
      char line[320];
      snprintf(line, sizeof line, "not recorded: %s", why);
      if (jb__buf_append(&report, line, strlen(line) + 1) != 0) {
        free(keep);
        jb__buf_free(&report);
        return jb__err(JB_ENOMEM, "out of memory for the check's report");
      }
    }
    if (keep) {
      if (rc != JB_OK) jb__err(rc, "%s", keep);
      free(keep);
    }
  }
  /* Hand the lines out only now, after the write transaction. */
  for (size_t off = 0; cb && off < report.len;) {
    const char *line = (const char *)report.data + off;
    cb(line, payload);
    off += strlen(line) + 1;
  }
  jb__buf_free(&report);
  return rc;
}

int jb_board_last_check(jb_check_record *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_board_last_check: NULL argument");
  return jb__store_check_last(b->store, out);
}

/* ------------------------------------ for the worker's path (batch.c) */

int jb__board_claim_req(jb_store_claim_req *req, const char *who,
                        const jb_claim_options *opts) {
  return claim_req(req, who, opts);
}

int jb__board_remote_claim(jb_board *b, const uint8_t raw[16],
                           const jb_store_claim_req *req, uint64_t *token) {
  return remote_claim(b, raw, req, token);
}
