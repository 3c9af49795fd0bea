/*
 * test_batch.c - the worker's path: jb_claim_next_many,
 * jb_consume_and_claim_next and jb_consume_many keep the
 * contracts of the single operations they gather, in one commit each.
 *
 * "One commit" is read off LMDB itself: a forked child opens the board's
 * environment read-only and reports its last transaction id, which each
 * commit raises by one. The rest reads the board through the API: claim
 * order, tokens, the change log, the history, the state of every job
 * after a refusal (a snapshot of every table: a failed call changes
 * nothing), a waiter in another process, lapsed leases, Redis-decided
 * jobs through a hook that records what it was asked, and forked
 * processes racing.
 */
#include "helpers.h"
#include "core/internal.h"
#include "codec/posting.h"
#include "core/sync_hook.h"
#include "store/store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* LMDB's last committed transaction id of the board in `dir`, read in a
 * forked child (this process must not open the environment twice). */
static uint64_t last_txnid(const char *dir) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    MDB_env *env = NULL;
    MDB_envinfo info;
    uint64_t id = 0;
    if (mdb_env_create(&env) == 0 && mdb_env_set_maxdbs(env, 64) == 0 &&
        mdb_env_open(env, dir, MDB_RDONLY, 0644) == 0 &&
        mdb_env_info(env, &info) == 0)
      id = (uint64_t)info.me_last_txnid;
    _exit(write(p[1], &id, sizeof id) == (ssize_t)sizeof id && id ? 0 : 1);
  }
  close(p[1]);
  uint64_t id = 0;
  ssize_t got = read(p[0], &id, sizeof id);
  close(p[0]);
  jbt_wait_ok(pid, 10000);
  assert_int_equal(got, sizeof id);
  return id;
}

/* Post n jobs with priorities from `prios` (cycled); uuids to out. */
static void post_n(jb_board *b, char (*out)[JB_UUID_STRLEN], size_t n,
                   const jb_priority *prios, size_t nprios) {
  for (size_t i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "job-%zu", i);
    jbt_post(out ? out[i] : NULL, b, name, prios[i % nprios]);
  }
}

static const jb_priority normal[] = {JB_PRIORITY_NORMAL};

/* The uuids of the claimable jobs in listing (= claim-next) order. */
static size_t listing(jb_board *b, char (*out)[JB_UUID_STRLEN], size_t max) {
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, b, JB_ONLY_UNCLAIMED), JB_OK);
  size_t n = 0;
  const jb_job *j;
  while (n < max && jb_iter_next(&j, it) == JB_OK && j)
    memcpy(out[n++], jb_job_uuid(j), JB_UUID_STRLEN);
  jb_iter_close(it);
  return n;
}

static jb_state state_of(jb_board *b, const char *uuid) {
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, uuid), JB_OK);
  return st;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

/* Events from `from` on, into ev (up to max). */
static size_t events_from(jb_board *b, uint64_t from, jb_event *ev,
                          size_t max) {
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, from, max), JB_OK);
  return n;
}

static uint64_t claim_one(jb_board *b, const char *uuid, const char *who) {
  uint64_t t = 0;
  assert_int_equal(jb_claim(&t, b, uuid, who, NULL), JB_OK);
  return t;
}

/* {"rows": n} */
static const char rows3[] = {(char)0x81, (char)0xa4, 'r', 'o', 'w', 's', 3};

/* Three jobs of mixed priorities, claimed by "w1" through one
 * claim_next_many of up to 10: the listing before it into want[], what it
 * gave into got[], tokens[] and jobs[] (the caller frees the first three
 * jobs), and the transaction id before it into *before. */
static void claim_many_of_three(jbt_fixture *f, char want[3][JB_UUID_STRLEN],
                                char got[10][JB_UUID_STRLEN],
                                uint64_t tokens[10], jb_job *jobs[10],
                                uint64_t *before) {
  char posted[3][JB_UUID_STRLEN];
  static const jb_priority mix[] = {JB_PRIORITY_LOW, JB_PRIORITY_VERY_HIGH,
                                    JB_PRIORITY_NORMAL};
  post_n(f->board, posted, 3, mix, 3);
  assert_int_equal(listing(f->board, want, 3), 3);
  *before = last_txnid(f->dir);
  size_t n = 99;
  assert_int_equal(jb_claim_next_many(&n, got, tokens, jobs, f->board,
                                          "w1", NULL, 10),
                   JB_OK);
  assert_int_equal(n, 3);
}

static void claim_next_many_of_n_on_a_board_of_fewer_returns_those_there(
    void **state) {
  jbt_fixture *f = *state;
  char want[3][JB_UUID_STRLEN], got[10][JB_UUID_STRLEN];
  uint64_t tokens[10], before;
  jb_job *jobs[10];
  claim_many_of_three(f, want, got, tokens, jobs, &before);
  for (size_t i = 0; i < 3; i++) {
    assert_string_equal(got[i], want[i]); /* claim-next order */
    assert_non_null(jobs[i]);
    assert_string_equal(jb_job_uuid(jobs[i]), got[i]);
    assert_string_equal(jb_job_owner(jobs[i]), "w1");
    assert_int_equal(jb_job_token(jobs[i]), tokens[i]);
    assert_int_equal(state_of(f->board, got[i]), JB_STATE_CLAIMED);
    if (i) assert_true(tokens[i] > tokens[i - 1]);
    jb_job_free(jobs[i]);
  }
  for (size_t i = 3; i < 10; i++) assert_null(jobs[i]);
  jbt_assert_check_ok(f->board);
}

static void claim_next_many_claims_in_one_commit(void **state) {
  jbt_fixture *f = *state;
  char want[3][JB_UUID_STRLEN], got[10][JB_UUID_STRLEN];
  uint64_t tokens[10], before;
  jb_job *jobs[10];
  claim_many_of_three(f, want, got, tokens, jobs, &before);
  assert_int_equal(last_txnid(f->dir), before + 1); /* one commit */
  for (size_t i = 0; i < 3; i++) jb_job_free(jobs[i]);
}

/* JB_ENOTFOUND, and nothing written. */
static void claim_next_many_with_nothing_claimable_writes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char want[3][JB_UUID_STRLEN], got[10][JB_UUID_STRLEN];
  uint64_t tokens[10], before;
  jb_job *jobs[10];
  claim_many_of_three(f, want, got, tokens, jobs, &before);
  for (size_t i = 0; i < 3; i++) jb_job_free(jobs[i]);
  size_t n = 99;
  before = last_txnid(f->dir);
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w2",
                                          NULL, 4),
                   JB_ENOTFOUND);
  assert_int_equal(n, 0);
  assert_int_equal(last_txnid(f->dir), before);
}

/* Twelve jobs of mixed priorities (their claim-next order into want[]);
 * "w1" claims five in one claim_next_many with a lease of a minute, into
 * got[] and tokens[]. Returns where the change log stood before. */
static uint64_t claim_five_of_twelve(jbt_fixture *f,
                                     char want[12][JB_UUID_STRLEN],
                                     char got[5][JB_UUID_STRLEN],
                                     uint64_t tokens[5]) {
  static const jb_priority mix[] = {JB_PRIORITY_LOW, JB_PRIORITY_HIGH,
                                    JB_PRIORITY_NORMAL, JB_PRIORITY_VERY_LOW,
                                    JB_PRIORITY_HIGH};
  post_n(f->board, NULL, 12, mix, 5);
  assert_int_equal(listing(f->board, want, 12), 12);
  uint64_t from = log_next(f->board);
  size_t n = 0;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 60000;
  assert_int_equal(jb_claim_next_many(&n, got, tokens, NULL, f->board,
                                          "w1", &o, 5),
                   JB_OK);
  assert_int_equal(n, 5);
  return from;
}

/* The next claim-next goes on where the batch stopped. */
static void claim_next_many_takes_max_in_claim_next_order(void **state) {
  jbt_fixture *f = *state;
  char want[12][JB_UUID_STRLEN], got[5][JB_UUID_STRLEN];
  uint64_t tokens[5];
  claim_five_of_twelve(f, want, got, tokens);
  for (size_t i = 0; i < 5; i++) assert_string_equal(got[i], want[i]);
  char next[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(next, NULL, NULL, f->board, "w2", NULL), JB_OK);
  assert_string_equal(next, want[5]);
  jbt_assert_check_ok(f->board);
}

/* Each claim's CLAIMED event, whose sequence is its token. */
static void claim_next_many_logs_each_claim_with_its_token(void **state) {
  jbt_fixture *f = *state;
  char want[12][JB_UUID_STRLEN], got[5][JB_UUID_STRLEN];
  uint64_t tokens[5];
  uint64_t from = claim_five_of_twelve(f, want, got, tokens);
  jb_event ev[16];
  assert_int_equal(events_from(f->board, from, ev, 16), 5);
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(ev[i].type, JB_EVENT_CLAIMED);
    assert_string_equal(ev[i].uuid, got[i]);
    assert_string_equal(ev[i].owner, "w1");
    assert_int_equal(ev[i].seq, tokens[i]);
  }
}

static void claim_next_many_applies_its_options_to_each_claim(void **state) {
  jbt_fixture *f = *state;
  char want[12][JB_UUID_STRLEN], got[5][JB_UUID_STRLEN];
  uint64_t tokens[5];
  claim_five_of_twelve(f, want, got, tokens);
  for (size_t i = 0; i < 5; i++) {
    jb_expiry e;
    int64_t ms;
    assert_int_equal(jb_job_expires_in(&e, &ms, f->board, got[i]), JB_OK);
    assert_int_equal(e, JB_EXPIRY_AT); /* the options hold for each */
  }
}

/* Two jobs, the first claimed by "old" for 50 ms; "new" claims up to four
 * once that lease has lapsed, into got[]. Returns where the change log
 * stood before. */
static uint64_t claim_many_after_a_lapse(jbt_fixture *f,
                                         char u[2][JB_UUID_STRLEN],
                                         char got[4][JB_UUID_STRLEN]) {
  post_n(f->board, u, 2, normal, 1);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 50;
  assert_int_equal(jb_claim(NULL, f->board, u[0], "old", &o), JB_OK);
  sleep_ms(120);
  uint64_t from = log_next(f->board);
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board,
                                          "new", NULL, 4),
                   JB_OK);
  assert_int_equal(n, 2);
  return from;
}

/* The lapsed one comes first, and is the new owner's alone. */
static void claim_next_many_hands_out_jobs_whose_leases_lapsed(void **state) {
  jbt_fixture *f = *state;
  char u[2][JB_UUID_STRLEN], got[4][JB_UUID_STRLEN];
  claim_many_after_a_lapse(f, u, got);
  assert_string_equal(got[0], u[0]); /* the lapsed one, first in order */
  assert_string_equal(got[1], u[1]);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, u[0]), JB_OK);
  assert_string_equal(owner, "new");
  assert_int_equal(jb_consume(f->board, u[0], "old", 0, NULL), JB_ENOTOWNER);
  jbt_assert_check_ok(f->board);
}

static void claim_next_many_logs_a_lapse_as_claim_next_does(void **state) {
  jbt_fixture *f = *state;
  char u[2][JB_UUID_STRLEN], got[4][JB_UUID_STRLEN];
  uint64_t from = claim_many_after_a_lapse(f, u, got);
  jb_event ev[8];
  size_t ne = events_from(f->board, from, ev, 8);
  assert_int_equal(ne, 3);
  assert_int_equal(ev[0].type, JB_EVENT_EXPIRED);
  assert_string_equal(ev[0].owner, "old");
}



static void claim_next_many_refuses_bad_arguments_and_changes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  post_n(f->board, NULL, 2, normal, 1);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  size_t n = 7;
  char got[2][JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                          NULL, 0),
                   JB_EINVAL);
  assert_int_equal(n, 0);
  jbt_assert_contains(jb_errmsg(), "max 0");
  assert_int_equal(jb_claim_next_many(&n, NULL, NULL, NULL, f->board, "w",
                                          NULL, JB_BATCH_MAX + 1),
                   JB_EINVAL);
  assert_int_equal(jb_claim_next_many(NULL, got, NULL, NULL, f->board,
                                          "w", NULL, 2),
                   JB_EINVAL);
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "",
                                          NULL, 2),
                   JB_EINVAL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = -5;
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                          &o, 2),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "lease");
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* What consume_and_claim_next_of_the_first did. */
typedef struct {
  char u[3][JB_UUID_STRLEN]; /* the board's three jobs, in claim order */
  uint64_t t0;               /* the token of u[0]'s claim by "w1" */
  uint64_t from;             /* the change log before the call */
  uint64_t txn_before;       /* LMDB's transaction id before it */
  char next[JB_UUID_STRLEN]; /* the job it claimed, */
  jb_job *job;               /* as it was then (the caller frees it), */
  uint64_t t1;               /* and its token */
} fused_call;

/* Three jobs; "w1" claims the first, then consumes it with a failed
 * outcome and the result rows3 and claims the next in one call. */
static void consume_and_claim_next_of_the_first(jbt_fixture *f,
                                                fused_call *fc) {
  post_n(f->board, fc->u, 3, normal, 1);
  fc->t0 = claim_one(f->board, fc->u[0], "w1");
  fc->from = log_next(f->board);
  fc->txn_before = last_txnid(f->dir);
  fc->job = NULL;
  fc->t1 = 0;
  assert_int_equal(jb_consume_and_claim_next(fc->next, &fc->job, &fc->t1,
                                                 f->board, fc->u[0], "w1",
                                                 fc->t0,
                                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, rows3, sizeof rows3}, NULL),
                   JB_OK);
}

static void consume_and_claim_next_does_both_in_one_commit(void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  assert_int_equal(last_txnid(f->dir), fc.txn_before + 1);
  assert_int_equal(state_of(f->board, fc.u[0]), JB_STATE_COMPLETE);
  assert_int_equal(state_of(f->board, fc.u[1]), JB_STATE_CLAIMED);
  jb_job_free(fc.job);
  jbt_assert_check_ok(f->board);
}

static void consume_and_claim_next_hands_out_the_next_job_with_a_new_token(
    void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  assert_string_equal(fc.next, fc.u[1]);
  assert_true(fc.t1 > fc.t0);
  assert_non_null(fc.job);
  assert_string_equal(jb_job_uuid(fc.job), fc.u[1]);
  assert_string_equal(jb_job_owner(fc.job), "w1");
  assert_int_equal(jb_job_token(fc.job), fc.t1);
  jb_job_free(fc.job);
}

/* The history record, as consume_result writes it. */
static void consume_and_claim_next_records_the_consume_as_consume_does(
    void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  jb_job_free(fc.job);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, fc.u[0]), JB_OK);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_string_equal(c->owner, "w1");
  assert_int_equal(c->result_len, sizeof rows3);
  assert_memory_equal(c->result, rows3, sizeof rows3);
  jb_completion_free(c);
}

/* CONSUMED, then CLAIMED whose sequence is the new token. */
static void consume_and_claim_next_logs_the_consume_then_the_claim(
    void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  jb_job_free(fc.job);
  jb_event ev[4];
  assert_int_equal(events_from(f->board, fc.from, ev, 4), 2);
  assert_int_equal(ev[0].type, JB_EVENT_CONSUMED);
  assert_string_equal(ev[0].uuid, fc.u[0]);
  assert_int_equal(ev[1].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[1].uuid, fc.u[1]);
  assert_int_equal(ev[1].seq, fc.t1);
}

static void the_token_before_consume_and_claim_next_acts_on_nothing_after(
    void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  jb_job_free(fc.job);
  assert_int_equal(jb_consume(f->board, fc.u[1], "w1", fc.t0, NULL), JB_ENOTOWNER);
}

/* With the new token, a loop passing one buffer as both the job and the
 * next job. */
static void consume_and_claim_next_takes_one_buffer_for_job_and_next(
    void **state) {
  jbt_fixture *f = *state;
  fused_call fc;
  consume_and_claim_next_of_the_first(f, &fc);
  jb_job_free(fc.job);
  char buf[JB_UUID_STRLEN];
  memcpy(buf, fc.u[1], JB_UUID_STRLEN);
  assert_int_equal(jb_consume_and_claim_next(buf, NULL, &fc.t1, f->board,
                                                 buf, "w1", fc.t1,
                                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                                 NULL),
                   JB_OK);
  assert_string_equal(buf, fc.u[2]);
  assert_int_equal(state_of(f->board, fc.u[1]), JB_STATE_COMPLETE);
  jbt_assert_check_ok(f->board);
}

static void consume_and_claim_next_with_nothing_claimable_says_so(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "only", JB_PRIORITY_NORMAL);
  uint64_t t = claim_one(f->board, u, "w1");
  char next[JB_UUID_STRLEN] = "junk";
  jb_job *job = (jb_job *)&next; /* must be overwritten */
  uint64_t nt = 77;
  assert_int_equal(jb_consume_and_claim_next(next, &job, &nt, f->board, u,
                                                 "w1", t, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}, NULL),
                   JB_OK);
  assert_string_equal(next, "");
  assert_null(job);
  assert_int_equal(nt, 0);
  assert_int_equal(state_of(f->board, u), JB_STATE_COMPLETE);
}

static void consume_and_claim_next_accepts_no_out_parameters(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "two", JB_PRIORITY_NORMAL);
  uint64_t t = claim_one(f->board, u, "w1");
  assert_int_equal(jb_consume_and_claim_next(NULL, NULL, NULL, f->board,
                                                 u, "w1", t,
                                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                                 NULL),
                   JB_OK);
  jbt_assert_check_ok(f->board);
}


/* The consume of `uuid` by `who` with `token` fails with `want`, and
 * nothing changes: no claim of the job that is waiting. */
static void refused_changes_nothing(jbt_fixture *f, const char *uuid,
                                    const char *who, uint64_t token,
                                    jb_outcome oc, const void *res,
                                    size_t res_len, int want,
                                    const char *msg) {
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  char next[JB_UUID_STRLEN] = "x";
  jb_job *job = NULL;
  uint64_t nt = 5;
  assert_int_equal(jb_consume_and_claim_next(next, &job, &nt, f->board,
                                                 uuid, who, token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, oc, res, res_len}, NULL),
                   want);
  jbt_assert_contains(jb_errmsg(), msg);
  assert_string_equal(next, "");
  assert_null(job);
  assert_int_equal(nt, 0);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* Three jobs; u[0] claimed by "owner" (its token returned), u[1] and u[2]
 * claimable all along: a claim would show. */
static uint64_t three_jobs_one_owned(jbt_fixture *f,
                                     char u[3][JB_UUID_STRLEN]) {
  post_n(f->board, u, 3, normal, 1);
  return claim_one(f->board, u[0], "owner");
}

static void consume_and_claim_next_whose_consume_fails_claims_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  uint64_t t = three_jobs_one_owned(f, u);
  refused_changes_nothing(f, u[0], "other", 0, JB_OUTCOME_SUCCESS, NULL, 0,
                          JB_ENOTOWNER, "claimed by owner");
  refused_changes_nothing(f, u[0], "owner", t + 1000, JB_OUTCOME_SUCCESS,
                          NULL, 0, JB_ENOTOWNER, "token");
  refused_changes_nothing(f, u[1], "owner", 0, JB_OUTCOME_SUCCESS, NULL, 0,
                          JB_ENOTFOUND, "not claimed");
  refused_changes_nothing(f, "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f", "owner",
                          0, JB_OUTCOME_SUCCESS, NULL, 0, JB_ENOTFOUND,
                          "not on the board");
  static const char not_a_map[] = {(char)0x92, 1, 2};
  refused_changes_nothing(f, u[0], "owner", t, JB_OUTCOME_SUCCESS, not_a_map,
                          sizeof not_a_map, JB_EINVAL, "result");
  refused_changes_nothing(f, u[0], "owner", t, (jb_outcome)7, NULL, 0,
                          JB_EINVAL, "outcome");
  refused_changes_nothing(f, "not-a-uuid", "owner", t, JB_OUTCOME_SUCCESS,
                          NULL, 0, JB_EINVAL, "uuid");
  jbt_assert_check_ok(f->board);
}

static void consume_and_claim_next_with_bad_claim_options_changes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  uint64_t t = three_jobs_one_owned(f, u);
  jb_claim_options bad = JB_CLAIM_OPTIONS_INIT;
  bad.flags = 0x40;
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_consume_and_claim_next(NULL, NULL, NULL, f->board,
                                                 u[0], "owner", t,
                                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                                 &bad),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "flags");
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* A lapsed claim is nobody's: refused as consume refuses it. */
static void consume_and_claim_next_of_a_lapsed_claim_claims_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  three_jobs_one_owned(f, u);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 30;
  uint64_t t2 = 0;
  assert_int_equal(jb_claim(&t2, f->board, u[1], "owner", &o), JB_OK);
  sleep_ms(80);
  refused_changes_nothing(f, u[1], "owner", t2, JB_OUTCOME_SUCCESS, NULL, 0,
                          JB_ENOTFOUND, "lapsed");
  jbt_assert_check_ok(f->board);
}

/* ------------------------------------------------------- consume many */

typedef struct {
  size_t n;
  size_t index[8];
  int status[8];
  char msg[8][256];
} failures;

static void on_failed(size_t index, int status, const char *message,
                      void *payload) {
  failures *fl = payload;
  if (fl->n < 8) {
    fl->index[fl->n] = index;
    fl->status[fl->n] = status;
    snprintf(fl->msg[fl->n], sizeof fl->msg[0], "%s", message);
  }
  fl->n++;
}

/* What consume_seven_items did. */
typedef struct {
  char u[4][JB_UUID_STRLEN]; /* the board's jobs, all claimed by "w1" */
  uint64_t t[4];             /* their tokens */
  int st[7];                 /* each item's status */
  failures fl;               /* the failed items the callback saw */
  uint64_t txn_before;       /* LMDB's transaction id before the call */
} seven_items;

/* Four jobs claimed by "w1", and one jb_consume_many of seven items: two
 * good (u[0] with rows3, u[2] failed), and one of each way to fail: not
 * the owner, a bad uuid, a stale token, a result that is not a map, a job
 * an earlier item consumed. */
static void consume_seven_items(jbt_fixture *f, seven_items *s) {
  post_n(f->board, s->u, 4, normal, 1);
  for (int i = 0; i < 4; i++) s->t[i] = claim_one(f->board, s->u[i], "w1");
  static const char not_a_map[] = {(char)0x92, 1, 2};
  jb_consume_item items[7] = {
      {s->u[0], "w1", s->t[0], JB_OUTCOME_SUCCESS, rows3, sizeof rows3},
      {s->u[1], "w2", 0, JB_OUTCOME_SUCCESS, NULL, 0},        /* not owner */
      {"nope", "w1", 0, JB_OUTCOME_SUCCESS, NULL, 0},         /* bad uuid */
      {s->u[2], "w1", s->t[2], JB_OUTCOME_FAILURE, NULL, 0},
      {s->u[3], "w1", s->t[3] + 1, JB_OUTCOME_SUCCESS, NULL, 0}, /* token */
      {s->u[3], "w1", 0, JB_OUTCOME_SUCCESS, not_a_map, sizeof not_a_map},
      {s->u[0], "w1", 0, JB_OUTCOME_SUCCESS, NULL, 0},        /* again */
  };
  memset(&s->fl, 0, sizeof s->fl);
  s->txn_before = last_txnid(f->dir);
  assert_int_equal(jb_consume_many(s->st, f->board, items, 7, on_failed,
                                       &s->fl),
                   JB_OK);
}

/* The good ones are complete with their records, in one commit. */
static void consume_many_with_bad_items_commits_the_others(void **state) {
  jbt_fixture *f = *state;
  static seven_items s;
  consume_seven_items(f, &s);
  assert_int_equal(last_txnid(f->dir), s.txn_before + 1);
  assert_int_equal(state_of(f->board, s.u[0]), JB_STATE_COMPLETE);
  assert_int_equal(state_of(f->board, s.u[2]), JB_STATE_COMPLETE);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, s.u[0]), JB_OK);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_memory_equal(c->result, rows3, sizeof rows3);
  jb_completion_free(c);
  assert_int_equal(jb_job_completion(&c, f->board, s.u[2]), JB_OK);
  assert_int_equal(c->end, JB_END_FAILED);
  jb_completion_free(c);
}

static void consume_many_gives_each_item_its_own_status(void **state) {
  jbt_fixture *f = *state;
  static seven_items s;
  consume_seven_items(f, &s);
  assert_int_equal(s.st[0], JB_OK);
  assert_int_equal(s.st[1], JB_ENOTOWNER);
  assert_int_equal(s.st[2], JB_EINVAL);
  assert_int_equal(s.st[3], JB_OK);
  assert_int_equal(s.st[4], JB_ENOTOWNER);
  assert_int_equal(s.st[5], JB_EINVAL);
  assert_int_equal(s.st[6], JB_ENOTFOUND); /* item 0 consumed it */
}

/* In order, each with its own message. */
static void consume_many_calls_back_for_each_failed_item(void **state) {
  jbt_fixture *f = *state;
  static seven_items s;
  consume_seven_items(f, &s);
  assert_int_equal(s.fl.n, 5);
  static const size_t want_idx[] = {1, 2, 4, 5, 6};
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(s.fl.index[i], want_idx[i]);
    assert_int_equal(s.fl.status[i], s.st[want_idx[i]]);
    char pre[16];
    snprintf(pre, sizeof pre, "item %zu: ", want_idx[i]);
    assert_memory_equal(s.fl.msg[i], pre, strlen(pre));
  }
  jbt_assert_contains(s.fl.msg[0], "claimed by w1, not by w2");
  jbt_assert_contains(s.fl.msg[1], "uuid");
  jbt_assert_contains(s.fl.msg[2], "token");
  jbt_assert_contains(s.fl.msg[3], "result");
  jbt_assert_contains(s.fl.msg[4], "not on the board");
}

static void consume_many_leaves_the_error_message_of_the_first_failure(
    void **state) {
  jbt_fixture *f = *state;
  static seven_items s;
  consume_seven_items(f, &s);
  assert_string_equal(jb_errmsg(), s.fl.msg[0]); /* the first failure */
}

/* Still claimed by their owner, who can consume them. */
static void consume_many_leaves_the_jobs_of_failed_items_claimed(
    void **state) {
  jbt_fixture *f = *state;
  static seven_items s;
  consume_seven_items(f, &s);
  assert_int_equal(state_of(f->board, s.u[1]), JB_STATE_CLAIMED);
  assert_int_equal(state_of(f->board, s.u[3]), JB_STATE_CLAIMED);
  assert_int_equal(jb_consume(f->board, s.u[3], "w1", s.t[3], NULL), JB_OK);
  jbt_assert_check_ok(f->board);
}

/* Two jobs, the first claimed by "w1"; two items that each fail. */
static void two_failing_items(jbt_fixture *f, jb_consume_item items[2],
                              char u[2][JB_UUID_STRLEN]) {
  post_n(f->board, u, 2, normal, 1);
  claim_one(f->board, u[0], "w1");
  items[0] = (jb_consume_item){u[0], "w2", 0, JB_OUTCOME_SUCCESS, NULL, 0};
  items[1] = (jb_consume_item){u[1], "w1", 0, JB_OUTCOME_SUCCESS, NULL, 0};
}

static void consume_many_whose_items_all_fail_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[2][JB_UUID_STRLEN];
  jb_consume_item items[2];
  two_failing_items(f, items, u);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  int st[2];
  assert_int_equal(jb_consume_many(st, f->board, items, 2, NULL, NULL),
                   JB_OK);
  assert_int_equal(st[0], JB_ENOTOWNER);
  assert_int_equal(st[1], JB_ENOTFOUND);
  jbt_snapshot_assert_unchanged(&before, f->board);
}

/* The call's own arguments: refused whole. */
static void consume_many_with_bad_arguments_is_refused_whole(void **state) {
  jbt_fixture *f = *state;
  char u[2][JB_UUID_STRLEN];
  jb_consume_item items[2];
  two_failing_items(f, items, u);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  int st[2];
  assert_int_equal(jb_consume_many(st, f->board, items, 0, NULL, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_consume_many(st, f->board, items, JB_BATCH_MAX + 1,
                                       NULL, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_consume_many(NULL, f->board, items, 2, NULL, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_consume_many(st, f->board, NULL, 2, NULL, NULL),
                   JB_EINVAL);
  jbt_snapshot_assert_unchanged(&before, f->board);
}


/* ------------------------------------------------------------ waiters */

typedef struct {
  const char *dir;
  uint64_t from;
  int ready_fd;
} waiter_arg;

/* Wait for an event at or after `from`: exit 0 when woken with one. */
static int log_waiter(void *varg) {
  waiter_arg *a = varg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 2;
  if (write(a->ready_fd, "r", 1) != 1) return 3;
  close(a->ready_fd);
  jb_event ev[4];
  size_t n = 0;
  int rc = jb_log_wait(ev, &n, NULL, b, a->from, 4, 20000);
  jb_board_close(b);
  return rc == JB_OK && n > 0 ? 0 : 4;
}

/* Wait (up to 10 s) until process `pid`'s main thread sleeps in the
 * kernel's futex wait: the waiter is asleep on the board's signal, so
 * only a wake-up can end its wait before its timeout. */
static void wait_asleep(pid_t pid) {
  char path[64], wchan[128];
  snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", (int)pid, (int)pid);
  for (int i = 0; i < 10000; i++) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(wchan, 1, sizeof wchan - 1, f) : 0;
    if (f) fclose(f);
    wchan[n] = '\0';
    if (strstr(wchan, "futex")) return;
    sleep_ms(1);
  }
  fail_msg("waiter %d never slept on a futex (wchan '%s')", (int)pid, wchan);
}

enum { OP_CLAIM_NEXT_MANY, OP_CONSUME_AND_CLAIM_NEXT, OP_CONSUME_MANY };

/* Four jobs; a waiter in another process sleeps on the board's change
 * log, and `op`, one batch call, must wake it. The consume calls act on
 * jobs claim_next_many claimed first (before the waiter started). */
static void batch_commit_wakes_a_waiter(jbt_fixture *f, int op) {
  char u[4][JB_UUID_STRLEN];
  post_n(f->board, u, 4, normal, 1);
  size_t n = 0;
  char got[2][JB_UUID_STRLEN];
  uint64_t tok[2];
  int st[2];
  if (op != OP_CLAIM_NEXT_MANY) {
    assert_int_equal(jb_claim_next_many(&n, got, tok, NULL, f->board,
                                            "w", NULL, 2),
                     JB_OK);
    if (op == OP_CONSUME_MANY) {
      char next[JB_UUID_STRLEN];
      assert_int_equal(jb_consume_and_claim_next(
                           next, NULL, NULL, f->board, u[0], "w", 0,
                           &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}, NULL),
                       JB_OK);
    }
  }
  waiter_arg a = {f->dir, log_next(f->board), -1};
  pid_t pid = jbt_fork_ready(log_waiter, &a, &a.ready_fd, 30,
                             "the waiter exited before it waited");
  wait_asleep(pid);
  if (op == OP_CLAIM_NEXT_MANY) {
    assert_int_equal(jb_claim_next_many(&n, got, tok, NULL, f->board,
                                            "w", NULL, 2),
                     JB_OK);
  } else if (op == OP_CONSUME_AND_CLAIM_NEXT) {
    char next[JB_UUID_STRLEN];
    assert_int_equal(jb_consume_and_claim_next(
                         next, NULL, NULL, f->board, u[0], "w", 0,
                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}, NULL),
                     JB_OK);
  } else {
    jb_consume_item items[2] = {{u[1], "w", 0, JB_OUTCOME_SUCCESS, NULL, 0},
                                {u[2], "w", 0, JB_OUTCOME_SUCCESS, NULL, 0}};
    assert_int_equal(jb_consume_many(st, f->board, items, 2, NULL, NULL),
                     JB_OK);
    assert_int_equal(st[0], JB_OK);
    assert_int_equal(st[1], JB_OK);
  }
  jbt_wait_ok(pid, 20000);
}

static void claim_next_many_wakes_a_waiter_in_another_process(void **state) {
  batch_commit_wakes_a_waiter(*state, OP_CLAIM_NEXT_MANY);
}

static void consume_and_claim_next_wakes_a_waiter_in_another_process(
    void **state) {
  batch_commit_wakes_a_waiter(*state, OP_CONSUME_AND_CLAIM_NEXT);
}

static void consume_many_wakes_a_waiter_in_another_process(void **state) {
  batch_commit_wakes_a_waiter(*state, OP_CONSUME_MANY);
}

/* ------------------------------------------------------ Redis-decided */

/* A hook that says yes and records each call: "claim UUID", "consume
 * UUID". Redis decides first; the board records after. */
static char hook_log[8][64];
static int hook_n;

static void hook_note(const char *what, const char *uuid) {
  if (hook_n < 8) snprintf(hook_log[hook_n], 64, "%s %s", what, uuid);
  hook_n++;
}
static int yes_claim(void *c, jb_board *board, const char *u, const char *w,
                     int64_t l, uint64_t *fence) {
  (void)c, (void)board, (void)w, (void)l;
  hook_note("claim", u);
  *fence = 0;
  return JB_OK;
}
static int yes_consume(void *c, const char *u, const char *w,
                       const jb_remote_outcome *o) {
  (void)c, (void)w, (void)o;
  hook_note("consume", u);
  return JB_OK;
}
static int no_release(void *c, const char *u, const char *w) {
  (void)c, (void)u, (void)w;
  return jb__err(JB_EOFFLINE, "not in this test");
}
static int no_finish(void *c, const char *u, const char *w,
                     const jb_remote_outcome *o) {
  (void)o;
  return no_release(c, u, w);
}
static int no_extend(void *c, const char *u, const char *w, int64_t l) {
  (void)c, (void)u, (void)w, (void)l;
  return jb__err(JB_EOFFLINE, "not in this test");
}
static const jb_remote_ops yes_ops = {yes_claim, no_release, yes_consume,
                                      no_finish, no_extend, NULL, NULL, NULL, NULL, NULL, NULL};

/* Three jobs: `a` HIGH and `z` LOW local, `r` NORMAL decided by Redis. */
static void post_around_a_redis_decided_job(jbt_fixture *f,
                                            char a[JB_UUID_STRLEN],
                                            char r[JB_UUID_STRLEN],
                                            char z[JB_UUID_STRLEN]) {
  jbt_post(a, f->board, "local-high", JB_PRIORITY_HIGH);
  jbt_post(r, f->board, "remote", JB_PRIORITY_NORMAL);
  jbt_post(z, f->board, "local-low", JB_PRIORITY_LOW);
  assert_int_equal(jb__board_mark_remote(f->board, r), JB_OK);
  hook_n = 0;
}

/* As claim-next skips it. */
static void claim_next_many_without_redis_skips_a_redis_decided_job(
    void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], r[JB_UUID_STRLEN], z[JB_UUID_STRLEN];
  post_around_a_redis_decided_job(f, a, r, z);
  char got[3][JB_UUID_STRLEN];
  uint64_t tok[3];
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, got, tok, NULL, f->board, "w",
                                          NULL, 3),
                   JB_OK);
  assert_int_equal(n, 2);
  assert_string_equal(got[0], a);
  assert_string_equal(got[1], z);
  assert_int_equal(jb_abandon(f->board, a, "w", 0), JB_OK);
  assert_int_equal(jb_abandon(f->board, z, "w", 0), JB_OK);
  jbt_assert_check_ok(f->board);
}

/* The three jobs above, all claimed by "w" in one claim_next_many with
 * the hook set: what it gave in got[] and tok[]. */
typedef struct {
  char a[JB_UUID_STRLEN], r[JB_UUID_STRLEN], z[JB_UUID_STRLEN];
  char got[3][JB_UUID_STRLEN];
  uint64_t tok[3];
} redis_claims;

static void claim_all_three_with_redis(jbt_fixture *f, redis_claims *rc) {
  post_around_a_redis_decided_job(f, rc->a, rc->r, rc->z);
  jb__board_set_remote(f->board, &yes_ops, NULL);
  jb_job *jobs[3];
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, rc->got, rc->tok, jobs, f->board,
                                          "w", NULL, 3),
                   JB_OK);
  assert_int_equal(n, 3);
  for (int i = 0; i < 3; i++) {
    assert_non_null(jobs[i]);
    assert_string_equal(jb_job_uuid(jobs[i]), rc->got[i]);
    jb_job_free(jobs[i]);
  }
}

/* In claim-next order, the Redis-decided one claimed through Redis. */
static void claim_next_many_claims_a_redis_decided_job_through_redis(
    void **state) {
  jbt_fixture *f = *state;
  redis_claims rc;
  claim_all_three_with_redis(f, &rc);
  assert_string_equal(rc.got[0], rc.a);
  assert_string_equal(rc.got[1], rc.r);
  assert_string_equal(rc.got[2], rc.z);
  assert_int_equal(hook_n, 1);
  char want[64];
  snprintf(want, sizeof want, "claim %s", rc.r);
  assert_string_equal(hook_log[0], want);
  jb__board_set_remote(f->board, NULL, NULL);
}

static void consume_and_claim_next_consumes_a_redis_decided_job_in_redis(
    void **state) {
  jbt_fixture *f = *state;
  redis_claims rc;
  claim_all_three_with_redis(f, &rc);
  char next[JB_UUID_STRLEN] = "x";
  assert_int_equal(jb_consume_and_claim_next(next, NULL, NULL, f->board,
                                                 rc.r, "w", rc.tok[1],
                                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                                 NULL),
                   JB_OK);
  assert_int_equal(hook_n, 2);
  char want[64];
  snprintf(want, sizeof want, "consume %s", rc.r);
  assert_string_equal(hook_log[1], want);
  assert_string_equal(next, ""); /* nothing else claimable */
  assert_int_equal(state_of(f->board, rc.r), JB_STATE_COMPLETE);
  jb__board_set_remote(f->board, NULL, NULL);
}

/* The local ones in a batch, with the hook set. */
static void consume_many_of_local_jobs_never_goes_through_redis(
    void **state) {
  jbt_fixture *f = *state;
  redis_claims rc;
  claim_all_three_with_redis(f, &rc);
  int hooked = hook_n;
  int st[2];
  jb_consume_item items[2] = {{rc.a, "w", 0, JB_OUTCOME_SUCCESS, NULL, 0},
                              {rc.z, "w", 0, JB_OUTCOME_SUCCESS, NULL, 0}};
  assert_int_equal(jb_consume_many(st, f->board, items, 2, NULL, NULL),
                   JB_OK);
  assert_int_equal(st[0], JB_OK);
  assert_int_equal(st[1], JB_OK);
  assert_int_equal(hook_n, hooked);
  jb__board_set_remote(f->board, NULL, NULL);
  jbt_assert_check_ok(f->board);
}

/* ------------------------------------------------------------- racing */

#define RACERS 4
#define RACE_JOBS 3000

typedef struct {
  const char *dir;
  char *out;
  int index;
  int start_fd;
} racer_arg;

/* claim_next_many of a few, then consume them all in one batch (every
 * other round with consume_and_claim_next for the last one), until
 * nothing is claimable. Each consumed uuid is written to `out`. */
static int racer(void *varg) {
  racer_arg *a = varg;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 10;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 11;
  FILE *out = fopen(a->out, "w");
  if (out == NULL) return 12;
  char who[16];
  snprintf(who, sizeof who, "racer-%d", a->index);
  uint64_t last_token = 0;
  for (unsigned round = 0;; round++) {
    char got[7][JB_UUID_STRLEN];
    uint64_t tok[7];
    size_t n = 0;
    size_t want = 1 + (round + (unsigned)a->index) % 7;
    int rc = jb_claim_next_many(&n, got, tok, NULL, b, who, NULL, want);
    if (rc == JB_ENOTFOUND) break;
    if (rc != JB_OK || n == 0 || n > want) return 13;
    for (size_t i = 0; i < n; i++) {
      if (tok[i] <= last_token) return 14; /* strictly increasing */
      last_token = tok[i];
    }
    jb_consume_item items[7];
    for (size_t i = 0; i < n; i++)
      items[i] = (jb_consume_item){got[i], who, tok[i], JB_OUTCOME_SUCCESS,
                                   NULL, 0};
    int st[7];
    if (jb_consume_many(st, b, items, n, NULL, NULL) != JB_OK) return 15;
    for (size_t i = 0; i < n; i++) {
      if (st[i] != JB_OK) return 16;
      fprintf(out, "%s\n", got[i]);
    }
    if (round % 2) { /* the fused path too */
      char u[JB_UUID_STRLEN];
      uint64_t t = 0;
      rc = jb_claim_next(u, NULL, &t, b, who, NULL);
      while (rc == JB_OK) {
        char next[JB_UUID_STRLEN];
        uint64_t nt = 0;
        if (t <= last_token) return 17;
        last_token = t;
        if (jb_consume_and_claim_next(next, NULL, &nt, b, u, who, t,
                                          &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                          NULL) != JB_OK)
          return 18;
        fprintf(out, "%s\n", u);
        if (next[0] == '\0' || round % 4 == 1) {
          if (next[0]) { /* hand it back: claimable again */
            if (jb_abandon(b, next, who, nt) != JB_OK) return 19;
          }
          break;
        }
        memcpy(u, next, JB_UUID_STRLEN);
        t = nt;
      }
      if (rc != JB_OK && rc != JB_ENOTFOUND) return 20;
    }
  }
  fclose(out);
  jb_board_close(b);
  return 0;
}

static void processes_racing_claim_next_many_never_share_a_job(void **state) {
  jbt_fixture *f = *state;
  jbt_uuids posted = {0}, done = {0};
  enum { CHUNK = 500 };
  static jb_post posts[CHUNK];
  static char uu[CHUNK][JB_UUID_STRLEN];
  for (size_t k = 0; k < RACE_JOBS; k += CHUNK) {
    for (size_t i = 0; i < CHUNK; i++) {
      posts[i] = (jb_post)JB_POST_INIT;
      posts[i].name = "race";
      posts[i].priority = (jb_priority)((k + i) % 5);
    }
    assert_int_equal(jb_job_post_batch(uu, f->board, posts, CHUNK), JB_OK);
    for (size_t i = 0; i < CHUNK; i++) jbt_uuids_add(&posted, uu[i]);
  }
  int start[2];
  assert_int_equal(pipe(start), 0);
  racer_arg args[RACERS];
  pid_t pid[RACERS];
  for (int i = 0; i < RACERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "racer-%d.txt", i);
    args[i] = (racer_arg){f->dir, jbt_path(f->dir, name), i, start[0]};
    pid[i] = jbt_fork(racer, &args[i], 120);
  }
  close(start[0]);
  for (int i = 0; i < RACERS; i++)
    assert_int_equal(write(start[1], "g", 1), 1);
  close(start[1]);
  for (int i = 0; i < RACERS; i++) {
    int ws = jbt_wait(pid[i], 120000);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
      fail_msg("racer %d: wait status 0x%x", i, ws);
    jbt_uuids_read_file(&done, args[i].out);
    free(args[i].out);
  }
  jbt_uuids_sort(&done);
  jbt_uuids_sort(&posted);
  const char *dup = jbt_uuids_duplicate(&done);
  if (dup) fail_msg("job %s was consumed twice", dup);
  assert_int_equal(done.n, RACE_JOBS);
  for (size_t i = 0; i < posted.n; i++)
    assert_true(jbt_uuids_find(&done, posted.v[i]) >= 0);
  size_t left = 1;
  assert_int_equal(jb_board_count(&left, f->board, 0), JB_OK);
  assert_int_equal(left, 0);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
  jbt_uuids_free(&done);
}

static const char *const low_uuids[] = {"00000000-0000-4000-8000-000000000003",
                                        "00000000-0000-4000-8000-000000000002",
                                        "00000000-0000-4000-8000-000000000001"};

/* Posts go at the end of `jobs` and `ready` with MDB_APPEND while their
 * keys sort last, and anywhere with an ordinary put once one does not
 * (store/ops.c, put_at_end). This posts a VERY_LOW job `first`, then a
 * batch of mixed priorities after it (`ids`: its ready keys stop sorting
 * last at the second post), then postings under the uuids low_uuids,
 * below every version 7 uuid, highest first (written with the store's
 * own post, as salvage does): none sorts last in `jobs`. Their posts go
 * to sp[] and their postings to buf[], which the caller frees. */
static void post_keys_that_do_not_sort_last(jbt_fixture *f,
                                            char first[JB_UUID_STRLEN],
                                            char ids[5][JB_UUID_STRLEN],
                                            jb_store_post sp[3],
                                            jb_buf buf[3]) {
  jbt_post(first, f->board, "lowest", JB_PRIORITY_VERY_LOW);
  static const jb_priority mixed[] = {JB_PRIORITY_LOW, JB_PRIORITY_HIGH,
                                      JB_PRIORITY_NORMAL,
                                      JB_PRIORITY_VERY_HIGH,
                                      JB_PRIORITY_NORMAL};
  jb_post posts[5];
  char names[5][32];
  for (int i = 0; i < 5; i++) {
    posts[i] = (jb_post)JB_POST_INIT;
    snprintf(names[i], sizeof names[i], "mixed-%d", i);
    posts[i].name = names[i];
    posts[i].priority = mixed[i];
  }
  assert_int_equal(jb_job_post_batch(ids, f->board, posts, 5), JB_OK);
  memset(sp, 0, 3 * sizeof *sp); /* no delay, no options */
  for (int i = 0; i < 3; i++) {
    buf[i] = (jb_buf){0};
    jb_posting_fields pf = {.uuid = low_uuids[i], .name = "low-uuid",
                            .name_len = 8, .priority = JB_PRIORITY_NORMAL,
                            .created_us = jb__now_us()};
    assert_int_equal(jb__posting_prefix(&buf[i], &pf), JB_OK);
    assert_int_equal(jb__uuid_parse(sp[i].uuid, low_uuids[i], "uuid"), JB_OK);
    sp[i].priority = JB_PRIORITY_NORMAL;
    sp[i].prefix = buf[i].data;
    sp[i].prefix_len = buf[i].len;
  }
  assert_int_equal(jb__store_post(f->board->store, sp, 3, jb__now_us()),
                   JB_OK);
}

/* Each job is found and listed in order, and check finds nothing wrong. */
static void posts_whose_keys_do_not_sort_last_go_in_their_place(void **state) {
  jbt_fixture *f = *state;
  char first[JB_UUID_STRLEN], ids[5][JB_UUID_STRLEN];
  jb_store_post sp[3];
  jb_buf buf[3];
  post_keys_that_do_not_sort_last(f, first, ids, sp, buf);
  for (int i = 0; i < 3; i++) {
    jb_job *j = NULL;
    assert_int_equal(jb_job_get(&j, f->board, low_uuids[i]), JB_OK);
    assert_string_equal(jb_job_name(j), "low-uuid");
    jb_job_free(j);
    jb__buf_free(&buf[i]);
  }
  /* Listing order: priority, then posting order. */
  const char *want[9] = {ids[3],       ids[1],       ids[2],
                         ids[4],       low_uuids[0], low_uuids[1],
                         low_uuids[2], ids[0],       first};
  char got[10][JB_UUID_STRLEN];
  assert_int_equal(listing(f->board, got, 10), 9);
  for (int i = 0; i < 9; i++) assert_string_equal(got[i], want[i]);
  jbt_assert_check_ok(f->board);
}

/* A store post of two, one of whose uuids is already on the board: the
 * whole batch is refused. */
static void a_store_post_of_a_uuid_on_the_board_refuses_the_whole_batch(
    void **state) {
  jbt_fixture *f = *state;
  char first[JB_UUID_STRLEN], ids[5][JB_UUID_STRLEN];
  jb_store_post sp[3];
  jb_buf buf[3];
  post_keys_that_do_not_sort_last(f, first, ids, sp, buf);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  jb_store_post again[2] = {sp[0], sp[1]};
  assert_int_equal(jb__uuid_parse(again[0].uuid,
                                  "ffffffff-ffff-4fff-bfff-ffffffffffff",
                                  "uuid"), JB_OK);
  assert_int_equal(jb__store_post(f->board->store, again, 2, jb__now_us()),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "job 00000000-0000-4000-8000-"
                      "000000000002 is already on the board");
  jbt_snapshot_assert_unchanged(&before, f->board);
  for (int i = 0; i < 3; i++) jb__buf_free(&buf[i]);
}

int main(void) {
  jbt_watchdog(600);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(claim_next_many_of_n_on_a_board_of_fewer_returns_those_there),
      T(claim_next_many_claims_in_one_commit),
      T(claim_next_many_with_nothing_claimable_writes_nothing),
      T(claim_next_many_takes_max_in_claim_next_order),
      T(claim_next_many_logs_each_claim_with_its_token),
      T(claim_next_many_applies_its_options_to_each_claim),
      T(claim_next_many_hands_out_jobs_whose_leases_lapsed),
      T(claim_next_many_logs_a_lapse_as_claim_next_does),
      T(claim_next_many_refuses_bad_arguments_and_changes_nothing),
      T(consume_and_claim_next_does_both_in_one_commit),
      T(consume_and_claim_next_hands_out_the_next_job_with_a_new_token),
      T(consume_and_claim_next_records_the_consume_as_consume_does),
      T(consume_and_claim_next_logs_the_consume_then_the_claim),
      T(the_token_before_consume_and_claim_next_acts_on_nothing_after),
      T(consume_and_claim_next_takes_one_buffer_for_job_and_next),
      T(consume_and_claim_next_with_nothing_claimable_says_so),
      T(consume_and_claim_next_accepts_no_out_parameters),
      T(consume_and_claim_next_whose_consume_fails_claims_nothing),
      T(consume_and_claim_next_with_bad_claim_options_changes_nothing),
      T(consume_and_claim_next_of_a_lapsed_claim_claims_nothing),
      T(consume_many_with_bad_items_commits_the_others),
      T(consume_many_gives_each_item_its_own_status),
      T(consume_many_calls_back_for_each_failed_item),
      T(consume_many_leaves_the_error_message_of_the_first_failure),
      T(consume_many_leaves_the_jobs_of_failed_items_claimed),
      T(consume_many_whose_items_all_fail_changes_nothing),
      T(consume_many_with_bad_arguments_is_refused_whole),
      T(claim_next_many_wakes_a_waiter_in_another_process),
      T(consume_and_claim_next_wakes_a_waiter_in_another_process),
      T(consume_many_wakes_a_waiter_in_another_process),
      T(claim_next_many_without_redis_skips_a_redis_decided_job),
      T(claim_next_many_claims_a_redis_decided_job_through_redis),
      T(consume_and_claim_next_consumes_a_redis_decided_job_in_redis),
      T(consume_many_of_local_jobs_never_goes_through_redis),
      T(processes_racing_claim_next_many_never_share_a_job),
      T(posts_whose_keys_do_not_sort_last_go_in_their_place),
      T(a_store_post_of_a_uuid_on_the_board_refuses_the_whole_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
