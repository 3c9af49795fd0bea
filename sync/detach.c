/*
 * detach.c - a synced board detached from Redis (jb_sync_board_detach):
 * the board's own write (core/sync_hook.h, jb__board_detach: one
 * transaction, under the replicator lock), then the sync layer's files
 * in the board directory, which only a synced board uses: the password
 * (sync.credentials) and the replicator's status (sync.status). A crash
 * between the two leaves those files behind a detached board: nothing
 * reads them until the board is synced again, and the next sync that
 * gives a password replaces the file (a later detach removes them).
 */
#include "jobboard_sync.h"

#include "conn.h"

#include "core/sync_hook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void remove_file(const char *dir, const char *name) {
  char p[4200];
  if (snprintf(p, sizeof p, "%s/%s", dir, name) < (int)sizeof p) unlink(p);
}

/* The refusal while a replicator runs, naming its process. */
static int refuse_running(jb_board *b) {
  jb_sync_status st;
  char who[48] = "";
  if (jb_sync_status_read(&st, b) == JB_OK && st.running && st.pid > 0)
    snprintf(who, sizeof who, " (pid %d)", st.pid);
  return jb__err(JB_ECLAIMED, "board %s: its replicator is running%s: stop "
                 "it first (SIGTERM to `jobboard sync`, or "
                 "jb_sync_replicator_stop), then detach; the board stays "
                 "synced", jb_board_path(b), who);
}

int jb_sync_board_detach(jb_sync_detach_result *out, jb_board *b) {
  if (out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_sync_board_detach: NULL argument");
  memset(out, 0, sizeof *out);
  const char *dir = jb_board_path(b);
  int rc = jb__board_setting_get(b, JB_SETTING_SYNC_NAMESPACE, out->ns,
                                 sizeof out->ns, NULL);
  if (rc == JB_ENOTFOUND)
    return jb__err(JB_ENOTFOUND, "board %s is not synced with redis: "
                   "nothing to detach", dir);
  if (rc != JB_OK) return rc;
  char url[4097] = "";
  if (jb__board_setting_get(b, "sync.url", url, sizeof url, NULL) == JB_OK)
    jb__sync_url_redact(out->url, sizeof out->url, url);
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char note[1024];
  snprintf(note, sizeof note, "%s detached from %.700s namespace %s", when,
           out->url[0] ? out->url : "(no URL)", out->ns);
  jb_detach_result r;
  rc = jb__board_detach(b, note, &r);
  if (rc == JB_ECLAIMED) return refuse_running(b);
  if (rc != JB_OK) return rc;
  out->jobs = r.jobs;
  out->released = r.released;
  out->kept = r.kept;
  out->letters = r.letters;
  remove_file(dir, JB__SYNC_CRED_FILE);
  remove_file(dir, "sync.status");
  return JB_OK;
}

int jb_sync_board_detached(char **text_out, jb_board *b) {
  if (text_out == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_sync_board_detached: NULL argument");
  *text_out = NULL;
  char buf[4097];
  int rc = jb__board_setting_get(b, "sync.detached", buf, sizeof buf, NULL);
  if (rc == JB_ENOTFOUND) return JB_OK;
  if (rc != JB_OK) return rc;
  if ((*text_out = strdup(buf)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for the detach record");
  return JB_OK;
}
