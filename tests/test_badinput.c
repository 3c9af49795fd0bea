/*
 * test_badinput.c - bad input gives the right code, a message naming the
 * problem, and changes nothing (docs/DESIGN-NOTES.md, "Errors and exit
 * codes").
 *
 * "Nothing" is checked twice: what a reader sees (count, unclaimed count,
 * the listing with owners and modified times) and every record of every
 * LMDB database of the board (a digest read by a separate process), so a
 * failed call that bumped a counter or wrote a log event is caught too.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The fixture board holds three jobs; the first is claimed by "owner-1". */
typedef struct {
  char u[3][JB_UUID_STRLEN];
} jobs3;

static int setup(void **state) {
  jbt_setup(state);
  jbt_fixture *f = *state;
  jobs3 *j = calloc(1, sizeof *j);
  assert_non_null(j);
  f->extra = j;
  jbt_post(j->u[0], f->board, "first", JB_PRIORITY_HIGH);
  jbt_post(j->u[1], f->board, "second", JB_PRIORITY_NORMAL);
  jbt_post(j->u[2], f->board, "third", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim(NULL, f->board, j->u[0], "owner-1", NULL), JB_OK);
  return 0;
}

static const char *claimed_uuid(jbt_fixture *f) {
  return ((jobs3 *)f->extra)->u[0];
}
static const char *unclaimed_uuid(jbt_fixture *f) {
  return ((jobs3 *)f->extra)->u[1];
}

/* Run `call`, expect `code` and a message containing `needle`, and check
 * that the board did not change. */
#define EXPECT_REFUSED(f, code, needle, call)                                  \
  do {                                                                         \
    jbt_snapshot before_, after_;                                              \
    jbt_snapshot_take(&before_, (f)->board);                                   \
    int rc_ = (call);                                                          \
    if (rc_ != (code))                                                         \
      fail_msg("%s returned %s, expected %s (%s)", #call, jb_strerror(rc_),    \
               jb_strerror(code), jb_errmsg());                                \
    jbt_assert_contains(jb_errmsg(), (needle));                                \
    jbt_snapshot_take(&after_, (f)->board);                                    \
    jbt_snapshot_assert_same(&before_, &after_);                               \
    jbt_snapshot_free(&before_);                                               \
    jbt_snapshot_free(&after_);                                                \
  } while (0)

static int post_one(jbt_fixture *f, const jb_post *p) {
  char uuid[JB_UUID_STRLEN];
  return jb_job_post(uuid, f->board, p);
}

/* ------------------------------------------------------------------ post */

static void post_without_a_name_is_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  EXPECT_REFUSED(f, JB_EINVAL, "name", post_one(f, &p));
}

static void post_with_an_empty_name_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "";
  EXPECT_REFUSED(f, JB_EINVAL, "name", post_one(f, &p));
}

/* A malloc'd name of `len` 'n's. */
static char *name_of_length(size_t len) {
  char *name = malloc(len + 1);
  assert_non_null(name);
  memset(name, 'n', len);
  name[len] = '\0';
  return name;
}

static void post_with_a_name_longer_than_the_limit_is_refused(void **state) {
  jbt_fixture *f = *state;
  char *name = name_of_length(JB_NAME_MAX + 1);
  jb_post p = JB_POST_INIT;
  p.name = name;
  EXPECT_REFUSED(f, JB_EINVAL, "name", post_one(f, &p));
  free(name);
}

static void post_with_a_name_of_exactly_the_limit_is_accepted(void **state) {
  jbt_fixture *f = *state;
  char *name = name_of_length(JB_NAME_MAX);
  jb_post p = JB_POST_INIT;
  p.name = name;
  char uuid[JB_UUID_STRLEN];
  assert_int_equal(jb_job_post(uuid, f->board, &p), JB_OK);
  free(name);
}

static void post_with_a_name_that_is_not_utf8_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "bad\xff\xfe";
  EXPECT_REFUSED(f, JB_EINVAL, "name", post_one(f, &p));
}

static void post_with_an_unknown_priority_value_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "prio";
  p.priority = (jb_priority)9;
  EXPECT_REFUSED(f, JB_EINVAL, "priority", post_one(f, &p));
  p.priority = (jb_priority)-1;
  EXPECT_REFUSED(f, JB_EINVAL, "priority", post_one(f, &p));
}

static void post_details(jbt_fixture *f, const void *d, size_t len) {
  jb_post p = JB_POST_INIT;
  p.name = "details";
  p.details = d;
  p.details_len = len;
  EXPECT_REFUSED(f, JB_EINVAL, "details", post_one(f, &p));
}

static void post_with_details_that_are_an_array_is_refused(void **state) {
  static const unsigned char arr[] = {0x92, 0x01, 0x02}; /* [1, 2] */
  post_details(*state, arr, sizeof arr);
}

static void post_with_details_that_are_an_integer_is_refused(void **state) {
  static const unsigned char num[] = {0x05};
  post_details(*state, num, sizeof num);
}

static void post_with_details_that_are_a_string_is_refused(void **state) {
  static const unsigned char str[] = {0xa1, 'x'};
  post_details(*state, str, sizeof str);
}

static void post_with_bytes_after_the_details_map_is_refused(void **state) {
  static const unsigned char trailing[] = {0x80, 0x01};
  post_details(*state, trailing, sizeof trailing);
  static const unsigned char two_maps[] = {0x80, 0x80};
  post_details(*state, two_maps, sizeof two_maps);
}

static void post_with_truncated_details_is_refused(void **state) {
  /* {"x": <missing>} and {"abc"... cut inside the key} */
  static const unsigned char cut_value[] = {0x81, 0xa1, 'x'};
  post_details(*state, cut_value, sizeof cut_value);
  static const unsigned char cut_key[] = {0x81, 0xa3, 'a', 'b'};
  post_details(*state, cut_key, sizeof cut_key);
  static const unsigned char cut_map16[] = {0xde, 0x00};
  post_details(*state, cut_map16, sizeof cut_map16);
}

static void post_with_details_holding_an_invalid_byte_is_refused(void **state) {
  static const unsigned char never_used[] = {0x81, 0xa1, 'x', 0xc1};
  post_details(*state, never_used, sizeof never_used);
}

static void post_with_null_details_and_a_length_is_refused(void **state) {
  post_details(*state, NULL, 3);
}

/* {"k": {"k": ... 1}}, `depth` maps deep. */
static size_t nested_maps(unsigned char *out, int depth) {
  size_t n = 0;
  for (int i = 0; i < depth; i++) {
    out[n++] = 0x81;
    out[n++] = 0xa1;
    out[n++] = 'k';
  }
  out[n++] = 0x01;
  return n;
}

/* Details 32 maps deep make a posting (33 levels) beyond what msgpack-c
 * reads: stored, every jb_job_get of the job and every list would say
 * "out of memory". So they are refused as bad input (JB_EINVAL), and so
 * are details 33 deep, not as JB_ENOMEM (an input
 * tests/fuzz/fuzz_posting.c found). */
static void post_with_details_nested_deeper_than_a_posting_holds_is_refused(
    void **state) {
  jbt_fixture *f = *state;
  unsigned char d[200];
  post_details(f, d, nested_maps(d, 32));
  jbt_assert_contains(jb_errmsg(), "nested deeper than 31 levels");
  post_details(f, d, nested_maps(d, 33));
  jbt_assert_contains(jb_errmsg(), "nested deeper than 31 levels");
}

/* 31 levels, as deep as a posting holds, go on and read back. */
static void post_with_details_31_maps_deep_reads_back_whole(void **state) {
  jbt_fixture *f = *state;
  unsigned char d[200];
  jb_post p = JB_POST_INIT;
  p.name = "deep";
  p.details = d;
  p.details_len = nested_maps(d, 31);
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_job_post(u, f->board, &p), JB_OK);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, u), JB_OK);
  size_t len = 0;
  const void *got = jb_job_details(job, &len);
  assert_int_equal(len, p.details_len);
  assert_memory_equal(got, d, len);
  jb_job_free(job);
}

/* A map header declaring 2^32-1 entries in 5 bytes: msgpack-c would
 * allocate 128 GiB for it before reading on (codec/mpscan.h). */
static void post_with_details_declaring_more_than_they_hold_is_refused(
    void **state) {
  static const unsigned char huge[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
  post_details(*state, huge, sizeof huge);
  jbt_assert_contains(jb_errmsg(), "truncated");
  static const unsigned char inner[] = {0x81, 0xa1, 'x', 0xdd, 0xff, 0xff,
                                        0xff, 0xff};
  post_details(*state, inner, sizeof inner);
  jbt_assert_contains(jb_errmsg(), "truncated");
}

static void post_without_book_uuid_for_a_book_name_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "book";
  p.book_name = "my-book";
  EXPECT_REFUSED(f, JB_EINVAL, "book", post_one(f, &p));
}

static void post_with_a_book_uuid_but_no_book_name_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "book";
  p.book_uuid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  EXPECT_REFUSED(f, JB_EINVAL, "book", post_one(f, &p));
}

static void post_with_a_malformed_book_uuid_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_post p = JB_POST_INIT;
  p.name = "book";
  p.book_name = "my-book";
  p.book_uuid = "not-a-uuid";
  EXPECT_REFUSED(f, JB_EINVAL, "book", post_one(f, &p));
  p.book_uuid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8fz";
  EXPECT_REFUSED(f, JB_EINVAL, "book", post_one(f, &p));
  /* A bad first digit of a pair: the parser shifted its -1 (undefined
   * behaviour, caught by UBSan; found by tests/fuzz/fuzz_batch.c). */
  p.book_uuid = "zb1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  EXPECT_REFUSED(f, JB_EINVAL, "book", post_one(f, &p));
}

/* Reopen the fixture's board with a 4 KiB posting limit. */
static void reopen_with_max_posting(jbt_fixture *f, size_t max) {
  jb_board_close(f->board);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.max_posting = max;
  f->board = NULL;
  int rc = jb_board_open(&f->board, f->dir, &o);
  if (rc != JB_OK) fail_msg("reopen: %s", jb_errmsg());
}

static void post_bigger_than_max_posting_is_refused(void **state) {
  jbt_fixture *f = *state;
  reopen_with_max_posting(f, 4096);
  jbt_buf big = jbt_details_blob(5000, 1);
  jb_post p = JB_POST_INIT;
  p.name = "big";
  p.details = big.data;
  p.details_len = big.len;
  EXPECT_REFUSED(f, JB_EINVAL, "4096", post_one(f, &p));
  jbt_buf_free(&big);
}

/* The limit is the posting's size: details well under it go on. */
static void post_well_under_max_posting_is_accepted(void **state) {
  jbt_fixture *f = *state;
  reopen_with_max_posting(f, 4096);
  jb_post p = JB_POST_INIT;
  p.name = "big";
  jbt_buf small = jbt_details_blob(3500, 1);
  p.details = small.data;
  p.details_len = small.len;
  assert_int_equal(post_one(f, &p), JB_OK);
  jbt_buf_free(&small);
}

static void post_bigger_than_the_default_limit_is_refused(void **state) {
  jbt_fixture *f = *state;
  jbt_buf big = jbt_details_blob((size_t)1 << 20, 2); /* 1 MiB + headers */
  jb_post p = JB_POST_INIT;
  p.name = "huge";
  p.details = big.data;
  p.details_len = big.len;
  EXPECT_REFUSED(f, JB_EINVAL, "posting", post_one(f, &p));
  jbt_buf_free(&big);
}

static void batch_with_one_bad_post_posts_nothing_and_names_its_index(
    void **state) {
  jbt_fixture *f = *state;
  jb_post posts[5];
  for (int i = 0; i < 5; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "batch";
    posts[i] = p;
  }
  posts[3].name = "";
  char uuids[5][JB_UUID_STRLEN];
  EXPECT_REFUSED(f, JB_EINVAL, "3", jb_job_post_batch(uuids, f->board, posts, 5));
  jbt_assert_contains(jb_errmsg(), "name");
  posts[3].name = "batch";
  posts[4].priority = (jb_priority)77;
  EXPECT_REFUSED(f, JB_EINVAL, "4", jb_job_post_batch(uuids, f->board, posts, 5));
  jbt_assert_contains(jb_errmsg(), "priority");
}

static void batch_with_an_oversize_post_posts_nothing(void **state) {
  jbt_fixture *f = *state;
  reopen_with_max_posting(f, 4096);
  jbt_buf big = jbt_details_blob(8000, 3);
  jb_post posts[3];
  for (int i = 0; i < 3; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "batch";
    posts[i] = p;
  }
  posts[2].details = big.data;
  posts[2].details_len = big.len;
  char uuids[3][JB_UUID_STRLEN];
  EXPECT_REFUSED(f, JB_EINVAL, "2", jb_job_post_batch(uuids, f->board, posts, 3));
  jbt_buf_free(&big);
}

/* ------------------------------------------------------------------- who */

static void claim_with_an_empty_who_is_refused_naming_who(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_claim(NULL, f->board, unclaimed_uuid(f), "", NULL));
}

static void claim_with_a_null_who_is_refused_naming_who(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_EINVAL, "who",
                 jb_claim(NULL, f->board, unclaimed_uuid(f), NULL, NULL));
}

static void claim_with_a_who_longer_than_the_limit_is_refused(void **state) {
  jbt_fixture *f = *state;
  char who[JB_WHO_MAX + 2];
  memset(who, 'w', JB_WHO_MAX + 1);
  who[JB_WHO_MAX + 1] = '\0';
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_claim(NULL, f->board, unclaimed_uuid(f), who, NULL));
}

static void claim_with_a_who_that_is_not_utf8_is_refused(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_EINVAL, "who",
                 jb_claim(NULL, f->board, unclaimed_uuid(f), "w\xc3", NULL));
}

static void every_owner_operation_refuses_an_empty_who(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_claim_next(NULL, NULL, NULL, f->board, "", NULL));
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_abandon(f->board, claimed_uuid(f), "", 0));
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_consume(f->board, claimed_uuid(f), "", 0, NULL));
  EXPECT_REFUSED(f, JB_EINVAL, "who", jb_trash(f->board, claimed_uuid(f), "", 0));
}

static void abandon_with_a_null_who_is_refused_naming_who(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_EINVAL, "who",
                 jb_abandon(f->board, claimed_uuid(f), NULL, 0));
}

/* ----------------------------------------------------------------- uuids */

static const char *const bad_uuids[] = {
    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5",   /* one short */
    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f0", /* one long */
    "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5g",  /* not hex */
    "3f0d7e9c1-b2a-4c5d-8e6f-0a1b2c3d4e5f",  /* hyphen misplaced */
    "3f0d7e9c 1b2a 4c5d 8e6f 0a1b2c3d4e5f",  /* no hyphens */
    "",
};
#define N_BAD (sizeof bad_uuids / sizeof bad_uuids[0])

static int do_get(jb_board *b, const char *u) {
  jb_job *j = (jb_job *)1;
  int rc = jb_job_get(&j, b, u);
  if (j != NULL) fail_msg("jb_job_get left *out set on failure");
  return rc;
}
static int do_owner(jb_board *b, const char *u) {
  char owner[JB_WHO_MAX + 1];
  return jb_job_find_owner(owner, b, u);
}
static int do_state(jb_board *b, const char *u) {
  jb_state s;
  return jb_job_get_state(&s, b, u);
}
static int do_claim(jb_board *b, const char *u) { return jb_claim(NULL, b, u, "w", NULL); }
static int do_abandon(jb_board *b, const char *u) {
  return jb_abandon(b, u, "owner-1", 0);
}
static int do_consume(jb_board *b, const char *u) {
  return jb_consume(b, u, "owner-1", 0, NULL);
}
static int do_trash(jb_board *b, const char *u) {
  return jb_trash(b, u, "owner-1", 0);
}

static void each_bad_uuid_is_refused(jbt_fixture *f,
                                     int (*op)(jb_board *, const char *)) {
  for (size_t i = 0; i < N_BAD; i++)
    EXPECT_REFUSED(f, JB_EINVAL, "uuid", op(f->board, bad_uuids[i]));
  EXPECT_REFUSED(f, JB_EINVAL, "uuid", op(f->board, NULL));
}

static void get_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_get);
}
static void find_owner_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_owner);
}
static void state_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_state);
}
static void claim_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_claim);
}
static void abandon_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_abandon);
}
static void consume_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_consume);
}
static void trash_of_a_malformed_uuid_is_refused(void **state) {
  each_bad_uuid_is_refused(*state, do_trash);
}

static void malformed_uuid_message_quotes_the_text(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(do_claim(f->board, "zz-not-a-uuid"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "zz-not-a-uuid");
}

/* --------------------------------------------------------- refused calls */

static void claim_of_a_job_claimed_by_another_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  EXPECT_REFUSED(f, JB_ECLAIMED, "owner-1",
                 jb_claim(NULL, f->board, claimed_uuid(f), "owner-2", NULL));
}

static void owner_operations_by_a_non_owner_change_nothing(void **state) {
  jbt_fixture *f = *state;
  const char *u = claimed_uuid(f);
  EXPECT_REFUSED(f, JB_ENOTOWNER, "owner-1", jb_abandon(f->board, u, "owner-2", 0));
  EXPECT_REFUSED(f, JB_ENOTOWNER, "owner-1", jb_consume(f->board, u, "owner-2", 0, NULL));
  EXPECT_REFUSED(f, JB_ENOTOWNER, "owner-1", jb_trash(f->board, u, "owner-2", 0));
}

static void owner_operations_on_an_unclaimed_job_change_nothing(void **state) {
  jbt_fixture *f = *state;
  const char *u = unclaimed_uuid(f);
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_abandon(f->board, u, "owner-1", 0));
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_consume(f->board, u, "owner-1", 0, NULL));
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_trash(f->board, u, "owner-1", 0));
}

static void operations_on_an_unknown_job_change_nothing(void **state) {
  jbt_fixture *f = *state;
  const char *u = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_claim(NULL, f->board, u, "owner-1", NULL));
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_abandon(f->board, u, "owner-1", 0));
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_consume(f->board, u, "owner-1", 0, NULL));
  EXPECT_REFUSED(f, JB_ENOTFOUND, u, jb_trash(f->board, u, "owner-1", 0));
}

static void claim_next_with_nothing_claimable_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before, after;
  /* Claim the two unclaimed jobs, then ask for more. */
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  jbt_snapshot_take(&before, f->board);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_ENOTFOUND);
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

/* ------------------------------------------------------------------ open */

static int open_plain(jb_board **out, const char *path) {
  return jb_board_open(out, path, NULL);
}

static void open_of_a_missing_directory_is_not_found_and_creates_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char *path = jbt_path(f->dir, "missing");
  jb_board *b = (jb_board *)1;
  assert_int_equal(open_plain(&b, path), JB_ENOTFOUND);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), path);
  struct stat st;
  assert_int_equal(stat(path, &st), -1);
  assert_int_equal(errno, ENOENT);
  free(path);
}

static void open_with_create_does_not_create_parents(void **state) {
  jbt_fixture *f = *state;
  char *path = jbt_path(f->dir, "no/such/parent");
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  jb_board *b = (jb_board *)1;
  assert_int_equal(jb_board_open(&b, path, &o), JB_ENOTFOUND);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), path);
  char *parent = jbt_path(f->dir, "no");
  struct stat st;
  assert_int_equal(stat(parent, &st), -1);
  free(parent);
  free(path);
}

static void write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  close(fd);
}

/* Fail unless `path` holds exactly data[0..len). */
static void assert_file_is(const char *path, const void *data, size_t len) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  char *buf = malloc(len + 1);
  size_t n = fread(buf, 1, len + 1, fp);
  fclose(fp);
  assert_int_equal(n, len);
  assert_memory_equal(buf, data, len);
  free(buf);
}

static void assert_no_file(const char *dir, const char *name) {
  char *path = jbt_path(dir, name);
  struct stat st;
  if (stat(path, &st) == 0) fail_msg("%s exists, and should not", path);
  free(path);
}

static off_t file_size(const char *dir, const char *name) {
  char *path = jbt_path(dir, name);
  struct stat st;
  if (stat(path, &st) != 0) fail_msg("cannot stat %s", path);
  free(path);
  return st.st_size;
}

static void open_of_a_regular_file_is_invalid_and_leaves_it_alone(
    void **state) {
  jbt_fixture *f = *state;
  char *path = jbt_path(f->dir, "plain-file");
  write_file(path, "hello\n", 6);
  jb_board *b = (jb_board *)1;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  assert_int_equal(jb_board_open(&b, path, &o), JB_EINVAL);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), path);
  assert_file_is(path, "hello\n", 6);
  free(path);
}

/* A directory "garbage" in the fixture's whose data.mdb holds 64 KiB of
 * pseudo-random bytes, which go to *junk (GARBAGE_LEN of them). */
#define GARBAGE_LEN (64 * 1024)
static char *make_garbage_dir(jbt_fixture *f, char **data,
                              unsigned char **junk) {
  char *dir = jbt_path(f->dir, "garbage");
  assert_int_equal(mkdir(dir, 0755), 0);
  *data = jbt_path(dir, "data.mdb");
  *junk = malloc(GARBAGE_LEN);
  assert_non_null(*junk);
  unsigned x = 12345;
  for (size_t i = 0; i < GARBAGE_LEN; i++) {
    x = x * 1103515245u + 12345u;
    (*junk)[i] = (unsigned char)(x >> 16);
  }
  write_file(*data, *junk, GARBAGE_LEN);
  return dir;
}

static void open_of_a_directory_with_garbage_data_is_corrupt(void **state) {
  jbt_fixture *f = *state;
  char *data;
  unsigned char *junk;
  char *dir = make_garbage_dir(f, &data, &junk);
  jb_board *b = (jb_board *)1;
  assert_int_equal(open_plain(&b, dir), JB_ECORRUPT);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), dir);
  assert_file_is(data, junk, GARBAGE_LEN);
  free(junk);
  free(data);
  free(dir);
}

/* JB_OPEN_CREATE must not "repair" it by starting a new board. */
static void open_with_create_of_garbage_data_is_corrupt_and_starts_no_board(
    void **state) {
  jbt_fixture *f = *state;
  char *data;
  unsigned char *junk;
  char *dir = make_garbage_dir(f, &data, &junk);
  jb_board *b = (jb_board *)1;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_ECORRUPT);
  assert_file_is(data, junk, GARBAGE_LEN);
  assert_no_file(dir, "lock.mdb");
  free(junk);
  free(data);
  free(dir);
}

static void open_of_a_short_garbage_file_is_corrupt(void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "short");
  assert_int_equal(mkdir(dir, 0755), 0);
  char *data = jbt_path(dir, "data.mdb");
  write_file(data, "this is not an LMDB file\n", 25);
  jb_board *b = (jb_board *)1;
  assert_int_equal(open_plain(&b, dir), JB_ECORRUPT);
  assert_null(b);
  assert_file_is(data, "this is not an LMDB file\n", 25);
  assert_no_file(dir, "lock.mdb");
  free(data);
  free(dir);
}

static void open_of_an_empty_data_file_is_not_found_and_writes_nothing(
    void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "empty");
  assert_int_equal(mkdir(dir, 0755), 0);
  char *data = jbt_path(dir, "data.mdb");
  write_file(data, "", 0);
  jb_board *b = (jb_board *)1;
  assert_int_equal(open_plain(&b, dir), JB_ENOTFOUND);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), dir);
  jbt_assert_contains(jb_errmsg(), "empty");
  assert_file_is(data, "", 0);
  assert_no_file(dir, "lock.mdb");
  free(data);
  free(dir);
}

/* Make `dir` an LMDB environment that is not a board: one named database
 * of someone else's. Done in a child (one environment per process). */
static int make_foreign_env(void *arg) {
  const char *dir = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  if (mdb_env_create(&env)) return 1;
  mdb_env_set_maxdbs(env, 4);
  if (mdb_env_open(env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, "accounts", MDB_CREATE, &dbi)) return 4;
  MDB_val k = {5, "alice"}, v = {3, "100"};
  if (mdb_put(txn, dbi, &k, &v, 0)) return 5;
  if (mdb_txn_commit(txn)) return 6;
  mdb_env_close(env);
  return 0;
}

/* An LMDB environment whose main database holds a plain record named
 * "meta" (where a board has its meta table). */
static int make_env_with_plain_meta(void *arg) {
  const char *dir = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  if (mdb_env_create(&env)) return 1;
  if (mdb_env_open(env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, NULL, 0, &dbi)) return 4;
  MDB_val k = {4, "meta"}, v = {5, "plain"};
  if (mdb_put(txn, dbi, &k, &v, 0)) return 5;
  if (mdb_txn_commit(txn)) return 6;
  mdb_env_close(env);
  return 0;
}

static void open_of_an_environment_with_a_plain_meta_record_is_corrupt(
    void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "plain-meta");
  assert_int_equal(mkdir(dir, 0755), 0);
  jbt_wait_ok(jbt_fork(make_env_with_plain_meta, dir, 20), 20000);
  /* As a data file copied without its lock file: the one LMDB has to make
   * to look inside must not stay behind. */
  char *lock = jbt_path(dir, "lock.mdb");
  assert_int_equal(unlink(lock), 0);
  off_t data_size = file_size(dir, "data.mdb");
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = (jb_board *)1;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_ECORRUPT);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), "not a jobboard board");
  assert_int_equal(file_size(dir, "data.mdb"), data_size);
  assert_no_file(dir, "lock.mdb");
  free(lock);
  free(dir);
}

/* In every durability (none maps the file writable and reserves its
 * blocks), for a plain open and for one allowed to create: refused, and
 * neither file of the environment changes, not even in size. */
static void open_of_an_lmdb_environment_that_is_not_a_board_is_corrupt(
    void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "foreign");
  assert_int_equal(mkdir(dir, 0755), 0);
  jbt_wait_ok(jbt_fork(make_foreign_env, dir, 20), 20000);
  uint64_t before = jbt_board_digest(dir);
  off_t data_size = file_size(dir, "data.mdb");
  off_t lock_size = file_size(dir, "lock.mdb");
  const jb_durability modes[] = {JB_DURABILITY_FULL, JB_DURABILITY_NORMAL,
                                 JB_DURABILITY_NONE};
  for (int create = 0; create < 2; create++) {
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
      jb_board_options o = JB_BOARD_OPTIONS_INIT;
      o.durability = modes[i];
      o.flags = create ? JB_OPEN_CREATE : 0;
      jb_board *b = (jb_board *)1;
      assert_int_equal(jb_board_open(&b, dir, &o), JB_ECORRUPT);
      assert_null(b);
      jbt_assert_contains(jb_errmsg(), dir);
      jbt_assert_contains(jb_errmsg(), "not a jobboard board");
      assert_int_equal(file_size(dir, "data.mdb"), data_size);
      assert_int_equal(file_size(dir, "lock.mdb"), lock_size);
    }
  }
  assert_int_equal(jbt_board_digest(dir), before);
  free(dir);
}

/* Write one record of the board's meta table in `dir` behind jobboard's
 * back (a child process: LMDB allows one environment per process). */
static int meta_put(const char *dir, const char *key, const void *val,
                    size_t len) {
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  if (mdb_env_create(&env)) return 1;
  mdb_env_set_maxdbs(env, 16);
  if (mdb_env_open(env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, JB_DB_META, 0, &dbi)) return 4;
  MDB_val k = {strlen(key), (void *)key}, v = {len, (void *)val};
  if (mdb_put(txn, dbi, &k, &v, 0)) return 5;
  if (mdb_txn_commit(txn)) return 6;
  mdb_env_close(env);
  return 0;
}

/* Overwrite the board's schema number (meta "schema", a u32; see
 * store/store.h) as a newer jobboard would have written it. */
static int bump_schema(void *arg) {
  uint32_t schema = JB_SCHEMA_VERSION + 1;
  return meta_put(arg, "schema", &schema, sizeof schema);
}

/* A last check's record of the wrong size (meta "check.last", store.h),
 * as a damaged file could hold. */
static int garble_last_check(void *arg) {
  return meta_put(arg, "check.last", "bad", 3);
}

static void keep_lines(const char *line, void *arg) {
  size_t n = strlen(arg);
  snprintf((char *)arg + n, 1024 - n, "%s\n", line);
}

static void a_garbled_last_check_record_is_reported_and_replaced(
    void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = NULL;
  jbt_wait_ok(jbt_fork(garble_last_check, f->dir, 20), 20000);
  jb_board *b = NULL;
  assert_int_equal(open_plain(&b, f->dir), JB_OK);
  jb_check_record r;
  assert_int_equal(jb_board_last_check(&r, b), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), "does not decode");
  char lines[1024] = "";
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, keep_lines, lines), JB_ECORRUPT);
  assert_int_equal(st.problems, 1);
  jbt_assert_contains(lines, "check.last");
  /* A recorded check replaces it, and says what it found. */
  assert_int_equal(jb_board_check_ex(&st, b, JB_CHECK_RECORD, NULL, NULL),
                   JB_ECORRUPT);
  assert_int_equal(jb_board_last_check(&r, b), JB_OK);
  assert_int_equal(r.problems, 1);
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  jb_board_close(b);
}

static void open_of_a_board_of_a_newer_schema_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = NULL;
  jbt_wait_ok(jbt_fork(bump_schema, f->dir, 20), 20000);
  uint64_t before = jbt_board_digest(f->dir);
  jb_board *b = (jb_board *)1;
  assert_int_equal(open_plain(&b, f->dir), JB_EVERSION);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), f->dir);
  jbt_assert_contains(jb_errmsg(), "schema");
  char newer[16];
  snprintf(newer, sizeof newer, "%u", JB_SCHEMA_VERSION + 1);
  jbt_assert_contains(jb_errmsg(), newer);
  assert_int_equal(jbt_board_digest(f->dir), before);
}

static void open_with_an_unknown_durability_is_invalid(void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "opts");
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = (jb_durability)7;
  jb_board *b = (jb_board *)1;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_EINVAL);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), "durability");
  struct stat st;
  assert_int_equal(stat(dir, &st), -1); /* nothing created */
  free(dir);
}

static void open_with_unknown_options_version_is_invalid(void **state) {
  jbt_fixture *f = *state;
  char *dir = jbt_path(f->dir, "opts");
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.version = JB_BOARD_OPTIONS_VERSION + 100;
  jb_board *b = (jb_board *)1;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_EINVAL);
  assert_null(b);
  struct stat st;
  assert_int_equal(stat(dir, &st), -1);
  free(dir);
}

/* jb_post_check applies jb_job_post's rules without a board: each rule
 * below is one of post's. */
static void post_check_accepts_a_good_post_without_a_board(void **state) {
  (void)state;
  jb_post p = JB_POST_INIT;
  p.name = "fine";
  assert_int_equal(jb_post_check(&p, 0), JB_OK);
}

static void post_check_refuses_a_name_that_is_not_utf8(void **state) {
  (void)state;
  jb_post p = JB_POST_INIT;
  p.name = "bad-\xff";
  assert_int_equal(jb_post_check(&p, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "UTF-8");
}

/* Refused without its uuid, accepted with it. */
static void post_check_refuses_a_book_name_without_a_book_uuid(void **state) {
  (void)state;
  jb_post p = JB_POST_INIT;
  p.name = "fine";
  p.book_name = "book";
  assert_int_equal(jb_post_check(&p, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "book");
  p.book_uuid = "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f";
  assert_int_equal(jb_post_check(&p, 0), JB_OK);
}

static void post_check_refuses_an_unknown_priority(void **state) {
  (void)state;
  jb_post p = JB_POST_INIT;
  p.name = "fine";
  p.priority = (jb_priority)42;
  assert_int_equal(jb_post_check(&p, 0), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "priority");
}

/* A limit of 0 is the default; a limit under the posting refuses it, and
 * a limit too small for any posting says max_posting is the problem. */
static void post_check_refuses_a_posting_over_the_limit_it_is_given(
    void **state) {
  (void)state;
  jb_post p = JB_POST_INIT;
  p.name = "fine";
  p.priority = JB_PRIORITY_LOW;
  jbt_buf blob = jbt_details_blob(2000, 7);
  p.details = blob.data;
  p.details_len = blob.len;
  assert_int_equal(jb_post_check(&p, 0), JB_OK);
  assert_int_equal(jb_post_check(&p, 1000), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "larger than");
  assert_int_equal(jb_post_check(&p, 100), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "max_posting");
  jbt_buf_free(&blob);
}

static void post_check_of_null_is_invalid(void **state) {
  (void)state;
  assert_int_equal(jb_post_check(NULL, 0), JB_EINVAL);
}

static void open_of_a_null_path_is_invalid(void **state) {
  (void)state;
  jb_board *b = (jb_board *)1;
  assert_int_equal(jb_board_open(&b, NULL, NULL), JB_EINVAL);
  assert_null(b);
}

int main(void) {
  jbt_watchdog(180);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(post_without_a_name_is_refused_naming_the_field),
      T(post_with_an_empty_name_is_refused),
      T(post_with_a_name_longer_than_the_limit_is_refused),
      T(post_with_a_name_of_exactly_the_limit_is_accepted),
      T(post_with_a_name_that_is_not_utf8_is_refused),
      T(post_with_an_unknown_priority_value_is_refused),
      T(post_with_details_that_are_an_array_is_refused),
      T(post_with_details_that_are_an_integer_is_refused),
      T(post_with_details_that_are_a_string_is_refused),
      T(post_with_bytes_after_the_details_map_is_refused),
      T(post_with_truncated_details_is_refused),
      T(post_with_details_holding_an_invalid_byte_is_refused),
      T(post_with_null_details_and_a_length_is_refused),
      T(post_with_details_nested_deeper_than_a_posting_holds_is_refused),
      T(post_with_details_31_maps_deep_reads_back_whole),
      T(post_with_details_declaring_more_than_they_hold_is_refused),
      T(post_without_book_uuid_for_a_book_name_is_refused),
      T(post_with_a_book_uuid_but_no_book_name_is_refused),
      T(post_with_a_malformed_book_uuid_is_refused),
      T(post_bigger_than_max_posting_is_refused),
      T(post_well_under_max_posting_is_accepted),
      T(post_bigger_than_the_default_limit_is_refused),
      T(batch_with_one_bad_post_posts_nothing_and_names_its_index),
      T(batch_with_an_oversize_post_posts_nothing),
      T(claim_with_an_empty_who_is_refused_naming_who),
      T(claim_with_a_null_who_is_refused_naming_who),
      T(claim_with_a_who_longer_than_the_limit_is_refused),
      T(claim_with_a_who_that_is_not_utf8_is_refused),
      T(every_owner_operation_refuses_an_empty_who),
      T(abandon_with_a_null_who_is_refused_naming_who),
      T(get_of_a_malformed_uuid_is_refused),
      T(find_owner_of_a_malformed_uuid_is_refused),
      T(state_of_a_malformed_uuid_is_refused),
      T(claim_of_a_malformed_uuid_is_refused),
      T(abandon_of_a_malformed_uuid_is_refused),
      T(consume_of_a_malformed_uuid_is_refused),
      T(trash_of_a_malformed_uuid_is_refused),
      T(malformed_uuid_message_quotes_the_text),
      T(claim_of_a_job_claimed_by_another_changes_nothing),
      T(owner_operations_by_a_non_owner_change_nothing),
      T(owner_operations_on_an_unclaimed_job_change_nothing),
      T(operations_on_an_unknown_job_change_nothing),
      T(claim_next_with_nothing_claimable_changes_nothing),
      T(open_of_a_missing_directory_is_not_found_and_creates_nothing),
      T(open_with_create_does_not_create_parents),
      T(open_of_a_regular_file_is_invalid_and_leaves_it_alone),
      T(open_of_a_directory_with_garbage_data_is_corrupt),
      T(open_with_create_of_garbage_data_is_corrupt_and_starts_no_board),
      T(open_of_a_short_garbage_file_is_corrupt),
      T(open_of_an_empty_data_file_is_not_found_and_writes_nothing),
      T(open_of_an_lmdb_environment_that_is_not_a_board_is_corrupt),
      T(open_of_an_environment_with_a_plain_meta_record_is_corrupt),
      T(open_of_a_board_of_a_newer_schema_is_refused),
      T(a_garbled_last_check_record_is_reported_and_replaced),
      T(open_with_an_unknown_durability_is_invalid),
      T(open_with_unknown_options_version_is_invalid),
      cmocka_unit_test(open_of_a_null_path_is_invalid),
      cmocka_unit_test(post_check_accepts_a_good_post_without_a_board),
      cmocka_unit_test(post_check_refuses_a_name_that_is_not_utf8),
      cmocka_unit_test(post_check_refuses_a_book_name_without_a_book_uuid),
      cmocka_unit_test(post_check_refuses_an_unknown_priority),
      cmocka_unit_test(post_check_refuses_a_posting_over_the_limit_it_is_given),
      cmocka_unit_test(post_check_of_null_is_invalid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
