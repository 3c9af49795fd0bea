/*
 * ops.c - the board's operations, each one LMDB write (or read)
 * transaction over the tables described in store.h.
 */
#include "txn.h"
#include "names.h"
#include "wake.h"
#include "history.h"
#include "life.h"
#include "codec/posting.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

static void jobkey_put(uint8_t key[JB_JOBKEY_LEN], jb_priority p,
                       uint64_t v) {
  key[0] = (uint8_t)(JB_PRIORITY_VERY_HIGH - p); /* 0 sorts first */
  for (int i = 0; i < 8; i++) key[1 + i] = (uint8_t)(v >> (56 - 8 * i));
}

uint64_t jb__jobkey_value(const uint8_t key[JB_JOBKEY_LEN]) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | key[1 + i];
  return v;
}

void jb__jobkey(uint8_t key[JB_JOBKEY_LEN], jb_priority p, uint64_t seq) {
  jobkey_put(key, p, JB_JOBKEY_LOCAL | (seq & ~JB_JOBKEY_LOCAL));
}

void jb__jobkey_remote(uint8_t key[JB_JOBKEY_LEN], jb_priority p,
                       uint64_t rseq, unsigned tie) {
  if (rseq > JB_JOBKEY_RSEQ_MAX) rseq = JB_JOBKEY_RSEQ_MAX;
  jobkey_put(key, p, rseq << 16 | (tie & 0xffffu));
}

bool jb__jobkey_is_remote(const uint8_t key[JB_JOBKEY_LEN]) {
  return !(jb__jobkey_value(key) & JB_JOBKEY_LOCAL);
}

bool jb__jobkey_has_rseq(const uint8_t key[JB_JOBKEY_LEN], uint64_t rseq) {
  if (rseq > JB_JOBKEY_RSEQ_MAX) rseq = JB_JOBKEY_RSEQ_MAX;
  return jb__jobkey_is_remote(key) && jb__jobkey_seq(key) == rseq;
}

jb_priority jb__jobkey_priority(const uint8_t key[JB_JOBKEY_LEN]) {
  return (jb_priority)(JB_PRIORITY_VERY_HIGH - key[0]);
}

uint64_t jb__jobkey_seq(const uint8_t key[JB_JOBKEY_LEN]) {
  uint64_t v = jb__jobkey_value(key);
  return v & JB_JOBKEY_LOCAL ? v & ~JB_JOBKEY_LOCAL : v >> 16;
}

/*
 * The change log, appended to by every write. Its sequence is the last
 * event's plus one: trimming removes the oldest events only and never the
 * last one, so sequences never repeat, with no counter to write per event.
 *
 * Trimming is batched (logread.c): once the log holds JB_LOG_TRIM events
 * more than it keeps, or its oldest are too old, one write deletes up to
 * JB_LOG_TRIM of the oldest, plus as many as it appended (a batch post
 * appends one per job), with one cursor descent. A write never deletes
 * more than that, so its work stays proportional to its own.
 */
int jb__log_open(jb_store *s, MDB_txn *txn, jb_log_writer *lw) {
  int rc = mdb_cursor_open(txn, s->logtail, &lw->cur);
  if (rc) return rc;
  lw->now_us = 0;
  memset(lw->counts, 0, sizeof lw->counts);
  rc = jb__log_next(s, txn, lw->cur, &lw->next);
  lw->first_new = lw->next;
  if (rc) mdb_cursor_close(lw->cur);
  return rc;
}

static int log_put(jb_log_writer *lw, jb_eventrec *ev, const uint8_t uuid[16],
                   const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                   const char *msg, int64_t now_us) {
  uint8_t key[8];
  uint64_t seq = lw->next;
  for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seq >> (56 - 8 * i));
  MDB_val k = {8, key}, v = {jb__eventrec_len(ev), NULL};
  int rc = mdb_cursor_put(lw->cur, &k, &v, MDB_APPEND | MDB_RESERVE);
  if (rc) return rc;
  lw->next++;
  lw->now_us = now_us;
  lw->counts[ev->type & 15u]++;
  ev->priority = (uint8_t)jb__jobkey_priority(jobkey);
  ev->time_us = now_us;
  ev->job_seq = jb__jobkey_seq(jobkey);
  memcpy(ev->uuid, uuid, 16);
  uint8_t *d = v.mv_data;
  memcpy(d, ev, sizeof *ev);
  if (ev->owner_len) memcpy(d + sizeof *ev, who, ev->owner_len);
  if (ev->msg_len) memcpy(d + sizeof *ev + ev->owner_len, msg, ev->msg_len);
  return 0;
}

int jb__log_put(jb_log_writer *lw, int type, const uint8_t uuid[16],
                const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                size_t who_len, int64_t now_us) {
  jb_eventrec ev = {.type = (uint8_t)type, .owner_len = (uint16_t)who_len};
  return log_put(lw, &ev, uuid, jobkey, who, NULL, now_us);
}

int jb__log_put_progress(jb_log_writer *lw, const uint8_t uuid[16],
                         const uint8_t jobkey[JB_JOBKEY_LEN], const char *who,
                         size_t who_len, int64_t now_us, unsigned permille,
                         const char *msg, size_t msg_len) {
  jb_eventrec ev = {.type = JB_EV_PROGRESS, .owner_len = (uint16_t)who_len,
                    .permille = (uint16_t)permille,
                    .msg_len = (uint8_t)msg_len};
  return log_put(lw, &ev, uuid, jobkey, who, msg, now_us);
}

/* Trim if due (by size and age: logread.c), and close. `rc` is the status
 * so far: on error, only close. A writer that appended nothing (the
 * mirror's transactions may not) trims nothing: the log may be empty. */
int jb__log_close(jb_store *s, MDB_txn *txn, jb_log_writer *lw, int rc) {
  mdb_cursor_close(lw->cur);
  if (rc == 0 && lw->next > lw->first_new) {
    uint32_t add[JB_CTR_N] = {0};
    memcpy(add + JB_CTR_EV, lw->counts, sizeof lw->counts);
    rc = jb__counters_add(s, txn, add);
    if (rc == 0)
      rc = jb__log_trim(s, txn, lw->now_us, lw->next - lw->first_new);
  }
  return rc;
}

/* Append one event (open, put, close). */
int jb__log_event(jb_store *s, MDB_txn *txn, int type,
                     const uint8_t uuid[16], const uint8_t jobkey[JB_JOBKEY_LEN],
                     const char *who, size_t who_len, int64_t now_us) {
  jb_log_writer lw;
  int rc = jb__log_open(s, txn, &lw);
  if (rc) return rc;
  rc = jb__log_put(&lw, type, uuid, jobkey, who, who_len, now_us);
  return jb__log_close(s, txn, &lw, rc);
}

static void fmt_uuid(char out[JB_UUID_STRLEN], const uint8_t uuid[16]) {
  jb__uuid_format(out, uuid);
}

int jb__job_header(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   jb_jobhdr *hdr, MDB_val *posting) {
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc) return rc;
  if (v.mv_size < sizeof *hdr) return MDB_CORRUPTED;
  memcpy(hdr, v.mv_data, sizeof *hdr);
  if (posting)
    *posting = (MDB_val){v.mv_size - sizeof *hdr,
                         (uint8_t *)v.mv_data + sizeof *hdr};
  return 0;
}

/* jb__job_header, with JB_ENOTFOUND and a message when the job is absent. */
static int find_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_jobhdr *hdr, MDB_val *posting) {
  int rc = jb__job_header(s, txn, uuid, hdr, posting);
  if (rc == MDB_NOTFOUND) {
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, uuid);
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", t);
  }
  return rc;
}

/* The claim record of a job (copied), and its owner (pointing into the
 * transaction's pages: copy it before writing), or MDB_NOTFOUND. */
int jb__claim_get(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], jb_claimrec *rec,
                  const char **owner) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v;
  int rc = mdb_get(txn, s->claims, &k, &v);
  if (rc) return rc;
  if (v.mv_size < sizeof *rec) return MDB_CORRUPTED;
  memcpy(rec, v.mv_data, sizeof *rec);
  if (rec->format != 2 || v.mv_size != sizeof *rec + rec->owner_len)
    return MDB_CORRUPTED;
  *owner = (const char *)v.mv_data + sizeof *rec;
  return 0;
}

void jb__lease_key(uint8_t out[JB_LEASEKEY_LEN], const jb_claimrec *rec,
                   const uint8_t jobkey[JB_JOBKEY_LEN]) {
  jb__put_be32(out, rec->epoch);
  jb__put_be64(out + 4, (uint64_t)rec->expires_bt);
  memcpy(out + 12, jobkey, JB_JOBKEY_LEN);
}

void jb__holder_key(uint8_t out[JB_HOLDERKEY_LEN], const jb_claimrec *rec,
                    const uint8_t jobkey[JB_JOBKEY_LEN]) {
  jb__put_be32(out, rec->epoch);
  jb__put_be32(out + 4, rec->holder_pid);
  jb__put_be64(out + 8, rec->holder_start);
  memcpy(out + 16, jobkey, JB_JOBKEY_LEN);
}

/* Write the claim record of `jobkey` and its index entries. */
int jb__claim_put(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const jb_claimrec *rec,
                  const char *who, size_t who_len) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  MDB_val v = {sizeof *rec + who_len, NULL};
  int rc = mdb_put(txn, s->claims, &k, &v, MDB_RESERVE);
  if (rc) return rc;
  memcpy(v.mv_data, rec, sizeof *rec);
  memcpy((uint8_t *)v.mv_data + sizeof *rec, who, who_len);
  /* Its name's count of claims, when the name has a cap (names.h). */
  if ((rc = jb__queue_held(s, txn, rec->uuid, 1))) return rc;
  MDB_val empty = {0, NULL};
  if (rec->flags & JB_CLAIM_F_LEASE) {
    uint8_t lk[JB_LEASEKEY_LEN];
    jb__lease_key(lk, rec, jobkey);
    MDB_val kk = {sizeof lk, lk};
    if ((rc = mdb_put(txn, s->leases, &kk, &empty, 0))) return rc;
  }
  if (rec->flags & JB_CLAIM_F_BOUND) {
    uint8_t hk[JB_HOLDERKEY_LEN];
    jb__holder_key(hk, rec, jobkey);
    MDB_val kk = {sizeof hk, hk};
    if ((rc = mdb_put(txn, s->holders, &kk, &empty, 0))) return rc;
  }
  return 0;
}

/* Delete the claim record of `jobkey` (whose record is `rec`) and its
 * index entries. (Also used by check.c's quarantine.) */
int jb__store_drop_claim(jb_store *s, MDB_txn *txn,
                         const uint8_t jobkey[JB_JOBKEY_LEN],
                         const jb_claimrec *rec) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  int rc = mdb_del(txn, s->claims, &k, NULL);
  if (rc) return rc;
  if ((rc = jb__queue_held(s, txn, rec->uuid, -1))) return rc;
  if (rec->flags & JB_CLAIM_F_LEASE) {
    uint8_t lk[JB_LEASEKEY_LEN];
    jb__lease_key(lk, rec, jobkey);
    MDB_val kk = {sizeof lk, lk};
    rc = mdb_del(txn, s->leases, &kk, NULL);
    if (rc && rc != MDB_NOTFOUND) return rc;
  }
  if (rec->flags & JB_CLAIM_F_BOUND) {
    uint8_t hk[JB_HOLDERKEY_LEN];
    jb__holder_key(hk, rec, jobkey);
    MDB_val kk = {sizeof hk, hk};
    rc = mdb_del(txn, s->holders, &kk, NULL);
    if (rc && rc != MDB_NOTFOUND) return rc;
  }
  return 0;
}

/* A free remote-band jobkey for Redis sequence `rseq` (the lowest free
 * tie-breaker), into `out`. `self` (may be NULL) is a job whose own key
 * counts as free. MDB_KEYEXIST when all 65,536 are taken. */
int jb__jobkey_remote_free(jb_store *s, MDB_txn *txn, jb_priority p,
                           uint64_t rseq, const uint8_t self[16],
                           uint8_t out[JB_JOBKEY_LEN]) {
  for (unsigned tie = 0; tie <= 0xffffu; tie++) {
    jb__jobkey_remote(out, p, rseq, tie);
    MDB_val k = {JB_JOBKEY_LEN, out}, v;
    int rc = mdb_get(txn, s->ready, &k, &v);
    if (rc == MDB_NOTFOUND) rc = mdb_get(txn, s->claims, &k, &v);
    if (rc == MDB_NOTFOUND) return 0;
    if (rc) return rc;
    /* Both record types start with the job's uuid. */
    if (self && v.mv_size >= 16 && memcmp(v.mv_data, self, 16) == 0) return 0;
  }
  return MDB_KEYEXIST;
}

int jb__job_rekey(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                  jb_jobhdr *h, const uint8_t key[JB_JOBKEY_LEN],
                  uint8_t flags) {
  if (memcmp(h->jobkey, key, JB_JOBKEY_LEN) == 0 && h->flags == flags)
    return 0;
  int rc = 0;
  if (memcmp(h->jobkey, key, JB_JOBKEY_LEN) != 0) {
    jb_claimrec rec;
    const char *owner;
    rc = jb__claim_get(s, txn, h->jobkey, &rec, &owner);
    if (rc == 0) {
      char who[JB_WHO_MAX];
      size_t n = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
      memcpy(who, owner, n); /* before the claims page changes */
      if ((rc = jb__store_drop_claim(s, txn, h->jobkey, &rec)) ||
          (rc = jb__claim_put(s, txn, key, &rec, who, n)))
        return rc;
    } else if (rc == MDB_NOTFOUND) {
      MDB_val k = {JB_JOBKEY_LEN, h->jobkey}, v;
      if ((rc = mdb_get(txn, s->ready, &k, &v)) == MDB_NOTFOUND) {
        jb_delayrec dr; /* delayed: it moves there */
        if ((rc = jb__delay_del(s, txn, h->jobkey, &dr)) == 0)
          rc = jb__delay_put(s, txn, key, uuid, dr.modified_us, dr.due_us);
        if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* in none */
        goto header;
      }
      if (rc) return rc;
      jb_readyrec r;
      if (v.mv_size != sizeof r) return MDB_CORRUPTED;
      memcpy(&r, v.mv_data, sizeof r);
      uint32_t lane = jb__hdr_lane(h);
      if ((rc = jb__ready_remove(s, txn, h->jobkey, lane)) ||
          (rc = jb__ready_add(s, txn, key, r.uuid, r.modified_us, lane, 0)))
        return rc;
    } else {
      return rc;
    }
  }
header:;
  /* The header is rewritten in place: same size, so the posting after it
   * stays where it is. */
  MDB_val k = {16, (void *)uuid}, v;
  MDB_cursor *cur;
  if ((rc = mdb_cursor_open(txn, s->jobs, &cur))) return rc;
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
  if (rc == 0 && v.mv_size < sizeof *h) rc = MDB_CORRUPTED;
  if (rc == 0) {
    memcpy(h->jobkey, key, JB_JOBKEY_LEN);
    h->flags = flags;
    /* Copied out of the page before the put may reuse it. */
    jb_buf copy = {0};
    if ((rc = jb__buf_append(&copy, h, sizeof *h)) == 0 &&
        (rc = jb__buf_append(&copy, (const uint8_t *)v.mv_data + sizeof *h,
                             v.mv_size - sizeof *h)) == 0) {
      MDB_val nv = {copy.len, copy.data};
      rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
    }
    jb__buf_free(&copy);
  }
  mdb_cursor_close(cur);
  return rc;
}

/* Liveness of holder processes, remembered for one operation (a listing
 * of many jobs held by one process reads /proc once). */
typedef struct {
  jb_store *s;
  struct {
    uint32_t pid;
    uint64_t start;
    bool alive;
  } e[32];
  int n, next;
} live_cache;

static bool holder_alive(live_cache *lc, uint32_t pid, uint64_t start) {
  /* The common case: the holder asks (consume, extend), and it runs. */
  jb_proc_id self;
  if (jb__proc_self(&self) == JB_OK && self.pid == pid && self.start == start)
    return true;
  for (int i = 0; i < lc->n; i++)
    if (lc->e[i].pid == pid && lc->e[i].start == start) return lc->e[i].alive;
  jb_proc_id p = {pid, start};
  /* A process this process's watcher follows with a pidfd that has not
   * signalled its end is alive, without a read of /proc (waiters for
   * claimable jobs count lapsed claims at every commit); its end wakes
   * them (store/wake.c). */
  bool alive = (lc->s && jb__signal_follows(lc->s, &p)) ||
               jb__proc_alive(&p) != 0;
  int slot = lc->n < 32 ? lc->n++ : (lc->next++ % 32);
  lc->e[slot].pid = pid;
  lc->e[slot].start = start;
  lc->e[slot].alive = alive;
  return alive;
}

/* Why a claim lapsed, or NULL while it holds. */
static const char *claim_lapsed(jb_store *s, const jb_claimrec *rec,
                                int64_t now_bt, live_cache *lc) {
  if (!(rec->flags & (JB_CLAIM_F_LEASE | JB_CLAIM_F_BOUND))) return NULL;
  if (rec->epoch != s->epoch) return "it was made before the host rebooted";
  if ((rec->flags & JB_CLAIM_F_LEASE) && rec->expires_bt <= now_bt)
    return "its lease expired";
  if ((rec->flags & JB_CLAIM_F_BOUND) &&
      !holder_alive(lc, rec->holder_pid, rec->holder_start))
    return "its holder process is gone";
  return NULL;
}

int jb__claims_walk(jb_store *s, MDB_txn *txn, jb_claim_visit visit,
                    void *arg) {
  int64_t now_bt = jb__boottime_us();
  live_cache lc = {.s = s};
  MDB_cursor *cur;
  MDB_val k, v;
  int rc = mdb_cursor_open(txn, s->claims, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_claimrec rec;
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size < sizeof rec) {
      rc = MDB_CORRUPTED;
      break;
    }
    memcpy(&rec, v.mv_data, sizeof rec);
    if ((rc = visit(k.mv_data, &rec, claim_lapsed(s, &rec, now_bt, &lc),
                    arg)))
      break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

const char *jb__claim_lapsed_why(jb_store *s, const jb_claimrec *rec) {
  live_cache lc = {.s = s};
  return claim_lapsed(s, rec, jb__boottime_us(), &lc);
}

/* A lapsed claim ends (`why` it lapsed): a failed attempt (life.c): the
 * job is ready again (its modified time now) and an EXPIRED event names
 * the owner it had, or its attempts are used up and it goes to the dead
 * letters (*dead). */
static int lapse_claim(jb_store *s, MDB_txn *txn,
                       const uint8_t jobkey[JB_JOBKEY_LEN], const jb_claimrec *rec,
                       const char *owner, int64_t now_us, const char *why,
                       bool *dead) {
  char who[JB_WHO_MAX];
  size_t who_len = rec->owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec->owner_len;
  memcpy(who, owner, who_len); /* before the pages change */
  int64_t claimed_us = rec->claimed_us;
  uint8_t uuid[16];
  memcpy(uuid, rec->uuid, 16);
  int rc = jb__store_drop_claim(s, txn, jobkey, rec);
  if (rc) return rc;
  jb_jobhdr h;
  MDB_val posting;
  if ((rc = jb__job_header(s, txn, uuid, &h, &posting)))
    return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  if (memcmp(h.jobkey, jobkey, JB_JOBKEY_LEN) != 0) return MDB_CORRUPTED;
  char reason[200];
  int n = snprintf(reason, sizeof reason, "the claim by %.*s lapsed: %s",
                   (int)(who_len > 100 ? 100 : who_len), who, why);
  jb_attempt a = {.uuid = uuid, .h = &h, .posting = posting,
                  .claimed_us = claimed_us, .who = who, .who_len = who_len,
                  .reason = reason,
                  .reason_len = n < 0 ? 0
                                : (size_t)n >= sizeof reason ? sizeof reason - 1
                                                             : (size_t)n,
                  .now_us = now_us, .delay_us = 0, .event = JB_EV_EXPIRED};
  jb_attempt_out out;
  if ((rc = jb__attempt_end(s, txn, &a, &out))) return rc;
  if (dead) *dead = out.dead;
  return 0;
}

/* A new claim record for `req`, with fencing token `token`. */
static jb_claimrec new_claim(jb_store *s, const uint8_t uuid[16],
                             const jb_store_claim_req *req, uint64_t token,
                             int64_t now_bt) {
  jb_claimrec rec = {.format = 2, .owner_len = (uint16_t)req->who_len,
                     .epoch = s->epoch, .claimed_us = req->now_us,
                     .token = token};
  memcpy(rec.uuid, uuid, 16);
  if (req->lease_ms > 0) {
    rec.flags |= JB_CLAIM_F_LEASE;
    rec.lease_ms = req->lease_ms;
    rec.expires_bt = now_bt + req->lease_ms * 1000;
  }
  if (req->bind) {
    rec.flags |= JB_CLAIM_F_BOUND;
    rec.holder_pid = req->holder.pid;
    rec.holder_start = req->holder.start;
  }
  return rec;
}

/* Claim the ready job `jobkey` (its ready entry already removed): the
 * claim, its CLAIMED event, and the token (that event's sequence). */
static int make_claim(jb_store *s, MDB_txn *txn, const uint8_t jobkey[JB_JOBKEY_LEN],
                      const uint8_t uuid[16], const jb_store_claim_req *req,
                      int64_t now_bt, uint64_t *token, uint8_t jflags) {
  jb_log_writer lw;
  int rc = jb__log_open(s, txn, &lw);
  if (rc) return rc;
  *token = lw.next;
  jb_claimrec rec = new_claim(s, uuid, req, lw.next, now_bt);
  /* A job posted with a time limit: the claim lapses at it (life.c). */
  if (jflags & JB_JOB_F_X) rc = jb__limit_claim(s, txn, uuid, &rec, now_bt);
  /* A new claim starts without the progress of an earlier one. */
  if (rc == 0) rc = jb__progress_clear(s, txn, uuid);
  if (rc == 0) rc = jb__claim_put(s, txn, jobkey, &rec, req->who, req->who_len);
  /* Every claim made here spends a token of its name's rate limit (a
   * Redis-decided one too, after Redis granted it: never refused then). */
  if (rc == 0) rc = jb__queue_spend(s, txn, uuid, req->now_us);
  if (rc == 0)
    rc = jb__log_put(&lw, JB_EV_CLAIMED, uuid, jobkey, req->who, req->who_len,
                 req->now_us);
  return jb__log_close(s, txn, &lw, rc);
}

static bool same_owner(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && memcmp(a, b, alen) == 0;
}

/* ------------------------------------------------------------------ post */

typedef struct {
  const jb_store_post *posts;
  size_t n;
  int64_t now_us;
  uint8_t *held_by; /* JB_EEXISTS: the uuid holding the unique key */
  size_t *held_idx; /* and which post asked for it */
} post_ctx;

/* Put through `cur`, at the table's end when the key sorts after all of
 * its keys: with MDB_APPEND LMDB skips the search and fills a leaf before
 * it starts the next, where a put in order splits each leaf in the middle
 * and leaves it half full. `*append` says whether to try; once a key does
 * not sort last (LMDB refuses the append with MDB_KEYEXIST before it
 * changes anything), the put is an ordinary one, and so are the rest. */
static int put_at_end(MDB_cursor *cur, MDB_val *k, MDB_val *v, unsigned flags,
                      bool *append) {
  if (*append) {
    int rc = mdb_cursor_put(cur, k, v, flags | MDB_APPEND);
    if (rc != MDB_KEYEXIST) return rc;
    *append = false;
  }
  return mdb_cursor_put(cur, k, v, flags);
}

static int post_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  post_ctx *ctx = vctx;
  (void)status;
  jb_log_writer lw;
  MDB_cursor *jobs = NULL, *ready = NULL;
  int rc = jb__log_open_for(s, txn, &lw, ctx->n);
  if (rc) return rc;
  /* A process's job uuids increase (version 7) and so do sequences: the
   * posts of a batch usually go at the end of `jobs` and of `ready`. */
  bool jobs_end = true, ready_end = true, noted = false;
  uint32_t noted_lane = 0;
  if ((rc = mdb_cursor_open(txn, s->jobs, &jobs)) == 0)
    rc = mdb_cursor_open(txn, s->ready, &ready);
  for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
    const jb_store_post *p = &ctx->posts[i];
    uint8_t jobkey[JB_JOBKEY_LEN], seqbuf[JB_SEQ_MAXLEN];
    uint64_t seq = lw.next; /* the sequence of this job's POSTED event */
    size_t seqlen = jb__posting_seq(seqbuf, seq);
    jb__jobkey(jobkey, p->priority, seq);

    MDB_val k = {16, (void *)p->uuid};
    MDB_val v = {sizeof(jb_jobhdr) + p->prefix_len + seqlen, NULL};
    rc = put_at_end(jobs, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE, &jobs_end);
    if (rc == MDB_KEYEXIST) {
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, p->uuid);
      rc = jb__err(JB_EINVAL, "job %s is already on the board", t);
    }
    if (rc) break;
    jb_jobhdr h = {.format = 1, .posted_us = ctx->now_us,
                   .flags = p->x ? JB_JOB_F_X : 0};
    memcpy(h.jobkey, jobkey, JB_JOBKEY_LEN);
    /* Its name's lane (names.h); a batch of one name reads `queues` once. */
    const char *name;
    size_t name_len;
    if (!jb__history_posting_name(p->prefix, p->prefix_len, &name, &name_len)) {
      rc = MDB_CORRUPTED; /* core builds every posting: never here */
      break;
    }
    uint32_t lane = jb__lane(name, name_len);
    jb__hdr_set_lane(&h, lane);
    if (!noted || lane != noted_lane) {
      if ((rc = jb__queue_note(s, txn, lane, name, name_len))) break;
      noted = true;
      noted_lane = lane;
    }
    uint8_t *d = v.mv_data;
    memcpy(d, &h, sizeof h);
    memcpy(d + sizeof h, p->prefix, p->prefix_len);
    memcpy(d + sizeof h + p->prefix_len, seqbuf, seqlen);

    if (p->x) {
      uint8_t held[16];
      if (p->x->rec.unique_len &&
          (rc = jb__unique_take(s, txn, p->x->unique, p->x->rec.unique_len,
                                p->uuid, held))) {
        if (rc == JB_EEXISTS && ctx->held_by) {
          memcpy(ctx->held_by, held, 16);
          if (ctx->held_idx) *ctx->held_idx = i;
        }
        break;
      }
      if ((rc = jb__jobx_put(s, txn, p->uuid, p->x))) break;
      if (p->x->snz.deadline_us &&
          (rc = jb__expiry_put(s, txn, p->x->snz.deadline_us, p->uuid)))
        break;
    }
    if (p->due_us > ctx->now_us) {
      if ((rc = jb__delay_put(s, txn, jobkey, p->uuid, ctx->now_us,
                              p->due_us)))
        break;
      rc = jb__log_put(&lw, JB_EV_POSTED, p->uuid, jobkey, NULL, 0,
                       ctx->now_us);
      continue;
    }

    jb_readyrec r = {.modified_us = ctx->now_us};
    memcpy(r.uuid, p->uuid, 16);
    k = (MDB_val){JB_JOBKEY_LEN, jobkey};
    v = (MDB_val){sizeof r, &r};
    /* Never over another job's entry (check would find that job in
     * neither index): a key held already is a damaged board. */
    if ((rc = put_at_end(ready, &k, &v, MDB_NOOVERWRITE, &ready_end))) {
      if (rc == MDB_KEYEXIST) rc = MDB_CORRUPTED;
      break;
    }
    uint8_t bk[JB_BYNAME_KEY_LEN];
    jb__put_be32(bk, lane);
    memcpy(bk + 4, jobkey, JB_JOBKEY_LEN);
    k = (MDB_val){sizeof bk, bk};
    v = (MDB_val){16, (void *)p->uuid};
    if ((rc = mdb_put(txn, s->byname, &k, &v, 0))) break;
    rc = jb__log_put(&lw, JB_EV_POSTED, p->uuid, jobkey, NULL, 0, ctx->now_us);
  }
  if (ready) mdb_cursor_close(ready);
  if (jobs) mdb_cursor_close(jobs);
  return jb__log_close(s, txn, &lw, rc);
}

int jb__store_post(jb_store *s, const jb_store_post *posts, size_t n,
                   int64_t now_us) {
  return jb__store_post_x(s, posts, n, now_us, NULL, NULL);
}

int jb__store_post_x(jb_store *s, const jb_store_post *posts, size_t n,
                     int64_t now_us, uint8_t held_by[16], size_t *held_idx) {
  post_ctx ctx = {posts, n, now_us, held_by, held_idx};
  return jb__store_write(s, post_body, &ctx);
}

/* ----------------------------------------------------------------- claim */

typedef struct {
  const uint8_t *uuid;
  const jb_store_claim_req *req;
  uint64_t token;
  unsigned xflags;    /* JB_STORE_DECIDED */
  const uint8_t *after; /* claim-next: start after this jobkey */
  bool skip_remote;   /* claim-next */
  uint8_t *key_out;   /* claim-next: the Redis-decided job met */
  uint8_t *uuid_out;  /* claim-next */
  jb_job *job;        /* claim-next: wants a snapshot */
  jb_job_raw raw;     /* claim-next: what to decode after commit */
  bool moved;         /* claim-next: its reap sent a job to the dead
                         letters (a change to commit, claim or not) */
} claim_ctx;

/* An unclaimed job posted with options: if its deadline to start passed,
 * it ends (expiry.c) and *gone says so. */
static int expire_if_due(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                         const jb_jobhdr *h, int64_t now_us, bool *gone) {
  *gone = false;
  jb_jobx x;
  int rc = jb__jobx_get(s, txn, uuid, &x);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (x.snz.deadline_us == 0 || x.snz.deadline_us > now_us) return 0;
  MDB_val posting;
  jb_jobhdr hh;
  if ((rc = jb__job_header(s, txn, uuid, &hh, &posting))) return rc;
  *gone = true;
  return jb__expire_job(s, txn, uuid, h, posting, &x, now_us);
}

/* A claim by uuid of a job whose name is at its cap, or has no token of
 * its rate limit (names.h): refused, naming the control. 0 when it may be
 * claimed. */
static int cap_refusal(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                       int64_t now_us) {
  bool at_cap = false, none = false;
  uint32_t cap = 0;
  jb_queueent e;
  int rc = jb__queue_at_cap(s, txn, uuid, &at_cap, &cap);
  if (rc == 0 && !at_cap)
    rc = jb__queue_no_token(s, txn, uuid, now_us, &none, &e);
  if (rc) return rc;
  if (!at_cap && !none) return 0;
  char t[JB_UUID_STRLEN];
  fmt_uuid(t, uuid);
  if (at_cap)
    return jb__err(JB_ENOTDUE, "job %s: its name is at its cap of %u claims "
                   "at once: not claimable until one of them ends", t, cap);
  char per[40], wait[40];
  return jb__err(JB_ENOTDUE, "job %s: its name is at its rate limit of %u "
                 "claims per %s: not claimable for another %s", t, e.q.rate,
                 jb__duration_text(per, sizeof per, (int64_t)e.r.period_ms),
                 jb__duration_text(wait, sizeof wait,
                                   (jb__rate_next_us(&e, now_us) - now_us +
                                    999) / 1000));
}

static int claim_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  claim_ctx *ctx = vctx;
  const jb_store_claim_req *req = ctx->req;
  int64_t now_bt = jb__boottime_us();
  jb_jobhdr h;
  int rc = find_job(s, txn, ctx->uuid, &h, NULL);
  if (rc) return rc;
  bool decided = (h.flags & JB_JOB_F_REMOTE) && (ctx->xflags & JB_STORE_DECIDED);
  if ((h.flags & JB_JOB_F_REMOTE) && !decided) return JB__REMOTE;
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc == 0 && decided) {
    /* Redis gave the claim to req->who: whatever the local record said
     * (it follows Redis, late), the claim is recorded afresh. */
    if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &rec))) return rc;
    return make_claim(s, txn, h.jobkey, ctx->uuid, req, now_bt, &ctx->token,
                      h.flags);
  }
  if (rc == 0) {
    live_cache lc = {.s = s};
    const char *why = claim_lapsed(s, &rec, now_bt, &lc);
    if (why) {
      /* Lapsed: it ends here (a failed attempt), and the job is claimed
       * afresh below, unless that was its last attempt. */
      bool dead = false;
      if ((rc = lapse_claim(s, txn, h.jobkey, &rec, owner, req->now_us, why,
                            &dead)))
        return rc;
      if (dead) {
        char t[JB_UUID_STRLEN];
        fmt_uuid(t, ctx->uuid);
        *status = jb__err(JB_ENOTFOUND, "job %s is not on the board: its "
                          "claim lapsed (%s) and that was its last attempt "
                          "(it is in the dead letters)", t, why);
        return 0; /* committed: the job moved */
      }
      /* The lapse freed its slot; the cap may still be full. */
      if ((rc = cap_refusal(s, txn, ctx->uuid, req->now_us))) {
        if (rc != JB_ENOTDUE) return rc;
        *status = rc;
        return 0; /* committed: the lapse */
      }
      if ((rc = jb__ready_remove(s, txn, h.jobkey, jb__hdr_lane(&h))))
        return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
      return make_claim(s, txn, h.jobkey, ctx->uuid, req, now_bt, &ctx->token,
                        h.flags);
    }
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, ctx->uuid);
    if (!same_owner(owner, rec.owner_len, req->who, req->who_len))
      return jb__err(JB_ECLAIMED, "job %s is already claimed by %.*s", t,
                     (int)rec.owner_len, owner);
    /* taskflow: a same-owner re-claim refreshes the claim's time and its
     * lease but still reports "already claimed". The token stays. */
    *status = jb__err(JB_ECLAIMED, "job %s is already claimed by %.*s (the "
                      "caller itself; its claim was refreshed)",
                      t, (int)rec.owner_len, owner);
    ctx->token = rec.token;
    jb_claimrec fresh = rec;
    fresh.claimed_us = req->now_us;
    fresh.epoch = s->epoch;
    int64_t lease = req->lease_ms > 0 ? req->lease_ms : rec.lease_ms;
    if (lease > 0) {
      fresh.flags |= JB_CLAIM_F_LEASE;
      fresh.lease_ms = lease;
      fresh.expires_bt = now_bt + lease * 1000;
    }
    if (req->bind) {
      fresh.flags |= JB_CLAIM_F_BOUND;
      fresh.holder_pid = req->holder.pid;
      fresh.holder_start = req->holder.start;
    }
    if ((h.flags & JB_JOB_F_X) &&
        (rc = jb__limit_cap(s, txn, ctx->uuid, &fresh)))
      return rc;
    if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &rec)) ||
        (rc = jb__claim_put(s, txn, h.jobkey, &fresh, req->who, req->who_len)))
      return rc;
    return jb__log_event(s, txn, JB_EV_REFRESHED, ctx->uuid, h.jobkey, req->who,
                     req->who_len, req->now_us);
  }
  if (rc != MDB_NOTFOUND) return rc;
  if (!decided && (h.flags & JB_JOB_F_X)) {
    /* Past its deadline to start, it is never claimed: it ends here (the
     * sweep of a claim-next may not have reached it yet). */
    bool gone = false;
    if ((rc = expire_if_due(s, txn, ctx->uuid, &h, req->now_us, &gone)))
      return rc;
    if (gone) {
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, ctx->uuid);
      *status = jb__err(JB_ENOTFOUND, "job %s is not on the board: it was "
                        "not claimed by its deadline to start, and expired",
                        t);
      return 0; /* committed: the job ended */
    }
  }
  if (!decided && (rc = cap_refusal(s, txn, ctx->uuid, req->now_us)))
    return rc;
  rc = jb__ready_remove(s, txn, h.jobkey, jb__hdr_lane(&h));
  if (rc == MDB_NOTFOUND) {
    /* Delayed: claimable once due (then it leaves `delayed` here). */
    jb_delayrec dr;
    if ((rc = jb__delay_get(s, txn, h.jobkey, &dr)))
      return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    /* Redis decided (it lists the job: due there): it is claimed. */
    if (!decided && dr.due_us > req->now_us) {
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, ctx->uuid);
      char wait[40];
      return jb__err(JB_ENOTDUE, "job %s is delayed: not claimable for "
                     "another %s", t,
                     jb__duration_text(wait, sizeof wait,
                                       (dr.due_us - req->now_us + 999) / 1000));
    }
    rc = jb__delay_del(s, txn, h.jobkey, &dr);
  }
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  return make_claim(s, txn, h.jobkey, ctx->uuid, req, now_bt, &ctx->token,
                      h.flags);
}

int jb__store_claim_x(jb_store *s, const uint8_t uuid[16],
                      const jb_store_claim_req *req, uint64_t *token,
                      unsigned xflags) {
  claim_ctx ctx = {.uuid = uuid, .req = req, .xflags = xflags};
  int rc = jb__store_write(s, claim_body, &ctx);
  *token = ctx.token;
  return rc;
}

int jb__store_claim(jb_store *s, const uint8_t uuid[16],
                    const jb_store_claim_req *req, uint64_t *token) {
  return jb__store_claim_x(s, uuid, req, token, 0);
}

/* n claims Redis decided, in one transaction: each is claim_body with
 * JB_STORE_DECIDED, as jb__store_claim_x runs it alone. */
typedef struct {
  const uint8_t (*uuids)[16];
  size_t n;
  const jb_store_claim_req *req;
  uint64_t *tokens;
  int *results;
} decided_ctx;

static int claim_decided_body(jb_store *s, MDB_txn *txn, void *vctx,
                              int *status) {
  decided_ctx *c = vctx;
  (void)status;
  for (size_t i = 0; i < c->n; i++) {
    claim_ctx one = {.uuid = c->uuids[i], .req = c->req,
                     .xflags = JB_STORE_DECIDED};
    int st = JB_OK;
    int rc = claim_body(s, txn, &one, &st);
    /* A job no longer on the board is found missing before anything of
     * it is written (find_job): the others go on. Any other error may
     * follow writes, and aborts the whole transaction. */
    if (rc == JB_ENOTFOUND) {
      c->results[i] = rc;
      c->tokens[i] = 0;
      continue;
    }
    if (rc) return rc;
    c->results[i] = st;
    c->tokens[i] = one.token;
  }
  return 0;
}

int jb__store_claim_decided_many(jb_store *s, const uint8_t (*uuids)[16],
                                 size_t n, const jb_store_claim_req *req,
                                 uint64_t *tokens, int *results) {
  decided_ctx c = {uuids, n, req, tokens, results};
  return jb__store_write(s, claim_decided_body, &c);
}

/* The run of Redis-decided jobs that claim-next meets from jobkey
 * `from` on (that key included), up to the first job decided here. */
typedef struct {
  const uint8_t *from;
  const jb_store_claim_req *req; /* its names */
  size_t max, n;
  uint8_t (*uuids)[16];
  uint8_t (*keys)[JB_JOBKEY_LEN];
} run_ctx;

static bool name_wanted(const jb_store_claim_req *req, const jb_queue_ctls *c,
                        uint32_t lane, const MDB_val *posting);

static int remote_run_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  run_ctx *c = vctx;
  (void)status;
  c->n = 0;
  jb_queue_ctls ctls = {0};
  MDB_cursor *cur = NULL;
  int rc = jb__queue_ctls_load(s, txn, c->req->now_us, &ctls);
  if (rc == 0 && (ctls.queuectl & JB_QUEUECTL_BOARD)) rc = MDB_NOTFOUND;
  if (rc == 0) rc = mdb_cursor_open(txn, s->ready, &cur);
  MDB_val k = {JB_JOBKEY_LEN, (void *)c->from}, v;
  if (rc == 0) rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  /* Jobs of names not chosen (or paused) are passed over, a bounded
   * number: the claim-next that follows the run finds the rest. */
  size_t passed = 0;
  while (rc == 0 && c->n < c->max && passed <= 4 * c->max) {
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size != sizeof(jb_readyrec)) {
      rc = MDB_CORRUPTED;
      break;
    }
    uint8_t uuid[16];
    memcpy(uuid, v.mv_data, 16); /* jb_readyrec.uuid is first */
    jb_jobhdr h;
    MDB_val posting;
    if ((rc = jb__job_header(s, txn, uuid, &h, &posting))) {
      if (rc == MDB_NOTFOUND) rc = MDB_CORRUPTED;
      break;
    }
    if (!name_wanted(c->req, &ctls, jb__hdr_lane(&h), &posting)) {
      passed++;
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      continue;
    }
    if (!(h.flags & JB_JOB_F_REMOTE)) break;
    memcpy(c->uuids[c->n], uuid, 16);
    memcpy(c->keys[c->n], k.mv_data, JB_JOBKEY_LEN);
    c->n++;
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  if (cur) mdb_cursor_close(cur);
  jb__queue_ctls_free(&ctls);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__store_remote_run(jb_store *s, const uint8_t from[JB_JOBKEY_LEN],
                         const jb_store_claim_req *req, size_t max,
                         uint8_t (*uuids)[16], uint8_t (*keys)[JB_JOBKEY_LEN],
                         size_t *n_out) {
  run_ctx c = {.from = from, .req = req, .max = max, .uuids = uuids,
               .keys = keys};
  int rc = jb__store_read(s, remote_run_body, &c);
  *n_out = rc == JB_OK ? c.n : 0;
  return rc;
}

typedef struct {
  const uint8_t (*uuids)[16];
  const uint64_t *seqs;
  size_t n;
  jb_store_pub state;
  int *results;
} mark_ctx;

/* The flags a publication state gives a job. */
static uint8_t pub_flags(uint8_t flags, jb_store_pub state) {
  uint8_t ours = flags & JB_JOB_F_OURS;
  flags &= (uint8_t)~(JB_JOB_F_REMOTE | JB_JOB_F_PUBLISHING | JB_JOB_F_OURS);
  if (state == JB_STORE_PUB_PENDING)
    flags |= JB_JOB_F_REMOTE | JB_JOB_F_PUBLISHING | JB_JOB_F_OURS;
  else if (state == JB_STORE_PUB_DONE)
    flags |= JB_JOB_F_REMOTE | ours;
  return flags;
}

/*
 * The key and flags a publication state gives a job (store.h, the bands):
 * published, the remote band under Redis's sequence `rseq` (0: the one its
 * key holds); marked, its key as it is (a job published again after Redis
 * lost its data keeps its old place until the new number is known);
 * decided here, the local band. A job in the remote band never takes a
 * Redis number for a board sequence: one published from here goes back to
 * the board sequence its posting holds (its POSTED event's: below the
 * log's next, and unique); one mirrored in from Redis has no board
 * sequence, and stays Redis-decided where it is (only its publication
 * marks go).
 */
static int pub_key(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   const jb_jobhdr *h, MDB_val posting, jb_store_pub state,
                   uint64_t rseq, uint8_t key[JB_JOBKEY_LEN],
                   uint8_t *flags) {
  jb_priority p = jb__jobkey_priority(h->jobkey);
  uint64_t seq = jb__jobkey_seq(h->jobkey);
  bool remote = jb__jobkey_is_remote(h->jobkey);
  memcpy(key, h->jobkey, JB_JOBKEY_LEN);
  *flags = pub_flags(h->flags, state);
  if (state == JB_STORE_PUB_DONE) {
    if (rseq == 0) rseq = seq;
    if (jb__jobkey_has_rseq(h->jobkey, rseq)) return 0;
    return jb__jobkey_remote_free(s, txn, p, rseq, uuid, key);
  }
  if (state == JB_STORE_PUB_PENDING || !remote) return 0;
  if (!(h->flags & JB_JOB_F_OURS)) {
    *flags = JB_JOB_F_REMOTE;
    return 0;
  }
  jb_job job = {0};
  char why[200];
  int rc = jb__posting_decode(&job, posting.mv_data, posting.mv_size, why,
                              sizeof why);
  uint64_t board_seq = job.sequence;
  jb__job_clear(&job);
  if (rc != JB_OK) return rc == JB_ECORRUPT ? MDB_CORRUPTED : rc;
  jb__jobkey(key, p, board_seq);
  MDB_val k = {JB_JOBKEY_LEN, key}, v;
  rc = mdb_get(txn, s->ready, &k, &v);
  if (rc == MDB_NOTFOUND) rc = mdb_get(txn, s->claims, &k, &v);
  return rc == MDB_NOTFOUND ? 0 : rc ? rc : MDB_CORRUPTED; /* held: check */
}

static int mark_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  mark_ctx *ctx = vctx;
  int rc = 0;
  for (size_t i = 0; i < ctx->n && rc == 0; i++) {
    const uint8_t *uuid = ctx->uuids[i];
    jb_jobhdr h;
    MDB_val posting;
    rc = find_job(s, txn, uuid, &h, &posting);
    if (ctx->results) ctx->results[i] = rc == JB_ENOTFOUND ? JB_ENOTFOUND : JB_OK;
    if (rc == JB_ENOTFOUND && ctx->n > 1) {
      rc = 0; /* a batch goes on: the caller reads results[i] */
      continue;
    }
    if (rc) break;
    /* A delayed job is published once due, never before (taskflow would
     * run it): then it joins `ready`, so that Redis's view and the
     * board's agree. */
    int64_t now = jb__now_us();
    jb_delayrec dr;
    if ((ctx->state == JB_STORE_PUB_PENDING ||
         ctx->state == JB_STORE_PUB_PENDING_UNHELD) &&
        jb__delay_get(s, txn, h.jobkey, &dr) == 0 && dr.due_us > now) {
      if (ctx->results) ctx->results[i] = JB_ENOTDUE;
      if (ctx->n > 1) continue;
      char t[JB_UUID_STRLEN];
      fmt_uuid(t, uuid);
      char wait[40];
      rc = jb__err(JB_ENOTDUE, "job %s is delayed: it is published once "
                   "due, in %s", t,
                   jb__duration_text(wait, sizeof wait,
                                     (dr.due_us - now + 999) / 1000));
      break;
    }
    jb_store_pub state = ctx->state;
    if (state == JB_STORE_PUB_PENDING_UNHELD) {
      state = JB_STORE_PUB_PENDING;
      jb_claimrec rec;
      const char *owner;
      if (!(h.flags & JB_JOB_F_REMOTE) &&
          jb__claim_get(s, txn, h.jobkey, &rec, &owner) == 0 &&
          (rec.flags & JB_CLAIM_F_BOUND) &&
          jb__claim_lapsed_why(s, &rec) == NULL) {
        if (ctx->results) ctx->results[i] = JB_ECLAIMED;
        if (ctx->n > 1) continue;
        char t[JB_UUID_STRLEN];
        fmt_uuid(t, uuid);
        rc = jb__err(JB_ECLAIMED, "job %s is held by a live process of this "
                     "host: not published while it holds it", t);
        break;
      }
    }
    if ((rc = jb__promote_one(s, txn, h.jobkey, now))) break;
    uint8_t key[JB_JOBKEY_LEN], flags;
    rc = pub_key(s, txn, uuid, &h, posting, state,
                 ctx->seqs ? ctx->seqs[i] : 0, key, &flags);
    if (rc == 0) rc = jb__job_rekey(s, txn, uuid, &h, key, flags);
  }
  return rc;
}

int jb__txn_mark_pending(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                         int64_t now_us) {
  jb_jobhdr h;
  MDB_val posting;
  int rc = jb__job_header(s, txn, uuid, &h, &posting);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  jb_delayrec dr;
  if (jb__delay_get(s, txn, h.jobkey, &dr) == 0 && dr.due_us > now_us)
    return 0;
  if ((rc = jb__promote_one(s, txn, h.jobkey, now_us))) return rc;
  uint8_t key[JB_JOBKEY_LEN], flags;
  rc = pub_key(s, txn, uuid, &h, posting, JB_STORE_PUB_PENDING, 0, key, &flags);
  if (rc == 0) rc = jb__job_rekey(s, txn, uuid, &h, key, flags);
  return rc;
}

int jb__store_set_published(jb_store *s, const uint8_t (*uuids)[16], size_t n,
                            jb_store_pub state, const uint64_t *seqs,
                            int *results) {
  if (n == 0) return JB_OK;
  mark_ctx ctx = {uuids, seqs, n, state, results};
  return jb__store_write(s, mark_body, &ctx);
}

int jb__store_mark_remote(jb_store *s, const uint8_t uuid[16]) {
  return jb__store_set_published(s, (const uint8_t(*)[16])uuid, 1,
                                 JB_STORE_PUB_DONE, NULL, NULL);
}

/*
 * Returning lapsed claims to the ready index, done by claim-next before it
 * takes the first ready job. Bounded: at most REAP_MAX claims per call, so
 * a write transaction never sweeps an unbounded number.
 *  - Leases are in expiry order (`leases`), those of an earlier boot
 *    first: the lapsed ones are at the front.
 *  - Process-bound claims (`holders`, by process) need a look at /proc
 *    for each process: a sweep checks up to SWEEP_PROCS processes, once
 *    per SWEEP_EVERY_US per process, or at once when nothing is ready,
 *    resuming where the last sweep stopped. Claims of an earlier boot sort
 *    first and go without a look.
 */
#define REAP_MAX 16
#define SWEEP_PROCS 8
#define SWEEP_EVERY_US 50000

typedef struct {
  uint8_t jobkey[JB_JOBKEY_LEN];
  uint8_t key[JB_HOLDERKEY_LEN]; /* the index entry it came from */
  bool from_leases;
} reap_item;

static void add_item(reap_item *out, int *n, const MDB_val *k,
                     bool from_leases) {
  reap_item *it = &out[(*n)++];
  size_t klen = from_leases ? JB_LEASEKEY_LEN : JB_HOLDERKEY_LEN;
  memcpy(it->jobkey, (const uint8_t *)k->mv_data + klen - JB_JOBKEY_LEN,
         JB_JOBKEY_LEN);
  memcpy(it->key, k->mv_data, klen);
  it->from_leases = from_leases;
}

/* Delete the index entry of a reap item whose claim is gone. */
static int del_dangling(jb_store *s, MDB_txn *txn, const reap_item *it) {
  MDB_val k = {it->from_leases ? JB_LEASEKEY_LEN : JB_HOLDERKEY_LEN,
               (void *)it->key};
  int rc = mdb_del(txn, it->from_leases ? s->leases : s->holders, &k, NULL);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Collect up to `max` lapsed leases (at the front of `leases`). */
static int collect_leases(jb_store *s, MDB_txn *txn, int64_t now_bt,
                          reap_item *out, int max, int *n) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->leases, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && *n < max;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_LEASEKEY_LEN) { rc = MDB_CORRUPTED; break; }
    uint32_t epoch = jb__be32(k.mv_data);
    int64_t expires = (int64_t)jb__be64((uint8_t *)k.mv_data + 4);
    if (epoch == s->epoch && expires > now_bt) break;
    add_item(out, n, &k, true);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

static int collect_holders(jb_store *s, MDB_txn *txn, int64_t now_bt,
                           bool nothing_ready, reap_item *out, int max,
                           int *n) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->holders, &cur);
  if (rc) return rc;
  MDB_val k, v;
  /* Claims of an earlier boot: at the front, no look needed. */
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && *n < max;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_HOLDERKEY_LEN) { rc = MDB_CORRUPTED; break; }
    if (jb__be32(k.mv_data) == s->epoch) break;
    add_item(out, n, &k, false);
  }
  if (rc == MDB_NOTFOUND) rc = 0;
  bool due = nothing_ready || now_bt - s->sweep_bt >= SWEEP_EVERY_US;
  if (rc || *n >= max || !due) {
    mdb_cursor_close(cur);
    return rc;
  }
  s->sweep_bt = now_bt;
  /* Resume after the last process looked at (s->sweep_after: its key
   * prefix, then 0xff, so the range starts past its claims), go round to
   * the first process of this boot at the end, and stop after SWEEP_PROCS
   * processes or a full round. */
  uint8_t resume[JB_HOLDERKEY_LEN], pos[JB_HOLDERKEY_LEN];
  memcpy(resume, s->sweep_after, sizeof resume);
  if (jb__be32(resume) != s->epoch) {
    memset(resume, 0, sizeof resume);
    jb__put_be32(resume, s->epoch);
  }
  bool from_start = memcmp(resume + 4, (uint8_t[12]){0}, 12) == 0;
  memcpy(pos, resume, sizeof pos);
  k = (MDB_val){sizeof pos, pos};
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  int procs = 0;
  bool wrapped = false, have_last = false, last_alive = true;
  uint8_t last[16];
  live_cache lc = {.s = s};
  while (*n < max) {
    if (rc == MDB_NOTFOUND || (rc == 0 && jb__be32(k.mv_data) != s->epoch)) {
      if (wrapped || from_start) break;
      wrapped = true;
      memset(pos, 0, sizeof pos);
      jb__put_be32(pos, s->epoch);
      k = (MDB_val){sizeof pos, pos};
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
      continue;
    }
    if (rc) break;
    if (k.mv_size != JB_HOLDERKEY_LEN) { rc = MDB_CORRUPTED; break; }
    if (!have_last || memcmp(k.mv_data, last, 16) != 0) {
      if (procs == SWEEP_PROCS) break;
      /* Came round past the process the sweep resumed after (which is
       * looked at again last: it may have died since). */
      if (wrapped && memcmp(k.mv_data, resume, 16) > 0) break;
      procs++;
      have_last = true;
      memcpy(last, k.mv_data, 16);
      last_alive = holder_alive(&lc, jb__be32((uint8_t *)k.mv_data + 4),
                                jb__be64((uint8_t *)k.mv_data + 8));
      memcpy(s->sweep_after, k.mv_data, 16);
      memset(s->sweep_after + 16, 0xff, JB_JOBKEY_LEN);
      if (last_alive) {
        /* Past all of this live process's claims in one step: the sweep's
         * cost is the processes it looks at, not their claims. */
        memcpy(pos, s->sweep_after, sizeof pos);
        k = (MDB_val){sizeof pos, pos};
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        continue;
      }
    }
    add_item(out, n, &k, false);
    if (*n >= max) {
      /* Cut short inside a dead process's claims: the next sweep starts
       * at this process again for the rest. */
      memset(s->sweep_after + 16, 0, JB_JOBKEY_LEN);
      break;
    }
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Return up to REAP_MAX lapsed claims to the ready index (or, a job's
 * last attempt, to the dead letters: then *moved). */
static int reap(jb_store *s, MDB_txn *txn, int64_t now_us, int64_t now_bt,
                bool *moved) {
  reap_item items[REAP_MAX];
  int n = 0;
  int rc = collect_leases(s, txn, now_bt, items, REAP_MAX, &n);
  if (rc) return rc;
  if (n < REAP_MAX) {
    MDB_stat st;
    if ((rc = mdb_stat(txn, s->holders, &st))) return rc;
    if (st.ms_entries > 0) {
      bool nothing_ready = false;
      if (n == 0) {
        MDB_stat rs;
        if ((rc = mdb_stat(txn, s->ready, &rs))) return rc;
        nothing_ready = rs.ms_entries == 0;
      }
      rc = collect_holders(s, txn, now_bt, nothing_ready, items, REAP_MAX,
                           &n);
      if (rc) return rc;
    }
  }
  live_cache lc = {.s = s};
  for (int i = 0; i < n; i++) {
    jb_claimrec rec;
    const char *owner;
    rc = jb__claim_get(s, txn, items[i].jobkey, &rec, &owner);
    if (rc == MDB_NOTFOUND) {
      /* Reaped already (a claim in both indexes), or an entry left behind
       * by damage: remove what names this jobkey, or it would fill every
       * later reap's slots. */
      if ((rc = del_dangling(s, txn, &items[i]))) return rc;
      continue;
    }
    if (rc) return rc;
    const char *why = claim_lapsed(s, &rec, now_bt, &lc);
    if (!why) continue;
    bool dead = false;
    if ((rc = lapse_claim(s, txn, items[i].jobkey, &rec, owner, now_us, why,
                          &dead)))
      return rc;
    if (dead) *moved = true;
  }
  return 0;
}

static int scan_start(MDB_cursor *cur, const uint8_t *after, MDB_val *k,
                      MDB_val *v);

/* A claim-next's candidate: does its name pass the names chosen and the
 * names' controls? `posting` is the job's. */
static bool name_wanted(const jb_store_claim_req *req, const jb_queue_ctls *c,
                        uint32_t lane, const MDB_val *posting) {
  if (!req->n_names && c->n == 0) return true;
  const char *name;
  size_t len;
  if (!jb__history_posting_name(posting->mv_data, posting->mv_size, &name,
                                &len))
    return false; /* check reports it */
  if (c->n && jb__queue_blocked(c, lane, name, len, NULL)) return false;
  return !req->n_names || jb__name_chosen(req->names, req->n_names, name, len);
}

/* The walk of `ready` in listing order (every name). Skips the jobs of
 * blocked names, up to a bound: past it, *fallback asks for the walk by
 * lanes from `at` on (a paused name's million jobs at the head of the
 * board are not looked at one by one). */
#define PLAIN_SKIP_MAX 64
static int pick_plain(jb_store *s, MDB_txn *txn, claim_ctx *ctx,
                      const jb_queue_ctls *ctls, uint8_t jobkey[JB_JOBKEY_LEN],
                      jb_jobhdr *h, bool *fallback) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->ready, &cur);
  if (rc) return rc;
  MDB_val k, v;
  unsigned skipped = 0;
  rc = scan_start(cur, ctx->after, &k, &v);
  while (rc == 0) {
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size != sizeof(jb_readyrec)) {
      rc = MDB_CORRUPTED;
      break;
    }
    memcpy(jobkey, k.mv_data, JB_JOBKEY_LEN);
    memcpy(ctx->uuid_out, v.mv_data, 16); /* jb_readyrec.uuid is first */
    /* The job's flags: one get of its header (the authority rule: a
     * Redis-decided job is never claimed here without Redis). */
    MDB_val posting;
    if ((rc = find_job(s, txn, ctx->uuid_out, h, &posting))) {
      if (rc == JB_ENOTFOUND) rc = MDB_CORRUPTED;
      break;
    }
    if (ctls->n && !name_wanted(ctx->req, ctls, jb__hdr_lane(h), &posting)) {
      if (++skipped > PLAIN_SKIP_MAX) {
        *fallback = true;
        break;
      }
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      continue;
    }
    if (!(h->flags & JB_JOB_F_REMOTE)) break;
    if (!ctx->skip_remote) {
      rc = JB__REMOTE;
      break;
    }
    if (jb__jobkey_is_remote(jobkey)) {
      /* Every job of a priority's Redis band is Redis's (store.h): on to
       * the jobs decided here of the same priority, in one seek, so that
       * a board full of Redis's jobs is not walked job by job while Redis
       * is away. */
      uint8_t local[JB_JOBKEY_LEN] = {jobkey[0], 0x80};
      k = (MDB_val){JB_JOBKEY_LEN, local};
      rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    } else {
      rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
  }
  mdb_cursor_close(cur);
  return rc;
}

/* One lane of a walk by lanes: its next entry's jobkey (have false when
 * the lane has no more). */
typedef struct {
  uint32_t lane;
  bool have;
  uint8_t jobkey[JB_JOBKEY_LEN];
  uint8_t uuid[16];
} lane_head;

/* Move a lane's head to its first entry at or after `from` (NULL: its
 * first). */
static int lane_seek(MDB_cursor *cur, lane_head *l, const uint8_t *from,
                     bool after) {
  uint8_t key[JB_BYNAME_KEY_LEN] = {0};
  jb__put_be32(key, l->lane);
  if (from) memcpy(key + 4, from, JB_JOBKEY_LEN);
  MDB_val k = {sizeof key, key}, v;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  if (rc == 0 && after && from && k.mv_size == sizeof key &&
      memcmp(k.mv_data, key, sizeof key) == 0)
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
  l->have = false;
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (k.mv_size != JB_BYNAME_KEY_LEN || v.mv_size != 16) return MDB_CORRUPTED;
  if (jb__be32(k.mv_data) != l->lane) return 0;
  memcpy(l->jobkey, (const uint8_t *)k.mv_data + 4, JB_JOBKEY_LEN);
  memcpy(l->uuid, v.mv_data, 16);
  l->have = true;
  return 0;
}

typedef struct {
  lane_head *v;
  size_t n, cap;
  const jb_store_claim_req *req;
  const jb_queue_ctls *ctls;
} lane_set;

static int lane_add(lane_set *ls, uint32_t lane) {
  for (size_t i = 0; i < ls->n; i++)
    if (ls->v[i].lane == lane) return 0;
  if (ls->n == ls->cap) {
    size_t cap = ls->cap ? ls->cap * 2 : 16;
    lane_head *v = realloc(ls->v, cap * sizeof *v);
    if (!v) return JB_ENOMEM;
    ls->v = v;
    ls->cap = cap;
  }
  ls->v[ls->n++] = (lane_head){.lane = lane};
  return 0;
}

/* The names recorded that the claim wants and that are not blocked: their
 * lanes. */
static int lane_visit(void *arg, uint32_t lane, const char *name, size_t len,
                      const jb_queueent *e) {
  lane_set *ls = arg;
  jb_queue_ctl q = {.flags = e->q.flags, .cap = e->q.cap, .held = e->q.held};
  if (q.flags & JB_QUEUE_F_RATED)
    q.next_us = jb__rate_next_us(e, ls->ctls->now_us);
  if (jb__queue_ctl_blocked(ls->ctls, &q)) return 0;
  const jb_store_claim_req *req = ls->req;
  bool want = !req->n_names ||
              jb__name_chosen(req->names, req->n_names, name, len);
  return want ? lane_add(ls, lane) : 0;
}

/* The walk by lanes: the first job in listing order, from `from` on
 * (after it), among the lanes of the names wanted; each lane one seek in
 * `byname`. */
static int pick_lanes(jb_store *s, MDB_txn *txn, claim_ctx *ctx,
                      const jb_queue_ctls *ctls, const uint8_t *from,
                      uint8_t jobkey[JB_JOBKEY_LEN], jb_jobhdr *h) {
  const jb_store_claim_req *req = ctx->req;
  lane_set ls = {.req = req, .ctls = ctls};
  int rc = 0;
  bool exact = req->n_names > 0;
  for (size_t i = 0; exact && i < req->n_names; i++) {
    size_t len = strlen(req->names[i]);
    if (jb__name_is_prefix(req->names[i], len)) exact = false;
  }
  if (exact || req->in_order) {
    /* Name by name, in the order given: an exact name's lane without
     * reading `queues` (a paused one is passed over; a job of another name
     * sharing its lane, by its name, in name_wanted), a prefix's lanes
     * from it. */
    jb_store_claim_req one = *req;
    for (size_t i = 0; rc == 0 && i < req->n_names; i++) {
      const char *name = req->names[i];
      size_t len = strlen(name);
      if (jb__name_is_prefix(name, len)) {
        one.names = &req->names[i];
        one.n_names = 1;
        ls.req = &one;
        rc = jb__queue_walk(s, txn, lane_visit, &ls);
        ls.req = req;
        continue;
      }
      uint32_t lane = jb__lane(name, len);
      if (!ctls->n || !jb__queue_blocked(ctls, lane, name, len, NULL))
        rc = lane_add(&ls, lane);
    }
  } else {
    rc = jb__queue_walk(s, txn, lane_visit, &ls);
  }
  MDB_cursor *cur = NULL;
  if (rc == 0) rc = mdb_cursor_open(txn, s->byname, &cur);
  for (size_t i = 0; rc == 0 && i < ls.n; i++)
    rc = lane_seek(cur, &ls.v[i], from, true);
  while (rc == 0) {
    lane_head *best = NULL;
    for (size_t i = 0; i < ls.n && !(best && req->in_order); i++)
      if (ls.v[i].have &&
          (!best || memcmp(ls.v[i].jobkey, best->jobkey, JB_JOBKEY_LEN) < 0))
        best = &ls.v[i];
    if (!best) {
      rc = MDB_NOTFOUND;
      break;
    }
    memcpy(jobkey, best->jobkey, JB_JOBKEY_LEN);
    memcpy(ctx->uuid_out, best->uuid, 16);
    MDB_val posting;
    if ((rc = find_job(s, txn, ctx->uuid_out, h, &posting))) {
      if (rc == JB_ENOTFOUND) rc = MDB_CORRUPTED;
      break;
    }
    bool want = name_wanted(req, ctls, best->lane, &posting);
    if (want && !(h->flags & JB_JOB_F_REMOTE)) break;
    if (want && !ctx->skip_remote) {
      rc = JB__REMOTE;
      break;
    }
    if (want && jb__jobkey_is_remote(jobkey)) {
      /* As pick_plain: past the priority's Redis band in one seek. */
      uint8_t local[JB_JOBKEY_LEN] = {jobkey[0], 0x80};
      rc = lane_seek(cur, best, local, false);
    } else {
      rc = lane_seek(cur, best, jobkey, true);
    }
  }
  if (cur) mdb_cursor_close(cur);
  free(ls.v);
  return rc;
}

static int claim_next_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  claim_ctx *ctx = vctx;
  const jb_store_claim_req *req = ctx->req;
  (void)status;
  int64_t now_bt = jb__boottime_us();
  ctx->moved = false;
  int rc = reap(s, txn, req->now_us, now_bt, &ctx->moved);
  if (rc) return rc;
  /* Delayed jobs that are due join `ready` first (life.c): one look at
   * `due`'s first key when none is. */
  if ((rc = jb__promote_due(s, txn, req->now_us, JB_PROMOTE_MAX))) return rc;
  /* Jobs past their deadline to start end first (expiry.c): one look at
   * `expiry`'s first key when none is, at most JB_EXPIRE_MAX ended. */
  size_t expired = 0;
  if ((rc = jb__expire_due(s, txn, req->now_us, JB_EXPIRE_MAX, &expired)))
    return rc;
  if (expired) ctx->moved = true;
  /* The names' controls: one read of meta when there are none. */
  jb_queue_ctls ctls = {0};
  if ((rc = jb__queue_ctls_load(s, txn, req->now_us, &ctls))) {
    jb__queue_ctls_free(&ctls);
    return rc;
  }
  uint8_t jobkey[JB_JOBKEY_LEN];
  jb_jobhdr h = {0};
  bool paused = (ctls.queuectl & JB_QUEUECTL_BOARD) != 0;
  size_t picked_expired = 0;
again:
  if (paused) {
    rc = MDB_NOTFOUND;
  } else if (req->n_names) {
    rc = pick_lanes(s, txn, ctx, &ctls, ctx->after, jobkey, &h);
  } else {
    bool fallback = false;
    rc = pick_plain(s, txn, ctx, &ctls, jobkey, &h, &fallback);
    if (fallback)
      rc = pick_lanes(s, txn, ctx, &ctls, jobkey, jobkey, &h);
  }
  if (rc == 0 && (h.flags & JB_JOB_F_X)) {
    /* More than the sweep's bound were past their deadline and this is
     * one: it ends, and the pick goes on, up to JB_EXPIRE_MAX more. */
    bool gone = false;
    rc = expire_if_due(s, txn, ctx->uuid_out, &h, req->now_us, &gone);
    if (rc == 0 && gone) {
      ctx->moved = true;
      if (++picked_expired <= JB_EXPIRE_MAX) goto again;
      rc = MDB_NOTFOUND;
    }
  }
  if (req->next_token_us) {
    *req->next_token_us = 0;
    /* Nothing claimable: when a rate limit's token alone holds a job back,
     * its instant is the waiter's to sleep until. */
    if (rc == MDB_NOTFOUND && ctls.n) {
      int r2 = jb__queue_next_token(s, txn, &ctls, req->names, req->n_names,
                                    req->next_token_us);
      if (r2) rc = r2;
    }
  }
  jb__queue_ctls_free(&ctls);
  if (rc == JB__REMOTE) {
    memcpy(ctx->key_out, jobkey, JB_JOBKEY_LEN);
    /* The reap's moves to the dead letters commit (as below). */
    if (!ctx->moved) return JB__REMOTE;
    *status = JB__REMOTE;
    return 0;
  }
  uint8_t jflags = h.flags;
  if (rc == 0) rc = jb__ready_remove(s, txn, jobkey, jb__hdr_lane(&h));
  if (rc == MDB_NOTFOUND) {
    rc = paused ? jb__err(JB_ENOTFOUND, "no claimable job on the board: "
                          "the board is paused (jobboard resume --all)")
         : req->n_names ? jb__err(JB_ENOTFOUND, "no claimable job of the names "
                              "chosen on the board")
                    : jb__err(JB_ENOTFOUND, "no claimable job on the board");
    /* Nothing to claim, but the reap moved jobs to the dead letters: that
     * commits (aborted, every claim-next would redo it and roll it back,
     * and a waiter counting the lapsed claim would spin). */
    if (!ctx->moved) return rc;
    *status = rc;
    return 0;
  }
  if (rc) return rc;
  if ((rc = make_claim(s, txn, jobkey, ctx->uuid_out, req, now_bt,
                       &ctx->token, jflags)))
    return rc;
  if (ctx->job) {
    /* Copy the posting out now, and after it the job's jobx record (its
     * attempts, time limit: the claim just wrote it); decode them after
     * the commit, outside the writer lock. */
    MDB_val posting = {0, NULL}, xk = {16, ctx->uuid_out}, xv = {0, NULL};
    if ((rc = find_job(s, txn, ctx->uuid_out, &h, &posting)))
      return rc == JB_ENOTFOUND ? MDB_CORRUPTED : rc;
    /* Any job may have one (its attempts): a read, no page written. */
    if ((rc = mdb_get(txn, s->jobx, &xk, &xv)) && rc != MDB_NOTFOUND)
      return rc;
    /* The claim's expiry: its lease, or the job's time limit if sooner. */
    jb_claimrec rec;
    const char *owner;
    if ((rc = jb__claim_get(s, txn, jobkey, &rec, &owner)))
      return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
    ctx->job->posting.len = 0;
    if ((rc = jb__buf_append(&ctx->job->posting, posting.mv_data,
                             posting.mv_size)) ||
        (rc = jb__buf_append(&ctx->job->posting, xv.mv_data, xv.mv_size)))
      return rc;
    ctx->raw = (jb_job_raw){.priority = jb__jobkey_priority(jobkey),
                            .sequence = jb__jobkey_seq(jobkey),
                            .modified_us = req->now_us,
                            .owner = req->who,
                            .owner_len = req->who_len,
                            .token = ctx->token,
                            .lease_expires_us =
                                (rec.flags & JB_CLAIM_F_LEASE)
                                    ? req->now_us + (rec.expires_bt - now_bt)
                                    : 0,
                            .holder_pid = req->bind ? (int)req->holder.pid : 0,
                            .holder_alive = req->bind,
                            .x_len = xv.mv_size};
  }
  return 0;
}

int jb__store_claim_next(jb_store *s, uint8_t uuid_out[16], jb_job *job,
                         const jb_store_claim_req *req, uint64_t *token) {
  uint8_t key[JB_JOBKEY_LEN];
  return jb__store_claim_next_x(s, uuid_out, job, req, token, NULL, true, key);
}

int jb__store_claim_next_x(jb_store *s, uint8_t uuid_out[16], jb_job *job,
                           const jb_store_claim_req *req, uint64_t *token,
                           const uint8_t *after, bool skip_remote,
                           uint8_t key_out[JB_JOBKEY_LEN]) {
  claim_ctx ctx = {.req = req, .uuid_out = uuid_out, .job = job,
                   .after = after, .skip_remote = skip_remote,
                   .key_out = key_out};
  int rc = jb__store_write(s, claim_next_body, &ctx);
  *token = ctx.token;
  if (rc != JB_OK || job == NULL) return rc;
  /* jb__job_load copies from raw.posting into job->posting: decode from a
   * buffer of our own instead. */
  jb_buf posting = job->posting;
  job->posting = (jb_buf){0};
  ctx.raw.uuid = uuid_out;
  ctx.raw.posting = posting.data;
  ctx.raw.posting_len = posting.len - ctx.raw.x_len; /* then the jobx */
  ctx.raw.x = ctx.raw.x_len ? posting.data + ctx.raw.posting_len : NULL;
  rc = jb__job_load(job, &ctx.raw);
  jb__buf_free(&posting);
  return rc;
}

/* -------------------------------------- abandon, consume, trash, extend */

typedef struct {
  jb_release op;
  const uint8_t *uuid;
  const char *who;
  size_t who_len;
  uint64_t token;
  int64_t now_us;
  int64_t lease_ms; /* extend */
  const jb_store_done *done; /* consume, trash: the history record */
  unsigned xflags;  /* JB_STORE_DECIDED */
  bool refused;     /* out: owned_claim refused it; nothing was written */
  const jb_store_retry *retry; /* abandon: how (NULL: at once, no reason) */
  jb_attempt_out attempt;      /* out: what the abandon did */
} release_ctx;

static const char *release_verb(jb_release op) {
  return op == JB_RELEASE_ABANDON ? "abandon"
         : op == JB_RELEASE_CONSUME ? "consume"
                                    : "trash";
}

/* The live claim of job `uuid` held by ctx->who (and ctx->token): its
 * header, record and posting, or an error naming what is wrong. */
static int owned_claim(jb_store *s, MDB_txn *txn, const release_ctx *ctx,
                       const char *verb, jb_jobhdr *h, MDB_val *posting,
                       jb_claimrec *rec) {
  int rc = find_job(s, txn, ctx->uuid, h, posting);
  if (rc) return rc;
  bool decided = (h->flags & JB_JOB_F_REMOTE) && (ctx->xflags & JB_STORE_DECIDED);
  const char *owner;
  char t[JB_UUID_STRLEN];
  fmt_uuid(t, ctx->uuid);
  if ((h->flags & JB_JOB_F_REMOTE) && !decided &&
      !(ctx->xflags & JB_STORE_LOCAL)) {
    /* A fencing token is checked here, before Redis is asked: Redis knows
     * owners by name, and a holder whose claim lapsed and was taken again
     * under the same name must be refused (jobboard.h). */
    if (ctx->token == 0) return JB__REMOTE;
    rc = jb__claim_get(s, txn, h->jobkey, rec, &owner);
    if (rc == MDB_NOTFOUND)
      return jb__err(JB_ENOTOWNER, "cannot %s job %s: token %llu is not the "
                     "current claim's (it is not claimed here)", verb, t,
                     (unsigned long long)ctx->token);
    if (rc) return rc;
    if (rec->token != ctx->token)
      return jb__err(JB_ENOTOWNER, "cannot %s job %s: token %llu is not the "
                     "current claim's (%.*s holds it with token %llu)", verb,
                     t, (unsigned long long)ctx->token, (int)rec->owner_len,
                     owner, (unsigned long long)rec->token);
    return JB__REMOTE;
  }
  rc = jb__claim_get(s, txn, h->jobkey, rec, &owner);
  /* Redis decided: 1 = no local claim record; 2 = a local record of
   * another owner (a claim recorded after Redis agreed to this caller's
   * release: it is not this caller's to change). */
  if (decided) {
    if (rc == MDB_NOTFOUND) return 1;
    if (rc) return rc;
    return same_owner(owner, rec->owner_len, ctx->who, ctx->who_len) ? 0 : 2;
  }
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "cannot %s job %s: it is not claimed (no "
                   "owner known)", verb, t);
  if (rc) return rc;
  live_cache lc = {.s = s};
  const char *why = claim_lapsed(s, rec, jb__boottime_us(), &lc);
  if (why)
    return jb__err(JB_ENOTFOUND, "cannot %s job %s: its claim by %.*s lapsed "
                   "(%s); no owner known", verb, t, (int)rec->owner_len, owner,
                   why);
  if (!same_owner(owner, rec->owner_len, ctx->who, ctx->who_len))
    return jb__err(JB_ENOTOWNER, "cannot %s job %s: it is claimed by %.*s, "
                   "not by %.*s", verb, t, (int)rec->owner_len, owner,
                   (int)ctx->who_len, ctx->who);
  if (ctx->token != 0 && ctx->token != rec->token)
    return jb__err(JB_ENOTOWNER, "cannot %s job %s: token %llu is not the "
                   "current claim's (%.*s holds it with token %llu)", verb, t,
                   (unsigned long long)ctx->token, (int)rec->owner_len, owner,
                   (unsigned long long)rec->token);
  return 0;
}

/* Take a job off the board for a consume or trash (store.h, txn.h). */
int jb__job_complete(jb_store *s, MDB_txn *txn, const jb_completing *c) {
  const jb_jobhdr *h = c->h;
  MDB_val posting = c->posting;
  int rc;
  /* The job's name for its history record, copied before pages change. */
  char name[JB_NAME_MAX];
  const char *np;
  size_t name_len = 0;
  if (jb__history_posting_name(posting.mv_data, posting.mv_size, &np,
                               &name_len))
    memcpy(name, np, name_len);
  /* Its jobx record goes (kept in a dead letter) and its unique key is
   * free: read (copied) before any page changes. */
  jb_jobx x;
  if ((rc = jb__jobx_get(s, txn, c->uuid, &x)) && rc != MDB_NOTFOUND)
    return rc;
  x.has_progress = false; /* progress goes with the job: no letter keeps it */
  /* Its deadline to start goes with it (a letter put back has none). */
  if (x.found && x.snz.deadline_us &&
      (rc = jb__expiry_del(s, txn, x.snz.deadline_us, c->uuid)))
    return rc;
  x.snz.deadline_us = 0;
  jb_store_done plain = {c->op == JB_RELEASE_CONSUME ? JB_END_CONSUMED
                                                     : JB_END_TRASHED,
                         NULL, 0, NULL, 0, NULL, 0};
  const jb_store_done *d = c->done ? c->done : &plain;
  uint8_t xbuf[JB_JOBX_MAXLEN];
  size_t x_len = 0;
  if (d->reason && c->op == JB_RELEASE_TRASH) {
    /* A reason given with the trash (a dead letter decided through
     * Redis): the letter keeps it as the last attempt's. */
    jb_jobx kept_x = x;
    if (!kept_x.found) kept_x.rec.format = 1;
    jb__jobx_set_reason(&kept_x, d->reason, d->reason_len);
    x_len = jb__jobx_encode(&kept_x, xbuf);
  } else if (x.found) {
    x_len = jb__jobx_encode(&x, xbuf);
  }
  jb_buf *kept = &s->hist_posting; /* and the posting (txn.h) */
  kept->len = 0;
  if ((rc = jb__buf_append(kept, posting.mv_data, posting.mv_size))) return rc;
  if (c->op == JB_RELEASE_TRASH) {
    /* Copy the posting to the trash before any other page changes. */
    MDB_val uk = {16, (void *)c->uuid};
    MDB_val tv = {sizeof(jb_trashrec) + c->who_len + posting.mv_size + x_len,
                  NULL};
    /* A letter of the same uuid (a job that came back under it) is
     * replaced: its `deadage` entry goes (retain.c). */
    MDB_val old;
    if ((rc = mdb_get(txn, s->trash, &uk, &old)) == 0)
      rc = jb__deadage_del_rec(s, txn, c->uuid, old.mv_data, old.mv_size);
    if (rc && rc != MDB_NOTFOUND) return rc;
    if ((rc = mdb_put(txn, s->trash, &uk, &tv, MDB_RESERVE))) return rc;
    jb_trashrec tr = {.format = 2, .cause = c->cause ? c->cause : d->cause,
                      .owner_len = (uint16_t)c->who_len,
                      .posting_len = (uint32_t)posting.mv_size,
                      .trashed_us = c->now_us, .x_len = (uint16_t)x_len,
                      .posted_us = h->posted_us};
    memcpy(tr.jobkey, h->jobkey, JB_JOBKEY_LEN);
    uint8_t *out = tv.mv_data;
    memcpy(out, &tr, sizeof tr);
    if (c->who_len) memcpy(out + sizeof tr, c->who, c->who_len);
    /* Only the trash page changed since the job was read: the jobs page
     * that `posting` points into is intact. */
    memcpy(out + sizeof tr + c->who_len, posting.mv_data, posting.mv_size);
    if (x_len) memcpy(out + sizeof tr + c->who_len + posting.mv_size, xbuf, x_len);
    if ((rc = jb__deadage_put(s, txn, c->uuid, c->now_us))) return rc;
  }
  if (x.found || x.garbled) { /* garbled: life.h, jb__jobx_get */
    MDB_val xk = {16, (void *)c->uuid};
    if ((rc = mdb_del(txn, s->jobx, &xk, NULL)) ||
        (rc = jb__unique_free(s, txn, &x, c->uuid)))
      return rc;
  }
  if (c->claim && (rc = jb__store_drop_claim(s, txn, h->jobkey, c->claim)))
    return rc;
  if (!c->claim && !c->unindexed) {
    rc = jb__ready_remove(s, txn, h->jobkey, jb__hdr_lane(h));
    if (rc == MDB_NOTFOUND) { /* a delayed job (cancel, Redis) */
      jb_delayrec dr;
      rc = jb__delay_del(s, txn, h->jobkey, &dr);
    }
    if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  }
  MDB_val uk = {16, (void *)c->uuid};
  if ((rc = mdb_del(txn, s->jobs, &uk, NULL))) return rc;
  /* It reached COMPLETE: its history record, in this transaction. */
  jb_hist_entry e = {.rec = {.end = (uint8_t)(c->end ? c->end : d->end),
                             .priority = (uint8_t)jb__jobkey_priority(h->jobkey),
                             .job_seq = jb__jobkey_seq(h->jobkey),
                             .posted_us = h->posted_us,
                             .claimed_us = c->claimed_us,
                             .completed_us = c->now_us},
                     .owner = c->who, .owner_len = c->who_len,
                     .name = name, .name_len = name_len,
                     .reason = c->reason   ? c->reason
                               : d->reason ? d->reason
                               : x.rec.reason_len ? x.reason : NULL,
                     .reason_len = c->reason   ? c->reason_len
                                   : d->reason ? d->reason_len
                                               : x.rec.reason_len,
                     .result = d->result, .result_len = d->result_len,
                     .posting = kept->data, .posting_len = kept->len,
                     .attempts = c->attempts ? c->attempts : x.rec.attempts};
  e.rec.snoozes = (uint16_t)(x.snz.snoozes > UINT16_MAX ? UINT16_MAX
                                                        : x.snz.snoozes);
  memcpy(e.rec.uuid, c->uuid, 16);
  if ((rc = jb__history_put(s, txn, &e, d->bounds, c->now_us)) ||
      (rc = jb__retention_after_complete(s, txn, d->bounds, c->now_us)))
    return rc;
  int ev = c->event                     ? c->event
           : d->end == JB_END_DEAD      ? JB_EV_DEAD
           : d->end == JB_END_CANCELLED ? JB_EV_CANCELLED
           : c->op == JB_RELEASE_CONSUME ? JB_EV_CONSUMED
                                         : JB_EV_TRASHED;
  return jb__log_event(s, txn, ev, c->uuid, h->jobkey, c->who, c->who_len,
                       c->now_us);
}

static int release_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  release_ctx *ctx = vctx;
  (void)status;
  jb_jobhdr h;
  MDB_val posting;
  jb_claimrec rec;
  int rc = owned_claim(s, txn, ctx,
                       ctx->retry && ctx->retry->snooze ? "snooze"
                                                        : release_verb(ctx->op),
                       &h, &posting, &rec);
  bool claimed = rc == 0;
  /* Redis-decided, and no local claim record of this caller's: an abandon
   * leaves the board as it is (ready, or another owner's newer claim); a
   * consume or trash takes the job off the board, as Redis did. */
  if ((rc == 1 || rc == 2) && ctx->op == JB_RELEASE_ABANDON) {
    /* Redis agreed the caller held it (1: the mirror took the claim off
     * first): its attempt ended all the same. */
    if (rc == 2) return 0;
    const jb_store_retry *rt = ctx->retry;
    return jb__attempt_count(s, txn, ctx->uuid, rt ? rt->reason : NULL,
                             rt ? rt->reason_len : 0, ctx->now_us,
                             &ctx->attempt.attempts);
  }
  if (rc == 2) {
    claimed = true;
    rc = 0;
  } else if (rc == 1) {
    rec = (jb_claimrec){.claimed_us = h.posted_us};
    rc = 0;
  }
  if (rc) {
    ctx->refused = true;
    return rc;
  }
  if (ctx->op != JB_RELEASE_ABANDON) {
    jb_completing c = {.op = ctx->op, .uuid = ctx->uuid, .h = &h,
                       .posting = posting, .claim = claimed ? &rec : NULL,
                       .claimed_us = rec.claimed_us, .who = ctx->who,
                       .who_len = ctx->who_len, .now_us = ctx->now_us,
                       .done = ctx->done};
    return jb__job_complete(s, txn, &c);
  }
  /* An abandon: the caller's claim (owned_claim found it) ends, a failed
   * attempt (life.c): back on the board, at once or later, or to the
   * dead letters. */
  if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &rec))) return rc;
  const jb_store_retry *rt = ctx->retry;
  jb_attempt a = {.uuid = ctx->uuid, .h = &h, .posting = posting,
                  .claimed_us = rec.claimed_us, .who = ctx->who,
                  .who_len = ctx->who_len,
                  .reason = rt ? rt->reason : NULL,
                  .reason_len = rt ? rt->reason_len : 0,
                  .now_us = ctx->now_us,
                  .delay_us = rt ? rt->delay_us : 0,
                  .dead = rt && rt->dead, .snooze = rt && rt->snooze,
                  .event = JB_EV_ABANDONED};
  return jb__attempt_end(s, txn, &a, &ctx->attempt);
}

int jb__store_retry(jb_store *s, const uint8_t uuid[16], const char *who,
                    size_t who_len, uint64_t token, int64_t now_us,
                    const jb_store_retry *retry, jb_retry_result *out) {
  release_ctx ctx = {JB_RELEASE_ABANDON, uuid, who, who_len, token, now_us, 0,
                     NULL, 0, false, retry, {0}};
  int rc = jb__store_write(s, release_body, &ctx);
  if (rc == JB_OK && out)
    *out = (jb_retry_result){.dead = ctx.attempt.dead,
                             .due_us = ctx.attempt.due_us,
                             .attempts = ctx.attempt.attempts};
  return rc;
}

int jb__store_release(jb_store *s, jb_release op, const uint8_t uuid[16],
                      const char *who, size_t who_len, uint64_t token,
                      int64_t now_us, unsigned xflags) {
  release_ctx ctx = {op, uuid, who, who_len, token, now_us, 0, NULL, xflags,
                     false, NULL, {0}};
  return jb__store_write(s, release_body, &ctx);
}

int jb__store_finish(jb_store *s, jb_release op, const uint8_t uuid[16],
                     const char *who, size_t who_len, uint64_t token,
                     int64_t now_us, const jb_store_done *done,
                     unsigned xflags) {
  release_ctx ctx = {op, uuid, who, who_len, token, now_us, 0, done, xflags,
                     false, NULL, {0}};
  return jb__store_write(s, release_body, &ctx);
}

static int extend_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  release_ctx *ctx = vctx;
  (void)status;
  jb_jobhdr h;
  jb_claimrec rec;
  int rc = owned_claim(s, txn, ctx, "extend the claim on", &h, NULL, &rec);
  if (rc == 2) return 0; /* another owner's record: not this caller's */
  if (rc == 1) { /* Redis extended a claim this board has no record of */
    char t[JB_UUID_STRLEN];
    fmt_uuid(t, ctx->uuid);
    return jb__err(JB_ENOTFOUND, "job %s: Redis extended the claim of %.*s, "
                   "but this board has no local record of that claim (the "
                   "replicator records it)", t, (int)ctx->who_len, ctx->who);
  }
  if (rc) return rc;
  jb_claimrec fresh = rec;
  /* The claim holds (owned_claim checked it), so it belongs to this boot
   * from now on: a plain claim made before a reboot, given a lease, must
   * not read as a lease of the earlier boot. */
  fresh.epoch = s->epoch;
  fresh.flags |= JB_CLAIM_F_LEASE;
  fresh.lease_ms = ctx->lease_ms;
  fresh.expires_bt = jb__boottime_us() + ctx->lease_ms * 1000;
  /* A time limit stands, renewals or not. */
  if ((h.flags & JB_JOB_F_X) &&
      (rc = jb__limit_cap(s, txn, ctx->uuid, &fresh)))
    return rc;
  char who[JB_WHO_MAX];
  memcpy(who, ctx->who, ctx->who_len);
  if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &rec)) ||
      (rc = jb__claim_put(s, txn, h.jobkey, &fresh, who, ctx->who_len)))
    return rc;
  return jb__log_event(s, txn, JB_EV_EXTENDED, ctx->uuid, h.jobkey, ctx->who,
                   ctx->who_len, ctx->now_us);
}

int jb__store_extend(jb_store *s, const uint8_t uuid[16], const char *who,
                     size_t who_len, uint64_t token, int64_t lease_ms,
                     int64_t now_us, unsigned xflags) {
  release_ctx ctx = {JB_RELEASE_ABANDON, uuid, who, who_len, token, now_us,
                     lease_ms, NULL, xflags, false, NULL, {0}};
  return jb__store_write(s, extend_body, &ctx);
}

typedef struct {
  release_ctx rel;  /* the owner check's: who, token, uuid */
  unsigned permille;
  const char *msg;
  size_t msg_len;
} progress_ctx;

static int progress_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  progress_ctx *ctx = vctx;
  (void)status;
  jb_jobhdr h;
  jb_claimrec rec;
  /* Redis holds no progress: a Redis-decided job's claim is checked here
   * as a local one (JB_STORE_LOCAL). */
  int rc = owned_claim(s, txn, &ctx->rel, "report progress of", &h, NULL,
                       &rec);
  if (rc) return rc;
  jb_jobx x;
  if ((rc = jb__jobx_get(s, txn, ctx->rel.uuid, &x)) && rc != MDB_NOTFOUND)
    return rc;
  if (!x.found) x = (jb_jobx){.rec = {.format = 1}};
  x.has_progress = true;
  x.prog = (jb_jobxprog){.permille = (uint16_t)ctx->permille,
                         .msg_len = (uint8_t)ctx->msg_len,
                         .at_us = ctx->rel.now_us, .token = rec.token};
  if (ctx->msg_len) memcpy(x.prog_msg, ctx->msg, ctx->msg_len);
  if ((rc = jb__jobx_put(s, txn, ctx->rel.uuid, &x))) return rc;
  jb_log_writer lw;
  if ((rc = jb__log_open(s, txn, &lw))) return rc;
  rc = jb__log_put_progress(&lw, ctx->rel.uuid, h.jobkey, ctx->rel.who,
                            ctx->rel.who_len, ctx->rel.now_us, ctx->permille,
                            ctx->msg, ctx->msg_len);
  return jb__log_close(s, txn, &lw, rc);
}

int jb__store_progress(jb_store *s, const uint8_t uuid[16], const char *who,
                       size_t who_len, uint64_t token, unsigned permille,
                       const char *msg, size_t msg_len, int64_t now_us) {
  progress_ctx ctx = {{JB_RELEASE_ABANDON, uuid, who, who_len, token, now_us,
                       0, NULL, JB_STORE_LOCAL, false, NULL, {0}},
                      permille, msg, msg_len};
  return jb__store_write(s, progress_body, &ctx);
}

/* ----------------------------------------------------------------- reads */

/* Fill `raw` (pointers into the transaction's pages) for job `uuid`. A
 * lapsed claim reads as no claim. */
static int read_raw(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    jb_job_raw *raw, live_cache *lc, int64_t now_bt) {
  jb_jobhdr h;
  MDB_val posting;
  int rc = find_job(s, txn, uuid, &h, &posting);
  if (rc) return rc;
  *raw = (jb_job_raw){.uuid = uuid,
                      .priority = jb__jobkey_priority(h.jobkey),
                      .sequence = jb__jobkey_seq(h.jobkey),
                      .modified_us = h.posted_us,
                      .remote = (h.flags & JB_JOB_F_REMOTE) != 0,
                      .publishing = (h.flags & JB_JOB_F_PUBLISHING) != 0,
                      .ours = (h.flags & JB_JOB_F_OURS) != 0,
                      .posting = posting.mv_data,
                      .posting_len = posting.mv_size};
  MDB_val xk = {16, (void *)uuid}, xv;
  rc = mdb_get(txn, s->jobx, &xk, &xv);
  if (rc == 0) {
    raw->x = xv.mv_data;
    raw->x_len = xv.mv_size;
  } else if (rc != MDB_NOTFOUND) {
    return rc;
  }
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc == 0) {
    raw->modified_us = rec.claimed_us;
    if (claim_lapsed(s, &rec, now_bt, lc)) return 0;
    raw->owner = owner;
    raw->owner_len = rec.owner_len;
    raw->token = rec.token;
    if (rec.flags & JB_CLAIM_F_LEASE)
      raw->lease_expires_us = jb__now_us() + (rec.expires_bt - now_bt);
    if (rec.flags & JB_CLAIM_F_BOUND) {
      raw->holder_pid = (int)rec.holder_pid;
      raw->holder_alive = true; /* claim_lapsed looked */
    }
    return 0;
  }
  if (rc != MDB_NOTFOUND) return rc;
  MDB_val k = {JB_JOBKEY_LEN, h.jobkey}, rv;
  rc = mdb_get(txn, s->ready, &k, &rv);
  if (rc == 0 && rv.mv_size == sizeof(jb_readyrec)) {
    jb_readyrec r;
    memcpy(&r, rv.mv_data, sizeof r);
    raw->modified_us = r.modified_us;
  }
  if (rc == MDB_NOTFOUND) { /* delayed? */
    jb_delayrec dr;
    rc = jb__delay_get(s, txn, h.jobkey, &dr);
    if (rc == 0) {
      raw->modified_us = dr.modified_us;
      raw->not_before_us = dr.due_us;
    }
  }
  return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc; /* in no index */
}

typedef struct {
  const uint8_t *uuid;
  jb_job *job;
  char *owner;
  jb_state *state;
  size_t *count;
  unsigned flags;
  int *kind;
  int64_t *ms_left;
} read_ctx;

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  jb_job_raw raw;
  live_cache lc = {.s = s};
  int rc = read_raw(s, txn, ctx->uuid, &raw, &lc, jb__boottime_us());
  return rc ? rc : jb__job_load(ctx->job, &raw);
}

int jb__store_get(jb_store *s, const uint8_t uuid[16], jb_job *job) {
  read_ctx ctx = {.uuid = uuid, .job = job};
  return jb__store_read(s, get_body, &ctx);
}

static int owner_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  ctx->owner[0] = '\0';
  MDB_val k = {16, (void *)ctx->uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc == MDB_NOTFOUND) {
    *ctx->state = JB_STATE_COMPLETE;
    return 0;
  }
  if (rc) return rc;
  jb_jobhdr h;
  if (v.mv_size < sizeof h) return MDB_CORRUPTED;
  memcpy(&h, v.mv_data, sizeof h);
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  live_cache lc = {.s = s};
  if (rc == MDB_NOTFOUND ||
      (rc == 0 && claim_lapsed(s, &rec, jb__boottime_us(), &lc))) {
    *ctx->state = JB_STATE_UNCLAIMED;
    return 0;
  }
  if (rc) return rc;
  *ctx->state = JB_STATE_CLAIMED;
  size_t n = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
  memcpy(ctx->owner, owner, n);
  ctx->owner[n] = '\0';
  return 0;
}

int jb__store_owner(jb_store *s, const uint8_t uuid[16],
                    char owner[JB_WHO_MAX + 1], jb_state *state) {
  read_ctx ctx = {.uuid = uuid, .owner = owner, .state = state};
  return jb__store_read(s, owner_body, &ctx);
}

/* Lapsed claims not yet returned to the ready index: those at the front
 * of `leases`, and those of gone processes in `holders` (a claim in both
 * is counted once). */
static int count_lapsed(jb_store *s, MDB_txn *txn, size_t *out) {
  int64_t now_bt = jb__boottime_us();
  live_cache lc = {.s = s};
  MDB_cursor *cur;
  MDB_val k, v;
  size_t n = 0;
  int rc = mdb_cursor_open(txn, s->leases, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_LEASEKEY_LEN) { rc = MDB_CORRUPTED; break; }
    if (jb__be32(k.mv_data) == s->epoch &&
        (int64_t)jb__be64((uint8_t *)k.mv_data + 4) > now_bt)
      break;
    /* Only an entry its claim calls for (not one left by damage). */
    jb_claimrec rec;
    const char *owner;
    const uint8_t *jk = (const uint8_t *)k.mv_data + 12;
    int r2 = jb__claim_get(s, txn, jk, &rec, &owner);
    if (r2 == MDB_NOTFOUND) continue;
    if (r2) { rc = r2; break; }
    uint8_t want[JB_LEASEKEY_LEN];
    jb__lease_key(want, &rec, jk);
    if ((rec.flags & JB_CLAIM_F_LEASE) && memcmp(want, k.mv_data, sizeof want) == 0)
      n++;
  }
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if ((rc = mdb_cursor_open(txn, s->holders, &cur))) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_HOLDERKEY_LEN) { rc = MDB_CORRUPTED; break; }
    const uint8_t *d = k.mv_data;
    if (jb__be32(d) == s->epoch && holder_alive(&lc, jb__be32(d + 4), jb__be64(d + 8)))
      continue;
    /* Lapsed by its holder: counted above if its lease lapsed too. */
    jb_claimrec rec;
    const char *owner;
    int r2 = jb__claim_get(s, txn, d + 16, &rec, &owner);
    if (r2 == MDB_NOTFOUND) continue;
    if (r2) { rc = r2; break; }
    bool lease_lapsed = (rec.flags & JB_CLAIM_F_LEASE) &&
                        (rec.epoch != s->epoch || rec.expires_bt <= now_bt);
    if (!lease_lapsed) n++;
  }
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return rc;
  *out = n;
  return 0;
}

static int count_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  MDB_stat st;
  int rc = mdb_stat(txn, (ctx->flags & JB_ONLY_UNCLAIMED) ? s->ready : s->jobs,
                    &st);
  if (rc) return rc;
  *ctx->count = st.ms_entries;
  if (ctx->flags & JB__COUNT_FOR_NAMES) {
    *ctx->count = 0;
  } else if (ctx->flags & JB__COUNT_FOR_CLAIM) {
    jb_queue_ctls c = {0};
    if ((rc = jb__queue_ctls_load(s, txn, jb__now_us(), &c))) {
      jb__queue_ctls_free(&c);
      return rc;
    }
    if (c.queuectl) *ctx->count = 0;
    jb__queue_ctls_free(&c);
  }
  if (ctx->flags & JB_ONLY_UNCLAIMED) {
    size_t lapsed = 0, due = 0;
    int64_t next_due;
    if ((rc = count_lapsed(s, txn, &lapsed)) ||
        (rc = jb__due_scan(s, txn, jb__now_us(), &due, &next_due)))
      return rc;
    *ctx->count += lapsed + due;
  }
  return 0;
}

static int expires_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  read_ctx *ctx = vctx;
  (void)status;
  *ctx->kind = JB_EXPIRY_NOT_CLAIMED;
  MDB_val k = {16, (void *)ctx->uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  jb_jobhdr h;
  if (v.mv_size < sizeof h) return MDB_CORRUPTED;
  memcpy(&h, v.mv_data, sizeof h);
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  int64_t now_bt = jb__boottime_us();
  live_cache lc = {.s = s};
  if (claim_lapsed(s, &rec, now_bt, &lc)) return 0;
  if (rec.flags & JB_CLAIM_F_LEASE) {
    *ctx->kind = JB_EXPIRY_AT;
    *ctx->ms_left = (rec.expires_bt - now_bt + 999) / 1000;
  } else {
    *ctx->kind = JB_EXPIRY_NONE;
  }
  return 0;
}

int jb__store_expires_in(jb_store *s, const uint8_t uuid[16], int *kind,
                         int64_t *ms_left) {
  read_ctx ctx = {.uuid = uuid, .kind = kind, .ms_left = ms_left};
  return jb__store_read(s, expires_body, &ctx);
}

int jb__store_count(jb_store *s, size_t *out, unsigned flags) {
  read_ctx ctx = {.count = out, .flags = flags};
  return jb__store_read(s, count_body, &ctx);
}

/* ------------------------------------------------------------------ scan */

typedef struct {
  unsigned flags;
  const uint8_t *after;
  jb_store_item *items;
  size_t max;
  jb_buf *bytes;
  size_t n;
  live_cache lc;
  int64_t now_bt;
  int64_t now_us;
  const jb_store_scan_opts *o; /* NULL: the whole board */
  uint8_t resume[JB_JOBKEY_LEN]; /* the last key looked at */
  bool looked;  /* resume is set */
  bool more;    /* stopped at o->budget: keys after resume are left */
} scan_ctx;

/* Position `cur` on the first key after ctx->after (or the first key). */
static int scan_start(MDB_cursor *cur, const uint8_t *after, MDB_val *k,
                      MDB_val *v) {
  if (after == NULL) return mdb_cursor_get(cur, k, v, MDB_FIRST);
  *k = (MDB_val){JB_JOBKEY_LEN, (void *)after};
  int rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
  if (rc == 0 && k->mv_size == JB_JOBKEY_LEN &&
      memcmp(k->mv_data, after, JB_JOBKEY_LEN) == 0)
    rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
  return rc;
}

static int scan_add(jb_store *s, MDB_txn *txn, scan_ctx *ctx,
                    const MDB_val *k, const uint8_t uuid[16]) {
  if (k->mv_size != JB_JOBKEY_LEN) return MDB_CORRUPTED;
  jb_job_raw raw;
  int rc = read_raw(s, txn, uuid, &raw, &ctx->lc, ctx->now_bt);
  if (rc == JB_ENOTFOUND) return MDB_CORRUPTED; /* index entry, no job */
  if (rc) return rc;
  /* Only unclaimed jobs asked for: a live claim is skipped, and so is a
   * job not due yet. */
  if ((ctx->flags & JB_ONLY_UNCLAIMED) &&
      (raw.owner || raw.not_before_us > ctx->now_us))
    return 0;
  jb_store_item *it = &ctx->items[ctx->n++];
  memcpy(it->key, k->mv_data, JB_JOBKEY_LEN);
  memcpy(it->uuid, uuid, 16);
  it->modified_us = raw.modified_us;
  it->claimed = raw.owner != NULL;
  it->token = raw.token;
  it->lease_expires_us = raw.lease_expires_us;
  it->holder_pid = raw.holder_pid;
  it->holder_alive = raw.holder_alive;
  it->remote = raw.remote;
  it->publishing = raw.publishing;
  it->ours = raw.ours;
  it->owner_off = ctx->bytes->len;
  it->owner_len = raw.owner_len;
  if (raw.owner && (rc = jb__buf_append(ctx->bytes, raw.owner, raw.owner_len)))
    return rc;
  it->due_us = raw.not_before_us;
  it->x_off = 0;
  it->x_len = raw.x_len;
  if (raw.x) {
    it->x_off = ctx->bytes->len;
    if ((rc = jb__buf_append(ctx->bytes, raw.x, raw.x_len))) return rc;
  }
  it->posting_off = ctx->bytes->len;
  it->posting_len = raw.posting_len;
  return jb__buf_append(ctx->bytes, raw.posting, raw.posting_len);
}

/*
 * The whole board in listing order is the merge of three walks in jobkey
 * order: `ready` (unclaimed), `claims` (claimed) and `delayed` (not due
 * when last looked at). Each job is in exactly one of them, so the merge
 * sees each job once. Listing only unclaimed jobs walks the claims too,
 * for the lapsed ones; when nothing has a lease or a holder process, no
 * claim can lapse and `claims` is not walked. `delayed` is walked for
 * claimable jobs only when some delayed job is due.
 */
/* Position the `byname` cursor on lane's first key after `after`. */
static int scan_start_lane(MDB_cursor *cur, uint32_t lane,
                           const uint8_t *after, uint8_t key[JB_BYNAME_KEY_LEN],
                           MDB_val *k, MDB_val *v) {
  key[0] = (uint8_t)(lane >> 24);
  key[1] = (uint8_t)(lane >> 16);
  key[2] = (uint8_t)(lane >> 8);
  key[3] = (uint8_t)lane;
  memset(key + 4, 0, JB_JOBKEY_LEN);
  if (after) memcpy(key + 4, after, JB_JOBKEY_LEN);
  *k = (MDB_val){JB_BYNAME_KEY_LEN, key};
  int rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
  if (rc == 0 && after && k->mv_size == JB_BYNAME_KEY_LEN &&
      memcmp(k->mv_data, key, JB_BYNAME_KEY_LEN) == 0)
    rc = mdb_cursor_get(cur, k, v, MDB_NEXT);
  return rc;
}

/* The `byname` cursor's key, when still in `lane`, as a jobkey (k moved
 * past the lane prefix); MDB_NOTFOUND past the lane. */
static int lane_key(int rc, uint32_t lane, MDB_val *k) {
  if (rc) return rc;
  const uint8_t *p = k->mv_data;
  if (k->mv_size != JB_BYNAME_KEY_LEN) return MDB_CORRUPTED;
  if (((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
       p[3]) != lane)
    return MDB_NOTFOUND;
  *k = (MDB_val){JB_JOBKEY_LEN, (void *)(p + 4)};
  return 0;
}

static int scan_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  scan_ctx *ctx = vctx;
  (void)status;
  ctx->n = 0;
  ctx->bytes->len = 0;
  ctx->looked = ctx->more = false;
  ctx->now_bt = jb__boottime_us();
  ctx->now_us = jb__now_us();
  const jb_store_scan_opts *o = ctx->o;
  bool walk[3] = {true, !(ctx->flags & JB_ONLY_UNCLAIMED),
                  !(ctx->flags & JB_ONLY_UNCLAIMED)};
  MDB_dbi dbi[3] = {s->ready, s->claims, s->delayed};
  size_t vmin[3] = {sizeof(jb_readyrec), sizeof(jb_claimrec),
                    sizeof(jb_delayrec)};
  /* A name's ready jobs are a key range of `byname` (names.h), whose
   * values are uuids as the ready records start with theirs. */
  bool by_lane = o && o->has_lane;
  if (by_lane) {
    dbi[0] = s->byname;
    vmin[0] = 16;
  }
  uint8_t lane_start[JB_BYNAME_KEY_LEN];
  size_t examined = 0;
  MDB_cursor *cur[3] = {NULL, NULL, NULL};
  MDB_val k[3], v[3];
  int r[3] = {MDB_NOTFOUND, MDB_NOTFOUND, MDB_NOTFOUND};
  int rc = 0;
  if (!walk[1]) {
    MDB_stat ls, hs;
    if ((rc = mdb_stat(txn, s->leases, &ls)) ||
        (rc = mdb_stat(txn, s->holders, &hs)))
      return rc;
    walk[1] = ls.ms_entries + hs.ms_entries > 0;
    size_t n_due;
    int64_t next_due;
    if ((rc = jb__due_scan(s, txn, ctx->now_us, &n_due, &next_due)))
      return rc;
    walk[2] = n_due > 0;
  }
  if (o && o->tables)
    for (int i = 0; i < 3; i++) walk[i] = walk[i] && (o->tables & (1u << i));
  for (int i = 0; i < 3 && rc == 0; i++)
    if (walk[i] && (rc = mdb_cursor_open(txn, dbi[i], &cur[i])) == 0) {
      if (i == 0 && by_lane)
        r[i] = lane_key(scan_start_lane(cur[i], o->lane, ctx->after,
                                        lane_start, &k[i], &v[i]),
                        o->lane, &k[i]);
      else
        r[i] = scan_start(cur[i], ctx->after, &k[i], &v[i]);
    }
  while (rc == 0 && ctx->n < ctx->max) {
    int pick = -1;
    for (int i = 0; i < 3; i++) {
      if (r[i] && r[i] != MDB_NOTFOUND) { rc = r[i]; break; }
      if (r[i] == 0 && (pick < 0 || memcmp(k[i].mv_data, k[pick].mv_data,
                                           JB_JOBKEY_LEN) < 0))
        pick = i;
    }
    if (rc || pick < 0) break;
    if (o && o->budget && examined == o->budget) {
      ctx->more = true;
      break;
    }
    examined++;
    if (v[pick].mv_size < vmin[pick]) { rc = MDB_CORRUPTED; break; }
    if (k[pick].mv_size != JB_JOBKEY_LEN) { rc = MDB_CORRUPTED; break; }
    memcpy(ctx->resume, k[pick].mv_data, JB_JOBKEY_LEN);
    ctx->looked = true;
    /* A claimed or delayed job of another name is passed over: its lane is
     * in its header. */
    bool take = true;
    if (by_lane && pick > 0) {
      jb_jobhdr h;
      MDB_val posting;
      rc = jb__job_header(s, txn, v[pick].mv_data, &h, &posting);
      if (rc == MDB_NOTFOUND) rc = MDB_CORRUPTED; /* index entry, no job */
      take = rc == 0 && jb__hdr_lane(&h) == o->lane;
    }
    /* Every record starts with the job's uuid. */
    if (rc == 0 && take) rc = scan_add(s, txn, ctx, &k[pick], v[pick].mv_data);
    if (rc) break;
    r[pick] = mdb_cursor_get(cur[pick], &k[pick], &v[pick], MDB_NEXT);
    if (pick == 0 && by_lane) r[pick] = lane_key(r[pick], o->lane, &k[pick]);
  }
  for (int i = 0; i < 3; i++)
    if (cur[i]) mdb_cursor_close(cur[i]);
  return rc;
}

int jb__store_scan(jb_store *s, unsigned flags,
                   const uint8_t after[JB_JOBKEY_LEN], jb_store_item *items,
                   size_t max, jb_buf *bytes, size_t *n_out) {
  scan_ctx ctx = {.flags = flags, .after = after, .items = items, .max = max,
                  .bytes = bytes};
  int rc = jb__store_read(s, scan_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  return rc;
}

int jb__store_scan_ex(jb_store *s, unsigned flags,
                      const uint8_t after[JB_JOBKEY_LEN],
                      const jb_store_scan_opts *o, jb_store_item *items,
                      size_t max, jb_buf *bytes, size_t *n_out,
                      uint8_t resume[JB_JOBKEY_LEN], bool *looked,
                      bool *more) {
  scan_ctx ctx = {.flags = flags, .after = after, .items = items, .max = max,
                  .bytes = bytes, .o = o};
  int rc = jb__store_read(s, scan_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  *looked = rc == JB_OK && ctx.looked;
  *more = rc == JB_OK && ctx.more;
  if (*looked) memcpy(resume, ctx.resume, JB_JOBKEY_LEN);
  return rc;
}

/* ------------------------------- in-transaction forms (store/batch.c) */

int jb__txn_claim_next(jb_store *s, MDB_txn *txn, const jb_store_claim_req *req,
                       const uint8_t *after, bool skip_remote,
                       uint8_t uuid_out[16], uint8_t key_out[JB_JOBKEY_LEN],
                       uint64_t *token, jb_job *job, jb_job_raw *raw,
                       bool *moved) {
  claim_ctx ctx = {.req = req, .uuid_out = uuid_out, .job = job,
                   .after = after, .skip_remote = skip_remote,
                   .key_out = key_out};
  int status = JB_OK;
  int rc = claim_next_body(s, txn, &ctx, &status);
  *token = ctx.token;
  if (raw) *raw = ctx.raw;
  if (moved) *moved = ctx.moved;
  return rc ? rc : status;
}

int jb__txn_post(jb_store *s, MDB_txn *txn, const jb_store_post *posts,
                 size_t n, int64_t now_us, uint8_t held_by[16],
                 size_t *held_idx) {
  post_ctx ctx = {posts, n, now_us, held_by, held_idx};
  int status = JB_OK;
  return post_body(s, txn, &ctx, &status);
}

int jb__txn_finish(jb_store *s, MDB_txn *txn, jb_release op,
                   const uint8_t uuid[16], const char *who, size_t who_len,
                   uint64_t token, int64_t now_us, const jb_store_done *done,
                   bool *refused) {
  release_ctx ctx = {op, uuid, who, who_len, token, now_us, 0, done, 0, false,
                     NULL, {0}};
  int status = JB_OK;
  int rc = release_body(s, txn, &ctx, &status);
  *refused = ctx.refused;
  return rc;
}
