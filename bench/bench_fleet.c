/*
 * bench_fleet.c - fleet lag (see bench_fleet.h): N boards, a `jobboard
 * sync` daemon on each, a waiter process on each but the first, one
 * Redis. Public API only, and the jobboard program for the daemons.
 */
#include "bench_fleet.h"
#include "bench_util.h"
#include "jobboard_sync.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The fleet is quiet (daemons asleep, waiters asleep) this long after
 * every waiter saw the last job leave. */
#define QUIET_US 3000
/* Untimed posts first (scripts loaded, pages faulted in). */
#define WARMUP 5u
/* Longest wait for a daemon to connect, a waiter to report. */
#define LIMIT_MS 30000

enum { SEEN_READY = 0, SEEN_POSTED, SEEN_GONE, SEEN_FAILED };

/* What a waiter tells the bench: one write(2) each, below PIPE_BUF, so
 * the waiters' reports never interleave on their shared pipe. */
typedef struct {
  int32_t host;
  int32_t what;            /* SEEN_* */
  int64_t ns;              /* CLOCK_MONOTONIC when jb_log_wait returned */
  char uuid[JB_UUID_STRLEN];
  char why[256];           /* SEEN_FAILED */
} report;

static int fail(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, jb_errmsg());
  return -1;
}

static void tell(int fd, const report *r) {
  ssize_t n = write(fd, r, sizeof *r);
  (void)n; /* the bench notices a missing report by its time limit */
}

/* A waiter: host `host`'s board in `dir`, reporting on fd. Never returns. */
static void waiter(int fd, int host, const char *dir, jb_durability d) {
  report r;
  memset(&r, 0, sizeof r);
  r.host = host;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = d;
  jb_board *b = NULL;
  uint64_t from = 0;
  if (jb_board_open(&b, dir, &bo) != JB_OK ||
      jb_log_bounds(NULL, &from, b) != JB_OK) {
    r.what = SEEN_FAILED;
    snprintf(r.why, sizeof r.why, "waiter on host %d: %s", host, jb_errmsg());
    tell(fd, &r);
    _exit(1);
  }
  r.what = SEEN_READY;
  tell(fd, &r);
  for (;;) {
    jb_event ev[16];
    size_t n = 0;
    int rc = jb_log_wait(ev, &n, NULL, b, from, 16, -1);
    r.ns = bench_mono_ns();
    if (rc != JB_OK) {
      r.what = SEEN_FAILED;
      snprintf(r.why, sizeof r.why, "waiter on host %d: %s", host,
               jb_errmsg());
      tell(fd, &r);
      _exit(1);
    }
    for (size_t i = 0; i < n; i++) {
      if (ev[i].type == JB_EVENT_POSTED) r.what = SEEN_POSTED;
      else if (ev[i].type == JB_EVENT_CONSUMED) r.what = SEEN_GONE;
      else continue;
      memcpy(r.uuid, ev[i].uuid, sizeof r.uuid);
      tell(fd, &r);
    }
    if (n) from = ev[n - 1].seq + 1;
  }
}

/* Start `jobboard sync` on board `dir`, its output to `log`. */
static pid_t daemon_start(const bench_fleet_opts *o, const char *dir,
                          const char *ns, jb_durability d, const char *log,
                          char *err, size_t errlen) {
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    int nul = open("/dev/null", O_RDONLY);
    if (fd < 0 || nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 ||
        dup2(fd, 2) < 0)
      _exit(127);
    execl(o->jobboard, o->jobboard, "sync", "--board", dir, "--redis", o->url,
          "--namespace", ns, "--durability", jb_durability_name(d),
          (char *)NULL);
    dprintf(2, "jobboard-bench: cannot run %s: %s\n", o->jobboard,
            strerror(errno));
    _exit(127);
  }
  return pid;
}

/* The next report within LIMIT_MS. */
static int next_report(report *r, int fd, char *err, size_t errlen) {
  struct pollfd p = {fd, POLLIN, 0};
  int got;
  while ((got = poll(&p, 1, LIMIT_MS)) < 0 && errno == EINTR) {
  }
  if (got == 0) {
    snprintf(err, errlen, "no waiter reported within %d ms", LIMIT_MS);
    return -1;
  }
  ssize_t n = got > 0 ? read(fd, r, sizeof *r) : -1;
  if (n != (ssize_t)sizeof *r) {
    snprintf(err, errlen, "reading the waiters' reports: %s",
             n < 0 ? strerror(errno) : "short read");
    return -1;
  }
  if (r->what == SEEN_FAILED) {
    snprintf(err, errlen, "%s", r->why);
    return -1;
  }
  return 0;
}

/* Wait until each of hosts 2..n has reported `what` for uuid u (for
 * SEEN_READY, u is ignored); times into at[host] when at is given. */
static int await_all(int fd, unsigned n, int what, const char *u,
                     int64_t *at, char *err, size_t errlen) {
  bool seen[BENCH_FLEET_MAX_HOSTS + 1] = {false};
  unsigned left = n - 1;
  while (left) {
    report r;
    if (next_report(&r, fd, err, errlen)) return -1;
    if (r.what != what || r.host < 2 || r.host > (int)n || seen[r.host] ||
        (what != SEEN_READY && strcmp(r.uuid, u) != 0))
      continue;
    seen[r.host] = true;
    if (at) at[r.host] = r.ns;
    left--;
  }
  return 0;
}

/* Every daemon elected and connected (its sync.status says so). */
static int await_daemons(char dirs[][4200], unsigned n, const pid_t *pids,
                         jb_durability d, char *err, size_t errlen) {
  int64_t t0 = bench_mono_ns();
  for (unsigned k = 0; k < n; k++) {
    for (;;) {
      int st;
      if (waitpid(pids[k], &st, WNOHANG) == pids[k]) {
        snprintf(err, errlen, "the jobboard sync of host %u ended (see "
                 "%s.log)", k + 1, dirs[k]);
        return -1;
      }
      jb_board_options bo = JB_BOARD_OPTIONS_INIT;
      bo.durability = d;
      jb_board *b = NULL;
      jb_sync_status s;
      memset(&s, 0, sizeof s);
      int rc = jb_board_open(&b, dirs[k], &bo);
      if (rc == JB_OK) rc = jb_sync_status_read(&s, b);
      jb_board_close(b);
      if (rc != JB_OK) return fail(err, errlen, "sync status");
      if (s.running && s.connected) break;
      if (bench_mono_ns() - t0 > (int64_t)LIMIT_MS * 1000000) {
        snprintf(err, errlen, "the jobboard sync of host %u did not connect "
                 "within %d ms (see %s.log)", k + 1, LIMIT_MS, dirs[k]);
        return -1;
      }
      bench_sleep_us(10000);
    }
  }
  return 0;
}

static int one_fleet(bench_fleet_row *row, const char *dir, unsigned n,
                     jb_durability sync, const bench_fleet_opts *o,
                     char *err, size_t errlen) {
  char (*dirs)[4200] = calloc(n, sizeof *dirs);
  pid_t daemons[BENCH_FLEET_MAX_HOSTS], waiters[BENCH_FLEET_MAX_HOSTS];
  size_t ndaemons = 0, nwaiters = 0;
  size_t total = o->samples + WARMUP;
  int64_t *all = calloc(o->samples * (n - 1) + 1, sizeof *all);
  int64_t *last = calloc(o->samples + 1, sizeof *last);
  int64_t *call = calloc(o->samples + 1, sizeof *call);
  int rep[2] = {-1, -1};
  jb_board *a = NULL;
  jb_sync_conn *c = NULL;
  char base[4096], ns[512];
  int rc = -1;
  row->hosts = n;
  row->sync = sync;
  snprintf(ns, sizeof ns, "%s-fleet-%u-%s", o->ns, n,
           jb_durability_name(sync));
  if (dirs == NULL || all == NULL || last == NULL || call == NULL) {
    snprintf(err, errlen, "out of memory for %zu samples", o->samples);
    goto out;
  }
  if ((size_t)snprintf(base, sizeof base, "%s/fleet-%u-%s", dir, n,
                       jb_durability_name(sync)) >= sizeof base - 16 ||
      mkdir(base, 0700) != 0) {
    snprintf(err, errlen, "mkdir %s: %s", base, strerror(errno));
    goto out;
  }
  for (unsigned k = 0; k < n; k++) {
    snprintf(dirs[k], sizeof dirs[k], "%s/host%u", base, k + 1);
    jb_board_options bo = JB_BOARD_OPTIONS_INIT;
    bo.flags = JB_OPEN_CREATE;
    bo.durability = o->durability;
    jb_board *b = NULL;
    if (mkdir(dirs[k], 0700) != 0) {
      snprintf(err, errlen, "mkdir %s: %s", dirs[k], strerror(errno));
      goto out;
    }
    if (jb_board_open(&b, dirs[k], &bo) != JB_OK) {
      fail(err, errlen, "open");
      goto out;
    }
    for (size_t i = 0; i < o->history; i++) {
      char u[JB_UUID_STRLEN];
      if (jb_job_post(u, b, o->post) != JB_OK ||
          jb_claim(NULL, b, u, o->who, NULL) != JB_OK ||
          jb_consume(b, u, o->who, 0, NULL) != JB_OK) {
        fail(err, errlen, "filling the history");
        jb_board_close(b);
        goto out;
      }
    }
    jb_board_close(b);
  }
  if (o->history) bench_sleep_us(BENCH_FLEET_HISTORY_AGE_S * 1000000L);
  /* The waiters first: forked while this process has no board open. */
  if (pipe2(rep, O_CLOEXEC) != 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    goto out;
  }
  for (unsigned k = 1; k < n; k++) {
    pid_t pid = fork();
    if (pid < 0) {
      snprintf(err, errlen, "fork: %s", strerror(errno));
      goto out;
    }
    if (pid == 0) {
      close(rep[0]);
      waiter(rep[1], (int)k + 1, dirs[k], o->durability);
    }
    waiters[nwaiters++] = pid;
  }
  close(rep[1]);
  rep[1] = -1;
  for (unsigned k = 0; k < n; k++) {
    char log[4300];
    snprintf(log, sizeof log, "%s.log", dirs[k]);
    pid_t pid = daemon_start(o, dirs[k], ns, sync, log, err, errlen);
    if (pid < 0) goto out;
    daemons[ndaemons++] = pid;
  }
  if (await_all(rep[0], n, SEEN_READY, NULL, NULL, err, errlen) ||
      await_daemons(dirs, n, daemons, o->durability, err, errlen))
    goto out;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = o->durability;
  jb_sync_options so = JB_SYNC_OPTIONS_INIT;
  so.url = o->url;
  so.ns = ns;
  if (jb_board_open(&a, dirs[0], &bo) != JB_OK) {
    fail(err, errlen, "open host 1");
    goto out;
  }
  if (jb_sync_connect(&c, &so) != JB_OK || jb_sync_attach(a, c) != JB_OK) {
    fail(err, errlen, "connect host 1");
    goto out;
  }
  for (size_t i = 0; i < total; i++) {
    char u[JB_UUID_STRLEN];
    int64_t at[BENCH_FLEET_MAX_HOSTS + 1];
    bench_sleep_us(QUIET_US);
    int64_t s = bench_mono_ns();
    if (jb_job_post(u, a, o->post) != JB_OK) {
      fail(err, errlen, "post on host 1");
      goto out;
    }
    int64_t e = bench_mono_ns();
    if (await_all(rep[0], n, SEEN_POSTED, u, at, err, errlen)) goto out;
    if (jb_claim(NULL, a, u, o->who, NULL) != JB_OK ||
        jb_consume(a, u, o->who, 0, NULL) != JB_OK) {
      fail(err, errlen, "claim and consume on host 1 through Redis");
      goto out;
    }
    if (await_all(rep[0], n, SEEN_GONE, u, NULL, err, errlen)) goto out;
    if (i < WARMUP) continue;
    size_t j = i - WARMUP;
    call[j] = e - s;
    last[j] = 0;
    for (unsigned k = 2; k <= n; k++) {
      int64_t v = at[k] - s;
      all[j * (n - 1) + (k - 2)] = v;
      if (v > last[j]) last[j] = v;
    }
  }
  if (o->samples) {
    bench_lat_summarise(&row->all, all, o->samples * (n - 1));
    bench_lat_summarise(&row->last, last, o->samples);
    bench_lat_summarise(&row->post_call, call, o->samples);
  }
  rc = 0;
out:
  if (a) jb_sync_detach(a);
  jb_board_close(a);
  jb_sync_close(c);
  /* SIGTERM: each daemon finishes its step and gives up its board. */
  for (size_t k = 0; k < ndaemons; k++) kill(daemons[k], SIGTERM);
  for (size_t k = 0; k < nwaiters; k++) kill(waiters[k], SIGKILL);
  for (size_t k = 0; k < ndaemons; k++) {
    int st;
    while (waitpid(daemons[k], &st, 0) < 0 && errno == EINTR) {
    }
    if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
      snprintf(err, errlen, "the jobboard sync of host %zu did not end "
               "cleanly (see %s.log)", k + 1, dirs[k]);
      rc = -1;
    }
  }
  for (size_t k = 0; k < nwaiters; k++) {
    int st;
    while (waitpid(waiters[k], &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (rep[0] >= 0) close(rep[0]);
  if (rep[1] >= 0) close(rep[1]);
  free(dirs);
  free(all);
  free(last);
  free(call);
  return rc;
}

int bench_fleet(bench_fleet_row *rows, size_t *nrows, const char *dir,
                const bench_fleet_opts *o, char *err, size_t errlen) {
  *nrows = 0;
  if (access(o->jobboard, X_OK) != 0) {
    snprintf(err, errlen, "the jobboard program %s: %s (give --jobboard "
             "PATH)", o->jobboard, strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < o->nhosts; i++)
    for (size_t m = 0; m < o->nsync; m++) {
      if (one_fleet(&rows[*nrows], dir, o->hosts[i], o->sync[m], o, err,
                    errlen))
        return -1;
      ++*nrows;
    }
  return 0;
}
