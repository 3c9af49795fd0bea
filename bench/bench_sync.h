/*
 * bench_sync.h - what the replicator (jb_sync_replicator_start) adds, for
 * `jobboard-bench --redis URL` beside the operations of bench_redis.h.
 *
 * Wake-up through Redis: a board B with a replicator running in this
 * process, and a waiter thread asleep in jb_board_wait on B (its own
 * handle, attached to a connection of its own). Once the waiter has said
 * it is about to wait and a further 2 ms have passed (so that it sleeps in
 * the kernel and the replicators are idle), the main thread reads
 * CLOCK_MONOTONIC and posts one job to Redis; the sample runs from just
 * before the post call to the waiter's return. The waiter then claims the
 * job (claim-next) and consumes it through Redis, untimed, and waits
 * again. Three posters, each on fresh boards and a namespace of its own:
 *  - publish: a second board A in this process, jb_job_post then
 *    jb_sync_publish (our post script, which sends a notice on
 *    NS:notices). Path: script -> notice -> B's replicator (pipeline
 *    HGET/GET/PTTL/HEXISTS) -> mirror transaction on B -> futex wake;
 *  - replicated: A with its own replicator too, jb_job_post only: A's
 *    watcher thread sees the commit, A's replicator publishes it, then as
 *    above. Host to host, as two `jobboard sync` daemons do it;
 *  - taskflow: as a taskflow peer posts (no notice): INCR NS:sequence,
 *    HSETNX NS:listings with a posting, on a raw hiredis connection. B's
 *    replicator finds it at its next poll (NS:sequence moved: full pull),
 *    so the delay is bounded by the poll interval: measured once per
 *    interval given (B's replicator started with that poll_ms).
 * The notice paths run with B's replicator at the default poll (1000 ms).
 *
 * Local cycles with the sync on: the cycle of `jobboard-bench` (post,
 * claim-next, consume; main.c) on one board C, in three
 * settings taken in turn each round (median of --rounds):
 *  - plain: no attachment, no replicator;
 *  - attached: C's handle attached to a connection (jb_sync_attach), no
 *    replicator;
 *  - replicator: attached, and a replicator running on C in this process
 *    (connected, with nothing else to do). It publishes every job decided
 *    locally, so a job it reaches before the cycle consumes it goes
 *    through Redis: how many did is reported (published; and the cycles'
 *    latencies split by it, from the publication markers in Redis), and
 *    the claim-nexts and consumes that met a job being published and had
 *    to wait (claim_waits).
 */
#ifndef JOBBOARD_BENCH_SYNC_H
#define JOBBOARD_BENCH_SYNC_H

#include "bench_wake.h"
#include "jobboard.h"

#include <stddef.h>
#include <stdint.h>

#define BENCH_SYNC_MAX_POLLS 8

typedef struct {
  const char *url;      /* the Redis URL */
  const char *ns;       /* base namespace; each part adds a suffix */
  jb_durability durability;
  const jb_post *post;
  const char *who;
  size_t wakes;         /* samples per notice poster (0: skip) */
  int polls[BENCH_SYNC_MAX_POLLS]; /* poll intervals for the taskflow */
  size_t npolls;                   /* poster (0: skip) */
  size_t poll_wakes;    /* samples per poll interval */
  size_t cycles;        /* local cycles per round and setting (0: skip) */
  unsigned rounds;
} bench_sync_opts;

typedef struct {
  bench_lat lat;        /* post call start -> jb_board_wait returns */
  bench_lat post_call;  /* the post call alone */
  int poll_ms;          /* B's replicator's poll interval */
} bench_sync_wake;

enum { BENCH_SYNC_PLAIN, BENCH_SYNC_ATTACHED, BENCH_SYNC_REPLICATOR,
       BENCH_SYNC_NSETTINGS };

typedef struct {
  bench_sync_wake publish, replicated;
  bench_sync_wake taskflow[BENCH_SYNC_MAX_POLLS];
  size_t ntaskflow;
  /* Local cycles, by setting: median round. */
  double cycle_us[BENCH_SYNC_NSETTINGS], cycles_per_s[BENCH_SYNC_NSETTINGS];
  bench_lat cycle_lat[BENCH_SYNC_NSETTINGS]; /* every cycle of all rounds */
  uint64_t published;   /* jobs the replicator published, all rounds */
  uint64_t claim_waits; /* claim-nexts that had to wait, all rounds */
  size_t cycles_total;  /* cycles per setting, all rounds */
  /* The replicator setting's cycles, by where the job went (its
   * publication marker in Redis says): kept local, or published (then
   * claimed and consumed through Redis). samples 0: none. */
  bench_lat kept_local, via_redis;
} bench_sync_figs;

extern const char *const bench_sync_setting[BENCH_SYNC_NSETTINGS];

/* Measure under `dir` (boards made there). Returns 0, or -1 with the
 * reason in err. */
int bench_sync(bench_sync_figs *f, const char *dir, const bench_sync_opts *o,
               char *err, size_t errlen);

#endif
