/*
 * fuzz_decode.h - the posting decoder's contract, as the fuzz targets that
 * reach it check it (fuzz_posting.c, fuzz_redis.c): decode s[0..len) into
 * *job (zeroed by the caller); the answer is JB_OK or JB_ECORRUPT with a
 * reason, never JB_ENOMEM for inputs this small (codec/mpscan.h).
 */
#ifndef JOBBOARD_FUZZ_DECODE_H
#define JOBBOARD_FUZZ_DECODE_H

#include "fuzz.h"

#include "codec/posting.h"

static inline int fuzz_decode(jb_job *job, const void *s, size_t len) {
  char why[200] = "";
  int rc = jb__posting_decode(job, s, len, why, sizeof why);
  FUZZ_CHECK(rc == JB_OK || rc == JB_ECORRUPT, "posting of %zu bytes: %s (%s)",
             len, jb_strerror(rc), jb_errmsg());
  FUZZ_CHECK(rc == JB_OK || why[0] != '\0', "corrupt posting without a reason");
  return rc;
}

#endif
