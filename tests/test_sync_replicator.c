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

/* --------------------------------------------------------------- tests */

/* Local jobs go out in board order, a claimed one with its owner and
 * expiry; one consumed before publication never reaches Redis. */
static void test_publish_in_order(void **state) {
  fixture *f = *state;
  char u[5][JB_UUID_STRLEN];
  for (int i = 0; i < 5; i++) jbt_post(u[i], f->board, "local", JB_PRIORITY_NORMAL);
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 60000;
  assert_int_equal(jb_claim(NULL, f->board, u[1], "alice", &lease), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, u[3], "carol", NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, u[3], "carol", 0, NULL), JB_OK);
  f->rep = start(f, f->dir);
  for (int i = 0; i < 5; i++)
    if (i != 3) assert_true(eventually(published, f, u[i]));
  uint64_t last = 0;
  for (int i = 0; i < 5; i++) {
    jb__remote_state st = rstate(f, u[i]);
    if (i == 3) {
      assert_false(st.listed);
      assert_false(st.posted); /* never published */
      continue;
    }
    assert_true(st.posted_sequence > last); /* in board order */
    last = st.posted_sequence;
  }
  jb__remote_state st = rstate(f, u[1]);
  assert_true(st.owned);
  assert_string_equal(st.owner, "alice");
  assert_true(st.pttl_ms > 50000 && st.pttl_ms <= 60000);
  /* One posted while it runs goes out too, after the others. */
  char late[JB_UUID_STRLEN];
  jbt_post(late, f->board, "late", JB_PRIORITY_VERY_HIGH);
  assert_true(eventually(published, f, late));
  assert_true(rstate(f, late).posted_sequence > last);
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
static void test_pull(void **state) {
  fixture *f = *state;
  f->rep = start(f, f->dir);
  char u[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  make_posting(u, &posting, &len, "from afar");
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, posting, len, NULL), JB_OK);
  free(posting);
  /* A waiter on the board wakes for it. */
  assert_int_equal(jb_board_wait(f->board, 0, 10000), JB_OK);
  assert_true(eventually(on_board, f, u));
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  assert_true(jb_job_remote(job));
  assert_string_equal(jb_job_name(job), "from afar");
  jb_job_free(job);
  /* Claimed in Redis by bob: the board shows bob. */
  char id[JB_UUID_STRLEN];
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner bob = {"bob", 60000, id, 0};
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bob), JB_OK);
  assert_true(eventually(owned_by_bob, f, u));
  /* Abandoned without a notice (as taskflow would): found by the poll. */
  char k[256], piece[64];
  snprintf(piece, sizeof piece, "%s.owned", u);
  key(k, sizeof k, f, piece);
  const char *del[2] = {"DEL", k};
  redis_cmd(f, 2, del, NULL);
  assert_true(eventually(unowned, f, u));
  /* Claimed again without a notice. */
  const char *set[3] = {"SET", k, "bob"};
  redis_cmd(f, 3, set, NULL);
  assert_true(eventually(owned_by_bob, f, u));
  /* Consumed with a notice: gone here, with a history record. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "bob", NULL), JB_OK);
  assert_true(eventually(off_board, f, u));
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_OK);
  jb_completion_free(c);
  /* A posting written as taskflow writes one (INCR + HSETNX, no notice)
   * is found by the poll; trashed the same way, it leaves as trashed. */
  char t[JB_UUID_STRLEN];
  make_posting(t, &posting, &len, "taskflow's");
  char lk[256], sk[256], tk[256];
  key(lk, sizeof lk, f, "listings");
  key(sk, sizeof sk, f, "sequence");
  key(tk, sizeof tk, f, "trash");
  const char *incr[2] = {"INCR", sk};
  redis_cmd(f, 2, incr, NULL);
  const char *hset[4] = {"HSETNX", lk, t, posting};
  size_t hl[4] = {6, strlen(lk), strlen(t), len};
  redis_cmd(f, 4, hset, hl);
  assert_true(eventually(on_board, f, t));
  const char *tr[4] = {"HSET", tk, t, posting};
  size_t tl[4] = {4, strlen(tk), strlen(t), len};
  redis_cmd(f, 4, tr, tl);
  const char *hdel[3] = {"HDEL", lk, t};
  redis_cmd(f, 3, hdel, NULL);
  free(posting);
  assert_true(eventually(off_board, f, t));
  assert_int_equal(jb_job_completion(&c, f->board, t), JB_OK);
  assert_int_equal(c->end, JB_END_TRASHED);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

/* Redis killed: Redis-decided jobs refuse claims (JB_EOFFLINE), local
 * posts wait; restarted empty: the jobs Redis lost are published again
 * and the posts made meanwhile go out after them, in order. */
static void test_outage(void **state) {
  fixture *f = *state;
  char a[JB_UUID_STRLEN];
  jbt_post(a, f->board, "before", JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, a));
  jb_sync_conn *c = jbt_redis_connect(f->redis.unix_url, 300);
  assert_int_equal(jb_sync_attach(f->board, c), JB_OK);
  jbt_redis_kill(&f->redis);
  char off[3][JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) jbt_post(off[i], f->board, "offline", JB_PRIORITY_LOW);
  /* attached handle: the Redis-decided job cannot be claimed */
  assert_int_equal(jb_claim(NULL, f->board, a, "w", NULL), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "backend unavailable");
  jb_sync_detach(f->board);
  jb_sync_close(c);
  /* offline posts are still decided here (claimable locally) */
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, off[0]), JB_OK);
  assert_false(jb_job_remote(job));
  jb_job_free(job);
  jb_sync_status s;
  assert_int_equal(jb_sync_status_read(&s, f->board), JB_OK);
  jbt_redis_restart(&f->redis);
  jb_sync_close(f->peer);
  f->peer = jbt_redis_connect(f->redis.unix_url, 2000);
  assert_int_equal(jb__remote_init(&f->rm, f->peer, true), JB_OK);
  assert_true(eventually(listed, f, a));
  uint64_t last = rstate(f, a).posted_sequence;
  for (int i = 0; i < 3; i++) {
    assert_true(eventually(published, f, off[i]));
    uint64_t n = rstate(f, off[i]).posted_sequence;
    assert_true(n > last);
    last = n;
  }
  assert_int_equal(jb_sync_status_read(&s, f->board), JB_OK);
  assert_true(s.last_error[0] != '\0'); /* the outage was noted */
  jbt_assert_check_ok(f->board);
}

static bool running_elsewhere(fixture *f, const char *u) {
  (void)u;
  jb_sync_status s;
  return jb_sync_status_read(&s, f->board) == JB_OK && s.running;
}

/* Two replicators on one board: one is elected; when it stops the other
 * takes over and publishes. */
static void test_election(void **state) {
  fixture *f = *state;
  f->rep = start(f, f->dir);
  jb_sync_replicator *second = start(f, f->dir);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "one", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, u));
  jb_sync_status a, b;
  assert_int_equal(jb_sync_replicator_status_read(&a, f->rep), JB_OK);
  assert_int_equal(jb_sync_replicator_status_read(&b, second), JB_OK);
  assert_true(a.running != b.running); /* exactly one elected */
  jb_sync_replicator *elected = a.running ? f->rep : second;
  jb_sync_replicator *standby = a.running ? second : f->rep;
  jb_sync_replicator_stop(elected);
  f->rep = standby;
  char v[JB_UUID_STRLEN];
  jbt_post(v, f->board, "two", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, v));
  assert_true(eventually(running_elsewhere, f, NULL));
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

/* A claim bound to a process of this host: kept alive in Redis past its
 * first expiry while the process lives; abandoned when it dies. */
static void test_keepalive(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "held", JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, u));
  holder_arg h = {f->dir, f->redis.unix_url, u, -1};
  pid_t pid = jbt_fork_ready(hold, &h, &h.ready, 60, "the holder claimed");
  assert_true(redis_owner_holder(f, u));
  /* The claim went out with the default keep-alive expiry (30 s); the
   * replicator renews it with its own (0.9 s) every 0.3 s. */
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
static void test_malformed(void **state) {
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
  /* An owner key that is not UTF-8 (taskflow does not check) shows as
   * claimed by an "invalid-owner:" name and stops nothing: a local post
   * is still published. */
  char k[256], piece[64];
  snprintf(piece, sizeof piece, "%s.owned", u);
  key(k, sizeof k, f, piece);
  const char *set[3] = {"SET", k, "\xff\xfe"};
  size_t sl[3] = {3, strlen(k), 2};
  redis_cmd(f, 3, set, sl);
  char mine[JB_UUID_STRLEN];
  jbt_post(mine, f->board, "still published", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, mine));
  assert_true(eventually(owned_by_invalid, f, u));
}

/* A job published from here, consumed by a peer that leaves no trace (as
 * taskflow: no notice) after its publication marker expired, leaves the
 * board: it is not taken for lost and published again. */
static void test_old_consume_not_republished(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "old", JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, u));
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
static void test_claim_during_publication(void **state) {
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
                                          ok_finish, ok_extend, NULL, NULL, NULL, NULL, NULL};

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
static void test_result_kept_when_mirror_wins(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "with a result", JB_PRIORITY_NORMAL);
  assert_int_equal(jb__board_mark_remote(f->board, u), JB_OK);
  jb_board *other = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb__board_set_remote(f->board, &mirror_wins, other);
  uint64_t token = 0;
  assert_int_equal(jb_claim(&token, f->board, u, "w", NULL), JB_OK);
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
 * with its cause and reason): the history record says dead with the
 * caller's reason (the mirror's plain record had none), and the dead
 * letter the mirror made is there. */
static void test_reason_kept_when_mirror_wins(void **state) {
  fixture *f = *state;
  static const jb_remote_ops trash_mirrored = {
      ok_claim, ok_release, ok_finish, mirror_trash_first, ok_extend,
      NULL,     NULL,       NULL,      NULL,               NULL};
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "poisoned", JB_PRIORITY_NORMAL);
  assert_int_equal(jb__board_mark_remote(f->board, u), JB_OK);
  jb_board *other = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb__board_set_remote(f->board, &trash_mirrored, other);
  uint64_t token = 0;
  assert_int_equal(jb_claim(&token, f->board, u, "w", NULL), JB_OK);
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.flags = JB_RETRY_DEAD;
  ro.token = token;
  ro.reason = "poison";
  jb_retry_result rr;
  assert_int_equal(jb_retry(&rr, f->board, u, "w", &ro), JB_OK);
  assert_true(rr.dead);
  jb_completion *cp = NULL;
  assert_int_equal(jb_job_completion(&cp, f->board, u), JB_OK);
  assert_int_equal(cp->end, JB_END_DEAD);
  assert_non_null(cp->reason);
  assert_string_equal(cp->reason, "poison");
  jb_completion_free(cp);
  jb_dead_letter *dl = NULL;
  assert_int_equal(jb_dead_get(&dl, f->board, u), JB_OK);
  jb_dead_free(dl);
  jb__board_set_remote(f->board, NULL, NULL);
  jb_board_close(other);
  jbt_assert_check_ok(f->board);
}

/* A consume through Redis whose reply is lost (the server stopped past the
 * command timeout); the server runs it when it continues, and the
 * replicator takes the job off the board. The caller's retry is told the
 * consume happened (it was "not on the board", and `work` reported a
 * completion refused), and the history record gets its ending and result.
 * A retry by a handle that sent no such consume is still refused. */
static void test_lost_consume_reply_then_mirror(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "lost reply", JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, u));
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
 * process did). The replicator records each from the outcome record
 * the script kept, never as a plain "consumed": the failure with its
 * result by the notice, the cancel by the comparison at the replicator's
 * start (it was not running when the cancel ran). */
static void test_outcome_of_a_dead_process(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN];
  jbt_post(u, f->board, "fails", JB_PRIORITY_NORMAL);
  jbt_post(v, f->board, "cancelled", JB_PRIORITY_NORMAL);
  f->rep = start(f, f->dir);
  assert_true(eventually(published, f, u));
  assert_true(eventually(published, f, v));
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

  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;
  assert_int_equal(jb__remote_cancel(&res, &f->rm, v, false), JB_OK);
  assert_true(on_board(f, v)); /* nobody recorded it yet */
  f->rep = start(f, f->dir);
  assert_true(eventually(off_board, f, v));
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
 * its data file still syncs (the replicator started with no URL connects with
 * it), and the start moves the password to sync.credentials (0600) and
 * rewrites the setting without it. The old bytes may stay in a free page of
 * data.mdb until LMDB reuses it; a compacting copy (mdb_copy -c, the remedy
 * the man page gives) has none of them. */
static void test_old_board_with_password(void **state) {
  fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char old[200], bare[200];
  snprintf(old, sizeof old, "unix://:%s@%s", OLD_PW, f->redis.sock);
  snprintf(bare, sizeof bare, "unix://%s", f->redis.sock);
  /* As an older release left it. */
  assert_int_equal(jb__board_setting_set(f->board, "sync.url", old), JB_OK);
  assert_int_equal(jb__board_setting_set(f->board, "sync.namespace",
                                         JB_SYNC_NAMESPACE_DEFAULT), JB_OK);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "posted before the upgrade", JB_PRIORITY_NORMAL);

  jb_sync_replicator_options o;
  o = (jb_sync_replicator_options)JB_SYNC_REPLICATOR_OPTIONS_INIT;
  o.conn.url = NULL; /* the board's own */
  o.poll_ms = 200;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = JB_DURABILITY_NORMAL;
  if (jb_sync_replicator_start(&f->rep, f->dir, &bo, &o) != JB_OK)
    fail_msg("start: %s", jb_errmsg());
  assert_true(eventually(published, f, u));
  jb_sync_status st;
  assert_int_equal(jb_sync_replicator_status_read(&st, f->rep), JB_OK);
  assert_true(st.connected);
  assert_null(strstr(st.url, OLD_PW));

  char got[300];
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
  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;

  /* Started again: connects with the file's password. */
  f->rep = NULL;
  if (jb_sync_replicator_start(&f->rep, f->dir, &bo, &o) != JB_OK)
    fail_msg("start: %s", jb_errmsg());
  char u2[JB_UUID_STRLEN];
  jbt_post(u2, f->board, "posted after", JB_PRIORITY_NORMAL);
  assert_true(eventually(published, f, u2));
  jb_sync_replicator_stop(f->rep);
  f->rep = NULL;

  /* What LMDB may have kept, and the remedy. */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_publish_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_pull, setup, teardown),
      cmocka_unit_test_setup_teardown(test_outage, setup, teardown),
      cmocka_unit_test_setup_teardown(test_election, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
      cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reason_kept_when_mirror_wins,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_claim_during_publication, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_old_consume_not_republished, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_result_kept_when_mirror_wins, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_outcome_of_a_dead_process, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lost_consume_reply_then_mirror,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_old_board_with_password,
                                      setup_auth, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
