/*
 * post_input.c - the input of `jobboard post` (post_input.h): --details
 * text and --batch JSON lines, read and checked whole before the board is
 * opened.
 */
#include "post_input.h"

#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_pending_free(cli_pending *p) {
  free(p->name);
  free(p->details);
  free(p->book_name);
  free(p->book_uuid);
  free(p->unique);
}

static const char *json_type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "an object";
  case JSON_ARRAY: return "an array";
  case JSON_STRING: return "a string";
  case JSON_INTEGER: return "an integer";
  case JSON_REAL: return "a number";
  case JSON_TRUE:
  case JSON_FALSE: return "a boolean";
  case JSON_NULL: return "null";
  }
  return "a value";
}

/* Parse details text into p. `where` prefixes messages ("--details",
 * "stdin line 3: details"). Returns 0 or an exit code (printed). */
static int details_from_json(cli_pending *p, const json_t *v, const char *where) {
  if (!json_is_object(v))
    return cli_usage_error("%s: must be a JSON object like {\"key\": 1}, not "
                           "%s", where, json_type_name(v));
  if (json_object_size(v) == 0) return 0; /* the library's empty map */
  char err[160];
  if (cli_json_to_msgpack(&p->details, &p->details_len, v, err, sizeof err))
    return cli_usage_error("%s: %s", where, err);
  return 0;
}

/* Read all of `in` (at most CLI_INPUT_MAX bytes) into *out. Returns 0,
 * or an exit code after printing what went wrong (`what` names it). */
static int read_all(char **out, size_t *len, FILE *in, const char *what) {
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  if (buf == NULL) {
    fputs("jobboard: out of memory\n", stderr);
    return CLI_EXIT_ERROR;
  }
  for (;;) {
    if (n == cap) {
      if (cap > CLI_INPUT_MAX) {
        free(buf);
        return cli_usage_error("%s: longer than %zu bytes (4 times the "
                               "board's posting limit): refused unread",
                               what, CLI_INPUT_MAX);
      }
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) {
        free(buf);
        fputs("jobboard: out of memory\n", stderr);
        return CLI_EXIT_ERROR;
      }
      buf = nb;
      cap *= 2;
    }
    size_t want = cap - n;
    if (n + want > CLI_INPUT_MAX + 1) want = CLI_INPUT_MAX + 1 - n;
    size_t got = fread(buf + n, 1, want, in);
    n += got;
    if (n > CLI_INPUT_MAX) {
      free(buf);
      return cli_usage_error("%s: longer than %zu bytes (4 times the "
                             "board's posting limit): refused unread",
                             what, CLI_INPUT_MAX);
    }
    if (got < want) break;
  }
  if (ferror(in)) {
    int e = errno;
    free(buf);
    fprintf(stderr, "jobboard: %s: %s\n", what, strerror(e));
    return CLI_EXIT_ERROR;
  }
  *out = buf;
  *len = n;
  return 0;
}

int cli_details_from_text(cli_pending *p, const char *text) {
  char what[600];
  char *buf = NULL;
  size_t len = 0;
  if (text[0] == '@' || strcmp(text, "-") == 0) {
    FILE *f = stdin;
    if (text[0] == '@') {
      snprintf(what, sizeof what, "--details @%s", text + 1);
      if (text[1] == '\0')
        return cli_usage_error("--details @FILE: the file name is missing");
      if ((f = fopen(text + 1, "rb")) == NULL) {
        int e = errno;
        fprintf(stderr, "jobboard: %s: %s\n", what, strerror(e));
        return e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_ERROR;
      }
    } else {
      snprintf(what, sizeof what, "--details - (standard input)");
    }
    int rc = read_all(&buf, &len, f, what);
    if (f != stdin) fclose(f);
    if (rc) return rc;
    text = buf;
  } else {
    snprintf(what, sizeof what, "--details");
    len = strlen(text);
  }
  json_error_t je;
  json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                                        JSON_ALLOW_NUL, &je);
  free(buf);
  if (v == NULL)
    return cli_usage_error("%s: invalid JSON at line %d, column %d "
                           "(position %d): %s", what, je.line, je.column,
                           je.position, je.text);
  int rc = details_from_json(p, v, what);
  json_decref(v);
  return rc;
}

/* s[0..len) holds only blanks. Not a C-string walk: a NUL byte is not
 * the line's end, and makes it a line to parse (and refuse). */
static int is_blank(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
  return 1;
}

/* "stdin line N: " for batch messages, "" for a single post. */
static const char *where_line(size_t line) {
  static char buf[48];
  if (line == 0) return "";
  snprintf(buf, sizeof buf, "stdin line %zu: ", line);
  return buf;
}

jb_post cli_pending_post(const cli_pending *p) {
  jb_post post = JB_POST_INIT;
  post.name = p->name;
  post.details = p->details;
  post.details_len = p->details_len;
  post.priority = p->priority;
  post.book_name = p->book_name;
  post.book_uuid = p->book_uuid;
  post.unique_key = p->unique;
  post.delay_ms = p->delay_ms;
  post.not_before_us = p->not_before_us;
  post.max_attempts = p->max_attempts;
  post.time_limit_ms = p->time_limit_ms;
  post.backoff_ms = p->backoff_ms;
  post.backoff_max_ms = p->backoff_max_ms;
  post.max_snoozes = p->max_snoozes;
  post.expires_ms = p->expires_ms;
  if (p->expires_dead) post.flags |= JB_POST_EXPIRES_DEAD;
  return post;
}

/*
 * The library's own check (jb_post_check, the rules of jb_job_post), made
 * before the board is opened: a bad batch line is refused before any chunk
 * is posted, and a bad single post does not even create the board
 * directory. The CLI opens boards with the default max_posting.
 */
int cli_pending_check(const cli_pending *p, const char *where) {
  if (p->name == NULL)
    return cli_usage_error("%s\"name\" is missing", where);
  jb_post post = cli_pending_post(p);
  int st = jb_post_check(&post, 0);
  if (st == JB_EINVAL) return cli_usage_error("%s%s", where, jb_errmsg());
  return st == JB_OK ? 0 : cli_fail(st);
}

/* Take a string member into *out (strdup). Returns 0, or an exit code. */
static int string_member(char **out, const json_t *v, const char *key,
                         size_t line) {
  if (!json_is_string(v))
    return cli_usage_error("stdin line %zu: \"%s\" must be a string, not %s",
                           line, key, json_type_name(v));
  if (strlen(json_string_value(v)) != json_string_length(v))
    return cli_usage_error("stdin line %zu: \"%s\" must not contain a NUL "
                           "character", line, key);
  *out = strdup(json_string_value(v));
  if (*out == NULL) {
    fputs("jobboard: out of memory\n", stderr);
    return CLI_EXIT_ERROR;
  }
  return 0;
}

/* A duration member: seconds as a JSON number, or a string the command
 * line's options take (the same text as --delay's), into milliseconds
 * within min_ms..max_ms. Returns 0, or an exit code (printed). */
static int seconds_member(int64_t *out, const json_t *v, const char *key,
                          int64_t min_ms, int64_t max_ms, size_t line) {
  bool ok = false;
  if (json_is_number(v)) {
    double ms = json_number_value(v) * 1000.0;
    ok = ms >= (double)min_ms && ms <= (double)max_ms;
    if (ok) *out = (int64_t)(ms + 0.5) < min_ms ? min_ms : (int64_t)(ms + 0.5);
  } else if (json_is_string(v)) {
    ok = strlen(json_string_value(v)) == json_string_length(v) &&
         cli_parse_seconds(json_string_value(v), min_ms, max_ms, out);
  }
  if (ok) return 0;
  char what[48];
  if (json_is_number(v))
    snprintf(what, sizeof what, "%g", json_number_value(v));
  else if (json_is_string(v))
    snprintf(what, sizeof what, "\"%.40s\"", json_string_value(v));
  else
    snprintf(what, sizeof what, "%s", json_type_name(v));
  char lo[48], hi[48];
  return cli_usage_error("stdin line %zu: \"%s\" must be a duration from "
                         "%s to %s (seconds as a number, fractions allowed, "
                         "or a string: %s), not %s", line, key,
                         cli_format_duration(lo, sizeof lo, min_ms),
                         cli_format_duration(hi, sizeof hi, max_ms),
                         CLI_DURATION_FORMS, what);
}

/* A count member (max_attempts, max_snoozes): an integer 1..UINT32_MAX. */
static int count_member(uint32_t *out, const json_t *v, const char *key,
                        size_t line) {
  if (!json_is_integer(v) || json_integer_value(v) < 1 ||
      json_integer_value(v) > (json_int_t)UINT32_MAX)
  {
    char what[32];
    if (json_is_integer(v))
      snprintf(what, sizeof what, "%lld", (long long)json_integer_value(v));
    else
      snprintf(what, sizeof what, "%s", json_type_name(v));
    return cli_usage_error("stdin line %zu: \"%s\" must be an integer from "
                           "1 to %u, not %s", line, key, UINT32_MAX, what);
  }
  *out = (uint32_t)json_integer_value(v);
  return 0;
}

/* The life members of a line (the post options of the same names, with
 * '_' for '-'). Returns 0, -1 when `key` is none of them, or an exit code
 * (printed). */
static int life_member(cli_pending *p, const char *key, const json_t *v,
                       size_t line) {
  if (strcmp(key, "unique") == 0)
    return string_member(&p->unique, v, key, line);
  if (strcmp(key, "delay") == 0)
    return seconds_member(&p->delay_ms, v, key, 0, JB_DELAY_MAX_MS, line);
  if (strcmp(key, "time_limit") == 0)
    return seconds_member(&p->time_limit_ms, v, key, 1, JB_LEASE_MAX_MS, line);
  if (strcmp(key, "backoff") == 0)
    return seconds_member(&p->backoff_ms, v, key, 1, JB_DELAY_MAX_MS, line);
  if (strcmp(key, "backoff_max") == 0)
    return seconds_member(&p->backoff_max_ms, v, key, 1, JB_DELAY_MAX_MS,
                          line);
  if (strcmp(key, "expires") == 0)
    return seconds_member(&p->expires_ms, v, key, 1, JB_DELAY_MAX_MS, line);
  if (strcmp(key, "max_attempts") == 0)
    return count_member(&p->max_attempts, v, key, line);
  if (strcmp(key, "max_snoozes") == 0)
    return count_member(&p->max_snoozes, v, key, line);
  if (strcmp(key, "expires_dead") == 0) {
    if (!json_is_boolean(v))
      return cli_usage_error("stdin line %zu: \"expires_dead\" must be true "
                             "or false, not %s", line, json_type_name(v));
    p->expires_dead = json_is_true(v);
    return 0;
  }
  if (strcmp(key, "not_before") == 0) {
    if (!json_is_string(v) ||
        strlen(json_string_value(v)) != json_string_length(v) ||
        cli_parse_time(&p->not_before_us, json_string_value(v)) != 0)
      return cli_usage_error("stdin line %zu: \"not_before\" must be a time "
                             "as --not-before takes it (%s)", line,
                             CLI_TIME_FORMS);
    return 0;
  }
  return -1;
}

/* Check one input line and fill p. Returns 0 or an exit code (printed). */
static int parse_line(cli_pending *p, const char *text, size_t len, size_t line) {
  json_error_t je;
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
  const char *nul = memchr(text, '\0', len);
  if (nul != NULL) /* jansson would call it the end of the input */
    return cli_usage_error("stdin line %zu: a NUL byte at column %zu (JSON "
                           "text holds none; inside a string write \\u0000)",
                           line, (size_t)(nul - text) + 1);
  /* NUL is allowed in strings (details may hold one, as msgpack can);
   * string_member refuses it where a C string is needed. */
  json_t *obj = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                                          JSON_ALLOW_NUL, &je);
  if (obj == NULL)
    return cli_usage_error("stdin line %zu: invalid JSON at column %d "
                           "(position %d): %s", line, je.column, je.position,
                           je.text);
  int rc = 0;
  p->priority = JB_PRIORITY_NORMAL;
  if (!json_is_object(obj)) {
    rc = cli_usage_error("stdin line %zu: must be a JSON object with at least "
                         "\"name\", not %s", line, json_type_name(obj));
    goto out;
  }
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (strcmp(key, "name") == 0) {
      rc = string_member(&p->name, v, key, line);
    } else if (strcmp(key, "details") == 0) {
      char where[64];
      snprintf(where, sizeof where, "stdin line %zu: details", line);
      if (!json_is_null(v)) rc = details_from_json(p, v, where);
    } else if (strcmp(key, "priority") == 0) {
      char *text_prio = NULL;
      rc = string_member(&text_prio, v, key, line);
      if (rc == 0) {
        int st = jb_priority_parse(&p->priority, text_prio);
        if (st != JB_OK)
          rc = cli_usage_error("stdin line %zu: %s", line, jb_errmsg());
      }
      free(text_prio);
    } else if (strcmp(key, "book_name") == 0) {
      rc = string_member(&p->book_name, v, key, line);
    } else if (strcmp(key, "book_uuid") == 0) {
      rc = string_member(&p->book_uuid, v, key, line);
    } else if ((rc = life_member(p, key, v, line)) == -1) {
      rc = cli_usage_error("stdin line %zu: unknown key \"%s\" (expected "
                           "name, details, priority, book_name, book_uuid, "
                           "or a life option: delay, not_before, unique, "
                           "max_attempts, time_limit, backoff, backoff_max, "
                           "max_snoozes, expires, expires_dead)", line, key);
    }
    if (rc) goto out;
  }
  if (p->expires_dead && !p->expires_ms) {
    rc = cli_usage_error("stdin line %zu: \"expires_dead\" needs \"expires\" "
                         "(a deadline to start)", line);
    goto out;
  }
  rc = cli_pending_check(p, where_line(line));
out:
  json_decref(obj);
  return rc;
}

void cli_batch_free(cli_pending *jobs, size_t n) {
  for (size_t i = 0; i < n; i++) cli_pending_free(&jobs[i]);
  free(jobs);
}

/* getline with a bound: a line longer than CLI_INPUT_MAX is not read on
 * (*too_long set, what was read of it dropped). Returns the line's length
 * with its newline, -1 at the end of input (or a read error: ferror), or
 * -2 when out of memory. */
static ssize_t read_line(char **line, size_t *cap, FILE *in, bool *too_long) {
  size_t n = 0;
  *too_long = false;
  int c = EOF;
  flockfile(in);
  while ((c = getc_unlocked(in)) != EOF) {
    if (n + 2 > *cap) {
      size_t ncap = *cap ? *cap * 2 : 4096;
      char *nl = realloc(*line, ncap);
      if (nl == NULL) {
        funlockfile(in);
        return -2;
      }
      *line = nl;
      *cap = ncap;
    }
    (*line)[n++] = (char)c;
    if (c == '\n') break;
    if (n > CLI_INPUT_MAX) {
      *too_long = true;
      break;
    }
  }
  funlockfile(in);
  if (n == 0) return -1;
  (*line)[n] = '\0';
  return (ssize_t)n;
}

/* Sorts lines with a unique key by the key, then by line. */
static int by_unique(const void *a, const void *b) {
  const cli_pending *x = *(const cli_pending *const *)a;
  const cli_pending *y = *(const cli_pending *const *)b;
  int c = strcmp(x->unique, y->unique);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* A key held by two lines would let the first post and refuse the second
 * (or, within one chunk of posts, refuse both), after other lines were
 * posted: the input is refused whole instead. Returns 0 or an exit code. */
static int uniques_once(cli_pending *jobs, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += jobs[i].unique != NULL;
  if (k < 2) return 0;
  cli_pending **v = malloc(k * sizeof *v);
  if (v == NULL) {
    fputs("jobboard: out of memory reading stdin\n", stderr);
    return CLI_EXIT_ERROR;
  }
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (jobs[i].unique) v[k++] = &jobs[i];
  qsort(v, k, sizeof *v, by_unique);
  int rc = 0;
  for (size_t j = 1; j < k && rc == 0; j++)
    if (strcmp(v[j - 1]->unique, v[j]->unique) == 0)
      rc = cli_usage_error("stdin line %zu: unique key \"%.200s\" is line "
                           "%zu's too (a batch holds a key once); nothing was "
                           "posted", v[j]->line, v[j]->unique, v[j - 1]->line);
  free(v);
  return rc;
}

int cli_batch_read(cli_pending **out, size_t *nout, FILE *in) {
  cli_pending *jobs = NULL;
  size_t n = 0, cap = 0, lineno = 0;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  int rc = 0;
  bool too_long = false;
  while (rc == 0 && (len = read_line(&line, &linecap, in, &too_long)) >= 0) {
    lineno++;
    if (too_long) {
      rc = cli_usage_error("stdin line %zu: longer than %zu bytes (4 times "
                           "the board's posting limit): refused without "
                           "reading the rest; nothing was posted", lineno,
                           CLI_INPUT_MAX);
      break;
    }
    if (is_blank(line, (size_t)len)) continue;
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 256;
      cli_pending *nj = realloc(jobs, ncap * sizeof *nj);
      if (nj == NULL) {
        fputs("jobboard: out of memory reading stdin\n", stderr);
        rc = CLI_EXIT_ERROR;
        break;
      }
      jobs = nj;
      cap = ncap;
    }
    memset(&jobs[n], 0, sizeof jobs[n]);
    jobs[n].line = lineno;
    rc = parse_line(&jobs[n], line, (size_t)len, lineno);
    n++; /* counted even when bad, so that it is freed below */
  }
  if (rc == 0 && len == -2) {
    fputs("jobboard: out of memory reading stdin\n", stderr);
    rc = CLI_EXIT_ERROR;
  }
  if (rc == 0 && ferror(in)) {
    fprintf(stderr, "jobboard: reading standard input: %s\n", strerror(errno));
    rc = CLI_EXIT_ERROR;
  }
  free(line);
  if (rc == 0) rc = uniques_once(jobs, n);
  if (rc != 0) {
    cli_batch_free(jobs, n);
    jobs = NULL;
    n = 0;
  }
  *out = jobs;
  *nout = n;
  return rc;
}
