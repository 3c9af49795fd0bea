/*
 * cli_common.c - what the jobboard subcommands share: exit codes, the one
 * error line, option parsing, opening the board.
 */
#include "cli_common.h"
#include "cli_error.h"
#include "cli_getopt.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

/* -------------------------------------------------------------- cli.h */

static volatile sig_atomic_t caught;
static jb_board *_Atomic cancel_board;

static void on_signal(int sig) {
  caught = sig;
  jb_board_interrupt(cancel_board);
}

void cli_cancel_on_signals(jb_board *b) {
  cancel_board = b;
  if (b == NULL) return; /* the board is about to close: forget it */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

int cli_caught_signal(void) { return caught; }

int cli_exit_code(int status) {
  if (status == JB_EINTERRUPTED && caught) return 128 + caught;
  switch (status) {
  case JB_OK: return CLI_EXIT_OK;
  case JB_EINVAL: return CLI_EXIT_USAGE;
  case JB_ENOTFOUND: return CLI_EXIT_NOTFOUND;
  case JB_ECLAIMED: return CLI_EXIT_CLAIMED;
  case JB_ENOTOWNER: return CLI_EXIT_NOTOWNER;
  case JB_EOFFLINE: return CLI_EXIT_OFFLINE;
  case JB_ETIMEDOUT: return CLI_EXIT_TIMEDOUT;
  case JB_ETRIMMED: return CLI_EXIT_TRIMMED;
  case JB_EEXISTS: return CLI_EXIT_EXISTS;
  case JB_ENOTDUE: return CLI_EXIT_NOTDUE;
  case JB_EREADONLY: return CLI_EXIT_READONLY;
  default: return CLI_EXIT_ERROR;
  }
}

static void put_line(const char *msg) { cli_error_line("jobboard", msg); }

int cli_fail(int status) {
  fflush(stdout); /* keep stdout's lines before the error when both are a tty */
  const char *note = status == JB_EOFFLINE ? cli_sync_offline_note() : "";
  if (note[0] == '\0') {
    put_line(jb_errmsg());
  } else {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s (%s)", jb_errmsg(), note);
    put_line(msg);
  }
  return cli_exit_code(status);
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = cli_vusage_error("jobboard", fmt, ap);
  va_end(ap);
  return rc;
}

const char *cli_board_dir(const char *opt) {
  if (opt != NULL) return opt;
  const char *env = getenv("JOBBOARD_DIR");
  if (env != NULL && env[0] != '\0') return env;
  return "./jobboard.d";
}

/* ------------------------------------------------------------ parsing */

int cli_cmd_usage(const cli_command *cmd, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return cli_usage_error("%s: %s (try 'jobboard %s --help')", cmd->name, msg,
                         cmd->name);
}

int cli_help(const cli_command *cmd) {
  fputs(cmd->help, stdout);
  /* The forms of durations and times, once, for every command taking
   * them. */
  bool duration = strstr(cmd->help, "DURATION") != NULL;
  bool time = strstr(cmd->help, " TIME") != NULL &&
              strstr(cmd->help, "TIME is UTC") == NULL;
  if (duration || time) fputs("\nDurations and times:\n", stdout);
  if (duration || time) fputs(CLI_HELP_DURATION, stdout);
  if (time) fputs(CLI_HELP_TIME, stdout);
  return CLI_EXIT_OK;
}

enum {
  OPT_BOARD = 256,
  OPT_DURABILITY,
  OPT_JSON,
  OPT_WHO,
  OPT_DETAILS,
  OPT_PRIORITY,
  OPT_BOOK_NAME,
  OPT_BOOK_UUID,
  OPT_BATCH,
  OPT_UNCLAIMED,
  OPT_LIMIT,
  OPT_LEASE,
  OPT_TOKEN,
  OPT_TIMEOUT,
  OPT_WAIT,
  OPT_CLAIMABLE,
  OPT_RESULT,
  OPT_FAILED,
  OPT_FROM,
  OPT_COUNT,
  OPT_REDIS,
  OPT_NAMESPACE,
  OPT_POLL,
  OPT_KEEPALIVE,
  OPT_VERIFY_EVERY,
  OPT_VERIFY,
  OPT_DETACH,
  OPT_DELAY,
  OPT_NOT_BEFORE,
  OPT_UNIQUE,
  OPT_MAX_ATTEMPTS,
  OPT_TIME_LIMIT,
  OPT_BACKOFF,
  OPT_BACKOFF_MAX,
  OPT_REASON,
  OPT_RETRY_IN,
  OPT_DEAD,
  OPT_FORCE,
  OPT_ALL,
  OPT_YES,
  OPT_OLDER_THAN,
  OPT_KEEP_ATTEMPTS,
  OPT_EVERY,
  OPT_CRON,
  OPT_JOB_NAME,
  OPT_CATCH_UP,
  OPT_TZ,
  OPT_OVERLAP,
  OPT_START,
  OPT_REPLACE,
  OPT_AT,
  OPT_LOOP,
  OPT_OUTCOME,
  OPT_NAME,
  OPT_SINCE,
  OPT_UNTIL,
  OPT_CREATE,
  OPT_MAP_SIZE,
  OPT_BY_NAME,
  OPT_LISTEN,
  OPT_INTERVAL,
  OPT_IN_ORDER,
  OPT_HISTORY_MAX,
  OPT_HISTORY_MAX_AGE,
  OPT_DEAD_MAX,
  OPT_DEAD_MAX_AGE,
  OPT_MAX_SNOOZES,
  OPT_EXPIRES,
  OPT_EXPIRES_DEAD,
  OPT_ONCE,
  OPT_ACTIONS,
  OPT_TOKEN_FILE,
  OPT_CAUSE,
  OPT_DRY_RUN,
  OPT_AS_NEW,
  OPT_FORMAT,
  OPT_NO_HEADER,
  OPT_QUIET,
};

/* Every option, with the CLI_O_* group that admits it (0: every command). */
static const struct {
  struct option opt;
  unsigned group;
} all_options[] = {
    {{"board", required_argument, NULL, OPT_BOARD}, 0},
    {{"durability", required_argument, NULL, OPT_DURABILITY}, 0},
    {{"json", no_argument, NULL, OPT_JSON}, 0},
    {{"help", no_argument, NULL, 'h'}, 0},
    {{"quiet", no_argument, NULL, OPT_QUIET}, 0},
    {{"who", required_argument, NULL, OPT_WHO}, CLI_O_WHO},
    {{"details", required_argument, NULL, OPT_DETAILS}, CLI_O_POST},
    {{"priority", required_argument, NULL, OPT_PRIORITY}, CLI_O_POST},
    {{"book-name", required_argument, NULL, OPT_BOOK_NAME}, CLI_O_POST},
    {{"book-uuid", required_argument, NULL, OPT_BOOK_UUID}, CLI_O_POST},
    {{"batch", no_argument, NULL, OPT_BATCH}, CLI_O_POST},
    {{"unclaimed", no_argument, NULL, OPT_UNCLAIMED}, CLI_O_UNCLAIMED},
    {{"limit", required_argument, NULL, OPT_LIMIT}, CLI_O_LIMIT},
    {{"lease", required_argument, NULL, OPT_LEASE}, CLI_O_LEASE},
    {{"token", required_argument, NULL, OPT_TOKEN}, CLI_O_TOKEN},
    {{"timeout", required_argument, NULL, OPT_TIMEOUT}, CLI_O_TIMEOUT},
    {{"wait", required_argument, NULL, OPT_WAIT}, CLI_O_WAIT},
    {{"claimable", no_argument, NULL, OPT_CLAIMABLE}, CLI_O_CLAIMABLE},
    {{"result", required_argument, NULL, OPT_RESULT}, CLI_O_RESULT},
    {{"failed", no_argument, NULL, OPT_FAILED}, CLI_O_RESULT},
    {{"from", required_argument, NULL, OPT_FROM}, CLI_O_WATCH},
    {{"count", required_argument, NULL, OPT_COUNT},
     CLI_O_WATCH | CLI_O_COUNT},
    {{"redis", required_argument, NULL, OPT_REDIS}, CLI_O_REDIS},
    {{"namespace", required_argument, NULL, OPT_NAMESPACE}, CLI_O_REDIS},
    {{"poll", required_argument, NULL, OPT_POLL}, CLI_O_SYNC},
    {{"keepalive", required_argument, NULL, OPT_KEEPALIVE}, CLI_O_SYNC},
    {{"verify-every", required_argument, NULL, OPT_VERIFY_EVERY}, CLI_O_SYNC},
    {{"verify", no_argument, NULL, OPT_VERIFY}, CLI_O_VERIFY},
    {{"detach", no_argument, NULL, OPT_DETACH}, CLI_O_SYNC},
    {{"delay", required_argument, NULL, OPT_DELAY}, CLI_O_LIFE},
    {{"not-before", required_argument, NULL, OPT_NOT_BEFORE}, CLI_O_LIFE},
    {{"unique", required_argument, NULL, OPT_UNIQUE}, CLI_O_LIFE},
    {{"max-attempts", required_argument, NULL, OPT_MAX_ATTEMPTS}, CLI_O_LIFE},
    {{"time-limit", required_argument, NULL, OPT_TIME_LIMIT}, CLI_O_LIFE},
    {{"backoff", required_argument, NULL, OPT_BACKOFF}, CLI_O_LIFE},
    {{"backoff-max", required_argument, NULL, OPT_BACKOFF_MAX}, CLI_O_LIFE},
    {{"max-snoozes", required_argument, NULL, OPT_MAX_SNOOZES}, CLI_O_LIFE},
    {{"expires", required_argument, NULL, OPT_EXPIRES}, CLI_O_LIFE},
    {{"expires-dead", no_argument, NULL, OPT_EXPIRES_DEAD}, CLI_O_LIFE},
    {{"reason", required_argument, NULL, OPT_REASON}, CLI_O_RETRY},
    {{"retry-in", required_argument, NULL, OPT_RETRY_IN}, CLI_O_RETRY},
    {{"dead", no_argument, NULL, OPT_DEAD}, CLI_O_RETRY},
    {{"force", no_argument, NULL, OPT_FORCE}, CLI_O_CANCEL},
    {{"all", no_argument, NULL, OPT_ALL}, CLI_O_CANCEL | CLI_O_DEAD},
    {{"yes", no_argument, NULL, OPT_YES}, CLI_O_CANCEL | CLI_O_DEAD},
    {{"older-than", required_argument, NULL, OPT_OLDER_THAN}, CLI_O_DEAD},
    {{"keep-attempts", no_argument, NULL, OPT_KEEP_ATTEMPTS}, CLI_O_DEAD},
    {{"cause", required_argument, NULL, OPT_CAUSE}, CLI_O_DEAD},
    {{"dry-run", no_argument, NULL, OPT_DRY_RUN}, CLI_O_DEAD},
    {{"as-new", no_argument, NULL, OPT_AS_NEW}, CLI_O_DEAD},
    {{"every", required_argument, NULL, OPT_EVERY}, CLI_O_SCHEDULE},
    {{"cron", required_argument, NULL, OPT_CRON}, CLI_O_SCHEDULE},
    {{"job-name", required_argument, NULL, OPT_JOB_NAME}, CLI_O_SCHEDULE},
    {{"catch-up", required_argument, NULL, OPT_CATCH_UP}, CLI_O_SCHEDULE},
    {{"tz", required_argument, NULL, OPT_TZ}, CLI_O_SCHEDULE},
    {{"overlap", required_argument, NULL, OPT_OVERLAP}, CLI_O_SCHEDULE},
    {{"start", required_argument, NULL, OPT_START}, CLI_O_SCHEDULE},
    {{"replace", no_argument, NULL, OPT_REPLACE}, CLI_O_SCHEDULE},
    {{"at", required_argument, NULL, OPT_AT}, CLI_O_SCHEDULE},
    {{"loop", no_argument, NULL, OPT_LOOP}, CLI_O_SCHEDULE},
    {{"outcome", required_argument, NULL, OPT_OUTCOME}, CLI_O_HISTORY},
    {{"name", required_argument, NULL, OPT_NAME}, CLI_O_HISTORY | CLI_O_NAMES},
    {{"since", required_argument, NULL, OPT_SINCE}, CLI_O_HISTORY},
    {{"until", required_argument, NULL, OPT_UNTIL}, CLI_O_HISTORY},
    {{"create", no_argument, NULL, OPT_CREATE}, CLI_O_CREATE},
    {{"map-size", required_argument, NULL, OPT_MAP_SIZE}, CLI_O_MAPSIZE},
    {{"by-name", no_argument, NULL, OPT_BY_NAME}, CLI_O_BY_NAME},
    {{"listen", required_argument, NULL, OPT_LISTEN}, CLI_O_LISTEN},
    {{"interval", required_argument, NULL, OPT_INTERVAL},
     CLI_O_FLUSH | CLI_O_TOP},
    {{"once", no_argument, NULL, OPT_ONCE}, CLI_O_TOP},
    {{"actions", no_argument, NULL, OPT_ACTIONS}, CLI_O_WEB},
    {{"token-file", required_argument, NULL, OPT_TOKEN_FILE}, CLI_O_WEB},
    {{"in-order", no_argument, NULL, OPT_IN_ORDER}, CLI_O_IN_ORDER},
    {{"history-max", required_argument, NULL, OPT_HISTORY_MAX}, CLI_O_RETAIN},
    {{"history-max-age", required_argument, NULL, OPT_HISTORY_MAX_AGE},
     CLI_O_RETAIN},
    {{"dead-max", required_argument, NULL, OPT_DEAD_MAX}, CLI_O_RETAIN},
    {{"dead-max-age", required_argument, NULL, OPT_DEAD_MAX_AGE},
     CLI_O_RETAIN},
    {{"format", required_argument, NULL, OPT_FORMAT}, CLI_O_FORMAT},
    {{"no-header", no_argument, NULL, OPT_NO_HEADER}, CLI_O_FORMAT},
};
#define NOPTIONS (sizeof all_options / sizeof all_options[0])

/* A duration option's value (cli_parse_seconds), or its usage error. */
static int parse_ms(const cli_command *cmd, const char *opt, const char *text,
                    int64_t min_ms, int64_t max_ms, int64_t *out) {
  if (cli_parse_seconds(text, min_ms, max_ms, out)) return 0;
  return cli_duration_usage(cmd, opt, text, 1000, min_ms, max_ms);
}

typedef struct {
  int (*visit)(const jb_job *j, void *arg);
  void *arg;
} plain_walk;

static int plain_visit(const jb_job *j, jb_iter *it, void *arg) {
  (void)it;
  plain_walk *w = arg;
  return w->visit(j, w->arg);
}

int cli_walk_jobs(jb_board *b, unsigned flags,
                  int (*visit)(const jb_job *j, void *arg), void *arg) {
  jb_iter_options o = {.version = JB_ITER_OPTIONS_VERSION, .flags = flags};
  plain_walk w = {visit, arg};
  return cli_walk_jobs_opts(b, &o, plain_visit, &w);
}

int cli_walk_jobs_opts(jb_board *b, const jb_iter_options *o,
                       int (*visit)(const jb_job *j, jb_iter *it, void *arg),
                       void *arg) {
  jb_iter *it = NULL;
  int st = jb_iter_open_opts(&it, b, o);
  if (st != JB_OK) return st;
  const jb_job *j;
  while ((st = jb_iter_next(&j, it)) == JB_OK || st == JB_ECORRUPT) {
    if (st == JB_ECORRUPT) continue;
    if (j == NULL) break;
    if ((st = visit(j, it, arg)) != 0) break;
  }
  jb_iter_close(it);
  return st;
}

int64_t cli_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cli_wall_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}


/* --outcome's comma-separated list of jb_end names into *bits
 * (JB_HISTORY_END), added to what earlier --outcome options gave. The
 * names are jb_end_name's: an ending the library adds is known here at
 * once. Returns 0 or the usage error's exit code. */
static int parse_outcomes(uint32_t *bits, const cli_command *cmd,
                          const char *list) {
  const char *p = list;
  for (;;) {
    size_t n = strcspn(p, ",");
    int found = 0;
    for (unsigned e = 0; e < 32 && !found; e++) {
      const char *name = jb_end_name((jb_end)e);
      if (name && strlen(name) == n && strncmp(name, p, n) == 0) {
        *bits |= JB_HISTORY_END(e);
        found = 1;
      }
    }
    if (!found) {
      char known[256] = "";
      for (unsigned e = 0; e < 32; e++) {
        const char *name = jb_end_name((jb_end)e);
        if (name == NULL) continue;
        size_t k = strlen(known);
        snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "", name);
      }
      if (n == 0)
        return cli_cmd_usage(cmd, "--outcome: '%s' has an empty name (a "
                             "comma-separated list of: %s)", list, known);
      return cli_cmd_usage(cmd, "--outcome: '%.*s' is not an outcome (one "
                           "of: %s)", (int)n, p, known);
    }
    if (p[n] == '\0') return 0;
    p += n + 1;
  }
}

/* Exactly `n` decimal digits at *p, advanced past them. */
static int take_digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i])) return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int parse_epoch(int64_t *us, const char *text) {
  char *end;
  errno = 0;
  double sec = strtod(text, &end);
  if (!isdigit((unsigned char)text[0]) || *end != '\0' || errno != 0 ||
      sec > 9.2e12)
    return -1;
  *us = (int64_t)(sec * 1e6 + 0.5);
  return 0;
}

int cli_parse_time(int64_t *us, const char *text) {
  if (text[0] == '@') return parse_epoch(us, text + 1);
  if (strcmp(text, "now") == 0) {
    *us = cli_wall_now_us();
    return 0;
  }
  int relative = cli_parse_relative_time(us, text);
  if (relative != 1) return relative;
  const char *p = text;
  int y, mo, d, h = 0, mi = 0, sec = 0, micro = 0;
  if (take_digits(&p, 4, &y) || *p++ != '-' || take_digits(&p, 2, &mo) ||
      *p++ != '-' || take_digits(&p, 2, &d))
    return -1;
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
      (mo == 2 && d == 29 && !leap))
    return -1;
  if (*p == 'T' || *p == ' ') {
    p++;
    if (take_digits(&p, 2, &h) || *p++ != ':' || take_digits(&p, 2, &mi))
      return -1;
    if (*p == ':') {
      p++;
      if (take_digits(&p, 2, &sec)) return -1;
      if (*p == '.') {
        p++;
        int n = 0;
        for (; isdigit((unsigned char)*p); p++, n++) {
          if (n >= 6) return -1;
          micro = micro * 10 + (*p - '0');
        }
        if (n == 0) return -1;
        for (; n < 6; n++) micro *= 10;
      }
    }
    if (h > 23 || mi > 59 || sec > 59) return -1;
  }
  int64_t offset_s = 0;
  if (*p == 'Z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1, oh, om;
    if (take_digits(&p, 2, &oh) || *p++ != ':' || take_digits(&p, 2, &om) ||
        oh > 23 || om > 59)
      return -1;
    offset_s = sign * (oh * 3600 + om * 60);
  }
  if (*p != '\0') return -1;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
                 sec - offset_s;
  *us = secs * 1000000 + micro;
  return 0;
}

/* The text of the option getopt just refused, for the message. */
static const char *bad_option_text(char **argv, int argc, char *buf,
                                   size_t len) {
  if (optopt != 0 && optopt < 256) {
    snprintf(buf, len, "-%c", optopt);
    return buf;
  }
  int i = optind - 1;
  if (i < 1 || i >= argc) return "?";
  return argv[i];
}

int cli_parse(cli_opts *o, const cli_command *cmd, int argc, char **argv) {
  struct option longopts[NOPTIONS + 1];
  size_t n = 0;
  for (size_t i = 0; i < NOPTIONS; i++)
    if (all_options[i].group == 0 || (all_options[i].group & cmd->options))
      longopts[n++] = all_options[i].opt;
  memset(&longopts[n], 0, sizeof longopts[n]);

  memset(o, 0, sizeof *o);
  o->options = cmd->options;
  o->durability = JB_DURABILITY_FULL;
  o->timeout_ms = -1;
  o->retry_in_ms = -1;
  o->older_than_ms = -1;
  const char *durability = NULL;
  optind = 0; /* GNU: start afresh (main may have parsed global options) */
  opterr = 0; /* our own one-line messages */
  int c;
  char buf[8];
  while ((c = cli_getopt_long(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case CLI_OPT_ABBREVIATED:
      return cli_cmd_usage(cmd, "%s", cli_abbreviation_text());
    case 'h': return cli_help(cmd);
    case OPT_BOARD: o->board = optarg; break;
    case OPT_DURABILITY: durability = optarg; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_QUIET:
      o->quiet = 1;
      cli_set_quiet();
      break;
    case OPT_WHO: o->who = optarg; break;
    case OPT_DETAILS: o->details = optarg; break;
    case OPT_PRIORITY: o->priority = optarg; break;
    case OPT_BOOK_NAME: o->book_name = optarg; break;
    case OPT_BOOK_UUID: o->book_uuid = optarg; break;
    case OPT_BATCH: o->batch = 1; break;
    case OPT_UNCLAIMED: o->unclaimed = 1; break;
    case OPT_LIMIT: {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno != 0)
        return cli_cmd_usage(cmd, "--limit: '%s' is not a number of jobs "
                             "(0 or more)", optarg);
      o->limit = v;
      o->has_limit = 1;
      break;
    }
    case OPT_LEASE:
      /* At least a millisecond. */
      if (parse_ms(cmd, "--lease", optarg, 1, JB_LEASE_MAX_MS, &o->lease_ms))
        return CLI_EXIT_USAGE;
      break;
    case OPT_TOKEN: {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno != 0 ||
          v == 0)
        return cli_cmd_usage(cmd, "--token: '%s' is not a claim's token (a "
                             "number from 1, as claim --json prints it)",
                             optarg);
      o->token = v;
      break;
    }
    case OPT_RESULT: o->result = optarg; break;
    case OPT_FAILED: o->failed = 1; break;
    case OPT_TIMEOUT:
    case OPT_WAIT: {
      /* A duration up to 1e9 s; `inf`: no limit. */
      const char *name = c == OPT_WAIT ? "--wait" : "--timeout";
      if (strcmp(optarg, "inf") == 0)
        o->timeout_ms = -1;
      else if (!cli_parse_seconds(optarg, 0, (int64_t)1e12, &o->timeout_ms))
        return cli_duration_usage(cmd, name, optarg, 1000, 0, (int64_t)1e12);
      if (c == OPT_WAIT) o->has_wait = 1;
      break;
    }
    case OPT_CLAIMABLE: o->claimable = 1; break;
    case OPT_FROM:
    case OPT_COUNT: {
      /* Whole numbers from 1. */
      char *end;
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno != 0 ||
          v == 0)
        return cli_cmd_usage(cmd, c == OPT_FROM
                                      ? "--from: '%s' is not a log sequence "
                                        "(a number from 1)"
                                  : (cmd->options & CLI_O_COUNT)
                                      ? "--count: '%s' is not a number of "
                                        "jobs (1 or more)"
                                      : "--count: '%s' is not a number of "
                                        "events (1 or more)",
                             optarg);
      if (c == OPT_FROM)
        o->from = v;
      else
        o->count = v;
      break;
    }
    case OPT_REDIS: o->redis = optarg; break;
    case OPT_NAMESPACE: o->ns = optarg; break;
    case OPT_VERIFY: o->verify = 1; break;
    case OPT_DETACH: o->detach = 1; break;
    case OPT_BY_NAME: o->by_name = 1; break;
    case OPT_LISTEN: o->listen = optarg; break;
    case OPT_INTERVAL: o->flush_interval = optarg; break;
    case OPT_ONCE: o->once = 1; break;
    case OPT_ACTIONS: o->actions = 1; break;
    case OPT_TOKEN_FILE: o->token_file = optarg; break;
    case OPT_FORMAT: o->format = optarg; break;
    case OPT_NO_HEADER: o->no_header = 1; break;
    case OPT_IN_ORDER: o->in_order = 1; break;
    case OPT_HISTORY_MAX: o->history_max = optarg; break;
    case OPT_HISTORY_MAX_AGE: o->history_max_age = optarg; break;
    case OPT_DEAD_MAX: o->dead_max = optarg; break;
    case OPT_DEAD_MAX_AGE: o->dead_max_age = optarg; break;
    case OPT_OUTCOME: {
      int rc = parse_outcomes(&o->outcomes, cmd, optarg);
      if (rc) return rc;
      break;
    }
    case OPT_NAME:
      if (optarg[0] == '\0')
        return cli_cmd_usage(cmd, "--name: a job's name is not empty");
      o->name = optarg;
      if (cmd->options & CLI_O_NAMES) {
        if (o->n_names == JB_CLAIM_NAMES_MAX)
          return cli_cmd_usage(cmd, "--name: more than %d names",
                               JB_CLAIM_NAMES_MAX);
        o->names[o->n_names++] = optarg;
      }
      break;
    case OPT_SINCE:
    case OPT_UNTIL: {
      int64_t *t = c == OPT_SINCE ? &o->since_us : &o->until_us;
      /* Bounds of what happened: a duration with its unit alone (1h, 7d)
       * is that long ago, as `--since 1h` reads (a bare number stays a
       * count of seconds only with its sign: -3600). */
      int64_t ago_ms;
      if (cli_parse_time(t, optarg) == 0) {
      } else if (strpbrk(optarg, "dhms") != NULL &&
                 cli_parse_duration(optarg, 1000, 0, INT64_C(1) << 50,
                                    &ago_ms)) {
        *t = cli_wall_now_us() - ago_ms * 1000;
      } else {
        return cli_time_usage(cmd, c == OPT_SINCE ? "--since" : "--until",
                              optarg);
      }
      /* 0 is the library's "no bound": the epoch itself is a microsecond
       * later, which no completion can tell apart. */
      if (*t == 0) *t = 1;
      break;
    }
    case OPT_VERIFY_EVERY: {
      /* Up to a day; 0: never on schedule. */
      int64_t ms;
      if (parse_ms(cmd, "--verify-every", optarg, 0, 86400000, &ms))
        return CLI_EXIT_USAGE;
      o->verify_ms = ms == 0 ? -1 : (int)ms;
      break;
    }
    case OPT_POLL:
    case OPT_KEEPALIVE: {
      /* From a millisecond to a day. */
      int64_t ms;
      if (parse_ms(cmd, c == OPT_POLL ? "--poll" : "--keepalive", optarg, 1,
                   86400000, &ms))
        return CLI_EXIT_USAGE;
      if (c == OPT_POLL)
        o->poll_ms = (int)ms;
      else
        o->keepalive_ms = (int)ms;
      break;
    }
    case OPT_DELAY:
      if (parse_ms(cmd, "--delay", optarg, 0, JB_DELAY_MAX_MS, &o->delay_ms))
        return CLI_EXIT_USAGE;
      break;
    case OPT_NOT_BEFORE:
      if (cli_parse_time(&o->not_before_us, optarg) != 0)
        return cli_time_usage(cmd, "--not-before", optarg);
      break;
    case OPT_UNIQUE: o->unique = optarg; break;
    case OPT_MAX_ATTEMPTS: {
      /* "none": no maximum (the command says where it is taken); 0 is
       * refused, as it reads as "no attempt at all" as well. */
      if (strcmp(optarg, "none") == 0) {
        if (strcmp(cmd->name, "policy") != 0)
          return cli_cmd_usage(cmd, "--max-attempts none is for `jobboard "
                               "policy`: a job given no --max-attempts "
                               "takes the board's policy");
        o->max_attempts = 0;
        o->max_attempts_none = 1;
        break;
      }
      char *end;
      errno = 0;
      unsigned long v = strtoul(optarg, &end, 10);
      if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno != 0 ||
          v == 0 || v > UINT32_MAX)
        return cli_cmd_usage(cmd, "--max-attempts: '%s' is not a number of "
                             "attempts (1 to %u, or none for no maximum)",
                             optarg, UINT32_MAX);
      o->max_attempts = (uint32_t)v;
      o->max_attempts_none = 0;
      break;
    }
    case OPT_MAX_SNOOZES: {
      char *end;
      errno = 0;
      unsigned long v = strtoul(optarg, &end, 10);
      if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno != 0 ||
          v == 0 || v > UINT32_MAX)
        return cli_cmd_usage(cmd, "--max-snoozes: '%s' is not a number of "
                             "snoozes (1 to %u)", optarg, UINT32_MAX);
      o->max_snoozes = (uint32_t)v;
      break;
    }
    case OPT_EXPIRES:
      if (parse_ms(cmd, "--expires", optarg, 1, JB_DELAY_MAX_MS,
                   &o->expires_ms))
        return CLI_EXIT_USAGE;
      break;
    case OPT_EXPIRES_DEAD: o->expires_dead = 1; break;
    case OPT_TIME_LIMIT:
    case OPT_BACKOFF:
    case OPT_BACKOFF_MAX: {
      const char *name = c == OPT_TIME_LIMIT ? "--time-limit"
                         : c == OPT_BACKOFF  ? "--backoff"
                                             : "--backoff-max";
      int64_t max = c == OPT_TIME_LIMIT ? JB_LEASE_MAX_MS : JB_DELAY_MAX_MS;
      int64_t *dst = c == OPT_TIME_LIMIT ? &o->time_limit_ms
                     : c == OPT_BACKOFF  ? &o->backoff_ms
                                         : &o->backoff_max_ms;
      if (parse_ms(cmd, name, optarg, 1, max, dst)) return CLI_EXIT_USAGE;
      break;
    }
    case OPT_REASON: o->reason = optarg; break;
    case OPT_RETRY_IN:
      if (strcmp(optarg, "backoff") == 0)
        o->retry_in_ms = -2;
      else if (!cli_parse_seconds(optarg, 0, JB_DELAY_MAX_MS, &o->retry_in_ms))
        return cli_duration_usage(cmd, "--retry-in (or 'backoff')", optarg,
                                  1000, 0, JB_DELAY_MAX_MS);
      break;
    case OPT_DEAD: o->dead = 1; break;
    case OPT_FORCE: o->force = 1; break;
    case OPT_ALL: o->all = 1; break;
    case OPT_YES: o->yes = 1; break;
    case OPT_OLDER_THAN:
      if (parse_ms(cmd, "--older-than", optarg, 0, INT64_MAX / 1000,
                   &o->older_than_ms))
        return CLI_EXIT_USAGE;
      break;
    case OPT_KEEP_ATTEMPTS: o->keep_attempts = 1; break;
    case OPT_CAUSE: o->cause = optarg; break;
    case OPT_DRY_RUN: o->dry_run = 1; break;
    case OPT_AS_NEW: o->as_new = 1; break;
    case OPT_EVERY:
      if (parse_ms(cmd, "--every", optarg, JB_SCHEDULE_EVERY_MIN_MS,
                   JB_DELAY_MAX_MS, &o->every_ms))
        return CLI_EXIT_USAGE;
      break;
    case OPT_CRON: o->cron = optarg; break;
    case OPT_JOB_NAME: o->job_name = optarg; break;
    case OPT_CATCH_UP:
      if (strcmp(optarg, "skip") != 0 && strcmp(optarg, "all") != 0)
        return cli_cmd_usage(cmd, "--catch-up: '%s' is not skip or all",
                             optarg);
      o->catch_up = optarg;
      break;
    case OPT_TZ: o->tz = optarg; break;
    case OPT_OVERLAP:
      if (strcmp(optarg, "skip") != 0 && strcmp(optarg, "queue") != 0)
        return cli_cmd_usage(cmd, "--overlap: '%s' is not skip or queue",
                             optarg);
      o->overlap = optarg;
      break;
    case OPT_START:
    case OPT_AT:
      if (cli_parse_time(c == OPT_AT ? &o->at_us : &o->start_us, optarg) != 0)
        return cli_time_usage(cmd, c == OPT_AT ? "--at" : "--start", optarg);
      break;
    case OPT_REPLACE: o->replace = 1; break;
    case OPT_LOOP: o->loop = 1; break;
    case OPT_CREATE: o->create = 1; break;
    case OPT_MAP_SIZE:
      if (cli_parse_size(&o->map_size, optarg) != 0 || o->map_size < 65536)
        return cli_cmd_usage(cmd, "--map-size: '%s' is not a size of at "
                             "least 64K (bytes, or with a suffix K, M, G "
                             "or T: 256M)", optarg);
      break;
    case ':':
      return cli_cmd_usage(cmd, "option '%s' needs an argument",
                           bad_option_text(argv, argc, buf, sizeof buf));
    default: {
      const char *t = bad_option_text(argv, argc, buf, sizeof buf);
      const char *eq = strchr(t, '=');
      if (t[0] == '-' && t[1] == '-' && eq != NULL) {
        /* "--json=1": a known option that takes no value, or unknown. */
        for (size_t i = 0; longopts[i].name; i++)
          if (strlen(longopts[i].name) == (size_t)(eq - t - 2) &&
              strncmp(longopts[i].name, t + 2, (size_t)(eq - t - 2)) == 0)
            return cli_cmd_usage(cmd, "option '--%s' takes no value",
                                 longopts[i].name);
      }
      /* getopt takes "-1" for an option: say what it is instead. */
      if (t[0] == '-' && (isdigit((unsigned char)t[1]) || t[1] == '.')) {
        if (cmd->arg_name == NULL || cmd->arg_name[0] == '\0')
          return cli_cmd_usage(cmd, "'%s' is not an option, and '%s' takes "
                               "no argument", t, cmd->name);
        return cli_cmd_usage(cmd, "'%s' is a negative number, which no "
                             "argument of '%s' takes (%s)", t, cmd->name,
                             cmd->arg_name);
      }
      return cli_cmd_usage(cmd, "unknown option '%s'", t);
    }
    }
  }
  o->args = argv + optind;
  o->nargs = argc - optind;
  if (o->nargs < cmd->min_args)
    return cli_cmd_usage(cmd, "missing %s", cmd->arg_name);
  if (o->nargs > cmd->max_args)
    return cli_cmd_usage(cmd, "unexpected argument '%s'",
                         o->args[cmd->max_args]);
  if (durability != NULL) {
    int rc = jb_durability_parse(&o->durability, durability);
    if (rc != JB_OK) return cli_fail(rc);
  }
  if (cli_sync_check(cmd, o) != 0) return CLI_EXIT_USAGE;
  return CLI_CONTINUE;
}

int cli_need_who(const cli_command *cmd, const cli_opts *o) {
  if (o->who == NULL)
    return cli_cmd_usage(cmd, "--who NAME is required (the owner acting)");
  if (o->who[0] == '\0')
    return cli_usage_error("%s: --who: the owner's name must not be empty",
                           cmd->name);
  return 0;
}

static int hexdigit(int c) { return isxdigit(c) != 0; }

bool cli_is_uuid(const char *text) {
  int ok = strlen(text) == 36;
  for (int i = 0; ok && i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23)
      ok = text[i] == '-';
    else
      ok = hexdigit((unsigned char)text[i]);
  }
  return ok;
}

int cli_check_uuid(const char *what, const char *text) {
  if (cli_is_uuid(text)) return 0;
  return cli_usage_error("%s: '%.64s' is not a uuid (expected 36 characters "
                         "like 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f)",
                         what, text);
}

int cli_parse_size(size_t *out, const char *text) {
  char *end;
  errno = 0;
  if (!isdigit((unsigned char)text[0])) return -1;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return -1;
  unsigned shift = 0;
  switch (*end) {
  case '\0': break;
  case 'k': case 'K': shift = 10; break;
  case 'm': case 'M': shift = 20; break;
  case 'g': case 'G': shift = 30; break;
  case 't': case 'T': shift = 40; break;
  default: return -1;
  }
  if (*end != '\0') {
    end++;
    if ((*end == 'i' && end[1] == 'B') || *end == 'B') end += *end == 'i' ? 2 : 1;
    if (*end != '\0') return -1;
  }
  if (shift && v > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)(v << shift);
  return 0;
}

/* The board is not there yet: wait until it is (CLI_OPEN_WAIT). */
static volatile sig_atomic_t open_caught;
static void on_open_signal(int sig) { open_caught = sig; }

static int open_board(jb_board **out, const char *dir, jb_board_options *bo,
                      cli_opts *o, unsigned flags) {
  int rc = jb_board_open(out, dir, bo);
  /* A time limit of 0 looks once: a missing board is not found (3). */
  if (rc != JB_ENOTFOUND || !(flags & CLI_OPEN_WAIT) ||
      (bo->flags & JB_OPEN_CREATE) || o->timeout_ms == 0)
    return rc;
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_open_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  fprintf(stderr, "jobboard: waiting for the board to appear (%s); "
          "'jobboard init' makes it, or --create here\n", jb_errmsg());
  int64_t waited = 0;
  o->board_appeared = 1;
  while (rc == JB_ENOTFOUND && !open_caught) {
    if (o->timeout_ms >= 0 && waited >= o->timeout_ms) {
      rc = JB_ETIMEDOUT;
      break;
    }
    /* Look five times a second: appearing is rare and one open is cheap. */
    int64_t step = 200;
    if (o->timeout_ms >= 0 && o->timeout_ms - waited < step)
      step = o->timeout_ms - waited;
    struct timespec ts = {(time_t)(step / 1000), (long)(step % 1000) * 1000000};
    nanosleep(&ts, NULL);
    /* A command that blocks the signals to sigwait for them (sync). */
    sigset_t pending;
    if (sigpending(&pending) == 0 && !open_caught)
      open_caught = sigismember(&pending, SIGINT)    ? SIGINT
                    : sigismember(&pending, SIGTERM) ? SIGTERM
                                                     : 0;
    if (open_caught) break;
    rc = jb_board_open(out, dir, bo);
    clock_gettime(CLOCK_MONOTONIC, &t);
    waited = (int64_t)(t.tv_sec - t0.tv_sec) * 1000 +
             (t.tv_nsec - t0.tv_nsec) / 1000000;
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  if (o->timeout_ms >= 0)
    o->timeout_ms = o->timeout_ms > waited ? o->timeout_ms - waited : 0;
  return rc;
}

int cli_parse_interval(int64_t *ms, const char *v) {
  /* A bare number is milliseconds here, as it always was. */
  return cli_parse_duration(v, 1, 0, 86400000, ms) ? 0 : -1;
}

int cli_flush_interval(int64_t *ms) {
  *ms = 0;
  const char *v = getenv("JOBBOARD_FLUSH_INTERVAL");
  if (v == NULL || *v == '\0') return 0;
  if (cli_parse_interval(ms, v) != 0 || *ms == 0)
    return cli_duration_usage(NULL, "JOBBOARD_FLUSH_INTERVAL", v, 1, 1,
                              86400000);
  return 0;
}

int cli_open(jb_board **out, cli_opts *o, unsigned flags) {
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = flags & JB_OPEN_CREATE;
  if (o->create) bo.flags |= JB_OPEN_CREATE;
  bo.durability = o->durability;
  bo.map_size = o->map_size;
  if (cli_flush_interval(&bo.flush_interval_ms) != 0) return CLI_EXIT_USAGE;
  const char *dir = cli_board_dir(o->board);
  int fresh = (bo.flags & JB_OPEN_CREATE) && cli_board_absent(dir);
  int rc = open_board(out, dir, &bo, o, flags);
  if (rc == JB_OK && fresh && !(flags & CLI_OPEN_SAYS_CREATED))
    cli_note_created(o, dir);
  if (rc == JB_EREADONLY && (flags & CLI_OPEN_READ)) {
    char why[1024];
    snprintf(why, sizeof why, "%s", jb_errmsg());
    bo.flags = JB_OPEN_READONLY;
    rc = jb_board_open(out, dir, &bo);
    if (rc == JB_OK)
      cli_note_readonly(why, jb_board_readonly(*out) == JB_READONLY_NOLOCK);
  }
  if (open_caught) {
    if (rc == JB_OK) jb_board_close(*out);
    *out = NULL;
    return 128 + open_caught;
  }
  if (rc == JB_ETIMEDOUT) {
    fflush(stdout);
    fprintf(stderr, "jobboard: board %s did not appear within the timeout\n",
            dir);
    return CLI_EXIT_TIMEDOUT;
  }
  if (rc != JB_OK) return cli_fail(rc);
  if ((o->options & CLI_O_REDIS) && !(o->options & CLI_O_SYNC) &&
      (rc = cli_sync_join(*out, o)) != 0) {
    jb_board_close(*out);
    *out = NULL;
    return rc;
  }
  return 0;
}

void cli_put_text(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p == '\r')
      fputs("\\r", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\x%02x", *p);
    else
      fputc(*p, f);
  }
}

/* ------------------------------------------------------------- pauses */

/* The visit's own stop: out of memory (the library's statuses are < 0). */
#define PAUSES_NOMEM 1

static int pause_visit(const jb_queue_info *q, void *arg) {
  cli_pauses *p = arg;
  if (!q->paused && q->changed_us == 0) return 0; /* never paused */
  struct cli_pause *v = realloc(p->v, (p->n + 1) * sizeof *v);
  if (v == NULL) return PAUSES_NOMEM;
  p->v = v;
  if ((v[p->n].name = strdup(q->name)) == NULL) return PAUSES_NOMEM;
  v[p->n].rate = q->rate;
  v[p->n].period_ms = q->period_ms;
  v[p->n++].paused = q->paused;
  return 0;
}

static int pause_cmp(const void *a, const void *b) {
  return strcmp(((const struct cli_pause *)a)->name,
                ((const struct cli_pause *)b)->name);
}

int cli_pauses_read(cli_pauses *p, jb_board *b) {
  memset(p, 0, sizeof *p);
  int st = jb_queues_foreach(b, pause_visit, p, &p->board);
  if (st == JB_OK) {
    if (p->n) qsort(p->v, p->n, sizeof *p->v, pause_cmp);
    return 0;
  }
  cli_pauses_free(p);
  if (st != PAUSES_NOMEM) return cli_fail(st);
  fflush(stdout);
  put_line("out of memory reading the paused names");
  return CLI_EXIT_ERROR;
}

const struct cli_pause *cli_pauses_find(const cli_pauses *p,
                                        const char *name) {
  struct cli_pause key = {.name = (char *)name};
  return p->n ? bsearch(&key, p->v, p->n, sizeof *p->v, pause_cmp) : NULL;
}

int cli_pauses_name(const cli_pauses *p, const char *name) {
  const struct cli_pause *f = cli_pauses_find(p, name);
  return f && f->paused;
}

void cli_pauses_free(cli_pauses *p) {
  for (size_t i = 0; i < p->n; i++) free(p->v[i].name);
  free(p->v);
  memset(p, 0, sizeof *p);
}
