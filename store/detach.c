/*
 * detach.c - a synced board detached from Redis (jb__store_detach), in
 * one write transaction: either the board is still synced, or it is
 * detached in full, whatever the moment a crash comes.
 *
 * What it does, in the order of the board (priority, then key):
 *  - every job Redis decides (published from here, mirrored in from
 *    Redis, or marked for publication) becomes a job decided here: it
 *    takes a new board sequence (the change-log sequence of a POSTED
 *    event, as a post's does: store.h, "The board sequence"), its key
 *    moves to the local band, its publication flags go, and its posting's
 *    sequence (the last field) is rewritten to the new number, as a
 *    requeued dead letter's is (store/dead.c);
 *  - its claim, if any: one bound to a live process of this host (a
 *    `jobboard work` runner) is kept, now a local claim, so that the
 *    runner finishes the job here; any other (a worker elsewhere, known
 *    through Redis, or a lapsed one) is released: the job is ready again
 *    (event ABANDONED naming the old owner; no attempt counted);
 *  - the dead letters of jobs Redis decided stay dead letters, keyed in
 *    the local band (so that they can be requeued here);
 *  - every "sync." setting goes (URL, namespace, epoch, keep-alive)
 *    except the detach record, "sync.detached", to which one line is
 *    added: when, from what (given by the caller), and the counts.
 * The board's other files (sync.credentials, sync.status) are the sync
 * layer's to remove, after this commit.
 */
#include "txn.h"
#include "names.h"
#include "life.h"
#include "codec/posting.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETTING_SYNC JB_META_SETTING_PREFIX "sync."
#define SETTING_DETACHED JB_META_SETTING_PREFIX JB_STORE_SETTING_DETACHED

typedef struct {
  uint8_t key[JB_JOBKEY_LEN];
  uint8_t uuid[16];
} detach_job;

typedef struct {
  int64_t now_us;
  const char *note;
  jb_store_detach_result *res;
  detach_job *jobs;
  size_t n, cap;
} detach_ctx;

static int by_key(const void *a, const void *b) {
  return memcmp(a, b, JB_JOBKEY_LEN);
}

/* The jobs Redis decides, in key order (their order on the board). */
static int collect(jb_store *s, MDB_txn *txn, detach_ctx *c) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->jobs, &cur);
  if (rc) return rc;
  MDB_val k, v;
  c->n = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_jobhdr h;
    if (k.mv_size != 16 || v.mv_size < sizeof h) {
      rc = MDB_CORRUPTED;
      break;
    }
    memcpy(&h, v.mv_data, sizeof h);
    if (!(h.flags & JB_JOB_F_REMOTE)) continue;
    if (c->n == c->cap) {
      size_t cap = c->cap ? c->cap * 2 : 64;
      detach_job *j = realloc(c->jobs, cap * sizeof *j);
      if (j == NULL) {
        rc = jb__err(JB_ENOMEM, "out of memory detaching the board");
        break;
      }
      c->jobs = j;
      c->cap = cap;
    }
    memcpy(c->jobs[c->n].key, h.jobkey, JB_JOBKEY_LEN);
    memcpy(c->jobs[c->n].uuid, k.mv_data, 16);
    c->n++;
  }
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) rc = 0;
  if (rc == 0 && c->n) qsort(c->jobs, c->n, sizeof *c->jobs, by_key);
  return rc;
}

/* Its posting with its sequence (the last field) set to `seq`, the header
 * `h` before it, written over the job's record. */
static int resequence(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                      const jb_jobhdr *h, uint64_t seq) {
  MDB_val k = {16, (void *)uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  const uint8_t *posting = (const uint8_t *)v.mv_data + sizeof *h;
  size_t len = v.mv_size - sizeof *h;
  jb_job job = {0};
  char why[200];
  char t[JB_UUID_STRLEN];
  jb__uuid_format(t, uuid);
  rc = jb__posting_decode(&job, posting, len, why, sizeof why);
  uint64_t old = job.sequence;
  jb__job_clear(&job);
  if (rc != JB_OK)
    return rc == JB_ECORRUPT
               ? jb__err(JB_ECORRUPT, "job %s: its posting does not decode "
                         "(%s): run 'jobboard check', then detach", t, why)
               : rc;
  uint8_t oldb[JB_SEQ_MAXLEN], newb[JB_SEQ_MAXLEN];
  size_t oldlen = jb__posting_seq(oldb, old);
  size_t newlen = jb__posting_seq(newb, seq);
  if (oldlen > len || memcmp(posting + len - oldlen, oldb, oldlen) != 0)
    return jb__err(JB_ECORRUPT, "job %s: its posting does not end with its "
                   "sequence: it cannot be made a local job", t);
  jb_buf rec = {0};
  rc = jb__buf_append(&rec, h, sizeof *h);
  if (rc == JB_OK) rc = jb__buf_append(&rec, posting, len - oldlen);
  if (rc == JB_OK) rc = jb__buf_append(&rec, newb, newlen);
  if (rc == JB_OK) {
    MDB_val nv = {rec.len, rec.data};
    rc = mdb_put(txn, s->jobs, &k, &nv, 0);
  }
  jb__buf_free(&rec);
  return rc;
}

/* One job Redis decided, made a job decided here. */
static int make_local(jb_store *s, MDB_txn *txn, jb_log_writer *lw,
                      detach_ctx *c, const uint8_t uuid[16]) {
  jb_jobhdr h;
  int rc = jb__job_header(s, txn, uuid, &h, NULL);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  jb_claimrec rec;
  const char *owner;
  rc = jb__claim_get(s, txn, h.jobkey, &rec, &owner);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (rc == 0 && ((rec.flags & JB_CLAIM_F_BOUND) == 0 ||
                  jb__claim_lapsed_why(s, &rec) != NULL)) {
    /* Copied before the claims page changes. */
    char was[JB_WHO_MAX];
    size_t was_len = rec.owner_len > JB_WHO_MAX ? JB_WHO_MAX : rec.owner_len;
    memcpy(was, owner, was_len);
    if ((rc = jb__store_drop_claim(s, txn, h.jobkey, &rec)) ||
        (rc = jb__ready_add_job(s, txn, h.jobkey, uuid, c->now_us, 0)) ||
        (rc = jb__log_put(lw, JB_EV_ABANDONED, uuid, h.jobkey, was, was_len,
                          c->now_us)))
      return rc;
    c->res->released++;
  } else if (rc == 0) {
    c->res->kept++;
  }
  uint8_t key[JB_JOBKEY_LEN];
  uint64_t seq = lw->next;
  jb__jobkey(key, jb__jobkey_priority(h.jobkey), seq);
  uint8_t flags = h.flags & (uint8_t)~(JB_JOB_F_REMOTE | JB_JOB_F_PUBLISHING |
                                       JB_JOB_F_OURS);
  if ((rc = jb__log_put(lw, JB_EV_POSTED, uuid, key, NULL, 0, c->now_us)) ||
      (rc = jb__job_rekey(s, txn, uuid, &h, key, flags)) ||
      (rc = resequence(s, txn, uuid, &h, seq)))
    return rc;
  c->res->jobs++;
  return 0;
}

/* The dead letters of jobs Redis decided: keyed in the local band under
 * `seq` (a sequence of this detach), the rest as it is. */
static int local_letters(jb_store *s, MDB_txn *txn, detach_ctx *c,
                         uint64_t seq) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->trash, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_trashrec tr;
    size_t hl;
    if (!jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl) ||
        !jb__jobkey_is_remote(tr.jobkey))
      continue; /* one that does not decode is check's to report */
    jb_buf rec = {0};
    if ((rc = jb__buf_append(&rec, v.mv_data, v.mv_size))) break;
    uint8_t key[JB_JOBKEY_LEN];
    jb__jobkey(key, jb__jobkey_priority(tr.jobkey), seq);
    memcpy(rec.data + offsetof(jb_trashrec, jobkey), key, JB_JOBKEY_LEN);
    MDB_val nv = {rec.len, rec.data};
    rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
    jb__buf_free(&rec);
    if (rc) break;
    c->res->letters++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Every "sync." setting but the detach record goes (their keys gathered
 * first, then deleted: no cursor walks a table it deletes from). */
static int forget_settings(jb_store *s, MDB_txn *txn) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->meta, &cur);
  if (rc) return rc;
  size_t plen = sizeof SETTING_SYNC - 1;
  jb_buf keys = {0}; /* each key: its length (one byte), then its bytes */
  MDB_val k = {plen, (void *)SETTING_SYNC}, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size < plen || memcmp(k.mv_data, SETTING_SYNC, plen) != 0) break;
    if (k.mv_size > 255 || (k.mv_size == sizeof SETTING_DETACHED - 1 &&
                            memcmp(k.mv_data, SETTING_DETACHED, k.mv_size) == 0))
      continue;
    uint8_t n = (uint8_t)k.mv_size;
    if ((rc = jb__buf_append(&keys, &n, 1)) ||
        (rc = jb__buf_append(&keys, k.mv_data, k.mv_size)))
      break;
  }
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) rc = 0;
  for (size_t at = 0; rc == 0 && at < keys.len; at += 1 + keys.data[at]) {
    MDB_val dk = {keys.data[at], keys.data + at + 1};
    rc = mdb_del(txn, s->meta, &dk, NULL);
  }
  jb__buf_free(&keys);
  return rc;
}

/* The detach record: its lines so far, then this one; the oldest lines
 * go when the setting's bound is reached. */
static int record(jb_store *s, MDB_txn *txn, const detach_ctx *c) {
  char line[1400];
  const jb_store_detach_result *r = c->res;
  snprintf(line, sizeof line, "%s: %zu jobs made local, %zu claims released, "
           "%zu kept, %zu dead letters kept\n", c->note, r->jobs, r->released,
           r->kept, r->letters);
  size_t llen = strlen(line);
  MDB_val k = {sizeof SETTING_DETACHED - 1, (void *)SETTING_DETACHED}, v;
  jb_buf val = {0};
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == 0) {
    const char *p = v.mv_data, *end = p + v.mv_size;
    while (end - p + llen > JB_SETTING_VALUE_MAX) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      p = nl ? nl + 1 : end;
    }
    rc = jb__buf_append(&val, p, (size_t)(end - p));
  } else if (rc == MDB_NOTFOUND) {
    rc = 0;
  }
  if (rc == 0) rc = jb__buf_append(&val, line, llen);
  if (rc == 0) {
    MDB_val nv = {val.len, val.data};
    rc = mdb_put(txn, s->meta, &k, &nv, 0);
  }
  jb__buf_free(&val);
  return rc;
}

static int detach_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  detach_ctx *c = vctx;
  memset(c->res, 0, sizeof *c->res);
  /* Synced: the namespace setting is there (sync/config.c writes it
   * first). Read inside the transaction, so that two detaches at once
   * detach once. */
  static const char ns_key[] = JB_META_SETTING_PREFIX "sync.namespace";
  MDB_val k = {sizeof ns_key - 1, (void *)ns_key}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "the board is not synced with redis: "
                   "nothing to detach");
  if (rc) return rc;
  if ((rc = collect(s, txn, c))) return rc;
  jb_log_writer lw;
  /* Each job logs a POSTED event, and an ABANDONED one for a claim
   * released. */
  if ((rc = jb__log_open_for(s, txn, &lw, c->n ? c->n : 1))) return rc;
  uint64_t first = lw.next;
  for (size_t i = 0; rc == 0 && i < c->n; i++)
    rc = make_local(s, txn, &lw, c, c->jobs[i].uuid);
  /* A sequence the log used (or the last one before it). */
  uint64_t used = lw.next > first ? first : first > 1 ? first - 1 : 1;
  if (rc == 0) rc = local_letters(s, txn, c, used);
  if (rc == 0) rc = forget_settings(s, txn);
  if (rc == 0) rc = record(s, txn, c);
  return jb__log_close(s, txn, &lw, rc);
}

int jb__store_detach(jb_store *s, int64_t now_us, const char *note,
                     jb_store_detach_result *res) {
  detach_ctx c = {.now_us = now_us, .note = note ? note : "detached",
                  .res = res};
  int rc = jb__store_write(s, detach_body, &c);
  free(c.jobs);
  return rc;
}
