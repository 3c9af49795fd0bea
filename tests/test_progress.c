/*
 * test_progress.c - a claimant's progress reports (jb_progress): only the
 * current claim's owner (and token) may report; bad percentages and
 * messages are refused naming the problem, nothing written; the report
 * is on the job snapshot and in the change log (jb_log_progress); it
 * outlives a claim whose holder is killed and one that is abandoned, a
 * new claim starts without it, and it goes with the job (consume, trash:
 * not in the dead letter either).
 */
#include "helpers.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t claim_ok(jb_board *b, const char *uuid, const char *who,
                         const jb_claim_options *o) {
  uint64_t token = 0;
  int rc = jb_claim(&token, b, uuid, who, o);
  if (rc != JB_OK) fail_msg("claim %s as %s: %s", uuid, who, jb_errmsg());
  return token;
}

/* The job's progress: false when it has none. */
static bool progress_of(jb_board *b, const char *uuid, double *pct,
                        char *msg, size_t msg_size) {
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, b, uuid), JB_OK);
  const char *m = NULL;
  int64_t at = 0;
  bool has = jb_job_progress(j, pct, &m, &at);
  if (msg) snprintf(msg, msg_size, "%s", m ? m : "(none)");
  if (has) assert_true(at > 0);
  else assert_true(at == 0 && m == NULL);
  jb_job_free(j);
  return has;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

static void the_owner_reports_and_readers_see_it(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  double pct = -1;
  char msg[256];
  assert_false(progress_of(f->board, u, &pct, msg, sizeof msg));
  assert_true(pct == 0.0);
  assert_int_equal(jb_progress(f->board, u, "w", t, 12.5, "step 1 of 8"),
                   JB_OK);
  assert_true(progress_of(f->board, u, &pct, msg, sizeof msg));
  assert_true(pct == 12.5);
  assert_string_equal(msg, "step 1 of 8");
  /* Token 0 is not checked; a later report replaces the earlier one; no
   * message reads as NULL. */
  assert_int_equal(jb_progress(f->board, u, "w", 0, 100, NULL), JB_OK);
  assert_true(progress_of(f->board, u, &pct, msg, sizeof msg));
  assert_true(pct == 100.0);
  assert_string_equal(msg, "(none)");
  assert_int_equal(jb_progress(f->board, u, "w", t, 0, ""), JB_OK);
  assert_true(progress_of(f->board, u, &pct, msg, sizeof msg));
  assert_true(pct == 0.0);
  assert_string_equal(msg, "(none)");
  /* The claim stands: the owner consumes it. */
  assert_int_equal(jb_consume(f->board, u, "w", t, NULL), JB_OK);
  jbt_assert_check_ok(f->board);
}

static void percentages_are_kept_in_tenths_rounded(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  const double in[] = {33.333, 66.66, 0.04, 0.05, 99.96};
  const double out[] = {33.3, 66.7, 0.0, 0.1, 100.0};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    double pct = -1;
    assert_int_equal(jb_progress(f->board, u, "w", t, in[i], "x"), JB_OK);
    assert_true(progress_of(f->board, u, &pct, NULL, 0));
    if (fabs(pct - out[i]) > 1e-9)
      fail_msg("%g was kept as %g, not %g", in[i], pct, out[i]);
  }
}

static void only_the_current_claims_owner_may_report(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], other[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  jbt_post(other, f->board, "unclaimed", JB_PRIORITY_NORMAL);
  /* Not claimed: nobody may report. */
  assert_int_equal(jb_progress(f->board, u, "w", 0, 10, "m"), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "not claimed");
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  uint64_t next = log_next(f->board);
  assert_int_equal(jb_progress(f->board, u, "intruder", 0, 10, "m"),
                   JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "claimed by w");
  assert_int_equal(jb_progress(f->board, u, "w", t + 1000, 10, "m"),
                   JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "token");
  assert_int_equal(jb_progress(f->board, other, "w", 0, 10, "m"),
                   JB_ENOTFOUND);
  assert_int_equal(jb_progress(f->board, "01234567-89ab-cdef-0123-456789abcdef",
                               "w", 0, 10, "m"),
                   JB_ENOTFOUND);
  jbt_snapshot_assert_unchanged(&before, f->board);
  assert_int_equal(log_next(f->board), next);
  assert_false(progress_of(f->board, u, NULL, NULL, 0));
}

static void bad_inputs_are_refused_and_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  uint64_t next = log_next(f->board);
  char long_msg[JB_PROGRESS_MESSAGE_MAX + 2];
  memset(long_msg, 'a', sizeof long_msg - 1);
  long_msg[sizeof long_msg - 1] = '\0';
  char max_msg[JB_PROGRESS_MESSAGE_MAX + 1];
  memset(max_msg, 'b', sizeof max_msg - 1);
  max_msg[sizeof max_msg - 1] = '\0';
  struct {
    jb_board *b;
    const char *uuid, *who;
    double pct;
    const char *msg, *says;
  } bad[] = {
      {f->board, u, "w", -0.1, "m", "not a percentage"},
      {f->board, u, "w", 100.01, "m", "not a percentage"},
      {f->board, u, "w", NAN, "m", "not a percentage"},
      {f->board, u, "w", INFINITY, "m", "not a percentage"},
      {f->board, u, "w", 5, long_msg, "201 bytes is too long"},
      {f->board, u, "w", 5, "bad \xff byte", "not valid UTF-8"},
      {f->board, u, "w", 5, "two\nlines", "control character"},
      {f->board, u, "w", 5, "tab\there", "control character"},
      {f->board, "not-a-uuid", "w", 5, "m", "uuid"},
      {f->board, u, "", 5, "m", "owner"},
      {NULL, u, "w", 5, "m", "NULL"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = jb_progress(bad[i].b, bad[i].uuid, bad[i].who, t, bad[i].pct,
                         bad[i].msg);
    if (rc != JB_EINVAL)
      fail_msg("case %zu: %d (%s), not JB_EINVAL", i, rc, jb_errmsg());
    jbt_assert_contains(jb_errmsg(), bad[i].says);
  }
  assert_int_equal(log_next(f->board), next);
  assert_false(progress_of(f->board, u, NULL, NULL, 0));
  /* The longest message and multi-byte UTF-8 are taken whole. */
  assert_int_equal(jb_progress(f->board, u, "w", t, 5, max_msg), JB_OK);
  char msg[256];
  assert_true(progress_of(f->board, u, NULL, msg, sizeof msg));
  assert_string_equal(msg, max_msg);
  assert_int_equal(jb_progress(f->board, u, "w", t, 5, "\xc3\xa9t\xc3\xa9"),
                   JB_OK);
  assert_true(progress_of(f->board, u, NULL, msg, sizeof msg));
  assert_string_equal(msg, "\xc3\xa9t\xc3\xa9");
}

static void the_log_holds_each_report_with_its_figures(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_HIGH);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  uint64_t from = log_next(f->board);
  assert_int_equal(jb_progress(f->board, u, "w", t, 25, "a quarter"), JB_OK);
  assert_int_equal(jb_progress(f->board, u, "w", t, 50, NULL), JB_OK);
  jb_event ev[4];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, from, 4), JB_OK);
  assert_int_equal(n, 2);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(ev[i].type, JB_EVENT_PROGRESS);
    assert_string_equal(ev[i].uuid, u);
    assert_string_equal(ev[i].owner, "w");
    assert_int_equal(ev[i].priority, JB_PRIORITY_HIGH);
  }
  double pct = -1;
  char msg[JB_PROGRESS_MESSAGE_MAX + 1];
  assert_int_equal(jb_log_progress(&pct, msg, f->board, ev[0].seq), JB_OK);
  assert_true(pct == 25.0);
  assert_string_equal(msg, "a quarter");
  assert_int_equal(jb_log_progress(&pct, msg, f->board, ev[1].seq), JB_OK);
  assert_true(pct == 50.0);
  assert_string_equal(msg, "");
  assert_int_equal(jb_log_progress(&pct, NULL, f->board, ev[1].seq), JB_OK);
  /* Not a progress event; beyond the end; bad arguments. */
  assert_int_equal(jb_log_progress(&pct, msg, f->board, from - 1),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "not a progress event");
  assert_int_equal(jb_log_progress(&pct, msg, f->board, from + 2),
                   JB_ENOTFOUND);
  assert_int_equal(jb_log_progress(NULL, msg, f->board, from), JB_EINVAL);
  assert_int_equal(jb_log_progress(&pct, msg, NULL, from), JB_EINVAL);
  jb_stats st = JB_STATS_INIT;
  assert_int_equal(jb_stats_read(&st, f->board), JB_OK);
  assert_int_equal(st.events_total[JB_EVENT_PROGRESS], 2);
  jb_stats_clear(&st);
  jbt_assert_check_ok(f->board);
}

/* A child claims `arg`'s job bound to itself, reports, and is killed. */
typedef struct {
  const char *dir;
  const char *uuid;
  int ready_fd;
} child_args;

static int report_and_hang(void *arg) {
  child_args *a = arg;
  jb_board *b = jbt_open(a->dir, JB_DURABILITY_NORMAL, 0);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  uint64_t t = 0;
  if (jb_claim(&t, b, a->uuid, "doomed", &o) != JB_OK) return 1;
  if (jb_progress(b, a->uuid, "doomed", t, 40, "halfway-ish") != JB_OK)
    return 2;
  if (write(a->ready_fd, "r", 1) != 1) return 3;
  pause();
  return 0;
}

static void the_last_report_survives_a_killed_holder(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  child_args a = {f->dir, u, -1};
  pid_t pid = jbt_fork_ready(report_and_hang, &a, &a.ready_fd, 20,
                             "the reporting child");
  kill(pid, SIGKILL);
  int st = jbt_wait(pid, 10000);
  assert_true(WIFSIGNALED(st));
  jb_state s = JB_STATE_CLAIMED;
  assert_int_equal(jb_job_get_state(&s, f->board, u), JB_OK);
  assert_int_equal(s, JB_STATE_UNCLAIMED);
  double pct = -1;
  char msg[256];
  assert_true(progress_of(f->board, u, &pct, msg, sizeof msg));
  assert_true(pct == 40.0);
  assert_string_equal(msg, "halfway-ish");
  /* The lapsed claim's owner may no longer report. */
  assert_int_equal(jb_progress(f->board, u, "doomed", 0, 50, "m"),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "lapsed");
  /* A new claim (which ends the lapsed one) starts without it. */
  uint64_t t = claim_ok(f->board, u, "heir", NULL);
  assert_false(progress_of(f->board, u, NULL, NULL, 0));
  assert_int_equal(jb_progress(f->board, u, "heir", t, 1, "again"), JB_OK);
  jbt_assert_check_ok(f->board);
}

static void an_abandon_keeps_it_until_the_next_claim(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  assert_int_equal(jb_progress(f->board, u, "w", t, 70, "most"), JB_OK);
  assert_int_equal(jb_abandon(f->board, u, "w", t), JB_OK);
  double pct = -1;
  assert_true(progress_of(f->board, u, &pct, NULL, 0));
  assert_true(pct == 70.0);
  /* claim-next is a claim too. */
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, &t, f->board, "w2", NULL), JB_OK);
  assert_string_equal(got, u);
  assert_false(progress_of(f->board, u, NULL, NULL, 0));
  /* A same-owner re-claim is the same claim: it keeps the report. */
  assert_int_equal(jb_progress(f->board, u, "w2", t, 5, "m"), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "w2", NULL), JB_ECLAIMED);
  assert_true(progress_of(f->board, u, &pct, NULL, 0));
  assert_true(pct == 5.0);
  jbt_assert_check_ok(f->board);
}

static void it_goes_with_the_job(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN];
  jbt_post(u, f->board, "consumed", JB_PRIORITY_NORMAL);
  jbt_post(v, f->board, "trashed", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  assert_int_equal(jb_progress(f->board, u, "w", t, 99, "nearly"), JB_OK);
  assert_int_equal(jb_consume(f->board, u, "w", t, NULL), JB_OK);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, u), JB_ENOTFOUND);
  /* A dead letter keeps the job's attempts, not its progress: requeued
   * with its attempts, the job has none. */
  t = claim_ok(f->board, v, "w", NULL);
  assert_int_equal(jb_abandon(f->board, v, "w", t), JB_OK); /* an attempt */
  t = claim_ok(f->board, v, "w", NULL);
  assert_int_equal(jb_progress(f->board, v, "w", t, 30, "then failed"),
                   JB_OK);
  assert_int_equal(jb_trash(f->board, v, "w", t), JB_OK);
  assert_int_equal(jb_dead_requeue(f->board, v, JB_REQUEUE_KEEP_ATTEMPTS),
                   JB_OK);
  jb_job *k = NULL;
  assert_int_equal(jb_job_get(&k, f->board, v), JB_OK);
  assert_int_equal(jb_job_attempts(k), 1);
  jb_job_free(k);
  assert_false(progress_of(f->board, v, NULL, NULL, 0));
  jbt_assert_check_ok(f->board);
}

static void a_report_is_one_small_write(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  /* Hundreds of reports with the longest message: the log's tail moves
   * as it fills (each report stays a small write) and every event reads
   * back. */
  char m[JB_PROGRESS_MESSAGE_MAX + 1];
  memset(m, 'z', JB_PROGRESS_MESSAGE_MAX);
  m[JB_PROGRESS_MESSAGE_MAX] = '\0';
  uint64_t from = log_next(f->board);
  for (int i = 0; i < 300; i++)
    assert_int_equal(jb_progress(f->board, u, "w", t, i / 3.0, m), JB_OK);
  jb_event ev[300];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, from, 300), JB_OK);
  assert_int_equal(n, 300);
  jbt_assert_check_ok(f->board);
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(the_owner_reports_and_readers_see_it),
      T(percentages_are_kept_in_tenths_rounded),
      T(only_the_current_claims_owner_may_report),
      T(bad_inputs_are_refused_and_change_nothing),
      T(the_log_holds_each_report_with_its_figures),
      T(the_last_report_survives_a_killed_holder),
      T(an_abandon_keeps_it_until_the_next_claim),
      T(it_goes_with_the_job),
      T(a_report_is_one_small_write),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
