/*
 * cmd_wait.c - `jobboard wait`: block until the board holds a job.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>

const cli_command cli_cmd_wait = {
    "wait", "block until the board holds a job (or a claimable one)",
    "Usage: jobboard wait [--claimable] [--timeout DURATION] [--name NAME]...\n"
    "                     [OPTIONS]\n"
    "\n"
    "Return as soon as the board holds at least one job, or with --claimable\n"
    "at least one job that can be claimed now (unclaimed, or its claim\n"
    "lapsed). The wait sleeps on the board's signal file and is woken by the\n"
    "commit that matters (a post, an abandon, a lapse): it does not poll.\n"
    "With --name, only the jobs of those names count, and the wait sleeps\n"
    "through the commits that make no job of its names ready (posts of\n"
    "other names do not wake it); a delayed job of those names counts once\n"
    "it is due.\n"
    "On success print the number of jobs (or of claimable jobs) found, of\n"
    "the names chosen if any; with --json: {\"jobs\": N} or {\"claimable\": N}.\n"
    "The jobs of a paused (capped, rate-limited) name (`jobboard pause`)\n"
    "count as claimable here, as `count --unclaimed` counts them.\n"
    "\n"
    "Options:\n"
    "  --claimable         wait for a claimable job, not just any job\n"
    CLI_HELP_NAME_FILTER("wait for jobs")
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
    "  jobboard wait; echo \"a job is on the board\"\n"
    "  jobboard wait --claimable --name 'images.*' --timeout 60\n",
    CLI_O_TIMEOUT | CLI_O_CLAIMABLE | CLI_O_CREATE | CLI_O_NAMES, 0, 0, ""};

int cmd_wait(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_wait, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ | CLI_OPEN_WAIT)) != 0) return rc;
  cli_cancel_on_signals(b);
  unsigned flags = o.claimable ? JB_ONLY_UNCLAIMED : 0;
  size_t n = 0;
  int st = jb_board_wait_names(b, flags, o.n_names ? o.names : NULL,
                               o.n_names, o.timeout_ms, &n);
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
