/*
 * posting.h - the posting codec: a job's immutable description, encoded as
 * taskflow's Redis jobboard encodes it (docs/DESIGN-NOTES.md, "Redis keys
 * and encodings"), so that replication can copy the bytes unchanged.
 *
 * Layout (a msgpack map, entries in this order):
 *   uuid (str 36), name (str), priority (str, upper case), created_on (ext
 *   type 1: a 7-entry map of naive UTC fields), details (map), [book (map
 *   {name, uuid})], sequence (positive int, always last).
 *
 * The sequence is assigned inside the write transaction, so a posting is
 * built in two steps: everything up to and including the "sequence" key
 * outside the transaction (jb__posting_prefix), then the integer inside it
 * (jb__posting_seq), which keeps the writer lock held for a memcpy only.
 *
 * The decoder stands alone (no LMDB) so that it can be fuzzed.
 */
#ifndef JOBBOARD_POSTING_H
#define JOBBOARD_POSTING_H

#include "base/util.h"
#include "codec/job.h"
#include "codec/mpscan.h"

/* The oslo_serialization ext type of a datetime. */
#define JB_EXT_DATETIME 1
/* The largest encoding of the sequence integer (0xcf + 8 bytes). */
#define JB_SEQ_MAXLEN 9

typedef struct {
  const char *uuid; /* 36 chars, lowercase */
  const char *name;
  size_t name_len;
  jb_priority priority;
  int64_t created_us;
  const void *details; /* a validated msgpack map */
  size_t details_len;
  const char *book_name; /* NULL, or both set */
  const char *book_uuid;
} jb_posting_fields;

/* Append the posting up to and including the "sequence" key to `out`. */
int jb__posting_prefix(jb_buf *out, const jb_posting_fields *f);

/* Encode `seq` as msgpack uint in its smallest form; returns its length. */
size_t jb__posting_seq(uint8_t out[JB_SEQ_MAXLEN], uint64_t seq);

/* Check that d[0..len) is exactly one msgpack map nested at most
 * max_depth containers deep (itself included; see mpscan.h). NULL/0 is
 * accepted (the caller substitutes the empty map). JB_EINVAL with a
 * message naming `field`, or JB_ENOMEM. */
int jb__details_check(const void *d, size_t len, int max_depth,
                      const char *field);

/* How deep a posting's details may nest: the posting map holds them, and
 * msgpack-c reads at most JB_MP_MAX_DEPTH (mpscan.h) levels in all. */
#define JB_DETAILS_MAX_DEPTH (JB_MP_MAX_DEPTH - 1)

/* Decode a posting into the fields of `job` (name, priority, created,
 * details, book, sequence, uuid text). On failure returns JB_ECORRUPT and
 * writes the reason (no job prefix) into why[0..whylen). */
int jb__posting_decode(jb_job *job, const void *bytes, size_t len, char *why,
                       size_t whylen);

/* Encode / decode the oslo datetime ext payload (the 7-entry map). */
int jb__datetime_encode(jb_buf *out, int64_t us);
int jb__datetime_decode(int64_t *us, const void *payload, size_t len);

#endif
