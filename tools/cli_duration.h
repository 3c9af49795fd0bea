/*
 * cli_duration.h - the one syntax of durations and times the CLI takes and
 * prints (tools/cli_duration.c).
 *
 * A duration is a number of seconds (fractions allowed: 1.5) or numbers
 * with units, largest first, each unit at most once: 500ms, 90s, 5m,
 * 1h30m, 2d12h, 1.5h. Units: d (24 h), h, m, s, ms; lowercase only (5M
 * could be months), no spaces, no sign. A relative time is a duration
 * from now: +10m, -1h, "1h ago".
 * cli_common.h includes it: every command has these.
 */
#ifndef JOBBOARD_CLI_DURATION_H
#define JOBBOARD_CLI_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli_common.h"

/* The forms of a duration, for messages. */
#define CLI_DURATION_FORMS "500ms, 90s, 5m, 1h30m, 7d or seconds"
/* The forms of a time, for messages. */
#define CLI_TIME_FORMS                                                         \
  "2026-11-28T09:30:00Z (UTC unless an offset is given), @SECONDS, now, "     \
  "-1h, '1h ago' or +10m"

/* `text` as a duration, a bare number counting `bare_ms` milliseconds
 * (1000: seconds; 1: the flush interval's milliseconds), into *out
 * (rounded to a millisecond) within min_ms..max_ms. False when it is not
 * one or out of range (cli_duration_usage says which). */
bool cli_parse_duration(const char *text, int64_t bare_ms, int64_t min_ms,
                        int64_t max_ms, int64_t *out);

/* Print why `text`, given to option `opt` ("--delay", "SECONDS"), is not
 * a duration within min_ms..max_ms (bare numbers count bare_ms): the
 * accepted forms, or the range in the same syntax. `cmd` NULL: no command
 * in the message. Returns CLI_EXIT_USAGE. */
int cli_duration_usage(const cli_command *cmd, const char *opt,
                       const char *text, int64_t bare_ms, int64_t min_ms,
                       int64_t max_ms);

/* Print that `text`, given to `opt`, is not a time (CLI_TIME_FORMS).
 * Returns CLI_EXIT_USAGE. */
int cli_time_usage(const cli_command *cmd, const char *opt, const char *text);

/* A time relative to now: +DURATION, -DURATION or "DURATION ago" (also
 * +SECONDS, -SECONDS), into microseconds since the epoch. 1 when `text` is
 * not of this shape, 0 when read, -1 when of it but bad. */
int cli_parse_relative_time(int64_t *us, const char *text);

/* `ms` in the syntax durations are taken in, exactly: 0s, 500ms, 29s,
 * 4m10s, 1h2m, 1d, 1m0.5s; negative ones with a leading '-'. Returns buf. */
char *cli_format_duration(char *buf, size_t len, int64_t ms);

/* What is left of a countdown, for people: whole seconds, rounded up, from
 * a second on (29s, 4m10s); milliseconds below. Returns buf. */
char *cli_format_remaining(char *buf, size_t len, int64_t ms);

#endif
