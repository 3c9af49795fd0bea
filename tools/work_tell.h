/*
 * work_tell.h - what `jobboard work` tells its user (tools/work_tell.c):
 * the prefix of each forwarded line of a command's stderr, the message of
 * the first stop signal, the summary at exit, and the attempt limit the
 * worker applies to jobs that have none of their own.
 */
#ifndef JB_TOOLS_WORK_TELL_H
#define JB_TOOLS_WORK_TELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The attempt limit `work` applies to a job that has none of its own
 * (post --max-attempts) and none from the board (policy --max-attempts):
 * a retry that reaches it sends the job to the dead letters. With the
 * default back-off (1 s doubling) that is about 8.5 minutes of retries. */
#define WORK_MAX_ATTEMPTS_DEFAULT 10

/* The longest prefix a template may make, in bytes. */
#define WORK_PREFIX_MAX 1024

/* --prefix's value: NULL (not given), "none", "short", "uuid", "name" or
 * a template with {uuid} {uuid8} (its last 8 characters) {name} {who}
 * (and {{ }} for braces).
 * Returns 0, or -1 with why in `why` (size bytes). */
int work_prefix_check(const char *spec, char *why, size_t size);

/* The prefix of job (uuid, name)'s lines, worker `who`, to `out` (size
 * bytes, at least WORK_PREFIX_MAX + 1): its length. Control characters
 * of the name become '?': a prefix never moves the cursor. */
size_t work_prefix_make(char *out, size_t size, const char *spec,
                        const char *uuid, const char *name, const char *who);

/* One forwarded line: prefix, `len` bytes of `line` (no newline in it),
 * and a newline, in one write to stderr, so that nothing else written to
 * the same file lands inside it. */
void work_put_line(const char *prefix, size_t prefix_len, const char *line,
                   size_t len);

/* A job in hand, for the first stop signal's message. */
typedef struct {
  const char *uuid;
  const char *name;
  double seconds; /* CMD's run so far */
} work_in_hand;

/* The first SIGINT/SIGTERM's message: what the worker waits for and how
 * to stop now (grace_ms: --grace). */
void work_tell_stopping(int sig, const work_in_hand *jobs, int n,
                        int64_t grace_ms);
/* The second's: the commands are stopped and the jobs given back. */
void work_tell_stopping_now(int sig, int n, int64_t grace_ms);

/* What the worker did, for the summary at exit. */
typedef struct {
  unsigned long long jobs;
  unsigned long long consumed, failed, retried, snoozed, dead, abandoned,
      refused, timed_out; /* timed_out: retried or dead at a time limit */
  double run_seconds;     /* the jobs' seconds, summed */
} work_tally;

/* Count one job's outcome (the progress line's word). */
void work_tally_add(work_tally *t, const char *outcome, double seconds,
                    bool timed_out);

/* The summary: one line on stderr ("work: summary: ..."), and with
 * `json` one object {"summary": {...}} on stdout, the last line there.
 * Returns 0, or -1 when stdout cannot be written. */
int work_tally_print(const work_tally *t, double seconds, int json);

#endif
