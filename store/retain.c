/*
 * retain.c - retention (jobboard.h "retention"): the setting the board
 * stores in `meta`, the bounds a write applies, the `deadage` index of the
 * dead letters (store.h, schema 10) and their pruning.
 *
 * The dead letters are keyed by uuid in `trash`, an order that says
 * nothing of their age: finding the oldest would read them all. `deadage`
 * holds one empty entry per letter under the time it died and its uuid,
 * so the oldest is its first key, and a write that prunes reads only what
 * it deletes. The entry is written and deleted in the transaction that
 * writes or deletes the letter (ops.c, dead.c, salvage.c).
 */
#include "life.h"
#include "history.h"

#include <string.h>

/* ------------------------------------------------------------- setting */

int jb__retention_read(jb_store *s, MDB_txn *txn, jb_retention *r) {
  memset(r, 0, sizeof *r);
  MDB_val k = {sizeof JB_RETAIN_KEY - 1, JB_RETAIN_KEY}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (v.mv_size != JB_RETAIN_LEN) return MDB_CORRUPTED;
  const uint8_t *d = v.mv_data;
  memcpy(&r->history_max, d, 8);
  memcpy(&r->history_max_age_ms, d + 8, 8);
  memcpy(&r->dead_max, d + 16, 8);
  memcpy(&r->dead_max_age_ms, d + 24, 8);
  return 0;
}

static int retention_write(jb_store *s, MDB_txn *txn, const jb_retention *r) {
  uint8_t d[JB_RETAIN_LEN];
  memcpy(d, &r->history_max, 8);
  memcpy(d + 8, &r->history_max_age_ms, 8);
  memcpy(d + 16, &r->dead_max, 8);
  memcpy(d + 24, &r->dead_max_age_ms, 8);
  MDB_val k = {sizeof JB_RETAIN_KEY - 1, JB_RETAIN_KEY}, v = {sizeof d, d};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

/* A count field: stored, else `fallback` (a bound already resolved). */
static size_t count_of(int64_t stored, size_t fallback) {
  if (stored == 0) return fallback;
  return stored == JB_RETAIN_NONE ? SIZE_MAX : (size_t)stored;
}

static int64_t age_of(int64_t stored_ms, int64_t fallback_us) {
  if (stored_ms == 0) return fallback_us;
  return stored_ms == JB_RETAIN_NONE ? INT64_MAX : stored_ms * 1000;
}

static void bounds_of(const jb_retention *st, const jb_hist_bounds *hist,
                      jb_hist_bounds *h, jb_hist_bounds *d) {
  if (h) {
    h->max_count = count_of(st->history_max,
                            hist ? hist->max_count : JB_HISTORY_MAX_DEFAULT);
    h->max_age_us = age_of(st->history_max_age_ms,
                           hist ? hist->max_age_us
                                : JB_HISTORY_AGE_DEFAULT_MS * 1000);
  }
  if (d) {
    d->max_count = count_of(st->dead_max, JB_RETAIN_DEAD_MAX_DEFAULT);
    d->max_age_us = age_of(st->dead_max_age_ms,
                           JB_RETAIN_DEAD_AGE_DEFAULT_MS * 1000);
  }
}

int jb__retention_bounds(jb_store *s, MDB_txn *txn, const jb_hist_bounds *hist,
                         jb_hist_bounds *hist_out, jb_hist_bounds *dead_out) {
  jb_retention st;
  int rc = jb__retention_read(s, txn, &st);
  if (rc == 0) bounds_of(&st, hist, hist_out, dead_out);
  return rc;
}

/* ------------------------------------------------------------- deadage */

#define DAKEY_LEN (8 + 16)

static void dakey(uint8_t k[DAKEY_LEN], const uint8_t uuid[16], int64_t us) {
  jb__put_be64(k, us < 0 ? 0 : (uint64_t)us);
  memcpy(k + 8, uuid, 16);
}

int jb__deadage_put(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    int64_t trashed_us) {
  uint8_t key[DAKEY_LEN];
  dakey(key, uuid, trashed_us);
  MDB_val k = {sizeof key, key}, v = {0, ""};
  return mdb_put(txn, s->deadage, &k, &v, 0);
}

int jb__deadage_del_rec(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                        const void *val, size_t len) {
  jb_trashrec tr;
  size_t hl;
  if (!jb__trashrec_read(val, len, &tr, &hl)) return 0; /* check says so */
  uint8_t key[DAKEY_LEN];
  dakey(key, uuid, tr.trashed_us);
  MDB_val k = {sizeof key, key};
  int rc = mdb_del(txn, s->deadage, &k, NULL);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ------------------------------------------------------------- pruning */

int jb__dead_prune(jb_store *s, MDB_txn *txn, const jb_hist_bounds *dead,
                   int64_t now_us, size_t max, size_t *pruned) {
  if (pruned) *pruned = 0;
  MDB_stat st;
  int rc = mdb_stat(txn, s->trash, &st);
  if (rc) return rc;
  size_t count = st.ms_entries;
  /* Nothing can be due: no look at `deadage` (most completions). */
  if (count <= dead->max_count && (count == 0 || dead->max_age_us == INT64_MAX))
    return 0;
  int64_t cutoff = dead->max_age_us > now_us ? INT64_MIN
                                             : now_us - dead->max_age_us;
  MDB_cursor *cur;
  if ((rc = mdb_cursor_open(txn, s->deadage, &cur))) return rc;
  size_t n = 0;
  while (n < max) {
    MDB_val k, v;
    if ((rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST))) break;
    if (k.mv_size != DAKEY_LEN) break; /* check reports it; nothing goes */
    int64_t died = (int64_t)jb__be64(k.mv_data);
    if (count <= dead->max_count && died >= cutoff) break;
    uint8_t uuid[16];
    memcpy(uuid, (const uint8_t *)k.mv_data + 8, 16);
    MDB_val uk = {16, uuid};
    rc = mdb_del(txn, s->trash, &uk, NULL);
    if (rc == 0)
      count--;
    else if (rc != MDB_NOTFOUND) /* an entry without its letter: it goes */
      break;
    if ((rc = mdb_cursor_del(cur, 0))) break;
    n++;
  }
  mdb_cursor_close(cur);
  if (pruned) *pruned = n;
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__retention_after_complete(jb_store *s, MDB_txn *txn,
                                 const jb_hist_bounds *hist, int64_t now_us) {
  jb_hist_bounds dead;
  int rc = jb__retention_bounds(s, txn, hist, NULL, &dead);
  if (rc) return rc;
  return jb__dead_prune(s, txn, &dead, now_us, JB_RETAIN_PRUNE_MAX, NULL);
}

/* -------------------------------------------------------- get and set */

typedef struct {
  const jb_hist_bounds *hist;
  jb_retention *stored, *effective; /* get */
  const jb_retention *set;          /* set */
  unsigned fields;
  int64_t now_us;
} retain_ctx;

/* A bound as jb_retention states it. */
static int64_t count_out(size_t n) {
  return n >= (size_t)INT64_MAX ? JB_RETAIN_NONE : (int64_t)n;
}

static int64_t age_out(int64_t us) {
  return us == INT64_MAX ? JB_RETAIN_NONE : us / 1000;
}

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  retain_ctx *c = vctx;
  jb_retention st;
  int rc = jb__retention_read(s, txn, &st);
  if (rc == MDB_CORRUPTED)
    return jb__err(JB_ECORRUPT, "the board's retention setting does not "
                   "decode (set it again: jobboard retention)");
  if (rc) return rc;
  if (c->stored) *c->stored = st;
  if (c->effective) {
    jb_hist_bounds h, d;
    bounds_of(&st, c->hist, &h, &d);
    *c->effective = (jb_retention){count_out(h.max_count),
                                   age_out(h.max_age_us),
                                   count_out(d.max_count),
                                   age_out(d.max_age_us)};
  }
  return 0;
}

int jb__store_retention_get(jb_store *s, const jb_hist_bounds *hist,
                            jb_retention *stored, jb_retention *effective) {
  retain_ctx c = {.hist = hist ? hist : &s->hist, .stored = stored,
                  .effective = effective};
  return jb__store_read(s, get_body, &c);
}

static int set_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  retain_ctx *c = vctx;
  jb_retention st;
  int rc = jb__retention_read(s, txn, &st);
  if (rc && rc != MDB_CORRUPTED) return rc; /* a garbled one is replaced */
  if (rc) memset(&st, 0, sizeof st);
  if (c->fields & JB_RETAIN_HISTORY_MAX) st.history_max = c->set->history_max;
  if (c->fields & JB_RETAIN_HISTORY_AGE)
    st.history_max_age_ms = c->set->history_max_age_ms;
  if (c->fields & JB_RETAIN_DEAD_MAX) st.dead_max = c->set->dead_max;
  if (c->fields & JB_RETAIN_DEAD_AGE)
    st.dead_max_age_ms = c->set->dead_max_age_ms;
  if ((rc = retention_write(s, txn, &st))) return rc;
  /* A first batch goes now; later completions take the rest. */
  jb_hist_bounds h, d;
  bounds_of(&st, c->hist, &h, &d);
  if ((rc = jb__history_prune(s, txn, &h, c->now_us, NULL))) return rc;
  return jb__dead_prune(s, txn, &d, c->now_us, JB_RETAIN_PRUNE_MAX, NULL);
}

int jb__store_retention_set(jb_store *s, const jb_hist_bounds *hist,
                            const jb_retention *r, unsigned fields,
                            int64_t now_us) {
  retain_ctx c = {.hist = hist ? hist : &s->hist, .set = r, .fields = fields,
                  .now_us = now_us};
  return jb__store_write(s, set_body, &c);
}
