/*
 * bench_pages.c - `jobboard-bench --pages N`: the library reads behind
 * `jobboard web`'s overview and /jobs pages on a board of N jobs, beside
 * SQLite doing the same job (bench_pages.h).
 */
#include "config.h"

#include "bench_pages.h"
#include "bench_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_SQLITE3
#include <sqlite3.h>
#endif

#define NAMES 20
#define BATCH 1000
#define PAGE 50

const char *const bench_pages_label[BENCH_PAGES_N] = {
    "counts", "first page", "deep page", "name page", "name delayed"};

static double ms_since(int64_t t0) {
  return (double)(bench_mono_ns() - t0) / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void summarise(bench_pages_side *out, int c, double *t) {
  qsort(t, BENCH_PAGES_RUNS, sizeof *t, cmp_d);
  out->median_ms[c] = t[BENCH_PAGES_RUNS / 2];
  out->max_ms[c] = t[BENCH_PAGES_RUNS - 1];
}

static int count_queue(const jb_queue_info *q, void *arg) {
  *(size_t *)arg += q->ready ? 1 : 0;
  return 0;
}

/* The overview's counts (tools/cmd_web.c page_overview). */
static int counts(jb_board *b, size_t *rows) {
  jb_stats st = JB_STATS_INIT;
  st.flags = JB_STATS_NO_WALK;
  int rc = jb_stats_read(&st, b);
  jb_stats_clear(&st);
  if (rc != JB_OK) return rc;
  *rows = 0;
  if ((rc = jb_queues_foreach(b, count_queue, rows, NULL)) != JB_OK)
    return rc;
  jb_iter_options o = {.version = JB_ITER_OPTIONS_VERSION,
                       .where = JB_ITER_CLAIMED | JB_ITER_DELAYED};
  jb_iter *it = NULL;
  if ((rc = jb_iter_open_opts(&it, b, &o)) != JB_OK) return rc;
  const jb_job *j;
  size_t by_name[NAMES] = {0};
  while ((rc = jb_iter_next(&j, it)) == JB_OK && j)
    by_name[strtoul(jb_job_name(j) + 1, NULL, 10) % NAMES]++;
  jb_iter_close(it);
  return rc;
}

/* One page of at most PAGE jobs. */
static int page(jb_board *b, const char *after, const char *name,
                unsigned where, size_t *rows, char cursor[JB_ITER_CURSOR_MAX]) {
  jb_iter_options o = {.version = JB_ITER_OPTIONS_VERSION, .after = after,
                       .name = name, .where = where,
                       .batch = PAGE + 1};
  jb_iter *it = NULL;
  int rc = jb_iter_open_opts(&it, b, &o);
  if (rc != JB_OK) return rc;
  const jb_job *j;
  *rows = 0;
  while (*rows < PAGE && (rc = jb_iter_next(&j, it)) == JB_OK && j) {
    ++*rows;
    if (cursor) jb_iter_cursor(it, cursor);
  }
  jb_iter_close(it);
  return rc;
}

int bench_pages_board(bench_pages_side *out, const char *dir, size_t jobs,
                      char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  jb_board *b = NULL;
  if (bench_lib_open(&b, dir, JB_DURABILITY_NONE, err, errlen)) return -1;
  jb_post *posts = calloc(BATCH, sizeof *posts);
  char(*uuids)[JB_UUID_STRLEN] = calloc(BATCH, sizeof *uuids);
  char nm[NAMES][16];
  int rc = 0;
  if (!posts || !uuids) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  }
  for (int i = 0; i < NAMES; i++) snprintf(nm[i], sizeof nm[i], "n%d", i);
  jb_post tmpl = bench_post();
  int64_t t0 = bench_mono_ns();
  for (size_t done = 0; done < jobs && rc == 0;) {
    size_t n = jobs - done < BATCH ? jobs - done : BATCH;
    for (size_t i = 0; i < n; i++) {
      size_t j = done + i;
      posts[i] = tmpl;
      posts[i].name = nm[j % NAMES];
      posts[i].priority = (jb_priority)(j % 5);
      posts[i].delay_ms = j % 50 == 0 ? 3600000 : 0;
    }
    if (jb_job_post_batch(uuids, b, posts, n) != JB_OK) {
      snprintf(err, errlen, "post: %s", jb_errmsg());
      rc = -1;
    }
    done += n;
  }
  out->build_s = (double)(bench_mono_ns() - t0) / 1e9;
  /* The middle job's cursor: the first pages up to it, untimed. */
  char mid[JB_ITER_CURSOR_MAX] = "";
  if (rc == 0) {
    jb_iter *it = NULL;
    const jb_job *j;
    size_t k = 0;
    if (jb_iter_open(&it, b, 0) != JB_OK) rc = -1;
    while (rc == 0 && k < jobs / 2 && jb_iter_next(&j, it) == JB_OK && j)
      k++;
    if (it) jb_iter_cursor(it, mid);
    jb_iter_close(it);
  }
  double t[BENCH_PAGES_RUNS];
  for (int c = 0; c < BENCH_PAGES_N && rc == 0; c++) {
    for (int r = 0; r < BENCH_PAGES_RUNS && rc == 0; r++) {
      int64_t s = bench_mono_ns();
      size_t rows = 0;
      int st;
      switch (c) {
      case BENCH_PAGES_COUNTS: st = counts(b, &rows); break;
      case BENCH_PAGES_FIRST: st = page(b, NULL, NULL, 0, &rows, NULL); break;
      case BENCH_PAGES_DEEP: st = page(b, mid, NULL, 0, &rows, NULL); break;
      case BENCH_PAGES_NAME: st = page(b, mid, "n7", 0, &rows, NULL); break;
      default:
        st = page(b, NULL, "n10", JB_ITER_DELAYED, &rows, NULL);
        break;
      }
      t[r] = ms_since(s);
      out->rows[c] = rows;
      if (st != JB_OK) {
        snprintf(err, errlen, "%s: %s", bench_pages_label[c], jb_errmsg());
        rc = -1;
      }
    }
    if (rc == 0) summarise(out, c, t);
  }
  free(posts);
  free(uuids);
  jb_board_close(b);
  return rc;
}

#ifdef HAVE_SQLITE3
static int sq(sqlite3 *db, const char *sql, char *err, size_t errlen) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  snprintf(err, errlen, "sqlite: %s: %s", sql, msg ? msg : "?");
  sqlite3_free(msg);
  return -1;
}

/* Run `q` (bound by bind: i64 or text pairs) to its end: its rows. */
static int sq_rows(sqlite3_stmt *q, size_t *rows) {
  int st;
  *rows = 0;
  while ((st = sqlite3_step(q)) == SQLITE_ROW) ++*rows;
  sqlite3_reset(q);
  return st == SQLITE_DONE ? 0 : -1;
}

int bench_pages_sqlite(bench_pages_side *out, const char *dir, size_t jobs,
                       char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char path[4096];
  snprintf(path, sizeof path, "%s/pages.sqlite", dir);
  sqlite3 *db = NULL;
  if (sqlite3_open(path, &db) != SQLITE_OK) {
    snprintf(err, errlen, "sqlite: cannot open %s", path);
    sqlite3_close(db);
    return -1;
  }
  sqlite3_stmt *ins = NULL, *q[BENCH_PAGES_N] = {NULL};
  int rc = sq(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                  "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, name TEXT, "
                  "prank INTEGER, state INTEGER, posting BLOB);"
                  "CREATE INDEX jobs_order ON jobs (prank, seq);"
                  "CREATE INDEX jobs_name ON jobs (name, prank, seq);"
                  "CREATE INDEX jobs_state ON jobs (state, name, prank, seq);",
              err, errlen);
  jb_post tmpl = bench_post();
  int64_t t0 = bench_mono_ns();
  if (rc == 0 &&
      sqlite3_prepare_v2(db, "INSERT INTO jobs (seq, name, prank, state, "
                             "posting) VALUES (?, ?, ?, ?, ?)",
                         -1, &ins, NULL) != SQLITE_OK)
    rc = -1;
  for (size_t done = 0; done < jobs && rc == 0; done += BATCH) {
    rc = sq(db, "BEGIN", err, errlen);
    for (size_t j = done; j < jobs && j < done + BATCH && rc == 0; j++) {
      char name[24];
      snprintf(name, sizeof name, "n%zu", j % NAMES);
      sqlite3_bind_int64(ins, 1, (sqlite3_int64)j + 1);
      sqlite3_bind_text(ins, 2, name, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(ins, 3, 4 - (int)(j % 5));
      sqlite3_bind_int(ins, 4, j % 50 == 0 ? 2 : 0);
      sqlite3_bind_blob(ins, 5, tmpl.details, (int)tmpl.details_len,
                        SQLITE_STATIC);
      if (sqlite3_step(ins) != SQLITE_DONE) rc = -1;
      sqlite3_reset(ins);
    }
    if (rc == 0) rc = sq(db, "COMMIT", err, errlen);
  }
  out->build_s = (double)(bench_mono_ns() - t0) / 1e9;
  static const char *const sql[BENCH_PAGES_N] = {
      "SELECT state, name, count(*) FROM jobs GROUP BY state, name",
      "SELECT seq, name, posting FROM jobs ORDER BY prank, seq LIMIT 50",
      "SELECT seq, name, posting FROM jobs WHERE (prank, seq) > (?1, ?2) "
      "ORDER BY prank, seq LIMIT 50",
      "SELECT seq, name, posting FROM jobs WHERE name = 'n7' AND "
      "(prank, seq) > (?1, ?2) ORDER BY prank, seq LIMIT 50",
      "SELECT seq, name, posting FROM jobs WHERE state = 2 AND name = 'n10' "
      "ORDER BY prank, seq LIMIT 50"};
  for (int c = 0; c < BENCH_PAGES_N && rc == 0; c++)
    if (sqlite3_prepare_v2(db, sql[c], -1, &q[c], NULL) != SQLITE_OK) rc = -1;
  /* The middle row in (prank, seq) order: jobs / 2 rows in. */
  sqlite3_int64 mid_p = 0, mid_s = 0;
  sqlite3_stmt *m = NULL;
  if (rc == 0 &&
      sqlite3_prepare_v2(db, "SELECT prank, seq FROM jobs ORDER BY prank, "
                             "seq LIMIT 1 OFFSET ?",
                         -1, &m, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(m, 1, (sqlite3_int64)(jobs / 2));
    if (sqlite3_step(m) == SQLITE_ROW) {
      mid_p = sqlite3_column_int64(m, 0);
      mid_s = sqlite3_column_int64(m, 1);
    }
  }
  sqlite3_finalize(m);
  double t[BENCH_PAGES_RUNS];
  for (int c = 0; c < BENCH_PAGES_N && rc == 0; c++) {
    if (c == BENCH_PAGES_DEEP || c == BENCH_PAGES_NAME) {
      sqlite3_bind_int64(q[c], 1, mid_p);
      sqlite3_bind_int64(q[c], 2, mid_s);
    }
    for (int r = 0; r < BENCH_PAGES_RUNS && rc == 0; r++) {
      int64_t s = bench_mono_ns();
      rc = sq_rows(q[c], &out->rows[c]);
      t[r] = ms_since(s);
    }
    if (rc == 0) summarise(out, c, t);
  }
  if (rc && !err[0]) snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
  for (int c = 0; c < BENCH_PAGES_N; c++) sqlite3_finalize(q[c]);
  sqlite3_finalize(ins);
  sqlite3_close(db);
  return rc;
}
#else
int bench_pages_sqlite(bench_pages_side *out, const char *dir, size_t jobs,
                       char *err, size_t errlen) {
  (void)dir;
  (void)jobs;
  memset(out, 0, sizeof *out);
  snprintf(err, errlen, "built without SQLite (install libsqlite3-dev "
                        "and run configure again)");
  return -1;
}
#endif
