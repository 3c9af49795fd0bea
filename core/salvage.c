/*
 * salvage.c - jb_board_salvage: copy what a damaged board still holds
 * into a new board (include/jobboard.h; the reading is store/salvage.c's).
 * Here: the checks of the two paths, and the new board's opening.
 */
#include "internal.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* `dst` must not exist or be an empty directory. */
static int check_dst(const char *dst) {
  struct stat st;
  if (stat(dst, &st) != 0) {
    if (errno == ENOENT) return JB_OK;
    return jb__err_errno(errno, dst);
  }
  if (!S_ISDIR(st.st_mode))
    return jb__err(JB_EINVAL, "salvage: %s exists and is not a directory: "
                   "give a new directory for the salvaged board", dst);
  DIR *d = opendir(dst);
  if (d == NULL) return jb__err_errno(errno, dst);
  struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(d)) != NULL)
    empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
  closedir(d);
  if (!empty)
    return jb__err(JB_EINVAL, "salvage: %s is not empty: give a new (or "
                   "empty) directory for the salvaged board", dst);
  return JB_OK;
}

typedef struct {
  const char *dst;
  jb_board *board;
} dst_ctx;

static jb_store *open_dst(void *arg, int *rc) {
  dst_ctx *d = arg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  *rc = jb_board_open(&d->board, d->dst, &o);
  return *rc == JB_OK ? d->board->store : NULL;
}

int jb_board_salvage(jb_salvage_stats *stats, const char *src,
                     const char *dst, jb_salvage_cb cb, void *payload) {
  jb_salvage_stats local;
  if (stats == NULL) stats = &local;
  memset(stats, 0, sizeof *stats);
  if (src == NULL || dst == NULL)
    return jb__err(JB_EINVAL, "salvage: NULL source or destination");
  struct stat st;
  if (stat(src, &st) != 0) {
    if (errno == ENOENT)
      return jb__err(JB_ENOTFOUND, "salvage: board directory %s does not "
                     "exist", src);
    return jb__err_errno(errno, src);
  }
  if (!S_ISDIR(st.st_mode))
    return jb__err(JB_EINVAL, "salvage: %s is not a directory", src);
  int rc = check_dst(dst);
  if (rc != JB_OK) return rc;
  dst_ctx d = {dst, NULL};
  rc = jb__salvage(src, stats, cb, payload, open_dst, &d);
  jb_board_close(d.board);
  return rc;
}
