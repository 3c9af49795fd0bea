/*
 * test_watch.c - the change log as readers see it: every operation's event
 * in commit order, read from a cursor, waited for, and delivered to
 * subscriptions; trimming by size and by age, reported to a reader that
 * fell behind it instead of skipped; bad cursors and arguments refused.
 *
 * The multi-process test forks workers that post, claim, abandon, consume
 * and trash while a watcher process follows the log with jb_log_wait;
 * every worker writes what it did, in order, to its own file, and the
 * parent checks that the watcher saw each of those operations exactly
 * once, in each worker's program order, with contiguous sequences.
 */
#include "helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T(fn) cmocka_unit_test_setup_teardown(fn, jbt_setup, jbt_teardown)

/* ------------------------------------------------------------- helpers */

/* Open the fixture's board again with change-log bounds (the fixture's
 * handle is closed first: bounds belong to the process's store). */
static jb_board *reopen_bounded(jbt_fixture *f, uint64_t keep,
                                int64_t max_age_ms) {
  jb_board_close(f->board);
  f->board = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.log_keep = keep;
  o.log_max_age_ms = max_age_ms;
  int rc = jb_board_open(&f->board, f->dir, &o);
  if (rc != JB_OK) fail_msg("reopen: %s", jb_errmsg());
  return f->board;
}

static uint64_t next_seq(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

static uint64_t first_seq(jb_board *b) {
  uint64_t first = 0;
  assert_int_equal(jb_log_bounds(&first, NULL, b), JB_OK);
  return first;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A callback for subscriptions that must never start. */
static void never(const jb_event *e, void *payload) {
  (void)e;
  (void)payload;
  abort();
}

enum { EVERY_OPERATIONS_EVENTS = 10 };

/* Two jobs, a (HIGH) and c (LOW), through every operation: a claimed,
 * abandoned, claimed again, extended and consumed; c claimed and
 * trashed; then a third job posted: EVERY_OPERATIONS_EVENTS events.
 * Returns where the log stood before. */
static uint64_t do_every_operation(jb_board *b, char a[JB_UUID_STRLEN],
                                   char c[JB_UUID_STRLEN]) {
  uint64_t from = next_seq(b);
  jbt_post(a, b, "a", JB_PRIORITY_HIGH);
  jbt_post(c, b, "c", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim(NULL, b, a, "w1", NULL), JB_OK);
  assert_int_equal(jb_abandon(b, a, "w1", 0), JB_OK);
  assert_int_equal(jb_claim(NULL, b, a, "w2", NULL), JB_OK);
  assert_int_equal(jb_extend(b, a, "w2", 0, 60000), JB_OK);
  assert_int_equal(jb_consume(b, a, "w2", 0, NULL), JB_OK);
  assert_int_equal(jb_claim(NULL, b, c, "w3", NULL), JB_OK);
  assert_int_equal(jb_trash(b, c, "w3", 0), JB_OK);
  /* A refused claim changes nothing: no event. */
  jbt_post(NULL, b, "d", JB_PRIORITY_NORMAL);
  return from;
}

static void every_operation_is_read_back_in_order(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  uint64_t from = do_every_operation(b, a, c);
  struct {
    jb_event_type type;
    const char *uuid, *owner;
  } want[] = {
      {JB_EVENT_POSTED, a, ""},     {JB_EVENT_POSTED, c, ""},
      {JB_EVENT_CLAIMED, a, "w1"},  {JB_EVENT_ABANDONED, a, "w1"},
      {JB_EVENT_CLAIMED, a, "w2"},  {JB_EVENT_EXTENDED, a, "w2"},
      {JB_EVENT_CONSUMED, a, "w2"}, {JB_EVENT_CLAIMED, c, "w3"},
      {JB_EVENT_TRASHED, c, "w3"},  {JB_EVENT_POSTED, NULL, ""},
  };
  size_t nwant = sizeof want / sizeof want[0];
  jb_event ev[16];
  size_t n = 99;
  uint64_t first = 0;
  assert_int_equal(jb_log_read(ev, &n, &first, b, from, 16), JB_OK);
  assert_int_equal(n, nwant);
  assert_int_equal(first, 1);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(ev[i].seq, from + i);
    assert_int_equal(ev[i].type, want[i].type);
    if (want[i].uuid) assert_string_equal(ev[i].uuid, want[i].uuid);
    assert_string_equal(ev[i].owner, want[i].owner);
    assert_int_equal(ev[i].lost, 0);
    assert_true(ev[i].time_us > 1600000000LL * 1000000);
    if (i) assert_true(ev[i].time_us >= ev[i - 1].time_us);
  }
}

static void events_carry_the_jobs_sequence_and_priority(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  uint64_t from = do_every_operation(b, a, c);
  jb_event ev[16];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, from, 16), JB_OK);
  assert_int_equal(ev[0].job_seq, from);
  assert_int_equal(ev[0].priority, JB_PRIORITY_HIGH);
  assert_int_equal(ev[2].job_seq, from);
  assert_int_equal(ev[1].priority, JB_PRIORITY_LOW);
  assert_int_equal(ev[8].job_seq, from + 1);
}

/* A smaller batch, then the rest from the cursor. */
static void the_log_reads_on_from_a_cursor(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  uint64_t from = do_every_operation(b, a, c);
  jb_event ev[16];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, from, 3), JB_OK);
  assert_int_equal(n, 3);
  assert_int_equal(jb_log_read(ev, &n, NULL, b, from + 3, 16), JB_OK);
  assert_int_equal(n, EVERY_OPERATIONS_EVENTS - 3);
  assert_int_equal(ev[0].type, JB_EVENT_ABANDONED);
}

static void a_new_boards_log_is_empty_and_starts_at_1(void **state) {
  jbt_fixture *f = *state;
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, f->board), JB_OK);
  assert_int_equal(first, 1);
  assert_int_equal(next, 1);
}

static void reading_from_now_finds_nothing_until_a_write(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, next, 4), JB_OK);
  assert_int_equal(n, 0);
  jbt_post(NULL, b, "x", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  assert_int_equal(first, 1);
  assert_int_equal(next, 2);
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 1, 4), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 2, 4), JB_OK);
  assert_int_equal(n, 0);
}

static void a_log_wait_from_now_times_out_when_nothing_is_written(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jbt_post(NULL, b, "x", JB_PRIORITY_NORMAL);
  jb_event ev[4];
  size_t n = 99;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_log_wait(ev, &n, NULL, b, 2, 4, 50), JB_ETIMEDOUT);
  assert_int_equal(n, 0);
  assert_true(jbt_now_ms() - t0 >= 45);
}

static void a_log_wait_returns_at_once_when_there_is_something(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jbt_post(NULL, b, "x", JB_PRIORITY_NORMAL);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_wait(ev, &n, NULL, b, 1, 4, 5000), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
}


/* The fixture's board with two events: the next sequence, 3, is "now". */
static jb_board *board_with_two_events(jbt_fixture *f) {
  jbt_post(NULL, f->board, "x", JB_PRIORITY_NORMAL);
  jbt_post(NULL, f->board, "y", JB_PRIORITY_NORMAL);
  return f->board;
}

static void log_read_from_sequence_0_is_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 0, 4), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "sequence 0");
  assert_int_equal(n, 0);
}

/* 4 is beyond the end, and so is the largest sequence. */
static void a_cursor_beyond_the_end_is_refused_naming_the_next_event(
    void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 4, 4), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "sequence 4 is beyond its end");
  jbt_assert_contains(jb_errmsg(), "next event will be 3");
  assert_int_equal(jb_log_wait(ev, &n, NULL, b, 4, 4, 10), JB_EINVAL);
  assert_int_equal(jb_log_read(ev, &n, NULL, b, UINT64_MAX, 4), JB_EINVAL);
}

static void log_read_and_wait_without_an_argument_are_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_read(NULL, &n, NULL, b, 1, 4), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "NULL");
  assert_int_equal(jb_log_read(ev, NULL, NULL, b, 1, 4), JB_EINVAL);
  assert_int_equal(jb_log_read(ev, &n, NULL, NULL, 1, 4), JB_EINVAL);
  assert_int_equal(jb_log_wait(NULL, &n, NULL, b, 1, 4, 0), JB_EINVAL);
}

static void log_read_of_at_most_0_events_is_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_event ev[4];
  size_t n = 99;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 1, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "max is 0");
}

static void log_bounds_without_a_board_is_invalid(void **state) {
  (void)state;
  assert_int_equal(jb_log_bounds(NULL, NULL, NULL), JB_EINVAL);
}

static void both_log_bounds_are_optional(void **state) {
  jb_board *b = board_with_two_events(*state);
  assert_int_equal(jb_log_bounds(NULL, NULL, b), JB_OK);
}

static void subscribe_from_sequence_0_is_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_subscription *sub = (jb_subscription *)1;
  assert_int_equal(jb_subscribe(&sub, b, 0, JB_EVENTS_ALL,
                                never, NULL),
                   JB_EINVAL);
  assert_null(sub);
  jbt_assert_contains(jb_errmsg(), "sequence 0");
}

static void subscribe_beyond_the_end_is_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_subscription *sub = (jb_subscription *)1;
  assert_int_equal(jb_subscribe(&sub, b, 4, JB_EVENTS_ALL,
                                never, NULL),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "beyond its end");
}

static void subscribe_to_no_event_type_is_invalid(void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_subscription *sub = (jb_subscription *)1;
  assert_int_equal(jb_subscribe(&sub, b, 1, 0,
                                never, NULL),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "names no event type");
  assert_int_equal(jb_subscribe(&sub, b, 1, JB_EVENT_BIT(0),
                                never, NULL),
                   JB_EINVAL);
}

static void subscribe_without_a_callback_board_or_out_is_invalid(
    void **state) {
  jb_board *b = board_with_two_events(*state);
  jb_subscription *sub = (jb_subscription *)1;
  assert_int_equal(jb_subscribe(&sub, b, 1, JB_EVENTS_ALL, NULL, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_subscribe(&sub, NULL, 1, JB_EVENTS_ALL,
                                never, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_subscribe(NULL, b, 1, JB_EVENTS_ALL,
                                never, NULL),
                   JB_EINVAL);
}

static void unsubscribe_of_null_is_harmless(void **state) {
  (void)state;
  assert_int_equal(jb_unsubscribe(NULL), JB_OK);
}

/* Refused at open. */
static void a_negative_log_max_age_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.log_max_age_ms = -1;
  jb_board *other = (jb_board *)1;
  assert_int_equal(jb_board_open(&other, f->dir, &o), JB_EINVAL);
  assert_null(other);
  jbt_assert_contains(jb_errmsg(), "log_max_age_ms -1");
}

static void strerror_of_trimmed_says_the_log_was_trimmed(void **state) {
  (void)state;
  assert_string_equal(jb_strerror(JB_ETRIMMED),
                      "JB_ETRIMMED: change log trimmed past the sequence");
}

static void event_type_names_are_the_upper_case_type(void **state) {
  (void)state;
  assert_string_equal(jb_event_type_name(JB_EVENT_EXPIRED), "EXPIRED");
  assert_string_equal(jb_event_type_name(JB_EVENT_TRIMMED), "TRIMMED");
  assert_string_equal(jb_event_type_name(JB_EVENT_REVOKED), "REVOKED");
  assert_string_equal(jb_event_type_name(JB_EVENT_LOST), "LOST");
  assert_string_equal(jb_event_type_name(JB_EVENT_CANCELLED), "CANCELLED");
  assert_string_equal(jb_event_type_name(JB_EVENT_DEAD), "DEAD");
  assert_string_equal(jb_event_type_name(JB_EVENT_PROGRESS), "PROGRESS");
  assert_string_equal(jb_event_type_name(JB_EVENT_SNOOZED), "SNOOZED");
  assert_string_equal(jb_event_type_name(JB_EVENT_DEADLINE), "DEADLINE");
}

static void event_type_name_of_a_value_outside_the_enum_is_null(
    void **state) {
  (void)state;
  assert_null(jb_event_type_name((jb_event_type)0));
  assert_null(jb_event_type_name((jb_event_type)16));
}

/* A second handle of the process must ask for the bounds the first has. */
static void log_bounds_are_one_per_process_and_board(void **state) {
  jbt_fixture *f = *state;
  reopen_bounded(f, 10, 60000);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *other = NULL;
  assert_int_equal(jb_board_open(&other, f->dir, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "change-log bounds of 10 events and 60000 ms");
  o.log_keep = 10;
  o.log_max_age_ms = 60000;
  assert_int_equal(jb_board_open(&other, f->dir, &o), JB_OK);
  jb_board_close(other);
}

/* Version 1 options (no bounds) still open a board, and ask for the
 * default bounds: another handle with default options joins it. */
static void version_1_board_options_open_with_the_default_log_bounds(
    void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.version = 1;
  o.durability = JB_DURABILITY_NORMAL;
  o.log_keep = 5; /* not a field of version 1: ignored */
  assert_int_equal(jb_board_open(&f->board, f->dir, &o), JB_OK);
  o = (jb_board_options)JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *other = NULL;
  assert_int_equal(jb_board_open(&other, f->dir, &o), JB_OK);
  jb_board_close(other);
}

/* The fixture's board reopened to keep 10 events, then 200 posts. */
static jb_board *post_200_keeping_10(jbt_fixture *f) {
  jb_board *b = reopen_bounded(f, 10, 0);
  assert_int_equal(next_seq(b), 1);
  for (int i = 0; i < 200; i++) jbt_post(NULL, b, "bulk", JB_PRIORITY_NORMAL);
  return b;
}

/* At least 10 kept, fewer than 10 + 64; trimmed by 64 at a time. */
static void the_size_bound_keeps_its_count_trimming_64_at_a_time(
    void **state) {
  jb_board *b = post_200_keeping_10(*state);
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  assert_int_equal(next, 201);
  assert_true(next - first >= 10);
  assert_true(next - first < 10 + 64);
  assert_int_equal((first - 1) % 64, 0);
}

static void a_reader_behind_the_size_bound_is_told_where_the_log_starts(
    void **state) {
  jb_board *b = post_200_keeping_10(*state);
  uint64_t first = first_seq(b);
  jb_event ev[8];
  size_t n = 99;
  uint64_t start = 0;
  assert_int_equal(jb_log_read(ev, &n, &start, b, 1, 8), JB_ETRIMMED);
  assert_int_equal(n, 0);
  assert_int_equal(start, first);
  char want[128];
  snprintf(want, sizeof want, "the log now starts at %llu",
           (unsigned long long)first);
  jbt_assert_contains(jb_errmsg(), want);
  assert_int_equal(jb_log_wait(ev, &n, &start, b, first - 1, 8, 1000),
                   JB_ETRIMMED);
  assert_int_equal(start, first);
}

/* Refused at once. */
static void subscribing_from_a_trimmed_sequence_is_refused(void **state) {
  jb_board *b = post_200_keeping_10(*state);
  jb_subscription *sub = NULL;
  assert_int_equal(jb_subscribe(&sub, b, 1, JB_EVENTS_ALL,
                                never, NULL),
                   JB_ETRIMMED);
  assert_null(sub);
}

/* Gap accepted. */
static void resuming_where_the_log_starts_reads_on(void **state) {
  jb_board *b = post_200_keeping_10(*state);
  jb_event ev[8];
  size_t n = 99;
  uint64_t start = 0;
  assert_int_equal(jb_log_read(ev, &n, &start, b, 1, 8), JB_ETRIMMED);
  assert_int_equal(jb_log_read(ev, &n, NULL, b, start, 8), JB_OK);
  assert_int_equal(n, 8);
  assert_int_equal(ev[0].seq, first_seq(b));
  jbt_assert_check_ok(b);
}

/* A batch of posts appends one event per job in one write: the write
 * trims as many more, so a producer that only posts in batches cannot
 * grow the log past its bound. */
static void batch_posts_keep_the_log_within_its_bound(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = reopen_bounded(f, 10, 0);
  jb_post posts[500];
  for (int i = 0; i < 500; i++) {
    posts[i] = (jb_post)JB_POST_INIT;
    posts[i].name = "batched";
  }
  static char uuids[500][JB_UUID_STRLEN];
  for (int round = 0; round < 3; round++) {
    assert_int_equal(jb_job_post_batch(uuids, b, posts, 500), JB_OK);
    uint64_t first = 0, next = 0;
    assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
    assert_true(next - first >= 10);
    if (next - first >= 10 + 64)
      fail_msg("round %d: the log holds %llu events, bound 10 + 64", round,
               (unsigned long long)(next - first));
  }
  jbt_assert_check_ok(b);
}

/* A batch of JB_LOGTAIL_MOVE posts or more appends its events to `log`
 * itself, after moving what the tail held there (store/logread.c,
 * jb__log_open_for); smaller writes go on using the tail. Through it all
 * the log reads in order with no gap, each job's POSTED event names it,
 * and check finds nothing wrong. */
static void a_large_batch_after_events_in_the_tail_keeps_the_log_in_order(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  enum { SINGLE = 5, BATCH = 40, TOTAL = 2 * SINGLE + BATCH };
  char uuids[TOTAL][JB_UUID_STRLEN];
  uint64_t start = 0;
  assert_int_equal(jb_log_bounds(NULL, &start, b), JB_OK);
  for (int i = 0; i < SINGLE; i++)
    jbt_post(uuids[i], b, "single", JB_PRIORITY_NORMAL);
  jb_post posts[BATCH];
  for (int i = 0; i < BATCH; i++) {
    posts[i] = (jb_post)JB_POST_INIT;
    posts[i].name = "batched";
  }
  assert_int_equal(jb_job_post_batch(uuids + SINGLE, b, posts, BATCH), JB_OK);
  for (int i = SINGLE + BATCH; i < TOTAL; i++)
    jbt_post(uuids[i], b, "single", JB_PRIORITY_NORMAL);
  jb_event ev[TOTAL + 1];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, start, TOTAL + 1), JB_OK);
  assert_int_equal(n, TOTAL);
  for (int i = 0; i < TOTAL; i++) {
    assert_int_equal(ev[i].seq, start + (uint64_t)i);
    assert_int_equal(ev[i].type, JB_EVENT_POSTED);
    assert_string_equal(ev[i].uuid, uuids[i]);
  }
  jbt_assert_check_ok(b);
}

/* The fixture's board reopened to keep events 200 ms; five posts, then
 * 300 ms later one more, `u`. */
static jb_board *post_old_and_young(jbt_fixture *f, char u[JB_UUID_STRLEN]) {
  jb_board *b = reopen_bounded(f, 0, 200);
  for (int i = 0; i < 5; i++) jbt_post(NULL, b, "old", JB_PRIORITY_NORMAL);
  assert_int_equal(first_seq(b), 1);
  sleep_ms(300);
  jbt_post(u, b, "young", JB_PRIORITY_NORMAL);
  return b;
}

/* The young post's write trims the events older than 200 ms (their slack
 * is 3 ms): all five. */
static void the_age_bound_trims_old_events(void **state) {
  char u[JB_UUID_STRLEN];
  jb_board *b = post_old_and_young(*state, u);
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  assert_int_equal(first, 6);
  assert_int_equal(next, 7);
  jb_event ev[4];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 5, 4), JB_ETRIMMED);
}

/* Everything old: the log keeps its newest event all the same, so the
 * sequence goes on. */
static void the_age_bound_never_trims_the_newest_event(void **state) {
  char u[JB_UUID_STRLEN];
  jb_board *b = post_old_and_young(*state, u);
  sleep_ms(300);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  assert_int_equal(first, 7);
  assert_int_equal(next, 8);
  jb_event ev[4];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, 7, 4), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ev[0].type, JB_EVENT_CLAIMED);
  assert_int_equal(ev[0].job_seq, 6);
  jbt_assert_check_ok(b);
}

/* An age trim takes at most 64 events per write. */
static void the_age_bound_is_batched_per_write(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = reopen_bounded(f, 0, 300);
  jb_post posts[150];
  for (int i = 0; i < 150; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "old";
    posts[i] = p;
  }
  assert_int_equal(jb_job_post_batch(NULL, b, posts, 150), JB_OK);
  assert_int_equal(first_seq(b), 1);
  sleep_ms(400);
  jbt_post(NULL, b, "w1", JB_PRIORITY_NORMAL);
  assert_int_equal(first_seq(b), 65);
  jbt_post(NULL, b, "w2", JB_PRIORITY_NORMAL);
  assert_int_equal(first_seq(b), 129);
  jbt_post(NULL, b, "w3", JB_PRIORITY_NORMAL);
  assert_int_equal(first_seq(b), 151);
}

/* Without an age bound of its own the default (7 days) keeps events
 * older than the bound above. */
static void the_default_age_bound_keeps_events_of_a_moment_ago(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = reopen_bounded(f, 0, 0);
  jbt_post(NULL, b, "old", JB_PRIORITY_NORMAL);
  uint64_t first = first_seq(b);
  sleep_ms(400);
  jbt_post(NULL, b, "w4", JB_PRIORITY_NORMAL);
  assert_int_equal(first_seq(b), first);
}


/* ------------------------------------------- many processes, one watcher */

#define WORKERS 4
#define ROUNDS 120
#define STOP_OWNER "stop-the-watcher"

typedef struct {
  const char *dir;
  char *out;
  int index;
  uint64_t from;
  int start_fd;
} proc_args;

static jb_board *child_open(const char *dir) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *b = NULL;
  if (jb_board_open(&b, dir, &o) != JB_OK) {
    fprintf(stderr, "child %d: open: %s\n", (int)getpid(), jb_errmsg());
    return NULL;
  }
  return b;
}

/* A worker: posts, claims the next job, then consumes, abandons or
 * trashes it; every operation that succeeded is one line "TYPE uuid
 * owner", in the order made. */
static int worker(void *arg) {
  proc_args *a = arg;
  char go;
  if (read(a->start_fd, &go, 1) != 1) return 9;
  jb_board *b = child_open(a->dir);
  if (b == NULL) return 10;
  FILE *out = fopen(a->out, "w");
  if (out == NULL) return 11;
  char who[32];
  snprintf(who, sizeof who, "w%d", a->index);
  unsigned seed = (unsigned)a->index * 7919u + 1;
  for (int r = 0; r < ROUNDS; r++) {
    char u[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "mixed";
    if (jb_job_post(u, b, &p) != JB_OK) return 12;
    fprintf(out, "POSTED %s -\n", u);
    int rc = jb_claim_next(u, NULL, NULL, b, who, NULL);
    if (rc == JB_ENOTFOUND) continue;
    if (rc != JB_OK) return 13;
    fprintf(out, "CLAIMED %s %s\n", u, who);
    seed = seed * 1103515245u + 12345u;
    switch ((seed >> 16) % 3) {
    case 0:
      if (jb_consume(b, u, who, 0, NULL) != JB_OK) return 14;
      fprintf(out, "CONSUMED %s %s\n", u, who);
      break;
    case 1:
      if (jb_abandon(b, u, who, 0) != JB_OK) return 15;
      fprintf(out, "ABANDONED %s %s\n", u, who);
      break;
    default:
      if (jb_trash(b, u, who, 0) != JB_OK) return 16;
      fprintf(out, "TRASHED %s %s\n", u, who);
    }
  }
  if (fclose(out) != 0) return 17;
  jb_board_close(b);
  return 0;
}

/* The watcher: follows the log from a->from with jb_log_wait until it
 * sees a claim by STOP_OWNER; writes "SEQ TYPE uuid owner" per event. */
static int watcher(void *arg) {
  proc_args *a = arg;
  jb_board *b = child_open(a->dir);
  if (b == NULL) return 10;
  FILE *out = fopen(a->out, "w");
  if (out == NULL) return 11;
  uint64_t cursor = a->from;
  jb_event ev[32];
  for (;;) {
    size_t n = 0;
    int rc = jb_log_wait(ev, &n, NULL, b, cursor, 32, 30000);
    if (rc != JB_OK) {
      fprintf(stderr, "watcher: %s\n", jb_errmsg());
      return 12;
    }
    for (size_t i = 0; i < n; i++) {
      if (ev[i].type == JB_EVENT_CLAIMED &&
          strcmp(ev[i].owner, STOP_OWNER) == 0) {
        fclose(out);
        jb_board_close(b);
        return 0;
      }
      fprintf(out, "%llu %s %s %s\n", (unsigned long long)ev[i].seq,
              jb_event_type_name(ev[i].type), ev[i].uuid,
              ev[i].owner[0] ? ev[i].owner : "-");
    }
    cursor = ev[n - 1].seq + 1;
  }
}

typedef struct {
  char **v;
  size_t n, cap;
} lines;

static void lines_push(lines *l, const char *s) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    assert_non_null(l->v);
  }
  l->v[l->n++] = strdup(s);
}

static void lines_read(lines *l, const char *path) {
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  char buf[512];
  while (fgets(buf, sizeof buf, fp)) {
    buf[strcspn(buf, "\n")] = '\0';
    lines_push(l, buf);
  }
  fclose(fp);
}

static void lines_free(lines *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void a_watcher_sees_every_event_of_many_processes_once_in_order(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jbt_post(NULL, b, "before", JB_PRIORITY_NORMAL); /* not watched */
  uint64_t from = next_seq(b);
  int start[2];
  assert_int_equal(pipe(start), 0);
  proc_args wa = {f->dir, jbt_path(f->dir, "watcher.out"), -1, from, -1};
  pid_t wpid = jbt_fork(watcher, &wa, 120);
  proc_args args[WORKERS];
  pid_t pids[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "worker-%d.out", i);
    args[i] = (proc_args){f->dir, jbt_path(f->dir, name), i, 0, start[0]};
    pids[i] = jbt_fork(worker, &args[i], 120);
  }
  for (int i = 0; i < WORKERS; i++)
    assert_int_equal(write(start[1], "g", 1), 1);
  close(start[0]);
  close(start[1]);
  for (int i = 0; i < WORKERS; i++) jbt_wait_ok(pids[i], 120000);
  /* Every worker is done: the stop claim is the last event. */
  char stop[JB_UUID_STRLEN];
  jbt_post(stop, b, "stop", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, stop, STOP_OWNER, NULL), JB_OK);
  jbt_wait_ok(wpid, 120000);

  lines seen = {0};
  lines_read(&seen, wa.out);
  /* Contiguous sequences from the cursor, up to the stop job's post. */
  uint64_t next = next_seq(b);
  assert_int_equal(seen.n, next - 1 - from);
  for (size_t i = 0; i < seen.n; i++) {
    unsigned long long seq = strtoull(seen.v[i], NULL, 10);
    assert_int_equal(seq, from + i);
  }
  char last[128];
  snprintf(last, sizeof last, "%llu POSTED %s -",
           (unsigned long long)(next - 2), stop);
  assert_string_equal(seen.v[seen.n - 1], last);
  free(seen.v[--seen.n]);
  /* The watcher's events are exactly what the log holds. */
  for (size_t i = 0; i < seen.n; i += 64) {
    jb_event ev[64];
    size_t n = 0;
    assert_int_equal(jb_log_read(ev, &n, NULL, b, from + i, 64), JB_OK);
    for (size_t j = 0; j < n && i + j < seen.n; j++) {
      char line[512];
      snprintf(line, sizeof line, "%llu %s %s %s",
               (unsigned long long)ev[j].seq, jb_event_type_name(ev[j].type),
               ev[j].uuid, ev[j].owner[0] ? ev[j].owner : "-");
      assert_string_equal(seen.v[i + j], line);
    }
  }
  /* Each worker's operations: every one seen, in the worker's order. The
   * watcher's lines without their sequence, per worker. */
  lines all_done = {0};
  size_t total = 0;
  for (int w = 0; w < WORKERS; w++) {
    lines done = {0};
    lines_read(&done, args[w].out);
    total += done.n;
    char who[32];
    snprintf(who, sizeof who, " w%d", w);
    /* The events this worker made, as the watcher saw them, in order:
     * its owner events, and the posts of its uuids. */
    size_t k = 0;
    for (size_t i = 0; i < seen.n; i++) {
      const char *rest = strchr(seen.v[i], ' ') + 1;
      bool mine = false;
      size_t rl = strlen(rest), wl = strlen(who);
      if (rl > wl && strcmp(rest + rl - wl, who) == 0) mine = true;
      if (strncmp(rest, "POSTED ", 7) == 0)
        for (size_t j = 0; j < done.n && !mine; j++)
          mine = strcmp(done.v[j], rest) == 0;
      if (!mine) continue;
      if (k >= done.n) fail_msg("worker %d: extra event '%s'", w, seen.v[i]);
      if (strcmp(done.v[k], rest) != 0)
        fail_msg("worker %d: operation %zu was '%s', the watcher saw '%s'",
                 w, k, done.v[k], seen.v[i]);
      k++;
    }
    assert_int_equal(k, done.n);
    for (size_t j = 0; j < done.n; j++) lines_push(&all_done, done.v[j]);
    lines_free(&done);
    unlink(args[w].out);
    free(args[w].out);
  }
  /* Nothing but the workers' operations (each seen exactly once). */
  assert_int_equal(seen.n, total);
  assert_true(total >= WORKERS * ROUNDS * 2);
  lines stripped = {0};
  for (size_t i = 0; i < seen.n; i++)
    lines_push(&stripped, strchr(seen.v[i], ' ') + 1);
  qsort(stripped.v, stripped.n, sizeof *stripped.v, cmp_str);
  qsort(all_done.v, all_done.n, sizeof *all_done.v, cmp_str);
  for (size_t i = 0; i < stripped.n; i++)
    assert_string_equal(stripped.v[i], all_done.v[i]);
  lines_free(&stripped);
  lines_free(&all_done);
  lines_free(&seen);
  unlink(wa.out);
  free(wa.out);
  jbt_assert_check_ok(b);
}

/* ---------------------------------------------------------- subscriptions */

#define MAX_SEEN 4096

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  jb_event seen[MAX_SEEN];
  size_t n;
  pthread_t thread; /* the callback's */
  bool in_cb;       /* set while a callback runs (overlap check) */
  bool overlap;
  /* callback_posts: post a job for each of the first `repost` POSTED */
  jb_board *board;
  int repost;
  int post_failed;
  /* blocks: the first callback waits until `release` */
  bool block_first, released;
  jb_subscription *self;
  int self_unsub;
} collector;

static void collector_init(collector *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
}

static void collector_destroy(collector *c) {
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
}

static void collect(const jb_event *e, void *payload) {
  collector *c = payload;
  pthread_mutex_lock(&c->mu);
  if (c->in_cb) c->overlap = true;
  c->in_cb = true;
  c->thread = pthread_self();
  if (c->block_first && c->n == 0) {
    c->seen[c->n++] = *e;
    pthread_cond_broadcast(&c->cv);
    while (!c->released) pthread_cond_wait(&c->cv, &c->mu);
    c->in_cb = false;
    pthread_mutex_unlock(&c->mu);
    return;
  }
  bool post = e->type == JB_EVENT_POSTED && c->repost > 0;
  if (post) c->repost--;
  if (c->self) c->self_unsub = jb_unsubscribe(c->self);
  pthread_mutex_unlock(&c->mu);
  /* Outside our lock (the post is what a real callback might do). */
  if (post && c->board) {
    jb_post p = JB_POST_INIT;
    p.name = "from-callback";
    if (jb_job_post(NULL, c->board, &p) != JB_OK) c->post_failed = 1;
  }
  pthread_mutex_lock(&c->mu);
  if (c->n < MAX_SEEN) c->seen[c->n++] = *e;
  c->in_cb = false;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* Wait until `c` has seen `n` events (fails the test after 10 s). */
static void wait_seen(collector *c, size_t n) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  pthread_mutex_lock(&c->mu);
  while (c->n < n)
    if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0) break;
  size_t got = c->n;
  pthread_mutex_unlock(&c->mu);
  if (got < n) fail_msg("the subscription saw %zu events of %zu", got, n);
}

typedef struct {
  const char *dir;
  int jobs;
} sub_child_args;

/* Another process: post, claim, consume `jobs` jobs (3 events each), in
 * durability none: the order of events is under test, not the disk (600
 * flushed commits took over a minute under ASan on a loaded machine). */
static int post_claim_consume(void *arg) {
  sub_child_args *a = arg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) {
    fprintf(stderr, "child %d: open: %s\n", (int)getpid(), jb_errmsg());
    return 10;
  }
  for (int i = 0; i < a->jobs; i++) {
    char u[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "remote";
    if (jb_job_post(u, b, &p) != JB_OK || jb_claim(NULL, b, u, "remote", NULL) ||
        jb_consume(b, u, "remote", 0, NULL))
      return 11;
  }
  jb_board_close(b);
  return 0;
}

/* A subscription from now on of every event, collected in *c, while
 * another process posts, claims and consumes 200 jobs; returns where the
 * log stood when it began. A job posted before it is not delivered. */
static uint64_t collect_another_processes_events(jbt_fixture *f,
                                                 collector *c) {
  jb_board *b = f->board;
  jbt_post(NULL, b, "before", JB_PRIORITY_NORMAL); /* not delivered */
  collector_init(c);
  uint64_t from = next_seq(b);
  jb_subscription *sub = NULL;
  assert_int_equal(jb_subscribe(&sub, b, JB_LOG_NOW, JB_EVENTS_ALL, collect,
                                c),
                   JB_OK);
  sub_child_args a = {f->dir, 200};
  pid_t pid = jbt_fork(post_claim_consume, &a, 120);
  jbt_wait_ok(pid, 120000);
  wait_seen(c, 600);
  /* Nothing more comes: the count stays. */
  sleep_ms(50);
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  assert_int_equal(c->n, 600);
  return from;
}

static void a_subscription_gets_every_event_of_another_process_in_order(
    void **state) {
  static collector c;
  uint64_t from = collect_another_processes_events(*state, &c);
  jb_event_type cycle[] = {JB_EVENT_POSTED, JB_EVENT_CLAIMED,
                           JB_EVENT_CONSUMED};
  for (size_t i = 0; i < c.n; i++) {
    assert_int_equal(c.seen[i].seq, from + i);
    assert_int_equal(c.seen[i].type, cycle[i % 3]);
    if (i % 3) assert_string_equal(c.seen[i].uuid, c.seen[i - i % 3].uuid);
  }
  collector_destroy(&c);
}

static void a_subscriptions_callbacks_never_overlap(void **state) {
  static collector c;
  collect_another_processes_events(*state, &c);
  assert_false(c.overlap);
  collector_destroy(&c);
}

static void a_subscriptions_callbacks_run_on_a_thread_of_their_own(
    void **state) {
  static collector c;
  collect_another_processes_events(*state, &c);
  assert_false(pthread_equal(c.thread, pthread_self()));
  collector_destroy(&c);
}

static void a_subscription_from_the_past_replays_and_masks_filter(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u[3][JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) {
    jbt_post(u[i], b, "m", JB_PRIORITY_NORMAL);
    assert_int_equal(jb_claim(NULL, b, u[i], "w", NULL), JB_OK);
  }
  assert_int_equal(jb_consume(b, u[0], "w", 0, NULL), JB_OK);
  assert_int_equal(jb_abandon(b, u[1], "w", 0), JB_OK);
  collector c, p;
  collector_init(&c);
  collector_init(&p);
  jb_subscription *removal = NULL, *posted = NULL;
  assert_int_equal(jb_subscribe(&removal, b, 1, JB_EVENTS_REMOVAL, collect,
                                &c),
                   JB_OK);
  assert_int_equal(jb_subscribe(&posted, b, 1, JB_EVENTS_POSTED, collect, &p),
                   JB_OK);
  wait_seen(&c, 1);
  wait_seen(&p, 3);
  assert_int_equal(jb_trash(b, u[2], "w", 0), JB_OK);
  wait_seen(&c, 2);
  jbt_post(NULL, b, "late", JB_PRIORITY_NORMAL);
  wait_seen(&p, 4);
  sleep_ms(50);
  assert_int_equal(jb_unsubscribe(removal), JB_OK);
  assert_int_equal(jb_unsubscribe(posted), JB_OK);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.seen[0].type, JB_EVENT_CONSUMED);
  assert_string_equal(c.seen[0].uuid, u[0]);
  assert_int_equal(c.seen[1].type, JB_EVENT_TRASHED);
  assert_string_equal(c.seen[1].uuid, u[2]);
  assert_int_equal(p.n, 4);
  for (size_t i = 0; i < p.n; i++) {
    assert_int_equal(p.seen[i].type, JB_EVENT_POSTED);
    if (i < 3) assert_string_equal(p.seen[i].uuid, u[i]);
  }
  collector_destroy(&c);
  collector_destroy(&p);
}

/* A callback that posts a job (a write: it needs the writer lock) would
 * wait forever if callbacks ran inside a write transaction. */
static void a_callback_may_write_to_the_board(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  collector c;
  collector_init(&c);
  c.board = b;
  c.repost = 5;
  jb_subscription *sub = NULL;
  assert_int_equal(jb_subscribe(&sub, b, JB_LOG_NOW, JB_EVENTS_POSTED, collect,
                                &c),
                   JB_OK);
  jbt_post(NULL, b, "first", JB_PRIORITY_NORMAL);
  wait_seen(&c, 6); /* the first, and the five its callbacks posted */
  sleep_ms(50);
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  assert_int_equal(c.n, 6);
  assert_int_equal(c.post_failed, 0);
  for (size_t i = 1; i < c.n; i++)
    assert_int_equal(c.seen[i].seq, c.seen[i - 1].seq + 1);
  size_t count = 0;
  assert_int_equal(jb_board_count(&count, b, 0), JB_OK);
  assert_int_equal(count, 6);
  collector_destroy(&c);
}

/* A subscriber held up while the log is trimmed past it hears of it: one
 * TRIMMED delivery naming what it lost, then the log from where it
 * starts. */
static void trimming_past_a_slow_subscriber_is_delivered_to_it(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = reopen_bounded(f, 10, 0);
  collector c;
  collector_init(&c);
  c.block_first = true;
  jb_subscription *sub = NULL;
  assert_int_equal(jb_subscribe(&sub, b, JB_LOG_NOW, JB_EVENTS_ALL, collect,
                                &c),
                   JB_OK);
  jbt_post(NULL, b, "first", JB_PRIORITY_NORMAL);
  wait_seen(&c, 1); /* its callback now blocks */
  for (int i = 0; i < 300; i++) jbt_post(NULL, b, "bulk", JB_PRIORITY_NORMAL);
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, b), JB_OK);
  assert_true(first > 2);
  pthread_mutex_lock(&c.mu);
  c.released = true;
  pthread_cond_broadcast(&c.cv);
  pthread_mutex_unlock(&c.mu);
  /* first, TRIMMED, then first..next-1 */
  wait_seen(&c, 2 + (size_t)(next - first));
  sleep_ms(50);
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  assert_int_equal(c.n, 2 + (size_t)(next - first));
  assert_int_equal(c.seen[0].seq, 1);
  assert_int_equal(c.seen[1].type, JB_EVENT_TRIMMED);
  assert_int_equal(c.seen[1].seq, 2);
  assert_int_equal(c.seen[1].seq + c.seen[1].lost, first);
  assert_string_equal(c.seen[1].uuid, "");
  for (size_t i = 2; i < c.n; i++) {
    assert_int_equal(c.seen[i].seq, first + (i - 2));
    assert_int_equal(c.seen[i].type, JB_EVENT_POSTED);
  }
  collector_destroy(&c);
}

static jb_subscription *inherited;

/* In a child of fork(): the subscription's thread stayed in the parent,
 * so unsubscribing must only free (a join would wait for nothing). */
static int unsubscribe_inherited(void *arg) {
  (void)arg;
  return jb_unsubscribe(inherited) == JB_OK ? 0 : 1;
}

static void unsubscribe_from_its_own_callback_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  static collector c;
  collector_init(&c);
  jb_subscription *sub = NULL;
  pthread_mutex_lock(&c.mu);
  assert_int_equal(jb_subscribe(&sub, b, JB_LOG_NOW, JB_EVENTS_ALL, collect,
                                &c),
                   JB_OK);
  c.self = sub;
  pthread_mutex_unlock(&c.mu);
  jbt_post(NULL, b, "x", JB_PRIORITY_NORMAL);
  wait_seen(&c, 1);
  assert_int_equal(c.self_unsub, JB_EINVAL);
  pthread_mutex_lock(&c.mu);
  c.self = NULL;
  pthread_mutex_unlock(&c.mu);
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  collector_destroy(&c);
}

/* A subscription from now on of every event, collected in *c, which has
 * seen one post. */
static jb_subscription *subscribe_and_see_a_post(jbt_fixture *f,
                                                 collector *c) {
  collector_init(c);
  jb_subscription *sub = NULL;
  assert_int_equal(jb_subscribe(&sub, f->board, JB_LOG_NOW, JB_EVENTS_ALL,
                                collect, c),
                   JB_OK);
  jbt_post(NULL, f->board, "x", JB_PRIORITY_NORMAL);
  wait_seen(c, 1);
  return sub;
}

/* A child that unsubscribes its copy ends quickly, and the parent's
 * subscription goes on. */
static void unsubscribing_a_copy_inherited_by_a_child_stops_only_the_copy(
    void **state) {
  jbt_fixture *f = *state;
  static collector c;
  jb_subscription *sub = subscribe_and_see_a_post(f, &c);
  inherited = sub;
  jbt_wait_ok(jbt_fork(unsubscribe_inherited, NULL, 10), 10000);
  jbt_post(NULL, f->board, "y", JB_PRIORITY_NORMAL);
  wait_seen(&c, 2);
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  collector_destroy(&c);
}

/* The user's handle may close first: the subscription has its own. */
static void a_subscription_outlives_the_handle_it_was_made_on(void **state) {
  jbt_fixture *f = *state;
  static collector c;
  jb_subscription *sub = subscribe_and_see_a_post(f, &c);
  jb_board_close(f->board);
  f->board = NULL;
  assert_int_equal(jb_unsubscribe(sub), JB_OK);
  collector_destroy(&c);
}

int main(void) {
  jbt_watchdog(600);
  const struct CMUnitTest tests[] = {
      T(every_operation_is_read_back_in_order),
      T(events_carry_the_jobs_sequence_and_priority),
      T(the_log_reads_on_from_a_cursor),
      T(a_new_boards_log_is_empty_and_starts_at_1),
      T(reading_from_now_finds_nothing_until_a_write),
      T(a_log_wait_from_now_times_out_when_nothing_is_written),
      T(a_log_wait_returns_at_once_when_there_is_something),
      T(log_read_from_sequence_0_is_invalid),
      T(a_cursor_beyond_the_end_is_refused_naming_the_next_event),
      T(log_read_and_wait_without_an_argument_are_invalid),
      T(log_read_of_at_most_0_events_is_invalid),
      T(log_bounds_without_a_board_is_invalid),
      T(both_log_bounds_are_optional),
      T(subscribe_from_sequence_0_is_invalid),
      T(subscribe_beyond_the_end_is_invalid),
      T(subscribe_to_no_event_type_is_invalid),
      T(subscribe_without_a_callback_board_or_out_is_invalid),
      T(unsubscribe_of_null_is_harmless),
      T(a_negative_log_max_age_is_refused),
      T(strerror_of_trimmed_says_the_log_was_trimmed),
      T(event_type_names_are_the_upper_case_type),
      T(event_type_name_of_a_value_outside_the_enum_is_null),
      T(log_bounds_are_one_per_process_and_board),
      T(version_1_board_options_open_with_the_default_log_bounds),
      T(the_size_bound_keeps_its_count_trimming_64_at_a_time),
      T(a_reader_behind_the_size_bound_is_told_where_the_log_starts),
      T(subscribing_from_a_trimmed_sequence_is_refused),
      T(resuming_where_the_log_starts_reads_on),
      T(batch_posts_keep_the_log_within_its_bound),
      T(the_age_bound_trims_old_events),
      T(the_age_bound_never_trims_the_newest_event),
      T(the_age_bound_is_batched_per_write),
      T(the_default_age_bound_keeps_events_of_a_moment_ago),
      T(a_watcher_sees_every_event_of_many_processes_once_in_order),
      T(a_subscription_gets_every_event_of_another_process_in_order),
      T(a_subscriptions_callbacks_never_overlap),
      T(a_subscriptions_callbacks_run_on_a_thread_of_their_own),
      T(a_subscription_from_the_past_replays_and_masks_filter),
      T(a_callback_may_write_to_the_board),
      T(trimming_past_a_slow_subscriber_is_delivered_to_it),
      T(unsubscribe_from_its_own_callback_is_refused),
      T(unsubscribing_a_copy_inherited_by_a_child_stops_only_the_copy),
      T(a_subscription_outlives_the_handle_it_was_made_on),
      T(a_large_batch_after_events_in_the_tail_keeps_the_log_in_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
