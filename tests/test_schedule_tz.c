/*
 * test_schedule_tz.c - schedules as cron users write them (jobboard.h,
 * "Periodic jobs"): names of months and weekdays, @reboot refused, time
 * zones (the zoneinfo reader against glibc's own conversion, runs across
 * the changes to and from daylight time in Europe/Berlin and
 * America/New_York, in the years of the files' tables and in those of
 * their rules), the overlap policy, and a schedule record of format 1 (as
 * a board of schema 11 holds it) read and ticked.
 *
 * Needs the system's zoneinfo (tzdata): /usr/share/zoneinfo. Expected
 * times are written out (UTC, from the zones' published rules), not
 * computed by the code under test; the reader is compared with glibc's
 * localtime_r, which this single-threaded test may point at a zone with
 * TZ.
 */
#include "helpers.h"
#include "codec/cron.h"
#include "codec/tz.h"
#include "store/store.h"

#include <lmdb.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_US INT64_C(1000000)

/* UTC y-m-d h:mi as microseconds, by libc. */
static int64_t utc(int y, int mo, int d, int h, int mi) {
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                  .tm_hour = h, .tm_min = mi};
  return (int64_t)timegm(&tm) * S_US;
}

static void parse_ok(jb_cron *c, const char *spec) {
  char why[200] = "";
  if (!jb__cron_parse(c, spec, strlen(spec), why, sizeof why))
    fail_msg("'%s' refused: %s", spec, why);
}

static const jb_tz *zone(const char *name) {
  char why[300] = "";
  const jb_tz *z = jb__tz_get(name, strlen(name), why, sizeof why);
  if (z == NULL) fail_msg("zone %s: %s (is tzdata installed?)", name, why);
  return z;
}

/* ------------------------------------------------------------ names */

/* Specs with names and the same specs in numbers parse to the same bits. */
static void names_of_months_and_weekdays_are_their_numbers(void **state) {
  (void)state;
  static const struct {
    const char *named, *numbered;
  } t[] = {
      {"0 9 * * MON-FRI", "0 9 * * 1-5"},
      {"0 9 * * mon,wed,Fri", "0 9 * * 1,3,5"},
      {"0 9 * * SUN", "0 9 * * 0"},
      {"0 9 * * sat-sun", "0 9 * * 6,0"},
      {"0 9 * * FRI-SUN", "0 9 * * 5-7"},
      {"0 9 * * MON-SAT/2", "0 9 * * 1-6/2"},
      {"0 0 1 JAN *", "0 0 1 1 *"},
      {"0 0 1 jun-AUG *", "0 0 1 6-8 *"},
      {"0 0 1 JAN,apr,Jul,OCT *", "0 0 1 1,4,7,10 *"},
      {"0 0 1 DEC MON", "0 0 1 12 1"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    jb_cron a, b;
    parse_ok(&a, t[i].named);
    parse_ok(&b, t[i].numbered);
    if (a.month != b.month || a.dow != b.dow || a.minute != b.minute ||
        a.hour != b.hour || a.dom != b.dom)
      fail_msg("'%s' is not '%s'", t[i].named, t[i].numbered);
  }
}

static void bad_names_and_reboot_are_refused_clearly(void **state) {
  (void)state;
  static const struct {
    const char *spec, *msg;
  } t[] = {
      {"0 9 * * MOX", "field 5 (day of week): 'MOX' is not a name (SUN MON"},
      {"0 9 * * MONDAY", "'MONDAY' is not a name"},
      {"0 9 * JANUARY *", "field 4 (month): 'JANUARY' is not a name (JAN"},
      {"0 9 * MON *", "field 4 (month): 'MON' is not a name"},
      {"0 9 MON * *", "field 3 (day of month): 'MON' is not a number"},
      {"0 JAN * * *", "field 2 (hour): 'JAN' is not a number"},
      {"0 9 * * FRI-MON", "field 5 (day of week): the range FRI-MON runs "
                          "backwards"},
      {"@reboot", "@reboot is not taken"},
      {"@REBOOT", "is not @hourly"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    jb_cron c;
    char why[300] = "";
    if (jb__cron_parse(&c, t[i].spec, strlen(t[i].spec), why, sizeof why))
      fail_msg("'%s' was accepted", t[i].spec);
    jbt_assert_contains(why, t[i].msg);
  }
}

static void aliases_stand_for_their_specs(void **state) {
  (void)state;
  static const char *const t[][2] = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},
      {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
      {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
      {"@annually", "0 0 1 1 *"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    jb_cron a, b;
    parse_ok(&a, t[i][0]);
    parse_ok(&b, t[i][1]);
    assert_memory_equal(&a, &b, sizeof a);
  }
}

/* ------------------------------------------------------------ zones */

/* The reader's offsets are glibc's, hour by hour from 1970 to 2100 (the
 * years past 2037 come from the files' POSIX rules). */
static void zone_offsets_are_glibcs(void **state) {
  (void)state;
  static const char *const zones[] = {
      "Europe/Berlin", "America/New_York", "Australia/Sydney",
      "Asia/Kolkata", "America/Sao_Paulo", "Pacific/Chatham",
      "Europe/Dublin", "Africa/Casablanca"};
  for (size_t zi = 0; zi < sizeof zones / sizeof zones[0]; zi++) {
    const jb_tz *z = zone(zones[zi]);
    setenv("TZ", zones[zi], 1);
    tzset();
    for (int64_t t = 0; t < INT64_C(4102444800); t += 3600 * 7 + 1800) {
      time_t tt = (time_t)t;
      struct tm tm;
      localtime_r(&tt, &tm);
      if (jb__tz_offset(z, t) != tm.tm_gmtoff)
        fail_msg("%s at %" PRId64 ": %d, glibc says %ld", zones[zi], t,
                 jb__tz_offset(z, t), tm.tm_gmtoff);
    }
  }
  unsetenv("TZ");
  tzset();
}

static void unknown_and_malformed_zones_are_refused(void **state) {
  (void)state;
  static const struct {
    const char *name, *msg;
  } t[] = {
      {"Mars/Olympus", "no time zone 'Mars/Olympus' in /usr/share/zoneinfo"},
      {"../etc/passwd", "is not a time zone name"},
      {"/etc/localtime", "is not a time zone name"},
      {"Europe//Berlin", "is not a time zone name"},
      {"Europe/Ber lin", "is not a time zone name"},
      {"", "a time zone name is 1..64 bytes"},
      {"Europe", "no time zone 'Europe'"}, /* a directory */
      {"zone1970.tab", "is not a time zone name"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char why[300] = "";
    if (jb__tz_get(t[i].name, strlen(t[i].name), why, sizeof why))
      fail_msg("zone '%s' was accepted", t[i].name);
    jbt_assert_contains(why, t[i].msg);
  }
  char why[300];
  assert_non_null(jb__tz_get("UTC", 3, why, sizeof why));
  assert_int_equal(jb__tz_offset(jb__tz_get("UTC", 3, why, sizeof why), 0), 0);
}

/* Spec, zone, a time, and the next run after it (UTC). */
static const struct {
  const char *spec, *zone;
  int after[5], next[5];
  const char *why;
} nexts[] = {
    /* Europe/Berlin 2026: 02:00 CET -> 03:00 CEST on 29 March (01:00Z),
     * 03:00 CEST -> 02:00 CET on 25 October (01:00Z). */
    {"30 2 * * *", "Europe/Berlin", {2026, 3, 28, 2, 0}, {2026, 3, 29, 1, 0},
     "02:30 skipped: at the change, 03:00 CEST"},
    {"30 2 * * *", "Europe/Berlin", {2026, 3, 29, 1, 0}, {2026, 3, 30, 0, 30},
     "the day after: 02:30 CEST"},
    {"0,30 2 * * *", "Europe/Berlin", {2026, 3, 28, 23, 0},
     {2026, 3, 29, 1, 0}, "two skipped minutes: one run at the change"},
    {"0,30 2 * * *", "Europe/Berlin", {2026, 3, 29, 1, 0},
     {2026, 3, 30, 0, 0}, "...and not again"},
    {"30 2 * * *", "Europe/Berlin", {2026, 10, 24, 12, 0},
     {2026, 10, 25, 0, 30}, "02:30 twice: the first, CEST"},
    {"30 2 * * *", "Europe/Berlin", {2026, 10, 25, 0, 30},
     {2026, 10, 26, 1, 30}, "...not the second (CET): the next day"},
    {"30 * * * *", "Europe/Berlin", {2026, 10, 25, 0, 30},
     {2026, 10, 25, 1, 30}, "hourly: the repeated hour runs twice"},
    {"30 * * * *", "Europe/Berlin", {2026, 3, 29, 0, 30},
     {2026, 3, 29, 1, 30}, "hourly: no run in the skipped hour"},
    {"*/15 2 * * *", "Europe/Berlin", {2026, 3, 28, 23, 0},
     {2026, 3, 30, 0, 0}, "every minute of 2 a.m.: none that day"},
    {"0 9 * * MON-FRI", "Europe/Berlin", {2026, 1, 2, 12, 0},
     {2026, 1, 5, 8, 0}, "names, CET"},
    {"0 9 * * MON-FRI", "Europe/Berlin", {2026, 7, 3, 12, 0},
     {2026, 7, 6, 7, 0}, "names, CEST"},
    {"30 2 * * *", "Europe/Berlin", {2050, 3, 26, 12, 0},
     {2050, 3, 27, 1, 0}, "2050 (the file's rule): skipped 02:30"},
    {"30 2 * * *", "Europe/Berlin", {2050, 10, 29, 12, 0},
     {2050, 10, 30, 0, 30}, "2050 (the file's rule): repeated 02:30"},
    /* America/New_York 2026: 02:00 EST -> 03:00 EDT on 8 March (07:00Z),
     * 02:00 EDT -> 01:00 EST on 1 November (06:00Z). */
    {"30 1 * * *", "America/New_York", {2026, 10, 31, 12, 0},
     {2026, 11, 1, 5, 30}, "01:30 twice: the first, EDT"},
    {"30 1 * * *", "America/New_York", {2026, 11, 1, 5, 30},
     {2026, 11, 2, 6, 30}, "...not the second (EST): the next day"},
    {"30 2 * * *", "America/New_York", {2026, 3, 7, 12, 0},
     {2026, 3, 8, 7, 0}, "02:30 skipped: at the change, 03:00 EDT"},
    {"30 2 * * *", "America/New_York", {2026, 3, 8, 7, 0},
     {2026, 3, 9, 6, 30}, "the day after: 02:30 EDT"},
    {"0 12 * * *", "America/New_York", {2026, 7, 1, 0, 0},
     {2026, 7, 1, 16, 0}, "noon EDT"},
    {"0 0 1 JAN *", "America/New_York", {2026, 6, 1, 0, 0},
     {2027, 1, 1, 5, 0}, "new year, EST"},
};

static void next_runs_follow_the_zone_across_dst(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof nexts / sizeof nexts[0]; i++) {
    jb_cron c;
    parse_ok(&c, nexts[i].spec);
    const int *a = nexts[i].after, *n = nexts[i].next;
    int64_t after = utc(a[0], a[1], a[2], a[3], a[4]), got = 0;
    int64_t want = utc(n[0], n[1], n[2], n[3], n[4]);
    if (!jb__cron_next_tz(&c, zone(nexts[i].zone), after, &got) ||
        got != want)
      fail_msg("'%s' in %s after %d-%02d-%02dT%02d:%02dZ (%s): %" PRId64
               " s from the expected", nexts[i].spec, nexts[i].zone, a[0],
               a[1], a[2], a[3], a[4], nexts[i].why, (got - want) / S_US);
  }
}

/* The previous run at or before each expected next run is that run, and
 * just before it, an earlier one. */
static void previous_runs_agree_with_next_runs(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof nexts / sizeof nexts[0]; i++) {
    jb_cron c;
    parse_ok(&c, nexts[i].spec);
    const jb_tz *z = zone(nexts[i].zone);
    const int *n = nexts[i].next;
    int64_t want = utc(n[0], n[1], n[2], n[3], n[4]), got = 0, before = 0;
    if (!jb__cron_prev_tz(&c, z, want, &got) || got != want)
      fail_msg("prev of '%s' in %s at its run (%s): %" PRId64 " s off",
               nexts[i].spec, nexts[i].zone, nexts[i].why,
               (got - want) / S_US);
    assert_true(jb__cron_prev_tz(&c, z, want - 1, &before));
    assert_true(before < want);
    int64_t again = 0;
    assert_true(jb__cron_next_tz(&c, z, before, &again));
    if (again != want)
      fail_msg("'%s' in %s (%s): the run after the previous one is %" PRId64
               " s off", nexts[i].spec, nexts[i].zone, nexts[i].why,
               (again - want) / S_US);
  }
}

/* A day of "30 1 * * *" in New York around the fall-back, ticked every
 * minute: one run on 1 November, not two. */
static void a_repeated_time_runs_once_when_ticked_every_minute(void **state) {
  jbt_fixture *f = *state;
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.cron = "30 1 * * *";
  sc.tz = "America/New_York";
  sc.start_us = utc(2026, 11, 1, 0, 0);
  sc.job.name = "report";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
  size_t total = 0;
  for (int64_t t = utc(2026, 11, 1, 0, 0); t <= utc(2026, 11, 1, 23, 59);
       t += 60 * S_US) {
    size_t n = 0;
    assert_int_equal(jb_schedule_tick(&n, f->board, t), JB_OK);
    if (n) assert_int_equal(t, utc(2026, 11, 1, 5, 30));
    total += n;
  }
  assert_int_equal(total, 1);
  jb_schedule *got = NULL;
  assert_int_equal(jb_schedule_get(&got, f->board, "s"), JB_OK);
  assert_string_equal(got->tz, "America/New_York");
  assert_int_equal(got->next_us, utc(2026, 11, 2, 6, 30));
  jb_schedule_free(got);
}

static void adding_a_bad_zone_is_refused_naming_it(void **state) {
  jbt_fixture *f = *state;
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.cron = "0 0 * * *";
  sc.tz = "Europe/Atlantis";
  sc.job.name = "report";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "schedule s: tz: no time zone "
                                   "'Europe/Atlantis'");
  sc.cron = NULL;
  sc.every_ms = 60000;
  sc.tz = "Europe/Berlin";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "a time zone is for a cron spec");
  sc.tz = NULL;
  sc.overlap = (jb_overlap)7;
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "overlap: 7 is not");
  jb_schedule *got = NULL;
  assert_int_equal(jb_schedule_get(&got, f->board, "s"), JB_ENOTFOUND);
}

/* ------------------------------------------------------------ overlap */

static size_t tick(jb_board *b, int64_t now) {
  size_t n = 99;
  if (jb_schedule_tick(&n, b, now) != JB_OK) fail_msg("tick: %s", jb_errmsg());
  return n;
}

static void add_minutely(jb_board *b, jb_overlap overlap, jb_catchup cu,
                         int64_t start) {
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.cron = "* * * * *";
  sc.overlap = overlap;
  sc.catch_up = cu;
  sc.start_us = start;
  sc.job.name = "report";
  if (jb_schedule_add(b, &sc, 0) != JB_OK) fail_msg("add: %s", jb_errmsg());
}

static uint64_t skipped_of(jb_board *b) {
  jb_schedule *s = NULL;
  assert_int_equal(jb_schedule_get(&s, b, "s"), JB_OK);
  uint64_t n = s->skipped;
  jb_schedule_free(s);
  return n;
}

static void overlap_skip_posts_no_run_while_one_is_unfinished(void **state) {
  jbt_fixture *f = *state;
  int64_t t0 = utc(2026, 1, 1, 0, 0), m = 60 * S_US;
  add_minutely(f->board, JB_OVERLAP_SKIP, JB_CATCHUP_SKIP, t0);
  assert_int_equal(tick(f->board, t0), 1);
  assert_int_equal(tick(f->board, t0 + m), 0); /* queued still */
  assert_int_equal(skipped_of(f->board), 1);
  char uuid[2][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(f->board, uuid, 2), 1);
  uint64_t token = 0;
  assert_int_equal(jb_claim(&token, f->board, uuid[0], "w", NULL), JB_OK);
  assert_int_equal(tick(f->board, t0 + 2 * m), 0); /* running */
  assert_int_equal(skipped_of(f->board), 2);
  assert_int_equal(jb_consume(f->board, uuid[0], "w", token, NULL), JB_OK);
  assert_int_equal(tick(f->board, t0 + 3 * m), 1); /* finished */
  assert_int_equal(skipped_of(f->board), 2);
  size_t count = 0;
  assert_int_equal(jb_board_count(&count, f->board, 0), JB_OK);
  assert_int_equal(count, 1);
  /* A skipped run is dealt with: it is not posted later. */
  jb_schedule *s = NULL;
  assert_int_equal(jb_schedule_get(&s, f->board, "s"), JB_OK);
  assert_int_equal(s->runs, 2);
  assert_int_equal(s->overlap, JB_OVERLAP_SKIP);
  assert_int_equal(s->next_us, t0 + 4 * m);
  jb_schedule_free(s);
}

static void overlap_skip_with_catch_up_all_posts_one_of_the_missed(
    void **state) {
  jbt_fixture *f = *state;
  int64_t t0 = utc(2026, 1, 1, 0, 0), m = 60 * S_US;
  add_minutely(f->board, JB_OVERLAP_SKIP, JB_CATCHUP_ALL, t0);
  assert_int_equal(tick(f->board, t0 + 4 * m), 1);
  assert_int_equal(skipped_of(f->board), 4);
}

static void overlap_queue_posts_every_run_as_before(void **state) {
  jbt_fixture *f = *state;
  int64_t t0 = utc(2026, 1, 1, 0, 0), m = 60 * S_US;
  add_minutely(f->board, JB_OVERLAP_QUEUE, JB_CATCHUP_SKIP, t0);
  assert_int_equal(tick(f->board, t0), 1);
  assert_int_equal(tick(f->board, t0 + m), 1);
  assert_int_equal(tick(f->board, t0 + 2 * m), 1);
  assert_int_equal(skipped_of(f->board), 0);
}

/* A schedule named "s:x" does not make "s" busy (its keys share the
 * prefix "schedule:s:"). */
static void another_schedules_runs_do_not_make_it_busy(void **state) {
  jbt_fixture *f = *state;
  int64_t t0 = utc(2026, 1, 1, 0, 0), m = 60 * S_US;
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s:x";
  sc.cron = "* * * * *";
  sc.start_us = t0;
  sc.job.name = "other";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
  assert_int_equal(tick(f->board, t0), 1);
  add_minutely(f->board, JB_OVERLAP_SKIP, JB_CATCHUP_SKIP, t0 + m);
  assert_int_equal(tick(f->board, t0 + m), 2);
  assert_int_equal(skipped_of(f->board), 0);
}

/* ------------------------------------------------------------ format 1 */

/* Rewrites record "s" as a release of schema 11 wrote it: format 1, no
 * zone, no overlap policy, no skipped count (LMDB itself, no handle of
 * ours open meanwhile). */
static void make_format_1(jbt_fixture *f) {
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
  MDB_val k = {1, "s"}, v;
  assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
  jb_schedrec r;
  memcpy(&r, v.mv_data, sizeof r);
  assert_int_equal(r.format, 2);
  size_t len = v.mv_size - r.tz_len - 8;
  uint8_t *old = malloc(len);
  assert_non_null(old);
  memcpy(old, v.mv_data, len);
  r.format = 1;
  r.tz_len = 0;
  r.overlap = 0;
  memcpy(old, &r, sizeof r);
  MDB_val nv = {len, old};
  assert_int_equal(mdb_put(txn, dbi, &k, &nv, 0), 0);
  assert_int_equal(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  free(old);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
}

static void a_format_1_record_reads_and_ticks_as_utc_and_queue(
    void **state) {
  jbt_fixture *f = *state;
  int64_t t0 = utc(2026, 1, 1, 0, 0), m = 60 * S_US;
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = "s";
  sc.cron = "30 * * * *";
  sc.start_us = t0;
  sc.job.name = "report";
  assert_int_equal(jb_schedule_add(f->board, &sc, 0), JB_OK);
  make_format_1(f);
  jb_schedule *s = NULL;
  assert_int_equal(jb_schedule_get(&s, f->board, "s"), JB_OK);
  assert_null(s->tz);
  assert_int_equal(s->overlap, JB_OVERLAP_QUEUE);
  assert_int_equal(s->next_us, t0 + 30 * m);
  jb_schedule_free(s);
  assert_int_equal(tick(f->board, t0 + 30 * m), 1);
  assert_int_equal(tick(f->board, t0 + 90 * m), 1);
  assert_int_equal(jb_schedule_get(&s, f->board, "s"), JB_OK);
  assert_int_equal(s->runs, 2);
  assert_int_equal(s->next_us, t0 + 150 * m);
  jb_schedule_free(s);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
}

#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_of_months_and_weekdays_are_their_numbers),
      cmocka_unit_test(bad_names_and_reboot_are_refused_clearly),
      cmocka_unit_test(aliases_stand_for_their_specs),
      cmocka_unit_test(zone_offsets_are_glibcs),
      cmocka_unit_test(unknown_and_malformed_zones_are_refused),
      cmocka_unit_test(next_runs_follow_the_zone_across_dst),
      cmocka_unit_test(previous_runs_agree_with_next_runs),
      T(a_repeated_time_runs_once_when_ticked_every_minute),
      T(adding_a_bad_zone_is_refused_naming_it),
      T(overlap_skip_posts_no_run_while_one_is_unfinished),
      T(overlap_skip_with_catch_up_all_posts_one_of_the_missed),
      T(overlap_queue_posts_every_run_as_before),
      T(another_schedules_runs_do_not_make_it_busy),
      T(a_format_1_record_reads_and_ticks_as_utc_and_queue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
