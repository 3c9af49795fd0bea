/*
 * web_history.c - /history of `jobboard web`: the history records
 * (jb_history_query), newest first, 50 a page, narrowed by the filters of
 * a plain GET form (each filter a URL to share): name (a trailing '*' is
 * a prefix), outcome (a list of jb_end names), since and until (as
 * `jobboard history` takes them) and q, text in the result or the
 * reason. The history API filters by name, outcome and time itself; the
 * text is looked for here, in at most HIST_EXAMINE records a page, and
 * the page says where it stopped.
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "json.h"
#include "web.h"
#include "web_html.h"

#define HIST_PAGE 50
#define HIST_EXAMINE 5000   /* records read for one page, at most */
#define HIST_RESULT_MAX 200 /* bytes of a result in the list */
/* A cursor bounds the next page's read by time too (until_us): the
 * records are in completion order, their times within the clocks' skew
 * of the board's processes. */
#define HIST_SLACK_US 2000000

typedef struct {
  const char *name, *outcome, *since, *until, *q;
  jb_history_options o;
  uint64_t after; /* history_seq of the last record shown; 0: none */
  char prefix[JB_NAME_MAX + 1]; /* name without its '*' */
} hist_query;

/* A filter's text field. */
static void hist_input(FILE *f, const char *label, const char *key,
                       const char *value, const char *hint) {
  fprintf(f, "<label>%s <input name=\"%s\" placeholder=\"%s\" value=\"",
          label, key, hint);
  web_esc(f, value);
  fputs("\"></label>\n", f);
}

/* The filters as the query of a link (each followed by &amp;). */
static void hist_args(FILE *f, const hist_query *h) {
  const char *const kv[][2] = {{"name", h->name},   {"outcome", h->outcome},
                               {"since", h->since}, {"until", h->until},
                               {"q", h->q}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
    if (kv[i][1] == NULL) continue;
    fprintf(f, "%s=", kv[i][0]);
    web_url_esc(f, kv[i][1]);
    fputs("&amp;", f);
  }
}

/* outcome=consumed,failed: JB_HISTORY_END bits; -1 naming none. */
static int parse_ends(uint32_t *bits, const char *list) {
  *bits = 0;
  const char *s = list;
  while (*s) {
    size_t len = strcspn(s, ",");
    int found = 0;
    for (int e = 1; e < 32 && jb_end_name((jb_end)e); e++) {
      const char *n = jb_end_name((jb_end)e);
      if (strlen(n) == len && strncmp(n, s, len) == 0) {
        *bits |= JB_HISTORY_END(e);
        found = 1;
      }
    }
    if (!found) return -1;
    s += len;
    if (*s == ',') s++;
  }
  return *bits ? 0 : -1;
}

static unsigned parse(hist_query *h, web_page *p,
                      struct MHD_Connection *conn) {
  h->name = web_arg(conn, "name");
  h->outcome = web_arg(conn, "outcome");
  h->since = web_arg(conn, "since");
  h->until = web_arg(conn, "until");
  h->q = web_arg(conn, "q");
  const char *after = web_arg(conn, "after");
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  h->o = o;
  if (h->name) {
    size_t len = strlen(h->name);
    if (len > JB_NAME_MAX + 1)
      return web_fail(p, 400, "name: longer than a job name can be");
    if (len && h->name[len - 1] == '*') {
      memcpy(h->prefix, h->name, len - 1);
      h->prefix[len - 1] = '\0';
      h->o.name_prefix = h->prefix;
    }
    else h->o.name = h->name;
  }
  if (h->outcome && parse_ends(&h->o.ends, h->outcome) != 0)
    return web_fail(p, 400, "outcome: a list of consumed, failed, trashed, "
                            "revoked, lost, cancelled, dead, expired");
  if (h->since && cli_parse_time(&h->o.since_us, h->since) != 0)
    return web_fail(p, 400, "since: not a time (" CLI_TIME_FORMS ")");
  if (h->until && cli_parse_time(&h->o.until_us, h->until) != 0)
    return web_fail(p, 400, "until: not a time (" CLI_TIME_FORMS ")");
  if (h->o.since_us && h->o.until_us && h->o.until_us <= h->o.since_us)
    return web_fail(p, 400, "until: not after since");
  if (after) {
    int64_t t = 0;
    int used = 0;
    if (sscanf(after, "%" SCNd64 "-%" SCNu64 "%n", &t, &h->after, &used) != 2 ||
        after[used] != 0 || h->after == 0 || t <= 0)
      return web_fail(p, 400, "after: not a page cursor (TIME-SEQUENCE, as "
                              "the next page's link gives)");
    /* Records past the cursor completed before it, give or take the
     * skew: the store skips the later ones without decoding them. */
    if (t < INT64_MAX - HIST_SLACK_US &&
        (h->o.until_us == 0 || t + HIST_SLACK_US < h->o.until_us))
      h->o.until_us = t + HIST_SLACK_US;
    if (h->o.since_us && h->o.until_us <= h->o.since_us)
      h->o.until_us = h->o.since_us + 1;
  }
  return MHD_HTTP_OK;
}

/* The result as one line of JSON (malloc'ed; NULL when none). */
static char *result_line(const jb_completion *r) {
  if (!r->has_result) return NULL;
  json_t *v = cli_msgpack_to_json(r->result, r->result_len);
  char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  json_decref(v);
  return text;
}

static void row(FILE *f, const jb_completion *r, const char *result,
                int64_t now) {
  fputs("<tr><td>", f);
  web_time(f, r->completed_us, now);
  fputs("</td><td>", f);
  web_job_link(f, r->uuid, NULL);
  fputs("</td><td>", f);
  web_esc(f, r->name ? r->name : "-");
  fputs("</td><td>", f);
  web_esc(f, jb_end_name(r->end));
  fputs("</td><td>", f);
  web_esc(f, r->owner ? r->owner : "-");
  fprintf(f, "</td><td class=\"n\">%u</td><td class=\"n\">", r->attempts);
  if (r->claimed_us && r->posted_us && r->claimed_us >= r->posted_us)
    web_duration(f, r->claimed_us - r->posted_us);
  else fputs("-", f);
  fputs("</td><td class=\"d\">", f);
  if (result) {
    web_esc_n(f, result, HIST_RESULT_MAX);
    if (strlen(result) > HIST_RESULT_MAX) fputs("...", f);
  } else fputs("-", f);
  fputs("</td><td>", f);
  web_esc(f, r->reason ? r->reason : "");
  fputs("</td></tr>\n", f);
}

unsigned web_page_history(web_page *p, web_ctx *c,
                          struct MHD_Connection *conn) {
  hist_query h = {0};
  unsigned code = parse(&h, p, conn);
  if (code != MHD_HTTP_OK) return code;
  jb_history_iter *it = NULL;
  int rc = jb_history_query(&it, c->b, &h.o);
  if (rc != JB_OK) return web_fail(p, 400, jb_errmsg());
  FILE *f = p->f;
  web_page_begin(f, "History", "/history");
  fputs("<form method=\"get\" action=\"/history\">\n", f);
  hist_input(f, "name", "name", h.name, "images.*");
  fputs("<label>outcome <select name=\"outcome\"><option value=\"\">any"
        "</option>",
        f);
  for (int e = 1; e < 32 && jb_end_name((jb_end)e); e++)
    fprintf(f, "<option%s>%s</option>",
            h.outcome && strcmp(h.outcome, jb_end_name((jb_end)e)) == 0
                ? " selected" : "",
            jb_end_name((jb_end)e));
  fputs("</select></label>\n", f);
  hist_input(f, "since", "since", h.since, "2024-01-02T03:04Z");
  hist_input(f, "until", "until", h.until, "2024-01-02");
  hist_input(f, "text in result or reason", "q", h.q, "text");
  fputs("<button>show</button> <a href=\"/history\">clear</a></form>\n", f);
  size_t shown = 0, examined = 0;
  const jb_completion *r = NULL;
  int64_t last_us = 0;
  uint64_t last_seq = 0;
  bool more = false, stopped = false;
  while ((rc = jb_history_next(&r, it)) == JB_OK || rc == JB_ECORRUPT) {
    if (rc == JB_ECORRUPT) continue; /* `jobboard check` reports it */
    if (r == NULL) break;
    if (h.after && r->history_seq >= h.after) continue;
    if (shown == HIST_PAGE) {
      more = true;
      break;
    }
    if (++examined > HIST_EXAMINE) {
      stopped = true;
      break;
    }
    char *result = result_line(r);
    bool hit = h.q == NULL || (result && strstr(result, h.q)) ||
               (r->reason && strstr(r->reason, h.q));
    if (hit) {
      if (shown++ == 0)
        fputs("<table><tr><th>completed</th><th>job</th><th>name</th>"
              "<th>outcome</th><th>owner</th><th>attempts</th>"
              "<th>waited</th><th>result</th><th>reason</th></tr>\n",
              f);
      row(f, r, result, p->now_us);
    }
    free(result);
    last_us = r->completed_us;
    last_seq = r->history_seq;
  }
  jb_history_close(it);
  if (rc != JB_OK) {
    /* Part of the page is written: say it on the page itself. */
    fputs(shown ? "</table>\n" : "", f);
    fputs("<p class=\"warn\">The history could not be read on: ", f);
    web_esc(f, jb_errmsg());
    fputs("</p>\n", f);
    web_page_end(f);
    return MHD_HTTP_OK;
  }
  if (shown) fputs("</table>\n", f);
  else fputs("<p>No record matches.</p>\n", f);
  if (stopped)
    fprintf(f, "<p>Looked at %d records for the text: the next page goes "
               "on from there.</p>\n",
            HIST_EXAMINE);
  if (more || stopped) {
    fputs("<p><a rel=\"next\" href=\"/history?", f);
    hist_args(f, &h);
    fprintf(f, "after=%" PRId64 "-%" PRIu64 "\">next %d</a></p>\n", last_us,
            last_seq, HIST_PAGE);
  }
  if (h.after) {
    fputs("<p><a href=\"/history?", f);
    hist_args(f, &h);
    fputs("\">first page</a></p>\n", f);
  }
  web_page_end(f);
  return MHD_HTTP_OK;
}

#endif /* JB_WITH_MICROHTTPD */
