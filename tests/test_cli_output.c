/*
 * test_cli_output.c - `jobboard list`'s printed durations (AGE, the age
 * field of --format) in the syntax the options take: the two largest
 * units, whole seconds; and the --format template's check (a field, an
 * escape, an unclosed brace). tools/cli_output.c on its own: the CLI's
 * cli_put_text is stubbed below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/cli_output.h"

/* tools/cli_common.c's, as it writes for a human. */
void cli_put_text(FILE *f, const char *s);
void cli_put_text(FILE *f, const char *s) { fputs(s, f); }

static void expect_duration(int64_t ms, const char *want) {
  char buf[32];
  cli_output_duration(buf, sizeof buf, ms);
  assert_string_equal(buf, want);
}

static void test_duration(void **state) {
  (void)state;
  expect_duration(-5000, "0s"); /* a clock stepped back */
  expect_duration(0, "0s");
  expect_duration(999, "0s");
  expect_duration(5000, "5s");
  expect_duration(59999, "59s");
  expect_duration(60000, "1m");
  expect_duration(250000, "4m10s");
  expect_duration(3600000, "1h");
  expect_duration(7380000, "2h3m");
  expect_duration(7385000, "2h3m"); /* the seconds below the minutes go */
  expect_duration(86400000LL * 3, "3d");
  expect_duration(86400000LL * 3 + 4 * 3600000LL, "3d4h");
  expect_duration(86400000LL * 400 + 59 * 60000LL, "400d");
}

static void expect_template(const char *t, const char *err_part) {
  char err[512] = "";
  int rc = cli_output_template_check(t, err, sizeof err);
  if (err_part == NULL) {
    assert_int_equal(rc, 0);
    return;
  }
  assert_int_equal(rc, -1);
  if (strstr(err, err_part) == NULL)
    fail_msg("template '%s': '%s' lacks '%s'", t, err, err_part);
}

static void test_template(void **state) {
  (void)state;
  expect_template("", NULL);
  expect_template("{uuid} {name}\\t{age}\\n\\\\ \\{x\\} }", NULL);
  expect_template("{nope}", "'{nope}' is not a field (fields: uuid, name,");
  expect_template("{uuid", "without its }");
  expect_template("a\\qb", "'\\q' is not an escape");
  expect_template("a\\", "lone \\");
  expect_template("{}", "'{}' is not a field");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_duration),
      cmocka_unit_test(test_template),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
