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
    "Usage: jobboard count [--unclaimed] [--name NAME]... [OPTIONS]\n"
    "\n"
    "Print the number of jobs on the board, claimed ones included; with\n"
    "--unclaimed, only those that can be claimed now (the jobs of a paused\n"
    "name count here, as `list --unclaimed` lists them: `jobboard queues`\n"
    "tells the paused ones). Constant time: the board keeps the counts.\n"
    "With --name, only the jobs of those names: the board keeps no count\n"
    "by name, so every job is read (as `list --name` does: O(jobs), see\n"
    "`jobboard queues` for the ready jobs of each name from the index).\n"
    "With --json: {\"count\": 12}.\n"
    "\n"
    "Options:\n"
    "  --unclaimed         count only claimable jobs\n"
    CLI_HELP_NAME_FILTER("jobs")
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "With --name, a posting that does not decode is reported on stderr (run\n"
    "'jobboard check'), not counted, and the exit status is 1.\n"
    "\n"
    "Example:\n"
    "  echo \"$(jobboard count --unclaimed) jobs waiting\"\n"
    "  jobboard count --unclaimed --name 'images.*'\n",
    CLI_O_UNCLAIMED | CLI_O_NAMES, 0, 0, ""};

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

/* The jobs of the names chosen, read one by one (the board keeps no
 * count by name). A posting that does not decode is not counted: its
 * name is unknown (reported; `jobboard check`). */
static int count_named(size_t *out, jb_board *b, const cli_opts *o,
                       bool *corrupt) {
  *out = 0;
  jb_iter *it = NULL;
  int st = jb_iter_open(&it, b, o->unclaimed ? JB_ONLY_UNCLAIMED : 0);
  for (const jb_job *job = NULL; st == JB_OK;) {
    st = jb_iter_next(&job, it);
    if (st == JB_ECORRUPT) {
      cli_fail(st);
      *corrupt = true;
      st = JB_OK;
      continue;
    }
    if (st != JB_OK || job == NULL) break;
    if (jb_name_matches(o->names, o->n_names, jb_job_name(job))) (*out)++;
  }
  jb_iter_close(it);
  return st;
}

int cmd_count(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_count, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  size_t n = 0;
  bool corrupt = false;
  int st = o.n_names ? count_named(&n, b, &o, &corrupt)
                     : jb_board_count(&n, b, o.unclaimed ? JB_ONLY_UNCLAIMED
                                                         : 0);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json)
    rc = cli_json_print(json_pack("{s:I}", "count", (json_int_t)n))
             ? CLI_EXIT_ERROR
             : 0;
  else
    printf("%zu\n", n);
  jb_board_close(b);
  return rc ? rc : corrupt ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
