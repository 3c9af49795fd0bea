/*
 * bench_batch.h - the posting part of `jobboard-bench`: jobs per second of
 * single posts (jb_job_post: one write transaction per job) against batch
 * posts (jb_job_post_batch: one transaction per batch) for each mode and
 * each batch size of --batch; with --peers, SQLite posting the same way
 * (one INSERT per transaction, or BEGIN IMMEDIATE, a batch of INSERTs,
 * COMMIT).
 *
 * Jobs per round and kind: in mode none, po->post_jobs (rounded up to
 * whole batches); in full and normal, where every commit flushes, singles
 * post po->sync_jobs jobs and each batch size at least 10 batches (and at
 * least po->sync_jobs jobs). Every round posts each kind on a fresh board
 * (and database) after one untimed commit, rounds taken in turns; the
 * board is removed after its round; the median round is reported.
 */
#ifndef JOBBOARD_BENCH_BATCH_H
#define JOBBOARD_BENCH_BATCH_H

#include "bench_util.h"

/* Run the part and print its figures (text, or "batch" JSON lines).
 * `dir` is an empty directory of the part's own. Returns 0, or the exit
 * code 1 after a message on stderr. */
int bench_batch_part(const bench_part_opts *po, const char *dir);

#endif
