/*
 * bench_util.c - what the parts of `jobboard-bench` share (bench_util.h).
 */
#include "bench_util.h"
#include "tools/cli_error.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const jb_durability bench_mode_order[BENCH_NMODES] = {
    JB_DURABILITY_FULL, JB_DURABILITY_NORMAL, JB_DURABILITY_INTERVAL,
    JB_DURABILITY_NONE};

bool bench_fast(jb_durability d) {
  return d == JB_DURABILITY_NONE || d == JB_DURABILITY_INTERVAL;
}

/* {"task": "resize", "width": 640, "height": 480}: details of a plausible
 * size, in msgpack. */
static const unsigned char bench_details[] = {
    0x83, 0xa4, 't', 'a', 's', 'k', 0xa6, 'r', 'e', 's', 'i', 'z', 'e',
    0xa5, 'w', 'i', 'd', 't', 'h', 0xcd, 0x02, 0x80,
    0xa6, 'h', 'e', 'i', 'g', 'h', 't', 0xcd, 0x01, 0xe0};

jb_post bench_post(void) {
  jb_post p = JB_POST_INIT;
  p.name = "bench.resize-image";
  p.details = bench_details;
  p.details_len = sizeof bench_details;
  p.priority = JB_PRIORITY_NORMAL;
  return p;
}

uint64_t bench_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

uint64_t bench_rand_seed(unsigned tag) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t seed = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)getpid() ^
                  ((uint64_t)(tag & 0xff) << 56) ^ 0x9E3779B97F4A7C15ULL;
  return seed ? seed : 1;
}

double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int64_t bench_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, unsigned n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_per_s(size_t n, double secs) {
  return secs > 0 ? (double)n / secs : 0;
}

double bench_us_per(size_t n, double secs) {
  return n ? secs * 1e6 / (double)n : 0;
}

int bench_fail(const char *what, const char *err) {
  fflush(stdout);
  fprintf(stderr, "jobboard-bench: %s: %s\n", what, err);
  return 1;
}

int bench_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = cli_vusage_error("jobboard-bench", fmt, ap);
  va_end(ap);
  return rc;
}

void bench_json_line(json_t *v) {
  if (v == NULL) return;
  json_dumpf(v, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
  putchar('\n');
  json_decref(v);
}

int bench_mkdir(const char *path, const char *what) {
  if (mkdir(path, 0775) == 0) return 0;
  int e = errno;
  fflush(stdout);
  fprintf(stderr, "jobboard-bench: %s: cannot make %s: %s\n", what, path,
          strerror(e));
  return 1;
}

void bench_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR) {
        char sub[4600];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) <
            sizeof sub)
          bench_remove_dir(sub);
      }
    }
    closedir(d);
  }
  rmdir(dir);
}

int bench_lib_cycles(jb_board *board, size_t n, const jb_claim_options *co,
                     char *err, size_t errlen) {
  jb_post p = bench_post();
  char uuid[JB_UUID_STRLEN], claimed[JB_UUID_STRLEN];
  for (size_t i = 0; i < n; i++) {
    if (jb_job_post(uuid, board, &p) != JB_OK ||
        jb_claim_next(claimed, NULL, NULL, board, BENCH_WHO, co) !=
            JB_OK ||
        jb_consume(board, claimed, BENCH_WHO, 0, NULL) != JB_OK) {
      snprintf(err, errlen, "%s", jb_errmsg());
      return -1;
    }
  }
  return 0;
}

int64_t bench_flush_ms;

int bench_lib_open(jb_board **out, const char *dir, jb_durability d,
                   char *err, size_t errlen) {
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = d;
  bo.map_size = BENCH_MAP_SIZE;
  bo.flush_interval_ms = bench_flush_ms;
  if (jb_board_open(out, dir, &bo) == JB_OK) return 0;
  snprintf(err, errlen, "%s", jb_errmsg());
  return -1;
}
