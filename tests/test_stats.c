/*
 * test_stats.c - jb_stats_read and the counters the
 * board keeps: post, claims of each kind, consumes with both
 * outcomes, an abandon, a trash; every figure checked.
 */
#include "helpers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static jb_stats read_stats(jb_board *b, unsigned flags) {
  jb_stats st = JB_STATS_INIT;
  st.flags = flags;
  assert_int_equal(jb_stats_read(&st, b), JB_OK);
  return st;
}

static void test_empty(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.jobs, 0);
  for (int i = 0; i < JB_STATS_STATES; i++) assert_int_equal(st.by_state[i], 0);
  assert_int_equal(st.oldest_unclaimed_us, 0);
  assert_int_equal(st.n_names, 0);
  assert_null(st.names);
  for (int i = 0; i < 16; i++) assert_int_equal(st.events_total[i], 0);
  assert_true(st.map_size > 0);
  assert_true(st.page_size >= 512);
  assert_true(st.pages_used >= 2);
  assert_true(st.readers >= 1); /* its own read transaction */
  assert_true(st.readers_max >= st.readers);
  jb_stats_clear(&st);
  /* A version it does not know, unknown flags. */
  jb_stats bad = JB_STATS_INIT;
  bad.version = 99;
  assert_int_equal(jb_stats_read(&bad, f->board), JB_EINVAL);
  bad = (jb_stats)JB_STATS_INIT;
  bad.flags = 0x80;
  assert_int_equal(jb_stats_read(&bad, f->board), JB_EINVAL);
  assert_int_equal(jb_stats_read(&bad, NULL), JB_EINVAL);
}

static void test_figures(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u[8][JB_UUID_STRLEN];
  jbt_post(u[0], b, "alpha", JB_PRIORITY_HIGH);
  jbt_post(u[1], b, "alpha", JB_PRIORITY_NORMAL);
  jbt_post(u[2], b, "beta", JB_PRIORITY_NORMAL);
  jbt_post(u[3], b, "beta", JB_PRIORITY_LOW);
  jbt_post(u[4], b, "gamma", JB_PRIORITY_LOW);
  jbt_post(u[5], b, "gamma", JB_PRIORITY_VERY_LOW);
  jbt_post(u[6], b, "delta", JB_PRIORITY_VERY_LOW);
  /* A delayed job. */
  jb_post p = JB_POST_INIT;
  p.name = "later";
  p.not_before_us = now_us() + 3600 * INT64_C(1000000);
  assert_int_equal(jb_job_post(u[7], b, &p), JB_OK);

  /* Claims: plain, leased, bound, and a lease that has lapsed. */
  uint64_t tok;
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 60000;
  jb_claim_options bind = JB_CLAIM_OPTIONS_INIT;
  bind.flags = JB_CLAIM_BIND_PROCESS;
  jb_claim_options short_lease = JB_CLAIM_OPTIONS_INIT;
  short_lease.lease_ms = 1;
  assert_int_equal(jb_claim(NULL, b, u[0], "w-plain", NULL), JB_OK);
  assert_int_equal(jb_claim(&tok, b, u[1], "w-lease", &lease), JB_OK);
  assert_int_equal(jb_claim(&tok, b, u[2], "w-bound", &bind), JB_OK);
  assert_int_equal(jb_claim(&tok, b, u[3], "w-short", &short_lease),
                   JB_OK);
  usleep(20000);

  jb_stats st = read_stats(b, JB_STATS_BY_NAME);
  assert_int_equal(st.jobs, 8);
  /* The lapsed lease's job is unclaimed, as list and count say. */
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], 4);
  assert_int_equal(st.by_state[JB_STATS_CLAIMED], 3);
  assert_int_equal(st.by_state[JB_STATS_DELAYED], 1);
  size_t counted = 0;
  assert_int_equal(jb_board_count(&counted, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], counted);
  assert_int_equal(st.delayed_due, 0);
  assert_int_equal(st.by_priority[JB_PRIORITY_HIGH][JB_STATS_CLAIMED], 1);
  assert_int_equal(st.by_priority[JB_PRIORITY_NORMAL][JB_STATS_CLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_LOW][JB_STATS_CLAIMED], 0);
  assert_int_equal(st.by_priority[JB_PRIORITY_LOW][JB_STATS_UNCLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_VERY_LOW][JB_STATS_UNCLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_NORMAL][JB_STATS_DELAYED], 1);
  assert_int_equal(st.claims_plain, 1);
  assert_int_equal(st.claims_leased, 1); /* held claims only */
  assert_int_equal(st.claims_bound, 1);
  assert_int_equal(st.lapsing_lease, 1);
  assert_int_equal(st.lapsing_holder, 0);
  assert_true(st.oldest_unclaimed_us > 0);
  assert_true(st.oldest_unclaimed_us <= st.now_us);
  assert_int_equal(st.events_total[JB_EVENT_POSTED], 8);
  assert_int_equal(st.events_total[JB_EVENT_CLAIMED], 4);
  assert_int_equal(st.log_first, 1);
  assert_int_equal(st.log_next, 13); /* 8 posts, 4 claims */
  /* By name, in byte order. */
  assert_int_equal(st.n_names, 5);
  const char *names[5] = {"alpha", "beta", "delta", "gamma", "later"};
  size_t want[5][3] = {{0, 2, 0}, {1, 1, 0}, {1, 0, 0}, {2, 0, 0}, {0, 0, 1}};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(st.names[i].name, names[i]);
    for (int s = 0; s < 3; s++)
      assert_int_equal(st.names[i].jobs[s], want[i][s]);
  }
  jb_stats_clear(&st);
  assert_null(st.names);

  /* Consume with both outcomes, abandon, trash. */
  assert_int_equal(jb_consume(b, u[0], "w-plain", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(b, u[1], "w-lease", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, NULL, 0}),
                   JB_OK);
  assert_int_equal(jb_abandon(b, u[2], "w-bound", 0), JB_OK);
  assert_int_equal(jb_claim(NULL, b, u[4], "w-trash", NULL), JB_OK);
  assert_int_equal(jb_trash(b, u[4], "w-trash", 0), JB_OK);

  st = read_stats(b, 0);
  assert_int_equal(st.jobs, 5);
  assert_int_equal(st.n_names, 0);
  assert_int_equal(st.events_total[JB_EVENT_CLAIMED], 5);
  assert_int_equal(st.events_total[JB_EVENT_CONSUMED], 2);
  assert_int_equal(st.events_total[JB_EVENT_ABANDONED], 1);
  assert_int_equal(st.events_total[JB_EVENT_TRASHED], 1);
  assert_int_equal(st.ends_total[JB_END_CONSUMED], 1);
  assert_int_equal(st.ends_total[JB_END_FAILED], 1);
  assert_int_equal(st.ends_total[JB_END_TRASHED], 1);
  assert_int_equal(st.completed_1m[JB_END_CONSUMED], 1);
  assert_int_equal(st.completed_1m[JB_END_FAILED], 1);
  assert_int_equal(st.completed_1h[JB_END_TRASHED], 1);
  assert_int_equal(st.history, 3);
  assert_int_equal(st.dead_letters, 1); /* the trashed job */
  assert_int_equal(st.claims_plain, 0);
  assert_int_equal(st.claims_leased, 0);
  assert_int_equal(st.claims_bound, 0);
  assert_int_equal(st.lapsing_lease, 1);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], 4);
  assert_int_equal(jb_board_count(&counted, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], counted);
  jb_stats_clear(&st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_empty, jbt_setup, jbt_teardown),
      cmocka_unit_test_setup_teardown(test_figures, jbt_setup, jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
