/*
 * cmd_sync.c - `jobboard sync` (the board's replicator as a foreground
 * daemon) and `jobboard status` (the sync state), on libjbsync's
 * replicator (sync/jobboard_sync.h). Without Redis support both say so
 * and exit 2.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli_common.h"
#include "json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const cli_command cli_cmd_sync = {
    "sync", "share the board through Redis: run its replicator (a daemon)",
    "Usage: jobboard sync [--redis URL] [--namespace NS] [--poll SECONDS]\n"
    "                     [--keepalive SECONDS] [OPTIONS]\n"
    "\n"
    "Share the board through a Redis server, with other boards and with\n"
    "OpenStack taskflow's Redis jobboard (same keys, same encodings): run\n"
    "the board's replicator in the foreground until SIGTERM or SIGINT. It\n"
    "  - publishes the jobs posted on this board, oldest first (with their\n"
    "    owner when they were claimed before); from then on Redis decides\n"
    "    who owns them. A job completed before it was published never is;\n"
    "  - brings the jobs posted elsewhere, their claims and their removals\n"
    "    into the board, so that list, wait, watch and claim-next see them\n"
    "    as local jobs (at once for our own peers, within --poll for\n"
    "    taskflow's, which announce nothing);\n"
    "  - keeps the claims `jobboard work` holds on published jobs alive in\n"
    "    Redis, so that a dead host's claims lapse by themselves.\n"
    "While Redis cannot be reached, posts wait on the board and go out in\n"
    "order when it returns; the replicator reconnects by itself (back-off\n"
    "from 0.1 s to 30 s). One replicator runs per board: another `jobboard\n"
    "sync` on the same board stands by and takes over within a second when\n"
    "the first stops or dies.\n"
    "\n"
    "Claims, abandons, consumes, trashes and extends of jobs Redis decides\n"
    "do not go through this daemon: each command asks Redis itself (see\n"
    "their --redis option), and fails with exit 6 when it cannot.\n"
    "\n"
    "The board remembers the URL and the namespace the first time they are\n"
    "given: after that `jobboard sync` alone, and every other command, use\n"
    "them. A later --redis replaces the URL (a server that moved); another\n"
    "namespace is refused (exit 2): the board's published jobs live under\n"
    "its own. The URL is kept in the board as given, password included.\n"
    "A URL that does not parse, a wrong password and a server without Lua\n"
    "scripting are refused at once (exit 2); a server that is down is not:\n"
    "the replicator waits for it. With a redis-sentinel:// URL it asks the\n"
    "sentinels for the master at every reconnect, and drops a connection\n"
    "whose server answers as a replica (a failover), so it follows the\n"
    "master; a master name that no sentinel watches is refused (exit 2).\n"
    "\n"
    "Log: one line per event on stderr (connected, lost, published, errors):\n"
    "  2024-05-01T12:00:00.000000Z sync: connected to ...\n"
    "with \"warning: \" or \"error: \" before the message when it is one.\n"
    "`jobboard status` shows the state from any process.\n"
    "\n"
    "Options:\n"
    CLI_HELP_REDIS_OPTIONS
    "  --poll SECONDS      longest time before a change made by a taskflow\n"
    "                      peer is seen (fractions allowed; default 1)\n"
    "  --keepalive SECONDS the expiry in Redis of claims bound to a process\n"
    "                      of this host (`jobboard work`), renewed every\n"
    "                      third of it while the process lives (default 30)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  0  also: stopped by SIGTERM or SIGINT (the replicator finished its\n"
    "     step, gave up the board's lock and closed the connection)\n"
    "  2  also: no Redis URL given or remembered, a bad URL or namespace,\n"
    "     a wrong password, another namespace than the board's, or a\n"
    "     jobboard built without Redis support\n"
    "\n"
    "Examples:\n"
    "  jobboard sync --board /srv/board --redis redis://redis.lan:6379/0 \\\n"
    "    --namespace fleet\n"
    "  jobboard sync --board /srv/board    # the remembered URL, namespace\n"
    "  jobboard sync --redis unix:///run/redis/redis.sock --poll 0.2\n"
    "  jobboard sync --redis \\\n"
    "    redis-sentinel://:s3cret@s1.lan,s2.lan,s3.lan/mymaster/0\n",
    CLI_O_REDIS | CLI_O_SYNC, 0, 0, ""};

const cli_command cli_cmd_status = {
    "status", "show the board's Redis sync state",
    "Usage: jobboard status [OPTIONS]\n"
    "\n"
    "Show the board's Redis sync state, as its replicator (`jobboard sync`,\n"
    "or a replicator thread in a program) last recorded it, with the counts\n"
    "of jobs waiting taken from the board now:\n"
    "  synced with   the Redis URL (password shown as ***) and namespace the\n"
    "                board remembers, or 'not synced'\n"
    "  replicator    running (its pid) and connected to Redis (to which\n"
    "                server: for a redis-sentinel:// URL, the master the\n"
    "                sentinels named) or not, or 'not running'\n"
    "  lag           change-log events not yet handled, and the age of the\n"
    "                oldest job waiting to be published\n"
    "  unpublished   jobs posted here and not yet published\n"
    "  published     jobs published, and remote changes pulled in, since\n"
    "                the replicator started\n"
    "  last sync     when the replicator last finished a pass\n"
    "  last error    its last error and when (or 'none')\n"
    "With --json, one object: {\"synced\", \"url\", \"namespace\", \"running\",\n"
    "\"pid\", \"connected\", \"server\", \"lag_events\", \"lag_seconds\",\n"
    "\"unpublished\", \"published\", \"pulled\", \"last_sync\", \"last_error\",\n"
    "\"last_error_at\"}\n"
    "(times in ISO-8601 UTC; null when not synced, never or none).\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  2  also: a jobboard built without Redis support\n"
    "\n"
    "Examples:\n"
    "  jobboard status --board /srv/board\n"
    "  jobboard status --json | python3 -c \\\n"
    "    'import json,sys; print(json.load(sys.stdin)[\"unpublished\"])'\n",
    0, 0, 0, ""};

#ifndef JB_WITH_REDIS

static int no_redis(const cli_command *cmd, int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, cmd, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  return cli_usage_error("%s: this jobboard was built without Redis "
                         "support: configure --with-redis", cmd->name);
}

int cmd_sync(int argc, char **argv) {
  return no_redis(&cli_cmd_sync, argc, argv);
}

int cmd_status(int argc, char **argv) {
  return no_redis(&cli_cmd_status, argc, argv);
}

#else /* JB_WITH_REDIS */

#include "sync/jobboard_sync.h"

#include <pthread.h>

/* ------------------------------------------------------------------ sync */

/* The URL for a human: the password as "***". Built from the parsed URL,
 * so whatever the spelling the password never shows. */
static void shown_url(char *buf, size_t size, const char *text) {
  jb_sync_url *u = NULL;
  if (jb_sync_url_parse(&u, text) != JB_OK) {
    snprintf(buf, size, "(a URL that does not parse)");
    return;
  }
  char auth[300] = "";
  if (u->user || u->password)
    snprintf(auth, sizeof auth, "%s%s@", u->user ? u->user : "",
             u->password ? ":***" : "");
  if (u->master) {
    int n = snprintf(buf, size, "redis-sentinel://%s", auth);
    for (int i = 0; i < u->nsentinels && n >= 0 && (size_t)n < size; i++) {
      const char *h = u->sentinels[i].host;
      n += snprintf(buf + n, size - (size_t)n, "%s%s%s%s:%d", i ? "," : "",
                    strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "",
                    u->sentinels[i].port);
    }
    if (n >= 0 && (size_t)n < size)
      snprintf(buf + n, size - (size_t)n, "/%s/%d", u->master, u->db);
  } else if (u->path)
    snprintf(buf, size, "unix://%s%s%s%d", auth, u->path,
             u->db ? "?db=" : "", u->db);
  else
    snprintf(buf, size, "redis://%s%s%s%s:%d/%d", auth,
             strchr(u->host, ':') ? "[" : "", u->host,
             strchr(u->host, ':') ? "]" : "", u->port, u->db);
  if (u->path && u->db == 0) buf[strlen(buf) - 1] = '\0'; /* the "0" */
  jb_sync_url_free(u);
}


static void log_line(void *ctx, int level, const char *line) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char when[40];
  cli_format_time(when, sizeof when,
                  (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
  /* One write per line: the replicator's thread and the main one both log. */
  flockfile(stderr);
  fprintf(stderr, "%s sync: %s", when,
          level >= 2 ? "error: " : level == 1 ? "warning: " : "");
  cli_put_text(stderr, line);
  fputc('\n', stderr);
  funlockfile(stderr);
}

/* A connection made and closed before the daemon starts: a URL that can
 * never work (wrong password, no scripting) is refused at once rather than
 * retried forever. A server that is down is fine: the replicator waits. */
static int probe(const char *url, const char *ns) {
  jb_sync_options so;
  jb_sync_options_init(&so);
  so.url = url;
  so.ns = ns;
  jb_sync_conn *c = NULL;
  int st = jb_sync_connect(&c, &so);
  jb_sync_close(c);
  if (st == JB_EOFFLINE) {
    char line[1200];
    snprintf(line, sizeof line, "redis not reachable yet (%s): waiting for it",
             jb_errmsg());
    log_line(NULL, 1, line);
    return 0;
  }
  return st == JB_OK ? 0 : cli_fail(st);
}

int cmd_sync(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_sync, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  /* SIGINT and SIGTERM are blocked from here on, so that the replicator's
   * thread inherits the mask, and taken by sigwait below: the stop is a
   * plain return, never a handler racing the thread. One that comes while
   * starting stops the daemon as soon as it runs. */
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, &old);
  char *url = NULL, *ns = NULL;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) goto out;
  int given = 0;
  rc = cli_sync_resolve(&url, &ns, &given, b, &o);
  if (rc == 0 && url == NULL)
    rc = cli_cmd_usage(&cli_cmd_sync, "no Redis URL: give --redis URL or set "
                       "JOBBOARD_REDIS (board %s remembers none yet)",
                       jb_board_path(b));
  if (rc == 0) rc = probe(url, ns);
  if (rc == 0 && given) rc = cli_sync_remember(b, &o);
  jb_board_close(b);
  if (rc != 0) goto out;

  jb_sync_replicator_options ro;
  jb_sync_replicator_options_init(&ro);
  ro.conn.url = url;
  ro.conn.ns = ns;
  if (o.poll_ms) ro.poll_ms = o.poll_ms;
  if (o.keepalive_ms) ro.keepalive_ms = o.keepalive_ms;
  ro.log = log_line;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = o.durability;
  jb_sync_replicator *r = NULL;
  const char *dir = cli_board_dir(o.board);
  char line[1400], shown[600];
  shown_url(shown, sizeof shown, url);
  snprintf(line, sizeof line, "starting (pid %d): board %s, redis %s, "
           "namespace %s", (int)getpid(), dir, shown, ns);
  log_line(NULL, 0, line);
  int st = jb_sync_replicator_start(&r, dir, &bo, &ro);
  if (st != JB_OK) {
    rc = st == JB_ECLAIMED ? (cli_fail(st), CLI_EXIT_USAGE) : cli_fail(st);
    goto out;
  }
  int sig = 0;
  while (sigwait(&stop, &sig) != 0) {
  }
  snprintf(line, sizeof line, "stopping (%s)",
           sig == SIGINT ? "SIGINT" : "SIGTERM");
  log_line(NULL, 0, line);
  jb_sync_replicator_stop(r);
  log_line(NULL, 0, "stopped");
  rc = CLI_EXIT_OK;
out:
  /* After a clean stop they stay blocked: a second signal during the stop
   * must not turn exit 0 into a death by signal as the process ends. */
  if (rc != CLI_EXIT_OK) pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(url);
  free(ns);
  return rc;
}

/* ---------------------------------------------------------------- status */

static json_t *time_or_null(int64_t us) {
  if (us <= 0) return json_null();
  char t[40];
  cli_format_time(t, sizeof t, us);
  return json_string(t);
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void put_time(const char *label, int64_t us) {
  char t[40];
  cli_format_time(t, sizeof t, us);
  printf("%-14s %s (%.1f s ago)\n", label, t, (double)(now_us() - us) / 1e6);
}

static int print_status(const jb_sync_status *st, const char *url,
                        const char *ns) {
  if (url)
    printf("%-14s %s, namespace %s\n", "synced with:", url, ns);
  else
    printf("%-14s not synced\n", "synced with:");
  if (st->running)
    printf("%-14s running (pid %d), %s%s\n", "replicator:", st->pid,
           !st->connected ? "not connected"
           : st->server[0] ? "connected to " : "connected",
           st->connected ? st->server : "");
  else
    printf("%-14s not running\n", "replicator:");
  printf("%-14s %llu events, %.1f s\n", "lag:",
         (unsigned long long)st->lag_events, st->lag_seconds);
  printf("%-14s %llu jobs\n", "unpublished:",
         (unsigned long long)st->unpublished);
  printf("%-14s %llu jobs, pulled %llu changes\n", "published:",
         (unsigned long long)st->published, (unsigned long long)st->pulled);
  if (st->last_sync_us > 0)
    put_time("last sync:", st->last_sync_us);
  else
    printf("%-14s never\n", "last sync:");
  if (st->last_error[0]) {
    put_time("last error:", st->last_error_us);
    fputs("               ", stdout);
    cli_put_text(stdout, st->last_error);
    fputc('\n', stdout);
  } else {
    printf("%-14s none\n", "last error:");
  }
  return ferror(stdout) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

static int json_status(const jb_sync_status *st, const char *url,
                       const char *ns) {
  json_t *v = json_pack(
      "{s:b,s:o,s:o,s:b,s:o,s:b,s:o,s:I,s:f,s:I,s:I,s:I,s:o,s:o,s:o}",
      "synced",
      url != NULL, "url", url ? json_string(url) : json_null(), "namespace",
      url ? json_string(ns) : json_null(), "running", st->running, "pid",
      st->running ? json_integer(st->pid) : json_null(), "connected",
      st->connected, "server",
      st->connected && st->server[0] ? json_string(st->server) : json_null(),
      "lag_events", (json_int_t)st->lag_events, "lag_seconds",
      st->lag_seconds, "unpublished", (json_int_t)st->unpublished,
      "published", (json_int_t)st->published, "pulled",
      (json_int_t)st->pulled, "last_sync", time_or_null(st->last_sync_us),
      "last_error", st->last_error[0] ? json_string(st->last_error)
                                      : json_null(),
      "last_error_at",
      st->last_error[0] ? time_or_null(st->last_error_us) : json_null());
  return cli_json_print(v) != 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

int cmd_status(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_status, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_sync_status st;
  memset(&st, 0, sizeof st);
  char *url = NULL, *ns = NULL;
  int s = jb_sync_board_config(b, NULL, NULL, &url, &ns);
  if (s == JB_OK) s = jb_sync_status_read(&st, b);
  jb_board_close(b);
  if (s != JB_OK) {
    rc = cli_fail(s);
  } else {
    char shown[600];
    if (url) shown_url(shown, sizeof shown, url);
    else if (st.url[0]) snprintf(shown, sizeof shown, "%s", st.url);
    const char *u = url || st.url[0] ? shown : NULL;
    const char *n = url || !st.ns[0] ? ns : st.ns;
    rc = o.json ? json_status(&st, u, n) : print_status(&st, u, n);
  }
  free(url);
  free(ns);
  return rc;
}

#endif /* JB_WITH_REDIS */
