/*
 * bench_worker.c - the worker path part of `jobboard-bench`: the plain
 * API's cycle beside the worker's loops (bench_worker.h).
 */
#include "bench_worker.h"
#include "bench_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define WHO "bench-worker"
#define MAX_ROUNDS 99u

enum { WAY_PLAIN, WAY_FUSED, WAY_MANY, NWAYS };
static const char *const way_key[NWAYS] = {"plain", "fused", "many"};

static int fail(const char *way, const char *what) {
  fflush(stdout);
  fprintf(stderr, "jobboard-bench: worker path, %s: %s: %s\n", way, what,
          jb_errmsg());
  return -1;
}

/* The plain API: n cycles of post, claim-next, consume. */
static int run_plain(jb_board *b, const jb_post *p, size_t n) {
  char uuid[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++) {
    if (jb_job_post(uuid, b, p) != JB_OK) return fail("plain", "post");
    if (jb_claim_next(got, NULL, NULL, b, WHO, NULL) != JB_OK)
      return fail("plain", "claim-next");
    if (jb_consume(b, got, WHO, 0, NULL) != JB_OK) return fail("plain", "consume");
  }
  return 0;
}

/* The next chunk of jobs: at most BENCH_WORKER_POST_BATCH of the `left`,
 * posted in one commit. A producer posts in chunks and the worker drains
 * each before the next arrives: the board holds at most one chunk, as a
 * worker keeping up with its producers sees it. */
static size_t post_chunk(jb_board *b, const jb_post *p, size_t left,
                         const char *way) {
  static jb_post posts[BENCH_WORKER_POST_BATCH];
  size_t k = left < BENCH_WORKER_POST_BATCH ? left : BENCH_WORKER_POST_BATCH;
  for (size_t i = 0; i < k; i++) posts[i] = *p;
  if (jb_job_post_batch(NULL, b, posts, k) != JB_OK) {
    fail(way, "post batch");
    return 0;
  }
  return k;
}

static int left_over(const char *way, size_t done, size_t n) {
  if (done == n) return 0;
  fflush(stdout);
  fprintf(stderr, "jobboard-bench: worker path, %s: %zu jobs done of %zu\n",
          way, done, n);
  return -1;
}

/* Each chunk: claim-next once, then consume-and-claim-next to its end. */
static int run_fused(jb_board *b, const jb_post *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t k = post_chunk(b, p, n - done, "fused");
    if (k == 0) return -1;
    char uuid[JB_UUID_STRLEN];
    uint64_t token = 0;
    if (jb_claim_next(uuid, NULL, &token, b, WHO, NULL) != JB_OK)
      return fail("fused", "claim-next");
    while (uuid[0] != '\0') {
      if (jb_consume_and_claim_next(uuid, NULL, &token, b, uuid, WHO,
                                        token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                        NULL) != JB_OK)
        return fail("fused", "consume and claim next");
      done++;
    }
  }
  return left_over("fused", done, n);
}

/* Each chunk: claim up to BENCH_WORKER_BATCH and consume them, to its
 * end. */
static int run_many(jb_board *b, const jb_post *p, size_t n) {
  static char uuids[BENCH_WORKER_BATCH][JB_UUID_STRLEN];
  uint64_t tokens[BENCH_WORKER_BATCH];
  jb_consume_item items[BENCH_WORKER_BATCH];
  int st[BENCH_WORKER_BATCH];
  size_t done = 0;
  while (done < n) {
    if (post_chunk(b, p, n - done, "many") == 0) return -1;
    for (;;) {
      size_t got = 0;
      int rc = jb_claim_next_many(&got, uuids, tokens, NULL, b, WHO,
                                      NULL, BENCH_WORKER_BATCH);
      if (rc == JB_ENOTFOUND) break;
      if (rc != JB_OK) return fail("many", "claim next many");
      for (size_t i = 0; i < got; i++)
        items[i] = (jb_consume_item){uuids[i], WHO, tokens[i],
                                     JB_OUTCOME_SUCCESS, NULL, 0};
      if (jb_consume_many(st, b, items, got, NULL, NULL) != JB_OK)
        return fail("many", "consume many");
      for (size_t i = 0; i < got; i++)
        if (st[i] != JB_OK) return fail("many", "consume many (an item)");
      done += got;
    }
  }
  return left_over("many", done, n);
}

static int run_way(int way, jb_board *b, const jb_post *p, size_t n) {
  switch (way) {
  case WAY_PLAIN: return run_plain(b, p, n);
  case WAY_FUSED: return run_fused(b, p, n);
  default: return run_many(b, p, n);
  }
}

static void print(const bench_worker_opts *o, const double rate[NWAYS]) {
  const char *mode = jb_durability_name(o->durability);
  if (o->json) {
    json_t *v = json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:I,s:s}", "type", "worker", "mode", mode,
        "jobs", (json_int_t)o->jobs, "rounds", (json_int_t)o->rounds, "batch",
        (json_int_t)BENCH_WORKER_BATCH, "post_batch",
        (json_int_t)BENCH_WORKER_POST_BATCH, "posts", "timed");
    char key[64];
    for (int w = 0; v && w < NWAYS; w++) {
      snprintf(key, sizeof key, "%s_jobs_per_s", way_key[w]);
      json_object_set_new(v, key, json_real(rate[w]));
      snprintf(key, sizeof key, "%s_us_per_job", way_key[w]);
      json_object_set_new(v, key, json_real(rate[w] > 0 ? 1e6 / rate[w] : 0));
      if (w > 0) {
        snprintf(key, sizeof key, "%s_ratio", way_key[w]);
        json_object_set_new(
            v, key, json_real(rate[0] > 0 ? rate[w] / rate[0] : 0));
      }
    }
    if (v) {
      json_dumpf(v, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
      putchar('\n');
      json_decref(v);
    }
    return;
  }
  static const char *const label[NWAYS] = {
      "plain API", "consume+claim-next", "claim/consume x64"};
  static const char *const what[NWAYS] = {
      "post, claim-next, consume: 3 commits/job",
      "batch posts, then 1 commit/job",
      "batch posts, then 2 commits/64 jobs"};
  printf("\n%s, worker path, 1 process, %zu jobs (posts timed)   jobs/s  "
         "us/job  ratio\n", mode, o->jobs);
  for (int w = 0; w < NWAYS; w++) {
    printf("  %-19s %-40s %8.0f %7.2f", label[w], what[w], rate[w],
           rate[w] > 0 ? 1e6 / rate[w] : 0.0);
    if (w > 0 && rate[0] > 0) printf("  %5.2f", rate[w] / rate[0]);
    putchar('\n');
  }
}

int bench_worker(const bench_worker_opts *o) {
  jb_board *b[NWAYS] = {NULL, NULL, NULL};
  double secs[NWAYS][MAX_ROUNDS];
  unsigned rounds = o->rounds > MAX_ROUNDS ? MAX_ROUNDS : o->rounds;
  int ret = 1;
  for (int w = 0; w < NWAYS; w++) {
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/%s", o->dir, way_key[w]);
    jb_board_options bo = JB_BOARD_OPTIONS_INIT;
    bo.flags = JB_OPEN_CREATE;
    bo.durability = o->durability;
    bo.map_size = (size_t)64 << 20;
    if (mkdir(dir, 0775) != 0 || jb_board_open(&b[w], dir, &bo) != JB_OK) {
      fail(way_key[w], "open");
      goto out;
    }
    if (run_way(w, b[w], o->post, o->warmup)) goto out;
  }
  for (unsigned r = 0; r < rounds; r++)
    for (int w = 0; w < NWAYS; w++) {
      double t0 = bench_now_s();
      if (run_way(w, b[w], o->post, o->jobs)) goto out;
      secs[w][r] = bench_now_s() - t0;
    }
  double rate[NWAYS];
  for (int w = 0; w < NWAYS; w++) {
    size_t left = 1;
    if (jb_board_count(&left, b[w], 0) != JB_OK || left != 0) {
      fail(way_key[w], "jobs left behind");
      goto out;
    }
    double med = bench_median(secs[w], rounds);
    rate[w] = med > 0 ? (double)o->jobs / med : 0;
  }
  print(o, rate);
  ret = 0;
out:
  for (int w = 0; w < NWAYS; w++) jb_board_close(b[w]);
  return ret;
}
