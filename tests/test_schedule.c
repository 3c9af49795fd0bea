/*
 * test_schedule.c - periodic jobs (jobboard.h, "Periodic jobs"): cron specs
 * and their next and previous runs against a table (expected times from libc's
 * timegm, not from the code under test), interval schedules, catch-up skip and
 * all, add / get / list / remove and bad input, check's report of a record
 * that does not decode, and a race: three processes ticking one 1-second
 * schedule for a simulated hour post each run exactly once.
 *
 * Every time here is simulated (jb_schedule_tick's now_us), so no test
 * sleeps or depends on the clock.
 */
#include "helpers.h"
#include "codec/cron.h"

#include <lmdb.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_US INT64_C(1000000)
#define MIN_US (60 * S_US)

/* UTC y-m-d h:mi:s as microseconds, by libc. */
static int64_t utc(int y, int mo, int d, int h, int mi, int s) {
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                  .tm_hour = h, .tm_min = mi, .tm_sec = s};
  return (int64_t)timegm(&tm) * S_US;
}

/* 2026-01-01T00:00:00Z, a Thursday. */
#define T0 utc(2026, 1, 1, 0, 0, 0)

/* ------------------------------------------------------------ cron specs */

/* Cron specs, a time, and the next run after it. */
static const struct {
  const char *spec;
  int after[6], next[6];
} cron_table[] = {
    {"* * * * *", {2026, 1, 1, 0, 0, 0}, {2026, 1, 1, 0, 1, 0}},
    {"* * * * *", {2026, 1, 1, 0, 0, 59}, {2026, 1, 1, 0, 1, 0}},
    {"*/15 * * * *", {2026, 1, 1, 0, 14, 59}, {2026, 1, 1, 0, 15, 0}},
    {"*/15 * * * *", {2026, 1, 1, 0, 45, 0}, {2026, 1, 1, 1, 0, 0}},
    {"0 */6 * * *", {2026, 1, 1, 6, 0, 0}, {2026, 1, 1, 12, 0, 0}},
    {"10-50/20 * * * *", {2026, 1, 1, 0, 10, 0}, {2026, 1, 1, 0, 30, 0}},
    {"10-50/20 * * * *", {2026, 1, 1, 0, 50, 0}, {2026, 1, 1, 1, 10, 0}},
    {"5/20 * * * *", {2026, 1, 1, 0, 45, 0}, {2026, 1, 1, 1, 5, 0}},
    {"0,30 8-9 * * *", {2026, 1, 1, 9, 30, 0}, {2026, 1, 2, 8, 0, 0}},
    /* Weekdays: from Friday 2 January to Monday 5 January. */
    {"30 9 * * 1-5", {2026, 1, 2, 9, 30, 0}, {2026, 1, 5, 9, 30, 0}},
    /* Sunday as 7 and as 0. */
    {"0 12 * * 7", {2026, 1, 1, 0, 0, 0}, {2026, 1, 4, 12, 0, 0}},
    {"0 12 * * 0", {2026, 1, 1, 0, 0, 0}, {2026, 1, 4, 12, 0, 0}},
    {"0 0 1,15 * *", {2026, 1, 1, 0, 0, 0}, {2026, 1, 15, 0, 0, 0}},
    {"0 0 */10 * *", {2026, 1, 21, 0, 0, 0}, {2026, 1, 31, 0, 0, 0}},
    /* Day 31: February and the 30-day months have none. */
    {"0 0 31 * *", {2026, 1, 31, 0, 0, 0}, {2026, 3, 31, 0, 0, 0}},
    {"0 0 31 * *", {2026, 3, 31, 0, 0, 0}, {2026, 5, 31, 0, 0, 0}},
    /* 29 February: the next leap year. */
    {"0 0 29 2 *", {2026, 1, 1, 0, 0, 0}, {2028, 2, 29, 0, 0, 0}},
    {"0 0 * 2 *", {2028, 2, 28, 0, 0, 0}, {2028, 2, 29, 0, 0, 0}},
    {"0 0 * 2 *", {2027, 2, 28, 0, 0, 0}, {2028, 2, 1, 0, 0, 0}},
    /* Day of month OR day of week when both are restricted (Vixie):
     * the 13th or a Friday; Friday 2 January comes first. */
    {"0 0 13 * 5", {2026, 1, 1, 0, 0, 0}, {2026, 1, 2, 0, 0, 0}},
    /* ... but AND when one begins with `*`. */
    {"0 0 */1 * 5", {2026, 1, 1, 0, 0, 0}, {2026, 1, 2, 0, 0, 0}},
    {"0 0 13 * *", {2026, 1, 1, 0, 0, 0}, {2026, 1, 13, 0, 0, 0}},
    /* Year ends. */
    {"0 0 * * *", {2026, 12, 31, 12, 0, 0}, {2027, 1, 1, 0, 0, 0}},
    {"59 23 31 12 *", {2026, 12, 31, 23, 59, 0}, {2027, 12, 31, 23, 59, 0}},
    {"0 0 1 1 *", {2026, 6, 1, 0, 0, 0}, {2027, 1, 1, 0, 0, 0}},
    {"@hourly", {2026, 1, 1, 0, 0, 30}, {2026, 1, 1, 1, 0, 0}},
    {"@daily", {2026, 1, 1, 0, 0, 0}, {2026, 1, 2, 0, 0, 0}},
    {"@weekly", {2026, 1, 1, 0, 0, 0}, {2026, 1, 4, 0, 0, 0}},
    {"@monthly", {2026, 1, 1, 0, 0, 0}, {2026, 2, 1, 0, 0, 0}},
    {"@yearly", {2026, 1, 1, 0, 0, 0}, {2027, 1, 1, 0, 0, 0}},
    /* April 3rd or an April Friday: 3 April 2026 is both. */
    {"  1   2  3 4   5  ", {2026, 1, 1, 0, 0, 0}, {2026, 4, 3, 2, 1, 0}},
};
#define N_CRON (sizeof cron_table / sizeof cron_table[0])

/* cron_table[i]'s spec, parsed (failing the test when it is refused). */
static jb_cron cron_of_row(size_t i) {
  jb_cron c;
  char why[200];
  if (!jb__cron_parse(&c, cron_table[i].spec, strlen(cron_table[i].spec), why,
                      sizeof why))
    fail_msg("'%s': refused: %s", cron_table[i].spec, why);
  return c;
}

/* cron_table[i]'s next run. */
static int64_t next_of_row(size_t i) {
  const int *n = cron_table[i].next;
  return utc(n[0], n[1], n[2], n[3], n[4], n[5]);
}

static void cron_next_runs_match_the_table(void **state) {
  (void)state;
  for (size_t i = 0; i < N_CRON; i++) {
    jb_cron c = cron_of_row(i);
    const int *a = cron_table[i].after;
    int64_t after = utc(a[0], a[1], a[2], a[3], a[4], a[5]), got;
    int64_t want = next_of_row(i);
    assert_true(jb__cron_next(&c, after, &got));
    if (got != want)
      fail_msg("'%s' after %d-%02d-%02d %02d:%02d: %" PRId64 " s, not %" PRId64
               " s", cron_table[i].spec, a[0], a[1], a[2], a[3], a[4],
               got / S_US, want / S_US);
  }
}

/* The run before a run's time, or before a time within its minute, is
 * the run itself. */
static void cron_previous_run_at_or_just_after_a_run_is_the_run(
    void **state) {
  (void)state;
  for (size_t i = 0; i < N_CRON; i++) {
    jb_cron c = cron_of_row(i);
    int64_t want = next_of_row(i);
    int64_t prev;
    assert_true(jb__cron_prev(&c, want, &prev));
    assert_int_equal(prev, want);
    assert_true(jb__cron_prev(&c, want + 59 * S_US, &prev));
    assert_int_equal(prev, want);
  }
}

static void cron_previous_runs_match_the_table(void **state) {
  (void)state;
  jb_cron c;
  char why[200];
  int64_t got;
  assert_true(jb__cron_parse(&c, "*/15 * * * *", 12, why, sizeof why));
  assert_true(jb__cron_prev(&c, utc(2026, 1, 1, 0, 14, 59), &got));
  assert_int_equal(got, utc(2026, 1, 1, 0, 0, 0));
  assert_true(jb__cron_prev(&c, utc(2026, 1, 1, 0, 0, 0) - 1, &got));
  assert_int_equal(got, utc(2025, 12, 31, 23, 45, 0));
  assert_true(jb__cron_parse(&c, "0 0 29 2 *", 10, why, sizeof why));
  assert_true(jb__cron_prev(&c, utc(2027, 1, 1, 0, 0, 0), &got));
  assert_int_equal(got, utc(2024, 2, 29, 0, 0, 0));
  assert_true(jb__cron_parse(&c, "30 9 * * 1-5", 12, why, sizeof why));
  assert_true(jb__cron_prev(&c, utc(2026, 1, 4, 23, 0, 0), &got)); /* Sun */
  assert_int_equal(got, utc(2026, 1, 2, 9, 30, 0));                /* Fri */
}

static void bad_cron_specs_are_refused_naming_field_and_value(void **state) {
  (void)state;
  static const struct {
    const char *spec, *msg;
  } t[] = {
      {"", "0 fields, not 5"},
      {"* * * *", "4 fields, not 5"},
      {"* * * * * *", "more than 5 fields"},
      {"60 * * * *", "field 1 (minute): 60 is outside 0..59"},
      {"* 24 * * *", "field 2 (hour): 24 is outside 0..23"},
      {"* * 0 * *", "field 3 (day of month): 0 is outside 1..31"},
      {"* * * 13 *", "field 4 (month): 13 is outside 1..12"},
      {"* * * * 8", "field 5 (day of week): 8 is outside 0..7"},
      {"5-1 * * * *", "field 1 (minute): the range 5-1 runs backwards"},
      {"*/0 * * * *", "field 1 (minute): the step in '*/0' must be 1..59"},
      {"a * * * *", "field 1 (minute): 'a' is not a number"},
      {"1,,2 * * * *", "field 1 (minute): '1,,2' is not a list"},
      {"1- * * * *", "field 1 (minute): '1-' is not a list"},
      {"* * * JANUARY *", "field 4 (month): 'JANUARY' is not a name"},
      {"0 0 30 2 *", "no day ever matches"},
      {"0 0 31 4,6,9,11 *", "no day ever matches"},
      {"@often", "'@often' is not @hourly"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    jb_cron c;
    char why[200] = "";
    if (jb__cron_parse(&c, t[i].spec, strlen(t[i].spec), why, sizeof why))
      fail_msg("'%s' was accepted", t[i].spec);
    jbt_assert_contains(why, t[i].msg);
  }
}

/* ------------------------------------------------------------- helpers */

/* The run time details d[0..len) carry ("scheduled_at": the board
 * re-encodes details, so an int 64 comes back as a uint 64), or -1. */
static int64_t details_run(const uint8_t *d, size_t len) {
  static const char key[] = "\xacscheduled_at";
  const size_t kl = sizeof key - 1;
  for (size_t i = 0; d && i + kl + 9 <= len; i++)
    if (memcmp(d + i, key, kl) == 0 && (d[i + kl] == 0xcf || d[i + kl] == 0xd3)) {
      uint64_t v = 0;
      for (int k = 0; k < 8; k++) v = v << 8 | d[i + kl + 1 + k];
      return (int64_t)v;
    }
  return -1;
}

static int64_t run_of(const jb_job *job) {
  size_t len;
  const uint8_t *d = jb_job_details(job, &len);
  int64_t run = details_run(d, len);
  if (run < 0)
    fail_msg("job %s has no scheduled_at in its details", jb_job_uuid(job));
  return run;
}

/* The run times of the board's jobs in listing order, at most max. */
static size_t runs_on_board(jb_board *b, int64_t *out, size_t max) {
  char (*uuids)[JB_UUID_STRLEN] = calloc(max + 1, JB_UUID_STRLEN);
  assert_non_null(uuids);
  size_t n = jbt_listing_order(b, uuids, max + 1);
  assert_true(n <= max);
  for (size_t i = 0; i < n; i++) {
    jb_job *job = NULL;
    assert_int_equal(jb_job_get(&job, b, uuids[i]), JB_OK);
    out[i] = run_of(job);
    char key[64];
    snprintf(key, sizeof key, "schedule:%s:%" PRId64, "s", out[i]);
    /* Every test here names its schedule "s". */
    assert_non_null(jb_job_unique_key(job));
    assert_string_equal(jb_job_unique_key(job), key);
    jb_job_free(job);
  }
  free(uuids);
  return n;
}

static void add_every(jb_board *b, int64_t every_ms, int64_t start_us,
                      jb_catchup catch_up) {
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.every_ms = every_ms;
  sc.start_us = start_us;
  sc.catch_up = catch_up;
  sc.job.name = "report";
  if (jb_schedule_add(b, &sc, 0) != JB_OK) fail_msg("add: %s", jb_errmsg());
}

static size_t tick(jb_board *b, int64_t now) {
  size_t n = 99;
  if (jb_schedule_tick(&n, b, now) != JB_OK) fail_msg("tick: %s", jb_errmsg());
  return n;
}

static jb_schedule *get(jb_board *b, const char *name) {
  jb_schedule *s = NULL;
  if (jb_schedule_get(&s, b, name) != JB_OK) fail_msg("get: %s", jb_errmsg());
  return s;
}

/* ---------------------------------------------------------- intervals */

/* A schedule "s" every second from T0, ticked just before, at and after
 * its first two runs: each tick posts what is due and no more. */
static void tick_two_runs_of_every_second(jbt_fixture *f) {
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  assert_int_equal(tick(f->board, T0 - 1), 0);
  assert_int_equal(tick(f->board, T0), 1);
  assert_int_equal(tick(f->board, T0), 0);
  assert_int_equal(tick(f->board, T0 + S_US - 1), 0);
  assert_int_equal(tick(f->board, T0 + S_US), 1);
}

static void interval_runs_are_posted_once_each_when_due(void **state) {
  jbt_fixture *f = *state;
  tick_two_runs_of_every_second(f);
  int64_t runs[4];
  assert_int_equal(runs_on_board(f->board, runs, 4), 2);
  assert_int_equal(runs[0], T0);
  assert_int_equal(runs[1], T0 + S_US);
  jbt_assert_check_ok(f->board);
}

static void a_schedule_records_its_runs_the_last_and_the_next(void **state) {
  jbt_fixture *f = *state;
  tick_two_runs_of_every_second(f);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->runs, 2);
  assert_int_equal(s->last_run_us, T0 + S_US);
  assert_int_equal(s->next_us, T0 + 2 * S_US);
  jb_schedule_free(s);
}

static void next_due_is_the_time_of_the_next_run(void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  int64_t due;
  assert_int_equal(jb_schedule_next_due(&due, f->board), JB_OK);
  assert_int_equal(due, T0);
  assert_int_equal(tick(f->board, T0), 1);
  assert_int_equal(tick(f->board, T0 + S_US), 1);
  assert_int_equal(jb_schedule_next_due(&due, f->board), JB_OK);
  assert_int_equal(due, T0 + 2 * S_US);
}

static void interval_without_start_runs_one_interval_after_the_add(
    void **state) {
  jbt_fixture *f = *state;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * S_US + ts.tv_nsec / 1000;
  add_every(f->board, 60000, 0, JB_CATCHUP_SKIP);
  jb_schedule *s = get(f->board, "s");
  assert_true(s->start_us >= now + 60 * S_US);
  assert_true(s->start_us < now + 70 * S_US);
  assert_int_equal(s->next_us, s->start_us);
  assert_int_equal(tick(f->board, s->start_us - 1), 0);
  assert_int_equal(tick(f->board, s->start_us), 1);
  jb_schedule_free(s);
}

/* ----------------------------------------------------------- catch-up */

static void catch_up_skip_posts_only_the_latest_missed_run(void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 60000, T0, JB_CATCHUP_SKIP);
  /* Six runs due (T0, +1 .. +5 min), half a minute after the last. */
  assert_int_equal(tick(f->board, T0 + 5 * MIN_US + 30 * S_US), 1);
  int64_t runs[8];
  assert_int_equal(runs_on_board(f->board, runs, 8), 1);
  assert_int_equal(runs[0], T0 + 5 * MIN_US);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->runs, 1);
  assert_int_equal(s->last_run_us, T0 + 5 * MIN_US);
  assert_int_equal(s->next_us, T0 + 6 * MIN_US);
  jb_schedule_free(s);
  assert_int_equal(tick(f->board, T0 + 6 * MIN_US), 1);
}

static void catch_up_all_posts_every_missed_run_once(void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 60000, T0, JB_CATCHUP_ALL);
  assert_int_equal(tick(f->board, T0 + 5 * MIN_US + 30 * S_US), 6);
  assert_int_equal(tick(f->board, T0 + 5 * MIN_US + 30 * S_US), 0);
  int64_t runs[8];
  assert_int_equal(runs_on_board(f->board, runs, 8), 6);
  for (int i = 0; i < 6; i++) assert_int_equal(runs[i], T0 + i * MIN_US);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->runs, 6);
  assert_int_equal(s->next_us, T0 + 6 * MIN_US);
  jb_schedule_free(s);
  jbt_assert_check_ok(f->board);
}

static void catch_up_all_posts_at_most_the_cap_per_tick(void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 1000, T0, JB_CATCHUP_ALL);
  int64_t now = T0 + (JB_SCHEDULE_CATCHUP_MAX + 9) * S_US;
  assert_int_equal(tick(f->board, now), JB_SCHEDULE_CATCHUP_MAX);
  int64_t due;
  assert_int_equal(jb_schedule_next_due(&due, f->board), JB_OK);
  assert_int_equal(due, T0 + JB_SCHEDULE_CATCHUP_MAX * S_US);
  assert_int_equal(tick(f->board, now), 10);
  assert_int_equal(tick(f->board, now), 0);
}

/* A schedule "s" every five minutes by cron from T0, catching up as
 * asked. */
static void add_every_five_minutes_by_cron(jbt_fixture *f,
                                           jb_catchup catch_up) {
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.cron = "*/5 * * * *";
  sc.start_us = T0;
  sc.catch_up = catch_up;
  sc.job.name = "report";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
}

/* Runs 00:00, 05, 10, 15 due at 00:17: skip posts 00:15 only. */
static void cron_catch_up_skip_posts_only_the_latest_missed_run(
    void **state) {
  jbt_fixture *f = *state;
  add_every_five_minutes_by_cron(f, JB_CATCHUP_SKIP);
  assert_int_equal(tick(f->board, T0 + 17 * MIN_US), 1);
  int64_t runs[8];
  assert_int_equal(runs_on_board(f->board, runs, 8), 1);
  assert_int_equal(runs[0], T0 + 15 * MIN_US);
}

static void cron_catch_up_all_posts_every_missed_run(void **state) {
  jbt_fixture *f = *state;
  add_every_five_minutes_by_cron(f, JB_CATCHUP_ALL);
  int64_t runs[8];
  assert_int_equal(tick(f->board, T0 + 17 * MIN_US), 4);
  assert_int_equal(runs_on_board(f->board, runs, 8), 4);
  for (int i = 0; i < 4; i++) assert_int_equal(runs[i], T0 + 5 * i * MIN_US);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->next_us, T0 + 20 * MIN_US);
  jb_schedule_free(s);
}

static void run_whose_unique_key_is_held_is_not_posted_again(void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  /* Run T0 posted, then the schedule made anew (same start, no runs):
   * run T0 is due again, but its job, still on the board, holds its key
   * (schedule:s:T0; jb_job_post refuses such keys, so only a run has
   * one). */
  assert_int_equal(tick(f->board, T0), 1);
  assert_int_equal(jb_schedule_remove(f->board, "s"), JB_OK);
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  assert_int_equal(tick(f->board, T0), 0);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->runs, 0);
  assert_int_equal(s->next_us, T0 + S_US);
  jb_schedule_free(s);
  size_t n;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 1);
}

/* ------------------------------------------- add, get, list, remove */

/* Adds "nightly", every field of its template set (details d). */
static void add_nightly(jbt_fixture *f, const jbt_buf *d) {
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "nightly";
  sc.cron = "30 2 * * 1-5";
  sc.start_us = T0;
  sc.catch_up = JB_CATCHUP_ALL;
  sc.job.name = "backup";
  sc.job.details = d->data;
  sc.job.details_len = d->len;
  sc.job.priority = JB_PRIORITY_HIGH;
  sc.job.book_name = "books";
  sc.job.book_uuid = "0B1C2D3E-4F50-4617-8293-A4B5C6D7E8F9";
  sc.job.max_attempts = 3;
  sc.job.time_limit_ms = 60000;
  sc.job.backoff_ms = 2000;
  sc.job.backoff_max_ms = 8000;
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
}

static void added_schedule_reads_back_as_given(void **state) {
  jbt_fixture *f = *state;
  jbt_buf d = jbt_details_store(7);
  add_nightly(f, &d);
  jb_schedule *s = get(f->board, "nightly");
  assert_string_equal(s->name, "nightly");
  assert_string_equal(s->cron, "30 2 * * 1-5");
  assert_int_equal(s->every_ms, 0);
  assert_int_equal(s->catch_up, JB_CATCHUP_ALL);
  assert_string_equal(s->job.name, "backup");
  assert_int_equal(s->job.details_len, d.len);
  assert_memory_equal(s->job.details, d.data, d.len);
  assert_int_equal(s->job.priority, JB_PRIORITY_HIGH);
  assert_string_equal(s->job.book_name, "books");
  assert_string_equal(s->job.book_uuid, "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9");
  assert_int_equal(s->job.max_attempts, 3);
  assert_int_equal(s->job.time_limit_ms, 60000);
  assert_int_equal(s->job.backoff_ms, 2000);
  assert_int_equal(s->job.backoff_max_ms, 8000);
  assert_int_equal(s->next_us, utc(2026, 1, 1, 2, 30, 0));
  assert_int_equal(s->runs, 0);
  assert_int_equal(s->last_run_us, 0);
  assert_true(s->created_us > 0);
  jb_schedule_free(s);
  jbt_buf_free(&d);
}

/* Book, priority, options, details. */
static void a_run_carries_the_schedules_job_template(void **state) {
  jbt_fixture *f = *state;
  jbt_buf d = jbt_details_store(7);
  add_nightly(f, &d);
  assert_int_equal(tick(f->board, utc(2026, 1, 1, 2, 30, 0)), 1);
  char uuid[1][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(f->board, uuid, 1), 1);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, uuid[0]), JB_OK);
  assert_string_equal(jb_job_name(job), "backup");
  assert_int_equal(jb_job_priority(job), JB_PRIORITY_HIGH);
  assert_string_equal(jb_job_book_name(job), "books");
  assert_int_equal(jb_job_max_attempts(job), 3);
  assert_int_equal(jb_job_time_limit(job), 60000);
  assert_int_equal(run_of(job), utc(2026, 1, 1, 2, 30, 0));
  assert_int_equal(jb_job_created(job), utc(2026, 1, 1, 2, 30, 0));
  size_t dl;
  const uint8_t *dd = jb_job_details(job, &dl);
  /* {"store": {"x": 7}} + "scheduled_at": the header counts 2 entries. */
  assert_int_equal(dd[0], 0x82);
  assert_memory_equal(dd + 1, (const uint8_t *)d.data + 1, d.len - 1);
  jb_job_free(job);
  jbt_buf_free(&d);
  jbt_assert_check_ok(f->board);
}

typedef struct {
  char names[8][16];
  int n;
} seen;

static int collect(const jb_schedule *s, void *payload) {
  seen *x = payload;
  snprintf(x->names[x->n++], 16, "%s", s->name);
  return x->n == 8 ? 42 : 0;
}

/* Schedules "b", "c" and "a", added in that order. */
static void add_b_c_a(jbt_fixture *f) {
  const char *names[] = {"b", "c", "a"};
  for (int i = 0; i < 3; i++) {
    jb_schedule sc = JB_SCHEDULE_INIT;
    sc.name = names[i];
    sc.every_ms = 1000 * (i + 1);
    sc.job.name = "x";
    assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
  }
}

static void schedules_list_in_name_order(void **state) {
  jbt_fixture *f = *state;
  add_b_c_a(f);
  seen x = {0};
  assert_int_equal(jb_schedule_foreach(f->board, collect, &x), JB_OK);
  assert_int_equal(x.n, 3);
  assert_string_equal(x.names[0], "a");
  assert_string_equal(x.names[1], "b");
  assert_string_equal(x.names[2], "c");
}

static void a_removed_schedule_is_neither_got_nor_listed(void **state) {
  jbt_fixture *f = *state;
  add_b_c_a(f);
  assert_int_equal(jb_schedule_remove(f->board, "b"), JB_OK);
  jb_schedule *s = NULL;
  assert_int_equal(jb_schedule_get(&s, f->board, "b"), JB_ENOTFOUND);
  assert_null(s);
  seen x = {0};
  assert_int_equal(jb_schedule_foreach(f->board, collect, &x), JB_OK);
  assert_int_equal(x.n, 2);
}

static void removing_a_missing_schedule_is_not_found_naming_it(void **state) {
  jbt_fixture *f = *state;
  add_b_c_a(f);
  assert_int_equal(jb_schedule_remove(f->board, "b"), JB_OK);
  assert_int_equal(jb_schedule_remove(f->board, "b"), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "no schedule named b");
}

static void with_every_schedule_removed_nothing_is_due(void **state) {
  jbt_fixture *f = *state;
  add_b_c_a(f);
  int64_t due;
  assert_int_equal(jb_schedule_remove(f->board, "b"), JB_OK);
  assert_int_equal(jb_schedule_remove(f->board, "a"), JB_OK);
  assert_int_equal(jb_schedule_remove(f->board, "c"), JB_OK);
  assert_int_equal(jb_schedule_next_due(&due, f->board), JB_OK);
  assert_int_equal(due, 0);
}

static void adding_an_existing_name_is_refused_and_changes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.every_ms = 5000;
  sc.job.name = "other";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_EEXISTS);
  jbt_assert_contains(jb_errmsg(), "schedule s already exists");
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

/* "s" every second from T0, ticked at T0 + 10 s, then replaced by the
 * same grid with another job name: the runs up to T0 + 10 s are done. */
static void tick_and_replace(jbt_fixture *f) {
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  assert_int_equal(tick(f->board, T0 + 10 * S_US), 1);
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.every_ms = 1000;
  sc.start_us = T0;
  sc.job.name = "report2";
  assert_int_equal(jb_schedule_add(f->board, &sc, JB_SCHEDULE_REPLACE),
                   JB_OK);
}

static void replacing_takes_the_new_template_and_keeps_the_runs(
    void **state) {
  jbt_fixture *f = *state;
  tick_and_replace(f);
  jb_schedule *s = get(f->board, "s");
  assert_string_equal(s->job.name, "report2");
  assert_int_equal(s->runs, 1);
  assert_int_equal(s->last_run_us, T0 + 10 * S_US);
  assert_int_equal(s->next_us, T0 + 11 * S_US);
  jb_schedule_free(s);
}

static void replacing_never_reposts_a_run(void **state) {
  jbt_fixture *f = *state;
  tick_and_replace(f);
  assert_int_equal(tick(f->board, T0 + 10 * S_US), 0);
}

/* A good schedule "s", every second. */
static jb_schedule good_schedule(void) {
  jb_schedule ok = JB_SCHEDULE_INIT;
  ok.name = "s";
  ok.every_ms = 1000;
  ok.job.name = "x";
  return ok;
}

/* One bad field of a schedule, and the message it must give. */
static void refused(jb_board *b, const jb_schedule *sc, const char *msg) {
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, b);
  int rc = jb_schedule_add(b, sc, 0);
  if (rc != JB_EINVAL)
    fail_msg("expected JB_EINVAL (%s), got %d: %s", msg, rc, jb_errmsg());
  jbt_assert_contains(jb_errmsg(), msg);
  jbt_snapshot_take(&after, b);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

static void bad_schedules_are_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jb_schedule ok = good_schedule();
  jb_schedule sc = ok;
  sc.name = "";
  refused(b, &sc, "schedule name: must not be empty");
  char longname[JB_SCHEDULE_NAME_MAX + 2];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  sc = ok, sc.name = longname;
  refused(b, &sc, "schedule name: longer than 200 bytes");
  sc = ok, sc.cron = "* * * * *";
  refused(b, &sc, "schedule s: give an interval (every_ms) or a cron spec, "
                  "not both");
  sc = ok, sc.every_ms = 0;
  refused(b, &sc, "one of them");
  sc = ok, sc.every_ms = 999;
  refused(b, &sc, "schedule s: every_ms: 999 is outside 1000..");
  sc = ok, sc.every_ms = 0, sc.cron = "* 25 * * *";
  refused(b, &sc, "schedule s: cron '* 25 * * *': field 2 (hour): 25 is "
                  "outside 0..23");
  sc = ok, sc.catch_up = (jb_catchup)7;
  refused(b, &sc, "catch_up: 7 is not");
  sc = ok, sc.start_us = -1;
  refused(b, &sc, "start_us: -1");
  sc = ok, sc.version = 9;
  refused(b, &sc, "schedule version 9 is not 1");
  sc = ok, sc.job.name = NULL;
  refused(b, &sc, "schedule s: job name: must not be empty");
  sc = ok, sc.job.unique_key = "k";
  refused(b, &sc, "job.unique_key: the schedule sets it");
  sc = ok, sc.job.delay_ms = 5;
  refused(b, &sc, "job.delay_ms");
  sc = ok, sc.job.priority = (jb_priority)9;
  refused(b, &sc, "schedule s: job priority: 9 is not a priority");
  sc = ok, sc.job.book_name = "b";
  refused(b, &sc, "book: give both");
  /* {"scheduled_at": 1}: the schedule's key. */
  static const char taken[] = "\x81\xacscheduled_at\x01";
  sc = ok, sc.job.details = taken, sc.job.details_len = sizeof taken - 1;
  refused(b, &sc, "job.details: the key \"scheduled_at\" is the schedule's");
  static const char notmap[] = "\x01";
  sc = ok, sc.job.details = notmap, sc.job.details_len = 1;
  refused(b, &sc, "job.details: must be a map");
}

static void schedule_add_with_unknown_flags_is_invalid_saying_so(
    void **state) {
  jbt_fixture *f = *state;
  jb_schedule ok = good_schedule();
  assert_int_equal(jb_schedule_add(f->board, &ok, 8), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "unknown flags");
}

static void schedule_add_without_a_board_or_a_schedule_is_invalid(
    void **state) {
  jbt_fixture *f = *state;
  jb_schedule ok = good_schedule();
  assert_int_equal(jb_schedule_add(NULL, &ok, 0), JB_EINVAL);
  assert_int_equal(jb_schedule_add(f->board, NULL, 0), JB_EINVAL);
}

static void schedule_tick_at_a_negative_time_is_invalid(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_schedule_tick(NULL, f->board, -5), JB_EINVAL);
}

static void schedule_remove_of_an_empty_name_is_invalid(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_schedule_remove(f->board, ""), JB_EINVAL);
}

/* --------------------------------------------------------------- check */

static void add_line(const char *line, void *payload) {
  char *lines = payload;
  size_t have = strlen(lines);
  snprintf(lines + have, 4096 - have, "%s\n", line);
}

/* Adds "s" every second from T0, then cuts its record short with LMDB
 * itself (no handle of ours open meanwhile). */
static void add_and_garble_a_schedule(jbt_fixture *f) {
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  jb_board_close(f->board);
  f->board = NULL;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  assert_int_equal(mdb_env_create(&env), 0);
  assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
  assert_int_equal(mdb_env_open(env, f->dir, 0, 0644), 0);
  assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
  assert_int_equal(mdb_dbi_open(txn, "schedules", 0, &dbi), 0);
  MDB_val k = {1, "s"}, v = {3, "bad"};
  assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
  assert_int_equal(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
}

static void check_reports_a_schedule_that_does_not_decode(void **state) {
  jbt_fixture *f = *state;
  add_and_garble_a_schedule(f);
  jb_check_stats st;
  char lines[4096] = "";
  int rc = jb_board_check(&st, f->board, add_line, lines);
  assert_int_equal(rc, JB_ECORRUPT);
  assert_int_equal(st.problems, 1);
  jbt_assert_contains(lines, "schedules: the record of s does not decode: a "
                             "record of 3 bytes");
}

static void a_tick_passes_over_a_schedule_that_does_not_decode(void **state) {
  jbt_fixture *f = *state;
  add_and_garble_a_schedule(f);
  assert_int_equal(tick(f->board, T0), 0);
}

static void schedule_get_of_a_record_that_does_not_decode_names_it(
    void **state) {
  jbt_fixture *f = *state;
  add_and_garble_a_schedule(f);
  jb_schedule *s = NULL;
  assert_int_equal(jb_schedule_get(&s, f->board, "s"), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), "schedule s: its record does not decode");
}

/* ---------------------------------------------------------------- race */

#define RACE_PROCS 3
#define RACE_SECONDS 3600

typedef struct {
  const char *dir;
  char out[512];
  int start_fd;
  int index;
} racer_args;

/* Claim and consume everything claimable, writing each job's run time
 * (seconds after T0) to `out`. */
static int drain(jb_board *b, const char *who, FILE *out) {
  for (;;) {
    char uuid[JB_UUID_STRLEN];
    jb_job *job = NULL;
    int rc = jb_claim_next(uuid, &job, NULL, b, who, NULL);
    if (rc == JB_ENOTFOUND) return 0;
    if (rc != JB_OK) {
      fprintf(stderr, "%s: claim-next: %s\n", who, jb_errmsg());
      return 1;
    }
    size_t len;
    const uint8_t *d = jb_job_details(job, &len);
    int64_t run = details_run(d, len);
    jb_job_free(job);
    if ((rc = jb_consume(b, uuid, who, 0, NULL)) != JB_OK) {
      fprintf(stderr, "%s: consume: %s\n", who, jb_errmsg());
      return 1;
    }
    fprintf(out, "%" PRId64 "\n", (run - T0) / S_US);
  }
}

/* One of the tickers: every simulated second in order, a tick and then a
 * drain (consuming frees each run's unique key, so only the tick's own
 * atomicity keeps a run from being posted twice). */
static int racer(void *arg) {
  racer_args *a = arg;
  FILE *out = fopen(a->out, "w");
  if (!out) return 10;
  char c, who[16];
  snprintf(who, sizeof who, "ticker-%d", a->index);
  if (read(a->start_fd, &c, 1) != 1) return 11;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 12;
  for (int s = 0; s <= RACE_SECONDS; s++) {
    size_t n;
    if (jb_schedule_tick(&n, b, T0 + s * S_US) != JB_OK) {
      fprintf(stderr, "%s: tick: %s\n", who, jb_errmsg());
      return 13;
    }
    if (drain(b, who, out)) return 14;
  }
  jb_board_close(b);
  return fclose(out) == 0 ? 0 : 15;
}

static void three_tickers_post_each_run_of_an_hour_exactly_once(
    void **state) {
  jbt_fixture *f = *state;
  add_every(f->board, 1000, T0, JB_CATCHUP_SKIP);
  int start[2];
  assert_int_equal(pipe(start), 0);
  racer_args args[RACE_PROCS];
  pid_t pids[RACE_PROCS];
  for (int i = 0; i < RACE_PROCS; i++) {
    args[i] = (racer_args){.dir = f->dir, .start_fd = start[0], .index = i};
    snprintf(args[i].out, sizeof args[i].out, "%s/runs-%d", f->dir, i);
    pids[i] = jbt_fork(racer, &args[i], 300);
  }
  for (int i = 0; i < RACE_PROCS; i++)
    assert_int_equal(write(start[1], "g", 1), 1);
  close(start[0]);
  close(start[1]);
  for (int i = 0; i < RACE_PROCS; i++) jbt_wait_ok(pids[i], 300000);
  /* What no ticker drained after its last tick. */
  char rest[512];
  snprintf(rest, sizeof rest, "%s/runs-rest", f->dir);
  FILE *out = fopen(rest, "w");
  assert_non_null(out);
  assert_int_equal(drain(f->board, "parent", out), 0);
  fclose(out);
  /* Runs 0 .. 3600: 3601 of them, each seen exactly once. */
  static int count[RACE_SECONDS + 1];
  memset(count, 0, sizeof count);
  long total = 0;
  for (int i = 0; i <= RACE_PROCS; i++) {
    char path[512];
    if (i < RACE_PROCS)
      snprintf(path, sizeof path, "%s", args[i].out);
    else
      snprintf(path, sizeof path, "%s", rest);
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    long s;
    while (fscanf(in, "%ld", &s) == 1) {
      if (s < 0 || s > RACE_SECONDS) fail_msg("run %ld is not in the hour", s);
      count[s]++;
      total++;
    }
    fclose(in);
  }
  for (int s = 0; s <= RACE_SECONDS; s++)
    if (count[s] != 1)
      fail_msg("run %d (T0 + %d s) was posted %d times", s, s, count[s]);
  assert_int_equal(total, RACE_SECONDS + 1);
  jb_schedule *s = get(f->board, "s");
  assert_int_equal(s->runs, RACE_SECONDS + 1);
  assert_int_equal(s->last_run_us, T0 + RACE_SECONDS * S_US);
  assert_int_equal(s->next_us, T0 + (RACE_SECONDS + 1) * S_US);
  jb_schedule_free(s);
  jbt_assert_check_ok(f->board);
}

int main(void) {
  jbt_watchdog(600);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cron_next_runs_match_the_table),
      cmocka_unit_test(cron_previous_run_at_or_just_after_a_run_is_the_run),
      cmocka_unit_test(cron_previous_runs_match_the_table),
      cmocka_unit_test(bad_cron_specs_are_refused_naming_field_and_value),
      T(interval_runs_are_posted_once_each_when_due),
      T(a_schedule_records_its_runs_the_last_and_the_next),
      T(next_due_is_the_time_of_the_next_run),
      T(interval_without_start_runs_one_interval_after_the_add),
      T(catch_up_skip_posts_only_the_latest_missed_run),
      T(catch_up_all_posts_every_missed_run_once),
      T(catch_up_all_posts_at_most_the_cap_per_tick),
      T(cron_catch_up_skip_posts_only_the_latest_missed_run),
      T(cron_catch_up_all_posts_every_missed_run),
      T(run_whose_unique_key_is_held_is_not_posted_again),
      T(added_schedule_reads_back_as_given),
      T(a_run_carries_the_schedules_job_template),
      T(schedules_list_in_name_order),
      T(a_removed_schedule_is_neither_got_nor_listed),
      T(removing_a_missing_schedule_is_not_found_naming_it),
      T(with_every_schedule_removed_nothing_is_due),
      T(adding_an_existing_name_is_refused_and_changes_nothing),
      T(replacing_takes_the_new_template_and_keeps_the_runs),
      T(replacing_never_reposts_a_run),
      T(bad_schedules_are_refused_naming_the_field),
      T(schedule_add_with_unknown_flags_is_invalid_saying_so),
      T(schedule_add_without_a_board_or_a_schedule_is_invalid),
      T(schedule_tick_at_a_negative_time_is_invalid),
      T(schedule_remove_of_an_empty_name_is_invalid),
      T(check_reports_a_schedule_that_does_not_decode),
      T(a_tick_passes_over_a_schedule_that_does_not_decode),
      T(schedule_get_of_a_record_that_does_not_decode_names_it),
      T(three_tickers_post_each_run_of_an_hour_exactly_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
