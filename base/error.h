/*
 * error.h - setting the calling thread's jb_errmsg() text. Not API.
 *
 * The two functions are internals that libjobboard exports (default
 * visibility, "jb__" names, absent from jobboard.h): libjbsync is a separate
 * shared library layered on libjobboard, and its failures must leave their
 * message where jb_errmsg() reads it, so that a caller mixing board and
 * Redis calls has one message to print, not two to choose from. libjbsync
 * reaches them through core/sync_hook.h.
 */
#ifndef JOBBOARD_BASE_ERROR_H
#define JOBBOARD_BASE_ERROR_H

#include "jobboard.h"

/* Set this thread's message (printf-style) and return `code`. */
JB_EXTERN int jb__err(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Set the message from errno `err` for an operation on `what`, choosing
 * JB_EFULL for ENOSPC/EDQUOT, JB_ENOMEM for ENOMEM, JB_EIO otherwise. */
JB_EXTERN int jb__err_errno(int err, const char *what);

#endif
