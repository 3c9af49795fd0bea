/*
 * tz.h - time zones for schedules (jobboard.h, "Periodic jobs"): a
 * reader of the system's zoneinfo files (TZif, RFC 8536, with the POSIX
 * TZ rule of their footer for times past their table), and the UTC
 * offset of a zone at an instant.
 *
 * Why a reader of our own: glibc converts times in one process-wide zone
 * (the TZ variable and tzset), so computing a schedule's runs in its own
 * zone would mean changing TZ while other threads of the host program
 * read it (setenv beside getenv or localtime is a data race). A zone here
 * is an immutable value, loaded once per process and name, and the
 * offset of an instant is a pure function of it: any thread, no lock
 * after the load.
 */
#ifndef JOBBOARD_TZ_H
#define JOBBOARD_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest zone name kept with a schedule. */
#define JB_TZ_NAME_MAX 64
/* Where the zones are read from. */
#define JB_TZ_DIR "/usr/share/zoneinfo"

typedef struct jb_tz jb_tz;

/* Is name[0..len) shaped as an IANA zone name (Area/Place: letters,
 * digits, '_', '-', '+', '/' between parts: no "..", not absolute)?
 * false with why[]. */
bool jb__tz_name_ok(const char *name, size_t len, char *why, size_t whylen);

/* Parse a TZif file's bytes d[0..len) into *out (malloc'ed; free with
 * jb__tz_free). false with why[]. */
bool jb__tz_parse(jb_tz **out, const uint8_t *d, size_t len, char *why,
                  size_t whylen);
void jb__tz_free(jb_tz *z);

/* The zone `name` (len bytes) read from JB_TZ_DIR, kept for the rest of
 * the process (a later tzdata update is seen by the next process): NULL
 * with why[] when the name is malformed, has no file or its file is not
 * a zone. "UTC" is built in. Safe from any thread. */
const jb_tz *jb__tz_get(const char *name, size_t len, char *why,
                        size_t whylen);

/* The zone's offset from UTC in seconds (east positive) at `t` seconds
 * since the epoch. */
int32_t jb__tz_offset(const jb_tz *z, int64_t t);

#endif
