/*
 * cmd_watch.c - `jobboard watch`: follow the board's change log, one event
 * per line, as the commits of any process make them.
 */
#include "cli_common.h"
#include "json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_command cli_cmd_watch = {
    "watch", "print the board's events as they happen (the change log)",
    "Usage: jobboard watch [--from SEQ] [--count N] [--timeout DURATION]\n"
    "                      [--name NAME]... [OPTIONS]\n"
    "\n"
    "Print the board's change log, one event per line, and keep printing\n"
    "new events as they are committed, by any process, until interrupted\n"
    "(SIGINT or SIGTERM: the events read so far are all printed) or, with\n"
    "--count, until N events were printed. Every write to the board logs\n"
    "one event per change, in the same transaction: the log is the board's\n"
    "history in commit order, numbered 1, 2, 3, ... without gaps. watch\n"
    "sleeps on the board's signal file between events: it does not poll.\n"
    "\n"
    "Events:\n"
    "  POSTED     a job was posted\n"
    "  CLAIMED    OWNER claimed it\n"
    "  ABANDONED  OWNER released it: it is claimable again\n"
    "  CONSUMED   OWNER completed it: it left the board\n"
    "  TRASHED    OWNER trashed it: it left the board (kept in the trash)\n"
    "  REFRESHED  OWNER claimed it again: its claim was renewed\n"
    "  EXPIRED    OWNER's claim lapsed (its lease ran out, or its process\n"
    "             ended): the job is claimable again\n"
    "  EXTENDED   OWNER extended its claim's lease\n"
    "  REVOKED    `jobboard check` moved it to quarantine (its posting does\n"
    "             not decode): it left the board\n"
    "  LOST       Redis no longer lists it after losing its data (a synced\n"
    "             board): it left the board; nobody consumed it here\n"
    "  CANCELLED  it was cancelled: it left the board\n"
    "  DEAD       it went to the dead letters: it left the board\n"
    "  PROGRESS   OWNER reported how far it has got (`jobboard progress`)\n"
    "  SNOOZED    OWNER gave it back for a while (`jobboard snooze`): no\n"
    "             attempt spent, claimable again when due\n"
    "  DEADLINE   not claimed by its deadline to start (post --expires):\n"
    "             it left the board (expired, or to the dead letters)\n"
    "\n"
    "Each event is one line of text, fields separated by two spaces:\n"
    "  SEQ  TYPE  UUID  NAME  OWNER  TIME\n"
    "where SEQ is the event's log sequence, NAME the job's name (- when it\n"
    "is no longer known: see --name), OWNER is - for POSTED (control\n"
    "characters in a name are written as C escapes: \\n, \\t, \\x01) and TIME\n"
    "is when it happened, ISO-8601 UTC with microseconds. A PROGRESS line\n"
    "goes on with the report: '  PERCENT%' and, when it has one, '  MESSAGE'\n"
    "(PERCENT '?' should the event have been dropped before it was read).\n"
    "With --json, each event is one JSON object:\n"
    "  {\"seq\": 12, \"type\": \"CLAIMED\", \"uuid\": \"...\", \"owner\": \"w1\",\n"
    "   \"time\": \"2024-01-02T03:04:05.000006Z\", \"job_seq\": 7,\n"
    "   \"priority\": \"NORMAL\", \"name\": \"resize\"}\n"
    "(owner null for POSTED; job_seq is the job's sequence, as list shows;\n"
    "name null when no longer known);\n"
    "a PROGRESS event also has \"percent\" (a number, 0 to 100) and\n"
    "\"message\" (a string, or null when none).\n"
    "\n"
    "The board keeps the newest events only: at least 100,000, and none\n"
    "older than 7 days (the library's defaults; a program may set others).\n"
    "An event that was dropped is never skipped silently: when --from names\n"
    "one, or when watch falls that far behind, it stops with an error that\n"
    "names the oldest event kept (exit 8); run it again with --from that\n"
    "sequence to go on from there.\n"
    "\n"
    "Options:\n"
    "  --from SEQ          start with event SEQ (default: with the next event\n"
    "                      committed after watch starts; on a board that\n"
    "                      appeared while watch waited for it, its first\n"
    "                      event). --from 1 replays the whole log when\n"
    "                      nothing was dropped yet.\n"
    "  --count N           stop after printing N events\n"
    "  --timeout DURATION  stop once no event has come for this long\n"
    "                      (fractions allowed; 0 prints what the log holds\n"
    "                      and stops; `inf` or no --timeout: no limit);\n"
    "                      with --name, no event of those names\n"
    CLI_HELP_NAME_FILTER("events of jobs")
    "                      An event carries no name: the job's is read once\n"
    "                      per job (from the board, or from the history\n"
    "                      once it left), a short read each, and kept for\n"
    "                      its next events (the NAME of every line is read\n"
    "                      so, with or without --name). An event of a\n"
    "                      job found in neither (its history record dropped,\n"
    "                      or its posting does not decode) is left out: its\n"
    "                      name is no longer known.\n"
    CLI_HELP_CREATE
    "Watch works on a board this process may only read (a read-only view,\n"
    "said once on stderr): it then looks for new events every 200 ms.\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  2  also: --from is 0, or beyond the next event's sequence\n"
    "  7  --count N was given and --timeout passed before N events\n"
    "     (without --count, reaching --timeout is the normal end: 0)\n"
    "  8  the change log no longer holds event --from (or watch fell behind\n"
    "     what it keeps): the message names the oldest event kept\n"
    "  130, 143  interrupted by SIGINT or SIGTERM (every event read was\n"
    "     printed first)\n"
    "\n"
    "Examples:\n"
    "  jobboard watch                      # follow the board live\n"
    "  jobboard watch --from 1 --timeout 0 # print the whole log kept\n"
    "  jobboard watch --count 1 --timeout 30 --json   # the next event\n"
    "  jobboard watch --json | jq -r 'select(.type == \"CONSUMED\") | .uuid'\n"
    "  jobboard watch --name 'images.*' --name pdf\n",
    CLI_O_WATCH | CLI_O_TIMEOUT | CLI_O_CREATE | CLI_O_NAMES, 0, 0, ""};

/* Each job's name, read once and remembered for its next events (a job's
 * name never changes): every line prints it, and --name chooses by it.
 * Direct-mapped: a slot taken by another job is looked up again, a short
 * read. */
#define NAME_SLOTS 4096

typedef struct {
  char uuid[JB_UUID_STRLEN];
  char *name; /* malloc'ed; NULL: the job's record has none */
} name_slot;

static unsigned slot_of(const char *uuid) {
  uint32_t h = 2166136261u;
  for (const char *p = uuid; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h % NAME_SLOTS;
}

static void slots_free(name_slot *slots) {
  if (slots == NULL) return;
  for (size_t i = 0; i < NAME_SLOTS; i++) free(slots[i].name);
  free(slots);
}

/* The name of event `e`'s job: JB_OK and *name (NULL when no longer
 * known: found neither on the board nor in the history, or not
 * decoding), or the failure. *name lives until the slot is reused. */
static int event_name(const char **name, name_slot *slots, jb_board *b,
                      const jb_event *e) {
  name_slot *sl = &slots[slot_of(e->uuid)];
  *name = NULL;
  if (strcmp(sl->uuid, e->uuid) == 0) {
    *name = sl->name;
    return JB_OK;
  }
  char *copy = NULL;
  jb_job *job = NULL;
  int st = jb_job_get(&job, b, e->uuid);
  if (st == JB_OK) {
    copy = strdup(jb_job_name(job));
    jb_job_free(job);
    if (copy == NULL) return JB_ENOMEM;
  } else if (st == JB_ENOTFOUND) { /* it left the board: its record */
    jb_completion *c = NULL;
    st = jb_job_completion(&c, b, e->uuid);
    if (st == JB_OK && c->name && (copy = strdup(c->name)) == NULL)
      st = JB_ENOMEM;
    jb_completion_free(c);
  }
  /* Found nowhere, or not decoding: the name is unknown (not remembered:
   * looked up again at the job's next event). */
  if (st == JB_ENOTFOUND || st == JB_ECORRUPT) return JB_OK;
  if (st != JB_OK) return st;
  free(sl->name);
  memcpy(sl->uuid, e->uuid, JB_UUID_STRLEN);
  sl->name = copy;
  *name = copy;
  return JB_OK;
}

/* Events read per transaction. */
#define BATCH 64

static int print_event(jb_board *b, const jb_event *e, const char *name,
                       int json) {
  char when[40];
  cli_format_time(when, sizeof when, e->time_us);
  const char *type = jb_event_type_name(e->type);
  /* A progress event's figures are read from the log by its sequence
   * (jb_event keeps its layout); dropped meanwhile, they are unknown. */
  double pct = 0;
  char msg[JB_PROGRESS_MESSAGE_MAX + 1] = "";
  bool progress = e->type == JB_EVENT_PROGRESS;
  bool known = progress && jb_log_progress(&pct, msg, b, e->seq) == JB_OK;
  if (json) {
    json_t *o = json_pack("{s:I, s:s, s:s, s:s?, s:s, s:I, s:s?}", "seq",
                          (json_int_t)e->seq, "type", type ? type : "?",
                          "uuid", e->uuid, "owner",
                          e->owner[0] ? e->owner : NULL, "time", when,
                          "job_seq", (json_int_t)e->job_seq, "priority",
                          jb_priority_name(e->priority));
    if (o && json_object_set_new(o, "name", name ? json_string(name)
                                                 : json_null()) != 0) {
      json_decref(o);
      o = NULL;
    }
    if (o && progress &&
        (json_object_set_new(o, "percent",
                             known ? json_real(pct) : json_null()) != 0 ||
         json_object_set_new(o, "message",
                             msg[0] ? json_string(msg) : json_null()) != 0)) {
      json_decref(o);
      o = NULL;
    }
    return o ? cli_json_print(o) : -1;
  }
  printf("%llu  %s  %s  ", (unsigned long long)e->seq, type ? type : "?",
         e->uuid);
  cli_put_text(stdout, name ? name : "-");
  fputs("  ", stdout);
  cli_put_text(stdout, e->owner[0] ? e->owner : "-");
  printf("  %s", when);
  if (progress) {
    if (known) printf("  %.1f%%", pct);
    else fputs("  ?", stdout);
    if (msg[0]) {
      fputs("  ", stdout);
      cli_put_text(stdout, msg);
    }
  }
  return putchar('\n') == EOF ? -1 : 0;
}

int cmd_watch(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_watch, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ | CLI_OPEN_WAIT)) != 0) return rc;
  cli_cancel_on_signals(b);
  uint64_t cursor = o.from;
  int st = JB_OK;
  if (cursor == 0) { /* from now */
    uint64_t first_kept = 0;
    st = jb_log_bounds(&first_kept, &cursor, b);
    /* A board that appeared while this waited for it: all of its events
     * came after the watch began. */
    if (o.board_appeared) cursor = first_kept;
  }
  static jb_event ev[BATCH];
  name_slot *slots = calloc(NAME_SLOTS, sizeof *slots);
  if (slots == NULL) {
    fputs("jobboard: out of memory\n", stderr);
    cli_cancel_on_signals(NULL);
    jb_board_close(b);
    return CLI_EXIT_ERROR;
  }
  /* With --name, --timeout runs from the last event printed: the events
   * of other names do not count. */
  int64_t deadline = o.timeout_ms >= 0 ? cli_mono_ms() + o.timeout_ms : -1;
  uint64_t printed = 0, first = 0;
  rc = CLI_EXIT_OK;
  while (st == JB_OK && (o.count == 0 || printed < o.count)) {
    size_t n = 0;
    int64_t wait_ms = o.timeout_ms;
    if (o.n_names && deadline >= 0) {
      wait_ms = deadline - cli_mono_ms();
      if (wait_ms < 0) wait_ms = 0;
    }
    st = jb_log_wait(ev, &n, &first, b, cursor, BATCH, wait_ms);
    for (size_t i = 0; st == JB_OK && i < n; i++) {
      const char *name = NULL;
      if ((st = event_name(&name, slots, b, &ev[i])) != JB_OK) break;
      cursor = ev[i].seq + 1;
      /* With --name, a job whose name is no longer known is left out. */
      if (o.n_names &&
          !(name && jb_name_matches(o.names, o.n_names, name)))
        continue;
      if (deadline >= 0) deadline = cli_mono_ms() + o.timeout_ms;
      if (print_event(b, &ev[i], name, o.json) != 0) {
        rc = CLI_EXIT_ERROR; /* main reports a failed write to stdout */
        st = JB_EIO;
        break;
      }
      if (++printed == o.count) break;
    }
    /* Caught up with the log past the deadline, the events read being of
     * other names. */
    if (st == JB_OK && o.n_names && deadline >= 0 && n < BATCH &&
        cli_mono_ms() >= deadline)
      st = JB_ETIMEDOUT;
    /* Lines reach a pipe as the events come, not when a buffer fills. */
    if (fflush(stdout) != 0) {
      rc = CLI_EXIT_ERROR;
      st = JB_EIO;
    }
  }
  if (rc == CLI_EXIT_OK) {
    if (st == JB_ETIMEDOUT && o.count == 0)
      rc = CLI_EXIT_OK; /* --timeout without --count: the normal end */
    else if (st == JB_EINTERRUPTED)
      rc = cli_exit_code(st); /* interrupted: 128 + the signal, no message */
    else if (st == JB_ETRIMMED) {
      /* The library's message names the oldest event kept; say how to go
       * on (one line, as every error). */
      cli_usage_error("%s (watch --from %llu goes on from there)",
                      jb_errmsg(), (unsigned long long)first);
      rc = CLI_EXIT_TRIMMED;
    } else if (st != JB_OK)
      rc = cli_fail(st);
  }
  slots_free(slots);
  cli_cancel_on_signals(NULL);
  jb_board_close(b);
  return rc;
}
