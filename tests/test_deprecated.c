/*
 * test_deprecated.c - the names of 0.1 that 0.2 replaced (jobboard.h,
 * "deprecated") still build and do what their replacements do: one test
 * per old name, each calling it on a real board and reading the result
 * back through the new API.
 *
 * The rest of the tree is built with JB_NO_DEPRECATED (the old names are
 * not even declared there); this file asks for them, as a program written
 * for 0.1 does.
 */
#undef JB_NO_DEPRECATED
#include <jobboard.h>

#include "helpers.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A program written for 0.1 is warned; this one calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* A job posted on the fixture's board. */
static void post(jbt_fixture *f, char u[JB_UUID_STRLEN], const char *name) {
  jbt_post(u, f->board, name, JB_PRIORITY_NORMAL);
}

static jb_state state_of(jbt_fixture *f, const char *u) {
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  return st;
}

static uint64_t token_of(jbt_fixture *f, const char *u) {
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, u), JB_OK);
  uint64_t t = jb_job_token(j);
  jb_job_free(j);
  return t;
}

static jb_end end_of(jbt_fixture *f, const char *u) {
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  jb_end e = c->end;
  jb_completion_free(c);
  return e;
}

static void job_claim_claims(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_job_claim(f->board, u, "w"), JB_OK);
  assert_int_equal(state_of(f, u), JB_STATE_CLAIMED);
  assert_int_equal(jb_job_claim(f->board, u, "x"), JB_ECLAIMED);
}

static void job_claim_ex_takes_opts_and_gives_the_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  jb_claim_opts o = JB_CLAIM_OPTS_INIT; /* version 1: no wait_ms */
  o.lease_ms = 60000;
  uint64_t t = 0;
  assert_int_equal(jb_job_claim_ex(&t, f->board, u, "w", &o), JB_OK);
  assert_true(t > 0);
  assert_int_equal(t, token_of(f, u));
  jb_expiry e;
  int64_t ms = 0;
  assert_int_equal(jb_job_expires_in(&e, &ms, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
}

static void job_claim_next_claims_the_first(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  post(f, a, "a");
  post(f, b, "b");
  assert_int_equal(jb_job_claim_next(got, NULL, f->board, "w"), JB_OK);
  assert_string_equal(got, a);
}

static void job_claim_next_ex_gives_the_token(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  post(f, a, "a");
  uint64_t t = 0;
  jb_job *j = NULL;
  assert_int_equal(jb_job_claim_next_ex(got, &j, &t, f->board, "w", NULL),
                   JB_OK);
  assert_string_equal(got, a);
  assert_int_equal(t, jb_job_token(j));
  jb_job_free(j);
}

static void job_claim_next_wait_times_out_then_claims(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  /* 0.1's rule: a timeout of 0 looks once and says JB_ETIMEDOUT. */
  assert_int_equal(jb_job_claim_next_wait(got, NULL, NULL, f->board, "w",
                                          NULL, 0),
                   JB_ETIMEDOUT);
  assert_int_equal(jb_job_claim_next_wait(got, NULL, NULL, f->board, "w",
                                          NULL, 20),
                   JB_ETIMEDOUT);
  post(f, a, "a");
  assert_int_equal(jb_job_claim_next_wait(got, NULL, NULL, f->board, "w",
                                          NULL, 1000),
                   JB_OK);
  assert_string_equal(got, a);
}

static void job_claim_next_many_claims_several(void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN], got[4][JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) post(f, u[i], "a");
  size_t n = 0;
  assert_int_equal(jb_job_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                          NULL, 4),
                   JB_OK);
  assert_int_equal(n, 3);
  for (int i = 0; i < 3; i++) assert_string_equal(got[i], u[i]);
}

static void job_extend_extends(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_extend(f->board, u, "w", 0, 60000), JB_OK);
  jb_expiry e;
  int64_t ms = 0;
  assert_int_equal(jb_job_expires_in(&e, &ms, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(ms > 50000);
}

static void job_abandon_gives_back(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_abandon(f->board, u, "x"), JB_ENOTOWNER);
  assert_int_equal(jb_job_abandon(f->board, u, "w"), JB_OK);
  assert_int_equal(state_of(f, u), JB_STATE_UNCLAIMED);
}

static void job_abandon_ex_checks_the_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_abandon_ex(f->board, u, "w", t + 1), JB_ENOTOWNER);
  assert_int_equal(jb_job_abandon_ex(f->board, u, "w", t), JB_OK);
  assert_int_equal(state_of(f, u), JB_STATE_UNCLAIMED);
}

static void job_consume_consumes(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_consume(f->board, u, "w"), JB_OK);
  assert_int_equal(end_of(f, u), JB_END_CONSUMED);
}

static void job_consume_ex_checks_the_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_consume_ex(f->board, u, "w", t + 1), JB_ENOTOWNER);
  assert_int_equal(jb_job_consume_ex(f->board, u, "w", t), JB_OK);
  assert_int_equal(end_of(f, u), JB_END_CONSUMED);
}

static void job_consume_result_keeps_outcome_and_result(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  static const unsigned char map[] = {0x81, 0xa1, 'k', 0x01}; /* {"k": 1} */
  assert_int_equal(jb_job_consume_result(f->board, u, "w", 0,
                                         JB_OUTCOME_FAILURE, map, sizeof map),
                   JB_OK);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_int_equal(c->result_len, sizeof map);
  assert_memory_equal(c->result, map, sizeof map);
  jb_completion_free(c);
}

static void job_consume_and_claim_next_does_both(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN], next[JB_UUID_STRLEN];
  post(f, a, "a");
  post(f, b, "b");
  uint64_t t = 0, nt = 0;
  assert_int_equal(jb_claim(&t, f->board, a, "w", NULL), JB_OK);
  assert_int_equal(jb_job_consume_and_claim_next(next, NULL, &nt, f->board,
                                                 a, "w", t,
                                                 JB_OUTCOME_SUCCESS, NULL, 0,
                                                 NULL),
                   JB_OK);
  assert_int_equal(end_of(f, a), JB_END_CONSUMED);
  assert_string_equal(next, b);
  assert_int_equal(nt, token_of(f, b));
}

static void job_consume_many_consumes_each(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  post(f, a, "a");
  post(f, b, "b");
  assert_int_equal(jb_claim(NULL, f->board, a, "w", NULL), JB_OK);
  jb_consume_item items[2] = {
      {a, "w", 0, JB_OUTCOME_SUCCESS, NULL, 0},
      {b, "w", 0, JB_OUTCOME_SUCCESS, NULL, 0}, /* not claimed */
  };
  int st[2];
  assert_int_equal(jb_job_consume_many(st, f->board, items, 2, NULL, NULL),
                   JB_OK);
  assert_int_equal(st[0], JB_OK);
  assert_int_equal(st[1], JB_ENOTFOUND);
  assert_int_equal(end_of(f, a), JB_END_CONSUMED);
}

static void job_trash_trashes(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_trash(f->board, u, "w"), JB_OK);
  assert_int_equal(end_of(f, u), JB_END_TRASHED);
}

static void job_trash_ex_checks_the_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_job_trash_ex(f->board, u, "w", t + 1), JB_ENOTOWNER);
  assert_int_equal(jb_job_trash_ex(f->board, u, "w", t), JB_OK);
  assert_int_equal(end_of(f, u), JB_END_TRASHED);
}

static void job_retry_takes_out_last(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  jb_retry_opts o = JB_RETRY_OPTS_INIT;
  o.reason = "again";
  jb_retry_result r;
  memset(&r, 0xff, sizeof r);
  assert_int_equal(jb_job_retry(f->board, u, "w", &o, &r), JB_OK);
  assert_false(r.dead);
  assert_int_equal(r.attempts, 1);
  assert_int_equal(state_of(f, u), JB_STATE_UNCLAIMED);
}

static void board_flush_cancels_the_unclaimed(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  post(f, a, "a");
  post(f, b, "b");
  assert_int_equal(jb_claim(NULL, f->board, a, "w", NULL), JB_OK);
  size_t n = 0;
  assert_int_equal(jb_board_flush(&n, f->board), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(end_of(f, b), JB_END_CANCELLED);
  assert_int_equal(state_of(f, a), JB_STATE_CLAIMED);
}

static void board_cancel_ends_waits(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_board_cancel(f->board), JB_OK);
  assert_int_equal(jb_board_wait(f->board, 0, 5000), JB_ECANCELED);
}

/* JB_ECANCELED is JB_EINTERRUPTED under its 0.1 name. */
static void ecanceled_is_einterrupted(void **state) {
  (void)state;
  assert_int_equal(JB_ECANCELED, JB_EINTERRUPTED);
}

/* Interrupted through the 0.2 name: of the 0.1 names this test calls only
 * jb_board_cancel_reset. */
static void board_cancel_reset_restores_waits(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_board_interrupt(f->board), JB_OK);
  assert_int_equal(jb_board_cancel_reset(f->board), JB_OK);
  assert_int_equal(jb_board_wait(f->board, 0, 10), JB_ETIMEDOUT);
}

/* Two jobs consumed, "a" then "b"; their uuids in a, b. */
static void two_done(jbt_fixture *f, char a[JB_UUID_STRLEN],
                     char b[JB_UUID_STRLEN]) {
  post(f, a, "a");
  post(f, b, "b");
  for (int i = 0; i < 2; i++) {
    const char *u = i ? b : a;
    assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
    assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  }
}

static void history_open_takes_flags(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  two_done(f, a, b);
  jb_history_iter *it = NULL;
  const jb_completion *c = NULL;
  assert_int_equal(jb_history_open(&it, f->board, JB_HISTORY_OLDEST_FIRST),
                   JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_string_equal(c->uuid, a);
  jb_history_close(it);
  assert_int_equal(jb_history_open(&it, f->board, 0), JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_string_equal(c->uuid, b);
  jb_history_close(it);
}

static void history_open_filtered_takes_a_version_1_filter(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  two_done(f, a, b);
  jb_history_filter flt = JB_HISTORY_FILTER_INIT;
  flt.name = "a";
  jb_history_iter *it = NULL;
  const jb_completion *c = NULL;
  assert_int_equal(jb_history_open_filtered(&it, f->board, 0, &flt), JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_non_null(c);
  assert_string_equal(c->uuid, a);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_null(c);
  jb_history_close(it);
  /* Its flags are the argument's: a version 2 struct is refused, so that
   * no flags field is silently ignored. */
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  assert_int_equal(jb_history_open_filtered(&it, f->board, 0, &o),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "version 2");
}

static void board_stats_takes_out_last(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  jb_stats st = JB_STATS_INIT;
  assert_int_equal(jb_board_stats(f->board, &st), JB_OK);
  assert_int_equal(st.jobs, 1);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], 1);
  jb_stats_clear(&st);
}

static atomic_int events_seen; /* raised by the subscription's thread */
static void count_event(const jb_event *e, void *payload) {
  (void)e;
  (void)payload;
  events_seen++;
}

static void event_fn_is_event_cb(void **state) {
  jbt_fixture *f = *state;
  jb_event_fn fn = count_event;
  jb_subscription *sub = NULL;
  events_seen = 0;
  assert_int_equal(jb_subscribe(&sub, f->board, JB_LOG_NOW, JB_EVENTS_ALL, fn, NULL),
                   JB_OK);
  char u[JB_UUID_STRLEN];
  post(f, u, "a");
  for (int i = 0; i < 200 && events_seen == 0; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  assert_true(events_seen >= 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
      T(job_claim_claims),
      T(job_claim_ex_takes_opts_and_gives_the_token),
      T(job_claim_next_claims_the_first),
      T(job_claim_next_ex_gives_the_token),
      T(job_claim_next_wait_times_out_then_claims),
      T(job_claim_next_many_claims_several),
      T(job_extend_extends),
      T(job_abandon_gives_back),
      T(job_abandon_ex_checks_the_token),
      T(job_consume_consumes),
      T(job_consume_ex_checks_the_token),
      T(job_consume_result_keeps_outcome_and_result),
      T(job_consume_and_claim_next_does_both),
      T(job_consume_many_consumes_each),
      T(job_trash_trashes),
      T(job_trash_ex_checks_the_token),
      T(job_retry_takes_out_last),
      T(board_flush_cancels_the_unclaimed),
      T(board_cancel_ends_waits),
      T(ecanceled_is_einterrupted),
      T(board_cancel_reset_restores_waits),
      T(history_open_takes_flags),
      T(history_open_filtered_takes_a_version_1_filter),
      T(board_stats_takes_out_last),
      T(event_fn_is_event_cb),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
