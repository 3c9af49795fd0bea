/*
 * test_sync_config.c - jb_sync_board_configure (sync/config.c): which Redis
 * and namespace a board is synced with, remembered in the board's
 * settings. No Redis server is needed: nothing here connects.
 */
#include "conn.h"
#include "helpers.h"

#include "core/sync_hook.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define URL1 "redis://:s3cret@10.0.0.1:6380/2"
/* What the board keeps of URL1: the password is not in it. */
#define URL1_BARE "redis://10.0.0.1:6380/2"
#define URL2 "unix:///run/redis/redis.sock?db=1"

/* Call jb_sync_board_configure and check its outputs' NULL-ness rule. */
static int config(char **url, char **ns, jb_board *b, const char *given_url,
                  const char *given_ns) {
  *url = *ns = (char *)"unset";
  int rc = jb_sync_board_configure(url, ns, b, given_url, given_ns);
  if (rc != JB_OK) {
    assert_null(*url);
    assert_null(*ns);
  } else {
    assert_non_null(*ns);
  }
  return rc;
}

/* The setting `key`, or "" when it is not set. */
static void setting(char *buf, size_t size, jb_board *b, const char *key) {
  int rc = jb__board_setting_get(b, key, buf, size, NULL);
  if (rc == JB_ENOTFOUND)
    buf[0] = '\0';
  else
    assert_int_equal(rc, JB_OK);
}

static void expect_settings(jb_board *b, const char *url, const char *ns) {
  char got[4200];
  setting(got, sizeof got, b, "sync.url");
  assert_string_equal(got, url);
  setting(got, sizeof got, b, "sync.namespace");
  assert_string_equal(got, ns);
}

/* A board never synced: no URL, the default namespace, nothing written;
 * a namespace given alone is not remembered (no Redis to use it with). */
static void test_not_synced(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  assert_null(url);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(ns);
  assert_int_equal(config(&url, &ns, f->board, NULL, "fleet"), JB_OK);
  assert_null(url);
  assert_string_equal(ns, "fleet");
  free(ns);
  expect_settings(f->board, "", "");
}

/* The first URL fixes the namespace (the default when none is given); a
 * later call without either gets both back. */
static void test_remembered(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, NULL), JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(url);
  free(ns);
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
  /* Another handle (a later command) finds them. */
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(config(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(url);
  free(ns);
  /* The same namespace, given: fine. */
  assert_int_equal(config(&url, &ns, b2, NULL, JB_SYNC_NAMESPACE_DEFAULT),
                   JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  jb_board_close(b2);
}

/* A new URL replaces the old one (a server moved); the namespace stays,
 * and so does the password when the new URL gives none. */
static void test_url_replaced(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, "{fleet}"), JB_OK);
  free(url);
  free(ns);
  assert_int_equal(config(&url, &ns, f->board, URL2, NULL), JB_OK);
  assert_string_equal(url, "unix://:s3cret@/run/redis/redis.sock?db=1");
  assert_string_equal(ns, "{fleet}");
  free(url);
  free(ns);
  expect_settings(f->board, URL2, "{fleet}");
}

/* Another namespace is refused, naming both, with or without a URL, and
 * nothing changes (not even the URL given with it). */
static void test_other_namespace(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, "fleet"), JB_OK);
  free(url);
  free(ns);
  assert_int_equal(config(&url, &ns, f->board, URL2, "other"), JB_ECLAIMED);
  assert_non_null(strstr(jb_errmsg(), "\"fleet\""));
  assert_non_null(strstr(jb_errmsg(), "\"other\""));
  assert_int_equal(config(&url, &ns, f->board, NULL, "other"), JB_ECLAIMED);
  expect_settings(f->board, URL1_BARE, "fleet");
}

/* A namespace fixed by another process in between (the settings written
 * directly, as a racing process would) is not overwritten. */
static void test_namespace_race(void **state) {
  jbt_fixture *f = *state;
  assert_int_equal(jb__board_setting_set(f->board, "sync.namespace", "first"),
                   JB_OK);
  char *url, *ns;
  /* No URL kept yet, but a namespace is: it is the board's. */
  assert_int_equal(config(&url, &ns, f->board, URL1, "second"), JB_ECLAIMED);
  assert_non_null(strstr(jb_errmsg(), "\"first\""));
  expect_settings(f->board, "", "first");
  assert_int_equal(config(&url, &ns, f->board, URL1, NULL), JB_OK);
  assert_string_equal(ns, "first");
  free(url);
  free(ns);
}

/* Bad input is refused before anything is written, naming it; the
 * password is never in the message. */
static void test_bad_input(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://:pw@h:99999", NULL),
                   JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "99999"));
  assert_null(strstr(jb_errmsg(), "pw"));
  assert_int_equal(config(&url, &ns, f->board, "http://h", NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "http://h"));
  assert_int_equal(config(&url, &ns, f->board, URL1, "has space"), JB_EINVAL);
  assert_int_equal(config(&url, &ns, f->board, URL1, ""), JB_EINVAL);
  expect_settings(f->board, "", "");
  /* Bad input with a board already synced: refused, nothing changes. */
  assert_int_equal(config(&url, &ns, f->board, URL1, NULL), JB_OK);
  free(url);
  free(ns);
  assert_int_equal(config(&url, &ns, f->board, "redis://h:0", NULL),
                   JB_EINVAL);
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
  assert_int_equal(jb_sync_board_configure(&url, &ns, NULL, URL1, NULL),
                   JB_EINVAL);
  assert_int_equal(jb_sync_board_configure(NULL, &ns, f->board, URL1, NULL),
                   JB_EINVAL);
}

/* ------------------------------------------------------------ credentials */

/* The whole of file dir/name into a new NUL-terminated buffer (*len its
 * length); NULL when it does not exist. */
static char *slurp(const char *dir, const char *name, size_t *len) {
  char *p = jbt_path(dir, name);
  FILE *f = fopen(p, "rb");
  free(p);
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  assert_non_null(buf);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      assert_non_null(buf);
    }
  }
  fclose(f);
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

/* `secret` is nowhere in the board's data file: not in a live page, not in
 * a free one (every byte of the file is searched). */
static void not_in_data_file(const char *dir, const char *secret) {
  size_t len = 0;
  char *data = slurp(dir, "data.mdb", &len);
  assert_non_null(data);
  if (memmem(data, len, secret, strlen(secret)) != NULL)
    fail_msg("\"%s\" is in %s/data.mdb", secret, dir);
  free(data);
}

/* The credentials file holds `password` and a newline, mode 0600. */
static void expect_credentials(const char *dir, const char *password) {
  char *p = jbt_path(dir, "sync.credentials");
  struct stat sb;
  assert_int_equal(lstat(p, &sb), 0);
  free(p);
  assert_true(S_ISREG(sb.st_mode));
  assert_int_equal(sb.st_mode & 07777, 0600);
  char *got = slurp(dir, "sync.credentials", NULL);
  char want[256];
  snprintf(want, sizeof want, "%s\n", password);
  assert_string_equal(got, want);
  free(got);
}

static void no_credentials(const char *dir) {
  char *got = slurp(dir, "sync.credentials", NULL);
  assert_null(got);
}

/* The password of a URL, parsed ("" when it has none). */
static void expect_password(const char *url, const char *password) {
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, url), JB_OK);
  assert_string_equal(u->password ? u->password : "", password);
  jb_sync_url_free(u);
}

/* jb_sync_board_configure succeeds, and its URL to connect with has
 * `password` ("" for none). */
static void config_ok(jb_board *b, const char *given_url, const char *given_ns,
                      const char *password) {
  char *url, *ns;
  assert_int_equal(config(&url, &ns, b, given_url, given_ns), JB_OK);
  expect_password(url, password);
  free(url);
  free(ns);
}

/* Write the credentials file by hand, with `mode`. */
static void put_credentials(const char *dir, const char *text, mode_t mode) {
  char *p = jbt_path(dir, "sync.credentials");
  unlink(p);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, mode);
  assert_true(fd >= 0);
  assert_int_equal(fchmod(fd, mode), 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  free(p);
}

/* A URL given with a password: the board keeps the URL without it, the
 * password goes to sync.credentials (0600) and never into data.mdb, and
 * the URL to connect with has it back, for this handle and the next. */
static void test_password_never_in_board(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  config_ok(f->board, URL1, NULL, "s3cret");
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
  expect_credentials(f->dir, "s3cret");
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, "s3cret");
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(config(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  assert_int_equal(jb_sync_board_lookup(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  /* status shows that a password is configured, not what it is */
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, b2), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
  jb_board_close(b2);
  not_in_data_file(f->dir, "s3cret");
}

/* A user is kept in the URL; a password with ':', '@', '/', '%' comes back
 * whole; a URL given again without a password keeps the file's. */
static void test_user_and_escapes(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board,
                          "unix://alice:p%40s%3As%2Fw%25rd@/run/r.sock?db=3",
                          "{fleet}"),
                   JB_OK);
  expect_password(url, "p@s:s/w%rd");
  free(url);
  free(ns);
  expect_settings(f->board, "unix://alice@/run/r.sock?db=3", "{fleet}");
  expect_credentials(f->dir, "p@s:s/w%rd");
  /* The server moved; the password did not. */
  assert_int_equal(config(&url, &ns, f->board, "redis://alice@h2:7000", NULL),
                   JB_OK);
  expect_password(url, "p@s:s/w%rd");
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, url), JB_OK);
  assert_string_equal(u->user, "alice");
  assert_string_equal(u->host, "h2");
  jb_sync_url_free(u);
  free(url);
  free(ns);
  expect_settings(f->board, "redis://alice@h2:7000", "{fleet}");
  expect_credentials(f->dir, "p@s:s/w%rd");
  /* A new password replaces the file's. */
  assert_int_equal(config(&url, &ns, f->board, "redis://alice:n3w@h2:7000",
                          NULL), JB_OK);
  free(url);
  free(ns);
  expect_credentials(f->dir, "n3w");
  expect_settings(f->board, "redis://alice@h2:7000", "{fleet}");
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, "p@s:s/w%rd");
  not_in_data_file(f->dir, "p%40s");
  not_in_data_file(f->dir, "n3w");
}

/* $JOBBOARD_REDIS_PASSWORD beats the file, a password in the given URL
 * beats both, and the environment's is never written anywhere. */
static void test_environment_password(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  config_ok(f->board, URL1, NULL, "s3cret");
  setenv("JOBBOARD_REDIS_PASSWORD", "fr0m-env", 1);
  config_ok(f->board, NULL, NULL, "fr0m-env");
  config_ok(f->board, URL1_BARE, NULL, "fr0m-env");
  config_ok(f->board, "redis://:g1ven@h", NULL, "g1ven");
  expect_credentials(f->dir, "g1ven");
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, "fr0m-env");
  not_in_data_file(f->dir, "g1ven");
}

/* A board an older release synced: its sync.url holds the password. It
 * still gives the URL to connect with (resolve writes nothing), and the
 * next jb_sync_board_configure moves the password to the credentials file
 * and rewrites the setting without it. */
static void test_old_board_migrated(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  assert_int_equal(jb__board_setting_set(f->board, "sync.url", URL1), JB_OK);
  assert_int_equal(jb__board_setting_set(f->board, "sync.namespace", "old"),
                   JB_OK);
  char *url, *ns;
  assert_int_equal(jb_sync_board_lookup(&url, &ns, f->board, NULL, NULL),
                   JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, "old");
  free(url);
  free(ns);
  expect_settings(f->board, URL1, "old");
  no_credentials(f->dir);
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  expect_settings(f->board, URL1_BARE, "old");
  expect_credentials(f->dir, "s3cret");
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
}

/* Another user's board (its data file theirs): root migrating it gives
 * the credentials file to the board's owner, so that the owner's daemon
 * reads it (tests/sync_cli.sh checks, as user nobody, that a user who may
 * not keep the board's password cannot point it at another server).
 * Needs root (else skipped). */
static void test_other_users_board(void **state) {
  jbt_fixture *f = *state;
  if (geteuid() != 0) {
    skip();
    return;
  }
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *data = jbt_path(f->dir, "data.mdb");
  assert_int_equal(chown(data, 65534, 65534), 0);
  assert_int_equal(jb__board_setting_set(f->board, "sync.url", URL1), JB_OK);
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  free(url);
  free(ns);
  expect_settings(f->board, URL1_BARE, "taskflow");
  char *cred = jbt_path(f->dir, "sync.credentials");
  struct stat st;
  assert_int_equal(stat(cred, &st), 0);
  assert_int_equal(st.st_uid, 65534); /* the board's owner's, not root's */
  assert_int_equal(st.st_mode & 0777, 0600);
  free(cred);
  free(data);
}

/* An old board given a new URL without a password: the old password still
 * moves to the file (it is the board's). An old board whose directory has
 * a credentials file already: the file's password wins, the setting is
 * rewritten all the same. */
static void test_old_board_new_url(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  assert_int_equal(jb__board_setting_set(f->board, "sync.url", URL1), JB_OK);
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://h3", NULL), JB_OK);
  assert_string_equal(url, "redis://:s3cret@h3");
  free(url);
  free(ns);
  expect_settings(f->board, "redis://h3", JB_SYNC_NAMESPACE_DEFAULT);
  expect_credentials(f->dir, "s3cret");

  assert_int_equal(jb__board_setting_set(f->board, "sync.url", URL1), JB_OK);
  put_credentials(f->dir, "newer\n", 0600);
  config_ok(f->board, NULL, NULL, "newer");
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
  expect_credentials(f->dir, "newer");
}

/* A user and no password anywhere is refused before anything is written,
 * naming where passwords are looked for. */
static void test_user_without_password(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://alice@h", NULL),
                   JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "alice"));
  assert_non_null(strstr(jb_errmsg(), "JOBBOARD_REDIS_PASSWORD"));
  assert_non_null(strstr(jb_errmsg(), "sync.credentials"));
  expect_settings(f->board, "", "");
  /* The public parser still wants a password with a user. */
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis://alice@h"), JB_EINVAL);
  /* With the environment's: fine, and nothing of it is kept. */
  setenv("JOBBOARD_REDIS_PASSWORD", "pw-env", 1);
  assert_int_equal(config(&url, &ns, f->board, "redis://alice@h", NULL),
                   JB_OK);
  assert_string_equal(url, "redis://alice:pw-env@h");
  free(url);
  free(ns);
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  expect_settings(f->board, "redis://alice@h", JB_SYNC_NAMESPACE_DEFAULT);
  no_credentials(f->dir);
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://alice@h");
}

/* A credentials file others may read, a symbolic link, an empty file: not
 * used, each named; a file made by `echo pw > sync.credentials` (mode
 * fixed) is. */
static void test_bad_credentials_file(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  config_ok(f->board, URL1, NULL, "s3cret");
  put_credentials(f->dir, "s3cret\n", 0644);
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "sync.credentials"));
  assert_non_null(strstr(jb_errmsg(), "chmod 600"));
  assert_null(strstr(jb_errmsg(), "s3cret"));
  assert_int_equal(jb_sync_board_lookup(&url, &ns, f->board, NULL, NULL),
                   JB_EINVAL);
  /* A URL given with its password replaces the file, with mode 0600. */
  config_ok(f->board, URL1, NULL, "s3cret");
  expect_credentials(f->dir, "s3cret");
  put_credentials(f->dir, "", 0600);
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "empty"));
  char *p = jbt_path(f->dir, "sync.credentials");
  char *elsewhere = jbt_path(f->dir, "elsewhere");
  unlink(p);
  put_credentials(f->dir, "s3cret", 0600);
  assert_int_equal(rename(p, elsewhere), 0);
  assert_int_equal(symlink(elsewhere, p), 0);
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "symbolic link"));
  unlink(p);
  free(p);
  free(elsewhere);
  put_credentials(f->dir, "by-hand\n", 0600);
  config_ok(f->board, NULL, NULL, "by-hand");
}

/* Splitting a URL and putting its password back gives the same
 * connection, for every form of URL; the bare part never holds it. */
static void test_split_round_trip(void **state) {
  (void)state;
  static const char *const urls[] = {
      "redis://:pw@h",
      "redis://:pw@h:7000/3",
      "redis://alice:pw@[::1]:6380/1",
      "redis://:p%40ss%3Aw%2Fo%3Frd%23%25@h",
      "redis://bob:%E2%82%AC!$&'()*+,;=~@h/0",
      "unix://:pw@/run/r.sock",
      "unix://alice:pw@/run/r.sock?db=2",
      "unix:///run/r.sock",
      "redis://h",
  };
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
    char *bare = NULL, *pw = NULL, *back = NULL;
    assert_int_equal(jb__sync_url_split(&bare, &pw, urls[i]), JB_OK);
    assert_false(jb__sync_url_has_password(bare));
    jb_sync_url *a = NULL, *b = NULL;
    assert_int_equal(jb_sync_url_parse(&a, urls[i]), JB_OK);
    if (pw == NULL) {
      assert_null(a->password);
      assert_string_equal(bare, urls[i]);
      back = strdup(bare);
    } else {
      assert_null(strstr(bare, "pw"));
      assert_int_equal(jb__sync_url_add_password(&back, bare, pw), JB_OK);
    }
    assert_int_equal(jb_sync_url_parse(&b, back), JB_OK);
    assert_string_equal(a->password ? a->password : "",
                        b->password ? b->password : "");
    assert_string_equal(a->user ? a->user : "", b->user ? b->user : "");
    assert_string_equal(a->host ? a->host : "", b->host ? b->host : "");
    assert_string_equal(a->path ? a->path : "", b->path ? b->path : "");
    assert_int_equal(a->port, b->port);
    assert_int_equal(a->db, b->db);
    jb_sync_url_free(a);
    jb_sync_url_free(b);
    free(bare);
    free(pw);
    free(back);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_round_trip),
      cmocka_unit_test_setup_teardown(test_not_synced, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_remembered, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_url_replaced, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_other_namespace, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_namespace_race, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_bad_input, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_password_never_in_board,
                                      jbt_setup, jbt_teardown),
      cmocka_unit_test_setup_teardown(test_user_and_escapes, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_environment_password, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_old_board_migrated, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_other_users_board, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_old_board_new_url, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_user_without_password, jbt_setup,
                                      jbt_teardown),
      cmocka_unit_test_setup_teardown(test_bad_credentials_file, jbt_setup,
                                      jbt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
