/*
 * cmd_bench.c - `jobboard bench`: job cycles per second for each
 * durability mode, beside a raw LMDB loop doing the same writes.
 *
 * A cycle is what a job costs on the board: post, claim-next, consume, three
 * write transactions. The same process runs the library's cycle and the raw
 * floor (tools/bench_raw.c) on boards of its own, round after round in
 * turns, so both meet the same machine state; each figure is the median of
 * the rounds. Then N processes race the same cycle on one board (mode
 * none), beside N processes racing the raw loop.
 *
 * It reports; it asserts nothing about speed. It does fail when a cycle
 * fails or when jobs are left behind, since then the figure means nothing.
 */
#include "cli.h"
#include "bench_raw.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Defaults: `jobboard bench` should finish in well under a minute on a
 * 2-core machine where a flushed commit takes about a millisecond (3
 * flushed commits per cycle: ~1,000 cycles/s in full and normal) and an
 * unflushed cycle a few microseconds. */
#define DEFAULT_JOBS 200000u
#define DEFAULT_SYNC_JOBS 500u
#define DEFAULT_PROCS 4u
#define DEFAULT_ROUNDS 3u
#define MAX_PROCS 64u
#define MAX_ROUNDS 99u
/* Untimed cycles before the rounds: the first ones fault in pages, grow
 * the file and fill LMDB's free list, which no later cycle pays for. */
#define WARMUP_JOBS 2000u
#define WARMUP_SYNC_JOBS 20u
/* The library keeps a 24-byte header beside each posting in `jobs`
 * (store/store.h, jb_jobhdr); the raw value is posting + header long. */
#define JOB_HEADER_LEN 24u
/* Both sides map this much at open, as the library's default does. */
#define MAP_SIZE ((size_t)64 << 20)

static const char bench_help[] =
    "Usage: jobboard bench [OPTIONS]\n"
    "\n"
    "Measure the job cycle (post, claim-next, consume: three write\n"
    "transactions per job) for each durability mode, and in the same run a\n"
    "raw LMDB loop doing the same three write transactions per job with the\n"
    "same environment flags the library uses for that mode and records of\n"
    "the same sizes. It prints cycles per second and microseconds per cycle\n"
    "for both, and jobboard's ratio to the raw floor (1.00 = as fast as bare\n"
    "LMDB). The raw loop writes nothing else: no change log, no checks, no\n"
    "posting encoding, so the ratio is what the library costs on top of LMDB.\n"
    "\n"
    "Single process: for each mode, a fresh board and a fresh raw\n"
    "environment; untimed warm-up cycles (2000; 20 for full and normal), then\n"
    "--rounds timed rounds of each, taken in turns; each figure is the\n"
    "median round.\n"
    "  mode     raw LMDB flags (the library's for the mode)\n"
    "  full     MDB_NOTLS                              (two flushes per commit)\n"
    "  normal   MDB_NOMETASYNC|MDB_NOTLS               (one flush per commit)\n"
    "  none     MDB_WRITEMAP|MDB_NOSYNC|MDB_NOTLS      (no syscall per commit)\n"
    "\n"
    "Multiple processes: --procs processes race the same cycle on one board\n"
    "in mode none (each opens the board itself after fork), then as many\n"
    "race the raw loop on one environment; the figure is all their cycles\n"
    "over the wall time from the common start to the last one's end.\n"
    "\n"
    "Benchmarks report, they do not promise: figures depend on the machine,\n"
    "its load and its disk. The first lines name the machine and the file\n"
    "system of the boards (on tmpfs a flush costs nothing, so full and\n"
    "normal would not measure a disk).\n"
    "\n"
    "Options:\n"
    "  --jobs N        cycles per round in mode none, and the total of the\n"
    "                  multi-process race (default 200000)\n"
    "  --sync-jobs N   cycles per round in modes full and normal, which\n"
    "                  flush the disk on every commit (default 500)\n"
    "  --modes LIST    comma-separated modes to measure, among full, normal,\n"
    "                  none (default: full,normal,none)\n"
    "  --procs N       processes of the multi-process race (default 4; 0\n"
    "                  skips it)\n"
    "  --rounds N      timed rounds per figure, median reported (default 3)\n"
    "  --board DIR     make the boards under DIR, which must be empty or\n"
    "                  missing (default: a new directory under $TMPDIR or\n"
    "                  /tmp). The boards are removed at the end unless --keep\n"
    "                  is given.\n"
    "  --keep          keep the boards (and the directory bench made)\n"
    "  --json          print one JSON object per line on stdout: a \"setup\"\n"
    "                  line, one \"single\" line per mode and a \"multi\" line,\n"
    "                  with fields cycles, rounds, jobboard_cycles_per_s,\n"
    "                  jobboard_us_per_cycle, raw_cycles_per_s,\n"
    "                  raw_us_per_cycle, ratio\n"
    "  -h, --help      print this help and exit\n"
    "\n"
    "Durability modes, in short (see jobboard(1)): full flushes every commit\n"
    "and survives power loss; normal flushes once per commit, and a power\n"
    "loss may undo the last commit, never corrupt; none leaves writing to the\n"
    "OS: it survives any process crash (kill -9 too) but a POWER LOSS OR\n"
    "KERNEL CRASH CAN LOSE RECENT COMMITS AND CORRUPT THE BOARD.\n"
    "\n"
    "Environment:\n"
    "  TMPDIR          where the temporary directory is made (default /tmp)\n"
    "\n"
    "Exit status:\n"
    "  0  every measurement ran (whatever the figures)\n"
    "  1  a cycle failed, a worker process failed, or jobs were left behind\n"
    "  2  usage error\n"
    "\n"
    "Examples:\n"
    "  jobboard bench\n"
    "  jobboard bench --modes none --jobs 1000000 --procs 2\n"
    "  jobboard bench --json | jq .ratio\n";

typedef struct {
  size_t jobs, sync_jobs;
  unsigned procs, rounds;
  bool mode[3]; /* by jb_durability */
  const char *board;
  bool keep, json;
} bench_opts;

/* One side's figure: the median round. */
typedef struct {
  size_t cycles;
  double secs;
} bench_fig;

typedef struct {
  char root[4096];
  bool made_root;  /* we created root (remove it too) */
  char made[16][64]; /* subdirectories we created, to remove at the end */
  size_t nmade;
  size_t posting_len, value_len;
} bench_ctx;

/* ------------------------------------------------------------- helpers */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rate(const bench_fig *f) {
  return f->secs > 0 ? (double)f->cycles / f->secs : 0;
}

static double us_per(const bench_fig *f) {
  return f->cycles ? f->secs * 1e6 / (double)f->cycles : 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of the rounds' seconds (all rounds ran the same cycles). */
static double median(double *v, unsigned n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int parse_count(size_t *out, const char *opt, const char *text,
                       size_t min, size_t max) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
      v < min || v > max)
    return cli_usage_error("bench: %s: '%s' is not a number from %zu to %zu "
                           "(try 'jobboard bench --help')", opt, text, min, max);
  *out = (size_t)v;
  return 0;
}

static int parse_modes(bool mode[3], const char *text) {
  mode[0] = mode[1] = mode[2] = false;
  char buf[256];
  if (strlen(text) >= sizeof buf || text[0] == '\0')
    return cli_usage_error("bench: --modes: '%.64s' is not a list of modes "
                           "(full, normal, none)", text);
  strcpy(buf, text);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    jb_durability d;
    if (jb_durability_parse(&d, t) != JB_OK)
      return cli_usage_error("bench: --modes: unknown mode '%s' (expected "
                             "full, normal or none, comma-separated)", t);
    mode[d] = true;
  }
  if (!mode[0] && !mode[1] && !mode[2])
    return cli_usage_error("bench: --modes: '%s' names no mode", text);
  return 0;
}

enum { OPT_JOBS = 256, OPT_SYNC_JOBS, OPT_MODES, OPT_PROCS, OPT_ROUNDS,
       OPT_BOARD, OPT_KEEP, OPT_JSON };

/* Returns -1 to go on, else the exit code. */
static int parse_args(bench_opts *o, int argc, char **argv) {
  static const struct option longopts[] = {
      {"jobs", required_argument, NULL, OPT_JOBS},
      {"sync-jobs", required_argument, NULL, OPT_SYNC_JOBS},
      {"modes", required_argument, NULL, OPT_MODES},
      {"procs", required_argument, NULL, OPT_PROCS},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
      {"board", required_argument, NULL, OPT_BOARD},
      {"keep", no_argument, NULL, OPT_KEEP},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  *o = (bench_opts){DEFAULT_JOBS, DEFAULT_SYNC_JOBS, DEFAULT_PROCS,
                    DEFAULT_ROUNDS, {true, true, true}, NULL, false, false};
  optind = 0;
  opterr = 0;
  int c, rc;
  size_t v;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case 'h': fputs(bench_help, stdout); return CLI_EXIT_OK;
    case OPT_JOBS:
      if ((rc = parse_count(&o->jobs, "--jobs", optarg, 1, 1000000000)))
        return rc;
      break;
    case OPT_SYNC_JOBS:
      if ((rc = parse_count(&o->sync_jobs, "--sync-jobs", optarg, 1, 100000000)))
        return rc;
      break;
    case OPT_MODES:
      if ((rc = parse_modes(o->mode, optarg))) return rc;
      break;
    case OPT_PROCS:
      if ((rc = parse_count(&v, "--procs", optarg, 0, MAX_PROCS))) return rc;
      o->procs = (unsigned)v;
      break;
    case OPT_ROUNDS:
      if ((rc = parse_count(&v, "--rounds", optarg, 1, MAX_ROUNDS))) return rc;
      o->rounds = (unsigned)v;
      break;
    case OPT_BOARD: o->board = optarg; break;
    case OPT_KEEP: o->keep = true; break;
    case OPT_JSON: o->json = true; break;
    case ':':
      return cli_usage_error("bench: option '%s' needs an argument (try "
                             "'jobboard bench --help')", argv[optind - 1]);
    default:
      return cli_usage_error("bench: unknown option '%s' (try 'jobboard "
                             "bench --help')", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("bench: unexpected argument '%s' (try 'jobboard "
                           "bench --help')", argv[optind]);
  if (o->board != NULL && o->board[0] == '\0')
    return cli_usage_error("bench: --board: the directory must not be empty");
  return -1;
}

/* ------------------------------------------------------ directories */

/* Is `dir` an empty directory? 1 yes, 0 no (not empty), -1 error. */
static int dir_is_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return -1;
  struct dirent *e;
  int empty = 1;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      empty = 0;
      break;
    }
  closedir(d);
  return empty;
}

static int make_root(bench_ctx *x, const bench_opts *o) {
  if (o->board == NULL) {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
    snprintf(x->root, sizeof x->root, "%s/jobboard-bench.XXXXXX", tmp);
    if (mkdtemp(x->root) == NULL) {
      fprintf(stderr, "jobboard: bench: cannot make a directory under %s: "
              "%s\n", tmp, strerror(errno));
      return CLI_EXIT_ERROR;
    }
    x->made_root = true;
    return 0;
  }
  if (strlen(o->board) >= sizeof x->root - 64)
    return cli_usage_error("bench: --board: path too long");
  strcpy(x->root, o->board);
  if (mkdir(x->root, 0775) == 0) {
    x->made_root = true;
    return 0;
  }
  if (errno != EEXIST) {
    fprintf(stderr, "jobboard: bench: cannot make %s: %s\n", x->root,
            strerror(errno));
    return CLI_EXIT_ERROR;
  }
  int e = dir_is_empty(x->root);
  if (e == 1) return 0;
  if (e == 0)
    return cli_usage_error("bench: --board: %s is not empty (bench makes "
                           "its own boards there and removes them: give an "
                           "empty or missing directory)", x->root);
  return cli_usage_error("bench: --board: %s is not a directory (%s)",
                         x->root, strerror(errno));
}

/* Make root/name, fresh; its path in `out`. */
static int make_sub(bench_ctx *x, const char *name, char *out, size_t len) {
  snprintf(out, len, "%s/%s", x->root, name);
  if (mkdir(out, 0775) != 0) {
    fprintf(stderr, "jobboard: bench: cannot make %s: %s\n", out,
            strerror(errno));
    return CLI_EXIT_ERROR;
  }
  if (x->nmade < sizeof x->made / sizeof x->made[0])
    snprintf(x->made[x->nmade++], sizeof x->made[0], "%s", name);
  return 0;
}

/* Remove the files of a directory we made (boards hold no subdirectories),
 * then the directory. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
        unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
  }
  rmdir(dir);
}

static void cleanup(bench_ctx *x, const bench_opts *o) {
  if (o->keep) return;
  char path[4200];
  for (size_t i = 0; i < x->nmade; i++) {
    snprintf(path, sizeof path, "%s/%s", x->root, x->made[i]);
    remove_dir(path);
  }
  if (x->made_root) rmdir(x->root);
}

/* --------------------------------------------------- the library's cycle */

/* {"task": "resize", "width": 640, "height": 480}: details of a plausible
 * size, in msgpack. */
static const unsigned char bench_details[] = {
    0x83, 0xa4, 't', 'a', 's', 'k', 0xa6, 'r', 'e', 's', 'i', 'z', 'e',
    0xa5, 'w', 'i', 'd', 't', 'h', 0xcd, 0x02, 0x80,
    0xa6, 'h', 'e', 'i', 'g', 'h', 't', 0xcd, 0x01, 0xe0};

static jb_post bench_post(void) {
  jb_post p = JB_POST_INIT;
  p.name = "bench.resize-image";
  p.details = bench_details;
  p.details_len = sizeof bench_details;
  p.priority = JB_PRIORITY_NORMAL;
  return p;
}

#define BENCH_WHO "bench-worker"

static int lib_cycles(jb_board *b, size_t n) {
  jb_post p = bench_post();
  char uuid[JB_UUID_STRLEN], claimed[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++) {
    int rc;
    if ((rc = jb_job_post(uuid, b, &p)) != JB_OK ||
        (rc = jb_job_claim_next(claimed, NULL, b, BENCH_WHO)) != JB_OK ||
        (rc = jb_job_consume(b, claimed, BENCH_WHO)) != JB_OK)
      return rc;
  }
  return JB_OK;
}

static int lib_open(jb_board **out, const char *dir, jb_durability d) {
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = d;
  bo.map_size = MAP_SIZE;
  return jb_board_open(out, dir, &bo);
}

/* The size of the bench's posting on a real board: post one, read it back,
 * take it off again. */
static int measure_posting(size_t *len, jb_board *b) {
  jb_post p = bench_post();
  char uuid[JB_UUID_STRLEN];
  jb_job *job = NULL;
  int rc;
  if ((rc = jb_job_post(uuid, b, &p)) != JB_OK ||
      (rc = jb_job_get(&job, b, uuid)) != JB_OK)
    return rc;
  jb_job_posting(job, len);
  jb_job_free(job);
  if ((rc = jb_job_claim(b, uuid, BENCH_WHO)) != JB_OK) return rc;
  return jb_job_consume(b, uuid, BENCH_WHO);
}

static int fail_raw(const char *what, int rc) {
  fflush(stdout);
  fprintf(stderr, "jobboard: bench: raw LMDB %s: %s\n", what,
          bench_raw_strerror(rc));
  return CLI_EXIT_ERROR;
}

static int fail_lib(const char *what, int rc) {
  fflush(stdout);
  fprintf(stderr, "jobboard: bench: %s: %s\n", what, jb_errmsg());
  (void)rc;
  return CLI_EXIT_ERROR;
}

/* ------------------------------------------------------ single process */

static int bench_single(bench_fig *lib, bench_fig *raw, bench_ctx *x,
                        const bench_opts *o, jb_durability d) {
  const char *mode = jb_durability_name(d);
  size_t n = d == JB_DURABILITY_NONE ? o->jobs : o->sync_jobs;
  size_t warm = d == JB_DURABILITY_NONE ? WARMUP_JOBS : WARMUP_SYNC_JOBS;
  char dir_lib[4200], dir_raw[4200], name[64];
  int rc;
  snprintf(name, sizeof name, "%s", mode);
  if ((rc = make_sub(x, name, dir_lib, sizeof dir_lib))) return rc;
  snprintf(name, sizeof name, "raw-%s", mode);
  if ((rc = make_sub(x, name, dir_raw, sizeof dir_raw))) return rc;

  jb_board *b = NULL;
  bench_raw *r = NULL;
  if ((rc = lib_open(&b, dir_lib, d)) != JB_OK) return fail_lib("open", rc);
  if (x->posting_len == 0) {
    if ((rc = measure_posting(&x->posting_len, b)) != JB_OK) {
      jb_board_close(b);
      return fail_lib("posting size", rc);
    }
    x->value_len = x->posting_len + JOB_HEADER_LEN;
  }
  if ((rc = bench_raw_open(&r, dir_raw, d, MAP_SIZE, x->value_len, 0))) {
    jb_board_close(b);
    return fail_raw("open", rc);
  }
  int ret = 0;
  if ((rc = lib_cycles(b, warm)) != JB_OK) {
    ret = fail_lib("warm-up", rc);
    goto out;
  }
  if ((rc = bench_raw_cycles(r, warm, NULL))) {
    ret = fail_raw("warm-up", rc);
    goto out;
  }
  double tl[MAX_ROUNDS], tr[MAX_ROUNDS];
  for (unsigned i = 0; i < o->rounds; i++) {
    double t0 = now_s();
    if ((rc = lib_cycles(b, n)) != JB_OK) {
      ret = fail_lib("cycle", rc);
      goto out;
    }
    double t1 = now_s();
    if ((rc = bench_raw_cycles(r, n, NULL))) {
      ret = fail_raw("cycle", rc);
      goto out;
    }
    double t2 = now_s();
    tl[i] = t1 - t0;
    tr[i] = t2 - t1;
  }
  *lib = (bench_fig){n, median(tl, o->rounds)};
  *raw = (bench_fig){n, median(tr, o->rounds)};
  size_t left = 0;
  if ((rc = jb_board_count(&left, b, 0)) != JB_OK) {
    ret = fail_lib("count", rc);
  } else if (left != 0 || bench_raw_count(r) != 0) {
    fprintf(stderr, "jobboard: bench: %s: jobs left behind after the cycles "
            "(jobboard %zu, raw %zu)\n", mode, left, bench_raw_count(r));
    ret = CLI_EXIT_ERROR;
  }
out:
  bench_raw_close(r);
  jb_board_close(b);
  return ret;
}

/* ------------------------------------------------------ multi-process */

/* Write all of buf (a pipe; EINTR-safe). */
static void write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    len -= (size_t)w;
  }
}

/*
 * One racing process: open the board (or raw environment) itself, warm
 * up, say ready, wait for the start (EOF on `go`), run `n` cycles, exit.
 * Never returns. Errors are one line on stderr and exit status 1.
 */
static void mp_child(const char *dir, bool raw, size_t value_len, unsigned idx,
                     size_t n, int ready_fd, int go_fd) {
  jb_board *b = NULL;
  bench_raw *r = NULL;
  int rc;
  char msg[512];
  msg[0] = '\0';
  if (raw) {
    if ((rc = bench_raw_open(&r, dir, JB_DURABILITY_NONE, MAP_SIZE, value_len,
                             idx + 1)) ||
        (rc = bench_raw_cycles(r, WARMUP_JOBS / 4, NULL)))
      snprintf(msg, sizeof msg, "raw LMDB: %s", bench_raw_strerror(rc));
  } else {
    if ((rc = lib_open(&b, dir, JB_DURABILITY_NONE)) != JB_OK ||
        (rc = lib_cycles(b, WARMUP_JOBS / 4)) != JB_OK)
      snprintf(msg, sizeof msg, "%s", jb_errmsg());
  }
  if (msg[0] == '\0') {
    char one = 'R';
    write_all(ready_fd, &one, 1);
    close(ready_fd);
    char c;
    while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
    }
    if (raw) {
      if ((rc = bench_raw_cycles(r, n, NULL)))
        snprintf(msg, sizeof msg, "raw LMDB: %s", bench_raw_strerror(rc));
    } else if ((rc = lib_cycles(b, n)) != JB_OK) {
      snprintf(msg, sizeof msg, "%s", jb_errmsg());
    }
  }
  bench_raw_close(r);
  jb_board_close(b);
  if (msg[0] != '\0') {
    char line[640];
    int len = snprintf(line, sizeof line, "jobboard: bench: process %u: %s\n",
                       idx + 1, msg);
    write_all(2, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
    _exit(1);
  }
  _exit(0);
}

/* One race of o->procs processes over `total` cycles; wall seconds from
 * the common start to the last exit in *secs. */
static int mp_round(double *secs, const char *dir, bool raw, size_t value_len,
                    const bench_opts *o, size_t total) {
  int ready[2], go[2];
  if (pipe2(ready, O_CLOEXEC) != 0) goto sys_fail;
  if (pipe2(go, O_CLOEXEC) != 0) {
    close(ready[0]);
    close(ready[1]);
    goto sys_fail;
  }
  pid_t pids[MAX_PROCS];
  unsigned started = 0;
  fflush(stdout);
  fflush(stderr);
  for (unsigned i = 0; i < o->procs; i++) {
    size_t n = total / o->procs + (i < total % o->procs ? 1 : 0);
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      mp_child(dir, raw, value_len, i, n, ready[1], go[0]);
    }
    pids[started++] = pid;
  }
  close(ready[1]);
  close(go[0]);
  /* Every child says ready (one byte) or dies (its end closes). */
  unsigned nready = 0;
  char buf[MAX_PROCS];
  while (nready < started) {
    ssize_t got = read(ready[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    nready += (unsigned)got;
  }
  close(ready[0]);
  double t0 = now_s();
  close(go[1]); /* the start: EOF for every child at once */
  int failed = started < o->procs;
  for (unsigned i = 0; i < started; i++) {
    int st;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      if (WIFSIGNALED(st))
        fprintf(stderr, "jobboard: bench: process %u killed by signal %d\n",
                i + 1, WTERMSIG(st));
      failed = 1;
    }
  }
  *secs = now_s() - t0;
  if (started < o->procs) {
    fprintf(stderr, "jobboard: bench: fork: %s\n", strerror(errno));
  }
  return failed ? CLI_EXIT_ERROR : 0;
sys_fail:
  fprintf(stderr, "jobboard: bench: pipe: %s\n", strerror(errno));
  return CLI_EXIT_ERROR;
}

static int bench_multi(bench_fig *lib, bench_fig *raw, bench_ctx *x,
                       const bench_opts *o) {
  char dir_lib[4200], dir_raw[4200];
  int rc;
  if ((rc = make_sub(x, "mp-none", dir_lib, sizeof dir_lib)) ||
      (rc = make_sub(x, "raw-mp-none", dir_raw, sizeof dir_raw)))
    return rc;
  /* Create both here, so the children only open; and close them before
   * forking: a handle must not cross a fork. */
  jb_board *b = NULL;
  bench_raw *r = NULL;
  if ((rc = lib_open(&b, dir_lib, JB_DURABILITY_NONE)) != JB_OK)
    return fail_lib("open", rc);
  if (x->posting_len == 0 && (rc = measure_posting(&x->posting_len, b)) != JB_OK) {
    jb_board_close(b);
    return fail_lib("posting size", rc);
  }
  x->value_len = x->posting_len + JOB_HEADER_LEN;
  jb_board_close(b);
  b = NULL;
  if ((rc = bench_raw_open(&r, dir_raw, JB_DURABILITY_NONE, MAP_SIZE,
                           x->value_len, 0)))
    return fail_raw("open", rc);
  bench_raw_close(r);
  r = NULL;

  double tl[MAX_ROUNDS], tr[MAX_ROUNDS];
  for (unsigned i = 0; i < o->rounds; i++) {
    if ((rc = mp_round(&tl[i], dir_lib, false, x->value_len, o, o->jobs)) ||
        (rc = mp_round(&tr[i], dir_raw, true, x->value_len, o, o->jobs)))
      return rc;
  }
  *lib = (bench_fig){o->jobs, median(tl, o->rounds)};
  *raw = (bench_fig){o->jobs, median(tr, o->rounds)};

  /* Every race leaves both empty: whatever a process posted, someone
   * claimed and consumed. Checked, since a figure over lost jobs is no
   * figure. */
  size_t left = 0, left_raw;
  if ((rc = lib_open(&b, dir_lib, JB_DURABILITY_NONE)) != JB_OK)
    return fail_lib("open", rc);
  rc = jb_board_count(&left, b, 0);
  jb_board_close(b);
  if (rc != JB_OK) return fail_lib("count", rc);
  if ((rc = bench_raw_open(&r, dir_raw, JB_DURABILITY_NONE, MAP_SIZE,
                           x->value_len, 0)))
    return fail_raw("open", rc);
  left_raw = bench_raw_count(r);
  bench_raw_close(r);
  if (left != 0 || left_raw != 0) {
    fprintf(stderr, "jobboard: bench: jobs left behind after the race "
            "(jobboard %zu, raw %zu)\n", left, left_raw);
    return CLI_EXIT_ERROR;
  }
  return 0;
}

/* ------------------------------------------------------------ output */

static void cpu_model(char *out, size_t len) {
  snprintf(out, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *p = strchr(line, ':');
    if (p == NULL) continue;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    p[strcspn(p, "\n")] = '\0';
    snprintf(out, len, "%s", p);
    break;
  }
  fclose(f);
}

static const char *fs_name(const char *path) {
  struct statfs s;
  if (statfs(path, &s) != 0) return "unknown";
  switch ((unsigned long)s.f_type) {
  case 0xEF53UL: return "ext4";
  case 0x01021994UL: return "tmpfs";
  case 0x58465342UL: return "xfs";
  case 0x9123683EUL: return "btrfs";
  case 0x794c7630UL: return "overlayfs";
  case 0x2fc12fc1UL: return "zfs";
  case 0x6969UL: return "nfs";
  case 0xF2F52010UL: return "f2fs";
  default: return "other";
  }
}

static void print_row(const char *label, const bench_fig *l,
                      const bench_fig *r) {
  printf("  %-8s %9zu  %11.0f %9.2f  %11.0f %9.2f  %6.2f\n", label, l->cycles,
         rate(l), us_per(l), rate(r), us_per(r),
         rate(r) > 0 ? rate(l) / rate(r) : 0.0);
}

static void json_line(json_t *v) {
  if (v == NULL) return;
  json_dumpf(v, stdout, JSON_COMPACT);
  putchar('\n');
  json_decref(v);
}

static json_t *json_figs(const char *type, const char *mode, unsigned procs,
                         const bench_fig *l, const bench_fig *r,
                         unsigned rounds, const char *flags) {
  return json_pack("{s:s,s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:s}",
                   "type", type, "mode", mode, "procs", (json_int_t)procs,
                   "cycles", (json_int_t)l->cycles, "rounds",
                   (json_int_t)rounds, "jobboard_cycles_per_s", rate(l),
                   "jobboard_us_per_cycle", us_per(l), "raw_cycles_per_s",
                   rate(r), "raw_us_per_cycle", us_per(r), "ratio",
                   rate(r) > 0 ? rate(l) / rate(r) : 0.0, "raw_flags", flags);
}

/* ------------------------------------------------------------- command */

int cmd_bench(int argc, char **argv) {
  bench_opts o;
  int rc = parse_args(&o, argc, argv);
  if (rc >= 0) return rc;
  bench_ctx x;
  memset(&x, 0, sizeof x);
  if ((rc = make_root(&x, &o))) return rc;

  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  struct utsname un;
  if (uname(&un) != 0) snprintf(un.release, sizeof un.release, "unknown");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const char *fs = fs_name(x.root);

  if (o.json) {
    json_line(json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I}", "type",
                        "setup", "version", jb_version(NULL, NULL, NULL),
                        "cpus", (json_int_t)ncpu, "cpu", cpu, "kernel",
                        un.release, "dir", x.root, "filesystem", fs, "jobs",
                        (json_int_t)o.jobs, "sync_jobs",
                        (json_int_t)o.sync_jobs, "rounds",
                        (json_int_t)o.rounds));
  } else {
    printf("jobboard bench %s: a cycle is post + claim-next + consume, three "
           "write transactions per job\n", jb_version(NULL, NULL, NULL));
    printf("  machine  %ld cpus, %s, Linux %s\n", ncpu, cpu, un.release);
    printf("  boards   %s (%s)%s\n", x.root, fs,
           strcmp(fs, "tmpfs") == 0
               ? ": a flush costs nothing here, full and normal measure no disk"
               : "");
    printf("  figures  median of %u round%s after untimed warm-up; raw LMDB = "
           "the same three write\n           transactions with the library's "
           "flags for the mode, same record sizes\n\n",
           o.rounds, o.rounds == 1 ? "" : "s");
    printf("single process      cycles   jobboard/s  us/cycle        raw/s  "
           "us/cycle   ratio\n");
  }
  fflush(stdout);

  int ret = 0;
  static const jb_durability order[] = {JB_DURABILITY_FULL,
                                        JB_DURABILITY_NORMAL,
                                        JB_DURABILITY_NONE};
  for (size_t i = 0; ret == 0 && i < 3; i++) {
    jb_durability d = order[i];
    if (!o.mode[d]) continue;
    bench_fig l, r;
    if ((ret = bench_single(&l, &r, &x, &o, d))) break;
    if (o.json) {
      json_t *v = json_figs("single", jb_durability_name(d), 1, &l, &r,
                            o.rounds, bench_raw_flags_name(d));
      if (v) json_object_set_new(v, "posting_bytes",
                                 json_integer((json_int_t)x.posting_len));
      if (v) json_object_set_new(v, "raw_value_bytes",
                                 json_integer((json_int_t)x.value_len));
      json_line(v);
    } else {
      print_row(jb_durability_name(d), &l, &r);
    }
    fflush(stdout);
  }

  if (ret == 0 && o.procs > 0) {
    bench_fig l, r;
    if (!o.json)
      printf("\n%u processes racing on one board, mode none (%zu cycles in "
             "all)\n", o.procs, o.jobs);
    fflush(stdout);
    if ((ret = bench_multi(&l, &r, &x, &o)) == 0) {
      if (o.json) {
        json_line(json_figs("multi", "none", o.procs, &l, &r, o.rounds,
                            bench_raw_flags_name(JB_DURABILITY_NONE)));
      } else {
        char label[32];
        snprintf(label, sizeof label, "%u procs", o.procs);
        print_row(label, &l, &r);
      }
    }
  }

  if (ret == 0 && !o.json) {
    printf("\n  job      posting %zu bytes; raw value %zu bytes (posting + "
           "the library's 24-byte header)\n", x.posting_len, x.value_len);
    printf("  ratio    jobboard/s over raw/s; the raw loop writes no change "
           "log and checks nothing\n");
    if (o.keep)
      printf("  kept     %s\n", x.root);
  }
  fflush(stdout);
  cleanup(&x, &o);
  return ret;
}
