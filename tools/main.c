/*
 * main.c - jobboard(1): find the subcommand and hand it the command line.
 *
 * Global options (--board, --durability, --json, --quiet) may come before the
 * subcommand's name; they are moved after it, so each subcommand parses
 * one command line with getopt_long and a global option means the same
 * wherever it was written.
 */
#include "cli_common.h"
#include "cli_getopt.h"
#include "cli_refusal.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_entry cli_commands[] = {
    {&cli_cmd_init, "init", NULL, cmd_init},
    {&cli_cmd_post, "post", NULL, cmd_post},
    {&cli_cmd_list, "list", NULL, cmd_list},
    {&cli_cmd_show, "show", NULL, cmd_show},
    {&cli_cmd_claim, "claim", NULL, cmd_claim},
    {&cli_cmd_claim_next, "claim-next", NULL, cmd_claim_next},
    {&cli_cmd_abandon, "abandon", NULL, cmd_abandon},
    {&cli_cmd_snooze, "snooze", NULL, cmd_snooze},
    {&cli_cmd_consume, "consume", NULL, cmd_consume},
    {&cli_cmd_trash, "trash", NULL, cmd_trash},
    {&cli_cmd_cancel, "cancel", NULL, cmd_cancel},
    {&cli_cmd_run_now, "run-now", NULL, cmd_run_now},
    {&cli_cmd_dead, "dead", NULL, cmd_dead},
    {&cli_cmd_policy, "policy", NULL, cmd_policy},
    {&cli_cmd_retention, "retention", NULL, cmd_retention},
    {&cli_cmd_schedule, "schedule", NULL, cmd_schedule},
    {&cli_cmd_extend, "extend", NULL, cmd_extend},
    {&cli_cmd_progress, "progress", NULL, cmd_progress},
    {&cli_cmd_expires_in, "expires-in", NULL, cmd_expires_in},
    {&cli_cmd_owner, "owner", NULL, cmd_owner},
    {&cli_cmd_state, "state", NULL, cmd_state},
    {&cli_cmd_count, "count", NULL, cmd_count},
    {&cli_cmd_wait, "wait", NULL, cmd_wait},
    {&cli_cmd_pause, "pause", NULL, cmd_pause},
    {&cli_cmd_resume, "resume", NULL, cmd_resume},
    {&cli_cmd_cap, "cap", NULL, cmd_cap},
    {&cli_cmd_rate, "rate", NULL, cmd_rate},
    {&cli_cmd_queues, "queues", NULL, cmd_queues},
    {&cli_cmd_watch, "watch", NULL, cmd_watch},
    {&cli_cmd_check, "check", NULL, cmd_check},
    {&cli_cmd_flush, "flush", NULL, cmd_flush},
    {&cli_cmd_salvage, "salvage", NULL, cmd_salvage},
    {&cli_cmd_entities, "entities", NULL, cmd_entities},
    {&cli_cmd_history, "history", NULL, cmd_history},
    {&cli_cmd_wait_done, "wait-done", NULL, cmd_wait_done},
    {&cli_cmd_work, "work", NULL, cmd_work},
    {&cli_cmd_sync, "sync", NULL, cmd_sync},
    {&cli_cmd_status, "status", NULL, cmd_status},
    {&cli_cmd_stats, "stats", NULL, cmd_stats},
    {&cli_cmd_metrics, "metrics", NULL, cmd_metrics},
    {&cli_cmd_top, "top", NULL, cmd_top},
    {&cli_cmd_web, "web", NULL, cmd_web},
    {NULL, "demo", "run a demonstration: post jobs, race workers, verify", cmd_demo},
};
const size_t cli_ncommands = sizeof cli_commands / sizeof cli_commands[0];

static const char global_help_head[] =
    "Usage: jobboard [GLOBAL OPTIONS] COMMAND [OPTIONS] [ARGS]\n"
    "       jobboard --help | --version | help COMMAND\n"
    "\n"
    "A shared, crash-safe job board for the programs of one host. A board is\n"
    "a directory holding an LMDB database; producers post jobs, workers claim\n"
    "them (exactly one owner at a time), then consume, abandon or trash them.\n"
    "Jobs are listed and claimed highest priority first, oldest first within\n"
    "a priority.\n"
    "\n"
    "Commands:\n";

static const char global_help_tail[] =
    "\n"
    "Global options (before or after COMMAND):\n"
    "  --board DIR         the board directory (default: $JOBBOARD_DIR if set,\n"
    "                      else ./jobboard.d). `init`, `post` and `schedule\n"
    "                      add` create it (saying so on stderr), only in a\n"
    "                      new or empty directory; work, wait, watch,\n"
    "                      claim-next --wait and sync wait for it to appear\n"
    "                      (or make it with --create); other commands exit 3.\n"
    "  --durability MODE   full (default), normal, interval or none. `interval`\n"
    "                      flushes every second, not every commit, and a power\n"
    "                      loss comes back to the last flush. `none` is fastest\n"
    "                      and survives any process crash, but a POWER LOSS OR\n"
    "                      KERNEL CRASH CAN LOSE RECENT COMMITS AND CORRUPT THE\n"
    "                      BOARD; see any command's --help.\n"
    "  --json              print one JSON object per line on stdout; a\n"
    "                      failure ends it with {\"error\": {\"code\",\n"
    "                      \"exit\", \"message\"}}\n"
    "  --quiet             no notes on stderr (a new board made, a read-only\n"
    "                      view: said once a process); errors still are\n"
    "  -h, --help          print this help (or COMMAND's help) and exit\n"
    "  -V, --version       print the library's version and exit\n"
    "\n"
    "Run 'jobboard COMMAND --help' (or 'jobboard help COMMAND') for a\n"
    "command's options.\n"
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    "Exit status (the same for every command; never changes):\n"
    "  0  success\n"
    "  1  any other error (I/O, a corrupt board, no space left)\n"
    "  2  usage error or invalid input (the message names the field)\n"
    "  3  not found: no such board directory or job; claim-next found\n"
    "     nothing to claim\n"
    "  4  already claimed (the message names the owner)\n"
    "  5  not the owner (the message names the owner)\n"
    "  6  backend unavailable: a job Redis decides, and Redis cannot be\n"
    "     reached (the message says why)\n"
    "  7  timed out\n"
    "  8  the change log no longer holds the events asked for (watch --from)\n"
    "  11 a live job holds the unique key (post --unique)\n"
    "  12 the job is delayed, not due yet\n"
    "  13 the board is read-only for this process: a write command on\n"
    "     another user's board or a read-only mount (reading commands\n"
    "     work there, with a note that the view is read-only)\n"
    "Errors are one line on stderr: 'jobboard: <message>'.\n"
    "\n"
    "Examples:\n"
    "  export JOBBOARD_DIR=/tmp/board\n"
    "  uuid=$(jobboard post resize-image --priority high \\\n"
    "           --details '{\"path\": \"/srv/in/1.png\"}')\n"
    "  job=$(jobboard claim-next --who worker-1) && work \"$job\" &&\n"
    "    jobboard consume --who worker-1 \"$job\"\n"
    "  jobboard list --json | python3 -m json.tool --json-lines\n";

static int global_help(FILE *f) {
  fputs(global_help_head, f);
  for (size_t i = 0; i < cli_ncommands; i++) {
    const cli_entry *e = &cli_commands[i];
    fprintf(f, "  %-12s %s\n", e->name, e->cmd ? e->cmd->summary : e->summary);
  }
  fputs(global_help_tail, f);
  return CLI_EXIT_OK;
}

static const cli_entry *find_command(const char *name) {
  for (size_t i = 0; i < cli_ncommands; i++)
    if (strcmp(cli_commands[i].name, name) == 0) return &cli_commands[i];
  return NULL;
}

/* A name that is no command: a usage error, which for a command that is
 * now a program of its own names that program, so that a script calling
 * it learns where it went. `what` prefixes the message ("help: "). */
static int unknown_command(const char *what, const char *name) {
  if (strcmp(name, "bench") == 0)
    return cli_usage_error("%sbench moved to a program of its own: run "
                           "jobboard-bench (built by make, not installed; "
                           "jobboard-bench --help)", what);
  return cli_usage_error("%sunknown command '%s' (try 'jobboard --help')",
                         what, name);
}

static int version(void) {
  printf("jobboard %s\n", jb_version(NULL, NULL, NULL));
  return CLI_EXIT_OK;
}

/* `jobboard help [COMMAND]` and `jobboard --help COMMAND`. */
static int help_for(const char *name) {
  if (name == NULL) return global_help(stdout);
  const cli_entry *e = find_command(name);
  if (e == NULL) return unknown_command("help: ", name);
  if (e->cmd) return cli_help(e->cmd);
  char *argv[] = {(char *)e->name, "--help", NULL};
  return e->run(2, argv);
}

/* Flush stdout and report a failed write (a full disk behind `>`) as an
 * error rather than exiting 0 with half the output. */
static int finish(int code) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    int err = errno;
    fprintf(stderr, "jobboard: writing standard output: %s\n", strerror(err));
    return code == CLI_EXIT_OK ? CLI_EXIT_ERROR : code;
  }
  return code;
}

/* The global options moved after the command ("--board=DIR" strings are
 * allocated; "--json" is not) and the command's argv, freed before main
 * returns so that LeakSanitizer has nothing to report. */
static char **moved, **sub;
static int nmoved;
static char json_opt[] = "--json";
static char quiet_opt[] = "--quiet";

static void free_args(void) {
  for (int i = 0; i < nmoved; i++)
    if (moved[i] != json_opt && moved[i] != quiet_opt) free(moved[i]);
  free(moved);
  free(sub);
  moved = sub = NULL;
  nmoved = 0;
}

static int run_main(int argc, char **argv);

int main(int argc, char **argv) {
  cli_refusal_json_mode(argc, argv);
  int code = run_main(argc, argv);
  cli_refusal_finish(code);
  cli_sync_end(); /* after the command closed its board */
  free_args();
  return code;
}

static int run_main(int argc, char **argv) {
  static const struct option globals[] = {
      {"board", required_argument, NULL, 'b'},
      {"durability", required_argument, NULL, 'd'},
      {"json", no_argument, NULL, 'j'},
      {"quiet", no_argument, NULL, 'q'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  /* The global options seen before the command, to be moved after it. */
  moved = calloc((size_t)argc + 2, sizeof *moved);
  if (moved == NULL) {
    fputs("jobboard: out of memory\n", stderr);
    return CLI_EXIT_ERROR;
  }
  int want_help = 0, c;
  opterr = 0;
  /* '+': stop at the first operand, the command's name. */
  while ((c = cli_getopt_long(argc, argv, "+:hV", globals)) != -1) {
    switch (c) {
    case CLI_OPT_ABBREVIATED:
      return finish(cli_usage_error("%s (try 'jobboard --help')",
                                    cli_abbreviation_text()));
    case 'b':
    case 'd':
      /* Passed on as "--board=DIR" so that the value stays with its name. */
      moved[nmoved] = malloc(strlen(optarg) + 16);
      if (moved[nmoved] == NULL) return CLI_EXIT_ERROR;
      sprintf(moved[nmoved++], "--%s=%s", c == 'b' ? "board" : "durability",
              optarg);
      break;
    case 'j': moved[nmoved++] = json_opt; break;
    case 'q': moved[nmoved++] = quiet_opt; break;
    case 'h': want_help = 1; break;
    case 'V': return finish(version());
    case ':':
      return cli_usage_error("option '%s' needs an argument (try 'jobboard "
                             "--help')", argv[optind - 1]);
    default:
      if (optopt != 0)
        return cli_usage_error("unknown option '-%c' (try 'jobboard --help')",
                               optopt);
      return cli_usage_error("unknown option '%s' before the command (only "
                             "--board, --durability, --json and --quiet "
                             "may come before it; try 'jobboard --help')",
                             argv[optind - 1]);
    }
  }
  if (want_help) return finish(help_for(optind < argc ? argv[optind] : NULL));
  if (optind >= argc) {
    fputs("jobboard: missing command (try 'jobboard --help')\n", stderr);
    return CLI_EXIT_USAGE;
  }
  const char *name = argv[optind];
  if (strcmp(name, "help") == 0) {
    if (argc - optind > 2)
      return cli_usage_error("help: unexpected argument '%s'",
                             argv[optind + 2]);
    return finish(help_for(optind + 1 < argc ? argv[optind + 1] : NULL));
  }
  const cli_entry *e = find_command(name);
  if (e == NULL) return unknown_command("", name);
  /* argv for the command: its name, the moved globals, then the rest. */
  sub = calloc((size_t)argc + (size_t)nmoved + 1, sizeof *sub);
  if (sub == NULL) return CLI_EXIT_ERROR;
  int n = 0;
  sub[n++] = (char *)e->name;
  for (int i = 0; i < nmoved; i++) sub[n++] = moved[i];
  for (int i = optind + 1; i < argc; i++) sub[n++] = argv[i];
  sub[n] = NULL;
  optind = 0; /* the command parses afresh */
  return finish(e->run(n, sub));
}
