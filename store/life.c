/*
 * life.c - a job's life beyond claim and consume (schema 8, store.h "A
 * job's life"): delayed jobs and their promotion, attempts and the retry
 * policy, the `jobx` records, unique keys.
 *
 * Everything here runs inside a write (or read) transaction of ops.c's
 * or dead.c's; nothing here starts one.
 */
#include "life.h"
#include "names.h"
#include "wake.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- policy */

void jb__policy_default(jb_retry_policy *p) {
  *p = (jb_retry_policy)JB_RETRY_POLICY_INIT;
}

int jb__policy_read(jb_store *s, MDB_txn *txn, jb_retry_policy *p) {
  jb__policy_default(p);
  MDB_val k = {sizeof JB_POLICY_KEY - 1, JB_POLICY_KEY}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  /* u32 max_attempts, u32 pad, i64 backoff, i64 backoff_max */
  if (v.mv_size != JB_POLICY_LEN) return MDB_CORRUPTED;
  const uint8_t *d = v.mv_data;
  memcpy(&p->max_attempts, d, 4);
  memcpy(&p->backoff_ms, d + 8, 8);
  memcpy(&p->backoff_max_ms, d + 16, 8);
  return 0;
}

int jb__policy_write(jb_store *s, MDB_txn *txn, const jb_retry_policy *p) {
  uint8_t d[JB_POLICY_LEN] = {0};
  memcpy(d, &p->max_attempts, 4);
  memcpy(d + 8, &p->backoff_ms, 8);
  memcpy(d + 16, &p->backoff_max_ms, 8);
  MDB_val k = {sizeof JB_POLICY_KEY - 1, JB_POLICY_KEY}, v = {sizeof d, d};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

/* ---------------------------------------------------------------- jobx */

int jb__jobx_get(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                 jb_jobx *x) {
  memset(x, 0, sizeof *x);
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->jobx, &k, &v);
  if (rc) return rc;
  if (jb__jobx_decode(x, v.mv_data, v.mv_size) == 0) return 0;
  memset(x, 0, sizeof *x);
  x->garbled = true;
  return MDB_NOTFOUND;
}

int jb__jobx_put(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                 const jb_jobx *x) {
  uint8_t buf[JB_JOBX_MAXLEN];
  MDB_val k = {16, (void *)uuid}, v = {jb__jobx_encode(x, buf), buf};
  return mdb_put(txn, s->jobx, &k, &v, 0);
}

int jb__progress_clear(jb_store *s, MDB_txn *txn, const uint8_t uuid[16]) {
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, uuid, &x);
  if (rc == MDB_NOTFOUND || (rc == 0 && !x.has_progress)) return 0;
  if (rc) return rc;
  x.has_progress = false;
  return jb__jobx_put(s, txn, uuid, &x);
}

/* Drop a leaving job's jobx record and free its unique key (the key
 * entry only when it still names this job). `x` receives the record
 * (x->found false when there was none). A record that does not decode
 * (check reports it) does not keep its job on the board: it goes, and
 * its key, which cannot be read, is freed by the next post that asks for
 * it (jb__unique_take: the holder is not on the board). */
int jb__jobx_drop(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_jobx *x) {
  int rc = jb__jobx_get(s, txn, uuid, x);
  if (rc == MDB_NOTFOUND && !x->garbled) return 0;
  if (rc && rc != MDB_NOTFOUND) return rc;
  MDB_val k = {16, (void *)uuid};
  if ((rc = mdb_del(txn, s->jobx, &k, NULL))) return rc;
  return jb__unique_free(s, txn, x, uuid);
}

int jb__unique_free(jb_store *s, MDB_txn *txn, const jb_jobx *x,
                    const uint8_t uuid[16]) {
  if (!x->found || x->rec.unique_len == 0) return 0;
  MDB_val k = {x->rec.unique_len, (void *)x->unique}, v;
  int rc = mdb_get(txn, s->unique, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (v.mv_size != 16 || memcmp(v.mv_data, uuid, 16) != 0) return 0;
  return mdb_del(txn, s->unique, &k, NULL);
}

int jb__unique_take(jb_store *s, MDB_txn *txn, const char *key,
                    size_t key_len, const uint8_t uuid[16],
                    uint8_t held_by[16]) {
  MDB_val k = {key_len, (void *)key}, v = {16, (void *)uuid};
  int rc = mdb_put(txn, s->unique, &k, &v, MDB_NOOVERWRITE);
  if (rc != MDB_KEYEXIST) return rc;
  /* An entry whose job is no longer on the board (left with a jobx
   * record that did not decode; check reports it) holds nothing: taken. */
  MDB_val jv, hk = {16, v.mv_data};
  if (v.mv_size != 16 || (rc = mdb_get(txn, s->jobs, &hk, &jv)) ==
                             MDB_NOTFOUND) {
    v = (MDB_val){16, (void *)uuid};
    return mdb_put(txn, s->unique, &k, &v, 0);
  }
  if (rc) return rc;
  memcpy(held_by, v.mv_data, 16);
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, held_by);
  return jb__err(JB_EEXISTS, "unique key \"%.*s\" is held by job %s",
                 (int)(key_len > 200 ? 200 : key_len), key, t);
}

/* ------------------------------------------------------------- delayed */

void jb__due_key(uint8_t out[JB_DUEKEY_LEN], int64_t due_us,
                 const uint8_t jobkey[JB_JOBKEY_LEN]) {
  jb__put_be64(out, (uint64_t)(due_us < 0 ? 0 : due_us));
  memcpy(out + 8, jobkey, JB_JOBKEY_LEN);
}

int jb__delay_put(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const uint8_t uuid[16],
                  int64_t modified_us, int64_t due_us) {
  jb_delayrec r = {.modified_us = modified_us, .due_us = due_us};
  memcpy(r.uuid, uuid, 16);
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v = {sizeof r, &r};
  int rc = mdb_put(txn, s->delayed, &k, &v, MDB_NOOVERWRITE);
  if (rc) return rc == MDB_KEYEXIST ? MDB_CORRUPTED : rc;
  uint8_t dk[JB_DUEKEY_LEN];
  jb__due_key(dk, due_us, jobkey);
  MDB_val kk = {sizeof dk, dk}, empty = {0, NULL};
  /* A wait by names sleeps on its lanes' bits and sets its timer to the
   * next due job it knew of: a new one (of any lane: its name is not read
   * here) wakes it to set the timer again. */
  s->wake_lanes |= JB_WAKE_LANES;
  return mdb_put(txn, s->due, &kk, &empty, 0);
}

int jb__delay_get(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_delayrec *r) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
  int rc = mdb_get(txn, s->delayed, &k, &v);
  if (rc) return rc;
  if (v.mv_size != sizeof *r) return MDB_CORRUPTED;
  memcpy(r, v.mv_data, sizeof *r);
  return 0;
}

int jb__delay_del(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_delayrec *r) {
  int rc = jb__delay_get(s, txn, jobkey, r);
  if (rc) return rc;
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  if ((rc = mdb_del(txn, s->delayed, &k, NULL))) return rc;
  uint8_t dk[JB_DUEKEY_LEN];
  jb__due_key(dk, r->due_us, jobkey);
  MDB_val kk = {sizeof dk, dk};
  rc = mdb_del(txn, s->due, &kk, NULL);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__promote_one(jb_store *s, MDB_txn *txn,
                    const uint8_t jobkey[JB_JOBKEY_LEN], int64_t now_us) {
  jb_delayrec r;
  int rc = jb__delay_get(s, txn, jobkey, &r);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (r.due_us > now_us) return 0;
  if ((rc = jb__delay_del(s, txn, jobkey, &r))) return rc;
  rc = jb__ready_add_job(s, txn, jobkey, r.uuid, r.modified_us,
                         MDB_NOOVERWRITE);
  return rc == MDB_KEYEXIST ? MDB_CORRUPTED : rc;
}

int jb__promote_due(jb_store *s, MDB_txn *txn, int64_t now_us, size_t max) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->due, &cur);
  if (rc) return rc;
  MDB_val k, v;
  size_t n = 0;
  /* Always the first key: each one taken is deleted. */
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && n < max;
       rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST), n++) {
    if (k.mv_size != JB_DUEKEY_LEN) { rc = MDB_CORRUPTED; break; }
    if ((int64_t)jb__be64(k.mv_data) > now_us) break;
    uint8_t jobkey[JB_JOBKEY_LEN];
    memcpy(jobkey, (const uint8_t *)k.mv_data + 8, JB_JOBKEY_LEN);
    if ((rc = mdb_cursor_del(cur, 0))) break;
    jb_delayrec r;
    MDB_val jk = {JB_JOBKEY_LEN, jobkey};
    rc = jb__delay_get(s, txn, jobkey, &r);
    if (rc == MDB_NOTFOUND) { /* an entry damage left: gone now */
      rc = 0;
      continue;
    }
    if (rc) break;
    if ((rc = mdb_del(txn, s->delayed, &jk, NULL))) break;
    if ((rc = jb__ready_add_job(s, txn, jobkey, r.uuid, r.modified_us,
                                MDB_NOOVERWRITE))) {
      if (rc == MDB_KEYEXIST) rc = MDB_CORRUPTED;
      break;
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__due_scan(jb_store *s, MDB_txn *txn, int64_t now_us, size_t *n_due,
                 int64_t *next_due_us) {
  *n_due = 0;
  *next_due_us = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->due, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_DUEKEY_LEN) { rc = MDB_CORRUPTED; break; }
    int64_t due = (int64_t)jb__be64(k.mv_data);
    if (due > now_us) {
      *next_due_us = due;
      break;
    }
    ++*n_due;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* -------------------------------------------------------------- retries */

int64_t jb__backoff_us(const jb_retry_policy *board, const jb_jobx *x,
                       uint32_t attempts) {
  int64_t base = x && x->rec.backoff_ms > 0 ? x->rec.backoff_ms
                                           : board->backoff_ms;
  int64_t cap = x && x->rec.backoff_max_ms > 0 ? x->rec.backoff_max_ms
                                               : board->backoff_max_ms;
  if (base <= 0) base = 1000;
  if (cap < base) cap = base;
  int64_t d = base;
  for (uint32_t i = 1; i < attempts && d < cap; i++) d *= 2;
  if (d > cap) d = cap;
  /* +-20 % jitter, then within the bounds again: retries of many jobs
   * that failed together spread out instead of coming back at once. */
  uint8_t rnd[16];
  uint32_t r = 0x80000000u;
  if (jb__uuid_generate(rnd) == JB_OK) memcpy(&r, rnd, sizeof r);
  double f = 0.8 + 0.4 * ((double)r / 4294967296.0);
  int64_t j = (int64_t)((double)d * f);
  if (j > cap) j = cap;
  if (j < 1) j = 1;
  return j * 1000;
}

uint32_t jb__max_attempts(const jb_retry_policy *board, const jb_jobx *x) {
  if (x && x->found && x->rec.max_attempts > 0) return x->rec.max_attempts;
  return board->max_attempts;
}

/* ---------------------------------------------------------- time limits */

int jb__limit_claim(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_claimrec *rec, int64_t now_bt) {
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, uuid, &x);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  /* The claim starts the job: its deadline to start no longer applies. */
  if ((rc = jb__deadline_claim(s, txn, uuid, &x))) return rc;
  if (x.rec.time_limit_ms <= 0) return 0;
  int64_t limit = now_bt + x.rec.time_limit_ms * 1000;
  if (!(rec->flags & JB_CLAIM_F_LEASE) || rec->expires_bt > limit) {
    rec->flags |= JB_CLAIM_F_LEASE;
    rec->expires_bt = limit;
    if (rec->lease_ms <= 0) rec->lease_ms = x.rec.time_limit_ms;
  }
  x.rec.limit_bt = limit;
  return jb__jobx_put(s, txn, uuid, &x);
}

int jb__limit_cap(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_claimrec *rec) {
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, uuid, &x);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (x.rec.limit_bt > 0 && (rec->flags & JB_CLAIM_F_LEASE) &&
      rec->expires_bt > x.rec.limit_bt)
    rec->expires_bt = x.rec.limit_bt;
  return 0;
}

/* ------------------------------------------------------- a failed attempt */

int jb__attempt_count(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                      const char *reason, size_t reason_len, int64_t now_us,
                      uint32_t *attempts) {
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, uuid, &x);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (!x.found) x.rec.format = 1;
  if (x.rec.attempts < UINT32_MAX) x.rec.attempts++;
  x.rec.last_us = now_us;
  if (reason) jb__jobx_set_reason(&x, reason, reason_len);
  if (attempts) *attempts = x.rec.attempts;
  return jb__jobx_put(s, txn, uuid, &x);
}

int jb__attempt_end(jb_store *s, MDB_txn *txn, const jb_attempt *a,
                    jb_attempt_out *out) {
  /* A job Redis decides: Redis's own expiry of a claim is Redis's (the
   * mirror may record the same lapse again: no attempt counted here), and
   * no attempt buries it locally while Redis lists it: only a trash
   * through Redis does (core/life.c). */
  bool remote = (a->h->flags & JB_JOB_F_REMOTE) != 0;
  if (remote && a->event == JB_EV_EXPIRED) {
    *out = (jb_attempt_out){0};
    int rc = jb__ready_add(s, txn, a->h->jobkey, a->uuid, a->now_us,
                           jb__hdr_lane(a->h), 0);
    if (rc) return rc;
    return jb__log_event(s, txn, a->event, a->uuid, a->h->jobkey, a->who,
                         a->who_len, a->now_us);
  }
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, a->uuid, &x);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (!x.found) x.rec.format = 1;
  if (a->snooze) {
    /* A snooze spends no attempt: it counts apart, up to the job's
     * max_snoozes, past which it is refused (the claim stands: this
     * transaction is not committed). */
    if (x.snz.max_snoozes > 0 && x.snz.snoozes >= x.snz.max_snoozes) {
      char t[JB_UUID_STRLEN];
      jb__uuid_format(t, a->uuid);
      return jb__err(JB_EINVAL, "job %s: snoozed %" PRIu32 " times, its "
                     "max_snoozes: no more snoozes (consume, retry or "
                     "abandon it)", t, x.snz.snoozes);
    }
    if (x.snz.snoozes < UINT32_MAX) x.snz.snoozes++;
    x.rec.limit_bt = 0;
    *out = (jb_attempt_out){.attempts = x.rec.attempts,
                            .due_us = a->delay_us > 0 ? a->now_us + a->delay_us
                                                      : 0};
    if ((rc = jb__jobx_put(s, txn, a->uuid, &x))) return rc;
    rc = a->delay_us > 0
             ? jb__delay_put(s, txn, a->h->jobkey, a->uuid, a->now_us,
                             out->due_us)
             : jb__ready_add(s, txn, a->h->jobkey, a->uuid, a->now_us,
                             jb__hdr_lane(a->h), 0);
    if (rc) return rc;
    return jb__log_event(s, txn, JB_EV_SNOOZED, a->uuid, a->h->jobkey, a->who,
                         a->who_len, a->now_us);
  }
  if (x.rec.attempts < UINT32_MAX) x.rec.attempts++;
  x.rec.last_us = a->now_us;
  x.rec.limit_bt = 0;
  if (a->reason) jb__jobx_set_reason(&x, a->reason, a->reason_len);
  jb_retry_policy pol;
  if ((rc = jb__policy_read(s, txn, &pol))) return rc;
  uint32_t max = jb__max_attempts(&pol, &x);
  bool dead = !remote && (a->dead || (max > 0 && x.rec.attempts >= max));
  *out = (jb_attempt_out){.dead = dead, .attempts = x.rec.attempts};
  const uint8_t *jobkey = a->h->jobkey;
  if (dead) {
    /* The posting is copied before the jobx write: no page it points
     * into may change under jb__job_complete's copy to the trash. */
    jb_buf copy = {0};
    if ((rc = jb__buf_append(&copy, a->posting.mv_data, a->posting.mv_size)) ||
        (rc = jb__jobx_put(s, txn, a->uuid, &x))) {
      jb__buf_free(&copy);
      return rc;
    }
    char why[JB_REASON_MAX + 1];
    size_t why_len = x.rec.reason_len;
    memcpy(why, x.reason, why_len);
    /* Its history record is trimmed to the store's bounds (txn.h). */
    jb_store_done done = {.end = JB_END_DEAD, .bounds = &s->hist};
    jb_completing c = {.op = JB_RELEASE_TRASH, .uuid = a->uuid, .h = a->h,
                       .posting = {copy.len, copy.data}, .claim = NULL,
                       .unindexed = true, .claimed_us = a->claimed_us,
                       .who = a->who, .who_len = a->who_len,
                       .now_us = a->now_us, .done = &done,
                       .event = JB_EV_DEAD, .end = JB_END_DEAD,
                       .cause = a->dead ? JB_DEAD_BURIED : JB_DEAD_ATTEMPTS,
                       .reason = why_len ? why : NULL, .reason_len = why_len};
    rc = jb__job_complete(s, txn, &c);
    jb__buf_free(&copy);
    return rc;
  }
  if ((rc = jb__jobx_put(s, txn, a->uuid, &x))) return rc;
  int64_t delay = remote ? 0 /* Redis has it claimable now */
                 : a->delay_us < 0 ? jb__backoff_us(&pol, &x, x.rec.attempts)
                                   : a->delay_us;
  if (delay > 0) {
    out->due_us = a->now_us + delay;
    rc = jb__delay_put(s, txn, jobkey, a->uuid, a->now_us, out->due_us);
  } else {
    rc = jb__ready_add(s, txn, jobkey, a->uuid, a->now_us, jb__hdr_lane(a->h),
                       0);
  }
  if (rc) return rc;
  return jb__log_event(s, txn, a->event, a->uuid, jobkey, a->who, a->who_len,
                       a->now_us);
}

/* ---------------------------------------------------------------- trash */

bool jb__trashrec_read(const void *data, size_t len, jb_trashrec *t,
                       size_t *hdr_len) {
  memset(t, 0, sizeof *t);
  if (len < JB_TRASHREC_V1_SIZE) return false;
  memcpy(t, data, JB_TRASHREC_V1_SIZE);
  size_t hl = JB_TRASHREC_V1_SIZE;
  if (t->format == 2) {
    if (len < sizeof *t) return false;
    memcpy(t, data, sizeof *t);
    hl = sizeof *t;
  } else if (t->format == 1) {
    t->cause = JB_DEAD_TRASHED;
    t->x_len = 0;
  } else {
    return false;
  }
  if (len != hl + (size_t)t->owner_len + t->posting_len + t->x_len)
    return false;
  *hdr_len = hl;
  return true;
}
