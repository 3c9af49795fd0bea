/*
 * cmd_complete.c - completion and its history: consume (with a result and
 * an outcome), history, wait-done.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- consume */

/* --result's JSON object as a msgpack map (*out malloc'ed; NULL for {}).
 * Returns 0 or an exit code (printed). Checked before the board is
 * opened: bad input changes nothing. */
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
  else if (json_object_size(v) > 0 &&
           cli_json_to_msgpack(out, len, v, err, sizeof err))
    rc = cli_usage_error("--result: %s", err);
  json_decref(v);
  return rc;
}

/* jb_job_consume_many's callback: each failed uuid's message. */
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

/* Several uuids: one transaction (jb_job_consume_many), a status each. */
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
  int rc = jb_job_consume_many(st, b, items, n, on_item_failed, &mf);
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
  int st = jb_job_consume_result(
      b, o.args[0], o.who, o.token,
      o.failed ? JB_OUTCOME_FAILURE : JB_OUTCOME_SUCCESS, result, result_len);
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
  "   \"lost\", \"result\": {...}, \"owner\": \"worker-1\" (or null), \"name\": \"...\"\n" \
  "   (null when unknown), \"priority\": \"HIGH\" (or null), \"sequence\": 42,\n" \
  "   \"posted\": \"2024-01-02T03:04:05.000006Z\", \"claimed\": \"...\" (or\n"  \
  "   null), \"completed\": \"...\", \"reason\": \"...\" (revoked, lost; else\n" \
  "   null), \"history_seq\": 7}\n"                                                  \
  "Times are ISO-8601 UTC with microseconds. The result prints as\n"           \
  "`jobboard show` prints details (msgpack values JSON has no word for are\n" \
  "tagged objects, see `jobboard show --help`).\n"

static json_t *time_or_null(int64_t us) {
  if (us == 0) return json_null();
  char t[40];
  cli_format_time(t, sizeof t, us);
  return json_string(t);
}

static json_t *text_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *completion_to_json(const jb_completion *c) {
  json_t *result = cli_msgpack_to_json(c->result, c->result_len);
  if (result == NULL) return NULL; /* the library checked it: no memory */
  const char *prio = jb_priority_name(c->priority);
  /* "o" steals each reference, also when json_pack fails. */
  return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:I,s:o,s:o,s:o,s:o,s:I}",
                   "uuid", c->uuid, "outcome", jb_end_name(c->end), "result",
                   result, "owner", text_or_null(c->owner), "name",
                   text_or_null(c->name), "priority", text_or_null(prio),
                   "sequence", (json_int_t)c->sequence, "posted",
                   time_or_null(c->posted_us), "claimed",
                   time_or_null(c->claimed_us), "completed",
                   time_or_null(c->completed_us), "reason",
                   text_or_null(c->reason), "history_seq",
                   (json_int_t)c->history_seq);
}

/* The result as compact JSON, then a revoked job's reason in parentheses,
 * and the end of the line. */
static int put_result_line(const jb_completion *c) {
  json_t *r = cli_msgpack_to_json(c->result, c->result_len);
  if (r == NULL) return -1;
  int rc = json_dumpf(r, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
  json_decref(r);
  if (rc == 0 && c->reason) {
    fputs("  (", stdout);
    cli_put_text(stdout, c->reason);
    fputc(')', stdout);
  }
  return rc == 0 && putchar('\n') != EOF ? 0 : -1;
}

/* COMPLETED  OUTCOME  UUID  OWNER  NAME  RESULT[  (REASON)] */
static int print_record_line(const jb_completion *c) {
  char t[40];
  cli_format_time(t, sizeof t, c->completed_us);
  printf("%s  %s  %s  ", t, jb_end_name(c->end), c->uuid);
  cli_put_text(stdout, c->owner ? c->owner : "-");
  fputs("  ", stdout);
  cli_put_text(stdout, c->name ? c->name : "-");
  fputs("  ", stdout);
  return put_result_line(c);
}

/* ---------------------------------------------------------------- history */

const cli_command cli_cmd_history = {
    "history", "list completed jobs with their outcome and result, newest first",
    "Usage: jobboard history [--limit N] [OPTIONS]\n"
    "\n"
    "List the board's history: the jobs that left the board, newest first,\n"
    "with how each ended and the result its owner gave. A job reaches the\n"
    "history in the commit that completes it:\n"
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
    "The history keeps the newest 10,000 records and drops those older than\n"
    "7 days (the library's board options history_max and\n"
    "history_max_age_ms), oldest first, a few at each completion: an old\n"
    "record may outlive its age until the next completion. The records are\n"
    "streamed a few dozen at a time, so a long history never holds up\n"
    "writers.\n"
    "\n"
    "Each record is one line of text, fields separated by two spaces:\n"
    "  COMPLETED  OUTCOME  UUID  OWNER  NAME  RESULT\n"
    "where OWNER and NAME are '-' when unknown (a revoked job), RESULT is the\n"
    "result as compact JSON ({} when none was given), a revoked or lost job's line\n"
    "ends with its reason in parentheses, and control characters in the\n"
    "owner, name or reason are written as C escapes (\\n, \\t, \\x01).\n"
    "With --json, each record is one JSON object:\n"
    RECORD_JSON
    "\n"
    "Options:\n"
    "  --limit N           stop after the N newest records (0 lists none)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "A record that does not decode is reported on stderr (run 'jobboard\n"
    "check'), the listing goes on, and the exit status is 1.\n"
    "\n"
    "Examples:\n"
    "  jobboard history --limit 20\n"
    "  jobboard history --json | grep '\"outcome\":\"failed\"'\n",
    CLI_O_LIMIT, 0, 0, ""};

int cmd_history(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_history, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_history_iter *it = NULL;
  int st = jb_history_open(&it, b, 0);
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
    "Usage: jobboard wait-done [--timeout SECONDS] [OPTIONS] UUID\n"
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
    "Prints one line: the outcome (consumed, failed, trashed or revoked),\n"
    "two spaces, and the result as compact JSON ({} when none was given);\n"
    "a revoked job's line ends with its reason in parentheses. With --json,\n"
    "one object:\n"
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
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  cli_cancel_on_signals(b);
  jb_completion *c = NULL;
  int st = jb_job_wait_done(&c, b, o.args[0], o.timeout_ms);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    rc = cli_json_print(completion_to_json(c)) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
  } else if (printf("%s  ", jb_end_name(c->end)) < 0 || put_result_line(c)) {
    rc = CLI_EXIT_ERROR;
  }
  jb_completion_free(c);
  cli_cancel_on_signals(NULL);
  jb_board_close(b);
  return rc;
}
