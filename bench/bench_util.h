/*
 * bench_util.h - what the parts of `jobboard-bench` share: the job they
 * post, the library's cycle, timing, the median of rounds, output lines,
 * and the options of the parts that live in files of their own
 * (bench_threads.c, bench_batch.c).
 */
#ifndef JOBBOARD_BENCH_UTIL_H
#define JOBBOARD_BENCH_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobboard.h"

/* The owner every bench claim is made for. */
#define BENCH_WHO "bench-worker"
/* At most this many counts in --threads and --procs, sizes in --batch. */
#define BENCH_MAX_LIST 8u
#define BENCH_MAX_THREADS 64u
#define BENCH_MAX_ROUNDS 99u
/* Boards and raw environments map this much at open, as the library's
 * default does. */
#define BENCH_MAP_SIZE ((size_t)64 << 20)

/* The modes in the order bench measures them: full, normal, none. */
/* The modes in the order they are measured. */
#define BENCH_NMODES 4
/* --flush-interval: the library's boards in durability interval (0: the
 * default). */
extern int64_t bench_flush_ms;
extern const jb_durability bench_mode_order[BENCH_NMODES];
/* A mode whose commits do not wait for the disk (none, interval): measured
 * with --jobs cycles, the others with --sync-jobs. */
bool bench_fast(jb_durability d);

/* The job bench posts: "bench.resize-image" with msgpack details of a
 * plausible size (its fields borrow static storage). */
jb_post bench_post(void);

/* xorshift64*: cheap, and good enough to scatter uuids over a B-tree as
 * random uuid4s do. bench_rand_seed gives a non-zero state that differs
 * by time, process and `tag`. */
uint64_t bench_rand(uint64_t *state);
uint64_t bench_rand_seed(unsigned tag);

/* CLOCK_MONOTONIC in seconds; in nanoseconds. */
double bench_now_s(void);
int64_t bench_mono_ns(void);

/* Sleep us microseconds, whatever signals come. */
void bench_sleep_us(long us);

/* The median of n > 0 values (sorts v). */
double bench_median(double *v, unsigned n);

/* Exit status of jobboard-bench (its --help lists them). */
enum { BENCH_EXIT_OK = 0, BENCH_EXIT_ERROR = 1, BENCH_EXIT_USAGE = 2 };

/* "jobboard-bench: WHAT: ERR" on stderr; returns the exit code 1. */
int bench_fail(const char *what, const char *err);

/* "jobboard-bench: <printf message>" on stderr, always one line
 * (tools/cli_error.h); returns BENCH_EXIT_USAGE. */
int bench_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* Print v as one compact JSON line on stdout and free it (NULL: nothing). */
void bench_json_line(json_t *v);

/* Make directory `path` (0, or 1 after "jobboard-bench: WHAT: cannot
 * make PATH: REASON" on stderr). */
int bench_mkdir(const char *path, const char *what);

/* Remove a directory bench made, with its files and subdirectories. */
void bench_remove_dir(const char *dir);

/* The library's cycle, n times on `board`: jb_job_post, then
 * jb_claim_next for BENCH_WHO with `co` (NULL: a plain claim), then
 * jb_consume of the job claimed. Safe from many threads on one handle.
 * Returns 0, or -1 with jb_errmsg() in err. */
int bench_lib_cycles(jb_board *board, size_t n, const jb_claim_options *co,
                     char *err, size_t errlen);

/* Open (creating it) a board in `dir` with durability d and the map bench
 * uses. Returns 0, or -1 with the reason in err. */
int bench_lib_open(jb_board **out, const char *dir, jb_durability d,
                   char *err, size_t errlen);

/* What the parts in files of their own are told. */
typedef struct {
  bool mode[BENCH_NMODES]; /* by jb_durability */
  size_t jobs;          /* cycles per round in mode none */
  size_t sync_jobs;     /* cycles per round in full and normal */
  unsigned rounds;
  bool json;
  bool peers;           /* SQLite beside each figure (--peers) */
  size_t details_len;   /* the SQLite row's details blob (bench_peers.h) */
  size_t value_len;     /* the raw LMDB floor's job record (bench_raw.h) */
  unsigned threads[BENCH_MAX_LIST]; /* --threads LIST */
  size_t nthreads;
  size_t batch[BENCH_MAX_LIST];     /* --batch LIST (sizes > 1) */
  size_t nbatch;
  size_t post_jobs;     /* jobs posted per round and kind in mode none */
} bench_part_opts;

/* "us per op" and "ops per s" of a count over seconds (0 when empty). */
double bench_per_s(size_t n, double secs);
double bench_us_per(size_t n, double secs);

#endif
