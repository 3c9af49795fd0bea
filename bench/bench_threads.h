/*
 * bench_threads.h - `jobboard-bench --threads LIST`: threads of one process
 * sharing ONE board handle race the cycle (post, claim-next, consume) on
 * one board, for each mode and each count in the list; with --peers, as
 * many threads race SQLite's cycle (bench_peers.h), each with a connection
 * of its own. Writes from threads that arrive together may be gathered
 * into one LMDB transaction by the library (group commit): this part
 * measures what that buys, and measures the plain serialised writes where
 * there is none.
 *
 * Per mode: a fresh board (and SQLite database) in `dir`, untimed warm-up
 * cycles by one thread, then po->rounds rounds; in each round every count
 * of the list runs once on the board and once on SQLite, in turns. A run
 * is po->jobs cycles in all in mode none (po->sync_jobs in full and
 * normal), split evenly over the threads; all threads start together (a
 * barrier) and the figure is all their cycles over the wall time from the
 * start to the last one's end; the median round is reported.
 */
#ifndef JOBBOARD_BENCH_THREADS_H
#define JOBBOARD_BENCH_THREADS_H

#include "bench_util.h"

/* Run the part and print its figures (text, or "threads" JSON lines).
 * `dir` is an empty directory of the part's own. Returns 0, or the exit
 * code 1 after a message on stderr (a cycle failed, jobs left behind). */
int bench_threads_part(const bench_part_opts *po, const char *dir);

#endif
