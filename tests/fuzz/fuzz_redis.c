/*
 * fuzz_redis.c - what libjbsync does with Redis's replies, on any bytes
 * read as the RESP stream of a connection: hiredis's own reader
 * (redisReaderFeed/GetReply, as redisCommand uses it) turns them into
 * redisReply trees, and each tree is handed to every reply handler:
 *  - a script's reply (sync/remote.c jb__remote_parse_reply);
 *  - the EXEC reply of the resolve reads (jb__remote_read_reply);
 *  - a notice on NS:notices (replicator.c jb__sync_notice_parse);
 *  - an owner key's value (jb__sync_owner_text): the owner it gives must
 *    be one the board takes (1..JB_WHO_MAX bytes of UTF-8), else one bad
 *    owner key in Redis would stop the mirror;
 *  - a listing (HGET) or all listings (HGETALL): the posting as the
 *    mirror reads it (jb__remote_posting_prefix, jb__posting_decode,
 *    which must say good or corrupt, never out of memory);
 *  - INFO's redis_version (conn.c jb__sync_info_version);
 *  - an outcome record (NS:<uuid>.outcome, jb__remote_outcome_parse):
 *    its result and reason must lie inside the value read, its owner fit.
 * RESP declaring an array far longer than the input is skipped: hiredis
 * 0.14 allocates the whole array up front (its own matter, and the server
 * is the one we chose), which is not what is under test.
 */
#include "fuzz_decode.h"

#include "sync/remote.h"

#include <string.h>

/* Arrays in the RESP are at most as long as the input. */
static bool sane_arrays(const uint8_t *d, size_t size) {
  for (size_t i = 0; i < size; i++) {
    if (d[i] != '*' || (i > 0 && d[i - 1] != '\n')) continue;
    uint64_t n = 0;
    for (size_t k = i + 1; k < size && d[k] >= '0' && d[k] <= '9'; k++) {
      n = n * 10 + (d[k] - '0');
      if (n > size) return false;
    }
  }
  return true;
}

static void posting(const char *s, size_t len) {
  size_t plen;
  if (jb__remote_posting_prefix(&plen, s, len) == JB_OK)
    FUZZ_CHECK(plen < len, "prefix of %zu bytes is %zu", len, plen);
  jb_job job;
  memset(&job, 0, sizeof job);
  fuzz_decode(&job, s, len);
  jb__job_clear(&job);
}

static void handle(const redisReply *r) {
  jb__remote_reply rep;
  if (jb__remote_parse_reply(&rep, r, "fuzz") == JB_OK)
    FUZZ_CHECK(rep.ok || rep.reason[0] != '\0', "refusal without reason");

  jb__remote_state st;
  memset(&st, 0, sizeof st);
  st.pttl_ms = -2;
  (void)jb__remote_read_reply(&st, r,
                              "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f");

  char uuid[JB_UUID_STRLEN];
  bool post;
  uint64_t num;
  if (jb__sync_notice_parse(uuid, &post, &num, r))
    FUZZ_CHECK(jb__sync_is_uuid(uuid, strlen(uuid)), "notice uuid %s", uuid);

  char version[64];
  if (jb__sync_info_version(version, sizeof version, r))
    (void)jb__sync_version_at_least(version, 2, 6);

  if (r->type == REDIS_REPLY_STRING) {
    if (r->len > 0) {
      char owner[JB_WHO_MAX + 1];
      jb__sync_owner_text(owner, r->str, r->len);
      size_t n = strlen(owner);
      FUZZ_CHECK(n > 0 && n <= JB_WHO_MAX && jb__who_check(owner, NULL) ==
                                                 JB_OK,
                 "owner key of %zu bytes gives owner \"%s\": %s", r->len,
                 owner, jb_errmsg());
    }
    posting(r->str, r->len);
    jb_remote_outcome o;
    char who[JB_WHO_MAX + 1];
    if (jb__remote_outcome_parse(&o, who, r->str, r->len) == JB_OK) {
      const char *lo = r->str, *hi = r->str + r->len;
      FUZZ_CHECK(o.end != 0, "outcome without an ending");
      FUZZ_CHECK(!o.result || ((const char *)o.result >= lo &&
                               (const char *)o.result + o.result_len <= hi),
                 "outcome result outside the value");
      FUZZ_CHECK(!o.reason ||
                     (o.reason >= lo && o.reason + o.reason_len <= hi),
                 "outcome reason outside the value");
      FUZZ_CHECK(!o.owner || strlen(o.owner) <= JB_WHO_MAX,
                 "outcome owner too long");
    }
  }
  if (r->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
      const redisReply *f = r->element[i], *v = r->element[i + 1];
      if (f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
          jb__sync_is_uuid(f->str, f->len))
        posting(v->str, v->len);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!sane_arrays(data, size)) return 0;
  redisReader *rd = redisReaderCreate();
  if (rd == NULL) return 0;
  if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
    void *reply = NULL;
    while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
      handle(reply);
      freeReplyObject(reply);
      reply = NULL;
    }
  }
  redisReaderFree(rd);
  return 0;
}
