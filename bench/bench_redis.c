/*
 * bench_redis.c - the job operations through Redis, for `jobboard-bench
 * --redis URL` (see bench_redis.h). Public API only: jobboard.h and
 * jobboard_sync.h.
 */
#include "bench_redis.h"
#include "jobboard_sync.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Untimed jobs (and pings, local commits) before the phases: the first
 * ones load the scripts' pages, fault in the board and fill LMDB's free
 * list. */
#define WARMUP 50u

typedef char uuid_text[JB_UUID_STRLEN];

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fail(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, jb_errmsg());
  return -1;
}

/* One phase's figures from its n samples (ns, sorted here) and wall time. */
static void phase(bench_redis_phase *p, int64_t *v, size_t n, int64_t wall) {
  bench_lat_summarise(&p->lat, v, n);
  p->ops_per_s = wall > 0 ? (double)n * 1e9 / (double)wall : 0;
}

/* Untimed full cycles through Redis (post, publish, claim, consume). */
static int warm_up(jb_board *b, jb_sync_conn *c, const bench_redis_opts *o,
                   char *err, size_t errlen) {
  uuid_text u;
  for (unsigned i = 0; i < WARMUP; i++) {
    if (jb_sync_ping(c) != JB_OK) return fail(err, errlen, "warm-up ping");
    if (jb_job_post(u, b, o->post) != JB_OK)
      return fail(err, errlen, "warm-up post");
    if (jb_sync_publish(b, c, u) != JB_OK)
      return fail(err, errlen, "warm-up publish");
    if (jb_claim(NULL, b, u, o->who, NULL) != JB_OK)
      return fail(err, errlen, "warm-up claim");
    if (jb_consume(b, u, o->who, 0, NULL) != JB_OK)
      return fail(err, errlen, "warm-up consume");
  }
  return 0;
}

/* Round trips: n PINGs. */
static int measure_ping(bench_redis_figs *f, jb_sync_conn *c, int64_t *v,
                        size_t n, char *err, size_t errlen) {
  int64_t start = mono_ns();
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (jb_sync_ping(c) != JB_OK) return fail(err, errlen, "ping");
    v[i] = mono_ns() - t0;
  }
  phase(&f->ping, v, n, mono_ns() - start);
  return 0;
}

/* Local commits: n claims and n abandons of one job decided locally. */
static int measure_local(bench_redis_figs *f, jb_board *b,
                         const bench_redis_opts *o, int64_t *v, int64_t *w,
                         size_t n, char *err, size_t errlen) {
  uuid_text u;
  if (jb_job_post(u, b, o->post) != JB_OK)
    return fail(err, errlen, "local post");
  for (unsigned i = 0; i < WARMUP; i++)
    if (jb_claim(NULL, b, u, o->who, NULL) != JB_OK ||
        jb_abandon(b, u, o->who, 0) != JB_OK)
      return fail(err, errlen, "local warm-up");
  int64_t wall_claim = 0, wall_abandon = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (jb_claim(NULL, b, u, o->who, NULL) != JB_OK)
      return fail(err, errlen, "local claim");
    int64_t t1 = mono_ns();
    if (jb_abandon(b, u, o->who, 0) != JB_OK)
      return fail(err, errlen, "local abandon");
    int64_t t2 = mono_ns();
    v[i] = t1 - t0;
    w[i] = t2 - t1;
    wall_claim += v[i];
    wall_abandon += w[i];
  }
  phase(&f->local_claim, v, n, wall_claim);
  phase(&f->local_abandon, w, n, wall_abandon);
  if (jb_claim(NULL, b, u, o->who, NULL) != JB_OK ||
      jb_consume(b, u, o->who, 0, NULL) != JB_OK)
    return fail(err, errlen, "local consume");
  return 0;
}

/* A plain claim, abandon and consume, as each_job and the floor take
 * them. */
static int claim_plain(jb_board *b, const char *uuid, const char *who) {
  return jb_claim(NULL, b, uuid, who, NULL);
}
static int abandon_plain(jb_board *b, const char *uuid, const char *who) {
  return jb_abandon(b, uuid, who, 0);
}
static int consume_plain(jb_board *b, const char *uuid, const char *who) {
  return jb_consume(b, uuid, who, 0, NULL);
}

/* The floor of a claim through Redis as one sequence: a round trip (PING)
 * then a local commit (the claim, or the abandon, of a job decided
 * locally, in turns), timed together. The same pattern as a claim's (a
 * round trip, then a commit), so the scheduler places client and server
 * alike for both; the round trip and local commit phases, measured apart,
 * may not be (docs/BENCHMARKS.md, "A claim through Redis"). */
static int measure_floor(bench_redis_figs *f, jb_board *b, jb_sync_conn *c,
                         const bench_redis_opts *o, int64_t *v, size_t n,
                         char *err, size_t errlen) {
  uuid_text u;
  if (jb_job_post(u, b, o->post) != JB_OK)
    return fail(err, errlen, "floor post");
  int64_t start = mono_ns();
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (jb_sync_ping(c) != JB_OK) return fail(err, errlen, "floor ping");
    if ((i % 2 == 0 ? claim_plain : abandon_plain)(b, u, o->who) != JB_OK)
      return fail(err, errlen, "floor commit");
    v[i] = mono_ns() - t0;
  }
  phase(&f->floor, v, n, mono_ns() - start);
  if ((n % 2 == 0 && jb_claim(NULL, b, u, o->who, NULL) != JB_OK) ||
      jb_consume(b, u, o->who, 0, NULL) != JB_OK)
    return fail(err, errlen, "floor consume");
  return 0;
}

/* One operation (jb_claim, jb_consume) on each job, timed. */
static int each_job(bench_redis_phase *p,
                    int (*op)(jb_board *, const char *, const char *),
                    const char *what, jb_board *b, const bench_redis_opts *o,
                    uuid_text *ids, int64_t *v, size_t n, char *err,
                    size_t errlen) {
  int64_t start = mono_ns();
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (op(b, ids[i], o->who) != JB_OK) return fail(err, errlen, what);
    v[i] = mono_ns() - t0;
  }
  phase(p, v, n, mono_ns() - start);
  return 0;
}

/* Post + publish each job; then claim each; then consume each. */
static int measure_jobs(bench_redis_figs *f, jb_board *b, jb_sync_conn *c,
                        const bench_redis_opts *o, uuid_text *ids,
                        int64_t *v, int64_t *w, int64_t *x, size_t n,
                        char *err, size_t errlen) {
  int64_t start = mono_ns(), post_wall = 0, pub_wall = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (jb_job_post(ids[i], b, o->post) != JB_OK)
      return fail(err, errlen, "post");
    int64_t t1 = mono_ns();
    if (jb_sync_publish(b, c, ids[i]) != JB_OK)
      return fail(err, errlen, "publish");
    int64_t t2 = mono_ns();
    v[i] = t1 - t0;
    w[i] = t2 - t1;
    x[i] = t2 - t0;
    post_wall += v[i];
    pub_wall += w[i];
  }
  phase(&f->post_publish, x, n, mono_ns() - start);
  phase(&f->post, v, n, post_wall);
  phase(&f->publish, w, n, pub_wall);

  return each_job(&f->claim, claim_plain, "claim through Redis", b, o, ids,
                  v, n, err, errlen) ||
         each_job(&f->consume, consume_plain, "consume through Redis", b, o,
                  ids, v, n, err, errlen);
}

int bench_redis(bench_redis_figs *f, const char *dir,
                const bench_redis_opts *o, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  size_t n = o->jobs;
  if (o->ns) {
    snprintf(f->ns, sizeof f->ns, "%s", o->ns);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(f->ns, sizeof f->ns, "jobboard-bench-%ld-%lld", (long)getpid(),
             (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
  }
  jb_board *b = NULL;
  jb_sync_conn *c = NULL;
  uuid_text *ids = calloc(n, sizeof *ids);
  int64_t *v = calloc(n, sizeof *v), *w = calloc(n, sizeof *w),
          *x = calloc(n, sizeof *x);
  int rc = -1;
  if (ids == NULL || v == NULL || w == NULL || x == NULL) {
    snprintf(err, errlen, "out of memory for %zu jobs", n);
    goto out;
  }
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = o->durability;
  if (jb_board_open(&b, dir, &bo) != JB_OK) {
    fail(err, errlen, "open");
    goto out;
  }
  jb_sync_options so;
  so = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  so.url = o->url;
  so.ns = f->ns;
  if (jb_sync_connect(&c, &so) != JB_OK) {
    fail(err, errlen, "connect");
    goto out;
  }
  snprintf(f->server_version, sizeof f->server_version, "%s",
           jb_sync_server_version(c));
  if (jb_sync_attach(b, c) != JB_OK) {
    fail(err, errlen, "attach");
    goto out;
  }
  if (warm_up(b, c, o, err, errlen) ||
      measure_ping(f, c, v, n, err, errlen) ||
      measure_local(f, b, o, v, w, n, err, errlen) ||
      measure_floor(f, b, c, o, v, n, err, errlen) ||
      measure_jobs(f, b, c, o, ids, v, w, x, n, err, errlen))
    goto out;
  size_t left = 0;
  if (jb_board_count(&left, b, 0) != JB_OK) {
    fail(err, errlen, "count");
    goto out;
  }
  if (left != 0) {
    snprintf(err, errlen, "%zu jobs left on the board after consuming all",
             left);
    goto out;
  }
  double floor_us = f->ping.lat.p50_us + f->local_claim.lat.p50_us;
  f->claim_ratio = floor_us > 0 ? f->claim.lat.p50_us / floor_us : 0;
  f->floor_ratio = f->floor.lat.p50_us > 0
                       ? f->claim.lat.p50_us / f->floor.lat.p50_us
                       : 0;
  rc = 0;
out:
  if (b) jb_sync_detach(b);
  jb_board_close(b);
  jb_sync_close(c);
  free(ids);
  free(v);
  free(w);
  free(x);
  return rc;
}
