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

/* Post and publish n jobs (untimed) into ids. */
static int publish_n(jb_board *b, jb_sync_conn *c, const bench_redis_opts *o,
                     uuid_text *ids, size_t n, char *err, size_t errlen) {
  for (size_t i = 0; i < n; i++)
    if (jb_job_post(ids[i], b, o->post) != JB_OK ||
        jb_sync_publish(b, c, ids[i]) != JB_OK)
      return fail(err, errlen, "post + publish");
  return 0;
}

/* Consume the n jobs of ids (untimed; through Redis). */
static int consume_n(jb_board *b, const bench_redis_opts *o, uuid_text *ids,
                     size_t n, char *err, size_t errlen) {
  for (size_t i = 0; i < n; i++)
    if (consume_plain(b, ids[i], o->who) != JB_OK)
      return fail(err, errlen, "consume after claim-next");
  return 0;
}

/* Attach b to c claiming the Redis-decided jobs of claim-next many one by
 * one (a round trip each: the path before claim_many.lua) or together
 * (the run of them in one script call, one round trip).
 * JOBBOARD_SYNC_CLAIM_MANY is read by jb_sync_attach; the caller's value
 * is put back. */
static int attach_as(jb_board *b, jb_sync_conn *c, bool together,
                     char *err, size_t errlen) {
  const char *had = getenv("JOBBOARD_SYNC_CLAIM_MANY");
  char keep[16] = "";
  if (had) snprintf(keep, sizeof keep, "%s", had);
  if (together)
    unsetenv("JOBBOARD_SYNC_CLAIM_MANY");
  else
    setenv("JOBBOARD_SYNC_CLAIM_MANY", "0", 1);
  int rc = jb_sync_attach(b, c);
  if (had)
    setenv("JOBBOARD_SYNC_CLAIM_MANY", keep, 1);
  else
    unsetenv("JOBBOARD_SYNC_CLAIM_MANY");
  return rc == JB_OK ? 0 : fail(err, errlen, "attach");
}

/* claim-next over Redis-decided jobs: n single claims (jb_claim_next, a
 * round trip each), then, on 2n jobs, jb_claim_next_many of
 * BENCH_REDIS_BATCH jobs one by one and in one call in turns, batch by
 * batch (the same sitting, the same board). A batch's per-job figure is
 * its time over the jobs it claimed. */
static int measure_claim_next(bench_redis_figs *f, jb_board *b,
                              jb_sync_conn *c, const bench_redis_opts *o,
                              uuid_text *ids, int64_t *v, size_t n,
                              char *err, size_t errlen) {
  if (publish_n(b, c, o, ids, n, err, errlen)) return -1;
  int64_t wall = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t t0 = mono_ns();
    if (jb_claim_next(ids[i], NULL, NULL, b, o->who, NULL) != JB_OK)
      return fail(err, errlen, "claim-next through Redis");
    v[i] = mono_ns() - t0;
    wall += v[i];
  }
  phase(&f->claim_next, v, n, wall);
  if (consume_n(b, o, ids, n, err, errlen)) return -1;

  const size_t k = BENCH_REDIS_BATCH;
  size_t batches = n / k ? n / k : 1;
  uuid_text *got = calloc(2 * batches * k, sizeof *got);
  int64_t *lat[2] = {calloc(batches, sizeof(int64_t)),
                     calloc(batches, sizeof(int64_t))};
  int64_t walls[2] = {0, 0};
  size_t jobs[2] = {0, 0};
  int rc = -1;
  if (!got || !lat[0] || !lat[1]) {
    snprintf(err, errlen, "out of memory for %zu batches", batches);
    goto out;
  }
  if (publish_n(b, c, o, got, 2 * batches * k, err, errlen)) goto out;
  for (size_t i = 0; i < 2 * batches; i++) {
    int pipe = (int)(i % 2); /* one by one first, then in one call */
    if (attach_as(b, c, pipe, err, errlen)) goto out;
    size_t claimed = 0;
    int64_t t0 = mono_ns();
    if (jb_claim_next_many(&claimed, got + i * k, NULL, NULL, b, o->who,
                           NULL, k) != JB_OK) {
      fail(err, errlen, "claim-next many through Redis");
      goto out;
    }
    int64_t t = mono_ns() - t0;
    if (claimed != k) {
      snprintf(err, errlen, "claim-next many claimed %zu of %zu", claimed, k);
      goto out;
    }
    lat[pipe][i / 2] = t / (int64_t)k;
    walls[pipe] += t;
    jobs[pipe] += claimed;
  }
  for (int p = 0; p < 2; p++) {
    bench_redis_phase *ph = p ? &f->many_one_call : &f->many_one_by_one;
    bench_lat_summarise(&ph->lat, lat[p], batches);
    ph->ops_per_s = walls[p] > 0 ? (double)jobs[p] * 1e9 / (double)walls[p]
                                 : 0;
  }
  if (attach_as(b, c, true, err, errlen) ||
      consume_n(b, o, got, 2 * batches * k, err, errlen))
    goto out;
  rc = 0;
out:
  free(got);
  free(lat[0]);
  free(lat[1]);
  return rc;
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
      measure_jobs(f, b, c, o, ids, v, w, x, n, err, errlen) ||
      measure_claim_next(f, b, c, o, ids, v, n, err, errlen))
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
  f->many_ratio = f->claim_next.lat.p50_us > 0
                      ? f->many_one_call.lat.p50_us / f->claim_next.lat.p50_us
                      : 0;
  f->loop_ratio = f->claim_next.lat.p50_us > 0
                      ? f->many_one_by_one.lat.p50_us /
                            f->claim_next.lat.p50_us
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
