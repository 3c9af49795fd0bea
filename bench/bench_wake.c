/*
 * bench_wake.c - how fast a waiter in one process learns of a post made in
 * another, beside the floor of a bare futex ping-pong between two
 * processes (see bench_wake.h).
 */
/* RTLD_NEXT needs _GNU_SOURCE, which the build defines. */
#include "bench_wake.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <lmdb.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The waiter is back asleep well within this after it said it is ready. */
#define SETTLE_US 500

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void settle(void) {
  struct timespec ts = {0, SETTLE_US * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/*
 * When the post's commit returned. This program defines mdb_txn_commit:
 * the dynamic linker binds libjobboard's calls of it to the program's
 * definition before liblmdb's, so every commit this process makes passes
 * here on its way to LMDB's own (found with dlsym(RTLD_NEXT)). While a
 * sample is armed, the first commit to return notes the time. Outside the
 * bench nothing is armed and a commit pays one atomic load. This needs
 * liblmdb as a shared library (Debian's): linked statically, its
 * definition would clash with this one at link time.
 */
static _Atomic int armed;
static _Atomic int64_t commit_ns; /* 0: no commit returned while armed */

int mdb_txn_commit(MDB_txn *txn) {
  static int (*_Atomic lmdb_commit)(MDB_txn *);
  int (*f)(MDB_txn *) = atomic_load(&lmdb_commit);
  if (f == NULL) {
    *(void **)&f = dlsym(RTLD_NEXT, "mdb_txn_commit");
    if (f == NULL) {
      fprintf(stderr, "jobboard-bench: liblmdb's mdb_txn_commit not found: "
              "%s\n", dlerror());
      abort();
    }
    atomic_store(&lmdb_commit, f);
  }
  int rc = f(txn);
  if (atomic_load_explicit(&armed, memory_order_relaxed)) {
    int64_t none = 0;
    atomic_compare_exchange_strong(&commit_ns, &none, mono_ns());
  }
  return rc;
}

/* Shared between the two processes (an anonymous shared mapping). */
typedef struct {
  _Atomic uint32_t word;  /* the floor's futex word */
  _Atomic uint32_t ready; /* the waiter's "about to wait" count */
  _Atomic int failed;
  char why[512];          /* the waiter's error, when it failed */
  int64_t woke_ns[];      /* when the waiter returned, per sample */
} shared;

static long futex(_Atomic uint32_t *a, int op, uint32_t v) {
  return syscall(SYS_futex, a, op, v, NULL, NULL, 0);
}

/* Wait until the waiter announced sample i (it is about to sleep). */
static int await_ready(shared *sh, uint32_t i) {
  int64_t t0 = mono_ns();
  while (atomic_load(&sh->ready) <= i) {
    if (atomic_load(&sh->failed)) return -1;
    if (mono_ns() - t0 > 10 * 1000000000LL) return -1;
    sched_yield();
  }
  settle();
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

void bench_lat_summarise(bench_lat *out, int64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_i64);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += (double)v[i];
  out->samples = n;
  out->p50_us = (double)v[n / 2] / 1000.0;
  out->p99_us = (double)v[(n * 99) / 100] / 1000.0;
  out->max_us = (double)v[n - 1] / 1000.0;
  out->min_us = (double)v[0] / 1000.0;
  out->mean_us = sum / (double)n / 1000.0;
}

/* ------------------------------------------------------------ floor */

static int floor_child(shared *sh, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t v = atomic_load(&sh->word);
    atomic_fetch_add(&sh->ready, 1);
    while (atomic_load(&sh->word) == v) futex(&sh->word, FUTEX_WAIT, v);
    sh->woke_ns[i] = mono_ns();
  }
  return 0;
}

/* ------------------------------------------------------------ board */

static int child_fail(shared *sh, size_t i, const char *what) {
  snprintf(sh->why, sizeof sh->why, "sample %zu: the waiter's %s failed: %s",
           i, what, jb_errmsg());
  return 1;
}

static int board_child(shared *sh, const char *dir, size_t n) {
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  if (jb_board_open(&b, dir, &o) != JB_OK) return child_fail(sh, 0, "open");
  for (size_t i = 0; i < n; i++) {
    atomic_fetch_add(&sh->ready, 1);
    if (jb_board_wait(b, 0, 10000) != JB_OK) return child_fail(sh, i, "wait");
    sh->woke_ns[i] = mono_ns();
    /* Empty the board again for the next sample (untimed). */
    char uuid[JB_UUID_STRLEN];
    if (jb_claim_next(uuid, NULL, NULL, b, "waiter", NULL) != JB_OK)
      return child_fail(sh, i, "claim-next");
    if (jb_consume(b, uuid, "waiter", 0, NULL) != JB_OK)
      return child_fail(sh, i, "consume");
  }
  jb_board_close(b);
  return 0;
}

static int run(bench_lat *lat, bench_lat *call, bench_lat *from_commit,
               const char *dir, size_t n, char *err, size_t errlen) {
  size_t size = sizeof(shared) + n * sizeof(int64_t);
  shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    snprintf(err, errlen, "mmap: %s", strerror(errno));
    return -1;
  }
  int64_t *start = calloc(n, sizeof *start), *took = calloc(n, sizeof *took);
  int64_t *committed = calloc(n, sizeof *committed);
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  o.flags = JB_OPEN_CREATE;
  int rc = 0;
  if (start == NULL || took == NULL || committed == NULL) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  } else if (dir && jb_board_open(&b, dir, &o) != JB_OK) {
    snprintf(err, errlen, "%s", jb_errmsg());
    rc = -1;
  }
  pid_t pid = rc == 0 ? fork() : -1;
  if (rc == 0 && pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    rc = -1;
  }
  if (pid == 0) {
    int r = dir ? board_child(sh, dir, n) : floor_child(sh, n);
    if (r) atomic_store(&sh->failed, 1);
    _exit(r);
  }
  jb_post p = JB_POST_INIT;
  p.name = "wake";
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (await_ready(sh, (uint32_t)i) != 0) {
      if (sh->why[0])
        snprintf(err, errlen, "%s", sh->why);
      else
        snprintf(err, errlen, "sample %zu: the waiter did not get ready "
                 "within 10 s", i);
      rc = -1;
      break;
    }
    atomic_store(&commit_ns, 0);
    atomic_store(&armed, 1);
    start[i] = mono_ns();
    if (dir) {
      char uuid[JB_UUID_STRLEN];
      if (jb_job_post(uuid, b, &p) != JB_OK) {
        snprintf(err, errlen, "post: %s", jb_errmsg());
        rc = -1;
      }
      atomic_store(&armed, 0);
      committed[i] = atomic_load(&commit_ns);
      if (rc == 0 && committed[i] == 0) {
        snprintf(err, errlen, "sample %zu: the post's commit was not seen "
                 "(is liblmdb linked statically?)", i);
        rc = -1;
      }
    } else {
      atomic_fetch_add(&sh->word, 1);
      futex(&sh->word, FUTEX_WAKE, INT_MAX);
    }
    took[i] = mono_ns() - start[i];
  }
  if (pid > 0) {
    if (rc != 0) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      snprintf(err, errlen, "the waiter process failed (status %d)", st);
      rc = -1;
    }
  }
  if (rc == 0) {
    int64_t *lag = malloc(n * sizeof *lag);
    if (lag == NULL) {
      snprintf(err, errlen, "out of memory");
      rc = -1;
    } else {
      for (size_t i = 0; i < n; i++) lag[i] = sh->woke_ns[i] - start[i];
      bench_lat_summarise(lat, lag, n);
      if (from_commit) {
        for (size_t i = 0; i < n; i++) lag[i] = sh->woke_ns[i] - committed[i];
        bench_lat_summarise(from_commit, lag, n);
      }
      if (call) bench_lat_summarise(call, took, n);
      free(lag);
    }
  }
  jb_board_close(b);
  free(start);
  free(took);
  free(committed);
  munmap(sh, size);
  return rc;
}

int bench_wake(bench_lat *board, bench_lat *post_call, bench_lat *from_commit,
               bench_lat *floor, const char *dir, size_t samples, char *err,
               size_t errlen) {
  int rc = run(floor, NULL, NULL, NULL, samples, err, errlen);
  if (rc == 0)
    rc = run(board, post_call, from_commit, dir, samples, err, errlen);
  return rc;
}
