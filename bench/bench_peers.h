/*
 * bench_peers.h - the SQLite peer of `jobboard-bench --peers`: SQLite in WAL
 * mode doing the board's job, so that a user choosing between jobboard and
 * "a table in SQLite" sees both on one machine in one run.
 *
 * The same job, honestly:
 *   jobs     seq INTEGER PRIMARY KEY AUTOINCREMENT (the board sequence:
 *            never reused, as ours), uuid BLOB UNIQUE (16 bytes; jobs are
 *            found by uuid, as ours), name, details BLOB (sized so that
 *            name + details are as many bytes as our encoded posting),
 *            priority (its rank: 0 first), state, owner, token, posted,
 *            modified and claimed times (microseconds)
 *   ready    a partial index jobs(priority, seq) WHERE state = 0: claim-next
 *            order (priority, then sequence) over unclaimed jobs only, as
 *            our ready index
 *   history  one row per completion (uuid, name, priority, seq, owner,
 *            times, ending, result) under an INTEGER PRIMARY KEY (the
 *            newest row is never deleted, so max + 1 never goes back),
 *            and no index on uuid, as ours (keyed by its sequence only
 *            since schema 5); the oldest beyond 10,000 rows deleted 64 at a
 *            time, as ours
 * and per job:
 *   post        INSERT INTO jobs (one statement: its own transaction)
 *   claim-next  BEGIN IMMEDIATE; UPDATE jobs SET state, owner, token,
 *               claimed, modified WHERE seq = (SELECT seq FROM jobs WHERE
 *               state = 0 ORDER BY priority, seq LIMIT 1) RETURNING uuid;
 *               COMMIT
 *   consume     BEGIN IMMEDIATE; INSERT INTO history SELECT ... FROM jobs
 *               WHERE uuid = ? AND state = 1 AND owner = ? (no row: not the
 *               owner's, an error); DELETE FROM jobs WHERE uuid = ?; (the
 *               trim when due); COMMIT
 * Prepared statements throughout. The token written is the claim's time,
 * not a board-wide counter (ours is the log's sequence, which costs us
 * nothing more; a counter row would cost SQLite a second update): in
 * SQLite's favour. No change log: SQLite has none to keep.
 *
 * Durability: journal_mode=WAL, and synchronous per mode:
 *   full    FULL    the WAL is flushed (fsync) at every commit
 *   normal  NORMAL  no flush at commit; the WAL is flushed at checkpoints
 *                   (a power loss may lose the last commits, never corrupt)
 *   none    OFF     never flushed
 * Our full flushes twice per commit (the data, then the meta page) and our
 * normal once: in normal SQLite flushes less than we do.
 *
 * Concurrency: each thread or process opens its own connection
 * (SQLITE_OPEN_NOMUTEX: one thread per connection), with busy_timeout
 * 10 s; an operation that still meets SQLITE_BUSY is rolled back and run
 * again (counted: bench_peer_busy).
 *
 * Built only when configure found libsqlite3 (HAVE_SQLITE3); without it
 * the functions below are stubs that fail, and bench refuses --peers
 * before it calls them.
 */
#ifndef JOBBOARD_BENCH_PEERS_H
#define JOBBOARD_BENCH_PEERS_H

#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "jobboard.h"

typedef struct bench_peer bench_peer;

/* The message for a build without SQLite. */
#define BENCH_PEER_MISSING                                                     \
  "this jobboard-bench was built without SQLite: install libsqlite3-dev "           \
  "(SQLite 3.35 or later) and run ./configure again (--with-sqlite=yes "      \
  "fails when it is missing)"

#ifdef HAVE_SQLITE3
#define BENCH_PEER_BUILT 1

/* The SQLite library's version ("3.40.1"). */
const char *bench_peer_version(void);

/* synchronous for mode d: "FULL", "NORMAL" or "OFF". */
const char *bench_peer_sync_name(jb_durability d);

/*
 * Open a connection to the peer's database in the existing directory
 * `dir` (file peer.sqlite) for mode d. With `create`, make the file and
 * its schema (one process does, before others open it). `details_len` is
 * the size of each job's details blob; `tag` seeds this connection's
 * uuids apart from others'. Returns 0, or -1 with the reason in err.
 */
int bench_peer_open(bench_peer **out, const char *dir, jb_durability d,
                    size_t details_len, unsigned tag, bool create,
                    char *err, size_t errlen);

/* n cycles: post, claim-next, consume. Returns 0, or -1 with err. */
int bench_peer_cycles(bench_peer *p, size_t n, char *err, size_t errlen);

/* Post n jobs, `batch` per transaction (1: one INSERT each, its own
 * transaction; more: BEGIN IMMEDIATE, the INSERTs, COMMIT). Returns 0, or
 * -1 with err. */
int bench_peer_post(bench_peer *p, size_t n, size_t batch, char *err,
                    size_t errlen);

/* Rows in jobs ((size_t)-1 when it cannot be read). */
size_t bench_peer_left(bench_peer *p);

/* Operations run again after SQLITE_BUSY on this connection. */
unsigned long long bench_peer_busy(const bench_peer *p);

/* Close (NULL: nothing). */
void bench_peer_close(bench_peer *p);

#else
#define BENCH_PEER_BUILT 0

static inline const char *bench_peer_version(void) { return "none"; }
static inline const char *bench_peer_sync_name(jb_durability d) {
  (void)d;
  return "?";
}
static inline int bench_peer_open(bench_peer **out, const char *dir,
                                  jb_durability d, size_t details_len,
                                  unsigned tag, bool create, char *err,
                                  size_t errlen) {
  (void)dir, (void)d, (void)details_len, (void)tag, (void)create;
  *out = NULL;
  snprintf(err, errlen, "%s", BENCH_PEER_MISSING);
  return -1;
}
static inline int bench_peer_cycles(bench_peer *p, size_t n, char *err,
                                    size_t errlen) {
  (void)p, (void)n;
  snprintf(err, errlen, "%s", BENCH_PEER_MISSING);
  return -1;
}
static inline int bench_peer_post(bench_peer *p, size_t n, size_t batch,
                                  char *err, size_t errlen) {
  (void)batch;
  return bench_peer_cycles(p, n, err, errlen);
}
static inline size_t bench_peer_left(bench_peer *p) {
  (void)p;
  return (size_t)-1;
}
static inline unsigned long long bench_peer_busy(const bench_peer *p) {
  (void)p;
  return 0;
}
static inline void bench_peer_close(bench_peer *p) { (void)p; }
#endif

#endif
