/*
 * deprecated.c - the names of 0.1 in jobboard_sync.h ("deprecated"), each
 * a call of what replaced it, kept for one release; tests/
 * test_deprecated.c calls them.
 */
#undef JB_NO_DEPRECATED
#include <jobboard_sync.h>

#include "sync/remote.h"

#include <string.h>

/* This file defines what it declares deprecated. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* 0.1 filled in every default (jb_sync_connect reads 0 as the default
 * too, so JB_SYNC_OPTIONS_INIT gives the same connection). */
void jb_sync_options_init(jb_sync_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->ns = JB_SYNC_NAMESPACE_DEFAULT;
  opts->connect_timeout_ms = 2000;
  opts->command_timeout_ms = 5000;
}

void jb_sync_replicator_options_init(jb_sync_replicator_options *o) {
  memset(o, 0, sizeof *o);
  jb_sync_options_init(&o->conn);
  o->conn.url = NULL;
  o->poll_ms = 1000;
  o->backoff_min_ms = 100;
  o->backoff_max_ms = 30000;
  o->keepalive_ms = JB_SYNC_KEEPALIVE_MS;
  o->verify_ms = 30000;
}

int jb_sync_replicator_status(jb_sync_replicator *r, jb_sync_status *st) {
  return jb_sync_replicator_status_read(st, r);
}

/* 0.1's callback takes its context first: adapted through this. */
typedef struct {
  void (*fn)(void *ctx, const char *uuid, const char *what);
  void *ctx;
} diff_adapter;

static void diff_adapt(const char *uuid, const char *what, void *payload) {
  diff_adapter *a = payload;
  a->fn(a->ctx, uuid, what);
}

int jb_sync_verify(jb_board *b, jb_sync_conn *c, int settle_ms,
                   jb_sync_verify_result *res,
                   void (*fn)(void *ctx, const char *uuid, const char *what),
                   void *ctx) {
  diff_adapter a = {fn, ctx};
  return jb_sync_compare(res, b, c, settle_ms, fn ? diff_adapt : NULL, &a);
}

int jb_sync_board_config(jb_board *b, const char *url, const char *ns,
                         char **url_out, char **ns_out) {
  return jb_sync_board_configure(url_out, ns_out, b, url, ns);
}

int jb_sync_board_resolve(jb_board *b, const char *url, const char *ns,
                          char **url_out, char **ns_out) {
  return jb_sync_board_lookup(url_out, ns_out, b, url, ns);
}
