/*
 * test_api.c - every operation of include/jobboard.h on a fresh board: its
 * success and each error case (docs/DESIGN-NOTES.md, "The contract"), the
 * states a job goes through, the small helpers (strerror, version, names),
 * and the posting bytes in taskflow's layout (docs/DESIGN-NOTES.md, "Redis
 * keys and encodings").
 */
#include "helpers.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wall-clock microseconds, the clock jb_job_created/modified use. */
static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Spin (no sleep) until the wall clock has passed `us`, so that a time
 * recorded after this is strictly later than `us`. */
static void wall_clock_past(int64_t us) {
  while (wall_us() <= us) {}
}

static jb_job *get_ok(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  int rc = jb_job_get(&j, b, uuid);
  if (rc != JB_OK) fail_msg("jb_job_get %s: %s", uuid, jb_errmsg());
  assert_non_null(j);
  return j;
}

static jb_state state_of(jb_board *b, const char *uuid) {
  jb_state s = (jb_state)-1;
  assert_int_equal(jb_job_get_state(&s, b, uuid), JB_OK);
  return s;
}

static size_t count_of(jb_board *b, unsigned flags) {
  size_t n = (size_t)-1;
  assert_int_equal(jb_board_count(&n, b, flags), JB_OK);
  return n;
}

static void claim_ok(jb_board *b, const char *uuid, const char *who) {
  int rc = jb_claim(NULL, b, uuid, who, NULL);
  if (rc != JB_OK) fail_msg("claim %s as %s: %s", uuid, who, jb_errmsg());
}

/* A uuid that is well formed but was never posted. */
static const char *const unknown_uuid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";

/* ------------------------------------------------------------------ post */

/* A job posted with every field set (details {"store": 7}, a book whose
 * uuid is given in upper case); the wall clock just before and just after
 * the post go to *before and *after (either may be NULL). The caller frees
 * the job. */
static jb_job *post_every_field(jbt_fixture *f, char uuid[JB_UUID_STRLEN],
                                int64_t *before, int64_t *after) {
  jbt_buf d = jbt_details_store(7);
  jb_post p = JB_POST_INIT;
  p.name = "resize-images";
  p.details = d.data;
  p.details_len = d.len;
  p.priority = JB_PRIORITY_HIGH;
  p.book_name = "my-book";
  p.book_uuid = "0B1C2D3E-4F50-4617-8293-A4B5C6D7E8F9"; /* either case */
  int64_t t0 = wall_us();
  assert_int_equal(jb_job_post(uuid, f->board, &p), JB_OK);
  int64_t t1 = wall_us();
  if (before) *before = t0;
  if (after) *after = t1;
  jbt_buf_free(&d);
  return get_ok(f->board, uuid);
}

static void post_stores_name_details_priority_and_book(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jb_job *j = post_every_field(f, uuid, NULL, NULL);
  assert_int_equal(strlen(uuid), 36);
  assert_string_equal(jb_job_uuid(j), uuid);
  assert_string_equal(jb_job_name(j), "resize-images");
  assert_int_equal(jb_job_priority(j), JB_PRIORITY_HIGH);
  assert_string_equal(jb_job_book_name(j), "my-book");
  jbt_buf d = jbt_details_store(7);
  size_t dlen = 0;
  const void *dd = jb_job_details(j, &dlen);
  assert_int_equal(dlen, d.len);
  assert_memory_equal(dd, d.data, d.len);
  jbt_buf_free(&d);
  jb_job_free(j);
}

static void post_stores_a_book_uuid_given_in_upper_case_in_lower_case(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jb_job *j = post_every_field(f, uuid, NULL, NULL);
  assert_string_equal(jb_job_book_uuid(j),
                      "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9");
  jb_job_free(j);
}

static void post_sets_created_and_modified_to_the_time_of_the_post(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  int64_t before, after;
  jb_job *j = post_every_field(f, uuid, &before, &after);
  assert_true(jb_job_created(j) >= before && jb_job_created(j) <= after);
  assert_true(jb_job_modified(j) >= before && jb_job_modified(j) <= after);
  jb_job_free(j);
}

static void post_gives_a_sequence_of_one_or_more(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jb_job *j = post_every_field(f, uuid, NULL, NULL);
  assert_true(jb_job_sequence(j) >= 1);
  jb_job_free(j);
}

static void a_posted_job_is_unclaimed_with_no_owner(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jb_job *j = post_every_field(f, uuid, NULL, NULL);
  assert_int_equal(jb_job_state(j), JB_STATE_UNCLAIMED);
  assert_null(jb_job_owner(j));
  jb_job_free(j);
}

static void post_returns_a_lowercase_version_7_uuid(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23)
      assert_int_equal(uuid[i], '-');
    else
      assert_non_null(strchr("0123456789abcdef", uuid[i]));
  }
  assert_int_equal(uuid[14], '7'); /* version 7: time-ordered (base/util.c) */
  assert_non_null(strchr("89ab", uuid[19]));
  assert_int_equal(uuid[36], '\0');
}

static void post_uuid_starts_with_the_wall_clock_in_milliseconds(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  /* Its first 48 bits are the wall clock in milliseconds. */
  char hex[13];
  memcpy(hex, uuid, 8);
  memcpy(hex + 8, uuid + 9, 4);
  hex[12] = '\0';
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  long long ms = strtoll(hex, NULL, 16);
  assert_true(ms <= now_ms && ms > now_ms - 10000);
}

static void each_later_post_gets_a_uuid_that_sorts_after_the_one_before(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  /* Within one millisecond too: a batch's thousand all fall in one or
   * two. */
  enum { N = 1000 };
  jb_post posts[N];
  for (int i = 0; i < N; i++) {
    posts[i] = (jb_post)JB_POST_INIT;
    posts[i].name = "x";
  }
  char(*u)[JB_UUID_STRLEN] = calloc(N, JB_UUID_STRLEN);
  assert_non_null(u);
  assert_int_equal(jb_job_post_batch(u, f->board, posts, N), JB_OK);
  assert_true(strcmp(uuid, u[0]) < 0);
  for (int i = 1; i < N; i++) assert_true(strcmp(u[i - 1], u[i]) < 0);
  free(u);
}

static void post_without_details_stores_an_empty_map(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "no-details", JB_PRIORITY_LOW);
  jb_job *j = get_ok(f->board, uuid);
  size_t len = 0;
  const unsigned char *d = jb_job_details(j, &len);
  assert_int_equal(len, 1);
  assert_int_equal(d[0], 0x80);
  jb_job_free(j);
}

static void post_without_a_book_has_no_book_name_or_uuid(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "no-details", JB_PRIORITY_LOW);
  jb_job *j = get_ok(f->board, uuid);
  assert_null(jb_job_book_name(j));
  assert_null(jb_job_book_uuid(j));
  jb_job_free(j);
}

static void posts_get_strictly_increasing_sequences(void **state) {
  jbt_fixture *f = *state;
  uint64_t last = 0;
  for (int i = 0; i < 20; i++) {
    char uuid[JB_UUID_STRLEN];
    jbt_post(uuid, f->board, "seq", (jb_priority)(i % 5));
    jb_job *j = get_ok(f->board, uuid);
    assert_true(jb_job_sequence(j) > last);
    last = jb_job_sequence(j);
    jb_job_free(j);
  }
}

/* The names of the five posts batch_post_five makes, in batch order. */
static const char *const batch_names[5] = {"b0", "b1", "b2", "b3", "b4"};

/* Posts five jobs in one batch, named batch_names[i] with priority 4 - i. */
static void batch_post_five(jbt_fixture *f, char uuids[5][JB_UUID_STRLEN]) {
  jb_post posts[5];
  for (int i = 0; i < 5; i++) {
    jb_post p = JB_POST_INIT;
    p.name = batch_names[i];
    p.priority = (jb_priority)(4 - i);
    posts[i] = p;
  }
  assert_int_equal(jb_job_post_batch(uuids, f->board, posts, 5), JB_OK);
}

static void batch_post_posts_every_job_in_the_batch(void **state) {
  jbt_fixture *f = *state;
  char uuids[5][JB_UUID_STRLEN];
  batch_post_five(f, uuids);
  assert_int_equal(count_of(f->board, 0), 5);
}

static void batch_post_returns_each_jobs_uuid_in_batch_order(void **state) {
  jbt_fixture *f = *state;
  char uuids[5][JB_UUID_STRLEN];
  batch_post_five(f, uuids);
  for (int i = 0; i < 5; i++) {
    jb_job *j = get_ok(f->board, uuids[i]);
    assert_string_equal(jb_job_name(j), batch_names[i]);
    assert_int_equal(jb_job_priority(j), 4 - i);
    for (int k = 0; k < i; k++) assert_string_not_equal(uuids[k], uuids[i]);
    jb_job_free(j);
  }
}

static void batch_post_gives_increasing_sequences_in_batch_order(
    void **state) {
  jbt_fixture *f = *state;
  char uuids[5][JB_UUID_STRLEN];
  batch_post_five(f, uuids);
  uint64_t last = 0;
  for (int i = 0; i < 5; i++) {
    jb_job *j = get_ok(f->board, uuids[i]);
    assert_true(jb_job_sequence(j) > last);
    last = jb_job_sequence(j);
    jb_job_free(j);
  }
}

/* ------------------------------------------------------------------- get */

static void get_of_unknown_job_is_not_found_and_names_it(void **state) {
  jbt_fixture *f = *state;
  jb_job *j = (jb_job *)1;
  assert_int_equal(jb_job_get(&j, f->board, unknown_uuid), JB_ENOTFOUND);
  assert_null(j);
  jbt_assert_contains(jb_errmsg(), unknown_uuid);
}

/* Posts a job; its uuid goes to uuid, and in upper case to upper. */
static void post_with_upper_case_uuid(jbt_fixture *f, char uuid[JB_UUID_STRLEN],
                                      char upper[JB_UUID_STRLEN]) {
  jbt_post(uuid, f->board, "case", JB_PRIORITY_NORMAL);
  for (int i = 0; i < JB_UUID_STRLEN; i++)
    upper[i] = (char)(uuid[i] >= 'a' && uuid[i] <= 'f' ? uuid[i] - 32 : uuid[i]);
}

static void get_accepts_an_upper_case_uuid(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN], upper[JB_UUID_STRLEN];
  post_with_upper_case_uuid(f, uuid, upper);
  jb_job *j = get_ok(f->board, upper);
  assert_string_equal(jb_job_uuid(j), uuid);
  jb_job_free(j);
}

static void claim_accepts_an_upper_case_uuid(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN], upper[JB_UUID_STRLEN];
  post_with_upper_case_uuid(f, uuid, upper);
  claim_ok(f->board, upper, "w");
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
}

static void get_of_claimed_job_shows_owner_and_state(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "owned", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  jb_job *j = get_ok(f->board, uuid);
  assert_int_equal(jb_job_state(j), JB_STATE_CLAIMED);
  assert_string_equal(jb_job_owner(j), "worker-1");
  jb_job_free(j);
}

/* ----------------------------------------------------------------- claim */

static void claim_of_unclaimed_job_makes_who_its_owner(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "worker-1");
}

static void claim_of_unknown_job_is_not_found_and_names_it(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_claim(NULL, f->board, unknown_uuid, "w", NULL), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), unknown_uuid);
}

static void claim_of_consumed_job_is_not_found(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "gone", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w");
  assert_int_equal(jb_consume(f->board, uuid, "w", 0, NULL), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, uuid, "w", NULL), JB_ENOTFOUND);
}

static void claim_of_claimed_job_names_owner(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  assert_int_equal(jb_claim(NULL, f->board, uuid, "worker-2", NULL), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "worker-1");
  jbt_assert_contains(jb_errmsg(), uuid);
}

static void claim_of_claimed_job_leaves_the_owner(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  assert_int_equal(jb_claim(NULL, f->board, uuid, "worker-2", NULL), JB_ECLAIMED);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "worker-1");
}

static void claim_by_the_owner_itself_still_reports_already_claimed(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  assert_int_equal(jb_claim(NULL, f->board, uuid, "worker-1", NULL), JB_ECLAIMED);
  jbt_assert_contains(jb_errmsg(), "worker-1");
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
}

static void claim_by_the_owner_itself_refreshes_modified_time(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  jb_job *j = get_ok(f->board, uuid);
  int64_t claimed_at = jb_job_modified(j);
  jb_job_free(j);
  wall_clock_past(claimed_at);
  int64_t before = wall_us();
  assert_int_equal(jb_claim(NULL, f->board, uuid, "worker-1", NULL), JB_ECLAIMED);
  j = get_ok(f->board, uuid);
  assert_true(jb_job_modified(j) >= before);
  assert_string_equal(jb_job_owner(j), "worker-1");
  jb_job_free(j);
}

static void claim_by_another_owner_leaves_modified_time_alone(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "worker-1");
  jb_job *j = get_ok(f->board, uuid);
  int64_t claimed_at = jb_job_modified(j);
  jb_job_free(j);
  wall_clock_past(claimed_at);
  assert_int_equal(jb_claim(NULL, f->board, uuid, "worker-2", NULL), JB_ECLAIMED);
  j = get_ok(f->board, uuid);
  assert_int_equal(jb_job_modified(j), claimed_at);
  jb_job_free(j);
}

/* Posts a job and claims it once the wall clock has passed its post:
 * *created is its created time, *before the wall clock just before the
 * claim. The caller frees the returned job as read after the claim. */
static jb_job *claim_after_post(jbt_fixture *f, int64_t *created,
                                int64_t *before) {
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "c", JB_PRIORITY_NORMAL);
  jb_job *j = get_ok(f->board, uuid);
  int64_t posted = jb_job_modified(j);
  *created = jb_job_created(j);
  jb_job_free(j);
  wall_clock_past(posted);
  *before = wall_us();
  claim_ok(f->board, uuid, "w");
  return get_ok(f->board, uuid);
}

static void claim_sets_modified_time(void **state) {
  int64_t created, before;
  jb_job *j = claim_after_post(*state, &created, &before);
  assert_true(jb_job_modified(j) >= before);
  jb_job_free(j);
}

static void claim_leaves_created_time_alone(void **state) {
  int64_t created, before;
  jb_job *j = claim_after_post(*state, &created, &before);
  assert_int_equal(jb_job_created(j), created);
  jb_job_free(j);
}

/* ------------------------------------------------------------ claim-next */

static void claim_next_claims_the_first_claimable_job(void **state) {
  jbt_fixture *f = *state;
  char low[JB_UUID_STRLEN], high[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jbt_post(low, f->board, "low", JB_PRIORITY_LOW);
  jbt_post(high, f->board, "high", JB_PRIORITY_HIGH);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_string_equal(got, high);
  assert_int_equal(state_of(f->board, high), JB_STATE_CLAIMED);
  assert_int_equal(state_of(f->board, low), JB_STATE_UNCLAIMED);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_string_equal(got, low);
}

static void claim_next_returns_a_snapshot_of_the_claimed_job(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "snap", JB_PRIORITY_VERY_LOW);
  jb_job *j = NULL;
  assert_int_equal(jb_claim_next(got, &j, NULL, f->board, "w-9", NULL), JB_OK);
  assert_non_null(j);
  assert_string_equal(jb_job_uuid(j), uuid);
  assert_string_equal(jb_job_name(j), "snap");
  assert_int_equal(jb_job_state(j), JB_STATE_CLAIMED);
  assert_string_equal(jb_job_owner(j), "w-9");
  assert_int_equal(jb_job_priority(j), JB_PRIORITY_VERY_LOW);
  jb_job_free(j);
}

static void claim_next_accepts_no_out_parameters(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
}

static void claim_next_on_an_empty_board_is_not_found(void **state) {
  jbt_fixture *f = *state;
  jb_job *j = (jb_job *)1;
  assert_int_equal(jb_claim_next(NULL, &j, NULL, f->board, "w", NULL), JB_ENOTFOUND);
  assert_null(j);
}

static void claim_next_when_every_job_is_claimed_is_not_found(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "someone");
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_ENOTFOUND);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "someone");
}

/* --------------------------------------------------------------- abandon */

static void abandon_makes_the_job_claimable_again(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "a", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w1");
  assert_int_equal(jb_abandon(f->board, uuid, "w1", 0), JB_OK);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_UNCLAIMED);
  char owner[JB_WHO_MAX + 1] = "x";
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "");
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w2", NULL), JB_OK);
  assert_string_equal(got, uuid);
}

static void abandon_sets_modified_time(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "a", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w1");
  jb_job *j = get_ok(f->board, uuid);
  int64_t claimed = jb_job_modified(j);
  jb_job_free(j);
  wall_clock_past(claimed);
  int64_t before = wall_us();
  assert_int_equal(jb_abandon(f->board, uuid, "w1", 0), JB_OK);
  j = get_ok(f->board, uuid);
  assert_true(jb_job_modified(j) >= before);
  jb_job_free(j);
}

/* abandon, consume and trash share their error cases: one table. */
typedef int (*owner_op)(jb_board *, const char *, const char *);

/* The releases as the checks below take them: any token. */
static int abandon_any(jb_board *b, const char *uuid, const char *who) {
  return jb_abandon(b, uuid, who, 0);
}
static int consume_any(jb_board *b, const char *uuid, const char *who) {
  return jb_consume(b, uuid, who, 0, NULL);
}
static int trash_any(jb_board *b, const char *uuid, const char *who) {
  return jb_trash(b, uuid, who, 0);
}

static void check_not_found_when_no_job(jbt_fixture *f, owner_op op) {
  assert_int_equal(op(f->board, unknown_uuid, "w"), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), unknown_uuid);
}

static void check_not_found_when_not_claimed(jbt_fixture *f, owner_op op) {
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "unclaimed", JB_PRIORITY_NORMAL);
  assert_int_equal(op(f->board, uuid, "w"), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), uuid);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_UNCLAIMED);
  assert_int_equal(count_of(f->board, JB_ONLY_UNCLAIMED), 1);
}

static void check_not_owner_names_owner(jbt_fixture *f, owner_op op) {
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "theirs", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "the-owner");
  assert_int_equal(op(f->board, uuid, "intruder"), JB_ENOTOWNER);
  jbt_assert_contains(jb_errmsg(), "the-owner");
  jbt_assert_contains(jb_errmsg(), uuid);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "the-owner");
  assert_int_equal(count_of(f->board, 0), 1);
}

static void abandon_of_unknown_job_is_not_found(void **state) {
  check_not_found_when_no_job(*state, abandon_any);
}
static void abandon_of_unclaimed_job_is_not_found(void **state) {
  check_not_found_when_not_claimed(*state, abandon_any);
}
static void abandon_by_another_owner_is_refused_naming_the_owner(void **state) {
  check_not_owner_names_owner(*state, abandon_any);
}

/* --------------------------------------------------------------- consume */

static void consume_removes_the_job_from_the_board(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN], other[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "done", JB_PRIORITY_NORMAL);
  jbt_post(other, f->board, "stays", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w");
  assert_int_equal(jb_consume(f->board, uuid, "w", 0, NULL), JB_OK);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_COMPLETE);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, uuid), JB_ENOTFOUND);
  assert_int_equal(count_of(f->board, 0), 1);
  assert_int_equal(state_of(f->board, other), JB_STATE_UNCLAIMED);
  char owner[JB_WHO_MAX + 1] = "x";
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "");
}

static void consume_twice_is_not_found(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "done", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w");
  assert_int_equal(jb_consume(f->board, uuid, "w", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(f->board, uuid, "w", 0, NULL), JB_ENOTFOUND);
}

static void consume_of_unknown_job_is_not_found(void **state) {
  check_not_found_when_no_job(*state, consume_any);
}
static void consume_of_unclaimed_job_is_not_found(void **state) {
  check_not_found_when_not_claimed(*state, consume_any);
}
static void consume_by_another_owner_is_refused_naming_the_owner(void **state) {
  check_not_owner_names_owner(*state, consume_any);
}

/* ----------------------------------------------------------------- trash */

/* Posts a job, claims it as "w" and trashes it. */
static void post_claim_trash(jbt_fixture *f, char uuid[JB_UUID_STRLEN]) {
  jbt_post(uuid, f->board, "poison", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, "w");
  assert_int_equal(jb_trash(f->board, uuid, "w", 0), JB_OK);
}

static void trash_removes_the_job_from_the_board(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  post_claim_trash(f, uuid);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_COMPLETE);
  assert_int_equal(count_of(f->board, 0), 0);
}

static void trash_keeps_the_jobs_posting_as_a_dead_letter(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  post_claim_trash(f, uuid);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.trashed, 1);
  assert_int_equal(st.jobs, 0);
}

static void trash_of_unknown_job_is_not_found(void **state) {
  check_not_found_when_no_job(*state, trash_any);
}
static void trash_of_unclaimed_job_is_not_found(void **state) {
  check_not_found_when_not_claimed(*state, trash_any);
}
static void trash_by_another_owner_is_refused_naming_the_owner(void **state) {
  check_not_owner_names_owner(*state, trash_any);
}

/* ------------------------------------------------------- states & owners */

static void job_goes_unclaimed_claimed_unclaimed_claimed_complete(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "life", JB_PRIORITY_NORMAL);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_UNCLAIMED);
  claim_ok(f->board, uuid, "a");
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
  assert_int_equal(jb_abandon(f->board, uuid, "a", 0), JB_OK);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_UNCLAIMED);
  claim_ok(f->board, uuid, "b");
  assert_int_equal(state_of(f->board, uuid), JB_STATE_CLAIMED);
  assert_int_equal(jb_consume(f->board, uuid, "b", 0, NULL), JB_OK);
  assert_int_equal(state_of(f->board, uuid), JB_STATE_COMPLETE);
  jbt_assert_check_ok(f->board);
}

static void state_of_a_job_never_posted_is_complete(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(state_of(f->board, unknown_uuid), JB_STATE_COMPLETE);
}

static void find_owner_of_unclaimed_job_is_empty(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  char owner[JB_WHO_MAX + 1];
  memset(owner, 'z', sizeof owner);
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, "");
}

static void find_owner_of_unknown_job_is_empty(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  char owner[JB_WHO_MAX + 1];
  memset(owner, 'z', sizeof owner);
  assert_int_equal(jb_job_find_owner(owner, f->board, unknown_uuid), JB_OK);
  assert_string_equal(owner, "");
}

static void find_owner_returns_a_long_owner_whole(void **state) {
  jbt_fixture *f = *state;
  char who[JB_WHO_MAX + 1];
  memset(who, 'w', JB_WHO_MAX);
  who[JB_WHO_MAX] = '\0';
  char uuid[JB_UUID_STRLEN];
  jbt_post(uuid, f->board, "x", JB_PRIORITY_NORMAL);
  claim_ok(f->board, uuid, who);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, uuid), JB_OK);
  assert_string_equal(owner, who);
}

static void count_of_an_empty_board_is_zero(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(count_of(f->board, 0), 0);
  assert_int_equal(count_of(f->board, JB_ONLY_UNCLAIMED), 0);
}

/* Posts four jobs and claims the first two as "w". */
static void post_four_claim_two(jbt_fixture *f, char u[4][JB_UUID_STRLEN]) {
  for (int i = 0; i < 4; i++) jbt_post(u[i], f->board, "n", JB_PRIORITY_NORMAL);
  claim_ok(f->board, u[0], "w");
  claim_ok(f->board, u[1], "w");
}

static void count_counts_every_job_claimed_or_not(void **state) {
  jbt_fixture *f = *state;
  char u[4][JB_UUID_STRLEN];
  post_four_claim_two(f, u);
  assert_int_equal(count_of(f->board, 0), 4);
  assert_int_equal(jb_abandon(f->board, u[0], "w", 0), JB_OK);
  assert_int_equal(jb_consume(f->board, u[1], "w", 0, NULL), JB_OK);
  assert_int_equal(count_of(f->board, 0), 3);
}

static void count_of_only_unclaimed_counts_unclaimed_jobs_alone(
    void **state) {
  jbt_fixture *f = *state;
  char u[4][JB_UUID_STRLEN];
  post_four_claim_two(f, u);
  assert_int_equal(count_of(f->board, JB_ONLY_UNCLAIMED), 2);
  assert_int_equal(jb_abandon(f->board, u[0], "w", 0), JB_OK);
  assert_int_equal(count_of(f->board, JB_ONLY_UNCLAIMED), 3);
  assert_int_equal(jb_consume(f->board, u[1], "w", 0, NULL), JB_OK);
  assert_int_equal(count_of(f->board, JB_ONLY_UNCLAIMED), 3);
}

static void check_counts_ready_and_claimed_jobs(void **state) {
  jbt_fixture *f = *state;
  char u[3][JB_UUID_STRLEN];
  for (int i = 0; i < 3; i++) jbt_post(u[i], f->board, "n", JB_PRIORITY_HIGH);
  claim_ok(f->board, u[2], "w");
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.jobs, 3);
  assert_int_equal(st.ready, 2);
  assert_int_equal(st.claimed, 1);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.quarantined, 0);
}

static void collect_line(const char *line, void *arg) {
  char *out = arg;
  size_t n = strlen(out);
  snprintf(out + n, 512 - n, "%s\n", line);
}

static void a_recorded_check_is_kept_and_a_plain_one_is_not(void **state) {
  jbt_fixture *f = *state;
  jb_check_record r;
  assert_int_equal(jb_board_last_check(&r, f->board), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "jobboard check");
  char u[2][JB_UUID_STRLEN];
  for (int i = 0; i < 2; i++) jbt_post(u[i], f->board, "n", JB_PRIORITY_LOW);
  /* Without the flag nothing is written: the board stays as it was. */
  uint64_t before = jbt_board_digest(f->dir);
  assert_int_equal(jb_board_check_ex(NULL, f->board, 0, NULL, NULL), JB_OK);
  assert_int_equal(jbt_board_digest(f->dir), before);
  assert_int_equal(jb_board_last_check(&r, f->board), JB_ENOTFOUND);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t t0 = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  char lines[512] = "";
  jb_check_stats st;
  assert_int_equal(jb_board_check_ex(&st, f->board, JB_CHECK_RECORD,
                                     collect_line, lines),
                   JB_OK);
  assert_string_equal(lines, ""); /* recorded: no note */
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t t1 = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
  memset(&r, 0xff, sizeof r);
  assert_int_equal(jb_board_last_check(&r, f->board), JB_OK);
  assert_true(r.time_us >= t0 && r.time_us <= t1);
  assert_true(r.duration_us >= 0 && r.duration_us <= t1 - t0);
  assert_int_equal(r.problems, 0);
  assert_int_equal(r.moved, 0);
  assert_int_equal(r.jobs, 2);
  /* A later check replaces it. */
  jbt_post(u[0], f->board, "n", JB_PRIORITY_LOW);
  assert_int_equal(jb_board_check_ex(NULL, f->board, JB_CHECK_RECORD, NULL,
                                     NULL),
                   JB_OK);
  jb_check_record r2;
  assert_int_equal(jb_board_last_check(&r2, f->board), JB_OK);
  assert_int_equal(r2.jobs, 3);
  assert_true(r2.time_us >= r.time_us);
  /* The check itself stays a good one: the record is no problem. */
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
}

static void check_ex_refuses_unknown_flags_and_null(void **state) {
  jbt_fixture *f = *state;
  uint64_t before = jbt_board_digest(f->dir);
  assert_int_equal(jb_board_check_ex(NULL, f->board, 2, NULL, NULL),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "flags");
  assert_int_equal(jb_board_check_ex(NULL, NULL, JB_CHECK_RECORD, NULL, NULL),
                   JB_EINVAL);
  jb_check_record r;
  assert_int_equal(jb_board_last_check(NULL, f->board), JB_EINVAL);
  assert_int_equal(jb_board_last_check(&r, NULL), JB_EINVAL);
  assert_int_equal(jbt_board_digest(f->dir), before);
}

static size_t log_events(jb_board *b) {
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  return st.log_events;
}

static void every_change_writes_one_change_log_event(void **state) {
  jbt_fixture *f = *state;
  size_t n0 = log_events(f->board);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "logged", JB_PRIORITY_NORMAL);
  assert_int_equal(log_events(f->board), n0 + 1);
  claim_ok(f->board, u, "w");
  assert_int_equal(log_events(f->board), n0 + 2);
  assert_int_equal(jb_abandon(f->board, u, "w", 0), JB_OK);
  assert_int_equal(log_events(f->board), n0 + 3);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_int_equal(log_events(f->board), n0 + 4);
  /* A same-owner re-claim changes the claim's time: logged. */
  assert_int_equal(jb_claim(NULL, f->board, u, "w", NULL), JB_ECLAIMED);
  assert_int_equal(log_events(f->board), n0 + 5);
  assert_int_equal(jb_trash(f->board, u, "w", 0), JB_OK);
  assert_int_equal(log_events(f->board), n0 + 6);
  jbt_post(u, f->board, "logged-2", JB_PRIORITY_NORMAL);
  claim_ok(f->board, u, "w");
  assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  assert_int_equal(log_events(f->board), n0 + 9);
}

/* A refused claim by another changes nothing, so it writes nothing. */
static void a_claim_refused_as_claimed_by_another_writes_no_event(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "logged", JB_PRIORITY_NORMAL);
  claim_ok(f->board, u, "w");
  size_t n0 = log_events(f->board);
  assert_int_equal(jb_claim(NULL, f->board, u, "other", NULL), JB_ECLAIMED);
  assert_int_equal(log_events(f->board), n0);
}

static void board_path_is_the_directory_it_was_opened_from(void **state) {
  jbt_fixture *f = *state;
  assert_string_equal(jb_board_path(f->board), f->dir);
}

static void closing_and_freeing_null_are_harmless(void **state) {
  (void)state;
  jb_board_close(NULL);
  jb_job_free(NULL);
  jb_iter_close(NULL);
}

/* --------------------------------------------------- errors and versions */

static void strerror_starts_with_the_code_name_for_every_code(void **state) {
  (void)state;
  static const struct {
    int code;
    const char *name;
  } codes[] = {
      {JB_OK, "JB_OK"},           {JB_ENOTFOUND, "JB_ENOTFOUND"},
      {JB_ECLAIMED, "JB_ECLAIMED"}, {JB_ENOTOWNER, "JB_ENOTOWNER"},
      {JB_EINVAL, "JB_EINVAL"},   {JB_ETIMEDOUT, "JB_ETIMEDOUT"},
      {JB_EOFFLINE, "JB_EOFFLINE"}, {JB_ECORRUPT, "JB_ECORRUPT"},
      {JB_EFULL, "JB_EFULL"},     {JB_EIO, "JB_EIO"},
      {JB_ENOMEM, "JB_ENOMEM"},   {JB_EVERSION, "JB_EVERSION"},
  };
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    const char *t = jb_strerror(codes[i].code);
    assert_non_null(t);
    size_t n = strlen(codes[i].name);
    if (strncmp(t, codes[i].name, n) != 0 || t[n] != ':')
      fail_msg("jb_strerror(%d) = \"%s\", expected \"%s: ...\"", codes[i].code,
               t, codes[i].name);
    assert_true(strlen(t) > n + 2); /* a description follows */
  }
}

static void strerror_of_an_unknown_code_says_it_is_unknown(void **state) {
  (void)state;
  assert_string_equal(jb_strerror(-999), "JB_E?: unknown error code");
  assert_string_equal(jb_strerror(5), "JB_E?: unknown error code");
}

static void errmsg_is_never_null(void **state) {
  (void)state;
  assert_non_null(jb_errmsg());
}

static void version_call_matches_the_header_macros(void **state) {
  (void)state;
  int major = -1, minor = -1, patch = -1;
  const char *v = jb_version(&major, &minor, &patch);
  assert_int_equal(major, JOBBOARD_VERSION_MAJOR);
  assert_int_equal(minor, JOBBOARD_VERSION_MINOR);
  assert_int_equal(patch, JOBBOARD_VERSION_PATCH);
  assert_string_equal(v, JOBBOARD_VERSION_STRING);
}

static void version_string_is_major_dot_minor_dot_patch(void **state) {
  (void)state;
  int major = -1, minor = -1, patch = -1;
  const char *v = jb_version(&major, &minor, &patch);
  char text[32];
  snprintf(text, sizeof text, "%d.%d.%d", major, minor, patch);
  assert_string_equal(v, text);
}

static void version_number_macro_is_major_minor_patch_in_two_digits_each(
    void **state) {
  (void)state;
  int major = -1, minor = -1, patch = -1;
  jb_version(&major, &minor, &patch);
  assert_int_equal(JOBBOARD_VERSION_NUMBER, major * 10000 + minor * 100 + patch);
}

static void version_call_accepts_no_out_parameters(void **state) {
  (void)state;
  assert_string_equal(jb_version(NULL, NULL, NULL), JOBBOARD_VERSION_STRING);
}

static void priority_parse_ignores_case(void **state) {
  (void)state;
  static const struct {
    const char *text;
    jb_priority p;
  } ok[] = {
      {"VERY_HIGH", JB_PRIORITY_VERY_HIGH}, {"very_high", JB_PRIORITY_VERY_HIGH},
      {"High", JB_PRIORITY_HIGH},           {"nOrMaL", JB_PRIORITY_NORMAL},
      {"low", JB_PRIORITY_LOW},             {"Very_Low", JB_PRIORITY_VERY_LOW},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    jb_priority p = (jb_priority)-1;
    assert_int_equal(jb_priority_parse(&p, ok[i].text), JB_OK);
    assert_int_equal(p, ok[i].p);
  }
}

static void priority_parse_rejects_unknown_names_naming_them(void **state) {
  (void)state;
  const char *bad[] = {"urgent", "", "HIGHER", "HIG", "very high", "2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    jb_priority p = JB_PRIORITY_LOW;
    assert_int_equal(jb_priority_parse(&p, bad[i]), JB_EINVAL);
    assert_int_equal(p, JB_PRIORITY_LOW);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    jbt_assert_contains(jb_errmsg(), quoted);
    jbt_assert_contains(jb_errmsg(), "VERY_HIGH");
  }
}

static void priority_parse_of_null_is_invalid(void **state) {
  (void)state;
  jb_priority p;
  assert_int_equal(jb_priority_parse(&p, NULL), JB_EINVAL);
}

static void priority_names_round_trip_through_parse(void **state) {
  (void)state;
  const char *pn[] = {"VERY_LOW", "LOW", "NORMAL", "HIGH", "VERY_HIGH"};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(jb_priority_name((jb_priority)i), pn[i]);
    jb_priority p;
    assert_int_equal(jb_priority_parse(&p, pn[i]), JB_OK);
    assert_int_equal(p, i);
  }
}

static void priority_name_of_a_value_outside_the_enum_is_null(void **state) {
  (void)state;
  assert_null(jb_priority_name((jb_priority)5));
  assert_null(jb_priority_name((jb_priority)-1));
}

static void state_names_are_the_upper_case_state(void **state) {
  (void)state;
  assert_string_equal(jb_state_name(JB_STATE_UNCLAIMED), "UNCLAIMED");
  assert_string_equal(jb_state_name(JB_STATE_CLAIMED), "CLAIMED");
  assert_string_equal(jb_state_name(JB_STATE_COMPLETE), "COMPLETE");
}

static void state_name_of_a_value_outside_the_enum_is_null(void **state) {
  (void)state;
  assert_null(jb_state_name((jb_state)3));
}

static void durability_names_round_trip_through_parse(void **state) {
  (void)state;
  const char *dn[] = {"full", "normal", "none"};
  for (int i = 0; i < 3; i++) {
    assert_string_equal(jb_durability_name((jb_durability)i), dn[i]);
    jb_durability d;
    assert_int_equal(jb_durability_parse(&d, dn[i]), JB_OK);
    assert_int_equal(d, i);
  }
}

static void durability_parse_ignores_case(void **state) {
  (void)state;
  jb_durability d;
  assert_int_equal(jb_durability_parse(&d, "NONE"), JB_OK);
  assert_int_equal(d, JB_DURABILITY_NONE);
}

static void durability_parse_rejects_an_unknown_name_naming_it(void **state) {
  (void)state;
  jb_durability d;
  assert_int_equal(jb_durability_parse(&d, "fast"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "fast");
}

static void durability_name_of_a_value_outside_the_enum_is_null(
    void **state) {
  (void)state;
  assert_null(jb_durability_name((jb_durability)4));
}

/* ----------------------------------------------- posting bytes (taskflow) */

static void pack_cstr(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

/* The posting taskflow 5.0 writes for these fields (wire doc 2.1, 2.2):
 * smallest encodings, keys in insertion order, created_on as oslo's
 * datetime ext (type 1) around a 7-entry map of naive UTC fields. */
static jbt_buf taskflow_posting(const char *uuid, const char *name,
                                const char *prio, int64_t created_us,
                                const void *details, size_t details_len,
                                const char *book_name, const char *book_uuid,
                                uint64_t seq) {
  msgpack_sbuffer sb, ext;
  msgpack_packer pk, ek;
  msgpack_sbuffer_init(&sb);
  msgpack_sbuffer_init(&ext);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_packer_init(&ek, &ext, msgpack_sbuffer_write);

  time_t secs = (time_t)(created_us / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  msgpack_pack_map(&ek, 7);
  pack_cstr(&ek, "day");
  msgpack_pack_int(&ek, tm.tm_mday);
  pack_cstr(&ek, "month");
  msgpack_pack_int(&ek, tm.tm_mon + 1);
  pack_cstr(&ek, "year");
  msgpack_pack_int(&ek, tm.tm_year + 1900);
  pack_cstr(&ek, "hour");
  msgpack_pack_int(&ek, tm.tm_hour);
  pack_cstr(&ek, "minute");
  msgpack_pack_int(&ek, tm.tm_min);
  pack_cstr(&ek, "second");
  msgpack_pack_int(&ek, tm.tm_sec);
  pack_cstr(&ek, "microsecond");
  msgpack_pack_int(&ek, (int)(created_us % 1000000));

  msgpack_pack_map(&pk, book_name ? 7 : 6);
  pack_cstr(&pk, "uuid");
  pack_cstr(&pk, uuid);
  pack_cstr(&pk, "name");
  pack_cstr(&pk, name);
  pack_cstr(&pk, "priority");
  pack_cstr(&pk, prio);
  pack_cstr(&pk, "created_on");
  msgpack_pack_ext(&pk, ext.size, 1);
  msgpack_pack_ext_body(&pk, ext.data, ext.size);
  pack_cstr(&pk, "details");
  msgpack_sbuffer_write(&sb, details, details_len);
  if (book_name) {
    pack_cstr(&pk, "book");
    msgpack_pack_map(&pk, 2);
    pack_cstr(&pk, "name");
    pack_cstr(&pk, book_name);
    pack_cstr(&pk, "uuid");
    pack_cstr(&pk, book_uuid);
  }
  pack_cstr(&pk, "sequence");
  msgpack_pack_uint64(&pk, seq);
  msgpack_sbuffer_destroy(&ext);
  jbt_buf b = {malloc(sb.size), sb.size};
  memcpy(b.data, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return b;
}

static void expect_str(const msgpack_object *o, const char *s) {
  assert_int_equal(o->type, MSGPACK_OBJECT_STR);
  assert_int_equal(o->via.str.size, strlen(s));
  assert_memory_equal(o->via.str.ptr, s, strlen(s));
}

/* Posts "demo-job" with every field set and unpacks its posting into *up,
 * which must hold one value and nothing after it. The caller destroys *up
 * and frees the returned job. */
static jb_job *post_demo_job_and_unpack(jbt_fixture *f,
                                        char uuid[JB_UUID_STRLEN],
                                        msgpack_unpacked *up) {
  jbt_buf d = jbt_details_store(1);
  jb_post p = JB_POST_INIT;
  p.name = "demo-job";
  p.details = d.data;
  p.details_len = d.len;
  p.priority = JB_PRIORITY_HIGH;
  p.book_name = "my-book";
  p.book_uuid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  assert_int_equal(jb_job_post(uuid, f->board, &p), JB_OK);
  jbt_buf_free(&d);
  jb_job *j = get_ok(f->board, uuid);
  size_t len = 0;
  const char *bytes = jb_job_posting(j, &len);
  msgpack_unpacked_init(up);
  size_t off = 0;
  assert_int_equal(msgpack_unpack_next(up, bytes, len, &off),
                   MSGPACK_UNPACK_SUCCESS);
  assert_int_equal(off, len); /* one value, nothing after it */
  return j;
}

static void posting_is_a_map_in_taskflow_key_order(void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  msgpack_unpacked up;
  jb_job *j = post_demo_job_and_unpack(f, uuid, &up);
  const msgpack_object *m = &up.data;
  assert_int_equal(m->type, MSGPACK_OBJECT_MAP);
  assert_int_equal(m->via.map.size, 7);
  const char *keys[7] = {"uuid",    "name", "priority", "created_on",
                         "details", "book", "sequence"};
  const msgpack_object_kv *kv = m->via.map.ptr;
  for (int i = 0; i < 7; i++) expect_str(&kv[i].key, keys[i]);
  expect_str(&kv[0].val, uuid);
  expect_str(&kv[1].val, "demo-job");
  expect_str(&kv[2].val, "HIGH");

  assert_int_equal(kv[4].val.type, MSGPACK_OBJECT_MAP);
  assert_int_equal(kv[4].val.via.map.size, 1);
  expect_str(&kv[4].val.via.map.ptr[0].key, "store");
  assert_int_equal(kv[5].val.type, MSGPACK_OBJECT_MAP);
  assert_int_equal(kv[5].val.via.map.size, 2);
  expect_str(&kv[5].val.via.map.ptr[0].key, "name");
  expect_str(&kv[5].val.via.map.ptr[0].val, "my-book");
  expect_str(&kv[5].val.via.map.ptr[1].key, "uuid");
  expect_str(&kv[5].val.via.map.ptr[1].val,
             "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9");
  assert_int_equal(kv[6].val.type, MSGPACK_OBJECT_POSITIVE_INTEGER);
  assert_int_equal(kv[6].val.via.u64, jb_job_sequence(j));
  msgpack_unpacked_destroy(&up);
  jb_job_free(j);
}

/* created_on is oslo's datetime ext (type 1) around a map of the naive
 * UTC fields of the job's created time, in taskflow's key order. */
static void posting_created_on_is_a_datetime_ext_of_the_created_time(
    void **state) {
  jbt_fixture *f = *state;
  char uuid[JB_UUID_STRLEN];
  msgpack_unpacked up;
  jb_job *j = post_demo_job_and_unpack(f, uuid, &up);
  const msgpack_object_kv *kv = up.data.via.map.ptr;
  expect_str(&kv[3].key, "created_on");
  assert_int_equal(kv[3].val.type, MSGPACK_OBJECT_EXT);
  assert_int_equal(kv[3].val.via.ext.type, 1);
  msgpack_unpacked dt;
  msgpack_unpacked_init(&dt);
  size_t doff = 0;
  assert_int_equal(msgpack_unpack_next(&dt, kv[3].val.via.ext.ptr,
                                       kv[3].val.via.ext.size, &doff),
                   MSGPACK_UNPACK_SUCCESS);
  assert_int_equal(doff, kv[3].val.via.ext.size);
  assert_int_equal(dt.data.type, MSGPACK_OBJECT_MAP);
  assert_int_equal(dt.data.via.map.size, 7);
  const char *dkeys[7] = {"day",    "month",  "year",       "hour",
                          "minute", "second", "microsecond"};
  time_t secs = (time_t)(jb_job_created(j) / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  const int64_t want[7] = {tm.tm_mday, tm.tm_mon + 1, tm.tm_year + 1900,
                           tm.tm_hour, tm.tm_min,     tm.tm_sec,
                           jb_job_created(j) % 1000000};
  for (int i = 0; i < 7; i++) {
    const msgpack_object_kv *e = &dt.data.via.map.ptr[i];
    expect_str(&e->key, dkeys[i]);
    assert_int_equal(e->val.type, MSGPACK_OBJECT_POSITIVE_INTEGER);
    assert_int_equal(e->val.via.u64, want[i]);
  }
  msgpack_unpacked_destroy(&dt);
  msgpack_unpacked_destroy(&up);
  jb_job_free(j);
}

/* Posts "demo-job" with a book and details {"store": 1}, or with neither,
 * and compares its posting with what taskflow writes for the same fields. */
static void check_posting_is_what_taskflow_writes(jbt_fixture *f,
                                                  int with_book) {
  /* First make sure the reference encoder reproduces taskflow's own bytes
   * (wire doc 2.4, captured from taskflow 5.0), so that the comparison
   * below is against taskflow and not against this file. */
  jbt_buf d = jbt_details_store(1);
  jbt_buf ref = taskflow_posting(
      "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f", "demo-job", "HIGH",
      INT64_C(1704164645000006), d.data, d.len, "my-book",
      "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9", 42);
  jbt_buf doc = jbt_from_hex(jbt_wire_posting_hex);
  assert_int_equal(doc.len, 233);
  assert_int_equal(ref.len, doc.len);
  assert_memory_equal(ref.data, doc.data, doc.len);
  jbt_buf_free(&ref);
  jbt_buf_free(&doc);

  jb_post p = JB_POST_INIT;
  p.name = "demo-job";
  p.details = with_book ? d.data : NULL;
  p.details_len = with_book ? d.len : 0;
  p.priority = with_book ? JB_PRIORITY_HIGH : JB_PRIORITY_NORMAL;
  p.book_name = with_book ? "my-book" : NULL;
  p.book_uuid = with_book ? "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9" : NULL;
  char uuid[JB_UUID_STRLEN];
  assert_int_equal(jb_job_post(uuid, f->board, &p), JB_OK);
  jb_job *j = get_ok(f->board, uuid);
  size_t len = 0;
  const void *bytes = jb_job_posting(j, &len);
  static const char empty_map[1] = {(char)0x80};
  jbt_buf want = taskflow_posting(
      uuid, "demo-job", with_book ? "HIGH" : "NORMAL", jb_job_created(j),
      with_book ? d.data : empty_map, with_book ? d.len : 1,
      with_book ? "my-book" : NULL, p.book_uuid, jb_job_sequence(j));
  assert_int_equal(len, want.len);
  assert_memory_equal(bytes, want.data, want.len);
  assert_int_equal(((const unsigned char *)bytes)[0], with_book ? 0x87 : 0x86);
  jbt_buf_free(&want);
  jb_job_free(j);
  jbt_buf_free(&d);
}

static void posting_with_a_book_is_what_taskflow_writes(void **state) {
  check_posting_is_what_taskflow_writes(*state, 1);
}

/* Without a book or details: taskflow's smallest form, header 0x86. */
static void posting_without_a_book_is_what_taskflow_writes(void **state) {
  check_posting_is_what_taskflow_writes(*state, 0);
}

static void posting_uses_upper_case_priority_names(void **state) {
  jbt_fixture *f = *state;
  for (int p = 0; p < 5; p++) {
    char uuid[JB_UUID_STRLEN];
    jbt_post(uuid, f->board, "p", (jb_priority)p);
    jb_job *j = get_ok(f->board, uuid);
    size_t len;
    const char *bytes = jb_job_posting(j, &len);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    assert_int_equal(msgpack_unpack_next(&up, bytes, len, &off),
                     MSGPACK_UNPACK_SUCCESS);
    expect_str(&up.data.via.map.ptr[2].key, "priority");
    expect_str(&up.data.via.map.ptr[2].val, jb_priority_name((jb_priority)p));
    msgpack_unpacked_destroy(&up);
    jb_job_free(j);
  }
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(post_stores_name_details_priority_and_book),
      T(a_recorded_check_is_kept_and_a_plain_one_is_not),
      T(check_ex_refuses_unknown_flags_and_null),
      T(post_stores_a_book_uuid_given_in_upper_case_in_lower_case),
      T(post_sets_created_and_modified_to_the_time_of_the_post),
      T(post_gives_a_sequence_of_one_or_more),
      T(a_posted_job_is_unclaimed_with_no_owner),
      T(post_returns_a_lowercase_version_7_uuid),
      T(post_uuid_starts_with_the_wall_clock_in_milliseconds),
      T(each_later_post_gets_a_uuid_that_sorts_after_the_one_before),
      T(post_without_details_stores_an_empty_map),
      T(post_without_a_book_has_no_book_name_or_uuid),
      T(posts_get_strictly_increasing_sequences),
      T(batch_post_posts_every_job_in_the_batch),
      T(batch_post_returns_each_jobs_uuid_in_batch_order),
      T(batch_post_gives_increasing_sequences_in_batch_order),
      T(get_of_unknown_job_is_not_found_and_names_it),
      T(get_accepts_an_upper_case_uuid),
      T(claim_accepts_an_upper_case_uuid),
      T(get_of_claimed_job_shows_owner_and_state),
      T(claim_of_unclaimed_job_makes_who_its_owner),
      T(claim_of_unknown_job_is_not_found_and_names_it),
      T(claim_of_consumed_job_is_not_found),
      T(claim_of_claimed_job_names_owner),
      T(claim_of_claimed_job_leaves_the_owner),
      T(claim_by_the_owner_itself_still_reports_already_claimed),
      T(claim_by_the_owner_itself_refreshes_modified_time),
      T(claim_by_another_owner_leaves_modified_time_alone),
      T(claim_sets_modified_time),
      T(claim_leaves_created_time_alone),
      T(claim_next_claims_the_first_claimable_job),
      T(claim_next_returns_a_snapshot_of_the_claimed_job),
      T(claim_next_accepts_no_out_parameters),
      T(claim_next_on_an_empty_board_is_not_found),
      T(claim_next_when_every_job_is_claimed_is_not_found),
      T(abandon_makes_the_job_claimable_again),
      T(abandon_sets_modified_time),
      T(abandon_of_unknown_job_is_not_found),
      T(abandon_of_unclaimed_job_is_not_found),
      T(abandon_by_another_owner_is_refused_naming_the_owner),
      T(consume_removes_the_job_from_the_board),
      T(consume_twice_is_not_found),
      T(consume_of_unknown_job_is_not_found),
      T(consume_of_unclaimed_job_is_not_found),
      T(consume_by_another_owner_is_refused_naming_the_owner),
      T(trash_removes_the_job_from_the_board),
      T(trash_keeps_the_jobs_posting_as_a_dead_letter),
      T(trash_of_unknown_job_is_not_found),
      T(trash_of_unclaimed_job_is_not_found),
      T(trash_by_another_owner_is_refused_naming_the_owner),
      T(job_goes_unclaimed_claimed_unclaimed_claimed_complete),
      T(state_of_a_job_never_posted_is_complete),
      T(find_owner_of_unclaimed_job_is_empty),
      T(find_owner_of_unknown_job_is_empty),
      T(find_owner_returns_a_long_owner_whole),
      T(count_of_an_empty_board_is_zero),
      T(count_counts_every_job_claimed_or_not),
      T(count_of_only_unclaimed_counts_unclaimed_jobs_alone),
      T(check_counts_ready_and_claimed_jobs),
      T(every_change_writes_one_change_log_event),
      T(a_claim_refused_as_claimed_by_another_writes_no_event),
      T(board_path_is_the_directory_it_was_opened_from),
      cmocka_unit_test(closing_and_freeing_null_are_harmless),
      cmocka_unit_test(strerror_starts_with_the_code_name_for_every_code),
      cmocka_unit_test(strerror_of_an_unknown_code_says_it_is_unknown),
      cmocka_unit_test(errmsg_is_never_null),
      cmocka_unit_test(version_call_matches_the_header_macros),
      cmocka_unit_test(version_string_is_major_dot_minor_dot_patch),
      cmocka_unit_test(
          version_number_macro_is_major_minor_patch_in_two_digits_each),
      cmocka_unit_test(version_call_accepts_no_out_parameters),
      cmocka_unit_test(priority_parse_ignores_case),
      cmocka_unit_test(priority_parse_rejects_unknown_names_naming_them),
      cmocka_unit_test(priority_parse_of_null_is_invalid),
      cmocka_unit_test(priority_names_round_trip_through_parse),
      cmocka_unit_test(priority_name_of_a_value_outside_the_enum_is_null),
      cmocka_unit_test(state_names_are_the_upper_case_state),
      cmocka_unit_test(state_name_of_a_value_outside_the_enum_is_null),
      cmocka_unit_test(durability_names_round_trip_through_parse),
      cmocka_unit_test(durability_parse_ignores_case),
      cmocka_unit_test(durability_parse_rejects_an_unknown_name_naming_it),
      cmocka_unit_test(durability_name_of_a_value_outside_the_enum_is_null),
      T(posting_is_a_map_in_taskflow_key_order),
      T(posting_created_on_is_a_datetime_ext_of_the_created_time),
      T(posting_with_a_book_is_what_taskflow_writes),
      T(posting_without_a_book_is_what_taskflow_writes),
      T(posting_uses_upper_case_priority_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
