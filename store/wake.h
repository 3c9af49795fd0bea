/*
 * wake.h - the board's shared wake-up signal, and waiting on it.
 *
 * Every committed write bumps a 32-bit counter in a small memory-mapped
 * file of the board directory ("signal") and wakes the processes sleeping
 * on it with a shared futex. A waiter re-checks the board under a read
 * transaction after each wake-up, so the file carries no data that matters:
 * a missing or corrupt one is rebuilt, and a lost or spurious wake-up can
 * only cost a re-check. See store/wake.c for the protocol.
 */
#ifndef JOBBOARD_STORE_WAKE_H
#define JOBBOARD_STORE_WAKE_H

#include "store.h"

#include <lmdb.h>
#include <stdatomic.h>
#include <stdbool.h>

/* Wake bits (the futex's bitset). Every commit wakes the waiters of
 * JB_WAKE_ANY (every wait but a claim-next by names); a commit that made
 * ready a job of lane L (names.h) also wakes those of JB_WAKE_LANE(L), so a
 * claim-next waiting for some names sleeps through the commits that make
 * no job of its names ready (a lane's bit is shared by one name in 31: a
 * wake-up for another name's job costs a re-check). A poke wakes every
 * waiter. */
#define JB_WAKE_GENERAL (1u << 31)
#define JB_WAKE_LANE(lane) (1u << ((lane) % 31u))
#define JB_WAKE_LANES 0x7fffffffu
#define JB_WAKE_ANY 0xffffffffu

/* The file's name inside the board directory. */
#define JB_SIGNAL_FILE "signal"

/* Map the board's signal file (creating or rebuilding it) and make the
 * board's meta "signal" name it. Called once the environment is open. */
int jb__signal_open(jb_store *s);
/* Stop the watcher thread, unmap the file(s). */
void jb__signal_close(jb_store *s);

/* Inside a write transaction, just before its commit: does the board name
 * a signal file other than the one this process has mapped (it was
 * deleted and rebuilt by another process)? */
bool jb__signal_stale(jb_store *s, MDB_txn *txn);
/* After a committed write: bump the counter and wake the waiters of
 * JB_WAKE_GENERAL and of `lanes` (the wake bits of the lanes it made
 * ready, taken before the commit), after first following a rebuilt file
 * when `stale`. */
void jb__signal_commit(jb_store *s, bool stale, uint32_t lanes);

/* Does this process's watcher follow process `p` (a pidfd open, its end
 * not signalled)? Then `p` runs, as far as any reader here needs to know:
 * its end wakes the waiters. false when there is no watcher. */
bool jb__signal_follows(jb_store *s, const jb_proc_id *p);

/* Wake every waiter on the board's signal (without a commit), so that they
 * re-check. Async-signal-safe: atomics and one futex call per mapping. */
void jb__signal_poke(jb_store *s);

/* The wait loop behind jb__board_wait (core/internal.h): attempt, sleep on
 * the futex until a commit, the attempt's retry time, the deadline or a
 * cancel (`*cancelled` non-zero: JB_EINTERRUPTED), attempt again. */
int jb__store_wait(jb_store *s, jb_wait_fn fn, void *ctx, int64_t timeout_ms,
                   const atomic_int *cancelled);
/* How many times the waits of this process looked at the board (each
 * attempt of a wait loop): for tests of who is woken. */
extern atomic_ulong jb__wait_attempts;

/* jb__store_wait sleeping only for the wake bits `mask` (above). */
int jb__store_wait_mask(jb_store *s, jb_wait_fn fn, void *ctx,
                        int64_t timeout_ms, const atomic_int *cancelled,
                        uint32_t mask);

/* What a waiter for jobs needs to know, in one read transaction: the
 * number of jobs (or, with JB_ONLY_UNCLAIMED, of claimable jobs) and, for
 * claimable waits, when the first live lease lapses (CLOCK_MONOTONIC
 * microseconds; INT64_MAX if none). With JB_ONLY_UNCLAIMED the processes
 * holding bound claims are handed to the watcher, which wakes the board's
 * waiters when one of them ends. */
int jb__store_wait_state(jb_store *s, unsigned flags, size_t *count,
                         int64_t *lapse_mono_us);

#endif
