/*
 * test_group.c - gathered commits (store/env.c, "Gathered commits"):
 * writes of several threads of one process committed as one LMDB write
 * transaction; a write that fails runs again in a child transaction of
 * its own.
 *
 *  - threads gathered into one commit each get their own result, status
 *    and message; one that fails leaves no trace and fails alone;
 *  - jb__store_write_many: a failing body's changes are gone, the others
 *    commit; a group that fills the map grows it and commits whole;
 *  - a process killed while its threads' writes are being gathered loses
 *    nothing it acknowledged (kill -9 at many points, every durability).
 *
 * The tests-only switch jb__store_test_hold(k) makes each leader wait for
 * k queued writes, so a test gathers exactly the writes it starts; the
 * count of gathered commits (jb__store_test_groups) shows it did.
 * Long form of the kill test: JB_GROUP_KILLS=500 tests/test_group
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/txn.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------- threads gathered into one */

typedef enum { OP_POST, OP_CONSUME_OTHERS, OP_CLAIM_UNKNOWN, OP_RECLAIM } op_kind;

typedef struct {
  jb_board *board;
  op_kind kind;
  const char *uuid; /* the job it acts on */
  int rc;
  char msg[1024];
  char posted[JB_UUID_STRLEN];
} op_arg;

static void *op_main(void *varg) {
  op_arg *a = varg;
  switch (a->kind) {
  case OP_POST: {
    jb_post p = JB_POST_INIT;
    p.name = "gathered";
    a->rc = jb_job_post(a->posted, a->board, &p);
    break;
  }
  case OP_CONSUME_OTHERS:
    a->rc = jb_consume(a->board, a->uuid, "mallory", 0, NULL);
    break;
  case OP_CLAIM_UNKNOWN:
    a->rc = jb_claim(NULL, a->board, "00000000-0000-4000-8000-000000000000",
                         "bob", NULL);
    break;
  case OP_RECLAIM:
    a->rc = jb_claim(NULL, a->board, a->uuid, "alice", NULL);
    break;
  }
  snprintf(a->msg, sizeof a->msg, "%s", a->rc ? jb_errmsg() : "");
  return NULL;
}

enum { GATHERED = 6 };

/* What run_six_gathered did. */
typedef struct {
  char held[JB_UUID_STRLEN]; /* claimed by "alice" before */
  int64_t claimed_before;    /* its modified time then */
  unsigned long groups;      /* gathered commits made by the six writes */
  op_arg args[GATHERED];     /* each write and what it got */
} six_gathered;

/* A job `held` claimed by "alice", then six writes of six threads held to
 * be gathered: three posts, a consume of held by another, a claim of an
 * unknown job, and alice's re-claim of held (a refresh, reported as
 * JB_ECLAIMED). */
static void run_six_gathered(jbt_fixture *f, six_gathered *g) {
  jbt_post(g->held, f->board, "held", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, f->board, g->held, "alice", NULL), JB_OK);
  const op_arg args[GATHERED] = {
      {.kind = OP_POST},
      {.kind = OP_CONSUME_OTHERS, .uuid = g->held},
      {.kind = OP_POST},
      {.kind = OP_CLAIM_UNKNOWN},
      {.kind = OP_RECLAIM, .uuid = g->held},
      {.kind = OP_POST},
  };
  memcpy(g->args, args, sizeof args);
  jb_job *before = NULL;
  assert_int_equal(jb_job_get(&before, f->board, g->held), JB_OK);
  g->claimed_before = jb_job_modified(before);
  jb_job_free(before);
  usleep(2000); /* the refresh's time must differ */
  unsigned long groups = jb__store_test_groups();
  jb__store_test_hold(GATHERED);
  pthread_t t[GATHERED];
  for (int i = 0; i < GATHERED; i++) {
    g->args[i].board = f->board;
    assert_int_equal(pthread_create(&t[i], NULL, op_main, &g->args[i]), 0);
  }
  for (int i = 0; i < GATHERED; i++) pthread_join(t[i], NULL);
  jb__store_test_hold(0);
  g->groups = jb__store_test_groups() - groups;
}

/* All six in one commit: held and the three posts are on the board. */
static void writes_of_several_threads_are_gathered_into_one_commit(
    void **state) {
  jbt_fixture *f = *state;
  static six_gathered g;
  run_six_gathered(f, &g);
  assert_int_equal(g.groups, 1);
  size_t count = 0;
  assert_int_equal(jb_board_count(&count, f->board, 0), JB_OK);
  assert_int_equal(count, 4); /* held + three posts */
}

static void gathered_writes_keep_their_own_results_and_messages(void **state) {
  jbt_fixture *f = *state;
  static six_gathered g;
  run_six_gathered(f, &g);
  op_arg *args = g.args;
  for (int i = 0; i < GATHERED; i++) {
    switch (args[i].kind) {
    case OP_POST: {
      assert_int_equal(args[i].rc, JB_OK);
      jb_state st;
      assert_int_equal(jb_job_get_state(&st, f->board, args[i].posted), JB_OK);
      assert_int_equal(st, JB_STATE_UNCLAIMED);
      break;
    }
    case OP_CONSUME_OTHERS:
      assert_int_equal(args[i].rc, JB_ENOTOWNER);
      jbt_assert_contains(args[i].msg, "not by mallory");
      break;
    case OP_CLAIM_UNKNOWN:
      assert_int_equal(args[i].rc, JB_ENOTFOUND);
      jbt_assert_contains(args[i].msg, "00000000-0000-4000-8000-000000000000");
      break;
    case OP_RECLAIM: /* committed (the refresh) and reported */
      assert_int_equal(args[i].rc, JB_ECLAIMED);
      jbt_assert_contains(args[i].msg, "its claim was refreshed");
      break;
    }
  }
}

/* The refused consume of held changed nothing. */
static void a_refused_write_in_a_group_leaves_no_trace(void **state) {
  jbt_fixture *f = *state;
  static six_gathered g;
  run_six_gathered(f, &g);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, g.held), JB_OK);
  assert_string_equal(owner, "alice");
  jbt_assert_check_ok(f->board);
}

/* The refresh was committed with the others: its status is a report. */
static void a_write_whose_status_is_a_report_commits_with_the_others(
    void **state) {
  jbt_fixture *f = *state;
  static six_gathered g;
  run_six_gathered(f, &g);
  jb_job *after = NULL;
  assert_int_equal(jb_job_get(&after, f->board, g.held), JB_OK);
  assert_true(jb_job_modified(after) > g.claimed_before);
  jb_job_free(after);
}

/* ------------------------------------------------- jb__store_write_many */

typedef struct {
  const char *key;
  size_t value_len;
  int fail; /* 0, or the JB_E* code to return after writing */
  int runs;
} put_ctx;

static int put_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  put_ctx *c = vctx;
  c->runs++;
  MDB_val k = {strlen(c->key), (void *)c->key}, v = {c->value_len, NULL};
  int rc = mdb_put(txn, s->meta, &k, &v, MDB_RESERVE);
  if (rc) return rc;
  memset(v.mv_data, 'x', c->value_len);
  if (c->fail) return jb__err(c->fail, "body %s refused on purpose", c->key);
  return 0;
}

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  put_ctx *c = vctx;
  MDB_val k = {strlen(c->key), (void *)c->key}, v;
  int rc = mdb_get(txn, s->meta, &k, &v);
  if (rc == MDB_NOTFOUND) {
    *status = JB_ENOTFOUND;
    return 0;
  }
  if (rc == 0 && v.mv_size != c->value_len) *status = JB_ECORRUPT;
  return rc;
}

static bool present(jb_board *b, put_ctx *c) {
  int rc = jb__store_read(b->store, get_body, c);
  assert_true(rc == JB_OK || rc == JB_ENOTFOUND);
  return rc == JB_OK;
}

static void a_failing_body_in_a_group_leaves_no_trace(void **state) {
  jbt_fixture *f = *state;
  put_ctx c[3] = {{"test.a", 100, 0, 0},
                  {"test.b", 100, JB_EINVAL, 0},
                  {"test.c", 100, 0, 0}};
  jb_store_req reqs[3];
  for (int i = 0; i < 3; i++) reqs[i] = (jb_store_req){put_body, &c[i], 0, ""};
  assert_int_equal(jb__store_write_many(f->board->store, reqs, 3), JB_OK);
  assert_int_equal(reqs[0].rc, JB_OK);
  assert_int_equal(reqs[1].rc, JB_EINVAL);
  jbt_assert_contains(reqs[1].msg, "body test.b refused on purpose");
  assert_int_equal(reqs[2].rc, JB_OK);
  assert_true(present(f->board, &c[0]));
  assert_false(present(f->board, &c[1]));
  assert_true(present(f->board, &c[2]));
  jbt_assert_check_ok(f->board);
}

/* Every body failing: nothing to commit, each its own error. */
static void a_group_whose_bodies_all_fail_gives_each_its_own_error(
    void **state) {
  jbt_fixture *f = *state;
  put_ctx c[3] = {{"test.d", 100, JB_ENOTFOUND, 0},
                  {"test.b", 100, JB_EINVAL, 0},
                  {"test.e", 100, JB_ECLAIMED, 0}};
  jb_store_req reqs[3];
  for (int i = 0; i < 3; i++) reqs[i] = (jb_store_req){put_body, &c[i], 0, ""};
  assert_int_equal(jb__store_write_many(f->board->store, reqs, 3), JB_OK);
  assert_int_equal(reqs[0].rc, JB_ENOTFOUND);
  assert_int_equal(reqs[1].rc, JB_EINVAL);
  assert_int_equal(reqs[2].rc, JB_ECLAIMED);
  jbt_assert_contains(reqs[2].msg, "test.e");
  assert_false(present(f->board, &c[0]));
  assert_false(present(f->board, &c[1]));
  assert_false(present(f->board, &c[2]));
  jbt_assert_check_ok(f->board);
}

static void a_group_that_fills_the_map_grows_it_and_commits_whole(
    void **state) {
  char *dir = jbt_mkdtemp();
  jb_board *b = jbt_open(dir, JB_DURABILITY_NONE, 1u << 20); /* 1 MiB map */
  enum { N = 12 };
  put_ctx c[N];
  jb_store_req reqs[N];
  char keys[N][32];
  for (int i = 0; i < N; i++) {
    snprintf(keys[i], sizeof keys[i], "test.big%d", i);
    c[i] = (put_ctx){keys[i], 200 * 1024, 0, 0}; /* 2.4 MB in all */
    reqs[i] = (jb_store_req){put_body, &c[i], 0, ""};
  }
  assert_int_equal(jb__store_write_many(b->store, reqs, N), JB_OK);
  bool reran = false;
  for (int i = 0; i < N; i++) {
    assert_int_equal(reqs[i].rc, JB_OK);
    assert_true(present(b, &c[i]));
    if (c[i].runs > 1) reran = true;
  }
  assert_true(reran); /* the map did fill: the group ran again */
  jbt_assert_check_ok(b);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
  (void)state;
}

/* ------------------------------------ a commit that follows a new file */

static int reopen_child(void *arg) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *b;
  if (jb_board_open(&b, arg, &o) != JB_OK) return 2;
  jb_board_close(b);
  return 0;
}

/* The signal file is replaced twice behind this process's back: the
 * commit of its next write finds meta naming a file it does not map and
 * follows it, which writes meta through the store again. That write
 * must not wait behind the very write whose commit it follows (it did,
 * for ever, when the commit's wake-up ran while its thread still led the
 * queue of gathered writes). */
static void a_write_that_follows_a_replaced_signal_file_completes(
    void **state) {
  jbt_fixture *f = *state;
  jbt_post(NULL, f->board, "first", JB_PRIORITY_NORMAL);
  char *sig = jbt_path(f->dir, "signal");
  assert_int_equal(unlink(sig), 0);
  jbt_wait_ok(jbt_fork(reopen_child, f->dir, 20), 20000); /* makes a new one */
  assert_int_equal(unlink(sig), 0);
  /* A hang fails here (SIGALRM), then the watchdog is back as it was. */
  unsigned watchdog = alarm(20);
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "after", JB_PRIORITY_NORMAL);
  jbt_post(NULL, f->board, "and again", JB_PRIORITY_NORMAL);
  alarm(watchdog);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, uuid), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  free(sig);
}

/* -------------------------------------------------- kill -9 mid-group */

typedef struct {
  const char *dir;
  jb_durability durability;
  int fd; /* acknowledged uuids, one line each */
} killee_arg;

typedef struct {
  jb_board *board;
  int fd;
} poster_arg;

static void *poster_main(void *varg) {
  poster_arg *a = varg;
  for (;;) {
    char uuid[JB_UUID_STRLEN + 1];
    jb_post p = JB_POST_INIT;
    p.name = "acked";
    if (jb_job_post(uuid, a->board, &p) != JB_OK) _exit(3);
    uuid[JB_UUID_STRLEN - 1] = '\n';
    /* One write(2) per line, of less than PIPE_BUF: never interleaved. */
    if (write(a->fd, uuid, JB_UUID_STRLEN) != JB_UUID_STRLEN) _exit(4);
  }
  return NULL;
}

static int killee_main(void *varg) {
  killee_arg *a = varg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = a->durability;
  jb_board *b;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 2;
  enum { T = 4 };
  jb__store_test_hold(T); /* every commit gathers all four threads */
  poster_arg pa = {b, a->fd};
  pthread_t t[T];
  for (int i = 0; i < T; i++) pthread_create(&t[i], NULL, poster_main, &pa);
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  return 0;
}

static void a_process_killed_during_gathered_commits_loses_nothing_acked(
    void **state) {
  (void)state;
  const char *env = getenv("JB_GROUP_KILLS");
  int kills = env ? atoi(env) : 30;
  unsigned seed = jbt_seed("test_group kills");
  srand(seed);
  char *dir = jbt_mkdtemp();
  jb_board *b = jbt_open(dir, JB_DURABILITY_NORMAL, 0);
  jb_board_close(b);
  jbt_uuids acked = {0};
  for (int k = 0; k < kills; k++) {
    jb_durability d = (jb_durability)(k % 3);
    int p[2];
    assert_int_equal(pipe(p), 0);
    killee_arg ka = {dir, d, p[1]};
    pid_t pid = jbt_fork(killee_main, &ka, 60);
    close(p[1]);
    /* Let it run a random while: up to ~25 ms in none, longer when the
     * commits flush, then kill it wherever it is. */
    usleep((useconds_t)(rand() % (d == JB_DURABILITY_NONE ? 25000 : 60000)));
    kill(pid, SIGKILL);
    int st = jbt_wait(pid, 20000);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    /* Everything it acknowledged (wrote to the pipe) is ours to check. */
    char buf[JB_UUID_STRLEN * 64];
    size_t have = 0;
    ssize_t r;
    while ((r = read(p[0], buf + have, sizeof buf - have)) > 0) {
      have += (size_t)r;
      size_t whole = have / JB_UUID_STRLEN * JB_UUID_STRLEN;
      for (size_t off = 0; off < whole; off += JB_UUID_STRLEN) {
        buf[off + JB_UUID_STRLEN - 1] = '\0';
        jbt_uuids_add(&acked, buf + off);
      }
      memmove(buf, buf + whole, have - whole);
      have -= whole;
    }
    close(p[0]);
    b = jbt_open(dir, d, 0);
    for (size_t i = 0; i < acked.n; i++) {
      jb_state st2;
      int rc = jb_job_get_state(&st2, b, acked.v[i]);
      if (rc != JB_OK || st2 != JB_STATE_UNCLAIMED)
        fail_msg("kill %d (durability %s, seed %u): acknowledged job %s is "
                 "missing (rc %d)", k, jb_durability_name(d), seed,
                 acked.v[i], rc);
    }
    jbt_assert_check_ok(b);
    jb_board_close(b);
  }
  printf("# %d kills, %zu acknowledged posts all present\n", kills, acked.n);
  assert_true(acked.n > 0);
  jbt_uuids_free(&acked);
  jbt_rmtree(dir);
  free(dir);
}

int main(void) {
  jbt_watchdog(600);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(writes_of_several_threads_are_gathered_into_one_commit),
      T(gathered_writes_keep_their_own_results_and_messages),
      T(a_refused_write_in_a_group_leaves_no_trace),
      T(a_write_whose_status_is_a_report_commits_with_the_others),
      T(a_failing_body_in_a_group_leaves_no_trace),
      T(a_group_whose_bodies_all_fail_gives_each_its_own_error),
      cmocka_unit_test(a_group_that_fills_the_map_grows_it_and_commits_whole),
      T(a_write_that_follows_a_replaced_signal_file_completes),
      cmocka_unit_test(
          a_process_killed_during_gathered_commits_loses_nothing_acked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
