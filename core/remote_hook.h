/*
 * remote_hook.h - the hook through which libjbsync decides Redis-decided jobs
 * (DESIGN.md section 6). Not API: like errmsg.h, these are internals that
 * libjobboard exports (default visibility, "jb__" names, absent from
 * jobboard.h) for libjbsync, which installs the hook
 * (jb_sync_attach) and marks the jobs it publishes. The core never
 * includes hiredis or anything of sync/.
 *
 * Each operation gets the job's uuid text and the caller's owner name,
 * and returns JB_OK when Redis decided in the caller's favour, or a JB_E*
 * code with the message set (JB_EOFFLINE when Redis cannot be reached or
 * the reply was lost; JB_ECLAIMED / JB_ENOTOWNER / JB_ENOTFOUND when Redis
 * refused). Only after JB_OK does the core record the outcome locally,
 * in one write transaction; on anything else nothing local changes.
 */
#ifndef JOBBOARD_REMOTE_HOOK_H
#define JOBBOARD_REMOTE_HOOK_H

#include "jobboard.h"

#include <stdint.h>

typedef struct jb_remote_ops {
  /* Claim for `who`, expiring lease_ms from now (0: never). *fence: the
   * Redis fencing token of the claim (0 if none). */
  int (*claim)(void *ctx, const char *uuid, const char *who, int64_t lease_ms,
               uint64_t *fence);
  int (*abandon)(void *ctx, const char *uuid, const char *who);
  int (*consume)(void *ctx, const char *uuid, const char *who);
  int (*trash)(void *ctx, const char *uuid, const char *who);
  /* Set the claim's expiry to lease_ms (> 0) from now. */
  int (*extend)(void *ctx, const char *uuid, const char *who,
                int64_t lease_ms);
} jb_remote_ops;

/* Install (ops non-NULL) or remove (NULL) the hook of handle `b`. The ops
 * and ctx must outlive the handle or the next call. Not thread-safe
 * against operations running on `b` at the same time. */
JB_EXTERN void jb__board_set_remote(jb_board *b, const jb_remote_ops *ops,
                                    void *ctx);

/* Mark job `uuid` Redis-decided (one write transaction; the posting bytes
 * stay as they are). Errors: JB_EINVAL (bad uuid), JB_ENOTFOUND. */
JB_EXTERN int jb__board_mark_remote(jb_board *b, const char *uuid);

#endif
