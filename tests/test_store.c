/*
 * test_store.c - the storage under the API: the map grows past its initial
 * size (in one process and as seen by another), reopening keeps jobs and
 * sequences, stale reader slots are cleared on open, a writer killed
 * inside its transaction does not wedge the board, and postings that do
 * not decode are reported and quarantined, never deleted.
 *
 * Damage is done with LMDB directly, following the schema in
 * store/store.h, always in a forked child (a process must not open one
 * environment twice).
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"
#include "core/sync_hook.h"

#include <errno.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void uuid_bytes(uint8_t out[16], const char *text) {
  for (int i = 0, o = 0; text[i] && o < 16; i++) {
    if (text[i] == '-') continue;
    unsigned v;
    sscanf(text + i, "%2x", &v);
    out[o++] = (uint8_t)v;
    i++;
  }
}

/* ------------------------------------------------- raw LMDB in a child */

typedef enum {
  RAW_CORRUPT_POSTING, /* replace the posting of `uuid`, keep its header */
  RAW_DROP_READY,      /* delete the ready entry of `uuid` */
  RAW_ADD_CLAIM,       /* add a claim record for (ready) `uuid` */
  RAW_HOLD_READER,     /* open a read txn, report, wait to be killed */
  RAW_HOLD_WRITER,     /* open a write txn, write, report, wait */
  RAW_QUARANTINE_HAS,  /* exit 0 iff a quarantine record ends with `saved` */
  RAW_READER_CHECK,    /* exit with the number of stale reader slots */
} raw_op;

typedef struct {
  raw_op op;
  const char *dir;
  char uuid[JB_UUID_STRLEN];
  const char *saved; /* file: the damaged jobs value (CORRUPT writes it) */
  int ready_fd;      /* HOLD_*: a byte is written here when holding */
} raw_args;

/* The jobkey (priority rank, sequence) of job `uuid`, from its header. */
static int raw_jobkey(MDB_txn *txn, MDB_dbi jobs, const char *uuid,
                      uint8_t key[JB_JOBKEY_LEN]) {
  uint8_t u[16];
  uuid_bytes(u, uuid);
  MDB_val k = {16, u}, v;
  int rc = mdb_get(txn, jobs, &k, &v);
  if (rc) return rc;
  if (v.mv_size < sizeof(jb_jobhdr)) return MDB_CORRUPTED;
  jb_jobhdr h;
  memcpy(&h, v.mv_data, sizeof h);
  memcpy(key, h.jobkey, JB_JOBKEY_LEN);
  return 0;
}

/* Open the board with raw LMDB as the library does (its table and reader
 * counts); 0 or the LMDB error, printed. Only in a forked child. */
static int raw_env(MDB_env **env, const char *dir, unsigned flags,
                   mdb_mode_t mode) {
  int rc = mdb_env_create(env);
  if (rc == 0) {
    mdb_env_set_maxdbs(*env, 16);
    mdb_env_set_maxreaders(*env, 1022);
    if ((rc = mdb_env_open(*env, dir, flags, mode)))
      fprintf(stderr, "raw open of %s: %s\n", dir, mdb_strerror(rc));
  }
  return rc;
}

static int raw_child(void *arg) {
  raw_args *a = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi jobs, ready, claims, quarantine;
  uint8_t key[JB_JOBKEY_LEN];
  int rc;
  if (raw_env(&env, a->dir, 0, 0644)) return 102;
  bool rdonly = a->op == RAW_HOLD_READER || a->op == RAW_QUARANTINE_HAS;
  if (a->op == RAW_READER_CHECK) {
    int dead = -1;
    if (mdb_reader_check(env, &dead)) return 103;
    mdb_env_close(env);
    return dead;
  }
  if (mdb_txn_begin(env, NULL, rdonly ? MDB_RDONLY : 0, &txn)) return 104;
  if (mdb_dbi_open(txn, JB_DB_JOBS, 0, &jobs) ||
      mdb_dbi_open(txn, JB_DB_READY, 0, &ready) ||
      mdb_dbi_open(txn, JB_DB_CLAIMS, 0, &claims) ||
      mdb_dbi_open(txn, JB_DB_QUARANTINE, 0, &quarantine))
    return 105;
  switch (a->op) {
  case RAW_CORRUPT_POSTING: {
    uint8_t u[16];
    uuid_bytes(u, a->uuid);
    MDB_val k = {16, u}, v;
    if (mdb_get(txn, jobs, &k, &v)) return 107;
    /* Keep the header, then a map that claims 3 entries and ends early. */
    static const uint8_t bad[] = {0x83, 0xa4, 'u', 'u', 'i', 'd', 0xc1};
    uint8_t buf[sizeof(jb_jobhdr) + sizeof bad];
    memcpy(buf, v.mv_data, sizeof(jb_jobhdr));
    memcpy(buf + sizeof(jb_jobhdr), bad, sizeof bad);
    MDB_val nv = {sizeof buf, buf};
    if (mdb_put(txn, jobs, &k, &nv, 0)) return 109;
    /* The damaged record, as quarantine must keep it. */
    FILE *fp = fopen(a->saved, "wb");
    if (!fp || fwrite(buf, 1, sizeof buf, fp) != sizeof buf) return 108;
    fclose(fp);
    break;
  }
  case RAW_DROP_READY: {
    if (raw_jobkey(txn, jobs, a->uuid, key)) return 106;
    MDB_val k = {JB_JOBKEY_LEN, key};
    if (mdb_del(txn, ready, &k, NULL)) return 110;
    break;
  }
  case RAW_ADD_CLAIM: {
    if (raw_jobkey(txn, jobs, a->uuid, key)) return 106;
    uint8_t rec[sizeof(jb_claimrec) + 5];
    jb_claimrec cr = {.format = 1, .owner_len = 5, .claimed_us = 1};
    uuid_bytes(cr.uuid, a->uuid);
    memcpy(rec, &cr, sizeof cr);
    memcpy(rec + sizeof cr, "ghost", 5);
    MDB_val k = {JB_JOBKEY_LEN, key}, v = {sizeof rec, rec};
    if (mdb_put(txn, claims, &k, &v, 0)) return 111;
    break;
  }
  case RAW_HOLD_READER:
  case RAW_HOLD_WRITER: {
    if (a->op == RAW_HOLD_WRITER) {
      /* A half-done write: a job record nobody indexes. */
      uint8_t k16[16] = {0xde, 0xad, 0xbe, 0xef};
      MDB_val k = {sizeof k16, k16}, v = {5, "half!"};
      if (mdb_put(txn, jobs, &k, &v, 0)) return 112;
    }
    char c = 'h';
    if (write(a->ready_fd, &c, 1) != 1) return 113;
    for (;;) pause(); /* until SIGKILL */
  }
  case RAW_QUARANTINE_HAS: {
    FILE *fp = fopen(a->saved, "rb");
    if (!fp) return 114;
    uint8_t want[65536];
    size_t wn = fread(want, 1, sizeof want, fp);
    fclose(fp);
    MDB_cursor *c;
    if (mdb_cursor_open(txn, quarantine, &c)) return 115;
    MDB_val k, v;
    int found = 0;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
      if (v.mv_size >= wn &&
          memcmp((uint8_t *)v.mv_data + v.mv_size - wn, want, wn) == 0)
        found = 1;
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return found ? 0 : 116;
  }
  case RAW_READER_CHECK:
    break;
  }
  if (mdb_txn_commit(txn)) return 117;
  mdb_env_close(env);
  return 0;
}

static void raw(raw_op op, const char *dir, const char *uuid,
                const char *saved) {
  raw_args a = {op, dir, {0}, saved, -1};
  if (uuid) memcpy(a.uuid, uuid, JB_UUID_STRLEN);
  jbt_wait_ok(jbt_fork(raw_child, &a, 30), 30000);
}

/* Start a child that holds a read or write transaction; returns once it
 * holds it (it is then waiting to be killed). */
static pid_t raw_hold(raw_op op, const char *dir) {
  raw_args a = {op, dir, {0}, NULL, -1};
  return jbt_fork_ready(raw_child, &a, &a.ready_fd, 60,
                        "the holding child failed before holding its "
                        "transaction");
}

static void kill9(pid_t pid) {
  kill(pid, SIGKILL);
  int st = jbt_wait(pid, 10000);
  assert_true(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---------------------------------------------------------- map growth */

static jb_board *open_small(const char *dir, jb_durability d) {
  return jbt_open(dir, d, 256 * 1024);
}

static void post_blobs(jb_board *b, jbt_uuids *out, size_t n, size_t batch,
                       unsigned seed) {
  jb_post *posts = calloc(batch, sizeof *posts);
  jbt_buf *blobs = calloc(batch, sizeof *blobs);
  char(*uuids)[JB_UUID_STRLEN] = calloc(batch, sizeof *uuids);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < batch ? n - done : batch;
    for (size_t i = 0; i < k; i++) {
      blobs[i] = jbt_details_blob(1024, seed + (unsigned)(done + i));
      jb_post p = JB_POST_INIT;
      p.name = "blob";
      p.details = blobs[i].data;
      p.details_len = blobs[i].len;
      posts[i] = p;
    }
    int rc = k == 1 ? jb_job_post(uuids[0], b, &posts[0])
                    : jb_job_post_batch(uuids, b, posts, k);
    if (rc != JB_OK)
      fail_msg("post #%zu (batch of %zu): %s", done, k, jb_errmsg());
    for (size_t i = 0; i < k; i++) {
      jbt_uuids_add(out, uuids[i]);
      jbt_buf_free(&blobs[i]);
    }
    done += k;
  }
  free(posts);
  free(blobs);
  free(uuids);
}

/* Every job in `posted` is on the board with the details it was posted
 * with (the i-th was posted with seed + i). */
static void assert_blobs_readable(jb_board *b, const jbt_uuids *posted,
                                  unsigned seed) {
  size_t count = 0;
  assert_int_equal(jb_board_count(&count, b, 0), JB_OK);
  assert_int_equal(count, posted->n);
  for (size_t i = 0; i < posted->n; i++) {
    jb_job *j = NULL;
    int rc = jb_job_get(&j, b, posted->v[i]);
    if (rc != JB_OK) fail_msg("job #%zu %s: %s", i, posted->v[i], jb_errmsg());
    jbt_buf want = jbt_details_blob(1024, seed + (unsigned)i);
    size_t len;
    const void *d = jb_job_details(j, &len);
    assert_int_equal(len, want.len);
    assert_memory_equal(d, want.data, len);
    jbt_buf_free(&want);
    jb_job_free(j);
  }
}

static off_t data_size(const char *dir) {
  char *p = jbt_path(dir, "data.mdb");
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  free(p);
  return st.st_size;
}

static void grows_with(jbt_fixture *f, jb_durability d, size_t n,
                       size_t batch) {
  jb_board_close(f->board);
  jbt_rmtree(f->dir);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  f->board = open_small(f->dir, d);
  jbt_uuids posted = {0};
  post_blobs(f->board, &posted, n, batch, 7);
  assert_true(data_size(f->dir) > 4 * 256 * 1024);
  assert_blobs_readable(f->board, &posted, 7);
  jbt_assert_check_ok(f->board);
  /* After a reopen that asks for the small map again. */
  jb_board_close(f->board);
  f->board = open_small(f->dir, d);
  assert_blobs_readable(f->board, &posted, 7);
  jbt_uuids_free(&posted);
}

static void map_grows_past_its_initial_size_one_post_at_a_time(void **state) {
  grows_with(*state, JB_DURABILITY_NORMAL, 5000, 1);
}

static void map_grows_past_its_initial_size_in_mode_none(void **state) {
  grows_with(*state, JB_DURABILITY_NONE, 5000, 1);
}

static void map_grows_for_a_batch_bigger_than_the_whole_map(void **state) {
  /* 1000 postings of ~1 KiB in one transaction: four times the map. */
  grows_with(*state, JB_DURABILITY_NONE, 3000, 1000);
}

/* Closes the fixture's board and opens a new one in its directory's
 * subdirectory `name` (*dir, to free). */
static jb_board *board_beside(jbt_fixture *f, const char *name, char **dir) {
  jb_board_close(f->board);
  f->board = NULL;
  *dir = jbt_path(f->dir, name);
  return jbt_open(*dir, JB_DURABILITY_NORMAL, 0);
}

/* Set the board's schema number to `schema` (raw LMDB, in a child). */
typedef struct {
  const char *dir;
  uint32_t schema; /* 0: only read it into `seen` */
  uint32_t seen;
} schema_args;

static int schema_child(void *arg) {
  schema_args *a = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi dbi;
  if (raw_env(&env, a->dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, JB_DB_META, 0, &dbi)) return 4;
  MDB_val k = {6, "schema"}, v = {sizeof a->schema, &a->schema};
  if (a->schema) {
    if (mdb_put(txn, dbi, &k, &v, 0)) return 5;
  } else {
    if (mdb_get(txn, dbi, &k, &v) || v.mv_size != 4) return 6;
    uint32_t seen;
    memcpy(&seen, v.mv_data, 4);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return (int)seen; /* the exit status carries it */
  }
  if (mdb_txn_commit(txn)) return 7;
  mdb_env_close(env);
  return 0;
}

static uint32_t schema_of(const char *dir) {
  schema_args a = {dir, 0, 0};
  int st = jbt_wait(jbt_fork(schema_child, &a, 20), 20000);
  assert_true(st != -1 && WIFEXITED(st));
  return (uint32_t)WEXITSTATUS(st);
}

/* A board written by a release that mapped it with MDB_WRITEMAP (schema 3;
 * the file preallocated to the map size) opens in every mode of this one,
 * keeps every job and owner, is marked schema 4 (so that such a release
 * now refuses it instead of mixing map modes with us), and takes writes. */
static void a_schema_3_board_made_with_writemap_opens_in_every_mode(
    void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = NULL;
  static const jb_durability modes[] = {JB_DURABILITY_NONE, JB_DURABILITY_NORMAL,
                                        JB_DURABILITY_FULL};
  for (size_t m = 0; m < 3; m++) {
    char name[16];
    snprintf(name, sizeof name, "old%zu", m);
    char *dir = jbt_path(f->dir, name);
    jb__store_test_writemap(true);
    jb_board *b = jbt_open(dir, JB_DURABILITY_NONE, 256 * 1024);
    jb__store_test_writemap(false);
    jbt_uuids posted = {0};
    post_blobs(b, &posted, 300, 1, 5); /* grows the map twice */
    char claimed[JB_UUID_STRLEN];
    assert_int_equal(jb_claim_next(claimed, NULL, NULL, b, "old-owner", NULL), JB_OK);
    jb_board_close(b);
    schema_args set = {dir, 3, 0};
    jbt_wait_ok(jbt_fork(schema_child, &set, 20), 20000);
    assert_int_equal(schema_of(dir), 3);

    b = jbt_open(dir, modes[m], 0);
    assert_blobs_readable(b, &posted, 5);
    char owner[JB_WHO_MAX + 1];
    assert_int_equal(jb_job_find_owner(owner, b, claimed), JB_OK);
    assert_string_equal(owner, "old-owner");
    jbt_post(NULL, b, "after-upgrade", JB_PRIORITY_NORMAL);
    jbt_assert_check_ok(b);
    jb_board_close(b);
    assert_int_equal(schema_of(dir), JB_SCHEMA_VERSION);
    assert_int_equal(JB_SCHEMA_VERSION, 12);
    jbt_uuids_free(&posted);
    free(dir);
  }
}

/* Move every record of table `from` into `to` and drop `from` (raw LMDB:
 * the layout of an older schema). *moved counts them. 0, or LMDB's code. */
static int fold_table(MDB_txn *txn, MDB_dbi from, MDB_dbi to,
                      size_t *moved) {
  MDB_cursor *cur;
  MDB_val k, v;
  *moved = 0;
  int rc = mdb_cursor_open(txn, from, &cur);
  if (rc) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    uint8_t buf[4096];
    if (v.mv_size > sizeof buf) return EINVAL;
    memcpy(buf, v.mv_data, v.mv_size);
    MDB_val nv = {v.mv_size, buf};
    if ((rc = mdb_put(txn, to, &k, &nv, MDB_NOOVERWRITE))) return rc;
    (*moved)++;
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;
  return mdb_drop(txn, from, 1);
}

/* Make the history of the board open in `txn` look as schema 5 left it:
 * every record in `history` (those of `histends` moved there, the table
 * dropped). *in_ends counts the records that were in `histends`. */
static int history_as_schema5(MDB_txn *txn, MDB_dbi hist, size_t *in_ends) {
  MDB_dbi ends;
  int rc = mdb_dbi_open(txn, JB_DB_HISTENDS, 0, &ends);
  return rc ? rc : fold_table(txn, ends, hist, in_ends);
}

/* Make the board in `dir` look as schema 4 left it (raw LMDB, in a
 * child): the change log in `log` alone (the events of `logtail` moved
 * there, the table dropped), the history in `history` alone with a 'u' +
 * uuid -> hseq entry for each record, and schema 4 in meta. Exit status
 * 0, or the step that failed. */
static int schema4_child(void *arg) {
  const char *dir = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi meta, log, tail, hist;
  MDB_cursor *cur;
  MDB_val k, v;
  if (raw_env(&env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, JB_DB_META, 0, &meta) ||
      mdb_dbi_open(txn, JB_DB_LOG, 0, &log) ||
      mdb_dbi_open(txn, JB_DB_LOGTAIL, 0, &tail) ||
      mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist))
    return 4;
  size_t in_ends;
  if (history_as_schema5(txn, hist, &in_ends)) return 15;
  size_t moved = 0;
  if (fold_table(txn, tail, log, &moved)) return 7;
  if (moved == 0) return 8; /* the test wants events in the tail */
  if (mdb_cursor_open(txn, hist, &cur)) return 10;
  uint8_t (*uk)[17] = calloc(4096, 17);
  uint8_t (*hv)[8] = calloc(4096, 8);
  size_t nu = 0;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (k.mv_size != 9 || ((uint8_t *)k.mv_data)[0] != 's' || nu == 4096)
      return 11;
    uk[nu][0] = 'u';
    memcpy(uk[nu] + 1, (uint8_t *)v.mv_data + 16, 16); /* jb_histrec.uuid */
    memcpy(hv[nu], (uint8_t *)k.mv_data + 1, 8);
    nu++;
  }
  mdb_cursor_close(cur);
  for (size_t i = 0; i < nu; i++) {
    MDB_val kk = {17, uk[i]}, vv = {8, hv[i]};
    if (mdb_put(txn, hist, &kk, &vv, 0)) return 12;
  }
  free(uk);
  free(hv);
  uint32_t four = 4;
  k = (MDB_val){6, "schema"};
  v = (MDB_val){sizeof four, &four};
  if (mdb_put(txn, meta, &k, &v, 0)) return 13;
  if (mdb_txn_commit(txn)) return 14;
  mdb_env_close(env);
  return 0;
}

/* Entries of the board's history whose key starts with 'u' (raw LMDB, in
 * a child): the exit status. */
static int count_u_child(void *arg) {
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi hist;
  MDB_cursor *cur;
  if (raw_env(&env, arg, MDB_RDONLY, 0644)) return 250;
  if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) ||
      mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist) ||
      mdb_cursor_open(txn, hist, &cur))
    return 251;
  MDB_val k = {1, "u"}, v;
  int n = 0;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
       rc == 0 && ((uint8_t *)k.mv_data)[0] == 'u' && n < 200;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
    n++;
  return n;
}

static int count_u(const char *dir) {
  int st = jbt_wait(jbt_fork(count_u_child, (void *)dir, 20), 20000);
  assert_true(st != -1 && WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* A board of schema 4 (its change log in `log` alone, its history indexed
 * by 'u' entries) opens, is marked schema 5, keeps every event and every
 * completion, and its sequences go on after the last event: the next post
 * gets the next sequence, its event follows the old ones in the log. */
typedef struct {
  char *dir;
  char done[40][JB_UUID_STRLEN]; /* consumed before the upgrade */
  uint64_t first, next;          /* the log's bounds then */
} old4;

/* Forty jobs consumed and one waiting, on a board made to look as schema
 * 4 left it, then opened (upgraded); returns the handle. */
static jb_board *upgraded_from_4(jbt_fixture *f, old4 *o) {
  jb_board *b = board_beside(f, "old4", &o->dir);
  for (int i = 0; i < 40; i++) {
    char c[JB_UUID_STRLEN];
    jbt_post(o->done[i], b, "old-job", JB_PRIORITY_NORMAL);
    assert_int_equal(jb_claim_next(c, NULL, NULL, b, "old-owner", NULL), JB_OK);
    assert_int_equal(jb_consume(b, c, "old-owner", 0, NULL), JB_OK);
  }
  char waiting[JB_UUID_STRLEN];
  jbt_post(waiting, b, "still-there", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_log_bounds(&o->first, &o->next, b), JB_OK);
  jb_board_close(b);
  jbt_wait_ok(jbt_fork(schema4_child, o->dir, 20), 20000);
  assert_int_equal(schema_of(o->dir), 4);
  assert_int_equal(count_u(o->dir), 40);
  return jbt_open(o->dir, JB_DURABILITY_NORMAL, 0);
}

/* The end of a test of an upgraded board: b checked and closed, its
 * directory's name freed. */
static void upgraded_done(char *dir, jb_board *b) {
  jbt_assert_check_ok(b);
  jb_board_close(b);
  free(dir);
}

/* Marked with this schema; the 'u' entries gone. */
static void a_schema_4_board_upgrades_to_the_log_tail(void **state) {
  old4 o;
  jb_board *b = upgraded_from_4(*state, &o);
  assert_int_equal(schema_of(o.dir), JB_SCHEMA_VERSION);
  assert_int_equal(count_u(o.dir), 0);
  upgraded_done(o.dir, b);
}

static void a_schema_4_board_keeps_every_event(void **state) {
  old4 o;
  jb_board *b = upgraded_from_4(*state, &o);
  uint64_t f2, n2;
  assert_int_equal(jb_log_bounds(&f2, &n2, b), JB_OK);
  assert_int_equal(f2, o.first);
  assert_int_equal(n2, o.next);
  jb_event ev[128];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, o.first, 128), JB_OK);
  assert_int_equal(n, o.next - o.first);
  for (size_t i = 0; i < n; i++) assert_int_equal(ev[i].seq, o.first + i);
  upgraded_done(o.dir, b);
}

static void a_schema_4_board_keeps_every_completion(void **state) {
  old4 o;
  jb_board *b = upgraded_from_4(*state, &o);
  for (int i = 0; i < 40; i++) {
    jb_completion *c = NULL;
    assert_int_equal(jb_job_completion(&c, b, o.done[i]), JB_OK);
    assert_string_equal(c->owner, "old-owner");
    jb_completion_free(c);
  }
  upgraded_done(o.dir, b);
}

/* The next post gets the next sequence; its event follows the old ones. */
static void a_schema_4_boards_sequences_go_on_after_the_last_event(
    void **state) {
  old4 o;
  jb_board *b = upgraded_from_4(*state, &o);
  char u[JB_UUID_STRLEN];
  jbt_post(u, b, "after-upgrade", JB_PRIORITY_NORMAL);
  jb_job *job = NULL;
  assert_int_equal(jb_job_get(&job, b, u), JB_OK);
  assert_int_equal(jb_job_sequence(job), o.next);
  jb_job_free(job);
  jb_event ev[128];
  size_t n = 0;
  assert_int_equal(jb_log_read(ev, &n, NULL, b, o.next, 128), JB_OK);
  assert_int_equal(n, 1);
  assert_string_equal(ev[0].uuid, u);
  upgraded_done(o.dir, b);
}

/* Make the board in `dir` look as schema 5 left it (raw LMDB, in a
 * child): every history record in `history`, schema 5 in meta. Exit
 * status 0, or the step that failed (5: `histends` held no record, which
 * the test wants). */
static int schema5_child(void *arg) {
  const char *dir = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi meta, hist;
  if (raw_env(&env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, JB_DB_META, 0, &meta) ||
      mdb_dbi_open(txn, JB_DB_HISTORY, 0, &hist))
    return 4;
  size_t in_ends;
  if (history_as_schema5(txn, hist, &in_ends)) return 6;
  if (in_ends == 0) return 5;
  uint32_t five = 5;
  MDB_val k = {6, "schema"}, v = {sizeof five, &five};
  if (mdb_put(txn, meta, &k, &v, 0)) return 7;
  if (mdb_txn_commit(txn)) return 8;
  mdb_env_close(env);
  return 0;
}

/* Schema 6's jobkey of a job keyed `key` now: the board sequence as it
 * was (a local job), or, for a Redis-decided one, 1000 + its Redis
 * sequence (standing for the board sequence the mirror gave it). */
static void key_as_schema6(uint8_t old[JB_JOBKEY_LEN],
                           const uint8_t key[JB_JOBKEY_LEN]) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | key[1 + i];
  v = v >> 63 ? v & ~(UINT64_C(1) << 63) : 1000 + (v >> 16);
  old[0] = key[0];
  for (int i = 0; i < 8; i++) old[1 + i] = (uint8_t)(v >> (56 - 8 * i));
}

/* Move the entries of table `dbi` whose key ends with a jobkey (its last
 * JB_JOBKEY_LEN bytes; the whole key when klen is JB_JOBKEY_LEN) to
 * schema 6's jobkey. */
static int rekey_table_as_schema6(MDB_txn *txn, MDB_dbi dbi) {
  MDB_cursor *cur;
  if (mdb_cursor_open(txn, dbi, &cur)) return 1;
  MDB_val k, v;
  uint8_t keys[64][64], vals[64][128];
  size_t klen[64], vlen[64], n = 0;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    if (n == 64 || k.mv_size > 64 || v.mv_size > 128) return 2;
    memcpy(keys[n], k.mv_data, k.mv_size);
    memcpy(vals[n], v.mv_data, v.mv_size);
    klen[n] = k.mv_size;
    vlen[n++] = v.mv_size;
  }
  mdb_cursor_close(cur);
  for (size_t i = 0; i < n; i++) {
    k = (MDB_val){klen[i], keys[i]};
    if (mdb_del(txn, dbi, &k, NULL)) return 3;
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t *jk = keys[i] + klen[i] - JB_JOBKEY_LEN;
    uint8_t old[JB_JOBKEY_LEN];
    key_as_schema6(old, jk);
    memcpy(jk, old, JB_JOBKEY_LEN);
    k = (MDB_val){klen[i], keys[i]};
    v = (MDB_val){vlen[i], vals[i]};
    if (mdb_put(txn, dbi, &k, &v, 0)) return 4;
  }
  return 0;
}

/* Make the board in `dir` look as schema 6 left it (raw LMDB, in a
 * child): jobkeys in one band, the board sequence (store.h before schema
 * 7), in jobs' headers, ready, claims, leases and holders; schema 6. */
static int schema6_child(void *arg) {
  const char *dir = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi meta, jobs, t[4];
  if (raw_env(&env, dir, 0, 0644)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  if (mdb_dbi_open(txn, JB_DB_META, 0, &meta) ||
      mdb_dbi_open(txn, JB_DB_JOBS, 0, &jobs) ||
      mdb_dbi_open(txn, JB_DB_READY, 0, &t[0]) ||
      mdb_dbi_open(txn, JB_DB_CLAIMS, 0, &t[1]) ||
      mdb_dbi_open(txn, JB_DB_LEASES, 0, &t[2]) ||
      mdb_dbi_open(txn, JB_DB_HOLDERS, 0, &t[3]))
    return 4;
  MDB_cursor *cur;
  if (mdb_cursor_open(txn, jobs, &cur)) return 5;
  MDB_val k, v;
  for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    uint8_t buf[4096];
    if (v.mv_size > sizeof buf) return 6;
    memcpy(buf, v.mv_data, v.mv_size);
    jb_jobhdr h;
    memcpy(&h, buf, sizeof h);
    uint8_t old[JB_JOBKEY_LEN];
    key_as_schema6(old, h.jobkey);
    memcpy(h.jobkey, old, JB_JOBKEY_LEN);
    memcpy(buf, &h, sizeof h);
    MDB_val nv = {v.mv_size, buf};
    if (mdb_cursor_put(cur, &k, &nv, MDB_CURRENT)) return 7;
  }
  mdb_cursor_close(cur);
  for (int i = 0; i < 4; i++)
    if (rekey_table_as_schema6(txn, t[i])) return 8 + i;
  uint32_t six = 6;
  k = (MDB_val){6, "schema"};
  v = (MDB_val){sizeof six, &six};
  if (mdb_put(txn, meta, &k, &v, 0)) return 12;
  if (mdb_txn_commit(txn)) return 13;
  mdb_env_close(env);
  return 0;
}

/* A board of schema 6 (jobkeys by board sequence only) opens, every job
 * moves to its band: the Redis-decided ones first (in their old order,
 * until the replicator's next full pull gives them Redis's), then the
 * local ones in board order with their sequences; a leased claim keeps
 * its lease, a bound claim its holder; check finds nothing; later posts
 * and claims go on as before. */
typedef struct {
  char *dir;
  char l1[JB_UUID_STRLEN], l2[JB_UUID_STRLEN], l3[JB_UUID_STRLEN],
      r1[JB_UUID_STRLEN], r2[JB_UUID_STRLEN];
  uint64_t seq[3]; /* l1..l3's sequences before the upgrade */
} old6;

/* Three local jobs (l2 leased by "leaser", l3 bound to this process by
 * "binder") and two Redis-decided ones posted after them (marked, as the
 * replicator's publication does), on a board made to look as schema 6
 * left it, then opened (upgraded); returns the handle. */
static jb_board *upgraded_from_6(jbt_fixture *f, old6 *o) {
  jb_board *b = board_beside(f, "old6", &o->dir);
  jbt_post(o->l1, b, "local-1", JB_PRIORITY_NORMAL);
  jbt_post(o->l2, b, "local-2-leased", JB_PRIORITY_NORMAL);
  jbt_post(o->l3, b, "local-3-bound", JB_PRIORITY_NORMAL);
  jb_claim_options lease = JB_CLAIM_OPTIONS_INIT, bind = JB_CLAIM_OPTIONS_INIT;
  lease.lease_ms = 60000;
  bind.flags = JB_CLAIM_BIND_PROCESS;
  assert_int_equal(jb_claim(NULL, b, o->l2, "leaser", &lease), JB_OK);
  assert_int_equal(jb_claim(NULL, b, o->l3, "binder", &bind), JB_OK);
  jbt_post(o->r1, b, "remote-1", JB_PRIORITY_NORMAL);
  jbt_post(o->r2, b, "remote-2", JB_PRIORITY_NORMAL);
  assert_int_equal(jb__board_mark_remote(b, o->r1), JB_OK);
  assert_int_equal(jb__board_mark_remote(b, o->r2), JB_OK);
  const char *ls[3] = {o->l1, o->l2, o->l3};
  for (int i = 0; i < 3; i++) {
    jb_job *job = NULL;
    assert_int_equal(jb_job_get(&job, b, ls[i]), JB_OK);
    o->seq[i] = jb_job_sequence(job);
    jb_job_free(job);
  }
  jb_board_close(b);
  jbt_wait_ok(jbt_fork(schema6_child, o->dir, 20), 20000);
  assert_int_equal(schema_of(o->dir), 6);
  return jbt_open(o->dir, JB_DURABILITY_NORMAL, 0);
}

/* Marked with this schema; Redis's jobs list before the local ones. */
static void a_schema_6_board_upgrades_to_the_jobkey_bands(void **state) {
  old6 o;
  jb_board *b = upgraded_from_6(*state, &o);
  assert_int_equal(schema_of(o.dir), JB_SCHEMA_VERSION);
  jbt_assert_check_ok(b);
  char got[8][JB_UUID_STRLEN];
  const char *want[5] = {o.r1, o.r2, o.l1, o.l2, o.l3};
  assert_int_equal(jbt_listing_order(b, got, 8), 5);
  for (int i = 0; i < 5; i++) assert_string_equal(got[i], want[i]);
  upgraded_done(o.dir, b);
}

/* Sequences, owners, leases and holders. */
static void a_schema_6_board_keeps_its_jobs_and_claims(void **state) {
  old6 o;
  jb_board *b = upgraded_from_6(*state, &o);
  const char *ls[3] = {o.l1, o.l2, o.l3};
  for (int i = 0; i < 3; i++) {
    jb_job *job = NULL;
    assert_int_equal(jb_job_get(&job, b, ls[i]), JB_OK);
    assert_int_equal(jb_job_sequence(job), o.seq[i]);
    if (i == 1) {
      assert_string_equal(jb_job_owner(job), "leaser");
      assert_true(jb_job_lease_expires(job) > 0);
    }
    if (i == 2) assert_int_equal(jb_job_holder_pid(job), (int)getpid());
    jb_job_free(job);
  }
  upgraded_done(o.dir, b);
}

/* Extended, consumed. */
static void the_leased_and_bound_claims_of_a_schema_6_board_still_work(
    void **state) {
  old6 o;
  jb_board *b = upgraded_from_6(*state, &o);
  assert_int_equal(jb_extend(b, o.l2, "leaser", 0, 120000), JB_OK);
  assert_int_equal(jb_consume(b, o.l2, "leaser", 0, NULL), JB_OK);
  assert_int_equal(jb_consume(b, o.l3, "binder", 0, NULL), JB_OK);
  upgraded_done(o.dir, b);
}

/* Redis's jobs are skipped without Redis; a local post after the upgrade
 * comes after the old local job. */
static void claim_next_after_a_schema_6_upgrade_takes_local_jobs_in_order(
    void **state) {
  old6 o;
  jb_board *b = upgraded_from_6(*state, &o);
  char l4[JB_UUID_STRLEN], c[JB_UUID_STRLEN];
  jbt_post(l4, b, "after-upgrade", JB_PRIORITY_NORMAL);
  assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(c, o.l1);
  assert_int_equal(jb_claim_next(c, NULL, NULL, b, "w", NULL), JB_OK);
  assert_string_equal(c, l4);
  upgraded_done(o.dir, b);
}

/* Every record of the history, oldest first, is completions[from..to). */
static void assert_history_is(jb_board *b, char (*done)[JB_UUID_STRLEN],
                              size_t from, size_t to) {
  size_t n = 0;
  assert_int_equal(jb_history_count(&n, b), JB_OK);
  assert_int_equal(n, to - from);
  jb_history_iter *it = NULL;
  assert_int_equal(jb_history_query(&it, b, &(jb_history_options){.version = JB_HISTORY_OPTIONS_VERSION, .flags = JB_HISTORY_OLDEST_FIRST}), JB_OK);
  const jb_completion *c;
  size_t i = from;
  while (jb_history_next(&c, it) == JB_OK && c != NULL) {
    assert_true(i < to);
    assert_string_equal(c->uuid, done[i]);
    i++;
  }
  assert_int_equal(i, to);
  jb_history_close(it);
}

/* A board of schema 5 (every history record in `history`) opens, is
 * marked schema 6, keeps every completion in order, and its history goes
 * on from there: new records follow the old ones, and the count bound
 * keeps exactly the newest, trimming the old records from `history`'s
 * front. */

/* Jobs completed before the upgrade, the history's limit after it, and
 * jobs completed after it. */
enum { OLD = 300, MAX = 250, NEW = 80 };

/* OLD jobs consumed on a board made to look as schema 5 left it, then
 * opened (upgraded) keeping MAX history records; returns the handle. */
static jb_board *upgraded_from_5(jbt_fixture *f, char **dir,
                                 char (**done)[JB_UUID_STRLEN]) {
  jb_board *b = board_beside(f, "old5", dir);
  *done = calloc(OLD + NEW, JB_UUID_STRLEN);
  for (int i = 0; i < OLD; i++) {
    char c[JB_UUID_STRLEN];
    jbt_post((*done)[i], b, "old-job", JB_PRIORITY_NORMAL);
    assert_int_equal(jb_claim_next(c, NULL, NULL, b, "old-owner", NULL), JB_OK);
    assert_int_equal(jb_consume(b, c, "old-owner", 0, NULL), JB_OK);
  }
  jb_board_close(b);
  jbt_wait_ok(jbt_fork(schema5_child, *dir, 20), 20000);
  assert_int_equal(schema_of(*dir), 5);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.history_max = MAX;
  assert_int_equal(jb_board_open(&b, *dir, &o), JB_OK);
  return b;
}

/* Marked with this schema, every record kept (past MAX, until the next
 * completion). */
static void a_schema_5_board_upgrades_to_the_history_ends(void **state) {
  char *dir, (*done)[JB_UUID_STRLEN];
  jb_board *b = upgraded_from_5(*state, &dir, &done);
  assert_int_equal(schema_of(dir), JB_SCHEMA_VERSION);
  assert_history_is(b, done, 0, OLD);
  jbt_assert_check_ok(b);
  jb_board_close(b);
  free(done);
  free(dir);
}

/* The first completion trims the 51 oldest, each after it one: exactly
 * MAX stay. */
static void a_schema_5_boards_history_keeps_its_max_after_the_upgrade(
    void **state) {
  char *dir, (*done)[JB_UUID_STRLEN];
  jb_board *b = upgraded_from_5(*state, &dir, &done);
  for (int i = OLD; i < OLD + NEW; i++) {
    char c[JB_UUID_STRLEN];
    jbt_post(done[i], b, "new-job", JB_PRIORITY_NORMAL);
    assert_int_equal(jb_claim_next(c, NULL, NULL, b, "new-owner", NULL), JB_OK);
    assert_int_equal(jb_consume(b, c, "new-owner", 0, NULL), JB_OK);
    assert_history_is(b, done, i + 1 - MAX, i + 1);
  }
  jb_completion *c = NULL;
  assert_int_equal(jb_job_completion(&c, b, done[OLD + NEW - MAX - 1]),
                   JB_ENOTFOUND);
  assert_int_equal(jb_job_completion(&c, b, done[OLD + NEW - MAX]), JB_OK);
  assert_string_equal(c->owner, "old-owner");
  assert_int_equal(c->history_seq, OLD + NEW - MAX + 1);
  jb_completion_free(c);
  jbt_assert_check_ok(b);
  jb_board_close(b);
  free(done);
  free(dir);
}

typedef struct {
  const char *dir;
  int go_fd;     /* parent writes a byte when it has grown the map */
  int ready_fd;  /* child writes a byte once it has the board open */
  size_t expect; /* jobs to find after the growth */
} adopt_args;

/* A process that opened the board before another grew it reads every job
 * and writes one more. */
static int adopt_child(void *arg) {
  adopt_args *a = arg;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  o.map_size = 256 * 1024;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, &o) != JB_OK) return 1;
  size_t n = 99;
  if (jb_board_count(&n, b, 0) != JB_OK || n != 0) return 2;
  char c = 'r';
  if (write(a->ready_fd, &c, 1) != 1) return 3;
  if (read(a->go_fd, &c, 1) != 1) return 4;
  jb_iter *it = NULL;
  if (jb_iter_open(&it, b, 0) != JB_OK) return 5;
  size_t seen = 0;
  for (;;) {
    const jb_job *j;
    int rc = jb_iter_next(&j, it);
    if (rc != JB_OK) {
      fprintf(stderr, "adopt child: %s\n", jb_errmsg());
      return 6;
    }
    if (j == NULL) break;
    seen++;
  }
  jb_iter_close(it);
  if (seen != a->expect) {
    fprintf(stderr, "adopt child saw %zu of %zu jobs\n", seen, a->expect);
    return 7;
  }
  jbt_buf blob = jbt_details_blob(1024, 1);
  jb_post p = JB_POST_INIT;
  p.name = "after-growth";
  p.details = blob.data;
  p.details_len = blob.len;
  char uuid[JB_UUID_STRLEN];
  int rc = jb_job_post(uuid, b, &p);
  jbt_buf_free(&blob);
  if (rc != JB_OK) {
    fprintf(stderr, "adopt child post: %s\n", jb_errmsg());
    return 8;
  }
  jb_board_close(b);
  return 0;
}

static void another_process_adopts_the_grown_map(void **state) {
  jbt_fixture *f = *state;
  jb_board_close(f->board);
  f->board = NULL;
  jbt_rmtree(f->dir);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  f->board = open_small(f->dir, JB_DURABILITY_NONE);
  int go[2], ready[2];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(ready), 0);
  adopt_args a = {f->dir, go[0], ready[1], 3000};
  pid_t pid = jbt_fork(adopt_child, &a, 60);
  close(go[0]);
  close(ready[1]);
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  jbt_uuids posted = {0};
  post_blobs(f->board, &posted, 3000, 100, 11);
  assert_int_equal(write(go[1], "g", 1), 1);
  close(go[1]);
  close(ready[0]);
  jbt_wait_ok(pid, 60000);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 3001);
  jbt_assert_check_ok(f->board);
  jbt_uuids_free(&posted);
}

/* -------------------------------------------------------------- reopen */

/* A job a with details (VERY_HIGH) and a job b claimed by "keeper"; the
 * board as it was before it was closed and opened again (durability
 * FULL). */
typedef struct {
  char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
  jbt_buf d; /* a's details */
  jbt_snapshot before;
} reopen;

static void reopened(jbt_fixture *f, reopen *r) {
  r->d = jbt_details_store(5);
  jb_post p = JB_POST_INIT;
  p.name = "kept";
  p.details = r->d.data;
  p.details_len = r->d.len;
  p.priority = JB_PRIORITY_VERY_HIGH;
  assert_int_equal(jb_job_post(r->a, f->board, &p), JB_OK);
  jbt_post(r->b, f->board, "claimed", JB_PRIORITY_LOW);
  assert_int_equal(jb_claim(NULL, f->board, r->b, "keeper", NULL), JB_OK);
  jbt_snapshot_take(&r->before, f->board);
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_FULL, 0);
}

static void reopen_free(reopen *r) {
  jbt_snapshot_free(&r->before);
  jbt_buf_free(&r->d);
}

static void reopening_keeps_the_board_as_it_was(void **state) {
  jbt_fixture *f = *state;
  reopen r;
  reopened(f, &r);
  jbt_snapshot after;
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(&r.before, &after);
  jbt_snapshot_free(&after);
  reopen_free(&r);
}

static void reopening_keeps_a_jobs_details(void **state) {
  jbt_fixture *f = *state;
  reopen r;
  reopened(f, &r);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, r.a), JB_OK);
  size_t len;
  const void *dd = jb_job_details(j, &len);
  assert_int_equal(len, r.d.len);
  assert_memory_equal(dd, r.d.data, len);
  jb_job_free(j);
  reopen_free(&r);
}

/* Who can consume it. */
static void reopening_keeps_a_claims_owner(void **state) {
  jbt_fixture *f = *state;
  reopen r;
  reopened(f, &r);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, r.b), JB_OK);
  assert_string_equal(owner, "keeper");
  assert_int_equal(jb_consume(f->board, r.b, "keeper", 0, NULL), JB_OK);
  reopen_free(&r);
}

static uint64_t seq_of(jb_board *b, const char *uuid) {
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, b, uuid), JB_OK);
  uint64_t s = jb_job_sequence(j);
  jb_job_free(j);
  return s;
}

static void sequences_keep_increasing_across_reopen_of_an_emptied_board(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  uint64_t last = 0;
  for (int i = 0; i < 5; i++) {
    jbt_post(u, f->board, "s", JB_PRIORITY_NORMAL);
    last = seq_of(f->board, u);
  }
  /* Empty the board: the next sequence must not be derived from the jobs
   * that are left. */
  while (jb_claim_next(u, NULL, NULL, f->board, "w", NULL) == JB_OK)
    assert_int_equal(jb_consume(f->board, u, "w", 0, NULL), JB_OK);
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_post(u, f->board, "after", JB_PRIORITY_NORMAL);
  assert_true(seq_of(f->board, u) > last);
}

static void a_handle_opened_before_fork_is_refused_in_the_child(
    void **state) {
  jbt_fixture *f = *state;
  /* LMDB's rule: the child holds copies of the parent's locks. */
  jb_board *b = f->board;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(10);
    char u[JB_UUID_STRLEN];
    jb_post p = JB_POST_INIT;
    p.name = "from-child";
    int rc = jb_job_post(u, b, &p);
    _exit(rc == JB_EINVAL && strstr(jb_errmsg(), "fork") ? 0 : 1);
  }
  jbt_wait_ok(pid, 10000);
  size_t n = 9;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 0);
}

/* --------------------------------------------- dead readers and writers */

typedef struct {
  const char *dir;
  int release_fd;  /* read end: EOF releases the holder */
  int release_wfd; /* its write end, closed by the holder at once */
  int ready_fd;
} holder_args;

/* Keeps the board open so that later openers are not the first (the first
 * opener of an environment resets LMDB's reader table by itself). */
static int holder_child(void *arg) {
  holder_args *a = arg;
  close(a->release_wfd);
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  char c = 'h';
  if (write(a->ready_fd, &c, 1) != 1) return 2;
  while (read(a->release_fd, &c, 1) > 0) {}
  jb_board_close(b);
  return 0;
}

static void open_clears_reader_slots_of_dead_processes(void **state) {
  jbt_fixture *f = *state;
  int rel[2], rdy[2];
  assert_int_equal(pipe(rel), 0);
  assert_int_equal(pipe(rdy), 0);
  holder_args h = {f->dir, rel[0], rel[1], rdy[1]};
  pid_t holder = jbt_fork(holder_child, &h, 60);
  close(rel[0]);
  close(rdy[1]);
  char c;
  assert_int_equal(read(rdy[0], &c, 1), 1);
  close(rdy[0]);

  pid_t reader = raw_hold(RAW_HOLD_READER, f->dir);
  kill9(reader); /* its reader slot is now stale */
  jb_board_close(f->board);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);

  raw_args a = {RAW_READER_CHECK, f->dir, {0}, NULL, -1};
  int st = jbt_wait(jbt_fork(raw_child, &a, 30), 30000);
  assert_true(st != -1 && WIFEXITED(st));
  if (WEXITSTATUS(st) != 0)
    fail_msg("%d stale reader slot(s) left after jb_board_open",
             WEXITSTATUS(st));
  close(rel[1]);
  jbt_wait_ok(holder, 30000);
}

typedef struct {
  const char *dir;
} post_args;

static int post_child(void *arg) {
  post_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  char u[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "after-dead-writer";
  int rc = jb_job_post(u, b, &p);
  jb_board_close(b);
  return rc == JB_OK ? 0 : 2;
}

static void a_writer_killed_inside_its_transaction_does_not_wedge_the_board(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "before", JB_PRIORITY_NORMAL);
  pid_t writer = raw_hold(RAW_HOLD_WRITER, f->dir);
  kill9(writer); /* it died holding LMDB's writer lock */
  /* A post from another process, under a deadline: a wedged writer lock
   * would hang it. */
  post_args pa = {f->dir};
  jbt_wait_ok(jbt_fork(post_child, &pa, 20), 20000);
  /* and from this process */
  jbt_post(u, f->board, "after", JB_PRIORITY_NORMAL);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 3);
  jbt_assert_check_ok(f->board); /* the dead writer's record is not there */
}

/* ------------------------------------------- several handles, one process */

/* true when this process holds a POSIX lock on `path` (per /proc/locks).
 * LMDB's lock on lock.mdb is what tells other processes that this one has
 * the environment open. */
static bool holds_posix_lock(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  FILE *fp = fopen("/proc/locks", "r");
  assert_non_null(fp);
  char line[256];
  bool found = false;
  while (fgets(line, sizeof line, fp)) {
    char kind[16], dev[64];
    long pid;
    unsigned long ino;
    unsigned maj, min;
    if (strstr(line, "->")) continue; /* a waiter, not a holder */
    if (sscanf(line, "%*s %15s %*s %*s %ld %63s", kind, &pid, dev) != 3)
      continue;
    if (strcmp(kind, "POSIX") != 0 && strcmp(kind, "OFDLCK") != 0) continue;
    if (sscanf(dev, "%x:%x:%lu", &maj, &min, &ino) != 3) continue;
    if (pid == (long)getpid() && ino == (unsigned long)st.st_ino) found = true;
  }
  fclose(fp);
  return found;
}

/* A second handle on the board of f->board, in this process: a job u
 * posted through it, claimed as "first" through f->board. */
static jb_board *second_handle_claimed(jbt_fixture *f,
                                       char u[JB_UUID_STRLEN]) {
  jb_board *second = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jbt_post(u, second, "via-second", JB_PRIORITY_NORMAL);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, u), JB_OK);
  jb_job_free(j);
  assert_int_equal(jb_claim(NULL, f->board, u, "first", NULL), JB_OK);
  return second;
}

/* What one writes the other reads. */
static void two_handles_in_one_process_share_the_board(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_board *second = second_handle_claimed(f, u);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, second, u), JB_OK);
  assert_string_equal(owner, "first");
  jb_board_close(second);
}

/* The first handle still works, and another process still sees this one
 * as a user of the board. */
static void closing_a_second_handle_leaves_the_first_working(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jb_board_close(second_handle_claimed(f, u));
  jbt_post(u, f->board, "after-close", JB_PRIORITY_NORMAL);
  post_args pa = {f->dir};
  jbt_wait_ok(jbt_fork(post_child, &pa, 20), 20000);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 3);
  jbt_assert_check_ok(f->board);
}

static void closing_one_of_two_handles_keeps_the_process_lmdb_lock(
    void **state) {
  jbt_fixture *f = *state;
  char *lock = jbt_path(f->dir, "lock.mdb");
  assert_true(holds_posix_lock(lock));
  jb_board *second = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb_board_close(second);
  /* Had the second handle opened the environment again, closing it would
   * have dropped every fcntl lock this process holds on lock.mdb, and the
   * next process to open the board would reset the reader table under the
   * first handle's readers. */
  assert_true(holds_posix_lock(lock));
  jb_board_close(f->board);
  f->board = NULL;
  assert_false(holds_posix_lock(lock));
  free(lock);
}

/* In a child: open the board afresh, then close the handle inherited from
 * the parent. Closing it must not touch the inherited environment (its
 * close would drop this process's fcntl locks on lock.mdb, the fresh
 * handle's too). */
static int close_inherited_child(void *arg) {
  jbt_fixture *f = arg;
  char *lock = jbt_path(f->dir, "lock.mdb");
  jb_board *mine = NULL;
  if (jb_board_open(&mine, f->dir, NULL) != JB_OK) return 1;
  if (!holds_posix_lock(lock)) return 2;
  jb_board_close(f->board);
  if (!holds_posix_lock(lock)) return 3;
  char u[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = "from-child";
  if (jb_job_post(u, mine, &p) != JB_OK) return 4;
  jb_board_close(mine);
  free(lock);
  return 0;
}

static void closing_a_handle_inherited_across_fork_keeps_the_childs_locks(
    void **state) {
  jbt_fixture *f = *state;
  jbt_wait_ok(jbt_fork(close_inherited_child, f, 20), 20000);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 1);
  jbt_assert_check_ok(f->board);
}

/* Holds LMDB's writer lock of the board (a write transaction of raw LMDB)
 * until the parent closes release_fd's write end. */
static int writer_holder_child(void *arg) {
  holder_args *a = arg;
  close(a->release_wfd);
  MDB_env *env;
  MDB_txn *txn;
  if (raw_env(&env, a->dir, MDB_NOMETASYNC | MDB_NOTLS, 0664)) return 2;
  if (mdb_txn_begin(env, NULL, 0, &txn)) return 3;
  char c = 'w';
  if (write(a->ready_fd, &c, 1) != 1) return 4;
  while (read(a->release_fd, &c, 1) > 0) {}
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return 0;
}

/* Start writer_holder_child on `dir`; returns its pid and, in *release,
 * the descriptor whose close lets it go. Returns once it holds the lock. */
static pid_t hold_writer_lock(const char *dir, int *release_out) {
  int release[2], ready[2];
  assert_int_equal(pipe(release), 0);
  assert_int_equal(pipe(ready), 0);
  holder_args a = {dir, release[0], release[1], ready[1]};
  pid_t pid = jbt_fork(writer_holder_child, &a, 15);
  close(release[0]);
  close(ready[1]);
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  close(ready[0]);
  *release_out = release[1];
  return pid;
}

/* Opening a board and reading it take no write transaction: they finish
 * while another process holds the writer lock. (Had open waited for the
 * writer, this test would hang until the holder's alarm kills it, and the
 * holder would not exit 0.) */
static void opening_a_board_to_read_does_not_wait_for_a_writer(
    void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "existing", JB_PRIORITY_NORMAL);
  jb_board_close(f->board);
  f->board = NULL;
  int release;
  pid_t pid = hold_writer_lock(f->dir, &release);
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  assert_int_equal(jb_board_open(&f->board, f->dir, &o), JB_OK);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 1);
  char state_owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(state_owner, f->board, u), JB_OK);
  assert_string_equal(state_owner, "");
  close(release);
  jbt_wait_ok(pid, 20000);
}

/* Checking a healthy board is a read: it finishes while another process
 * holds the writer lock (as above, a wait would end in the holder's
 * alarm). */
static void checking_a_healthy_board_does_not_wait_for_a_writer(
    void **state) {
  jbt_fixture *f = *state;
  for (int i = 0; i < 50; i++)
    jbt_post(NULL, f->board, "healthy", JB_PRIORITY_NORMAL);
  int release;
  pid_t pid = hold_writer_lock(f->dir, &release);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.jobs, 50);
  close(release);
  jbt_wait_ok(pid, 20000);
}

/* Opens a second handle on the board with durability NONE (the first
 * has NORMAL); the open's outcome. */
static int open_with_another_durability(jbt_fixture *f, jb_board **b) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NONE;
  *b = (jb_board *)1;
  return jb_board_open(b, f->dir, &o);
}

static void a_second_handle_with_another_durability_is_refused(void **state) {
  jbt_fixture *f = *state;
  jb_board *b;
  int rc = open_with_another_durability(f, &b);
  assert_int_not_equal(rc, JB_OK);
  assert_null(b);
  jbt_assert_contains(jb_errmsg(), "durability");
}

static void a_refused_second_handle_leaves_the_first_unharmed(void **state) {
  jbt_fixture *f = *state;
  jb_board *b;
  assert_int_not_equal(open_with_another_durability(f, &b), JB_OK);
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "still-works", JB_PRIORITY_NORMAL);
  jbt_assert_check_ok(f->board);
}

static void each_handle_keeps_its_own_max_posting(void **state) {
  jbt_fixture *f = *state;
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.durability = JB_DURABILITY_NORMAL;
  o.max_posting = 4096;
  jb_board *small = NULL;
  assert_int_equal(jb_board_open(&small, f->dir, &o), JB_OK);
  jbt_buf d = jbt_details_blob(5000, 9);
  jb_post p = JB_POST_INIT;
  p.name = "sized";
  p.details = d.data;
  p.details_len = d.len;
  char u[JB_UUID_STRLEN];
  assert_int_equal(jb_job_post(u, small, &p), JB_EINVAL);
  assert_int_equal(jb_job_post(u, f->board, &p), JB_OK);
  jb_board_close(small);
  jbt_buf_free(&d);
}

/* ------------------------------------------------ damage and quarantine */

typedef struct {
  char u[3][JB_UUID_STRLEN];
  char *saved;
} damaged;

/* Three NORMAL jobs; the middle one's posting is replaced by bytes that do
 * not decode (the damaged record is saved to a file). */
static damaged *damage_middle(jbt_fixture *f) {
  damaged *d = calloc(1, sizeof *d);
  f->extra = d;
  for (int i = 0; i < 3; i++) jbt_post(d->u[i], f->board, "d", JB_PRIORITY_NORMAL);
  jb_board_close(f->board);
  d->saved = jbt_path(f->dir, "saved-record.bin");
  raw(RAW_CORRUPT_POSTING, f->dir, d->u[1], d->saved);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  return d;
}

static void done_damaged(damaged *d) { free(d->saved); }

/* Naming the job, and check. */
static void get_of_a_posting_that_does_not_decode_is_corrupt(void **state) {
  jbt_fixture *f = *state;
  damaged *d = damage_middle(f);
  jb_job *j = (jb_job *)1;
  assert_int_equal(jb_job_get(&j, f->board, d->u[1]), JB_ECORRUPT);
  assert_null(j);
  jbt_assert_contains(jb_errmsg(), d->u[1]);
  jbt_assert_contains(jb_errmsg(), "check");
  done_damaged(d);
}

static void get_of_a_job_beside_a_corrupt_posting_works(void **state) {
  jbt_fixture *f = *state;
  damaged *d = damage_middle(f);
  jb_job *j = NULL;
  assert_int_equal(jb_job_get(&j, f->board, d->u[0]), JB_OK);
  jb_job_free(j);
  done_damaged(d);
}

static void iterator_reports_a_corrupt_posting_and_moves_past_it(void **state) {
  jbt_fixture *f = *state;
  damaged *d = damage_middle(f);
  jb_iter *it = NULL;
  assert_int_equal(jb_iter_open(&it, f->board, 0), JB_OK);
  const jb_job *j = NULL;
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_string_equal(jb_job_uuid(j), d->u[0]);
  assert_int_equal(jb_iter_next(&j, it), JB_ECORRUPT);
  jbt_assert_contains(jb_errmsg(), d->u[1]);
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_non_null(j);
  assert_string_equal(jb_job_uuid(j), d->u[2]);
  assert_int_equal(jb_iter_next(&j, it), JB_OK);
  assert_null(j);
  jb_iter_close(it);
  done_damaged(d);
}

static void claim_next_of_a_corrupt_posting_reports_it_and_keeps_the_claim(
    void **state) {
  jbt_fixture *f = *state;
  damaged *d = damage_middle(f);
  assert_int_equal(jb_claim(NULL, f->board, d->u[0], "w", NULL), JB_OK);
  char got[JB_UUID_STRLEN];
  jb_job *j = (jb_job *)1;
  assert_int_equal(jb_claim_next(got, &j, NULL, f->board, "w", NULL), JB_ECORRUPT);
  assert_null(j);
  jbt_assert_contains(jb_errmsg(), d->u[1]);
  char owner[JB_WHO_MAX + 1];
  assert_int_equal(jb_job_find_owner(owner, f->board, d->u[1]), JB_OK);
  assert_string_equal(owner, "w");
  done_damaged(d);
}

static void collect_line(const char *line, void *payload) {
  FILE *mem = payload;
  fprintf(mem, "%s\n", line);
}

/* damage_middle, then a check that quarantines the damaged job; its
 * stats go to *st. */
static damaged *quarantined(jbt_fixture *f, jb_check_stats *st,
                            char **lines) {
  damaged *d = damage_middle(f);
  size_t len = 0;
  FILE *mem = open_memstream(lines, &len);
  assert_int_equal(jb_board_check(st, f->board, collect_line, mem),
                   JB_ECORRUPT);
  fclose(mem);
  return d;
}

/* Reported, naming the job. */
static void check_moves_an_undecodable_posting_to_quarantine(void **state) {
  jbt_fixture *f = *state;
  jb_check_stats st;
  char *lines = NULL;
  damaged *d = quarantined(f, &st, &lines);
  assert_int_equal(st.moved, 1);
  assert_int_equal(st.quarantined, 1);
  assert_int_equal(st.jobs, 2);
  jbt_assert_contains(lines, d->u[1]);
  jbt_assert_contains(lines, "quarantine");
  free(lines);
  done_damaged(d);
}

/* Off the board, but kept, bytes and all. */
static void a_quarantined_posting_is_kept_off_the_board(void **state) {
  jbt_fixture *f = *state;
  jb_check_stats st;
  char *lines = NULL;
  damaged *d = quarantined(f, &st, &lines);
  free(lines);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, 0), JB_OK);
  assert_int_equal(n, 2);
  jb_state s;
  assert_int_equal(jb_job_get_state(&s, f->board, d->u[1]), JB_OK);
  assert_int_equal(s, JB_STATE_COMPLETE);
  raw(RAW_QUARANTINE_HAS, f->dir, NULL, d->saved);
  done_damaged(d);
}

/* And still reports the record. */
static void a_check_after_a_quarantine_finds_nothing_new_to_fix(
    void **state) {
  jbt_fixture *f = *state;
  jb_check_stats st;
  char *lines = NULL;
  damaged *d = quarantined(f, &st, &lines);
  free(lines);
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.moved, 0);
  assert_int_equal(st.quarantined, 1);
  assert_int_equal(st.problems, 0);
  done_damaged(d);
}

static void the_rest_of_the_board_works_after_a_quarantine(void **state) {
  jbt_fixture *f = *state;
  jb_check_stats st;
  char *lines = NULL;
  damaged *d = quarantined(f, &st, &lines);
  free(lines);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_OK);
  assert_int_equal(jb_claim_next(NULL, NULL, NULL, f->board, "w", NULL), JB_ENOTFOUND);
  done_damaged(d);
}

/* A claimed job with a lease and a holder process, whose posting does not
 * decode: quarantine takes its claim's index entries too, so the board is
 * clean afterwards and nothing dangles in `leases` or `holders`. The job
 * with the last uuid key is quarantined too (the cursor ends there). */
static void check_quarantines_a_claimed_job_with_its_lease_and_holder(
    void **state) {
  jbt_fixture *f = *state;
  damaged *d = calloc(1, sizeof *d);
  f->extra = d;
  for (int i = 0; i < 3; i++) jbt_post(d->u[i], f->board, "d", JB_PRIORITY_NORMAL);
  /* The job whose uuid sorts last: quarantine ends the jobs walk there. */
  int last = 0;
  for (int i = 1; i < 3; i++)
    if (strcmp(d->u[i], d->u[last]) > 0) last = i;
  jb_claim_options o = JB_CLAIM_OPTIONS_INIT;
  o.flags = JB_CLAIM_BIND_PROCESS;
  o.lease_ms = 3600 * 1000;
  assert_int_equal(jb_claim(NULL, f->board, d->u[last], "w", &o), JB_OK);
  jb_board_close(f->board);
  d->saved = jbt_path(f->dir, "saved-record.bin");
  raw(RAW_CORRUPT_POSTING, f->dir, d->u[last], d->saved);
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_ECORRUPT);
  assert_int_equal(st.moved, 1);
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.jobs, 2);
  size_t n = 0;
  assert_int_equal(jb_board_count(&n, f->board, JB_ONLY_UNCLAIMED), JB_OK);
  assert_int_equal(n, 2);
  done_damaged(d);
}

static void check_reports_a_job_that_is_neither_ready_nor_claimed(
    void **state) {
  jbt_fixture *f = *state;
  char u[2][JB_UUID_STRLEN];
  jbt_post(u[0], f->board, "a", JB_PRIORITY_NORMAL);
  jbt_post(u[1], f->board, "b", JB_PRIORITY_NORMAL);
  raw(RAW_DROP_READY, f->dir, u[1], NULL);
  char *lines = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&lines, &len);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, collect_line, mem),
                   JB_ECORRUPT);
  fclose(mem);
  assert_true(st.problems >= 1);
  jbt_assert_contains(lines, u[1]);
  free(lines);
}

static void check_reports_a_job_that_is_both_ready_and_claimed(void **state) {
  jbt_fixture *f = *state;
  char u[JB_UUID_STRLEN];
  jbt_post(u, f->board, "a", JB_PRIORITY_NORMAL);
  raw(RAW_ADD_CLAIM, f->dir, u, NULL);
  char *lines = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&lines, &len);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, collect_line, mem),
                   JB_ECORRUPT);
  fclose(mem);
  assert_true(st.problems >= 1);
  jbt_assert_contains(lines, u);
  free(lines);
}

static void check_of_a_healthy_busy_board_finds_nothing(void **state) {
  jbt_fixture *f = *state;
  char u[20][JB_UUID_STRLEN];
  for (int i = 0; i < 20; i++) jbt_post(u[i], f->board, "h", (jb_priority)(i % 5));
  for (int i = 0; i < 20; i += 2) assert_int_equal(jb_claim(NULL, f->board, u[i], "w", NULL), JB_OK);
  for (int i = 0; i < 20; i += 4) assert_int_equal(jb_consume(f->board, u[i], "w", 0, NULL), JB_OK);
  assert_int_equal(jb_trash(f->board, u[2], "w", 0), JB_OK);
  jb_check_stats st;
  assert_int_equal(jb_board_check(&st, f->board, NULL, NULL), JB_OK);
  assert_int_equal(st.jobs, 14);
  assert_int_equal(st.claimed, 4);
  assert_int_equal(st.ready, 10);
  assert_int_equal(st.trashed, 1);
  assert_int_equal(st.problems, 0);
}

int main(void) {
  jbt_watchdog(240);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(map_grows_past_its_initial_size_one_post_at_a_time),
      T(map_grows_past_its_initial_size_in_mode_none),
      T(map_grows_for_a_batch_bigger_than_the_whole_map),
      T(another_process_adopts_the_grown_map),
      T(reopening_keeps_the_board_as_it_was),
      T(reopening_keeps_a_jobs_details),
      T(reopening_keeps_a_claims_owner),
      T(a_schema_3_board_made_with_writemap_opens_in_every_mode),
      T(a_schema_4_board_upgrades_to_the_log_tail),
      T(a_schema_4_board_keeps_every_event),
      T(a_schema_4_board_keeps_every_completion),
      T(a_schema_4_boards_sequences_go_on_after_the_last_event),
      T(a_schema_5_board_upgrades_to_the_history_ends),
      T(a_schema_5_boards_history_keeps_its_max_after_the_upgrade),
      T(a_schema_6_board_upgrades_to_the_jobkey_bands),
      T(a_schema_6_board_keeps_its_jobs_and_claims),
      T(the_leased_and_bound_claims_of_a_schema_6_board_still_work),
      T(claim_next_after_a_schema_6_upgrade_takes_local_jobs_in_order),
      T(sequences_keep_increasing_across_reopen_of_an_emptied_board),
      T(a_handle_opened_before_fork_is_refused_in_the_child),
      T(open_clears_reader_slots_of_dead_processes),
      T(a_writer_killed_inside_its_transaction_does_not_wedge_the_board),
      T(two_handles_in_one_process_share_the_board),
      T(closing_a_second_handle_leaves_the_first_working),
      T(closing_one_of_two_handles_keeps_the_process_lmdb_lock),
      T(closing_a_handle_inherited_across_fork_keeps_the_childs_locks),
      T(opening_a_board_to_read_does_not_wait_for_a_writer),
      T(checking_a_healthy_board_does_not_wait_for_a_writer),
      T(a_second_handle_with_another_durability_is_refused),
      T(a_refused_second_handle_leaves_the_first_unharmed),
      T(each_handle_keeps_its_own_max_posting),
      T(get_of_a_posting_that_does_not_decode_is_corrupt),
      T(get_of_a_job_beside_a_corrupt_posting_works),
      T(iterator_reports_a_corrupt_posting_and_moves_past_it),
      T(claim_next_of_a_corrupt_posting_reports_it_and_keeps_the_claim),
      T(check_moves_an_undecodable_posting_to_quarantine),
      T(a_quarantined_posting_is_kept_off_the_board),
      T(a_check_after_a_quarantine_finds_nothing_new_to_fix),
      T(the_rest_of_the_board_works_after_a_quarantine),
      T(check_quarantines_a_claimed_job_with_its_lease_and_holder),
      T(check_reports_a_job_that_is_neither_ready_nor_claimed),
      T(check_reports_a_job_that_is_both_ready_and_claimed),
      T(check_of_a_healthy_busy_board_finds_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
