/*
 * test_powerloss.c - power loss, simulated from every write and flush the
 * library makes.
 *
 * tests/iolayer.c sits between the library (and liblmdb) and the file
 * system and records every write to the board's data.mdb (offset and
 * bytes) and every flush, with a marker after each acknowledged call. A
 * workload of posts, batch posts, claim-nexts, consumes and abandons runs
 * on a board with a small map (so the map grows too). Then, for every
 * point of the record, crash states are built the way ALICE, CrashMonkey
 * or SQLite's crash tests build them:
 *
 *  - the file as it was when recording began (flushed by the test), plus
 *    every write made before the file's last completed flush, plus every
 *    write on an O_DSYNC descriptor (durable when it returns);
 *  - plus any subset of the later ("pending") writes, each kept whole,
 *    dropped, or torn into 512-byte sectors each kept or not, applied in
 *    any order (where pending writes overlap, any of their versions may be
 *    the one on disk); an O_DSYNC write in flight at the crash is pending
 *    too; the file is as long as the writes applied make it.
 * With few pending writes every keep/drop subset is built; beyond that,
 * and for the torn ones, seeded random samples (the seed is printed).
 *
 * Each state is written to a fresh directory (data.mdb only: the lock and
 * signal files are rebuilt) and opened by the library, which requires:
 * it opens; jb_board_check finds nothing; the listing (uuid, owner,
 * sequence of every job) equals the one the workload saw after an
 * acknowledged call: in durability full, the last acknowledged one or the
 * one in flight; in normal, also the one before the last (normal may lose
 * the last commit); and four more writes and a second check pass (a free
 * list that marks live pages free would show there).
 *
 * Before any crash state, the record is proved complete: replaying every
 * write in order onto the starting file must give the file byte for byte,
 * so no write went around the layer.
 *
 * Durability none is run through the same states and REPORTED, not
 * asserted (it never flushes: a power loss may lose or corrupt anything),
 * except its crash states that keep every write in order up to the crash
 * point, which are what kill -9 leaves and must be as good as full's.
 * Its states are opened in forked children with a deadline (a damaged
 * tree can crash or loop the reader); full's and normal's in this
 * process, where a crash is this test's failure.
 *
 * The count of crash states is printed. The long run (thousands of
 * states; a longer workload, more samples per point):
 *
 *   JB_POWERLOSS_LONG=1 tests/test_powerloss
 *
 * (tests/test_powerloss --help says so too). JB_TEST_SEED=<n> repeats a
 * run's random choices; JB_POWERLOSS_TRACE=1 prints each state before it
 * is judged (to name the one that crashed the test).
 */
#include "helpers.h"
#include "iolayer.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECTOR 512u
#define MAP_SIZE (48u * 1024u)
/* Up to this many pending writes, every keep/drop subset is built. */
#define EXHAUSTIVE_MAX 4u

typedef struct {
  bool long_run;
  unsigned ops;     /* calls of the workload */
  unsigned samples; /* random (torn) states per crash point */
  unsigned none_stride; /* durability none: every how many crash points */
} plan;

static plan the_plan(void) {
  const char *l = getenv("JB_POWERLOSS_LONG");
  bool longr = l && *l && strcmp(l, "0") != 0;
  return longr ? (plan){true, 160, 8, 4} : (plan){false, 16, 1, 3};
}

/* ------------------------------------------------------------ listings */

/* What a reader sees of the board: one line per job, in listing order,
 * "uuid owner sequence". malloc'd; NULL (message in jb_errmsg) if the
 * board cannot be read. */
static char *listing(jb_board *b) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (mem == NULL) return NULL;
  jb_iter *it = NULL;
  int rc = jb_iter_open(&it, b, 0);
  while (rc == JB_OK) {
    const jb_job *j = NULL;
    rc = jb_iter_next(&j, it);
    if (rc != JB_OK || j == NULL) break;
    fprintf(mem, "%s %s %llu\n", jb_job_uuid(j),
            jb_job_owner(j) ? jb_job_owner(j) : "-",
            (unsigned long long)jb_job_sequence(j));
  }
  jb_iter_close(it);
  fclose(mem);
  if (rc != JB_OK) {
    free(text);
    return NULL;
  }
  return text;
}

/* ------------------------------------------------------------ workload */

typedef struct {
  char **v; /* v[k]: the listing after the k-th acknowledged call */
  size_t n, cap;
} models;

static void model_add(models *m, jb_board *b) {
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 64;
    m->v = realloc(m->v, m->cap * sizeof *m->v);
    assert_non_null(m->v);
  }
  char *l = listing(b);
  if (l == NULL) fail_msg("listing the live board: %s", jb_errmsg());
  m->v[m->n++] = l;
}

static void models_free(models *m) {
  for (size_t i = 0; i < m->n; i++) free(m->v[i]);
  free(m->v);
  memset(m, 0, sizeof *m);
}

/* One acknowledged call: the marker goes into the record right after the
 * call returned, and the board as the caller now knows it into `m`. */
static void acked(models *m, jb_board *b) {
  iol_ack();
  model_add(m, b);
}

#define MAX_HELD 64

/* The workload: every call is one commit that returned JB_OK. */
static void workload(jb_board *b, models *m, unsigned ops, unsigned *seed) {
  char held[MAX_HELD][JB_UUID_STRLEN];
  unsigned nheld = 0;
  for (unsigned done = 0; done < ops;) {
    unsigned r = (unsigned)rand_r(seed);
    unsigned what = r % 10;
    int rc;
    if (what < 3 || (what < 6 && nheld == 0)) {
      /* A post; sizes from a few bytes to overflow pages (and growth). */
      jbt_buf d = jbt_details_blob(50 + (r >> 8) % 6000, r);
      jb_post p = JB_POST_INIT;
      p.name = "powerloss";
      p.priority = (jb_priority)((r >> 4) % 5);
      p.details = d.data;
      p.details_len = d.len;
      char uuid[JB_UUID_STRLEN];
      rc = jb_job_post(uuid, b, &p);
      jbt_buf_free(&d);
      if (rc != JB_OK) fail_msg("post: %s", jb_errmsg());
    } else if (what == 3) {
      jb_post p[3];
      for (int k = 0; k < 3; k++) {
        p[k] = (jb_post)JB_POST_INIT;
        p[k].name = "powerloss-batch";
      }
      char uuids[3][JB_UUID_STRLEN];
      rc = jb_job_post_batch(uuids, b, p, 3);
      if (rc != JB_OK) fail_msg("batch post: %s", jb_errmsg());
    } else if (what < 7 && nheld < MAX_HELD) {
      rc = jb_claim_next(held[nheld], NULL, NULL, b, "worker", NULL);
      if (rc == JB_ENOTFOUND) continue; /* nothing to claim: no commit */
      if (rc != JB_OK) fail_msg("claim-next: %s", jb_errmsg());
      nheld++;
    } else if (nheld > 0) {
      unsigned k = (r >> 8) % nheld;
      rc = what < 9 ? jb_consume(b, held[k], "worker", 0, NULL)
                    : jb_abandon(b, held[k], "worker", 0);
      if (rc != JB_OK) fail_msg("consume/abandon: %s", jb_errmsg());
      memcpy(held[k], held[--nheld], JB_UUID_STRLEN);
    } else {
      continue;
    }
    acked(m, b);
    done++;
  }
}

/* --------------------------------------------------------- file images */

typedef struct {
  uint8_t *buf;
  size_t size, cap;
} image;

static void img_reserve(image *im, size_t size) {
  if (size <= im->cap) return;
  size_t cap = im->cap ? im->cap : 65536;
  while (cap < size) cap *= 2;
  im->buf = realloc(im->buf, cap);
  assert_non_null(im->buf);
  im->cap = cap;
}

/* Put `len` bytes at `off`; a gap past the end reads as zeros. */
static void img_put(image *im, uint64_t off, const uint8_t *d, size_t len) {
  size_t end = (size_t)off + len;
  img_reserve(im, end);
  if (off > im->size) memset(im->buf + im->size, 0, (size_t)off - im->size);
  memcpy(im->buf + off, d, len);
  if (end > im->size) im->size = end;
}

static void img_copy(image *dst, const image *src) {
  img_reserve(dst, src->size);
  memcpy(dst->buf, src->buf, src->size);
  dst->size = src->size;
}

static void read_file(image *im, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  img_reserve(im, (size_t)st.st_size);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t r = pread(fd, im->buf + got, (size_t)st.st_size - got, (off_t)got);
    if (r <= 0) fail_msg("read %s: %s", path, strerror(errno));
    got += (size_t)r;
  }
  im->size = got;
  close(fd);
}

static void write_file(const char *path, const image *im) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0664);
  if (fd < 0) fail_msg("create %s: %s", path, strerror(errno));
  size_t put = 0;
  while (put < im->size) {
    ssize_t r = write(fd, im->buf + put, im->size - put);
    if (r <= 0) fail_msg("write %s: %s", path, strerror(errno));
    put += (size_t)r;
  }
  close(fd);
}

static uint64_t img_hash(const image *im) {
  uint64_t h = 1469598103934665603ull ^ im->size;
  for (size_t i = 0; i < im->size; i++) h = (h ^ im->buf[i]) * 1099511628211ull;
  return h;
}

/* The map size the newer of the file's two meta pages records. LMDB's
 * layout (mdb.c, MDB_meta after a 16-byte page header): magic, version,
 * address, mapsize, ..., and the txnid last of its 136 bytes. */
static uint64_t map_size_of(const image *im) {
  enum { PAGE = 4096, META = 16, MAPSIZE = META + 16, TXNID = META + 128 };
  uint64_t best_txn = 0, size = 0;
  for (size_t p = 0; p < 2 && (p + 1) * PAGE <= im->size; p++) {
    uint64_t txn, ms;
    memcpy(&txn, im->buf + p * PAGE + TXNID, 8);
    memcpy(&ms, im->buf + p * PAGE + MAPSIZE, 8);
    if (p == 0 || txn > best_txn) best_txn = txn, size = ms;
  }
  return size;
}

/* ---------------------------------------------------------- crash states */

typedef struct {
  const iol_event *ev;
  size_t n;
  const image *base;
} record;

/* How a pending write reaches the disk. */
enum { DROP = 0, KEEP = 1, TORN = 2 };

/* A crash at point `c` (events [0, c) completed; an O_DSYNC write at c is
 * in flight): the writes that are durable and the pending ones. */
typedef struct {
  size_t c;
  unsigned acks;     /* acknowledged calls before c */
  size_t *pending;   /* event indexes, in event order */
  size_t npending;
  long last_flush;   /* index of the last flush before c, or -1 */
} crash_point;

static void point_at(crash_point *p, const record *r, size_t c) {
  p->c = c;
  p->acks = 0;
  p->last_flush = -1;
  p->npending = 0;
  for (size_t i = 0; i < c; i++) {
    if (r->ev[i].kind == IOL_FLUSH) p->last_flush = (long)i;
    if (r->ev[i].kind == IOL_ACK) p->acks++;
  }
  for (size_t i = (size_t)(p->last_flush + 1); i < c; i++)
    if (r->ev[i].kind == IOL_WRITE && !r->ev[i].dsync)
      p->pending[p->npending++] = i;
  if (c < r->n && r->ev[c].kind == IOL_WRITE && r->ev[c].dsync)
    p->pending[p->npending++] = c;
}

/* Is sector `s` of write `i` overwritten by a durable O_DSYNC write made
 * after it and before the crash? Then that version is the one on disk. */
static bool later_durable(const record *r, const crash_point *p, size_t i,
                          uint64_t s) {
  for (size_t j = i + 1; j < p->c; j++) {
    const iol_event *e = &r->ev[j];
    if (e->kind != IOL_WRITE || !e->dsync) continue;
    if (s * SECTOR < e->off + e->len && e->off < (s + 1) * SECTOR) return true;
  }
  return false;
}

/* Apply pending write `i` with `mode`; for TORN, each sector it touches
 * is kept with probability 1/2 (a partial first or last sector stands for
 * the part of the write inside it). */
/* Put the part of write `e` inside sector `s`. */
static void put_sector(image *im, const iol_event *e, uint64_t s) {
  uint64_t end = e->off + e->len;
  uint64_t from = s * SECTOR > e->off ? s * SECTOR : e->off;
  uint64_t to = (s + 1) * SECTOR < end ? (s + 1) * SECTOR : end;
  img_put(im, from, e->data + (from - e->off), (size_t)(to - from));
}

static void apply_pending(image *im, const record *r, const crash_point *p,
                          size_t i, int mode, unsigned *seed) {
  const iol_event *e = &r->ev[i];
  if (mode == DROP) return;
  for (uint64_t s = e->off / SECTOR; s * SECTOR < e->off + e->len; s++) {
    if (mode == TORN && rand_r(seed) % 2) continue;
    if (!later_durable(r, p, i, s)) put_sector(im, e, s);
  }
}

/* Build the state: durable writes in order onto the base, then the
 * pending ones with `modes` in `order`. */
static void build(image *im, const record *r, const crash_point *p,
                  const int *modes, const size_t *order, unsigned *seed) {
  img_copy(im, r->base);
  for (long i = 0; i <= p->last_flush; i++)
    if (r->ev[i].kind == IOL_WRITE)
      img_put(im, r->ev[i].off, r->ev[i].data, r->ev[i].len);
  for (size_t i = (size_t)(p->last_flush + 1); i < p->c; i++)
    if (r->ev[i].kind == IOL_WRITE && r->ev[i].dsync)
      img_put(im, r->ev[i].off, r->ev[i].data, r->ev[i].len);
  for (size_t k = 0; k < p->npending; k++)
    apply_pending(im, r, p, p->pending[order[k]], modes[order[k]], seed);
}

/* ------------------------------------------------------ checking a state */

typedef enum {
  ST_OK = 0,       /* opens, checks, holds what the mode promises */
  ST_LOST = 1,     /* opens and checks, but holds an older acknowledged state */
  ST_UNKNOWN = 2,  /* opens and checks, but its listing is no acked state */
  ST_BROKEN = 3,   /* does not open, fails check, or fails after writes */
} outcome;

typedef struct {
  const char *dir;
  const models *m;
  unsigned acks;   /* acknowledged calls before the crash */
  unsigned oldest; /* the oldest acknowledged state the mode allows */
} check_args;

/* The verdict on a state, with why (into msg). */
static outcome verdict(char *msg, size_t n, outcome o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static outcome verdict(char *msg, size_t n, outcome o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, n, fmt, ap);
  va_end(ap);
  return o;
}

static void count_problem(const char *line, void *payload) {
  (void)line;
  (*(unsigned *)payload)++;
}

/* The newest acknowledged state (or the one in flight) whose listing the
 * board's equals, or -1 (-2: the board cannot be listed). */
static long matching_state(jb_board *b, const check_args *a) {
  char *l = listing(b);
  if (l == NULL) return -2;
  long match = -1;
  unsigned top = a->acks + 1 < a->m->n ? a->acks + 1 : (unsigned)a->m->n - 1;
  for (long k = (long)top; k >= 0 && match < 0; k--)
    if (strcmp(l, a->m->v[k]) == 0) match = k;
  free(l);
  return match;
}

/* Four writes and a second check: the recovered board must keep working
 * (a free list that marks live pages free shows here). */
static int write_after_recovery(jb_board *b) {
  char u[JB_UUID_STRLEN];
  int rc = JB_OK;
  for (int i = 0; i < 2 && rc == JB_OK; i++) {
    jbt_buf d = jbt_details_blob(3000, (unsigned)i);
    jb_post p = JB_POST_INIT;
    p.name = "after";
    p.details = d.data;
    p.details_len = d.len;
    rc = jb_job_post(u, b, &p);
    jbt_buf_free(&d);
  }
  if (rc == JB_OK) rc = jb_claim_next(u, NULL, NULL, b, "after", NULL);
  if (rc == JB_OK) rc = jb_consume(b, u, "after", 0, NULL);
  unsigned lines = 0;
  jb_check_stats st;
  if (rc == JB_OK) rc = jb_board_check(&st, b, count_problem, &lines);
  return rc;
}

/* Open the state in a->dir and judge it. */
static outcome judge(const check_args *a, char *msg, size_t n) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE; /* a scratch copy: no flush needed */
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK)
    return verdict(msg, n, ST_BROKEN, "open: %s", jb_errmsg());
  unsigned lines = 0;
  jb_check_stats st;
  int rc = jb_board_check(&st, b, count_problem, &lines);
  long match = rc == JB_OK && !st.problems ? matching_state(b, a) : -3;
  outcome out;
  if (match == -3)
    out = verdict(msg, n, ST_BROKEN, "check: %s, %zu problems", jb_errmsg(),
                  st.problems);
  else if (match == -2)
    out = verdict(msg, n, ST_BROKEN, "listing: %s", jb_errmsg());
  else if (write_after_recovery(b) != JB_OK)
    out = verdict(msg, n, ST_BROKEN, "writing after recovery: %s",
                  jb_errmsg());
  else if (match < 0)
    out = verdict(msg, n, ST_UNKNOWN,
                  "its jobs are no acknowledged state (%u calls "
                  "acknowledged)",
                  a->acks);
  else if ((unsigned)match < a->oldest)
    out = verdict(msg, n, ST_LOST,
                  "holds the state after call %ld, but %u calls were "
                  "acknowledged",
                  match, a->acks);
  else
    out = verdict(msg, n, ST_OK, "state %ld", match);
  jb_board_close(b);
  return out;
}

/* Durability none's states may crash or hang the reader: judged in a
 * child, which reports "<outcome> <why>" on `fd`. */
typedef struct {
  const check_args *a;
  int fd;
} child_args;

static int judge_child(void *arg) {
  child_args *c = arg;
  /* A crash here is the state's failure: die of it (cmocka's handlers,
   * inherited, would go on running the tests in this child), with
   * LMDB's and ASan's cries to /dev/null. */
  const int sigs[] = {SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    signal(sigs[i], SIG_DFL);
  int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) dup2(null, 2);
  char msg[1000], line[1024];
  outcome o = judge(c->a, msg, sizeof msg);
  snprintf(line, sizeof line, "%d %s", (int)o, msg);
  ssize_t w = write(c->fd, line, strlen(line));
  (void)w;
  return 0;
}

/* Judge in a child with a deadline of `limit` seconds; `hung` counts
 * readers that ran out of it. */
static outcome judge_forked(const check_args *a, char *msg, size_t n,
                            unsigned limit, unsigned *hung) {
  int fds[2];
  if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
  child_args c = {a, fds[1]};
  pid_t pid = jbt_fork(judge_child, &c, limit);
  close(fds[1]);
  char line[1024] = "";
  size_t got = 0;
  ssize_t r;
  while (got < sizeof line - 1 &&
         (r = read(fds[0], line + got, sizeof line - 1 - got)) > 0)
    got += (size_t)r;
  line[got] = '\0';
  close(fds[0]);
  int st = jbt_wait(pid, (int)limit * 1000 + 1000);
  if (st != -1 && WIFEXITED(st) && got >= 2)
    return verdict(msg, n, (outcome)(line[0] - '0'), "%s", line + 2);
  if (st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
    (*hung)++;
    return verdict(msg, n, ST_BROKEN, "the reader did not finish in %u s",
                   limit);
  }
  return verdict(msg, n, ST_BROKEN, "the reader died (wait status %d)", st);
}

typedef struct {
  jb_durability mode;
  const record *r;
  const models *m;
  char *dir;   /* scratch directory for the states */
  unsigned states, by[4], hung, lost_last;
  unsigned clean_states, clean_ok; /* states that keep every write in order */
  char first_bad[1400];
  /* Distinct (image, acks) pairs already checked. */
  uint64_t *seen;
  size_t nseen, capseen;
} run_ctx;

static bool seen_before(run_ctx *x, uint64_t h) {
  for (size_t i = 0; i < x->nseen; i++)
    if (x->seen[i] == h) return true;
  if (x->nseen == x->capseen) {
    x->capseen = x->capseen ? x->capseen * 2 : 1024;
    x->seen = realloc(x->seen, x->capseen * sizeof *x->seen);
    assert_non_null(x->seen);
  }
  x->seen[x->nseen++] = h;
  return false;
}

/* Materialise and check one state; `clean`: it keeps every write up to
 * the crash point, in order (what kill -9 leaves). */
static void check_state(run_ctx *x, const image *im, const crash_point *p,
                        const char *how, bool clean) {
  if (seen_before(x, img_hash(im) * 31u + p->acks)) return;
  jbt_rmtree(x->dir);
  if (mkdir(x->dir, 0775) != 0) fail_msg("mkdir %s: %s", x->dir, strerror(errno));
  char *data = jbt_path(x->dir, "data.mdb");
  write_file(data, im);
  free(data);
  unsigned allowed_back = x->mode == JB_DURABILITY_NORMAL ? 1 : 0;
  check_args a = {x->dir, x->m, p->acks,
                  p->acks >= allowed_back ? p->acks - allowed_back : 0};
  /* Full's and normal's states are judged here: a crash or a loop in
   * them is this test's failure. None's, in a child with a short
   * deadline (a damaged tree can loop). */
  char msg[1000];
  if (getenv("JB_POWERLOSS_TRACE")) { /* which state crashed the test */
    printf("# judging: crash after event %zu (%u acknowledged, %zu pending, "
           "%s)\n", p->c, p->acks, p->npending, how);
    fflush(stdout);
  }
  outcome o = x->mode == JB_DURABILITY_NONE
                  ? judge_forked(&a, msg, sizeof msg, 1, &x->hung)
                  : judge(&a, msg, sizeof msg);
  x->states++;
  x->by[o]++;
  if (o == ST_OK && strtol(msg + 6, NULL, 10) < (long)p->acks)
    x->lost_last++; /* normal's allowance: the last commit gone */
  if (clean) {
    x->clean_states++;
    if (o == ST_OK) x->clean_ok++;
  }
  if (o != ST_OK && x->first_bad[0] == '\0')
    snprintf(x->first_bad, sizeof x->first_bad,
             "crash after event %zu of %zu (%u calls acknowledged, %zu "
             "pending writes, %s): %s",
             p->c, x->r->n, p->acks, p->npending, how, msg);
}

/* All the states of crash point `p` (with `subsets`; without, only the
 * random samples). */
static void states_at(run_ctx *x, crash_point *p, unsigned samples,
                      bool subsets_too, unsigned *seed) {
  size_t np = p->npending;
  int *modes = calloc(np + 1, sizeof *modes);
  size_t *order = calloc(np + 1, sizeof *order);
  assert_true(modes && order);
  image im = {0};
  for (size_t k = 0; k < np; k++) order[k] = k;
  /* Every keep/drop subset, in event order; or the two ends. */
  unsigned long subsets = np <= EXHAUSTIVE_MAX ? 1ul << np : 0;
  if (!subsets_too) subsets = 1; /* neither the subsets nor the two ends */
  for (unsigned long mask = 0; subsets_too && mask < subsets; mask++) {
    for (size_t k = 0; k < np; k++) modes[k] = (mask >> k) & 1 ? KEEP : DROP;
    build(&im, x->r, p, modes, order, seed);
    check_state(x, &im, p, "whole writes kept or dropped",
                mask == subsets - 1);
  }
  if (subsets == 0 && subsets_too) {
    for (int keep = 0; keep < 2; keep++) {
      for (size_t k = 0; k < np; k++) modes[k] = keep ? KEEP : DROP;
      build(&im, x->r, p, modes, order, seed);
      check_state(x, &im, p, keep ? "every write kept" : "every write dropped",
                  keep == 1);
    }
  }
  /* Random samples: kept, dropped or torn, applied in a random order. */
  for (unsigned s = 0; np > 0 && s < samples; s++) {
    for (size_t k = 0; k < np; k++) {
      modes[k] = rand_r(seed) % 3;
      order[k] = k;
    }
    for (size_t k = np; k > 1; k--) {
      size_t j = (size_t)rand_r(seed) % k;
      size_t t = order[k - 1];
      order[k - 1] = order[j];
      order[j] = t;
    }
    build(&im, x->r, p, modes, order, seed);
    check_state(x, &im, p, "random keep/drop/torn, random order", false);
  }
  free(im.buf);
  free(modes);
  free(order);
}

/* ------------------------------------------------------------- the runs */

static void fsync_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
  if (fsync(fd) != 0) fail_msg("fsync %s: %s", path, strerror(errno));
  close(fd);
}

static void run_mode(jb_durability mode) {
  plan pl = the_plan();
  char what[64];
  snprintf(what, sizeof what, "power loss, durability %s",
           jb_durability_name(mode));
  unsigned seed = jbt_seed(what);
  int64_t t0 = jbt_now_ms();
  char *top = jbt_mkdtemp();
  char *dir = jbt_path(top, "board");
  char *data = jbt_path(dir, "data.mdb");

  /* A board with a few jobs, closed and flushed: the starting file. */
  jb_board *b = jbt_open(dir, mode, MAP_SIZE);
  for (int i = 0; i < 3; i++) jbt_post(NULL, b, "before", JB_PRIORITY_NORMAL);
  jb_board_close(b);
  fsync_path(data);
  image base = {0};
  read_file(&base, data);

  /* The workload, recorded. */
  iol_follow(dir);
  iol_record(true);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = mode;
  o.map_size = MAP_SIZE;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_OK);
  models m = {0};
  model_add(&m, b);
  workload(b, &m, pl.ops, &seed);
  jb_board_close(b);
  iol_record(false);
  iol_follow(NULL);

  record r = {NULL, 0, &base};
  r.ev = iol_events(&r.n);
  size_t writes = 0, flushes = 0, dsync = 0;
  for (size_t i = 0; i < r.n; i++) {
    if (r.ev[i].kind == IOL_WRITE) writes++, dsync += r.ev[i].dsync;
    if (r.ev[i].kind == IOL_FLUSH) flushes++;
  }
  /* The layer saw LMDB's calls: writes in every mode, flushes except in
   * none, O_DSYNC meta writes only in full. */
  assert_true(writes > 0);
  assert_true(m.n > 1);
  if (mode == JB_DURABILITY_NONE) assert_int_equal(flushes, 0);
  else assert_true(flushes >= m.n - 1);
  if (mode == JB_DURABILITY_FULL) assert_true(dsync >= m.n - 1);
  else assert_int_equal(dsync, 0);
  /* ... all of them: replaying every write gives the file. */
  image all = {0}, real = {0};
  img_copy(&all, &base);
  for (size_t i = 0; i < r.n; i++)
    if (r.ev[i].kind == IOL_WRITE)
      img_put(&all, r.ev[i].off, r.ev[i].data, r.ev[i].len);
  read_file(&real, data);
  assert_int_equal(all.size, real.size);
  assert_true(memcmp(all.buf, real.buf, all.size) == 0);
  /* ... and the map grew while it was recorded. */
  assert_true(map_size_of(&all) > map_size_of(&base));

  run_ctx x = {.mode = mode, .r = &r, .m = &m};
  x.dir = jbt_path(top, "crash");
  crash_point p = {0};
  p.pending = calloc(r.n + 1, sizeof *p.pending);
  assert_non_null(p.pending);
  /* None's states are many and slow (damaged trees): a sample of its
   * crash points in the short run. */
  size_t stride = mode == JB_DURABILITY_NONE ? pl.none_stride : 1;
  for (size_t c = 0; c <= r.n; c += stride) {
    point_at(&p, &r, c);
    states_at(&x, &p, pl.samples, true, &seed);
  }
  /* The workload's writes vary from run to run (the random choices, the
   * map's growth): fewer crash points than usual get more random samples
   * each, until the run has checked the states it promises. */
  unsigned want = pl.long_run ? 1000u : mode == JB_DURABILITY_NONE ? 50u : 200u;
  for (int pass = 0; x.states < want && pass < 64; pass++) {
    unsigned before = x.states;
    for (size_t c = 0; c <= r.n && x.states < want; c += stride) {
      point_at(&p, &r, c);
      states_at(&x, &p, 1, false, &seed);
    }
    if (x.states == before) break; /* no crash point has a write pending */
  }
  int64_t ms = jbt_now_ms() - t0;
  printf("# power loss, durability %s: %u crash states checked (%zu crash "
         "points; %zu writes, %zu flushes, %zu acknowledged calls; %.1f s%s)\n",
         jb_durability_name(mode), x.states, (r.n + stride) / stride, writes,
         flushes,
         m.n - 1, (double)ms / 1000, pl.long_run ? ", long run" : "");
  printf("#   %u hold what the mode promises, %u lost acknowledged calls, "
         "%u hold no acknowledged state, %u broken (do not open, fail "
         "check, fail after writes, or crash the reader; %u readers "
         "looped)\n",
         x.by[ST_OK], x.by[ST_LOST], x.by[ST_UNKNOWN], x.by[ST_BROKEN], x.hung);
  printf("#   of them %u states keep every write in order (what kill -9 "
         "leaves): %u good; %u good ones lost the last acknowledged "
         "commit\n",
         x.clean_states, x.clean_ok, x.lost_last);
  if (x.first_bad[0]) printf("#   first bad state: %s\n", x.first_bad);
  fflush(stdout);

  /* Full and normal keep their promise in every state; none only in the
   * in-order ones (kill -9). */
  assert_true(x.states >= want);
  if (mode != JB_DURABILITY_NONE && x.by[ST_OK] != x.states)
    fail_msg("durability %s: %u of %u crash states break its promise; "
             "first: %s",
             jb_durability_name(mode), x.states - x.by[ST_OK], x.states,
             x.first_bad);
  if (x.clean_ok != x.clean_states)
    fail_msg("durability %s: a state that keeps every write in order "
             "(kill -9) is bad: %s",
             jb_durability_name(mode), x.first_bad);

  free(p.pending);
  free(x.seen);
  free(all.buf);
  free(real.buf);
  free(base.buf);
  iol_clear();
  models_free(&m);
  jbt_rmtree(top);
  free(x.dir);
  free(data);
  free(dir);
  free(top);
}

/* --------------------------------------------------- durability interval */

/*
 * Durability interval, with several processes: two interval writers and
 * two full writers share the board (the full ones share records: one
 * skips its flush when another's record or flush holds its commit), each running posts, batches,
 * claim-nexts, consumes and abandons, the interval ones flushing every few
 * milliseconds (so the record holds many flushes and many records). The
 * layer follows data.mdb and the steady file, in one order for all the
 * processes. A crash state is then, for each file apart, what its last
 * completed flush holds plus any subset of its later writes, kept,
 * dropped or torn into sectors, in any order. Each state is opened as
 * after a reboot (another boot id: the restore runs) and must open, pass
 * check, keep working after four writes, and list exactly the board as
 * it was after some commit t, with t at least the newest record whose
 * flush completed before the crash and at least every commit a full
 * writer acknowledged. What the board was after commit t is the file
 * with every write up to commit t's meta page, opened the same way.
 *
 * The mutations (tests/test_steady.c's hooks): without the pin, later
 * commits rewrite the recorded state's pages; without the restore, a
 * newer meta page over pages that never reached the disk stays. Both
 * must show as bad states here; they are run and reported, and each must
 * find at least one.
 */
void jb__steady_test_boot(const uint8_t *boot);
void jb__steady_test_mutate(unsigned flags);
enum { NO_PIN = 1, NO_RESTORE = 2 }; /* store/steady.h's JB_STEADY_TEST_* */

#define INT_PROCS 4
#define PAGE 4096u

static const uint8_t reboot_id[16] = {0xde, 0xad, 0xb0, 0x07, 1, 2, 3, 4,
                                      5, 6, 7, 8, 9, 10, 11, 12};

typedef struct {
  const char *dir;
  unsigned idx, ops, seed;
  jb_durability mode;
  int64_t flush_ms;
} int_child;

static uint64_t latest_txnid(jb_board *b) {
  jb_flush_info fi;
  return jb_board_flush_info(&fi, b) == JB_OK ? fi.latest_txnid : 0;
}

/* One writer process of the interval workload. */
static int interval_child(void *arg) {
  int_child *c = arg;
  /* A crash here must end this process (cmocka's handlers, inherited,
   * would run the rest of the suite in it, into the shared record). */
  const int sigs[] = {SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    signal(sigs[i], SIG_DFL);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = c->mode;
  o.map_size = MAP_SIZE;
  o.flush_interval_ms = c->flush_ms;
  jb_board *b = NULL;
  if (jb_board_open(&b, c->dir, &o) != JB_OK) {
    fprintf(stderr, "writer %u: open: %s\n", c->idx, jb_errmsg());
    return 20;
  }
  char who[16];
  snprintf(who, sizeof who, "w%u", c->idx);
  char held[MAX_HELD][JB_UUID_STRLEN];
  unsigned nheld = 0, seed = c->seed;
  for (unsigned done = 0; done < c->ops;) {
    unsigned r = (unsigned)rand_r(&seed), what = r % 10;
    uint64_t before = latest_txnid(b);
    int rc;
    if (what < 3 || (what < 6 && nheld == 0)) {
      jbt_buf d = jbt_details_blob(50 + (r >> 8) % 5000, r);
      jb_post p = JB_POST_INIT;
      p.name = who;
      p.details = d.data;
      p.details_len = d.len;
      char uuid[JB_UUID_STRLEN];
      rc = jb_job_post(uuid, b, &p);
      jbt_buf_free(&d);
    } else if (what == 3) {
      jb_post p[2] = {JB_POST_INIT, JB_POST_INIT};
      p[0].name = p[1].name = who;
      char uuids[2][JB_UUID_STRLEN];
      rc = jb_job_post_batch(uuids, b, p, 2);
    } else if (what < 7 && nheld < MAX_HELD) {
      rc = jb_claim_next(held[nheld], NULL, NULL, b, who, NULL);
      if (rc == JB_ENOTFOUND) continue;
      if (rc == JB_OK) nheld++;
    } else if (nheld > 0) {
      unsigned k = (r >> 8) % nheld;
      rc = what < 9 ? jb_consume(b, held[k], who, 0, NULL)
                    : jb_abandon(b, held[k], who, 0);
      memcpy(held[k], held[--nheld], JB_UUID_STRLEN);
    } else {
      continue;
    }
    if (rc != JB_OK) {
      fprintf(stderr, "writer %u: %s\n", c->idx, jb_errmsg());
      return 21;
    }
    /* A full writer's commit came after `before`: it must survive. */
    iol_ack_floor(c->mode == JB_DURABILITY_FULL ? before + 1 : 0);
    done++;
    if (r % 4 == 0) usleep((r >> 12) % 3000);
  }
  if (c->idx != 0) iol_exit(0); /* as kill -9 does */
  jb_board_close(b);
  return 0;
}

/* LMDB writes only the changed tail of a meta page (from its map size on),
 * so which commit a write finished is read from the file it leaves: the
 * txnid of each meta page write, by event (0: not one), from a running
 * image of data.mdb. */
static uint64_t *meta_txnids(const iol_event *ev, size_t n, const image *base) {
  uint64_t *tx = calloc(n + 1, sizeof *tx);
  assert_non_null(tx);
  image im = {0};
  img_copy(&im, base);
  for (size_t i = 0; i < n; i++) {
    const iol_event *e = &ev[i];
    if (e->kind != IOL_WRITE || e->file != IOL_DATA) continue;
    img_put(&im, e->off, e->data, e->len);
    for (uint64_t pg = 0; pg < 2; pg++) {
      uint64_t lo = pg * PAGE + 16, hi = pg * PAGE + 152;
      if (e->off < hi && e->off + e->len > lo && im.size >= hi) {
        uint32_t magic;
        memcpy(&magic, im.buf + lo, 4);
        if (magic == 0xBEEFC0DEu) memcpy(&tx[i], im.buf + pg * PAGE + 144, 8);
      }
    }
  }
  free(im.buf);
  return tx;
}

static bool is_record_write(const iol_event *e, uint64_t *txnid) {
  if (e->kind != IOL_WRITE || e->file != IOL_STEADY) return false;
  if ((e->off != 4096 && e->off != 8192) || e->len < 32) return false;
  if (memcmp(e->data, "JBRECORD", 8) != 0) return false;
  memcpy(txnid, e->data + 16, 8); /* after its magic and sequence */
  return true;
}

/* Write both files of a state into `dir` (made fresh). */
static void put_state(const char *dir, const image *data, const image *steady) {
  jbt_rmtree(dir);
  if (mkdir(dir, 0775) != 0) fail_msg("mkdir %s: %s", dir, strerror(errno));
  char *p = jbt_path(dir, "data.mdb");
  write_file(p, data);
  free(p);
  if (steady) {
    p = jbt_path(dir, "steady");
    write_file(p, steady);
    free(p);
  }
}

/* The board as it was after each commit: v[t - t0]. */
typedef struct {
  models m;
  uint64_t t0;
} oracle;

/* The newest commit a data.mdb image holds (its newer meta page). */
static uint64_t image_txnid(const image *im) {
  uint64_t best = 0;
  for (uint64_t pg = 0; pg < 2 && (pg + 1) * PAGE <= im->size; pg++) {
    uint64_t t;
    memcpy(&t, im->buf + pg * PAGE + 144, 8);
    if (t > best) best = t;
  }
  return best;
}

/* v[k]: the listing of data.mdb with every write up to commit t0 + k's
 * meta page (v[0]: the starting file), opened as after a reboot. */
static void oracle_add(oracle *o, const image *im, const char *dir,
                       uint64_t t) {
  if (o->m.n == 0) o->t0 = t;
  if (t != o->t0 + o->m.n)
    fail_msg("commit %llu's meta page follows commit %llu's",
             (unsigned long long)t, (unsigned long long)(o->t0 + o->m.n - 1));
  put_state(dir, im, NULL);
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  jb__steady_test_boot(reboot_id);
  if (jb_board_open(&b, dir, &bo) != JB_OK)
    fail_msg("the board after commit %llu does not open: %s",
             (unsigned long long)t, jb_errmsg());
  jb__steady_test_boot(NULL);
  model_add(&o->m, b);
  jb_board_close(b);
}

static void build_oracle(oracle *o, const iol_event *ev, const uint64_t *tx,
                         size_t n, const image *base, const char *dir) {
  image im = {0};
  img_copy(&im, base);
  oracle_add(o, &im, dir, image_txnid(base));
  for (size_t i = 0; i < n; i++) {
    const iol_event *e = &ev[i];
    if (e->kind != IOL_WRITE || e->file != IOL_DATA) continue;
    img_put(&im, e->off, e->data, e->len);
    if (tx[i]) oracle_add(o, &im, dir, tx[i]);
  }
  free(im.buf);
}

/* A crash at event c, for the two files apart. */
typedef struct {
  size_t c;
  long last_flush[2];
  size_t *pending; /* event indexes, both files */
  size_t npending;
  uint64_t floor, top; /* txnids: the oldest allowed, the newest begun */
} int_point;

static void int_point_at(int_point *p, const iol_event *ev,
                         const uint64_t *tx, size_t n, size_t c,
                         uint64_t base_rec) {
  p->c = c;
  p->last_flush[0] = p->last_flush[1] = -1;
  p->npending = 0;
  p->floor = p->top = base_rec;
  uint64_t rec_written = 0; /* newest record written since the flush */
  for (size_t i = 0; i < c; i++) {
    const iol_event *e = &ev[i];
    uint64_t t;
    if (e->kind == IOL_FLUSH) {
      p->last_flush[e->file] = (long)i;
      if (e->file == IOL_STEADY && rec_written > p->floor)
        p->floor = rec_written;
    } else if (e->kind == IOL_ACK && e->floor > p->floor) {
      p->floor = e->floor;
    } else if (is_record_write(e, &t) && t > rec_written) {
      rec_written = t;
    }
    if (tx[i] > p->top) p->top = tx[i];
  }
  if (c < n && tx[c] > p->top) p->top = tx[c]; /* in flight */
  for (size_t i = 0; i < c; i++)
    if (ev[i].kind == IOL_WRITE && (long)i > p->last_flush[ev[i].file])
      p->pending[p->npending++] = i;
}

static void int_build(image im[2], const image base[2], const iol_event *ev,
                      const int_point *p, const int *modes,
                      const size_t *order, unsigned *seed) {
  for (int f = 0; f < 2; f++) {
    img_copy(&im[f], &base[f]);
    for (long i = 0; i <= p->last_flush[f]; i++)
      if (ev[i].kind == IOL_WRITE && ev[i].file == f)
        img_put(&im[f], ev[i].off, ev[i].data, ev[i].len);
  }
  for (size_t k = 0; k < p->npending; k++) {
    const iol_event *e = &ev[p->pending[order[k]]];
    int mode = modes[order[k]];
    for (uint64_t s = e->off / SECTOR;
         mode != DROP && s * SECTOR < e->off + e->len; s++)
      if (mode != TORN || rand_r(seed) % 2) put_sector(&im[e->file], e, s);
  }
}

typedef struct {
  const oracle *o;
  char *dir;
  bool forked; /* judge in a child (the mutations: states may crash) */
  unsigned states, by[4], hung;
  char first_bad[1400];
  uint64_t *seen;
  size_t nseen, capseen;
} int_ctx;

static void int_check(int_ctx *x, const image im[2], const int_point *p,
                      const char *how) {
  uint64_t h = img_hash(&im[0]) * 31u + img_hash(&im[1]) * 7u + p->floor;
  bool dup = false;
  for (size_t i = 0; i < x->nseen && !dup; i++) dup = x->seen[i] == h;
  if (dup) return;
  if (x->nseen == x->capseen) {
    x->capseen = x->capseen ? x->capseen * 2 : 1024;
    x->seen = realloc(x->seen, x->capseen * sizeof *x->seen);
    assert_non_null(x->seen);
  }
  x->seen[x->nseen++] = h;
  put_state(x->dir, &im[0], &im[1]);
  /* The models are indexed from the oldest commit the record saw. */
  const models *m = &x->o->m;
  uint64_t t0 = x->o->t0;
  unsigned top = p->top >= t0 ? (unsigned)(p->top - t0) : 0;
  unsigned oldest = p->floor >= t0 ? (unsigned)(p->floor - t0) : 0;
  check_args a = {x->dir, m, top, oldest};
  char msg[1000];
  jb__steady_test_boot(reboot_id);
  outcome o = x->forked ? judge_forked(&a, msg, sizeof msg, 2, &x->hung)
                        : judge(&a, msg, sizeof msg);
  jb__steady_test_boot(NULL);
  x->states++;
  x->by[o]++;
  if (o != ST_OK && x->first_bad[0] == '\0')
    snprintf(x->first_bad, sizeof x->first_bad,
             "crash after event %zu (commits up to %llu begun, %llu "
             "promised, %zu pending writes, %s): %s",
             p->c, (unsigned long long)p->top, (unsigned long long)p->floor,
             p->npending, how, msg);
}

static void int_states_at(int_ctx *x, const image base[2], const iol_event *ev,
                          const int_point *p, unsigned samples, bool ends,
                          unsigned *seed) {
  size_t np = p->npending;
  int *modes = calloc(np + 1, sizeof *modes);
  size_t *order = calloc(np + 1, sizeof *order);
  assert_true(modes && order);
  image im[2] = {{0}, {0}};
  for (size_t k = 0; k < np; k++) order[k] = k;
  unsigned long subsets = np <= EXHAUSTIVE_MAX ? 1ul << np : 0;
  for (unsigned long mask = 0; ends && mask < subsets; mask++) {
    for (size_t k = 0; k < np; k++) modes[k] = (mask >> k) & 1 ? KEEP : DROP;
    int_build(im, base, ev, p, modes, order, seed);
    int_check(x, im, p, "whole writes kept or dropped");
  }
  for (int keep = 0; ends && subsets == 0 && keep < 2; keep++) {
    for (size_t k = 0; k < np; k++) modes[k] = keep ? KEEP : DROP;
    int_build(im, base, ev, p, modes, order, seed);
    int_check(x, im, p, keep ? "every write kept" : "every write dropped");
  }
  for (unsigned s = 0; np > 0 && s < samples; s++) {
    for (size_t k = 0; k < np; k++) {
      modes[k] = rand_r(seed) % 3;
      order[k] = k;
    }
    for (size_t k = np; k > 1; k--) {
      size_t j = (size_t)rand_r(seed) % k, t = order[k - 1];
      order[k - 1] = order[j];
      order[j] = t;
    }
    int_build(im, base, ev, p, modes, order, seed);
    int_check(x, im, p, "random keep/drop/torn, random order");
  }
  free(im[0].buf);
  free(im[1].buf);
  free(modes);
  free(order);
}

/* The interval run; `mutate`: NO_PIN (in the writers) or
 * NO_RESTORE (in the reopen), 0 for the real thing.
 * Returns the bad states found (the real thing fails the test on any). */
static unsigned run_interval(unsigned mutate) {
  plan pl = the_plan();
  char what[80];
  snprintf(what, sizeof what, "power loss, durability interval%s",
           mutate == 1 ? " without the pin" : mutate == 2 ? " without the restore" : "");
  unsigned seed = jbt_seed(what);
  int64_t t0 = jbt_now_ms();
  char *top = jbt_mkdtemp();
  char *dir = jbt_path(top, "board");
  /* A board of a few jobs that uses interval, closed: steady. */
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = JB_DURABILITY_INTERVAL;
  o.map_size = MAP_SIZE;
  jb_board *b = NULL;
  assert_int_equal(jb_board_open(&b, dir, &o), JB_OK);
  for (int i = 0; i < 3; i++) jbt_post(NULL, b, "before", JB_PRIORITY_NORMAL);
  jb_board_close(b);
  image base[2] = {{0}, {0}};
  char *files[2] = {jbt_path(dir, "data.mdb"), jbt_path(dir, "steady")};
  for (int f = 0; f < 2; f++) {
    fsync_path(files[f]);
    read_file(&base[f], files[f]);
  }
  /* The newest record of the starting file. */
  uint64_t base_rec = 0;
  for (uint64_t off = 4096; off <= 8192; off += 4096) {
    iol_event slot = {.kind = IOL_WRITE, .file = IOL_STEADY, .off = off,
                      .len = 512, .data = base[1].buf + off};
    uint64_t t;
    if (is_record_write(&slot, &t) && t > base_rec) base_rec = t;
  }
  assert_true(base_rec > 0);

  /* The writers, recorded in one order. */
  iol_follow(dir);
  iol_follow_steady(true);
  iol_record(true);
  if (mutate == NO_PIN) jb__steady_test_mutate(mutate);
  int_child kids[INT_PROCS];
  pid_t pids[INT_PROCS];
  for (unsigned i = 0; i < INT_PROCS; i++) {
    /* Without the pin, the pages a record needs are reused only when
     * enough commits come between two records: a longer interval. */
    kids[i] = (int_child){dir, i, pl.long_run ? 120 : 24, seed + i,
                          i >= 2 ? JB_DURABILITY_FULL : JB_DURABILITY_INTERVAL,
                          mutate == NO_PIN ? 25 : 2};
    pids[i] = jbt_fork(interval_child, &kids[i], 120);
  }
  for (unsigned i = 0; i < INT_PROCS; i++) jbt_wait_ok(pids[i], 120000);
  jb__steady_test_mutate(0);
  iol_record(false);
  iol_follow(NULL);
  iol_follow_steady(false);

  size_t n = 0;
  const iol_event *ev = iol_events(&n);
  size_t writes[2] = {0, 0}, flushes[2] = {0, 0}, records = 0, acks = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t t;
    if (ev[i].kind == IOL_WRITE) writes[ev[i].file]++;
    if (ev[i].kind == IOL_FLUSH) flushes[ev[i].file]++;
    if (ev[i].kind == IOL_ACK) acks++;
    if (is_record_write(&ev[i], &t)) records++;
  }
  assert_int_equal(acks, INT_PROCS * kids[0].ops);
  assert_true(records >= 3 && flushes[IOL_DATA] >= 3);
  /* The record is complete: replaying it gives both files. */
  for (int f = 0; f < 2; f++) {
    image all = {0}, real = {0};
    img_copy(&all, &base[f]);
    for (size_t i = 0; i < n; i++)
      if (ev[i].kind == IOL_WRITE && ev[i].file == f)
        img_put(&all, ev[i].off, ev[i].data, ev[i].len);
    read_file(&real, files[f]);
    assert_int_equal(all.size, real.size);
    assert_true(memcmp(all.buf, real.buf, all.size) == 0);
    free(all.buf);
    free(real.buf);
  }

  uint64_t *tx = meta_txnids(ev, n, &base[0]);
  oracle orc = {{0}, 0};
  char *odir = jbt_path(top, "oracle");
  build_oracle(&orc, ev, tx, n, &base[0], odir);
  assert_true(orc.m.n > 10);

  if (mutate == NO_RESTORE) jb__steady_test_mutate(mutate);
  int_ctx x = {.o = &orc, .dir = jbt_path(top, "crash"), .forked = mutate != 0};
  int_point p = {0};
  p.pending = calloc(n + 1, sizeof *p.pending);
  assert_non_null(p.pending);
  unsigned want = pl.long_run ? 2000u : mutate ? 150u : 300u;
  size_t stride = 1 + n / (pl.long_run ? 2000 : 300);
  for (size_t c = 0; c <= n && x.states < want; c += stride) {
    int_point_at(&p, ev, tx, n, c, base_rec);
    int_states_at(&x, base, ev, &p, pl.samples, true, &seed);
  }
  for (int pass = 0; x.states < want && pass < 32; pass++) {
    unsigned before = x.states;
    for (size_t c = (size_t)pass % stride; c <= n && x.states < want; c += stride) {
      int_point_at(&p, ev, tx, n, c, base_rec);
      int_states_at(&x, base, ev, &p, 1, false, &seed);
    }
    if (x.states == before) break;
  }
  jb__steady_test_mutate(0);
  int64_t ms = jbt_now_ms() - t0;
  printf("# %s: %u crash states checked (%zu events: %zu+%zu writes, "
         "%zu+%zu flushes of data.mdb+steady, %zu records, %zu commits by "
         "%d processes; %.1f s%s)\n",
         what, x.states, n, writes[0], writes[1], flushes[0], flushes[1],
         records, orc.m.n, INT_PROCS, (double)ms / 1000,
         pl.long_run ? ", long run" : "");
  printf("#   %u hold a recorded state or newer, %u lost what was flushed or "
         "acknowledged, %u hold no state the board had, %u broken (%u "
         "readers looped)\n",
         x.by[ST_OK], x.by[ST_LOST], x.by[ST_UNKNOWN], x.by[ST_BROKEN], x.hung);
  if (x.first_bad[0]) printf("#   first bad state: %s\n", x.first_bad);
  fflush(stdout);
  unsigned bad = x.states - x.by[ST_OK];
  if (mutate == 0) {
    assert_true(x.states >= want / 2);
    if (bad)
      fail_msg("durability interval: %u of %u crash states break its "
               "promise; first: %s", bad, x.states, x.first_bad);
  }
  free(p.pending);
  free(tx);
  free(x.seen);
  free(x.dir);
  free(odir);
  models_free(&orc.m);
  for (int f = 0; f < 2; f++) free(base[f].buf), free(files[f]);
  iol_clear();
  jbt_rmtree(top);
  free(dir);
  free(top);
  return bad;
}

static void interval_comes_back_to_a_recorded_state_after_power_loss(
    void **state) {
  (void)state;
  run_interval(0);
}

static void interval_without_the_pin_is_caught(void **state) {
  (void)state;
  unsigned bad = run_interval(NO_PIN);
  if (bad == 0) fail_msg("without the pin no crash state was bad: the "
                         "simulation cannot see what the pin prevents");
}

static void interval_without_the_restore_is_caught(void **state) {
  (void)state;
  unsigned bad = run_interval(NO_RESTORE);
  if (bad == 0) fail_msg("without the restore no crash state was bad: the "
                         "simulation cannot see what the restore prevents");
}

static void full_keeps_every_acknowledged_commit_through_power_loss(
    void **state) {
  (void)state;
  run_mode(JB_DURABILITY_FULL);
}

static void normal_loses_at_most_the_last_commit_to_power_loss(void **state) {
  (void)state;
  run_mode(JB_DURABILITY_NORMAL);
}

static void none_is_reported_not_promised_through_power_loss(void **state) {
  (void)state;
  run_mode(JB_DURABILITY_NONE);
}

int main(int argc, char **argv) {
  /* One record for every writer process of the interval runs. */
  iol_share(1u << 20, (size_t)1 << 30);
  if (argc > 1 && strcmp(argv[1], "--help") == 0) {
    printf("usage: %s [PATTERN]  (run only the tests whose name matches, "
           "e.g. '*full*')\n"
           "Power loss simulated from every write and flush of the board "
           "(durability full, normal; none is reported).\n"
           "Long run (thousands of crash states): JB_POWERLOSS_LONG=1 %s\n"
           "Repeat a run: JB_TEST_SEED=<seed printed by the run>; "
           "JB_POWERLOSS_TRACE=1 prints each state before judging it\n",
           argv[0], argv[0]);
    return 0;
  }
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  jbt_watchdog(the_plan().long_run ? 3600 : 600);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(full_keeps_every_acknowledged_commit_through_power_loss),
      cmocka_unit_test(normal_loses_at_most_the_last_commit_to_power_loss),
      cmocka_unit_test(none_is_reported_not_promised_through_power_loss),
      cmocka_unit_test(interval_comes_back_to_a_recorded_state_after_power_loss),
      cmocka_unit_test(interval_without_the_pin_is_caught),
      cmocka_unit_test(interval_without_the_restore_is_caught),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
