/*
 * cmd_demo.c - `jobboard demo`: the newcomer's tour.
 *
 * Post a few thousand jobs of mixed priorities on a board of the demo's
 * own, let several worker processes race to claim and consume them, show
 * progress, then prove what happened: every posted job consumed exactly
 * once, the board empty and consistent, and each worker's jobs in board
 * order. Nothing is assumed: the workers report every uuid they consumed
 * and the parent compares.
 *
 * The run is split so that later issues can add to it: post_jobs(),
 * spawn_workers() (each child runs worker_main()), watch_workers() (the
 * progress loop, which reads what workers report), verify() and
 * print_summary(). The leases issue kills a worker mid-way: watch_workers()
 * is where the kill goes, and a worker that dies without its 'D' record is
 * already reported as such; verify() then has to expect its claimed job
 * to come back when its lease lapses.
 */
#include "cli.h"
#include "cli_getopt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_JOBS 5000u
#define DEFAULT_WORKERS 4u
#define MAX_JOBS 10000000u
#define MAX_WORKERS 64u
/* Posts per write transaction: few transactions, each short. */
#define POST_BATCH 500u
/* Progress is redrawn this often (ms) on a terminal. */
#define PROGRESS_MS 100

static const char demo_help[] =
    "Usage: jobboard demo [OPTIONS]\n"
    "\n"
    "A tour of jobboard in one command. The demo makes a board of its own,\n"
    "posts a few thousand jobs of mixed priorities on it (in batches: one\n"
    "write transaction per 500 jobs), then starts several worker processes\n"
    "at once. Each worker opens the board itself, registers as the entity\n"
    "demo-worker-N of kind worker (bound to its process: see `jobboard\n"
    "entities`), and loops: claim the next job (highest priority first,\n"
    "then oldest), consume it, until the board is empty (when nothing is\n"
    "claimable while others still hold jobs, it looks again 2 ms later);\n"
    "then it unregisters. Every claim is one atomic transaction, so two\n"
    "workers can never own the same job.\n"
    "\n"
    "The workers loop on the worker path: each consume also claims the\n"
    "worker's next job, in the same commit (jb_consume_and_claim_next),\n"
    "so a job costs one commit instead of two. By default the jobs are\n"
    "split in two rounds of the same size, so that both meet boards of one\n"
    "size: first the plain API (claim-next, then consume: two commits per\n"
    "job) with as many workers, no kill; then the worker path. The summary\n"
    "shows both rounds' jobs/s and their ratio (--api chooses one loop for\n"
    "all the jobs).\n"
    "\n"
    "While they run, a progress line on stderr shows the jobs consumed (on\n"
    "a terminal it is redrawn every 100 ms; otherwise a few plain lines).\n"
    "Then a one-screen summary on stdout: the board and its durability, the\n"
    "jobs posted by priority, the jobs each worker consumed, the wall time\n"
    "and the throughput, and a verification. The verification checks, it\n"
    "does not assume: every worker reports each job it consumed, and the\n"
    "demo compares those reports with the jobs it posted (each must appear\n"
    "exactly once: none twice, none missing, none unknown), checks that the\n"
    "board is empty, runs the board's invariant check (as `jobboard check`\n"
    "does), and checks that each worker received its jobs in board order\n"
    "(no job after one of lower priority, or after a younger one of the\n"
    "same priority: true since all jobs were posted before the workers\n"
    "started), and that every worker was listed as an entity, with its\n"
    "pid, before the start. The last line is PASS or FAIL.\n"
    "\n"
    "The moment users ask about first, a worker dying mid-job, is part of\n"
    "the tour: the workers' claims are bound to their processes, and once\n"
    "worker 1 has done a quarter of its share it claims one more job and\n"
    "the demo kills it with SIGKILL while it holds that claim. Nobody\n"
    "abandons the job and no expiry is set: the claim lapses by itself with\n"
    "the dead process, a surviving worker claims and consumes the job, and\n"
    "the summary shows which worker and how long after the kill. (Needs two\n"
    "workers or more; --no-kill leaves every worker alive.)\n"
    "\n"
    "Options:\n"
    "  --jobs N            jobs to post (default 5000; 1 to 10000000)\n"
    "  --workers N         worker processes (default 4; 1 to 64)\n"
    "  --durability MODE   how commits reach the disk (default full, the\n"
    "                      library's default):\n"
    "                        full    every commit is flushed: survives power\n"
    "                                loss and kernel crashes; the slowest\n"
    "                        normal  one flush per commit; a power loss may\n"
    "                                undo the last commit, never corrupt\n"
    "                        none    the OS writes when it likes: by far the\n"
    "                                fastest. Survives any process crash\n"
    "                                (kill -9 too), but a POWER LOSS OR\n"
    "                                KERNEL CRASH CAN LOSE RECENT COMMITS AND\n"
    "                                CORRUPT THE BOARD\n"
    "  --board DIR         run on the board in DIR (created if missing; it\n"
    "                      must hold no jobs, since the workers would\n"
    "                      consume them). It is kept. Without --board the\n"
    "                      demo makes a new directory under $TMPDIR (or\n"
    "                      /tmp) and removes it at the end.\n"
    "  --no-kill           do not kill a worker mid-way\n"
    "  --api LOOP          the workers' loop: worker (consume and claim\n"
    "                      next), plain (claim-next, then consume), or both\n"
    "                      (the default: half the jobs in a plain round\n"
    "                      first, the other half on the worker path)\n"
    "  --keep              keep the temporary board directory (its path is\n"
    "                      printed) to look at it with other commands\n"
    "  --json              print the summary as one JSON object on stdout\n"
    "                      (keys: board, durability, jobs, posted_by_priority,\n"
    "                      workers [{worker, pid, consumed, by_priority,\n"
    "                      registered, finished, killed, error}], post_s,\n"
    "                      wall_s, jobs_per_s, consumed, duplicates,\n"
    "                      missing, unknown, left_on_board, check_ok,\n"
    "                      out_of_order, registered, kill {worker, pid, job,\n"
    "                      taken_over_by, after_s} or null, api (worker or\n"
    "                      plain: the round above), plain_round {jobs,\n"
    "                      wall_s, jobs_per_s, pass} or null,\n"
    "                      worker_vs_plain (ratio of jobs/s) or null, pass)\n"
    "  -h, --help          print this help and exit\n"
    "\n"
    "Environment:\n"
    "  TMPDIR              where the temporary board is made (default /tmp)\n"
    "  JOBBOARD_DIR        not used: the demo never touches a board of yours\n"
    "                      unless --board names it\n"
    "\n"
    "Exit status:\n"
    "  0  PASS: every posted job was consumed exactly once, and every check\n"
    "     held\n"
    "  1  FAIL (the summary says which check failed), or an error\n"
    "  2  usage error, or --board names a board that holds jobs\n"
    "  3  --board names a directory whose parent does not exist\n"
    "\n"
    "Examples:\n"
    "  jobboard demo\n"
    "  jobboard demo --durability none --jobs 100000 --workers 8\n"
    "  jobboard demo --keep && jobboard --board /tmp/jobboard-demo.XXXXXX "
    "check\n";

typedef struct {
  const char *board; /* --board, or NULL: a temporary directory */
  size_t jobs;
  unsigned workers;
  jb_durability durability;
  bool keep, json;
  bool kill; /* kill worker 1 while it holds a claim */
  int api;   /* DEMO_API_*: the workers' loop */
} demo_opts;

/* The workers' loop: the worker path (a consume claims the next job in
 * its commit), the plain API (claim-next, then consume), or a round of
 * each (the plain one first, on half of the jobs). */
enum { DEMO_API_BOTH, DEMO_API_WORKER, DEMO_API_PLAIN };

/* One posted job. `order` is its place in posting order, which is also
 * its board sequence order (batches are posted in order). */
typedef struct {
  char uuid[JB_UUID_STRLEN];
  jb_priority priority;
  uint32_t consumed; /* how many times a worker reported it */
} demo_job;

/*
 * What a worker tells the parent, through its pipe. Records:
 *   'R'                   the board is open: ready to start
 *   'C' uuid[36]          consumed this job
 *   'E' len[2] text[len]  failed (the worker exits 1 after it)
 *   'D'                   done: nothing left to claim (exits 0 after it)
 *   'H' uuid[36]          (the worker to be killed) holds this job's claim
 *                         and waits for the SIGKILL
 * A worker whose pipe closes without 'D' or 'E' died.
 */
typedef struct {
  unsigned idx; /* 1-based, as printed */
  pid_t pid;
  int fd; /* read end, -1 once closed */
  bool ready, done, failed;
  bool killed; /* by the demo, as planned */
  bool registered; /* listed as an entity, with its pid, before the start */
  int wstatus;
  bool reaped;
  char err[512];
  size_t *got; /* indices into the posted jobs, in consume order */
  size_t ngot, cap;
  size_t unknown; /* uuids it reported that were not posted */
  size_t by_priority[5];
  size_t out_of_order; /* jobs received after a later one in board order */
  unsigned char buf[4096]; /* partial record between reads */
  size_t buflen;
} demo_worker;

typedef struct {
  char dir[4096];
  bool temporary; /* we made dir: remove it unless --keep */
  jb_board *board;
  demo_job *jobs;   /* posting order */
  size_t *by_uuid;  /* indices into jobs, sorted by uuid */
  size_t posted_by_priority[5];
  size_t batches;
  demo_worker *w;
  unsigned nworkers;
  double post_s, wall_s;
  /* verification */
  size_t consumed, duplicates, missing, unknown, left;
  bool count_ok;
  bool check_ok;
  jb_check_stats check;
  char check_lines[5][256];
  size_t ncheck_lines;
  size_t out_of_order;
  size_t registered; /* workers listed as entities before the start */
  bool workers_ok;
  /* the kill: the job the victim held, who took it over and when */
  bool killed;
  unsigned victim;
  pid_t victim_pid;
  char held[JB_UUID_STRLEN];
  long held_job;
  double kill_at;
  unsigned taken_by;
  double taken_after_s;
  bool pass;
} demo_run;

/* ------------------------------------------------------------- helpers */

/* Set by SIGINT / SIGTERM in the parent: stop the workers, remove the
 * temporary board, exit (a board of `none` reserves its whole map on disk,
 * so a forgotten one is not small). */
static volatile sig_atomic_t demo_interrupted;

static void on_signal(int sig) {
  (void)sig;
  demo_interrupted = 1;
}

static void catch_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: poll() returns EINTR */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static int interrupted(void) {
  fflush(stdout);
  fprintf(stderr, "\njobboard: demo: interrupted: workers stopped\n");
  return CLI_EXIT_ERROR;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_count(size_t *out, const char *opt, const char *text,
                       size_t min, size_t max) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
      v < min || v > max)
    return cli_usage_error("demo: %s: '%s' is not a number from %zu to %zu "
                           "(try 'jobboard demo --help')", opt, text, min, max);
  *out = (size_t)v;
  return 0;
}

enum { OPT_JOBS = 256, OPT_WORKERS, OPT_DURABILITY, OPT_BOARD, OPT_KEEP, OPT_NO_KILL,
       OPT_JSON, OPT_API };

/* Returns -1 to go on, else the exit code. */
static int parse_args(demo_opts *o, int argc, char **argv) {
  static const struct option longopts[] = {
      {"jobs", required_argument, NULL, OPT_JOBS},
      {"workers", required_argument, NULL, OPT_WORKERS},
      {"durability", required_argument, NULL, OPT_DURABILITY},
      {"board", required_argument, NULL, OPT_BOARD},
      {"keep", no_argument, NULL, OPT_KEEP},
      {"json", no_argument, NULL, OPT_JSON},
      {"no-kill", no_argument, NULL, OPT_NO_KILL},
      {"api", required_argument, NULL, OPT_API},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  *o = (demo_opts){NULL, DEFAULT_JOBS, DEFAULT_WORKERS, JB_DURABILITY_FULL,
                   false, false, true, DEMO_API_BOTH};
  optind = 0;
  opterr = 0;
  int c, rc;
  size_t v;
  while ((c = cli_getopt_long(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case CLI_OPT_ABBREVIATED:
      return cli_usage_error("demo: %s (try 'jobboard demo --help')",
                             cli_abbreviation_text());
    case 'h': fputs(demo_help, stdout); return CLI_EXIT_OK;
    case OPT_JOBS:
      if ((rc = parse_count(&o->jobs, "--jobs", optarg, 1, MAX_JOBS)))
        return rc;
      break;
    case OPT_WORKERS:
      if ((rc = parse_count(&v, "--workers", optarg, 1, MAX_WORKERS)))
        return rc;
      o->workers = (unsigned)v;
      break;
    case OPT_DURABILITY:
      if ((rc = jb_durability_parse(&o->durability, optarg)) != JB_OK)
        return cli_usage_error("demo: --durability: '%s' is not a mode "
                               "(full, normal, interval or none)", optarg);
      break;
    case OPT_BOARD: o->board = optarg; break;
    case OPT_KEEP: o->keep = true; break;
    case OPT_JSON: o->json = true; break;
    case OPT_NO_KILL: o->kill = false; break;
    case OPT_API:
      if (strcmp(optarg, "both") == 0)
        o->api = DEMO_API_BOTH;
      else if (strcmp(optarg, "worker") == 0)
        o->api = DEMO_API_WORKER;
      else if (strcmp(optarg, "plain") == 0)
        o->api = DEMO_API_PLAIN;
      else
        return cli_usage_error("demo: --api: '%s' is not worker, plain or "
                               "both (try 'jobboard demo --help')", optarg);
      break;
    case ':':
      return cli_usage_error("demo: option '%s' needs an argument (try "
                             "'jobboard demo --help')", argv[optind - 1]);
    default:
      return cli_usage_error("demo: unknown option '%s' (try 'jobboard demo "
                             "--help')", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("demo: unexpected argument '%s' (try 'jobboard "
                           "demo --help')", argv[optind]);
  if (o->board != NULL && o->board[0] == '\0')
    return cli_usage_error("demo: --board: the directory must not be empty");
  return -1;
}

/* Write all of buf to a pipe. Returns 0, or -1 (the reader is gone). */
static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* ------------------------------------------------------------- the board */

static int open_board(demo_run *r, const demo_opts *o) {
  if (o->board != NULL) {
    if (strlen(o->board) >= sizeof r->dir)
      return cli_usage_error("demo: --board: path too long");
    strcpy(r->dir, o->board);
  } else {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
    snprintf(r->dir, sizeof r->dir, "%s/jobboard-demo.XXXXXX", tmp);
    if (mkdtemp(r->dir) == NULL) {
      fprintf(stderr, "jobboard: demo: cannot make a directory under %s: %s\n",
              tmp, strerror(errno));
      return CLI_EXIT_ERROR;
    }
    r->temporary = true;
  }
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = o->durability;
  int rc = jb_board_open(&r->board, r->dir, &bo);
  if (rc != JB_OK) return cli_fail(rc);
  size_t n = 0;
  if ((rc = jb_board_count(&n, r->board, 0)) != JB_OK) return cli_fail(rc);
  if (n != 0)
    return cli_usage_error("demo: the board in %s already holds %zu job%s; "
                           "the demo needs an empty board (its workers would "
                           "consume them)", r->dir, n, n == 1 ? "" : "s");
  return 0;
}

/* Remove the temporary board directory (its files, then itself). */
static void remove_board_dir(demo_run *r, const demo_opts *o) {
  if (!r->temporary || o->keep) return;
  DIR *d = opendir(r->dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
        unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
  }
  rmdir(r->dir);
}

/* ------------------------------------------------------------- posting */

/* A fixed mix, spread through posting order so that claim order visibly
 * differs from posting order: in every 10 jobs, 1 VERY_HIGH, 2 HIGH,
 * 4 NORMAL, 2 LOW, 1 VERY_LOW (7 is coprime with 10: a permutation). */
static jb_priority demo_priority(size_t i) {
  static const jb_priority mix[10] = {
      JB_PRIORITY_VERY_HIGH, JB_PRIORITY_HIGH,   JB_PRIORITY_HIGH,
      JB_PRIORITY_NORMAL,    JB_PRIORITY_NORMAL, JB_PRIORITY_NORMAL,
      JB_PRIORITY_NORMAL,    JB_PRIORITY_LOW,    JB_PRIORITY_LOW,
      JB_PRIORITY_VERY_LOW};
  return mix[(i * 7) % 10];
}

static demo_job *sort_base; /* qsort has no payload argument */

static int cmp_by_uuid(const void *a, const void *b) {
  return strcmp(sort_base[*(const size_t *)a].uuid,
                sort_base[*(const size_t *)b].uuid);
}

static int post_jobs(demo_run *r, const demo_opts *o) {
  r->jobs = calloc(o->jobs, sizeof *r->jobs);
  r->by_uuid = calloc(o->jobs, sizeof *r->by_uuid);
  jb_post *posts = calloc(POST_BATCH, sizeof *posts);
  unsigned char(*details)[8] = calloc(POST_BATCH, sizeof *details);
  char(*uuids)[JB_UUID_STRLEN] = calloc(POST_BATCH, sizeof *uuids);
  int ret = 0;
  if (!r->jobs || !r->by_uuid || !posts || !details || !uuids) {
    fprintf(stderr, "jobboard: demo: out of memory for %zu jobs\n", o->jobs);
    ret = CLI_EXIT_ERROR;
    goto out;
  }
  double t0 = now_s();
  for (size_t base = 0; base < o->jobs; base += POST_BATCH) {
    size_t n = o->jobs - base < POST_BATCH ? o->jobs - base : POST_BATCH;
    for (size_t i = 0; i < n; i++) {
      uint32_t num = (uint32_t)(base + i + 1);
      /* details: {"n": num} in msgpack */
      unsigned char *d = details[i];
      d[0] = 0x81, d[1] = 0xa1, d[2] = 'n', d[3] = 0xce;
      d[4] = (unsigned char)(num >> 24), d[5] = (unsigned char)(num >> 16);
      d[6] = (unsigned char)(num >> 8), d[7] = (unsigned char)num;
      posts[i] = (jb_post)JB_POST_INIT;
      posts[i].name = "demo.job";
      posts[i].details = d;
      posts[i].details_len = 8;
      posts[i].priority = demo_priority(base + i);
    }
    int rc = jb_job_post_batch(uuids, r->board, posts, n);
    if (rc != JB_OK) {
      ret = cli_fail(rc);
      goto out;
    }
    r->batches++;
    for (size_t i = 0; i < n; i++) {
      demo_job *j = &r->jobs[base + i];
      memcpy(j->uuid, uuids[i], JB_UUID_STRLEN);
      j->priority = posts[i].priority;
      r->posted_by_priority[j->priority]++;
      r->by_uuid[base + i] = base + i;
    }
  }
  r->post_s = now_s() - t0;
  sort_base = r->jobs;
  qsort(r->by_uuid, o->jobs, sizeof *r->by_uuid, cmp_by_uuid);
out:
  free(posts);
  free(details);
  free(uuids);
  return ret;
}

/* The posted job with this uuid, or -1. */
static long find_job(const demo_run *r, size_t njobs, const char *uuid) {
  size_t lo = 0, hi = njobs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(r->jobs[r->by_uuid[mid]].uuid, uuid);
    if (c == 0) return (long)r->by_uuid[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* ------------------------------------------------------------- a worker */

typedef struct {
  int fd;
  unsigned char buf[4096];
  size_t len;
} worker_out;

static void out_flush(worker_out *w) {
  if (w->len && write_all(w->fd, w->buf, w->len) != 0) _exit(1);
  w->len = 0;
}

static void out_put(worker_out *w, const void *rec, size_t len) {
  if (w->len + len > sizeof w->buf) out_flush(w);
  memcpy(w->buf + w->len, rec, len);
  w->len += len;
}

/* Report a failure and exit 1. */
static void worker_fail(worker_out *w, const char *what) {
  char msg[400];
  snprintf(msg, sizeof msg, "%s: %s", what, jb_errmsg());
  size_t len = strlen(msg);
  unsigned char rec[3] = {'E', (unsigned char)(len >> 8), (unsigned char)len};
  out_put(w, rec, sizeof rec);
  out_put(w, msg, len);
  out_flush(w);
  _exit(1);
}

/*
 * The child: open the board itself (a handle must not cross fork()),
 * register as entity demo-worker-N, say ready, wait for the start (EOF on
 * `go`), then claim-next + consume until the board is empty, reporting
 * each consumed uuid, and unregister. Its claims are bound to its process.
 * With `hold_after` > 0 (the worker the demo kills), after that many jobs
 * it claims one more, reports it held, and waits to be killed. Never
 * returns.
 */
static void worker_main(const demo_opts *o, const char *dir, unsigned idx,
                        int out_fd, int go_fd, size_t hold_after) {
  worker_out w = {out_fd, {0}, 0};
  signal(SIGINT, SIG_DFL); /* the parent's handler is for the parent */
  signal(SIGTERM, SIG_DFL);
  char who[32];
  snprintf(who, sizeof who, "demo-worker-%u", idx);
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = o->durability;
  jb_board *b = NULL;
  if (jb_board_open(&b, dir, &bo) != JB_OK) worker_fail(&w, "open");
  /* Announce itself, bound to this process: the parent looks for it
   * before the start, and `jobboard entities` shows it while it runs. */
  if (jb_entity_register(b, who, "worker", NULL, 0) != JB_OK)
    worker_fail(&w, "register");
  out_put(&w, "R", 1);
  out_flush(&w);
  char c;
  while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
  }
  close(go_fd);
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.flags = JB_CLAIM_BIND_PROCESS;
  bool fused = o->api != DEMO_API_PLAIN;
  char uuid[JB_UUID_STRLEN] = ""; /* the job in hand (claimed), or "" */
  uint64_t token = 0;
  for (size_t done = 0;;) {
    if (uuid[0] == '\0') {
      int rc = jb_claim_next(uuid, NULL, &token, b, who, &co);
      if (rc == JB_ENOTFOUND) {
        /* Nothing claimable. Done when the board is empty; while others
         * still hold jobs (one may die holding it), look again shortly. */
        uuid[0] = '\0';
        size_t left = 0;
        if (jb_board_count(&left, b, 0) != JB_OK) worker_fail(&w, "count");
        if (left == 0) break;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
        continue;
      }
      if (rc != JB_OK) worker_fail(&w, "claim-next");
    }
    if (hold_after > 0 && done == hold_after) {
      unsigned char rec[1 + 36];
      rec[0] = 'H';
      memcpy(rec + 1, uuid, 36);
      out_put(&w, rec, sizeof rec);
      out_flush(&w);
      for (;;) pause(); /* until the SIGKILL */
    }
    unsigned char rec[1 + 36];
    rec[0] = 'C';
    memcpy(rec + 1, uuid, 36);
    if (fused) {
      /* The worker path: the consume claims the next job in its commit
       * (uuid and token become the next job's, or "" when none). */
      if (jb_consume_and_claim_next(uuid, NULL, &token, b, uuid, who,
                                        token, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0},
                                        &co) != JB_OK)
        worker_fail(&w, "consume and claim next");
    } else {
      if (jb_consume(b, uuid, who, 0, NULL) != JB_OK) worker_fail(&w, "consume");
      uuid[0] = '\0';
    }
    done++;
    out_put(&w, rec, sizeof rec);
  }
  if (jb_entity_unregister(b, who) != JB_OK) worker_fail(&w, "unregister");
  out_put(&w, "D", 1);
  out_flush(&w);
  jb_board_close(b);
  _exit(0);
}

/* ------------------------------------------------------------- the race */

static int spawn_workers(demo_run *r, const demo_opts *o, int *go_write) {
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) {
    fprintf(stderr, "jobboard: demo: pipe: %s\n", strerror(errno));
    return CLI_EXIT_ERROR;
  }
  fflush(stdout);
  fflush(stderr);
  for (unsigned i = 0; i < o->workers; i++) {
    demo_worker *w = &r->w[i];
    w->idx = i + 1;
    w->fd = -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      fprintf(stderr, "jobboard: demo: pipe: %s\n", strerror(errno));
      return CLI_EXIT_ERROR;
    }
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "jobboard: demo: fork: %s\n", strerror(errno));
      close(p[0]);
      close(p[1]);
      return CLI_EXIT_ERROR;
    }
    if (pid == 0) {
      close(p[0]);
      close(go[1]);
      for (unsigned k = 0; k < i; k++) close(r->w[k].fd);
      /* Worker 1 is killed at a quarter of its share, if there is another
       * to take over. */
      size_t share = o->jobs / o->workers;
      size_t hold_after =
          o->kill && o->workers >= 2 && i == 0 ? share / 4 + 1 : 0;
      worker_main(o, r->dir, w->idx, p[1], go[0], hold_after);
    }
    close(p[1]);
    w->pid = pid;
    w->fd = p[0];
  }
  close(go[0]);
  *go_write = go[1];
  return 0;
}

/* Take the complete records out of w->buf. */
static void parse_records(demo_run *r, const demo_opts *o, demo_worker *w) {
  size_t pos = 0;
  for (;;) {
    size_t left = w->buflen - pos;
    if (left == 0) break;
    unsigned char *p = w->buf + pos;
    size_t need;
    switch (p[0]) {
    case 'R': w->ready = true; need = 1; break;
    case 'D': w->done = true; need = 1; break;
    case 'H': {
      need = 37;
      if (left < need) break;
      memcpy(r->held, p + 1, 36);
      r->held[36] = '\0';
      r->held_job = find_job(r, o->jobs, r->held);
      r->killed = w->killed = true;
      r->victim = w->idx;
      r->victim_pid = w->pid;
      r->kill_at = now_s();
      kill(w->pid, SIGKILL);
      if (!o->json || isatty(2) == 1)
        fprintf(stderr, "%sdemo: killed worker %u (pid %ld) with SIGKILL while "
                "it held job %s;\n      its claim is bound to its process: "
                "nobody abandons it, no expiry is set\n",
                isatty(2) == 1 ? "\r\033[K" : "", w->idx, (long)w->pid,
                r->held);
      break;
    }
    case 'C': {
      need = 37;
      if (left < need) break;
      char uuid[JB_UUID_STRLEN];
      memcpy(uuid, p + 1, 36);
      uuid[36] = '\0';
      long j = find_job(r, o->jobs, uuid);
      if (j < 0) {
        w->unknown++;
        break;
      }
      if (w->ngot == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        size_t *g = realloc(w->got, cap * sizeof *g);
        if (g == NULL) {
          fprintf(stderr, "jobboard: demo: out of memory\n");
          exit(CLI_EXIT_ERROR);
        }
        w->got = g;
        w->cap = cap;
      }
      w->got[w->ngot++] = (size_t)j;
      r->jobs[j].consumed++;
      if (r->killed && j == r->held_job) {
        r->taken_by = w->idx;
        r->taken_after_s = now_s() - r->kill_at;
      }
      w->by_priority[r->jobs[j].priority]++;
      break;
    }
    case 'E': {
      if (left < 3) {
        need = 3;
        break;
      }
      size_t len = (size_t)p[1] << 8 | p[2];
      need = 3 + len;
      if (left < need) break;
      size_t copy = len < sizeof w->err - 1 ? len : sizeof w->err - 1;
      memcpy(w->err, p + 3, copy);
      w->err[copy] = '\0';
      w->failed = true;
      break;
    }
    default:
      snprintf(w->err, sizeof w->err, "sent a record the demo does not know");
      w->failed = true;
      w->buflen = 0;
      return;
    }
    if (left < need) break;
    pos += need;
  }
  memmove(w->buf, w->buf + pos, w->buflen - pos);
  w->buflen -= pos;
}

/* Read what is there; close on EOF. */
static void drain(demo_run *r, const demo_opts *o, demo_worker *w) {
  ssize_t got = read(w->fd, w->buf + w->buflen, sizeof w->buf - w->buflen);
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    close(w->fd);
    w->fd = -1;
    return;
  }
  w->buflen += (size_t)got;
  parse_records(r, o, w);
}

/* One progress line. */
static void show_progress(demo_run *r, const demo_opts *o, bool tty,
                          double t0, int *last_quarter, bool final) {
  size_t on_board = 0, unclaimed = 0;
  if (jb_board_count(&on_board, r->board, 0) != JB_OK ||
      jb_board_count(&unclaimed, r->board, JB_ONLY_UNCLAIMED) != JB_OK)
    return;
  size_t done = o->jobs > on_board ? o->jobs - on_board : 0;
  size_t claimed = on_board > unclaimed ? on_board - unclaimed : 0;
  if (o->json && !tty) return;
  double el = now_s() - t0;
  int pct = (int)(done * 100 / o->jobs);
  if (tty) {
    char bar[31];
    int fill = (int)(done * 30 / o->jobs);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r  [%s] %zu/%zu consumed (%d%%), %zu being worked "
            "on, %.1f s\033[K", bar, done, o->jobs, pct, claimed, el);
    if (final) fputc('\n', stderr);
  } else {
    int q = pct / 25;
    if (!final && q <= *last_quarter) return;
    *last_quarter = q;
    fprintf(stderr, "demo: %zu/%zu jobs consumed (%d%%) after %.1f s\n", done,
            o->jobs, pct, el);
  }
}

/* A listed entity that is one of our workers: named demo-worker-N, with
 * worker N's pid. */
static int on_entity(const jb_entity *e, void *payload) {
  demo_run *r = payload;
  unsigned idx;
  int end = 0;
  if (sscanf(e->name, "demo-worker-%u%n", &idx, &end) == 1 &&
      e->name[end] == '\0' && idx >= 1 && idx <= r->nworkers &&
      r->w[idx - 1].pid == e->pid)
    r->w[idx - 1].registered = true;
  return 0;
}

/* Every ready worker has registered and is waiting for the start: each
 * must be listed now. */
static void find_entities(demo_run *r, const demo_opts *o) {
  r->nworkers = o->workers;
  if (jb_entity_list(r->board, on_entity, r) != JB_OK) return;
  for (unsigned i = 0; i < o->workers; i++)
    if (r->w[i].registered) r->registered++;
}

/*
 * Start the workers together (once each is ready or gone), then read their
 * reports until every pipe is closed, drawing progress on the way; reap
 * them. The wall time runs from the start to the last pipe's close.
 */
static int watch_workers(demo_run *r, const demo_opts *o, int go_write) {
  bool tty = isatty(2) == 1;
  struct pollfd pfd[MAX_WORKERS];
  /* Phase 1: wait until every worker has opened the board (or is gone),
   * so that opening is not part of the race. */
  demo_worker *who[MAX_WORKERS];
  for (;;) {
    unsigned n = 0;
    for (unsigned i = 0; i < o->workers; i++)
      if (r->w[i].fd >= 0 && !r->w[i].ready) {
        who[n] = &r->w[i];
        pfd[n++] = (struct pollfd){r->w[i].fd, POLLIN, 0};
      }
    if (n == 0) break;
    int rc = poll(pfd, n, -1);
    if (demo_interrupted) return interrupted();
    if (rc < 0 && errno != EINTR) {
      fprintf(stderr, "jobboard: demo: poll: %s\n", strerror(errno));
      return CLI_EXIT_ERROR;
    }
    for (unsigned k = 0; rc > 0 && k < n; k++)
      if (pfd[k].revents) drain(r, o, who[k]);
  }
  find_entities(r, o);
  if (!o->json || tty)
    fprintf(stderr, "demo: %u worker%s started\n", o->workers,
            o->workers == 1 ? "" : "s");
  double t0 = now_s();
  close(go_write); /* the start: every worker reads EOF at once */

  /* Phase 2: reports and progress. */
  double next = t0 + PROGRESS_MS / 1000.0;
  int quarter = 0;
  for (;;) {
    unsigned n = 0;
    for (unsigned i = 0; i < o->workers; i++)
      if (r->w[i].fd >= 0) {
        who[n] = &r->w[i];
        pfd[n++] = (struct pollfd){r->w[i].fd, POLLIN, 0};
      }
    if (n == 0) break;
    double wait = next - now_s();
    int ms = wait > 0 ? (int)(wait * 1000) + 1 : 0;
    int rc = poll(pfd, n, ms);
    if (demo_interrupted) return interrupted();
    if (rc < 0 && errno != EINTR) {
      fprintf(stderr, "jobboard: demo: poll: %s\n", strerror(errno));
      return CLI_EXIT_ERROR;
    }
    for (unsigned k = 0; rc > 0 && k < n; k++)
      if (pfd[k].revents) drain(r, o, who[k]);
    if (now_s() >= next) {
      show_progress(r, o, tty, t0, &quarter, false);
      next += PROGRESS_MS / 1000.0;
    }
  }
  r->wall_s = now_s() - t0;
  show_progress(r, o, tty, t0, &quarter, true);
  for (unsigned i = 0; i < o->workers; i++) {
    demo_worker *w = &r->w[i];
    while (waitpid(w->pid, &w->wstatus, 0) < 0 && errno == EINTR) {
    }
    w->reaped = true;
  }
  return 0;
}

/* ------------------------------------------------------------- checking */

static void on_check_line(const char *line, void *payload) {
  demo_run *r = payload;
  if (r->ncheck_lines < sizeof r->check_lines / sizeof r->check_lines[0])
    snprintf(r->check_lines[r->ncheck_lines++], sizeof r->check_lines[0],
             "%s", line);
}

/* Jobkey order: higher priority first, then posting (= sequence) order. */
static bool before(const demo_run *r, size_t a, size_t b) {
  jb_priority pa = r->jobs[a].priority, pb = r->jobs[b].priority;
  return pa != pb ? pa > pb : a < b;
}

static void verify(demo_run *r, const demo_opts *o) {
  r->workers_ok = true;
  for (unsigned i = 0; i < o->workers; i++) {
    demo_worker *w = &r->w[i];
    r->consumed += w->ngot + w->unknown;
    r->unknown += w->unknown;
    bool clean = w->killed ? WIFSIGNALED(w->wstatus) &&
                                 WTERMSIG(w->wstatus) == SIGKILL && !w->failed
                           : w->done && !w->failed &&
                                 WIFEXITED(w->wstatus) &&
                                 WEXITSTATUS(w->wstatus) == 0;
    if (!clean) r->workers_ok = false;
    /* The killed worker's job comes back out of order: not counted. */
    size_t prev = (size_t)-1;
    for (size_t k = 0; k < w->ngot; k++) {
      if (r->killed && (long)w->got[k] == r->held_job) continue;
      if (prev != (size_t)-1 && !before(r, prev, w->got[k])) w->out_of_order++;
      prev = w->got[k];
    }
    r->out_of_order += w->out_of_order;
  }
  for (size_t j = 0; j < o->jobs; j++) {
    if (r->jobs[j].consumed == 0) r->missing++;
    if (r->jobs[j].consumed > 1) r->duplicates += r->jobs[j].consumed - 1;
  }
  r->count_ok = jb_board_count(&r->left, r->board, 0) == JB_OK;
  int rc = jb_board_check(&r->check, r->board, on_check_line, r);
  r->check_ok = rc == JB_OK;
  if (rc != JB_OK && r->ncheck_lines == 0)
    snprintf(r->check_lines[r->ncheck_lines++], sizeof r->check_lines[0],
             "%s", jb_errmsg());
  r->pass = r->workers_ok && (!r->killed || r->taken_by != 0) &&
            r->registered == o->workers &&
            r->consumed == o->jobs && r->duplicates == 0 &&
            r->missing == 0 && r->unknown == 0 && r->count_ok &&
            r->left == 0 && r->check_ok && r->out_of_order == 0;
}

/* ------------------------------------------------------------- summary */

static const char *durability_note(jb_durability d) {
  switch (d) {
  case JB_DURABILITY_FULL:
    return "every commit is flushed to disk (the library's default;\n"
           "               --durability none is the fastest mode)";
  case JB_DURABILITY_NORMAL:
    return "one flush per commit (a power loss may undo the last commit)";
  case JB_DURABILITY_NONE:
    return "the fastest mode; survives kill -9, NOT a power loss (which "
           "may\n               corrupt the board)";
  case JB_DURABILITY_INTERVAL:
    return "no flush per commit; flushed every interval, and a power loss\n"
           "               leaves the last flushed state, never a damaged board";
  }
  return "";
}

static const char *short_prio[5] = {"VL", "L", "N", "H", "VH"};

static void worker_state(char *out, size_t len, const demo_worker *w) {
  if (w->killed && !w->failed && WIFSIGNALED(w->wstatus) &&
      WTERMSIG(w->wstatus) == SIGKILL)
    snprintf(out, len, "killed by the demo (SIGKILL) holding a claim");
  else if (w->failed)
    snprintf(out, len, "FAILED: %s", w->err);
  else if (WIFSIGNALED(w->wstatus))
    snprintf(out, len, "DIED: %s", strsignal(WTERMSIG(w->wstatus)));
  else if (!w->done)
    snprintf(out, len, "DIED without finishing (exit status %d)",
             WIFEXITED(w->wstatus) ? WEXITSTATUS(w->wstatus) : -1);
  else if (!WIFEXITED(w->wstatus) || WEXITSTATUS(w->wstatus) != 0)
    snprintf(out, len, "exit status %d", WEXITSTATUS(w->wstatus));
  else
    out[0] = '\0';
}

static void mark(bool ok, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void mark(bool ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(ok ? "  ok    " : "  FAIL  ", stdout);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

/* jobs/s of a round. */
static double round_rate(const demo_run *r) {
  return r->wall_s > 0 ? (double)r->consumed / r->wall_s : 0.0;
}

static void print_summary(const demo_run *r, const demo_opts *o,
                          const demo_run *plain, const demo_opts *po) {
  bool fused = o->api != DEMO_API_PLAIN;
  printf("\njobboard demo: %u worker process%s raced to claim %zu job%s on "
         "one board\n\n", o->workers, o->workers == 1 ? "" : "es", o->jobs,
         o->jobs == 1 ? "" : "s");
  printf("  board        %s\n", r->dir);
  if (r->temporary && o->keep)
    printf("               (a temporary directory, kept: look at it with\n"
           "               jobboard --board %s check)\n", r->dir);
  else if (r->temporary)
    printf("               (a temporary directory, removed now; --keep "
           "keeps it)\n");
  printf("  durability   %s: %s\n", jb_durability_name(o->durability),
         durability_note(o->durability));
  printf("  posted       %zu job%s in %zu batch transaction%s, %.2f s\n",
         o->jobs, o->jobs == 1 ? "" : "s", r->batches,
         r->batches == 1 ? "" : "s", r->post_s);
  printf("               ");
  for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
    printf("%s %zu%s", jb_priority_name((jb_priority)p),
           r->posted_by_priority[p], p > JB_PRIORITY_VERY_LOW ? ", " : "\n");
  if (fused)
    printf("  workers      each opened the board itself and looped on the "
           "worker path:\n               a consume that claims the next job "
           "in its commit, until the\n               board was empty\n");
  else
    printf("  workers      each opened the board itself and looped claim-next "
           "+ consume\n               until the board was empty\n");
  for (unsigned i = 0; i < o->workers; i++) {
    const demo_worker *w = &r->w[i];
    char state[600];
    worker_state(state, sizeof state, w);
    printf("    worker %-3u pid %-7ld %6zu jobs  (", w->idx, (long)w->pid,
           w->ngot + w->unknown);
    for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
      printf("%s %zu%s", short_prio[p], w->by_priority[p],
             p > JB_PRIORITY_VERY_LOW ? ", " : ")");
    if (state[0]) printf("  %s", state);
    putchar('\n');
  }
  printf("  wall time    %.2f s, from the start signal to the last worker's "
         "end\n", r->wall_s);
  printf("  throughput   %.0f jobs/s (each job: %s)\n", round_rate(r),
         fused ? "one commit: its consume claims the next"
               : "a claim-next and a consume, two commits");
  if (plain)
    printf("  plain API    %.0f jobs/s in a first round of %zu jobs (claim-"
           "next, then\n               consume: two commits per job)\n"
           "  ratio        the worker path did %.2f times the plain API's "
           "jobs/s\n", round_rate(plain), po->jobs,
           round_rate(plain) > 0 ? round_rate(r) / round_rate(plain) : 0.0);
  putchar('\n');

  printf("Verification (checked, not assumed)\n");
  mark(r->consumed == o->jobs && r->duplicates == 0 && r->missing == 0 &&
           r->unknown == 0,
       "every posted job was consumed exactly once: %zu posted, %zu "
       "consumed;\n        %zu twice or more, %zu never, %zu not posted by "
       "the demo", o->jobs, r->consumed, r->duplicates, r->missing,
       r->unknown);
  if (r->count_ok)
    mark(r->left == 0, "the board is empty: %zu job%s left on it", r->left,
         r->left == 1 ? "" : "s");
  else
    mark(false, "the board could not be counted: %s", jb_errmsg());
  mark(r->check_ok, "board check: %s (%zu problem%s)",
       r->check_ok ? "every invariant holds" : "invariants broken",
       r->check.problems, r->check.problems == 1 ? "" : "s");
  for (size_t i = 0; !r->check_ok && i < r->ncheck_lines; i++)
    printf("        %s\n", r->check_lines[i]);
  mark(r->out_of_order == 0,
       "each worker got its jobs in board order (higher priority first, "
       "then\n        oldest first): %zu out of order", r->out_of_order);
  mark(r->registered == o->workers,
       "each worker registered itself as an entity (jobboard entities):\n"
       "        %zu of %u listed before the start", r->registered, o->workers);
  if (r->killed)
    mark(r->taken_by != 0,
         "the claim held by killed worker %u lapsed by itself (bound to its "
         "process,\n        no expiry set): job %s was consumed by worker "
         "%u,\n        %.3f s after the kill",
         r->victim, r->held, r->taken_by, r->taken_after_s);
  if (!r->workers_ok)
    mark(false, "every worker finished cleanly (see the worker lines above)");
  if (plain)
    mark(plain->pass, "the plain API's round: %zu jobs consumed exactly once, "
         "board empty\n        and consistent, jobs in board order",
         po->jobs);
  printf("\n");
  if (r->pass && (!plain || plain->pass))
    printf("PASS: all %zu job%s consumed exactly once by %u worker%s%s\n",
           o->jobs, o->jobs == 1 ? "" : "s", o->workers,
           o->workers == 1 ? "" : "s",
           r->killed ? ", one of them killed mid-job" : "");
  else
    printf("FAIL: see the checks marked FAIL above\n");
}

static void print_json(const demo_run *r, const demo_opts *o,
                       const demo_run *plain, const demo_opts *po) {
  json_t *prio = json_object(), *workers = json_array();
  for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
    json_object_set_new(prio, jb_priority_name((jb_priority)p),
                        json_integer((json_int_t)r->posted_by_priority[p]));
  for (unsigned i = 0; i < o->workers; i++) {
    const demo_worker *w = &r->w[i];
    json_t *bp = json_object();
    for (int p = JB_PRIORITY_VERY_HIGH; p >= JB_PRIORITY_VERY_LOW; p--)
      json_object_set_new(bp, jb_priority_name((jb_priority)p),
                          json_integer((json_int_t)w->by_priority[p]));
    char state[600];
    worker_state(state, sizeof state, w);
    json_array_append_new(
        workers, json_pack("{s:I,s:I,s:I,s:o,s:b,s:b,s:b,s:s?}", "worker",
                           (json_int_t)w->idx, "pid", (json_int_t)w->pid,
                           "consumed", (json_int_t)(w->ngot + w->unknown),
                           "by_priority", bp, "registered", w->registered,
                           "finished", w->done && state[0] == '\0', "killed",
                           w->killed, "error",
                           state[0] && !w->killed ? state : NULL));
  }
  json_t *v = json_pack(
      "{s:s,s:b,s:s,s:I,s:o,s:o,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:b,s:I,"
      "s:I,s:b}",
      "board", r->dir, "temporary", r->temporary, "durability",
      jb_durability_name(o->durability), "jobs", (json_int_t)o->jobs,
      "posted_by_priority", prio, "workers", workers, "post_s", r->post_s,
      "wall_s", r->wall_s, "jobs_per_s",
      r->wall_s > 0 ? (double)r->consumed / r->wall_s : 0.0, "consumed",
      (json_int_t)r->consumed, "duplicates", (json_int_t)r->duplicates,
      "missing", (json_int_t)r->missing, "unknown", (json_int_t)r->unknown,
      "left_on_board", (json_int_t)(r->count_ok ? r->left : 0), "check_ok",
      r->check_ok, "out_of_order", (json_int_t)r->out_of_order, "registered",
      (json_int_t)r->registered, "pass", r->pass);
  if (v == NULL) return;
  json_object_set_new(v, "api", json_string(o->api == DEMO_API_PLAIN
                                                ? "plain" : "worker"));
  json_object_set_new(
      v, "plain_round",
      plain ? json_pack("{s:I,s:f,s:f,s:b}", "jobs", (json_int_t)po->jobs,
                        "wall_s", plain->wall_s, "jobs_per_s",
                        round_rate(plain), "pass", plain->pass)
            : json_null());
  json_object_set_new(v, "worker_vs_plain",
                      plain && round_rate(plain) > 0
                          ? json_real(round_rate(r) / round_rate(plain))
                          : json_null());
  if (plain && !plain->pass) json_object_set_new(v, "pass", json_false());
  json_object_set_new(
      v, "kill",
      r->killed ? json_pack("{s:I,s:I,s:s,s:I,s:f}", "worker",
                            (json_int_t)r->victim, "pid",
                            (json_int_t)r->victim_pid, "job", r->held,
                            "taken_over_by", (json_int_t)r->taken_by,
                            "after_s", r->taken_after_s)
                : json_null());
  json_dumpf(v, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
  putchar('\n');
  json_decref(v);
}

/* ------------------------------------------------------------- command */

/* Post, race, verify: one round of the demo on r's board (r->w holds
 * o->workers zeroed workers). */
static int run_round(demo_run *r, const demo_opts *o) {
  int ret;
  for (unsigned i = 0; i < o->workers; i++) r->w[i].fd = -1;
  if (!o->json)
    fprintf(stderr, "demo: %s: posting %zu jobs on %s\n",
            o->api == DEMO_API_PLAIN ? "the plain API (claim-next, then "
                                       "consume)"
                                     : "the worker path (consume and claim "
                                       "next)",
            o->jobs, r->dir);
  if ((ret = post_jobs(r, o)) != 0) return ret;
  if (demo_interrupted) return interrupted();
  int go_write = -1;
  if ((ret = spawn_workers(r, o, &go_write)) != 0) {
    if (go_write >= 0) close(go_write);
    return ret;
  }
  if ((ret = watch_workers(r, o, go_write)) != 0) return ret;
  verify(r, o);
  return 0;
}

/* End a round's workers that are still there (an early error or an
 * interrupt) and free what it holds. */
static void end_round(demo_run *r, const demo_opts *o) {
  for (unsigned i = 0; r->w && i < o->workers; i++) {
    demo_worker *w = &r->w[i];
    if (w->pid > 0 && !w->reaped) {
      kill(w->pid, SIGKILL);
      waitpid(w->pid, NULL, 0);
    }
    if (w->fd >= 0) close(w->fd);
    free(w->got);
  }
  free(r->w);
  free(r->jobs);
  free(r->by_uuid);
  r->w = NULL;
  r->jobs = NULL;
  r->by_uuid = NULL;
}

int cmd_demo(int argc, char **argv) {
  demo_opts o;
  int ret = parse_args(&o, argc, argv);
  if (ret >= 0) return ret;
  demo_run r, plain;
  memset(&r, 0, sizeof r);
  memset(&plain, 0, sizeof plain);
  /* With --api both (the default): half the jobs in a round of the plain
   * API, no kill, then the other half on the worker path. Rounds of one
   * size meet boards of one size (a larger board has deeper trees, and
   * each commit dirties more pages). */
  demo_opts po = o;
  po.api = DEMO_API_PLAIN;
  po.jobs = o.jobs / 2 ? o.jobs / 2 : 1;
  po.kill = false;
  bool both = o.api == DEMO_API_BOTH;
  if (both && o.jobs > 1) o.jobs -= po.jobs;
  r.w = calloc(o.workers, sizeof *r.w);
  plain.w = both ? calloc(o.workers, sizeof *plain.w) : NULL;
  if (r.w == NULL || (both && plain.w == NULL)) {
    fprintf(stderr, "jobboard: demo: out of memory\n");
    free(r.w);
    free(plain.w);
    return CLI_EXIT_ERROR;
  }
  for (unsigned i = 0; i < o.workers; i++) {
    r.w[i].fd = -1;
    if (both) plain.w[i].fd = -1;
  }
  catch_signals();
  if ((ret = open_board(&r, &o)) != 0) goto out;
  if (both) {
    memcpy(plain.dir, r.dir, sizeof plain.dir);
    plain.board = r.board;
    if ((ret = run_round(&plain, &po)) != 0) goto out;
  }
  if ((ret = run_round(&r, &o)) != 0) goto out;
  if (o.json)
    print_json(&r, &o, both ? &plain : NULL, &po);
  else
    print_summary(&r, &o, both ? &plain : NULL, &po);
  fflush(stdout);
  ret = r.pass && (!both || plain.pass) ? CLI_EXIT_OK : CLI_EXIT_ERROR;
out:
  end_round(&plain, &po);
  end_round(&r, &o);
  jb_board_close(r.board);
  remove_board_dir(&r, &o);
  return ret;
}
