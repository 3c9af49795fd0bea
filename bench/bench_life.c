/*
 * bench_life.c - bench/bench-life: what a job's life costs.
 *
 *  1. claim-next on a board holding N delayed jobs not yet due (an hour
 *     ahead), beside claim-next on a board holding none: the same ready
 *     jobs are claimed on both, rounds alternating between the boards, so
 *     both meet the same machine state. Each claim-next is one write
 *     transaction; the figure is microseconds per claim-next, the median
 *     of the rounds.
 *     A third board holds as many jobs, ready but VERY_LOW (claim-next
 *     takes the NORMAL ones first): a board of the same size with nothing
 *     delayed, to tell what the delays cost from what the size costs.
 *  2. The cycle (post, claim-next, consume: three commits) of a plain job
 *     beside one posted with a unique key and a time limit, rounds
 *     alternating likewise.
 *  3. With --retention, instead: what retention's pruning adds to the
 *     cycle. Four boards, rounds in turns (a different board first each
 *     round): "unbounded" (retention none: nothing is ever pruned, nor
 *     looked at beyond the setting), "history full" (1,000 records kept,
 *     the history at its bound: each consume drops one), "dead kept"
 *     (10,000 dead letters within their bounds: each consume reads their
 *     count and the oldest one's time) and "dead pruned" (100,000 dead
 *     letters and a bound of 10: each consume drops 64, the most one
 *     write drops; --cycles times --rounds must stay below 1,560, or the
 *     board runs out of letters to prune). Microseconds per cycle, the
 *     median round.
 *
 * Durability none (the unflushed cost; a flushed commit costs the disk's
 * latency whatever the job). It reports and asserts nothing about speed;
 * it fails when an operation fails. Public API only.
 *
 *   bench/bench-life [--delayed N] [--claims K] [--cycles C] [--rounds R]
 *                    [--dir DIR]
 *   bench/bench-life --retention [--cycles C] [--rounds R] [--dir DIR]
 */
#include "jobboard.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "bench-life: %s: %s\n", what,
          rc ? jb_errmsg() : strerror(errno));
  exit(1);
}

static jb_board *open_board(const char *dir) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = JB_DURABILITY_NONE;
  o.map_size = (size_t)2 << 30;
  jb_board *b = NULL;
  int rc = jb_board_open(&b, dir, &o);
  if (rc) die(dir, rc);
  return b;
}

/* Post n jobs in batches of 1000; delay_ms > 0: delayed; at priority
 * `prio`. */
static void post_prio(jb_board *b, size_t n, int64_t delay_ms,
                      jb_priority prio) {
  enum { BATCH = 1000 };
  static jb_post posts[BATCH];
  static char uuids[BATCH][JB_UUID_STRLEN];
  for (size_t i = 0; i < BATCH; i++) {
    posts[i] = (jb_post)JB_POST_INIT;
    posts[i].name = "bench";
    posts[i].delay_ms = delay_ms;
    posts[i].priority = prio;
  }
  for (size_t done = 0; done < n;) {
    size_t m = n - done < BATCH ? n - done : BATCH;
    int rc = jb_job_post_batch(uuids, b, posts, m);
    if (rc) die("post", rc);
    done += m;
  }
}

static void post_many(jb_board *b, size_t n, int64_t delay_ms) {
  post_prio(b, n, delay_ms, JB_PRIORITY_NORMAL);
}

/* Claim and consume k ready jobs; the time of the claim-nexts alone. */
static double claim_k(jb_board *b, size_t k) {
  char uuids[64][JB_UUID_STRLEN];
  double t = 0;
  for (size_t done = 0; done < k;) {
    size_t m = k - done < 64 ? k - done : 64;
    double t0 = now_s();
    for (size_t i = 0; i < m; i++) {
      int rc = jb_claim_next(uuids[i], NULL, NULL, b, "bench", NULL);
      if (rc) die("claim-next", rc);
    }
    t += now_s() - t0;
    for (size_t i = 0; i < m; i++) {
      int rc = jb_consume(b, uuids[i], "bench", 0, NULL);
      if (rc) die("consume", rc);
    }
    done += m;
  }
  return t;
}

/* c cycles: post (plain, or with a unique key and a time limit), claim
 * next, consume. Seconds. */
static double cycles(jb_board *b, size_t c, int with_life, size_t *serial) {
  double t0 = now_s();
  for (size_t i = 0; i < c; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "bench";
    char key[48];
    if (with_life) {
      snprintf(key, sizeof key, "bench-%zu", (*serial)++);
      p.unique_key = key;
      p.time_limit_ms = 60000;
    }
    char uuid[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
    int rc = jb_job_post(uuid, b, &p);
    if (rc) die("post", rc);
    if ((rc = jb_claim_next(got, NULL, NULL, b, "bench", NULL))) die("claim-next", rc);
    if ((rc = jb_consume(b, got, "bench", 0, NULL))) die("consume", rc);
  }
  return now_s() - t0;
}

/* n dead letters: posted in batches, each claimed and trashed. */
static void trash_many(jb_board *b, size_t n) {
  post_many(b, n, 0);
  for (size_t i = 0; i < n; i++) {
    char u[JB_UUID_STRLEN];
    int rc = jb_claim_next(u, NULL, NULL, b, "bench", NULL);
    if (rc == 0) rc = jb_trash(b, u, "bench", 0);
    if (rc) die("trash", rc);
  }
}

static void retain(jb_board *b, const jb_retention *r, unsigned fields) {
  int rc = jb_board_set_retention(b, r, fields);
  if (rc) die("retention", rc);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double median(double *v, size_t n);

/* Part 3 (--retention): the cycle on four boards under `root`. */
static void retention_part(const char *root, size_t ncycles, size_t rounds) {
  static const char *const names[4] = {"unbounded", "history full",
                                       "dead kept", "dead pruned"};
  jb_board *b[4];
  for (int i = 0; i < 4; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/retain-%d", root, i);
    b[i] = open_board(p);
  }
  jb_retention none = {JB_RETAIN_NONE, JB_RETAIN_NONE, JB_RETAIN_NONE,
                       JB_RETAIN_NONE};
  retain(b[0], &none, JB_RETAIN_ALL);
  jb_retention hist = {1000, JB_RETAIN_NONE, JB_RETAIN_NONE, JB_RETAIN_NONE};
  retain(b[1], &hist, JB_RETAIN_ALL);
  size_t serial = 0;
  cycles(b[1], 1000, 0, &serial); /* the history at its bound */
  /* Filled without a bound, so that no trash prunes. */
  jb_retention nodead = {0, 0, JB_RETAIN_NONE, 0};
  retain(b[2], &nodead, JB_RETAIN_DEAD_MAX);
  retain(b[3], &nodead, JB_RETAIN_DEAD_MAX);
  double t0 = now_s();
  trash_many(b[2], 10000);
  trash_many(b[3], 100000);
  printf("made 110,000 dead letters in %.1f s\n", now_s() - t0);
  jb_retention low = {0, 0, 10, 0};
  retain(b[3], &low, JB_RETAIN_DEAD_MAX);
  jb_retention dflt = {0, 0, 0, 0}; /* 10,000 and 30 days: nothing due */
  retain(b[2], &dflt, JB_RETAIN_DEAD_MAX);
  for (int i = 0; i < 4; i++) cycles(b[i], 20, 0, &serial); /* warm */
  double v[4][64];
  for (size_t r = 0; r < rounds; r++)
    for (int i = 0; i < 4; i++) {
      int j = (int)((i + r) % 4);
      v[j][r] = cycles(b[j], ncycles, 0, &serial) / (double)ncycles * 1e6;
    }
  double base = 0;
  for (int i = 0; i < 4; i++) {
    size_t n = 0;
    jb_dead_count(&n, b[i]);
    double m = median(v[i], rounds);
    if (i == 0) base = m;
    printf("cycle, %-13s %8.2f us  ratio %.3f  (dead letters now %zu; "
           "rounds:", names[i], m, m / base, n);
    for (size_t r = 0; r < rounds; r++) printf(" %.2f", v[i][r]);
    printf(")\n");
    jb_board_close(b[i]);
  }
}

static size_t arg_count(const char *name, const char *v) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (*v < '0' || *v > '9' || *end || errno || n == 0 || n > 100000000) {
    fprintf(stderr, "bench-life: %s: '%s' is not a count (1..100000000)\n",
            name, v);
    exit(2);
  }
  return (size_t)n;
}

int main(int argc, char **argv) {
  size_t delayed = 1000000, claims = 20000, ncycles = 20000, rounds = 5;
  const char *dir = NULL;
  int retention = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--retention") == 0) {
      retention = 1;
      if (ncycles == 20000) ncycles = 200;
    } else if (v && strcmp(a, "--delayed") == 0) delayed = arg_count(a, v), i++;
    else if (v && strcmp(a, "--claims") == 0) claims = arg_count(a, v), i++;
    else if (v && strcmp(a, "--cycles") == 0) ncycles = arg_count(a, v), i++;
    else if (v && strcmp(a, "--rounds") == 0) rounds = arg_count(a, v), i++;
    else if (v && strcmp(a, "--dir") == 0) dir = v, i++;
    else {
      fprintf(stderr, "usage: bench-life [--delayed N] [--claims K] "
                      "[--cycles C] [--rounds R] [--dir DIR]\n"
                      "       bench-life --retention [--cycles C] "
                      "[--rounds R] [--dir DIR]\n");
      return 2;
    }
  }
  if (rounds > 64) rounds = 64;
  char tmpl[] = "/tmp/bench-life.XXXXXX";
  char root[512];
  if (dir == NULL) {
    if (mkdtemp(tmpl) == NULL) die("mkdtemp", 0);
    dir = tmpl;
  }
  char pa[600], pb[600], pc[600], pd[600];
  snprintf(root, sizeof root, "%s", dir);
  if (retention) {
    retention_part(root, ncycles, rounds);
    if (dir == tmpl) {
      char cmd[700];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
      if (system(cmd) != 0)
        fprintf(stderr, "bench-life: could not remove %s\n", root);
    }
    return 0;
  }
  snprintf(pa, sizeof pa, "%s/empty", root);
  snprintf(pb, sizeof pb, "%s/delayed", root);
  snprintf(pc, sizeof pc, "%s/cycles", root);
  snprintf(pd, sizeof pd, "%s/sized", root);
  jb_board *ea = open_board(pa), *eb = open_board(pb), *ec = open_board(pc);
  jb_board *ed = open_board(pd);
  post_prio(ed, delayed, 0, JB_PRIORITY_VERY_LOW);
  double t0 = now_s();
  post_many(eb, delayed, 3600 * 1000);
  printf("posted %zu delayed jobs in %.1f s\n", delayed, now_s() - t0);
  size_t n = 0;
  jb_board_count(&n, eb, 0);
  size_t claimable = 1;
  jb_board_count(&claimable, eb, JB_ONLY_UNCLAIMED);
  if (n != delayed || claimable != 0) {
    fprintf(stderr, "bench-life: the delayed board holds %zu (%zu "
                    "claimable)\n", n, claimable);
    return 1;
  }
  /* Warm both up. */
  post_many(ea, 2000, 0), claim_k(ea, 2000);
  post_many(eb, 2000, 0), claim_k(eb, 2000);
  post_many(ed, 2000, 0), claim_k(ed, 2000);
  double va[64], vb[64], vd[64], vp[64], vl[64];
  for (size_t r = 0; r < rounds; r++) {
    jb_board *order[3] = {ea, eb, ed};
    double *out[3] = {&va[r], &vb[r], &vd[r]};
    for (int i = 0; i < 3; i++) post_many(order[i], claims, 0);
    for (int i = 0; i < 3; i++) { /* a different board first each round */
      int j = (int)((i + r) % 3);
      *out[j] = claim_k(order[j], claims) / (double)claims * 1e6;
    }
  }
  size_t serial = 0;
  cycles(ec, 2000, 0, &serial), cycles(ec, 2000, 1, &serial);
  for (size_t r = 0; r < rounds; r++) {
    if (r % 2) {
      vl[r] = cycles(ec, ncycles, 1, &serial) / (double)ncycles * 1e6;
      vp[r] = cycles(ec, ncycles, 0, &serial) / (double)ncycles * 1e6;
    } else {
      vp[r] = cycles(ec, ncycles, 0, &serial) / (double)ncycles * 1e6;
      vl[r] = cycles(ec, ncycles, 1, &serial) / (double)ncycles * 1e6;
    }
  }
  double ma = median(va, rounds), mb = median(vb, rounds);
  double mp = median(vp, rounds), ml = median(vl, rounds);
  printf("claim-next, empty board:              %.2f us (rounds:", ma);
  for (size_t r = 0; r < rounds; r++) printf(" %.2f", va[r]);
  printf(")\nclaim-next, %zu delayed jobs:      %.2f us (rounds:", delayed,
         mb);
  for (size_t r = 0; r < rounds; r++) printf(" %.2f", vb[r]);
  double md = median(vd, rounds);
  printf(")\n  ratio to empty %.3f\n", mb / ma);
  printf("claim-next, %zu VERY_LOW ready jobs: %.2f us (rounds:", delayed,
         md);
  for (size_t r = 0; r < rounds; r++) printf(" %.2f", vd[r]);
  printf(")\n  delayed board to same-size board %.3f\n", mb / md);
  printf("cycle, plain job:                     %.2f us\n", mp);
  printf("cycle, unique key + time limit:       %.2f us  (ratio %.3f)\n", ml,
         ml / mp);
  jb_board_close(ea);
  jb_board_close(eb);
  jb_board_close(ec);
  jb_board_close(ed);
  if (dir == tmpl) {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "bench-life: could not remove %s\n", root);
  }
  return 0;
}
