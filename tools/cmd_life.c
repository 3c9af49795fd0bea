/*
 * cmd_life.c - a job's life beyond claim and consume: `cancel`, `run-now`,
 * `dead` (list, show, requeue, purge) and `policy` (the board's retry
 * policy).
 */
#include "cli_common.h"
#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ----------------------------------------------------------------- cancel */

const cli_command cli_cmd_cancel = {
    "cancel", "take jobs that are not claimed off the board",
    "Usage: jobboard cancel [--force] [OPTIONS] UUID...\n"
    "       jobboard cancel --all --yes [OPTIONS]\n"
    "\n"
    "Cancel each job UUID: it leaves the board (state COMPLETE), its history\n"
    "record says \"cancelled\", a CANCELLED event is logged and its unique key\n"
    "(post --unique) is free again. A delayed job can be cancelled. A claimed\n"
    "job is refused (exit 4, naming its owner) unless --force: then its\n"
    "holder's next consume, extend or abandon fails (not on the board).\n"
    "Each UUID succeeds or fails on its own ('jobboard: <why>' on stderr);\n"
    "the exit status is the last failure's.\n"
    "\n"
    "With --all --yes, cancel every job that is not claimed (ready and\n"
    "delayed ones), a few hundred per commit; claimed jobs stay. Prints the\n"
    "number cancelled.\n"
    "\n"
    "A job that Redis decides (on a synced board: published, or from Redis)\n"
    "is cancelled through Redis first: it leaves Redis's listings (and its\n"
    "owner key and unique key) only if Redis has it unclaimed, or with\n"
    "--force claimed too, and then this board records the cancel; taskflow\n"
    "and the other boards see it completed. Claimed in Redis without --force:\n"
    "exit 4; no longer listed there: exit 3; Redis unreachable: exit 6, and\n"
    "nothing changes. A forced-off holder on any host finds its consume,\n"
    "extend or abandon refused (not on the board). --all --yes cancels the\n"
    "unclaimed jobs Redis decides through Redis too, one by one: every\n"
    "unclaimed job of the namespace, whoever posted it (taskflow's too).\n"
    "Those Redis finds claimed stay, and so do all of them when Redis is\n"
    "unreachable; the number printed counts what was cancelled.\n"
    "\n"
    "Options:\n"
    "  --force             cancel a claimed job too\n"
    "  --all               every job that is not claimed (needs --yes)\n"
    "  --yes               confirm --all\n"
    CLI_HELP_BOARD_OPTIONS
    CLI_HELP_REDIS_OPTIONS
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the board\n"
    "  4  the job is claimed (without --force; the message names the owner)\n"
    "  6  backend unavailable: the job is decided by Redis, which could not\n"
    "     be reached (nothing changed)\n"
    "\n"
    "Examples:\n"
    "  jobboard cancel \"$uuid\"\n"
    "  jobboard cancel --all --yes\n",
    CLI_O_CANCEL | CLI_O_REDIS, 0, 4096, "UUID"};

int cmd_cancel(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_cancel, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.all && o.nargs > 0)
    return cli_cmd_usage(&cli_cmd_cancel, "--all takes no UUID");
  if (o.all && !o.yes)
    return cli_cmd_usage(&cli_cmd_cancel, "--all cancels every unclaimed job: "
                         "add --yes to confirm");
  if (!o.all && o.nargs == 0)
    return cli_cmd_usage(&cli_cmd_cancel, "missing UUID (or --all --yes)");
  for (int i = 0; i < o.nargs; i++)
    if ((rc = cli_check_uuid("job uuid", o.args[i])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  if (o.all) {
    size_t n = 0;
    int st = jb_board_cancel_unclaimed(&n, b);
    if (st != JB_OK)
      rc = cli_fail(st);
    else if (o.json
                 ? cli_json_print(json_pack("{s:I}", "cancelled", (json_int_t)n))
                 : printf("%zu\n", n) < 0)
      rc = CLI_EXIT_ERROR;
  }
  for (int i = 0; i < o.nargs; i++) {
    int st = jb_job_cancel(b, o.args[i], o.force ? JB_CANCEL_FORCE : 0);
    if (st != JB_OK) {
      rc = cli_fail(st);
      continue;
    }
    if (o.json && cli_json_print(json_pack("{s:s,s:s,s:s}", "uuid", o.args[i],
                                           "state", "COMPLETE", "outcome",
                                           "cancelled")) != 0)
      rc = CLI_EXIT_ERROR;
  }
  jb_board_close(b);
  return rc;
}

/* ---------------------------------------------------------------- run-now */

const cli_command cli_cmd_run_now = {
    "run-now", "make delayed jobs claimable at once",
    "Usage: jobboard run-now [OPTIONS] UUID...\n"
    "\n"
    "Make each job UUID that waits for its due time (posted with --delay or\n"
    "--not-before, given back by `abandon --retry-in` or the back-off, or\n"
    "snoozed) claimable now, as if that time had come: it keeps its uuid,\n"
    "priority, sequence (its place in `list` and in claim-next's order),\n"
    "attempts, last reason, snoozes and options; `show` prints no due time\n"
    "any more. Waiting workers (claim-next --wait, work, wait --claimable)\n"
    "are woken as for a job that becomes due. A paused name, a cap or a rate\n"
    "limit still holds it back. No event is logged (`watch` shows none: a\n"
    "job becoming due is none either).\n"
    "A job that is claimable already is left as it is (success). A claimed\n"
    "job is refused (exit 4, naming its owner). Each UUID succeeds or fails\n"
    "on its own ('jobboard: <why>' on stderr); the exit status is the last\n"
    "failure's. Prints nothing on success (with --json, one object per UUID:\n"
    "{\"uuid\", \"state\": \"UNCLAIMED\"}).\n"
    "On a board synced with Redis the job is this board's until published\n"
    "(Redis never lists a job before its due time): the replicator\n"
    "(`jobboard sync`) publishes it at its next full pass, at the latest at\n"
    "the due time it had; until then workers of this board can claim it.\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the board\n"
    "  4  the job is claimed (the message names the owner)\n"
    CLI_HELP_EXIT_READONLY
    "\n"
    "Examples:\n"
    "  jobboard run-now \"$uuid\"\n"
    "  jobboard list --json | jq -r 'select(.not_before) | .uuid' |\n"
    "      xargs jobboard run-now\n",
    0, 1, 4096, "UUID"};

int cmd_run_now(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_run_now, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  for (int i = 0; i < o.nargs; i++)
    if ((rc = cli_check_uuid("job uuid", o.args[i])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  for (int i = 0; i < o.nargs; i++) {
    int st = jb_job_run_now(b, o.args[i]);
    if (st != JB_OK) {
      rc = cli_fail(st);
      continue;
    }
    if (o.json && cli_json_print(json_pack("{s:s,s:s}", "uuid", o.args[i],
                                           "state", "UNCLAIMED")) != 0)
      rc = CLI_EXIT_ERROR;
  }
  jb_board_close(b);
  return rc;
}

/* ------------------------------------------------------------------- dead */

const cli_command cli_cmd_dead = {
    "dead", "the dead letters: list, show, requeue, purge",
    "Usage: jobboard dead list [SELECTION] [--json] [OPTIONS]\n"
    "       jobboard dead show [--json] [OPTIONS] UUID\n"
    "       jobboard dead requeue [--keep-attempts] [--as-new] [OPTIONS] UUID...\n"
    "       jobboard dead requeue (--all | SELECTION) [--dry-run]\n"
    "                             [--keep-attempts] [--as-new] [OPTIONS]\n"
    "       jobboard dead purge (--all | SELECTION) (--yes | --dry-run) [OPTIONS]\n"
    "       jobboard dead purge [OPTIONS] UUID...\n"
    "SELECTION: one or more of --name NAME, --cause CAUSE, --older-than\n"
    "DURATION (a letter matches all of them).\n"
    "\n"
    "The dead letters are the jobs that left the board without completing:\n"
    "  trashed   its owner trashed it (`jobboard trash`)\n"
    "  attempts  its attempts reached the maximum (post --max-attempts, or\n"
    "            the board's `jobboard policy`)\n"
    "  buried    its owner sent it there (`abandon --dead`; `work`'s\n"
    "            exit 100)\n"
    "  expired   not claimed by its deadline to start, posted with\n"
    "            --expires-dead (`jobboard post --help`)\n"
    "Each keeps the posting (name, details, book), its attempts, the last\n"
    "attempt's reason, its last owner and when it died.\n"
    "\n"
    "  list     one line per dead letter: uuid, cause, attempts, when, name\n"
    "           (with --json: one object per line, as show prints it); with\n"
    "           a SELECTION only the letters it matches\n"
    "  show     everything kept of one\n"
    "  requeue  back on the board, claimable at once, same uuid, as the newest\n"
    "           job of its priority; its attempts start again from 0 unless\n"
    "           --keep-attempts; its unique key is held again (exit 11 when\n"
    "           another live job holds it: the letter stays). The letter of\n"
    "           a job Redis decided (published) is refused (exit 2): Redis\n"
    "           keeps its uuid's publication mark. With --as-new the letter\n"
    "           is posted again as a NEW job (a new uuid, printed; created\n"
    "           now; same name, details, priority, book and options) and\n"
    "           leaves the dead letters in the same commit: the way back for\n"
    "           a letter Redis decided (the replicator publishes the new\n"
    "           job), and for any other\n"
    "  purge    delete letters for good: those UUID... named, each on its\n"
    "           own (no --yes needed; a UUID with no letter: exit 3, the\n"
    "           others are deleted; prints nothing, with --json {\"uuid\",\n"
    "           \"purged\": true} per letter), or --all or a SELECTION, which\n"
    "           needs --yes. A purge deletes only this board's letters\n"
    "           (Redis keeps its own of the jobs it decided); the history\n"
    "           records stay\n"
    "\n"
    "requeue and purge of --all or a SELECTION read the letters that match\n"
    "when the command starts, then requeue or delete each in a write\n"
    "transaction of its own, and print the number done (\"requeued 12 dead\n"
    "letters\"; with --json {\"requeued\"|\"purged\": N, \"uuids\": [...],\n"
    "\"gone\": N, \"failed\": N}, and \"new_uuids\" with --as-new, in the\n"
    "order of \"uuids\"). An interrupted run (killed, a crash) leaves each\n"
    "letter requeued or still dead, never both and never lost: run the same\n"
    "command again for the rest. A letter another process took meanwhile\n"
    "is counted as gone; one refused (its unique key held, decided by Redis\n"
    "without --as-new) stays dead, its reason on stderr (the first three),\n"
    "and the exit status is the refusal's. --dry-run prints the letters\n"
    "that match, as list does, and \"would requeue N dead letters\" (with\n"
    "--json {\"dry_run\": true, \"would_requeue\"|\"would_purge\": N,\n"
    "\"uuids\": [...]}), and changes nothing.\n"
    "\n"
    "Options:\n"
    "  --all               requeue, purge: every letter\n"
    "  --name NAME         letters of jobs named NAME (a NAME ending in '*'\n"
    "                      is a prefix); repeated: any of them\n"
    "  --cause CAUSE       letters of that cause: trashed, attempts, buried,\n"
    "                      expired\n"
    "  --older-than DURATION letters dead longer than this\n"
    "  --dry-run           requeue, purge of a selection: say, change nothing\n"
    "  --keep-attempts     requeue: keep the attempts counted so far\n"
    "  --as-new            requeue: post each again as a new job (new uuid)\n"
    "  --yes               confirm a purge of --all or a SELECTION\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_EXIT_COMMON ", or no such dead letter\n"
    "  11 requeue: a live job holds the letter's unique key\n"
    "\n"
    "Examples:\n"
    "  jobboard dead list --cause attempts\n"
    "  jobboard dead requeue \"$uuid\"\n"
    "  jobboard dead requeue --name 'resize*' --cause attempts --dry-run\n"
    "  jobboard dead requeue --all --as-new\n"
    "  jobboard dead purge --older-than 7d --yes\n"
    "  jobboard dead purge \"$uuid\"\n",
    CLI_O_DEAD | CLI_O_NAMES, 1, 4097, "SUBCOMMAND"};

static json_t *letter_json(const jb_dead_letter *l) {
  char died[40], posted[40];
  cli_format_time(died, sizeof died, l->dead_us);
  if (l->posted_us) cli_format_time(posted, sizeof posted, l->posted_us);
  json_t *details = l->details ? cli_msgpack_to_json(l->details, l->details_len)
                               : json_null();
  if (details == NULL) return NULL;
#define TEXT_OR_NULL(s) ((s) ? json_string(s) : json_null())
  return json_pack(
      "{s:s,s:s,s:o,s:s,s:I,s:o,s:I,s:o,s:o,s:o,s:o,s:s,s:o}", "uuid", l->uuid,
      "cause", jb_dead_cause_name(l->cause), "name", TEXT_OR_NULL(l->name),
      "priority", jb_priority_name(l->priority), "sequence",
      (json_int_t)l->sequence, "owner", TEXT_OR_NULL(l->owner), "attempts",
      (json_int_t)l->attempts, "max_attempts",
      l->max_attempts ? json_integer(l->max_attempts) : json_null(),
      "reason", TEXT_OR_NULL(l->reason), "unique", TEXT_OR_NULL(l->unique_key),
      "posted", l->posted_us ? json_string(posted) : json_null(), "died",
      died, "details", details);
#undef TEXT_OR_NULL
}

/* The time --older-than counts from, in `dead list`. */
static int64_t list_now_us;

static int list_one(const jb_dead_letter *l, void *payload) {
  const cli_opts *o = payload;
  if (!cli_dead_matches(o, list_now_us, l)) return 0;
  if (o->json) return cli_json_print(letter_json(l)) ? 1 : 0;
  char died[40];
  cli_format_time(died, sizeof died, l->dead_us);
  printf("%s  %-8s  %3u  %s  ", l->uuid, jb_dead_cause_name(l->cause),
         (unsigned)l->attempts, died);
  cli_put_text(stdout, l->name ? l->name : "(posting does not decode)");
  return putchar('\n') == EOF ? 1 : 0;
}

static int show_one(const cli_opts *o, const jb_dead_letter *l) {
  if (o->json) return cli_json_print(letter_json(l)) ? CLI_EXIT_ERROR : 0;
  char died[40];
  cli_format_time(died, sizeof died, l->dead_us);
  printf("uuid:      %s\ncause:     %s\nname:      ", l->uuid,
         jb_dead_cause_name(l->cause));
  cli_put_text(stdout, l->name ? l->name : "(posting does not decode)");
  printf("\npriority:  %s\nsequence:  %" PRIu64 "\n",
         jb_priority_name(l->priority), l->sequence);
  if (l->posted_us) {
    char posted[40];
    cli_format_time(posted, sizeof posted, l->posted_us);
    printf("posted:    %s\n", posted);
  }
  printf("died:      %s\nattempts:  %u failed", died, (unsigned)l->attempts);
  if (l->max_attempts) printf(" of at most %u", (unsigned)l->max_attempts);
  fputs("\nreason:    ", stdout);
  cli_put_text(stdout, l->reason ? l->reason : "-");
  fputs("\nowner:     ", stdout);
  cli_put_text(stdout, l->owner ? l->owner : "-");
  if (l->unique_key) {
    fputs("\nunique:    ", stdout);
    cli_put_text(stdout, l->unique_key);
  }
  fputs("\ndetails:   ", stdout);
  json_t *d = l->details ? cli_msgpack_to_json(l->details, l->details_len)
                         : NULL;
  char *t = d ? json_dumps(d, JSON_COMPACT) : NULL;
  cli_put_text(stdout, t ? t : "-");
  free(t);
  json_decref(d);
  return putchar('\n') == EOF ? CLI_EXIT_ERROR : 0;
}

int cmd_dead(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_dead, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  const char *sub = o.args[0];
  bool list = strcmp(sub, "list") == 0, show = strcmp(sub, "show") == 0,
       requeue = strcmp(sub, "requeue") == 0, purge = strcmp(sub, "purge") == 0;
  if (!list && !show && !requeue && !purge)
    return cli_cmd_usage(&cli_cmd_dead, "unknown subcommand '%s' (list, show, "
                         "requeue or purge)", sub);
  if (list && o.nargs > 1)
    return cli_cmd_usage(&cli_cmd_dead, "%s takes no UUID", sub);
  if (show && o.nargs != 2)
    return cli_cmd_usage(&cli_cmd_dead, "show takes one UUID");
  if ((o.keep_attempts || o.as_new) && !requeue)
    return cli_cmd_usage(&cli_cmd_dead, "--%s is for requeue",
                         o.as_new ? "as-new" : "keep-attempts");
  if (o.yes && !purge)
    return cli_cmd_usage(&cli_cmd_dead, "--yes is for purge");
  if (o.dry_run && !requeue && !purge)
    return cli_cmd_usage(&cli_cmd_dead, "--dry-run is for requeue and purge");
  if (show && cli_dead_selects(&o))
    return cli_cmd_usage(&cli_cmd_dead, "show takes one UUID, no --all, "
                         "--name, --cause or --older-than");
  if (list && o.all)
    return cli_cmd_usage(&cli_cmd_dead, "list lists every letter: --all is "
                         "for requeue and purge");
  if (o.cause && cli_dead_cause(o.cause) < 0)
    return cli_cmd_usage(&cli_cmd_dead, "--cause: '%s' is not a cause "
                         "(trashed, attempts, buried or expired)", o.cause);
  if (o.all && (o.n_names || o.cause || o.older_than_ms >= 0))
    return cli_cmd_usage(&cli_cmd_dead, "%s: --all takes every letter: not "
                         "with --name, --cause or --older-than", sub);
  /* requeue, purge: by uuid, or a selection (--all or filters); one of
   * the two. */
  bool by_sel = (requeue || purge) && cli_dead_selects(&o),
       by_uuid = (requeue || purge) && o.nargs > 1;
  if (by_uuid && by_sel)
    return cli_cmd_usage(&cli_cmd_dead, "%s: give UUIDs or a selection "
                         "(--all, --name, --cause, --older-than), not both",
                         sub);
  if ((requeue || purge) && !by_uuid && !by_sel)
    return cli_cmd_usage(&cli_cmd_dead, "%s: give the UUIDs of the letters, "
                         "or --all, or --name, --cause, --older-than", sub);
  if (o.dry_run && by_uuid)
    return cli_cmd_usage(&cli_cmd_dead, "--dry-run is for a selection (--all, "
                         "--name, --cause, --older-than): 'jobboard dead "
                         "show UUID' shows one letter");
  if (purge && by_sel && !o.yes && !o.dry_run)
    return cli_cmd_usage(&cli_cmd_dead, "purge deletes dead letters for good: "
                         "add --yes to confirm (or --dry-run to see them)");
  for (int i = 1; i < o.nargs; i++)
    if ((rc = cli_check_uuid("job uuid", o.args[i])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = JB_OK;
  if (by_sel) {
    rc = cli_dead_bulk(b, &o, purge, list_one);
  } else if (list) {
    list_now_us = cli_dead_now_us();
    st = jb_dead_foreach(b, list_one, &o);
    if (st == 1) { /* list_one: a write error */
      rc = CLI_EXIT_ERROR;
      st = JB_OK;
    }
  } else if (show) {
    jb_dead_letter *l = NULL;
    if ((st = jb_dead_get(&l, b, o.args[1])) == JB_OK) rc = show_one(&o, l);
    jb_dead_free(l);
  } else if (requeue) {
    unsigned fl = o.keep_attempts ? JB_REQUEUE_KEEP_ATTEMPTS : 0;
    for (int i = 1; i < o.nargs; i++) {
      char fresh[JB_UUID_STRLEN];
      int s = o.as_new ? jb_dead_repost(b, o.args[i], fl, fresh)
                       : jb_dead_requeue(b, o.args[i], fl);
      if (s != JB_OK) {
        rc = cli_fail(s);
        continue;
      }
      int w = 0;
      if (o.json && o.as_new)
        w = cli_json_print(json_pack("{s:s,s:s,s:s}", "uuid", o.args[i],
                                     "new_uuid", fresh, "state",
                                     "UNCLAIMED"));
      else if (o.json)
        w = cli_json_print(json_pack("{s:s,s:s}", "uuid", o.args[i], "state",
                                     "UNCLAIMED"));
      else if (o.as_new) /* the new uuid, as post prints it */
        w = puts(fresh) == EOF;
      if (w != 0) rc = CLI_EXIT_ERROR;
    }
  } else if (by_uuid) {
    for (int i = 1; i < o.nargs; i++) {
      int s = jb_dead_remove(b, o.args[i]);
      if (s != JB_OK)
        rc = cli_fail(s);
      else if (o.json &&
               cli_json_print(json_pack("{s:s,s:b}", "uuid", o.args[i],
                                        "purged", 1)) != 0)
        rc = CLI_EXIT_ERROR;
    }
  }
  if (st != JB_OK) rc = cli_fail(st);
  jb_board_close(b);
  return rc;
}

/* ----------------------------------------------------------------- policy */

const cli_command cli_cmd_policy = {
    "policy", "show or set the board's retry policy",
    "Usage: jobboard policy [--max-attempts N|none] [--backoff DURATION]\n"
    "                       [--backoff-max DURATION] [OPTIONS]\n"
    "\n"
    "Show the board's retry policy, or set the parts given (the others stay\n"
    "as they are). It is stored in the board: every process uses it, for\n"
    "every job posted without its own --max-attempts, --backoff or\n"
    "--backoff-max.\n"
    "  max_attempts  failed attempts after which a job goes to the dead\n"
    "                letters (default: none, no maximum)\n"
    "  backoff       the first retry's back-off for `abandon --retry-in\n"
    "                backoff` and `work`'s exit 75 (default 1 s); it doubles\n"
    "                with every attempt, with +-20 % jitter,\n"
    "  backoff_max   up to this (default 3600 s)\n"
    "Abandons without --retry-in and claims that lapse come back at once.\n"
    "\n"
    "Options:\n"
    "  --max-attempts N|none  1 or more, or none: no maximum again (what a\n"
    "                      new board has); 0 is refused (say none)\n"
    "  --backoff DURATION  fractions allowed\n"
    "  --backoff-max DURATION\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    "Output: max_attempts, backoff and backoff_max in seconds (with --json:\n"
    "one object).\n"
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Examples:\n"
    "  jobboard policy --max-attempts 5 --backoff 2 --backoff-max 600\n"
    "  jobboard policy --max-attempts none    # no maximum again\n",
    CLI_O_LIFE, 0, 0, NULL};

int cmd_policy(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_policy, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.delay_ms || o.not_before_us || o.unique || o.time_limit_ms ||
      o.max_snoozes || o.expires_ms || o.expires_dead)
    return cli_cmd_usage(&cli_cmd_policy, "takes --max-attempts, --backoff "
                         "and --backoff-max only");
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_retry_policy p;
  int st = jb_board_get_retry_policy(&p, b);
  bool set = o.max_attempts || o.max_attempts_none || o.backoff_ms ||
             o.backoff_max_ms;
  if (st == JB_OK && set) {
    if (o.max_attempts || o.max_attempts_none) p.max_attempts = o.max_attempts;
    if (o.backoff_ms) p.backoff_ms = o.backoff_ms;
    if (o.backoff_max_ms) p.backoff_max_ms = o.backoff_max_ms;
    st = jb_board_set_retry_policy(b, &p);
  }
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    if (cli_json_print(json_pack(
            "{s:o,s:f,s:f}", "max_attempts",
            p.max_attempts ? json_integer(p.max_attempts) : json_null(),
            "backoff", p.backoff_ms / 1000.0, "backoff_max",
            p.backoff_max_ms / 1000.0)) != 0)
      rc = CLI_EXIT_ERROR;
  } else {
    if (p.max_attempts)
      printf("max_attempts: %u\n", (unsigned)p.max_attempts);
    else
      puts("max_attempts: none");
    char lo[48], hi[48];
    printf("backoff:      %s\nbackoff_max:  %s\n",
           cli_format_duration(lo, sizeof lo, p.backoff_ms),
           cli_format_duration(hi, sizeof hi, p.backoff_max_ms));
  }
  jb_board_close(b);
  return rc;
}
