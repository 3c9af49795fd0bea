/*
 * entities.c - the `entities` table: workers and conductors registered by
 * name, each bound to its process like a process-bound claim.
 *
 * An entity is live while its process (pid + start time) runs and its
 * record belongs to the board's current boot epoch. Nothing has to
 * unregister a dead one: readers skip it (core/entity.c looks at /proc
 * after the read transaction), and registrations remove dead records a
 * few at a time (sweep_dead), so the table does not keep every name a
 * crashed process ever used.
 *
 * The layout jb__store_entity_read copies out, entry after entry, each
 * starting at a multiple of 8 bytes from the buffer's start:
 *
 *   jb_store_entity   the record as stored, name length, entry size
 *   name, NUL         name_len bytes
 *   kind, NUL         rec.kind_len bytes
 *   meta              rec.meta_len bytes (a msgpack map)
 *   padding           up to `size`
 *
 * so the caller hands out NUL-terminated strings pointing into the buffer
 * without another copy.
 */
#include "txn.h"

#include <string.h>

/* Records a registration looks at for dead entities, and so the most it
 * removes: each look may read /proc under the writer lock, so the work a
 * registration adds is bounded, as claim-next's reaping is (ops.c). */
#define ENTITY_SWEEP 16

/* Decode a record (key length `name_len`, value v[0..len)): true and
 * *rec filled when it is well formed. */
static bool entity_decode(jb_entityrec *rec, size_t name_len, const void *v,
                          size_t len) {
  if (name_len == 0 || name_len > JB_WHO_MAX || len < sizeof *rec)
    return false;
  memcpy(rec, v, sizeof *rec);
  return rec->format == 1 && rec->kind_len > 0 &&
         rec->kind_len <= JB_NAME_MAX && rec->meta_len > 0 &&
         len == sizeof *rec + rec->kind_len + (size_t)rec->meta_len;
}

static bool entity_dead(const jb_store *s, const jb_entityrec *rec) {
  if (rec->epoch != s->epoch) return true; /* an earlier boot: no look */
  jb_proc_id p = {rec->pid, rec->start};
  return jb__proc_alive(&p) == 0;
}

/*
 * Look at up to ENTITY_SWEEP records after `self` (the name just
 * registered), going round to the first name at the end, and delete the
 * dead ones. Starting after one's own name rather than at the first name
 * spreads the looks of many registrants over the whole table. Records
 * that do not decode are left alone: `jobboard check` reports them.
 */
static int sweep_dead(jb_store *s, MDB_txn *txn, const MDB_val *self) {
  uint8_t dead[ENTITY_SWEEP][JB_WHO_MAX];
  size_t dead_len[ENTITY_SWEEP];
  int ndead = 0;
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->entities, &cur);
  if (rc) return rc;
  MDB_val k = *self, v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET);
  bool wrapped = false;
  for (int looked = 0; rc == 0 && looked < ENTITY_SWEEP;) {
    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    if (rc == MDB_NOTFOUND && !wrapped) {
      wrapped = true;
      rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    }
    if (rc) break;
    if (k.mv_size == self->mv_size &&
        memcmp(k.mv_data, self->mv_data, k.mv_size) == 0)
      break; /* round the whole table */
    looked++;
    jb_entityrec rec;
    if (!entity_decode(&rec, k.mv_size, v.mv_data, v.mv_size) ||
        !entity_dead(s, &rec))
      continue;
    memcpy(dead[ndead], k.mv_data, k.mv_size);
    dead_len[ndead++] = k.mv_size;
  }
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return rc;
  /* Deleted after the walk, by key: no cursor position to reason about. */
  for (int i = 0; i < ndead; i++) {
    MDB_val dk = {dead_len[i], dead[i]};
    if ((rc = mdb_del(txn, s->entities, &dk, NULL))) return rc;
  }
  return 0;
}

typedef struct {
  const char *name;
  size_t name_len;
  const char *kind;
  size_t kind_len;
  const void *meta;
  size_t meta_len;
  const jb_proc_id *proc;
  int64_t now_us;
  jb_buf *bytes; /* read */
  size_t n;      /* read */
} entity_ctx;

static int register_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  entity_ctx *ctx = vctx;
  (void)status;
  MDB_val k = {ctx->name_len, (void *)ctx->name};
  MDB_val v = {sizeof(jb_entityrec) + ctx->kind_len + ctx->meta_len, NULL};
  int rc = mdb_put(txn, s->entities, &k, &v, MDB_RESERVE);
  if (rc) return rc;
  jb_entityrec rec = {.format = 1,
                      .kind_len = (uint16_t)ctx->kind_len,
                      .epoch = s->epoch,
                      .pid = ctx->proc->pid,
                      .meta_len = (uint32_t)ctx->meta_len,
                      .start = ctx->proc->start,
                      .registered_us = ctx->now_us};
  uint8_t *d = v.mv_data;
  memcpy(d, &rec, sizeof rec);
  memcpy(d + sizeof rec, ctx->kind, ctx->kind_len);
  memcpy(d + sizeof rec + ctx->kind_len, ctx->meta, ctx->meta_len);
  return sweep_dead(s, txn, &k);
}

int jb__store_entity_register(jb_store *s, const char *name, size_t name_len,
                              const char *kind, size_t kind_len,
                              const void *meta, size_t meta_len,
                              const jb_proc_id *proc, int64_t now_us) {
  entity_ctx ctx = {.name = name, .name_len = name_len, .kind = kind,
                    .kind_len = kind_len, .meta = meta, .meta_len = meta_len,
                    .proc = proc, .now_us = now_us};
  return jb__store_write(s, register_body, &ctx);
}

static int unregister_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  entity_ctx *ctx = vctx;
  (void)status;
  MDB_val k = {ctx->name_len, (void *)ctx->name};
  int rc = mdb_del(txn, s->entities, &k, NULL);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "entity %.*s is not registered",
                   (int)ctx->name_len, ctx->name);
  return rc;
}

int jb__store_entity_unregister(jb_store *s, const char *name,
                                size_t name_len) {
  entity_ctx ctx = {.name = name, .name_len = name_len};
  return jb__store_write(s, unregister_body, &ctx);
}

int jb__entity_walk(jb_store *s, MDB_txn *txn, jb_entity_visit visit,
                    void *arg) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->entities, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_entityrec rec;
    bool ok = entity_decode(&rec, k.mv_size, v.mv_data, v.mv_size);
    if ((rc = visit(&k, &v, ok ? &rec : NULL, arg))) break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Append one entry of the layout above (a walk's visit: records that do
 * not decode are left out). */
static int copy_entity(const MDB_val *k, const MDB_val *v,
                       const jb_entityrec *rec, void *arg) {
  entity_ctx *ctx = arg;
  jb_buf *b = ctx->bytes;
  if (rec == NULL) return 0;
  size_t body = sizeof(jb_store_entity) + k->mv_size + 1 + rec->kind_len + 1 +
                rec->meta_len;
  size_t size = (body + 7) & ~(size_t)7;
  int rc = jb__buf_reserve(b, size);
  if (rc != JB_OK) return rc;
  jb_store_entity e = {.rec = *rec, .name_len = (uint32_t)k->mv_size,
                       .size = size};
  uint8_t *d = b->data + b->len;
  const uint8_t *kind = (const uint8_t *)v->mv_data + sizeof *rec;
  memset(d, 0, size);
  memcpy(d, &e, sizeof e);
  d += sizeof e;
  memcpy(d, k->mv_data, k->mv_size);
  d += k->mv_size + 1;
  memcpy(d, kind, rec->kind_len);
  d += rec->kind_len + 1;
  memcpy(d, kind + rec->kind_len, rec->meta_len);
  b->len += size;
  ctx->n++;
  return JB_OK;
}

static int read_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  entity_ctx *ctx = vctx;
  (void)status;
  /* The body may run again (a map resized meanwhile): start afresh. */
  ctx->bytes->len = 0;
  ctx->n = 0;
  return jb__entity_walk(s, txn, copy_entity, ctx);
}

int jb__store_entity_read(jb_store *s, jb_buf *bytes, size_t *n_out) {
  entity_ctx ctx = {.bytes = bytes};
  int rc = jb__store_read(s, read_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  return rc;
}
