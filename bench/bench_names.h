/*
 * bench_names.h - claim-next by job name for `jobboard-bench --names N`.
 *
 * A board (durability none: the figures are the index's work, not the
 * disk's) of `jobs` jobs spread round-robin over N names ("n0".."nN-1"),
 * all of one priority, posted in batches of 1,000. Then, each over
 * `claims` claims timed one by one (the consume after each is untimed):
 *
 *   one name       claim-next with one name, a random one each time
 *   three names    claim-next with three random names
 *   prefix         claim-next with the prefix "n1*" (n1, n10..n19)
 *   every name     a plain claim-next
 *   head paused    a plain claim-next while "head", a name posted first
 *                  with 100,000 jobs ahead of every other, is paused (the
 *                  walk of `ready` passes a bounded number of its jobs,
 *                  then takes the other names' lanes)
 *   head+odd paused  the same with every odd name paused too
 *
 * p50 and p99 per claim. With SQLite (--peers, or always when built
 * with it), the same in SQLite WAL with synchronous OFF: a table of jobs
 * with a partial index (name, priority, seq) WHERE state = 0, a claim
 * UPDATE ... WHERE seq = (SELECT seq ... WHERE state = 0 AND name IN
 * (...) ORDER BY priority, seq LIMIT 1), a prefix as a range of names, a
 * pause as a table of paused names the claim's query excludes.
 */
#ifndef JOBBOARD_BENCH_NAMES_H
#define JOBBOARD_BENCH_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "bench_wake.h" /* bench_lat */

enum {
  BENCH_NAMES_ONE,
  BENCH_NAMES_THREE,
  BENCH_NAMES_PREFIX,
  BENCH_NAMES_ALL,
  BENCH_NAMES_PAUSED_HEAD, /* then kept paused for the next */
  BENCH_NAMES_PAUSED_HALF,
  BENCH_NAMES_N
};

extern const char *const bench_names_label[BENCH_NAMES_N];

typedef struct {
  bench_lat lat[BENCH_NAMES_N];
  double build_s; /* the board's posts */
} bench_names_side;

/* The jobboard side in `dir` (made). 0, or -1 with a message in err. */
int bench_names_board(bench_names_side *out, const char *dir, size_t jobs,
                      size_t names, size_t claims, char *err, size_t errlen);
/* The SQLite side in `dir` (made); -1 with a message when built without
 * SQLite. */
int bench_names_sqlite(bench_names_side *out, const char *dir, size_t jobs,
                       size_t names, size_t claims, char *err, size_t errlen);

/* `jobboard-bench --controls N`: what a cap and a rate limit add to a
 * claim-next + consume cycle of one name ("api", durability none, N jobs
 * posted first). Three cases in turns, a quarter of N cycles each per turn
 * so that they share the sitting: no control, a cap (1,000,000: never
 * full), a rate limit (1,000,000 a second: never out of tokens); each cycle
 * timed whole. */
enum { BENCH_CTL_NONE, BENCH_CTL_CAP, BENCH_CTL_RATE, BENCH_CTL_N };
extern const char *const bench_ctl_label[BENCH_CTL_N];
int bench_names_controls(bench_lat out[BENCH_CTL_N], const char *dir,
                         size_t cycles, char *err, size_t errlen);

#endif
