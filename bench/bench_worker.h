/*
 * bench_worker.h - the worker path part of `jobboard-bench`.
 *
 * In one process and one durability mode, three ways through the same
 * number of jobs, on boards of their own, round after round in turns:
 *   plain  the plain API cycle: jb_job_post, jb_claim_next,
 *          jb_consume (three commits per job);
 *   fused  the jobs posted with jb_job_post_batch (BENCH_WORKER_POST_BATCH
 *          per commit, timed), then claim-next once and
 *          jb_consume_and_claim_next until nothing is left (one commit
 *          per job);
 *   many   the jobs posted the same way (timed), then
 *          jb_claim_next_many(batch) and jb_consume_many of what
 *          it claimed, until nothing is left (two commits per batch).
 * Each figure is the median round, in jobs per second; the ratios are
 * fused and many over plain.
 */
#ifndef JOBBOARD_BENCH_WORKER_H
#define JOBBOARD_BENCH_WORKER_H

#include <stdbool.h>
#include <stddef.h>

#include "jobboard.h"

/* Jobs per jb_job_post_batch call of the fused and many loops. */
#define BENCH_WORKER_POST_BATCH 64u
/* Jobs per claim_next_many / consume_many of the many loop. */
#define BENCH_WORKER_BATCH 64u

typedef struct {
  const char *dir;         /* an empty directory for its boards */
  jb_durability durability;
  size_t jobs;             /* jobs per round and way */
  size_t warmup;           /* untimed jobs per way first */
  unsigned rounds;         /* 1..99 */
  const jb_post *post;     /* the job posted */
  bool json;               /* one "worker" JSON line, else a text block */
} bench_worker_opts;

/* Measure and print. Returns 0, or 1 after printing why on stderr (an
 * operation failed or jobs were left behind). */
int bench_worker(const bench_worker_opts *o);

#endif
