/*
 * redis_helper.c - see redis_helper.h.
 */
#include "redis_helper.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

/* cmocka after the system headers */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "helpers.h"

/* The server binary: $JB_REDIS_SERVER, else redis-server found on PATH. */
static const char *server_binary(void) {
  const char *env = getenv("JB_REDIS_SERVER");
  if (env && *env)
    return env;
  const char *path = getenv("PATH");
  static char found[512];
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    size_t n = strcspn(p, ":");
    snprintf(found, sizeof found, "%.*s/redis-server", (int)n, p);
    if (access(found, X_OK) == 0)
      return found;
    p += n + (p[n] == ':');
  }
  fail_msg("redis-server is not installed (the Redis sync tests need a "
           "real server): install it with \"apt-get install redis-server\", "
           "or name the binary in $JB_REDIS_SERVER");
  return NULL;
}

int jbt_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

static void print_log(const jbt_redis *r) {
  char path[128], line[512];
  snprintf(path, sizeof path, "%s/redis.log", r->dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  fprintf(stderr, "--- %s\n", path);
  while (fgets(line, sizeof line, f))
    fputs(line, stderr);
  fclose(f);
}

/* true once the server answers on its unix socket (PONG, or NOAUTH from a
 * server that wants a password: it is up either way). */
static bool answers(const jbt_redis *r) {
  struct timeval tv = {0, 200000};
  redisContext *c = redisConnectUnixWithTimeout(r->sock, tv);
  bool up = false;
  if (c && !c->err) {
    redisReply *rep = redisCommand(c, "PING");
    up = rep && (rep->type == REDIS_REPLY_STATUS ||
                 (rep->type == REDIS_REPLY_ERROR &&
                  strncmp(rep->str, "NOAUTH", 6) == 0));
    if (rep)
      freeReplyObject(rep);
  }
  if (c)
    redisFree(c);
  return up;
}

/* Spawn the server; true when it answers, false if it exited (a port
 * taken meanwhile, say). */
static bool spawn(jbt_redis *r, const char *bin) {
  char port[16], log[128];
  snprintf(port, sizeof port, "%d", r->port);
  snprintf(log, sizeof log, "%s/redis.log", r->dir);
  const char *argv[64] = {bin, "--port", port, "--bind", "127.0.0.1",
                          "--unixsocket", r->sock, "--unixsocketperm", "700",
                          "--save", "", "--appendonly", "no",
                          "--daemonize", "no", "--dir", r->dir};
  int argc = 17;
  for (int i = 0; r->extra && r->extra[i]; i++) {
    assert_true(argc < 63);
    argv[argc++] = r->extra[i];
  }
  argv[argc] = NULL;
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* die with the test program, whatever kills it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(bin, (char *const *)argv);
    fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
    _exit(127);
  }
  r->pid = pid;
  for (int i = 0; i < 500; i++) { /* up to 10 s */
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      r->pid = 0;
      return false;
    }
    if (answers(r))
      return true;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  print_log(r);
  jbt_redis_stop(r);
  fail_msg("redis-server did not answer within 10 s");
  return false;
}

void jbt_redis_start(jbt_redis *r, const char *const *extra) {
  memset(r, 0, sizeof *r);
  r->extra = extra;
  const char *bin = server_binary();
  /* /tmp, not $TMPDIR: a unix socket path must stay under 108 bytes */
  snprintf(r->dir, sizeof r->dir, "/tmp/jbredis.XXXXXX");
  if (!mkdtemp(r->dir))
    fail_msg("mkdtemp %s: %s", r->dir, strerror(errno));
  snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
  snprintf(r->unix_url, sizeof r->unix_url, "unix://%s", r->sock);
  /* the free port may be taken before the server binds it: try again */
  for (int attempt = 0; attempt < 5; attempt++) {
    r->port = jbt_free_port();
    snprintf(r->tcp_url, sizeof r->tcp_url, "redis://127.0.0.1:%d",
             r->port);
    if (spawn(r, bin))
      return;
  }
  print_log(r);
  jbt_redis_stop(r);
  fail_msg("redis-server (%s) exited at start, five times", bin);
}

void jbt_redis_kill(jbt_redis *r) {
  if (r->pid > 0) {
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    r->pid = 0;
  }
  unlink(r->sock); /* a killed server leaves it behind */
}

void jbt_redis_restart(jbt_redis *r) {
  jbt_redis_kill(r);
  if (!spawn(r, server_binary())) {
    print_log(r);
    fail_msg("redis-server did not restart on port %d", r->port);
  }
}

void jbt_redis_stop(jbt_redis *r) {
  jbt_redis_kill(r);
  if (r->dir[0]) {
    jbt_rmtree(r->dir);
    r->dir[0] = '\0';
  }
}

jb_sync_conn *jbt_redis_connect(const char *url, int command_ms) {
  jb_sync_options o;
  o = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  o.url = url;
  o.command_timeout_ms = command_ms;
  jb_sync_conn *c = NULL;
  int rc = jb_sync_connect(&c, &o);
  if (rc != JB_OK)
    fail_msg("connect %s: %s: %s", url, jb_strerror(rc), jb_errmsg());
  assert_non_null(c);
  return c;
}
