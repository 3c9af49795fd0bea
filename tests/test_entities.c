/*
 * test_entities.c - workers and conductors registered on the board
 * (include/jobboard.h, "entities"): registration with metadata, replacement,
 * bad input refused with nothing written, and liveness: an entity whose
 * process is killed, or that was registered before the host's last boot,
 * is no longer listed, and a later registration removes its record.
 *
 * Records are read and written behind the library's back with LMDB
 * directly (store/store.h's schema), always in a forked child: a process
 * must not open one environment twice.
 */
#include "helpers.h"
#include "core/internal.h"
#include "store/store.h"

#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* {"zone": "a"} and {"zone": "b"} in msgpack. */
static const uint8_t meta_a[] = {0x81, 0xa4, 'z', 'o', 'n', 'e', 0xa1, 'a'};
static const uint8_t meta_b[] = {0x81, 0xa4, 'z', 'o', 'n', 'e', 0xa1, 'b'};

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------- listing */

#define MAX_SEEN 64

typedef struct {
  char name[JB_WHO_MAX + 1];
  char kind[64];
  uint8_t meta[64];
  size_t meta_len;
  int pid;
  int64_t registered_us;
} seen_entity;

typedef struct {
  seen_entity e[MAX_SEEN];
  size_t n;
  size_t stop_after; /* the callback asks to stop after this many; 0: never */
} seen_list;

static int collect(const jb_entity *e, void *payload) {
  seen_list *l = payload;
  if (l->n < MAX_SEEN) {
    seen_entity *s = &l->e[l->n];
    snprintf(s->name, sizeof s->name, "%s", e->name);
    snprintf(s->kind, sizeof s->kind, "%s", e->kind);
    s->meta_len = e->meta_len < sizeof s->meta ? e->meta_len : sizeof s->meta;
    memcpy(s->meta, e->meta, s->meta_len);
    s->pid = e->pid;
    s->registered_us = e->registered_us;
  }
  l->n++;
  return l->stop_after && l->n >= l->stop_after;
}

static seen_list *list_ok(jb_board *b) {
  seen_list *l = calloc(1, sizeof *l);
  assert_non_null(l);
  int rc = jb_entity_list(b, collect, l);
  if (rc != JB_OK) fail_msg("jb_entity_list: %s", jb_errmsg());
  return l;
}

/* The listed entity named `name`, or NULL. */
static const seen_entity *find(const seen_list *l, const char *name) {
  for (size_t i = 0; i < l->n && i < MAX_SEEN; i++)
    if (strcmp(l->e[i].name, name) == 0) return &l->e[i];
  return NULL;
}

static bool listed(jb_board *b, const char *name) {
  seen_list *l = list_ok(b);
  bool found = find(l, name) != NULL;
  free(l);
  return found;
}

static void register_ok(jb_board *b, const char *name, const char *kind,
                        const void *meta, size_t meta_len) {
  int rc = jb_entity_register(b, name, kind, meta, meta_len);
  if (rc != JB_OK) fail_msg("register %s: %s", name, jb_errmsg());
}

/* ------------------------------------------------- raw LMDB in a child */

typedef enum {
  RAW_COUNT,      /* exit with the number of entity records */
  RAW_HAS,        /* exit 0 iff `name` has a record, else 1 */
  RAW_OLD_COPIES, /* `n` copies of `name`'s record under "old-<i>", with
                     an epoch that is not the board's */
  RAW_PUT_BROKEN, /* `name` -> a value too short to be a record */
} raw_op;

typedef struct {
  raw_op op;
  const char *dir;
  const char *name;
  int n;
} raw_args;

static int raw_child(void *arg) {
  raw_args *a = arg;
  MDB_env *env;
  MDB_txn *txn;
  MDB_dbi ent;
  if (mdb_env_create(&env)) return 101;
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_maxreaders(env, 1022);
  if (mdb_env_open(env, a->dir, 0, 0644)) return 102;
  bool rdonly = a->op == RAW_COUNT || a->op == RAW_HAS;
  if (mdb_txn_begin(env, NULL, rdonly ? MDB_RDONLY : 0, &txn)) return 103;
  if (mdb_dbi_open(txn, JB_DB_ENTITIES, 0, &ent)) return 104;
  MDB_val k = {a->name ? strlen(a->name) : 0, (void *)a->name}, v;
  int ret = 0;
  switch (a->op) {
  case RAW_COUNT: {
    MDB_stat st;
    if (mdb_stat(txn, ent, &st)) return 105;
    ret = st.ms_entries > 100 ? 100 : (int)st.ms_entries;
    break;
  }
  case RAW_HAS:
    ret = mdb_get(txn, ent, &k, &v) == 0 ? 0 : 1;
    break;
  case RAW_OLD_COPIES: {
    if (mdb_get(txn, ent, &k, &v)) return 106;
    if (v.mv_size > 4096 || v.mv_size < sizeof(jb_entityrec)) return 107;
    uint8_t buf[4096];
    memcpy(buf, v.mv_data, v.mv_size);
    size_t len = v.mv_size;
    jb_entityrec rec;
    memcpy(&rec, buf, sizeof rec);
    rec.epoch -= 1; /* an earlier boot: same process, same everything */
    memcpy(buf, &rec, sizeof rec);
    for (int i = 0; i < a->n; i++) {
      char name[32];
      snprintf(name, sizeof name, "old-%02d", i);
      MDB_val nk = {strlen(name), name}, nv = {len, buf};
      if (mdb_put(txn, ent, &nk, &nv, 0)) return 108;
    }
    break;
  }
  case RAW_PUT_BROKEN:
    v = (MDB_val){2, "xx"};
    if (mdb_put(txn, ent, &k, &v, 0)) return 109;
    break;
  }
  if (rdonly)
    mdb_txn_abort(txn);
  else if (mdb_txn_commit(txn))
    return 110;
  mdb_env_close(env);
  return ret;
}

/* The exit status of a raw child (fails the test if it did not exit). */
static int raw(raw_op op, const char *dir, const char *name, int n) {
  raw_args a = {op, dir, name, n};
  int st = jbt_wait(jbt_fork(raw_child, &a, 30), 30000);
  if (st == -1 || !WIFEXITED(st)) fail_msg("raw child did not finish");
  int code = WEXITSTATUS(st);
  if (code > 100) fail_msg("raw child failed with %d", code);
  return code;
}

static int raw_count(const char *dir) { return raw(RAW_COUNT, dir, NULL, 0); }

static bool raw_has(const char *dir, const char *name) {
  return raw(RAW_HAS, dir, name, 0) == 0;
}

/* ------------------------------------------- an entity in another process */

typedef struct {
  const char *dir;
  const char *name;
  int ready_fd;
} child_args;

/* Open the board, register, say so, and wait to be killed. */
static int registered_child(void *arg) {
  child_args *a = arg;
  jb_board *b = NULL;
  if (jb_board_open(&b, a->dir, NULL) != JB_OK) return 1;
  if (jb_entity_register(b, a->name, "worker", meta_b, sizeof meta_b) != JB_OK)
    return 2;
  char c = 'r';
  if (write(a->ready_fd, &c, 1) != 1) return 3;
  for (;;) pause(); /* until SIGKILL */
}

/* Start a child that registers `name`; returns once it has. */
static pid_t start_registered(const char *dir, const char *name) {
  child_args a = {dir, name, -1};
  return jbt_fork_ready(registered_child, &a, &a.ready_fd, 60,
                        "the child failed to register");
}

/* SIGKILL `pid` and wait until it is a zombie, without reaping it. */
static void kill_leave_zombie(pid_t pid) {
  assert_int_equal(kill(pid, SIGKILL), 0);
  siginfo_t info;
  memset(&info, 0, sizeof info);
  assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
  assert_int_equal(info.si_pid, pid);
}

static void reap_killed(pid_t pid) {
  int st = jbt_wait(pid, 10000);
  assert_true(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* Registers "worker-1" (kind worker, meta_a) and "conductor-1" (kind
 * conductor, no metadata); the wall clock before and after goes to
 * *before and *after. */
static void register_two(jbt_fixture *f, int64_t *before, int64_t *after) {
  *before = wall_us();
  register_ok(f->board, "worker-1", "worker", meta_a, sizeof meta_a);
  register_ok(f->board, "conductor-1", "conductor", NULL, 0);
  *after = wall_us();
}

/* Name order: "conductor-1" sorts before "worker-1". */
static void registered_entities_list_in_name_order_with_kind_and_metadata(
    void **state) {
  jbt_fixture *f = *state;
  int64_t before, after;
  register_two(f, &before, &after);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 2);
  assert_string_equal(l->e[0].name, "conductor-1");
  assert_string_equal(l->e[0].kind, "conductor");
  assert_string_equal(l->e[1].name, "worker-1");
  assert_string_equal(l->e[1].kind, "worker");
  assert_int_equal(l->e[1].meta_len, sizeof meta_a);
  assert_memory_equal(l->e[1].meta, meta_a, sizeof meta_a);
  free(l);
}

static void an_entity_registered_without_metadata_lists_the_empty_map(
    void **state) {
  jbt_fixture *f = *state;
  int64_t before, after;
  register_two(f, &before, &after);
  seen_list *l = list_ok(f->board);
  assert_string_equal(l->e[0].name, "conductor-1");
  assert_int_equal(l->e[0].meta_len, 1); /* NULL meta is the empty map */
  assert_int_equal(l->e[0].meta[0], 0x80);
  free(l);
}

static void a_registration_records_the_process_and_the_time(void **state) {
  jbt_fixture *f = *state;
  int64_t before, after;
  register_two(f, &before, &after);
  seen_list *l = list_ok(f->board);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(l->e[i].pid, getpid());
    assert_in_range(l->e[i].registered_us, before, after);
  }
  free(l);
}

static void unregister_removes_the_entity_and_its_record(void **state) {
  jbt_fixture *f = *state;
  int64_t before, after;
  register_two(f, &before, &after);
  assert_int_equal(jb_entity_unregister(f->board, "worker-1"), JB_OK);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].name, "conductor-1");
  free(l);
  assert_int_equal(raw_count(f->dir), 1);
  jbt_assert_check_ok(f->board);
}

static void register_again_replaces_kind_and_metadata(void **state) {
  jbt_fixture *f = *state;
  register_ok(f->board, "w", "worker", meta_a, sizeof meta_a);
  register_ok(f->board, "w", "conductor", meta_b, sizeof meta_b);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].kind, "conductor");
  assert_int_equal(l->e[0].meta_len, sizeof meta_b);
  assert_memory_equal(l->e[0].meta, meta_b, sizeof meta_b);
  free(l);
  assert_int_equal(raw_count(f->dir), 1);
}

/* The longest name (JB_WHO_MAX bytes) and kind (JB_NAME_MAX) fit: the name
 * is an LMDB key, and LMDB refuses keys over 511 bytes. */
static void names_and_kinds_of_the_longest_length_are_accepted(void **state) {
  jbt_fixture *f = *state;
  char name[JB_WHO_MAX + 1], kind[JB_NAME_MAX + 1];
  memset(name, 'n', JB_WHO_MAX);
  name[JB_WHO_MAX] = '\0';
  memset(kind, 'k', JB_NAME_MAX);
  kind[JB_NAME_MAX] = '\0';
  register_ok(f->board, name, kind, NULL, 0);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].name, name);
  free(l);
  assert_int_equal(jb_entity_unregister(f->board, name), JB_OK);
}

static void expect_refused(jb_board *b, const char *name, const char *kind,
                           const void *meta, size_t meta_len,
                           const char *field) {
  int rc = jb_entity_register(b, name, kind, meta, meta_len);
  if (rc != JB_EINVAL)
    fail_msg("register (%s case) returned %d, expected JB_EINVAL", field, rc);
  jbt_assert_contains(jb_errmsg(), field);
}

/* The board of the refusal tests: "present" registered with meta_a; the
 * snapshot of it goes to *before. */
static void register_present(jbt_fixture *f, jbt_snapshot *before) {
  register_ok(f->board, "present", "worker", meta_a, sizeof meta_a);
  jbt_snapshot_take(before, f->board);
}

/* Nothing was written since *before (which this frees): "present" alone,
 * with its metadata. */
static void assert_only_present(jbt_fixture *f, jbt_snapshot *before) {
  jbt_snapshot after;
  jbt_snapshot_take(&after, f->board);
  jbt_snapshot_assert_same(before, &after);
  jbt_snapshot_free(before);
  jbt_snapshot_free(&after);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_memory_equal(l->e[0].meta, meta_a, sizeof meta_a);
  free(l);
}

static void a_bad_entity_name_is_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before;
  register_present(f, &before);
  char long_name[JB_WHO_MAX + 2];
  memset(long_name, 'n', JB_WHO_MAX + 1);
  long_name[JB_WHO_MAX + 1] = '\0';
  expect_refused(f->board, NULL, "worker", NULL, 0, "entity name");
  expect_refused(f->board, "", "worker", NULL, 0, "entity name");
  expect_refused(f->board, long_name, "worker", NULL, 0, "entity name");
  expect_refused(f->board, "bad\xff", "worker", NULL, 0, "entity name");
  assert_only_present(f, &before);
}

static void a_bad_entity_kind_is_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before;
  register_present(f, &before);
  char long_kind[JB_NAME_MAX + 2];
  memset(long_kind, 'k', JB_NAME_MAX + 1);
  long_kind[JB_NAME_MAX + 1] = '\0';
  expect_refused(f->board, "w", NULL, NULL, 0, "entity kind");
  expect_refused(f->board, "w", "", NULL, 0, "entity kind");
  expect_refused(f->board, "w", long_kind, NULL, 0, "entity kind");
  expect_refused(f->board, "w", "\xc0\xaf", NULL, 0, "entity kind");
  assert_only_present(f, &before);
}

/* Re-registering an existing name with bad metadata leaves it alone
 * too. */
static void bad_entity_metadata_is_refused_naming_the_field(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before;
  register_present(f, &before);
  static const uint8_t array[] = {0x91, 0x01};
  static const uint8_t truncated[] = {0x81, 0xa1};
  static const uint8_t trailing[] = {0x80, 0x80};
  expect_refused(f->board, "w", "worker", array, sizeof array, "entity meta");
  expect_refused(f->board, "w", "worker", truncated, sizeof truncated,
                 "entity meta");
  expect_refused(f->board, "w", "worker", trailing, sizeof trailing,
                 "entity meta");
  expect_refused(f->board, "w", "worker", NULL, 3, "entity meta");
  expect_refused(f->board, "present", "worker", array, sizeof array,
                 "entity meta");
  assert_only_present(f, &before);
}

static void register_without_a_board_is_invalid(void **state) {
  jbt_fixture *f = *state;
  jbt_snapshot before;
  register_present(f, &before);
  assert_int_equal(jb_entity_register(NULL, "w", "worker", NULL, 0),
                   JB_EINVAL);
  assert_only_present(f, &before);
}

static void unregister_of_an_unknown_entity_is_not_found_naming_it(
    void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_entity_unregister(f->board, "ghost-7"), JB_ENOTFOUND);
  jbt_assert_contains(jb_errmsg(), "ghost-7");
}

static void unregister_twice_is_not_found_the_second_time(void **state) {
  jbt_fixture *f = *state;
  register_ok(f->board, "ghost-7", "worker", NULL, 0);
  assert_int_equal(jb_entity_unregister(f->board, "ghost-7"), JB_OK);
  assert_int_equal(jb_entity_unregister(f->board, "ghost-7"), JB_ENOTFOUND);
}

static void unregister_of_an_empty_name_is_invalid_naming_the_field(
    void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_entity_unregister(f->board, ""), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "entity name");
}

static void list_stops_when_the_callback_returns_non_zero(void **state) {
  jbt_fixture *f = *state;
  register_ok(f->board, "a", "worker", NULL, 0);
  register_ok(f->board, "b", "worker", NULL, 0);
  register_ok(f->board, "c", "worker", NULL, 0);
  seen_list *l = calloc(1, sizeof *l);
  assert_non_null(l);
  l->stop_after = 2;
  assert_int_equal(jb_entity_list(f->board, collect, l), JB_OK);
  assert_int_equal(l->n, 2);
  assert_string_equal(l->e[1].name, "b");
  free(l);
}

static void list_without_a_callback_or_a_board_is_invalid(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb_entity_list(f->board, NULL, NULL), JB_EINVAL);
  assert_int_equal(jb_entity_list(NULL, collect, NULL), JB_EINVAL);
}




static void an_entity_of_another_process_is_listed_with_its_pid(
    void **state) {
  jbt_fixture *f = *state;
  pid_t pid = start_registered(f->dir, "child-1");
  seen_list *l = list_ok(f->board);
  const seen_entity *c = find(l, "child-1");
  assert_non_null(c);
  assert_int_equal(c->pid, pid);
  assert_string_equal(c->kind, "worker");
  assert_memory_equal(c->meta, meta_b, sizeof meta_b);
  free(l);
  kill_leave_zombie(pid);
  reap_killed(pid);
}

/* A killed process is gone for the board at once, while it is still a
 * zombie (nobody has waited for it yet), and after it is reaped; the
 * entity of a live one stays. */
static void entity_of_a_killed_process_vanishes_before_and_after_reaping(
    void **state) {
  jbt_fixture *f = *state;
  register_ok(f->board, "parent", "conductor", NULL, 0);
  pid_t pid = start_registered(f->dir, "child-1");
  assert_true(listed(f->board, "child-1"));
  kill_leave_zombie(pid);
  assert_false(listed(f->board, "child-1"));
  assert_true(listed(f->board, "parent"));
  reap_killed(pid);
  assert_false(listed(f->board, "child-1"));
  assert_true(listed(f->board, "parent"));
}

/* Not listed, but its record stays until a registration sweeps it. */
static void the_record_of_a_killed_entity_stays_until_a_registration(
    void **state) {
  jbt_fixture *f = *state;
  pid_t pid = start_registered(f->dir, "child-1");
  kill_leave_zombie(pid);
  reap_killed(pid);
  assert_false(listed(f->board, "child-1"));
  assert_true(raw_has(f->dir, "child-1"));
}

static void a_registration_removes_the_records_of_dead_entities(
    void **state) {
  jbt_fixture *f = *state;
  pid_t pid = start_registered(f->dir, "dead-1");
  kill_leave_zombie(pid);
  reap_killed(pid);
  assert_int_equal(raw_count(f->dir), 1);
  register_ok(f->board, "alive", "worker", NULL, 0);
  assert_false(raw_has(f->dir, "dead-1"));
  assert_int_equal(raw_count(f->dir), 1);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].name, "alive");
  free(l);
}

/* "me" registered, and a copy of its record, "old-00", from before the
 * last boot: the same process, pid and start time, only the epoch says
 * otherwise. */
static void register_me_and_an_old_copy(jbt_fixture *f) {
  register_ok(f->board, "me", "worker", NULL, 0);
  assert_int_equal(raw(RAW_OLD_COPIES, f->dir, "me", 1), 0);
  assert_true(raw_has(f->dir, "old-00"));
}

static void entity_of_an_earlier_boot_is_not_listed(void **state) {
  jbt_fixture *f = *state;
  register_me_and_an_old_copy(f);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].name, "me");
  free(l);
}

static void entity_of_an_earlier_boot_is_removed_by_a_registration(
    void **state) {
  jbt_fixture *f = *state;
  register_me_and_an_old_copy(f);
  register_ok(f->board, "me", "worker", NULL, 0);
  assert_false(raw_has(f->dir, "old-00"));
  assert_int_equal(raw_count(f->dir), 1);
}

/* A registration's sweep is bounded (16 records), and the next one goes
 * on with the rest. */
static void a_registration_removes_at_most_sixteen_dead_records(
    void **state) {
  jbt_fixture *f = *state;
  register_ok(f->board, "me", "worker", NULL, 0);
  assert_int_equal(raw(RAW_OLD_COPIES, f->dir, "me", 20), 0);
  assert_int_equal(raw_count(f->dir), 21);
  register_ok(f->board, "me", "worker", NULL, 0);
  assert_int_equal(raw_count(f->dir), 21 - 16);
  register_ok(f->board, "me", "worker", NULL, 0);
  assert_int_equal(raw_count(f->dir), 1);
  assert_true(listed(f->board, "me"));
}

static void check_line(const char *line, void *payload) {
  char *lines = payload;
  size_t used = strlen(lines);
  snprintf(lines + used, 1024 - used, "%s\n", line);
}

/* A record "broken" that does not decode, and "fine" registered after
 * it. */
static void put_broken_and_register_fine(jbt_fixture *f) {
  assert_int_equal(raw(RAW_PUT_BROKEN, f->dir, "broken", 0), 0);
  register_ok(f->board, "fine", "worker", NULL, 0);
}

static void a_malformed_entity_record_is_not_listed(void **state) {
  jbt_fixture *f = *state;
  put_broken_and_register_fine(f);
  seen_list *l = list_ok(f->board);
  assert_int_equal(l->n, 1);
  assert_string_equal(l->e[0].name, "fine");
  free(l);
}

/* Never deleted by a registration's sweep. */
static void a_malformed_entity_record_is_kept(void **state) {
  jbt_fixture *f = *state;
  put_broken_and_register_fine(f);
  assert_true(raw_has(f->dir, "broken"));
}

static void check_reports_a_malformed_entity_record(void **state) {
  jbt_fixture *f = *state;
  put_broken_and_register_fine(f);
  jb_check_stats st;
  char lines[1024] = "";
  assert_int_equal(jb_board_check(&st, f->board, check_line, lines),
                   JB_ECORRUPT);
  assert_int_equal(st.problems, 1);
  jbt_assert_contains(lines, "entities: the record of broken is malformed");
}

int main(void) {
  jbt_watchdog(120);
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
  const struct CMUnitTest tests[] = {
      T(registered_entities_list_in_name_order_with_kind_and_metadata),
      T(an_entity_registered_without_metadata_lists_the_empty_map),
      T(a_registration_records_the_process_and_the_time),
      T(unregister_removes_the_entity_and_its_record),
      T(register_again_replaces_kind_and_metadata),
      T(names_and_kinds_of_the_longest_length_are_accepted),
      T(a_bad_entity_name_is_refused_naming_the_field),
      T(a_bad_entity_kind_is_refused_naming_the_field),
      T(bad_entity_metadata_is_refused_naming_the_field),
      T(register_without_a_board_is_invalid),
      T(unregister_of_an_unknown_entity_is_not_found_naming_it),
      T(unregister_twice_is_not_found_the_second_time),
      T(unregister_of_an_empty_name_is_invalid_naming_the_field),
      T(list_stops_when_the_callback_returns_non_zero),
      T(list_without_a_callback_or_a_board_is_invalid),
      T(an_entity_of_another_process_is_listed_with_its_pid),
      T(entity_of_a_killed_process_vanishes_before_and_after_reaping),
      T(the_record_of_a_killed_entity_stays_until_a_registration),
      T(a_registration_removes_the_records_of_dead_entities),
      T(entity_of_an_earlier_boot_is_not_listed),
      T(entity_of_an_earlier_boot_is_removed_by_a_registration),
      T(a_registration_removes_at_most_sixteen_dead_records),
      T(a_malformed_entity_record_is_not_listed),
      T(a_malformed_entity_record_is_kept),
      T(check_reports_a_malformed_entity_record),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
