/*
 * web.h - what the parts of `jobboard web` share (cmd_web.c serves and
 * routes; its pages and actions are written with these): the server's
 * context, a page being written, and the small writers every page uses.
 * Only built with libmicrohttpd (JB_WITH_MICROHTTPD).
 */
#ifndef JOBBOARD_WEB_H
#define JOBBOARD_WEB_H

#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>

#include "jobboard.h"

typedef struct {
  jb_board *b;
  /* The listening port: the one a Host header must name (host_ok). */
  unsigned port;
} web_ctx;

/* A page being written: its body, its status, where a redirect goes. */
typedef struct {
  FILE *f;
  char *buf;
  size_t len;
  unsigned code;
  char error[600];    /* code >= 400: what the error page says */
  char location[80];  /* code 303: where to */
  int64_t now_us;
} web_page;

/* Fail the page with `code` and `msg` (its error page says it). */
unsigned web_fail(web_page *p, unsigned code, const char *msg);
/* Fail the page with 500 and this thread's jb_errmsg (after a JB_* `st`). */
unsigned web_board_fail(web_page *p, int st);
/* A query parameter, NULL when absent or empty. */
const char *web_arg(struct MHD_Connection *conn, const char *key);

/* A number cell. */
void web_td_n(FILE *f, size_t n);
/* A link to a job: its uuid, or `label` when given. */
void web_job_link(FILE *f, const char *uuid, const char *label);
/* A link to /jobs with one filter. */
void web_jobs_link(FILE *f, const char *key, const char *value,
                   const char *label);
/* The details (or a result) as indented JSON in <pre>. */
void web_pre_json(FILE *f, const void *data, size_t len);
/* The details as one line of JSON (malloc'ed; NULL: none or no memory). */
char *web_details_line(const jb_job *j);
/* Where a job on the board is: JB_STATS_UNCLAIMED, _CLAIMED or _DELAYED,
 * and those states' names in the pages and filters. */
int web_job_where(const jb_job *j);
extern const char *const web_where_names[JB_STATS_STATES];
/* Walk the board's jobs in listing order: `visit` returns non-zero to
 * stop; postings that do not decode are passed over. */
int web_each_job(jb_board *b, int (*visit)(const jb_job *, void *),
                 void *arg);

#endif
