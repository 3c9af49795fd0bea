/*
 * test_options.c - the options pointers of the one-call-per-action API:
 * NULL means every default, each structure's version is checked, a
 * version 1 structure (0.1's, shorter) is still read as far as it goes,
 * and the fields that replaced whole functions (a claim's wait_ms, a
 * consume's outcome and result, a history query's flags) do what those
 * functions did.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ----------------------------------------------------------------- claims */

static void claim_refuses_a_wait(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = 100;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "wait_ms");
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
}

static void claim_options_of_an_unknown_version_are_refused(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.version = JB_CLAIM_OPTIONS_VERSION + 1;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "version 4");
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", &o),
                   JB_EINVAL);
}

static void claim_options_of_version_1_end_before_wait_ms(void **state) {
  jbt_fixture *f = *state;
  /* 0.1's structure stops after lease_ms: whatever follows it in memory
   * is not read as a wait. */
  struct {
    jb_claim_options o;
  } big;
  memset(&big, 0x7f, sizeof big);
  big.o.version = 1;
  big.o.flags = 0;
  big.o.lease_ms = 0;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", &big.o),
                   JB_ENOTFOUND);
  assert_true(jbt_now_ms() - t0 < 1000);
}

static void claim_next_without_a_wait_finds_nothing_at_once(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL),
                   JB_ENOTFOUND);
}

static void claim_next_waits_up_to_wait_ms(void **state) {
  jbt_fixture *f = *state;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = 150;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", &o),
                   JB_ETIMEDOUT);
  assert_true(jbt_now_ms() - t0 >= 140);
}

typedef struct {
  jb_board *board;
  char uuid[JB_UUID_STRLEN];
  int delay_ms;
} poster;

static void *post_later(void *arg) {
  poster *p = arg;
  sleep_ms(p->delay_ms);
  jbt_post(p->uuid, p->board, "late", JB_PRIORITY_NORMAL);
  return NULL;
}

static void claim_next_waiting_claims_a_job_posted_meanwhile(void **state) {
  jbt_fixture *f = *state;
  poster p = {f->board, "", 100};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, post_later, &p), 0);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = JB_WAIT_FOREVER;
  char got[JB_UUID_STRLEN];
  uint64_t token = 0;
  assert_int_equal(jb_claim_next(got, NULL, &token, f->board, "w", &o),
                   JB_OK);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_string_equal(got, p.uuid);
  assert_true(token > 0);
}

static void *interrupt_later(void *arg) {
  sleep_ms(100);
  jb_board_interrupt(arg);
  return NULL;
}

static void claim_next_waiting_forever_ends_on_interrupt(void **state) {
  jbt_fixture *f = *state;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, interrupt_later, f->board), 0);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = JB_WAIT_FOREVER;
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", &o),
                   JB_EINTERRUPTED);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(jb_board_interrupt_reset(f->board), JB_OK);
}

static void claim_next_many_without_a_wait_finds_nothing(void **state) {
  jbt_fixture *f = *state;
  size_t n = 7;
  char u[4][JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next_many(&n, u, NULL, NULL, f->board, "w", NULL,
                                      4),
                   JB_ENOTFOUND);
  assert_int_equal(n, 0);
}

static void claim_next_many_waits_then_claims_what_there_is(void **state) {
  jbt_fixture *f = *state;
  poster p = {f->board, "", 100};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, post_later, &p), 0);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = 5000;
  size_t n = 0;
  char u[4][JB_UUID_STRLEN];
  uint64_t tokens[4];
  assert_int_equal(jb_claim_next_many(&n, u, tokens, NULL, f->board, "w", &o,
                                      4),
                   JB_OK);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(n, 1);
  assert_string_equal(u[0], p.uuid);
}

static void claim_next_many_waiting_times_out(void **state) {
  jbt_fixture *f = *state;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.wait_ms = 100;
  size_t n = 7;
  assert_int_equal(jb_claim_next_many(&n, NULL, NULL, NULL, f->board, "w",
                                      &o, 4),
                   JB_ETIMEDOUT);
  assert_int_equal(n, 0);
}

/* ---------------------------------------------------------------- consume */

static void consume_with_null_options_succeeds_without_a_result(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_false(c->has_result);
  jb_completion_free(c);
}

static void consume_options_of_an_unknown_version_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
  jb_consume_options o = JB_CONSUME_OPTIONS_INIT;
  o.version = 2;
  assert_int_equal(jb_consume(f->board, u, "w", 0, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "consume options: version 2");
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_CLAIMED);
  /* consume-and-claim-next checks them the same way. */
  assert_int_equal(jb_consume_and_claim_next(NULL, NULL, NULL, f->board, u,
                                             "w", 0, &o, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_CLAIMED);
}

static void consume_options_carry_the_outcome_and_result(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, f->board, u, "w", NULL), JB_OK);
  static const unsigned char map[] = {0x80};
  jb_consume_options o = JB_CONSUME_OPTIONS_INIT;
  o.outcome = JB_OUTCOME_FAILURE;
  o.result = map;
  o.result_len = sizeof map;
  assert_int_equal(jb_consume(f->board, u, "w", t, &o), JB_OK);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_true(c->has_result);
  jb_completion_free(c);
}

/* ---------------------------------------------------------------- history */

static void history_query_takes_its_order_from_the_flags(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  jbt_post(a, f->board, "a", JB_PRIORITY_NORMAL);
  jbt_post(b, f->board, "b", JB_PRIORITY_NORMAL);
  for (int i = 0; i < 2; i++) {
    const char *u = i ? b : a;
    assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
    assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  }
  jb_history_iter *it = NULL;
  const jb_completion *c = NULL;
  assert_int_equal(jb_history_query(&it, f->board, NULL), JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_string_equal(c->uuid, b); /* NULL: newest first */
  jb_history_close(it);
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  o.flags = JB_HISTORY_OLDEST_FIRST;
  assert_int_equal(jb_history_query(&it, f->board, &o), JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_string_equal(c->uuid, a);
  jb_history_close(it);
}

static void history_query_reads_a_version_1_structure_without_flags(
    void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  jbt_post(a, f->board, "a", JB_PRIORITY_NORMAL);
  jbt_post(b, f->board, "b", JB_PRIORITY_NORMAL);
  for (int i = 0; i < 2; i++) {
    const char *u = i ? b : a;
    assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_OK);
    assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  }
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  o.version = 1;
  o.flags = 0x7f; /* past a version 1 structure's end: not read */
  jb_history_iter *it = NULL;
  const jb_completion *c = NULL;
  assert_int_equal(jb_history_query(&it, f->board, &o), JB_OK);
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_string_equal(c->uuid, b);
  jb_history_close(it);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
      T(claim_refuses_a_wait),
      T(claim_options_of_an_unknown_version_are_refused),
      T(claim_options_of_version_1_end_before_wait_ms),
      T(claim_next_without_a_wait_finds_nothing_at_once),
      T(claim_next_waits_up_to_wait_ms),
      T(claim_next_waiting_claims_a_job_posted_meanwhile),
      T(claim_next_waiting_forever_ends_on_interrupt),
      T(claim_next_many_without_a_wait_finds_nothing),
      T(claim_next_many_waits_then_claims_what_there_is),
      T(claim_next_many_waiting_times_out),
      T(consume_with_null_options_succeeds_without_a_result),
      T(consume_options_of_an_unknown_version_change_nothing),
      T(consume_options_carry_the_outcome_and_result),
      T(history_query_takes_its_order_from_the_flags),
      T(history_query_reads_a_version_1_structure_without_flags),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
