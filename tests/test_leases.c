/*
 * test_leases.c - claims that end by themselves: leases lapse (and not
 * before), extend keeps them, a same-owner re-claim refreshes them;
 * claims bound to a process lapse when it is killed (even while it is an
 * unreaped zombie) and are not kept alive by a reused pid; fencing tokens
 * increase across handles, reopens and processes, and a stale one is
 * refused even under the right owner name; claims of an earlier boot lapse
 * when the board is opened after a reboot; schema 1 boards are upgraded.
 *
 * Durations here are bounds the behaviour must respect, never speed
 * figures: "not before" is checked while jb_job_expires_in still reports
 * time left, "after" by waiting past the lease.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"

#include <errno.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static jb_claim_options lease(int64_t ms) {
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = ms;
  return o;
}

static jb_state state_of(jb_board *b, const char *uuid) {
  jb_state st = JB_STATE_COMPLETE;
  assert_int_equal(jb_job_get_state(&st, b, uuid), JB_OK);
  return st;
}

static uint64_t claim_ok(jb_board *b, const char *uuid, const char *who,
                         const jb_claim_options *o) {
  uint64_t token = 0;
  int rc = jb_claim(&token, b, uuid, who, o);
  if (rc != JB_OK) fail_msg("claim %s as %s: %s", uuid, who, jb_errmsg());
  assert_true(token > 0);
  return token;
}

/* ---------------------------------------------------------------- leases */

/* Monotonic milliseconds (the same clock as the leases). */
static int64_t boot_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void a_lease_of_200ms_lapses_and_not_before(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  char owner[JB_WHO_MAX + 1];
  jb_expiry e;
  int64_t left = -1;
  size_t n = 9;
  /* Before: while time is left, the claim holds for everyone. The checks
   * take a few milliseconds; should the machine stall past the lease
   * meanwhile (a loaded CI, a sanitizer build), the attempt says nothing
   * and is made again with a new job. */
  size_t posted = 0;
  for (int attempt = 0;; attempt++) {
    jbt_post(u, f->board, "leased", JB_PRIORITY_NORMAL);
    posted++;
    jb_claim_options o = lease(200);
    int64_t t0 = boot_ms();
    claim_ok(f->board, u, "first", &o);
    int rc_e = jb_job_expires_in(&e, &left, f->board, u);
    int rc_c = jb_claim(NULL, f->board, u, "second", NULL);
    jb_state st = state_of(f->board, u);
    int rc_o = jb_job_find_owner(owner, f->board, u);
    int rc_n = jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED);
    if (boot_ms() - t0 >= 150 && attempt < 5) continue;
    assert_int_equal(rc_e, JB_OK);
    assert_int_equal(e, JB_EXPIRY_AT);
    assert_true(left > 0 && left <= 200);
    assert_int_equal(rc_c, JB_ECLAIMED);
    assert_int_equal(st, JB_STATE_CLAIMED);
    assert_int_equal(rc_o, JB_OK);
    assert_string_equal(owner, "first");
    assert_int_equal(rc_n, JB_OK);
    assert_int_equal(n, 0);
    break;
  }
  /* After: unclaimed for every reader, and claimable by another. */
  sleep_ms(260);
  assert_int_equal(state_of(f->board, u), JB_STATE_UNCLAIMED);
  assert_int_equal(jb_job_find_owner(owner, f->board, u), JB_OK);
  assert_string_equal(owner, "");
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_NOT_CLAIMED);
  assert_int_equal(jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, posted); /* every attempt's lease lapsed */
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, u), JB_OK);
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  assert_null(jb_job_owner(j));
  jb_job_free(j);
  claim_ok(f->board, u, "second", NULL);
  jbt_assert_check_ok(f->board);
}

/* Its lease gone and the job claimed by another, the first owner cannot
 * act on it. */
static void the_owner_of_a_lapsed_lease_cannot_act_once_another_claims(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "leased", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(200);
  claim_ok(f->board, u, "first", &o);
  sleep_ms(260);
  claim_ok(f->board, u, "second", NULL);
  assert_int_equal(jb_consume(f->board, u, "first", 0, NULL), JB_ENOTOWNER);
}

/* Posts a job and claims it for 100 ms as "w1" through claim-next, which
 * then has nothing for "w2"; returns once the lease has lapsed. */
static void claim_next_briefly_and_lapse(jbt_fixture *f,
                                         char u[JB_UUID_STRLEN]) {
  char got[JB_UUID_STRLEN];
  jbt_post(u, f->board, "only", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(100);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w1", &o),
                   JB_OK);
  assert_string_equal(got, u);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w2", NULL), JB_ENOTFOUND);
  sleep_ms(150);
}

static void claim_next_hands_out_a_job_whose_lease_lapsed(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  claim_next_briefly_and_lapse(f, u);
  jb_job *job = NULL;
  assert_int_equal(jb_claim_next(got, &job, NULL, f->board, "w2", NULL), JB_OK);
  assert_string_equal(got, u);
  assert_string_equal(jb_job_owner(job), "w2");
  jb_job_free(job);
  /* Its lapse was logged, and the board is consistent. */
  jbt_assert_check_ok(f->board);
}

/* Before any write returned it. */
static void the_unclaimed_listing_shows_a_job_whose_lease_lapsed(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claim_next_briefly_and_lapse(f, u);
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  const jb_job *j = NULL;
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_string_equal(jb_job_uuid(j), u);
  jb_iter_close(it);
}

/* Posts a job and claims it as "w" for 400 ms; returns the token. */
static uint64_t claim_for_400ms(jbt_fixture *f, char u[JB_UUID_STRLEN]) {
  jbt_post(u, f->board, "long", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(400);
  return claim_ok(f->board, u, "w", &o);
}

static void extend_keeps_a_lease_past_its_first_expiry(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t = claim_for_400ms(f, u);
  sleep_ms(100);
  assert_int_equal(jb_extend(f->board, u, "w", t, 2000), JB_OK);
  sleep_ms(500); /* 600 ms after the claim: past the first lease */
  assert_int_equal(state_of(f->board, u), JB_STATE_CLAIMED);
  jb_expiry e;
  int64_t left = 0;
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  assert_true(left > 0 && left <= 1500);
  assert_int_equal(jb_claim(NULL, f->board, u, "other", NULL), JB_ECLAIMED);
  jbt_assert_check_ok(f->board);
}

static void extend_by_another_owner_is_refused_naming_the_owner(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claim_for_400ms(f, u);
  assert_int_equal(jb_extend(f->board, u, "other", 0, 1000), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "w");
}

static void extend_with_a_stale_token_is_refused_naming_tokens(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t = claim_for_400ms(f, u);
  assert_int_equal(jb_extend(f->board, u, "w", t + 1000, 1000),
                   JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "token");
}

/* Posts a job and claims it as "w" with no lease. */
static void claim_plainly(jbt_fixture *f, char p[JB_UUID_STRLEN]) {
  jbt_post(p, f->board, "plain", JB_PRIORITY_NORMAL);
  claim_ok(f->board, p, "w", NULL);
}

static void extend_gives_a_plain_claim_a_lease(void **state) {
  jbt_fixture *f = *state;
  char p[JB_UUID_STRLEN];
  claim_plainly(f, p);
  jb_expiry e;
  int64_t left = 0;
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, p), JB_OK);
  assert_int_equal(e, JB_EXPIRY_NONE);
  assert_int_equal(jb_extend(f->board, p, "w", 0, 100), JB_OK);
  assert_int_equal(jb_job_expires_in(&e, &left, f->board, p), JB_OK);
  assert_int_equal(e, JB_EXPIRY_AT);
  sleep_ms(150);
  assert_int_equal(state_of(f->board, p), JB_STATE_UNCLAIMED);
}

/* Nobody owns it. */
static void extend_of_a_lapsed_claim_is_not_found_saying_it_lapsed(
    void **state) {
  jbt_fixture *f = *state;
  char p[JB_UUID_STRLEN];
  claim_plainly(f, p);
  assert_int_equal(jb_extend(f->board, p, "w", 0, 100), JB_OK);
  sleep_ms(150);
  assert_int_equal(jb_extend(f->board, p, "w", 0, 100), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "lapsed");
  jbt_assert_check_ok(f->board);
}

/* Posts a job, claims it as "w" for 600 ms and, 350 ms later, claims it
 * again as "w"; the two claims' tokens go to *t and *t2. */
static void claim_and_reclaim(jbt_fixture *f, char u[JB_UUID_STRLEN],
                              uint64_t *t, uint64_t *t2) {
  jbt_post(u, f->board, "refresh", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(600);
  *t = claim_ok(f->board, u, "w", &o);
  sleep_ms(350);
  *t2 = 0;
  assert_int_equal(jb_claim(t2, f->board, u, "w", NULL), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "w");
}

static void a_same_owner_reclaim_refreshes_the_lease(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t, t2;
  claim_and_reclaim(f, u, &t, &t2);
  sleep_ms(350); /* 700 ms after the claim, 350 after the refresh */
  assert_int_equal(state_of(f->board, u), JB_STATE_CLAIMED);
  jbt_assert_check_ok(f->board);
}

static void a_same_owner_reclaim_returns_the_claims_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t, t2;
  claim_and_reclaim(f, u, &t, &t2);
  assert_int_equal(t2, t); /* the same claim: the same token */
}

static void bad_leases_are_refused_and_change_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "x", JB_PRIORITY_NORMAL);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  jb_claim_options o = lease(-5);
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "lease");
  o = lease(JB_LEASE_MAX_MS + 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", &o),
                   JB_EINVAL);
  o = lease(10);
  o.flags = 0x80;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "flags");
  o = lease(10);
  o.version = 99;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &o), JB_EINVAL);
  assert_int_equal(jb_extend(f->board, u, "w", 0, 0), JB_EINVAL);
  assert_int_equal(jb_extend(f->board, u, "w", 0, -1), JB_EINVAL);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

/* Nobody owns it. */
static void extend_of_an_unclaimed_job_is_not_found_and_changes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "x", JB_PRIORITY_NORMAL);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_extend(f->board, u, "w", 0, 100), JB_ENOTFOUND);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

static void expires_in_of_an_unclaimed_job_says_not_claimed(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "x", JB_PRIORITY_NORMAL);
  jb_expiry e = JB_EXPIRY_AT;
  assert_int_equal(jb_job_expires_in(&e, NULL, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_NOT_CLAIMED);
}

static void expires_in_of_a_malformed_uuid_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_expiry e = JB_EXPIRY_AT;
  assert_int_equal(jb_job_expires_in(&e, NULL, f->board, "not-a-uuid"),
                   JB_EINVAL);
}

/* Posts a job and claims it as "worker" for 100 ms; once that lease has
 * lapsed, claims it again under the same name. The two tokens go to *t1
 * and *t2. */
static void lapse_and_reclaim(jbt_fixture *f, char u[JB_UUID_STRLEN],
                              uint64_t *t1, uint64_t *t2) {
  jbt_post(u, f->board, "fenced", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(100);
  *t1 = claim_ok(f->board, u, "worker", &o);
  sleep_ms(150);
  *t2 = claim_ok(f->board, u, "worker", NULL);
}

static void a_stale_token_is_refused_after_a_lapse_and_reclaim(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t1, t2;
  lapse_and_reclaim(f, u, &t1, &t2);
  assert_true(t2 > t1);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_consume(f->board, u, "worker", t1, NULL), JB_ENOTOWNER);
  char t1s[32], t2s[32];
  snprintf(t1s, sizeof t1s, "%llu", (unsigned long long)t1);
  snprintf(t2s, sizeof t2s, "%llu", (unsigned long long)t2);
  jbt_assert_contains(jb_errmsg(), t1s);
  jbt_assert_contains(jb_errmsg(), t2s);
  assert_int_equal(jb_abandon(f->board, u, "worker", t1), JB_ENOTOWNER);
  assert_int_equal(jb_trash(f->board, u, "worker", t1), JB_ENOTOWNER);
  assert_int_equal(jb_extend(f->board, u, "worker", t1, 100), JB_ENOTOWNER);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

static void the_token_of_a_claim_after_a_lapse_acts(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t1, t2;
  lapse_and_reclaim(f, u, &t1, &t2);
  assert_int_equal(jb_consume(f->board, u, "worker", t2, NULL), JB_OK);
  assert_int_equal(state_of(f->board, u), JB_STATE_COMPLETE);
}

/* Posts a job and claims it as "me", bound to this process and for 5 s;
 * returns the claim's token, and the job as it then is in *j. */
static uint64_t claim_bound_for_5s(jbt_fixture *f, char u[JB_UUID_STRLEN],
                                   jb_job **j) {
  jbt_post(u, f->board, "snap", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(5000);
  o.flags = JB_CLAIM_BIND_PROCESS;
  uint64_t t = claim_ok(f->board, u, "me", &o);
  *j = NULL;
  assert_int_equal(jb_job_get(j, f->board, u), JB_OK);
  return t;
}

static void the_job_snapshot_reports_the_claims_token(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_job *j;
  uint64_t t = claim_bound_for_5s(f, u, &j);
  assert_int_equal(jb_job_token(j), t);
  jb_job_free(j);
  assert_int_equal(jb_consume(f->board, u, "me", t, NULL), JB_OK);
}

static void the_job_snapshot_reports_the_live_holder(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_job *j;
  claim_bound_for_5s(f, u, &j);
  assert_int_equal(jb_job_holder_pid(j), (int)getpid());
  assert_true(jb_job_holder_alive(j));
  jb_job_free(j);
}

/* On the wall clock, 5 s from the claim. */
static void the_job_snapshot_reports_when_the_lease_ends(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_job *j;
  claim_bound_for_5s(f, u, &j);
  int64_t wall = 0;
  {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    wall = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  }
  int64_t exp = jb_job_lease_expires(j);
  assert_true(exp > wall && exp <= wall + 5000 * 1000 + 1000);
  jb_job_free(j);
}


typedef struct {
  const char *dir;
  int out_fd;
  int n;
} token_args;

/* Claim and consume n jobs, writing each token to out_fd. */
static int token_child(void *arg) {
  token_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  for (int i = 0; i < a->n; i++) {
    char u[JB_UUID_STRLEN];
    uint64_t t = 0;
    if (jb_claim_next(u, NULL, &t, b, "child", NULL) != JB_OK) return 2;
    if (write(a->out_fd, &t, sizeof t) != (ssize_t)sizeof t) return 3;
    if (jb_consume(b, u, "child", t, NULL) != JB_OK) return 4;
  }
  jb_board_close(b);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Posts 40 jobs, claims and consumes one as "p" (token *t1), reopens the
 * board, and claims another as "p" (token *t2, its uuid in u). */
static void claim_across_a_reopen(jbt_fixture *f, char u[JB_UUID_STRLEN],
                                  uint64_t *t1, uint64_t *t2) {
  for (int i = 0; i < 40; i++)
    jbt_post(NULL, f->board, "t", JB_PRIORITY_NORMAL);
  *t1 = 0;
  assert_int_equal(jb_claim_next(u, NULL, t1, f->board, "p", NULL),
                   JB_OK);
  assert_int_equal(jb_consume(f->board, u, "p", 0, NULL), JB_OK);
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  *t2 = 0;
  assert_int_equal(jb_claim_next(u, NULL, t2, f->board, "p", NULL),
                   JB_OK);
}

static void tokens_increase_across_a_reopen(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t1, t2;
  claim_across_a_reopen(f, u, &t1, &t2);
  assert_true(t2 > t1);
}

/* Two processes claim 19 jobs each; their 38 tokens, sorted, into got[]. */
static void race_two_claiming_processes(jbt_fixture *f, uint64_t got[38]) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  token_args a = {f->dir, fds[1], 19};
  pid_t p1 = jbt_fork(token_child, &a, 60);
  pid_t p2 = jbt_fork(token_child, &a, 60);
  close(fds[1]);
  size_t n = 0;
  while (n < 38 && read(fds[0], &got[n], sizeof got[n]) == (ssize_t)sizeof got[n])
    n++;
  close(fds[0]);
  jbt_wait_ok(p1, 60000);
  jbt_wait_ok(p2, 60000);
  assert_int_equal(n, 38);
  qsort(got, n, sizeof got[0], cmp_u64);
}

/* Two processes racing: every token distinct and above t2. */
static void tokens_of_racing_processes_are_distinct_and_increase(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t1, t2, got[38];
  claim_across_a_reopen(f, u, &t1, &t2);
  race_two_claiming_processes(f, got);
  assert_true(got[0] > t2);
  for (size_t i = 1; i < 38; i++) assert_true(got[i] > got[i - 1]);
}

/* Whatever tokens others got since, a same-owner re-claim returns the
 * claim's own. */
static void a_reclaim_returns_the_claims_token_after_others_claimed(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t t1, t2, got[38];
  claim_across_a_reopen(f, u, &t1, &t2);
  race_two_claiming_processes(f, got);
  uint64_t t3 = 0;
  assert_int_equal(jb_claim(&t3, f->board, u, "p", NULL), JB_ECLAIMED);
  assert_int_equal(t3, t2);
}

/* ------------------------------------------------- process-bound claims */

typedef struct {
  const char *dir;
  int out_fd;
} bound_args;

/* Claim one job bound to this process, report its uuid, then wait to be
 * killed. */
static int bound_child(void *arg) {
  bound_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  char u[JB_UUID_STRLEN];
  if (jb_claim_next(u, NULL, NULL, b, "doomed", &o) != JB_OK) return 2;
  if (write(a->out_fd, u, JB_UUID_STRLEN) != JB_UUID_STRLEN) return 3;
  for (;;) pause();
}

/* Posts a job and has a child claim it bound to itself; returns the
 * child's pid once it holds the claim. */
static pid_t start_bound_holder(jbt_fixture *f, char u[JB_UUID_STRLEN]) {
  jbt_post(u, f->board, "bound", JB_PRIORITY_NORMAL);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  bound_args a = {f->dir, fds[1]};
  pid_t pid = jbt_fork(bound_child, &a, 60);
  close(fds[1]);
  char got[JB_UUID_STRLEN];
  assert_int_equal(read(fds[0], got, sizeof got), (ssize_t)sizeof got);
  close(fds[0]);
  assert_string_equal(got, u);
  return pid;
}

static void a_bound_claim_names_its_live_holder(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  pid_t pid = start_bound_holder(f, u);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, u), JB_OK);
  assert_int_equal(jb_job_holder_pid(j), (int)pid);
  assert_true(jb_job_holder_alive(j));
  jb_job_free(j);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(jbt_wait(pid, 10000) != -1, 1);
}

/* The claim, with no expiry, holds while its holder runs; once the holder
 * is killed (even before it is reaped) the job is free. */
static void a_killed_holder_frees_its_job_without_any_expiry(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  pid_t pid = start_bound_holder(f, u);
  assert_int_equal(state_of(f->board, u), JB_STATE_CLAIMED);
  jb_expiry e;
  assert_int_equal(jb_job_expires_in(&e, NULL, f->board, u), JB_OK);
  assert_int_equal(e, JB_EXPIRY_NONE);
  assert_int_equal(jb_claim(NULL, f->board, u, "other", NULL), JB_ECLAIMED);
  /* claim-next looks at the holder while it runs (nothing else is ready),
   * and must look at it again once it is gone. */
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "other", NULL),
                   JB_ENOTFOUND);
  assert_int_equal(kill(pid, SIGKILL), 0);
  /* Dead but not reaped yet (a zombie): it will never act again. Wait
   * until the kernel has marked it so, without reaping it. */
  siginfo_t si;
  memset(&si, 0, sizeof si);
  assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
  assert_int_equal(state_of(f->board, u), JB_STATE_UNCLAIMED);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 1);
  char next[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(next, NULL, NULL, f->board, "survivor", NULL), JB_OK);
  assert_string_equal(next, u);
  assert_int_equal(jbt_wait(pid, 10000) != -1, 1);
  assert_int_equal(jb_consume(f->board, u, "survivor", 0, NULL), JB_OK);
  jbt_assert_check_ok(f->board);
}

/* In a child, with LMDB directly: change what the claim of job `uuid`
 * says about its holder or the board's boot (store/store.h). */
typedef enum {
  RAW_HOLDER_START, /* another start time: the pid was reused */
  RAW_BOOT_ID,      /* meta boot_id: the board was last opened in another boot */
  RAW_SCHEMA1,      /* every claim back to format 1, schema 1 */
} raw_op;

typedef struct {
  raw_op op;
  const char *dir;
  const char *uuid;
} raw_args;

static void uuid_bytes(uint8_t out[16], const char *text) {
  for (int i = 0, o = 0; text[i] && o < 16; i++) {
    if (text[i] == '-') continue;
    unsigned v;
    sscanf(text + i, "%2x", &v);
    out[o++] = (uint8_t)v;
    i++;
  }
}

static int raw_child(void *arg) {
  raw_args *a = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi jobs, claims, meta;
  if (mdb_env_create(&env)) return 101;
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_maxreaders(env, 1022);
  if (mdb_env_open(env, a->dir, 0, 0644)) return 102;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 103;
  if (mdb_dbi_open(txn, JB_DB_JOBS, 0, &jobs) ||
      mdb_dbi_open(txn, JB_DB_CLAIMS, 0, &claims) ||
      mdb_dbi_open(txn, JB_DB_META, 0, &meta))
    return 104;
  if (a->op == RAW_HOLDER_START) {
    uint8_t u[16];
    uuid_bytes(u, a->uuid);
    MDB_val k = {16, u}, v;
    if (mdb_get(txn, jobs, &k, &v)) return 105;
    jb_jobhdr h;
    memcpy(&h, v.mv_data, sizeof h);
    MDB_val ck = {JB_JOBKEY_LEN, h.jobkey}, cv;
    if (mdb_get(txn, claims, &ck, &cv)) return 106;
    uint8_t buf[sizeof(jb_claimrec) + JB_WHO_MAX];
    memcpy(buf, cv.mv_data, cv.mv_size);
    jb_claimrec rec;
    memcpy(&rec, buf, sizeof rec);
    /* The holders index names the process too (epoch, pid, start, jobkey,
     * big-endian): move its entry with the record. */
    MDB_dbi holders;
    if (mdb_dbi_open(txn, JB_DB_HOLDERS, 0, &holders)) return 113;
    uint8_t hk[JB_HOLDERKEY_LEN];
    for (int i = 0; i < 4; i++) hk[i] = (uint8_t)(rec.epoch >> (24 - 8 * i));
    for (int i = 0; i < 4; i++)
      hk[4 + i] = (uint8_t)(rec.holder_pid >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
      hk[8 + i] = (uint8_t)(rec.holder_start >> (56 - 8 * i));
    memcpy(hk + 16, h.jobkey, JB_JOBKEY_LEN);
    MDB_val hkv = {sizeof hk, hk}, empty = {0, NULL};
    if (mdb_del(txn, holders, &hkv, NULL)) return 114;
    rec.holder_start += 12345;
    for (int i = 0; i < 8; i++)
      hk[8 + i] = (uint8_t)(rec.holder_start >> (56 - 8 * i));
    if (mdb_put(txn, holders, &hkv, &empty, 0)) return 115;
    memcpy(buf, &rec, sizeof rec);
    MDB_val nv = {cv.mv_size, buf};
    if (mdb_put(txn, claims, &ck, &nv, 0)) return 107;
  } else if (a->op == RAW_BOOT_ID) {
    uint8_t other[16];
    memset(other, 0x5a, sizeof other);
    MDB_val k = {7, "boot_id"}, v = {16, other};
    if (mdb_put(txn, meta, &k, &v, 0)) return 108;
  } else {
    MDB_cursor *cur;
    if (mdb_cursor_open(txn, claims, &cur)) return 109;
    MDB_val k, v;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      jb_claimrec rec;
      memcpy(&rec, v.mv_data, sizeof rec);
      jb_claimrec_v1 old = {.format = 1, .owner_len = rec.owner_len,
                            .claimed_us = rec.claimed_us};
      memcpy(old.uuid, rec.uuid, 16);
      uint8_t buf[sizeof old + JB_WHO_MAX];
      memcpy(buf, &old, sizeof old);
      memcpy(buf + sizeof old, (uint8_t *)v.mv_data + sizeof rec, rec.owner_len);
      MDB_val nv = {sizeof old + rec.owner_len, buf};
      if (mdb_cursor_put(cur, &k, &nv, MDB_CURRENT)) return 110;
    }
    mdb_cursor_close(cur);
    uint32_t one = 1;
    MDB_val mk = {6, "schema"}, mv = {sizeof one, &one};
    if (mdb_put(txn, meta, &mk, &mv, 0)) return 111;
  }
  if (mdb_txn_commit(txn)) return 112;
  mdb_env_close(env);
  return 0;
}

static void run_raw(raw_op op, const char *dir, const char *uuid) {
  raw_args a = {op, dir, uuid};
  jbt_wait_ok(jbt_fork(raw_child, &a, 20), 20000);
}

static void a_reused_pid_does_not_keep_a_dead_holders_claim(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "reused", JB_PRIORITY_NORMAL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  claim_ok(f->board, u, "me", &o);
  assert_int_equal(state_of(f->board, u), JB_STATE_CLAIMED);
  /* The claim now names this pid with another start time: what a claim
   * of a dead process looks like once the kernel gave its pid to us. */
  run_raw(RAW_HOLDER_START, f->dir, u);
  assert_int_equal(state_of(f->board, u), JB_STATE_UNCLAIMED);
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "next", NULL), JB_OK);
  assert_string_equal(got, u);
  jbt_assert_check_ok(f->board);
}

/* Three jobs claimed as "w": `leased` for an hour, `bound` to this
 * process, `plain` with neither; then the board is reopened as after a
 * reboot (another boot id in its meta). */
static void claim_three_ways_and_reboot(jbt_fixture *f,
                                        char leased[JB_UUID_STRLEN],
                                        char bound[JB_UUID_STRLEN],
                                        char plain[JB_UUID_STRLEN]) {
  jbt_post(leased, f->board, "leased", JB_PRIORITY_NORMAL);
  jbt_post(bound, f->board, "bound", JB_PRIORITY_NORMAL);
  jbt_post(plain, f->board, "plain", JB_PRIORITY_NORMAL);
  jb_claim_options o = lease(3600 * 1000);
  claim_ok(f->board, leased, "w", &o);
  o = (jb_claim_options)JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  claim_ok(f->board, bound, "w", &o);
  claim_ok(f->board, plain, "w", NULL);
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(RAW_BOOT_ID, f->dir, NULL);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
}

/* Leased and bound claims belonged to the earlier boot. */
static void claims_of_an_earlier_boot_lapse_at_reopen(void **state) {
  jbt_fixture *f = *state;
  char leased[JB_UUID_STRLEN], bound[JB_UUID_STRLEN], plain[JB_UUID_STRLEN];
  claim_three_ways_and_reboot(f, leased, bound, plain);
  assert_int_equal(state_of(f->board, leased), JB_STATE_UNCLAIMED);
  assert_int_equal(state_of(f->board, bound), JB_STATE_UNCLAIMED);
}

/* It lives until its owner acts. */
static void a_plain_claim_of_an_earlier_boot_holds_at_reopen(void **state) {
  jbt_fixture *f = *state;
  char leased[JB_UUID_STRLEN], bound[JB_UUID_STRLEN], plain[JB_UUID_STRLEN];
  claim_three_ways_and_reboot(f, leased, bound, plain);
  assert_int_equal(state_of(f->board, plain), JB_STATE_CLAIMED);
}

/* The plain claim, given a lease after the reopen, belongs to this boot:
 * only the two others are claimable. */
static void a_lease_given_after_a_reboot_belongs_to_the_new_boot(
    void **state) {
  jbt_fixture *f = *state;
  char leased[JB_UUID_STRLEN], bound[JB_UUID_STRLEN], plain[JB_UUID_STRLEN];
  claim_three_ways_and_reboot(f, leased, bound, plain);
  assert_int_equal(jb_extend(f->board, plain, "w", 0, 3600 * 1000), JB_OK);
  assert_int_equal(state_of(f->board, plain), JB_STATE_CLAIMED);
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "n", NULL), JB_OK);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "n", NULL), JB_OK);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "n", NULL), JB_ENOTFOUND);
  jbt_assert_check_ok(f->board);
}

static void a_schema_1_board_is_upgraded_at_open(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], r[JB_UUID_STRLEN];
  jbt_post(u, f->board, "claimed", JB_PRIORITY_NORMAL);
  jbt_post(r, f->board, "ready", JB_PRIORITY_NORMAL);
  claim_ok(f->board, u, "old-owner", NULL);
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(RAW_SCHEMA1, f->dir, NULL);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, u), JB_OK);
  assert_string_equal(owner, "old-owner");
  jbt_assert_check_ok(f->board);
  assert_int_equal(jb_consume(f->board, u, "old-owner", 0, NULL), JB_OK);
  uint64_t t = claim_ok(f->board, r, "new", NULL);
  assert_int_equal(jb_consume(f->board, r, "new", t, NULL), JB_OK);
}

int main(void) {
  jbt_watchdog(240);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(a_lease_of_200ms_lapses_and_not_before),
      T(the_owner_of_a_lapsed_lease_cannot_act_once_another_claims),
      T(claim_next_hands_out_a_job_whose_lease_lapsed),
      T(the_unclaimed_listing_shows_a_job_whose_lease_lapsed),
      T(extend_keeps_a_lease_past_its_first_expiry),
      T(extend_by_another_owner_is_refused_naming_the_owner),
      T(extend_with_a_stale_token_is_refused_naming_tokens),
      T(extend_gives_a_plain_claim_a_lease),
      T(extend_of_a_lapsed_claim_is_not_found_saying_it_lapsed),
      T(a_same_owner_reclaim_refreshes_the_lease),
      T(a_same_owner_reclaim_returns_the_claims_token),
      T(bad_leases_are_refused_and_change_nothing),
      T(extend_of_an_unclaimed_job_is_not_found_and_changes_nothing),
      T(expires_in_of_an_unclaimed_job_says_not_claimed),
      T(expires_in_of_a_malformed_uuid_is_invalid),
      T(a_stale_token_is_refused_after_a_lapse_and_reclaim),
      T(the_token_of_a_claim_after_a_lapse_acts),
      T(the_job_snapshot_reports_the_claims_token),
      T(the_job_snapshot_reports_the_live_holder),
      T(the_job_snapshot_reports_when_the_lease_ends),
      T(tokens_increase_across_a_reopen),
      T(tokens_of_racing_processes_are_distinct_and_increase),
      T(a_reclaim_returns_the_claims_token_after_others_claimed),
      T(a_bound_claim_names_its_live_holder),
      T(a_killed_holder_frees_its_job_without_any_expiry),
      T(a_reused_pid_does_not_keep_a_dead_holders_claim),
      T(claims_of_an_earlier_boot_lapse_at_reopen),
      T(a_plain_claim_of_an_earlier_boot_holds_at_reopen),
      T(a_lease_given_after_a_reboot_belongs_to_the_new_boot),
      T(a_schema_1_board_is_upgraded_at_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
