/*
 * helpers.h - what the cmocka test programs share: a fresh board directory
 * per test, forked children under a deadline, printed seeds, msgpack
 * builders, and a way to prove that a failed call changed nothing.
 *
 * Helpers that check something (jbt_open, jbt_post, ...) fail the running
 * cmocka test on error, so a test reads as its behaviour only. The ones
 * meant for forked children (jbt_child_*) never call cmocka: they report
 * through their exit status instead.
 */
#ifndef JB_TESTS_HELPERS_H
#define JB_TESTS_HELPERS_H

#include "jobboard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* cmocka must come after these system headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

/* ------------------------------------------------------------ directories */

/* A fresh, empty directory under $TMPDIR (or /tmp); the caller frees the
 * returned path (and removes the directory with jbt_rmtree). */
char *jbt_mkdtemp(void);
/* Remove `path` and everything under it (a missing path is fine). */
void jbt_rmtree(const char *path);
/* malloc'd "dir/name". */
char *jbt_path(const char *dir, const char *name);

/* ----------------------------------------------------------------- boards */

/* Open (creating it) the board in `dir` with the given durability and
 * initial map size (0 = default); fails the test on error. */
jb_board *jbt_open(const char *dir, jb_durability durability, size_t map_size);

/* A board per test: state->dir is a fresh directory, state->board a board
 * created in it. */
typedef struct {
  char *dir;
  jb_board *board;
  void *extra; /* for the test's own use; freed by the teardown */
} jbt_fixture;

/* cmocka setup/teardown for a fixture opened with durability `normal`
 * (flushes without paying for metadata syncs: every test here would pass
 * with `full` too, only slower). */
int jbt_setup(void **state);
int jbt_teardown(void **state);

/* ----------------------------------------------------------------- posting */

/* Post a job named `name` with priority `prio` and no details; fails the
 * test on error. Writes the uuid to `uuid_out` (may be NULL). */
void jbt_post(char uuid_out[JB_UUID_STRLEN], jb_board *board, const char *name,
              jb_priority prio);

/* The uuids of the board's jobs in listing order, at most `max` of them
 * into out[]; returns how many. */
size_t jbt_listing_order(jb_board *board, char (*out)[JB_UUID_STRLEN],
                         size_t max);

/* A msgpack buffer built by the helpers below (free with jbt_buf_free). */
typedef struct {
  char *data;
  size_t len;
} jbt_buf;

void jbt_buf_free(jbt_buf *b);
/* {"store": {"x": x}} */
jbt_buf jbt_details_store(int x);
/* {"blob": "<n bytes of filler derived from seed>"} */
jbt_buf jbt_details_blob(size_t n, unsigned seed);

/* The bytes of hex text (two digits per byte); fails the test on a digit
 * that is not hex. */
jbt_buf jbt_from_hex(const char *hex);
/* A posting as taskflow 5.0 writes it, byte for byte (233
 * bytes: uuid JBT_WIRE_UUID, "demo-job", HIGH, details {"store": {"x": 1}},
 * book "my-book", sequence 42), as hex. */
#define JBT_WIRE_UUID "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"
extern const char jbt_wire_posting_hex[];

/* -------------------------------------------------------- nothing changed */

/* What a reader can see of a board: count, unclaimed count, and the full
 * listing (uuid, owner, sequence, modified) in order. */
typedef struct {
  size_t count;
  size_t unclaimed;
  char *listing; /* one line per job */
  uint64_t digest; /* hash of every named LMDB database's contents */
} jbt_snapshot;

/* Take a snapshot of `board` (its directory is read with LMDB directly in
 * a forked child for the digest, since one process must not open an
 * environment twice). */
void jbt_snapshot_take(jbt_snapshot *s, jb_board *board);
/* Fail the test unless the two snapshots are identical. */
void jbt_snapshot_assert_same(const jbt_snapshot *before,
                              const jbt_snapshot *after);
void jbt_snapshot_free(jbt_snapshot *s);
/* Fail the test unless `board` is as `before` showed it; frees `before`
 * (the refusal tests' "a failed call changes nothing"). */
void jbt_snapshot_assert_unchanged(jbt_snapshot *before, jb_board *board);

/* Hash of the contents (key and value of every record) of every named
 * database of the LMDB environment in `dir`, read in a forked child.
 * Fails the test if the environment cannot be read. */
uint64_t jbt_board_digest(const char *dir);

/* Fail the test unless jb_board_check finds nothing to report. */
void jbt_assert_check_ok(jb_board *board);
/* ... on a board holding `delayed` delayed jobs (they are in neither the
 * ready nor the claimed count of jb_check_stats). */
void jbt_assert_check_ok_delayed(jb_board *board, size_t delayed);

/* Fail the test unless `haystack` contains `needle` (with a message that
 * shows both). */
#define jbt_assert_contains(haystack, needle)                                 \
  jbt_assert_contains_((haystack), (needle), __FILE__, __LINE__)
void jbt_assert_contains_(const char *haystack, const char *needle,
                          const char *file, int line);

/* --------------------------------------------------------------- children */

/* Fork a child that runs fn(arg) and exits with its return value. The
 * child arms alarm(timeout_s) first, so a hang kills it (SIGALRM) instead
 * of hanging the suite. Returns the child's pid (fails the test if fork
 * fails). */
pid_t jbt_fork(int (*fn)(void *arg), void *arg, unsigned timeout_s);

/* Fork a child as jbt_fork that writes one byte to the pipe whose write
 * end it finds in *ready_fd (a field of `arg`, set here before the fork)
 * once it holds what the test needs (a transaction, a registration);
 * returns its pid when it has. A child that exits first fails the test
 * with `what`. */
pid_t jbt_fork_ready(int (*fn)(void *arg), void *arg, int *ready_fd,
                     unsigned timeout_s, const char *what);

/* Wait for child `pid` for up to `timeout_ms` (a pidfd polled with that
 * deadline). Returns its wait status, or -1 if the deadline passed (the
 * child is then killed with SIGKILL and reaped). */
int jbt_wait(pid_t pid, int timeout_ms);

/* Wait as jbt_wait and fail the test unless the child exited with 0. */
void jbt_wait_ok(pid_t pid, int timeout_ms);

/* ------------------------------------------------------------------ misc */

/* The seed for this run: $JB_TEST_SEED if set, else from the clock.
 * Printed, with how to repeat the run. */
unsigned jbt_seed(const char *what);

/* Monotonic clock in milliseconds / microseconds. */
int64_t jbt_now_ms(void);
int64_t jbt_now_us(void);

/* Arm a process-wide alarm so that a hang in a test fails the program
 * (SIGALRM) instead of hanging `make check`. */
void jbt_watchdog(unsigned seconds);

/* A set of uuids (sorted array) for exactly-once checks. */
typedef struct {
  char (*v)[JB_UUID_STRLEN];
  size_t n, cap;
} jbt_uuids;

void jbt_uuids_add(jbt_uuids *s, const char *uuid);
void jbt_uuids_sort(jbt_uuids *s);
/* index of uuid in a sorted set, or -1 */
long jbt_uuids_find(const jbt_uuids *s, const char *uuid);
/* After sorting: the first uuid that appears twice, or NULL. */
const char *jbt_uuids_duplicate(const jbt_uuids *s);
void jbt_uuids_free(jbt_uuids *s);
/* Read a file of uuid lines (as written by children) into `s`. Lines
 * that are not complete uuids are ignored. */
void jbt_uuids_read_file(jbt_uuids *s, const char *path);

#endif
