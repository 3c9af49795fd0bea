/*
 * names.c - job names as queues: the lanes, the `byname` index of ready
 * jobs and the `queues` table (names.h).
 */
#include "names.h"

#include "history.h"
#include "wake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t jb__lane(const void *name, size_t len) {
  /* FNV-1a: spreads the short, similar names jobs have ("images.resize",
   * "images.crop") well enough for a handful of names per 2^32. */
  const uint8_t *p = name;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

uint32_t jb__name_lane(const char *name, size_t len) {
  return jb__lane(name, len);
}

uint32_t jb__hdr_lane(const jb_jobhdr *h) {
  return (uint32_t)h->lane[0] << 24 | (uint32_t)h->lane[1] << 16 |
         (uint32_t)h->lane[2] << 8 | h->lane[3];
}

void jb__hdr_set_lane(jb_jobhdr *h, uint32_t lane) {
  h->lane[0] = (uint8_t)(lane >> 24);
  h->lane[1] = (uint8_t)(lane >> 16);
  h->lane[2] = (uint8_t)(lane >> 8);
  h->lane[3] = (uint8_t)lane;
}

uint32_t jb__posting_lane(const void *posting, size_t len) {
  const char *name;
  size_t n;
  if (!jb__history_posting_name(posting, len, &name, &n)) return 0;
  return jb__lane(name, n);
}

static void byname_key(uint8_t out[JB_BYNAME_KEY_LEN], uint32_t lane,
                       const uint8_t jobkey[JB_JOBKEY_LEN]) {
  out[0] = (uint8_t)(lane >> 24);
  out[1] = (uint8_t)(lane >> 16);
  out[2] = (uint8_t)(lane >> 8);
  out[3] = (uint8_t)lane;
  memcpy(out + 4, jobkey, JB_JOBKEY_LEN);
}

int jb__ready_add(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const uint8_t uuid[16],
                  int64_t modified_us, uint32_t lane, unsigned put_flags) {
  jb_readyrec r = {.modified_us = modified_us};
  memcpy(r.uuid, uuid, 16);
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey}, v = {sizeof r, &r};
  int rc = mdb_put(txn, s->ready, &k, &v, put_flags);
  if (rc) return rc;
  uint8_t bk[JB_BYNAME_KEY_LEN];
  byname_key(bk, lane, jobkey);
  k = (MDB_val){sizeof bk, bk};
  v = (MDB_val){16, (void *)uuid};
  s->wake_lanes |= JB_WAKE_LANE(lane);
  return mdb_put(txn, s->byname, &k, &v, 0);
}

int jb__byname_remove(jb_store *s, MDB_txn *txn,
                      const uint8_t jobkey[JB_JOBKEY_LEN], uint32_t lane) {
  uint8_t bk[JB_BYNAME_KEY_LEN];
  byname_key(bk, lane, jobkey);
  MDB_val k = {sizeof bk, bk};
  int rc = mdb_del(txn, s->byname, &k, NULL);
  /* Missing only on a damaged board: check reports it, and the job's
   * move goes on (refusing it would strand the job). */
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__ready_remove(jb_store *s, MDB_txn *txn,
                     const uint8_t jobkey[JB_JOBKEY_LEN], uint32_t lane) {
  MDB_val k = {JB_JOBKEY_LEN, (void *)jobkey};
  int rc = mdb_del(txn, s->ready, &k, NULL);
  if (rc) return rc;
  return jb__byname_remove(s, txn, jobkey, lane);
}

int jb__ready_add_job(jb_store *s, MDB_txn *txn,
                      const uint8_t jobkey[JB_JOBKEY_LEN],
                      const uint8_t uuid[16], int64_t modified_us,
                      unsigned put_flags) {
  jb_jobhdr h;
  int rc = jb__job_header(s, txn, uuid, &h, NULL);
  if (rc) return rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc;
  return jb__ready_add(s, txn, jobkey, uuid, modified_us, jb__hdr_lane(&h),
                       put_flags);
}

bool jb__name_is_prefix(const char *pattern, size_t len) {
  return len && pattern[len - 1] == '*';
}

bool jb__name_chosen(const char *const *names, size_t n, const char *name,
                     size_t len) {
  for (size_t i = 0; i < n; i++) {
    size_t pl = strlen(names[i]);
    if (jb__name_is_prefix(names[i], pl)) {
      if (len >= pl - 1 && memcmp(name, names[i], pl - 1) == 0) return true;
    } else if (len == pl && memcmp(name, names[i], len) == 0) {
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------------- queues */

static void lane_key(uint8_t out[4], uint32_t lane) {
  out[0] = (uint8_t)(lane >> 24);
  out[1] = (uint8_t)(lane >> 16);
  out[2] = (uint8_t)(lane >> 8);
  out[3] = (uint8_t)lane;
}

/* The entry at `off` of a lane's value, either format: false when it
 * does not parse. *size: the entry's bytes, name included. */
static bool entry_parse(const uint8_t *p, size_t len, size_t off,
                        jb_queueent *e, size_t *size) {
  if (len - off < sizeof e->q) return false;
  memcpy(&e->q, p + off, sizeof e->q);
  size_t head = sizeof e->q;
  memset(&e->r, 0, sizeof e->r);
  if (e->q.format == 2) {
    if (len - off - head < sizeof e->r) return false;
    memcpy(&e->r, p + off + head, sizeof e->r);
    head += sizeof e->r;
  } else if (e->q.format == 1) {
    e->q.rate = 0;
  } else {
    return false;
  }
  if (len - off - head < e->q.name_len) return false;
  *size = head + e->q.name_len;
  return true;
}

/* An entry's name bytes (its size known to parse). */
static const char *entry_name(const uint8_t *p, size_t off,
                              const jb_queueent *e) {
  return (const char *)p + off + sizeof e->q +
         (e->q.format == 2 ? sizeof e->r : 0);
}

/* The entry of `name` in a lane's value: its offset, or -1. MDB_CORRUPTED
 * through *bad when the value does not parse. */
static long find_entry(const uint8_t *p, size_t len, const char *name,
                       size_t name_len, bool *bad) {
  size_t off = 0;
  *bad = false;
  while (off < len) {
    jb_queueent e;
    size_t size;
    if (!entry_parse(p, len, off, &e, &size)) break;
    if (e.q.name_len == name_len &&
        memcmp(entry_name(p, off, &e), name, name_len) == 0)
      return (long)off;
    off += size;
  }
  if (off != len) *bad = true;
  return -1;
}

static int read_queuectl(jb_store *s, MDB_txn *txn, uint32_t *out);
static int write_queuectl(jb_store *s, MDB_txn *txn, uint32_t val);
static void rate_from_prefix(jb_queueent *n, uint32_t rate,
                             uint64_t period_ms, int64_t now_us);

int jb__queue_note(jb_store *s, MDB_txn *txn, uint32_t lane, const char *name,
                   size_t len) {
  uint8_t lk[4];
  lane_key(lk, lane);
  MDB_val k = {4, lk}, v;
  int rc = mdb_get(txn, s->queues, &k, &v);
  if (rc && rc != MDB_NOTFOUND) return rc;
  size_t old = rc == 0 ? v.mv_size : 0;
  if (rc == 0) {
    bool bad;
    if (find_entry(v.mv_data, v.mv_size, name, len, &bad) >= 0) return 0;
    if (bad) old = 0; /* a garbled value: check reports it; rebuilt here */
  }
  jb_queueent e = {.q = {.format = 1, .name_len = (uint16_t)len}};
  /* A new name under a prefix capped or rate-limited for each name gets
   * that cap (and, new, holds no claim yet) and that limit (its tokens
   * full). */
  uint32_t cap = 0, rate = 0;
  uint64_t period_ms = 0;
  if ((rc = jb__queue_each_of(s, txn, JB_EACH_CAP, name, len, &cap, NULL)) ||
      (rc = jb__queue_each_of(s, txn, JB_EACH_RATE, name, len, &rate,
                              &period_ms)))
    return rc;
  if (cap) {
    e.q.flags = JB_QUEUE_F_CAPPED | JB_QUEUE_F_CAP_EACH;
    e.q.cap = cap;
  }
  if (rate) {
    rate_from_prefix(&e, rate, period_ms, jb__now_us());
    e.q.format = 2;
  }
  if (e.q.flags) {
    uint32_t ctl;
    if ((rc = read_queuectl(s, txn, &ctl)) ||
        (rc = write_queuectl(s, txn, ctl + 1)))
      return rc;
  }
  size_t head = sizeof e.q + (rate ? sizeof e.r : 0);
  size_t nsize = old + head + len;
  uint8_t *buf = malloc(nsize);
  if (!buf) return JB_ENOMEM;
  if (old) memcpy(buf, v.mv_data, old);
  memcpy(buf + old, &e.q, sizeof e.q);
  if (rate) memcpy(buf + old + sizeof e.q, &e.r, sizeof e.r);
  memcpy(buf + old + head, name, len);
  MDB_val nv = {nsize, buf};
  rc = mdb_put(txn, s->queues, &k, &nv, 0);
  free(buf);
  return rc;
}

int jb__queue_walk(jb_store *s, MDB_txn *txn, jb_queue_visit visit,
                   void *arg) {
  return jb__queue_walk_checked(s, txn, visit, NULL, arg);
}

int jb__queue_walk_checked(jb_store *s, MDB_txn *txn, jb_queue_visit visit,
                           jb_queue_bad bad_value, void *arg) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->queues, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    bool bad = k.mv_size != 4;
    int r = bad ? 0
                : jb__queue_value_walk(v.mv_data, v.mv_size,
                                       jb__be32(k.mv_data), visit, arg, &bad);
    if (r == 0 && bad && bad_value) bad_value(arg, k.mv_data, k.mv_size);
    if (r) {
      mdb_cursor_close(cur);
      return r;
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__queue_value_walk(const void *val, size_t len, uint32_t lane,
                         jb_queue_visit visit, void *arg, bool *bad) {
  const uint8_t *p = val;
  size_t off = 0, size;
  jb_queueent e;
  while (off < len && entry_parse(p, len, off, &e, &size)) {
    int r = visit(arg, lane, entry_name(p, off, &e), e.q.name_len, &e);
    if (r) return r;
    off += size;
  }
  *bad = off != len;
  return 0;
}

static int read_queuectl(jb_store *s, MDB_txn *txn, uint32_t *out) {
  MDB_val k = {sizeof JB_QUEUECTL_KEY - 1, JB_QUEUECTL_KEY}, v;
  *out = 0;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  if (v.mv_size == sizeof *out) memcpy(out, v.mv_data, sizeof *out);
  return 0;
}

static int write_queuectl(jb_store *s, MDB_txn *txn, uint32_t val) {
  MDB_val k = {sizeof JB_QUEUECTL_KEY - 1, JB_QUEUECTL_KEY};
  if (val == 0) {
    int rc = mdb_del(txn, s->meta, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
  }
  MDB_val v = {sizeof val, &val};
  return mdb_put(txn, s->meta, &k, &v, 0);
}

int64_t jb__rate_next_us(const jb_queueent *e, int64_t now_us) {
  int64_t period = (int64_t)e->r.period_ms * 1000;
  int64_t t = period / e->q.rate;
  int64_t tat = e->r.tat_us;
  if (tat > now_us + period) tat = now_us + period;
  return tat - (int64_t)(e->q.rate - 1) * t;
}

void jb__rate_spend(jb_queueent *e, int64_t now_us) {
  int64_t period = (int64_t)e->r.period_ms * 1000;
  int64_t tat = e->r.tat_us;
  /* Clamped as jb__rate_next_us reads it: a clock stepped back costs at
   * most a period's wait, not the step. */
  if (tat > now_us + period) tat = now_us + period;
  e->r.tat_us = (tat > now_us ? tat : now_us) + period / e->q.rate;
}

static int ctl_visit(void *arg, uint32_t lane, const char *name, size_t len,
                     const jb_queueent *e) {
  jb_queue_ctls *c = arg;
  if (!e->q.flags) return 0;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    jb_queue_ctl *v = realloc(c->v, cap * sizeof *v);
    if (!v) return JB_ENOMEM;
    c->v = v;
    c->cap = cap;
  }
  char *copy = malloc(len ? len : 1);
  if (!copy) return JB_ENOMEM;
  memcpy(copy, name, len);
  c->v[c->n++] = (jb_queue_ctl){
      .lane = lane, .flags = e->q.flags, .name_len = (uint16_t)len,
      .cap = e->q.cap, .held = e->q.held,
      .next_us = (e->q.flags & JB_QUEUE_F_RATED)
                     ? jb__rate_next_us(e, c->now_us) : 0,
      .name = copy};
  return 0;
}

int jb__queue_ctls_load(jb_store *s, MDB_txn *txn, int64_t now_us,
                        jb_queue_ctls *c) {
  c->n = 0;
  c->now_us = now_us;
  int rc = read_queuectl(s, txn, &c->queuectl);
  if (rc || (c->queuectl & ~JB_QUEUECTL_BOARD) == 0) return rc;
  return jb__queue_walk(s, txn, ctl_visit, c);
}

void jb__queue_ctls_free(jb_queue_ctls *c) {
  for (size_t i = 0; i < c->n; i++) free(c->v[i].name);
  free(c->v);
  *c = (jb_queue_ctls){0};
}

bool jb__queue_ctl_blocked(const jb_queue_ctls *c, const jb_queue_ctl *q) {
  return (q->flags & JB_QUEUE_F_PAUSED) ||
         ((q->flags & JB_QUEUE_F_CAPPED) && q->held >= q->cap) ||
         ((q->flags & JB_QUEUE_F_RATED) && q->next_us > c->now_us);
}

bool jb__queue_blocked(const jb_queue_ctls *c, uint32_t lane, const char *name,
                       size_t name_len, bool *need_name) {
  if (c->queuectl & JB_QUEUECTL_BOARD) return true;
  if (need_name) *need_name = false;
  for (size_t i = 0; i < c->n; i++) {
    if (c->v[i].lane != lane) continue;
    if (!name) {
      /* Without the name: blocked unless another name shares the lane,
       * which only the name can tell apart. */
      if (need_name) *need_name = true;
      continue;
    }
    if (c->v[i].name_len == name_len &&
        memcmp(c->v[i].name, name, name_len) == 0)
      return jb__queue_ctl_blocked(c, &c->v[i]);
  }
  return false;
}

/* The `queues` entry of a name: its lane key, the lane's value (a copy
 * the caller frees, or entry_put does), the entry's offset and size in it
 * and the entry as read; *found false when there is none (a job posted
 * before its name was recorded: check says). */
typedef struct {
  uint8_t key[4];
  uint8_t *val;
  size_t len;
  long off;
  size_t size;
  jb_queueent e;
} entry_ref;

static int entry_of_name(jb_store *s, MDB_txn *txn, const char *name,
                         size_t len, entry_ref *e, bool *found) {
  *found = false;
  e->val = NULL;
  lane_key(e->key, jb__lane(name, len));
  MDB_val k = {4, e->key}, v;
  int rc = mdb_get(txn, s->queues, &k, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  bool bad;
  e->off = find_entry(v.mv_data, v.mv_size, name, len, &bad);
  if (e->off < 0) return 0;
  entry_parse(v.mv_data, v.mv_size, (size_t)e->off, &e->e, &e->size);
  if (!(e->val = malloc(v.mv_size))) return JB_ENOMEM;
  memcpy(e->val, v.mv_data, v.mv_size);
  e->len = v.mv_size;
  *found = true;
  return 0;
}

static int not_posted(const char *name, size_t len) {
  return jb__err(JB_ENOTFOUND, "no job named '%.*s' was ever posted on the "
                 "board", (int)(len > 200 ? 200 : len), name);
}

/* Write back the entry e->e (frees e->val): format 2 while it has a rate
 * limit, format 1 otherwise, so the value may grow or shrink. */
static int entry_put(jb_store *s, MDB_txn *txn, entry_ref *e) {
  jb_queueent *n = &e->e;
  bool rated = (n->q.flags & JB_QUEUE_F_RATED) != 0;
  n->q.format = rated ? 2 : 1;
  if (!rated) n->q.rate = 0;
  size_t head = sizeof n->q + (rated ? sizeof n->r : 0);
  size_t nsize = head + n->q.name_len;
  size_t total = e->len - e->size + nsize;
  MDB_val k = {4, e->key}, v = {total, NULL};
  int rc = mdb_put(txn, s->queues, &k, &v, MDB_RESERVE);
  if (rc == 0) {
    uint8_t *out = v.mv_data, *in = e->val;
    size_t off = (size_t)e->off;
    size_t old_head = e->size - n->q.name_len;
    memcpy(out, in, off);
    memcpy(out + off, &n->q, sizeof n->q);
    if (rated) memcpy(out + off + sizeof n->q, &n->r, sizeof n->r);
    memcpy(out + off + head, in + off + old_head, n->q.name_len);
    memcpy(out + off + nsize, in + off + e->size, e->len - off - e->size);
  }
  free(e->val);
  e->val = NULL;
  return rc;
}

/* After a name's controls changed from `had` (any flag) to its entry's
 * now: the meta count of names with a control. */
static int count_ctl(jb_store *s, MDB_txn *txn, uint32_t ctl, bool had,
                     bool has) {
  uint32_t count = ctl & ~JB_QUEUECTL_BOARD;
  if (had && !has) count--;
  if (!had && has) count++;
  return write_queuectl(s, txn, (ctl & JB_QUEUECTL_BOARD) | count);
}

int jb__queue_set_flags(jb_store *s, MDB_txn *txn, const char *name,
                        size_t len, uint8_t set, uint8_t clear, int64_t now_us,
                        bool *changed) {
  uint32_t ctl;
  int rc = read_queuectl(s, txn, &ctl);
  if (rc) return rc;
  *changed = false;
  if (!name) { /* the whole board: JB_QUEUE_F_PAUSED only */
    uint32_t nv = ctl;
    if (set & JB_QUEUE_F_PAUSED) nv |= JB_QUEUECTL_BOARD;
    if (clear & JB_QUEUE_F_PAUSED) nv &= ~JB_QUEUECTL_BOARD;
    if (nv == ctl) return 0;
    *changed = true;
    if (clear) s->wake_lanes |= JB_WAKE_LANES; /* every name may be due */
    return write_queuectl(s, txn, nv);
  }
  uint32_t lane = jb__lane(name, len);
  entry_ref e;
  bool found;
  if ((rc = entry_of_name(s, txn, name, len, &e, &found))) return rc;
  if (!found) return not_posted(name, len);
  uint8_t nf = (uint8_t)((e.e.q.flags | set) & ~clear);
  if (nf == e.e.q.flags) {
    free(e.val);
    return 0;
  }
  *changed = true;
  if (clear) s->wake_lanes |= JB_WAKE_LANE(lane);
  bool had = e.e.q.flags != 0;
  e.e.q.flags = nf;
  e.e.q.changed_us = now_us;
  if ((rc = entry_put(s, txn, &e))) return rc;
  return count_ctl(s, txn, ctl, had, nf != 0);
}

/* The claims held now of the name name[0..len) of lane `lane`. */
int jb__queue_count_held(jb_store *s, MDB_txn *txn, uint32_t lane,
                         const char *name, size_t len, uint32_t *out) {
  *out = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->claims, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_jobhdr h;
    MDB_val posting;
    const char *n;
    size_t nl;
    if (v.mv_size < 16 ||
        jb__job_header(s, txn, v.mv_data, &h, &posting) != 0 ||
        jb__hdr_lane(&h) != lane ||
        !jb__history_posting_name(posting.mv_data, posting.mv_size, &n, &nl) ||
        nl != len || memcmp(n, name, len) != 0)
      continue;
    (*out)++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* A change of a name's control: the meta record and the name's entry
 * (JB_ENOTFOUND when no job of the name was ever posted). */
static int control_begin(jb_store *s, MDB_txn *txn, const char *name,
                         size_t len, uint32_t *ctl, entry_ref *e) {
  int rc = read_queuectl(s, txn, ctl);
  if (rc) return rc;
  bool found;
  if ((rc = entry_of_name(s, txn, name, len, e, &found))) return rc;
  return found ? 0 : not_posted(name, len);
}

/* Its end: the entry written back, the count of names with a control
 * (`had`: whether it had one before), and the name's waiters woken. */
static int control_end(jb_store *s, MDB_txn *txn, const char *name,
                       size_t len, uint32_t ctl, bool had, entry_ref *e) {
  s->wake_lanes |= JB_WAKE_LANE(jb__lane(name, len));
  bool has = e->e.q.flags != 0;
  int rc = entry_put(s, txn, e);
  return rc ? rc : count_ctl(s, txn, ctl, had, has);
}

int jb__queue_set_cap(jb_store *s, MDB_txn *txn, const char *name, size_t len,
                      uint32_t cap, int64_t now_us) {
  uint32_t ctl;
  entry_ref e;
  int rc = control_begin(s, txn, name, len, &ctl, &e);
  if (rc) return rc;
  jb_queuerec *q = &e.e.q;
  bool had = q->flags != 0, was_capped = (q->flags & JB_QUEUE_F_CAPPED) != 0;
  /* A name's own cap beats its prefix's; without one, its prefix's cap
   * (if any) applies again. */
  q->flags &= (uint8_t)~JB_QUEUE_F_CAP_EACH;
  uint32_t each = 0;
  if (cap == 0 && (rc = jb__queue_each_of(s, txn, JB_EACH_CAP, name, len,
                                          &each, NULL))) {
    free(e.val);
    return rc;
  }
  if (each) {
    cap = each;
    q->flags |= JB_QUEUE_F_CAP_EACH;
  }
  if (cap == 0) {
    q->flags &= (uint8_t)~JB_QUEUE_F_CAPPED;
    q->cap = q->held = 0;
  } else {
    if (!was_capped &&
        (rc = jb__queue_count_held(s, txn, jb__lane(name, len), name, len,
                                   &q->held))) {
      free(e.val);
      return rc;
    }
    q->flags |= JB_QUEUE_F_CAPPED;
    q->cap = cap;
  }
  q->changed_us = now_us;
  /* A raised or removed cap may free slots: the name's waiters look. */
  return control_end(s, txn, name, len, ctl, had, &e);
}

int jb__queue_set_rate(jb_store *s, MDB_txn *txn, const char *name,
                       size_t len, uint32_t rate, uint64_t period_ms,
                       int64_t now_us) {
  uint32_t ctl;
  entry_ref e;
  int rc = control_begin(s, txn, name, len, &ctl, &e);
  if (rc) return rc;
  jb_queueent *n = &e.e;
  bool had = n->q.flags != 0;
  if (rate == 0) {
    /* A name's own limit beats its prefix's; without one, its prefix's
     * limit (if any) applies again. */
    uint64_t each_period = 0;
    if ((rc = jb__queue_each_of(s, txn, JB_EACH_RATE, name, len, &rate,
                                &each_period))) {
      free(e.val);
      return rc;
    }
    rate_from_prefix(n, rate, each_period, now_us);
  } else {
    /* A limit set or changed starts full (`rate` claims at once): an
     * operator's deliberate act, as a raised cap is. */
    n->q.flags &= (uint8_t)~JB_QUEUE_F_RATE_EACH;
    n->q.flags |= JB_QUEUE_F_RATED;
    n->q.rate = rate;
    n->r.period_ms = period_ms;
    n->r.tat_us = now_us;
  }
  n->q.changed_us = now_us;
  /* A removed or changed limit may give tokens now: the name's waiters
   * look. */
  return control_end(s, txn, name, len, ctl, had, &e);
}

/* ------------------------------- controls of each name of a prefix */

/* The meta records "capeach" and "rateeach": the prefixes whose names
 * each take a control on their own, as entries of the control's value
 * (vsize bytes: a u32 cap; a u32 count and a u64 period_ms), a u16 length
 * and the prefix's bytes (without the '*'). Small: at most `max` entries. */
typedef struct {
  const char *key;
  size_t vsize;
  unsigned max;
  const char *what; /* for the error of a full list */
} each_def;

static const each_def each_defs[] = {
    [JB_EACH_CAP] = {JB_CAPEACH_KEY, 4, JB_CAPEACH_MAX, "caps the names"},
    [JB_EACH_RATE] = {JB_RATEEACH_KEY, 12, JB_RATEEACH_MAX,
                      "rate-limits the names"},
};

typedef struct {
  uint32_t count;     /* the cap, or the rate */
  uint64_t period_ms; /* JB_EACH_RATE */
  uint16_t len;
  const uint8_t *prefix;
} each_ent;

static bool each_next(jb_each_kind kind, const uint8_t *p, size_t len,
                      size_t *off, each_ent *e) {
  size_t vs = each_defs[kind].vsize;
  if (len - *off < vs + 2) return false;
  memcpy(&e->count, p + *off, 4);
  e->period_ms = 0;
  if (kind == JB_EACH_RATE) memcpy(&e->period_ms, p + *off + 4, 8);
  memcpy(&e->len, p + *off + vs, 2);
  if (len - *off - vs - 2 < e->len) return false;
  e->prefix = p + *off + vs + 2;
  *off += vs + 2 + (size_t)e->len;
  return true;
}

static int each_append(jb_buf *b, jb_each_kind kind, const each_ent *e) {
  int rc = jb__buf_append(b, &e->count, 4);
  if (rc == 0 && kind == JB_EACH_RATE)
    rc = jb__buf_append(b, &e->period_ms, 8);
  if (rc == 0) rc = jb__buf_append(b, &e->len, 2);
  if (rc == 0) rc = jb__buf_append(b, e->prefix, e->len);
  return rc ? JB_ENOMEM : 0;
}

static int each_get(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                    MDB_val *v) {
  const char *key = each_defs[kind].key;
  MDB_val k = {strlen(key), (void *)key};
  int rc = mdb_get(txn, s->meta, &k, v);
  if (rc == MDB_NOTFOUND) *v = (MDB_val){0, NULL};
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The entry of the longest prefix of the list `v` that covers
 * name[0..len) (count 0: none does). */
static each_ent each_match(jb_each_kind kind, const MDB_val *v,
                           const char *name, size_t len) {
  each_ent e, best = {0};
  size_t off = 0;
  long best_len = -1;
  while (each_next(kind, v->mv_data, v->mv_size, &off, &e))
    if (e.len <= len && (long)e.len > best_len &&
        memcmp(e.prefix, name, e.len) == 0) {
      best_len = e.len;
      best = e;
    }
  return best;
}

int jb__queue_each_of(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                      const char *name, size_t len, uint32_t *count,
                      uint64_t *period_ms) {
  MDB_val v;
  int rc = each_get(s, txn, kind, &v);
  each_ent e = {0};
  if (rc == 0) e = each_match(kind, &v, name, len);
  *count = e.count;
  if (period_ms) *period_ms = e.period_ms;
  return rc;
}

typedef struct {
  const char *prefix;
  size_t len;
  char **names;
  size_t *lens, n, cap;
} under_ctx;

static int collect_under(void *arg, uint32_t lane, const char *name,
                         size_t len, const jb_queueent *q) {
  (void)lane, (void)q;
  under_ctx *u = arg;
  if (len < u->len || memcmp(name, u->prefix, u->len) != 0) return 0;
  if (u->n == u->cap) {
    size_t nc = u->cap ? u->cap * 2 : 16;
    char **nn = realloc(u->names, nc * sizeof *nn);
    if (!nn) return JB_ENOMEM;
    u->names = nn;
    size_t *nl = realloc(u->lens, nc * sizeof *nl);
    if (!nl) return JB_ENOMEM;
    u->lens = nl;
    u->cap = nc;
  }
  if (!(u->names[u->n] = malloc(len ? len : 1))) return JB_ENOMEM;
  memcpy(u->names[u->n], name, len);
  u->lens[u->n++] = len;
  return 0;
}

/* One name's entry under a prefix whose control changed, given `want`
 * (what its longest prefix gives it now: count 0 for none): false when
 * nothing changes (then the caller frees the value). */
typedef int (*each_apply_fn)(jb_store *s, MDB_txn *txn, entry_ref *e,
                             const char *name, size_t len,
                             const each_ent *want, int64_t now_us,
                             bool *changes);

static int capeach_apply(jb_store *s, MDB_txn *txn, entry_ref *e,
                         const char *name, size_t len, const each_ent *want,
                         int64_t now_us, bool *changes) {
  (void)now_us;
  jb_queuerec *q = &e->e.q;
  bool own = (q->flags & JB_QUEUE_F_CAPPED) &&
             !(q->flags & JB_QUEUE_F_CAP_EACH);
  uint32_t now_cap = (q->flags & JB_QUEUE_F_CAPPED) ? q->cap : 0;
  *changes = !own && now_cap != want->count;
  if (!*changes) return 0;
  if (want->count == 0) {
    q->flags &= (uint8_t)~(JB_QUEUE_F_CAPPED | JB_QUEUE_F_CAP_EACH);
    q->cap = q->held = 0;
    return 0;
  }
  int rc = 0;
  if (!(q->flags & JB_QUEUE_F_CAPPED))
    rc = jb__queue_count_held(s, txn, jb__lane(name, len), name, len,
                              &q->held);
  q->flags |= JB_QUEUE_F_CAPPED | JB_QUEUE_F_CAP_EACH;
  q->cap = want->count;
  return rc;
}

/* Give entry `n` the rate limit `rate` per period_ms as its prefix's
 * (rate 0: none), its tokens full at `now`. */
static void rate_from_prefix(jb_queueent *n, uint32_t rate,
                             uint64_t period_ms, int64_t now_us) {
  if (rate == 0) {
    n->q.flags &= (uint8_t)~(JB_QUEUE_F_RATED | JB_QUEUE_F_RATE_EACH);
    n->r = (jb_queuerate){0};
    return;
  }
  n->q.flags |= JB_QUEUE_F_RATED | JB_QUEUE_F_RATE_EACH;
  n->q.rate = rate;
  n->r.period_ms = period_ms;
  n->r.tat_us = now_us;
}

static int rateeach_apply(jb_store *s, MDB_txn *txn, entry_ref *e,
                          const char *name, size_t len, const each_ent *want,
                          int64_t now_us, bool *changes) {
  (void)s, (void)txn, (void)name, (void)len;
  jb_queueent *n = &e->e;
  bool rated = (n->q.flags & JB_QUEUE_F_RATED) != 0;
  bool own = rated && !(n->q.flags & JB_QUEUE_F_RATE_EACH);
  /* Unchanged, the name keeps its bucket (the tokens it spent). */
  bool same = rated ? n->q.rate == want->count &&
                          n->r.period_ms == want->period_ms
                    : want->count == 0;
  *changes = !own && !same;
  if (*changes) rate_from_prefix(n, want->count, want->period_ms, now_us);
  return 0;
}

/* The list of `kind` without prefix[0..len), then with it (`set`: its
 * value, count 0 for none), written back (deleted when empty). */
static int each_put(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                    const char *prefix, size_t len, const each_ent *set) {
  const each_def *d = &each_defs[kind];
  MDB_val old;
  int rc = each_get(s, txn, kind, &old);
  if (rc) return rc;
  jb_buf list = {0};
  each_ent e;
  size_t off = 0, n = 0;
  while (rc == 0 && each_next(kind, old.mv_data, old.mv_size, &off, &e)) {
    if (e.len == len && memcmp(e.prefix, prefix, len) == 0) continue;
    n++;
    rc = each_append(&list, kind, &e);
  }
  if (rc == 0 && set->count && n >= d->max)
    rc = jb__err(JB_EINVAL, "a board %s of at most %u prefixes: remove one "
                 "first", d->what, d->max);
  if (rc == 0 && set->count) rc = each_append(&list, kind, set);
  MDB_val k = {strlen(d->key), (void *)d->key};
  MDB_val nv = {list.len, list.data};
  if (rc == 0)
    rc = list.len ? mdb_put(txn, s->meta, &k, &nv, 0)
                  : mdb_del(txn, s->meta, &k, NULL);
  jb__buf_free(&list);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Set the control of `kind` of each name under prefix[0..len): the list,
 * then every name recorded under the prefix given what the list says now
 * (`apply`), and the count of names with a control. */
static int each_set(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                    const char *prefix, size_t len, const each_ent *set,
                    each_apply_fn apply, int64_t now_us) {
  int rc = each_put(s, txn, kind, prefix, len, set);
  under_ctx u = {.prefix = prefix, .len = len};
  uint32_t ctl = 0;
  if (rc == 0) rc = jb__queue_walk(s, txn, collect_under, &u);
  if (rc == 0) rc = read_queuectl(s, txn, &ctl);
  uint32_t count = ctl & ~JB_QUEUECTL_BOARD;
  for (size_t i = 0; rc == 0 && i < u.n; i++) {
    const char *name = u.names[i];
    size_t nl = u.lens[i];
    entry_ref e;
    bool found, changes = false;
    MDB_val cur;
    /* Each write moves pages: the list is read again. */
    if ((rc = each_get(s, txn, kind, &cur)) ||
        (rc = entry_of_name(s, txn, name, nl, &e, &found)) || !found)
      continue;
    each_ent want = each_match(kind, &cur, name, nl);
    bool had = e.e.q.flags != 0;
    rc = apply(s, txn, &e, name, nl, &want, now_us, &changes);
    if (rc || !changes) {
      free(e.val);
      continue;
    }
    e.e.q.changed_us = now_us;
    /* A raised or removed control may let claims go: the name's waiters
     * look. */
    s->wake_lanes |= JB_WAKE_LANE(jb__lane(name, nl));
    bool has = e.e.q.flags != 0;
    if ((rc = entry_put(s, txn, &e))) break;
    if (had && !has) count--;
    if (!had && has) count++;
  }
  for (size_t i = 0; i < u.n; i++) free(u.names[i]);
  free(u.names);
  free(u.lens);
  if (rc == 0 && count != (ctl & ~JB_QUEUECTL_BOARD))
    rc = write_queuectl(s, txn, (ctl & JB_QUEUECTL_BOARD) | count);
  return rc;
}

int jb__queue_cap_each(jb_store *s, MDB_txn *txn, const char *prefix,
                       size_t len, uint32_t cap, int64_t now_us) {
  each_ent set = {.count = cap, .len = (uint16_t)len,
                  .prefix = (const uint8_t *)prefix};
  return each_set(s, txn, JB_EACH_CAP, prefix, len, &set, capeach_apply,
                  now_us);
}

int jb__queue_rate_each(jb_store *s, MDB_txn *txn, const char *prefix,
                        size_t len, uint32_t rate, uint64_t period_ms,
                        int64_t now_us) {
  each_ent set = {.count = rate, .period_ms = rate ? period_ms : 0,
                  .len = (uint16_t)len, .prefix = (const uint8_t *)prefix};
  return each_set(s, txn, JB_EACH_RATE, prefix, len, &set, rateeach_apply,
                  now_us);
}

int jb__queue_each_prefixes(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                            jb_each_visit visit, void *arg) {
  MDB_val v;
  int rc = each_get(s, txn, kind, &v);
  each_ent e;
  size_t off = 0;
  while (rc == 0 && each_next(kind, v.mv_data, v.mv_size, &off, &e))
    rc = visit(arg, (const char *)e.prefix, e.len, e.count, e.period_ms);
  return rc;
}

/* Is a rate limit of `rate` claims per period_ms one jb_set_rate takes? */
static bool rate_valid(uint32_t rate, uint64_t period_ms) {
  return rate > 0 && period_ms > 0 && period_ms <= JB_RATE_PERIOD_MAX_MS &&
         period_ms * 1000 >= rate;
}

bool jb__queue_each_valid(jb_each_kind kind, const void *val, size_t len) {
  each_ent e;
  size_t off = 0;
  while (each_next(kind, val, len, &off, &e))
    if (e.count == 0 ||
        (kind == JB_EACH_RATE && !rate_valid(e.count, e.period_ms)))
      return false;
  return off == len;
}

int jb__queue_queuectl(jb_store *s, MDB_txn *txn, uint32_t *out) {
  return read_queuectl(s, txn, out);
}

int jb__queue_restore(jb_store *s, MDB_txn *txn, const char *name, size_t len,
                      const jb_queueent *src) {
  uint32_t ctl;
  int rc = read_queuectl(s, txn, &ctl);
  if (rc) return rc;
  if (name == NULL) /* the board's pause */
    return (src->q.flags & JB_QUEUE_F_PAUSED)
               ? write_queuectl(s, txn, ctl | JB_QUEUECTL_BOARD)
               : 0;
  uint32_t lane = jb__lane(name, len);
  entry_ref e;
  bool found;
  /* The note may give a new name its prefix's cap (and count it): the
   * count is read after it. */
  if ((rc = jb__queue_note(s, txn, lane, name, len)) ||
      (rc = read_queuectl(s, txn, &ctl)) ||
      (rc = entry_of_name(s, txn, name, len, &e, &found)))
    return rc;
  if (!found) return MDB_CORRUPTED; /* just noted: cannot be */
  jb_queueent *n = &e.e;
  bool had = n->q.flags != 0;
  n->q.flags = src->q.flags & JB_QUEUE_F_ALL;
  n->q.changed_us = src->q.changed_us;
  n->q.cap = n->q.held = 0;
  if ((n->q.flags & JB_QUEUE_F_CAPPED) && src->q.cap == 0)
    n->q.flags &= (uint8_t)~JB_QUEUE_F_CAPPED;
  if (n->q.flags & JB_QUEUE_F_CAPPED) {
    n->q.cap = src->q.cap;
    /* Counted afresh: the claims are this board's, not the source's. */
    if ((rc = jb__queue_count_held(s, txn, lane, name, len, &n->q.held))) {
      free(e.val);
      return rc;
    }
  }
  /* A rate limit goes with its bucket as it was (its next token). */
  if ((n->q.flags & JB_QUEUE_F_RATED) && src->q.rate) {
    n->q.rate = src->q.rate;
    n->r = src->r;
  } else {
    n->q.flags &= (uint8_t)~(JB_QUEUE_F_RATED | JB_QUEUE_F_RATE_EACH);
  }
  bool has = n->q.flags != 0;
  if ((rc = entry_put(s, txn, &e))) return rc;
  return count_ctl(s, txn, ctl, had, has);
}

/* The `queues` entry of job `uuid`'s name when the name has one of the
 * controls `flags` (*found false otherwise, and when no name has a
 * control: one read of meta then), with the job's header. */
static int ctl_entry_of_job(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                            uint8_t flags, jb_jobhdr *h, entry_ref *e,
                            bool *found) {
  *found = false;
  uint32_t ctl;
  int rc = read_queuectl(s, txn, &ctl);
  if (rc || (ctl & ~JB_QUEUECTL_BOARD) == 0) return rc;
  MDB_val posting;
  const char *name;
  size_t len;
  rc = jb__job_header(s, txn, uuid, h, &posting);
  if (rc == MDB_NOTFOUND) return 0; /* check reports a claim of no job */
  if (rc) return rc;
  if (!jb__history_posting_name(posting.mv_data, posting.mv_size, &name, &len))
    return 0;
  if ((rc = entry_of_name(s, txn, name, len, e, found)) || !*found) return rc;
  if (!(e->e.q.flags & flags)) {
    free(e->val);
    *found = false;
  }
  return 0;
}

int jb__queue_held(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   int delta) {
  jb_jobhdr h;
  entry_ref e;
  bool found;
  int rc = ctl_entry_of_job(s, txn, uuid, JB_QUEUE_F_CAPPED, &h, &e, &found);
  if (rc || !found) return rc;
  jb_queuerec *q = &e.e.q;
  if (delta > 0) {
    q->held++;
  } else if (q->held > 0) {
    q->held--;
    /* A slot freed: the name's waiters look again. */
    s->wake_lanes |= JB_WAKE_LANE(jb__hdr_lane(&h));
  }
  return entry_put(s, txn, &e);
}

int jb__queue_at_cap(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                     bool *at_cap, uint32_t *cap_out) {
  *at_cap = false;
  jb_jobhdr h;
  entry_ref e;
  bool found;
  int rc = ctl_entry_of_job(s, txn, uuid, JB_QUEUE_F_CAPPED, &h, &e, &found);
  if (rc || !found) return rc;
  free(e.val);
  *at_cap = e.e.q.held >= e.e.q.cap;
  *cap_out = e.e.q.cap;
  return 0;
}

int jb__queue_no_token(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                       int64_t now_us, bool *none, jb_queueent *out) {
  *none = false;
  jb_jobhdr h;
  entry_ref e;
  bool found;
  int rc = ctl_entry_of_job(s, txn, uuid, JB_QUEUE_F_RATED, &h, &e, &found);
  if (rc || !found) return rc;
  free(e.val);
  *none = jb__rate_next_us(&e.e, now_us) > now_us;
  *out = e.e;
  return 0;
}

int jb__queue_spend(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    int64_t now_us) {
  jb_jobhdr h;
  entry_ref e;
  bool found;
  int rc = ctl_entry_of_job(s, txn, uuid, JB_QUEUE_F_RATED, &h, &e, &found);
  if (rc || !found) return rc;
  jb__rate_spend(&e.e, now_us);
  return entry_put(s, txn, &e);
}

int jb__queue_next_token(jb_store *s, MDB_txn *txn, const jb_queue_ctls *c,
                         const char *const *names, size_t n,
                         int64_t *next_us) {
  *next_us = 0;
  if (c->queuectl & JB_QUEUECTL_BOARD) return 0;
  MDB_cursor *cur = NULL;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < c->n; i++) {
    const jb_queue_ctl *q = &c->v[i];
    /* Only a name whose token alone holds it back: paused or at its cap,
     * a resume or an ended claim wakes the waiter. */
    if (!(q->flags & JB_QUEUE_F_RATED) || q->next_us <= c->now_us ||
        (q->flags & JB_QUEUE_F_PAUSED) ||
        ((q->flags & JB_QUEUE_F_CAPPED) && q->held >= q->cap))
      continue;
    if (n && !jb__name_chosen(names, n, q->name, q->name_len)) continue;
    if (*next_us && q->next_us >= *next_us) continue;
    /* A job of its lane ready (another name may share the lane: then an
     * early wake-up, which costs a look). */
    if (!cur && (rc = mdb_cursor_open(txn, s->byname, &cur))) break;
    uint8_t key[4];
    lane_key(key, q->lane);
    MDB_val k = {4, key}, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) {
      rc = 0;
      continue;
    }
    if (rc == 0 && k.mv_size >= 4 && memcmp(k.mv_data, key, 4) == 0)
      *next_us = q->next_us;
  }
  if (cur) mdb_cursor_close(cur);
  return rc;
}

int jb__queue_audit(jb_store *s, MDB_txn *txn, jb_queue_audit *out) {
  *out = (jb_queue_audit){0};
  int rc = read_queuectl(s, txn, &out->queuectl);
  MDB_cursor *cur;
  if (rc || (rc = mdb_cursor_open(txn, s->queues, &cur))) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    size_t off = 0, size;
    jb_queueent e;
    while (off < v.mv_size && entry_parse(v.mv_data, v.mv_size, off, &e, &size)) {
      bool rated = (e.q.flags & JB_QUEUE_F_RATED) != 0;
      if (rated != (e.q.format == 2) ||
          (rated && !rate_valid(e.q.rate, e.r.period_ms)) ||
          ((e.q.flags & JB_QUEUE_F_RATE_EACH) && !rated))
        out->bad_rates++;
      out->controlled += e.q.flags != 0;
      off += size;
    }
    if (k.mv_size != 4 || off != v.mv_size) out->bad_values++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* --------------------------------------------------------------- upgrade */

int jb__upgrade_lanes(jb_store *s, MDB_txn *txn) {
  /* Built afresh from `ready`: whatever the table held (a board written by
   * a release of schema 10, then rolled back to 9 by hand) is stale. */
  int rc = mdb_drop(txn, s->byname, 0);
  if (rc) return rc;
  MDB_cursor *cur;
  if ((rc = mdb_cursor_open(txn, s->jobs, &cur))) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 16 || v.mv_size < sizeof(jb_jobhdr)) continue; /* check */
    jb_jobhdr h;
    memcpy(&h, v.mv_data, sizeof h);
    const uint8_t *posting = (const uint8_t *)v.mv_data + sizeof h;
    size_t plen = v.mv_size - sizeof h;
    const char *name;
    size_t nlen;
    if (!jb__history_posting_name(posting, plen, &name, &nlen)) continue;
    uint32_t lane = jb__lane(name, nlen);
    uint8_t uuid[16];
    memcpy(uuid, k.mv_data, 16);
    if ((rc = jb__queue_note(s, txn, lane, name, nlen))) break;
    jb__hdr_set_lane(&h, lane);
    /* The header is rewritten in place, from a copy (the put may reuse
     * the page the value is in). */
    jb_buf copy = {0};
    if ((rc = jb__buf_append(&copy, &h, sizeof h)) == 0 &&
        (rc = jb__buf_append(&copy, posting, plen)) == 0) {
      MDB_val nv = {copy.len, copy.data};
      rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
    }
    jb__buf_free(&copy);
    if (rc) break;
    MDB_val rk = {JB_JOBKEY_LEN, h.jobkey}, rv;
    rc = mdb_get(txn, s->ready, &rk, &rv);
    if (rc == MDB_NOTFOUND) { rc = 0; continue; }
    if (rc) break;
    uint8_t bk[JB_BYNAME_KEY_LEN];
    byname_key(bk, lane, h.jobkey);
    MDB_val bkv = {sizeof bk, bk}, bv = {16, uuid};
    if ((rc = mdb_put(txn, s->byname, &bkv, &bv, 0))) break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* ---------------------------------------------------- store transactions */

typedef struct {
  const char *name;
  size_t len;
  uint8_t set, clear;
  bool is_cap;  /* set the cap instead of flags */
  bool is_rate; /* set the rate limit instead of flags */
  bool is_each; /* the cap (or with is_rate the rate limit) of each name
                 * under the prefix name[0..len) */
  uint32_t cap; /* or the rate */
  uint64_t period_ms;
  int64_t now_us;
  bool changed;
} set_ctx;

static int set_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  set_ctx *c = vctx;
  if (c->is_each && c->is_rate)
    return jb__queue_rate_each(s, txn, c->name, c->len, c->cap, c->period_ms,
                               c->now_us);
  if (c->is_each)
    return jb__queue_cap_each(s, txn, c->name, c->len, c->cap, c->now_us);
  if (c->is_cap)
    return jb__queue_set_cap(s, txn, c->name, c->len, c->cap, c->now_us);
  if (c->is_rate)
    return jb__queue_set_rate(s, txn, c->name, c->len, c->cap, c->period_ms,
                              c->now_us);
  return jb__queue_set_flags(s, txn, c->name, c->len, c->set, c->clear,
                             c->now_us, &c->changed);
}

int jb__store_queue_cap(jb_store *s, const char *name, size_t len,
                        uint32_t cap, int64_t now_us) {
  set_ctx c = {.name = name, .len = len, .is_cap = true, .cap = cap,
               .now_us = now_us};
  return jb__store_write(s, set_body, &c);
}

int jb__store_queue_rate(jb_store *s, const char *name, size_t len,
                         uint32_t rate, uint64_t period_ms, int64_t now_us) {
  set_ctx c = {.name = name, .len = len, .is_rate = true, .cap = rate,
               .period_ms = period_ms, .now_us = now_us};
  return jb__store_write(s, set_body, &c);
}

int jb__store_queue_cap_each(jb_store *s, const char *prefix, size_t len,
                             uint32_t cap, int64_t now_us) {
  set_ctx c = {.name = prefix, .len = len, .is_each = true, .cap = cap,
               .now_us = now_us};
  return jb__store_write(s, set_body, &c);
}

int jb__store_queue_rate_each(jb_store *s, const char *prefix, size_t len,
                              uint32_t rate, uint64_t period_ms,
                              int64_t now_us) {
  set_ctx c = {.name = prefix, .len = len, .is_each = true, .is_rate = true,
               .cap = rate, .period_ms = period_ms, .now_us = now_us};
  return jb__store_write(s, set_body, &c);
}

typedef struct {
  jb_each_kind kind;
  jb_each_visit visit;
  void *arg;
  int stopped;
} prefixes_ctx;

static int prefix_visit(void *arg, const char *prefix, size_t len,
                        uint32_t count, uint64_t period_ms) {
  prefixes_ctx *c = arg;
  int r = c->visit(c->arg, prefix, len, count, period_ms);
  if (r == 0) return 0;
  c->stopped = r; /* as list_visit: not read as an LMDB code */
  return MDB_NOTFOUND;
}

static int prefixes_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  prefixes_ctx *c = vctx;
  int rc = jb__queue_each_prefixes(s, txn, c->kind, prefix_visit, c);
  return rc == MDB_NOTFOUND && c->stopped ? 0 : rc;
}

int jb__store_each_prefixes(jb_store *s, jb_each_kind kind,
                            jb_each_visit visit, void *arg) {
  prefixes_ctx c = {.kind = kind, .visit = visit, .arg = arg};
  int rc = jb__store_read(s, prefixes_body, &c);
  return rc == JB_OK && c.stopped ? c.stopped : rc;
}

int jb__store_queue_set(jb_store *s, const char *name, size_t len,
                        uint8_t set, uint8_t clear, int64_t now_us,
                        bool *changed) {
  set_ctx c = {.name = name, .len = len, .set = set, .clear = clear,
               .now_us = now_us};
  int rc = jb__store_write(s, set_body, &c);
  if (changed) *changed = rc == JB_OK && c.changed;
  return rc;
}

typedef struct {
  jb_store_queue_visit visit;
  void *arg;
  jb_store *s;
  MDB_txn *txn;
  uint32_t queuectl;
  int64_t now_us; /* the rate limits' next tokens are read at it */
  int stopped; /* what visit returned when it stopped the walk */
} list_ctx;

/* The ready jobs of one name: its lane's `byname` entries whose job has
 * that name (another name may share the lane). */
static int count_ready(jb_store *s, MDB_txn *txn, uint32_t lane,
                       const char *name, size_t len, bool shared,
                       size_t *out) {
  *out = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->byname, &cur);
  if (rc) return rc;
  uint8_t key[4];
  lane_key(key, lane);
  MDB_val k = {4, key}, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
       rc == 0 && k.mv_size == JB_BYNAME_KEY_LEN &&
       memcmp(k.mv_data, key, 4) == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (shared) {
      jb_jobhdr h;
      MDB_val posting;
      const char *n;
      size_t nl;
      if (v.mv_size != 16 ||
          jb__job_header(s, txn, v.mv_data, &h, &posting) != 0 ||
          !jb__history_posting_name(posting.mv_data, posting.mv_size, &n,
                                    &nl) ||
          nl != len || memcmp(n, name, len) != 0)
        continue;
    }
    (*out)++;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND || rc == 0 ? 0 : rc;
}

static int list_visit(void *arg, uint32_t lane, const char *name, size_t len,
                      const jb_queueent *e) {
  const jb_queuerec *q = &e->q;
  list_ctx *c = arg;
  /* Whether another name shares the lane: rare; then each job's name is
   * read. */
  uint8_t lk[4];
  lane_key(lk, lane);
  MDB_val k = {4, lk}, v;
  bool shared = mdb_get(c->txn, c->s->queues, &k, &v) == 0 &&
                v.mv_size != sizeof *q +
                                 (q->format == 2 ? sizeof e->r : 0) + len;
  size_t ready = 0;
  int rc = count_ready(c->s, c->txn, lane, name, len, shared, &ready);
  if (rc) return rc;
  jb_store_queue sq = {.paused = (q->flags & JB_QUEUE_F_PAUSED) != 0,
                       .changed_us = q->changed_us,
                       .cap = (q->flags & JB_QUEUE_F_CAPPED) ? q->cap : 0,
                       .held = (q->flags & JB_QUEUE_F_CAPPED) ? q->held : 0,
                       .cap_each = (q->flags & JB_QUEUE_F_CAP_EACH) != 0,
                       .rate_each = (q->flags & JB_QUEUE_F_RATE_EACH) != 0,
                       .ready = ready};
  if (q->flags & JB_QUEUE_F_RATED) {
    sq.rate = q->rate;
    sq.period_ms = e->r.period_ms;
    sq.next_token_us = jb__rate_next_us(e, c->now_us);
  }
  int r = c->visit(c->arg, name, len, &sq);
  if (r == 0) return 0;
  /* The transaction's return would read it as an LMDB or errno code. */
  c->stopped = r;
  return MDB_NOTFOUND;
}

static int list_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  list_ctx *c = vctx;
  c->s = s;
  c->txn = txn;
  int rc = read_queuectl(s, txn, &c->queuectl);
  if (rc) return rc;
  rc = jb__queue_walk(s, txn, list_visit, c);
  return rc == MDB_NOTFOUND && c->stopped ? 0 : rc;
}

int jb__store_queue_list(jb_store *s, jb_store_queue_visit visit, void *arg,
                         bool *board_paused) {
  list_ctx c = {.visit = visit, .arg = arg, .now_us = jb__now_us()};
  int rc = jb__store_read(s, list_body, &c);
  if (board_paused)
    *board_paused = rc == JB_OK && (c.queuectl & JB_QUEUECTL_BOARD);
  return rc == JB_OK && c.stopped ? c.stopped : rc;
}

/* ------------------------------------------------------ jobs of names */

typedef struct {
  jb_store *s;
  MDB_txn *txn;
  const char *const *names;
  size_t n;
  unsigned flags;
  bool first;
  size_t count;
  uint32_t *lanes;
  size_t n_lanes, cap_lanes;
} names_count_ctx;

static int lanes_push(names_count_ctx *c, uint32_t lane) {
  if (c->n_lanes == c->cap_lanes) {
    size_t cap = c->cap_lanes ? 2 * c->cap_lanes : 16;
    uint32_t *v = realloc(c->lanes, cap * sizeof *v);
    if (v == NULL) return ENOMEM;
    c->lanes = v;
    c->cap_lanes = cap;
  }
  c->lanes[c->n_lanes++] = lane;
  return 0;
}

static int names_lane_visit(void *arg, uint32_t lane, const char *name,
                            size_t len, const jb_queueent *e) {
  (void)e;
  names_count_ctx *c = arg;
  return jb__name_chosen(c->names, c->n, name, len) ? lanes_push(c, lane) : 0;
}

static int lane_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Is job `uuid` of a name chosen? Then count it; MDB_NOTFOUND stops the
 * walk that found it when only the first is wanted. */
static int names_job(names_count_ctx *c, const uint8_t uuid[16]) {
  jb_jobhdr h;
  MDB_val posting;
  const char *name;
  size_t len;
  int rc = jb__job_header(c->s, c->txn, uuid, &h, &posting);
  if (rc == MDB_NOTFOUND) return MDB_CORRUPTED; /* indexed, yet absent */
  if (rc) return rc;
  if (!jb__history_posting_name(posting.mv_data, posting.mv_size, &name,
                                &len) ||
      !jb__name_chosen(c->names, c->n, name, len))
    return 0;
  c->count++;
  return c->first ? MDB_NOTFOUND : 0;
}

static int names_claim_visit(const uint8_t *jobkey, const jb_claimrec *rec,
                             const char *lapsed, void *arg) {
  (void)jobkey;
  names_count_ctx *c = arg;
  if ((c->flags & JB_ONLY_UNCLAIMED) && lapsed == NULL) return 0;
  return names_job(c, rec->uuid);
}

static int names_ready(names_count_ctx *c) {
  int rc = 0;
  bool prefix = false;
  for (size_t i = 0; rc == 0 && i < c->n; i++) {
    size_t len = strlen(c->names[i]);
    if (jb__name_is_prefix(c->names[i], len))
      prefix = true;
    else
      rc = lanes_push(c, jb__lane(c->names[i], len));
  }
  if (rc == 0 && prefix) rc = jb__queue_walk(c->s, c->txn, names_lane_visit, c);
  if (rc) return rc;
  /* Each lane once: a job is counted by its lane's entries only. */
  if (c->n_lanes > 1) qsort(c->lanes, c->n_lanes, sizeof *c->lanes, lane_cmp);
  MDB_cursor *cur;
  if ((rc = mdb_cursor_open(c->txn, c->s->byname, &cur))) return rc;
  for (size_t i = 0; rc == 0 && i < c->n_lanes; i++) {
    if (i && c->lanes[i] == c->lanes[i - 1]) continue;
    uint8_t key[4];
    lane_key(key, c->lanes[i]);
    MDB_val k = {4, key}, v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
         rc == 0 && k.mv_size == JB_BYNAME_KEY_LEN &&
         memcmp(k.mv_data, key, 4) == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      if (v.mv_size != 16) { rc = MDB_CORRUPTED; break; }
      /* Another name sharing the lane is passed over here. */
      if ((rc = names_job(c, v.mv_data))) break;
    }
    if (rc == MDB_NOTFOUND && !(c->first && c->count)) rc = 0;
  }
  mdb_cursor_close(cur);
  return rc;
}

/* The delayed jobs already due (not yet moved to `ready` by a claim-next):
 * the front of `due`. */
static int names_due(names_count_ctx *c) {
  int64_t now_us = jb__now_us();
  MDB_cursor *cur;
  MDB_val k, v;
  int rc = mdb_cursor_open(c->txn, c->s->due, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != JB_DUEKEY_LEN) { rc = MDB_CORRUPTED; break; }
    if ((int64_t)jb__be64(k.mv_data) > now_us) break;
    MDB_val dk = {JB_JOBKEY_LEN, (uint8_t *)k.mv_data + 8}, dv;
    jb_delayrec r;
    if ((rc = mdb_get(c->txn, c->s->delayed, &dk, &dv)) ||
        dv.mv_size < sizeof r) {
      rc = rc == MDB_NOTFOUND || rc == 0 ? MDB_CORRUPTED : rc;
      break;
    }
    memcpy(&r, dv.mv_data, sizeof r);
    if ((rc = names_job(c, r.uuid))) break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND && !(c->first && c->count) ? 0 : rc;
}

static int names_count_body(jb_store *s, MDB_txn *txn, void *vctx,
                            int *status) {
  (void)status;
  names_count_ctx *c = vctx;
  c->s = s;
  c->txn = txn;
  c->count = 0;
  c->n_lanes = 0;
  int rc = names_ready(c);
  if (rc == 0) rc = names_due(c);
  if (rc == 0) rc = jb__claims_walk(s, txn, names_claim_visit, c);
  /* MDB_NOTFOUND: the first job found ended a walk. */
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__store_count_names(jb_store *s, unsigned flags,
                          const char *const *names, size_t n, bool first,
                          size_t *count) {
  names_count_ctx c = {.names = names, .n = n, .flags = flags,
                       .first = first};
  int rc = jb__store_read(s, names_count_body, &c);
  free(c.lanes);
  *count = rc == JB_OK ? c.count : 0;
  return rc;
}
