/*
 * cli_board.c - what the CLI says about the board it opens: that it made a
 * new one (a typo in --board must not make a board unnoticed), that the
 * view is read-only (once a process), and --quiet, which silences both.
 */
#include "cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int quiet;

void cli_set_quiet(void) { quiet = 1; }

int cli_quiet(void) { return quiet; }

int cli_board_absent(const char *dir) {
  char data[4096];
  snprintf(data, sizeof data, "%s/data.mdb", dir);
  return access(data, F_OK) != 0;
}

void cli_note_created(const cli_opts *o, const char *dir) {
  if (quiet) return;
  const char *env = getenv("JOBBOARD_DIR");
  int defaulted = o->board == NULL && (env == NULL || env[0] == '\0');
  fflush(stdout);
  fprintf(stderr, "jobboard: note: created a new board at %s%s\n", dir,
          defaulted ? " (the default: no --board and no $JOBBOARD_DIR)" : "");
}

void cli_note_readonly(const char *why, int nolock) {
  /* Said once: a process that opens the board again (web, a second
   * handle) has nothing new to say. */
  static int said;
  if (quiet || said) return;
  said = 1;
  fprintf(stderr, "jobboard: note: a read-only view: %s%s\n", why,
          nolock ? " (read without LMDB's reader locks: a read racing a "
                   "writer may rarely fail and need repeating)"
                 : "");
}
