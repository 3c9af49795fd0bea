/*
 * cmd_claim.c - the owner's commands: claim, claim-next, abandon, consume,
 * trash. Each is one write transaction in the library.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>

#define WHO_OPTION                                                             \
  "  --who NAME          the owner acting (required; 1..255 bytes)\n"

#define NOT_OWNER_EXITS                                                        \
  ", or the job is not on the board\n"                                         \
  "     or not claimed by anyone\n"                                            \
  "  5  the job is claimed by someone else (the message names the owner)\n"   \
  "  A malformed UUID or an empty --who is a usage error (2).\n"

const cli_command cli_cmd_claim = {
    "claim", "claim a job: make NAME its only owner",
    "Usage: jobboard claim --who NAME [OPTIONS] UUID\n"
    "\n"
    "Claim the job UUID for the owner NAME. The claim is atomic: of any\n"
    "number of threads and processes claiming one job, exactly one wins;\n"
    "the others fail with 'already claimed by <owner>'. A claimed job is not\n"
    "listed as claimable and claim-next skips it until its owner abandons\n"
    "it; consume or trash removes it. Claiming a job one already owns still\n"
    "fails (exit 4, naming that same owner), as in taskflow.\n"
    "Prints nothing on success (with --json: {\"uuid\", \"state\": \"CLAIMED\",\n"
    "\"owner\"}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the board\n"
    "  4  the job is already claimed (the message names the owner)\n"
    "  A malformed UUID or an empty --who is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard claim --who worker-1 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f\n"
    "  if jobboard claim --who \"$HOSTNAME\" \"$uuid\"; then work; fi\n",
    CLI_O_WHO, 1, 1, "UUID"};

const cli_command cli_cmd_claim_next = {
    "claim-next", "claim the first claimable job and print its uuid",
    "Usage: jobboard claim-next --who NAME [OPTIONS]\n"
    "\n"
    "Claim the first claimable job in listing order (highest priority,\n"
    "then oldest) for the owner NAME, and print its uuid; with --json print\n"
    "the claimed job as `jobboard show --json` does. Finding and claiming\n"
    "are one transaction: two workers never get the same job, and claimed\n"
    "jobs are never even looked at. When nothing is claimable, exit 3\n"
    "without waiting.\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or no job is claimable now\n"
    "  An empty --who is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  while job=$(jobboard claim-next --who w1); do\n"
    "    run \"$job\" && jobboard consume --who w1 \"$job\" ||\n"
    "      jobboard abandon --who w1 \"$job\"\n"
    "  done\n",
    CLI_O_WHO, 0, 0, ""};

const cli_command cli_cmd_abandon = {
    "abandon", "release a claim: the job becomes claimable again",
    "Usage: jobboard abandon --who NAME [OPTIONS] UUID\n"
    "\n"
    "Give up NAME's claim on the job UUID: it stays on the board and becomes\n"
    "claimable again, in its old place (its priority and sequence do not\n"
    "change). Only the owner may abandon. Prints nothing on success (with\n"
    "--json: {\"uuid\", \"state\": \"UNCLAIMED\", \"owner\": null}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  jobboard abandon --who worker-1 \"$uuid\"\n",
    CLI_O_WHO, 1, 1, "UUID"};

const cli_command cli_cmd_consume = {
    "consume", "complete a job: the owner removes it from the board",
    "Usage: jobboard consume --who NAME [OPTIONS] UUID\n"
    "\n"
    "NAME, the job's owner, completes the job UUID: it leaves the board and\n"
    "its state reads COMPLETE from then on. Only the owner may consume.\n"
    "Prints nothing on success (with --json: {\"uuid\", \"state\": \"COMPLETE\",\n"
    "\"outcome\": \"consumed\"}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  jobboard consume --who worker-1 \"$uuid\"\n",
    CLI_O_WHO, 1, 1, "UUID"};

const cli_command cli_cmd_trash = {
    "trash", "remove a bad job: kept in the board's trash for inspection",
    "Usage: jobboard trash --who NAME [OPTIONS] UUID\n"
    "\n"
    "NAME, the job's owner, removes the job UUID as bad (a poison job): it\n"
    "leaves the board, its state reads COMPLETE, and its posting is kept in\n"
    "the board's trash area for inspection. Only the owner may trash.\n"
    "Prints nothing on success (with --json: {\"uuid\", \"state\": \"COMPLETE\",\n"
    "\"outcome\": \"trashed\"}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  jobboard claim --who admin \"$uuid\" && jobboard trash --who admin \"$uuid\"\n",
    CLI_O_WHO, 1, 1, "UUID"};

typedef int (*owner_op)(jb_board *, const char *, const char *);

/* claim / abandon / consume / trash: one uuid, one owner, one call. */
static int run_owner_op(const cli_command *cmd, owner_op op, int argc,
                        char **argv, json_t *(*result)(const char *uuid,
                                                       const char *who)) {
  cli_opts o;
  int rc = cli_parse(&o, cmd, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(cmd, &o)) != 0) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = op(b, o.args[0], o.who);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json && cli_json_print(result(o.args[0], o.who)) != 0)
    rc = CLI_EXIT_ERROR;
  jb_board_close(b);
  return rc;
}

static json_t *claimed(const char *uuid, const char *who) {
  return json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state", "CLAIMED", "owner",
                   who);
}
static json_t *abandoned(const char *uuid, const char *who) {
  (void)who;
  return json_pack("{s:s,s:s,s:n}", "uuid", uuid, "state", "UNCLAIMED",
                   "owner");
}
static json_t *consumed(const char *uuid, const char *who) {
  (void)who;
  return json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state", "COMPLETE",
                   "outcome", "consumed");
}
static json_t *trashed(const char *uuid, const char *who) {
  (void)who;
  return json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state", "COMPLETE",
                   "outcome", "trashed");
}

int cmd_claim(int argc, char **argv) {
  return run_owner_op(&cli_cmd_claim, jb_job_claim, argc, argv, claimed);
}
int cmd_abandon(int argc, char **argv) {
  return run_owner_op(&cli_cmd_abandon, jb_job_abandon, argc, argv, abandoned);
}
int cmd_consume(int argc, char **argv) {
  return run_owner_op(&cli_cmd_consume, jb_job_consume, argc, argv, consumed);
}
int cmd_trash(int argc, char **argv) {
  return run_owner_op(&cli_cmd_trash, jb_job_trash, argc, argv, trashed);
}

int cmd_claim_next(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_claim_next, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_claim_next, &o)) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  char uuid[JB_UUID_STRLEN] = "";
  jb_job *job = NULL;
  int st = jb_job_claim_next(uuid, o.json ? &job : NULL, b, o.who);
  if (st == JB_OK) {
    int bad = o.json ? cli_json_print(cli_job_to_json(job)) : puts(uuid) == EOF;
    if (bad) rc = CLI_EXIT_ERROR;
  } else {
    /* JB_ECORRUPT with a uuid: the claim stands but the posting does not
     * decode. Say which job the caller now owns before the error. */
    if (st == JB_ECORRUPT && uuid[0] != '\0') {
      if (o.json)
        cli_json_print(json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state",
                                 "CLAIMED", "owner", o.who));
      else
        puts(uuid);
    }
    rc = cli_fail(st);
  }
  jb_job_free(job);
  jb_board_close(b);
  return rc;
}
