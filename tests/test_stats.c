/*
 * test_stats.c - jb_stats_read and the counters the
 * board keeps: post, claims of each kind, consumes with both
 * outcomes, an abandon, a trash; every figure checked, each group of
 * figures in its own test.
 */
#include "helpers.h"

#include <lmdb.h>
#include <stdlib.h>
#include <string.h>

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

static void stats_of_an_empty_board_count_nothing(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.jobs, 0);
  for (int i = 0; i < JB_STATS_STATES; i++) assert_int_equal(st.by_state[i], 0);
  assert_int_equal(st.oldest_unclaimed_us, 0);
  assert_int_equal(st.n_names, 0);
  assert_null(st.names);
  for (int i = 0; i < 16; i++) assert_int_equal(st.events_total[i], 0);
  jb_stats_clear(&st);
}

static void stats_report_the_map_its_pages_and_readers(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_true(st.map_size > 0);
  assert_true(st.page_size >= 512);
  assert_true(st.pages_used >= 2);
  assert_true(st.readers >= 1); /* its own read transaction */
  assert_true(st.readers_max >= st.readers);
  jb_stats_clear(&st);
}

static void stats_read_of_an_unknown_version_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_stats bad = JB_STATS_INIT;
  bad.version = 99;
  assert_int_equal(jb_stats_read(&bad, f->board), JB_EINVAL);
}

static void stats_read_with_unknown_flags_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_stats bad = JB_STATS_INIT;
  bad.flags = 0x80;
  assert_int_equal(jb_stats_read(&bad, f->board), JB_EINVAL);
}

/* With a jb_stats that is good in itself: the board alone is wrong. */
static void stats_read_without_a_board_is_invalid(void **state) {
  (void)state;
  jb_stats st = JB_STATS_INIT;
  assert_int_equal(jb_stats_read(&st, NULL), JB_EINVAL);
}

/* The board of the figures tests: eight jobs of five names and every
 * priority, one of them delayed an hour; four claims, one of each kind:
 * plain (u[0]), leased (u[1]), bound to this process (u[2]), and a lease
 * of 1 ms that has lapsed (u[3]). */
static void post_and_claim_every_way(jb_board *b, char u[8][JB_UUID_STRLEN]) {
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
}

/* The lapsed lease's job is unclaimed, as list and count say. */
static void stats_count_jobs_by_state(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.jobs, 8);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], 4);
  assert_int_equal(st.by_state[JB_STATS_CLAIMED], 3);
  assert_int_equal(st.by_state[JB_STATS_DELAYED], 1);
  size_t counted = 0;
  assert_int_equal(jb_board_count(&counted, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], counted);
  assert_int_equal(st.delayed_due, 0);
  jb_stats_clear(&st);
}

static void stats_count_jobs_by_priority_and_state(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.by_priority[JB_PRIORITY_HIGH][JB_STATS_CLAIMED], 1);
  assert_int_equal(st.by_priority[JB_PRIORITY_NORMAL][JB_STATS_CLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_LOW][JB_STATS_CLAIMED], 0);
  assert_int_equal(st.by_priority[JB_PRIORITY_LOW][JB_STATS_UNCLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_VERY_LOW][JB_STATS_UNCLAIMED], 2);
  assert_int_equal(st.by_priority[JB_PRIORITY_NORMAL][JB_STATS_DELAYED], 1);
  jb_stats_clear(&st);
}

/* Held claims only: the lapsed lease is none of them, but still lapsing
 * until a write takes it. */
static void stats_count_held_claims_by_kind(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.claims_plain, 1);
  assert_int_equal(st.claims_leased, 1); /* held claims only */
  assert_int_equal(st.claims_bound, 1);
  assert_int_equal(st.lapsing_lease, 1);
  assert_int_equal(st.lapsing_holder, 0);
  jb_stats_clear(&st);
}

static void stats_give_the_age_of_the_oldest_unclaimed_job(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_true(st.oldest_unclaimed_us > 0);
  assert_true(st.oldest_unclaimed_us <= st.now_us);
  jb_stats_clear(&st);
}

static void stats_count_the_change_log_events_by_type(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.events_total[JB_EVENT_POSTED], 8);
  assert_int_equal(st.events_total[JB_EVENT_CLAIMED], 4);
  assert_int_equal(st.log_first, 1);
  assert_int_equal(st.log_next, 13); /* 8 posts, 4 claims */
  jb_stats_clear(&st);
}

/* Move the counters' record between LMDB's main tree and `meta` (raw
 * LMDB, the board closed): to meta as a board of the layout before; back
 * only to look. Returns 0, or LMDB's code. *where: 1 in main, 2 in meta,
 * 3 both, 0 neither. */
static int counters_where(const char *dir, bool to_meta, int *where) {
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi main, meta;
  int rc = mdb_env_create(&env);
  if (rc) return rc;
  mdb_env_set_maxdbs(env, 32);
  if ((rc = mdb_env_open(env, dir, 0, 0660)) ||
      (rc = mdb_txn_begin(env, NULL, 0, &txn))) {
    mdb_env_close(env);
    return rc;
  }
  MDB_val km = {17, "jobboard.counters"}, kt = {8, "counters"}, v;
  if ((rc = mdb_dbi_open(txn, NULL, 0, &main)) == 0 &&
      (rc = mdb_dbi_open(txn, "meta", 0, &meta)) == 0) {
    *where = (mdb_get(txn, main, &km, &v) == 0 ? 1 : 0) |
             (mdb_get(txn, meta, &kt, &v) == 0 ? 2 : 0);
    if (to_meta && *where == 1 && (rc = mdb_get(txn, main, &km, &v)) == 0) {
      uint8_t copy[512];
      memcpy(copy, v.mv_data, v.mv_size < sizeof copy ? v.mv_size : sizeof copy);
      MDB_val c = {v.mv_size, copy};
      if ((rc = mdb_put(txn, meta, &kt, &c, 0)) == 0)
        rc = mdb_del(txn, main, &km, NULL);
    }
  }
  if (rc == 0) rc = mdb_txn_commit(txn);
  else mdb_txn_abort(txn);
  mdb_env_close(env);
  return rc;
}

/* The counters are a record of the main tree (no page of their own per
 * commit); a board that kept them in meta is read there and moved, whole,
 * by its next count. */
static void stats_counters_move_out_of_meta(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = jbt_open(dir, JB_DURABILITY_NONE, 0);
  jbt_post(NULL, b, "a", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "b", JB_PRIORITY_NORMAL);
  jb_board_close(b);
  int where = -1;
  assert_int_equal(counters_where(dir, true, &where), 0);
  assert_int_equal(where, 1); /* in main, now moved to meta */
  assert_int_equal(counters_where(dir, false, &where), 0);
  assert_int_equal(where, 2);
  b = jbt_open(dir, JB_DURABILITY_NONE, 0);
  jb_stats st = read_stats(b, 0);
  assert_int_equal(st.events_total[JB_EVENT_POSTED], 2); /* read in meta */
  jb_stats_clear(&st);
  jbt_post(NULL, b, "c", JB_PRIORITY_NORMAL);
  st = read_stats(b, 0);
  assert_int_equal(st.events_total[JB_EVENT_POSTED], 3);
  jb_stats_clear(&st);
  jbt_assert_check_ok(b);
  jb_board_close(b);
  assert_int_equal(counters_where(dir, false, &where), 0);
  assert_int_equal(where, 1); /* moved by the count, none left in meta */
  jbt_rmtree(dir);
  free(dir);
}

/* In byte order, each with its jobs unclaimed, claimed and delayed. */
static void stats_by_name_count_each_names_jobs_by_state(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  assert_int_equal(st.n_names, 5);
  const char *names[5] = {"alpha", "beta", "delta", "gamma", "later"};
  size_t want[5][3] = {{0, 2, 0}, {1, 1, 0}, {1, 0, 0}, {2, 0, 0}, {0, 0, 1}};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(st.names[i].name, names[i]);
    for (int s = 0; s < 3; s++)
      assert_int_equal(st.names[i].jobs[s], want[i][s]);
  }
  jb_stats_clear(&st);
}

static void stats_clear_frees_the_names(void **state) {
  jbt_fixture *f = *state;
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(f->board, u);
  jb_stats st = read_stats(f->board, JB_STATS_BY_NAME);
  jb_stats_clear(&st);
  assert_null(st.names);
}

/* The board above, then: u[0] consumed, u[1] consumed with a failed
 * outcome, u[2] abandoned, u[4] claimed and trashed. Its figures without
 * names. */
static jb_stats end_jobs_every_way(jb_board *b) {
  char u[8][JB_UUID_STRLEN];
  post_and_claim_every_way(b, u);
  assert_int_equal(jb_consume(b, u[0], "w-plain", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(b, u[1], "w-lease", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, NULL, 0}),
                   JB_OK);
  assert_int_equal(jb_abandon(b, u[2], "w-bound", 0), JB_OK);
  assert_int_equal(jb_claim(NULL, b, u[4], "w-trash", NULL), JB_OK);
  assert_int_equal(jb_trash(b, u[4], "w-trash", 0), JB_OK);
  return read_stats(b, 0);
}

static void stats_without_by_name_list_no_names(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = end_jobs_every_way(f->board);
  assert_int_equal(st.jobs, 5);
  assert_int_equal(st.n_names, 0);
  jb_stats_clear(&st);
}

static void stats_count_every_change_log_event_of_the_ends(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = end_jobs_every_way(f->board);
  assert_int_equal(st.events_total[JB_EVENT_CLAIMED], 5);
  assert_int_equal(st.events_total[JB_EVENT_CONSUMED], 2);
  assert_int_equal(st.events_total[JB_EVENT_ABANDONED], 1);
  assert_int_equal(st.events_total[JB_EVENT_TRASHED], 1);
  jb_stats_clear(&st);
}

static void stats_count_ends_by_kind_in_all_and_recently(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = end_jobs_every_way(f->board);
  assert_int_equal(st.ends_total[JB_END_CONSUMED], 1);
  assert_int_equal(st.ends_total[JB_END_FAILED], 1);
  assert_int_equal(st.ends_total[JB_END_TRASHED], 1);
  assert_int_equal(st.completed_1m[JB_END_CONSUMED], 1);
  assert_int_equal(st.completed_1m[JB_END_FAILED], 1);
  assert_int_equal(st.completed_1h[JB_END_TRASHED], 1);
  jb_stats_clear(&st);
}

static void stats_count_the_history_and_the_dead_letters(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = end_jobs_every_way(f->board);
  assert_int_equal(st.history, 3);
  assert_int_equal(st.dead_letters, 1); /* the trashed job */
  jb_stats_clear(&st);
}

/* The ended and abandoned claims are held no more; the lapsed lease
 * still counts as lapsing, and as unclaimed, as count says. */
static void stats_count_no_claims_once_they_end(void **state) {
  jbt_fixture *f = *state;
  jb_stats st = end_jobs_every_way(f->board);
  assert_int_equal(st.claims_plain, 0);
  assert_int_equal(st.claims_leased, 0);
  assert_int_equal(st.claims_bound, 0);
  assert_int_equal(st.lapsing_lease, 1);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], 4);
  size_t counted = 0;
  assert_int_equal(jb_board_count(&counted, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(st.by_state[JB_STATS_UNCLAIMED], counted);
  jb_stats_clear(&st);
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(stats_of_an_empty_board_count_nothing),
      T(stats_report_the_map_its_pages_and_readers),
      T(stats_read_of_an_unknown_version_is_invalid),
      T(stats_read_with_unknown_flags_is_invalid),
      T(stats_read_without_a_board_is_invalid),
      T(stats_count_jobs_by_state),
      T(stats_count_jobs_by_priority_and_state),
      T(stats_count_held_claims_by_kind),
      T(stats_give_the_age_of_the_oldest_unclaimed_job),
      T(stats_count_the_change_log_events_by_type),
      T(stats_by_name_count_each_names_jobs_by_state),
      T(stats_clear_frees_the_names),
      T(stats_without_by_name_list_no_names),
      T(stats_count_every_change_log_event_of_the_ends),
      T(stats_count_ends_by_kind_in_all_and_recently),
      T(stats_count_the_history_and_the_dead_letters),
      T(stats_count_no_claims_once_they_end),
      cmocka_unit_test(stats_counters_move_out_of_meta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
