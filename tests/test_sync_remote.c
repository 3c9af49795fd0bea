/*
 * test_sync_remote.c - the job operations on Redis (sync/remote.h) against
 * a redis-server each test starts (tests/redis_helper.h), with Debian's
 * python3-taskflow as the peer: every outcome of post, claim, abandon,
 * consume, trash and extend with the local board's messages; our postings
 * read by taskflow; taskflow's jobs claimed by us as taskflow sees it;
 * racing claimer processes; a reply lost to a stopped server, resolved by
 * reading what Redis holds (for a post: its marker, after another client
 * consumed the job).
 */
#include "remote.h"
#include "helpers.h"
#include "redis_helper.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PY "/usr/bin/python3"

typedef struct {
  jbt_redis redis;
  char *dir;        /* the local board's directory, and the python files */
  jb_board *board;
  jb_sync_conn *conn;
  jb__remote rm;
  /* The two jobs of post_two, their postings freed by teardown. */
  char u1[JB_UUID_STRLEN], u2[JB_UUID_STRLEN];
  jbt_buf p1, p2;
  /* The job of claimed_by_alice, its claim id and another claim id. */
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], idb[JB_UUID_STRLEN];
} fixture;

/* Notices off by default: the tests look at the bare keys; one test turns
 * them on. */
static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  jbt_redis_start(&f->redis, NULL);
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  f->conn = jbt_redis_connect(f->redis.unix_url, 500);
  assert_int_equal(jb__remote_init(&f->rm, f->conn, false), JB_OK);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  jb_sync_close(f->conn);
  jb_board_close(f->board);
  jbt_rmtree(f->dir);
  free(f->dir);
  jbt_redis_stop(&f->redis);
  jbt_buf_free(&f->p1);
  jbt_buf_free(&f->p2);
  free(f);
  return 0;
}

/* Post a job on the local board and give back its whole posting. */
static void local_job(char uuid[JB_UUID_STRLEN], jbt_buf *posting,
                      fixture *f, const char *name, bool details) {
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.priority = JB_PRIORITY_HIGH;
  jbt_buf d = jbt_details_store(7);
  if (details) {
    p.details = d.data;
    p.details_len = d.len;
    p.book_name = "my-book";
    p.book_uuid = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
  }
  assert_int_equal(jb_job_post(uuid, f->board, &p), JB_OK);
  jbt_buf_free(&d);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, f->board, uuid), JB_OK);
  size_t len;
  const void *bytes = jb_job_posting(job, &len);
  posting->data = malloc(len);
  assert_non_null(posting->data);
  memcpy(posting->data, bytes, len);
  posting->len = len;
  jb_job_free(job);
}

/* Publish a fresh local job; returns its Redis sequence. */
static uint64_t published(char uuid[JB_UUID_STRLEN], fixture *f,
                          const char *name) {
  jbt_buf posting;
  local_job(uuid, &posting, f, name, false);
  jb__remote_result res;
  int rc = jb__remote_post(&res, &f->rm, uuid, posting.data, posting.len,
                           NULL);
  if (rc) fail_msg("post %s: %s", uuid, jb_errmsg());
  jbt_buf_free(&posting);
  return res.sequence;
}

static jb__remote_owner owner(const char *who, const char *claim_id,
                              int64_t expiry_ms) {
  jb__remote_owner o = {who, expiry_ms, claim_id, 0};
  return o;
}

/* A raw command's reply (string, integer or nil) as text ("(nil)"). */
static void redis_get(char *out, size_t size, fixture *f, int argc,
                      const char **argv) {
  redisReply *r = NULL;
  int rc = jb__sync_command(&r, f->conn, argc, argv, NULL);
  if (rc) fail_msg("%s: %s", argv[0], jb_errmsg());
  if (r->type == REDIS_REPLY_STRING)
    snprintf(out, size, "%.*s", (int)r->len, r->str);
  else if (r->type == REDIS_REPLY_INTEGER)
    snprintf(out, size, "%lld", r->integer);
  else
    snprintf(out, size, "(nil)");
  freeReplyObject(r);
}

/* Run a python script (taskflow's RedisJobBoard on our server is `b`;
 * sys.argv[2:] are `args`); its stdout goes to out. Fails the test unless
 * it exits 0. */
static void python(char *out, size_t size, fixture *f, const char *body,
                   const char *args) {
  char *path = jbt_path(f->dir, "t.py");
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fprintf(fp,
          "import sys\n"
          "from taskflow.jobs.backends import impl_redis\n"
          "b = impl_redis.RedisJobBoard('tf', {'unix_socket_path': "
          "sys.argv[1], 'namespace': 'taskflow'})\n"
          "b.connect()\n"
          "%s\n"
          "b.close()\n",
          body);
  fclose(fp);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, PY " %s %s %s", path, f->redis.sock, args);
  fp = popen(cmd, "r");
  assert_non_null(fp);
  size_t n = fread(out, 1, size - 1, fp);
  out[n] = '\0';
  int st = pclose(fp);
  free(path);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("python failed (status %d): %s\n%s", st, body, out);
}

/* The last error message is the one fmt and its arguments make. */
static void assert_errmsg(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void assert_errmsg(const char *fmt, ...) {
  char want[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(want, sizeof want, fmt, ap);
  va_end(ap);
  assert_string_equal(jb_errmsg(), want);
}

/* Job u was published under `sequence` and is gone (consumed): resolve_post
 * says so, from the marker; re-sending its posting is JB_OK, again and
 * gone, and lists nothing; NS:sequence stays `counter`. */
static void assert_posted_and_gone(fixture *f, const char *u,
                                   const jbt_buf *posting, uint64_t sequence,
                                   uint64_t counter) {
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_post(&st, &f->rm, u), 1);
  assert_true(st.posted);
  assert_int_equal(st.posted_sequence, sequence);
  assert_false(st.listed);
  assert_false(st.trashed);
  assert_false(st.owned);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, posting->data,
                                   posting->len, NULL), JB_OK);
  assert_true(res.again);
  assert_true(res.gone);
  assert_int_equal(res.sequence, sequence);
  char out[64], want[32];
  const char *hexists[] = {"HEXISTS", "taskflow:listings", u};
  redis_get(out, sizeof out, f, 3, hexists);
  assert_string_equal(out, "0");
  const char *seq[] = {"GET", "taskflow:sequence"};
  redis_get(out, sizeof out, f, 2, seq);
  snprintf(want, sizeof want, "%llu", (unsigned long long)counter);
  assert_string_equal(out, want);
}

/* ------------------------------------------------------------------ post */

/* Posts two local jobs, f->u1 ("first", with details) and f->u2
 * ("second", without), on a counter taskflow posters have taken to 300:
 * they are listed as 301 and 302. */
static void post_two(fixture *f) {
  char out[64];
  local_job(f->u1, &f->p1, f, "first", true);
  local_job(f->u2, &f->p2, f, "second", false);
  const char *incr[] = {"SET", "taskflow:sequence", "300"};
  redis_get(out, sizeof out, f, 3, incr);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, f->u1, f->p1.data,
                                   f->p1.len, NULL), JB_OK);
  assert_int_equal(res.sequence, 301);
  assert_false(res.again);
  assert_int_equal(jb__remote_post(&res, &f->rm, f->u2, f->p2.data,
                                   f->p2.len, NULL), JB_OK);
  assert_int_equal(res.sequence, 302);
}

/* The counter is shared: taskflow posters have taken numbers already, and
 * ours come after theirs (post_two checks the numbers). */
static void our_posts_take_the_next_numbers_of_the_shared_counter(
    void **state) {
  fixture *f = *state;
  post_two(f);
}

/* Byte for byte: our prefix, then the sequence as msgpack (cd 01 2d). */
static void the_listed_posting_is_the_local_one_with_the_sequence_replaced(
    void **state) {
  fixture *f = *state;
  post_two(f);
  redisReply *r = NULL;
  const char *hget[] = {"HGET", "taskflow:listings", f->u1};
  assert_int_equal(jb__sync_command(&r, f->conn, 3, hget, NULL), JB_OK);
  size_t plen;
  assert_int_equal(jb__remote_posting_prefix(&plen, f->p1.data, f->p1.len),
                   JB_OK);
  assert_int_equal(r->len, plen + 3);
  assert_memory_equal(r->str, f->p1.data, plen);
  assert_memory_equal(r->str + plen, "\xcd\x01\x2d", 3);
  freeReplyObject(r);
}

/* Its reply lost, a post is sent again: it finds its own bytes and keeps
 * its number, taking nothing from the counter. */
static void a_resent_post_keeps_its_number_and_takes_none(void **state) {
  fixture *f = *state;
  char out[64];
  post_two(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, f->u1, f->p1.data,
                                   f->p1.len, NULL), JB_OK);
  assert_true(res.again);
  assert_int_equal(res.sequence, 301);
  const char *seq[] = {"GET", "taskflow:sequence"};
  redis_get(out, sizeof out, f, 2, seq);
  assert_string_equal(out, "302");
}

static void another_posting_under_a_listed_uuid_is_refused_as_locally(
    void **state) {
  fixture *f = *state;
  post_two(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, f->u1, f->p2.data,
                                   f->p2.len, NULL), JB_EINVAL);
  assert_errmsg("job %s is already on the board", f->u1);
}

static void taskflow_reads_our_postings_as_posted(void **state) {
  fixture *f = *state;
  char out[4096];
  post_two(f);
  python(out, sizeof out, f,
         "for j in sorted(b.iterjobs(ensure_fresh=True), key=lambda j: j.sequence):\n"
         "    print(j.uuid, j.name, j.sequence, j.priority.name,\n"
         "          j.details.get('store'), j.book_name, j.book_uuid, j.state)",
         "");
  char expect[1024];
  snprintf(expect, sizeof expect,
           "%s first 301 HIGH {'x': 7} my-book "
           "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9 UNCLAIMED\n"
           "%s second 302 HIGH None None None UNCLAIMED\n",
           f->u1, f->u2);
  assert_string_equal(out, expect);
}

/* taskflow claims and consumes our posting; only our marker is left of
 * it then, so re-sending its post finds it published and gone, and does
 * not list it again. */
static void taskflow_consumes_our_posting_and_a_resend_does_not_relist_it(
    void **state) {
  fixture *f = *state;
  char out[256];
  post_two(f);
  python(out, sizeof out, f,
         "j = [j for j in b.iterjobs(ensure_fresh=True) if j.uuid == sys.argv[2]][0]\n"
         "b.claim(j, 'py'); print(b.find_owner(j)); b.consume(j, 'py')\n"
         "print(len(list(b.iterjobs(ensure_fresh=True))))",
         f->u1);
  assert_string_equal(out, "py\n1\n");
  assert_posted_and_gone(f, f->u1, &f->p1, 301, 302);
}

/* A truncated posting or a bad uuid: refused before any I/O. */
static void bad_postings_are_refused(void **state) {
  fixture *f = *state;
  post_two(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, f->u2, f->p2.data,
                                   f->p2.len - 1, NULL), JB_EINVAL);
  assert_int_equal(jb__remote_post(&res, &f->rm, "not-a-uuid", f->p2.data,
                                   f->p2.len, NULL), JB_EINVAL);
}

/* Posts a local job f->u claimed as "host-a:1" under f->id for 60 s, at a
 * time with microseconds: 2024-01-02 03:04:06.123456 UTC. */
static void post_claimed(fixture *f, jb__remote_result *res) {
  jbt_buf p;
  local_job(f->u, &p, f, "claimed", false);
  assert_int_equal(jb__remote_claim_id(f->id), JB_OK);
  jb__remote_owner o = owner("host-a:1", f->id, 60000);
  o.now_us = INT64_C(1704164646123456);
  assert_int_equal(jb__remote_post(res, &f->rm, f->u, p.data, p.len, &o),
                   JB_OK);
  jbt_buf_free(&p);
}

/* A job claimed locally before it was published goes out claimed, with
 * its expiry. */
static void a_job_claimed_before_publication_goes_out_claimed(void **state) {
  fixture *f = *state;
  jb__remote_result res;
  post_claimed(f, &res);
  assert_int_equal(res.sequence, 1);
  assert_true(res.fence >= 1);
  jb__remote_state st;
  assert_int_equal(
      jb__remote_resolve_claim(&st, &f->rm, f->u, "host-a:1", f->id),
      JB__REMOTE_HELD);
  assert_int_equal(st.fence, res.fence);
  assert_true(st.pttl_ms > 59000 && st.pttl_ms <= 60000);
}

/* last_modified byte for byte as the wire document's example (oslo
 * datetime ext 1, 63 bytes). */
static void a_claimed_post_sets_last_modified_as_an_oslo_datetime(
    void **state) {
  fixture *f = *state;
  jb__remote_result res;
  post_claimed(f, &res);
  char lmkey[128];
  snprintf(lmkey, sizeof lmkey, "taskflow:%s.last_modified", f->u);
  const char *get[] = {"GET", lmkey};
  redisReply *r = NULL;
  assert_int_equal(jb__sync_command(&r, f->conn, 2, get, NULL), JB_OK);
  static const char want[] =
      "\xc7\x3c\x01\x87\xa3" "day" "\x02\xa5" "month" "\x01\xa4" "year"
      "\xcd\x07\xe8\xa4" "hour" "\x03\xa6" "minute" "\x04\xa6" "second"
      "\x06\xab" "microsecond" "\xce\x00\x01\xe2\x40";
  assert_int_equal(r->len, sizeof want - 1);
  assert_memory_equal(r->str, want, sizeof want - 1);
  freeReplyObject(r);
}

static void taskflow_sees_the_owner_of_a_job_posted_claimed(void **state) {
  fixture *f = *state;
  char out[256];
  jb__remote_result res;
  post_claimed(f, &res);
  python(out, sizeof out, f,
         "j = list(b.iterjobs(ensure_fresh=True))[0]\n"
         "print(j.state, b.find_owner(j), j.last_modified is not None)",
         "");
  assert_string_equal(out, "CLAIMED host-a:1 True\n");
}

/* ----------------------------------------------------------------- claim */

static void claim_ids_differ(void **state) {
  (void)state;
  char id1[JB_UUID_STRLEN], id2[JB_UUID_STRLEN];
  assert_int_equal(jb__remote_claim_id(id1), JB_OK);
  assert_int_equal(jb__remote_claim_id(id2), JB_OK);
  assert_string_not_equal(id1, id2);
}

/* Publishes a job f->u, unclaimed, and takes two fresh claim ids, f->id
 * and f->idb. */
static void unclaimed_job(fixture *f) {
  published(f->u, f, "job");
  assert_int_equal(jb__remote_claim_id(f->id), JB_OK);
  assert_int_equal(jb__remote_claim_id(f->idb), JB_OK);
}

/* An unclaimed_job claimed as "alice" under f->id with no expiry. Returns
 * the claim's token. */
static uint64_t claimed_by_alice(fixture *f) {
  unclaimed_job(f);
  jb__remote_result res;
  jb__remote_owner a = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &a), JB_OK);
  return res.fence;
}

/* A fresh claim: a token, and no expiry, as taskflow's conductors. */
static void a_claim_gets_a_token_and_no_expiry(void **state) {
  fixture *f = *state;
  char out[256];
  unclaimed_job(f);
  jb__remote_result res;
  jb__remote_owner a = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &a), JB_OK);
  assert_true(res.fence >= 1);
  assert_false(res.again);
  char okey[128];
  snprintf(okey, sizeof okey, "taskflow:%s.owned", f->u);
  const char *pttl[] = {"PTTL", okey};
  redis_get(out, sizeof out, f, 2, pttl);
  assert_string_equal(out, "-1");
}

static void a_claim_of_a_claimed_job_is_refused_naming_the_owner(
    void **state) {
  fixture *f = *state;
  uint64_t fence = claimed_by_alice(f);
  jb__remote_result res;
  jb__remote_owner b = owner("bob", f->idb, 5000);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &b), JB_ECLAIMED);
  assert_errmsg("job %s is already claimed by alice", f->u);
  assert_string_equal(res.owner, "alice");
  assert_string_equal(res.claim, f->id);
  assert_int_equal(res.fence, fence);
}

/* The same claim sent again (its reply lost): ours, same token. */
static void a_resent_claim_is_ours_with_the_same_token(void **state) {
  fixture *f = *state;
  uint64_t fence = claimed_by_alice(f);
  jb__remote_result res;
  jb__remote_owner a = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &a), JB_OK);
  assert_true(res.again);
  assert_int_equal(res.fence, fence);
}

/* The same name under another claim id: taskflow 5.0's re-claim. */
static void a_claim_by_the_owner_under_another_id_is_refused_as_refreshed(
    void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  jb__remote_owner a2 = owner("alice", f->idb, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &a2), JB_ECLAIMED);
  assert_errmsg("job %s is already claimed by alice (the caller itself; its "
                "claim was refreshed)", f->u);
}

static void a_claim_of_an_unlisted_job_is_not_found(void **state) {
  fixture *f = *state;
  char id[JB_UUID_STRLEN];
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_result res;
  jb__remote_owner a = owner("alice", id, 0);
  const char *ghost = "00000000-0000-4000-8000-000000000001";
  assert_int_equal(jb__remote_claim(&res, &f->rm, ghost, &a), JB_ENOTFOUND);
  assert_errmsg("job %s is not on the board", ghost);
}

/* An expiry in ms on the owner key and the claim record; the claim's
 * token is above the one of a claim on an earlier job. */
static void a_claims_expiry_is_set_in_ms_and_tokens_grow_across_jobs(
    void **state) {
  fixture *f = *state;
  uint64_t fence = claimed_by_alice(f);
  char v[JB_UUID_STRLEN];
  published(v, f, "leased");
  jb__remote_result res;
  jb__remote_owner b = owner("bob", f->idb, 5000);
  assert_int_equal(jb__remote_claim(&res, &f->rm, v, &b), JB_OK);
  assert_true(res.fence > fence);
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_claim(&st, &f->rm, v, "bob", f->idb),
                   JB__REMOTE_HELD);
  assert_true(st.pttl_ms > 4000 && st.pttl_ms <= 5000);
}

/* An empty owner or claim id: nothing sent. */
static void a_claim_without_owner_or_claim_id_is_refused(void **state) {
  fixture *f = *state;
  unclaimed_job(f);
  jb__remote_result res;
  jb__remote_owner bad = owner("", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &bad), JB_EINVAL);
  bad = owner("x", "", 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &bad), JB_EINVAL);
}

/* ---------------------------------------------- abandon, consume, trash */

static void abandon_of_an_unclaimed_job_is_not_found_naming_no_owner(
    void **state) {
  fixture *f = *state;
  unclaimed_job(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, f->u,
                                      "alice", f->id), JB_ENOTFOUND);
  assert_errmsg("cannot abandon job %s: it is not claimed (no owner known)",
                f->u);
}

static void release_by_another_owner_is_refused_naming_the_owner(
    void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, f->u,
                                      "bob", ""), JB_ENOTOWNER);
  assert_errmsg("cannot consume job %s: it is claimed by alice, not by bob",
                f->u);
  assert_string_equal(res.owner, "alice");
}

/* The right name with another claim id. */
static void release_under_another_claim_id_is_refused_naming_both_claims(
    void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, f->u,
                                      "alice", f->idb), JB_ENOTOWNER);
  assert_errmsg("cannot trash job %s: claim %s is not the current claim's "
                "(alice holds it with %s)", f->u, f->idb, f->id);
}

static void extend_by_another_owner_is_refused_naming_the_owner(
    void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_extend(&res, &f->rm, f->u, "bob", NULL, 1000),
                   JB_ENOTOWNER);
  assert_errmsg("cannot extend the claim on job %s: it is claimed by alice, "
                "not by bob", f->u);
}

static void extend_by_the_owner_sets_the_expiry_in_ms(void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_extend(&res, &f->rm, f->u, "alice", f->id, 7000),
                   JB_OK);
  jb__remote_state st;
  assert_int_equal(jb__remote_read(&st, &f->rm, f->u), JB_OK);
  assert_true(st.pttl_ms > 6000 && st.pttl_ms <= 7000);
}

static void extend_by_zero_ms_is_refused(void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_extend(&res, &f->rm, f->u, "alice", f->id, 0),
                   JB_EINVAL);
}

/* Listed, unclaimed, claimable again. */
static void abandon_leaves_the_job_listed_and_claimable(void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, f->u,
                                      "alice", f->id), JB_OK);
  jb__remote_state st;
  assert_int_equal(jb__remote_read(&st, &f->rm, f->u), JB_OK);
  assert_true(st.listed);
  assert_false(st.owned);
  assert_string_equal(st.claim, "");
  jb__remote_owner a = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &a), JB_OK);
}

/* Nothing of the job is left, so consuming it again finds no job. */
static void consume_leaves_nothing_of_the_job(void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, f->u,
                                      "alice", f->id), JB_OK);
  jb__remote_state st;
  assert_int_equal(jb__remote_read(&st, &f->rm, f->u), JB_OK);
  assert_false(st.listed || st.trashed || st.owned);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, f->u,
                                      "alice", f->id), JB_ENOTFOUND);
  assert_errmsg("job %s is not on the board", f->u);
}

/* Publishes a job, claims it as "alice" and trashes it; its listed
 * posting goes to `posting`. */
static void trashed_job(fixture *f, char v[JB_UUID_STRLEN], char *posting,
                        size_t size) {
  char id[JB_UUID_STRLEN];
  published(v, f, "bad");
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  const char *hget[] = {"HGET", "taskflow:listings", v};
  redis_get(posting, size, f, 3, hget);
  jb__remote_result res;
  jb__remote_owner a = owner("alice", id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, v, &a), JB_OK);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, v,
                                      "alice", id), JB_OK);
}

static void trash_keeps_the_posting_verbatim_in_ns_trash(void **state) {
  fixture *f = *state;
  char v[JB_UUID_STRLEN], posting[1024], trashed[1024];
  trashed_job(f, v, posting, sizeof posting);
  const char *hget[] = {"HGET", "taskflow:trash", v};
  redis_get(trashed, sizeof trashed, f, 3, hget);
  assert_string_equal(trashed, posting);
}

static void taskflow_sees_a_trashed_job_gone(void **state) {
  fixture *f = *state;
  char v[JB_UUID_STRLEN], posting[1024], out[256];
  trashed_job(f, v, posting, sizeof posting);
  python(out, sizeof out, f, "print(len(list(b.iterjobs(ensure_fresh=True))))",
         "");
  assert_string_equal(out, "0\n");
}

/* ------------------------------------------------------ taskflow's jobs */

/* One scenario: taskflow posts; we claim (taskflow sees our owner and
 * refuses its own claim), consume, and taskflow sees the job gone. */
static void taskflow_sees_us_claim_and_consume_its_job(void **state) {
  fixture *f = *state;
  char out[256], u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  python(out, sizeof out, f, "print(b.post('tf-job').uuid)", "");
  assert_int_equal(strlen(out), 37);
  memcpy(u, out, 36);
  u[36] = '\0';
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner o = owner("host-b:42", id, 30000);
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &o), JB_OK);
  python(out, sizeof out, f,
         "from taskflow import exceptions as e\n"
         "j = list(b.iterjobs(ensure_fresh=True))[0]\n"
         "print(j.state, b.find_owner(j), 0 < j.expires_in() <= 30)\n"
         "try:\n    b.claim(j, 'py')\nexcept e.UnclaimableJob:\n"
         "    print('unclaimable')",
         "");
  assert_string_equal(out, "CLAIMED host-b:42 True\nunclaimable\n");
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "host-b:42", id), JB_OK);
  python(out, sizeof out, f, "print(len(list(b.iterjobs(ensure_fresh=True))))",
         "");
  assert_string_equal(out, "0\n");
}
/* ---------------------------------------------------------------- racing */

#define RACE_JOBS 200
#define RACERS 4

typedef struct {
  const char *url;
  char (*uuids)[JB_UUID_STRLEN];
  int me;
  int out_fd; /* one byte per job: 1 won, 0 lost */
} racer;

/* A child: its own connection, claims every job in its own order. */
static int race(void *arg) {
  racer *r = arg;
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = r->url;
  jb_sync_conn *c = NULL;
  jb__remote rm;
  if (jb_sync_connect(&c, &o) || jb__remote_init(&rm, c, true)) return 2;
  char who[24], id[JB_UUID_STRLEN];
  snprintf(who, sizeof who, "racer-%d", r->me);
  char won[RACE_JOBS];
  for (int k = 0; k < RACE_JOBS; k++) {
    /* Each racer its own order (multipliers prime to RACE_JOBS), so that
     * they meet on every job from different directions. */
    static const int mult[RACERS] = {1, 3, 7, 11};
    int i = (k * mult[r->me] + r->me * 37) % RACE_JOBS;
    if (jb__remote_claim_id(id)) return 3;
    jb__remote_owner ow = {who, 0, id, 0};
    jb__remote_result res;
    int rc = jb__remote_claim(&res, &rm, r->uuids[i], &ow);
    if (rc == JB_OK)
      won[i] = 1;
    else if (rc == JB_ECLAIMED && strcmp(res.owner, who) != 0)
      won[i] = 0;
    else {
      fprintf(stderr, "%s: claim %s: %s\n", who, r->uuids[i], jb_errmsg());
      return 4;
    }
  }
  jb_sync_close(c);
  return write(r->out_fd, won, sizeof won) == (ssize_t)sizeof won ? 0 : 5;
}


/* Several processes claim the same jobs at once: each job gets exactly one
 * owner, the one Redis's owner key names. */
static void racing_claimers_give_each_job_the_one_owner_redis_names(
    void **state) {
  fixture *f = *state;
  char (*uuids)[JB_UUID_STRLEN] = calloc(RACE_JOBS, JB_UUID_STRLEN);
  assert_non_null(uuids);
  for (int i = 0; i < RACE_JOBS; i++) published(uuids[i], f, "race");
  racer rs[RACERS];
  int fds[RACERS][2];
  pid_t pids[RACERS];
  for (int i = 0; i < RACERS; i++) {
    assert_int_equal(pipe(fds[i]), 0);
    rs[i] = (racer){f->redis.unix_url, uuids, i, fds[i][1]};
    pids[i] = jbt_fork(race, &rs[i], 60);
    close(fds[i][1]);
  }
  char won[RACERS][RACE_JOBS];
  for (int i = 0; i < RACERS; i++) {
    size_t got = 0;
    while (got < RACE_JOBS) {
      ssize_t n = read(fds[i][0], won[i] + got, RACE_JOBS - got);
      if (n <= 0) break;
      got += (size_t)n;
    }
    close(fds[i][0]);
    jbt_wait_ok(pids[i], 60000);
    assert_int_equal(got, RACE_JOBS);
  }
  int per[RACERS] = {0};
  for (int j = 0; j < RACE_JOBS; j++) {
    int owners = 0, who = -1;
    for (int i = 0; i < RACERS; i++)
      if (won[i][j]) owners++, who = i;
    if (owners != 1) fail_msg("job %d has %d owners", j, owners);
    per[who]++;
    jb__remote_state st;
    assert_int_equal(jb__remote_read(&st, &f->rm, uuids[j]), JB_OK);
    char name[24];
    snprintf(name, sizeof name, "racer-%d", who);
    assert_string_equal(st.owner, name);
  }
  print_message("claims won: %d %d %d %d\n", per[0], per[1], per[2], per[3]);
  free(uuids);
}

/* ----------------------------------------------------------- lost replies */

/* The server stops (SIGSTOP) after our script was sent: the call fails
 * offline after the command timeout, unsure; the server runs the script
 * when it continues (SIGCONT). Reading Redis then tells the truth. A call
 * made while the connection is down fails offline without being unsure (it
 * was never sent). */

/* What claim_lost saw: the claim's outcome and message, and the second
 * claim's. */
typedef struct {
  int rc, rc2;
  jb__remote_result res, res2;
  char msg[1024];
} lost_claim;

/* Publishes f->u and claims it as "alice" under f->id while the server is
 * stopped; when `second` is set and the claim failed offline, "bob" claims
 * it under f->idb before the server continues. */
static void claim_lost(lost_claim *l, fixture *f, bool second) {
  unclaimed_job(f);
  jb__remote_owner o = owner("alice", f->id, 0);
  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  l->rc = jb__remote_claim(&l->res, &f->rm, f->u, &o);
  snprintf(l->msg, sizeof l->msg, "%s", jb_errmsg());
  l->rc2 = JB_OK;
  jb__remote_owner ob = owner("bob", f->idb, 0);
  if (second && l->rc == JB_EOFFLINE) /* still stopped: cannot be sent */
    l->rc2 = jb__remote_claim(&l->res2, &f->rm, f->u, &ob);
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
}

static void a_claim_whose_reply_is_lost_fails_offline_unsure(void **state) {
  fixture *f = *state;
  lost_claim l;
  claim_lost(&l, f, false);
  assert_int_equal(l.rc, JB_EOFFLINE);
  assert_true(l.res.unsure);
  jbt_assert_contains(l.msg, "cannot claim job");
  jbt_assert_contains(l.msg, "backend unavailable");
  jbt_assert_contains(l.msg, "timed out after 500 ms");
}

static void a_call_after_a_lost_reply_fails_offline_as_never_sent(
    void **state) {
  fixture *f = *state;
  lost_claim l;
  claim_lost(&l, f, true);
  assert_int_equal(l.rc, JB_EOFFLINE);
  assert_int_equal(l.rc2, JB_EOFFLINE);
  assert_false(l.res2.unsure);
}

/* The script ran after all: resolved as ours, never guessed; the same name
 * under another claim id is not this claim, and another claimer reads the
 * truth too; re-sending the claim would also have told: the same claim,
 * again. */
static void a_lost_claim_that_ran_resolves_as_this_claim_only(void **state) {
  fixture *f = *state;
  lost_claim l;
  claim_lost(&l, f, false);
  jb__remote_state st;
  assert_int_equal(
      jb__remote_resolve_claim(&st, &f->rm, f->u, "alice", f->id),
      JB__REMOTE_HELD);
  assert_true(st.fence >= 1);
  assert_int_equal(
      jb__remote_resolve_claim(NULL, &f->rm, f->u, "alice", f->idb),
      JB__REMOTE_OTHER);
  assert_int_equal(
      jb__remote_resolve_claim(NULL, &f->rm, f->u, "bob", f->idb),
      JB__REMOTE_OTHER);
  jb__remote_result res;
  jb__remote_owner o = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &o), JB_OK);
  assert_true(res.again);
  assert_int_equal(res.fence, st.fence);
}

/* A consume whose reply is lost the same way: resolved as done. */
static void a_lost_consume_that_ran_resolves_as_done(void **state) {
  fixture *f = *state;
  claimed_by_alice(f);
  jb__remote_result res;
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_release(NULL, &f->rm,
                                              JB__REMOTE_CONSUME, f->u,
                                              "alice", f->id), 0);
  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, f->u,
                              "alice", f->id);
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_true(res.unsure);
  assert_int_equal(jb__remote_resolve_release(&st, &f->rm,
                                              JB__REMOTE_CONSUME, f->u,
                                              "alice", f->id), 1);
  assert_false(st.listed);
  assert_int_equal(
      jb__remote_resolve_claim(NULL, &f->rm, f->u, "alice", f->id),
      JB__REMOTE_NOBODY);
}

/* A claim that never ran (the job is unclaimed): nobody holds it. */
static void a_claim_that_never_ran_resolves_as_nobodys(void **state) {
  fixture *f = *state;
  unclaimed_job(f);
  jb__remote_state st;
  assert_int_equal(
      jb__remote_resolve_claim(&st, &f->rm, f->u, "alice", f->id),
      JB__REMOTE_NOBODY);
  assert_true(st.listed);
}

/* Posts a local job while the server is stopped past the command timeout:
 * the reply is lost. The post's message goes to msg. */
static void post_lost(fixture *f, char u[JB_UUID_STRLEN], jbt_buf *p,
                      char msg[1024]) {
  local_job(u, p, f, "lost", true);
  jb__remote_result res;
  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb__remote_post(&res, &f->rm, u, p->data, p->len, NULL);
  snprintf(msg, 1024, "%s", jb_errmsg());
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_true(res.unsure);
}

static void a_post_whose_reply_is_lost_fails_offline_naming_the_timeout(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], msg[1024];
  jbt_buf p;
  post_lost(f, u, &p, msg);
  jbt_assert_contains(msg, "cannot post job");
  jbt_assert_contains(msg, "timed out after 500 ms");
  jbt_buf_free(&p);
}

/* Another host claims and consumes job u before we look. */
static void consumed_elsewhere(fixture *f, const char *u) {
  char id[JB_UUID_STRLEN];
  jb_sync_conn *other = jbt_redis_connect(f->redis.unix_url, 2000);
  jb__remote rm2;
  assert_int_equal(jb__remote_init(&rm2, other, false), JB_OK);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner o = owner("host-b:1", id, 0);
  jb__remote_result res2;
  assert_int_equal(jb__remote_claim(&res2, &rm2, u, &o), JB_OK);
  assert_int_equal(jb__remote_release(&res2, &rm2, JB__REMOTE_CONSUME, u,
                                      "host-b:1", id), JB_OK);
  jb_sync_close(other);
}

/* A lost post, then claimed and consumed by another host before we look:
 * nothing of the job is listed, owned or trashed; the marker NS:U.posted
 * says that it ran and under which number; re-sent anyway, the post is
 * refused as published and gone, and taskflow sees no job (listing it
 * again would run it twice). */
static void a_lost_post_consumed_elsewhere_is_not_listed_again(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], msg[1024], out[256];
  jbt_buf p;
  post_lost(f, u, &p, msg);
  consumed_elsewhere(f, u);
  assert_posted_and_gone(f, u, &p, 1, 1);
  python(out, sizeof out, f,
         "print(len(list(b.iterjobs(ensure_fresh=True))))", "");
  assert_string_equal(out, "0\n");
  jbt_buf_free(&p);
}

/* The marker outlives the job, for JB__REMOTE_POSTED_TTL_MS. */
static void the_posted_marker_lasts_its_ttl(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], out[256];
  published(u, f, "job");
  consumed_elsewhere(f, u);
  char marker[128];
  snprintf(marker, sizeof marker, "taskflow:%s.posted", u);
  const char *pttl[] = {"PTTL", marker};
  redis_get(out, sizeof out, f, 2, pttl);
  long long ms = atoll(out);
  assert_true(ms > JB__REMOTE_POSTED_TTL_MS - 60000 &&
              ms <= JB__REMOTE_POSTED_TTL_MS);
}

/* A post that never ran: no marker; sending it now posts it, under the
 * next number (here 2: another job took 1). */
static void a_post_that_never_ran_has_no_marker_and_posts_when_sent(
    void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN];
  jbt_buf pv;
  published(u, f, "first");
  local_job(v, &pv, f, "never-sent", false);
  jb__remote_result res;
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_post(&st, &f->rm, v), 0);
  assert_false(st.posted);
  assert_false(st.listed);
  assert_int_equal(jb__remote_post(&res, &f->rm, v, pv.data, pv.len, NULL),
                   JB_OK);
  assert_false(res.again);
  assert_false(res.gone);
  assert_int_equal(res.sequence, 2);
  assert_int_equal(jb__remote_resolve_post(&st, &f->rm, v), 1);
  assert_int_equal(st.posted_sequence, 2);
  assert_true(st.listed);
  jbt_buf_free(&pv);
}

/* Change notices: with notices on, a claim PUBLISHes on NS:notices. */
static void a_claim_publishes_a_notice_when_notices_are_on(void **state) {
  fixture *f = *state;
  jb__remote rm;
  assert_int_equal(jb__remote_init(&rm, f->conn, true), JB_OK);
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  published(u, f, "job");
  jb_sync_conn *sub = jbt_redis_connect(f->redis.unix_url, 2000);
  redisReply *r = NULL;
  const char *subscribe[] = {"SUBSCRIBE", "taskflow:notices"};
  assert_int_equal(jb__sync_command(&r, sub, 2, subscribe, NULL), JB_OK);
  freeReplyObject(r);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner o = owner("alice", id, 0);
  jb__remote_result res;
  assert_int_equal(jb__remote_claim(&res, &rm, u, &o), JB_OK);
  /* The next message pushed to the subscriber: PING is answered only after
   * it, in a subscribed connection. */
  const char *ping[] = {"PING"};
  assert_int_equal(jb__sync_command(&r, sub, 1, ping, NULL), JB_OK);
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  char want[128];
  snprintf(want, sizeof want, "claim %s %llu", u,
           (unsigned long long)res.fence);
  assert_string_equal(r->element[2]->str, want);
  freeReplyObject(r);
  jb_sync_close(sub);
}

/* An unreachable server: every operation fails offline. The open
 * connection meets a dead server: unsure (the call may have been sent);
 * after that the reconnect is refused: sure it was not. */

/* Publishes f->u, kills the server and claims f->u as "alice" under
 * f->id. */
static void claim_on_a_dead_server(fixture *f, jb__remote_result *res) {
  unclaimed_job(f);
  jbt_redis_kill(&f->redis);
  jb__remote_owner o = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(res, &f->rm, f->u, &o), JB_EOFFLINE);
}

static void the_first_call_after_the_server_died_is_offline_unsure(
    void **state) {
  fixture *f = *state;
  jb__remote_result res;
  claim_on_a_dead_server(f, &res);
  assert_true(res.unsure);
}

static void a_refused_reconnect_is_offline_and_not_unsure(void **state) {
  fixture *f = *state;
  jb__remote_result res;
  claim_on_a_dead_server(f, &res);
  jb__remote_owner o = owner("alice", f->id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, f->u, &o), JB_EOFFLINE);
  assert_false(res.unsure);
  jbt_assert_contains(jb_errmsg(), "backend unavailable");
}

static void release_and_resolve_fail_offline_on_a_dead_server(
    void **state) {
  fixture *f = *state;
  jb__remote_result res;
  claim_on_a_dead_server(f, &res);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, f->u,
                                      "alice", f->id), JB_EOFFLINE);
  assert_int_equal(jb__remote_resolve_claim(NULL, &f->rm, f->u, "alice", f->id),
                   JB_EOFFLINE);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(our_posts_take_the_next_numbers_of_the_shared_counter),
      T(the_listed_posting_is_the_local_one_with_the_sequence_replaced),
      T(a_resent_post_keeps_its_number_and_takes_none),
      T(another_posting_under_a_listed_uuid_is_refused_as_locally),
      T(taskflow_reads_our_postings_as_posted),
      T(taskflow_consumes_our_posting_and_a_resend_does_not_relist_it),
      T(bad_postings_are_refused),
      T(a_job_claimed_before_publication_goes_out_claimed),
      T(a_claimed_post_sets_last_modified_as_an_oslo_datetime),
      T(taskflow_sees_the_owner_of_a_job_posted_claimed),
      cmocka_unit_test(claim_ids_differ),
      T(a_claim_gets_a_token_and_no_expiry),
      T(a_claim_of_a_claimed_job_is_refused_naming_the_owner),
      T(a_resent_claim_is_ours_with_the_same_token),
      T(a_claim_by_the_owner_under_another_id_is_refused_as_refreshed),
      T(a_claim_of_an_unlisted_job_is_not_found),
      T(a_claims_expiry_is_set_in_ms_and_tokens_grow_across_jobs),
      T(a_claim_without_owner_or_claim_id_is_refused),
      T(abandon_of_an_unclaimed_job_is_not_found_naming_no_owner),
      T(release_by_another_owner_is_refused_naming_the_owner),
      T(release_under_another_claim_id_is_refused_naming_both_claims),
      T(extend_by_another_owner_is_refused_naming_the_owner),
      T(extend_by_the_owner_sets_the_expiry_in_ms),
      T(extend_by_zero_ms_is_refused),
      T(abandon_leaves_the_job_listed_and_claimable),
      T(consume_leaves_nothing_of_the_job),
      T(trash_keeps_the_posting_verbatim_in_ns_trash),
      T(taskflow_sees_a_trashed_job_gone),
      T(taskflow_sees_us_claim_and_consume_its_job),
      T(racing_claimers_give_each_job_the_one_owner_redis_names),
      T(a_claim_whose_reply_is_lost_fails_offline_unsure),
      T(a_call_after_a_lost_reply_fails_offline_as_never_sent),
      T(a_lost_claim_that_ran_resolves_as_this_claim_only),
      T(a_lost_consume_that_ran_resolves_as_done),
      T(a_claim_that_never_ran_resolves_as_nobodys),
      T(a_post_whose_reply_is_lost_fails_offline_naming_the_timeout),
      T(a_lost_post_consumed_elsewhere_is_not_listed_again),
      T(the_posted_marker_lasts_its_ttl),
      T(a_post_that_never_ran_has_no_marker_and_posts_when_sent),
      T(a_claim_publishes_a_notice_when_notices_are_on),
      T(the_first_call_after_the_server_died_is_offline_unsure),
      T(a_refused_reconnect_is_offline_and_not_unsure),
      T(release_and_resolve_fail_offline_on_a_dead_server),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
