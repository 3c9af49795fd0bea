/*
 * cmd_complete.c - completion and its history: consume (with a result and
 * an outcome), history, wait-done.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- consume */

/* --result's JSON object as a msgpack map (*out malloc'ed; {} is the
 * empty map, a result given: the history tells it from none). Returns 0
 * or an exit code (printed). Checked before the board is opened: bad
 * input changes nothing. */
static int result_from_text(char **out, size_t *len, const char *text) {
  *out = NULL;
  *len = 0;
  json_error_t je;
  json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                                   JSON_ALLOW_NUL, &je);
  if (v == NULL)
    return cli_usage_error("--result: invalid JSON at line %d, column %d "
                           "(position %d): %s", je.line, je.column,
                           je.position, je.text);
  int rc = 0;
  char err[160];
  if (!json_is_object(v))
    rc = cli_usage_error("--result: must be a JSON object like {\"rows\": 3}");
  else if (cli_json_to_msgpack(out, len, v, err, sizeof err))
    rc = cli_usage_error("--result: %s", err);
  json_decref(v);
  return rc;
}

/* jb_consume_many's callback: each failed uuid's message. */
typedef struct {
  const cli_opts *o;
  int first; /* the exit code of the first failure (0: none) */
} many_fail;

static void on_item_failed(size_t i, int status, const char *message,
                           void *payload) {
  many_fail *mf = payload;
  const char *uuid = mf->o->args[i];
  int code = cli_exit_code(status);
  if (mf->first == 0) mf->first = code;
  fflush(stdout);
  fprintf(stderr, "jobboard: %s: %s\n", uuid, message);
  if (mf->o->json)
    cli_json_print(json_pack("{s:s,s:s,s:i}", "uuid", uuid, "error", message,
                             "exit", code));
}

/* Several uuids: one transaction (jb_consume_many), a status each. */
static int consume_many(jb_board *b, const cli_opts *o, const char *result,
                        size_t result_len) {
  size_t n = (size_t)o->nargs;
  jb_consume_item *items = calloc(n, sizeof *items);
  int *st = calloc(n, sizeof *st);
  if (items == NULL || st == NULL) {
    free(items);
    free(st);
    fprintf(stderr, "jobboard: consume: out of memory\n");
    return CLI_EXIT_ERROR;
  }
  jb_outcome oc = o->failed ? JB_OUTCOME_FAILURE : JB_OUTCOME_SUCCESS;
  for (size_t i = 0; i < n; i++)
    items[i] = (jb_consume_item){o->args[i], o->who, 0, oc, result,
                                 result_len};
  many_fail mf = {o, 0};
  int rc = jb_consume_many(st, b, items, n, on_item_failed, &mf);
  if (rc != JB_OK) {
    rc = cli_fail(rc);
  } else {
    for (size_t i = 0; o->json && i < n; i++)
      if (st[i] == JB_OK &&
          cli_json_print(json_pack("{s:s,s:s,s:s}", "uuid", o->args[i],
                                   "state", "COMPLETE", "outcome",
                                   o->failed ? "failed" : "consumed")))
        mf.first = mf.first ? mf.first : CLI_EXIT_ERROR;
    rc = mf.first;
  }
  free(items);
  free(st);
  return rc;
}

int cmd_consume(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_consume, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_consume, &o)) != 0) return rc;
  for (int i = 0; i < o.nargs; i++)
    if ((rc = cli_check_uuid("job uuid", o.args[i])) != 0) return rc;
  if (o.token && o.nargs > 1)
    return cli_cmd_usage(&cli_cmd_consume, "--token names one claim: give "
                         "one UUID with it");
  char *result = NULL;
  size_t result_len = 0;
  if (o.result && (rc = result_from_text(&result, &result_len, o.result)))
    return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) {
    free(result);
    return rc;
  }
  if (o.nargs > 1) {
    rc = consume_many(b, &o, result, result_len);
    free(result);
    jb_board_close(b);
    return rc;
  }
  int st = jb_consume(
      b, o.args[0], o.who, o.token,
      &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, o.failed ? JB_OUTCOME_FAILURE : JB_OUTCOME_SUCCESS, result, result_len});
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json &&
           cli_json_print(json_pack("{s:s,s:s,s:s}", "uuid", o.args[0],
                                    "state", "COMPLETE", "outcome",
                                    o.failed ? "failed" : "consumed")))
    rc = CLI_EXIT_ERROR;
  free(result);
  jb_board_close(b);
  return rc;
}

/* ------------------------------------------------------- a record printed */

#define RECORD_JSON                                                            \
  "  {\"uuid\": \"...\", \"outcome\": \"consumed\" | \"failed\" | \"trashed\" | \"revoked\" |\n" \
  "   \"lost\" | \"cancelled\" | \"dead\" | \"expired\", \"result\": {...} (null when its\n" \
  "   owner gave none), \"owner\":\n"                                      \
  "   \"worker-1\" (or null), \"name\": \"...\" (null when unknown), \"priority\":\n" \
  "   \"HIGH\" (or null), \"sequence\": 42, \"posted\":\n"                      \
  "   \"2024-01-02T03:04:05.000006Z\", \"claimed\": \"...\" (or null),\n"        \
  "   \"completed\": \"...\", \"reason\": \"...\" (revoked, lost; else null),\n"  \
  "   \"history_seq\": 7, \"details\": {...} (the job's details as posted),\n" \
  "   \"book\": {\"name\": \"...\", \"uuid\": \"...\"} (or null), \"attempts\": 1,\n" \
  "   \"snoozes\": 0}\n"                                                     \
  "Times are ISO-8601 UTC with microseconds. The result and the details\n"    \
  "print as `jobboard show` prints details (msgpack values JSON has no word\n" \
  "for are tagged objects, see `jobboard show --help`). \"attempts\" is its\n" \
  "failed attempts: claims that ended without a completion (a job\n" \
  "claimed once and consumed has 0); \"snoozes\" how many\n" \
  "times it snoozed (`jobboard snooze`, up to 65535; 0 in a record of a\n"  \
  "release before schema 11). A record written by\n"                      \
  "jobboard 0.1.0 kept neither the details nor the book nor the attempts\n" \
  "(details and book null, attempts 0), and could not tell no result from\n" \
  "{}: its result is {} then. A revoked job's posting did not decode:\n"      \
  "its details and book are null (the posting is in quarantine).\n"

static json_t *time_or_null(int64_t us) {
  if (us == 0) return json_null();
  char t[40];
  cli_format_time(t, sizeof t, us);
  return json_string(t);
}

static json_t *text_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

/* A msgpack map the library checked as JSON, or null when absent; NULL
 * only when out of memory. */
static json_t *map_or_null(const void *map, size_t len, bool present) {
  return present ? cli_msgpack_to_json(map, len) : json_null();
}

static json_t *completion_to_json(const jb_completion *c) {
  json_t *result = map_or_null(c->result, c->result_len, c->has_result);
  json_t *details = map_or_null(c->details, c->details_len, c->details != NULL);
  json_t *book = c->book_name && c->book_uuid
                     ? json_pack("{s:o,s:o}", "name",
                                 text_or_null(c->book_name), "uuid",
                                 text_or_null(c->book_uuid))
                     : json_null();
  if (result == NULL || details == NULL || book == NULL) {
    json_decref(result);
    json_decref(details);
    json_decref(book);
    return NULL; /* the library checked them: no memory */
  }
  const char *prio = jb_priority_name(c->priority);
  /* "o" steals each reference, also when json_pack fails. */
  return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:I,s:o,"
                   "s:o,s:I,s:I}",
                   "uuid", c->uuid, "outcome", jb_end_name(c->end), "result",
                   result, "owner", text_or_null(c->owner), "name",
                   text_or_null(c->name), "priority", text_or_null(prio),
                   "sequence", (json_int_t)c->sequence, "posted",
                   time_or_null(c->posted_us), "claimed",
                   time_or_null(c->claimed_us), "completed",
                   time_or_null(c->completed_us), "reason",
                   text_or_null(c->reason), "history_seq",
                   (json_int_t)c->history_seq, "details", details, "book",
                   book, "attempts", (json_int_t)c->attempts, "snoozes",
                   (json_int_t)c->snoozes);
}

/* A msgpack map as compact JSON on stdout. 0, or -1 (no memory, write
 * error). */
static int put_map(const void *map, size_t len) {
  json_t *r = cli_msgpack_to_json(map, len);
  if (r == NULL) return -1;
  int rc = json_dumpf(r, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(r);
  return rc;
}

/* The result as compact JSON ("no result" when none was given). */
static int put_result(const jb_completion *c) {
  if (c->has_result) return put_map(c->result, c->result_len);
  return fputs("no result", stdout) == EOF ? -1 : 0;
}

/* A revoked or lost job's reason in parentheses, and the end of the
 * line. */
static int end_record_line(const jb_completion *c) {
  if (c->reason) {
    fputs("  (", stdout);
    cli_put_text(stdout, c->reason);
    fputc(')', stdout);
  }
  return putchar('\n') != EOF ? 0 : -1;
}

/* COMPLETED  OUTCOME  UUID  OWNER  NAME  RESULT  ATTEMPTS  BOOK  DETAILS
 * [  (REASON)] */
static int print_record_line(const jb_completion *c) {
  char t[40];
  cli_format_time(t, sizeof t, c->completed_us);
  printf("%s  %s  %s  ", t, jb_end_name(c->end), c->uuid);
  cli_put_text(stdout, c->owner ? c->owner : "-");
  fputs("  ", stdout);
  cli_put_text(stdout, c->name ? c->name : "-");
  fputs("  ", stdout);
  if (put_result(c)) return -1;
  printf("  %lu  ", (unsigned long)c->attempts);
  cli_put_text(stdout, c->book_name ? c->book_name : "-");
  fputs("  ", stdout);
  if (c->details ? put_map(c->details, c->details_len)
                 : (fputs("-", stdout) == EOF ? -1 : 0))
    return -1;
  return end_record_line(c);
}

/* ---------------------------------------------------------------- history */

const cli_command cli_cmd_history = {
    "history", "list completed jobs with their outcome and result, newest first",
    "Usage: jobboard history [--outcome LIST] [--name NAME]... [--since TIME]\n"
    "                        [--until TIME] [--limit N] [OPTIONS]\n"
    "\n"
    "List the board's history: the jobs that left the board, newest first,\n"
    "with how each ended, the result its owner gave, and what the job was\n"
    "(its name, details and book as posted, how many times it was claimed),\n"
    "enough to act on it: post it again, look into a failure. A job reaches\n"
    "the history in the commit that completes it, with one of these\n"
    "outcomes:\n"
    "  consumed  consumed by its owner (jobboard consume)\n"
    "  failed    consumed with --failed\n"
    "  trashed   trashed by its owner (jobboard trash)\n"
    "  revoked   moved to quarantine by `jobboard check` (its posting did\n"
    "            not decode); the reason is kept\n"
    "  lost      lost from Redis (a synced board): Redis no longer listed\n"
    "            the job after it lost its data or its namespace was wiped,\n"
    "            and nothing shows it was completed; nobody here consumed\n"
    "            it. It comes back if its poster publishes it again. The\n"
    "            reason is kept\n"
    "  cancelled taken off the board by `jobboard cancel` (or, on a synced\n"
    "            board, a schedule's run another board posted first)\n"
    "  dead      sent to the dead letters (abandon --dead, work's exit 100,\n"
    "            its attempts used up); `jobboard dead` has the letter\n"
    "  expired   not claimed by its deadline to start (post --expires;\n"
    "            with --expires-dead it went to the dead letters: dead)\n"
    "The history keeps the newest 10,000 records and drops those older than\n"
    "7 days (the library's board options history_max and\n"
    "history_max_age_ms), oldest first, a few at each completion: an old\n"
    "record may outlive its age until the next completion. The records are\n"
    "streamed a few dozen at a time, so a long history never holds up\n"
    "writers; the filters below are applied as they stream.\n"
    "\n"
    "Each record is one line of text, fields separated by two spaces:\n"
    "  COMPLETED  OUTCOME  UUID  OWNER  NAME  RESULT  ATTEMPTS  BOOK  DETAILS\n"
    "where OWNER and NAME are '-' when unknown (a revoked job), RESULT is the\n"
    "result as compact JSON, or the words `no result` when the owner gave\n"
    "none (an explicit {} prints {}), ATTEMPTS its failed attempts (claims\n"
    "that ended without a completion: abandoned, retried, lapsed; a job\n"
    "claimed once and consumed has 0), BOOK the name of the job's logbook\n"
    "('-' when none), DETAILS the job's details as compact JSON ('-' when\n"
    "not kept: a revoked job, or a record written by jobboard 0.1.0). A\n"
    "revoked or lost job's line ends with its reason in parentheses.\n"
    "Control characters in the owner, name, book or reason are written as\n"
    "C escapes (\\n, \\t, \\x01).\n"
    "With --json, each record is one JSON object:\n"
    RECORD_JSON
    "\n"
    "Options:\n"
    "  --outcome LIST      only jobs that ended so: a comma-separated list of\n"
    "                      outcomes (above), e.g. failed,lost; may be given\n"
    "                      more than once (the lists add up). An unknown\n"
    "                      outcome is a usage error (2) listing the known ones\n"
    CLI_HELP_NAME_FILTER("jobs")
    "                      (a revoked job whose name is unknown has none)\n"
    "  --since TIME        only jobs completed at TIME or later (also a\n"
    "                      duration alone: --since 1h is an hour ago)\n"
    "  --until TIME        only jobs completed before TIME (--since a --until\n"
    "                      b is the half-open span [a, b))\n"
    "  --limit N           stop after N records (0 lists none); with filters,\n"
    "                      N of the records they select\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_TIME
    "A completion's time is its commit's clock reading on the host that\n"
    "completed it.\n"
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "A record that does not decode is reported on stderr (run 'jobboard\n"
    "check'), the listing goes on, and the exit status is 1. A bad\n"
    "--outcome, --name, --since or --until, or an --until not after\n"
    "--since, is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard history --limit 20\n"
    "  jobboard history --outcome failed,lost --since 2024-05-01\n"
    "  jobboard history --name resize --since 2024-05-01T08:00Z \\\n"
    "      --until 2024-05-01T09:00Z --json\n"
    "  jobboard history --since @1714550400 --outcome consumed --limit 1\n"
    "  jobboard history --name 'images.*' --name pdf --outcome failed\n",
    CLI_O_LIMIT | CLI_O_HISTORY | CLI_O_NAMES, 0, 0, ""};

/* --name into the library's filter when it can say it (one exact name, or
 * one prefix: *prefix, malloc'ed); else *own: the records are matched
 * here. -1: out of memory. */
static int history_names(jb_history_options *f, const cli_opts *o,
                         char **prefix, bool *own) {
  *own = o->n_names > 1;
  *prefix = NULL;
  if (o->n_names != 1) return 0;
  size_t len = strlen(o->names[0]);
  if (o->names[0][len - 1] != '*') {
    f->name = o->names[0];
  } else if (len > 1) { /* "*" alone: every name, no filter */
    if ((*prefix = strndup(o->names[0], len - 1)) == NULL) return -1;
    f->name_prefix = *prefix;
  }
  return 0;
}

int cmd_history(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_history, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.since_us && o.until_us && o.until_us <= o.since_us)
    return cli_cmd_usage(&cli_cmd_history, "--until is not after --since: "
                         "no record can be in between");
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  jb_history_options f = JB_HISTORY_OPTIONS_INIT;
  f.ends = o.outcomes;
  char *prefix = NULL;
  bool own = false;
  if (history_names(&f, &o, &prefix, &own) != 0) {
    fputs("jobboard: out of memory\n", stderr);
    jb_board_close(b);
    return CLI_EXIT_ERROR;
  }
  f.since_us = o.since_us;
  f.until_us = o.until_us;
  jb_history_iter *it = NULL;
  int st = jb_history_query(&it, b, &f);
  free(prefix); /* the iterator keeps a copy */
  if (st != JB_OK) {
    jb_board_close(b);
    return cli_fail(st);
  }
  unsigned long long shown = 0;
  while (!o.has_limit || shown < o.limit) {
    const jb_completion *c;
    st = jb_history_next(&c, it);
    if (st == JB_ECORRUPT) { /* reported; the iterator moved past it */
      rc = cli_fail(st);
      continue;
    }
    if (st != JB_OK) {
      rc = cli_fail(st);
      break;
    }
    if (c == NULL) break;
    if (own && (c->name == NULL || !jb_name_matches(o.names, o.n_names,
                                                    c->name)))
      continue;
    int bad = o.json ? cli_json_print(completion_to_json(c))
                     : print_record_line(c);
    if (bad) {
      rc = CLI_EXIT_ERROR;
      break;
    }
    shown++;
  }
  jb_history_close(it);
  jb_board_close(b);
  return rc;
}

/* -------------------------------------------------------------- wait-done */

const cli_command cli_cmd_wait_done = {
    "wait-done", "wait for a job to complete; print its outcome and result",
    "Usage: jobboard wait-done [--timeout DURATION] [OPTIONS] UUID\n"
    "\n"
    "Wait until the job UUID leaves the board, then print how it ended and\n"
    "the result its owner gave, from the board's history (see `jobboard\n"
    "history`). A job already completed answers at once; a job on the board\n"
    "is waited for: the wait sleeps on the board's signal file and is woken\n"
    "by the commit that completes the job, in any process (it does not\n"
    "poll). A UUID that is neither on the board nor in its history (never\n"
    "posted here, or its record was dropped by the history's bounds) is\n"
    "'not found' at once.\n"
    "\n"
    "Prints one line: the outcome (consumed, failed, trashed, revoked,\n"
    "lost, cancelled, dead or expired: `jobboard history --help`), two\n"
    "spaces, and the result as compact JSON (the words `no result` when\n"
    "none was given); a revoked or lost job's line ends with\n"
    "its reason in parentheses. With --json, one object:\n"
    RECORD_JSON
    "The exit status is 0 whatever the outcome: read it from the output.\n"
    "\n"
    "Options:\n"
    CLI_HELP_TIMEOUT
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or UUID is neither on the board\n"
    "     nor in its history\n"
    "  7  timed out: the job is still on the board after --timeout\n"
    "  130, 143  interrupted by SIGINT or SIGTERM\n"
    "  A malformed UUID is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  uuid=$(jobboard post resize --details '{\"path\": \"a.png\"}')\n"
    "  jobboard wait-done --timeout 60 \"$uuid\"    # consumed  {\"rows\":3}\n"
    "  jobboard wait-done --json \"$uuid\" | python3 -c \\\n"
    "    'import json,sys; print(json.load(sys.stdin)[\"result\"])'\n",
    CLI_O_TIMEOUT, 1, 1, "UUID"};

int cmd_wait_done(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_wait_done, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  cli_cancel_on_signals(b);
  jb_completion *c = NULL;
  int st = jb_job_wait_done(&c, b, o.args[0], o.timeout_ms);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    rc = cli_json_print(completion_to_json(c)) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
  } else if (printf("%s  ", jb_end_name(c->end)) < 0 || put_result(c) ||
             end_record_line(c)) {
    rc = CLI_EXIT_ERROR;
  }
  jb_completion_free(c);
  cli_cancel_on_signals(NULL);
  jb_board_close(b);
  return rc;
}
