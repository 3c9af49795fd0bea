/*
 * cli_output.h - `jobboard list`'s readable output: the header row, the
 * columns and `--format TEMPLATE` (cli_output.c).
 */
#ifndef JOBBOARD_CLI_OUTPUT_H
#define JOBBOARD_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobboard.h"

/* A duration in the syntax the options take: 0s, 5s, 4m10s, 2h3m, 3d,
 * 3d4h (its two largest units, rounded down to whole seconds). Negative
 * ms print as 0s. */
void cli_output_duration(char *buf, size_t len, int64_t ms);

/* The job's STATE as list shows it: UNCLAIMED, CLAIMED or DELAYED (not due
 * at now_us). */
const char *cli_output_state(const jb_job *job, int64_t now_us);

/* The list's header row and a job's line (the columns UUID, PRIORITY,
 * STATE, AGE, FAILED, PROGRESS, OWNER, NAME). 0, or -1 on a write error. */
int cli_output_list_header(FILE *f);
int cli_output_list_line(FILE *f, const jb_job *job, bool paused,
                         int64_t now_us);

/* --format TEMPLATE: 0 when `tmpl` is one, else -1 with why in err. */
int cli_output_template_check(const char *tmpl, char *err, size_t errlen);
/* A job through a checked template, then a newline. 0, or -1 (a write
 * error, out of memory). */
int cli_output_template_print(FILE *f, const char *tmpl, const jb_job *job,
                              bool paused, int64_t now_us);

/* list --help's text on --format and its fields (every field of
 * cli_output.c's table; tests/cli_output.sh holds them to it). */
#define CLI_HELP_LIST_FORMAT                                                   \
  "--format TEMPLATE prints each job as TEMPLATE says, one line per job,\n"   \
  "with no header: {FIELD} is the job's FIELD, \\t a tab, \\n a newline,\n"   \
  "\\\\ a backslash, \\{ and \\} braces; any other text is printed as it is.\n"\
  "An unknown field, an unclosed {, or another escape is a usage error (2)\n" \
  "that lists the fields. Text fields write control characters as C\n"     \
  "escapes, as the columns do. The fields:\n"                                 \
  "  uuid          the job's uuid\n"                                          \
  "  name          its name\n"                                                \
  "  priority      VERY_HIGH, HIGH, NORMAL, LOW or VERY_LOW\n"                \
  "  state         UNCLAIMED, CLAIMED or DELAYED, with (paused) as in STATE\n" \
  "  paused        true or false (as --json's paused)\n"                      \
  "  sequence      its place in the claim order (a number)\n"                 \
  "  created       when it was posted (ISO-8601 UTC, microseconds)\n"         \
  "  modified      its last change (ISO-8601 UTC, microseconds)\n"            \
  "  age           time since it was posted, as AGE\n"                        \
  "  owner         its claimant, - when unclaimed\n"                          \
  "  attempts      its failed attempts, as --json's attempts (a number)\n"    \
  "  max_attempts  the most it was posted with, - for the board's policy\n"  \
  "  progress      the last reported percent (42.5%), - when none\n"          \
  "  message       the last progress message, - when none\n"                  \
  "  due           a delayed job's due time (ISO-8601 UTC), - when none\n"    \
  "  book          its logbook's name, - when none\n"                         \
  "  unique        its unique key (post --unique), - when none\n"             \
  "  details       its details as compact JSON\n"

#endif
