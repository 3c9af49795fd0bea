/*
 * post_input.h - what `jobboard post` reads, checked before any board is
 * opened: --details text, and the JSON lines of --batch. Apart from
 * cmd_post.c so that tests/fuzz/fuzz_batch.c drives the same reader
 * without a board.
 */
#ifndef JOBBOARD_CLI_POST_INPUT_H
#define JOBBOARD_CLI_POST_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "jobboard.h"

/* A job read and checked, waiting to be posted. */
typedef struct {
  char *name;
  char *details; /* msgpack map, malloc'ed; NULL for {} */
  size_t details_len;
  jb_priority priority;
  char *book_name;
  char *book_uuid;
  /* A --batch line's life options (jb_post version 3; zero: not given).
   * A single post takes them from the command line instead. */
  char *unique;
  int64_t delay_ms, not_before_us, time_limit_ms, backoff_ms, backoff_max_ms,
      expires_ms;
  uint32_t max_attempts, max_snoozes;
  int expires_dead;
  size_t line; /* --batch: the input line it came from (1-based) */
} cli_pending;

/* Free p's strings (not p). */
void cli_pending_free(cli_pending *p);

/* The jb_post of p, borrowing its strings. */
jb_post cli_pending_post(const cli_pending *p);

/* The longest JSON text read for one job (a --batch line, a --details
 * file): four times the board's 1 MiB posting limit, as JSON text may be
 * larger than the msgpack posting it makes (white space, escapes). Longer
 * input is refused as soon as it passes this, without reading the rest. */
#define CLI_INPUT_MAX ((size_t)4 << 20)

/* Parse --details into p->details: JSON text (an object), "@FILE" (the
 * file's contents) or "-" (standard input's). Returns 0 or an exit code
 * (the message printed). */
int cli_details_from_text(cli_pending *p, const char *text);

/*
 * The library's own check (jb_post_check, the rules of jb_job_post), made
 * before the board is opened. `where` prefixes messages ("" or
 * "stdin line 3: "). Returns 0 or an exit code (printed).
 */
int cli_pending_check(const cli_pending *p, const char *where);

/*
 * Read --batch input from `in` to its end: one JSON object per line, blank
 * lines skipped, each line checked as cli_pending_check does. On success
 * *jobs (malloc'ed; free with cli_batch_free) holds *n jobs in input order
 * and 0 is returned. On the first bad line (or a read error) nothing is
 * kept: *jobs is NULL, *n 0, and the exit code is returned, the message
 * ("stdin line N: ...") printed.
 */
int cli_batch_read(cli_pending **jobs, size_t *n, FILE *in);

/* Free what cli_batch_read returned (NULL is fine). */
void cli_batch_free(cli_pending *jobs, size_t n);

#endif
