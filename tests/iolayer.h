/*
 * iolayer.h - a layer between the library (with liblmdb) and the file
 * system, for the power-loss and I/O-fault tests.
 *
 * tests/iolayer.c defines open, openat, close, write, pwrite, writev,
 * pwritev, fdatasync, fsync and ftruncate in the test executable itself.
 * A definition in the executable comes first in the dynamic linker's
 * search, so liblmdb.so's calls reach it too (and under ASan it comes
 * before the sanitizer's interceptors, which an LD_PRELOAD shim would
 * not); each forwards to the next definition (dlsym RTLD_NEXT).
 *
 * It follows one board: the descriptors opened on "<dir>/data.mdb" after
 * iol_follow(dir), with whether each was opened O_DSYNC (LMDB's meta
 * descriptor in durability full: a write on it is durable when it
 * returns). For those it can
 *  - record every write (offset and bytes actually written) and every
 *    flush, with "ack" markers the test inserts (iol_ack): the material of
 *    the crash states (tests/test_powerloss.c);
 *  - fail the Nth write or flush from now with an errno, or cut the Nth
 *    write short (tests/test_iofault.c).
 * Other descriptors pass straight through. One process, any thread (a
 * mutex guards the record); a forked child inherits the state but is
 * meant to follow nothing (it opens other directories).
 */
#ifndef JB_TESTS_IOLAYER_H
#define JB_TESTS_IOLAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Follow dir/data.mdb from the next open on (NULL: follow nothing).
 * Descriptors already open stay untracked. */
void iol_follow(const char *dir);

typedef enum {
  IOL_WRITE = 1, /* off, len, data */
  IOL_FLUSH = 2, /* fdatasync or fsync of the file */
  IOL_ACK = 3,   /* the test's marker: an API call returned JB_OK */
} iol_kind;

typedef struct {
  iol_kind kind;
  bool dsync;    /* IOL_WRITE on an O_DSYNC descriptor: durable at once */
  uint8_t file;  /* IOL_WRITE, IOL_FLUSH: IOL_DATA or IOL_STEADY */
  uint64_t off;
  size_t len;
  uint8_t *data; /* owned by the record */
  uint64_t floor; /* IOL_ACK: what the acknowledged call promises (the
                     test's own meaning), 0 if nothing */
} iol_event;

/* The files followed: data.mdb always, the board's steady file (durability
 * interval) after iol_follow_steady(true). */
enum { IOL_DATA = 0, IOL_STEADY = 1 };
void iol_follow_steady(bool on);

/* Record into memory shared with the processes forked after this call
 * (one order for all of them: each write is done and recorded under one
 * process-shared lock). Call before iol_record(true) and before forking;
 * room for `max_events` events and `max_bytes` of written data (a record
 * that outgrows it aborts, loudly). */
void iol_share(size_t max_events, size_t max_bytes);
/* End this process (_exit(IOL_DIED)) right after its nth write or flush on
 * a followed descriptor from now, as kill -9 there would: the file holds
 * what the calls so far put in the page cache, and nothing of what the
 * process meant to do next. 0: never. A kill inside a call changes the file
 * no differently here: each write the library makes in the steps this is
 * used for (restore, record) lies within one page, which a signal cannot
 * cut short. */
#define IOL_DIED 77
void iol_die_after(unsigned n);
/* End this process at once, as kill -9 would, but never between a write
 * of one of its threads and the write's record. */
void iol_exit(int code) __attribute__((noreturn));
/* An ack marker carrying `floor` (see iol_event). */
void iol_ack_floor(uint64_t floor);

/* Start (true) or stop recording events of followed descriptors. Starting
 * clears the record. */
void iol_record(bool on);
void iol_ack(void);
/* The record so far (valid until the next iol_record(true) or
 * iol_clear). */
const iol_event *iol_events(size_t *n);
void iol_clear(void);

/* Calls on followed descriptors since the last iol_counts_reset:
 * writes (every write call, O_DSYNC ones included) and flushes. */
typedef struct {
  unsigned writes, dsync_writes, flushes, tracked_opens;
} iol_counts;
iol_counts iol_counts_get(void);
void iol_counts_reset(void);

/* Faults. iol_fault_write(n, err): the nth write call on a followed
 * descriptor from now (1 = the next) fails with errno `err` without
 * writing; err 0 writes only half of the bytes and returns that count (a
 * short write). iol_fault_flush(n, err): the nth flush fails with `err`
 * without flushing. With `times` > 1 the fault repeats on the following
 * calls of that kind (an EINTR that comes back). One fault of each kind
 * is armed at a time; iol_fault_clear disarms both. */
void iol_fault_write(unsigned n, int err, unsigned times);
void iol_fault_flush(unsigned n, int err, unsigned times);
void iol_fault_clear(void);
/* How many injected faults have fired since the last iol_fault_clear,
 * and the file offset of the last write fault that fired. */
unsigned iol_faults_fired(void);
uint64_t iol_fault_offset(void);

#endif
