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

/* Our post lists the local posting with the shared counter's number: the
 * bytes in Redis are the local ones with the sequence replaced, and
 * taskflow lists, reads and consumes the job unchanged. A re-sent post
 * (its reply lost) finds its own bytes, and once taskflow consumed the
 * job, its marker; another posting under a listed uuid is refused. */
static void test_post(void **state) {
  fixture *f = *state;
  char u1[JB_UUID_STRLEN], u2[JB_UUID_STRLEN], out[4096];
  jbt_buf p1, p2;
  local_job(u1, &p1, f, "first", true);
  local_job(u2, &p2, f, "second", false);
  /* The counter is shared: taskflow posters have taken numbers already. */
  const char *incr[] = {"SET", "taskflow:sequence", "300"};
  redis_get(out, sizeof out, f, 3, incr);

  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u1, p1.data, p1.len, NULL),
                   JB_OK);
  assert_int_equal(res.sequence, 301);
  assert_false(res.again);
  assert_int_equal(jb__remote_post(&res, &f->rm, u2, p2.data, p2.len, NULL),
                   JB_OK);
  assert_int_equal(res.sequence, 302);

  /* Byte for byte: our prefix, then the sequence as msgpack (cd 01 2d). */
  redisReply *r = NULL;
  const char *hget[] = {"HGET", "taskflow:listings", u1};
  assert_int_equal(jb__sync_command(&r, f->conn, 3, hget, NULL), JB_OK);
  size_t plen;
  assert_int_equal(jb__remote_posting_prefix(&plen, p1.data, p1.len), JB_OK);
  assert_int_equal(r->len, plen + 3);
  assert_memory_equal(r->str, p1.data, plen);
  assert_memory_equal(r->str + plen, "\xcd\x01\x2d", 3);
  freeReplyObject(r);

  /* Re-sent: the same number, nothing taken from the counter. */
  assert_int_equal(jb__remote_post(&res, &f->rm, u1, p1.data, p1.len, NULL),
                   JB_OK);
  assert_true(res.again);
  assert_int_equal(res.sequence, 301);
  const char *seq[] = {"GET", "taskflow:sequence"};
  redis_get(out, sizeof out, f, 2, seq);
  assert_string_equal(out, "302");
  /* Another posting under u1's uuid: refused as the local board does. */
  assert_int_equal(jb__remote_post(&res, &f->rm, u1, p2.data, p2.len, NULL),
                   JB_EINVAL);
  char want[128];
  snprintf(want, sizeof want, "job %s is already on the board", u1);
  assert_string_equal(jb_errmsg(), want);

  /* taskflow reads both as posted. */
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
           u1, u2);
  assert_string_equal(out, expect);
  /* ... and claims and consumes it. */
  python(out, sizeof out, f,
         "j = [j for j in b.iterjobs(ensure_fresh=True) if j.uuid == sys.argv[2]][0]\n"
         "b.claim(j, 'py'); print(b.find_owner(j)); b.consume(j, 'py')\n"
         "print(len(list(b.iterjobs(ensure_fresh=True))))",
         u1);
  assert_string_equal(out, "py\n1\n");
  /* Consumed by taskflow: only our marker is left of u1, so re-sending its
   * post finds it published and gone, and does not list it again. */
  assert_posted_and_gone(f, u1, &p1, 301, 302);

  /* Bad postings are refused before any I/O. */
  assert_int_equal(jb__remote_post(&res, &f->rm, u2, p2.data, p2.len - 1,
                                   NULL), JB_EINVAL);
  assert_int_equal(jb__remote_post(&res, &f->rm, "not-a-uuid", p2.data,
                                   p2.len, NULL), JB_EINVAL);
  jbt_buf_free(&p1);
  jbt_buf_free(&p2);
}

/* A job claimed locally before it was published goes out claimed, with
 * its expiry; taskflow sees the owner. */
static void test_post_claimed(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], out[256];
  jbt_buf p;
  local_job(u, &p, f, "claimed", false);
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jb__remote_owner o = owner("host-a:1", id, 60000);
  /* A time with microseconds: 2024-01-02 03:04:06.123456 UTC. */
  o.now_us = INT64_C(1704164646123456);
  jb__remote_result res;
  assert_int_equal(jb__remote_post(&res, &f->rm, u, p.data, p.len, &o),
                   JB_OK);
  /* last_modified byte for byte as the wire document's example (oslo
   * datetime ext 1, 63 bytes). */
  char lmkey[128];
  snprintf(lmkey, sizeof lmkey, "taskflow:%s.last_modified", u);
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
  assert_int_equal(res.sequence, 1);
  assert_true(res.fence >= 1);
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_claim(&st, &f->rm, u, "host-a:1", id),
                   JB__REMOTE_HELD);
  assert_int_equal(st.fence, res.fence);
  assert_true(st.pttl_ms > 59000 && st.pttl_ms <= 60000);
  python(out, sizeof out, f,
         "j = list(b.iterjobs(ensure_fresh=True))[0]\n"
         "print(j.state, b.find_owner(j), j.last_modified is not None)",
         "");
  assert_string_equal(out, "CLAIMED host-a:1 True\n");
  jbt_buf_free(&p);
}

/* ----------------------------------------------------------------- claim */

static void test_claim(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id1[JB_UUID_STRLEN], id2[JB_UUID_STRLEN];
  char want[256], out[256];
  published(u, f, "job");
  assert_int_equal(jb__remote_claim_id(id1), JB_OK);
  assert_int_equal(jb__remote_claim_id(id2), JB_OK);
  assert_string_not_equal(id1, id2);

  jb__remote_result res;
  jb__remote_owner a = owner("alice", id1, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &a), JB_OK);
  uint64_t fence = res.fence;
  assert_true(fence >= 1);
  assert_false(res.again);
  const char *pttl[] = {"PTTL", "taskflow:x.owned"};
  char okey[128];
  snprintf(okey, sizeof okey, "taskflow:%s.owned", u);
  pttl[1] = okey;
  redis_get(out, sizeof out, f, 2, pttl);
  assert_string_equal(out, "-1"); /* no expiry, as taskflow's conductors */

  /* Someone else: already claimed, naming the owner as the local board. */
  jb__remote_owner b = owner("bob", id2, 5000);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &b), JB_ECLAIMED);
  snprintf(want, sizeof want, "job %s is already claimed by alice", u);
  assert_string_equal(jb_errmsg(), want);
  assert_string_equal(res.owner, "alice");
  assert_string_equal(res.claim, id1);
  assert_int_equal(res.fence, fence);

  /* The same claim sent again (its reply lost): ours, same token. */
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &a), JB_OK);
  assert_true(res.again);
  assert_int_equal(res.fence, fence);

  /* The same name under another claim id: taskflow 5.0's re-claim. */
  jb__remote_owner a2 = owner("alice", id2, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &a2), JB_ECLAIMED);
  snprintf(want, sizeof want, "job %s is already claimed by alice (the "
           "caller itself; its claim was refreshed)", u);
  assert_string_equal(jb_errmsg(), want);

  /* Not listed. */
  const char *ghost = "00000000-0000-4000-8000-000000000001";
  assert_int_equal(jb__remote_claim(&res, &f->rm, ghost, &a), JB_ENOTFOUND);
  snprintf(want, sizeof want, "job %s is not on the board", ghost);
  assert_string_equal(jb_errmsg(), want);

  /* An expiry in ms on the owner key and the claim record. */
  char v[JB_UUID_STRLEN];
  published(v, f, "leased");
  assert_int_equal(jb__remote_claim(&res, &f->rm, v, &b), JB_OK);
  assert_true(res.fence > fence); /* tokens grow across jobs */
  jb__remote_state st;
  assert_int_equal(jb__remote_resolve_claim(&st, &f->rm, v, "bob", id2),
                   JB__REMOTE_HELD);
  assert_true(st.pttl_ms > 4000 && st.pttl_ms <= 5000);

  /* Bad arguments: nothing sent. */
  jb__remote_owner bad = owner("", id1, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bad), JB_EINVAL);
  bad = owner("x", "", 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &bad), JB_EINVAL);
}

/* ---------------------------------------------- abandon, consume, trash */

static void test_release(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], other[JB_UUID_STRLEN];
  char want[512], out[256];
  published(u, f, "job");
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  assert_int_equal(jb__remote_claim_id(other), JB_OK);
  jb__remote_result res;

  /* Not claimed yet. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, u,
                                      "alice", id), JB_ENOTFOUND);
  snprintf(want, sizeof want, "cannot abandon job %s: it is not claimed (no "
           "owner known)", u);
  assert_string_equal(jb_errmsg(), want);

  jb__remote_owner a = owner("alice", id, 0);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &a), JB_OK);

  /* Someone else, the right name with another claim id. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "bob", ""), JB_ENOTOWNER);
  snprintf(want, sizeof want, "cannot consume job %s: it is claimed by "
           "alice, not by bob", u);
  assert_string_equal(jb_errmsg(), want);
  assert_string_equal(res.owner, "alice");
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, u,
                                      "alice", other), JB_ENOTOWNER);
  snprintf(want, sizeof want, "cannot trash job %s: claim %s is not the "
           "current claim's (alice holds it with %s)", u, other, id);
  assert_string_equal(jb_errmsg(), want);

  /* Extend: ours only, and it sets the expiry. */
  assert_int_equal(jb__remote_extend(&res, &f->rm, u, "bob", NULL, 1000),
                   JB_ENOTOWNER);
  snprintf(want, sizeof want, "cannot extend the claim on job %s: it is "
           "claimed by alice, not by bob", u);
  assert_string_equal(jb_errmsg(), want);
  assert_int_equal(jb__remote_extend(&res, &f->rm, u, "alice", id, 7000),
                   JB_OK);
  jb__remote_state st;
  assert_int_equal(jb__remote_read(&st, &f->rm, u), JB_OK);
  assert_true(st.pttl_ms > 6000 && st.pttl_ms <= 7000);
  assert_int_equal(jb__remote_extend(&res, &f->rm, u, "alice", id, 0),
                   JB_EINVAL);

  /* Abandon: listed, unclaimed, claimable again. */
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_ABANDON, u,
                                      "alice", id), JB_OK);
  assert_int_equal(jb__remote_read(&st, &f->rm, u), JB_OK);
  assert_true(st.listed);
  assert_false(st.owned);
  assert_string_equal(st.claim, "");

  /* Consume: nothing of the job left. */
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &a), JB_OK);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "alice", id), JB_OK);
  assert_int_equal(jb__remote_read(&st, &f->rm, u), JB_OK);
  assert_false(st.listed || st.trashed || st.owned);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u,
                                      "alice", id), JB_ENOTFOUND);
  snprintf(want, sizeof want, "job %s is not on the board", u);
  assert_string_equal(jb_errmsg(), want);

  /* Trash: in NS:trash with the posting verbatim; taskflow sees it gone. */
  char v[JB_UUID_STRLEN];
  published(v, f, "bad");
  const char *hget[] = {"HGET", "taskflow:listings", v};
  char posting[1024], trashed[1024];
  redis_get(posting, sizeof posting, f, 3, hget);
  assert_int_equal(jb__remote_claim(&res, &f->rm, v, &a), JB_OK);
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, v,
                                      "alice", id), JB_OK);
  hget[1] = "taskflow:trash";
  redis_get(trashed, sizeof trashed, f, 3, hget);
  assert_string_equal(trashed, posting);
  python(out, sizeof out, f, "print(len(list(b.iterjobs(ensure_fresh=True))))",
         "");
  assert_string_equal(out, "0\n");
}

/* ------------------------------------------------------ taskflow's jobs */

/* taskflow posts; we claim (taskflow sees our owner and refuses its own
 * claim), consume, and taskflow sees the job gone. */
static void test_taskflow_job(void **state) {
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
static void test_racing_claimers(void **state) {
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
 * when it continues (SIGCONT). Reading Redis then tells the truth: the
 * claim is ours; the consume happened. A call made while the connection is
 * down fails offline without being unsure (it was never sent). */
static void test_lost_reply(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN], idb[JB_UUID_STRLEN];
  published(u, f, "job");
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  assert_int_equal(jb__remote_claim_id(idb), JB_OK);
  jb__remote_owner o = owner("alice", id, 0);
  jb__remote_result res;
  jb__remote_state st;

  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb__remote_claim(&res, &f->rm, u, &o);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  int rc2 = JB_OK;
  jb__remote_result res2;
  jb__remote_owner ob = owner("bob", idb, 0);
  if (rc == JB_EOFFLINE) /* still stopped: this one cannot be sent */
    rc2 = jb__remote_claim(&res2, &f->rm, u, &ob);
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_true(res.unsure);
  jbt_assert_contains(msg, "cannot claim job");
  jbt_assert_contains(msg, "backend unavailable");
  jbt_assert_contains(msg, "timed out after 500 ms");
  assert_int_equal(rc2, JB_EOFFLINE);
  assert_false(res2.unsure);

  /* The script ran after all: resolved as ours, never guessed. */
  assert_int_equal(jb__remote_resolve_claim(&st, &f->rm, u, "alice", id),
                   JB__REMOTE_HELD);
  assert_true(st.fence >= 1);
  /* The same name under another claim id is not this claim. */
  assert_int_equal(jb__remote_resolve_claim(NULL, &f->rm, u, "alice", idb),
                   JB__REMOTE_OTHER);
  /* Another claimer reads the truth too. */
  assert_int_equal(jb__remote_resolve_claim(NULL, &f->rm, u, "bob", idb),
                   JB__REMOTE_OTHER);
  /* Re-sending the claim would also have told: the same claim, again. */
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &o), JB_OK);
  assert_true(res.again);
  assert_int_equal(res.fence, st.fence);

  /* A consume whose reply is lost the same way. */
  assert_int_equal(jb__remote_resolve_release(NULL, &f->rm,
                                              JB__REMOTE_CONSUME, u, "alice",
                                              id), 0);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  rc = jb__remote_release(&res, &f->rm, JB__REMOTE_CONSUME, u, "alice", id);
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_true(res.unsure);
  assert_int_equal(jb__remote_resolve_release(&st, &f->rm,
                                              JB__REMOTE_CONSUME, u, "alice",
                                              id), 1);
  assert_false(st.listed);
  assert_int_equal(jb__remote_resolve_claim(NULL, &f->rm, u, "alice", id),
                   JB__REMOTE_NOBODY);

  /* A claim that never ran (the job is unclaimed): nobody holds it. */
  char v[JB_UUID_STRLEN];
  published(v, f, "untouched");
  assert_int_equal(jb__remote_resolve_claim(&st, &f->rm, v, "alice", id),
                   JB__REMOTE_NOBODY);
  assert_true(st.listed);
}

/* A post whose reply is lost (the server stopped past the command
 * timeout), then claimed and consumed by another host before we look: the
 * marker NS:U.posted tells that it ran and under which number, and a
 * re-send does not list the job again (it would run twice). */
static void test_lost_post(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], v[JB_UUID_STRLEN], id[JB_UUID_STRLEN], out[256];
  jbt_buf p, pv;
  local_job(u, &p, f, "lost", true);
  local_job(v, &pv, f, "never-sent", false);
  jb__remote_result res;
  jb__remote_state st;

  assert_int_equal(jb_sync_ping(f->conn), JB_OK);
  assert_int_equal(kill(f->redis.pid, SIGSTOP), 0);
  int rc = jb__remote_post(&res, &f->rm, u, p.data, p.len, NULL);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  assert_int_equal(kill(f->redis.pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_true(res.unsure);
  jbt_assert_contains(msg, "cannot post job");
  jbt_assert_contains(msg, "timed out after 500 ms");

  /* Another host claims and consumes the job before we resolve. */
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

  /* Nothing of the job is listed, owned or trashed; the marker says it was
   * published, and under which number; re-sent anyway, the post is refused
   * as published and gone. */
  assert_posted_and_gone(f, u, &p, 1, 1);
  char marker[128];
  snprintf(marker, sizeof marker, "taskflow:%s.posted", u);
  const char *pttl[] = {"PTTL", marker};
  redis_get(out, sizeof out, f, 2, pttl);
  long long ms = atoll(out);
  assert_true(ms > JB__REMOTE_POSTED_TTL_MS - 60000 &&
              ms <= JB__REMOTE_POSTED_TTL_MS);
  /* taskflow sees no job. */
  python(out, sizeof out, f,
         "print(len(list(b.iterjobs(ensure_fresh=True))))", "");
  assert_string_equal(out, "0\n");

  /* A post that never ran: no marker; sending it now posts it. */
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
  jbt_buf_free(&p);
  jbt_buf_free(&pv);
}

/* Change notices: with notices on, a claim PUBLISHes on NS:notices. */
static void test_notices(void **state) {
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

/* An unreachable server: every operation fails offline, not unsure. */
static void test_offline(void **state) {
  fixture *f = *state;
  char u[JB_UUID_STRLEN], id[JB_UUID_STRLEN];
  published(u, f, "job");
  assert_int_equal(jb__remote_claim_id(id), JB_OK);
  jbt_redis_kill(&f->redis);
  jb__remote_owner o = owner("alice", id, 0);
  jb__remote_result res;
  /* The open connection meets a dead server: unsure (it may have been
   * sent); after that the reconnect is refused: sure it was not. */
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &o), JB_EOFFLINE);
  assert_true(res.unsure);
  assert_int_equal(jb__remote_claim(&res, &f->rm, u, &o), JB_EOFFLINE);
  assert_false(res.unsure);
  jbt_assert_contains(jb_errmsg(), "backend unavailable");
  assert_int_equal(jb__remote_release(&res, &f->rm, JB__REMOTE_TRASH, u,
                                      "alice", id), JB_EOFFLINE);
  assert_int_equal(jb__remote_resolve_claim(NULL, &f->rm, u, "alice", id),
                   JB_EOFFLINE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_post, setup, teardown),
      cmocka_unit_test_setup_teardown(test_post_claimed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_claim, setup, teardown),
      cmocka_unit_test_setup_teardown(test_release, setup, teardown),
      cmocka_unit_test_setup_teardown(test_taskflow_job, setup, teardown),
      cmocka_unit_test_setup_teardown(test_racing_claimers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lost_reply, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lost_post, setup, teardown),
      cmocka_unit_test_setup_teardown(test_notices, setup, teardown),
      cmocka_unit_test_setup_teardown(test_offline, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
