/*
 * conn.c - one connection to a Redis server: connect and handshake (AUTH,
 * SELECT, version and scripting checks), commands with timeouts, and the
 * script registry (EVALSHA, reloaded after NOSCRIPT).
 *
 * hiredis's blocking context is used: a command timeout is SO_RCVTIMEO /
 * SO_SNDTIMEO on the socket (redisSetTimeout). After any I/O error hiredis
 * leaves the context unusable, so we free it and reconnect at the next
 * call; what was in flight is not resent (its reply was lost, and only the
 * caller knows whether running it twice is harmless).
 *
 * A redis-sentinel:// URL names no server: each (re)connect asks its
 * sentinels for the master (connect_via_sentinels), and a reply saying
 * the server takes no writes (READONLY, MASTERDOWN, NOREPLICAS: see
 * not_master) drops the connection, so that the next call asks again: the
 * connection follows a failover.
 */
#include "conn.h"
#include "core/sync_hook.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_CONNECT_MS 2000
#define DEFAULT_COMMAND_MS 5000
/* Longest a sentinel is given to connect and answer: a sentinel that is
 * down must not hold up asking the next one for the connect timeout. */
#define SENTINEL_MS 500

typedef struct {
  char *name;
  char *source;
  char sha[41];
} script;

struct jb_sync_conn {
  jb_sync_url *url;
  char *ns;
  int connect_ms, command_ms;
  char where[160];   /* "127.0.0.1:6379" or "unix socket /run/r.sock" */
  redisContext *ctx; /* NULL while disconnected */
  int sentinel;      /* redis-sentinel://: the one to ask first (the one
                        that named the master last time) */
  bool refused;      /* the last failure was the server's error reply: the
                        command did not run (jb__sync_refused) */
  char version[32];  /* redis_version of the last handshake */
  script *scripts;
  int nscripts, cap;
  unsigned long reloads;
  void *attach;                  /* attach.c's state, or NULL */
  void (*attach_free)(void *);
};

static struct timeval ms_tv(int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  return tv;
}

static void disconnect(jb_sync_conn *c) {
  if (c->ctx)
    redisFree(c->ctx);
  c->ctx = NULL;
}

/* hiredis reports a socket timeout as an I/O error with errno EAGAIN
 * ("Resource temporarily unavailable") or ETIMEDOUT (connect); errno may
 * not survive hiredis's cleanup, so its text is checked too. */
static bool timed_out(int err, const char *errstr) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT ||
         strstr(errstr, "temporarily unavailable") ||
         strstr(errstr, "timed out");
}

/*
 * SIGPIPE blocked in this thread around an exchange, so that writing to a
 * socket the server closed fails with EPIPE instead of killing the
 * process. A SIGPIPE raised meanwhile is consumed unless one was already
 * pending before (that one belongs to someone else). Changes no
 * process-wide state.
 */
typedef struct {
  sigset_t pipe_set, old;
  bool was_pending;
} pipe_guard;

static void pipe_block(pipe_guard *g) {
  sigset_t pending;
  sigemptyset(&g->pipe_set);
  sigaddset(&g->pipe_set, SIGPIPE);
  sigemptyset(&pending);
  sigpending(&pending);
  g->was_pending = sigismember(&pending, SIGPIPE) == 1;
  pthread_sigmask(SIG_BLOCK, &g->pipe_set, &g->old);
}

static void pipe_restore(pipe_guard *g) {
  if (!g->was_pending) {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      struct timespec zero = {0, 0};
      sigtimedwait(&g->pipe_set, NULL, &zero);
    }
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Send one command and read its reply under the guard. */
static redisReply *exchange(redisContext *ctx, int argc, const char **argv,
                            const size_t *lens, int *err) {
  pipe_guard g;
  pipe_block(&g);
  errno = 0;
  redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
  *err = errno;
  pipe_restore(&g);
  return r;
}

/* The I/O error of the open context as a code (and the connection
 * dropped), after hiredis failed on it during `what`. */
static int io_failed(jb_sync_conn *c, int err, const char *what) {
  int rc;
  c->refused = false;
  if (c->ctx->err == REDIS_ERR_OOM)
    rc = jb__err(JB_ENOMEM, "out of memory talking to redis at %s", c->where);
  else if (c->ctx->err == REDIS_ERR_IO && timed_out(err, c->ctx->errstr))
    rc = jb__err(JB_EOFFLINE, "redis at %s: timed out after %d ms waiting "
                 "for the reply to %s (connection dropped)", c->where,
                 c->command_ms, what);
  else if (c->ctx->err == REDIS_ERR_EOF)
    rc = jb__err(JB_EOFFLINE, "redis at %s closed the connection during %s",
                 c->where, what);
  else
    rc = jb__err(JB_EOFFLINE, "redis at %s: %s failed: %s", c->where, what,
                 c->ctx->errstr);
  disconnect(c);
  return rc;
}

/* Run a command on the open context. JB_OK with any reply, error replies
 * included; an I/O failure drops the connection: JB_EOFFLINE. */
static int raw(redisReply **out, jb_sync_conn *c, int argc, const char **argv,
               const size_t *lens) {
  *out = NULL;
  int err;
  redisReply *r = exchange(c->ctx, argc, argv, lens, &err);
  if (r) {
    *out = r;
    return JB_OK;
  }
  return io_failed(c, err, argv[0]);
}

static bool starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A reply saying the server takes no writes: a replica (a master demoted
 * by a failover) refusing a write, READONLY (as a script's error too:
 * Redis 7 passes the code through, Redis 6 and older quote it after the
 * script's name); a replica cut off from its master, MASTERDOWN; a master
 * with fewer good replicas than min-replicas-to-write, NOREPLICAS (as a
 * master left behind by a failover finds itself). The command did not
 * run: a replica runs no write, and Redis checks min-replicas before a
 * script's first write. Another server may be the master now. */
static bool not_master(const char *err) {
  return starts(err, "READONLY") || starts(err, "MASTERDOWN") ||
         starts(err, "NOREPLICAS") || strstr(err, "-READONLY ") != NULL ||
         strstr(err, "-NOREPLICAS ") != NULL;
}

/* Turn an error reply into a code and message (freeing it), or return
 * JB_OK for any other reply. */
static int classify(redisReply **reply, jb_sync_conn *c, const char *what) {
  redisReply *r = *reply;
  if (r->type != REDIS_REPLY_ERROR)
    return JB_OK;
  int code = JB_EIO;
  const char *hint = "";
  bool drop = not_master(r->str);
  if (drop) {
    code = JB_EOFFLINE;
    hint = ": not the master (a failover?); the command did not run, and "
           "the connection is dropped so that the next one finds the master";
  } else if (starts(r->str, "LOADING") || starts(r->str, "BUSY") ||
             starts(r->str, "TRYAGAIN") || starts(r->str, "CLUSTERDOWN"))
    code = JB_EOFFLINE;
  else if (starts(r->str, "NOAUTH")) {
    code = JB_EINVAL;
    /* A board's URL was completed from these before (sync/config.c):
     * name them, since the password was looked for there too. */
    hint = ": the server requires a password and the URL gives none (for a "
           "board, none was found in $JOBBOARD_REDIS_PASSWORD or in the "
           "board's sync.credentials file either)";
  } else if (starts(r->str, "WRONGPASS")) {
    code = JB_EINVAL;
    hint = ": wrong password";
  } else if (starts(r->str, "NOSCRIPT"))
    code = JB_ENOTFOUND;
  jb__err(code, "redis at %s: %s: %s%s", c->where, what, r->str, hint);
  freeReplyObject(r);
  *reply = NULL;
  /* Every class above is a refusal before anything ran; any other error
   * (JB_EIO) may be a script's, failing halfway through. */
  c->refused = code != JB_EIO;
  if (drop)
    disconnect(c);
  return code;
}

/* raw + classify; the command name is what the message names. */
static int checked(redisReply **out, jb_sync_conn *c, int argc,
                   const char **argv, const size_t *lens, const char *what) {
  int rc = raw(out, c, argc, argv, lens);
  if (rc == JB_OK)
    rc = classify(out, c, what);
  return rc;
}

int jb__sync_version_at_least(const char *version, int major, int minor) {
  int ma, mi, n = 0;
  if (sscanf(version, "%d.%d%n", &ma, &mi, &n) != 2 || n == 0)
    return -1;
  return ma > major || (ma == major && mi >= minor);
}

static int auth(jb_sync_conn *c) {
  const jb_sync_url *u = c->url;
  const char *argv[3] = {"AUTH", u->user ? u->user : u->password,
                         u->password};
  int argc = u->user ? 3 : 2;
  redisReply *r;
  int rc = raw(&r, c, argc, argv, NULL);
  if (rc != JB_OK)
    return rc;
  if (r->type == REDIS_REPLY_ERROR) {
    /* "WRONGPASS ..." (Redis >= 6), "ERR invalid password" (older), or
     * "ERR AUTH <password> called without any password configured" */
    bool none = strstr(r->str, "without any password") ||
                strstr(r->str, "no password is set");
    rc = jb__err(JB_EINVAL, "redis at %s: %s (server: %s)", c->where,
                 none ? "the URL gives a password but the server has none set "
                        "(for a board, the password may come from "
                        "$JOBBOARD_REDIS_PASSWORD or the board's "
                        "sync.credentials file: unset the one, delete the "
                        "other)"
                 : u->user ? "wrong user or password"
                           : "wrong password",
                 r->str);
    freeReplyObject(r);
    return rc;
  }
  freeReplyObject(r);
  return JB_OK;
}

static int select_db(jb_sync_conn *c) {
  char db[16];
  snprintf(db, sizeof db, "%d", c->url->db);
  const char *argv[2] = {"SELECT", db};
  redisReply *r;
  int rc = raw(&r, c, 2, argv, NULL);
  if (rc != JB_OK)
    return rc;
  if (r->type == REDIS_REPLY_ERROR && !starts(r->str, "NOAUTH") &&
      !starts(r->str, "LOADING")) {
    rc = jb__err(JB_EINVAL, "redis at %s: cannot select db %d: %s", c->where,
                 c->url->db, r->str);
    freeReplyObject(r);
    return rc;
  }
  char what[40];
  snprintf(what, sizeof what, "SELECT %d", c->url->db);
  rc = classify(&r, c, what);
  if (r)
    freeReplyObject(r);
  return rc;
}

bool jb__sync_info_version(char *out, size_t size, const redisReply *r) {
  const char *v = r->type == REDIS_REPLY_STRING
                      ? strstr(r->str, "redis_version:")
                      : NULL;
  if (!v) return false;
  v += strlen("redis_version:");
  size_t n = strcspn(v, "\r\n");
  snprintf(out, size, "%.*s", (int)n, v);
  return true;
}

/* INFO server -> redis_version, which must be >= 4.0: Lua scripting came
 * with 2.6, but our scripts also write hashes of several fields in one
 * HSET (4.0); an older server would pass here and fail every claim. */
static int check_version(jb_sync_conn *c) {
  const char *argv[2] = {"INFO", "server"};
  redisReply *r;
  int rc = checked(&r, c, 2, argv, NULL, "INFO server");
  if (rc != JB_OK)
    return rc;
  bool found = jb__sync_info_version(c->version, sizeof c->version, r);
  freeReplyObject(r);
  if (!found)
    return jb__err(JB_EIO, "redis at %s: INFO server has no redis_version",
                   c->where);
  int ok = jb__sync_version_at_least(c->version, 4, 0);
  if (ok < 0)
    return jb__err(JB_EIO, "redis at %s: cannot read redis_version \"%s\"",
                   c->where, c->version);
  if (!ok)
    return jb__err(JB_EINVAL,
                   "redis at %s: Redis %s is too old: Redis 4.0 or newer "
                   "is needed (Lua scripting, HSET of several fields)",
                   c->where, c->version);
  return JB_OK;
}

/* SCRIPT LOAD `source` into sha[41]. */
static int load(char sha[41], jb_sync_conn *c, const char *name,
                const char *source) {
  const char *argv[3] = {"SCRIPT", "LOAD", source};
  redisReply *r;
  int rc = raw(&r, c, 3, argv, NULL);
  if (rc != JB_OK)
    return rc;
  if (r->type == REDIS_REPLY_ERROR &&
      (starts(r->str, "ERR unknown command") ||
       starts(r->str, "ERR unknown subcommand") ||
       strstr(r->str, "scripting"))) {
    rc = jb__err(JB_EINVAL,
                 "redis at %s: the server does not run Lua scripts "
                 "(SCRIPT LOAD: %s)",
                 c->where, r->str);
    freeReplyObject(r);
    return rc;
  }
  if (r->type == REDIS_REPLY_ERROR && starts(r->str, "ERR")) {
    /* a compile error of the script itself */
    rc = jb__err(JB_EINVAL, "redis at %s: script %s does not load: %s",
                 c->where, name, r->str);
    freeReplyObject(r);
    return rc;
  }
  char what[80];
  snprintf(what, sizeof what, "SCRIPT LOAD of %s", name);
  if ((rc = classify(&r, c, what)) != JB_OK)
    return rc;
  if (r->type != REDIS_REPLY_STRING || r->len != 40) {
    freeReplyObject(r);
    return jb__err(JB_EIO, "redis at %s: SCRIPT LOAD of %s: not a SHA1 reply",
                   c->where, name);
  }
  memcpy(sha, r->str, 41);
  freeReplyObject(r);
  return JB_OK;
}

/* Prove that scripts run: load and run "return 1". A server may have
 * EVALSHA renamed away while SCRIPT works, hence both. */
static int check_scripting(jb_sync_conn *c) {
  char sha[41];
  int rc = load(sha, c, "the scripting check", "return 1");
  if (rc != JB_OK)
    return rc;
  const char *argv[3] = {"EVALSHA", sha, "0"};
  redisReply *r;
  if ((rc = raw(&r, c, 3, argv, NULL)) != JB_OK)
    return rc;
  bool ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  if (!ok)
    rc = jb__err(JB_EINVAL,
                 "redis at %s: the server does not run Lua scripts "
                 "(EVALSHA of \"return 1\": %s)",
                 c->where,
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
  freeReplyObject(r);
  return rc;
}

/* Open the socket (the URL's unix socket, else host:port) and run the
 * handshake; on failure c->ctx stays NULL. */
static int connect_to(jb_sync_conn *c, const char *host, int port) {
  const jb_sync_url *u = c->url;
  c->version[0] = '\0';
  struct timeval tv = ms_tv(c->connect_ms);
  c->ctx = u->path ? redisConnectUnixWithTimeout(u->path, tv)
                   : redisConnectWithTimeout(host, port, tv);
  int err = errno;
  if (!c->ctx)
    return jb__err(JB_ENOMEM, "out of memory connecting to redis at %s",
                   c->where);
  if (c->ctx->err) {
    int rc;
    if (strstr(c->ctx->errstr, "refused"))
      rc = jb__err(JB_EOFFLINE, "connection refused to %s", c->where);
    else if (timed_out(err, c->ctx->errstr))
      rc = jb__err(JB_EOFFLINE, "timed out after %d ms connecting to %s",
                   c->connect_ms, c->where);
    else
      rc = jb__err(JB_EOFFLINE, "cannot connect to redis at %s: %s",
                   c->where, c->ctx->errstr);
    disconnect(c);
    return rc;
  }
  int rc = JB_OK;
  if (redisSetTimeout(c->ctx, ms_tv(c->command_ms)) != REDIS_OK)
    rc = jb__err(JB_EIO, "redis at %s: cannot set the command timeout: %s",
                 c->where, c->ctx->errstr);
  else if (!u->path && redisEnableKeepAlive(c->ctx) != REDIS_OK)
    rc = jb__err(JB_EIO, "redis at %s: cannot enable TCP keep-alive: %s",
                 c->where, c->ctx->errstr);
  if (rc == JB_OK && u->password)
    rc = auth(c);
  if (rc == JB_OK && u->db != 0)
    rc = select_db(c);
  if (rc == JB_OK)
    rc = check_version(c);
  if (rc == JB_OK)
    rc = check_scripting(c);
  if (rc != JB_OK)
    disconnect(c);
  return rc;
}

/* ------------------------------------------------------------ sentinel */

static void set_where(jb_sync_conn *c, const char *host, int port) {
  const char *name = c->url->master;
  if (strchr(host, ':'))
    snprintf(c->where, sizeof c->where, "[%s]:%d%s%s%s", host, port,
             name ? " (master " : "", name ? name : "", name ? ")" : "");
  else
    snprintf(c->where, sizeof c->where, "%s:%d%s%s%s", host, port,
             name ? " (master " : "", name ? name : "", name ? ")" : "");
}

/*
 * Ask sentinel `s` where the master is (SENTINEL get-master-addr-by-name),
 * on a connection of its own, closed at once. host[0..hsize) and *port on
 * JB_OK. Errors: JB_ENOTFOUND (it watches no master of that name),
 * JB_EOFFLINE (unreachable, too slow), JB_EINVAL (it wants a password),
 * JB_EIO (a reply that makes no sense), JB_ENOMEM.
 */
static int ask_sentinel(char *host, size_t hsize, int *port, jb_sync_conn *c,
                        const jb_sync_addr *s) {
  int ms = c->connect_ms < SENTINEL_MS ? c->connect_ms : SENTINEL_MS;
  char at[300];
  snprintf(at, sizeof at, strchr(s->host, ':') ? "[%s]:%d" : "%s:%d",
           s->host, s->port);
  redisContext *ctx = redisConnectWithTimeout(s->host, s->port, ms_tv(ms));
  if (!ctx)
    return jb__err(JB_ENOMEM, "out of memory connecting to sentinel %s", at);
  int rc = JB_OK, err = errno;
  redisReply *r = NULL;
  if (!ctx->err && redisSetTimeout(ctx, ms_tv(ms)) == REDIS_OK) {
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                           c->url->master};
    r = exchange(ctx, 3, argv, NULL, &err);
  }
  if (!r)
    rc = jb__err(JB_EOFFLINE, "sentinel %s: %s", at,
                 timed_out(err, ctx->errstr)
                     ? "no answer in time"
                     : ctx->errstr[0] ? ctx->errstr : "no answer");
  else if (r->type == REDIS_REPLY_NIL)
    rc = jb__err(JB_ENOTFOUND, "sentinel %s watches no master named \"%s\"",
                 at, c->url->master);
  else if (r->type == REDIS_REPLY_ERROR)
    rc = jb__err(starts(r->str, "NOAUTH") ? JB_EINVAL : JB_EIO,
                 "sentinel %s: %s%s", at, r->str,
                 starts(r->str, "NOAUTH")
                     ? " (sentinels are asked without a password)"
                     : "");
  else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
           r->element[0]->type != REDIS_REPLY_STRING ||
           r->element[1]->type != REDIS_REPLY_STRING ||
           (*port = atoi(r->element[1]->str)) <= 0 || *port > 65535)
    rc = jb__err(JB_EIO, "sentinel %s: unexpected reply to SENTINEL "
                 "get-master-addr-by-name", at);
  else
    snprintf(host, hsize, "%s", r->element[0]->str);
  if (r)
    freeReplyObject(r);
  redisFree(ctx);
  return rc;
}

/* The server just connected to must be a master: a sentinel may not yet
 * know of a failover (or be cut off from the others) and name a server
 * that is a replica now, and writes must never go there. */
static int check_master(jb_sync_conn *c) {
  const char *argv[1] = {"ROLE"};
  redisReply *r;
  int rc = checked(&r, c, 1, argv, NULL, "ROLE");
  if (rc != JB_OK)
    return rc;
  bool master = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                r->element[0]->type == REDIS_REPLY_STRING &&
                strcmp(r->element[0]->str, "master") == 0;
  if (!master)
    rc = jb__err(JB_EOFFLINE, "redis at %s: named by a sentinel but it is "
                 "a %s, not a master (the sentinel is behind a failover)",
                 c->where,
                 r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                         r->element[0]->type == REDIS_REPLY_STRING
                     ? r->element[0]->str
                     : "server of unknown role");
  freeReplyObject(r);
  return rc;
}

/*
 * Find the master through the sentinels and connect to it: ask each in
 * turn, starting with the one that named the master last time (as the
 * Sentinel client guidelines say), until one names a server that is a
 * master. JB_EINVAL when every sentinel refuses the question (it watches
 * no master of that name, or wants a password: retrying will not help),
 * or for the master's own refusals (a wrong password); otherwise
 * JB_EOFFLINE quoting the last failure.
 */
static int connect_via_sentinels(jb_sync_conn *c) {
  const jb_sync_url *u = c->url;
  int unknown = 0, refusing = 0, rc = JB_EOFFLINE;
  char last[400] = "";
  for (int k = 0; k < u->nsentinels; k++) {
    int i = (c->sentinel + k) % u->nsentinels;
    char host[256];
    int port = 0;
    rc = ask_sentinel(host, sizeof host, &port, c, &u->sentinels[i]);
    if (rc == JB_OK) {
      set_where(c, host, port);
      rc = connect_to(c, host, port);
      if (rc == JB_OK && (rc = check_master(c)) != JB_OK)
        disconnect(c);
      if (rc == JB_OK) {
        c->sentinel = i;
        return JB_OK;
      }
    }
    if (rc == JB_ENOMEM || (rc == JB_EINVAL && port != 0))
      return rc; /* the master itself refuses us: asking on will not help */
    unknown += rc == JB_ENOTFOUND;
    refusing += rc == JB_ENOTFOUND || rc == JB_EINVAL;
    snprintf(last, sizeof last, "%s", jb_errmsg());
  }
  snprintf(c->where, sizeof c->where, "master %s (through %d sentinel%s)",
           u->master, u->nsentinels, u->nsentinels == 1 ? "" : "s");
  if (unknown == u->nsentinels)
    return jb__err(JB_EINVAL, "no sentinel watches a master named \"%s\" "
                   "(%s)", u->master, last);
  if (refusing == u->nsentinels)
    return jb__err(JB_EINVAL, "the sentinels refuse to name the master "
                   "\"%s\" (last: %s)", u->master, last);
  return jb__err(JB_EOFFLINE, "no master found for \"%s\" through %d "
                 "sentinel%s (last: %s)", u->master, u->nsentinels,
                 u->nsentinels == 1 ? "" : "s", last);
}

static int connect_now(jb_sync_conn *c) {
  if (c->url->master)
    return connect_via_sentinels(c);
  return connect_to(c, c->url->host, c->url->port);
}

static int ensure(jb_sync_conn *c) {
  if (c->ctx)
    return JB_OK;
  int rc = connect_now(c);
  if (rc != JB_OK)
    c->refused = false; /* nothing was sent */
  return rc;
}

int jb_sync_connect(jb_sync_conn **out, const jb_sync_options *opts) {
  *out = NULL;
  if (!opts)
    return jb__err(JB_EINVAL, "jb_sync_connect: no options given");
  if (opts->connect_timeout_ms < 0 || opts->command_timeout_ms < 0)
    return jb__err(JB_EINVAL,
                   "jb_sync_connect: negative timeout (connect %d ms, "
                   "command %d ms)",
                   opts->connect_timeout_ms, opts->command_timeout_ms);
  const char *ns = opts->ns ? opts->ns : JB_SYNC_NAMESPACE_DEFAULT;
  int rc = jb_sync_namespace_check(ns);
  if (rc != JB_OK)
    return rc;
  jb_sync_conn *c = calloc(1, sizeof *c);
  if (!c || !(c->ns = strdup(ns))) {
    free(c);
    return jb__err(JB_ENOMEM, "out of memory connecting to redis");
  }
  if ((rc = jb_sync_url_parse(&c->url, opts->url)) != JB_OK) {
    jb_sync_close(c);
    return rc;
  }
  c->connect_ms = opts->connect_timeout_ms ? opts->connect_timeout_ms
                                           : DEFAULT_CONNECT_MS;
  c->command_ms = opts->command_timeout_ms ? opts->command_timeout_ms
                                           : DEFAULT_COMMAND_MS;
  if (c->url->path)
    snprintf(c->where, sizeof c->where, "unix socket %s", c->url->path);
  else if (c->url->master)
    snprintf(c->where, sizeof c->where, "master %s", c->url->master);
  else
    set_where(c, c->url->host, c->url->port);
  if ((rc = connect_now(c)) != JB_OK) {
    jb_sync_close(c);
    return rc;
  }
  *out = c;
  return JB_OK;
}

static char *dup_or_null(const char *s, bool *bad) {
  if (s == NULL) return NULL;
  char *d = strdup(s);
  if (d == NULL) *bad = true;
  return d;
}

int jb__sync_conn_clone(jb_sync_conn **out, const jb_sync_conn *c) {
  *out = NULL;
  jb_sync_conn *n = calloc(1, sizeof *n);
  jb_sync_url *u = calloc(1, sizeof *u);
  bool bad = n == NULL || u == NULL;
  if (!bad) {
    const jb_sync_url *s = c->url;
    *u = (jb_sync_url){.port = s->port, .db = s->db};
    u->host = dup_or_null(s->host, &bad);
    u->path = dup_or_null(s->path, &bad);
    u->user = dup_or_null(s->user, &bad);
    u->password = dup_or_null(s->password, &bad);
    u->master = dup_or_null(s->master, &bad);
    if (s->nsentinels > 0 &&
        (u->sentinels = calloc((size_t)s->nsentinels, sizeof *u->sentinels)))
      for (int i = 0; i < s->nsentinels; i++, u->nsentinels++) {
        u->sentinels[i].port = s->sentinels[i].port;
        u->sentinels[i].host = dup_or_null(s->sentinels[i].host, &bad);
      }
    else if (s->nsentinels > 0)
      bad = true;
    n->url = u;
    u = NULL;
    n->ns = dup_or_null(c->ns, &bad);
    n->connect_ms = c->connect_ms;
    n->command_ms = c->command_ms;
    memcpy(n->where, c->where, sizeof n->where);
  }
  if (bad) {
    jb_sync_url_free(u);
    jb_sync_close(n);
    return jb__err(JB_ENOMEM, "out of memory for a second connection");
  }
  *out = n;
  return JB_OK;
}

void *jb__sync_conn_attachment(const jb_sync_conn *c) { return c->attach; }

void jb__sync_conn_set_attachment(jb_sync_conn *c, void *a,
                                  void (*free_fn)(void *)) {
  c->attach = a;
  c->attach_free = free_fn;
}

void jb_sync_close(jb_sync_conn *c) {
  if (!c)
    return;
  if (c->attach_free)
    c->attach_free(c->attach);
  disconnect(c);
  for (int i = 0; i < c->nscripts; i++) {
    free(c->scripts[i].name);
    free(c->scripts[i].source);
  }
  free(c->scripts);
  jb_sync_url_free(c->url);
  free(c->ns);
  free(c);
}

int jb__sync_command(redisReply **out, jb_sync_conn *c, int argc,
                     const char **argv, const size_t *argvlen) {
  *out = NULL;
  if (argc < 1 || !argv)
    return jb__err(JB_EINVAL, "redis command: no arguments");
  int rc = ensure(c);
  if (rc != JB_OK)
    return rc;
  return checked(out, c, argc, argv, argvlen, argv[0]);
}

int jb_sync_ping(jb_sync_conn *c) {
  const char *argv[1] = {"PING"};
  redisReply *r;
  int rc = jb__sync_command(&r, c, 1, argv, NULL);
  if (rc != JB_OK)
    return rc;
  bool pong = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
  freeReplyObject(r);
  return pong ? JB_OK
              : jb__err(JB_EIO, "redis at %s: PING did not answer PONG",
                        c->where);
}

bool jb_sync_connected(const jb_sync_conn *c) { return c->ctx != NULL; }

const char *jb_sync_server_version(const jb_sync_conn *c) {
  return c->version;
}

const char *jb_sync_namespace(const jb_sync_conn *c) { return c->ns; }

int jb_sync_key(char *buf, size_t size, const jb_sync_conn *c,
                const char *piece) {
  if (!piece || !*piece)
    return jb__err(JB_EINVAL, "redis key: empty piece");
  int n = snprintf(buf, size, "%s:%s", c->ns, piece);
  if (n < 0 || (size_t)n >= size)
    return jb__err(JB_EINVAL, "redis key \"%s:%s\" does not fit in %zu bytes",
                   c->ns, piece, size);
  return n;
}

/* ------------------------------------------------------------- scripts */

int jb__sync_script_add(int *id, jb_sync_conn *c, const char *name,
                        const char *source) {
  *id = -1;
  if (!name || !source)
    return jb__err(JB_EINVAL, "script: no name or source");
  if (c->nscripts == c->cap) {
    int cap = c->cap ? 2 * c->cap : 8;
    script *s = realloc(c->scripts, (size_t)cap * sizeof *s);
    if (!s)
      return jb__err(JB_ENOMEM, "out of memory adding script %s", name);
    c->scripts = s;
    c->cap = cap;
  }
  script *s = &c->scripts[c->nscripts];
  memset(s, 0, sizeof *s);
  int rc = ensure(c);
  if (rc == JB_OK)
    rc = load(s->sha, c, name, source);
  if (rc != JB_OK)
    return rc;
  if (!(s->name = strdup(name)) || !(s->source = strdup(source))) {
    free(s->name);
    return jb__err(JB_ENOMEM, "out of memory adding script %s", name);
  }
  *id = c->nscripts++;
  return JB_OK;
}

const char *jb__sync_script_sha(const jb_sync_conn *c, int id) {
  return id >= 0 && id < c->nscripts ? c->scripts[id].sha : NULL;
}

unsigned long jb__sync_script_reloads(const jb_sync_conn *c) {
  return c->reloads;
}

int jb__sync_evalsha(redisReply **out, jb_sync_conn *c, int id, int nkeys,
                     const char *const *keys, const size_t *keylens,
                     int nargs, const char *const *args,
                     const size_t *arglens) {
  *out = NULL;
  if (id < 0 || id >= c->nscripts || nkeys < 0 || nargs < 0 ||
      (nkeys && !keys) || (nargs && !args))
    return jb__err(JB_EINVAL, "EVALSHA: bad script id %d or counts", id);
  script *s = &c->scripts[id];
  int argc = 3 + nkeys + nargs;
  const char **argv = malloc((size_t)argc * sizeof *argv);
  size_t *lens = malloc((size_t)argc * sizeof *lens);
  char nk[16];
  if (!argv || !lens) {
    free(argv);
    free(lens);
    return jb__err(JB_ENOMEM, "out of memory running script %s", s->name);
  }
  snprintf(nk, sizeof nk, "%d", nkeys);
  argv[0] = "EVALSHA";
  argv[1] = s->sha;
  argv[2] = nk;
  for (int i = 0; i < nkeys; i++) {
    argv[3 + i] = keys[i];
    lens[3 + i] = keylens ? keylens[i] : strlen(keys[i]);
  }
  for (int i = 0; i < nargs; i++) {
    argv[3 + nkeys + i] = args[i];
    lens[3 + nkeys + i] = arglens ? arglens[i] : strlen(args[i]);
  }
  for (int i = 0; i < 3; i++)
    lens[i] = strlen(argv[i]);
  char what[80];
  snprintf(what, sizeof what, "script %s", s->name);
  int rc = ensure(c);
  if (rc == JB_OK)
    rc = checked(out, c, argc, argv, lens, what);
  if (rc == JB_ENOTFOUND) {
    /* NOSCRIPT: the server's cache lost it and did not run it, so loading
     * it again and retrying once cannot run it twice. */
    char sha[41];
    rc = load(sha, c, s->name, s->source);
    if (rc == JB_OK && strcmp(sha, s->sha) != 0)
      rc = jb__err(JB_EIO, "redis at %s: script %s reloaded with SHA1 %s, "
                           "not %s",
                   c->where, s->name, sha, s->sha);
    if (rc == JB_OK) {
      c->reloads++;
      rc = checked(out, c, argc, argv, lens, what);
      if (rc == JB_ENOTFOUND)
        rc = JB_EIO; /* NOSCRIPT twice: the message says so; no third try */
    }
  }
  free(argv);
  free(lens);
  return rc;
}

/* ------------------------------------------------- pipelines, pub/sub */

int jb__sync_append(jb_sync_conn *c, int argc, const char **argv,
                    const size_t *lens) {
  int rc = ensure(c);
  if (rc != JB_OK) return rc;
  if (redisAppendCommandArgv(c->ctx, argc, argv, lens) != REDIS_OK)
    return io_failed(c, errno, argv[0]);
  return JB_OK;
}

int jb__sync_read(redisReply **out, jb_sync_conn *c, const char *what) {
  *out = NULL;
  if (c->ctx == NULL)
    return jb__err(JB_EOFFLINE, "redis at %s: connection lost before the "
                   "reply to %s", c->where, what);
  pipe_guard g;
  pipe_block(&g);
  void *r = NULL;
  errno = 0;
  int st = redisGetReply(c->ctx, &r);
  int err = errno;
  pipe_restore(&g);
  if (st != REDIS_OK || r == NULL) return io_failed(c, err, what);
  *out = r;
  return classify(out, c, what);
}

int jb__sync_subscribe(jb_sync_conn *c, const char *channel) {
  const char *argv[2] = {"SUBSCRIBE", channel};
  redisReply *r;
  int rc = jb__sync_append(c, 2, argv, NULL);
  if (rc == JB_OK) rc = jb__sync_read(&r, c, "SUBSCRIBE");
  if (rc != JB_OK) return rc;
  bool ok = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[0]->type == REDIS_REPLY_STRING &&
            strcmp(r->element[0]->str, "subscribe") == 0;
  freeReplyObject(r);
  if (!ok) {
    disconnect(c);
    return jb__err(JB_EIO, "redis at %s: unexpected reply to SUBSCRIBE",
                   c->where);
  }
  return JB_OK;
}

int jb__sync_fd(const jb_sync_conn *c) { return c->ctx ? c->ctx->fd : -1; }

int jb__sync_message(redisReply **out, jb_sync_conn *c, bool readable) {
  *out = NULL;
  if (c->ctx == NULL)
    return jb__err(JB_EOFFLINE, "redis at %s: subscription lost", c->where);
  void *r = NULL;
  if (redisGetReplyFromReader(c->ctx, &r) != REDIS_OK)
    return io_failed(c, errno, "a notice");
  if (r == NULL && readable) {
    errno = 0;
    if (redisBufferRead(c->ctx) != REDIS_OK)
      return io_failed(c, errno, "a notice");
    if (redisGetReplyFromReader(c->ctx, &r) != REDIS_OK)
      return io_failed(c, errno, "a notice");
  }
  *out = r;
  return JB_OK;
}

void jb__sync_drop(jb_sync_conn *c) { disconnect(c); }

bool jb__sync_refused(const jb_sync_conn *c) { return c->refused; }

const char *jb__sync_where(const jb_sync_conn *c) { return c->where; }
