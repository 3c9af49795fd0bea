/*
 * bench_names.c - claim-next by job name: jobboard's index of ready jobs
 * by name beside SQLite with an index on the name (bench_names.h).
 */
#include "config.h"

#include "bench_names.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_SQLITE3
#include <sqlite3.h>
#endif

const char *const bench_names_label[BENCH_NAMES_N] = {
    [BENCH_NAMES_ONE] = "one name",
    [BENCH_NAMES_THREE] = "three names",
    [BENCH_NAMES_PREFIX] = "prefix n1*",
    [BENCH_NAMES_ALL] = "every name",
    [BENCH_NAMES_PAUSED_HEAD] = "every name, head paused",
    [BENCH_NAMES_PAUSED_HALF] = "every name, head+odd paused",
};

/* The name posted first, with this many jobs ahead of the others. */
#define HEAD_JOBS 100000
#define BATCH 1000

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The names a scenario's claim chooses (random ones drawn with `seed`). */
static size_t pick_names(int sc, size_t names, unsigned *seed,
                         char buf[3][24], const char *out[3]) {
  if (sc == BENCH_NAMES_PREFIX) {
    out[0] = "n1*";
    return 1;
  }
  size_t k = sc == BENCH_NAMES_ONE ? 1 : sc == BENCH_NAMES_THREE ? 3 : 0;
  for (size_t i = 0; i < k; i++) {
    snprintf(buf[i], sizeof buf[i], "n%u", (unsigned)(rand_r(seed) % names));
    out[i] = buf[i];
  }
  return k;
}

int bench_names_board(bench_names_side *out, const char *dir, size_t jobs,
                      size_t names, size_t claims, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  jb_board *b = NULL;
  if (bench_lib_open(&b, dir, JB_DURABILITY_NONE, err, errlen)) return -1;
  jb_post *posts = calloc(BATCH, sizeof *posts);
  char(*uuids)[JB_UUID_STRLEN] = calloc(BATCH, sizeof *uuids);
  char(*nm)[24] = calloc(names, sizeof *nm);
  int64_t *v = calloc(claims, sizeof *v);
  int rc = 0;
  if (!posts || !uuids || !nm || !v) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
    goto out;
  }
  for (size_t i = 0; i < names; i++) snprintf(nm[i], sizeof nm[i], "n%zu", i);
  int64_t t0 = now_ns();
  size_t total = HEAD_JOBS + jobs;
  for (size_t done = 0; done < total && rc == 0;) {
    size_t n = total - done < BATCH ? total - done : BATCH;
    for (size_t i = 0; i < n; i++) {
      size_t j = done + i;
      posts[i] = (jb_post)JB_POST_INIT;
      posts[i].name = j < HEAD_JOBS ? "head" : nm[(j - HEAD_JOBS) % names];
    }
    if (jb_job_post_batch(uuids, b, posts, n) != JB_OK) {
      snprintf(err, errlen, "post: %s", jb_errmsg());
      rc = -1;
    }
    done += n;
  }
  out->build_s = (double)(now_ns() - t0) / 1e9;
  unsigned seed = 12345;
  for (int sc = 0; sc < BENCH_NAMES_N && rc == 0; sc++) {
    if (sc == BENCH_NAMES_PAUSED_HEAD && jb_pause(b, "head") != JB_OK) rc = -1;
    for (size_t i = 1; sc == BENCH_NAMES_PAUSED_HALF && i < names && rc == 0;
         i += 2)
      if (jb_pause(b, nm[i]) != JB_OK) rc = -1;
    if (rc) {
      snprintf(err, errlen, "pause: %s", jb_errmsg());
      break;
    }
    size_t got = 0;
    for (size_t i = 0; i < claims; i++) {
      char buf[3][24];
      const char *sel[3];
      jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
      co.n_names = pick_names(sc, names, &seed, buf, sel);
      co.names = co.n_names ? sel : NULL;
      char u[JB_UUID_STRLEN];
      uint64_t token;
      int64_t s = now_ns();
      int st = jb_claim_next(u, NULL, &token, b, "bench", &co);
      int64_t e = now_ns();
      if (st == JB_ENOTFOUND) continue; /* a name drained: not timed */
      if (st != JB_OK || jb_consume(b, u, "bench", token, NULL) != JB_OK) {
        snprintf(err, errlen, "claim-next (%s): %s", bench_names_label[sc],
                 jb_errmsg());
        rc = -1;
        break;
      }
      v[got++] = e - s;
    }
    if (rc == 0 && got) bench_lat_summarise(&out->lat[sc], v, got);
  }
out:
  free(posts);
  free(uuids);
  free(nm);
  free(v);
  jb_board_close(b);
  return rc;
}

const char *const bench_ctl_label[BENCH_CTL_N] = {
    [BENCH_CTL_NONE] = "no control",
    [BENCH_CTL_CAP] = "a cap",
    [BENCH_CTL_RATE] = "a rate limit",
};

/* One case's turn: `n` cycles of claim-next + consume on the board whose
 * controls are set to case `ctl`, their times appended to v[*got]. */
static int controls_turn(jb_board *b, int ctl, size_t n, int64_t *v,
                         size_t *got, char *err, size_t errlen) {
  if (jb_set_cap(b, "api", ctl == BENCH_CTL_CAP ? 1000000 : 0) != JB_OK ||
      jb_set_rate(b, "api", ctl == BENCH_CTL_RATE ? 1000000 : 0, 1000) !=
          JB_OK) {
    snprintf(err, errlen, "controls: %s", jb_errmsg());
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    char u[JB_UUID_STRLEN];
    uint64_t token;
    int64_t s = now_ns();
    int st = jb_claim_next(u, NULL, &token, b, "bench", NULL);
    if (st == JB_OK) st = jb_consume(b, u, "bench", token, NULL);
    int64_t e = now_ns();
    if (st != JB_OK) {
      snprintf(err, errlen, "cycle (%s): %s", bench_ctl_label[ctl],
               jb_errmsg());
      return -1;
    }
    v[(*got)++] = e - s;
  }
  return 0;
}

int bench_names_controls(bench_lat out[BENCH_CTL_N], const char *dir,
                         size_t cycles, char *err, size_t errlen) {
  memset(out, 0, BENCH_CTL_N * sizeof *out);
  jb_board *b = NULL;
  if (bench_lib_open(&b, dir, JB_DURABILITY_NONE, err, errlen)) return -1;
  size_t turn = cycles / 4 ? cycles / 4 : 1, per = turn * 4;
  jb_post *posts = calloc(BATCH, sizeof *posts);
  char(*uuids)[JB_UUID_STRLEN] = calloc(BATCH, sizeof *uuids);
  int64_t *v[BENCH_CTL_N] = {0};
  size_t got[BENCH_CTL_N] = {0};
  int rc = posts && uuids ? 0 : -1;
  for (int c = 0; c < BENCH_CTL_N && rc == 0; c++)
    if (!(v[c] = calloc(per, sizeof *v[c]))) rc = -1;
  if (rc) snprintf(err, errlen, "out of memory");
  /* Enough jobs for every cycle, and a few more. */
  for (size_t done = 0; rc == 0 && done < per * BENCH_CTL_N + BATCH;
       done += BATCH) {
    for (size_t i = 0; i < BATCH; i++) {
      posts[i] = (jb_post)JB_POST_INIT;
      posts[i].name = "api";
    }
    if (jb_job_post_batch(uuids, b, posts, BATCH) != JB_OK) {
      snprintf(err, errlen, "post: %s", jb_errmsg());
      rc = -1;
    }
  }
  for (int t = 0; t < 4 && rc == 0; t++)
    for (int c = 0; c < BENCH_CTL_N && rc == 0; c++)
      rc = controls_turn(b, c, turn, v[c], &got[c], err, errlen);
  for (int c = 0; c < BENCH_CTL_N && rc == 0; c++)
    bench_lat_summarise(&out[c], v[c], got[c]);
  for (int c = 0; c < BENCH_CTL_N; c++) free(v[c]);
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

int bench_names_sqlite(bench_names_side *out, const char *dir, size_t jobs,
                       size_t names, size_t claims, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char path[4096];
  snprintf(path, sizeof path, "%s/names.sqlite", dir);
  sqlite3 *db = NULL;
  int64_t *v = calloc(claims, sizeof *v);
  int rc = 0;
  sqlite3_stmt *ins = NULL, *del = NULL;
  if (!v || sqlite3_open(path, &db) != SQLITE_OK) {
    snprintf(err, errlen, "sqlite: cannot open %s", path);
    rc = -1;
    goto out;
  }
  if (sq(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
             "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, name TEXT NOT NULL,"
             " priority INTEGER NOT NULL, state INTEGER NOT NULL DEFAULT 0,"
             " owner TEXT);"
             "CREATE INDEX ready ON jobs(priority, seq) WHERE state = 0;"
             "CREATE INDEX byname ON jobs(name, priority, seq) WHERE state = 0;"
             "CREATE TABLE paused (name TEXT PRIMARY KEY);",
         err, errlen)) {
    rc = -1;
    goto out;
  }
  int64_t t0 = now_ns();
  if (sq(db, "BEGIN", err, errlen) ||
      sqlite3_prepare_v2(db, "INSERT INTO jobs (name, priority) VALUES (?, 2)",
                         -1, &ins, NULL) != SQLITE_OK) {
    rc = -1;
    goto out;
  }
  size_t total = HEAD_JOBS + jobs;
  for (size_t j = 0; j < total; j++) {
    char n[24];
    if (j < HEAD_JOBS)
      snprintf(n, sizeof n, "head");
    else
      snprintf(n, sizeof n, "n%zu", (j - HEAD_JOBS) % names);
    sqlite3_bind_text(ins, 1, n, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(ins) != SQLITE_DONE) {
      snprintf(err, errlen, "sqlite insert: %s", sqlite3_errmsg(db));
      rc = -1;
      goto out;
    }
    sqlite3_reset(ins);
  }
  if (sq(db, "COMMIT", err, errlen)) {
    rc = -1;
    goto out;
  }
  out->build_s = (double)(now_ns() - t0) / 1e9;
  if (sqlite3_prepare_v2(db, "DELETE FROM jobs WHERE seq = ?", -1, &del,
                         NULL) != SQLITE_OK) {
    rc = -1;
    goto out;
  }
  unsigned seed = 12345;
  for (int sc = 0; sc < BENCH_NAMES_N && rc == 0; sc++) {
    if (sc == BENCH_NAMES_PAUSED_HEAD &&
        sq(db, "INSERT INTO paused VALUES ('head')", err, errlen)) {
      rc = -1;
      break;
    }
    for (size_t i = 1; sc == BENCH_NAMES_PAUSED_HALF && i < names; i += 2) {
      char q[96];
      snprintf(q, sizeof q, "INSERT INTO paused VALUES ('n%zu')", i);
      if (sq(db, q, err, errlen)) {
        rc = -1;
        break;
      }
    }
    /* The claim's query, as a user would write it for the scenario. */
    const char *where =
        sc == BENCH_NAMES_ONE     ? "name = ?1"
        : sc == BENCH_NAMES_THREE ? "name IN (?1, ?2, ?3)"
        : sc == BENCH_NAMES_PREFIX
            ? "name >= 'n1' AND name < 'n2'"
            : "name NOT IN (SELECT name FROM paused)";
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE jobs SET state = 1, owner = 'bench' WHERE seq = (SELECT "
             "seq FROM jobs WHERE state = 0 AND %s ORDER BY priority, seq "
             "LIMIT 1) RETURNING seq",
             where);
    sqlite3_stmt *cl = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &cl, NULL) != SQLITE_OK) {
      snprintf(err, errlen, "sqlite: %s", sqlite3_errmsg(db));
      rc = -1;
      break;
    }
    /* A plain claim that passes paused names row by row is slow: fewer
     * claims there, said in the output. */
    size_t n = sc >= BENCH_NAMES_PAUSED_HEAD && claims > 200 ? 200 : claims;
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
      char buf[3][24];
      const char *sel[3];
      size_t k = pick_names(sc, names, &seed, buf, sel);
      if (sc == BENCH_NAMES_PREFIX) k = 0;
      for (size_t j = 0; j < k; j++)
        sqlite3_bind_text(cl, (int)j + 1, sel[j], -1, SQLITE_TRANSIENT);
      int64_t s = now_ns();
      int64_t seq = -1;
      int step = SQLITE_ERROR;
      if (sq(db, "BEGIN IMMEDIATE", err, errlen) == 0) {
        step = sqlite3_step(cl);
        if (step == SQLITE_ROW) seq = sqlite3_column_int64(cl, 0);
        while (step == SQLITE_ROW) step = sqlite3_step(cl);
        sqlite3_reset(cl);
        if (sq(db, "COMMIT", err, errlen)) step = SQLITE_ERROR;
      }
      int64_t e = now_ns();
      if (step != SQLITE_DONE) {
        rc = -1;
        break;
      }
      if (seq < 0) continue;
      sqlite3_bind_int64(del, 1, seq);
      sqlite3_step(del);
      sqlite3_reset(del);
      v[got++] = e - s;
    }
    sqlite3_finalize(cl);
    if (rc == 0 && got) bench_lat_summarise(&out->lat[sc], v, got);
  }
out:
  if (ins) sqlite3_finalize(ins);
  if (del) sqlite3_finalize(del);
  if (db) sqlite3_close(db);
  free(v);
  return rc;
}
#else
int bench_names_sqlite(bench_names_side *out, const char *dir, size_t jobs,
                       size_t names, size_t claims, char *err, size_t errlen) {
  (void)dir, (void)jobs, (void)names, (void)claims;
  memset(out, 0, sizeof *out);
  snprintf(err, errlen, "built without SQLite");
  return -1;
}
#endif
