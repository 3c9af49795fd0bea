/*
 * cli_error.c - the one error line of jobboard's programs (cli_error.h).
 */
#include "cli_error.h"

#include <stdio.h>

void cli_error_line(const char *program, const char *msg) {
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
