/*
 * test_race.c - processes racing on one board: 8 forked workers doing
 * claim-next + consume over 20,000 jobs consume each exactly once and lose
 * none; racing claims of the same jobs give each job one owner; producers
 * and consumers running at once lose nothing; processes creating one
 * board at the same moment share it.
 *
 * Each child opens the board itself (a handle must not cross fork()) and
 * writes every uuid it consumed, one per line, to its own file; the parent
 * compares the union with what it posted.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 8
#define JOBS 20000
#define CHILD_TIMEOUT_S 90

/* Post n jobs in batches of 500 (one transaction each), priorities mixed. */
static void post_jobs(jb_board *b, jbt_uuids *out, size_t n) {
  enum { CHUNK = 500 };
  jb_post posts[CHUNK];
  static char uuids[CHUNK][JB_UUID_STRLEN];
  for (size_t done = 0; done < n;) {
    size_t k = n - done < CHUNK ? n - done : CHUNK;
    for (size_t i = 0; i < k; i++) {
      jb_post p = JB_POST_INIT;
      p.name = "race";
      p.priority = (jb_priority)((done + i) % 5);
      posts[i] = p;
    }
    int rc = jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK) fail_msg("post batch: %s", jb_errmsg());
    for (size_t i = 0; i < k; i++) jbt_uuids_add(out, uuids[i]);
    done += k;
  }
}

/* Start every child at once: each waits for one byte on the start pipe. */
static void start_all(int start[2], int n) {
  for (int i = 0; i < n; i++) assert_int_equal(write(start[1], "g", 1), 1);
  close(start[0]);
  close(start[1]);
}

static jb_board *child_open(const char *dir) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  if (jb_board_open(&b, dir, &o) != JB_OK) {
    fprintf(stderr, "child %d: open: %s\n", (int)getpid(), jb_errmsg());
    return NULL;
  }
  return b;
}

typedef struct {
  const char *dir;
  char *out;       /* file of consumed uuids */
  int index;
  int start_fd;    /* all children start when this pipe closes */
  int producers_fd; /* consumers: EOF here means every producer is done */
  size_t to_post;  /* producers: how many to post */
  int close_fd;    /* closed by the child first (-1: none) */
} worker_args;

/* Consume until nothing is claimable (and, if producers_fd >= 0, until the
 * producers are done). */
static int consumer(void *arg) {
  worker_args *a = arg;
  if (a->close_fd >= 0) close(a->close_fd);
  char who[32];
  snprintf(who, sizeof who, "worker-%d", a->index);
  FILE *out = fopen(a->out, "w");
  if (!out) return 10;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 11; /* wait for the start */
  jb_board *b = child_open(a->dir);
  if (!b) return 12;
  bool producers_done = a->producers_fd < 0;
  for (;;) {
    char uuid[JB_UUID_STRLEN];
    int rc = jb_claim_next(uuid, NULL, NULL, b, who, NULL);
    if (rc == JB_ENOTFOUND) {
      if (producers_done) {
        /* One more look: a post may have landed after our last claim. */
        if (jb_claim_next(uuid, NULL, NULL, b, who, NULL) == JB_ENOTFOUND) break;
      } else {
        /* Producers still running: nothing claimable right now. Check
         * whether they are done (EOF on their pipe) without blocking. */
        struct timeval tv = {0, 1000};
        fd_set rd;
        FD_ZERO(&rd);
        FD_SET(a->producers_fd, &rd);
        if (select(a->producers_fd + 1, &rd, NULL, NULL, &tv) > 0 &&
            read(a->producers_fd, &c, 1) == 0)
          producers_done = true;
        continue;
      }
      continue;
    }
    if (rc != JB_OK) {
      fprintf(stderr, "%s: claim-next: %s\n", who, jb_errmsg());
      return 13;
    }
    rc = jb_consume(b, uuid, who, 0, NULL);
    if (rc != JB_OK) {
      fprintf(stderr, "%s: consume %s: %s\n", who, uuid, jb_errmsg());
      return 14;
    }
    fprintf(out, "%s\n", uuid);
  }
  jb_board_close(b);
  return fclose(out) == 0 ? 0 : 15;
}

/* Post a->to_post jobs one at a time, writing each uuid once posted. */
static int producer(void *arg) {
  worker_args *a = arg;
  FILE *out = fopen(a->out, "w");
  if (!out) return 20;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 21;
  jb_board *b = child_open(a->dir);
  if (!b) return 22;
  for (size_t i = 0; i < a->to_post; i++) {
    char uuid[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "produced";
    p.priority = (jb_priority)(i % 5);
    if (jb_job_post(uuid, b, &p) != JB_OK) {
      fprintf(stderr, "producer: %s\n", jb_errmsg());
      return 23;
    }
    fprintf(out, "%s\n", uuid);
  }
  jb_board_close(b);
  return fclose(out) == 0 ? 0 : 24;
}

/* Check that the union of the files equals `posted`, with no duplicate. */
static void assert_consumed_exactly_once(const jbt_uuids *posted,
                                         char **files, int n) {
  jbt_uuids got = {0};
  for (int i = 0; i < n; i++) jbt_uuids_read_file(&got, files[i]);
  jbt_uuids_sort(&got);
  const char *dup = jbt_uuids_duplicate(&got);
  if (dup) fail_msg("job %s was consumed twice", dup);
  for (size_t i = 0; i < posted->n; i++)
    if (jbt_uuids_find(&got, posted->v[i]) < 0)
      fail_msg("job %s was posted but never consumed", posted->v[i]);
  assert_int_equal(got.n, posted->n);
  jbt_uuids_free(&got);
}

static void eight_processes_consume_each_of_20000_jobs_exactly_once(
    void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  jbt_uuids posted = {0};
  post_jobs(f->board, &posted, JOBS);
  jb_board_close(f->board);
  f->board = NULL;

  int start[2];
  assert_int_equal(pipe(start), 0);
  worker_args args[WORKERS];
  pid_t pids[WORKERS];
  char *files[WORKERS];
  int64_t t0 = jbt_now_ms();
  for (int i = 0; i < WORKERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "consumed-%d", i);
    files[i] = jbt_path(f->dir, name);
    args[i] = (worker_args){f->dir, files[i], i, start[0], -1, 0, -1};
    pids[i] = jbt_fork(consumer, &args[i], CHILD_TIMEOUT_S);
  }
  start_all(start, WORKERS);
  for (int i = 0; i < WORKERS; i++) jbt_wait_ok(pids[i], CHILD_TIMEOUT_S * 1000);
  printf("# %d processes consumed %d jobs in %lld ms\n", WORKERS, JOBS,
         (long long)(jbt_now_ms() - t0));

  jbt_uuids_sort(&posted);
  assert_consumed_exactly_once(&posted, files, WORKERS);
  /* Every worker got some: the race was a race. */
  for (int i = 0; i < WORKERS; i++) {
    jbt_uuids mine = {0};
    jbt_uuids_read_file(&mine, files[i]);
    printf("#   worker-%d consumed %zu\n", i, mine.n);
    jbt_uuids_free(&mine);
    free(files[i]);
  }
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  size_t n = 99;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
}

typedef struct {
  const char *dir;
  const jbt_uuids *jobs; /* every child tries every job, in this order */
  char *out;             /* uuids this child claimed */
  int index;
  int start_fd;
} claimer_args;

static int claimer(void *arg) {
  claimer_args *a = arg;
  char who[32];
  snprintf(who, sizeof who, "claimer-%d", a->index);
  FILE *out = fopen(a->out, "w");
  if (!out) return 30;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 31;
  jb_board *b = child_open(a->dir);
  if (!b) return 32;
  for (size_t k = 0; k < a->jobs->n; k++) {
    /* Half the children walk the list backwards so they meet mid-way. */
    size_t i = a->index % 2 ? a->jobs->n - 1 - k : k;
    int rc = jb_claim(NULL, b, a->jobs->v[i], who, NULL);
    if (rc == JB_OK)
      fprintf(out, "%s\n", a->jobs->v[i]);
    else if (rc != JB_ECLAIMED) {
      fprintf(stderr, "%s: claim: %s\n", who, jb_errmsg());
      return 33;
    }
  }
  jb_board_close(b);
  return fclose(out) == 0 ? 0 : 34;
}

typedef struct {
  const char *dir; /* not there yet: every child creates it at once */
  int start_fd;
  int index;
} creator_args;

enum { CREATORS = 8, CREATOR_POSTS = 25, CREATE_ROUNDS = 15 };

static int creator(void *arg) {
  creator_args *a = arg;
  char c;
  if (read(a->start_fd, &c, 1) != 1) return 40;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  /* Mixed durabilities would be refused only within one process. */
  o.durability = JB_DURABILITY_NONE;
  o.flags = JB_OPEN_CREATE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) {
    fprintf(stderr, "creator %d: open: %s\n", a->index, jb_errmsg());
    return 41;
  }
  for (int i = 0; i < CREATOR_POSTS; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "created";
    if (jb_job_post(NULL, b, &p) != JB_OK) {
      fprintf(stderr, "creator %d: post: %s\n", a->index, jb_errmsg());
      return 42;
    }
  }
  jb_board_close(b);
  return 0;
}

/* Eight processes open one board that does not exist yet, all at the same
 * moment, each allowed to create it: one initialises it, all of them post
 * on that one board, and nothing is lost. Several rounds, a new directory
 * each. */
static void processes_creating_one_board_at_once_share_it(void **state) {
  jbt_fixture *f = *state;
  for (int round = 0; round < CREATE_ROUNDS; round++) {
    char name[32];
    snprintf(name, sizeof name, "new-%d", round);
    char *dir = jbt_path(f->dir, name);
    int start[2];
    assert_int_equal(pipe(start), 0);
    pid_t pids[CREATORS];
    creator_args args[CREATORS];
    for (int i = 0; i < CREATORS; i++) {
      args[i] = (creator_args){dir, start[0], i};
      pids[i] = jbt_fork(creator, &args[i], CHILD_TIMEOUT_S);
    }
    start_all(start, CREATORS);
    for (int i = 0; i < CREATORS; i++)
      jbt_wait_ok(pids[i], CHILD_TIMEOUT_S * 1000);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      /* Checked in a child: the fixture's board is open in this process
       * with another durability. */
      jb_board *b = child_open(dir);
      size_t n = 0;
      jb_check_stats st;
      _exit(b && jb_board_count(&n, b, 0) == JB_OK &&
                    n == CREATORS * CREATOR_POSTS &&
                    jb_board_check(&st, b, NULL, NULL) == JB_OK
                ? 0
                : 1);
    }
    jbt_wait_ok(pid, CHILD_TIMEOUT_S * 1000);
    free(dir);
  }
}

static void racing_claims_of_the_same_jobs_give_each_job_one_owner(
    void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  jbt_uuids posted = {0};
  post_jobs(f->board, &posted, 3000);
  jb_board_close(f->board);
  f->board = NULL;

  int start[2];
  assert_int_equal(pipe(start), 0);
  claimer_args args[WORKERS];
  pid_t pids[WORKERS];
  char *files[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "claimed-%d", i);
    files[i] = jbt_path(f->dir, name);
    args[i] = (claimer_args){f->dir, &posted, files[i], i, start[0]};
    pids[i] = jbt_fork(claimer, &args[i], CHILD_TIMEOUT_S);
  }
  start_all(start, WORKERS);
  for (int i = 0; i < WORKERS; i++) jbt_wait_ok(pids[i], CHILD_TIMEOUT_S * 1000);

  jbt_uuids_sort(&posted);
  assert_consumed_exactly_once(&posted, files, WORKERS);
  /* ... and the board agrees with what each child was told. */
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  for (int i = 0; i < WORKERS; i++) {
    jbt_uuids mine = {0};
    jbt_uuids_read_file(&mine, files[i]);
    char who[32];
    snprintf(who, sizeof who, "claimer-%d", i);
    for (size_t k = 0; k < mine.n; k++) {
      char owner[JB_WHO_MAX + 1];
      assert_int_equal(jb_job_find_owner(owner, f->board, mine.v[k]), JB_OK);
      assert_string_equal(owner, who);
    }
    jbt_uuids_free(&mine);
    free(files[i]);
  }
  size_t unclaimed = 99;
  assert_int_equal(jb_board_count(&unclaimed, f->board, JB_ONLY_UNCLAIMED),
                   JB_OK);
  assert_int_equal(unclaimed, 0);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
}

static void producers_and_consumers_at_once_lose_nothing(void **state) {
  jbt_fixture *f = *state;
  enum { PRODUCERS = 2, CONSUMERS = 6, EACH = 4000 };
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  jb_board_close(f->board);
  f->board = NULL;

  int start[2], producing[2];
  assert_int_equal(pipe(start), 0);
  assert_int_equal(pipe(producing), 0);
  worker_args args[PRODUCERS + CONSUMERS];
  pid_t pids[PRODUCERS + CONSUMERS];
  char *files[PRODUCERS + CONSUMERS];
  for (int i = 0; i < PRODUCERS + CONSUMERS; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s-%d", i < PRODUCERS ? "posted" : "consumed", i);
    files[i] = jbt_path(f->dir, name);
    args[i] = (worker_args){f->dir,        files[i],     i,
                            start[0],      producing[0], EACH,
                            i < PRODUCERS ? -1 : producing[1]};
    pids[i] = jbt_fork(i < PRODUCERS ? producer : consumer, &args[i],
                       CHILD_TIMEOUT_S);
  }
  /* Consumers see EOF on `producing` once every holder of its write end
   * has gone: the producers (when they exit) and this process (now).
   * Consumers close their own copy first thing (close_fd). */
  close(producing[1]);
  close(producing[0]);
  start_all(start, PRODUCERS + CONSUMERS);
  for (int i = 0; i < PRODUCERS; i++) jbt_wait_ok(pids[i], CHILD_TIMEOUT_S * 1000);
  for (int i = PRODUCERS; i < PRODUCERS + CONSUMERS; i++)
    jbt_wait_ok(pids[i], CHILD_TIMEOUT_S * 1000);

  jbt_uuids posted = {0};
  for (int i = 0; i < PRODUCERS; i++) jbt_uuids_read_file(&posted, files[i]);
  assert_int_equal(posted.n, PRODUCERS * EACH);
  jbt_uuids_sort(&posted);
  assert_consumed_exactly_once(&posted, files + PRODUCERS, CONSUMERS);
  for (int i = 0; i < PRODUCERS + CONSUMERS; i++) free(files[i]);
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  size_t n = 99;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
}

int main(void) {
  jbt_watchdog(300);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(eight_processes_consume_each_of_20000_jobs_exactly_once),
      T(racing_claims_of_the_same_jobs_give_each_job_one_owner),
      T(producers_and_consumers_at_once_lose_nothing),
      T(processes_creating_one_board_at_once_share_it),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
