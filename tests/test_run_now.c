/*
 * test_run_now.c - the two writes of the dashboard's job actions.
 *
 * jb_job_run_now makes a delayed job (a due time ahead: posted so,
 * retried after a back-off, snoozed) claimable at once, as its due time
 * coming would: same sequence and listing place, same attempts, reason
 * and options, no change-log event, waiters woken (by names too). A job
 * claimable already is left as it is; a claimed one, one not on the
 * board, a malformed uuid and a read-only handle are refused, nothing
 * changed.
 *
 * jb_dead_remove deletes one dead letter by uuid and its `deadage` entry
 * (check counts one entry per letter), also a letter whose record does
 * not decode; the others stay; JB_ENOTFOUND when there is no such letter.
 *
 * Due times are wall-clock times: the tests fix this process's wall clock
 * (jb__test_clock_fix), except the waiter's, which runs on the real one
 * with its job due an hour away.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/txn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEC 1000000LL /* microseconds */

static int64_t T0;

static void clock_at(int64_t us) { jb__test_clock_fix(us); }

static int setup(void **state) {
  T0 = (jbt_now_us() / SEC) * SEC;
  clock_at(T0);
  return jbt_setup(state);
}

static int teardown(void **state) {
  clock_at(0);
  return jbt_teardown(state);
}

static void post_delayed(char u[JB_UUID_STRLEN], jb_board *b,
                         const char *name, int64_t delay_ms) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.delay_ms = delay_ms;
  p.max_attempts = 5;
  int rc = jb_job_post(u, b, &p);
  if (rc != JB_OK) fail_msg("post %s: %s", name, jb_errmsg());
}

static jb_job *get(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  int rc = jb_job_get(&j, b, uuid);
  if (rc != JB_OK) fail_msg("get %s: %s", uuid, jb_errmsg());
  return j;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

static void next_is(jb_board *b, const char *want) {
  char got[JB_UUID_STRLEN];
  int rc = jb_claim_next(got, NULL, NULL, b, "w", NULL);
  if (rc != JB_OK) fail_msg("claim-next: %s (%s), wanted %s", jb_strerror(rc),
                            jb_errmsg(), want);
  assert_string_equal(got, want);
}

static void run_now_ok(jb_board *b, const char *uuid) {
  int rc = jb_job_run_now(b, uuid);
  if (rc != JB_OK) fail_msg("run-now %s: %s (%s)", uuid, jb_strerror(rc),
                            jb_errmsg());
}

/* Posted between two ready jobs, due in an hour: after run-now it is
 * claimable, in its place (its sequence), with no event logged. */
static void a_delayed_job_runs_now_in_its_place(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], d[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  jbt_post(a, f->board, "a", JB_PRIORITY_NORMAL);
  post_delayed(d, f->board, "d", 3600 * 1000);
  jbt_post(c, f->board, "c", JB_PRIORITY_NORMAL);
  jb_job *j = get(f->board, d);
  uint64_t seq = jb_job_sequence(j);
  int64_t modified = jb_job_modified(j);
  assert_int_equal(jb_job_not_before(j), T0 + 3600 * SEC);
  jb_job_free(j);
  assert_int_equal(jb_claim(NULL, f->board, d, "w", NULL), JB_ENOTDUE);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 2);

  uint64_t from = log_next(f->board);
  run_now_ok(f->board, d);
  assert_int_equal(log_next(f->board), from); /* no event */
  j = get(f->board, d);
  assert_int_equal(jb_job_not_before(j), 0);
  assert_int_equal(jb_job_sequence(j), seq);
  assert_int_equal(jb_job_modified(j), modified);
  assert_int_equal(jb_job_priority(j), JB_PRIORITY_NORMAL);
  assert_int_equal(jb_job_max_attempts(j), 5);
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  jb_job_free(j);
  assert_int_equal(jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 3);
  jbt_assert_check_ok_delayed(f->board, 0);
  char order[3][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(f->board, order, 3), 3);
  assert_string_equal(order[0], a);
  assert_string_equal(order[1], d);
  assert_string_equal(order[2], c);
  next_is(f->board, a);
  next_is(f->board, d);
  next_is(f->board, c);
}

/* A retry's back-off and a snooze are due times too: run-now ends them,
 * the attempts, the reason and the snoozes stay. */
static void a_retried_or_snoozed_job_keeps_its_counts(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_delayed(u, f->board, "flaky", 0);
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_BACKOFF;
  ro.reason = "disk full";
  jb_retry_result rr;
  assert_int_equal(jb_retry(&rr, f->board, u, "w", &ro), JB_OK);
  assert_true(rr.due_us > T0);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ENOTDUE);
  run_now_ok(f->board, u);
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_attempts(j), 1);
  assert_string_equal(jb_job_last_reason(j), "disk full");
  assert_int_equal(jb_job_not_before(j), 0);
  jb_job_free(j);
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_snooze(f->board, u, "w", t, 60000), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ENOTDUE);
  run_now_ok(f->board, u);
  j = get(f->board, u);
  assert_int_equal(jb_job_attempts(j), 1);
  assert_int_equal(jb_job_snoozes(j), 1);
  jb_job_free(j);
  next_is(f->board, u);
  jbt_assert_check_ok_delayed(f->board, 0);
}

/* Claimable already: JB_OK, nothing changes (twice in a row, too). */
static void a_claimable_job_is_left_as_it_is(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], d[JB_UUID_STRLEN];
  jbt_post(u, f->board, "ready", JB_PRIORITY_HIGH);
  post_delayed(d, f->board, "d", 1000);
  run_now_ok(f->board, d);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  run_now_ok(f->board, u);
  run_now_ok(f->board, d);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* Claimed, not on the board, malformed, NULL: refused, nothing changed. */
static void refusals_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], d[JB_UUID_STRLEN];
  jbt_post(u, f->board, "held", JB_PRIORITY_NORMAL);
  post_delayed(d, f->board, "d", 1000);
  assert_int_equal(jb_claim(NULL, f->board, u, "holder-7", NULL), JB_OK);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_job_run_now(f->board, u), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "holder-7");
  assert_int_equal(jb_job_run_now(f->board,
                                   "00000000-0000-4000-8000-000000000000"),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "not on the board");
  assert_int_equal(jb_job_run_now(f->board, "not-a-uuid"), JB_EINVAL);
  assert_int_equal(jb_job_run_now(f->board, NULL), JB_EINVAL);
  assert_int_equal(jb_job_run_now(NULL, d), JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

typedef struct {
  jb_board *board;
  const char *name; /* NULL: any */
  char uuid[JB_UUID_STRLEN];
  int rc;
  int64_t took_ms;
} waiter;

static void *waiter_run(void *arg) {
  waiter *w = arg;
  int64_t t0 = jbt_now_ms();
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = 30000;
  const char *names[1] = {w->name};
  if (w->name) {
    o.names = names;
    o.n_names = 1;
  }
  w->rc = jb_claim_next(w->uuid, NULL, NULL, w->board, "waiter", &o);
  w->took_ms = jbt_now_ms() - t0;
  return NULL;
}

/* A claim-next waiting (for every name, and for the job's name) takes
 * the job run now, long before its due time and its own timeout. */
static void waiters_wake_for_a_job_run_now(void **state) {
  jbt_fixture *f = *state;
  clock_at(0); /* the waiters' timers run on the real clock */
  const char *names[2] = {NULL, "lane.x"};
  for (int i = 0; i < 2; i++) {
    char d[JB_UUID_STRLEN];
    post_delayed(d, f->board, "lane.x", 3600 * 1000);
    waiter w = {.board = f->board, .name = names[i], .rc = 99};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
    struct timespec ts = {0, 100 * 1000000L}; /* asleep, most likely */
    nanosleep(&ts, NULL);
    run_now_ok(f->board, d);
    assert_int_equal(pthread_join(th, NULL), 0);
    if (w.rc != JB_OK) fail_msg("waiter %d: %s (%s) after %lld ms", i,
                                jb_strerror(w.rc), jb_errmsg(),
                                (long long)w.took_ms);
    assert_string_equal(w.uuid, d);
    printf("# waiter %d claimed the job run now after %lld ms\n", i,
           (long long)w.took_ms);
    assert_true(w.took_ms < 20000); /* not its timeout */
  }
}

/* ------------------------------------------------------- dead letters */

static void bury(char u[JB_UUID_STRLEN], jb_board *b, const char *name) {
  jbt_post(u, b, name, JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  assert_int_equal(jb_retry(NULL, b, u, "w", &ro), JB_OK);
}

static size_t dead_count(jb_board *b) {
  size_t n = 999;
  assert_int_equal(jb_dead_count(&n, b), JB_OK);
  return n;
}

static void dead_remove_takes_one_letter_and_its_index_entry(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  bury(a, f->board, "a");
  clock_at(T0 + SEC);
  bury(b, f->board, "b");
  clock_at(T0 + 2 * SEC);
  bury(c, f->board, "c");
  assert_int_equal(dead_count(f->board), 3);
  assert_int_equal(jb_dead_remove(f->board, b), JB_OK);
  assert_int_equal(dead_count(f->board), 2);
  jb_dead_letter *l = (jb_dead_letter *)1;
  assert_int_equal(jb_dead_get(&l, f->board, b), JB_ENOTFOUND);
  assert_int_equal(jb_dead_get(&l, f->board, a), JB_OK);
  jb_dead_free(l);
  /* deadage holds one entry per letter (check counts them) */
  jbt_assert_check_ok(f->board);
  /* The history record of the job stays. */
  jb_completion *cp = NULL;
  assert_int_equal(jb_job_completion(&cp, f->board, b), JB_OK);
  jb_completion_free(cp);
  /* Purge by age walks the index: the oldest one left goes. */
  size_t purged = 9;
  assert_int_equal(jb_dead_purge(&purged, f->board, T0 + 2 * SEC), JB_OK);
  assert_int_equal(purged, 1);
  assert_int_equal(jb_dead_get(&l, f->board, c), JB_OK);
  jb_dead_free(l);
  jbt_assert_check_ok(f->board);
}

static void dead_remove_refusals_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], on[JB_UUID_STRLEN];
  bury(a, f->board, "a");
  jbt_post(on, f->board, "on-the-board", JB_PRIORITY_NORMAL);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_dead_remove(f->board, on), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "not in the dead letters");
  assert_int_equal(jb_dead_remove(f->board, "bogus"), JB_EINVAL);
  assert_int_equal(jb_dead_remove(f->board, NULL), JB_EINVAL);
  assert_int_equal(jb_dead_remove(NULL, a), JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
  assert_int_equal(jb_dead_remove(f->board, a), JB_OK);
  assert_int_equal(jb_dead_remove(f->board, a), JB_ENOTFOUND);
}

/* A record that does not decode (its time unreadable): its `deadage`
 * entry is found by uuid and goes with it. */
static int garble(jb_store *s, MDB_txn *txn, void *ctx, int *status) {
  (void)status;
  MDB_val k = {16, ctx}, v = {3, "bad"};
  return mdb_put(txn, s->trash, &k, &v, 0);
}

static void a_letter_that_does_not_decode_goes_with_its_entry(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  bury(a, f->board, "a");
  bury(b, f->board, "b");
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, a, "uuid"), JB_OK);
  assert_int_equal(jb__store_write(f->board->store, garble, raw), JB_OK);
  assert_int_equal(jb_dead_remove(f->board, a), JB_OK);
  assert_int_equal(dead_count(f->board), 1);
  jbt_assert_check_ok(f->board);
}

/* Read-only: both refused, the board unchanged (a child opens it). */
typedef struct {
  const char *dir;
  const char *delayed, *dead;
} ro_arg;

static int ro_child(void *varg) {
  ro_arg *a = varg;
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_READONLY;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 10;
  if (jb_job_run_now(b, a->delayed) != JB_EREADONLY) return 11;
  if (jb_dead_remove(b, a->dead) != JB_EREADONLY) return 12;
  jb_board_close(b);
  return 0;
}

static void a_read_only_handle_refuses_both(void **state) {
  jbt_fixture *f = *state;
  char d[JB_UUID_STRLEN], x[JB_UUID_STRLEN];
  post_delayed(d, f->board, "d", 60000);
  bury(x, f->board, "x");
  uint64_t digest = jbt_board_digest(f->dir);
  ro_arg a = {f->dir, d, x};
  jbt_wait_ok(jbt_fork(ro_child, &a, 60), 60000);
  assert_true(jbt_board_digest(f->dir) == digest);
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(a_delayed_job_runs_now_in_its_place),
      T(a_retried_or_snoozed_job_keeps_its_counts),
      T(a_claimable_job_is_left_as_it_is),
      T(refusals_change_nothing),
      T(waiters_wake_for_a_job_run_now),
      T(dead_remove_takes_one_letter_and_its_index_entry),
      T(dead_remove_refusals_change_nothing),
      T(a_letter_that_does_not_decode_goes_with_its_entry),
      T(a_read_only_handle_refuses_both),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
