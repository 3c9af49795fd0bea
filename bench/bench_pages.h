/*
 * bench_pages.h - what `jobboard web`'s pages ask of the library, for
 * `jobboard-bench --pages N`.
 *
 * A board (durability none) of N jobs over 20 names ("n0".."n19", round
 * robin), the five priorities in turn, every 50th job delayed by an
 * hour, posted in batches of 1,000. Then each read below, timed whole,
 * RUNS times (the median and the slowest are reported):
 *
 *   counts          the overview's counts: jb_stats_read with
 *                   JB_STATS_NO_WALK (by state), jb_queues_foreach (ready
 *                   jobs by name, from the names' index) and the claimed
 *                   and delayed jobs walked for their names
 *   first page      50 jobs from the start (jb_iter_open_opts)
 *   deep page       50 jobs after the middle job's cursor
 *   name page       50 jobs of "n7" after the middle job's cursor
 *   name delayed    50 delayed jobs of "n10" from the start
 *
 * With SQLite (when built with it) the same in an indexed table, WAL,
 * synchronous OFF: jobs(seq INTEGER PRIMARY KEY, name, prank, state,
 * posting) with indexes (prank, seq), (name, prank, seq) and (state,
 * name, prank, seq); counts GROUP BY state, name; pages by keyset
 * ((prank, seq) > (?, ?) ORDER BY prank, seq LIMIT 50).
 */
#ifndef JOBBOARD_BENCH_PAGES_H
#define JOBBOARD_BENCH_PAGES_H

#include <stddef.h>

enum {
  BENCH_PAGES_COUNTS,
  BENCH_PAGES_FIRST,
  BENCH_PAGES_DEEP,
  BENCH_PAGES_NAME,
  BENCH_PAGES_NAME_DELAYED,
  BENCH_PAGES_N
};
#define BENCH_PAGES_RUNS 7

extern const char *const bench_pages_label[BENCH_PAGES_N];

typedef struct {
  double median_ms[BENCH_PAGES_N];
  double max_ms[BENCH_PAGES_N];
  size_t rows[BENCH_PAGES_N]; /* jobs (or count rows) the read returned */
  double build_s;
} bench_pages_side;

/* The jobboard side in `dir` (made). 0, or -1 with a message in err. */
int bench_pages_board(bench_pages_side *out, const char *dir, size_t jobs,
                      char *err, size_t errlen);
/* The SQLite side; -1 with a message when built without SQLite. */
int bench_pages_sqlite(bench_pages_side *out, const char *dir, size_t jobs,
                       char *err, size_t errlen);

#endif
