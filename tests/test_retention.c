/*
 * test_retention.c - retention (jb_retention(3)): the setting stored in
 * the board and read by every handle, whatever its options; bad input
 * refused with nothing changed; the dead letters pruned by count and by
 * age, oldest first, at most JB_RETAIN_PRUNE_MAX per commit, converging
 * from 100,000 letters; the history bounded by the stored setting; the
 * schema 9 -> 10 upgrade building the `deadage` index.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/txn.h"
#include "store/life.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The wall clock the board stamps letters with (jbt_now_us is
 * monotonic). */
static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static size_t dead_count(jb_board *b) {
  size_t n = 0;
  assert_int_equal(jb_dead_count(&n, b), JB_OK);
  return n;
}

static size_t history_count(jb_board *b) {
  size_t n = 0;
  assert_int_equal(jb_history_count(&n, b), JB_OK);
  return n;
}

/* One completion: a job posted, claimed and consumed (three commits; the
 * consume is the one that prunes). */
static void complete_one(jb_board *b) {
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "work", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(b, u, "w", 0, NULL), JB_OK);
}

/* A job trashed into the dead letters. */
static void trash_one(jb_board *b, char u[JB_UUID_STRLEN]) {
  jbt_post(u, b, "doomed", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_trash(b, u, "w", 0), JB_OK);
}

static void test_defaults_and_set(void **state) {
  jbt_fixture *f = *state;
  jb_retention st, eff;
  assert_int_equal(jb_board_get_retention(&st, &eff, f->board), JB_OK);
  jb_retention zero = {0};
  assert_memory_equal(&st, &zero, sizeof st);
  assert_int_equal(eff.history_max, JB_RETAIN_HISTORY_MAX_DEFAULT);
  assert_int_equal(eff.history_max_age_ms, JB_RETAIN_HISTORY_AGE_DEFAULT_MS);
  assert_int_equal(eff.dead_max, JB_RETAIN_DEAD_MAX_DEFAULT);
  assert_int_equal(eff.dead_max_age_ms, JB_RETAIN_DEAD_AGE_DEFAULT_MS);

  jb_retention r = {.history_max = 7, .dead_max = JB_RETAIN_NONE,
                    .dead_max_age_ms = 5000};
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_HISTORY_MAX |
                                                            JB_RETAIN_DEAD_MAX),
                   JB_OK);
  assert_int_equal(jb_board_get_retention(&st, &eff, f->board), JB_OK);
  assert_int_equal(st.history_max, 7);
  assert_int_equal(st.dead_max, JB_RETAIN_NONE);
  assert_int_equal(st.dead_max_age_ms, 0); /* not in the fields: kept */
  assert_int_equal(eff.history_max, 7);
  assert_int_equal(eff.dead_max, JB_RETAIN_NONE);
  assert_int_equal(eff.dead_max_age_ms, JB_RETAIN_DEAD_AGE_DEFAULT_MS);

  /* Bad input: refused, naming the field, and nothing changes. */
  jb_retention bad = {.history_max = -2};
  assert_int_equal(jb_board_set_retention(f->board, &bad, JB_RETAIN_ALL),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "history_max");
  bad = (jb_retention){.dead_max_age_ms = INT64_MAX};
  assert_int_equal(jb_board_set_retention(f->board, &bad, JB_RETAIN_DEAD_AGE),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "dead_max_age_ms");
  assert_int_equal(jb_board_set_retention(f->board, &r, 0), JB_EINVAL);
  assert_int_equal(jb_board_set_retention(f->board, &r, 16), JB_EINVAL);
  assert_int_equal(jb_board_set_retention(f->board, NULL, 1), JB_EINVAL);
  assert_int_equal(jb_board_get_retention(NULL, NULL, NULL), JB_EINVAL);
  jb_retention again;
  assert_int_equal(jb_board_get_retention(&again, NULL, f->board), JB_OK);
  assert_memory_equal(&again, &st, sizeof st);

  /* 0 puts a field back to its default. */
  r = (jb_retention){0};
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_ALL), JB_OK);
  assert_int_equal(jb_board_get_retention(&st, &eff, f->board), JB_OK);
  assert_memory_equal(&st, &zero, sizeof st);
  assert_int_equal(eff.dead_max, JB_RETAIN_DEAD_MAX_DEFAULT);
}

/* The stored setting is the board's: a handle opened with other history
 * options applies it, and one opened with none does not undo it. */
static void test_stored_wins_over_options(void **state) {
  jbt_fixture *f = *state;
  jb_retention r = {.history_max = 3, .dead_max = 2};
  assert_int_equal(jb_board_set_retention(
                       f->board, &r, JB_RETAIN_HISTORY_MAX | JB_RETAIN_DEAD_MAX),
                   JB_OK);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL; /* the fixture's: one per process */
  o.history_max = 1000;
  jb_board *w = NULL;
  assert_int_equal(jb_board_open(&w, f->dir, &o), JB_OK);
  jb_retention eff;
  assert_int_equal(jb_board_get_retention(NULL, &eff, w), JB_OK);
  assert_int_equal(eff.history_max, 3);
  char u[JB_UUID_STRLEN];
  for (int i = 0; i < 6; i++) trash_one(w, u);
  assert_int_equal(history_count(w), 3);
  assert_int_equal(dead_count(w), 2);
  jb_board_close(w);
  /* Without a stored bound, the handle's option applies (as before). */
  r = (jb_retention){0};
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_HISTORY_MAX),
                   JB_OK);
  o.history_max = 4;
  assert_int_equal(jb_board_open(&w, f->dir, &o), JB_OK);
  assert_int_equal(jb_board_get_retention(NULL, &eff, w), JB_OK);
  assert_int_equal(eff.history_max, 4);
  complete_one(w);
  assert_int_equal(history_count(w), 4);
  jb_board_close(w);
  jbt_assert_check_ok(f->board);
}

/* Dead letters made directly (many per transaction): letter i died at
 * base_us + i. */
typedef struct {
  size_t from, n;
  int64_t base_us;
} fill_ctx;

static void letter_uuid(uint8_t u[16], size_t i) {
  memset(u, 0, 16);
  u[0] = 0x42;
  for (int b = 0; b < 8; b++) u[15 - b] = (uint8_t)(i >> (8 * b));
}

static int fill_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  fill_ctx *c = vctx;
  for (size_t i = c->from; i < c->from + c->n; i++) {
    uint8_t u[16];
    letter_uuid(u, i);
    jb_trashrec tr = {.format = 2, .cause = JB_DEAD_TRASHED,
                      .posting_len = 1, .trashed_us = c->base_us + (int64_t)i,
                      .posted_us = c->base_us};
    uint8_t val[sizeof tr + 1];
    memcpy(val, &tr, sizeof tr);
    val[sizeof tr] = 0x80; /* the empty map */
    MDB_val k = {16, u}, v = {sizeof val, val};
    int rc = mdb_put(txn, s->trash, &k, &v, 0);
    if (rc == 0) rc = jb__deadage_put(s, txn, u, tr.trashed_us);
    if (rc) return rc;
  }
  return 0;
}

static void fill(jb_board *b, size_t n, int64_t base_us) {
  for (size_t from = 0; from < n; from += 10000) {
    fill_ctx c = {from, n - from < 10000 ? n - from : 10000, base_us};
    assert_int_equal(jb__store_write(b->store, fill_body, &c), JB_OK);
  }
}

/* 100,000 dead letters and a new low bound: each commit prunes at most
 * JB_RETAIN_PRUNE_MAX, the oldest first, and the count converges on the
 * bound. */
static void test_prune_bounded_per_commit(void **state) {
  jbt_fixture *f = *state;
  /* Durability none: some 5,000 commits follow. */
  jb_board_close(f->board);
  jb_board *b = f->board = jbt_open(f->dir, JB_DURABILITY_NONE, 0);
  const size_t n = 100000, keep = 10;
  int64_t base = wall_us() - 3600 * 1000000LL;
  fill(b, n, base);
  assert_int_equal(dead_count(b), n);
  /* Nothing to prune under the defaults' count... (10,000 kept) */
  jb_retention r = {.dead_max = JB_RETAIN_NONE};
  assert_int_equal(jb_board_set_retention(b, &r, JB_RETAIN_DEAD_MAX), JB_OK);
  assert_int_equal(dead_count(b), n);
  /* ...then a low bound: its own commit prunes one batch. */
  r.dead_max = (int64_t)keep;
  assert_int_equal(jb_board_set_retention(b, &r, JB_RETAIN_DEAD_MAX), JB_OK);
  size_t have = dead_count(b);
  assert_int_equal(have, n - JB_RETAIN_PRUNE_MAX);
  size_t commits = 0;
  while (have > keep) {
    complete_one(b);
    commits++;
    size_t now = dead_count(b);
    size_t want = have - keep > JB_RETAIN_PRUNE_MAX ? have - JB_RETAIN_PRUNE_MAX
                                                    : keep;
    if (now != want)
      fail_msg("completion %zu: %zu dead letters, not %zu", commits, now, want);
    have = now;
  }
  assert_int_equal(commits, (n - JB_RETAIN_PRUNE_MAX - keep +
                             JB_RETAIN_PRUNE_MAX - 1) / JB_RETAIN_PRUNE_MAX);
  /* The newest ones are kept. */
  for (size_t i = n - keep; i < n; i++) {
    uint8_t u[16];
    char t[JB_UUID_STRLEN];
    letter_uuid(u, i);
    jb__uuid_format(t, u);
    jb_dead_letter *d = NULL;
    if (jb_dead_get(&d, b, t) != JB_OK)
      fail_msg("letter %zu (%s) was pruned: %s", i, t, jb_errmsg());
    jb_dead_free(d);
  }
  complete_one(b);
  assert_int_equal(dead_count(b), keep);
  jbt_assert_check_ok(b);
}

/* The age bound: letters older than it go, oldest first, a batch per
 * completion; a newer one stays. */
static void test_prune_by_age(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = f->board;
  int64_t base = wall_us() - 3600 * 1000000LL; /* an hour ago */
  fill(b, 100, base);
  char fresh[JB_UUID_STRLEN];
  trash_one(b, fresh);
  assert_int_equal(dead_count(b), 101);
  jb_retention r = {.dead_max_age_ms = 60 * 1000};
  assert_int_equal(jb_board_set_retention(b, &r, JB_RETAIN_DEAD_AGE), JB_OK);
  assert_int_equal(dead_count(b), 101 - JB_RETAIN_PRUNE_MAX);
  complete_one(b);
  assert_int_equal(dead_count(b), 1);
  jb_dead_letter *d = NULL;
  assert_int_equal(jb_dead_get(&d, b, fresh), JB_OK);
  jb_dead_free(d);
  /* A requeue and a purge keep the index with the letters. */
  assert_int_equal(jb_dead_requeue(b, fresh, 0), JB_OK);
  assert_int_equal(dead_count(b), 0);
  trash_one(b, fresh);
  size_t purged = 0;
  assert_int_equal(jb_dead_purge(&purged, b, INT64_MAX), JB_OK);
  assert_int_equal(purged, 1);
  jbt_assert_check_ok(b);
}

/* The history: the stored count bound, reached by the set's own commit
 * and kept by every completion. */
static void test_history_bound(void **state) {
  jbt_fixture *f = *state;
  for (int i = 0; i < 20; i++) complete_one(f->board);
  assert_int_equal(history_count(f->board), 20);
  jb_retention r = {.history_max = 5};
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_HISTORY_MAX),
                   JB_OK);
  assert_int_equal(history_count(f->board), 5);
  complete_one(f->board);
  assert_int_equal(history_count(f->board), 5);
  r.history_max = JB_RETAIN_NONE;
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_HISTORY_MAX),
                   JB_OK);
  for (int i = 0; i < 3; i++) complete_one(f->board);
  assert_int_equal(history_count(f->board), 8);
}

/* Schema 9 -> 10: a board without `deadage` gets it, one entry per dead
 * letter, at its first open; retention then prunes them. */
static int to_schema9(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)vctx;
  (void)status;
  uint32_t schema = 9;
  MDB_val k = {6, "schema"}, v = {sizeof schema, &schema};
  int rc = mdb_drop(txn, s->deadage, 1);
  return rc ? rc : mdb_put(txn, s->meta, &k, &v, 0);
}

static void test_upgrade_builds_the_index(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  for (int i = 0; i < 5; i++) trash_one(f->board, u);
  assert_int_equal(jb__store_write(f->board->store, to_schema9, NULL), JB_OK);
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(f->board);
  jb_retention r = {.dead_max = 2};
  assert_int_equal(jb_board_set_retention(f->board, &r, JB_RETAIN_DEAD_MAX),
                   JB_OK);
  assert_int_equal(dead_count(f->board), 2);
  jb_dead_letter *d = NULL;
  assert_int_equal(jb_dead_get(&d, f->board, u), JB_OK); /* the newest */
  jb_dead_free(d);
  jbt_assert_check_ok(f->board);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults_and_set, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_stored_wins_over_options, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_prune_bounded_per_commit, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_prune_by_age, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_history_bound, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_upgrade_builds_the_index, jbt_setup,
                                      jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
