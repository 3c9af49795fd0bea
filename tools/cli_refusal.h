/*
 * cli_refusal.h - --json's error object of a failed command
 * (cli_refusal.c; jobboard(1), JSON OUTPUT).
 */
#ifndef JOBBOARD_CLI_REFUSAL_H
#define JOBBOARD_CLI_REFUSAL_H

#include <jansson.h>

/* main, before the command runs: was --json given (before any "--")? */
void cli_refusal_json_mode(int argc, char **argv);

/* The name of an exit status in the error object: "not_found", "exists",
 * ... ("error" for one without a name of its own). */
const char *cli_exit_name(int code);

/* A refusal that has an answer of its own: print `obj` (taken) with
 * "error" added, after the error line was printed on stderr; returns
 * `code`. main then adds nothing. */
int cli_json_refused(json_t *obj, int code);

/* main, once the command returned `code`: with --json, a failure (1 to
 * 127) the command did not print itself gets {"error": {...}} on stdout. */
void cli_refusal_finish(int code);

#endif
