/*
 * redis_helper.h - a redis-server of the test's own, for tests of sync/.
 *
 * Each test starts its own server (Debian's redis-server binary, or the
 * one named by $JB_REDIS_SERVER) in a fresh directory under /tmp, listening
 * on a unix socket there and on a free TCP port of 127.0.0.1, with no
 * persistence. It is killed and reaped at teardown, and dies with the test
 * program if that crashes (PR_SET_PDEATHSIG). No other Redis is touched.
 * A missing redis-server fails the test with how to install it: CI
 * installs it, so a silent skip would hide lost coverage.
 */
#ifndef JB_TESTS_REDIS_HELPER_H
#define JB_TESTS_REDIS_HELPER_H

#include "jobboard_sync.h"

#include <sys/types.h>

typedef struct {
  pid_t pid;          /* 0 once stopped */
  char dir[64];       /* the server's directory (its log is dir/redis.log) */
  char sock[96];      /* unix socket path */
  int port;           /* TCP port on 127.0.0.1 */
  char unix_url[128]; /* "unix:///tmp/jbredis.XXXXXX/redis.sock" */
  char tcp_url[64];   /* "redis://127.0.0.1:PORT" */
  const char *const *extra; /* extra server arguments (kept for restarts) */
} jbt_redis;

/* Start a server; `extra` is a NULL-terminated list of more arguments
 * ("--requirepass", "pw", NULL) or NULL. Returns when it answers on the
 * unix socket; fails the test (with the server's log) otherwise. */
void jbt_redis_start(jbt_redis *r, const char *const *extra);

/* Kill the server (SIGKILL, so a stopped one dies too) and reap it; the
 * directory is kept for a restart. */
void jbt_redis_kill(jbt_redis *r);

/* Start it again on the same socket, port and directory (an empty data
 * set and script cache, as after a crash without persistence). */
void jbt_redis_restart(jbt_redis *r);

/* Kill it if running and remove its directory. */
void jbt_redis_stop(jbt_redis *r);

/* Connect to `url` (jb_sync_connect) with the given command timeout in ms
 * (0: the default); fails the test unless it works. */
jb_sync_conn *jbt_redis_connect(const char *url, int command_ms);

/* A TCP port of 127.0.0.1 that nothing listened on a moment ago. */
int jbt_free_port(void);

#endif
