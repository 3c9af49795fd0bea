/*
 * test_caps.c - caps per key (each name of a prefix capped on its own:
 * names recorded and posted later, a name's own cap beating its prefix's,
 * the longest prefix winning, removal, bad arguments), and the names'
 * controls under check and salvage:
 * check finds a capped name's count of held claims that is not its
 * claims, a name kept under another lane, and a meta count of controlled
 * names that is not theirs (each made by writing the board's LMDB
 * directly, in a child: the count claim-next trusts), and bytes in a
 * lane's value that are no name's entry; salvage copies the
 * pauses and caps of names and the board's pause, with the held counts
 * counted afresh (store/names.h).
 */
#include "helpers.h"
#include "store/names.h"

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char lines[4096];
} check_report;

static void collect(const char *line, void *payload) {
  check_report *r = payload;
  size_t n = strlen(r->lines);
  snprintf(r->lines + n, sizeof r->lines - n, "%s\n", line);
}

/* Check's report of the board (its return code to *rc). */
static void check_board(jb_board *b, int *rc, check_report *r) {
  memset(r, 0, sizeof *r);
  *rc = jb_board_check(NULL, b, collect, r);
}

/* What to damage, in a child that opens the LMDB environment itself (the
 * parent has closed its handle). */
typedef enum { HELD_TOO_HIGH, WRONG_LANE, CTL_COUNT, GARBLED } damage_kind;
typedef struct {
  const char *dir;
  damage_kind kind;
} damage;

static int do_damage(void *arg) {
  const damage *d = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi queues, meta;
  if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 32) ||
      mdb_env_open(env, d->dir, 0, 0644) || mdb_txn_begin(env, NULL, 0, &txn))
    return 1;
  if (mdb_dbi_open(txn, JB_DB_QUEUES, 0, &queues) ||
      mdb_dbi_open(txn, JB_DB_META, 0, &meta))
    return 2;
  uint32_t lane = jb__lane("api", 3);
  uint8_t lk[4] = {(uint8_t)(lane >> 24), (uint8_t)(lane >> 16),
                   (uint8_t)(lane >> 8), (uint8_t)lane};
  MDB_val k = {4, lk}, v;
  if (mdb_get(txn, queues, &k, &v) || v.mv_size != sizeof(jb_queuerec) + 3)
    return 3;
  uint8_t buf[sizeof(jb_queuerec) + 3];
  memcpy(buf, v.mv_data, sizeof buf);
  jb_queuerec q;
  memcpy(&q, buf, sizeof q);
  if (d->kind == HELD_TOO_HIGH) {
    q.held++;
    memcpy(buf, &q, sizeof q);
    MDB_val nv = {sizeof buf, buf};
    if (mdb_put(txn, queues, &k, &nv, 0)) return 4;
  } else if (d->kind == WRONG_LANE) {
    uint8_t other[4] = {lk[0], lk[1], lk[2], (uint8_t)(lk[3] ^ 1)};
    MDB_val ok = {4, other}, nv = {sizeof buf, buf};
    if (mdb_del(txn, queues, &k, NULL) || mdb_put(txn, queues, &ok, &nv, 0))
      return 5;
  } else if (d->kind == GARBLED) {
    uint8_t more[sizeof buf + 3];
    memcpy(more, buf, sizeof buf);
    memcpy(more + sizeof buf, "xyz", 3);
    MDB_val nv = {sizeof more, more};
    if (mdb_put(txn, queues, &k, &nv, 0)) return 8;
  } else {
    uint32_t ctl = 7;
    MDB_val mk = {sizeof JB_QUEUECTL_KEY - 1, JB_QUEUECTL_KEY},
            mv = {sizeof ctl, &ctl};
    if (mdb_put(txn, meta, &mk, &mv, 0)) return 6;
  }
  if (mdb_txn_commit(txn)) return 7;
  mdb_env_close(env);
  return 0;
}

/* A board with the name "api" capped at 2 holding one claim. */
static void capped_board(jbt_fixture *f) {
  jb_board *b = f->board;
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "api", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "api", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "api", 2), JB_OK);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  jbt_assert_check_ok(b);
}

static void damage_and_check(jbt_fixture *f, damage_kind kind,
                             const char *expect) {
  jb_board_close(f->board);
  f->board = NULL;
  damage d = {f->dir, kind};
  jbt_wait_ok(jbt_fork(do_damage, &d, 20), 20000);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  int rc;
  check_report r;
  check_board(f->board, &rc, &r);
  assert_int_equal(rc, JB_ECORRUPT);
  jbt_assert_contains(r.lines, expect);
}

static void check_finds_a_held_count_that_is_not_the_claims(void **state) {
  jbt_fixture *f = *state;
  capped_board(f);
  damage_and_check(f, HELD_TOO_HIGH,
                   "queues: the name 'api' counts 2 claim(s) held against "
                   "its cap of 2, but 1 are held");
}

static void check_finds_a_name_under_another_lane(void **state) {
  jbt_fixture *f = *state;
  capped_board(f);
  damage_and_check(f, WRONG_LANE, "queues: the name 'api' is kept under lane");
}

static void check_finds_a_wrong_count_of_controlled_names(void **state) {
  jbt_fixture *f = *state;
  capped_board(f);
  damage_and_check(f, CTL_COUNT, "queues: the meta record queuectl counts 7 "
                   "name(s) with a control, the names hold 1");
}

/* The held count follows every claim and its end: claim, consume, abandon,
 * a claim by uuid, claim-next; check agrees after each. */
static void check_finds_bytes_that_are_no_entry(void **state) {
  jbt_fixture *f = *state;
  capped_board(f);
  char expect[80];
  snprintf(expect, sizeof expect, "queues: lane %08x holds bytes that are "
           "not a name's entry", jb__lane("api", 3));
  damage_and_check(f, GARBLED, expect);
}

static void check_agrees_with_the_held_count_through_a_life(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u1[JB_UUID_STRLEN], u2[JB_UUID_STRLEN];
  jbt_post(u1, b, "api", JB_PRIORITY_NORMAL);
  jbt_post(u2, b, "api", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "other", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "api", 3), JB_OK);
  assert_int_equal(jb_pause(b, "other"), JB_OK);
  assert_int_equal(jb_claim(NULL, b, u1, "w", NULL), JB_OK);
  jbt_assert_check_ok(b);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL), JB_OK);
  jbt_assert_check_ok(b);
  assert_int_equal(jb_abandon(b, u1, "w", 0), JB_OK);
  jbt_assert_check_ok(b);
  assert_int_equal(jb_consume(b, u2, "w", 0, NULL), JB_OK);
  jbt_assert_check_ok(b);
}

/* Salvage the fixture's board (closed first) into a new board, opened as
 * the fixture's and checked; its path returned. */
static char *salvage_and_open(jbt_fixture *f) {
  jb_board_close(f->board);
  f->board = NULL;
  char *dst = jbt_path(f->dir, "salvaged");
  jb_salvage_stats st;
  assert_int_equal(jb_board_salvage(&st, f->dir, dst, NULL, NULL), JB_OK);
  f->board = jbt_open(dst, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(f->board);
  return dst;
}

static void close_salvaged(jbt_fixture *f, char *dst) {
  jb_board_close(f->board);
  f->board = NULL;
  jbt_rmtree(dst);
  free(dst);
}

typedef struct {
  int api_cap, api_held, api_paused, other_paused, seen;
  uint32_t other_rate;
  uint64_t other_period_ms;
} controls_seen;

static int see_controls(const jb_queue_info *q, void *arg) {
  controls_seen *c = arg;
  c->seen++;
  if (strcmp(q->name, "api") == 0) {
    c->api_cap = (int)q->cap;
    c->api_held = (int)q->held;
    c->api_paused = q->paused;
  } else if (strcmp(q->name, "other") == 0) {
    c->other_paused = q->paused;
    c->other_rate = q->rate;
    c->other_period_ms = q->period_ms;
  }
  return 0;
}

/* Salvage copies a cap (its held count counted from the copy's claims: the
 * source's claims do not come along), a paused name with a rate limit and
 * the board's pause; the copy passes check and claim-next honours them. */
static void salvage_copies_pauses_and_caps(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "api", JB_PRIORITY_NORMAL);
  for (int i = 0; i < 3; i++) jbt_post(NULL, b, "api", JB_PRIORITY_NORMAL);
  jbt_post(NULL, b, "other", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_set_cap(b, "api", 2), JB_OK);
  assert_int_equal(jb_pause(b, "other"), JB_OK);
  assert_int_equal(jb_set_rate(b, "other", 5, 60000), JB_OK);
  assert_int_equal(jb_pause(b, NULL), JB_OK);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  char *dst = salvage_and_open(f);
  b = f->board;
  controls_seen c = {0};
  int board_paused = 0;
  assert_int_equal(jb_queues_foreach(b, see_controls, &c, &board_paused),
                   JB_OK);
  assert_int_equal(c.seen, 2);
  assert_int_equal(board_paused, 1);
  assert_int_equal(c.api_cap, 2);
  assert_int_equal(c.api_paused, 0);
  assert_int_equal(c.other_paused, 1);
  assert_int_equal(c.other_rate, 5);
  assert_int_equal(c.other_period_ms, 60000);
  /* The board's pause holds until resumed; then the cap of 2 does. */
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", NULL),
                   JB_ENOTFOUND);
  assert_int_equal(jb_resume(b, NULL), JB_OK);
  const char *api[] = {"api"};
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.names = api;
  co.n_names = 1;
  int held_before = c.api_held;
  int took = 0;
  while (jb_claim_next(NULL, NULL, NULL, b, "w", &co) == JB_OK) took++;
  assert_int_equal(took, 2 - held_before);
  /* "other" stays paused. */
  const char *other[] = {"other"};
  co.names = other;
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, b, "w", &co),
                   JB_ENOTFOUND);
  jbt_assert_check_ok(b);
  close_salvaged(f, dst);
}

/* ------------------------------------------------------ caps per key */

/* Claim-next by `pattern` until nothing: how many it took. */
static int take_all(jb_board *b, const char *pattern) {
  const char *names[] = {pattern};
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  co.names = names;
  co.n_names = 1;
  int took = 0, rc;
  while ((rc = jb_claim_next(NULL, NULL, NULL, b, "w", &co)) == JB_OK) took++;
  assert_int_equal(rc, JB_ENOTFOUND);
  return took;
}

static void post_n(jb_board *b, const char *name, int n) {
  for (int i = 0; i < n; i++) jbt_post(NULL, b, name, JB_PRIORITY_NORMAL);
}

typedef struct {
  const char *name;
  uint32_t cap, held;
  int cap_each, found;
} one_queue;

static int find_queue(const jb_queue_info *q, void *arg) {
  one_queue *o = arg;
  if (strcmp(q->name, o->name) != 0) return 0;
  o->cap = q->cap;
  o->held = q->held;
  o->cap_each = q->cap_each;
  o->found = 1;
  return 0;
}

static one_queue queue_of(jb_board *b, const char *name) {
  one_queue o = {.name = name};
  assert_int_equal(jb_queues_foreach(b, find_queue, &o, NULL), JB_OK);
  assert_true(o.found);
  return o;
}

/* "r.*" at 2: each customer's name gets 2 claims at once, the names
 * posted later too; not 2 in all. */
static void a_prefix_caps_each_name_on_its_own(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "r.c1", 3);
  post_n(b, "r.c2", 3);
  post_n(b, "other", 3);
  assert_int_equal(jb_set_cap(b, "r.*", 2), JB_OK);
  assert_int_equal(take_all(b, "r.*"), 4);
  one_queue q = queue_of(b, "r.c1");
  assert_int_equal(q.cap, 2);
  assert_int_equal(q.held, 2);
  assert_int_equal(q.cap_each, 1);
  assert_int_equal(queue_of(b, "other").cap, 0);
  /* A new customer is capped from its first post. */
  post_n(b, "r.c3", 3);
  assert_int_equal(queue_of(b, "r.c3").cap, 2);
  assert_int_equal(take_all(b, "r.*"), 2);
  /* Other names are not touched. */
  assert_int_equal(take_all(b, "other"), 3);
  jbt_assert_check_ok(b);
  /* No more cap: the rest go. */
  assert_int_equal(jb_set_cap(b, "r.*", 0), JB_OK);
  assert_int_equal(queue_of(b, "r.c1").cap, 0);
  assert_int_equal(take_all(b, "r.*"), 3);
  jbt_assert_check_ok(b);
}

static int count_prefix(const char *prefix, uint32_t cap, void *arg) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 256 - n, "%s=%u;", prefix, cap);
  return 0;
}

/* A name's own cap beats its prefix's and `0` on it brings the prefix's
 * back; the longest capped prefix wins; the prefixes are listed. */
static void own_caps_and_longer_prefixes_win(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "r.c1", 5);
  post_n(b, "r.vip.c2", 5);
  assert_int_equal(jb_set_cap(b, "r.c1", 3), JB_OK);
  assert_int_equal(jb_set_cap(b, "r.*", 1), JB_OK);
  assert_int_equal(jb_set_cap(b, "r.vip.*", 4), JB_OK);
  one_queue q = queue_of(b, "r.c1");
  assert_int_equal(q.cap, 3);
  assert_int_equal(q.cap_each, 0);
  q = queue_of(b, "r.vip.c2");
  assert_int_equal(q.cap, 4);
  assert_int_equal(q.cap_each, 1);
  char list[256] = "";
  assert_int_equal(jb_cap_prefixes(b, count_prefix, list), JB_OK);
  assert_string_equal(list, "r.=1;r.vip.=4;");
  assert_int_equal(take_all(b, "r.*"), 7);
  /* Its own cap gone, r.c1 has its prefix's 1 (3 held: none more). */
  assert_int_equal(jb_set_cap(b, "r.c1", 0), JB_OK);
  q = queue_of(b, "r.c1");
  assert_int_equal(q.cap, 1);
  assert_int_equal(q.held, 3);
  assert_int_equal(q.cap_each, 1);
  assert_int_equal(take_all(b, "r.*"), 0);
  /* The longer prefix removed, r.vip.c2 falls under "r.*". */
  assert_int_equal(jb_set_cap(b, "r.vip.*", 0), JB_OK);
  assert_int_equal(queue_of(b, "r.vip.c2").cap, 1);
  list[0] = '\0';
  assert_int_equal(jb_cap_prefixes(b, count_prefix, list), JB_OK);
  assert_string_equal(list, "r.=1;");
  jbt_assert_check_ok(b);
}

/* "*" caps every name on its own; bad prefixes change nothing. */
static void every_name_and_bad_prefixes(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "a", 2);
  post_n(b, "b", 2);
  assert_int_equal(jb_set_cap(b, "\xff*", 1), JB_EINVAL);
  char list[256] = "";
  assert_int_equal(jb_cap_prefixes(b, count_prefix, list), JB_OK);
  assert_string_equal(list, "");
  assert_int_equal(jb_set_cap(b, "*", 1), JB_OK);
  assert_int_equal(take_all(b, "*"), 2);
  /* At most 256 prefixes. */
  for (int i = 0; i < 255; i++) {
    char p[16];
    snprintf(p, sizeof p, "p%d.*", i);
    assert_int_equal(jb_set_cap(b, p, 1), JB_OK);
  }
  assert_int_equal(jb_set_cap(b, "one-more.*", 1), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "at most 256");
  /* Setting one already there, or removing one, still works. */
  assert_int_equal(jb_set_cap(b, "p3.*", 2), JB_OK);
  assert_int_equal(jb_set_cap(b, "p3.*", 0), JB_OK);
  assert_int_equal(jb_set_cap(b, "one-more.*", 1), JB_OK);
  assert_int_equal(jb_cap_prefixes(NULL, count_prefix, list), JB_EINVAL);
  jbt_assert_check_ok(b);
}

/* Salvage copies the prefixes with the names' caps: a name posted on the
 * copy later is capped too. */
static void salvage_copies_the_prefixes(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  post_n(b, "r.c1", 3);
  /* A name whose jobs are all gone keeps its cap too. */
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "r.gone", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(b, u, "w", 0, NULL), JB_OK);
  assert_int_equal(jb_set_cap(b, "r.*", 1), JB_OK);
  char *dst = salvage_and_open(f);
  b = f->board;
  one_queue q = queue_of(b, "r.c1");
  assert_int_equal(q.cap, 1);
  assert_int_equal(q.cap_each, 1);
  assert_int_equal(queue_of(b, "r.gone").cap, 1);
  post_n(b, "r.c2", 3);
  assert_int_equal(take_all(b, "r.*"), 2);
  jbt_assert_check_ok(b);
  close_salvaged(f, dst);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(check_finds_a_held_count_that_is_not_the_claims),
      T(check_finds_a_name_under_another_lane),
      T(check_finds_a_wrong_count_of_controlled_names),
      T(check_finds_bytes_that_are_no_entry),
      T(check_agrees_with_the_held_count_through_a_life),
      T(salvage_copies_pauses_and_caps),
      T(a_prefix_caps_each_name_on_its_own),
      T(own_caps_and_longer_prefixes_win),
      T(every_name_and_bad_prefixes),
      T(salvage_copies_the_prefixes),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
