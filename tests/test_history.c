/*
 * test_history.c - completion results and the history: consume with a
 * result and an outcome, trash and check's revocation recorded as such,
 * the history's bounds by count and by age (oldest dropped first, at most
 * 64 per write), its iteration both ways, records of every size kept
 * across its two tables (histends one page), a bad result that changes
 * nothing, the check of history records, the schema 2 -> 3 upgrade, and
 * waiting for a job's completion across processes.
 */
#include "helpers.h"
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
  int rc = jb_job_claim(b, uuid, who);
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
    int rc = jb_job_consume_result(b, u, "w", 0, JB_OUTCOME_SUCCESS, m.b, m.len);
    if (rc != JB_OK) fail_msg("consume %s: %s", name, jb_errmsg());
    if (out) memcpy(out[i], u, JB_UUID_STRLEN);
  }
}

/* ------------------------------------------------------------- results */

static void a_result_round_trips_with_owner_name_and_times(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "resize", "worker-7");
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  uint64_t seq = jb_job_sequence(job);
  int64_t posted = jb_job_created(job), claimed = jb_job_modified(job);
  jb_job_free(job);
  small_map m = result_map(42);
  assert_int_equal(jb_job_consume_result(f->board, u, "worker-7", 0,
                                         JB_OUTCOME_SUCCESS, m.b, m.len),
                   JB_OK);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, f->board, u), JB_OK);
  assert_int_equal(st, JB_STATE_COMPLETE);
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
  assert_int_equal(history_count(f->board), 1);
  jb_completion_free(c);
  jbt_assert_check_ok(f->board);
}

static void a_failed_outcome_is_recorded_as_failed(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "flaky", "w");
  small_map m = result_map(1);
  assert_int_equal(jb_job_consume_result(f->board, u, "w", 0,
                                         JB_OUTCOME_FAILURE, m.b, m.len),
                   JB_OK);
  jb_completion *c = completion_of(f->board, u);
  assert_int_equal(c->end, JB_END_FAILED);
  assert_string_equal(jb_end_name(c->end), "failed");
  assert_memory_equal(c->result, m.b, m.len);
  jb_completion_free(c);
}

static void plain_consume_and_trash_are_recorded_with_an_empty_result(
    void **state) {
  jbt_fixture *f = *state;
  char a[JB_UUID_STRLEN], t[JB_UUID_STRLEN];
  post_claim(a, f->board, "plain", "w");
  post_claim(t, f->board, "poison", "admin");
  uint64_t token = 0;
  assert_int_equal(jb_job_claim_ex(&token, f->board, a, "w", NULL),
                   JB_ECLAIMED);
  assert_int_equal(jb_job_consume_ex(f->board, a, "w", token), JB_OK);
  assert_int_equal(jb_job_trash(f->board, t, "admin"), JB_OK);
  jb_completion *c = completion_of(f->board, a);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_int_equal(c->result_len, 1);
  assert_int_equal(((const uint8_t *)c->result)[0], 0x80);
  jb_completion_free(c);
  c = completion_of(f->board, t);
  assert_int_equal(c->end, JB_END_TRASHED);
  assert_string_equal(jb_end_name(c->end), "trashed");
  assert_string_equal(c->owner, "admin");
  assert_string_equal(c->name, "poison");
  assert_int_equal(((const uint8_t *)c->result)[0], 0x80);
  jb_completion_free(c);
  /* Abandon completes nothing. */
  char b[JB_UUID_STRLEN];
  post_claim(b, f->board, "back", "w");
  assert_int_equal(jb_job_abandon(f->board, b, "w"), JB_OK);
  assert_int_equal(history_count(f->board), 2);
}

static void lookups_tell_on_the_board_from_never_seen(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "waiting", JB_PRIORITY_NORMAL);
  jb_completion *c = (jb_completion *)1;
  assert_int_equal(jb_job_completion(&c, f->board, u), JB_ENOTFOUND);
  assert_null(c);
  jbt_assert_contains(jb_errmsg(), "on the board");
  assert_int_equal(jb_job_completion(&c, f->board,
                                     "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f"),
                   JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "neither on the board nor in its history");
  assert_int_equal(jb_job_completion(&c, f->board, "not-a-uuid"), JB_EINVAL);
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

static void a_bad_result_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "careful", "w");
  static const uint8_t not_map[] = {0x01};
  static const uint8_t truncated[] = {0x82, 0xa1, 'a'};
  static const uint8_t trailing[] = {0x80, 0x01};
  static const uint8_t garbage[] = {0xc1};
  EXPECT_REFUSED(f, "result", jb_job_consume_result(f->board, u, "w", 0,
                 JB_OUTCOME_SUCCESS, not_map, sizeof not_map));
  EXPECT_REFUSED(f, "result", jb_job_consume_result(f->board, u, "w", 0,
                 JB_OUTCOME_SUCCESS, truncated, sizeof truncated));
  EXPECT_REFUSED(f, "result", jb_job_consume_result(f->board, u, "w", 0,
                 JB_OUTCOME_SUCCESS, trailing, sizeof trailing));
  EXPECT_REFUSED(f, "result", jb_job_consume_result(f->board, u, "w", 0,
                 JB_OUTCOME_SUCCESS, garbage, sizeof garbage));
  EXPECT_REFUSED(f, "result", jb_job_consume_result(f->board, u, "w", 0,
                 JB_OUTCOME_SUCCESS, NULL, 3));
  EXPECT_REFUSED(f, "outcome", jb_job_consume_result(f->board, u, "w", 0,
                 (jb_outcome)7, NULL, 0));
  /* Larger than the board's max_posting (a handle that says 256). */
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.max_posting = 256;
  jb_board *small = NULL;
  assert_int_equal(jb_board_open(&small, f->dir, &o), JB_OK);
  jbt_buf big = jbt_details_blob(300, 1);
  EXPECT_REFUSED(f, "limit", jb_job_consume_result(small, u, "w", 0,
                 JB_OUTCOME_SUCCESS, big.data, big.len));
  jbt_buf_free(&big);
  jb_board_close(small);
  /* Still claimed by w, and no record: then a good result goes in. */
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, u), JB_OK);
  assert_string_equal(owner, "w");
  assert_int_equal(history_count(f->board), 0);
  assert_int_equal(jb_job_consume_result(f->board, u, "w", 0,
                                         JB_OUTCOME_SUCCESS, NULL, 0),
                   JB_OK);
  assert_int_equal(history_count(f->board), 1);
}

static void a_refused_consume_writes_no_record(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  post_claim(u, f->board, "mine", "owner");
  small_map m = result_map(3);
  assert_int_equal(jb_job_consume_result(f->board, u, "thief", 0,
                                         JB_OUTCOME_SUCCESS, m.b, m.len),
                   JB_ENOTOWNER);
  assert_int_equal(jb_job_consume_result(f->board, u, "owner", 999999,
                                         JB_OUTCOME_SUCCESS, m.b, m.len),
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
  /* The default age (7 days) keeps them all. */
  complete_n(f->board, 3, "kept", NULL);
  assert_int_equal(history_count(f->board), 4);
  jb_board_close(b);
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

/* ------------------------------------------------------------- iterate */

static void the_history_iterates_newest_or_oldest_first(void **state) {
  jbt_fixture *f = *state;
  enum { N = 75 }; /* more than one batch */
  char u[N][JB_UUID_STRLEN];
  complete_n(f->board, N, "it", u);
  for (int pass = 0; pass < 2; pass++) {
    jb_history_iter *it = NULL;
    assert_int_equal(jb_history_open(&it, f->board,
                                     pass ? JB_HISTORY_OLDEST_FIRST : 0),
                     JB_OK);
    const jb_completion *c;
    int i = 0;
    uint64_t prev = 0;
    while (jb_history_next(&c, it) == JB_OK && c != NULL) {
      assert_true(i < N);
      int want = pass ? i : N - 1 - i;
      assert_string_equal(c->uuid, u[want]);
      if (i > 0) assert_true(pass ? c->history_seq > prev : c->history_seq < prev);
      prev = c->history_seq;
      i++;
    }
    assert_int_equal(i, N);
    /* At the end it stays at the end. */
    assert_int_equal(jb_history_next(&c, it), JB_OK);
    assert_null(c);
    jb_history_close(it);
  }
  jb_history_iter *it = NULL;
  assert_int_equal(jb_history_open(&it, f->board, 0x10), JB_EINVAL);
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
        jb_history_open(&it, b, pass ? JB_HISTORY_OLDEST_FIRST : 0), JB_OK);
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
 * oldest, the big ones in history: history.h), completed one at a time:
 * after each, the history is exactly the newest `max`, in order, each
 * found by uuid with its result, and check finds it whole. */
static void the_count_bound_keeps_exactly_the_newest_of_every_size(
    void **state) {
  jbt_fixture *f = *state;
  enum { N = 400, MAX = 57 };
  static const size_t sizes[] = {0,   20,  120, 20,   700, 20,
                                 1100, 20, 40,  2500, 20,  9000};
  char(*u)[JB_UUID_STRLEN] = calloc(N, JB_UUID_STRLEN);
  uint8_t *buf = malloc(10000);
  jb_board *b = open_with(f->dir, MAX, 0);
  unsigned seed = 12;
  for (size_t i = 0; i < N; i++) {
    /* Runs of small ones, so histends fills up between big ones. */
    seed = seed * 1103515245u + 12345u;
    size_t len = sizes[(seed >> 16) % 12];
    if (i % 100 < 60) len = 20 + i % 7;
    size_t n = padded_map(buf, len);
    post_claim(u[i], b, "sized", "w");
    assert_int_equal(jb_job_consume_result(b, u[i], "w", 0,
                                           JB_OUTCOME_SUCCESS, buf, n),
                     JB_OK);
    size_t from = i + 1 > MAX ? i + 1 - MAX : 0;
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
  jbt_assert_check_ok(b);
  run_raw(RAW_ENDS_ONE_PAGE, f->dir, NULL);
  /* A lower bound later: at most 64 go per write, down to it. */
  jb_board *low = open_with(f->dir, 5, 0);
  complete_n(low, 1, "low", NULL);
  assert_int_equal(history_count(low), 5);
  jbt_assert_check_ok(low);
  jb_board_close(low);
  jb_board_close(b);
  free(buf);
  free(u);
}

/* ------------------------------------------------ revocation and check */

static void check_revokes_an_undecodable_job_into_the_history(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN], ok[JB_UUID_STRLEN];
  post_claim(u, f->board, "doomed", "holder");
  jbt_post(ok, f->board, "fine", JB_PRIORITY_NORMAL);
  jb_board_close(f->board);
  f->board = NULL;
  run_raw(RAW_CORRUPT_POSTING, f->dir, u);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_ECORRUPT);
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
  /* The change log says so too, last, with the claim's owner: watchers
   * and REMOVAL subscribers learn that the job left the board. */
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
  /* A second check finds the record well-formed. */
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

static void check_reports_a_history_record_that_does_not_decode(void **state) {
  jbt_fixture *f = *state;
  char u[1][JB_UUID_STRLEN];
  complete_n(f->board, 1, "broken", u);
  jb_check_stats st;
  damage_and_check(f, RAW_BREAK_HISTORY, &st,
                   "history: record 1 does not decode");
  assert_int_equal(st.history, 1);
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

/* A record of histends between two of history's: readers still merge
 * them in order, but the next move of the tail would leave it behind. */
static void check_reports_a_histends_record_inside_history(void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  complete_n(f->board, 3, "split", u);
  jb_check_stats st;
  damage_and_check(f, RAW_SPLIT_ENDS, &st,
                   "history: record 2 of histends lies inside history's "
                   "records 1..3");
  /* Readers see all three, newest first. */
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
  assert_int_equal(jb_job_consume(f->board, u, "w"), JB_OK);
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
  int rc = jb_job_consume_result(b, a->uuid, "far-worker", 0,
                                 JB_OUTCOME_FAILURE, m.b, m.len);
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
  /* Once completed, it answers at once. */
  t0 = jbt_now_ms();
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
  assert_int_equal(jb_job_wait_done(&c, f->board, "nope", 0), JB_EINVAL);
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
  assert_int_equal(jb_job_abandon(f->board, u, "w"), JB_OK);
  assert_int_equal(jb_job_wait_done(&c, f->board, u, 0), JB_ETIMEDOUT);
}

int main(void) {
  jbt_watchdog(240);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(a_result_round_trips_with_owner_name_and_times),
      T(a_failed_outcome_is_recorded_as_failed),
      T(plain_consume_and_trash_are_recorded_with_an_empty_result),
      T(lookups_tell_on_the_board_from_never_seen),
      T(a_bad_result_changes_nothing),
      T(a_refused_consume_writes_no_record),
      T(the_count_bound_drops_the_oldest),
      T(the_age_bound_drops_old_records),
      T(a_write_trims_at_most_64_records),
      T(the_count_bound_keeps_exactly_the_newest_of_every_size),
      T(the_history_iterates_newest_or_oldest_first),
      T(check_revokes_an_undecodable_job_into_the_history),
      T(check_reports_a_history_record_that_does_not_decode),
      T(check_reports_a_history_record_kept_twice),
      T(check_reports_a_histends_record_inside_history),
      T(a_schema_2_board_is_upgraded_at_open),
      T(version_1_board_options_are_still_accepted),
      T(wait_done_returns_the_result_consumed_in_another_process),
      T(wait_done_on_a_never_posted_uuid_is_not_found_at_once),
      T(wait_done_times_out_while_the_job_is_on_the_board),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
