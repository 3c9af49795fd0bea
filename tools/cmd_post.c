/*
 * cmd_post.c - `jobboard post`: one job from the command line, or many
 * (`--batch`) from JSON lines on stdin.
 *
 * A batch is read and checked whole before the board is even opened, and
 * then posted in chunks of CHUNK jobs, one write transaction each. So a bad
 * line posts nothing at all, and a million lines cost a thousand commits,
 * not a million.
 */
#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Jobs per write transaction: large enough that the commit's flush is
 * amortised, small enough that a transaction's dirty pages stay modest. */
#define CHUNK 1000


const cli_command cli_cmd_post = {
    "post", "post a job (or many from stdin) and print its uuid",
    "Usage: jobboard post [OPTIONS] NAME\n"
    "       jobboard post --batch [--board DIR] [--durability MODE] [--json] < LINES\n"
    "\n"
    "Post a job named NAME and print its new uuid. The board directory is\n"
    "created (not its parents) and initialised if it does not exist yet.\n"
    "The job gets the board's next sequence number: jobs are listed and\n"
    "claimed by priority, highest first, and oldest first within a priority.\n"
    "\n"
    "With --batch, read one JSON object per line from stdin and post one\n"
    "job per line, printing one uuid per line in input order:\n"
    "  {\"name\": \"resize\", \"details\": {\"path\": \"a.png\"}, \"priority\": \"high\",\n"
    "   \"book_name\": \"my-book\", \"book_uuid\": \"0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9\"}\n"
    "Only \"name\" is required; blank lines are skipped; any other key is an\n"
    "error. Every line is read and checked before anything is posted: a bad\n"
    "line is reported with its line number and NOTHING from the input is\n"
    "posted. Valid input is posted in chunks of 1000 jobs per transaction\n"
    "(each chunk all or nothing); should the board fail mid-way (disk full),\n"
    "the uuids of the chunks already posted have been printed.\n"
    "\n"
    "Options:\n"
    "  --details JSON      the job's details: a JSON object, stored as a\n"
    "                      msgpack map (default: {}). Nesting is limited to\n"
    "                      31 levels; the whole posting to 1 MiB.\n"
    "  --priority P        VERY_HIGH, HIGH, NORMAL (default), LOW or VERY_LOW,\n"
    "                      in any case\n"
    "  --book-name NAME    the taskflow logbook this job belongs to; give\n"
    "  --book-uuid UUID    both or neither\n"
    "  --batch             post JSON lines from stdin (see above); NAME and\n"
    "                      the four options above are then given per line\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    "Output: the uuid, one per line (with --json: {\"uuid\": \"...\"}).\n"
    "\n"
    CLI_HELP_ENV
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  any other error: the board directory could not be created (its\n"
    "     parent does not exist), I/O, a corrupt board, no space left\n"
    "  2  usage error or invalid input (the message names the field and,\n"
    "     with --batch, the line); nothing was posted\n"
    "\n"
    "Examples:\n"
    "  jobboard post resize --details '{\"path\": \"a.png\"}' --priority high\n"
    "  seq 3 | sed 's/.*/{\"name\": \"job-&\"}/' | jobboard post --batch\n",
    CLI_O_POST, 0, 1, "NAME"};

/* A job read and checked, waiting to be posted. */
typedef struct {
  char *name;
  char *details; /* msgpack map, malloc'ed; NULL for {} */
  size_t details_len;
  jb_priority priority;
  char *book_name;
  char *book_uuid;
} pending;

static void pending_free(pending *p) {
  free(p->name);
  free(p->details);
  free(p->book_name);
  free(p->book_uuid);
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
static int details_from_json(pending *p, const json_t *v, const char *where) {
  if (!json_is_object(v))
    return cli_usage_error("%s: must be a JSON object like {\"key\": 1}, not "
                           "%s", where, json_type_name(v));
  if (json_object_size(v) == 0) return 0; /* the library's empty map */
  char err[160];
  if (cli_json_to_msgpack(&p->details, &p->details_len, v, err, sizeof err))
    return cli_usage_error("%s: %s", where, err);
  return 0;
}

static int details_from_text(pending *p, const char *text) {
  json_error_t je;
  json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES |
                                   JSON_ALLOW_NUL, &je);
  if (v == NULL)
    return cli_usage_error("--details: invalid JSON at line %d, column %d "
                           "(position %d): %s", je.line, je.column,
                           je.position, je.text);
  int rc = details_from_json(p, v, "--details");
  json_decref(v);
  return rc;
}

/* ------------------------------------------------------------ one post */

static int check_pending(const pending *p, const char *where);

static int print_uuid(const cli_opts *o, const char *uuid) {
  if (o->json) return cli_json_print(json_pack("{s:s}", "uuid", uuid));
  return puts(uuid) == EOF ? -1 : 0;
}

static int post_one(const cli_opts *o) {
  pending p = {0};
  p.priority = JB_PRIORITY_NORMAL;
  int rc;
  if (o->priority && (rc = jb_priority_parse(&p.priority, o->priority)) != JB_OK)
    return cli_fail(rc);
  if (o->details && (rc = details_from_text(&p, o->details)) != 0) return rc;
  /* Borrowed from argv for the check: not pending_free's to free. */
  p.name = o->args[0];
  p.book_name = (char *)o->book_name;
  p.book_uuid = (char *)o->book_uuid;
  rc = check_pending(&p, "");
  p.name = p.book_name = p.book_uuid = NULL;
  if (rc != 0) {
    pending_free(&p);
    return rc;
  }
  jb_post post = JB_POST_INIT;
  post.name = o->args[0];
  post.details = p.details;
  post.details_len = p.details_len;
  post.priority = p.priority;
  post.book_name = o->book_name;
  post.book_uuid = o->book_uuid;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, o, JB_OPEN_CREATE)) == 0) {
    char uuid[JB_UUID_STRLEN];
    int st = jb_job_post(uuid, b, &post);
    rc = st == JB_OK ? (print_uuid(o, uuid) ? CLI_EXIT_ERROR : 0) : cli_fail(st);
    jb_board_close(b);
  }
  pending_free(&p);
  return rc;
}

/* --------------------------------------------------------------- batch */

static int is_blank(const char *s) {
  for (; *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return 0;
  return 1;
}

/* "stdin line N: " for batch messages, "" for a single post. */
static const char *where_line(size_t line) {
  static char buf[48];
  if (line == 0) return "";
  snprintf(buf, sizeof buf, "stdin line %zu: ", line);
  return buf;
}

/*
 * The library's own check (jb_post_check, the rules of jb_job_post), made
 * before the board is opened: a bad batch line is refused before any chunk
 * is posted, and a bad single post does not even create the board
 * directory. The CLI opens boards with the default max_posting.
 */
static int check_pending(const pending *p, const char *where) {
  if (p->name == NULL)
    return cli_usage_error("%s\"name\" is missing", where);
  jb_post post = JB_POST_INIT;
  post.name = p->name;
  post.details = p->details;
  post.details_len = p->details_len;
  post.priority = p->priority;
  post.book_name = p->book_name;
  post.book_uuid = p->book_uuid;
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

/* Check one input line and fill p. Returns 0 or an exit code (printed). */
static int parse_line(pending *p, const char *text, size_t len, size_t line) {
  json_error_t je;
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
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
    } else {
      rc = cli_usage_error("stdin line %zu: unknown key \"%s\" (expected "
                           "name, details, priority, book_name, book_uuid)",
                           line, key);
    }
    if (rc) goto out;
  }
  rc = check_pending(p, where_line(line));
out:
  json_decref(obj);
  return rc;
}

static int post_batch(const cli_opts *o) {
  pending *jobs = NULL;
  size_t n = 0, cap = 0, lineno = 0;
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  int rc = 0;
  while (rc == 0 && (len = getline(&line, &linecap, stdin)) != -1) {
    lineno++;
    if (is_blank(line)) continue;
    if (n == cap) {
      size_t ncap = cap ? cap * 2 : 256;
      pending *nj = realloc(jobs, ncap * sizeof *nj);
      if (nj == NULL) {
        fputs("jobboard: out of memory reading stdin\n", stderr);
        rc = CLI_EXIT_ERROR;
        break;
      }
      jobs = nj;
      cap = ncap;
    }
    memset(&jobs[n], 0, sizeof jobs[n]);
    rc = parse_line(&jobs[n], line, (size_t)len, lineno);
    n++; /* counted even when bad, so that it is freed below */
  }
  if (rc == 0 && ferror(stdin)) {
    fprintf(stderr, "jobboard: reading standard input: %s\n", strerror(errno));
    rc = CLI_EXIT_ERROR;
  }
  free(line);

  jb_board *b = NULL;
  if (rc == 0 && n > 0) rc = cli_open(&b, o, JB_OPEN_CREATE);
  jb_post *posts = NULL;
  char (*uuids)[JB_UUID_STRLEN] = NULL;
  if (rc == 0 && n > 0) {
    size_t m = n < CHUNK ? n : CHUNK;
    posts = calloc(m, sizeof *posts);
    uuids = calloc(m, sizeof *uuids);
    if (posts == NULL || uuids == NULL) {
      fputs("jobboard: out of memory\n", stderr);
      rc = CLI_EXIT_ERROR;
    }
  }
  for (size_t done = 0; rc == 0 && done < n;) {
    size_t m = n - done < CHUNK ? n - done : CHUNK;
    for (size_t i = 0; i < m; i++) {
      const pending *p = &jobs[done + i];
      jb_post post = JB_POST_INIT;
      post.name = p->name;
      post.details = p->details;
      post.details_len = p->details_len;
      post.priority = p->priority;
      post.book_name = p->book_name;
      post.book_uuid = p->book_uuid;
      posts[i] = post;
    }
    int st = jb_job_post_batch(uuids, b, posts, m);
    if (st != JB_OK) {
      fflush(stdout);
      if (done == 0)
        rc = cli_fail(st);
      else {
        fprintf(stderr, "jobboard: %s (the first %zu jobs were posted; their "
                        "uuids are printed above)\n", jb_errmsg(), done);
        rc = cli_exit_code(st);
      }
      break;
    }
    for (size_t i = 0; rc == 0 && i < m; i++)
      if (print_uuid(o, uuids[i])) rc = CLI_EXIT_ERROR;
    done += m;
  }
  free(posts);
  free(uuids);
  jb_board_close(b);
  for (size_t i = 0; i < n; i++) pending_free(&jobs[i]);
  free(jobs);
  return rc;
}

int cmd_post(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_post, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.batch) {
    if (o.nargs > 0)
      return cli_cmd_usage(&cli_cmd_post, "--batch reads the jobs from stdin: "
                           "unexpected argument '%s'", o.args[0]);
    if (o.details || o.priority || o.book_name || o.book_uuid)
      return cli_cmd_usage(&cli_cmd_post, "--batch takes details, priority "
                           "and book from each input line, not from options");
    return post_batch(&o);
  }
  if (o.nargs == 0) return cli_cmd_usage(&cli_cmd_post, "missing NAME");
  return post_one(&o);
}
