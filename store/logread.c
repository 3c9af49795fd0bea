/*
 * logread.c - the change log's readers and its trimming.
 *
 * ops.c appends events (jb__log_open / _put / _close) to `logtail`; this
 * file reads them back for watchers, moves the tail to `log` and decides,
 * at the end of every write, which of the oldest to delete (store.h).
 * Sequences are contiguous: a write appends at the last key + 1 and
 * trimming removes only from the front, never the last event, so `log`
 * then `logtail` hold exactly first .. next-1 and a cursor below `first`
 * is a reader that fell behind.
 */
#include "txn.h"

#include <stdbool.h>
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

/* The first (MDB_FIRST) or last (MDB_LAST) key of the table `cur` is
 * on, into *seq (*found false when the table is empty). */
static int end_seq(MDB_cursor *cur, MDB_cursor_op op, bool *found,
                   uint64_t *seq) {
  MDB_val k, v;
  int rc = mdb_cursor_get(cur, &k, &v, op);
  *found = rc == 0;
  if (rc == MDB_NOTFOUND) return 0;
  if (rc == 0 && k.mv_size != 8) return MDB_CORRUPTED;
  if (rc == 0) *seq = jb__be64(k.mv_data);
  return rc;
}

int jb__log_next(jb_store *s, MDB_txn *txn, MDB_cursor *cur, uint64_t *next) {
  bool found;
  uint64_t last = 0;
  int rc = end_seq(cur, MDB_LAST, &found, &last);
  if (rc == 0 && !found) {
    MDB_cursor *lc;
    if ((rc = mdb_cursor_open(txn, s->log, &lc))) return rc;
    rc = end_seq(lc, MDB_LAST, &found, &last);
    mdb_cursor_close(lc);
  }
  *next = found ? last + 1 : 1;
  return rc;
}

/* Move every event of `logtail` to the end of `log` and empty the tail
 * (its page is freed; the next append makes a new one). */
static int move_tail(jb_store *s, MDB_txn *txn) {
  MDB_cursor *tc, *lc;
  int rc = mdb_cursor_open(txn, s->logtail, &tc);
  if (rc) return rc;
  if ((rc = mdb_cursor_open(txn, s->log, &lc))) {
    mdb_cursor_close(tc);
    return rc;
  }
  MDB_val k, v;
  jb_buf copy = {0};
  for (rc = mdb_cursor_get(tc, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(tc, &k, &v, MDB_NEXT)) {
    /* Copied first: a write to `log` may spill the tail's dirty page out
     * of memory in a transaction of very many pages. */
    copy.len = 0;
    if ((rc = jb__buf_append(&copy, k.mv_data, k.mv_size)) ||
        (rc = jb__buf_append(&copy, v.mv_data, v.mv_size)))
      break;
    MDB_val ck = {k.mv_size, copy.data};
    MDB_val cv = {v.mv_size, copy.data + k.mv_size};
    if ((rc = mdb_cursor_put(lc, &ck, &cv, MDB_APPEND))) break;
  }
  jb__buf_free(&copy);
  mdb_cursor_close(lc);
  mdb_cursor_close(tc);
  if (rc == MDB_KEYEXIST) rc = MDB_CORRUPTED; /* a tail key not above log's */
  if (rc != MDB_NOTFOUND) return rc;
  return mdb_drop(txn, s->logtail, 0);
}

int jb__log_open_for(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                     size_t expect) {
  if (expect < JB_LOGTAIL_MOVE) return jb__log_open(s, txn, lw);
  /* The tail would only be moved again, event by event: what it holds
   * goes to `log` first, then this writer appends there itself. */
  MDB_stat ts;
  int rc = mdb_stat(txn, s->logtail, &ts);
  if (rc == 0 && ts.ms_entries > 0) rc = move_tail(s, txn);
  if (rc || (rc = mdb_cursor_open(txn, s->log, &lw->cur))) return rc;
  lw->now_us = 0;
  memset(lw->counts, 0, sizeof lw->counts);
  rc = jb__log_next(s, txn, lw->cur, &lw->next);
  lw->first_new = lw->next;
  if (rc) mdb_cursor_close(lw->cur);
  return rc;
}

int jb__log_trim(jb_store *s, MDB_txn *txn, int64_t now_us,
                 uint64_t appended) {
  MDB_stat st, ts;
  int rc = mdb_stat(txn, s->log, &st);
  if (rc || (rc = mdb_stat(txn, s->logtail, &ts))) return rc;
  size_t n = st.ms_entries + ts.ms_entries;
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
  /* Trimming takes from the front of `log`: the tail goes there first. */
  /* Progress events carry messages: a tail of them may outgrow its page
   * before it holds JB_LOGTAIL_MOVE events, and a tail of two levels
   * would cost every append a page more. */
  if (ts.ms_entries >= JB_LOGTAIL_MOVE || ts.ms_depth > 1 || by_size > 0 ||
      by_age) {
    if ((rc = move_tail(s, txn))) return rc;
  }
  if (by_size == 0 && !by_age) return 0;
  int64_t cutoff = now_us - s->log_max_age_us; /* older than this: too old */
  MDB_cursor *cur;
  if ((rc = mdb_cursor_open(txn, s->log, &cur))) return rc;
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
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* -------------------------------------------------------------- reading */

/* The extent of the log as `txn` sees it: `log`, then `logtail`. */
int jb__log_bounds_txn(jb_store *s, MDB_txn *txn, uint64_t *first,
                       uint64_t *next) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->logtail, &cur);
  if (rc) return rc;
  rc = jb__log_next(s, txn, cur, next);
  mdb_cursor_close(cur);
  *first = *next;
  bool found = false;
  for (int t = 0; rc == 0 && t < 2 && !found; t++) {
    if ((rc = mdb_cursor_open(txn, t == 0 ? s->log : s->logtail, &cur)))
      break;
    rc = end_seq(cur, MDB_FIRST, &found, first);
    mdb_cursor_close(cur);
  }
  if (rc == 0 && !found) *first = *next;
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
  return jb__log_bounds_txn(s, txn, &ctx->first, &ctx->next);
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
       v->mv_size != jb__eventrec_len(&ev) || ev.owner_len > JB_WHO_MAX ||
           ev.type < JB_EV_POSTED || ev.type > JB_EV_LAST ||
           ev.priority > JB_PRIORITY_VERY_HIGH ||
           (ev.type != JB_EV_PROGRESS && (ev.permille || ev.msg_len)) ||
           ev.permille > 1000 || ev.msg_len > JB_PROGRESS_MESSAGE_MAX))
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
  int rc = jb__log_bounds_txn(s, txn, &ctx->first, &ctx->next);
  if (rc) return rc;
  if (ctx->from > ctx->next)
    return jb__err(JB_EINVAL, "board %s: change log: sequence %llu is "
                   "beyond its end (the next event will be %llu)", s->path,
                   (unsigned long long)ctx->from,
                   (unsigned long long)ctx->next);
  if (ctx->from < ctx->first)
    return jb__err(JB_ETRIMMED, "board %s: change log: event %llu is no "
                   "longer kept (trimmed); the log now starts at %llu",
                   s->path, (unsigned long long)ctx->from,
                   (unsigned long long)ctx->first);
  /* `log`, then the newer events of `logtail`. */
  for (int t = 0; rc == 0 && t < 2 && ctx->n < ctx->max &&
                  ctx->from + ctx->n < ctx->next;
       t++) {
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, t == 0 ? s->log : s->logtail, &cur)))
      break;
    uint8_t key[8];
    jb__put_be64(key, ctx->from + ctx->n);
    MDB_val k = {8, key}, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && ctx->n < ctx->max) {
      rc = decode(s, &k, &v, ctx->from + ctx->n, &ctx->out[ctx->n]);
      if (rc) break;
      ctx->n++;
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) rc = 0;
  }
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

typedef struct {
  uint64_t seq;
  unsigned permille;
  char *msg;      /* JB_PROGRESS_MESSAGE_MAX + 1 bytes */
} progress_ctx;

static int progress_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  progress_ctx *ctx = vctx;
  (void)status;
  uint64_t first, next;
  int rc = jb__log_bounds_txn(s, txn, &first, &next);
  if (rc) return rc;
  if (ctx->seq < first)
    return jb__err(JB_ETRIMMED, "board %s: change log: event %llu is no "
                   "longer kept (trimmed); the log now starts at %llu",
                   s->path, (unsigned long long)ctx->seq,
                   (unsigned long long)first);
  if (ctx->seq == 0 || ctx->seq >= next)
    return jb__err(JB_ENOTFOUND, "board %s: change log: no event %llu (the "
                   "next will be %llu)", s->path,
                   (unsigned long long)ctx->seq, (unsigned long long)next);
  uint8_t key[8];
  jb__put_be64(key, ctx->seq);
  MDB_val k = {8, key}, v;
  rc = mdb_get(txn, s->log, &k, &v);
  if (rc == MDB_NOTFOUND) rc = mdb_get(txn, s->logtail, &k, &v);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  jb_event e;
  if ((rc = decode(s, &k, &v, ctx->seq, &e))) return rc;
  jb_eventrec ev;
  memcpy(&ev, v.mv_data, sizeof ev);
  if (ev.type != JB_EV_PROGRESS)
    return jb__err(JB_ENOTFOUND, "board %s: change log: event %llu is not a "
                   "progress event", s->path, (unsigned long long)ctx->seq);
  ctx->permille = ev.permille;
  memcpy(ctx->msg, (const uint8_t *)v.mv_data + sizeof ev + ev.owner_len,
         ev.msg_len);
  ctx->msg[ev.msg_len] = '\0';
  return 0;
}

int jb__store_log_progress(jb_store *s, uint64_t seq, unsigned *permille,
                           char *msg) {
  progress_ctx ctx = {.seq = seq, .msg = msg};
  int rc = jb__store_read(s, progress_body, &ctx);
  *permille = ctx.permille;
  return rc;
}

void jb__store_options(const jb_store *s, jb_board_options *o) {
  *o = (jb_board_options)JB_BOARD_OPTIONS_INIT;
  o->durability = s->durability;
  o->log_keep = s->log_keep;
  o->log_max_age_ms = s->log_max_age_us / 1000;
}
