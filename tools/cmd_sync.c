/*
 * cmd_sync.c - `jobboard sync` (the board's replicator as a foreground
 * daemon) and `jobboard status` (the sync state), on libjbsync's
 * replicator (include/jobboard_sync.h). Without Redis support both say so
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
    "Usage: jobboard sync [--redis URL] [--namespace NS] [--poll DURATION]\n"
    "                     [--keepalive DURATION] [--verify-every DURATION]\n"
    "                     [OPTIONS]\n"
    "       jobboard sync --detach [OPTIONS]\n"
    "\n"
    "Share the board through a Redis server, with other boards and with\n"
    "OpenStack taskflow's Redis jobboard (same keys, same encodings): run\n"
    "the board's replicator in the foreground until SIGTERM or SIGINT. It\n"
    "  - publishes the jobs posted on this board, oldest first (with their\n"
    "    owner when they were claimed before); from then on Redis decides\n"
    "    who owns them. A job completed before it was published never is;\n"
    "    one a worker of this host holds (`jobboard work`) waits until that\n"
    "    claim ends (retried, abandoned, the worker dead);\n"
    "  - brings the jobs posted elsewhere, their claims and their removals\n"
    "    into the board, so that list, wait, watch and claim-next see them\n"
    "    as local jobs (at once for our own peers, within --poll for\n"
    "    taskflow's, which announce nothing);\n"
    "  - keeps the claims `jobboard work` holds on published jobs alive in\n"
    "    Redis, so that a dead host's claims lapse by themselves;\n"
    "  - compares the board with Redis in full (every listing and owner)\n"
    "    at connect, when Redis's NS:sequence moved, every --verify-every\n"
    "    seconds, and as soon as a poll finds Redis lost its data; and\n"
    "    repairs what differs (`jobboard status` counts it).\n"
    "\n"
    "Order: a board lists and claims the jobs Redis decides by priority,\n"
    "then oldest first in Redis's posting order (NS:sequence, whoever\n"
    "posted them: taskflow, another board, this one); a job pulled later\n"
    "but posted earlier sorts before the ones posted after it. Jobs posted\n"
    "here and not yet published come after them, oldest first. taskflow's\n"
    "own clients list newest first inside a priority.\n"
    "\n"
    "Redis losing its data (a restart without persistence, FLUSHDB, the\n"
    "namespace's keys deleted) is detected by the epoch key NS:epoch, a\n"
    "random id the replicators write and each board remembers: a poll that\n"
    "finds it missing or changed (or NS:sequence lower than last read)\n"
    "compares in full at once, so the board lists what Redis lists within\n"
    "one poll interval. Then jobs published from this board that Redis no\n"
    "longer lists are published again; jobs of other posters it no longer\n"
    "lists leave the board with history outcome \"lost\" (not \"consumed\"),\n"
    "and come back when their poster publishes them again.\n"
    "While Redis cannot be reached, posts wait on the board and go out in\n"
    "order when it returns; the replicator reconnects by itself (back-off\n"
    "from 0.1 s to 30 s). One replicator runs per board: another `jobboard\n"
    "sync` on the same board stands by and takes over within a second when\n"
    "the first stops or dies; it says so in its log (\"standing by: another\n"
    "replicator (pid N) syncs board ...\", then \"taking over: ...\").\n"
    "\n"
    "Claims, abandons, consumes, trashes and extends of jobs Redis decides\n"
    "do not go through this daemon: each command asks Redis itself (see\n"
    "their --redis option), and fails with exit 6 when it cannot.\n"
    "\n"
    "The board remembers the URL and the namespace the first time they are\n"
    "given: after that `jobboard sync` alone, and every other command, use\n"
    "them. A later --redis replaces the URL (a server that moved); another\n"
    "namespace is refused (exit 2): the board's published jobs live under\n"
    "its own. The first sync given no namespace says on stderr the one it\n"
    "chose: \"using namespace taskflow (the default; --namespace to\n"
    "choose)\".\n"
    "\n"
    "--detach detaches the board from Redis, and changes nothing in Redis:\n"
    "the board forgets its URL, namespace, password (sync.credentials) and\n"
    "sync state, and keeps every job as a local one, in one write (a crash\n"
    "leaves it still synced, or detached in full):\n"
    "  - the jobs Redis decided (published here, or posted elsewhere) are\n"
    "    decided here from then on, after the jobs decided here already, in\n"
    "    the order they had; the other boards still see them in Redis and\n"
    "    may run them too;\n"
    "  - a claim held through Redis is released (the job is ready again,\n"
    "    event ABANDONED, no attempt counted), unless it is bound to a live\n"
    "    process of this host (`jobboard work`): that claim is kept, and the\n"
    "    worker finishes the job here;\n"
    "  - dead letters of such jobs stay dead letters (`dead requeue` takes\n"
    "    them here);\n"
    "  - the board records when and from what it was detached (`jobboard\n"
    "    status`: last detach).\n"
    "It prints one line saying what it did (--json: {\"detached\", \"url\",\n"
    "\"namespace\", \"jobs\", \"released\", \"kept\", \"dead_letters\"}). It is\n"
    "refused (exit 2, nothing changed) on a board that is not synced, and\n"
    "while a replicator runs on the board: stop it (SIGTERM) first.\n"
    "To change the board's namespace: stop its `jobboard sync`, run\n"
    "`jobboard sync --detach`, then `jobboard sync --namespace NEW`, which\n"
    "publishes the board's jobs under the new namespace.\n"
    "\n"
    "Passwords are kept out of the board's data file (which every user who\n"
    "may read the board can read): the board keeps the URL without its\n"
    "password (a user name stays in it), and the password goes to the file\n"
    "sync.credentials in the board directory, mode 0600, readable by the\n"
    "user who gave it only. The password used is, in this order: the one in\n"
    "--redis or $JOBBOARD_REDIS, $JOBBOARD_REDIS_PASSWORD (never written\n"
    "anywhere), the sync.credentials file. A board that an older release\n"
    "synced kept its URL with the password in it: it still works, and\n"
    "`jobboard sync` moves the password to sync.credentials at its start\n"
    "(see FILES in jobboard(1) for the copy LMDB may keep of the old bytes).\n"
    "A URL that does not parse, a wrong password, a server that wants one\n"
    "when none was found, and a server without Lua scripting are refused at\n"
    "once (exit 2); a server that is down is not: the replicator waits for\n"
    "it. With a redis-sentinel:// URL it asks the sentinels for the master\n"
    "at every reconnect, and drops a connection whose server answers as a\n"
    "replica (a failover), so it follows the master; a master name that no\n"
    "sentinel watches is refused (exit 2).\n"
    "\n"
    "Log: one line per event on stderr (connected, lost, published, errors):\n"
    "  2024-05-01T12:00:00.000000Z sync: connected to ...\n"
    "with \"warning: \" or \"error: \" before the message when it is one.\n"
    "`jobboard status` shows the state from any process.\n"
    "\n"
    "Options:\n"
    CLI_HELP_REDIS_OPTIONS
    "  --detach            detach the board from Redis (above), and exit\n"
    "  --poll DURATION     longest time before a change made by a taskflow\n"
    "                      peer is seen (fractions allowed; default 1)\n"
    "  --keepalive DURATION the expiry in Redis of claims bound to a process\n"
    "                      of this host (`jobboard work`), renewed every\n"
    "                      third of it while the process lives, by this\n"
    "                      daemon and by the process itself (default 30)\n"
    "  --verify-every DURATION\n"
    "                      compare the board with Redis in full this often\n"
    "                      and repair what differs (default 30; 0: only at\n"
    "                      connect, after posts and after a data loss). Cost:\n"
    "                      one HGETALL of the listings and a GET and PTTL per\n"
    "                      listing (docs/BENCHMARKS.md: 10,000 listings)\n"
    CLI_HELP_CREATE
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV_REDIS
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  0  also: stopped by SIGTERM or SIGINT (the replicator finished its\n"
    "     step, gave up the board's lock and closed the connection)\n"
    "  2  also: no Redis URL given or remembered, a bad URL or namespace,\n"
    "     a wrong password or none found, a sync.credentials file that\n"
    "     cannot be read or that others may read, another namespace than\n"
    "     the board's, or a jobboard built without Redis support; --detach:\n"
    "     the board is not synced, or a replicator runs on it\n"
    "\n"
    "Examples:\n"
    "  jobboard sync --board /srv/board --redis redis://redis.lan:6379/0 \\\n"
    "    --namespace fleet\n"
    "  jobboard sync --board /srv/board    # the remembered URL, namespace\n"
    "  JOBBOARD_REDIS_PASSWORD=s3cret jobboard sync --redis redis://r.lan\n"
    "  jobboard sync --redis unix:///run/redis/redis.sock --poll 0.2\n"
    "  jobboard sync --board /srv/board --detach   # then, another namespace:\n"
    "  jobboard sync --board /srv/board --redis redis://redis.lan --namespace b\n"
    "  jobboard sync --redis \\\n"
    "    redis-sentinel://:s3cret@s1.lan,s2.lan,s3.lan/mymaster/0\n",
    CLI_O_REDIS | CLI_O_SYNC | CLI_O_CREATE, 0, 0, ""};

const cli_command cli_cmd_status = {
    "status", "show the board's Redis sync state",
    "Usage: jobboard status [--verify] [OPTIONS]\n"
    "\n"
    "Show the board's Redis sync state, as its replicator (`jobboard sync`,\n"
    "or a replicator thread in a program) last recorded it, with the counts\n"
    "of jobs waiting taken from the board now:\n"
    "  synced with   the Redis URL and namespace the board remembers, or\n"
    "                'not synced'; ':***@' in the URL says that a password\n"
    "                is kept in the board's sync.credentials file, which\n"
    "                status never reads (any user who may open the board\n"
    "                can run it)\n"
    "  replicator    running (its pid) and connected to Redis (to which\n"
    "                server: for a redis-sentinel:// URL, the master the\n"
    "                sentinels named) or not, or 'not running'\n"
    "  lag           change-log events not yet handled, and the age of the\n"
    "                oldest job waiting to be published\n"
    "  unpublished   jobs posted here and not yet published\n"
    "  published     jobs published, and remote changes pulled in, since\n"
    "                the replicator started\n"
    "  last sync     when the replicator last finished a pass\n"
    "  compared      when the board and Redis were last compared in full,\n"
    "                why (connect, posts, schedule, data loss), how\n"
    "                long it took, how many jobs it changed here, and the\n"
    "                schedule (`sync --verify-every`)\n"
    "  repaired      jobs that comparisons on schedule or after a data loss\n"
    "                found different and repaired, since the replicator\n"
    "                started (differences its notices and polls missed)\n"
    "  data losses   how many times Redis was found to have lost its data,\n"
    "                and when it was last\n"
    "  last error    its last error and when (or 'none')\n"
    "  last detach   a board not synced now that was: when it was\n"
    "                detached (`sync --detach`), from which URL and\n"
    "                namespace, and what it did\n"
    "With --json, one object: {\"synced\", \"url\", \"namespace\", \"running\",\n"
    "\"pid\", \"connected\", \"server\", \"lag_events\", \"lag_seconds\",\n"
    "\"unpublished\", \"published\", \"pulled\", \"last_sync\", \"last_compared\",\n"
    "\"last_compared_why\", \"last_compared_changed\",\n"
    "\"last_compared_seconds\" (how long it took), \"verify_every\" (seconds,\n"
    "0: none), \"repaired\", \"data_losses\", \"last_data_loss\",\n"
    "\"last_error\", \"last_error_at\", \"last_detach\"} (times in ISO-8601\n"
    "UTC; null when not synced, never or none), and with --verify\n"
    "\"verify\": {\"redis_listed\",\n"
    "\"board_remote\", \"missing_here\", \"extra_here\", \"owner_differs\",\n"
    "\"differences\": [{\"uuid\", \"what\"}...]}.\n"
    "\n"
    "--verify compares the board with Redis now (the remembered URL and\n"
    "namespace): every job Redis lists and its owner against the board's\n"
    "Redis-decided jobs and their claims. A job that differs is read again\n"
    "on both sides after two of the replicator's polls (at least a second:\n"
    "a change under way is not a divergence);\n"
    "those that still differ are printed, one line each:\n"
    "  differs: UUID: WHAT\n"
    "and the exit status is 10. It writes nothing: the replicator repairs\n"
    "(at its next comparison in full). Without a replicator running, the\n"
    "board shows what Redis held when it last ran.\n"
    "\n"
    "Options:\n"
    "  --verify            compare the board with Redis now (above)\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "  2  also: a jobboard built without Redis support; --verify on a board\n"
    "     that is not synced\n"
    "  6  --verify: Redis cannot be reached\n"
    "  10 --verify: the board and Redis differ (each difference printed)\n"
    "\n"
    "Examples:\n"
    "  jobboard status --board /srv/board\n"
    "  jobboard status --board /srv/board --verify\n"
    "  jobboard status --json | python3 -c \\\n"
    "    'import json,sys; print(json.load(sys.stdin)[\"unpublished\"])'\n",
    CLI_O_VERIFY, 0, 0, ""};

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

#include "jobboard_sync.h"

#include <pthread.h>

/* ------------------------------------------------------------------ sync */

/* The URL for a human: the password as "***". Built from the parsed URL,
 * so whatever the spelling the password never shows. `redacted`: the text
 * has no password but "***" (jb_sync_status), so one that does not parse
 * (a user whose password is not in the board: "redis://alice@h") is shown
 * as it is. */
static void shown_url(char *buf, size_t size, const char *text,
                      bool redacted) {
  jb_sync_url *u = NULL;
  if (jb_sync_url_parse(&u, text) != JB_OK) {
    snprintf(buf, size, "%s", redacted ? text : "(a URL that does not parse)");
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
static int connect_to(jb_sync_conn **c, const char *url, const char *ns) {
  jb_sync_options so;
  so = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  so.url = url;
  so.ns = ns;
  *c = NULL;
  return jb_sync_connect(c, &so);
}

static int probe(const char *url, const char *ns) {
  jb_sync_conn *c = NULL;
  int st = connect_to(&c, url, ns);
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
  if (o.detach) return cli_sync_detach(&cli_cmd_sync, &o);
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
  if ((rc = cli_open(&b, &o, CLI_OPEN_WAIT)) != 0) goto out;
  int given = 0;
  rc = cli_sync_resolve(&url, &ns, &given, b, &o);
  if (rc == 0 && url == NULL)
    rc = cli_cmd_usage(&cli_cmd_sync, "no Redis URL: give --redis URL or set "
                       "JOBBOARD_REDIS (board %s remembers none yet)",
                       jb_board_path(b));
  if (rc == 0) rc = probe(url, ns);
  if (rc == 0) cli_sync_say_namespace(b, &o, ns);
  if (rc == 0 && given) rc = cli_sync_remember(b, &o);
  jb_board_close(b);
  if (rc != 0) goto out;

  jb_sync_replicator_options ro;
  ro = (jb_sync_replicator_options)JB_SYNC_REPLICATOR_OPTIONS_INIT;
  /* What was given, not `url`: that one holds the password found for it,
   * maybe $JOBBOARD_REDIS_PASSWORD's, which must not be remembered. NULL:
   * the board's own, as just resolved. */
  ro.conn.url = cli_sync_given_url(&o);
  ro.conn.ns = ns;
  if (o.poll_ms) ro.poll_ms = o.poll_ms;
  if (o.keepalive_ms) ro.keepalive_ms = o.keepalive_ms;
  if (o.verify_ms) ro.verify_ms = o.verify_ms;
  ro.log = log_line;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = o.durability;
  if (cli_flush_interval(&bo.flush_interval_ms) != 0) return CLI_EXIT_USAGE;
  jb_sync_replicator *r = NULL;
  const char *dir = cli_board_dir(o.board);
  char line[1400], shown[600];
  shown_url(shown, sizeof shown, url, false);
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
  char every[48], d[40];
  if (st->verify_ms > 0)
    snprintf(every, sizeof every, "every %s",
             cli_format_duration(d, sizeof d, st->verify_ms));
  else
    snprintf(every, sizeof every, "not on schedule");
  if (st->last_full_us > 0) {
    put_time("compared:", st->last_full_us);
    printf("%-14s in full (%s) in %.1f ms: %llu jobs changed here; %s\n",
           "", st->last_full_why[0] ? st->last_full_why : "?",
           st->last_full_took_us / 1e3,
           (unsigned long long)st->last_full_changed, every);
  } else {
    printf("%-14s never in full; %s\n", "compared:", every);
  }
  printf("%-14s %llu jobs\n", "repaired:", (unsigned long long)st->repaired);
  if (st->last_data_loss_us > 0) {
    char t[40];
    cli_format_time(t, sizeof t, st->last_data_loss_us);
    printf("%-14s %llu, the last at %s\n", "data losses:",
           (unsigned long long)st->data_losses, t);
  } else {
    printf("%-14s none seen\n", "data losses:");
  }
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
                       const char *ns, const char *detached, json_t *verify) {
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
  if (v == NULL) {
    json_decref(verify);
    return cli_json_print(v) != 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
  }
  json_object_set_new(v, "last_compared", time_or_null(st->last_full_us));
  json_object_set_new(v, "last_compared_why",
                      st->last_full_us > 0 && st->last_full_why[0]
                          ? json_string(st->last_full_why)
                          : json_null());
  json_object_set_new(v, "last_compared_changed",
                      json_integer((json_int_t)st->last_full_changed));
  json_object_set_new(v, "last_compared_seconds",
                      json_real(st->last_full_took_us / 1e6));
  json_object_set_new(v, "verify_every",
                      json_real(st->verify_ms > 0 ? st->verify_ms / 1e3 : 0));
  json_object_set_new(v, "repaired", json_integer((json_int_t)st->repaired));
  json_object_set_new(v, "data_losses",
                      json_integer((json_int_t)st->data_losses));
  json_object_set_new(v, "last_data_loss",
                      time_or_null(st->last_data_loss_us));
  json_object_set_new(v, "last_detach",
                      detached ? json_string(detached) : json_null());
  if (verify) json_object_set_new(v, "verify", verify);
  return cli_json_print(v) != 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* status --verify: each difference, as a line or into a JSON array. */
typedef struct {
  bool json;
  json_t *list;
} diff_out;

static void print_diff(const char *uuid, const char *what, void *payload) {
  diff_out *d = payload;
  if (d->json) {
    json_array_append_new(d->list, json_pack("{s:s,s:s}", "uuid", uuid,
                                             "what", what));
    return;
  }
  printf("differs: %s: %s\n", uuid, what);
}

/* Compare board `b` with Redis now; *differs set when they do. */
static int verify_now(jb_board *b, const char *url, const char *ns,
                      int settle_ms, bool json, json_t **out,
                      bool *differs) {
  *out = NULL;
  *differs = false;
  jb_sync_conn *c = NULL;
  int s = connect_to(&c, url, ns);
  jb_sync_verify_result vr;
  diff_out d = {json, json ? json_array() : NULL};
  if (s == JB_OK) s = jb_sync_compare(&vr, b, c, settle_ms, print_diff, &d);
  jb_sync_close(c);
  if (s != JB_OK) {
    json_decref(d.list);
    return cli_fail(s);
  }
  *differs = vr.missing_here + vr.extra_here + vr.owner_differs > 0;
  if (json) {
    *out = json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "redis_listed",
                     (json_int_t)vr.redis_listed, "board_remote",
                     (json_int_t)vr.board_remote, "missing_here",
                     (json_int_t)vr.missing_here, "extra_here",
                     (json_int_t)vr.extra_here, "owner_differs",
                     (json_int_t)vr.owner_differs, "differences", d.list);
  } else {
    printf("%-14s redis lists %llu jobs, the board holds %llu it decides: ",
           "verify:", (unsigned long long)vr.redis_listed,
           (unsigned long long)vr.board_remote);
    if (*differs)
      printf("%llu missing here, %llu not in redis, %llu with another "
             "owner\n", (unsigned long long)vr.missing_here,
             (unsigned long long)vr.extra_here,
             (unsigned long long)vr.owner_differs);
    else
      printf("the same\n");
  }
  return 0;
}

int cmd_status(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_status, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  jb_sync_status st;
  memset(&st, 0, sizeof st);
  /* The board's URL as jb_sync_status_read gives it: password shown as
   * "***", and the credentials file never read, so that any user who may
   * open the board sees its state. */
  int s = jb_sync_status_read(&st, b);
  if (s != JB_OK) {
    jb_board_close(b);
    return cli_fail(s);
  }
  char shown[600];
  if (st.url[0]) shown_url(shown, sizeof shown, st.url, true);
  const char *u = st.url[0] ? shown : NULL;
  const char *n = st.ns[0] ? st.ns : JB_SYNC_NAMESPACE_DEFAULT;
  json_t *verify = NULL;
  bool differs = false;
  /* A board not synced now may have been: its last detach. */
  char *det = u ? NULL : cli_sync_last_detach(b);
  if (!o.json) rc = print_status(&st, u, n);
  if (!o.json && rc == 0 && det) printf("%-14s %s\n", "last detach:", det);
  if (rc == 0 && o.verify) {
    /* Only --verify connects: the URL with its password (sync.credentials
     * or JOBBOARD_REDIS_PASSWORD), nothing written. */
    char *url = NULL, *ns = NULL;
    s = jb_sync_board_lookup(&url, &ns, b, NULL, NULL);
    if (s != JB_OK) {
      rc = cli_fail(s);
    } else if (url == NULL) {
      rc = cli_cmd_usage(&cli_cmd_status, "--verify: board %s is not synced "
                         "with any redis", jb_board_path(b));
    } else {
      /* A change a peer made a moment ago reaches the board at the
       * replicator's next poll: a difference is read again after two
       * polls (at least a second). */
      int settle = st.running && st.poll_ms > 0 ? 2 * st.poll_ms + 500 : 1000;
      if (settle < 1000) settle = 1000;
      if (settle > 60000) settle = 60000;
      fflush(stdout);
      rc = verify_now(b, url, ns, settle, o.json, &verify, &differs);
    }
    free(url);
    free(ns);
  }
  jb_board_close(b);
  if (o.json) {
    /* The status also when --verify could not compare (its exit stays). */
    int jrc = json_status(&st, u, n, det, verify);
    if (rc == 0) rc = jrc;
  } else {
    json_decref(verify);
  }
  free(det);
  if (rc == 0 && differs) rc = CLI_EXIT_DIFFERS;
  return rc;
}

#endif /* JB_WITH_REDIS */
