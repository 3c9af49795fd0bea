/*
 * bench_fleet.h - fleet lag, for `jobboard-bench --redis URL --fleet LIST`:
 * how soon a job posted on one host is seen on the others, when each host
 * is a board with its own `jobboard sync` daemon and they share one Redis.
 *
 * A fleet of N hosts is N fresh boards under the bench's directory, each
 * with a `jobboard sync --board DIR --redis URL --namespace NS
 * --durability MODE` of its own (the jobboard program is run, as a
 * deployment runs it), all under one namespace of the fleet's own. On
 * hosts 2..N a waiter process (forked, a handle of its own) sleeps in
 * jb_log_wait, as `jobboard watch` does. The bench process posts one job
 * on host 1 (jb_job_post: the daemon of host 1 publishes it) once the
 * fleet has been quiet for 3 ms; a sample runs from just before the post
 * call to the moment a waiter's jb_log_wait returns with the job's
 * POSTED event (CLOCK_MONOTONIC, the same clock in every process), one
 * sample per other host. The job is then claimed and consumed through
 * Redis from host 1 (untimed) and the next post waits until every waiter
 * has seen it leave. Path: host 1's commit -> its daemon's watcher ->
 * the daemon publishes (mark, post script, confirm) -> our notice on
 * NS:notices -> every other daemon reads the job (one pipeline) and
 * mirrors it (one write transaction) -> the futex wake -> the waiter.
 */
#ifndef JOBBOARD_BENCH_FLEET_H
#define JOBBOARD_BENCH_FLEET_H

#include "bench_wake.h"
#include "jobboard.h"

#include <stddef.h>

#define BENCH_FLEET_MAX_HOSTS 16u
#define BENCH_FLEET_MAX_SIZES 8u
#define BENCH_FLEET_MAX_MODES 4u
/* With a history filled beforehand, the fleet starts this long after the
 * last completion: past the mirror's look-back for completed jobs (2 s,
 * and 10 s for the order of the records), as on a board in service whose
 * history is old. */
#define BENCH_FLEET_HISTORY_AGE_S 13u

typedef struct {
  const char *url;       /* the Redis URL */
  const char *ns;        /* base namespace; each fleet adds a suffix */
  const char *jobboard;  /* the jobboard program that runs the daemons */
  jb_durability durability; /* the poster's and the waiters' handles */
  const jb_post *post;
  const char *who;
  unsigned hosts[BENCH_FLEET_MAX_SIZES]; /* fleet sizes, 2..MAX_HOSTS */
  size_t nhosts;
  jb_durability sync[BENCH_FLEET_MAX_MODES]; /* the daemons' durability */
  size_t nsync;
  size_t samples;        /* posts per fleet */
  size_t history;        /* jobs completed on each board beforehand */
} bench_fleet_opts;

typedef struct {
  unsigned hosts;
  jb_durability sync;    /* the daemons' --durability */
  bench_lat all;         /* every (post, other host) pair */
  bench_lat last;        /* per post, the last host to see it */
  bench_lat post_call;   /* the post call alone */
} bench_fleet_row;

/* One row per size and daemon mode (sizes outer), under `dir`. Returns 0,
 * or -1 with the reason in err. */
int bench_fleet(bench_fleet_row *rows, size_t *nrows, const char *dir,
                const bench_fleet_opts *o, char *err, size_t errlen);

#endif
