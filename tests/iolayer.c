/*
 * iolayer.c - the file-system layer of the power-loss and I/O-fault tests
 * (see iolayer.h). What liblmdb 0.9.24 calls on Linux, read from its
 * mdb.c and confirmed by the record matching the file (test_powerloss):
 * data pages with pwrite (one page) or lseek + writev (a run of pages);
 * the meta page with pwrite, in durability full on a second descriptor
 * opened O_WRONLY | O_DSYNC; flushes with fdatasync (fsync where it
 * distrusts fdatasync: ext3/4 on kernels before 3.6). pwritev and write
 * are covered too in case another build of LMDB uses them; ftruncate on a
 * followed file is refused loudly, since nothing here models it.
 */
#undef _FORTIFY_SOURCE
#include "iolayer.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* ----------------------------------------------------- the real calls */

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*close_fn)(int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef int (*sync_fn)(int);
typedef int (*truncate_fn)(int, off_t);
typedef off_t (*lseek_fn)(int, off_t, int);

static struct {
  open_fn open, open64;
  openat_fn openat, openat64;
  close_fn close;
  write_fn write;
  pwrite_fn pwrite, pwrite64;
  writev_fn writev;
  pwritev_fn pwritev, pwritev64;
  sync_fn fsync, fdatasync;
  truncate_fn ftruncate, ftruncate64;
  lseek_fn lseek;
} real;

static void *next_sym(const char *name) {
  void *p = dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    static const char msg[] = "iolayer: a libc call is missing\n";
    /* stderr's FILE may need write() itself: use the raw call. */
    ssize_t r = ((write_fn)dlsym(RTLD_NEXT, "write"))(2, msg, sizeof msg - 1);
    (void)r;
    abort();
  }
  return p;
}

static pthread_once_t resolved = PTHREAD_ONCE_INIT;

static void resolve_all(void) {
  real.open = (open_fn)next_sym("open");
  real.open64 = (open_fn)next_sym("open64");
  real.openat = (openat_fn)next_sym("openat");
  real.openat64 = (openat_fn)next_sym("openat64");
  real.close = (close_fn)next_sym("close");
  real.write = (write_fn)next_sym("write");
  real.pwrite = (pwrite_fn)next_sym("pwrite");
  real.pwrite64 = (pwrite_fn)next_sym("pwrite64");
  real.writev = (writev_fn)next_sym("writev");
  real.pwritev = (pwritev_fn)next_sym("pwritev");
  real.pwritev64 = (pwritev_fn)next_sym("pwritev64");
  real.fsync = (sync_fn)next_sym("fsync");
  real.fdatasync = (sync_fn)next_sym("fdatasync");
  real.ftruncate = (truncate_fn)next_sym("ftruncate");
  real.ftruncate64 = (truncate_fn)next_sym("ftruncate64");
  real.lseek = (lseek_fn)next_sym("lseek");
}

static void resolve(void) { pthread_once(&resolved, resolve_all); }

/* ------------------------------------------------------------- state */

#define MAX_FD 4096
enum { UNTRACKED = 0, TRACKED = 1, TRACKED_DSYNC = 2, TRACKED_STEADY = 3 };

static pthread_mutex_t local_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char fds[MAX_FD];
static char follow[4200], follow_steady[4200];
static bool steady_too;
static bool recording;
static iol_event *events;
static size_t n_events, cap_events;
static iol_counts counts;
/* iol_die_after: the calls on followed descriptors until this process
 * ends (0: never). */
static unsigned die_at, die_seen;

/* Shared mode (iol_share): the record, its lock and the flag live in a
 * shared mapping, the same address in every forked process. */
typedef struct {
  pthread_mutex_t mu;
  bool recording;
  size_t n, cap;     /* events */
  size_t used, size; /* data bytes */
  iol_event *ev;
  uint8_t *data;
} shared_rec;
static shared_rec *shared;

static void lock_all(void) {
  if (!shared) {
    pthread_mutex_lock(&local_lock);
    return;
  }
  /* Robust: a process that ended holding it (iol_exit) leaves it whole. */
  if (pthread_mutex_lock(&shared->mu) == EOWNERDEAD)
    pthread_mutex_consistent(&shared->mu);
}
static void unlock_all(void) {
  pthread_mutex_unlock(shared ? &shared->mu : &local_lock);
}

typedef struct {
  unsigned at;    /* fire on this call number (counted from arming) */
  unsigned seen;  /* calls of this kind since arming */
  unsigned times; /* fire on `times` consecutive calls from `at` */
  int err;        /* errno; 0 = short write */
  bool armed;
} fault;
static fault wfault, ffault;
static unsigned fired;
static uint64_t fired_off;

static int tracked(int fd) {
  return fd >= 0 && fd < MAX_FD ? fds[fd] : UNTRACKED;
}

/* After a write or flush on a followed descriptor: end here when due.
 * Under the lock. */
static void die_if_due(void) {
  if (die_at != 0 && ++die_seen >= die_at) _exit(IOL_DIED);
}

/* Does this call (of fault `f`'s kind) fail? Called under the lock. */
static bool fault_fires(fault *f) {
  if (!f->armed) return false;
  f->seen++;
  if (f->seen < f->at || f->seen >= f->at + f->times) return false;
  fired++;
  return true;
}

static void shared_full(void) {
  static const char msg[] = "iolayer: the shared record is full\n";
  ssize_t r = real.write(2, msg, sizeof msg - 1);
  (void)r;
  abort();
}

static iol_event *push(iol_kind kind, bool dsync, uint64_t off,
                       const void *data, size_t len) {
  iol_event *e;
  uint8_t *copy = NULL;
  if (shared) {
    if (!shared->recording) return NULL;
    if (shared->n == shared->cap || shared->size - shared->used < len)
      shared_full();
    e = &shared->ev[shared->n++];
    copy = shared->data + shared->used;
    shared->used += len;
  } else {
    if (!recording) return NULL;
    if (n_events == cap_events) {
      cap_events = cap_events ? cap_events * 2 : 1024;
      events = realloc(events, cap_events * sizeof *events);
      if (events == NULL) abort();
    }
    e = &events[n_events++];
    if (len && (copy = malloc(len)) == NULL) abort();
  }
  memset(e, 0, sizeof *e);
  e->kind = kind;
  e->dsync = dsync;
  e->off = off;
  e->len = len;
  if (len) {
    e->data = copy;
    memcpy(e->data, data, len);
  }
  return e;
}

static void note_open(int fd, const char *path, int flags) {
  if (fd < 0 || fd >= MAX_FD) return;
  lock_all();
  fds[fd] = UNTRACKED;
  if (follow[0] && strcmp(path, follow) == 0) {
    fds[fd] = (flags & O_DSYNC) == O_DSYNC ? TRACKED_DSYNC : TRACKED;
    counts.tracked_opens++;
  } else if (steady_too && follow[0] && strcmp(path, follow_steady) == 0) {
    fds[fd] = TRACKED_STEADY;
  }
  unlock_all();
}

/* ----------------------------------------------------------- the API */

void iol_follow(const char *dir) {
  lock_all();
  if (dir) {
    snprintf(follow, sizeof follow, "%s/data.mdb", dir);
    snprintf(follow_steady, sizeof follow_steady, "%s/steady", dir);
  } else {
    follow[0] = '\0';
  }
  unlock_all();
}

void iol_follow_steady(bool on) {
  lock_all();
  steady_too = on;
  unlock_all();
}

void iol_share(size_t max_events, size_t max_bytes) {
  resolve();
  size_t bytes = sizeof(shared_rec) + max_events * sizeof(iol_event);
  void *p = mmap(NULL, bytes + max_bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) abort();
  shared_rec *r = p;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&r->mu, &a);
  pthread_mutexattr_destroy(&a);
  r->cap = max_events;
  r->size = max_bytes;
  r->ev = (iol_event *)(r + 1);
  r->data = (uint8_t *)p + bytes;
  shared = r;
}

void iol_die_after(unsigned n) {
  lock_all();
  die_at = n;
  die_seen = 0;
  unlock_all();
}

void iol_exit(int code) {
  lock_all(); /* no thread of this process is between a write and its record */
  _exit(code);
}

void iol_ack_floor(uint64_t floor) {
  lock_all();
  iol_event *e = push(IOL_ACK, false, 0, NULL, 0);
  if (e) e->floor = floor;
  unlock_all();
}

void iol_clear(void) {
  if (shared) {
    lock_all();
    shared->n = shared->used = 0;
    unlock_all();
    return;
  }
  lock_all();
  for (size_t i = 0; i < n_events; i++) free(events[i].data);
  free(events);
  events = NULL;
  n_events = cap_events = 0;
  unlock_all();
}

void iol_record(bool on) {
  if (on) iol_clear();
  lock_all();
  recording = on;
  if (shared) shared->recording = on;
  unlock_all();
}

void iol_ack(void) {
  lock_all();
  push(IOL_ACK, false, 0, NULL, 0);
  unlock_all();
}

const iol_event *iol_events(size_t *n) {
  if (shared) {
    *n = shared->n;
    return shared->ev;
  }
  *n = n_events;
  return events;
}

iol_counts iol_counts_get(void) {
  lock_all();
  iol_counts c = counts;
  unlock_all();
  return c;
}

void iol_counts_reset(void) {
  lock_all();
  unsigned opens = counts.tracked_opens;
  memset(&counts, 0, sizeof counts);
  counts.tracked_opens = opens;
  unlock_all();
}

static void arm(fault *f, unsigned n, int err, unsigned times) {
  lock_all();
  *f = (fault){.at = n, .times = times ? times : 1, .err = err, .armed = true};
  unlock_all();
}

void iol_fault_write(unsigned n, int err, unsigned times) {
  arm(&wfault, n, err, times);
}

void iol_fault_flush(unsigned n, int err, unsigned times) {
  arm(&ffault, n, err, times);
}

void iol_fault_clear(void) {
  lock_all();
  memset(&wfault, 0, sizeof wfault);
  memset(&ffault, 0, sizeof ffault);
  fired = 0;
  unlock_all();
}

uint64_t iol_fault_offset(void) {
  lock_all();
  uint64_t off = fired_off;
  unlock_all();
  return off;
}

unsigned iol_faults_fired(void) {
  lock_all();
  unsigned n = fired;
  unlock_all();
  return n;
}

/* --------------------------------------------------- opening, closing */

static int do_open(open_fn fn, const char *path, int flags, va_list ap) {
  mode_t mode = 0;
  if (flags & (O_CREAT | __O_TMPFILE)) mode = (mode_t)va_arg(ap, int);
  int fd = fn(path, flags, mode);
  if (fd >= 0) note_open(fd, path, flags);
  return fd;
}

int open(const char *path, int flags, ...) {
  resolve();
  va_list ap;
  va_start(ap, flags);
  int fd = do_open(real.open, path, flags, ap);
  va_end(ap);
  return fd;
}

int open64(const char *path, int flags, ...) {
  resolve();
  va_list ap;
  va_start(ap, flags);
  int fd = do_open(real.open64, path, flags, ap);
  va_end(ap);
  return fd;
}

static int do_openat(openat_fn fn, int dirfd, const char *path, int flags,
                     va_list ap) {
  mode_t mode = 0;
  if (flags & (O_CREAT | __O_TMPFILE)) mode = (mode_t)va_arg(ap, int);
  int fd = fn(dirfd, path, flags, mode);
  /* Only absolute or cwd-relative names can match the followed path. */
  if (fd >= 0 && (dirfd == AT_FDCWD || path[0] == '/'))
    note_open(fd, path, flags);
  else if (fd >= 0 && fd < MAX_FD)
    fds[fd] = UNTRACKED;
  return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
  resolve();
  va_list ap;
  va_start(ap, flags);
  int fd = do_openat(real.openat, dirfd, path, flags, ap);
  va_end(ap);
  return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
  resolve();
  va_list ap;
  va_start(ap, flags);
  int fd = do_openat(real.openat64, dirfd, path, flags, ap);
  va_end(ap);
  return fd;
}

int close(int fd) {
  resolve();
  if (fd >= 0 && fd < MAX_FD && fds[fd]) {
    lock_all();
    fds[fd] = UNTRACKED;
    unlock_all();
  }
  return real.close(fd);
}

/* ------------------------------------------------------------ writes */

/* One write of `len` bytes gathered in `buf` at `off` on followed
 * descriptor `fd` (kind `t`): inject the armed fault or do it, and record
 * what was written. `advance`: a write at the file offset (write, writev),
 * which must move the offset as the real call would. */
static ssize_t tracked_write(int fd, int t, const void *buf, size_t len,
                             uint64_t off, bool advance) {
  lock_all();
  counts.writes++;
  if (t == TRACKED_DSYNC) counts.dsync_writes++;
  bool fail = fault_fires(&wfault);
  int err = wfault.err;
  if (fail) fired_off = off;
  size_t n = len;
  if (fail && err != 0) {
    unlock_all();
    errno = err;
    return -1;
  }
  if (fail) n = len / 2; /* short */
  ssize_t r = real.pwrite(fd, buf, n, (off_t)off);
  int saved = errno;
  if (r > 0) {
    iol_event *e = push(IOL_WRITE, t == TRACKED_DSYNC, off, buf, (size_t)r);
    if (e) e->file = t == TRACKED_STEADY ? IOL_STEADY : IOL_DATA;
    if (advance) real.lseek(fd, (off_t)(off + (uint64_t)r), SEEK_SET);
  }
  die_if_due();
  unlock_all();
  errno = saved;
  return r;
}

/* Gather an iovec into one buffer (NULL on failure: ENOMEM). */
static void *gather(const struct iovec *iov, int n, size_t *len) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += iov[i].iov_len;
  char *buf = malloc(total ? total : 1);
  if (buf == NULL) return NULL;
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  *len = total;
  return buf;
}

static ssize_t tracked_writev(int fd, int t, const struct iovec *iov, int n,
                              uint64_t off, bool advance) {
  size_t len;
  void *buf = gather(iov, n, &len);
  if (buf == NULL) {
    errno = ENOMEM;
    return -1;
  }
  ssize_t r = tracked_write(fd, t, buf, len, off, advance);
  int saved = errno;
  free(buf);
  errno = saved;
  return r;
}

static uint64_t cur_offset(int fd) {
  return (uint64_t)real.lseek(fd, 0, SEEK_CUR);
}

ssize_t write(int fd, const void *buf, size_t len) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.write(fd, buf, len);
  return tracked_write(fd, t, buf, len, cur_offset(fd), true);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.pwrite(fd, buf, len, off);
  return tracked_write(fd, t, buf, len, (uint64_t)off, false);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.pwrite64(fd, buf, len, off);
  return tracked_write(fd, t, buf, len, (uint64_t)off, false);
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.writev(fd, iov, n);
  return tracked_writev(fd, t, iov, n, cur_offset(fd), true);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.pwritev(fd, iov, n, off);
  return tracked_writev(fd, t, iov, n, (uint64_t)off, false);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) {
  resolve();
  int t = tracked(fd);
  if (!t) return real.pwritev64(fd, iov, n, off);
  return tracked_writev(fd, t, iov, n, (uint64_t)off, false);
}

/* ----------------------------------------------------------- flushes */

static int tracked_flush(sync_fn fn, int fd) {
  int t = tracked(fd);
  lock_all();
  counts.flushes++;
  if (fault_fires(&ffault)) {
    int err = ffault.err;
    unlock_all();
    errno = err;
    return -1;
  }
  int r = fn(fd);
  int saved = errno;
  if (r == 0) {
    iol_event *e = push(IOL_FLUSH, false, 0, NULL, 0);
    if (e) e->file = t == TRACKED_STEADY ? IOL_STEADY : IOL_DATA;
  }
  die_if_due();
  unlock_all();
  errno = saved;
  return r;
}

int fdatasync(int fd) {
  resolve();
  if (!tracked(fd)) return real.fdatasync(fd);
  return tracked_flush(real.fdatasync, fd);
}

int fsync(int fd) {
  resolve();
  if (!tracked(fd)) return real.fsync(fd);
  return tracked_flush(real.fsync, fd);
}

/* Nothing here models a size change: make it loud if LMDB ever does one
 * on the followed file (it does only with MDB_WRITEMAP, which no mode
 * uses). */
static void refuse_truncate(void) {
  static const char msg[] =
      "iolayer: ftruncate on the followed data.mdb: not modelled\n";
  ssize_t r = real.write(2, msg, sizeof msg - 1);
  (void)r;
  abort();
}

int ftruncate(int fd, off_t len) {
  resolve();
  if (tracked(fd) && recording) refuse_truncate();
  return real.ftruncate(fd, len);
}

int ftruncate64(int fd, off_t len) {
  resolve();
  if (tracked(fd) && recording) refuse_truncate();
  return real.ftruncate64(fd, len);
}
