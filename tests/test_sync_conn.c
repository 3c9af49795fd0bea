/*
 * test_sync_conn.c - sync/'s connection layer against real redis-servers
 * that the tests start (tests/redis_helper.h): URLs, namespaces, TCP and
 * unix sockets, AUTH, SELECT, the version and scripting checks, EVALSHA and
 * its reload after NOSCRIPT, and the failures: refused, timed out, lost.
 */
#include "conn.h"
#include "helpers.h"
#include "redis_helper.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- fixtures */

/* A server of the test's own, started with `extra` arguments. */
static int start_redis(void **state, const char *const *extra) {
  jbt_redis *r = calloc(1, sizeof *r);
  assert_non_null(r);
  jbt_redis_start(r, extra);
  *state = r;
  return 0;
}

static int setup_redis(void **state) { return start_redis(state, NULL); }

static const char *const with_password[] = {"--requirepass", "s3cret", NULL};

/* Scripting renamed away, as an operator may do. */
static const char *const no_scripts[] = {"--rename-command", "SCRIPT", "",
                                         "--rename-command", "EVALSHA", "",
                                         NULL};

static int setup_redis_no_scripts(void **state) {
  return start_redis(state, no_scripts);
}

static int teardown_redis(void **state) {
  jbt_redis *r = *state;
  if (r) {
    jbt_redis_stop(r);
    free(r);
  }
  return 0;
}

/* Expect jb_sync_connect(url) to fail with `code` and a message holding
 * `needle`; returns how long it took in ms. */
static int64_t connect_fails(const char *url, int command_ms, int code,
                             const char *needle) {
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = url;
  o.command_timeout_ms = command_ms;
  jb_sync_conn *c = (jb_sync_conn *)&o; /* must come back NULL */
  int64_t t0 = jbt_now_ms();
  int rc = jb_sync_connect(&c, &o);
  int64_t took = jbt_now_ms() - t0;
  if (rc != code)
    fail_msg("connect %s: %s (%s), expected %s", url, jb_strerror(rc),
             jb_errmsg(), jb_strerror(code));
  assert_null(c);
  jbt_assert_contains(jb_errmsg(), needle);
  return took;
}

/* Run a command (NULL-terminated words) and return its reply. */
static redisReply *cmd(jb_sync_conn *c, const char *w0, ...) {
  const char *argv[16] = {w0};
  int argc = 1;
  va_list ap;
  va_start(ap, w0);
  const char *w;
  while ((w = va_arg(ap, const char *)) != NULL && argc < 16)
    argv[argc++] = w;
  va_end(ap);
  redisReply *r = NULL;
  int rc = jb__sync_command(&r, c, argc, argv, NULL);
  if (rc != JB_OK)
    fail_msg("%s: %s: %s", w0, jb_strerror(rc), jb_errmsg());
  return r;
}

static void reply_is(redisReply *r, const char *s) {
  assert_non_null(r);
  assert_int_equal(r->type, REDIS_REPLY_STRING);
  assert_string_equal(r->str, s);
  freeReplyObject(r);
}

/* Servers that groups of tests share: a server start per test would cost
 * more than most of the tests. A test that stops, kills, restarts or
 * demotes its server has one of its own. */
static jbt_redis plain;     /* emptied before each of its tests */
static jbt_redis password;  /* --requirepass s3cret */

static int start_plain(void **state) {
  (void)state;
  jbt_redis_start(&plain, NULL);
  return 0;
}

static int stop_plain(void **state) {
  (void)state;
  jbt_redis_stop(&plain);
  return 0;
}

/* The test's state is the plain server, with no keys in any db. */
static int empty_plain(void **state) {
  jb_sync_conn *c = jbt_redis_connect(plain.unix_url, 0);
  freeReplyObject(cmd(c, "FLUSHALL", NULL));
  jb_sync_close(c);
  *state = &plain;
  return 0;
}

static int start_password(void **state) {
  (void)state;
  jbt_redis_start(&password, with_password);
  return 0;
}

static int stop_password(void **state) {
  (void)state;
  jbt_redis_stop(&password);
  return 0;
}

static int use_password(void **state) {
  *state = &password;
  return 0;
}

/* ----------------------------------------------------------------- URLs */

/* Each part of a good URL, defaults filled in. */
static void good_urls_parse_into_their_parts(void **state) {
  (void)state;
  struct {
    const char *text, *host, *path, *user, *password;
    int port, db;
  } cases[] = {
      {"redis://localhost", "localhost", NULL, NULL, NULL, 6379, 0},
      {"redis://localhost/", "localhost", NULL, NULL, NULL, 6379, 0},
      {"redis://10.0.0.7:6380/3", "10.0.0.7", NULL, NULL, NULL, 6380, 3},
      {"redis://:pw@h", "h", NULL, NULL, "pw", 6379, 0},
      {"redis://alice:pw@h:1/15", "h", NULL, "alice", "pw", 1, 15},
      {"redis://:p%40ss%3Aw@h", "h", NULL, NULL, "p@ss:w", 6379, 0},
      {"redis://[::1]:7000/2", "::1", NULL, NULL, NULL, 7000, 2},
      {"redis://[::1]", "::1", NULL, NULL, NULL, 6379, 0},
      {"redis://h:65535/2147483647", "h", NULL, NULL, NULL, 65535,
       2147483647},
      {"unix:///run/redis.sock", NULL, "/run/redis.sock", NULL, NULL, 0, 0},
      {"unix:///run/redis.sock?db=4", NULL, "/run/redis.sock", NULL, NULL, 0,
       4},
      {"unix://:pw@/r.sock", NULL, "/r.sock", NULL, "pw", 0, 0},
      {"unix://bob:pw@/r%20s.sock?db=1", NULL, "/r s.sock", "bob", "pw", 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    jb_sync_url *u = NULL;
    int rc = jb_sync_url_parse(&u, cases[i].text);
    if (rc != JB_OK)
      fail_msg("%s: %s", cases[i].text, jb_errmsg());
#define SAME(field)                                                            \
  do {                                                                         \
    if (cases[i].field == NULL)                                                \
      assert_null(u->field);                                                   \
    else                                                                       \
      assert_string_equal(u->field, cases[i].field);                           \
  } while (0)
    SAME(host);
    SAME(path);
    SAME(user);
    SAME(password);
#undef SAME
    assert_int_equal(u->port, cases[i].port);
    assert_int_equal(u->db, cases[i].db);
    jb_sync_url_free(u);
  }
  jb_sync_url_free(NULL);
}

/* Each naming what is wrong with it. */
static void bad_urls_are_refused_naming_the_fault(void **state) {
  (void)state;
  struct {
    const char *text, *needle;
  } cases[] = {
      {"", "no redis URL"},
      {"http://h", "scheme must be redis://, unix:// or redis-sentinel://"},
      {"redis-sentinel://h", "no master name"},
      {"redis-sentinel://h/", "no master name"},
      {"redis-sentinel://h//1", "no master name"},
      {"redis-sentinel:///m", "sentinel 1 has no address"},
      {"redis-sentinel://h1,,h2/m", "sentinel 2 has no address"},
      {"redis-sentinel://h1,/m", "sentinel 2 has no address"},
      {"redis-sentinel://h:0/m", "port \"0\""},
      {"redis-sentinel://h/m/x", "db \"x\" is not a number"},
      {"redis-sentinel://h/m/1/2", "db \"1/2\""},
      {"redis-sentinel://h/m?db=1", "query parameters"},
      {"redis-sentinel://alice@h/m", "a user needs a password"},
      {"redis-sentinel://h/m%4", "bad %-escape in the master name"},
      {"redis-sentinel://a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q/m",
       "17 sentinels (at most 16)"},
      {"rediss://h", "TLS"},
      {"redis://", "no host"},
      {"redis://:6379", "no host"},
      {"redis://h:0", "port \"0\" is not a number in 1..65535"},
      {"redis://h:65536", "port \"65536\""},
      {"redis://h:", "port \"\""},
      {"redis://h:x1", "port \"x1\""},
      {"redis://h/x", "db \"x\" is not a number"},
      {"redis://h/-1", "db \"-1\""},
      {"redis://h/2147483648", "db \"2147483648\""},
      {"redis://h/1/2", "db \"1/2\""},
      {"redis://h?db=1", "query parameters"},
      {"redis://::1:6379", "IPv6 address must be written in brackets"},
      {"redis://[::1:6379", "no ']'"},
      {"redis://[::1]x", "after the IPv6 address"},
      {"redis://alice@h", "a user needs a password"},
      {"redis://alice:@h", "password is empty"},
      {"redis://:p%4@h", "bad %-escape in the password"},
      {"redis://:p%00@h", "bad %-escape"},
      {"unix://", "no socket path"},
      {"unix:///", "no socket path"},
      {"unix://relative.sock", "must be absolute"},
      {"unix:///r.sock?password=x", "the only query parameter is db=N"},
      {"unix:///r.sock?db=", "db \"\""},
      {"unix:///r.sock#frag", "fragments"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    jb_sync_url *u = (jb_sync_url *)&cases[i]; /* must come back NULL */
    int rc = jb_sync_url_parse(&u, cases[i].text);
    if (rc != JB_EINVAL)
      fail_msg("%s: %s, expected JB_EINVAL", cases[i].text, jb_strerror(rc));
    assert_null(u);
    jbt_assert_contains(jb_errmsg(), cases[i].needle);
  }
}

/* Longer than sun_path allows. */
static void a_socket_path_too_long_is_refused(void **state) {
  (void)state;
  char longurl[300] = "unix:///";
  memset(longurl + 8, 'x', 200);
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, longurl), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "longer than");
}

static void the_message_of_a_bad_url_never_shows_its_password(
    void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis://bob:hunter2@h:99999"),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "redis://bob:***@h:99999");
  assert_null(strstr(jb_errmsg(), "hunter2"));
  assert_int_equal(jb_sync_url_parse(&u, "unix://:hunter2@/s?db=x"),
                   JB_EINVAL);
  assert_null(strstr(jb_errmsg(), "hunter2"));
}

/* redis-sentinel://: the sentinels (port 26379 by default), the master's
 * name, and the master's db and credentials. */
static void a_sentinel_url_names_sentinels_master_db_and_credentials(
    void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(
      jb_sync_url_parse(&u, "redis-sentinel://alice:p%40w@s1,10.0.0.2:26380,"
                            "[::1]:7000/my%2Fmaster/3"),
      JB_OK);
  assert_null(u->host);
  assert_null(u->path);
  assert_int_equal(u->port, 0);
  assert_string_equal(u->user, "alice");
  assert_string_equal(u->password, "p@w");
  assert_int_equal(u->db, 3);
  assert_string_equal(u->master, "my/master");
  assert_int_equal(u->nsentinels, 3);
  assert_string_equal(u->sentinels[0].host, "s1");
  assert_int_equal(u->sentinels[0].port, 26379);
  assert_string_equal(u->sentinels[1].host, "10.0.0.2");
  assert_int_equal(u->sentinels[1].port, 26380);
  assert_string_equal(u->sentinels[2].host, "::1");
  assert_int_equal(u->sentinels[2].port, 7000);
  jb_sync_url_free(u);
}

static void a_sentinel_url_without_db_or_password_has_none(void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis-sentinel://s/m/"), JB_OK);
  assert_int_equal(u->nsentinels, 1);
  assert_null(u->password);
  assert_int_equal(u->db, 0);
  assert_string_equal(u->master, "m");
  jb_sync_url_free(u);
}

static void other_urls_have_no_sentinels(void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis://h"), JB_OK);
  assert_null(u->sentinels);
  assert_int_equal(u->nsentinels, 0);
  assert_null(u->master);
  jb_sync_url_free(u);
}

static void the_message_of_a_bad_sentinel_url_never_shows_its_password(
    void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  assert_int_equal(jb_sync_url_parse(&u, "redis-sentinel://:hunter2@s/m/x"),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "redis-sentinel://:***@s/m/x");
  assert_null(strstr(jb_errmsg(), "hunter2"));
}

/* Base64 makes them; the URL does not parse because of it. */
static void a_password_holding_a_slash_or_question_mark_is_never_shown(
    void **state) {
  (void)state;
  jb_sync_url *u = NULL;
  const char *odd[] = {"redis://:ab/cdSECRET@127.0.0.1:1",
                       "redis://:ab?cdSECRET@127.0.0.1:1",
                       "redis-sentinel://:ab/SECRET@s/m",
                       "unix://:p/SECRET@/tmp/s"};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
    if (jb_sync_url_parse(&u, odd[i]) == JB_OK) {
      jb_sync_url_free(u);
      continue; /* parsed: no message to look at */
    }
    if (strstr(jb_errmsg(), "SECRET"))
      fail_msg("%s: the message shows the password: %s", odd[i], jb_errmsg());
  }
}

/* ------------------------------------------------------------ namespaces */

static void good_namespaces_pass_the_check(void **state) {
  (void)state;
  assert_int_equal(jb_sync_namespace_check("taskflow"), JB_OK);
  assert_int_equal(jb_sync_namespace_check("{fleet}:jobs"), JB_OK);
  assert_int_equal(jb_sync_namespace_check("flöße"), JB_OK);
  char big[JB_SYNC_NAMESPACE_MAX + 1];
  memset(big, 'n', sizeof big - 1);
  big[JB_SYNC_NAMESPACE_MAX] = '\0';
  assert_int_equal(jb_sync_namespace_check(big), JB_OK);
}

static void bad_namespaces_are_refused_naming_the_fault(void **state) {
  (void)state;
  assert_int_equal(jb_sync_namespace_check(""), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "namespace is empty");
  assert_int_equal(jb_sync_namespace_check(NULL), JB_EINVAL);
  assert_int_equal(jb_sync_namespace_check("a b"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "byte 1 is a space");
  assert_int_equal(jb_sync_namespace_check("ab\n"), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "byte 2 is a control character (0x0a)");
  assert_int_equal(jb_sync_namespace_check("a\x7f"), JB_EINVAL);
  char big[JB_SYNC_NAMESPACE_MAX + 2];
  memset(big, 'n', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  assert_int_equal(jb_sync_namespace_check(big), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "at most 200");
}

/* The URL's port is closed: reaching it would say "refused". */
static void connect_checks_namespace_and_options_before_any_io(
    void **state) {
  (void)state;
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = "redis://127.0.0.1:1";
  o.ns = "two words";
  jb_sync_conn *c = NULL;
  assert_int_equal(jb_sync_connect(&c, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "space");
  o.ns = NULL;
  o.command_timeout_ms = -1;
  assert_int_equal(jb_sync_connect(&c, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "negative timeout");
  assert_int_equal(jb_sync_connect(&c, NULL), JB_EINVAL);
  o.command_timeout_ms = 0;
  o.url = NULL;
  assert_int_equal(jb_sync_connect(&c, &o), JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "no redis URL");
  assert_null(c);
}

static void versions_compare_by_major_and_minor(void **state) {
  (void)state;
  assert_int_equal(jb__sync_version_at_least("7.0.15", 2, 6), 1);
  assert_int_equal(jb__sync_version_at_least("2.6.0", 2, 6), 1);
  assert_int_equal(jb__sync_version_at_least("2.6.0-rc1", 2, 6), 1);
  assert_int_equal(jb__sync_version_at_least("3.0", 2, 6), 1);
  assert_int_equal(jb__sync_version_at_least("2.4.18", 2, 6), 0);
  assert_int_equal(jb__sync_version_at_least("1.9", 2, 6), 0);
}

static void a_version_without_major_and_minor_is_unreadable(void **state) {
  (void)state;
  assert_int_equal(jb__sync_version_at_least("x", 2, 6), -1);
  assert_int_equal(jb__sync_version_at_least("7", 2, 6), -1);
  assert_int_equal(jb__sync_version_at_least("", 2, 6), -1);
}

/* ------------------------------------------------------------ connecting */

/* The things every fresh connection can do. */
static void check_usable(jb_sync_conn *c) {
  assert_true(jb_sync_connected(c));
  assert_int_equal(jb_sync_ping(c), JB_OK);
  assert_int_equal(jb__sync_version_at_least(jb_sync_server_version(c), 2, 6),
                   1);
  assert_string_equal(jb_sync_namespace(c), "taskflow");
  char key[64];
  assert_int_equal(jb_sync_key(key, sizeof key, c, "listings"), 17);
  assert_string_equal(key, "taskflow:listings");
  assert_int_equal(jb_sync_key(key, 17, c, "listings"), JB_EINVAL);
  assert_int_equal(jb_sync_key(key, sizeof key, c, ""), JB_EINVAL);
}


static void a_unix_socket_connection_is_usable(void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = jbt_redis_connect(r->unix_url, 0);
  check_usable(c);
  jb_sync_close(c);
  jb_sync_close(NULL);
}

static void a_tcp_connection_is_usable(void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = jbt_redis_connect(r->tcp_url, 0);
  check_usable(c);
  jb_sync_close(c);
}

static void the_version_is_the_servers_own(void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = jbt_redis_connect(r->tcp_url, 0);
  redisReply *info = cmd(c, "INFO", "server", NULL);
  char want[64];
  snprintf(want, sizeof want, "redis_version:%s\r\n",
           jb_sync_server_version(c));
  jbt_assert_contains(info->str, want);
  freeReplyObject(info);
  jb_sync_close(c);
}

/* "localhost" resolves. */
static void the_namespace_given_is_the_one_used(void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = NULL;
  char url[64];
  snprintf(url, sizeof url, "redis://localhost:%d/0", r->port);
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = url;
  o.ns = "{fleet}";
  assert_int_equal(jb_sync_connect(&c, &o), JB_OK);
  char key[64];
  assert_int_equal(jb_sync_key(key, sizeof key, c, "sequence"), 16);
  assert_string_equal(key, "{fleet}:sequence");
  jb_sync_close(c);
}

static void the_password_of_the_url_authenticates(void **state) {
  jbt_redis *r = *state;
  char url[160];
  snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d", r->port);
  jb_sync_conn *c = jbt_redis_connect(url, 0);
  assert_int_equal(jb_sync_ping(c), JB_OK);
  jb_sync_close(c);
}

/* Adds ACL user "alice" (Redis >= 6) with a password of its own. */
static void add_alice(jbt_redis *r) {
  char url[160];
  snprintf(url, sizeof url, "redis://:s3cret@127.0.0.1:%d", r->port);
  jb_sync_conn *c = jbt_redis_connect(url, 0);
  freeReplyObject(cmd(c, "ACL", "SETUSER", "alice", "on", ">w0nder", "~*",
                      "+@all", NULL));
  jb_sync_close(c);
}

static void an_acl_user_authenticates_with_its_password(void **state) {
  jbt_redis *r = *state;
  char url[160];
  add_alice(r);
  snprintf(url, sizeof url, "unix://alice:w0nder@%s", r->sock);
  jb_sync_conn *c = jbt_redis_connect(url, 0);
  assert_int_equal(jb_sync_ping(c), JB_OK);
  redisReply *who = cmd(c, "ACL", "WHOAMI", NULL);
  reply_is(who, "alice");
  jb_sync_close(c);
}

static void a_wrong_password_is_refused(void **state) {
  jbt_redis *r = *state;
  char url[160];
  snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", r->port);
  connect_fails(url, 0, JB_EINVAL, "wrong password");
}

static void a_wrong_user_password_is_refused_without_showing_it(
    void **state) {
  jbt_redis *r = *state;
  char url[160];
  add_alice(r);
  snprintf(url, sizeof url, "unix://alice:wrong@%s", r->sock);
  connect_fails(url, 0, JB_EINVAL, "wrong user or password");
  assert_null(strstr(jb_errmsg(), "wrong@"));
}

static void a_url_without_the_password_a_server_requires_is_refused(
    void **state) {
  jbt_redis *r = *state;
  char url[160];
  connect_fails(r->tcp_url, 0, JB_EINVAL,
                "the server requires a password and the URL gives none");
  snprintf(url, sizeof url, "%s?db=2", r->unix_url);
  connect_fails(url, 0, JB_EINVAL, "requires a password");
}

static void a_password_given_to_a_server_without_one_is_refused(
    void **state) {
  jbt_redis *r = *state;
  char url[160];
  snprintf(url, sizeof url, "unix://:pw@%s", r->sock);
  connect_fails(url, 0, JB_EINVAL, "the server has none set");
}

/* Two connections at once, each in its db: the URL's, or one SELECTed. */
static void each_connection_is_in_the_db_of_its_url(void **state) {
  jbt_redis *r = *state;
  char url3[160];
  snprintf(url3, sizeof url3, "%s/3", r->tcp_url);
  jb_sync_conn *c3 = jbt_redis_connect(url3, 0);
  jb_sync_conn *c0 = jbt_redis_connect(r->unix_url, 0);
  freeReplyObject(cmd(c3, "SET", "k", "in-db-3", NULL));
  redisReply *rep = cmd(c0, "GET", "k", NULL);
  assert_int_equal(rep->type, REDIS_REPLY_NIL);
  freeReplyObject(rep);
  reply_is(cmd(c3, "GET", "k", NULL), "in-db-3");
  freeReplyObject(cmd(c0, "SELECT", "3", NULL));
  reply_is(cmd(c0, "GET", "k", NULL), "in-db-3");
  jb_sync_close(c0);
  jb_sync_close(c3);
}

static void a_unix_socket_url_selects_its_db(void **state) {
  jbt_redis *r = *state;
  char url3[160], urlu[160];
  snprintf(url3, sizeof url3, "%s/3", r->tcp_url);
  jb_sync_conn *c3 = jbt_redis_connect(url3, 0);
  freeReplyObject(cmd(c3, "SET", "k", "in-db-3", NULL));
  snprintf(urlu, sizeof urlu, "%s?db=3", r->unix_url);
  jb_sync_conn *cu = jbt_redis_connect(urlu, 0);
  reply_is(cmd(cu, "GET", "k", NULL), "in-db-3");
  jb_sync_close(cu);
  jb_sync_close(c3);
}

/* The default config has dbs 0..15. */
static void a_db_the_server_lacks_is_refused(void **state) {
  jbt_redis *r = *state;
  char url[160];
  snprintf(url, sizeof url, "%s/16", r->tcp_url);
  connect_fails(url, 0, JB_EINVAL, "cannot select db 16");
}

static void a_server_that_does_not_run_scripts_is_refused(void **state) {
  jbt_redis *r = *state;
  connect_fails(r->unix_url, 0, JB_EINVAL,
                "the server does not run Lua scripts");
  jbt_assert_contains(jb_errmsg(), "unknown command 'SCRIPT'");
}

/* --------------------------------------------------------------- scripts */

static const char *const echo_lua =
    "return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}";

static void run_echo(jb_sync_conn *c, int id, long long want_count) {
  const char *keys[1] = {"taskflow:counter"};
  const char *args[1] = {"x\0y"};
  size_t arglens[1] = {3}; /* binary-safe */
  redisReply *r = NULL;
  int rc = jb__sync_evalsha(&r, c, id, 1, keys, NULL, 1, args, arglens);
  if (rc != JB_OK)
    fail_msg("evalsha: %s: %s", jb_strerror(rc), jb_errmsg());
  assert_int_equal(r->type, REDIS_REPLY_ARRAY);
  assert_int_equal(r->elements, 3);
  assert_string_equal(r->element[0]->str, "taskflow:counter");
  assert_int_equal(r->element[1]->len, 3);
  assert_memory_equal(r->element[1]->str, "x\0y", 3);
  assert_int_equal(r->element[2]->integer, want_count);
  freeReplyObject(r);
}


/* A connection to `url` with echo_lua added as *id. */
static jb_sync_conn *with_echo(const char *url, int *id) {
  jb_sync_conn *c = jbt_redis_connect(url, 0);
  *id = -1;
  assert_int_equal(jb__sync_script_add(id, c, "echo", echo_lua), JB_OK);
  return c;
}

static void an_added_script_is_in_the_servers_cache_under_its_sha(
    void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  assert_int_equal(id, 0);
  const char *sha = jb__sync_script_sha(c, id);
  assert_non_null(sha);
  assert_int_equal(strlen(sha), 40);
  assert_null(jb__sync_script_sha(c, 1));
  redisReply *ex = cmd(c, "SCRIPT", "EXISTS", sha, NULL);
  assert_int_equal(ex->element[0]->integer, 1);
  freeReplyObject(ex);
  jb_sync_close(c);
}

/* Binary-safe, and with no reload while the cache holds it. */
static void evalsha_runs_an_added_script(void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  run_echo(c, id, 1);
  run_echo(c, id, 2);
  assert_int_equal(jb__sync_script_reloads(c), 0);
  jb_sync_close(c);
}

static void a_script_the_server_does_not_compile_is_refused(void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  int bad = -1;
  assert_int_equal(jb__sync_script_add(&bad, c, "broken", "return {"),
                   JB_EINVAL);
  jbt_assert_contains(jb_errmsg(), "script broken does not load");
  assert_int_equal(bad, -1);
  jb_sync_close(c);
}

/* Adds a script that fails when run, as *fails. */
static void add_failing(jb_sync_conn *c, int *fails) {
  *fails = -1;
  assert_int_equal(
      jb__sync_script_add(fails, c, "fails", "return redis.call('NOPE')"),
      JB_OK);
  assert_int_equal(*fails, 1);
}

/* The script ran: no refusal. */
static void a_script_that_fails_when_run_is_an_io_error(void **state) {
  jbt_redis *r = *state;
  int id, fails;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  add_failing(c, &fails);
  redisReply *rep = NULL;
  assert_int_equal(jb__sync_evalsha(&rep, c, fails, 0, NULL, NULL, 0, NULL,
                                    NULL),
                   JB_EIO);
  assert_null(rep);
  jbt_assert_contains(jb_errmsg(), "script fails:");
  assert_false(jb__sync_refused(c));
  jb_sync_close(c);
}

static void evalsha_refuses_bad_script_ids_and_key_counts(void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  redisReply *rep = NULL;
  assert_int_equal(jb__sync_evalsha(&rep, c, 7, 0, NULL, NULL, 0, NULL, NULL),
                   JB_EINVAL);
  assert_int_equal(jb__sync_evalsha(&rep, c, id, 1, NULL, NULL, 0, NULL, NULL),
                   JB_EINVAL);
  jb_sync_close(c);
}

/* A script that does not compile, one that fails, bad ids and counts: the
 * connection is still fine after all that. */
static void script_errors_leave_the_connection_usable(void **state) {
  jbt_redis *r = *state;
  int id, fails, bad = -1;
  jb_sync_conn *c = with_echo(r->unix_url, &id);
  run_echo(c, id, 1);
  assert_int_equal(jb__sync_script_add(&bad, c, "broken", "return {"),
                   JB_EINVAL);
  add_failing(c, &fails);
  redisReply *rep = NULL;
  assert_int_equal(jb__sync_evalsha(&rep, c, fails, 0, NULL, NULL, 0, NULL,
                                    NULL),
                   JB_EIO);
  assert_int_equal(jb__sync_evalsha(&rep, c, 7, 0, NULL, NULL, 0, NULL, NULL),
                   JB_EINVAL);
  run_echo(c, id, 2);
  jb_sync_close(c);
}

/* SCRIPT FLUSH empties the cache: the next call meets NOSCRIPT, loads the
 * script again and runs it once (the counter goes up by one); the calls
 * after it need no reload. */
static void a_script_flushed_from_the_cache_is_loaded_again_once(
    void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->tcp_url, &id);
  run_echo(c, id, 1);
  freeReplyObject(cmd(c, "SCRIPT", "FLUSH", NULL));
  redisReply *ex = cmd(c, "SCRIPT", "EXISTS", jb__sync_script_sha(c, id), NULL);
  assert_int_equal(ex->element[0]->integer, 0);
  freeReplyObject(ex);
  run_echo(c, id, 2);
  assert_int_equal(jb__sync_script_reloads(c), 1);
  run_echo(c, id, 3);
  assert_int_equal(jb__sync_script_reloads(c), 1);
  jb_sync_close(c);
}

/* A restart loses the connection and the cache (and, without persistence,
 * the data): the first call after it fails, offline; the next reconnects,
 * reloads and runs. */
static void after_a_restart_a_script_runs_again_from_the_second_call(
    void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = with_echo(r->tcp_url, &id);
  run_echo(c, id, 1);
  int reloads = jb__sync_script_reloads(c);
  jbt_redis_restart(r);
  const char *keys[1] = {"taskflow:counter"};
  const char *args[1] = {"x"};
  redisReply *rep = NULL;
  assert_int_equal(
      jb__sync_evalsha(&rep, c, id, 1, keys, NULL, 1, args, NULL),
      JB_EOFFLINE);
  assert_null(rep);
  assert_false(jb_sync_connected(c));
  run_echo(c, id, 1);
  assert_true(jb_sync_connected(c));
  assert_int_equal(jb__sync_script_reloads(c), reloads + 1);
  jb_sync_close(c);
}

/* -------------------------------------------------------------- failures */

/* Within a second. */
static void a_closed_port_is_refused_at_once(void **state) {
  (void)state;
  int port = jbt_free_port();
  char url[64], want[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  snprintf(want, sizeof want, "connection refused to 127.0.0.1:%d", port);
  int64_t took = connect_fails(url, 0, JB_EOFFLINE, want);
  assert_true(took < 1000);
}

static void a_socket_path_where_nothing_listens_is_refused_at_once(
    void **state) {
  (void)state;
  char url[64];
  char *dir = jbt_mkdtemp();
  char *sock = jbt_path(dir, "none.sock");
  snprintf(url, sizeof url, "unix://%s", sock);
  int64_t took =
      connect_fails(url, 0, JB_EOFFLINE, "cannot connect to redis at unix");
  jbt_assert_contains(jb_errmsg(), "No such file");
  assert_true(took < 1000);
  free(sock);
  jbt_rmtree(dir);
  free(dir);
}

/* A server that stops answering (SIGSTOP): a command fails offline after
 * about the command timeout and drops the connection; once the server runs
 * again (SIGCONT) the next call reconnects. */
static jb_sync_conn *timed_out(jbt_redis *r) {
  jb_sync_conn *c = jbt_redis_connect(r->tcp_url, 300);
  assert_int_equal(kill(r->pid, SIGSTOP), 0);
  int64_t t0 = jbt_now_ms();
  int rc = jb_sync_ping(c);
  int64_t took = jbt_now_ms() - t0;
  assert_int_equal(kill(r->pid, SIGCONT), 0);
  assert_int_equal(rc, JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "timed out after 300 ms");
  if (took < 250 || took > 1500)
    fail_msg("the timeout took %lld ms, not about 300", (long long)took);
  return c;
}

static void a_command_to_a_stopped_server_times_out_and_drops_the_link(
    void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = timed_out(r);
  assert_false(jb_sync_connected(c));
  jb_sync_close(c);
}

static void the_next_call_after_a_timeout_reconnects(void **state) {
  jbt_redis *r = *state;
  jb_sync_conn *c = timed_out(r);
  assert_int_equal(jb_sync_ping(c), JB_OK);
  assert_true(jb_sync_connected(c));
  jb_sync_close(c);
}

/* The kernel accepts the connection, the handshake gets no answer; the
 * server running again takes connections again. */
static void connecting_to_a_stopped_server_times_out(void **state) {
  jbt_redis *r = *state;
  assert_int_equal(kill(r->pid, SIGSTOP), 0);
  int64_t t0 = jbt_now_ms();
  connect_fails(r->unix_url, 300, JB_EOFFLINE, "timed out after 300 ms");
  int64_t took = jbt_now_ms() - t0;
  assert_int_equal(kill(r->pid, SIGCONT), 0);
  assert_true(took < 1500);
  jb_sync_conn *c = jbt_redis_connect(r->unix_url, 300);
  jb_sync_close(c);
}

/* A master demoted by a failover answers writes with READONLY. */
static jb_sync_conn *refused_readonly(jbt_redis *r, int *id) {
  jb_sync_conn *c = jbt_redis_connect(r->unix_url, 0);
  *id = -1;
  assert_int_equal(
      jb__sync_script_add(id, c, "writes", "return redis.call('SET', "
                                           "KEYS[1], '1')"),
      JB_OK);
  /* A replica of a master that is not there: read-only. */
  freeReplyObject(cmd(c, "REPLICAOF", "127.0.0.1", "1", NULL));
  const char *key = "k";
  redisReply *rep = NULL;
  assert_int_equal(
      jb__sync_evalsha(&rep, c, *id, 1, &key, NULL, 0, NULL, NULL),
      JB_EOFFLINE);
  assert_null(rep);
  return c;
}

/* A sure refusal (the script did not run), and the connection is dropped
 * so that the next command reconnects, through the sentinels when the URL
 * names them. */
static void readonly_is_a_sure_refusal_that_drops_the_connection(
    void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = refused_readonly(r, &id);
  jbt_assert_contains(jb_errmsg(), "READONLY");
  jbt_assert_contains(jb_errmsg(), "the command did not run");
  assert_true(jb__sync_refused(c));
  assert_false(jb_sync_connected(c));
  jb_sync_close(c);
}

/* Promoted again: the next command reconnects and the script runs. */
static void the_next_command_after_readonly_reconnects(void **state) {
  jbt_redis *r = *state;
  int id;
  jb_sync_conn *c = refused_readonly(r, &id);
  freeReplyObject(cmd(c, "REPLICAOF", "NO", "ONE", NULL));
  assert_true(jb_sync_connected(c));
  const char *key = "k";
  redisReply *rep = NULL;
  assert_int_equal(
      jb__sync_evalsha(&rep, c, id, 1, &key, NULL, 0, NULL, NULL), JB_OK);
  freeReplyObject(rep);
  jb_sync_close(c);
}

/* The server dies under an open connection: the call fails offline, and no
 * SIGPIPE kills the process, though the write hits a closed socket. The
 * PING may have reached the server: not a sure refusal. */
static void a_call_to_a_server_that_died_fails_offline(void **state) {
  jbt_redis *r = *state;
  void (*old)(int) = signal(SIGPIPE, SIG_DFL); /* SIGPIPE would kill us */
  jb_sync_conn *c = jbt_redis_connect(r->unix_url, 0);
  jbt_redis_kill(r);
  int rc = jb_sync_ping(c);
  assert_int_equal(rc, JB_EOFFLINE);
  assert_false(jb_sync_connected(c));
  assert_false(jb__sync_refused(c));
  jb_sync_close(c);
  signal(SIGPIPE, old);
}

/* Later calls keep failing offline until it is back. */
static void calls_after_the_server_died_fail_until_it_is_back(
    void **state) {
  jbt_redis *r = *state;
  void (*old)(int) = signal(SIGPIPE, SIG_DFL);
  jb_sync_conn *c = jbt_redis_connect(r->unix_url, 0);
  jbt_redis_kill(r);
  assert_int_equal(jb_sync_ping(c), JB_EOFFLINE);
  assert_int_equal(jb_sync_ping(c), JB_EOFFLINE);
  jbt_assert_contains(jb_errmsg(), "cannot connect to redis at unix socket");
  jbt_redis_restart(r);
  assert_int_equal(jb_sync_ping(c), JB_OK);
  jb_sync_close(c);
  signal(SIGPIPE, old);
}

#define OWN(name)                                                              \
  cmocka_unit_test_setup_teardown(name, setup_redis, teardown_redis)
#define PLAIN(name) cmocka_unit_test_setup(name, empty_plain)
#define PASSWORD(name) cmocka_unit_test_setup(name, use_password)

int main(void) {
  jbt_watchdog(240);
  const struct CMUnitTest no_server[] = {
      cmocka_unit_test(good_urls_parse_into_their_parts),
      cmocka_unit_test(bad_urls_are_refused_naming_the_fault),
      cmocka_unit_test(a_socket_path_too_long_is_refused),
      cmocka_unit_test(the_message_of_a_bad_url_never_shows_its_password),
      cmocka_unit_test(
          a_sentinel_url_names_sentinels_master_db_and_credentials),
      cmocka_unit_test(a_sentinel_url_without_db_or_password_has_none),
      cmocka_unit_test(other_urls_have_no_sentinels),
      cmocka_unit_test(
          the_message_of_a_bad_sentinel_url_never_shows_its_password),
      cmocka_unit_test(
          a_password_holding_a_slash_or_question_mark_is_never_shown),
      cmocka_unit_test(good_namespaces_pass_the_check),
      cmocka_unit_test(bad_namespaces_are_refused_naming_the_fault),
      cmocka_unit_test(connect_checks_namespace_and_options_before_any_io),
      cmocka_unit_test(versions_compare_by_major_and_minor),
      cmocka_unit_test(a_version_without_major_and_minor_is_unreadable),
      cmocka_unit_test(a_closed_port_is_refused_at_once),
      cmocka_unit_test(
          a_socket_path_where_nothing_listens_is_refused_at_once),
  };
  const struct CMUnitTest plain_server[] = {
      PLAIN(a_unix_socket_connection_is_usable),
      PLAIN(a_tcp_connection_is_usable),
      PLAIN(the_version_is_the_servers_own),
      PLAIN(the_namespace_given_is_the_one_used),
      PLAIN(a_password_given_to_a_server_without_one_is_refused),
      PLAIN(each_connection_is_in_the_db_of_its_url),
      PLAIN(a_unix_socket_url_selects_its_db),
      PLAIN(a_db_the_server_lacks_is_refused),
      PLAIN(an_added_script_is_in_the_servers_cache_under_its_sha),
      PLAIN(evalsha_runs_an_added_script),
      PLAIN(a_script_the_server_does_not_compile_is_refused),
      PLAIN(a_script_that_fails_when_run_is_an_io_error),
      PLAIN(evalsha_refuses_bad_script_ids_and_key_counts),
      PLAIN(script_errors_leave_the_connection_usable),
      PLAIN(a_script_flushed_from_the_cache_is_loaded_again_once),
  };
  const struct CMUnitTest password_server[] = {
      PASSWORD(the_password_of_the_url_authenticates),
      PASSWORD(an_acl_user_authenticates_with_its_password),
      PASSWORD(a_wrong_password_is_refused),
      PASSWORD(a_wrong_user_password_is_refused_without_showing_it),
      PASSWORD(a_url_without_the_password_a_server_requires_is_refused),
  };
  const struct CMUnitTest own_server[] = {
      cmocka_unit_test_setup_teardown(
          a_server_that_does_not_run_scripts_is_refused,
          setup_redis_no_scripts, teardown_redis),
      OWN(after_a_restart_a_script_runs_again_from_the_second_call),
      OWN(a_command_to_a_stopped_server_times_out_and_drops_the_link),
      OWN(the_next_call_after_a_timeout_reconnects),
      OWN(connecting_to_a_stopped_server_times_out),
      OWN(readonly_is_a_sure_refusal_that_drops_the_connection),
      OWN(the_next_command_after_readonly_reconnects),
      OWN(a_call_to_a_server_that_died_fails_offline),
      OWN(calls_after_the_server_died_fail_until_it_is_back),
  };
  int failed = cmocka_run_group_tests(no_server, NULL, NULL);
  failed += cmocka_run_group_tests(plain_server, start_plain, stop_plain);
  failed += cmocka_run_group_tests(password_server, start_password,
                                   stop_password);
  failed += cmocka_run_group_tests(own_server, NULL, NULL);
  return failed;
}
