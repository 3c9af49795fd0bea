/*
 * test_commitpages.c - the pages each kind of commit writes:
 * post, claim-next (plain, with a lease, bound to the process), consume,
 * abandon and a progress report through the public API, and bench's raw LMDB floor
 * (bench/bench_raw.c: the same three transactions on bare LMDB), in
 * durability none (and bench's "raw LMDB + log").
 *
 * Every write call liblmdb makes on data.mdb goes through tests/iolayer.c,
 * which records its offset and length. A commit writes its dirty pages
 * (one pwrite for a lone page, lseek + writev for a run of consecutive
 * page numbers: mdb_page_flush) and then its meta page, so the pages a
 * commit dirtied are the pages it wrote outside the two meta pages. After
 * each commit the file is read with the defensive page reader
 * (store/pages.h) to learn which tree each written page now belongs to:
 * the free list, the main table (LMDB's table of named tables), or a
 * named table.
 *
 * As a test (no arguments): a board with small bounds (history of 100,
 * change log of 300 events), warmed up until both trim, then each kind of
 * commit measured over many jobs; the mean pages per commit must stay at
 * or under the figures of DESIGN-NOTES "Pages per commit" (with a margin of
 * half a page for the random places uuids land in). It guards against a
 * change that makes a commit touch more of the B-tree than it did.
 *
 * As a tool: `tests/test_commitpages --table [JOBS]` prints the table with
 * the board's default bounds after JOBS warm-up cycles (default 40,000,
 * so the change log and the history are full and trimming, as in
 * `jobboard-bench`).
 */
#include "helpers.h"
#include "iolayer.h"
#include "store/pages.h"
#include "bench/bench_raw.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define META_END 8192u /* LMDB's two meta pages (4 KiB pages here) */
#define MAX_TABLES 32 /* the board has 18 tables (schema 8) */

/* ------------------------------------------------------- page owners */

typedef struct {
  char names[MAX_TABLES][32];
  int n;
  uint8_t *owner; /* per page: table index + 1; 0: none */
  uint64_t npages;
  int cur;
} owners;

static int table_index(owners *o, const char *name) {
  for (int i = 0; i < o->n; i++)
    if (strcmp(o->names[i], name) == 0) return i;
  assert_true(o->n < MAX_TABLES);
  snprintf(o->names[o->n], sizeof o->names[0], "%s", name);
  return o->n++;
}

static bool on_page(jb_pgwalk *w, uint64_t pgno, uint64_t n, unsigned flags) {
  (void)flags;
  owners *o = w->arg;
  for (uint64_t i = 0; i < n && pgno + i < o->npages; i++)
    o->owner[pgno + i] = (uint8_t)(o->cur + 1);
  return true;
}

typedef struct {
  char name[32];
  jb_pgdb db;
} named;

static named found[MAX_TABLES];
static int nfound;

static void on_main_leaf(jb_pgwalk *w, const uint8_t *key, size_t klen,
                         const uint8_t *data, size_t dlen, unsigned nflags) {
  (void)w;
  if (!(nflags & JB_PGN_SUBDATA) || nfound == MAX_TABLES) return;
  named *t = &found[nfound];
  size_t n = klen < sizeof t->name - 1 ? klen : sizeof t->name - 1;
  memcpy(t->name, key, n);
  t->name[n] = '\0';
  if (jb__pg_db(data, dlen, &t->db)) nfound++;
}

/* Which tree each page of the board in `dir` belongs to now. */
static void read_owners(owners *o, const char *dir) {
  char *p = jbt_path(dir, "data.mdb");
  int fd = open(p, O_RDONLY);
  assert_true(fd >= 0);
  free(p);
  jb_pgfile f;
  uint64_t size;
  assert_int_equal(jb__pg_map(&f, &size, fd, 4096), 0);
  close(fd);
  jb_pgmeta meta[2];
  bool ok[2];
  char why[2][128];
  jb__pg_metas(f.base, size, meta, ok, why);
  assert_true(ok[0] || ok[1]);
  int m = ok[0] && ok[1] ? (meta[1].txnid > meta[0].txnid) : ok[1];
  free(o->owner);
  o->npages = f.npages;
  o->owner = calloc(f.npages ? f.npages : 1, 1);
  assert_non_null(o->owner);
  jb_pgwalk w = {.f = &f, .page = on_page, .arg = o};
  o->cur = table_index(o, "(free list)");
  jb__pg_walk(&w, &meta[m].dbs[0]);
  o->cur = table_index(o, "(main)");
  nfound = 0;
  w.leaf = on_main_leaf;
  jb__pg_walk(&w, &meta[m].dbs[1]);
  w.leaf = NULL;
  int n = nfound;
  named tabs[MAX_TABLES];
  memcpy(tabs, found, sizeof tabs);
  for (int i = 0; i < n; i++) {
    o->cur = table_index(o, tabs[i].name);
    w.dupsort = (tabs[i].db.flags & 0x04) != 0; /* MDB_DUPSORT */
    jb__pg_walk(&w, &tabs[i].db);
  }
  jb__pg_unmap(&f);
}

/* ------------------------------------------------------- one kind */

typedef struct {
  const char *label;
  unsigned commits;
  double pages, calls, bytes;
  double by_table[MAX_TABLES];
} tally;

/* Add events [from, to) of the record to t: each commit ends at its meta
 * page's write; pages are put to their trees' account when `by_tree`. */
static void tally_events(tally *t, const owners *o, const iol_event *ev,
                         size_t from, size_t to, bool by_tree) {
  for (size_t i = from; i < to; i++) {
    if (ev[i].kind != IOL_WRITE) continue;
    if (ev[i].off < META_END) {
      t->commits++;
      continue;
    }
    t->calls++;
    t->bytes += (double)ev[i].len;
    for (uint64_t pg = ev[i].off / 4096; pg < (ev[i].off + ev[i].len) / 4096;
         pg++) {
      t->pages++;
      int who = pg < o->npages ? o->owner[pg] : 0;
      if (who && by_tree) t->by_table[who - 1]++;
    }
  }
}

/* Add the commits of the record so far to t. */
static void add_record(tally *t, owners *o, const char *dir) {
  size_t n;
  const iol_event *ev = iol_events(&n);
  read_owners(o, dir);
  tally_events(t, o, ev, 0, n, true);
}

static void print_tally(const tally *t, const owners *o) {
  double c = t->commits ? t->commits : 1;
  printf("  %-22s %6.2f  %6.2f ", t->label, t->pages / c, t->calls / c);
  for (int i = 0; i < o->n; i++)
    if (t->by_table[i] > 0)
      printf(" %s %.2f", o->names[i], t->by_table[i] / c);
  printf("\n");
  fflush(stdout);
}

/* ------------------------------------------------------- the board */

typedef enum { K_POST, K_CLAIM, K_CLAIM_LEASE, K_CLAIM_BOUND, K_CONSUME,
               K_CONSUME_LEASED, K_ABANDON, K_PROGRESS, K_RAW_POST, K_RAW_CLAIM,
               K_RAW_CONSUME, K_RAWLOG_POST, K_RAWLOG_CLAIM, K_RAWLOG_CONSUME,
               NKINDS } kind;
static const char *const kind_label[NKINDS] = {
    "post", "claim-next", "claim-next lease", "claim-next bound", "consume",
    "consume (leased)", "abandon", "progress", "raw post", "raw claim-next",
    "raw consume", "raw+log post", "raw+log claim-next", "raw+log consume"};

static const unsigned char details[] = {
    0x83, 0xa4, 't', 'a', 's', 'k', 0xa6, 'r', 'e', 's', 'i', 'z', 'e',
    0xa5, 'w', 'i', 'd', 't', 'h', 0xcd, 0x02, 0x80,
    0xa6, 'h', 'e', 'i', 'g', 'h', 't', 0xcd, 0x01, 0xe0};
#define WHO "bench-worker"

typedef struct {
  char *dir;
  jb_board *b;
  owners o;
  tally t[NKINDS];
} lab;

static void must(int rc, const char *what) {
  if (rc != JB_OK) fail_msg("%s: %s", what, jb_errmsg());
}

/* One cycle: post, claim-next (with `co`), then consume, or abandon and
 * claim and consume again. Each step is measured into its tally when
 * `measure`. */
static void cycle(lab *l, const jb_claim_options *co, kind claim_kind,
                  bool abandon, bool measure) {
  jb_post p = JB_POST_INIT;
  p.name = "bench.resize-image";
  p.details = details;
  p.details_len = sizeof details;
  char uuid[JB_UUID_STRLEN], claimed[JB_UUID_STRLEN];
#define STEP(k, call, what)                                                    \
  do {                                                                         \
    if (measure) iol_record(true);                                             \
    must(call, what);                                                          \
    if (measure) {                                                             \
      iol_record(false);                                                       \
      add_record(&l->t[k], &l->o, l->dir);                                     \
    }                                                                          \
  } while (0)
  if (claim_kind == K_PROGRESS) { /* two reports measured, nothing else */
    must(jb_job_post(uuid, l->b, &p), "post");
    must(jb_claim_next(claimed, NULL, NULL, l->b, WHO, co), "claim-next");
    STEP(K_PROGRESS, jb_progress(l->b, claimed, WHO, 0, 25, "resizing"),
         "progress");
    STEP(K_PROGRESS, jb_progress(l->b, claimed, WHO, 0, 75.5,
                                 "resizing: 3 of 4 tiles written"),
         "progress");
    must(jb_consume(l->b, claimed, WHO, 0, NULL), "consume");
    return;
  }
  STEP(K_POST, jb_job_post(uuid, l->b, &p), "post");
  STEP(claim_kind, jb_claim_next(claimed, NULL, NULL, l->b, WHO, co),
       "claim-next");
  if (abandon) {
    STEP(K_ABANDON, jb_abandon(l->b, claimed, WHO, 0), "abandon");
    must(jb_claim_next(claimed, NULL, NULL, l->b, WHO, co), "claim");
  }
  kind ck = claim_kind == K_CLAIM ? K_CONSUME : K_CONSUME_LEASED;
  STEP(ck, jb_consume(l->b, claimed, WHO, 0, NULL), "consume");
#undef STEP
}

static void lab_open(lab *l, size_t hist, uint64_t log_keep) {
  memset(l, 0, sizeof *l);
  l->dir = jbt_mkdtemp();
  for (int k = 0; k < NKINDS; k++) l->t[k].label = kind_label[k];
  iol_follow(l->dir);
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = JB_DURABILITY_NONE;
  bo.history_max = hist;
  bo.log_keep = log_keep;
  must(jb_board_open(&l->b, l->dir, &bo), "open");
}

static void lab_close(lab *l) {
  jb_board_close(l->b);
  iol_follow(NULL);
  jbt_rmtree(l->dir);
  free(l->dir);
  free(l->o.owner);
}

static void run_all(lab *l, size_t warm, size_t measure) {
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT, bound = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 30000;
  bound.flags = JB_CLAIM_BIND_PROCESS;
  for (size_t i = 0; i < warm; i++) cycle(l, NULL, K_CLAIM, false, false);
  for (size_t i = 0; i < measure; i++) {
    cycle(l, NULL, K_CLAIM, false, true);
    cycle(l, &lease, K_CLAIM_LEASE, false, true);
    cycle(l, &bound, K_CLAIM_BOUND, false, true);
    cycle(l, NULL, K_CLAIM, true, true);
  }
  /* Progress last: its consumes drop jobx records, which the cycles
   * above would count. Its posts and claims are not measured. */
  for (size_t i = 0; i < measure; i++)
    cycle(l, NULL, K_PROGRESS, false, true);
}

/* A raw floor (bench_raw's cycle; `flags` BENCH_RAW_LOG for "raw LMDB +
 * log"), split into its three commits, tallied from kind `first`. */
static void run_raw(lab *l, size_t warm, size_t measure, unsigned flags,
                    kind first) {
  char *dir = jbt_mkdtemp();
  iol_follow(dir);
  bench_raw *r;
  assert_int_equal(bench_raw_open(&r, dir, JB_DURABILITY_NONE, 64u << 20, 232,
                                  1, flags),
                   0);
  assert_int_equal(bench_raw_cycles(r, warm, NULL), 0);
  for (size_t i = 0; i < measure; i++) {
    for (int step = 0; step < 3; step++) {
      /* One cycle, recorded; only commit `step` is kept. */
      iol_record(true);
      assert_int_equal(bench_raw_cycles(r, 1, NULL), 0);
      iol_record(false);
      size_t n;
      const iol_event *ev = iol_events(&n);
      int commit = 0;
      size_t from = 0, to = n;
      for (size_t j = 0; j < n; j++) {
        if (ev[j].kind != IOL_WRITE || ev[j].off >= META_END) continue;
        if (commit == step - 1) from = j + 1;
        if (commit == step) {
          to = j + 1;
          break;
        }
        commit++;
      }
      /* Only the cycle's last commit by tree: the earlier ones' pages
       * may have been freed and reused by the later ones since. */
      read_owners(&l->o, dir);
      tally_events(&l->t[first + step], &l->o, ev, from, to, step == 2);
    }
  }
  bench_raw_close(r);
  iol_follow(NULL);
  jbt_rmtree(dir);
  free(dir);
}

static void print_all(const lab *l) {
  printf("  %-22s %6s  %6s  pages by tree\n", "commit", "pages", "writes");
  for (int k = 0; k < NKINDS; k++) print_tally(&l->t[k], &l->o);
}

/* ------------------------------------------------------- the test */

/* The most pages each kind may write per commit, on the small board of
 * the test (docs/DESIGN-NOTES.md, "Pages per commit"), with a margin over
 * what is measured. The board's counters cost no page of their own: they
 * are a record of the main tree, which every commit rewrites (txn.h; a
 * post measured 5.13 before the index of ready jobs by name, where a value
 * in `meta` made it 6.13). The index by name (store/names.h) costs every
 * commit that puts a job into `ready` or takes one out a page: a post
 * measures 6.13, a claim-next 6.13. A consume's history record keeps the
 * posting, so the history table fills sooner (7.3 measured); an abandon
 * counts an attempt in `jobx` (7.25). A progress report writes the job's
 * `jobx` record and its event (4.16). */
static const double limit[NKINDS] = {
    [K_POST] = 6.6,         [K_CLAIM] = 6.6,   [K_CLAIM_LEASE] = 7.5,
    [K_CLAIM_BOUND] = 7.8,  [K_CONSUME] = 7.8, [K_CONSUME_LEASED] = 8.2,
    [K_ABANDON] = 7.7,      [K_PROGRESS] = 4.6,
};

static void test_pages_per_commit(void **state) {
  (void)state;
  lab l;
  lab_open(&l, 100, 300);
  run_all(&l, 600, 100);
  print_all(&l);
  for (int k = 0; k < K_RAW_POST; k++) {
    double per = l.t[k].pages / (l.t[k].commits ? l.t[k].commits : 1);
    if (l.t[k].commits == 0 || per > limit[k])
      fail_msg("%s: %.2f pages per commit (at most %.1f expected)",
               kind_label[k], per, limit[k]);
  }
  lab_close(&l);
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--table") == 0) {
    size_t warm = argc >= 3 ? strtoul(argv[2], NULL, 10) : 40000;
    lab l;
    lab_open(&l, 0, 0);
    printf("pages and write calls per commit, durability none, default "
           "bounds, after %zu cycles\n", warm);
    run_all(&l, warm, 300);
    run_raw(&l, warm, 300, 0, K_RAW_POST);
    run_raw(&l, warm, 300, BENCH_RAW_LOG, K_RAWLOG_POST);
    print_all(&l);
    lab_close(&l);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pages_per_commit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
