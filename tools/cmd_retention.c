/*
 * cmd_retention.c - jobboard retention: show or set how much completed
 * history and how many dead letters the board keeps (jb_retention(3)).
 */
#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_retention = {
    "retention", "show or set how much history and how many dead letters "
    "the board keeps",
    "Usage: jobboard retention [--history-max N] [--history-max-age AGE]\n"
    "                          [--dead-max N] [--dead-max-age AGE] [OPTIONS]\n"
    "\n"
    "Show the board's retention, or set the bounds given (the others stay as\n"
    "they are). It is stored in the board: every process that writes the\n"
    "board prunes to it, whatever it opened the board with.\n"
    "  history_max      completion history records kept (default 10000)\n"
    "  history_max_age  age of the oldest record kept (default 7 days)\n"
    "  dead_max         dead letters kept (default 10000)\n"
    "  dead_max_age     age of the oldest dead letter kept (default 30 days)\n"
    "Records go oldest first, at most 64 of each kind per write: by the\n"
    "writes that complete a job, and a first batch by this command.\n"
    "\n"
    "Values:\n"
    "  N        a count, 1 or more\n"
    "  AGE      a DURATION: 90s, 30m, 12h, 7d, 1d12h, or seconds\n"
    "  none     no bound (kept until purged)\n"
    "  default  the default again (for the history: a process's own\n"
    "           history_max option, else the default)\n"
    "0 is refused: say none or default.\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    "Output: each bound (\"none\" for no bound) and whether the board stores\n"
    "it or it is the default, then the history records and dead letters\n"
    "held now. With --json one object: history and dead, each with max and\n"
    "max_age (seconds; null: no bound), max_set and max_age_set (stored in\n"
    "the board), and the count (records, letters).\n"
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Example:\n"
    "  jobboard retention --dead-max 500 --dead-max-age 14d\n",
    CLI_O_RETAIN, 0, 0, NULL};

/* "none" (JB_RETAIN_NONE) or "default" (0): true with *out set. */
static bool special(const char *v, int64_t *out) {
  if (strcmp(v, "none") == 0)
    *out = JB_RETAIN_NONE;
  else if (strcmp(v, "default") == 0)
    *out = 0;
  else
    return false;
  return true;
}

/* A count: N >= 1, "none" or "default". */
static int parse_count(const char *opt, const char *v, int64_t *out) {
  if (special(v, out)) return 0;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || n < 0)
    return cli_cmd_usage(&cli_cmd_retention, "%s: '%s' is not a count (1 or "
                         "more, none or default)", opt, v);
  if (n == 0)
    return cli_cmd_usage(&cli_cmd_retention, "%s: 0 is not a bound (say "
                         "none for no bound, default for the default)", opt);
  *out = n;
  return 0;
}

/* An age: a duration (cli_parse_seconds), "none" or "default"; ms out. */
static int parse_age(const char *opt, const char *v, int64_t *out) {
  if (special(v, out)) return 0;
  char what[64];
  snprintf(what, sizeof what, "%s (or none, default)", opt);
  if (!cli_parse_seconds(v, 0, INT64_MAX / 1000, out))
    return cli_duration_usage(&cli_cmd_retention, what, v, 1000, 1,
                              INT64_MAX / 1000);
  if (*out < 1)
    return cli_cmd_usage(&cli_cmd_retention, "%s: '%s' is no age (say none "
                         "for no bound, default for the default)", opt, v);
  return 0;
}

static json_t *j_count(int64_t v) {
  return v == JB_RETAIN_NONE ? json_null() : json_integer((json_int_t)v);
}

static json_t *j_age(int64_t ms) {
  return ms == JB_RETAIN_NONE ? json_null() : json_real(ms / 1000.0);
}

static void print_count(const char *label, int64_t v, int64_t stored) {
  if (v == JB_RETAIN_NONE)
    printf("%-16s none", label);
  else
    printf("%-16s %" PRId64, label, v);
  puts(stored ? "" : " (default)");
}

static void print_age(const char *label, int64_t ms, int64_t stored) {
  if (ms == JB_RETAIN_NONE)
    printf("%-16s none", label);
  else {
    char d[48];
    printf("%-16s %s", label, cli_format_duration(d, sizeof d, ms));
  }
  puts(stored ? "" : " (default)");
}

int cmd_retention(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_retention, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_retention r = {0};
  unsigned fields = 0;
  if ((o.history_max &&
       (rc = parse_count("--history-max", o.history_max, &r.history_max))) ||
      (o.history_max_age &&
       (rc = parse_age("--history-max-age", o.history_max_age,
                       &r.history_max_age_ms))) ||
      (o.dead_max && (rc = parse_count("--dead-max", o.dead_max, &r.dead_max))) ||
      (o.dead_max_age && (rc = parse_age("--dead-max-age", o.dead_max_age,
                                         &r.dead_max_age_ms))))
    return rc;
  if (o.history_max) fields |= JB_RETAIN_HISTORY_MAX;
  if (o.history_max_age) fields |= JB_RETAIN_HISTORY_AGE;
  if (o.dead_max) fields |= JB_RETAIN_DEAD_MAX;
  if (o.dead_max_age) fields |= JB_RETAIN_DEAD_AGE;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, fields ? 0 : CLI_OPEN_READ)) != 0) return rc;
  jb_retention st, eff;
  size_t records = 0, letters = 0;
  int s = fields ? jb_board_set_retention(b, &r, fields) : JB_OK;
  if (s == JB_OK) s = jb_board_get_retention(&st, &eff, b);
  if (s == JB_OK) s = jb_history_count(&records, b);
  if (s == JB_OK) s = jb_dead_count(&letters, b);
  if (s != JB_OK) {
    rc = cli_fail(s);
  } else if (o.json) {
    if (cli_json_print(json_pack(
            "{s:{s:o,s:o,s:b,s:b,s:I},s:{s:o,s:o,s:b,s:b,s:I}}", "history",
            "max", j_count(eff.history_max), "max_age",
            j_age(eff.history_max_age_ms), "max_set", st.history_max != 0,
            "max_age_set", st.history_max_age_ms != 0, "records",
            (json_int_t)records, "dead", "max", j_count(eff.dead_max),
            "max_age", j_age(eff.dead_max_age_ms), "max_set",
            st.dead_max != 0, "max_age_set", st.dead_max_age_ms != 0,
            "letters", (json_int_t)letters)) != 0)
      rc = CLI_EXIT_ERROR;
  } else {
    print_count("history_max:", eff.history_max, st.history_max);
    print_age("history_max_age:", eff.history_max_age_ms,
              st.history_max_age_ms);
    print_count("dead_max:", eff.dead_max, st.dead_max);
    print_age("dead_max_age:", eff.dead_max_age_ms, st.dead_max_age_ms);
    printf("%-16s %zu\n%-16s %zu\n", "history:", records, "dead letters:",
           letters);
  }
  jb_board_close(b);
  return rc;
}
