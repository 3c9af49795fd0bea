/*
 * cmd_top.c - `jobboard top`: a board at a glance, redrawn as it changes,
 * for a terminal reached over ssh (like top(1)). Each frame is read with
 * the public API: the names' controls (jb_queues_foreach), one streamed
 * walk of the jobs (jb_iter), the dead letters and the history of the
 * last minute. Between frames it sleeps on the change log (jb_log_wait),
 * so an idle board costs nothing but the refresh of the ages.
 */
#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* Claims whose lease lapses within this are listed. */
#define SOON_MS 60000
/* The window of the throughput figures. */
#define WINDOW_S 60
/* A busy board is redrawn at most this often, and after a pause as long
 * as the frame took to read: each frame walks the jobs, and top is not to
 * take more than half a CPU from the workers of a large board. */
#define MIN_FRAME_MS 200

const cli_command cli_cmd_top = {
    "top", "watch the board at a glance, redrawn as it changes",
    "Usage: jobboard top [--name NAME]... [--interval DURATION] [--once]\n"
    "                    [OPTIONS]\n"
    "\n"
    "Show the board at a glance, as top(1) shows processes, and redraw it\n"
    "whenever a commit of any process changes it (top sleeps on the\n"
    "board's change log between frames, as `jobboard watch` does: it does\n"
    "not poll), and at least every --interval seconds for the ages. A\n"
    "frame shows:\n"
    "  jobs          the jobs by state: ready (claimable now, a lapsed\n"
    "                claim's job too; of which paused: held back by a pause\n"
    "                of their name or of the whole board), delayed (of\n"
    "                which due), claimed, and the dead letters\n"
    "  last 60 s     jobs consumed and jobs completed (every outcome:\n"
    "                consumed, failed, trashed, cancelled, dead...) per\n"
    "                second over the last minute, read from the history\n"
    "                (a history bounded below that is undercounted)\n"
    "  oldest ready  how long the longest-waiting ready job has waited\n"
    "                (since its post or its last abandon), and its name\n"
    "  names         one row per job name: READY, CLAIMED, DELAYED, the\n"
    "                claims held against its cap (CAP `3/4`, `3/4*` when\n"
    "                the cap is its prefix's), its rate limit (RATE\n"
    "                `100/60s`, with `+2.5s` while its next token is that\n"
    "                far off), OLDEST (its longest-waiting ready job's\n"
    "                wait) and `paused`; most ready first, then by name.\n"
    "                On a terminal the window's height (80x24 when it\n"
    "                does not say) limits the rows, the rest counted in a\n"
    "                last line; elsewhere every name is printed\n"
    "  leases        the claims whose lease lapses within 60 s, soonest\n"
    "                first: when, owner, uuid and name\n"
    "Each frame walks the jobs on the board once (a streamed read, a few\n"
    "dozen jobs per short read transaction: writers are never held up), so\n"
    "a frame costs O(jobs); a busy board is redrawn at most 5 times a\n"
    "second, and on a large one top waits as long as a frame took to read\n"
    "before it reads the next (half a CPU at most).\n"
    "\n"
    "On a terminal the frame is redrawn in place (ANSI clear and home);\n"
    "press q, or Ctrl-C, to quit (exit 0; the terminal's settings are\n"
    "restored: top only changes them when stdin is a terminal, to read\n"
    "q without Enter; Ctrl-Z, SIGHUP and SIGQUIT put them back too, and\n"
    "after a stop top continues with a fresh frame). With --once, or when\n"
    "stdout is not a terminal,\n"
    "one frame is printed as plain text and top exits.\n"
    "With --json (one frame, as with --once), one object: {\"time\",\n"
    "\"board\", \"board_paused\", \"jobs\": {\"ready\", \"ready_paused\",\n"
    "\"delayed\", \"delayed_due\", \"claimed\", \"dead_letters\"},\n"
    "\"oldest_ready_seconds\" (null: none), \"oldest_ready_name\",\n"
    "\"throughput\": {\"window_seconds\": 60, \"consumed\", \"completed\",\n"
    "\"consumed_per_second\", \"completed_per_second\"}, \"names\": [{the\n"
    "fields of `queues --json`, \"claimed\", \"delayed\",\n"
    "\"oldest_ready_seconds\"}...] (every name, in the order of the rows),\n"
    "\"lapsing\": [{\"uuid\", \"name\", \"owner\", \"lease_expires\",\n"
    "\"lapses_in_seconds\"}...], \"log_next\"}.\n"
    "\n"
    "Options:\n"
    CLI_HELP_NAME_FILTER("jobs")
    "                      (the names' rows, and every count of the frame)\n"
    "  --interval DURATION redraw at least this often (default 2s; from\n"
    "                      100ms to 1d)\n"
    "  --once              print one frame as plain text and exit\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  A bad --interval, or an unknown option, is a usage error (2).\n"
    "  SIGTERM ends it with 143, as a shell reports a killed process.\n"
    "\n"
    "Examples:\n"
    "  ssh -t device jobboard top --board /srv/board\n"
    "  jobboard top --once --name 'images.*'\n"
    "  jobboard top --json | jq .jobs.ready\n",
    CLI_O_NAMES | CLI_O_TOP, 0, 0, ""};

/* One name's row: its controls and ready count as jb_queues_foreach gives
 * them (q.ready replaced by the walk's count, a lapsed claim's job too),
 * and what the walk of the jobs adds. */
typedef struct {
  jb_queue_info q; /* q.name is owned */
  size_t claimed, delayed;
  int64_t oldest_us; /* the longest-waiting ready job's wait start; 0: none */
} top_name;

/* A claim whose lease lapses soon. */
typedef struct {
  char uuid[JB_UUID_STRLEN];
  char *name, *owner;
  int64_t lease_us;
} top_lapse;

typedef struct {
  const cli_opts *o;
  int64_t now_us;
  int board_paused;
  size_t ready, ready_paused, delayed, delayed_due, claimed, dead;
  int64_t oldest_us;
  const char *oldest_name; /* borrowed from v */
  uint64_t consumed, completed; /* in the last WINDOW_S seconds */
  uint64_t log_next;
  top_name *v;
  size_t n;
  top_lapse *l;
  size_t nl;
} top_frame;

static void frame_free(top_frame *f) {
  for (size_t i = 0; i < f->n; i++) free((char *)f->v[i].q.name);
  for (size_t i = 0; i < f->nl; i++) {
    free(f->l[i].name);
    free(f->l[i].owner);
  }
  free(f->v);
  free(f->l);
}

/* The visits' own stop: out of memory (the library's statuses are < 0). */
#define TOP_NOMEM 1

static bool chosen(const cli_opts *o, const char *name) {
  return o->n_names == 0 || jb_name_matches(o->names, o->n_names, name);
}

static int add_name(const jb_queue_info *q, void *arg) {
  top_frame *f = arg;
  if (!chosen(f->o, q->name)) return 0;
  top_name *v = realloc(f->v, (f->n + 1) * sizeof *v);
  if (v == NULL) return TOP_NOMEM;
  f->v = v;
  memset(&v[f->n], 0, sizeof v[f->n]);
  v[f->n].q = *q;
  v[f->n].q.ready = 0; /* counted by the walk */
  if ((v[f->n].q.name = strdup(q->name)) == NULL) return TOP_NOMEM;
  f->n++;
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const top_name *)a)->q.name, ((const top_name *)b)->q.name);
}

static top_name *find_name(top_frame *f, const char *name) {
  top_name key = {.q = {.name = name}};
  return f->n ? bsearch(&key, f->v, f->n, sizeof *f->v, by_name) : NULL;
}

static int add_lapse(top_frame *f, const jb_job *j, int64_t lease_us) {
  top_lapse *l = realloc(f->l, (f->nl + 1) * sizeof *l);
  if (l == NULL) return TOP_NOMEM;
  f->l = l;
  l += f->nl;
  memcpy(l->uuid, jb_job_uuid(j), JB_UUID_STRLEN);
  l->lease_us = lease_us;
  l->name = strdup(jb_job_name(j));
  const char *owner = jb_job_owner(j);
  l->owner = strdup(owner ? owner : "-");
  f->nl++; /* freed with the frame, also when a copy failed */
  return l->name && l->owner ? JB_OK : TOP_NOMEM;
}

/* One job of the walk into the counts. */
static int count_job(const jb_job *j, void *arg) {
  top_frame *f = arg;
  const char *name = jb_job_name(j);
  if (!chosen(f->o, name)) return JB_OK;
  top_name *t = find_name(f, name);
  int64_t nb = jb_job_not_before(j);
  if (jb_job_state(j) == JB_STATE_CLAIMED) {
    f->claimed++;
    if (t) t->claimed++;
    int64_t lease = jb_job_lease_expires(j);
    if (lease && lease - f->now_us <= (int64_t)SOON_MS * 1000)
      return add_lapse(f, j, lease);
  } else if (nb) { /* delayed, due or not yet */
    f->delayed++;
    f->delayed_due += nb <= f->now_us;
    if (t) t->delayed++;
  } else {
    f->ready++;
    if (f->board_paused || (t && t->q.paused)) f->ready_paused++;
    int64_t since = jb_job_modified(j);
    if (t) {
      t->q.ready++;
      if (t->oldest_us == 0 || since < t->oldest_us) t->oldest_us = since;
    }
    if (f->oldest_us == 0 || since < f->oldest_us) {
      f->oldest_us = since;
      f->oldest_name = t ? t->q.name : NULL;
    }
  }
  return JB_OK;
}

static int count_dead(const jb_dead_letter *d, void *arg) {
  top_frame *f = arg;
  f->dead += d->name && chosen(f->o, d->name);
  return 0;
}

/* The history records of the last WINDOW_S seconds. */
static int count_done(top_frame *f, jb_board *b) {
  jb_history_options ho = JB_HISTORY_OPTIONS_INIT;
  ho.since_us = f->now_us - (int64_t)WINDOW_S * 1000000;
  jb_history_iter *it = NULL;
  int st = jb_history_query(&it, b, &ho);
  if (st != JB_OK) return st;
  const jb_completion *c;
  while ((st = jb_history_next(&c, it)) == JB_OK || st == JB_ECORRUPT) {
    if (st == JB_ECORRUPT) continue;
    if (c == NULL) break;
    if (f->o->n_names && !(c->name && chosen(f->o, c->name))) continue;
    f->completed++;
    f->consumed += c->end == JB_END_CONSUMED;
  }
  jb_history_close(it);
  return st;
}

static int by_ready(const void *a, const void *b) {
  const top_name *x = a, *y = b;
  if (x->q.ready != y->q.ready) return x->q.ready < y->q.ready ? 1 : -1;
  if (x->claimed != y->claimed) return x->claimed < y->claimed ? 1 : -1;
  return strcmp(x->q.name, y->q.name);
}

static int by_lease(const void *a, const void *b) {
  int64_t x = ((const top_lapse *)a)->lease_us,
          y = ((const top_lapse *)b)->lease_us;
  return (x > y) - (x < y);
}

/* Read one frame: JB_OK, or a failure (TOP_NOMEM: out of memory). */
static int read_frame(top_frame *f, jb_board *b, const cli_opts *o) {
  memset(f, 0, sizeof *f);
  f->o = o;
  f->now_us = cli_wall_now_us();
  int st = jb_log_bounds(NULL, &f->log_next, b);
  if (st == JB_OK) st = jb_queues_foreach(b, add_name, f, &f->board_paused);
  if (st != JB_OK) return st;
  if (f->n > 1) qsort(f->v, f->n, sizeof *f->v, by_name); /* v NULL when 0 */
  if ((st = cli_walk_jobs(b, 0, count_job, f)) != JB_OK) return st;
  if (o->n_names)
    st = jb_dead_foreach(b, count_dead, f);
  else
    st = jb_dead_count(&f->dead, b);
  if (st == JB_OK) st = count_done(f, b);
  if (st != JB_OK) return st;
  /* f->oldest_name is a name's own string: it stays where it is. */
  if (f->n > 1) qsort(f->v, f->n, sizeof *f->v, by_ready);
  if (f->nl) qsort(f->l, f->nl, sizeof *f->l, by_lease);
  return JB_OK;
}

/* ------------------------------------------------------------- output */

/* An age for a person: 12.3s, 4m05s, 3h02m, 2d03h. */
static void fmt_age(char *buf, size_t len, int64_t us) {
  if (us < 0) us = 0;
  int64_t s = us / 1000000;
  if (s < 60)
    snprintf(buf, len, "%.1fs", (double)us / 1e6);
  else if (s < 3600)
    snprintf(buf, len, "%dm%02ds", (int)(s / 60), (int)(s % 60));
  else if (s < 86400)
    snprintf(buf, len, "%dh%02dm", (int)(s / 3600), (int)(s % 3600 / 60));
  else
    snprintf(buf, len, "%lldd%02dh", (long long)(s / 86400),
             (int)(s % 86400 / 3600));
}

/* The frame as text on `m`; `rows` limits its lines (0: no limit). */
static void put_frame(FILE *m, const top_frame *f, jb_board *b, int rows,
                      bool live, int64_t interval_ms) {
  char when[40], age[32];
  cli_format_time(when, sizeof when, f->now_us);
  int lines = 0;
  fprintf(m, "jobboard top: ");
  cli_put_text(m, jb_board_path(b));
  fprintf(m, " at %s%s", when, f->board_paused ? "  BOARD PAUSED" : "");
  if (live) fprintf(m, "  (every %gs; q quits)", (double)interval_ms / 1e3);
  fprintf(m, "\njobs: ready %zu (paused %zu)  delayed %zu (due %zu)  "
          "claimed %zu  dead letters %zu\n",
          f->ready, f->ready_paused, f->delayed, f->delayed_due, f->claimed,
          f->dead);
  fprintf(m, "last %d s: consumed %.2f/s (%llu)  completed %.2f/s (%llu)\n",
          WINDOW_S, (double)f->consumed / WINDOW_S,
          (unsigned long long)f->consumed, (double)f->completed / WINDOW_S,
          (unsigned long long)f->completed);
  if (f->oldest_us) {
    fmt_age(age, sizeof age, f->now_us - f->oldest_us);
    fprintf(m, "oldest ready: %s", age);
    if (f->oldest_name) {
      fputs(" (", m);
      cli_put_text(m, f->oldest_name);
      fputc(')', m);
    }
    fputc('\n', m);
  } else {
    fputs("oldest ready: -\n", m);
  }
  lines = 4;
  /* The leases' section, at most 5 lines of claims on a terminal. */
  size_t nl = f->nl;
  if (rows && nl > 5) nl = 5;
  int lapse_lines = f->nl ? 3 + (int)nl + (nl < f->nl) : 0;
  size_t shown = f->n;
  if (rows) {
    int room = rows - lines - 2 - lapse_lines; /* a blank line, the heads */
    if (room < 1) room = 1;
    if (shown > (size_t)room) shown = (size_t)room - 1; /* "N more names" */
  }
  fprintf(m, "\n%7s %7s %7s %-9s %-16s %7s %-6s %s\n", "READY", "CLAIMED",
          "DELAYED", "CAP", "RATE", "OLDEST", "PAUSED", "NAME");
  for (size_t i = 0; i < shown; i++) {
    const top_name *t = &f->v[i];
    char cap[32], rate[64];
    cli_queue_columns(cap, rate, &t->q, f->now_us);
    if (t->oldest_us)
      fmt_age(age, sizeof age, f->now_us - t->oldest_us);
    else
      snprintf(age, sizeof age, "-");
    fprintf(m, "%7zu %7zu %7zu %-9s %-16s %7s %-6s ", t->q.ready, t->claimed,
            t->delayed, cap, rate, age, t->q.paused ? "paused" : "");
    cli_put_text(m, t->q.name);
    fputc('\n', m);
  }
  if (shown < f->n) fprintf(m, "(%zu more names)\n", f->n - shown);
  if (f->nl) {
    fprintf(m, "\nleases lapsing within %d s: %zu\n", SOON_MS / 1000, f->nl);
    fprintf(m, "%7s  %-16s %-36s %s\n", "IN", "OWNER", "UUID", "NAME");
    for (size_t i = 0; i < nl; i++) {
      const top_lapse *l = &f->l[i];
      fmt_age(age, sizeof age, l->lease_us - f->now_us);
      fprintf(m, "%7s  ", age);
      cli_put_text(m, l->owner);
      fprintf(m, "%*s %-36s ", 16 - (int)strlen(l->owner) > 0
                                   ? 16 - (int)strlen(l->owner) : 0, "",
              l->uuid);
      cli_put_text(m, l->name);
      fputc('\n', m);
    }
    if (nl < f->nl) fprintf(m, "(%zu more)\n", f->nl - nl);
  }
}

static json_t *frame_json(const top_frame *f, jb_board *b) {
  char when[40];
  cli_format_time(when, sizeof when, f->now_us);
  json_t *names = json_array(), *lapsing = json_array();
  for (size_t i = 0; names && i < f->n; i++) {
    const top_name *t = &f->v[i];
    json_t *o = cli_queue_json(&t->q, f->now_us);
    if (o == NULL ||
        json_object_set_new(o, "claimed", json_integer((json_int_t)t->claimed)) ||
        json_object_set_new(o, "delayed", json_integer((json_int_t)t->delayed)) ||
        json_object_set_new(o, "oldest_ready_seconds",
                            t->oldest_us ? json_real((double)(f->now_us -
                                                              t->oldest_us) /
                                                     1e6)
                                         : json_null())) {
      json_decref(o);
      json_decref(names);
      names = NULL;
    } else if (json_array_append_new(names, o)) {
      /* The array took o even when it failed (jansson frees it then). */
      json_decref(names);
      names = NULL;
    }
  }
  for (size_t i = 0; lapsing && i < f->nl; i++) {
    const top_lapse *l = &f->l[i];
    char exp[40];
    cli_format_time(exp, sizeof exp, l->lease_us);
    if (json_array_append_new(
            lapsing, json_pack("{s:s,s:s,s:s,s:s,s:f}", "uuid", l->uuid,
                               "name", l->name, "owner", l->owner,
                               "lease_expires", exp, "lapses_in_seconds",
                               (double)(l->lease_us - f->now_us) / 1e6))) {
      json_decref(lapsing);
      lapsing = NULL;
    }
  }
  if (names == NULL || lapsing == NULL) {
    json_decref(names);
    json_decref(lapsing);
    return NULL;
  }
  json_t *oldest = f->oldest_us
                       ? json_real((double)(f->now_us - f->oldest_us) / 1e6)
                       : json_null();
  json_t *oldest_name =
      f->oldest_name ? json_string(f->oldest_name) : json_null();
  return json_pack(
      "{s:s,s:s,s:b,s:{s:I,s:I,s:I,s:I,s:I,s:I},s:o,s:o,"
      "s:{s:i,s:I,s:I,s:f,s:f},s:o,s:o,s:I}",
      "time", when, "board", jb_board_path(b), "board_paused",
      f->board_paused, "jobs", "ready", (json_int_t)f->ready, "ready_paused",
      (json_int_t)f->ready_paused, "delayed", (json_int_t)f->delayed,
      "delayed_due", (json_int_t)f->delayed_due, "claimed",
      (json_int_t)f->claimed, "dead_letters", (json_int_t)f->dead,
      "oldest_ready_seconds", oldest ? oldest : json_null(),
      "oldest_ready_name", oldest_name ? oldest_name : json_null(),
      "throughput", "window_seconds", WINDOW_S, "consumed",
      (json_int_t)f->consumed, "completed", (json_int_t)f->completed,
      "consumed_per_second", (double)f->consumed / WINDOW_S,
      "completed_per_second", (double)f->completed / WINDOW_S, "names",
      names, "lapsing", lapsing, "log_next", (json_int_t)f->log_next);
}

/* Write `text` to the terminal: each line cut to `cols` characters (a
 * wrapped line would scroll the frame), after clear and home. */
static int put_screen(const char *text, int cols) {
  FILE *o = stdout;
  fputs("\033[H\033[2J", o);
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p), cut = 0;
    int chars = 0;
    while (cut < len && (chars < cols || ((unsigned char)p[cut] & 0xC0) == 0x80)) {
      if (((unsigned char)p[cut] & 0xC0) != 0x80) chars++;
      cut++;
    }
    fwrite(p, 1, cut, o);
    if (e == NULL) break;
    p = e + 1;
    if (*p) fputc('\n', o); /* no newline after the last: no scroll */
  }
  return fflush(o) == 0 ? 0 : -1;
}

static void window_size(int *rows, int *cols) {
  struct winsize ws;
  *rows = 24;
  *cols = 80;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
    *rows = ws.ws_row;
    *cols = ws.ws_col;
  }
}

/* ------------------------------------------------------------- keys */

/* q read from a terminal on stdin ends the loop: a thread of its own
 * reads the keys, since the main one sleeps in jb_log_wait. */
typedef struct {
  jb_board *b;
  int stop[2]; /* a pipe: the main thread's "stop reading" */
  atomic_int quit; /* written by the keys' thread, read by the main one */
} keys;

static void *read_keys(void *arg) {
  keys *k = arg;
  struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                        {.fd = k->stop[0], .events = POLLIN}};
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    if (p[1].revents) return NULL;
    char c;
    ssize_t n = read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == 'q' || c == 'Q') { /* end of input quits too */
      k->quit = 1;
      jb_board_interrupt(k->b);
      return NULL;
    }
  }
}

/* SIGWINCH: redraw at once for the new size. */
static jb_board *volatile winch_board;
static volatile sig_atomic_t winched;

static void on_winch(int sig) {
  (void)sig;
  winched = 1;
  if (winch_board) jb_board_interrupt(winch_board);
}

/* The terminal's settings while top runs (`raw`) and before (`saved`):
 * put back by the handlers of the signals that stop or end top without
 * the loop seeing them (SIGINT and SIGTERM end the loop, which puts them
 * back), and applied again when top continues after a stop. */
static struct termios term_saved, term_raw;
static volatile sig_atomic_t term_is_raw;

static void term_restore(void) {
  /* Whenever the settings were read: a change to raw that reported a
   * failure (EINTR) may have been applied all the same, and putting the
   * saved settings back is harmless when it was not. */
  if (!term_is_raw) return;
  tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
  static const char show[] = "\033[?25h\n";
  if (write(STDOUT_FILENO, show, sizeof show - 1) < 0) {
  }
}

/* SIGQUIT, SIGHUP: the settings back, then the signal's own end. */
static void on_end(int sig) {
  int e = errno;
  term_restore();
  signal(sig, SIG_DFL);
  raise(sig);
  errno = e;
}

/* SIGTSTP (Ctrl-Z): the settings back, stop; when continued (SIGCONT),
 * raw again and a redraw. */
static void on_stop(int sig) {
  (void)sig;
  int e = errno;
  term_restore();
  /* raise, not kill(getpid()): a process-directed SIGSTOP goes to the
   * main thread, and this one (the keys' thread, say) would run on past
   * the call and make the terminal raw again before the group stops;
   * sent to this thread, it stops before the call returns. */
  raise(SIGSTOP);
  if (term_is_raw) {
    tcsetattr(STDIN_FILENO, TCSANOW, &term_raw);
    static const char hide[] = "\033[?25l";
    if (write(STDOUT_FILENO, hide, sizeof hide - 1) < 0) {
    }
  }
  on_winch(SIGWINCH);
  errno = e;
}

/* Install (`on`) or take back the handlers of the signals above and
 * SIGWINCH's; SA_RESTART, so that a write to the terminal they cut into
 * goes on instead of failing with EINTR (which ended top with 1). */
static void term_signals(bool on) {
  static const int sigs[] = {SIGQUIT, SIGHUP, SIGTSTP, SIGWINCH};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = !on                  ? SIG_DFL
                    : sigs[i] == SIGTSTP  ? on_stop
                    : sigs[i] == SIGWINCH ? on_winch
                                          : on_end;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

/* ------------------------------------------------------------- the loop */

/* Read and show one frame: 0, or the exit code after saying why. */
static int show(jb_board *b, const cli_opts *o, bool live,
                int64_t interval_ms) {
  top_frame f;
  int st = read_frame(&f, b, o);
  int rc = 0;
  if (st == TOP_NOMEM) st = JB_ENOMEM;
  if (st != JB_OK) {
    frame_free(&f);
    return cli_fail(st);
  }
  if (o->json) {
    json_t *j = frame_json(&f, b);
    rc = j == NULL ? cli_fail(JB_ENOMEM)
                   : cli_json_print(j) ? CLI_EXIT_ERROR : 0;
  } else if (live) {
    int rows, cols;
    window_size(&rows, &cols);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m == NULL) {
      rc = cli_fail(JB_ENOMEM);
    } else {
      put_frame(m, &f, b, rows, true, interval_ms);
      if (fclose(m) != 0) rc = cli_fail(JB_ENOMEM);
      else if (put_screen(text, cols) != 0) rc = CLI_EXIT_ERROR;
    }
    free(text);
  } else {
    put_frame(stdout, &f, b, 0, false, interval_ms);
    if (fflush(stdout) != 0) rc = CLI_EXIT_ERROR;
  }
  frame_free(&f);
  return rc;
}

/* Sleep until the change log moves past *cursor or `ms` pass. JB_OK
 * (moved: *cursor is the log's end now), JB_ETIMEDOUT, or a failure. */
static int wait_change(jb_board *b, uint64_t *cursor, int64_t ms) {
  jb_event ev[1];
  size_t n = 0;
  uint64_t first = 0;
  int st = jb_log_wait(ev, &n, &first, b, *cursor, 1, ms);
  if (st == JB_OK || st == JB_ETRIMMED) /* the backlog is of no interest */
    st = jb_log_bounds(NULL, cursor, b);
  return st;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {.tv_sec = ms / 1000,
                        .tv_nsec = (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL); /* a signal cuts it short: the caller looks then */
}

static int live_loop(jb_board *b, const cli_opts *o, int64_t interval_ms) {
  uint64_t cursor = 0;
  int st = jb_log_bounds(NULL, &cursor, b);
  if (st != JB_OK) return cli_fail(st);
  keys k = {.b = b, .stop = {-1, -1}};
  pthread_t reader;
  bool reading = false;
  /* The handlers before the terminal changes: a signal between the two
   * would leave it changed. */
  cli_cancel_on_signals(b);
  winch_board = b;
  term_signals(true);
  if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &term_saved) == 0) {
    term_raw = term_saved;
    term_raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* keys without Enter */
    term_raw.c_cc[VMIN] = 1;
    term_raw.c_cc[VTIME] = 0;
    /* Set first, and kept whatever tcsetattr says: a signal during the
     * change, or a change that says it failed, still restores. */
    term_is_raw = 1;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &term_raw) != 0 && errno == EINTR)
      tcsetattr(STDIN_FILENO, TCSANOW, &term_raw);
    if (pipe(k.stop) == 0 &&
        pthread_create(&reader, NULL, read_keys, &k) == 0)
      reading = true;
  }
  fputs("\033[?25l", stdout); /* no cursor blinking over the frame */
  int rc = 0;
  for (;;) {
    int64_t drawn = cli_mono_ms();
    if ((rc = show(b, o, true, interval_ms)) != 0) break;
    int64_t cost = cli_mono_ms() - drawn;
    int64_t due = drawn + interval_ms;
    st = JB_ETIMEDOUT;
    for (;;) {
      if (k.quit || cli_caught_signal()) break;
      int64_t left = due - cli_mono_ms();
      if (left <= 0) break;
      st = wait_change(b, &cursor, left);
      if (st == JB_EINTERRUPTED && winched && !k.quit &&
          !cli_caught_signal()) {
        winched = 0;
        jb_board_interrupt_reset(b);
        st = JB_OK;
      }
      if (st != JB_ETIMEDOUT) break;
    }
    if (k.quit || cli_caught_signal()) break;
    if (st != JB_OK && st != JB_ETIMEDOUT) {
      rc = cli_fail(st);
      break;
    }
    /* The pause before the next frame, as long as this one took to read
     * (a frame that takes longer than --interval is not followed at once
     * by the next: half a CPU at most), and for a frame a change asked
     * for at least MIN_FRAME_MS; in short sleeps, so that q (which only
     * interrupts the board's waits) is seen soon. */
    int64_t pause = st == JB_OK && MIN_FRAME_MS > cost * 2 ? MIN_FRAME_MS
                                                            : cost * 2;
    int64_t next = drawn + pause;
    for (int64_t gap; (gap = next - cli_mono_ms()) > 0;) {
      if (k.quit || cli_caught_signal()) break;
      sleep_ms(gap < 100 ? gap : 100);
    }
    if (k.quit || cli_caught_signal()) break;
  }
  fputs("\033[?25h\n", stdout);
  fflush(stdout);
  if (reading) {
    if (write(k.stop[1], "x", 1) == 1) pthread_join(reader, NULL);
  }
  if (k.stop[0] >= 0) {
    close(k.stop[0]);
    close(k.stop[1]);
  }
  if (term_is_raw) tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
  term_is_raw = 0;
  term_signals(false);
  winch_board = NULL;
  cli_cancel_on_signals(NULL);
  if (rc == 0 && cli_caught_signal() == SIGTERM) rc = 128 + SIGTERM;
  return rc;
}

int cmd_top(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_top, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  int64_t interval_ms = 2000;
  if (o.flush_interval &&
      !cli_parse_seconds(o.flush_interval, 100, 86400000, &interval_ms))
    return cli_duration_usage(&cli_cmd_top, "--interval", o.flush_interval,
                              1000, 100, 86400000);
  bool live = !o.once && !o.json && isatty(STDOUT_FILENO);
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, CLI_OPEN_READ)) != 0) return rc;
  rc = live ? live_loop(b, &o, interval_ms) : show(b, &o, false, interval_ms);
  jb_board_close(b);
  return rc;
}
