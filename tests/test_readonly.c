/*
 * test_readonly.c - boards opened read-only (JB_OPEN_READONLY): reads
 * work, every write is JB_EREADONLY and changes nothing, nothing is
 * created in the directory, a wait sees another process's post (by
 * looking, as it cannot be woken), a board that appeared is read, and the
 * flag's misuses are refused. Read-only handles are opened in forked
 * children: LMDB allows one environment per process and board, so a
 * read-only open in a process that has the board open for writing shares
 * that environment (a case of its own below).
 */
#include "helpers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static jb_board *open_ro(const char *dir, int *rc) {
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_READONLY;
  *rc = jb_board_open(&b, dir, &o);
  return b;
}

/* What a read-only child checks of a board of two jobs. */
typedef enum { RO_SAYS_ASKED, RO_READS, RO_WRITES } ro_check;

typedef struct {
  const char *dir;
  ro_check check;
} reader_arg;

static void keep_line(const char *l, void *arg) {
  snprintf(arg, 200, "%s", l);
}

/* Child: open read-only, then check one thing. */
static int reader_main(void *varg) {
  reader_arg *a = varg;
  int rc;
  jb_board *b = open_ro(a->dir, &rc);
  if (rc != JB_OK) return 10;
  if (a->check == RO_SAYS_ASKED) {
    if (jb_board_readonly(b) != JB_READONLY_ASKED) return 11;
  } else if (a->check == RO_READS) {
    size_t n = 0;
    if (jb_board_count(&n, b, 0) != JB_OK || n != 2) return 12;
    jb_check_stats st;
    if (jb_board_check(&st, b, NULL, NULL) != JB_OK || st.jobs != 2) return 16;
  } else {
    char uuid[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "nope";
    if (jb_job_post(uuid, b, &p) != JB_EREADONLY) return 13;
    if (strstr(jb_errmsg(), "read-only") == NULL) return 14;
    if (jb_claim_next(uuid, NULL, NULL, b, "w", NULL) != JB_EREADONLY) return 15;
    /* A recorded check checks, and says the record was not kept. */
    char line[200] = "";
    if (jb_board_check_ex(NULL, b, JB_CHECK_RECORD, keep_line, line) != JB_OK)
      return 17;
    if (strncmp(line, "not recorded: ", 14) != 0 ||
        strstr(line, "read-only") == NULL)
      return 18;
    jb_check_record r;
    if (jb_board_last_check(&r, b) != JB_ENOTFOUND) return 19;
  }
  jb_board_close(b);
  return 0;
}

/* Posts two jobs. */
static void post_two(jbt_fixture *f) {
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  jbt_post(u, f->board, "b", JB_PRIORITY_NORMAL);
}

/* Runs a read-only child that checks `check`. */
static void check_in_a_read_only_child(jbt_fixture *f, ro_check check) {
  reader_arg a = {f->dir, check};
  jbt_wait_ok(jbt_fork(reader_main, &a, 60), 60000);
}

static void a_read_only_handle_says_it_was_asked_to_be(void **state) {
  post_two(*state);
  check_in_a_read_only_child(*state, RO_SAYS_ASKED);
}

static void reads_work_on_a_read_only_handle(void **state) {
  post_two(*state);
  check_in_a_read_only_child(*state, RO_READS);
}

/* Each is JB_EREADONLY saying so, and the board's digest stays. */
static void writes_on_a_read_only_handle_are_refused_and_change_nothing(
    void **state) {
  jbt_fixture *f = *state;
  post_two(f);
  uint64_t before = jbt_board_digest(f->dir);
  check_in_a_read_only_child(f, RO_WRITES);
  assert_true(jbt_board_digest(f->dir) == before);
}

typedef struct {
  const char *dir;
  int ready_fd;
} wait_arg;

static int waiter_main(void *varg) {
  wait_arg *a = varg;
  int rc;
  jb_board *b = open_ro(a->dir, &rc);
  if (rc != JB_OK) return 10;
  if (write(a->ready_fd, "r", 1) != 1) return 11;
  /* Nothing claimable yet: the parent posts after the byte. */
  rc = jb_board_wait(b, JB_ONLY_UNCLAIMED, 20000);
  jb_board_close(b);
  return rc == JB_OK ? 0 : 12;
}

static void a_wait_sees_another_process_post(void **state) {
  jbt_fixture *f = *state;
  wait_arg a = {f->dir, -1};
  pid_t pid = jbt_fork_ready(waiter_main, &a, &a.ready_fd, 60,
                             "the read-only waiter");
  usleep(300000); /* it polls: let it look at least once */
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "late", JB_PRIORITY_NORMAL);
  jbt_wait_ok(pid, 30000);
}

static int nothing_created_main(void *arg) {
  const char *dir = arg;
  int rc;
  jb_board *b = open_ro(dir, &rc);
  if (b != NULL || rc != JB_ENOTFOUND) return 10;
  char lock[4096];
  snprintf(lock, sizeof lock, "%s/lock.mdb", dir);
  if (access(lock, F_OK) == 0) return 11; /* made nothing */
  return 0;
}

/* A directory with no board in it: not found, and no lock file made. */
static void a_read_only_open_of_an_empty_directory_makes_nothing(
    void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  jbt_wait_ok(jbt_fork(nothing_created_main, dir, 60), 60000);
  jbt_rmtree(dir);
  free(dir);
}

static void a_read_only_open_of_a_missing_directory_makes_nothing(
    void **state) {
  (void)state;
  char *dir = jbt_mkdtemp();
  char *missing = jbt_path(dir, "missing");
  int rc;
  jb_board *b = open_ro(missing, &rc);
  assert_null(b);
  assert_int_equal(rc, JB_ENOTFOUND);
  struct stat st;
  assert_int_not_equal(stat(missing, &st), 0);
  free(missing);
  jbt_rmtree(dir);
  free(dir);
}

static void create_and_readonly_exclude_each_other(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_READONLY | JB_OPEN_CREATE;
  assert_int_equal(jb_board_open(&b, f->dir, &o), JB_EINVAL);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), "exclude each other");
}

/* A process whose only environment on the board is read-only cannot open
 * it for writing until it closes that. */
static int read_only_first_main(void *arg) {
  const char *dir = arg;
  int rc;
  jb_board *ro = open_ro(dir, &rc);
  if (rc != JB_OK) return 10;
  jb_board *rw = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  if (jb_board_open(&rw, dir, &o) != JB_EREADONLY || rw != NULL) return 11;
  if (strstr(jb_errmsg(), "open read-only in this process") == NULL) return 12;
  jb_board_close(ro);
  if (jb_board_open(&rw, dir, &o) != JB_OK) return 13;
  jb_board_close(rw);
  return 0;
}

static void a_process_read_only_on_a_board_opens_it_to_write_once_closed(
    void **state) {
  jbt_fixture *f = *state;
  jbt_wait_ok(jbt_fork(read_only_first_main, f->dir, 60), 60000);
}

/* In a process that has the board open for writing, a read-only open
 * shares the environment: it says so (jb_board_readonly is ASKED, the
 * store writable), and the writing handle stays writable. */
static int writer_first_main(void *arg) {
  const char *dir = arg;
  int rc;
  jb_board *rw = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  if (jb_board_open(&rw, dir, &o) != JB_OK) return 13;
  jb_board *ro2 = open_ro(dir, &rc);
  if (rc != JB_OK || jb_board_readonly(ro2) != JB_READONLY_ASKED) return 14;
  if (jb_board_readonly(rw) != 0) return 15;
  jb_board_close(ro2);
  jb_board_close(rw);
  return 0;
}

static void handles_of_one_process_share_its_environment(void **state) {
  jbt_fixture *f = *state;
  jbt_wait_ok(jbt_fork(writer_first_main, f->dir, 60), 60000);
}

int main(void) {
  jbt_watchdog(300);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(a_read_only_handle_says_it_was_asked_to_be),
      T(reads_work_on_a_read_only_handle),
      T(writes_on_a_read_only_handle_are_refused_and_change_nothing),
      T(a_wait_sees_another_process_post),
      cmocka_unit_test(a_read_only_open_of_an_empty_directory_makes_nothing),
      cmocka_unit_test(a_read_only_open_of_a_missing_directory_makes_nothing),
      T(create_and_readonly_exclude_each_other),
      T(a_process_read_only_on_a_board_opens_it_to_write_once_closed),
      T(handles_of_one_process_share_its_environment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
