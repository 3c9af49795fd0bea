/*
 * posting.c - encode and decode taskflow postings (see posting.h).
 */
#include "codec/posting.h"
#include "base/error.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* msgpack's writer: called for every token, so the common case (room
 * left) is done here without a call. */
static int buf_write(void *data, const char *p, size_t n) {
  jb_buf *b = data;
  if (b->cap - b->len >= n && n) {
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
  }
  return jb__buf_append(b, p, n) == JB_OK ? 0 : -1;
}

static int pack_cstr(msgpack_packer *pk, const char *s, size_t n) {
  if (msgpack_pack_str(pk, n) != 0) return -1;
  return msgpack_pack_str_body(pk, s, n);
}

#define PACK_KEY(pk, lit) pack_cstr((pk), (lit), sizeof(lit) - 1)

int jb__datetime_encode(jb_buf *out, int64_t us) {
  time_t secs = (time_t)(us / 1000000);
  int64_t micro = us % 1000000;
  if (micro < 0) { micro += 1000000; secs -= 1; }
  /* Posts come many per second: keep the last second's broken-down time
   * (gmtime_r takes a lock and was 4% of a post). */
  static _Thread_local time_t cached_secs = -1;
  static _Thread_local struct tm cached_tm;
  if (secs != cached_secs) {
    if (gmtime_r(&secs, &cached_tm) == NULL) {
      cached_secs = -1;
      return jb__err(JB_EINVAL, "time %lld is out of range", (long long)us);
    }
    cached_secs = secs;
  }
  struct tm tm = cached_tm;
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, buf_write);
  /* Key order is oslo's DateTimeHandler order; naive UTC, no "tz". */
  int bad = msgpack_pack_map(&pk, 7) ||
            PACK_KEY(&pk, "day") || msgpack_pack_int(&pk, tm.tm_mday) ||
            PACK_KEY(&pk, "month") || msgpack_pack_int(&pk, tm.tm_mon + 1) ||
            PACK_KEY(&pk, "year") || msgpack_pack_int(&pk, tm.tm_year + 1900) ||
            PACK_KEY(&pk, "hour") || msgpack_pack_int(&pk, tm.tm_hour) ||
            PACK_KEY(&pk, "minute") || msgpack_pack_int(&pk, tm.tm_min) ||
            PACK_KEY(&pk, "second") || msgpack_pack_int(&pk, tm.tm_sec) ||
            PACK_KEY(&pk, "microsecond") ||
            msgpack_pack_int64(&pk, micro);
  return bad ? jb__err(JB_ENOMEM, "out of memory encoding a time") : JB_OK;
}

int jb__posting_prefix(jb_buf *out, const jb_posting_fields *f) {
  uint8_t dt_store[64];
  jb_buf dt = {0};
  int rc = jb__datetime_encode(&dt, f->created_us);
  if (rc != JB_OK) return rc;
  /* The datetime payload is at most 55 bytes; copy it off the heap so the
   * packer below owns the only allocation. */
  memcpy(dt_store, dt.data, dt.len);
  size_t dt_len = dt.len;
  jb__buf_free(&dt);

  const char *prio = jb_priority_name(f->priority);
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, buf_write);
  int bad = msgpack_pack_map(&pk, f->book_name ? 7 : 6) ||
            PACK_KEY(&pk, "uuid") || pack_cstr(&pk, f->uuid, 36) ||
            PACK_KEY(&pk, "name") || pack_cstr(&pk, f->name, f->name_len) ||
            PACK_KEY(&pk, "priority") || pack_cstr(&pk, prio, strlen(prio)) ||
            PACK_KEY(&pk, "created_on") ||
            msgpack_pack_ext(&pk, dt_len, JB_EXT_DATETIME) ||
            msgpack_pack_ext_body(&pk, dt_store, dt_len) ||
            PACK_KEY(&pk, "details");
  if (!bad) {
    if (f->details && f->details_len)
      bad = jb__buf_append(out, f->details, f->details_len) != JB_OK;
    else
      bad = msgpack_pack_map(&pk, 0);
  }
  if (!bad && f->book_name)
    bad = PACK_KEY(&pk, "book") || msgpack_pack_map(&pk, 2) ||
          PACK_KEY(&pk, "name") ||
          pack_cstr(&pk, f->book_name, strlen(f->book_name)) ||
          PACK_KEY(&pk, "uuid") || pack_cstr(&pk, f->book_uuid, 36);
  if (!bad) bad = PACK_KEY(&pk, "sequence");
  return bad ? jb__err(JB_ENOMEM, "out of memory encoding a posting") : JB_OK;
}

size_t jb__posting_seq(uint8_t out[JB_SEQ_MAXLEN], uint64_t seq) {
  jb_buf b = {out, 0, JB_SEQ_MAXLEN};
  msgpack_packer pk;
  msgpack_packer_init(&pk, &b, buf_write);
  /* Fits by construction (at most 9 bytes), so no reallocation happens. */
  msgpack_pack_uint64(&pk, seq);
  return b.len;
}

static const char *type_name(msgpack_object_type t) {
  switch (t) {
  case MSGPACK_OBJECT_NIL: return "nil";
  case MSGPACK_OBJECT_BOOLEAN: return "a boolean";
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
  case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "an integer";
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64: return "a float";
  case MSGPACK_OBJECT_STR: return "a string";
  case MSGPACK_OBJECT_ARRAY: return "an array";
  case MSGPACK_OBJECT_MAP: return "a map";
  case MSGPACK_OBJECT_BIN: return "binary data";
  case MSGPACK_OBJECT_EXT: return "an extension value";
  }
  return "an unknown value";
}

int jb__details_check(const void *d, size_t len, int max_depth,
                      const char *field) {
  if (d == NULL || len == 0) {
    if (d == NULL && len != 0)
      return jb__err(JB_EINVAL, "%s: NULL with length %zu", field, len);
    return JB_OK;
  }
  const uint8_t *p = d;
  if (len == 1 && p[0] == 0x80) return JB_OK; /* the empty map, often */
  size_t end;
  jb_mp_verdict v = jb__mp_scan(d, len, &end, max_depth);
  if (v == JB_MP_TOO_DEEP)
    return jb__err(JB_EINVAL, "%s: nested deeper than %d levels", field,
                   max_depth);
  if (v == JB_MP_TRUNCATED)
    return jb__err(JB_EINVAL, "%s: truncated msgpack (%zu bytes)", field, len);
  if (v != JB_MP_OK) return jb__err(JB_EINVAL, "%s: not valid msgpack", field);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  msgpack_unpack_return r = msgpack_unpack_next(&u, d, len, &off);
  int rc = JB_OK;
  if (r == MSGPACK_UNPACK_CONTINUE)
    rc = jb__err(JB_EINVAL, "%s: truncated msgpack (%zu bytes)", field, len);
  else if (r == MSGPACK_UNPACK_NOMEM_ERROR)
    rc = jb__err(JB_ENOMEM, "%s: out of memory decoding msgpack", field);
  else if (r != MSGPACK_UNPACK_SUCCESS)
    rc = jb__err(JB_EINVAL, "%s: not valid msgpack", field);
  else if (u.data.type != MSGPACK_OBJECT_MAP)
    rc = jb__err(JB_EINVAL, "%s: must be a map, not %s", field,
                 type_name(u.data.type));
  else if (off != len)
    rc = jb__err(JB_EINVAL, "%s: %zu trailing bytes after the map", field,
                 len - off);
  msgpack_unpacked_destroy(&u);
  return rc;
}

/* ----------------------------------------------------------------- decode */

static bool key_is(const msgpack_object *k, const char *lit) {
  size_t n = strlen(lit);
  if (k->type == MSGPACK_OBJECT_STR)
    return k->via.str.size == n && memcmp(k->via.str.ptr, lit, n) == 0;
  if (k->type == MSGPACK_OBJECT_BIN) /* old Python 2 producers */
    return k->via.bin.size == n && memcmp(k->via.bin.ptr, lit, n) == 0;
  return false;
}

static bool as_int(const msgpack_object *o, int64_t *v) {
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    if (o->via.u64 > INT64_MAX) return false;
    *v = (int64_t)o->via.u64;
    return true;
  }
  if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    *v = o->via.i64;
    return true;
  }
  return false;
}

int jb__datetime_decode(int64_t *us, const void *payload, size_t len) {
  static const char *const names[7] = {"day",    "month",  "year",
                                       "hour",   "minute", "second",
                                       "microsecond"};
  int64_t v[7];
  bool seen[7] = {false};
  size_t end;
  if (jb__mp_scan(payload, len, &end, JB_MP_MAX_DEPTH) != JB_MP_OK)
    return JB_ECORRUPT;
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  int ok = msgpack_unpack_next(&u, payload, len, &off) ==
               MSGPACK_UNPACK_SUCCESS &&
           u.data.type == MSGPACK_OBJECT_MAP;
  for (uint32_t i = 0; ok && i < u.data.via.map.size; i++) {
    const msgpack_object_kv *kv = &u.data.via.map.ptr[i];
    for (int f = 0; f < 7; f++) {
      if (key_is(&kv->key, names[f])) {
        ok = as_int(&kv->val, &v[f]);
        seen[f] = true;
      }
    }
  }
  msgpack_unpacked_destroy(&u);
  for (int f = 0; ok && f < 7; f++) ok = seen[f];
  if (!ok || v[1] < 1 || v[1] > 12 || v[0] < 1 || v[0] > 31 || v[3] < 0 ||
      v[3] > 23 || v[4] < 0 || v[4] > 59 || v[5] < 0 || v[5] > 60 ||
      v[6] < 0 || v[6] > 999999 || v[2] < 1 || v[2] > 9999)
    return JB_ECORRUPT;
  struct tm tm = {.tm_year = (int)v[2] - 1900, .tm_mon = (int)v[1] - 1,
                  .tm_mday = (int)v[0], .tm_hour = (int)v[3],
                  .tm_min = (int)v[4], .tm_sec = (int)v[5]};
  *us = (int64_t)timegm(&tm) * 1000000 + v[6];
  return JB_OK;
}

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
  return JB_ECORRUPT;
}

/* Append s[0..n) and a NUL to job->strs; return the offset. */
static size_t add_str(jb_job *job, const char *s, size_t n, int *rc) {
  size_t at = job->strs.len;
  if (*rc == JB_OK) *rc = jb__buf_append(&job->strs, s, n);
  if (*rc == JB_OK) *rc = jb__buf_append(&job->strs, "", 1);
  return at;
}

static int decode_map(jb_job *job, const msgpack_object *m, char *why,
                      size_t whylen) {
  const msgpack_object *uuid = NULL, *name = NULL, *prio = NULL,
                       *created = NULL, *details = NULL, *book = NULL,
                       *seq = NULL;
  for (uint32_t i = 0; i < m->via.map.size; i++) {
    const msgpack_object_kv *kv = &m->via.map.ptr[i];
    if (key_is(&kv->key, "uuid")) uuid = &kv->val;
    else if (key_is(&kv->key, "name")) name = &kv->val;
    else if (key_is(&kv->key, "priority")) prio = &kv->val;
    else if (key_is(&kv->key, "created_on")) created = &kv->val;
    else if (key_is(&kv->key, "details")) details = &kv->val;
    else if (key_is(&kv->key, "book")) book = &kv->val;
    else if (key_is(&kv->key, "sequence")) seq = &kv->val;
    /* other keys are tolerated, as taskflow tolerates them */
  }
  if (!uuid || uuid->type != MSGPACK_OBJECT_STR || uuid->via.str.size != 36)
    return fail(why, whylen, "posting has no 36-character 'uuid' string");
  if (!name || name->type != MSGPACK_OBJECT_STR)
    return fail(why, whylen, "posting has no 'name' string");
  job->priority = JB_PRIORITY_NORMAL; /* taskflow's default when missing */
  if (prio) {
    char text[16];
    if (prio->type != MSGPACK_OBJECT_STR || prio->via.str.size >= sizeof text)
      return fail(why, whylen, "posting 'priority' is not a priority name");
    memcpy(text, prio->via.str.ptr, prio->via.str.size);
    text[prio->via.str.size] = '\0';
    int p = -1;
    for (int k = 0; k <= JB_PRIORITY_VERY_HIGH; k++)
      if (strcasecmp(text, jb_priority_name((jb_priority)k)) == 0) p = k;
    if (p < 0)
      return fail(why, whylen, "posting 'priority' '%s' is not a priority name",
                  text);
    job->priority = (jb_priority)p;
  }
  if (!created || created->type != MSGPACK_OBJECT_EXT ||
      created->via.ext.type != JB_EXT_DATETIME ||
      jb__datetime_decode(&job->created_us, created->via.ext.ptr,
                          created->via.ext.size) != JB_OK)
    return fail(why, whylen, "posting 'created_on' is not a datetime (ext 1)");
  int64_t s;
  if (!seq || !as_int(seq, &s) || s <= 0)
    return fail(why, whylen, "posting 'sequence' is not a positive integer");
  job->sequence = (uint64_t)s;

  const msgpack_object *bname = NULL, *buuid = NULL;
  if (book && book->type != MSGPACK_OBJECT_NIL) {
    if (book->type != MSGPACK_OBJECT_MAP)
      return fail(why, whylen, "posting 'book' is not a map");
    for (uint32_t i = 0; i < book->via.map.size; i++) {
      const msgpack_object_kv *kv = &book->via.map.ptr[i];
      if (key_is(&kv->key, "name")) bname = &kv->val;
      else if (key_is(&kv->key, "uuid")) buuid = &kv->val;
    }
    if (!bname || bname->type != MSGPACK_OBJECT_STR || !buuid ||
        buuid->type != MSGPACK_OBJECT_STR)
      return fail(why, whylen, "posting 'book' lacks a 'name' or 'uuid' string");
  }

  int rc = JB_OK;
  job->details.len = 0;
  if (!details || details->type == MSGPACK_OBJECT_NIL) {
    rc = jb__buf_append(&job->details, "\x80", 1);
  } else if (details->type != MSGPACK_OBJECT_MAP) {
    return fail(why, whylen, "posting 'details' is %s, not a map",
                type_name(details->type));
  } else {
    msgpack_packer pk;
    msgpack_packer_init(&pk, &job->details, buf_write);
    if (msgpack_pack_object(&pk, *details) != 0) rc = JB_ENOMEM;
  }
  job->strs.len = 0;
  size_t at_name = add_str(job, name->via.str.ptr, name->via.str.size, &rc);
  size_t at_bname = 0, at_buuid = 0;
  if (bname) {
    at_bname = add_str(job, bname->via.str.ptr, bname->via.str.size, &rc);
    at_buuid = add_str(job, buuid->via.str.ptr, buuid->via.str.size, &rc);
  }
  if (rc != JB_OK) return jb__err(JB_ENOMEM, "out of memory decoding a job");
  job->name = (const char *)job->strs.data + at_name;
  job->book_name = bname ? (const char *)job->strs.data + at_bname : NULL;
  job->book_uuid = bname ? (const char *)job->strs.data + at_buuid : NULL;
  memcpy(job->uuid, uuid->via.str.ptr, 36);
  job->uuid[36] = '\0';
  return JB_OK;
}

int jb__posting_decode(jb_job *job, const void *bytes, size_t len, char *why,
                       size_t whylen) {
  size_t end;
  jb_mp_verdict v = jb__mp_scan(bytes, len, &end, JB_MP_MAX_DEPTH);
  if (v == JB_MP_TOO_DEEP)
    return fail(why, whylen, "posting nests containers deeper than %d "
                "levels (the most msgpack-c reads)", JB_MP_MAX_DEPTH);
  if (v != JB_MP_OK)
    return fail(why, whylen, "posting is not valid msgpack (%zu bytes)", len);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  msgpack_unpack_return r = msgpack_unpack_next(&u, bytes, len, &off);
  int rc;
  if (r == MSGPACK_UNPACK_NOMEM_ERROR)
    rc = jb__err(JB_ENOMEM, "out of memory decoding a posting");
  else if (r != MSGPACK_UNPACK_SUCCESS)
    rc = fail(why, whylen, "posting is not valid msgpack (%zu bytes)", len);
  else if (u.data.type != MSGPACK_OBJECT_MAP)
    rc = fail(why, whylen, "posting is %s, not a map", type_name(u.data.type));
  else if (off != len)
    rc = fail(why, whylen, "posting has %zu trailing bytes", len - off);
  else
    rc = decode_map(job, &u.data, why, whylen);
  msgpack_unpacked_destroy(&u);
  return rc;
}
