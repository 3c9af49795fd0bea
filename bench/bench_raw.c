/*
 * bench_raw.c - the raw LMDB floor of `jobboard-bench` (see bench_raw.h).
 *
 * Kept as plain as LMDB allows, since its figure is the floor the library
 * is measured against: a transaction per step, no checks beyond LMDB's
 * return codes, uuids from a xorshift generator instead of getrandom().
 */
#include "bench_raw.h"
#include "bench_util.h"

#include <errno.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KEY_LEN 9   /* priority byte + big-endian sequence, as the library */
#define READY_LEN 24 /* uuid + modified time, as the library's ready record */
#define CLAIM_LEN 32 /* uuid + format/lengths + claimed time, before owner */
#define OWNER "bench"
/* The library's log event: a 32-byte record and the owner's name, under an
 * 8-byte big-endian sequence; at least LOG_KEEP kept, trimmed LOG_TRIM at
 * a time (store/store.h: jb_eventrec, JB_LOG_KEEP, JB_LOG_TRIM). */
#define EVENT_LEN 40
#define LOG_KEEP 100000u
#define LOG_TRIM 64u

struct bench_raw {
  MDB_env *env;
  MDB_dbi jobs, ready, claims, log;
  bool with_log;
  size_t value_len;
  uint8_t *value; /* template; its first KEY_LEN bytes are set per job */
  uint64_t seq;   /* this process's sequence, tag in the low byte */
  unsigned tag;
  uint64_t rng;
};

unsigned bench_raw_env_flags(jb_durability durability) {
  unsigned flags = MDB_NOTLS;
  switch (durability) {
  case JB_DURABILITY_FULL: break;
  case JB_DURABILITY_NORMAL: flags |= MDB_NOMETASYNC; break;
  case JB_DURABILITY_NONE: flags |= MDB_NOSYNC; break;
  case JB_DURABILITY_INTERVAL: flags |= MDB_NOSYNC; break; /* no steady file */
  }
  return flags;
}

const char *bench_raw_flags_name(jb_durability durability) {
  switch (durability) {
  case JB_DURABILITY_FULL: return "MDB_NOTLS";
  case JB_DURABILITY_NORMAL: return "MDB_NOMETASYNC|MDB_NOTLS";
  case JB_DURABILITY_NONE: return "MDB_NOSYNC|MDB_NOTLS";
  case JB_DURABILITY_INTERVAL: return "MDB_NOSYNC|MDB_NOTLS";
  }
  return "?";
}

const char *bench_raw_strerror(int rc) { return mdb_strerror(rc); }

static void put_be64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (56 - 8 * i));
}

int bench_raw_open(bench_raw **out, const char *dir, jb_durability durability,
                   size_t map_size, size_t value_len, unsigned tag,
                   unsigned flags) {
  *out = NULL;
  if (value_len < 32) value_len = 32;
  bench_raw *r = calloc(1, sizeof *r);
  if (r == NULL || (r->value = malloc(value_len)) == NULL) {
    free(r);
    return ENOMEM;
  }
  /* Filler bytes that do not compress or repeat trivially. */
  for (size_t i = 0; i < value_len; i++) r->value[i] = (uint8_t)(i * 131 + 7);
  r->value_len = value_len;
  r->tag = tag & 0xff;
  r->with_log = (flags & BENCH_RAW_LOG) != 0;
  r->rng = bench_rand_seed(r->tag);

  int rc;
  MDB_txn *txn = NULL;
  if ((rc = mdb_env_create(&r->env)) != 0) {
    r->env = NULL;
    goto fail;
  }
  if ((rc = mdb_env_set_maxdbs(r->env, 4)) ||
      (rc = mdb_env_set_mapsize(r->env, map_size)) ||
      (rc = mdb_env_open(r->env, dir, bench_raw_env_flags(durability), 0664)))
    goto fail;
  /* Opening the tables is itself a write transaction: concurrent openers
   * of a fresh environment are serialised by LMDB's writer lock. */
  if ((rc = mdb_txn_begin(r->env, NULL, 0, &txn)) ||
      (rc = mdb_dbi_open(txn, "jobs", MDB_CREATE, &r->jobs)) ||
      (rc = mdb_dbi_open(txn, "ready", MDB_CREATE, &r->ready)) ||
      (rc = mdb_dbi_open(txn, "claims", MDB_CREATE, &r->claims)) ||
      (rc = mdb_dbi_open(txn, "log", MDB_CREATE, &r->log)))
    goto fail;
  rc = mdb_txn_commit(txn);
  txn = NULL;
  if (rc) goto fail;
  *out = r;
  return 0;
fail:
  if (txn) mdb_txn_abort(txn);
  bench_raw_close(r);
  return rc;
}

/* The log's next sequence: one past its last key (1 when empty). */
static int raw_log_next(MDB_cursor *cur, uint64_t *next) {
  MDB_val k, v;
  *next = 1;
  int rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc == 0 && k.mv_size != 8) rc = MDB_CORRUPTED;
  if (rc) return rc;
  const uint8_t *b = k.mv_data;
  uint64_t seq = 0;
  for (int i = 0; i < 8; i++) seq = seq << 8 | b[i];
  *next = seq + 1;
  return 0;
}

/* Append one event to the change log, as the library's log_event does. */
static int raw_log(bench_raw *r, MDB_txn *txn, const uint8_t uuid[16]) {
  if (!r->with_log) return 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, r->log, &cur);
  if (rc) return rc;
  MDB_val k, v;
  uint64_t seq;
  rc = raw_log_next(cur, &seq);
  uint8_t key[8];
  put_be64(key, seq);
  k = (MDB_val){8, key};
  v = (MDB_val){EVENT_LEN + sizeof OWNER - 1, NULL};
  if (rc == 0) rc = mdb_cursor_put(cur, &k, &v, MDB_APPEND | MDB_RESERVE);
  if (rc == 0) {
    uint8_t ev[EVENT_LEN + sizeof OWNER - 1] = {0};
    memcpy(ev + EVENT_LEN - 16, uuid, 16);
    memcpy(ev + EVENT_LEN, OWNER, sizeof OWNER - 1);
    memcpy(v.mv_data, ev, sizeof ev);
  }
  MDB_stat st;
  if (rc == 0) rc = mdb_stat(txn, r->log, &st);
  if (rc == 0 && st.ms_entries >= LOG_KEEP + LOG_TRIM) {
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    for (unsigned i = 0; rc == 0 && i < LOG_TRIM; i++) {
      rc = mdb_cursor_del(cur, 0);
      if (rc == 0 && i + 1 < LOG_TRIM)
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
  }
  mdb_cursor_close(cur);
  return rc;
}

/* The next job's uuid and key. Time-ordered uuids, as the library's
 * version 7 ones (base/util.c): a big-endian count (the time's place),
 * then random bytes. */
static void next_job(bench_raw *r, uint8_t uuid[16], uint8_t key[KEY_LEN]) {
  uint64_t b = bench_rand(&r->rng);
  put_be64(uuid, ((r->seq + 1) << 8) | r->tag);
  memcpy(uuid + 8, &b, 8);
  key[0] = 2; /* NORMAL's rank, as the library's jobkey */
  put_be64(key + 1, (++r->seq << 8) | r->tag);
}

/* post: the job and its ready entry. */
static int raw_post(bench_raw *r) {
  uint8_t uuid[16], key[KEY_LEN];
  next_job(r, uuid, key);

  MDB_txn *txn;
  int rc = mdb_txn_begin(r->env, NULL, 0, &txn);
  if (rc) return rc;
  MDB_val k = {16, uuid}, v = {r->value_len, NULL};
  rc = mdb_put(txn, r->jobs, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
  if (rc == 0) {
    memcpy(r->value, key, KEY_LEN);
    memcpy(v.mv_data, r->value, r->value_len);
    uint8_t rec[READY_LEN] = {0};
    memcpy(rec, uuid, 16);
    MDB_val rk = {KEY_LEN, key}, rv = {READY_LEN, rec};
    rc = mdb_put(txn, r->ready, &rk, &rv, 0);
  }
  if (rc == 0) rc = raw_log(r, txn, uuid);
  if (rc) {
    mdb_txn_abort(txn);
    return rc;
  }
  return mdb_txn_commit(txn);
}

/* claim-next: take the first ready entry, record the claim. */
static int raw_claim_next(bench_raw *r, uint8_t uuid_out[16]) {
  MDB_txn *txn;
  MDB_cursor *cur;
  int rc = mdb_txn_begin(r->env, NULL, 0, &txn);
  if (rc) return rc;
  if ((rc = mdb_cursor_open(txn, r->ready, &cur)) != 0) {
    mdb_txn_abort(txn);
    return rc;
  }
  MDB_val k, v;
  uint8_t key[KEY_LEN];
  rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
  if (rc == 0 && (k.mv_size != KEY_LEN || v.mv_size != READY_LEN))
    rc = MDB_CORRUPTED;
  if (rc == 0) {
    memcpy(key, k.mv_data, KEY_LEN);
    memcpy(uuid_out, v.mv_data, 16);
    rc = mdb_cursor_del(cur, 0);
  }
  mdb_cursor_close(cur);
  if (rc == 0) {
    uint8_t rec[CLAIM_LEN + sizeof OWNER - 1] = {0};
    memcpy(rec, uuid_out, 16);
    memcpy(rec + CLAIM_LEN, OWNER, sizeof OWNER - 1);
    MDB_val ck = {KEY_LEN, key}, cv = {sizeof rec, rec};
    rc = mdb_put(txn, r->claims, &ck, &cv, 0);
  }
  if (rc == 0) rc = raw_log(r, txn, uuid_out);
  if (rc) {
    mdb_txn_abort(txn);
    return rc;
  }
  return mdb_txn_commit(txn);
}

/* consume: find the job's key, drop the claim and the job. */
static int raw_consume(bench_raw *r, const uint8_t uuid[16]) {
  MDB_txn *txn;
  int rc = mdb_txn_begin(r->env, NULL, 0, &txn);
  if (rc) return rc;
  MDB_val k = {16, (void *)uuid}, v;
  rc = mdb_get(txn, r->jobs, &k, &v);
  if (rc == 0 && v.mv_size < KEY_LEN) rc = MDB_CORRUPTED;
  if (rc == 0) {
    uint8_t key[KEY_LEN];
    memcpy(key, v.mv_data, KEY_LEN);
    MDB_val ck = {KEY_LEN, key};
    rc = mdb_del(txn, r->claims, &ck, NULL);
  }
  if (rc == 0) rc = mdb_del(txn, r->jobs, &k, NULL);
  if (rc == 0) rc = raw_log(r, txn, uuid);
  if (rc) {
    mdb_txn_abort(txn);
    return rc;
  }
  return mdb_txn_commit(txn);
}

/* b posts in one transaction: each job's record and ready entry, and with
 * the log its event, all appended at their table's end (uuids and keys
 * increase), the log trimmed at most once, as the library's batch post. */
static int raw_post_batch(bench_raw *r, size_t b) {
  MDB_txn *txn;
  int rc = mdb_txn_begin(r->env, NULL, 0, &txn);
  if (rc) return rc;
  MDB_cursor *jobs = NULL, *ready = NULL, *log = NULL;
  uint64_t lseq = 1;
  if ((rc = mdb_cursor_open(txn, r->jobs, &jobs)) == 0 &&
      (rc = mdb_cursor_open(txn, r->ready, &ready)) == 0 && r->with_log &&
      (rc = mdb_cursor_open(txn, r->log, &log)) == 0)
    rc = raw_log_next(log, &lseq);
  for (size_t i = 0; rc == 0 && i < b; i++) {
    uint8_t uuid[16], key[KEY_LEN];
    next_job(r, uuid, key);
    MDB_val k = {16, uuid}, v = {r->value_len, NULL};
    rc = mdb_cursor_put(jobs, &k, &v, MDB_APPEND | MDB_RESERVE);
    if (rc) break;
    memcpy(r->value, key, KEY_LEN);
    memcpy(v.mv_data, r->value, r->value_len);
    uint8_t rec[READY_LEN] = {0};
    memcpy(rec, uuid, 16);
    MDB_val rk = {KEY_LEN, key}, rv = {READY_LEN, rec};
    if ((rc = mdb_cursor_put(ready, &rk, &rv, MDB_APPEND))) break;
    if (log) {
      uint8_t lk[8], ev[EVENT_LEN] = {0};
      put_be64(lk, lseq++);
      memcpy(ev + EVENT_LEN - 16, uuid, 16);
      MDB_val ek = {8, lk}, ev_v = {EVENT_LEN, ev};
      rc = mdb_cursor_put(log, &ek, &ev_v, MDB_APPEND);
    }
  }
  MDB_stat st;
  if (rc == 0 && log && (rc = mdb_stat(txn, r->log, &st)) == 0 &&
      st.ms_entries >= LOG_KEEP + LOG_TRIM) {
    MDB_val k, v;
    size_t over = st.ms_entries - LOG_KEEP;
    rc = mdb_cursor_get(log, &k, &v, MDB_FIRST);
    for (size_t i = 0; rc == 0 && i < over; i++) {
      rc = mdb_cursor_del(log, 0);
      if (rc == 0 && i + 1 < over)
        rc = mdb_cursor_get(log, &k, &v, MDB_GET_CURRENT);
    }
  }
  if (log) mdb_cursor_close(log);
  if (ready) mdb_cursor_close(ready);
  if (jobs) mdb_cursor_close(jobs);
  if (rc) {
    mdb_txn_abort(txn);
    return rc;
  }
  return mdb_txn_commit(txn);
}

int bench_raw_post(bench_raw *r, size_t n, size_t b) {
  int rc = 0;
  for (size_t done = 0; rc == 0 && done < n; done += b)
    rc = raw_post_batch(r, n - done < b ? n - done : b);
  return rc;
}

int bench_raw_cycles(bench_raw *r, size_t n, size_t *done_out) {
  size_t done = 0;
  int rc = 0;
  for (; done < n; done++) {
    uint8_t uuid[16];
    if ((rc = raw_post(r)) || (rc = raw_claim_next(r, uuid)) ||
        (rc = raw_consume(r, uuid)))
      break;
  }
  if (done_out) *done_out = done;
  return rc;
}

size_t bench_raw_count(bench_raw *r) {
  MDB_txn *txn;
  MDB_stat st;
  if (mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn) != 0) return (size_t)-1;
  int rc = mdb_stat(txn, r->jobs, &st);
  mdb_txn_abort(txn);
  return rc == 0 ? st.ms_entries : (size_t)-1;
}

void bench_raw_close(bench_raw *r) {
  if (r == NULL) return;
  if (r->env) mdb_env_close(r->env);
  free(r->value);
  free(r);
}
