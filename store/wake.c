/*
 * wake.c - the board's shared wake-up signal: a counter in a small
 * memory-mapped file, bumped after every committed write, with a shared
 * futex wake for the processes sleeping on it.
 *
 * The protocol (the classic one of a futex event counter):
 *
 *   writer: commit; seq += 1; if (waiters) FUTEX_WAKE(seq, all)
 *   waiter: v = seq; check the board (read transaction); if done, return;
 *           waiters += 1; if (seq == v) FUTEX_WAIT(seq, v, deadline);
 *           waiters -= 1; loop
 *
 * Every access is sequentially consistent, so either the writer sees the
 * waiter counted (and wakes it) or the waiter sees the new count (and does
 * not sleep; FUTEX_WAIT also refuses to sleep when seq moved). A waiter
 * checks the board after every wake-up, so a spurious wake costs one
 * read and a missed one cannot happen for a commit made after `v` was
 * read. A waiter killed while asleep leaves `waiters` counted: writers then
 * make one needless futex call per commit, nothing worse.
 *
 * The file holds nothing that matters, so it is rebuilt when it is missing
 * or its header is not ours. A rebuilt file is a new inode that processes
 * which mapped the old one do not see, so:
 *  - the board's meta "signal" names the current file (a random id in its
 *    header); every write transaction compares it with the file this
 *    process maps, and a writer that finds them different maps the current
 *    file before it bumps (and bumps the old one too, so its sleepers move);
 *  - a process that waits also runs a watcher thread that follows the
 *    mapped file with inotify: when it is deleted or replaced (its link
 *    count changes) or written to, it wakes this process's waiters, which
 *    map the file at the path again (making it if it is missing);
 * so waiters sleeping on a deleted file still wake, and no writer keeps
 * bumping a file nobody waits on. Old mappings are kept until the board
 * closes, so a pointer to one stays valid (jb__signal_poke walks them from
 * a signal handler).
 *
 * The watcher also ends waits for claimable jobs when a process holding a
 * process-bound claim ends: no commit marks that, so it holds a pidfd of
 * each such holder and pokes the waiters when one becomes readable.
 *
 * Truncating the file under running processes is the one thing that hurts:
 * like any mapped file, a page cut from under the map is a SIGBUS. Deleting
 * it, or writing garbage into it, is safe.
 */
#include "wake.h"

#include "txn.h"
#include "life.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIG_MAGIC "JBSIGNAL"
#define SIG_VERSION 1u
#define SIG_SIZE 4096u
/* Most holder processes the watcher follows at once; a waiter for
 * claimable jobs facing more than this also wakes every second. */
#define MAX_WATCHED 256

/* The file's layout: a header, then the futex word and the waiter count on
 * a cache line of their own. */
typedef struct {
  char magic[8];
  uint32_t version;
  uint32_t size;
  uint8_t id[16]; /* random; meta "signal" names the current file by it */
  uint8_t pad[32];
  _Atomic uint32_t seq;     /* offset 64: the futex word */
  _Atomic uint32_t waiters; /* sleepers (or about to sleep) on seq */
} sig_hdr;

_Static_assert(sizeof(sig_hdr) <= SIG_SIZE, "signal header fits its page");

struct jb_sigmap {
  sig_hdr *hdr;
  dev_t dev;
  ino_t ino;
  uint8_t id[16];
  struct jb_sigmap *older; /* set before the map is published */
};

typedef struct {
  jb_proc_id proc;
  int fd; /* pidfd, -1 once reported */
} watched;

struct jb_watcher {
  pthread_t thread;
  int ino_fd;  /* inotify on the board directory */
  int wake_fd; /* eventfd: stop, or the holder set changed */
  pthread_mutex_t mu;
  atomic_bool stop;
  jb_proc_id want[MAX_WATCHED]; /* holders to follow (under mu) */
  size_t n_want;
  bool changed;
  watched held[MAX_WATCHED]; /* the watcher's own, no lock */
  size_t n_held;
  /* The holders it follows whose end has not been signalled (under mu):
   * alive, as far as any reader of this process needs to know. */
  jb_proc_id alive[MAX_WATCHED];
  size_t n_alive;
  /* Holders it could not follow (no pidfd: out of descriptors): waits
   * for claimable jobs then look again every second. */
  atomic_bool unfollowed;
  /* Whether the current signal file is watched (inotify may be out of
   * instances or watches: then waits look at the file every second). */
  atomic_bool watching;
};

static const MDB_val meta_key = {6, "signal"};

atomic_ulong jb__wait_attempts;

/* ---------------------------------------------------------------- futex */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val,
                  const struct timespec *ts, uint32_t val3) {
  return syscall(SYS_futex, addr, op, val, ts, NULL, val3);
}

static void wake_all(sig_hdr *h) {
  futex(&h->seq, FUTEX_WAKE, INT_MAX, NULL, 0);
}

/* Wake the waiters whose bitset meets `mask` (wake.h JB_WAKE_*). */
static void wake_mask(sig_hdr *h, uint32_t mask) {
  futex(&h->seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, mask);
}

/* Sleep while seq == val, until `deadline` (CLOCK_MONOTONIC us; INT64_MAX:
 * none). Shared (not FUTEX_PRIVATE): the word is in a file mapping. */
static void wait_on(sig_hdr *h, uint32_t val, int64_t deadline,
                    uint32_t mask) {
  struct timespec ts, *tp = NULL;
  if (deadline != INT64_MAX) {
    ts.tv_sec = (time_t)(deadline / 1000000);
    ts.tv_nsec = (long)(deadline % 1000000) * 1000;
    tp = &ts;
  }
  futex(&h->seq, FUTEX_WAIT_BITSET, val, tp, mask);
}

/* ----------------------------------------------------------------- file */

static bool hdr_valid(const sig_hdr *h) {
  return memcmp(h->magic, SIG_MAGIC, 8) == 0 && h->version == SIG_VERSION &&
         h->size == SIG_SIZE;
}

static void sig_path(const jb_store *s, char *out, size_t n) {
  snprintf(out, n, "%s/%s", s->path, JB_SIGNAL_FILE);
}

/* Open the file at the path (making it if missing), give it a valid header
 * if it has none (under its flock, so two processes agree), and map it. */
static int map_file(jb_store *s, struct jb_sigmap **out) {
  char path[4200];
  sig_path(s, path, sizeof path);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
  if (fd < 0) {
    char what[4300];
    snprintf(what, sizeof what, "board signal file %s", path);
    return jb__err_errno(errno, what);
  }
  struct stat st;
  int rc = JB_OK;
  if (fstat(fd, &st) != 0) {
    rc = jb__err_errno(errno, path);
  } else if (!S_ISREG(st.st_mode)) {
    rc = jb__err(JB_ECORRUPT, "board signal file %s is not a regular file: "
                 "remove it (it is rebuilt)", path);
  }
  sig_hdr cur;
  if (rc == JB_OK &&
      ((size_t)st.st_size < SIG_SIZE ||
       pread(fd, &cur, sizeof cur, 0) != (ssize_t)sizeof cur || !hdr_valid(&cur))) {
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    /* Again under the lock: another process may have just built it. */
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= SIG_SIZE &&
        pread(fd, &cur, sizeof cur, 0) == (ssize_t)sizeof cur && hdr_valid(&cur)) {
      /* built meanwhile */
    } else if ((size_t)st.st_size < SIG_SIZE && ftruncate(fd, SIG_SIZE) != 0) {
      rc = jb__err_errno(errno, path);
    } else {
      /* Only the header is written: the counters of a file rewritten in
       * place may be in use by waiters that map it. */
      sig_hdr h;
      memset(&h, 0, offsetof(sig_hdr, seq));
      memcpy(h.magic, SIG_MAGIC, 8);
      h.version = SIG_VERSION;
      h.size = SIG_SIZE;
      rc = jb__uuid_generate(h.id);
      if (rc == JB_OK &&
          pwrite(fd, &h, offsetof(sig_hdr, seq), 0) != (ssize_t)offsetof(sig_hdr, seq))
        rc = jb__err_errno(errno ? errno : EIO, path);
    }
    flock(fd, LOCK_UN);
  }
  void *p = MAP_FAILED;
  if (rc == JB_OK) {
    p = mmap(NULL, SIG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) rc = jb__err_errno(errno, path);
  }
  close(fd); /* the map keeps the file */
  if (rc != JB_OK) return rc;
  struct jb_sigmap *m = calloc(1, sizeof *m);
  if (m == NULL) {
    munmap(p, SIG_SIZE);
    return jb__err(JB_ENOMEM, "out of memory mapping %s", path);
  }
  m->hdr = p;
  m->dev = st.st_dev;
  m->ino = st.st_ino;
  memcpy(m->id, m->hdr->id, 16);
  *out = m;
  return JB_OK;
}

/* Make meta "signal" name `id` (a write only when it does not). */
typedef struct {
  const uint8_t *id;
  bool same;
} meta_ctx;

static int meta_read_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  meta_ctx *c = vctx;
  MDB_val v;
  int rc = mdb_get(txn, s->meta, (MDB_val *)&meta_key, &v);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  c->same = v.mv_size == 16 && memcmp(v.mv_data, c->id, 16) == 0;
  return 0;
}

static int meta_write_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  meta_ctx *c = vctx;
  MDB_val v = {16, (void *)c->id};
  return mdb_put(txn, s->meta, (MDB_val *)&meta_key, &v, 0);
}

static int name_in_meta(jb_store *s, const uint8_t id[16]) {
  meta_ctx c = {id, false};
  int rc = jb__store_read(s, meta_read_body, &c);
  if (rc == JB_OK && !c.same) rc = jb__store_write(s, meta_write_body, &c);
  return rc;
}

static struct jb_sigmap *current(jb_store *s) {
  return atomic_load(&s->sig);
}

/* Is the map we use still the file at the path, with our header? */
static bool still_current(jb_store *s) {
  struct jb_sigmap *m = current(s);
  char path[4200];
  struct stat st;
  sig_path(s, path, sizeof path);
  return m && stat(path, &st) == 0 && st.st_dev == m->dev &&
         st.st_ino == m->ino && hdr_valid(m->hdr) &&
         memcmp(m->hdr->id, m->id, 16) == 0;
}

/* The watcher follows the file at the path (its inode: a deletion or a
 * replacement changes its link count, IN_ATTRIB), not the directory, whose
 * data file changes at every commit. Called under sig_lock. */
static void watch_file(jb_store *s) {
  struct jb_watcher *w = s->watcher;
  if (w == NULL) return;
  char path[4200];
  sig_path(s, path, sizeof path);
  atomic_store(&w->watching,
               w->ino_fd >= 0 &&
                   inotify_add_watch(w->ino_fd, path,
                                     IN_ATTRIB | IN_MODIFY | IN_DELETE_SELF |
                                         IN_MOVE_SELF) >= 0);
}

/* Map the file now at the path, in place of ours, and name it in meta.
 * The old map is kept (see the top) and its sleepers are woken to move.
 * The watch is set after the map: should the file be replaced between the
 * two, the map is not current, and the loop maps the newer one. */
static int follow(jb_store *s) {
  int rc = JB_OK;
  for (int attempt = 0; rc == JB_OK; attempt++) {
    pthread_mutex_lock(&s->sig_lock);
    struct jb_sigmap *old = current(s), *m = NULL;
    rc = map_file(s, &m);
    if (rc == JB_OK && old && m->dev == old->dev && m->ino == old->ino &&
        memcmp(m->id, old->id, 16) == 0) {
      munmap(m->hdr, SIG_SIZE); /* the one we have: no new map */
      free(m);
    } else if (rc == JB_OK) {
      m->older = old;
      atomic_store(&s->sig, m);
      if (old) {
        atomic_fetch_add(&old->hdr->seq, 1);
        wake_all(old->hdr);
      }
    }
    if (rc == JB_OK) watch_file(s);
    pthread_mutex_unlock(&s->sig_lock);
    if (rc != JB_OK || attempt == 3 || still_current(s)) break;
  }
  if (rc == JB_OK) rc = name_in_meta(s, current(s)->id);
  return rc;
}

int jb__signal_open(jb_store *s) {
  pthread_mutex_init(&s->sig_lock, NULL);
  s->sig_ready = true;
  return follow(s);
}

bool jb__signal_stale(jb_store *s, MDB_txn *txn) {
  struct jb_sigmap *m = current(s);
  if (m == NULL) return false;
  MDB_val v;
  int rc = mdb_get(txn, s->meta, (MDB_val *)&meta_key, &v);
  return rc != 0 || v.mv_size != 16 || memcmp(v.mv_data, m->id, 16) != 0;
}

void jb__signal_commit(jb_store *s, bool stale, uint32_t lanes) {
  /* A rebuilt file elsewhere: follow it first. Should that fail (the
   * message is dropped: the write itself succeeded), the old file is
   * bumped, and the next write tries again. */
  if (stale) follow(s);
  struct jb_sigmap *m = current(s);
  if (m == NULL) return;
  atomic_fetch_add(&m->hdr->seq, 1);
  if (atomic_load(&m->hdr->waiters) != 0)
    wake_mask(m->hdr, JB_WAKE_GENERAL | lanes);
}

void jb__signal_poke(jb_store *s) {
  for (struct jb_sigmap *m = current(s); m; m = m->older) {
    atomic_fetch_add(&m->hdr->seq, 1);
    wake_all(m->hdr);
  }
}

/* -------------------------------------------------------------- watcher */

/* Publish which holders the watcher follows (an open pidfd that has not
 * signalled): done before any poke, so that a waiter woken by a holder's
 * end does not find it still listed. */
static void publish_alive(struct jb_watcher *w) {
  pthread_mutex_lock(&w->mu);
  w->n_alive = 0;
  for (size_t i = 0; i < w->n_held; i++)
    if (w->held[i].fd >= 0) w->alive[w->n_alive++] = w->held[i].proc;
  pthread_mutex_unlock(&w->mu);
}

bool jb__signal_follows(jb_store *s, const jb_proc_id *p) {
  struct jb_watcher *w = s->watcher;
  if (w == NULL) return false;
  bool found = false;
  pthread_mutex_lock(&w->mu);
  for (size_t i = 0; i < w->n_alive && !found; i++)
    found = w->alive[i].pid == p->pid && w->alive[i].start == p->start;
  pthread_mutex_unlock(&w->mu);
  return found;
}

static void watcher_sync(struct jb_watcher *w, jb_store *s) {
  jb_proc_id want[MAX_WATCHED];
  size_t n_want;
  pthread_mutex_lock(&w->mu);
  n_want = w->n_want;
  memcpy(want, w->want, n_want * sizeof *want);
  w->changed = false;
  pthread_mutex_unlock(&w->mu);
  /* Drop what is no longer wanted. */
  size_t keep = 0;
  for (size_t i = 0; i < w->n_held; i++) {
    bool wanted = false;
    for (size_t j = 0; j < n_want && !wanted; j++)
      wanted = want[j].pid == w->held[i].proc.pid &&
               want[j].start == w->held[i].proc.start;
    if (wanted) {
      w->held[keep++] = w->held[i];
    } else if (w->held[i].fd >= 0) {
      close(w->held[i].fd);
    }
  }
  w->n_held = keep;
  /* Follow what is new. A holder that is already gone (or whose pid is
   * another process now) is reported at once. */
  bool gone = false, lost = false;
  for (size_t j = 0; j < n_want; j++) {
    bool have = false;
    for (size_t i = 0; i < w->n_held && !have; i++)
      have = want[j].pid == w->held[i].proc.pid &&
             want[j].start == w->held[i].proc.start;
    if (have || w->n_held == MAX_WATCHED) continue;
    /* A pidfd names the process, not the number: once open, the start
     * time read after it is that process's (or it is gone already). */
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)want[j].pid, 0);
    bool dead = fd < 0 && errno == ESRCH;
    lost = lost || (fd < 0 && !dead);
    if (fd >= 0 && !jb__proc_alive(&want[j])) {
      close(fd);
      fd = -1;
      dead = true;
    }
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    gone = gone || dead;
    /* Kept even when it could not be followed (fd -1): reported once. */
    w->held[w->n_held++] = (watched){want[j], fd};
  }
  for (size_t i = 0; i < w->n_held && !lost; i++)
    lost = w->held[i].fd < 0 && jb__proc_alive(&w->held[i].proc);
  /* A change either way wakes the waiters, so that they sleep with (or
   * without) the one-second bound. */
  if (atomic_exchange(&w->unfollowed, lost) != lost) gone = true;
  publish_alive(w);
  if (gone) jb__signal_poke(s);
}

static void *watcher_main(void *arg) {
  jb_store *s = arg;
  struct jb_watcher *w = s->watcher;
  struct pollfd pf[2 + MAX_WATCHED];
  jb_proc_id idx_proc[MAX_WATCHED]; /* whose pidfd each pf[2..] is */
  while (!atomic_load(&w->stop)) {
    pf[0] = (struct pollfd){.fd = w->ino_fd, .events = POLLIN};
    pf[1] = (struct pollfd){.fd = w->wake_fd, .events = POLLIN};
    nfds_t n = 2;
    for (size_t i = 0; i < w->n_held; i++) {
      if (w->held[i].fd < 0) continue;
      idx_proc[n - 2] = w->held[i].proc;
      pf[n++] = (struct pollfd){.fd = w->held[i].fd, .events = POLLIN};
    }
    if (poll(pf, n, -1) < 0) continue; /* EINTR */
    if (pf[0].revents & POLLIN) {
      char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
      ssize_t len = read(w->ino_fd, buf, sizeof buf);
      bool ours = false;
      for (ssize_t off = 0; off < len;) {
        const struct inotify_event *ev = (const void *)(buf + off);
        /* IN_IGNORED: the watch of an old file went with its inode. */
        if (!(ev->mask & IN_IGNORED)) ours = true;
        off += (ssize_t)(sizeof *ev + ev->len);
      }
      if (ours) {
        atomic_fetch_add(&s->sig_dirgen, 1);
        jb__signal_poke(s);
      }
    }
    if (pf[1].revents & POLLIN) {
      uint64_t v;
      if (read(w->wake_fd, &v, sizeof v) < 0) {
        /* nothing to do: the counter is reset by the read when it works */
      }
      if (!atomic_load(&w->stop)) watcher_sync(w, s);
    }
    /* An ended holder is found again by its process and its pidfd: a
     * sync above may have rebuilt w->held (dropped, moved, added entries),
     * and the poll's indices would then name other entries (closing a
     * live holder's pidfd, and leaving a dead one's open: followed as
     * alive). One the sync dropped was closed by it. */
    bool ended = false;
    for (nfds_t k = 2; k < n; k++) {
      if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
        continue;
      for (size_t i = 0; i < w->n_held; i++) {
        watched *h = &w->held[i];
        if (h->fd != pf[k].fd || h->proc.pid != idx_proc[k - 2].pid ||
            h->proc.start != idx_proc[k - 2].start)
          continue;
        close(h->fd);
        h->fd = -1; /* reported: kept until no longer wanted */
        ended = true;
        break;
      }
    }
    if (ended) {
      publish_alive(w);
      jb__signal_poke(s);
    }
  }
  return NULL;
}

/* Start the watcher (once per store); then make sure our map is the file
 * at the path: from here on the watcher reports any change to it. */
static int start_watcher(jb_store *s) {
  pthread_mutex_lock(&s->sig_lock);
  int rc = JB_OK;
  if (s->watcher == NULL) {
    struct jb_watcher *w = calloc(1, sizeof *w);
    if (w == NULL) {
      pthread_mutex_unlock(&s->sig_lock);
      return jb__err(JB_ENOMEM, "out of memory starting a wait");
    }
    /* Without inotify (fs.inotify.max_user_instances reached: 128 by
     * default) waits still work, and look at the signal file once a
     * second instead of being told when it is deleted. */
    w->ino_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if ((w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
      rc = jb__err_errno(errno, "starting a wait (eventfd)");
    } else {
      pthread_mutex_init(&w->mu, NULL);
      s->watcher = w;
      watch_file(s);
      /* The thread blocks every signal: they belong to the program. */
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      int e = pthread_create(&w->thread, NULL, watcher_main, s);
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      if (e != 0) {
        /* Another thread may be reading the watcher (jb__signal_follows)
         * right now: it is unpublished but not freed (a rare error path). */
        s->watcher = NULL;
        rc = jb__err_errno(e, "starting the board's watcher thread");
        w->n_alive = 0;
        if (w->ino_fd >= 0) close(w->ino_fd);
        close(w->wake_fd);
        w = NULL;
      }
    }
    if (rc != JB_OK && w != NULL) {
      if (w->ino_fd >= 0) close(w->ino_fd);
      if (w->wake_fd >= 0) close(w->wake_fd);
      free(w);
    }
  }
  pthread_mutex_unlock(&s->sig_lock);
  if (rc == JB_OK && !still_current(s)) rc = follow(s);
  return rc;
}

/* Hand the watcher the holders of bound claims (replacing the last set). */
static void watch_holders(jb_store *s, const jb_proc_id *p, size_t n) {
  struct jb_watcher *w = s->watcher;
  if (w == NULL) return;
  pthread_mutex_lock(&w->mu);
  bool same = n == w->n_want && memcmp(p, w->want, n * sizeof *p) == 0;
  if (!same) {
    memcpy(w->want, p, n * sizeof *p);
    w->n_want = n;
    w->changed = true;
  }
  pthread_mutex_unlock(&w->mu);
  if (!same) {
    uint64_t one = 1;
    if (write(w->wake_fd, &one, sizeof one) < 0) {
      /* the counter is full: the watcher is already due to look */
    }
  }
}

void jb__signal_close(jb_store *s) {
  if (!s->sig_ready) return;
  struct jb_watcher *w = s->watcher;
  if (w) {
    atomic_store(&w->stop, true);
    uint64_t one = 1;
    if (write(w->wake_fd, &one, sizeof one) < 0) {
      /* full counter: the watcher wakes anyway */
    }
    pthread_join(w->thread, NULL);
    for (size_t i = 0; i < w->n_held; i++)
      if (w->held[i].fd >= 0) close(w->held[i].fd);
    if (w->ino_fd >= 0) close(w->ino_fd);
    close(w->wake_fd);
    pthread_mutex_destroy(&w->mu);
    free(w);
    s->watcher = NULL;
  }
  struct jb_sigmap *m = current(s);
  while (m) {
    struct jb_sigmap *next = m->older;
    munmap(m->hdr, SIG_SIZE);
    free(m);
    m = next;
  }
  atomic_store(&s->sig, NULL);
  pthread_mutex_destroy(&s->sig_lock);
}

/* ----------------------------------------------------------------- wait */

/* A wait on a board opened read-only: it cannot count itself among the
 * signal file's waiters (nor map it), so it looks at the board every
 * READONLY_POLL_US, in steps short enough to see a cancellation. */
#define READONLY_POLL_US 200000
static int wait_polling(jb_store *s, jb_wait_fn fn, void *ctx,
                        int64_t timeout_ms, int64_t deadline,
                        const atomic_int *cancelled) {
  for (;;) {
    if (atomic_load(cancelled))
      return jb__err(JB_EINTERRUPTED, "wait on board %s: interrupted", s->path);
    int64_t retry = INT64_MAX;
    int rc = fn(ctx, &retry);
    if (rc != JB__AGAIN) return rc;
    int64_t now = jb__mono_us();
    if (now >= deadline)
      return jb__err(JB_ETIMEDOUT, "wait on board %s: timed out after %lld ms",
                     s->path, (long long)timeout_ms);
    int64_t until = now + READONLY_POLL_US;
    if (retry < until) until = retry;
    if (deadline < until) until = deadline;
    while (now < until && !atomic_load(cancelled)) {
      int64_t step = until - now < 20000 ? until - now : 20000;
      struct timespec ts = {0, (long)step * 1000};
      nanosleep(&ts, NULL);
      now = jb__mono_us();
    }
  }
}

int jb__store_wait(jb_store *s, jb_wait_fn fn, void *ctx, int64_t timeout_ms,
                   const atomic_int *cancelled) {
  return jb__store_wait_mask(s, fn, ctx, timeout_ms, cancelled, JB_WAKE_ANY);
}

int jb__store_wait_mask(jb_store *s, jb_wait_fn fn, void *ctx,
                        int64_t timeout_ms, const atomic_int *cancelled,
                        uint32_t mask) {
  int64_t start = jb__mono_us();
  int64_t deadline = INT64_MAX;
  if (timeout_ms >= 0 && timeout_ms < (INT64_MAX - start) / 1000 - 1)
    deadline = start + timeout_ms * 1000;
  int rc = JB_OK;
  /* Read before the watcher's first look at the file: a change it reports
   * from then on is a change this wait has not seen. */
  unsigned seen = atomic_load(&s->sig_dirgen);
  if (s->readonly) return wait_polling(s, fn, ctx, timeout_ms, deadline,
                                       cancelled);
  if (timeout_ms != 0 && (rc = start_watcher(s)) != JB_OK) return rc;
  for (;;) {
    if (atomic_load(cancelled))
      return jb__err(JB_EINTERRUPTED, "wait on board %s: interrupted", s->path);
    unsigned now_gen = atomic_load(&s->sig_dirgen);
    /* Without an inotify watch on the file (none to be had), look at the
     * file at every turn, and turn at least every second. */
    bool blind = s->watcher && !atomic_load(&s->watcher->watching);
    if (now_gen != seen || blind) {
      seen = now_gen;
      if (!still_current(s) && (rc = follow(s)) != JB_OK) return rc;
    }
    struct jb_sigmap *m = current(s);
    uint32_t v = atomic_load(&m->hdr->seq);
    int64_t retry = INT64_MAX;
    atomic_fetch_add(&jb__wait_attempts, 1);
    rc = fn(ctx, &retry);
    if (rc != JB__AGAIN) return rc;
    int64_t now = jb__mono_us();
    if (now >= deadline)
      return jb__err(JB_ETIMEDOUT, "wait on board %s: timed out after %lld ms",
                     s->path, (long long)timeout_ms);
    int64_t until = retry < deadline ? retry : deadline;
    if (blind && until - now > 1000000) until = now + 1000000;
    if (until <= now) continue;
    atomic_fetch_add(&m->hdr->waiters, 1);
    if (atomic_load(&m->hdr->seq) == v && !atomic_load(cancelled) &&
        atomic_load(&s->sig_dirgen) == seen)
      wait_on(m->hdr, v, until, mask);
    atomic_fetch_sub(&m->hdr->waiters, 1);
  }
}

/* ----------------------------------------------------------- wait state */

typedef struct {
  unsigned flags;
  int64_t first_lease_bt; /* 0: none */
  int64_t next_due_us;    /* the next delayed job's due time; 0: none */
  jb_proc_id holders[MAX_WATCHED];
  size_t n_holders;
  bool more_holders;
} state_ctx;

/* The first lease of this boot, and the distinct processes holding bound
 * claims of this boot (a skip from one process to the next). */
static int state_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  state_ctx *c = vctx;
  MDB_cursor *cur;
  MDB_val k, v;
  uint8_t key[4 + 4 + 8];
  size_t n_due;
  int rc = jb__due_scan(s, txn, jb__now_us(), &n_due, &c->next_due_us);
  if (rc) return rc;
  if ((rc = mdb_cursor_open(txn, s->leases, &cur))) return rc;
  /* The first lease still live: one lapsed and not yet ended (another
   * name's, which a wait by names does not count) must not make the wait
   * look again at once, and again. */
  jb__put_be32(key, s->epoch);
  jb__put_be64(key + 4, (uint64_t)jb__boottime_us() + 1);
  k = (MDB_val){4 + 8, key};
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  if (rc == 0 && k.mv_size == JB_LEASEKEY_LEN &&
      jb__be32(k.mv_data) == s->epoch)
    c->first_lease_bt = (int64_t)jb__be64((const uint8_t *)k.mv_data + 4);
  mdb_cursor_close(cur);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if ((rc = mdb_cursor_open(txn, s->holders, &cur))) return rc;
  memset(key, 0, sizeof key);
  jb__put_be32(key, s->epoch);
  for (;;) {
    k = (MDB_val){sizeof key, key};
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc || k.mv_size != JB_HOLDERKEY_LEN || jb__be32(k.mv_data) != s->epoch)
      break;
    const uint8_t *p = k.mv_data;
    if (c->n_holders == MAX_WATCHED) {
      c->more_holders = true;
      break;
    }
    uint32_t pid = jb__be32(p + 4);
    uint64_t st = jb__be64(p + 8);
    c->holders[c->n_holders++] = (jb_proc_id){pid, st};
    /* The next process: (pid, start + 1), or (pid + 1, 0) at the end. */
    memcpy(key, p, 16);
    if (st == UINT64_MAX) {
      if (pid == UINT32_MAX) break;
      jb__put_be32(key + 4, pid + 1);
      jb__put_be64(key + 8, 0);
    } else {
      jb__put_be64(key + 8, st + 1);
    }
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int jb__store_wait_state(jb_store *s, unsigned flags, size_t *count,
                         int64_t *lapse_mono_us) {
  *lapse_mono_us = INT64_MAX;
  int rc = JB_OK;
  *count = 0;
  if (!(flags & JB__WAIT_TIMERS)) rc = jb__store_count(s, count, flags);
  if (rc != JB_OK || *count > 0 ||
      !(flags & (JB_ONLY_UNCLAIMED | JB__WAIT_TIMERS)))
    return rc;
  state_ctx *c = calloc(1, sizeof *c);
  if (c == NULL) return jb__err(JB_ENOMEM, "out of memory waiting on a board");
  c->flags = flags;
  rc = jb__store_read(s, state_body, c);
  if (rc == JB_OK) {
    if (c->first_lease_bt) {
      int64_t left = c->first_lease_bt - jb__boottime_us();
      *lapse_mono_us = jb__mono_us() + (left > 0 ? left : 0);
    }
    if (c->next_due_us) {
      /* A delayed job becomes claimable then: no event marks it, so the
       * wait wakes by itself (wall clock to monotonic, now). */
      int64_t left = c->next_due_us - jb__now_us();
      int64_t t = jb__mono_us() + (left > 0 ? left : 0);
      if (t < *lapse_mono_us) *lapse_mono_us = t;
    }
    if (c->more_holders ||
        (s->watcher && atomic_load(&s->watcher->unfollowed))) {
      /* More holders than the watcher follows, or some it could not
       * follow: look again every second. */
      int64_t t = jb__mono_us() + 1000000;
      if (t < *lapse_mono_us) *lapse_mono_us = t;
    }
    watch_holders(s, c->holders, c->n_holders);
  }
  free(c);
  return rc;
}
