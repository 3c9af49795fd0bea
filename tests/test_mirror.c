/*
 * test_mirror.c - the replicator's way into the board (core/sync_hook.h):
 * Redis listings mirrored in (new, claim updates and the read_us rule,
 * local jobs, completed jobs, quarantine), jobs gone from Redis taken off,
 * and the board's settings. No Redis here: the listings are what the
 * replicator would read. Every test ends with jb_board_check finding the
 * board consistent.
 */
#include "helpers.h"
#include "core/internal.h"
#include "codec/posting.h"
#include "core/sync_hook.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S(x) ((int64_t)(x) * 1000000)

/* ------------------------------------------------------------- helpers */

/* A posting in the taskflow layout for `uuid`, with Redis's sequence. */
static jbt_buf posting_for(const char *uuid, const char *name, jb_priority p,
                           uint64_t seq) {
  jb_buf out = {0};
  jb_posting_fields f = {.uuid = uuid, .name = name, .name_len = strlen(name),
                         .priority = p, .created_us = S(1700000000),
                         .details = "\x80", .details_len = 1};
  assert_int_equal(jb__posting_prefix(&out, &f), JB_OK);
  uint8_t sb[JB_SEQ_MAXLEN];
  size_t sl = jb__posting_seq(sb, seq);
  assert_int_equal(jb__buf_append(&out, sb, sl), JB_OK);
  jbt_buf b = {(char *)out.data, out.len};
  return b;
}

static void new_uuid(char out[JB_UUID_STRLEN]) {
  uint8_t raw[16];
  assert_int_equal(jb__uuid_generate(raw), JB_OK);
  jb__uuid_format(out, raw);
}

static jb_remote_listing listing(const char *uuid, const jbt_buf *posting,
                                 const char *owner, int64_t expires_us) {
  jb_remote_listing l = {.uuid = uuid, .posting = posting->data,
                         .posting_len = posting->len, .owner = owner,
                         .expires_us = expires_us};
  return l;
}

/* Mirror one listing; its result. */
static int mirror1(jb_board *b, const jb_remote_listing *l, int64_t read_us) {
  int res = 0;
  int rc = jb__board_mirror_listings(b, l, 1, read_us, &res);
  if (rc != JB_OK) fail_msg("mirror: %s (%s)", jb_strerror(rc), jb_errmsg());
  return res;
}

static uint64_t log_next(jb_board *b) {
  uint64_t next = 0;
  assert_int_equal(jb_log_bounds(NULL, &next, b), JB_OK);
  return next;
}

/* The events from `from` on (at most 16). */
static size_t events_from(jb_board *b, uint64_t from, jb_event ev[16]) {
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, from, 16), JB_OK);
  return n;
}

static jb_job *get(jb_board *b, const char *uuid) {
  jb_job *job = NULL;
  int rc = jb_job_get(&job, b, uuid);
  if (rc != JB_OK) fail_msg("get %s: %s (%s)", uuid, jb_strerror(rc), jb_errmsg());
  return job;
}

/* A hook that says yes to everything: Redis decided in the caller's
 * favour (the local half of the authority rule is what is tested). */
static int yes_claim(void *c, jb_board *board, const char *u, const char *w,
                     int64_t l, uint64_t *fence) {
  (void)c, (void)board, (void)u, (void)w, (void)l;
  *fence = 0;
  return JB_OK;
}
static int yes_release(void *c, const char *u, const char *w) {
  (void)c, (void)u, (void)w;
  return JB_OK;
}
static int yes_finish(void *c, const char *u, const char *w,
                      const jb_remote_outcome *o) {
  (void)c, (void)u, (void)w, (void)o;
  return JB_OK;
}
static int yes_extend(void *c, const char *u, const char *w, int64_t l) {
  (void)c, (void)u, (void)w, (void)l;
  return JB_OK;
}
static const jb_remote_ops yes_ops = {yes_claim, yes_release, yes_finish,
                                      yes_finish, yes_extend, NULL, NULL, NULL, NULL, NULL, NULL};

/* Check's report, and its stats. */
typedef struct {
  char text[8192];
} report;
static void collect(const char *line, void *p) {
  report *r = p;
  size_t n = strlen(r->text);
  snprintf(r->text + n, sizeof r->text - n, "%s\n", line);
}

/* ----------------------------------------------------------- new jobs */

/* Posts a local NORMAL job and mirrors the wire document's posting (HIGH,
 * Redis sequence 42) as a new unclaimed listing; *from is the log's next
 * sequence before the mirror. */
static void wire_listing_mirrored(jb_board *b, char local[JB_UUID_STRLEN],
                                  jbt_buf *p, uint64_t *from) {
  jbt_post(local, b, "local", JB_PRIORITY_NORMAL);
  *p = jbt_from_hex(jbt_wire_posting_hex);
  assert_int_equal(p->len, 233);
  *from = log_next(b);
  jb_remote_listing l = listing(JBT_WIRE_UUID, p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
}

static void a_new_unclaimed_listing_goes_on_as_posted_remote_verbatim(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  wire_listing_mirrored(b, local, &p, &from);
  jb_job *job = get(b, JBT_WIRE_UUID);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  assert_null(jb_job_owner(job));
  assert_string_equal(jb_job_name(job), "demo-job");
  assert_int_equal(jb_job_priority(job), JB_PRIORITY_HIGH);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  assert_int_equal(len, p.len);
  assert_memory_equal(bytes, p.data, p.len); /* Redis's sequence (42) kept */
  /* Its sequence is Redis's (it is ordered among Redis's jobs by it). */
  assert_int_equal(jb_job_sequence(job), 42);
  jb_job_free(job);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void a_new_listing_is_logged_as_posted_with_redis_sequence(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  wire_listing_mirrored(b, local, &p, &from);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
  assert_string_equal(ev[0].uuid, JBT_WIRE_UUID);
  assert_int_equal(ev[0].seq, from);
  assert_int_equal(ev[0].job_seq, 42);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* The iterator passes the flag; HIGH comes before the local NORMAL job. */
static void a_mirrored_job_is_listed_as_remote_in_priority_order(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  wire_listing_mirrored(b, local, &p, &from);
  jb_iter *it;
  const jb_job *j;
  assert_int_equal(jb_iter_open(&it, b, 0), JB_OK);
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_non_null(j);
  assert_string_equal(jb_job_uuid(j), JBT_WIRE_UUID);
  assert_true(jb_job_remote(j));
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_string_equal(jb_job_uuid(j), local);
  assert_false(jb_job_remote(j));
  jb_iter_close(it);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* Decided by Redis. */
static void a_mirrored_job_cannot_be_claimed_here_without_the_hook(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  wire_listing_mirrored(b, local, &p, &from);
  assert_int_equal(jb_claim(NULL, b, JBT_WIRE_UUID, "w", NULL), JB_EOFFLINE);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* Two claimed listings, mirrored as new: u1 LOW, Redis sequence 7, by
 * "worker-1" until *exp; u2 by "worker-2" with no expiry. */
typedef struct {
  char u1[JB_UUID_STRLEN], u2[JB_UUID_STRLEN];
  jbt_buf p1, p2;
  int64_t exp;
  uint64_t from; /* the log's next sequence before the mirror */
} two_claimed;

static void two_claimed_mirrored(two_claimed *t, jb_board *b) {
  new_uuid(t->u1);
  new_uuid(t->u2);
  t->p1 = posting_for(t->u1, "leased", JB_PRIORITY_LOW, 7);
  t->p2 = posting_for(t->u2, "forever", JB_PRIORITY_NORMAL, 8);
  t->exp = jb__now_us() + S(60);
  jb_remote_listing ls[2] = {listing(t->u1, &t->p1, "worker-1", t->exp),
                             listing(t->u2, &t->p2, "worker-2", 0)};
  t->from = log_next(b);
  int res[2] = {0, 0};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_NEW);
  assert_int_equal(res[1], JB_MIRROR_NEW);
}

static void two_claimed_free(two_claimed *t, jb_board *b) {
  jbt_buf_free(&t->p1);
  jbt_buf_free(&t->p2);
  jbt_assert_check_ok(b);
}

/* Remote, claimed by the owner Redis names (no holder here), with Redis's
 * expiry as its lease, the posting verbatim; none left unclaimed. */
static void a_new_claimed_listing_goes_on_claimed_with_its_lease(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  two_claimed t;
  two_claimed_mirrored(&t, b);
  jb_job *job = get(b, t.u1);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_CLAIMED);
  assert_string_equal(jb_job_owner(job), "worker-1");
  assert_int_equal(jb_job_holder_pid(job), 0);
  int64_t d = jb_job_lease_expires(job) - t.exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  assert_int_equal(len, t.p1.len);
  assert_memory_equal(bytes, t.p1.data, t.p1.len);
  jb_job_free(job);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, t.u1), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_AT);
  assert_true(ms > 59000 && ms <= 60000);
  size_t n;
  assert_int_equal(jb_board_count(&n, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 0);
  two_claimed_free(&t, b);
}

static void a_new_claimed_listing_without_expiry_has_no_lease(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  two_claimed t;
  two_claimed_mirrored(&t, b);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, t.u2), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_NONE);
  two_claimed_free(&t, b);
}

/* POSTED, CLAIMED (the token), POSTED, CLAIMED. */
static void a_new_claimed_listing_is_logged_as_posted_then_claimed(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  two_claimed t;
  two_claimed_mirrored(&t, b);
  jb_job *job = get(b, t.u1);
  uint64_t token = jb_job_token(job);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, t.from, ev), 4);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
  assert_int_equal(ev[1].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[1].owner, "worker-1");
  assert_int_equal(ev[1].seq, token);
  assert_int_equal(ev[0].job_seq, 7); /* Redis's sequence */
  assert_int_equal(ev[1].job_seq, 7);
  assert_int_equal(ev[3].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[3].owner, "worker-2");
  two_claimed_free(&t, b);
}

/* A listing whose expiry has passed goes on with a lapsed lease: readers
 * see it unclaimed, and claim-next's reaping keeps the indexes right. */
static void a_listing_with_a_past_expiry_reads_unclaimed(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "late", JB_PRIORITY_NORMAL, 3);
  jb_remote_listing l = listing(u, &p, "gone", jb__now_us() - S(1));
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  char got[JB_UUID_STRLEN];
  /* Remote jobs are skipped without the hook; the lapsed claim is reaped. */
  assert_int_equal(jb_claim_next(got, NULL, NULL, b, "x", NULL), JB_ENOTFOUND);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

typedef struct {
  jb_board *b;
  int rc;
  int64_t waited_ms;
} waiter;

static void *wait_thread(void *arg) {
  waiter *w = arg;
  int64_t t0 = jbt_now_ms();
  w->rc = jb_board_wait(w->b, JB_ONLY_UNCLAIMED, 10000);
  w->waited_ms = jbt_now_ms() - t0;
  return NULL;
}

static void a_mirrored_post_wakes_a_waiter(void **state) {
  jbt_fixture *fx = *state;
  waiter w = {fx->board, -100, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_thread, &w), 0);
  usleep(300 * 1000); /* the waiter sleeps on the signal by now */
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "wake", JB_PRIORITY_NORMAL, 1);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  int64_t t0 = jbt_now_ms();
  assert_int_equal(mirror1(fx->board, &l, 0), JB_MIRROR_NEW);
  pthread_join(t, NULL);
  assert_int_equal(w.rc, JB_OK);
  assert_true(w.waited_ms >= 250);          /* it did wait */
  assert_true(jbt_now_ms() - t0 < 5000);    /* and the commit woke it */
  jbt_buf_free(&p);
  jbt_assert_check_ok(fx->board);
}


/* ------------------------------------------------------------- updates */

/* A job u mirrored in unclaimed (Redis sequence 11); its posting in *p. */
static void followed(jb_board *b, char u[JB_UUID_STRLEN], jbt_buf *p) {
  new_uuid(u);
  *p = posting_for(u, "follow", JB_PRIORITY_NORMAL, 11);
  jb_remote_listing l = listing(u, p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
}

/* Unclaimed in Redis and here. */
static void an_unchanged_unclaimed_listing_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  followed(b, u, &p);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  uint64_t from = log_next(b);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* followed, then claimed by "alice" in Redis with no expiry; returns the
 * claim's token here. */
static uint64_t followed_to_alice(jb_board *b, char u[JB_UUID_STRLEN],
                                  jbt_buf *p) {
  followed(b, u, p);
  jb_remote_listing l = listing(u, p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_job *job = get(b, u);
  uint64_t t1 = jb_job_token(job);
  jb_job_free(job);
  return t1;
}

/* An owner where there was none: claimed here, logged with its token. */
static void an_owner_in_redis_claims_the_job_here(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  followed(b, u, &p);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(u, &p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_job *job = get(b, u);
  assert_string_equal(jb_job_owner(job), "alice");
  uint64_t t1 = jb_job_token(job);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_CLAIMED);
  assert_int_equal(ev[0].seq, t1);
  assert_string_equal(ev[0].owner, "alice");
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* No expiry either side. */
static void the_same_owner_in_redis_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  followed_to_alice(b, u, &p);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(u, &p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* The same owner with an expiry: copied (EXTENDED), token kept. */
static void an_expiry_in_redis_extends_the_claim_keeping_its_token(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t t1 = followed_to_alice(b, u, &p);
  uint64_t from = log_next(b);
  int64_t exp = jb__now_us() + S(30);
  jb_remote_listing l = listing(u, &p, "alice", exp);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_job *job = get(b, u);
  assert_int_equal(jb_job_token(job), t1);
  int64_t d = jb_job_lease_expires(job) - exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_EXTENDED);
  assert_string_equal(ev[0].owner, "alice");
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* followed_to_alice, then given alice's expiry `exp` from Redis. */
static void alice_until(jb_board *b, char u[JB_UUID_STRLEN], jbt_buf *p,
                        int64_t exp) {
  followed_to_alice(b, u, p);
  jb_remote_listing l = listing(u, p, "alice", exp);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
}

static void an_expiry_moved_within_the_slack_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t exp = jb__now_us() + S(30);
  alice_until(b, u, &p, exp);
  uint64_t from = log_next(b);
  jb_remote_listing l =
      listing(u, &p, "alice", exp + JB_MIRROR_EXPIRY_SLACK_US / 2);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void an_expiry_moved_beyond_the_slack_is_copied(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t exp = jb__now_us() + S(30);
  alice_until(b, u, &p, exp);
  exp += S(20);
  jb_remote_listing l = listing(u, &p, "alice", exp);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_AT);
  assert_true(ms > 49000 && ms <= 50000);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void an_expiry_dropped_in_redis_drops_the_lease(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  alice_until(b, u, &p, jb__now_us() + S(30));
  jb_remote_listing l = listing(u, &p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_NONE);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* followed_to_alice, then claimed by "bob" in Redis for 10 s. */
static uint64_t followed_to_bob(jb_board *b, char u[JB_UUID_STRLEN],
                                jbt_buf *p, uint64_t *from) {
  uint64_t t1 = followed_to_alice(b, u, p);
  *from = log_next(b);
  jb_remote_listing l = listing(u, p, "bob", jb__now_us() + S(10));
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  return t1;
}

/* The claim replaced, a new token. */
static void another_owner_in_redis_replaces_the_claim(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  uint64_t t1 = followed_to_bob(b, u, &p, &from);
  jb_job *job = get(b, u);
  assert_string_equal(jb_job_owner(job), "bob");
  assert_true(jb_job_token(job) > t1);
  assert_true(jb_job_lease_expires(job) > 0);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[0].owner, "bob");
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* The local claim goes, ABANDONED naming its owner. */
static void unclaimed_in_redis_abandons_the_claim_here(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  uint64_t from;
  followed_to_bob(b, u, &p, &from);
  from = log_next(b);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_job *job = get(b, u);
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  assert_int_equal(jb_job_lease_expires(job), 0);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_ABANDONED);
  assert_string_equal(ev[0].owner, "bob");
  size_t n;
  assert_int_equal(jb_board_count(&n, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 1);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* read_us: a local record changed at or after the caller began reading
 * Redis is newer than what it read, and is left alone. */

/* A job u claimed by "alice" when mirrored in; *before is a time before
 * that. */
static void claimed_now(jb_board *b, char u[JB_UUID_STRLEN], jbt_buf *p,
                        int64_t *before) {
  new_uuid(u);
  *p = posting_for(u, "race", JB_PRIORITY_NORMAL, 5);
  *before = jb__now_us();
  usleep(2000);
  jb_remote_listing l = listing(u, p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
}

/* It saw no owner, then bob: both stale. */
static void a_read_begun_before_a_local_change_is_left_alone(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t before;
  claimed_now(b, u, &p, &before);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_SAME);
  l = listing(u, &p, "bob", 0);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_SAME);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, b, u), JB_OK);
  assert_string_equal(owner, "alice");
  assert_int_equal(log_next(b), from);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* claimed_now, then unclaimed by a read begun after it; returns that
 * read's time. */
static int64_t unclaimed_by_a_later_read(jb_board *b, char u[JB_UUID_STRLEN],
                                         jbt_buf *p) {
  int64_t before;
  claimed_now(b, u, p, &before);
  usleep(2000);
  int64_t after = jb__now_us();
  jb_remote_listing l = listing(u, p, NULL, 0);
  assert_int_equal(mirror1(b, &l, after), JB_MIRROR_UPDATED);
  return after;
}

static void a_read_begun_after_a_local_change_is_applied(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  unclaimed_by_a_later_read(b, u, &p);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* The job is ready since a moment ago: an older read's owner is stale
 * too; a newer read's is applied. */
static void a_read_begun_before_a_job_became_ready_is_left_alone(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t after = unclaimed_by_a_later_read(b, u, &p);
  jb_remote_listing l = listing(u, &p, "carol", 0);
  assert_int_equal(mirror1(b, &l, after), JB_MIRROR_SAME);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  usleep(2000);
  assert_int_equal(mirror1(b, &l, jb__now_us()), JB_MIRROR_UPDATED);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, b, u), JB_OK);
  assert_string_equal(owner, "carol");
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* A claim bound to a process here keeps its binding, and a missing lease
 * stays missing, when Redis names the same owner with an expiry. */
typedef struct {
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN];
  jbt_buf pu, pv;
  uint64_t token; /* u's */
  int64_t exp;    /* what Redis names */
  uint64_t from;  /* the log's next sequence before that */
} bound_pair;

/* u: bound, no lease (as the replicator's renewals will allow; recorded
 * here as a decided claim directly); v: bound with a lease, through the
 * API and a hook saying yes. Then Redis names "me" with an expiry for
 * both: u stays the same, v is updated. */
static void bound_pair_named_with_expiry(bound_pair *bp, jb_board *b) {
  new_uuid(bp->u);
  new_uuid(bp->v);
  bp->pu = posting_for(bp->u, "bound", JB_PRIORITY_NORMAL, 1);
  bp->pv = posting_for(bp->v, "bound-leased", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ls[2] = {listing(bp->u, &bp->pu, NULL, 0),
                             listing(bp->v, &bp->pv, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_OK);
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, bp->u, "u"), JB_OK);
  jb_store_claim_req req = {.who = "me", .who_len = 2, .now_us = jb__now_us(),
                            .bind = true};
  assert_int_equal(jb__proc_self(&req.holder), JB_OK);
  assert_int_equal(jb__store_claim_x(b->store, raw, &req, &bp->token,
                                     JB_STORE_DECIDED), JB_OK);
  jb__board_set_remote(b, &yes_ops, NULL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  o.lease_ms = 60000;
  assert_int_equal(jb_claim(NULL, b, bp->v, "me", &o), JB_OK);
  jb__board_set_remote(b, NULL, NULL);
  bp->from = log_next(b);
  bp->exp = jb__now_us() + S(5);
  ls[0] = listing(bp->u, &bp->pu, "me", bp->exp);
  ls[1] = listing(bp->v, &bp->pv, "me", bp->exp);
  int res[2];
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_SAME);
  assert_int_equal(res[1], JB_MIRROR_UPDATED);
}

static void bound_pair_free(bound_pair *bp, jb_board *b) {
  jbt_buf_free(&bp->pu);
  jbt_buf_free(&bp->pv);
  jbt_assert_check_ok(b);
}

static void a_bound_claim_without_a_lease_keeps_binding_and_no_lease(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bound_pair bp;
  bound_pair_named_with_expiry(&bp, b);
  jb_job *job = get(b, bp.u);
  assert_int_equal(jb_job_holder_pid(job), getpid());
  assert_int_equal(jb_job_lease_expires(job), 0);
  assert_int_equal(jb_job_token(job), bp.token);
  jb_job_free(job);
  bound_pair_free(&bp, b);
}

/* The expiry is copied (EXTENDED, for that job alone). */
static void a_bound_claim_with_a_lease_keeps_binding_and_takes_the_expiry(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bound_pair bp;
  bound_pair_named_with_expiry(&bp, b);
  jb_job *job = get(b, bp.v);
  assert_int_equal(jb_job_holder_pid(job), getpid());
  int64_t d = jb_job_lease_expires(job) - bp.exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, bp.from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_EXTENDED);
  assert_string_equal(ev[0].uuid, bp.v);
  bound_pair_free(&bp, b);
}

/* ------------------------------------------------ local and done jobs */

/* A local job u; its posting in *p. */
static void local_job(jb_board *b, char u[JB_UUID_STRLEN], jbt_buf *p) {
  jbt_post(u, b, "mine", JB_PRIORITY_NORMAL);
  jb_job *job = get(b, u);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  p->data = malloc(len);
  p->len = len;
  memcpy(p->data, bytes, len);
  jb_job_free(job);
}

static void a_listing_of_a_local_job_is_left_alone(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  local_job(b, u, &p);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(u, &p, "thief", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_LOCAL);
  assert_int_equal(log_next(b), from);
  jb_job *job = get(b, u);
  assert_false(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  jb_job_free(job);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void mirror_gone_skips_a_local_job(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  local_job(b, u, &p);
  const char *uu[1] = {u};
  size_t removed = 99;
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, NULL, NULL, 1, &removed),
                   JB_OK);
  assert_int_equal(removed, 0);
  size_t n;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 1);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void a_job_completed_here_is_not_brought_back(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "once", JB_PRIORITY_NORMAL, 9);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  /* Claimed and consumed through the local API (Redis says yes). */
  jb__board_set_remote(b, &yes_ops, NULL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(b, u, "w", 0, NULL), JB_OK);
  jb__board_set_remote(b, NULL, NULL);
  /* A replicator pass that read Redis before the consume reached it. */
  uint64_t from = log_next(b);
  l = listing(u, &p, "w", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_DONE);
  assert_int_equal(log_next(b), from);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, u), JB_ENOTFOUND);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, u), JB_OK);
  assert_int_equal(c->end, JB_END_CONSUMED);
  jb_completion_free(c);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* ------------------------------------------------------------ quarantine */

/* An undecodable listing (bad, an array, not a map, owned by "w") and a
 * good one mirrored in one batch beside a local job. */
typedef struct {
  char local[JB_UUID_STRLEN], bad[JB_UUID_STRLEN], good[JB_UUID_STRLEN];
  jbt_buf pb, pg;
  jb_remote_listing ls[2];
  uint64_t from; /* the log's next sequence before the batch */
} bad_batch;

static void bad_batch_mirrored(bad_batch *bb, jb_board *b) {
  jbt_post(bb->local, b, "local", JB_PRIORITY_NORMAL);
  new_uuid(bb->bad);
  new_uuid(bb->good);
  bb->pb.data = malloc(4);
  bb->pb.len = 4;
  memcpy(bb->pb.data, "\x93\x01\x02\x03", 4); /* an array, not a map */
  bb->pg = posting_for(bb->good, "good", JB_PRIORITY_NORMAL, 2);
  bb->ls[0] = listing(bb->bad, &bb->pb, "w", 0);
  bb->ls[1] = listing(bb->good, &bb->pg, NULL, 0);
  bb->from = log_next(b);
  int res[2];
  assert_int_equal(jb__board_mirror_listings(b, bb->ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[1], JB_MIRROR_NEW);
}

static void bad_batch_free(bad_batch *bb, jb_board *b) {
  jbt_buf_free(&bb->pb);
  jbt_buf_free(&bb->pg);
  jbt_assert_check_ok(b);
}

/* Not on the board; the rest of the batch mirrored (good's POSTED only). */
static void an_undecodable_posting_is_quarantined_and_the_rest_mirrored(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bad_batch bb;
  bad_batch_mirrored(&bb, b);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, bb.bad), JB_ENOTFOUND);
  jb_event ev[16];
  assert_int_equal(events_from(b, bb.from, ev), 1);
  assert_string_equal(ev[0].uuid, bb.good);
  bad_batch_free(&bb, b);
}

static void check_reports_a_posting_quarantined_from_redis(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bad_batch bb;
  bad_batch_mirrored(&bb, b);
  report r = {""};
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 1);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.moved, 0);
  assert_int_equal(st.jobs, 2);
  jbt_assert_contains(r.text, "quarantined: job ");
  jbt_assert_contains(r.text, bb.bad);
  jbt_assert_contains(r.text, "received from Redis");
  jbt_assert_contains(r.text, "not a map");
  jbt_assert_contains(r.text, "(4 bytes kept)");
  bad_batch_free(&bb, b);
}

/* Again: still one record; nothing else changed. */
static void an_undecodable_posting_is_quarantined_once(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bad_batch bb;
  bad_batch_mirrored(&bb, b);
  uint64_t from = log_next(b);
  int res[2];
  assert_int_equal(jb__board_mirror_listings(b, bb.ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[1], JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  assert_int_equal(st.quarantined, 1);
  size_t n;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 2);
  bad_batch_free(&bb, b);
}

static void other_bad_bytes_under_a_quarantined_uuid_keep_the_first(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bad_batch bb;
  bad_batch_mirrored(&bb, b);
  jbt_buf pb2 = {malloc(2), 2};
  memcpy(pb2.data, "\xc1\xc1", 2);
  jb_remote_listing l = listing(bb.bad, &pb2, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_QUARANTINED);
  report r = {""};
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 1);
  jbt_assert_contains(r.text, "(4 bytes kept)");
  jbt_buf_free(&pb2);
  bad_batch_free(&bb, b);
}

/* msgpack-c reports a value nested deeper than 32 containers, and a
 * container header it cannot allocate for, as out of memory. The decoder
 * takes that for a corrupt posting, so one such listing (a taskflow
 * poster's details 32 deep are enough) is quarantined and the rest of the
 * batch mirrored, instead of every mirror of the batch failing with
 * JB_ENOMEM (an input tests/fuzz/fuzz_posting.c found). */
static void a_posting_msgpack_c_cannot_read_is_quarantined(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char deep[JB_UUID_STRLEN], huge[JB_UUID_STRLEN], good[JB_UUID_STRLEN];
  new_uuid(deep);
  new_uuid(huge);
  new_uuid(good);
  jbt_buf pd = {malloc(40), 40};
  memset(pd.data, 0x91, 39); /* [[[...[1]...]]], 39 arrays */
  pd.data[39] = 0x01;
  jbt_buf ph = {malloc(5), 5};
  memcpy(ph.data, "\xdf\xff\xff\xff\xff", 5); /* a map of 2^32-1 entries */
  jbt_buf pg = posting_for(good, "good", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ls[3] = {listing(deep, &pd, NULL, 0),
                             listing(huge, &ph, NULL, 0),
                             listing(good, &pg, NULL, 0)};
  int res[3];
  int rc = jb__board_mirror_listings(b, ls, 3, 0, res);
  if (rc != JB_OK) fail_msg("mirror: %s (%s)", jb_strerror(rc), jb_errmsg());
  assert_int_equal(res[0], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[1], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[2], JB_MIRROR_NEW);
  report r = {""};
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 2);
  jbt_assert_contains(r.text, "deeper than 32 levels");
  jbt_assert_contains(r.text, "not valid msgpack (5 bytes)");
  jbt_buf_free(&pd);
  jbt_buf_free(&ph);
  jbt_buf_free(&pg);
  jbt_assert_check_ok(b);
}

static void a_posting_naming_another_uuid_is_quarantined(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char field[JB_UUID_STRLEN], other[JB_UUID_STRLEN];
  new_uuid(field);
  new_uuid(other);
  jbt_buf p = posting_for(other, "misfiled", JB_PRIORITY_NORMAL, 4);
  jb_remote_listing l = listing(field, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_QUARANTINED);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, field), JB_ENOTFOUND);
  assert_int_equal(jb_job_get(&job, b, other), JB_ENOTFOUND);
  report r = {""};
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 1);
  assert_int_equal(st.jobs, 0);
  jbt_assert_contains(r.text, field);
  jbt_assert_contains(r.text, "received from Redis");
  jbt_assert_contains(r.text, "names uuid");
  jbt_assert_contains(r.text, other);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}


/* ------------------------------------------------------------ bad input */

/* A batch of a good listing and `second` is refused, writing nothing. */
static void refused_with(jb_board *b, const char *u, const jbt_buf *p,
                         jb_remote_listing second) {
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, b);
  jb_remote_listing ls[2] = {listing(u, p, NULL, 0), second};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_EINVAL);
  jbt_snapshot_take(&after, b);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
}

/* A job's uuid and posting, not on the board. */
static void unlisted(char u[JB_UUID_STRLEN], jbt_buf *p) {
  new_uuid(u);
  *p = posting_for(u, "x", JB_PRIORITY_NORMAL, 1);
}

static void a_batch_with_a_bad_uuid_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  unlisted(u, &p);
  refused_with(fx->board, u, &p, listing("not-a-uuid", &p, NULL, 0));
  jbt_assert_contains(jb_errmsg(), "not-a-uuid");
  jbt_buf_free(&p);
  jbt_assert_check_ok(fx->board);
}

static void a_batch_with_an_empty_owner_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  unlisted(u, &p);
  refused_with(fx->board, u, &p, listing(u, &p, "", 0));
  jbt_assert_contains(jb_errmsg(), "owner");
  jbt_buf_free(&p);
  jbt_assert_check_ok(fx->board);
}

static void a_batch_with_a_negative_expiry_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  unlisted(u, &p);
  refused_with(fx->board, u, &p, listing(u, &p, "w", -5));
  jbt_buf_free(&p);
  jbt_assert_check_ok(fx->board);
}

static void gone_with_a_bad_uuid_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, b);
  const char *uu[2] = {u, "zzz"};
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, NULL, NULL, 2, NULL),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "zzz");
  jbt_snapshot_take(&after, b);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  jbt_assert_check_ok(b);
}

/* ------------------------------------------------------------------ gone */

/* Job a claimed by "w1" and job t (HIGH) mirrored in beside a local job;
 * then gone from Redis with a (consumed), t (trashed), the local job and
 * one never seen: the two Redis jobs leave. */
typedef struct {
  char a[JB_UUID_STRLEN], t[JB_UUID_STRLEN], local[JB_UUID_STRLEN],
      missing[JB_UUID_STRLEN];
  const char *uu[4];
  jbt_buf pa, pt;
  uint64_t seq_a; /* a's sequence on the board */
  uint64_t from;  /* the log's next sequence before the removal */
} gone_four;

static void gone_four_removed(gone_four *g, jb_board *b) {
  new_uuid(g->a);
  new_uuid(g->t);
  new_uuid(g->missing);
  jbt_post(g->local, b, "local", JB_PRIORITY_NORMAL);
  g->pa = posting_for(g->a, "consumed-there", JB_PRIORITY_NORMAL, 1);
  g->pt = posting_for(g->t, "trashed-there", JB_PRIORITY_HIGH, 2);
  jb_remote_listing ls[2] = {listing(g->a, &g->pa, "w1", jb__now_us() + S(60)),
                             listing(g->t, &g->pt, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_OK);
  jb_job *job = get(b, g->a);
  g->seq_a = jb_job_sequence(job);
  jb_job_free(job);
  g->from = log_next(b);
  g->uu[0] = g->a;
  g->uu[1] = g->t;
  g->uu[2] = g->local;
  g->uu[3] = g->missing;
  bool trashed[4] = {false, true, true, false};
  size_t removed = 0;
  assert_int_equal(jb__board_mirror_gone(b, g->uu, trashed, NULL, NULL, 4,
                                         &removed),
                   JB_OK);
  assert_int_equal(removed, 2);
}

static void gone_four_free(gone_four *g, jb_board *b) {
  jbt_buf_free(&g->pa);
  jbt_buf_free(&g->pt);
  jbt_assert_check_ok(b);
}

/* Logged CONSUMED naming its owner, and recorded in the history with its
 * name, sequence, claim and the empty map as result. */
static void a_job_consumed_in_redis_leaves_with_its_history(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  gone_four g;
  gone_four_removed(&g, b);
  jb_event ev[16];
  assert_int_equal(events_from(b, g.from, ev), 2);
  assert_int_equal(ev[0].type, JB_EVENT_CONSUMED);
  assert_string_equal(ev[0].uuid, g.a);
  assert_string_equal(ev[0].owner, "w1");
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, g.a), JB_OK);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_string_equal(c->owner, "w1");
  assert_string_equal(c->name, "consumed-there");
  assert_int_equal(c->sequence, g.seq_a);
  assert_true(c->claimed_us > 0);
  assert_int_equal(c->result_len, 1); /* the empty map */
  jb_completion_free(c);
  gone_four_free(&g, b);
}

/* Logged TRASHED (no owner), recorded with its priority, and counted by
 * check as trashed. */
static void a_job_trashed_in_redis_leaves_as_trashed(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  gone_four g;
  gone_four_removed(&g, b);
  jb_event ev[16];
  assert_int_equal(events_from(b, g.from, ev), 2);
  assert_int_equal(ev[1].type, JB_EVENT_TRASHED);
  assert_string_equal(ev[1].uuid, g.t);
  assert_string_equal(ev[1].owner, "");
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, g.t), JB_OK);
  assert_int_equal(c->end, JB_END_TRASHED);
  assert_null(c->owner);
  assert_int_equal(c->priority, JB_PRIORITY_HIGH);
  jb_completion_free(c);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  assert_int_equal(st.trashed, 1);
  assert_int_equal(st.history, 2);
  gone_four_free(&g, b);
}

/* The local job, and one never seen, are no Redis jobs to take off. */
static void gone_takes_off_only_the_redis_jobs_on_the_board(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  gone_four g;
  gone_four_removed(&g, b);
  size_t n;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 1); /* the local job */
  gone_four_free(&g, b);
}

static void jobs_gone_twice_are_taken_off_once(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  gone_four g;
  gone_four_removed(&g, b);
  size_t removed;
  assert_int_equal(jb__board_mirror_gone(b, g.uu, NULL, NULL, NULL, 2,
                                         &removed),
                   JB_OK);
  assert_int_equal(removed, 0);
  gone_four_free(&g, b);
}

/* The replicator's next pass does not bring it back. */
static void a_job_gone_from_redis_is_done_for_the_next_pass(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  gone_four g;
  gone_four_removed(&g, b);
  jb_remote_listing l = listing(g.a, &g.pa, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_DONE);
  gone_four_free(&g, b);
}

/* ----------------------------------------------------- Redis's order */

/* Listings pulled in any order list and claim in Redis's posting order
 * (NS:sequence), also when one posted earlier is pulled later; a local
 * job not yet published comes after them; priority still comes first. */
typedef struct {
  char u[5][JB_UUID_STRLEN], local[JB_UUID_STRLEN];
  jbt_buf p[5];
  const char *want[6]; /* the order they list in */
} pulled;

/* Redis sequences 30, 10, 20 arrive in one pull, in hash order, after a
 * local post; then 5, posted before all of them, pulled later; 40 HIGH,
 * pulled last. */
static void pulled_out_of_order(pulled *pl, jb_board *b) {
  static const char *names[5] = {"thirty", "ten", "twenty", "five",
                                 "forty-high"};
  static const uint64_t seqs[5] = {30, 10, 20, 5, 40};
  for (int i = 0; i < 5; i++) {
    new_uuid(pl->u[i]);
    pl->p[i] = posting_for(pl->u[i], names[i],
                           i == 4 ? JB_PRIORITY_HIGH : JB_PRIORITY_NORMAL,
                           seqs[i]);
  }
  jbt_post(pl->local, b, "local", JB_PRIORITY_NORMAL); /* first here */
  jb_remote_listing ls[3] = {listing(pl->u[0], &pl->p[0], NULL, 0),
                             listing(pl->u[1], &pl->p[1], NULL, 0),
                             listing(pl->u[2], &pl->p[2], NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 3, 0, NULL), JB_OK);
  jb_remote_listing l5 = listing(pl->u[3], &pl->p[3], NULL, 0);
  jb_remote_listing l40 = listing(pl->u[4], &pl->p[4], NULL, 0);
  assert_int_equal(mirror1(b, &l5, 0), JB_MIRROR_NEW);
  assert_int_equal(mirror1(b, &l40, 0), JB_MIRROR_NEW);
  const char *want[6] = {pl->u[4], pl->u[3], pl->u[1],
                         pl->u[2], pl->u[0], pl->local};
  memcpy(pl->want, want, sizeof want);
}

static void pulled_free(pulled *pl, jb_board *b) {
  for (int i = 0; i < 5; i++) jbt_buf_free(&pl->p[i]);
  jbt_assert_check_ok(b);
}

static void redis_jobs_list_in_redis_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  pulled pl;
  pulled_out_of_order(&pl, b);
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 6);
  for (int i = 0; i < 6; i++) assert_string_equal(got[i], pl.want[i]);
  jb_job *job = get(b, pl.u[3]);
  assert_int_equal(jb_job_sequence(job), 5);
  jb_job_free(job);
  pulled_free(&pl, b);
}

/* Redis says yes to each claim. */
static void claim_next_takes_redis_jobs_in_redis_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  pulled pl;
  pulled_out_of_order(&pl, b);
  jb__board_set_remote(b, &yes_ops, NULL);
  for (int i = 0; i < 6; i++) {
    char c[JB_UUID_STRLEN];
    assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
    assert_string_equal(c, pl.want[i]);
  }
  jb__board_set_remote(b, NULL, NULL);
  pulled_free(&pl, b);
}

/* Without Redis (no hook) claim-next passes over Redis's jobs, band by
 * band, and takes the jobs decided here in priority order. */
static void without_redis_claim_next_takes_local_jobs_in_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char r[6][JB_UUID_STRLEN], lh[JB_UUID_STRLEN], ln[JB_UUID_STRLEN];
  jbt_buf p[6];
  jb_priority pr[3] = {JB_PRIORITY_HIGH, JB_PRIORITY_NORMAL,
                       JB_PRIORITY_LOW};
  for (int i = 0; i < 6; i++) {
    new_uuid(r[i]);
    p[i] = posting_for(r[i], "redis", pr[i % 3], (uint64_t)(10 + i));
    jb_remote_listing l = listing(r[i], &p[i], NULL, 0);
    assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  }
  jbt_post(ln, b, "local-normal", JB_PRIORITY_NORMAL);
  jbt_post(lh, b, "local-high", JB_PRIORITY_HIGH);
  char c[JB_UUID_STRLEN];
  assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(c, lh);
  assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(c, ln);
  assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_ENOTFOUND);
  for (int i = 0; i < 6; i++) jbt_buf_free(&p[i]);
  jbt_assert_check_ok(b);
}

/* A job Redis lists again under another sequence (its poster published it
 * again after Redis lost its data) moves to its new place, claim and
 * all; two jobs with one Redis sequence (across a loss) both stay. */
typedef struct {
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  jbt_buf pa, pc, pa3;
  jb_remote_listing la; /* a as listed again */
} relisted;

/* a (1, claimed by "w1") and c (2) mirrored in, then a listed again as
 * number 3. */
static void relisted_as_3(relisted *r, jb_board *b, uint64_t *from) {
  new_uuid(r->a);
  new_uuid(r->c);
  r->pa = posting_for(r->a, "a", JB_PRIORITY_NORMAL, 1);
  r->pc = posting_for(r->c, "c", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing la = listing(r->a, &r->pa, "w1", jb__now_us() + S(60));
  jb_remote_listing lc = listing(r->c, &r->pc, NULL, 0);
  assert_int_equal(mirror1(b, &la, 0), JB_MIRROR_NEW);
  assert_int_equal(mirror1(b, &lc, 0), JB_MIRROR_NEW);
  r->pa3 = posting_for(r->a, "a", JB_PRIORITY_NORMAL, 3);
  r->la = listing(r->a, &r->pa3, "w1", jb__now_us() + S(60));
  *from = log_next(b);
  assert_int_equal(mirror1(b, &r->la, 0), JB_MIRROR_UPDATED);
}

static void relisted_free(relisted *r, jb_board *b) {
  jbt_buf_free(&r->pa);
  jbt_buf_free(&r->pa3);
  jbt_buf_free(&r->pc);
  jbt_assert_check_ok(b);
}

/* Its place changed, not its state: after c now, still w1's; listed so
 * again, nothing to do. */
static void a_job_listed_under_a_new_sequence_moves(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  relisted r;
  uint64_t from;
  relisted_as_3(&r, b, &from);
  assert_int_equal(log_next(b), from);
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 2);
  assert_string_equal(got[0], r.c);
  assert_string_equal(got[1], r.a);
  jb_job *job = get(b, r.a);
  assert_int_equal(jb_job_sequence(job), 3);
  assert_string_equal(jb_job_owner(job), "w1");
  jb_job_free(job);
  assert_int_equal(mirror1(b, &r.la, 0), JB_MIRROR_SAME);
  relisted_free(&r, b);
}

/* Another job under number 2 (a new data set): beside c, after it. */
static void two_jobs_with_one_redis_sequence_both_stay(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  relisted r;
  uint64_t from;
  relisted_as_3(&r, b, &from);
  char d[JB_UUID_STRLEN], got[8][JB_UUID_STRLEN];
  new_uuid(d);
  jbt_buf pd = posting_for(d, "d", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ld = listing(d, &pd, NULL, 0);
  assert_int_equal(mirror1(b, &ld, 0), JB_MIRROR_NEW);
  assert_int_equal(jbt_listing_order(b, got, 8), 3);
  assert_string_equal(got[0], r.c);
  assert_string_equal(got[1], d);
  assert_string_equal(got[2], r.a);
  jbt_buf_free(&pd);
  relisted_free(&r, b);
}

/* Local jobs "mine" and "later" and a Redis job r7 (sequence 7); mine's
 * publication marked pending. */
static void mine_pending(jb_board *b, char mine[JB_UUID_STRLEN],
                         char later[JB_UUID_STRLEN], char r7[JB_UUID_STRLEN],
                         jbt_buf *p7) {
  jbt_post(mine, b, "mine", JB_PRIORITY_NORMAL);
  jbt_post(later, b, "later", JB_PRIORITY_NORMAL);
  new_uuid(r7);
  *p7 = posting_for(r7, "seven", JB_PRIORITY_NORMAL, 7);
  jb_remote_listing l7 = listing(r7, p7, NULL, 0);
  assert_int_equal(mirror1(b, &l7, 0), JB_MIRROR_NEW);
  const char *m = mine;
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
}

static void a_pending_publication_keeps_the_local_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char mine[JB_UUID_STRLEN], later[JB_UUID_STRLEN], r7[JB_UUID_STRLEN];
  jbt_buf p7;
  mine_pending(b, mine, later, r7, &p7);
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 3);
  assert_string_equal(got[0], r7);
  assert_string_equal(got[1], mine);
  jbt_buf_free(&p7);
  jbt_assert_check_ok(b);
}

/* Publication confirmed: the job moves to Redis's order under the number
 * Redis gave it, before the jobs not yet published. */
static void a_confirmed_publication_takes_redis_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char mine[JB_UUID_STRLEN], later[JB_UUID_STRLEN], r7[JB_UUID_STRLEN];
  jbt_buf p7;
  mine_pending(b, mine, later, r7, &p7);
  const char *m = mine;
  uint64_t seq = 5; /* Redis gave it 5: before r7 */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_DONE, &seq,
                                           NULL), JB_OK);
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 3);
  assert_string_equal(got[0], mine);
  assert_string_equal(got[1], r7);
  assert_string_equal(got[2], later);
  jb_job *job = get(b, mine);
  assert_int_equal(jb_job_sequence(job), 5);
  assert_true(jb_job_remote(job));
  jb_job_free(job);
  jbt_buf_free(&p7);
  jbt_assert_check_ok(b);
}

/* Published again after a loss (marked, still keyed by its old Redis
 * number) the board checks clean; refused by Redis then, a job published
 * from here goes back to its own board sequence, and a mirrored one stays
 * Redis-decided: neither takes a Redis number for a board sequence (a
 * later local post would take its key and strand it). */
typedef struct {
  char mine[JB_UUID_STRLEN], theirs[JB_UUID_STRLEN];
  uint64_t board_seq; /* mine's before its publication */
  jbt_buf p41;
} bands;

/* mine published from here as Redis's 40, theirs mirrored as 41; Redis
 * lost them: mine published again, marked, keys as they were. */
static void republished_after_a_loss(bands *bd, jb_board *b) {
  jbt_post(bd->mine, b, "mine", JB_PRIORITY_NORMAL);
  jb_job *job = get(b, bd->mine);
  bd->board_seq = jb_job_sequence(job);
  jb_job_free(job);
  const char *m = bd->mine;
  uint64_t rseq = 40; /* a Redis number above the board's sequences */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_DONE, &rseq,
                                           NULL), JB_OK);
  new_uuid(bd->theirs);
  bd->p41 = posting_for(bd->theirs, "theirs", JB_PRIORITY_NORMAL, 41);
  jb_remote_listing l = listing(bd->theirs, &bd->p41, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
}

/* republished_after_a_loss, then refused by Redis for good, both. */
static void refused_both(bands *bd, jb_board *b) {
  republished_after_a_loss(bd, b);
  const char *m = bd->mine, *t = bd->theirs;
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_LOCAL, NULL,
                                           NULL), JB_OK);
  assert_int_equal(jb__board_set_published(b, &t, 1, JB_PUB_LOCAL, NULL,
                                           NULL), JB_OK);
}

static void a_job_published_again_after_a_loss_checks_clean(void **state) {
  jbt_fixture *fx = *state;
  bands bd;
  republished_after_a_loss(&bd, fx->board);
  jbt_assert_check_ok(fx->board);
  jbt_buf_free(&bd.p41);
}

/* Back to the board's own sequence, decided here. */
static void a_refused_republication_from_here_takes_the_board_sequence(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bands bd;
  refused_both(&bd, b);
  jb_job *job = get(b, bd.mine);
  assert_false(jb_job_remote(job));
  assert_int_equal(jb_job_sequence(job), bd.board_seq);
  jb_job_free(job);
  jbt_buf_free(&bd.p41);
  jbt_assert_check_ok(b);
}

static void a_refused_republication_of_a_mirrored_job_stays_redis_decided(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bands bd;
  refused_both(&bd, b);
  jb_job *job = get(b, bd.theirs);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_sequence(job), 41);
  jb_job_free(job);
  jbt_buf_free(&bd.p41);
  jbt_assert_check_ok(b);
}

/* Up to and past sequence 41, after both refusals. */
static void local_posts_past_a_refused_redis_number_strand_nothing(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  bands bd;
  refused_both(&bd, b);
  for (int i = 0; i < 45; i++) jbt_post(NULL, b, "more", JB_PRIORITY_NORMAL);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 47);
  char got[64][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 64), 47);
  assert_string_equal(got[0], bd.theirs);
  assert_string_equal(got[1], bd.mine);
  jbt_buf_free(&bd.p41);
  jbt_assert_check_ok(b);
}

/* A job u claimed by "w1" mirrored in (sequence 4), then lost from Redis
 * with a reason; *from is the log's next sequence before the loss. */
static void lost_from_redis(jb_board *b, char u[JB_UUID_STRLEN],
                            uint64_t *from) {
  new_uuid(u);
  jbt_buf p = posting_for(u, "lost-one", JB_PRIORITY_NORMAL, 4);
  jb_remote_listing l = listing(u, &p, "w1", jb__now_us() + S(60));
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  *from = log_next(b);
  const char *uu[1] = {u};
  bool lost[1] = {true};
  size_t removed = 0;
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, lost, "redis lost it",
                                         1, &removed),
                   JB_OK);
  assert_int_equal(removed, 1);
  jbt_buf_free(&p);
}

/* History end "lost" with its reason, event LOST (a removal). */
static void a_job_lost_from_redis_leaves_as_lost(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  uint64_t from;
  lost_from_redis(b, u, &from);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_LOST);
  assert_string_equal(ev[0].owner, "w1");
  assert_true((JB_EVENTS_REMOVAL & JB_EVENT_BIT(JB_EVENT_LOST)) != 0);
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, u), JB_OK);
  assert_int_equal(c->end, JB_END_LOST);
  assert_string_equal(jb_end_name(c->end), "lost");
  assert_string_equal(c->reason, "redis lost it");
  assert_string_equal(c->owner, "w1");
  jb_completion_free(c);
  jbt_assert_check_ok(b);
}

/* Published again by its poster (a read after the loss). */
static void a_job_lost_from_redis_comes_back_when_listed_again(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  uint64_t from;
  lost_from_redis(b, u, &from);
  jbt_buf p9 = posting_for(u, "lost-one", JB_PRIORITY_NORMAL, 9);
  jb_remote_listing l = listing(u, &p9, NULL, 0);
  assert_int_equal(mirror1(b, &l, jb__now_us()), JB_MIRROR_NEW);
  jb_job *job = get(b, u);
  assert_int_equal(jb_job_sequence(job), 9);
  jb_job_free(job);
  jbt_buf_free(&p9);
  jbt_assert_check_ok(b);
}

/* A job u mirrored in, then claimed and consumed here; *before is a time
 * before the mirror. */
static void completed_here(jb_board *b, char u[JB_UUID_STRLEN], jbt_buf *p,
                           int64_t *before) {
  new_uuid(u);
  *p = posting_for(u, "again", JB_PRIORITY_NORMAL, 11);
  jb_remote_listing l = listing(u, p, NULL, 0);
  *before = jb__now_us();
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  jb__board_set_remote(b, &yes_ops, NULL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(b, u, "w", 0, NULL), JB_OK);
  jb__board_set_remote(b, NULL, NULL);
}

/* Read before the completion, or within the 2 s slack of it. */
static void a_pass_read_near_a_completion_leaves_the_job_out(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t before;
  completed_here(b, u, &p, &before);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_DONE);
  assert_int_equal(mirror1(b, &l, jb__now_us() + S(1)), JB_MIRROR_DONE);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* Redis lists it again: it lost the completion. */
static void a_completed_job_listed_long_after_comes_back(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_buf p;
  int64_t before;
  completed_here(b, u, &p, &before);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, jb__now_us() + S(3)), JB_MIRROR_NEW);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* -------------------------------------------------------------- settings */

static void a_setting_reads_back_as_set(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char buf[64];
  size_t len = 0;
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, &len),
                   JB_ENOTFOUND);
  assert_int_equal(jb__board_setting_set(b, "sync.url", "redis://h:6379/0"),
                   JB_OK);
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, &len),
                   JB_OK);
  assert_string_equal(buf, "redis://h:6379/0");
  assert_int_equal(len, 16);
  jbt_assert_check_ok(b);
}

static void an_empty_setting_reads_back_empty(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char buf[64];
  size_t len = 0;
  assert_int_equal(jb__board_setting_set(b, "sync.url", ""), JB_OK);
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, &len),
                   JB_OK);
  assert_string_equal(buf, "");
  assert_int_equal(len, 0);
  jbt_assert_check_ok(b);
}

/* Deleting an unset setting is fine. */
static void a_deleted_setting_is_not_found(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char buf[64];
  assert_int_equal(jb__board_setting_set(b, "sync.url", "redis://h:6379/0"),
                   JB_OK);
  assert_int_equal(jb__board_setting_set(b, "sync.url", NULL), JB_OK);
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, NULL),
                   JB_ENOTFOUND);
  assert_int_equal(jb__board_setting_set(b, "sync.url", NULL), JB_OK);
  jbt_assert_check_ok(b);
}

static void a_setting_read_into_too_small_a_buffer_says_the_size_needed(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  size_t len = 0;
  assert_int_equal(jb__board_setting_set(b, "sync.ns", "jobboard-ns"), JB_OK);
  char small[4];
  assert_int_equal(jb__board_setting_get(b, "sync.ns", small, sizeof small,
                                         &len),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "12 bytes needed");
  assert_int_equal(len, 11);
  char exact[12];
  assert_int_equal(jb__board_setting_get(b, "sync.ns", exact, sizeof exact,
                                         NULL),
                   JB_OK);
  assert_string_equal(exact, "jobboard-ns");
  jbt_assert_check_ok(b);
}

/* 4096 bytes, and not one byte more. */
static void a_setting_value_is_at_most_4096_bytes(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  size_t len = 0;
  char *big = malloc(4098);
  memset(big, 'v', 4097);
  big[4097] = '\0';
  assert_int_equal(jb__board_setting_set(b, "sync.big", big), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "4096");
  big[4096] = '\0';
  assert_int_equal(jb__board_setting_set(b, "sync.big", big), JB_OK);
  char *out = malloc(4097);
  assert_int_equal(jb__board_setting_get(b, "sync.big", out, 4097, &len),
                   JB_OK);
  assert_int_equal(len, 4096);
  assert_string_equal(out, big);
  free(out);
  free(big);
  jbt_assert_check_ok(b);
}

/* Unset: set, and the current value (none) comes back empty; the same
 * value again is fine. */
static void a_setting_claim_sets_an_unset_setting(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char cur[64] = "junk";
  assert_int_equal(jb__board_setting_claim(b, "sync.namespace", "ns-a", cur,
                                           sizeof cur),
                   JB_OK);
  assert_string_equal(cur, "");
  assert_int_equal(jb__board_setting_claim(b, "sync.namespace", "ns-a", cur,
                                           sizeof cur),
                   JB_OK);
  jbt_assert_check_ok(b);
}

/* Naming both, the current value out, the setting kept; settings are not
 * job events. */
static void a_setting_claim_of_another_value_is_refused(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char cur[64] = "junk";
  assert_int_equal(jb__board_setting_claim(b, "sync.namespace", "ns-a", cur,
                                           sizeof cur),
                   JB_OK);
  uint64_t from = log_next(b);
  assert_int_equal(jb__board_setting_claim(b, "sync.namespace", "ns-b", cur,
                                           sizeof cur),
                   JB_ECLAIMED);
  assert_string_equal(cur, "ns-a");
  jbt_assert_contains(jb_errmsg(), "ns-a");
  jbt_assert_contains(jb_errmsg(), "ns-b");
  assert_int_equal(jb__board_setting_claim(b, "sync.namespace", "ns-b", NULL,
                                           0),
                   JB_ECLAIMED);
  char buf[16];
  assert_int_equal(jb__board_setting_get(b, "sync.namespace", buf, sizeof buf,
                                         NULL),
                   JB_OK);
  assert_string_equal(buf, "ns-a");
  assert_int_equal(log_next(b), from);
  jbt_assert_check_ok(b);
}

/* The board's own meta keys, and keys outside "sync.", by every call. */
static void bad_setting_keys_are_refused(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char buf[64];
  const char *bad[] = {"schema", "epoch", "board_id", "signal", "url",
                       "sync.", "sync.a b", "sync.\x01", "SYNC.url", NULL};
  for (int i = 0; bad[i]; i++) {
    assert_int_equal(jb__board_setting_set(b, bad[i], "x"), JB_EINVAL);
    assert_int_equal(jb__board_setting_get(b, bad[i], buf, sizeof buf, NULL),
                     JB_EINVAL);
    assert_int_equal(jb__board_setting_claim(b, bad[i], "x", NULL, 0),
                     JB_EINVAL);
  }
  assert_int_equal(jb__board_setting_set(b, NULL, "x"), JB_EINVAL);
  jbt_assert_check_ok(b);
}

/* The longest key ("sync." and 59 bytes), with "ok" set under it. */
static void longest_key_set(jb_board *b, char key[80]) {
  memset(key, 0, 80);
  memcpy(key, "sync.", 5);
  memset(key + 5, 'k', 59); /* 64 bytes: the longest */
  assert_int_equal(jb__board_setting_set(b, key, "ok"), JB_OK);
}

/* 64 bytes, and not one more. */
static void a_setting_key_is_at_most_64_bytes(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char key[80];
  longest_key_set(b, key);
  key[64] = 'k';
  key[65] = '\0';
  assert_int_equal(jb__board_setting_set(b, key, "no"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "64");
  jbt_assert_check_ok(b);
}

static void a_setting_value_that_is_not_utf8_is_refused(void **state) {
  jbt_fixture *fx = *state;
  assert_int_equal(jb__board_setting_set(fx->board, "sync.x", "\xff\xfe"),
                   JB_EINVAL);
  jbt_assert_check_ok(fx->board);
}

/* The board's own meta keys are untouched by settings and refusals: it
 * reopens (schema, epoch), keeps the setting and checks clean. */
static void settings_leave_the_boards_meta_keys_alone(void **state) {
  jbt_fixture *fx = *state;
  char key[80], buf[64];
  longest_key_set(fx->board, key);
  const char *bad[] = {"schema", "epoch", "board_id", "signal", NULL};
  for (int i = 0; bad[i]; i++)
    assert_int_equal(jb__board_setting_set(fx->board, bad[i], "x"),
                     JB_EINVAL);
  jb_board_close(fx->board);
  fx->board = jbt_open(fx->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(jb__board_setting_get(fx->board, key, buf, sizeof buf,
                                         NULL),
                   JB_OK);
  assert_string_equal(buf, "ok");
  jbt_assert_check_ok(fx->board);
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(a_new_unclaimed_listing_goes_on_as_posted_remote_verbatim),
      T(a_new_listing_is_logged_as_posted_with_redis_sequence),
      T(a_mirrored_job_is_listed_as_remote_in_priority_order),
      T(a_mirrored_job_cannot_be_claimed_here_without_the_hook),
      T(a_new_claimed_listing_goes_on_claimed_with_its_lease),
      T(a_new_claimed_listing_without_expiry_has_no_lease),
      T(a_new_claimed_listing_is_logged_as_posted_then_claimed),
      T(a_listing_with_a_past_expiry_reads_unclaimed),
      T(a_mirrored_post_wakes_a_waiter),
      T(an_unchanged_unclaimed_listing_writes_nothing),
      T(an_owner_in_redis_claims_the_job_here),
      T(the_same_owner_in_redis_writes_nothing),
      T(an_expiry_in_redis_extends_the_claim_keeping_its_token),
      T(an_expiry_moved_within_the_slack_writes_nothing),
      T(an_expiry_moved_beyond_the_slack_is_copied),
      T(an_expiry_dropped_in_redis_drops_the_lease),
      T(another_owner_in_redis_replaces_the_claim),
      T(unclaimed_in_redis_abandons_the_claim_here),
      T(a_read_begun_before_a_local_change_is_left_alone),
      T(a_read_begun_after_a_local_change_is_applied),
      T(a_read_begun_before_a_job_became_ready_is_left_alone),
      T(a_bound_claim_without_a_lease_keeps_binding_and_no_lease),
      T(a_bound_claim_with_a_lease_keeps_binding_and_takes_the_expiry),
      T(a_listing_of_a_local_job_is_left_alone),
      T(mirror_gone_skips_a_local_job),
      T(a_job_completed_here_is_not_brought_back),
      T(an_undecodable_posting_is_quarantined_and_the_rest_mirrored),
      T(check_reports_a_posting_quarantined_from_redis),
      T(an_undecodable_posting_is_quarantined_once),
      T(other_bad_bytes_under_a_quarantined_uuid_keep_the_first),
      T(a_posting_naming_another_uuid_is_quarantined),
      T(a_posting_msgpack_c_cannot_read_is_quarantined),
      T(a_batch_with_a_bad_uuid_writes_nothing),
      T(a_batch_with_an_empty_owner_writes_nothing),
      T(a_batch_with_a_negative_expiry_writes_nothing),
      T(gone_with_a_bad_uuid_writes_nothing),
      T(a_job_consumed_in_redis_leaves_with_its_history),
      T(a_job_trashed_in_redis_leaves_as_trashed),
      T(gone_takes_off_only_the_redis_jobs_on_the_board),
      T(jobs_gone_twice_are_taken_off_once),
      T(a_job_gone_from_redis_is_done_for_the_next_pass),
      T(redis_jobs_list_in_redis_order),
      T(claim_next_takes_redis_jobs_in_redis_order),
      T(a_job_listed_under_a_new_sequence_moves),
      T(two_jobs_with_one_redis_sequence_both_stay),
      T(without_redis_claim_next_takes_local_jobs_in_order),
      T(a_pending_publication_keeps_the_local_order),
      T(a_confirmed_publication_takes_redis_order),
      T(a_job_published_again_after_a_loss_checks_clean),
      T(a_refused_republication_from_here_takes_the_board_sequence),
      T(a_refused_republication_of_a_mirrored_job_stays_redis_decided),
      T(local_posts_past_a_refused_redis_number_strand_nothing),
      T(a_job_lost_from_redis_leaves_as_lost),
      T(a_job_lost_from_redis_comes_back_when_listed_again),
      T(a_pass_read_near_a_completion_leaves_the_job_out),
      T(a_completed_job_listed_long_after_comes_back),
      T(a_setting_reads_back_as_set),
      T(an_empty_setting_reads_back_empty),
      T(a_deleted_setting_is_not_found),
      T(a_setting_read_into_too_small_a_buffer_says_the_size_needed),
      T(a_setting_value_is_at_most_4096_bytes),
      T(a_setting_claim_sets_an_unset_setting),
      T(a_setting_claim_of_another_value_is_refused),
      T(bad_setting_keys_are_refused),
      T(a_setting_key_is_at_most_64_bytes),
      T(a_setting_value_that_is_not_utf8_is_refused),
      T(settings_leave_the_boards_meta_keys_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
