/*
 * config.c - which Redis and namespace a board is synced with
 * (jb_sync_board_config): kept in the board's settings "sync.url" and
 * "sync.namespace" (core/remote_hook.h), so that the CLI and the
 * replicator find them again without being told.
 *
 * The namespace is fixed the first time a URL is known: the board's
 * Redis-decided jobs live under it, so another one would make them
 * unreachable. The URL may change (a server moves). Both are checked
 * before anything is written, so a bad URL or namespace leaves the board
 * as it was.
 */
#include "jobboard_sync.h"

#include "../core/errmsg.h"
#include "../core/remote_hook.h"

#include <stdlib.h>
#include <string.h>

#define KEY_URL "sync.url"
#define KEY_NS "sync.namespace"
/* Settings hold up to 4096 bytes. */
#define VALUE_MAX 4096

/* Read setting `key` into a new string (*out NULL when it is not set). */
static int get(char **out, jb_board *b, const char *key) {
  *out = NULL;
  char buf[VALUE_MAX + 1];
  size_t len = 0;
  int rc = jb__board_setting_get(b, key, buf, sizeof buf, &len);
  if (rc == JB_ENOTFOUND) return JB_OK;
  if (rc != JB_OK) return rc;
  if ((*out = strdup(buf)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory reading the board's %s", key);
  return JB_OK;
}

static int refuse_namespace(const char *board, const char *given,
                            const char *kept) {
  return jb__err(JB_ECLAIMED, "board %s is synced with redis namespace "
                 "\"%s\", not \"%s\": one board has one namespace (use "
                 "another board for \"%s\")", board, kept, given, given);
}

int jb_sync_board_config(jb_board *b, const char *url, const char *ns,
                         char **url_out, char **ns_out) {
  if (url_out) *url_out = NULL;
  if (ns_out) *ns_out = NULL;
  if (b == NULL || url_out == NULL || ns_out == NULL)
    return jb__err(JB_EINVAL, "jb_sync_board_config: NULL board or output");
  /* Checked before anything is read or written. */
  if (url != NULL) {
    jb_sync_url *parsed = NULL;
    int rc = jb_sync_url_parse(&parsed, url);
    jb_sync_url_free(parsed);
    if (rc != JB_OK) return rc;
  }
  if (ns != NULL) {
    int rc = jb_sync_namespace_check(ns);
    if (rc != JB_OK) return rc;
  }
  char *kept_url = NULL, *kept_ns = NULL;
  int rc = get(&kept_url, b, KEY_URL);
  if (rc == JB_OK) rc = get(&kept_ns, b, KEY_NS);
  if (rc != JB_OK) goto out;
  if (ns != NULL && kept_ns != NULL && strcmp(ns, kept_ns) != 0) {
    rc = refuse_namespace(jb_board_path(b), ns, kept_ns);
    goto out;
  }
  const char *use_url = url ? url : kept_url;
  const char *use_ns = ns ? ns : kept_ns ? kept_ns : JB_SYNC_NAMESPACE_DEFAULT;
  if (use_url != NULL) {
    /* Synced from now on: the namespace is fixed first (claim: another
     * process may be fixing another one at this very moment), then the
     * URL. */
    if (kept_ns == NULL) {
      char cur[JB_SYNC_NAMESPACE_MAX + 1] = "";
      rc = jb__board_setting_claim(b, KEY_NS, use_ns, cur, sizeof cur);
      if (rc == JB_ECLAIMED) rc = refuse_namespace(jb_board_path(b), use_ns, cur);
      if (rc != JB_OK) goto out;
    }
    if (url != NULL && (kept_url == NULL || strcmp(url, kept_url) != 0) &&
        (rc = jb__board_setting_set(b, KEY_URL, url)) != JB_OK)
      goto out;
    if ((*url_out = strdup(use_url)) == NULL) {
      rc = jb__err(JB_ENOMEM, "out of memory for the redis URL");
      goto out;
    }
  }
  if ((*ns_out = strdup(use_ns)) == NULL) {
    free(*url_out);
    *url_out = NULL;
    rc = jb__err(JB_ENOMEM, "out of memory for the redis namespace");
  }
out:
  free(kept_url);
  free(kept_ns);
  return rc;
}
