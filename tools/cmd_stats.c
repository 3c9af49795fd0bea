/*
 * cmd_stats.c - `jobboard stats` and `jobboard metrics`: the board's
 * figures (jb_stats_read) for a person, as JSON, and in the Prometheus
 * text exposition format (to stdout, or served over HTTP with
 * libmicrohttpd when configure found it).
 */
#include "config.h"

#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef JB_WITH_REDIS
#include "jobboard_sync.h"
#endif

#ifdef JB_WITH_MICROHTTPD
#include <pthread.h>
#include <unistd.h>

#include "cli_http.h"
#endif

const cli_command cli_cmd_stats = {
    "stats", "show the board's figures: jobs, claims, completions, file",
    "Usage: jobboard stats [--by-name] [OPTIONS]\n"
    "\n"
    "Show the board's figures, all read in one read transaction (one\n"
    "moment of the board; writers go on meanwhile). It costs O(jobs on the\n"
    "board): the ready, claims and delayed indexes are walked once each\n"
    "(see docs/BENCHMARKS.md for a board of a million jobs). Sections:\n"
    "  jobs          on the board, by state (unclaimed: claimable now,\n"
    "                a lapsed claim's job too, as `list` shows it; claimed:\n"
    "                the claim held; delayed: not claimable before a due time, and\n"
    "                how many of those are due already) and by priority;\n"
    "                the dead letters; how long the longest-waiting\n"
    "                unclaimed job has waited (since its post or its last\n"
    "                abandon)\n"
    "  claims        held claims by kind: bound to a holder process,\n"
    "                leased, plain (held until released); lapsing: a lease\n"
    "                expired or a holder process gone, its record not yet\n"
    "                returned (the next claim-next returns it; the job\n"
    "                counts as unclaimed above)\n"
    "  completions   history records of the last minute and the last hour,\n"
    "                by outcome (consumed, failed, trashed, revoked, lost,\n"
    "                cancelled, dead, expired), and how many the history\n"
    "                keeps\n"
    "  retention     the bounds the board's writers prune to (jobboard\n"
    "                retention): history records and dead letters kept,\n"
    "                and the age of the oldest of each (none: no bound)\n"
    "  totals        counters the board keeps since it was made (each\n"
    "                raised in the write that made the change; boards\n"
    "                written by releases before them count from the first\n"
    "                write of this one): jobs posted, claims, abandons,\n"
    "                lapses, and completions by outcome\n"
    "  change log    the first and last sequence kept\n"
    "  file          the map size, the page size, the pages in use, and\n"
    "                the read transactions live (this one included)\n"
    "  sync          on a board synced with Redis: what `jobboard status`\n"
    "                shows first (replicator running, connected, lag,\n"
    "                unpublished jobs), read right after the transaction\n"
    "  paused        whether the whole board is paused and how many names\n"
    "                are (`jobboard pause`), and how many names have a rate\n"
    "                limit (`jobboard rate`), read right after the\n"
    "                transaction from the names' index (`jobboard queues`)\n"
    "With --by-name, also the jobs on the board by name and state (each\n"
    "job's posting is read: slower on a large board), and whether each\n"
    "name is paused on its own.\n"
    "With --json, one object: {\"time\", \"jobs\": {\"total\", \"unclaimed\",\n"
    "\"claimed\", \"delayed\", \"delayed_due\", \"dead_letters\",\n"
    "\"oldest_unclaimed_seconds\" (null: none), \"by_priority\": {PRIORITY:\n"
    "{\"unclaimed\", \"claimed\", \"delayed\"}...}}, \"claims\": {\"bound\",\n"
    "\"leased\", \"plain\", \"lapsing_lease\", \"lapsing_holder\"},\n"
    "\"completions\": {\"last_minute\": {OUTCOME: N...}, \"last_hour\": {...},\n"
    "\"history\"}, \"retention\": {\"history_max\", \"history_max_age\",\n"
    "\"dead_max\", \"dead_max_age\"} (seconds; null: no bound),\n"
    "\"totals\": {\"posted\", \"claimed\", \"abandoned\",\n"
    "\"lapsed\", \"snoozed\", \"outcomes\": {OUTCOME: N...}}, \"log\": {\"first\", \"last\"}\n"
    "(null when empty), \"file\": {\"map_size\", \"page_size\", \"pages_used\",\n"
    "\"readers\", \"readers_max\"}, \"sync\": {...} or null, \"paused\":\n"
    "{\"board\": true|false, \"names\": [NAME...]}, \"rate_limited\": {NAME:\n"
    "{\"rate\", \"period_s\"}...}, and with --by-name\n"
    "\"by_name\": {NAME: {\"unclaimed\", \"claimed\", \"delayed\", \"paused\"}...}}.\n"
    "\n"
    "Options:\n"
    "  --by-name           also count the jobs by name (above)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Examples:\n"
    "  jobboard stats --board /srv/board\n"
    "  jobboard stats --json | jq .jobs.unclaimed\n",
    CLI_O_BY_NAME, 0, 0, ""};

const cli_command cli_cmd_metrics = {
    "metrics", "print (or serve over HTTP) the board's Prometheus metrics",
    "Usage: jobboard metrics [--by-name] [--listen ADDR:PORT] [OPTIONS]\n"
    "\n"
    "Print the figures of `jobboard stats` in the Prometheus text\n"
    "exposition format (version 0.0.4): one read transaction, metric names\n"
    "prefixed jobboard_, base units (seconds, bytes), a HELP and a TYPE line\n"
    "per metric. Gauges: jobboard_jobs{state,priority},\n"
    "jobboard_jobs_delayed_due, jobboard_dead_letters,\n"
    "jobboard_oldest_unclaimed_age_seconds, jobboard_claims{kind},\n"
    "jobboard_claims_lapsing{why}, jobboard_claims_reporting_progress,\n"
    "jobboard_progress_oldest_report_age_seconds (a held claim whose\n"
    "owner stopped reporting shows here), jobboard_progress_kept_jobs\n"
    "(unclaimed jobs keeping an ended claim's last report: see `jobboard\n"
    "progress`), jobboard_recent_completions{window,\n"
    "outcome}, jobboard_history_records, jobboard_retention_records{kind},\n"
    "jobboard_retention_max_age_seconds{kind} (+Inf: no bound),\n"
    "jobboard_log_first_sequence,\n"
    "jobboard_log_last_sequence, jobboard_map_size_bytes,\n"
    "jobboard_used_bytes, jobboard_page_size_bytes, jobboard_readers,\n"
    "jobboard_readers_max, jobboard_stats_read_seconds,\n"
    "jobboard_last_check_timestamp_seconds and\n"
    "jobboard_last_check_problems (the last `jobboard check`'s time and its\n"
    "problems plus postings quarantined; absent until a check ran),\n"
    "jobboard_board_paused (1 while `jobboard pause --all` holds),\n"
    "jobboard_name_paused{name} (1 paused, 0 resumed: every name whose\n"
    "pause was ever set, and with --by-name every name on the board too),\n"
    "jobboard_name_rate_limit_per_second{name} (the claims a second a\n"
    "name's rate limit allows: every name with one),\n"
    "with --by-name jobboard_jobs_by_name{name,state}, and on a jobboard\n"
    "built with Redis jobboard_sync_synced, _running, _connected,\n"
    "_lag_events, _lag_seconds, _unpublished_jobs. Counters (kept in the\n"
    "board, raised in the write that made the change, never reset):\n"
    "jobboard_jobs_posted_total, jobboard_claims_total,\n"
    "jobboard_progress_reports_total, jobboard_snoozes_total,\n"
    "jobboard_expirations_total,\n"
    "jobboard_abandons_total, jobboard_claim_lapses_total,\n"
    "jobboard_consumes_total{outcome=\"success\"|\"failure\"},\n"
    "jobboard_trashes_total, jobboard_cancels_total,\n"
    "jobboard_dead_lettered_total, jobboard_completions_total{outcome}.\n"
    "\n"
    "For node_exporter's textfile collector, write to a temporary file in\n"
    "the collector's directory and rename it, so that the collector never\n"
    "reads half a file:\n"
    "  jobboard metrics > DIR/jobboard.prom.$$ && mv DIR/jobboard.prom.$$ DIR/jobboard.prom\n"
    "\n"
    "With --listen, serve them over HTTP at /metrics instead (each scrape\n"
    "reads the board in a fresh read transaction; Content-Type\n"
    "text/plain; version=0.0.4; charset=utf-8; any other path is 404)\n"
    "until SIGINT or SIGTERM, then exit 0. Needs a jobboard built with\n"
    "libmicrohttpd (configure --with-microhttpd).\n"
    "\n"
    "Options:\n"
    "  --by-name           also the jobs by name and state (each job's\n"
    "                      posting is read: slower on a large board)\n"
    "  --listen ADDR:PORT  serve at http://ADDR:PORT/metrics; ADDR is an\n"
    "                      IPv4 address, [IPv6 address] or a host name, or\n"
    "                      empty for every address (:9464)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  2  also: --listen on a jobboard built without HTTP support, an\n"
    "     address that does not parse, or one that is in use\n"
    "\n"
    "Examples:\n"
    "  jobboard metrics --board /srv/board\n"
    "  jobboard metrics --board /srv/board --listen 127.0.0.1:9464\n",
    CLI_O_LISTEN | CLI_O_BY_NAME, 0, 0, ""};

/* ------------------------------------------------------------- reading */

/* What `jobboard status` shows first, on a synced board. */
typedef struct {
  int synced; /* -1: this jobboard has no Redis support */
  int running, connected;
  uint64_t lag_events, unpublished;
  double lag_seconds;
  char url[600], ns[256];
} sync_fig;

/* The claimants' progress reports (jb_progress), from a pass over the
 * jobs of its own: three numbers whatever the board holds. */
typedef struct {
  size_t reporting;   /* held claims with a report */
  size_t kept;        /* unclaimed jobs keeping an ended claim's report */
  int64_t oldest_us;  /* the oldest report of a held claim; 0: none */
} progress_fig;

typedef struct {
  jb_stats st;
  sync_fig sync;
  progress_fig progress;
  jb_retention retain; /* what the board's writers prune to */
  jb_check_record check; /* the last recorded check */
  bool checked;          /* ... when one recorded its result */
  double read_seconds;
  cli_pauses pauses;
} figures;

/* One job's progress report into the figures. */
static int progress_job(const jb_job *j, void *arg) {
  progress_fig *p = arg;
  int64_t at = 0;
  if (!jb_job_progress(j, NULL, NULL, &at)) return 0;
  if (jb_job_state(j) != JB_STATE_CLAIMED) {
    p->kept++;
    return 0;
  }
  p->reporting++;
  if (p->oldest_us == 0 || at < p->oldest_us) p->oldest_us = at;
  return 0;
}

/* Walk the jobs for their progress reports: only on a board that ever
 * had one (its counter says so), so that others pay nothing. */
static int read_progress(jb_board *b, const jb_stats *st, progress_fig *p) {
  if (st->events_total[JB_EVENT_PROGRESS] == 0) return JB_OK;
  return cli_walk_jobs(b, 0, progress_job, p);
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_figures(jb_board *b, bool by_name, figures *f) {
  memset(f, 0, sizeof *f);
  f->st = (jb_stats)JB_STATS_INIT;
  f->st.flags = by_name ? JB_STATS_BY_NAME : 0;
  double t0 = mono();
  int rc = jb_stats_read(&f->st, b);
  if (rc == JB_OK) rc = read_progress(b, &f->st, &f->progress);
  f->read_seconds = mono() - t0;
  if (rc == JB_OK) rc = jb_board_get_retention(NULL, &f->retain, b);
  if (rc == JB_OK) {
    /* No record (never checked) and a garbled one (check reports it) both
     * read as "never": the other figures stand. */
    int crc = jb_board_last_check(&f->check, b);
    f->checked = crc == JB_OK;
    if (crc != JB_OK && crc != JB_ENOTFOUND && crc != JB_ECORRUPT) rc = crc;
  }
  if (rc != JB_OK) {
    jb_stats_clear(&f->st);
    return rc;
  }
  f->sync.synced = -1;
#ifdef JB_WITH_REDIS
  jb_sync_status ss;
  memset(&ss, 0, sizeof ss);
  if ((rc = jb_sync_status_read(&ss, b)) != JB_OK) {
    jb_stats_clear(&f->st);
    return rc;
  }
  f->sync.synced = ss.url[0] != 0;
  f->sync.running = ss.running;
  f->sync.connected = ss.connected;
  f->sync.lag_events = ss.lag_events;
  f->sync.lag_seconds = ss.lag_seconds;
  f->sync.unpublished = ss.unpublished;
  snprintf(f->sync.url, sizeof f->sync.url, "%s", ss.url);
  snprintf(f->sync.ns, sizeof f->sync.ns, "%s",
           ss.ns[0] ? ss.ns : JB_SYNC_NAMESPACE_DEFAULT);
#endif
  return JB_OK;
}

/* read_figures and the pauses: 0, or the exit code after saying why. */
static int read_all(jb_board *b, bool by_name, figures *f) {
  int s = read_figures(b, by_name, f);
  if (s != JB_OK) return cli_fail(s);
  int rc = cli_pauses_read(&f->pauses, b);
  if (rc != 0) jb_stats_clear(&f->st);
  return rc;
}

static void figures_clear(figures *f) {
  jb_stats_clear(&f->st);
  cli_pauses_free(&f->pauses);
}

static size_t names_rated(const cli_pauses *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) n += p->v[i].rate != 0;
  return n;
}

static size_t names_paused(const cli_pauses *p) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) n += p->v[i].paused != 0;
  return n;
}

static const char *state_names[JB_STATS_STATES] = {"unclaimed", "claimed",
                                                   "delayed"};
/* The jb_end values that name an outcome: 1..8. The figures' arrays have
 * 8 slots, indexed by end & 7: JB_END_EXPIRED (8) is in slot 0, which no
 * other end uses. */
#define N_ENDS 9
#define END_AT(a, e) ((a)[(e) & 7])

static double oldest_age(const jb_stats *st) {
  if (st->oldest_unclaimed_us == 0) return 0;
  int64_t d = st->now_us - st->oldest_unclaimed_us;
  return d > 0 ? (double)d / 1e6 : 0;
}

/* ------------------------------------------------------------- stats */

/* A retention bound for a person: the number, or "none". */
static void print_bound(const char *label, int64_t v, double div,
                        const char *unit) {
  if (v == JB_RETAIN_NONE)
    printf("  %-22s %12s\n", label, "none");
  else
    printf("  %-22s %12.*f%s\n", label, div > 1 ? 3 : 0, (double)v / div,
           unit);
}

static void print_human(const figures *f) {
  const jb_stats *st = &f->st;
  char when[40];
  cli_format_time(when, sizeof when, st->now_us);
  printf("board figures at %s\n\n", when);
  printf("jobs\n");
  printf("  %-22s %12zu\n", "on the board", st->jobs);
  for (int i = 0; i < JB_STATS_STATES; i++)
    printf("  %-22s %12zu\n", state_names[i], st->by_state[i]);
  printf("  %-22s %12zu\n", "  of which due", st->delayed_due);
  printf("  %-22s %12zu\n", "dead letters", st->dead_letters);
  if (st->oldest_unclaimed_us)
    printf("  %-22s %12.3f s\n", "oldest unclaimed", oldest_age(st));
  else
    printf("  %-22s %12s\n", "oldest unclaimed", "-");
  printf("\n  %-22s %12s %12s %12s\n", "by priority", "unclaimed", "claimed",
         "delayed");
  for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
    printf("  %-22s %12zu %12zu %12zu\n", jb_priority_name((jb_priority)p),
           st->by_priority[p][0], st->by_priority[p][1],
           st->by_priority[p][2]);
  if (st->flags & JB_STATS_BY_NAME) {
    printf("\n  %-22s %12s %12s %12s  %s\n", "by name", "unclaimed", "claimed",
           "delayed", "paused");
    for (size_t i = 0; i < st->n_names; i++) {
      printf("  ");
      cli_put_text(stdout, st->names[i].name[0] ? st->names[i].name : "(none)");
      int pad = 22 - (int)strlen(st->names[i].name[0] ? st->names[i].name
                                                      : "(none)");
      printf("%*s %12zu %12zu %12zu  %s\n", pad > 0 ? pad : 0, "",
             st->names[i].jobs[0], st->names[i].jobs[1], st->names[i].jobs[2],
             cli_pauses_name(&f->pauses, st->names[i].name) ? "paused" : "");
    }
  }
  printf("\nclaims\n");
  printf("  %-22s %12zu\n", "bound to a process", st->claims_bound);
  printf("  %-22s %12zu\n", "leased", st->claims_leased);
  printf("  %-22s %12zu\n", "plain", st->claims_plain);
  printf("  %-22s %12zu\n", "lapsing: lease", st->lapsing_lease);
  printf("  %-22s %12zu\n", "lapsing: holder gone", st->lapsing_holder);
  printf("\ncompletions\n");
  printf("  %-22s %12s %12s %12s\n", "outcome", "last minute", "last hour",
         "total");
  for (int e = 1; e < N_ENDS; e++)
    printf("  %-22s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
           jb_end_name((jb_end)e), END_AT(st->completed_1m, e),
           END_AT(st->completed_1h, e), END_AT(st->ends_total, e));
  printf("  %-22s %12zu\n", "history records", st->history);
  printf("\nretention\n");
  print_bound("history kept", f->retain.history_max, 1, "");
  print_bound("history max age", f->retain.history_max_age_ms, 1000, " s");
  print_bound("dead letters kept", f->retain.dead_max, 1, "");
  print_bound("dead letter max age", f->retain.dead_max_age_ms, 1000, " s");
  printf("\ntotals\n");
  printf("  %-22s %12" PRIu64 "\n", "posted",
         st->events_total[JB_EVENT_POSTED]);
  printf("  %-22s %12" PRIu64 "\n", "claimed",
         st->events_total[JB_EVENT_CLAIMED]);
  printf("  %-22s %12" PRIu64 "\n", "abandoned",
         st->events_total[JB_EVENT_ABANDONED]);
  printf("  %-22s %12" PRIu64 "\n", "claims lapsed",
         st->events_total[JB_EVENT_EXPIRED]);
  printf("  %-22s %12" PRIu64 "\n", "snoozed",
         st->events_total[JB_EVENT_SNOOZED]);
  printf("\nchange log\n");
  if (st->log_next > st->log_first) {
    printf("  %-22s %12" PRIu64 "\n", "first sequence", st->log_first);
    printf("  %-22s %12" PRIu64 "\n", "last sequence", st->log_next - 1);
  } else {
    printf("  %-22s %12s\n", "first sequence", "- (empty)");
  }
  printf("\nfile\n");
  printf("  %-22s %12" PRIu64 " bytes\n", "map size", st->map_size);
  printf("  %-22s %12" PRIu64 " bytes\n", "page size", st->page_size);
  printf("  %-22s %12" PRIu64 " (%" PRIu64 " bytes)\n", "pages used",
         st->pages_used, st->pages_used * st->page_size);
  printf("  %-22s %12u of %u\n", "readers", st->readers, st->readers_max);
  printf("\ncheck\n");
  if (f->checked) {
    char at[40];
    cli_format_time(at, sizeof at, f->check.time_us);
    printf("  %-22s %s\n", "last recorded", at);
    printf("  %-22s %12" PRIu64 "\n", "problems", f->check.problems);
    printf("  %-22s %12" PRIu64 "\n", "moved to quarantine", f->check.moved);
    printf("  %-22s %12.3f s\n", "took", f->check.duration_us / 1e6);
  } else {
    printf("  %-22s %12s\n", "last recorded", "never (jobboard check)");
  }
  if (f->sync.synced >= 0) {
    printf("\nsync\n");
    if (!f->sync.synced) {
      printf("  not synced\n");
    } else {
      printf("  %-22s %s, namespace %s\n", "synced with", f->sync.url,
             f->sync.ns);
      printf("  %-22s %12s\n", "replicator",
             f->sync.running ? (f->sync.connected ? "connected"
                                                  : "not connected")
                             : "not running");
      printf("  %-22s %12" PRIu64 "\n", "lag events", f->sync.lag_events);
      printf("  %-22s %12.3f s\n", "lag", f->sync.lag_seconds);
      printf("  %-22s %12" PRIu64 "\n", "unpublished", f->sync.unpublished);
    }
  }
  printf("\npaused\n");
  printf("  %-22s %12s\n", "the whole board", f->pauses.board ? "yes" : "no");
  printf("  %-22s %12zu\n", "names", names_paused(&f->pauses));
  printf("  %-22s %12zu\n", "names rate-limited", names_rated(&f->pauses));
  printf("\nread in %.3f s\n", f->read_seconds);
}

static json_t *ends_json(const uint64_t *by_end) {
  json_t *o = json_object();
  for (int e = 1; e < N_ENDS; e++)
    json_object_set_new(o, jb_end_name((jb_end)e),
                        json_integer((json_int_t)END_AT(by_end, e)));
  return o;
}

static json_t *states_json(const size_t *n) {
  return json_pack("{s:I,s:I,s:I}", "unclaimed", (json_int_t)n[0], "claimed",
                   (json_int_t)n[1], "delayed", (json_int_t)n[2]);
}

static json_t *to_json(const figures *f) {
  const jb_stats *st = &f->st;
  char when[40];
  cli_format_time(when, sizeof when, st->now_us);
  json_t *byp = json_object();
  for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
    json_object_set_new(byp, jb_priority_name((jb_priority)p),
                        states_json(st->by_priority[p]));
  json_t *jobs = json_pack(
      "{s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "total", (json_int_t)st->jobs,
      "unclaimed", (json_int_t)st->by_state[0], "claimed",
      (json_int_t)st->by_state[1], "delayed", (json_int_t)st->by_state[2],
      "delayed_due", (json_int_t)st->delayed_due, "dead_letters",
      (json_int_t)st->dead_letters, "oldest_unclaimed_seconds",
      st->oldest_unclaimed_us ? json_real(oldest_age(st)) : json_null(),
      "by_priority", byp);
  json_t *claims = json_pack(
      "{s:I,s:I,s:I,s:I,s:I}", "bound", (json_int_t)st->claims_bound,
      "leased", (json_int_t)st->claims_leased, "plain",
      (json_int_t)st->claims_plain, "lapsing_lease",
      (json_int_t)st->lapsing_lease, "lapsing_holder",
      (json_int_t)st->lapsing_holder);
  json_t *comp = json_pack("{s:o,s:o,s:I}", "last_minute",
                           ends_json(st->completed_1m), "last_hour",
                           ends_json(st->completed_1h), "history",
                           (json_int_t)st->history);
  json_t *totals = json_pack(
      "{s:I,s:I,s:I,s:I,s:I,s:o}", "posted",
      (json_int_t)st->events_total[JB_EVENT_POSTED], "claimed",
      (json_int_t)st->events_total[JB_EVENT_CLAIMED], "abandoned",
      (json_int_t)st->events_total[JB_EVENT_ABANDONED], "lapsed",
      (json_int_t)st->events_total[JB_EVENT_EXPIRED], "snoozed",
      (json_int_t)st->events_total[JB_EVENT_SNOOZED], "outcomes",
      ends_json(st->ends_total));
  bool empty = st->log_next <= st->log_first;
  json_t *log = json_pack(
      "{s:o,s:o}", "first",
      empty ? json_null() : json_integer((json_int_t)st->log_first), "last",
      empty ? json_null() : json_integer((json_int_t)(st->log_next - 1)));
  json_t *file = json_pack(
      "{s:I,s:I,s:I,s:I,s:I}", "map_size", (json_int_t)st->map_size,
      "page_size", (json_int_t)st->page_size, "pages_used",
      (json_int_t)st->pages_used, "readers", (json_int_t)st->readers,
      "readers_max", (json_int_t)st->readers_max);
  json_t *sync = json_null();
  if (f->sync.synced > 0)
    sync = json_pack("{s:s,s:s,s:b,s:b,s:I,s:f,s:I}", "url", f->sync.url,
                     "namespace", f->sync.ns, "running", f->sync.running,
                     "connected", f->sync.connected, "lag_events",
                     (json_int_t)f->sync.lag_events, "lag_seconds",
                     f->sync.lag_seconds, "unpublished",
                     (json_int_t)f->sync.unpublished);
  const jb_retention *r = &f->retain;
  json_t *retain = json_pack(
      "{s:o,s:o,s:o,s:o}", "history_max",
      r->history_max == JB_RETAIN_NONE ? json_null()
                                       : json_integer(r->history_max),
      "history_max_age", r->history_max_age_ms == JB_RETAIN_NONE
                             ? json_null()
                             : json_real(r->history_max_age_ms / 1000.0),
      "dead_max",
      r->dead_max == JB_RETAIN_NONE ? json_null() : json_integer(r->dead_max),
      "dead_max_age", r->dead_max_age_ms == JB_RETAIN_NONE
                          ? json_null()
                          : json_real(r->dead_max_age_ms / 1000.0));
  json_t *check = json_null();
  if (f->checked) {
    char at[40];
    cli_format_time(at, sizeof at, f->check.time_us);
    check = json_pack("{s:s,s:I,s:I,s:f}", "time", at, "problems",
                      (json_int_t)f->check.problems, "moved",
                      (json_int_t)f->check.moved, "seconds",
                      f->check.duration_us / 1e6);
  }
  json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:f}",
                        "time", when, "jobs", jobs, "claims", claims,
                        "completions", comp, "retention", retain, "totals",
                        totals, "log", log, "file", file, "sync", sync,
                        "last_check", check, "read_seconds", f->read_seconds);
  json_t *names = json_array();
  for (size_t i = 0; i < f->pauses.n; i++)
    if (f->pauses.v[i].paused)
      json_array_append_new(names, json_string(f->pauses.v[i].name));
  json_t *rated = json_object();
  for (size_t i = 0; i < f->pauses.n; i++)
    if (f->pauses.v[i].rate)
      json_object_set_new(rated, f->pauses.v[i].name,
                          json_pack("{s:I,s:f}", "rate",
                                    (json_int_t)f->pauses.v[i].rate, "period_s",
                                    (double)f->pauses.v[i].period_ms / 1e3));
  if (o) {
    json_object_set_new(o, "paused", json_pack("{s:b,s:o}", "board",
                                               f->pauses.board, "names",
                                               names));
    json_object_set_new(o, "rate_limited", rated);
  } else {
    json_decref(names);
    json_decref(rated);
  }
  if (o && (st->flags & JB_STATS_BY_NAME)) {
    json_t *bn = json_object();
    for (size_t i = 0; i < st->n_names; i++) {
      json_t *n = states_json(st->names[i].jobs);
      if (n)
        json_object_set_new(n, "paused", json_boolean(cli_pauses_name(
                                             &f->pauses, st->names[i].name)));
      json_object_set_new(bn, st->names[i].name, n);
    }
    json_object_set_new(o, "by_name", bn);
  }
  return o;
}

int cmd_stats(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_stats, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  figures f;
  rc = read_all(b, o.by_name, &f);
  jb_board_close(b);
  if (rc != 0) return rc;
  int failed = 0;
  if (o.json)
    failed = cli_json_print(to_json(&f));
  else
    print_human(&f);
  figures_clear(&f);
  if (fflush(stdout) == EOF || ferror(stdout)) failed = 1;
  return failed ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* ------------------------------------------------------------- metrics */

/* A label value, escaped as the exposition format wants (\\, \", \n). */
static void label_value(FILE *m, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      fprintf(m, "\\%c", *v);
    else if (*v == '\n')
      fputs("\\n", m);
    else
      fputc(*v, m);
  }
}

static void family(FILE *m, const char *name, const char *type,
                   const char *help) {
  fprintf(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_u(FILE *m, const char *name, uint64_t v) {
  fprintf(m, "%s %" PRIu64 "\n", name, v);
}

static void retain_sample(FILE *m, const char *name, int64_t v, double div) {
  if (v == JB_RETAIN_NONE)
    fprintf(m, "%s +Inf\n", name);
  else
    fprintf(m, "%s %.17g\n", name, (double)v / div);
}

static void sample_d(FILE *m, const char *name, double v) {
  fprintf(m, "%s %.6f\n", name, v);
}

/* A priority as a label value: "very_high" .. "very_low". */
static const char *prio_label(int p) {
  static const char *names[5] = {"very_low", "low", "normal", "high",
                                 "very_high"};
  return p >= 0 && p < 5 ? names[p] : "unknown";
}

/* The exposition of `f` into a malloc'ed text (NULL: out of memory). */
static char *exposition(const figures *f, size_t *len) {
  const jb_stats *st = &f->st;
  char *buf = NULL;
  FILE *m = open_memstream(&buf, len);
  if (m == NULL) return NULL;

  family(m, "jobboard_jobs", "gauge",
         "Jobs on the board by state and priority.");
  for (int i = 0; i < JB_STATS_STATES; i++)
    for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
      fprintf(m, "jobboard_jobs{state=\"%s\",priority=\"%s\"} %zu\n",
              state_names[i], prio_label(p), st->by_priority[p][i]);
  if (st->flags & JB_STATS_BY_NAME) {
    family(m, "jobboard_jobs_by_name", "gauge",
           "Jobs on the board by name and state.");
    for (size_t n = 0; n < st->n_names; n++)
      for (int i = 0; i < JB_STATS_STATES; i++) {
        fprintf(m, "jobboard_jobs_by_name{name=\"");
        label_value(m, st->names[n].name);
        fprintf(m, "\",state=\"%s\"} %zu\n", state_names[i],
                st->names[n].jobs[i]);
      }
  }
  family(m, "jobboard_board_paused", "gauge",
         "1 while the whole board is paused (jobboard pause --all).");
  sample_u(m, "jobboard_board_paused", f->pauses.board != 0);
  family(m, "jobboard_name_paused", "gauge",
         "1 while the name is paused (jobboard pause NAME), 0 once resumed.");
  for (size_t n = 0; n < f->pauses.n; n++) {
    fprintf(m, "jobboard_name_paused{name=\"");
    label_value(m, f->pauses.v[n].name);
    fprintf(m, "\"} %d\n", f->pauses.v[n].paused != 0);
  }
  family(m, "jobboard_name_rate_limit_per_second", "gauge",
         "The claims a second the name's rate limit allows (jobboard rate).");
  for (size_t n = 0; n < f->pauses.n; n++) {
    if (!f->pauses.v[n].rate) continue;
    fprintf(m, "jobboard_name_rate_limit_per_second{name=\"");
    label_value(m, f->pauses.v[n].name);
    fprintf(m, "\"} %.17g\n", (double)f->pauses.v[n].rate * 1000.0 /
                                  (double)f->pauses.v[n].period_ms);
  }
  if (st->flags & JB_STATS_BY_NAME)
    for (size_t n = 0; n < st->n_names; n++) {
      if (cli_pauses_find(&f->pauses, st->names[n].name)) continue; /* above */
      fprintf(m, "jobboard_name_paused{name=\"");
      label_value(m, st->names[n].name);
      fprintf(m, "\"} 0\n");
    }
  family(m, "jobboard_jobs_delayed_due", "gauge",
         "Delayed jobs whose due time has come (claimable at the next claim).");
  sample_u(m, "jobboard_jobs_delayed_due", st->delayed_due);
  family(m, "jobboard_dead_letters", "gauge", "Jobs in the dead letters.");
  sample_u(m, "jobboard_dead_letters", st->dead_letters);
  family(m, "jobboard_oldest_unclaimed_age_seconds", "gauge",
         "How long the longest-waiting unclaimed job has waited (0: none).");
  sample_d(m, "jobboard_oldest_unclaimed_age_seconds", oldest_age(st));

  family(m, "jobboard_claims", "gauge",
         "Claims by kind (bound to a process, leased, plain).");
  fprintf(m, "jobboard_claims{kind=\"bound\"} %zu\n", st->claims_bound);
  fprintf(m, "jobboard_claims{kind=\"leased\"} %zu\n", st->claims_leased);
  fprintf(m, "jobboard_claims{kind=\"plain\"} %zu\n", st->claims_plain);
  family(m, "jobboard_claims_lapsing", "gauge",
         "Claims that lapsed (lease expired, holder gone) not yet returned.");
  fprintf(m, "jobboard_claims_lapsing{why=\"lease\"} %zu\n",
          st->lapsing_lease);
  fprintf(m, "jobboard_claims_lapsing{why=\"holder\"} %zu\n",
          st->lapsing_holder);

  family(m, "jobboard_claims_reporting_progress", "gauge",
         "Held claims whose owner has reported progress.");
  sample_u(m, "jobboard_claims_reporting_progress", f->progress.reporting);
  family(m, "jobboard_progress_oldest_report_age_seconds", "gauge",
         "The longest time since a held claim's last progress report "
         "(0: none).");
  sample_d(m, "jobboard_progress_oldest_report_age_seconds",
           f->progress.oldest_us
               ? (double)(st->now_us - f->progress.oldest_us) / 1e6 : 0.0);
  family(m, "jobboard_progress_kept_jobs", "gauge",
         "Unclaimed jobs keeping the last report of a claim that ended "
         "(lapsed or abandoned).");
  sample_u(m, "jobboard_progress_kept_jobs", f->progress.kept);

  family(m, "jobboard_recent_completions", "gauge",
         "Completion history records of the last minute or hour by outcome.");
  for (int w = 0; w < 2; w++)
    for (int e = 1; e < N_ENDS; e++)
      fprintf(m,
              "jobboard_recent_completions{window=\"%s\",outcome=\"%s\"} "
              "%" PRIu64 "\n",
              w ? "1h" : "1m", jb_end_name((jb_end)e),
              w ? END_AT(st->completed_1h, e) : END_AT(st->completed_1m, e));
  family(m, "jobboard_history_records", "gauge",
         "Records the completion history keeps.");
  sample_u(m, "jobboard_history_records", st->history);
  /* The bounds (+Inf: none), so an alert can compare the counts with
   * them. */
  const jb_retention *r = &f->retain;
  family(m, "jobboard_retention_records", "gauge",
         "Records retention keeps at most, by kind (history, dead letters).");
  retain_sample(m, "jobboard_retention_records{kind=\"history\"}",
                r->history_max, 1);
  retain_sample(m, "jobboard_retention_records{kind=\"dead\"}", r->dead_max,
                1);
  family(m, "jobboard_retention_max_age_seconds", "gauge",
         "Age of the oldest record retention keeps, by kind.");
  retain_sample(m, "jobboard_retention_max_age_seconds{kind=\"history\"}",
                r->history_max_age_ms, 1000);
  retain_sample(m, "jobboard_retention_max_age_seconds{kind=\"dead\"}",
                r->dead_max_age_ms, 1000);

  family(m, "jobboard_jobs_posted_total", "counter", "Jobs ever posted.");
  sample_u(m, "jobboard_jobs_posted_total", st->events_total[JB_EVENT_POSTED]);
  family(m, "jobboard_progress_reports_total", "counter",
         "Progress reports ever made.");
  sample_u(m, "jobboard_progress_reports_total",
           st->events_total[JB_EVENT_PROGRESS]);
  family(m, "jobboard_snoozes_total", "counter",
         "Claims ever given back by a snooze (no attempt spent).");
  sample_u(m, "jobboard_snoozes_total", st->events_total[JB_EVENT_SNOOZED]);
  family(m, "jobboard_expirations_total", "counter",
         "Jobs ever ended unclaimed at their deadline to start.");
  sample_u(m, "jobboard_expirations_total",
           st->events_total[JB_EVENT_DEADLINE]);
  family(m, "jobboard_claims_total", "counter", "Claims ever made.");
  sample_u(m, "jobboard_claims_total", st->events_total[JB_EVENT_CLAIMED]);
  family(m, "jobboard_abandons_total", "counter",
         "Claims ever given back by their owner.");
  sample_u(m, "jobboard_abandons_total", st->events_total[JB_EVENT_ABANDONED]);
  family(m, "jobboard_claim_lapses_total", "counter",
         "Claims ever ended by a lapse (lease expired, holder gone, time limit).");
  sample_u(m, "jobboard_claim_lapses_total",
           st->events_total[JB_EVENT_EXPIRED]);
  family(m, "jobboard_consumes_total", "counter",
         "Jobs ever consumed, by outcome.");
  fprintf(m, "jobboard_consumes_total{outcome=\"success\"} %" PRIu64 "\n",
          st->ends_total[JB_END_CONSUMED]);
  fprintf(m, "jobboard_consumes_total{outcome=\"failure\"} %" PRIu64 "\n",
          st->ends_total[JB_END_FAILED]);
  family(m, "jobboard_trashes_total", "counter", "Jobs ever trashed.");
  sample_u(m, "jobboard_trashes_total", st->ends_total[JB_END_TRASHED]);
  family(m, "jobboard_cancels_total", "counter", "Jobs ever cancelled.");
  sample_u(m, "jobboard_cancels_total", st->ends_total[JB_END_CANCELLED]);
  family(m, "jobboard_dead_lettered_total", "counter",
         "Jobs ever moved to the dead letters.");
  sample_u(m, "jobboard_dead_lettered_total", st->ends_total[JB_END_DEAD]);
  family(m, "jobboard_completions_total", "counter",
         "Jobs that ever left the board, by outcome (history records written).");
  for (int e = 1; e < N_ENDS; e++)
    fprintf(m, "jobboard_completions_total{outcome=\"%s\"} %" PRIu64 "\n",
            jb_end_name((jb_end)e), END_AT(st->ends_total, e));

  family(m, "jobboard_log_first_sequence", "gauge",
         "The oldest change-log sequence kept.");
  sample_u(m, "jobboard_log_first_sequence", st->log_first);
  family(m, "jobboard_log_last_sequence", "gauge",
         "The newest change-log sequence (first - 1: the log is empty).");
  sample_u(m, "jobboard_log_last_sequence", st->log_next - 1);

  family(m, "jobboard_map_size_bytes", "gauge", "The LMDB map size.");
  sample_u(m, "jobboard_map_size_bytes", st->map_size);
  family(m, "jobboard_used_bytes", "gauge",
         "Bytes of the data file in use (pages up to the last one used).");
  sample_u(m, "jobboard_used_bytes", st->pages_used * st->page_size);
  family(m, "jobboard_page_size_bytes", "gauge", "The LMDB page size.");
  sample_u(m, "jobboard_page_size_bytes", st->page_size);
  family(m, "jobboard_readers", "gauge",
         "Live LMDB read transactions (the scrape's own included).");
  sample_u(m, "jobboard_readers", st->readers);
  family(m, "jobboard_readers_max", "gauge", "LMDB reader slots.");
  sample_u(m, "jobboard_readers_max", st->readers_max);
  if (f->checked) {
    family(m, "jobboard_last_check_timestamp_seconds", "gauge",
           "When `jobboard check` last recorded its result (Unix time; "
           "absent: never).");
    sample_d(m, "jobboard_last_check_timestamp_seconds",
             f->check.time_us / 1e6);
    family(m, "jobboard_last_check_problems", "gauge",
           "Problems the last recorded check found (and postings it "
           "quarantined).");
    sample_u(m, "jobboard_last_check_problems",
             f->check.problems + f->check.moved);
  }
  family(m, "jobboard_stats_read_seconds", "gauge",
         "How long reading these figures took.");
  sample_d(m, "jobboard_stats_read_seconds", f->read_seconds);

  if (f->sync.synced >= 0) {
    family(m, "jobboard_sync_synced", "gauge",
           "1 when the board is synced with Redis.");
    sample_u(m, "jobboard_sync_synced", f->sync.synced > 0);
    if (f->sync.synced > 0) {
      family(m, "jobboard_sync_running", "gauge",
             "1 when a replicator runs for the board.");
      sample_u(m, "jobboard_sync_running", (uint64_t)f->sync.running);
      family(m, "jobboard_sync_connected", "gauge",
             "1 when the replicator is connected to Redis.");
      sample_u(m, "jobboard_sync_connected", (uint64_t)f->sync.connected);
      family(m, "jobboard_sync_lag_events", "gauge",
             "Change-log events the replicator has not handled yet.");
      sample_u(m, "jobboard_sync_lag_events", f->sync.lag_events);
      family(m, "jobboard_sync_lag_seconds", "gauge",
             "Age of the oldest job waiting to be published.");
      sample_d(m, "jobboard_sync_lag_seconds", f->sync.lag_seconds);
      family(m, "jobboard_sync_unpublished_jobs", "gauge",
             "Jobs posted here and not yet published.");
      sample_u(m, "jobboard_sync_unpublished_jobs", f->sync.unpublished);
    }
  }
  if (fclose(m) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

#ifdef JB_WITH_MICROHTTPD

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct {
  jb_board *b;
  bool by_name;
  pthread_mutex_t lock; /* one scrape at a time */
} serve_ctx;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  serve_ctx *c = cls;
  (void)version;
  (void)upload;
  (void)upload_size;
  (void)con_cls;
  static char not_found[] = "404 not found: the metrics are at /metrics\n";
  static char not_allowed[] = "405 method not allowed: use GET\n";
  static char failed[] = "500 the board could not be read\n";
  if (strcmp(url, "/metrics") != 0)
    return cli_http_reply(conn, MHD_HTTP_NOT_FOUND,
                          "text/plain; charset=utf-8", not_found,
                          sizeof not_found - 1, false, NULL);
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
    return cli_http_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                          "text/plain; charset=utf-8", not_allowed,
                          sizeof not_allowed - 1, false, NULL);
  figures f;
  char *body = NULL;
  size_t len = 0;
  pthread_mutex_lock(&c->lock);
  if (read_all(c->b, c->by_name, &f) == 0) { /* else said on stderr */
    body = exposition(&f, &len);
    figures_clear(&f);
  }
  pthread_mutex_unlock(&c->lock);
  if (body == NULL)
    return cli_http_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                          "text/plain; charset=utf-8", failed,
                          sizeof failed - 1, false, NULL);
  return cli_http_reply(conn, MHD_HTTP_OK, CONTENT_TYPE, body, len, true,
                        NULL);
}

/* One polling thread for every connection: a scrape is short and holds
 * no connection open, so a thread each would buy nothing. */
static int serve(jb_board *b, int fd, const char *spec, bool by_name) {
  serve_ctx c = {.b = b, .by_name = by_name};
  pthread_mutex_init(&c.lock, NULL);
  cli_http_server s = {.what = "metrics",
                       .handler = on_request,
                       .cls = &c,
                       .connection_limit = 64,
                       .memory_limit = 32 * 1024,
                       .timeout_s = 30};
  char url[300];
  snprintf(url, sizeof url, "http://%s/metrics", spec);
  int rc = cli_http_serve(fd, &s, url);
  pthread_mutex_destroy(&c.lock);
  return rc;
}

#endif /* JB_WITH_MICROHTTPD */

int cmd_metrics(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_metrics, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
#ifndef JB_WITH_MICROHTTPD
  if (o.listen)
    return cli_cmd_usage(&cli_cmd_metrics,
                         "--listen: this jobboard was built without HTTP "
                         "support (libmicrohttpd)");
#endif
#ifdef JB_WITH_MICROHTTPD
  /* The socket first: a bad or busy address changes nothing. */
  int fd = -1;
  cli_http_addr where;
  if (o.listen &&
      (fd = cli_http_listen(&cli_cmd_metrics, o.listen, false, NULL,
                            &where)) < 0)
    return CLI_EXIT_USAGE;
#endif
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) {
#ifdef JB_WITH_MICROHTTPD
    if (fd >= 0) close(fd);
#endif
    return rc;
  }
#ifdef JB_WITH_MICROHTTPD
  if (o.listen) {
    rc = serve(b, fd, o.listen, o.by_name);
    jb_board_close(b);
    return rc;
  }
#endif
  figures f;
  rc = read_all(b, o.by_name, &f);
  jb_board_close(b);
  if (rc != 0) return rc;
  size_t len = 0;
  char *text = exposition(&f, &len);
  figures_clear(&f);
  if (text == NULL) return cli_fail(JB_ENOMEM);
  int failed = fwrite(text, 1, len, stdout) != len;
  free(text);
  if (fflush(stdout) == EOF || ferror(stdout)) failed = 1;
  return failed ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
