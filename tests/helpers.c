/*
 * helpers.c - shared pieces of the cmocka test programs (see helpers.h).
 */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <lmdb.h>
#include <msgpack.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ directories */

char *jbt_mkdtemp(void) {
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
  char *path = NULL;
  assert_true(asprintf(&path, "%s/jbtest.XXXXXX", tmp) > 0);
  if (mkdtemp(path) == NULL) fail_msg("mkdtemp %s: %s", path, strerror(errno));
  return path;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

void jbt_rmtree(const char *path) {
  if (path == NULL) return;
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *jbt_path(const char *dir, const char *name) {
  char *p = NULL;
  assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
  return p;
}

/* ----------------------------------------------------------------- boards */

jb_board *jbt_open(const char *dir, jb_durability durability, size_t map_size) {
  jb_board_options o = JB_BOARD_OPTIONS_INIT;
  o.flags = JB_OPEN_CREATE;
  o.durability = durability;
  o.map_size = map_size;
  jb_board *b = NULL;
  int rc = jb_board_open(&b, dir, &o);
  if (rc != JB_OK)
    fail_msg("jb_board_open %s: %s (%s)", dir, jb_strerror(rc), jb_errmsg());
  assert_non_null(b);
  return b;
}

int jbt_setup(void **state) {
  jbt_fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  f->dir = jbt_mkdtemp();
  f->board = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  *state = f;
  return 0;
}

int jbt_teardown(void **state) {
  jbt_fixture *f = *state;
  if (f == NULL) return 0;
  jb_board_close(f->board);
  jbt_rmtree(f->dir);
  free(f->dir);
  free(f->extra);
  free(f);
  *state = NULL;
  return 0;
}

/* ----------------------------------------------------------------- posting */

void jbt_post(char uuid_out[JB_UUID_STRLEN], jb_board *board, const char *name,
              jb_priority prio) {
  char uuid[JB_UUID_STRLEN];
  jb_post p = JB_POST_INIT;
  p.name = name;
  p.priority = prio;
  int rc = jb_job_post(uuid, board, &p);
  if (rc != JB_OK)
    fail_msg("jb_job_post %s: %s (%s)", name, jb_strerror(rc), jb_errmsg());
  if (uuid_out) memcpy(uuid_out, uuid, JB_UUID_STRLEN);
}

size_t jbt_listing_order(jb_board *board, char (*out)[JB_UUID_STRLEN],
                         size_t max) {
  jb_iter *it;
  const jb_job *j;
  size_t n = 0;
  assert_int_equal(jb_iter_open(&it, board, 0), JB_OK);
  while (jb_iter_next(&j, it) == JB_OK && j != NULL && n < max)
    snprintf(out[n++], JB_UUID_STRLEN, "%s", jb_job_uuid(j));
  jb_iter_close(it);
  return n;
}

void jbt_buf_free(jbt_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = 0;
}

static jbt_buf from_sbuffer(msgpack_sbuffer *sb) {
  jbt_buf b = {malloc(sb->size ? sb->size : 1), sb->size};
  assert_non_null(b.data);
  memcpy(b.data, sb->data, sb->size);
  msgpack_sbuffer_destroy(sb);
  return b;
}

static void pack_cstr(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

jbt_buf jbt_details_store(int x) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  pack_cstr(&pk, "store");
  msgpack_pack_map(&pk, 1);
  pack_cstr(&pk, "x");
  msgpack_pack_int(&pk, x);
  return from_sbuffer(&sb);
}

jbt_buf jbt_from_hex(const char *hex) {
  size_t n = strlen(hex) / 2;
  jbt_buf b = {malloc(n ? n : 1), n};
  assert_non_null(b.data);
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
    b.data[i] = (char)v;
  }
  return b;
}

const char jbt_wire_posting_hex[] =
    "87a475756964d92433663064376539632d316232612d346335642d386536662d3061"
    "31623263336434653566a46e616d65a864656d6f2d6a6f62a87072696f72697479a4"
    "48494748aa637265617465645f6f6ec7380187a364617902a56d6f6e746801a47965"
    "6172cd07e8a4686f757203a66d696e75746504a67365636f6e6405ab6d6963726f73"
    "65636f6e6406a764657461696c7381a573746f726581a17801a4626f6f6b82a46e61"
    "6d65a76d792d626f6f6ba475756964d92430623163326433652d346635302d343631"
    "372d383239332d613462356336643765386639a873657175656e63652a";

jbt_buf jbt_details_blob(size_t n, unsigned seed) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  pack_cstr(&pk, "blob");
  char *fill = malloc(n ? n : 1);
  assert_non_null(fill);
  for (size_t i = 0; i < n; i++)
    fill[i] = (char)('a' + (seed + i * 7u) % 26u);
  msgpack_pack_str(&pk, n);
  msgpack_pack_str_body(&pk, fill, n);
  free(fill);
  return from_sbuffer(&sb);
}

/* -------------------------------------------------------- nothing changed */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) {
    h ^= c[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t fnv_val(uint64_t h, const MDB_val *v) {
  uint64_t n = v->mv_size;
  h = fnv(h, &n, sizeof n);
  return fnv(h, v->mv_data, v->mv_size);
}

/* Runs in the child: returns 0 and the digest, or an LMDB error. */
static int digest_env(const char *dir, uint64_t *out) {
  MDB_env *env = NULL;
  MDB_txn *txn = NULL;
  MDB_cursor *main_cur = NULL;
  int rc = mdb_env_create(&env);
  if (rc) return rc;
  mdb_env_set_maxdbs(env, 256);
  rc = mdb_env_open(env, dir, MDB_RDONLY, 0644);
  if (rc) goto out;
  rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
  if (rc) goto out;
  MDB_dbi main_dbi;
  rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
  if (rc) goto out;
  rc = mdb_cursor_open(txn, main_dbi, &main_cur);
  if (rc) goto out;
  uint64_t h = 0xcbf29ce484222325ull;
  MDB_val k, v;
  for (rc = mdb_cursor_get(main_cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(main_cur, &k, &v, MDB_NEXT)) {
    h = fnv_val(h, &k);
    char name[512];
    if (k.mv_size >= sizeof name) continue;
    memcpy(name, k.mv_data, k.mv_size);
    name[k.mv_size] = '\0';
    MDB_dbi dbi;
    /* A key of the main database is either a named database (hash its
     * records, not its root page, which moves with every write) or a plain
     * record (hash its value). */
    if (strlen(name) != k.mv_size ||
        mdb_dbi_open(txn, name, 0, &dbi) != 0) {
      h = fnv_val(h, &v);
      continue;
    }
    MDB_cursor *c;
    int rc2 = mdb_cursor_open(txn, dbi, &c);
    if (rc2) {
      rc = rc2;
      goto out;
    }
    MDB_val dk, dv;
    for (rc2 = mdb_cursor_get(c, &dk, &dv, MDB_FIRST); rc2 == 0;
         rc2 = mdb_cursor_get(c, &dk, &dv, MDB_NEXT)) {
      h = fnv_val(h, &dk);
      h = fnv_val(h, &dv);
    }
    mdb_cursor_close(c);
    if (rc2 != MDB_NOTFOUND) {
      rc = rc2;
      goto out;
    }
  }
  if (rc == MDB_NOTFOUND) rc = 0;
  *out = h;
out:
  if (main_cur) mdb_cursor_close(main_cur);
  if (txn) mdb_txn_abort(txn);
  mdb_env_close(env);
  return rc;
}

uint64_t jbt_board_digest(const char *dir) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(30);
    uint64_t h = 0;
    int rc = digest_env(dir, &h);
    if (rc != 0) {
      fprintf(stderr, "digest of %s: %s\n", dir, mdb_strerror(rc));
      _exit(1);
    }
    if (write(fds[1], &h, sizeof h) != (ssize_t)sizeof h) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  uint64_t h = 0;
  ssize_t n = read(fds[0], &h, sizeof h);
  close(fds[0]);
  int st = jbt_wait(pid, 30000);
  if (!(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
      n != (ssize_t)sizeof h)
    fail_msg("could not read the LMDB environment in %s (status %d)", dir, st);
  return h;
}

void jbt_snapshot_take(jbt_snapshot *s, jb_board *board) {
  memset(s, 0, sizeof *s);
  int rc = jb_board_count(&s->count, board, 0);
  assert_int_equal(rc, JB_OK);
  rc = jb_board_count(&s->unclaimed, board, JB_ONLY_UNCLAIMED);
  assert_int_equal(rc, JB_OK);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  assert_non_null(mem);
  jb_iter *it = NULL;
  rc = jb_iter_open(&it, board, 0);
  if (rc != JB_OK) fail_msg("jb_iter_open: %s", jb_errmsg());
  for (;;) {
    const jb_job *j = NULL;
    rc = jb_iter_next(&j, it);
    if (rc != JB_OK) fail_msg("jb_iter_next: %s", jb_errmsg());
    if (j == NULL) break;
    fprintf(mem, "%s %s %llu %lld %s\n", jb_job_uuid(j),
            jb_job_owner(j) ? jb_job_owner(j) : "-",
            (unsigned long long)jb_job_sequence(j),
            (long long)jb_job_modified(j), jb_job_name(j));
  }
  jb_iter_close(it);
  fclose(mem);
  s->listing = text;
  s->digest = jbt_board_digest(jb_board_path(board));
}

void jbt_snapshot_assert_same(const jbt_snapshot *before,
                              const jbt_snapshot *after) {
  assert_int_equal(before->count, after->count);
  assert_int_equal(before->unclaimed, after->unclaimed);
  assert_string_equal(before->listing, after->listing);
  if (before->digest != after->digest)
    fail_msg("the board's LMDB contents changed (digest %016llx -> %016llx)",
             (unsigned long long)before->digest,
             (unsigned long long)after->digest);
}

void jbt_snapshot_free(jbt_snapshot *s) {
  free(s->listing);
  s->listing = NULL;
}

void jbt_snapshot_assert_unchanged(jbt_snapshot *before, jb_board *board) {
  jbt_snapshot after;
  jbt_snapshot_take(&after, board);
  jbt_snapshot_assert_same(before, &after);
  jbt_snapshot_free(before);
  jbt_snapshot_free(&after);
}

static void print_check_line(const char *line, void *payload) {
  (void)payload;
  printf("# check: %s\n", line);
}

void jbt_assert_check_ok(jb_board *board) {
  jbt_assert_check_ok_delayed(board, 0);
}

void jbt_assert_check_ok_delayed(jb_board *board, size_t delayed) {
  jb_check_stats st;
  memset(&st, 0xff, sizeof st);
  int rc = jb_board_check(&st, board, print_check_line, NULL);
  if (rc != JB_OK)
    fail_msg("jb_board_check: %s (%s), %zu problems", jb_strerror(rc),
             jb_errmsg(), st.problems);
  assert_int_equal(st.problems, 0);
  assert_int_equal(st.moved, 0);
  assert_int_equal(st.jobs, st.ready + st.claimed + delayed);
}

void jbt_assert_contains_(const char *haystack, const char *needle,
                          const char *file, int line) {
  if (haystack == NULL || strstr(haystack, needle) == NULL)
    fail_msg("%s:%d: expected \"%s\" to contain \"%s\"", file, line,
             haystack ? haystack : "(null)", needle);
}

/* --------------------------------------------------------------- children */

pid_t jbt_fork(int (*fn)(void *arg), void *arg, unsigned timeout_s) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) fail_msg("fork: %s", strerror(errno));
  if (pid == 0) {
    /* A test that forks children leaves the watchdog to them. */
    alarm(timeout_s);
    int rc = fn(arg);
    fflush(NULL);
    _exit(rc);
  }
  return pid;
}

pid_t jbt_fork_ready(int (*fn)(void *arg), void *arg, int *ready_fd,
                     unsigned timeout_s, const char *what) {
  int fds[2];
  if (pipe(fds) != 0) fail_msg("pipe: %s", strerror(errno));
  *ready_fd = fds[1];
  pid_t pid = jbt_fork(fn, arg, timeout_s);
  close(fds[1]);
  *ready_fd = -1;
  char c;
  ssize_t n = read(fds[0], &c, 1); /* EOF if it exited instead */
  close(fds[0]);
  if (n != 1) {
    int st = jbt_wait(pid, 5000);
    fail_msg("%s (child wait status %d)", what, st);
  }
  return pid;
}

int jbt_wait(pid_t pid, int timeout_ms) {
  int64_t deadline = jbt_now_ms() + timeout_ms;
  int st = 0;
#ifdef SYS_pidfd_open
  int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pfd >= 0) {
    for (;;) {
      int64_t left = deadline - jbt_now_ms();
      if (left < 0) left = 0;
      struct pollfd p = {pfd, POLLIN, 0};
      int n = poll(&p, 1, (int)left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break; /* deadline */
      close(pfd);
      while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      return st;
    }
    close(pfd);
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return -1;
  }
#endif
  /* No pidfd: poll waitpid, a millisecond apart, until the deadline. */
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0 && errno != EINTR) return -1;
    if (jbt_now_ms() > deadline) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  return -1;
}

void jbt_wait_ok(pid_t pid, int timeout_ms) {
  int st = jbt_wait(pid, timeout_ms);
  if (st == -1) fail_msg("child %d did not finish within %d ms", (int)pid,
                         timeout_ms);
  if (WIFSIGNALED(st))
    fail_msg("child %d died of signal %d%s", (int)pid, WTERMSIG(st),
             WTERMSIG(st) == SIGALRM ? " (its timeout)" : "");
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("child %d exited with %d", (int)pid, WEXITSTATUS(st));
}

/* ------------------------------------------------------------------ misc */

unsigned jbt_seed(const char *what) {
  const char *env = getenv("JB_TEST_SEED");
  unsigned seed;
  if (env && *env)
    seed = (unsigned)strtoul(env, NULL, 0);
  else
    seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
  printf("# %s: seed %u (repeat with JB_TEST_SEED=%u)\n", what, seed, seed);
  fflush(stdout);
  return seed;
}

int64_t jbt_now_ms(void) { return jbt_now_us() / 1000; }

int64_t jbt_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void jbt_watchdog(unsigned seconds) { alarm(seconds); }

void jbt_uuids_add(jbt_uuids *s, const char *uuid) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 1024;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  memcpy(s->v[s->n], uuid, JB_UUID_STRLEN - 1);
  s->v[s->n][JB_UUID_STRLEN - 1] = '\0';
  s->n++;
}

static int cmp_uuid(const void *a, const void *b) {
  return memcmp(a, b, JB_UUID_STRLEN);
}

void jbt_uuids_sort(jbt_uuids *s) {
  if (s->n) qsort(s->v, s->n, sizeof *s->v, cmp_uuid);
}

long jbt_uuids_find(const jbt_uuids *s, const char *uuid) {
  char key[JB_UUID_STRLEN] = {0};
  memcpy(key, uuid, JB_UUID_STRLEN - 1);
  if (s->n == 0) return -1;
  char(*hit)[JB_UUID_STRLEN] = bsearch(key, s->v, s->n, sizeof *s->v, cmp_uuid);
  return hit ? (long)(hit - s->v) : -1;
}

const char *jbt_uuids_duplicate(const jbt_uuids *s) {
  for (size_t i = 1; i < s->n; i++)
    if (memcmp(s->v[i - 1], s->v[i], JB_UUID_STRLEN) == 0) return s->v[i];
  return NULL;
}

void jbt_uuids_free(jbt_uuids *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

void jbt_uuids_read_file(jbt_uuids *s, const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) fail_msg("open %s: %s", path, strerror(errno));
  char line[128];
  while (fgets(line, sizeof line, f)) {
    size_t n = strcspn(line, "\n");
    if (n == JB_UUID_STRLEN - 1 && line[n] == '\n') {
      line[n] = '\0';
      jbt_uuids_add(s, line);
    }
  }
  fclose(f);
}
