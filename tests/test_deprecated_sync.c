/*
 * test_deprecated_sync.c - the names of 0.1 in jobboard_sync.h that 0.2
 * replaced still build and do what their replacements do, against a
 * redis-server the test starts (tests/redis_helper.c): one test per old
 * name.
 */
#undef JB_NO_DEPRECATED
#include <jobboard_sync.h>

#include "helpers.h"
#include "redis_helper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program written for 0.1 is warned; this one calls them on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void sync_options_init_fills_the_defaults(void **state) {
  (void)state;
  jb_sync_options o;
  memset(&o, 0x5a, sizeof o);
  jb_sync_options_init(&o);
  assert_null(o.url);
  assert_string_equal(o.ns, JB_SYNC_NAMESPACE_DEFAULT);
  assert_int_equal(o.connect_timeout_ms, 2000);
  assert_int_equal(o.command_timeout_ms, 5000);
}

static void sync_replicator_options_init_fills_the_defaults(void **state) {
  (void)state;
  jb_sync_replicator_options o;
  memset(&o, 0x5a, sizeof o);
  jb_sync_replicator_options_init(&o);
  assert_null(o.conn.url);
  assert_int_equal(o.poll_ms, 1000);
  assert_int_equal(o.backoff_min_ms, 100);
  assert_int_equal(o.backoff_max_ms, 30000);
  assert_int_equal(o.keepalive_ms, 30000);
  assert_int_equal(o.verify_ms, 30000);
  assert_null(o.log);
}

static void sync_board_config_remembers_and_resolve_reads(void **state) {
  jbt_fixture *f = *state;
  char *url = NULL, *ns = NULL;
  assert_int_equal(jb_sync_board_config(f->board, "redis://127.0.0.1:1/0",
                                        "fleet", &url, &ns),
                   JB_OK);
  assert_string_equal(url, "redis://127.0.0.1:1/0");
  assert_string_equal(ns, "fleet");
  free(url);
  free(ns);
  url = ns = NULL;
  assert_int_equal(jb_sync_board_resolve(f->board, NULL, NULL, &url, &ns),
                   JB_OK);
  assert_string_equal(url, "redis://127.0.0.1:1/0");
  assert_string_equal(ns, "fleet");
  free(url);
  free(ns);
}

static void sync_board_resolve_writes_nothing(void **state) {
  jbt_fixture *f = *state;
  char *url = NULL, *ns = NULL;
  assert_int_equal(jb_sync_board_resolve(f->board, "redis://127.0.0.1:1/0",
                                         NULL, &url, &ns),
                   JB_OK);
  free(url);
  free(ns);
  assert_int_equal(jb_sync_board_lookup(&url, &ns, f->board, NULL, NULL),
                   JB_OK);
  assert_null(url); /* nothing was remembered */
  free(ns);
}

static int diffs;
static void *diff_ctx;
static void count_diff(void *ctx, const char *uuid, const char *what) {
  assert_non_null(uuid);
  assert_non_null(what);
  diff_ctx = ctx;
  diffs++;
}

static void sync_verify_calls_back_context_first(void **state) {
  jbt_fixture *f = *state;
  jbt_redis r;
  jbt_redis_start(&r, NULL);
  jb_sync_conn *c = jbt_redis_connect(r.unix_url, 0);
  /* A listing in Redis the board does not hold: one difference. */
  char key[128];
  assert_true(jb_sync_key(key, sizeof key, c, "listings") > 0);
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "redis-cli -s %s HSET %s 0f0e0d0c-0b0a-4908-8706-050403020100 "
           "x >/dev/null",
           r.sock, key);
  assert_int_equal(system(cmd), 0);
  jb_sync_verify_result res;
  int marker;
  diffs = 0;
  assert_int_equal(jb_sync_verify(f->board, c, 0, &res, count_diff, &marker),
                   JB_OK);
  assert_int_equal(res.redis_listed, 1);
  assert_int_equal(res.missing_here, 1);
  assert_int_equal(diffs, 1);
  assert_ptr_equal(diff_ctx, &marker);
  jb_sync_close(c);
  jbt_redis_stop(&r);
}

static void sync_replicator_status_takes_out_last(void **state) {
  jbt_fixture *f = *state;
  jbt_redis r;
  jbt_redis_start(&r, NULL);
  jb_sync_replicator_options o = JB_SYNC_REPLICATOR_OPTIONS_INIT;
  o.conn.url = r.unix_url;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = JB_DURABILITY_NORMAL;
  jb_sync_replicator *rep = NULL;
  assert_int_equal(jb_sync_replicator_start(&rep, f->dir, &bo, &o), JB_OK);
  jb_sync_status a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  assert_int_equal(jb_sync_replicator_status(rep, &a), JB_OK);
  assert_int_equal(jb_sync_replicator_status_read(&b, rep), JB_OK);
  assert_int_equal(a.poll_ms, 1000); /* the default, from 0 */
  assert_int_equal(a.poll_ms, b.poll_ms);
  assert_int_equal(a.verify_ms, b.verify_ms);
  jb_sync_replicator_stop(rep);
  jbt_redis_stop(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, jbt_setup, jbt_teardown)
      T(sync_options_init_fills_the_defaults),
      T(sync_replicator_options_init_fills_the_defaults),
      T(sync_board_config_remembers_and_resolve_reads),
      T(sync_board_resolve_writes_nothing),
      T(sync_verify_calls_back_context_first),
      T(sync_replicator_status_takes_out_last),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
