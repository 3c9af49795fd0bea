/*
 * logread.c - the change log's readers and its trimming.
 *
 * ops.c appends events (jb__log_open / _put / _close); this file reads
 * them back for watchers and decides, at the end of every write, which of
 * the oldest to delete. Sequences are contiguous: a write appends at the
 * last key + 1 and trimming removes only from the front, never the last
 * event, so the log holds exactly first .. next-1 and a cursor below
 * `first` is a reader that fell behind.
 */
#include "txn.h"

#include <string.h>

/* ------------------------------------------------------------ trimming */

/* Batching of the age bound: an event is trimmed once it is older than
 * the bound, but the writes look for such events only when the oldest is
 * older than the bound plus this slack, so each look finds a batch (the
 * events of a slack's worth of time) instead of one event per write. */
static int64_t age_slack_us(int64_t max_age_us) {
  int64_t slack = max_age_us / 64;
  return slack < 60 * 1000000LL ? slack : 60 * 1000000LL;
}

void jb__log_limits(const jb_board_options *o, uint64_t *keep,
                    int64_t *max_age_us) {
  /* Version 1 options end before these fields. */
  bool v2 = o->version >= 2;
  *keep = v2 && o->log_keep ? o->log_keep : JB_LOG_KEEP_DEFAULT;
  /* jb_board_open refused an age that overflows in microseconds. */
  *max_age_us = (v2 && o->log_max_age_ms ? o->log_max_age_ms
                                         : JB_LOG_MAX_AGE_DEFAULT_MS) * 1000;
}

int jb__log_trim(jb_store *s, MDB_txn *txn, MDB_cursor *cur, int64_t now_us,
                 uint64_t appended) {
  MDB_stat st;
  int rc = mdb_stat(txn, s->log, &st);
  if (rc) return rc;
  size_t n = st.ms_entries;
  /* At most JB_LOG_TRIM plus what this write appended: a batch of posts
   * must not push the log past its bound (each appends one event). */
  size_t max = JB_LOG_TRIM + (size_t)appended;
  /* By size: once JB_LOG_TRIM over the bound, delete down to it. */
  size_t by_size = n >= JB_LOG_TRIM && n - JB_LOG_TRIM >= s->log_keep
                       ? n - s->log_keep
                       : 0;
  if (by_size > max) by_size = max;
  /* The age bound alone takes at most JB_LOG_TRIM per write. */
  size_t limit = by_size > JB_LOG_TRIM ? by_size : JB_LOG_TRIM;
  bool by_age = now_us >= s->log_age_due_us;
  if (by_size == 0 && !by_age) return 0;
  int64_t cutoff = now_us - s->log_max_age_us; /* older than this: too old */
  MDB_val k, v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  for (size_t i = 0; rc == 0 && i < limit && n > 1; i++) {
    if (i >= by_size) {
      /* Only the age bound can take this one. */
      jb_eventrec ev;
      int64_t slack = age_slack_us(s->log_max_age_us);
      /* A malformed event is left for check to report; look again later. */
      int64_t due = now_us + slack;
      bool young = true;
      if (v.mv_size >= sizeof ev) {
        memcpy(&ev, v.mv_data, sizeof ev);
        young = ev.time_us >= cutoff;
        due = ev.time_us > INT64_MAX - s->log_max_age_us - slack
                  ? INT64_MAX
                  : ev.time_us + s->log_max_age_us + slack;
      }
      if (young) {
        /* The hint may be set only when this transaction deleted nothing
         * before: were it aborted (and run again after the map grows),
         * the hint would skip the events it had deleted. */
        if (i == 0) s->log_age_due_us = due;
        break;
      }
    }
    rc = mdb_cursor_del(cur, 0);
    n--;
    /* After a delete the cursor stands on the next event. */
    if (rc == 0 && i + 1 < limit && n > 1)
      rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
  }
  return rc;
}

/* -------------------------------------------------------------- reading */

/* The extent of the log as `txn` sees it. */
static int bounds(jb_store *s, MDB_txn *txn, MDB_cursor **curp,
                  uint64_t *first, uint64_t *next) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->log, &cur);
  if (rc) return rc;
  MDB_val k, v;
  *first = *next = 1;
  rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  if (rc == 0 && k.mv_size != 8) rc = MDB_CORRUPTED;
  if (rc == 0) {
    *next = jb__be64(k.mv_data) + 1;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    if (rc == 0 && k.mv_size != 8) rc = MDB_CORRUPTED;
    if (rc == 0) *first = jb__be64(k.mv_data);
  } else if (rc == MDB_NOTFOUND) {
    rc = 0;
  }
  if (rc == 0 && curp)
    *curp = cur;
  else
    mdb_cursor_close(cur);
  return rc;
}

typedef struct {
  uint64_t from;
  jb_event *out;
  size_t max;
  size_t n;
  uint64_t first, next;
} read_ctx;

static int bounds_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  return bounds(s, txn, NULL, &ctx->first, &ctx->next);
}

int jb__store_log_bounds(jb_store *s, uint64_t *first, uint64_t *next) {
  read_ctx ctx = {0};
  int rc = jb__store_read(s, bounds_body, &ctx);
  if (rc != JB_OK) return rc;
  *first = ctx.first;
  *next = ctx.next;
  return JB_OK;
}

/* Decode the event at `k`/`v`, which must be sequence `seq`. */
static int decode(jb_store *s, const MDB_val *k, const MDB_val *v,
                  uint64_t seq, jb_event *e) {
  jb_eventrec ev;
  if (k->mv_size != 8 || jb__be64(k->mv_data) != seq)
    return jb__err(JB_ECORRUPT, "board %s: change log: event %llu is "
                   "missing (run jobboard check)", s->path,
                   (unsigned long long)seq);
  if (v->mv_size < sizeof ev ||
      (memcpy(&ev, v->mv_data, sizeof ev),
       v->mv_size != sizeof ev + ev.owner_len || ev.owner_len > JB_WHO_MAX ||
           ev.type < JB_EV_POSTED || ev.type > JB_EV_LAST ||
           ev.priority > JB_PRIORITY_VERY_HIGH))
    return jb__err(JB_ECORRUPT, "board %s: change log: event %llu is "
                   "malformed (run jobboard check)", s->path,
                   (unsigned long long)seq);
  memset(e, 0, sizeof *e);
  e->seq = seq;
  e->type = (jb_event_type)ev.type;
  jb__uuid_format(e->uuid, ev.uuid);
  memcpy(e->owner, (const uint8_t *)v->mv_data + sizeof ev, ev.owner_len);
  e->owner[ev.owner_len] = '\0';
  e->time_us = ev.time_us;
  e->job_seq = ev.job_seq;
  e->priority = (jb_priority)ev.priority;
  return JB_OK;
}

static int read_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  ctx->n = 0;
  MDB_cursor *cur;
  int rc = bounds(s, txn, &cur, &ctx->first, &ctx->next);
  if (rc) return rc;
  if (ctx->from > ctx->next) {
    rc = jb__err(JB_EINVAL, "board %s: change log: sequence %llu is beyond "
                 "its end (the next event will be %llu)", s->path,
                 (unsigned long long)ctx->from,
                 (unsigned long long)ctx->next);
  } else if (ctx->from < ctx->first) {
    rc = jb__err(JB_ETRIMMED, "board %s: change log: event %llu is no "
                 "longer kept (trimmed); the log now starts at %llu", s->path,
                 (unsigned long long)ctx->from,
                 (unsigned long long)ctx->first);
  } else if (ctx->from < ctx->next) {
    uint8_t key[8];
    for (int i = 0; i < 8; i++) key[i] = (uint8_t)(ctx->from >> (56 - 8 * i));
    MDB_val k = {8, key}, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && ctx->n < ctx->max) {
      rc = decode(s, &k, &v, ctx->from + ctx->n, &ctx->out[ctx->n]);
      if (rc) break;
      ctx->n++;
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  mdb_cursor_close(cur);
  return rc;
}

int jb__store_log_read(jb_store *s, uint64_t from, jb_event *out, size_t max,
                       size_t *n, uint64_t *first) {
  read_ctx ctx = {.from = from, .out = out, .max = max};
  int rc = jb__store_read(s, read_body, &ctx);
  *n = rc == JB_OK ? ctx.n : 0;
  *first = ctx.first;
  return rc;
}

void jb__store_options(const jb_store *s, jb_board_options *o) {
  *o = (jb_board_options)JB_BOARD_OPTIONS_INIT;
  o->durability = s->durability;
  o->log_keep = s->log_keep;
  o->log_max_age_ms = s->log_max_age_us / 1000;
}
