/*
 * cmd_queues.c - names as queues at the prompt: pause, resume, cap, rate,
 * queues.
 */
#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAUSE_BODY(VERB, WHAT)                                                 \
  "\n"                                                                         \
  "Options:\n"                                                                 \
  "  --all               " VERB " the whole board (every name) instead of\n"   \
  "                      one name; a name's own pause is kept apart from it\n" \
  CLI_HELP_BOARD_OPTIONS                                                       \
  "\n"                                                                         \
  CLI_HELP_ENV                                                                 \
  "\n"                                                                         \
  CLI_HELP_EXIT_COMMON ", or no job named NAME was ever posted on\n"          \
  "     the board\n"                                                           \
  "  Neither NAME nor --all, or both, or a NAME ending in '*', is a usage\n"   \
  "  error (2).\n"

const cli_command cli_cmd_pause = {
    "pause", "stop claims of a job name (or of the whole board)",
    "Usage: jobboard pause [OPTIONS] NAME\n"
    "       jobboard pause [OPTIONS] --all\n"
    "\n"
    "Pause the jobs named NAME (or, with --all, every job of the board):\n"
    "they stay on the board and are listed, but no claim-next or `work` of\n"
    "any process takes them until `jobboard resume`. Jobs already claimed\n"
    "are not touched: their owners finish them. A claim of one paused job\n"
    "by its uuid (`jobboard claim`) still works. The pause is kept in the\n"
    "board: it holds for every process and survives restarts. Workers\n"
    "waiting for jobs sleep through it and wake at the resume. Pausing what\n"
    "is paused changes nothing. `jobboard queues` shows what is paused.\n"
    "Prints nothing (with --json: {\"name\", \"paused\": true}; name null for\n"
    "--all).\n"
    PAUSE_BODY("pause", "paused")
    "\n"
    "Examples:\n"
    "  jobboard pause resize        # before a deploy of the resizer\n"
    "  jobboard pause --all && deploy && jobboard resume --all\n",
    CLI_O_CANCEL, 0, 1, "NAME"};

const cli_command cli_cmd_resume = {
    "resume", "let a paused job name (or the board) be claimed again",
    "Usage: jobboard resume [OPTIONS] NAME\n"
    "       jobboard resume [OPTIONS] --all\n"
    "\n"
    "Resume what `jobboard pause` paused: the jobs named NAME (or, with\n"
    "--all, the whole board) are claimable again, and the workers waiting\n"
    "for them wake. A name paused on its own stays paused after a resume\n"
    "--all. Resuming what is not paused changes nothing. Prints nothing\n"
    "(with --json: {\"name\", \"paused\": false}).\n"
    PAUSE_BODY("resume", "resumed")
    "\n"
    "Example:\n"
    "  jobboard resume resize\n",
    CLI_O_CANCEL, 0, 1, "NAME"};

const cli_command cli_cmd_cap = {
    "cap", "cap the jobs of a name (or of each name of a prefix) claimed at once",
    "Usage: jobboard cap [OPTIONS] NAME N\n"
    "       jobboard cap [OPTIONS] NAME none\n"
    "       jobboard cap [OPTIONS] PREFIX* N|none\n"
    "\n"
    "Let at most N jobs named NAME be claimed at once, by every worker of\n"
    "every process together (say, N calls at once against an API). Each\n"
    "claim decides it in its own transaction, so no race exceeds it:\n"
    "claim-next and `work` pass NAME's jobs over while N are claimed, and\n"
    "take them again when a claim ends (consumed, abandoned, or lapsed:\n"
    "a lease run out, a holder process gone); a worker waiting only for\n"
    "them wakes then. A claim of one by its uuid is refused (exit 12)\n"
    "while the cap is full. Setting a cap counts the claims NAME holds now;\n"
    "a lower cap takes no claim back. `none` or 0 removes the cap.\n"
    "\n"
    "A cap per key: PREFIX* (quote it from the shell) caps EACH name that\n"
    "starts with PREFIX on its own at N, the names posted later too. Put\n"
    "the key in the name (resize.customer42), claim by the prefix\n"
    "(--name 'resize.*'), and no customer holds more than N claims at once\n"
    "while the others go on; it is not a cap of those names together. A\n"
    "name's own cap beats its prefix's (and `none` on the name brings the\n"
    "prefix's back); the longest capped prefix of a name wins; at most 256\n"
    "prefixes are capped at once.\n"
    "\n"
    "`jobboard queues` shows each cap and the claims held. Prints nothing\n"
    "(with --json: {\"name\", \"cap\": N or null}; NAME is PREFIX* for a\n"
    "prefix).\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or no job named NAME was ever posted on\n"
    "     the board\n"
    "  N not a number from 0 to 1000000 (or none) is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard cap geocode 4      # the geocoding API takes 4 calls at once\n"
    "  jobboard cap geocode none\n"
    "  jobboard cap 'resize.*' 2   # each customer's resize.ID: 2 at once\n",
    0, 2, 2, "NAME N"};

const cli_command cli_cmd_rate = {
    "rate", "limit the claims of a job name (or of each name of a prefix) "
    "per period",
    "Usage: jobboard rate [OPTIONS] NAME COUNT PERIOD\n"
    "       jobboard rate [OPTIONS] NAME none\n"
    "       jobboard rate [OPTIONS] PREFIX* COUNT PERIOD|none\n"
    "\n"
    "Let at most COUNT jobs named NAME be claimed per PERIOD (a DURATION:\n"
    "500ms, 60 or 1m, 1h; seconds when bare, to the millisecond), by every\n"
    "worker of every process together (say, an API allowing 100 calls a\n"
    "minute). The limit is a token bucket: COUNT claims may go at once,\n"
    "then one every PERIOD/COUNT. Each claim decides it in its own\n"
    "transaction, so no race exceeds it: claim-next and `work` pass NAME's\n"
    "jobs over while it has no token, and a worker waiting only for them\n"
    "sleeps until the next token is due and wakes then. A claim of one by\n"
    "its uuid is refused (exit 12) while there is no token. Every claim of\n"
    "NAME made on this board spends a token (claim, claim-next and its\n"
    "--count, work, consume --next); claims of Redis-decided jobs made on\n"
    "another host and mirrored here spend none. A limit set or changed\n"
    "starts with its tokens full. `none` removes the limit.\n"
    "\n"
    "A rate limit per key: PREFIX* (quote it from the shell) limits EACH\n"
    "name that starts with PREFIX on its own to COUNT claims per PERIOD,\n"
    "the names posted later too. Put the key in the name (api.customer42),\n"
    "claim by the prefix (--name 'api.*'), and no customer's jobs are\n"
    "claimed faster than that while the others go on; it is not a limit of\n"
    "those names together. A name's own limit beats its prefix's (and\n"
    "`none` on the name brings the prefix's back); the longest rate-limited\n"
    "prefix of a name wins; at most 256 prefixes are rate-limited at once.\n"
    "\n"
    "`jobboard queues` shows each limit (`100/60s`, `100/60s*` when it is\n"
    "its prefix's) and when its next token is due. Prints nothing (with\n"
    "--json: {\"name\", \"rate\": COUNT or null, \"period_s\": PERIOD or\n"
    "null}; NAME is PREFIX* for a prefix).\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or no job named NAME was ever posted on\n"
    "     the board\n"
    "  COUNT not a number from 1 to 1000000, PERIOD not a duration from\n"
    "  1ms to 366d, or more than one\n"
    "  claim a microsecond, is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard rate geocode 100 60   # the geocoding API's 100 calls a minute\n"
    "  jobboard rate mail 2 0.5       # 4 mails a second, 2 at once at most\n"
    "  jobboard rate geocode none\n"
    "  jobboard rate 'api.*' 10 60    # each customer's api.ID: 10 a minute\n",
    0, 2, 3, "NAME COUNT PERIOD"};

const cli_command cli_cmd_queues = {
    "queues", "list the job names of the board, paused or not, ready counts",
    "Usage: jobboard queues [OPTIONS]\n"
    "\n"
    "List every name a job was ever posted with on the board, one per line:\n"
    "the number of its jobs ready now (claimable, or held back by a pause\n"
    "or a cap or a rate limit; not the claimed or delayed ones), `paused`\n"
    "when it is, the claims it holds and its cap (`3/4`; `3/4*` when the\n"
    "cap is its prefix's: jobboard cap 'PREFIX*' N) when it has one,\n"
    "its rate limit (`100/60s`, and `+2.5s` while its next token is that\n"
    "far off; `100/60s*` when the limit is its prefix's: jobboard rate\n"
    "'PREFIX*' R P) when it has one, and the name. First lines say when\n"
    "the whole board is paused and which prefixes cap or rate-limit each\n"
    "of their names.\n"
    "The counts are read from the index of ready jobs by name: the time\n"
    "grows with them.\n"
    "With --json, one object per name: {\"name\", \"ready\", \"paused\",\n"
    "\"paused_since\", \"cap\", \"held\", \"cap_each\", \"rate\",\n"
    "\"period_s\", \"next_token\", \"rate_each\"} (paused_since: an ISO\n"
    "time, or null; cap and held null without a cap; cap_each true when\n"
    "the cap is its prefix's; rate, period_s and next_token null without a\n"
    "rate limit, next_token an ISO time, or null while it has a token;\n"
    "rate_each true when the limit is its prefix's), first\n"
    "{\"board_paused\": true|false}, then one {\"prefix\": \"PREFIX*\",\n"
    "\"cap\": N} per capped prefix and one {\"prefix\": \"PREFIX*\",\n"
    "\"rate\": R, \"period_s\": P} per rate-limited prefix.\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Example:\n"
    "  jobboard queues | sort -rn | head\n",
    0, 0, 0, ""};

static int pause_cmd(const cli_command *cmd, int argc, char **argv,
                     bool pause) {
  cli_opts o;
  int rc = cli_parse(&o, cmd, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.yes || o.force)
    return cli_cmd_usage(cmd, "--yes and --force are not options of %s",
                         cmd->name);
  if (o.all == (o.nargs == 1))
    return cli_cmd_usage(cmd, o.all ? "give a NAME or --all, not both"
                                    : "give a NAME, or --all for the whole "
                                      "board");
  const char *name = o.all ? NULL : o.args[0];
  if (name && name[0] == '\0')
    return cli_cmd_usage(cmd, "NAME: a job's name is not empty");
  if (name && name[strlen(name) - 1] == '*')
    return cli_cmd_usage(cmd, "NAME '%s': %s takes one exact name, not a "
                         "prefix", name, cmd->name);
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = pause ? jb_pause(b, name) : jb_resume(b, name);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    json_t *n = name ? json_string(name) : json_null();
    if (n == NULL) n = json_null();
    rc = cli_json_print(json_pack("{s:o,s:b}", "name", n, "paused", pause))
             ? CLI_EXIT_ERROR
             : 0;
  }
  jb_board_close(b);
  return rc;
}

int cmd_pause(int argc, char **argv) {
  return pause_cmd(&cli_cmd_pause, argc, argv, true);
}

int cmd_resume(int argc, char **argv) {
  return pause_cmd(&cli_cmd_resume, argc, argv, false);
}

typedef struct {
  bool json;
  bool failed;
  int64_t now_us;
} queues_out;

static int queue_line(const jb_queue_info *q, void *arg) {
  queues_out *out = arg;
  if (out->json) {
    if (cli_json_print(cli_queue_json(q, out->now_us))) out->failed = true;
    return 0;
  }
  char cap[32], rate[64];
  cli_queue_columns(cap, rate, q, out->now_us);
  printf("%8zu %-6s %-11s %-16s ", q->ready, q->paused ? "paused" : "", cap,
         rate);
  cli_put_text(stdout, q->name);
  putchar('\n');
  return 0;
}

/* The fields `queues --json` gives a name; `top --json` adds its own. */
json_t *cli_queue_json(const jb_queue_info *q, int64_t now_us) {
  json_t *n = json_string(q->name);
  json_t *since = json_null();
  if (q->paused && q->changed_us) {
    char t[64];
    cli_format_time(t, sizeof t, q->changed_us);
    since = json_string(t);
  }
  json_t *next = json_null();
  if (q->rate && q->next_token_us > now_us) {
    char t[64];
    cli_format_time(t, sizeof t, q->next_token_us);
    next = json_string(t);
  }
  return json_pack(
      "{s:o,s:I,s:b,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:b}", "name",
      n ? n : json_null(), "ready", (json_int_t)q->ready, "paused", q->paused,
      "paused_since", since ? since : json_null(), "cap",
      q->cap ? json_integer(q->cap) : json_null(), "held",
      q->cap ? json_integer(q->held) : json_null(), "cap_each", q->cap_each,
      "rate", q->rate ? json_integer(q->rate) : json_null(), "period_s",
      q->rate ? json_real((double)q->period_ms / 1e3) : json_null(),
      "next_token", next ? next : json_null(), "rate_each", q->rate_each);
}

void cli_queue_columns(char cap[32], char rate[64], const jb_queue_info *q,
                       int64_t now_us) {
  cap[0] = rate[0] = '\0';
  if (q->cap)
    snprintf(cap, 32, "%u/%u%s", q->held, q->cap, q->cap_each ? "*" : "");
  if (q->rate) {
    char per[40], wait[40];
    int n = snprintf(rate, 64, "%u/%s%s", q->rate,
                     cli_format_duration(per, sizeof per, q->period_ms),
                     q->rate_each ? "*" : "");
    if (q->next_token_us > now_us && n > 0)
      snprintf(rate + n, 64 - (size_t)n, " +%s",
               cli_format_remaining(wait, sizeof wait,
                                    (q->next_token_us - now_us + 999) / 1000));
  }
}

int cmd_cap(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_cap, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  const char *name = o.args[0], *n = o.args[1];
  if (name[0] == '\0')
    return cli_cmd_usage(&cli_cmd_cap, "NAME: a job's name is not empty");
  unsigned long cap = 0;
  if (strcmp(n, "none") != 0) {
    char *end;
    errno = 0;
    cap = strtoul(n, &end, 10);
    if (end == n || *end != '\0' || errno || n[0] == '-' || cap > 1000000)
      return cli_cmd_usage(&cli_cmd_cap, "N: '%s' is not a number from 0 to "
                           "1000000 (or none)", n);
  }
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = jb_set_cap(b, name, (uint32_t)cap);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    json_t *jn = json_string(name);
    rc = cli_json_print(json_pack("{s:o,s:o}", "name", jn ? jn : json_null(),
                                  "cap", cap ? json_integer((json_int_t)cap)
                                             : json_null()))
             ? CLI_EXIT_ERROR
             : 0;
  }
  jb_board_close(b);
  return rc;
}

/* PERIOD of `jobboard rate`: a duration (cli_parse_seconds), from a
 * millisecond to JB_RATE_PERIOD_MAX_MS. false for anything else. */
static bool parse_period(const char *p, uint64_t *ms) {
  int64_t v;
  if (!cli_parse_seconds(p, 1, JB_RATE_PERIOD_MAX_MS, &v)) return false;
  *ms = (uint64_t)v;
  return true;
}

int cmd_rate(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_rate, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  const char *name = o.args[0], *n = o.args[1];
  if (name[0] == '\0')
    return cli_cmd_usage(&cli_cmd_rate, "NAME: a job's name is not empty");
  unsigned long count = 0;
  uint64_t period_ms = 0;
  if (strcmp(n, "none") == 0) {
    if (o.nargs == 3)
      return cli_cmd_usage(&cli_cmd_rate, "none takes no PERIOD");
  } else {
    char *end;
    errno = 0;
    count = strtoul(n, &end, 10);
    if (end == n || *end != '\0' || errno || n[0] == '-' || count == 0 ||
        count > 1000000)
      return cli_cmd_usage(&cli_cmd_rate, "COUNT: '%s' is not a number from "
                           "1 to 1000000 (or none)", n);
    if (o.nargs != 3)
      return cli_cmd_usage(&cli_cmd_rate, "give a PERIOD (a duration) after "
                           "COUNT");
    if (!parse_period(o.args[2], &period_ms))
      return cli_duration_usage(&cli_cmd_rate, "PERIOD", o.args[2], 1000, 1,
                                JB_RATE_PERIOD_MAX_MS);
    char per[48];
    if (period_ms * 1000 < count)
      return cli_cmd_usage(&cli_cmd_rate, "%lu claims per %s is more than "
                           "one a microsecond", count,
                           cli_format_duration(per, sizeof per,
                                               (int64_t)period_ms));
  }
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = jb_set_rate(b, name, (uint32_t)count, period_ms);
  if (st != JB_OK) {
    rc = cli_fail(st);
  } else if (o.json) {
    json_t *jn = json_string(name);
    rc = cli_json_print(json_pack(
             "{s:o,s:o,s:o}", "name", jn ? jn : json_null(), "rate",
             count ? json_integer((json_int_t)count) : json_null(),
             "period_s",
             count ? json_real((double)period_ms / 1e3) : json_null()))
             ? CLI_EXIT_ERROR
             : 0;
  }
  jb_board_close(b);
  return rc;
}

/* A prefix line of `queues`: its cap, or (period_ms above 0) its rate
 * limit. */
static int prefix_out(queues_out *out, const char *prefix, uint32_t count,
                      uint64_t period_ms) {
  if (out->json) {
    char *p = NULL;
    if (asprintf(&p, "%s*", prefix) < 0) p = NULL;
    json_t *jp = p ? json_string(p) : NULL;
    free(p);
    if (!jp) jp = json_null();
    json_t *o = period_ms
                    ? json_pack("{s:o,s:I,s:f}", "prefix", jp, "rate",
                                (json_int_t)count, "period_s",
                                (double)period_ms / 1e3)
                    : json_pack("{s:o,s:I}", "prefix", jp, "cap",
                                (json_int_t)count);
    if (cli_json_print(o)) out->failed = true;
    return 0;
  }
  printf("each name of ");
  cli_put_text(stdout, prefix);
  char per[48];
  if (period_ms)
    printf("* is limited to %u claims per %s\n", count,
           cli_format_duration(per, sizeof per, (int64_t)period_ms));
  else
    printf("* is capped at %u claims at once\n", count);
  return 0;
}

static int prefix_line(const char *prefix, uint32_t cap, void *arg) {
  return prefix_out(arg, prefix, cap, 0);
}

static int rate_prefix_line(const char *prefix, uint32_t count,
                            uint64_t period_ms, void *arg) {
  return prefix_out(arg, prefix, count, period_ms);
}

static int stop_at_once(const jb_queue_info *q, void *arg) {
  (void)q;
  (void)arg;
  return 1;
}

int cmd_queues(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_queues, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  queues_out out = {.json = o.json, .now_us = cli_wall_now_us()};
  int paused = 0;
  /* The board's own pause first (a walk stopped at once reads it). */
  int st = jb_queues_foreach(b, stop_at_once, NULL, &paused);
  if (st == 1) st = JB_OK;
  if (st == JB_OK) {
    if (o.json) {
      if (cli_json_print(json_pack("{s:b}", "board_paused", paused)))
        out.failed = true;
    } else if (paused) {
      puts("the whole board is paused (jobboard resume --all)");
    }
    st = jb_cap_prefixes(b, prefix_line, &out);
  }
  if (st == JB_OK) st = jb_rate_prefixes(b, rate_prefix_line, &out);
  if (st == JB_OK) {
    st = jb_queues_foreach(b, queue_line, &out, NULL);
  }
  if (st == JB_OK && out.failed) rc = CLI_EXIT_ERROR;
  if (st != JB_OK) rc = cli_fail(st);
  jb_board_close(b);
  return rc;
}
