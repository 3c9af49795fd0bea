/*
 * test_sync_config.c - jb_sync_board_config (sync/config.c): which Redis
 * and namespace a board is synced with, remembered in the board's
 * settings. No Redis server is needed: nothing here connects.
 */
#include "jobboard_sync.h"
#include "helpers.h"

#include "../core/remote_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define URL1 "redis://:s3cret@10.0.0.1:6380/2"
#define URL2 "unix:///run/redis/redis.sock?db=1"

/* Call jb_sync_board_config and check its outputs' NULL-ness rule. */
static int config(char **url, char **ns, jb_board *b, const char *given_url,
                  const char *given_ns) {
  *url = *ns = (char *)"unset";
  int rc = jb_sync_board_config(b, given_url, given_ns, url, ns);
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
  expect_settings(f->board, URL1, JB_SYNC_NAMESPACE_DEFAULT);
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

/* A new URL replaces the old one (a server moved); the namespace stays. */
static void test_url_replaced(void **state) {
  jbt_fixture *f = *state;
  char *url, *ns;
  assert_int_equal(config(&url, &ns, f->board, URL1, "{fleet}"), JB_OK);
  free(url);
  free(ns);
  assert_int_equal(config(&url, &ns, f->board, URL2, NULL), JB_OK);
  assert_string_equal(url, URL2);
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
  expect_settings(f->board, URL1, "fleet");
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
  expect_settings(f->board, URL1, JB_SYNC_NAMESPACE_DEFAULT);
  assert_int_equal(jb_sync_board_config(NULL, URL1, NULL, &url, &ns),
                   JB_EINVAL);
  assert_int_equal(jb_sync_board_config(f->board, URL1, NULL, NULL, &ns),
                   JB_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
