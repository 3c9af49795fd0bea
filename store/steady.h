/*
 * steady.h - durability interval: commits without a flush, a board that a
 * power cut leaves consistent at a recent flushed ("steady") state.
 *
 * The protocol is described in store/steady.c and docs/DESIGN-NOTES.md
 * ("Durability interval"). In short: a file "steady" beside data.mdb
 * records the last flushed state (its txnid, a copy of its LMDB meta page,
 * the boot id); every process that writes the board holds a reader
 * snapshot at or below that state, so LMDB never reuses its pages; the
 * first open after a reboot writes the recorded meta page back when newer
 * commits may not have reached the disk.
 */
#ifndef JOBBOARD_STORE_STEADY_H
#define JOBBOARD_STORE_STEADY_H

#include "store.h"

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>

/* The file's name inside the board directory. */
#define JB_STEADY_FILE "steady"

/* Before LMDB opens the board (nothing of it is mapped yet): after a
 * reboot, put back the recorded steady state when later commits may not
 * be on the disk, and record the new boot. *on: the board takes part in
 * the protocol (every writer then flushes through it). A read-only open
 * of a board that needs this restore is refused (it cannot write). */
int jb__steady_prepare(const char *path, bool readonly, bool *on);

/* After the environment is open and the board initialised, for a store
 * that may write: map the steady file (making it), turn the protocol on
 * when `interval`, and take part when it is on. `flush_ms`: the
 * process's period (0: the board's, else the default). */
int jb__steady_open(jb_store *s, bool interval, int64_t flush_ms);

/* Inside a write transaction, just before its commit: is the protocol on
 * while this store does not take part yet (it was turned on by another
 * process after this one opened the board)? Then the transaction is
 * aborted, jb__steady_join called, and the write run again. A load from
 * a shared map: no system call. */
bool jb__steady_must_join(jb_store *s);
int jb__steady_join(jb_store *s);

/* After a commit of this store (txnid `txnid`) succeeded: in durability
 * full and normal, returns once a recorded steady state holds it (one
 * flush of data.mdb and one of the steady file, shared with every other
 * process whose commit the same flush holds); in interval and none, wakes
 * the flusher and returns at once. JB_OK when the store takes no part. */
int jb__steady_committed(jb_store *s, uint64_t txnid);

/* Flush now: every commit made so far is on the disk when this returns
 * JB_OK (jb_board_sync). */
int jb__steady_sync(jb_store *s);

/* What the protocol did in this process (tests, bench, stats). */
typedef struct {
  bool on;                 /* the store takes part */
  int64_t period_ms;       /* its flush period */
  uint64_t flushes;        /* flushes of data.mdb made by this process */
  uint64_t records;        /* steady states it recorded */
  uint64_t recorded_txnid; /* the board's last recorded steady state */
  uint64_t pin_txnid;      /* the snapshot this process holds */
} jb_steady_info;
void jb__steady_info(jb_store *s, jb_steady_info *out);

/* The board's own period (0: the default), kept in the steady file. */
int jb__steady_set_period(jb_store *s, int64_t ms);

/* Stop the flusher, make the board steady (a clean close leaves nothing
 * to restore), let go of the snapshot, unmap. */
void jb__steady_close(jb_store *s);

/* Tests only (hidden): mutations that the power-loss test must catch.
 * JB_STEADY_TEST_NO_PIN: hold no snapshot (LMDB may reuse the recorded
 * state's pages); JB_STEADY_TEST_NO_RESTORE: never write the recorded
 * meta back. And a boot id to use instead of the kernel's (NULL: the
 * kernel's), to open a board as after a reboot. */
enum { JB_STEADY_TEST_NO_PIN = 1, JB_STEADY_TEST_NO_RESTORE = 2 };
void jb__steady_test_mutate(unsigned flags);
void jb__steady_test_boot(const uint8_t *boot);

#endif
