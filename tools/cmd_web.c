/*
 * cmd_web.c - `jobboard web`: the board in a browser. Pages rendered on
 * the server (they read without JavaScript), every text of the board
 * escaped by web_esc (web_html.c), and /events, the change log as
 * server-sent events for the pages' live list. Every page is read with
 * the public API's reads, each its own short read transaction, and
 * written to the client after them; the actions (--actions) are in
 * web_actions.c.
 */
#include "config.h"

#include "cli_common.h"

#include <stdio.h>
#include <string.h>

const cli_command cli_cmd_web = {
    "web", "serve a dashboard of the board over HTTP (read-only unless --actions)",
    "Usage: jobboard web [--listen ADDR:PORT] [--actions] [--token-file FILE]\n"
    "                    [OPTIONS]\n"
    "\n"
    "Serve the board as web pages, read-only unless --actions, until\n"
    "SIGINT or SIGTERM (then exit 0). Everything is in the program: no files to deploy, no\n"
    "other server. The pages are plain HTML that read without JavaScript;\n"
    "a small script adds a live list of the board's events.\n"
    "\n"
    "Pages:\n"
    "  /                overview: jobs by state and by name, the oldest\n"
    "                   ready job's wait per name, claims whose lease\n"
    "                   lapses within 30 s, schedules due, the board's\n"
    "                   health (map use, readers, change log)\n"
    "                   and sparklines of the last hour: jobs completed and\n"
    "                   their mean wait (post to claim) per minute, from at\n"
    "                   most 50 ms of reading the history\n"
    "  /jobs            50 jobs a page in listing order, with filters as\n"
    "                   query parameters (a plain GET form: every filter is\n"
    "                   a URL to share): state=unclaimed|claimed|delayed,\n"
    "                   name=NAME (a NAME ending in '*' is a prefix),\n"
    "                   owner=WHO, key=KEY (the unique key: post\n"
    "                   --unique), q=TEXT (text in the details as JSON; a\n"
    "                   uuid goes to that job), after=CURSOR (the next page)\n"
    "  /job/UUID        one job: state, owner, lease, attempts, progress,\n"
    "                   details as indented JSON; a job that left the\n"
    "                   board: its history record and dead letter\n"
    "                   the timeline: its life from the change log, oldest\n"
    "                   first (posted, claimed by whom, extended, progress,\n"
    "                   abandoned with the reason, consumed with outcome and\n"
    "                   result, dead with the cause), read newest first for\n"
    "                   at most 60 ms (the page says how far it looked, and\n"
    "                   when the log no longer holds the early events); a\n"
    "                   claim's holder: its pid, alive or gone, and the\n"
    "                   entity registered under the owner's name\n"
    "  /claims          the claims held: owner, job, since, lease deadline,\n"
    "                   holder (pid, alive or gone)\n"
    "  /dead            the dead letters grouped by cause and reason, and\n"
    "                   the newest ones\n"
    "  /schedules       the schedules: next run, last run, runs posted\n"
    "  /history         the history, newest first, 50 a page: outcome,\n"
    "                   owner, wait, result, reason; filters as query\n"
    "                   parameters (a GET form): name=NAME ('*' at the end:\n"
    "                   a prefix), outcome=LIST (consumed, failed, ...),\n"
    "                   since=TIME, until=TIME (as `history` takes them),\n"
    "                   q=TEXT (text in the result or reason: 5,000 records\n"
    "                   looked at a page), after=CURSOR (the next page)\n"
    "  /events          the change log from now on as server-sent events\n"
    "                   (text/event-stream): one event per change, its id\n"
    "                   the log sequence (a reconnect with Last-Event-ID\n"
    "                   goes on after it), its data one JSON object: seq,\n"
    "                   type, uuid, name (null when no longer known),\n"
    "                   owner (null for POSTED), time, priority; a name\n"
    "                   or owner that is not UTF-8 (a posting of another\n"
    "                   producer) is {\"$bin\": \"<base64>\"}\n"
    "  /login           the login form (POST /login with the token; POST\n"
    "                   /logout ends the session)\n"
    "  /action          POST only (GET: 405): an action, with --actions\n"
    "Anything else is 404. Only GET and HEAD are served, and POST to\n"
    "/login, /logout and /action (others: 405).\n"
    "\n"
    "Cost on a big board: the overview reads the indexes (the ready jobs\n"
    "counted by name from the names' index, the first ready job of each\n"
    "priority for the oldest wait) and only the claimed and delayed jobs;\n"
    "/jobs opens the listing at its cursor and through the name, state\n"
    "and owner filters' indexes, so a deep page costs what the first\n"
    "does. q=TEXT and a name prefix are searched job by job: a page looks\n"
    "at 5,000 jobs at most, then says so and links to search on from\n"
    "there. Every response has a Server-Timing header (app;dur=MS, the\n"
    "milliseconds the server spent on it).\n"
    "\n"
    "Actions (--actions): the pages get buttons, each the same write as a\n"
    "CLI command: on /job/UUID cancel (not claimed; jobboard cancel), run\n"
    "now (delayed; jobboard run-now), requeue and purge (a dead letter;\n"
    "jobboard dead requeue, dead purge UUID); on /dead the same per letter\n"
    "and for a whole cause-and-reason group; on /jobs cancel every job the\n"
    "filter matches (a box to tick, or a page to confirm); on the overview\n"
    "pause and resume per name and for the board; on /schedules remove.\n"
    "An \"all matching\" request acts on at most 10000, one by one. The\n"
    "result and the equivalent CLI command are shown on the page it\n"
    "returns to, and each action is said on stderr: 'jobboard: web: OP\n"
    "WHAT by SESSION from ADDR: N done[, M skipped]'. Without --actions no\n"
    "form is written and POST /action is 403. A board this process can\n"
    "only read is served read-only (--actions is said to be off).\n"
    "\n"
    "Security: an action needs a session: POST /login with the token gives\n"
    "the cookie jb_session (HttpOnly, SameSite=Strict; kept in memory, at\n"
    "most 64, ended by 12 h unused or a restart); a wrong token is 403\n"
    "after a delay. Every action form carries the session's csrf value; a\n"
    "POST /action without the session or with another csrf value is 403,\n"
    "as is one whose Origin header names another site. Without a token\n"
    "the pages are served on a loopback address only (another is refused:\n"
    "exit 2), and every local user who can connect to the port can read\n"
    "the board through the server, whatever the board's file permissions:\n"
    "run it where that is acceptable, and reach it from elsewhere through\n"
    "ssh -L (below). With one (--token-file, or --actions' printed one) another\n"
    "address is taken, and there every page, reading too, needs the\n"
    "session (the cookie travels in clear: use ssh -L or a TLS proxy). A\n"
    "request whose Host header is missing or names another host than the\n"
    "listening address, localhost or a loopback address (127.0.0.0/8,\n"
    "[::1]; any case), or another port, is refused with 421, so that a web\n"
    "page elsewhere cannot read the board through DNS rebinding (bound to\n"
    "every address, 0.0.0.0 or [::], any Host is taken: the session\n"
    "guards every page). The pages send a Content-Security-Policy that allows only\n"
    "their own stylesheet and script. At most 32 connections at once, a\n"
    "request's line and headers within 16 KiB, and an idle connection\n"
    "closed after 20 s.\n"
    "\n"
    "Options:\n"
    "  --listen ADDR:PORT  serve at http://ADDR:PORT/ (default\n"
    "                      127.0.0.1:8080); ADDR is 127.0.0.1 (any of\n"
    "                      127.0.0.0/8), [::1] or localhost (another host\n"
    "                      name is refused: what it resolves to can\n"
    "                      change); PORT 0 picks a\n"
    "                      free port. The address is said on stderr:\n"
    "                      'jobboard: web: listening on http://ADDR:PORT/'\n"
    "                      Another address needs a token.\n"
    "  --actions           allow actions from the pages (see above); without\n"
    "                      --token-file a random token (32 hex digits) is\n"
    "                      printed once: 'jobboard: web: token: HEX'\n"
    "  --token-file FILE   the token is FILE's first line, 16 to 256\n"
    "                      characters; a FILE others may read (mode & 077)\n"
    "                      is refused (exit 2)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  2  also: a jobboard built without HTTP support, an address that is\n"
    "     not loopback without a token, does not parse or is in use; a\n"
    "     --token-file others can read, or whose token is short\n"
    "\n"
    "Examples:\n"
    "  jobboard web --board /srv/board\n"
    "  jobboard web --listen 127.0.0.1:0      # a free port, said on stderr\n"
    "  ssh -L 8080:127.0.0.1:8080 host jobboard web --board /srv/board\n"
    "  jobboard web --actions --token-file ~/.config/jobboard/token\n",
    CLI_O_LISTEN | CLI_O_WEB, 0, 0, ""};

#ifndef JB_WITH_MICROHTTPD

int cmd_web(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_web, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  return cli_cmd_usage(&cli_cmd_web, "this jobboard was built without HTTP "
                                     "support (libmicrohttpd)");
}

#else /* JB_WITH_MICROHTTPD */

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <search.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "cli_http.h"
#include "json.h"
#include "web.h"
#include "web_html.h"

/* ---------------------------------------------------------- the server */

#define PAGE_JOBS 50     /* jobs a page of /jobs */
#define LAPSING_S 30     /* the overview's "lease lapses within" */
#define DELAYED_ROWS_MAX 2000 /* the overview counts so many delayed by name */
#define ROWS_MAX 1000    /* rows of /claims and the overview's lists */
#define EVENTS_BATCH 16  /* events read per wait of /events */
#define KEEPALIVE_MS 5000 /* /events: a comment after this long idle */

static const char *const security_headers[] = {
    "Content-Security-Policy",
    "default-src 'none'; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options", "nosniff",
    "X-Frame-Options", "DENY",
    /* same-origin, not no-referrer: the pages' addresses still go to no
     * other site, and a form's POST keeps its Origin (under no-referrer a
     * browser sends "Origin: null", which the actions refuse). */
    "Referrer-Policy", "same-origin",
    "Cache-Control", "no-store",
    NULL};
const char *const *const web_security_headers = security_headers;

/* Fail the page with `code` and a message (the board's, when `st` is a
 * JB_* failure: jb_errmsg of this thread). */
unsigned web_fail(web_page *p, unsigned code, const char *msg) {
  p->code = code;
  snprintf(p->error, sizeof p->error, "%s", msg);
  return code;
}

unsigned web_board_fail(web_page *p, int st) {
  (void)st;
  return web_fail(p, MHD_HTTP_INTERNAL_SERVER_ERROR, jb_errmsg());
}

const char *web_arg(struct MHD_Connection *conn, const char *key) {
  const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, key);
  return v && v[0] ? v : NULL;
}

/* A number cell. */
void web_td_n(FILE *f, size_t n) { fprintf(f, "<td class=\"n\">%zu</td>", n); }

/* A link to a job: its uuid, or `label` when given. */
void web_job_link(FILE *f, const char *uuid, const char *label) {
  fputs("<a href=\"/job/", f);
  web_url_esc(f, uuid);
  fputs("\">", f);
  web_esc(f, label ? label : uuid);
  fputs("</a>", f);
}

/* A link to /jobs with one filter. */
void web_jobs_link(FILE *f, const char *key, const char *value,
                      const char *label) {
  fprintf(f, "<a href=\"/jobs?%s=", key);
  web_url_esc(f, value);
  fputs("\">", f);
  web_esc(f, label);
  fputs("</a>", f);
}

/* The details (or a result) as indented JSON in <pre>. */
void web_pre_json(FILE *f, const void *data, size_t len) {
  json_t *v = data && len ? cli_msgpack_to_json(data, len) : json_object();
  char *text = v ? json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
  fputs("<pre>", f);
  web_esc(f, text ? text : "(does not decode)");
  fputs("</pre>\n", f);
  free(text);
  json_decref(v);
}

/* The details as one line of JSON (malloc'ed; NULL: none or no memory). */
char *web_details_line(const jb_job *j) {
  size_t len = 0;
  const void *d = jb_job_details(j, &len);
  json_t *v = d && len ? cli_msgpack_to_json(d, len) : NULL;
  char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  json_decref(v);
  return text;
}

/* Where a job on the board is: unclaimed, claimed or delayed. */
int web_job_where(const jb_job *j) {
  if (jb_job_state(j) == JB_STATE_CLAIMED) return JB_STATS_CLAIMED;
  return jb_job_not_before(j) ? JB_STATS_DELAYED : JB_STATS_UNCLAIMED;
}
const char *const web_where_names[JB_STATS_STATES] = {"unclaimed",
                                                         "claimed", "delayed"};

/* ---------------------------------------------------------- overview */

typedef struct {
  char *name;
  size_t n[JB_STATS_STATES];
  int64_t oldest_ready_us; /* 0: none ready */
} name_row;

typedef struct {
  char uuid[JB_UUID_STRLEN];
  char *name, *owner;
  int64_t expires_us;
} lapse_row;

typedef struct {
  void *tree;        /* name_row by name (tsearch) */
  name_row **rows;   /* the same, in the order met */
  size_t n, cap;
  lapse_row *lapsing;
  size_t n_lapsing, cap_lapsing;
  int64_t now_us;
  int oom;
} overview;

static int cmp_row(const void *a, const void *b) {
  return strcmp(((const name_row *)a)->name, ((const name_row *)b)->name);
}

static int cmp_row_ptr(const void *a, const void *b) {
  return cmp_row(*(name_row *const *)a, *(name_row *const *)b);
}

static int cmp_lapse(const void *a, const void *b) {
  int64_t x = ((const lapse_row *)a)->expires_us,
          y = ((const lapse_row *)b)->expires_us;
  return x < y ? -1 : x > y;
}

/* Grow an array of `size`-byte items to hold one more. */
static int grow(void *arr, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 0;
  size_t c = *cap ? *cap * 2 : 16;
  void *p = realloc(*(void **)arr, c * size);
  if (p == NULL) return -1;
  *(void **)arr = p;
  *cap = c;
  return 0;
}

static name_row *row_of(overview *o, const char *name) {
  name_row key = {.name = (char *)name};
  name_row **hit = tfind(&key, &o->tree, cmp_row);
  if (hit) return *hit;
  name_row *r = calloc(1, sizeof *r);
  if (r == NULL || (r->name = strdup(name)) == NULL ||
      grow(&o->rows, &o->cap, o->n, sizeof *o->rows) != 0 ||
      tsearch(r, &o->tree, cmp_row) == NULL) {
    if (r) free(r->name);
    free(r);
    return NULL;
  }
  o->rows[o->n++] = r;
  return r;
}

static int overview_visit(const jb_job *j, void *arg) {
  overview *o = arg;
  name_row *r = row_of(o, jb_job_name(j));
  if (r == NULL) return o->oom = 1;
  int w = web_job_where(j);
  r->n[w]++;
  if (w == JB_STATS_UNCLAIMED &&
      (r->oldest_ready_us == 0 || jb_job_modified(j) < r->oldest_ready_us))
    r->oldest_ready_us = jb_job_modified(j);
  int64_t exp = jb_job_lease_expires(j);
  if (w == JB_STATS_CLAIMED && exp &&
      exp - o->now_us <= (int64_t)LAPSING_S * 1000000 &&
      o->n_lapsing < ROWS_MAX) {
    if (grow(&o->lapsing, &o->cap_lapsing, o->n_lapsing, sizeof *o->lapsing))
      return o->oom = 1;
    lapse_row *l = &o->lapsing[o->n_lapsing];
    memcpy(l->uuid, jb_job_uuid(j), JB_UUID_STRLEN);
    l->name = strdup(jb_job_name(j));
    l->owner = strdup(jb_job_owner(j) ? jb_job_owner(j) : "");
    l->expires_us = exp;
    o->n_lapsing++;
    if (l->name == NULL || l->owner == NULL) return o->oom = 1;
  }
  return 0;
}

static int overview_job(const jb_job *j, jb_iter *it, void *arg) {
  (void)it;
  return overview_visit(j, arg);
}

static int overview_queue(const jb_queue_info *q, void *arg) {
  overview *o = arg;
  if (q->ready == 0) return 0;
  name_row *r = row_of(o, q->name);
  if (r == NULL) return o->oom = 1;
  r->n[JB_STATS_UNCLAIMED] += q->ready;
  return 0;
}

/* The rows from the indexes, not a walk of every job: the ready counts
 * from the names' index, the oldest ready wait from each priority's first
 * ready job, and only the claimed and delayed jobs read. */
static int overview_gather(jb_board *b, overview *o, bool delayed) {
  jb_iter_options io = {.version = JB_ITER_OPTIONS_VERSION,
                        .where = JB_ITER_CLAIMED |
                                 (delayed ? JB_ITER_DELAYED : 0)};
  int rc = cli_walk_jobs_opts(b, &io, overview_job, o);
  if (rc == JB_OK && !o->oom) rc = jb_queues_foreach(b, overview_queue, o, NULL);
  for (size_t i = 0; rc == JB_OK && !o->oom && i < o->n; i++) {
    int64_t t;
    if ((rc = web_oldest_ready(b, o->rows[i]->name, &t)) == JB_OK && t &&
        (o->rows[i]->oldest_ready_us == 0 || t < o->rows[i]->oldest_ready_us))
      o->rows[i]->oldest_ready_us = t;
  }
  return o->oom ? JB_ENOMEM : rc;
}

static void overview_free(overview *o) {
  for (size_t i = 0; i < o->n; i++) {
    tdelete(o->rows[i], &o->tree, cmp_row);
    free(o->rows[i]->name);
    free(o->rows[i]);
  }
  free(o->rows);
  for (size_t i = 0; i < o->n_lapsing; i++) {
    free(o->lapsing[i].name);
    free(o->lapsing[i].owner);
  }
  free(o->lapsing);
}

typedef struct {
  FILE *f;
  int64_t now_us;
  size_t due, all;
} sched_walk;

static int due_visit(const jb_schedule *s, void *arg) {
  sched_walk *w = arg;
  w->all++;
  if (s->next_us > w->now_us) return 0;
  if (w->due++ == 0)
    fputs("<table><tr><th>schedule</th><th>due since</th><th>job</th>"
          "</tr>\n",
          w->f);
  fputs("<tr><td>", w->f);
  web_esc(w->f, s->name);
  fputs("</td><td>", w->f);
  web_time(w->f, s->next_us, w->now_us);
  fputs("</td><td>", w->f);
  web_esc(w->f, s->job.name);
  fputs("</td></tr>\n", w->f);
  return 0;
}

static void health(FILE *f, jb_board *b, const jb_stats *st,
                   const cli_pauses *pz) {
  fputs("<h2>Board</h2><table>\n", f);
  fprintf(f, "<tr><th>jobs on the board</th><td class=\"n\">%zu</td></tr>\n",
          st->jobs);
  for (int i = 0; i < JB_STATS_STATES; i++) {
    fprintf(f, "<tr><th>%s</th>", web_where_names[i]);
    web_td_n(f, st->by_state[i]);
    fputs("</tr>\n", f);
  }
  fprintf(f, "<tr><th>delayed and due</th><td class=\"n\">%zu</td></tr>\n",
          st->delayed_due);
  fputs("<tr><th>oldest unclaimed waits</th><td class=\"n\">", f);
  if (st->oldest_unclaimed_us)
    web_duration(f, st->now_us - st->oldest_unclaimed_us);
  else
    fputs("-", f);
  fputs("</td></tr>\n", f);
  fprintf(f,
          "<tr><th><a href=\"/dead\">dead letters</a></th><td class=\"n\">"
          "%zu</td></tr>\n<tr><th>history records</th><td class=\"n\">%zu"
          "</td></tr>\n",
          st->dead_letters, st->history);
  double used = (double)(st->pages_used * st->page_size);
  double pct = st->map_size ? 100.0 * used / (double)st->map_size : 0;
  fprintf(f,
          "<tr><th>map use</th><td class=\"n%s\">%.1f%% (%.1f of %.1f "
          "MiB)</td></tr>\n",
          pct >= 80 ? " warn" : "", pct, used / 1048576.0,
          (double)st->map_size / 1048576.0);
  fprintf(f, "<tr><th>readers</th><td class=\"n\">%u of %u</td></tr>\n",
          st->readers, st->readers_max);
  fprintf(f,
          "<tr><th>claims held</th><td class=\"n\">%zu bound, %zu leased, "
          "%zu plain; lapsing %zu</td></tr>\n",
          st->claims_bound, st->claims_leased, st->claims_plain,
          st->lapsing_lease + st->lapsing_holder);
  if (st->log_next > st->log_first)
    fprintf(f,
            "<tr><th>change log</th><td class=\"n\">%" PRIu64 " .. %" PRIu64
            "</td></tr>\n",
            st->log_first, st->log_next - 1);
  else
    fputs("<tr><th>change log</th><td class=\"n\">empty</td></tr>\n", f);
  /* The last `jobboard check` (its record; none: never, or a garbled one
   * that the next check replaces). */
  jb_check_record ck;
  fputs("<tr><th>last check</th><td class=\"n\">", f);
  if (jb_board_last_check(&ck, b) == JB_OK) {
    web_time(f, ck.time_us, st->now_us);
    fprintf(f, ck.problems + ck.moved ? ": <strong class=\"warn\">%" PRIu64
                                        " problem(s), %" PRIu64 " moved to "
                                        "quarantine</strong>"
                                      : ": %" PRIu64 " problems, %" PRIu64
                                        " moved",
            ck.problems, ck.moved);
  } else {
    fputs("<span class=\"warn\">never recorded</span> (jobboard check)",
          f);
  }
  fputs("</td></tr>\n", f);
  fprintf(f, "<tr><th>whole board paused</th><td>%s ",
          pz->board ? "<strong class=\"warn\">yes</strong>" : "no");
  web_action_form(f, pz->board ? "resume" : "pause",
                  pz->board ? "resume the board" : "pause the board", "all",
                  "1", NULL);
  fputs("</td></tr>\n", f);
  fputs("</table>\n", f);
}

static unsigned page_overview(web_page *p, web_ctx *c,
                              struct MHD_Connection *conn) {
  (void)conn;
  FILE *f = p->f;
  jb_stats st = JB_STATS_INIT;
  st.flags = JB_STATS_NO_WALK; /* the rows give the oldest wait */
  int rc = jb_stats_read(&st, c->b);
  if (rc != JB_OK) return web_board_fail(p, rc);
  p->now_us = st.now_us;
  cli_pauses pz;
  if (cli_pauses_read(&pz, c->b) != 0) {
    jb_stats_clear(&st);
    return web_fail(p, 500, "the names' controls could not be read");
  }
  overview o = {.now_us = st.now_us};
  /* The delayed index is keyed by due time, not name: counting them by
   * name reads each one's posting (20,000 took 150-300 ms), so only a few
   * are counted here; /jobs?state=delayed lists them by name at any
   * number. */
  bool delayed_rows = st.by_state[JB_STATS_DELAYED] <= DELAYED_ROWS_MAX;
  rc = overview_gather(c->b, &o, delayed_rows);
  for (size_t i = 0; i < o.n; i++)
    if (o.rows[i]->oldest_ready_us &&
        (st.oldest_unclaimed_us == 0 ||
         o.rows[i]->oldest_ready_us < st.oldest_unclaimed_us))
      st.oldest_unclaimed_us = o.rows[i]->oldest_ready_us;
  if (rc != JB_OK) {
    overview_free(&o);
    cli_pauses_free(&pz);
    jb_stats_clear(&st);
    return rc == JB_ENOMEM ? web_fail(p, 500, "out of memory")
                           : web_board_fail(p, rc);
  }
  web_page_begin(f, "Overview", "/");
  fputs("<p>Board <code>", f);
  web_esc(f, jb_board_path(c->b));
  char when[40];
  cli_format_time(when, sizeof when, st.now_us);
  fprintf(f, "</code>, read at %s.</p>\n", when);

  fputs("<h2>Jobs by name</h2>\n", f);
  if (o.n) qsort(o.rows, o.n, sizeof *o.rows, cmp_row_ptr);
  if (o.n == 0) fputs("<p>No job on the board.</p>\n", f);
  else
    fputs("<table><tr><th>name</th><th>unclaimed</th><th>claimed</th>"
          "<th>delayed</th><th>oldest ready waits</th><th>paused</th>"
          "</tr>\n",
          f);
  for (size_t i = 0; i < o.n; i++) {
    name_row *r = o.rows[i];
    fputs("<tr><td>", f);
    web_jobs_link(f, "name", r->name, r->name);
    fputs("</td>", f);
    for (int s = 0; s < JB_STATS_STATES; s++) {
      /* A count links to those jobs. */
      fputs("<td class=\"n\"><a href=\"/jobs?name=", f);
      web_url_esc(f, r->name);
      if (s == JB_STATS_DELAYED && !delayed_rows)
        fprintf(f, "&amp;state=%s\">list</a></td>", web_where_names[s]);
      else
        fprintf(f, "&amp;state=%s\">%zu</a></td>", web_where_names[s],
                r->n[s]);
    }
    fputs("<td class=\"n\">", f);
    if (r->oldest_ready_us) web_duration(f, st.now_us - r->oldest_ready_us);
    else fputs("-", f);
    bool paused = cli_pauses_name(&pz, r->name);
    fprintf(f, "</td><td>%s", paused ? "paused " : "");
    web_action_form(f, paused ? "resume" : "pause", paused ? "resume" : "pause",
                    "name", r->name, NULL);
    fputs("</td></tr>\n", f);
  }
  if (o.n) fputs("</table>\n", f);
  if (!delayed_rows)
    fprintf(f, "<p>%zu delayed jobs are not counted by name here (more than "
            "%d: that reads every one); <a href=\"/jobs?state=delayed\">"
            "list them</a>.</p>\n", st.by_state[JB_STATS_DELAYED],
            DELAYED_ROWS_MAX);
  web_sparklines(f, c->b, st.now_us);

  fprintf(f, "<h2>Claims lapsing within %d s</h2>\n", LAPSING_S);
  /* qsort takes no NULL array, even of 0 items (UBSan). */
  if (o.n_lapsing) qsort(o.lapsing, o.n_lapsing, sizeof *o.lapsing, cmp_lapse);
  if (o.n_lapsing == 0) fputs("<p>None.</p>\n", f);
  else
    fputs("<table><tr><th>job</th><th>name</th><th>owner</th>"
          "<th>lease lapses</th></tr>\n",
          f);
  for (size_t i = 0; i < o.n_lapsing; i++) {
    lapse_row *l = &o.lapsing[i];
    fputs("<tr><td>", f);
    web_job_link(f, l->uuid, NULL);
    fputs("</td><td>", f);
    web_esc(f, l->name);
    fputs("</td><td>", f);
    web_esc(f, l->owner);
    fputs("</td><td>", f);
    web_time(f, l->expires_us, st.now_us);
    fputs("</td></tr>\n", f);
  }
  if (o.n_lapsing) fputs("</table>\n", f);

  fputs("<h2>Schedules due</h2>\n", f);
  sched_walk w = {.f = f, .now_us = st.now_us};
  rc = jb_schedule_foreach(c->b, due_visit, &w);
  if (w.due) fputs("</table>\n", f);
  else fprintf(f, "<p>None due (<a href=\"/schedules\">%zu schedules</a>)."
                  "</p>\n", w.all);
  health(f, c->b, &st, &pz);
  web_page_end(f);
  overview_free(&o);
  cli_pauses_free(&pz);
  jb_stats_clear(&st);
  return rc == JB_OK ? MHD_HTTP_OK : web_board_fail(p, rc);
}

/* ---------------------------------------------------------- /jobs */

/* Jobs a /jobs request looks at, at most: a filter no index serves (the
 * text, a name prefix) is a scan, bounded so; the page then links to go
 * on from where it stopped. */
#define SCAN_JOBS 5000

typedef struct {
  FILE *f;
  const char *state, *owner, *q, *key;
  const char *names[1];
  size_t n_names;
  size_t shown;
  char last[JB_ITER_CURSOR_MAX]; /* the cursor after the last job shown */
  bool more;      /* a job after the page matches too */
  size_t examined; /* jobs looked at */
  char seen[JB_ITER_CURSOR_MAX]; /* the cursor after the last one */
  bool cut;       /* stopped at SCAN_JOBS */
  int64_t now_us;
  int oom;
} jobs_walk;

static int jobs_visit(const jb_job *j, jb_iter *it, void *arg) {
  jobs_walk *w = arg;
  if (w->examined == SCAN_JOBS) {
    w->cut = true;
    return 1;
  }
  w->examined++;
  jb_iter_cursor(it, w->seen);
  int where = web_job_where(j);
  if (w->state && strcmp(w->state, web_where_names[where]) != 0) return 0;
  if (w->n_names && !jb_name_matches(w->names, w->n_names, jb_job_name(j)))
    return 0;
  const char *owner = jb_job_owner(j);
  if (w->owner && (owner == NULL || strcmp(owner, w->owner) != 0)) return 0;
  const char *key = jb_job_unique_key(j);
  if (w->key && (key == NULL || strcmp(key, w->key) != 0)) return 0;
  char *details = web_details_line(j);
  if (w->q && (details == NULL || strstr(details, w->q) == NULL)) {
    free(details);
    return 0;
  }
  if (w->shown == PAGE_JOBS) {
    free(details);
    w->more = true;
    return 1;
  }
  FILE *f = w->f;
  if (w->shown++ == 0)
    fputs("<table><tr><th>job</th><th>name</th><th>priority</th>"
          "<th>state</th><th>owner</th><th>posted</th><th>attempts</th>"
          "<th>details</th></tr>\n",
          f);
  fputs("<tr><td>", f);
  web_job_link(f, jb_job_uuid(j), NULL);
  fputs("</td><td>", f);
  web_esc(f, jb_job_name(j));
  fprintf(f, "</td><td>%s</td><td>%s</td><td>",
          jb_priority_name(jb_job_priority(j)), web_where_names[where]);
  web_esc(f, owner);
  fputs("</td><td>", f);
  web_time(f, jb_job_created(j), w->now_us);
  fprintf(f, "</td><td class=\"n\">%u</td><td class=\"d\">",
          jb_job_attempts(j));
  web_esc_n(f, details ? details : "", 200);
  fputs("</td></tr>\n", f);
  free(details);
  memcpy(w->last, w->seen, sizeof w->last);
  return 0;
}

/* The form's text field `key` holding `value`. */
static void field(FILE *f, const char *label, const char *key,
                  const char *value, const char *hint) {
  fprintf(f, "<label>%s <input name=\"%s\" value=\"", label, key);
  web_esc(f, value);
  fprintf(f, "\" placeholder=\"%s\"></label>\n", hint);
}

/* A query parameter of the next page's link. */
static void link_arg(FILE *f, const char *key, const char *value) {
  if (value == NULL) return;
  fprintf(f, "%s=", key);
  web_url_esc(f, value);
  fputs("&amp;", f);
}

static unsigned page_jobs(web_page *p, web_ctx *c, struct MHD_Connection *conn) {
  jobs_walk w = {.f = p->f, .now_us = p->now_us};
  w.state = web_arg(conn, "state");
  w.owner = web_arg(conn, "owner");
  w.q = web_arg(conn, "q");
  w.key = web_arg(conn, "key");
  const char *name = web_arg(conn, "name"), *after = web_arg(conn, "after");
  if (w.state && strcmp(w.state, "unclaimed") && strcmp(w.state, "claimed") &&
      strcmp(w.state, "delayed"))
    return web_fail(p, 400, "state: use unclaimed, claimed or delayed");
  if (name && strlen(name) > JB_NAME_MAX)
    return web_fail(p, 400, "name: longer than a job name can be");
  if (name) w.names[w.n_names++] = name;
  /* The listing opens at the cursor, through the filters' indexes. */
  jb_iter_options io = {.version = JB_ITER_OPTIONS_VERSION, .after = after,
                        .name = web_exact_name(name),
                        .where = web_state_tables(w.state, w.owner),
                        /* A page and the one after it tells of more. */
                        .batch = PAGE_JOBS + 1};
  jb_iter *check = NULL;
  if (jb_iter_open_opts(&check, c->b, &io) != JB_OK)
    return web_fail(p, 400, "after: not a page cursor (PRIORITY-SEQUENCE, "
                             "as the next page's link gives)");
  jb_iter_close(check);
  /* A uuid searched for: that job. */
  if (w.q && cli_is_uuid(w.q)) {
    snprintf(p->location, sizeof p->location, "/job/%s", w.q);
    return p->code = MHD_HTTP_SEE_OTHER;
  }
  FILE *f = p->f;
  web_page_begin(f, "Jobs", "/jobs");
  fputs("<form method=\"get\" action=\"/jobs\"><label>state <select "
        "name=\"state\"><option value=\"\">any</option>",
        f);
  for (int i = 0; i < JB_STATS_STATES; i++)
    fprintf(f, "<option%s>%s</option>",
            w.state && strcmp(w.state, web_where_names[i]) == 0 ? " selected" : "",
            web_where_names[i]);
  fputs("</select></label>\n", f);
  field(f, "name", "name", name, "images.*");
  field(f, "owner", "owner", w.owner, "worker-1");
  field(f, "unique key", "key", w.key, "order-42");
  field(f, "text in details", "q", w.q, "text or a uuid");
  fputs("<button>show</button> <a href=\"/jobs\">clear</a></form>\n", f);
  int rc = cli_walk_jobs_opts(c->b, &io, jobs_visit, &w);
  if (rc != JB_OK && rc != 1) return web_board_fail(p, rc);
  if (w.shown == 0) fputs("<p>No job matches.</p>\n", f);
  else fputs("</table>\n", f);
  /* A key names one job: it is cancelled from its page, and the bulk
   * action (which filters by state, name, owner and text) is not offered
   * for a filter it could not repeat. */
  if (w.shown && !w.key)
    web_action_confirm_form(f, "cancel", "cancel all matching",
                            "every unclaimed job this filter matches, not "
                            "only this page", "all", "1", "state", w.state,
                            "name", name, "owner", w.owner, "q", w.q, NULL);
  if (w.more) {
    fputs("<p><a rel=\"next\" href=\"/jobs?", f);
    link_arg(f, "state", w.state);
    link_arg(f, "name", name);
    link_arg(f, "owner", w.owner);
    link_arg(f, "key", w.key);
    link_arg(f, "q", w.q);
    fprintf(f, "after=%s\">next %d</a></p>\n", w.last, PAGE_JOBS);
  } else if (w.cut) {
    fprintf(f, "<p>Looked at %d jobs for this page (a text, a key or a name "
               "prefix is searched job by job). <a rel=\"next\" "
               "href=\"/jobs?", SCAN_JOBS);
    link_arg(f, "state", w.state);
    link_arg(f, "name", name);
    link_arg(f, "owner", w.owner);
    link_arg(f, "key", w.key);
    link_arg(f, "q", w.q);
    fprintf(f, "after=%s\">search on</a></p>\n", w.seen);
  }
  if (after) fputs("<p><a href=\"/jobs\">first page</a></p>\n", f);
  web_page_end(f);
  return MHD_HTTP_OK;
}

/* ---------------------------------------------------------- /job/UUID */

static void row_text(FILE *f, const char *label, const char *text) {
  fprintf(f, "<tr><th>%s</th><td>", label);
  web_esc(f, text ? text : "-");
  fputs("</td></tr>\n", f);
}

static void row_time(FILE *f, const char *label, int64_t us, int64_t now) {
  fprintf(f, "<tr><th>%s</th><td>", label);
  web_time(f, us, now);
  fputs("</td></tr>\n", f);
}

static void job_on_board(FILE *f, const jb_job *j, int64_t now) {
  fputs("<table>\n", f);
  row_text(f, "uuid", jb_job_uuid(j));
  fputs("<tr><th>name</th><td>", f);
  web_jobs_link(f, "name", jb_job_name(j), jb_job_name(j));
  fputs("</td></tr>\n", f);
  row_text(f, "state", web_where_names[web_job_where(j)]);
  row_text(f, "priority", jb_priority_name(jb_job_priority(j)));
  fprintf(f, "<tr><th>sequence</th><td>%" PRIu64 "</td></tr>\n",
          jb_job_sequence(j));
  row_time(f, "posted", jb_job_created(j), now);
  row_time(f, "last claim or release", jb_job_modified(j), now);
  if (jb_job_not_before(j)) row_time(f, "due", jb_job_not_before(j), now);
  if (jb_job_deadline(j)) row_time(f, "deadline to start", jb_job_deadline(j), now);
  row_text(f, "owner", jb_job_owner(j));
  if (jb_job_state(j) == JB_STATE_CLAIMED) {
    fprintf(f, "<tr><th>token</th><td>%" PRIu64 "</td></tr>\n",
            jb_job_token(j));
    if (jb_job_lease_expires(j))
      row_time(f, "lease deadline", jb_job_lease_expires(j), now);
    fputs("<tr><th>holder</th><td>", f);
    web_holder(f, NULL, NULL, jb_job_holder_pid(j), jb_job_holder_alive(j),
               now);
    fputs("</td></tr>\n", f);
  }
  fprintf(f, "<tr><th>attempts</th><td>%u of %s", jb_job_attempts(j),
          jb_job_max_attempts(j) ? "" : "the board's policy");
  if (jb_job_max_attempts(j)) fprintf(f, "%u", jb_job_max_attempts(j));
  fputs("</td></tr>\n", f);
  if (jb_job_snoozes(j))
    fprintf(f, "<tr><th>snoozes</th><td>%u</td></tr>\n", jb_job_snoozes(j));
  if (jb_job_last_reason(j)) row_text(f, "last reason", jb_job_last_reason(j));
  double pct = 0;
  const char *msg = NULL;
  int64_t at = 0;
  if (jb_job_progress(j, &pct, &msg, &at)) {
    fprintf(f, "<tr><th>progress</th><td>%.1f%% ", pct);
    web_esc(f, msg);
    fputs(", ", f);
    web_time(f, at, now);
    fputs("</td></tr>\n", f);
  }
  if (jb_job_unique_key(j)) row_text(f, "unique key", jb_job_unique_key(j));
  if (jb_job_book_name(j)) row_text(f, "book", jb_job_book_name(j));
  if (jb_job_remote(j)) row_text(f, "decided by", "Redis (a synced job)");
  fputs("</table>\n", f);
  if (jb_job_state(j) != JB_STATE_CLAIMED)
    web_action_form(f, "cancel", "cancel", "uuid", jb_job_uuid(j), NULL);
  if (web_job_where(j) == JB_STATS_DELAYED)
    web_action_form(f, "retry", "run now", "uuid", jb_job_uuid(j), NULL);
  fputs("<h2>Details</h2>\n", f);
  size_t len = 0;
  const void *d = jb_job_details(j, &len);
  web_pre_json(f, d, len);
}

static void job_completed(FILE *f, const jb_completion *h, int64_t now) {
  fputs("<p>The job left the board: its history record.</p>\n<table>\n", f);
  row_text(f, "uuid", h->uuid);
  row_text(f, "name", h->name);
  row_text(f, "ended", jb_end_name(h->end));
  row_text(f, "owner", h->owner);
  row_time(f, "posted", h->posted_us, now);
  row_time(f, "claimed", h->claimed_us, now);
  row_time(f, "completed", h->completed_us, now);
  fprintf(f, "<tr><th>attempts</th><td>%u</td></tr>\n", h->attempts);
  if (h->reason) row_text(f, "reason", h->reason);
  fputs("</table>\n<h2>Result</h2>\n", f);
  if (h->has_result) web_pre_json(f, h->result, h->result_len);
  else fputs("<p>None given.</p>\n", f);
  if (h->details) {
    fputs("<h2>Details</h2>\n", f);
    web_pre_json(f, h->details, h->details_len);
  }
}

static void job_dead(FILE *f, const jb_dead_letter *d, int64_t now) {
  fputs("<h2>Dead letter</h2>\n<table>\n", f);
  row_text(f, "cause", jb_dead_cause_name(d->cause));
  row_text(f, "reason", d->reason);
  row_text(f, "last owner", d->owner);
  fprintf(f, "<tr><th>attempts</th><td>%u</td></tr>\n", d->attempts);
  row_time(f, "dead since", d->dead_us, now);
  fputs("</table>\n", f);
  if (d->details) web_pre_json(f, d->details, d->details_len);
}

static unsigned page_job(web_page *p, web_ctx *c, const char *uuid) {
  if (!cli_is_uuid(uuid))
    return web_fail(p, 404, "not a job's address: /job/ takes a uuid");
  FILE *f = p->f;
  jb_job *j = NULL;
  int rc = jb_job_get(&j, c->b, uuid);
  if (rc == JB_OK) {
    web_page_begin(f, jb_job_name(j), NULL);
    job_on_board(f, j, p->now_us);
    web_timeline(f, c->b, uuid, j, NULL, NULL, p->now_us);
    jb_job_free(j);
    web_page_end(f);
    return MHD_HTTP_OK;
  }
  if (rc != JB_ENOTFOUND) return web_board_fail(p, rc);
  jb_completion *h = NULL;
  jb_dead_letter *d = NULL;
  rc = jb_job_completion(&h, c->b, uuid);
  if (rc != JB_OK && rc != JB_ENOTFOUND) return web_board_fail(p, rc);
  int drc = jb_dead_get(&d, c->b, uuid);
  if (drc != JB_OK && drc != JB_ENOTFOUND) {
    jb_completion_free(h);
    return web_board_fail(p, drc);
  }
  if (h == NULL && d == NULL)
    return web_fail(p, 404, "no such job: not on the board, in the history "
                             "or the dead letters");
  const char *name = h && h->name ? h->name : d && d->name ? d->name : uuid;
  web_page_begin(f, name, NULL);
  if (h) job_completed(f, h, p->now_us);
  if (d) job_dead(f, d, p->now_us);
  if (d) web_action_form(f, "requeue", "requeue", "uuid", uuid, NULL);
  if (d) web_action_form(f, "purge", "purge", "uuid", uuid, NULL);
  web_timeline(f, c->b, uuid, NULL, h, d, p->now_us);
  web_page_end(f);
  jb_completion_free(h);
  jb_dead_free(d);
  return MHD_HTTP_OK;
}

/* ---------------------------------------------------------- /claims */

typedef struct {
  char uuid[JB_UUID_STRLEN];
  char *name, *owner;
  int64_t since_us, lease_us;
  int pid;
  bool alive;
} claim_row;

typedef struct {
  claim_row *v;
  size_t n, cap, more;
  int oom;
} claims_walk;

static int claims_visit(const jb_job *j, jb_iter *it, void *arg) {
  (void)it;
  claims_walk *w = arg;
  if (jb_job_state(j) != JB_STATE_CLAIMED) return 0;
  if (w->n == ROWS_MAX) {
    w->more++;
    return 0;
  }
  if (grow(&w->v, &w->cap, w->n, sizeof *w->v)) return w->oom = 1;
  claim_row *r = &w->v[w->n++];
  memcpy(r->uuid, jb_job_uuid(j), JB_UUID_STRLEN);
  r->name = strdup(jb_job_name(j));
  r->owner = strdup(jb_job_owner(j) ? jb_job_owner(j) : "");
  r->since_us = jb_job_modified(j);
  r->lease_us = jb_job_lease_expires(j);
  r->pid = jb_job_holder_pid(j);
  r->alive = jb_job_holder_alive(j);
  if (r->name == NULL || r->owner == NULL) return w->oom = 1;
  return 0;
}

static int cmp_claim(const void *a, const void *b) {
  const claim_row *x = a, *y = b;
  int d = strcmp(x->owner, y->owner);
  if (d) return d;
  return x->since_us < y->since_us ? -1 : x->since_us > y->since_us;
}

static unsigned page_claims(web_page *p, web_ctx *c) {
  claims_walk w = {0};
  jb_iter_options io = {.version = JB_ITER_OPTIONS_VERSION,
                        .where = JB_ITER_CLAIMED};
  int rc = cli_walk_jobs_opts(c->b, &io, claims_visit, &w);
  if (w.oom) rc = JB_ENOMEM;
  FILE *f = p->f;
  if (rc == JB_OK) {
    if (w.n) qsort(w.v, w.n, sizeof *w.v, cmp_claim); /* v NULL when 0 */
    web_page_begin(f, "Claims", "/claims");
    if (w.n == 0) fputs("<p>No claim is held.</p>\n", f);
    else
      fputs("<table><tr><th>owner</th><th>job</th><th>name</th>"
            "<th>since</th><th>lease deadline</th><th>holder</th>"
            "</tr>\n",
            f);
    for (size_t i = 0; i < w.n; i++) {
      claim_row *r = &w.v[i];
      fputs("<tr><td>", f);
      web_jobs_link(f, "owner", r->owner, r->owner);
      fputs("</td><td>", f);
      web_job_link(f, r->uuid, NULL);
      fputs("</td><td>", f);
      web_esc(f, r->name);
      fputs("</td><td>", f);
      web_time(f, r->since_us, p->now_us);
      fputs("</td><td>", f);
      if (r->lease_us) web_time(f, r->lease_us, p->now_us);
      else fputs("none", f);
      fputs("</td><td>", f);
      web_holder(f, c->b, r->owner, r->pid, r->alive, p->now_us);
      fputs("</td></tr>\n", f);
    }
    if (w.n) fputs("</table>\n", f);
    if (w.more) fprintf(f, "<p>And %zu more.</p>\n", w.more);
    web_page_end(f);
  }
  for (size_t i = 0; i < w.n; i++) {
    free(w.v[i].name);
    free(w.v[i].owner);
  }
  free(w.v);
  return rc == JB_OK ? MHD_HTTP_OK : web_board_fail(p, rc);
}

/* ---------------------------------------------------------- /dead */

typedef struct {
  char *reason; /* "" when none */
  jb_dead_cause cause;
  size_t n;
  int64_t newest_us;
  char newest[JB_UUID_STRLEN];
  char *name; /* the newest's */
} dead_group;

typedef struct {
  dead_group *g;
  size_t n, cap;
  /* The newest letters, a ring of PAGE_JOBS. */
  struct dead_recent {
    char uuid[JB_UUID_STRLEN];
    char *name, *reason;
    jb_dead_cause cause;
    int64_t dead_us;
  } recent[PAGE_JOBS];
  size_t seen;
  /* Past ROWS_MAX groups: the letters of the groups not shown, and
   * those groups, told apart by "cause:reason" in a tsearch tree. */
  size_t other_letters, other_groups;
  void *other;
  int oom;
} dead_walk;

static int cmp_key(const void *a, const void *b) { return strcmp(a, b); }

/* One group past ROWS_MAX: counted, its key kept to count it once. */
static int dead_other(dead_walk *w, jb_dead_cause cause, const char *reason) {
  w->other_letters++;
  char *key = NULL;
  if (asprintf(&key, "%d:%s", (int)cause, reason) < 0) return -1;
  char **hit = tsearch(key, &w->other, cmp_key);
  if (hit == NULL) {
    free(key);
    return -1;
  }
  if (*hit == key) w->other_groups++;
  else free(key);
  return 0;
}

static int dead_visit(const jb_dead_letter *d, void *arg) {
  dead_walk *w = arg;
  const char *reason = d->reason ? d->reason : "";
  const char *name = d->name ? d->name : "";
  dead_group *g = NULL;
  for (size_t i = 0; i < w->n && g == NULL; i++)
    if (w->g[i].cause == d->cause && strcmp(w->g[i].reason, reason) == 0)
      g = &w->g[i];
  if (g == NULL && w->n == ROWS_MAX) {
    if (dead_other(w, d->cause, reason) != 0) return w->oom = 1;
  } else if (g == NULL) {
    if (grow(&w->g, &w->cap, w->n, sizeof *w->g)) return w->oom = 1;
    g = &w->g[w->n++];
    memset(g, 0, sizeof *g);
    g->cause = d->cause;
    if ((g->reason = strdup(reason)) == NULL) return w->oom = 1;
  }
  if (g) g->n++;
  if (g && d->dead_us >= g->newest_us) {
    g->newest_us = d->dead_us;
    memcpy(g->newest, d->uuid, JB_UUID_STRLEN);
    free(g->name);
    if ((g->name = strdup(name)) == NULL) return w->oom = 1;
  }
  struct dead_recent *r = &w->recent[w->seen++ % PAGE_JOBS];
  free(r->name);
  free(r->reason);
  memcpy(r->uuid, d->uuid, JB_UUID_STRLEN);
  r->cause = d->cause;
  r->dead_us = d->dead_us;
  r->name = strdup(name);
  r->reason = strdup(reason);
  if (r->name == NULL || r->reason == NULL) return w->oom = 1;
  return 0;
}

static int cmp_group(const void *a, const void *b) {
  const dead_group *x = a, *y = b;
  return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

static unsigned page_dead(web_page *p, web_ctx *c) {
  dead_walk *w = calloc(1, sizeof *w);
  if (w == NULL) return web_fail(p, 500, "out of memory");
  int rc = jb_dead_foreach(c->b, dead_visit, w);
  if (rc == JB_OK && w->oom) rc = JB_ENOMEM;
  FILE *f = p->f;
  if (rc == JB_OK) {
    web_page_begin(f, "Dead letters", "/dead");
    fprintf(f, "<p>%zu dead letters.</p>\n<h2>By cause and reason</h2>\n",
            w->seen);
    if (w->n) qsort(w->g, w->n, sizeof *w->g, cmp_group);
    if (w->n)
      fputs("<table><tr><th>cause</th><th>reason</th><th>letters</th>"
            "<th>newest</th><th>its name</th></tr>\n",
            f);
    for (size_t i = 0; i < w->n; i++) {
      dead_group *g = &w->g[i];
      fprintf(f, "<tr><td>%s</td><td>", jb_dead_cause_name(g->cause));
      web_esc(f, g->reason[0] ? g->reason : "-");
      fputs("</td>", f);
      web_td_n(f, g->n);
      fputs("<td>", f);
      web_job_link(f, g->newest, NULL);
      fputs(" ", f);
      web_time(f, g->newest_us, p->now_us);
      fputs("</td><td>", f);
      web_esc(f, g->name);
      fputs(" ", f);
      const char *rk = g->reason[0] ? "reason" : "noreason",
                 *rv = g->reason[0] ? g->reason : "1",
                 *cause = jb_dead_cause_name(g->cause);
      web_action_form(f, "requeue", "requeue all", "all", "1", "cause",
                      cause, rk, rv, NULL);
      web_action_form(f, "purge", "purge all", "all", "1", "cause", cause,
                      rk, rv, NULL);
      fputs("</td></tr>\n", f);
    }
    if (w->n) fputs("</table>\n", f);
    if (w->other_letters)
      fprintf(f, "<p>And %zu more dead letters in %zu other groups.</p>\n",
              w->other_letters, w->other_groups);
    size_t k = w->seen < PAGE_JOBS ? w->seen : PAGE_JOBS;
    fprintf(f, "<h2>The newest %zu</h2>\n", k);
    if (k)
      fputs("<table><tr><th>job</th><th>name</th><th>cause</th>"
            "<th>reason</th><th>dead since</th></tr>\n",
            f);
    for (size_t i = 0; i < k; i++) {
      struct dead_recent *r = &w->recent[(w->seen - 1 - i) % PAGE_JOBS];
      fputs("<tr><td>", f);
      web_job_link(f, r->uuid, NULL);
      fputs("</td><td>", f);
      web_esc(f, r->name);
      fprintf(f, "</td><td>%s</td><td>", jb_dead_cause_name(r->cause));
      web_esc(f, r->reason);
      fputs("</td><td>", f);
      web_time(f, r->dead_us, p->now_us);
      fputs(" ", f);
      web_action_form(f, "requeue", "requeue", "uuid", r->uuid, NULL);
      web_action_form(f, "purge", "purge", "uuid", r->uuid, NULL);
      fputs("</td></tr>\n", f);
    }
    if (k) fputs("</table>\n", f);
    web_page_end(f);
  }
  for (size_t i = 0; i < w->n; i++) {
    free(w->g[i].reason);
    free(w->g[i].name);
  }
  free(w->g);
  for (size_t i = 0; i < PAGE_JOBS; i++) {
    free(w->recent[i].name);
    free(w->recent[i].reason);
  }
  tdestroy(w->other, free);
  bool oom = w->oom;
  free(w);
  /* Out of memory in the walk: jb_errmsg is not about it. */
  return rc == JB_OK ? MHD_HTTP_OK
         : oom       ? web_fail(p, 500, "out of memory")
                     : web_board_fail(p, rc);
}

/* ---------------------------------------------------------- /schedules */

static int sched_visit(const jb_schedule *s, void *arg) {
  sched_walk *w = arg;
  FILE *f = w->f;
  if (w->all++ == 0)
    fputs("<table><tr><th>schedule</th><th>when</th><th>job</th>"
          "<th>next run</th><th>last run</th><th>runs</th><th>catch-up</th>"
          "</tr>\n",
          f);
  fputs("<tr><td>", f);
  web_esc(f, s->name);
  fputs("</td><td>", f);
  if (s->cron) {
    fputs("cron ", f);
    web_esc(f, s->cron);
  } else {
    fputs("every ", f);
    web_duration(f, s->every_ms * 1000);
  }
  fputs("</td><td>", f);
  web_jobs_link(f, "name", s->job.name, s->job.name);
  fputs("</td><td>", f);
  if (s->next_us == INT64_MAX) fputs("none", f);
  else {
    if (s->next_us <= w->now_us) fputs("<strong>due</strong> ", f);
    web_time(f, s->next_us, w->now_us);
  }
  fputs("</td><td>", f);
  web_time(f, s->last_run_us, w->now_us);
  fprintf(f, "</td><td class=\"n\">%" PRIu64 "</td><td>%s ", s->runs,
          jb_catchup_name(s->catch_up));
  web_action_form(f, "unschedule", "remove", "schedule", s->name, NULL);
  fputs("</td></tr>\n", f);
  return 0;
}

static unsigned page_schedules(web_page *p, web_ctx *c) {
  FILE *f = p->f;
  web_page_begin(f, "Schedules", "/schedules");
  sched_walk w = {.f = f, .now_us = p->now_us};
  int rc = jb_schedule_foreach(c->b, sched_visit, &w);
  if (rc != JB_OK) return web_board_fail(p, rc);
  if (w.all) fputs("</table>\n", f);
  else fputs("<p>No schedule.</p>\n", f);
  web_page_end(f);
  return MHD_HTTP_OK;
}

/* ---------------------------------------------------------- /events */

typedef struct {
  jb_board *b;
  uint64_t cursor; /* the next event to send */
  char *buf;       /* what is to be sent, from off */
  size_t len, off;
  bool started;
} sse;

/* The job's name for an event: on the board, else in the history (NULL:
 * no longer known). malloc'ed. */
static char *event_name(jb_board *b, const char *uuid) {
  char *name = NULL;
  jb_job *j = NULL;
  if (jb_job_get(&j, b, uuid) == JB_OK) {
    name = strdup(jb_job_name(j));
    jb_job_free(j);
    return name;
  }
  jb_completion *h = NULL;
  if (jb_job_completion(&h, b, uuid) == JB_OK && h->name)
    name = strdup(h->name);
  jb_completion_free(h);
  return name;
}

static void sse_event(FILE *m, jb_board *b, const jb_event *e) {
  char when[40];
  cli_format_time(when, sizeof when, e->time_us);
  char *name = event_name(b, e->uuid);
  const char *type = jb_event_type_name(e->type);
  /* A name or owner that is not UTF-8 (a posting of another producer)
   * goes as {"$bin": base64}, as in `show --json`: json_pack's s refuses
   * it, which dropped the whole event. */
  json_t *o = json_pack("{s:I, s:s, s:s, s:o, s:o, s:s, s:s?}", "seq",
                        (json_int_t)e->seq, "type", type ? type : "?", "uuid",
                        e->uuid, "name", cli_json_text(name), "owner",
                        cli_json_text(e->owner[0] ? e->owner : NULL), "time",
                        when, "priority", jb_priority_name(e->priority));
  free(name);
  /* Compact JSON holds no newline: the event is one data line. */
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (text)
    fprintf(m, "id: %" PRIu64 "\ndata: %s\n\n", e->seq, text);
  free(text);
}

/* Fill s->buf: the preamble, the next events, or a keepalive comment
 * after KEEPALIVE_MS without one. false: the stream ends (the server
 * stops, or the log cannot be read). */
static bool sse_fill(sse *s) {
  free(s->buf);
  s->buf = NULL;
  s->len = s->off = 0;
  FILE *m = open_memstream(&s->buf, &s->len);
  if (m == NULL) return false;
  bool go = true;
  if (!s->started) {
    /* Sent at once, so that the client has the headers and knows where
     * the stream starts before any event. */
    fprintf(m, "retry: 2000\n: from %" PRIu64 "\n\n", s->cursor);
    s->started = true;
  } else {
    jb_event ev[EVENTS_BATCH];
    size_t n = 0;
    uint64_t first = 0;
    int st = jb_log_wait(ev, &n, &first, s->b, s->cursor, EVENTS_BATCH,
                         KEEPALIVE_MS);
    if (st == JB_ETIMEDOUT) {
      fputs(": keepalive\n\n", m);
    } else if (st == JB_ETRIMMED) {
      fprintf(m, "event: trimmed\ndata: {\"first\":%" PRIu64 "}\n\n", first);
      s->cursor = first;
    } else if (st != JB_OK) {
      go = false; /* JB_EINTERRUPTED: the server stops */
    } else {
      for (size_t i = 0; i < n; i++) {
        sse_event(m, s->b, &ev[i]);
        s->cursor = ev[i].seq + 1;
      }
    }
  }
  if (fclose(m) != 0) return false;
  return go;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max) {
  sse *s = cls;
  (void)pos;
  while (s->off == s->len)
    if (!sse_fill(s)) return MHD_CONTENT_READER_END_OF_STREAM;
  size_t k = s->len - s->off < max ? s->len - s->off : max;
  memcpy(out, s->buf + s->off, k);
  s->off += k;
  return (ssize_t)k;
}

static void sse_free(void *cls) {
  sse *s = cls;
  free(s->buf);
  free(s);
}

static enum MHD_Result serve_events(web_ctx *c, struct MHD_Connection *conn,
                                    bool head) {
  uint64_t first = 0, next = 0;
  if (jb_log_bounds(&first, &next, c->b) != JB_OK) {
    static char failed[] = "500 the change log could not be read\n";
    return cli_http_reply(conn, 500, "text/plain; charset=utf-8", failed,
                          sizeof failed - 1, false, security_headers);
  }
  /* A reconnect goes on after the last event it had. */
  const char *last = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 "Last-Event-ID");
  uint64_t cursor = next;
  if (last) {
    char *end = NULL;
    unsigned long long v = strtoull(last, &end, 10);
    if (end != last && *end == 0 && v < next) cursor = v + 1;
  }
  static char empty[] = "";
  if (head)
    return cli_http_reply(conn, MHD_HTTP_OK, "text/event-stream", empty, 0,
                          false, security_headers);
  sse *s = calloc(1, sizeof *s);
  if (s == NULL) return MHD_NO;
  s->b = c->b;
  s->cursor = cursor;
  struct MHD_Response *r = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 4096, sse_read, s, sse_free);
  if (r == NULL) {
    sse_free(s);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                          "text/event-stream");
  for (size_t i = 0; security_headers[i]; i += 2)
    MHD_add_response_header(r, security_headers[i], security_headers[i + 1]);
  cli_http_timing(r);
  enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

/* ---------------------------------------------------------- dispatch */

/* The Host header's host is a loopback one (localhost, 127.0.0.0/8, [::1],
 * any case) and its port the listening one (none: 80). The host and the
 * port are parsed, not compared as strings, so that every spelling of a
 * loopback address is taken and nothing else: a page elsewhere that
 * reaches the port through DNS rebinding sends its own host name. */
static bool host_ok(const web_ctx *c, struct MHD_Connection *conn) {
  const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_HOST);
  if (h == NULL) return false;
  /* Bound to every address, the session guards every page. */
  if (web_any_host()) return true;
  char name[INET6_ADDRSTRLEN + 1];
  const char *port;
  size_t n;
  if (h[0] == '[') {
    port = strchr(h, ']');
    n = port ? (size_t)(port - h - 1) : sizeof name;
    if (n >= sizeof name) return false;
    memcpy(name, h + 1, n);
    name[n] = 0;
    port++;
    struct in6_addr a6;
    if (strcasecmp(name, c->addr) != 0 &&
        (inet_pton(AF_INET6, name, &a6) != 1 ||
         !(IN6_IS_ADDR_LOOPBACK(&a6) ||
           (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127))))
      return false;
  } else {
    n = strcspn(h, ":");
    if (n >= sizeof name) return false;
    memcpy(name, h, n);
    name[n] = 0;
    port = h + n;
    struct in_addr a4;
    if (strcasecmp(name, "localhost") != 0 &&
        strcasecmp(name, c->addr) != 0 &&
        !(inet_pton(AF_INET, name, &a4) == 1 &&
          (ntohl(a4.s_addr) >> 24) == 127))
      return false;
  }
  unsigned long p = 80;
  if (*port) {
    size_t digits = *port == ':' ? strspn(port + 1, "0123456789") : 0;
    if (digits == 0 || digits > 5 || port[1 + digits] != 0) return false;
    p = strtoul(port + 1, NULL, 10);
  }
  return p == c->port;
}

static const char *status_title(unsigned code) {
  switch (code) {
  case 400: return "Bad request";
  case 404: return "Not found";
  case 403: return "Forbidden";
  case 405: return "Method not allowed";
  case 421: return "Misdirected request";
  default: return "The board could not be read";
  }
}

/* The error page of `code` saying `msg`. */
static enum MHD_Result reply_error(struct MHD_Connection *conn,
                                   unsigned code, const char *msg,
                                   const char *const *headers) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) return MHD_NO;
  char title[80];
  snprintf(title, sizeof title, "%u %s", code, status_title(code));
  web_page_begin(f, title, NULL);
  fputs("<p>", f);
  web_esc(f, msg);
  fputs("</p><p><a href=\"/\">The overview</a></p>\n", f);
  web_page_end(f);
  if (fclose(f) != 0) {
    free(buf);
    return MHD_NO;
  }
  return web_reply(conn, code, "text/html; charset=utf-8", buf, len, true,
                   headers);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  web_ctx *c = cls;
  (void)version;
  cli_http_timing_start();
  if (!host_ok(c, conn))
    return reply_error(conn, MHD_HTTP_MISDIRECTED_REQUEST,
                       "This server answers to its own address and "
                       "localhost only (the Host header names another "
                       "host).",
                       NULL);
  enum MHD_Result answered;
  if (web_actions_route(c, conn, url, method, upload, upload_size, con_cls,
                        &answered))
    return answered;
  bool head = strcmp(method, "HEAD") == 0;
  if (!head && strcmp(method, "GET") != 0) {
    static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
    return reply_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                       "The dashboard is read-only: GET and HEAD only.",
                       allow);
  }
  if (strcmp(url, "/static/web.css") == 0)
    return cli_http_reply(conn, MHD_HTTP_OK, "text/css; charset=utf-8",
                          (char *)web_css, strlen(web_css), false,
                          security_headers);
  if (strcmp(url, "/static/web.js") == 0)
    return cli_http_reply(conn, MHD_HTTP_OK,
                          "text/javascript; charset=utf-8", (char *)web_js,
                          strlen(web_js), false, security_headers);
  if (strcmp(url, "/events") == 0) return serve_events(c, conn, head);
  /* A browser asks for /favicon.ico on every site: no icon (204) rather
   * than a 404 error in its console. */
  if (strcmp(url, "/favicon.ico") == 0)
    return cli_http_reply(conn, MHD_HTTP_NO_CONTENT, "image/x-icon",
                          (char *)"", 0, false, security_headers);
  web_page p = {.code = MHD_HTTP_OK, .now_us = cli_wall_now_us()};
  if ((p.f = open_memstream(&p.buf, &p.len)) == NULL) return MHD_NO;
  unsigned code;
  if (strcmp(url, "/") == 0) code = page_overview(&p, c, conn);
  else if (strcmp(url, "/jobs") == 0) code = page_jobs(&p, c, conn);
  else if (strncmp(url, "/job/", 5) == 0) code = page_job(&p, c, url + 5);
  else if (strcmp(url, "/claims") == 0) code = page_claims(&p, c);
  else if (strcmp(url, "/dead") == 0) code = page_dead(&p, c);
  else if (strcmp(url, "/schedules") == 0) code = page_schedules(&p, c);
  else if (strcmp(url, "/history") == 0) code = web_page_history(&p, c, conn);
  else code = web_fail(&p, 404, "No such page.");
  bool ok = fclose(p.f) == 0;
  if (code == MHD_HTTP_OK && ok) web_page_notes(&p);
  if (code == MHD_HTTP_OK && ok)
    return cli_http_reply(conn, code, "text/html; charset=utf-8", p.buf,
                          p.len, true, security_headers);
  free(p.buf);
  if (code == MHD_HTTP_SEE_OTHER) {
    static char empty[] = "";
    const char *const loc[] = {"Location", p.location, NULL};
    return web_reply(conn, code, "text/plain; charset=utf-8", empty, 0,
                     false, loc);
  }
  return reply_error(conn, ok ? code : 500, ok ? p.error : "out of memory",
                     NULL);
}

static void stopping(void *cls) {
  web_ctx *c = cls;
  jb_board_interrupt(c->b); /* /events' waits end */
}

#define WHY_LOOPBACK                                                         \
  "without a token (--actions or --token-file FILE) the pages have no "     \
  "login, so they are served on a loopback address only (127.0.0.1, "       \
  "[::1], localhost)"

int cmd_web(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_web, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = web_auth_init(&cli_cmd_web, o.actions, o.token_file)) != 0)
    return rc;
  /* The socket before the board: a refused address changes nothing. */
  web_ctx c = {0};
  cli_http_addr where;
  const char *spec = o.listen ? o.listen : "127.0.0.1:8080";
  int fd = cli_http_listen(&cli_cmd_web, spec, !web_auth_has_token(),
                           WHY_LOOPBACK, &where);
  if (fd < 0) return CLI_EXIT_USAGE;
  c.port = where.port;
  snprintf(c.addr, sizeof c.addr, "%s", where.host);
  if ((rc = cli_open(&c.b, &o, CLI_OPEN_READ)) != 0) {
    close(fd);
    return rc;
  }
  web_auth_start(c.b, where.loopback, where.any);
  /* A thread per connection: /events holds its connection open, waiting
   * on the change log (jb_log_wait blocks), which one polling thread for
   * every connection could not do without stalling the others. The
   * threads are bounded by the connection limit, and the idle timeout
   * frees the slot of a client that stopped reading or writing. */
  cli_http_server s = {.what = "web",
                       .handler = on_request,
                       .cls = &c,
                       .thread_per_connection = true,
                       .connection_limit = 32,
                       .memory_limit = 16 * 1024,
                       .timeout_s = 20,
                       .stopping = stopping,
                       .completed = web_actions_completed};
  char url[320];
  snprintf(url, sizeof url, strchr(where.host, ':') ? "http://[%s]:%u/"
                                                    : "http://%s:%u/",
           where.host, where.port);
  rc = cli_http_serve(fd, &s, url);
  jb_board_close(c.b);
  return rc;
}

#endif /* JB_WITH_MICROHTTPD */
