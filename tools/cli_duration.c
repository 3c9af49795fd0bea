/*
 * cli_duration.c - the one syntax of durations (500ms, 90s, 5m, 1h30m,
 * 7d, or seconds) and relative times (+10m, -1h, "1h ago") the CLI takes,
 * and durations printed the way they are taken. Every option, operand and
 * environment variable holding a duration reads it here, so a form that
 * works in one place works in all of them.
 */
#include "cli_duration.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DUR_OK, DUR_EMPTY, DUR_SYNTAX, DUR_NEGATIVE };

/* The units, largest first: a duration names them in this order. */
static const struct {
  const char *name;
  double ms;
} units[] = {{"d", 86400000.0}, {"h", 3600000.0}, {"ms", 1.0},
             {"m", 60000.0},    {"s", 1000.0}};
/* Their order in a duration (ms after s, though "ms" is matched before
 * "m"). */
static const int unit_rank[] = {0, 1, 4, 2, 3};

/* Read `text` into *ms (not rounded): DUR_OK or why not. */
static int read_duration(const char *text, int64_t bare_ms, double *ms) {
  if (text[0] == '\0') return DUR_EMPTY;
  if (text[0] == '-') {
    double ignored;
    return read_duration(text + 1, bare_ms, &ignored) == DUR_OK ? DUR_NEGATIVE
                                                                 : DUR_SYNTAX;
  }
  const char *p = text;
  double total = 0;
  int last_rank = -1;
  while (*p) {
    const char *start = p;
    size_t digits = 0;
    while (isdigit((unsigned char)*p)) p++, digits++;
    if (*p == '.')
      for (p++; isdigit((unsigned char)*p); p++) digits++;
    if (digits == 0) return DUR_SYNTAX;
    char *end;
    errno = 0;
    double v = strtod(start, &end);
    if (end != p || errno == ERANGE) return DUR_SYNTAX;
    if (*p == '\0' && start == text) { /* a bare number */
      total = v * (double)bare_ms;
      break;
    }
    int u = -1;
    for (int i = 0; i < (int)(sizeof units / sizeof units[0]) && u < 0; i++)
      if (strncmp(p, units[i].name, strlen(units[i].name)) == 0) u = i;
    if (u < 0 || unit_rank[u] <= last_rank) return DUR_SYNTAX;
    last_rank = unit_rank[u];
    p += strlen(units[u].name);
    total += v * units[u].ms;
  }
  if (!isfinite(total)) return DUR_SYNTAX;
  *ms = total;
  return DUR_OK;
}

/* Within range as the milliseconds the caller keeps. */
static bool in_range(double ms, int64_t min_ms, int64_t max_ms) {
  /* 9.2e18: (int64_t) of anything larger is undefined. */
  return ms >= (double)min_ms && ms <= (double)max_ms && ms < 9.2e18;
}

bool cli_parse_duration(const char *text, int64_t bare_ms, int64_t min_ms,
                        int64_t max_ms, int64_t *out) {
  double ms;
  if (read_duration(text, bare_ms, &ms) != DUR_OK ||
      !in_range(ms, min_ms, max_ms))
    return false;
  *out = (int64_t)(ms + 0.5);
  /* 0.0004 s given where at least 1 ms is: the least there is. */
  if (*out < min_ms) *out = min_ms;
  if (*out > max_ms) *out = max_ms;
  return true;
}

bool cli_parse_seconds(const char *text, int64_t min_ms, int64_t max_ms,
                       int64_t *out) {
  return cli_parse_duration(text, 1000, min_ms, max_ms, out);
}

/* A hint for a text that is almost a duration. */
static const char *hint(const char *text, int64_t bare_ms) {
  if (strchr(text, ' ') || strchr(text, '\t')) return " (without spaces)";
  char low[64];
  size_t n = strlen(text);
  if (n >= sizeof low) return "";
  bool upper = false;
  for (size_t i = 0; i <= n; i++) {
    upper |= isupper((unsigned char)text[i]) != 0;
    low[i] = (char)tolower((unsigned char)text[i]);
  }
  double ms;
  if (upper && read_duration(low, bare_ms, &ms) == DUR_OK)
    return " (units are lowercase)";
  return "";
}

int cli_duration_usage(const cli_command *cmd, const char *opt,
                       const char *text, int64_t bare_ms, int64_t min_ms,
                       int64_t max_ms) {
  char msg[512], lo[48], hi[48];
  double ms = 0;
  int why = read_duration(text, bare_ms, &ms);
  cli_format_duration(lo, sizeof lo, min_ms);
  cli_format_duration(hi, sizeof hi, max_ms);
  const char *forms = bare_ms == 1 ? "500ms, 90s, 5m, 1h30m, 7d or "
                                     "milliseconds"
                                   : CLI_DURATION_FORMS;
  if (why == DUR_EMPTY)
    snprintf(msg, sizeof msg, "an empty value is not a duration for %s: "
             "use %s", opt, forms);
  else if (why == DUR_SYNTAX)
    snprintf(msg, sizeof msg, "'%.64s' is not a duration for %s: use %s%s",
             text, opt, forms, hint(text, bare_ms));
  else if (why == DUR_NEGATIVE)
    snprintf(msg, sizeof msg, "'%.64s' is negative, out of range for %s: "
             "from %s to %s", text, opt, lo, hi);
  else
    snprintf(msg, sizeof msg, "'%.64s' is out of range for %s: from %s to "
             "%s", text, opt, lo, hi);
  if (cmd == NULL) return cli_usage_error("%s", msg);
  return cli_cmd_usage(cmd, "%s", msg);
}

int cli_time_usage(const cli_command *cmd, const char *opt, const char *text) {
  if (text[0] == '\0')
    return cli_cmd_usage(cmd, "an empty value is not a time for %s: use %s",
                         opt, CLI_TIME_FORMS);
  return cli_cmd_usage(cmd, "'%.64s' is not a time for %s: use %s", text,
                       opt, CLI_TIME_FORMS);
}

int cli_parse_relative_time(int64_t *us, const char *text) {
  char d[64];
  int sign = 1;
  size_t n = strlen(text);
  if (text[0] == '+' || text[0] == '-') {
    sign = text[0] == '-' ? -1 : 1;
    text++, n--;
  } else if (n > 4 && strcmp(text + n - 4, " ago") == 0) {
    sign = -1;
    for (n -= 4; n > 0 && text[n - 1] == ' '; n--) continue;
  } else {
    return 1;
  }
  if (n == 0 || n >= sizeof d) return -1;
  memcpy(d, text, n);
  d[n] = '\0';
  /* Up to 100000 days each way: far past any date a board holds, and
   * well within microseconds in 64 bits. */
  int64_t ms;
  if (!cli_parse_duration(d, 1000, 0, (int64_t)100000 * 86400000, &ms))
    return -1;
  *us = cli_wall_now_us() + sign * ms * 1000;
  return 0;
}

char *cli_format_duration(char *buf, size_t len, int64_t ms) {
  uint64_t u = ms < 0 ? 0 - (uint64_t)ms : (uint64_t)ms;
  const char *sign = ms < 0 ? "-" : "";
  if (u < 1000) {
    snprintf(buf, len, "%s%llu%s", sign, (unsigned long long)u,
             u ? "ms" : "s");
    return buf;
  }
  unsigned long long d = u / 86400000, h = u / 3600000 % 24,
                     m = u / 60000 % 60, s = u / 1000 % 60, f = u % 1000;
  char sec[32] = "";
  if (f) {
    int digits = 3;
    while (f % 10 == 0) f /= 10, digits--;
    snprintf(sec, sizeof sec, "%llu.%0*llus", s, digits, f);
  } else if (s) {
    snprintf(sec, sizeof sec, "%llus", s);
  }
  char dd[24] = "", hh[8] = "", mm[8] = "";
  if (d) snprintf(dd, sizeof dd, "%llud", d);
  if (h) snprintf(hh, sizeof hh, "%lluh", h);
  if (m) snprintf(mm, sizeof mm, "%llum", m);
  snprintf(buf, len, "%s%s%s%s%s", sign, dd, hh, mm, sec);
  return buf;
}

char *cli_format_remaining(char *buf, size_t len, int64_t ms) {
  if (ms >= 1000) ms = (ms + 999) / 1000 * 1000;
  return cli_format_duration(buf, len, ms);
}
