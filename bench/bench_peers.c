/*
 * bench_peers.c - the SQLite peer of `jobboard-bench --peers` (see
 * bench_peers.h for the job it does and why it is the same job). Built
 * only with HAVE_SQLITE3.
 */
#include "bench_peers.h"
#include "bench_util.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OWNER "bench-worker"
#define JOB_NAME "bench.resize-image"
#define RANK_NORMAL 2    /* NORMAL's rank, as the library's job key */
#define HISTORY_KEEP 10000
#define HISTORY_TRIM 64  /* as store/history.c */
#define BUSY_TIMEOUT_MS 10000
#define MAX_RETRIES 100000u

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " uuid BLOB NOT NULL UNIQUE,"
    " name TEXT NOT NULL,"
    " details BLOB NOT NULL,"
    " priority INTEGER NOT NULL,"
    " state INTEGER NOT NULL DEFAULT 0,"
    " owner TEXT,"
    " token INTEGER,"
    " posted INTEGER NOT NULL,"
    " modified INTEGER NOT NULL,"
    " claimed INTEGER);"
    "CREATE INDEX IF NOT EXISTS ready ON jobs(priority, seq) WHERE state = 0;"
    "CREATE TABLE IF NOT EXISTS history("
    " id INTEGER PRIMARY KEY,"
    " uuid BLOB NOT NULL,"
    " name TEXT,"
    " priority INTEGER,"
    " seq INTEGER,"
    " owner TEXT,"
    " posted INTEGER,"
    " claimed INTEGER,"
    " completed INTEGER NOT NULL,"
    " ending INTEGER NOT NULL,"
    " result BLOB NOT NULL);";

/* The prepared statements, in the order of stmt_sql. */
enum { S_BEGIN, S_COMMIT, S_ROLLBACK, S_POST, S_CLAIM, S_DONE, S_DELETE,
       S_TRIM, S_COUNT, NSTMT };
static const char *const stmt_sql[NSTMT] = {
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
    "INSERT INTO jobs(uuid, name, details, priority, posted, modified)"
    " VALUES(?1, ?2, ?3, ?4, ?5, ?5)",
    "UPDATE jobs SET state = 1, owner = ?1, token = ?2, claimed = ?2,"
    " modified = ?2 WHERE seq = (SELECT seq FROM jobs WHERE state = 0"
    " ORDER BY priority, seq LIMIT 1) RETURNING uuid",
    "INSERT INTO history(uuid, name, priority, seq, owner, posted, claimed,"
    " completed, ending, result) SELECT uuid, name, priority, seq, owner,"
    " posted, claimed, ?3, 1, x'80' FROM jobs WHERE uuid = ?1 AND state = 1"
    " AND owner = ?2",
    "DELETE FROM jobs WHERE uuid = ?1",
    "DELETE FROM history WHERE id <= ?1",
    "SELECT count(*) FROM jobs",
};

struct bench_peer {
  sqlite3 *db;
  sqlite3_stmt *st[NSTMT];
  uint8_t *details;
  size_t details_len;
  uint64_t rng;
  unsigned long long busy;
  char *err;
  size_t errlen;
};

const char *bench_peer_version(void) { return sqlite3_libversion(); }

const char *bench_peer_sync_name(jb_durability d) {
  switch (d) {
  case JB_DURABILITY_FULL: return "FULL";
  case JB_DURABILITY_NORMAL: return "NORMAL";
  case JB_DURABILITY_NONE: return "OFF";
  case JB_DURABILITY_INTERVAL: return "NORMAL"; /* WAL: no flush per commit */
  }
  return "?";
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Record the connection's message for `what`; returns -1. */
static int fail(bench_peer *p, const char *what) {
  snprintf(p->err, p->errlen, "SQLite %s: %s", what, sqlite3_errmsg(p->db));
  return -1;
}

/* Step a statement to its end and reset it. SQLITE_DONE becomes
 * SQLITE_OK; a row is SQLITE_ROW only for statements that return one (the
 * caller reads it before calling again). */
static int step_done(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) return rc;
  sqlite3_reset(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static bool is_busy(int rc) {
  return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

/* After an operation failed mid-way: reset every statement, roll back an
 * open transaction. */
static void undo(bench_peer *p) {
  for (int i = 0; i < NSTMT; i++) sqlite3_reset(p->st[i]);
  if (!sqlite3_get_autocommit(p->db)) step_done(p->st[S_ROLLBACK]);
}

/* Post `n` jobs: one INSERT (its own transaction) when n is 1, else n
 * INSERTs in one BEGIN IMMEDIATE transaction. */
static int post_txn(bench_peer *p, size_t n) {
  sqlite3_stmt *s = p->st[S_POST];
  int rc = n > 1 ? step_done(p->st[S_BEGIN]) : SQLITE_OK;
  for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
    uint64_t uuid[2] = {bench_rand(&p->rng), bench_rand(&p->rng)};
    sqlite3_bind_blob(s, 1, uuid, 16, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, JOB_NAME, -1, SQLITE_STATIC);
    sqlite3_bind_blob(s, 3, p->details, (int)p->details_len, SQLITE_STATIC);
    sqlite3_bind_int(s, 4, RANK_NORMAL);
    sqlite3_bind_int64(s, 5, now_us());
    rc = step_done(s);
  }
  if (rc == SQLITE_OK && n > 1) rc = step_done(p->st[S_COMMIT]);
  return rc;
}

/* claim-next: the first unclaimed job in (priority, seq) order. */
static int claim_next(bench_peer *p, uint8_t uuid[16]) {
  sqlite3_stmt *s = p->st[S_CLAIM];
  int rc = step_done(p->st[S_BEGIN]);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text(s, 1, OWNER, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, now_us());
  rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    if (sqlite3_column_bytes(s, 0) != 16) {
      sqlite3_reset(s);
      return SQLITE_CORRUPT;
    }
    memcpy(uuid, sqlite3_column_blob(s, 0), 16);
    rc = step_done(s);
  } else {
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) rc = SQLITE_NOTFOUND; /* nothing claimable */
  }
  if (rc == SQLITE_OK) rc = step_done(p->st[S_COMMIT]);
  return rc;
}

/* consume: the history row from the job (only if the owner's claim),
 * the job deleted, the history trimmed when due. */
static int consume(bench_peer *p, const uint8_t uuid[16]) {
  sqlite3_stmt *h = p->st[S_DONE], *d = p->st[S_DELETE];
  int rc = step_done(p->st[S_BEGIN]);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_blob(h, 1, uuid, 16, SQLITE_STATIC);
  sqlite3_bind_text(h, 2, OWNER, -1, SQLITE_STATIC);
  sqlite3_bind_int64(h, 3, now_us());
  rc = step_done(h);
  if (rc == SQLITE_OK && sqlite3_changes(p->db) != 1) rc = SQLITE_NOTFOUND;
  sqlite3_int64 id = sqlite3_last_insert_rowid(p->db);
  if (rc == SQLITE_OK) {
    sqlite3_bind_blob(d, 1, uuid, 16, SQLITE_STATIC);
    rc = step_done(d);
  }
  if (rc == SQLITE_OK && id > HISTORY_KEEP && id % HISTORY_TRIM == 0) {
    sqlite3_bind_int64(p->st[S_TRIM], 1, id - HISTORY_KEEP);
    rc = step_done(p->st[S_TRIM]);
  }
  if (rc == SQLITE_OK) rc = step_done(p->st[S_COMMIT]);
  return rc;
}

/* Run one operation, again after SQLITE_BUSY (rolled back first). */
typedef enum { OP_POST, OP_CLAIM, OP_CONSUME } peer_op;

static int run_op(bench_peer *p, peer_op op, size_t n, uint8_t uuid[16]) {
  static const char *const name[] = {"post", "claim-next", "consume"};
  for (unsigned tries = 0;; tries++) {
    int rc = op == OP_POST    ? post_txn(p, n)
             : op == OP_CLAIM ? claim_next(p, uuid)
                              : consume(p, uuid);
    if (rc == SQLITE_OK) return 0;
    if (rc == SQLITE_NOTFOUND) {
      undo(p);
      snprintf(p->err, p->errlen, "SQLite %s: %s", name[op],
               op == OP_CLAIM ? "no unclaimed job"
                              : "the job is not claimed by its owner");
      return -1;
    }
    if (!is_busy(rc) || tries == MAX_RETRIES) {
      fail(p, name[op]);
      undo(p);
      return -1;
    }
    undo(p);
    p->busy++;
  }
}

int bench_peer_cycles(bench_peer *p, size_t n, char *err, size_t errlen) {
  p->err = err;
  p->errlen = errlen;
  uint8_t uuid[16];
  for (size_t i = 0; i < n; i++)
    if (run_op(p, OP_POST, 1, NULL) || run_op(p, OP_CLAIM, 0, uuid) ||
        run_op(p, OP_CONSUME, 0, uuid))
      return -1;
  return 0;
}

int bench_peer_post(bench_peer *p, size_t n, size_t batch, char *err,
                    size_t errlen) {
  p->err = err;
  p->errlen = errlen;
  if (batch == 0) batch = 1;
  for (size_t done = 0; done < n; done += batch)
    if (run_op(p, OP_POST, n - done < batch ? n - done : batch, NULL))
      return -1;
  return 0;
}

size_t bench_peer_left(bench_peer *p) {
  sqlite3_stmt *s = p->st[S_COUNT];
  size_t n = (size_t)-1;
  if (sqlite3_step(s) == SQLITE_ROW) n = (size_t)sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  return n;
}

unsigned long long bench_peer_busy(const bench_peer *p) { return p->busy; }

void bench_peer_close(bench_peer *p) {
  if (p == NULL) return;
  for (int i = 0; i < NSTMT; i++) sqlite3_finalize(p->st[i]);
  sqlite3_close(p->db);
  free(p->details);
  free(p);
}

/* One statement for its setting; -1 with err unless it ran. */
static int exec(bench_peer *p, const char *sql, const char *what) {
  char *msg = NULL;
  if (sqlite3_exec(p->db, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  snprintf(p->err, p->errlen, "SQLite %s: %s", what,
           msg ? msg : sqlite3_errmsg(p->db));
  sqlite3_free(msg);
  return -1;
}

/* The file is in WAL mode (a file system without shared memory would
 * have kept it in rollback mode: then the figure is not WAL's). */
static int check_wal(bench_peer *p, const char *path) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(p->db, "PRAGMA journal_mode", -1, &s, NULL) !=
      SQLITE_OK)
    return fail(p, "journal_mode");
  const unsigned char *mode = NULL;
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) mode = sqlite3_column_text(s, 0);
  int ok = mode != NULL && strcmp((const char *)mode, "wal") == 0;
  if (!ok)
    snprintf(p->err, p->errlen, "SQLite: %s is in journal mode %s, not WAL",
             path, mode ? (const char *)mode : "unknown");
  sqlite3_finalize(s);
  return ok ? 0 : -1;
}

int bench_peer_open(bench_peer **out, const char *dir, jb_durability d,
                    size_t details_len, unsigned tag, bool create,
                    char *err, size_t errlen) {
  *out = NULL;
  bench_peer *p = calloc(1, sizeof *p);
  if (p == NULL || (p->details = malloc(details_len ? details_len : 1)) ==
                       NULL) {
    free(p);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  p->err = err;
  p->errlen = errlen;
  p->details_len = details_len;
  for (size_t i = 0; i < details_len; i++)
    p->details[i] = (uint8_t)(i * 131 + 7);
  p->rng = bench_rand_seed(tag);

  char path[4200], sync[64];
  snprintf(path, sizeof path, "%s/peer.sqlite", dir);
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
              (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path, &p->db, flags, NULL) != SQLITE_OK) {
    if (p->db == NULL)
      snprintf(err, errlen, "SQLite open %s: out of memory", path);
    else
      snprintf(err, errlen, "SQLite open %s: %s", path,
               sqlite3_errmsg(p->db));
    bench_peer_close(p);
    return -1;
  }
  sqlite3_busy_timeout(p->db, BUSY_TIMEOUT_MS);
  snprintf(sync, sizeof sync, "PRAGMA synchronous=%s",
           bench_peer_sync_name(d));
  int rc = exec(p, sync, "synchronous");
  if (rc == 0 && create) {
    /* WAL is a property of the file: set once, kept by later opens. */
    rc = exec(p, "PRAGMA journal_mode=WAL", "journal_mode=WAL");
    if (rc == 0) rc = exec(p, schema, "schema");
  }
  if (rc == 0) rc = check_wal(p, path);
  for (int i = 0; rc == 0 && i < NSTMT; i++)
    if (sqlite3_prepare_v3(p->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &p->st[i], NULL) != SQLITE_OK)
      rc = fail(p, "prepare");
  if (rc != 0) {
    bench_peer_close(p);
    return -1;
  }
  *out = p;
  return 0;
}
