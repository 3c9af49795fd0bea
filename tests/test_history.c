/*
 * test_history.c - completion results and the history: consume with a
 * result and an outcome, trash and check's revocation recorded as such,
 * the history's bounds by count and by age (oldest dropped first, at most
 * 64 per write), its iteration both ways, records of every size kept
 * across its two tables (histends one page), a bad result that changes
 * nothing, the check of history records, the schema 2 -> 3 upgrade,
 * waiting for a job's completion across processes, and what a record
 * keeps to act on: the posting with its details and
 * book, the attempts, no result told from {}, format 1 records still
 * read, and the filters by ending, name and time.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/history.h"
#include "store/store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* {"rows": n, "ok": true} as msgpack. */
typedef struct {
  uint8_t b[32];
  size_t len;
} small_map;

static small_map result_map(uint8_t n) {
  small_map m = {{0x82, 0xa4, 'r', 'o', 'w', 's', 0, 0xa2, 'o', 'k', 0xc3},
                 11};
  m.b[6] = n & 0x7f; /* positive fixint */
  return m;
}

static void post_claim(char uuid[JB_UUID_STRLEN], jb_board *b, const char *name,
                       const char *who) {
  jbt_post(uuid, b, name, JB_PRIORITY_HIGH);
  int rc = jb_claim(NULL, b, uuid, who, NULL);
  if (rc != JB_OK) fail_msg("claim %s: %s", uuid, jb_errmsg());
}

static jb_completion *completion_of(jb_board *b, const char *uuid) {
  jb_completion *c = NULL;
  int rc = jb_job_completion(&c, b, uuid);
  if (rc != JB_OK)
    fail_msg("completion of %s: %s (%s)", uuid, jb_strerror(rc), jb_errmsg());
  assert_non_null(c);
  return c;
}

static jb_board *open_with(const char *dir, size_t max, int64_t age_ms) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.history_max = max;
  o.history_max_age_ms = age_ms;
  jb_board *b = NULL;
  int rc = jb_board_open(&b, dir, &o);
  if (rc != JB_OK) fail_msg("open: %s", jb_errmsg());
  return b;
}

static size_t history_count(jb_board *b) {
  size_t n = 0;
  assert_int_equal(jb_history_count(&n, b), JB_OK);
  return n;
}

/* Complete `n` jobs named prefix-i (consume with result {"rows": i}),
 * their uuids to `out` (may be NULL). */
static void complete_n(jb_board *b, int n, const char *prefix,
                       char (*out)[JB_UUID_STRLEN]) {
  for (int i = 0; i < n; i++) {
    char u[JB_UUID_STRLEN], name[64];
    snprintf(name, sizeof name, "%s-%d", prefix, i);
    post_claim(u, b, name, "w");
    small_map m = result_map((uint8_t)(i % 100));
    int rc = jb_consume(b, u, "w", 0, &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, m.b, m.len});
    if (rc != JB_OK) fail_msg("consume %s: %s", name, jb_errmsg());
    if (out) memcpy(out[i], u, JB_UUID_STRLEN);
  }
}

/* Posts "resize" and claims it as "worker-7", then consumes it with the
 * result {"rows": 42}; the job's sequence, created and claim times as it
 * was on the board go to *seq, *posted and *claimed. */
static void consume_resize_with_a_result(jbt_fixture *f,
                                         char u[JB_UUID_STRLEN],
                                         uint64_t *seq, int64_t *posted,
                                         int64_t *claimed) {
  post_claim(u, f->board, "resize", "worker-7");
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  *seq = jb_job_sequence(job);
  *posted = jb_job_created(job);
  *claimed = jb_job_modified(job);
  jb_job_free(job);
  small_map m = result_map(42);
  assert_int_equal(jb_consume(f->board, u, "worker-7", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, m.b, m.len}),
                   JB_OK);
}

static void a_consumed_job_is_complete(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t seq;
  int64_t posted, claimed;
  consume_resize_with_a_result(f, u, &seq, &posted, &claimed);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_COMPLETE);
}

static void a_result_round_trips_with_owner_name_and_times(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t seq;
  int64_t posted, claimed;
  consume_resize_with_a_result(f, u, &seq, &posted, &claimed);
  small_map m = result_map(42);
  jb_completion *c = completion_of(f->board, u);
  assert_string_equal(c->uuid, u);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_string_equal(jb_end_name(c->end), "consumed");
  assert_string_equal(c->name, "resize");
  assert_string_equal(c->owner, "worker-7");
  assert_int_equal(c->priority, JB_PRIORITY_HIGH);
  assert_int_equal(c->sequence, seq);
  assert_int_equal(c->result_len, m.len);
  assert_memory_equal(c->result, m.b, m.len);
  assert_null(c->reason);
  /* Posted and claimed as the job said; completed after both. */
  assert_int_equal(c->posted_us, posted);
  assert_int_equal(c->claimed_us, claimed);
  assert_true(c->completed_us >= c->claimed_us);
  assert_true(c->claimed_us >= c->posted_us);
  jb_completion_free(c);
}

static void a_consume_writes_one_history_record(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t seq;
  int64_t posted, claimed;
  consume_resize_with_a_result(f, u, &seq, &posted, &claimed);
  assert_int_equal(history_count(f->board), 1);
  jbt_assert_check_ok(f->board);
}

static void a_failed_outcome_is_recorded_as_failed(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "flaky", "w");
  small_map m = result_map(1);
  assert_int_equal(jb_consume(f->board, u, "w", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, m.b, m.len}),
                   JB_OK);
  jb_completion *c = completion_of(f->board, u);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_string_equal(jb_end_name(c->end), "failed");
  assert_memory_equal(c->result, m.b, m.len);
  jb_completion_free(c);
}

/* Consumed with the token of a same-owner re-claim and no result. */
static void a_plain_consume_is_recorded_with_an_empty_result(void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN];
  post_claim(a, f->board, "plain", "w");
  uint64_t token = 0;
  assert_int_equal(jb_claim(&token, f->board, a, "w", NULL),
                   JB_ECLAIMED);
  assert_int_equal(jb_consume(f->board, a, "w", token, NULL), JB_OK);
  jb_completion *c = completion_of(f->board, a);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_int_equal(c->result_len, 1);
  assert_int_equal(((const uint8_t *)c->result)[0], 0x80);
  jb_completion_free(c);
}

static void a_trash_is_recorded_as_trashed_with_an_empty_result(
    void **state) {
  jbt_fixture *f = *state;
  char t[JB_UUID_STRLEN];
  post_claim(t, f->board, "poison", "admin");
  assert_int_equal(jb_trash(f->board, t, "admin", 0), JB_OK);
  jb_completion *c = completion_of(f->board, t);
  assert_int_equal(c->end, JB_END_TRASHED);
  assert_string_equal(jb_end_name(c->end), "trashed");
  assert_string_equal(c->owner, "admin");
  assert_string_equal(c->name, "poison");
  assert_int_equal(((const uint8_t *)c->result)[0], 0x80);
  jb_completion_free(c);
}

/* Abandon completes nothing. */
static void an_abandon_writes_no_history_record(void **state) {
  jbt_fixture *f = *state;
  char b[JB_UUID_STRLEN];
  post_claim(b, f->board, "back", "w");
  assert_int_equal(jb_abandon(f->board, b, "w", 0), JB_OK);
  assert_int_equal(history_count(f->board), 0);
}

static void completion_of_a_job_on_the_board_says_it_is_there(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "waiting", JB_PRIORITY_NORMAL);
  jb_completion *c = (jb_completion *)1;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_ENOTFOUND);
  assert_null(c);
  jbt_assert_contains(jb_errmsg(), "on the board");
}

static void completion_of_a_job_never_seen_says_so(void **state) {
  jbt_fixture *f = *state;
  jb_completion *c = (jb_completion *)1;
  assert_int_equal(jb_job_completion(&c, f->board,
                                     "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "neither on the board nor in its history");
}

static void completion_of_a_malformed_uuid_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_completion *c = (jb_completion *)1;
  assert_int_equal(jb_job_completion(&c, f->board, "not-a-uuid"), JB_EINVAL);
}

static void completion_without_an_out_parameter_is_invalid(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "waiting", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_job_completion(NULL, f->board, u), JB_EINVAL);
}

/* ------------------------------------------------------------ bad input */

#define EXPECT_REFUSED(f, needle, call)                                        \
  do {                                                                         \
    jbt_snapshot before_, after_;                                              \
    jbt_snapshot_take(&before_, (f)->board);                                   \
    int rc_ = (call);                                                          \
    if (rc_ != JB_EINVAL)                                                      \
      fail_msg("%s returned %s, expected JB_EINVAL (%s)", #call,               \
               jb_strerror(rc_), jb_errmsg());                                 \
    jbt_assert_contains(jb_errmsg(), (needle));                                \
    jbt_snapshot_take(&after_, (f)->board);                                    \
    jbt_snapshot_assert_same(&before_, &after_);                               \
    jbt_snapshot_free(&before_);                                               \
    jbt_snapshot_free(&after_);                                                \
  } while (0)

static void a_result_that_is_not_one_whole_map_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "careful", "w");
  static const uint8_t not_map[] = {0x01};
  static const uint8_t truncated[] = {0x82, 0xa1, 'a'};
  static const uint8_t trailing[] = {0x80, 0x01};
  static const uint8_t garbage[] = {0xc1};
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, not_map, sizeof not_map}));
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, truncated, sizeof truncated}));
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, trailing, sizeof trailing}));
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, garbage, sizeof garbage}));
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 3}));
}

static void an_unknown_outcome_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "careful", "w");
  EXPECT_REFUSED(f, "outcome", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, (jb_outcome)7, NULL, 0}));
}

/* Larger than the board's max_posting (a handle that says 256). */
static void a_result_larger_than_max_posting_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "careful", "w");
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.max_posting = 256;
  jb_board *small = NULL;
  assert_int_equal(jb_board_open(&small, f->dir, &o), JB_OK);
  jbt_buf big = jbt_details_blob(300, 1);
  EXPECT_REFUSED(f, "limit", jb_consume(small, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, big.data, big.len}));
  jbt_buf_free(&big);
  jb_board_close(small);
}

/* Still claimed by w, and no record: then a good result goes in. */
static void a_job_whose_result_was_refused_takes_a_good_one(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "careful", "w");
  static const uint8_t not_map[] = {0x01};
  EXPECT_REFUSED(f, "result", jb_consume(f->board, u, "w", 0,
                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, not_map, sizeof not_map}));
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, u), JB_OK);
  assert_string_equal(owner, "w");
  assert_int_equal(history_count(f->board), 0);
  assert_int_equal(jb_consume(f->board, u, "w", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0}),
                   JB_OK);
  assert_int_equal(history_count(f->board), 1);
}

static void a_refused_consume_writes_no_record(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "mine", "owner");
  small_map m = result_map(3);
  assert_int_equal(jb_consume(f->board, u, "thief", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, m.b, m.len}),
                   JB_ENOTOWNER);
  assert_int_equal(jb_consume(f->board, u, "owner", 999999,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, m.b, m.len}),
                   JB_ENOTOWNER);
  assert_int_equal(history_count(f->board), 0);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_ENOTFOUND);
}

/* --------------------------------------------------------------- bounds */

static void the_count_bound_drops_the_oldest(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = open_with(f->dir, 3, 0);
  char u[5][JB_UUID_STRLEN];
  complete_n(b, 5, "job", u);
  assert_int_equal(history_count(b), 3);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, u[0]), JB_ENOTFOUND);
  assert_int_equal(jb_job_completion(&c, b, u[1]), JB_ENOTFOUND);
  for (int i = 2; i < 5; i++) {
    c = completion_of(b, u[i]);
    jb_completion_free(c);
  }
  jb_board_close(b);
  jbt_assert_check_ok(f->board);
}

static void the_age_bound_drops_old_records(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = open_with(f->dir, 0, 150);
  char old[2][JB_UUID_STRLEN], fresh[1][JB_UUID_STRLEN];
  complete_n(b, 2, "old", old);
  sleep_ms(300);
  complete_n(b, 1, "fresh", fresh);
  assert_int_equal(history_count(b), 1);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, old[0]), JB_ENOTFOUND);
  assert_int_equal(jb_job_completion(&c, b, old[1]), JB_ENOTFOUND);
  c = completion_of(b, fresh[0]);
  jb_completion_free(c);
  jb_board_close(b);
}

/* The default age (7 days) keeps records the 150 ms bound above drops. */
static void the_default_age_bound_keeps_them_all(void **state) {
  jbt_fixture *f = *state;
  complete_n(f->board, 2, "old", NULL);
  sleep_ms(300);
  complete_n(f->board, 3, "kept", NULL);
  assert_int_equal(history_count(f->board), 5);
}

static void a_write_trims_at_most_64_records(void **state) {
  jbt_fixture *f = *state;
  complete_n(f->board, 100, "many", NULL);
  assert_int_equal(history_count(f->board), 100);
  jb_board *b = open_with(f->dir, 10, 0);
  complete_n(b, 1, "one", NULL);
  assert_int_equal(history_count(b), 100 + 1 - 64);
  complete_n(b, 1, "two", NULL);
  assert_int_equal(history_count(b), 10);
  jb_board_close(b);
  jbt_assert_check_ok(f->board);
}

/* Walks the history of N_ITER records completed in the order of u[],
 * newest first (oldest_first false) or oldest first: each record once,
 * in order of history_seq, and at the end it stays at the end. */
enum { N_ITER = 75 }; /* more than one batch */
static void assert_iterates(jbt_fixture *f, char (*u)[JB_UUID_STRLEN],
                            int oldest_first) {
  jb_history_iter *it = NULL;
  assert_int_equal(jb_history_query(&it, f->board, &(jb_history_options){.version = JB_HISTORY_OPTIONS_VERSION, .flags = oldest_first ? JB_HISTORY_OLDEST_FIRST : 0}),
                   JB_OK);
  const jb_completion *c;
  int i = 0;
  uint64_t prev = 0;
  while (jb_history_next(&c, it) == JB_OK && c != NULL) {
    assert_true(i < N_ITER);
    int want = oldest_first ? i : N_ITER - 1 - i;
    assert_string_equal(c->uuid, u[want]);
    if (i > 0)
      assert_true(oldest_first ? c->history_seq > prev : c->history_seq < prev);
    prev = c->history_seq;
    i++;
  }
  assert_int_equal(i, N_ITER);
  /* At the end it stays at the end. */
  assert_int_equal(jb_history_next(&c, it), JB_OK);
  assert_null(c);
  jb_history_close(it);
}

static void the_history_iterates_newest_first(void **state) {
  jbt_fixture *f = *state;
  char u[N_ITER][JB_UUID_STRLEN];
  complete_n(f->board, N_ITER, "it", u);
  assert_iterates(f, u, 0);
}

static void the_history_iterates_oldest_first_when_asked(void **state) {
  jbt_fixture *f = *state;
  char u[N_ITER][JB_UUID_STRLEN];
  complete_n(f->board, N_ITER, "it", u);
  assert_iterates(f, u, 1);
}

static void a_history_query_with_unknown_flags_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_history_iter *it = NULL;
  assert_int_equal(jb_history_query(&it, f->board, &(jb_history_options){.version = JB_HISTORY_OPTIONS_VERSION, .flags = 0x10}), JB_EINVAL);
  assert_null(it);
}

/* ------------------------------------------------ raw LMDB in a child */

typedef enum {
  RAW_CORRUPT_POSTING, /* replace the posting of `uuid`, keep its header */
  RAW_SCHEMA_2,        /* drop the history tables, schema 2 */
  RAW_SCHEMA_IS_CURRENT, /* exit 0 iff meta says JB_SCHEMA_VERSION */
  RAW_BREAK_HISTORY,   /* the first history record gets format 9 */
  RAW_ENDS_ONE_PAGE,   /* exit 0 iff histends is at most one page */
  RAW_COPY_TO_HISTORY, /* histends' first record copied into history too */
  RAW_SPLIT_ENDS,      /* histends' first and third records moved to history */
} raw_op;

typedef struct {
  raw_op op;
  const char *dir;
  const char *uuid;
} raw_args;

static int raw_child(void *arg) {
  raw_args *a = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi jobs, meta, hist;
  if (mdb_env_create(&env)) return 101;
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_maxreaders(env, 1022);
  if (mdb_env_open(env, a->dir, 0, 0644)) return 102;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 103;
  if (mdb_dbi_open(txn, JB_DB_JOBS, 0, &jobs) ||
      mdb_dbi_open(txn, JB_DB_META, 0, &meta))
    return 104;
  if (a->op == RAW_CORRUPT_POSTING) {
    uint8_t u[16];
    if (jb__uuid_parse(u, a->uuid, "uuid")) return 121;
    MDB_val k = {16, u}, v;
    if (mdb_get(txn, jobs, &k, &v)) return 105;
    static const uint8_t bad[] = {0x83, 0xa4, 'u', 'u', 'i', 'd', 0xc1};
    uint8_t buf[sizeof(jb_jobhdr) + sizeof bad];
    memcpy(buf, v.mv_data, sizeof(jb_jobhdr));
    memcpy(buf + sizeof(jb_jobhdr), bad, sizeof bad);
    MDB_val nv = {sizeof buf, buf};
    if (mdb_put(txn, jobs, &k, &nv, 0)) return 106;
  } else if (a->op == RAW_SCHEMA_2) {
    MDB_dbi ends;
    if (mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist) ||
        mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends))
      return 107;
    if (mdb_drop(txn, hist, 1) || mdb_drop(txn, ends, 1)) return 108;
    uint32_t two = 2;
    MDB_val k = {6, "schema"}, v = {sizeof two, &two};
    if (mdb_put(txn, meta, &k, &v, 0)) return 109;
  } else if (a->op == RAW_ENDS_ONE_PAGE) {
    MDB_dbi ends;
    MDB_stat st;
    if (mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends) ||
        mdb_stat(txn, ends, &st))
      return 117;
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return st.ms_depth <= 1 && st.ms_branch_pages == 0 &&
                   st.ms_overflow_pages == 0 && st.ms_leaf_pages <= 1
               ? 0
               : 118;
  } else if (a->op == RAW_COPY_TO_HISTORY) {
    MDB_dbi ends;
    MDB_cursor *cur;
    MDB_val k, v;
    if (mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist) ||
        mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends) ||
        mdb_cursor_open(txn, ends, &cur) ||
        mdb_cursor_get(cur, &k, &v, MDB_FIRST))
      return 119;
    uint8_t key[9], val[4096];
    if (k.mv_size != sizeof key || v.mv_size > sizeof val) return 122;
    memcpy(key, k.mv_data, sizeof key);
    memcpy(val, v.mv_data, v.mv_size);
    mdb_cursor_close(cur);
    MDB_val nk = {sizeof key, key}, nv = {v.mv_size, val};
    if (mdb_put(txn, hist, &nk, &nv, MDB_NOOVERWRITE)) return 123;
  } else if (a->op == RAW_SPLIT_ENDS) {
    /* history then holds 1 and 3, histends 2: inside history's span. */
    MDB_dbi ends;
    if (mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist) ||
        mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends))
      return 119;
    for (uint64_t seq = 1; seq <= 3; seq += 2) {
      uint8_t key[9], val[4096];
      key[0] = 's';
      for (int i = 0; i < 8; i++) key[1 + i] = (uint8_t)(seq >> (56 - 8 * i));
      MDB_val k = {sizeof key, key}, v;
      if (mdb_get(txn, ends, &k, &v) || v.mv_size > sizeof val) return 124;
      memcpy(val, v.mv_data, v.mv_size);
      MDB_val nv = {v.mv_size, val};
      if (mdb_del(txn, ends, &k, NULL) ||
          mdb_put(txn, hist, &k, &nv, MDB_NOOVERWRITE))
        return 125;
    }
  } else if (a->op == RAW_SCHEMA_IS_CURRENT) {
    MDB_val k = {6, "schema"}, v;
    uint32_t schema = 0;
    if (mdb_get(txn, meta, &k, &v) || v.mv_size != 4) return 110;
    memcpy(&schema, v.mv_data, 4);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return schema == JB_SCHEMA_VERSION ? 0 : 111;
  } else {
    /* The oldest record: in `histends` (the head) or `history`. */
    MDB_dbi ends;
    if (mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist) ||
        mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends))
      return 112;
    MDB_cursor *cur = NULL, *c2;
    MDB_val k, v;
    for (int t = 0; t < 2; t++) {
      MDB_val k2 = {1, "s"}, v2;
      if (mdb_cursor_open(txn, t ? ends : hist, &c2)) return 113;
      if (mdb_cursor_get(c2, &k2, &v2, MDB_SET_RANGE) == 0 &&
          (cur == NULL || memcmp(k2.mv_data, k.mv_data, 9) < 0)) {
        if (cur) mdb_cursor_close(cur);
        cur = c2;
        k = k2;
        v = v2;
      } else {
        mdb_cursor_close(c2);
      }
    }
    if (cur == NULL) return 114;
    uint8_t buf[4096];
    if (v.mv_size > sizeof buf) return 115;
    memcpy(buf, v.mv_data, v.mv_size);
    buf[0] = 9;
    MDB_val nv = {v.mv_size, buf};
    if (mdb_cursor_put(cur, &k, &nv, MDB_CURRENT)) return 116;
    mdb_cursor_close(cur);
  }
  if (mdb_txn_commit(txn)) return 120;
  mdb_env_close(env);
  return 0;
}

static void run_raw(raw_op op, const char *dir, const char *uuid) {
  raw_args a = {op, dir, uuid};
  jbt_wait_ok(jbt_fork(raw_child, &a, 20), 20000);
}

/* ------------------------------------------------------------- layout */

/* {"s": "xxx..."} with a string of `len` bytes, into buf. */
static size_t padded_map(uint8_t *buf, size_t len) {
  size_t n = 0;
  buf[n++] = 0x81;
  buf[n++] = 0xa1;
  buf[n++] = 's';
  if (len < 32) {
    buf[n++] = (uint8_t)(0xa0 | len);
  } else if (len < 256) {
    buf[n++] = 0xd9;
    buf[n++] = (uint8_t)len;
  } else {
    buf[n++] = 0xda;
    buf[n++] = (uint8_t)(len >> 8);
    buf[n++] = (uint8_t)len;
  }
  memset(buf + n, 'x', len);
  return n + len;
}

/* Walk the history both ways: exactly u[from..to), in order. */
static void assert_history_is(jb_board *b, char (*u)[JB_UUID_STRLEN],
                              size_t from, size_t to) {
  assert_int_equal(history_count(b), to - from);
  for (int pass = 0; pass < 2; pass++) {
    jb_history_iter *it = NULL;
    assert_int_equal(
        jb_history_query(&it, b, &(jb_history_options){.version = JB_HISTORY_OPTIONS_VERSION, .flags = pass ? JB_HISTORY_OLDEST_FIRST : 0}), JB_OK);
    const jb_completion *c;
    size_t i = 0;
    while (jb_history_next(&c, it) == JB_OK && c != NULL) {
      assert_true(i < to - from);
      assert_string_equal(c->uuid, u[pass ? from + i : to - 1 - i]);
      i++;
    }
    assert_int_equal(i, to - from);
    jb_history_close(it);
  }
}

/* Records of every size (the small ones kept in histends, the newest and
 * oldest, the big ones in history: history.h), completed one at a time
 * through a handle bound to SIZED_MAX records: after each, the history is
 * exactly the newest SIZED_MAX, in order, each found by uuid with its
 * result, and check finds it whole. Returns the handle. */
enum { SIZED_N = 400, SIZED_MAX = 57 };
static jb_board *complete_records_of_every_size(jbt_fixture *f) {
  static const size_t sizes[] = {0,   20,  120, 20,   700, 20,
                                 1100, 20, 40,  2500, 20,  9000};
  char(*u)[JB_UUID_STRLEN] = calloc(SIZED_N, JB_UUID_STRLEN);
  uint8_t *buf = malloc(10000);
  jb_board *b = open_with(f->dir, SIZED_MAX, 0);
  unsigned seed = 12;
  for (size_t i = 0; i < SIZED_N; i++) {
    /* Runs of small ones, so histends fills up between big ones. */
    seed = seed * 1103515245u + 12345u;
    size_t len = sizes[(seed >> 16) % 12];
    if (i % 100 < 60) len = 20 + i % 7;
    size_t n = padded_map(buf, len);
    post_claim(u[i], b, "sized", "w");
    assert_int_equal(jb_consume(b, u[i], "w", 0,
                                           &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, buf, n}),
                     JB_OK);
    size_t from = i + 1 > SIZED_MAX ? i + 1 - SIZED_MAX : 0;
    assert_history_is(b, u, from, i + 1);
    jb_completion *c = NULL;
    if (from > 0)
      assert_int_equal(jb_job_completion(&c, b, u[from - 1]), JB_ENOTFOUND);
    c = completion_of(b, u[from]);
    assert_int_equal(c->history_seq, from + 1);
    jb_completion_free(c);
    c = completion_of(b, u[i]);
    assert_int_equal(c->history_seq, i + 1);
    assert_int_equal(c->result_len, n);
    assert_memory_equal(c->result, buf, n);
    jb_completion_free(c);
    if (i % 50 == 0) jbt_assert_check_ok(b);
    if (i % 50 == 49) run_raw(RAW_ENDS_ONE_PAGE, f->dir, NULL);
  }
  free(buf);
  free(u);
  return b;
}

static void the_count_bound_keeps_exactly_the_newest_of_every_size(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = complete_records_of_every_size(f);
  jbt_assert_check_ok(b);
  run_raw(RAW_ENDS_ONE_PAGE, f->dir, NULL);
  jb_board_close(b);
}

/* A lower bound later: at most 64 go per write, down to it, from both
 * tables. */
static void a_lower_count_bound_later_trims_records_of_every_size_to_it(
    void **state) {
  jbt_fixture *f = *state;
  jb_board *b = complete_records_of_every_size(f);
  jb_board *low = open_with(f->dir, 5, 0);
  complete_n(low, 1, "low", NULL);
  assert_int_equal(history_count(low), 5);
  jbt_assert_check_ok(low);
  jb_board_close(low);
  jb_board_close(b);
}

/* `u`, claimed by "holder", gets a posting that does not decode (the
 * board closed meanwhile); `ok` stays fine. check runs once: its figures
 * go to *st. */
static void revoke_a_doomed_job(jbt_fixture *f, char u[JB_UUID_STRLEN],
                                jb_check_stats *st) {
  char ok[JB_UUID_STRLEN];
  post_claim(u, f->board, "doomed", "holder");
  jbt_post(ok, f->board, "fine", JB_PRIORITY_NORMAL);
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(RAW_CORRUPT_POSTING, f->dir, u);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(jb_board_check(st, f->board, NULL, NULL), JB_ECORRUPT);
}

static void check_revokes_an_undecodable_job_into_the_history(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_check_stats st;
  revoke_a_doomed_job(f, u, &st);
  assert_int_equal(st.moved, 1);
  assert_int_equal(st.history, 1);
  jb_completion *c = completion_of(f->board, u);
  assert_int_equal(c->end, JB_END_REVOKED);
  assert_string_equal(jb_end_name(c->end), "revoked");
  assert_non_null(c->reason);
  jbt_assert_contains(c->reason, u);
  assert_string_equal(c->owner, "holder");
  assert_null(c->name); /* the posting's name did not decode */
  assert_int_equal(c->priority, JB_PRIORITY_HIGH);
  assert_true(c->claimed_us > 0);
  jb_completion_free(c);
}

/* The change log says so too, last, with the claim's owner: watchers and
 * REMOVAL subscribers learn that the job left the board. */
static void a_revocation_is_logged_as_a_removal_with_the_owner(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_check_stats st;
  revoke_a_doomed_job(f, u, &st);
  uint64_t first = 0, next = 0;
  assert_int_equal(jb_log_bounds(&first, &next, f->board), JB_OK);
  jb_event ev[1];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, f->board, next - 1, 1), JB_OK);
  assert_int_equal(n, 1);
  assert_int_equal(ev[0].type, JB_EVENT_REVOKED);
  assert_string_equal(ev[0].uuid, u);
  assert_string_equal(ev[0].owner, "holder");
  assert_true((JB_EVENTS_REMOVAL & JB_EVENT_BIT(JB_EVENT_REVOKED)) != 0);
}

static void a_second_check_finds_the_revocation_record_well_formed(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_check_stats st;
  revoke_a_doomed_job(f, u, &st);
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.history, 1);
}

static void collect_line(const char *line, void *payload) {
  FILE *mem = payload;
  fprintf(mem, "%s\n", line);
}

/* Damage the fixture's board with `op` (closed meanwhile), and check it:
 * one problem, whose line contains `says`. */
static void damage_and_check(jbt_fixture *f, raw_op op, jb_check_stats *st,
                             const char *says) {
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(op, f->dir, NULL);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  char *lines = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&lines, &len);
  assert_int_equal(jb_board_check(st, f->board, collect_line, mem),
                   JB_ECORRUPT);
  fclose(mem);
  assert_int_equal(st->problems, 1);
  jbt_assert_contains(lines, says);
  free(lines);
}

/* One record, made not to decode; check reports just that. */
static void complete_one_and_break_it(jbt_fixture *f,
                                      char u[1][JB_UUID_STRLEN],
                                      jb_check_stats *st) {
  complete_n(f->board, 1, "broken", u);
  damage_and_check(f, RAW_BREAK_HISTORY, st,
                   "history: record 1 does not decode");
}

static void check_reports_a_history_record_that_does_not_decode(void **state) {
  jbt_fixture *f = *state;
  char u[1][JB_UUID_STRLEN];
  jb_check_stats st;
  complete_one_and_break_it(f, u, &st);
  assert_int_equal(st.history, 1);
}

static void completion_of_a_record_that_does_not_decode_is_corrupt(
    void **state) {
  jbt_fixture *f = *state;
  char u[1][JB_UUID_STRLEN];
  jb_check_stats st;
  complete_one_and_break_it(f, u, &st);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, f->board, u[0]), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), "history record 1");
}

static void check_reports_a_history_record_kept_twice(void **state) {
  jbt_fixture *f = *state;
  complete_n(f->board, 3, "twice", NULL);
  jb_check_stats st;
  damage_and_check(f, RAW_COPY_TO_HISTORY, &st,
                   "history: record 1 is in both history and histends");
}

/* Three records, the second left in histends between the other two moved
 * to history; check reports just that. */
static void complete_three_and_split_histends(jbt_fixture *f,
                                              char u[3][JB_UUID_STRLEN]) {
  complete_n(f->board, 3, "split", u);
  jb_check_stats st;
  damage_and_check(f, RAW_SPLIT_ENDS, &st,
                   "history: record 2 of histends lies inside history's "
                   "records 1..3");
}

/* A record of histends between two of history's: readers still merge
 * them in order, but the next move of the tail would leave it behind. */
static void check_reports_a_histends_record_inside_history(void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  complete_three_and_split_histends(f, u);
}

static void readers_still_see_a_histends_record_inside_history(void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  complete_three_and_split_histends(f, u);
  jb_completion *c = completion_of(f->board, u[1]);
  jb_completion_free(c);
  assert_int_equal(history_count(f->board), 3);
}

static void a_schema_2_board_is_upgraded_at_open(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "from-before", "w");
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(RAW_SCHEMA_2, f->dir, NULL);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  run_raw(RAW_SCHEMA_IS_CURRENT, f->dir, NULL);
  assert_int_equal(history_count(f->board), 0);
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  jb_completion *c = completion_of(f->board, u);
  assert_string_equal(c->name, "from-before");
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

static void version_1_board_options_are_still_accepted(void **state) {
  jbt_fixture *f = *state;
  /* What a program built against version 1 passes: no history fields. */
  struct {
    unsigned int version, flags;
    jb_durability durability;
    size_t map_size, max_posting;
  } v1 = {1, 0, JB_DURABILITY_NORMAL, 0, 0};
  jb_board *b = NULL;
  assert_int_equal(jb_board_open(&b, f->dir, (const jb_board_options *)&v1),
                   JB_OK);
  complete_n(b, 2, "v1", NULL);
  assert_int_equal(history_count(b), 2);
  jb_board_close(b);
}

static void a_negative_history_max_age_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b = (jb_board *)1;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.history_max_age_ms = -1;
  assert_int_equal(jb_board_open(&b, f->dir, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "history_max_age_ms");
  assert_null(b);
}

/* ------------------------------------------------------------ wait-done */

typedef struct {
  const char *dir;
  const char *uuid;
} consumer_args;

/* In another process: open the board, wait a little (the parent is then
 * asleep in its wait), consume with a result. */
static int consume_later(void *arg) {
  consumer_args *a = arg;
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 10;
  sleep_ms(300);
  small_map m = result_map(42);
  int rc = jb_consume(b, a->uuid, "far-worker", 0,
                                 &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, m.b, m.len});
  jb_board_close(b);
  return rc == JB_OK ? 0 : 11;
}

static void wait_done_returns_the_result_consumed_in_another_process(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "remote", "far-worker");
  consumer_args a = {f->dir, u};
  pid_t pid = jbt_fork(consume_later, &a, 30);
  int64_t t0 = jbt_now_ms();
  jb_completion *c = NULL;
  int rc = jb_job_wait_done(&c, f->board, u, 20000);
  int64_t took = jbt_now_ms() - t0;
  if (rc != JB_OK) fail_msg("wait-done: %s (%s)", jb_strerror(rc), jb_errmsg());
  jbt_wait_ok(pid, 20000);
  /* It slept until the other process's commit, and no longer. */
  assert_true(took >= 250);
  assert_true(took < 10000);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_string_equal(c->owner, "far-worker");
  small_map m = result_map(42);
  assert_int_equal(c->result_len, m.len);
  assert_memory_equal(c->result, m.b, m.len);
  jb_completion_free(c);
}

static void wait_done_on_a_completed_job_answers_at_once(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "remote", "far-worker");
  small_map m = result_map(42);
  assert_int_equal(jb_consume(f->board, u, "far-worker", 0,
                              &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, m.b, m.len}),
                   JB_OK);
  jb_completion *c = NULL;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_job_wait_done(&c, f->board, u, 20000), JB_OK);
  assert_true(jbt_now_ms() - t0 < 1000);
  assert_int_equal(c->end, JB_END_FAILED);
  jb_completion_free(c);
}

static void wait_done_on_a_never_posted_uuid_is_not_found_at_once(
    void **state) {
  jbt_fixture *f = *state;
  jbt_post(NULL, f->board, "other", JB_PRIORITY_NORMAL);
  jb_completion *c = (jb_completion *)1;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_job_wait_done(&c, f->board,
                                    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f",
                                    20000),
                   JB_ENOTFOUND);
  assert_true(jbt_now_ms() - t0 < 1000);
  assert_null(c);
  jbt_assert_contains(jb_errmsg(), "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f");
}

static void wait_done_of_a_malformed_uuid_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jb_completion *c = (jb_completion *)1;
  assert_int_equal(jb_job_wait_done(&c, f->board, "nope", 0), JB_EINVAL);
}

static void wait_done_without_an_out_parameter_is_invalid(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_job_wait_done(NULL, f->board,
                                    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f", 0),
                   JB_EINVAL);
}

static void wait_done_times_out_while_the_job_is_on_the_board(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "slow", "w");
  jb_completion *c = NULL;
  int64_t t0 = jbt_now_ms();
  assert_int_equal(jb_job_wait_done(&c, f->board, u, 200), JB_ETIMEDOUT);
  int64_t took = jbt_now_ms() - t0;
  assert_true(took >= 195 && took < 5000);
  assert_null(c);
  jbt_assert_contains(jb_errmsg(), u);
  /* Other commits (an abandon, a post) do not end it. */
  assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
  assert_int_equal(jb_job_wait_done(&c, f->board, u, 0), JB_ETIMEDOUT);
}

/* ---------------------------------------------------- what a record keeps */

/* {"path": "a.png"} */
static const uint8_t path_map[] = {0x81, 0xa4, 'p', 'a', 't', 'h',
                                   0xa5, 'a', '.', 'p', 'n', 'g'};
#define BOOK_UUID "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"

/* Post `name` with path_map and a book, claim it for "w"; its posting
 * bytes into *posting (malloc'ed) when not NULL. */
static void post_full(char u[JB_UUID_STRLEN], jb_board *b, const char *name,
                      void **posting, size_t *posting_len) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.details = path_map;
  p.details_len = sizeof path_map;
  p.book_name = "photos";
  p.book_uuid = BOOK_UUID;
  if (jb_job_post(u, b, &p) != JB_OK) fail_msg("post: %s", jb_errmsg());
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  if (posting == NULL) return;
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, u), JB_OK);
  const void *bytes = jb_job_posting(job, posting_len);
  *posting = malloc(*posting_len);
  assert_non_null(*posting);
  memcpy(*posting, bytes, *posting_len);
  jb_job_free(job);
}

static void assert_keeps_the_posting(const jb_completion *c,
                                     const void *posting, size_t len) {
  assert_non_null(c->posting);
  assert_int_equal(c->posting_len, len);
  assert_memory_equal(c->posting, posting, len);
  assert_int_equal(c->details_len, sizeof path_map);
  assert_memory_equal(c->details, path_map, sizeof path_map);
  assert_string_equal(c->book_name, "photos");
  assert_string_equal(c->book_uuid, BOOK_UUID);
  assert_int_equal(c->attempts, 0); /* nothing counts them yet */
}

/* Posts "resize" as post_full does and consumes it without a result; its
 * posting bytes into *posting (malloc'ed). */
static void consume_resize_without_a_result(jbt_fixture *f,
                                            char u[JB_UUID_STRLEN],
                                            void **posting, size_t *len) {
  post_full(u, f->board, "resize", posting, len);
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
}

static void a_record_keeps_the_posting_with_its_details_and_book(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  consume_resize_without_a_result(f, u, &posting, &len);
  jb_completion *c = completion_of(f->board, u);
  assert_string_equal(c->name, "resize");
  assert_keeps_the_posting(c, posting, len);
  jb_completion_free(c);
  free(posting);
  jbt_assert_check_ok(f->board);
}

/* No result given: said so, and the result reads as the empty map. */
static void a_record_of_a_consume_without_a_result_says_it_has_none(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  consume_resize_without_a_result(f, u, &posting, &len);
  jb_completion *c = completion_of(f->board, u);
  assert_false(c->has_result);
  assert_int_equal(c->result_len, 1);
  assert_int_equal(((const uint8_t *)c->result)[0], 0x80);
  jb_completion_free(c);
  free(posting);
}

static void the_history_iterator_hands_out_what_a_lookup_does(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  void *posting;
  size_t len;
  consume_resize_without_a_result(f, u, &posting, &len);
  jb_history_iter *it = NULL;
  const jb_completion *ic;
  assert_int_equal(jb_history_query(&it, f->board, NULL), JB_OK);
  assert_int_equal(jb_history_next(&ic, it), JB_OK);
  assert_non_null(ic);
  assert_keeps_the_posting(ic, posting, len);
  assert_false(ic->has_result);
  jb_history_close(it);
  free(posting);
}

static void no_result_is_told_from_an_explicit_empty_map(void **state) {
  jbt_fixture *f = *state;
  char none[JB_UUID_STRLEN], empty[JB_UUID_STRLEN], some[JB_UUID_STRLEN],
      trashed[JB_UUID_STRLEN];
  post_claim(none, f->board, "none", "w");
  post_claim(empty, f->board, "empty", "w");
  post_claim(some, f->board, "some", "w");
  post_claim(trashed, f->board, "trashed", "w");
  static const uint8_t empty_map = 0x80;
  small_map m = result_map(3);
  assert_int_equal(jb_consume(f->board, none, "w", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_FAILURE, NULL, 0}),
                   JB_OK);
  assert_int_equal(jb_consume(f->board, empty, "w", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, &empty_map, 1}),
                   JB_OK);
  assert_int_equal(jb_consume(f->board, some, "w", 0,
                                         &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, m.b, m.len}),
                   JB_OK);
  assert_int_equal(jb_trash(f->board, trashed, "w", 0), JB_OK);
  const struct {
    const char *uuid;
    bool has;
    size_t len;
  } want[] = {{none, false, 1}, {empty, true, 1}, {some, true, m.len},
              {trashed, false, 1}};
  for (size_t i = 0; i < 4; i++) {
    jb_completion *c = completion_of(f->board, want[i].uuid);
    assert_int_equal(c->has_result, want[i].has);
    assert_int_equal(c->result_len, want[i].len);
    jb_completion_free(c);
  }
  jbt_assert_check_ok(f->board);
}

/* A record written straight into the history in one write transaction:
 * format 1 as jobboard 0.1.0 wrote it (`posting` NULL), or through
 * jb__history_put. */
typedef struct {
  bool format_1;
  const uint8_t *uuid;
  const char *name;
  const void *posting;
  size_t posting_len;
  uint32_t attempts;
  int end;
  int64_t completed_us;
  size_t repeat; /* records of this kind (uuids counted up from `uuid`) */
} raw_record;

static int raw_record_body(jb_store *s, MDB_txn *txn, void *vctx,
                           int *status) {
  const raw_record *r = vctx;
  (void)status;
  for (size_t i = 0; i < (r->repeat ? r->repeat : 1); i++) {
    jb_hist_entry e = {.rec = {.end = (uint8_t)r->end,
                               .priority = JB_PRIORITY_NORMAL,
                               .job_seq = 1,
                               .posted_us = r->completed_us - 2,
                               .claimed_us = r->completed_us - 1,
                               .completed_us = r->completed_us},
                       .owner = "w", .owner_len = 1,
                       .name = r->name, .name_len = strlen(r->name),
                       .result = "\x81\xa1" "a\x01", .result_len = 4,
                       .posting = r->posting, .posting_len = r->posting_len,
                       .attempts = r->attempts};
    memcpy(e.rec.uuid, r->uuid, 16);
    e.rec.uuid[15] = (uint8_t)(e.rec.uuid[15] + i);
    if (!r->format_1) {
      int rc = jb__history_put(s, txn, &e, NULL, jb__now_us());
      if (rc) return rc;
      continue;
    }
    /* Format 1: the fixed part, owner, name, reason (none), result. */
    uint8_t val[512];
    e.rec.format = 1;
    e.rec.owner_len = 1;
    e.rec.name_len = (uint16_t)e.name_len;
    e.rec.result_len = 4;
    size_t n = sizeof e.rec;
    memcpy(val, &e.rec, n);
    memcpy(val + n, "w", 1);
    memcpy(val + n + 1, e.name, e.name_len);
    memcpy(val + n + 1 + e.name_len, e.result, 4);
    uint8_t key[9] = {'s'};
    key[8] = 1; /* hseq 1: an empty history's first record */
    MDB_val k = {sizeof key, key}, v = {n + 1 + e.name_len + 4, val};
    int rc = mdb_put(txn, s->histends, &k, &v, MDB_NOOVERWRITE);
    if (rc) return rc;
  }
  return 0;
}

static void write_raw(jb_board *b, const raw_record *r) {
  int rc = jb__store_write(b->store, raw_record_body, (void *)r);
  if (rc != JB_OK) fail_msg("raw record: %s", jb_errmsg());
}

static const char *const format_1_uuid = "0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b";

/* Writes a format 1 record of a job "old" (uuid format_1_uuid), consumed
 * now, into the fixture's empty history. */
static void write_a_format_1_record(jbt_fixture *f) {
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, format_1_uuid, "uuid"), JB_OK);
  raw_record r = {.format_1 = true, .uuid = raw, .name = "old",
                  .end = JB_END_CONSUMED, .completed_us = jb__now_us()};
  write_raw(f->board, &r);
}

static void a_format_1_record_still_reads(void **state) {
  jbt_fixture *f = *state;
  write_a_format_1_record(f);
  jb_completion *c = completion_of(f->board, format_1_uuid);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_string_equal(c->name, "old");
  assert_string_equal(c->owner, "w");
  assert_int_equal(c->result_len, 4);
  assert_memory_equal(c->result, "\x81\xa1" "a\x01", 4);
  assert_true(c->has_result); /* format 1 cannot tell: it kept a map */
  assert_null(c->posting);
  assert_int_equal(c->posting_len, 0);
  assert_null(c->details);
  assert_int_equal(c->details_len, 0);
  assert_null(c->book_name);
  assert_null(c->book_uuid);
  assert_int_equal(c->attempts, 0);
  assert_int_equal(c->history_seq, 1);
  jb_completion_free(c);
}

/* A format 2 record follows a format 1 one: both read, both pass check. */
static void a_newer_record_after_a_format_1_one_passes_check_with_it(
    void **state) {
  jbt_fixture *f = *state;
  write_a_format_1_record(f);
  char u[JB_UUID_STRLEN];
  post_full(u, f->board, "new", NULL, NULL);
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  assert_int_equal(history_count(f->board), 2);
  jbt_assert_check_ok(f->board);
}

static void a_filter_reads_the_name_of_a_format_1_record(void **state) {
  jbt_fixture *f = *state;
  write_a_format_1_record(f);
  char u[JB_UUID_STRLEN];
  post_full(u, f->board, "new", NULL, NULL);
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name = "old";
  jb_history_iter *it = NULL;
  const jb_completion *ic;
  assert_int_equal(jb_history_query(&it, f->board, &flt), JB_OK);
  assert_int_equal(jb_history_next(&ic, it), JB_OK);
  assert_non_null(ic);
  assert_string_equal(ic->uuid, format_1_uuid);
  assert_int_equal(jb_history_next(&ic, it), JB_OK);
  assert_null(ic);
  jb_history_close(it);
}

/* The writer is given seven attempts and the posting of a job posted by
 * post_full (into *posting, malloc'ed); returns an iterator at its
 * record, *c. */
static jb_history_iter *write_counted_record(jbt_fixture *f, void **posting,
                                             size_t *len,
                                             const jb_completion **c) {
  char u[JB_UUID_STRLEN];
  post_full(u, f->board, "counted", posting, len);
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, u, "uuid"), JB_OK);
  raw_record r = {.uuid = raw, .name = "counted", .posting = *posting,
                  .posting_len = *len, .attempts = 7, .end = JB_END_FAILED,
                  .completed_us = jb__now_us()};
  write_raw(f->board, &r);
  jb_history_iter *it = NULL;
  assert_int_equal(jb_history_query(&it, f->board, NULL), JB_OK);
  assert_int_equal(jb_history_next(c, it), JB_OK);
  assert_non_null(*c);
  return it;
}

static void the_attempts_given_to_the_writer_are_kept(void **state) {
  jbt_fixture *f = *state;
  void *posting;
  size_t len;
  const jb_completion *c;
  jb_history_iter *it = write_counted_record(f, &posting, &len, &c);
  assert_int_equal(c->attempts, 7);
  jb_history_close(it);
  free(posting);
}

static void a_posting_given_to_the_writer_is_kept_with_its_result(
    void **state) {
  jbt_fixture *f = *state;
  void *posting;
  size_t len;
  const jb_completion *c;
  jb_history_iter *it = write_counted_record(f, &posting, &len, &c);
  assert_true(c->has_result);
  assert_int_equal(c->posting_len, len);
  assert_memory_equal(c->posting, posting, len);
  assert_string_equal(c->book_name, "photos");
  jb_history_close(it);
  free(posting);
}

/* The uuids `filter` selects (NULL: all), in iteration order `flags`,
 * as indexes into u[0..n) appended to out[]; returns how many. */
static size_t select_(jb_board *b, unsigned flags,
                      const jb_history_options *filter,
                      char (*u)[JB_UUID_STRLEN], size_t n, size_t *out) {
  jb_history_iter *it = NULL;
  jb_history_options o = JB_HISTORY_OPTIONS_INIT;
  if (filter) o = *filter;
  o.flags = flags;
  assert_int_equal(jb_history_query(&it, b, &o), JB_OK);
  const jb_completion *c;
  size_t k = 0;
  while (jb_history_next(&c, it) == JB_OK && c != NULL) {
    size_t i = 0;
    while (i < n && strcmp(u[i], c->uuid) != 0) i++;
    assert_true(i < n);
    out[k++] = i;
  }
  jb_history_close(it);
  return k;
}

/* The filter selects exactly the indexes want[0..nwant) (oldest first),
 * both ways. */
static void assert_selects(jb_board *b, const jb_history_options *filter,
                           char (*u)[JB_UUID_STRLEN], size_t n,
                           const size_t *want, size_t nwant) {
  size_t got[16];
  assert_int_equal(select_(b, JB_HISTORY_OLDEST_FIRST, filter, u, n, got),
                   nwant);
  for (size_t i = 0; i < nwant; i++) assert_int_equal(got[i], want[i]);
  assert_int_equal(select_(b, 0, filter, u, n, got), nwant);
  for (size_t i = 0; i < nwant; i++)
    assert_int_equal(got[i], want[nwant - 1 - i]);
}

/* Six jobs: names a, b, ab, a, b, ab; consumed, failed, trashed in turn,
 * each at its own time (into done_us[], when not NULL). */
static void complete_six(jbt_fixture *f, char u[6][JB_UUID_STRLEN],
                         int64_t *done_us) {
  static const char *const names[] = {"a", "b", "ab", "a", "b", "ab"};
  for (int i = 0; i < 6; i++) {
    post_claim(u[i], f->board, names[i], "w");
    int rc = i % 3 == 2 ? jb_trash(f->board, u[i], "w", 0)
                        : jb_consume(f->board, u[i], "w", 0,
                                                &(jb_consume_options){JB_CONSUME_OPTIONS_VERSION, i % 3 ? JB_OUTCOME_FAILURE
                                                      : JB_OUTCOME_SUCCESS, NULL, 0});
    assert_int_equal(rc, JB_OK);
    jb_completion *c = completion_of(f->board, u[i]);
    if (done_us) done_us[i] = c->completed_us;
    jb_completion_free(c);
    sleep_ms(2); /* distinct completion times */
  }
}

static void an_empty_filter_or_none_selects_every_record(void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  complete_six(f, u, NULL);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  static const size_t all[] = {0, 1, 2, 3, 4, 5};
  assert_selects(f->board, &flt, u, 6, all, 6);
  assert_selects(f->board, NULL, u, 6, all, 6);
}

static void a_filter_by_ending_selects_the_records_of_those_endings(
    void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  complete_six(f, u, NULL);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.ends = JB_HISTORY_END(JB_END_FAILED);
  static const size_t failed[] = {1, 4};
  assert_selects(f->board, &flt, u, 6, failed, 2);
  flt.ends = JB_HISTORY_END(JB_END_CONSUMED) | JB_HISTORY_END(JB_END_TRASHED);
  static const size_t not_failed[] = {0, 2, 3, 5};
  assert_selects(f->board, &flt, u, 6, not_failed, 4);
  flt.ends = JB_HISTORY_END(JB_END_LOST) | JB_HISTORY_END(JB_END_REVOKED);
  assert_selects(f->board, &flt, u, 6, NULL, 0);
}

static void a_filter_by_name_selects_that_name_exactly(void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  complete_six(f, u, NULL);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name = "a";
  static const size_t named_a[] = {0, 3};
  assert_selects(f->board, &flt, u, 6, named_a, 2);
  flt.name = "abc";
  assert_selects(f->board, &flt, u, 6, NULL, 0);
}

static void a_filter_by_name_prefix_selects_the_names_it_begins(
    void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  complete_six(f, u, NULL);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name_prefix = "a";
  static const size_t prefix_a[] = {0, 2, 3, 5};
  assert_selects(f->board, &flt, u, 6, prefix_a, 4);
}

/* Time: since inclusive, until exclusive. */
static void a_filter_by_time_selects_from_since_up_to_until(void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  int64_t done_us[6];
  complete_six(f, u, done_us);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.since_us = done_us[2];
  static const size_t from_2[] = {2, 3, 4, 5};
  assert_selects(f->board, &flt, u, 6, from_2, 4);
  flt.until_us = done_us[4];
  static const size_t from_2_to_4[] = {2, 3};
  assert_selects(f->board, &flt, u, 6, from_2_to_4, 2);
  flt.since_us = 0;
  static const size_t to_4[] = {0, 1, 2, 3};
  assert_selects(f->board, &flt, u, 6, to_4, 4);
}

/* A record is selected only when every field of the filter holds: name
 * and prefix, name and ending, time and ending. */
static void a_filter_selects_what_all_its_fields_hold_for(void **state) {
  jbt_fixture *f = *state;
  char u[6][JB_UUID_STRLEN];
  int64_t done_us[6];
  complete_six(f, u, done_us);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name_prefix = "a";
  flt.name = "ab"; /* both hold */
  static const size_t named_ab[] = {2, 5};
  assert_selects(f->board, &flt, u, 6, named_ab, 2);
  flt.ends = JB_HISTORY_END(JB_END_TRASHED);
  assert_selects(f->board, &flt, u, 6, named_ab, 2);
  flt.ends = JB_HISTORY_END(JB_END_CONSUMED);
  assert_selects(f->board, &flt, u, 6, NULL, 0);
  flt = (jb_history_options)JB_HISTORY_OPTIONS_INIT;
  flt.until_us = done_us[4];
  flt.ends = JB_HISTORY_END(JB_END_FAILED);
  static const size_t failed_to_4[] = {1};
  assert_selects(f->board, &flt, u, 6, failed_to_4, 1);
}

/* More records than one read transaction looks at, with one needle in the
 * middle: hay, the needle, hay again. The needle's uuid goes to needle. */
static void write_hay_and_a_needle(jbt_fixture *f,
                                   char needle[JB_UUID_STRLEN]) {
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, "0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a00",
                                  "uuid"), JB_OK);
  int64_t now = jb__now_us();
  raw_record r = {.uuid = raw, .name = "hay", .end = JB_END_CONSUMED,
                  .completed_us = now, .repeat = JB_HIST_EXAMINE + 100};
  write_raw(f->board, &r);
  raw[14] = 1;
  r.name = "needle";
  r.repeat = 1;
  write_raw(f->board, &r);
  raw[14] = 2;
  r.name = "hay";
  r.repeat = JB_HIST_EXAMINE + 100;
  write_raw(f->board, &r);
  raw[14] = 1;
  jb__uuid_format(needle, raw);
}

/* The iterator goes on past batches that select none, both ways. */
static void a_filter_that_selects_few_streams_past_many(void **state) {
  jbt_fixture *f = *state;
  char needle[JB_UUID_STRLEN];
  write_hay_and_a_needle(f, needle);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name = "needle";
  for (int pass = 0; pass < 2; pass++) {
    jb_history_iter *it = NULL;
    const jb_completion *c;
    flt.flags = pass ? JB_HISTORY_OLDEST_FIRST : 0;
    assert_int_equal(jb_history_query(&it, f->board, &flt), JB_OK);
    assert_int_equal(jb_history_next(&c, it), JB_OK);
    assert_non_null(c);
    assert_string_equal(c->uuid, needle);
    assert_int_equal(jb_history_next(&c, it), JB_OK);
    assert_null(c);
    jb_history_close(it);
  }
}

static void a_filter_that_selects_most_of_many_streams_them_all(
    void **state) {
  jbt_fixture *f = *state;
  char needle[JB_UUID_STRLEN];
  write_hay_and_a_needle(f, needle);
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.name = "hay";
  jb_history_iter *it = NULL;
  const jb_completion *c;
  size_t n = 0;
  assert_int_equal(jb_history_query(&it, f->board, &flt), JB_OK);
  while (jb_history_next(&c, it) == JB_OK && c != NULL) n++;
  jb_history_close(it);
  assert_int_equal(n, 2 * (JB_HIST_EXAMINE + 100));
}

static void bad_filters_are_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jb_history_iter *it = (jb_history_iter *)1;
  jb_history_options flt = JB_HISTORY_OPTIONS_INIT;
  flt.version = 3;
  assert_int_equal(jb_history_query(&it, f->board, &flt),
                   JB_EINVAL);
  assert_null(it);
  jbt_assert_contains(jb_errmsg(), "version");
  flt = (jb_history_options)JB_HISTORY_OPTIONS_INIT;
  flt.ends = JB_HISTORY_END(0);
  assert_int_equal(jb_history_query(&it, f->board, &flt),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "ends: bit 0");
  flt.ends = JB_HISTORY_END(JB_END_FAILED) | JB_HISTORY_END(30);
  assert_int_equal(jb_history_query(&it, f->board, &flt),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "ends: bit 30");
  flt = (jb_history_options)JB_HISTORY_OPTIONS_INIT;
  char long_name[JB_NAME_MAX + 2];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  flt.name_prefix = long_name;
  assert_int_equal(jb_history_query(&it, f->board, &flt),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "name_prefix");
  flt = (jb_history_options)JB_HISTORY_OPTIONS_INIT;
  flt.since_us = 2000;
  flt.until_us = 2000;
  assert_int_equal(jb_history_query(&it, f->board, &flt),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "until_us");
  flt.until_us = 2001;
  flt.flags = 4;
  assert_int_equal(jb_history_query(&it, f->board, &flt), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "flags");
  flt.flags = 0;
  assert_int_equal(jb_history_query(&it, f->board, &flt), JB_OK);
  jb_history_close(it);
}

int main(void) {
  jbt_watchdog(240);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(a_consumed_job_is_complete),
      T(a_result_round_trips_with_owner_name_and_times),
      T(a_consume_writes_one_history_record),
      T(a_failed_outcome_is_recorded_as_failed),
      T(a_plain_consume_is_recorded_with_an_empty_result),
      T(a_trash_is_recorded_as_trashed_with_an_empty_result),
      T(an_abandon_writes_no_history_record),
      T(completion_of_a_job_on_the_board_says_it_is_there),
      T(completion_of_a_job_never_seen_says_so),
      T(completion_of_a_malformed_uuid_is_invalid),
      T(completion_without_an_out_parameter_is_invalid),
      T(a_result_that_is_not_one_whole_map_changes_nothing),
      T(an_unknown_outcome_changes_nothing),
      T(a_result_larger_than_max_posting_changes_nothing),
      T(a_job_whose_result_was_refused_takes_a_good_one),
      T(a_refused_consume_writes_no_record),
      T(the_count_bound_drops_the_oldest),
      T(the_age_bound_drops_old_records),
      T(the_default_age_bound_keeps_them_all),
      T(a_write_trims_at_most_64_records),
      T(the_count_bound_keeps_exactly_the_newest_of_every_size),
      T(a_lower_count_bound_later_trims_records_of_every_size_to_it),
      T(the_history_iterates_newest_first),
      T(the_history_iterates_oldest_first_when_asked),
      T(a_history_query_with_unknown_flags_is_invalid),
      T(check_revokes_an_undecodable_job_into_the_history),
      T(a_revocation_is_logged_as_a_removal_with_the_owner),
      T(a_second_check_finds_the_revocation_record_well_formed),
      T(check_reports_a_history_record_that_does_not_decode),
      T(completion_of_a_record_that_does_not_decode_is_corrupt),
      T(check_reports_a_history_record_kept_twice),
      T(check_reports_a_histends_record_inside_history),
      T(readers_still_see_a_histends_record_inside_history),
      T(a_schema_2_board_is_upgraded_at_open),
      T(version_1_board_options_are_still_accepted),
      T(a_negative_history_max_age_is_refused),
      T(wait_done_returns_the_result_consumed_in_another_process),
      T(wait_done_on_a_completed_job_answers_at_once),
      T(wait_done_on_a_never_posted_uuid_is_not_found_at_once),
      T(wait_done_of_a_malformed_uuid_is_invalid),
      T(wait_done_without_an_out_parameter_is_invalid),
      T(wait_done_times_out_while_the_job_is_on_the_board),
      T(a_record_keeps_the_posting_with_its_details_and_book),
      T(a_record_of_a_consume_without_a_result_says_it_has_none),
      T(the_history_iterator_hands_out_what_a_lookup_does),
      T(no_result_is_told_from_an_explicit_empty_map),
      T(a_format_1_record_still_reads),
      T(a_newer_record_after_a_format_1_one_passes_check_with_it),
      T(a_filter_reads_the_name_of_a_format_1_record),
      T(the_attempts_given_to_the_writer_are_kept),
      T(a_posting_given_to_the_writer_is_kept_with_its_result),
      T(an_empty_filter_or_none_selects_every_record),
      T(a_filter_by_ending_selects_the_records_of_those_endings),
      T(a_filter_by_name_selects_that_name_exactly),
      T(a_filter_by_name_prefix_selects_the_names_it_begins),
      T(a_filter_by_time_selects_from_since_up_to_until),
      T(a_filter_selects_what_all_its_fields_hold_for),
      T(a_filter_that_selects_few_streams_past_many),
      T(a_filter_that_selects_most_of_many_streams_them_all),
      T(bad_filters_are_refused_naming_the_field),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
