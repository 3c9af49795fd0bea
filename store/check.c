/*
 * check.c - verify a board's invariants (store.h) and quarantine postings
 * that do not decode. The check runs in a read transaction, so a board
 * of any size is checked without holding up its writers. Only when a
 * posting must move does it run again as one write transaction: the
 * quarantine moves commit together, or not at all. Report lines are
 * gathered in memory and handed out after the commit, so no I/O happens
 * under the writer lock.
 */
#include "txn.h"
#include "history.h"
#include "life.h"
#include "names.h"
#include "codec/posting.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  jb_check_stats *st;
  jb_buf *report;
  jb_job job;       /* scratch for decoding */
  bool read_only;   /* in a read transaction: moves nothing */
  bool needs_write; /* (read-only) a posting must move: run again to write */
  const jb_hist_bounds *hist; /* for the history records of moved jobs */
  /* The page accounting (pagecheck.c), done in the read transaction only
   * (a write transaction's snapshot has no meta page yet): its lines are
   * kept apart so that a second, writing run does not drop them. */
  jb_buf pages;
  size_t page_problems;
  bool pages_done;
  bool unreadable; /* a page LMDB would trip on: no LMDB walk */
  bool skip_pages; /* the meta page could not be found: LMDB's walk only */
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

/* Does index `dbi` hold `jobkey` for job `uuid`? (Both record types
 * start with the uuid.) */
static bool index_names(MDB_txn *txn, MDB_dbi dbi, const uint8_t *jobkey,
                        const uint8_t uuid[16], size_t minsize) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
  return mdb_get(txn, dbi, &k, &v) == 0 && v.mv_size >= minsize &&
         memcmp(v.mv_data, uuid, 16) == 0;
}

int jb__quarantine_put(jb_store *s, MDB_txn *txn, uint8_t table,
                       const uint8_t uuid[16], const char *why,
                       const void *value, size_t value_len, int64_t now_us,
                       unsigned flags) {
  uint8_t qkey[1 + 16];
  qkey[0] = table;
  memcpy(qkey + 1, uuid, 16);
  size_t wlen = strlen(why);
  if (wlen > UINT16_MAX) wlen = UINT16_MAX;
  MDB_val qk = {sizeof qkey, qkey};
  MDB_val qv = {sizeof(jb_quarrec) + wlen + value_len, NULL};
  int rc = mdb_put(txn, s->quarantine, &qk, &qv, MDB_RESERVE | flags);
  if (rc) return rc;
  jb_quarrec q = {.quarantined_us = now_us, .reason_len = (uint16_t)wlen};
  uint8_t *d = qv.mv_data;
  memcpy(d, &q, sizeof q);
  memcpy(d + sizeof q, why, wlen);
  if (value_len) memcpy(d + sizeof q + wlen, value, value_len);
  return 0;
}

/* Move jobs[uuid] (value v) to quarantine with `why`, and drop the index
 * entries that point at it. The cursor moves to the next job. */
/* The history record of a job check moves to quarantine: it reached
 * COMPLETE, revoked, with `why`. Written before anything else changes, so
 * `v` and the claim record may still be read from their pages. */
static int revoke_history(jb_store *s, MDB_txn *txn, const MDB_val *k,
                          const MDB_val *v, const char *why,
                          const jb_hist_bounds *hist) {
  jb_hist_entry e = {.rec = {.end = JB_END_REVOKED,
                             .priority = JB_HIST_PRIORITY_UNKNOWN,
                             .completed_us = jb__now_us()},
                     .reason = why, .reason_len = strlen(why)};
  memcpy(e.rec.uuid, k->mv_data, 16);
  char owner[JB_WHO_MAX], name[JB_NAME_MAX];
  if (v->mv_size >= sizeof(jb_jobhdr)) {
    jb_jobhdr h;
    memcpy(&h, v->mv_data, sizeof h);
    e.rec.priority = (uint8_t)jb__jobkey_priority(h.jobkey);
    e.rec.job_seq = jb__jobkey_seq(h.jobkey);
    e.rec.posted_us = h.posted_us;
    const char *np;
    if (jb__history_posting_name((uint8_t *)v->mv_data + sizeof h,
                                 v->mv_size - sizeof h, &np, &e.name_len)) {
      memcpy(name, np, e.name_len);
      e.name = name;
    }
    MDB_val jk = {JB_JOBKEY_LEN, h.jobkey}, cv;
    jb_claimrec cr;
    if (mdb_get(txn, s->claims, &jk, &cv) == 0 && cv.mv_size >= sizeof cr &&
        (memcpy(&cr, cv.mv_data, sizeof cr), cr.format == 2) &&
        memcmp(cr.uuid, k->mv_data, 16) == 0 &&
        cv.mv_size == sizeof cr + cr.owner_len && cr.owner_len <= JB_WHO_MAX) {
      memcpy(owner, (uint8_t *)cv.mv_data + sizeof cr, cr.owner_len);
      e.owner = owner;
      e.owner_len = cr.owner_len;
      e.rec.claimed_us = cr.claimed_us;
    }
  }
  return jb__history_put(s, txn, &e, hist, e.rec.completed_us);
}

static int quarantine_job(jb_store *s, MDB_txn *txn, MDB_cursor *cur,
                          const MDB_val *k, const MDB_val *v, const char *why,
                          const jb_hist_bounds *hist) {
  int rc = revoke_history(s, txn, k, v, why, hist);
  if (rc) return rc;
  if ((rc = jb__quarantine_put(s, txn, 'j', k->mv_data, why, v->mv_data,
                                v->mv_size, jb__now_us(), 0)))
    return rc;
  /* The change log says the job left the board (REVOKED), with the owner
   * of its claim if it had one; the owner is copied before the claim
   * record goes. */
  uint8_t jobkey[JB_JOBKEY_LEN] = {0};
  char owner[JB_WHO_MAX];
  size_t owner_len = 0;
  if (v->mv_size >= sizeof(jb_jobhdr)) {
    jb_jobhdr h;
    memcpy(&h, v->mv_data, sizeof h);
    memcpy(jobkey, h.jobkey, sizeof jobkey);
    MDB_val jk = {JB_JOBKEY_LEN, h.jobkey};
    if (index_names(txn, s->ready, h.jobkey, k->mv_data, sizeof(jb_readyrec)))
      jb__ready_remove(s, txn, h.jobkey, jb__hdr_lane(&h));
    if (index_names(txn, s->delayed, h.jobkey, k->mv_data,
                    sizeof(jb_delayrec))) {
      jb_delayrec dr;
      if ((rc = jb__delay_del(s, txn, h.jobkey, &dr))) return rc;
    }
    jb_jobx x;
    if ((rc = jb__jobx_drop(s, txn, k->mv_data, &x))) return rc;
    if (index_names(txn, s->claims, h.jobkey, k->mv_data, sizeof(jb_claimrec))) {
      MDB_val cv;
      jb_claimrec cr;
      if ((rc = mdb_get(txn, s->claims, &jk, &cv))) return rc;
      memcpy(&cr, cv.mv_data, sizeof cr);
      size_t at = cr.format == 2 ? sizeof cr : sizeof(jb_claimrec_v1);
      if (cr.owner_len <= sizeof owner && cv.mv_size >= at + cr.owner_len) {
        owner_len = cr.owner_len;
        memcpy(owner, (const uint8_t *)cv.mv_data + at, owner_len);
      }
      if (cr.format == 2) {
        if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &cr))) return rc;
      } else if ((rc = mdb_del(txn, s->claims, &jk, NULL))) {
        return rc;
      }
    }
  }
  if ((rc = jb__log_event(s, txn, JB_EV_REVOKED, k->mv_data, jobkey, owner,
                          owner_len, jb__now_us())))
    return rc;
  return mdb_cursor_del(cur, 0);
}

static bool claim_indexed(jb_store *s, MDB_txn *txn, const jb_claimrec *cr,
                          const uint8_t *jobkey);

static int check_jobs(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                      uint64_t next_seq) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->jobs, &cur);
  if (rc) return rc;
  MDB_val k, v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  while (rc == 0) {
    if (k.mv_size != 16) {
      note(ctx, true, "jobs: a key of %zu bytes is not a uuid", k.mv_size);
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      continue;
    }
    char ut[JB_UUID_STRLEN];
    jb__uuid_format(ut, k.mv_data);
    const char *why = NULL;
    char whybuf[600];
    jb_jobhdr h;
    if (v.mv_size < sizeof h) {
      snprintf(whybuf, sizeof whybuf, "job %s: record shorter than its header", ut);
      why = whybuf;
    } else {
      memcpy(&h, v.mv_data, sizeof h);
      jb_job_raw raw = {.uuid = k.mv_data,
                        .priority = jb__jobkey_priority(h.jobkey),
                        .sequence = jb__jobkey_seq(h.jobkey),
                        .remote = (h.flags & JB_JOB_F_REMOTE) != 0,
                        .posting = (uint8_t *)v.mv_data + sizeof h,
                        .posting_len = v.mv_size - sizeof h};
      int dr = jb__job_load(&ctx->job, &raw);
      if (dr == JB_ECORRUPT) {
        snprintf(whybuf, sizeof whybuf, "%s", jb_errmsg());
        why = whybuf;
      } else if (dr != JB_OK) {
        rc = dr;
        break;
      }
    }
    if (why && ctx->read_only && s->readonly) {
      /* Nothing can move on a board opened read-only: report it. */
      note(ctx, true, "%s (a check with write access moves it to "
           "quarantine)", why);
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      continue;
    }
    if (why && ctx->read_only) {
      ctx->needs_write = true;
      break;
    }
    if (why) {
      /* quarantine_job deletes the record: the cursor is on the next. */
      uint8_t at[16];
      memcpy(at, k.mv_data, 16);
      if ((rc = quarantine_job(s, txn, cur, &k, &v, why, ctx->hist))) break;
      ctx->st->moved++;
      note(ctx, true, "moved to quarantine: %s", why);
      /* On to the job after it (there may be none: it was the last). */
      k = (MDB_val){16, at};
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
      continue;
    }
    ctx->st->jobs++;
    bool remote_band = jb__jobkey_is_remote(h.jobkey);
    if (!remote_band && jb__jobkey_seq(h.jobkey) >= next_seq)
      note(ctx, true, "job %s: sequence %llu is not below the next sequence "
           "%llu", ut, (unsigned long long)jb__jobkey_seq(h.jobkey),
           (unsigned long long)next_seq);
    /* A job marked for publication may be in either band (a job published
     * again after Redis lost its data keeps its Redis-band key until the
     * new number is confirmed). */
    bool remote = (h.flags & JB_JOB_F_REMOTE) != 0;
    bool publishing = remote && (h.flags & JB_JOB_F_PUBLISHING);
    if (!publishing && remote_band != remote)
      note(ctx, true, "job %s: keyed in the %s band but %s (store.h: "
           "jobkeys)", ut, remote_band ? "Redis" : "local",
           remote ? "decided by Redis" : "decided here");
    bool ready = index_names(txn, s->ready, h.jobkey, k.mv_data, sizeof(jb_readyrec));
    bool delayed = index_names(txn, s->delayed, h.jobkey, k.mv_data,
                               sizeof(jb_delayrec));
    if (delayed) {
      jb_delayrec dr;
      uint8_t dk[JB_DUEKEY_LEN];
      MDB_val dv;
      if (jb__delay_get(s, txn, h.jobkey, &dr) == 0) {
        jb__due_key(dk, dr.due_us, h.jobkey);
        MDB_val dkv = {sizeof dk, dk};
        if (mdb_get(txn, s->due, &dkv, &dv) != 0)
          note(ctx, true, "job %s: delayed, but its due time is not indexed",
               ut);
      } else {
        note(ctx, true, "job %s: its delayed record is malformed", ut);
      }
      if (ready) note(ctx, true, "job %s: both ready and delayed", ut);
      ready = true; /* in one of the indexes, for the checks below */
    }
    if (h.flags & JB_JOB_F_X) {
      MDB_val xk = {16, k.mv_data}, xv;
      if (mdb_get(txn, s->jobx, &xk, &xv) != 0)
        note(ctx, true, "job %s: posted with options, but has no jobx "
             "record", ut);
    }
    bool claimed = index_names(txn, s->claims, h.jobkey, k.mv_data, sizeof(jb_claimrec));
    if (claimed) {
      MDB_val jk = {JB_JOBKEY_LEN, h.jobkey}, tmp;
      jb_claimrec cr;
      mdb_get(txn, s->claims, &jk, &tmp);
      memcpy(&cr, tmp.mv_data, sizeof cr);
      if (tmp.mv_size != sizeof cr + cr.owner_len || cr.owner_len == 0 ||
          cr.format != 2)
        note(ctx, true, "job %s: its claim record is malformed", ut);
      else if (!claim_indexed(s, txn, &cr, h.jobkey))
        note(ctx, true, "job %s: its claim's lease or holder is not indexed",
             ut);
    }
    if (ready && claimed)
      note(ctx, true, "job %s: both ready and claimed", ut);
    else if (!ready && !claimed)
      note(ctx, true, "job %s: neither ready nor claimed (unreachable)", ut);
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Does each index the claim's flags call for hold its entry? */
static bool claim_indexed(jb_store *s, MDB_txn *txn, const jb_claimrec *cr,
                          const uint8_t *jobkey) {
  MDB_val v;
  if (cr->flags & JB_CLAIM_F_LEASE) {
    uint8_t k[JB_LEASEKEY_LEN];
    jb__lease_key(k, cr, jobkey);
    MDB_val kv = {sizeof k, k};
    if (mdb_get(txn, s->leases, &kv, &v) != 0) return false;
  }
  if (cr->flags & JB_CLAIM_F_BOUND) {
    uint8_t k[JB_HOLDERKEY_LEN];
    jb__holder_key(k, cr, jobkey);
    MDB_val kv = {sizeof k, k};
    if (mdb_get(txn, s->holders, &kv, &v) != 0) return false;
  }
  return true;
}

/* Every `leases` / `holders` entry must be the one its claim calls for. */
static int check_claim_index(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                             bool leases) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, leases ? s->leases : s->holders, &cur);
  if (rc) return rc;
  size_t klen = leases ? JB_LEASEKEY_LEN : JB_HOLDERKEY_LEN;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    bool ok = k.mv_size == klen;
    if (ok) {
      const uint8_t *jobkey = (const uint8_t *)k.mv_data + klen - JB_JOBKEY_LEN;
      MDB_val ck = {JB_JOBKEY_LEN, (void *)jobkey}, cv;
      jb_claimrec cr;
      ok = mdb_get(txn, s->claims, &ck, &cv) == 0 && cv.mv_size >= sizeof cr;
      if (ok) {
        memcpy(&cr, cv.mv_data, sizeof cr);
        uint8_t want[JB_HOLDERKEY_LEN];
        if (leases)
          jb__lease_key(want, &cr, jobkey);
        else
          jb__holder_key(want, &cr, jobkey);
        ok = (cr.flags & (leases ? JB_CLAIM_F_LEASE : JB_CLAIM_F_BOUND)) &&
             memcmp(want, k.mv_data, klen) == 0;
      }
    }
    if (!ok)
      note(ctx, true, "%s: an entry points at no claim that has it",
           leases ? "leases" : "holders");
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every entry of an index keyed by jobkey must belong to a job whose header
 * names that jobkey. */
static int check_index(jb_store *s, MDB_txn *txn, check_ctx *ctx, MDB_dbi dbi,
                       const char *name, size_t minsize, size_t *count) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, dbi, &cur);
  if (rc) return rc;
  MDB_val k, v, jv;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    (*count)++;
    char kt[48] = "?";
    if (k.mv_size == JB_JOBKEY_LEN) key_text(kt, k.mv_data);
    bool ok = k.mv_size == JB_JOBKEY_LEN && v.mv_size >= minsize;
    if (ok) {
      MDB_val uk = {16, v.mv_data};
      ok = mdb_get(txn, s->jobs, &uk, &jv) == 0 &&
           jv.mv_size >= sizeof(jb_jobhdr) &&
           memcmp((uint8_t *)jv.mv_data + offsetof(jb_jobhdr, jobkey),
                  k.mv_data, JB_JOBKEY_LEN) == 0;
    }
    if (!ok) note(ctx, true, "%s: entry %s points at no job", name, kt);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Schema 10 (names.h): every `byname` entry names a ready job under its
 * own jobkey and its name's lane, and there are as many as ready jobs. */
static int check_byname(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                        size_t ready) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->byname, &cur);
  if (rc) return rc;
  MDB_val k, v, jv, rv;
  size_t n = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    n++;
    char kt[48] = "?";
    if (k.mv_size == JB_BYNAME_KEY_LEN)
      key_text(kt, (const uint8_t *)k.mv_data + 4);
    if (k.mv_size != JB_BYNAME_KEY_LEN || v.mv_size != 16) {
      note(ctx, true, "byname: a malformed entry");
      continue;
    }
    const uint8_t *jobkey = (const uint8_t *)k.mv_data + 4;
    MDB_val uk = {16, v.mv_data}, rk = {JB_JOBKEY_LEN, (void *)jobkey};
    jb_jobhdr h;
    if (mdb_get(txn, s->jobs, &uk, &jv) != 0 || jv.mv_size < sizeof h) {
      note(ctx, true, "byname: entry %s points at no job", kt);
      continue;
    }
    memcpy(&h, jv.mv_data, sizeof h);
    uint32_t lane = jb__posting_lane((uint8_t *)jv.mv_data + sizeof h,
                                     jv.mv_size - sizeof h);
    if (memcmp(h.jobkey, jobkey, JB_JOBKEY_LEN) != 0 ||
        jb__hdr_lane(&h) != jb__be32(k.mv_data) || lane != jb__hdr_lane(&h))
      note(ctx, true, "byname: entry %s does not match its job's key or "
           "name", kt);
    else if (mdb_get(txn, s->ready, &rk, &rv) != 0 || rv.mv_size < 16 ||
             memcmp(rv.mv_data, v.mv_data, 16) != 0)
      note(ctx, true, "byname: entry %s names a job that is not ready", kt);
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  if (n != ready)
    note(ctx, true, "counts: %zu byname entries != %zu ready", n, ready);
  return 0;
}

/* The `queues` entries (names.h): each parses, sits under its name's
 * lane and holds known flags; a capped name's held count is its claims
 * now (claim-next trusts it: a count too high starves the name, too low
 * lets more run than the cap); a name without a cap (a rate limit) of
 * its own has its longest capped (rate-limited) prefix's; the meta record
 * counts the names with a control; a rate limit is well formed (format 2
 * exactly with the flag, a rate above 0, a period within bounds, a
 * prefix's only with the flag). */
typedef struct {
  jb_store *s;
  MDB_txn *txn;
  check_ctx *ctx;
  uint32_t controlled;
} queues_check;

static int check_queue_entry(void *arg, uint32_t lane, const char *name,
                             size_t len, const jb_queueent *e) {
  const jb_queuerec *q = &e->q;
  queues_check *qc = arg;
  int shown = (int)(len > 200 ? 200 : len);
  if (jb__lane(name, len) != lane)
    note(qc->ctx, true, "queues: the name '%.*s' is kept under lane %08x, "
         "not its own %08x", shown, name, lane, jb__lane(name, len));
  if (q->flags & ~JB_QUEUE_F_ALL)
    note(qc->ctx, true, "queues: the name '%.*s' has unknown flags 0x%02x",
         shown, name, q->flags);
  if (q->flags) qc->controlled++;
  /* A name without a cap (a rate limit) of its own has its prefix's, if
   * any. */
  uint32_t each, each_rate;
  uint64_t each_period;
  int rc = jb__queue_each_of(qc->s, qc->txn, JB_EACH_CAP, name, len, &each,
                             NULL);
  if (rc == 0)
    rc = jb__queue_each_of(qc->s, qc->txn, JB_EACH_RATE, name, len,
                           &each_rate, &each_period);
  if (rc) return rc;
  bool rated = (q->flags & JB_QUEUE_F_RATED) != 0;
  bool rate_each = (q->flags & JB_QUEUE_F_RATE_EACH) != 0;
  if (!(rated && !rate_each) &&
      (each_rate ? !rate_each || q->rate != each_rate ||
                       e->r.period_ms != each_period
                 : rate_each))
    note(qc->ctx, true, "queues: the name '%.*s' has %s rate limit %u per "
         "%llu ms, but its rate-limited prefixes give it %u per %llu ms",
         shown, name, rate_each ? "a prefix's" : "no",
         rated ? q->rate : 0,
         (unsigned long long)(rated ? e->r.period_ms : 0), each_rate,
         (unsigned long long)each_period);
  bool own = (q->flags & JB_QUEUE_F_CAPPED) && !(q->flags & JB_QUEUE_F_CAP_EACH);
  if (!own && (each ? !(q->flags & JB_QUEUE_F_CAP_EACH) || q->cap != each
                    : (q->flags & JB_QUEUE_F_CAP_EACH) != 0))
    note(qc->ctx, true, "queues: the name '%.*s' has %s cap %u, but its "
         "capped prefixes give it %u", shown, name,
         (q->flags & JB_QUEUE_F_CAP_EACH) ? "a prefix's" : "no",
         (q->flags & JB_QUEUE_F_CAPPED) ? q->cap : 0, each);
  if ((q->flags & JB_QUEUE_F_CAP_EACH) && !(q->flags & JB_QUEUE_F_CAPPED))
    note(qc->ctx, true, "queues: the name '%.*s' has a prefix's cap but is "
         "not capped", shown, name);
  if (!(q->flags & JB_QUEUE_F_CAPPED)) return 0;
  uint32_t held;
  if ((rc = jb__queue_count_held(qc->s, qc->txn, lane, name, len, &held)))
    return rc;
  if (q->cap == 0)
    note(qc->ctx, true, "queues: the name '%.*s' is capped at 0", shown,
         name);
  if (held != q->held)
    note(qc->ctx, true, "queues: the name '%.*s' counts %u claim(s) held "
         "against its cap of %u, but %u are held", shown, name, q->held,
         q->cap, held);
  return 0;
}

static void check_queue_bad(void *arg, const void *key, size_t len) {
  queues_check *qc = arg;
  if (len != 4)
    note(qc->ctx, true, "queues: a key of %zu bytes (a lane is 4)", len);
  else
    note(qc->ctx, true, "queues: lane %08x holds bytes that are not a "
         "name's entry", jb__be32(key));
}

static int check_queues(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  queues_check qc = {.s = s, .txn = txn, .ctx = ctx};
  static const struct {
    jb_each_kind kind;
    const char *key, *what;
  } lists[] = {{JB_EACH_CAP, JB_CAPEACH_KEY, "capped"},
               {JB_EACH_RATE, JB_RATEEACH_KEY, "rate-limited"}};
  int rc = 0;
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
    MDB_val ck = {strlen(lists[i].key), (void *)lists[i].key}, cv;
    rc = mdb_get(txn, s->meta, &ck, &cv);
    if (rc && rc != MDB_NOTFOUND) return rc;
    if (rc == 0 && !jb__queue_each_valid(lists[i].kind, cv.mv_data,
                                         cv.mv_size))
      note(ctx, true, "queues: the prefixes %s for each name (meta %s) do "
           "not parse", lists[i].what, lists[i].key);
  }
  rc = jb__queue_walk_checked(s, txn, check_queue_entry, check_queue_bad,
                                  &qc);
  if (rc) return rc;
  uint32_t ctl;
  if ((rc = jb__queue_queuectl(s, txn, &ctl))) return rc;
  if ((ctl & ~JB_QUEUECTL_BOARD) != qc.controlled)
    note(ctx, true, "queues: the meta record %s counts %u name(s) with a "
         "control, the names hold %u", JB_QUEUECTL_KEY,
         ctl & ~JB_QUEUECTL_BOARD, qc.controlled);
  jb_queue_audit a;
  if ((rc = jb__queue_audit(s, txn, &a))) return rc;
  if (a.bad_rates)
    note(ctx, true, "queues: %zu names with a malformed rate limit",
         a.bad_rates);
  return 0;
}

/* Schema 8 (store.h "A job's life"): every `due` entry names a delayed
 * job under that due time (and there are as many as delayed jobs), every
 * jobx record belongs to a job on the board and decodes, and every
 * unique key names a job whose jobx record holds it. */
static int check_life(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                      size_t delayed) {
  MDB_cursor *cur;
  MDB_val k, v;
  size_t n_due = 0, n_deadlines = 0;
  int rc = mdb_cursor_open(txn, s->due, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    n_due++;
    jb_delayrec dr;
    if (k.mv_size != JB_DUEKEY_LEN ||
        jb__delay_get(s, txn, (const uint8_t *)k.mv_data + 8, &dr) != 0 ||
        (int64_t)jb__be64(k.mv_data) != dr.due_us)
      note(ctx, true, "due: an entry names no delayed job with that time");
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  if (n_due != delayed)
    note(ctx, true, "counts: %zu due entries != %zu delayed jobs", n_due,
         delayed);
  if ((rc = mdb_cursor_open(txn, s->jobx, &cur))) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    char ut[JB_UUID_STRLEN] = "?";
    if (k.mv_size == 16) jb__uuid_format(ut, k.mv_data);
    jb_jobx x;
    MDB_val jv;
    if (k.mv_size != 16 || jb__jobx_decode(&x, v.mv_data, v.mv_size) != 0)
      note(ctx, true, "jobx: the record of %s does not decode", ut);
    else if (mdb_get(txn, s->jobs, &k, &jv) != 0)
      note(ctx, true, "jobx: the record of %s names no job on the board", ut);
    else if (x.snz.deadline_us) {
      /* Schema 11: a job with a deadline to start has its entry. */
      uint8_t ek[24];
      jb__put_be64(ek, (uint64_t)x.snz.deadline_us);
      memcpy(ek + 8, k.mv_data, 16);
      MDB_val ekv = {sizeof ek, ek}, ev;
      n_deadlines++;
      if (mdb_get(txn, s->expiry, &ekv, &ev) != 0)
        note(ctx, true, "expiry: job %s has a deadline to start but no "
             "entry", ut);
    }
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  /* Every `expiry` entry names a job whose record has that deadline. */
  size_t n_expiry = 0;
  if ((rc = mdb_cursor_open(txn, s->expiry, &cur))) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    n_expiry++;
    jb_jobx x;
    if (k.mv_size != 24 ||
        jb__jobx_get(s, txn, (const uint8_t *)k.mv_data + 8, &x) != 0 ||
        x.snz.deadline_us != (int64_t)jb__be64(k.mv_data))
      note(ctx, true, "expiry: an entry names no job with that deadline");
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  if (n_expiry != n_deadlines)
    note(ctx, true, "counts: %zu expiry entries != %zu jobs with a "
         "deadline to start", n_expiry, n_deadlines);
  if ((rc = mdb_cursor_open(txn, s->unique, &cur))) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_jobx x;
    bool ok = v.mv_size == 16 &&
              jb__jobx_get(s, txn, v.mv_data, &x) == 0 &&
              x.rec.unique_len == k.mv_size &&
              memcmp(x.unique, k.mv_data, k.mv_size) == 0;
    if (!ok)
      note(ctx, true, "unique: key \"%.*s\" names no live job holding it",
           (int)(k.mv_size > 100 ? 100 : k.mv_size), (const char *)k.mv_data);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every `deadage` entry names a dead letter that died at its time, and
 * there are as many entries as letters (store.h, schema 10). */
static int check_deadage(jb_store *s, MDB_txn *txn, check_ctx *ctx,
                         size_t letters) {
  MDB_cursor *cur;
  MDB_val k, v;
  size_t n = 0;
  int rc = mdb_cursor_open(txn, s->deadage, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    n++;
    jb_trashrec tr;
    size_t hl;
    MDB_val uk = {16, (uint8_t *)k.mv_data + 8}, tv;
    if (k.mv_size != 8 + 16 || mdb_get(txn, s->trash, &uk, &tv) != 0 ||
        !jb__trashrec_read(tv.mv_data, tv.mv_size, &tr, &hl) ||
        jb__be64(k.mv_data) != (uint64_t)(tr.trashed_us < 0 ? 0
                                                             : tr.trashed_us))
      note(ctx, true, "deadage: an entry names no dead letter that died at "
           "its time");
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  if (n != letters)
    note(ctx, true, "counts: %zu deadage entries != %zu dead letters", n,
         letters);
  return 0;
}

/* Every event of `log` and `logtail` must decode, and the tail's keys
 * must come after the log's (store.h). */
static int check_log(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  uint64_t prev = 0;
  int rc = 0;
  for (int t = 0; rc == 0 && t < 2; t++) {
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, t == 0 ? s->log : s->logtail, &cur)))
      return rc;
    MDB_val k, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      ctx->st->log_events++;
      jb_eventrec ev;
      if (k.mv_size != 8 || v.mv_size < sizeof ev ||
          (memcpy(&ev, v.mv_data, sizeof ev),
           v.mv_size != jb__eventrec_len(&ev) || ev.type < JB_EV_POSTED ||
               ev.type > JB_EV_LAST)) {
        note(ctx, true, "log: event %zu is malformed", ctx->st->log_events);
        continue;
      }
      uint64_t seq = jb__be64(k.mv_data);
      if (seq <= prev)
        note(ctx, true, "log: event %llu of the tail is not after the log's "
             "last (%llu)", (unsigned long long)seq, (unsigned long long)prev);
      prev = seq;
    }
    mdb_cursor_close(cur);
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  return rc;
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

/* Entity records that do not decode are skipped by listings and never
 * removed by registrations' sweeps: here is where they are reported. */
static int check_entity(const MDB_val *k, const MDB_val *v,
                        const jb_entityrec *rec, void *arg) {
  (void)v;
  if (rec == NULL)
    note(arg, true, "entities: the record of %.*s is malformed",
         (int)(k->mv_size > JB_WHO_MAX ? JB_WHO_MAX : k->mv_size),
         (char *)k->mv_data);
  return 0;
}

/* Every history record must decode, and none may be in both of the
 * history's tables (history.h). */
static void check_history_item(uint64_t hseq, const uint8_t *uuid,
                               const char *why, bool dangling, void *arg) {
  check_ctx *ctx = arg;
  char ut[JB_UUID_STRLEN] = "?";
  if (uuid) jb__uuid_format(ut, uuid);
  if (dangling) {
    note(ctx, true, "history: the entry of job %s names no record of it", ut);
    return;
  }
  if (why == NULL) {
    ctx->st->history++;
    return;
  }
  if (hseq == 0) {
    note(ctx, true, "history: %s", why);
    return;
  }
  ctx->st->history++;
  note(ctx, true, "history: record %llu does not decode: %s",
       (unsigned long long)hseq, why);
}

/* Every schedule record decodes (store/schedule.c): a tick passes over
 * one that does not, so it would never run again. */
static int check_schedule(const MDB_val *k, const MDB_val *v, void *arg) {
  jb_sched_view view;
  char why[256];
  if (jb__sched_decode(&view, k->mv_data, k->mv_size, v->mv_data, v->mv_size,
                       why, sizeof why) != JB_OK)
    note(arg, true, "schedules: the record of %.*s does not decode: %s",
         (int)(k->mv_size > 200 ? 200 : k->mv_size), (const char *)k->mv_data,
         why);
  return 0;
}

/* The last check's record, when there is one, has its size (a garbled one
 * is reported; the next recorded check replaces it). */
static int check_last_record(jb_store *s, MDB_txn *txn, check_ctx *ctx) {
  MDB_val k = {sizeof JB_LASTCHECK_KEY - 1, JB_LASTCHECK_KEY}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (v.mv_size != JB_LASTCHECK_LEN)
    note(ctx, true, "meta: the last check's record (%s) is %zu bytes, not "
         "%d (the next recorded check replaces it)", JB_LASTCHECK_KEY,
         v.mv_size, JB_LASTCHECK_LEN);
  return 0;
}

static int check_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  check_ctx *ctx = vctx;
  (void)status;
  /* The body may run again after the map grows: start from zero. */
  memset(ctx->st, 0, sizeof *ctx->st);
  ctx->report->len = 0;
  ctx->needs_write = false;
  if (ctx->read_only && !ctx->skip_pages) {
    ctx->pages.len = 0;
    int prc = jb__check_pages(s, txn, &ctx->pages, &ctx->page_problems,
                              &ctx->unreadable);
    if (prc) return prc;
    ctx->pages_done = true;
    if (ctx->unreadable) {
      note(ctx, false, "pages: the tables were not read through LMDB: a "
           "damaged page could crash it (jobboard salvage copies what is "
           "readable)");
      return 0;
    }
  }
  /* The next sequence: one past the log's last event (store.h). */
  uint64_t next_seq = 1;
  MDB_cursor *lc;
  int rc = mdb_cursor_open(txn, s->logtail, &lc);
  if (rc) return rc;
  rc = jb__log_next(s, txn, lc, &next_seq);
  mdb_cursor_close(lc);
  if (rc == MDB_CORRUPTED) {
    next_seq = 1; /* as with no event: check_log names the key */
    rc = 0;
  }
  if (rc) return rc;
  if ((rc = check_jobs(s, txn, ctx, next_seq))) return rc;
  if ((rc = check_last_record(s, txn, ctx))) return rc;
  if (ctx->needs_write) return 0;
  if ((rc = check_index(s, txn, ctx, s->ready, "ready", sizeof(jb_readyrec),
                        &ctx->st->ready)))
    return rc;
  if ((rc = check_index(s, txn, ctx, s->claims, "claims", sizeof(jb_claimrec),
                        &ctx->st->claimed)))
    return rc;
  size_t delayed = 0;
  if ((rc = check_index(s, txn, ctx, s->delayed, "delayed",
                        sizeof(jb_delayrec), &delayed)))
    return rc;
  if ((rc = check_life(s, txn, ctx, delayed))) return rc;
  if ((rc = check_byname(s, txn, ctx, ctx->st->ready))) return rc;
  if ((rc = check_queues(s, txn, ctx))) return rc;
  MDB_stat st;
  if (ctx->st->ready + ctx->st->claimed + delayed != ctx->st->jobs)
    note(ctx, true, "counts: %zu ready + %zu claimed + %zu delayed != %zu "
         "jobs", ctx->st->ready, ctx->st->claimed, delayed, ctx->st->jobs);
  if ((rc = mdb_stat(txn, s->trash, &st))) return rc;
  ctx->st->trashed = st.ms_entries;
  if ((rc = check_deadage(s, txn, ctx, st.ms_entries))) return rc;
  if ((rc = check_claim_index(s, txn, ctx, true)) ||
      (rc = check_claim_index(s, txn, ctx, false)))
    return rc;
  if ((rc = check_log(s, txn, ctx))) return rc;
  if ((rc = jb__entity_walk(s, txn, check_entity, ctx))) return rc;
  if ((rc = jb__sched_walk(s, txn, check_schedule, ctx))) return rc;
  if ((rc = jb__history_walk(s, txn, check_history_item, ctx))) return rc;
  return check_quarantine(s, txn, ctx);
}

int jb__store_check(jb_store *s, jb_check_stats *stats, jb_buf *report,
                    const jb_hist_bounds *hist) {
  check_ctx ctx = {.st = stats, .report = report, .read_only = true,
                   .hist = hist};
  /* A fresh snapshot when a writer rewrote our meta page first (two
   * commits between the transaction's start and the page read). */
  int rc = JB__PAGES_AGAIN;
  for (int i = 0; i < 20 && rc == JB__PAGES_AGAIN; i++)
    rc = jb__store_read(s, check_body, &ctx);
  if (rc == JB__PAGES_AGAIN) {
    ctx.pages_done = false;
    ctx.skip_pages = true;
    rc = jb__store_read(s, check_body, &ctx);
  }
  if (rc == JB_OK && ctx.needs_write && !ctx.unreadable) {
    ctx.read_only = false;
    rc = jb__store_write(s, check_body, &ctx);
  }
  jb__job_clear(&ctx.job);
  if (rc == JB_OK) {
    if (!ctx.pages_done) {
      note(&ctx, true, "pages: not accounted for: writers rewrote the "
           "snapshot's meta page before it was read, 20 times");
    } else if (ctx.pages.len &&
               jb__buf_append(report, ctx.pages.data, ctx.pages.len)) {
      rc = jb__err(JB_ENOMEM, "out of memory for the check's report");
    }
    stats->problems += ctx.page_problems;
  }
  jb__buf_free(&ctx.pages);
  if (rc != JB_OK) return rc;
  if (stats->problems || stats->moved)
    return jb__err(JB_ECORRUPT, "board %s: %zu problem(s) found, %zu posting(s) "
                   "moved to quarantine", s->path, stats->problems, stats->moved);
  return JB_OK;
}

/* ------------------------------------------------- the last check's record */

static int record_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  const jb_check_record *r = vctx;
  uint8_t d[JB_LASTCHECK_LEN];
  memcpy(d, &r->time_us, 8);
  memcpy(d + 8, &r->duration_us, 8);
  memcpy(d + 16, &r->problems, 8);
  memcpy(d + 24, &r->moved, 8);
  memcpy(d + 32, &r->jobs, 8);
  MDB_val k = {sizeof JB_LASTCHECK_KEY - 1, JB_LASTCHECK_KEY},
          v = {sizeof d, d};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

int jb__store_check_record(jb_store *s, const jb_check_record *r) {
  return jb__store_write(s, record_body, (void *)r);
}

static int last_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  jb_check_record *r = vctx;
  MDB_val k = {sizeof JB_LASTCHECK_KEY - 1, JB_LASTCHECK_KEY}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "no check of board %s recorded its result "
                   "(jobboard check does)", s->path);
  if (rc) return rc;
  if (v.mv_size != JB_LASTCHECK_LEN)
    return jb__err(JB_ECORRUPT, "the last check's record of board %s does "
                   "not decode (the next jobboard check replaces it)",
                   s->path);
  const uint8_t *d = v.mv_data;
  memcpy(&r->time_us, d, 8);
  memcpy(&r->duration_us, d + 8, 8);
  memcpy(&r->problems, d + 16, 8);
  memcpy(&r->moved, d + 24, 8);
  memcpy(&r->jobs, d + 32, 8);
  return 0;
}

int jb__store_check_last(jb_store *s, jb_check_record *r) {
  memset(r, 0, sizeof *r);
  return jb__store_read(s, last_body, r);
}
