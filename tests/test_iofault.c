/*
 * test_iofault.c - I/O faults at every write and every flush of a commit,
 * through tests/iolayer.c: the nth write or flush
 * liblmdb makes on the board's data.mdb fails (or, for a write, is cut
 * short), for every n of one commit (a post big enough to write several
 * runs of pages), in each durability mode that makes such calls.
 *
 * What must hold (store/env.c, "After a failed commit"):
 *  - a flush that fails (EIO from fdatasync, or from the O_DSYNC write of
 *    the meta page in durability full) fails the call with JB_EIO and a
 *    message naming the board, the cause and "reopen the board"; it never
 *    reports success; the handle (and any other of this process on the
 *    board) then refuses every write, a new open of the board in this
 *    process is refused too, reads go on where LMDB allows them, and after
 *    every handle is closed the board opens and takes writes again (the
 *    "fsyncgate" lesson: a second fsync would say 0 for data the kernel
 *    dropped);
 *  - a write that fails with ENOSPC or EIO, or is short, at any point of a
 *    commit changes nothing a later reader (another process, or this one
 *    after reopening) sees; ENOSPC is JB_EFULL and leaves the handle
 *    usable, so the next write after space returns works (except the meta
 *    page's write, after which LMDB itself refuses the environment);
 *    EIO and short writes (LMDB reports both as EIO, as it does a failed
 *    flush) stop the handle as a failed flush does;
 *  - EINTR, on any write or flush, is retried: the call succeeds once, with
 *    exactly one change.
 */
#include "helpers.h"
#include "iolayer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* LMDB's two meta pages are the file's first two pages (4 KiB here). */
#define META_END 8192u

typedef enum { AT_WRITE, AT_FLUSH } fault_at;

/* What the handle is expected to do after the fault. */
typedef enum {
  RETRIED,  /* the call succeeds anyway (EINTR) */
  USABLE,   /* the call fails, the next write works (ENOSPC) */
  REFUSED,  /* the call fails, writes are refused until reopened */
} after;

typedef struct {
  jb_durability mode;
  fault_at at;
  int err;        /* errno; 0: a short write */
  unsigned times; /* consecutive calls that fail */
  int code;       /* what the faulty call returns (when it fails) */
  const char *cause; /* in its message */
  after then;     /* for the meta page's write: see meta_then */
  after meta_then;
} scenario;

/* The commit under fault: a post whose details need overflow pages. */
static int post_big(jb_board *b, char uuid[JB_UUID_STRLEN]) {
  jbt_buf d = jbt_details_blob(9000, 7);
  jb_post p = JB_POST_INIT;
  p.name = "iofault";
  p.details = d.data;
  p.details_len = d.len;
  int rc = jb_job_post(uuid, b, &p);
  jbt_buf_free(&d);
  return rc;
}

static jb_board *open_followed(const char *dir, jb_durability mode) {
  iol_follow(dir); /* LMDB's descriptors are tracked from their open */
  return jbt_open(dir, mode, 64 * 1024);
}

static size_t count_jobs(jb_board *b) {
  size_t n = 0;
  int rc = jb_board_count(&n, b, 0);
  if (rc != JB_OK) fail_msg("count: %s", jb_errmsg());
  return n;
}

/* Run scenario `sc` at the nth call; false when the commit made fewer
 * than n such calls (the fault never fired). */
static bool trial(const scenario *sc, unsigned n) {
  char *dir = jbt_mkdtemp();
  jb_board *b = open_followed(dir, sc->mode);
  jbt_post(NULL, b, "first", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "second", JB_PRIORITY_HIGH);
  uint64_t before = jbt_board_digest(dir);

  iol_fault_clear();
  if (sc->at == AT_WRITE)
    iol_fault_write(n, sc->err, sc->times);
  else
    iol_fault_flush(n, sc->err, sc->times);
  char uuid[JB_UUID_STRLEN];
  int rc = post_big(b, uuid);
  unsigned fired = iol_faults_fired();
  bool meta = sc->at == AT_WRITE && iol_fault_offset() < META_END;
  iol_fault_clear();
  if (fired == 0) {
    /* Past the commit's last such call: it simply worked. */
    assert_int_equal(rc, JB_OK);
    jb_board_close(b);
    iol_follow(NULL);
    jbt_rmtree(dir);
    free(dir);
    return false;
  }
  after then = meta ? sc->meta_then : sc->then;
  size_t expect = 2;
  if (then == RETRIED) {
    if (rc != JB_OK)
      fail_msg("call %u: %s was not retried: %s", n, strerror(sc->err),
               jb_errmsg());
    assert_int_equal(fired, sc->times);
    expect = 3;
    assert_int_equal(count_jobs(b), expect); /* one job, not two */
  } else {
    /* It failed, said so clearly, and nobody sees a change. */
    if (rc == JB_OK)
      fail_msg("call %u: the commit reported success after %s",
               n, sc->err ? strerror(sc->err) : "a short write");
    if (rc != sc->code)
      fail_msg("call %u: %s, expected %s (%s)", n, jb_strerror(rc),
               jb_strerror(sc->code), jb_errmsg());
    jbt_assert_contains(jb_errmsg(), dir);
    jbt_assert_contains(jb_errmsg(), sc->cause);
    assert_true(jbt_board_digest(dir) == before);
  }
  if (then == REFUSED) {
    jbt_assert_contains(jb_errmsg(), "reopen the board");
    /* Reads go on unless LMDB itself stopped the environment (a failed
     * meta-page write). */
    size_t n_read = 0;
    rc = jb_board_count(&n_read, b, 0);
    if (!meta) {
      assert_int_equal(rc, JB_OK);
      assert_int_equal(n_read, 2);
    }
    /* Every later write, and a new handle, is refused. */
    rc = post_big(b, uuid);
    assert_int_equal(rc, JB_EIO);
    jbt_assert_contains(jb_errmsg(), "refusing to write");
    jbt_assert_contains(jb_errmsg(), "reopen the board");
    jbt_assert_contains(jb_errmsg(), dir);
    jb_board *second = NULL;
    jb_board_options o = JB_BOARD_OPTIONS_INIT;
    o.durability = sc->mode;
    rc = jb_board_open(&second, dir, &o);
    assert_int_equal(rc, JB_EIO);
    assert_null(second);
    jbt_assert_contains(jb_errmsg(), "reopen the board");
    assert_true(jbt_board_digest(dir) == before);
  } else if (then == USABLE) {
    /* Space came back: the next write works. */
    rc = post_big(b, uuid);
    if (rc != JB_OK) fail_msg("call %u: the next write: %s", n, jb_errmsg());
    expect = 3;
  }
  jb_board_close(b);
  /* Reopened: what was acknowledged, nothing else; and it takes writes. */
  b = open_followed(dir, sc->mode);
  assert_int_equal(count_jobs(b), expect);
  jbt_assert_check_ok(b);
  assert_int_equal(post_big(b, uuid), JB_OK);
  assert_int_equal(count_jobs(b), expect + 1);
  jb_board_close(b);
  iol_follow(NULL);
  jbt_rmtree(dir);
  free(dir);
  return true;
}

/* Every call of the commit in turn; returns how many were tested. */
static unsigned every_call(const scenario *sc) {
  unsigned n = 1;
  while (trial(sc, n)) n++;
  printf("# %s, durability %s: %s at each of %u %s of a commit\n",
         sc->err ? strerror(sc->err) : "short write",
         jb_durability_name(sc->mode),
         sc->then == RETRIED ? "retried" : "failed cleanly", n - 1,
         sc->at == AT_WRITE ? "writes" : "flushes");
  fflush(stdout);
  return n - 1;
}

/* Scenario `sc` in the first `modes` of full, normal, none (none never
 * flushes); every one must reach at least `min_calls` calls of a commit. */
static void every_mode(scenario sc, int modes, unsigned min_calls) {
  static const jb_durability all[] = {JB_DURABILITY_FULL, JB_DURABILITY_NORMAL,
                                      JB_DURABILITY_NONE};
  for (int m = 0; m < modes; m++) {
    sc.mode = all[m];
    assert_true(every_call(&sc) >= min_calls);
  }
}

static void a_failed_flush_fails_the_commit_and_stops_writes_until_reopen(
    void **state) {
  (void)state;
  /* One fdatasync per commit. */
  every_mode((scenario){0, AT_FLUSH, EIO, 1, JB_EIO, "Input/output error",
                        REFUSED, REFUSED},
             2, 1);
}

static void a_failed_o_dsync_meta_write_fails_the_commit_and_stops_writes(
    void **state) {
  (void)state;
  /* Durability full writes the meta page on an O_DSYNC descriptor: its
   * write is its flush. Every write fails in turn; the last is that one. */
  iol_counts_reset();
  every_mode((scenario){0, AT_WRITE, EIO, 1, JB_EIO, "Input/output error",
                        REFUSED, REFUSED},
             1, 2);
  assert_true(iol_counts_get().dsync_writes > 0);
}

static void a_write_failing_with_enospc_changes_nothing_and_the_handle_goes_on(
    void **state) {
  (void)state;
  every_mode((scenario){0, AT_WRITE, ENOSPC, 1, JB_EFULL,
                        "No space left on device", USABLE, REFUSED},
             3, 2);
}

static void a_write_failing_with_eio_changes_nothing_and_stops_writes(
    void **state) {
  (void)state;
  every_mode((scenario){0, AT_WRITE, EIO, 1, JB_EIO, "Input/output error",
                        REFUSED, REFUSED},
             3, 2);
}

static void a_short_write_changes_nothing_and_stops_writes(void **state) {
  (void)state;
  /* LMDB turns a short write into EIO. */
  every_mode((scenario){0, AT_WRITE, 0, 1, JB_EIO, "Input/output error",
                        REFUSED, REFUSED},
             3, 2);
}

static void an_interrupted_write_is_retried(void **state) {
  (void)state;
  /* Twice in a row: LMDB retries its writes itself. */
  every_mode((scenario){0, AT_WRITE, EINTR, 2, JB_OK, "", RETRIED, RETRIED},
             3, 2);
}

static void an_interrupted_flush_runs_the_transaction_again(void **state) {
  (void)state;
  /* LMDB returns an interrupted fdatasync (before the meta write: nothing
   * committed); the library runs the whole transaction again, here three
   * times in a row. */
  every_mode((scenario){0, AT_FLUSH, EINTR, 3, JB_OK, "", RETRIED, RETRIED},
             2, 1);
}

int main(void) {
  jbt_watchdog(600);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_failed_flush_fails_the_commit_and_stops_writes_until_reopen),
      cmocka_unit_test(a_failed_o_dsync_meta_write_fails_the_commit_and_stops_writes),
      cmocka_unit_test(a_write_failing_with_enospc_changes_nothing_and_the_handle_goes_on),
      cmocka_unit_test(a_write_failing_with_eio_changes_nothing_and_stops_writes),
      cmocka_unit_test(a_short_write_changes_nothing_and_stops_writes),
      cmocka_unit_test(an_interrupted_write_is_retried),
      cmocka_unit_test(an_interrupted_flush_runs_the_transaction_again),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
