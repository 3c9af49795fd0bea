/*
 * test_threads.c - many threads sharing one jb_board handle (the header
 * promises it is safe): concurrent claim-next + consume while others post,
 * racing claims, iterators running while jobs change, the map growing
 * under concurrent writers, and per-thread error messages.
 */
#include "helpers.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONSUMERS 8
#define POSTERS 2
#define PREPOSTED 20000
#define PER_POSTER 2500

static void post_batches(jb_board *b, jbt_uuids *out, size_t n,
                         size_t details) {
  enum { CHUNK = 500 };
  jb_post posts[CHUNK];
  static char uuids[CHUNK][JB_UUID_STRLEN];
  jbt_buf d = jbt_details_blob(details, 3);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < CHUNK ? n - done : CHUNK;
    for (size_t i = 0; i < k; i++) {
      jb_post p = JB_POST_INIT;
      p.name = "threads";
      p.priority = (jb_priority)((done + i) % 5);
      p.details = details ? d.data : NULL;
      p.details_len = details ? d.len : 0;
      posts[i] = p;
    }
    int rc = jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK) fail_msg("post batch: %s", jb_errmsg());
    for (size_t i = 0; i < k; i++) jbt_uuids_add(out, uuids[i]);
    done += k;
  }
  jbt_buf_free(&d);
}

static void use_fast_board(jbt_fixture *f, size_t map_size) {
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NONE, map_size);
}

/* ------------------------------------------- consumers and posters */

typedef struct {
  jb_board *board;
  int index;
  atomic_int *posters_left;
  jbt_uuids got; /* consumed (consumers) or posted (posters) */
  char err[300];
} worker;

static void *consumer_main(void *arg) {
  worker *w = arg;
  char who[32];
  snprintf(who, sizeof who, "thread-%d", w->index);
  for (;;) {
    /* Read the flag before trying: if it was 0 and claim-next then finds
     * nothing, every post has committed and nothing is left. */
    int left = atomic_load(w->posters_left);
    char u[JB_UUID_STRLEN];
    int rc = jb_claim_next(u, NULL, NULL, w->board, who, NULL);
    if (rc == JB_ENOTFOUND) {
      if (left == 0) break;
      sched_yield();
      continue;
    }
    if (rc != JB_OK) {
      snprintf(w->err, sizeof w->err, "claim-next: %s", jb_errmsg());
      break;
    }
    rc = jb_consume(w->board, u, who, 0, NULL);
    if (rc != JB_OK) {
      snprintf(w->err, sizeof w->err, "consume %s: %s", u, jb_errmsg());
      break;
    }
    jbt_uuids_add(&w->got, u);
  }
  return NULL;
}

static void *poster_main(void *arg) {
  worker *w = arg;
  for (int i = 0; i < PER_POSTER; i++) {
    char u[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "posted-by-thread";
    p.priority = (jb_priority)(i % 5);
    int rc = jb_job_post(u, w->board, &p);
    if (rc != JB_OK) {
      snprintf(w->err, sizeof w->err, "post: %s", jb_errmsg());
      break;
    }
    jbt_uuids_add(&w->got, u);
  }
  atomic_fetch_sub(w->posters_left, 1);
  return NULL;
}

static void eight_threads_on_one_handle_consume_each_job_exactly_once(
    void **state) {
  jbt_fixture *f = *state;
  use_fast_board(f, 0);
  jbt_uuids posted = {0};
  post_batches(f->board, &posted, PREPOSTED, 0);

  atomic_int posters_left = POSTERS;
  worker w[CONSUMERS + POSTERS];
  pthread_t th[CONSUMERS + POSTERS];
  memset(w, 0, sizeof w);
  int64_t t0 = jbt_now_ms();
  for (int i = 0; i < CONSUMERS + POSTERS; i++) {
    w[i].board = f->board;
    w[i].index = i;
    w[i].posters_left = &posters_left;
    assert_int_equal(pthread_create(&th[i], NULL,
                                    i < CONSUMERS ? consumer_main : poster_main,
                                    &w[i]),
                     0);
  }
  for (int i = 0; i < CONSUMERS + POSTERS; i++) pthread_join(th[i], NULL);
  printf("# %d threads consumed %d jobs while %d posted %d more, in %lld ms\n",
         CONSUMERS, PREPOSTED, POSTERS, POSTERS * PER_POSTER,
         (long long)(jbt_now_ms() - t0));
  for (int i = 0; i < CONSUMERS + POSTERS; i++)
    if (w[i].err[0]) fail_msg("thread %d: %s", i, w[i].err);

  for (int i = CONSUMERS; i < CONSUMERS + POSTERS; i++) {
    assert_int_equal(w[i].got.n, PER_POSTER);
    for (size_t k = 0; k < w[i].got.n; k++) jbt_uuids_add(&posted, w[i].got.v[k]);
  }
  jbt_uuids_sort(&posted);
  assert_null(jbt_uuids_duplicate(&posted));
  jbt_uuids all = {0};
  for (int i = 0; i < CONSUMERS; i++) {
    printf("#   thread-%d consumed %zu\n", i, w[i].got.n);
    for (size_t k = 0; k < w[i].got.n; k++) jbt_uuids_add(&all, w[i].got.v[k]);
  }
  jbt_uuids_sort(&all);
  const char *dup = jbt_uuids_duplicate(&all);
  if (dup) fail_msg("job %s consumed twice", dup);
  for (size_t i = 0; i < posted.n; i++)
    if (jbt_uuids_find(&all, posted.v[i]) < 0)
      fail_msg("job %s posted but never consumed", posted.v[i]);
  assert_int_equal(all.n, posted.n);
  size_t n = 99;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
  jbt_assert_check_ok(f->board);
  for (int i = 0; i < CONSUMERS + POSTERS; i++) jbt_uuids_free(&w[i].got);
  jbt_uuids_free(&all);
  jbt_uuids_free(&posted);
}

/* ------------------------------------------------------ racing claims */

typedef struct {
  jb_board *board;
  const jbt_uuids *jobs;
  int index;
  jbt_uuids won;
  char err[300];
} claimer;

static void *claimer_main(void *arg) {
  claimer *c = arg;
  char who[32];
  snprintf(who, sizeof who, "claimer-%d", c->index);
  for (size_t k = 0; k < c->jobs->n; k++) {
    size_t i = c->index % 2 ? c->jobs->n - 1 - k : k;
    int rc = jb_claim(NULL, c->board, c->jobs->v[i], who, NULL);
    if (rc == JB_OK)
      jbt_uuids_add(&c->won, c->jobs->v[i]);
    else if (rc != JB_ECLAIMED) {
      snprintf(c->err, sizeof c->err, "claim: %s", jb_errmsg());
      break;
    }
  }
  return NULL;
}

static void racing_threads_claiming_the_same_jobs_give_each_one_owner(
    void **state) {
  jbt_fixture *f = *state;
  use_fast_board(f, 0);
  jbt_uuids posted = {0};
  post_batches(f->board, &posted, 3000, 0);
  claimer c[8];
  pthread_t th[8];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 8; i++) {
    c[i] = (claimer){f->board, &posted, i, {0}, {0}};
    assert_int_equal(pthread_create(&th[i], NULL, claimer_main, &c[i]), 0);
  }
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  jbt_uuids all = {0};
  for (int i = 0; i < 8; i++) {
    if (c[i].err[0]) fail_msg("thread %d: %s", i, c[i].err);
    char who[32];
    snprintf(who, sizeof who, "claimer-%d", i);
    for (size_t k = 0; k < c[i].won.n; k++) {
      jbt_uuids_add(&all, c[i].won.v[k]);
      char owner[JB_WHO_MAX + 1];
      assert_int_equal(jb_job_find_owner(owner, f->board, c[i].won.v[k]), JB_OK);
      assert_string_equal(owner, who);
    }
    jbt_uuids_free(&c[i].won);
  }
  jbt_uuids_sort(&all);
  assert_null(jbt_uuids_duplicate(&all));
  assert_int_equal(all.n, posted.n);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&all);
  jbt_uuids_free(&posted);
}

/* ------------------------------------------- iterators while changing */

typedef struct {
  jb_board *board;
  atomic_int *stop;
  size_t passes;
  char err[300];
} lister;

/* List the board over and over; each pass must be in listing order with
 * no job twice (jobs may come and go between reads). */
static void *lister_main(void *arg) {
  lister *l = arg;
  while (!atomic_load(l->stop) || l->passes == 0) {
    jb_iter *it = NULL;
    if (jb_iter_open(&it, l->board, 0) != JB_OK) {
      snprintf(l->err, sizeof l->err, "iter_open: %s", jb_errmsg());
      return NULL;
    }
    int prio = 5;
    uint64_t seq = 0;
    for (;;) {
      const jb_job *j;
      int rc = jb_iter_next(&j, it);
      if (rc != JB_OK) {
        snprintf(l->err, sizeof l->err, "iter_next: %s", jb_errmsg());
        break;
      }
      if (j == NULL) break;
      int p = (int)jb_job_priority(j);
      uint64_t s = jb_job_sequence(j);
      if (p > prio || (p == prio && s <= seq)) {
        snprintf(l->err, sizeof l->err,
                 "out of order: (%d, %llu) after (%d, %llu)", p,
                 (unsigned long long)s, prio, (unsigned long long)seq);
        break;
      }
      prio = p;
      seq = s;
    }
    jb_iter_close(it);
    if (l->err[0]) return NULL;
    l->passes++;
  }
  return NULL;
}

static void *churn_main(void *arg) {
  worker *w = arg;
  char who[32];
  snprintf(who, sizeof who, "churn-%d", w->index);
  for (int i = 0; i < 3000; i++) {
    char u[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "churn";
    p.priority = (jb_priority)((i * 7 + w->index) % 5);
    if (jb_job_post(u, w->board, &p) != JB_OK) {
      snprintf(w->err, sizeof w->err, "post: %s", jb_errmsg());
      break;
    }
    if (jb_claim_next(u, NULL, NULL, w->board, who, NULL) == JB_OK &&
        jb_consume(w->board, u, who, 0, NULL) != JB_OK) {
      snprintf(w->err, sizeof w->err, "consume: %s", jb_errmsg());
      break;
    }
  }
  return NULL;
}

static void iterators_in_many_threads_stay_ordered_while_jobs_change(
    void **state) {
  jbt_fixture *f = *state;
  use_fast_board(f, 0);
  jbt_uuids posted = {0};
  post_batches(f->board, &posted, 2000, 0);
  atomic_int stop = 0;
  lister l[4];
  worker w[2];
  pthread_t lt[4], wt[2];
  memset(l, 0, sizeof l);
  memset(w, 0, sizeof w);
  for (int i = 0; i < 4; i++) {
    l[i].board = f->board;
    l[i].stop = &stop;
    assert_int_equal(pthread_create(&lt[i], NULL, lister_main, &l[i]), 0);
  }
  for (int i = 0; i < 2; i++) {
    w[i].board = f->board;
    w[i].index = i;
    assert_int_equal(pthread_create(&wt[i], NULL, churn_main, &w[i]), 0);
  }
  for (int i = 0; i < 2; i++) pthread_join(wt[i], NULL);
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(lt[i], NULL);
  for (int i = 0; i < 2; i++)
    if (w[i].err[0]) fail_msg("churn %d: %s", i, w[i].err);
  for (int i = 0; i < 4; i++) {
    if (l[i].err[0]) fail_msg("lister %d: %s", i, l[i].err);
    assert_true(l[i].passes > 0);
  }
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
}

/* ------------------------------------------------ map growth, threaded */

typedef struct {
  jb_board *board;
  int index;
  jbt_uuids posted;
  atomic_int *writers_left;
  size_t reads;
  char err[300];
} grower;

static void *grow_writer(void *arg) {
  grower *g = arg;
  for (int i = 0; i < 800; i++) {
    jbt_buf d = jbt_details_blob(1024, (unsigned)(g->index * 100000 + i));
    jb_post p = JB_POST_INIT;
    p.name = "grow";
    p.details = d.data;
    p.details_len = d.len;
    char u[JB_UUID_STRLEN];
    int rc = jb_job_post(u, g->board, &p);
    jbt_buf_free(&d);
    if (rc != JB_OK) {
      snprintf(g->err, sizeof g->err, "post: %s", jb_errmsg());
      break;
    }
    jbt_uuids_add(&g->posted, u);
  }
  atomic_fetch_sub(g->writers_left, 1);
  return NULL;
}

/* Reads its own posts back while the map grows under it. */
static void *grow_reader(void *arg) {
  grower *g = arg;
  while (atomic_load(g->writers_left) > 0) {
    size_t n = 0;
    if (jb_board_count(&n, g->board, 0) != JB_OK) {
      snprintf(g->err, sizeof g->err, "count: %s", jb_errmsg());
      break;
    }
    jb_iter *it = NULL;
    if (jb_iter_open(&it, g->board, 0) != JB_OK) break;
    const jb_job *j;
    for (int k = 0; k < 50; k++) {
      int rc = jb_iter_next(&j, it);
      if (rc != JB_OK) {
        snprintf(g->err, sizeof g->err, "iter: %s", jb_errmsg());
        break;
      }
      if (j == NULL) break;
      size_t len;
      if (jb_job_details(j, &len) == NULL || len < 1024) {
        snprintf(g->err, sizeof g->err, "short details");
        break;
      }
    }
    jb_iter_close(it);
    g->reads++;
    if (g->err[0]) break;
  }
  return NULL;
}

static void threads_posting_at_once_grow_the_map_safely(void **state) {
  jbt_fixture *f = *state;
  use_fast_board(f, 256 * 1024);
  atomic_int writers_left = 4;
  grower g[6];
  pthread_t th[6];
  memset(g, 0, sizeof g);
  for (int i = 0; i < 6; i++) {
    g[i].board = f->board;
    g[i].index = i;
    g[i].writers_left = &writers_left;
    assert_int_equal(
        pthread_create(&th[i], NULL, i < 4 ? grow_writer : grow_reader, &g[i]),
        0);
  }
  for (int i = 0; i < 6; i++) pthread_join(th[i], NULL);
  size_t total = 0;
  for (int i = 0; i < 6; i++) {
    if (g[i].err[0]) fail_msg("thread %d: %s", i, g[i].err);
    total += g[i].posted.n;
  }
  assert_int_equal(total, 4 * 800);
  for (int i = 0; i < 4; i++) {
    for (size_t k = 0; k < g[i].posted.n; k++) {
      jb_job *j = NULL;
      assert_int_equal(jb_job_get(&j, f->board, g[i].posted.v[k]), JB_OK);
      jbt_buf want = jbt_details_blob(1024, (unsigned)(i * 100000 + (int)k));
      size_t len;
      const void *d = jb_job_details(j, &len);
      assert_int_equal(len, want.len);
      assert_memory_equal(d, want.data, len);
      jbt_buf_free(&want);
      jb_job_free(j);
    }
    jbt_uuids_free(&g[i].posted);
  }
  jbt_assert_check_ok(f->board);
}

/* ------------------------------------------------- per-thread messages */

typedef struct {
  jb_board *board;
  pthread_barrier_t *bar;
  char mine[1024];  /* the message right after this thread's failure */
  char later[1024]; /* the same, read after the other thread failed */
  int rc;
} msg_thread;

static void *fail_unknown_job(void *arg) {
  msg_thread *m = arg;
  m->rc = jb_claim(NULL, m->board, "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9", "a", NULL);
  snprintf(m->mine, sizeof m->mine, "%s", jb_errmsg());
  pthread_barrier_wait(m->bar); /* 1: A has failed */
  pthread_barrier_wait(m->bar); /* 2: B has failed */
  snprintf(m->later, sizeof m->later, "%s", jb_errmsg());
  return NULL;
}

static void *fail_empty_who(void *arg) {
  msg_thread *m = arg;
  pthread_barrier_wait(m->bar); /* 1 */
  for (int i = 0; i < 100; i++) m->rc = jb_claim_next(NULL, NULL, NULL, m->board, "", NULL);
  snprintf(m->mine, sizeof m->mine, "%s", jb_errmsg());
  pthread_barrier_wait(m->bar); /* 2 */
  snprintf(m->later, sizeof m->later, "%s", jb_errmsg());
  return NULL;
}

static void error_message_of_one_thread_is_not_changed_by_another(
    void **state) {
  jbt_fixture *f = *state;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  msg_thread a = {f->board, &bar, {0}, {0}, 0}, b = {f->board, &bar, {0}, {0}, 0};
  pthread_t ta, tb;
  /* And this thread's own message must survive both. */
  assert_int_equal(jb_priority_parse(NULL, "main-thread-bad-priority"), JB_EINVAL);
  char main_msg[1024];
  snprintf(main_msg, sizeof main_msg, "%s", jb_errmsg());
  assert_int_equal(pthread_create(&ta, NULL, fail_unknown_job, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, fail_empty_who, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&bar);
  assert_int_equal(a.rc, JB_ENOTFOUND);
  assert_int_equal(b.rc, JB_EINVAL);
  jbt_assert_contains(a.mine, "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9");
  jbt_assert_contains(b.mine, "who");
  assert_string_equal(a.later, a.mine);
  assert_string_equal(b.later, b.mine);
  assert_string_equal(jb_errmsg(), main_msg);
  jbt_assert_contains(main_msg, "main-thread-bad-priority");
}

int main(void) {
  /* A hang detector, not a speed limit: under ASan+UBSan on a loaded
   * 2-CPU machine (CI's third stage runs the fleet tests beside it) the
   * five cases took 217 s, close to the 240 s this was. */
  jbt_watchdog(900);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(eight_threads_on_one_handle_consume_each_job_exactly_once),
      T(racing_threads_claiming_the_same_jobs_give_each_one_owner),
      T(iterators_in_many_threads_stay_ordered_while_jobs_change),
      T(threads_posting_at_once_grow_the_map_safely),
      T(error_message_of_one_thread_is_not_changed_by_another),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
