/*
 * proc.c - who a process is, whether it is still there, and the host's
 * boot: what process-bound claims and entities stand on.
 *
 * A process is named by its pid and its start time (field 22 of
 * /proc/PID/stat: clock ticks after boot), so a pid the kernel has reused
 * for a new process does not pass for the old one. A process that has
 * exited but not been reaped yet (a zombie) counts as gone: it will never
 * act on a claim again.
 */
#include "base/util.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t jb__boottime_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Read /proc/PID/stat: state letter and start time. 1 if read, 0 if the
 * process does not exist, -1 on another error (errno set). */
static int read_stat(uint32_t pid, char *state, uint64_t *start) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%u/stat", (unsigned)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH ? 0 : -1;
  ssize_t n;
  do {
    n = read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  close(fd);
  if (n < 0) {
    errno = err;
    return err == ESRCH ? 0 : -1;
  }
  buf[n] = '\0';
  /* The command name (field 2) is in parentheses and may hold anything,
   * spaces and ')' included: fields go on after the last ')'. */
  char *p = strrchr(buf, ')');
  if (p == NULL || p[1] != ' ') {
    errno = EPROTO;
    return -1;
  }
  p += 2;
  *state = *p;
  /* After the state (field 3), skip to field 22. */
  for (int field = 3; field < 22; field++) {
    p = strchr(p, ' ');
    if (p == NULL) {
      errno = EPROTO;
      return -1;
    }
    p++;
  }
  *start = strtoull(p, NULL, 10);
  return 1;
}

static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static jb_proc_id self_id;
static unsigned self_gen = (unsigned)-1;

int jb__proc_self(jb_proc_id *out) {
  pthread_mutex_lock(&self_lock);
  unsigned gen = jb__fork_generation();
  int rc = JB_OK;
  if (self_gen != gen) {
    char state;
    uint64_t start;
    uint32_t pid = (uint32_t)getpid();
    int r = read_stat(pid, &state, &start);
    if (r == 1) {
      self_id = (jb_proc_id){pid, start};
      self_gen = gen;
    } else {
      rc = jb__err_errno(r < 0 ? errno : ENOENT, "reading /proc/self/stat");
    }
  }
  if (rc == JB_OK) *out = self_id;
  pthread_mutex_unlock(&self_lock);
  return rc;
}

int jb__proc_alive(const jb_proc_id *p) {
  char state;
  uint64_t start;
  int r = read_stat(p->pid, &state, &start);
  if (r == 0) {
    /* No /proc entry. With /proc mounted hidepid, another user's process
     * is hidden but there: kill(pid, 0) tells (EPERM: it exists). Its
     * start time cannot be checked then: counted alive, never reaped
     * wrongly. */
    if (kill((pid_t)p->pid, 0) == 0 || errno == EPERM) return 1;
    return 0;
  }
  if (r < 0) return 1; /* cannot tell: never take a live holder's claim */
  if (start != p->start) return 0; /* the pid was reused */
  return state != 'Z' && state != 'X';
}

int jb__boot_id(uint8_t out[16]) {
  char text[64] = {0};
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return jb__err_errno(errno, "reading the boot id");
  ssize_t n = read(fd, text, sizeof text - 1);
  int err = errno;
  close(fd);
  if (n < 36) return jb__err_errno(n < 0 ? err : EPROTO, "reading the boot id");
  text[36] = '\0';
  return jb__uuid_parse(out, text, "boot id");
}
