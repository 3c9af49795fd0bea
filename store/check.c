/*
 * check.c - verify a board's invariants (store.h) and quarantine postings
 * that do not decode. One write transaction: the quarantine moves commit
 * together, or not at all. Report lines are gathered in memory and handed
 * out after the commit, so no I/O happens under the writer lock.
 */
#include "txn.h"
#include "core/posting.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  jb_check_stats *st;
  jb_buf *report;
  jb_job job; /* scratch for decoding */
} check_ctx;

static void note(check_ctx *ctx, bool problem, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(check_ctx *ctx, bool problem, const char *fmt, ...) {
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (problem) ctx->st->problems++;
  jb__buf_append(ctx->report, line, strlen(line) + 1);
}

static void key_text(char *out, const uint8_t key[JB_JOBKEY_LEN]) {
  sprintf(out, "%s/%llu", jb_priority_name(jb__jobkey_priority(key))
                              ? jb_priority_name(jb__jobkey_priority(key))
                              : "?",
          (unsigned long long)jb__jobkey_seq(key));
}

/* Move jobs[key] (value v) to quarantine with `why`, and drop every index
 * entry that points at it. */
static int quarantine_job(jb_store *s, MDB_txn *txn, MDB_cursor *cur,
                          const MDB_val *k, const MDB_val *v, const char *why,
                          const uint8_t *uuid) {
  uint8_t qkey[1 + JB_JOBKEY_LEN];
  qkey[0] = 'j';
  memcpy(qkey + 1, k->mv_data, JB_JOBKEY_LEN);
  size_t wlen = strlen(why);
  MDB_val qk = {sizeof qkey, qkey};
  MDB_val qv = {sizeof(jb_quarrec) + wlen + v->mv_size, NULL};
  int rc = mdb_put(txn, s->quarantine, &qk, &qv, MDB_RESERVE);
  if (rc) return rc;
  jb_quarrec q = {.quarantined_us = jb__now_us(), .reason_len = (uint16_t)wlen};
  uint8_t *d = qv.mv_data;
  memcpy(d, &q, sizeof q);
  memcpy(d + sizeof q, why, wlen);
  memcpy(d + sizeof q + wlen, v->mv_data, v->mv_size);
  MDB_val jk = {JB_JOBKEY_LEN, k->mv_data};
  mdb_del(txn, s->ready, &jk, NULL);
  mdb_del(txn, s->claims, &jk, NULL);
  if (uuid) {
    MDB_val uk = {16, (void *)uuid}, uv;
    if (mdb_get(txn, s->uuids, &uk, &uv) == 0 && uv.mv_size == JB_JOBKEY_LEN &&
        memcmp(uv.mv_data, k->mv_data, JB_JOBKEY_LEN) == 0)
      mdb_del(txn, s->uuids, &uk, NULL);
  }
  return mdb_cursor_del(cur, 0);
}

static int check_jobs(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                      uint64_t next_seq) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->jobs, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    char kt[48];
    if (k.mv_size != JB_JOBKEY_LEN) {
      note(ctx, true, "jobs: a key of %zu bytes is not a job key", k.mv_size);
      continue;
    }
    key_text(kt, k.mv_data);
    if (v.mv_size < sizeof(jb_jobhdr)) {
      if ((rc = quarantine_job(s, txn, cur, &k, &v, "record shorter than its header", NULL)))
        break;
      ctx->st->moved++;
      note(ctx, true, "job %s: record too short: moved to quarantine", kt);
      continue;
    }
    jb_jobhdr h;
    memcpy(&h, v.mv_data, sizeof h);
    char ut[JB_UUID_STRLEN];
    jb__uuid_format(ut, h.uuid);
    jb_job_raw raw = {.uuid = h.uuid,
                      .priority = jb__jobkey_priority(k.mv_data),
                      .sequence = jb__jobkey_seq(k.mv_data),
                      .posting = (uint8_t *)v.mv_data + sizeof h,
                      .posting_len = v.mv_size - sizeof h};
    int dr = jb__job_load(&ctx->job, &raw);
    if (dr == JB_ECORRUPT) {
      const char *why = jb_errmsg();
      if ((rc = quarantine_job(s, txn, cur, &k, &v, why, h.uuid))) break;
      ctx->st->moved++;
      note(ctx, true, "moved to quarantine: %s", why);
      continue;
    }
    if (dr != JB_OK) {
      rc = dr;
      break;
    }
    ctx->st->jobs++;
    if (jb__jobkey_seq(k.mv_data) >= next_seq)
      note(ctx, true, "job %s: sequence %llu is not below the board's next "
           "sequence %llu", ut, (unsigned long long)jb__jobkey_seq(k.mv_data),
           (unsigned long long)next_seq);
    MDB_val uk = {16, h.uuid}, uv;
    int u = mdb_get(txn, s->uuids, &uk, &uv);
    if (u != 0 || uv.mv_size != JB_JOBKEY_LEN ||
        memcmp(uv.mv_data, k.mv_data, JB_JOBKEY_LEN) != 0)
      note(ctx, true, "job %s: the uuid index does not point at it", ut);
    MDB_val jk = {JB_JOBKEY_LEN, k.mv_data}, tmp;
    bool ready = mdb_get(txn, s->ready, &jk, &tmp) == 0;
    if (ready && (tmp.mv_size != sizeof(jb_readyrec) ||
                  memcmp(tmp.mv_data, h.uuid, 16) != 0))
      note(ctx, true, "job %s: its ready entry names another uuid", ut);
    bool claimed = mdb_get(txn, s->claims, &jk, &tmp) == 0;
    if (claimed) {
      jb_claimrec cr;
      if (tmp.mv_size < sizeof cr ||
          (memcpy(&cr, tmp.mv_data, sizeof cr),
           tmp.mv_size != sizeof cr + cr.owner_len || cr.owner_len == 0))
        note(ctx, true, "job %s: its claim record is malformed", ut);
    }
    if (ready && claimed)
      note(ctx, true, "job %s: both ready and claimed", ut);
    else if (!ready && !claimed)
      note(ctx, true, "job %s: neither ready nor claimed (unreachable)", ut);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every entry of an index keyed by jobkey must point at a job. */
static int check_index(jb_store *s, MDB_txn *txn, check_ctx *ctx, MDB_dbi dbi,
                       const char *name, size_t *count) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, dbi, &cur);
  if (rc) return rc;
  MDB_val k, v, jv;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    (*count)++;
    if (k.mv_size != JB_JOBKEY_LEN || mdb_get(txn, s->jobs, &k, &jv) != 0) {
      char kt[48] = "?";
      if (k.mv_size == JB_JOBKEY_LEN) key_text(kt, k.mv_data);
      note(ctx, true, "%s: entry %s points at no job", name, kt);
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int check_uuids(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->uuids, &cur);
  if (rc) return rc;
  MDB_val k, v, jv;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    char ut[JB_UUID_STRLEN] = "?";
    if (k.mv_size == 16) jb__uuid_format(ut, k.mv_data);
    if (k.mv_size != 16 || v.mv_size != JB_JOBKEY_LEN ||
        mdb_get(txn, s->jobs, &v, &jv) != 0 || jv.mv_size < sizeof(jb_jobhdr) ||
        memcmp((uint8_t *)jv.mv_data + offsetof(jb_jobhdr, uuid), k.mv_data, 16) != 0)
      note(ctx, true, "uuids: entry %s points at no job with that uuid", ut);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int check_log(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->log, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    ctx->st->log_events++;
    jb_eventrec ev;
    if (k.mv_size != 8 || v.mv_size < sizeof ev ||
        (memcpy(&ev, v.mv_data, sizeof ev),
         v.mv_size != sizeof ev + ev.owner_len || ev.type < JB_EV_POSTED ||
             ev.type > JB_EV_TRASHED))
      note(ctx, true, "log: event %zu is malformed", ctx->st->log_events);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int check_quarantine(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->quarantine, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    ctx->st->quarantined++;
    jb_quarrec q;
    if (v.mv_size < sizeof q) continue;
    memcpy(&q, v.mv_data, sizeof q);
    int rl = q.reason_len <= v.mv_size - sizeof q ? q.reason_len : 0;
    note(ctx, false, "quarantined: %.*s (%zu bytes kept)", rl,
         (char *)v.mv_data + sizeof q, v.mv_size - sizeof q - (size_t)rl);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int check_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  check_ctx *ctx = vctx;
  (void)status;
  /* The body may run again after the map grows: start from zero. */
  memset(ctx->st, 0, sizeof *ctx->st);
  ctx->report->len = 0;
  uint64_t next_seq;
  MDB_val ck = {8, "next_seq"}, cv;
  int rc = mdb_get(txn, s->meta, &ck, &cv);
  if (rc) return rc;
  if (cv.mv_size != sizeof next_seq) {
    note(ctx, true, "meta: next_seq record has %zu bytes", cv.mv_size);
    return 0;
  }
  memcpy(&next_seq, cv.mv_data, sizeof next_seq);
  if ((rc = check_jobs(s, txn, ctx, next_seq))) return rc;
  if ((rc = check_index(s, txn, ctx, s->ready, "ready", &ctx->st->ready))) return rc;
  if ((rc = check_index(s, txn, ctx, s->claims, "claims", &ctx->st->claimed))) return rc;
  if ((rc = check_uuids(s, txn, ctx))) return rc;
  MDB_stat st;
  if ((rc = mdb_stat(txn, s->uuids, &st))) return rc;
  if (st.ms_entries != ctx->st->jobs)
    note(ctx, true, "uuids: %zu entries for %zu jobs", st.ms_entries, ctx->st->jobs);
  if (ctx->st->ready + ctx->st->claimed != ctx->st->jobs)
    note(ctx, true, "counts: %zu ready + %zu claimed != %zu jobs",
         ctx->st->ready, ctx->st->claimed, ctx->st->jobs);
  if ((rc = mdb_stat(txn, s->trash, &st))) return rc;
  ctx->st->trashed = st.ms_entries;
  if ((rc = check_log(s, txn, ctx))) return rc;
  return check_quarantine(s, txn, ctx);
}

int jb__store_check(jb_store *s, jb_check_stats *stats, jb_buf *report) {
  check_ctx ctx = {.st = stats, .report = report};
  int rc = jb__store_write(s, check_body, &ctx);
  jb__job_clear(&ctx.job);
  if (rc != JB_OK) return rc;
  if (stats->problems || stats->moved)
    return jb__err(JB_ECORRUPT, "board %s: %zu problem(s) found, %zu posting(s) "
                   "moved to quarantine", s->path, stats->problems, stats->moved);
  return JB_OK;
}
