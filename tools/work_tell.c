/*
 * work_tell.c - what `jobboard work` tells its user: the prefix of each
 * forwarded line of a command's stderr, the message of the first stop
 * signal, the summary at exit (see work_tell.h).
 */
#include "work_tell.h"

#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- prefixes */

/* The placeholders of a template. */
static const char *const fields[] = {"uuid", "uuid8", "name", "who"};
enum { F_UUID, F_UUID8, F_NAME, F_WHO, F_COUNT };

/* The field at `p` (just after a '{'), its length to *len; -1 if none. */
static int field_at(const char *p, size_t *len) {
  const char *end = strchr(p, '}');
  if (end == NULL) return -1;
  *len = (size_t)(end - p);
  for (int i = 0; i < F_COUNT; i++)
    if (strlen(fields[i]) == *len && strncmp(p, fields[i], *len) == 0)
      return i;
  return -1;
}

int work_prefix_check(const char *spec, char *why, size_t size) {
  if (spec == NULL || strcmp(spec, "none") == 0 ||
      strcmp(spec, "short") == 0 || strcmp(spec, "uuid") == 0 ||
      strcmp(spec, "name") == 0)
    return 0;
  if (strchr(spec, '{') == NULL) {
    snprintf(why, size, "'%s' is not a prefix (none, short, uuid, name, or "
             "a template with {uuid}, {uuid8}, {name} or {who})", spec);
    return -1;
  }
  for (const char *p = spec; *p; p++) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
      p++;
      continue;
    }
    if (*p == '}') {
      snprintf(why, size, "'%s': a '}' without its '{' (write }} for a "
               "brace)", spec);
      return -1;
    }
    if (*p != '{') continue;
    size_t len;
    if (field_at(p + 1, &len) < 0) {
      snprintf(why, size, "'%s': unknown field '{%.*s' (the fields: {uuid}, "
               "{uuid8}, {name}, {who}; {{ for a brace)", spec,
               (int)strcspn(p + 1, "}") + 1, p + 1);
      return -1;
    }
    p += len + 1;
  }
  /* A name may be up to 255 bytes: the longest expansion must fit. */
  char test[WORK_PREFIX_MAX + 2];
  char name[256];
  memset(name, 'n', 255);
  name[255] = '\0';
  if (work_prefix_make(test, sizeof test, spec,
                       "00000000-0000-0000-0000-000000000000", name, name) >
      WORK_PREFIX_MAX) {
    snprintf(why, size, "'%s' may make a prefix over %d bytes", spec,
             WORK_PREFIX_MAX);
    return -1;
  }
  return 0;
}

/* Append `s` (n bytes) to out (*at, size), control characters as '?'. */
static void put(char *out, size_t size, size_t *at, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (*at + 1 < size) out[*at] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    (*at)++;
  }
}

size_t work_prefix_make(char *out, size_t size, const char *spec,
                        const char *uuid, const char *name, const char *who) {
  size_t at = 0;
  char tmpl[64];
  if (spec == NULL || strcmp(spec, "none") == 0) {
    spec = "";
  } else if (strcmp(spec, "short") == 0) {
    spec = "[{name} {uuid8}] ";
  } else if (strcmp(spec, "uuid") == 0 || strcmp(spec, "name") == 0) {
    snprintf(tmpl, sizeof tmpl, "[{%s}] ", spec);
    spec = tmpl;
  }
  for (const char *p = spec; *p; p++) {
    if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
      put(out, size, &at, p++, 1);
      continue;
    }
    size_t len;
    int f = *p == '{' ? field_at(p + 1, &len) : -1;
    if (f < 0) {
      put(out, size, &at, p, 1);
      continue;
    }
    const char *v = f == F_NAME ? name : f == F_WHO ? who : uuid;
    size_t vlen = strlen(v);
    /* {uuid8}: the last 8 characters, the random ones (a uuid begins
     * with its time, alike for the jobs posted together). */
    if (f == F_UUID8 && vlen > 8) v += vlen - 8, vlen = 8;
    put(out, size, &at, v, vlen);
    p += len + 1;
  }
  if (size > 0) out[at < size ? at : size - 1] = '\0';
  return at;
}

void work_put_line(const char *prefix, size_t prefix_len, const char *line,
                   size_t len) {
  /* Pieces of at most 4096 bytes (the worker's) and a prefix: one write
   * on the stack. */
  char buf[WORK_PREFIX_MAX + 4096 + 2];
  const char *p = buf;
  size_t n = prefix_len + len + 1;
  char *heap = NULL;
  if (n > sizeof buf && (heap = malloc(n)) == NULL) {
    fwrite(prefix, 1, prefix_len, stderr);
    fwrite(line, 1, len, stderr);
    fputc('\n', stderr);
    return;
  }
  char *b = heap ? heap : buf;
  memcpy(b, prefix, prefix_len);
  memcpy(b + prefix_len, line, len);
  b[n - 1] = '\n';
  p = b;
  fflush(stderr);
  while (n > 0) {
    ssize_t k = write(STDERR_FILENO, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    p += k;
    n -= (size_t)k;
  }
  free(heap);
}

/* ------------------------------------------------------------- stopping */

static const char *sig_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

void work_tell_stopping(int sig, const work_in_hand *jobs, int n,
                        int64_t grace_ms) {
  fprintf(stderr, "jobboard: work: %s: no more jobs are claimed; waiting for "
          "the %d command%s running to end, each job then completed by its "
          "exit status:\n", sig_name(sig), n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) {
    fprintf(stderr, "jobboard: work:   %s ", jobs[i].uuid);
    cli_put_text(stderr, jobs[i].name);
    fprintf(stderr, " (running %.1f s)\n", jobs[i].seconds);
  }
  fprintf(stderr, "jobboard: work: to stop now, send a second SIGINT (Ctrl-C) "
          "or SIGTERM: each command's process group gets SIGTERM (SIGKILL "
          "%.2f s later, --grace) and its job is abandoned: claimable again "
          "at once, the attempt counted (at its maximum of attempts, to the "
          "dead letters); the worker then exits 130 (SIGINT) or 143 "
          "(SIGTERM)\n", (double)grace_ms / 1000.0);
}

void work_tell_stopping_now(int sig, int n, int64_t grace_ms) {
  fprintf(stderr, "jobboard: work: second %s: stopping %d command%s "
          "(SIGTERM, SIGKILL %.2f s later) and abandoning %s job%s\n",
          sig_name(sig), n, n == 1 ? "" : "s", (double)grace_ms / 1000.0,
          n == 1 ? "its" : "their", n == 1 ? "" : "s");
}

/* -------------------------------------------------------------- summary */

void work_tally_add(work_tally *t, const char *outcome, double seconds,
                    bool timed_out) {
  t->jobs++;
  t->run_seconds += seconds;
  if (timed_out) t->timed_out++;
  if (strcmp(outcome, "consumed") == 0) t->consumed++;
  else if (strcmp(outcome, "failed") == 0) t->failed++;
  else if (strcmp(outcome, "retried") == 0) t->retried++;
  else if (strcmp(outcome, "snoozed") == 0) t->snoozed++;
  else if (strcmp(outcome, "dead") == 0) t->dead++;
  else if (strcmp(outcome, "refused") == 0) t->refused++;
  else t->abandoned++;
}

int work_tally_print(const work_tally *t, double seconds, int json) {
  const struct {
    const char *word;
    unsigned long long n;
  } by[] = {{"consumed", t->consumed}, {"failed", t->failed},
            {"retried", t->retried},   {"snoozed", t->snoozed},
            {"dead", t->dead},         {"abandoned", t->abandoned},
            {"refused", t->refused}};
  size_t nby = sizeof by / sizeof by[0];
  double mean = t->jobs ? t->run_seconds / (double)t->jobs : 0.0;
  fflush(stdout);
  fprintf(stderr, "work: summary: %llu job%s in %.2f s", t->jobs,
          t->jobs == 1 ? "" : "s", seconds);
  const char *sep = " (";
  for (size_t i = 0; i < nby; i++)
    if (by[i].n) {
      fprintf(stderr, "%s%s %llu", sep, by[i].word, by[i].n);
      sep = ", ";
    }
  if (t->timed_out)
    fprintf(stderr, "%sat a time limit %llu", sep, t->timed_out);
  if (t->jobs) fprintf(stderr, "), mean run %.2f s", mean);
  fputc('\n', stderr);
  if (!json) return 0;
  json_t *o = json_object();
  for (size_t i = 0; o && i < nby; i++)
    json_object_set_new(o, by[i].word, json_integer((json_int_t)by[i].n));
  json_t *v = json_pack("{s:{s:I,s:o,s:I,s:f,s:o}}", "summary", "jobs",
                        (json_int_t)t->jobs, "outcomes", o, "timed_out",
                        (json_int_t)t->timed_out, "seconds", seconds,
                        "mean_run_seconds",
                        t->jobs ? json_real(mean) : json_null());
  return cli_json_print(v) != 0 || fflush(stdout) != 0 ? -1 : 0;
}
