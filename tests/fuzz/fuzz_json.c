/*
 * fuzz_json.c - the CLI's JSON <-> msgpack mapping (tools/json.c) on any
 * bytes, read three ways:
 *  - as JSON text, the way `post --details` and `consume --result` read it:
 *    an object that maps to msgpack maps back to an equal JSON value
 *    (json.h: the mapping is exact), and the library takes the map as
 *    details (jb_post_check);
 *  - as msgpack, the way `show`/`list` print details and entity meta:
 *    whatever decodes prints as JSON that jansson reads back, and of a
 *    size linear in the input;
 *  - as a posting (from Redis), decoded by the core and printed whole by
 *    cli_job_to_json, as `list` prints a job mirrored from Redis.
 */
#include "fuzz.h"

#include "codec/posting.h"
#include "tools/json.h"

#include <string.h>

static void json_side(const uint8_t *data, size_t size) {
  json_error_t je;
  json_t *v = json_loadb((const char *)data, size,
                         JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                             JSON_ALLOW_NUL,
                         &je);
  if (v == NULL || !json_is_object(v)) {
    json_decref(v);
    return;
  }
  char *mp = NULL;
  size_t len = 0;
  char err[160];
  if (cli_json_to_msgpack(&mp, &len, v, err, sizeof err) == 0) {
    FUZZ_CHECK(mp != NULL && len > 0, "empty encoding");
    jb_post post = JB_POST_INIT;
    post.name = "fuzz";
    post.details = mp;
    post.details_len = len;
    /* jb_post_check also bounds the whole posting: only what fits. */
    int rc = jb_post_check(&post, 0);
    FUZZ_CHECK(rc == JB_OK || (rc == JB_EINVAL && len > 1024 * 1024 - 512),
               "details the CLI made are refused: %s", jb_errmsg());
    json_t *back = cli_msgpack_to_json(mp, len);
    FUZZ_CHECK(back != NULL, "msgpack the CLI made does not decode");
    FUZZ_CHECK(json_equal(v, back), "JSON -> msgpack -> JSON changed it");
    json_decref(back);
  } else {
    FUZZ_CHECK(err[0] != '\0', "refused without a reason");
  }
  free(mp);
  json_decref(v);
}

static void msgpack_side(const uint8_t *data, size_t size) {
  /* The CLI prints only what the library checked (details re-encoded by
   * the decoder, meta and results by jb__details_check): bytes that pass
   * its scan (codec/mpscan.h). */
  size_t end;
  if (jb__mp_scan(data, size, &end, JB_MP_MAX_DEPTH) != JB_MP_OK) return;
  json_t *v = cli_msgpack_to_json(data, size);
  if (v == NULL) return;
  char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  FUZZ_CHECK(text != NULL, "decoded msgpack does not print");
  /* Linear in the input: keys that are maps once printed a text that
   * doubled with each level of nesting (tools/json.c, key_text). */
  FUZZ_CHECK(strlen(text) <= 32 * size + 4096, "%zu bytes print as %zu",
             size, strlen(text));
  json_error_t je;
  json_t *again = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  FUZZ_CHECK(again != NULL, "printed JSON does not read back: %s: %s",
             je.text, text);
  json_decref(again);
  free(text);
  json_decref(v);
}

static void posting_side(const uint8_t *data, size_t size) {
  jb_job job;
  memset(&job, 0, sizeof job);
  char why[200];
  uint8_t raw[16];
  /* As the board takes it (jb__job_load, the mirror's judge_posting): a
   * posting whose uuid is not uuid text never becomes a job. */
  if (jb__posting_decode(&job, data, size, why, sizeof why) == JB_OK &&
      jb__uuid_parse(raw, job.uuid, "uuid") == JB_OK) {
    jb__uuid_format(job.uuid, raw);
    json_t *j = cli_job_to_json(&job);
    FUZZ_CHECK(j != NULL, "a decoded job does not print");
    char *text = json_dumps(j, JSON_COMPACT);
    FUZZ_CHECK(text != NULL, "a decoded job does not print");
    free(text);
    json_decref(j);
  }
  jb__job_clear(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_side(data, size);
  msgpack_side(data, size);
  posting_side(data, size);
  return 0;
}
