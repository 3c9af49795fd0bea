/*
 * json.c - JSON <-> msgpack for the CLI (see json.h for the mapping).
 */
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------- JSON -> msgpack */

static int pack_json(msgpack_packer *pk, const json_t *v, int depth,
                     char *err, size_t errlen) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
  case JSON_ARRAY:
    if (depth > CLI_DETAILS_MAX_DEPTH) {
      snprintf(err, errlen, "nested deeper than %d levels (the most a posting "
               "can hold and still be read back)", CLI_DETAILS_MAX_DEPTH);
      return -1;
    }
    if (json_is_object(v)) {
      const char *key;
      json_t *val;
      if (msgpack_pack_map(pk, json_object_size(v))) goto nomem;
      /* json_object_foreach walks in insertion order (jansson >= 2.8), so
       * the map keeps the order the user wrote. */
      json_object_foreach((json_t *)v, key, val) {
        size_t klen = strlen(key);
        if (msgpack_pack_str(pk, klen) || msgpack_pack_str_body(pk, key, klen))
          goto nomem;
        if (pack_json(pk, val, depth + 1, err, errlen)) return -1;
      }
    } else {
      size_t i;
      json_t *val;
      if (msgpack_pack_array(pk, json_array_size(v))) goto nomem;
      json_array_foreach(v, i, val) {
        if (pack_json(pk, val, depth + 1, err, errlen)) return -1;
      }
    }
    return 0;
  case JSON_STRING: {
    size_t n = json_string_length(v);
    if (msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, json_string_value(v), n))
      goto nomem;
    return 0;
  }
  case JSON_INTEGER: {
    json_int_t i = json_integer_value(v);
    /* Both pick the smallest encoding, as Python's msgpack does. */
    if ((i < 0 ? msgpack_pack_int64(pk, (int64_t)i)
               : msgpack_pack_uint64(pk, (uint64_t)i)))
      goto nomem;
    return 0;
  }
  case JSON_REAL:
    if (msgpack_pack_double(pk, json_real_value(v))) goto nomem;
    return 0;
  case JSON_TRUE:
    if (msgpack_pack_true(pk)) goto nomem;
    return 0;
  case JSON_FALSE:
    if (msgpack_pack_false(pk)) goto nomem;
    return 0;
  case JSON_NULL:
    if (msgpack_pack_nil(pk)) goto nomem;
    return 0;
  }
  snprintf(err, errlen, "a JSON value of unknown type");
  return -1;
nomem:
  snprintf(err, errlen, "out of memory encoding details");
  return -1;
}

int cli_json_to_msgpack(char **out, size_t *len, const json_t *obj, char *err,
                        size_t errlen) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  *out = NULL;
  *len = 0;
  if (pack_json(&pk, obj, 1, err, errlen) != 0) {
    msgpack_sbuffer_destroy(&sb);
    return -1;
  }
  *len = sb.size;
  *out = msgpack_sbuffer_release(&sb); /* malloc'ed: the caller free()s it */
  if (*out == NULL) { /* an empty buffer: cannot happen for a map */
    snprintf(err, errlen, "out of memory encoding details");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------- msgpack -> JSON */

char *cli_base64(const void *data, size_t len) {
  static const char tab[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *p = data;
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (out == NULL) return NULL;
  char *o = out;
  size_t i = 0;
  for (; i + 3 <= len; i += 3) {
    uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
    *o++ = tab[w >> 18];
    *o++ = tab[w >> 12 & 63];
    *o++ = tab[w >> 6 & 63];
    *o++ = tab[w & 63];
  }
  if (len - i == 1) {
    uint32_t w = (uint32_t)p[i] << 16;
    *o++ = tab[w >> 18];
    *o++ = tab[w >> 12 & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (len - i == 2) {
    uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
    *o++ = tab[w >> 18];
    *o++ = tab[w >> 12 & 63];
    *o++ = tab[w >> 6 & 63];
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

/* {"<tag>": "<base64 of data>"} */
static json_t *tagged_base64(const char *tag, const void *data, size_t len) {
  char *b64 = cli_base64(data, len);
  json_t *o = b64 ? json_pack("{s:s}", tag, b64) : NULL;
  free(b64);
  return o;
}

static json_t *to_json(const msgpack_object *o);

/* A str's bytes: msgpack-c leaves ptr NULL for an empty map key, and
 * jansson refuses json_stringn(NULL, 0), which printed "" as {"$bin": ""}. */
static const char *str_ptr(const msgpack_object *o) {
  return o->via.str.size ? o->via.str.ptr : "";
}

/* The text a map key stands for in JSON, malloc'ed. */
static char *key_text(const msgpack_object *k) {
  if (k->type == MSGPACK_OBJECT_STR) {
    json_t *s = json_stringn(str_ptr(k), k->via.str.size);
    if (s != NULL) { /* valid UTF-8: the key as it is */
      char *t = strdup(json_string_value(s));
      json_decref(s);
      /* A key with a NUL byte would be cut short by the C string API of
       * jansson's objects; fall through to the encoded form then. */
      if (t && strlen(t) == k->via.str.size) return t;
      free(t);
    }
  }
  json_t *v = to_json(k);
  if (v == NULL) return NULL;
  char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(v);
  if (t == NULL || strlen(t) <= CLI_KEY_TEXT_MAX) return t;
  /* A long key is a map or an array (or holds one). Its text, a string
   * inside the text of a key holding it, is escaped again at each level
   * (quotes and backslashes double): a 100-byte map of keys nested 31
   * deep printed as gigabytes. Its msgpack bytes do not grow so. */
  free(t);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  char *b64 = msgpack_pack_object(&pk, *k) == 0 ? cli_base64(sb.data, sb.size)
                                               : NULL;
  msgpack_sbuffer_destroy(&sb);
  if (b64 == NULL) return NULL;
  size_t n = strlen("$msgpack:") + strlen(b64) + 1;
  t = malloc(n);
  if (t != NULL) snprintf(t, n, "$msgpack:%s", b64);
  free(b64);
  return t;
}

static json_t *to_json(const msgpack_object *o) {
  switch (o->type) {
  case MSGPACK_OBJECT_NIL:
    return json_null();
  case MSGPACK_OBJECT_BOOLEAN:
    return json_boolean(o->via.boolean);
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    if (o->via.u64 <= (uint64_t)INT64_MAX)
      return json_integer((json_int_t)o->via.u64);
    {
      char digits[24];
      snprintf(digits, sizeof digits, "%" PRIu64, o->via.u64);
      return json_pack("{s:s}", "$uint64", digits);
    }
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    return json_integer((json_int_t)o->via.i64);
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64: {
    double d = o->via.f64;
    if (isfinite(d)) return json_real(d);
    return json_pack("{s:s}", "$float",
                     isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
  }
  case MSGPACK_OBJECT_STR: {
    json_t *s = json_stringn(str_ptr(o), o->via.str.size);
    return s ? s : tagged_base64("$bin", o->via.str.ptr, o->via.str.size);
  }
  case MSGPACK_OBJECT_BIN:
    return tagged_base64("$bin", o->via.bin.ptr, o->via.bin.size);
  case MSGPACK_OBJECT_EXT: {
    char *b64 = cli_base64(o->via.ext.ptr, o->via.ext.size);
    json_t *v = b64 ? json_pack("{s:i,s:s}", "$ext", (int)o->via.ext.type,
                                "$data", b64)
                    : NULL;
    free(b64);
    return v;
  }
  case MSGPACK_OBJECT_ARRAY: {
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < o->via.array.size; i++) {
      if (json_array_append_new(a, to_json(&o->via.array.ptr[i])) != 0) {
        json_decref(a);
        a = NULL;
      }
    }
    return a;
  }
  case MSGPACK_OBJECT_MAP: {
    json_t *m = json_object();
    for (uint32_t i = 0; m && i < o->via.map.size; i++) {
      const msgpack_object_kv *kv = &o->via.map.ptr[i];
      char *k = key_text(&kv->key);
      /* json_object_set_new steals the value even when it fails. */
      if (k == NULL || json_object_set_new(m, k, to_json(&kv->val)) != 0) {
        json_decref(m);
        m = NULL;
      }
      free(k);
    }
    return m;
  }
  }
  return NULL;
}

json_t *cli_msgpack_to_json(const void *data, size_t len) {
  msgpack_unpacked u;
  size_t off = 0;
  msgpack_unpacked_init(&u);
  json_t *v = NULL;
  if (msgpack_unpack_next(&u, data, len, &off) == MSGPACK_UNPACK_SUCCESS)
    v = to_json(&u.data);
  msgpack_unpacked_destroy(&u);
  return v;
}

/* ------------------------------------------------------------------ jobs */

void cli_format_time(char *buf, size_t len, int64_t us) {
  time_t secs = (time_t)(us / 1000000);
  long micro = (long)(us % 1000000);
  if (micro < 0) {
    micro += 1000000;
    secs -= 1;
  }
  struct tm tm;
  if (gmtime_r(&secs, &tm) == NULL) {
    snprintf(buf, len, "%" PRId64 "us", us);
    return;
  }
  snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
           tm.tm_min, tm.tm_sec, micro);
}

/* A string value, or a $bin form when it is not UTF-8 (names are checked
 * by the library, but a posting from another producer may say anything). */
static json_t *text(const char *s) {
  if (s == NULL) return json_null();
  json_t *v = json_string(s);
  return v ? v : tagged_base64("$bin", s, strlen(s));
}

json_t *cli_json_text(const char *s) { return text(s); }

json_t *cli_job_to_json(const jb_job *job) {
  char created[40], modified[40];
  cli_format_time(created, sizeof created, jb_job_created(job));
  cli_format_time(modified, sizeof modified, jb_job_modified(job));
  const char *owner = jb_job_owner(job);
  const char *book_name = jb_job_book_name(job);
  const char *book_uuid = jb_job_book_uuid(job);
  size_t dlen = 0;
  const void *d = jb_job_details(job, &dlen);
  json_t *details = d && dlen ? cli_msgpack_to_json(d, dlen) : json_object();
  if (details == NULL) /* the library checked it: only out of memory */
    return NULL;
  json_t *book = book_name && book_uuid
                     ? json_pack("{s:o,s:o}", "name", text(book_name), "uuid",
                                 text(book_uuid))
                     : json_null();
  if (book == NULL) {
    json_decref(details);
    return NULL;
  }
  /* The claim: token, lease expiry, holder process (null when none). */
  json_t *claim = json_null();
  if (owner) {
    int64_t exp = jb_job_lease_expires(job);
    char expires[40];
    if (exp) cli_format_time(expires, sizeof expires, exp);
    int pid = jb_job_holder_pid(job);
    claim = json_pack("{s:I,s:o,s:o,s:o}", "token",
                      (json_int_t)jb_job_token(job), "lease_expires",
                      exp ? json_string(expires) : json_null(), "holder_pid",
                      pid ? json_integer(pid) : json_null(), "holder_alive",
                      pid ? json_boolean(jb_job_holder_alive(job))
                          : json_null());
    if (claim == NULL) {
      json_decref(details);
      json_decref(book);
      return NULL;
    }
  }
  /* A job's life: its due time, attempts and options. */
  int64_t nb = jb_job_not_before(job);
  char due[40];
  if (nb) cli_format_time(due, sizeof due, nb);
  const char *uk = jb_job_unique_key(job), *why = jb_job_last_reason(job);
  json_t *life = json_pack(
      "{s:o,s:I,s:o,s:o,s:o,s:o}", "not_before",
      nb ? json_string(due) : json_null(), "attempts",
      (json_int_t)jb_job_attempts(job), "max_attempts",
      jb_job_max_attempts(job) ? json_integer(jb_job_max_attempts(job))
                               : json_null(),
      "time_limit",
      jb_job_time_limit(job) ? json_real(jb_job_time_limit(job) / 1000.0)
                             : json_null(),
      "unique", uk ? text(uk) : json_null(), "last_reason",
      why ? text(why) : json_null());
  /* Snoozes and the deadline to start (schema 11). */
  int64_t dl = jb_job_deadline(job);
  char dls[40];
  if (dl) cli_format_time(dls, sizeof dls, dl);
  if (life != NULL &&
      json_object_update_new(
          life, json_pack("{s:I,s:o,s:o}", "snoozes",
                          (json_int_t)jb_job_snoozes(job), "max_snoozes",
                          jb_job_max_snoozes(job)
                              ? json_integer(jb_job_max_snoozes(job))
                              : json_null(),
                          "deadline", dl ? json_string(dls) : json_null())) !=
          0) {
    json_decref(life);
    life = NULL;
  }
  if (life == NULL) {
    json_decref(details);
    json_decref(book);
    json_decref(claim);
    return NULL;
  }
  /* "o" steals each reference, also when json_pack fails. */
  json_t *out = json_pack("{s:s,s:o,s:s,s:I,s:s,s:s,s:s,s:o,s:o,s:b,s:o,s:o}",
                   "uuid", jb_job_uuid(job),
                   "name", text(jb_job_name(job)),
                   "priority", jb_priority_name(jb_job_priority(job)),
                   "sequence", (json_int_t)jb_job_sequence(job),
                   "created", created,
                   "modified", modified,
                   "state", jb_state_name(jb_job_state(job)),
                   "owner", owner ? text(owner) : json_null(),
                   "claim", claim,
                   "remote", (int)jb_job_remote(job),
                   "book", book,
                   "details", details);
  if (out == NULL || json_object_update(out, life) != 0) {
    json_decref(out);
    out = NULL;
  }
  json_decref(life);
  /* The progress last reported (null: none). */
  double pct = 0;
  const char *msg = NULL;
  int64_t at = 0;
  if (out && jb_job_progress(job, &pct, &msg, &at)) {
    char when[40];
    cli_format_time(when, sizeof when, at);
    json_t *p = json_pack("{s:f,s:o,s:s}", "percent", pct, "message",
                          msg ? text(msg) : json_null(), "at", when);
    if (p == NULL || json_object_set_new(out, "progress", p) != 0) {
      json_decref(out);
      out = NULL;
    }
  } else if (out && json_object_set_new(out, "progress", json_null()) != 0) {
    json_decref(out);
    out = NULL;
  }
  return out;
}

int cli_json_print(json_t *value) {
  if (value == NULL) return -1;
  int rc = json_dumpf(value, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(value);
  if (rc != 0 || putchar('\n') == EOF) return -1;
  return 0;
}

json_t *cli_entity_to_json(const jb_entity *e) {
  char registered[40];
  cli_format_time(registered, sizeof registered, e->registered_us);
  json_t *meta = cli_msgpack_to_json(e->meta, e->meta_len);
  if (meta == NULL) /* the library checked it: only out of memory */
    return NULL;
  /* "o" steals each reference, also when json_pack fails. */
  return json_pack("{s:o,s:o,s:I,s:s,s:o}", "name", text(e->name), "kind",
                   text(e->kind), "pid", (json_int_t)e->pid, "registered",
                   registered, "meta", meta);
}
