/*
 * config.c - which Redis and namespace a board is synced with
 * (jb_sync_board_lookup, jb_sync_board_configure): kept in the board's
 * settings "sync.url" and "sync.namespace" (core/sync_hook.h), so that
 * the CLI and the replicator find them again without being told.
 *
 * The namespace is fixed the first time a URL is known: the board's
 * Redis-decided jobs live under it, so another one would make them
 * unreachable. The URL may change (a server moves). Both are checked
 * before anything is written, so a bad URL or namespace leaves the board
 * as it was.
 *
 * The password never goes into the board: "sync.url"
 * holds the URL without it (its user kept), and the password goes to the
 * board directory's credentials file (sync/credentials.c). The URL to
 * connect with gets it back from, in this order: the URL given by the
 * caller, $JOBBOARD_REDIS_PASSWORD, the credentials file, and last a
 * password that an older release kept in "sync.url" itself. Such a board
 * is moved to the new form by the next jb_sync_board_configure (the
 * replicator's start runs it): the password is written to the file first,
 * then the setting rewritten without it. See docs/DESIGN-NOTES.md
 * "Credentials".
 */
#include "jobboard_sync.h"

#include "conn.h"

#include "core/sync_hook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_URL "sync.url"
#define KEY_NS JB_SETTING_SYNC_NAMESPACE
#define ENV_PASSWORD "JOBBOARD_REDIS_PASSWORD"
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
                 "another board for \"%s\", or change it: stop the board's "
                 "`jobboard sync`, `jobboard sync --detach`, then sync with "
                 "the new one)", board, kept, given, given);
}

/* The URL to connect with: `url` with its password, which is its own when
 * it has one and own_first (a URL the caller gave), else
 * $JOBBOARD_REDIS_PASSWORD, else the board's credentials file, else its
 * own (a password an older release kept in the board). */
static int complete(char **out, jb_board *b, const char *url, bool own_first) {
  *out = NULL;
  char *bare = NULL, *pw = NULL;
  int rc = jb__sync_url_split(&bare, &pw, url);
  if (rc != JB_OK) return rc;
  if (pw == NULL || !own_first) {
    const char *env = getenv(ENV_PASSWORD);
    char *found = NULL;
    if (env != NULL && env[0] != '\0') {
      if ((found = strdup(env)) == NULL)
        rc = jb__err(JB_ENOMEM, "out of memory for the redis password");
    } else {
      rc = jb__sync_cred_read(&found, jb_board_path(b));
    }
    if (found != NULL) {
      free(pw);
      pw = found;
    }
  }
  if (rc == JB_OK && pw == NULL) {
    jb_sync_url *u = NULL;
    rc = jb__sync_url_parse_loose(&u, bare);
    if (rc == JB_OK && u->user != NULL)
      rc = jb__err(JB_EINVAL, "redis URL \"%s\": user \"%s\" needs a "
                   "password, and none was found: not in the URL, nor in "
                   "$" ENV_PASSWORD ", nor in %s/" JB__SYNC_CRED_FILE, bare,
                   u->user, jb_board_path(b));
    jb_sync_url_free(u);
    if (rc == JB_OK && (*out = strdup(bare)) == NULL)
      rc = jb__err(JB_ENOMEM, "out of memory for the redis URL");
  } else if (rc == JB_OK) {
    rc = jb__sync_url_add_password(out, bare, pw);
  }
  free(bare);
  free(pw);
  return rc;
}

/* What the caller gives, checked before anything is read or written. */
static int check_given(const char *url, const char *ns) {
  if (url != NULL) {
    jb_sync_url *parsed = NULL;
    int rc = jb__sync_url_parse_loose(&parsed, url);
    jb_sync_url_free(parsed);
    if (rc != JB_OK) return rc;
  }
  return ns != NULL ? jb_sync_namespace_check(ns) : JB_OK;
}

/* The board's URL and namespace settings, and the refusal of another
 * namespace than the kept one. */
static int read_kept(char **kept_url, char **kept_ns, jb_board *b,
                     const char *ns) {
  int rc = get(kept_url, b, KEY_URL);
  if (rc == JB_OK) rc = get(kept_ns, b, KEY_NS);
  if (rc == JB_OK && ns != NULL && *kept_ns != NULL && strcmp(ns, *kept_ns) != 0)
    rc = refuse_namespace(jb_board_path(b), ns, *kept_ns);
  return rc;
}

/* The outputs: the URL to connect with (url_src NULL: none), the
 * namespace. */
static int outputs(char **url_out, char **ns_out, jb_board *b,
                   const char *url_src, bool own_first, const char *use_ns) {
  int rc = JB_OK;
  if (url_src != NULL && (rc = complete(url_out, b, url_src, own_first)) != JB_OK)
    return rc;
  if ((*ns_out = strdup(use_ns)) == NULL) {
    free(*url_out);
    *url_out = NULL;
    rc = jb__err(JB_ENOMEM, "out of memory for the redis namespace");
  }
  return rc;
}

/* What both entry points do first: check the arguments and the given
 * values, read the kept ones (refusing another namespace). */
static int begin(char **kept_url, char **kept_ns, const char *fn, jb_board *b,
                 const char *url, const char *ns, char **url_out,
                 char **ns_out) {
  *kept_url = *kept_ns = NULL;
  if (url_out) *url_out = NULL;
  if (ns_out) *ns_out = NULL;
  if (b == NULL || url_out == NULL || ns_out == NULL)
    return jb__err(JB_EINVAL, "%s: NULL board or output", fn);
  int rc = check_given(url, ns);
  return rc == JB_OK ? read_kept(kept_url, kept_ns, b, ns) : rc;
}

int jb_sync_board_lookup(char **url_out, char **ns_out, jb_board *b,
                         const char *url, const char *ns) {
  char *kept_url, *kept_ns;
  int rc = begin(&kept_url, &kept_ns, "jb_sync_board_lookup", b, url, ns,
                 url_out, ns_out);
  if (rc == JB_OK)
    rc = outputs(url_out, ns_out, b, url ? url : kept_url, url != NULL,
                 ns ? ns : kept_ns ? kept_ns : JB_SYNC_NAMESPACE_DEFAULT);
  free(kept_url);
  free(kept_ns);
  return rc;
}

/* Who may keep the board's password: the owner of its data file (the
 * board's owner), or root on that owner's behalf; *owner is the user the
 * credentials file must belong to, so that the board's own daemon can
 * read it. Anyone else uses a password without keeping it (a file of
 * theirs would lock the owner out). */
static bool may_keep(jb_board *b, uid_t *owner) {
  char *p = NULL;
  struct stat st;
  *owner = geteuid();
  if (asprintf(&p, "%s/data.mdb", jb_board_path(b)) < 0) return false;
  int r = stat(p, &st);
  free(p);
  if (r != 0) return true;
  *owner = st.st_uid;
  return geteuid() == st.st_uid || geteuid() == 0;
}

/* Keep `password` in the board's credentials file, unless it holds it
 * already, or it is another user's (which is left as it is: that user's
 * daemon reads it; this process uses the password it was given), or this
 * process may not keep it (may_keep). */
static int keep_password(jb_board *b, const char *password) {
  const char *dir = jb_board_path(b);
  bool mine = false;
  uid_t owner;
  if (!may_keep(b, &owner)) return JB_OK;
  if (jb__sync_cred_exists(dir, &mine)) {
    if (!mine && geteuid() != 0) return JB_OK;
    char *cur = NULL;
    bool same = jb__sync_cred_read(&cur, dir) == JB_OK && cur != NULL &&
                strcmp(cur, password) == 0;
    free(cur);
    if (same) return JB_OK;
  }
  return jb__sync_cred_write(dir, password, owner);
}

int jb_sync_board_configure(char **url_out, char **ns_out, jb_board *b,
                            const char *url, const char *ns) {
  char *kept_url, *kept_ns, *bare = NULL, *pw = NULL;
  int rc = begin(&kept_url, &kept_ns, "jb_sync_board_configure", b, url, ns,
                 url_out, ns_out);
  if (rc != JB_OK) goto out;
  const char *use_url = url ? url : kept_url;
  const char *use_ns = ns ? ns : kept_ns ? kept_ns : JB_SYNC_NAMESPACE_DEFAULT;
  if (use_url != NULL) {
    /* A URL that cannot be completed (a user and no password anywhere, a
     * credentials file that cannot be used) is refused before anything is
     * written. */
    char *check = NULL;
    rc = complete(&check, b, use_url, url != NULL);
    free(check);
    if (rc != JB_OK) goto out;
    /* Synced from now on: the namespace is fixed first (claim: another
     * process may be fixing another one at this very moment), then the
     * URL. */
    if (kept_ns == NULL) {
      char cur[JB_SYNC_NAMESPACE_MAX + 1] = "";
      rc = jb__board_setting_claim(b, KEY_NS, use_ns, cur, sizeof cur);
      if (rc == JB_ECLAIMED) rc = refuse_namespace(jb_board_path(b), use_ns, cur);
      if (rc != JB_OK) goto out;
    }
    /* The password goes to the credentials file before the URL is
     * written without it: a crash in between leaves it in both places,
     * never in none. A kept URL with a password (an older release's) is
     * moved the same way, whether a new URL is given or not; its password
     * is kept only when no credentials file exists (the file's wins). */
    uid_t owner;
    bool keep = may_keep(b, &owner);
    if (keep && kept_url != NULL && jb__sync_url_has_password(kept_url)) {
      /* Moved only by the board's owner (or root, giving the file to the
       * owner): another user's file would lock the owner out. */
      char *kept_bare = NULL, *kept_pw = NULL;
      rc = jb__sync_url_split(&kept_bare, &kept_pw, kept_url);
      if (rc == JB_OK && !jb__sync_cred_exists(jb_board_path(b), NULL))
        rc = jb__sync_cred_write(jb_board_path(b), kept_pw, owner);
      free(kept_pw);
      if (rc == JB_OK && url == NULL &&
          (rc = jb__board_setting_set(b, KEY_URL, kept_bare)) == JB_OK) {
        free(kept_url);
        kept_url = kept_bare;
        kept_bare = NULL;
        use_url = kept_url;
      }
      free(kept_bare);
      if (rc != JB_OK) goto out;
    }
    if (url != NULL) {
      if ((rc = jb__sync_url_split(&bare, &pw, url)) != JB_OK) goto out;
      /* The kept password goes to the kept URL's server: a user who may
       * not keep the board's password must not point the board elsewhere
       * (its owner's daemon would send the password there). */
      bool others = false;
      if (jb__sync_cred_exists(jb_board_path(b), &others)) others = !others;
      char *kept_bare = NULL, *kept_pw = NULL;
      if (kept_url != NULL &&
          jb__sync_url_split(&kept_bare, &kept_pw, kept_url) != JB_OK)
        kept_bare = NULL;
      bool moved = kept_bare == NULL || strcmp(bare, kept_bare) != 0;
      free(kept_bare);
      free(kept_pw);
      if (kept_url != NULL && moved && (!keep || (others && geteuid() != 0))) {
        char shown[600];
        jb__sync_url_redact(shown, sizeof shown, kept_url);
        rc = jb__err(JB_EINVAL, "board %s keeps the redis password of its "
                     "owner for %s: only the board's owner (or root) may "
                     "point it at another server (its daemon would send "
                     "that password there); give the URL it keeps, or ask "
                     "the owner", jb_board_path(b), shown);
        goto out;
      }
      if (pw != NULL && (rc = keep_password(b, pw)) != JB_OK) goto out;
      if ((kept_url == NULL || strcmp(bare, kept_url) != 0) &&
          (rc = jb__board_setting_set(b, KEY_URL, bare)) != JB_OK)
        goto out;
    }
  }
  rc = outputs(url_out, ns_out, b, use_url, url != NULL, use_ns);
out:
  free(bare);
  free(pw);
  free(kept_url);
  free(kept_ns);
  return rc;
}
