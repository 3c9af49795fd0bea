/*
 * cmd_query.c - the one-answer questions: owner, state, count.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>

const cli_command cli_cmd_owner = {
    "owner", "print who owns a job (nothing when unclaimed)",
    "Usage: jobboard owner [OPTIONS] UUID\n"
    "\n"
    "Print the name of the job's owner. When the job is unclaimed, or not\n"
    "on the board at all (consumed, trashed, never posted), print nothing\n"
    "and exit 0: use `jobboard state` to tell those apart.\n"
    "With --json: {\"uuid\": \"...\", \"owner\": \"worker-1\"} (owner null when\n"
    "there is none). Text output prints control characters of a name\n"
    "escaped (a newline as \\n, others as \\xNN), so the answer is one line;\n"
    "--json gives the name exactly.\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  A malformed UUID is a usage error (2).\n"
    "\n"
    "Example:\n"
    "  [ \"$(jobboard owner \"$uuid\")\" = worker-1 ] && echo mine\n",
    0, 1, 1, "UUID"};

const cli_command cli_cmd_state = {
    "state", "print UNCLAIMED, CLAIMED or COMPLETE for a job",
    "Usage: jobboard state [OPTIONS] UUID\n"
    "\n"
    "Print the job's state: UNCLAIMED (on the board, claimable), CLAIMED (on\n"
    "the board, owned) or COMPLETE (not on the board: consumed, trashed, or\n"
    "never posted here; as in taskflow, these read the same).\n"
    "With --json: {\"uuid\": \"...\", \"state\": \"CLAIMED\"}.\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  A malformed UUID is a usage error (2).\n"
    "\n"
    "Example:\n"
    "  until [ \"$(jobboard state \"$uuid\")\" = COMPLETE ]; do sleep 1; done\n",
    0, 1, 1, "UUID"};

const cli_command cli_cmd_count = {
    "count", "print the number of jobs on the board",
    "Usage: jobboard count [--unclaimed] [OPTIONS]\n"
    "\n"
    "Print the number of jobs on the board, claimed ones included; with\n"
    "--unclaimed, only those that can be claimed now. Constant time: the\n"
    "board keeps the counts.\n"
    "With --json: {\"count\": 12}.\n"
    "\n"
    "Options:\n"
    "  --unclaimed         count only claimable jobs\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Example:\n"
    "  echo \"$(jobboard count --unclaimed) jobs waiting\"\n",
    CLI_O_UNCLAIMED, 0, 0, ""};

int cmd_owner(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_owner, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  char owner[JB_WHO_MAX + 1];
  int st = jb_job_find_owner(owner, b, o.args[0]);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    json_t *who = owner[0] ? json_string(owner) : json_null();
    if (who == NULL) who = json_null(); /* not UTF-8: posted by a stranger */
    if (cli_json_print(json_pack("{s:s,s:o}", "uuid", o.args[0], "owner", who)))
      rc = CLI_EXIT_ERROR;
  } else if (owner[0]) {
    cli_put_text(stdout, owner);
    putchar('\n');
  }
  jb_board_close(b);
  return rc;
}

int cmd_state(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_state, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  jb_state state;
  int st = jb_job_get_state(&state, b, o.args[0]);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json)
    rc = cli_json_print(json_pack("{s:s,s:s}", "uuid", o.args[0], "state",
                                  jb_state_name(state)))
             ? CLI_EXIT_ERROR
             : 0;
  else
    puts(jb_state_name(state));
  jb_board_close(b);
  return rc;
}

int cmd_count(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_count, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  size_t n = 0;
  int st = jb_board_count(&n, b, o.unclaimed ? JB_ONLY_UNCLAIMED : 0);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json)
    rc = cli_json_print(json_pack("{s:I}", "count", (json_int_t)n))
             ? CLI_EXIT_ERROR
             : 0;
  else
    printf("%zu\n", n);
  jb_board_close(b);
  return rc;
}
