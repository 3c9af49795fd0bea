/*
 * test_life.c - a job's life: delayed jobs
 * (listed and counted, not claimable before their due time, then in
 * priority order), a waiter woken by a due time with no commit, attempts
 * counted by abandons, retries and lapses, dead letters (get, requeue,
 * purge) and the board's retry policy, jb_retry (delay, back-off,
 * straight to the dead letters, refusals), time limits, unique keys
 * (also raced by processes), cancel and flush, and check on a board
 * holding all of it.
 *
 * Due times are wall-clock times: the tests fix this process's wall clock
 * (jb__test_clock_fix, core/internal.h) to a time just before or exactly
 * at a due time, so "not before" and "at" are exact, never a matter of
 * speed. Leases and bound claims are on CLOCK_BOOTTIME and process
 * liveness: a lapse is made certain (a holder that exited and was reaped,
 * or a sleep well past a 1 ms lease) before it is looked at. The one test
 * on the real clock (a waiter) bounds its wait generously: the point is
 * that it is not the wait's timeout.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/txn.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000LL /* microseconds */

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* This process's wall clock is `us` (0: the real one again). */
static void clock_at(int64_t us) { jb__test_clock_fix(us); }

static int setup(void **state) {
  clock_at(0);
  return jbt_setup(state);
}

static int teardown(void **state) {
  clock_at(0);
  return jbt_teardown(state);
}

/* jb_board_check finds nothing; the board holds `delayed` delayed jobs. */
static void check_ok(jb_board *b, size_t delayed) {
  jbt_assert_check_ok_delayed(b, delayed);
}

static size_t count(jb_board *b, unsigned flags) {
  size_t n = 999;
  assert_int_equal(jb_board_count(&n, b, flags), JB_OK);
  return n;
}

static size_t dead_count(jb_board *b) {
  size_t n = 999;
  assert_int_equal(jb_dead_count(&n, b), JB_OK);
  return n;
}

static void post_ok(char uuid[JB_UUID_STRLEN], jb_board *b, const jb_post *p) {
  int rc = jb_job_post(uuid, b, p);
  if (rc != JB_OK) fail_msg("post %s: %s (%s)", p->name, jb_strerror(rc),
                            jb_errmsg());
}

static jb_job *get(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  int rc = jb_job_get(&j, b, uuid);
  if (rc != JB_OK) fail_msg("get %s: %s (%s)", uuid, jb_strerror(rc),
                            jb_errmsg());
  return j;
}

static void gone(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, b, uuid), JB_ENOTFOUND);
  assert_null(j);
}

static uint32_t attempts_of(jb_board *b, const char *uuid) {
  jb_job *j = get(b, uuid);
  uint32_t n = jb_job_attempts(j);
  jb_job_free(j);
  return n;
}

static uint64_t claim_ok(jb_board *b, const char *uuid, const char *who,
                         const jb_claim_options *o) {
  uint64_t t = 0;
  int rc = jb_claim(&t, b, uuid, who, o);
  if (rc != JB_OK) fail_msg("claim %s as %s: %s (%s)", uuid, who,
                            jb_strerror(rc), jb_errmsg());
  return t;
}

/* claim-next must hand out `want`. */
static void next_is(jb_board *b, const char *want, const char *who) {
  char got[JB_UUID_STRLEN];
  int rc = jb_claim_next(got, NULL, NULL, b, who, NULL);
  if (rc != JB_OK) fail_msg("claim-next: %s (%s), wanted %s", jb_strerror(rc),
                            jb_errmsg(), want);
  assert_string_equal(got, want);
}

static void next_none(jb_board *b) {
  char got[JB_UUID_STRLEN];
  int rc = jb_claim_next(got, NULL, NULL, b, "nobody", NULL);
  if (rc != JB_ENOTFOUND) fail_msg("claim-next: %s, claimed %s", jb_strerror(rc),
                                   rc == JB_OK ? got : "-");
}

static jb_dead_letter *dead_of(jb_board *b, const char *uuid) {
  jb_dead_letter *l = NULL;
  int rc = jb_dead_get(&l, b, uuid);
  if (rc != JB_OK) fail_msg("dead letter %s: %s (%s)", uuid, jb_strerror(rc),
                            jb_errmsg());
  assert_non_null(l);
  assert_string_equal(l->uuid, uuid);
  return l;
}

static jb_completion *completion_of(jb_board *b, const char *uuid) {
  jb_completion *c = NULL;
  int rc = jb_job_completion(&c, b, uuid);
  if (rc != JB_OK) fail_msg("completion of %s: %s (%s)", uuid,
                            jb_strerror(rc), jb_errmsg());
  return c;
}

/* The event of `type` for `uuid` in the log from `from` on; false when
 * there is none. Its owner goes to owner_out (may be NULL). */
static bool log_find(jb_board *b, uint64_t from, jb_event_type type,
                     const char *uuid, char owner_out[JB_WHO_MAX + 1]) {
  static jb_event ev[32];
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  while (from < next) {
    size_t n = 0;
    assert_int_equal(jb_log_read(ev, &n, NULL, b, from, 32), JB_OK);
    if (n == 0) break;
    for (size_t i = 0; i < n; i++)
      if (ev[i].type == type && strcmp(ev[i].uuid, uuid) == 0) {
        if (owner_out) memcpy(owner_out, ev[i].owner, sizeof ev[i].owner);
        return true;
      }
    from += n;
  }
  return false;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

/* A time a minute ahead of the real clock, a whole second: due times in
 * these tests are relative to it. */
static int64_t base_time(void) { return (wall_us() / SEC + 60) * SEC; }

/* The board of the delayed-job tests, at T - 1000 us: an older NORMAL job
 * `early`, claimed by "holder" (its token in *ht), and a VERY_HIGH job
 * `late` posted due at T. */
static void post_early_and_late(jbt_fixture *f, int64_t T,
                                char early[JB_UUID_STRLEN],
                                char late[JB_UUID_STRLEN], uint64_t *ht) {
  clock_at(T - 2000);
  jbt_post(early, f->board, "early-normal", JB_PRIORITY_NORMAL);
  *ht = claim_ok(f->board, early, "holder", NULL);
  clock_at(T - 1000);
  jb_post p = JB_POST_INIT;
  p.name = "late-very-high";
  p.priority = JB_PRIORITY_VERY_HIGH;
  p.not_before_us = T;
  post_ok(late, f->board, &p);
}

/* 1 ms before its due time it is on the board, unclaimed, and neither
 * claim-next nor a claim of its uuid takes it. */
static void a_delayed_job_is_not_claimable_before_its_due_time(void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  char early[JB_UUID_STRLEN], late[JB_UUID_STRLEN];
  uint64_t ht;
  post_early_and_late(f, T, early, late, &ht);
  next_none(f->board);
  assert_int_equal(jb_claim(NULL, f->board, late, "eager", NULL), JB_ENOTDUE);
  jbt_assert_contains(jb_errmsg(), late);
  uint64_t tok = 0;
  assert_int_equal(jb_claim(&tok, f->board, late, "eager", NULL),
                   JB_ENOTDUE);
  assert_int_equal(count(f->board, 0), 2);
  assert_int_equal(count(f->board, JB_ONLY_UNCLAIMED), 0);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, late), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  jb_job *j = get(f->board, late);
  assert_int_equal(jb_job_not_before(j), T);
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  jb_job_free(j);
}

/* Listed in its place (priority first), with its due time. */
static void a_delayed_job_is_listed_in_its_place_with_its_due_time(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  char early[JB_UUID_STRLEN], late[JB_UUID_STRLEN];
  uint64_t ht;
  post_early_and_late(f, T, early, late, &ht);
  jb_iter *it = NULL;
  const jb_job *lj = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  assert_int_equal(jb_iter_next(&lj, it), JB_OK);
  assert_non_null(lj);
  assert_string_equal(jb_job_uuid(lj), late);
  assert_int_equal(jb_job_not_before(lj), T);
  assert_int_equal(jb_iter_next(&lj, it), JB_OK);
  assert_non_null(lj);
  assert_string_equal(jb_job_uuid(lj), early);
  assert_int_equal(jb_job_not_before(lj), 0);
  assert_int_equal(jb_iter_next(&lj, it), JB_OK);
  assert_null(lj);
  jb_iter_close(it);
}

static void a_delayed_job_is_not_listed_among_the_claimable_ones(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  char early[JB_UUID_STRLEN], late[JB_UUID_STRLEN];
  uint64_t ht;
  post_early_and_late(f, T, early, late, &ht);
  jb_iter *it = NULL;
  const jb_job *lj = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(jb_iter_next(&lj, it), JB_OK);
  assert_null(lj);
  jb_iter_close(it);
  check_ok(f->board, 1);
}

/* Once the older NORMAL job is given back it alone is claimable; at the
 * delayed job's due time that job is claimable too, and comes first. */
static void a_delayed_job_at_its_due_time_is_claimed_in_priority_order(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  char early[JB_UUID_STRLEN], late[JB_UUID_STRLEN];
  uint64_t ht;
  post_early_and_late(f, T, early, late, &ht);
  assert_int_equal(jb_abandon(f->board, early, "holder", ht), JB_OK);
  assert_int_equal(count(f->board, JB_ONLY_UNCLAIMED), 1);

  clock_at(T);
  assert_int_equal(count(f->board, JB_ONLY_UNCLAIMED), 2);
  jb_iter *it = NULL;
  const jb_job *lj = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(jb_iter_next(&lj, it), JB_OK);
  assert_non_null(lj);
  assert_string_equal(jb_job_uuid(lj), late);
  jb_iter_close(it);
  next_is(f->board, late, "w");
  next_is(f->board, early, "w");
  jb_job *j = get(f->board, late);
  assert_int_equal(jb_job_state(j), JB_STATE_CLAIMED);
  assert_int_equal(jb_job_not_before(j), 0);
  jb_job_free(j);
  check_ok(f->board, 0);
  assert_int_equal(jb_consume(f->board, late, "w", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, early, "w", 0, NULL), JB_OK);
}

/* The delay_ms form: due delay_ms after the post, and claimed by uuid
 * once due (it leaves the delayed index there). */
static void a_job_posted_with_delay_ms_is_due_that_long_after_its_post(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t C = base_time() + 10 * SEC;
  clock_at(C);
  char d[JB_UUID_STRLEN];
  jb_post q = JB_POST_INIT;
  q.name = "delayed-5s";
  q.delay_ms = 5000;
  post_ok(d, f->board, &q);
  jb_job *j = get(f->board, d);
  assert_int_equal(jb_job_not_before(j), C + 5 * SEC);
  jb_job_free(j);
  clock_at(C + 5 * SEC - 1);
  next_none(f->board);
  assert_int_equal(jb_claim(NULL, f->board, d, "eager", NULL), JB_ENOTDUE);
  clock_at(C + 5 * SEC);
  claim_ok(f->board, d, "w", NULL);
  check_ok(f->board, 0);
}

static void a_due_time_already_past_is_claimable_at_once(void **state) {
  jbt_fixture *f = *state;
  const int64_t C = base_time() + 10 * SEC;
  clock_at(C + 5 * SEC);
  char past[JB_UUID_STRLEN];
  jb_post r = JB_POST_INIT;
  r.name = "not-before-the-past";
  r.not_before_us = C;
  post_ok(past, f->board, &r);
  jb_job *j = get(f->board, past);
  assert_int_equal(jb_job_not_before(j), 0);
  jb_job_free(j);
  next_is(f->board, past, "w");
  check_ok(f->board, 0);
}

/* Due times post refuses, with the field its message names. */
static const struct {
  int64_t not_before_us; /* > 0: that long after the fixed clock T */
  int64_t delay_ms;
  const char *names;
} bad_dues[] = {
    {-1, 0, "not_before_us"},
    {0, -1, "delay_ms"},
    {0, JB_DELAY_MAX_MS + 1, "delay_ms"},
    {1000 * SEC, 1000, "not both"},
    {JB_DELAY_MAX_MS * 1000 + 1, 0, "not_before_us"},
};
#define N_BAD_DUES (sizeof bad_dues / sizeof bad_dues[0])

/* The i-th bad post at the fixed clock T. */
static jb_post bad_due_post(size_t i, int64_t T) {
  jb_post p = JB_POST_INIT;
  p.name = "bad";
  p.not_before_us = bad_dues[i].not_before_us > 0
                        ? T + bad_dues[i].not_before_us
                        : bad_dues[i].not_before_us;
  p.delay_ms = bad_dues[i].delay_ms;
  return p;
}

/* The board of the bad-due-time tests at the fixed clock *T: one job. */
static void one_job_at_a_fixed_clock(jbt_fixture *f, int64_t *T) {
  *T = base_time();
  clock_at(*T);
  jbt_post(NULL, f->board, "already-there", JB_PRIORITY_NORMAL);
}

static void bad_due_times_are_refused_and_write_nothing(void **state) {
  jbt_fixture *f = *state;
  int64_t T;
  one_job_at_a_fixed_clock(f, &T);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  char u[JB_UUID_STRLEN];
  for (size_t i = 0; i < N_BAD_DUES; i++) {
    jb_post p = bad_due_post(i, T);
    assert_int_equal(jb_job_post(u, f->board, &p), JB_EINVAL);
    jbt_assert_contains(jb_errmsg(), bad_dues[i].names);
  }
  jbt_snapshot_assert_unchanged(&before, f->board);
}

static void post_check_refuses_bad_due_times_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  int64_t T;
  one_job_at_a_fixed_clock(f, &T);
  for (size_t i = 0; i < N_BAD_DUES; i++) {
    jb_post p = bad_due_post(i, T);
    assert_int_equal(jb_post_check(&p, 0), JB_EINVAL);
    jbt_assert_contains(jb_errmsg(), bad_dues[i].names);
  }
}

/* In a batch: nothing of it is written, and the message names the bad
 * post's index. */
static void a_batch_with_a_bad_due_time_writes_nothing_naming_its_index(
    void **state) {
  jbt_fixture *f = *state;
  int64_t T;
  one_job_at_a_fixed_clock(f, &T);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  for (size_t i = 0; i < N_BAD_DUES; i++) {
    jb_post two[2] = {JB_POST_INIT, bad_due_post(i, T)};
    two[0].name = "good";
    char uu[2][JB_UUID_STRLEN];
    assert_int_equal(jb_job_post_batch(uu, f->board, two, 2), JB_EINVAL);
    jbt_assert_contains(jb_errmsg(), bad_dues[i].names);
    jbt_assert_contains(jb_errmsg(), "1");
  }
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* Accepted by check only: nothing is written. */
static void the_longest_delay_and_the_furthest_due_time_are_accepted(
    void **state) {
  jbt_fixture *f = *state;
  int64_t T;
  one_job_at_a_fixed_clock(f, &T);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  jb_post ok = JB_POST_INIT;
  ok.name = "far";
  ok.delay_ms = JB_DELAY_MAX_MS;
  assert_int_equal(jb_post_check(&ok, 0), JB_OK);
  ok.delay_ms = 0;
  ok.not_before_us = T + JB_DELAY_MAX_MS * 1000;
  assert_int_equal(jb_post_check(&ok, 0), JB_OK);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* ------------------------------------------------------ waiting for due */

typedef struct {
  jb_board *board;
  int rc;
  char uuid[JB_UUID_STRLEN];
  int64_t took_ms;
} waiter;

static void *waiter_run(void *arg) {
  waiter *w = arg;
  int64_t t0 = jbt_now_ms();
  w->rc = jb_claim_next(w->uuid, NULL, NULL, w->board, "waiter", &(jb_claim_options){.version = JB_CLAIM_OPTIONS_VERSION, .wait_ms = 30000});
  w->took_ms = jbt_now_ms() - t0;
  return NULL;
}

static void a_waiter_wakes_when_a_job_becomes_due(void **state) {
  jbt_fixture *f = *state;
  clock_at(0); /* the real clock: the waiter's timer runs on it */
  uint64_t from = log_next(f->board);
  waiter w = {.board = f->board, .rc = 99};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, waiter_run, &w), 0);
  /* Whether the waiter is asleep yet or not, the post is the last commit
   * before its claim: only the due time can wake it. */
  char u[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "due-in-a-second";
  p.delay_ms = 1000;
  post_ok(u, f->board, &p);
  jb_job *j = get(f->board, u);
  int64_t due = jb_job_not_before(j);
  jb_job_free(j);
  assert_true(due > 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  if (w.rc != JB_OK) fail_msg("waiter: %s (%s) after %lld ms",
                              jb_strerror(w.rc), jb_errmsg(),
                              (long long)w.took_ms);
  assert_string_equal(w.uuid, u);
  printf("# the waiter claimed the delayed job after %lld ms\n",
         (long long)w.took_ms);
  /* Not the 30 s timeout (a generous bound, not a speed figure). */
  assert_true(w.took_ms < 20000);
  /* Nothing but the post and the claim was written: no commit woke it. */
  assert_int_equal(log_next(f->board), from + 2);
  static jb_event ev[2];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, from, 2), JB_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
  assert_int_equal(ev[1].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[1].uuid, u);
  assert_string_equal(ev[1].owner, "waiter");
  /* Claimed at or after its due time, never before. */
  assert_true(ev[1].time_us >= due);
}

/* The job of the attempts tests: "flaky", HIGH, details {"store": 7},
 * three attempts allowed, posted at the fixed clock T. */
typedef struct {
  char u[JB_UUID_STRLEN];
  jbt_buf details;
  jbt_buf posting; /* as posted */
  uint64_t seq0;   /* its sequence as posted */
} flaky_job;

static void post_flaky(jbt_fixture *f, int64_t T, flaky_job *fj) {
  clock_at(T);
  fj->details = jbt_details_store(7);
  jb_post p = JB_POST_INIT;
  p.name = "flaky";
  p.priority = JB_PRIORITY_HIGH;
  p.details = fj->details.data;
  p.details_len = fj->details.len;
  p.max_attempts = 3;
  post_ok(fj->u, f->board, &p);
  jb_job *j = get(f->board, fj->u);
  size_t plen = 0;
  const void *pp = jb_job_posting(j, &plen);
  fj->posting = (jbt_buf){malloc(plen), plen};
  memcpy(fj->posting.data, pp, plen);
  fj->seq0 = jb_job_sequence(j);
  jb_job_free(j);
}

static void flaky_free(flaky_job *fj) {
  jbt_buf_free(&fj->details);
  jbt_buf_free(&fj->posting);
}

/* Two failed attempts, abandons by "w" at T + 1 s and T + 2 s: each
 * counted, the job still on the board and claimable. */
static void fail_flaky_twice(jbt_fixture *f, int64_t T, const char *u) {
  for (uint32_t i = 1; i <= 2; i++) {
    clock_at(T + i * SEC);
    next_is(f->board, u, "w");
    assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
    jb_job *j = get(f->board, u);
    assert_int_equal(jb_job_attempts(j), i);
    assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
    jb_job_free(j);
  }
}

/* The third attempt, retried by "w" at T + 3 s with the reason "disk
 * full": its last. Its result goes to *res; returns where the change log
 * stood before it. */
static uint64_t fail_flaky_last(jbt_fixture *f, int64_t T, const char *u,
                                jb_retry_result *res) {
  clock_at(T + 3 * SEC);
  next_is(f->board, u, "w");
  uint64_t from = log_next(f->board);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.reason = "disk full";
  *res = (jb_retry_result){false, -1, 0};
  assert_int_equal(jb_retry(res, f->board, u, "w", &ro), JB_OK);
  return from;
}

/* Posted at T and failed three times: a dead letter since T + 3 s. */
static void kill_flaky(jbt_fixture *f, int64_t T, flaky_job *fj) {
  post_flaky(f, T, fj);
  fail_flaky_twice(f, T, fj->u);
  jb_retry_result res;
  fail_flaky_last(f, T, fj->u, &res);
}

/* Killed as above, then requeued at T + 4 s. */
static void kill_and_requeue_flaky(jbt_fixture *f, flaky_job *fj) {
  const int64_t T = base_time();
  kill_flaky(f, T, fj);
  clock_at(T + 4 * SEC);
  assert_int_equal(jb_dead_requeue(f->board, fj->u, 0), JB_OK);
}

static void a_job_posted_with_max_attempts_starts_with_none_used(
    void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  post_flaky(f, base_time(), &fj);
  jb_job *j = get(f->board, fj.u);
  assert_int_equal(jb_job_max_attempts(j), 3);
  assert_int_equal(jb_job_attempts(j), 0);
  assert_null(jb_job_last_reason(j));
  jb_job_free(j);
  flaky_free(&fj);
}

static void failed_attempts_before_the_last_leave_the_job_claimable(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  flaky_job fj;
  post_flaky(f, T, &fj);
  fail_flaky_twice(f, T, fj.u);
  assert_int_equal(count(f->board, JB_ONLY_UNCLAIMED), 1);
  flaky_free(&fj);
}

static void the_last_allowed_attempt_sends_the_job_to_the_dead_letters(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  flaky_job fj;
  post_flaky(f, T, &fj);
  fail_flaky_twice(f, T, fj.u);
  jb_retry_result res;
  uint64_t from = fail_flaky_last(f, T, fj.u, &res);
  assert_true(res.dead);
  assert_int_equal(res.attempts, 3);
  assert_int_equal(res.due_us, 0);
  gone(f->board, fj.u);
  assert_int_equal(count(f->board, 0), 0);
  assert_int_equal(dead_count(f->board), 1);
  assert_true(log_find(f->board, from, JB_EVENT_DEAD, fj.u, NULL));
  flaky_free(&fj);
}

static void a_dead_letter_keeps_the_jobs_posting_and_how_it_died(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  flaky_job fj;
  kill_flaky(f, T, &fj);
  jb_dead_letter *l = dead_of(f->board, fj.u);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  assert_string_equal(jb_dead_cause_name(l->cause), "attempts");
  assert_int_equal(l->attempts, 3);
  assert_int_equal(l->max_attempts, 3);
  assert_string_equal(l->reason, "disk full");
  assert_string_equal(l->name, "flaky");
  assert_int_equal(l->priority, JB_PRIORITY_HIGH);
  assert_int_equal(l->sequence, fj.seq0);
  assert_string_equal(l->owner, "w");
  assert_null(l->unique_key);
  assert_int_equal(l->posted_us, T);
  assert_int_equal(l->dead_us, T + 3 * SEC);
  assert_int_equal(l->details_len, fj.details.len);
  assert_memory_equal(l->details, fj.details.data, fj.details.len);
  assert_int_equal(l->posting_len, fj.posting.len);
  assert_memory_equal(l->posting, fj.posting.data, fj.posting.len);
  jb_dead_free(l);
  flaky_free(&fj);
}

static void a_job_sent_to_the_dead_letters_completes_as_dead(void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_flaky(f, base_time(), &fj);
  jb_completion *c = completion_of(f->board, fj.u);
  assert_int_equal(c->end, JB_END_DEAD);
  assert_string_equal(jb_end_name(c->end), "dead");
  assert_string_equal(c->reason, "disk full");
  assert_string_equal(c->owner, "w");
  jb_completion_free(c);
  check_ok(f->board, 0);
  flaky_free(&fj);
}

/* Requeued: the same uuid, claimable at once, its attempts from 0, as the
 * newest job of its priority. */
static void a_requeued_dead_letter_is_back_with_its_attempts_from_zero(
    void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_and_requeue_flaky(f, &fj);
  assert_int_equal(dead_count(f->board), 0);
  jb_job *j = get(f->board, fj.u);
  assert_int_equal(jb_job_attempts(j), 0);
  assert_int_equal(jb_job_max_attempts(j), 3);
  assert_null(jb_job_last_reason(j));
  assert_true(jb_job_sequence(j) > fj.seq0);
  assert_string_equal(jb_job_name(j), "flaky");
  size_t dl = 0;
  const void *dd = jb_job_details(j, &dl);
  assert_int_equal(dl, fj.details.len);
  assert_memory_equal(dd, fj.details.data, dl);
  jb_job_free(j);
  check_ok(f->board, 0);
  flaky_free(&fj);
}

/* Three more failed attempts (no reason) and it is back in the dead
 * letters, without the reason of its earlier life. */
static void a_requeued_job_that_dies_again_has_only_its_new_lifes_reason(
    void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_and_requeue_flaky(f, &fj);
  for (int i = 0; i < 3; i++) {
    next_is(f->board, fj.u, "w2");
    assert_int_equal(jb_abandon(f->board, fj.u, "w2", 0), JB_OK);
  }
  gone(f->board, fj.u);
  jb_dead_letter *l = dead_of(f->board, fj.u);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  assert_int_equal(l->attempts, 3);
  assert_null(l->reason); /* the requeue forgot the earlier one */
  assert_string_equal(l->owner, "w2");
  jb_dead_free(l);
  flaky_free(&fj);
}

static void a_requeue_keeping_attempts_makes_the_next_failure_the_last(
    void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_flaky(f, base_time(), &fj);
  assert_int_equal(jb_dead_requeue(f->board, fj.u, JB_REQUEUE_KEEP_ATTEMPTS),
                   JB_OK);
  assert_int_equal(attempts_of(f->board, fj.u), 3);
  next_is(f->board, fj.u, "w3");
  assert_int_equal(jb_abandon(f->board, fj.u, "w3", 0), JB_OK);
  gone(f->board, fj.u);
  jb_dead_letter *l = dead_of(f->board, fj.u);
  assert_int_equal(l->attempts, 4);
  jb_dead_free(l);
  flaky_free(&fj);
}

static void a_requeue_with_unknown_flags_or_a_malformed_uuid_is_invalid(
    void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_flaky(f, base_time(), &fj);
  assert_int_equal(jb_dead_requeue(f->board, fj.u, 0x40), JB_EINVAL);
  assert_int_equal(jb_dead_requeue(f->board, "not-a-uuid", 0), JB_EINVAL);
  assert_int_equal(dead_count(f->board), 1);
  flaky_free(&fj);
}

static void a_requeue_of_a_job_on_the_board_is_not_found(void **state) {
  jbt_fixture *f = *state;
  flaky_job fj;
  kill_flaky(f, base_time(), &fj);
  char other[JB_UUID_STRLEN];
  jbt_post(other, f->board, "alive", JB_PRIORITY_LOW);
  assert_int_equal(jb_dead_requeue(f->board, other, 0), JB_ENOTFOUND);
  assert_int_equal(dead_count(f->board), 1);
  flaky_free(&fj);
}

static void dead_get_of_a_job_on_the_board_is_not_found(void **state) {
  jbt_fixture *f = *state;
  char other[JB_UUID_STRLEN];
  jbt_post(other, f->board, "alive", JB_PRIORITY_LOW);
  jb_dead_letter *none = (jb_dead_letter *)1;
  assert_int_equal(jb_dead_get(&none, f->board, other), JB_ENOTFOUND);
  assert_null(none);
}

/* u dies at T + 4 s, v at T + 20 s. */
static void dead_purge_takes_the_letters_dead_before_the_time_given(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  flaky_job fj;
  kill_flaky(f, T + SEC, &fj);
  const char *u = fj.u;
  clock_at(T + 20 * SEC);
  char v[JB_UUID_STRLEN];
  jbt_post(v, f->board, "poison", JB_PRIORITY_NORMAL);
  claim_ok(f->board, v, "w", NULL);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  assert_int_equal(jb_retry(NULL, f->board, v, "w", &ro), JB_OK);
  assert_int_equal(dead_count(f->board), 2);
  size_t purged = 99;
  assert_int_equal(jb_dead_purge(&purged, f->board, T + 4 * SEC), JB_OK);
  assert_int_equal(purged, 0); /* "before": not at */
  assert_int_equal(jb_dead_purge(&purged, f->board, T + 20 * SEC), JB_OK);
  assert_int_equal(purged, 1);
  jb_dead_letter *none = (jb_dead_letter *)1;
  assert_int_equal(jb_dead_get(&none, f->board, u), JB_ENOTFOUND);
  jb_dead_free(dead_of(f->board, v));
  assert_int_equal(jb_dead_purge(&purged, f->board, INT64_MAX), JB_OK);
  assert_int_equal(purged, 1);
  assert_int_equal(dead_count(f->board), 0);
  assert_int_equal(jb_dead_requeue(f->board, v, 0), JB_ENOTFOUND);
  check_ok(f->board, 0);
  flaky_free(&fj);
}

static int collect_letter(const jb_dead_letter *l, void *payload) {
  jbt_uuids *s = payload;
  jbt_uuids_add(s, l->uuid);
  return 0;
}

static void the_default_retry_policy_has_no_maximum_and_a_1s_backoff(
    void **state) {
  jbt_fixture *f = *state;
  jb_retry_policy pol;
  memset(&pol, 0xff, sizeof pol);
  assert_int_equal(jb_board_get_retry_policy(&pol, f->board), JB_OK);
  assert_int_equal(pol.max_attempts, 0);
  assert_int_equal(pol.backoff_ms, 1000);
  assert_int_equal(pol.backoff_max_ms, 3600000);
}

static void bad_retry_policies_are_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jb_retry_policy bad = JB_RETRY_POLICY_INIT;
  bad.backoff_ms = 0;
  assert_int_equal(jb_board_set_retry_policy(f->board, &bad), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "backoff_ms");
  bad = (jb_retry_policy)JB_RETRY_POLICY_INIT;
  bad.backoff_max_ms = bad.backoff_ms - 1;
  assert_int_equal(jb_board_set_retry_policy(f->board, &bad), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "backoff_max_ms");
  bad = (jb_retry_policy)JB_RETRY_POLICY_INIT;
  bad.backoff_ms = JB_DELAY_MAX_MS + 1;
  bad.backoff_max_ms = JB_DELAY_MAX_MS + 1;
  assert_int_equal(jb_board_set_retry_policy(f->board, &bad), JB_EINVAL);
  bad = (jb_retry_policy)JB_RETRY_POLICY_INIT;
  bad.version = 77;
  assert_int_equal(jb_board_set_retry_policy(f->board, &bad), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "version");
  assert_int_equal(jb_board_set_retry_policy(f->board, NULL), JB_EINVAL);
  /* Nothing changed. */
  jb_retry_policy pol;
  assert_int_equal(jb_board_get_retry_policy(&pol, f->board), JB_OK);
  assert_int_equal(pol.max_attempts, 0);
  assert_int_equal(pol.backoff_ms, 1000);
}

/* Another handle (another process would do the same) reads it. */
static void a_retry_policy_set_is_read_by_another_handle(void **state) {
  jbt_fixture *f = *state;
  jb_retry_policy two = JB_RETRY_POLICY_INIT;
  two.max_attempts = 2;
  assert_int_equal(jb_board_set_retry_policy(f->board, &two), JB_OK);
  jb_retry_policy pol;
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(jb_board_get_retry_policy(&pol, b2), JB_OK);
  assert_int_equal(pol.max_attempts, 2);
  jb_board_close(b2);
}

/* Under a board policy of two attempts, `plain` (posted without a maximum
 * of its own) and `own` (posted with five) both fail twice. */
static void fail_twice_under_a_policy_of_two(jbt_fixture *f,
                                             char plain[JB_UUID_STRLEN],
                                             char own[JB_UUID_STRLEN]) {
  jb_retry_policy two = JB_RETRY_POLICY_INIT;
  two.max_attempts = 2;
  assert_int_equal(jb_board_set_retry_policy(f->board, &two), JB_OK);
  jbt_post(plain, f->board, "board-policy", JB_PRIORITY_HIGH);
  jb_post p = JB_POST_INIT;
  p.name = "own-maximum";
  p.max_attempts = 5;
  post_ok(own, f->board, &p);
  for (int i = 0; i < 2; i++) {
    claim_ok(f->board, plain, "w", NULL);
    assert_int_equal(jb_abandon(f->board, plain, "w", 0), JB_OK);
    claim_ok(f->board, own, "w", NULL);
    assert_int_equal(jb_abandon(f->board, own, "w", 0), JB_OK);
  }
}

static void the_boards_retry_policy_applies_to_jobs_without_their_own(
    void **state) {
  jbt_fixture *f = *state;
  char plain[JB_UUID_STRLEN], own[JB_UUID_STRLEN];
  fail_twice_under_a_policy_of_two(f, plain, own);
  gone(f->board, plain);
  jb_dead_letter *l = dead_of(f->board, plain);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  assert_int_equal(l->attempts, 2);
  assert_int_equal(l->max_attempts, 0); /* posted without one */
  jb_dead_free(l);
  check_ok(f->board, 0);
}

static void a_jobs_own_max_attempts_wins_over_the_boards(void **state) {
  jbt_fixture *f = *state;
  char plain[JB_UUID_STRLEN], own[JB_UUID_STRLEN];
  fail_twice_under_a_policy_of_two(f, plain, own);
  assert_int_equal(attempts_of(f->board, own), 2);
  next_is(f->board, own, "w");
}

static void dead_foreach_walks_the_dead_letters(void **state) {
  jbt_fixture *f = *state;
  char plain[JB_UUID_STRLEN], own[JB_UUID_STRLEN];
  fail_twice_under_a_policy_of_two(f, plain, own);
  jbt_uuids seen = {0};
  assert_int_equal(jb_dead_foreach(f->board, collect_letter, &seen), JB_OK);
  assert_int_equal(seen.n, 1);
  assert_string_equal(seen.v[0], plain);
  jbt_uuids_free(&seen);
}

/* ---------------------------------------------------------------- lapses */

typedef struct {
  const char *dir;
  const char *uuid;
} holder_args;

/* Claim a->uuid bound to this process, then exit: the claim lapses. */
static int bound_then_exit(void *arg) {
  holder_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  if (jb_claim(NULL, b, a->uuid, "doomed", &o) != JB_OK) {
    fprintf(stderr, "child: claim %s: %s\n", a->uuid, jb_errmsg());
    return 2;
  }
  return 0; /* exits holding the claim */
}

/* A child claims `uuid` bound to itself and exits; it is reaped, so the
 * claim has certainly lapsed when this returns. */
static void holder_gone(jbt_fixture *f, const char *uuid) {
  holder_args a = {f->dir, uuid};
  pid_t pid = jbt_fork(bound_then_exit, &a, 60);
  jbt_wait_ok(pid, 60000);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, uuid), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
}

/* A lapse found by claim-next: one attempt, with a reason. */
static void a_lapsed_claim_counts_an_attempt(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "lapses";
  p.max_attempts = 3;
  post_ok(u, f->board, &p);
  uint64_t from = log_next(f->board);
  holder_gone(f, u);
  next_is(f->board, u, "survivor");
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_attempts(j), 1);
  assert_non_null(jb_job_last_reason(j));
  jbt_assert_contains(jb_job_last_reason(j), "lapsed");
  jbt_assert_contains(jb_job_last_reason(j), "doomed");
  jb_job_free(j);
  char owner[JB_WHO_MAX + 1];
  assert_true(log_find(f->board, from, JB_EVENT_EXPIRED, u, owner));
  assert_string_equal(owner, "doomed");
  assert_int_equal(jb_consume(f->board, u, "survivor", 0, NULL), JB_OK);
  check_ok(f->board, 0);
}

/* Posts a job named `name` with one attempt allowed. */
static void post_one_chance(jbt_fixture *f, const char *name,
                            char uuid[JB_UUID_STRLEN]) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.max_attempts = 1;
  post_ok(uuid, f->board, &p);
}

/* The lapse took the board's one job to the dead letters: nothing else is
 * there, and check finds nothing wrong. */
static void only_one_dead_letter_left(jbt_fixture *f) {
  assert_int_equal(dead_count(f->board), 1);
  assert_int_equal(count(f->board, 0), 0);
  check_ok(f->board, 0);
}

/* With one attempt allowed, a lapse sends the job to the dead letters. */
static void a_last_attempts_lapse_found_by_claim_next_kills_the_job(
    void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  post_one_chance(f, "one-chance", v);
  holder_gone(f, v);
  next_none(f->board);
  gone(f->board, v);
  jb_dead_letter *l = dead_of(f->board, v);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  assert_int_equal(l->attempts, 1);
  assert_non_null(l->reason);
  jbt_assert_contains(l->reason, "lapsed");
  assert_string_equal(l->owner, "doomed");
  jb_dead_free(l);
  jb_completion *c = completion_of(f->board, v);
  assert_int_equal(c->end, JB_END_DEAD);
  jbt_assert_contains(c->reason, "lapsed");
  jb_completion_free(c);
  only_one_dead_letter_left(f);
}

static void a_last_attempts_lapse_found_by_a_claim_of_its_uuid_kills_it(
    void **state) {
  jbt_fixture *f = *state;
  char w[JB_UUID_STRLEN];
  post_one_chance(f, "one-chance-by-uuid", w);
  holder_gone(f, w);
  assert_int_equal(jb_claim(NULL, f->board, w, "survivor", NULL), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "dead letters");
  gone(f->board, w);
  jb_dead_letter *l = dead_of(f->board, w);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  jbt_assert_contains(l->reason, "lapsed");
  jb_dead_free(l);
  only_one_dead_letter_left(f);
}

/* A lease of 1 ms, certainly past after 50 ms of sleep. */
static void a_last_attempts_lapsed_lease_kills_the_job(void **state) {
  jbt_fixture *f = *state;
  char x[JB_UUID_STRLEN];
  post_one_chance(f, "one-chance-leased", x);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 1;
  claim_ok(f->board, x, "sleepy", &o);
  sleep_ms(50);
  next_none(f->board);
  gone(f->board, x);
  jb_dead_letter *l = dead_of(f->board, x);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  assert_int_equal(l->attempts, 1);
  jbt_assert_contains(l->reason, "lapsed");
  jbt_assert_contains(l->reason, "sleepy");
  jb_dead_free(l);
  only_one_dead_letter_left(f);
}

/* A delay of its own: not claimable before it, exactly. */
static void retry_with_a_delay_makes_the_job_due_exactly_then(void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  clock_at(T);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "later", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "w", NULL);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.delay_ms = 10000;
  ro.token = t;
  ro.reason = "try later";
  jb_retry_result res = {true, 0, 0};
  assert_int_equal(jb_retry(&res, f->board, u, "w", &ro), JB_OK);
  assert_false(res.dead);
  assert_int_equal(res.attempts, 1);
  assert_int_equal(res.due_us, T + 10 * SEC);
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_not_before(j), T + 10 * SEC);
  assert_int_equal(jb_job_attempts(j), 1);
  assert_string_equal(jb_job_last_reason(j), "try later");
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  assert_null(jb_job_owner(j));
  jb_job_free(j);
  assert_int_equal(count(f->board, JB_ONLY_UNCLAIMED), 0);
  check_ok(f->board, 1);
  clock_at(T + 10 * SEC - 1);
  next_none(f->board);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ENOTDUE);
  clock_at(T + 10 * SEC);
  next_is(f->board, u, "w");
}

/* The back-off: the job's, doubled per attempt, at most its maximum,
 * with +-20 % jitter (and never past the maximum). */
static void retry_with_backoff_doubles_the_jobs_per_attempt_up_to_its_max(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t C = base_time() + 100 * SEC;
  clock_at(C);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_BACKOFF;
  jb_retry_result res;
  for (int i = 0; i < 10; i++) {
    char v[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "backing-off";
    p.backoff_ms = 4000;
    p.backoff_max_ms = 5000;
    post_ok(v, f->board, &p);
    claim_ok(f->board, v, "w", NULL);
    assert_int_equal(jb_retry(&res, f->board, v, "w", &ro), JB_OK);
    assert_int_equal(res.attempts, 1);
    /* attempt 1: 4 s +-20 % */
    if (res.due_us < C + 3200000 || res.due_us > C + 4800000)
      fail_msg("attempt 1: due %lld us after the retry, not in 3.2..4.8 s",
               (long long)(res.due_us - C));
    jb_job *j = get(f->board, v);
    assert_int_equal(jb_job_not_before(j), res.due_us);
    jb_job_free(j);
    /* attempt 2: 8 s, capped at 5 s, jitter within 4..5 s */
    clock_at(res.due_us);
    claim_ok(f->board, v, "w", NULL);
    int64_t now = res.due_us;
    assert_int_equal(jb_retry(&res, f->board, v, "w", &ro), JB_OK);
    assert_int_equal(res.attempts, 2);
    if (res.due_us < now + 4000000 || res.due_us > now + 5000000)
      fail_msg("attempt 2: due %lld us after the retry, not in 4..5 s",
               (long long)(res.due_us - now));
    assert_int_equal(jb_job_cancel(f->board, v, 0), JB_OK);
    clock_at(C);
  }
}

/* Without a back-off of its own: the board's (1 s +-20 %). */
static void retry_with_backoff_of_a_job_without_its_own_takes_the_boards(
    void **state) {
  jbt_fixture *f = *state;
  const int64_t C = base_time() + 100 * SEC;
  clock_at(C);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_BACKOFF;
  jb_retry_result res;
  char w[JB_UUID_STRLEN];
  jbt_post(w, f->board, "board-backoff", JB_PRIORITY_NORMAL);
  claim_ok(f->board, w, "w", NULL);
  assert_int_equal(jb_retry(&res, f->board, w, "w", &ro), JB_OK);
  assert_true(res.due_us >= C + 800000 && res.due_us <= C + 1200000);
  assert_int_equal(jb_job_cancel(f->board, w, 0), JB_OK);
}

static void retry_to_the_dead_letters_buries_the_job_with_its_reason(
    void **state) {
  jbt_fixture *f = *state;
  char z[JB_UUID_STRLEN];
  jbt_post(z, f->board, "poison", JB_PRIORITY_NORMAL);
  claim_ok(f->board, z, "w", NULL);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  ro.reason = "cannot parse";
  jb_retry_result res;
  assert_int_equal(jb_retry(&res, f->board, z, "w", &ro), JB_OK);
  assert_true(res.dead);
  assert_int_equal(res.attempts, 1);
  gone(f->board, z);
  jb_dead_letter *l = dead_of(f->board, z);
  assert_int_equal(l->cause, JB_DEAD_BURIED);
  assert_string_equal(jb_dead_cause_name(l->cause), "buried");
  assert_string_equal(l->reason, "cannot parse");
  assert_int_equal(l->attempts, 1);
  jb_dead_free(l);
  jb_completion *c = completion_of(f->board, z);
  assert_int_equal(c->end, JB_END_DEAD);
  assert_string_equal(c->reason, "cannot parse");
  jb_completion_free(c);
  check_ok(f->board, 0);
}

/* opts NULL: at once, as an abandon that counts. */
static void retry_without_options_is_an_abandon_that_counts(void **state) {
  jbt_fixture *f = *state;
  char y[JB_UUID_STRLEN];
  jbt_post(y, f->board, "again", JB_PRIORITY_NORMAL);
  claim_ok(f->board, y, "w", NULL);
  assert_int_equal(jb_retry(NULL, f->board, y, "w", NULL), JB_OK);
  assert_int_equal(attempts_of(f->board, y), 1);
  next_is(f->board, y, "w");
  check_ok(f->board, 0);
}

/* A job sent to the dead letters by a failed attempt (a retry, an
 * abandon or a lapse at its last attempt) leaves its history record
 * trimmed to the handle's history_max, as a consume's is. */
static void a_dead_letters_history_record_keeps_the_bound(void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.history_max = 3;
  f->board = NULL;
  assert_int_equal(jb_board_open(&f->board, f->dir, &o), JB_OK);
  char u[JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) {
    jbt_post(u, f->board, "done", JB_PRIORITY_NORMAL);
    claim_ok(f->board, u, "w", NULL);
    assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  }
  jb_retry_policy pol = JB_RETRY_POLICY_INIT;
  pol.max_attempts = 1;
  assert_int_equal(jb_board_set_retry_policy(f->board, &pol), JB_OK);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  for (int i = 0; i < 2; i++) {
    jbt_post(u, f->board, "dies", JB_PRIORITY_NORMAL);
    claim_ok(f->board, u, "w", NULL);
    ro.flags = i ? 0 : JB_RETRY_DEAD; /* buried, then at its last attempt */
    jb_retry_result res;
    assert_int_equal(jb_retry(&res, f->board, u, "w", &ro), JB_OK);
    assert_true(res.dead);
    size_t n = 0;
    assert_int_equal(jb_history_count(&n, f->board), JB_OK);
    assert_int_equal(n, 3);
  }
  jbt_post(u, f->board, "abandoned", JB_PRIORITY_NORMAL);
  claim_ok(f->board, u, "w", NULL);
  assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
  size_t n = 0;
  assert_int_equal(jb_history_count(&n, f->board), JB_OK);
  assert_int_equal(n, 3);
  assert_int_equal(jb_dead_count(&n, f->board), JB_OK);
  assert_int_equal(n, 3);
}

static void bad_retries_are_refused_and_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], free_job[JB_UUID_STRLEN];
  jbt_post(u, f->board, "owned", JB_PRIORITY_NORMAL);
  jbt_post(free_job, f->board, "unclaimed", JB_PRIORITY_NORMAL);
  uint64_t t = claim_ok(f->board, u, "owner", NULL);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);

  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  assert_int_equal(jb_retry(NULL, f->board, u, "intruder", &ro),
                   JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "owner");
  ro.token = t + 1000;
  assert_int_equal(jb_retry(NULL, f->board, u, "owner", &ro),
                   JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "token");
  assert_int_equal(jb_retry(NULL, f->board, free_job, "owner", NULL),
                   JB_ENOTFOUND);

  struct {
    unsigned flags;
    int64_t delay_ms;
    const char *reason;
    const char *says;
  } bad[] = {
      {0x80, 0, NULL, "flags"},
      {0, -1, NULL, "delay"},
      {0, JB_DELAY_MAX_MS + 1, NULL, "delay"},
      {JB_RETRY_BACKOFF, 1000, NULL, "not both"},
      {0, 0, "\xff\xfe", "reason"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ro = (jb_retry_options)JB_RETRY_OPTIONS_INIT;
    ro.flags = bad[i].flags;
    ro.delay_ms = bad[i].delay_ms;
    ro.reason = bad[i].reason;
    assert_int_equal(jb_retry(NULL, f->board, u, "owner", &ro),
                     JB_EINVAL);
    jbt_assert_contains(jb_errmsg(), bad[i].says);
  }
  char *long_reason = malloc(JB_REASON_MAX + 2);
  memset(long_reason, 'r', JB_REASON_MAX + 1);
  long_reason[JB_REASON_MAX + 1] = '\0';
  ro = (jb_retry_options)JB_RETRY_OPTIONS_INIT;
  ro.reason = long_reason;
  assert_int_equal(jb_retry(NULL, f->board, u, "owner", &ro), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "reason");
  free(long_reason);
  ro = (jb_retry_options)JB_RETRY_OPTIONS_INIT;
  ro.version = 42;
  assert_int_equal(jb_retry(NULL, f->board, u, "owner", &ro), JB_EINVAL);
  assert_int_equal(jb_retry(NULL, f->board, "nope", "owner", NULL),
                   JB_EINVAL);
  assert_int_equal(jb_retry(NULL, f->board, u, "", NULL), JB_EINVAL);

  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  assert_int_equal(attempts_of(f->board, u), 0);
  assert_int_equal(dead_count(f->board), 0);
}

/* Posts "limited", with a time limit of 3 s. */
static void post_limited(jbt_fixture *f, char u[JB_UUID_STRLEN]) {
  jb_post p = JB_POST_INIT;
  p.name = "limited";
  p.time_limit_ms = 3000;
  post_ok(u, f->board, &p);
}

/* The lease asked for, extended, refreshed by a same-owner re-claim,
 * claim-next's, and a claim with no lease at all: each ends within the
 * job's time limit. */
static void a_time_limit_caps_every_lease(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_limited(f, u);
  jb_job *j = get(f->board, u);
  assert_int_equal(jb_job_time_limit(j), 3000);
  jb_job_free(j);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 60000;
  uint64_t t = claim_ok(f->board, u, "w", &o);
  jb_expiry e;
  int64_t left = -1;
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(left >= 0 && left <= 3000);
  /* Extended, or refreshed by a same-owner re-claim: still the limit. */
  assert_int_equal(jb_extend(f->board, u, "w", t, 60000), JB_OK);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(left >= 0 && left <= 3000);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_ECLAIMED);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_true(left >= 0 && left <= 3000);
  /* Claim-next's claim, and a claim with no lease at all. */
  assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", &o),
                   JB_OK);
  assert_string_equal(got, u);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(left >= 0 && left <= 3000);
  assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
  claim_ok(f->board, u, "w", NULL);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(left >= 0 && left <= 3000);
  check_ok(f->board, 0);
}

static void a_lease_shorter_than_the_time_limit_stays_as_asked(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_limited(f, u);
  claim_ok(f->board, u, "w", NULL);
  jb_expiry e;
  int64_t left = -1;
  assert_int_equal(jb_extend(f->board, u, "w", 0, 500), JB_OK);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_true(left >= 0 && left <= 500);
  check_ok(f->board, 0);
}

/* Whatever the lease. */
static void a_time_limit_reached_is_a_failed_attempt(void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "limited-1ms";
  p.time_limit_ms = 1;
  p.max_attempts = 1;
  post_ok(v, f->board, &p);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 60000;
  claim_ok(f->board, v, "slow", &o);
  sleep_ms(50);
  assert_int_equal(jb_claim(NULL, f->board, v, "other", NULL), JB_ENOTFOUND);
  gone(f->board, v);
  jb_dead_letter *l = dead_of(f->board, v);
  assert_int_equal(l->cause, JB_DEAD_ATTEMPTS);
  jbt_assert_contains(l->reason, "slow");
  jb_dead_free(l);
  check_ok(f->board, 0);
}

static void bad_time_limits_are_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "limited-1ms";
  p.max_attempts = 1;
  p.time_limit_ms = -1;
  assert_int_equal(jb_job_post(v, f->board, &p), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "time_limit_ms");
  p.time_limit_ms = JB_LEASE_MAX_MS + 1;
  assert_int_equal(jb_job_post(v, f->board, &p), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "time_limit_ms");
  check_ok(f->board, 0);
}

/* ----------------------------------------------------------- unique keys */

static void post_key(char uuid[JB_UUID_STRLEN], jb_board *b, const char *key,
                     int expect) {
  jb_post p = JB_POST_INIT;
  p.name = "keyed";
  p.unique_key = key;
  int rc = jb_job_post(uuid, b, &p);
  if (rc != expect) fail_msg("post with key %s: %s (%s), expected %s", key,
                             jb_strerror(rc), jb_errmsg(), jb_strerror(expect));
}

static void print_problem(const char *line, void *payload) {
  (void)payload;
  fprintf(stderr, "check: %s\n", line);
}

/* Overwrite job `uuid`'s jobx record with bytes that do not decode. */
typedef struct {
  uint8_t uuid[16];
} garble_ctx;

static int garble_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  garble_ctx *c = vctx;
  uint8_t junk[7] = {9, 9, 9, 9, 9, 9, 9};
  MDB_val k = {16, c->uuid}, v = {sizeof junk, junk};
  return mdb_put(txn, s->jobx, &k, &v, 0);
}

/* Posts `a` with the key "damaged-key" and overwrites its jobx record with
 * bytes that do not decode. */
static void post_keyed_and_garble_its_jobx(jbt_fixture *f,
                                           char a[JB_UUID_STRLEN]) {
  post_key(a, f->board, "damaged-key", JB_OK);
  garble_ctx g;
  assert_int_equal(jb__uuid_parse(g.uuid, a, "uuid"), JB_OK);
  assert_int_equal(jb__store_write(f->board->store, garble_body, &g), JB_OK);
}

static void check_reports_a_jobx_record_that_does_not_decode(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN];
  post_keyed_and_garble_its_jobx(f, a);
  assert_int_equal(jb_board_check(NULL, f->board, NULL, NULL), JB_ECORRUPT);
}

static void a_jobx_record_that_does_not_decode_blocks_nothing(void **state) {
  jbt_fixture *f = *state;
  const char *key = "damaged-key";
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  post_keyed_and_garble_its_jobx(f, a);
  /* The job still leaves the board (its record with it)... */
  int crc = jb_claim(NULL, f->board, a, "w", NULL);
  if (crc != JB_OK) fail_msg("claim: %s", jb_errmsg());
  assert_int_equal(jb_consume(f->board, a, "w", 0, NULL), JB_OK);
  assert_int_equal(count(f->board, 0), 0);
  /* ...and the key its record named, unreadable now, is free for the
   * next post that asks for it. */
  post_key(b, f->board, key, JB_OK);
  assert_string_not_equal(a, b);
  post_key(a, f->board, key, JB_EEXISTS);
  assert_string_equal(a, b);
  assert_int_equal(jb_board_check(NULL, f->board, print_problem, NULL),
                   JB_OK);
}

static const char *const held_key = "report-2026-11-28";

/* A second post of a held key is refused, naming the job that holds it,
 * and changes nothing. */
static void a_unique_key_is_held_by_one_live_job(void **state) {
  jbt_fixture *f = *state;
  const char *key = held_key;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  post_key(a, f->board, key, JB_OK);
  jb_job *j = get(f->board, a);
  assert_string_equal(jb_job_unique_key(j), key);
  jb_job_free(j);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  memset(b, 'x', sizeof b);
  post_key(b, f->board, key, JB_EEXISTS);
  assert_string_equal(b, a); /* names the job that holds it */
  jbt_assert_contains(jb_errmsg(), a);
  jbt_assert_contains(jb_errmsg(), key);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* In a batch: nothing posted, the holder named at the post's index. */
static void a_batch_post_of_a_held_key_names_the_holder_at_its_index(
    void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN];
  post_key(a, f->board, held_key, JB_OK);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  jb_post two[2] = {JB_POST_INIT, JB_POST_INIT};
  two[0].name = "first";
  two[0].unique_key = "another-key";
  two[1].name = "second";
  two[1].unique_key = held_key;
  char uu[2][JB_UUID_STRLEN];
  assert_int_equal(jb_job_post_batch(uu, f->board, two, 2), JB_EEXISTS);
  assert_string_equal(uu[1], a);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* Two posts of one batch with the same key: nothing posted, and no job
 * that is not on the board is named as the key's holder. */
static void a_batch_with_one_key_twice_is_refused_as_invalid(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN];
  post_key(a, f->board, held_key, JB_OK);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  jb_post two[2] = {JB_POST_INIT, JB_POST_INIT};
  two[0].name = "first";
  two[1].name = "second";
  two[0].unique_key = "twice";
  two[1].unique_key = "twice";
  char uu[2][JB_UUID_STRLEN];
  memset(uu, 0, sizeof uu);
  int rc = jb_job_post_batch(uu, f->board, two, 2);
  assert_int_not_equal(rc, JB_OK);
  if (rc == JB_EEXISTS)
    fail_msg("a batch with one key twice: JB_EEXISTS naming %s, a job that "
             "is not on the board", uu[1][0] ? uu[1] : uu[0]);
  assert_int_equal(rc, JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "unique key");
  assert_int_equal(count(f->board, 0), 1);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

static void bad_unique_keys_are_refused(void **state) {
  jbt_fixture *f = *state;
  char b[JB_UUID_STRLEN];
  post_key(b, f->board, "", JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "unique key");
  post_key(b, f->board, "schedule:mine", JB_EINVAL); /* the runs' own */
  jbt_assert_contains(jb_errmsg(), "schedules' runs' own");
  char longkey[JB_UNIQUE_MAX + 2];
  memset(longkey, 'k', sizeof longkey - 1);
  longkey[sizeof longkey - 1] = '\0';
  post_key(b, f->board, longkey, JB_EINVAL);
  post_key(b, f->board, "\xc3\x28", JB_EINVAL);
}

static void the_longest_unique_key_is_accepted(void **state) {
  jbt_fixture *f = *state;
  char longkey[JB_UNIQUE_MAX + 1];
  memset(longkey, 'k', JB_UNIQUE_MAX);
  longkey[JB_UNIQUE_MAX] = '\0';
  char lk[JB_UUID_STRLEN];
  post_key(lk, f->board, longkey, JB_OK);
}

static void a_claimed_job_still_holds_its_unique_key(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  post_key(a, f->board, held_key, JB_OK);
  claim_ok(f->board, a, "w", NULL);
  post_key(b, f->board, held_key, JB_EEXISTS);
}

static void a_consumed_job_frees_its_unique_key(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  post_key(a, f->board, held_key, JB_OK);
  claim_ok(f->board, a, "w", NULL);
  assert_int_equal(jb_consume(f->board, a, "w", 0, NULL), JB_OK);
  post_key(c, f->board, held_key, JB_OK);
  assert_string_not_equal(c, a);
}

static void a_cancelled_job_frees_its_unique_key(void **state) {
  jbt_fixture *f = *state;
  char c[JB_UUID_STRLEN], d[JB_UUID_STRLEN];
  post_key(c, f->board, held_key, JB_OK);
  assert_int_equal(jb_job_cancel(f->board, c, 0), JB_OK);
  post_key(d, f->board, held_key, JB_OK);
}

/* Posts `d` with held_key and sends it straight to the dead letters; then
 * posts `e` with the key, now free. */
static void bury_the_keys_holder_and_post_another(jbt_fixture *f,
                                                  char d[JB_UUID_STRLEN],
                                                  char e[JB_UUID_STRLEN]) {
  post_key(d, f->board, held_key, JB_OK);
  claim_ok(f->board, d, "w", NULL);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  assert_int_equal(jb_retry(NULL, f->board, d, "w", &ro), JB_OK);
  jb_dead_letter *l = dead_of(f->board, d);
  assert_string_equal(l->unique_key, held_key);
  jb_dead_free(l);
  post_key(e, f->board, held_key, JB_OK);
}

/* The letter keeps the key, but does not hold it. */
static void a_dead_lettered_job_frees_its_unique_key(void **state) {
  jbt_fixture *f = *state;
  char d[JB_UUID_STRLEN], e[JB_UUID_STRLEN];
  bury_the_keys_holder_and_post_another(f, d, e);
  assert_string_not_equal(d, e);
}

/* The letter stays. */
static void a_requeue_of_a_letter_whose_key_is_taken_names_the_holder(
    void **state) {
  jbt_fixture *f = *state;
  char d[JB_UUID_STRLEN], e[JB_UUID_STRLEN];
  bury_the_keys_holder_and_post_another(f, d, e);
  assert_int_equal(jb_dead_requeue(f->board, d, 0), JB_EEXISTS);
  jbt_assert_contains(jb_errmsg(), e);
  jb_dead_free(dead_of(f->board, d));
  gone(f->board, d);
}

/* The key's holder trashed (a dead letter too), the letter requeued holds
 * the key again. */
static void a_requeued_dead_letter_holds_its_unique_key_again(void **state) {
  jbt_fixture *f = *state;
  char b[JB_UUID_STRLEN], d[JB_UUID_STRLEN], e[JB_UUID_STRLEN];
  bury_the_keys_holder_and_post_another(f, d, e);
  assert_int_equal(jb_claim(NULL, f->board, e, "w", NULL), JB_OK);
  assert_int_equal(jb_trash(f->board, e, "w", 0), JB_OK);
  assert_int_equal(jb_dead_requeue(f->board, d, 0), JB_OK);
  post_key(b, f->board, held_key, JB_EEXISTS);
  assert_string_equal(b, d);
  check_ok(f->board, 0);
}

#define RACERS 8

typedef struct {
  const char *dir;
  int start_fd;
  int out_fd;
} racer_args;

typedef struct {
  int rc;
  char uuid[JB_UUID_STRLEN];
} racer_result;

static int racer(void *arg) {
  racer_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 2;
  racer_result r = {0, ""};
  jb_post p = JB_POST_INIT;
  p.name = "racing";
  p.unique_key = "the-one-key";
  r.rc = jb_job_post(r.uuid, b, &p);
  /* One write, smaller than PIPE_BUF: atomic among the racers. */
  if (write(a->out_fd, &r, sizeof r) != (ssize_t)sizeof r) return 3;
  jb_board_close(b);
  return 0;
}

static void processes_racing_for_one_key_post_one_job(void **state) {
  jbt_fixture *f = *state;
  int start[2], out[2];
  assert_int_equal(pipe(start), 0);
  assert_int_equal(pipe(out), 0);
  racer_args a = {f->dir, start[0], out[1]};
  pid_t pids[RACERS];
  for (int i = 0; i < RACERS; i++) pids[i] = jbt_fork(racer, &a, 120);
  close(out[1]);
  for (int i = 0; i < RACERS; i++)
    assert_int_equal(write(start[1], "g", 1), 1);
  close(start[0]);
  close(start[1]);
  racer_result r[RACERS];
  for (int i = 0; i < RACERS; i++) {
    ssize_t n = read(out[0], &r[i], sizeof r[i]);
    if (n != (ssize_t)sizeof r[i]) fail_msg("racer result %d: read %zd", i, n);
  }
  close(out[0]);
  for (int i = 0; i < RACERS; i++) jbt_wait_ok(pids[i], 120000);
  int winner = -1;
  for (int i = 0; i < RACERS; i++) {
    if (r[i].rc == JB_OK) {
      if (winner >= 0) fail_msg("two racers posted: %s and %s",
                                r[winner].uuid, r[i].uuid);
      winner = i;
    } else if (r[i].rc != JB_EEXISTS) {
      fail_msg("racer %d: %s", i, jb_strerror(r[i].rc));
    }
  }
  assert_true(winner >= 0);
  for (int i = 0; i < RACERS; i++)
    assert_string_equal(r[i].uuid, r[winner].uuid);
  assert_int_equal(count(f->board, 0), 1);
  jb_job *j = get(f->board, r[winner].uuid);
  assert_string_equal(jb_job_unique_key(j), "the-one-key");
  jb_job_free(j);
  check_ok(f->board, 0);
}

static void cancel_takes_an_unclaimed_job_off_the_board_as_cancelled(
    void **state) {
  jbt_fixture *f = *state;
  uint64_t from = log_next(f->board);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "unwanted", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
  gone(f->board, u);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_COMPLETE);
  jb_completion *c = completion_of(f->board, u);
  assert_int_equal(c->end, JB_END_CANCELLED);
  assert_string_equal(jb_end_name(c->end), "cancelled");
  assert_string_equal(c->name, "unwanted");
  jb_completion_free(c);
  assert_true(log_find(f->board, from, JB_EVENT_CANCELLED, u, NULL));
  assert_int_equal(dead_count(f->board), 0); /* not a dead letter */
}

static void cancel_of_a_cancelled_job_is_not_found(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "unwanted", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_ENOTFOUND);
}

/* Posts `v` and claims it as "holder"; returns the claim's token. */
static uint64_t post_held(jbt_fixture *f, char v[JB_UUID_STRLEN]) {
  jbt_post(v, f->board, "in-hand", JB_PRIORITY_NORMAL);
  return claim_ok(f->board, v, "holder", NULL);
}

/* Refused, naming the owner; nothing changes. */
static void cancel_of_a_claimed_job_is_refused_naming_the_holder(
    void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  post_held(f, v);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_job_cancel(f->board, v, 0), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "holder");
  jbt_snapshot_assert_unchanged(&before, f->board);
}

static void cancel_with_unknown_flags_or_a_malformed_uuid_changes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  post_held(f, v);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_job_cancel(f->board, v, 0x10), JB_EINVAL);
  assert_int_equal(jb_job_cancel(f->board, "not-a-uuid", 0), JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* Forced: gone, its end recorded with the holder's name. */
static void a_forced_cancel_takes_a_claimed_job(void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  post_held(f, v);
  uint64_t from = log_next(f->board);
  assert_int_equal(jb_job_cancel(f->board, v, JB_CANCEL_FORCE), JB_OK);
  gone(f->board, v);
  char owner[JB_WHO_MAX + 1];
  assert_true(log_find(f->board, from, JB_EVENT_CANCELLED, v, owner));
  assert_string_equal(owner, "holder");
  jb_completion *c = completion_of(f->board, v);
  assert_int_equal(c->end, JB_END_CANCELLED);
  assert_string_equal(c->owner, "holder");
  jb_completion_free(c);
}

/* Its holder can no longer act on it, and each refusal says why. */
static void the_holder_of_a_job_cancelled_by_force_is_told_so(void **state) {
  jbt_fixture *f = *state;
  char v[JB_UUID_STRLEN];
  uint64_t t = post_held(f, v);
  assert_int_equal(jb_job_cancel(f->board, v, JB_CANCEL_FORCE), JB_OK);
  assert_int_equal(jb_consume(f->board, v, "holder", t, NULL), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), v);
  jbt_assert_contains(jb_errmsg(), "cancelled");
  assert_int_equal(jb_extend(f->board, v, "holder", t, 1000),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "cancelled");
  assert_int_equal(jb_abandon(f->board, v, "holder", 0), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "cancelled");
  assert_int_equal(jb_consume(f->board, v, "holder", t,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, NULL, 0}),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "(it was cancelled)");
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.token = t;
  assert_int_equal(jb_retry(NULL, f->board, v, "holder", &ro),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "(it was cancelled)");
}

static void a_consumed_job_is_not_said_to_be_cancelled(void **state) {
  jbt_fixture *f = *state;
  char done[JB_UUID_STRLEN];
  jbt_post(done, f->board, "done", JB_PRIORITY_NORMAL);
  claim_ok(f->board, done, "holder", NULL);
  assert_int_equal(jb_consume(f->board, done, "holder", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, done, "holder", 0, NULL), JB_ENOTFOUND);
  assert_null(strstr(jb_errmsg(), "cancelled"));
}

static void cancel_takes_a_delayed_job(void **state) {
  jbt_fixture *f = *state;
  char w[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "delayed";
  p.delay_ms = 3600 * 1000;
  post_ok(w, f->board, &p);
  check_ok(f->board, 1);
  assert_int_equal(jb_job_cancel(f->board, w, 0), JB_OK);
  gone(f->board, w);
  jb_completion *c = completion_of(f->board, w);
  assert_int_equal(c->end, JB_END_CANCELLED);
  jb_completion_free(c);
  assert_int_equal(count(f->board, 0), 0);
  check_ok(f->board, 0);
}

/* The board of the cancel-unclaimed tests: ready jobs r1 and r2, a
 * delayed d1 holding the key "flushed-key", `held` claimed by "holder",
 * and MANY more (every third delayed), many more than one transaction's
 * worth (256). */
enum { MANY = 600 };
typedef struct {
  char r1[JB_UUID_STRLEN], r2[JB_UUID_STRLEN], d1[JB_UUID_STRLEN],
      held[JB_UUID_STRLEN];
  char many_u[MANY][JB_UUID_STRLEN];
} flush_board;

/* Fills the board as above, the uuids into *fb, and cancels every
 * unclaimed job; returns how many went. */
static size_t fill_and_cancel_unclaimed(jbt_fixture *f, flush_board *fb) {
  jbt_post(fb->r1, f->board, "ready-1", JB_PRIORITY_LOW);
  jbt_post(fb->held, f->board, "held", JB_PRIORITY_HIGH);
  jbt_post(fb->r2, f->board, "ready-2", JB_PRIORITY_VERY_HIGH);
  jb_post p = JB_POST_INIT;
  p.name = "delayed";
  p.delay_ms = 3600 * 1000;
  p.unique_key = "flushed-key";
  post_ok(fb->d1, f->board, &p);
  claim_ok(f->board, fb->held, "holder", NULL);
  static jb_post many[MANY];
  for (int i = 0; i < MANY; i++) {
    many[i] = (jb_post)JB_POST_INIT;
    many[i].name = "bulk";
    many[i].priority = (jb_priority)(i % 5);
    if (i % 3 == 0) many[i].delay_ms = 1000 * (i + 1);
  }
  assert_int_equal(jb_job_post_batch(fb->many_u, f->board, many, MANY), JB_OK);
  size_t n = 0;
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  return n;
}

/* Ready and delayed alike, each ending as cancelled. */
static void cancel_unclaimed_cancels_every_unclaimed_job(void **state) {
  jbt_fixture *f = *state;
  static flush_board fb;
  size_t n = fill_and_cancel_unclaimed(f, &fb);
  assert_int_equal(n, 3 + MANY);
  assert_int_equal(count(f->board, 0), 1);
  const char *cancelled[] = {fb.r1, fb.r2, fb.d1, fb.many_u[0],
                             fb.many_u[MANY - 1]};
  for (size_t i = 0; i < sizeof cancelled / sizeof cancelled[0]; i++) {
    gone(f->board, cancelled[i]);
    jb_completion *c = completion_of(f->board, cancelled[i]);
    assert_int_equal(c->end, JB_END_CANCELLED);
    jb_completion_free(c);
  }
}

static void cancel_unclaimed_leaves_claimed_jobs(void **state) {
  jbt_fixture *f = *state;
  static flush_board fb;
  fill_and_cancel_unclaimed(f, &fb);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, fb.held), JB_OK);
  assert_int_equal(st, JB_STATE_CLAIMED);
  assert_int_equal(jb_consume(f->board, fb.held, "holder", 0, NULL), JB_OK);
  check_ok(f->board, 0);
}

/* The delayed job's key is free again. */
static void cancel_unclaimed_frees_the_keys_of_the_jobs_it_cancels(
    void **state) {
  jbt_fixture *f = *state;
  static flush_board fb;
  fill_and_cancel_unclaimed(f, &fb);
  char again[JB_UUID_STRLEN];
  post_key(again, f->board, "flushed-key", JB_OK);
  size_t n = 0;
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  assert_int_equal(n, 1);
}

static void cancel_unclaimed_with_nothing_unclaimed_cancels_nothing(
    void **state) {
  jbt_fixture *f = *state;
  static flush_board fb;
  fill_and_cancel_unclaimed(f, &fb);
  size_t n = 99;
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  assert_int_equal(n, 0);
}

/* ----------------------------------------------------------------- check */

static void check_passes_a_board_with_a_jobs_life(void **state) {
  jbt_fixture *f = *state;
  const int64_t T = base_time();
  clock_at(T);
  jb_post p = JB_POST_INIT;
  char u[JB_UUID_STRLEN];
  /* Delayed (posted so, and retried with a delay). */
  p.name = "delayed";
  p.delay_ms = 60000;
  p.unique_key = "delayed-key";
  post_ok(u, f->board, &p);
  p = (jb_post)JB_POST_INIT;
  p.name = "retried";
  p.max_attempts = 5;
  p.time_limit_ms = 60000;
  post_ok(u, f->board, &p);
  claim_ok(f->board, u, "w", NULL);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.delay_ms = 30000;
  ro.reason = "later";
  assert_int_equal(jb_retry(NULL, f->board, u, "w", &ro), JB_OK);
  /* Attempts on a ready job, and a claimed one under a time limit. */
  char a[JB_UUID_STRLEN], l[JB_UUID_STRLEN];
  p = (jb_post)JB_POST_INIT;
  p.name = "abandoned";
  p.unique_key = "abandoned-key";
  post_ok(a, f->board, &p);
  claim_ok(f->board, a, "w", NULL);
  assert_int_equal(jb_abandon(f->board, a, "w", 0), JB_OK);
  p = (jb_post)JB_POST_INIT;
  p.name = "limited";
  p.time_limit_ms = 60000;
  post_ok(l, f->board, &p);
  claim_ok(f->board, l, "w", NULL);
  /* Dead letters: buried, out of attempts, trashed. */
  char z[JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) {
    p = (jb_post)JB_POST_INIT;
    p.name = "dying";
    p.max_attempts = 1;
    if (i == 0) p.unique_key = "dead-key";
    post_ok(z, f->board, &p);
    claim_ok(f->board, z, "w", NULL);
    ro = (jb_retry_options)JB_RETRY_OPTIONS_INIT;
    ro.flags = i == 0 ? JB_RETRY_DEAD : 0;
    if (i < 2)
      assert_int_equal(jb_retry(NULL, f->board, z, "w", &ro), JB_OK);
    else
      assert_int_equal(jb_trash(f->board, z, "w", 0), JB_OK);
  }
  assert_int_equal(dead_count(f->board), 3);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.trashed, 3);
  assert_int_equal(st.jobs, 4);
  check_ok(f->board, 2);
  /* And after the delayed ones are due and claimed. */
  clock_at(T + 61 * SEC);
  char got[JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++)
    assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "late", NULL), JB_OK);
  next_none(f->board);
  check_ok(f->board, 0);
  /* And after a requeue (the trashed one: a letter of format 2 too). */
  assert_int_equal(jb_dead_requeue(f->board, z, 0), JB_OK);
  assert_int_equal(dead_count(f->board), 2);
  check_ok(f->board, 0);
}

/* A requeued dead letter keeps its uuid under a new sequence: its old
 * life's completion record (history: dead) must not keep salvage from
 * copying it, while a job consumed after a requeue stays gone. */
static void salvage_copies_a_requeued_dead_letter(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  char live[JB_UUID_STRLEN], done[JB_UUID_STRLEN];
  p.name = "requeued";
  post_ok(live, f->board, &p);
  p.name = "requeued-then-consumed";
  post_ok(done, f->board, &p);
  const char *both[] = {live, done};
  for (int i = 0; i < 2; i++) {
    claim_ok(f->board, both[i], "w", NULL);
    jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
    ro.flags = JB_RETRY_DEAD;
    ro.reason = "poison";
    assert_int_equal(jb_retry(NULL, f->board, both[i], "w", &ro), JB_OK);
    assert_int_equal(jb_dead_requeue(f->board, both[i], 0), JB_OK);
  }
  claim_ok(f->board, done, "w", NULL);
  assert_int_equal(jb_consume(f->board, done, "w", 0, NULL), JB_OK);
  char *dst = jbt_path(f->dir, "salvaged");
  jb_salvage_stats st;
  assert_int_equal(jb_board_salvage(&st, f->dir, dst, NULL, NULL), JB_OK);
  assert_int_equal(st.copied, 1);
  assert_int_equal(st.completed, 0);
  assert_int_equal(st.history, 3);
  jb_board *b = jbt_open(dst, JB_DURABILITY_NORMAL, 0);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, live), JB_OK);
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  assert_string_equal(jb_job_name(job), "requeued");
  jb_job_free(job);
  assert_int_equal(jb_job_get(&job, b, done), JB_ENOTFOUND);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 1);
  jb_board_close(b);
  jbt_rmtree(dst);
  free(dst);
}

int main(void) {
  jbt_watchdog(600);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(a_delayed_job_is_not_claimable_before_its_due_time),
      T(a_delayed_job_is_listed_in_its_place_with_its_due_time),
      T(a_delayed_job_is_not_listed_among_the_claimable_ones),
      T(a_delayed_job_at_its_due_time_is_claimed_in_priority_order),
      T(a_job_posted_with_delay_ms_is_due_that_long_after_its_post),
      T(a_due_time_already_past_is_claimable_at_once),
      T(bad_due_times_are_refused_and_write_nothing),
      T(post_check_refuses_bad_due_times_naming_the_field),
      T(a_batch_with_a_bad_due_time_writes_nothing_naming_its_index),
      T(the_longest_delay_and_the_furthest_due_time_are_accepted),
      T(a_waiter_wakes_when_a_job_becomes_due),
      T(a_job_posted_with_max_attempts_starts_with_none_used),
      T(failed_attempts_before_the_last_leave_the_job_claimable),
      T(the_last_allowed_attempt_sends_the_job_to_the_dead_letters),
      T(a_dead_letter_keeps_the_jobs_posting_and_how_it_died),
      T(a_job_sent_to_the_dead_letters_completes_as_dead),
      T(a_requeued_dead_letter_is_back_with_its_attempts_from_zero),
      T(a_requeued_job_that_dies_again_has_only_its_new_lifes_reason),
      T(a_requeue_keeping_attempts_makes_the_next_failure_the_last),
      T(a_requeue_with_unknown_flags_or_a_malformed_uuid_is_invalid),
      T(a_requeue_of_a_job_on_the_board_is_not_found),
      T(dead_get_of_a_job_on_the_board_is_not_found),
      T(dead_purge_takes_the_letters_dead_before_the_time_given),
      T(the_default_retry_policy_has_no_maximum_and_a_1s_backoff),
      T(bad_retry_policies_are_refused_naming_the_field),
      T(a_retry_policy_set_is_read_by_another_handle),
      T(the_boards_retry_policy_applies_to_jobs_without_their_own),
      T(a_jobs_own_max_attempts_wins_over_the_boards),
      T(dead_foreach_walks_the_dead_letters),
      T(a_lapsed_claim_counts_an_attempt),
      T(a_last_attempts_lapse_found_by_claim_next_kills_the_job),
      T(a_last_attempts_lapse_found_by_a_claim_of_its_uuid_kills_it),
      T(a_last_attempts_lapsed_lease_kills_the_job),
      T(retry_with_a_delay_makes_the_job_due_exactly_then),
      T(retry_with_backoff_doubles_the_jobs_per_attempt_up_to_its_max),
      T(retry_with_backoff_of_a_job_without_its_own_takes_the_boards),
      T(retry_to_the_dead_letters_buries_the_job_with_its_reason),
      T(retry_without_options_is_an_abandon_that_counts),
      T(a_dead_letters_history_record_keeps_the_bound),
      T(bad_retries_are_refused_and_change_nothing),
      T(a_time_limit_caps_every_lease),
      T(a_lease_shorter_than_the_time_limit_stays_as_asked),
      T(a_time_limit_reached_is_a_failed_attempt),
      T(bad_time_limits_are_refused_naming_the_field),
      T(a_unique_key_is_held_by_one_live_job),
      T(a_batch_post_of_a_held_key_names_the_holder_at_its_index),
      T(a_batch_with_one_key_twice_is_refused_as_invalid),
      T(bad_unique_keys_are_refused),
      T(the_longest_unique_key_is_accepted),
      T(a_claimed_job_still_holds_its_unique_key),
      T(a_consumed_job_frees_its_unique_key),
      T(a_cancelled_job_frees_its_unique_key),
      T(a_dead_lettered_job_frees_its_unique_key),
      T(a_requeue_of_a_letter_whose_key_is_taken_names_the_holder),
      T(a_requeued_dead_letter_holds_its_unique_key_again),
      T(check_reports_a_jobx_record_that_does_not_decode),
      T(a_jobx_record_that_does_not_decode_blocks_nothing),
      T(processes_racing_for_one_key_post_one_job),
      T(cancel_takes_an_unclaimed_job_off_the_board_as_cancelled),
      T(cancel_of_a_cancelled_job_is_not_found),
      T(cancel_of_a_claimed_job_is_refused_naming_the_holder),
      T(cancel_with_unknown_flags_or_a_malformed_uuid_changes_nothing),
      T(a_forced_cancel_takes_a_claimed_job),
      T(the_holder_of_a_job_cancelled_by_force_is_told_so),
      T(a_consumed_job_is_not_said_to_be_cancelled),
      T(cancel_takes_a_delayed_job),
      T(cancel_unclaimed_cancels_every_unclaimed_job),
      T(cancel_unclaimed_leaves_claimed_jobs),
      T(cancel_unclaimed_frees_the_keys_of_the_jobs_it_cancels),
      T(cancel_unclaimed_with_nothing_unclaimed_cancels_nothing),
      T(check_passes_a_board_with_a_jobs_life),
      T(salvage_copies_a_requeued_dead_letter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
