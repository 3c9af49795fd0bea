/*
 * entity.c - the public entities API: workers and conductors announce
 * themselves on the board, bound to their process. Arguments are checked
 * here, the process identity and the time taken before the transaction;
 * liveness is looked up after the read, outside any transaction.
 */
#include "internal.h"
#include "codec/posting.h"
#include "store/store.h"

#include <string.h>

/* Check a name-like argument: 1..max bytes of UTF-8, the message naming
 * `field`. Its length goes to *len. */
static int text_check(const char *s, size_t max, const char *field,
                      size_t *len) {
  if (s == NULL || s[0] == '\0')
    return jb__err(JB_EINVAL, "%s: must not be empty", field);
  size_t n = strnlen(s, max + 1);
  if (n > max)
    return jb__err(JB_EINVAL, "%s: longer than %zu bytes", field, max);
  if (!jb__utf8_valid(s, n))
    return jb__err(JB_EINVAL, "%s: not valid UTF-8", field);
  *len = n;
  return JB_OK;
}

int jb_entity_register(jb_board *b, const char *name, const char *kind,
                       const void *meta, size_t meta_len) {
  static const uint8_t empty_map = 0x80;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  size_t name_len, kind_len;
  int rc = text_check(name, JB_WHO_MAX, "entity name", &name_len);
  if (rc == JB_OK) rc = text_check(kind, JB_NAME_MAX, "entity kind", &kind_len);
  if (rc == JB_OK && meta_len > UINT32_MAX) /* the record's length field */
    rc = jb__err(JB_EINVAL, "entity meta: %zu bytes is more than a record "
                 "holds (%u)", meta_len, UINT32_MAX);
  if (rc == JB_OK) rc = jb__details_check(meta, meta_len, JB_MP_MAX_DEPTH,
                                          "entity meta");
  if (rc != JB_OK) return rc;
  if (meta == NULL || meta_len == 0) {
    meta = &empty_map;
    meta_len = 1;
  }
  jb_proc_id self;
  if ((rc = jb__proc_self(&self)) != JB_OK) return rc;
  return jb__store_entity_register(b->store, name, name_len, kind, kind_len,
                                   meta, meta_len, &self, jb__now_us());
}

int jb_entity_unregister(jb_board *b, const char *name) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  size_t name_len;
  int rc = text_check(name, JB_WHO_MAX, "entity name", &name_len);
  if (rc != JB_OK) return rc;
  return jb__store_entity_unregister(b->store, name, name_len);
}

int jb_entity_list(jb_board *b, jb_entity_cb cb, void *payload) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (cb == NULL) return jb__err(JB_EINVAL, "entity list: callback is NULL");
  jb_buf bytes = {0};
  size_t n = 0;
  int rc = jb__store_entity_read(b->store, &bytes, &n);
  uint32_t epoch = jb__store_epoch(b->store);
  /* The read is over: /proc is looked at and the callback runs with no
   * transaction open, so neither holds up the board. Entries are in the
   * table's key order, which is name order (bytewise). */
  for (size_t i = 0, off = 0; rc == JB_OK && i < n; i++) {
    jb_store_entity e;
    memcpy(&e, bytes.data + off, sizeof e);
    const char *name = (const char *)bytes.data + off + sizeof e;
    const char *kind = name + e.name_len + 1;
    off += e.size;
    jb_proc_id p = {e.rec.pid, e.rec.start};
    if (e.rec.epoch != epoch || !jb__proc_alive(&p)) continue;
    jb_entity out = {.name = name,
                     .kind = kind,
                     .meta = kind + e.rec.kind_len + 1,
                     .meta_len = e.rec.meta_len,
                     .pid = (int)e.rec.pid,
                     .registered_us = e.rec.registered_us};
    if (cb(&out, payload) != 0) break;
  }
  jb__buf_free(&bytes);
  return rc;
}
