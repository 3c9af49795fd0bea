/*
 * cmd_list.c - `jobboard list` and `jobboard show`: reading jobs.
 */
#include "cli_common.h"
#include "cli_output.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define JSON_FORMS                                                             \
  "Details are stored as msgpack and printed as JSON. msgpack values JSON\n"  \
  "has no word for are printed as tagged objects (input is never read this\n" \
  "way; a job posted from JSON prints back exactly):\n"                        \
  "  binary data, or a string that is not UTF-8   {\"$bin\": \"<base64>\"}\n"  \
  "  an extension value (oslo's datetime is 1)    {\"$ext\": 1, \"$data\": \"<base64>\"}\n" \
  "  an unsigned integer above 2^63-1             {\"$uint64\": \"<digits>\"}\n" \
  "  NaN or an infinity                           {\"$float\": \"NaN\"}\n"     \
  "  a map key that is not a string               its JSON text (\"1\", \"true\"),\n" \
  "    or, beyond 256 bytes of it, \"$msgpack:<base64 of the key's msgpack>\"\n"

const cli_command cli_cmd_list = {
    "list", "list the jobs on the board, in claim order",
    "Usage: jobboard list [--unclaimed] [--name NAME]... [--limit N]\n"
    "                     [--format TEMPLATE | --no-header] [OPTIONS]\n"
    "\n"
    "List the jobs on the board in the order claim-next takes them: highest\n"
    "priority first (VERY_HIGH, HIGH, NORMAL, LOW, VERY_LOW), then oldest\n"
    "first (by sequence) within a priority. The board is streamed a few\n"
    "dozen jobs at a time, so a large board lists in constant memory and\n"
    "never holds up writers; a job posted meanwhile behind the cursor is\n"
    "listed too.\n"
    "\n"
    "Each job is one line of text, under a header row that names the\n"
    "columns (printed before the first job, whether or not stdout is a\n"
    "terminal; --no-header leaves it out), fields separated by two spaces:\n"
    "  UUID  PRIORITY  STATE  AGE  FAILED  PROGRESS  OWNER  NAME\n"
    "where AGE is the time since the job was posted (5s, 4m10s, 2h3m, 3d),\n"
    "FAILED its failed attempts: claims that ended without a completion\n"
    "(abandoned, retried, lapsed; a job claimed and not given back has 0),\n"
    "as '2/5' when it was posted with --max-attempts 5 (the count that\n"
    "sends it to the dead letters at its maximum), PROGRESS the percent its\n"
    "claimant last reported ('-' when none: `jobboard progress`), OWNER '-'\n"
    "for an unclaimed job, and control characters in the owner or name are\n"
    "written as C escapes (\\n, \\t, \\x01). STATE is\n"
    "UNCLAIMED, CLAIMED or DELAYED; an unclaimed or delayed job that no\n"
    "claim-next takes because its name or the whole board is paused\n"
    "(`jobboard pause`) reads UNCLAIMED(paused) or DELAYED(paused): the\n"
    "pauses are read once first, a walk of the ready jobs' index by name\n"
    "(about 30 ms per 200,000 ready jobs, docs/BENCHMARKS.md).\n"
    "With --json, each job is one JSON object with every field:\n"
    "  {\"uuid\": \"...\", \"name\": \"...\", \"priority\": \"HIGH\", \"sequence\": 42,\n"
    "   \"created\": \"2024-01-02T03:04:05.000006Z\", \"modified\": \"...\",\n"
    "   \"state\": \"CLAIMED\", \"owner\": \"worker-1\" (or null),\n"
    "   \"claim\": {\"token\": 17, \"lease_expires\": \"...\" (or null),\n"
    "             \"holder_pid\": 4242 (or null), \"holder_alive\": true}\n"
    "            (null when unclaimed; a claim whose lease expired or whose\n"
    "            holder process is gone reads as unclaimed),\n"
    "   \"book\": {\"name\": \"...\", \"uuid\": \"...\"} (or null), \"details\": {...},\n"
    "   \"progress\": {\"percent\": 42.5, \"message\": \"...\" (or null),\n"
    "                \"at\": \"...\"} (or null: see `jobboard progress`),\n"
    "   \"paused\": false (true: unclaimed, its name or the board paused)}\n"
    "and \"remote\" (true: Redis decides the job, it was published to a\n"
    "Redis board) and a job's life: \"not_before\", \"attempts\" (FAILED's\n"
    "count: failed attempts), \"max_attempts\", \"time_limit\", \"unique\",\n"
    "\"last_reason\", \"snoozes\", \"max_snoozes\", \"deadline\" (`jobboard\n"
    "show --help` says what each holds).\n"
    "Times are ISO-8601 UTC with microseconds.\n"
    "\n"
    CLI_HELP_LIST_FORMAT
    "\n"
    JSON_FORMS
    "\n"
    "Options:\n"
    "  --unclaimed         only jobs that can be claimed now\n"
    CLI_HELP_NAME_FILTER("jobs")
    "  --limit N           stop after N jobs (0 lists none; with --name, N\n"
    "                      of the jobs named)\n"
    "  --format TEMPLATE   each job as TEMPLATE says (above), no header;\n"
    "                      not with --json\n"
    "  --no-header         no header row\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "A posting that does not decode is reported on stderr (run 'jobboard\n"
    "check'), the listing goes on, and the exit status is 1.\n"
    "\n"
    "Examples:\n"
    "  jobboard list --unclaimed --limit 10\n"
    "  jobboard list --name resize --name 'thumbs.*'\n"
    "  jobboard list --format '{uuid}\\t{age}\\t{name}'\n"
    "  jobboard list --json | python3 -c 'import json,sys; "
    "print(sum(1 for l in sys.stdin if json.loads(l)[\"owner\"]))'\n",
    CLI_O_UNCLAIMED | CLI_O_LIMIT | CLI_O_NAMES | CLI_O_FORMAT, 0, 0, ""};

const cli_command cli_cmd_show = {
    "show", "print one job with every field",
    "Usage: jobboard show [OPTIONS] UUID\n"
    "\n"
    "Print the job UUID with every field, one 'key: value' line each:\n"
    "uuid, name, priority, sequence, created, modified, state (and a\n"
    "delayed job's due time), attempts ('N failed': its failed attempts,\n"
    "claims that ended without a completion: abandoned, retried or lapsed,\n"
    "so 0 for a job claimed and not given back; 'of at most M' with a\n"
    "maximum of its own;\n"
    "the last failure's reason), snoozes (and their maximum), deadline (to\n"
    "be claimed by: post --expires), limit (post --time-limit), unique (its\n"
    "key), owner ('-'\n"
    "when unclaimed), claim (when claimed: token, lease expiry or 'no\n"
    "expiry', holder process and whether it runs), progress (the last\n"
    "report of its claimant, 'PERCENT% MESSAGE (at TIME)', or '-': see\n"
    "`jobboard progress`), book ('-', or 'NAME UUID'), details (compact\n"
    "JSON).\n"
    "With --json, one JSON object as `jobboard list --json` prints it:\n"
    "uuid, name, priority, sequence, created, modified (ISO-8601 UTC with\n"
    "microseconds), state, owner (null when unclaimed), claim ({token,\n"
    "lease_expires, holder_pid, holder_alive} or null), book ({name, uuid}\n"
    "or null), details and progress ({percent, message, at} or null).\n"
    "\n"
    JSON_FORMS
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON ", or the job is not on the\n"
    "     board (never posted here, or consumed or trashed)\n"
    "  A malformed UUID is a usage error (2).\n"
    "\n"
    "Examples:\n"
    "  jobboard show 3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f\n"
    "  jobboard show --json \"$uuid\"\n",
    0, 1, 1, "UUID"};

/* The details as compact JSON text (malloc'ed), for text output. */
static char *details_text(const jb_job *job) {
  size_t len = 0;
  const void *d = jb_job_details(job, &len);
  json_t *v = d && len ? cli_msgpack_to_json(d, len) : json_object();
  if (v == NULL) return NULL;
  char *t = json_dumps(v, JSON_COMPACT);
  json_decref(v);
  return t;
}

/* Delayed and not due yet (when the listing was read). */
static bool not_due(const jb_job *job) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  return jb_job_not_before(job) > now;
}

static int print_job_text(const jb_job *job) {
  char created[40], modified[40];
  cli_format_time(created, sizeof created, jb_job_created(job));
  cli_format_time(modified, sizeof modified, jb_job_modified(job));
  const char *owner = jb_job_owner(job);
  const char *book = jb_job_book_name(job);
  char *details = details_text(job);
  if (details == NULL) {
    fputs("jobboard: out of memory\n", stderr);
    return -1;
  }
  printf("uuid:      %s\n", jb_job_uuid(job));
  fputs("name:      ", stdout);
  cli_put_text(stdout, jb_job_name(job));
  printf("\npriority:  %s\n", jb_priority_name(jb_job_priority(job)));
  printf("sequence:  %llu\n", (unsigned long long)jb_job_sequence(job));
  printf("created:   %s\n", created);
  printf("modified:  %s\n", modified);
  printf("state:     %s", jb_state_name(jb_job_state(job)));
  if (jb_job_not_before(job)) {
    char due[40];
    cli_format_time(due, sizeof due, jb_job_not_before(job));
    printf(not_due(job) ? " (delayed: not claimable before %s)"
                        : " (was delayed until %s)", due);
  }
  putchar('\n');
  printf("attempts:  %u failed", (unsigned)jb_job_attempts(job));
  if (jb_job_max_attempts(job))
    printf(" of at most %u", (unsigned)jb_job_max_attempts(job));
  if (jb_job_last_reason(job)) {
    fputs(", last: ", stdout);
    cli_put_text(stdout, jb_job_last_reason(job));
  }
  putchar('\n');
  printf("snoozes:   %u", (unsigned)jb_job_snoozes(job));
  if (jb_job_max_snoozes(job))
    printf(" of at most %u", (unsigned)jb_job_max_snoozes(job));
  putchar('\n');
  if (jb_job_deadline(job)) {
    char dl[40];
    cli_format_time(dl, sizeof dl, jb_job_deadline(job));
    printf("deadline:  %s (expires unless claimed by then)\n", dl);
  }
  char limit[48];
  if (jb_job_time_limit(job))
    printf("limit:     %s per claim\n",
           cli_format_duration(limit, sizeof limit, jb_job_time_limit(job)));
  if (jb_job_unique_key(job)) {
    fputs("unique:    ", stdout);
    cli_put_text(stdout, jb_job_unique_key(job));
    putchar('\n');
  }
  fputs("owner:     ", stdout);
  cli_put_text(stdout, owner ? owner : "-");
  if (owner) {
    printf("\nclaim:     token %llu", (unsigned long long)jb_job_token(job));
    int64_t exp = jb_job_lease_expires(job);
    if (exp) {
      char when[40];
      cli_format_time(when, sizeof when, exp);
      printf(", lease expires %s", when);
    } else {
      fputs(", no expiry", stdout);
    }
    if (jb_job_holder_pid(job))
      printf(", holder process %d (%s)", jb_job_holder_pid(job),
             jb_job_holder_alive(job) ? "running" : "gone");
  }
  double pct = 0;
  const char *msg = NULL;
  int64_t at = 0;
  fputs("\nprogress:  ", stdout);
  if (jb_job_progress(job, &pct, &msg, &at)) {
    char when[40];
    cli_format_time(when, sizeof when, at);
    printf("%.1f%%", pct);
    if (msg) {
      putchar(' ');
      cli_put_text(stdout, msg);
    }
    printf(" (at %s)", when);
  } else {
    fputs("-", stdout);
  }
  fputs("\nbook:      ", stdout);
  if (book) {
    cli_put_text(stdout, book);
    printf(" %s", jb_job_book_uuid(job));
  } else {
    fputs("-", stdout);
  }
  fputs("\ndetails:   ", stdout);
  cli_put_text(stdout, details);
  free(details);
  return putchar('\n') == EOF ? -1 : 0;
}

/* Print a job as --json asks; 0 or -1 (out of memory, write error). */
static int print_job(const cli_opts *o, const jb_job *job) {
  if (o->json) return cli_json_print(cli_job_to_json(job));
  return print_job_text(job);
}

/* A listed job: `paused` when no claim-next takes it for a pause; the
 * header row before the first (*header: still to print). */
static int print_listed(const cli_opts *o, const jb_job *job, bool paused,
                        bool *header) {
  int64_t now = cli_wall_now_us();
  if (o->format) return cli_output_template_print(stdout, o->format, job,
                                                  paused, now);
  if (!o->json) {
    if (*header && cli_output_list_header(stdout) != 0) return -1;
    *header = false;
    return cli_output_list_line(stdout, job, paused, now);
  }
  json_t *j = cli_job_to_json(job);
  if (j && json_object_set_new(j, "paused", json_boolean(paused)) != 0) {
    json_decref(j);
    j = NULL;
  }
  return cli_json_print(j);
}

int cmd_list(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_list, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.format && o.json)
    return cli_cmd_usage(&cli_cmd_list, "--format and --json are two "
                         "outputs: give one");
  char why[512];
  if (o.format && cli_output_template_check(o.format, why, sizeof why) != 0)
    return cli_cmd_usage(&cli_cmd_list, "--format: %s", why);
  bool header = !o.no_header;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  /* The pauses, read once before the listing: a pause or resume during a
   * long listing shows from the next one. */
  cli_pauses pauses;
  if ((rc = cli_pauses_read(&pauses, b)) != 0) {
    jb_board_close(b);
    return rc;
  }
  jb_iter *it = NULL;
  int st = jb_iter_open(&it, b, o.unclaimed ? JB_ONLY_UNCLAIMED : 0);
  if (st != JB_OK) {
    rc = cli_fail(st);
    cli_pauses_free(&pauses);
    jb_board_close(b);
    return rc;
  }
  int corrupt = 0;
  for (unsigned long long n = 0; !o.has_limit || n < o.limit;) {
    const jb_job *job = NULL;
    st = jb_iter_next(&job, it);
    if (st == JB_ECORRUPT) { /* reported; the iterator moved past it */
      cli_fail(st);
      corrupt = 1;
      continue;
    }
    if (st != JB_OK) {
      rc = cli_fail(st);
      break;
    }
    if (job == NULL) break;
    if (o.n_names && !jb_name_matches(o.names, o.n_names, jb_job_name(job)))
      continue;
    bool paused = jb_job_owner(job) == NULL &&
                  (pauses.board || cli_pauses_name(&pauses, jb_job_name(job)));
    if (print_listed(&o, job, paused, &header) != 0) {
      rc = CLI_EXIT_ERROR;
      break;
    }
    n++;
  }
  jb_iter_close(it);
  cli_pauses_free(&pauses);
  jb_board_close(b);
  return rc ? rc : corrupt ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

int cmd_show(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_show, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_check_uuid("job uuid", o.args[0])) != 0) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  jb_job *job = NULL;
  int st = jb_job_get(&job, b, o.args[0]);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (print_job(&o, job) != 0)
    rc = CLI_EXIT_ERROR;
  jb_job_free(job);
  jb_board_close(b);
  return rc;
}
