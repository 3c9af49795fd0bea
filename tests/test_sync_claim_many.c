/*
 * test_sync_claim_many.c - claim-next of many jobs over jobs Redis
 * decides (jb_claim_next_many on an attached handle): the run of
 * Redis-decided jobs is claimed in one round trip (one script call, one
 * read of the server's, not one per job), each claim still decided by
 * Redis on its own with its own fencing token; jobs held elsewhere in
 * Redis are passed over and
 * the next ones claimed; the claims, tokens and local records are those
 * of the one-by-one path (JOBBOARD_SYNC_CLAIM_MANY=0); and a server that
 * stops answering after the claims were sent loses no claim and gives
 * none twice: what Redis granted is recorded, by the retry when the
 * replies were lost. Against a redis-server of the test's own
 * (tests/redis_helper.h), emptied before each test.
 */
#include "remote.h"
#include "helpers.h"
#include "redis_helper.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jbt_redis server;

static int group_setup(void **state) {
  (void)state;
  jbt_redis_start(&server, NULL);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  jbt_redis_stop(&server);
  return 0;
}

typedef struct {
  char *dir;
  jb_board *board;
  jb_sync_conn *conn; /* the board's */
  jb_sync_conn *peer; /* reads Redis, claims as "bob" */
  jb__remote rm;      /* on peer */
} fixture;

static void flushall(jb_sync_conn *c) {
  const char *argv[] = {"FLUSHALL"};
  redisReply *r = NULL;
  if (jb__sync_command(&r, c, 1, argv, NULL))
    fail_msg("FLUSHALL: %s", jb_errmsg());
  freeReplyObject(r);
}

static void open_fixture(fixture *f) {
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  f->conn = jbt_redis_connect(server.unix_url, 500);
}

static void close_fixture(fixture *f) {
  jb_board_close(f->board);
  jb_sync_close(f->conn);
  jbt_rmtree(f->dir);
  free(f->dir);
  f->board = NULL;
  f->conn = NULL;
  f->dir = NULL;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->peer = jbt_redis_connect(server.unix_url, 2000);
  flushall(f->peer);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, false), JB_OK);
  open_fixture(f);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  close_fixture(f);
  jb_sync_close(f->peer);
  free(f);
  unsetenv("JOBBOARD_SYNC_CLAIM_MANY");
  return 0;
}

/* Attach the board: the run claimed in one call (together) or one by one. */
static void attach(fixture *f, bool together) {
  if (together)
    unsetenv("JOBBOARD_SYNC_CLAIM_MANY");
  else
    setenv("JOBBOARD_SYNC_CLAIM_MANY", "0", 1);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
}

/* Post n jobs named <prefix>-<i> (priority prio) and publish each. */
static void published(char (*u)[JB_UUID_STRLEN], fixture *f, size_t n,
                      const char *prefix, jb_priority prio) {
  for (size_t i = 0; i < n; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s-%zu", prefix, i);
    jbt_post(u[i], f->board, name, prio);
    if (jb_sync_publish(f->board, f->conn, u[i]))
      fail_msg("publish %s: %s", u[i], jb_errmsg());
  }
}

/* A number from the peer's INFO <section>: the value after "<field>:" or,
 * for commandstats, after "<field>" (e.g. "cmdstat_evalsha:calls="). */
static long long info_field(fixture *f, const char *section,
                            const char *field) {
  const char *argv[] = {"INFO", section};
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, 2, argv, NULL))
    fail_msg("INFO %s: %s", section, jb_errmsg());
  const char *p = r->type == REDIS_REPLY_STRING
                      ? strstr(r->str, field)
                      : NULL;
  long long v = p ? strtoll(p + strlen(field), NULL, 10) : 0;
  freeReplyObject(r);
  return v;
}

static long long reads(fixture *f) {
  return info_field(f, "stats", "total_reads_processed:");
}

static long long evalshas(fixture *f) {
  return info_field(f, "commandstats", "cmdstat_evalsha:calls=");
}

/* Redis's owner of job u ("" when none). */
static void redis_owner(char *out, size_t size, fixture *f, const char *u) {
  jb__remote_state st;
  if (jb__remote_read(&st, &f->rm, u)) fail_msg("read %s: %s", u, jb_errmsg());
  snprintf(out, size, "%s", st.owned ? st.owner : "");
}

static void local_owner(char out[JB_WHO_MAX + 1], jb_board *b,
                        const char *u) {
  assert_int_equal(jb_job_find_owner(out, b, u), JB_OK);
}

/* The name a job was posted with. */
static void job_name(char *out, size_t size, jb_board *b, const char *u) {
  jb_job *job;
  assert_int_equal(jb_job_get(&job, b, u), JB_OK);
  snprintf(out, size, "%s", jb_job_name(job));
  jb_job_free(job);
}

/* ------------------------------------------------------ one round trip */

enum { N = 64 };

static void sixty_four_claims_go_to_redis_in_one_round_trip(void **state) {
  fixture *f = *state;
  char u[N][JB_UUID_STRLEN], got[N][JB_UUID_STRLEN];
  uint64_t tokens[N];
  published(u, f, N, "job", JB_PRIORITY_NORMAL);
  attach(f, true);
  long long r0 = reads(f), e0 = evalshas(f);
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, got, tokens, NULL, f->board, "w",
                                      NULL, N),
                   JB_OK);
  long long r1 = reads(f), e1 = evalshas(f);
  assert_int_equal(n, N);
  /* One script call for the 64 jobs. */
  assert_int_equal(e1 - e0, 1);
  /* The reads the server made between the two INFOs: the claims' (one, or
   * two if the call outgrows a read's buffer) and the second INFO's. One
   * by one it is 64 and one. */
  if (r1 - r0 > 3)
    fail_msg("the server made %lld reads for %d claims: not one round trip",
             r1 - r0 - 1, N);
  uint64_t last_fence = 0;
  for (size_t i = 0; i < N; i++) {
    assert_string_equal(got[i], u[i]); /* claim-next order: Redis's */
    if (i) assert_true(tokens[i] > tokens[i - 1]);
    char o[JB_WHO_MAX + 1];
    local_owner(o, f->board, u[i]);
    assert_string_equal(o, "w");
    redis_owner(o, sizeof o, f, u[i]);
    assert_string_equal(o, "w");
    /* Each claim its own fencing token in Redis, in claim order. */
    jb__remote_state st;
    assert_int_equal(jb__remote_read(&st, &f->rm, u[i]), JB_OK);
    assert_true(st.fence > last_fence);
    last_fence = st.fence;
  }
  jbt_assert_check_ok(f->board);
}

/* The same claims one by one: a read each (what the test above tells
 * apart). */
static void one_by_one_each_claim_is_a_round_trip(void **state) {
  fixture *f = *state;
  char u[N][JB_UUID_STRLEN];
  published(u, f, N, "job", JB_PRIORITY_NORMAL);
  attach(f, false);
  long long r0 = reads(f);
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, NULL, NULL, NULL, f->board, "w",
                                      NULL, N),
                   JB_OK);
  assert_int_equal(n, N);
  assert_true(reads(f) - r0 >= N);
}

/* ------------------------------------------------ held elsewhere: skipped */

static void jobs_claimed_elsewhere_in_redis_are_passed_over(void **state) {
  fixture *f = *state;
  char u[10][JB_UUID_STRLEN], got[7][JB_UUID_STRLEN];
  published(u, f, 10, "job", JB_PRIORITY_NORMAL);
  /* Taken by bob in Redis only: this board has not heard of it. */
  const size_t taken[] = {1, 4, 6};
  for (size_t i = 0; i < 3; i++) {
    jb__remote_result res;
    char id[JB_UUID_STRLEN];
    assert_int_equal(jb__remote_claim_id(id), JB_OK);
    jb__remote_owner o = {"bob", 0, id, 0};
    assert_int_equal(jb__remote_claim(&res, &f->rm, u[taken[i]], &o), JB_OK);
  }
  attach(f, true);
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                      NULL, 7),
                   JB_OK);
  assert_int_equal(n, 7);
  const size_t want[] = {0, 2, 3, 5, 7, 8, 9};
  for (size_t i = 0; i < 7; i++) assert_string_equal(got[i], u[want[i]]);
  for (size_t i = 0; i < 3; i++) {
    char o[JB_WHO_MAX + 1];
    local_owner(o, f->board, u[taken[i]]);
    assert_string_equal(o, "");
    redis_owner(o, sizeof o, f, u[taken[i]]);
    assert_string_equal(o, "bob");
  }
  jbt_assert_check_ok(f->board);
}

/* ----------------------------------------- the same as one by one */

/* One claim as the caller saw it: the job's name, its token, and its
 * local record (owner, lease, state). */
typedef struct {
  char name[64];
  uint64_t token;
  char owner[JB_WHO_MAX + 1];
  bool leased;
  int state;
  bool remote;
} seen;

/* A board mixing jobs decided here and by Redis, in three priorities,
 * some held by bob in Redis; then two calls of claim-next many (12 and
 * the rest) with a lease. Fills out[] (up to 40) and returns how many. */
static size_t mixed_run(fixture *f, bool together, seen *out) {
  char hi[5][JB_UUID_STRLEN], mid[12][JB_UUID_STRLEN], lo[6][JB_UUID_STRLEN];
  char l1[JB_UUID_STRLEN], l2[JB_UUID_STRLEN], l3[JB_UUID_STRLEN];
  published(hi, f, 5, "hi", JB_PRIORITY_HIGH);
  jbt_post(l1, f->board, "local-hi", JB_PRIORITY_HIGH);
  published(mid, f, 12, "mid", JB_PRIORITY_NORMAL);
  jbt_post(l2, f->board, "local-mid", JB_PRIORITY_NORMAL);
  jbt_post(l3, f->board, "local-mid2", JB_PRIORITY_NORMAL);
  published(lo, f, 6, "lo", JB_PRIORITY_LOW);
  const char *bobs[] = {hi[2], mid[0], mid[5], mid[6], lo[5]};
  for (size_t i = 0; i < 5; i++) {
    jb__remote_result res;
    char id[JB_UUID_STRLEN];
    assert_int_equal(jb__remote_claim_id(id), JB_OK);
    jb__remote_owner o = {"bob", 0, id, 0};
    assert_int_equal(jb__remote_claim(&res, &f->rm, bobs[i], &o), JB_OK);
  }
  attach(f, together);
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.lease_ms = 60000;
  size_t total = 0;
  const size_t asks[] = {12, 40};
  for (size_t a = 0; a < 2; a++) {
    char got[40][JB_UUID_STRLEN];
    uint64_t tokens[40];
    size_t n = 0;
    assert_int_equal(jb_claim_next_many(&n, got, tokens, NULL, f->board, "w",
                                        &co, asks[a]),
                     JB_OK);
    for (size_t i = 0; i < n; i++, total++) {
      seen *s = &out[total];
      job_name(s->name, sizeof s->name, f->board, got[i]);
      s->token = tokens[i];
      jb_job *job;
      assert_int_equal(jb_job_get(&job, f->board, got[i]), JB_OK);
      snprintf(s->owner, sizeof s->owner, "%s", jb_job_owner(job));
      s->leased = jb_job_lease_expires(job) > 0;
      s->state = jb_job_state(job);
      s->remote = jb_job_remote(job);
      jb_job_free(job);
      if (s->remote) {
        char o[JB_WHO_MAX + 1];
        redis_owner(o, sizeof o, f, got[i]);
        assert_string_equal(o, "w");
      }
    }
  }
  jbt_assert_check_ok(f->board);
  return total;
}

static void claims_in_one_call_equal_the_one_by_one_path(void **state) {
  fixture *f = *state;
  seen one[40], many[40];
  size_t n1 = mixed_run(f, false, one);
  close_fixture(f);
  flushall(f->peer);
  open_fixture(f);
  size_t n2 = mixed_run(f, true, many);
  /* 26 jobs, 5 held by bob. */
  assert_int_equal(n1, 21);
  assert_int_equal(n2, n1);
  for (size_t i = 0; i < n1; i++) {
    assert_string_equal(many[i].name, one[i].name);
    assert_int_equal(many[i].token, one[i].token);
    assert_string_equal(many[i].owner, one[i].owner);
    assert_int_equal(many[i].leased, one[i].leased);
    assert_int_equal(many[i].state, one[i].state);
    assert_int_equal(many[i].remote, one[i].remote);
  }
  /* The order: high (Redis's, then the local one), normal, low. */
  assert_string_equal(many[0].name, "hi-0");
  assert_string_equal(many[4].name, "local-hi");
  assert_string_equal(many[20].name, "lo-4");
}

/* ------------------------------------------------ Redis lost midway */

/*
 * The server stops (SIGSTOP) with the claims sent and unanswered: the
 * call times out, cannot read Redis to resolve them, records none and
 * says so. The server then runs them (SIGCONT: they were in its socket);
 * the next call re-sends the same claim ids, finds them held, and records
 * every one: each job claimed once, by w, in Redis and here.
 */
static void a_server_stopped_after_the_claims_loses_none(void **state) {
  fixture *f = *state;
  char u[16][JB_UUID_STRLEN], got[16][JB_UUID_STRLEN];
  published(u, f, 16, "job", JB_PRIORITY_NORMAL);
  attach(f, true);
  assert_int_equal(kill(server.pid, SIGSTOP), 0);
  size_t n = 99;
  int rc = jb_claim_next_many(&n, got, NULL, NULL, f->board, "w", NULL, 16);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  assert_int_equal(kill(server.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_ENOTFOUND);
  assert_int_equal(n, 0);
  jbt_assert_contains(msg, "not tried");
  jbt_assert_contains(msg, "may have run");
  for (size_t i = 0; i < 16; i++) {
    char o[JB_WHO_MAX + 1];
    local_owner(o, f->board, u[i]);
    assert_string_equal(o, "");
  }
  /* Ran once the server went on: Redis holds all 16 for w. */
  for (size_t i = 0; i < 16; i++) {
    char o[JB_WHO_MAX + 1];
    redis_owner(o, sizeof o, f, u[i]);
    assert_string_equal(o, "w");
  }
  /* The retry records them, in claim-next order: none lost. */
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                      NULL, 16),
                   JB_OK);
  assert_int_equal(n, 16);
  for (size_t i = 0; i < 16; i++) {
    assert_string_equal(got[i], u[i]);
    char o[JB_WHO_MAX + 1];
    local_owner(o, f->board, u[i]);
    assert_string_equal(o, "w");
  }
  /* And no one else gets them: held in Redis and here. */
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "x",
                                      NULL, 16),
                   JB_ENOTFOUND);
  jbt_assert_check_ok(f->board);
}

/* The same, with a second call made while the server is still stopped
 * (its reconnect fails: nothing sent): the claim ids of the first call
 * are kept, so that the call after the server went on still finds its
 * claims held under them, and records them. */
static void claim_ids_outlive_a_call_that_sent_nothing(void **state) {
  fixture *f = *state;
  char u[8][JB_UUID_STRLEN], got[8][JB_UUID_STRLEN];
  published(u, f, 8, "job", JB_PRIORITY_NORMAL);
  attach(f, true);
  assert_int_equal(kill(server.pid, SIGSTOP), 0);
  size_t n = 99;
  int rc1 = jb_claim_next_many(&n, got, NULL, NULL, f->board, "w", NULL, 8);
  size_t n1 = n;
  int rc2 = jb_claim_next_many(&n, got, NULL, NULL, f->board, "w", NULL, 8);
  size_t n2 = n;
  assert_int_equal(kill(server.pid, SIGCONT), 0);
  assert_int_equal(rc1, JB_ENOTFOUND);
  assert_int_equal(n1, 0);
  assert_int_equal(rc2, JB_ENOTFOUND);
  assert_int_equal(n2, 0);
  assert_int_equal(jb_claim_next_many(&n, got, NULL, NULL, f->board, "w",
                                      NULL, 8),
                   JB_OK);
  assert_int_equal(n, 8);
  for (size_t i = 0; i < 8; i++) {
    assert_string_equal(got[i], u[i]);
    char o[JB_WHO_MAX + 1];
    redis_owner(o, sizeof o, f, u[i]);
    assert_string_equal(o, "w");
  }
  jbt_assert_check_ok(f->board);
}

/* The server killed with the claims sent (gone, and its data with it: no
 * persistence): nothing is recorded, the local jobs are still claimed,
 * and once a server answers again (empty) nothing is held anywhere. */
static void a_server_killed_after_the_claims_records_nothing(void **state) {
  fixture *f = *state;
  char u[8][JB_UUID_STRLEN], got[10][JB_UUID_STRLEN], l[JB_UUID_STRLEN];
  published(u, f, 8, "job", JB_PRIORITY_HIGH);
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  attach(f, true);
  assert_int_equal(kill(server.pid, SIGSTOP), 0);
  size_t n = 0;
  int rc = jb_claim_next_many(&n, got, NULL, NULL, f->board, "w", NULL, 10);
  jbt_redis_kill(&server);
  /* The local job after the run is claimed; no Redis-decided one is. */
  assert_int_equal(rc, JB_OK);
  assert_int_equal(n, 1);
  assert_string_equal(got[0], l);
  for (size_t i = 0; i < 8; i++) {
    char o[JB_WHO_MAX + 1];
    local_owner(o, f->board, u[i]);
    assert_string_equal(o, "");
  }
  jbt_redis_restart(&server);
  jb_sync_close(f->peer);
  f->peer = jbt_redis_connect(server.unix_url, 2000);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, false), JB_OK);
  for (size_t i = 0; i < 8; i++) {
    char o[JB_WHO_MAX + 1];
    redis_owner(o, sizeof o, f, u[i]);
    assert_string_equal(o, "");
  }
  jbt_assert_check_ok(f->board);
}

/* ---------------------------------------------- scripts flushed */

/* The server's script cache emptied (SCRIPT FLUSH, a restart): the call
 * is refused NOSCRIPT, nothing ran; it is sent again with its script
 * loaded, and all are claimed once. */
static void claims_refused_noscript_are_sent_again(void **state) {
  fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  published(u, f, 6, "job", JB_PRIORITY_NORMAL);
  attach(f, true);
  const char *argv[] = {"SCRIPT", "FLUSH"};
  redisReply *r = NULL;
  assert_int_equal(jb__sync_command(&r, f->peer, 2, argv, NULL), JB_OK);
  freeReplyObject(r);
  size_t n = 0;
  assert_int_equal(jb_claim_next_many(&n, NULL, NULL, NULL, f->board, "w",
                                      NULL, 6),
                   JB_OK);
  assert_int_equal(n, 6);
  for (size_t i = 0; i < 6; i++) {
    char o[JB_WHO_MAX + 1];
    redis_owner(o, sizeof o, f, u[i]);
    assert_string_equal(o, "w");
    local_owner(o, f->board, u[i]);
    assert_string_equal(o, "w");
  }
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(sixty_four_claims_go_to_redis_in_one_round_trip),
      T(one_by_one_each_claim_is_a_round_trip),
      T(jobs_claimed_elsewhere_in_redis_are_passed_over),
      T(claims_in_one_call_equal_the_one_by_one_path),
      T(a_server_stopped_after_the_claims_loses_none),
      T(claim_ids_outlive_a_call_that_sent_nothing),
      T(claims_refused_noscript_are_sent_again),
      T(a_server_killed_after_the_claims_records_nothing),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
