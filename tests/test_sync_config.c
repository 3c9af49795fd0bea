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

/* Configures the board with URL1 and no namespace. */
static void synced_with_url1(jb_board *b) {
  char *url, *ns;
  assert_int_equal(config(&url, &ns, b, URL1, NULL), JB_OK);
  free(url);
  free(ns);
}

/* A board never synced: no URL, the default namespace, nothing written. */
static void a_board_never_synced_has_no_url_and_the_default_namespace(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  assert_null(url);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(ns);
  expect_settings(f->board, "", "");
}

/* There is no Redis to use it with. */
static void a_namespace_given_alone_is_not_remembered(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, "fleet"), JB_OK);
  assert_null(url);
  assert_string_equal(ns, "fleet");
  free(ns);
  expect_settings(f->board, "", "");
}

/* The default when none is given. */
static void the_first_url_fixes_the_namespace(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, NULL), JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(url);
  free(ns);
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
}

/* Another handle (a later command) finds them. */
static void a_later_call_without_url_or_namespace_gets_both_back(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_url1(f->board);
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(config(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, JB_SYNC_NAMESPACE_DEFAULT);
  free(url);
  free(ns);
  jb_board_close(b2);
}

static void the_boards_namespace_given_again_is_accepted(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_url1(f->board);
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(config(&url, &ns, b2, NULL, JB_SYNC_NAMESPACE_DEFAULT),
                   JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  jb_board_close(b2);
}

/* A new URL (a server moved) replaces the one of URL1 with namespace
 * "{fleet}"; the URL to connect with goes to *url. */
static void moved_to_url2(char **url, jbt_fixture *f) {
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *ns;
  assert_int_equal(config(url, &ns, f->board, URL1, "{fleet}"), JB_OK);
  free(*url);
  free(ns);
  assert_int_equal(config(url, &ns, f->board, URL2, NULL), JB_OK);
  assert_string_equal(ns, "{fleet}");
  free(ns);
}

static void a_new_url_replaces_the_old_one_keeping_the_namespace(
    void **state) {
  jbt_fixture *f = *state;
  char *url;
  moved_to_url2(&url, f);
  free(url);
  expect_settings(f->board, URL2, "{fleet}");
}

static void a_new_url_without_a_password_keeps_the_old_password(
    void **state) {
  jbt_fixture *f = *state;
  char *url;
  moved_to_url2(&url, f);
  assert_string_equal(url, "unix://:s3cret@/run/redis/redis.sock?db=1");
  free(url);
}

/* Configures the board with URL1 and namespace "fleet". */
static void synced_in_fleet(jb_board *b) {
  char *url, *ns;
  assert_int_equal(config(&url, &ns, b, URL1, "fleet"), JB_OK);
  free(url);
  free(ns);
}

/* Nothing changes, not even the URL given with it. */
static void another_namespace_with_a_url_is_refused_naming_both(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_in_fleet(f->board);
  assert_int_equal(config(&url, &ns, f->board, URL2, "other"), JB_ECLAIMED);
  assert_non_null(strstr(jb_errmsg(), "\"fleet\""));
  assert_non_null(strstr(jb_errmsg(), "\"other\""));
  expect_settings(f->board, URL1_BARE, "fleet");
}

static void another_namespace_without_a_url_is_refused(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_in_fleet(f->board);
  assert_int_equal(config(&url, &ns, f->board, NULL, "other"), JB_ECLAIMED);
  expect_settings(f->board, URL1_BARE, "fleet");
}

/* A namespace fixed by another process in between: the settings written
 * directly, as a racing process would. No URL is kept yet, but a
 * namespace is. */
static void namespace_fixed_by_another_process(jbt_fixture *f) {
  assert_int_equal(jb__board_setting_set(f->board, "sync.namespace", "first"),
                   JB_OK);
}

static void a_namespace_fixed_by_another_process_is_not_overwritten(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  namespace_fixed_by_another_process(f);
  assert_int_equal(config(&url, &ns, f->board, URL1, "second"), JB_ECLAIMED);
  assert_non_null(strstr(jb_errmsg(), "\"first\""));
  expect_settings(f->board, "", "first");
}

static void a_namespace_fixed_by_another_process_is_the_boards(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  namespace_fixed_by_another_process(f);
  assert_int_equal(config(&url, &ns, f->board, URL1, NULL), JB_OK);
  assert_string_equal(ns, "first");
  free(url);
  free(ns);
}

/* Bad input is refused before anything is written, naming it; the
 * password is never in the message. */

static void a_bad_port_is_refused_naming_it_but_not_the_password(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://:pw@h:99999", NULL),
                   JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "99999"));
  assert_null(strstr(jb_errmsg(), "pw"));
  expect_settings(f->board, "", "");
}

static void a_url_of_another_scheme_is_refused_naming_it(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "http://h", NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "http://h"));
  expect_settings(f->board, "", "");
}

static void an_empty_namespace_or_one_with_a_space_is_refused(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, "has space"), JB_EINVAL);
  assert_int_equal(config(&url, &ns, f->board, URL1, ""), JB_EINVAL);
  expect_settings(f->board, "", "");
}

static void bad_input_to_a_synced_board_changes_nothing(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_url1(f->board);
  assert_int_equal(config(&url, &ns, f->board, "redis://h:0", NULL),
                   JB_EINVAL);
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
}

static void configure_without_a_board_or_a_url_output_is_refused(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
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


/* Configures the board with URL1, its password "s3cret" given in it and
 * none in the environment. */
static void synced_with_password(jb_board *b) {
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  config_ok(b, URL1, NULL, "s3cret");
}

/* A URL given with a password: the board keeps the URL without it, the
 * password goes to sync.credentials (0600) and never into data.mdb, and
 * the URL to connect with has it back, for this handle and the next. */

static void the_board_keeps_a_given_url_without_its_password(void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
}

static void a_given_password_goes_to_a_0600_credentials_file(void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  expect_credentials(f->dir, "s3cret");
}

/* Through configure and lookup. */
static void the_next_handle_gets_the_url_with_its_password_back(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_password(f->board);
  jb_board_close(f->board);
  f->board = NULL;
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  assert_int_equal(config(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  assert_int_equal(jb_sync_board_lookup(&url, &ns, b2, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  jb_board_close(b2);
}

static void status_shows_that_a_password_is_configured_not_what_it_is(
    void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
}

/* Not once it is configured, nor once the next handle has read it back. */
static void a_given_password_is_never_in_the_data_file(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_password(f->board);
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, "s3cret");
  jb_board *b2 = jbt_open(f->dir, JB_DURABILITY_NORMAL, 0);
  config_ok(b2, NULL, NULL, "s3cret");
  assert_int_equal(jb_sync_board_lookup(&url, &ns, b2, NULL, NULL), JB_OK);
  free(url);
  free(ns);
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, b2), JB_OK);
  jb_board_close(b2);
  not_in_data_file(f->dir, "s3cret");
}

/* A user, and a password with ':', '@', '/', '%'. */
#define ALICE_URL "unix://alice:p%40s%3As%2Fw%25rd@/run/r.sock?db=3"
#define ALICE_PW "p@s:s/w%rd"

/* Configures the board with ALICE_URL in namespace "{fleet}". */
static void synced_as_alice(jb_board *b) {
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  config_ok(b, ALICE_URL, "{fleet}", ALICE_PW);
}

/* In the setting, and so in the URL to connect with. */
static void a_user_is_kept_in_the_url(void **state) {
  jbt_fixture *f = *state;
  synced_as_alice(f->board);
  expect_settings(f->board, "unix://alice@/run/r.sock?db=3", "{fleet}");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, url), JB_OK);
  assert_string_equal(u->user, "alice");
  jb_sync_url_free(u);
  free(url);
  free(ns);
}

/* In the URL to connect with (synced_as_alice checks) and in the file. */
static void an_escaped_password_comes_back_whole(void **state) {
  jbt_fixture *f = *state;
  synced_as_alice(f->board);
  expect_credentials(f->dir, ALICE_PW);
}

/* The server moved; the password did not. */
static void a_url_given_again_without_a_password_keeps_the_files(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_as_alice(f->board);
  assert_int_equal(config(&url, &ns, f->board, "redis://alice@h2:7000", NULL),
                   JB_OK);
  expect_password(url, ALICE_PW);
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, url), JB_OK);
  assert_string_equal(u->user, "alice");
  assert_string_equal(u->host, "h2");
  jb_sync_url_free(u);
  free(url);
  free(ns);
  expect_settings(f->board, "redis://alice@h2:7000", "{fleet}");
  expect_credentials(f->dir, ALICE_PW);
}

/* Configures the board as alice, then on a new server with a new
 * password. */
static void alice_with_a_new_password(jb_board *b) {
  synced_as_alice(b);
  config_ok(b, "redis://alice@h2:7000", NULL, ALICE_PW);
  config_ok(b, "redis://alice:n3w@h2:7000", NULL, "n3w");
}

static void a_new_password_replaces_the_files(void **state) {
  jbt_fixture *f = *state;
  alice_with_a_new_password(f->board);
  expect_credentials(f->dir, "n3w");
  expect_settings(f->board, "redis://alice@h2:7000", "{fleet}");
}

/* Neither the password nor its escaped form. */
static void no_password_of_a_user_is_in_the_data_file(void **state) {
  jbt_fixture *f = *state;
  alice_with_a_new_password(f->board);
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, ALICE_PW);
  not_in_data_file(f->dir, "p%40s");
  not_in_data_file(f->dir, "n3w");
}

/* $JOBBOARD_REDIS_PASSWORD beats the file, a password in the given URL
 * beats both, and the environment's is never written anywhere. */

static void the_environments_password_beats_the_files(void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  setenv("JOBBOARD_REDIS_PASSWORD", "fr0m-env", 1);
  config_ok(f->board, NULL, NULL, "fr0m-env");
  config_ok(f->board, URL1_BARE, NULL, "fr0m-env");
  unsetenv("JOBBOARD_REDIS_PASSWORD");
}

/* It is the one the file keeps. */
static void a_password_in_the_given_url_beats_the_environments(
    void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  setenv("JOBBOARD_REDIS_PASSWORD", "fr0m-env", 1);
  config_ok(f->board, "redis://:g1ven@h", NULL, "g1ven");
  expect_credentials(f->dir, "g1ven");
  unsetenv("JOBBOARD_REDIS_PASSWORD");
}

/* Nor a given one in data.mdb. */
static void the_environments_password_is_never_written(void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  setenv("JOBBOARD_REDIS_PASSWORD", "fr0m-env", 1);
  config_ok(f->board, NULL, NULL, "fr0m-env");
  config_ok(f->board, URL1_BARE, NULL, "fr0m-env");
  config_ok(f->board, "redis://:g1ven@h", NULL, "g1ven");
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  jb_board_close(f->board);
  f->board = NULL;
  not_in_data_file(f->dir, "fr0m-env");
  not_in_data_file(f->dir, "g1ven");
}

/* A board an older release synced: its sync.url holds the password. */
static void synced_by_an_old_release(jb_board *b, const char *ns) {
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  assert_int_equal(jb__board_setting_set(b, "sync.url", URL1), JB_OK);
  if (ns)
    assert_int_equal(jb__board_setting_set(b, "sync.namespace", ns), JB_OK);
}

/* Lookup writes nothing. */
static void an_old_board_still_gives_the_url_to_connect_with(void **state) {
  jbt_fixture *f = *state;
  synced_by_an_old_release(f->board, "old");
  char *url, *ns;
  assert_int_equal(jb_sync_board_lookup(&url, &ns, f->board, NULL, NULL),
                   JB_OK);
  assert_string_equal(url, URL1);
  assert_string_equal(ns, "old");
  free(url);
  free(ns);
  expect_settings(f->board, URL1, "old");
  no_credentials(f->dir);
}

/* Before its migration and after. */
static void status_hides_the_password_of_an_old_board(void **state) {
  jbt_fixture *f = *state;
  synced_by_an_old_release(f->board, "old");
  jb_sync_status st;
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
  config_ok(f->board, NULL, NULL, "s3cret");
  assert_int_equal(jb_sync_status_read(&st, f->board), JB_OK);
  assert_string_equal(st.url, "redis://:***@10.0.0.1:6380/2");
}

/* The next jb_sync_board_configure moves the password to the credentials
 * file and rewrites the setting without it. */
static void configure_moves_an_old_boards_password_to_the_file(
    void **state) {
  jbt_fixture *f = *state;
  synced_by_an_old_release(f->board, "old");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_OK);
  assert_string_equal(url, URL1);
  free(url);
  free(ns);
  expect_settings(f->board, URL1_BARE, "old");
  expect_credentials(f->dir, "s3cret");
}

/* Another user's board (its data file theirs): root migrating it gives
 * the credentials file to the board's owner, so that the owner's daemon
 * reads it (tests/sync_cli.sh checks, as user nobody, that a user who may
 * not keep the board's password cannot point it at another server).
 * Needs root (else skipped). */
static void migrating_another_users_board_gives_its_owner_the_file(
    void **state) {
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

/* The old password is the board's. */
static void an_old_board_given_a_new_url_moves_its_password_to_the_file(
    void **state) {
  jbt_fixture *f = *state;
  synced_by_an_old_release(f->board, NULL);
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://h3", NULL), JB_OK);
  assert_string_equal(url, "redis://:s3cret@h3");
  free(url);
  free(ns);
  expect_settings(f->board, "redis://h3", JB_SYNC_NAMESPACE_DEFAULT);
  expect_credentials(f->dir, "s3cret");
}

/* An old board whose directory has a credentials file already: the
 * file's password wins, the setting is rewritten all the same. */
static void the_credentials_file_beats_an_old_boards_password(void **state) {
  jbt_fixture *f = *state;
  synced_by_an_old_release(f->board, NULL);
  put_credentials(f->dir, "newer\n", 0600);
  config_ok(f->board, NULL, NULL, "newer");
  expect_settings(f->board, URL1_BARE, JB_SYNC_NAMESPACE_DEFAULT);
  expect_credentials(f->dir, "newer");
}

/* Refused before anything is written, naming where passwords are looked
 * for. */
static void a_user_without_any_password_is_refused(void **state) {
  jbt_fixture *f = *state;
  unsetenv("JOBBOARD_REDIS_PASSWORD");
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, "redis://alice@h", NULL),
                   JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "alice"));
  assert_non_null(strstr(jb_errmsg(), "JOBBOARD_REDIS_PASSWORD"));
  assert_non_null(strstr(jb_errmsg(), "sync.credentials"));
  expect_settings(f->board, "", "");
}

static void the_public_parser_wants_a_password_with_a_user(void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis://alice@h"), JB_EINVAL);
}

/* Nothing of the environment's password is kept. */
static void a_user_with_the_environments_password_is_configured(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
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

/* The board synced with URL1, its file now readable by others. */
static void credentials_readable_by_others(jbt_fixture *f) {
  synced_with_password(f->board);
  put_credentials(f->dir, "s3cret\n", 0644);
}

static void a_credentials_file_others_may_read_is_refused(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  credentials_readable_by_others(f);
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "sync.credentials"));
  assert_non_null(strstr(jb_errmsg(), "chmod 600"));
  assert_null(strstr(jb_errmsg(), "s3cret"));
  assert_int_equal(jb_sync_board_lookup(&url, &ns, f->board, NULL, NULL),
                   JB_EINVAL);
}

/* With mode 0600. */
static void a_url_given_with_its_password_replaces_a_bad_file(
    void **state) {
  jbt_fixture *f = *state;
  credentials_readable_by_others(f);
  config_ok(f->board, URL1, NULL, "s3cret");
  expect_credentials(f->dir, "s3cret");
}

static void an_empty_credentials_file_is_refused(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_password(f->board);
  put_credentials(f->dir, "", 0600);
  assert_int_equal(config(&url, &ns, f->board, NULL, NULL), JB_EINVAL);
  assert_non_null(strstr(jb_errmsg(), "empty"));
}

static void a_credentials_file_behind_a_symbolic_link_is_refused(
    void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  synced_with_password(f->board);
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
}

/* As `echo pw > sync.credentials` makes it, the mode fixed. */
static void a_credentials_file_written_by_hand_is_used(void **state) {
  jbt_fixture *f = *state;
  synced_with_password(f->board);
  put_credentials(f->dir, "by-hand\n", 0600);
  config_ok(f->board, NULL, NULL, "by-hand");
}

/* --------------------------------------------------------- split and join */

/* Every form of URL. */
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

static void the_bare_part_of_a_split_url_holds_no_password(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
    char *bare = NULL, *pw = NULL;
    assert_int_equal(jb__sync_url_split(&bare, &pw, urls[i]), JB_OK);
    assert_false(jb__sync_url_has_password(bare));
    if (pw != NULL) assert_null(strstr(bare, "pw"));
    free(bare);
    free(pw);
  }
}

/* Splitting a URL and putting its password back gives the same
 * connection; a URL without a password splits into itself. */
static void a_url_split_and_joined_again_connects_the_same(
    void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
    char *bare = NULL, *pw = NULL, *back = NULL;
    assert_int_equal(jb__sync_url_split(&bare, &pw, urls[i]), JB_OK);
    jb_sync_url *a = NULL, *b = NULL;
    assert_int_equal(jb_sync_url_parse(&a, urls[i]), JB_OK);
    if (pw == NULL) {
      assert_null(a->password);
      assert_string_equal(bare, urls[i]);
      back = strdup(bare);
    } else {
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

#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_bare_part_of_a_split_url_holds_no_password),
      cmocka_unit_test(a_url_split_and_joined_again_connects_the_same),
      T(a_board_never_synced_has_no_url_and_the_default_namespace),
      T(a_namespace_given_alone_is_not_remembered),
      T(the_first_url_fixes_the_namespace),
      T(a_later_call_without_url_or_namespace_gets_both_back),
      T(the_boards_namespace_given_again_is_accepted),
      T(a_new_url_replaces_the_old_one_keeping_the_namespace),
      T(a_new_url_without_a_password_keeps_the_old_password),
      T(another_namespace_with_a_url_is_refused_naming_both),
      T(another_namespace_without_a_url_is_refused),
      T(a_namespace_fixed_by_another_process_is_not_overwritten),
      T(a_namespace_fixed_by_another_process_is_the_boards),
      T(a_bad_port_is_refused_naming_it_but_not_the_password),
      T(a_url_of_another_scheme_is_refused_naming_it),
      T(an_empty_namespace_or_one_with_a_space_is_refused),
      T(bad_input_to_a_synced_board_changes_nothing),
      T(configure_without_a_board_or_a_url_output_is_refused),
      T(the_board_keeps_a_given_url_without_its_password),
      T(a_given_password_goes_to_a_0600_credentials_file),
      T(the_next_handle_gets_the_url_with_its_password_back),
      T(status_shows_that_a_password_is_configured_not_what_it_is),
      T(a_given_password_is_never_in_the_data_file),
      T(a_user_is_kept_in_the_url),
      T(an_escaped_password_comes_back_whole),
      T(a_url_given_again_without_a_password_keeps_the_files),
      T(a_new_password_replaces_the_files),
      T(no_password_of_a_user_is_in_the_data_file),
      T(the_environments_password_beats_the_files),
      T(a_password_in_the_given_url_beats_the_environments),
      T(the_environments_password_is_never_written),
      T(an_old_board_still_gives_the_url_to_connect_with),
      T(status_hides_the_password_of_an_old_board),
      T(configure_moves_an_old_boards_password_to_the_file),
      T(migrating_another_users_board_gives_its_owner_the_file),
      T(an_old_board_given_a_new_url_moves_its_password_to_the_file),
      T(the_credentials_file_beats_an_old_boards_password),
      T(a_user_without_any_password_is_refused),
      cmocka_unit_test(the_public_parser_wants_a_password_with_a_user),
      T(a_user_with_the_environments_password_is_configured),
      T(a_credentials_file_others_may_read_is_refused),
      T(a_url_given_with_its_password_replaces_a_bad_file),
      T(an_empty_credentials_file_is_refused),
      T(a_credentials_file_behind_a_symbolic_link_is_refused),
      T(a_credentials_file_written_by_hand_is_used),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
