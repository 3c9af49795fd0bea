/*
 * bench_threads.c - `jobboard-bench --threads LIST` (bench_threads.h).
 */
#include "bench_threads.h"
#include "bench_peers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WARMUP_JOBS 2000u
#define WARMUP_SYNC_JOBS 20u

/* The two sides of a run. */
enum { T_LIB, T_SQL, NT };

/* The start: every racer waits until `state` leaves 0 (1: run, -1: a
 * thread could not be started, return at once). */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int state;
} gate;

/* One racing thread: its side's handle, its share of the cycles. */
typedef struct {
  pthread_t tid;
  gate *start;
  jb_board *board;   /* T_LIB: shared by every thread */
  bench_peer *peer;  /* T_SQL: this thread's own connection */
  size_t n;
  int rc;
  char err[600];
} racer;

static void *racer_main(void *arg) {
  racer *r = arg;
  pthread_mutex_lock(&r->start->lock);
  while (r->start->state == 0)
    pthread_cond_wait(&r->start->cond, &r->start->lock);
  int go = r->start->state > 0;
  pthread_mutex_unlock(&r->start->lock);
  if (!go) return NULL;
  r->rc = r->board ? bench_lib_cycles(r->board, r->n, NULL, r->err,
                                      sizeof r->err)
                   : bench_peer_cycles(r->peer, r->n, r->err, sizeof r->err);
  return NULL;
}

static void open_gate(gate *g, int state) {
  pthread_mutex_lock(&g->lock);
  g->state = state;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
}

/* One run: nthreads threads, total cycles split evenly, on `board` (lib)
 * or on peers[0..nthreads-1] (SQLite). *secs from the common start to
 * the last join. Returns 0, or 1 after a message. */
static int race(double *secs, unsigned nthreads, size_t total,
                jb_board *board, bench_peer **peers, const char *what) {
  racer r[BENCH_MAX_THREADS];
  gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  unsigned started = 0;
  for (unsigned i = 0; i < nthreads; i++) {
    r[i] = (racer){0};
    r[i].start = &g;
    r[i].board = board;
    r[i].peer = board ? NULL : peers[i];
    r[i].n = total / nthreads + (i < total % nthreads ? 1 : 0);
    if (pthread_create(&r[i].tid, NULL, racer_main, &r[i]) != 0) break;
    started++;
  }
  open_gate(&g, started == nthreads ? 1 : -1);
  double t0 = bench_now_s();
  for (unsigned i = 0; i < started; i++) pthread_join(r[i].tid, NULL);
  *secs = bench_now_s() - t0;
  if (started < nthreads) return bench_fail(what, "cannot start a thread");
  for (unsigned i = 0; i < nthreads; i++)
    if (r[i].rc != 0) {
      char w[160];
      snprintf(w, sizeof w, "%s, thread %u", what, i + 1);
      return bench_fail(w, r[i].err);
    }
  return 0;
}

/* Make dir/NAME-MODE; its path in out. 0, or 1 after a message. */
static int make_dir(char *out, size_t len, const char *dir, const char *name,
                    const char *mode) {
  snprintf(out, len, "%s/%s-%s", dir, name, mode);
  return bench_mkdir(out, "threads");
}

/* A side's figures for one mode: the median seconds per count. */
typedef struct {
  double secs[BENCH_MAX_LIST];
  unsigned long long busy; /* SQLite: operations run again after BUSY */
} side_figs;

static void print_mode(const bench_part_opts *po, jb_durability d, size_t n,
                       const side_figs f[NT]) {
  const char *mode = jb_durability_name(d);
  double base[NT];
  for (int s = 0; s < NT; s++) base[s] = bench_per_s(n, f[s].secs[0]);
  if (po->json) {
    for (size_t k = 0; k < po->nthreads; k++) {
      double lib = bench_per_s(n, f[T_LIB].secs[k]);
      json_t *v = json_pack(
          "{s:s,s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:f}", "type", "threads", "mode",
          mode, "threads", (json_int_t)po->threads[k], "cycles",
          (json_int_t)n, "rounds", (json_int_t)po->rounds, "base_threads",
          (json_int_t)po->threads[0], "jobboard_cycles_per_s", lib,
          "jobboard_us_per_cycle", bench_us_per(n, f[T_LIB].secs[k]),
          "jobboard_scaling", base[T_LIB] > 0 ? lib / base[T_LIB] : 0.0);
      if (v && po->peers) {
        double sql = bench_per_s(n, f[T_SQL].secs[k]);
        json_object_set_new(v, "sqlite_synchronous",
                            json_string(bench_peer_sync_name(d)));
        json_object_set_new(v, "sqlite_cycles_per_s", json_real(sql));
        json_object_set_new(v, "sqlite_us_per_cycle",
                            json_real(bench_us_per(n, f[T_SQL].secs[k])));
        json_object_set_new(v, "sqlite_scaling",
                            json_real(base[T_SQL] > 0 ? sql / base[T_SQL] : 0));
        json_object_set_new(v, "sqlite_busy_retries",
                            json_integer((json_int_t)f[T_SQL].busy));
        json_object_set_new(v, "ratio_to_sqlite",
                            json_real(sql > 0 ? lib / sql : 0));
      }
      bench_json_line(v);
    }
    return;
  }
  printf("\n%s, threads of one process sharing one board handle, %zu cycles "
         "in all per run\n", mode, n);
  printf("  %-9s %12s %9s %7s", "threads", "cycles/s", "us/cycle", "scaling");
  if (po->peers)
    printf("   %15s %7s %7s", "SQLite cycles/s", "scaling", "ratio");
  putchar('\n');
  for (size_t k = 0; k < po->nthreads; k++) {
    double lib = bench_per_s(n, f[T_LIB].secs[k]);
    printf("  %-9u %12.0f %9.2f %7.2f", po->threads[k], lib,
           bench_us_per(n, f[T_LIB].secs[k]),
           base[T_LIB] > 0 ? lib / base[T_LIB] : 0);
    if (po->peers) {
      double sql = bench_per_s(n, f[T_SQL].secs[k]);
      printf("   %15.0f %7.2f %7.2f", sql,
             base[T_SQL] > 0 ? sql / base[T_SQL] : 0, sql > 0 ? lib / sql : 0);
    }
    putchar('\n');
  }
  printf("  scaling: cycles/s over those of %u thread%s\n", po->threads[0],
         po->threads[0] == 1 ? "" : "s");
  if (po->peers)
    printf("  SQLite: WAL, synchronous=%s, a connection per thread; %llu "
           "operation%s run\n  again after SQLITE_BUSY. ratio: jobboard's "
           "cycles/s over SQLite's\n", bench_peer_sync_name(d),
           f[T_SQL].busy, f[T_SQL].busy == 1 ? "" : "s");
}

static int mode_part(const bench_part_opts *po, const char *dir,
                     jb_durability d) {
  const char *mode = jb_durability_name(d);
  size_t n = bench_fast(d) ? po->jobs : po->sync_jobs;
  size_t warm = bench_fast(d) ? WARMUP_JOBS : WARMUP_SYNC_JOBS;
  unsigned maxt = 0;
  for (size_t k = 0; k < po->nthreads; k++)
    if (po->threads[k] > maxt) maxt = po->threads[k];
  char sub[4400], err[600], what[96];
  jb_board *board = NULL;
  bench_peer *peers[BENCH_MAX_THREADS] = {0};
  side_figs f[NT];
  memset(f, 0, sizeof f);
  int ret;
  snprintf(what, sizeof what, "threads, %s, jobboard", mode);
  if ((ret = make_dir(sub, sizeof sub, dir, "jobboard", mode))) goto out;
  if (bench_lib_open(&board, sub, d, err, sizeof err) ||
      bench_lib_cycles(board, warm, NULL, err, sizeof err)) {
    ret = bench_fail(what, err);
    goto out;
  }
  if (po->peers) {
    snprintf(what, sizeof what, "threads, %s, SQLite", mode);
    if ((ret = make_dir(sub, sizeof sub, dir, "sqlite", mode))) goto out;
    for (unsigned i = 0; i < maxt; i++)
      if (bench_peer_open(&peers[i], sub, d, po->details_len, i + 1, i == 0,
                          err, sizeof err)) {
        ret = bench_fail(what, err);
        goto out;
      }
    if (bench_peer_cycles(peers[0], warm, err, sizeof err)) {
      ret = bench_fail(what, err);
      goto out;
    }
  }
  double secs[NT][BENCH_MAX_LIST][BENCH_MAX_ROUNDS];
  for (unsigned i = 0; i < po->rounds; i++)
    for (size_t k = 0; k < po->nthreads; k++)
      for (int s = 0; s < (po->peers ? NT : 1); s++) {
        snprintf(what, sizeof what, "threads, %s, %s, %u threads", mode,
                 s == T_LIB ? "jobboard" : "SQLite", po->threads[k]);
        if ((ret = race(&secs[s][k][i], po->threads[k], n,
                        s == T_LIB ? board : NULL, peers, what)))
          goto out;
      }
  for (int s = 0; s < NT; s++)
    for (size_t k = 0; k < po->nthreads; k++)
      f[s].secs[k] = bench_median(secs[s][k], po->rounds);
  /* Whole cycles leave nothing behind: a figure over lost jobs is none. */
  size_t left;
  if (jb_board_count(&left, board, 0) != JB_OK || left != 0) {
    ret = bench_fail("threads, jobboard", "jobs left behind after whole "
                     "cycles (or the board cannot be counted)");
    goto out;
  }
  if (po->peers) {
    if (bench_peer_left(peers[0]) != 0) {
      ret = bench_fail("threads, SQLite", "jobs left behind after whole "
                       "cycles (or the table cannot be counted)");
      goto out;
    }
    for (unsigned i = 0; i < maxt; i++) f[T_SQL].busy += bench_peer_busy(peers[i]);
  }
  print_mode(po, d, n, f);
  fflush(stdout);
out:
  jb_board_close(board);
  for (unsigned i = 0; i < maxt; i++) bench_peer_close(peers[i]);
  return ret;
}

int bench_threads_part(const bench_part_opts *po, const char *dir) {
  if (po->nthreads == 0) return 0;
  for (int i = 0; i < BENCH_NMODES; i++) {
    jb_durability d = bench_mode_order[i];
    if (!po->mode[d]) continue;
    int rc = mode_part(po, dir, d);
    if (rc) return rc;
  }
  return 0;
}
