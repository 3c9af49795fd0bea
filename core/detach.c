/*
 * detach.c - a synced board detached from Redis (sync_hook.h,
 * jb__board_detach): the board's replicator lock taken for the write, so
 * that no replicator is elected while the board's jobs change hands
 * (sync/replicator.c elects through the same flock of `sync.lock`); the
 * write itself is store/detach.c's one transaction.
 */
#include "internal.h"
#include "sync_hook.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(jb_detach_result) == sizeof(jb_store_detach_result),
               "sync_hook.h and store.h count a detach alike");

int jb__board_detach(jb_board *b, const char *note, jb_detach_result *out) {
  jb_detach_result none;
  if (out == NULL) out = &none;
  memset(out, 0, sizeof *out);
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (note != NULL && strlen(note) > 1024)
    return jb__err(JB_EINVAL, "detach: the note is longer than 1024 bytes");
  if (b->readonly)
    return jb__err(JB_EREADONLY, "board %s is open read-only: it cannot be "
                   "detached", b->path);
  char lp[4096];
  if (snprintf(lp, sizeof lp, "%s/sync.lock", b->path) >= (int)sizeof lp)
    return jb__err(JB_EINVAL, "board path too long");
  int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return jb__err_errno(errno, lp);
  /* A replicator standing by holds the lock for a moment each second
   * (sync/replicator.c): tried for a fifth of a second before refusing. */
  int locked = -1, e = 0;
  for (int i = 0; i < 20 && locked != 0; i++) {
    if ((locked = flock(fd, LOCK_EX | LOCK_NB)) == 0) break;
    if ((e = errno) != EWOULDBLOCK) break;
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (locked != 0) {
    close(fd);
    if (e == EWOULDBLOCK)
      return jb__err(JB_ECLAIMED, "board %s: its replicator is running "
                     "(it holds %s): stop it first", b->path, lp);
    return jb__err_errno(e, lp);
  }
  jb_store_detach_result r;
  int rc = jb__store_detach(b->store, jb__now_us(), note, &r);
  if (rc == JB_OK) {
    out->jobs = r.jobs;
    out->released = r.released;
    out->kept = r.kept;
    out->letters = r.letters;
  }
  flock(fd, LOCK_UN);
  close(fd);
  return rc;
}
