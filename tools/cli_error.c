/*
 * cli_error.c - the one error line of jobboard's programs (cli_error.h).
 */
#include "cli_error.h"

#include <stdio.h>

/* The last error line's message, for --json's error object
 * (cli_refusal.c). */
static char last[1024];

const char *cli_error_last(void) { return last; }

void cli_error_line(const char *program, const char *msg) {
  snprintf(last, sizeof last, "%s", msg);
  fprintf(stderr, "%s: ", program);
  for (const char *p = msg; *p; p++)
    fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
  fputc('\n', stderr);
}

int cli_vusage_error(const char *program, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fflush(stdout);
  cli_error_line(program, msg);
  return 2;
}
