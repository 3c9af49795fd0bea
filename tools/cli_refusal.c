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

/* What an exit status means, for a refusal that printed no error line
 * (status --verify's differences, a report that is the answer). */
static const char *exit_text(int code) {
  static const char *const texts[] = {
      [CLI_EXIT_ERROR] = "failed",
      [CLI_EXIT_USAGE] = "a bad command line",
      [CLI_EXIT_NOTFOUND] = "not found",
      [CLI_EXIT_CLAIMED] = "claimed by another owner",
      [CLI_EXIT_NOTOWNER] = "not the owner of the claim",
      [CLI_EXIT_OFFLINE] = "Redis could not be reached",
      [CLI_EXIT_TIMEDOUT] = "timed out",
      [CLI_EXIT_TRIMMED] = "the change log no longer holds those events",
      [CLI_EXIT_NO_META] = "no such setting",
      [CLI_EXIT_DIFFERS] = "differences found (the output says which)",
      [CLI_EXIT_EXISTS] = "already there",
      [CLI_EXIT_NOTDUE] = "not due yet",
      [CLI_EXIT_READONLY] = "the board is read-only",
  };
  if (code > 0 && (size_t)code < sizeof texts / sizeof texts[0] && texts[code])
    return texts[code];
  return "failed";
}

/* {"code", "exit", "message"}: the message is the error line just printed
 * on stderr, without "jobboard: ", or what the exit status means when
 * none was printed. */
static json_t *error_json(int code) {
  const char *m = cli_error_last();
  return json_pack("{s:s,s:i,s:s}", "code", cli_exit_name(code), "exit",
                   code, "message", m && *m ? m : exit_text(code));
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
