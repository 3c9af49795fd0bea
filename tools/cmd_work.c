/*
 * cmd_work.c - `jobboard work`: the worker runner. Claims jobs and runs
 * a command for each (up to --concurrency at once), the way most users run
 * jobs.
 *
 * One thread does everything: it waits for a job (jb_claim_next with a wait,
 * or none: a consume claims the next job in its commit), forks CMD in a
 * free slot, and sits in poll() on the CMDs' pipes, a self-pipe written by
 * the signal handlers (SIGINT, SIGTERM, SIGCHLD, SIGIO) and timers for the
 * leases' keep-alive and the time limits. With no free slot it only polls;
 * with a free slot and CMDs running it waits for a job on the board, and
 * SIGCHLD or SIGIO (the CMDs' pipes are O_ASYNC then) cancel that wait
 * (jb_board_interrupt), reset before every look at the CMDs. So a signal is
 * never lost between a check and a sleep, and no lock is shared with a
 * handler.
 */
#include "cli_common.h"
#include "cli_getopt.h"
#include "json.h"
#include "work_tell.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* CMD's exit status that gives the job back to be tried again after its
 * back-off (sysexits.h's EX_TEMPFAIL), and the one that sends it to the
 * dead letters at once. */
#define WORK_EXIT_RETRY 75
#define WORK_EXIT_DEAD 100
/* CMD's exit status that snoozes its job (jb_snooze): for the seconds it
 * wrote to JOBBOARD_SNOOZE_FILE, else WORK_SNOOZE_DEFAULT_MS. */
#define WORK_EXIT_SNOOZE 76
#define WORK_SNOOZE_DEFAULT_MS ((int64_t)60 * 1000)
/* CMD's stdout is kept up to this many bytes: a result must fit in the
 * board's max_posting, whose default (the CLI's) is 1 MiB. More fails the
 * job; the rest is read and dropped so that CMD never blocks on a full
 * pipe. */
#define WORK_STDOUT_MAX ((size_t)1 << 20)
/* When CMD is stopped (its time limit, the second signal) its process
 * group gets SIGTERM, then SIGKILL if it is still there this much later
 * (--grace changes it). */
#define WORK_KILL_GRACE_MS 5000
/* The longest --grace: a day. */
#define WORK_GRACE_MAX_MS ((int64_t)86400 * 1000)
/* A job posted with a time limit: its claim lapses at the limit (a lapse
 * puts the job back at once, without a back-off). CMD is stopped this
 * long before (at most half the limit), so that the worker's retry, with
 * its back-off, reaches the board while the claim holds. */
#define WORK_LIMIT_MARGIN_MS 1000
/* While the board's Redis cannot be reached, the worker tries it again
 * this often (between waits for a job). */
#define WORK_REDIS_RETRY_MS 5000
/* The worker ticks the board's schedules (posts their due runs) at their
 * next due time, and at least this often: a schedule added while it waits
 * is seen within this long. A tick that fails is tried again this often
 * too (one warning until one succeeds). */
#define WORK_SCHEDULE_LOOK_MS 10000
/* The most CMDs one worker runs at once (--concurrency). */
#define WORK_CONCURRENCY_MAX 1024
/* CMD's progress reports (JOBBOARD_PROGRESS_FD) reach the board at most
 * this often per job: the last one of each period wins, and the last of
 * all is written before the job is completed. */
#define WORK_PROGRESS_MS 100
/* The longest progress line: a percentage, a space and a message of
 * JB_PROGRESS_MESSAGE_MAX bytes, with room to spare; a longer line is
 * dropped with a warning. */
#define WORK_PROGRESS_LINE 256
/* The descriptor CMD writes them to (JOBBOARD_PROGRESS_FD). */
#define WORK_PROGRESS_FD 3

const cli_command cli_cmd_work = {
    "work", "run a command for each job: claim, run, consume (a worker)",
    "Usage: jobboard work --who NAME [--lease DURATION] [--jobs N]\n"
    "                     [--concurrency N] [--timeout DURATION]\n"
    "                     [--time-limit DURATION] [--grace DURATION]\n"
    "                     [--no-schedules] [--prefix MODE]\n"
    "                     [--max-attempts N|none] [OPTIONS] [--] CMD [ARGS...]\n"
    "\n"
    "Run a worker: register as the entity NAME (kind \"worker\"), then, job\n"
    "after job, wait for a claimable job, claim it for NAME and run CMD for\n"
    "it. CMD is executed directly (no shell; looked up in PATH when it has no\n"
    "'/') and gets:\n"
    "  stdin    the job as one JSON object on one line, as `jobboard show\n"
    "           --json` prints it (uuid, name, priority, details, claim...)\n"
    "  environment  JOBBOARD_UUID (the job's uuid), JOBBOARD_NAME (its name),\n"
    "           JOBBOARD_BOARD (the board directory's absolute path) and\n"
    "           JOBBOARD_PROGRESS_FD (a descriptor for progress reports: see\n"
    "           \"Progress reports\" below) and JOBBOARD_SNOOZE_FILE (a path\n"
    "           for exit 76: see below)\n"
    "  stderr   the worker's own (passed through); with --concurrency above\n"
    "           1 or --prefix, a pipe the worker forwards, each line prefixed\n"
    "           with its job (see Concurrency)\n"
    "  stdout   captured: the job's result (up to 1 MiB)\n"
    "CMD runs in its own process group (a Ctrl-C at the terminal reaches the\n"
    "worker, not CMD) and gets SIGTERM if the worker dies.\n"
    "\n"
    "When CMD ends, what becomes of the job (outcome: in the progress line):\n"
    "  exit 0             consumed: outcome success (`jobboard history`)\n"
    "  exit 75            retried: a failed attempt, reason \"exit 75\"\n"
    "  (EX_TEMPFAIL)      (see `jobboard show`); claimable again after the\n"
    "                     job's back-off (post --backoff, else the board's\n"
    "                     `jobboard policy`: 1 s, doubling per attempt)\n"
    "  exit 100           dead: to the dead letters at once, reason\n"
    "                     \"exit 100\" (`jobboard dead list`)\n"
    "  exit 76            snoozed: given back without spending an attempt\n"
    "                     (`jobboard snooze`), claimable again after the\n"
    "                     duration CMD wrote to the file JOBBOARD_SNOOZE_FILE\n"
    "                     names (e.g. echo 5m >\"$JOBBOARD_SNOOZE_FILE\";\n"
    "                     seconds when bare, 0 to 3650d), or after 60 s\n"
    "                     when the file is absent or empty; a file holding\n"
    "                     anything else is named in a warning and the 60 s\n"
    "                     apply. A job that snoozed its --max-snoozes times\n"
    "                     (or one Redis decides) is retried as for exit 75,\n"
    "                     reason \"exit 76, snooze refused\"\n"
    "  stopped at its     retried as for exit 75, whatever CMD's exit\n"
    "  time limit         status, reason \"time limit 2.00 s exceeded\"\n"
    "  any other exit,    failed: consumed with outcome failure (the job\n"
    "  or a signal        is not tried again; its result is kept)\n"
    "A job retried once its attempts reach its maximum (post\n"
    "--max-attempts, else the board's policy) goes to the dead letters\n"
    "instead (outcome dead). A job with neither gets the worker's:\n"
    "--max-attempts N, default 10 (with the default back-off, 1 s doubling,\n"
    "about 8.5 minutes of retries); its last retry sends it to the dead\n"
    "letters with JB_RETRY_DEAD (cause buried, the reason naming the\n"
    "limit: \"exit 75; attempt 10 of 10, the worker's --max-attempts\").\n"
    "--max-attempts none retries such a job for ever (the back-off grows\n"
    "to the policy's --backoff-max, an hour by default). The progress line\n"
    "of a retry says \"attempt N of M\" whenever a maximum applies. A job\n"
    "Redis decides (see below) is retried\n"
    "at once: Redis keeps no back-off. A failed job is not tried again:\n"
    "exit 75 is how CMD asks for another attempt.\n"
    "If CMD's stdout is one JSON object, it is the job's result. Empty\n"
    "output means no result; other output is ignored with a warning naming\n"
    "the job. Output beyond 1 MiB fails the job (no result).\n"
    "\n"
    "Time limits: with --time-limit, CMD may run that long at most (from\n"
    "its start). A job posted with a time limit (post --time-limit) has its\n"
    "own: its claim lapses that long after it was made, renewed or not, so\n"
    "CMD is stopped 1 s before (half the limit when it is under 2 s), for\n"
    "the retry to reach the board while the claim holds. The sooner of the\n"
    "two applies. At it, CMD's process group gets SIGTERM, then SIGKILL if\n"
    "it is still there --grace DURATION later (default 5), and the job is\n"
    "retried as above; the message and the progress line say why (\"time\n"
    "limit 2.00 s exceeded\", \"the job's time limit 3.00 s reached\"). A\n"
    "CMD that outlives its job's claim (the claim lapsed: the job was back\n"
    "at once) has its retry refused (outcome refused). --time-limit is not\n"
    "--timeout, which is how long the worker waits for a job.\n"
    "\n"
    "When a job is consumed (exit 0, or failed) and the worker goes on,\n"
    "the consume and the claim of the next claimable job are one commit\n"
    "(jb_consume_and_claim_next): that job's CMD starts without a wait\n"
    "and the board pays one commit per job instead of two. A job claimed so\n"
    "but not run (a signal came, or the worker stops on an error) is\n"
    "abandoned at once.\n"
    "\n"
    "The claim is bound to the worker's process: if the worker dies (even\n"
    "by SIGKILL) the job is claimable again at once. With --lease the claim\n"
    "also lapses after DURATION unless renewed; the worker renews it every\n"
    "third of that while CMD runs, so the lease only runs out if the worker\n"
    "stops (SIGSTOP, a hung machine). A worker whose claim lapsed and whose\n"
    "job was claimed again cannot complete it: the completion is refused\n"
    "(fencing token), reported, and the worker goes on with the next job.\n"
    "\n"
    "Schedules: the worker also ticks the board's schedules (`jobboard\n"
    "schedule`): before each job, and when a run falls due while it waits\n"
    "(its wait for a job ends then), it posts the due runs. Each run is\n"
    "posted once whichever workers tick, so every worker may. A schedule\n"
    "added while the worker waits is seen within 10 s. If the runs cannot\n"
    "be posted (a full board, a template over the posting limit), the\n"
    "worker says so once and goes on running jobs, trying again every 10 s.\n"
    "--no-schedules leaves the ticking to others (`jobboard schedule run\n"
    "--loop`, other workers).\n"
    "\n"
    "Concurrency: with --concurrency N (1 to 1024; default 1) the worker\n"
    "runs up to N CMDs at once, one a job: while fewer than N run, it\n"
    "claims the next job and starts its CMD. Each job has its own claim\n"
    "(bound to the worker's process, with --lease renewed while its CMD\n"
    "runs), its own CMD process group, stdin and captured stdout, its own\n"
    "time limit, outcome and progress line, exactly as with one. The jobs\n"
    "end in any order. --jobs counts every job the worker takes, whichever\n"
    "CMD runs it; --timeout counts while no CMD runs. One process does it\n"
    "all in one thread (a board handle, an event loop over the CMDs' pipes\n"
    "and their SIGCHLD). With N above 1, CMD's stderr is not the worker's\n"
    "own but a pipe the worker reads: it passes each CMD's lines on whole,\n"
    "each after a prefix naming its job, \"[NAME 1b2c3d4e] \" (the name and\n"
    "the uuid's last 8 characters, its random part: the first are its\n"
    "time, alike in jobs posted together), in one write (lines of two CMDs never\n"
    "mix; a line longer than 4096 bytes is passed on in pieces of 4096, each\n"
    "prefixed; a last line without a newline gets one; other bytes, binary\n"
    "too, pass unchanged), as they come. --prefix MODE chooses the prefix:\n"
    "short (the default), uuid (\"[UUID] \"), name (\"[NAME] \"), none, or\n"
    "a template with the fields {uuid}, {uuid8}, {name} and {who} (the\n"
    "worker's --who), {{ and }} for braces, taken as written (e.g.\n"
    "--prefix '{name}/{uuid8} | '). With N at 1, CMD writes to the\n"
    "worker's stderr itself (it sees the terminal, when stderr is one;\n"
    "nothing comes between it and its lines), unless --prefix (not none)\n"
    "asks for the prefix: then it goes through the worker as with N above\n"
    "1. CMD's stdout is never forwarded: it is the job's result.\n"
    "\n"
    "On a board shared through Redis (see `jobboard sync`), jobs Redis\n"
    "decides are claimed and completed through Redis. While it cannot be\n"
    "reached the worker runs local jobs only and tries Redis again every\n"
    "5 s; a completion that finds Redis away is tried again until Redis\n"
    "answers (a second signal gives up; with --concurrency, the other CMDs\n"
    "are looked after meanwhile). Without --lease, Redis cannot see\n"
    "this process: the board's replicator (`jobboard sync`) keeps the claim\n"
    "alive in Redis while the worker lives, and claims are refused when no\n"
    "replicator runs.\n"
    "\n"
    "Progress reports: CMD may say how far it has got by writing lines\n"
    "\"PERCENT [MESSAGE]\\n\" to the descriptor JOBBOARD_PROGRESS_FD names (a\n"
    "pipe, descriptor 3; e.g. in sh: echo \"40 4 of 10 files\"\n"
    ">&\"$JOBBOARD_PROGRESS_FD\").\n"
    "PERCENT is a number from 0 to 100; MESSAGE, after one space, is the\n"
    "rest of the line (at most 200 bytes of UTF-8, no control characters).\n"
    "The worker records them as `jobboard progress` does (show, list --json\n"
    "and watch print them), at most one commit per job every 100 ms: the\n"
    "last line of each 100 ms wins, and the last line of all is recorded\n"
    "before the job is completed. A line that is not such a report is\n"
    "ignored with one warning per job. CMD need not use it: the\n"
    "descriptor may be left alone, or closed.\n"
    "\n"
    "Progress: one line per job on stderr:\n"
    "  work: UUID NAME: OUTCOME (exit N | signal N, S.SS s)\n"
    "  work: UUID NAME: OUTCOME (...): REASON (attempt N of M, WHERE)\n"
    "where OUTCOME is consumed, failed, retried, dead, abandoned or refused;\n"
    "a retried or dead job's line says why (REASON), its attempts, their\n"
    "maximum (\" of M\" when one applies) and where it went (\"claimable\n"
    "again in 0.98 s\", \"to the dead letters\"). With\n"
    "--json, one JSON object per job on stdout instead: {\"uuid\", \"name\",\n"
    "\"outcome\", \"exit\" (null if killed), \"signal\" (null if it exited),\n"
    "\"seconds\", \"reason\", \"attempts\", \"not_before\" (when it is\n"
    "claimable again), \"max_attempts\" (each null when it does not\n"
    "apply)}.\n"
    "At exit, a summary on stderr: \"work: summary: 12 jobs in 40.20 s\n"
    "(consumed 10, failed 1, retried 1), mean run 3.10 s\" (the outcomes\n"
    "that happened; \"at a time limit N\" counts the retried or dead jobs\n"
    "stopped at one); with --json, also the last line on stdout:\n"
    "{\"summary\": {\"jobs\", \"outcomes\": {\"consumed\", \"failed\",\n"
    "\"retried\", \"snoozed\", \"dead\", \"abandoned\", \"refused\"},\n"
    "\"timed_out\", \"seconds\", \"mean_run_seconds\" (null with no job)}}:\n"
    "the one line without a \"uuid\".\n"
    "With --concurrency above 1 and stderr a terminal, a status line at\n"
    "the bottom of stderr, redrawn as jobs start and end and erased before\n"
    "any other line: \"work: running 3/4, done 120 (consumed 117, failed\n"
    "2, retried 1)\" (failed: any outcome but consumed and retried). None\n"
    "when stderr is not a terminal.\n"
    "\n"
    "Stopping: SIGINT or SIGTERM lets the jobs in hand finish (no job is\n"
    "claimed any more; each running CMD runs to its end and its job is\n"
    "completed by its exit status), then the worker exits 0; a worker\n"
    "waiting for a job with no CMD running stops at once. With CMDs\n"
    "running, the worker says so on stderr: how many, each job's uuid,\n"
    "name and time so far, and how to stop now. A second SIGINT\n"
    "or SIGTERM abandons every job in hand: each CMD's process group gets\n"
    "SIGTERM (SIGKILL --grace later if it is still running), each job is\n"
    "released, claimable again at once, its attempt counted (a job at its\n"
    "maximum of attempts goes to the dead letters), and the worker exits\n"
    "128 + the signal (130, 143). An error that stops the worker (below)\n"
    "stops the claims the same way: the CMDs running then finish first.\n"
    "\n"
    "Options:\n"
    "  --who NAME          the worker's name: the entity and the jobs' owner\n"
    "                      (required; 1..255 bytes)\n"
    "  --lease DURATION    claims lapse after this long unless renewed (the\n"
    "                      worker renews them while CMD runs)\n"
    "  --jobs N            stop after N jobs (1 or more; any outcome counts;\n"
    "                      with --concurrency, the jobs of every CMD)\n"
    "  --concurrency N     run up to N CMDs at once, each with a job of its\n"
    "                      own (1 to 1024; default 1)\n"
    "  --timeout DURATION  stop when no job could be claimed for this long\n"
    "                      (exit 0; fractions allowed; default: wait forever)\n"
    "  --time-limit DURATION the longest CMD may run for one job (1ms to\n"
    "                      30d; default: the job's\n"
    "                      own, if any)\n"
    "  --grace DURATION    from the SIGTERM that stops CMD to its SIGKILL\n"
    "                      (0 to 1d; default 5s)\n"
    "  --no-schedules      do not tick the board's schedules\n"
    "  --prefix MODE       the prefix of CMD's forwarded stderr lines: short\n"
    "                      (\"[NAME 1b2c3d4e] \", the default), uuid, name,\n"
    "                      none, or a template ({uuid} {uuid8} {name} {who});\n"
    "                      with --concurrency 1, any but none forwards them\n"
    "  --max-attempts N|none  the maximum of attempts of a job that has none\n"
    "                      of its own or the board's (1 to 4294967295;\n"
    "                      default 10; none: retried for ever)\n"
    CLI_HELP_NAMES("take", "taken")
    CLI_HELP_CREATE
    "  --                  ends the options: CMD and its ARGS follow\n"
    CLI_HELP_REDIS_OPTIONS
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  0  also: --jobs N done, idle for --timeout, or stopped by a signal\n"
    "     after finishing the jobs in hand\n"
    "  2  also: CMD cannot be executed (checked before the first claim; if\n"
    "     it fails later, the job is abandoned: the message says so)\n"
    "  130, 143  a second SIGINT or SIGTERM: the jobs in hand were abandoned\n"
    "A refused completion (the claim was lost) does not change the exit\n"
    "status; an error completing a job (I/O) stops the worker with exit 1,\n"
    "and the job, whose claim ends with the worker, is claimable again.\n"
    "  6  a job Redis decides could not be completed: Redis could not be\n"
    "     reached (the message says why). The worker stops; the claim\n"
    "     lapses in Redis after its lease and the job is claimable again.\n"
    "\n"
    "Examples:\n"
    "  jobboard work --who resizer-1 --lease 30 -- ./resize.sh\n"
    "  jobboard work --who render-1 --time-limit 600 --grace 30 -- ./render\n"
    "  jobboard work --who thumbs-1 --concurrency 8 --lease 60 -- ./thumb\n"
    "  jobboard work --who img-1 --name 'images.*' --name pdf -- ./convert\n"
    "  jobboard work --who w1 --jobs 1 --timeout 10 -- \\\n"
    "    jq -c '{keys: (.details | keys)}'\n",
    CLI_O_WHO | CLI_O_LEASE | CLI_O_TIMEOUT | CLI_O_REDIS | CLI_O_CREATE |
        CLI_O_NAMES | CLI_O_IN_ORDER, 0, 0, ""};

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t stop_signals; /* SIGINT/SIGTERM seen (max 2) */
static volatile sig_atomic_t last_signal;
static jb_board *volatile signal_board;
static int wake_pipe[2] = {-1, -1}; /* written by every handler */

static void poke(void) {
  int saved = errno;
  if (wake_pipe[1] >= 0 && write(wake_pipe[1], "", 1) < 0) {
    /* full: poll will wake anyway */
  }
  errno = saved;
}

static void on_stop(int sig) {
  last_signal = sig;
  if (stop_signals < 2) stop_signals++;
  if (signal_board) jb_board_interrupt(signal_board); /* ends a claim wait */
  poke();
}

/* With --concurrency above 1 the worker waits for a job while CMDs run:
 * a CMD that ends (SIGCHLD) or whose pipe is ready (SIGIO) ends that wait
 * too, as it must be seen to at once. */
static volatile sig_atomic_t cancel_on_child;

static void on_child(int sig) {
  (void)sig;
  if (cancel_on_child && signal_board) jb_board_interrupt(signal_board);
  poke();
}

/* No SA_RESTART for SIGINT/SIGTERM: a blocking call they interrupt must
 * end. SIGCHLD and SIGIO restart (LMDB's calls must not see EINTR for
 * them). */
static int install_handlers(void) {
  if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_stop;
  if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
    return -1;
  sa.sa_handler = on_child;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  if (sigaction(SIGCHLD, &sa, NULL) || sigaction(SIGIO, &sa, NULL))
    return -1;
  /* CMD closing its stdin early must not kill the worker. */
  sa.sa_handler = SIG_IGN;
  sa.sa_flags = 0;
  return sigaction(SIGPIPE, &sa, NULL);
}

static void drain_wake_pipe(void) {
  char buf[64];
  while (read(wake_pipe[0], buf, sizeof buf) > 0) {
  }
}

/* ------------------------------------------------------------------ setup */

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ schedules */

/* When the worker ticks the board's schedules next. */
typedef struct {
  int64_t at_us; /* wall clock, as the schedules' times; 0: now */
  int failing;   /* the last tick failed (warned once) */
} sched_state;

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Tick the board's schedules if a run may be due (one read transaction
 * when none is; the due runs posted in one commit otherwise) and return
 * how long the worker may wait for a job before it should tick again, in
 * ms (1 or more). Between ticks, this costs a clock read. */
static int64_t tick_schedules(jb_board *b, sched_state *s) {
  int64_t now = wall_us();
  /* A wall clock set back would put the next tick far off: tick now. */
  if (s->at_us > now + (int64_t)WORK_SCHEDULE_LOOK_MS * 1000) s->at_us = 0;
  if (now >= s->at_us) {
    size_t posted = 0;
    int64_t due = 0;
    int st = jb_schedule_tick(&posted, b, 0);
    if (st == JB_OK) st = jb_schedule_next_due(&due, b);
    now = wall_us();
    s->at_us = now + (int64_t)WORK_SCHEDULE_LOOK_MS * 1000;
    if (st != JB_OK) {
      if (!s->failing)
        fprintf(stderr, "jobboard: work: cannot post the board's scheduled "
                "runs: %s (tried again every %d s; jobs are still run)\n",
                jb_errmsg(), WORK_SCHEDULE_LOOK_MS / 1000);
      s->failing = 1;
    } else {
      if (s->failing)
        fprintf(stderr, "jobboard: work: the board's scheduled runs are "
                "posted again\n");
      s->failing = 0;
      if (due > 0 && due < s->at_us) s->at_us = due > now ? due : now + 1000;
    }
  }
  int64_t ms = (s->at_us - now + 999) / 1000;
  return ms < 1 ? 1 : ms;
}

/* Whether `path` is a file we may execute; errno says why not. */
static int executable(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return 0;
  }
  return access(path, X_OK) == 0;
}

/* CMD's program as execve wants it: CMD itself when it has a '/', else
 * the first executable match in PATH (as execvp looks, without its
 * fall-back of running a file as a shell script). NULL after printing why
 * when there is none. Resolved once, before the first claim, so a typo is
 * a usage error and not a claimed job; the environment is built in the
 * parent too, as the child of a threaded process may only call
 * async-signal-safe functions before execve. */
static char *resolve_command(const char *cmd) {
  if (strchr(cmd, '/') != NULL) {
    if (!executable(cmd)) {
      cli_usage_error("work: cannot execute '%s': %s", cmd, strerror(errno));
      return NULL;
    }
    return strdup(cmd);
  }
  const char *path = getenv("PATH");
  if (path == NULL || path[0] == '\0') path = "/bin:/usr/bin";
  size_t clen = strlen(cmd);
  for (const char *p = path;;) {
    const char *end = strchr(p, ':');
    size_t dlen = end ? (size_t)(end - p) : strlen(p);
    char *full = malloc(dlen + clen + 3);
    if (full == NULL) return NULL;
    /* An empty PATH entry is the current directory. */
    sprintf(full, "%.*s/%s", (int)(dlen ? dlen : 1), dlen ? p : ".", cmd);
    if (executable(full)) return full;
    free(full);
    if (end == NULL) break;
    p = end + 1;
  }
  cli_usage_error("work: cannot execute '%s': not found in PATH", cmd);
  return NULL;
}

/* A variable of ours that may carry a Redis password: not for the jobs
 * (their commands find the board's own credentials file, or are given a
 * password by whoever runs them). JOBBOARD_REDIS only when it holds
 * userinfo ("user:password@"). */
static bool secret_var(const char *e) {
  if (strncmp(e, "JOBBOARD_REDIS_PASSWORD=", 24) == 0) return true;
  return strncmp(e, "JOBBOARD_REDIS=", 15) == 0 && strchr(e + 15, '@') != NULL;
}

/* environ with JOBBOARD_UUID, JOBBOARD_NAME, JOBBOARD_BOARD,
 * JOBBOARD_PROGRESS_FD and JOBBOARD_SNOOZE_FILE set (any earlier values
 * dropped) and without a Redis password (secret_var). The five strings
 * are malloc'ed: free with free_env. */
static char **job_env(const char *uuid, const char *name, const char *board,
                      int progress_fd, const char *snooze_file) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 6, sizeof *env);
  if (env == NULL) return NULL;
  size_t k = 0;
  env[k] = malloc(strlen(uuid) + 16);
  env[k + 1] = malloc(strlen(name) + 16);
  env[k + 2] = malloc(strlen(board) + 16);
  env[k + 3] = malloc(40);
  env[k + 4] = malloc(strlen(snooze_file) + 24);
  if (!env[0] || !env[1] || !env[2] || !env[3] || !env[4]) {
    for (int i = 0; i < 5; i++) free(env[i]);
    free(env);
    return NULL;
  }
  sprintf(env[k++], "JOBBOARD_UUID=%s", uuid);
  sprintf(env[k++], "JOBBOARD_NAME=%s", name);
  sprintf(env[k++], "JOBBOARD_BOARD=%s", board);
  sprintf(env[k++], "JOBBOARD_PROGRESS_FD=%d", progress_fd);
  sprintf(env[k++], "JOBBOARD_SNOOZE_FILE=%s", snooze_file);
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "JOBBOARD_UUID=", 14) != 0 &&
        strncmp(environ[i], "JOBBOARD_NAME=", 14) != 0 &&
        strncmp(environ[i], "JOBBOARD_BOARD=", 15) != 0 &&
        strncmp(environ[i], "JOBBOARD_PROGRESS_FD=", 21) != 0 &&
        strncmp(environ[i], "JOBBOARD_SNOOZE_FILE=", 21) != 0 &&
        !secret_var(environ[i]))
      env[k++] = environ[i];
  env[k] = NULL;
  return env;
}

static void free_env(char **env) {
  if (env == NULL) return;
  for (int i = 0; i < 5; i++) free(env[i]);
  free(env);
}

/* ----------------------------------------------------------- one job run */

typedef struct {
  jb_board *b;
  const char *who;
  int64_t lease_ms;
  int64_t time_limit_ms; /* --time-limit; 0: none */
  int64_t grace_ms;  /* SIGTERM to SIGKILL when CMD is stopped */
  jb_claim_options co;  /* every claim's: bound to this process, --lease */
  char **argv;       /* CMD and its ARGS */
  char *exe;         /* CMD resolved */
  char *board_abs;   /* for JOBBOARD_BOARD */
  char *snooze_dir;  /* this worker's private directory (mkdtemp) of the
                        JOBBOARD_SNOOZE_FILE files, one a job: uuid */
  int json;
  int concurrency;   /* --concurrency: CMDs at once */
  const char *prefix; /* --prefix (NULL: not given) */
  bool log_pipe;     /* CMD's stderr comes through the worker */
  uint32_t max_attempts; /* --max-attempts, for jobs with none; 0: none */
  struct slot *slots;   /* --concurrency of them */
  struct pollfd *pfd;   /* room for their pipes and the self-pipe */
} worker;

/* What became of CMD. */
typedef struct {
  int started;       /* CMD was executed */
  int exec_errno;    /* else why not */
  int status;        /* waitpid's, when started */
  int killed;        /* the second signal stopped it */
  int64_t limit_ms;  /* the time limit that stopped it */
  int job_limit;     /* that limit was the job's own (else --time-limit) */
  int timed_out;     /* it reached a time limit and was stopped */
  int lost;          /* keeping the lease failed: the claim is gone */
  int overflow;      /* stdout passed WORK_STDOUT_MAX */
  char *out;         /* stdout (NUL-terminated) */
  size_t out_len;
} run_result;

static void set_nonblock(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The child: its own process group, the pipes as stdin and stdout, the
 * signals as a new program expects them. Only async-signal-safe calls. */
static void child(const worker *w, char **env, int in, int out, int log,
                  int err, int progress, pid_t parent) {
  setpgid(0, 0);
  /* Dying with the worker: a worker killed (kill -9) leaves its job
   * claimable, and another worker must not run it beside an orphan. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || (log >= 0 && dup2(log, 2) < 0))
    goto fail;
  /* The progress pipe is descriptor WORK_PROGRESS_FD across the execve
   * (every other pipe is close-on-exec): a small number, which every
   * shell can redirect to (dash takes one digit). The pipe that reports
   * a failed execve moves out of its way first. */
  if (err == WORK_PROGRESS_FD &&
      (err = fcntl(err, F_DUPFD_CLOEXEC, WORK_PROGRESS_FD + 1)) < 0)
    _exit(127);
  if (progress == WORK_PROGRESS_FD ? fcntl(progress, F_SETFD, 0) != 0
                                   : dup2(progress, WORK_PROGRESS_FD) < 0)
    goto fail;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, NULL);
  sigaction(SIGCHLD, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGIO, &sa, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execve(w->exe, w->argv, env);
fail:;
  int e = errno;
  if (write(err, &e, sizeof e) < 0) {
    /* the parent sees EOF and a status of 127 */
  }
  _exit(127);
}

/* Renew the lease when due; returns when the next renewal is due. */
static int64_t keep_lease(const worker *w, const char *uuid, uint64_t token,
                          int64_t due, run_result *r) {
  if (w->lease_ms <= 0 || r->lost) return -1;
  int64_t now = now_ms();
  if (now < due) return due;
  int st = jb_extend(w->b, uuid, w->who, token, w->lease_ms);
  if (st == JB_ENOTFOUND || st == JB_ENOTOWNER) {
    fprintf(stderr, "jobboard: work: job %s: the claim was lost (%s); CMD "
            "goes on but its completion will be refused\n", uuid,
            jb_errmsg());
    r->lost = 1;
    return -1;
  }
  if (st == JB_EOFFLINE && cli_sync_pending() && cli_sync_retry(w->b)) {
    /* Published since it was claimed, by a worker not yet connected. */
    fprintf(stderr, "jobboard: work: connected to redis: claiming the jobs "
            "it decides again\n");
    st = jb_extend(w->b, uuid, w->who, token, w->lease_ms);
  }
  if (st != JB_OK) /* I/O: try again at the next period */
    fprintf(stderr, "jobboard: work: job %s: renewing the lease: %s\n", uuid,
            jb_errmsg());
  int64_t period = w->lease_ms / 3;
  return now + (period > 0 ? period : 1);
}

/* Keep what CMD wrote; 0 at end of file, -1 when nothing more now. */
static int read_output(int fd, run_result *r) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0) return errno == EINTR ? -1 : (errno == EAGAIN ? -1 : 0);
    size_t room = WORK_STDOUT_MAX - r->out_len;
    if ((size_t)n > room) r->overflow = 1;
    size_t keep = (size_t)n < room ? (size_t)n : room;
    memcpy(r->out + r->out_len, buf, keep);
    r->out_len += keep;
  }
}

/* How long before the job's own time limit CMD is stopped. */
static int64_t limit_margin(int64_t job_limit_ms) {
  return job_limit_ms / 2 < WORK_LIMIT_MARGIN_MS ? job_limit_ms / 2
                                                 : WORK_LIMIT_MARGIN_MS;
}

/* The earlier of two deadlines (-1: none). */
static int64_t earliest(int64_t a, int64_t b) {
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* With --concurrency above 1, CMD's stderr comes through the worker, a
 * whole line at a time (lines from several CMDs never mix); a line
 * longer than this is passed on in pieces of this size, each ended by a
 * newline. */
#define WORK_LOG_LINE 4096

/*
 * One of the worker's --concurrency slots: a claimed job and its CMD. A
 * slot is free, running (CMD started and not yet reaped), or ended (CMD
 * reaped, or it could not be started: the job is to be completed).
 */
typedef struct slot {
  bool busy;                 /* holds a job */
  bool ended;                /* CMD is done (or never ran): complete it */
  char uuid[JB_UUID_STRLEN];
  jb_job *job;
  uint64_t token;
  int64_t start;             /* when the job was claimed (now_ms) */
  int code;                  /* CMD could not be run: the exit code */
  run_result r;
  /* CMD while it runs */
  pid_t pid;
  char **env;
  char *input;               /* the job's line, for CMD's stdin */
  size_t in_len, in_off;
  int in, out, log;          /* our ends of CMD's stdin, stdout and (with
                                --concurrency above 1) stderr; -1: closed */
  int in_i, out_i, log_i;    /* their places in the poll set; -1: none */
  int64_t job_limit;         /* the job's own time limit (ms; 0: none) */
  int64_t job_at;            /* when CMD is stopped for it; -1: never */
  int64_t own_at;            /* when --time-limit stops CMD; -1: never */
  int64_t limit_at;          /* the earlier of the two, until reached */
  int64_t lease_due;         /* the next renewal of the lease; -1: none */
  int64_t kill_at;           /* SIGKILL after the SIGTERM; -1: none */
  int stopping;              /* CMD's process group got SIGTERM */
  size_t log_len;            /* a partial stderr line in logbuf */
  char logbuf[WORK_LOG_LINE + 1];
  size_t prefix_len;         /* the prefix of its forwarded lines */
  char prefix[WORK_PREFIX_MAX + 1];
  /* Progress reports (JOBBOARD_PROGRESS_FD). */
  int prog, prog_i;          /* our end of the pipe (-1: closed); its place
                                in the poll set */
  size_t prog_len;           /* a partial line in progbuf */
  bool prog_skip;            /* dropping the rest of an overlong line */
  bool prog_warned;          /* a bad line was reported for this job */
  bool prog_dirty;           /* a report not yet written to the board */
  double prog_pct;           /* that report */
  char prog_msg[JB_PROGRESS_MESSAGE_MAX + 1];
  int64_t prog_next;         /* the earliest next write (now_ms) */
  int64_t prog_due;          /* when the pending report is written; -1 */
  char progbuf[WORK_PROGRESS_LINE];
} slot;

/* The path of job `uuid`'s JOBBOARD_SNOOZE_FILE. */
static void snooze_path(char *out, size_t size, const worker *w,
                        const char *uuid) {
  snprintf(out, size, "%s/%s", w->snooze_dir, uuid);
}

/* The snooze CMD asked for (exit 76), in ms: the seconds it wrote to its
 * JOBBOARD_SNOOZE_FILE (the file goes), else the default; a file that
 * holds something else is named in a warning. */
static int64_t snooze_ms(const worker *w, const char *uuid) {
  char path[PATH_MAX], buf[64] = "";
  snooze_path(path, sizeof path, w, uuid);
  FILE *f = fopen(path, "r");
  size_t n = 0;
  if (f) {
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
  }
  buf[n] = '\0';
  while (n > 0 && strchr(" \t\r\n", buf[n - 1])) buf[--n] = '\0';
  char *text = buf + strspn(buf, " \t\r\n");
  int64_t ms;
  if (*text == '\0') return WORK_SNOOZE_DEFAULT_MS;
  if (cli_parse_seconds(text, 0, JB_DELAY_MAX_MS, &ms)) return ms;
  fprintf(stderr, "jobboard: work: job %s: JOBBOARD_SNOOZE_FILE holds '",
          uuid);
  cli_put_text(stderr, text);
  char hi[32], dflt[32];
  fprintf(stderr, "', not a duration from 0s to %s (%s): snoozed for the "
          "default %s\n", cli_format_duration(hi, sizeof hi, JB_DELAY_MAX_MS),
          CLI_DURATION_FORMS,
          cli_format_duration(dflt, sizeof dflt, WORK_SNOOZE_DEFAULT_MS));
  return WORK_SNOOZE_DEFAULT_MS;
}

static void set_async(int fd) {
  /* A pipe that becomes readable or writable raises SIGIO, which ends the
   * worker's wait for a job the way SIGCHLD does. */
  if (fcntl(fd, F_SETOWN, getpid()) == 0) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_ASYNC);
  }
}

static void close_pair(int p[2]) {
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0) close(p[i]), p[i] = -1;
}

/* Start CMD for the slot's job. Returns 0, or -1 (printed, or
 * r.exec_errno set) when CMD could not be started. */
static int cmd_start(const worker *w, slot *s) {
  run_result *r = &s->r;
  s->in = s->out = s->log = s->prog = -1;
  s->pid = -1;
  s->prog_len = 0;
  s->prog_skip = s->prog_warned = s->prog_dirty = false;
  s->prog_next = 0;
  s->prog_due = -1;
  r->out = malloc(WORK_STDOUT_MAX + 1);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  int log[2] = {-1, -1}, prog[2] = {-1, -1};
  /* The job's snooze file: not there until CMD writes it. */
  char snooze[PATH_MAX];
  snooze_path(snooze, sizeof snooze, w, s->uuid);
  unlink(snooze);
  if (pipe2(prog, O_CLOEXEC) == 0)
    s->env = job_env(s->uuid, jb_job_name(s->job), w->board_abs,
                     WORK_PROGRESS_FD, snooze);
  if (r->out == NULL || s->env == NULL || pipe2(in, O_CLOEXEC) ||
      pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
      (w->log_pipe && pipe2(log, O_CLOEXEC))) {
    fprintf(stderr, "jobboard: work: job %s: cannot set up CMD: %s\n",
            s->uuid, r->out && s->env ? strerror(errno) : "out of memory");
    goto fail;
  }
  pid_t parent = getpid();
  /* vfork: no copy of the worker's page tables and no copy-on-write
   * faults after it, which is most of a short CMD's cost to the worker.
   * Every signal is blocked across it: the child shares our memory until
   * its execve, so our handlers must not run in it (it resets them to
   * SIG_DFL, then unblocks). */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  pid_t pid = vfork();
  if (pid == 0)
    child(w, s->env, in[0], out[1], log[1], err[1], prog[1], parent);
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    fprintf(stderr, "jobboard: work: job %s: cannot fork: %s\n", s->uuid,
            strerror(fork_errno));
    goto fail;
  }
  setpgid(pid, pid); /* also here: no window where a kill misses it */
  close(in[0]), close(out[1]), close(err[1]);
  in[0] = out[1] = err[1] = -1;
  if (log[1] >= 0) close(log[1]), log[1] = -1;
  close(prog[1]), prog[1] = -1;
  /* EOF: execve succeeded (the pipe is close-on-exec); else its errno. */
  int e = 0;
  ssize_t n;
  while ((n = read(err[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n == (ssize_t)sizeof e) {
    r->exec_errno = e;
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
    }
    goto fail;
  }
  close_pair(err);
  r->started = 1;
  s->pid = pid;
  s->in = in[1];
  s->out = out[0];
  s->log = log[0];
  s->prog = prog[0];
  prog[0] = -1;
  set_nonblock(s->prog);
  set_nonblock(s->in);
  set_nonblock(s->out);
  if (s->log >= 0) set_nonblock(s->log);
  if (w->concurrency > 1) {
    set_async(s->in);
    set_async(s->out);
    set_async(s->log);
    set_async(s->prog);
  }
  s->lease_due = w->lease_ms > 0 ? now_ms() + w->lease_ms / 3 : -1;
  /* From CMD's start (execve succeeded): its run time is what is limited. */
  s->own_at = w->time_limit_ms > 0 ? now_ms() + w->time_limit_ms : -1;
  s->limit_at = earliest(s->own_at, s->job_at);
  s->stopping = 0;
  s->kill_at = -1;
  return 0;
fail:
  close_pair(in), close_pair(out), close_pair(err), close_pair(log);
  close_pair(prog);
  free_env(s->env);
  s->env = NULL;
  return -1;
}

/* When the slot's CMD needs the worker next (a lease renewal, a time
 * limit, a SIGKILL); -1: only when something happens. */
static int64_t cmd_due(const slot *s) {
  return earliest(earliest(earliest(s->lease_due, s->kill_at), s->limit_at),
                  s->prog_due);
}

/* A bad progress line: said once per job, then dropped quietly. */
static void progress_warn(slot *s, const char *why) {
  if (s->prog_warned) return;
  s->prog_warned = true;
  fprintf(stderr, "jobboard: work: job %s: a progress line was ignored (%s; "
          "expected \"PERCENT [MESSAGE]\", PERCENT from 0 to 100); later bad "
          "lines of this job are ignored without a word\n", s->uuid, why);
}

/* One line CMD wrote to JOBBOARD_PROGRESS_FD (without its newline): the
 * report pending for the board. */
static void progress_line(slot *s, char *line, size_t len) {
  if (len > 0 && line[len - 1] == '\r') len--;
  line[len] = '\0';
  char *end = NULL;
  double pct = strtod(line, &end);
  if (end == line || (*end != '\0' && *end != ' ') ||
      !(pct >= 0.0 && pct <= 100.0)) {
    progress_warn(s, "not a percentage from 0 to 100");
    return;
  }
  const char *msg = *end == ' ' ? end + 1 : "";
  if (strlen(msg) > JB_PROGRESS_MESSAGE_MAX) {
    progress_warn(s, "a message over 200 bytes");
    return;
  }
  s->prog_pct = pct;
  snprintf(s->prog_msg, sizeof s->prog_msg, "%s", msg);
  s->prog_dirty = true;
}

/* Read CMD's progress lines; 0 at end of file, -1 when nothing more now. */
static int progress_read(slot *s) {
  for (;;) {
    ssize_t n = read(s->prog, s->progbuf + s->prog_len,
                     sizeof s->progbuf - 1 - s->prog_len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
    if (n <= 0) return 0; /* a partial last line is no report */
    s->prog_len += (size_t)n;
    char *p = s->progbuf, *nl;
    while ((nl = memchr(p, '\n', s->prog_len - (size_t)(p - s->progbuf)))) {
      if (!s->prog_skip) progress_line(s, p, (size_t)(nl - p));
      s->prog_skip = false;
      p = nl + 1;
    }
    s->prog_len -= (size_t)(p - s->progbuf);
    memmove(s->progbuf, p, s->prog_len);
    if (s->prog_len == sizeof s->progbuf - 1) { /* no newline in sight */
      if (!s->prog_skip) progress_warn(s, "a line too long");
      s->prog_skip = true;
      s->prog_len = 0;
    }
  }
}

/* Write the pending report to the board once WORK_PROGRESS_MS passed
 * since the last write (at once with `now`); until then it waits, and a
 * later line replaces it. */
static void progress_write(const worker *w, slot *s, bool now) {
  if (!s->prog_dirty) return;
  int64_t t = now_ms();
  if (!now && t < s->prog_next) {
    s->prog_due = s->prog_next;
    return;
  }
  s->prog_dirty = false;
  s->prog_due = -1;
  s->prog_next = t + WORK_PROGRESS_MS;
  int st = jb_progress(w->b, s->uuid, w->who, s->token, s->prog_pct,
                       s->prog_msg);
  if (st == JB_EINVAL)
    progress_warn(s, jb_errmsg());
  else if (st != JB_OK && !s->r.lost) /* lost: keep_lease said so */
    fprintf(stderr, "jobboard: work: job %s: recording its progress: %s\n",
            s->uuid, jb_errmsg());
}

/* Pass CMD's stderr on, whole lines at a time, each after the job's
 * prefix. 0 at end of file, -1 when nothing more now. */
static int forward_log(slot *s) {
  for (;;) {
    ssize_t n = read(s->log, s->logbuf + s->log_len,
                     WORK_LOG_LINE - s->log_len);
    if (n > 0) {
      s->log_len += (size_t)n;
      char *p = s->logbuf, *end = s->logbuf + s->log_len, *nl;
      while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        work_put_line(s->prefix, s->prefix_len, p, (size_t)(nl - p));
        p = nl + 1;
      }
      s->log_len = (size_t)(end - p);
      if (s->log_len == WORK_LOG_LINE) { /* a piece of a longer line */
        work_put_line(s->prefix, s->prefix_len, p, s->log_len);
        s->log_len = 0;
      } else if (p != s->logbuf) {
        memmove(s->logbuf, p, s->log_len);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
    if (s->log_len > 0) { /* the last line, without its newline */
      work_put_line(s->prefix, s->prefix_len, s->logbuf, s->log_len);
      s->log_len = 0;
    }
    return 0;
  }
}

/* One turn for a running CMD after a wake-up: its time limits, the second
 * signal, SIGKILL after the grace, its stdin, stdout and stderr (each
 * `rev` is poll's revents, 0 when not polled) and the lease. Returns 1
 * once CMD has exited (reaped: its status in r.status). */
static int cmd_turn(const worker *w, slot *s, short in_rev, short out_rev,
                    short log_rev, short prog_rev) {
  run_result *r = &s->r;
  int64_t now = now_ms();
  if (s->limit_at >= 0 && now >= s->limit_at) {
    s->limit_at = -1;
    /* CMD that ended just now made it in time (its SIGCHLD may still be
     * on the way): no stop, its exit status counts. */
    if (waitpid(s->pid, &r->status, WNOHANG) == s->pid) return 1;
    r->timed_out = 1;
    r->job_limit = s->own_at < 0 || (s->job_at >= 0 && s->job_at < s->own_at);
    r->limit_ms = r->job_limit ? s->job_limit : w->time_limit_ms;
    if (r->job_limit)
      fprintf(stderr, "jobboard: work: job %s: its claim lapses at the "
              "job's time limit, %.2f s, in %.2f s: stopping CMD (SIGTERM, "
              "SIGKILL %.2f s later)\n", s->uuid,
              (double)s->job_limit / 1000.0,
              (double)limit_margin(s->job_limit) / 1000.0,
              (double)w->grace_ms / 1000.0);
    else
      fprintf(stderr, "jobboard: work: job %s: time limit %.2f s exceeded: "
              "stopping CMD (SIGTERM, SIGKILL %.2f s later)\n", s->uuid,
              (double)w->time_limit_ms / 1000.0,
              (double)w->grace_ms / 1000.0);
  }
  if (stop_signals >= 2 && !r->killed) r->killed = 1;
  if ((r->timed_out || r->killed) && !s->stopping) {
    /* Over its time limit (the job is retried), or the second signal (it
     * is abandoned): stop CMD. */
    s->stopping = 1;
    kill(-s->pid, SIGTERM);
    s->kill_at = now + w->grace_ms;
  }
  if (s->kill_at >= 0 && now_ms() >= s->kill_at) {
    kill(-s->pid, SIGKILL);
    s->kill_at = -1;
  }
  if (s->in >= 0 && in_rev) {
    ssize_t k = write(s->in, s->input + s->in_off, s->in_len - s->in_off);
    if (k > 0) s->in_off += (size_t)k;
    /* Done, or CMD closed its stdin (EPIPE): it need not read it all. */
    if (s->in_off == s->in_len ||
        (k < 0 && errno != EAGAIN && errno != EINTR)) {
      close(s->in);
      s->in = -1;
    }
  }
  if (s->out >= 0 && out_rev && read_output(s->out, r) == 0) {
    close(s->out);
    s->out = -1;
  }
  if (s->log >= 0 && log_rev && forward_log(s) == 0) {
    close(s->log);
    s->log = -1;
  }
  if (s->prog >= 0 && prog_rev && progress_read(s) == 0) {
    close(s->prog);
    s->prog = -1;
  }
  progress_write(w, s, false);
  s->lease_due = keep_lease(w, s->uuid, s->token, s->lease_due, r);
  return waitpid(s->pid, &r->status, WNOHANG) == s->pid;
}

/* CMD has exited (or, `reaped` false, must be stopped now): keep what it
 * wrote before it exited, close its pipes. Reading on to end of file
 * could wait for ever: a process CMD left behind may hold them. */
static void cmd_end(slot *s, bool reaped) {
  run_result *r = &s->r;
  if (s->out >= 0) read_output(s->out, r);
  if (s->log >= 0) forward_log(s);
  if (s->log_len > 0) { /* a process CMD left behind holds the pipe */
    work_put_line(s->prefix, s->prefix_len, s->logbuf, s->log_len);
    s->log_len = 0;
  }
  if (s->prog >= 0) progress_read(s);
  if (!reaped) kill(-s->pid, SIGKILL), waitpid(s->pid, &r->status, 0);
  r->out[r->out_len] = '\0';
  if (s->in >= 0) close(s->in);
  if (s->out >= 0) close(s->out);
  if (s->log >= 0) close(s->log);
  if (s->prog >= 0) close(s->prog);
  s->in = s->out = s->log = s->prog = -1;
  free_env(s->env);
  s->env = NULL;
}

/* ------------------------------------------------------------- progress */

/* With --concurrency above 1 and stderr a terminal, a status line at the
 * bottom of stderr, drawn while the worker sleeps and cleared when it
 * wakes (so that every other line goes above it). */
static struct {
  int on;        /* drawn at all */
  int shown;     /* on the screen now */
  int running, slots;
  unsigned long long done, consumed, failed, retried;
} progress;

static void progress_draw(void) {
  if (!progress.on || progress.shown) return;
  fprintf(stderr, "work: running %d/%d, done %llu (consumed %llu, "
          "failed %llu, retried %llu)", progress.running, progress.slots,
          progress.done, progress.consumed, progress.failed,
          progress.retried);
  progress.shown = 1;
}

static void progress_clear(void) {
  if (!progress.shown) return;
  fputs("\r\033[K", stderr);
  progress.shown = 0;
}

/* After a stop signal, once: what the worker waits for (the first), or
 * what it stops (the second), when CMDs run. From the event loop, not
 * the handler: stdio is not async-signal-safe. */
static void tell_stop(const worker *w) {
  static int told; /* the signals said */
  if (stop_signals <= told) return;
  int n = 0;
  for (int i = 0; i < w->concurrency; i++)
    if (w->slots[i].busy && !w->slots[i].ended) n++;
  if (n == 0) {
    told = stop_signals;
    return;
  }
  progress_clear();
  if (told == 0) {
    work_in_hand *in = calloc((size_t)n, sizeof *in);
    int k = 0;
    int64_t now = now_ms();
    for (int i = 0; in && i < w->concurrency; i++) {
      const slot *s = &w->slots[i];
      if (!s->busy || s->ended) continue;
      in[k++] = (work_in_hand){s->uuid, jb_job_name(s->job),
                               (double)(now - s->start) / 1000.0};
    }
    work_tell_stopping(last_signal, in, in ? n : 0, w->grace_ms);
    free(in);
  }
  if (stop_signals >= 2) work_tell_stopping_now(last_signal, n, w->grace_ms);
  told = stop_signals;
}

/*
 * One wake-up of the worker for its running CMDs: poll their pipes and
 * the signals' self-pipe, up to `timeout_ms` (-1: no limit) or the next
 * time one of them needs the worker, then give each its turn. A slot
 * whose CMD exited is marked ended (the caller completes its job).
 */
static void service(const worker *w, struct slot *slots, struct pollfd *p,
                    int64_t timeout_ms) {
  int np = 0;
  p[np++] = (struct pollfd){wake_pipe[0], POLLIN, 0};
  int64_t due = -1;
  for (int i = 0; i < w->concurrency; i++) {
    slot *s = &slots[i];
    s->in_i = s->out_i = s->log_i = s->prog_i = -1;
    if (!s->busy || s->ended) continue;
    if (s->in >= 0) {
      s->in_i = np;
      p[np++] = (struct pollfd){s->in, POLLOUT, 0};
    }
    if (s->out >= 0) {
      s->out_i = np;
      p[np++] = (struct pollfd){s->out, POLLIN, 0};
    }
    if (s->log >= 0) {
      s->log_i = np;
      p[np++] = (struct pollfd){s->log, POLLIN, 0};
    }
    if (s->prog >= 0) {
      s->prog_i = np;
      p[np++] = (struct pollfd){s->prog, POLLIN, 0};
    }
    due = earliest(due, cmd_due(s));
  }
  int timeout = timeout_ms < 0 ? -1 : timeout_ms > INT_MAX ? INT_MAX
                                                           : (int)timeout_ms;
  if (due >= 0) {
    int64_t left = due - now_ms();
    if (left < 0) left = 0;
    if (timeout < 0 || left < timeout) timeout = left > INT_MAX ? INT_MAX
                                                                : (int)left;
  }
  if (timeout != 0) progress_draw();
  int ready = poll(p, (nfds_t)np, timeout);
  progress_clear();
  tell_stop(w);
  if (ready < 0 && errno != EINTR) {
    /* Cannot happen with valid fds: stop every CMD rather than spin. */
    fprintf(stderr, "jobboard: work: poll: %s\n", strerror(errno));
    for (int i = 0; i < w->concurrency; i++)
      if (slots[i].busy && !slots[i].ended) {
        cmd_end(&slots[i], false);
        slots[i].ended = true;
      }
    return;
  }
  if (ready > 0 && (p[0].revents & POLLIN)) drain_wake_pipe();
  for (int i = 0; i < w->concurrency; i++) {
    slot *s = &slots[i];
    if (!s->busy || s->ended) continue;
    short in_rev = ready > 0 && s->in_i >= 0 ? p[s->in_i].revents : 0;
    short out_rev = ready > 0 && s->out_i >= 0 ? p[s->out_i].revents : 0;
    short log_rev = ready > 0 && s->log_i >= 0 ? p[s->log_i].revents : 0;
    short prog_rev = ready > 0 && s->prog_i >= 0 ? p[s->prog_i].revents : 0;
    if (cmd_turn(w, s, in_rev, out_rev, log_rev, prog_rev)) {
      cmd_end(s, true);
      s->ended = true;
    }
  }
}

/* ------------------------------------------------------- completing a job */

/* CMD's stdout as a result: a msgpack map in *res (NULL: none; {} is a
 * result, the empty map). Output that is not one JSON object is reported
 * and dropped. */
static void output_to_result(char **res, size_t *res_len, const char *uuid,
                             const run_result *r) {
  *res = NULL;
  *res_len = 0;
  const char *s = r->out;
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  if (*s == '\0' && r->out_len == (size_t)(s - r->out)) return; /* none */
  json_error_t je;
  json_t *v = json_loadb(r->out, r->out_len,
                         JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
  char err[160];
  if (v == NULL || !json_is_object(v)) {
    fprintf(stderr, "jobboard: work: job %s: CMD's output is not a JSON "
            "object (%s): no result kept\n", uuid,
            v ? "another JSON value" : je.text);
  } else if (cli_json_to_msgpack(res, res_len, v, err, sizeof err)) {
    fprintf(stderr, "jobboard: work: job %s: CMD's output cannot be a "
            "result (%s): no result kept\n", uuid, err);
  }
  json_decref(v);
}

/* What happened to one job, for its progress line. */
typedef struct {
  const char *outcome; /* consumed failed retried dead abandoned refused */
  int exit_code;       /* -1 when none */
  int signal;          /* 0 when none */
  double seconds;
  char reason[160];    /* why the job was retried ("exit 75", "time limit
                          2.00 s exceeded"); "" when it was not */
  bool retried;        /* jb_retry took it: */
  jb_retry_result res; /* its attempts, due time, dead */
  bool snoozed;        /* jb_snooze took it (exit 76): due time in res */
  uint32_t max;        /* the maximum of attempts of a retried job; 0:
                          none */
} job_report;

/* Seconds from now to wall-clock time `us` (microseconds since the
 * epoch), 0 when it is past. */
static double seconds_until(int64_t us) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t left = us - ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
  return left > 0 ? (double)left / 1e6 : 0.0;
}

static int report(const worker *w, const char *uuid, const char *name,
                  const job_report *jr) {
  /* Flushed line by line: an operator follows it through a pipe. */
  if (w->json) {
    char due[40];
    bool has_due = (jr->retried || jr->snoozed) && !jr->res.dead &&
                   jr->res.due_us > 0;
    if (has_due) cli_format_time(due, sizeof due, jr->res.due_us);
    return cli_json_print(json_pack(
               "{s:s,s:s,s:s,s:o,s:o,s:f,s:o,s:o,s:o,s:o}", "uuid", uuid, "name",
               name, "outcome", jr->outcome, "exit",
               jr->exit_code >= 0 ? json_integer(jr->exit_code) : json_null(),
               "signal", jr->signal ? json_integer(jr->signal) : json_null(),
               "seconds", jr->seconds, "reason",
               jr->reason[0] ? json_string(jr->reason) : json_null(),
               "attempts",
               jr->retried ? json_integer(jr->res.attempts) : json_null(),
               "not_before", has_due ? json_string(due) : json_null(),
               "max_attempts",
               jr->retried && jr->max ? json_integer(jr->max)
                                      : json_null())) != 0 ||
                   fflush(stdout) != 0
               ? -1 : 0;
  }
  fflush(stdout);
  fprintf(stderr, "work: %s ", uuid);
  cli_put_text(stderr, name);
  fprintf(stderr, ": %s (", jr->outcome);
  if (jr->signal)
    fprintf(stderr, "signal %d", jr->signal);
  else if (jr->exit_code >= 0)
    fprintf(stderr, "exit %d", jr->exit_code);
  else
    fputs("not run", stderr);
  fprintf(stderr, ", %.2f s)", jr->seconds);
  if (jr->reason[0]) fprintf(stderr, ": %s", jr->reason);
  if (jr->snoozed)
    fprintf(stderr, " (claimable again in %.2f s)",
            seconds_until(jr->res.due_us));
  else if (jr->retried) {
    fprintf(stderr, " (attempt %" PRIu32, jr->res.attempts);
    if (jr->max) fprintf(stderr, " of %" PRIu32, jr->max);
    if (jr->res.dead)
      fputs(", to the dead letters)", stderr);
    else if (jr->res.due_us > 0)
      fprintf(stderr, ", claimable again in %.2f s)",
              seconds_until(jr->res.due_us));
    else
      fputs(", claimable again)", stderr);
  }
  fputc('\n', stderr);
  return 0;
}

/* A completion the board refused because the claim is no longer ours is
 * reported and the worker goes on; any other error stops it. */
static int completion_failed(int st, const char *uuid, const char *what,
                             job_report *jr) {
  if (st == JB_ENOTOWNER || st == JB_ENOTFOUND) {
    fprintf(stderr, "jobboard: work: job %s: %s refused: %s (the claim "
            "lapsed: another worker may have the job)\n", uuid, what,
            jb_errmsg());
    jr->outcome = "refused";
    return 0;
  }
  fprintf(stderr, "jobboard: work: job %s: %s: %s\n", uuid, what,
          jb_errmsg());
  return cli_exit_code(st);
}

/*
 * A completion (consume, trash, abandon) that found Redis away (JB_EOFFLINE)
 * is tried again, with waits from 0.1 s doubling to 5 s, until it goes
 * through, fails otherwise, or a second SIGINT/SIGTERM says to stop: giving
 * up would leave the job claimed until its claim lapses and another worker
 * runs it again. A completion whose reply was lost is resolved by the
 * library on the next try (it reads what Redis holds). Returns true to try
 * again (after sleeping), false to stop. With --concurrency above 1 the
 * other CMDs are looked after while it sleeps (their pipes, leases, time
 * limits; those that end are completed after this one).
 */
static bool retry_offline(const worker *w, int st, const char *uuid,
                          const char *what, int64_t *wait_ms) {
  if (st != JB_EOFFLINE || stop_signals >= 2) return false;
  /* A worker that started while Redis was away is not connected to it: a
   * job it claimed here and the replicator published since is Redis's
   * now, and only a connection completes it. */
  if (cli_sync_pending()) {
    if (cli_sync_retry(w->b)) {
      fprintf(stderr, "jobboard: work: connected to redis: claiming the "
              "jobs it decides again\n");
      return true;
    }
    /* Why not, once per reason (the tries go on every 5 s). */
    static char said[256];
    const char *why = cli_sync_offline_note();
    if (why[0] && strncmp(said, why, sizeof said - 1) != 0) {
      snprintf(said, sizeof said, "%s", why);
      fprintf(stderr, "jobboard: work: job %s: %s\n", uuid, why);
    }
  } else if (*wait_ms == 0 && !cli_sync_connected()) {
    fprintf(stderr, "jobboard: work: job %s: no connection to redis is "
            "known to this worker\n", uuid);
  }
  if (*wait_ms == 0) {
    fprintf(stderr, "jobboard: work: job %s: %s: %s (trying again until "
            "Redis answers)\n", uuid, what, jb_errmsg());
    *wait_ms = 100;
  } else if (*wait_ms < 5000) {
    *wait_ms *= 2;
  }
  if (w->concurrency > 1) {
    int64_t until = now_ms() + *wait_ms;
    for (int64_t left = *wait_ms; left > 0 && stop_signals < 2;
         left = until - now_ms())
      service(w, w->slots, w->pfd, left);
  } else {
    struct timespec ts = {*wait_ms / 1000, (*wait_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  return stop_signals < 2;
}

/* The job a consume claimed next (jb_consume_and_claim_next): the
 * worker runs it without a wait. st is JB_ECORRUPT when it was claimed
 * but its posting does not decode (job NULL). */
typedef struct {
  bool wanted; /* in: claim one (more jobs are to be run) */
  char uuid[JB_UUID_STRLEN]; /* "" when none was claimed */
  jb_job *job;
  uint64_t token;
  int st;
} next_job;

/* Consume the job and, when `next` wants it and no stop signal came,
 * claim the next one in the same commit. */
static int consume_job(const worker *w, const char *uuid, uint64_t token,
                       jb_outcome oc, const char *res, size_t res_len,
                       next_job *next) {
  if (next == NULL || !next->wanted || stop_signals != 0)
    return jb_consume(w->b, uuid, w->who, token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, oc, res, res_len});
  int st = jb_consume_and_claim_next(next->uuid, &next->job,
                                         &next->token, w->b, uuid, w->who,
                                         token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, oc, res, res_len}, &w->co);
  next->st = st;
  /* JB_ECORRUPT: consumed, and the next job claimed but undecodable. */
  return st == JB_ECORRUPT ? JB_OK : st;
}

/*
 * Start the job the slot holds (claimed just now): run CMD with the job
 * on its stdin. When CMD cannot be run the slot is ended at once, with
 * the exit code the worker stops with (the job is then abandoned).
 */
static void job_begin(const worker *w, slot *s) {
  s->start = now_ms();
  s->code = 0;
  s->ended = false;
  s->log_len = 0;
  s->prefix_len = 0;
  if (w->log_pipe) {
    size_t n = work_prefix_make(s->prefix, sizeof s->prefix,
                                w->prefix ? w->prefix : "short", s->uuid,
                                jb_job_name(s->job), w->who);
    s->prefix_len = n < sizeof s->prefix ? n : sizeof s->prefix - 1;
  }
  s->input = NULL;
  memset(&s->r, 0, sizeof s->r);
  json_t *j = cli_job_to_json(s->job);
  if (j) {
    s->input = json_dumps(j, JSON_COMPACT);
    json_decref(j);
  }
  if (s->input == NULL) {
    fprintf(stderr, "jobboard: work: job %s: out of memory\n", s->uuid);
    s->code = CLI_EXIT_ERROR;
    s->ended = true;
    return;
  }
  s->in_len = strlen(s->input);
  s->in_off = 0;
  char *line = realloc(s->input, s->in_len + 2);
  if (line) {
    s->input = line;
    memcpy(s->input + s->in_len++, "\n", 2);
  }
  /* The job's own limit counts from its claim (just made). */
  s->job_limit = jb_job_time_limit(s->job);
  s->job_at = s->job_limit > 0
                  ? s->start + s->job_limit - limit_margin(s->job_limit) : -1;
  if (cmd_start(w, s) != 0) {
    /* CMD cannot be executed (it was, when the worker started: it was
     * removed or changed since), or no process could be made. */
    if (s->r.exec_errno)
      fprintf(stderr, "jobboard: work: job %s: cannot execute '%s': %s\n",
              s->uuid, w->exe, strerror(s->r.exec_errno));
    s->code = s->r.exec_errno ? CLI_EXIT_USAGE : CLI_EXIT_ERROR;
    s->ended = true;
  }
}

/* CMD exited 76: its job snoozes (snooze_ms), its claim given back with
 * no attempt spent. A refusal (JB_EINVAL: max_snoozes reached, a job
 * Redis decides) is named, and the caller retries the job instead. */
static int snooze_job(const worker *w, const char *uuid, uint64_t token,
                      job_report *jr) {
  int64_t ms = snooze_ms(w, uuid), wait = 0;
  int st;
  do
    st = jb_snooze(w->b, uuid, w->who, token, ms);
  while (retry_offline(w, st, uuid, "snooze", &wait));
  if (st == JB_EINVAL)
    fprintf(stderr, "jobboard: work: job %s: snooze refused: %s: retried "
            "instead\n", uuid, jb_errmsg());
  if (st != JB_OK) return st;
  jr->snoozed = true;
  jr->outcome = "snoozed";
  jr->res.due_us = ms > 0 ? wall_us() + ms * 1000 : 0;
  snprintf(jr->reason, sizeof jr->reason, "exit 76, %.3f s", ms / 1000.0);
  return JB_OK;
}

/* What the worker did (the summary at exit). */
static work_tally tally;

/* A retry after a back-off (`ro`) of `job`: its maximum of attempts is
 * its own, else the board's policy's, else the worker's --max-attempts;
 * the library applies the first two, the worker the third, by sending
 * the job to the dead letters on the retry that reaches it (the reason
 * says so). jr->max: the maximum, for the progress line. */
static void attempt_limit(const worker *w, const jb_job *job,
                          jb_retry_options *ro, job_report *jr) {
  jb_retry_policy pol = JB_RETRY_POLICY_INIT;
  uint32_t own = jb_job_max_attempts(job);
  if (own == 0 && jb_board_get_retry_policy(&pol, w->b) != JB_OK)
    pol.max_attempts = 0; /* unread: the worker's applies */
  jr->max = own ? own : pol.max_attempts ? pol.max_attempts : w->max_attempts;
  uint32_t next = jb_job_attempts(job) + 1;
  if (own || pol.max_attempts || !w->max_attempts ||
      !(ro->flags & JB_RETRY_BACKOFF) || next < w->max_attempts)
    return;
  ro->flags = JB_RETRY_DEAD;
  size_t n = strlen(jr->reason);
  snprintf(jr->reason + n, sizeof jr->reason - n,
           "; attempt %" PRIu32 " of %" PRIu32 ", the worker's --max-attempts",
           next, w->max_attempts);
}

/*
 * Complete the ended slot's job by what became of CMD, report it and free
 * the slot. Returns 0 to go on, or the exit code the worker stops with. A
 * consume claims the next job too when `next` asks for it (one commit
 * instead of two). *outcome: the progress line's word.
 */
static int job_end(const worker *w, slot *s, next_job *next,
                   const char **outcome) {
  const char *uuid = s->uuid;
  const char *name = jb_job_name(s->job);
  run_result r = s->r;
  job_report jr = {"abandoned", -1, 0, 0.0, "", false, {0}, false, 0};
  int code = s->code;
  free(s->input);
  s->input = NULL;
  /* CMD's last report reaches the board before the job ends. */
  if (r.started) progress_write(w, s, true);

  if (r.started && WIFEXITED(r.status)) jr.exit_code = WEXITSTATUS(r.status);
  if (r.started && WIFSIGNALED(r.status)) jr.signal = WTERMSIG(r.status);
  if (r.timed_out)
    snprintf(jr.reason, sizeof jr.reason,
             r.job_limit ? "the job's time limit %.2f s reached"
                         : "time limit %.2f s exceeded",
             (double)r.limit_ms / 1000.0);
  else if (jr.exit_code == WORK_EXIT_RETRY || jr.exit_code == WORK_EXIT_DEAD)
    snprintf(jr.reason, sizeof jr.reason, "exit %d", jr.exit_code);
  int st = JB_OK;
  if (code != 0 || r.killed) {
    /* Not run, or stopped by the second signal: the job goes back. */
    int64_t wait = 0;
    do
      st = jb_abandon(w->b, uuid, w->who, s->token);
    while (retry_offline(w, st, uuid, "abandon", &wait));
    if (st == JB_OK)
      fprintf(stderr, "jobboard: work: job %s abandoned: it is claimable "
              "again\n", uuid);
    else if (completion_failed(st, uuid, "abandon", &jr) != 0 && code == 0)
      code = cli_exit_code(st);
  } else if (!r.timed_out && jr.exit_code == WORK_EXIT_SNOOZE &&
             (st = snooze_job(w, uuid, s->token, &jr)) != JB_EINVAL) {
    /* Snoozed (or a failure, reported): no attempt spent. */
    if (st != JB_OK) code = completion_failed(st, uuid, "snooze", &jr);
  } else {
    if (st == JB_EINVAL) /* a snooze refused: tried again as for exit 75 */
      snprintf(jr.reason, sizeof jr.reason, "exit 76, snooze refused");
    if (jr.reason[0]) {
      /* A time limit (whatever CMD's status: it may catch SIGTERM and
       * exit 0) or exit 75: tried again after the back-off; exit 100:
       * to the dead letters. A job whose attempts are used up goes there
       * too. */
      jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
      ro.flags = r.timed_out || jr.exit_code == WORK_EXIT_RETRY ||
                         jr.exit_code == WORK_EXIT_SNOOZE
                     ? JB_RETRY_BACKOFF : JB_RETRY_DEAD;
      /* A job Redis decides, even one published while CMD ran, is given
       * back at once by the library (Redis keeps no delay). */
      ro.token = s->token;
      attempt_limit(w, s->job, &ro, &jr);
      ro.reason = jr.reason;
      int64_t wait = 0;
      do
        st = jb_retry(&jr.res, w->b, uuid, w->who, &ro);
      while (retry_offline(w, st, uuid, "retry", &wait));
      if (st == JB_OK) {
        jr.retried = true;
        jr.outcome = jr.res.dead ? "dead" : "retried";
      } else {
        code = completion_failed(st, uuid, "retry", &jr);
      }
    } else {
      jb_outcome oc = jr.exit_code == 0 ? JB_OUTCOME_SUCCESS
                                        : JB_OUTCOME_FAILURE;
      char *res = NULL;
      size_t res_len = 0;
      if (r.overflow) {
        fprintf(stderr, "jobboard: work: job %s: CMD wrote more than %zu "
                "bytes on stdout: the job fails, with no result\n", uuid,
                WORK_STDOUT_MAX);
        oc = JB_OUTCOME_FAILURE;
      } else {
        output_to_result(&res, &res_len, uuid, &r);
      }
      jr.outcome = oc == JB_OUTCOME_SUCCESS ? "consumed" : "failed";
      int64_t wait = 0;
      do
        st = consume_job(w, uuid, s->token, oc, res, res_len, next);
      while (retry_offline(w, st, uuid, "consume", &wait));
      if (st == JB_EINVAL && res != NULL) {
        /* Larger than the board takes once encoded: complete it anyway. */
        fprintf(stderr, "jobboard: work: job %s: the result was refused "
                "(%s): completed without it\n", uuid, jb_errmsg());
        st = consume_job(w, uuid, s->token, oc, NULL, 0, next);
      }
      free(res);
      if (st != JB_OK) code = completion_failed(st, uuid, "consume", &jr);
    }
  }
  char snooze[PATH_MAX]; /* written, but no exit 76: it goes */
  snooze_path(snooze, sizeof snooze, w, uuid);
  unlink(snooze);
  free(r.out);
  s->r.out = NULL;
  jr.seconds = (double)(now_ms() - s->start) / 1000.0;
  if (report(w, uuid, name, &jr) != 0 && code == 0) code = CLI_EXIT_ERROR;
  work_tally_add(&tally, jr.outcome, jr.seconds, r.timed_out != 0);
  if (code == 0 && r.killed) code = 128 + last_signal;
  *outcome = jr.outcome;
  jb_job_free(s->job);
  s->job = NULL;
  s->busy = s->ended = false;
  return code;
}

/* ------------------------------------------------------------ the command */

/* The options only `work` has. */
typedef struct {
  unsigned long long jobs; /* --jobs; 0: no limit */
  int64_t time_limit_ms;   /* --time-limit; 0: none */
  int64_t grace_ms;        /* --grace */
  int no_schedules;        /* --no-schedules */
  int concurrency;         /* --concurrency */
  const char *prefix;      /* --prefix; NULL: not given */
  uint32_t max_attempts;   /* --max-attempts; 0: none */
} work_opts;

/* The value of option `opt`, `text`: a duration (cli_parse_seconds) from
 * min_s to max_s seconds, to *ms (rounded to a millisecond). Else a usage
 * error saying why. */
static int seconds_option(int64_t *ms, const char *opt, const char *what,
                          const char *text, double min_s, double max_s) {
  (void)what;
  int64_t lo = (int64_t)(min_s * 1000.0 + 0.5), hi = (int64_t)(max_s * 1000.0);
  if (cli_parse_seconds(text, lo, hi, ms)) return 0;
  return cli_duration_usage(&cli_cmd_work, opt, text, 1000, lo, hi);
}

/* --prefix (262) and --max-attempts (263): 0, or a usage error. */
static int work_own_option(work_opts *wo, int c, const char *arg) {
  char why[400];
  if (c == 262) {
    if (work_prefix_check(arg, why, sizeof why) != 0)
      return cli_cmd_usage(&cli_cmd_work, "--prefix: %s", why);
    wo->prefix = arg;
    return 0;
  }
  if (strcmp(arg, "none") == 0) {
    wo->max_attempts = 0;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || errno || v == 0 ||
      v > UINT32_MAX)
    return cli_cmd_usage(&cli_cmd_work, "--max-attempts: '%s' is not a "
                         "number of attempts (1 to %" PRIu32 ", or none)",
                         arg, UINT32_MAX);
  wo->max_attempts = (uint32_t)v;
  return 0;
}

/* Split argv at CMD: the worker's options go to cli_parse (their checks
 * and messages are the other commands'), --jobs, --time-limit and --grace
 * are taken here. GNU getopt would otherwise permute CMD's own options
 * into ours. */
static int parse(cli_opts *o, work_opts *wo, int *cmd_at, int argc,
                 char **argv, char ***kept) {
  static const struct option longopts[] = {
      /* Values from 256: getopt's optopt then tells a short option from
       * a long one. Only work's own options are told apart. */
      {"board", required_argument, NULL, 256},
      {"durability", required_argument, NULL, 256},
      {"json", no_argument, NULL, 256},
      {"help", no_argument, NULL, 'h'},
      {"who", required_argument, NULL, 256},
      {"lease", required_argument, NULL, 256},
      {"timeout", required_argument, NULL, 256},
      {"redis", required_argument, NULL, 256},
      {"namespace", required_argument, NULL, 256},
      {"jobs", required_argument, NULL, 257},
      {"time-limit", required_argument, NULL, 258},
      {"grace", required_argument, NULL, 259},
      {"no-schedules", no_argument, NULL, 260},
      {"create", no_argument, NULL, 256},
      /* Every option of cli_parse's for work is here: one missing would
       * be refused as an abbreviation of another (--name of --namespace). */
      {"name", required_argument, NULL, 256},
      {"in-order", no_argument, NULL, 256},
      {"concurrency", required_argument, NULL, 261},
      {"prefix", required_argument, NULL, 262},
      {"max-attempts", required_argument, NULL, 263},
      {NULL, 0, NULL, 0},
  };
  *wo = (work_opts){0, 0, WORK_KILL_GRACE_MS, 0, 1, NULL,
                    WORK_MAX_ATTEMPTS_DEFAULT};
  *kept = calloc((size_t)argc + 1, sizeof **kept);
  if (*kept == NULL) return CLI_EXIT_ERROR;
  int nkept = 0, c;
  (*kept)[nkept++] = argv[0];
  optind = 0;
  opterr = 0;
  for (;;) {
    int at = optind ? optind : 1;
    /* '+': the first operand is CMD; everything after it is CMD's. */
    c = cli_getopt_long(argc, argv, "+:h", longopts);
    if (c == -1) break;
    if (c == CLI_OPT_ABBREVIATED)
      return cli_cmd_usage(&cli_cmd_work, "%s", cli_abbreviation_text());
    if (c == 257) {
      char *end;
      errno = 0;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno ||
          v == 0)
        return cli_cmd_usage(&cli_cmd_work, "--jobs: '%s' is not a number "
                             "of jobs (1 or more)", optarg);
      wo->jobs = v;
      continue;
    }
    if (c == 261) {
      char *end;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno ||
          v < 1 || v > WORK_CONCURRENCY_MAX)
        return cli_cmd_usage(&cli_cmd_work, "--concurrency: '%s' is not a "
                             "number of commands at once (1 to %d)", optarg,
                             WORK_CONCURRENCY_MAX);
      wo->concurrency = (int)v;
      continue;
    }
    if (c == 262 || c == 263) {
      if (work_own_option(wo, c, optarg) != 0) return CLI_EXIT_USAGE;
      continue;
    }
    /* A time limit as long as a claim's lease may be (a job's own too). */
    if (c == 258 && seconds_option(&wo->time_limit_ms, "--time-limit",
                                   "a time limit", optarg, 0.001,
                                   (double)(JB_LEASE_MAX_MS / 1000)) != 0)
      return CLI_EXIT_USAGE;
    if (c == 259 && seconds_option(&wo->grace_ms, "--grace", "a grace period",
                                   optarg, 0.0,
                                   (double)(WORK_GRACE_MAX_MS / 1000)) != 0)
      return CLI_EXIT_USAGE;
    if (c == 260) wo->no_schedules = 1;
    if (c == 258 || c == 259 || c == 260) continue;
    if (c == '?' || c == ':') {
      char shortopt[3] = {'-', (char)optopt, '\0'};
      const char *t = optopt > 0 && optopt < 256 ? shortopt : argv[optind - 1];
      return cli_cmd_usage(&cli_cmd_work, c == ':' ? "option '%s' needs an "
                           "argument" : "unknown option '%s'", t);
    }
    for (int i = at; i < optind; i++) (*kept)[nkept++] = argv[i];
  }
  *cmd_at = optind;
  return cli_parse(o, &cli_cmd_work, nkept, *kept);
}

int cmd_work(int argc, char **argv) {
  cli_opts o;
  work_opts wo;
  int cmd_at = 0;
  char **kept = NULL;
  int rc = parse(&o, &wo, &cmd_at, argc, argv, &kept);
  unsigned long long max_jobs = wo.jobs;
  free(kept); /* o's strings point into argv, not into kept */
  if (rc != CLI_CONTINUE) return rc;
  if ((rc = cli_need_who(&cli_cmd_work, &o)) != 0) return rc;
  if (o.in_order && !o.n_names)
    return cli_cmd_usage(&cli_cmd_work, "--in-order orders the --name "
                         "options: give at least one");
  if (cmd_at >= argc)
    return cli_cmd_usage(&cli_cmd_work, "missing CMD (the command to run "
                         "for each job, after --)");
  /* CMD's pipes must not land on fds 0-2 (dup2 onto itself would keep
   * them close-on-exec): a worker started with one closed gets
   * /dev/null there. */
  for (int fd = 0; fd <= 2; fd++)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd) {
      fprintf(stderr, "jobboard: work: cannot open /dev/null: %s\n",
              strerror(errno));
      return CLI_EXIT_ERROR;
    }
  worker w = {0};
  w.who = o.who;
  w.lease_ms = o.lease_ms;
  w.time_limit_ms = wo.time_limit_ms;
  w.grace_ms = wo.grace_ms;
  w.argv = argv + cmd_at;
  w.json = o.json;
  w.concurrency = wo.concurrency;
  w.prefix = wo.prefix;
  w.log_pipe = w.concurrency > 1 ||
               (wo.prefix != NULL && strcmp(wo.prefix, "none") != 0);
  w.max_attempts = wo.max_attempts;
  if ((w.exe = resolve_command(w.argv[0])) == NULL) return CLI_EXIT_USAGE;
  if ((rc = cli_open(&w.b, &o, CLI_OPEN_WAIT)) != 0) {
    free(w.exe);
    return rc;
  }
  w.board_abs = realpath(jb_board_path(w.b), NULL);
  /* The commands' snooze files live in a directory of the worker's own,
   * which nobody else can write to. */
  const char *tmp = getenv("TMPDIR");
  char sdir[PATH_MAX];
  snprintf(sdir, sizeof sdir, "%s/jobboard-work.XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  w.snooze_dir = mkdtemp(sdir);
  if (w.board_abs == NULL || w.snooze_dir == NULL ||
      install_handlers() != 0) {
    fprintf(stderr, "jobboard: work: %s\n", strerror(errno));
    rc = CLI_EXIT_ERROR;
    goto out;
  }
  signal_board = w.b;

  /* The entity says who works here; its metadata, what it runs. */
  json_t *meta = json_pack("{s:[]}", "command");
  for (char **a = w.argv; meta && *a; a++)
    json_array_append_new(json_object_get(meta, "command"), json_string(*a));
  char *mp = NULL, err[160];
  size_t mp_len = 0;
  if (meta == NULL || cli_json_to_msgpack(&mp, &mp_len, meta, err, sizeof err)) {
    json_decref(meta);
    fprintf(stderr, "jobboard: work: out of memory\n");
    rc = CLI_EXIT_ERROR;
    goto out;
  }
  json_decref(meta);
  int st = jb_entity_register(w.b, w.who, "worker", mp, mp_len);
  free(mp);
  if (st != JB_OK) {
    rc = cli_fail(st);
    goto out;
  }

  w.co = (jb_claim_options)JB_CLAIM_OPTIONS_INIT;
  w.co.flags = JB_CLAIM_BIND_PROCESS;
  w.co.lease_ms = w.lease_ms;
  w.co.names = o.n_names ? o.names : NULL;
  w.co.n_names = o.n_names;
  if (o.in_order) w.co.flags |= JB_CLAIM_NAMES_IN_ORDER;
  slot *slots = w.slots = calloc((size_t)w.concurrency, sizeof *slots);
  struct pollfd *pfd = w.pfd =
      calloc((size_t)w.concurrency * 4 + 1, sizeof *pfd);
  if (slots == NULL || pfd == NULL) {
    free(slots), free(pfd);
    fprintf(stderr, "jobboard: work: out of memory\n");
    rc = CLI_EXIT_ERROR;
    goto unregister;
  }
  cancel_on_child = w.concurrency > 1;
  progress = (__typeof__(progress)){0};
  progress.on = w.concurrency > 1 && isatty(2);
  progress.slots = w.concurrency;
  tally = (work_tally){0};
  int64_t started = now_ms();
  unsigned long long claimed = 0; /* jobs taken (--jobs counts them) */
  int running = 0;                /* busy slots */
  bool idle = false;              /* --timeout passed with nothing to do */
  rc = CLI_EXIT_OK;
  int64_t idle_since = now_ms();
  next_job next = {0};
  sched_state sched = {0, 0};
  int64_t redis_tried = now_ms();
  /*
   * The event loop. Each turn: the ended CMDs' jobs are completed; then,
   * while a slot is free (and no signal, error, --jobs or --timeout says
   * to stop), one job is claimed and its CMD started, the wait for it
   * ending when a running CMD needs the worker (a deadline; SIGCHLD or
   * SIGIO cancel the wait); with no free slot the worker sleeps in poll()
   * on the CMDs' pipes. With --concurrency 1 that is the worker of old:
   * claim, run CMD to its end, complete (and claim the next in the same
   * commit), again.
   */
  for (;;) {
    /* Signals from here on end the wait below (stop_signals is read
     * after this, and on_stop sets it before it cancels). */
    jb_board_interrupt_reset(w.b);
    tell_stop(&w);
    bool can_claim = rc == CLI_EXIT_OK && !idle && stop_signals == 0 &&
                     running < w.concurrency &&
                     (max_jobs == 0 || claimed < max_jobs);
    if (!can_claim && running == 0) break;
    if (running > 0) service(&w, slots, pfd, can_claim ? 0 : -1);
    for (int i = 0; i < w.concurrency; i++) {
      if (!slots[i].busy || !slots[i].ended) continue;
      next.wanted = next.uuid[0] == '\0' && rc == CLI_EXIT_OK &&
                    (max_jobs == 0 || claimed < max_jobs);
      const char *outcome = "";
      int code = job_end(&w, &slots[i], &next, &outcome);
      if (code != 0 && rc == CLI_EXIT_OK) rc = code;
      running--;
      progress.running = running;
      progress.done++;
      if (strcmp(outcome, "consumed") == 0)
        progress.consumed++;
      else if (strcmp(outcome, "retried") == 0)
        progress.retried++;
      else
        progress.failed++;
      idle_since = now_ms();
    }
    can_claim = rc == CLI_EXIT_OK && !idle && stop_signals == 0 &&
                running < w.concurrency &&
                (max_jobs == 0 || claimed < max_jobs);
    if (!can_claim) continue;

    char uuid[JB_UUID_STRLEN] = "";
    jb_job *job = NULL;
    uint64_t token = 0;
    /* While the Redis the board is synced with cannot be reached, jobs it
     * decides are passed over: wait in slices and try it again between
     * them, so that a worker started during an outage gets them later.
     * --timeout counts while no CMD runs. */
    int64_t left = running > 0 ? -1 : o.timeout_ms;
    if (left >= 0) left -= now_ms() - idle_since;
    if (left < 0 && o.timeout_ms >= 0 && running == 0) left = 0;
    int sliced = cli_sync_pending() && (left < 0 || left > WORK_REDIS_RETRY_MS);
    /* Before each job (a busy worker too): the board's due scheduled
     * runs are posted; a wait for a job ends when the next one is due. */
    int64_t tick_ms = wo.no_schedules ? -1 : tick_schedules(w.b, &sched);
    int capped = 0;
    if (next.uuid[0] != '\0') {
      /* Claimed by the last job's consume, in its commit: no wait. */
      memcpy(uuid, next.uuid, JB_UUID_STRLEN);
      job = next.job;
      token = next.token;
      st = next.st;
      next = (next_job){0};
    } else {
      int64_t wait = sliced ? WORK_REDIS_RETRY_MS : left;
      if (tick_ms >= 0 && (wait < 0 || wait > tick_ms)) {
        wait = tick_ms;
        capped = 1;
      }
      for (int i = 0; i < w.concurrency; i++) {
        /* The running CMDs' deadlines end the wait too. */
        int64_t due = slots[i].busy && !slots[i].ended ? cmd_due(&slots[i])
                                                       : -1;
        if (due < 0) continue;
        due -= now_ms();
        if (due < 0) due = 0;
        if (wait < 0 || wait > due) {
          wait = due;
          capped = 1;
        }
      }
      if (wait != 0) progress_draw();
      jb_claim_options co = w.co;
      co.wait_ms = wait;
      st = jb_claim_next(uuid, &job, &token, w.b, w.who, &co);
      /* A wait of 0 (a run is due now) is a wait that ran out. */
      if (st == JB_ENOTFOUND && wait == 0) st = JB_ETIMEDOUT;
      progress_clear();
    }
    if (st == JB_ETIMEDOUT && (sliced || capped)) {
      /* A wait cut short by a scheduled run (or a running CMD) tries
       * Redis only when its slice is over. */
      if (sliced && (!capped || now_ms() - redis_tried >= WORK_REDIS_RETRY_MS)) {
        redis_tried = now_ms();
        if (cli_sync_retry(w.b))
          fprintf(stderr, "jobboard: work: connected to redis: claiming the "
                  "jobs it decides again\n");
      }
      continue;
    }
    if (st == JB_EINTERRUPTED) continue; /* a signal, a CMD: the loop sees */
    if (st == JB_ETIMEDOUT) {         /* idle for --timeout */
      idle = true;
      continue;
    }
    if (st == JB_ECORRUPT && uuid[0] != '\0') {
      /* Claimed, but its posting does not decode: no one can run it.
       * Trash keeps it for inspection and takes it out of every queue. */
      fprintf(stderr, "jobboard: work: %s; job %s trashed (run 'jobboard "
              "check')\n", jb_errmsg(), uuid);
      st = jb_trash(w.b, uuid, w.who, token);
      if (st != JB_OK) rc = cli_fail(st);
      continue;
    }
    if (st != JB_OK) {
      rc = cli_fail(st);
      continue;
    }
    slot *s = slots;
    while (s->busy) s++;
    s->busy = true;
    memcpy(s->uuid, uuid, JB_UUID_STRLEN);
    s->job = job;
    s->token = token;
    job_begin(&w, s);
    running++;
    progress.running = running;
    claimed++;
  }
  progress_clear();
  if (work_tally_print(&tally, (double)(now_ms() - started) / 1000.0,
                       w.json) != 0 && rc == CLI_EXIT_OK)
    rc = CLI_EXIT_ERROR;
  free(slots);
  free(pfd);
  if (next.uuid[0] != '\0') {
    /* Claimed with the last consume, but the worker stops (a signal, an
     * error): it goes back at once (its claim would lapse with us). */
    st = jb_abandon(w.b, next.uuid, w.who, next.token);
    if (st != JB_OK && rc == CLI_EXIT_OK) rc = cli_fail(st);
    jb_job_free(next.job);
  }
unregister:
  /* Process-bound as it is, the entity would vanish with us; removing it
   * now tells readers at once. */
  st = jb_entity_unregister(w.b, w.who);
  if (st != JB_OK && st != JB_ENOTFOUND && rc == CLI_EXIT_OK)
    rc = cli_fail(st);
out:
  signal_board = NULL;
  if (w.snooze_dir) {
    /* A file a command wrote without exiting 76 is left behind: gone. */
    DIR *d = opendir(w.snooze_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
      if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
    if (d) closedir(d);
    rmdir(w.snooze_dir);
  }
  jb_board_close(w.b);
  free(w.board_abs);
  free(w.exe);
  return rc;
}
