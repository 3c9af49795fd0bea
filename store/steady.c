/*
 * steady.c - durability interval: commits that return without a flush,
 * and a board that a power cut or a kernel crash leaves consistent.
 *
 * Why LMDB alone cannot: with MDB_NOSYNC a commit may reuse the pages of
 * the last state that did reach the disk (they are free once no reader
 * needs them), and the two meta pages are overwritten in turn, so after a
 * power cut the disk may hold a meta page of a commit whose pages never
 * got there, over pages of the flushed state that later commits rewrote.
 *
 * What this file adds (the idea of libmdbx's "steady" commits, built from
 * outside liblmdb 0.9):
 *
 *  - A file "steady" beside data.mdb: a header (whether the protocol is
 *    on, the board's flush period) and two slots, each in a 4 KiB page of
 *    its own. A slot records
 *    one flushed state: its txnid, a copy of the first 256 bytes of its
 *    LMDB meta page, the boot id, when it was recorded, a sequence number
 *    and a checksum. A new record goes to the slot the older one is in,
 *    so a torn write leaves the other slot whole.
 *
 *  - Recording (flush_record): under LMDB's writer lock (a write
 *    transaction begun and aborted: no commit can run meanwhile) read the
 *    newest meta page (txnid L) and begin a read transaction, which is
 *    then a snapshot of L; let the lock go; flush data.mdb (everything L
 *    holds was written before its commit returned, so this makes L
 *    whole on the disk); write the slot and flush the steady file. Only
 *    then is the snapshot of the previous record released.
 *
 *  - The pin: every process that writes the board holds such a snapshot
 *    at or below the newest record. LMDB reuses a free page only when no
 *    reader's snapshot is older than the commit that freed it, so no page
 *    of a recorded state is ever rewritten while that state may be needed
 *    (the newest record, and the one before while a new one is written).
 *    A process that records moves its pin to what it recorded; one that
 *    does not keeps a second snapshot (the candidate) and moves its pin
 *    there once a record covers it, so an idle process does not hold
 *    pages for ever.
 *
 *  - The restore (jb__steady_prepare): the first open after a reboot (the
 *    boot id differs from the newest record's) finds, when a meta page of
 *    data.mdb is newer than the record, commits that may not have reached
 *    the disk; it writes the recorded meta page into both meta slots of
 *    data.mdb, flushes, and records the new boot. Before anything maps
 *    the file, under the steady file's flock, so a second opener waits.
 *    Without a reboot nothing is put back: the page cache held every
 *    commit, and a killed process loses nothing.
 *
 * Every writer of a board where the protocol is on takes part, whatever
 * its durability: interval and none return from a commit at once (a
 * flusher thread records every period T, also when writers go idle), full
 * and normal return after a record holds their commit. Records are shared
 * across processes: a process that finds, under the flock, a record that
 * already holds its commit does not flush again, so full-mode processes
 * gather their flushes. A process that opened the board before the
 * protocol was turned on finds the header's flag before its next commit
 * (jb__steady_must_join, a load from the mapped file) and takes part from
 * then on. See docs/DESIGN-NOTES.md, "Durability interval".
 */
#include "steady.h"
#include "txn.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The header in the first 4 KiB page (the part every process maps), each
 * slot in a page of its own: a page the disk tears (4 KiB sectors, flash)
 * takes at most one slot with it. */
#define STEADY_PAGE 4096
#define STEADY_SIZE (3 * STEADY_PAGE)
#define SLOT_SIZE 512
#define SLOT_OFF(i) ((off_t)STEADY_PAGE * (1 + (i)))
#define META_COPY 256
/* LMDB 0.9's meta page: a 16-byte page header, then MDB_meta, whose magic
 * is its first field and whose txnid is its last (136 bytes). */
#define META_MAGIC_OFF 16
#define META_TXNID_OFF (16 + 128)
#define LMDB_MAGIC 0xBEEFC0DEu
#define HDR_MAGIC "JBSTEADY"
#define REC_MAGIC "JBRECORD"

typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t on;       /* offset 12: 1 once any writer used interval */
  uint32_t flush_ms; /* offset 16: the board's period, 0 = default */
  uint32_t unused;
  uint64_t synced_seq; /* offset 24: the newest record known flushed */
  uint64_t flushed_txnid; /* offset 32: data.mdb known flushed up to it */
} steady_hdr;

typedef struct {
  char magic[8];
  uint64_t seq;
  uint64_t txnid;
  uint8_t boot[16];
  int64_t mono_us; /* CLOCK_MONOTONIC: comparable within one boot */
  int64_t wall_us;
  uint32_t psize;
  uint32_t meta_len;
  uint8_t meta[META_COPY];
  uint64_t sum; /* FNV-1a of every byte before it */
} steady_rec;

_Static_assert(sizeof(steady_rec) <= SLOT_SIZE, "a record fits its slot");

struct jb_steady {
  int fd;
  const uint8_t *map; /* read-only view of the file */
  pthread_mutex_t mu; /* one record at a time here; the pins */
  bool joined;
  MDB_txn *pin, *cand;
  uint64_t pin_id, cand_id;
  unsigned psize;
  int64_t own_ms; /* the process's period (0: the board's) */
  uint64_t flushes, records;
  /* the flusher thread */
  pthread_t thread;
  bool thread_on;
  pthread_mutex_t tmu;
  pthread_cond_t tcv;
  bool stop, dirty, idle;
};

static unsigned test_mutate;
static uint8_t test_boot[16];
static bool test_boot_set;

void jb__steady_test_mutate(unsigned flags) { test_mutate = flags; }
void jb__steady_test_boot(const uint8_t *boot) {
  test_boot_set = boot != NULL;
  if (boot) memcpy(test_boot, boot, 16);
}

static int boot_id(uint8_t out[16]) {
  if (test_boot_set) {
    memcpy(out, test_boot, 16);
    return JB_OK;
  }
  return jb__boot_id(out);
}

static uint64_t fnv(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The steady files' descriptors of this process (fd + 1; 0: a free
 * slot), closed in a forked child. Both locks on the file (the flock and
 * the flush lock) belong to the open file description, which a child
 * shares until it closes its copy: were this process killed while holding
 * one, a child that lives on without exec (Python's multiprocessing, a
 * daemon's worker) would hold it for every process of the board. Handles
 * are refused in the child anyway (the fork generation). Beyond
 * TRACKED_FDS boards open at once the rest are not closed in children. */
#define TRACKED_FDS 64
static int tracked_fds[TRACKED_FDS];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void close_in_child(void) {
  for (int i = 0; i < TRACKED_FDS; i++) {
    int v = __atomic_exchange_n(&tracked_fds[i], 0, __ATOMIC_SEQ_CST);
    if (v > 0) close(v - 1);
  }
}

static void install_atfork(void) { pthread_atfork(NULL, NULL, close_in_child); }

static void fd_track(int fd) {
  pthread_once(&atfork_once, install_atfork);
  for (int i = 0; i < TRACKED_FDS; i++) {
    int free_slot = 0;
    if (__atomic_compare_exchange_n(&tracked_fds[i], &free_slot, fd + 1, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return;
  }
}

static void fd_untrack(int fd) {
  for (int i = 0; i < TRACKED_FDS; i++) {
    int mine = fd + 1;
    if (__atomic_compare_exchange_n(&tracked_fds[i], &mine, 0, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return;
  }
}

static void flock_on(int fd, int op) {
  while (flock(fd, op) != 0 && errno == EINTR) {
  }
}

/* The flush lock: one byte past the file's end, an open-file-description
 * lock (independent of the flock, which guards the slots): one process at
 * a time flushes data.mdb for a record. */
static void flush_lock(int fd, short type) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET,
                    .l_start = 3 * 4096, .l_len = 1};
  while (fcntl(fd, F_OFD_SETLKW, &l) != 0 && errno == EINTR) {
  }
}

static int pread_all(int fd, void *buf, size_t n, off_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(fd, (char *)buf + got, n - got, off + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) break;
    got += (size_t)r;
  }
  if (got < n) memset((char *)buf + got, 0, n - got);
  return 0;
}

static int pwrite_all(int fd, const void *buf, size_t n, off_t off) {
  size_t put = 0;
  while (put < n) {
    ssize_t r = pwrite(fd, (const char *)buf + put, n - put, off + (off_t)put);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r < 0 ? errno : EIO;
    put += (size_t)r;
  }
  return 0;
}

static bool rec_valid(const steady_rec *r) {
  return memcmp(r->magic, REC_MAGIC, 8) == 0 &&
         r->sum == fnv(r, offsetof(steady_rec, sum)) &&
         r->meta_len == META_COPY && r->psize >= 512;
}

/* The newer valid record of the two slots (false: none). */
static bool best_record(int fd, steady_rec *out) {
  steady_rec r[2];
  bool ok[2];
  for (int i = 0; i < 2; i++) {
    ok[i] = pread_all(fd, &r[i], sizeof r[i], SLOT_OFF(i)) == 0 &&
            rec_valid(&r[i]);
  }
  int pick = ok[0] && ok[1] ? (r[1].seq > r[0].seq) : ok[1] ? 1 : 0;
  if (!ok[pick]) return false;
  *out = r[pick];
  return true;
}

/* The newest record known to be on the disk, kept in the header (mapped
 * by every writer) so that a process whose commit a record holds need not
 * flush the steady file itself to be sure the record is there: set only
 * after the record's flush returned, with a plain write (the next flush
 * of the file carries it; lost, it costs one flush more). A power cut
 * cannot leave it ahead of the slots: it is written after them. */
static void put_synced(int fd, uint64_t seq) {
  (void)pwrite_all(fd, &seq, sizeof seq, offsetof(steady_hdr, synced_seq));
}

/* data.mdb is on the disk up to commit `txnid` (a flush of it returned
 * after that commit): kept in the header for the processes that wait for
 * the flush lock meanwhile, which then need not flush again. Only ever
 * moves forward within a boot; the first open after a reboot sets it to
 * the recorded state (put_flushed from jb__steady_prepare). */
static void put_flushed(int fd, uint64_t txnid) {
  (void)pwrite_all(fd, &txnid, sizeof txnid,
                   offsetof(steady_hdr, flushed_txnid));
}

static int write_record(int fd, steady_rec *r) {
  memcpy(r->magic, REC_MAGIC, 8);
  r->meta_len = META_COPY;
  r->sum = fnv(r, offsetof(steady_rec, sum));
  uint8_t slot[SLOT_SIZE] = {0};
  memcpy(slot, r, sizeof *r);
  int e = pwrite_all(fd, slot, sizeof slot, SLOT_OFF(r->seq & 1));
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  return e;
}

static uint64_t meta_txnid(const uint8_t *page) {
  uint64_t t;
  memcpy(&t, page + META_TXNID_OFF, 8);
  return t;
}

static bool meta_magic_ok(const uint8_t *page) {
  uint32_t m;
  memcpy(&m, page + META_MAGIC_OFF, 4);
  return m == LMDB_MAGIC;
}

/* An errno error naming the board and what was being done. */
static int errno_err(int e, const char *doing, const char *path) {
  char what[4400];
  snprintf(what, sizeof what, "board %s: %s", path, doing);
  return jb__err_errno(e, what);
}

/* The steady file cannot be opened for writing: the board is read-only
 * for this process (as for lock.mdb in env.c), or another error. */
static int open_error(int e, const char *path) {
  if (e == EACCES || e == EPERM || e == EROFS)
    return jb__err(JB_EREADONLY, "board %s is read-only for this process "
                   "(steady: %s): only reading commands work on it", path,
                   strerror(e));
  return errno_err(e, "cannot open or create its steady file", path);
}

/* ------------------------------------------------------------ restore */

/* Write the recorded meta page into both meta slots of data.mdb (the
 * other slot's copy names its own page number), then flush. */
static int restore(const char *path, const steady_rec *r) {
  char data[4200];
  snprintf(data, sizeof data, "%s/data.mdb", path);
  int fd = open(data, O_RDWR | O_CLOEXEC);
  if (fd < 0) return errno_err(errno, "cannot open data.mdb to "
                               "restore its last flushed state", path);
  int e = 0;
  for (uint64_t p = 0; p < 2 && e == 0; p++) {
    uint8_t page[META_COPY];
    memcpy(page, r->meta, sizeof page);
    memcpy(page, &p, sizeof p); /* mp_pgno: the page's own number */
    e = pwrite_all(fd, page, sizeof page, (off_t)(p * r->psize));
  }
  if (e == 0 && fdatasync(fd) != 0) e = errno;
  close(fd);
  if (e) return errno_err(e, "restoring its last flushed state",
                          path);
  return JB_OK;
}

int jb__steady_prepare(const char *path, bool readonly, bool *on) {
  *on = false;
  char file[4200];
  snprintf(file, sizeof file, "%s/" JB_STEADY_FILE, path);
  int fd = open(file, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return JB_OK; /* never used interval */
  if (fd < 0 && readonly && (errno == EACCES || errno == EPERM))
    return JB_OK; /* cannot read it: read as it is (see below) */
  if (fd < 0) return open_error(errno, path);
  fd_track(fd);
  flock_on(fd, readonly ? LOCK_SH : LOCK_EX);
  steady_hdr h;
  int rc = JB_OK;
  if (pread_all(fd, &h, sizeof h, 0) == 0 && memcmp(h.magic, HDR_MAGIC, 8) == 0)
    *on = h.on != 0;
  steady_rec r;
  uint8_t boot[16];
  if (!best_record(fd, &r) || (rc = boot_id(boot)) != JB_OK)
    goto out; /* no record yet */
  bool rebooted = memcmp(r.boot, boot, 16) != 0;
  /* What of data.mdb came after the record? Read at every open: a record
   * newer than the file was made for another data.mdb. */
  char data[4200];
  snprintf(data, sizeof data, "%s/data.mdb", path);
  int dfd = open(data, O_RDONLY | O_CLOEXEC);
  if (dfd < 0 && errno == ENOENT) {
    rc = jb__err(JB_ECORRUPT, "board %s: its steady file records commit %llu "
                 "but there is no data.mdb beside it; to make a new board "
                 "there, remove %s too", path, (unsigned long long)r.txnid,
                 file);
    goto out;
  }
  if (dfd < 0) {
    rc = errno_err(errno, "cannot read data.mdb", path);
    goto out;
  }
  uint8_t m[2][META_COPY];
  int e = pread_all(dfd, m[0], META_COPY, 0);
  if (e == 0) e = pread_all(dfd, m[1], META_COPY, (off_t)r.psize);
  close(dfd);
  if (e) {
    rc = errno_err(e, "reading data.mdb's meta pages", path);
    goto out;
  }
  uint64_t newest = 0;
  for (int i = 0; i < 2; i++)
    if (meta_magic_ok(m[i]) && meta_txnid(m[i]) > newest) newest = meta_txnid(m[i]);
  bool behind = newest > r.txnid || !meta_magic_ok(m[r.txnid & 1]) ||
                meta_txnid(m[r.txnid & 1]) != r.txnid;
  if (newest < r.txnid && meta_magic_ok(m[0]) && meta_magic_ok(m[1])) {
    /* Both meta pages whole and older than the record: not the file the
     * record was made for (a data.mdb put back from a copy). */
    rc = jb__err(JB_ECORRUPT, "board %s: its steady file records commit %llu "
                 "but data.mdb holds commits up to %llu only: data.mdb was "
                 "replaced; if that copy is what you want, remove %s "
                 "(nothing else refers to it)", path,
                 (unsigned long long)r.txnid, (unsigned long long)newest, file);
    goto out;
  }
  if (!rebooted) goto out; /* the page cache holds every commit */
  if (behind && (test_mutate & JB_STEADY_TEST_NO_RESTORE)) behind = false;
  if (behind && readonly) {
    rc = jb__err(JB_EREADONLY, "board %s was not closed cleanly before this "
                 "boot: commits after its last flushed state (commit %llu) "
                 "may be missing from the disk, and a process that can "
                 "write the board must put that state back: open it once "
                 "with write access", path, (unsigned long long)r.txnid);
    goto out;
  }
  if (readonly) goto out; /* nothing to put back; the next writer records */
  if (behind && (rc = restore(path, &r)) != JB_OK) goto out;
  /* The new boot, recorded: later openers of this boot put nothing back. */
  r.seq++;
  memcpy(r.boot, boot, 16);
  r.mono_us = jb__mono_us();
  r.wall_us = jb__now_us();
  if ((e = write_record(fd, &r)) != 0)
    rc = errno_err(e, "recording the boot in its steady file", path);
  else
    put_synced(fd, r.seq), put_flushed(fd, r.txnid);
out:
  flock_on(fd, LOCK_UN);
  fd_untrack(fd);
  close(fd);
  return rc;
}

/* --------------------------------------------------------------- open */

static const steady_hdr *hdr(const struct jb_steady *st) {
  return (const steady_hdr *)st->map;
}

static uint32_t hdr_on(const struct jb_steady *st) {
  return __atomic_load_n(&hdr(st)->on, __ATOMIC_ACQUIRE);
}

static int64_t period_us(const struct jb_steady *st) {
  if (st->own_ms > 0) return st->own_ms * 1000;
  uint32_t b = __atomic_load_n(&hdr(st)->flush_ms, __ATOMIC_RELAXED);
  return (int64_t)(b ? b : JB_FLUSH_INTERVAL_DEFAULT_MS) * 1000;
}

/* Write the header (under the flock). */
static int put_header(jb_store *s, uint32_t on, uint32_t flush_ms,
                      bool fresh) {
  steady_hdr h = {{0}, 1, on, flush_ms, 0, 0, 0};
  memcpy(h.magic, HDR_MAGIC, 8);
  /* Past flush_ms, synced_seq is the records' own (put_synced): a header
   * changed later leaves it as it is. */
  int e = pwrite_all(s->steady->fd, &h,
                     fresh ? sizeof h : offsetof(steady_hdr, unused), 0);
  if (e == 0 && fdatasync(s->steady->fd) != 0) e = errno;
  if (e) return errno_err(e, "writing its steady file", s->path);
  return JB_OK;
}

static int fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  int e = fsync(fd) == 0 ? 0 : errno;
  close(fd);
  return e == EINVAL ? 0 : e;
}

static void *flusher(void *arg);

int jb__steady_open(jb_store *s, bool interval, int64_t flush_ms) {
  char file[4200];
  snprintf(file, sizeof file, "%s/" JB_STEADY_FILE, s->path);
  bool existed = access(file, F_OK) == 0;
  int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
  if (fd < 0) return open_error(errno, s->path);
  struct jb_steady *st = calloc(1, sizeof *st);
  if (st == NULL) {
    close(fd);
    return jb__err(JB_ENOMEM, "out of memory opening board %s", s->path);
  }
  st->fd = fd;
  fd_track(fd);
  st->own_ms = flush_ms;
  pthread_mutex_init(&st->mu, NULL);
  pthread_mutex_init(&st->tmu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->tcv, &ca);
  pthread_condattr_destroy(&ca);
  s->steady = st;
  int rc = JB_OK;
  flock_on(fd, LOCK_EX);
  struct stat sb;
  steady_hdr h;
  if (fstat(fd, &sb) != 0) {
    rc = errno_err(errno, "its steady file", s->path);
  } else if (!S_ISREG(sb.st_mode)) {
    rc = jb__err(JB_ECORRUPT, "board %s: its steady file is not a regular "
                 "file", s->path);
  } else {
    /* New (or cut short by a crash while being made): its blocks
     * reserved, so that the map never faults, then the header. */
    bool fresh = pread_all(fd, &h, sizeof h, 0) != 0 ||
                 memcmp(h.magic, HDR_MAGIC, 8) != 0;
    int e = 0;
    if (sb.st_size < STEADY_SIZE) {
      e = posix_fallocate(fd, 0, STEADY_SIZE);
      if (e == EOPNOTSUPP || e == EINVAL) e = ftruncate(fd, STEADY_SIZE) ? errno : 0;
      if (e) rc = errno_err(e, "making its steady file", s->path);
    }
    if (rc == JB_OK && fresh) rc = put_header(s, 0, 0, true);
    if (rc == JB_OK && !existed && (e = fsync_dir(s->path)) != 0)
      rc = errno_err(e, "flushing its directory", s->path);
  }
  if (rc == JB_OK) {
    void *p = mmap(NULL, STEADY_PAGE, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      rc = errno_err(errno, "mapping its steady file", s->path);
    else
      st->map = p;
  }
  if (rc == JB_OK && interval && !hdr_on(st))
    rc = put_header(s, 1, hdr(st)->flush_ms, false); /* on from now, for all */
  flock_on(fd, LOCK_UN);
  if (rc == JB_OK && hdr_on(st)) rc = jb__steady_join(s);
  return rc;
}

/* ---------------------------------------------------- pins and records */

static int begin_snapshot(jb_store *s, MDB_txn **out) {
  pthread_rwlock_rdlock(&s->resize_lock);
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, out);
  pthread_rwlock_unlock(&s->resize_lock);
  return rc;
}

static void end_snapshot(jb_store *s, MDB_txn **t) {
  if (*t == NULL) return;
  pthread_rwlock_rdlock(&s->resize_lock);
  mdb_txn_abort(*t);
  pthread_rwlock_unlock(&s->resize_lock);
  *t = NULL;
}

/* The newest commit of the board. mdb_env_info reads the meta pages
 * through the map, which another thread may be moving (a map grown):
 * under the resize lock, as every transaction. */
static uint64_t newest_txnid(jb_store *s) {
  MDB_envinfo info;
  pthread_rwlock_rdlock(&s->resize_lock);
  mdb_env_info(s->env, &info);
  pthread_rwlock_unlock(&s->resize_lock);
  return info.me_last_txnid;
}

/* Move the pin forward without flushing: to the candidate once a record
 * holds it, and take a new candidate when commits came since. Under mu. */
static void advance(jb_store *s, uint64_t recorded) {
  struct jb_steady *st = s->steady;
  if (test_mutate & JB_STEADY_TEST_NO_PIN) {
    end_snapshot(s, &st->pin);
    end_snapshot(s, &st->cand);
    return;
  }
  if (st->cand && st->cand_id <= recorded) {
    end_snapshot(s, &st->pin);
    st->pin = st->cand, st->pin_id = st->cand_id;
    st->cand = NULL;
  }
  if (st->cand == NULL) {
    if (newest_txnid(s) > st->pin_id && begin_snapshot(s, &st->cand) == 0)
      st->cand_id = mdb_txn_id(st->cand);
  }
}

/* The record `r` read under the flock is on the disk: the header says its
 * flush returned, or the file is flushed here (its writer may have died
 * between writing the slot and flushing it). Under the flock. */
static int record_durable(jb_store *s, const steady_rec *r) {
  struct jb_steady *st = s->steady;
  if (__atomic_load_n(&hdr(st)->synced_seq, __ATOMIC_ACQUIRE) >= r->seq)
    return JB_OK;
  if (fdatasync(st->fd) != 0)
    return jb__err(JB_EIO, "board %s: flushing its steady file failed (%s)",
                   s->path, strerror(errno));
  put_synced(st->fd, r->seq);
  return JB_OK;
}

/* The record names commit `recorded`, newer than the board's newest: the
 * steady file belongs to another data.mdb. */
static int replaced_error(jb_store *s, uint64_t recorded) {
  return jb__err(JB_ECORRUPT, "board %s: its steady file records commit %llu, "
                 "newer than the board's newest (%llu): data.mdb was "
                 "replaced under it; close every process of the board and "
                 "open it again", s->path, (unsigned long long)recorded,
                 (unsigned long long)newest_txnid(s));
}

/* The pin moves to `snap` (commit id), a snapshot at or below the newest
 * record: the one this process recorded, or one that a record made
 * meanwhile by another process holds. Under mu. */
static void pin_to(jb_store *s, MDB_txn *snap, uint64_t id) {
  struct jb_steady *st = s->steady;
  end_snapshot(s, &st->pin);
  end_snapshot(s, &st->cand);
  st->pin = snap, st->pin_id = id;
  if (test_mutate & JB_STEADY_TEST_NO_PIN) end_snapshot(s, &st->pin);
}

/* Make every commit up to `need` (0: up to the newest) part of a recorded
 * steady state. `periodic`: the flusher's call, which lets a record made
 * less than a period ago stand. Under mu.
 *
 * Two locks, so that the flush of data.mdb for one record runs while the
 * steady file is flushed for the one before: the flush lock (one process
 * flushes data.mdb at a time; the others wait for it, and those whose
 * commit that flush held find so in the header and do not flush again)
 * and the flock (the slots). A recorder takes the flock before it lets
 * the flush lock go, so a process that finds its commit flushed and then
 * takes the flock finds the record there. */
static int flush_record(jb_store *s, uint64_t need, bool periodic) {
  struct jb_steady *st = s->steady;
  /* After a failed flush the kernel may report the next one clean
   * although the data never reached the disk: nothing more is recorded. */
  if (atomic_load(&s->failed))
    return jb__err(JB_EIO, "board %s: an earlier flush or commit of this "
                   "process failed: nothing more is recorded as flushed; "
                   "reopen the board", s->path);
  uint8_t boot[16];
  int rc = boot_id(boot);
  if (rc != JB_OK) return rc;
  steady_rec r;
  bool have;
  for (int round = 0;; round++) {
    /* 1. A record that already holds it? (under the flock) */
    flock_on(st->fd, LOCK_EX);
    have = best_record(st->fd, &r);
    if (have && r.txnid > newest_txnid(s))
      rc = replaced_error(s, r.txnid);
    else if (have && need && r.txnid >= need) {
      rc = record_durable(s, &r); /* another flush holds it */
      if (rc == JB_OK) advance(s, r.txnid);
      flock_on(st->fd, LOCK_UN);
      return rc;
    }
    flock_on(st->fd, LOCK_UN);
    if (rc != JB_OK) return rc;
    bool same_boot = have && memcmp(r.boot, boot, 16) == 0;
    if (periodic && same_boot && jb__mono_us() - r.mono_us < period_us(st))
      return JB_OK;
    /* 2. The flush lock. A flush made meanwhile that holds `need` is
     * recorded by its maker, who holds the flock by now: back to 1. (A
     * maker that failed or died leaves no record: then this process
     * flushes, at the second round at the latest.) */
    flush_lock(st->fd, F_WRLCK);
    uint64_t flushed =
        __atomic_load_n(&hdr(st)->flushed_txnid, __ATOMIC_ACQUIRE);
    if (need && flushed >= need && round == 0) {
      flush_lock(st->fd, F_UNLCK);
      continue;
    }
    break;
  }
  /* 3. The newest state, and a snapshot of it, under LMDB's writer lock. */
  MDB_txn *w = NULL, *snap = NULL;
  uint8_t meta[META_COPY];
  uint64_t L = 0;
  int mrc;
  for (int tries = 0;; tries++) {
    pthread_rwlock_rdlock(&s->resize_lock);
    mrc = mdb_txn_begin(s->env, NULL, 0, &w);
    if (mrc != MDB_MAP_RESIZED || tries == 100) break;
    pthread_rwlock_unlock(&s->resize_lock);
    if ((rc = jb__store_adopt_map(s)) != JB_OK) /* grown elsewhere */
      goto unlock_flush;
  }
  if (mrc == 0) {
    L = mdb_txn_id(w) - 1;
    int dfd;
    mrc = mdb_env_get_fd(s->env, &dfd);
    if (mrc == 0) mrc = pread_all(dfd, meta, sizeof meta, (off_t)((L & 1) * st->psize));
    if (mrc == 0 && (!meta_magic_ok(meta) || meta_txnid(meta) != L))
      mrc = MDB_CORRUPTED;
    if (mrc == 0) mrc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &snap);
    if (mrc == 0 && mdb_txn_id(snap) != L) mrc = MDB_BAD_TXN;
    mdb_txn_abort(w);
  }
  if (mrc != 0 && snap) mdb_txn_abort(snap), snap = NULL;
  pthread_rwlock_unlock(&s->resize_lock);
  if (mrc != 0) {
    char what[700];
    snprintf(what, sizeof what, "board %s: reading its newest state to "
             "record it", s->path);
    rc = jb__store_error(mrc, what);
    goto unlock_flush;
  }
  if (have && memcmp(r.boot, boot, 16) == 0 && L <= r.txnid) {
    pin_to(s, snap, L); /* nothing new since the record */
    goto unlock_flush;
  }
  /* 4. Everything L holds onto the disk: its pages were written before
   * its commit returned. */
  if ((mrc = mdb_env_sync(s->env, 1)) != 0) {
    end_snapshot(s, &snap);
    rc = jb__err(JB_EIO, "board %s: flushing data.mdb failed (%s): commits "
                 "since the last flushed state may not be on the disk",
                 s->path, mdb_strerror(mrc));
    goto unlock_flush;
  }
  st->flushes++;
  if (L > __atomic_load_n(&hdr(st)->flushed_txnid, __ATOMIC_ACQUIRE))
    put_flushed(st->fd, L);
  /* 5. The flock before the flush lock goes (see above), then the slot:
   * L, unless a record made meanwhile holds it (records only move
   * forward). */
  flock_on(st->fd, LOCK_EX);
  flush_lock(st->fd, F_UNLCK);
  have = best_record(st->fd, &r);
  if (have && r.txnid > newest_txnid(s)) {
    end_snapshot(s, &snap);
    rc = replaced_error(s, r.txnid);
  } else if (have && r.txnid >= L) {
    rc = record_durable(s, &r);
    if (rc == JB_OK) pin_to(s, snap, L); /* L <= a record: a valid pin */
    else end_snapshot(s, &snap);
  } else {
    steady_rec n = {0};
    n.seq = have ? r.seq + 1 : 1;
    n.txnid = L;
    memcpy(n.boot, boot, 16);
    n.mono_us = jb__mono_us();
    n.wall_us = jb__now_us();
    n.psize = st->psize;
    memcpy(n.meta, meta, sizeof meta);
    int e = write_record(st->fd, &n);
    if (e) {
      end_snapshot(s, &snap);
      rc = jb__err(JB_EIO, "board %s: recording its flushed state in the "
                   "steady file failed (%s)", s->path, strerror(e));
    } else {
      st->records++;
      put_synced(st->fd, n.seq);
      /* Only now may the previous record's pages be reused. */
      pin_to(s, snap, L);
    }
  }
  flock_on(st->fd, LOCK_UN);
  return rc;
unlock_flush:
  flush_lock(st->fd, F_UNLCK);
  return rc;
}

int jb__steady_join(jb_store *s) {
  struct jb_steady *st = s->steady;
  pthread_mutex_lock(&st->mu);
  if (st->joined) {
    pthread_mutex_unlock(&st->mu);
    return JB_OK;
  }
  MDB_stat ms;
  pthread_rwlock_rdlock(&s->resize_lock);
  mdb_env_stat(s->env, &ms);
  pthread_rwlock_unlock(&s->resize_lock);
  st->psize = ms.ms_psize;
  /* LMDB flushes no more by itself: the records do. */
  pthread_rwlock_wrlock(&s->resize_lock);
  int mrc = mdb_env_set_flags(s->env, MDB_NOSYNC, 1);
  pthread_rwlock_unlock(&s->resize_lock);
  int rc = mrc ? jb__store_error(mrc, "board: turning LMDB's own flushes off")
               : flush_record(s, 0, false);
  if (rc == JB_OK) {
    if (pthread_create(&st->thread, NULL, flusher, s) == 0) {
      st->thread_on = true;
      st->joined = true;
    } else {
      /* Without a flusher nothing would be flushed, and the pin would
       * never move: this process writes no more to the board. */
      jb__store_mark_failed(s, EAGAIN);
      rc = jb__err(JB_ENOMEM, "board %s: cannot start its flusher thread",
                   s->path);
    }
  }
  if (rc == JB_EIO) jb__store_mark_failed(s, EIO);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

bool jb__steady_must_join(jb_store *s) {
  struct jb_steady *st = s->steady;
  return st != NULL && !st->joined && hdr_on(st);
}

int jb__steady_committed(jb_store *s, uint64_t txnid) {
  struct jb_steady *st = s->steady;
  if (st == NULL || !st->joined) return JB_OK;
  if (s->durability == JB_DURABILITY_FULL ||
      s->durability == JB_DURABILITY_NORMAL) {
    pthread_mutex_lock(&st->mu);
    int rc = flush_record(s, txnid, false);
    pthread_mutex_unlock(&st->mu);
    return rc;
  }
  pthread_mutex_lock(&st->tmu);
  if (st->idle) { /* the flusher sleeps for a period: it is due earlier */
    st->idle = false;
    st->dirty = true;
    pthread_cond_signal(&st->tcv);
  }
  pthread_mutex_unlock(&st->tmu);
  return JB_OK;
}

int jb__steady_sync(jb_store *s) {
  struct jb_steady *st = s->steady;
  if (st == NULL || !st->joined) {
    int mrc = mdb_env_sync(s->env, 1);
    if (mrc) return jb__err(JB_EIO, "board %s: flushing data.mdb failed (%s)",
                            s->path, mdb_strerror(mrc));
    return JB_OK;
  }
  uint64_t newest = newest_txnid(s);
  pthread_mutex_lock(&st->mu);
  int rc = flush_record(s, newest ? newest : 1, false);
  pthread_mutex_unlock(&st->mu);
  return rc;
}

/* ------------------------------------------------------------ flusher */

static void *flusher(void *arg) {
  jb_store *s = arg;
  struct jb_steady *st = s->steady;
  pthread_mutex_lock(&st->tmu);
  while (!st->stop) {
    st->idle = true; /* a commit of this process signals from here on */
    st->dirty = false;
    int64_t per = period_us(st), now = jb__mono_us();
    steady_rec r;
    bool have = best_record(st->fd, &r);
    bool pending = !have || newest_txnid(s) > r.txnid;
    pthread_mutex_unlock(&st->tmu);
    int rc = JB_OK;
    pthread_mutex_lock(&st->mu);
    if (pending && (!have || now - r.mono_us >= per)) {
      rc = flush_record(s, 0, true);
      pthread_mutex_unlock(&st->mu);
      pthread_mutex_lock(&st->tmu);
      if (rc != JB_OK) {
        /* What the disk holds of the commits since the last record is
         * unknown: no more writes here (env.c, "After a failed commit"),
         * and no pin that would make other processes' files grow. */
        jb__store_mark_failed(s, EIO);
        pthread_mutex_lock(&st->mu);
        end_snapshot(s, &st->pin);
        end_snapshot(s, &st->cand);
        pthread_mutex_unlock(&st->mu);
        break;
      }
      continue;
    }
    if (have) {
      /* The record moves the pin only once it is on the disk (its writer
       * may have died before flushing it); slots of dead processes are
       * cleared meanwhile: this process's own pin, at or below every
       * record it could be brought back to, protects them. */
      flock_on(st->fd, LOCK_EX);
      bool durable = best_record(st->fd, &r) && record_durable(s, &r) == JB_OK;
      if (durable) advance(s, r.txnid);
      flock_on(st->fd, LOCK_UN);
      int dead = 0;
      if (durable && st->pin) mdb_reader_check(s->env, &dead);
    }
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_lock(&st->tmu);
    if (st->stop) break;
    if (pending)
      st->idle = false; /* wakes when due, whatever commits meanwhile */
    else if (st->dirty)
      continue;
    /* Asleep until the record is a period old (commits pending), or a
     * period (idle: a commit of this process wakes it). */
    int64_t wait = pending ? r.mono_us + per - now : per;
    if (wait < 1000) wait = 1000;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += wait / 1000000;
    ts.tv_nsec += (wait % 1000000) * 1000;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&st->tcv, &st->tmu, &ts);
  }
  pthread_mutex_unlock(&st->tmu);
  return NULL;
}

/* -------------------------------------------------------------- close */

void jb__steady_info(jb_store *s, jb_steady_info *out) {
  memset(out, 0, sizeof *out);
  struct jb_steady *st = s->steady;
  if (st == NULL) return;
  pthread_mutex_lock(&st->mu);
  out->on = st->joined;
  out->period_ms = period_us(st) / 1000;
  out->flushes = st->flushes;
  out->records = st->records;
  out->pin_txnid = st->pin ? st->pin_id : 0;
  steady_rec r;
  if (best_record(st->fd, &r)) out->recorded_txnid = r.txnid;
  pthread_mutex_unlock(&st->mu);
}

int jb__steady_set_period(jb_store *s, int64_t ms) {
  struct jb_steady *st = s->steady;
  if (st == NULL)
    return jb__err(JB_EREADONLY, "board %s is open read-only: cannot set its "
                   "flush interval", s->path);
  if (ms < 0 || ms > 24 * 3600 * 1000)
    return jb__err(JB_EINVAL, "flush interval %lld ms is out of range (0 for "
                   "the default of %d ms, up to one day)", (long long)ms,
                   JB_FLUSH_INTERVAL_DEFAULT_MS);
  /* Under mu: a flock is per open file, so this process's recorder and
   * this would share (and drop) one lock. */
  pthread_mutex_lock(&st->mu);
  flock_on(st->fd, LOCK_EX);
  int rc = put_header(s, hdr(st)->on, (uint32_t)ms, false);
  flock_on(st->fd, LOCK_UN);
  pthread_mutex_unlock(&st->mu);
  pthread_mutex_lock(&st->tmu);
  pthread_cond_signal(&st->tcv);
  pthread_mutex_unlock(&st->tmu);
  return rc;
}

void jb__steady_close(jb_store *s) {
  struct jb_steady *st = s->steady;
  if (st == NULL) return;
  if (st->thread_on) {
    pthread_mutex_lock(&st->tmu);
    st->stop = true;
    pthread_cond_signal(&st->tcv);
    pthread_mutex_unlock(&st->tmu);
    pthread_join(st->thread, NULL);
  }
  if (st->joined && !atomic_load(&s->failed)) {
    pthread_mutex_lock(&st->mu);
    (void)flush_record(s, 0, false); /* a clean close leaves it steady */
    pthread_mutex_unlock(&st->mu);
  }
  end_snapshot(s, &st->pin);
  end_snapshot(s, &st->cand);
  if (st->map) munmap((void *)st->map, STEADY_PAGE);
  fd_untrack(st->fd);
  close(st->fd);
  pthread_mutex_destroy(&st->mu);
  pthread_mutex_destroy(&st->tmu);
  pthread_cond_destroy(&st->tcv);
  free(st);
  s->steady = NULL;
}

/* ------------------------------------------------------- the board API */

/* A handle from before fork() used in the child (as run_ex refuses). */
static int forked(jb_store *s) {
  return jb__err(JB_EINVAL, "board %s: this handle was opened before fork(); "
                 "open the board again in the child process", s->path);
}

int jb__store_sync(jb_store *s) {
  if (s->fork_gen != jb__fork_generation()) return forked(s);
  if (atomic_load(&s->failed))
    return jb__err(JB_EIO, "board %s: an earlier commit or flush of this "
                   "process failed: reopen the board", s->path);
  int rc = jb__steady_sync(s);
  if (rc != JB_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    jb__store_mark_failed(s, EIO);
    return jb__err(JB_EIO, "%s", msg);
  }
  return JB_OK;
}

int jb__store_set_flush_interval(jb_store *s, int64_t ms) {
  if (s->fork_gen != jb__fork_generation()) return forked(s);
  return jb__steady_set_period(s, ms);
}

void jb__store_flush_info(jb_store *s, jb_flush_info *out) {
  if (s->fork_gen != jb__fork_generation()) return; /* zeros */
  jb_steady_info i;
  jb__steady_info(s, &i);
  out->on = i.on;
  out->flush_interval_ms = i.period_ms;
  out->flushes = i.flushes;
  out->recorded_txnid = i.recorded_txnid;
  out->latest_txnid = newest_txnid(s);
}
