/*
 * error.c - status codes and the per-thread message.
 *
 * The message is per thread because threads share a board handle: thread
 * A's failure must not overwrite what thread B is about to print.
 */
#include "base/util.h"
#include "base/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char errmsg[1024];

const char *jb_strerror(int code) {
  switch (code) {
  case JB_OK: return "JB_OK: success";
  case JB_ENOTFOUND: return "JB_ENOTFOUND: not found";
  case JB_ECLAIMED: return "JB_ECLAIMED: job already claimed";
  case JB_ENOTOWNER: return "JB_ENOTOWNER: not the job's owner";
  case JB_EINVAL: return "JB_EINVAL: invalid argument";
  case JB_ETIMEDOUT: return "JB_ETIMEDOUT: timed out";
  case JB_EOFFLINE: return "JB_EOFFLINE: backend unavailable";
  case JB_ECORRUPT: return "JB_ECORRUPT: stored data is corrupt or not a board";
  case JB_EFULL: return "JB_EFULL: no space left for the board";
  case JB_EIO: return "JB_EIO: input/output error";
  case JB_ENOMEM: return "JB_ENOMEM: out of memory";
  case JB_EVERSION: return "JB_EVERSION: board written by a newer jobboard";
  case JB_EINTERRUPTED: return "JB_EINTERRUPTED: the wait was interrupted";
  case JB_ETRIMMED: return "JB_ETRIMMED: change log trimmed past the sequence";
  case JB_EEXISTS: return "JB_EEXISTS: a live job holds the unique key";
  case JB_ENOTDUE: return "JB_ENOTDUE: the job is not due yet";
  case JB_EREADONLY: return "JB_EREADONLY: the board is read-only here";
  default: return "JB_E?: unknown error code";
  }
}

const char *jb_errmsg(void) {
  return errmsg[0] ? errmsg : "no error recorded on this thread";
}

int jb__err(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg, sizeof errmsg, fmt, ap);
  va_end(ap);
  return code;
}

int jb__err_errno(int err, const char *what) {
  char buf[256];
  /* GNU strerror_r returns the text (maybe not in buf). */
  const char *text = strerror_r(err, buf, sizeof buf);
  int code = JB_EIO;
  if (err == ENOSPC || err == EDQUOT)
    code = JB_EFULL;
  else if (err == ENOMEM)
    code = JB_ENOMEM;
  return jb__err(code, "%s: %s", what, text);
}
