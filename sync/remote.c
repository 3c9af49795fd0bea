/*
 * remote.c - the job operations on a Redis board through our scripts, and
 * the reads that resolve a lost reply (remote.h). Replies are msgpack maps
 * (cmsgpack on the server); they are decoded with msgpack-c, which the core
 * links already.
 */
#include "remote.h"

#include "core/sync_hook.h"

#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define KEY_MAX JB__REMOTE_KEY_MAX

enum { S_CLAIM, S_ABANDON, S_CONSUME, S_TRASH, S_EXTEND, S_POST, S_RESERVE,
       S_CANCEL, S_CLAIM_MANY };

int jb__remote_init(jb__remote *r, jb_sync_conn *conn, bool notices) {
  memset(r, 0, sizeof *r);
  r->conn = conn;
  r->notices = notices;
  int n;
  if ((n = jb_sync_key(r->listings, KEY_MAX, conn, "listings")) < 0 ||
      (n = jb_sync_key(r->trash, KEY_MAX, conn, "trash")) < 0 ||
      (n = jb_sync_key(r->sequence, KEY_MAX, conn, "sequence")) < 0 ||
      (n = jb_sync_key(r->fence, KEY_MAX, conn, "fence")) < 0 ||
      (n = jb_sync_key(r->unique, KEY_MAX, conn, "unique")) < 0 ||
      (notices && (n = jb_sync_key(r->channel, KEY_MAX, conn, "notices")) < 0))
    return n;
  for (int i = 0; i < JB__SYNC_SCRIPT_COUNT; i++) {
    char *text = jb__sync_script_text(i);
    if (!text)
      return jb__err(JB_ENOMEM, "out of memory joining script %s",
                     jb__sync_scripts[i].name);
    int rc = jb__sync_script_add(&r->ids[i], conn, jb__sync_scripts[i].name,
                                 text);
    free(text);
    if (rc) return rc;
  }
  return JB_OK;
}

int jb__remote_claim_id(char out[JB_UUID_STRLEN]) {
  uint8_t b[16];
  size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = getrandom(b + got, sizeof b - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return jb__err_errno(errno, "getrandom (making a claim id)");
    got += (size_t)n;
  }
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  static const char hex[] = "0123456789abcdef";
  char *p = out;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
    *p++ = hex[b[i] >> 4];
    *p++ = hex[b[i] & 15];
  }
  *p = '\0';
  return JB_OK;
}

/* taskflow's job keys are uuid4 texts, lowercase; we send nothing else
 * (an upper-case uuid would name other owner keys than taskflow's). */
static bool uuid_ok(const char *u) {
  if (u == NULL || strlen(u) != JB_UUID_STRLEN - 1) return false;
  for (int i = 0; i < JB_UUID_STRLEN - 1; i++) {
    char c = u[i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-'
             : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  }
  return true;
}

static bool who_ok(const char *who) {
  return who != NULL && who[0] != '\0' && strlen(who) <= JB_WHO_MAX;
}

int jb__remote_posting_prefix(size_t *prefix_len, const void *posting,
                              size_t len) {
  static const char key[] = "\xa8sequence";
  const size_t klen = sizeof key - 1;
  const uint8_t *p = posting;
  /* The value is one msgpack unsigned int, in any width: fixint, cc, cd,
   * ce, cf. At most one width can fit, as the key ends in 'e'. */
  static const struct { uint8_t tag; size_t w; } widths[] = {
      {0, 1}, {0xcc, 2}, {0xcd, 3}, {0xce, 5}, {0xcf, 9}};
  for (size_t i = 0; p && i < sizeof widths / sizeof widths[0]; i++) {
    size_t w = widths[i].w;
    if (len < klen + w + 1) continue;
    const uint8_t *v = p + len - w;
    if (widths[i].tag ? v[0] != widths[i].tag : v[0] > 0x7f) continue;
    if (memcmp(v - klen, key, klen) != 0) continue;
    *prefix_len = len - w;
    return JB_OK;
  }
  return jb__err(JB_EINVAL, "posting of %zu bytes does not end with the "
                 "entry \"sequence\" and an unsigned integer", len);
}

/* The oslo datetime (ext type 1, a 7-entry map of naive UTC fields) of
 * `us` (UTC microseconds; 0: now) into out (at most 63 bytes). Encoded
 * here, not by the core's codec, which libjobboard does not export;
 * tests/test_sync_remote.c checks it against the wire document's example. */
static int lm_blob(msgpack_sbuffer *out, int64_t us) {
  if (us == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  }
  time_t secs = (time_t)(us / 1000000);
  struct tm tm;
  if (us < 0 || gmtime_r(&secs, &tm) == NULL)
    return jb__err(JB_EINVAL, "last-modified time %lld us is out of range",
                   (long long)us);
  const struct { const char *k; int v; } f[7] = {
      {"day", tm.tm_mday},      {"month", tm.tm_mon + 1},
      {"year", tm.tm_year + 1900}, {"hour", tm.tm_hour},
      {"minute", tm.tm_min},    {"second", tm.tm_sec},
      {"microsecond", (int)(us % 1000000)}};
  msgpack_sbuffer body;
  msgpack_sbuffer_init(&body);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &body, msgpack_sbuffer_write);
  int bad = msgpack_pack_map(&pk, 7);
  for (int i = 0; i < 7; i++) {
    size_t n = strlen(f[i].k);
    bad |= msgpack_pack_str(&pk, n) | msgpack_pack_str_body(&pk, f[i].k, n) |
           msgpack_pack_int(&pk, f[i].v);
  }
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  bad |= msgpack_pack_ext(&pk, body.size, 1) |
         msgpack_pack_ext_body(&pk, body.data, body.size);
  msgpack_sbuffer_destroy(&body);
  return bad ? jb__err(JB_ENOMEM, "out of memory encoding a datetime")
             : JB_OK;
}

/* ------------------------------------------------------------- replies */

typedef jb__remote_reply reply;

static void copy_str(char *dst, size_t size, const char *s, size_t n) {
  if (n >= size) n = size - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static bool obj_uint(const msgpack_object *o, uint64_t *v) {
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    *v = o->via.u64;
    return true;
  }
  /* Lua numbers are doubles; cmsgpack packs integral ones as integers,
   * but accept an integral float too. */
  if (o->type == MSGPACK_OBJECT_FLOAT64 && o->via.f64 >= 0 &&
      o->via.f64 < 18446744073709551616.0 &&
      o->via.f64 == (double)(uint64_t)o->via.f64) {
    *v = (uint64_t)o->via.f64;
    return true;
  }
  return false;
}

static bool key_is(const msgpack_object *k, const char *name) {
  size_t n = strlen(name);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
         memcmp(k->via.str.ptr, name, n) == 0;
}

int jb__remote_parse_reply(reply *out, const redisReply *r,
                           const char *script) {
  memset(out, 0, sizeof *out);
  if (r->type != REDIS_REPLY_STRING)
    return jb__err(JB_EIO, "script %s: reply of type %d, not a string",
                   script, r->type);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  int rc = JB_OK;
  bool status = false;
  size_t end;
  /* The scan first: msgpack-c would allocate what a bad header declares
   * (codec/mpscan.h). */
  if (jb__mp_scan(r->str, r->len, &end, JB_MP_MAX_DEPTH) != JB_MP_OK ||
      msgpack_unpack_next(&u, r->str, r->len, &off) != MSGPACK_UNPACK_SUCCESS
      || off != r->len || u.data.type != MSGPACK_OBJECT_MAP) {
    rc = jb__err(JB_EIO, "script %s: reply of %zu bytes is not one msgpack "
                 "map", script, r->len);
    goto out;
  }
  const msgpack_object_map *m = &u.data.via.map;
  for (uint32_t i = 0; i < m->size; i++) {
    const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
    bool str = v->type == MSGPACK_OBJECT_STR;
    if (key_is(k, "status") && str) {
      status = true;
      out->ok = v->via.str.size == 2 && memcmp(v->via.str.ptr, "ok", 2) == 0;
    } else if (key_is(k, "reason") && str)
      copy_str(out->reason, sizeof out->reason, v->via.str.ptr,
               v->via.str.size);
    else if (key_is(k, "owner") && str)
      copy_str(out->owner, sizeof out->owner, v->via.str.ptr,
               v->via.str.size);
    else if (key_is(k, "claim") && str)
      copy_str(out->claim, sizeof out->claim, v->via.str.ptr,
               v->via.str.size);
    else if (key_is(k, "fence"))
      obj_uint(v, &out->fence);
    else if (key_is(k, "sequence"))
      out->has_sequence = obj_uint(v, &out->sequence);
    else if (key_is(k, "holder") && str)
      copy_str(out->holder, sizeof out->holder, v->via.str.ptr,
               v->via.str.size);
    else if (key_is(k, "listed") && v->type == MSGPACK_OBJECT_BOOLEAN)
      out->listed = v->via.boolean;
  }
  if (!status || (!out->ok && out->reason[0] == '\0'))
    rc = jb__err(JB_EIO, "script %s: reply has no status or no reason",
                 script);
out:
  msgpack_unpacked_destroy(&u);
  return rc;
}

/* ------------------------------------------------------------- running */

/* Every key an operation on job `uuid` may name, and the notice channel
 * ("" when notices are off): the job's own, and the shared ones made by
 * jb__remote_init. */
typedef struct {
  char owned[KEY_MAX], lm[KEY_MAX], claim[KEY_MAX], posted[KEY_MAX],
      unique[KEY_MAX], outcome[KEY_MAX];
  const char *listings, *trash, *sequence, *fence, *channel, *uniques;
} job_keys;

/* dst = base (n bytes) + sfx: the bytes jb_sync_key makes of "<uuid><sfx>"
 * when base is its "NS:<uuid>", without formatting each key anew. */
static void key_suffix(char dst[KEY_MAX], const char *base, size_t n,
                       const char *sfx) {
  size_t m = strlen(sfx);
  memcpy(dst, base, n);
  memcpy(dst + n, sfx, m + 1);
}

static int job_keys_make(job_keys *k, jb__remote *r, const char *uuid) {
  /* base leaves room for the longest suffix (jb_sync_key refuses a longer
   * base); with a namespace of at most JB_SYNC_NAMESPACE_MAX bytes and a
   * uuid of 36 (every caller checks it first), it always fits. */
  _Static_assert(KEY_MAX >= JB_SYNC_NAMESPACE_MAX + 1 + 36 +
                                sizeof ".last_modified",
                 "every job key fits in KEY_MAX");
  char base[KEY_MAX];
  int n = jb_sync_key(base, KEY_MAX - sizeof ".last_modified", r->conn, uuid);
  if (n < 0) return n;
  key_suffix(k->owned, base, (size_t)n, ".owned");
  key_suffix(k->lm, base, (size_t)n, ".last_modified");
  key_suffix(k->claim, base, (size_t)n, ".claim");
  key_suffix(k->posted, base, (size_t)n, ".posted");
  key_suffix(k->unique, base, (size_t)n, ".unique");
  key_suffix(k->outcome, base, (size_t)n, ".outcome");
  k->listings = r->listings;
  k->uniques = r->unique;
  k->trash = r->trash;
  k->sequence = r->sequence;
  k->fence = r->fence;
  k->channel = r->channel;
  return JB_OK;
}

/* Run script `s` and decode its reply. `verb` and `uuid` name the
 * operation in an offline message. Sets res->unsure (see remote.h). */
static int run(reply *rep, jb__remote_result *res, jb__remote *r, int s,
               const char *verb, const char *uuid, int nkeys,
               const char *const *keys, int nargs, const char *const *args,
               const size_t *arglens) {
  /* Reconnect first, so that a failure of the EVALSHA itself means the
   * script may have reached the server, and one of the reconnect does
   * not. */
  int rc = jb_sync_connected(r->conn) ? JB_OK : jb_sync_ping(r->conn);
  redisReply *out = NULL;
  if (rc == JB_OK) {
    rc = jb__sync_evalsha(&out, r->conn, r->ids[s], nkeys, keys, NULL, nargs,
                          args, arglens);
    /* An error reply (a replica's READONLY after a failover, LOADING,
     * BUSY) refused the script: it did not run, so the failure is sure. */
    if (rc == JB_EOFFLINE) res->unsure = !jb__sync_refused(r->conn);
  }
  if (rc == JB_EOFFLINE) {
    char why[512];
    copy_str(why, sizeof why, jb_errmsg(), strlen(jb_errmsg()));
    return jb__err(JB_EOFFLINE, "cannot %s job %s: backend unavailable (%s)%s",
                   verb, uuid, why,
                   res->unsure ? "; the script may have run: resolve it "
                                 "before retrying" : "");
  }
  if (rc) return rc;
  rc = jb__remote_parse_reply(rep, out, jb__sync_scripts[s].name);
  freeReplyObject(out);
  return rc;
}

static int bad_reason(const reply *rep, const char *script) {
  return jb__err(JB_EIO, "script %s: unexpected reply \"%s\"", script,
                 rep->ok ? "ok" : rep->reason);
}

static void expiry_text(char out[24], int64_t ms) {
  if (ms > 0)
    snprintf(out, 24, "%lld", (long long)ms);
  else
    strcpy(out, "none");
}

static int check_owner(const jb__remote_owner *o, const char *what) {
  if (o == NULL || !who_ok(o->who))
    return jb__err(JB_EINVAL, "%s: owner must be 1..%d bytes", what,
                   JB_WHO_MAX);
  if (o->expiry_ms < 0)
    return jb__err(JB_EINVAL, "%s: expiry %lld ms is negative", what,
                   (long long)o->expiry_ms);
  if (o->claim_id == NULL || o->claim_id[0] == '\0' ||
      strlen(o->claim_id) >= sizeof ((reply *)0)->claim)
    return jb__err(JB_EINVAL, "%s: claim id must be 1..%zu bytes", what,
                   sizeof ((reply *)0)->claim - 1);
  return JB_OK;
}

/* A unique key as the scripts take it: 1..JB_UNIQUE_MAX bytes. */
static int check_unique(const char *key, const char *what) {
  if (key == NULL || key[0] == '\0' || strlen(key) > JB_UNIQUE_MAX)
    return jb__err(JB_EINVAL, "%s: unique key must be 1..%d bytes", what,
                   JB_UNIQUE_MAX);
  return JB_OK;
}

/* The refusal of a unique key held by another live job in Redis. */
static int unique_held(jb__remote_result *res, const reply *rep,
                       const char *key) {
  copy_str(res->holder, sizeof res->holder, rep->holder, strlen(rep->holder));
  return jb__err(JB_EEXISTS, "unique key \"%.200s\" is held by job %s (in "
                 "redis)", key, rep->holder[0] ? rep->holder : "(unknown)");
}

int jb__remote_post(jb__remote_result *res, jb__remote *r, const char *uuid,
                    const void *posting, size_t len,
                    const jb__remote_owner *owner) {
  return jb__remote_post_unique(res, r, uuid, posting, len, owner, NULL);
}

int jb__remote_post_unique(jb__remote_result *res, jb__remote *r,
                           const char *uuid, const void *posting, size_t len,
                           const jb__remote_owner *owner,
                           const char *unique) {
  memset(res, 0, sizeof *res);
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "post to redis: \"%s\" is not a lowercase uuid",
                   uuid ? uuid : "(null)");
  size_t plen;
  int rc = jb__remote_posting_prefix(&plen, posting, len);
  if (rc) return rc;
  if (owner && (rc = check_owner(owner, "post to redis"))) return rc;
  if (unique && (rc = check_unique(unique, "post to redis"))) return rc;
  if (unique == NULL) unique = "";
  job_keys k;
  if ((rc = job_keys_make(&k, r, uuid))) return rc;
  msgpack_sbuffer lm;
  msgpack_sbuffer_init(&lm);
  char exp[24] = "none", marker[24];
  snprintf(marker, sizeof marker, "%lld", (long long)JB__REMOTE_POSTED_TTL_MS);
  if (owner) {
    if ((rc = lm_blob(&lm, owner->now_us))) goto out;
    expiry_text(exp, owner->expiry_ms);
  }
  const char *keys[9] = {k.listings, k.sequence, k.owned, k.lm, k.claim,
                         k.fence, k.posted, k.uniques, k.unique};
  const char *args[9] = {uuid, (const char *)posting, k.channel,
                         owner ? owner->who : "",
                         owner ? lm.data : "", exp,
                         owner ? owner->claim_id : "", marker, unique};
  size_t lens[9] = {strlen(uuid), plen, strlen(k.channel), strlen(args[3]),
                    owner ? lm.size : 0, strlen(exp), strlen(args[6]),
                    strlen(marker), strlen(unique)};
  reply rep;
  rc = run(&rep, res, r, S_POST, "post", uuid, JB__SYNC_POST_NKEYS, keys,
           JB__SYNC_POST_NARGS, args, lens);
  if (rc) goto out;
  if (rep.ok && rep.has_sequence) {
    res->sequence = rep.sequence;
    res->fence = rep.fence;
  } else if (!rep.ok && strcmp(rep.reason, JB__SYNC_ALREADY_POSTED) == 0) {
    if (rep.has_sequence) {
      /* Our own post, whose reply was lost: the same bytes are listed, or
       * the job is gone (consumed or trashed) and its marker remains. */
      res->sequence = rep.sequence;
      res->again = true;
      res->gone = !rep.listed;
    } else
      rc = jb__err(JB_EINVAL, "job %s is already on the board", uuid);
  } else if (!rep.ok && strcmp(rep.reason, JB__SYNC_UNIQUE_HELD) == 0)
    rc = unique_held(res, &rep, unique);
  else
    rc = bad_reason(&rep, "post");
out:
  msgpack_sbuffer_destroy(&lm);
  return rc;
}

/* The claim of `uuid` for `owner` as its script answered (`rep`). */
static int claim_reply(jb__remote_result *res, const reply *rep,
                       const char *uuid, const jb__remote_owner *owner) {
  if (rep->ok) {
    res->fence = rep->fence;
    copy_str(res->owner, sizeof res->owner, owner->who, strlen(owner->who));
    copy_str(res->claim, sizeof res->claim, owner->claim_id,
             strlen(owner->claim_id));
    return JB_OK;
  }
  if (strcmp(rep->reason, JB__SYNC_UNKNOWN_JOB) == 0)
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", uuid);
  if (strcmp(rep->reason, JB__SYNC_ALREADY_CLAIMED) != 0)
    return bad_reason(rep, "claim");
  memcpy(res->owner, rep->owner, sizeof res->owner);
  memcpy(res->claim, rep->claim, sizeof res->claim);
  res->fence = rep->fence;
  bool self = strcmp(rep->owner, owner->who) == 0;
  if (self && strcmp(rep->claim, owner->claim_id) == 0) {
    res->again = true; /* this very claim, taken by an earlier send */
    return JB_OK;
  }
  if (self)
    return jb__err(JB_ECLAIMED, "job %s is already claimed by %s (the "
                   "caller itself; its claim was refreshed)", uuid,
                   rep->owner);
  return jb__err(JB_ECLAIMED, "job %s is already claimed by %s", uuid,
                 rep->owner);
}

/* The claim script's keys and arguments for `uuid` (lm: the encoded
 * time, exp: the expiry text); k holds the job's keys. */
static int claim_args(job_keys *k, const char *keys[JB__SYNC_CLAIM_NKEYS],
                      const char *args[JB__SYNC_CLAIM_NARGS],
                      size_t lens[JB__SYNC_CLAIM_NARGS], jb__remote *r,
                      const char *uuid, const jb__remote_owner *owner,
                      const msgpack_sbuffer *lm, const char *exp) {
  int rc = job_keys_make(k, r, uuid);
  if (rc) return rc;
  const char *kk[JB__SYNC_CLAIM_NKEYS] = {k->owned, k->listings, k->lm,
                                         k->claim, k->fence};
  const char *aa[JB__SYNC_CLAIM_NARGS] = {owner->who, uuid,
                                         lm->data,   exp,
                                         owner->claim_id, k->channel};
  memcpy(keys, kk, sizeof kk);
  memcpy(args, aa, sizeof aa);
  size_t ll[JB__SYNC_CLAIM_NARGS] = {strlen(owner->who), strlen(uuid),
                                     lm->size, strlen(exp),
                                     strlen(owner->claim_id),
                                     strlen(k->channel)};
  memcpy(lens, ll, sizeof ll);
  return JB_OK;
}

int jb__remote_claim(jb__remote_result *res, jb__remote *r, const char *uuid,
                     const jb__remote_owner *owner) {
  memset(res, 0, sizeof *res);
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "claim in redis: \"%s\" is not a lowercase "
                   "uuid", uuid ? uuid : "(null)");
  int rc = check_owner(owner, "claim in redis");
  if (rc) return rc;
  msgpack_sbuffer lm;
  msgpack_sbuffer_init(&lm);
  if ((rc = lm_blob(&lm, owner->now_us))) goto out;
  char exp[24];
  expiry_text(exp, owner->expiry_ms);
  job_keys k;
  const char *keys[JB__SYNC_CLAIM_NKEYS], *args[JB__SYNC_CLAIM_NARGS];
  size_t lens[JB__SYNC_CLAIM_NARGS];
  if ((rc = claim_args(&k, keys, args, lens, r, uuid, owner, &lm, exp)))
    goto out;
  reply rep;
  rc = run(&rep, res, r, S_CLAIM, "claim", uuid, JB__SYNC_CLAIM_NKEYS, keys,
           JB__SYNC_CLAIM_NARGS, args, lens);
  if (rc == JB_OK) rc = claim_reply(res, &rep, uuid, owner);
out:
  msgpack_sbuffer_destroy(&lm);
  return rc;
}

/* Claim the n jobs of uuids/claim_ids (checked) with one claim_many.lua
 * call; rcs[i] and res[i] as jb__remote_claim's for job i. Returns JB_OK
 * when the script answered, else the call's failure (every job's too:
 * JB_EOFFLINE with res[i].unsure when the script may have run). */
static int claim_chunk(jb__remote_result *res, int *rcs, jb__remote *r,
                       size_t n, const char *const *uuids,
                       const jb__remote_owner *owner,
                       const char *const *claim_ids,
                       const msgpack_sbuffer *lm, const char *exp) {
  int nkeys = JB__SYNC_CLAIM_MANY_NKEYS + 3 * (int)n;
  int nargs = JB__SYNC_CLAIM_MANY_NARGS + 2 * (int)n;
  char(*kb)[3][KEY_MAX] = malloc(n * sizeof *kb);
  const char **keys = malloc((size_t)nkeys * sizeof *keys);
  const char **args = malloc((size_t)nargs * sizeof *args);
  size_t *lens = malloc((size_t)nargs * sizeof *lens);
  redisReply *got = NULL;
  bool unsure = false;
  int rc = JB_OK;
  if (!kb || !keys || !args || !lens) {
    rc = jb__err(JB_ENOMEM, "out of memory for %zu claims", n);
    goto out;
  }
  keys[0] = r->listings;
  keys[1] = r->fence;
  args[0] = owner->who;
  args[1] = lm->data;
  args[2] = exp;
  args[3] = r->channel;
  lens[0] = strlen(owner->who);
  lens[1] = lm->size;
  lens[2] = strlen(exp);
  lens[3] = strlen(r->channel);
  for (size_t i = 0; i < n; i++) {
    char base[KEY_MAX];
    int b = jb_sync_key(base, KEY_MAX - sizeof ".last_modified", r->conn,
                        uuids[i]);
    if (b < 0) {
      rc = b;
      goto out;
    }
    key_suffix(kb[i][0], base, (size_t)b, ".owned");
    key_suffix(kb[i][1], base, (size_t)b, ".last_modified");
    key_suffix(kb[i][2], base, (size_t)b, ".claim");
    for (int k = 0; k < 3; k++) keys[2 + 3 * i + (size_t)k] = kb[i][k];
    args[4 + 2 * i] = uuids[i];
    args[5 + 2 * i] = claim_ids[i];
    lens[4 + 2 * i] = strlen(uuids[i]);
    lens[5 + 2 * i] = strlen(claim_ids[i]);
  }
  /* As run(): reconnect first, so that a failure of the EVALSHA itself
   * means the script may have run, and one of the reconnect does not. */
  rc = jb_sync_connected(r->conn) ? JB_OK : jb_sync_ping(r->conn);
  if (rc == JB_OK) {
    rc = jb__sync_evalsha(&got, r->conn, r->ids[S_CLAIM_MANY], nkeys, keys,
                          NULL, nargs, args, lens);
    if (rc == JB_EOFFLINE) unsure = !jb__sync_refused(r->conn);
  }
  if (rc == JB_OK && (got->type != REDIS_REPLY_ARRAY || got->elements != n)) {
    reply rep;
    rc = jb__remote_parse_reply(&rep, got, "claim_many");
    rc = rc ? rc : bad_reason(&rep, "claim_many");
  }
  if (rc != JB_OK) {
    char why[512];
    copy_str(why, sizeof why, jb_errmsg(), strlen(jb_errmsg()));
    for (size_t i = 0; i < n; i++) {
      res[i].unsure = unsure;
      rcs[i] = rc;
    }
    if (rc == JB_EOFFLINE)
      rc = jb__err(JB_EOFFLINE, "cannot claim %zu jobs: backend unavailable "
                   "(%s)%s", n, why,
                   unsure ? "; the script may have run: resolve it before "
                            "retrying" : "");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    reply rep;
    jb__remote_owner o = *owner;
    o.claim_id = claim_ids[i];
    rcs[i] = jb__remote_parse_reply(&rep, got->element[i], "claim_many");
    if (rcs[i] == JB_OK) rcs[i] = claim_reply(&res[i], &rep, uuids[i], &o);
  }
out:
  if (got) freeReplyObject(got);
  free(kb);
  free(keys);
  free(args);
  free(lens);
  return rc;
}

int jb__remote_claim_many(jb__remote_result *res, int *rcs, jb__remote *r,
                          size_t n, const char *const *uuids,
                          const jb__remote_owner *owner,
                          const char *const *claim_ids) {
  for (size_t i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    rcs[i] = JB_OK;
  }
  for (size_t i = 0; i < n; i++) {
    if (!uuid_ok(uuids[i]))
      return jb__err(JB_EINVAL, "claim in redis: \"%s\" is not a lowercase "
                     "uuid", uuids[i] ? uuids[i] : "(null)");
    jb__remote_owner o = *owner;
    o.claim_id = claim_ids[i];
    int rc = check_owner(&o, "claim in redis");
    if (rc) return rc;
  }
  msgpack_sbuffer lm;
  msgpack_sbuffer_init(&lm);
  int rc = lm_blob(&lm, owner->now_us);
  if (rc) {
    msgpack_sbuffer_destroy(&lm);
    return rc;
  }
  char exp[24];
  expiry_text(exp, owner->expiry_ms);
  /* A chunk is one script call: the server runs nothing else meanwhile,
   * so a long batch goes in several. After a chunk that failed the rest
   * are not sent (JB_EOFFLINE, sure). */
  char first[1024] = "";
  int first_rc = JB_OK;
  size_t done = 0;
  while (done < n) {
    size_t k = n - done < JB__REMOTE_CLAIM_CHUNK ? n - done
                                                  : JB__REMOTE_CLAIM_CHUNK;
    int crc = claim_chunk(res + done, rcs + done, r, k, uuids + done, owner,
                          claim_ids + done, &lm, exp);
    if (crc != JB_OK && done == 0) {
      bool any_unsure = false;
      for (size_t i = 0; i < k; i++) any_unsure |= res[i].unsure;
      if (!any_unsure) { /* nothing ran: as if nothing was sent */
        msgpack_sbuffer_destroy(&lm);
        return crc;
      }
    }
    for (size_t i = done; i < done + k; i++)
      if (rcs[i] != JB_OK && rcs[i] != JB_ECLAIMED &&
          rcs[i] != JB_ENOTFOUND && first_rc == JB_OK) {
        first_rc = rcs[i];
        copy_str(first, sizeof first, jb_errmsg(), strlen(jb_errmsg()));
      }
    done += k;
    if (crc != JB_OK) {
      for (size_t i = done; i < n; i++)
        rcs[i] = jb__err(JB_EOFFLINE, "cannot claim job %s: backend "
                         "unavailable (not sent after %s)", uuids[i], first);
      break;
    }
  }
  msgpack_sbuffer_destroy(&lm);
  if (first_rc != JB_OK) jb__err(first_rc, "%s", first);
  return JB_OK;
}

/* A refusal of abandon, consume, trash or extend, as the local board words
 * it (store/ops.c, owned_claim). */
static int refusal(const reply *rep, const char *verb, const char *uuid,
                   const char *who, const char *claim_id, const char *script,
                   jb__remote_result *res) {
  memcpy(res->owner, rep->owner, sizeof res->owner);
  memcpy(res->claim, rep->claim, sizeof res->claim);
  if (strcmp(rep->reason, JB__SYNC_UNKNOWN_JOB) == 0)
    return jb__err(JB_ENOTFOUND, "job %s is not on the board", uuid);
  if (strcmp(rep->reason, JB__SYNC_UNKNOWN_OWNER) == 0)
    return jb__err(JB_ENOTFOUND, "cannot %s job %s: it is not claimed (no "
                   "owner known)", verb, uuid);
  if (strcmp(rep->reason, JB__SYNC_NOT_EXPECTED_OWNER) == 0)
    return jb__err(JB_ENOTOWNER, "cannot %s job %s: it is claimed by %s, "
                   "not by %s", verb, uuid, rep->owner, who);
  if (strcmp(rep->reason, JB__SYNC_NOT_EXPECTED_CLAIM) == 0)
    return jb__err(JB_ENOTOWNER, "cannot %s job %s: claim %s is not the "
                   "current claim's (%s holds it with %s)", verb, uuid,
                   claim_id, rep->owner,
                   rep->claim[0] ? rep->claim : "no claim id");
  return bad_reason(rep, script);
}

static const char *release_verb(jb__remote_release_op op) {
  return op == JB__REMOTE_ABANDON ? "abandon"
         : op == JB__REMOTE_CONSUME ? "consume"
                                    : "trash";
}

static int check_release(const char *uuid, const char *who,
                         const char *verb) {
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "%s in redis: \"%s\" is not a lowercase uuid",
                   verb, uuid ? uuid : "(null)");
  if (!who_ok(who))
    return jb__err(JB_EINVAL, "%s in redis: owner must be 1..%d bytes", verb,
                   JB_WHO_MAX);
  return JB_OK;
}

/* ------------------------------------------------------------ outcomes */

int jb__remote_outcome_pack(msgpack_sbuffer *out, const jb_remote_outcome *o) {
  const char *end = jb_end_name((jb_end)o->end);
  if (end == NULL)
    return jb__err(JB_EINVAL, "outcome: %d is not an ending", o->end);
  const char *cause = o->end == JB_END_DEAD
                          ? jb_dead_cause_name((jb_dead_cause)o->cause)
                          : NULL;
  size_t owner_len = o->owner ? strnlen(o->owner, JB_WHO_MAX) : 0;
  uint32_t n = 1 + (o->result != NULL) + (cause != NULL) +
               (o->reason != NULL) + (owner_len > 0);
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  int bad = msgpack_pack_map(&pk, n);
#define PACK_STR(s, len)                                                     \
  (msgpack_pack_str(&pk, (len)) | msgpack_pack_str_body(&pk, (s), (len)))
  bad |= PACK_STR("end", 3) | PACK_STR(end, strlen(end));
  /* The result as the bytes its owner gave (bin): read back byte for
   * byte, whatever encodings the map's values use. */
  if (o->result)
    bad |= PACK_STR("result", 6) | msgpack_pack_bin(&pk, o->result_len) |
           msgpack_pack_bin_body(&pk, o->result, o->result_len);
  if (cause) bad |= PACK_STR("cause", 5) | PACK_STR(cause, strlen(cause));
  if (o->reason)
    bad |= PACK_STR("reason", 6) | PACK_STR(o->reason, o->reason_len);
  if (owner_len) bad |= PACK_STR("owner", 5) | PACK_STR(o->owner, owner_len);
#undef PACK_STR
  return bad ? jb__err(JB_ENOMEM, "out of memory encoding an outcome")
             : JB_OK;
}

static bool str_is(const msgpack_object *v, const char *s) {
  return v->type == MSGPACK_OBJECT_STR && key_is(v, s);
}

int jb__remote_outcome_parse(jb_remote_outcome *o, char owner[JB_WHO_MAX + 1],
                             const char *data, size_t len) {
  memset(o, 0, sizeof *o);
  owner[0] = '\0';
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0, end;
  int rc = JB_OK;
  if (jb__mp_scan(data, len, &end, JB_MP_MAX_DEPTH) != JB_MP_OK ||
      msgpack_unpack_next(&u, data, len, &off) != MSGPACK_UNPACK_SUCCESS ||
      off != len || u.data.type != MSGPACK_OBJECT_MAP) {
    rc = jb__err(JB_EIO, "outcome record of %zu bytes is not one msgpack map",
                 len);
    goto out;
  }
  /* msgpack-c's strings and bins point into `data`, which the caller
   * keeps: the result and the reason are handed out in place. */
  const msgpack_object_map *m = &u.data.via.map;
  for (uint32_t i = 0; i < m->size; i++) {
    const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;
    if (key_is(k, "end")) {
      for (int e = JB_END_CONSUMED; e <= JB_END_DEAD; e++)
        if (str_is(v, jb_end_name((jb_end)e))) o->end = e;
    } else if (key_is(k, "cause")) {
      for (int c = JB_DEAD_TRASHED; c <= JB_DEAD_BURIED; c++)
        if (str_is(v, jb_dead_cause_name((jb_dead_cause)c))) o->cause = c;
    } else if (key_is(k, "result") && v->type == MSGPACK_OBJECT_BIN) {
      o->result = v->via.bin.ptr;
      o->result_len = v->via.bin.size;
    } else if (key_is(k, "reason") && v->type == MSGPACK_OBJECT_STR) {
      o->reason = v->via.str.ptr;
      o->reason_len = v->via.str.size;
    } else if (key_is(k, "owner") && v->type == MSGPACK_OBJECT_STR &&
               v->via.str.size > 0 && v->via.str.size <= JB_WHO_MAX &&
               memchr(v->via.str.ptr, 0, v->via.str.size) == NULL) {
      copy_str(owner, JB_WHO_MAX + 1, v->via.str.ptr, v->via.str.size);
      o->owner = owner;
    }
  }
  if (o->end == 0)
    rc = jb__err(JB_EIO, "outcome record names no ending this board knows");
out:
  msgpack_unpacked_destroy(&u);
  return rc;
}

int jb__remote_release(jb__remote_result *res, jb__remote *r,
                       jb__remote_release_op op, const char *uuid,
                       const char *who, const char *claim_id) {
  return jb__remote_release_x(res, r, op, uuid, who, claim_id, NULL);
}

int jb__remote_release_x(jb__remote_result *res, jb__remote *r,
                         jb__remote_release_op op, const char *uuid,
                         const char *who, const char *claim_id,
                         const jb_remote_outcome *outcome) {
  memset(res, 0, sizeof *res);
  const char *verb = release_verb(op);
  int rc = check_release(uuid, who, verb);
  if (rc) return rc;
  if (claim_id == NULL) claim_id = "";
  job_keys k;
  if ((rc = job_keys_make(&k, r, uuid))) return rc;
  msgpack_sbuffer lm, how;
  msgpack_sbuffer_init(&lm);
  msgpack_sbuffer_init(&how);
  if (op != JB__REMOTE_CONSUME && (rc = lm_blob(&lm, 0))) goto out;
  if (op != JB__REMOTE_ABANDON && outcome &&
      (rc = jb__remote_outcome_pack(&how, outcome)))
    goto out;
  char ttl[24];
  snprintf(ttl, sizeof ttl, "%lld", (long long)JB__REMOTE_OUTCOME_TTL_MS);
  int script = op == JB__REMOTE_ABANDON ? S_ABANDON
               : op == JB__REMOTE_CONSUME ? S_CONSUME
                                          : S_TRASH;
  reply rep;
  if (op == JB__REMOTE_CONSUME) {
    /* KEYS owner, listings, last_modified, claim, unique hash, K's unique
     * key, K's outcome; ARGV who, K, id, channel, outcome, ttl */
    const char *keys[7] = {k.owned, k.listings, k.lm, k.claim, k.uniques,
                           k.unique, k.outcome};
    const char *args[6] = {who, uuid, claim_id, k.channel,
                           how.data ? how.data : "", ttl};
    size_t lens[6] = {strlen(who), strlen(uuid), strlen(claim_id),
                      strlen(k.channel), how.size, strlen(ttl)};
    rc = run(&rep, res, r, script, verb, uuid, JB__SYNC_CONSUME_NKEYS, keys,
             JB__SYNC_CONSUME_NARGS, args, lens);
  } else if (op == JB__REMOTE_TRASH) {
    /* KEYS owner, listings, last_modified, trash hash, claim, unique hash,
     * K's unique key, K's outcome; ARGV who, K, lm, claim id, channel,
     * outcome, ttl */
    const char *keys[8] = {k.owned, k.listings, k.lm, k.trash, k.claim,
                           k.uniques, k.unique, k.outcome};
    const char *args[7] = {who, uuid, lm.data, claim_id, k.channel,
                           how.data ? how.data : "", ttl};
    size_t lens[7] = {strlen(who), strlen(uuid), lm.size, strlen(claim_id),
                      strlen(k.channel), how.size, strlen(ttl)};
    rc = run(&rep, res, r, script, verb, uuid, JB__SYNC_TRASH_NKEYS, keys,
             JB__SYNC_TRASH_NARGS, args, lens);
  } else {
    /* KEYS owner, listings, last_modified, claim; ARGV who, K, lm, claim
     * id, channel */
    const char *keys[4] = {k.owned, k.listings, k.lm, k.claim};
    const char *args[5] = {who, uuid, lm.data, claim_id, k.channel};
    size_t lens[5] = {strlen(who), strlen(uuid), lm.size, strlen(claim_id),
                      strlen(k.channel)};
    rc = run(&rep, res, r, script, verb, uuid, JB__SYNC_ABANDON_NKEYS, keys,
             JB__SYNC_ABANDON_NARGS, args, lens);
  }
  if (rc == JB_OK && !rep.ok)
    rc = refusal(&rep, verb, uuid, who, claim_id,
                 jb__sync_scripts[script].name, res);
out:
  msgpack_sbuffer_destroy(&lm);
  msgpack_sbuffer_destroy(&how);
  return rc;
}

int jb__remote_extend(jb__remote_result *res, jb__remote *r, const char *uuid,
                      const char *who, const char *claim_id,
                      int64_t expiry_ms) {
  memset(res, 0, sizeof *res);
  const char *verb = "extend the claim on";
  int rc = check_release(uuid, who, "extend");
  if (rc) return rc;
  if (expiry_ms <= 0)
    return jb__err(JB_EINVAL, "extend in redis: expiry %lld ms is not "
                   "positive", (long long)expiry_ms);
  if (claim_id == NULL) claim_id = "";
  job_keys k;
  if ((rc = job_keys_make(&k, r, uuid))) return rc;
  char exp[24];
  expiry_text(exp, expiry_ms);
  const char *keys[3] = {k.owned, k.listings, k.claim};
  const char *args[5] = {who, uuid, exp, claim_id, k.channel};
  reply rep;
  rc = run(&rep, res, r, S_EXTEND, verb, uuid, JB__SYNC_EXTEND_NKEYS, keys,
           JB__SYNC_EXTEND_NARGS, args, NULL);
  if (rc == JB_OK && !rep.ok)
    rc = refusal(&rep, verb, uuid, who, claim_id, "extend", res);
  return rc;
}

int jb__remote_reserve(jb__remote_result *res, jb__remote *r,
                       const char *key, const char *uuid, int64_t hold_ms) {
  return jb__remote_reserve_x(res, r, key, uuid, hold_ms, false);
}

int jb__remote_reserve_x(jb__remote_result *res, jb__remote *r,
                         const char *key, const char *uuid, int64_t hold_ms,
                         bool pending) {
  memset(res, 0, sizeof *res);
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "reserve in redis: \"%s\" is not a lowercase "
                   "uuid", uuid ? uuid : "(null)");
  int rc = check_unique(key, "reserve in redis");
  if (rc) return rc;
  if (hold_ms < 0)
    return jb__err(JB_EINVAL, "reserve in redis: hold %lld ms is negative",
                   (long long)hold_ms);
  job_keys k;
  if ((rc = job_keys_make(&k, r, uuid))) return rc;
  char hold[24];
  snprintf(hold, sizeof hold, "%lld", (long long)hold_ms);
  const char *keys[3] = {k.uniques, k.listings, k.unique};
  const char *args[4] = {key, uuid, hold, pending && hold_ms ? "p" : ""};
  reply rep;
  rc = run(&rep, res, r, S_RESERVE,
           hold_ms ? "reserve the unique key of" : "release the unique key of",
           uuid, JB__SYNC_RESERVE_NKEYS, keys, JB__SYNC_RESERVE_NARGS, args,
           NULL);
  if (rc == JB_OK && !rep.ok && strcmp(rep.reason, JB__SYNC_UNIQUE_PENDING) == 0) {
    res->pending = true;
    copy_str(res->holder, sizeof res->holder, rep.holder, strlen(rep.holder));
    rc = jb__err(JB_EEXISTS, "unique key \"%s\" is being posted with job %s "
                 "(in redis): not yet decided", key, res->holder);
  } else if (rc == JB_OK && !rep.ok) {
    rc = strcmp(rep.reason, JB__SYNC_UNIQUE_HELD) == 0
             ? unique_held(res, &rep, key)
             : bad_reason(&rep, "reserve");
  }
  return rc;
}

int jb__remote_cancel(jb__remote_result *res, jb__remote *r, const char *uuid,
                      bool force) {
  memset(res, 0, sizeof *res);
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "cancel in redis: \"%s\" is not a lowercase "
                   "uuid", uuid ? uuid : "(null)");
  job_keys k;
  int rc = job_keys_make(&k, r, uuid);
  if (rc) return rc;
  /* Every board mirroring the job records it cancelled, not consumed. */
  msgpack_sbuffer how;
  msgpack_sbuffer_init(&how);
  jb_remote_outcome o = {.end = JB_END_CANCELLED};
  if ((rc = jb__remote_outcome_pack(&how, &o))) {
    msgpack_sbuffer_destroy(&how);
    return rc;
  }
  char ttl[24];
  snprintf(ttl, sizeof ttl, "%lld", (long long)JB__REMOTE_OUTCOME_TTL_MS);
  const char *keys[7] = {k.owned, k.listings, k.lm, k.claim, k.uniques,
                         k.unique, k.outcome};
  const char *args[5] = {uuid, force ? "1" : "", k.channel, how.data, ttl};
  size_t lens[5] = {strlen(uuid), force ? 1 : 0, strlen(k.channel), how.size,
                    strlen(ttl)};
  reply rep;
  rc = run(&rep, res, r, S_CANCEL, "cancel", uuid, JB__SYNC_CANCEL_NKEYS, keys,
           JB__SYNC_CANCEL_NARGS, args, lens);
  msgpack_sbuffer_destroy(&how);
  if (rc) return rc;
  memcpy(res->owner, rep.owner, sizeof res->owner);
  if (rep.ok) return JB_OK;
  if (strcmp(rep.reason, JB__SYNC_UNKNOWN_JOB) == 0)
    return jb__err(JB_ENOTFOUND, "job %s is not on the board (redis no "
                   "longer lists it)", uuid);
  if (strcmp(rep.reason, JB__SYNC_ALREADY_CLAIMED) == 0)
    return jb__err(JB_ECLAIMED, "job %s is claimed by %s (in redis): not "
                   "cancelled (force it to cancel a claimed job)", uuid,
                   rep.owner);
  return bad_reason(&rep, "cancel");
}

/* ----------------------------------------------------------- lost replies */

static int cmd(redisReply **out, jb__remote *r, int argc, const char **argv) {
  return jb__sync_command(out, r->conn, argc, argv, NULL);
}

static bool queued(const redisReply *q) {
  return q->type == REDIS_REPLY_STATUS && strcmp(q->str, "QUEUED") == 0;
}

/* The reads of jb__remote_read, in one transaction. */
#define N_READS 6

int jb__remote_read_reply(jb__remote_state *st, const redisReply *e,
                          const char *uuid) {
  if (e->type != REDIS_REPLY_ARRAY || e->elements != N_READS ||
      e->element[0]->type != REDIS_REPLY_INTEGER ||
      e->element[1]->type != REDIS_REPLY_INTEGER ||
      (e->element[2]->type != REDIS_REPLY_STRING &&
       e->element[2]->type != REDIS_REPLY_NIL) ||
      e->element[3]->type != REDIS_REPLY_ARRAY ||
      e->element[3]->elements != 2 ||
      e->element[4]->type != REDIS_REPLY_INTEGER ||
      (e->element[5]->type != REDIS_REPLY_STRING &&
       e->element[5]->type != REDIS_REPLY_NIL))
    return jb__err(JB_EIO, "redis: unexpected EXEC reply reading job %s",
                   uuid);
  st->listed = e->element[0]->integer == 1;
  st->trashed = e->element[1]->integer == 1;
  if (e->element[2]->type == REDIS_REPLY_STRING) {
    st->owned = true;
    copy_str(st->owner, sizeof st->owner, e->element[2]->str,
             e->element[2]->len);
  }
  const redisReply *id = e->element[3]->element[0],
                   *fence = e->element[3]->element[1];
  if (id->type == REDIS_REPLY_STRING)
    copy_str(st->claim, sizeof st->claim, id->str, id->len);
  if (fence->type == REDIS_REPLY_STRING)
    st->fence = strtoull(fence->str, NULL, 10);
  st->pttl_ms = e->element[4]->integer;
  if (e->element[5]->type == REDIS_REPLY_STRING) {
    char text[24];
    char *end;
    copy_str(text, sizeof text, e->element[5]->str, e->element[5]->len);
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0)
      return jb__err(JB_EIO, "redis: marker of job %s holds \"%s\", not a "
                     "sequence", uuid, text);
    st->posted = true;
    st->posted_sequence = n;
  }
  return JB_OK;
}

int jb__remote_read(jb__remote_state *st, jb__remote *r, const char *uuid) {
  memset(st, 0, sizeof *st);
  st->pttl_ms = -2;
  if (!uuid_ok(uuid))
    return jb__err(JB_EINVAL, "read from redis: \"%s\" is not a lowercase "
                   "uuid", uuid ? uuid : "(null)");
  job_keys k;
  int rc = job_keys_make(&k, r, uuid);
  if (rc) return rc;
  /* One transaction, so that the owner key and the claim record are of the
   * same moment. A connection lost in the middle fails the command that
   * met it (the server drops the half-made transaction with the
   * connection); nothing here is a write, so the caller just reads again. */
  const char *cmds[N_READS][5] = {
      {"HEXISTS", k.listings, uuid},
      {"HEXISTS", k.trash, uuid},
      {"GET", k.owned},
      {"HMGET", k.claim, "id", "fence"},
      {"PTTL", k.owned},
      {"GET", k.posted}};
  const int argcs[N_READS] = {3, 3, 2, 4, 2, 2};
  redisReply *q = NULL;
  const char *multi[] = {"MULTI"}, *exec[] = {"EXEC"}, *discard[] = {"DISCARD"};
  if ((rc = cmd(&q, r, 1, multi))) return rc;
  freeReplyObject(q);
  for (int i = 0; i < N_READS; i++) {
    if ((rc = cmd(&q, r, argcs[i], cmds[i]))) break;
    bool ok = queued(q);
    freeReplyObject(q);
    if (!ok) {
      rc = jb__err(JB_EIO, "redis: %s of job %s not queued in MULTI",
                   cmds[i][0], uuid);
      break;
    }
  }
  if (rc) {
    if (jb_sync_connected(r->conn) && cmd(&q, r, 1, discard) == JB_OK)
      freeReplyObject(q);
    return rc;
  }
  if ((rc = cmd(&q, r, 1, exec))) return rc;
  rc = jb__remote_read_reply(st, q, uuid);
  freeReplyObject(q);
  return rc;
}

int jb__remote_resolve_claim(jb__remote_state *st, jb__remote *r,
                             const char *uuid, const char *who,
                             const char *claim_id) {
  jb__remote_state local;
  if (st == NULL) st = &local;
  if (!who_ok(who) || claim_id == NULL || claim_id[0] == '\0')
    return jb__err(JB_EINVAL, "resolve claim: an owner and a claim id are "
                   "needed");
  int rc = jb__remote_read(st, r, uuid);
  if (rc) return rc;
  if (!st->listed || !st->owned) return JB__REMOTE_NOBODY;
  /* Both the name and the id: the name alone would take a newer claim
   * under the same name for ours. */
  if (strcmp(st->owner, who) == 0 && strcmp(st->claim, claim_id) == 0)
    return JB__REMOTE_HELD;
  return JB__REMOTE_OTHER;
}

int jb__remote_resolve_release(jb__remote_state *st, jb__remote *r,
                               jb__remote_release_op op, const char *uuid,
                               const char *who, const char *claim_id) {
  jb__remote_state local;
  if (st == NULL) st = &local;
  int held;
  if (claim_id == NULL || claim_id[0] == '\0') {
    /* A release by owner name (a claim this caller did not make): the
     * claim is "held" while the owner key names `who`. */
    int rc = jb__remote_read(st, r, uuid);
    if (rc) return rc;
    held = st->listed && st->owned && strcmp(st->owner, who) == 0
               ? JB__REMOTE_HELD
               : JB__REMOTE_OTHER;
  } else {
    held = jb__remote_resolve_claim(st, r, uuid, who, claim_id);
    if (held < 0) return held;
  }
  switch (op) {
  case JB__REMOTE_ABANDON:
    return held != JB__REMOTE_HELD;
  case JB__REMOTE_CONSUME:
    return !st->listed && !st->trashed;
  case JB__REMOTE_TRASH:
    return !st->listed && st->trashed;
  }
  return jb__err(JB_EINVAL, "resolve release: unknown operation %d", (int)op);
}

int jb__remote_resolve_post(jb__remote_state *st, jb__remote *r,
                            const char *uuid) {
  jb__remote_state local;
  if (st == NULL) st = &local;
  int rc = jb__remote_read(st, r, uuid);
  if (rc) return rc;
  return st->posted ? 1 : 0;
}
