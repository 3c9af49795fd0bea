/*
 * test_sync_authority.c - the authority rule (docs/DESIGN-NOTES.md) through
 * the board API: a job published with jb_sync_publish is decided by Redis;
 * a handle attached with jb_sync_attach claims, abandons, extends and
 * consumes it in Redis first and then locally; a handle that is not
 * attached, or Redis stopped, or a claim held elsewhere in Redis, changes
 * nothing local. The tests share one redis-server (tests/redis_helper.h),
 * emptied before each: a server start per test would cost more than most
 * of the tests.
 */
#include "remote.h"
#include "helpers.h"
#include "core/internal.h"
#include "redis_helper.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The group's server. */
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
  jbt_redis *redis;    /* the group's server, empty at the start */
  char *dir;
  jb_board *board;     /* attached (in the tests that attach) */
  jb_sync_conn *conn;  /* the board's connection */
  jb_sync_conn *peer;  /* another client: reads Redis, claims as "bob" */
  jb__remote rm;       /* on peer */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->redis = &server;
  f->peer = jbt_redis_connect(f->redis->unix_url, 2000);
  const char *flushall[] = {"FLUSHALL"};
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, 1, flushall, NULL))
    fail_msg("FLUSHALL: %s", jb_errmsg());
  freeReplyObject(r);
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  f->conn = jbt_redis_connect(f->redis->unix_url, 500);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, false), JB_OK);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  jb_board_close(f->board);
  jb_sync_close(f->conn);
  jb_sync_close(f->peer);
  jbt_rmtree(f->dir);
  free(f->dir);
  free(f);
  return 0;
}

/* The raw value of key NS:<uuid><suffix> ("(nil)" when absent). */
static void key_get(char *out, size_t size, fixture *f, const char *u,
                    const char *suffix) {
  char piece[128], key[256];
  snprintf(piece, sizeof piece, "%s%s", u, suffix);
  assert_true(jb_sync_key(key, sizeof key, f->peer, piece) > 0);
  const char *argv[] = {"GET", key};
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, 2, argv, NULL))
    fail_msg("GET %s: %s", key, jb_errmsg());
  if (r->type == REDIS_REPLY_STRING)
    snprintf(out, size, "%.*s", (int)r->len, r->str);
  else
    snprintf(out, size, "(nil)");
  freeReplyObject(r);
}

static jb__remote_state redis_state(fixture *f, const char *u) {
  jb__remote_state st;
  if (jb__remote_read(&st, &f->rm, u)) fail_msg("read %s: %s", u, jb_errmsg());
  return st;
}

static void local_owner(char *out, jb_board *b, const char *u) {
  assert_int_equal(jb_job_find_owner(out, b, u), JB_OK);
}

/* Post locally and publish. */
static void published(char u[JB_UUID_STRLEN], fixture *f, const char *name) {
  jbt_post(u, f->board, name, JB_PRIORITY_NORMAL);
  if (jb_sync_publish(f->board, f->conn, u))
    fail_msg("publish %s: %s", u, jb_errmsg());
}

/* Whether the local board marks job u as decided by Redis. */
static bool locally_remote(fixture *f, const char *u) {
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  bool remote = jb_job_remote(job);
  jb_job_free(job);
  return remote;
}

/* -------------------------------------------- publish and the attached */

static void a_posted_job_is_local_until_published(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "job", JB_PRIORITY_NORMAL);
  assert_false(locally_remote(f, u));
  assert_false(redis_state(f, u).listed);
}

static void publish_lists_the_job_in_redis_and_marks_it_remote(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "job", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  assert_true(redis_state(f, u).listed);
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  jb_job_free(job);
}

static void publishing_again_is_recognised_not_a_second_post(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published(u, f, "job");
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  jbt_assert_check_ok(f->board);
}

/* Publishes a job, attaches the board and claims the job as "alice". */
static void claimed_by_alice(char u[JB_UUID_STRLEN], fixture *f) {
  published(u, f, "job");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
}

static void an_attached_claim_owns_the_job_in_redis_and_locally(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], owner[JB_WHO_MAX + 1], v[256];
  claimed_by_alice(u, f);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "alice");
}

/* The owner key gets an expiry, the local claim a lease. */
static void an_attached_extend_sets_the_expiry_in_redis_and_locally(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  assert_int_equal(jb_extend(f->board, u, "alice", 0, 60000), JB_OK);
  jb__remote_state st = redis_state(f, u);
  assert_true(st.pttl_ms > 50000 && st.pttl_ms <= 60000);
  jb_expiry ex;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&ex, &ms, f->board, u), JB_OK);
  assert_int_equal(ex, JB_EXPIRY_AT);
}

/* Unowned in Redis and locally, and claimable again. */
static void an_attached_abandon_unowns_the_job_in_redis_and_locally(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], owner[JB_WHO_MAX + 1], v[256];
  claimed_by_alice(u, f);
  assert_int_equal(jb_abandon(f->board, u, "alice", 0), JB_OK);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "(nil)");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "");
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
}

static void a_consume_by_another_owner_is_refused_by_redis(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  assert_int_equal(jb_consume(f->board, u, "mallory", 0, NULL), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "alice");
  assert_true(redis_state(f, u).listed);
}

static void an_attached_consume_removes_the_job_in_redis_and_locally(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  jb__remote_state st = redis_state(f, u);
  assert_false(st.listed);
  assert_false(st.owned);
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_ENOTFOUND);
  jbt_assert_check_ok(f->board);
}

/* As for a local consume. */
static void an_attached_consume_puts_the_completion_in_the_local_history(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  jb_completion_free(c);
}

static void an_attached_trash_goes_to_the_trash_in_redis(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  assert_int_equal(jb_trash(f->board, u, "alice", 0), JB_OK);
  jb__remote_state st = redis_state(f, u);
  assert_true(st.trashed);
  assert_false(st.listed);
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_ENOTFOUND);
  jbt_assert_check_ok(f->board);
}

/* ------------------------------------------------ handles not attached */

/* A handle without the hook: every operation of a published job fails with
 * JB_EOFFLINE and changes nothing, locally or in Redis; claim-next skips
 * the job; local jobs work. */

/* Publishes a job and opens a second handle on the board, not attached. */
static jb_board *unattached_handle(char u[JB_UUID_STRLEN], fixture *f) {
  published(u, f, "remote");
  return jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
}

static void an_unattached_handle_cannot_claim_a_published_job(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_board *h2 = unattached_handle(u, f);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim(NULL, h2, u, "alice", NULL), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "is decided by Redis and this handle is "
                                   "not connected to it");
  jbt_assert_contains(jb_errmsg(), u);
  jbt_snapshot_assert_unchanged(&before, f->board);
  assert_false(redis_state(f, u).owned);
  jb_board_close(h2);
}

static void claim_next_on_an_unattached_handle_skips_a_published_job(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jb_board *h2 = unattached_handle(u, f);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  jb_job *job = NULL;
  assert_int_equal(jb_claim_next(got, &job, NULL, h2, "alice", NULL),
                   JB_ENOTFOUND);
  assert_null(job);
  jbt_snapshot_assert_unchanged(&before, f->board);
  assert_false(redis_state(f, u).owned);
  jb_board_close(h2);
}

/* Claimed through the attached handle, the job cannot be consumed,
 * abandoned, trashed or extended through the other one. */
static void an_unattached_handle_cannot_release_a_published_job(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_board *h2 = unattached_handle(u, f);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_consume(h2, u, "alice", 0, NULL), JB_EOFFLINE);
  assert_int_equal(jb_abandon(h2, u, "alice", 0), JB_EOFFLINE);
  assert_int_equal(jb_trash(h2, u, "alice", 0), JB_EOFFLINE);
  assert_int_equal(jb_extend(h2, u, "alice", 0, 1000), JB_EOFFLINE);
  assert_int_equal(jb_consume(h2, u, "alice", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}),
                   JB_EOFFLINE);
  jbt_snapshot_assert_unchanged(&before, f->board);
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  assert_true(redis_state(f, u).listed);
  jb_board_close(h2);
}

static void a_detached_handle_cannot_release_a_published_job(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  claimed_by_alice(u, f);
  jb_sync_detach(f->board);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_EOFFLINE);
}

/* Claim-next passes over the published job to the local one. */
static void an_unattached_handle_works_on_local_jobs(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], l[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jb_board *h2 = unattached_handle(u, f);
  jbt_post(l, h2, "local", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim_next(got, NULL, NULL, h2, "carol", NULL), JB_OK);
  assert_string_equal(got, l);
  assert_int_equal(jb_consume(h2, l, "carol", 0, NULL), JB_OK);
  jb_board_close(h2);
}

/* --------------------------------------------------------- Redis stopped */

/* What a claim of a published job saw while Redis was stopped past the
 * command timeout, and the local work done meanwhile (when asked for):
 * claim-next of a local job as "carol" and its consume. */
typedef struct {
  char u[JB_UUID_STRLEN], l[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  int rc, rc_next, rc_cons;
  char msg[1024], next_msg[1024];
  jbt_snapshot before, after; /* the board around the claim */
} stopped_claim;

static void claim_with_redis_stopped(stopped_claim *s, fixture *f,
                                     bool local_work) {
  published(s->u, f, "remote");
  jbt_post(s->l, f->board, "local", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  jbt_snapshot_take(&s->before, f->board);
  assert_int_equal(kill(f->redis->pid, SIGSTOP), 0);
  s->rc = jb_claim(NULL, f->board, s->u, "alice", NULL);
  snprintf(s->msg, sizeof s->msg, "%s", jb_errmsg());
  jbt_snapshot_take(&s->after, f->board);
  if (local_work) {
    s->rc_next = jb_claim_next(s->got, NULL, NULL, f->board, "carol", NULL);
    s->rc_cons = s->rc_next == JB_OK
                     ? jb_consume(f->board, s->got, "carol", 0, NULL)
                     : s->rc_next;
    snprintf(s->next_msg, sizeof s->next_msg, "%s", jb_errmsg());
  }
  assert_int_equal(kill(f->redis->pid, SIGCONT), 0);
}

static void stopped_claim_free(stopped_claim *s) {
  jbt_snapshot_free(&s->before);
  jbt_snapshot_free(&s->after);
}

static void a_claim_with_redis_stopped_fails_offline_changing_nothing(
    void **state) {
  fixture *f = *state;
  stopped_claim s;
  claim_with_redis_stopped(&s, f, false);
  assert_int_equal(s.rc, JB_EOFFLINE);
  jbt_assert_contains(s.msg, "backend unavailable");
  jbt_assert_contains(s.msg, "timed out");
  jbt_snapshot_assert_same(&s.before, &s.after);
  stopped_claim_free(&s);
}

/* Claim-next passes over the Redis-decided job. */
static void local_work_goes_on_while_redis_is_stopped(void **state) {
  fixture *f = *state;
  stopped_claim s;
  claim_with_redis_stopped(&s, f, true);
  if (s.rc_next != JB_OK) fail_msg("claim-next: %d %s", s.rc_next, s.next_msg);
  assert_string_equal(s.got, s.l);
  assert_int_equal(s.rc_cons, JB_OK);
  stopped_claim_free(&s);
}

/* The script reached the server and ran when it resumed: Redis says alice,
 * the board does not (yet). Claiming again re-sends the same claim id,
 * which Redis recognises: now both agree. */
static void a_claim_lost_to_a_stopped_redis_is_resolved_by_claiming_again(
    void **state) {
  fixture *f = *state;
  char v[256], owner[JB_WHO_MAX + 1];
  stopped_claim s;
  claim_with_redis_stopped(&s, f, false);
  key_get(v, sizeof v, f, s.u, ".owned");
  assert_string_equal(v, "alice");
  local_owner(owner, f->board, s.u);
  assert_string_equal(owner, "");
  assert_int_equal(jb_claim(NULL, f->board, s.u, "alice", NULL), JB_OK);
  local_owner(owner, f->board, s.u);
  assert_string_equal(owner, "alice");
  assert_int_equal(jb_consume(f->board, s.u, "alice", 0, NULL), JB_OK);
  assert_false(redis_state(f, s.u).listed);
  jbt_assert_check_ok(f->board);
  stopped_claim_free(&s);
}

/* ----------------------------------------------------- claimed elsewhere */

/* Publishes a job, attaches the board, and claims the job in Redis as
 * "bob" under claim id `id` through the peer. */
static void claimed_by_bob(char u[JB_UUID_STRLEN], char id[JB_UUID_STRLEN],
                           fixture *f) {
  published(u, f, "remote");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 0, id, 0};
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bob), JB_OK);
}

/* Claimed in Redis by another client: our claim fails with JB_ECLAIMED
 * naming that owner, and nothing local changes. */
static void a_claim_of_a_job_claimed_elsewhere_is_refused_naming_the_owner(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  claimed_by_bob(u, id, f);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "already claimed by bob");
  jbt_snapshot_assert_unchanged(&before, f->board);
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "bob");
}

/* Nothing local changes, and a local job posted after it is the one
 * claim-next claims. */
static void claim_next_passes_over_a_job_claimed_elsewhere(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], l[JB_UUID_STRLEN];
  char got[JB_UUID_STRLEN];
  claimed_by_bob(u, id, f);
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "alice", NULL),
                   JB_ENOTFOUND);
  jbt_snapshot_assert_unchanged(&before, f->board);
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "alice", NULL),
                   JB_OK);
  assert_string_equal(got, l);
}

/* Bob lets go: claim-next now claims the published job through Redis. */
static void claim_next_claims_a_job_let_go_elsewhere_through_redis(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], got[JB_UUID_STRLEN], v[256];
  claimed_by_bob(u, id, f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, u,
                                      "bob", id), JB_OK);
  jb_job *job = NULL;
  assert_int_equal(jb_claim_next(got, &job, NULL, f->board, "alice", NULL),
                   JB_OK);
  assert_string_equal(got, u);
  assert_string_equal(jb_job_owner(job), "alice");
  assert_true(jb_job_remote(job));
  jb_job_free(job);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  jbt_assert_check_ok(f->board);
}

/* ------------------------------------------- tokens and bound claims */

/* Redis knows owners by name only, so the board refuses a stale fencing
 * token before Redis is asked. */
static void a_stale_token_is_refused_before_redis_is_asked(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], owner[JB_WHO_MAX + 1];
  published(u, f, "fenced");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.lease_ms = 200;
  uint64_t t1 = 0, t2 = 0;
  assert_int_equal(jb_claim(&t1, f->board, u, "w", &o), JB_OK);
  struct timespec ts = {0, 400 * 1000000L};
  nanosleep(&ts, NULL); /* the lease lapses, here and in Redis */
  o.lease_ms = 60000;
  assert_int_equal(jb_claim(&t2, f->board, u, "w", &o), JB_OK);
  assert_true(t2 > t1);
  assert_int_equal(jb_consume(f->board, u, "w", t1, NULL), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "is not the current claim's");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "w");
  assert_true(redis_state(f, u).listed);
  assert_int_equal(jb_consume(f->board, u, "w", t2, NULL), JB_OK);
  assert_false(redis_state(f, u).listed);
}

/* Bound to this host's process without a lease, and no replicator to keep
 * it alive in Redis, a claim would never lapse there: refused, nothing
 * claimed anywhere. */
static void a_bound_claim_without_a_lease_on_a_published_job_is_refused(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], owner[JB_WHO_MAX + 1];
  published(u, f, "bound");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  jb_claim_options b = JB_CLAIM_OPTIONS_INIT;
  b.flags = JB_CLAIM_BIND_PROCESS;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &b), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "no replicator runs on board");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "");
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "(nil)");
}

static void a_bound_claim_with_a_lease_on_a_published_job_is_allowed(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published(u, f, "bound");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  jb_claim_options b = JB_CLAIM_OPTIONS_INIT;
  b.flags = JB_CLAIM_BIND_PROCESS;
  b.lease_ms = 30000;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &b), JB_OK);
}

static void a_local_job_held_bound_without_a_lease_is_not_published(
    void **state) {
  fixture *f = *state;
  char l[JB_UUID_STRLEN];
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  jbt_post(l, f->board, "held here", JB_PRIORITY_NORMAL);
  jb_claim_options b = JB_CLAIM_OPTIONS_INIT;
  b.flags = JB_CLAIM_BIND_PROCESS;
  assert_int_equal(jb_claim(NULL, f->board, l, "w", &b), JB_OK);
  assert_int_equal(jb_sync_publish(f->board, f->conn, l), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "has no lease");
  assert_false(locally_remote(f, l));
  assert_false(redis_state(f, l).listed);
}

/* The commands Redis ran since the last call (INFO commandstats, then
 * CONFIG RESETSTAT), the peer's own left out ("config|resetstat" on Redis
 * 7, "config" before): "name=calls" sorted by name, one space between. A
 * script's own calls count as commands. */
static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void commands_since(char *out, size_t size, fixture *f) {
  const char *info[] = {"INFO", "commandstats"};
  const char *reset[] = {"CONFIG", "RESETSTAT"};
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, 2, info, NULL))
    fail_msg("INFO commandstats: %s", jb_errmsg());
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  char *lines[64];
  size_t n = 0;
  for (char *save = NULL, *l = strtok_r(r->str, "\r\n", &save); l && n < 64;
       l = strtok_r(NULL, "\r\n", &save)) {
    char name[64];
    long calls;
    if (sscanf(l, "cmdstat_%63[^:]:calls=%ld", name, &calls) != 2 ||
        strcmp(name, "info") == 0 || strncmp(name, "config", 6) == 0)
      continue;
    size_t len = strlen(name) + 24;
    lines[n] = malloc(len);
    assert_non_null(lines[n]);
    snprintf(lines[n++], len, "%s=%ld", name, calls);
  }
  qsort(lines, n, sizeof *lines, by_name);
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s", i ? " " : "", lines[i]);
    free(lines[i]);
  }
  freeReplyObject(r);
  if (jb__sync_command(&r, f->peer, 2, reset, NULL))
    fail_msg("CONFIG RESETSTAT: %s", jb_errmsg());
  freeReplyObject(r);
}


/* One command each to Redis: one EVALSHA, no PING or read before it. */

/* A claim through the board API is one EVALSHA, and the claim script runs
 * the six calls it must (claim.lua's header). */
static void a_claim_is_one_command_running_the_claim_scripts_calls(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], seen[1024];
  published(u, f, "one round trip");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  commands_since(seen, sizeof seen, f);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  commands_since(seen, sizeof seen, f);
  assert_string_equal(seen, "evalsha=1 hexists=1 hset=1 incr=1 publish=1 "
                            "set=2");
}

static void a_consume_is_one_command(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], seen[1024];
  claimed_by_alice(u, f);
  commands_since(seen, sizeof seen, f);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  commands_since(seen, sizeof seen, f);
  /* get=2: the owner key, and NS:<K>.unique (the job's unique key, freed
   * with it). */
  assert_string_equal(seen, "del=1 evalsha=1 get=2 hdel=1 hexists=1 hget=1 "
                            "publish=1");
}

/* NS:unique's value for `key` ("(nil)" when absent). */
static void unique_get(char *out, size_t size, fixture *f, const char *key) {
  char h[256];
  assert_true(jb_sync_key(h, sizeof h, f->peer, "unique") > 0);
  const char *argv[] = {"HGET", h, key};
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, 3, argv, NULL))
    fail_msg("HGET %s %s: %s", h, key, jb_errmsg());
  if (r->type == REDIS_REPLY_STRING)
    snprintf(out, size, "%.*s", (int)r->len, r->str);
  else
    snprintf(out, size, "(nil)");
  freeReplyObject(r);
}

static int post_unique(char u[JB_UUID_STRLEN], jb_board *b, const char *name,
                       const char *key) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.unique_key = key;
  return jb_job_post(u, b, &p);
}


/* ----------------------------------------------------------- unique keys */

/* A unique key is reserved in Redis before the local post, taken by the
 * publication, freed by the consume; a publication that finds it held by
 * another live job sends the job to the dead letters; a local post that
 * fails gives its reservation back. */

/* Another host's job. */
static const char other[] = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";

/* Bad input to the scripts' callers: refused before any I/O. */
static void bad_reserve_and_cancel_arguments_are_refused(void **state) {
  fixture *f = *state;
  jb__remote_result res;
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "", other, 1000),
                   JB_EINVAL);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", "nope", 1000),
                   JB_EINVAL);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, -1),
                   JB_EINVAL);
  assert_int_equal(jb__remote_cancel(&res, &f->rm, "NOT-A-UUID", false),
                   JB_EINVAL);
}

/* Attaches the board and reserves K in Redis for another host's job. */
static void k_reserved_elsewhere(fixture *f) {
  jb__remote_result res;
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, 60000),
                   JB_OK);
}

/* Held in Redis by another host's reservation: refused, its uuid out. */
static void a_post_of_a_key_reserved_in_redis_is_refused_naming_the_job(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  size_t n;
  k_reserved_elsewhere(f);
  assert_int_equal(post_unique(u, f->board, "job", "K"), JB_EEXISTS);
  assert_string_equal(u, other);
  jbt_assert_contains(jb_errmsg(), "(in redis)");
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
}

static void a_key_given_back_in_redis_is_free_to_post(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb__remote_result res;
  k_reserved_elsewhere(f);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, 0), JB_OK);
  assert_int_equal(post_unique(u, f->board, "job", "K"), JB_OK);
}

/* Attaches the board and posts a job u with unique key K. */
static void posted_with_k(char u[JB_UUID_STRLEN], fixture *f) {
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(post_unique(u, f->board, "job", "K"), JB_OK);
}

/* A reservation: "<uuid> <until-ms>". */
static void a_local_post_reserves_its_key_in_redis(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[256];
  posted_with_k(u, f);
  unique_get(v, sizeof v, f, "K");
  assert_memory_equal(v, u, 36);
  assert_int_equal(v[36], ' ');
}

/* NS:unique names the listed job, and the job names its key. */
static void publication_takes_the_key_for_the_listed_job(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[256];
  posted_with_k(u, f);
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_string_equal(v, u);
  key_get(v, sizeof v, f, u, ".unique");
  assert_string_equal(v, "K");
}

static void a_consume_frees_the_key_in_redis(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[256];
  posted_with_k(u, f);
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_string_equal(v, "(nil)");
  key_get(v, sizeof v, f, u, ".unique");
  assert_string_equal(v, "(nil)");
}

static void a_job_cancelled_before_publication_gives_its_key_back(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[256];
  posted_with_k(u, f);
  unique_get(v, sizeof v, f, "K");
  assert_memory_equal(v, u, 36);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_string_equal(v, "(nil)");
}

/* The key is held by a job posted while detached: the board refuses the
 * post after Redis reserved the key. */
static void a_local_post_refused_by_the_board_gives_its_key_back(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], u2[JB_UUID_STRLEN], v[256];
  assert_int_equal(post_unique(u, f->board, "local", "L"), JB_OK);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(post_unique(u2, f->board, "again", "L"), JB_EEXISTS);
  assert_string_equal(u2, u);
  unique_get(v, sizeof v, f, "L");
  assert_string_equal(v, "(nil)");
}

/* Posted while Redis could not be asked; another job holds the key when it
 * is published: not published, a dead letter naming both. */
static void a_publication_finding_the_key_held_buries_the_job(
    void **state) {
  fixture *f = *state;
  char u2[JB_UUID_STRLEN], v[256];
  jb__remote_result res;
  assert_int_equal(post_unique(u2, f->board, "offline", "M"), JB_OK);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "M", other, 60000),
                   JB_OK);
  assert_int_equal(jb_sync_publish(f->board, f->conn, u2), JB_EEXISTS);
  jbt_assert_contains(jb_errmsg(), "dead letters");
  assert_false(redis_state(f, u2).listed);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u2), JB_ENOTFOUND);
  jb_dead_letter *l = NULL;
  assert_int_equal(jb_dead_get(&l, f->board, u2), JB_OK);
  assert_int_equal(l->cause, JB_DEAD_BURIED);
  assert_non_null(l->reason);
  jbt_assert_contains(l->reason, "\"M\"");
  jbt_assert_contains(l->reason, other);
  assert_string_equal(l->unique_key, "M");
  jb_dead_free(l);
  unique_get(v, sizeof v, f, "M");
  assert_memory_equal(v, other, 36);
  jbt_assert_check_ok(f->board);
}

/* ---------------------------------------------------------------- cancel */

/* Cancel of a Redis-decided job goes through Redis. */

static void cancel_of_a_published_job_unattached_is_refused(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published(u, f, "cancelled");
  jbt_snapshot before;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_EOFFLINE);
  jbt_snapshot_assert_unchanged(&before, f->board);
  assert_true(redis_state(f, u).listed);
}

/* Publishes a job, attaches the board and cancels the job. */
static void cancelled(char u[JB_UUID_STRLEN], fixture *f) {
  published(u, f, "cancelled");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
}

/* Gone from Redis, not trashed; cancelled in the local history. */
static void an_attached_cancel_ends_the_job_in_redis_and_locally(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  cancelled(u, f);
  jb__remote_state st = redis_state(f, u);
  assert_false(st.listed);
  assert_false(st.trashed);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_CANCELLED);
  jb_completion_free(c);
}

/* Redis no longer lists it. */
static void a_second_cancel_is_not_found(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  cancelled(u, f);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_ENOTFOUND);
}

static void cancel_of_a_job_claimed_elsewhere_is_refused_naming_the_holder(
    void **state) {
  fixture *f = *state;
  char u2[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  claimed_by_bob(u2, id, f);
  assert_int_equal(jb_job_cancel(f->board, u2, 0), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "bob");
  assert_true(redis_state(f, u2).listed);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u2), JB_OK);
  jb_job_free(job);
}

/* Flush leaves a job claimed in Redis, and cancels a local job. */
static void flush_leaves_a_job_claimed_elsewhere(void **state) {
  fixture *f = *state;
  char u2[JB_UUID_STRLEN], id[JB_UUID_STRLEN], l[JB_UUID_STRLEN];
  claimed_by_bob(u2, id, f);
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  size_t n = 0;
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  assert_int_equal(n, 1);
  assert_true(redis_state(f, u2).listed);
}

/* The job leaves Redis, and its holder's consume is refused. */
static void a_forced_cancel_ends_a_job_claimed_elsewhere(void **state) {
  fixture *f = *state;
  char u2[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  jb__remote_result res;
  claimed_by_bob(u2, id, f);
  assert_int_equal(jb_job_cancel(f->board, u2, JB_CANCEL_FORCE), JB_OK);
  jb__remote_state st = redis_state(f, u2);
  assert_false(st.listed);
  assert_false(st.owned);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u2,
                                      "bob", id),
                   JB_ENOTFOUND);
}

/* It once cancelled them all, as a flush does. */
static void a_dead_letter_purge_on_an_attached_handle_leaves_redis_jobs(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  size_t n;
  published(u, f, "purge");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_dead_purge(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  assert_true(redis_state(f, u).listed);
}

/* Redis's publication mark would drop it under its uuid as the job
 * completed. */
static void the_dead_letter_of_a_job_trashed_through_redis_is_not_requeued(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published(u, f, "purge");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "me", NULL), JB_OK);
  assert_int_equal(jb_trash(f->board, u, "me", 0), JB_OK);
  assert_false(redis_state(f, u).listed);
  size_t letters = 0;
  assert_int_equal(jb_dead_count(&letters, f->board), JB_OK);
  assert_int_equal(letters, 1);
  assert_int_equal(jb_dead_requeue(f->board, u, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "Redis decided");
  assert_int_equal(jb_dead_count(&letters, f->board), JB_OK);
  assert_int_equal(letters, 1);
}

static void flush_cancels_an_unclaimed_published_job_through_redis(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  size_t n;
  published(u, f, "flushed");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  assert_int_equal(n, 1);
  assert_false(redis_state(f, u).listed);
  jbt_assert_check_ok(f->board);
}

/* A `post --unique K` killed after Redis's step (the reservation) and
 * before its local commit: what it leaves is the reservation alone, made
 * here through the handle's own hook, which is what that process ran. It
 * must hold K for nobody: a post of K on another board succeeds (it waits
 * out the pending reservation, within seconds), and K is then held by
 * that job, which exists: a third post is refused naming it. */
static void a_reservation_left_by_a_killed_post_holds_the_key_for_nobody(
    void **state) {
  fixture *f = *state;
  static const char ghost[] = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f0";
  char u[JB_UUID_STRLEN], u2[JB_UUID_STRLEN], holder[JB_UUID_STRLEN];
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(f->board->remote_ops->reserve(f->board->remote_ctx, "K",
                                                 ghost, 86400 * 1000, holder),
                   JB_OK);
  /* Another board of the namespace. */
  char *dir2 = jbt_mkdtemp();
  jb_board *b2 = jbt_open(dir2, JB_DURABILITY_NORMAL, 0);
  jb_sync_conn *c2 = jbt_redis_connect(f->redis->unix_url, 500);
  assert_int_equal(jb_sync_attach(b2, c2), JB_OK);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(post_unique(u, b2, "retried", "K"), JB_OK);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double waited = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  assert_true(waited < JB__REMOTE_PENDING_MS / 1000.0 + 2);
  char v[256];
  unique_get(v, sizeof v, f, "K");
  assert_memory_equal(v, u, 36); /* a confirmed reservation of the job */
  assert_null(strstr(v, " p"));
  /* The same on the first board: refused, naming a job that exists. */
  assert_int_equal(post_unique(u2, f->board, "again", "K"), JB_EEXISTS);
  assert_string_equal(u2, u);
  jb_sync_detach(b2);
  jb_sync_close(c2);
  jb_board_close(b2);
  jbt_rmtree(dir2);
  free(dir2);
  jb_sync_detach(f->board);
}


#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(a_posted_job_is_local_until_published),
      T(publish_lists_the_job_in_redis_and_marks_it_remote),
      T(publishing_again_is_recognised_not_a_second_post),
      T(an_attached_claim_owns_the_job_in_redis_and_locally),
      T(an_attached_extend_sets_the_expiry_in_redis_and_locally),
      T(an_attached_abandon_unowns_the_job_in_redis_and_locally),
      T(a_consume_by_another_owner_is_refused_by_redis),
      T(an_attached_consume_removes_the_job_in_redis_and_locally),
      T(an_attached_consume_puts_the_completion_in_the_local_history),
      T(an_attached_trash_goes_to_the_trash_in_redis),
      T(an_unattached_handle_cannot_claim_a_published_job),
      T(claim_next_on_an_unattached_handle_skips_a_published_job),
      T(an_unattached_handle_cannot_release_a_published_job),
      T(a_detached_handle_cannot_release_a_published_job),
      T(an_unattached_handle_works_on_local_jobs),
      T(a_claim_with_redis_stopped_fails_offline_changing_nothing),
      T(local_work_goes_on_while_redis_is_stopped),
      T(a_claim_lost_to_a_stopped_redis_is_resolved_by_claiming_again),
      T(a_claim_of_a_job_claimed_elsewhere_is_refused_naming_the_owner),
      T(claim_next_passes_over_a_job_claimed_elsewhere),
      T(claim_next_claims_a_job_let_go_elsewhere_through_redis),
      T(a_stale_token_is_refused_before_redis_is_asked),
      T(a_bound_claim_without_a_lease_on_a_published_job_is_refused),
      T(a_bound_claim_with_a_lease_on_a_published_job_is_allowed),
      T(a_local_job_held_bound_without_a_lease_is_not_published),
      T(a_claim_is_one_command_running_the_claim_scripts_calls),
      T(a_consume_is_one_command),
      T(bad_reserve_and_cancel_arguments_are_refused),
      T(a_post_of_a_key_reserved_in_redis_is_refused_naming_the_job),
      T(a_key_given_back_in_redis_is_free_to_post),
      T(a_local_post_reserves_its_key_in_redis),
      T(publication_takes_the_key_for_the_listed_job),
      T(a_consume_frees_the_key_in_redis),
      T(a_job_cancelled_before_publication_gives_its_key_back),
      T(a_local_post_refused_by_the_board_gives_its_key_back),
      T(a_publication_finding_the_key_held_buries_the_job),
      T(a_reservation_left_by_a_killed_post_holds_the_key_for_nobody),
      T(cancel_of_a_published_job_unattached_is_refused),
      T(an_attached_cancel_ends_the_job_in_redis_and_locally),
      T(a_second_cancel_is_not_found),
      T(cancel_of_a_job_claimed_elsewhere_is_refused_naming_the_holder),
      T(flush_leaves_a_job_claimed_elsewhere),
      T(a_forced_cancel_ends_a_job_claimed_elsewhere),
      T(a_dead_letter_purge_on_an_attached_handle_leaves_redis_jobs),
      T(the_dead_letter_of_a_job_trashed_through_redis_is_not_requeued),
      T(flush_cancels_an_unclaimed_published_job_through_redis),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
