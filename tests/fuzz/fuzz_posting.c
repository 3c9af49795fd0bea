/*
 * fuzz_posting.c - the posting decoder (codec/posting.c) on any bytes: a
 * posting as it comes from the board's LMDB records or from Redis (a job
 * listed by taskflow or another jobboard), the details map as
 * jb__details_check judges it for jb_job_post, and the oslo datetime.
 *
 * Properties beyond "no crash, no leak, no UB":
 *  - the decoder says a posting is good (JB_OK) or corrupt (JB_ECORRUPT),
 *    never "out of memory" for an input this small: that would make one
 *    bad listing in Redis stop the whole mirror instead of being
 *    quarantined (see DESIGN-NOTES "Fuzzing");
 *  - a posting it accepts, encoded again by jb__posting_prefix and
 *    jb__posting_seq, decodes to the same job;
 *  - the details check says good or EINVAL, never ENOMEM;
 *  - a datetime it accepts encodes and decodes to the same instant.
 */
#include "fuzz_decode.h"

#include <msgpack.h>
#include <string.h>

/* 9999-12-31T23:59:59.999999Z: the last instant the datetime holds. */
#define LAST_US INT64_C(253402300799999999)

static void check_roundtrip(const jb_job *a) {
  jb_posting_fields f = {
      .uuid = a->uuid,
      .name = a->name,
      .name_len = strlen(a->name),
      .priority = a->priority,
      .created_us = a->created_us,
      .details = a->details.data,
      .details_len = a->details.len,
      .book_name = a->book_name,
      .book_uuid = a->book_uuid};
  jb_buf out = {0};
  /* A book uuid the encoder takes whole (36 bytes) only. */
  if (a->book_uuid && strlen(a->book_uuid) != 36) f.book_name = NULL;
  int rc = jb__posting_prefix(&out, &f);
  if (rc == JB_OK) {
    uint8_t seq[JB_SEQ_MAXLEN];
    size_t n = jb__posting_seq(seq, a->sequence);
    rc = jb__buf_append(&out, seq, n);
  }
  FUZZ_CHECK(rc == JB_OK, "re-encoding an accepted posting: %s", jb_errmsg());
  jb_job b;
  memset(&b, 0, sizeof b);
  char why[200] = "";
  rc = jb__posting_decode(&b, out.data, out.len, why, sizeof why);
  FUZZ_CHECK(rc == JB_OK || a->created_us > LAST_US,
             "re-encoded posting does not decode: %d %s", rc, why);
  if (rc == JB_OK) {
    FUZZ_CHECK(memcmp(a->uuid, b.uuid, 36) == 0, "uuid changed");
    FUZZ_CHECK(strcmp(a->name, b.name) == 0, "name changed");
    FUZZ_CHECK(a->priority == b.priority, "priority changed");
    FUZZ_CHECK(a->created_us == b.created_us, "created %lld -> %lld",
               (long long)a->created_us, (long long)b.created_us);
    FUZZ_CHECK(a->sequence == b.sequence, "sequence changed");
    FUZZ_CHECK(a->details.len == b.details.len &&
                   memcmp(a->details.data, b.details.data, a->details.len) == 0,
               "details changed");
    if (f.book_name)
      FUZZ_CHECK(b.book_name && strcmp(a->book_name, b.book_name) == 0 &&
                     strcmp(a->book_uuid, b.book_uuid) == 0,
                 "book changed");
  }
  jb__job_clear(&b);
  jb__buf_free(&out);
}

/* Details jb_job_post accepts (jb__details_check as prepare() calls it)
 * make a posting that reads back: found otherwise by this target, a map
 * 32 deep was stored and then read as "out of memory" forever. */
static void check_details_posted(const uint8_t *data, size_t size) {
  jb_posting_fields f = {
      .uuid = "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f",
      .name = "fuzz",
      .name_len = 4,
      .priority = JB_PRIORITY_NORMAL,
      .created_us = 1,
      .details = data,
      .details_len = size};
  jb_buf out = {0};
  int rc = jb__posting_prefix(&out, &f);
  uint8_t seq[JB_SEQ_MAXLEN];
  if (rc == JB_OK) rc = jb__buf_append(&out, seq, jb__posting_seq(seq, 7));
  FUZZ_CHECK(rc == JB_OK, "encoding: %s", jb_errmsg());
  jb_job job;
  memset(&job, 0, sizeof job);
  char why[200] = "";
  rc = jb__posting_decode(&job, out.data, out.len, why, sizeof why);
  FUZZ_CHECK(rc == JB_OK, "a posting with accepted details does not decode: "
             "%s %s", jb_strerror(rc), why);
  jb__job_clear(&job);
  jb__buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  jb_job job;
  memset(&job, 0, sizeof job);
  int rc = fuzz_decode(&job, data, size);
  if (rc == JB_OK) {
    FUZZ_CHECK(job.sequence > 0, "sequence 0 accepted");
    FUZZ_CHECK(job.name != NULL, "no name");
    /* The details are one map (what jb_job_details promises). */
    FUZZ_CHECK(jb__details_check(job.details.data, job.details.len,
                                 JB_MP_MAX_DEPTH,
                                 "details") == JB_OK,
               "decoded details are not one map: %s", jb_errmsg());
    check_roundtrip(&job);
  }
  jb__job_clear(&job);

  rc = jb__details_check(size ? data : NULL, size, JB_DETAILS_MAX_DEPTH,
                         "details");
  FUZZ_CHECK(rc == JB_OK || rc == JB_EINVAL, "details of %zu bytes: %s (%s)",
             size, jb_strerror(rc), jb_errmsg());
  if (rc == JB_OK && size > 0) check_details_posted(data, size);

  /* Where the scan lets bytes through, msgpack-c reads the same value. */
  size_t end;
  if (jb__mp_scan(data, size, &end, JB_MP_MAX_DEPTH) == JB_MP_OK) {
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    msgpack_unpack_return r = msgpack_unpack_next(&u, (const char *)data, size, &off);
    FUZZ_CHECK(r == MSGPACK_UNPACK_SUCCESS && off == end,
               "scan says %zu bytes, msgpack-c %d at %zu", end, (int)r, off);
    msgpack_unpacked_destroy(&u);
  }

  int64_t us;
  if (jb__datetime_decode(&us, data, size) == JB_OK) {
    jb_buf dt = {0};
    FUZZ_CHECK(jb__datetime_encode(&dt, us) == JB_OK, "time %lld",
               (long long)us);
    int64_t again;
    rc = jb__datetime_decode(&again, dt.data, dt.len);
    FUZZ_CHECK((rc == JB_OK && again == us) || us > LAST_US,
               "datetime %lld does not come back", (long long)us);
    jb__buf_free(&dt);
  }
  return 0;
}
