/*
 * cmd_claim.c - the owner's commands: claim, claim-next, abandon, consume,
 * trash. Each is one write transaction in the library. (consume, which
 * takes a result, runs in cmd_complete.c.)
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>

#define WHO_OPTION                                                             \
  "  --who NAME          the owner acting (required; 1..255 bytes)\n"

#define LEASE_OPTION                                                           \
  "  --lease DURATION    the claim lapses after this long unless extended\n"  \
  "                      (fractions allowed: 0.5; at most 30 days). A\n"      \
  "                      lapsed claim makes the job claimable again.\n"

#define TOKEN_OPTION                                                           \
  "  --token T           the claim's fencing token (claim --json prints it):\n"\
  "                      refused (exit 5) unless it is the current claim's,\n" \
  "                      so a holder whose claim lapsed and was taken again,\n"\
  "                      even under the same name, cannot act\n"

#define NOT_OWNER_EXITS                                                        \
  ", or the job is not on the board\n"                                         \
  "     or not claimed by anyone (a claim that lapsed has no owner)\n"         \
  "  5  the job is claimed by someone else (the message names the owner),\n"  \
  "     or --token is not the current claim's (the message names both)\n"     \
  CLI_HELP_EXIT_OFFLINE                                                        \
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
    "fails (exit 4, naming that same owner), as in taskflow, and refreshes\n"
    "the claim's lease and modified time.\n"
    "A claim made here lives until its owner acts, or until its --lease\n"
    "runs out; it is not bound to this short-lived command's process.\n"
    "Prints nothing on success (with --json: {\"uuid\", \"state\": \"CLAIMED\",\n"
    "\"owner\", \"token\"}: the fencing token for --token).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    LEASE_OPTION
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the board\n"
    "  4  the job is already claimed (the message names the owner)\n"
    CLI_HELP_EXIT_OFFLINE
    "  A malformed UUID or an empty --who is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard claim --who worker-1 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f\n"
    "  if jobboard claim --who \"$HOSTNAME\" --lease 30 \"$uuid\"; then work; fi\n",
    CLI_O_WHO | CLI_O_LEASE | CLI_O_REDIS, 1, 1, "UUID"};

const cli_command cli_cmd_claim_next = {
    "claim-next", "claim the first claimable job and print its uuid",
    "Usage: jobboard claim-next --who NAME [OPTIONS]\n"
    "\n"
    "Claim the first claimable job in listing order (highest priority,\n"
    "then oldest) for the owner NAME, and print its uuid; with --json print\n"
    "the claimed job as `jobboard show --json` does. Finding and claiming\n"
    "are one transaction: two workers never get the same job, and claimed\n"
    "jobs are never even looked at. When nothing is claimable, exit 3\n"
    "at once; with --wait, block until a job can be claimed (woken by the\n"
    "commit that makes it claimable: no polling) or the time runs out\n"
    "(exit 7). Of many workers waiting for one new job, exactly one gets it.\n"
    "Jobs whose claims lapsed (lease expired, holder process gone) are\n"
    "claimable. The --json output includes the claim's token.\n"
    "On a board shared through Redis, jobs Redis decides are claimed through\n"
    "Redis; while it cannot be reached they are passed over, and local jobs\n"
    "are claimed as usual.\n"
    "With --count N, up to N jobs are claimed in one commit, in the same\n"
    "order, each with its own token: all there are when fewer are\n"
    "claimable. One uuid per line (with --json, one job per line), in claim\n"
    "order; exit 3 only when none was claimable. With --wait too, the wait\n"
    "ends when one job can be claimed, and up to N-1 more are then claimed\n"
    "in a second commit. (Redis-decided jobs among them are claimed through\n"
    "Redis, each run of them in one round trip, each job still decided by\n"
    "Redis on its own, in its place in the order.)\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    LEASE_OPTION
    "  --count N           claim up to N jobs (1 to 4096) at once\n"
    CLI_HELP_NAMES("claim", "claimed")
    "  --wait DURATION     wait up to this long for a claimable job (fractions\n"
    "                      allowed; `inf`: without limit). SIGINT or SIGTERM\n"
    "                      ends the wait (exit 130 or 143)\n"
    CLI_HELP_CREATE
    "                      (without --wait a missing board is exit 3)\n"
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON ", or no job is claimable now (without --wait)\n"
    "  7  --wait ran out: nothing became claimable in time\n"
    "  130, 143  the wait was ended by SIGINT or SIGTERM\n"
    "  An empty --who is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  while job=$(jobboard claim-next --who w1 --wait 60); do\n"
    "    run \"$job\" && jobboard consume --who w1 \"$job\" ||\n"
    "      jobboard abandon --who w1 \"$job\"\n"
    "  done\n"
    "  jobboard claim-next --who w1 --count 20 --lease 60 > batch.txt\n"
    "  jobboard claim-next --who w1 --name resize --name 'thumbs.*'\n",
    CLI_O_WHO | CLI_O_LEASE | CLI_O_WAIT | CLI_O_REDIS | CLI_O_COUNT | CLI_O_CREATE |
        CLI_O_NAMES | CLI_O_IN_ORDER, 0, 0, ""};

const cli_command cli_cmd_abandon = {
    "abandon", "release a claim: the job is retried (at once or later)",
    "Usage: jobboard abandon --who NAME [--reason TEXT] [--retry-in DURATION |\n"
    "                        --retry-in backoff | --dead] [OPTIONS] UUID\n"
    "\n"
    "Give up NAME's claim on the job UUID: a failed attempt. It stays on the\n"
    "board and becomes claimable again, in its old place (its priority and\n"
    "sequence do not change): at once, or after --retry-in. Only the owner\n"
    "may abandon. The job counts its attempts (every claim that ends\n"
    "without a completion: abandoned, lapsed, over its time limit); when\n"
    "they reach its maximum (post --max-attempts, else the board's policy:\n"
    "`jobboard policy`), or with --dead, it goes to the dead letters instead\n"
    "(`jobboard dead`), with the reason. Prints nothing on success (with\n"
    "--json: {\"uuid\", \"state\": \"UNCLAIMED\" or \"DEAD\", \"owner\": null,\n"
    "\"attempts\", \"not_before\": its due time or null}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    TOKEN_OPTION
    "  --reason TEXT       why (kept with the job: show, dead show, history;\n"
    "                      up to 1024 bytes)\n"
    "  --retry-in DURATION claimable again only after this long (fractions\n"
    "                      allowed); 'backoff': after the job's back-off,\n"
    "                      doubling per attempt from post --backoff (else the\n"
    "                      board's, 1 s) up to --backoff-max (1 h), +-20 %.\n"
    "                      A job Redis decides keeps no delay: 'backoff'\n"
    "                      gives it back at once, DURATION is refused\n"
    "  --dead              to the dead letters now, whatever its attempts\n"
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  jobboard abandon --who worker-1 \"$uuid\"\n",
    CLI_O_WHO | CLI_O_TOKEN | CLI_O_REDIS | CLI_O_RETRY, 1, 1, "UUID"};

const cli_command cli_cmd_consume = {
    "consume", "complete a job: the owner removes it from the board",
    "Usage: jobboard consume --who NAME [--result JSON] [--failed] [OPTIONS]\n"
    "                        UUID [UUID...]\n"
    "\n"
    "NAME, the job's owner, completes the job UUID: it leaves the board and\n"
    "its state reads COMPLETE from then on. Only the owner may consume.\n"
    "The board's history keeps a record of it, in the same commit: the\n"
    "outcome (consumed, or failed with --failed), the --result, the owner\n"
    "and the job's times; `jobboard wait-done UUID` and `jobboard history`\n"
    "read it. Prints nothing on success (with --json: {\"uuid\", \"state\":\n"
    "\"COMPLETE\", \"outcome\": \"consumed\" or \"failed\"}).\n"
    "\n"
    "Several UUIDs (up to 4096) are consumed in one commit, each with the\n"
    "same --result and outcome. Each job succeeds or fails on its own: one\n"
    "that is not NAME's (or not on the board, or not claimed) is left as it\n"
    "is, with 'jobboard: UUID: <why>' on stderr, and the others are\n"
    "consumed. With --json, one line per UUID in the order given: the\n"
    "object above, or {\"uuid\", \"error\": \"<why>\", \"exit\": N} for one\n"
    "that failed (N: the exit status it alone would give). The exit status\n"
    "is 0 when every UUID was consumed, else that of the first UUID that\n"
    "failed, in the order given (3 not found, 5 another owner, ...); a\n"
    "malformed UUID is a usage error before anything is done. --token\n"
    "names one claim and takes one UUID.\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    TOKEN_OPTION
    "  --result JSON       what the job produced: a JSON object, stored as a\n"
    "                      msgpack map (at most 1 MiB encoded). Invalid JSON,\n"
    "                      or JSON that is not an object, is a usage error\n"
    "                      (2) and the job stays claimed.\n"
    "  --failed            the job was done but failed: the outcome is\n"
    "                      'failed' instead of 'consumed' (the job still\n"
    "                      leaves the board; use abandon to have it retried)\n"
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Examples:\n"
    "  jobboard consume --who worker-1 --token \"$token\" \"$uuid\"\n"
    "  jobboard consume --who w1 --result '{\"rows\": 3}' \"$uuid\"\n"
    "  jobboard consume --who w1 --failed --result '{\"error\": \"timeout\"}' \"$uuid\"\n"
    "  jobboard consume --who w1 $(jobboard claim-next --who w1 --count 10)\n",
    CLI_O_WHO | CLI_O_TOKEN | CLI_O_RESULT | CLI_O_REDIS, 1, JB_BATCH_MAX,
    "UUID"};

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
    TOKEN_OPTION
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  jobboard claim --who admin \"$uuid\" && jobboard trash --who admin \"$uuid\"\n",
    CLI_O_WHO | CLI_O_TOKEN | CLI_O_REDIS, 1, 1, "UUID"};

/* What an owner's command does, given the parsed options; the token
 * (for claim's --json) comes back through *token. */
typedef int (*owner_op)(jb_board *b, const cli_opts *o, uint64_t *token);

static int op_claim(jb_board *b, const cli_opts *o, uint64_t *token) {
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.lease_ms = o->lease_ms;
  return jb_claim(token, b, o->args[0], o->who, &co);
}
static int op_trash(jb_board *b, const cli_opts *o, uint64_t *token) {
  (void)token;
  return jb_trash(b, o->args[0], o->who, o->token);
}

/* claim / abandon / consume / trash: one uuid, one owner, one call. */
static int run_owner_op(const cli_command *cmd, owner_op op, int argc,
                        char **argv,
                        json_t *(*result)(const char *uuid, const char *who,
                                          uint64_t token)) {
  cli_opts o;
  int rc = cli_parse(&o, cmd, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(cmd, &o)) != 0) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  uint64_t token = 0;
  int st = op(b, &o, &token);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json && cli_json_print(result(o.args[0], o.who, token)) != 0)
    rc = CLI_EXIT_ERROR;
  jb_board_close(b);
  return rc;
}

static json_t *claimed(const char *uuid, const char *who, uint64_t token) {
  return json_pack("{s:s,s:s,s:s,s:I}", "uuid", uuid, "state", "CLAIMED",
                   "owner", who, "token", (json_int_t)token);
}
static json_t *trashed(const char *uuid, const char *who, uint64_t token) {
  (void)who;
  (void)token;
  return json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state", "COMPLETE",
                   "outcome", "trashed");
}

int cmd_claim(int argc, char **argv) {
  return run_owner_op(&cli_cmd_claim, op_claim, argc, argv, claimed);
}
/* abandon (with --reason, --retry-in, --dead or none): jb_retry, which
 * says what became of the job. */
int cmd_abandon(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_abandon, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.dead && o.retry_in_ms != -1)
    return cli_cmd_usage(&cli_cmd_abandon, "--dead and --retry-in: give one");
  if ((rc = cli_need_who(&cli_cmd_abandon, &o)) != 0) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
  ro.token = o.token;
  ro.reason = o.reason;
  if (o.retry_in_ms == -2) ro.flags |= JB_RETRY_BACKOFF;
  else if (o.retry_in_ms > 0) ro.delay_ms = o.retry_in_ms;
  if (o.dead) ro.flags |= JB_RETRY_DEAD;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_retry_result res;
  int st = jb_retry(&res, b, o.args[0], o.who, &ro);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    char due[40];
    if (res.due_us) cli_format_time(due, sizeof due, res.due_us);
    if (cli_json_print(json_pack("{s:s,s:s,s:n,s:I,s:o}", "uuid", o.args[0],
                                 "state", res.dead ? "DEAD" : "UNCLAIMED",
                                 "owner", "attempts", (json_int_t)res.attempts,
                                 "not_before",
                                 res.due_us ? json_string(due)
                                            : json_null())) != 0)
      rc = CLI_EXIT_ERROR;
  }
  jb_board_close(b);
  return rc;
}
int cmd_trash(int argc, char **argv) {
  return run_owner_op(&cli_cmd_trash, op_trash, argc, argv, trashed);
}

/* Print claimed job `uuid` (snapshot `job`, NULL when its posting does
 * not decode) as claim-next does. Returns 0 or CLI_EXIT_ERROR. */
static int print_claimed(const cli_opts *o, const char *uuid,
                         const jb_job *job) {
  if (!o->json) return puts(uuid) == EOF ? CLI_EXIT_ERROR : 0;
  json_t *v = job ? cli_job_to_json(job)
                  : json_pack("{s:s,s:s,s:s}", "uuid", uuid, "state",
                              "CLAIMED", "owner", o->who);
  return cli_json_print(v) ? CLI_EXIT_ERROR : 0;
}

/* claim-next --count N: up to N jobs in one commit (after one claimed by
 * --wait, if given: uuid and job hold it). */
static int claim_next_count(jb_board *b, const cli_opts *o,
                            const jb_claim_options *co, const char *uuid,
                            jb_job *job) {
  size_t max = o->count, first = uuid[0] != '\0';
  int rc = first ? print_claimed(o, uuid, job) : 0;
  if (rc || max == first) return rc;
  char(*uuids)[JB_UUID_STRLEN] = calloc(max, sizeof *uuids);
  jb_job **jobs = calloc(max, sizeof *jobs);
  if (uuids == NULL || jobs == NULL) {
    free(uuids);
    free(jobs);
    fprintf(stderr, "jobboard: claim-next: out of memory\n");
    return CLI_EXIT_ERROR;
  }
  size_t n = 0;
  int st = jb_claim_next_many(&n, uuids, NULL, o->json ? jobs : NULL, b,
                                  o->who, co, max - first);
  /* JB_ECORRUPT: every claim stands; those not decoded print bare. */
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = print_claimed(o, uuids[i], jobs[i]);
  if (st != JB_OK && !(first && st == JB_ENOTFOUND) && rc == 0)
    rc = cli_fail(st);
  for (size_t i = 0; i < n; i++) jb_job_free(jobs[i]);
  free(uuids);
  free(jobs);
  return rc;
}

int cmd_claim_next(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_claim_next, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_claim_next, &o)) != 0) return rc;
  if (o.count > JB_BATCH_MAX)
    return cli_cmd_usage(&cli_cmd_claim_next, "--count: %llu is more than "
                         "%d jobs", (unsigned long long)o.count,
                         JB_BATCH_MAX);
  /* Before the board is opened: a usage error leaves nothing open. */
  if (o.in_order && !o.n_names)
    return cli_cmd_usage(&cli_cmd_claim_next, "--in-order orders the --name "
                         "options: give at least one");
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, o.has_wait ? CLI_OPEN_WAIT : 0)) != 0) return rc;
  char uuid[JB_UUID_STRLEN] = "";
  jb_job *job = NULL;
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.lease_ms = o.lease_ms;
  co.names = o.n_names ? o.names : NULL;
  co.n_names = o.n_names;
  if (o.in_order) co.flags |= JB_CLAIM_NAMES_IN_ORDER;
  int st;
  if (o.has_wait) {
    cli_cancel_on_signals(b);
    co.wait_ms = o.timeout_ms;
    st = jb_claim_next(uuid, o.json ? &job : NULL, NULL, b, o.who, &co);
    /* --timeout 0 looks once, and says so as a wait that ran out. */
    if (st == JB_ENOTFOUND && o.timeout_ms == 0) st = JB_ETIMEDOUT;
  } else if (o.count) {
    st = JB_OK; /* all of them in one commit below */
  } else {
    st = jb_claim_next(uuid, o.json ? &job : NULL, NULL, b, o.who, &co);
  }
  if (st == JB_OK && o.count) {
    rc = claim_next_count(b, &o, &co, uuid, job);
  } else if (st == JB_OK) {
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
  cli_cancel_on_signals(NULL);
  jb_board_close(b);
  return rc;
}

/* ------------------------------------------------- extend, expires-in */

const cli_command cli_cmd_extend = {
    "extend", "extend the lease of one's claim",
    "Usage: jobboard extend --who NAME --lease DURATION [--token T] [OPTIONS] UUID\n"
    "\n"
    "NAME, the job's owner, extends its claim on the job UUID: the claim now\n"
    "lapses DURATION from now (a claim that had no lease gets one). Extend\n"
    "while working, well before the lease runs out. A claim that already\n"
    "lapsed cannot be extended: claim the job again. Prints nothing on\n"
    "success (with --json: {\"uuid\", \"expires_in_ms\"}).\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    "  --lease DURATION    the new lease, from now (required; fractions\n"
    "                      allowed; at most 30 days)\n"
    TOKEN_OPTION
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "\n"
    "Example:\n"
    "  while working; do jobboard extend --who w1 --lease 30 \"$uuid\"; sleep 10; done\n",
    CLI_O_WHO | CLI_O_LEASE | CLI_O_TOKEN | CLI_O_REDIS, 1, 1, "UUID"};

int cmd_extend(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_extend, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_extend, &o)) != 0) return rc;
  if (o.lease_ms == 0)
    return cli_cmd_usage(&cli_cmd_extend, "--lease DURATION is required");
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = jb_extend(b, o.args[0], o.who, o.token, o.lease_ms);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json &&
           cli_json_print(json_pack("{s:s,s:I}", "uuid", o.args[0],
                                    "expires_in_ms", (json_int_t)o.lease_ms)))
    rc = CLI_EXIT_ERROR;
  jb_board_close(b);
  return rc;
}

/* ------------------------------------------------------------- progress */

const cli_command cli_cmd_progress = {
    "progress", "report how far one's claimed job has got",
    "Usage: jobboard progress --who NAME [--token T] [OPTIONS] UUID PERCENT\n"
    "                         [MESSAGE]\n"
    "\n"
    "NAME, the owner of the claim on the job UUID, reports how far it has\n"
    "got: PERCENT, a number from 0 to 100 (kept in tenths: 12.34 is kept as\n"
    "12.3), and an optional MESSAGE of at most 200 bytes of UTF-8 without\n"
    "control characters (it prints on one line). The report replaces the\n"
    "previous one; `show` and `list --json` print it, and `watch` prints each\n"
    "report as a PROGRESS event with its figures. It does not renew the\n"
    "claim's lease (see `extend`).\n"
    "A report outlives its claim: when the claim lapses (its holder was\n"
    "killed, its lease ran out) or is abandoned, the job keeps the last\n"
    "report, to show how far it got, until the job is claimed again (a new\n"
    "claim starts with none) or leaves the board (consumed, trashed,\n"
    "cancelled: the report goes with it). A job Redis decides is checked\n"
    "against this board's record of its claim; nothing goes to Redis.\n"
    "Prints nothing on success (with --json: {\"uuid\", \"percent\",\n"
    "\"message\"}, the percent as kept and the message or null).\n"
    "`jobboard work` gives the commands it runs a way to report without\n"
    "this command: see JOBBOARD_PROGRESS_FD in its --help.\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    TOKEN_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the board\n"
    "     or not claimed by anyone (a claim that lapsed has no owner)\n"
    "  5  the job is claimed by someone else (the message names the owner),\n"
    "     or --token is not the current claim's (the message names both)\n"
    "  A malformed UUID, an empty --who, a PERCENT that is not a number from\n"
    "  0 to 100, or a MESSAGE too long, not UTF-8 or with a control character\n"
    "  is a usage error (2); nothing is written.\n"
    "\n"
    "Example:\n"
    "  jobboard progress --who w1 --token \"$token\" \"$uuid\" 40 \"4 of 10 files\"\n",
    CLI_O_WHO | CLI_O_TOKEN, 2, 3, "UUID PERCENT"};

int cmd_progress(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_progress, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_progress, &o)) != 0) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  char *end = NULL;
  double pct = strtod(o.args[1], &end);
  if (end == o.args[1] || *end != '\0' || !(pct >= 0.0 && pct <= 100.0))
    return cli_cmd_usage(&cli_cmd_progress,
                         "PERCENT must be a number from 0 to 100");
  const char *msg = o.nargs > 2 ? o.args[2] : NULL;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = jb_progress(b, o.args[0], o.who, o.token, pct, msg);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (o.json &&
           cli_json_print(json_pack(
               "{s:s,s:f,s:o}", "uuid", o.args[0], "percent",
               (double)(unsigned)(pct * 10.0 + 0.5) / 10.0, "message",
               msg && *msg ? json_string(msg) : json_null())))
    rc = CLI_EXIT_ERROR;
  jb_board_close(b);
  return rc;
}

/* --------------------------------------------------------------- snooze */

const cli_command cli_cmd_snooze = {
    "snooze", "give one's claim back for a while, spending no attempt",
    "Usage: jobboard snooze --who NAME [--token T] [OPTIONS] UUID DURATION\n"
    "\n"
    "NAME, the owner of the claim on the job UUID, gives it back for DURATION\n"
    "(0 or more: 300, 5m, 1h30m; at most 3650d): the job is UNCLAIMED\n"
    "again and not claimable before then (listed with its due time), in its\n"
    "old place. Unlike `abandon`, a snooze is not a failed attempt: the\n"
    "job's attempts stay as they are and its snoozes count one more (`show`,\n"
    "`list --json` and `history` print them; `watch` prints a SNOOZED\n"
    "event). A job posted with --max-snoozes N that snoozed N times is\n"
    "refused (exit 2, the message names the limit) and stays claimed: its\n"
    "owner consumes, abandons or trashes it. A job Redis decides keeps no\n"
    "due time: its snooze is refused. Prints nothing on success (with\n"
    "--json: {\"uuid\", \"state\": \"UNCLAIMED\", \"snoozes\", \"attempts\",\n"
    "\"not_before\": its due time or null}).\n"
    "`jobboard work` snoozes the job of a command that exits 76: see its\n"
    "--help.\n"
    "\n"
    "Options:\n"
    WHO_OPTION
    TOKEN_OPTION
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON NOT_OWNER_EXITS
    "  DURATION that is not a duration from 0 to 3650d is a usage error\n"
    "  (2), and so is a snooze past the job's --max-snoozes; nothing is\n"
    "  written.\n"
    "\n"
    "Example:\n"
    "  jobboard snooze --who w1 \"$uuid\" 300   # the remote host is down\n",
    CLI_O_WHO | CLI_O_TOKEN, 2, 2, "UUID DURATION"};

int cmd_snooze(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_snooze, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_snooze, &o)) != 0) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  int64_t ms;
  if (!cli_parse_seconds(o.args[1], 0, JB_DELAY_MAX_MS, &ms))
    return cli_duration_usage(&cli_cmd_snooze, "the snooze", o.args[1], 1000, 0,
                              JB_DELAY_MAX_MS);
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = jb_snooze(b, o.args[0], o.who, o.token, ms);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    jb_job *job = NULL;
    char due[40] = "";
    if (jb_job_get(&job, b, o.args[0]) == JB_OK && jb_job_not_before(job))
      cli_format_time(due, sizeof due, jb_job_not_before(job));
    if (cli_json_print(json_pack(
            "{s:s,s:s,s:I,s:I,s:o}", "uuid", o.args[0], "state", "UNCLAIMED",
            "snoozes", (json_int_t)jb_job_snoozes(job), "attempts",
            (json_int_t)jb_job_attempts(job), "not_before",
            due[0] ? json_string(due) : json_null())) != 0)
      rc = CLI_EXIT_ERROR;
    jb_job_free(job);
  }
  jb_board_close(b);
  return rc;
}

const cli_command cli_cmd_expires_in = {
    "expires-in", "print how long a job's claim has left",
    "Usage: jobboard expires-in [OPTIONS] UUID\n"
    "\n"
    "Print how long the claim on the job UUID has left: a duration as the\n"
    "options take them (29s, 4m10s; whole seconds rounded up, 850ms below\n"
    "a second) when it has a lease; 'no expiry' when it\n"
    "lives until its owner acts (or, bound to a process, while that process\n"
    "runs); 'not claimed' when nobody holds it (unclaimed, its claim\n"
    "lapsed, or the job is not on the board). With --json:\n"
    "{\"uuid\", \"claimed\": true|false, \"expires_in_ms\": N or null}.\n"
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
    "  jobboard expires-in \"$uuid\"\n",
    0, 1, 1, "UUID"};

int cmd_expires_in(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_expires_in, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_expiry e;
  int64_t ms = 0;
  int st = jb_job_expires_in(&e, &ms, b, o.args[0]);
  jb_board_close(b);
  if (st != JB_OK) return cli_fail(st);
  int bad;
  char left[48];
  if (o.json)
    bad = cli_json_print(json_pack(
        "{s:s,s:b,s:o}", "uuid", o.args[0], "claimed",
        e != JB_EXPIRY_NOT_CLAIMED, "expires_in_ms",
        e == JB_EXPIRY_AT ? json_integer((json_int_t)ms) : json_null()));
  else if (e == JB_EXPIRY_AT)
    bad = puts(cli_format_remaining(left, sizeof left, ms)) == EOF;
  else
    bad = puts(e == JB_EXPIRY_NONE ? "no expiry" : "not claimed") == EOF;
  return bad ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
