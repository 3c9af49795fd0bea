/*
 * test_rate.c - rate limits of job names (jb_set_rate, store/names.h):
 * count at once then one per interval on a fixed clock, every kind of
 * claim spending a token, processes racing for a limit, a waiter woken
 * when the next token is due (and not polling), a claim by uuid refused,
 * the limit removed, a reopen keeping the tokens spent, bad arguments,
 * check reading both formats of a name's record; rate limits per key
 * (jb_set_rate of "prefix*"): each name under the prefix on its own, the
 * names posted later too, a name's own limit beating its prefix's, the
 * longest prefix winning, bad prefixes refused, check and salvage.
 */
#include "helpers.h"
#include "base/util.h"
#include "core/internal.h"
#include "store/names.h"
#include "store/txn.h"
#include "store/wake.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define T0 1800000000000000LL /* a fixed wall clock, microseconds */

static jb_claim_options named(const char *const *names, size_t n) {
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.names = names;
  co.n_names = n;
  return co;
}

typedef struct {
  const char *name;
  jb_queue_info got;
} find_q;

static int find(const jb_queue_info *q, void *arg) {
  find_q *f = arg;
  if (strcmp(q->name, f->name) == 0) {
    f->got = *q;
    f->got.name = NULL; /* valid only during the call */
  }
  return 0;
}

static jb_queue_info info(jb_board *b, const char *name) {
  find_q f = {.name = name};
  assert_int_equal(jb_queues_foreach(b, find, &f, NULL), JB_OK);
  return f.got;
}

/* 5 per 2 s: five claims at once, then one every 400 ms, decided on the
 * board's (fixed) clock; other names are not held back. */
static void count_at_once_then_one_per_interval(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char api[8][JB_UUID_STRLEN], other[JB_UUID_STRLEN], u[JB_UUID_STRLEN];
  for (int i = 0; i < 8; i++) jbt_post(api[i], b, "api", JB_PRIORITY_HIGH);
  jbt_post(other, b, "other", JB_PRIORITY_LOW);
  jb__test_clock_fix(T0);
  assert_int_equal(jb_set_rate(b, "api", 5, 2000), JB_OK);
  jb_queue_info q = info(b, "api");
  assert_int_equal(q.rate, 5);
  assert_int_equal(q.period_ms, 2000);
  assert_true(q.next_token_us <= T0);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
    assert_string_equal(u, api[i]);
  }
  /* No token: the other name's job, then nothing. */
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(u, other);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  const char *an[] = {"api"};
  jb_claim_options co = named(an, 1);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  assert_int_equal(info(b, "api").next_token_us, T0 + 400000);
  /* What a waiter sleeps until: the next token of a name it takes with a
   * ready job; nothing for names without a limit. */
  int64_t due = -1;
  assert_int_equal(jb__claim_next_once(u, NULL, NULL, b, "w", &co, &due),
                   JB_ENOTFOUND);
  assert_int_equal(due, T0 + 400000);
  due = -1;
  assert_int_equal(jb__claim_next_once(u, NULL, NULL, b, "w", NULL, &due),
                   JB_ENOTFOUND);
  assert_int_equal(due, T0 + 400000);
  size_t n = 9;
  due = -1;
  assert_int_equal(jb__claim_next_many_once(&n, NULL, NULL, NULL, b, "w",
                                            &co, 4, &due),
                   JB_ENOTFOUND);
  assert_int_equal(due, T0 + 400000);
  const char *on[] = {"other"};
  jb_claim_options oo = named(on, 1);
  due = -1;
  assert_int_equal(jb__claim_next_once(u, NULL, NULL, b, "w", &oo, &due),
                   JB_ENOTFOUND);
  assert_int_equal(due, 0);
  /* A claim by uuid: refused, naming the limit. */
  assert_int_equal(jb_claim(NULL, b, api[5], "w", NULL), JB_ENOTDUE);
  assert_non_null(strstr(jb_errmsg(), "rate limit of 5 claims per 2s"));
  assert_non_null(strstr(jb_errmsg(), "another 400ms"));
  /* A microsecond before the token: none; at it: one, and one only. */
  jb__test_clock_fix(T0 + 399999);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  jb__test_clock_fix(T0 + 400000);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_OK);
  assert_string_equal(u, api[5]);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  /* A claim by uuid spends a token too. */
  jb__test_clock_fix(T0 + 800000);
  assert_int_equal(jb_claim(NULL, b, api[7], "w", NULL), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", &co), JB_ENOTFOUND);
  assert_int_equal(info(b, "api").next_token_us, T0 + 1200000);
  jb__test_clock_fix(0);
  jbt_assert_check_ok(b);
}

/* claim-next --count and consume-and-claim-next spend a token a claim. */
static void every_kind_of_claim_spends_a_token(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  for (int i = 0; i < 10; i++) jbt_post(NULL, b, "api", JB_PRIORITY_NORMAL);
  jb__test_clock_fix(T0);
  assert_int_equal(jb_set_rate(b, "api", 3, 3000), JB_OK); /* one a second */
  char uuids[8][JB_UUID_STRLEN];
  uint64_t tokens[8];
  size_t n = 0;
  assert_int_equal(
      jb_claim_next_many(&n, uuids, tokens, NULL, b, "w", NULL, 8), JB_OK);
  assert_int_equal(n, 3);
  /* The next token in a second: a consume frees no token. */
  char next[JB_UUID_STRLEN];
  uint64_t nt = 0;
  assert_int_equal(jb_consume_and_claim_next(next, NULL, &nt, b, uuids[0], "w",
                                             tokens[0], NULL, NULL),
                   JB_OK);
  assert_string_equal(next, "");
  jb__test_clock_fix(T0 + 1000000);
  assert_int_equal(jb_consume_and_claim_next(next, NULL, &nt, b, uuids[1], "w",
                                             tokens[1], NULL, NULL),
                   JB_OK);
  assert_true(next[0] != '\0');
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL),
                   JB_ENOTFOUND);
  assert_int_equal(
      jb_claim_next_many(&n, uuids, tokens, NULL, b, "w", NULL, 8),
      JB_ENOTFOUND);
  jb__test_clock_fix(T0 + 3000000);
  assert_int_equal(
      jb_claim_next_many(&n, uuids, tokens, NULL, b, "w", NULL, 8), JB_OK);
  assert_int_equal(n, 2); /* two seconds, two tokens */
  jb__test_clock_fix(0);
  jbt_assert_check_ok(b);
}

/* Processes racing for a limited name's jobs on one clock: exactly the
 * limit is claimed, then exactly one per interval. */
typedef struct {
  const char *dir;
  int64_t now;
} racer_arg;

static int racer(void *arg) {
  racer_arg *a = arg;
  jb__test_clock_fix(a->now);
  jb_board *b = jbt_open(a->dir, JB_DURABILITY_NORMAL, 0);
  int got = 0;
  for (int i = 0; i < 8; i++)
    if (jb_claim_next(NULL, NULL, NULL, b, "racer", NULL) == JB_OK) got++;
  jb_board_close(b);
  return got;
}

static int race(const char *dir, int64_t now) {
  racer_arg a = {dir, now};
  pid_t kids[4];
  for (int i = 0; i < 4; i++) kids[i] = jbt_fork(racer, &a, 30);
  int total = 0;
  for (int i = 0; i < 4; i++) {
    int st = jbt_wait(kids[i], 30000);
    assert_true(st >= 0 && WIFEXITED(st));
    total += WEXITSTATUS(st);
  }
  return total;
}

static void racing_processes_never_pass_a_rate_limit(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  for (int i = 0; i < 40; i++) jbt_post(NULL, b, "scarce", JB_PRIORITY_NORMAL);
  jb__test_clock_fix(T0);
  assert_int_equal(jb_set_rate(b, "scarce", 5, 2000), JB_OK);
  jb__test_clock_fix(0);
  assert_int_equal(race(f->dir, T0), 5);
  assert_int_equal(race(f->dir, T0 + 399999), 0);
  assert_int_equal(race(f->dir, T0 + 400000), 1);
  /* A whole period later: a full bucket again, never more. */
  assert_int_equal(race(f->dir, T0 + 10000000), 5);
  jbt_assert_check_ok(b);
}

/* A worker waiting for a limited name's jobs sleeps until the next token
 * is due and takes the job then: not before, and without looking at the
 * board every millisecond meanwhile. (Where inotify is out of watches a
 * wait also looks once a second: count_at_once_then_one_per_interval
 * checks the instant a waiter is given.) */
typedef struct {
  jb_board *b;
  char got[JB_UUID_STRLEN];
  int rc;
  int64_t done_us;
} waiter_arg;

static void *waiter(void *p) {
  waiter_arg *a = p;
  const char *mine[] = {"mine"};
  jb_claim_options co = named(mine, 1);
  co.wait_ms = 10000;
  a->rc = jb_claim_next(a->got, NULL, NULL, a->b, "waiter", &co);
  a->done_us = jb__now_us();
  return NULL;
}

static void a_waiter_wakes_when_the_token_is_due(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char first[JB_UUID_STRLEN], second[JB_UUID_STRLEN];
  jbt_post(first, b, "mine", JB_PRIORITY_HIGH);
  jbt_post(second, b, "mine", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_rate(b, "mine", 1, 700), JB_OK);
  assert_int_equal(jb_claim(NULL, b, first, "w", NULL), JB_OK);
  int64_t due = info(b, "mine").next_token_us;
  assert_true(due > jb__now_us());
  waiter_arg a = {.b = b, .rc = -1};
  unsigned long before = atomic_load(&jb__wait_attempts);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  unsigned long looks = atomic_load(&jb__wait_attempts) - before;
  assert_int_equal(a.rc, JB_OK);
  assert_string_equal(a.got, second);
  assert_true(a.done_us >= due);
  /* Polling every millisecond would look about 700 times. */
  if (looks > 4) fail_msg("the waiter looked %lu times", looks);
}

/* Removing the limit frees the name at once (a waiter too); a reopen keeps
 * the tokens spent. */
static void a_removed_limit_frees_and_a_reopen_keeps_it(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  for (int i = 0; i < 4; i++)
    jbt_post(NULL, f->board, "api", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_rate(f->board, "api", 1, 3600 * 1000), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, f->board, "w", NULL), JB_OK);
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb_board *b = f->board;
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  jb_queue_info q = info(b, "api");
  assert_int_equal(q.rate, 1);
  assert_true(q.next_token_us > jb__now_us() + 3500 * 1000000LL);
  waiter_arg a = {.b = b, .rc = -1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, waiter, &a), 0);
  jbt_post(NULL, b, "mine", JB_PRIORITY_NORMAL); /* its name is recorded */
  assert_int_equal(pthread_join(t, NULL), 0);
  assert_int_equal(a.rc, JB_OK);
  assert_int_equal(jb_set_rate(b, "api", 0, 0), JB_OK);
  assert_int_equal(info(b, "api").rate, 0);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  /* A limit set again starts full. */
  assert_int_equal(jb_set_rate(b, "api", 1, 3600 * 1000), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  /* A cap and a limit on one name: both hold, either removed alone. */
  assert_int_equal(jb_set_cap(b, "api", 5), JB_OK);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  assert_int_equal(jb_set_rate(b, "api", 0, 0), JB_OK);
  assert_int_equal(info(b, "api").cap, 5);
  assert_int_equal(jb_claim_next(u, NULL, NULL, b, "w", NULL), JB_OK);
  jbt_assert_check_ok(b);
}

/* Bad arguments: a clear error, and the limit as it was. */
static void bad_rate_limits_are_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jbt_post(NULL, b, "api", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_rate(NULL, "api", 1, 1000), JB_EINVAL);
  assert_int_equal(jb_set_rate(b, NULL, 1, 1000), JB_EINVAL);
  assert_int_equal(jb_set_rate(b, "", 1, 1000), JB_EINVAL);
  assert_int_equal(jb_set_rate(b, "api", 1, 0), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "period of 0 ms"));
  assert_int_equal(jb_set_rate(b, "api", 1, JB_RATE_PERIOD_MAX_MS + 1),
                   JB_EINVAL);
  assert_int_equal(jb_set_rate(b, "api", 2000, 1), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "more than one a microsecond"));
  assert_int_equal(jb_set_rate(b, "nosuch", 1, 1000), JB_ENOTFOUND);
  assert_int_equal(info(b, "api").rate, 0);
  assert_int_equal(jb_set_rate(b, "api", 1000, 1), JB_OK); /* the bound */
  assert_int_equal(jb_set_rate(b, "api", 1, JB_RATE_PERIOD_MAX_MS), JB_OK);
  assert_int_equal(info(b, "api").period_ms, JB_RATE_PERIOD_MAX_MS);
  jbt_assert_check_ok(b);
}

/* check passes a board with a name's record in each format, and reports a
 * meta record "queuectl" that miscounts the names with a control. */
static int miscount(jb_store *s, MDB_txn *txn, void *ctx, int *status) {
  (void)ctx;
  (void)status;
  uint32_t v = 7;
  MDB_val k = {sizeof JB_QUEUECTL_KEY - 1, JB_QUEUECTL_KEY}, d = {4, &v};
  return mdb_put(txn, s->meta, &k, &d, 0);
}

static void count_problems(const char *line, void *arg) {
  if (strstr(line, JB_QUEUECTL_KEY)) ++*(int *)arg;
}

/* check's problems (*problems) and the lines `count` counts (returned). */
static int check_lines(jb_board *b, void (*count)(const char *, void *),
                       size_t *problems) {
  jb_check_stats st;
  int lines = 0;
  jb_board_check(&st, b, count, &lines);
  *problems = st.problems;
  return lines;
}

static void check_reads_both_formats(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jbt_post(NULL, b, "plain", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "rated", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "capped", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "capped", 3), JB_OK);  /* format 1 */
  assert_int_equal(jb_set_rate(b, "rated", 3, 1000), JB_OK); /* format 2 */
  jbt_assert_check_ok(b);
  assert_int_equal(jb__store_write(b->store, miscount, NULL), JB_OK);
  size_t problems;
  assert_int_equal(check_lines(b, count_problems, &problems), 1);
  assert_int_equal(problems, 1);
}

/* ------------------------------------------------ rate limits per key */

static void post_n(jb_board *b, const char *name, int n) {
  for (int i = 0; i < n; i++) jbt_post(NULL, b, name, JB_PRIORITY_NORMAL);
}

/* Claim-next by `pattern` until nothing comes: the claims made. */
static int take_all(jb_board *b, const char *pattern) {
  const char *names[] = {pattern};
  jb_claim_options co = named(names, 1);
  int n = 0;
  while (jb_claim_next(NULL, NULL, NULL, b, "w", &co) == JB_OK) n++;
  return n;
}

/* "api.*" at 2 per minute: each customer's name gets 2 claims, the names
 * posted later too; not 2 in all; other names are not held back. */
static void a_prefix_limits_each_name_on_its_own(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jb__test_clock_fix(T0);
  post_n(b, "api.c1", 4);
  post_n(b, "api.c2", 4);
  post_n(b, "other", 3);
  assert_int_equal(jb_set_rate(b, "api.*", 2, 60000), JB_OK);
  jb_queue_info q = info(b, "api.c1");
  assert_int_equal(q.rate, 2);
  assert_int_equal(q.period_ms, 60000);
  assert_int_equal(q.rate_each, 1);
  assert_int_equal(info(b, "other").rate, 0);
  assert_int_equal(take_all(b, "api.*"), 4);
  assert_int_equal(info(b, "api.c2").next_token_us, T0 + 30000000);
  /* A new customer is limited from its first post, its tokens full. */
  post_n(b, "api.c3", 3);
  q = info(b, "api.c3");
  assert_int_equal(q.rate, 2);
  assert_int_equal(q.rate_each, 1);
  assert_int_equal(take_all(b, "api.*"), 2);
  assert_int_equal(take_all(b, "other"), 3);
  jbt_assert_check_ok(b);
  /* Half a minute on, one token each. */
  jb__test_clock_fix(T0 + 30000000);
  assert_int_equal(take_all(b, "api.*"), 3);
  /* The same limit set again keeps the buckets; none frees the rest. */
  assert_int_equal(jb_set_rate(b, "api.*", 2, 60000), JB_OK);
  assert_int_equal(take_all(b, "api.*"), 0);
  assert_int_equal(jb_set_rate(b, "api.*", 0, 0), JB_OK);
  q = info(b, "api.c1");
  assert_int_equal(q.rate, 0);
  assert_int_equal(q.rate_each, 0);
  assert_int_equal(take_all(b, "api.*"), 2);
  jbt_assert_check_ok(b);
  jb__test_clock_fix(0);
}

static int list_prefix(const char *prefix, uint32_t count,
                       uint64_t period_ms, void *arg) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 256 - n, "%s=%u/%llu;", prefix, count,
           (unsigned long long)period_ms);
  return 0;
}

/* A name's own limit beats its prefix's and `0` on it brings the
 * prefix's back (its tokens full); the longest prefix wins; the prefixes
 * are listed. */
static void own_rates_and_longer_prefixes_win(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  jb__test_clock_fix(T0);
  post_n(b, "api.c1", 6);
  post_n(b, "api.vip.c2", 6);
  assert_int_equal(jb_set_rate(b, "api.c1", 4, 60000), JB_OK);
  assert_int_equal(jb_set_rate(b, "api.*", 1, 60000), JB_OK);
  assert_int_equal(jb_set_rate(b, "api.vip.*", 3, 60000), JB_OK);
  jb_queue_info q = info(b, "api.c1");
  assert_int_equal(q.rate, 4);
  assert_int_equal(q.rate_each, 0);
  q = info(b, "api.vip.c2");
  assert_int_equal(q.rate, 3);
  assert_int_equal(q.rate_each, 1);
  char list[256] = "";
  assert_int_equal(jb_rate_prefixes(b, list_prefix, list), JB_OK);
  assert_string_equal(list, "api.=1/60000;api.vip.=3/60000;");
  assert_int_equal(take_all(b, "api.*"), 7);
  /* Its own limit gone, api.c1 has its prefix's 1, full. */
  assert_int_equal(jb_set_rate(b, "api.c1", 0, 0), JB_OK);
  q = info(b, "api.c1");
  assert_int_equal(q.rate, 1);
  assert_int_equal(q.period_ms, 60000);
  assert_int_equal(q.rate_each, 1);
  assert_int_equal(take_all(b, "api.c1"), 1);
  /* The longer prefix removed, api.vip.c2 falls under "api.*". */
  assert_int_equal(jb_set_rate(b, "api.vip.*", 0, 0), JB_OK);
  q = info(b, "api.vip.c2");
  assert_int_equal(q.rate, 1);
  assert_int_equal(q.rate_each, 1);
  list[0] = '\0';
  assert_int_equal(jb_rate_prefixes(b, list_prefix, list), JB_OK);
  assert_string_equal(list, "api.=1/60000;");
  /* A cap per prefix is apart from it. */
  assert_int_equal(jb_set_cap(b, "api.*", 5), JB_OK);
  assert_int_equal(info(b, "api.c1").rate, 1);
  jbt_assert_check_ok(b);
  jb__test_clock_fix(0);
}

/* Bad prefixes: a clear error, and nothing changed. */
static void bad_prefix_rates_are_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "api.c1", 1);
  assert_int_equal(jb_set_rate(b, "\xff*", 1, 1000), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "UTF-8"));
  assert_int_equal(jb_set_rate(b, "api.*", 1, 0), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "period of 0 ms"));
  assert_int_equal(jb_set_rate(b, "api.*", 1, JB_RATE_PERIOD_MAX_MS + 1),
                   JB_EINVAL);
  assert_int_equal(jb_set_rate(b, "api.*", 2000, 1), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "more than one a microsecond"));
  char list[256] = "";
  assert_int_equal(jb_rate_prefixes(b, list_prefix, list), JB_OK);
  assert_string_equal(list, "");
  assert_int_equal(info(b, "api.c1").rate, 0);
  assert_int_equal(jb_rate_prefixes(NULL, list_prefix, list), JB_EINVAL);
  assert_int_equal(jb_rate_prefixes(b, NULL, list), JB_EINVAL);
  /* At most 256 prefixes; setting one already there still works. */
  for (int i = 0; i < 256; i++) {
    char p[16];
    snprintf(p, sizeof p, "p%d.*", i);
    assert_int_equal(jb_set_rate(b, p, 1, 1000), JB_OK);
  }
  assert_int_equal(jb_set_rate(b, "api.*", 1, 1000), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "at most 256"));
  assert_int_equal(info(b, "api.c1").rate, 0);
  assert_int_equal(jb_set_rate(b, "p3.*", 2, 1000), JB_OK);
  assert_int_equal(jb_set_rate(b, "p3.*", 0, 0), JB_OK);
  assert_int_equal(jb_set_rate(b, "api.*", 1, 1000), JB_OK);
  assert_int_equal(info(b, "api.c1").rate, 1);
  jbt_assert_check_ok(b);
}

/* check reports a name whose prefix's limit is not its prefix's (the list
 * changed behind its back), and a list that does not parse. */
static int drop_rateeach(jb_store *s, MDB_txn *txn, void *ctx, int *status) {
  (void)ctx;
  (void)status;
  MDB_val k = {sizeof JB_RATEEACH_KEY - 1, JB_RATEEACH_KEY};
  return mdb_del(txn, s->meta, &k, NULL);
}

static int garble_rateeach(jb_store *s, MDB_txn *txn, void *ctx,
                           int *status) {
  (void)ctx;
  (void)status;
  MDB_val k = {sizeof JB_RATEEACH_KEY - 1, JB_RATEEACH_KEY},
          d = {3, "abc"};
  return mdb_put(txn, s->meta, &k, &d, 0);
}

static void count_rate_problems(const char *line, void *arg) {
  if (strstr(line, "rate")) ++*(int *)arg;
}

static void check_sees_prefix_rates(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "api.c1", 1);
  assert_int_equal(jb_set_rate(b, "api.*", 3, 1000), JB_OK);
  jbt_assert_check_ok(b);
  assert_int_equal(jb__store_write(b->store, drop_rateeach, NULL), JB_OK);
  size_t problems;
  assert_int_equal(check_lines(b, count_rate_problems, &problems), 1);
  assert_int_equal(problems, 1);
  assert_int_equal(jb__store_write(b->store, garble_rateeach, NULL), JB_OK);
  assert_int_equal(check_lines(b, count_rate_problems, &problems), 2);
}

/* Salvage copies the prefixes and the names' limits from them; a name
 * posted on the copy inherits. */
static void salvage_copies_prefix_rates(void **state) {
  jbt_fixture *f = *state;
  jb__test_clock_fix(T0);
  post_n(f->board, "api.c1", 3);
  post_n(f->board, "api.c2", 1);
  assert_int_equal(jb_set_rate(f->board, "api.*", 2, 60000), JB_OK);
  assert_int_equal(jb_set_rate(f->board, "api.c2", 5, 1000), JB_OK);
  jb_board_close(f->board);
  f->board = NULL;
  char *dst = jbt_path(f->dir, "salvaged");
  jb_salvage_stats st;
  assert_int_equal(jb_board_salvage(&st, f->dir, dst, NULL, NULL), JB_OK);
  jb_board *b = f->board = jbt_open(dst, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(b);
  char list[256] = "";
  assert_int_equal(jb_rate_prefixes(b, list_prefix, list), JB_OK);
  assert_string_equal(list, "api.=2/60000;");
  jb_queue_info q = info(b, "api.c1");
  assert_int_equal(q.rate, 2);
  assert_int_equal(q.rate_each, 1);
  q = info(b, "api.c2");
  assert_int_equal(q.rate, 5);
  assert_int_equal(q.rate_each, 0);
  assert_int_equal(take_all(b, "api.c1"), 2);
  post_n(b, "api.c9", 3);
  assert_int_equal(take_all(b, "api.c9"), 2);
  jbt_assert_check_ok(b);
  jb_board_close(f->board);
  f->board = NULL;
  jbt_rmtree(dst);
  free(dst);
  jb__test_clock_fix(0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, jbt_setup, jbt_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(count_at_once_then_one_per_interval),
      T(every_kind_of_claim_spends_a_token),
      T(racing_processes_never_pass_a_rate_limit),
      T(a_waiter_wakes_when_the_token_is_due),
      T(a_removed_limit_frees_and_a_reopen_keeps_it),
      T(bad_rate_limits_are_refused),
      T(check_reads_both_formats),
      T(a_prefix_limits_each_name_on_its_own),
      T(own_rates_and_longer_prefixes_win),
      T(bad_prefix_rates_are_refused),
      T(check_sees_prefix_rates),
      T(salvage_copies_prefix_rates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
