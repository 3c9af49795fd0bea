/*
 * cmd_schedule.c - periodic jobs: `schedule add|list|remove|run`
 * (jobboard.h, "Periodic jobs").
 */
#include "cli_common.h"
#include "cli_error.h"
#include "json.h"
#include "post_input.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const cli_command cli_cmd_schedule = {
    "schedule", "periodic jobs: add, list, remove, run (tick)",
    "Usage: jobboard schedule add NAME (--every DURATION | --cron 'SPEC')\n"
    "                --job-name JOBNAME [--details JSON] [--priority P]\n"
    "                [--book-name NAME --book-uuid UUID] [--catch-up skip|all]\n"
    "                [--tz ZONE] [--overlap queue|skip]\n"
    "                [--start TIME] [--max-attempts N] [--time-limit DURATION]\n"
    "                [--backoff DURATION] [--backoff-max DURATION] [--replace]\n"
    "                [OPTIONS]\n"
    "       jobboard schedule list [--json] [OPTIONS]\n"
    "       jobboard schedule remove [OPTIONS] NAME...\n"
    "       jobboard schedule run [--at TIME | --loop] [OPTIONS]\n"
    "\n"
    "A schedule is stored in the board: a name, when it runs, the job each\n"
    "run posts, and what to do about runs missed while nothing ticked it.\n"
    "Schedules post nothing by themselves: whichever processes tick the\n"
    "board (`jobboard work` does; so does `schedule run`) post the due runs.\n"
    "A tick is one commit that posts the due runs and moves the schedules\n"
    "past them, so with any number of processes ticking one board each run\n"
    "is posted exactly once.\n"
    "\n"
    "When it runs (times are UTC, the cron fields too unless --tz):\n"
    "  --every DURATION at --start, then every DURATION (1s or more, e.g.\n"
    "                   90, 5m, 1h30m); without --start the first run is one\n"
    "                   interval after the add\n"
    "  --cron 'SPEC'    at each minute that matches \"minute hour\n"
    "                   day-of-month month day-of-week\", at or after --start\n"
    "                   (default: now). Each field: *, N, N-M, or a list of\n"
    "                   them (1,15,30), each with an optional /STEP (*/15:\n"
    "                   every 15; 10-50/20: 10, 30, 50; 5/20: 5, 25, 45).\n"
    "                   Minute 0-59, hour 0-23, day 1-31, month 1-12,\n"
    "                   weekday 0-7 (0 and 7 are Sunday); months may be named\n"
    "                   JAN-DEC and weekdays SUN-SAT, in any case, in lists and\n"
    "                   ranges (MON-FRI). When both day fields are restricted,\n"
    "                   a day matching either runs (as in Vixie cron).\n"
    "                   @hourly, @daily, @midnight, @weekly, @monthly, @yearly\n"
    "                   and @annually are accepted; @reboot is not (a board\n"
    "                   has no boot). A spec no day matches (0 0 30 2 *) is\n"
    "                   refused.\n"
    "  --tz ZONE        the cron fields are local times of ZONE, an IANA name\n"
    "                   (Europe/Berlin, America/New_York) from the system's\n"
    "                   zoneinfo (tzdata); default UTC. On the day clocks go\n"
    "                   forward, a time they skip (02:30) runs at the change\n"
    "                   (03:00); on the day they go back, a time that happens\n"
    "                   twice (01:30) runs once, the first time. A spec whose\n"
    "                   minute or hour is * runs by the real minutes (none in\n"
    "                   the skipped hour, both copies of the repeated one), as\n"
    "                   cronie does.\n"
    "\n"
    "What a run posts: a job named JOBNAME with the --details (a JSON\n"
    "object, plus \"scheduled_at\": the run's time in microseconds since the\n"
    "epoch; the details must not have that key), --priority, book and the\n"
    "options --max-attempts, --time-limit, --backoff, --backoff-max as\n"
    "`jobboard post` takes them, and the unique key schedule:NAME:RUN (RUN\n"
    "the same microseconds): `show` tells which run a job is.\n"
    "\n"
    "Catch-up, when a tick finds several runs due (the board was not ticked\n"
    "for a while):\n"
    "  skip  post only the latest due run; the ones before it are skipped\n"
    "        for good (the default)\n"
    "  all   post every missed run, each once, oldest first (at most 1000\n"
    "        per schedule per tick; the next tick goes on)\n"
    "\n"
    "Overlap, when a run is due while an earlier run's job is still on the\n"
    "board (queued, delayed or running):\n"
    "  queue  post it anyway (the default, as cron starts a job whatever\n"
    "         the last one does)\n"
    "  skip   do not post it: the run is counted as skipped (list shows\n"
    "         it) and not posted later\n"
    "\n"
    "  add     store schedule NAME (1..200 bytes); exit 11 if NAME exists,\n"
    "          unless --replace (which keeps its runs count and last run, and\n"
    "          never posts a run at or before that again). Prints NAME and\n"
    "          its first run.\n"
    "  list    one line per schedule: name, when, catch-up, next run, runs\n"
    "          posted, skipped runs (with --overlap skip), job name\n"
    "          (--json: one object per line, with tz, overlap, skipped)\n"
    "  remove  delete each NAME (the jobs it posted stay)\n"
    "  run     tick once, now or at --at TIME (a simulated time: the jobs\n"
    "          are posted as of it), and print what it did: \"posted N\n"
    "          job(s) JOBNAME UUID (schedule NAME, run TIME)\" per schedule,\n"
    "          the runs skipped for overlap, or \"posted 0 jobs (next run\n"
    "          TIME)\" (--json: {\"posted\": N, \"jobs\": [...], \"skipped\":\n"
    "          [...]}).\n"
    "          With --loop: tick whenever a schedule is due, sleeping until\n"
    "          then (no polling; schedules added or removed meanwhile are\n"
    "          seen at once), printing those lines after the tick's TIME\n"
    "          (without the uuid) for each tick that posted or skipped,\n"
    "          until SIGINT or SIGTERM (exit 0).\n"
    "\n"
    "Options:\n"
    "  --every DURATION    an interval schedule\n"
    "  --cron 'SPEC'       a cron schedule (quote it)\n"
    "  --job-name JOBNAME  the name of the jobs it posts (required for add)\n"
    "  --details JSON      their details (a JSON object; @FILE or - reads it\n"
    "                      from a file or standard input, as post does)\n"
    "  --priority P        VERY_HIGH, HIGH, NORMAL (default), LOW, VERY_LOW\n"
    "  --book-name NAME, --book-uuid UUID  the taskflow logbook (both)\n"
    "  --catch-up skip|all what to post for missed runs (default skip)\n"
    "  --tz ZONE           the time zone of the cron fields (default UTC)\n"
    "  --overlap queue|skip  a run due while one is unfinished (default\n"
    "                      queue)\n"
    "  --start TIME        the first (--every) or earliest (--cron) run: ISO\n"
    "                      8601 (2026-12-01T06:00:00Z), @UNIXSECONDS,\n"
    "                      now, or from now: +10m\n"
    "  --max-attempts N, --time-limit DURATION, --backoff DURATION,\n"
    "  --backoff-max DURATION each run's job's options (see `post --help`)\n"
    "  --replace           add: replace a schedule of that name\n"
    "  --at TIME           run: tick at this time instead of now\n"
    "  --loop              run: keep ticking until signalled\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_EXIT_COMMON ", or no such schedule\n"
    "  11 add: a schedule of that name exists (without --replace)\n"
    "\n"
    "Examples:\n"
    "  jobboard schedule add nightly --cron '30 2 * * *' --job-name backup \\\n"
    "      --details '{\"target\": \"/srv\"}' --max-attempts 3\n"
    "  jobboard schedule add heartbeat --every 60 --job-name ping\n"
    "  jobboard schedule add report --cron '0 9 * * MON-FRI' \\\n"
    "      --tz Europe/Berlin --overlap skip --job-name weekly-report\n"
    "  jobboard schedule list\n"
    "  jobboard schedule run --loop &\n",
    CLI_O_SCHEDULE | CLI_O_POST | CLI_O_LIFE, 1, 4097, "SUBCOMMAND"};

/* ------------------------------------------------------------------- add */

static int add(cli_opts *o) {
  if (o->nargs != 2)
    return cli_cmd_usage(&cli_cmd_schedule, "add takes one NAME");
  if ((o->every_ms != 0) == (o->cron != NULL))
    return cli_cmd_usage(&cli_cmd_schedule, "add: give --every DURATION or "
                         "--cron 'SPEC'%s", o->cron ? ", not both" : "");
  if (o->job_name == NULL)
    return cli_cmd_usage(&cli_cmd_schedule, "add: missing --job-name");
  if (o->tz && o->cron == NULL)
    return cli_cmd_usage(&cli_cmd_schedule, "add: --tz is for --cron (an "
                         "interval runs by the elapsed time)");
  if (o->delay_ms || o->not_before_us || o->unique)
    return cli_cmd_usage(&cli_cmd_schedule, "add: --delay, --not-before and "
                         "--unique are not for a schedule (its runs are "
                         "posted when due, with a unique key of their own)");
  if (o->max_snoozes || o->expires_ms || o->expires_dead)
    return cli_cmd_usage(&cli_cmd_schedule, "add: --max-snoozes, --expires "
                         "and --expires-dead are for post (a schedule does "
                         "not keep them)");
  cli_pending p = {0};
  p.priority = JB_PRIORITY_NORMAL;
  int rc;
  if (o->priority && (rc = jb_priority_parse(&p.priority, o->priority)))
    return cli_fail(rc);
  if (o->details && (rc = cli_details_from_text(&p, o->details)) != 0)
    return rc;
  jb_schedule sc = JB_SCHEDULE_INIT;
  sc.name = o->args[1];
  sc.every_ms = o->every_ms;
  sc.cron = o->cron;
  sc.start_us = o->start_us;
  sc.catch_up = o->catch_up && strcmp(o->catch_up, "all") == 0
                    ? JB_CATCHUP_ALL
                    : JB_CATCHUP_SKIP;
  sc.tz = o->tz;
  sc.overlap = o->overlap && strcmp(o->overlap, "skip") == 0
                   ? JB_OVERLAP_SKIP
                   : JB_OVERLAP_QUEUE;
  sc.job.name = o->job_name;
  sc.job.details = p.details;
  sc.job.details_len = p.details_len;
  sc.job.priority = p.priority;
  sc.job.book_name = o->book_name;
  sc.job.book_uuid = o->book_uuid;
  sc.job.max_attempts = o->max_attempts;
  sc.job.time_limit_ms = o->time_limit_ms;
  sc.job.backoff_ms = o->backoff_ms;
  sc.job.backoff_max_ms = o->backoff_max_ms;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, o, JB_OPEN_CREATE)) == 0) {
    int st = jb_schedule_add(b, &sc, o->replace ? JB_SCHEDULE_REPLACE : 0);
    jb_schedule *got = NULL;
    if (st == JB_OK) st = jb_schedule_get(&got, b, sc.name);
    if (st == JB_EEXISTS) {
      /* The library's message names its flag; say the option here. */
      char msg[1024];
      snprintf(msg, sizeof msg, "schedule %s already exists: remove it "
               "first (schedule remove), or add it again with --replace "
               "(it keeps its runs count and last run)", sc.name);
      cli_error_line("jobboard", msg);
      rc = CLI_EXIT_EXISTS;
    } else if (st != JB_OK) {
      rc = cli_fail(st);
    } else {
      char next[40];
      cli_format_time(next, sizeof next, got->next_us);
      if (o->json ? cli_json_print(json_pack("{s:s,s:s}", "name", got->name,
                                             "next", next)) != 0
                  : printf("%s  next run %s%s%s\n", got->name, next,
                           got->tz ? "  time zone " : "",
                           got->tz ? got->tz : "") < 0)
        rc = CLI_EXIT_ERROR;
    }
    jb_schedule_free(got);
    jb_board_close(b);
  }
  cli_pending_free(&p);
  return rc;
}

/* ------------------------------------------------------------------ list */

static json_t *schedule_json(const jb_schedule *s) {
  char next[40], last[40], start[40], created[40];
  cli_format_time(next, sizeof next, s->next_us);
  cli_format_time(start, sizeof start, s->start_us);
  cli_format_time(created, sizeof created, s->created_us);
  if (s->last_run_us) cli_format_time(last, sizeof last, s->last_run_us);
  json_t *details = s->job.details
                        ? cli_msgpack_to_json(s->job.details,
                                              s->job.details_len)
                        : json_object();
  if (details == NULL) return NULL;
#define OPT_MS(v) ((v) ? json_real((v) / 1000.0) : json_null())
  json_t *job = json_pack(
      "{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name", s->job.name,
      "priority", jb_priority_name(s->job.priority), "details", details,
      "book_name", s->job.book_name ? json_string(s->job.book_name)
                                    : json_null(),
      "book_uuid", s->job.book_uuid ? json_string(s->job.book_uuid)
                                    : json_null(),
      "max_attempts",
      s->job.max_attempts ? json_integer(s->job.max_attempts) : json_null(),
      "time_limit", OPT_MS(s->job.time_limit_ms), "backoff",
      OPT_MS(s->job.backoff_ms), "backoff_max", OPT_MS(s->job.backoff_max_ms));
#undef OPT_MS
  if (job == NULL) return NULL;
  return json_pack(
      "{s:s,s:o,s:o,s:s,s:s,s:s,s:o,s:I,s:s,s:o,s:s,s:s,s:I}", "name",
      s->name, "every",
      s->cron ? json_null() : json_real(s->every_ms / 1000.0), "cron",
      s->cron ? json_string(s->cron) : json_null(), "catch_up",
      jb_catchup_name(s->catch_up), "start", start, "next", next, "last_run",
      s->last_run_us ? json_string(last) : json_null(), "runs",
      (json_int_t)s->runs, "created", created, "job", job, "tz",
      s->tz ? s->tz : "UTC", "overlap", jb_overlap_name(s->overlap),
      "skipped", (json_int_t)s->skipped);
}

static int list_one(const jb_schedule *s, void *payload) {
  const cli_opts *o = payload;
  if (o->json) return cli_json_print(schedule_json(s)) ? 1 : 0;
  char next[40], when[400], every[48];
  cli_format_time(next, sizeof next, s->next_us);
  if (s->cron)
    snprintf(when, sizeof when, "cron '%s'%s%s", s->cron,
             s->tz ? " " : "", s->tz ? s->tz : "");
  else
    snprintf(when, sizeof when, "every %s",
             cli_format_duration(every, sizeof every, s->every_ms));
  cli_put_text(stdout, s->name);
  printf("  %s  %s  next %s  runs %" PRIu64 "  ", when,
         jb_catchup_name(s->catch_up), next, s->runs);
  if (s->overlap == JB_OVERLAP_SKIP)
    printf("skipped %" PRIu64 " (overlap skip)  ", s->skipped);
  cli_put_text(stdout, s->job.name);
  return putchar('\n') == EOF ? 1 : 0;
}

/* ------------------------------------------------------------------- run */

/* What a tick did, told from the schedules before and after it (the
 * tick returns a count): for each schedule whose runs went up, its jobs
 * (found by their unique keys); for each whose skipped count went up, the
 * runs skipped for overlap. */
typedef struct {
  size_t n;
  char **names;
  uint64_t *runs, *skipped;
} sched_state;

static void sched_state_free(sched_state *st) {
  for (size_t i = 0; i < st->n; i++) free(st->names[i]);
  free(st->names);
  free(st->runs);
  free(st->skipped);
  memset(st, 0, sizeof *st);
}

static int state_one(const jb_schedule *s, void *payload) {
  sched_state *st = payload;
  size_t k = st->n + 1;
  char **nn = realloc(st->names, k * sizeof *nn);
  if (nn) st->names = nn;
  uint64_t *r = realloc(st->runs, k * sizeof *r);
  if (r) st->runs = r;
  uint64_t *sk = realloc(st->skipped, k * sizeof *sk);
  if (sk) st->skipped = sk;
  char *name = strdup(s->name);
  if (!nn || !r || !sk || !name) {
    free(name);
    return JB_ENOMEM;
  }
  st->names[st->n] = name;
  st->runs[st->n] = s->runs;
  st->skipped[st->n] = s->skipped;
  st->n = k;
  return 0;
}

static int sched_state_read(sched_state *st, jb_board *b) {
  return jb_schedule_foreach(b, state_one, st);
}

/* The uuid of the live job holding unique key `key` into uuid[] ("" when
 * none: it was claimed and finished meanwhile). */
static int job_of_key(char uuid[JB_UUID_STRLEN], jb_board *b,
                      const char *key) {
  jb_iter *it;
  uuid[0] = '\0';
  int st = jb_iter_open(&it, b, 0);
  const jb_job *j;
  while (st == JB_OK && (st = jb_iter_next(&j, it)) == JB_OK && j) {
    const char *k = jb_job_unique_key(j);
    if (k && strcmp(k, key) == 0) {
      snprintf(uuid, JB_UUID_STRLEN, "%s", jb_job_uuid(j));
      break;
    }
  }
  jb_iter_close(it);
  return st;
}

typedef struct {
  const cli_opts *o;
  jb_board *b;
  const sched_state *before;
  const char *time; /* --loop: the tick's time, or NULL */
  json_t *jobs, *skipped;
  uint64_t n_skipped;
} report_ctx;

static int report_one(const jb_schedule *s, void *payload) {
  report_ctx *c = payload;
  uint64_t runs0 = 0, skipped0 = 0;
  for (size_t i = 0; i < c->before->n; i++)
    if (strcmp(c->before->names[i], s->name) == 0) {
      runs0 = c->before->runs[i];
      skipped0 = c->before->skipped[i];
    }
  char run[40];
  cli_format_time(run, sizeof run, s->last_run_us);
  if (s->runs > runs0) {
    /* The last run is the one catch-up skip posts; catch-up all posts
     * several, of which the last is told by its key. */
    char key[JB_UNIQUE_MAX + 1], uuid[JB_UUID_STRLEN];
    snprintf(key, sizeof key, "%s%s:%" PRId64, JB_SCHEDULE_KEY_PREFIX,
             s->name, s->last_run_us);
    /* --loop does not look: a walk of the jobs per tick is too dear on a
     * large board (a one-off run pays it once). */
    int st = c->time ? (uuid[0] = '\0', JB_OK) : job_of_key(uuid, c->b, key);
    if (st != JB_OK) return st;
    uint64_t n = s->runs - runs0;
    if (c->o->json) {
      json_array_append_new(
          c->jobs, json_pack("{s:s,s:s,s:o,s:s,s:I}", "schedule", s->name,
                             "name", s->job.name, "uuid",
                             uuid[0] ? json_string(uuid) : json_null(),
                             "run", run, "count", (json_int_t)n));
    } else {
      if (c->time) printf("%s  ", c->time);
      printf("posted %" PRIu64 " job%s ", n, n == 1 ? "" : "s");
      cli_put_text(stdout, s->job.name);
      printf(" %s%s(schedule ", uuid, uuid[0] ? " " : "");
      cli_put_text(stdout, s->name);
      printf(", %srun %s)\n", n > 1 ? "last " : "", run);
    }
  }
  if (s->skipped > skipped0) {
    uint64_t n = s->skipped - skipped0;
    c->n_skipped += n;
    if (c->o->json) {
      json_array_append_new(c->skipped,
                            json_pack("{s:s,s:s,s:I}", "schedule", s->name,
                                      "run", run, "count", (json_int_t)n));
    } else {
      if (c->time) printf("%s  ", c->time);
      printf("skipped %" PRIu64 " run%s of ", n, n == 1 ? "" : "s");
      cli_put_text(stdout, s->name);
      printf(" (run %s): an earlier run is still queued or running "
             "(--overlap skip)\n", run);
    }
  }
  return 0;
}

/* Print what a tick that posted n jobs did (above); JB_OK, a jb_error or
 * CLI_EXIT_ERROR (a write error). */
static int tick_report(const cli_opts *o, jb_board *b,
                       const sched_state *before, size_t n,
                       const char *time) {
  report_ctx c = {o, b, before, time, json_array(), json_array(), 0};
  int st = jb_schedule_foreach(b, report_one, &c);
  if (st == JB_OK && n == 0 && c.n_skipped == 0 && !o->json &&
      !time) {
    int64_t next = 0;
    char when[40];
    st = jb_schedule_next_due(&next, b);
    if (next) cli_format_time(when, sizeof when, next);
    if (st == JB_OK)
      printf("posted 0 jobs (%s%s)\n", next ? "next run " : "no schedule",
             next ? when : "");
  }
  bool said = n || c.n_skipped;
  if (st == JB_OK && o->json && (said || !time)) {
    json_t *j = json_pack("{s:I,s:O,s:O}", "posted", (json_int_t)n, "jobs",
                          c.jobs, "skipped", c.skipped);
    if (j && time) json_object_set_new(j, "time", json_string(time));
    if (cli_json_print(j) != 0) st = CLI_EXIT_ERROR;
  }
  json_decref(c.jobs);
  json_decref(c.skipped);
  if (st == JB_OK && (ferror(stdout) || fflush(stdout) != 0))
    st = CLI_EXIT_ERROR;
  return st;
}

static int run(const cli_opts *o, jb_board *b) {
  if (!o->loop) {
    size_t n = 0;
    sched_state before = {0};
    int st = sched_state_read(&before, b);
    if (st == JB_OK) st = jb_schedule_tick(&n, b, o->at_us);
    if (st == JB_OK) st = tick_report(o, b, &before, n, NULL);
    sched_state_free(&before);
    return st == JB_OK ? 0 : st == CLI_EXIT_ERROR ? st : cli_fail(st);
  }
  cli_cancel_on_signals(b);
  int rc = 0;
  for (;;) {
    size_t n = 0;
    sched_state before = {0};
    int st = sched_state_read(&before, b);
    if (st == JB_OK) st = jb_schedule_tick(&n, b, 0);
    char now[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cli_format_time(now, sizeof now,
                    (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
    if (st == JB_OK) st = tick_report(o, b, &before, n, now);
    sched_state_free(&before);
    if (st != JB_OK) {
      rc = st == CLI_EXIT_ERROR ? st : cli_fail(st);
      break;
    }
    st = jb_schedule_wait(b, -1);
    if (st == JB_EINTERRUPTED) break; /* SIGINT or SIGTERM: a clean stop */
    if (st != JB_OK) {
      rc = cli_fail(st);
      break;
    }
  }
  cli_cancel_on_signals(NULL);
  return rc;
}

int cmd_schedule(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_schedule, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  const char *sub = o.args[0];
  bool is_add = strcmp(sub, "add") == 0, list = strcmp(sub, "list") == 0,
       remove = strcmp(sub, "remove") == 0, is_run = strcmp(sub, "run") == 0;
  if (!is_add && !list && !remove && !is_run)
    return cli_cmd_usage(&cli_cmd_schedule, "unknown subcommand '%s' (add, "
                         "list, remove or run)", sub);
  if (!is_add && (o.every_ms || o.cron || o.job_name || o.catch_up ||
                  o.tz || o.overlap ||
                  o.start_us || o.replace || o.details || o.priority ||
                  o.book_name || o.book_uuid || o.batch || o.max_attempts ||
                  o.time_limit_ms || o.backoff_ms || o.backoff_max_ms ||
                  o.delay_ms || o.not_before_us || o.unique ||
                  o.max_snoozes || o.expires_ms || o.expires_dead))
    return cli_cmd_usage(&cli_cmd_schedule, "%s: the schedule's options are "
                         "for add", sub);
  if (o.batch)
    return cli_cmd_usage(&cli_cmd_schedule, "add: --batch is for post");
  if (!is_run && (o.at_us || o.loop))
    return cli_cmd_usage(&cli_cmd_schedule, "--at and --loop are for run");
  if (is_run && o.at_us && o.loop)
    return cli_cmd_usage(&cli_cmd_schedule, "run: give --at or --loop, not "
                         "both");
  if ((list || is_run) && o.nargs > 1)
    return cli_cmd_usage(&cli_cmd_schedule, "%s takes no NAME", sub);
  if (remove && o.nargs < 2)
    return cli_cmd_usage(&cli_cmd_schedule, "remove: missing NAME");
  if (is_add) return add(&o);
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  if (list) {
    int st = jb_schedule_foreach(b, list_one, &o);
    if (st == 1)
      rc = CLI_EXIT_ERROR; /* list_one: a write error */
    else if (st != JB_OK)
      rc = cli_fail(st);
  } else if (remove) {
    for (int i = 1; i < o.nargs; i++) {
      int st = jb_schedule_remove(b, o.args[i]);
      if (st != JB_OK) rc = cli_fail(st);
    }
  } else {
    rc = run(&o, b);
  }
  jb_board_close(b);
  return rc;
}
