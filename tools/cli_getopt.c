/*
 * cli_getopt.c - getopt_long taking long options only as spelled. GNU
 * getopt_long accepts any unique prefix of a long option, so "--name"
 * silently becomes "--namespace" and "--detail" "--details": a typo then
 * means another option. Each long option getopt_long matched is compared
 * with the text written, and an abbreviation is refused.
 */
#include "cli_getopt.h"

#include <stdio.h>
#include <string.h>

static char abbreviation[256];

const char *cli_abbreviation_text(void) { return abbreviation; }

int cli_getopt_long(int argc, char *const argv[], const char *shortopts,
                    const struct option *longopts) {
  int index = -1;
  int c = getopt_long(argc, argv, shortopts, longopts, &index);
  if (c == -1 || c == '?' || c == ':' || index < 0) return c;
  const struct option *opt = &longopts[index];
  /* The element just taken: the one before optind, or the one before
   * that when the value was the next element (--opt VALUE: optarg is
   * that element itself; --opt=VALUE points inside the option's). */
  int at = optind - 1;
  if (opt->has_arg == required_argument && optarg != NULL && at >= 1 &&
      optarg == argv[at])
    at--;
  if (at < 1 || at >= argc) return c;
  const char *given = argv[at];
  if (given[0] != '-' || given[1] != '-') return c;
  size_t n = strcspn(given + 2, "=");
  if (n == strlen(opt->name)) return c;
  snprintf(abbreviation, sizeof abbreviation,
           "--%.*s is not an option; did you mean --%s?",
           (int)(n > 100 ? 100 : n), given + 2, opt->name);
  return CLI_OPT_ABBREVIATED;
}
