/*
 * test_pages.c - check's page accounting and jobboard salvage, on real boards
 * damaged by raw edits of data.mdb.
 *
 * check: a torn WRITEMAP meta page (the newest meta's main tree replaced
 * by the older meta's, as a kill between LMDB's two stores leaves it), a
 * leaked page, a page in two trees and a page overwritten with garbage
 * are each reported; a healthy busy board passes.
 *
 * salvage: one board of 1,200 jobs (some with details large
 * enough for overflow pages, some claimed, some consumed), then many
 * copies of it, each with random pages overwritten by random bytes or
 * zeros (sometimes a meta page too). For each: salvage does not crash
 * (run under ASan+UBSan in CI), the new board passes check, every job
 * whose leaf page and overflow pages are intact is copied (the test
 * knows which pages held which job from walking the healthy board), and
 * no consumed job comes back. The seed is printed.
 *
 * Long form: JB_SALVAGE_BOARDS=2000 tests/test_pages (default 200 boards;
 * JB_TEST_SEED=N repeats a run's damage).
 */
#include "helpers.h"
#include "store/pages.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------- raw file edits */

typedef struct {
  uint8_t *d;
  size_t len;
  uint32_t ps;
} rawfile;

static rawfile raw_read(const char *dir) {
  char *p = jbt_path(dir, "data.mdb");
  rawfile r = {0};
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  r.len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  r.d = malloc(r.len);
  assert_non_null(r.d);
  assert_int_equal(fread(r.d, 1, r.len, f), r.len);
  fclose(f);
  free(p);
  memcpy(&r.ps, r.d + 16 + 24, 4);
  return r;
}

static void raw_write(const char *dir, const rawfile *r) {
  char *p = jbt_path(dir, "data.mdb");
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(r->d, 1, r->len, f), r->len);
  fclose(f);
  free(p);
}

/* The meta page offset of the newest (new) and older (old) meta. */
static void metas(const rawfile *r, size_t *newer, size_t *older) {
  uint64_t t0, t1;
  memcpy(&t0, r->d + 16 + 128, 8);
  memcpy(&t1, r->d + r->ps + 16 + 128, 8);
  *newer = (t0 > t1 ? 0 : r->ps) + 16;
  *older = (t0 > t1 ? r->ps : 0) + 16;
}

static uint64_t u64at(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* The MDB_db record of table `name` in the main tree's root page (a leaf:
 * a board has a dozen tables) of the newest meta. */
static uint8_t *table_record(rawfile *r, const char *name) {
  size_t nm, om;
  metas(r, &nm, &om);
  uint64_t root = u64at(r->d + nm + 72 + 40);
  uint8_t *pg = r->d + root * r->ps;
  size_t kl = strlen(name);
  for (size_t off = 16; off + 8 + kl + 48 <= r->ps; off++) {
    uint16_t ks, fl;
    memcpy(&fl, pg + off + 4, 2);
    memcpy(&ks, pg + off + 6, 2);
    if (ks == kl && fl == 2 && memcmp(pg + off + 8, name, kl) == 0)
      return pg + off + 8 + kl;
  }
  fail_msg("table %s not found in the main tree", name);
  return NULL;
}

/* ---------------------------------------------------------------- boards */

static jb_board *open_board(const char *dir) {
  /* No flush: nothing here crashes, and the boards are many. */
  return jbt_open(dir, JB_DURABILITY_NONE, 0);
}

/* Posts n jobs (every 7th with details of 6 KB: overflow pages), claims
 * every 5th, consumes every 9th; uuids to `uuids` (n of them). */
static void fill(jb_board *b, size_t n, char (*uuids)[JB_UUID_STRLEN],
                 bool *consumed) {
  jbt_buf big = jbt_details_blob(6000, 7);
  for (size_t i = 0; i < n; i++) {
    jb_post p = JB_POST_INIT;
    char name[32];
    snprintf(name, sizeof name, "job-%zu", i);
    p.name = name;
    p.priority = (jb_priority)(i % 5);
    if (i % 7 == 0) {
      p.details = big.data;
      p.details_len = big.len;
    }
    assert_int_equal(jb_job_post(uuids[i], b, &p), JB_OK);
  }
  for (size_t i = 0; i < n; i++) {
    consumed[i] = i % 9 == 4;
    if (i % 5 == 0 || consumed[i])
      assert_int_equal(jb_claim(NULL, b, uuids[i], "w", NULL), JB_OK);
    if (consumed[i]) assert_int_equal(jb_consume(b, uuids[i], "w", 0, NULL), JB_OK);
  }
  jbt_buf_free(&big);
  /* Two commits that leave the jobs table alone: both meta pages then
   * name the same jobs tree, so a damaged newer meta loses no job. */
  assert_int_equal(jb_entity_register(b, "t", "test", NULL, 0), JB_OK);
  assert_int_equal(jb_entity_unregister(b, "t"), JB_OK);
}

typedef struct {
  size_t problems, page_lines, other_lines;
  char first[512]; /* the first line about pages */
  char all[16384]; /* every line, one per row */
} check_seen;

static void on_check_line(const char *line, void *arg) {
  check_seen *s = arg;
  if (strncmp(line, "pages:", 6) == 0) {
    s->page_lines++;
    if (!s->first[0]) snprintf(s->first, sizeof s->first, "%s", line);
  } else {
    s->other_lines++;
  }
  size_t at = strlen(s->all);
  snprintf(s->all + at, sizeof s->all - at, "%s\n", line);
}

static int run_check(const char *dir, check_seen *seen) {
  jb_board *b = open_board(dir);
  jb_check_stats st;
  memset(seen, 0, sizeof *seen);
  int rc = jb_board_check(&st, b, on_check_line, seen);
  seen->problems = st.problems;
  jb_board_close(b);
  return rc;
}

/* A board made by `fill` in a fresh directory; uuids and consumed flags
 * into the fixture's extra. */
typedef struct {
  char (*uuids)[JB_UUID_STRLEN];
  bool *consumed;
  size_t n;
} filled;

static filled make_board(const char *dir, size_t n) {
  filled f = {calloc(n, JB_UUID_STRLEN), calloc(n, sizeof(bool)), n};
  assert_non_null(f.uuids);
  assert_non_null(f.consumed);
  jb_board *b = open_board(dir);
  fill(b, n, f.uuids, f.consumed);
  jb_board_close(b);
  return f;
}

static void free_filled(filled *f) {
  free(f->uuids);
  free(f->consumed);
}

/* ------------------------------------------------------------ the check */

static void healthy_busy_board_passes_page_accounting(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 2000);
  check_seen seen;
  int rc = run_check(fx->dir, &seen);
  if (rc != JB_OK) fail_msg("healthy board: %s", seen.first);
  assert_int_equal(seen.page_lines, 0);
  free_filled(&f);
}

/* Tear the board's newest meta page as a kill between LMDB's store of
 * mm_txnid and of the main root leaves it: the new txnid, the free list
 * of the newer commit, the main tree of an earlier one. */
static void tear(const char *dir) {
  rawfile r = raw_read(dir);
  size_t nm, om;
  metas(&r, &nm, &om);
  memcpy(r.d + nm + 72, r.d + om + 72, 48);
  raw_write(dir, &r);
  free(r.d);
}

/* Salvage `dir` and compare with what was acknowledged: f's jobs, live or
 * consumed, and `extra` (a uuid, may be NULL) live. */
static void salvage_matches(const char *dir, const filled *f,
                            const char *extra) {
  char *dst = jbt_path(dir, "salvaged");
  jb_salvage_stats st;
  assert_int_equal(jb_board_salvage(&st, dir, dst, NULL, NULL), JB_OK);
  jb_board *b = open_board(dst);
  jb_job *j = NULL;
  if (extra) {
    if (jb_job_get(&j, b, extra) != JB_OK)
      fail_msg("the last post %s was not salvaged", extra);
    jb_job_free(j);
  }
  for (size_t i = 0; i < f->n; i++) {
    j = NULL;
    int rc = jb_job_get(&j, b, f->uuids[i]);
    jb_job_free(j);
    if (rc != (f->consumed[i] ? JB_ENOTFOUND : JB_OK))
      fail_msg("job %zu (%s, %s): %s after salvage", i, f->uuids[i],
               f->consumed[i] ? "consumed" : "live", jb_strerror(rc));
  }
  jb_board_close(b);
  jbt_rmtree(dst);
  free(dst);
}

/* The fixture's board closed and filled anew (300 jobs), its last commit
 * the consume of a job fill had only claimed; the filling returned. */
static filled fill_and_consume_last(jbt_fixture *fx) {
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 300);
  size_t gone = 5; /* claimed by fill (every 5th), not consumed */
  assert_false(f.consumed[gone]);
  jb_board *b = open_board(fx->dir);
  assert_int_equal(jb_consume(b, f.uuids[gone], "w", 0, NULL), JB_OK);
  f.consumed[gone] = true;
  jb_board_close(b);
  return f;
}

/* The last commit a consume: the torn meta's tree still has the job. The
 * salvage has the board as it was acknowledged: the consumed job stays
 * out (the newer commit's history, on pages the torn meta does not reach,
 * says so). */
static void a_torn_writemap_meta_after_a_consume_is_salvaged_without_it(
    void **state) {
  jbt_fixture *fx = *state;
  filled f = fill_and_consume_last(fx);
  tear(fx->dir);
  salvage_matches(fx->dir, &f, NULL);
  free_filled(&f);
}

/* Only the page accounting sees it: LMDB's view is self-consistent (the
 * consumed job is back in it). Salvage first: check's open must not
 * write to the torn board (its free list marks live pages free). */
static void a_torn_writemap_meta_is_reported_by_page_accounting_alone(
    void **state) {
  jbt_fixture *fx = *state;
  filled f = fill_and_consume_last(fx);
  tear(fx->dir);
  salvage_matches(fx->dir, &f, NULL);
  check_seen seen;
  assert_int_equal(run_check(fx->dir, &seen), JB_ECORRUPT);
  print_message("torn meta: %zu problems, first: %s\n", seen.problems,
                seen.first);
  assert_true(seen.page_lines > 0);
  assert_int_equal(seen.other_lines, 0);
  assert_non_null(strstr(seen.first, "is in both"));
  free_filled(&f);
}

/* The last commit a post: its pages, which the newer commit may have
 * taken from the older commit's free list, hold the only copy. */
static void a_torn_writemap_meta_after_a_post_is_salvaged_with_it(
    void **state) {
  jbt_fixture *fx = *state;
  filled f = fill_and_consume_last(fx);
  char last[JB_UUID_STRLEN];
  jb_board *b = open_board(fx->dir);
  /* Commits that free pages first, so that the post reuses them: pages
   * the older commit's free list still lists (tested: the salvage must
   * read them when the newer free list does not list them). */
  for (int i = 0; i < 4; i++) {
    assert_int_equal(jb_entity_register(b, "t", "test", NULL, 0), JB_OK);
    assert_int_equal(jb_entity_unregister(b, "t"), JB_OK);
  }
  jbt_post(last, b, "last", JB_PRIORITY_NORMAL);
  jb_board_close(b);
  tear(fx->dir);
  salvage_matches(fx->dir, &f, last);
  free_filled(&f);
}

static void leaked_page_is_reported(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 200);
  rawfile r = raw_read(fx->dir);
  size_t nm, om;
  metas(&r, &nm, &om);
  /* One more page in the snapshot that nothing owns. */
  uint64_t last = u64at(r.d + nm + 120) + 1;
  memcpy(r.d + nm + 120, &last, 8);
  raw_write(fx->dir, &r);
  free(r.d);
  check_seen seen;
  assert_int_equal(run_check(fx->dir, &seen), JB_ECORRUPT);
  assert_non_null(strstr(seen.first, "(leaked)"));
  char want[64];
  snprintf(want, sizeof want, "page %llu ", (unsigned long long)last);
  assert_non_null(strstr(seen.first, want));
  free_filled(&f);
}

static void page_in_two_trees_is_reported(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 200);
  rawfile r = raw_read(fx->dir);
  /* The (empty) trash table's record made a copy of ready's: ready's
   * pages are then in two trees. */
  memcpy(table_record(&r, "trash"), table_record(&r, "ready"), 48);
  raw_write(fx->dir, &r);
  free(r.d);
  check_seen seen;
  assert_int_equal(run_check(fx->dir, &seen), JB_ECORRUPT);
  print_message("two trees: %s\n", seen.first);
  assert_non_null(strstr(seen.first, "is in both table ready and table trash"));
  free_filled(&f);
}

static void garbage_page_header_is_reported_without_crash(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 2000);
  rawfile r = raw_read(fx->dir);
  /* The jobs table's root (a branch page at 2,000 jobs) overwritten. */
  uint8_t *rec = table_record(&r, "jobs");
  uint64_t root = u64at(rec + 40);
  srand(11);
  for (size_t i = 0; i < r.ps; i++) r.d[root * r.ps + i] = (uint8_t)rand();
  raw_write(fx->dir, &r);
  free(r.d);
  check_seen seen;
  assert_int_equal(run_check(fx->dir, &seen), JB_ECORRUPT);
  print_message("garbage:\n%s", seen.all);
  char want[80];
  snprintf(want, sizeof want, "page %llu of table jobs cannot be read",
           (unsigned long long)root);
  assert_non_null(strstr(seen.all, want));
  free_filled(&f);
}

/* A leaf node marked both big (8 bytes of overflow page number) and
 * duplicates (its data here, dsize bytes) is refused before its data is
 * read: with both, the page check vouched for 8 bytes and the reader then
 * read dsize (up to 4 GiB) as a sub-page, past the page and the map. */
static void node_marked_big_and_duplicates_is_refused(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 2000);
  rawfile r = raw_read(fx->dir);
  /* The jobs root is a branch page; its first child a leaf. */
  uint64_t root = u64at(table_record(&r, "jobs") + 40);
  const uint8_t *bp = r.d + root * r.ps;
  uint16_t boff;
  memcpy(&boff, bp + 16, 2);
  uint16_t lo, hi, fl;
  memcpy(&lo, bp + boff, 2);
  memcpy(&hi, bp + boff + 2, 2);
  memcpy(&fl, bp + boff + 4, 2);
  uint64_t leaf = (uint64_t)lo | (uint64_t)hi << 16 | (uint64_t)fl << 32;
  uint8_t *lp = r.d + leaf * r.ps;
  uint16_t noff;
  memcpy(&noff, lp + 16, 2);
  uint8_t *nd = lp + noff;
  uint16_t flags = 0x01 | 0x04, big = 0xffff; /* BIGDATA | DUPDATA */
  memcpy(nd, &big, 2);
  memcpy(nd + 2, &big, 2);
  memcpy(nd + 4, &flags, 2);
  /* Its data made to look like a sub-page that claims 64 KiB of nodes. */
  uint16_t ks, subp = 0x40 | 0x02, lower = 0xfff0, upper = 0xfff0;
  memcpy(&ks, nd + 6, 2);
  memcpy(nd + 8 + ks + 10, &subp, 2);
  memcpy(nd + 8 + ks + 12, &lower, 2);
  memcpy(nd + 8 + ks + 14, &upper, 2);
  raw_write(fx->dir, &r);
  free(r.d);
  check_seen seen;
  assert_int_equal(run_check(fx->dir, &seen), JB_ECORRUPT);
  char want[120];
  snprintf(want, sizeof want, "page %llu of table jobs cannot be read",
           (unsigned long long)leaf);
  if (strstr(seen.all, want) == NULL ||
      strstr(seen.all, "marked both big and duplicates") == NULL)
    fail_msg("check did not refuse the node:\n%s", seen.all);
  free_filled(&f);
}

/* ---------------------------------------------------------------- salvage */

/* Which pages each job of a healthy board needs: its leaf page and its
 * overflow run. */
typedef struct {
  uint8_t uuid[16];
  uint64_t leaf, ov;
  uint64_t ovn;
} jobpages;

typedef struct {
  jobpages *j;
  size_t n, cap;
  uint64_t cur_leaf;
  const uint8_t *base;
  uint32_t ps;
} jobmap;

static bool map_page(jb_pgwalk *w, uint64_t pgno, uint64_t n, unsigned fl) {
  jobmap *m = w->arg;
  (void)n;
  if (!(fl & JB_PG_OVERFLOW)) m->cur_leaf = pgno;
  return true;
}

static void map_leaf(jb_pgwalk *w, const uint8_t *key, size_t klen,
                     const uint8_t *data, size_t dlen, unsigned nf) {
  jobmap *m = w->arg;
  assert_int_equal(klen, 16);
  assert_non_null(data);
  assert_true(m->n < m->cap);
  jobpages *j = &m->j[m->n++];
  memcpy(j->uuid, key, 16);
  j->leaf = m->cur_leaf;
  if (nf & JB_PGN_BIGDATA) {
    j->ov = (uint64_t)(data - JB_PG_HDR - m->base) / m->ps;
    j->ovn = (JB_PG_HDR - 1 + dlen) / m->ps + 1;
  }
}

/* Walk the jobs table of a healthy board: for each job its pages. */
static jobmap map_jobs(const char *dir) {
  rawfile r = raw_read(dir);
  uint8_t *rec = table_record(&r, "jobs");
  jb_pgdb db;
  assert_true(jb__pg_db(rec, 48, &db));
  jb_pgfile f = {r.d, r.len / r.ps, r.ps, 0};
  jobmap m = {.cap = db.entries, .base = r.d, .ps = r.ps};
  m.j = calloc(m.cap + 1, sizeof *m.j);
  assert_non_null(m.j);
  jb_pgwalk w = {.f = &f, .page = map_page, .leaf = map_leaf, .arg = &m};
  jb__pg_walk(&w, &db);
  assert_int_equal(m.n, db.entries);
  m.base = NULL;
  free(r.d);
  return m;
}

static int uuid_of(const filled *f, const uint8_t raw[16]) {
  char t[JB_UUID_STRLEN];
  static const char *hex = "0123456789abcdef";
  int k = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) t[k++] = '-';
    t[k++] = hex[raw[i] >> 4];
    t[k++] = hex[raw[i] & 15];
  }
  t[k] = '\0';
  for (size_t i = 0; i < f->n; i++)
    if (strcmp(f->uuids[i], t) == 0) return (int)i;
  return -1;
}

typedef struct {
  size_t lines;
} salv_seen;

static void on_salvage_line(jb_salvage_kind kind, const char *line,
                            void *arg) {
  (void)kind;
  (void)line;
  ((salv_seen *)arg)->lines++;
}

/* The fixture's board closed and filled anew (500 jobs), then salvaged
 * into its "salvaged" (the path returned, to free) with figures *st; the
 * filling goes to *f. */
static char *fill_and_salvage(jbt_fixture *fx, filled *f,
                              jb_salvage_stats *st) {
  jb_board_close(fx->board);
  fx->board = NULL;
  *f = make_board(fx->dir, 500);
  char *dst = jbt_path(fx->dir, "salvaged");
  salv_seen seen = {0};
  assert_int_equal(jb_board_salvage(st, fx->dir, dst, on_salvage_line, &seen),
                   JB_OK);
  return dst;
}

static void salvage_of_a_healthy_board_finds_no_damage(void **state) {
  jbt_fixture *fx = *state;
  filled f;
  jb_salvage_stats st;
  char *dst = fill_and_salvage(fx, &f, &st);
  size_t live = 0;
  for (size_t i = 0; i < f.n; i++) live += !f.consumed[i];
  assert_int_equal(st.copied, live);
  assert_int_equal(st.bad_pages + st.bad_tables + st.undecodable, 0);
  assert_true(st.history > 0);
  free(dst);
  free_filled(&f);
}

/* Same jobs, same order, all unclaimed, and check finds nothing. */
static void salvage_of_healthy_board_copies_every_job_in_order(void **state) {
  jbt_fixture *fx = *state;
  filled f;
  jb_salvage_stats st;
  char *dst = fill_and_salvage(fx, &f, &st);
  jb_board *src = open_board(fx->dir), *b = open_board(dst);
  jb_iter *a, *c;
  assert_int_equal(jb_iter_open(&a, src, 0), JB_OK);
  assert_int_equal(jb_iter_open(&c, b, 0), JB_OK);
  for (;;) {
    const jb_job *x, *y;
    assert_int_equal(jb_iter_next(&x, a), JB_OK);
    assert_int_equal(jb_iter_next(&y, c), JB_OK);
    if (x == NULL || y == NULL) {
      assert_true(x == NULL && y == NULL);
      break;
    }
    assert_string_equal(jb_job_uuid(x), jb_job_uuid(y));
    assert_string_equal(jb_job_name(x), jb_job_name(y));
    assert_int_equal(jb_job_priority(x), jb_job_priority(y));
    assert_int_equal(jb_job_created(x), jb_job_created(y));
    size_t dx, dy;
    const void *px = jb_job_details(x, &dx), *py = jb_job_details(y, &dy);
    assert_int_equal(dx, dy);
    assert_memory_equal(px, py, dx);
    assert_int_equal(jb_job_state(y), JB_STATE_UNCLAIMED);
  }
  jb_iter_close(a);
  jb_iter_close(c);
  assert_int_equal(jb_board_check(NULL, b, NULL, NULL), JB_OK);
  jb_board_close(src);
  jb_board_close(b);
  free(dst);
  free_filled(&f);
}

static void a_salvage_into_a_directory_that_is_not_empty_is_refused(
    void **state) {
  jbt_fixture *fx = *state;
  filled f;
  jb_salvage_stats st;
  char *dst = fill_and_salvage(fx, &f, &st);
  assert_int_equal(jb_board_salvage(&st, fx->dir, dst, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "is not empty"));
  free(dst);
  free_filled(&f);
}

static void salvage_of_a_missing_source_is_not_found(void **state) {
  jbt_fixture *fx = *state;
  char *nope = jbt_path(fx->dir, "nope");
  char *dst = jbt_path(fx->dir, "dst");
  assert_int_equal(jb_board_salvage(NULL, nope, dst, NULL, NULL), JB_ENOTFOUND);
  struct stat st;
  assert_int_equal(stat(dst, &st), -1);
  free(nope);
  free(dst);
}

static void salvage_into_a_file_is_refused_as_not_a_directory(void **state) {
  jbt_fixture *fx = *state;
  char *file = jbt_path(fx->dir, "data.mdb");
  assert_int_equal(jb_board_salvage(NULL, fx->dir, file, NULL, NULL),
                   JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "not a directory"));
  free(file);
}

static void salvage_of_randomly_damaged_boards(void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  const char *e = getenv("JB_SALVAGE_BOARDS");
  long boards = e ? atol(e) : 200;
  unsigned seed = jbt_seed("salvage of damaged boards");
  print_message("salvage: %ld damaged boards (JB_SALVAGE_BOARDS=%ld)\n",
                boards, boards);
  filled f = make_board(fx->dir, 1200);
  jobmap m = map_jobs(fx->dir);
  rawfile base = raw_read(fx->dir);
  uint64_t npages = base.len / base.ps;
  uint8_t *hit = calloc(npages, 1);
  int *idx = calloc(m.n, sizeof *idx);
  assert_non_null(hit);
  assert_non_null(idx);
  for (size_t i = 0; i < m.n; i++) {
    idx[i] = uuid_of(&f, m.j[i].uuid);
    assert_true(idx[i] >= 0);
  }
  srand(seed);
  size_t want_total = 0, got_total = 0, extra_total = 0;
  for (long k = 0; k < boards; k++) {
    memset(hit, 0, npages);
    rawfile r = {malloc(base.len), base.len, base.ps};
    assert_non_null(r.d);
    memcpy(r.d, base.d, base.len);
    int nd = 1 + rand() % 8;
    for (int i = 0; i < nd; i++) {
      uint64_t p = 2 + (uint64_t)rand() % (npages - 2);
      if (i == 0 && k % 5 == 4) p = (uint64_t)(rand() % 2); /* a meta */
      hit[p] = 1;
      bool zeros = rand() % 3 == 0;
      for (uint32_t b = 0; b < r.ps; b++)
        r.d[p * r.ps + b] = zeros ? 0 : (uint8_t)rand();
    }
    char *dir = jbt_mkdtemp();
    raw_write(dir, &r);
    free(r.d);
    char *dst = jbt_path(dir, "out");
    jb_salvage_stats st;
    int rc = jb_board_salvage(&st, dir, dst, NULL, NULL);
    if (rc != JB_OK) fail_msg("board %ld: %s", k, jb_errmsg());
    jb_board *b = open_board(dst);
    check_seen cs = {0};
    jb_check_stats cst;
    if (jb_board_check(&cst, b, on_check_line, &cs) != JB_OK)
      fail_msg("board %ld (seed %u): the salvaged board fails check: %s", k,
               seed, cs.first[0] ? cs.first : cs.all);
    /* Every job whose pages are intact is there; no consumed one is. */
    size_t want = 0, got = 0;
    for (size_t i = 0; i < m.n; i++) {
      bool intact = !hit[m.j[i].leaf];
      for (uint64_t q = 0; q < m.j[i].ovn; q++)
        if (hit[m.j[i].ov + q]) intact = false;
      jb_state s;
      int gr = jb_job_get_state(&s, b, f.uuids[idx[i]]);
      bool there = gr == JB_OK && s == JB_STATE_UNCLAIMED;
      if (intact && !there)
        fail_msg("board %ld (seed %u): job %s (leaf page %llu) is intact but "
                 "was not salvaged", k, seed, f.uuids[idx[i]],
                 (unsigned long long)m.j[i].leaf);
      want += intact;
      got += there;
    }
    for (size_t i = 0; i < f.n; i++) {
      if (!f.consumed[i]) continue;
      jb_job *j = NULL;
      if (jb_job_get(&j, b, f.uuids[i]) == JB_OK)
        fail_msg("board %ld (seed %u): consumed job %s came back", k, seed,
                 f.uuids[i]);
    }
    size_t count;
    assert_int_equal(jb_board_count(&count, b, 0), JB_OK);
    assert_true(count >= got);
    extra_total += count - got;
    want_total += want;
    got_total += got;
    jb_board_close(b);
    jbt_rmtree(dir);
    free(dst);
    free(dir);
  }
  print_message("salvage: %ld boards: %zu jobs with intact pages, %zu "
                "copied (of %zu live per board), %zu others\n", boards,
                want_total, got_total, m.n, extra_total);
  free(hit);
  free(idx);
  free(base.d);
  free(m.j);
  free_filled(&f);
}


/* With both free lists unreadable, the stale copies on free pages look
 * like pages cut off by damage: only the history and log keep the jobs
 * consumed since from coming back. */
static void salvage_never_returns_a_consumed_job_when_free_lists_are_lost(
    void **state) {
  jbt_fixture *fx = *state;
  jb_board_close(fx->board);
  fx->board = NULL;
  filled f = make_board(fx->dir, 600);
  rawfile r = raw_read(fx->dir);
  size_t nm, om;
  metas(&r, &nm, &om);
  uint64_t roots[2] = {u64at(r.d + nm + 24 + 40), u64at(r.d + om + 24 + 40)};
  for (int i = 0; i < 2; i++) memset(r.d + roots[i] * r.ps, 0, r.ps);
  raw_write(fx->dir, &r);
  free(r.d);
  char *dst = jbt_path(fx->dir, "salvaged");
  jb_salvage_stats st;
  assert_int_equal(jb_board_salvage(&st, fx->dir, dst, NULL, NULL), JB_OK);
  print_message("free lists lost: %zu copied, %zu left out as completed\n",
                st.copied, st.completed);
  jb_board *b = open_board(dst);
  for (size_t i = 0; i < f.n; i++) {
    jb_job *j = NULL;
    int rc = jb_job_get(&j, b, f.uuids[i]);
    jb_job_free(j);
    if (f.consumed[i] && rc == JB_OK)
      fail_msg("consumed job %s came back", f.uuids[i]);
    if (!f.consumed[i] && rc != JB_OK)
      fail_msg("live job %s was not salvaged", f.uuids[i]);
  }
  assert_true(st.completed > 0); /* stale copies were met, and refused */
  jb_board_close(b);
  free(dst);
  free_filled(&f);
}

/* A writer in another process posts, claims and consumes all along:
 * every check of the board meanwhile passes, pages included (the
 * snapshot's pages stay put; pages writers take are off its books). */
typedef struct {
  const char *dir;
  int ready_fd;
} busy_arg;

static int busy_writer(void *varg) {
  busy_arg *a = varg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 1;
  char u[JB_UUID_STRLEN];
  bool told = false;
  int64_t end = jbt_now_ms() + 2500;
  for (unsigned i = 0; jbt_now_ms() < end; i++) {
    jb_post p = JB_POST_INIT;
    p.name = "busy";
    if (jb_job_post(u, b, &p) != JB_OK) return 2;
    if (i % 3 && jb_claim_next(u, NULL, NULL, b, "w", NULL) == JB_OK &&
        jb_consume(b, u, "w", 0, NULL) != JB_OK)
      return 3;
    if (!told && i == 50) {
      told = write(a->ready_fd, "r", 1) == 1;
      if (!told) return 4;
    }
  }
  jb_board_close(b);
  return 0;
}

static void checks_pass_while_another_process_writes(void **state) {
  jbt_fixture *fx = *state;
  busy_arg a = {fx->dir, -1};
  pid_t pid = jbt_fork_ready(busy_writer, &a, &a.ready_fd, 30, "busy writer");
  int checks = 0, unaccounted = 0;
  for (;;) {
    check_seen seen = {0};
    jb_check_stats st;
    int rc = jb_board_check(&st, fx->board, on_check_line, &seen);
    /* The check's own limit: when writers rewrite its snapshot's meta page
     * before it is read 20 times running (a loaded machine, the writer
     * committing every few microseconds), the pages are not accounted for
     * and it says so. That one line alone is not a wrong verdict on the
     * pages; any other line is. */
    if (rc != JB_OK && st.problems == 1 && seen.page_lines == 1 &&
        seen.other_lines == 0 &&
        strstr(seen.first, "pages: not accounted for") == seen.first)
      unaccounted++;
    else if (rc != JB_OK)
      fail_msg("check %d under a writer: %s", checks, seen.all);
    checks++;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      break;
    }
  }
  print_message("%d checks under a writer passed (%d could not account "
                "for the pages)\n", checks, unaccounted);
  assert_true(checks - unaccounted >= 2); /* pages were checked, and held */
}

int main(void) {
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(healthy_busy_board_passes_page_accounting,
                                      jbt_setup, jbt_teardown),
      cmocka_unit_test_setup_teardown(checks_pass_while_another_process_writes,
                                      jbt_setup, jbt_teardown),
      T(a_torn_writemap_meta_after_a_consume_is_salvaged_without_it),
      T(a_torn_writemap_meta_is_reported_by_page_accounting_alone),
      T(a_torn_writemap_meta_after_a_post_is_salvaged_with_it),
      cmocka_unit_test_setup_teardown(leaked_page_is_reported, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(page_in_two_trees_is_reported,
                                      jbt_setup, jbt_teardown),
      cmocka_unit_test_setup_teardown(
          garbage_page_header_is_reported_without_crash, jbt_setup,
          jbt_teardown),
      cmocka_unit_test_setup_teardown(
          node_marked_big_and_duplicates_is_refused, jbt_setup, jbt_teardown),
      T(salvage_of_a_healthy_board_finds_no_damage),
      T(salvage_of_healthy_board_copies_every_job_in_order),
      T(a_salvage_into_a_directory_that_is_not_empty_is_refused),
      T(salvage_of_a_missing_source_is_not_found),
      T(salvage_into_a_file_is_refused_as_not_a_directory),
      cmocka_unit_test_setup_teardown(
          salvage_never_returns_a_consumed_job_when_free_lists_are_lost,
          jbt_setup, jbt_teardown),
      cmocka_unit_test_setup_teardown(salvage_of_randomly_damaged_boards,
                                      jbt_setup, jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
