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
  /* The Host header values taken (case aside): the listening address,
   * localhost, 127.0.0.1 and [::1], each with the port. */
  char hosts[4][300];
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

/* ------------------------------------------ actions (web_actions.c) */

#include <stdbool.h>

#include "cli_common.h"

/* The security headers every response carries (pairs, NULL-ended). */
extern const char *const *const web_security_headers;
/* Reply with the security headers and `extra` (pairs, NULL-ended; may be
 * NULL); `owned`: body is malloc'ed and freed here. */
enum MHD_Result web_reply(struct MHD_Connection *conn, unsigned code,
                          const char *type, char *body, size_t len,
                          bool owned, const char *const *extra);
/* Before the socket and the board: --actions and --token-file (read and
 * checked: mode, length) or a random token with --actions. 0, or the exit
 * code after saying why. */
int web_auth_init(const cli_command *cmd, bool actions,
                  const char *token_file);
/* A token is set: a login is possible, a non-loopback address allowed. */
bool web_auth_has_token(void);
/* With the board open: actions on unless it is read-only (said on
 * stderr), a session needed for every page when not on loopback, and the
 * random token printed once. */
void web_auth_start(jb_board *b, bool loopback, bool any);
/* Bound to every address: the Host header is not checked (every page
 * needs a session, which a page of another site does not have). */
bool web_any_host(void);
/* Answer /login, /logout, /action and, off loopback, the login a page
 * needs; set what this request's forms carry. true: answered (*ret). */
bool web_actions_route(web_ctx *c, struct MHD_Connection *conn,
                       const char *url, const char *method,
                       const char *upload, size_t *upload_size,
                       void **con_cls, enum MHD_Result *ret);
/* The server's MHD_OPTION_NOTIFY_COMPLETED: frees an unfinished POST. */
void web_actions_completed(void *cls, struct MHD_Connection *conn,
                           void **con_cls,
                           enum MHD_RequestTerminationCode toe);
/* A form (class "action") posting `op` to /action with a button labelled
 * `label` and hidden fields given as key, value pairs ended by a NULL key
 * (a NULL value is left out). Writes nothing when actions are off or the
 * request has no session. */
void web_action_form(FILE *f, const char *op, const char *label, ...);
/* The same with a checkbox `confirm` (field confirm=1) to tick. */
void web_action_confirm_form(FILE *f, const char *op, const char *label,
                             const char *confirm, ...);
/* Forms are written for this request. */
bool web_actions_on(void);
/* After the page's heading: the last action's result, or how to act. */
void web_page_notes(web_page *p);

#endif
