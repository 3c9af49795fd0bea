/*
 * env.c - opening a board's LMDB environment, the schema check, and the
 * transaction wrappers that grow the map when it is full.
 */
#include "life.h"
#include "steady.h"
#include "txn.h"
#include "names.h"
#include "wake.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define DEFAULT_MAP_SIZE ((size_t)64 << 20)
/* Growth doubles the map up to this step, then adds it: a board of 10 GiB
 * does not ask for 20. */
#define MAX_GROWTH_STEP ((size_t)1 << 30)
/* Readers: one slot per open read transaction of any process on the host.
 * LMDB's default of 126 is small for many worker processes with threads;
 * 1022 costs 64 KiB of lock file. */
#define MAX_READERS 1022
/* Boards are shared by a group (workers under one user, monitoring under
 * another): files 0660 and the directory 0770, less the caller's umask. */
#define BOARD_FILE_MODE 0660
#define BOARD_DIR_MODE 0770

int jb__store_error(int rc, const char *what) {
  switch (rc) {
  case MDB_CORRUPTED:
  case MDB_PAGE_NOTFOUND:
  case MDB_INVALID:
  case MDB_BAD_DBI:
  case MDB_INCOMPATIBLE:
    return jb__err(JB_ECORRUPT, "%s: %s", what, mdb_strerror(rc));
  case MDB_VERSION_MISMATCH:
    return jb__err(JB_EVERSION, "%s: %s", what, mdb_strerror(rc));
  case MDB_MAP_FULL:
  case MDB_TXN_FULL:
    return jb__err(JB_EFULL, "%s: %s", what, mdb_strerror(rc));
  case MDB_READERS_FULL:
    return jb__err(JB_EIO, "%s: too many open readers on this host (%s)",
                   what, mdb_strerror(rc));
  default:
    if (rc > 0) return jb__err_errno(rc, what);
    return jb__err(JB_EIO, "%s: %s", what, mdb_strerror(rc));
  }
}

/* Reserve the file's blocks up to the map size. With MDB_WRITEMAP a write
 * to a hole of the file on a full disk is a SIGBUS that kills the process;
 * reserving first turns a full disk into a clean JB_EFULL. */
static int reserve_file(jb_store *s, size_t size) {
  if (!s->writemap) return JB_OK;
  int fd;
  int rc = mdb_env_get_fd(s->env, &fd);
  if (rc) return jb__store_error(rc, "board file");
  rc = posix_fallocate(fd, 0, (off_t)size);
  if (rc == EOPNOTSUPP || rc == EINVAL) return JB_OK; /* cannot: LMDB's risk */
  if (rc) {
    char what[600];
    snprintf(what, sizeof what, "cannot reserve %zu bytes for board %s", size,
             s->path);
    return jb__err_errno(rc, what);
  }
  return JB_OK;
}

/*
 * Map sizes and the data file, across processes.
 *
 * With MDB_WRITEMAP, LMDB truncates the data file to the map size whenever
 * it maps it (at open and at mdb_env_set_mapsize). A process that maps a
 * smaller size than another one's would cut the file under the other's
 * map, and the other's next write past the cut is a SIGBUS (seen here with
 * three processes growing one board). So the file must never shrink:
 * every open, growth and adoption of a map size takes an exclusive flock on
 * the data file, and never asks for less than the file's current size. The
 * flock is ours alone (LMDB locks lock.mdb with fcntl, never data.mdb with
 * flock), and it is held only around the resize, never in a transaction.
 */
static int file_size(int fd, size_t *out) {
  struct stat st;
  if (fstat(fd, &st) != 0) return jb__err_errno(errno, "board data file");
  *out = (size_t)st.st_size;
  return JB_OK;
}

static int data_fd(jb_store *s, int *fd) {
  int rc = mdb_env_get_fd(s->env, fd);
  return rc ? jb__store_error(rc, "board data file") : JB_OK;
}

static void flock_ex(int fd) {
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
}

/* Set the map size to at least `want` and at least the file's size. Called
 * with no transaction of this process open (resize lock exclusive). */
static int set_map(jb_store *s, size_t want) {
  int fd;
  int rc = data_fd(s, &fd);
  if (rc != JB_OK) return rc;
  flock_ex(fd);
  size_t fsize = 0;
  rc = file_size(fd, &fsize);
  if (rc == JB_OK && s->writemap && fsize > want) want = fsize;
  if (rc == JB_OK) rc = reserve_file(s, want);
  if (rc == JB_OK) {
    int mrc = mdb_env_set_mapsize(s->env, want);
    if (mrc) rc = jb__store_error(mrc, "resizing the board map");
  }
  flock(fd, LOCK_UN);
  return rc;
}

/* Called with no transaction of ours open and the resize lock held
 * exclusively. `seen` is the map size when the transaction hit the limit:
 * if another thread grew the map meanwhile, there is nothing to do. */
static int grow_map(jb_store *s, size_t seen) {
  MDB_envinfo info;
  mdb_env_info(s->env, &info);
  if (info.me_mapsize > seen) return JB_OK;
  size_t step = info.me_mapsize < MAX_GROWTH_STEP ? info.me_mapsize : MAX_GROWTH_STEP;
  return set_map(s, info.me_mapsize + step);
}

static size_t map_size(jb_store *s) {
  MDB_envinfo info;
  mdb_env_info(s->env, &info);
  return info.me_mapsize;
}

/* Another process grew the map. Without WRITEMAP, adopt the size its
 * commit recorded (LMDB reads it when given 0). With WRITEMAP the file is
 * at least that large (whoever grew the map truncated the file up first)
 * and taking the file's size never cuts it. */
static int adopt_map(jb_store *s) {
  pthread_rwlock_wrlock(&s->resize_lock);
  int rc;
  if (s->writemap) {
    rc = set_map(s, 0);
  } else {
    int mrc = mdb_env_set_mapsize(s->env, 0);
    rc = mrc ? jb__store_error(mrc, "adopting the grown board map") : JB_OK;
  }
  pthread_rwlock_unlock(&s->resize_lock);
  return rc;
}

/*
 * After a failed commit.
 *
 * LMDB's commit writes the transaction's pages (pwrite, writev), flushes
 * them (fdatasync), and only then writes the meta page that makes them
 * the board (on an O_DSYNC descriptor in durability full). A commit that
 * fails changed nothing a reader sees: the pages it wrote are free ones,
 * and the meta page is either untouched or, after a failed meta write,
 * put back by LMDB. What the system did with those writes is another
 * matter when a flush failed: Linux reports a writeback error once and
 * marks the pages clean, so a later fsync returns 0 although the data
 * never reached the disk (PostgreSQL's "fsyncgate", 2018). Retrying the
 * flush would be a lie, and LMDB reports a failed write, a short write
 * (its "EIO") and a failed flush alike, so the rule is:
 *
 *  - EIO, or any errno not named below, from a commit, and MDB_PANIC
 *    (LMDB's own verdict after a failed meta-page write: it then refuses
 *    every transaction of the environment, reads too) mark the store
 *    failed. That commit fails with JB_EIO (JB_EFULL when the cause was
 *    ENOSPC or EDQUOT on the meta page), and every later write of this
 *    process on the board, through any handle, is refused naming the
 *    cause, as is a new open of it in this process, until every handle is
 *    closed and the board opened again (a fresh environment). Reads go on,
 *    except after MDB_PANIC. "Later" is a write begun after the failing
 *    commit returned: a thread already waiting for LMDB's writer lock may
 *    still commit in between (harmless: the failed commit's pages are free
 *    ones, never referenced). Other processes are not affected: each
 *    commit flushes its own pages and learns of its own errors.
 *  - ENOSPC and EDQUOT (a write found no room) and ENOMEM: nothing was
 *    committed and the handle stays usable (JB_EFULL, JB_ENOMEM); unless
 *    it was the meta page's write, which LMDB marks fatal: a read
 *    transaction begun after the failure then says MDB_PANIC. A limit:
 *    LMDB returns ENOSPC from the data flush (fdatasync: a thin-provisioned
 *    or network file system) exactly as from a page write, so that case is
 *    taken for "nothing written" too, although the kernel may have dropped
 *    pages of that commit: they are free pages of a commit that failed,
 *    but in normal the previous commit's unflushed meta page may be among
 *    them, and a power loss then undoes two commits, not one.
 *  - EINTR: LMDB retries its interrupted writes itself, but returns an
 *    interrupted fdatasync, which comes before the meta write: nothing was
 *    committed, so the whole transaction runs again.
 * tests/test_iofault.c injects each of these at every write and flush of
 * a commit (tests/iolayer.c).
 */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static bool env_panicked(jb_store *s) {
  MDB_txn *txn;
  int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
  if (rc == 0) mdb_txn_abort(txn);
  return rc == MDB_PANIC;
}

/* Is the file system of the board (nearly) full? LMDB reports a page
 * write cut short as EIO, and a write that finds the disk full part-way
 * is cut short: with no room left after it, that EIO was a full disk. */
static bool disk_full(jb_store *s) {
  int fd;
  struct statvfs sv;
  if (mdb_env_get_fd(s->env, &fd) != 0 || fstatvfs(fd, &sv) != 0) return false;
  return (uint64_t)sv.f_bavail * sv.f_frsize < ((uint64_t)1 << 20);
}

/* Does the failure *rc of a commit leave unknown what the system kept?
 * An EIO on a full file system is taken for the ENOSPC it was (*rc is
 * changed), with ENOSPC's caveat (above). Called with the resize lock held
 * (it may begin a read transaction). */
static bool commit_left_unknown(jb_store *s, int *rc) {
  if (*rc == MDB_PANIC) return true;
  if (*rc <= 0) return false; /* MDB_MAP_FULL and the like: nothing written */
  if (*rc == EIO && disk_full(s)) *rc = ENOSPC;
  if (*rc == ENOSPC || *rc == EDQUOT || *rc == ENOMEM) return env_panicked(s);
  return true;
}

static void mark_failed(jb_store *s, int rc) {
  pthread_mutex_lock(&fail_lock);
  if (!atomic_load(&s->failed)) {
    snprintf(s->failed_why, sizeof s->failed_why, "%s", mdb_strerror(rc));
    atomic_store(&s->failed, true);
  }
  pthread_mutex_unlock(&fail_lock);
}

void jb__store_mark_failed(jb_store *s, int rc) { mark_failed(s, rc); }

int jb__store_adopt_map(jb_store *s) { return adopt_map(s); }

/* After a commit that succeeded: what the board's durability still owes
 * its caller before the write is acknowledged (steady.c: a record that
 * holds it, in full and normal on a board that uses interval). A failure
 * there leaves unknown what the disk holds: the store stops writing. */
static int after_commit(jb_store *s, uint64_t txnid) {
  if (s->steady == NULL) return JB_OK;
  int rc = jb__steady_committed(s, txnid);
  if (rc != JB_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    mark_failed(s, EIO);
    return jb__err(JB_EIO, "%s: this process writes no more to the board; "
                   "close every handle of the board in this process and "
                   "reopen the board", msg);
  }
  return JB_OK;
}

/* A transaction that found, just before its commit, that the board uses
 * interval while this store takes no part yet (steady.c): it is aborted,
 * the store joins, and the transaction runs again. */
#define JOIN (-904)

/* The error of a write (`opening`: an open) refused by a failed store. */
static int refused(jb_store *s, bool opening) {
  char why[sizeof s->failed_why];
  pthread_mutex_lock(&fail_lock);
  memcpy(why, s->failed_why, sizeof why);
  pthread_mutex_unlock(&fail_lock);
  return jb__err(JB_EIO,
                 "board %s: %s: an earlier commit of this process failed "
                 "(%s) and what the system kept of its writes is unknown; "
                 "close every handle of the board in this process and "
                 "reopen the board",
                 s->path,
                 opening ? "cannot open it again yet" : "refusing to write",
                 why);
}

/* A write on a store opened read-only. */
static int refused_readonly(jb_store *s) {
  return jb__err(JB_EREADONLY, "board %s is open read-only: cannot write "
                 "to it", s->path);
}

/* What follows a transaction of run() or run_group() that did not commit
 * (rc: the LMDB, errno or JB_E* code; `unknown`: the commit failed in a
 * way that leaves unknown what was written; `seen`: the map size when
 * the transaction began): AGAIN to run it once more (an interrupted
 * flush, a map grown here or by another process), or the JB_E* code to
 * return, its message set. */
#define AGAIN 1
static int after_failure(jb_store *s, int rc, bool unknown, int attempt,
                         size_t seen) {
  if (unknown || rc == MDB_PANIC) {
    mark_failed(s, rc);
    if (rc == ENOSPC || rc == EDQUOT)
      return jb__err(JB_EFULL, "board %s: no space left on its device (%s) "
                     "for a commit's meta page: what the system kept of "
                     "its writes is unknown: this process writes no more "
                     "to the board; close every handle of the board in "
                     "this process and reopen the board", s->path,
                     strerror(rc));
    return jb__err(JB_EIO,
                   "board %s: a commit failed (%s) and what the system "
                   "kept of its writes is unknown: this process writes "
                   "no more to the board; close every handle of the "
                   "board in this process and reopen the board",
                   s->path, mdb_strerror(rc));
  }
  if (rc == EINTR && attempt < 100) return AGAIN; /* an interrupted flush */
  if (rc == ENOSPC || rc == EDQUOT)
    return jb__err(JB_EFULL, "board %s: no space left on its device (%s): "
                   "nothing of this change was written; free some space "
                   "(or move the board) and try again", s->path,
                   strerror(rc));
  if (rc == MDB_MAP_RESIZED && attempt < 100) {
    int r2 = adopt_map(s);
    return r2 == JB_OK ? AGAIN : r2;
  }
  if (rc == MDB_MAP_FULL && attempt < 100) {
    pthread_rwlock_wrlock(&s->resize_lock);
    int r2 = grow_map(s, seen);
    pthread_rwlock_unlock(&s->resize_lock);
    return r2 == JB_OK ? AGAIN : r2;
  }
  if (rc < 0 && rc > -1000) return rc; /* a JB_E* code, message set */
  char what[600];
  snprintf(what, sizeof what, "board %s", s->path);
  return jb__store_error(rc, what);
}

/* What a write's commit owes the board's waiters: jb__signal_commit, once
 * the writer holds nothing of the store. A commit that finds the signal
 * file replaced (`stale`) follows it, which may write to meta, and a
 * write from there must not wait behind the leader of a gathered commit
 * that is still its own caller ("Gathered commits"). NULL: signal at
 * once, as run() always did. */
typedef struct {
  bool wrote, stale;
  uint32_t lanes; /* the wake bits of the lanes its commits made ready */
} commit_note;

static void signal_or_note(jb_store *s, bool stale, uint32_t lanes,
                           commit_note *note) {
  if (note) {
    note->wrote = true;
    note->stale = note->stale || stale;
    note->lanes |= lanes;
  } else {
    jb__signal_commit(s, stale, lanes); /* wake the board's waiters */
  }
}

/* A read transaction is aborted after its body, unless `keep_dbis`: then it
 * is committed, which is how LMDB keeps the table handles it opened. */
static int run_ex(jb_store *s, unsigned flags, bool keep_dbis,
                  jb_txn_body body, void *ctx, commit_note *note) {
  if (s->fork_gen != jb__fork_generation())
    return jb__err(JB_EINVAL,
                   "board %s: this handle was opened before fork(); open the "
                   "board again in the child process",
                   s->path);
  for (int attempt = 0;; attempt++) {
    if (!(flags & MDB_RDONLY) && s->readonly) return refused_readonly(s);
    if (!(flags & MDB_RDONLY) && atomic_load(&s->failed))
      return refused(s, false);
    int status = JB_OK;
    MDB_txn *txn = NULL;
    bool wrote = false, stale = false, unknown = false;
    uint64_t txnid = 0;
    uint32_t lanes = 0;
    pthread_rwlock_rdlock(&s->resize_lock);
    size_t seen = map_size(s);
    int rc = mdb_txn_begin(s->env, NULL, flags, &txn);
    if (rc == 0) {
      /* Taken (below) while the write transaction is still this thread's:
       * once it commits, another thread's write may begin and reset it. */
      if (!(flags & MDB_RDONLY)) s->wake_lanes = 0;
      rc = body(s, txn, ctx, &status);
      if (rc == 0 && (flags & MDB_RDONLY)) {
        rc = keep_dbis ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), 0);
      } else if (rc == 0 && jb__steady_must_join(s)) {
        mdb_txn_abort(txn);
        rc = JOIN;
      } else if (rc == 0) {
        stale = jb__signal_stale(s, txn);
        txnid = mdb_txn_id(txn);
        lanes = s->wake_lanes;
        rc = mdb_txn_commit(txn);
        wrote = rc == 0;
        unknown = rc != 0 && rc != EINTR && commit_left_unknown(s, &rc);
      } else {
        mdb_txn_abort(txn);
      }
    }
    pthread_rwlock_unlock(&s->resize_lock);
    if (rc == JOIN) {
      if ((rc = jb__steady_join(s)) != JB_OK) return rc;
      attempt--;
      continue;
    }
    if (wrote) {
      signal_or_note(s, stale, lanes, note);
      int arc = after_commit(s, txnid);
      if (arc != JB_OK) return arc;
    }
    if (rc == 0) return status;
    rc = after_failure(s, rc, unknown, attempt, seen);
    if (rc != AGAIN) return rc;
  }
}

static int run(jb_store *s, unsigned flags, bool keep_dbis, jb_txn_body body,
               void *ctx) {
  return run_ex(s, flags, keep_dbis, body, ctx, NULL);
}

/*
 * Gathered commits.
 *
 * A commit costs the same whether it carries one change or many: the
 * pages it dirtied are written, and in durability full and normal the
 * disk is flushed (one or two fdatasyncs, a millisecond or more on most
 * disks). Threads of one process that write while another's commit is
 * under way therefore queue up, and when that commit ends the first of
 * them (the leader) runs every queued write (up to GATHER_MAX, 64) in one
 * LMDB write transaction and commits once for all. The others sleep on
 * their own condition variable until the leader has their result.
 *
 * Each write keeps its own outcome. The leader runs each body in the
 * group's transaction itself; should one fail (its changes may be in
 * that transaction), the transaction is aborted and the group runs again
 * with that body in a child transaction of the group's (LMDB's nested
 * transactions), committed into the group when the body succeeds and
 * aborted when it fails, so a failing write leaves no trace and the
 * others go on. Each body fails in the group's transaction at most once,
 * so a group runs at most n + 1 times, and once when nothing fails. (A
 * child transaction per write cost a fifth of the group's time: 8
 * threads of the bench's cycle in mode none made 82,000 cycles/s with a
 * child per write, 97,000-124,000 without.) Its result, its status and the
 * message the body set (the message is per thread: the leader copies it
 * into the request, and the caller's thread sets it again) are returned
 * to its caller as if it had run alone. A write that finds nobody else
 * queued runs alone, with no child transaction, exactly as before.
 *
 * What a caller is told is true of the board: a write returns success
 * only after the one commit that holds it succeeded, in the board's
 * durability; should that commit fail, every write it held fails with
 * its error (and a commit whose outcome is unknown stops the store as
 * for a single write: "After a failed commit" above). A process killed
 * during a gathered commit loses at most the writes of that commit, none
 * of which was acknowledged. An MDB_MAP_FULL in any body grows the map
 * and runs the whole group again (bodies may run more than once: the
 * txn.h contract), as an interrupted flush (EINTR) does. A body that
 * fills the transaction's room for dirty pages (MDB_TXN_FULL: a child
 * has only what its parent left) or leaves it unusable (MDB_BAD_TXN) makes
 * the leader run every write of the group alone instead, each as if it
 * had never been gathered. The hints bodies keep in the store (the log's
 * age bound, the sweep of process-bound claims) are put back when the
 * group's transaction does not commit.
 *
 * The commit's wake-up of the board's waiters (jb__signal_commit) runs
 * after the leader has handed the queue on: following a replaced signal
 * file writes to meta through jb__store_write, which would otherwise
 * wait behind its own caller.
 *
 * Gathering needs LMDB's nested transactions, which MDB_WRITEMAP does
 * not support: the tests-only WRITEMAP switch turns it off.
 */
typedef struct jb_wreq {
  jb_store_req req;
  _Atomic bool done; /* a leader ran it: req holds its outcome */
  _Atomic bool turn; /* at the queue's head with no leader running */
  pthread_cond_t cv;
  struct jb_wreq *next;
} jb_wreq;

#define GATHER_MAX 64u

/* Tests only: gathered commits so far, and a leader that waits for
 * `hold` writes to be queued (at most 10 s) before it takes its group. */
static atomic_ulong test_groups;
static _Atomic unsigned test_hold;

unsigned long jb__store_test_groups(void) { return atomic_load(&test_groups); }
void jb__store_test_hold(unsigned hold) { atomic_store(&test_hold, hold); }

static void req_save_msg(jb_store_req *r) {
  snprintf(r->msg, sizeof r->msg, "%s", jb_errmsg());
}

/* An error of a body after which the group's transaction cannot go on:
 * the whole group is run again (after growing the map) or fails. */
static bool group_wide(int rc) {
  return rc == MDB_MAP_FULL || rc == MDB_MAP_RESIZED || rc == MDB_PANIC;
}

/* The error of a body (or of its child transaction) for its caller. */
static int body_error(jb_store *s, int rc) {
  return after_failure(s, rc, false, 100, 0);
}

/* Give every request the error `rc` (its message set on this thread). */
static int fail_all(jb_store_req **reqs, size_t n, int rc) {
  for (size_t i = 0; i < n; i++) {
    reqs[i]->rc = rc;
    req_save_msg(reqs[i]);
  }
  return rc;
}

/* The hints that write bodies keep in the store (the change log's age
 * bound, the sweep of process-bound claims: store/txn.h). A body that
 * commits into a group whose parent transaction then aborts must not
 * leave them as if its changes had been kept. */
typedef struct {
  int64_t log_age_due_us, sweep_bt;
  uint8_t sweep_after[JB_HOLDERKEY_LEN];
  bool sweep_wrapped;
} store_hints;

static void hints_save(const jb_store *s, store_hints *h) {
  h->log_age_due_us = s->log_age_due_us;
  h->sweep_bt = s->sweep_bt;
  memcpy(h->sweep_after, s->sweep_after, sizeof h->sweep_after);
  h->sweep_wrapped = s->sweep_wrapped;
}

static void hints_restore(jb_store *s, const store_hints *h) {
  s->log_age_due_us = h->log_age_due_us;
  s->sweep_bt = h->sweep_bt;
  memcpy(s->sweep_after, h->sweep_after, sizeof s->sweep_after);
  s->sweep_wrapped = h->sweep_wrapped;
}

/* The group cannot go on as one transaction, but its writes may each
 * succeed alone: a body filled the transaction's room for dirty pages
 * (a child's room is what its parent has left, and the parent cannot
 * spill while a child is open), or left the transaction unusable. */
#define ALONE (-902)

/* A write run in the group's transaction itself failed: its changes may
 * be in that transaction, so the group runs again, that write in a child
 * transaction of its own. */
#define CAREFUL (-903)

/* Run `n` (at most GATHER_MAX) requests as one commit. */
static int run_group(jb_store *s, jb_store_req **reqs, size_t n,
                     commit_note *note) {
  bool alone[GATHER_MAX]; /* failed alone in this attempt */
  bool child[GATHER_MAX]; /* runs in a child transaction (it failed once) */
  memset(child, 0, sizeof child);
  store_hints hints;
  for (int attempt = 0;; attempt++) {
    if (atomic_load(&s->failed)) return fail_all(reqs, n, refused(s, false));
    memset(alone, 0, sizeof alone);
    hints_save(s, &hints);
    MDB_txn *txn = NULL;
    bool wrote = false, stale = false, unknown = false;
    size_t succeeded = 0;
    uint32_t lanes = 0;
    pthread_rwlock_rdlock(&s->resize_lock);
    size_t seen = map_size(s);
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);
    if (rc == 0) s->wake_lanes = 0; /* as in run_ex */
    for (size_t i = 0; rc == 0 && i < n; i++) {
      jb_store_req *r = reqs[i];
      int status = JB_OK;
      MDB_txn *sub = NULL;
      jb__err(JB_OK, "%s", ""); /* no message of another write's */
      int brc;
      if (!child[i]) {
        brc = r->body(s, txn, r->ctx, &status);
      } else if ((brc = mdb_txn_begin(s->env, txn, 0, &sub)) == 0) {
        brc = r->body(s, sub, r->ctx, &status);
        if (brc == 0)
          brc = mdb_txn_commit(sub);
        else
          mdb_txn_abort(sub);
      }
      if (brc == 0) {
        r->rc = status;
        if (status != JB_OK) req_save_msg(r);
        succeeded++;
      } else if (group_wide(brc)) {
        rc = brc;
      } else if (brc == MDB_TXN_FULL || brc == MDB_BAD_TXN) {
        rc = ALONE;
      } else if (!child[i]) {
        child[i] = true;
        rc = CAREFUL;
      } else {
        r->rc = body_error(s, brc);
        req_save_msg(r);
        alone[i] = true;
      }
    }
    uint64_t txnid = 0;
    if (rc == 0 && succeeded > 0 && jb__steady_must_join(s)) {
      mdb_txn_abort(txn);
      rc = JOIN;
    } else if (rc == 0 && succeeded > 0) {
      stale = jb__signal_stale(s, txn);
      txnid = mdb_txn_id(txn);
      lanes = s->wake_lanes;
      rc = mdb_txn_commit(txn);
      wrote = rc == 0;
      unknown = rc != 0 && rc != EINTR && commit_left_unknown(s, &rc);
    } else if (txn != NULL) {
      mdb_txn_abort(txn);
    }
    pthread_rwlock_unlock(&s->resize_lock);
    if (wrote) {
      signal_or_note(s, stale, lanes, note);
      int arc = after_commit(s, txnid);
      if (arc != JB_OK) return fail_all(reqs, n, arc);
    }
    if (rc == 0) return JB_OK;
    hints_restore(s, &hints); /* nothing of this attempt was kept */
    if (rc == JOIN) {
      if ((rc = jb__steady_join(s)) != JB_OK) return fail_all(reqs, n, rc);
      attempt--;
      continue;
    }
    if (rc == CAREFUL) {
      attempt--; /* not a failure of the group: no retry is spent */
      continue;
    }
    if (rc == ALONE) {
      /* Each write in a transaction of its own, as if never gathered. */
      for (size_t i = 0; i < n; i++) {
        reqs[i]->rc = run_ex(s, 0, false, reqs[i]->body, reqs[i]->ctx, note);
        if (reqs[i]->rc != JB_OK) req_save_msg(reqs[i]);
      }
      return JB_OK;
    }
    rc = after_failure(s, rc, unknown, attempt, seen);
    if (rc == AGAIN) continue;
    /* The group did not commit: every write but those that failed alone
     * gets its error. */
    for (size_t i = 0; i < n; i++) {
      if (alone[i]) continue;
      reqs[i]->rc = rc;
      req_save_msg(reqs[i]);
    }
    return rc;
  }
}

int jb__store_write_many(jb_store *s, jb_store_req *reqs, size_t n) {
  if (n == 0) return JB_OK;
  jb_store_req *list[GATHER_MAX];
  if (s->fork_gen != jb__fork_generation() || s->readonly) {
    /* run() refuses a handle from before fork() before any body runs. */
    int rc = run(s, 0, false, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
      reqs[i].rc = rc;
      req_save_msg(&reqs[i]);
    }
    return rc;
  }
  int first_error = JB_OK;
  for (size_t done = 0; done < n;) {
    size_t k = n - done < GATHER_MAX ? n - done : GATHER_MAX;
    for (size_t i = 0; i < k; i++) {
      list[i] = &reqs[done + i];
      list[i]->rc = JB_OK;
      list[i]->msg[0] = '\0';
    }
    int rc;
    if (s->writemap) { /* no nested transactions: one at a time */
      rc = JB_OK;
      for (size_t i = 0; i < k; i++) {
        list[i]->rc = run(s, 0, false, list[i]->body, list[i]->ctx);
        if (list[i]->rc != JB_OK) req_save_msg(list[i]);
      }
    } else {
      rc = run_group(s, list, k, NULL);
    }
    if (rc != JB_OK && first_error == JB_OK) first_error = rc;
    done += k;
  }
  return first_error;
}

/*
 * A leader in durability full or normal, whose commit will wait for the
 * disk, lets the writers that the last commit just released queue up
 * before it takes its group: until as many are queued as the last group
 * held, while others keep coming (one at least every LINGER_GAP_US), up
 * to a quarter of the last commit's duration.
 * Only after a commit that gathered several writes: a thread that writes
 * alone waits at most one gap (50 us), once, after the last gathered
 * commit, and never again while its commits run alone. Called with
 * gc_lock held.
 */
#define LINGER_GAP_US 50
#define NONE_LINGER_YIELDS 2
static void linger(jb_store *s, jb_wreq *w, unsigned max) {
  unsigned hold = atomic_load(&test_hold);
  if (hold > 1) {
    int64_t end = jb__mono_us() + 10 * 1000000;
    s->gc_lingering = true;
    while (s->gc_len < hold && s->gc_len < max && jb__mono_us() < end) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 1;
      pthread_cond_timedwait(&w->cv, &s->gc_lock, &ts);
    }
    s->gc_lingering = false;
    return;
  }
  if (s->gc_last_n < 2) return;
  if (s->durability == JB_DURABILITY_NONE ||
      s->durability == JB_DURABILITY_INTERVAL) {
    /* The threads the last commit released are runnable: give the CPU
     * to them a few times so they queue their next writes. */
    s->gc_lingering = true;
    for (unsigned i = 0; i < NONE_LINGER_YIELDS && s->gc_len < max; i++) {
      pthread_mutex_unlock(&s->gc_lock);
      sched_yield();
      pthread_mutex_lock(&s->gc_lock);
    }
    s->gc_lingering = false;
    return;
  }
  int64_t budget = s->gc_last_us / 4;
  if (budget > 2000) budget = 2000;
  int64_t start = jb__mono_us();
  s->gc_lingering = true;
  while (s->gc_len < max && s->gc_len < s->gc_last_n) {
    size_t seen = s->gc_len;
    int64_t now = jb__mono_us();
    if (now - start >= budget) break;
    int64_t wait = budget - (now - start);
    if (wait > LINGER_GAP_US) wait = LINGER_GAP_US;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += wait * 1000;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cv, &s->gc_lock, &ts);
    if (s->gc_len == seen) break; /* nobody came within the gap */
  }
  s->gc_lingering = false;
}

/*
 * In durability none a commit takes microseconds, less than waking a
 * sleeping thread costs on many machines (measured on a 2-CPU VM: 8
 * threads whose writers slept on their condition variable made half the
 * commits per second of 8 threads serialised by LMDB's own lock). So a
 * queued writer first waits runnable: it yields the CPU (to the leader,
 * or to other writers, who then queue theirs) up to NONE_SPIN_YIELDS
 * times while watching its request, and only then sleeps. Called and
 * returns with gc_lock held; the caller re-checks its condition.
 */
#define NONE_SPIN_YIELDS 300
static void wait_yielding(jb_store *s, jb_wreq *w) {
  pthread_mutex_unlock(&s->gc_lock);
  for (unsigned i = 0; i < NONE_SPIN_YIELDS; i++) {
    if (atomic_load_explicit(&w->done, memory_order_acquire) ||
        atomic_load_explicit(&w->turn, memory_order_acquire))
      break;
    sched_yield();
  }
  pthread_mutex_lock(&s->gc_lock);
}

int jb__store_write(jb_store *s, jb_txn_body body, void *ctx) {
  const unsigned max = GATHER_MAX;
  if (s->readonly) return refused_readonly(s);
  if (s->writemap || s->fork_gen != jb__fork_generation())
    return run(s, 0, false, body, ctx);
  jb_wreq w = {.req = {.body = body, .ctx = ctx}};
  pthread_cond_init(&w.cv, NULL);
  pthread_mutex_lock(&s->gc_lock);
  if (s->gc_tail)
    s->gc_tail->next = &w;
  else
    s->gc_head = &w;
  s->gc_tail = &w;
  s->gc_len++;
  if (s->gc_lingering && s->gc_head != &w) pthread_cond_signal(&s->gc_head->cv);
  bool spin = s->durability == JB_DURABILITY_NONE ||
              s->durability == JB_DURABILITY_INTERVAL;
  while (!w.done && (s->gc_head != &w || s->gc_busy)) {
    if (spin) {
      spin = false;
      wait_yielding(s, &w);
      continue;
    }
    pthread_cond_wait(&w.cv, &s->gc_lock);
  }
  if (w.done) { /* a leader ran it */
    pthread_mutex_unlock(&s->gc_lock);
    pthread_cond_destroy(&w.cv);
    if (w.req.rc != JB_OK) jb__err(w.req.rc, "%s", w.req.msg);
    return w.req.rc;
  }
  /* This thread leads: take the queue's first writes, its own first. */
  s->gc_busy = true;
  linger(s, &w, max);
  jb_store_req *list[GATHER_MAX];
  size_t n = 0;
  for (jb_wreq *q = &w; q != NULL && n < max; q = q->next) list[n++] = &q->req;
  pthread_mutex_unlock(&s->gc_lock);

  int rc;
  if (n > 1) atomic_fetch_add(&test_groups, 1);
  int64_t t0 = jb__mono_us();
  commit_note note = {false, false, 0};
  if (n == 1) {
    rc = run_ex(s, 0, false, body, ctx, &note); /* alone: as it always ran */
  } else {
    run_group(s, list, n, &note);
    rc = w.req.rc;
    if (rc != JB_OK) jb__err(rc, "%s", w.req.msg);
  }

  int64_t took = jb__mono_us() - t0;
  pthread_mutex_lock(&s->gc_lock);
  s->gc_last_n = n;
  s->gc_last_us = took;
  s->gc_len -= n;
  jb_wreq *q = s->gc_head; /* the n taken are still the first n */
  for (size_t i = 0; i < n; i++) {
    jb_wreq *next = q->next;
    if (q != &w) {
      atomic_store_explicit(&q->done, true, memory_order_release);
      pthread_cond_signal(&q->cv);
    }
    q = next;
  }
  s->gc_head = q;
  if (q == NULL) s->gc_tail = NULL;
  s->gc_busy = false;
  if (q != NULL) { /* the next leader */
    atomic_store_explicit(&q->turn, true, memory_order_release);
    pthread_cond_signal(&q->cv);
  }
  pthread_mutex_unlock(&s->gc_lock);
  pthread_cond_destroy(&w.cv);
  /* Only now, leading nothing: following a replaced signal file may
   * write to meta through this function (wake.c). The message is the
   * caller's again afterwards. */
  if (note.wrote) {
    char msg[sizeof w.req.msg];
    if (rc != JB_OK) snprintf(msg, sizeof msg, "%s", jb_errmsg());
    jb__signal_commit(s, note.stale, note.lanes);
    if (rc != JB_OK) jb__err(rc, "%s", msg);
  }
  return rc;
}

int jb__store_read(jb_store *s, jb_txn_body body, void *ctx) {
  return run(s, MDB_RDONLY, false, body, ctx);
}


/* ----------------------------------------------------------------- open */

typedef struct {
  bool create;
  const char *path;
  uint8_t boot_id[16]; /* this boot's */
  size_t map_size;     /* JB_OPEN_CREATE with a map size: the board's own */
} init_ctx;

/* Is the environment of `txn` a board of a schema we read? JB_OK if so;
 * MDB_NOTFOUND if it is an empty LMDB environment (no table at all); else
 * a JB_E* code with its message. `*meta` receives the meta table. */
static int check_schema(MDB_txn *txn, const char *path, MDB_dbi *meta) {
  int rc = mdb_dbi_open(txn, JB_DB_META, 0, meta);
  if (rc == MDB_INCOMPATIBLE) /* "meta" is a plain key, not a table */
    return jb__err(JB_ECORRUPT,
                   "%s holds an LMDB environment that is not a jobboard "
                   "board",
                   path);
  if (rc == MDB_NOTFOUND) {
    MDB_dbi main;
    MDB_stat st;
    if ((rc = mdb_dbi_open(txn, NULL, 0, &main)) != 0) return rc;
    if ((rc = mdb_stat(txn, main, &st)) != 0) return rc;
    if (st.ms_entries != 0)
      return jb__err(JB_ECORRUPT,
                     "%s holds an LMDB environment that is not a jobboard "
                     "board",
                     path);
    return MDB_NOTFOUND;
  }
  if (rc != 0) return rc;
  MDB_val k = {6, "schema"}, v;
  uint32_t schema = 0;
  rc = mdb_get(txn, *meta, &k, &v);
  if (rc == 0 && v.mv_size == sizeof schema) memcpy(&schema, v.mv_data, sizeof schema);
  if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  if (schema == 0)
    return jb__err(JB_ECORRUPT, "%s is not a jobboard board (no schema version)",
                   path);
  if (schema > JB_SCHEMA_VERSION)
    return jb__err(JB_EVERSION,
                   "board %s has schema %u, but this jobboard (%s) reads "
                   "schema %u at most: upgrade jobboard",
                   path, schema, JOBBOARD_VERSION_STRING, JB_SCHEMA_VERSION);
  return JB_OK;
}

static int open_tables(jb_store *s, MDB_txn *txn, unsigned flags) {
  int rc;
  if ((rc = mdb_dbi_open(txn, JB_DB_JOBS, flags, &s->jobs)) ||
      (rc = mdb_dbi_open(txn, JB_DB_READY, flags, &s->ready)) ||
      (rc = mdb_dbi_open(txn, JB_DB_CLAIMS, flags, &s->claims)) ||
      (rc = mdb_dbi_open(txn, JB_DB_TRASH, flags, &s->trash)) ||
      (rc = mdb_dbi_open(txn, JB_DB_LOG, flags, &s->log)) ||
      (rc = mdb_dbi_open(txn, JB_DB_QUARANTINE, flags, &s->quarantine)) ||
      (rc = mdb_dbi_open(txn, JB_DB_LEASES, flags, &s->leases)) ||
      (rc = mdb_dbi_open(txn, JB_DB_HOLDERS, flags, &s->holders)) ||
      (rc = mdb_dbi_open(txn, JB_DB_ENTITIES, flags, &s->entities)) ||
      (rc = mdb_dbi_open(txn, JB_DB_HISTORY, flags, &s->history)) ||
      (rc = mdb_dbi_open(txn, JB_DB_LOGTAIL, flags, &s->logtail)) ||
      (rc = mdb_dbi_open(txn, JB_DB_HISTENDS, flags, &s->histends)) ||
      (rc = mdb_dbi_open(txn, JB_DB_DELAYED, flags, &s->delayed)) ||
      (rc = mdb_dbi_open(txn, JB_DB_DUE, flags, &s->due)) ||
      (rc = mdb_dbi_open(txn, JB_DB_JOBX, flags, &s->jobx)) ||
      (rc = mdb_dbi_open(txn, JB_DB_UNIQUE, flags, &s->unique)) ||
      (rc = mdb_dbi_open(txn, JB_DB_SCHEDULES, flags, &s->schedules)) ||
      (rc = mdb_dbi_open(txn, JB_DB_BYNAME, flags, &s->byname)) ||
      (rc = mdb_dbi_open(txn, JB_DB_QUEUES, flags, &s->queues)) ||
      (rc = mdb_dbi_open(txn, JB_DB_DEADAGE, flags, &s->deadage)) ||
      (rc = mdb_dbi_open(txn, JB_DB_EXPIRY, flags, &s->expiry)))
    return rc;
  return JB_OK;
}

uint32_t jb__store_epoch(const jb_store *s) { return s->epoch; }

int jb__store_readonly(const jb_store *s) { return s->readonly; }

/* The board's schema number (0 when absent) and boot epoch record. */
static int read_meta(MDB_txn *txn, MDB_dbi meta, uint32_t *schema,
                     uint8_t boot_id[16], uint32_t *epoch) {
  MDB_val k = {6, "schema"}, v;
  *schema = 0;
  *epoch = 0;
  memset(boot_id, 0, 16);
  int rc = mdb_get(txn, meta, &k, &v);
  if (rc == 0 && v.mv_size == sizeof *schema) memcpy(schema, v.mv_data, 4);
  if (rc && rc != MDB_NOTFOUND) return rc;
  k = (MDB_val){7, "boot_id"};
  rc = mdb_get(txn, meta, &k, &v);
  if (rc == 0 && v.mv_size == 16) memcpy(boot_id, v.mv_data, 16);
  if (rc && rc != MDB_NOTFOUND) return rc;
  k = (MDB_val){5, "epoch"};
  rc = mdb_get(txn, meta, &k, &v);
  if (rc == 0 && v.mv_size == sizeof *epoch) memcpy(epoch, v.mv_data, 4);
  if (rc && rc != MDB_NOTFOUND) return rc;
  return 0;
}

/* Schema 1 -> 2: every claim record becomes format 2, a plain claim with
 * token 0 (no token was handed out before). Claims are few next to jobs;
 * this runs once, in the transaction that opens the board first. */
static int upgrade_claims(jb_store *s, MDB_txn *txn) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->claims, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_claimrec_v1 old;
    if (v.mv_size < sizeof old) continue; /* check reports it */
    memcpy(&old, v.mv_data, sizeof old);
    if (old.format != 1 || v.mv_size != sizeof old + old.owner_len) continue;
    uint8_t buf[sizeof(jb_claimrec) + JB_WHO_MAX];
    if (old.owner_len > JB_WHO_MAX) continue;
    jb_claimrec rec = {.format = 2, .owner_len = old.owner_len,
                       .claimed_us = old.claimed_us};
    memcpy(rec.uuid, old.uuid, 16);
    memcpy(buf, &rec, sizeof rec);
    memcpy(buf + sizeof rec, (uint8_t *)v.mv_data + sizeof old, old.owner_len);
    MDB_val nv = {sizeof rec + old.owner_len, buf};
    if ((rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT))) break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Schema 4 -> 5: the history's 'u' + uuid entries go (schema 5 keeps no
 * index by uuid: history.h). Once, in the transaction that opens the
 * board first; about 35 bytes each, so 10,000 of them are some 90 pages. */
static int upgrade_history(jb_store *s, MDB_txn *txn) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->history, &cur);
  if (rc) return rc;
  MDB_val k = {1, "u"}, v;
  rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
  while (rc == 0 && k.mv_size == 17 && ((uint8_t *)k.mv_data)[0] == 'u') {
    /* After a delete the cursor stands on the next key. */
    if ((rc = mdb_cursor_del(cur, 0))) break;
    rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Schema 6 -> 7: every job moves to its band (store.h): a job decided
 * here (or marked for publication, not confirmed) to 1<<63 | its board
 * sequence; a Redis-decided one to the remote band with its board
 * sequence standing in for Redis's, which the replicator's next full pull
 * (at every connect) puts in its place (store/mirror.c). The uuids are
 * read first, then each job is moved; new local keys cannot meet an old
 * one (the top bit), and remote ones take a free tie-breaker. Once, in the
 * transaction that opens the board first: a board of n jobs rewrites n
 * headers and n index entries in it. */
static int upgrade_jobkeys(jb_store *s, MDB_txn *txn) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->jobs, &cur);
  if (rc) return rc;
  jb_buf uuids = {0};
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
    if (k.mv_size == 16 && (rc = jb__buf_append(&uuids, k.mv_data, 16))) break;
  mdb_cursor_close(cur);
  if (rc == MDB_NOTFOUND) rc = 0;
  for (size_t off = 0; rc == 0 && off < uuids.len; off += 16) {
    const uint8_t *u = (const uint8_t *)uuids.data + off;
    jb_jobhdr h;
    if ((rc = jb__job_header(s, txn, u, &h, NULL))) {
      if (rc == MDB_CORRUPTED) rc = 0; /* check reports it */
      continue;
    }
    if (h.format != 1 || h.jobkey[0] > 4) continue; /* check reports it */
    jb_priority p = jb__jobkey_priority(h.jobkey);
    uint64_t seq = jb__jobkey_value(h.jobkey); /* schema 6: the sequence */
    uint8_t key[JB_JOBKEY_LEN];
    if ((h.flags & JB_JOB_F_REMOTE) && !(h.flags & JB_JOB_F_PUBLISHING))
      rc = jb__jobkey_remote_free(s, txn, p, seq, u, key);
    else
      jb__jobkey(key, p, seq);
    if (rc == 0) {
      rc = jb__job_rekey(s, txn, u, &h, key, h.flags);
      if (rc == MDB_CORRUPTED) rc = 0; /* in neither index: check says so */
    }
  }
  jb__buf_free(&uuids);
  return rc;
}

/* Schema 9 -> 10: one `deadage` entry per dead letter (store.h). Once,
 * in the transaction that opens the board first: a board of n dead
 * letters writes n small entries, in time order. */
static int upgrade_deadage(jb_store *s, MDB_txn *txn) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->trash, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_trashrec tr;
    size_t hl;
    if (k.mv_size != 16 || !jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl))
      continue; /* check reports it */
    if ((rc = jb__deadage_put(s, txn, k.mv_data, tr.trashed_us))) break;
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Open the tables of an existing board in a read transaction (committed,
 * so that the handles stay): readers never wait for a writer, so opening a
 * board to read it does not queue behind another process's write. Reports
 * NEEDS_WRITE_INIT when the board is new or lacks a table (init_body then
 * makes them in a write transaction). */
#define NEEDS_WRITE_INIT 1
static int init_read_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  init_ctx *ctx = vctx;
  int rc = check_schema(txn, ctx->path, &s->meta);
  if (rc == JB_OK) {
    uint32_t schema, epoch;
    uint8_t boot[16];
    if ((rc = read_meta(txn, s->meta, &schema, boot, &epoch))) return rc;
    if (schema < JB_SCHEMA_VERSION && s->readonly)
      return jb__err(JB_EREADONLY, "board %s has schema %u and must be "
                     "upgraded to %u by a process that can write it (open "
                     "it once with write access)", ctx->path, schema,
                     JB_SCHEMA_VERSION);
    bool new_boot = epoch == 0 || memcmp(boot, ctx->boot_id, 16) != 0;
    if (s->readonly && new_boot) {
      /* The first writer of this boot starts epoch + 1: no claim of this
       * boot exists yet, so every stored one counts as lapsed. */
      s->epoch = epoch + 1;
      rc = open_tables(s, txn, 0);
      if (rc == MDB_NOTFOUND)
        return jb__err(JB_EREADONLY, "board %s lacks a table that its first "
                       "open with write access makes", ctx->path);
      return rc;
    }
    if (schema < JB_SCHEMA_VERSION || new_boot) {
      *status = NEEDS_WRITE_INIT; /* upgrade, or the first open this boot */
      return 0;
    }
    s->epoch = epoch;
    rc = open_tables(s, txn, 0);
  }
  if (rc == MDB_NOTFOUND && s->readonly)
    return jb__err(JB_ENOTFOUND, "no board in %s yet (an empty LMDB "
                   "environment)", ctx->path);
  if (rc == MDB_NOTFOUND) {
    *status = NEEDS_WRITE_INIT;
    return 0;
  }
  return rc;
}

/* Create a new board's tables, or the missing ones of an existing board.
 * One write transaction, so two processes creating one board at the same
 * moment cannot both initialise it. */
static int init_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  init_ctx *ctx = vctx;
  (void)status;
  int rc = check_schema(txn, ctx->path, &s->meta);
  if (rc == MDB_NOTFOUND) {
    if (!ctx->create)
      return jb__err(JB_ENOTFOUND, "no board in %s (its data file is empty)",
                     ctx->path);
    if ((rc = mdb_dbi_open(txn, JB_DB_META, MDB_CREATE, &s->meta)) != 0)
      return rc;
    uint32_t schema = JB_SCHEMA_VERSION;
    uint8_t id[16];
    if ((rc = jb__uuid_generate(id)) != JB_OK) return rc;
    MDB_val k, v;
    k = (MDB_val){6, "schema"}, v = (MDB_val){sizeof schema, &schema};
    if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0) return rc;
    k = (MDB_val){8, "board_id"}, v = (MDB_val){16, id};
    if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0) return rc;
    if (ctx->map_size) {
      uint64_t ms = ctx->map_size;
      k = (MDB_val){8, "map_size"}, v = (MDB_val){sizeof ms, &ms};
      if ((rc = mdb_put(txn, s->meta, &k, &v, 0)) != 0) return rc;
    }
  } else if (rc != JB_OK) {
    return rc;
  }
  if ((rc = open_tables(s, txn, MDB_CREATE)) != JB_OK) return rc;
  uint32_t schema, epoch;
  uint8_t boot[16];
  if ((rc = read_meta(txn, s->meta, &schema, boot, &epoch))) return rc;
  if (schema < JB_SCHEMA_VERSION) {
    /* 2 -> 3 only adds the history table, made above by open_tables;
     * 3 -> 4 and 8 -> 9 change no data (nor do 10's record formats, which
     * only older releases cannot read); 4 -> 5 adds `logtail`, made above, empty,
     * and drops the history's uuid entries (store.h, history.h); 5 -> 6
     * adds `histends`, made above, empty (history.h); 6 -> 7 moves every
     * job to its jobkey band (store.h); 7 -> 8 adds delayed, due, jobx,
     * unique and schedules, made above, empty; 9 -> 10 adds byname and queues,
     * made above, and fills them (names.h), and `deadage`, made above and
     * filled from `trash` (retain.c); 10 -> 11 adds `expiry`, made above,
     * empty (no job of schema 10 has a deadline); 11 -> 12 changes no
     * data (schedule records of format 1 stay readable). */
    if (schema < 2 && (rc = upgrade_claims(s, txn))) return rc;
    if (schema < 5 && (rc = upgrade_history(s, txn))) return rc;
    if (schema < 7 && (rc = upgrade_jobkeys(s, txn))) return rc;
    if (schema < 10 && (rc = jb__upgrade_lanes(s, txn))) return rc;
    if (schema < 10 && (rc = upgrade_deadage(s, txn))) return rc;
    schema = JB_SCHEMA_VERSION;
    MDB_val k = {6, "schema"}, v = {sizeof schema, &schema};
    if ((rc = mdb_put(txn, s->meta, &k, &v, 0))) return rc;
  }
  /* The first open after a boot starts a new epoch: leases and
   * process-bound claims of the earlier ones lapse (ops.c). */
  if (epoch == 0 || memcmp(boot, ctx->boot_id, 16) != 0) {
    epoch++;
    MDB_val k = {5, "epoch"}, v = {sizeof epoch, &epoch};
    if ((rc = mdb_put(txn, s->meta, &k, &v, 0))) return rc;
    k = (MDB_val){7, "boot_id"}, v = (MDB_val){16, ctx->boot_id};
    if ((rc = mdb_put(txn, s->meta, &k, &v, 0))) return rc;
  }
  s->epoch = epoch;
  return JB_OK;
}

/*
 * Look at an existing data file before opening it for real, with LMDB
 * read-only and without MDB_WRITEMAP: the real open may grow the file (the
 * map size, and with durability none its blocks are reserved), so it must
 * not happen to a file that is not a board. Nothing is written here; a
 * lock file LMDB had to create for a file that turns out not to be a board
 * is removed. Sets *is_board when the file holds a board of a schema we
 * read (false: there is no board yet, and `create` allows making one).
 */
static int prepare_lock(const char *path);
static int probe(const char *path, bool create, bool readonly,
                 bool *is_board, size_t *stored_map, bool *nolock) {
  *is_board = false;
  *stored_map = 0;
  *nolock = false;
  char data[4096], lock[4096], what[4200];
  snprintf(data, sizeof data, "%s/data.mdb", path);
  snprintf(lock, sizeof lock, "%s/lock.mdb", path);
  snprintf(what, sizeof what, "board %s", path);
  struct stat st;
  if (stat(data, &st) != 0) {
    if (errno == ENOENT && create) return JB_OK;
    if (errno == ENOENT)
      return jb__err(JB_ENOTFOUND, "no board in %s (no data.mdb)", path);
    return jb__err_errno(errno, data);
  }
  if (st.st_size == 0)
    return create ? JB_OK
                  : jb__err(JB_ENOTFOUND,
                            "no board in %s (its data file is empty)", path);
  bool had_lock = access(lock, F_OK) == 0;
  /* Read-only: never make a lock file, and do without one that cannot be
   * written (MDB_NOLOCK: see JB_OPEN_READONLY). On a read-only file
   * system LMDB drops the locks by itself. */
  if (readonly && (!had_lock || access(lock, R_OK | W_OK) != 0)) *nolock = true;
  int rc;
  if (!had_lock && !readonly && (rc = prepare_lock(path)) != JB_OK) return rc;
  MDB_env *env;
  rc = mdb_env_create(&env);
  if (rc) return jb__store_error(rc, what);
  MDB_txn *txn = NULL;
  MDB_dbi meta;
  /* A lock file made here gets the board's reader table: LMDB sizes it
   * once, for whoever opens it first, and later openers that share it take
   * its size. An existing one is left at its size. */
  if ((rc = mdb_env_set_maxdbs(env, 32)) == 0 &&
      (had_lock || (rc = mdb_env_set_maxreaders(env, MAX_READERS)) == 0) &&
      (rc = mdb_env_open(env, path,
                         MDB_RDONLY | MDB_NOTLS | (*nolock ? MDB_NOLOCK : 0),
                         BOARD_FILE_MODE)) == 0 &&
      (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) == 0) {
    rc = check_schema(txn, path, &meta);
    if (rc == JB_OK) {
      MDB_val k = {8, "map_size"}, v;
      uint64_t ms;
      if (mdb_get(txn, meta, &k, &v) == 0 && v.mv_size == sizeof ms) {
        memcpy(&ms, v.mv_data, sizeof ms);
        *stored_map = (size_t)ms;
      }
    }
    mdb_txn_abort(txn);
  }
  mdb_env_close(env);
  if (rc == EACCES || rc == EPERM || rc == EROFS) {
    /* LMDB opens lock.mdb for writing even to read: this process may
     * not write the board's files. */
    if (readonly) return jb__err(JB_EIO, "board %s: cannot read it: %s", path,
                                 strerror(rc));
    return jb__err(JB_EREADONLY, "board %s is read-only for this process "
                   "(lock.mdb: %s): only reading commands work on it",
                   path, strerror(rc));
  }
  if (rc == JB_OK) {
    *is_board = true;
    return JB_OK;
  }
  /* Remove the lock file LMDB made for something that is not a board.
   * Never for an empty environment: that may be a board being created by
   * another process right now, whose lock file it is (LMDB makes lock.mdb
   * before it writes data.mdb's first pages, and the data file's size was
   * read above, before had_lock). Nor for a board of a newer schema. */
  if (!had_lock && !readonly && rc != MDB_NOTFOUND && rc != JB_EVERSION)
    unlink(lock);
  if (rc == MDB_NOTFOUND)
    return create ? JB_OK
                  : jb__err(JB_ENOTFOUND,
                            "no board in %s (an empty LMDB environment)", path);
  if (rc == MDB_INVALID)
    return jb__err(JB_ECORRUPT, "%s is not an LMDB file: not a board", data);
  if (rc < 0 && rc > -1000) return rc; /* a JB_E* code, message set */
  return jb__store_error(rc, what);
}

/*
 * Make the lock file LMDB is about to create, with its blocks allocated.
 * LMDB sizes a new lock.mdb with ftruncate and writes its reader table
 * through a shared map: on a full file system (tmpfs, ext4 without room)
 * the first store into an unallocated page is a SIGBUS that kills the
 * process. Allocated here first, a full disk is a clean JB_EFULL. With
 * MAX_READERS 1022 LMDB's lock file is 64 KiB (64-byte reader slots after
 * a 192-byte header on x86-64); LMDB keeps a larger file's size (more
 * reader slots), so this size is safe on any build. Called only where
 * LMDB may create the file; one that exists is left alone.
 */
#define LOCK_FILE_SIZE 65536
static int prepare_lock(const char *path) {
  char lock[4096];
  snprintf(lock, sizeof lock, "%s/lock.mdb", path);
  int fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, BOARD_FILE_MODE);
  if (fd < 0) {
    int e = errno;
    if (e == EEXIST) return JB_OK;
    if (e == EACCES || e == EPERM || e == EROFS)
      return jb__err(JB_EREADONLY, "board %s is read-only for this process "
                     "(lock.mdb: %s): only reading commands work on it",
                     path, strerror(e));
    char what[4200];
    snprintf(what, sizeof what, "board %s: cannot create lock.mdb", path);
    return jb__err_errno(e, what);
  }
  int rc = posix_fallocate(fd, 0, LOCK_FILE_SIZE);
  close(fd);
  if (rc == 0 || rc == EOPNOTSUPP || rc == EINVAL) return JB_OK;
  unlink(lock);
  if (rc == ENOSPC || rc == EDQUOT)
    return jb__err(JB_EFULL, "board %s: no space left on its device (%s) for "
                   "its lock file", path, strerror(rc));
  char what[4200];
  snprintf(what, sizeof what, "board %s: cannot allocate lock.mdb", path);
  return jb__err_errno(rc, what);
}

/* Names a board directory holds besides data.mdb: LMDB's lock file, the
 * wake-up signal file, the record of the last flushed state, the sync
 * layer's files (sync.lock, sync.status, sync.credentials and their
 * temporary copies), and a file system's lost+found (a board on a mount
 * of its own). */
static bool board_name(const char *name) {
  return strcmp(name, "lock.mdb") == 0 || strcmp(name, JB_SIGNAL_FILE) == 0 ||
         strcmp(name, JB_STEADY_FILE) == 0 || strncmp(name, "sync.", 5) == 0 ||
         strcmp(name, "lost+found") == 0;
}

/* JB_OPEN_CREATE on a directory without data.mdb: a board is made only in
 * an empty directory (or one holding a board's other files), never among
 * other files, where a mistyped path would otherwise leave data.mdb and
 * lock.mdb in someone's home or source tree. A data.mdb is judged by the
 * open itself (a foreign one is refused there). */
static int check_empty(const char *path) {
  char data[4096];
  snprintf(data, sizeof data, "%s/data.mdb", path);
  if (access(data, F_OK) == 0) return JB_OK;
  DIR *d = opendir(path);
  if (d == NULL) {
    /* A directory this process may not list is not one it may write. */
    if (errno == EACCES)
      return jb__err(JB_EREADONLY, "cannot read board directory %s: %s",
                     path, strerror(errno));
    char what[600];
    snprintf(what, sizeof what, "cannot read board directory %s", path);
    return jb__err_errno(errno, what);
  }
  char other[256] = "";
  bool has_data = false;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (strcmp(e->d_name, "data.mdb") == 0) has_data = true;
    else if (!board_name(e->d_name) && other[0] == '\0')
      snprintf(other, sizeof other, "%s", e->d_name);
  }
  closedir(d);
  if (has_data || other[0] == '\0') return JB_OK;
  return jb__err(JB_ECORRUPT, "directory %s holds '%s' and no board: "
                 "refusing to make a board among other files (choose an "
                 "empty or new directory)", path, other);
}

static int check_dir(const char *path, bool create) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno != ENOENT) {
      char what[600];
      snprintf(what, sizeof what, "board directory %s", path);
      return jb__err_errno(errno, what);
    }
    if (!create)
      return jb__err(JB_ENOTFOUND, "board directory %s does not exist", path);
    if (mkdir(path, BOARD_DIR_MODE) != 0 && errno != EEXIST) {
      if (errno == ENOENT)
        return jb__err(JB_ENOTFOUND, "cannot create board directory %s: its "
                       "parent directory does not exist", path);
      char what[600];
      snprintf(what, sizeof what, "cannot create board directory %s", path);
      return jb__err_errno(errno, what);
    }
    if (stat(path, &st) != 0) return jb__err_errno(errno, path);
  }
  if (!S_ISDIR(st.st_mode))
    return jb__err(JB_EINVAL, "board path %s is not a directory", path);
  if (!create) {
    char data[4096];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    if (access(data, F_OK) != 0)
      return jb__err(JB_ENOTFOUND, "no board in %s (no data.mdb)", path);
    return JB_OK;
  }
  return check_empty(path);
}

/*
 * The stores open in this process, by board directory (device, inode).
 * LMDB forbids opening one environment twice in a process: the second
 * copy's close would drop the fcntl locks that tell other processes the
 * lock file is in use. So handles of one process share one store. Entries
 * made before a fork() are never shared with the child (fork generation):
 * the child opens its own.
 */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static jb_store *registry;

/*
 * Why no mode uses MDB_WRITEMAP (docs/DESIGN-NOTES.md, "Durability, and
 * why no mode uses MDB_WRITEMAP"): with it, LMDB writes the new meta page
 * in place through the map, field by field, and means mm_txnid to be stored
 * last; but its barrier is compiled only for non-x86 CPUs, and in Debian's
 * liblmdb0 0.9.24 (x86-64) the store of mm_txnid comes before the store of the
 * main table's root. A process killed between the two leaves a meta page with
 * the new txnid and the roots of two commits before: the previous,
 * acknowledged commit is lost and its free list marks live pages free. Without
 * WRITEMAP the meta page is written with one pwrite, which a kill cannot tear.
 * So the shipped library never asks for it.
 *
 * jb__store_test_writemap(true) is for tests/crash_step.c only (hidden
 * symbol, not in libjobboard's ABI): it makes this process's handles of
 * durability none map with MDB_WRITEMAP again, to show that the crash
 * test finds that loss. Never mix it with other processes on one board.
 */
static bool test_writemap;

void jb__store_test_writemap(bool on) { test_writemap = on; }

static int open_env(jb_store *s, const char *path, const jb_board_options *o,
                    bool create) {
  /* No mode maps the file writable (MDB_WRITEMAP): see map_flags. */
  unsigned flags = MDB_NOTLS;
  bool readonly = (o->flags & JB_OPEN_READONLY) != 0;
  /* First, before anything maps data.mdb: after a reboot, the last
   * flushed state of a board that uses interval (steady.c). */
  bool steady_on = false;
  int rc = jb__steady_prepare(path, readonly, &steady_on);
  if (rc != JB_OK) return rc;
  switch (o->durability) {
  case JB_DURABILITY_FULL: break;
  case JB_DURABILITY_NORMAL: flags |= MDB_NOMETASYNC; break;
  case JB_DURABILITY_NONE: flags |= MDB_NOSYNC; break;
  case JB_DURABILITY_INTERVAL: flags |= MDB_NOSYNC; break;
  }
  /* Every writer of a board that uses interval flushes through its
   * records, never by LMDB's own flushes. */
  if (steady_on) flags = (flags & ~(unsigned)MDB_NOMETASYNC) | MDB_NOSYNC;
  if (o->durability == JB_DURABILITY_NONE && test_writemap && !steady_on)
    flags |= MDB_WRITEMAP;
  s->writemap = (flags & MDB_WRITEMAP) != 0;
  bool is_board, nolock;
  size_t stored_map;
  size_t ctx_map = 0;
  rc = probe(path, create, readonly, &is_board, &stored_map, &nolock);
  if (rc != JB_OK) return rc;
  if (readonly) {
    if (!is_board)
      return jb__err(JB_ENOTFOUND, "no board in %s yet (its data file is "
                     "empty)", path);
    flags = MDB_NOTLS | MDB_RDONLY | (nolock ? MDB_NOLOCK : 0);
    s->writemap = false;
    s->readonly = nolock ? JB_READONLY_NOLOCK : JB_READONLY_ASKED;
  }
  char what[600];
  snprintf(what, sizeof what, "board %s", path);
  rc = mdb_env_create(&s->env);
  if (rc) {
    s->env = NULL;
    return jb__store_error(rc, what);
  }
  /* Hold the data file's flock while choosing the map size and mapping:
   * never map less than the file holds (see set_map). */
  char data[4096];
  snprintf(data, sizeof data, "%s/data.mdb", path);
  int fd = open(data, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
                          (create ? O_CREAT : 0), BOARD_FILE_MODE);
  if (fd < 0) {
    int e = errno;
    if (!readonly && (e == EACCES || e == EPERM || e == EROFS))
      return jb__err(JB_EREADONLY, "board %s is read-only for this process "
                     "(data.mdb: %s): only reading commands work on it",
                     path, strerror(e));
    snprintf(what, sizeof what, "board %s: cannot open data.mdb", path);
    return jb__err_errno(e, what);
  }
  flock_ex(fd);
  if (!readonly && (rc = prepare_lock(path)) != JB_OK) {
    close(fd);
    return rc;
  }
  size_t want = o->map_size    ? o->map_size
                : stored_map ? stored_map
                             : DEFAULT_MAP_SIZE,
         fsize = 0;
  if (create && o->map_size && !is_board) ctx_map = o->map_size;
  rc = file_size(fd, &fsize);
  if (rc == JB_OK && fsize > want) want = fsize;
  if (rc == JB_OK) {
    int mrc;
    if ((mrc = mdb_env_set_maxdbs(s->env, 32)) ||
        (mrc = mdb_env_set_maxreaders(s->env, MAX_READERS)) ||
        (mrc = mdb_env_set_mapsize(s->env, want)) ||
        (mrc = mdb_env_open(s->env, path, flags, BOARD_FILE_MODE))) {
      if (mrc == MDB_INVALID)
        rc = jb__err(JB_ECORRUPT, "%s is not an LMDB file: not a board", data);
      else if (!readonly && (mrc == EACCES || mrc == EPERM || mrc == EROFS))
        rc = jb__err(JB_EREADONLY, "board %s is read-only for this process "
                     "(lock.mdb: %s): only reading commands work on it",
                     path, strerror(mrc));
      else
        rc = jb__store_error(mrc, what);
    }
  }
  if (rc == JB_OK) rc = reserve_file(s, map_size(s));
  close(fd); /* also drops the flock */
  if (rc != JB_OK) return rc;
  /* LMDB opens the data file without O_CLOEXEC: a program this process
   * runs (jobboard work runs commands) would inherit a writable
   * descriptor of the board. */
  int dfd;
  if (mdb_env_get_fd(s->env, &dfd) == 0 && dfd >= 0) {
    int fl = fcntl(dfd, F_GETFD);
    if (fl >= 0) fcntl(dfd, F_SETFD, fl | FD_CLOEXEC);
  }
  int dead = 0;
  if (!nolock) mdb_reader_check(s->env, &dead); /* slots of dead processes */
  /* Before this process's first commit: its snapshot of a recorded
   * state, when the board uses interval (or is about to). */
  if (!readonly && !s->writemap &&
      (rc = jb__steady_open(s, o->durability == JB_DURABILITY_INTERVAL,
                            o->version >= 3 ? o->flush_interval_ms : 0)) !=
          JB_OK)
    return rc;
  init_ctx ctx = {create, path, {0}, ctx_map};
  if ((rc = jb__boot_id(ctx.boot_id)) != JB_OK) return rc;
  if (is_board) {
    rc = run(s, MDB_RDONLY, true, init_read_body, &ctx);
    if (rc != NEEDS_WRITE_INIT) return rc;
  }
  return jb__store_write(s, init_body, &ctx);
}

static void free_store(jb_store *s) {
  if (s->env) jb__steady_close(s);
  jb__signal_close(s);
  if (s->env) mdb_env_close(s->env);
  pthread_rwlock_destroy(&s->resize_lock);
  pthread_mutex_destroy(&s->gc_lock);
  jb__buf_free(&s->hist_posting);
  free(s->path);
  free(s);
}

int jb__store_open(jb_store **out, const char *path,
                   const jb_board_options *o) {
  *out = NULL;
  bool create = (o->flags & JB_OPEN_CREATE) != 0;
  int rc = check_dir(path, create);
  if (rc != JB_OK) return rc;
  struct stat st;
  if (stat(path, &st) != 0) return jb__err_errno(errno, path);
  unsigned gen = jb__fork_generation();
  uint64_t log_keep;
  int64_t log_max_age_us;
  jb__log_limits(o, &log_keep, &log_max_age_us);

  pthread_mutex_lock(&registry_lock);
  for (jb_store *s = registry; s; s = s->next) {
    if (s->dev != st.st_dev || s->ino != st.st_ino || s->fork_gen != gen)
      continue;
    bool want_ro = (o->flags & JB_OPEN_READONLY) != 0;
    if (atomic_load(&s->failed) && !want_ro) {
      /* LMDB allows one environment per board and process, and this
       * one's writes may be gone: no new handle until it is closed. */
      rc = refused(s, true);
    } else if (s->readonly && !want_ro) {
      rc = jb__err(JB_EREADONLY, "board %s is open read-only in this "
                   "process: close those handles to open it for writing",
                   path);
    } else if (want_ro) {
      s->refs++; /* shares the environment as it is (jb_board_readonly) */
      *out = s;
    } else if (s->durability != o->durability) {
      rc = jb__err(JB_EINVAL, "board %s is already open in this process with "
                   "durability %s; a second handle cannot use %s", path,
                   jb_durability_name(s->durability),
                   jb_durability_name(o->durability));
    } else if (s->log_keep != log_keep || s->log_max_age_us != log_max_age_us) {
      /* The bounds apply to the shared store's writes: one set per
       * process and board. */
      rc = jb__err(JB_EINVAL, "board %s is already open in this process "
                   "with change-log bounds of %llu events and %lld ms; a "
                   "second handle cannot ask for %llu events and %lld ms",
                   path, (unsigned long long)s->log_keep,
                   (long long)(s->log_max_age_us / 1000),
                   (unsigned long long)log_keep,
                   (long long)(log_max_age_us / 1000));
    } else {
      s->refs++;
      *out = s;
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
  }

  jb_store *s = calloc(1, sizeof *s);
  if (s == NULL || (s->path = strdup(path)) == NULL) {
    pthread_mutex_unlock(&registry_lock);
    free(s);
    return jb__err(JB_ENOMEM, "out of memory opening board %s", path);
  }
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&s->resize_lock, &attr);
  pthread_rwlockattr_destroy(&attr);
  pthread_mutex_init(&s->gc_lock, NULL);
  s->fork_gen = gen;
  s->durability = o->durability;
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  s->refs = 1;
  s->log_keep = log_keep;
  s->log_max_age_us = log_max_age_us;
  /* The history bounds as jb_board_open resolves them (version 2 of the
   * options; 0: the defaults). */
  bool v2 = o->version >= 2;
  s->hist.max_count = v2 && o->history_max ? o->history_max : JB_HISTORY_MAX_DEFAULT;
  s->hist.max_age_us = (v2 && o->history_max_age_ms ? o->history_max_age_ms
                                                    : JB_HISTORY_AGE_DEFAULT_MS) * 1000;
  rc = open_env(s, path, o, create);
  if (rc == JB_OK && !s->readonly) rc = jb__signal_open(s);
  if (rc != JB_OK) {
    free_store(s);
  } else {
    s->next = registry;
    registry = s;
    *out = s;
  }
  pthread_mutex_unlock(&registry_lock);
  return rc;
}

/* Stores inherited across fork() and closed in the child. Their
 * environment is never closed there: mdb_env_close would close the lock
 * file's descriptors, and closing any descriptor of a file drops every
 * fcntl lock the process holds on it, including those of the environment
 * the child opened for itself. They stay reachable here until exit. */
static jb_store *orphans;

void jb__store_close(jb_store *s) {
  if (s == NULL) return;
  pthread_mutex_lock(&registry_lock);
  bool last = --s->refs == 0;
  if (last) {
    for (jb_store **p = &registry; *p; p = &(*p)->next) {
      if (*p == s) {
        *p = s->next;
        break;
      }
    }
  }
  bool inherited = s->fork_gen != jb__fork_generation();
  if (last && inherited) {
    s->next = orphans;
    orphans = s;
  }
  /* Closed under the registry's lock: a thread opening the board meanwhile
   * must not open a second environment while this one still holds the
   * lock file (its close would drop the new one's fcntl locks). */
  if (last && !inherited) free_store(s);
  pthread_mutex_unlock(&registry_lock);
}
