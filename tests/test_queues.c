/*
 * test_queues.c - job names as queues: claim-next by names (exact and
 * prefix), the order across names, names sharing a lane, pause and resume
 * of a name and of the board (across processes and a reopen), the walk
 * past many paused jobs, the names' listing, bad arguments, and the
 * upgrade of a schema 9 board (store/names.h).
 */
#include "helpers.h"
#include "store/names.h"
#include "store/wake.h"

#include <lmdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static jb_claim_options names_opts(const char *const *names, size_t n) {
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.names = names;
  co.n_names = n;
  return co;
}

/* Claim-next over names: what it claims, in order, until nothing (the
 * uuids to out, their count returned). */
static size_t drain(jb_board *b, const char *const *names, size_t n,
                    char (*out)[JB_UUID_STRLEN], size_t max) {
  jb_claim_options co = names_opts(names, n);
  size_t got = 0;
  for (;;) {
    char u[JB_UUID_STRLEN];
    int rc = jb_claim_next(u, NULL, NULL, b, "w", &co);
    if (rc == JB_ENOTFOUND) break;
    assert_int_equal(rc, JB_OK);
    assert_true(got < max);
    strcpy(out[got++], u);
  }
  return got;
}

/* Jobs of the names chosen, in listing order across them (priority, then
 * posting order); never a job of another name. */
static void claim_next_takes_only_the_names_chosen_in_order(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char a1[JB_UUID_STRLEN], b1[JB_UUID_STRLEN], c1[JB_UUID_STRLEN],
      a2[JB_UUID_STRLEN], c2[JB_UUID_STRLEN], b2[JB_UUID_STRLEN];
  jbt_post(a1, b, "a", JB_PRIORITY_NORMAL);
  jbt_post(b1, b, "b", JB_PRIORITY_VERY_HIGH);
  jbt_post(c1, b, "c", JB_PRIORITY_NORMAL);
  jbt_post(a2, b, "a", JB_PRIORITY_LOW);
  jbt_post(c2, b, "c", JB_PRIORITY_HIGH);
  jbt_post(b2, b, "b", JB_PRIORITY_NORMAL);
  const char *ac[] = {"a", "c"};
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(drain(b, ac, 2, got, 8), 4);
  assert_string_equal(got[0], c2); /* HIGH first */
  assert_string_equal(got[1], a1); /* then NORMAL, in posting order */
  assert_string_equal(got[2], c1);
  assert_string_equal(got[3], a2);
  /* Nothing of a or c is left: the message says the names chosen. */
  jb_claim_options co = names_opts(ac, 2);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  assert_non_null(strstr(jb_errmsg(), "names chosen"));
  /* The b jobs are still there, for a claim-next of every name. */
  assert_int_equal(drain(b, NULL, 0, got, 8), 2);
  assert_string_equal(got[0], b1);
  assert_string_equal(got[1], b2);
  jbt_assert_check_ok(b);
}

/* With JB_CLAIM_NAMES_IN_ORDER the first name that has a job gives it,
 * whatever the priorities of the later names' jobs. */
static void names_in_order_take_the_first_name_first(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char lo[JB_UUID_STRLEN], hi[JB_UUID_STRLEN], p1[JB_UUID_STRLEN];
  jbt_post(hi, b, "urgent-later", JB_PRIORITY_VERY_HIGH);
  jbt_post(lo, b, "first", JB_PRIORITY_VERY_LOW);
  jbt_post(p1, b, "pre.x", JB_PRIORITY_HIGH);
  const char *order[] = {"first", "pre.*", "urgent-later"};
  jb_claim_options co = names_opts(order, 3);
  co.flags = JB_CLAIM_NAMES_IN_ORDER;
  char got[4][JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++)
    assert_int_equal(jb_claim_next(got[i], NULL, NULL, b, "w", &co), JB_OK);
  assert_string_equal(got[0], lo);
  assert_string_equal(got[1], p1);
  assert_string_equal(got[2], hi);
  co.n_names = 0;
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_EINVAL);
}

/* "img.*" takes every name that starts with "img." (and "*" every name);
 * a name that only looks alike is not taken. */
static void a_trailing_star_chooses_a_prefix(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char x[JB_UUID_STRLEN], y[JB_UUID_STRLEN];
  jbt_post(NULL, b, "imgz", JB_PRIORITY_NORMAL);
  jbt_post(x, b, "img.resize", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "img", JB_PRIORITY_NORMAL);
  jbt_post(y, b, "img.crop", JB_PRIORITY_NORMAL);
  const char *pre[] = {"img.*"};
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(drain(b, pre, 1, got, 8), 2);
  assert_string_equal(got[0], x);
  assert_string_equal(got[1], y);
  const char *all[] = {"*"};
  assert_int_equal(drain(b, all, 1, got, 8), 2);
  assert_int_equal(jb_name_matches(pre, 1, "img.x"), 1);
  assert_int_equal(jb_name_matches(pre, 1, "imgx"), 0);
  jbt_assert_check_ok(b);
}

/* Two names whose lanes collide (FNV-1a 32 of "q562789" and "q779192"
 * are equal): the index holds both in one lane, and a claim of one name
 * never takes the other's job. */
static void names_sharing_a_lane_stay_apart(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  assert_int_equal(jb__lane("q562789", 7), jb__lane("q779192", 7));
  char p[JB_UUID_STRLEN], q[JB_UUID_STRLEN];
  jbt_post(p, b, "q562789", JB_PRIORITY_NORMAL);
  jbt_post(q, b, "q779192", JB_PRIORITY_NORMAL);
  const char *one[] = {"q779192"};
  char got[4][JB_UUID_STRLEN];
  assert_int_equal(drain(b, one, 1, got, 4), 1);
  assert_string_equal(got[0], q);
  /* Paused, one name of the lane holds back only its own jobs. */
  jbt_post(q, b, "q779192", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_pause(b, "q562789"), JB_OK);
  assert_int_equal(drain(b, NULL, 0, got, 4), 1);
  assert_string_equal(got[0], q);
  assert_int_equal(jb_resume(b, "q562789"), JB_OK);
  assert_int_equal(drain(b, NULL, 0, got, 4), 1);
  assert_string_equal(got[0], p);
  jbt_assert_check_ok(b);
}

typedef struct {
  const char *name;
  size_t ready;
  int paused;
  int seen;
} want_q;

static int collect(const jb_queue_info *q, void *arg) {
  want_q *w = arg;
  for (; w->name; w++)
    if (strcmp(w->name, q->name) == 0) {
      assert_int_equal(q->ready, w->ready);
      assert_int_equal(q->paused, w->paused);
      w->seen++;
      return 0;
    }
  fail_msg("an unexpected name: %s", q->name);
  return 0;
}

/* A paused name's jobs stay listed but no claim-next takes them; a claim
 * already held is untouched; a claim by uuid still works; another process
 * (and a reopen) sees the pause; resume makes them claimable again. */
static int pause_child(void *arg) {
  jb_board *b = jbt_open(arg, JB_DURABILITY_NORMAL, 0);
  int rc = jb_claim_next(NULL, NULL, NULL, b, "child", NULL);
  jb_board_close(b);
  return rc == JB_ENOTFOUND ? 0 : 1;
}

static void a_paused_name_is_listed_but_not_claimed(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char held[JB_UUID_STRLEN], p1[JB_UUID_STRLEN], p2[JB_UUID_STRLEN];
  jbt_post(held, b, "mail", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, held, "sender", NULL), JB_OK);
  jbt_post(p1, b, "mail", JB_PRIORITY_HIGH);
  jbt_post(p2, b, "mail", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_pause(b, "mail"), JB_OK);
  assert_int_equal(jb_pause(b, "mail"), JB_OK); /* again: no change */
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  const char *mail[] = {"mail"};
  jb_claim_options co = names_opts(mail, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  jbt_wait_ok(jbt_fork(pause_child, f->dir, 20), 20000);
  /* Listed, as UNCLAIMED, with its ready count. */
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 3);
  want_q w[] = {{"mail", 2, 1, 0}, {NULL, 0, 0, 0}};
  int bp = -1;
  assert_int_equal(jb_queues_foreach(b, collect, w, &bp), JB_OK);
  assert_int_equal(w[0].seen, 1);
  assert_int_equal(bp, 0);
  /* The claim held is untouched: its owner consumes it. */
  assert_int_equal(jb_consume(b, held, "sender", 0, NULL), JB_OK);
  /* Survives a reopen. */
  jb_board_close(b);
  f->board = b = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  /* An operator's claim by uuid still works. */
  assert_int_equal(jb_claim(NULL, b, p2, "operator", NULL), JB_OK);
  assert_int_equal(jb_resume(b, "mail"), JB_OK);
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(u, p1);
  jbt_assert_check_ok(b);
}

/* The whole board paused: nothing is claimed, by name or not; a name's
 * own pause outlives the board's resume. */
static void a_paused_board_claims_nothing(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char x[JB_UUID_STRLEN], y[JB_UUID_STRLEN];
  jbt_post(x, b, "x", JB_PRIORITY_NORMAL);
  jbt_post(y, b, "y", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_pause(b, "x"), JB_OK);
  assert_int_equal(jb_pause(b, NULL), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  assert_non_null(strstr(jb_errmsg(), "board is paused"));
  const char *ys[] = {"y"};
  jb_claim_options co = names_opts(ys, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  char ids[4][JB_UUID_STRLEN];
  uint64_t tok[4];
  size_t got = 9;
  assert_int_equal(jb_claim_next_many(&got, ids, tok, NULL, b, "w", NULL, 4),
                   JB_ENOTFOUND);
  int bp = 0;
  want_q w[] = {{"x", 1, 1, 0}, {"y", 1, 0, 0}, {NULL, 0, 0, 0}};
  assert_int_equal(jb_queues_foreach(b, collect, w, &bp), JB_OK);
  assert_int_equal(bp, 1);
  assert_int_equal(jb_resume(b, NULL), JB_OK);
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(u, y);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  jbt_assert_check_ok(b);
}

/* Thousands of a paused name's jobs ahead of one claimable job: the
 * claim-next of every name finds it (past its bounded walk, by lanes),
 * and so does a claim of many. */
static void claim_next_passes_many_paused_jobs(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  enum { N = 2000 };
  for (int i = 0; i < N; i++) jbt_post(NULL, b, "bulk", JB_PRIORITY_HIGH);
  char late[JB_UUID_STRLEN], later[JB_UUID_STRLEN];
  jbt_post(late, b, "late", JB_PRIORITY_NORMAL);
  jbt_post(later, b, "later", JB_PRIORITY_LOW);
  assert_int_equal(jb_pause(b, "bulk"), JB_OK);
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(u, late);
  char ids[4][JB_UUID_STRLEN];
  uint64_t tok[4];
  size_t got = 0;
  assert_int_equal(jb_claim_next_many(&got, ids, tok, NULL, b, "w", NULL, 4),
                   JB_OK);
  assert_int_equal(got, 1);
  assert_string_equal(ids[0], later);
  assert_int_equal(jb_resume(b, "bulk"), JB_OK);
  assert_int_equal(jb_claim_next_many(&got, ids, tok, NULL, b, "w", NULL, 4),
                   JB_OK);
  assert_int_equal(got, 4);
  jbt_assert_check_ok(b);
}

/* A waiter on names takes only a job of its names: a post of another name
 * leaves it waiting, a post of its name ends the wait with that job. */
typedef struct {
  const char *dir;
  char got[JB_UUID_STRLEN];
  int rc;
} waiter_arg;

static void *waiter(void *p) {
  waiter_arg *a = p;
  jb_board *b = jbt_open(a->dir, JB_DURABILITY_NORMAL, 0);
  const char *mine[] = {"mine"};
  jb_claim_options co = names_opts(mine, 1);
  co.wait_ms = 10000;
  a->rc = jb_claim_next(a->got, NULL, NULL, b, "waiter", &co);
  jb_board_close(b);
  return NULL;
}

static void a_waiter_on_names_takes_only_its_names(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  waiter_arg a = {.dir = f->dir, .rc = -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
  usleep(100 * 1000);
  char other[JB_UUID_STRLEN], mine[JB_UUID_STRLEN];
  jbt_post(other, b, "other", JB_PRIORITY_VERY_HIGH);
  usleep(100 * 1000);
  jbt_post(mine, b, "mine", JB_PRIORITY_LOW);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_string_equal(a.got, mine);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, other), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
}

/* A waiter on names sleeps through commits that make no job of its names
 * ready: 200 posts of another name (of another wake bit) cost it a few
 * looks at the board, not 200; a post of its name wakes it. */
static void a_waiter_on_names_sleeps_through_other_names(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  assert_true(JB_WAKE_LANE(jb__lane("mine", 4)) !=
              JB_WAKE_LANE(jb__lane("other", 5)));
  waiter_arg a = {.dir = f->dir, .rc = -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
  usleep(200 * 1000); /* it sleeps */
  unsigned long before = atomic_load(&jb__wait_attempts);
  for (int i = 0; i < 200; i++) jbt_post(NULL, b, "other", JB_PRIORITY_NORMAL);
  usleep(100 * 1000);
  unsigned long looks = atomic_load(&jb__wait_attempts) - before;
  char mine[JB_UUID_STRLEN];
  jbt_post(mine, b, "mine", JB_PRIORITY_LOW);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_string_equal(a.got, mine);
  /* A plain waiter would look after nearly every one of the 200 commits. */
  if (looks > 5) fail_msg("the waiter on names looked %lu times", looks);
}

/* jb_board_wait_names: a wait on "a" sleeps through 200 posts of "b" (a
 * few looks, not 200) and returns when another process posts an "a". */
typedef struct {
  const char *dir;
  unsigned flags;
  const char *const *names;
  size_t n;
  int rc;
  size_t count;
} names_wait_arg;

static void *names_waiter(void *p) {
  names_wait_arg *a = p;
  jb_board *b = jbt_open(a->dir, JB_DURABILITY_NORMAL, 0);
  a->rc = jb_board_wait_names(b, a->flags, a->names, a->n, 10000, &a->count);
  jb_board_close(b);
  return NULL;
}

static void wait_names_sleeps_through_other_names(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  assert_true(JB_WAKE_LANE(jb__lane("a", 1)) != JB_WAKE_LANE(jb__lane("b", 1)));
  const char *an[] = {"a"};
  names_wait_arg a = {.dir = f->dir, .names = an, .n = 1, .rc = -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, names_waiter, &a), 0);
  usleep(200 * 1000);
  unsigned long before = atomic_load(&jb__wait_attempts);
  for (int i = 0; i < 200; i++) jbt_post(NULL, b, "b", JB_PRIORITY_NORMAL);
  usleep(100 * 1000);
  unsigned long looks = atomic_load(&jb__wait_attempts) - before;
  assert_int_equal(a.rc, -1); /* still waiting */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    jb_board *c = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
    jb_post q = JB_POST_INIT;
    q.name = "a";
    _exit(jb_job_post(NULL, c, &q) == JB_OK ? 0 : 1);
  }
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_int_equal(a.count, 1);
  if (looks > 5) fail_msg("the wait on names looked %lu times", looks);
}

/* The claimable form counts ready jobs and lapsed claims of its names, not
 * live claims; a prefix takes the names it starts; a delayed job counts
 * once due; bad names are refused. */
static void wait_names_claimable_prefix_and_bad_names(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  const char *img[] = {"img.*"}, *x[] = {"img.x"}, *d[] = {"later"};
  size_t n = 9;
  assert_int_equal(jb_board_wait_names(b, 0, img, 1, 0, &n), JB_ETIMEDOUT);
  assert_int_equal(n, 0);
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "img.x", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "other", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_board_wait_names(b, JB_ONLY_UNCLAIMED, img, 1, 0, &n),
                   JB_OK);
  assert_int_equal(n, 1);
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 300;
  assert_int_equal(jb_claim(NULL, b, u, "w", &lease), JB_OK);
  /* Claimed: on the board, not claimable, until the lease lapses. */
  assert_int_equal(jb_board_wait_names(b, 0, x, 1, 0, &n), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(jb_board_wait_names(b, JB_ONLY_UNCLAIMED, x, 1, 0, NULL),
                   JB_ETIMEDOUT);
  assert_int_equal(jb_board_wait_names(b, JB_ONLY_UNCLAIMED, x, 1, 5000, &n),
                   JB_OK);
  assert_int_equal(n, 1);
  /* Delayed: counts from its due time. */
  jb_post q = JB_POST_INIT;
  q.name = "later";
  q.delay_ms = 300;
  assert_int_equal(jb_job_post(NULL, b, &q), JB_OK);
  assert_int_equal(jb_board_wait_names(b, 0, d, 1, 0, NULL), JB_ETIMEDOUT);
  assert_int_equal(jb_board_wait_names(b, JB_ONLY_UNCLAIMED, d, 1, 5000, &n),
                   JB_OK);
  assert_int_equal(n, 1);
  /* Bad names, and no names (every name). */
  const char *empty[] = {""}, *null[] = {NULL}, *bad[] = {"\xff"};
  assert_int_equal(jb_board_wait_names(b, 0, empty, 1, 0, NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0, null, 1, 0, NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0, bad, 1, 0, NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0, NULL, 1, 0, NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0, x, JB_CLAIM_NAMES_MAX + 1, 0,
                                       NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0x10, x, 1, 0, NULL), JB_EINVAL);
  char longname[JB_NAME_MAX + 2];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  const char *lng[] = {longname};
  assert_int_equal(jb_board_wait_names(b, 0, lng, 1, 0, NULL), JB_EINVAL);
  assert_int_equal(jb_board_wait_names(b, 0, NULL, 0, 0, &n), JB_OK);
  assert_int_equal(n, 3);
}

/* A claim-next waiting on a paused board that holds ready jobs sleeps
 * (it does not look again every millisecond), and the resume wakes it. */
typedef struct {
  jb_board *b;
  char got[JB_UUID_STRLEN];
  int rc;
} plain_arg;

static void *plain_waiter(void *p) {
  plain_arg *a = p;
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.wait_ms = 10000;
  a->rc = jb_claim_next(a->got, NULL, NULL, a->b, "waiter", &co);
  return NULL;
}

static void a_waiter_sleeps_through_a_pause(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "held", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_pause(b, NULL), JB_OK);
  plain_arg a = {.b = b, .rc = -1};
  unsigned long before = atomic_load(&jb__wait_attempts);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, plain_waiter, &a), 0);
  usleep(300 * 1000);
  unsigned long looks = atomic_load(&jb__wait_attempts) - before;
  assert_int_equal(jb_resume(b, NULL), JB_OK);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_string_equal(a.got, u);
  if (looks > 5) fail_msg("the waiter looked %lu times in 300 ms", looks);
}

/* A cap of 2 on a name: claim-next takes two of its jobs and then passes
 * the name over (other names still claimable); a claim by uuid is
 * refused naming the cap; a consume or a lapsed lease frees a slot; claims
 * held before the cap was set count. */
static void a_cap_holds_the_claims_of_a_name(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char api[5][JB_UUID_STRLEN], other[JB_UUID_STRLEN];
  for (int i = 0; i < 5; i++) jbt_post(api[i], b, "api", JB_PRIORITY_HIGH);
  jbt_post(other, b, "other", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim(NULL, b, api[4], "early", NULL), JB_OK);
  assert_int_equal(jb_set_cap(b, "api", 2), JB_OK); /* holds 1 already */
  char u[JB_UUID_STRLEN];
  uint64_t tok;
  assert_int_equal(jb_claim_next(u, NULL, &tok, b, "w", NULL), JB_OK);
  assert_string_equal(u, api[0]);
  /* At the cap: the next claim-next takes the other name's job. */
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(u, other);
  const char *an[] = {"api"};
  jb_claim_options co = names_opts(an, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  assert_int_equal(jb_claim(NULL, b, api[1], "w", NULL), JB_ENOTDUE);
  assert_non_null(strstr(jb_errmsg(), "cap of 2"));
  want_q w[] = {{"api", 3, 0, 0}, {"other", 0, 0, 0}, {NULL, 0, 0, 0}};
  assert_int_equal(jb_queues_foreach(b, collect, w, NULL), JB_OK);
  /* A consume frees a slot. */
  assert_int_equal(jb_consume(b, api[0], "w", tok, NULL), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_OK);
  assert_string_equal(u, api[1]);
  /* A lapsed lease frees one too: the next claim-next meets it. */
  assert_int_equal(jb_abandon(b, api[1], "w", 0), JB_OK);
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 50;
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "leaser", &lease), JB_OK);
  assert_string_equal(u, api[1]);
  usleep(120 * 1000);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  /* No cap: every job claimable again. */
  assert_int_equal(jb_set_cap(b, "api", 0), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_OK);
  jbt_assert_check_ok(b);
}

/* Processes racing for a capped name's jobs: exactly the cap is claimed. */
static int cap_racer(void *arg) {
  jb_board *b = jbt_open(arg, JB_DURABILITY_NORMAL, 0);
  int got = 0;
  for (int i = 0; i < 6; i++)
    if (jb_claim_next(NULL, NULL, NULL, b, "racer", NULL) == JB_OK) got++;
  jb_board_close(b);
  return got;
}

static void racing_processes_never_pass_a_cap(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  for (int i = 0; i < 20; i++) jbt_post(NULL, b, "scarce", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "scarce", 3), JB_OK);
  pid_t kids[4];
  for (int i = 0; i < 4; i++) kids[i] = jbt_fork(cap_racer, f->dir, 30);
  int total = 0;
  for (int i = 0; i < 4; i++) {
    int st = jbt_wait(kids[i], 30000);
    assert_true(st >= 0 && WIFEXITED(st));
    total += WEXITSTATUS(st);
  }
  assert_int_equal(total, 3);
  want_q w[] = {{"scarce", 17, 0, 0}, {NULL, 0, 0, 0}};
  assert_int_equal(jb_queues_foreach(b, collect, w, NULL), JB_OK);
  jbt_assert_check_ok(b);
}

/* A worker waiting for a capped name's jobs wakes when a slot frees. */
static void a_waiter_wakes_when_a_slot_frees(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char held[JB_UUID_STRLEN], next[JB_UUID_STRLEN];
  jbt_post(held, b, "mine", JB_PRIORITY_HIGH);
  jbt_post(next, b, "mine", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "mine", 1), JB_OK);
  uint64_t tok;
  assert_int_equal(jb_claim(&tok, b, held, "first", NULL), JB_OK);
  waiter_arg a = {.dir = f->dir, .rc = -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
  usleep(200 * 1000);
  assert_int_equal(jb_consume(b, held, "first", tok, NULL), JB_OK);
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_string_equal(a.got, next);
}

/* Bad arguments: a clear error, nothing claimed. */
static void bad_names_are_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "job", JB_PRIORITY_NORMAL);
  jb_claim_options co = names_opts(NULL, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "names is NULL"));
  const char *empty[] = {""};
  co = names_opts(empty, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "empty"));
  const char *bad[] = {"\xff"};
  co = names_opts(bad, 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "UTF-8"));
  const char *many[JB_CLAIM_NAMES_MAX + 1];
  for (size_t i = 0; i <= JB_CLAIM_NAMES_MAX; i++) many[i] = "job";
  co = names_opts(many, JB_CLAIM_NAMES_MAX + 1);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co), JB_EINVAL);
  const char *job[] = {"job"};
  co = names_opts(job, 1);
  assert_int_equal(jb_claim(NULL, b, u, "w", &co), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "takes no names"));
  assert_int_equal(jb_pause(b, "jo*"), JB_EINVAL);
  assert_int_equal(jb_pause(b, ""), JB_EINVAL);
  assert_int_equal(jb_pause(NULL, "job"), JB_EINVAL);
  assert_int_equal(jb_pause(b, "never-posted"), JB_ENOTFOUND);
  assert_non_null(strstr(jb_errmsg(), "never-posted"));
  assert_int_equal(jb_queues_foreach(b, NULL, NULL, NULL), JB_EINVAL);
  assert_int_equal(jb_set_cap(b, NULL, 1), JB_EINVAL);
  assert_int_equal(jb_set_cap(b, "jo\xff*", 1), JB_EINVAL); /* not UTF-8 */
  assert_int_equal(jb_set_cap(b, "never-posted", 1), JB_ENOTFOUND);
  /* Nothing was claimed or paused by any of it. */
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_OK);
}

/* A board as schema 9 left it (no lanes in the headers, no byname or
 * queues entries) is upgraded when opened: claims by name and check work. */
static int as_schema9(void *arg) {
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi jobs, byname, queues, meta;
  if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 32) ||
      mdb_env_open(env, arg, 0, 0644) || mdb_txn_begin(env, NULL, 0, &txn))
    return 1;
  if (mdb_dbi_open(txn, JB_DB_JOBS, 0, &jobs) ||
      mdb_dbi_open(txn, JB_DB_BYNAME, 0, &byname) ||
      mdb_dbi_open(txn, JB_DB_QUEUES, 0, &queues) ||
      mdb_dbi_open(txn, JB_DB_META, 0, &meta))
    return 2;
  if (mdb_drop(txn, byname, 0) || mdb_drop(txn, queues, 0)) return 3;
  MDB_cursor *cur;
  MDB_val k, v;
  if (mdb_cursor_open(txn, jobs, &cur)) return 4;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    uint8_t *buf = malloc(v.mv_size);
    memcpy(buf, v.mv_data, v.mv_size);
    memset(buf + offsetof(jb_jobhdr, lane), 0, 4);
    MDB_val nv = {v.mv_size, buf};
    int r = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
    free(buf);
    if (r) return 5;
  }
  mdb_cursor_close(cur);
  uint32_t nine = 9;
  k = (MDB_val){6, "schema"};
  v = (MDB_val){4, &nine};
  if (mdb_put(txn, meta, &k, &v, 0) || mdb_txn_commit(txn)) return 6;
  mdb_env_close(env);
  return 0;
}

static void a_schema_9_board_gets_its_name_index(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  jbt_post(a, b, "alpha", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "beta", JB_PRIORITY_NORMAL);
  jbt_post(c, b, "alpha", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, c, "holder", NULL), JB_OK);
  jb_board_close(b);
  f->board = NULL;
  jbt_wait_ok(jbt_fork(as_schema9, f->dir, 20), 20000);
  f->board = b = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(b);
  const char *alpha[] = {"alpha"};
  char got[4][JB_UUID_STRLEN];
  assert_int_equal(drain(b, alpha, 1, got, 4), 1);
  assert_string_equal(got[0], a);
  assert_int_equal(jb_consume(b, c, "holder", 0, NULL), JB_OK);
  assert_int_equal(jb_pause(b, "beta"), JB_OK); /* the name is recorded */
  jbt_assert_check_ok(b);
}

#define T(f) cmocka_unit_test_setup_teardown(f, jbt_setup, jbt_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(claim_next_takes_only_the_names_chosen_in_order),
      T(a_trailing_star_chooses_a_prefix),
      T(names_in_order_take_the_first_name_first),
      T(names_sharing_a_lane_stay_apart),
      T(a_paused_name_is_listed_but_not_claimed),
      T(a_paused_board_claims_nothing),
      T(claim_next_passes_many_paused_jobs),
      T(a_waiter_on_names_takes_only_its_names),
      T(a_waiter_on_names_sleeps_through_other_names),
      T(a_waiter_sleeps_through_a_pause),
      T(wait_names_sleeps_through_other_names),
      T(wait_names_claimable_prefix_and_bad_names),
      T(a_cap_holds_the_claims_of_a_name),
      T(racing_processes_never_pass_a_cap),
      T(a_waiter_wakes_when_a_slot_frees),
      T(bad_names_are_refused),
      T(a_schema_9_board_gets_its_name_index),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
