/*
 * cli_getopt.h - getopt_long taking long options only as spelled
 * (tools/cli_getopt.c). GNU getopt takes any unique prefix of a long
 * option ("--detail" for "--details", "--name" for "--namespace") without
 * a word; the CLI refuses one, naming the option meant. Needs nothing but
 * getopt: demo and the bench use it too.
 */
#ifndef JOBBOARD_CLI_GETOPT_H
#define JOBBOARD_CLI_GETOPT_H

#include <getopt.h>

/* What cli_getopt_long returns for an abbreviated long option. */
#define CLI_OPT_ABBREVIATED 0x7fff0001

/* getopt_long (same arguments, same globals), but an abbreviated long
 * option returns CLI_OPT_ABBREVIATED, after which cli_abbreviation_text
 * says it. Both the --opt=VALUE and the --opt VALUE forms are checked;
 * "--" still ends the options. */
int cli_getopt_long(int argc, char *const argv[], const char *shortopts,
                    const struct option *longopts);

/* The message for the last CLI_OPT_ABBREVIATED: "--detail is not an
 * option; did you mean --details?". */
const char *cli_abbreviation_text(void);

#endif
