/*
 * bench_wake.h - wake-up latency for `jobboard-bench`.
 *
 * Two processes. One waits on a fresh board (durability none) with
 * jb_board_wait and no timeout; the other, once the waiter has said it is
 * about to wait and a further 0.5 ms has passed (so that it sleeps in the
 * kernel), reads CLOCK_MONOTONIC and posts one job. Two samples are
 * taken of each post: from the post's commit (the moment LMDB's
 * mdb_txn_commit returned in the poster: the job is on the board) to the
 * waiter's return, which is the wake-up proper (the commit's signal, the
 * futex wake, the waiter's scheduling and its re-check of the board in a
 * read transaction); and from just before the post call, which adds the
 * post's own write transaction and commit. The commit's time is taken by
 * this program's own mdb_txn_commit, which stands before liblmdb's
 * (bench_wake.c). The waiter then claims and consumes the job, untimed,
 * and waits again.
 *
 * The floor is the same hand-off with nothing but a futex: one process
 * sleeps in FUTEX_WAIT on a word in shared memory, the other increments
 * the word and calls FUTEX_WAKE; the sample runs from just before the
 * increment to the sleeper's return.
 */
#ifndef JOBBOARD_BENCH_WAKE_H
#define JOBBOARD_BENCH_WAKE_H

#include <stddef.h>
#include <stdint.h>

#include "jobboard.h"

typedef struct {
  size_t samples;
  double p50_us, p99_us, max_us, mean_us, min_us;
} bench_lat;

/* Summarise n > 0 samples in nanoseconds (sorts v in place). */
void bench_lat_summarise(bench_lat *out, int64_t *v, size_t n);

/* Measure the floor, then the board in `dir` (created), `samples` each:
 * board from the post call's start, from_commit from its commit, and the
 * post call's own duration (post_call). Returns 0, or -1 with a message
 * in err. */
int bench_wake(bench_lat *board, bench_lat *post_call, bench_lat *from_commit,
               bench_lat *floor, const char *dir, size_t samples, char *err,
               size_t errlen);

#endif
