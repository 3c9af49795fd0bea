/*
 * cli_output.c - `jobboard list`'s readable output: the header row, the
 * columns (age, failed attempts, progress) and --format TEMPLATE.
 */
#include "cli_output.h"

#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "json.h"

void cli_output_duration(char *buf, size_t len, int64_t ms) {
  static const struct {
    char unit;
    int64_t s;
  } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
  int64_t s = ms > 0 ? ms / 1000 : 0;
  size_t i = 0;
  while (i < 3 && s < units[i].s) i++;
  int64_t big = s / units[i].s, rest = s % units[i].s;
  if (i < 3 && rest / units[i + 1].s)
    snprintf(buf, len, "%lld%c%lld%c", (long long)big, units[i].unit,
             (long long)(rest / units[i + 1].s), units[i + 1].unit);
  else
    snprintf(buf, len, "%lld%c", (long long)big, units[i].unit);
}

const char *cli_output_state(const jb_job *job, int64_t now_us) {
  return jb_job_not_before(job) > now_us ? "DELAYED"
                                         : jb_state_name(jb_job_state(job));
}

/* "42.5%", "42%" (no ".0"), or "-" without a report. */
static void progress_text(char *buf, size_t len, const jb_job *job) {
  double pct = 0;
  const char *msg = NULL;
  int64_t at = 0;
  if (!jb_job_progress(job, &pct, &msg, &at)) {
    snprintf(buf, len, "-");
    return;
  }
  snprintf(buf, len, "%.1f", pct);
  size_t n = strlen(buf);
  if (n > 2 && strcmp(buf + n - 2, ".0") == 0) buf[n - 2] = '\0';
  strncat(buf, "%", len - strlen(buf) - 1);
}

/* "2", or "2/5" with a maximum of its own. */
static void failed_text(char *buf, size_t len, const jb_job *job) {
  if (jb_job_max_attempts(job))
    snprintf(buf, len, "%u/%u", (unsigned)jb_job_attempts(job),
             (unsigned)jb_job_max_attempts(job));
  else
    snprintf(buf, len, "%u", (unsigned)jb_job_attempts(job));
}

static void age_text(char *buf, size_t len, const jb_job *job,
                     int64_t now_us) {
  cli_output_duration(buf, len, (now_us - jb_job_created(job)) / 1000);
}

int cli_output_list_header(FILE *f) {
  return fprintf(f, "%-36s  %-9s  %-9s  %-6s  %-6s  %-8s  %s  %s\n", "UUID",
                 "PRIORITY", "STATE", "AGE", "FAILED", "PROGRESS", "OWNER",
                 "NAME") < 0
             ? -1
             : 0;
}

int cli_output_list_line(FILE *f, const jb_job *job, bool paused,
                         int64_t now_us) {
  char age[32], failed[32], progress[32];
  age_text(age, sizeof age, job, now_us);
  failed_text(failed, sizeof failed, job);
  progress_text(progress, sizeof progress, job);
  const char *owner = jb_job_owner(job);
  /* "(paused)" widens STATE past its column: rare, and it is seen. */
  fprintf(f, "%s  %-9s  %-9s%s  %-6s  %-6s  %-8s  ", jb_job_uuid(job),
          jb_priority_name(jb_job_priority(job)), cli_output_state(job, now_us),
          paused ? "(paused)" : "", age, failed, progress);
  cli_put_text(f, owner ? owner : "-");
  /* At least as wide as its heading, so that NAME lines up under it for
   * the unclaimed jobs and short owners (a longer owner pushes it on). */
  for (size_t w = owner ? strlen(owner) : 1; w < sizeof "OWNER" - 1; w++)
    putc(' ', f);
  fputs("  ", f);
  cli_put_text(f, jb_job_name(job));
  return putc('\n', f) == EOF ? -1 : 0;
}

/* ------------------------------------------------------- --format TEMPLATE */

typedef struct {
  const jb_job *job;
  bool paused;
  int64_t now_us;
} field_ctx;

/* A time, or "-" for 0. */
static void put_time(FILE *f, int64_t us) {
  char t[40];
  if (us == 0) {
    fputs("-", f);
    return;
  }
  cli_format_time(t, sizeof t, us);
  fputs(t, f);
}

/* Text written for a human (control characters escaped), "-" for NULL. */
static void put_text_or_dash(FILE *f, const char *s) {
  cli_put_text(f, s ? s : "-");
}

/* Each field writes itself; -1: out of memory. */
static int f_uuid(FILE *f, const field_ctx *c) {
  fputs(jb_job_uuid(c->job), f);
  return 0;
}
static int f_name(FILE *f, const field_ctx *c) {
  cli_put_text(f, jb_job_name(c->job));
  return 0;
}
static int f_priority(FILE *f, const field_ctx *c) {
  fputs(jb_priority_name(jb_job_priority(c->job)), f);
  return 0;
}
static int f_state(FILE *f, const field_ctx *c) {
  fprintf(f, "%s%s", cli_output_state(c->job, c->now_us),
          c->paused ? "(paused)" : "");
  return 0;
}
static int f_paused(FILE *f, const field_ctx *c) {
  fputs(c->paused ? "true" : "false", f);
  return 0;
}
static int f_sequence(FILE *f, const field_ctx *c) {
  fprintf(f, "%llu", (unsigned long long)jb_job_sequence(c->job));
  return 0;
}
static int f_created(FILE *f, const field_ctx *c) {
  put_time(f, jb_job_created(c->job));
  return 0;
}
static int f_modified(FILE *f, const field_ctx *c) {
  put_time(f, jb_job_modified(c->job));
  return 0;
}
static int f_age(FILE *f, const field_ctx *c) {
  char t[32];
  age_text(t, sizeof t, c->job, c->now_us);
  fputs(t, f);
  return 0;
}
static int f_owner(FILE *f, const field_ctx *c) {
  put_text_or_dash(f, jb_job_owner(c->job));
  return 0;
}
static int f_attempts(FILE *f, const field_ctx *c) {
  fprintf(f, "%u", (unsigned)jb_job_attempts(c->job));
  return 0;
}
static int f_max_attempts(FILE *f, const field_ctx *c) {
  if (jb_job_max_attempts(c->job))
    fprintf(f, "%u", (unsigned)jb_job_max_attempts(c->job));
  else
    fputs("-", f);
  return 0;
}
static int f_progress(FILE *f, const field_ctx *c) {
  char t[32];
  progress_text(t, sizeof t, c->job);
  fputs(t, f);
  return 0;
}
static int f_message(FILE *f, const field_ctx *c) {
  double pct = 0;
  const char *msg = NULL;
  int64_t at = 0;
  put_text_or_dash(f, jb_job_progress(c->job, &pct, &msg, &at) ? msg : NULL);
  return 0;
}
static int f_due(FILE *f, const field_ctx *c) {
  put_time(f, jb_job_not_before(c->job));
  return 0;
}
static int f_book(FILE *f, const field_ctx *c) {
  put_text_or_dash(f, jb_job_book_name(c->job));
  return 0;
}
static int f_unique(FILE *f, const field_ctx *c) {
  put_text_or_dash(f, jb_job_unique_key(c->job));
  return 0;
}
static int f_details(FILE *f, const field_ctx *c) {
  size_t len = 0;
  const void *d = jb_job_details(c->job, &len);
  json_t *v = d && len ? cli_msgpack_to_json(d, len) : json_object();
  char *t = v ? json_dumps(v, JSON_COMPACT) : NULL;
  json_decref(v);
  if (t == NULL) return -1;
  cli_put_text(f, t);
  free(t);
  return 0;
}

/* Every field, in the order list --help gives them (CLI_HELP_LIST_FORMAT). */
static const struct {
  const char *name;
  int (*put)(FILE *f, const field_ctx *c);
} fields[] = {
    {"uuid", f_uuid},         {"name", f_name},
    {"priority", f_priority}, {"state", f_state},
    {"paused", f_paused},     {"sequence", f_sequence},
    {"created", f_created},   {"modified", f_modified},
    {"age", f_age},           {"owner", f_owner},
    {"attempts", f_attempts}, {"max_attempts", f_max_attempts},
    {"progress", f_progress}, {"message", f_message},
    {"due", f_due},           {"book", f_book},
    {"unique", f_unique},     {"details", f_details},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static int field_of(const char *name, size_t n) {
  for (size_t i = 0; i < NFIELDS; i++)
    if (strlen(fields[i].name) == n && strncmp(fields[i].name, name, n) == 0)
      return (int)i;
  return -1;
}

/* "the fields are: uuid, name, ..." appended to err. */
static void list_fields(char *err, size_t errlen) {
  size_t k = strlen(err);
  snprintf(err + k, errlen - k, " (fields: ");
  for (size_t i = 0; i < NFIELDS; i++) {
    k = strlen(err);
    snprintf(err + k, errlen - k, "%s%s", i ? ", " : "", fields[i].name);
  }
  k = strlen(err);
  snprintf(err + k, errlen - k, ")");
}

/* One walk for both the check (c NULL: nothing written) and the print.
 * 0, or -1 with why in err (a bad template; out of memory when printing). */
static int template_walk(const char *t, FILE *f, const field_ctx *c,
                         char *err, size_t errlen) {
  for (const char *p = t; *p;) {
    if (*p == '\\') {
      char out;
      switch (p[1]) {
      case 't': out = '\t'; break;
      case 'n': out = '\n'; break;
      case '\\': out = '\\'; break;
      case '{': out = '{'; break;
      case '}': out = '}'; break;
      case '\0':
        snprintf(err, errlen, "'%s' ends in a lone \\ (write \\\\ for a "
                 "backslash)", t);
        return -1;
      default:
        snprintf(err, errlen, "'\\%c' is not an escape (\\t, \\n, \\\\, "
                 "\\{, \\})", p[1]);
        return -1;
      }
      if (c) putc(out, f);
      p += 2;
    } else if (*p == '{') {
      const char *end = strchr(p + 1, '}');
      if (end == NULL) {
        snprintf(err, errlen, "'%s' has a { without its } (\\{ prints a "
                 "brace)", p);
        list_fields(err, errlen);
        return -1;
      }
      int i = field_of(p + 1, (size_t)(end - p - 1));
      if (i < 0) {
        snprintf(err, errlen, "'%.*s' is not a field", (int)(end - p + 1), p);
        list_fields(err, errlen);
        return -1;
      }
      if (c && fields[i].put(f, c) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      p = end + 1;
    } else {
      if (c) putc(*p, f);
      p++;
    }
  }
  return 0;
}

int cli_output_template_check(const char *tmpl, char *err, size_t errlen) {
  return template_walk(tmpl, NULL, NULL, err, errlen);
}

int cli_output_template_print(FILE *f, const char *tmpl, const jb_job *job,
                              bool paused, int64_t now_us) {
  field_ctx c = {job, paused, now_us};
  char err[64];
  if (template_walk(tmpl, f, &c, err, sizeof err) != 0) {
    fprintf(stderr, "jobboard: %s\n", err);
    return -1;
  }
  return putc('\n', f) == EOF ? -1 : 0;
}
