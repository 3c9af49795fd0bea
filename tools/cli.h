/*
 * cli.h - what the jobboard subcommands share. tools/ includes only the
 * public include/jobboard.h (and, with Redis, include/jobboard_sync.h).
 */
#ifndef JOBBOARD_CLI_H
#define JOBBOARD_CLI_H

#include "jobboard.h"

/* Exit codes: fixed, documented in --help and README (docs/DESIGN-NOTES.md,
 * "Errors and exit codes"). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_ERROR = 1,     /* any other error */
  CLI_EXIT_USAGE = 2,     /* usage or invalid input (JB_EINVAL) */
  CLI_EXIT_NOTFOUND = 3,  /* JB_ENOTFOUND, also claim-next with nothing */
  CLI_EXIT_CLAIMED = 4,   /* JB_ECLAIMED */
  CLI_EXIT_NOTOWNER = 5,  /* JB_ENOTOWNER */
  CLI_EXIT_OFFLINE = 6,   /* JB_EOFFLINE */
  CLI_EXIT_TIMEDOUT = 7,  /* JB_ETIMEDOUT */
  CLI_EXIT_TRIMMED = 8,   /* JB_ETRIMMED: the change log moved past --from */
  CLI_EXIT_NO_META = 9,   /* salvage: no readable meta page in SRC */
  CLI_EXIT_DIFFERS = 10,  /* status --verify: the board and Redis differ */
  CLI_EXIT_EXISTS = 11,   /* JB_EEXISTS: a live job holds the unique key */
  CLI_EXIT_NOTDUE = 12,   /* JB_ENOTDUE: the job is delayed, not due yet */
  CLI_EXIT_READONLY = 13, /* JB_EREADONLY: the board cannot be written here */
};

/* The exit code for a JB_* status. */
int cli_exit_code(int status);

/* Print "jobboard: <jb_errmsg()>" to stderr; return cli_exit_code(status). */
int cli_fail(int status);

/* Print "jobboard: <printf message>" to stderr; return CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The board directory: `opt` if not NULL, else $JOBBOARD_DIR, else
 * "./jobboard.d". */
const char *cli_board_dir(const char *opt);

/* Subcommands: argv[0] is the subcommand's name; return the exit code. */
int cmd_demo(int argc, char **argv);

#endif
