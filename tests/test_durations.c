/*
 * test_durations.c - the CLI's one syntax of durations and relative times
 * (tools/cli_duration.c) and its long options taken only as spelled
 * (tools/cli_getopt.c), on their own: the forms taken and refused, the
 * edges (0, rounding, overflow), the printing and its round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/cli_common.h"
#include "tools/cli_getopt.h"

/* What cli_duration.c uses of the rest of the CLI: a fixed clock, and the
 * usage messages kept for the test to read. */
#define NOW_US ((int64_t)1700000000 * 1000000)
static char said[512];

int64_t cli_wall_now_us(void) { return NOW_US; }

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(said, sizeof said, fmt, ap);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

int cli_cmd_usage(const cli_command *cmd, const char *fmt, ...) {
  (void)cmd;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(said, sizeof said, fmt, ap);
  va_end(ap);
  return CLI_EXIT_USAGE;
}

#define DAY ((int64_t)86400000)

static int64_t secs(const char *text) {
  int64_t ms = -42;
  assert_true(cli_parse_seconds(text, 0, 3650 * DAY, &ms));
  return ms;
}

static void refused(const char *text) {
  int64_t ms = -42;
  if (cli_parse_seconds(text, 0, 3650 * DAY, &ms))
    fail_msg("'%s' was taken as %lld ms", text, (long long)ms);
  assert_int_equal(ms, -42);
}

static void test_forms(void **state) {
  (void)state;
  assert_int_equal(secs("0"), 0);
  assert_int_equal(secs("0s"), 0);
  assert_int_equal(secs("90"), 90000);
  assert_int_equal(secs("1.5"), 1500);
  assert_int_equal(secs(".5"), 500);
  assert_int_equal(secs("1."), 1000);
  assert_int_equal(secs("500ms"), 500);
  assert_int_equal(secs("90s"), 90000);
  assert_int_equal(secs("5m"), 300000);
  assert_int_equal(secs("1h30m"), 5400000);
  assert_int_equal(secs("1.5h"), 5400000);
  assert_int_equal(secs("7d"), 7 * DAY);
  assert_int_equal(secs("2d12h"), 2 * DAY + 12 * 3600000);
  assert_int_equal(secs("1d2h3m4s5ms"), DAY + 2 * 3600000 + 3 * 60000 +
                                            4000 + 5);
  assert_int_equal(secs("1.5s"), 1500);
  assert_int_equal(secs("0.0004"), 0); /* rounded to the millisecond */
  assert_int_equal(secs("0.0005"), 1);
  assert_int_equal(secs("007s"), 7000);
}

static void test_refused(void **state) {
  (void)state;
  const char *bad[] = {"", " ", "5 m", " 5", "5 ", "5M", "5S", "1H", "-1",
                       "-5s", "+5", "5x", "s", "ms", ".", "..5", "1.2.3",
                       "1m30", "30m1h", "1h1h", "1s1m", "1ms1s", "1e3",
                       "inf", "nan", "0x10", "5m-1s", "1h 30m", "1w",
                       "5sec", "5min", "1,5s", "\t5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) refused(bad[i]);
}

static void test_range(void **state) {
  (void)state;
  int64_t ms = -42;
  /* Beyond the range, and beyond what 64 bits hold. */
  refused("3651d");
  refused("99999999999999999999999999d");
  refused("1" "000000000000000000000000000000000000000000000000000000000000");
  assert_false(cli_parse_seconds("9999999999999999999", 0, INT64_MAX, &ms));
  assert_false(cli_parse_seconds("0", 1, 1000, &ms));
  assert_false(cli_parse_seconds("0.0004", 1, 1000, &ms));
  assert_true(cli_parse_seconds("0.001", 1, 1000, &ms));
  assert_int_equal(ms, 1);
  assert_true(cli_parse_seconds("1s", 1, 1000, &ms));
  assert_int_equal(ms, 1000);
  assert_false(cli_parse_seconds("1001ms", 1, 1000, &ms));
  assert_int_equal(secs("3650d"), 3650 * DAY);
  /* The flush interval: bare milliseconds. */
  assert_true(cli_parse_duration("250", 1, 0, DAY, &ms));
  assert_int_equal(ms, 250);
  assert_true(cli_parse_duration("2s", 1, 0, DAY, &ms));
  assert_int_equal(ms, 2000);
  assert_false(cli_parse_duration("1d1ms", 1, 0, DAY, &ms));
}

static void test_messages(void **state) {
  (void)state;
  assert_int_equal(cli_duration_usage(NULL, "--delay", "5x", 1000, 0, DAY),
                   CLI_EXIT_USAGE);
  assert_string_equal(said, "'5x' is not a duration for --delay: use 500ms, "
                            "90s, 5m, 1h30m, 7d or seconds");
  cli_duration_usage(NULL, "--delay", "5M", 1000, 0, DAY);
  assert_non_null(strstr(said, "(units are lowercase)"));
  cli_duration_usage(NULL, "--delay", "5 m", 1000, 0, DAY);
  assert_non_null(strstr(said, "(without spaces)"));
  cli_duration_usage(NULL, "--delay", "", 1000, 0, DAY);
  assert_string_equal(said, "an empty value is not a duration for --delay: "
                            "use 500ms, 90s, 5m, 1h30m, 7d or seconds");
  cli_duration_usage(NULL, "--lease", "-5s", 1000, 1, 30 * DAY);
  assert_string_equal(said, "'-5s' is negative, out of range for --lease: "
                            "from 1ms to 30d");
  cli_duration_usage(NULL, "--lease", "31d", 1000, 1, 30 * DAY);
  assert_string_equal(said, "'31d' is out of range for --lease: from 1ms "
                            "to 30d");
  cli_duration_usage(NULL, "X", "2x", 1, 1, DAY);
  assert_non_null(strstr(said, "7d or milliseconds"));
}

static void printed(int64_t ms, const char *want) {
  char buf[64];
  assert_string_equal(cli_format_duration(buf, sizeof buf, ms), want);
  if (ms >= 0) {
    int64_t back = -1;
    assert_true(cli_parse_seconds(buf, 0, INT64_MAX / 1000, &back));
    assert_int_equal(back, ms);
  }
}

static void test_printing(void **state) {
  (void)state;
  printed(0, "0s");
  printed(1, "1ms");
  printed(500, "500ms");
  printed(1000, "1s");
  printed(1500, "1.5s");
  printed(29000, "29s");
  printed(60000, "1m");
  printed(60500, "1m0.5s");
  printed(250000, "4m10s");
  printed(3720000, "1h2m");
  printed(5400000, "1h30m");
  printed(DAY, "1d");
  printed(3650 * DAY, "3650d");
  printed(DAY + 3600000 + 60000 + 1001, "1d1h1m1.001s");
  printed(-1500, "-1.5s");
  printed(INT64_MIN, "-106751991167d7h12m55.808s");
  char buf[64];
  assert_string_equal(cli_format_remaining(buf, sizeof buf, 29001), "30s");
  assert_string_equal(cli_format_remaining(buf, sizeof buf, 29000), "29s");
  assert_string_equal(cli_format_remaining(buf, sizeof buf, 999), "999ms");
  assert_string_equal(cli_format_remaining(buf, sizeof buf, 0), "0s");
  assert_string_equal(cli_format_remaining(buf, sizeof buf, 249001),
                      "4m10s");
  /* A buffer too small is cut, never overrun. */
  char small[4];
  assert_string_equal(cli_format_duration(small, sizeof small, 250000),
                      "4m1");
  /* Every millisecond count up to a few minutes round-trips. */
  for (int64_t ms = 0; ms < 200000; ms += 7) printed(ms, cli_format_duration(
                                                           buf, sizeof buf, ms));
}

static void relative(const char *text, int64_t want_us) {
  int64_t us = 0;
  assert_int_equal(cli_parse_relative_time(&us, text), 0);
  assert_int_equal(us, want_us);
}

static void test_relative(void **state) {
  (void)state;
  relative("-1h", NOW_US - (int64_t)3600 * 1000000);
  relative("1h ago", NOW_US - (int64_t)3600 * 1000000);
  relative("1h30m  ago", NOW_US - (int64_t)5400 * 1000000);
  relative("+10m", NOW_US + (int64_t)600 * 1000000);
  relative("+90", NOW_US + (int64_t)90 * 1000000);
  relative("-3600", NOW_US - (int64_t)3600 * 1000000);
  relative("+0.5", NOW_US + 500000);
  relative("-0", NOW_US);
  int64_t us = 7;
  /* Not relative: the date and epoch forms are cli_parse_time's. */
  assert_int_equal(cli_parse_relative_time(&us, "2026-01-01"), 1);
  assert_int_equal(cli_parse_relative_time(&us, "@1700000000"), 1);
  assert_int_equal(cli_parse_relative_time(&us, "now"), 1);
  assert_int_equal(cli_parse_relative_time(&us, "ago"), 1);
  assert_int_equal(cli_parse_relative_time(&us, "1h"), 1);
  /* Relative, but bad. */
  const char *bad[] = {"+", "-", "+x", "-1x", "x ago", " ago ago", "-1h ago",
                       "+1h ago", "-1H", "+-1h", "--1h", "+100001d"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (cli_parse_relative_time(&us, bad[i]) != -1)
      fail_msg("'%s' was read as a relative time", bad[i]);
  assert_int_equal(us, 7);
}

/* cli_getopt_long over `args` (argv[0] prepended): what it returns for
 * each option, as one string ("d=x|j|A|" ...). */
static const struct option longopts[] = {
    {"details", required_argument, NULL, 'd'},
    {"json", no_argument, NULL, 'j'},
    {"namespace", required_argument, NULL, 'n'},
    {"name", required_argument, NULL, 'N'},
    {NULL, 0, NULL, 0},
};

static void parsed(const char *want, int n, ...) {
  char *argv[16] = {"cmd"};
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) argv[i + 1] = va_arg(ap, char *);
  va_end(ap);
  char got[256] = "";
  optind = 0;
  opterr = 0;
  int c;
  while ((c = cli_getopt_long(n + 1, argv, ":h", longopts)) != -1) {
    size_t k = strlen(got);
    if (c == CLI_OPT_ABBREVIATED)
      snprintf(got + k, sizeof got - k, "A(%s)|", cli_abbreviation_text());
    else if (optarg && c != '?' && c != ':')
      snprintf(got + k, sizeof got - k, "%c=%s|", c, optarg);
    else
      snprintf(got + k, sizeof got - k, "%c|", c);
  }
  size_t k = strlen(got);
  snprintf(got + k, sizeof got - k, "@%d", optind);
  assert_string_equal(got, want);
}

static void test_getopt(void **state) {
  (void)state;
  parsed("d=x|j|@4", 3, "--details", "x", "--json");
  parsed("d=x|j|@3", 2, "--details=x", "--json");
  parsed("A(--detail is not an option; did you mean --details?)|@3", 2,
         "--detail", "x");
  parsed("A(--detail is not an option; did you mean --details?)|@2", 1,
         "--detail=x");
  parsed("A(--js is not an option; did you mean --json?)|@2", 1, "--js");
  /* --name is spelled in full: not --namespace. */
  parsed("N=a|n=b|@5", 4, "--name", "a", "--namespace", "b");
  parsed("A(--names is not an option; did you mean --namespace?)|@3", 2,
         "--names", "b");
  /* A value that looks like an abbreviation is a value. */
  parsed("d=--detail|@3", 2, "--details", "--detail");
  parsed("d=--det|@2", 1, "--details=--det");
  /* "--" ends the options: what follows is operands. */
  parsed("j|@3", 3, "--json", "--", "--detail");
  /* An ambiguous prefix stays getopt's own error. */
  parsed("?|@2", 1, "--na");
  parsed("h|@2", 1, "-h");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_forms),    cmocka_unit_test(test_refused),
      cmocka_unit_test(test_range),    cmocka_unit_test(test_messages),
      cmocka_unit_test(test_printing), cmocka_unit_test(test_relative),
      cmocka_unit_test(test_getopt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
