/*
 * test_steady.c - durability interval as a process sees it: commits
 * return without a flush, the board is flushed within its interval (also
 * when writers go idle), a "reboot" (another boot id) puts back the last
 * recorded flushed state and nothing after it, full commits on such a
 * board are never rolled back (also those of a process that opened the
 * board before interval was turned on), a read-only open that would need
 * the restore is refused, and the bad options are refused.
 *
 * And kill -9 at every point of the two steps that write the protocol's
 * state (the restore, and the flush-and-record): the file only changes at
 * a write or a flush, so a kill after each of them (tests/iolayer.c
 * iol_die_after) reaches every state a kill at any instruction can leave.
 * After each, the board opens, passes check and holds what was promised,
 * both as the next process finds it and after a reboot.
 *
 * A reboot is simulated: writers run in children that end without closing
 * (as kill -9 would), then this process opens the board with another boot
 * id (jb__steady_test_boot). The page cache still holds every commit, so
 * what comes back is exactly what the restore chose. The power-loss
 * states themselves (what reached the disk, torn) are test_powerloss's.
 */
#include "helpers.h"
#include "iolayer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Hidden test hooks of store/steady.c. */
void jb__steady_test_boot(const uint8_t *boot);

static const uint8_t other_boot[16] = {0xb0, 0x07, 1, 2, 3, 4, 5, 6,
                                       7, 8, 9, 10, 11, 12, 13, 14};

static jb_board *open_mode(const char *dir, jb_durability d, int64_t flush_ms) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = d;
  o.flush_interval_ms = flush_ms;
  jb_board *b = NULL;
  if (jb_board_open(&b, dir, &o) != JB_OK)
    fail_msg("open %s (%s): %s", dir, jb_durability_name(d), jb_errmsg());
  return b;
}

static size_t count(jb_board *b) {
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  return n;
}

static void post_n(jb_board *b, unsigned n) {
  for (unsigned i = 0; i < n; i++) jbt_post(NULL, b, "steady", JB_PRIORITY_NORMAL);
}

/* A commit returns without a flush, and the flusher records within the
 * interval, also with the writer idle. */
static void test_flushed_within_interval(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 50);
  jb_flush_info fi;
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_true(fi.on);
  assert_int_equal(fi.flush_interval_ms, 50);
  uint64_t flushes0 = fi.flushes;
  post_n(b, 20);
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_true(fi.latest_txnid > fi.recorded_txnid); /* not flushed yet */
  assert_true(fi.flushes <= flushes0 + 1); /* at most the first at once */
  int64_t end = jbt_now_ms() + 2000;
  do {
    usleep(10000);
    assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  } while (fi.recorded_txnid < fi.latest_txnid && jbt_now_ms() < end);
  assert_int_equal(fi.recorded_txnid, fi.latest_txnid);
  assert_true(fi.flushes <= flushes0 + 3);
  jbt_assert_check_ok(b);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

/* Under continuous writes the flushes stay near one per interval. */
static void test_flush_rate_bounded(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 100);
  jb_flush_info a, z;
  assert_int_equal(jb_board_flush_info(&a, b), JB_OK);
  int64_t t0 = jbt_now_ms();
  unsigned posts = 0;
  while (jbt_now_ms() - t0 < 1000) {
    post_n(b, 1);
    posts++;
  }
  int64_t took = jbt_now_ms() - t0;
  assert_int_equal(jb_board_flush_info(&z, b), JB_OK);
  uint64_t flushes = z.flushes - a.flushes;
  print_message("%u posts in %lld ms, %llu flushes (interval 100 ms)\n",
                posts, (long long)took, (unsigned long long)flushes);
  /* 1000 / T + 1 per second, and the first commit's own. */
  assert_true(flushes <= (uint64_t)(took / 100) + 2);
  assert_true(posts > flushes);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

typedef struct {
  const char *dir;
  jb_durability mode;
  unsigned before, after; /* posts before the sync, after it */
} writer_arg;

/* Child: post, sync, post more, and end without closing (kill -9). */
static int writer_main(void *varg) {
  writer_arg *a = varg;
  jb_board *b = open_mode(a->dir, a->mode, 3600 * 1000);
  post_n(b, a->before);
  if (jb_board_sync(b) != JB_OK) return 10;
  post_n(b, a->after);
  _exit(0);
}

static long open_count(const char *dir, bool reboot, char *why, size_t n);

/* Open `dir` as after a reboot (the restore runs): it must pass check and
 * hold `want` jobs. */
static void assert_count_after_reboot(const char *dir, long want) {
  char why[600] = "";
  long c = open_count(dir, true, why, sizeof why);
  if (c != want)
    fail_msg("after a reboot: %ld jobs, %ld expected %s", c, want, why);
}

static jb_board *open_after_reboot(const char *dir, jb_durability d) {
  jb__steady_test_boot(other_boot);
  jb_board *b = open_mode(dir, d, 0);
  jb__steady_test_boot(NULL);
  return b;
}

/* Commits after the last record are dropped by a reboot, and what comes
 * back is whole. Without a reboot (another process opens) nothing is. */
static void test_reboot_restores_recorded_state(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  writer_arg w = {dir, JB_DURABILITY_INTERVAL, 5, 7};
  jbt_wait_ok(jbt_fork(writer_main, &w, 30), 30000);
  /* Same boot: the page cache holds all 12. */
  pid_t p = fork();
  if (p == 0) {
    jb_board *b = open_mode(dir, JB_DURABILITY_FULL, 0);
    _exit(count(b) == 12 ? 0 : 1);
  }
  jbt_wait_ok(p, 30000);
  /* That open recorded the 12 (kill -9 loses nothing): a reboot now keeps
   * them. So again, and "reboot" before anyone opens. */
  writer_arg w2 = {dir, JB_DURABILITY_INTERVAL, 3, 4};
  jbt_wait_ok(jbt_fork(writer_main, &w2, 30), 30000);
  jb_board *b = open_after_reboot(dir, JB_DURABILITY_INTERVAL);
  assert_int_equal(count(b), 15);
  jbt_assert_check_ok(b);
  post_n(b, 2); /* writable, and the free list is sound */
  jbt_assert_check_ok(b);
  assert_int_equal(count(b), 17);
  jb_board_close(b);
  /* A clean close leaves nothing to put back. */
  assert_count_after_reboot(dir, 17);
  jbt_rmtree(dir);
  free(dir);
}

typedef struct {
  const char *dir;
  int ready_fd;
  int go_fd;
} joiner_arg;

/* Child: a full writer opened before interval is turned on; posts one
 * when told, then ends without closing. */
static int early_full_main(void *varg) {
  joiner_arg *a = varg;
  jb_board *b = open_mode(a->dir, JB_DURABILITY_FULL, 0);
  jb_flush_info fi;
  if (jb_board_flush_info(&fi, b) != JB_OK || fi.on) return 11;
  char c = 1;
  if (write(a->ready_fd, &c, 1) != 1) return 12;
  if (read(a->go_fd, &c, 1) != 1) return 13;
  post_n(b, 3); /* acknowledged: must survive any reboot */
  if (jb_board_flush_info(&fi, b) != JB_OK || !fi.on) return 14;
  if (fi.recorded_txnid < fi.latest_txnid) return 15;
  _exit(0);
}

/* Full commits on a board that uses interval are never rolled back, also
 * those of a process that opened it before interval was turned on. */
static void test_full_commits_survive_reboot(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b0 = open_mode(dir, JB_DURABILITY_FULL, 0);
  post_n(b0, 1);
  jb_board_close(b0);
  int go[2];
  assert_int_equal(pipe(go), 0);
  joiner_arg a = {dir, -1, go[0]};
  pid_t early = jbt_fork_ready(early_full_main, &a, &a.ready_fd, 30,
                               "the early full writer");
  /* Interval turned on by another process, which then writes without
   * flushing and ends. */
  writer_arg w = {dir, JB_DURABILITY_INTERVAL, 2, 5};
  jbt_wait_ok(jbt_fork(writer_main, &w, 30), 30000);
  char c = 1;
  assert_int_equal(write(go[1], &c, 1), 1);
  jbt_wait_ok(early, 30000);
  close(go[0]);
  close(go[1]);
  /* The full process's 3 posts came after the interval writer's 7: its
   * record holds all 11. */
  assert_count_after_reboot(dir, 11);
  jbt_rmtree(dir);
  free(dir);
}

/* A full writer on an interval board: each commit recorded before it
 * returns, so a reboot right after keeps every one. */
static void test_full_on_interval_board(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  writer_arg w = {dir, JB_DURABILITY_INTERVAL, 1, 3};
  jbt_wait_ok(jbt_fork(writer_main, &w, 30), 30000);
  writer_arg f = {dir, JB_DURABILITY_FULL, 0, 6};
  jbt_wait_ok(jbt_fork(writer_main, &f, 30), 30000);
  assert_count_after_reboot(dir, 10);
  jbt_rmtree(dir);
  free(dir);
}

/* A read-only open cannot put the state back: refused, naming why; the
 * next writable open does it. */
static void test_readonly_after_reboot(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  writer_arg w = {dir, JB_DURABILITY_INTERVAL, 2, 2};
  jbt_wait_ok(jbt_fork(writer_main, &w, 30), 30000);
  jb__steady_test_boot(other_boot);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_READONLY;
  jb_board *b = NULL;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_EREADONLY);
  jbt_assert_contains(jb_errmsg(), "open it once with write access");
  jb__steady_test_boot(NULL);
  assert_count_after_reboot(dir, 2);
  jbt_rmtree(dir);
  free(dir);
}

/* Copy a board's data.mdb and steady file into `dst` (made fresh): what
 * the next process, or a reboot that kept every write, finds. */
static void copy_board(const char *src, const char *dst) {
  jbt_rmtree(dst);
  assert_int_equal(mkdir(dst, 0770), 0);
  const char *files[] = {"data.mdb", "steady"};
  for (int i = 0; i < 2; i++) {
    char *from = jbt_path(src, files[i]), *to = jbt_path(dst, files[i]);
    int in = open(from, O_RDONLY | O_CLOEXEC);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0660);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0)
      assert_int_equal(write(out, buf, (size_t)r), r);
    close(in);
    close(out);
    free(from);
    free(to);
  }
}

/* Open `dir` (after a reboot when `reboot`), check it, and return its
 * count of jobs; -1 when it does not open or check. */
static long open_count(const char *dir, bool reboot, char *why, size_t n) {
  if (reboot) jb__steady_test_boot(other_boot);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  jb_board *b = NULL;
  int rc = jb_board_open(&b, dir, &o);
  jb__steady_test_boot(NULL);
  if (rc != JB_OK) {
    snprintf(why, n, "open: %s", jb_errmsg());
    return -1;
  }
  jb_check_stats st;
  rc = jb_board_check(&st, b, NULL, NULL);
  long c = (long)count(b);
  jb_board_close(b);
  if (rc != JB_OK || st.problems) {
    snprintf(why, n, "check: %s, %zu problems", jb_errmsg(), st.problems);
    return -1;
  }
  return c;
}

/* top/base: a board whose record holds 3 jobs, with 4 more committed
 * after it by a writer that ended without closing. */
static char *base_of_seven(const char *top) {
  char *base = jbt_path(top, "base");
  writer_arg w = {base, JB_DURABILITY_INTERVAL, 3, 4};
  jbt_wait_ok(jbt_fork(writer_main, &w, 30), 30000);
  return base;
}

/* The directories of a kill sweep: base (base_of_seven), work (a copy of
 * base per kill point), after (work as a reboot finds it). */
typedef struct {
  char *top, *base, *work, *after;
  unsigned n; /* the kill point: after call n */
} sweep;

static sweep sweep_new(void) {
  sweep w = {jbt_mkdtemp(), NULL, NULL, NULL, 0};
  w.base = base_of_seven(w.top);
  w.work = jbt_path(w.top, "work");
  w.after = jbt_path(w.top, "reboot");
  return w;
}

/* After the kill at call n (`acked`: what had been acknowledged), the
 * next process must find from `next_min` to `most` jobs, and a reboot
 * from `reboot_min` to `most`; both must pass check. */
static void sweep_check(const sweep *w, const char *acked, long next_min,
                        long reboot_min, long most) {
  char why[600] = "";
  unsigned n = w->n;
  copy_board(w->work, w->after); /* before anyone opens it: a reboot's copy */
  long c = open_count(w->work, false, why, sizeof why);
  if (c < next_min || c > most)
    fail_msg("killed after call %u (acknowledged %s): the next process "
             "finds %ld jobs, %ld to %ld expected %s", n, acked, c, next_min,
             most, why);
  c = open_count(w->after, true, why, sizeof why);
  if (c < reboot_min || c > most)
    fail_msg("killed after call %u (acknowledged %s): after a reboot %ld "
             "jobs, %ld to %ld expected %s", n, acked, c, reboot_min, most,
             why);
}

static void sweep_free(sweep *w, const char *what) {
  unsigned points = w->n - 1; /* the loop ended at a call never made */
  print_message("%s killed after each of its %u writes and flushes\n", what,
                points);
  assert_true(points >= 10);
  jbt_rmtree(w->top);
  free(w->base);
  free(w->work);
  free(w->after);
  free(w->top);
}

/* Kill -9 after each write and flush of the restore (the first open after
 * a reboot): the next opener, also after that reboot, finds the recorded
 * state, whole, wherever the restore stopped. */
static void test_kill_during_restore(void **state) {
  (void)state;
  char *top = jbt_mkdtemp(), *base = base_of_seven(top),
       *work = jbt_path(top, "work");
  char why[600] = "";
  unsigned n;
  for (n = 1;; n++) {
    copy_board(base, work);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      iol_follow(work);
      iol_follow_steady(true);
      iol_die_after(n);
      jb__steady_test_boot(other_boot);
      jb_board *b = NULL;
      if (jb_board_open(&b, work, NULL) != JB_OK) _exit(2);
      jb_board_close(b);
      _exit(0);
    }
    int st = jbt_wait(pid, 30000);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 0) break; /* the open made fewer calls than n */
    assert_int_equal(WEXITSTATUS(st), IOL_DIED);
    long c = open_count(work, true, why, sizeof why);
    if (c != 3)
      fail_msg("killed after call %u of the restore: %ld jobs (3 expected) %s",
               n, c, why);
    if ((c = open_count(work, true, why, sizeof why)) != 3)
      fail_msg("killed after call %u, opened twice: %ld jobs %s", n, c, why);
  }
  print_message("the restore killed after each of its %u writes and flushes\n",
                n - 1);
  assert_true(n > 5); /* meta pages, their flush, the record, its flush */
  jbt_rmtree(top);
  free(base);
  free(work);
  free(top);
}

typedef struct {
  const char *dir;
  int fd;       /* the acknowledgements, one byte each */
  unsigned die; /* iol_die_after */
} flusher_arg;

/* Child: open (a join records the seven), post two, flush; say each. */
static int flush_main(void *varg) {
  flusher_arg *a = varg;
  iol_follow(a->dir);
  iol_follow_steady(true);
  iol_die_after(a->die);
  jb_board *b = open_mode(a->dir, JB_DURABILITY_INTERVAL, 3600 * 1000);
  if (write(a->fd, "o", 1) != 1) return 3;
  for (int i = 0; i < 2; i++) {
    post_n(b, 1);
    if (write(a->fd, "p", 1) != 1) return 3;
  }
  if (jb_board_sync(b) != JB_OK) return 4;
  if (write(a->fd, "s", 1) != 1) return 3;
  _exit(0);
}

/* Kill -9 after each write and flush of a process that records flushed
 * states (its join at open, then a sync): the next process loses nothing
 * acknowledged; after a reboot the board comes back to a recorded state
 * no older than the last record acknowledged. */
static void test_kill_during_flush_and_record(void **state) {
  (void)state;
  sweep w = sweep_new();
  for (w.n = 1;; w.n++) {
    copy_board(w.base, w.work);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    flusher_arg a = {w.work, fds[1], w.n};
    pid_t pid = jbt_fork(flush_main, &a, 30);
    close(fds[1]);
    char acks[8] = "";
    ssize_t got = read(fds[0], acks, sizeof acks - 1);
    while (got >= 0 && got < (ssize_t)sizeof acks - 1) {
      ssize_t r = read(fds[0], acks + got, sizeof acks - 1 - (size_t)got);
      if (r <= 0) break;
      got += r;
    }
    close(fds[0]);
    int st = jbt_wait(pid, 30000);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 0) break;
    assert_int_equal(WEXITSTATUS(st), IOL_DIED);
    long posted = 0;
    for (const char *c = acks; *c; c++) posted += *c == 'p';
    /* What the last acknowledged record holds: the sync's nine, the
     * open's seven (posts after it are not flushed yet), or the base's. */
    long floor = strchr(acks, 's') ? 9 : strchr(acks, 'o') ? 7 : 3;
    char text[16];
    snprintf(text, sizeof text, "'%s'", acks);
    sweep_check(&w, text, 7 + posted, floor, 7 + posted + 1);
  }
  sweep_free(&w, "the flush-and-record");
}

typedef struct {
  const char *dir;
  int fd;       /* one byte per acknowledged post */
  unsigned die; /* iol_die_after; 0: not followed, runs to the end */
  unsigned posts;
} sharer_arg;

/* Child: open the board in full, post `posts` jobs, say each. */
static int sharer_main(void *varg) {
  sharer_arg *a = varg;
  if (a->die) {
    iol_follow(a->dir);
    iol_follow_steady(true);
    iol_die_after(a->die);
  }
  jb_board *b = open_mode(a->dir, JB_DURABILITY_FULL, 0);
  for (unsigned i = 0; i < a->posts; i++) {
    post_n(b, 1);
    if (write(a->fd, "p", 1) != 1) return 3;
  }
  _exit(0);
}

static long read_acks(int fd) {
  long n = 0;
  char buf[64];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
    if (r > 0) n += r;
  return n;
}

/* Two full writers share records on an interval board; one of them is
 * killed after each write and flush it makes (its join at open, its
 * commits, its records, the headers it leaves for the other), while the
 * other goes on posting and relies on its records and flushes. The other
 * never hangs on a lock the dead one held (the locks go with it), every
 * post either writer acknowledged is on the board for the next process
 * and after a reboot, and no post is there twice: at most the dead one's
 * last, unacknowledged, one beyond. */
static void test_kill_a_full_writer_sharing_records(void **state) {
  (void)state;
  sweep w = sweep_new();
  for (w.n = 1;; w.n++) {
    copy_board(w.base, w.work);
    int fa[2], fb[2];
    assert_int_equal(pipe(fa), 0);
    assert_int_equal(pipe(fb), 0);
    sharer_arg a = {w.work, fa[1], 0, 12}, k = {w.work, fb[1], w.n, 4};
    pid_t pa = jbt_fork(sharer_main, &a, 30), pk = jbt_fork(sharer_main, &k, 30);
    close(fa[1]);
    close(fb[1]);
    long acked_a = read_acks(fa[0]), acked_k = read_acks(fb[0]);
    close(fa[0]);
    close(fb[0]);
    jbt_wait_ok(pa, 30000);
    int st = jbt_wait(pk, 30000);
    assert_true(WIFEXITED(st));
    assert_int_equal(acked_a, 12);
    if (WEXITSTATUS(st) == 0) break; /* it made fewer calls than n */
    assert_int_equal(WEXITSTATUS(st), IOL_DIED);
    long least = 7 + acked_a + acked_k;
    char text[64];
    snprintf(text, sizeof text, "%ld + %ld posts", acked_a, acked_k);
    sweep_check(&w, text, least, least, least + 1);
  }
  sweep_free(&w, "a full writer sharing records with another");
}

/* A data.mdb put back from an older copy under a newer steady file, or
 * gone from beside it, is refused naming the file to remove: the record
 * is not the copy's, and neither trusting it nor writing its meta page into
 * the copy would be right. */
static void test_replaced_data_file_refused(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp(), *old = jbt_path(dir, "old.mdb"),
       *data = jbt_path(dir, "data.mdb");
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 0);
  post_n(b, 1);
  jb_board_close(b);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", data, old);
  assert_int_equal(system(cmd), 0);
  b = open_mode(dir, JB_DURABILITY_INTERVAL, 0);
  post_n(b, 3);
  jb_board_close(b);
  assert_int_equal(rename(old, data), 0);
  jb_board *c = NULL;
  assert_int_equal(jb_board_open(&c, dir, NULL), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), "data.mdb was replaced");
  jbt_assert_contains(jb_errmsg(), "steady");
  assert_int_equal(unlink(data), 0);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  assert_int_equal(jb_board_open(&c, dir, &o), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), "no data.mdb beside it");
  jbt_rmtree(dir);
  free(dir);
  free(old);
  free(data);
}

/* A failed flush stops the process's writes and records: a second sync
 * does not report a flush the kernel may have dropped as done. */
static void test_failed_flush_stops_records(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 3600 * 1000);
  post_n(b, 2);
  iol_follow(dir);
  jb_board_close(b); /* descriptors opened from here on are followed */
  b = open_mode(dir, JB_DURABILITY_INTERVAL, 3600 * 1000);
  post_n(b, 1);
  iol_fault_flush(1, EIO, 1);
  assert_int_equal(jb_board_sync(b), JB_EIO);
  iol_fault_clear();
  assert_int_equal(jb_board_sync(b), JB_EIO);
  jbt_assert_contains(jb_errmsg(), "reopen the board");
  char u[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "after";
  assert_int_equal(jb_job_post(u, b, &p), JB_EIO);
  jb_board_close(b);
  iol_follow(NULL);
  b = open_mode(dir, JB_DURABILITY_INTERVAL, 0); /* reopened: works */
  post_n(b, 1);
  assert_int_equal(jb_board_sync(b), JB_OK);
  assert_int_equal(count(b), 4);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

static int sync_in_child(void *arg) {
  jb_board *b = arg;
  int rc = jb_board_sync(b);
  return rc == JB_EINVAL && strstr(jb_errmsg(), "before fork()") ? 0 : 1;
}

/* 0 when no descriptor of this process names <dir>/steady, else 1. */
static int no_steady_fd_in_child(void *arg) {
  char want[4200], link[64], got[4200];
  snprintf(want, sizeof want, "%s/steady", (const char *)arg);
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, got, sizeof got - 1);
    if (n <= 0) continue;
    got[n] = '\0';
    if (strcmp(got, want) == 0) return 1;
  }
  return 0;
}

/* A handle from before fork() is refused in the child, as every call. */
static void test_sync_refused_after_fork(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 0);
  jbt_wait_ok(jbt_fork(sync_in_child, b, 30), 30000);
  assert_int_equal(jb_board_sync(b), JB_OK);
  /* And the child holds no descriptor of the steady file: the locks on
   * it belong to the open file description, which a child would share
   * (exit 1 names a descriptor still open). */
  jbt_wait_ok(jbt_fork(no_steady_fd_in_child, dir, 30), 30000);
  assert_int_equal(no_steady_fd_in_child(dir), 1); /* the parent has one */
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

/* The board's own interval, and the process's over it; bad values. */
static void test_interval_settings(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_INTERVAL, 0);
  jb_flush_info fi;
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_int_equal(fi.flush_interval_ms, JB_FLUSH_INTERVAL_DEFAULT_MS);
  assert_int_equal(jb_board_set_flush_interval(b, 250), JB_OK);
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_int_equal(fi.flush_interval_ms, 250);
  assert_int_equal(jb_board_set_flush_interval(b, -1), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "out of range");
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_int_equal(fi.flush_interval_ms, 250); /* unchanged */
  jb_board_close(b);
  b = open_mode(dir, JB_DURABILITY_INTERVAL, 40);
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_int_equal(fi.flush_interval_ms, 40);
  jb_board_close(b);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_INTERVAL;
  o.flush_interval_ms = -5;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "flush_interval_ms");
  o.flush_interval_ms = 0;
  o.durability = (jb_durability)9;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_EINVAL);
  jb_durability d;
  assert_int_equal(jb_durability_parse(&d, "interval"), JB_OK);
  assert_int_equal(d, JB_DURABILITY_INTERVAL);
  assert_string_equal(jb_durability_name(JB_DURABILITY_INTERVAL), "interval");
  jbt_rmtree(dir);
  free(dir);
}

/* A board that never used interval has no steady protocol: its full
 * writers keep LMDB's own flushes. */
static void test_plain_board_untouched(void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jb_board *b = open_mode(dir, JB_DURABILITY_FULL, 0);
  post_n(b, 2);
  jb_flush_info fi;
  assert_int_equal(jb_board_flush_info(&fi, b), JB_OK);
  assert_false(fi.on);
  assert_int_equal(fi.flushes, 0);
  assert_int_equal(jb_board_sync(b), JB_OK);
  jb_board_close(b);
  jbt_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flushed_within_interval),
      cmocka_unit_test(test_flush_rate_bounded),
      cmocka_unit_test(test_reboot_restores_recorded_state),
      cmocka_unit_test(test_full_commits_survive_reboot),
      cmocka_unit_test(test_full_on_interval_board),
      cmocka_unit_test(test_readonly_after_reboot),
      cmocka_unit_test(test_interval_settings),
      cmocka_unit_test(test_plain_board_untouched),
      cmocka_unit_test(test_replaced_data_file_refused),
      cmocka_unit_test(test_failed_flush_stops_records),
      cmocka_unit_test(test_sync_refused_after_fork),
      cmocka_unit_test(test_kill_during_restore),
      cmocka_unit_test(test_kill_during_flush_and_record),
      cmocka_unit_test(test_kill_a_full_writer_sharing_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
