/*
 * cli_error.h - the one error line of jobboard's programs (jobboard and
 * jobboard-bench): "PROGRAM: MESSAGE" on stderr, always a single line, so
 * that a script reading stderr sees one error as one line.
 */
#ifndef JOBBOARD_CLI_ERROR_H
#define JOBBOARD_CLI_ERROR_H

#include <stdarg.h>

/* Print "PROGRAM: MESSAGE" and a newline on stderr, with any newline in
 * MESSAGE (a name echoed back) printed as a space. */
void cli_error_line(const char *program, const char *msg);

/* The message of the last cli_error_line ("" before the first). */
const char *cli_error_last(void);

/* Flush stdout (its lines stay before the error when both are a tty),
 * then print the printf-formatted message as cli_error_line does. Returns
 * 2, the usage-error exit status of both programs. */
int cli_vusage_error(const char *program, const char *fmt, va_list ap);

#endif
