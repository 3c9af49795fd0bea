/*
 * bench_raw.h - the raw LMDB floor of `jobboard-bench`.
 *
 * The same job cycle as the library's (post, claim-next, consume: three
 * write transactions per job), written directly on LMDB with nothing else:
 * no posting encoding, no argument checks, no change log. It opens its
 * environment with the flags the library uses for the same durability
 * (store/env.c) and writes records of the same sizes, so the ratio of the
 * two figures is what the library costs on top of LMDB itself.
 *
 * Per job:
 *   post        jobs[uuid16] = value (value_len bytes, the index key first)
 *               ready[key9]  = uuid16 + 8-byte time
 *   claim-next  cursor MDB_FIRST on ready, delete it,
 *               claims[key9] = uuid16 + 16 bytes + owner
 *   consume     get jobs[uuid16] (to learn its key), delete claims[key9],
 *               delete jobs[uuid16]
 * A key is the priority byte and a big-endian sequence, as the library's.
 *
 * With BENCH_RAW_LOG each of the three transactions also appends one
 * change-log event as the library does (every change is logged in its own
 * transaction: docs/DESIGN-NOTES.md, "Storage layout"): a cursor on `log`,
 * MDB_LAST for the next sequence, an MDB_APPEND put of the event, mdb_stat
 * and a batched trim that keeps the last 100,000 events (store/store.h). That
 * floor tells the log's cost apart from the rest of the library's.
 *
 * A handle belongs to the process that opened it: after fork() the child
 * opens its own (LMDB's rule).
 */
#ifndef JOBBOARD_BENCH_RAW_H
#define JOBBOARD_BENCH_RAW_H

#include <stddef.h>

#include "jobboard.h"

typedef struct bench_raw bench_raw;

/* The LMDB environment flags the library uses for `durability` (MDB_NOTLS
 * always; full: nothing more; normal: MDB_NOMETASYNC; none: MDB_NOSYNC.
 * No mode uses MDB_WRITEMAP: store/env.c says why). */
unsigned bench_raw_env_flags(jb_durability durability);

/* Text of those flags, "MDB_NOSYNC|MDB_NOTLS" (static). */
const char *bench_raw_flags_name(jb_durability durability);

/* Flags for bench_raw_open. */
enum {
  BENCH_RAW_LOG = 1u << 0, /* append a change-log event in every transaction */
};

/*
 * Open (creating it if needed) a raw environment in the existing directory
 * `dir` with the flags of `durability` and a map of `map_size` bytes.
 * `value_len` (>= 32) is the size of each job's value; `tag` (0..255) keeps
 * the keys of concurrent processes apart; `flags` are BENCH_RAW_*. Returns
 * 0 or an LMDB / errno code for bench_raw_strerror; on failure *out is
 * NULL.
 */
int bench_raw_open(bench_raw **out, const char *dir, jb_durability durability,
                   size_t map_size, size_t value_len, unsigned tag,
                   unsigned flags);

/* Run `n` cycles. Returns 0 or an LMDB / errno code; *done_out (may be
 * NULL) is the number of cycles completed. */
int bench_raw_cycles(bench_raw *raw, size_t n, size_t *done_out);

/* Post `n` jobs, `b` (>= 1) per write transaction: each job's record and
 * ready entry (and with BENCH_RAW_LOG its change-log event) put with
 * MDB_APPEND, since uuids and keys increase, as the library's posts do
 * when they can (store/ops.c); the log trimmed once per transaction. The
 * floor of the bench's posting part. Returns 0 or an LMDB code. */
int bench_raw_post(bench_raw *raw, size_t n, size_t b);

/* Jobs left in the raw environment's `jobs` table (0 after whole cycles by
 * every process), or (size_t)-1 when it cannot be read. */
size_t bench_raw_count(bench_raw *raw);

/* Close. NULL is a no-op. */
void bench_raw_close(bench_raw *raw);

/* Text for a code returned above (LMDB's own text; errno's as well). */
const char *bench_raw_strerror(int rc);

#endif
