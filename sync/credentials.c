/*
 * credentials.c - the board's Redis password, kept out of the board's
 * data file: in `sync.credentials` in the board
 * directory, mode 0600, readable by its owner only.
 *
 * The file holds the password and one "\n" after it; reading drops one
 * final "\n" (so a file made by `echo PASSWORD > sync.credentials` reads
 * the same, and a password that ends in "\n" survives a round trip). It
 * is replaced whole: a new file made with O_EXCL and mode 0600 (fchmod'ed
 * too, whatever the umask), written, fsync'ed, renamed over the old one,
 * then the directory fsync'ed; a crash leaves the old file or the new one,
 * never a part. Like ssh's keys and libpq's ~/.pgpass, a file that others
 * than its owner may read or write is refused rather than used, and it is
 * opened with O_NOFOLLOW: a symlink put in its place is not followed.
 */
#include "conn.h"
#include "core/sync_hook.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest password accepted from the file, in bytes (Redis's own limit is
 * far larger; a longer file is not a password written by us). */
#define CRED_MAX 4096

static char *cred_path(const char *dir) {
  char *p = NULL;
  if (asprintf(&p, "%s/" JB__SYNC_CRED_FILE, dir) < 0) return NULL;
  return p;
}

bool jb__sync_cred_exists(const char *dir, bool *mine) {
  char *p = cred_path(dir);
  struct stat sb;
  bool yes = p != NULL && lstat(p, &sb) == 0;
  free(p);
  if (mine) *mine = yes && sb.st_uid == geteuid();
  return yes;
}

/* Set the message about the file at `p` and return `code`. */
__attribute__((format(printf, 3, 4)))
static int bad_file(int code, const char *p, const char *fmt, ...) {
  char what[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return jb__err(code, "redis password file %s: %s", p, what);
}

int jb__sync_cred_read(char **password, const char *dir) {
  *password = NULL;
  char *p = cred_path(dir);
  if (p == NULL) return jb__err(JB_ENOMEM, "out of memory");
  int rc = JB_OK;
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT) goto out;
    if (e == ELOOP) {
      rc = bad_file(JB_EINVAL, p, "a symbolic link, which is not followed");
      goto out;
    }
    rc = bad_file(JB_EINVAL, p, "cannot be read (%s): it belongs to the user "
                  "who gave the password; run as that user, or give the "
                  "password in $JOBBOARD_REDIS_PASSWORD or in the URL",
                  strerror(e));
    goto out;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    rc = bad_file(JB_EIO, p, "fstat: %s", strerror(errno));
    goto out;
  }
  if (!S_ISREG(sb.st_mode)) {
    rc = bad_file(JB_EINVAL, p, "not a regular file");
    goto out;
  }
  if (sb.st_mode & 077) {
    rc = bad_file(JB_EINVAL, p, "others than its owner may read or write "
                  "it (mode %04o): it is not used; chmod 600 it (and change "
                  "the password if others read it)",
                  (unsigned)(sb.st_mode & 07777));
    goto out;
  }
  char buf[CRED_MAX + 2];
  size_t len = 0;
  for (;;) {
    ssize_t n = read(fd, buf + len, sizeof buf - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      rc = bad_file(JB_EIO, p, "read: %s", strerror(errno));
      goto out;
    }
    if (n == 0) break;
    len += (size_t)n;
    if (len == sizeof buf) break;
  }
  if (len > 0 && buf[len - 1] == '\n') len--;
  if (len > CRED_MAX) {
    rc = bad_file(JB_EINVAL, p, "longer than %d bytes", CRED_MAX);
  } else if (len == 0) {
    rc = bad_file(JB_EINVAL, p, "empty (no password)");
  } else if (memchr(buf, '\0', len) != NULL) {
    rc = bad_file(JB_EINVAL, p, "holds a NUL byte");
  } else if ((*password = strndup(buf, len)) == NULL) {
    rc = jb__err(JB_ENOMEM, "out of memory reading %s", p);
  }
out:
  if (fd >= 0) close(fd);
  free(p);
  return rc;
}

/* write(2) all of buf. */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int jb__sync_cred_write(const char *dir, const char *password, uid_t owner) {
  char *p = cred_path(dir), *tmp = NULL;
  if (p == NULL || asprintf(&tmp, "%s.XXXXXX", p) < 0) {
    free(p);
    return jb__err(JB_ENOMEM, "out of memory");
  }
  int rc = JB_OK;
  /* mkostemp: O_CREAT|O_EXCL, mode 0600 before the umask. */
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    rc = bad_file(JB_EIO, p, "cannot create %s: %s", tmp, strerror(errno));
    goto out;
  }
  const char *step = NULL;
  if (fchmod(fd, 0600) != 0) step = "fchmod";
  else if (owner != geteuid() && fchown(fd, owner, (gid_t)-1) != 0)
    step = "fchown";
  else if (write_all(fd, password, strlen(password)) != 0 ||
           write_all(fd, "\n", 1) != 0)
    step = "write";
  else if (fsync(fd) != 0) step = "fsync";
  if (close(fd) != 0 && step == NULL) step = "close";
  if (step == NULL && rename(tmp, p) != 0) step = "rename";
  if (step != NULL) {
    rc = bad_file(JB_EIO, p, "%s: %s", step, strerror(errno));
    unlink(tmp);
    goto out;
  }
  /* The rename itself is durable once the directory is flushed. */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || fsync(dfd) != 0)
    rc = bad_file(JB_EIO, p, "fsync of the directory: %s", strerror(errno));
  if (dfd >= 0) close(dfd);
out:
  free(tmp);
  free(p);
  return rc;
}
