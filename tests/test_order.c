/*
 * test_order.c - listing and claim-next order: priority (VERY_HIGH first),
 * then sequence (oldest first); JB_ONLY_UNCLAIMED; the iterator streams
 * across many read batches, sees each job once, and sees a job posted
 * behind its cursor while it runs.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char uuid[JB_UUID_STRLEN];
  jb_priority prio;
  uint64_t seq;
} posted;

/* Post n jobs with priorities drawn from `seed`; returns them in posting
 * order (so sequences increase along the array). */
static posted *post_mixed(jb_board *b, size_t n, unsigned seed) {
  posted *p = calloc(n, sizeof *p);
  assert_non_null(p);
  srand(seed);
  for (size_t i = 0; i < n; i++) {
    p[i].prio = (jb_priority)(rand() % 5);
    char name[32];
    snprintf(name, sizeof name, "job-%zu", i);
    jbt_post(p[i].uuid, b, name, p[i].prio);
    jb_job *j = NULL;
    assert_int_equal(jb_job_get(&j, b, p[i].uuid), JB_OK);
    p[i].seq = jb_job_sequence(j);
    jb_job_free(j);
  }
  return p;
}

/* Listing order: higher priority first, then lower sequence. */
static int listing_cmp(const void *a, const void *b) {
  const posted *x = a, *y = b;
  if (x->prio != y->prio) return x->prio > y->prio ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Iterate the board and fail unless it lists exactly `want[0..n)`. */
static void assert_listing(jb_board *b, unsigned flags, const posted *want,
                           size_t n) {
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, b, flags), JB_OK);
  size_t i = 0;
  for (;;) {
    const jb_job *j = NULL;
    int rc = jb_iter_next(&j, it);
    if (rc != JB_OK) fail_msg("jb_iter_next: %s", jb_errmsg());
    if (j == NULL) break;
    if (i >= n) fail_msg("listing has more than the %zu expected jobs", n);
    if (strcmp(jb_job_uuid(j), want[i].uuid) != 0)
      fail_msg("listing position %zu: got %s (%s, seq %llu), expected %s "
               "(%s, seq %llu)",
               i, jb_job_uuid(j), jb_priority_name(jb_job_priority(j)),
               (unsigned long long)jb_job_sequence(j), want[i].uuid,
               jb_priority_name(want[i].prio), (unsigned long long)want[i].seq);
    i++;
  }
  jb_iter_close(it);
  assert_int_equal(i, n);
}

static void listing_is_by_priority_then_oldest_first(void **state) {
  jbt_fixture *f = *state;
  unsigned seed = jbt_seed("listing order");
  size_t n = 200;
  posted *p = post_mixed(f->board, n, seed);
  qsort(p, n, sizeof *p, listing_cmp);
  assert_listing(f->board, 0, p, n);
  free(p);
}

static void listing_puts_very_high_first_and_very_low_last(void **state) {
  jbt_fixture *f = *state;
  /* Posted lowest first, so FIFO alone would give the reverse order. */
  posted p[5];
  for (int i = 0; i < 5; i++) {
    p[i].prio = (jb_priority)i;
    jbt_post(p[i].uuid, f->board, jb_priority_name(p[i].prio), p[i].prio);
  }
  posted want[5];
  for (int i = 0; i < 5; i++) want[i] = p[4 - i];
  assert_listing(f->board, 0, want, 5);
}

static void listing_within_a_priority_is_oldest_first(void **state) {
  jbt_fixture *f = *state;
  posted p[10];
  for (int i = 0; i < 10; i++) {
    p[i].prio = JB_PRIORITY_NORMAL;
    jbt_post(p[i].uuid, f->board, "fifo", p[i].prio);
  }
  assert_listing(f->board, 0, p, 10);
}

static void claim_next_follows_listing_order(void **state) {
  jbt_fixture *f = *state;
  unsigned seed = jbt_seed("claim-next order");
  size_t n = 150;
  posted *p = post_mixed(f->board, n, seed);
  qsort(p, n, sizeof *p, listing_cmp);
  for (size_t i = 0; i < n; i++) {
    char got[JB_UUID_STRLEN];
    assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
    if (strcmp(got, p[i].uuid) != 0)
      fail_msg("claim-next #%zu took %s, expected %s (%s, seq %llu)", i, got,
               p[i].uuid, jb_priority_name(p[i].prio),
               (unsigned long long)p[i].seq);
  }
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_ENOTFOUND);
  free(p);
}

static void claim_next_prefers_a_newer_higher_priority_job(void **state) {
  jbt_fixture *f = *state;
  char old_low[JB_UUID_STRLEN], new_high[JB_UUID_STRLEN], got[JB_UUID_STRLEN];
  jbt_post(old_low, f->board, "old", JB_PRIORITY_NORMAL);
  jbt_post(new_high, f->board, "new", JB_PRIORITY_VERY_HIGH);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_string_equal(got, new_high);
}

static void abandoned_job_returns_to_its_place_in_the_order(void **state) {
  jbt_fixture *f = *state;
  posted p[4];
  for (int i = 0; i < 4; i++) {
    p[i].prio = JB_PRIORITY_HIGH;
    jbt_post(p[i].uuid, f->board, "place", p[i].prio);
  }
  char got[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_string_equal(got, p[0].uuid);
  assert_int_equal(jb_abandon(f->board, p[0].uuid, "w", 0), JB_OK);
  /* The oldest job comes first again: abandon does not send it to the back. */
  assert_listing(f->board, JB_ONLY_UNCLAIMED, p, 4);
  assert_int_equal(jb_claim_next(got, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_string_equal(got, p[0].uuid);
}

/* Six jobs, NORMAL, LOW, VERY_LOW in turn; p[1] and p[4] claimed by
 * "w". */
static void post_six_claim_two(jbt_fixture *f, posted p[6]) {
  for (int i = 0; i < 6; i++) {
    p[i].prio = (jb_priority)(i % 3);
    jbt_post(p[i].uuid, f->board, "u", p[i].prio);
  }
  assert_int_equal(jb_claim(NULL, f->board, p[1].uuid, "w", NULL), JB_OK);
  assert_int_equal(jb_claim(NULL, f->board, p[4].uuid, "w", NULL), JB_OK);
}

static void only_unclaimed_listing_skips_claimed_jobs(void **state) {
  jbt_fixture *f = *state;
  posted p[6];
  post_six_claim_two(f, p);
  /* Listing order of the unclaimed ones: 2 (NORMAL), 5 (NORMAL), 0, 3. */
  posted want[4] = {p[2], p[5], p[0], p[3]};
  assert_listing(f->board, JB_ONLY_UNCLAIMED, want, 4);
}

/* Without the flag, claimed jobs are listed in their places, with owner. */
static void the_full_listing_shows_claimed_jobs_in_place_with_owner(
    void **state) {
  jbt_fixture *f = *state;
  posted p[6];
  post_six_claim_two(f, p);
  posted all[6] = {p[2], p[5], p[1], p[4], p[0], p[3]};
  assert_listing(f->board, 0, all, 6);
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  const jb_job *j = NULL;
  for (int i = 0; i < 3; i++) assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_string_equal(jb_job_uuid(j), p[1].uuid);
  assert_int_equal(jb_job_state(j), JB_STATE_CLAIMED);
  assert_string_equal(jb_job_owner(j), "w");
  jb_iter_close(it);
}

static void iterating_an_empty_board_ends_at_once(void **state) {
  jbt_fixture *f = *state;
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  const jb_job *j = (const jb_job *)1;
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_null(j);
  /* and stays at the end */
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_null(j);
  jb_iter_close(it);
}

/* Post n jobs in batches (one transaction each) at one priority. */
static void post_many(jb_board *b, posted *p, size_t n, jb_priority prio) {
  const size_t chunk = 250;
  jb_post *posts = calloc(chunk, sizeof *posts);
  char(*uuids)[JB_UUID_STRLEN] = calloc(chunk, sizeof *uuids);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < chunk ? n - done : chunk;
    for (size_t i = 0; i < k; i++) {
      jb_post one = JB_POST_INIT;
      one.name = "many";
      one.priority = prio;
      posts[i] = one;
    }
    int rc = jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK) fail_msg("batch: %s", jb_errmsg());
    for (size_t i = 0; i < k; i++) {
      memcpy(p[done + i].uuid, uuids[i], JB_UUID_STRLEN);
      p[done + i].prio = prio;
    }
    done += k;
  }
  free(posts);
  free(uuids);
}

static void iterator_streams_over_many_batches_each_job_once_in_order(
    void **state) {
  jbt_fixture *f = *state;
  size_t n = 1000;
  posted *p = calloc(n, sizeof *p);
  /* Half VERY_LOW first, then half VERY_HIGH, so the order is not simply
   * the posting order. */
  post_many(f->board, p, n / 2, JB_PRIORITY_VERY_LOW);
  post_many(f->board, p + n / 2, n / 2, JB_PRIORITY_VERY_HIGH);
  posted *want = calloc(n, sizeof *want);
  memcpy(want, p + n / 2, n / 2 * sizeof *p);
  memcpy(want + n / 2, p, n / 2 * sizeof *p);
  assert_listing(f->board, 0, want, n);
  free(want);
  free(p);
}

/* Both sides of one promise: what is posted is delivered if it sorts
 * after the cursor (lowest priority, newest), never if it sorts before it
 * (highest priority), and the rest comes once each, in order. */
static void iterator_sees_a_job_posted_behind_its_cursor(void **state) {
  jbt_fixture *f = *state;
  size_t n = 300;
  posted *p = calloc(n, sizeof *p);
  post_many(f->board, p, n, JB_PRIORITY_NORMAL);
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  const jb_job *j = NULL;
  for (size_t i = 0; i < 10; i++) {
    assert_int_equal(jb_iter_next(&j, it), JB_OK);
    assert_string_equal(jb_job_uuid(j), p[i].uuid);
  }
  /* A job that sorts after every other (lowest priority, newest), and one
   * that sorts before the cursor (highest priority). */
  char late[JB_UUID_STRLEN], early[JB_UUID_STRLEN];
  jbt_post(late, f->board, "late", JB_PRIORITY_VERY_LOW);
  jbt_post(early, f->board, "early", JB_PRIORITY_VERY_HIGH);
  size_t seen = 10, late_seen = 0;
  uint64_t last_seq = 0;
  for (;;) {
    assert_int_equal(jb_iter_next(&j, it), JB_OK);
    if (j == NULL) break;
    if (strcmp(jb_job_uuid(j), late) == 0) {
      late_seen++;
      continue;
    }
    /* a job before the cursor is never (re)delivered */
    assert_string_not_equal(jb_job_uuid(j), early);
    assert_true(seen < n);
    assert_string_equal(jb_job_uuid(j), p[seen].uuid);
    assert_true(jb_job_sequence(j) > last_seq);
    last_seq = jb_job_sequence(j);
    seen++;
  }
  jb_iter_close(it);
  assert_int_equal(seen, n);
  assert_int_equal(late_seen, 1);
  free(p);
}

static void only_unclaimed_iterator_streams_past_many_claimed_jobs(
    void **state) {
  jbt_fixture *f = *state;
  size_t n = 600;
  posted *p = calloc(n, sizeof *p);
  post_many(f->board, p, n, JB_PRIORITY_NORMAL);
  /* Claim all but every 50th: the claimable ones are far apart. */
  posted *want = calloc(n, sizeof *want);
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % 50 == 49)
      want[w++] = p[i];
    else
      assert_int_equal(jb_claim(NULL, f->board, p[i].uuid, "w", NULL), JB_OK);
  }
  assert_listing(f->board, JB_ONLY_UNCLAIMED, want, w);
  size_t unclaimed = 0;
  assert_int_equal(jb_board_count(&unclaimed, f->board, JB_ONLY_UNCLAIMED),
                   JB_OK);
  assert_int_equal(unclaimed, w);
  free(want);
  free(p);
}

static void iterator_keeps_its_place_while_jobs_are_claimed(void **state) {
  jbt_fixture *f = *state;
  size_t n = 200;
  posted *p = calloc(n, sizeof *p);
  post_many(f->board, p, n, JB_PRIORITY_LOW);
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  const jb_job *j = NULL;
  /* Consume each job as it is listed: the iterator must not skip or
   * repeat any of the rest. */
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(jb_iter_next(&j, it), JB_OK);
    assert_non_null(j);
    assert_string_equal(jb_job_uuid(j), p[i].uuid);
    assert_int_equal(jb_claim(NULL, f->board, p[i].uuid, "w", NULL), JB_OK);
    assert_int_equal(jb_consume(f->board, p[i].uuid, "w", 0, NULL), JB_OK);
  }
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_null(j);
  jb_iter_close(it);
  free(p);
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(listing_is_by_priority_then_oldest_first),
      T(listing_puts_very_high_first_and_very_low_last),
      T(listing_within_a_priority_is_oldest_first),
      T(claim_next_follows_listing_order),
      T(claim_next_prefers_a_newer_higher_priority_job),
      T(abandoned_job_returns_to_its_place_in_the_order),
      T(only_unclaimed_listing_skips_claimed_jobs),
      T(the_full_listing_shows_claimed_jobs_in_place_with_owner),
      T(iterating_an_empty_board_ends_at_once),
      T(iterator_streams_over_many_batches_each_job_once_in_order),
      T(iterator_sees_a_job_posted_behind_its_cursor),
      T(only_unclaimed_iterator_streams_past_many_claimed_jobs),
      T(iterator_keeps_its_place_while_jobs_are_claimed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
