/*
 * cli_common.h - option parsing, board opening and help text shared by the
 * jobboard subcommands (everything but demo, which parses its own
 * options). cli.h is the contract with demo; this header is the rest of
 * the CLI's internals.
 */
#ifndef JOBBOARD_CLI_COMMON_H
#define JOBBOARD_CLI_COMMON_H

#include <stdio.h>

#include "cli.h"

/* Options beyond the ones every board command takes (--board,
 * --durability, --json, --help). */
enum {
  CLI_O_WHO = 1u << 0,       /* --who NAME */
  CLI_O_POST = 1u << 1,      /* --details --priority --book-name --book-uuid --batch */
  CLI_O_UNCLAIMED = 1u << 2, /* --unclaimed */
  CLI_O_LIMIT = 1u << 3,     /* --limit N */
  CLI_O_LEASE = 1u << 4,     /* --lease DURATION */
  CLI_O_TOKEN = 1u << 5,     /* --token T */
  CLI_O_TIMEOUT = 1u << 6,   /* --timeout DURATION */
  CLI_O_WAIT = 1u << 7,      /* --wait DURATION (claim-next) */
  CLI_O_CLAIMABLE = 1u << 8, /* --claimable */
  CLI_O_RESULT = 1u << 9,    /* --result JSON, --failed (consume) */
  CLI_O_WATCH = 1u << 10,    /* --from SEQ --count N (watch) */
  CLI_O_REDIS = 1u << 11,    /* --redis URL --namespace NS: cli_open
                                connects the board to its Redis (cli_sync.c) */
  CLI_O_SYNC = 1u << 12,     /* --poll S --keepalive S --verify-every S (sync; with
                                CLI_O_REDIS, but cli_open does not connect) */
  CLI_O_COUNT = 1u << 13,    /* --count N (claim-next: jobs to claim) */
  CLI_O_VERIFY = 1u << 14,   /* --verify (status) */
  CLI_O_LIFE = 1u << 15,     /* --delay --not-before --unique --max-attempts
                                --time-limit --backoff --backoff-max
                                --max-snoozes --expires --expires-dead
                                (post) */
  CLI_O_RETRY = 1u << 16,    /* --reason --retry-in --dead (abandon) */
  CLI_O_CANCEL = 1u << 17,   /* --force --all --yes (cancel) */
  CLI_O_DEAD = 1u << 18,     /* --older-than --all --yes --keep-attempts
                                --cause --dry-run --as-new */
  CLI_O_HISTORY = 1u << 19,  /* --outcome LIST --name NAME --since TIME
                                --until TIME (history) */
  CLI_O_SCHEDULE = 1u << 20, /* --every --cron --job-name --catch-up --tz
                                --overlap --start
                                --replace --at --loop (schedule) */
  CLI_O_CREATE = 1u << 21,   /* --create (work, wait, watch, claim-next, sync:
                                make the board instead of waiting for it) */
  CLI_O_MAPSIZE = 1u << 22,  /* --map-size SIZE (init) */
  CLI_O_BY_NAME = 1u << 23,  /* --by-name (stats) */
  CLI_O_LISTEN = 1u << 24,   /* --listen ADDR:PORT (metrics) */
  CLI_O_FLUSH = 1u << 25,    /* --interval MS (flush; top: SECONDS, parsed
                                by the command) */
  CLI_O_IN_ORDER = 1u << 27, /* --in-order (claim-next, work: the names in
                                the order given) */
  CLI_O_NAMES = 1u << 26,    /* --name NAME, repeated (claim-next, work,
                                list, count, watch, history) */
  CLI_O_RETAIN = 1u << 28,   /* --history-max --history-max-age --dead-max
                                --dead-max-age (retention) */
  CLI_O_TOP = 1u << 29,      /* --interval DURATION --once (top) */
  CLI_O_WEB = 1u << 30,      /* --actions --token-file FILE (web) */
  CLI_O_FORMAT = 1u << 31,   /* --format TEMPLATE --no-header (list) */
};

/* cli_open's flags besides JB_OPEN_CREATE: */
enum {
  /* A reading command: a board this process cannot write is opened
   * read-only (JB_OPEN_READONLY), with one note on stderr. */
  CLI_OPEN_READ = 1u << 16,
  /* Wait for the board to appear (an empty directory counts as "not
   * yet") within opts->timeout_ms (-1: forever), unless --create. The
   * time spent is taken from opts->timeout_ms. */
  CLI_OPEN_WAIT = 1u << 17,
  /* The command says itself that it made the board (init): no note. */
  CLI_OPEN_SAYS_CREATED = 1u << 18,
};

/* One subcommand: what it accepts and what its --help says. */
typedef struct {
  const char *name;     /* "claim-next" */
  const char *summary;  /* one line for `jobboard --help` */
  const char *help;     /* the whole --help text */
  unsigned options;     /* CLI_O_* */
  int min_args;         /* operands (NAME, UUID) */
  int max_args;
  const char *arg_name; /* "UUID": named when one is missing */
} cli_command;

/* What the command line said. Strings point into argv. */
typedef struct {
  const char *board;       /* --board, NULL when not given */
  jb_durability durability;
  int json;
  const char *who;
  const char *details;
  const char *priority;
  const char *book_name;
  const char *book_uuid;
  int batch;
  int unclaimed;
  int has_limit;
  unsigned long long limit;
  int64_t lease_ms;  /* --lease, in milliseconds; 0 when not given */
  uint64_t token;    /* --token; 0 when not given */
  int64_t timeout_ms; /* --timeout / --wait in milliseconds; -1: no limit
                         (`inf`, or not given) */
  int has_wait;       /* --wait was given */
  int claimable;      /* --claimable */
  const char *result; /* --result: JSON text, checked by the command */
  int failed;         /* --failed */
  uint64_t from;      /* --from: a log sequence (>= 1); 0 when not given */
  uint64_t count;     /* --count (>= 1); 0 when not given */
  const char *redis;  /* --redis URL */
  const char *ns;     /* --namespace NS */
  int poll_ms;        /* --poll, in milliseconds; 0 when not given */
  int keepalive_ms;   /* --keepalive, in milliseconds; 0 when not given */
  int verify_ms;      /* --verify-every, in ms; 0 when not given, -1: 0 s */
  int verify;         /* --verify */
  int detach;         /* --detach (sync) */
  /* A job's life (CLI_O_LIFE, CLI_O_RETRY, CLI_O_CANCEL, CLI_O_DEAD). */
  int64_t delay_ms;       /* --delay; 0 when not given */
  int64_t not_before_us;  /* --not-before; 0 when not given */
  const char *unique;     /* --unique KEY */
  uint32_t max_attempts;  /* --max-attempts; 0 when not given */
  int64_t time_limit_ms;  /* --time-limit; 0 when not given */
  int64_t backoff_ms;     /* --backoff; 0 when not given */
  int64_t backoff_max_ms; /* --backoff-max; 0 when not given */
  uint32_t max_snoozes;   /* --max-snoozes; 0 when not given */
  int64_t expires_ms;     /* --expires; 0 when not given */
  int expires_dead;       /* --expires-dead */
  const char *reason;     /* --reason TEXT */
  int64_t retry_in_ms;    /* --retry-in: -1 not given, -2 "backoff" */
  int dead;               /* --dead */
  int force, all, yes;    /* --force --all --yes */
  int64_t older_than_ms;  /* --older-than; -1 when not given */
  int keep_attempts;      /* --keep-attempts */
  int max_attempts_none;  /* --max-attempts none */
  const char *cause;      /* --cause CAUSE (dead), checked by the command */
  int dry_run;            /* --dry-run (dead requeue, purge) */
  int as_new;             /* --as-new (dead requeue) */
  /* Periodic jobs (CLI_O_SCHEDULE). */
  int64_t every_ms;       /* --every; 0 when not given */
  const char *cron;       /* --cron SPEC */
  const char *job_name;   /* --job-name NAME */
  /* --name, every one given (CLI_O_NAMES). */
  const char *names[JB_CLAIM_NAMES_MAX];
  size_t n_names;
  int in_order; /* --in-order */
  const char *catch_up;   /* --catch-up skip|all */
  const char *tz;         /* --tz ZONE */
  const char *overlap;    /* --overlap skip|queue */
  int64_t start_us;       /* --start; 0 when not given */
  int replace;            /* --replace */
  int64_t at_us;          /* --at; 0 when not given */
  int loop;               /* --loop */
  uint32_t outcomes;  /* --outcome: JB_HISTORY_END bits; 0 when not given */
  const char *name;   /* the last --name, NULL when not given */
  int64_t since_us;   /* --since; 0 when not given */
  int64_t until_us;   /* --until; 0 when not given */
  int create;         /* --create */
  int board_appeared; /* cli_open waited for the board (CLI_OPEN_WAIT) */
  size_t map_size;    /* --map-size, in bytes; 0 when not given */
  int by_name;        /* --by-name */
  const char *listen; /* --listen ADDR:PORT, NULL when not given */
  const char *flush_interval; /* --interval MS (flush), SECONDS (top); NULL
                                 when not given */
  int once;           /* --once (top) */
  int actions;        /* --actions (web) */
  const char *token_file; /* --token-file FILE (web), NULL when not given */
  const char *format; /* --format TEMPLATE (list), NULL when not given */
  int no_header;      /* --no-header (list) */
  /* Retention (CLI_O_RETAIN): the text given, parsed by the command; NULL
   * when not given. */
  const char *history_max, *history_max_age, *dead_max, *dead_max_age;
  int quiet;          /* --quiet: no notes on stderr (cli_board.c) */
  unsigned options;   /* the command's CLI_O_* (for cli_open) */
  char **args; /* operands */
  int nargs;
} cli_opts;

/* cli_parse's "no exit yet: run the command". */
#define CLI_CONTINUE (-1)

/*
 * Parse argv (argv[0] is the subcommand's name) with getopt_long, allowing
 * the options of `cmd` and the operand count it takes. Prints the help and
 * returns CLI_EXIT_OK for --help; prints one usage line and returns
 * CLI_EXIT_USAGE on a bad command line; else returns CLI_CONTINUE.
 */
int cli_parse(cli_opts *opts, const cli_command *cmd, int argc, char **argv);

/* Print "jobboard: CMD: <message> (try 'jobboard CMD --help')" and return
 * CLI_EXIT_USAGE. */
int cli_cmd_usage(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* JOBBOARD_FLUSH_INTERVAL (durability interval's period for this
 * process): *ms, 0 when unset; 0, or CLI_EXIT_USAGE after saying why. */
int cli_flush_interval(int64_t *ms);
/* A flush interval as the CLI takes it: milliseconds, or with a unit
 * (250ms, 2s), 0 to 86400000. 0, or -1 when it is none. */
int cli_parse_interval(int64_t *ms, const char *v);

/*
 * Open the board named by the options (JB_OPEN_CREATE in `flags` for the
 * commands that make a board: init, post, schedule add; --create adds it;
 * CLI_OPEN_READ and CLI_OPEN_WAIT above). For a command with CLI_O_REDIS
 * (and not CLI_O_SYNC) the board is then connected to the Redis it is
 * synced with (cli_sync_join). Returns 0, or prints the error and returns
 * its exit code.
 */
int cli_open(jb_board **out, cli_opts *opts, unsigned flags);

/* ---------------------------------------- notes (cli_board.c) */

/* --quiet, for the whole process (cli_parse sets it): the notes below are
 * not printed. */
void cli_set_quiet(void);
int cli_quiet(void);
/* 1 when `dir` holds no board yet (no data.mdb). */
int cli_board_absent(const char *dir);
/* "jobboard: note: created a new board at DIR" (saying when DIR is the
 * default), unless --quiet. */
void cli_note_created(const cli_opts *o, const char *dir);
/* The read-only view's note: at most once a process, never with --quiet;
 * `nolock`: read without LMDB's reader locks. */
void cli_note_readonly(const char *why, int nolock);

/* ------------------------------------------------ Redis (cli_sync.c) */

/* Without Redis support: --redis, --namespace or $JOBBOARD_REDIS given to
 * `cmd` is a usage error ("built without Redis support"). Returns 0 or,
 * after printing why, CLI_EXIT_USAGE. With Redis support: 0. */
int cli_sync_check(const cli_command *cmd, const cli_opts *opts);

/*
 * Connect board handle `b` to the Redis it is synced with, for the jobs
 * Redis decides. The URL and namespace: --redis / --namespace, else
 * $JOBBOARD_REDIS / $JOBBOARD_NAMESPACE, else what the board remembers
 * (given ones are remembered: jb_sync_board_configure). None known: nothing
 * to do. A server that cannot be reached is not an error (local jobs work
 * without it): the reason is kept for cli_fail's message. Returns 0, or
 * prints the error (bad URL or namespace, wrong password, another
 * namespace than the board's) and returns the exit code (2 for those).
 * The connection lives until cli_sync_end (after `b` is closed).
 */
int cli_sync_join(jb_board *b, const cli_opts *opts);

/* Close the connection cli_sync_join made, if any (main calls it once the
 * command has returned and closed its board). */
void cli_sync_end(void);

/* What cli_fail adds to the message of a JB_EOFFLINE failure: why Redis
 * could not be used ("" when nothing is known). */
const char *cli_sync_offline_note(void);

/* While cli_sync_join's connection failed: try again (at most every few
 * seconds; 1 when now connected). For long-running commands (work). */
int cli_sync_retry(jb_board *b);
/* 1 when a URL is known but the board is not connected to it. */
int cli_sync_pending(void);
/* 1 when cli_sync_join (or a retry) connected the board to Redis. */
int cli_sync_connected(void);

/* With Redis support only (cmd_sync.c uses them):
 * cli_sync_resolve: the URL and namespace to use for `b` (*url NULL: none
 * known; free() both), *given set when the command line or the
 * environment named either. Nothing is written to the board.
 * cli_sync_remember: have the board remember what the command line or the
 * environment gave (once it proved usable: a bad URL or a wrong password
 * is never remembered).
 * Both return 0 or, after printing the error, its exit code (2 for
 * another namespace than the board's). The URL of cli_sync_resolve is
 * the one to connect with: its password found (the given URL's,
 * $JOBBOARD_REDIS_PASSWORD, the board's sync.credentials), so it is never
 * to be remembered or shown: cli_sync_given_url is what was given
 * (--redis, else $JOBBOARD_REDIS; NULL: neither). */
int cli_sync_resolve(char **url, char **ns, int *given, jb_board *b,
                     const cli_opts *opts);
int cli_sync_remember(jb_board *b, const cli_opts *opts);
const char *cli_sync_given_url(const cli_opts *opts);
/* tools/cli_sync_detach.c (Redis support only): `sync --detach`; the
 * first sync's line naming the namespace it chose (stderr, when none was
 * given nor kept); the last line of the board's detach record (free() it;
 * NULL: never detached). */
int cli_sync_detach(const cli_command *cmd, cli_opts *opts);
void cli_sync_say_namespace(jb_board *b, const cli_opts *opts, const char *ns);
char *cli_sync_last_detach(jb_board *b);

/* A size in bytes, with an optional suffix K, M, G or T (powers of 1024;
 * "KiB", "MB" and the like read the same). Returns 0, or -1 when `text`
 * is not one. */
int cli_parse_size(size_t *out, const char *text);

/* A point in time as --since, --until and --not-before take it
 * (CLI_HELP_TIME; also "now" and "+SECONDS", from now), into microseconds
 * since the epoch. Returns 0, or -1 when `text` is not one. */
int cli_parse_time(int64_t *us, const char *text);

/* --who must be given and not empty. Returns 0 or, after printing why,
 * CLI_EXIT_USAGE. */
int cli_need_who(const cli_command *cmd, const cli_opts *opts);

/* A job uuid operand must be 36 characters of uuid text. Returns 0 or,
 * after printing the same message the library gives, CLI_EXIT_USAGE. */
int cli_check_uuid(const char *what, const char *text);
/* The same test, silent: is `text` 36 characters of uuid text? */
bool cli_is_uuid(const char *text);

/* A duration (CLI_HELP_DURATION: 500ms, 90s, 5m, 1h30m, 7d; a bare
 * number is seconds, fractions allowed) to milliseconds within
 * min_ms..max_ms: false when `text` is not one (cli_duration_usage says
 * why). In cli_duration.c. */
bool cli_parse_seconds(const char *text, int64_t min_ms, int64_t max_ms,
                       int64_t *out);

/* Write `s` for a human: control characters as C escapes (\n, \t, \x01),
 * so that one job is one line. */
void cli_put_text(FILE *f, const char *s);

/* Make SIGINT and SIGTERM cancel the waits on `b` (jb_board_interrupt) instead
 * of killing the process, so that a waiting command ends cleanly. Call it
 * with NULL before closing `b`, so that a late signal does not reach a
 * closed handle. */
void cli_cancel_on_signals(jb_board *b);
/* The signal that cancelled (0: none). A command that ends with
 * JB_EINTERRUPTED exits 128 + that signal, as a shell reports a killed one. */
int cli_caught_signal(void);

/* Call `visit` with every job on the board (jb_iter_open's `flags`), in
 * listing order, a streamed read; a posting that does not decode is
 * passed over (`check` reports it). A non-zero return of visit stops the
 * walk and is returned; else JB_OK or the iterator's failure. */
int cli_walk_jobs(jb_board *b, unsigned flags,
                  int (*visit)(const jb_job *j, void *arg), void *arg);

/* cli_walk_jobs from the position and with the filters of `o`
 * (jb_iter_open_opts); `visit` also gets the iterator, for its cursor. */
int cli_walk_jobs_opts(jb_board *b, const jb_iter_options *o,
                       int (*visit)(const jb_job *j, jb_iter *it, void *arg),
                       void *arg);

/* The wall clock, microseconds since the epoch. */
int64_t cli_wall_now_us(void);
/* CLOCK_MONOTONIC in milliseconds, for deadlines and intervals. */
int64_t cli_mono_ms(void);

/* ------------------------------------- dead letters (cli_dead.c) */

/* The jb_dead_cause named `text`, or -1. */
int cli_dead_cause(const char *text);
/* Whether the options select letters: --all, --name, --cause or
 * --older-than. */
bool cli_dead_selects(const cli_opts *o);
/* Whether letter `l` matches the filters (all of them; none: every one);
 * --older-than counts back from now_us. */
bool cli_dead_matches(const cli_opts *o, int64_t now_us,
                      const jb_dead_letter *l);
/* The wall clock, microseconds since the epoch. */
int64_t cli_dead_now_us(void);
/* `dead requeue` (purge false) or `dead purge` of the letters the options
 * select, each in a write transaction of its own, with the count printed
 * (--json: the uuids too); with --dry-run `line` prints each (as `dead
 * list` does) and nothing changes. Returns the exit code. */
int cli_dead_bulk(jb_board *b, const cli_opts *o, bool purge,
                  int (*line)(const jb_dead_letter *l, void *payload));

/* Print a help text (stdout); return CLI_EXIT_OK. */
int cli_help(const cli_command *cmd);

/* Every subcommand of the CLI, for dispatch and the global help. */
typedef struct {
  const cli_command *cmd; /* NULL for demo (own parsing) */
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} cli_entry;
extern const cli_entry cli_commands[];
extern const size_t cli_ncommands;

/* The subcommands written here (cli.h declares demo). */
int cmd_post(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_claim(int argc, char **argv);
int cmd_claim_next(int argc, char **argv);
int cmd_abandon(int argc, char **argv);
int cmd_snooze(int argc, char **argv);
int cmd_consume(int argc, char **argv);
int cmd_trash(int argc, char **argv);
int cmd_owner(int argc, char **argv);
int cmd_state(int argc, char **argv);
int cmd_count(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_queues(int argc, char **argv);
int cmd_cap(int argc, char **argv);
int cmd_rate(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_salvage(int argc, char **argv); /* cmd_salvage.c */
int cmd_extend(int argc, char **argv);
int cmd_progress(int argc, char **argv);
int cmd_expires_in(int argc, char **argv);
int cmd_entities(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_history(int argc, char **argv);   /* cmd_complete.c */
int cmd_wait_done(int argc, char **argv); /* cmd_complete.c */
int cmd_work(int argc, char **argv);      /* cmd_work.c */
int cmd_watch(int argc, char **argv);
int cmd_stats(int argc, char **argv);   /* cmd_stats.c */
int cmd_metrics(int argc, char **argv); /* cmd_stats.c */
int cmd_web(int argc, char **argv);     /* cmd_web.c */
int cmd_sync(int argc, char **argv);   /* cmd_sync.c */
int cmd_status(int argc, char **argv); /* cmd_sync.c */
int cmd_cancel(int argc, char **argv); /* cmd_life.c */
int cmd_run_now(int argc, char **argv); /* cmd_life.c */
int cmd_dead(int argc, char **argv);   /* cmd_life.c */
int cmd_policy(int argc, char **argv); /* cmd_life.c */
int cmd_schedule(int argc, char **argv); /* cmd_schedule.c */
int cmd_init(int argc, char **argv);     /* cmd_init.c */
int cmd_flush(int argc, char **argv);    /* cmd_flush.c */
int cmd_retention(int argc, char **argv); /* cmd_retention.c */
int cmd_top(int argc, char **argv);       /* cmd_top.c */

extern const cli_command cli_cmd_post, cli_cmd_list, cli_cmd_show,
    cli_cmd_claim, cli_cmd_claim_next, cli_cmd_abandon, cli_cmd_snooze,
    cli_cmd_consume, cli_cmd_trash, cli_cmd_owner, cli_cmd_state, cli_cmd_count, cli_cmd_check,
    cli_cmd_extend, cli_cmd_expires_in, cli_cmd_entities, cli_cmd_wait,
    cli_cmd_history, cli_cmd_wait_done, cli_cmd_work, cli_cmd_watch,
    cli_cmd_sync, cli_cmd_status, cli_cmd_salvage, cli_cmd_cancel,
    cli_cmd_dead, cli_cmd_policy, cli_cmd_schedule, cli_cmd_init,
    cli_cmd_stats, cli_cmd_metrics, cli_cmd_flush, cli_cmd_pause,
    cli_cmd_resume, cli_cmd_queues, cli_cmd_cap, cli_cmd_rate, cli_cmd_progress,
    cli_cmd_retention, cli_cmd_top, cli_cmd_web, cli_cmd_run_now;

/* --name, for the commands that choose jobs by name (VERB: "claim"). */
#define CLI_HELP_NAMES(VERB, PAST)                                             \
  "  --name NAME         " VERB " only jobs named NAME; repeat it for\n"       \
  "                      several names (listing order across them); a\n"      \
  "                      NAME ending in '*' is a prefix ('images.*').\n"      \
  "                      Jobs of paused names are never " PAST "\n"     \
  "  --in-order          with --name: from the first NAME, in the order\n"  \
  "                      given, that has a job (a later NAME's only when\n" \
  "                      the earlier ones have none), not listing order\n"

/* --name, for the commands that show jobs or events by name (WHAT:
 * "jobs", "events of jobs"). */
#define CLI_HELP_NAME_FILTER(WHAT)                                             \
  "  --name NAME         only " WHAT " named NAME; repeat it for\n"           \
  "                      several names; a NAME ending in '*' is a prefix\n"  \
  "                      ('images.*'; '*': every name)\n"

/* The pauses in force (jobboard pause), read with one jb_queues_foreach:
 * the whole board's, and every name whose controls were ever set (paused
 * or resumed since, a cap, a rate limit), sorted by name for
 * cli_pauses_find; with each its rate limit (jobboard rate). */
typedef struct {
  int board;   /* the whole board is paused */
  struct cli_pause {
    char *name;
    int paused;
    uint32_t rate;      /* claims per period_ms (0: no rate limit) */
    uint64_t period_ms;
  } *v;
  size_t n;
} cli_pauses;

/* 0, or prints the error and returns its exit code (nothing to free
 * then). The time grows with the ready jobs (jb_queues_foreach counts
 * them). */
int cli_pauses_read(cli_pauses *p, jb_board *b);
/* The entry of `name` (NULL: its pause was never set). */
const struct cli_pause *cli_pauses_find(const cli_pauses *p, const char *name);
/* Is `name` paused on its own (the board's pause aside)? */
int cli_pauses_name(const cli_pauses *p, const char *name);
void cli_pauses_free(cli_pauses *p);

/* `queues`' cap and rate columns of a name: "3/4" ("3/4*": its prefix's
 * cap), "100/60s" ("100/60s*", and " +2.5s" while its next token is that
 * far after now_us); "" without one. In cmd_queues.c. */
void cli_queue_columns(char cap[32], char rate[64], const jb_queue_info *q,
                       int64_t now_us);

/* Help text pieces every board command repeats. */
#define CLI_HELP_BOARD_OPTIONS                                                 \
  "  --board DIR         the board directory (default: $JOBBOARD_DIR if set,\n" \
  "                      else ./jobboard.d)\n"                                  \
  "  --durability MODE   how this command's commits reach the disk:\n"         \
  "                        full    every commit is flushed (the default);\n"   \
  "                                survives power loss and kernel crashes\n"   \
  "                        normal  one flush per commit; a power loss may\n"   \
  "                                undo the last commit, never corrupt\n"      \
  "                        interval  no flush per commit; the board is\n"   \
  "                                flushed every interval (1 s; see\n"        \
  "                                JOBBOARD_FLUSH_INTERVAL) and a power\n"     \
  "                                loss comes back to the last flushed\n"     \
  "                                state, never a damaged board\n"            \
  "                        none    the OS writes when it likes: fastest.\n"    \
  "                                Survives any process crash (kill -9\n"      \
  "                                too), but a POWER LOSS OR KERNEL CRASH\n"   \
  "                                CAN LOSE RECENT COMMITS AND CORRUPT THE\n"  \
  "                                BOARD. Do not use it on a device that\n"    \
  "                                can lose power unless the board can be\n"   \
  "                                thrown away.\n"                             \
  "  --json              print one JSON object per line on stdout; a failure\n" \
  "                      ends it with {\"error\": {\"code\", \"exit\",\n"       \
  "                      \"message\"}} (jobboard(1), JSON OUTPUT)\n"            \
  "  --quiet             no notes on stderr (a new board made, a read-only\n" \
  "                      view); errors are still printed\n"                   \
  "  -h, --help          print this help and exit\n"                           \
  "Global options (--board, --durability, --json, --quiet) may also come\n"  \
  "before the subcommand's name.\n"

/* --create's help lines (work, wait, watch, claim-next, sync). */
#define CLI_HELP_CREATE                                                        \
  "  --create            make the board when it does not exist (as `jobboard\n" \
  "                      init`). Without it a missing board (an empty\n"      \
  "                      directory too) is waited for, saying so once on\n"   \
  "                      stderr, within the command's time limit (exit 7\n"   \
  "                      when it runs out; SIGINT or SIGTERM: 130 or 143;\n"  \
  "                      a limit of 0 looks once: exit 3)\n"

/* --timeout's help line(s). */
#define CLI_HELP_TIMEOUT                                                       \
  "  --timeout DURATION  give up after this long (fractions allowed; 0 checks\n" \
  "                      once; `inf` or no --timeout waits without limit)\n"

/* What a DURATION is (cli_parse_seconds); cli_help adds it to a help that
 * names one. */
#define CLI_HELP_DURATION                                                      \
  "DURATION is a number with units, largest first: 500ms, 90s, 5m, 1h30m,\n" \
  "7d, 2d12h, 1.5h (d, h, m, s, ms; lowercase, no spaces); a bare number\n"  \
  "is seconds, fractions allowed (0.5). Durations print the same way.\n"

/* What --since and --until accept (cli_parse_time); cli_help adds it to a
 * help that names a TIME and does not include it. */
#define CLI_HELP_TIME                                                          \
  "TIME is UTC unless it says otherwise, in one of these forms:\n"            \
  "  YYYY-MM-DD                  midnight starting that day\n"                \
  "  YYYY-MM-DDTHH:MM[:SS[.F]]   F: up to 6 digits of a second; a space may\n" \
  "                              stand for the T\n"                           \
  "  any of those + Z, or + an offset +HH:MM / -HH:MM (RFC 3339); the\n"     \
  "  times this command prints are of this form and may be given back\n"     \
  "  @SECONDS                    seconds since the epoch (1970-01-01Z),\n"   \
  "                              fractions allowed: @1700000000.5\n"        \
  "  now, or a DURATION from now: -1h or '1h ago' (before), +10m (after)\n"

#define CLI_HELP_ENV                                                           \
  "Environment:\n"                                                             \
  "  JOBBOARD_DIR        the board directory when --board is not given\n"     \
  "  JOBBOARD_FLUSH_INTERVAL  with --durability interval: this process's\n"  \
  "                      flush period (250ms, 2s; default: the board's,\n"   \
  "                      else 1s)\n"

/* --redis and --namespace (CLI_O_REDIS): the help lines and environment. */
#define CLI_HELP_REDIS_OPTIONS                                                 \
  "  --redis URL         the Redis server the board is shared through:\n"     \
  "                      redis://[[USER]:PASSWORD@]HOST[:PORT][/DB],\n"      \
  "                      unix://[[USER]:PASSWORD@]/PATH/TO.SOCK[?db=N], or\n"\
  "                      redis-sentinel://[[USER]:PASSWORD@]HOST[:PORT]\n"   \
  "                      [,HOST[:PORT]...]/MASTERNAME[/DB]: the sentinels\n" \
  "                      (port 26379 by default) are asked for the master\n"\
  "                      at every (re)connect, so a failover is followed\n" \
  "                      (USER, PASSWORD and DB are the master's). The\n"    \
  "                      board remembers it (and its namespace): leave it\n" \
  "                      out afterwards. The password is not kept in the\n"  \
  "                      board but in its sync.credentials file (mode\n"     \
  "                      0600); a URL without one keeps that file's. Only\n" \
  "                      jobs Redis decides (published or posted\n"          \
  "                      elsewhere) need the server.\n"                      \
  "  --namespace NS      the key namespace on that server (default: the\n"    \
  "                      board's, else taskflow). A board has one: another\n" \
  "                      is refused (exit 2).\n"

#define CLI_HELP_ENV_REDIS                                                     \
  CLI_HELP_ENV                                                                 \
  "  JOBBOARD_REDIS      the Redis URL when --redis is not given\n"           \
  "  JOBBOARD_REDIS_PASSWORD  the Redis password when the URL gives none\n"  \
  "                      (before the board's sync.credentials; never\n"      \
  "                      written anywhere)\n"                                \
  "  JOBBOARD_NAMESPACE  the namespace when --namespace is not given\n"

/* The exit status 6 of the commands that may need Redis. */
#define CLI_HELP_EXIT_OFFLINE                                                  \
  "  6  backend unavailable: the job is decided by Redis and the server\n"    \
  "     cannot be reached (the message says why); nothing changed\n"

/* The first lines of "Exit status" that hold for every command. */
#define CLI_HELP_EXIT_COMMON                                                   \
  "Exit status:\n"                                                             \
  "  0  success\n"                                                             \
  "  1  any other error (I/O, a corrupt board, no space left)\n"               \
  "  2  usage error or invalid input (the message names the field)\n"          \
  "  3  not found: the board directory does not exist"
/* The exit status line of the commands that write. */
#define CLI_HELP_EXIT_READONLY                                                 \
  "  13 the board is read-only for this process (another user's board,\n"      \
  "     a read-only mount): only reading commands work on it\n"

#include "cli_duration.h"

#endif
