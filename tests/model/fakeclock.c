/*
 * fakeclock.c - a clock the model test sets (LD_PRELOAD).
 *
 * The model test (tests/model/run.py) drives a board and its executable
 * model through the same operations and compares them after each step.
 * Due times, back-offs and leases are decided by the wall clock and
 * CLOCK_BOOTTIME: with the real clocks a deadline that falls between the
 * board's reading and the model's would make the two disagree by luck.
 * Preloaded, this library makes CLOCK_REALTIME and CLOCK_BOOTTIME (and
 * their coarse forms) read two values from the file named by
 * $JB_FAKECLOCK, which every process of the test maps shared: time stands
 * still until the test moves it, for every process at once.
 * CLOCK_MONOTONIC stays real: waits and timeouts (Python's, LMDB's) keep
 * working.
 *
 * The file: two native int64 values, microseconds: the wall clock and
 * the boot clock. A value of 0 reads the real clock.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic(int64_t *) clock_map;
static atomic_int mapped; /* 0: not yet, 1: mapped, -1: none */

static int64_t *map_clock(void) {
  int state = atomic_load(&mapped);
  if (state == 1) return atomic_load(&clock_map);
  if (state == -1) return NULL;
  const char *path = getenv("JB_FAKECLOCK");
  int64_t *p = NULL;
  if (path && *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      void *m = mmap(NULL, 2 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
      close(fd);
      if (m != MAP_FAILED) p = m;
    }
  }
  /* Two threads may map it at once: one map is kept, the other leaks a
   * page for the life of the process (a test's). */
  atomic_store(&clock_map, p);
  atomic_store(&mapped, p ? 1 : -1);
  return p;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  int slot = -1;
  if (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE) slot = 0;
  else if (clock == CLOCK_BOOTTIME) slot = 1;
  if (slot >= 0) {
    int64_t *m = map_clock();
    int64_t us = m ? atomic_load_explicit((_Atomic int64_t *)&m[slot],
                                          memory_order_acquire)
                   : 0;
    if (us > 0) {
      ts->tv_sec = (time_t)(us / 1000000);
      ts->tv_nsec = (long)(us % 1000000) * 1000;
      return 0;
    }
  }
  return (int)syscall(SYS_clock_gettime, clock, ts);
}
