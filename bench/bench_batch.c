/*
 * bench_batch.c - the posting part of `jobboard-bench` (bench_batch.h).
 */
#include "bench_batch.h"
#include "bench_peers.h"
#include "bench_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sides: the library, the raw LMDB floor (the same records and one
 * change-log event per job, put at the tables' ends: bench_raw_post),
 * and with --peers SQLite. */
enum { B_LIB, B_RAW, B_SQL, NB };
static const char *const side_name[NB] = {"jobboard", "raw", "SQLite"};

/* The kinds: single posts (batch 1), then each --batch size. */
static size_t kind_batch(const bench_part_opts *po, size_t k) {
  return k == 0 ? 1 : po->batch[k - 1];
}

/* Jobs a kind posts per round (bench_batch.h). */
static size_t kind_jobs(const bench_part_opts *po, jb_durability d,
                        size_t b) {
  size_t n = po->post_jobs;
  if (!bench_fast(d)) {
    n = po->sync_jobs;
    if (b > 1 && n < 10 * b) n = 10 * b;
  }
  return (n + b - 1) / b * b;
}

/* Post n jobs on the board in batches of b (1: jb_job_post each).
 * Returns 0, or -1 with jb_errmsg() in err. */
static int lib_post(jb_board *board, size_t n, size_t b, jb_post *posts,
                    char (*uuids)[JB_UUID_STRLEN], char *err, size_t errlen) {
  for (size_t done = 0; done < n; done += b) {
    size_t m = n - done < b ? n - done : b;
    int rc = b == 1 ? jb_job_post(uuids[0], board, &posts[0])
                    : jb_job_post_batch(uuids, board, posts, m);
    if (rc != JB_OK) {
      snprintf(err, errlen, "%s", jb_errmsg());
      return -1;
    }
  }
  return 0;
}

/* One round of one kind on one side: a fresh board (or database) in
 * `sub`, one untimed commit, then n jobs timed; the count checked; the
 * board removed. */
static int post_round(double *secs, int side, const bench_part_opts *po,
                      jb_durability d, const char *sub, size_t n, size_t b,
                      jb_post *posts, char (*uuids)[JB_UUID_STRLEN],
                      const char *what) {
  char err[600];
  int rc = 0;
  size_t warm = b, left = 0;
  if (bench_mkdir(sub, what)) return 1;
  if (side == B_LIB) {
    jb_board *board = NULL;
    rc = bench_lib_open(&board, sub, d, err, sizeof err);
    if (rc == 0) rc = lib_post(board, warm, b, posts, uuids, err, sizeof err);
    double t0 = bench_now_s();
    if (rc == 0) rc = lib_post(board, n, b, posts, uuids, err, sizeof err);
    *secs = bench_now_s() - t0;
    if (rc == 0 && jb_board_count(&left, board, 0) != JB_OK)
      left = (size_t)-1;
    jb_board_close(board);
  } else if (side == B_RAW) {
    bench_raw *raw = NULL;
    rc = bench_raw_open(&raw, sub, d, BENCH_MAP_SIZE, po->value_len, 0,
                        BENCH_RAW_LOG);
    if (rc == 0) rc = bench_raw_post(raw, warm, b);
    double t0 = bench_now_s();
    if (rc == 0) rc = bench_raw_post(raw, n, b);
    *secs = bench_now_s() - t0;
    if (rc == 0) left = bench_raw_count(raw);
    if (rc) {
      snprintf(err, sizeof err, "raw LMDB: %s", bench_raw_strerror(rc));
      rc = -1;
    }
    bench_raw_close(raw);
  } else {
    bench_peer *p = NULL;
    rc = bench_peer_open(&p, sub, d, po->details_len, 1, true, err,
                         sizeof err);
    if (rc == 0) rc = bench_peer_post(p, warm, b, err, sizeof err);
    double t0 = bench_now_s();
    if (rc == 0) rc = bench_peer_post(p, n, b, err, sizeof err);
    *secs = bench_now_s() - t0;
    if (rc == 0) left = bench_peer_left(p);
    bench_peer_close(p);
  }
  bench_remove_dir(sub);
  if (rc != 0) return bench_fail(what, err);
  if (left != n + warm) {
    snprintf(err, sizeof err, "%zu jobs posted, but %zu found on the board",
             n + warm, left);
    return bench_fail(what, left == (size_t)-1 ? "cannot count the jobs" : err);
  }
  return 0;
}

/* A side's keys in a "batch" line: NAME_jobs_per_s, NAME_us_per_job,
 * NAME_ratio_to_single (over its own single posts) and ratio_to_NAME
 * (jobboard's jobs/s over the side's). */
static void json_side(json_t *v, const char *name, double lib, double per_s,
                      size_t n, double secs, double single) {
  char key[64];
  snprintf(key, sizeof key, "%s_jobs_per_s", name);
  json_object_set_new(v, key, json_real(per_s));
  snprintf(key, sizeof key, "%s_us_per_job", name);
  json_object_set_new(v, key, json_real(bench_us_per(n, secs)));
  snprintf(key, sizeof key, "%s_ratio_to_single", name);
  json_object_set_new(v, key, json_real(single > 0 ? per_s / single : 0));
  snprintf(key, sizeof key, "ratio_to_%s", name);
  json_object_set_new(v, key, json_real(per_s > 0 ? lib / per_s : 0));
}

static void print_mode(const bench_part_opts *po, jb_durability d,
                       double secs[NB][BENCH_MAX_LIST + 1]) {
  const char *mode = jb_durability_name(d);
  size_t nk = po->nbatch + 1;
  double single[NB];
  for (int s = 0; s < NB; s++)
    single[s] = bench_per_s(kind_jobs(po, d, 1), secs[s][0]);
  if (!po->json) {
    printf("\n%s, posting: single posts (one transaction each) and batches "
           "(one per batch)\n", mode);
    printf("  %-13s %6s %9s %7s %7s  %9s %7s %7s %6s", "kind", "jobs",
           "jobs/s", "us/job", "gain", "raw jobs/s", "us/job", "gain",
           "ratio");
    if (po->peers)
      printf("  %13s %7s %6s", "SQLite jobs/s", "gain", "ratio");
    putchar('\n');
  }
  for (size_t k = 0; k < nk; k++) {
    size_t b = kind_batch(po, k), n = kind_jobs(po, d, b);
    double lib = bench_per_s(n, secs[B_LIB][k]),
           raw = bench_per_s(n, secs[B_RAW][k]),
           sql = bench_per_s(n, secs[B_SQL][k]);
    if (po->json) {
      json_t *v = json_pack(
          "{s:s,s:s,s:I,s:I,s:I,s:f,s:f,s:f}", "type", "batch", "mode", mode,
          "batch", (json_int_t)b, "jobs", (json_int_t)n, "rounds",
          (json_int_t)po->rounds, "jobboard_jobs_per_s", lib,
          "jobboard_us_per_job", bench_us_per(n, secs[B_LIB][k]),
          "jobboard_ratio_to_single",
          single[B_LIB] > 0 ? lib / single[B_LIB] : 0.0);
      if (v) json_side(v, "raw", lib, raw, n, secs[B_RAW][k], single[B_RAW]);
      if (v && po->peers) {
        json_object_set_new(v, "sqlite_synchronous",
                            json_string(bench_peer_sync_name(d)));
        json_side(v, "sqlite", lib, sql, n, secs[B_SQL][k], single[B_SQL]);
      }
      bench_json_line(v);
      continue;
    }
    char label[40];
    if (b == 1)
      snprintf(label, sizeof label, "single");
    else
      snprintf(label, sizeof label, "batch of %zu", b);
    printf("  %-13s %6zu %9.0f %7.2f %7.2f  %9.0f %7.2f %7.2f %6.2f", label,
           n, lib, bench_us_per(n, secs[B_LIB][k]),
           single[B_LIB] > 0 ? lib / single[B_LIB] : 0, raw,
           bench_us_per(n, secs[B_RAW][k]),
           single[B_RAW] > 0 ? raw / single[B_RAW] : 0, raw > 0 ? lib / raw : 0);
    if (po->peers)
      printf("  %13.0f %7.2f %6.2f", sql,
             single[B_SQL] > 0 ? sql / single[B_SQL] : 0,
             sql > 0 ? lib / sql : 0);
    putchar('\n');
  }
  if (!po->json) {
    printf("  gain: jobs/s over single posts' jobs/s. raw: bare LMDB, the "
           "same records and a\n  change-log event per job, appended at "
           "each table's end (%s);\n  ratio: jobboard's jobs/s over raw's\n",
           bench_raw_flags_name(d));
    if (po->peers)
      printf("  SQLite: WAL, synchronous=%s; an INSERT per job, a batch in "
             "BEGIN IMMEDIATE ...\n  COMMIT. ratio: jobboard's jobs/s over "
             "SQLite's\n", bench_peer_sync_name(d));
  }
}

static int mode_part(const bench_part_opts *po, const char *dir,
                     jb_durability d, jb_post *posts,
                     char (*uuids)[JB_UUID_STRLEN]) {
  const char *mode = jb_durability_name(d);
  size_t nk = po->nbatch + 1;
  double secs[NB][BENCH_MAX_LIST + 1][BENCH_MAX_ROUNDS];
  double med[NB][BENCH_MAX_LIST + 1];
  memset(med, 0, sizeof med);
  char sub[4400], what[128];
  for (unsigned i = 0; i < po->rounds; i++)
    for (size_t k = 0; k < nk; k++)
      for (int s = 0; s < (po->peers ? NB : B_SQL); s++) {
        size_t b = kind_batch(po, k);
        snprintf(sub, sizeof sub, "%s/%s-%s-%zu", dir, side_name[s], mode, b);
        snprintf(what, sizeof what, "posting, %s, %s, batch of %zu", mode,
                 side_name[s], b);
        int rc = post_round(&secs[s][k][i], s, po, d, sub,
                            kind_jobs(po, d, b), b, posts, uuids, what);
        if (rc) return rc;
      }
  for (int s = 0; s < (po->peers ? NB : B_SQL); s++)
    for (size_t k = 0; k < nk; k++)
      med[s][k] = bench_median(secs[s][k], po->rounds);
  print_mode(po, d, med);
  fflush(stdout);
  return 0;
}

int bench_batch_part(const bench_part_opts *po, const char *dir) {
  size_t most = 1;
  for (size_t k = 0; k < po->nbatch; k++)
    if (po->batch[k] > most) most = po->batch[k];
  jb_post *posts = calloc(most, sizeof *posts);
  char (*uuids)[JB_UUID_STRLEN] = calloc(most, sizeof *uuids);
  int rc = 0;
  if (posts == NULL || uuids == NULL)
    rc = bench_fail("posting", "out of memory");
  for (size_t i = 0; rc == 0 && i < most; i++) posts[i] = bench_post();
  for (int i = 0; rc == 0 && i < BENCH_NMODES; i++) {
    jb_durability d = bench_mode_order[i];
    if (po->mode[d]) rc = mode_part(po, dir, d, posts, uuids);
  }
  free(posts);
  free(uuids);
  return rc;
}
