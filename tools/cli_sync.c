/*
 * cli_sync.c - the CLI's side of the Redis sync (libjbsync): which Redis
 * and namespace a command uses, connecting the board handle to it for the
 * jobs Redis decides, and the message of an operation that needed Redis
 * and could not reach it.
 *
 * Built in every configuration: without hiredis (configure found none, or
 * --without-redis) the Redis options are refused with one clear message,
 * and nothing else changes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef JB_WITH_REDIS

int cli_sync_check(const cli_command *cmd, const cli_opts *o) {
  const char *env = getenv("JOBBOARD_REDIS");
  const char *what = o->redis ? "--redis" : o->ns ? "--namespace"
                     : (cmd->options & CLI_O_REDIS) && env && env[0]
                         ? "$JOBBOARD_REDIS"
                         : NULL;
  if (what == NULL) return 0;
  cli_usage_error("%s: %s: this jobboard was built without Redis support: "
                  "configure --with-redis", cmd->name, what);
  return CLI_EXIT_USAGE;
}

int cli_sync_join(jb_board *b, const cli_opts *o) {
  (void)b;
  (void)o;
  return 0;
}

void cli_sync_end(void) {}

const char *cli_sync_offline_note(void) { return ""; }

int cli_sync_retry(jb_board *b) {
  (void)b;
  return 0;
}

int cli_sync_pending(void) { return 0; }

int cli_sync_connected(void) { return 0; }

#else /* JB_WITH_REDIS */

#include "jobboard_sync.h"

/* Connect and command timeouts of a command's connection: short, so that
 * an unreachable server costs a command little. */
#define JOIN_CONNECT_MS 2000
#define JOIN_COMMAND_MS 5000
/* cli_sync_retry tries again at most this often. */
#define RETRY_EVERY_MS 5000

/* One board per command, so one connection per process. */
static struct {
  jb_sync_conn *conn;
  char *url;            /* the URL in use (NULL: none known) */
  char *ns;
  char note[1200];      /* why Redis is not usable ("" when it is) */
  int64_t last_try_ms;  /* CLOCK_MONOTONIC of the last connect */
} sy;

int cli_sync_check(const cli_command *cmd, const cli_opts *o) {
  (void)cmd;
  (void)o;
  return 0;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && v[0] ? v : NULL;
}

/* The exit code of a configuration error: another namespace than the
 * board's (JB_ECLAIMED from jb_sync_board_configure) is a usage error like a
 * bad URL, not "already claimed". */
static int config_fail(int st) {
  return st == JB_ECLAIMED ? (cli_fail(st), CLI_EXIT_USAGE) : cli_fail(st);
}

/* Connect to sy.url / sy.ns and attach `b`. JB_EOFFLINE leaves the reason
 * in sy.note; another failure is returned with its message. */
static int connect_attach(jb_board *b) {
  jb_sync_options so;
  so = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  so.url = sy.url;
  so.ns = sy.ns;
  so.connect_timeout_ms = JOIN_CONNECT_MS;
  so.command_timeout_ms = JOIN_COMMAND_MS;
  sy.last_try_ms = cli_mono_ms();
  int st = jb_sync_connect(&sy.conn, &so);
  if (st == JB_OK && (st = jb_sync_attach(b, sy.conn)) != JB_OK) {
    jb_sync_close(sy.conn);
    sy.conn = NULL;
  }
  if (st == JB_OK)
    sy.note[0] = '\0';
  else if (st == JB_EOFFLINE)
    snprintf(sy.note, sizeof sy.note, "redis could not be used: %s",
             jb_errmsg());
  return st;
}

int cli_sync_resolve(char **url, char **ns, int *given, jb_board *b,
                     const cli_opts *o) {
  const char *want_url = cli_sync_given_url(o);
  const char *want_ns = o->ns ? o->ns : env("JOBBOARD_NAMESPACE");
  *given = want_url != NULL || want_ns != NULL;
  /* Nothing is written here: a URL is remembered only once it worked
   * (cli_sync_remember). Another namespace than the board's is the
   * board's own refusal, which names both. */
  int st = jb_sync_board_lookup(url, ns, b, want_url, want_ns);
  return st == JB_OK ? 0 : config_fail(st);
}

const char *cli_sync_given_url(const cli_opts *o) {
  return o->redis ? o->redis : env("JOBBOARD_REDIS");
}

int cli_sync_remember(jb_board *b, const cli_opts *o) {
  char *u = NULL, *n = NULL;
  int st = jb_sync_board_configure(&u, &n, b, cli_sync_given_url(o),
                                o->ns ? o->ns : env("JOBBOARD_NAMESPACE"));
  free(u);
  free(n);
  return st == JB_OK ? 0 : config_fail(st);
}

int cli_sync_join(jb_board *b, const cli_opts *o) {
  int given = 0;
  int rc = cli_sync_resolve(&sy.url, &sy.ns, &given, b, o);
  if (rc != 0) return rc;
  if (sy.url == NULL) {
    snprintf(sy.note, sizeof sy.note, "no Redis URL is known for board %s: "
             "give --redis URL or set JOBBOARD_REDIS", jb_board_path(b));
    return 0;
  }
  int st = connect_attach(b);
  if (st != JB_OK && st != JB_EOFFLINE) return cli_fail(st);
  return given ? cli_sync_remember(b, o) : 0;
}

void cli_sync_end(void) {
  jb_sync_close(sy.conn);
  free(sy.url);
  free(sy.ns);
  memset(&sy, 0, sizeof sy);
}

const char *cli_sync_offline_note(void) { return sy.note; }

int cli_sync_pending(void) { return sy.url != NULL && sy.conn == NULL; }

int cli_sync_connected(void) { return sy.conn != NULL; }

int cli_sync_retry(jb_board *b) {
  if (!cli_sync_pending()) return sy.conn != NULL;
  if (cli_mono_ms() - sy.last_try_ms < RETRY_EVERY_MS) return 0;
  return connect_attach(b) == JB_OK;
}

#endif /* JB_WITH_REDIS */
