/*
 * test_torture.c - kill -9 at random moments: no durability mode
 * loses an acknowledged change, whatever the other processes on the board
 * use.
 *
 * Writers post (one job or a batch), claim-next, consume, trash, abandon
 * or keep their claims in a loop, on a small map so that they grow it all
 * the time, and are killed with SIGKILL at random moments. Writer n posts
 * and claims as "torture-<n>" and writes one line per event to a log of
 * its own with a single write() (the page cache survives kill -9):
 * "P uuid" after a post returned JB_OK; "C uuid" after a claim that stays
 * until released (plain, or leased for 10 minutes), "B uuid" after a claim
 * bound to the process (lapses when it dies; a third also leased);
 * "X uuid" BEFORE calling consume or trash and "x uuid" after it
 * returned; "A uuid" / "a uuid" around an abandon.
 *
 * Three tests:
 *  - one writer at a time, in durability none, then normal, then full
 *    (claims that stay), killed 0..25 ms (none) or 0..100 ms (normal,
 *    full: their commits wait for the disk) after it starts;
 *  - the same with every claim bound to the process, none then normal;
 *  - mixed: 3..6 writers at once on one board, durabilities assigned
 *    round-robin (none, normal, full, none, ...), claims of every kind,
 *    each killed at its own random moment (0..150 ms after it starts)
 *    while the others go on, and replaced by a new writer until the
 *    round's writers (up to twice as many) are used up. Meanwhile readers
 *    in every mode in turn check the board (jb_board_check) and list it
 *    (no job twice, none that no writer posted); a quarter of them are
 *    killed too.
 * In make check they kill 100, 40 and 200 writers (about 15 s; 30 to 60 s
 * with ASan+UBSan on a loaded 2-core machine); the first two kill more
 * writers (in none, up to four times as many) when those did too little
 * work to mean something, as on a machine so loaded that a writer is
 * killed before its first claims (CI once saw fewer than 50 bound claims
 * in 40 kills; unloaded, about 2,400).
 *
 * After each round, when all its writers are dead, a verifier process
 * opens the board in the next mode of none/normal/full and checks that:
 *  - jb_board_check passes (every job in exactly one of ready/claimed, so
 *    no job has two owners; indexes and counters consistent);
 *  - every job acknowledged (posted, or claimed, this round, or on the
 *    board after the previous round) is still there, unless a consume or
 *    trash of it started;
 *  - every claim that stays is still held by its dead writer; no job is
 *    held by a claim bound to a dead process (it lapsed); no two writers
 *    hold an acknowledged claim of one job;
 *  - every acknowledged consume or trash is done;
 *  - nothing else appeared: a writer may leave unacknowledged only the
 *    one operation it was making when killed (a post of up to a batch, or
 *    one claim), and no job is owned by anyone but a writer of the round.
 * It then abandons the dead writers' claims and trims the board back to
 * KEEP_JOBS jobs (in durability none: those writes are not under test).
 *
 * Long form: JB_TORTURE_KILLS=10000 tests/test_torture (from the build
 * directory): the mixed test kills that many writers instead of
 * MIXED_KILLS; the other two are unchanged. Each test prints its kills
 * (per mode), rounds, time and seed; JB_TEST_SEED=<seed> repeats its
 * schedule (the writers' modes and operations, the kill delays, the
 * readers) as far as timing allows. tests/test_torture --help says so.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "store/txn.h"

#include <lmdb.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 4
#define CHILD_MAP_SIZE (256 * 1024)
/* Writers keep the board near this many jobs; the parent trims it back
 * to KEEP_JOBS after each round. */
#define TARGET_JOBS 150
#define KEEP_JOBS 250
/* Writers at once in the mixed test, and in one of its rounds. */
#define MAX_AT_ONCE 6
#define MAX_ROUND (2 * MAX_AT_ONCE)
/* Readers at once; a quarter of them killed 1..READER_WINDOW_US after
 * they start. */
#define MAX_READERS 2
#define READER_WINDOW_US 30000
/* Kills of the mixed test in make check (JB_TORTURE_KILLS overrides). */
#define MIXED_KILLS 200

#define LONG_FORM "JB_TORTURE_KILLS=10000 tests/test_torture"

static const jb_durability all_modes[3] = {
    JB_DURABILITY_NONE, JB_DURABILITY_NORMAL, JB_DURABILITY_FULL};

static const char *mode_name(jb_durability d) {
  return d == JB_DURABILITY_NONE     ? "none"
         : d == JB_DURABILITY_NORMAL ? "normal"
                                     : "full";
}

/* How every process of the torture opens the board: on a small map, so
 * that the writers grow it all the time; with a short history and change
 * log, so that the verifier's jb_board_check stays cheap however long the
 * run (and the writers trim both all the time). */
static jb_board_options torture_options(jb_durability durability) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = durability;
  o.map_size = CHILD_MAP_SIZE;
  o.history_max = 1000;
  o.log_keep = 5000;
  return o;
}

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
  if (t->s == NULL) abort(); /* also in children: no cmocka there */
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

static int t_val(table *t, const char *u) {
  slot *s = t_find(t, u, false);
  return s ? s->val : 0;
}

static void t_free(table *t) {
  free(t->s);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------- writer names */

static void writer_name(char out[32], int gen) {
  snprintf(out, 32, "torture-%d", gen);
}

/* The n of a name "torture-<n>", or -1 when it is not one. */
static int writer_gen(const char *name) {
  if (name == NULL || strncmp(name, "torture-", 8) != 0 ||
      !isdigit((unsigned char)name[8]))
    return -1;
  char *end;
  errno = 0;
  long g = strtol(name + 8, &end, 10);
  return *end || errno || g > INT_MAX ? -1 : (int)g;
}

/* --------------------------------------------------------------- writer */

/* How a writer claims: claims that stay until released, claims bound to
 * the process, or every kind. */
enum { CLAIMS_STAY, CLAIMS_BOUND, CLAIMS_MIXED };

typedef struct {
  const char *dir;
  const char *log;
  jb_durability durability;
  unsigned seed;
  int gen;    /* its number: it posts and claims as "torture-<gen>" */
  int claims; /* CLAIMS_* */
} writer_args;

static void record(int fd, char type, const char *uuid) {
  char line[40];
  line[0] = type;
  line[1] = ' ';
  memcpy(line + 2, uuid, 36);
  line[38] = '\n';
  if (write(fd, line, 39) != 39) _exit(40);
}

/* The options of a claim of kind `claims` (y: random bits). Returns true
 * when the claim is bound to the process. The leases are long enough
 * never to lapse while a writer runs (a stalled writer would lose its
 * claim and fail its consume) nor before the parent's check: these claims
 * end by the writer's death (bound) or by the parent's abandon. */
static bool claim_opts(jb_claim_options *co, int claims, unsigned y) {
  unsigned kind = claims == CLAIMS_STAY    ? 0
                  : claims == CLAIMS_BOUND ? ((y >> 3) % 3 == 0 ? 3 : 2)
                                           : (y >> 3) % 4;
  /* 0: plain; 1: leased; 2: bound; 3: bound and leased */
  if (kind >= 2) co->flags = JB_CLAIM_BIND_PROCESS;
  if (kind == 1) co->lease_ms = 600000;
  if (kind == 3) co->lease_ms = 10000;
  return kind >= 2;
}

/* Runs until killed; returns (exits) only on an error. Posts k jobs
 * (a batch a quarter of the time), then claims some and ends most of
 * those claims: k + 1 when the board holds more than TARGET_JOBS, else
 * about half as many, so that the board stays near TARGET_JOBS jobs (big
 * enough for its trees to split and merge; no trimming to pay for). */
static int torture_writer(void *arg) {
  writer_args *a = arg;
  int fd = open(a->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return 30;
  char who[32];
  writer_name(who, a->gen);
  jb_board_options o = torture_options(a->durability);
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) {
    fprintf(stderr, "torture writer %s: open: %s\n", who, jb_errmsg());
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
      p.name = who;
      p.priority = (jb_priority)((x >> 6) % 5);
      p.details = d.data;
      p.details_len = d.len;
      posts[i] = p;
    }
    int rc = k == 1 ? jb_job_post(uuids[0], b, &posts[0])
                    : jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK) {
      fprintf(stderr, "torture writer %s: post: %s\n", who, jb_errmsg());
      return 32;
    }
    for (size_t i = 0; i < k; i++) record(fd, 'P', uuids[i]);

    size_t count = 0;
    if (jb_board_count(&count, b, 0) != JB_OK) {
      fprintf(stderr, "torture writer %s: count: %s\n", who, jb_errmsg());
      return 36;
    }
    size_t claims = count > TARGET_JOBS ? k + 1 : (k + 1) / 2;
    for (size_t c = 0; c < claims; c++) {
      r = r * 1103515245u + 12345u;
      unsigned y = r >> 8;
      char u[JB_UUID_STRLEN];
      jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
      bool bound = claim_opts(&co, a->claims, y);
      rc = jb_claim_next(u, NULL, NULL, b, who, &co);
      if (rc == JB_ENOTFOUND) break;
      if (rc != JB_OK) {
        fprintf(stderr, "torture writer %s: claim-next: %s\n", who,
                jb_errmsg());
        return 33;
      }
      record(fd, bound ? 'B' : 'C', u);
      unsigned end = (y >> 12) % 8;
      if (end <= 4) { /* consume, or trash (1 in 5) */
        record(fd, 'X', u);
        rc = end == 4 ? jb_trash(b, u, who, 0) : jb_consume(b, u, who, 0, NULL);
        if (rc != JB_OK) {
          fprintf(stderr, "torture writer %s: %s: %s\n", who,
                  end == 4 ? "trash" : "consume", jb_errmsg());
          return 34;
        }
        record(fd, 'x', u);
      } else if (end <= 6) {
        record(fd, 'A', u);
        if ((rc = jb_abandon(b, u, who, 0)) != JB_OK) {
          fprintf(stderr, "torture writer %s: abandon: %s\n", who,
                  jb_errmsg());
          return 35;
        }
        record(fd, 'a', u);
      } /* else keep it claimed */
    }
  }
}

/* --------------------------------------------------------------- reader */

typedef struct {
  const char *dir;
  jb_durability durability;
  int max_gen; /* the highest writer number that exists yet */
} reader_args;

static void check_report(const char *line, void *payload) {
  (void)payload;
  fprintf(stderr, "torture: check: %s\n", line);
}

/* While writers run: check the board (one read snapshot) and list it.
 * Exits 0 when all is well; else says why on stderr and exits 50..56. */
static int torture_reader(void *arg) {
  reader_args *a = arg;
  jb_board_options o = torture_options(a->durability);
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) {
    fprintf(stderr, "torture reader: open: %s\n", jb_errmsg());
    return 50;
  }
  if (jb_board_check(NULL, b, check_report, NULL) != JB_OK) return 51;
  table seen = {0};
  jb_iter *it = NULL;
  if (jb_iter_open(&it, b, 0) != JB_OK) return 52;
  for (;;) {
    const jb_job *j;
    if (jb_iter_next(&j, it) != JB_OK) {
      fprintf(stderr, "torture reader: listing: %s\n", jb_errmsg());
      return 53;
    }
    if (j == NULL) break;
    const char *u = jb_job_uuid(j);
    slot *s = t_find(&seen, u, true);
    if (s->val) {
      fprintf(stderr, "torture reader: job %s listed twice\n", u);
      return 54;
    }
    s->val = 1;
    int g = writer_gen(jb_job_name(j));
    if (g < 0 || g > a->max_gen) {
      fprintf(stderr, "torture reader: job %s is named '%s': no writer "
              "posted it\n", u, jb_job_name(j));
      return 55;
    }
    const char *owner = jb_job_owner(j);
    g = writer_gen(owner);
    if (owner && (g < 0 || g > a->max_gen)) {
      fprintf(stderr, "torture reader: job %s is owned by '%s', no writer\n",
              u, owner);
      return 56;
    }
  }
  jb_iter_close(it);
  t_free(&seen);
  jb_board_close(b);
  return 0;
}

/* ------------------------------------------------------------- verifier */

/*
 * After each round a verifier process of its own checks the board. (The
 * parent never opens the board while the torture runs: it stays small, so
 * that its many forks stay cheap, also under ASan.) A problem is printed
 * with the round and ends the verifier with exit status 1; cmocka belongs
 * to the parent, which then fails the test.
 */

typedef struct {
  size_t kills, rounds, readers, readers_killed;
  size_t posts, claims, bound_claims, consumes, abandons, orphans, max_jobs;
  /* indexed by jb_durability */
  size_t kills_by_mode[3], posts_by_mode[3];
} totals;

/* One writer of a round. */
typedef struct {
  int gen;
  jb_durability mode;
  int claims;
  char *log;
} writer;

typedef struct {
  const char *dir;
  int round;
  jb_durability mode; /* the verifier's own */
  const writer *w;    /* the round's writers, all dead */
  int nw;
  int next_gen;       /* writers 0..next_gen - 1 have existed */
  totals *tot;        /* shared with the parent */
} verify_args;

static int verify_round_no;

static void vfail(const char *fmt, ...) __attribute__((format(printf, 1, 2),
                                                       noreturn));
static void vfail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "torture verifier: round %d: ", verify_round_no);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  _exit(1);
}

#define vcheck(cond)                                                          \
  do {                                                                        \
    if (!(cond)) vfail("%s:%d: %s", __FILE__, __LINE__, #cond);               \
  } while (0)

/* Cut a partly written last line (a write() cut short by the kill). */
static void cut_partial_line(const char *log) {
  int fd = open(log, O_RDWR);
  if (fd < 0) {
    vcheck(errno == ENOENT); /* killed before opening it */
    return;
  }
  struct stat st;
  vcheck(fstat(fd, &st) == 0);
  off_t end = st.st_size;
  while (end > 0) {
    char c;
    vcheck(pread(fd, &c, 1, end - 1) == 1);
    if (c == '\n') break;
    end--;
  }
  vcheck(ftruncate(fd, end) == 0);
  close(fd);
}

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
    printf("# job %s: event %llu, type %d, owner '%.*s', time %lld\n", uuid,
           (unsigned long long)lastseq, ev.type, (int)ev.owner_len,
           (char *)v.mv_data + sizeof ev, (long long)ev.time_us);
  }
  if (found == 0)
    printf("# job %s: no event of the log (events %llu..%llu) names it\n",
           uuid, (unsigned long long)first, (unsigned long long)lastseq);
  fflush(stdout);
  _exit(0);
}

/* Report a problem with job `uuid`, after printing its change-log events. */
#define job_fail(dir, uuid, ...)                                              \
  do {                                                                        \
    print_job_events((dir), (uuid));                                          \
    vfail(__VA_ARGS__);                                                       \
  } while (0)

/* The jobs on the board after the previous round: the file "expected" in
 * the board's directory, one uuid a line (none before the first round). */
static void load_expected(table *t, const char *dir) {
  char *path = jbt_path(dir, "expected");
  FILE *fp = fopen(path, "r");
  free(path);
  if (fp == NULL) {
    vcheck(errno == ENOENT);
    return;
  }
  char line[64];
  while (fgets(line, sizeof line, fp)) {
    vcheck(strlen(line) == 37);
    t_find(t, line, true)->val = 1;
  }
  fclose(fp);
}

static void save_expected(const table *t, const char *dir) {
  char *tmp = jbt_path(dir, "expected.new"), *path = jbt_path(dir, "expected");
  FILE *fp = fopen(tmp, "w");
  vcheck(fp != NULL);
  for (size_t k = 0; k < t->cap; k++)
    if (t->s[k].used && t->s[k].val) fprintf(fp, "%s\n", t->s[k].key);
  vcheck(fclose(fp) == 0);
  vcheck(rename(tmp, path) == 0);
  free(tmp);
  free(path);
}

/* Each job's last event in one writer's log: the event letter, and the
 * kind ('C' or 'B') of the writer's last claim of it, << 8. */
static void read_log(table *last, const writer *w, totals *tot) {
  cut_partial_line(w->log);
  FILE *fp = fopen(w->log, "r");
  if (fp == NULL) return; /* killed before opening it */
  char line[64];
  while (fgets(line, sizeof line, fp)) {
    if (strlen(line) != 39 || line[1] != ' ' || !strchr("PCBXxAa", line[0]))
      vfail("bad log line \"%s\" of torture-%d", line, w->gen);
    slot *s = t_find(last, line + 2, true);
    int kind = line[0] == 'C' || line[0] == 'B' ? line[0] : s->val >> 8;
    s->val = line[0] | kind << 8;
    switch (line[0]) {
    case 'P': tot->posts++; tot->posts_by_mode[w->mode]++; break;
    case 'B': tot->bound_claims++; /* fall through */
    case 'C': tot->claims++; break;
    case 'x': tot->consumes++; break;
    case 'a': tot->abandons++; break;
    }
  }
  fclose(fp);
}

/* What the logs of a round say of a job (all its writers merged). Every
 * last event means the job existed (a post or a claim was acknowledged);
 * consume and trash end a writer's events on a job. */
enum {
  J_XSTART = 1 << 0, /* a writer started consuming (or trashing) it */
  J_XDONE = 1 << 1,  /* ... and was told it was done */
  J_HELD = 1 << 2,   /* a writer's last event is a claim that stays: 'C' */
  J_XHELD = 1 << 3,  /* ... or a consume started on such a claim: 'X' */
  J_HOLDER = 8,      /* the index of that writer, << J_HOLDER */
};

static void merge_logs(table *jobs, table *last, const writer *w, int nw) {
  for (int i = 0; i < nw; i++) {
    for (size_t k = 0; k < last[i].cap; k++) {
      const slot *s = &last[i].s[k];
      if (!s->used) continue;
      int ev = s->val & 0xff, kind = s->val >> 8;
      slot *m = t_find(jobs, s->key, true);
      if (ev == 'X' || ev == 'x') m->val |= J_XSTART;
      if (ev == 'x') m->val |= J_XDONE;
      if (ev != 'C' && !(ev == 'X' && kind == 'C')) continue;
      if (m->val & (J_HELD | J_XHELD))
        vfail("job %s: torture-%d and torture-%d were both told they claimed "
              "it, and neither released it (two owners)",
              s->key, w[m->val >> J_HOLDER].gen, w[i].gen);
      m->val |= (ev == 'C' ? J_HELD : J_XHELD) | i << J_HOLDER;
    }
  }
}

/* A write transaction's body that writes nothing (see the verifier). */
static int take_write_mutex(jb_store *s, MDB_txn *txn, void *ctx,
                            int *status) {
  (void)s, (void)txn, (void)ctx, (void)status;
  return 0;
}

/* The board after a round, whose writers are all dead: see the header
 * comment. Then the dead writers' claims are abandoned and the board
 * trimmed; its jobs are saved as the next round's "expected". */
static int verifier(void *arg) {
  const verify_args *a = arg;
  const writer *w = a->w;
  const int nw = a->nw;
  const char *dir = a->dir;
  verify_round_no = a->round;
  table expected = {0}, last[MAX_ROUND] = {{0}}, jobs = {0};
  load_expected(&expected, dir);
  for (int i = 0; i < nw; i++) read_log(&last[i], &w[i], a->tot);
  merge_logs(&jobs, last, w, nw);

  jb_board_options o = torture_options(a->mode);
  jb_board *b = NULL;
  if (jb_board_open(&b, dir, &o) != JB_OK)
    vfail("reopen after the kills (durability %s): %s", mode_name(a->mode),
          jb_errmsg());
  /* A writer killed after writing its commit's meta page but before
   * LMDB stored the new transaction id in the lock file's shared table
   * (mdb_env_write_meta's last step) leaves that commit unseen by readers
   * (they take the id from the table) until the next writer takes the
   * write mutex: LMDB's dead-owner recovery (mdb_mutex_failed) then picks
   * the newest meta page and publishes its id. The commit was not
   * acknowledged, so either state is right; but the verifier must judge
   * the board every later process will see, not the one before it. A
   * write transaction that changes nothing takes the mutex and commits
   * nothing. */
  vcheck(jb__store_write(b->store, take_write_mutex, NULL) == JB_OK);
  if (jb_board_check(NULL, b, check_report, NULL) != JB_OK)
    vfail("jb_board_check found problems (above)");

  /* What is on the board now: 1 unclaimed, 2 + i owned by writer i. */
  table onboard = {0};
  int orphans[MAX_ROUND] = {0}, unacked[MAX_ROUND] = {0};
  jb_iter *it = NULL;
  vcheck(jb_iter_open(&it, b, 0) == JB_OK);
  size_t listed = 0, claimed = 0;
  for (;;) {
    const jb_job *j;
    if (jb_iter_next(&j, it) != JB_OK) vfail("listing: %s", jb_errmsg());
    if (j == NULL) break;
    listed++;
    const char *u = jb_job_uuid(j);
    const char *name = jb_job_name(j);
    const char *owner = jb_job_owner(j);
    slot *s = t_find(&onboard, u, true);
    if (s->val) vfail("job %s listed twice", u);
    s->val = 1;
    int jf = t_val(&jobs, u);
    if (jf & J_XDONE)
      job_fail(dir, u, "job %s is on the board after an acknowledged consume "
               "(or trash)", u);
    int pg = writer_gen(name);
    if (pg < 0 || pg >= a->next_gen)
      job_fail(dir, u, "job %s is named '%s': no writer posted it", u, name);
    if (!t_find(&jobs, u, false) && !t_find(&expected, u, false)) {
      /* Acknowledged to no one: its writer died posting it. */
      int i = pg - w[0].gen;
      if (i < 0 || i >= nw)
        job_fail(dir, u, "job %s, posted by %s of an earlier round and not "
                 "on the board after it, appeared", u, name);
      orphans[i]++;
    }
    if (jf & (J_HELD | J_XHELD)) {
      char h[32];
      writer_name(h, w[jf >> J_HOLDER].gen);
      if (owner == NULL || strcmp(owner, h) != 0)
        job_fail(dir, u, "job %s lost the acknowledged claim of %s (owner "
                 "now %s)", u, h, owner ? owner : "none");
    }
    if (owner == NULL) continue;
    claimed++;
    int i = writer_gen(owner) - w[0].gen;
    if (writer_gen(owner) < 0 || i < 0 || i >= nw)
      job_fail(dir, u, "job %s is owned by %s, not by a writer of this round "
               "(torture-%d..%d; held by pid %d, %s; %s after the previous "
               "round; lease %s)", u, owner, w[0].gen, w[nw - 1].gen,
               jb_job_holder_pid(j),
               jb_job_holder_alive(j) ? "alive" : "not alive",
               t_find(&expected, u, false) ? "on the board" : "not listed",
               jb_job_lease_expires(j) ? "set" : "none");
    s->val = 2 + i;
    if (jb_job_holder_pid(j) != 0 || w[i].claims == CLAIMS_BOUND)
      job_fail(dir, u, "job %s is still held by %s (bound to pid %d), whose "
               "process is dead", u, owner, jb_job_holder_pid(j));
    /* Its last word on the job: an acknowledged claim, maybe with a
     * release cut by the kill; or none, and this is the claim it was
     * making when killed. */
    int l = t_val(&last[i], u), ev = l & 0xff, kind = l >> 8;
    bool told = ev == 'C' || ev == 'B' || ev == 'X' || ev == 'A';
    if (told && kind == 'B')
      job_fail(dir, u, "job %s is still held by %s, whose claim was bound to "
               "its process, which is dead", u, owner);
    if (!told) unacked[i]++;
  }
  jb_iter_close(it);
  size_t count = 0, unclaimed = 0;
  vcheck(jb_board_count(&count, b, 0) == JB_OK);
  vcheck(jb_board_count(&unclaimed, b, JB_ONLY_UNCLAIMED) == JB_OK);
  vcheck(count == listed);
  vcheck(unclaimed == listed - claimed);
  /* One operation at most was cut by each kill. */
  for (int i = 0; i < nw; i++) {
    if (orphans[i] > MAX_BATCH || unacked[i] > 1 || (orphans[i] && unacked[i]))
      vfail("torture-%d (durability %s) left %d posts and %d claims that it "
            "was not told of; a kill cuts one operation",
            w[i].gen, mode_name(w[i].mode), orphans[i], unacked[i]);
    a->tot->orphans += (size_t)orphans[i];
  }

  /* Every job expected from before, and every job acknowledged this round,
   * is there, unless a consume was started on it. */
  for (size_t k = 0; k < expected.cap; k++) {
    const char *u = expected.s[k].key;
    if (expected.s[k].used && !(t_val(&jobs, u) & J_XSTART) &&
        !t_find(&onboard, u, false))
      job_fail(dir, u, "job %s, on the board after the previous round, is "
               "gone", u);
  }
  for (size_t k = 0; k < jobs.cap; k++) {
    if (!jobs.s[k].used) continue;
    const char *u = jobs.s[k].key;
    int jf = jobs.s[k].val;
    slot *on = t_find(&onboard, u, false);
    if (!on && ((jf & J_HELD) || !(jf & J_XSTART)))
      job_fail(dir, u, "job %s, acknowledged%s, is gone", u,
               jf & J_HELD ? " and claimed" : "");
    /* The state read by uuid agrees with the listing. */
    jb_state st;
    vcheck(jb_job_get_state(&st, b, u) == JB_OK);
    vcheck(st == (!on ? JB_STATE_COMPLETE
                      : on->val >= 2 ? JB_STATE_CLAIMED
                                     : JB_STATE_UNCLAIMED));
  }

  /* Release the dead writers' claims, and consume the oldest jobs beyond
   * KEEP_JOBS so that checking stays cheap however long the run; the
   * board is then what the next round expects. These writes are not
   * under test: they run in durability none (a flush per abandon in full
   * would cost most of the run's time). */
  if (count > a->tot->max_jobs) a->tot->max_jobs = count;
  if (a->mode != JB_DURABILITY_NONE && (claimed > 0 || count > KEEP_JOBS)) {
    jb_board_close(b);
    o.durability = JB_DURABILITY_NONE;
    if (jb_board_open(&b, dir, &o) != JB_OK)
      vfail("reopen in durability none: %s", jb_errmsg());
  }
  for (size_t k = 0; k < onboard.cap; k++) {
    if (!onboard.s[k].used || onboard.s[k].val < 2) continue;
    char who[32];
    writer_name(who, w[onboard.s[k].val - 2].gen);
    if (jb_abandon(b, onboard.s[k].key, who, 0) != JB_OK)
      vfail("abandon %s as %s: %s", onboard.s[k].key, who, jb_errmsg());
  }
  for (; count > KEEP_JOBS; count--) {
    char u[JB_UUID_STRLEN];
    int rc = jb_claim_next(u, NULL, NULL, b, "trimmer", NULL);
    if (rc == JB_OK) rc = jb_consume(b, u, "trimmer", 0, NULL);
    if (rc != JB_OK) vfail("trimming: %s", jb_errmsg());
    t_find(&onboard, u, false)->val = 0; /* gone */
  }
  vcheck(jb_board_count(&unclaimed, b, JB_ONLY_UNCLAIMED) == JB_OK);
  vcheck(unclaimed == count);
  jb_board_close(b);
  save_expected(&onboard, dir);
  t_free(&onboard);
  t_free(&jobs);
  t_free(&expected);
  for (int i = 0; i < nw; i++) t_free(&last[i]);
  return 0;
}

/* --------------------------------------------------------------- parent */

/* One run of a test: the board, the counts, the parent's random choices. */
typedef struct {
  const char *dir;
  unsigned seed;
  uint64_t rng;
  totals *tot; /* shared with the verifiers */
  int round;
  int next_gen; /* the next writer's number */
} torture;

/* splitmix64: the parent's choices, repeatable from the seed. */
static unsigned rnd_below(torture *t, unsigned n) {
  uint64_t z = (t->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return n ? (unsigned)(z % n) : 0;
}

/* Verify round t->round in a process of its own, in the next mode. */
static void verify(torture *t, const writer *w, int nw) {
  verify_args a = {t->dir, t->round, all_modes[t->round % 3], w, nw,
                   t->next_gen, t->tot};
  int st = jbt_wait(jbt_fork(verifier, &a, 120), 120000);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("round %d: the verifier (durability %s) %s (status %d); "
             "JB_TEST_SEED=%u repeats the run (with the same "
             "JB_TORTURE_KILLS)", t->round, mode_name(a.mode),
             st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1
                 ? "found the board wrong: see above" : "failed",
             st, t->seed);
}

/* How a test runs its writers. */
typedef struct {
  const jb_durability *modes; /* writer n gets modes[n % nmodes] */
  size_t nmodes;
  int claims;                   /* CLAIMS_* */
  int at_once_min, at_once_max; /* writers running at once */
  bool replace;                 /* killed writers replaced while others run */
  bool readers;                 /* readers check and list meanwhile */
  /* A writer is killed 0..kill_window_us[its durability] after it
   * starts. */
  unsigned kill_window_us[3];
} plan;

/* A process of a round: a writer, or a reader. */
typedef struct {
  pid_t pid;
  int64_t kill_at_us; /* 0: not to be killed (a reader left to finish) */
  int writer;         /* index in the round's writers; -1: a reader */
  bool killed;        /* SIGKILL sent, not reaped yet */
} proc;

static proc start_writer(torture *t, const plan *p, const writer *w, int i) {
  writer_args a = {t->dir, w[i].log, w[i].mode,
                   t->seed ^ ((unsigned)w[i].gen * 2654435761u), w[i].gen,
                   w[i].claims};
  proc r = {jbt_fork(torture_writer, &a, 30), 0, i, false};
  r.kill_at_us = jbt_now_us() + rnd_below(t, p->kill_window_us[w[i].mode] + 1);
  return r;
}

/* A reader, to be killed `kill_in_us` after it starts (0: left to
 * finish). */
static proc start_reader(torture *t, int max_gen, unsigned kill_in_us) {
  reader_args a = {t->dir, all_modes[t->tot->readers++ % 3], max_gen};
  proc r = {jbt_fork(torture_reader, &a, 30), 0, -1, false};
  if (kill_in_us) r.kill_at_us = jbt_now_us() + kill_in_us;
  return r;
}

/* Fail the round, after killing and reaping its processes still there
 * (run[0..nrun)): a failed test leaves none behind. */
static void round_fail(const proc *run, int nrun, const char *why) {
  for (int k = 0; k < nrun; k++) kill(run[k].pid, SIGKILL);
  for (int k = 0; k < nrun; k++) jbt_wait(run[k].pid, 10000);
  fail_msg("%s", why);
}

/* Process run[k] of the round ended with wait status `st`: as it should?
 * Else the round fails (run[k] is reaped; the others are killed). */
static void ended(torture *t, const writer *w, proc *run, int nrun, int k,
                  int st) {
  const proc r = run[k];
  char why[256] = "";
  if (r.writer >= 0) {
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
      snprintf(why, sizeof why, "round %d: writer torture-%d (durability %s) "
               "stopped by itself (status %d; its reason above) before the "
               "kill", t->round, w[r.writer].gen, mode_name(w[r.writer].mode),
               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  } else if (r.killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
    t->tot->readers_killed++;
  } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    snprintf(why, sizeof why, "round %d: a reader failed (%s %d; its reason "
             "above)", t->round, WIFEXITED(st) ? "exit" : "signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  }
  if (why[0] == '\0') return;
  run[k] = run[--nrun];
  round_fail(run, nrun, why);
}

/* One round: `nw` writers, `at_once` of them at a time, each killed at its
 * own moment and replaced while writers are left; readers now and then;
 * then the verification. The parent reaps the killed without waiting for
 * them, so that it is never late for the next kill. */
static void run_round(torture *t, const plan *p, int at_once, int nw) {
  writer w[MAX_ROUND];
  proc run[MAX_ROUND + MAX_READERS];
  int nrun = 0, started = 0, readers = 0;
  for (int i = 0; i < nw; i++) {
    char name[32];
    w[i].gen = t->next_gen + i;
    w[i].mode = p->modes[(size_t)w[i].gen % p->nmodes];
    w[i].claims = p->claims;
    snprintf(name, sizeof name, "writer-%d.log", w[i].gen);
    w[i].log = jbt_path(t->dir, name);
  }
  t->next_gen += nw;
  while (started < at_once) run[nrun++] = start_writer(t, p, w, started++);
  for (;;) {
    for (int k = 0; k < nrun; k++) { /* reap the killed, and readers done */
      int st;
      if (run[k].writer >= 0 && !run[k].killed) continue;
      if (waitpid(run[k].pid, &st, WNOHANG) != run[k].pid) continue;
      ended(t, w, run, nrun, k, st);
      if (run[k].writer < 0) readers--;
      run[k--] = run[--nrun];
    }
    int next = -1;
    for (int k = 0; k < nrun; k++)
      if (!run[k].killed && run[k].kill_at_us &&
          (next < 0 || run[k].kill_at_us < run[next].kill_at_us))
        next = k;
    if (next < 0) break; /* no writer left to kill */
    int64_t wait = run[next].kill_at_us - jbt_now_us();
    if (wait > 0) {
      struct timespec ts = {(time_t)(wait / 1000000),
                            (long)(wait % 1000000) * 1000};
      nanosleep(&ts, NULL); /* the random moment of the kill */
    }
    kill(run[next].pid, SIGKILL);
    run[next].killed = true;
    if (run[next].writer < 0) continue;
    t->tot->kills++;
    t->tot->kills_by_mode[w[run[next].writer].mode]++;
    if (started < nw) run[nrun++] = start_writer(t, p, w, started++);
    /* A reader after a third of the kills, a quarter of them killed. The
     * dice are thrown whether or not it starts, so that the schedule
     * depends on the seed only. */
    bool reader = rnd_below(t, 3) == 0, killed = rnd_below(t, 4) == 0;
    unsigned kill_in = killed ? 1 + rnd_below(t, READER_WINDOW_US) : 0;
    if (p->readers && reader && readers < MAX_READERS) {
      run[nrun++] = start_reader(t, t->next_gen - 1, kill_in);
      readers++;
    }
  }
  while (nrun > 0) { /* the killed, and readers still going */
    int st = jbt_wait(run[0].pid, 30000);
    if (st == -1) {
      char why[128];
      snprintf(why, sizeof why, "round %d: process %d did not end within 30 "
               "s (killed)", t->round, run[0].pid);
      round_fail(run + 1, nrun - 1, why);
    }
    ended(t, w, run, nrun, 0, st);
    run[0] = run[--nrun];
  }
  verify(t, w, nw);
  t->round++;
  t->tot->rounds++;
  for (int i = 0; i < nw; i++) {
    unlink(w[i].log);
    free(w[i].log);
  }
}

/* Rounds until `kills` writers were killed. */
static void run_torture(torture *t, const plan *p, size_t kills) {
  for (size_t done = 0; done < kills;) {
    size_t left = kills - done;
    size_t n = (size_t)p->at_once_min +
               rnd_below(t, (unsigned)(p->at_once_max - p->at_once_min + 1));
    if (n > left) n = left;
    size_t nw = n + (p->replace ? rnd_below(t, (unsigned)n + 1) : 0);
    if (nw > left) nw = left;
    run_round(t, p, (int)n, (int)nw);
    done += nw;
  }
}

static void torture_begin(torture *t, jbt_fixture *f, const char *what) {
  memset(t, 0, sizeof *t);
  t->dir = f->dir;
  t->seed = jbt_seed(what);
  t->rng = t->seed;
  t->tot = mmap(NULL, sizeof *t->tot, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (t->tot == MAP_FAILED) fail_msg("mmap: %s", strerror(errno));
  memset(t->tot, 0, sizeof *t->tot);
  /* The fixture created the board; the children open it themselves. */
  jb_board_close(f->board);
  f->board = NULL;
}

typedef struct {
  const char *dir;
} drain_args;

/* After all the kills: a fresh process drains the board completely, under
 * a deadline (a wedged writer lock would hang it). */
static int drain_child(void *arg) {
  drain_args *a = arg;
  jb_board *b = NULL;
  jb_board_options o = torture_options(JB_DURABILITY_NONE);
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 1;
  char u[JB_UUID_STRLEN];
  int rc;
  while ((rc = jb_claim_next(u, NULL, NULL, b, "drainer", NULL)) == JB_OK)
    if (jb_consume(b, u, "drainer", 0, NULL) != JB_OK) return 2;
  if (rc != JB_ENOTFOUND) return 3;
  size_t n = 1;
  if (jb_board_count(&n, b, 0) != JB_OK || n != 0) return 4;
  jb_board_close(b);
  return 0;
}

static void torture_end(torture *t, jbt_fixture *f, const char *what,
                        int64_t t0) {
  const totals *s = t->tot;
  printf("# %s: %zu kills (none %zu, normal %zu, full %zu) in %zu rounds, "
         "%lld ms, seed %u\n"
         "#   acknowledged: %zu posts (none %zu, normal %zu, full %zu), %zu "
         "claims (%zu bound), %zu consumes and trashes, %zu abandons; %zu "
         "unacknowledged posts found; up to %zu jobs on the board; %zu "
         "readers (%zu killed)\n",
         what, s->kills, s->kills_by_mode[JB_DURABILITY_NONE],
         s->kills_by_mode[JB_DURABILITY_NORMAL],
         s->kills_by_mode[JB_DURABILITY_FULL], s->rounds,
         (long long)(jbt_now_ms() - t0), t->seed, s->posts,
         s->posts_by_mode[JB_DURABILITY_NONE],
         s->posts_by_mode[JB_DURABILITY_NORMAL],
         s->posts_by_mode[JB_DURABILITY_FULL], s->claims, s->bound_claims,
         s->consumes, s->abandons, s->orphans, s->max_jobs, s->readers,
         s->readers_killed);
  drain_args da = {f->dir};
  jbt_wait_ok(jbt_fork(drain_child, &da, 60), 60000);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_assert_check_ok(f->board);
  munmap(t->tot, sizeof *t->tot);
}

/* One writer at a time. A commit in normal or full waits for the disk
 * (several ms on a loaded machine): those writers get longer, to be
 * killed in the middle of their work as often as in their open. */
static const plan one_writer = {
    all_modes, 1, CLAIMS_STAY, 1, 1, false, false,
    {[JB_DURABILITY_NONE] = 25000, [JB_DURABILITY_NORMAL] = 100000,
     [JB_DURABILITY_FULL] = 100000}};

/* Each extra round when the writers did too little: a starved machine may
 * not run a writer as far as its first claim within the 25 ms window of
 * none, so the window doubles each time, up to 400 ms (kills still land
 * at random moments, only over more of the writer's life). */
static void widen_none_window(plan *p) {
  unsigned *w = &p->kill_window_us[JB_DURABILITY_NONE];
  if (*w < 400000) *w *= 2;
}

static void acknowledged_work_survives_kill_9_at_random_moments(
    void **state) {
  jbt_fixture *f = *state;
  torture t;
  torture_begin(&t, f, "kill -9 torture");
  int64_t t0 = jbt_now_ms();
  plan p = one_writer;
  static const size_t kills[3] = {60, 20, 20}; /* none, normal, full */
  for (int m = 0; m < 3; m++) {
    p.modes = &all_modes[m];
    run_torture(&t, &p, kills[m]);
  }
  /* The writers did real work between kills (not just dying in open): on
   * a loaded machine a writer gets less done before its kill, so more
   * kills (in none) make up for it, up to four times as many. */
  for (int extra = 0; extra < 30 && (t.tot->posts < 200 ||
                                     t.tot->claims < 100 ||
                                     t.tot->consumes < 40);
       extra++) {
    p.modes = &all_modes[0];
    widen_none_window(&p);
    run_torture(&t, &p, 10);
  }
  assert_true(t.tot->posts >= 200);
  assert_true(t.tot->claims >= 100);
  assert_true(t.tot->consumes >= 40);
  torture_end(&t, f, "one writer at a time", t0);
}

/* The same kills with every claim bound to the writer's process (a third
 * of them leased too): after each, check passes, acknowledged posts are
 * there, and no job is held by the dead writer. */
static void claims_of_a_killed_process_lapse_after_kill_9(void **state) {
  jbt_fixture *f = *state;
  torture t;
  torture_begin(&t, f, "kill -9 torture, process-bound claims");
  int64_t t0 = jbt_now_ms();
  plan p = one_writer;
  p.claims = CLAIMS_BOUND;
  static const size_t kills[2] = {30, 10}; /* none, normal */
  for (int m = 0; m < 2; m++) {
    p.modes = &all_modes[m];
    run_torture(&t, &p, kills[m]);
  }
  /* Enough bound claims to mean something, however loaded the machine
   * (see above): more kills in none until then, up to four times as
   * many. */
  for (int extra = 0; extra < 12 && t.tot->bound_claims < 50; extra++) {
    p.modes = &all_modes[0];
    widen_none_window(&p);
    run_torture(&t, &p, 10);
  }
  assert_true(t.tot->bound_claims >= 50);
  torture_end(&t, f, "one writer at a time, process-bound claims", t0);
}

static size_t mixed_kills = MIXED_KILLS;

/* Writers of every durability at once on one board, killed at random
 * moments while the others go on, readers meanwhile: no mode loses what
 * it acknowledged, whatever the others do. */
static void writers_of_every_mode_at_once_survive_kill_9(void **state) {
  jbt_fixture *f = *state;
  torture t;
  torture_begin(&t, f, "kill -9 torture, writers of every mode at once");
  printf("# %zu kills (JB_TORTURE_KILLS; make check: %d)\n", mixed_kills,
         MIXED_KILLS);
  int64_t t0 = jbt_now_ms();
  /* Writers in none wait for the writer lock while a writer in normal or
   * full flushes its commit: every writer gets as long. */
  const plan p = {all_modes, 3, CLAIMS_MIXED, 3, MAX_AT_ONCE, true, true,
                  {150000, 150000, 150000}};
  run_torture(&t, &p, mixed_kills);
  /* Writers of every mode did real work, readers ran. */
  for (int m = 0; m < 3; m++)
    assert_true(t.tot->posts_by_mode[all_modes[m]] >= mixed_kills / 30);
  assert_true(t.tot->bound_claims >= mixed_kills / 10);
  assert_true(t.tot->readers >= mixed_kills / 10);
  torture_end(&t, f, "writers of every mode at once", t0);
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: tests/test_torture [--help]\n"
          "kill -9 torture of the board: writers of every durability mode\n"
          "killed at random moments, the board verified after each round.\n"
          "  JB_TORTURE_KILLS=N  kills of the mixed test (default %d); the\n"
          "                      long form: " LONG_FORM "\n"
          "  JB_TEST_SEED=S      repeat a run's schedule (printed as it starts)\n",
          MIXED_KILLS);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    bool help = strcmp(argv[1], "--help") == 0;
    if (!help) fprintf(stderr, "test_torture: unknown argument '%s'\n", argv[1]);
    usage(help ? stdout : stderr);
    return help ? 0 : 2;
  }
  const char *env = getenv("JB_TORTURE_KILLS");
  if (env && *env) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(env, &end, 10);
    if (*end || errno || n < 1 || n > 10000000 || !isdigit((unsigned char)*env)) {
      fprintf(stderr, "test_torture: JB_TORTURE_KILLS='%s' is not a number "
              "of kills (1..10000000)\n", env);
      return 2;
    }
    mixed_kills = (size_t)n;
  }
  /* The two fixed tests take under a minute; the mixed one about 0.1 s a
   * kill on a loaded machine: a hang fails instead of hanging. */
  jbt_watchdog((unsigned)(600 + mixed_kills / 2));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          acknowledged_work_survives_kill_9_at_random_moments, jbt_setup,
          jbt_teardown),
      cmocka_unit_test_setup_teardown(
          claims_of_a_killed_process_lapse_after_kill_9, jbt_setup,
          jbt_teardown),
      cmocka_unit_test_setup_teardown(
          writers_of_every_mode_at_once_survive_kill_9, jbt_setup,
          jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
