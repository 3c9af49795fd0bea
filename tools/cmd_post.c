/*
 * cmd_post.c - `jobboard post`: one job from the command line, or many
 * (`--batch`) from JSON lines on stdin.
 *
 * A batch is read and checked whole before the board is even opened, and
 * then posted in chunks of CHUNK jobs, one write transaction each. So a bad
 * line posts nothing at all, and a million lines cost a thousand commits,
 * not a million.
 */
#include "cli_common.h"
#include "cli_error.h"
#include "cli_refusal.h"
#include "json.h"
#include "post_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Jobs per write transaction: large enough that the commit's flush is
 * amortised, small enough that a transaction's dirty pages stay modest. */
#define CHUNK 1000


const cli_command cli_cmd_post = {
    "post", "post a job (or many from stdin) and print its uuid",
    "Usage: jobboard post [OPTIONS] NAME\n"
    "       jobboard post --batch [--board DIR] [--durability MODE] [--json] < LINES\n"
    "\n"
    "Post a job named NAME and print its new uuid. The board directory is\n"
    "created (not its parents) and initialised if it does not exist yet.\n"
    "The job gets the board's next sequence number: jobs are listed and\n"
    "claimed by priority, highest first, and oldest first within a priority.\n"
    "\n"
    "With --batch, read one JSON object per line from stdin and post one\n"
    "job per line, printing one uuid per line in input order:\n"
    "  {\"name\": \"resize\", \"details\": {\"path\": \"a.png\"}, \"priority\": \"high\",\n"
    "   \"book_name\": \"my-book\", \"book_uuid\": \"0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9\"}\n"
    "Only \"name\" is required. A line takes the life options below too,\n"
    "named with '_' for '-': \"delay\", \"time_limit\", \"backoff\",\n"
    "\"backoff_max\" and \"expires\" in seconds (a number, or the option's\n"
    "text in a string), \"max_attempts\" and \"max_snoozes\" integers,\n"
    "\"not_before\" a string as --not-before takes it, \"unique\" a string,\n"
    "\"expires_dead\" true or false:\n"
    "  {\"name\": \"mail\", \"unique\": \"welcome-42\", \"expires\": 3600}\n"
    "Blank lines are skipped; any other key is an error; two lines with one\n"
    "unique key are refused. Every line is read and checked before anything is posted: a bad\n"
    "line is reported with its line number and NOTHING from the input is\n"
    "posted. Valid input is posted in chunks of 1000 jobs per transaction\n"
    "(each chunk all or nothing); should the board fail mid-way (disk full),\n"
    "the uuids of the chunks already posted have been printed. A line longer\n"
    "than 4 MiB (4 times the posting limit: JSON text is larger than the\n"
    "posting it makes) is refused as soon as it passes that, unread beyond.\n"
    "No line at all still makes the board (as `jobboard init`).\n"
    "\n"
    "Options:\n"
    "  --details JSON      the job's details: a JSON object, stored as a\n"
    "                      msgpack map (default: {}). Nesting is limited to\n"
    "                      31 levels; the whole posting to 1 MiB.\n"
    "  --details @FILE     the details from FILE (for details longer than the\n"
    "  --details -         shell's argument limit), or from standard input;\n"
    "                      at most 4 MiB of JSON text is read\n"
    "  --priority P        VERY_HIGH, HIGH, NORMAL (default), LOW or VERY_LOW,\n"
    "                      in any case\n"
    "  --book-name NAME    the taskflow logbook this job belongs to; give\n"
    "  --book-uuid UUID    both or neither\n"
    "  --batch             post JSON lines from stdin (see above); NAME and\n"
    "                      the other options are then given per line\n"
    "\n"
    "A job's life (see jobboard(1), \"A JOB'S LIFE\"):\n"
    "  --delay DURATION    not claimable for this long (listed and counted,\n"
    "                      with its due time; fractions allowed)\n"
    "  --not-before TIME   not claimable before TIME: RFC 3339, UTC unless it\n"
    "                      says otherwise (2026-11-28T09:30:00, ...+01:00),\n"
    "                      @UNIXSECONDS, now, or from now: +10m, +90\n"
    "  --unique KEY        refused while a live job (claimed or not, delayed\n"
    "                      or not) holds KEY: that job's uuid is printed and\n"
    "                      the exit status is 11; the key is free again once\n"
    "                      the job leaves the board in any way. On a board\n"
    "                      synced with Redis the key is unique across every\n"
    "                      board of the namespace: it is reserved in Redis\n"
    "                      first (a job on another host holding it: exit 11,\n"
    "                      its uuid printed). With Redis unreachable the post\n"
    "                      is accepted here and the key is taken when the job\n"
    "                      is published; if another live job holds it then,\n"
    "                      the job is not published and goes to the dead\n"
    "                      letters, its reason naming the key and the holder\n"
    "                      (`jobboard dead requeue` brings it back)\n"
    "  --max-attempts N    after N failed attempts (abandoned, retried, a\n"
    "                      lapsed claim, a time limit) the job goes to the dead\n"
    "                      letters (default: the board's policy, no maximum)\n"
    "  --time-limit DURATION a claim of the job lapses this long after it is\n"
    "                      made, however often its holder renews it (`work`\n"
    "                      stops its command then)\n"
    "  --backoff DURATION  the first retry's back-off (doubling, +-20 %\n"
    "                      jitter; default: the board's, 1 s)\n"
    "  --backoff-max DURATION the longest back-off (default: the board's, 1 h)\n"
    "  --max-snoozes N     `snooze` (and `work`'s exit 76) is refused once the\n"
    "                      job snoozed N times (default: no limit); snoozes\n"
    "                      are not attempts\n"
    "  --expires DURATION  a deadline to start: not claimed within DURATION of\n"
    "                      the post (fractions allowed), the job ends EXPIRED\n"
    "                      (`history` says \"expired\") and is never claimed; a\n"
    "                      claim before it starts the job and the deadline no\n"
    "                      longer applies. Redis keeps no deadline: once the\n"
    "                      job is published (a synced board) it has none\n"
    "  --expires-dead      with --expires: an expired job goes to the dead\n"
    "                      letters (cause \"expired\") instead\n"
    CLI_HELP_BOARD_OPTIONS
    CLI_HELP_REDIS_OPTIONS
    "\n"
    "Output: the uuid, one per line (with --json: {\"uuid\": \"...\"}).\n"
    "\n"
    CLI_HELP_ENV
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  any other error: the board directory could not be created (its\n"
    "     parent does not exist), I/O, a corrupt board, no space left\n"
    "  2  usage error or invalid input (the message names the field and,\n"
    "     with --batch, the line); nothing was posted\n"
    "  11 --unique: a live job holds the key; its uuid is printed (stdout)\n"
    "     and named in the message; nothing was posted. --batch: the message\n"
    "     names the line and the holder; the chunks before it were posted\n"
    "\n"
    "Examples:\n"
    "  jobboard post resize --details '{\"path\": \"a.png\"}' --priority high\n"
    "  seq 3 | sed 's/.*/{\"name\": \"job-&\"}/' | jobboard post --batch\n",
    CLI_O_POST | CLI_O_LIFE | CLI_O_REDIS, 0, 1, "NAME"};

/* ------------------------------------------------------------ one post */

static int print_uuid(const cli_opts *o, const char *uuid) {
  if (o->json) return cli_json_print(json_pack("{s:s}", "uuid", uuid));
  return puts(uuid) == EOF ? -1 : 0;
}

static int post_one(cli_opts *o) {
  cli_pending p = {0};
  p.priority = JB_PRIORITY_NORMAL;
  int rc;
  if (o->priority && (rc = jb_priority_parse(&p.priority, o->priority)) != JB_OK)
    return cli_fail(rc);
  if (o->details && (rc = cli_details_from_text(&p, o->details)) != 0) return rc;
  /* Borrowed from argv for the check: not cli_pending_free's to free. */
  p.name = o->args[0];
  p.book_name = (char *)o->book_name;
  p.book_uuid = (char *)o->book_uuid;
  rc = cli_pending_check(&p, "");
  p.name = p.book_name = p.book_uuid = NULL;
  if (rc != 0) {
    cli_pending_free(&p);
    return rc;
  }
  jb_post post = JB_POST_INIT;
  post.name = o->args[0];
  post.details = p.details;
  post.details_len = p.details_len;
  post.priority = p.priority;
  post.book_name = o->book_name;
  post.book_uuid = o->book_uuid;
  post.delay_ms = o->delay_ms;
  post.not_before_us = o->not_before_us;
  post.unique_key = o->unique;
  post.max_attempts = o->max_attempts;
  post.time_limit_ms = o->time_limit_ms;
  post.backoff_ms = o->backoff_ms;
  post.backoff_max_ms = o->backoff_max_ms;
  post.max_snoozes = o->max_snoozes;
  post.expires_ms = o->expires_ms;
  if (o->expires_dead) post.flags |= JB_POST_EXPIRES_DEAD;
  /* Refused before the board is made or opened. */
  if ((rc = jb_post_check(&post, 0)) != JB_OK) {
    cli_pending_free(&p);
    return cli_fail(rc);
  }
  jb_board *b = NULL;
  if ((rc = cli_open(&b, o, JB_OPEN_CREATE)) == 0) {
    char uuid[JB_UUID_STRLEN];
    int st = jb_job_post(uuid, b, &post);
    if (st == JB_EEXISTS) {
      /* The job that holds the key, for a script to follow; with --json
       * in one object with the refusal. */
      if (o->json) {
        rc = cli_fail(st);
        cli_json_refused(json_pack("{s:s}", "uuid", uuid), rc);
      } else {
        print_uuid(o, uuid);
        rc = cli_fail(st);
      }
    } else {
      rc = st == JB_OK ? (print_uuid(o, uuid) ? CLI_EXIT_ERROR : 0)
                       : cli_fail(st);
    }
    jb_board_close(b);
  }
  cli_pending_free(&p);
  return rc;
}

/* --------------------------------------------------------------- batch */

static int post_batch(cli_opts *o) {
  cli_pending *jobs = NULL;
  size_t n = 0;
  int rc = cli_batch_read(&jobs, &n, stdin);

  jb_board *b = NULL;
  /* No job at all still makes the board (a service's first start). */
  if (rc == 0) rc = cli_open(&b, o, JB_OPEN_CREATE);
  jb_post *posts = NULL;
  char (*uuids)[JB_UUID_STRLEN] = NULL;
  if (rc == 0 && n > 0) {
    size_t m = n < CHUNK ? n : CHUNK;
    posts = calloc(m, sizeof *posts);
    uuids = calloc(m, sizeof *uuids);
    if (posts == NULL || uuids == NULL) {
      fputs("jobboard: out of memory\n", stderr);
      rc = CLI_EXIT_ERROR;
    }
  }
  for (size_t done = 0; rc == 0 && done < n;) {
    size_t m = n - done < CHUNK ? n - done : CHUNK;
    for (size_t i = 0; i < m; i++) posts[i] = cli_pending_post(&jobs[done + i]);
    memset(uuids, 0, m * sizeof *uuids);
    int st = jb_job_post_batch(uuids, b, posts, m);
    if (st != JB_OK) {
      fflush(stdout);
      /* A held unique key: the library wrote the holder's uuid in the
       * refused post's slot alone, which names the line. */
      size_t at = m;
      for (size_t i = 0; st == JB_EEXISTS && i < m && at == m; i++)
        if (uuids[i][0]) at = i;
      char line[48] = "";
      if (at < m)
        snprintf(line, sizeof line, "stdin line %zu: ", jobs[done + at].line);
      if (done == 0 && at == m) {
        rc = cli_fail(st);
      } else {
        char msg[1536];
        if (done == 0)
          snprintf(msg, sizeof msg, "%s%s; nothing was posted", line,
                   jb_errmsg());
        else
          snprintf(msg, sizeof msg, "%s%s (the first %zu jobs were posted; "
                   "their uuids are printed above)", line, jb_errmsg(), done);
        cli_error_line("jobboard", msg);
        rc = cli_exit_code(st);
      }
      /* --json: the refused line's holder, with the refusal. */
      if (o->json && at < m)
        cli_json_refused(json_pack("{s:s,s:I}", "uuid", uuids[at], "line",
                                   (json_int_t)jobs[done + at].line), rc);
      break;
    }
    for (size_t i = 0; rc == 0 && i < m; i++)
      if (print_uuid(o, uuids[i])) rc = CLI_EXIT_ERROR;
    done += m;
  }
  free(posts);
  free(uuids);
  jb_board_close(b);
  cli_batch_free(jobs, n);
  return rc;
}

int cmd_post(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_post, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  /* Only a unique key needs Redis at post time (on a synced board it is
   * reserved there first): a plain post connects to nothing, unless
   * --redis or --namespace is given. */
  if (!o.unique && !o.redis && !o.ns) o.options &= ~(unsigned)CLI_O_REDIS;
  if (o.batch) {
    if (o.nargs > 0)
      return cli_cmd_usage(&cli_cmd_post, "--batch reads the jobs from stdin: "
                           "unexpected argument '%s'", o.args[0]);
    if (o.delay_ms || o.not_before_us || o.unique || o.max_attempts ||
        o.time_limit_ms || o.backoff_ms || o.backoff_max_ms ||
        o.max_snoozes || o.expires_ms || o.expires_dead)
      return cli_cmd_usage(&cli_cmd_post, "--batch takes a job's life "
                           "options (delay, unique key, attempts, deadline "
                           "...) from each input line, not from options");
    if (o.details || o.priority || o.book_name || o.book_uuid)
      return cli_cmd_usage(&cli_cmd_post, "--batch takes details, priority "
                           "and book from each input line, not from options");
    return post_batch(&o);
  }
  if (o.nargs == 0) return cli_cmd_usage(&cli_cmd_post, "missing NAME");
  if (o.expires_dead && !o.expires_ms)
    return cli_cmd_usage(&cli_cmd_post, "--expires-dead needs --expires "
                         "DURATION (a deadline to start)");
  return post_one(&o);
}
