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
  /* The listening address (with a token it may be another than
   * loopback): a Host header naming it is taken too. */
  char addr[300];
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

/* ---- web_perf.c: the pages' reads on a big board */

/* The tables a /jobs filter reads (jb_iter_options.where): by `state`
 * (the pages' names; NULL: any) and `owner` (claims only); 0: all. */
unsigned web_state_tables(const char *state, const char *owner);
/* `name` when it is an exact name (read through the names' index), NULL
 * when it is a prefix ("images.*") or NULL. */
const char *web_exact_name(const char *name);
/* The oldest wait start (jb_job_modified) among the first ready job of
 * each priority of `name`: one seek per priority, not a walk of its jobs
 * (a job abandoned back keeps its place and waits from its abandon, so a
 * later one may have waited longer). 0: none ready. */
int web_oldest_ready(jb_board *b, const char *name, int64_t *out);

/* timeline (web_timeline.c) */
/* A job's timeline, oldest first, from the change log (a bounded read:
 * the page says how far it looked), with the reason, outcome, result and
 * dead letter's cause from `j` (on the board), `h` (its history record)
 * and `d` (its dead letter), any of them NULL. */
void web_timeline(FILE *f, jb_board *b, const char *uuid, const jb_job *j,
                  const jb_completion *h, const jb_dead_letter *d,
                  int64_t now);
/* A claim's holder: "PID alive|gone" (or not bound), and with `b` the
 * entity registered under `owner`'s name, if any. */
void web_holder(FILE *f, jb_board *b, const char *owner, int pid,
                bool alive, int64_t now);

/* history (web_history.c) */
/* /history: the history records, filtered, 50 a page. */
unsigned web_page_history(web_page *p, web_ctx *c,
                          struct MHD_Connection *conn);

/* sparklines (web_spark.c) */
/* The overview's sparklines of the last hour: completions and waits per
 * minute, inline SVG, from a bounded read of the history. */
void web_sparklines(FILE *f, jb_board *b, int64_t now_us);

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
