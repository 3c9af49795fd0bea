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
                                      yes_finish, yes_extend, NULL, NULL, NULL, NULL, NULL};

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

static void a_new_unclaimed_listing_goes_on_as_posted_remote_verbatim(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN];
  jbt_post(local, b, "local", JB_PRIORITY_NORMAL);
  jbt_buf p = jbt_from_hex(jbt_wire_posting_hex);
  assert_int_equal(p.len, 233);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(JBT_WIRE_UUID, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);

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

  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
  assert_string_equal(ev[0].uuid, JBT_WIRE_UUID);
  assert_int_equal(ev[0].seq, from);
  assert_int_equal(ev[0].job_seq, 42);

  /* Listed as remote too (the iterator passes the flag); HIGH comes
   * before the local NORMAL job. */
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

  /* Decided by Redis: no local claim without the hook. */
  assert_int_equal(jb_claim(NULL, b, JBT_WIRE_UUID, "w", NULL), JB_EOFFLINE);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

static void a_new_claimed_listing_goes_on_claimed_with_its_lease(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u1[JB_UUID_STRLEN], u2[JB_UUID_STRLEN];
  new_uuid(u1);
  new_uuid(u2);
  jbt_buf p1 = posting_for(u1, "leased", JB_PRIORITY_LOW, 7);
  jbt_buf p2 = posting_for(u2, "forever", JB_PRIORITY_NORMAL, 8);
  int64_t exp = jb__now_us() + S(60);
  jb_remote_listing ls[2] = {listing(u1, &p1, "worker-1", exp),
                             listing(u2, &p2, "worker-2", 0)};
  uint64_t from = log_next(b);
  int res[2] = {0, 0};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_NEW);
  assert_int_equal(res[1], JB_MIRROR_NEW);

  jb_job *job = get(b, u1);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_CLAIMED);
  assert_string_equal(jb_job_owner(job), "worker-1");
  assert_int_equal(jb_job_holder_pid(job), 0);
  int64_t d = jb_job_lease_expires(job) - exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  uint64_t token = jb_job_token(job);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  assert_int_equal(len, p1.len);
  assert_memory_equal(bytes, p1.data, p1.len);
  jb_job_free(job);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u1), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_AT);
  assert_true(ms > 59000 && ms <= 60000);
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u2), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_NONE);

  /* POSTED, CLAIMED (the token), POSTED, CLAIMED. */
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 4);
  assert_int_equal(ev[0].type, JB_EVENT_POSTED);
  assert_int_equal(ev[1].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[1].owner, "worker-1");
  assert_int_equal(ev[1].seq, token);
  assert_int_equal(ev[0].job_seq, 7); /* Redis's sequence */
  assert_int_equal(ev[1].job_seq, 7);
  assert_int_equal(ev[3].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[3].owner, "worker-2");
  size_t n;
  assert_int_equal(jb_board_count(&n, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 0);
  jbt_buf_free(&p1);
  jbt_buf_free(&p2);
  jbt_assert_check_ok(b);
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

static void claims_follow_redis(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "follow", JB_PRIORITY_NORMAL, 11);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  /* Unclaimed in Redis and here: nothing written. */
  uint64_t from = log_next(b);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);

  /* An owner where there was none. */
  l = listing(u, &p, "alice", 0);
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
  jbt_assert_check_ok(b);

  /* The same owner, no expiry either side: the same. */
  from = log_next(b);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);

  /* The same owner with an expiry: copied (EXTENDED), token kept. */
  int64_t exp = jb__now_us() + S(30);
  l = listing(u, &p, "alice", exp);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  job = get(b, u);
  assert_int_equal(jb_job_token(job), t1);
  int64_t d = jb_job_lease_expires(job) - exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  jb_job_free(job);
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_EXTENDED);
  assert_string_equal(ev[0].owner, "alice");
  jbt_assert_check_ok(b);
  /* Within the slack: the same; beyond it: copied again. */
  from = log_next(b);
  l = listing(u, &p, "alice", exp + JB_MIRROR_EXPIRY_SLACK_US / 2);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  exp += S(20);
  l = listing(u, &p, "alice", exp);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  jb_expiry kind;
  int64_t ms;
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_AT);
  assert_true(ms > 49000 && ms <= 50000);
  /* The expiry dropped in Redis: the lease goes. */
  l = listing(u, &p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  assert_int_equal(jb_job_expires_in(&kind, &ms, b, u), JB_OK);
  assert_int_equal(kind, JB_EXPIRY_NONE);
  jbt_assert_check_ok(b);

  /* Another owner: the claim replaced, a new token. */
  from = log_next(b);
  l = listing(u, &p, "bob", jb__now_us() + S(10));
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  job = get(b, u);
  assert_string_equal(jb_job_owner(job), "bob");
  assert_true(jb_job_token(job) > t1);
  assert_true(jb_job_lease_expires(job) > 0);
  jb_job_free(job);
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_CLAIMED);
  assert_string_equal(ev[0].owner, "bob");
  jbt_assert_check_ok(b);

  /* Unclaimed in Redis: the local claim goes, ABANDONED naming bob. */
  from = log_next(b);
  l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_UPDATED);
  job = get(b, u);
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  assert_int_equal(jb_job_lease_expires(job), 0);
  jb_job_free(job);
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
static void a_local_change_after_read_us_is_left_alone(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "race", JB_PRIORITY_NORMAL, 5);
  int64_t before = jb__now_us();
  usleep(2000);
  jb_remote_listing l = listing(u, &p, "alice", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW); /* claimed now */
  /* A read begun before that claim saw no owner, then bob: both stale. */
  uint64_t from = log_next(b);
  l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_SAME);
  l = listing(u, &p, "bob", 0);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_SAME);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, b, u), JB_OK);
  assert_string_equal(owner, "alice");
  assert_int_equal(log_next(b), from);
  /* A read begun after it: applied. */
  usleep(2000);
  int64_t after = jb__now_us();
  l = listing(u, &p, NULL, 0);
  assert_int_equal(mirror1(b, &l, after), JB_MIRROR_UPDATED);
  /* Now the job is ready since a moment ago: an older read's owner is
   * stale too. */
  l = listing(u, &p, "carol", 0);
  assert_int_equal(mirror1(b, &l, after), JB_MIRROR_SAME);
  jb_state st;
  assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
  assert_int_equal(st, JB_STATE_UNCLAIMED);
  usleep(2000);
  assert_int_equal(mirror1(b, &l, jb__now_us()), JB_MIRROR_UPDATED);
  assert_int_equal(jb_job_find_owner(owner, b, u), JB_OK);
  assert_string_equal(owner, "carol");
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* A claim bound to a process here keeps its binding, and a missing lease
 * stays missing, when Redis names the same owner with an expiry. */
static void a_bound_claim_keeps_its_binding(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN];
  new_uuid(u);
  new_uuid(v);
  jbt_buf pu = posting_for(u, "bound", JB_PRIORITY_NORMAL, 1);
  jbt_buf pv = posting_for(v, "bound-leased", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ls[2] = {listing(u, &pu, NULL, 0),
                             listing(v, &pv, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_OK);

  /* u: bound, no lease (as the replicator's renewals will allow; recorded
   * here as a decided claim directly). */
  uint8_t raw[16];
  assert_int_equal(jb__uuid_parse(raw, u, "u"), JB_OK);
  jb_store_claim_req req = {.who = "me", .who_len = 2, .now_us = jb__now_us(),
                            .bind = true};
  assert_int_equal(jb__proc_self(&req.holder), JB_OK);
  uint64_t token;
  assert_int_equal(jb__store_claim_x(b->store, raw, &req, &token,
                                     JB_STORE_DECIDED), JB_OK);
  /* v: bound with a lease, through the API and a hook saying yes. */
  jb__board_set_remote(b, &yes_ops, NULL);
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  o.lease_ms = 60000;
  assert_int_equal(jb_claim(NULL, b, v, "me", &o), JB_OK);
  jb__board_set_remote(b, NULL, NULL);

  uint64_t from = log_next(b);
  int64_t exp = jb__now_us() + S(5);
  ls[0] = listing(u, &pu, "me", exp);
  ls[1] = listing(v, &pv, "me", exp);
  int res[2];
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_SAME);
  assert_int_equal(res[1], JB_MIRROR_UPDATED);
  jb_job *job = get(b, u);
  assert_int_equal(jb_job_holder_pid(job), getpid());
  assert_int_equal(jb_job_lease_expires(job), 0);
  assert_int_equal(jb_job_token(job), token);
  jb_job_free(job);
  job = get(b, v);
  assert_int_equal(jb_job_holder_pid(job), getpid());
  int64_t d = jb_job_lease_expires(job) - exp;
  assert_true(d > -S(1) / 10 && d < S(1) / 10);
  jb_job_free(job);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1);
  assert_int_equal(ev[0].type, JB_EVENT_EXTENDED);
  assert_string_equal(ev[0].uuid, v);
  jbt_buf_free(&pu);
  jbt_buf_free(&pv);
  jbt_assert_check_ok(b);
}

/* ------------------------------------------------ local and done jobs */

static void a_local_job_is_left_alone(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "mine", JB_PRIORITY_NORMAL);
  jb_job *job = get(b, u);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  jbt_buf p = {malloc(len), len};
  memcpy(p.data, bytes, len);
  jb_job_free(job);
  uint64_t from = log_next(b);
  jb_remote_listing l = listing(u, &p, "thief", 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_LOCAL);
  assert_int_equal(log_next(b), from);
  job = get(b, u);
  assert_false(jb_job_remote(job));
  assert_int_equal(jb_job_state(job), JB_STATE_UNCLAIMED);
  jb_job_free(job);
  /* ... and mirror_gone skips it. */
  const char *uu[1] = {u};
  size_t removed = 99;
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, NULL, NULL, 1, &removed), JB_OK);
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

static void an_undecodable_posting_is_quarantined_once(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char local[JB_UUID_STRLEN], bad[JB_UUID_STRLEN], good[JB_UUID_STRLEN];
  jbt_post(local, b, "local", JB_PRIORITY_NORMAL);
  new_uuid(bad);
  new_uuid(good);
  jbt_buf pb = {malloc(4), 4};
  memcpy(pb.data, "\x93\x01\x02\x03", 4); /* an array, not a map */
  jbt_buf pg = posting_for(good, "good", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ls[2] = {listing(bad, &pb, "w", 0),
                             listing(good, &pg, NULL, 0)};
  uint64_t from = log_next(b);
  int res[2];
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[1], JB_MIRROR_NEW);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, bad), JB_ENOTFOUND);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 1); /* good's POSTED only */
  assert_string_equal(ev[0].uuid, good);

  report r = {""};
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 1);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.moved, 0);
  assert_int_equal(st.jobs, 2);
  jbt_assert_contains(r.text, "quarantined: job ");
  jbt_assert_contains(r.text, bad);
  jbt_assert_contains(r.text, "received from Redis");
  jbt_assert_contains(r.text, "not a map");
  jbt_assert_contains(r.text, "(4 bytes kept)");

  /* Again: still one record; nothing else changed. */
  from = log_next(b);
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, res), JB_OK);
  assert_int_equal(res[0], JB_MIRROR_QUARANTINED);
  assert_int_equal(res[1], JB_MIRROR_SAME);
  assert_int_equal(log_next(b), from);
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  assert_int_equal(st.quarantined, 1);
  /* Other bad bytes under that uuid: the first record stays as it was. */
  jbt_buf pb2 = {malloc(2), 2};
  memcpy(pb2.data, "\xc1\xc1", 2);
  ls[0] = listing(bad, &pb2, NULL, 0);
  assert_int_equal(mirror1(b, &ls[0], 0), JB_MIRROR_QUARANTINED);
  memset(&r, 0, sizeof r);
  assert_int_equal(jb_board_check(&st, b, collect, &r), JB_OK);
  assert_int_equal(st.quarantined, 1);
  jbt_assert_contains(r.text, "(4 bytes kept)");
  jbt_buf_free(&pb2);
  size_t n;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 2);
  jbt_buf_free(&pb);
  jbt_buf_free(&pg);
  jbt_assert_check_ok(b);
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

static void a_bad_uuid_or_owner_writes_nothing(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "x", JB_PRIORITY_NORMAL, 1);
  jbt_snapshot before, after;
  jbt_snapshot_take(&before, b);
  jb_remote_listing ls[2] = {listing(u, &p, NULL, 0),
                             listing("not-a-uuid", &p, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "not-a-uuid");
  ls[1] = listing(u, &p, "", 0);
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "owner");
  ls[1] = listing(u, &p, "w", -5);
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_EINVAL);
  const char *uu[2] = {u, "zzz"};
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, NULL, NULL, 2, NULL), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "zzz");
  jbt_snapshot_take(&after, b);
  jbt_snapshot_assert_same(&before, &after);
  jbt_snapshot_free(&before);
  jbt_snapshot_free(&after);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* ------------------------------------------------------------------ gone */

static void jobs_gone_from_redis_leave_with_history(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char a[JB_UUID_STRLEN], t[JB_UUID_STRLEN], local[JB_UUID_STRLEN],
      missing[JB_UUID_STRLEN];
  new_uuid(a);
  new_uuid(t);
  new_uuid(missing);
  jbt_post(local, b, "local", JB_PRIORITY_NORMAL);
  jbt_buf pa = posting_for(a, "consumed-there", JB_PRIORITY_NORMAL, 1);
  jbt_buf pt = posting_for(t, "trashed-there", JB_PRIORITY_HIGH, 2);
  jb_remote_listing ls[2] = {listing(a, &pa, "w1", jb__now_us() + S(60)),
                             listing(t, &pt, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 2, 0, NULL), JB_OK);
  jb_job *job = get(b, a);
  uint64_t seq_a = jb_job_sequence(job);
  jb_job_free(job);

  uint64_t from = log_next(b);
  const char *uu[4] = {a, t, local, missing};
  bool trashed[4] = {false, true, true, false};
  size_t removed = 0;
  assert_int_equal(jb__board_mirror_gone(b, uu, trashed, NULL, NULL, 4, &removed), JB_OK);
  assert_int_equal(removed, 2);
  jb_event ev[16];
  assert_int_equal(events_from(b, from, ev), 2);
  assert_int_equal(ev[0].type, JB_EVENT_CONSUMED);
  assert_string_equal(ev[0].uuid, a);
  assert_string_equal(ev[0].owner, "w1");
  assert_int_equal(ev[1].type, JB_EVENT_TRASHED);
  assert_string_equal(ev[1].uuid, t);
  assert_string_equal(ev[1].owner, "");

  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, a), JB_OK);
  assert_int_equal(c->end, JB_END_CONSUMED);
  assert_string_equal(c->owner, "w1");
  assert_string_equal(c->name, "consumed-there");
  assert_int_equal(c->sequence, seq_a);
  assert_true(c->claimed_us > 0);
  assert_int_equal(c->result_len, 1); /* the empty map */
  jb_completion_free(c);
  assert_int_equal(jb_job_completion(&c, b, t), JB_OK);
  assert_int_equal(c->end, JB_END_TRASHED);
  assert_null(c->owner);
  assert_int_equal(c->priority, JB_PRIORITY_HIGH);
  jb_completion_free(c);

  size_t n;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 1); /* the local job */
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, b, NULL, NULL), JB_OK);
  assert_int_equal(st.trashed, 1);
  assert_int_equal(st.history, 2);
  /* Gone twice: nothing more. */
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, NULL, NULL, 2, &removed), JB_OK);
  assert_int_equal(removed, 0);
  /* And the replicator's next pass does not bring them back. */
  ls[0] = listing(a, &pa, NULL, 0);
  assert_int_equal(mirror1(b, &ls[0], 0), JB_MIRROR_DONE);
  jbt_buf_free(&pa);
  jbt_buf_free(&pt);
  jbt_assert_check_ok(b);
}

/* ----------------------------------------------------- Redis's order */

/* Listings pulled in any order list and claim in Redis's posting order
 * (NS:sequence), also when one posted earlier is pulled later; a local
 * job not yet published comes after them; priority still comes first. */
static void redis_jobs_list_and_claim_in_redis_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[5][JB_UUID_STRLEN], local[JB_UUID_STRLEN];
  for (int i = 0; i < 5; i++) new_uuid(u[i]);
  /* Redis sequences 30, 10, 20 arrive in one pull, in hash order. */
  jbt_buf p30 = posting_for(u[0], "thirty", JB_PRIORITY_NORMAL, 30);
  jbt_buf p10 = posting_for(u[1], "ten", JB_PRIORITY_NORMAL, 10);
  jbt_buf p20 = posting_for(u[2], "twenty", JB_PRIORITY_NORMAL, 20);
  jbt_post(local, b, "local", JB_PRIORITY_NORMAL); /* posted first here */
  jb_remote_listing ls[3] = {listing(u[0], &p30, NULL, 0),
                             listing(u[1], &p10, NULL, 0),
                             listing(u[2], &p20, NULL, 0)};
  assert_int_equal(jb__board_mirror_listings(b, ls, 3, 0, NULL), JB_OK);
  /* 5, posted before all of them, pulled later; 40 HIGH, pulled last. */
  jbt_buf p5 = posting_for(u[3], "five", JB_PRIORITY_NORMAL, 5);
  jbt_buf p40 = posting_for(u[4], "forty-high", JB_PRIORITY_HIGH, 40);
  jb_remote_listing l5 = listing(u[3], &p5, NULL, 0);
  jb_remote_listing l40 = listing(u[4], &p40, NULL, 0);
  assert_int_equal(mirror1(b, &l5, 0), JB_MIRROR_NEW);
  assert_int_equal(mirror1(b, &l40, 0), JB_MIRROR_NEW);
  char got[8][JB_UUID_STRLEN];
  const char *want[6] = {u[4], u[3], u[1], u[2], u[0], local};
  assert_int_equal(jbt_listing_order(b, got, 8), 6);
  for (int i = 0; i < 6; i++) assert_string_equal(got[i], want[i]);
  jb_job *job = get(b, u[3]);
  assert_int_equal(jb_job_sequence(job), 5);
  jb_job_free(job);
  /* claim-next in the same order (Redis says yes to each claim). */
  jb__board_set_remote(b, &yes_ops, NULL);
  for (int i = 0; i < 6; i++) {
    char c[JB_UUID_STRLEN];
    assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
    assert_string_equal(c, want[i]);
  }
  jb__board_set_remote(b, NULL, NULL);
  jbt_buf_free(&p30);
  jbt_buf_free(&p10);
  jbt_buf_free(&p20);
  jbt_buf_free(&p5);
  jbt_buf_free(&p40);
  jbt_assert_check_ok(b);
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
static void a_job_listed_under_a_new_sequence_moves(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char a[JB_UUID_STRLEN], c[JB_UUID_STRLEN], d[JB_UUID_STRLEN];
  new_uuid(a);
  new_uuid(c);
  new_uuid(d);
  jbt_buf pa = posting_for(a, "a", JB_PRIORITY_NORMAL, 1);
  jbt_buf pc = posting_for(c, "c", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing la = listing(a, &pa, "w1", jb__now_us() + S(60));
  jb_remote_listing lc = listing(c, &pc, NULL, 0);
  assert_int_equal(mirror1(b, &la, 0), JB_MIRROR_NEW);
  assert_int_equal(mirror1(b, &lc, 0), JB_MIRROR_NEW);
  /* Published again as number 3: after c now. */
  jbt_buf pa3 = posting_for(a, "a", JB_PRIORITY_NORMAL, 3);
  la = listing(a, &pa3, "w1", jb__now_us() + S(60));
  uint64_t from = log_next(b);
  assert_int_equal(mirror1(b, &la, 0), JB_MIRROR_UPDATED);
  assert_int_equal(log_next(b), from); /* its place changed, not its state */
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 2);
  assert_string_equal(got[0], c);
  assert_string_equal(got[1], a);
  jb_job *job = get(b, a);
  assert_int_equal(jb_job_sequence(job), 3);
  assert_string_equal(jb_job_owner(job), "w1");
  jb_job_free(job);
  /* Again as listed: nothing to do. */
  assert_int_equal(mirror1(b, &la, 0), JB_MIRROR_SAME);
  /* Another job under number 2 (a new data set): beside c, after it. */
  jbt_buf pd = posting_for(d, "d", JB_PRIORITY_NORMAL, 2);
  jb_remote_listing ld = listing(d, &pd, NULL, 0);
  assert_int_equal(mirror1(b, &ld, 0), JB_MIRROR_NEW);
  assert_int_equal(jbt_listing_order(b, got, 8), 3);
  assert_string_equal(got[0], c);
  assert_string_equal(got[1], d);
  assert_string_equal(got[2], a);
  jbt_buf_free(&pa);
  jbt_buf_free(&pa3);
  jbt_buf_free(&pc);
  jbt_buf_free(&pd);
  jbt_assert_check_ok(b);
}

/* Publication confirmed: the job moves to Redis's order under the number
 * Redis gave it, before the jobs not yet published. */
static void a_confirmed_publication_takes_redis_order(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char mine[JB_UUID_STRLEN], later[JB_UUID_STRLEN], r7[JB_UUID_STRLEN];
  jbt_post(mine, b, "mine", JB_PRIORITY_NORMAL);
  jbt_post(later, b, "later", JB_PRIORITY_NORMAL);
  new_uuid(r7);
  jbt_buf p7 = posting_for(r7, "seven", JB_PRIORITY_NORMAL, 7);
  jb_remote_listing l7 = listing(r7, &p7, NULL, 0);
  assert_int_equal(mirror1(b, &l7, 0), JB_MIRROR_NEW);
  const char *m = mine;
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
  char got[8][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 8), 3); /* pending: still local order */
  assert_string_equal(got[0], r7);
  assert_string_equal(got[1], mine);
  jbt_assert_check_ok(b);
  uint64_t seq = 5; /* Redis gave it 5: before r7 */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_DONE, &seq,
                                           NULL), JB_OK);
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
static void a_refused_republication_keeps_the_bands_apart(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char mine[JB_UUID_STRLEN], theirs[JB_UUID_STRLEN];
  jbt_post(mine, b, "mine", JB_PRIORITY_NORMAL);
  jb_job *job = get(b, mine);
  uint64_t board_seq = jb_job_sequence(job);
  jb_job_free(job);
  const char *m = mine;
  uint64_t rseq = 40; /* a Redis number above the board's sequences */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_DONE, &rseq,
                                           NULL), JB_OK);
  new_uuid(theirs);
  jbt_buf p41 = posting_for(theirs, "theirs", JB_PRIORITY_NORMAL, 41);
  jb_remote_listing l = listing(theirs, &p41, NULL, 0);
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  /* Redis lost them: published again, marked, keys as they were. */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_PENDING, NULL,
                                           NULL), JB_OK);
  jbt_assert_check_ok(b);
  /* Refused for good: back to the board's own sequence, decided here. */
  assert_int_equal(jb__board_set_published(b, &m, 1, JB_PUB_LOCAL, NULL,
                                           NULL), JB_OK);
  job = get(b, mine);
  assert_false(jb_job_remote(job));
  assert_int_equal(jb_job_sequence(job), board_seq);
  jb_job_free(job);
  const char *t = theirs;
  assert_int_equal(jb__board_set_published(b, &t, 1, JB_PUB_LOCAL, NULL,
                                           NULL), JB_OK);
  job = get(b, theirs);
  assert_true(jb_job_remote(job));
  assert_int_equal(jb_job_sequence(job), 41);
  jb_job_free(job);
  jbt_assert_check_ok(b);
  /* Local posts up to and past sequence 41 strand nothing. */
  for (int i = 0; i < 45; i++) jbt_post(NULL, b, "more", JB_PRIORITY_NORMAL);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, b, 0), JB_OK);
  assert_int_equal(n, 47);
  char got[64][JB_UUID_STRLEN];
  assert_int_equal(jbt_listing_order(b, got, 64), 47);
  assert_string_equal(got[0], theirs);
  assert_string_equal(got[1], mine);
  jbt_buf_free(&p41);
  jbt_assert_check_ok(b);
}

/* Lost from Redis: history end "lost" with its reason, event LOST; the
 * job comes back when Redis lists it again. */
static void a_job_lost_from_redis_comes_back(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "lost-one", JB_PRIORITY_NORMAL, 4);
  jb_remote_listing l = listing(u, &p, "w1", jb__now_us() + S(60));
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  uint64_t from = log_next(b);
  const char *uu[1] = {u};
  bool lost[1] = {true};
  size_t removed = 0;
  assert_int_equal(jb__board_mirror_gone(b, uu, NULL, lost, "redis lost it",
                                         1, &removed), JB_OK);
  assert_int_equal(removed, 1);
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
  /* Published again by its poster (a read after the loss): back. */
  jbt_buf p9 = posting_for(u, "lost-one", JB_PRIORITY_NORMAL, 9);
  l = listing(u, &p9, NULL, 0);
  assert_int_equal(mirror1(b, &l, jb__now_us()), JB_MIRROR_NEW);
  jb_job *job = get(b, u);
  assert_int_equal(jb_job_sequence(job), 9);
  jb_job_free(job);
  jbt_buf_free(&p);
  jbt_buf_free(&p9);
  jbt_assert_check_ok(b);
}

/* A job completed here is left out by a pass that read Redis before the
 * completion, and brought back by one that read Redis well after it
 * (Redis lists it again: it lost the completion). */
static void a_completed_job_listed_long_after_comes_back(void **state) {
  jbt_fixture *fx = *state;
  jb_board *b = fx->board;
  char u[JB_UUID_STRLEN];
  new_uuid(u);
  jbt_buf p = posting_for(u, "again", JB_PRIORITY_NORMAL, 11);
  jb_remote_listing l = listing(u, &p, NULL, 0);
  int64_t before = jb__now_us();
  assert_int_equal(mirror1(b, &l, 0), JB_MIRROR_NEW);
  jb__board_set_remote(b, &yes_ops, NULL);
  assert_int_equal(jb_claim(NULL, b, u, "w", NULL), JB_OK);
  assert_int_equal(jb_consume(b, u, "w", 0, NULL), JB_OK);
  jb__board_set_remote(b, NULL, NULL);
  assert_int_equal(mirror1(b, &l, before), JB_MIRROR_DONE);
  /* Within the 2 s slack of the completion: still done. */
  assert_int_equal(mirror1(b, &l, jb__now_us() + S(1)), JB_MIRROR_DONE);
  assert_int_equal(mirror1(b, &l, jb__now_us() + S(3)), JB_MIRROR_NEW);
  jbt_buf_free(&p);
  jbt_assert_check_ok(b);
}

/* -------------------------------------------------------------- settings */

static void settings_round_trip(void **state) {
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
  assert_int_equal(jb__board_setting_set(b, "sync.url", ""), JB_OK);
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, &len),
                   JB_OK);
  assert_string_equal(buf, "");
  assert_int_equal(len, 0);
  assert_int_equal(jb__board_setting_set(b, "sync.url", NULL), JB_OK);
  assert_int_equal(jb__board_setting_get(b, "sync.url", buf, sizeof buf, NULL),
                   JB_ENOTFOUND);
  /* Deleting an unset setting is fine. */
  assert_int_equal(jb__board_setting_set(b, "sync.url", NULL), JB_OK);

  /* Too small a buffer: the size needed. */
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

  /* The longest value, and one byte more. */
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

static void settings_claim_sets_only_if_unset(void **state) {
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
  assert_int_equal(log_next(b), from); /* settings are not job events */
  jbt_assert_check_ok(b);
}

static void bad_setting_keys_are_refused_and_meta_is_safe(void **state) {
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
  char key[80] = "sync.";
  memset(key + 5, 'k', 59); /* 64 bytes: the longest */
  key[64] = '\0';
  assert_int_equal(jb__board_setting_set(b, key, "ok"), JB_OK);
  key[64] = 'k';
  key[65] = '\0';
  assert_int_equal(jb__board_setting_set(b, key, "no"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "64");
  assert_int_equal(jb__board_setting_set(b, "sync.x", "\xff\xfe"), JB_EINVAL);
  /* The board's own meta keys are untouched: it reopens (schema, epoch)
   * and checks clean. */
  jb_board_close(fx->board);
  fx->board = jbt_open(fx->dir, JB_DURABILITY_NORMAL, 0);
  key[64] = '\0';
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
      T(a_new_claimed_listing_goes_on_claimed_with_its_lease),
      T(a_listing_with_a_past_expiry_reads_unclaimed),
      T(a_mirrored_post_wakes_a_waiter),
      T(claims_follow_redis),
      T(a_local_change_after_read_us_is_left_alone),
      T(a_bound_claim_keeps_its_binding),
      T(a_local_job_is_left_alone),
      T(a_job_completed_here_is_not_brought_back),
      T(an_undecodable_posting_is_quarantined_once),
      T(a_posting_naming_another_uuid_is_quarantined),
      T(a_posting_msgpack_c_cannot_read_is_quarantined),
      T(a_bad_uuid_or_owner_writes_nothing),
      T(jobs_gone_from_redis_leave_with_history),
      T(redis_jobs_list_and_claim_in_redis_order),
      T(a_job_listed_under_a_new_sequence_moves),
      T(without_redis_claim_next_takes_local_jobs_in_order),
      T(a_confirmed_publication_takes_redis_order),
      T(a_refused_republication_keeps_the_bands_apart),
      T(a_job_lost_from_redis_comes_back),
      T(a_completed_job_listed_long_after_comes_back),
      T(settings_round_trip),
      T(settings_claim_sets_only_if_unset),
      T(bad_setting_keys_are_refused_and_meta_is_safe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
