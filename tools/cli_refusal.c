/*
 * cli_refusal.c - a refusal is visible in --json as well as in the exit
 * status: a command that fails with --json ends its stdout with one
 * object holding "error": {"code", "exit", "message"} (jobboard(1), JSON
 * OUTPUT). main prints it once the command has returned, so no command
 * needs to know; a command whose refusal has an answer of its own (post
 * --unique: the holder's uuid) puts the error into that object instead.
 */
#include "cli_common.h"
#include "cli_error.h"
#include "cli_refusal.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

static int json_mode;
static int said; /* the command printed its refusal itself */

void cli_refusal_json_mode(int argc, char **argv) {
  /* --json anywhere before "--" (after it: a worker command's own). */
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--json") == 0) json_mode = 1;
}

const char *cli_exit_name(int code) {
  static const char *const names[] = {
      [CLI_EXIT_OK] = "ok",
      [CLI_EXIT_ERROR] = "error",
      [CLI_EXIT_USAGE] = "usage",
      [CLI_EXIT_NOTFOUND] = "not_found",
      [CLI_EXIT_CLAIMED] = "claimed",
      [CLI_EXIT_NOTOWNER] = "not_owner",
      [CLI_EXIT_OFFLINE] = "offline",
      [CLI_EXIT_TIMEDOUT] = "timed_out",
      [CLI_EXIT_TRIMMED] = "trimmed",
      [CLI_EXIT_NO_META] = "no_meta",
      [CLI_EXIT_DIFFERS] = "differs",
      [CLI_EXIT_EXISTS] = "exists",
      [CLI_EXIT_NOTDUE] = "not_due",
      [CLI_EXIT_READONLY] = "read_only",
  };
  if (code >= 0 && (size_t)code < sizeof names / sizeof names[0] &&
      names[code])
    return names[code];
  return "error";
}

/* {"code", "exit", "message"}: the message is the error line just printed
 * on stderr, without "jobboard: ". */
static json_t *error_json(int code) {
  return json_pack("{s:s,s:i,s:s}", "code", cli_exit_name(code), "exit",
                   code, "message", cli_error_last());
}

int cli_json_refused(json_t *obj, int code) {
  said = 1;
  if (obj == NULL || json_object_set_new(obj, "error", error_json(code)) != 0) {
    json_decref(obj);
    return code;
  }
  cli_json_print(obj);
  return code;
}

void cli_refusal_finish(int code) {
  /* 128 + N: stopped by a signal, not refused. */
  if (!json_mode || said || code == CLI_EXIT_OK || code >= 128) return;
  said = 1;
  cli_json_print(json_pack("{s:o}", "error", error_json(code)));
}
