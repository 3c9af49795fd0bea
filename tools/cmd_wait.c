/*
 * cmd_wait.c - `jobboard wait`: block until the board holds a job.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>

const cli_command cli_cmd_wait = {
    "wait", "block until the board holds a job (or a claimable one)",
    "Usage: jobboard wait [--claimable] [--timeout SECONDS] [OPTIONS]\n"
    "\n"
    "Return as soon as the board holds at least one job, or with --claimable\n"
    "at least one job that can be claimed now (unclaimed, or its claim\n"
    "lapsed). The wait sleeps on the board's signal file and is woken by the\n"
    "commit that matters (a post, an abandon, a lapse): it does not poll.\n"
    "On success print the number of jobs (or of claimable jobs) found; with\n"
    "--json: {\"jobs\": N} or {\"claimable\": N}.\n"
    "The jobs of a paused name (`jobboard pause`) count as claimable here,\n"
    "as `count --unclaimed` counts them.\n"
    "There is no --name: the board's signal wakes a wait for a job of any\n"
    "name, and a wait for some names would wake, count and sleep again at\n"
    "each change of the others, spinning while their jobs are ready. To\n"
    "wait for a job of some names, claim it: `jobboard claim-next --wait\n"
    "SECONDS --name NAME` returns the job once there is one.\n"
    "\n"
    "Options:\n"
    "  --claimable         wait for a claimable job, not just any job\n"
    CLI_HELP_TIMEOUT
    CLI_HELP_CREATE
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  7  timed out: no (claimable) job within --timeout\n"
    "  130, 143  interrupted by SIGINT or SIGTERM\n"
    "\n"
    "Examples:\n"
    "  jobboard wait --claimable --timeout 30 && jobboard claim-next --who w1\n"
    "  jobboard wait; echo \"a job is on the board\"\n",
    CLI_O_TIMEOUT | CLI_O_CLAIMABLE | CLI_O_CREATE, 0, 0, ""};

int cmd_wait(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_wait, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ | CLI_OPEN_WAIT)) != 0) return rc;
  cli_cancel_on_signals(b);
  unsigned flags = o.claimable ? JB_ONLY_UNCLAIMED : 0;
  int st = jb_board_wait(b, flags, o.timeout_ms);
  size_t n = 0;
  if (st == JB_OK) st = jb_board_count(&n, b, flags);
  if (st == JB_OK) {
    int bad = o.json ? cli_json_print(json_pack("{s:I}", o.claimable ? "claimable" : "jobs",
                                                (json_int_t)n))
                     : printf("%zu\n", n) < 0;
    rc = bad ? CLI_EXIT_ERROR : CLI_EXIT_OK;
  } else {
    rc = cli_fail(st);
  }
  cli_cancel_on_signals(NULL);
  jb_board_close(b);
  return rc;
}
