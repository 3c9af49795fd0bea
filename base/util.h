/*
 * util.h - uuids, validation, clocks, processes and growable buffers: the
 * helpers every folder of the library builds on. Not API (the library is
 * built -fvisibility=hidden). Like everything in base/, it includes
 * nothing of ours but the public header.
 */
#ifndef JOBBOARD_BASE_UTIL_H
#define JOBBOARD_BASE_UTIL_H

#include "jobboard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- uuids */

/* Parse 36-character uuid text (either case) into 16 bytes. On bad input
 * sets a message naming `field` and returns JB_EINVAL. */
int jb__uuid_parse(uint8_t out[16], const char *text, const char *field);
/* Write the lowercase hyphenated text of `in` (36 chars + NUL). */
void jb__uuid_format(char out[JB_UUID_STRLEN], const uint8_t in[16]);
/* A new random (version 4) uuid. JB_OK, or JB_EIO if the kernel gives no
 * randomness. */
int jb__uuid_generate(uint8_t out[16]);
/* A job's uuid: version 7, time-ordered (util.c says why). */
int jb__uuid_generate_job(uint8_t out[16]);

/* Incremented in every child after fork(): state made before a fork (a
 * board handle, the uuid pool) sees a different generation. */
unsigned jb__fork_generation(void);

/* ------------------------------------------------------------ validation */

/* true when s[0..len) is well-formed UTF-8 without NUL bytes. */
bool jb__utf8_valid(const char *s, size_t len);
/* Check an owner name: non-NULL, 1..JB_WHO_MAX bytes of UTF-8.
 * Returns JB_OK (and its length in *len) or JB_EINVAL with a message. */
int jb__who_check(const char *who, size_t *len);

/* ------------------------------------------------------------------ time */

/* Wall-clock time in microseconds since the Unix epoch (UTC). */
int64_t jb__now_us(void);
/* Tests only: make jb__now_us return `us` in this process (0: the real
 * clock again), to put a due time exactly before or after "now". */
void jb__test_clock_fix(int64_t us);

/* Microseconds on CLOCK_BOOTTIME: the same for every process of the host,
 * unmoved by changes of the wall clock, counting time spent suspended.
 * Lease expiries are kept on it (with the boot they belong to). */
int64_t jb__boottime_us(void);

/* ------------------------------------------------------------- processes */

/* A process: pid and start time (clock ticks after boot, from
 * /proc/PID/stat), so that a reused pid is a different process. */
typedef struct {
  uint32_t pid;
  uint64_t start;
} jb_proc_id;

/* This process (cached; a forked child finds its own). JB_OK or JB_EIO. */
int jb__proc_self(jb_proc_id *out);
/* 1 while process `p` runs, 0 once it is gone (exited, a zombie, or its
 * pid reused). When /proc cannot tell, 1: a claim is never taken from a
 * holder that may be alive. */
int jb__proc_alive(const jb_proc_id *p);
/* The kernel's id of this boot (/proc/sys/kernel/random/boot_id). */
int jb__boot_id(uint8_t out[16]);

/* ------------------------------------------------------------ growable buf */

typedef struct {
  uint8_t *data;
  size_t len;
  size_t cap;
} jb_buf;

int jb__buf_reserve(jb_buf *b, size_t more); /* JB_OK or JB_ENOMEM */
int jb__buf_append(jb_buf *b, const void *p, size_t n);
void jb__buf_free(jb_buf *b);

/* CLOCK_MONOTONIC in microseconds. */
int64_t jb__mono_us(void);

/* ------------------------------------------------------------ durations */

/* `ms` for a message, in the syntax the CLI takes durations in: 500ms,
 * 29s, 4m10s, 1h2m, 1d, 1m0.5s (exact; a '-' before a negative one).
 * Returns buf. */
char *jb__duration_text(char *buf, size_t len, int64_t ms);

#endif
