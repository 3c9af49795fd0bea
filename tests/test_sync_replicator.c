/*
 * test_sync_replicator.c - the replicator (sync/replicator.c) between a
 * real board and a real redis-server the test starts: publication in
 * order (a job claimed before publication goes with its owner, one
 * consumed before is never published), remote postings, claims and
 * removals pulled into the board (with our notices, and from writes that
 * send none, as taskflow's), a server lost and restarted empty (offline
 * posts published in order afterwards; jobs Redis lost published again),
 * the election (one replicator per board; a stand-by takes over), claims
 * bound to a process kept alive in Redis and abandoned when it dies, and a
 * malformed posting quarantined here and left in Redis.
 */
#include "remote.h"
#include "helpers.h"
#include "redis_helper.h"

#include "core/sync_hook.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  jbt_redis redis;
  char *dir;
  jb_board *board;
  jb_sync_conn *peer; /* another client: reads Redis, acts as a peer */
  jb__remote rm;      /* on peer, with notices */
  jb__remote quiet;   /* on peer, without (a taskflow-like writer) */
  jb_sync_replicator *rep;
} fixture;

/* The password of the server of setup_auth. */
#define OLD_PW "pw0ld-secret"

static int setup_with(void **state, const char *const *extra,
                      const char *password) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  jbt_redis_start(&f->redis, extra);
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  char url[200];
  if (password)
    snprintf(url, sizeof url, "unix://:%s@%s", password, f->redis.sock);
  else
    snprintf(url, sizeof url, "%s", f->redis.unix_url);
  f->peer = jbt_redis_connect(url, 2000);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, true), JB_OK);
  assert_int_equal(jb__remote_init(&f->quiet, f->peer, false), JB_OK);
  *state = f;
  return 0;
}

static int setup(void **state) { return setup_with(state, NULL, NULL); }

/* A server that wants a password (OLD_PW). */
static int setup_auth(void **state) {
  static const char *const extra[] = {"--requirepass", OLD_PW, NULL};
  return setup_with(state, extra, OLD_PW);
}

static int teardown(void **state) {
  fixture *f = *state;
  jb_sync_replicator_stop(f->rep);
  jb_board_close(f->board);
  jb_sync_close(f->peer);
  jbt_rmtree(f->dir);
  free(f->dir);
  jbt_redis_stop(&f->redis);
  free(f);
  return 0;
}

static jb_sync_replicator *start(fixture *f, const char *dir) {
  jb_sync_replicator_options o;
  o = (jb_sync_replicator_options)JB_SYNC_REPLICATOR_OPTIONS_INIT;
  o.conn.url = f->redis.unix_url;
  o.conn.command_timeout_ms = 500;
  o.conn.connect_timeout_ms = 500;
  o.poll_ms = 200;
  o.backoff_min_ms = 50;
  o.backoff_max_ms = 400;
  o.keepalive_ms = 900;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = JB_DURABILITY_NORMAL; /* as the test's own handle */
  jb_sync_replicator *r = NULL;
  if (jb_sync_replicator_start(&r, dir, &bo, &o) != JB_OK)
    fail_msg("start: %s", jb_errmsg());
  return r;
}

/* ------------------------------------------------------------- reading */

static jb__remote_state rstate(fixture *f, const char *u) {
  jb__remote_state st;
  if (jb__remote_read(&st, &f->rm, u)) fail_msg("read %s: %s", u, jb_errmsg());
  return st;
}

typedef bool (*cond_fn)(fixture *f, const char *u);

/* Wait (polling every 20 ms, up to 10 s) until cond holds. */
static bool eventually(cond_fn cond, fixture *f, const char *u) {
  for (int i = 0; i < 500; i++) {
    if (cond(f, u)) return true;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  return cond(f, u);
}

static bool listed(fixture *f, const char *u) { return rstate(f, u).listed; }

static bool published(fixture *f, const char *u) {
  jb_job *job = NULL;
  if (jb_job_get(&job, f->board, u) != JB_OK) return false;
  bool done = jb_job_remote(job) && !jb__job_publishing(job);
  jb_job_free(job);
  return done && rstate(f, u).listed;
}

static bool on_board(fixture *f, const char *u) {
  jb_state st;
  return jb_job_get_state(&st, f->board, u) == JB_OK && st != JB_STATE_COMPLETE;
}

static bool off_board(fixture *f, const char *u) { return !on_board(f, u); }

static bool owned_by_bob(fixture *f, const char *u) {
  char o[JB_WHO_MAX + 1] = "";
  return jb_job_find_owner(o, f->board, u) == JB_OK && !strcmp(o, "bob");
}

static bool unowned(fixture *f, const char *u) {
  char o[JB_WHO_MAX + 1] = "x";
  return jb_job_find_owner(o, f->board, u) == JB_OK && o[0] == '\0';
}

static bool owned_by_invalid(fixture *f, const char *u) {
  char o[JB_WHO_MAX + 1] = "";
  return jb_job_find_owner(o, f->board, u) == JB_OK &&
         !strcmp(o, "invalid-owner:fffe");
}

static bool redis_unowned(fixture *f, const char *u) {
  return !rstate(f, u).owned;
}

/* A posting as the core encodes it (from a scratch board). */
static void make_posting(char uuid[JB_UUID_STRLEN], void **bytes, size_t *len,
                         const char *name) {
  char *dir = jbt_mkdtemp();
  jb_board *b = jbt_open(dir, JB_DURABILITY_NONE, 0);
  jbt_post(uuid, b, name, JB_PRIORITY_HIGH);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, uuid), JB_OK);
  const void *p = jb_job_posting(job, len);
  *bytes = malloc(*len);
  memcpy(*bytes, p, *len);
  jb_job_free(job);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

static void redis_cmd(fixture *f, int argc, const char **argv,
                      const size_t *lens) {
  redisReply *r = NULL;
  if (jb__sync_command(&r, f->peer, argc, argv, lens))
    fail_msg("%s: %s", argv[0], jb_errmsg());
  freeReplyObject(r);
}

static void key(char *out, size_t size, fixture *f, const char *piece) {
  assert_true(jb_sync_key(out, size, f->peer, piece) > 0);
}

/* Posts a local job u, starts the replicator and waits until u is
 * published. */
static void published_by_the_replicator(fixture *f, char u[JB_UUID_STRLEN],
                                        const char *name) {
  jbt_post(u, f->board, name, JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, u));
}

/* --------------------------------------------------------------- tests */

/* Five local jobs u[0..4] as the replicator finds them at its start:
 * u[1] claimed by "alice" for 60 s, u[3] consumed; the others published
 * once it returns. */
static void five_jobs_published(fixture *f, char u[5][JB_UUID_STRLEN]) {
  for (int i = 0; i < 5; i++) jbt_post(u[i], f->board, "local", JB_PRIORITY_NORMAL);
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 60000;
  assert_int_equal(jb_claim(NULL, f->board, u[1], "alice", &lease), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u[3], "carol", NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, u[3], "carol", 0, NULL), JB_OK);
  f->rep = start(f, f->dir);
  for (int i = 0; i < 5; i++)
    if (i != 3) assert_true(eventually(published, f, u[i]));
}

/* The Redis sequence of the last of five_jobs_published's jobs. */
static uint64_t last_published(fixture *f, char u[5][JB_UUID_STRLEN]) {
  return rstate(f, u[4]).posted_sequence;
}

static void local_jobs_go_out_in_board_order(void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  five_jobs_published(f, u);
  uint64_t last = 0;
  for (int i = 0; i < 5; i++) {
    if (i == 3) continue;
    jb__remote_state st = rstate(f, u[i]);
    assert_true(st.posted_sequence > last);
    last = st.posted_sequence;
  }
}

static void a_job_claimed_before_publication_goes_out_with_owner_and_expiry(
    void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  five_jobs_published(f, u);
  jb__remote_state st = rstate(f, u[1]);
  assert_true(st.owned);
  assert_string_equal(st.owner, "alice");
  assert_true(st.pttl_ms > 50000 && st.pttl_ms <= 60000);
}

static void a_job_consumed_before_publication_never_reaches_redis(
    void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  five_jobs_published(f, u);
  jb__remote_state st = rstate(f, u[3]);
  assert_false(st.listed);
  assert_false(st.posted);
}

/* After the others, whatever its priority. */
static void a_job_posted_while_the_replicator_runs_goes_out_last(
    void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  five_jobs_published(f, u);
  uint64_t last = last_published(f, u);
  char late[JB_UUID_STRLEN];
  jbt_post(late, f->board, "late", JB_PRIORITY_VERY_HIGH);
  assert_true(eventually(published, f, late));
  assert_true(rstate(f, late).posted_sequence > last);
}

static void the_status_shows_the_replicator_running_with_all_published(
    void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  five_jobs_published(f, u);
  jb_sync_status s;
  assert_int_equal(jb_sync_status_read(&s, f->board), JB_OK);
  assert_true(s.running);
  assert_int_equal(s.pid, getpid());
  assert_true(s.connected);
  assert_int_equal(s.unpublished, 0);
  jbt_assert_check_ok(f->board);
}


/* Postings, claims and removals made elsewhere reach the board: with our
 * notices, and from writes that send none (found by the poll). */

/* Starts the replicator, posts job u in Redis with a notice, and waits
 * until it is on the board. */
static void posted_elsewhere(fixture *f, char u[JB_UUID_STRLEN]) {
  f->rep = start(f, f->dir);
  void *posting;
  size_t len;
  make_posting(u, &posting, &len, "from afar");
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, posting, len, NULL), JB_OK);
  free(posting);
  assert_true(eventually(on_board, f, u));
}

/* A waiter on the board wakes for it. */
static void a_posting_made_elsewhere_reaches_the_board(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  f->rep = start(f, f->dir);
  void *posting;
  size_t len;
  make_posting(u, &posting, &len, "from afar");
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, posting, len, NULL), JB_OK);
  free(posting);
  assert_int_equal(jb_board_wait(f->board, 0, 10000), JB_OK);
  assert_true(eventually(on_board, f, u));
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  assert_true(jb_job_remote(job));
  assert_string_equal(jb_job_name(job), "from afar");
  jb_job_free(job);
}

/* Posts job u elsewhere and claims it there as "bob" (with a notice); its
 * claim id goes to id. */
static void claimed_elsewhere(fixture *f, char u[JB_UUID_STRLEN],
                              char id[JB_UUID_STRLEN]) {
  posted_elsewhere(f, u);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 60000, id, 0};
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bob), JB_OK);
  assert_true(eventually(owned_by_bob, f, u));
}

/* Claimed in Redis by bob: the board shows bob; abandoned and claimed
 * again without a notice (as taskflow would): found by the poll. */
static void the_owner_given_elsewhere_reaches_the_board_notice_or_not(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  claimed_elsewhere(f, u, id);
  char k[256], piece[64];
  snprintf(piece, sizeof piece, "%s.owned", u);
  key(k, sizeof k, f, piece);
  const char *del[2] = {"DEL", k};
  redis_cmd(f, 2, del, NULL);
  assert_true(eventually(unowned, f, u));
  const char *set[3] = {"SET", k, "bob"};
  redis_cmd(f, 3, set, NULL);
  assert_true(eventually(owned_by_bob, f, u));
}

/* Gone here, with a history record. */
static void a_consume_made_elsewhere_takes_the_job_off_the_board(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  claimed_elsewhere(f, u, id);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "bob", NULL), JB_OK);
  assert_true(eventually(off_board, f, u));
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

/* Starts the replicator and writes a posting t as taskflow writes one
 * (INCR + HSETNX, no notice); its bytes go to *posting. */
static void posted_as_taskflow(fixture *f, char t[JB_UUID_STRLEN],
                               void **posting, size_t *len) {
  f->rep = start(f, f->dir);
  make_posting(t, posting, len, "taskflow's");
  char lk[256], sk[256];
  key(lk, sizeof lk, f, "listings");
  key(sk, sizeof sk, f, "sequence");
  const char *incr[2] = {"INCR", sk};
  redis_cmd(f, 2, incr, NULL);
  const char *hset[4] = {"HSETNX", lk, t, *posting};
  size_t hl[4] = {6, strlen(lk), strlen(t), *len};
  redis_cmd(f, 4, hset, hl);
}

static void a_posting_written_as_taskflow_does_is_found_by_the_poll(
    void **state) {
  fixture *f = *state;
  char t[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  posted_as_taskflow(f, t, &posting, &len);
  free(posting);
  assert_true(eventually(on_board, f, t));
}

static void a_job_trashed_as_taskflow_does_leaves_as_trashed(void **state) {
  fixture *f = *state;
  char t[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  posted_as_taskflow(f, t, &posting, &len);
  assert_true(eventually(on_board, f, t));
  char lk[256], tk[256];
  key(lk, sizeof lk, f, "listings");
  key(tk, sizeof tk, f, "trash");
  const char *tr[4] = {"HSET", tk, t, posting};
  size_t tl[4] = {4, strlen(tk), strlen(t), len};
  redis_cmd(f, 4, tr, tl);
  const char *hdel[3] = {"HDEL", lk, t};
  redis_cmd(f, 3, hdel, NULL);
  free(posting);
  assert_true(eventually(off_board, f, t));
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, t), JB_OK);
  assert_int_equal(c->end, JB_END_TRASHED);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}


/* Redis killed: Redis-decided jobs refuse claims (JB_EOFFLINE), local
 * posts wait; restarted empty: the jobs Redis lost are published again
 * and the posts made meanwhile go out after them, in order. */

/* Publishes job a, attaches the board through *c, kills Redis and posts
 * three jobs off[0..2]. */
static void redis_lost(fixture *f, char a[JB_UUID_STRLEN],
                       char off[3][JB_UUID_STRLEN], jb_sync_conn **c) {
  published_by_the_replicator(f, a, "before");
  *c = jbt_redis_connect(f->redis.unix_url, 300);
  assert_int_equal(jb_sync_attach(f->board, *c), JB_OK);
  jbt_redis_kill(&f->redis);
  for (int i = 0; i < 3; i++) jbt_post(off[i], f->board, "offline", JB_PRIORITY_LOW);
}

static void a_published_job_cannot_be_claimed_while_redis_is_down(
    void **state) {
  fixture *f = *state;
  char a[JB_UUID_STRLEN], off[3][JB_UUID_STRLEN];
  jb_sync_conn *c;
  redis_lost(f, a, off, &c);
  assert_int_equal(jb_claim(NULL, f->board, a, "w", NULL), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "backend unavailable");
  jb_sync_detach(f->board);
  jb_sync_close(c);
}

/* Claimable locally. */
static void posts_made_while_redis_is_down_are_decided_here(void **state) {
  fixture *f = *state;
  char a[JB_UUID_STRLEN], off[3][JB_UUID_STRLEN];
  jb_sync_conn *c;
  redis_lost(f, a, off, &c);
  jb_sync_detach(f->board);
  jb_sync_close(c);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, off[0]), JB_OK);
  assert_false(jb_job_remote(job));
  jb_job_free(job);
}

/* redis_lost, then Redis restarted empty (and the peer with it). */
static void redis_back_empty(fixture *f, char a[JB_UUID_STRLEN],
                             char off[3][JB_UUID_STRLEN]) {
  jb_sync_conn *c;
  redis_lost(f, a, off, &c);
  jb_sync_detach(f->board);
  jb_sync_close(c);
  jbt_redis_restart(&f->redis);
  jb_sync_close(f->peer);
  f->peer = jbt_redis_connect(f->redis.unix_url, 2000);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, true), JB_OK);
}

static void jobs_redis_lost_go_out_again_before_the_posts_made_meanwhile(
    void **state) {
  fixture *f = *state;
  char a[JB_UUID_STRLEN], off[3][JB_UUID_STRLEN];
  redis_back_empty(f, a, off);
  assert_true(eventually(listed, f, a));
  uint64_t last = rstate(f, a).posted_sequence;
  for (int i = 0; i < 3; i++) {
    assert_true(eventually(published, f, off[i]));
    uint64_t n = rstate(f, off[i]).posted_sequence;
    assert_true(n > last);
    last = n;
  }
  jbt_assert_check_ok(f->board);
}

static void the_status_notes_an_outage(void **state) {
  fixture *f = *state;
  char a[JB_UUID_STRLEN], off[3][JB_UUID_STRLEN];
  jb_sync_status s;
  redis_back_empty(f, a, off);
  assert_int_equal(jb_sync_status_read(&s, f->board), JB_OK);
  assert_true(eventually(published, f, off[2]));
  assert_int_equal(jb_sync_status_read(&s, f->board), JB_OK);
  assert_true(s.last_error[0] != '\0');
}

static bool running_elsewhere(fixture *f, const char *u) {
  (void)u;
  jb_sync_status s;
  return jb_sync_status_read(&s, f->board) == JB_OK && s.running;
}

/* Two replicators on one board: one is elected; when it stops the other
 * takes over and publishes. */

/* Starts two replicators on the board and publishes a job; the elected
 * one goes to *elected, the other to *standby. */
static void two_replicators(fixture *f, jb_sync_replicator **elected,
                            jb_sync_replicator **standby) {
  f->rep = start(f, f->dir);
  jb_sync_replicator *second = start(f, f->dir);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "one", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, u));
  jb_sync_status a, b;
  assert_int_equal(jb_sync_replicator_status_read(&a, f->rep), JB_OK);
  assert_int_equal(jb_sync_replicator_status_read(&b, second), JB_OK);
  assert_true(a.running != b.running); /* exactly one elected */
  *elected = a.running ? f->rep : second;
  *standby = a.running ? second : f->rep;
}

/* two_replicators checks that exactly one runs. */
static void one_of_two_replicators_on_a_board_is_elected(void **state) {
  fixture *f = *state;
  jb_sync_replicator *elected, *standby;
  two_replicators(f, &elected, &standby);
  jb_sync_replicator_stop(standby);
  f->rep = elected;
}

static void a_standby_replicator_takes_over_when_the_elected_stops(
    void **state) {
  fixture *f = *state;
  jb_sync_replicator *elected, *standby;
  two_replicators(f, &elected, &standby);
  jb_sync_replicator_stop(elected);
  f->rep = standby;
  char v[JB_UUID_STRLEN];
  jbt_post(v, f->board, "two", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, v));
  assert_true(eventually(running_elsewhere, f, NULL));
  jb_sync_status b;
  assert_int_equal(jb_sync_replicator_status_read(&b, f->rep), JB_OK);
  assert_true(b.running);
}

/* A child that claims `u` bound to itself (no lease) through an attached
 * handle, reports, and then sleeps until killed. */
typedef struct {
  const char *dir, *url, *uuid;
  int ready; /* the write end of jbt_fork_ready's pipe */
} holder_arg;

static int hold(void *p) {
  holder_arg *h = p;
  jb_board *b = NULL;
  jb_sync_conn *c = NULL;
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = h->url;
  if (jb_board_open(&b, h->dir, NULL) || jb_sync_connect(&c, &o) ||
      jb_sync_attach(b, c))
    return 2;
  jb_claim_options bind = JB_CLAIM_OPTIONS_INIT;
  bind.flags = JB_CLAIM_BIND_PROCESS;
  if (jb_claim(NULL, b, h->uuid, "holder", &bind) != JB_OK) {
    fprintf(stderr, "holder: %s\n", jb_errmsg());
    return 3;
  }
  char one = 1;
  if (write(h->ready, &one, 1) != 1) return 4;
  for (;;) pause(); /* until killed */
}

static bool redis_owner_holder(fixture *f, const char *u) {
  jb__remote_state st = rstate(f, u);
  return st.owned && !strcmp(st.owner, "holder");
}

/* A claim bound to a process of this host lasts in Redis as long as the
 * process: one life cycle, kept alive past its first expiry while the
 * process lives, abandoned when it dies. The claim goes out with the
 * default keep-alive expiry (30 s); the replicator renews it with its own
 * (0.9 s) every 0.3 s. */
static void a_bound_claim_lasts_in_redis_as_long_as_its_process(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published_by_the_replicator(f, u, "held");
  holder_arg h = {f->dir, f->redis.unix_url, u, -1};
  pid_t pid = jbt_fork_ready(hold, &h, &h.ready, 60, "the holder claimed");
  assert_true(redis_owner_holder(f, u));
  struct timespec ts = {2, 0};
  nanosleep(&ts, NULL);
  jb__remote_state st = rstate(f, u);
  assert_true(st.owned);
  assert_true(st.pttl_ms > 0 && st.pttl_ms <= 900);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  assert_true(eventually(redis_unowned, f, u));
  assert_true(eventually(unowned, f, u));
}

static bool quarantined(fixture *f, const char *u) {
  (void)u;
  jb_check_stats st;
  memset(&st, 0, sizeof st);
  jb_board_check(&st, f->board, NULL, NULL);
  return st.quarantined > 0;
}

/* A malformed posting placed in Redis by hand: quarantined here, reported
 * by check, left in Redis; the good ones around it still come in. */
static void a_malformed_posting_is_quarantined_here_and_left_in_redis(
    void **state) {
  fixture *f = *state;
  f->rep = start(f, f->dir);
  const char *bad = "11111111-2222-4333-8444-555555555555";
  char lk[256];
  key(lk, sizeof lk, f, "listings");
  const char *hset[4] = {"HSET", lk, bad, "\x93\x01\x02\x03"};
  size_t hl[4] = {4, strlen(lk), 36, 4};
  redis_cmd(f, 4, hset, hl);
  char u[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  make_posting(u, &posting, &len, "fine");
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, posting, len, NULL), JB_OK);
  free(posting);
  assert_true(eventually(on_board, f, u));
  assert_true(eventually(quarantined, f, bad));
  assert_false(on_board(f, bad));
  assert_true(listed(f, bad)); /* never deleted from Redis by us */
}

/* An owner key that is not UTF-8 (taskflow does not check) set on a job
 * u posted elsewhere. */
static void owner_not_utf8(fixture *f, char u[JB_UUID_STRLEN]) {
  posted_elsewhere(f, u);
  char k[256], piece[64];
  snprintf(piece, sizeof piece, "%s.owned", u);
  key(k, sizeof k, f, piece);
  const char *set[3] = {"SET", k, "\xff\xfe"};
  size_t sl[3] = {3, strlen(k), 2};
  redis_cmd(f, 3, set, sl);
}

static void an_owner_that_is_not_utf8_shows_as_an_invalid_owner(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  owner_not_utf8(f, u);
  assert_true(eventually(owned_by_invalid, f, u));
}

/* A local post is still published. */
static void an_owner_that_is_not_utf8_stops_nothing(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  owner_not_utf8(f, u);
  char mine[JB_UUID_STRLEN];
  jbt_post(mine, f->board, "still published", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, mine));
}

/* A job published from here, consumed by a peer that leaves no trace (as
 * taskflow: no notice) after its publication marker expired, leaves the
 * board: it is not taken for lost and published again. */
static void a_job_consumed_without_a_trace_is_not_published_again(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published_by_the_replicator(f, u, "old");
  char mk[256], lk[256], piece[64];
  snprintf(piece, sizeof piece, "%s.posted", u);
  key(mk, sizeof mk, f, piece);
  key(lk, sizeof lk, f, "listings");
  const char *del[2] = {"DEL", mk};
  redis_cmd(f, 2, del, NULL); /* the 30 days are over */
  const char *hdel[3] = {"HDEL", lk, u};
  redis_cmd(f, 3, hdel, NULL); /* consumed by taskflow */
  assert_true(eventually(off_board, f, u));
  struct timespec ts = {1, 0}; /* a few polls: never listed again */
  nanosleep(&ts, NULL);
  assert_false(listed(f, u));
  assert_false(on_board(f, u));
}

typedef struct {
  fixture *f;
  const char *uuid;
  int rc;
} late_post;

/* After 100 ms, post the marked job and confirm it (what the replicator's
 * publication does, slowed down). */
static void *post_late(void *p) {
  late_post *lp = p;
  struct timespec ts = {0, 100 * 1000000};
  nanosleep(&ts, NULL);
  jb__remote_result res;
  char id[JB_UUID_STRLEN] = "";
  lp->rc = jb__sync_post_marked(&res, &lp->f->quiet, lp->f->board, lp->uuid,
                                0, id);
  if (lp->rc == JB_OK)
    lp->rc = jb__board_set_published(lp->f->board, &lp->uuid, 1, JB_PUB_DONE,
                                     &res.sequence, NULL);
  return NULL;
}

/* A claim that reaches Redis between the job's mark and its post waits
 * for the post instead of failing with "not on the board". */
static void a_claim_between_mark_and_post_waits_for_the_post(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "being published", JB_PRIORITY_NORMAL);
  const char *up = u;
  assert_int_equal(jb__board_set_published(f->board, &up, 1, JB_PUB_PENDING,
                                           NULL, NULL), JB_OK);
  jb_sync_conn *c = jbt_redis_connect(f->redis.unix_url, 2000);
  jb_board *b = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(jb_sync_attach(b, c), JB_OK);
  late_post lp = {f, u, -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, post_late, &lp), 0);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  pthread_join(t, NULL);
  assert_int_equal(lp.rc, JB_OK);
  jb__remote_state st = rstate(f, u);
  assert_true(st.owned);
  assert_string_equal(st.owner, "w");
  jb_board_close(b);
  jb_sync_close(c);
}

/* A hook whose Redis always agrees, and whose consume lets the mirror
 * take the job off the board first (what the replicator does when it reads
 * the consume in Redis before the caller's local step). */
static int ok_claim(void *c, jb_board *b, const char *u, const char *w,
                    int64_t l, uint64_t *fence) {
  (void)c, (void)b, (void)u, (void)w, (void)l;
  *fence = 0;
  return JB_OK;
}
static int ok_release(void *c, const char *u, const char *w) {
  (void)c, (void)u, (void)w;
  return JB_OK;
}
static int ok_finish(void *c, const char *u, const char *w,
                     const jb_remote_outcome *o) {
  (void)c, (void)u, (void)w, (void)o;
  return JB_OK;
}
/* The mirror (handle c) takes job u off the board, as consumed or, with
 * `trash`, as trashed in Redis (no outcome record read). */
static int mirror_gone_first(void *c, const char *u, bool trash) {
  size_t removed = 0;
  int rc = jb__board_mirror_gone(c, &u, &trash, NULL, NULL, 1, &removed);
  return rc == JB_OK && removed == 1 ? JB_OK : JB_EIO;
}
static int mirror_first(void *c, const char *u, const char *w,
                        const jb_remote_outcome *o) {
  (void)w, (void)o;
  return mirror_gone_first(c, u, false);
}
static int ok_extend(void *c, const char *u, const char *w, int64_t l) {
  (void)c, (void)u, (void)w, (void)l;
  return JB_OK;
}
static const jb_remote_ops mirror_wins = {ok_claim, ok_release, mirror_first,
                                          ok_finish, ok_extend, NULL, NULL, NULL, NULL, NULL, NULL};

/* Posts job u marked as decided by Redis, sets `ops` as the board's hook
 * (its handle another one on the board, which this returns) and claims u
 * as "w"; the claim's token goes to *token. */
static jb_board *claimed_through(fixture *f, char u[JB_UUID_STRLEN],
                                 const char *name, const jb_remote_ops *ops,
                                 uint64_t *token) {
  jbt_post(u, f->board, name, JB_PRIORITY_NORMAL);
  assert_int_equal(jb__board_mark_remote(f->board, u), JB_OK);
  jb_board *other = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb__board_set_remote(f->board, ops, other);
  *token = 0;
  assert_int_equal(jb_claim(token, f->board, u, "w", NULL), JB_OK);
  return other;
}

/* Job u's history record: ended `end` by "w", with this result. */
static void completed_with(jb_board *b, const char *u, jb_end end,
                           const uint8_t *result, size_t len) {
  jb_completion *cp = NULL;
  assert_int_equal(jb_job_completion(&cp, b, u), JB_OK);
  assert_int_equal(cp->end, end);
  assert_string_equal(cp->owner, "w");
  assert_int_equal(cp->result_len, len);
  assert_memory_equal(cp->result, result, len);
  jb_completion_free(cp);
}

/* A consume with a result through Redis whose job the mirror took off the
 * board in between: the call succeeds and the history record carries the
 * caller's ending and result, not the mirror's plain "consumed". */
static void the_result_of_a_consume_is_kept_when_the_mirror_wins(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t token;
  jb_board *other =
      claimed_through(f, u, "with a result", &mirror_wins, &token);
  static const uint8_t result[] = {0x81, 0xa3, 'e', 'r', 'r', 0xa4, 'd', 'i',
                                   's', 'k'}; /* {"err": "disk"} */
  assert_int_equal(jb_consume(f->board, u, "w", token,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, result, sizeof result}), JB_OK);
  completed_with(f->board, u, JB_END_FAILED, result, sizeof result);
  jb__board_set_remote(f->board, NULL, NULL);
  jb_board_close(other);
  jbt_assert_check_ok(f->board);
}

/* A trash whose job the mirror takes off the board first, as trashed in
 * Redis (NS:trash) with no outcome record read yet. */
static int mirror_trash_first(void *c, const char *u, const char *w,
                              const jb_remote_outcome *o) {
  (void)w, (void)o;
  return mirror_gone_first(c, u, true);
}

/* The same for a job sent to the dead letters through Redis (a trash
 * with its cause and reason). Returns the job's uuid in u. */
static void dead_through_redis_mirror_first(fixture *f,
                                            char u[JB_UUID_STRLEN]) {
  static const jb_remote_ops trash_mirrored = {
      ok_claim, ok_release, ok_finish, mirror_trash_first, ok_extend,
      NULL,     NULL,       NULL,      NULL,               NULL, NULL};
  uint64_t token;
  jb_board *other =
      claimed_through(f, u, "poisoned", &trash_mirrored, &token);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  ro.token = token;
  ro.reason = "poison";
  jb_retry_result rr;
  assert_int_equal(jb_retry(&rr, f->board, u, "w", &ro), JB_OK);
  assert_true(rr.dead);
  jb__board_set_remote(f->board, NULL, NULL);
  jb_board_close(other);
}

/* The history record says dead with the caller's reason (the mirror's
 * plain record had none). */
static void the_reason_of_a_dead_letter_is_kept_when_the_mirror_wins(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  dead_through_redis_mirror_first(f, u);
  jb_completion *cp = NULL;
  assert_int_equal(jb_job_completion(&cp, f->board, u), JB_OK);
  assert_int_equal(cp->end, JB_END_DEAD);
  assert_non_null(cp->reason);
  assert_string_equal(cp->reason, "poison");
  jb_completion_free(cp);
  jbt_assert_check_ok(f->board);
}

static void the_dead_letter_the_mirror_made_stays_when_it_wins(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  dead_through_redis_mirror_first(f, u);
  jb_dead_letter *dl = NULL;
  assert_int_equal(jb_dead_get(&dl, f->board, u), JB_OK);
  jb_dead_free(dl);
  jbt_assert_check_ok(f->board);
}

/* A consume through Redis whose reply is lost (the server stopped past the
 * command timeout); the server runs it when it continues, and the
 * replicator takes the job off the board. The caller's retry is told the
 * consume happened (it was "not on the board", and `work` reported a
 * completion refused), and the history record gets its ending and result.
 * A retry by a handle that sent no such consume is still refused. */
static void a_lost_consume_reply_is_settled_for_its_caller_alone(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published_by_the_replicator(f, u, "lost reply");
  jb_sync_conn *c = jbt_redis_connect(f->redis.unix_url, 300);
  assert_int_equal(jb_sync_attach(f->board, c), JB_OK);
  uint64_t token = 0;
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.lease_ms = 60000;
  assert_int_equal(jb_claim(&token, f->board, u, "w", &co), JB_OK);
  static const uint8_t result[] = {0x81, 0xa2, 'o', 'k', 0xc3}; /* {ok: true} */

  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb_consume(f->board, u, "w", token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, result, sizeof result});
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  jbt_assert_contains(msg, "may have run");
  /* The late script ran; the replicator mirrors the removal. */
  assert_true(eventually(off_board, f, u));
  assert_false(rstate(f, u).listed);

  /* Another handle never sent it: not on the board. */
  jb_board *other = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb_sync_conn *c2 = jbt_redis_connect(f->redis.unix_url, 2000);
  assert_int_equal(jb_sync_attach(other, c2), JB_OK);
  assert_int_equal(jb_consume(other, u, "w", 0, NULL), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "not on the board");
  jb_sync_detach(other);
  jb_sync_close(c2);
  jb_board_close(other);

  /* The caller's retry: done, with its result. */
  assert_int_equal(jb_consume(f->board, u, "w", token,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, result, sizeof result}), JB_OK);
  completed_with(f->board, u, JB_END_CONSUMED, result, sizeof result);
  /* Settled once: a third try is refused as any other. */
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_ENOTFOUND);
  jb_sync_detach(f->board);
  jb_sync_close(c);
  jbt_assert_check_ok(f->board);
}

/* A consume --failed (with a result) and a cancel through Redis whose
 * process died after Redis's step and before its local commit: what it
 * left is Redis's step alone (run here through the scripts, as that
 * process did). The replicator records each from the outcome record the
 * script kept, never as a plain "consumed". */

/* By the notice. */
static void a_failed_consume_of_a_dead_process_is_recorded_as_failed(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  published_by_the_replicator(f, u, "fails");
  char id[JB_UUID_STRLEN];
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 60000, id, 0};
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bob), JB_OK);
  assert_true(eventually(owned_by_bob, f, u));
  static const uint8_t result[] = {0x81, 0xa3, 'e', 'r', 'r', 0xa1, 'x'};
  jb_remote_outcome failed = {.end = JB_END_FAILED, .result = result,
                              .result_len = sizeof result, .owner = "bob"};
  assert_int_equal(jb__remote_release_x(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                        "bob", id, &failed), JB_OK);
  assert_true(eventually(off_board, f, u));
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_true(c->has_result);
  assert_int_equal(c->result_len, sizeof result);
  assert_memory_equal(c->result, result, sizeof result);
  assert_string_equal(c->owner, "bob");
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

/* By the comparison at the replicator's start: it was not running when
 * the cancel ran. */
static void a_cancel_of_a_dead_process_is_recorded_as_cancelled(
    void **state) {
  fixture *f = *state;
  char v[JB_UUID_STRLEN];
  published_by_the_replicator(f, v, "cancelled");
  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;
  jb__remote_result res;
  assert_int_equal(jb__remote_cancel(&res, &f->rm, v, false), JB_OK);
  assert_true(on_board(f, v)); /* nobody recorded it yet */
  f->rep = start(f, f->dir);
  assert_true(eventually(off_board, f, v));
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, v), JB_OK);
  assert_int_equal(c->end, JB_END_CANCELLED);
  assert_false(c->has_result);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

/* Whether `secret` is anywhere in the file `dir`/data.mdb (every byte:
 * live pages and free ones). */
static bool in_data_file(const char *dir, const char *secret) {
  char *p = jbt_path(dir, "data.mdb");
  FILE *fp = fopen(p, "rb");
  free(p);
  assert_non_null(fp);
  size_t n = 0, cap = 1 << 20, got;
  char *buf = malloc(cap);
  assert_non_null(buf);
  while ((got = fread(buf + n, 1, cap - n, fp)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      assert_non_null(buf = realloc(buf, cap));
    }
  }
  fclose(fp);
  bool found = memmem(buf, n, secret, strlen(secret)) != NULL;
  free(buf);
  return found;
}

/* A board synced by a release that kept the URL, password included, in
 * its data file still syncs (the replicator started with no URL connects
 * with it), and the start moves the password to sync.credentials (0600)
 * and rewrites the setting without it. The old bytes may stay in a free
 * page of data.mdb until LMDB reuses it; a compacting copy (mdb_copy -c,
 * the remedy the man page gives) has none of them. */

/* Starts a replicator on the board with the URL the board keeps. */
static void start_with_the_boards_url(fixture *f) {
  jb_sync_replicator_options o;
  o = (jb_sync_replicator_options)JB_SYNC_REPLICATOR_OPTIONS_INIT;
  o.conn.url = NULL; /* the board's own */
  o.poll_ms = 200;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = JB_DURABILITY_NORMAL;
  if (jb_sync_replicator_start(&f->rep, f->dir, &bo, &o) != JB_OK)
    fail_msg("start: %s", jb_errmsg());
}

/* The board as an older release left it, with a job u posted before the
 * upgrade; a replicator started on it has published u. */
static void old_board_started(fixture *f, char u[JB_UUID_STRLEN]) {
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char old[200];
  snprintf(old, sizeof old, "unix://:%s@%s", OLD_PW, f->redis.sock);
  assert_int_equal(jb__board_setting_set(f->board, "sync.url", old), JB_OK);
  assert_int_equal(jb__board_setting_set(f->board, "sync.namespace",
                                         JB_SYNC_NAMESPACE_DEFAULT), JB_OK);
  jbt_post(u, f->board, "posted before the upgrade", JB_PRIORITY_NORMAL);
  start_with_the_boards_url(f);
  assert_true(eventually(published, f, u));
}

/* Its status does not show the password. */
static void an_old_board_with_its_password_in_the_url_still_syncs(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  old_board_started(f, u);
  jb_sync_status st;
  assert_int_equal(jb_sync_replicator_status_read(&st, f->rep), JB_OK);
  assert_true(st.connected);
  assert_null(strstr(st.url, OLD_PW));
}

static void the_start_moves_an_old_boards_password_to_the_file(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], bare[200], got[300];
  old_board_started(f, u);
  snprintf(bare, sizeof bare, "unix://%s", f->redis.sock);
  assert_int_equal(jb__board_setting_get(f->board, "sync.url", got,
                                         sizeof got, NULL), JB_OK);
  assert_string_equal(got, bare);
  char *cp = jbt_path(f->dir, "sync.credentials");
  struct stat sb;
  assert_int_equal(stat(cp, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  FILE *fp = fopen(cp, "r");
  free(cp);
  assert_non_null(fp);
  assert_non_null(fgets(got, sizeof got, fp));
  fclose(fp);
  assert_string_equal(got, OLD_PW "\n");
}

/* Started again, the replicator connects with the file's password. */
static void a_migrated_board_syncs_with_the_files_password(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  old_board_started(f, u);
  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;
  start_with_the_boards_url(f);
  char u2[JB_UUID_STRLEN];
  jbt_post(u2, f->board, "posted after", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, u2));
}

/* What LMDB may have kept, and the remedy. */
static void a_compacting_copy_of_a_migrated_board_has_no_old_password(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  old_board_started(f, u);
  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;
  printf("# the old password %s in a free page of data.mdb after the "
         "migration\n", in_data_file(f->dir, OLD_PW) ? "is still" : "is not");
  if (system("command -v mdb_copy >/dev/null 2>&1") == 0) {
    char *copy = jbt_mkdtemp(), cmd[600];
    snprintf(cmd, sizeof cmd, "mdb_copy -c '%s' '%s'", f->dir, copy);
    assert_int_equal(system(cmd), 0);
    assert_false(in_data_file(copy, OLD_PW));
    jbt_rmtree(copy);
    free(copy);
  } else {
    printf("# mdb_copy not installed (lmdb-utils): compaction not tried\n");
  }
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(local_jobs_go_out_in_board_order),
      T(a_job_claimed_before_publication_goes_out_with_owner_and_expiry),
      T(a_job_consumed_before_publication_never_reaches_redis),
      T(a_job_posted_while_the_replicator_runs_goes_out_last),
      T(the_status_shows_the_replicator_running_with_all_published),
      T(a_posting_made_elsewhere_reaches_the_board),
      T(the_owner_given_elsewhere_reaches_the_board_notice_or_not),
      T(a_consume_made_elsewhere_takes_the_job_off_the_board),
      T(a_posting_written_as_taskflow_does_is_found_by_the_poll),
      T(a_job_trashed_as_taskflow_does_leaves_as_trashed),
      T(a_published_job_cannot_be_claimed_while_redis_is_down),
      T(posts_made_while_redis_is_down_are_decided_here),
      T(jobs_redis_lost_go_out_again_before_the_posts_made_meanwhile),
      T(the_status_notes_an_outage),
      T(one_of_two_replicators_on_a_board_is_elected),
      T(a_standby_replicator_takes_over_when_the_elected_stops),
      T(a_bound_claim_lasts_in_redis_as_long_as_its_process),
      T(a_malformed_posting_is_quarantined_here_and_left_in_redis),
      T(an_owner_that_is_not_utf8_shows_as_an_invalid_owner),
      T(an_owner_that_is_not_utf8_stops_nothing),
      T(the_reason_of_a_dead_letter_is_kept_when_the_mirror_wins),
      T(the_dead_letter_the_mirror_made_stays_when_it_wins),
      T(a_claim_between_mark_and_post_waits_for_the_post),
      T(a_job_consumed_without_a_trace_is_not_published_again),
      T(the_result_of_a_consume_is_kept_when_the_mirror_wins),
      T(a_failed_consume_of_a_dead_process_is_recorded_as_failed),
      T(a_cancel_of_a_dead_process_is_recorded_as_cancelled),
      T(a_lost_consume_reply_is_settled_for_its_caller_alone),
      cmocka_unit_test_setup_teardown(
          an_old_board_with_its_password_in_the_url_still_syncs, setup_auth,
          teardown),
      cmocka_unit_test_setup_teardown(
          the_start_moves_an_old_boards_password_to_the_file, setup_auth,
          teardown),
      cmocka_unit_test_setup_teardown(
          a_migrated_board_syncs_with_the_files_password, setup_auth,
          teardown),
      cmocka_unit_test_setup_teardown(
          a_compacting_copy_of_a_migrated_board_has_no_old_password,
          setup_auth, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
