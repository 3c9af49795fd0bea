/*
 * test_torture.c - kill -9 at random moments. A child posts, claims,
 * consumes and abandons in a loop (on a small map, so it also grows the
 * map all the time) and is killed with SIGKILL after a random 0..20 ms,
 * over and over, with each durability mode. After every kill the parent
 * opens the board and checks that:
 *
 *  - jb_board_check passes (every job in exactly one of ready/claimed, so
 *    no job has two owners; indexes and counters consistent);
 *  - every post the child acknowledged is still on the board, unless the
 *    child had started consuming it;
 *  - every claim the child acknowledged is still held by it, and every
 *    consume it acknowledged is done;
 *  - nothing else appeared: at most the one post the child was making
 *    when it died, and no job is owned by anyone but the dead child.
 *
 * A second run binds every claim to the child's process (some with a
 * short lease too): after each kill, no job may still be held by the dead
 * child; its claims lapse by themselves and the next child's claim-next
 * hands them out again.
 *
 * The child writes one line per event with a single write() to a log file
 * (the page cache survives kill -9): "P uuid" after a post returned JB_OK,
 * "C uuid" after a claim, "X uuid" BEFORE calling consume and "x uuid"
 * after it returned, "A uuid" / "a uuid" around an abandon. The parent
 * then abandons the dead child's claims so the next child can take them.
 */
#include "helpers.h"
#include "store/store.h"

#include <lmdb.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 4
#define CHILD_MAP_SIZE (256 * 1024)
/* The parent trims the board back to this many jobs after each round. */
#define KEEP_JOBS 400

/* ------------------------------------------------ a uuid -> value table */

typedef struct {
  char key[JB_UUID_STRLEN];
  int val;
  bool used;
} slot;

typedef struct {
  slot *s;
  size_t cap, n;
} table;

static size_t hash_uuid(const char *u) {
  size_t h = 1469598103934665603ull;
  for (int i = 0; i < 36; i++) h = (h ^ (unsigned char)u[i]) * 1099511628211ull;
  return h;
}

static slot *t_find(table *t, const char *u, bool insert);

static void t_grow(table *t) {
  table old = *t;
  t->cap = old.cap ? old.cap * 2 : 1024;
  t->s = calloc(t->cap, sizeof *t->s);
  t->n = 0;
  assert_non_null(t->s);
  for (size_t i = 0; i < old.cap; i++)
    if (old.s[i].used) t_find(t, old.s[i].key, true)->val = old.s[i].val;
  free(old.s);
}

static slot *t_find(table *t, const char *u, bool insert) {
  if (insert && (t->n + 1) * 2 > t->cap) t_grow(t);
  if (t->cap == 0) return NULL;
  for (size_t i = hash_uuid(u) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    if (!t->s[i].used) {
      if (!insert) return NULL;
      t->s[i].used = true;
      memcpy(t->s[i].key, u, 36);
      t->s[i].key[36] = '\0';
      t->n++;
      return &t->s[i];
    }
    if (memcmp(t->s[i].key, u, 36) == 0) return &t->s[i];
  }
}

static void t_free(table *t) {
  free(t->s);
  memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- child */

typedef struct {
  const char *dir;
  const char *log;
  jb_durability durability;
  unsigned seed;
  int round;
  bool bound; /* claims bound to the child's process, some leased */
} child_args;

static void record(int fd, char type, const char *uuid) {
  char line[40];
  line[0] = type;
  line[1] = ' ';
  memcpy(line + 2, uuid, 36);
  line[38] = '\n';
  if (write(fd, line, 39) != 39) _exit(40);
}

/* Runs until killed; returns (exits) only on an error. */
static int torture_child(void *arg) {
  child_args *a = arg;
  int fd = open(a->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return 30;
  char who[32];
  snprintf(who, sizeof who, "torture-%d", a->round);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = a->durability;
  o.map_size = CHILD_MAP_SIZE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) {
    fprintf(stderr, "torture child: open: %s\n", jb_errmsg());
    return 31;
  }
  unsigned r = a->seed;
  jbt_buf d = jbt_details_blob(200, a->seed);
  for (;;) {
    r = r * 1103515245u + 12345u;
    unsigned x = r >> 8;
    jb_post posts[MAX_BATCH];
    char uuids[MAX_BATCH][JB_UUID_STRLEN];
    size_t k = x % 4 == 0 ? 1 + (x >> 4) % MAX_BATCH : 1;
    for (size_t i = 0; i < k; i++) {
      jb_post p = JB_POST_INIT;
      p.name = "torture";
      p.priority = (jb_priority)((x >> 6) % 5);
      p.details = d.data;
      p.details_len = d.len;
      posts[i] = p;
    }
    int rc = k == 1 ? jb_job_post(uuids[0], b, &posts[0])
                    : jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK) {
      fprintf(stderr, "torture child: post: %s\n", jb_errmsg());
      return 32;
    }
    for (size_t i = 0; i < k; i++) record(fd, 'P', uuids[i]);

    char u[JB_UUID_STRLEN];
    jb_claim_opts co = JB_CLAIM_OPTS_INIT;
    if (a->bound) {
      co.flags = JB_CLAIM_BIND_PROCESS;
      /* Long enough never to lapse while the child runs (a stalled child
       * would lose its claim and fail its consume): these claims lapse
       * by the child's death. */
      co.lease_ms = (x >> 3) % 3 == 0 ? 10000 : 0;
    }
    rc = jb_job_claim_next_ex(u, NULL, NULL, b, who, &co);
    if (rc == JB_ENOTFOUND) continue;
    if (rc != JB_OK) {
      fprintf(stderr, "torture child: claim-next: %s\n", jb_errmsg());
      return 33;
    }
    record(fd, 'C', u);
    switch ((x >> 12) % 4) {
    case 0:
    case 1:
      record(fd, 'X', u);
      if ((rc = jb_job_consume(b, u, who)) != JB_OK) {
        fprintf(stderr, "torture child: consume: %s\n", jb_errmsg());
        return 34;
      }
      record(fd, 'x', u);
      break;
    case 2:
      record(fd, 'A', u);
      if ((rc = jb_job_abandon(b, u, who)) != JB_OK) {
        fprintf(stderr, "torture child: abandon: %s\n", jb_errmsg());
        return 35;
      }
      record(fd, 'a', u);
      break;
    default:
      break; /* keep it claimed */
    }
  }
}

/* --------------------------------------------------------------- parent */

/* Cut a partly written last line (a write() cut short by the kill). */
static void cut_partial_line(const char *log) {
  int fd = open(log, O_RDWR);
  if (fd < 0) {
    assert_int_equal(errno, ENOENT); /* killed before opening it */
    return;
  }
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  off_t end = st.st_size;
  while (end > 0) {
    char c;
    assert_int_equal(pread(fd, &c, 1, end - 1), 1);
    if (c == '\n') break;
    end--;
  }
  assert_int_equal(ftruncate(fd, end), 0);
  close(fd);
}

typedef struct {
  size_t kills, posts, claims, consumes, abandons, orphans, max_jobs;
} totals;

/* Check the board after round `round`'s child was killed; `expected`
 * holds the jobs that must be on the board from earlier rounds (value
 * unused), and is updated to the board's jobs after the check. */
/* On a failure: print every change-log event that names job `uuid` (who
 * claimed, consumed or trashed it, and when), read with LMDB directly in
 * a forked child (this process has the board open). */
static void print_job_events(const char *dir, const char *uuid) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) jbt_wait(pid, 10000);
    return;
  }
  uint8_t u[16];
  for (int i = 0, o = 0; uuid[i] && o < 16; i++) {
    if (uuid[i] == '-') continue;
    unsigned v;
    if (sscanf(uuid + i, "%2x", &v) != 1) _exit(1);
    u[o++] = (uint8_t)v;
    i++;
  }
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi log;
  MDB_cursor *cur;
  MDB_val k, v;
  int rc;
  if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_maxdbs(env, 16)) ||
      (rc = mdb_env_set_maxreaders(env, 1022)) ||
      (rc = mdb_env_open(env, dir, MDB_RDONLY, 0644)) ||
      (rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) ||
      (rc = mdb_dbi_open(txn, JB_DB_LOG, 0, &log)) ||
      (rc = mdb_cursor_open(txn, log, &cur))) {
    /* Say so: an empty report must mean "no event names the job". */
    printf("# job %s: cannot read the change log: %s\n", uuid,
           mdb_strerror(rc));
    fflush(stdout);
    _exit(1);
  }
  size_t found = 0;
  uint64_t first = 0, lastseq = 0;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_eventrec ev;
    if (v.mv_size < sizeof ev || k.mv_size != 8) continue;
    lastseq = 0;
    for (int i = 0; i < 8; i++) lastseq = lastseq << 8 | ((uint8_t *)k.mv_data)[i];
    if (first == 0) first = lastseq;
    memcpy(&ev, v.mv_data, sizeof ev);
    if (memcmp(ev.uuid, u, 16) != 0) continue;
    found++;
    uint64_t seq = 0;
    for (int i = 0; i < 8; i++) seq = seq << 8 | ((uint8_t *)k.mv_data)[i];
    printf("# job %s: event %llu, type %d, owner '%.*s', time %lld\n", uuid,
           (unsigned long long)seq, ev.type, (int)ev.owner_len,
           (char *)v.mv_data + sizeof ev, (long long)ev.time_us);
  }
  if (found == 0)
    printf("# job %s: no event of the log (events %llu..%llu) names it\n",
           uuid, (unsigned long long)first, (unsigned long long)lastseq);
  fflush(stdout);
  _exit(0);
}

static void verify_round(const char *dir, const char *log, int round,
                         bool bound, table *expected, totals *tot) {
  char who[32];
  snprintf(who, sizeof who, "torture-%d", round);
  cut_partial_line(log);

  /* The last event of each job this round. */
  table last = {0};
  FILE *fp = fopen(log, "r");
  if (fp) {
    char line[64];
    while (fgets(line, sizeof line, fp)) {
      if (strlen(line) != 39 || line[1] != ' ')
        fail_msg("round %d: bad log line \"%s\"", round, line);
      t_find(&last, line + 2, true)->val = line[0];
      switch (line[0]) {
      case 'P': tot->posts++; break;
      case 'C': tot->claims++; break;
      case 'x': tot->consumes++; break;
      case 'a': tot->abandons++; break;
      }
    }
    fclose(fp);
  }

  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  jb_board *b = NULL;
  int rc = jb_board_open(&b, dir, &o);
  if (rc != JB_OK) fail_msg("round %d: reopen after kill: %s", round, jb_errmsg());
  jbt_assert_check_ok(b);

  /* What is on the board now, with owners. */
  table onboard = {0};
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, b, 0), JB_OK);
  size_t listed = 0, claimed = 0, orphans = 0;
  for (;;) {
    const jb_job *j;
    rc = jb_iter_next(&j, it);
    if (rc != JB_OK) fail_msg("round %d: listing: %s", round, jb_errmsg());
    if (j == NULL) break;
    listed++;
    const char *u = jb_job_uuid(j);
    const char *owner = jb_job_owner(j);
    slot *s = t_find(&onboard, u, true);
    if (s->val) fail_msg("round %d: job %s listed twice", round, u);
    s->val = owner ? 2 : 1;
    if (owner && bound)
      fail_msg("round %d: job %s is still held by %s, whose process is dead",
               round, u, owner);
    if (owner) {
      claimed++;
      if (strcmp(owner, who) != 0)
        fail_msg("round %d: job %s is owned by %s, not by the dead child %s",
                 round, u, owner, who);
    }
    slot *l = t_find(&last, u, false);
    int ev = l ? l->val : 0;
    if (ev == 'x')
      fail_msg("round %d: job %s is on the board after an acknowledged "
               "consume", round, u);
    if (!bound && (ev == 'C' || ev == 'X') && !owner)
      fail_msg("round %d: job %s lost its acknowledged claim", round, u);
    if (!l && !t_find(expected, u, false)) orphans++;
  }
  jb_iter_close(it);
  size_t count = 0, unclaimed = 0;
  assert_int_equal(jb_board_count(&count, b, 0), JB_OK);
  assert_int_equal(jb_board_count(&unclaimed, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(count, listed);
  assert_int_equal(unclaimed, listed - claimed);
  /* Only the post the child was making when it died may be unacknowledged. */
  if (orphans > MAX_BATCH)
    fail_msg("round %d: %zu jobs appeared that nobody acknowledged posting",
             round, orphans);
  tot->orphans += orphans;

  /* Every job expected from before, and every job acknowledged this round,
   * is there, unless a consume was started on it. */
  for (size_t i = 0; i < expected->cap; i++) {
    if (!expected->s[i].used) continue;
    const char *u = expected->s[i].key;
    slot *l = t_find(&last, u, false);
    bool may_be_gone = l && (l->val == 'X' || l->val == 'x');
    if (!may_be_gone && !t_find(&onboard, u, false))
      fail_msg("round %d: job %s, acknowledged earlier, is gone", round, u);
  }
  for (size_t i = 0; i < last.cap; i++) {
    if (!last.s[i].used) continue;
    const char *u = last.s[i].key;
    int ev = last.s[i].val;
    if (ev != 'X' && ev != 'x' && !t_find(&onboard, u, false)) {
      print_job_events(dir, u);
      fail_msg("round %d: job %s (last event '%c') is gone", round, u, ev);
    }
    /* The state read by uuid agrees with the listing. */
    jb_state st;
    assert_int_equal(jb_job_get_state(&st, b, u), JB_OK);
    slot *o2 = t_find(&onboard, u, false);
    assert_int_equal(st, !o2 ? JB_STATE_COMPLETE
                             : o2->val == 2 ? JB_STATE_CLAIMED
                                            : JB_STATE_UNCLAIMED);
  }

  /* Release the dead child's claims, and consume the oldest jobs beyond
   * KEEP_JOBS so that checking stays cheap however long the run; the
   * board is then what we expect. */
  if (count > tot->max_jobs) tot->max_jobs = count;
  for (size_t i = 0; i < onboard.cap; i++) {
    if (onboard.s[i].used && onboard.s[i].val == 2) {
      rc = jb_job_abandon(b, onboard.s[i].key, who);
      if (rc != JB_OK)
        fail_msg("round %d: abandon %s as %s: %s", round, onboard.s[i].key,
                 who, jb_errmsg());
    }
  }
  for (; count > KEEP_JOBS; count--) {
    char u[JB_UUID_STRLEN];
    rc = jb_job_claim_next(u, NULL, b, "trimmer");
    if (rc == JB_OK) rc = jb_job_consume(b, u, "trimmer");
    if (rc != JB_OK) fail_msg("round %d: trimming: %s", round, jb_errmsg());
    t_find(&onboard, u, false)->val = 0; /* gone */
  }
  t_free(expected);
  for (size_t i = 0; i < onboard.cap; i++)
    if (onboard.s[i].used && onboard.s[i].val != 0)
      t_find(expected, onboard.s[i].key, true)->val = 1;
  assert_int_equal(jb_board_count(&unclaimed, b, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(unclaimed, count);
  assert_int_equal(expected->n, count);
  jb_board_close(b);
  t_free(&onboard);
  t_free(&last);
}

static void run_rounds(jbt_fixture *f, jb_durability d, bool bound, int rounds,
                       unsigned seed, table *expected, totals *tot,
                       int *round) {
  for (int i = 0; i < rounds; i++, (*round)++) {
    char name[32];
    snprintf(name, sizeof name, "round-%d.log", *round);
    char *log = jbt_path(f->dir, name);
    child_args a = {f->dir, log, d, seed ^ ((unsigned)*round * 2654435761u),
                    *round, bound};
    unsigned rs = seed + (unsigned)*round;
    unsigned delay_us = (unsigned)rand_r(&rs) % 20001u; /* 0..20 ms */
    pid_t pid = jbt_fork(torture_child, &a, 30);
    struct timespec ts = {0, (long)delay_us * 1000};
    nanosleep(&ts, NULL); /* the random moment of the kill */
    kill(pid, SIGKILL);
    int st = jbt_wait(pid, 10000);
    if (st == -1) fail_msg("round %d: child did not die", *round);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
      fail_msg("round %d: the child stopped by itself (status %d) before "
               "the kill",
               *round, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    tot->kills++;
    verify_round(f->dir, log, *round, bound, expected, tot);
    unlink(log);
    free(log);
  }
}

typedef struct {
  const char *dir;
} drain_args;

/* After all the kills: a fresh process drains the board completely, under
 * a deadline (a wedged writer lock would hang it). */
static int drain_child(void *arg) {
  drain_args *a = arg;
  jb_board *b = NULL;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 1;
  char u[JB_UUID_STRLEN];
  int rc;
  while ((rc = jb_job_claim_next(u, NULL, b, "drainer")) == JB_OK)
    if (jb_job_consume(b, u, "drainer") != JB_OK) return 2;
  if (rc != JB_ENOTFOUND) return 3;
  size_t n = 1;
  if (jb_board_count(&n, b, 0) != JB_OK || n != 0) return 4;
  jb_board_close(b);
  return 0;
}

static void acknowledged_work_survives_kill_9_at_random_moments(
    void **state) {
  jbt_fixture *f = *state;
  unsigned seed = jbt_seed("kill -9 torture");
  /* The fixture created the board; the children open it themselves. */
  jb_board_close(f->board);
  f->board = NULL;
  table expected = {0};
  totals tot = {0};
  int round = 0;
  int64_t t0 = jbt_now_ms();
  run_rounds(f, JB_DURABILITY_NONE, false, 200, seed, &expected, &tot, &round);
  run_rounds(f, JB_DURABILITY_NORMAL, false, 60, seed, &expected, &tot, &round);
  run_rounds(f, JB_DURABILITY_FULL, false, 40, seed, &expected, &tot, &round);
  printf("# %zu kills in %lld ms: %zu posts, %zu claims, %zu consumes, %zu "
         "abandons acknowledged; %zu unacknowledged posts found; up to %zu "
         "jobs on the board\n",
         tot.kills, (long long)(jbt_now_ms() - t0), tot.posts, tot.claims,
         tot.consumes, tot.abandons, tot.orphans, tot.max_jobs);
  /* The children did real work between kills (not just dying in open). */
  assert_true(tot.posts >= 200);
  assert_true(tot.claims >= 100);
  assert_true(tot.consumes >= 40);
  drain_args da = {f->dir};
  jbt_wait_ok(jbt_fork(drain_child, &da, 60), 60000);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(f->board);
  t_free(&expected);
}

/* The same kills with every claim bound to the child's process (a third
 * of them leased too): after each, check passes, acknowledged posts are
 * there, and no job is held by the dead child. */
static void claims_of_a_killed_process_lapse_after_kill_9(void **state) {
  jbt_fixture *f = *state;
  unsigned seed = jbt_seed("kill -9 torture, process-bound claims");
  jb_board_close(f->board);
  f->board = NULL;
  table expected = {0};
  totals tot = {0};
  int round = 0;
  int64_t t0 = jbt_now_ms();
  run_rounds(f, JB_DURABILITY_NONE, true, 80, seed, &expected, &tot, &round);
  run_rounds(f, JB_DURABILITY_NORMAL, true, 20, seed, &expected, &tot, &round);
  printf("# %zu kills (process-bound claims) in %lld ms: %zu posts, %zu "
         "claims, %zu consumes acknowledged\n",
         tot.kills, (long long)(jbt_now_ms() - t0), tot.posts, tot.claims,
         tot.consumes);
  assert_true(tot.claims >= 50);
  drain_args da = {f->dir};
  jbt_wait_ok(jbt_fork(drain_child, &da, 60), 60000);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(f->board);
  t_free(&expected);
}

int main(void) {
  jbt_watchdog(400);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          acknowledged_work_survives_kill_9_at_random_moments, jbt_setup,
          jbt_teardown),
      cmocka_unit_test_setup_teardown(
          claims_of_a_killed_process_lapse_after_kill_9, jbt_setup,
          jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
