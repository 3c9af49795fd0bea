/*
 * web_spark.c - the overview's sparklines: jobs completed per minute and
 * their wait (claim time minus post time, as the history records carry
 * them: the last claim's) over the last hour, as inline SVG written here
 * (no script; drawn with classes the stylesheet styles, since the pages'
 * Content-Security-Policy allows no inline style).
 *
 * They are counted from the history records of the last hour
 * (jb_history_query with since_us), newest first, reading at most
 * SPARK_MAX records for at most SPARK_BUDGET_US: past either the older
 * minutes are left out and the caption says from when it counted.
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "web.h"
#include "web_html.h"

#define SPARK_POINTS 60                /* minutes of the last hour */
#define SPARK_STEP_US ((int64_t)60000000)
#define SPARK_MAX 200000               /* records read, at most */
#define SPARK_BUDGET_US 50000          /* and for at most this long */
#define SPARK_W 240                    /* the drawing, in SVG units */
#define SPARK_H 40

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One sparkline of `v` (SPARK_POINTS values), its values also in
 * data-values for whoever reads the page. */
static void spark(FILE *f, const char *label, const char *cls,
                  const double *v, int64_t start_us, const char *unit) {
  double max = 0;
  for (int i = 0; i < SPARK_POINTS; i++)
    if (v[i] > max) max = v[i];
  fprintf(f, "<figure class=\"spark\"><svg class=\"spark %s\" "
             "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
             "aria-label=\"%s\" data-start=\"%" PRId64 "\" data-step=\"%"
             PRId64 "\" data-values=\"",
          cls, SPARK_W, SPARK_H + 2, SPARK_W, SPARK_H + 2, label, start_us,
          SPARK_STEP_US);
  for (int i = 0; i < SPARK_POINTS; i++)
    fprintf(f, "%s%.6g", i ? " " : "", v[i]);
  fprintf(f, "\"><title>%s</title><polyline points=\"", label);
  for (int i = 0; i < SPARK_POINTS; i++) {
    double x = (double)i * SPARK_W / (SPARK_POINTS - 1);
    double y = 1 + SPARK_H - (max > 0 ? v[i] / max * SPARK_H : 0);
    fprintf(f, "%s%.1f,%.1f", i ? " " : "", x, y);
  }
  fprintf(f, "\"/></svg><figcaption>%s: ", label);
  if (strcmp(unit, "jobs") == 0) fprintf(f, "max %.0f a minute", max);
  else {
    fputs("max ", f);
    web_duration(f, (int64_t)max);
  }
  fputs("</figcaption></figure>\n", f);
}

void web_sparklines(FILE *f, jb_board *b, int64_t now_us) {
  /* Minute i covers [start + i min, start + (i + 1) min): the last one
   * ends now. */
  int64_t start = now_us - SPARK_POINTS * SPARK_STEP_US;
  double done[SPARK_POINTS] = {0}, wait[SPARK_POINTS] = {0};
  double waited[SPARK_POINTS] = {0};
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  o.since_us = start;
  o.until_us = now_us;
  jb_history_iter *it = NULL;
  fputs("<h2>The last hour</h2>\n", f);
  int rc = jb_history_query(&it, b, &o);
  size_t n = 0;
  bool cut = false;
  int64_t oldest = now_us, t0 = mono_us();
  const jb_completion *r = NULL;
  while (rc == JB_OK) {
    if (n >= SPARK_MAX ||
        ((n & 255) == 255 && mono_us() - t0 > SPARK_BUDGET_US)) {
      cut = true;
      break;
    }
    rc = jb_history_next(&r, it);
    if (rc == JB_ECORRUPT) { /* `jobboard check` reports it */
      rc = JB_OK;
      continue;
    }
    if (rc != JB_OK || r == NULL) break;
    n++;
    int64_t i = (r->completed_us - start) / SPARK_STEP_US;
    if (r->completed_us < start || i >= SPARK_POINTS) continue;
    if (r->completed_us < oldest) oldest = r->completed_us;
    done[i]++;
    if (r->claimed_us && r->posted_us && r->claimed_us >= r->posted_us) {
      wait[i] += (double)(r->claimed_us - r->posted_us);
      waited[i]++;
    }
  }
  jb_history_close(it);
  if (rc != JB_OK) {
    fputs("<p class=\"warn\">The history could not be read: ", f);
    web_esc(f, jb_errmsg());
    fputs("</p>\n", f);
    return;
  }
  for (int i = 0; i < SPARK_POINTS; i++)
    if (waited[i]) wait[i] /= waited[i];
  fputs("<div class=\"sparks\">\n", f);
  spark(f, "jobs completed per minute", "done", done, start, "jobs");
  spark(f, "mean wait from post to claim per minute", "wait", wait, start,
        "us");
  fputs("</div>\n", f);
  fprintf(f, "<p class=\"note\">From %zu history records (%.1f ms)", n,
          (double)(mono_us() - t0) / 1000);
  if (cut) {
    fputs(" (the newest ones only: counted back to ", f);
    web_time(f, oldest, now_us);
    fputs(")", f);
  }
  fputs("; a minute is on the right of the one before it.</p>\n", f);
}

#endif /* JB_WITH_MICROHTTPD */
