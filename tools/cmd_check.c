/*
 * cmd_check.c - `jobboard check`: verify the board's invariants.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

const cli_command cli_cmd_check = {
    "check", "verify the board's invariants; quarantine undecodable postings",
    "Usage: jobboard check [OPTIONS]\n"
    "\n"
    "Verify the board's invariants: every job on the board is in exactly\n"
    "one of the ready index and the claims; every index entry points at a\n"
    "job; every posting decodes; sequences and counters agree. A posting\n"
    "that does not decode is moved to the board's quarantine table with the\n"
    "reason (never deleted), so the rest of the board keeps working, and\n"
    "its history record says 'revoked' with the reason (jobboard history).\n"
    "Every history record must decode. Every page of the data file is\n"
    "accounted for: each must be one of the two meta pages, a page of\n"
    "exactly one table's tree (the free list's included) or free, and each\n"
    "table's counts must be those LMDB records; a page in two places, a\n"
    "leaked page or one that cannot be read is a problem line starting\n"
    "with 'pages:'. When a table's page cannot be read, the tables are not\n"
    "read through LMDB (it could crash on it): copy what is readable with\n"
    "'jobboard salvage SRC DST'.\n"
    "Each problem or note is printed as one line on stdout, then a summary:\n"
    "  jobs N, ready N, claimed N, log events N, trashed N, quarantined N,\n"
    "  moved N, problems N, history N\n"
    "and 'board OK' or 'board NOT OK'. With --json, each line is\n"
    "{\"problem\": \"...\"}, or {\"note\": \"...\"} for a record quarantined by an\n"
    "earlier run (not a problem), and the summary is one object\n"
    "{\"ok\": true, \"jobs\": N,\n"
    "\"ready\": N, \"claimed\": N, \"log_events\": N, \"trashed\": N,\n"
    "\"quarantined\": N, \"moved\": N, \"problems\": N, \"history\": N}.\n"
    "The check's time and result are kept in the board (one small write\n"
    "after the check): `jobboard stats`, the metrics\n"
    "(jobboard_last_check_timestamp_seconds, jobboard_last_check_problems)\n"
    "and `jobboard web` say when it was last checked and what was found. A\n"
    "board this process may only read is checked, not recorded; a record\n"
    "that cannot be written (a full disk) is a note on stderr, and the exit\n"
    "status stays the check's.\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    "Exit status:\n"
    "  0  the board holds every invariant and nothing had to be quarantined\n"
    "  1  a problem was found or a posting was quarantined by this run (or\n"
    "     another error)\n"
    "  2  usage error\n"
    "  3  the board directory does not exist\n"
    "\n"
    "Example:\n"
    "  jobboard check --board /srv/board || alert 'board needs a look'\n",
    0, 0, 0, ""};

typedef struct {
  int json;
  int failed; /* a line could not be written */
} check_out;

static void on_line(const char *line, void *payload) {
  check_out *out = payload;
  /* The record of the check could not be written: not the board's
   * problem, said on stderr. */
  if (strncmp(line, "not recorded: ", 14) == 0) {
    fprintf(stderr, "jobboard: note: the check's result was %s\n", line);
    return;
  }
  if (out->json) {
    json_t *v = json_string(line);
    if (v == NULL) v = json_string("(a line that is not UTF-8)");
    /* jb_board_check's notes, unlike its problems, start "quarantined: ". */
    const char *kind =
        strncmp(line, "quarantined: ", 13) == 0 ? "note" : "problem";
    if (cli_json_print(json_pack("{s:o}", kind, v))) out->failed = 1;
  } else {
    cli_put_text(stdout, line);
    if (putchar('\n') == EOF) out->failed = 1;
  }
}

int cmd_check(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_check, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  check_out out = {o.json, 0};
  jb_check_stats s = {0};
  /* The result is kept in the board (stats, metrics and the web page say
   * when it was last checked), unless this process may only read it. */
  int st = jb_board_check_ex(&s, b, jb_board_readonly(b) ? 0 : JB_CHECK_RECORD,
                             on_line, &out);
  jb_board_close(b);
  /* JB_ECORRUPT with counts is the verdict "not OK"; anything else that is
   * not JB_OK means the check itself could not run. */
  int verdict = st == JB_OK || (st == JB_ECORRUPT && (s.problems || s.moved));
  if (!verdict) {
    cli_fail(st);
    return CLI_EXIT_ERROR;
  }
  if (o.json) {
    json_t *v = json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                          "ok", st == JB_OK,
                          "jobs", (json_int_t)s.jobs,
                          "ready", (json_int_t)s.ready,
                          "claimed", (json_int_t)s.claimed,
                          "log_events", (json_int_t)s.log_events,
                          "trashed", (json_int_t)s.trashed,
                          "quarantined", (json_int_t)s.quarantined,
                          "moved", (json_int_t)s.moved,
                          "problems", (json_int_t)s.problems,
                          "history", (json_int_t)s.history);
    if (cli_json_print(v)) out.failed = 1;
  } else {
    printf("jobs %zu, ready %zu, claimed %zu, log events %zu, trashed %zu, "
           "quarantined %zu, moved %zu, problems %zu, history %zu\n",
           s.jobs, s.ready, s.claimed, s.log_events, s.trashed, s.quarantined,
           s.moved, s.problems, s.history);
    puts(st == JB_OK ? "board OK" : "board NOT OK");
  }
  if (out.failed) return CLI_EXIT_ERROR;
  if (st != JB_OK) {
    fflush(stdout);
    fprintf(stderr, "jobboard: check: %zu problem%s found, %zu posting%s "
            "moved to quarantine\n", s.problems, s.problems == 1 ? "" : "s",
            s.moved, s.moved == 1 ? "" : "s");
    return CLI_EXIT_ERROR;
  }
  return CLI_EXIT_OK;
}
