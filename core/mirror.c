/*
 * mirror.c - the replicator's way into the board (sync_hook.h): Redis
 * listings mirrored into the board, jobs gone from Redis taken off it, and
 * the board's settings. Arguments are checked and postings decoded here,
 * outside the transaction; store/mirror.c writes.
 */
#include "internal.h"
#include "codec/posting.h"
#include "sync_hook.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

_Static_assert((int)JB_MIRROR_NEW == JB_STORE_MIRROR_NEW &&
                   (int)JB_MIRROR_UPDATED == JB_STORE_MIRROR_UPDATED &&
                   (int)JB_MIRROR_SAME == JB_STORE_MIRROR_SAME &&
                   (int)JB_MIRROR_LOCAL == JB_STORE_MIRROR_LOCAL &&
                   (int)JB_MIRROR_DONE == JB_STORE_MIRROR_DONE &&
                   (int)JB_MIRROR_QUARANTINED == JB_STORE_MIRROR_QUARANTINED,
               "sync_hook.h and store.h number the mirror's results alike");

/* Why listing `l` (uuid `text`) must not go on the board, appended to
 * `reasons` (NUL-terminated; *off its offset, or SIZE_MAX when it may go
 * on); *priority and *sequence (Redis's) the posting's. `job` is scratch
 * for the decoder. */
static int judge_posting(const jb_remote_listing *l, const char *text,
                         jb_job *job, jb_buf *reasons, size_t *off,
                         jb_priority *priority, uint64_t *sequence) {
  char why[200], line[400];
  *off = SIZE_MAX;
  int rc = jb__posting_decode(job, l->posting, l->posting_len, why,
                              sizeof why);
  if (rc == JB_OK) {
    *priority = job->priority;
    *sequence = job->sequence;
    if (strcasecmp(job->uuid, text) == 0) return JB_OK;
    snprintf(line, sizeof line, "job %s, received from Redis: its posting "
             "names uuid %s; not put on the board", text, job->uuid);
  } else if (rc == JB_ECORRUPT) {
    snprintf(line, sizeof line, "job %s, received from Redis: %s; not put "
             "on the board", text, why);
  } else {
    return rc;
  }
  *off = reasons->len;
  return jb__buf_append(reasons, line, strlen(line) + 1);
}

/* Check listing i and fill its store form (its reason as an offset into
 * `reasons` for now). */
static int prepare_listing(size_t i, const jb_remote_listing *l,
                           jb_store_listing *sl, jb_job *job,
                           jb_buf *reasons, size_t *reason_off) {
  char field[64];
  snprintf(field, sizeof field, "listing %zu: uuid", i);
  int rc = jb__uuid_parse(sl->uuid, l->uuid, field);
  if (rc != JB_OK) return rc;
  char text[JB_UUID_STRLEN];
  jb__uuid_format(text, sl->uuid);
  if (l->owner) {
    if ((rc = jb__who_check(l->owner, &sl->owner_len)) != JB_OK) {
      char why[256];
      snprintf(why, sizeof why, "%s", jb_errmsg());
      return jb__err(rc, "listing %zu (job %s): owner: %s", i, text, why);
    }
    sl->owner = l->owner;
  }
  if (l->expires_us < 0)
    return jb__err(JB_EINVAL, "listing %zu (job %s): expiry %lld is not a "
                   "time (expected microseconds since the epoch, or 0)", i,
                   text, (long long)l->expires_us);
  if (l->posting == NULL && l->posting_len)
    return jb__err(JB_EINVAL, "listing %zu (job %s): posting is NULL", i,
                   text);
  sl->expires_us = l->owner ? l->expires_us : 0;
  sl->posting = l->posting;
  sl->posting_len = l->posting_len;
  sl->priority = JB_PRIORITY_NORMAL;
  return judge_posting(l, text, job, reasons, reason_off, &sl->priority,
                       &sl->sequence);
}

int jb__board_mirror_listings(jb_board *b, const jb_remote_listing *l,
                              size_t n, int64_t read_us, int *results) {
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (n && l == NULL) return jb__err(JB_EINVAL, "mirror: listings are NULL");
  if (read_us < 0)
    return jb__err(JB_EINVAL, "mirror: read time %lld is not a time",
                   (long long)read_us);
  if (n == 0) return JB_OK;
  jb_store_listing *sl = calloc(n, sizeof *sl);
  size_t *offs = calloc(n, sizeof *offs);
  if (sl == NULL || offs == NULL) {
    free(sl);
    free(offs);
    return jb__err(JB_ENOMEM, "out of memory mirroring %zu listings", n);
  }
  jb_buf reasons = {0};
  jb_job job = {0};
  int rc = JB_OK;
  for (size_t i = 0; rc == JB_OK && i < n; i++)
    rc = prepare_listing(i, &l[i], &sl[i], &job, &reasons, &offs[i]);
  jb__job_clear(&job);
  if (rc == JB_OK) {
    for (size_t i = 0; i < n; i++)
      if (offs[i] != SIZE_MAX)
        sl[i].quarantine = (const char *)reasons.data + offs[i];
    rc = jb__store_mirror(b->store, sl, n, read_us, jb__now_us(), results);
  }
  jb__buf_free(&reasons);
  free(offs);
  free(sl);
  return rc;
}

int jb__board_mirror_gone(jb_board *b, const char *const *uuids,
                          const bool *trashed, const bool *lost,
                          const char *lost_reason, size_t n,
                          size_t *removed) {
  return jb__board_mirror_gone_x(b, uuids, trashed, lost, lost_reason, NULL,
                                 n, removed);
}

int jb__board_mirror_gone_x(jb_board *b, const char *const *uuids,
                            const bool *trashed, const bool *lost,
                            const char *lost_reason,
                            const jb_remote_outcome *outcomes, size_t n,
                            size_t *removed) {
  if (removed) *removed = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  if (n && uuids == NULL) return jb__err(JB_EINVAL, "mirror: uuids are NULL");
  if (n == 0) return JB_OK;
  uint8_t (*raw)[16] = calloc(n, sizeof *raw);
  jb_store_done *dones = outcomes ? calloc(n, sizeof *dones) : NULL;
  const char **owners = outcomes ? calloc(n, sizeof *owners) : NULL;
  if (raw == NULL || (outcomes && (dones == NULL || owners == NULL))) {
    free(raw);
    free(dones);
    free(owners);
    return jb__err(JB_ENOMEM, "out of memory for %zu uuids", n);
  }
  int rc = JB_OK;
  for (size_t i = 0; rc == JB_OK && i < n; i++) {
    char field[48];
    snprintf(field, sizeof field, "gone %zu: uuid", i);
    rc = jb__uuid_parse(raw[i], uuids[i], field);
    if (rc != JB_OK || outcomes == NULL) continue;
    /* Checked as a local completion's are: what another board wrote into
     * Redis is input. An ending this board would not write itself, or a
     * result that is not one map, is taken as unknown (the plain
     * ending). */
    const jb_remote_outcome *o = &outcomes[i];
    int end = o->end;
    bool known = end == JB_END_CONSUMED || end == JB_END_FAILED ||
                 end == JB_END_TRASHED || end == JB_END_DEAD ||
                 end == JB_END_CANCELLED;
    bool result_ok = o->result == NULL ||
                     (o->result_len <= b->max_posting &&
                      jb__details_check(o->result, o->result_len,
                                        JB_MP_MAX_DEPTH, "result") == JB_OK);
    size_t rlen = o->reason ? strnlen(o->reason, o->reason_len) : 0;
    bool reason_ok = o->reason == NULL ||
                     (rlen <= JB_REASON_MAX &&
                      jb__utf8_valid(o->reason, rlen));
    if (!known || !result_ok || !reason_ok) continue;
    dones[i] = (jb_store_done){
        .end = end, .result = o->result, .result_len = o->result_len,
        .cause = end == JB_END_DEAD && o->cause >= 0 && o->cause <= 2
                     ? (uint8_t)o->cause
                     : 0,
        .reason = o->reason, .reason_len = rlen};
    if (o->owner && jb__who_check(o->owner, NULL) == JB_OK)
      owners[i] = o->owner;
  }
  if (rc == JB_OK) {
    jb_hist_bounds hb = {b->history_max, b->history_max_age_us};
    rc = jb__store_mirror_gone_x(b->store, (const uint8_t(*)[16])raw, trashed,
                                 lost, lost_reason, dones,
                                 (const char *const *)owners, n,
                                 jb__now_us(), &hb, removed);
  }
  free(raw);
  free(dones);
  free(owners);
  return rc;
}

/* ------------------------------------------------------------- settings */

#define SETTING_PREFIX "sync."

/* A key: "sync." and 1.. more printable ASCII characters, at most
 * JB_SETTING_KEY_MAX bytes in all. */
static int setting_key(const char *key, size_t *len) {
  if (key == NULL) return jb__err(JB_EINVAL, "setting key is NULL");
  size_t n = strnlen(key, JB_SETTING_KEY_MAX + 1);
  size_t p = sizeof SETTING_PREFIX - 1;
  bool ok = n > p && n <= JB_SETTING_KEY_MAX &&
            strncmp(key, SETTING_PREFIX, p) == 0;
  for (size_t i = 0; ok && i < n; i++)
    ok = key[i] > ' ' && key[i] < 0x7f;
  if (!ok)
    return jb__err(JB_EINVAL, "setting key '%.*s': expected \"" SETTING_PREFIX
                   "\" and a name, at most %d printable ASCII characters in "
                   "all", (int)(n > JB_SETTING_KEY_MAX ? JB_SETTING_KEY_MAX : n),
                   key, JB_SETTING_KEY_MAX);
  *len = n;
  return JB_OK;
}

static int setting_value(const char *key, const char *value, size_t *len) {
  size_t n = strnlen(value, JB_SETTING_VALUE_MAX + 1);
  if (n > JB_SETTING_VALUE_MAX)
    return jb__err(JB_EINVAL, "setting %s: the value is longer than %d bytes",
                   key, JB_SETTING_VALUE_MAX);
  if (!jb__utf8_valid(value, n))
    return jb__err(JB_EINVAL, "setting %s: the value is not UTF-8 text", key);
  *len = n;
  return JB_OK;
}

/* Copy `v` into buf (size bytes, NUL-terminated, cut if too small). */
static void copy_out(char *buf, size_t size, const jb_buf *v) {
  if (buf == NULL || size == 0) return;
  size_t n = v->len < size - 1 ? v->len : size - 1;
  if (n) memcpy(buf, v->data, n);
  buf[n] = '\0';
}

int jb__board_setting_get(jb_board *b, const char *key, char *buf,
                          size_t size, size_t *len) {
  size_t key_len;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  int rc = setting_key(key, &key_len);
  if (rc != JB_OK) return rc;
  if (buf == NULL && size)
    return jb__err(JB_EINVAL, "setting %s: buffer is NULL", key);
  jb_buf v = {0};
  bool found = false;
  rc = jb__store_setting_get(b->store, key, key_len, &v, &found);
  if (rc == JB_OK && !found)
    rc = jb__err(JB_ENOTFOUND, "setting %s is not set", key);
  if (rc == JB_OK && len) *len = v.len;
  if (rc == JB_OK && v.len + 1 > size)
    rc = jb__err(JB_EINVAL, "setting %s: a buffer of %zu bytes is too small "
                 "for its value (%zu bytes needed)", key, size, v.len + 1);
  if (rc == JB_OK) copy_out(buf, size, &v);
  jb__buf_free(&v);
  return rc;
}

bool jb__board_synced(jb_board *b) {
  char ns[4097]; /* a setting's longest value, and its NUL */
  return jb__board_setting_get(b, JB_SETTING_SYNC_NAMESPACE, ns, sizeof ns,
                               NULL) == JB_OK;
}

int jb__board_setting_set(jb_board *b, const char *key, const char *value) {
  size_t key_len, value_len = 0;
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  int rc = setting_key(key, &key_len);
  if (rc == JB_OK && value) rc = setting_value(key, value, &value_len);
  if (rc != JB_OK) return rc;
  return jb__store_setting_put(b->store, key, key_len, value, value_len);
}

int jb__board_setting_claim(jb_board *b, const char *key, const char *value,
                            char *cur, size_t size) {
  size_t key_len, value_len;
  if (cur && size) cur[0] = '\0';
  if (b == NULL) return jb__err(JB_EINVAL, "board handle is NULL");
  int rc = setting_key(key, &key_len);
  if (rc != JB_OK) return rc;
  if (value == NULL)
    return jb__err(JB_EINVAL, "setting %s: the value to claim is NULL", key);
  if ((rc = setting_value(key, value, &value_len)) != JB_OK) return rc;
  jb_buf v = {0};
  bool taken = false;
  rc = jb__store_setting_claim(b->store, key, key_len, value, value_len, &v,
                               &taken);
  if (rc == JB_OK && taken) {
    copy_out(cur, size, &v);
    rc = jb__err(JB_ECLAIMED, "setting %s is already '%.*s', not '%.200s'",
                 key, v.len > 200 ? 200 : (int)v.len, (const char *)v.data,
                 value);
  }
  jb__buf_free(&v);
  return rc;
}

bool jb__job_publishing(const jb_job *job) { return job->publishing; }

bool jb__job_ours(const jb_job *job) { return job->ours; }
