/*
 * bench_redis.h - `jobboard-bench --redis URL`: the job operations through
 * Redis (libjbsync), measured through the public API on a fresh board
 * attached to that server under a namespace of the bench's own.
 *
 * One process, one connection, one board (in the given durability mode):
 *  - round trip: jb_sync_ping, one PING and its reply;
 *  - local commit: jb_claim then jb_abandon of a job decided
 *    locally (never published): one write transaction each, no Redis;
 *  - floor: a PING, then one local commit (claim and abandon in turns),
 *    timed together: what a claim through Redis cannot go below, measured
 *    in the same pattern as one;
 *  - post + publish: jb_job_post (a local commit), then jb_sync_publish
 *    (marks the job Redis-decided, a local commit, and runs our post
 *    script in Redis);
 *  - claim through Redis: jb_claim of each published job (our claim
 *    script, then the local commit);
 *  - consume through Redis: jb_consume of each (our consume script,
 *    then the local commit);
 *  - claim-next through Redis: jb_claim_next of each of --jobs published
 *    jobs (a round trip each), then jb_claim_next_many of
 *    BENCH_REDIS_BATCH jobs at a time over 2 x --jobs published jobs, one
 *    batch claimed one by one (JOBBOARD_SYNC_CLAIM_MANY=0: a round trip
 *    per job, the path before claim_many.lua), the next in one script
 *    call (one round trip), in turns: per job, a batch's time over its
 *    jobs (p50, p99, max over the batches) and jobs per second.
 * Each phase runs over all --jobs jobs in turn (all posted, then all
 * claimed, then all consumed), as the taskflow side (bench/bench-taskflow.py)
 * does, after a few untimed warm-up jobs. Per-operation latencies (p50,
 * p99, max) and the phase's rate (operations over its wall time).
 *
 * The bench leaves in Redis what our scripts keep after a consume: the
 * namespace's sequence and fence counters and one publication marker per
 * job (NS:<uuid>.posted, expiring after 30 days, about 140 bytes each).
 * Use a server of its own (bench/bench-redis.sh starts one).
 */
#ifndef JOBBOARD_BENCH_REDIS_H
#define JOBBOARD_BENCH_REDIS_H

#include "bench_wake.h"
#include "jobboard.h"

#include <stdbool.h>
#include <stddef.h>

/* The jobs of one jb_claim_next_many call in the claim-next phase. */
#define BENCH_REDIS_BATCH 64

typedef struct {
  const char *url;       /* the Redis URL (jobboard_sync.h) */
  const char *ns;        /* namespace; NULL: "jobboard-bench-PID-USEC" */
  size_t jobs;           /* jobs per phase (and round trips, local commits) */
  jb_durability durability;
  const jb_post *post;   /* what each job posts */
  const char *who;       /* owner name of the claims */
} bench_redis_opts;

/* One phase: per-operation latency and the rate over the phase. */
typedef struct {
  bench_lat lat;
  double ops_per_s;
} bench_redis_phase;

typedef struct {
  char ns[256];             /* the namespace used */
  char server_version[32];  /* redis_version of the server */
  bench_redis_phase ping;   /* one round trip (PING) */
  bench_redis_phase local_claim, local_abandon; /* local commits */
  bench_redis_phase floor;  /* a PING then a local commit, timed together */
  bench_redis_phase post;   /* jb_job_post alone (local) */
  bench_redis_phase publish; /* jb_sync_publish alone */
  bench_redis_phase post_publish; /* both, per job */
  bench_redis_phase claim;  /* jb_claim through Redis */
  bench_redis_phase consume; /* jb_consume through Redis */
  bench_redis_phase claim_next; /* jb_claim_next through Redis */
  /* jb_claim_next_many of BENCH_REDIS_BATCH, per job: one by one (a round
   * trip each) and in one script call (one round trip) */
  bench_redis_phase many_one_by_one, many_one_call;
  /* claim p50 over (round-trip p50 + local-claim p50) */
  double claim_ratio;
  /* claim p50 over the floor's p50 (both a round trip, then a commit) */
  double floor_ratio;
  /* per-job p50 of claim-next many, in one call (many_ratio) and one by one
   * (loop_ratio), over the p50 of one claim-next */
  double many_ratio, loop_ratio;
} bench_redis_figs;

/* Measure all of it on a new board in `dir` (must not hold a board).
 * Returns 0, or -1 with the reason in err. */
int bench_redis(bench_redis_figs *f, const char *dir,
                const bench_redis_opts *o, char *err, size_t errlen);

#endif
