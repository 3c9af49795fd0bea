/*
 * test_snooze.c - snoozes and deadlines to start. jb_snooze gives a claim
 * back for a while without spending an attempt (the job is delayed, its
 * snoozes count apart, a SNOOZED event is logged), only for the claim's
 * owner and token, and is refused past the job's max_snoozes with the
 * claim standing. A job posted with expires_ms that nobody claimed by its
 * deadline ends EXPIRED (history "expired", a DEADLINE event), or as a
 * dead letter of cause "expired" with JB_POST_EXPIRES_DEAD; it is never
 * claimed after its deadline (by uuid: refused, and it ends; claim-next:
 * never returned), a claim before it takes it out of the `expiry` index,
 * and a claim-next ends at most JB_EXPIRE_MAX of them. Bad options are
 * refused naming the field, nothing written; check verifies the index.
 *
 * Deadlines and due times are wall-clock times: the tests fix this
 * process's wall clock (jb__test_clock_fix) so "before" and "after" are
 * exact.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/life.h"
#include "store/txn.h"

#include <stddef.h>
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

static void post_opts(char u[JB_UUID_STRLEN], jb_board *b, const char *name,
                      uint32_t max_snoozes, int64_t expires_ms,
                      unsigned flags) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.max_snoozes = max_snoozes;
  p.expires_ms = expires_ms;
  p.flags = flags;
  int rc = jb_job_post(u, b, &p);
  if (rc != JB_OK) fail_msg("post %s: %s", name, jb_errmsg());
}

static uint64_t claim_ok(jb_board *b, const char *uuid, const char *who) {
  uint64_t token = 0;
  int rc = jb_claim(&token, b, uuid, who, NULL);
  if (rc != JB_OK) fail_msg("claim %s as %s: %s", uuid, who, jb_errmsg());
  return token;
}

static jb_job *get(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, b, uuid), JB_OK);
  return j;
}

/* The history record of `uuid`: its end and reason (copied). */
static jb_end ended_as(jb_board *b, const char *uuid, char *reason,
                       size_t size) {
  jb_completion *c = NULL;
  int rc = jb_job_completion(&c, b, uuid);
  if (rc != JB_OK) fail_msg("history of %s: %s", uuid, jb_errmsg());
  jb_end e = c->end;
  if (reason) snprintf(reason, size, "%s", c->reason ? c->reason : "");
  jb_completion_free(c);
  return e;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

/* ---------------------------------------------------------------- snooze */

static void a_snooze_delays_the_job_and_spends_no_attempt(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "s", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w");
  uint64_t from = log_next(f->board);
  assert_int_equal(jb_snooze(f->board, u, "w", t, 30000), JB_OK);
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  assert_int_equal(jb_job_attempts(j), 0);
  assert_int_equal(jb_job_snoozes(j), 1);
  assert_true(jb_job_not_before(j) == T0 + 30 * SEC);
  jb_job_free(j);
  /* Not claimable before its due time, by uuid or claim-next. */
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ENOTDUE);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL),
                   JB_ENOTFOUND);
  /* The log says SNOOZED, naming the owner. */
  jb_event ev[4];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, from, 4), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ev[0].type, JB_EVENT_SNOOZED);
  assert_string_equal(ev[0].owner, "w");
  assert_string_equal(jb_event_type_name(JB_EVENT_SNOOZED), "SNOOZED");
  jbt_assert_check_ok_delayed(f->board, 1);
  /* Due: claimed again, snoozed again (delay 0: at once), counted. */
  clock_at(T0 + 30 * SEC);
  t = claim_ok(f->board, u, "w");
  assert_int_equal(jb_snooze(f->board, u, "w", 0, 0), JB_OK);
  j = get(f->board, u);
  assert_int_equal(jb_job_snoozes(j), 2);
  assert_int_equal(jb_job_attempts(j), 0);
  jb_job_free(j);
  /* An abandon spends an attempt and leaves the snoozes as they are. */
  t = claim_ok(f->board, u, "w");
  assert_int_equal(jb_abandon(f->board, u, "w", t), JB_OK);
  j = get(f->board, u);
  assert_int_equal(jb_job_snoozes(j), 2);
  assert_int_equal(jb_job_attempts(j), 1);
  jb_job_free(j);
  jbt_assert_check_ok(f->board);
  /* The history record keeps both counts. */
  t = claim_ok(f->board, u, "w");
  assert_int_equal(jb_consume(f->board, u, "w", t, NULL), JB_OK);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->snoozes, 2);
  assert_int_equal(c->attempts, 1);
  jb_completion_free(c);
  uint64_t ctr[16] = {0};
  jb_stats st = JB_STATS_INIT;
  assert_int_equal(jb_stats_read(&st, f->board), JB_OK);
  memcpy(ctr, st.events_total, sizeof ctr);
  assert_int_equal(ctr[JB_EVENT_SNOOZED], 2);
  jb_stats_clear(&st);
}

static void only_the_claims_owner_and_token_may_snooze(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "s", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_snooze(f->board, u, "w", 0, 1000), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "snooze");
  uint64_t t = claim_ok(f->board, u, "w");
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_snooze(f->board, u, "other", 0, 1000), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "claimed by w");
  assert_int_equal(jb_snooze(f->board, u, "w", t + 1, 1000), JB_ENOTOWNER);
  assert_int_equal(jb_snooze(f->board, u, "w", t, -1), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "snooze delay");
  assert_int_equal(jb_snooze(f->board, u, "w", t, JB_DELAY_MAX_MS + 1),
                   JB_EINVAL);
  assert_int_equal(jb_snooze(f->board, "nope", "w", t, 1), JB_EINVAL);
  assert_int_equal(jb_snooze(NULL, u, "w", t, 1), JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

static void past_max_snoozes_it_is_refused_and_the_claim_stands(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_opts(u, f->board, "s", 2, 0, 0);
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_max_snoozes(j), 2);
  jb_job_free(j);
  for (int i = 0; i < 2; i++) {
    claim_ok(f->board, u, "w");
    assert_int_equal(jb_snooze(f->board, u, "w", 0, 0), JB_OK);
  }
  uint64_t t = claim_ok(f->board, u, "w");
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_snooze(f->board, u, "w", t, 1000), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "max_snoozes");
  jbt_snapshot_assert_unchanged(&before, f->board);
  j = get(f->board, u);
  assert_int_equal(jb_job_state(j), JB_STATE_CLAIMED);
  assert_int_equal(jb_job_snoozes(j), 2);
  jb_job_free(j);
  assert_int_equal(jb_consume(f->board, u, "w", t, NULL), JB_OK);
  jbt_assert_check_ok(f->board);
}

/* A job posted with version 2 of jb_post (no max_snoozes) reads as
 * before, and snoozes without limit; the record keeps its other fields. */
static void an_older_post_and_its_record_still_read(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.version = 2;
  p.name = "old";
  p.max_attempts = 3;
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_job_post(u, f->board, &p), JB_OK);
  for (int i = 0; i < 5; i++) {
    uint64_t t = claim_ok(f->board, u, "w");
    assert_int_equal(jb_progress(f->board, u, "w", t, 50, "half"), JB_OK);
    assert_int_equal(jb_snooze(f->board, u, "w", t, 0), JB_OK);
  }
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_snoozes(j), 5);
  assert_int_equal(jb_job_max_attempts(j), 3);
  double pct = 0;
  assert_true(jb_job_progress(j, &pct, NULL, NULL));
  assert_true(pct == 50.0);
  jb_job_free(j);
  jbt_assert_check_ok(f->board);
}

/* jobx records: format 1 and 2 read as before; format 3 round-trips with
 * and without its progress part; a bad flag does not decode. */
static void jobx_formats_round_trip(void **state) {
  (void)state;
  uint8_t buf[JB_JOBX_MAXLEN];
  jb_jobx x = {.rec = {.format = 1, .attempts = 4}}, y;
  size_t n = jb__jobx_encode(&x, buf);
  assert_int_equal(buf[0], 1);
  assert_int_equal(jb__jobx_decode(&y, buf, n), 0);
  assert_int_equal(y.rec.attempts, 4);
  assert_int_equal(y.snz.snoozes, 0);
  x.has_progress = true;
  x.prog.permille = 500;
  n = jb__jobx_encode(&x, buf);
  assert_int_equal(buf[0], 2);
  assert_int_equal(jb__jobx_decode(&y, buf, n), 0);
  assert_true(y.has_progress && y.prog.permille == 500);
  x.snz.snoozes = 7;
  x.snz.deadline_us = 123;
  n = jb__jobx_encode(&x, buf);
  assert_int_equal(buf[0], 3);
  assert_int_equal(jb__jobx_decode(&y, buf, n), 0);
  assert_true(y.has_progress && y.prog.permille == 500);
  assert_int_equal(y.snz.snoozes, 7);
  assert_true(y.snz.deadline_us == 123);
  x.has_progress = false;
  n = jb__jobx_encode(&x, buf);
  assert_int_equal(jb__jobx_decode(&y, buf, n), 0);
  assert_false(y.has_progress);
  assert_int_equal(y.snz.snoozes, 7);
  assert_int_equal(jb__jobx_decode(&y, buf, n - 1), -1);
  buf[sizeof(jb_jobxrec) + offsetof(jb_jobxsnz, flags)] = 0x80;
  assert_int_equal(jb__jobx_decode(&y, buf, n), -1);
}

/* ------------------------------------------------------------- deadlines */

static void an_unclaimed_job_expires_at_its_deadline(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], d[JB_UUID_STRLEN];
  post_opts(u, f->board, "e", 0, 10000, 0);
  post_opts(d, f->board, "e", 0, 10000, JB_POST_EXPIRES_DEAD);
  jb_job *j = get(f->board, u);
  assert_true(jb_job_deadline(j) == T0 + 10 * SEC);
  jb_job_free(j);
  jbt_assert_check_ok(f->board);
  clock_at(T0 + 10 * SEC);
  uint64_t from = log_next(f->board);
  /* Claim-next never returns them: it ends them. */
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL),
                   JB_ENOTFOUND);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_COMPLETE);
  char why[64];
  assert_int_equal(ended_as(f->board, u, NULL, 0), JB_END_EXPIRED);
  assert_string_equal(jb_end_name(JB_END_EXPIRED), "expired");
  assert_int_equal(ended_as(f->board, d, why, sizeof why), JB_END_DEAD);
  assert_string_equal(why, "expired");
  jb_dead_letter *dl = NULL;
  assert_int_equal(jb_dead_get(&dl, f->board, d), JB_OK);
  assert_int_equal(dl->cause, JB_DEAD_EXPIRED);
  assert_string_equal(dl->reason, "expired");
  assert_string_equal(jb_dead_cause_name(JB_DEAD_EXPIRED), "expired");
  jb_dead_free(dl);
  jb_event ev[4];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, from, 4), JB_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ev[0].type, JB_EVENT_DEADLINE);
  assert_int_equal(ev[1].type, JB_EVENT_DEADLINE);
  jbt_assert_check_ok(f->board);
}

static void a_claim_by_uuid_after_the_deadline_is_refused_and_ends_it(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_opts(u, f->board, "e", 0, 5000, 0);
  clock_at(T0 + 5 * SEC - 1);
  jbt_assert_check_ok(f->board);
  clock_at(T0 + 5 * SEC);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "deadline");
  assert_int_equal(ended_as(f->board, u, NULL, 0), JB_END_EXPIRED);
  jbt_assert_check_ok(f->board);
  /* Counted: the DEADLINE event, and the end at ends_total[8 & 7]. */
  jb_stats st = JB_STATS_INIT;
  assert_int_equal(jb_stats_read(&st, f->board), JB_OK);
  assert_int_equal(st.events_total[JB_EVENT_DEADLINE], 1);
  assert_int_equal(st.ends_total[JB_END_EXPIRED & 7], 1);
  jb_stats_clear(&st);
}

static void a_claim_before_the_deadline_takes_it_out_of_the_index(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  post_opts(u, f->board, "e", 0, 5000, 0);
  post_opts(c, f->board, "e", 0, 5000, 0);
  clock_at(T0 + 5 * SEC - 1);
  uint64_t t = claim_ok(f->board, u, "w");
  jb_job *j = get(f->board, u);
  assert_true(jb_job_deadline(j) == 0);
  jb_job_free(j);
  /* Cancelled before its deadline: it leaves the index too. */
  assert_int_equal(jb_job_cancel(f->board, c, 0), JB_OK);
  jbt_assert_check_ok(f->board);
  /* Past the deadline a snooze gives it back: it was started, it stays. */
  clock_at(T0 + 6 * SEC);
  assert_int_equal(jb_snooze(f->board, u, "w", t, 0), JB_OK);
  t = claim_ok(f->board, u, "w");
  assert_int_equal(jb_consume(f->board, u, "w", t, NULL), JB_OK);
  assert_int_equal(ended_as(f->board, u, NULL, 0), JB_END_CONSUMED);
  jbt_assert_check_ok(f->board);
}

static void a_claim_next_ends_a_bounded_number(void **state) {
  jbt_fixture *f = *state;
  size_t n = JB_EXPIRE_MAX + 10;
  jb_post *p = calloc(n + 1, sizeof *p);
  char(*uu)[JB_UUID_STRLEN] = calloc(n + 1, sizeof *uu);
  assert_non_null(p);
  assert_non_null(uu);
  for (size_t i = 0; i < n; i++) {
    p[i] = (jb_post)JB_POST_INIT;
    p[i].name = "e";
    p[i].expires_ms = 1000;
  }
  assert_int_equal(jb_job_post_batch(uu, f->board, p, n), JB_OK);
  jbt_post(uu[n], f->board, "plain", JB_PRIORITY_VERY_LOW);
  clock_at(T0 + 2 * SEC);
  /* The first claim-next ends JB_EXPIRE_MAX in its sweep, then the rest
   * as its picks find them, and claims the plain job. */
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL),
                   JB_OK);
  assert_string_equal(got, uu[n]);
  size_t expired = 0;
  for (size_t i = 0; i < n; i++)
    expired += ended_as(f->board, uu[i], NULL, 0) == JB_END_EXPIRED;
  assert_int_equal(expired, n);
  jbt_assert_check_ok(f->board);
  free(p);
  free(uu);
}

static void bad_post_options_are_refused_and_write_nothing(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  struct {
    int64_t expires_ms;
    unsigned flags;
    const char *names;
  } bad[] = {
      {-1, 0, "expires_ms"},
      {JB_DELAY_MAX_MS + 1, 0, "expires_ms"},
      {0, JB_POST_EXPIRES_DEAD, "JB_POST_EXPIRES_DEAD"},
      {1000, 0x80, "flags"},
  };
  char u[JB_UUID_STRLEN];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "bad";
    p.expires_ms = bad[i].expires_ms;
    p.flags = bad[i].flags;
    assert_int_equal(jb_job_post(u, f->board, &p), JB_EINVAL);
    jbt_assert_contains(jb_errmsg(), bad[i].names);
    assert_int_equal(jb_post_check(&p, 0), JB_EINVAL);
  }
  jb_post p = JB_POST_INIT;
  p.version = 4;
  p.name = "bad";
  assert_int_equal(jb_job_post(u, f->board, &p), JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* check reports an `expiry` entry with no job behind it. */
static int put_stray(jb_store *s, MDB_txn *txn, void *ctx, int *status) {
  (void)status;
  return jb__expiry_put(s, txn, T0, ctx);
}

static void note_expiry(const char *line, void *payload) {
  if (strstr(line, "expiry")) *(bool *)payload = true;
}

static void check_verifies_the_index(void **state) {
  jbt_fixture *f = *state;
  uint8_t stray[16] = {1, 2, 3};
  assert_int_equal(jb__store_write(f->board->store, put_stray, stray),
                   JB_OK);
  bool found = false;
  assert_int_equal(jb_board_check(NULL, f->board, note_expiry, &found),
                   JB_ECORRUPT);
  assert_true(found);
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(a_snooze_delays_the_job_and_spends_no_attempt),
      T(only_the_claims_owner_and_token_may_snooze),
      T(past_max_snoozes_it_is_refused_and_the_claim_stands),
      T(an_older_post_and_its_record_still_read),
      T(jobx_formats_round_trip),
      T(an_unclaimed_job_expires_at_its_deadline),
      T(a_claim_by_uuid_after_the_deadline_is_refused_and_ends_it),
      T(a_claim_before_the_deadline_takes_it_out_of_the_index),
      T(a_claim_next_ends_a_bounded_number),
      T(bad_post_options_are_refused_and_write_nothing),
      T(check_verifies_the_index),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
