/*
 * test_sync_authority.c - the authority rule (docs/DESIGN-NOTES.md) through
 * the board API: a job published with jb_sync_publish is decided by Redis;
 * a handle attached with jb_sync_attach claims, abandons, extends and
 * consumes it in Redis first and then locally; a handle that is not
 * attached, or Redis stopped, or a claim held elsewhere in Redis, changes
 * nothing local. Each test runs its own redis-server
 * (tests/redis_helper.h).
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

typedef struct {
  jbt_redis redis;
  char *dir;
  jb_board *board;     /* attached (in the tests that attach) */
  jb_sync_conn *conn;  /* the board's connection */
  jb_sync_conn *peer;  /* another client: reads Redis, claims as "bob" */
  jb__remote rm;       /* on peer */
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  jbt_redis_start(&f->redis, NULL);
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  f->conn = jbt_redis_connect(f->redis.unix_url, 500);
  f->peer = jbt_redis_connect(f->redis.unix_url, 2000);
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
  jbt_redis_stop(&f->redis);
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

static void test_publish_claim_consume(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], owner[JB_WHO_MAX + 1], v[256];
  jbt_post(u, f->board, "job", JB_PRIORITY_NORMAL);
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  assert_false(jb_job_remote(job));
  jb_job_free(job);
  assert_false(redis_state(f, u).listed);

  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  assert_true(redis_state(f, u).listed);
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  jb_job_free(job);
  /* Publishing again is recognised, not a second post. */
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  jbt_assert_check_ok(f->board);

  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "alice");

  /* extend: the owner key gets an expiry, the local claim a lease. */
  assert_int_equal(jb_extend(f->board, u, "alice", 0, 60000), JB_OK);
  jb__remote_state st = redis_state(f, u);
  assert_true(st.pttl_ms > 50000 && st.pttl_ms <= 60000);
  jb_expiry ex;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&ex, &ms, f->board, u), JB_OK);
  assert_int_equal(ex, JB_EXPIRY_AT);

  /* abandon: unowned in Redis and locally; then claimed again. */
  assert_int_equal(jb_abandon(f->board, u, "alice", 0), JB_OK);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "(nil)");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "");
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);

  /* A wrong owner is refused by Redis; nothing changes. */
  assert_int_equal(jb_consume(f->board, u, "mallory", 0, NULL), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "alice");
  assert_true(redis_state(f, u).listed);

  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  st = redis_state(f, u);
  assert_false(st.listed);
  assert_false(st.owned);
  assert_int_equal(jb_job_get(&job, f->board, u), JB_ENOTFOUND);
  /* Its completion is in the local history, as for a local consume. */
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);

  /* trash goes to Redis's trash. */
  published(u, f, "job2");
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  assert_int_equal(jb_trash(f->board, u, "alice", 0), JB_OK);
  st = redis_state(f, u);
  assert_true(st.trashed);
  assert_false(st.listed);
  assert_int_equal(jb_job_get(&job, f->board, u), JB_ENOTFOUND);
  jbt_assert_check_ok(f->board);
}

/* A handle without the hook: every operation of a published job fails with
 * JB_EOFFLINE and changes nothing, locally or in Redis; claim-next skips
 * the job; local jobs work. */
static void test_not_attached(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], l[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  published(u, f, "remote");
  jb_board *h2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);

  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim(NULL, h2, u, "alice", NULL), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "is decided by Redis and this handle is "
                                   "not connected to it");
  jbt_assert_contains(jb_errmsg(), u);
  jb_job *job = NULL;
  assert_int_equal(jb_claim_next(got, &job, NULL, h2, "alice", NULL), JB_ENOTFOUND);
  assert_null(job);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&after);
  assert_false(redis_state(f, u).owned);

  /* Claimed through the attached handle; h2 can release nothing. */
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  jbt_snapshot_free(&before);
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_consume(h2, u, "alice", 0, NULL), JB_EOFFLINE);
  assert_int_equal(jb_abandon(h2, u, "alice", 0), JB_EOFFLINE);
  assert_int_equal(jb_trash(h2, u, "alice", 0), JB_EOFFLINE);
  assert_int_equal(jb_extend(h2, u, "alice", 0, 1000), JB_EOFFLINE);
  assert_int_equal(jb_consume(h2, u, "alice", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}),
                   JB_EOFFLINE);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&after);
  jbt_snapshot_free(&before);
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  assert_true(redis_state(f, u).listed);

  /* Detached: the first handle is refused too. */
  jb_sync_detach(f->board);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_EOFFLINE);

  /* Local jobs are untouched by all this. */
  jbt_post(l, h2, "local", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim_next(got, NULL, NULL, h2, "carol", NULL), JB_OK);
  assert_string_equal(got, l);
  assert_int_equal(jb_consume(h2, l, "carol", 0, NULL), JB_OK);
  jb_board_close(h2);
}

/* Redis stopped past the command timeout: the claim fails with JB_EOFFLINE
 * and nothing local changes; local jobs still work (claim-next passes over
 * the Redis-decided one). The claim whose reply was lost is resolved by
 * claiming again once Redis is back. */
static void test_redis_stopped(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], l[JB_UUID_STRLEN], got[JB_UUID_STRLEN], v[256];
  char owner[JB_WHO_MAX + 1];
  published(u, f, "remote");
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_sync_ping(f->conn), JB_OK);

  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb_claim(NULL, f->board, u, "alice", NULL);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  jbt_snapshot_take(&after, f->board);
  /* Local work goes on while Redis is away. */
  int rc_next = jb_claim_next(got, NULL, NULL, f->board, "carol", NULL);
  int rc_cons = rc_next == JB_OK ? jb_consume(f->board, got, "carol", 0, NULL)
                                 : rc_next;
  char next_msg[1024];
  snprintf(next_msg, sizeof next_msg, "%s", jb_errmsg());
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);

  assert_int_equal(rc, JB_EOFFLINE);
  jbt_assert_contains(msg, "backend unavailable");
  jbt_assert_contains(msg, "timed out");
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  if (rc_next != JB_OK) fail_msg("claim-next: %d %s", rc_next, next_msg);
  assert_string_equal(got, l);
  assert_int_equal(rc_cons, JB_OK);

  /* The script reached the server and ran when it resumed: Redis says
   * alice, the board does not (yet). Claiming again re-sends the same
   * claim id, which Redis recognises: now both agree. */
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "");
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "alice");
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  assert_false(redis_state(f, u).listed);
  jbt_assert_check_ok(f->board);
}

/* Claimed in Redis by another client: our claim fails with JB_ECLAIMED
 * naming that owner, and nothing local changes; claim-next passes over
 * it. */
static void test_claimed_elsewhere(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], l[JB_UUID_STRLEN], got[JB_UUID_STRLEN], id[40];
  published(u, f, "remote");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 0, id, 0};
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bob), JB_OK);

  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "already claimed by bob");
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "alice", NULL),
                   JB_ENOTFOUND);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "bob");

  /* A local job posted after it is claimed by claim-next. */
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "alice", NULL), JB_OK);
  assert_string_equal(got, l);
  /* Bob lets go: claim-next now claims the published job through Redis. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, u,
                                      "bob", id), JB_OK);
  jb_job *job = NULL;
  assert_int_equal(jb_claim_next(got, &job, NULL, f->board, "alice", NULL), JB_OK);
  assert_string_equal(got, u);
  assert_string_equal(jb_job_owner(job), "alice");
  assert_true(jb_job_remote(job));
  jb_job_free(job);
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "alice");
  jbt_assert_check_ok(f->board);
}

/* Review fixes: a stale fencing token is refused before Redis is asked
 * (Redis knows owners by name only); a claim bound to this host's process
 * with no lease is refused (it would never lapse in Redis), and so is the
 * publication of a job held that way. */
static void test_tokens_and_bound_claims(void **state) {
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

  /* Bound without a lease and no replicator to keep it alive in Redis:
   * refused, nothing claimed anywhere. */
  published(u, f, "bound");
  jb_claim_options b = JB_CLAIM_OPTIONS_INIT;
  b.flags = JB_CLAIM_BIND_PROCESS;
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &b), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "no replicator runs on board");
  local_owner(owner, f->board, u);
  assert_string_equal(owner, "");
  char v[256];
  key_get(v, sizeof v, f, u, ".owned");
  assert_string_equal(v, "(nil)");
  b.lease_ms = 30000; /* with a lease it is fine */
  assert_int_equal(jb_claim(NULL, f->board, u, "w", &b), JB_OK);

  /* A local job held bound without a lease is not published. */
  char l[JB_UUID_STRLEN];
  jbt_post(l, f->board, "held here", JB_PRIORITY_NORMAL);
  b.lease_ms = 0;
  assert_int_equal(jb_claim(NULL, f->board, l, "w", &b), JB_OK);
  assert_int_equal(jb_sync_publish(f->board, f->conn, l), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "has no lease");
  jb_job *job;
  assert_int_equal(jb_job_get(&job, f->board, l), JB_OK);
  assert_false(jb_job_remote(job));
  jb_job_free(job);
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

/* A claim and a consume through the board API are one command
 * each to Redis (one EVALSHA, no PING or read before it), and the claim
 * script runs the six calls it must (claim.lua's header). */
static void test_claim_is_one_command(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], seen[1024];
  published(u, f, "one round trip");
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  commands_since(seen, sizeof seen, f);
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  commands_since(seen, sizeof seen, f);
  assert_string_equal(seen, "evalsha=1 hexists=1 hset=1 incr=1 publish=1 "
                            "set=2");
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

/* A unique key is reserved in Redis before the local
 * post, taken by the publication, freed by the consume; a publication
 * that finds it held by another live job sends the job to the dead
 * letters; a local post that fails gives its reservation back. */
static void test_unique_keys(void **state) {
  fixture *f = *state;
  static const char other[] = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  char u[JB_UUID_STRLEN], u2[JB_UUID_STRLEN], v[256];
  jb__remote_result res;
  size_t n;
  /* Bad input to the scripts' callers: refused before any I/O. */
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "", other, 1000),
                   JB_EINVAL);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", "nope", 1000),
                   JB_EINVAL);
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, -1),
                   JB_EINVAL);
  assert_int_equal(jb__remote_cancel(&res, &f->rm, "NOT-A-UUID", false),
                   JB_EINVAL);

  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  /* Held in Redis by another host's reservation: refused, its uuid out. */
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, 60000),
                   JB_OK);
  assert_int_equal(post_unique(u, f->board, "job", "K"), JB_EEXISTS);
  assert_string_equal(u, other);
  jbt_assert_contains(jb_errmsg(), "(in redis)");
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  /* Given back: free. */
  assert_int_equal(jb__remote_reserve(&res, &f->rm, "K", other, 0), JB_OK);
  assert_int_equal(post_unique(u, f->board, "job", "K"), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_memory_equal(v, u, 36);
  assert_int_equal(v[36], ' '); /* a reservation: "<uuid> <until-ms>" */
  assert_int_equal(jb_sync_publish(f->board, f->conn, u), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_string_equal(v, u); /* the listed job's */
  key_get(v, sizeof v, f, u, ".unique");
  assert_string_equal(v, "K");
  assert_int_equal(jb_claim(NULL, f->board, u, "alice", NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, u, "alice", 0, NULL), JB_OK);
  unique_get(v, sizeof v, f, "K");
  assert_string_equal(v, "(nil)");
  key_get(v, sizeof v, f, u, ".unique");
  assert_string_equal(v, "(nil)");

  /* A job cancelled before its publication gives its reservation back. */
  assert_int_equal(post_unique(u, f->board, "cancelled", "R"), JB_OK);
  unique_get(v, sizeof v, f, "R");
  assert_memory_equal(v, u, 36);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
  unique_get(v, sizeof v, f, "R");
  assert_string_equal(v, "(nil)");

  /* A local post refused by the board gives its reservation back. */
  jb_sync_detach(f->board);
  assert_int_equal(post_unique(u, f->board, "local", "L"), JB_OK);
  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(post_unique(u2, f->board, "again", "L"), JB_EEXISTS);
  assert_string_equal(u2, u);
  unique_get(v, sizeof v, f, "L");
  assert_string_equal(v, "(nil)");

  /* Posted while Redis could not be asked; another job holds the key
   * when it is published: not published, a dead letter naming both. */
  jb_sync_detach(f->board);
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

/* Cancel of a Redis-decided job goes through Redis. */
static void test_cancel_through_redis(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], u2[JB_UUID_STRLEN], l[JB_UUID_STRLEN];
  jb__remote_result res;
  /* Not attached: refused, nothing changes. */
  published(u, f, "cancelled");
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_EOFFLINE);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  assert_true(redis_state(f, u).listed);

  assert_int_equal(jb_sync_attach(f->board, f->conn), JB_OK);
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_OK);
  jb__remote_state st = redis_state(f, u);
  assert_false(st.listed);
  assert_false(st.trashed);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_CANCELLED);
  jb_completion_free(c);
  /* Again: Redis no longer lists it. */
  assert_int_equal(jb_job_cancel(f->board, u, 0), JB_ENOTFOUND);

  /* Claimed in Redis by another host: refused unless forced. */
  published(u2, f, "claimed");
  char id[JB_UUID_STRLEN];
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 0, id, 0};
  assert_int_equal(jb__remote_claim(&res, &f->rm, u2, &bob), JB_OK);
  assert_int_equal(jb_job_cancel(f->board, u2, 0), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "bob");
  assert_true(redis_state(f, u2).listed);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u2), JB_OK);
  jb_job_free(job);
  /* Flush leaves it too (claimed in Redis), and cancels a local job. */
  jbt_post(l, f->board, "local", JB_PRIORITY_NORMAL);
  size_t n = 0;
  assert_int_equal(jb_board_cancel_unclaimed(&n, f->board), JB_OK);
  assert_int_equal(n, 1);
  assert_true(redis_state(f, u2).listed);
  assert_int_equal(jb_job_cancel(f->board, u2, JB_CANCEL_FORCE), JB_OK);
  st = redis_state(f, u2);
  assert_false(st.listed);
  assert_false(st.owned);
  /* The holder's consume is refused. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u2,
                                      "bob", id),
                   JB_ENOTFOUND);

  /* A purge of the dead letters on an attached handle leaves Redis's jobs
   * alone (it once cancelled them all, as a flush does). */
  published(u, f, "purge");
  assert_int_equal(jb_dead_purge(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  assert_true(redis_state(f, u).listed);
  /* Trashed through Redis, its dead letter cannot be requeued under its
   * uuid: Redis's publication mark would drop it as the job completed. */
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

  /* Flush cancels an unclaimed Redis-decided job through Redis. */
  published(u, f, "flushed");
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
static void test_unique_post_killed_before_commit(void **state) {
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
  jb_sync_conn *c2 = jbt_redis_connect(f->redis.unix_url, 500);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_publish_claim_consume, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_not_attached, setup, teardown),
      cmocka_unit_test_setup_teardown(test_redis_stopped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_claimed_elsewhere, setup, teardown),
      cmocka_unit_test_setup_teardown(test_tokens_and_bound_claims, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_claim_is_one_command, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_unique_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unique_post_killed_before_commit,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_through_redis, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
