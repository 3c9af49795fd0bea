/*
 * schedule.c - periodic jobs (store.h, "Periodic jobs"): the `schedules`
 * table, its record codec, and the tick that posts the due runs in the
 * transaction that moves each schedule past them.
 */
#include "txn.h"
#include "codec/cron.h"
#include "codec/mpscan.h"
#include "codec/tz.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- codec */

int jb__sched_decode(jb_sched_view *v, const void *key, size_t key_len,
                     const void *val, size_t val_len, char *why,
                     size_t whylen) {
  memset(v, 0, sizeof *v);
#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), JB_ECORRUPT)
  if (key_len == 0 || key_len > JB_SCHED_NAME_MAX ||
      !jb__utf8_valid(key, key_len))
    return BAD("the name is not 1..%d bytes of UTF-8", JB_SCHED_NAME_MAX);
  if (val_len < sizeof v->rec) return BAD("a record of %zu bytes", val_len);
  memcpy(&v->rec, val, sizeof v->rec);
  const jb_schedrec *r = &v->rec;
  if (r->format != 1 && r->format != 2)
    return BAD("record format %u is not 1 or 2", r->format);
  if (r->format == 1 && (r->overlap || r->tz_len))
    return BAD("a record of format 1 with a zone or an overlap policy");
  size_t tail = r->format == 2 ? sizeof v->skipped : 0;
  if (r->tz_len > JB_TZ_NAME_MAX)
    return BAD("a zone name of %u bytes", r->tz_len);
  if (val_len != sizeof *r + r->spec_len + r->job_name_len +
                     r->book_name_len + (size_t)r->details_len + r->tz_len +
                     tail)
    return BAD("a record of %zu bytes, not what its lengths add up to",
               val_len);
  if (r->overlap != JB_OVERLAP_QUEUE && r->overlap != JB_OVERLAP_SKIP)
    return BAD("overlap policy %u is unknown", r->overlap);
  if (r->catch_up != JB_CATCHUP_SKIP && r->catch_up != JB_CATCHUP_ALL)
    return BAD("catch-up policy %u is unknown", r->catch_up);
  if (jb_priority_name((jb_priority)r->priority) == NULL)
    return BAD("priority %u is unknown", r->priority);
  const char *p = (const char *)val + sizeof *r;
  v->name = key;
  v->name_len = key_len;
  v->spec = p;
  v->job_name = p + r->spec_len;
  v->book_name = v->job_name + r->job_name_len;
  v->details = (const uint8_t *)v->book_name + r->book_name_len;
  v->tz = (const char *)v->details + r->details_len;
  if (tail) memcpy(&v->skipped, v->tz + r->tz_len, sizeof v->skipped);
  char tzwhy[160];
  if (r->tz_len && (r->kind != JB_SCHED_CRON ||
                    !jb__tz_name_ok(v->tz, r->tz_len, tzwhy, sizeof tzwhy)))
    return BAD("the time zone is malformed or not of a cron spec");
  if (r->kind == JB_SCHED_EVERY) {
    if (r->every_ms < 1 || r->every_ms > JB_DELAY_MAX_MS || r->spec_len)
      return BAD("interval %" PRId64 " ms is outside 1..%" PRId64,
                 r->every_ms, JB_DELAY_MAX_MS);
  } else if (r->kind == JB_SCHED_CRON) {
    jb_cron c;
    char cwhy[160];
    if (r->spec_len == 0 || r->spec_len > JB_CRON_SPEC_MAX ||
        !jb__cron_parse(&c, v->spec, r->spec_len, cwhy, sizeof cwhy))
      return BAD("cron spec '%.*s': %s", (int)r->spec_len, v->spec,
                 r->spec_len ? cwhy : "empty");
  } else {
    return BAD("kind %u is neither an interval nor a cron spec", r->kind);
  }
  if (r->job_name_len == 0 || r->job_name_len > JB_NAME_MAX ||
      !jb__utf8_valid(v->job_name, r->job_name_len))
    return BAD("the job name is not 1..%d bytes of UTF-8", JB_NAME_MAX);
  if (r->has_book > 1 || (!r->has_book && r->book_name_len) ||
      (r->has_book && (r->book_name_len == 0 ||
                       !jb__utf8_valid(v->book_name, r->book_name_len))))
    return BAD("the book name is malformed");
  if (r->details_len) {
    size_t end;
    if (v->details[0] < 0x80 || (v->details[0] > 0x8f &&
                                 v->details[0] != 0xde && v->details[0] != 0xdf) ||
        jb__mp_scan(v->details, r->details_len, &end, JB_MP_MAX_DEPTH - 1) !=
            JB_MP_OK ||
        end != r->details_len)
      return BAD("the details are not one msgpack map");
  }
  if (r->next_us <= 0 || r->start_us < 0)
    return BAD("next run %" PRId64 " / start %" PRId64 " out of range",
               r->next_us, r->start_us);
  return JB_OK;
#undef BAD
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The schedule's zone (NULL: UTC). One whose file went away since the
 * add (tzdata removed) is computed in UTC meanwhile: its runs go on, an
 * hour or so off, rather than stop. */
static const jb_tz *zone(const jb_sched_view *v) {
  char why[256];
  return v->rec.tz_len ? jb__tz_get(v->tz, v->rec.tz_len, why, sizeof why)
                       : NULL;
}

int64_t jb__sched_after(const jb_sched_view *v, int64_t t) {
  const jb_schedrec *r = &v->rec;
  if (r->kind == JB_SCHED_EVERY) {
    int64_t every = r->every_ms * 1000;
    if (t < r->start_us) return r->start_us;
    int64_t k = floor_div(t - r->start_us, every) + 1;
    if (k > (INT64_MAX - r->start_us) / every) return INT64_MAX;
    return r->start_us + k * every;
  }
  jb_cron c;
  char why[160];
  int64_t out;
  if (!jb__cron_parse(&c, v->spec, v->rec.spec_len, why, sizeof why))
    return INT64_MAX;
  if (t < r->start_us) t = r->start_us - 1;
  return jb__cron_next_tz(&c, zone(v), t, &out) ? out : INT64_MAX;
}

int64_t jb__sched_at_or_before(const jb_sched_view *v, int64_t t) {
  const jb_schedrec *r = &v->rec;
  if (t < r->start_us) return INT64_MIN;
  if (r->kind == JB_SCHED_EVERY) {
    int64_t every = r->every_ms * 1000;
    return r->start_us + floor_div(t - r->start_us, every) * every;
  }
  jb_cron c;
  char why[160];
  int64_t out;
  if (!jb__cron_parse(&c, v->spec, v->rec.spec_len, why, sizeof why) ||
      !jb__cron_prev_tz(&c, zone(v), t, &out) || out < r->start_us)
    return INT64_MIN;
  return out;
}

/* ----------------------------------------------------- add, remove, read */

int jb__sched_walk(jb_store *s, MDB_txn *txn, jb_sched_visit visit,
                   void *arg) {
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->schedules, &cur);
  if (rc) return rc;
  MDB_val k, v;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
    if ((rc = visit(&k, &v, arg))) break;
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

typedef struct {
  const void *key;
  size_t key_len;
  const void *val;
  size_t val_len;
  bool replace;
  jb_buf *out;
  size_t n;
} sched_ctx;

static int put_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  sched_ctx *ctx = vctx;
  (void)status;
  MDB_val k = {ctx->key_len, (void *)ctx->key}, old;
  int rc = mdb_get(txn, s->schedules, &k, &old);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (rc == 0 && !ctx->replace)
    return jb__err(JB_EEXISTS, "schedule %.*s already exists (remove it "
                   "first, or add it with the flag JB_SCHEDULE_REPLACE)",
                   (int)ctx->key_len,
                   (const char *)ctx->key);
  MDB_val v = {ctx->val_len, NULL};
  jb_sched_view nv, ov;
  char why[256];
  if (jb__sched_decode(&nv, ctx->key, ctx->key_len, ctx->val, ctx->val_len,
                       why, sizeof why) != JB_OK)
    return jb__err(JB_EINVAL, "schedule %.*s: %s", (int)ctx->key_len,
                   (const char *)ctx->key, why);
  if (rc == 0 && jb__sched_decode(&ov, ctx->key, ctx->key_len, old.mv_data,
                                  old.mv_size, why, sizeof why) == JB_OK) {
    /* Replaced: it keeps its history, and a run already posted is not
     * posted again under the new spec. */
    nv.rec.runs = ov.rec.runs;
    nv.rec.last_us = ov.rec.last_us;
    nv.rec.created_us = ov.rec.created_us;
    nv.skipped = ov.skipped;
    if (nv.rec.last_us && nv.rec.next_us <= nv.rec.last_us)
      nv.rec.next_us = jb__sched_after(&nv, nv.rec.last_us);
  }
  if ((rc = mdb_put(txn, s->schedules, &k, &v, MDB_RESERVE))) return rc;
  memcpy(v.mv_data, &nv.rec, sizeof nv.rec);
  memcpy((uint8_t *)v.mv_data + sizeof nv.rec,
         (const uint8_t *)ctx->val + sizeof nv.rec,
         ctx->val_len - sizeof nv.rec);
  if (nv.rec.format == 2) /* the tail: the skipped count */
    memcpy((uint8_t *)v.mv_data + ctx->val_len - sizeof nv.skipped,
           &nv.skipped, sizeof nv.skipped);
  return 0;
}

int jb__store_sched_put(jb_store *s, const void *key, size_t key_len,
                        const void *val, size_t val_len, bool replace) {
  sched_ctx ctx = {.key = key, .key_len = key_len, .val = val,
                   .val_len = val_len, .replace = replace};
  return jb__store_write(s, put_body, &ctx);
}

static int del_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  sched_ctx *ctx = vctx;
  (void)status;
  MDB_val k = {ctx->key_len, (void *)ctx->key};
  int rc = mdb_del(txn, s->schedules, &k, NULL);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "no schedule named %.*s", (int)ctx->key_len,
                   (const char *)ctx->key);
  return rc;
}

int jb__store_sched_del(jb_store *s, const void *key, size_t key_len) {
  sched_ctx ctx = {.key = key, .key_len = key_len};
  return jb__store_write(s, del_body, &ctx);
}

static int copy_out(jb_buf *out, const MDB_val *k, const MDB_val *v) {
  uint32_t lens[2] = {(uint32_t)k->mv_size, (uint32_t)v->mv_size};
  static const uint8_t zero[8];
  size_t pad = (8 - (k->mv_size + v->mv_size) % 8) % 8;
  if (jb__buf_append(out, lens, sizeof lens) ||
      jb__buf_append(out, k->mv_data, k->mv_size) ||
      jb__buf_append(out, v->mv_data, v->mv_size) ||
      jb__buf_append(out, zero, pad))
    return jb__err(JB_ENOMEM, "out of memory reading schedules");
  return 0;
}

static int get_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  sched_ctx *ctx = vctx;
  (void)status;
  ctx->out->len = 0;
  MDB_val k = {ctx->key_len, (void *)ctx->key}, v;
  int rc = mdb_get(txn, s->schedules, &k, &v);
  if (rc == MDB_NOTFOUND)
    return jb__err(JB_ENOTFOUND, "no schedule named %.*s", (int)ctx->key_len,
                   (const char *)ctx->key);
  return rc ? rc : copy_out(ctx->out, &k, &v);
}

int jb__store_sched_get(jb_store *s, const void *key, size_t key_len,
                        jb_buf *out) {
  sched_ctx ctx = {.key = key, .key_len = key_len, .out = out};
  return jb__store_read(s, get_body, &ctx);
}

static int read_one(const MDB_val *k, const MDB_val *v, void *arg) {
  sched_ctx *ctx = arg;
  ctx->n++;
  return copy_out(ctx->out, k, v);
}

static int read_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  sched_ctx *ctx = vctx;
  (void)status;
  ctx->out->len = 0;
  ctx->n = 0;
  return jb__sched_walk(s, txn, read_one, ctx);
}

int jb__store_sched_read(jb_store *s, jb_buf *out, size_t *n) {
  sched_ctx ctx = {.out = out};
  int rc = jb__store_read(s, read_body, &ctx);
  *n = rc == JB_OK ? ctx.n : 0;
  return rc;
}

/* The earliest next_us of the records (0: none); one that does not
 * decode is passed over (check reports it). */
static int earliest(const MDB_val *k, const MDB_val *v, void *arg) {
  int64_t *out = arg;
  jb_schedrec r;
  (void)k;
  if (v->mv_size < sizeof r) return 0;
  memcpy(&r, v->mv_data, sizeof r);
  if ((r.format == 1 || r.format == 2) && r.next_us > 0 && r.next_us != INT64_MAX &&
      (*out == 0 || r.next_us < *out))
    *out = r.next_us;
  return 0;
}

static int next_due(jb_store *s, MDB_txn *txn, int64_t *out) {
  *out = 0;
  return jb__sched_walk(s, txn, earliest, out);
}

static int next_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  return next_due(s, txn, vctx);
}

int jb__store_sched_next_due(jb_store *s, int64_t *out) {
  return jb__store_read(s, next_body, out);
}

/* ----------------------------------------------------------------- tick */

typedef struct {
  int64_t now_us;
  size_t catchup_max;
  jb_sched_prep_fn prep;
  void *arg;
  bool publish;     /* mark the runs for publication (JB_STORE_PUB_PENDING) */
  jb_buf prefixes;  /* the posting prefixes of the runs */
  jb_buf posts;     /* jb_store_post[] */
  jb_buf updates;   /* copy_out entries: the due schedules, new state */
  size_t n_posts;
} tick_ctx;

static void tick_reset(tick_ctx *ctx) {
  jb_store_post *sp = (jb_store_post *)ctx->posts.data;
  for (size_t i = 0; i < ctx->n_posts; i++) free((void *)sp[i].x);
  ctx->prefixes.len = ctx->posts.len = ctx->updates.len = 0;
  ctx->n_posts = 0;
}

/* Queue run `run_us` of `v` unless its unique key is held already (a job
 * of that run still on the board: it was posted, so it is not again). */
static int add_run(jb_store *s, MDB_txn *txn, tick_ctx *ctx,
                   const jb_sched_view *v, int64_t run_us, bool *added) {
  char key[JB_UNIQUE_MAX + 1];
  int n = snprintf(key, sizeof key, "schedule:%.*s:%" PRId64,
                   (int)v->name_len, v->name, run_us);
  MDB_val k = {(size_t)n, key}, held;
  int rc = mdb_get(txn, s->unique, &k, &held);
  *added = false;
  if (rc == 0) return 0;
  if (rc != MDB_NOTFOUND) return rc;
  jb_store_post sp;
  memset(&sp, 0, sizeof sp);
  if ((rc = ctx->prep(ctx->arg, v, run_us, ctx->now_us, &ctx->prefixes,
                      &sp)) != JB_OK)
    return rc;
  if (jb__buf_append(&ctx->posts, &sp, sizeof sp)) {
    free((void *)sp.x);
    return jb__err(JB_ENOMEM, "out of memory for a tick's posts");
  }
  ctx->n_posts++;
  *added = true;
  return 0;
}

/* Does a live job hold the key of a run of `v` ("schedule:NAME:" and a
 * number: a run still queued or running)? The keys of NAME's runs sit
 * together in `unique`; a key of another schedule whose name begins with
 * "NAME:" sits among them but is not followed by a number only. */
static int unfinished(jb_store *s, MDB_txn *txn, const jb_sched_view *v,
                      bool *busy) {
  char pre[JB_UNIQUE_MAX + 1];
  size_t n = (size_t)snprintf(pre, sizeof pre, "schedule:%.*s:",
                              (int)v->name_len, v->name);
  MDB_cursor *cur;
  int rc = mdb_cursor_open(txn, s->unique, &cur);
  if (rc) return rc;
  MDB_val k = {n, pre}, d;
  *busy = false;
  for (rc = mdb_cursor_get(cur, &k, &d, MDB_SET_RANGE); rc == 0 && !*busy;
       rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
    if (k.mv_size <= n || memcmp(k.mv_data, pre, n) != 0) break;
    const char *t = (const char *)k.mv_data + n;
    size_t tl = k.mv_size - n, i = t[0] == '-';
    *busy = i < tl;
    for (; i < tl; i++) *busy = *busy && t[i] >= '0' && t[i] <= '9';
  }
  mdb_cursor_close(cur);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Post run `run_us` of `v`, or, under JB_OVERLAP_SKIP while a run is
 * unfinished (*busy), count it skipped. */
static int run_or_skip(jb_store *s, MDB_txn *txn, tick_ctx *ctx,
                       jb_sched_view *v, int64_t run_us, bool *busy) {
  bool added;
  if (*busy) {
    v->skipped++;
    return 0;
  }
  int rc = add_run(s, txn, ctx, v, run_us, &added);
  if (rc == 0 && added) {
    v->rec.runs++;
    *busy = v->rec.overlap == JB_OVERLAP_SKIP;
  }
  return rc;
}

/* Plan the due runs of one schedule (its record decoded into v) and queue
 * its new state in ctx->updates. */
static int plan(jb_store *s, MDB_txn *txn, tick_ctx *ctx, const MDB_val *k,
                const MDB_val *val, jb_sched_view *v) {
  jb_schedrec *r = &v->rec;
  int64_t now = ctx->now_us;
  bool busy = false;
  int rc = r->overlap == JB_OVERLAP_SKIP ? unfinished(s, txn, v, &busy) : 0;
  if (rc) return rc;
  if (r->catch_up == JB_CATCHUP_SKIP) {
    /* Only the latest due run; those before it are skipped. */
    int64_t latest = jb__sched_at_or_before(v, now);
    if (latest < r->next_us) latest = r->next_us;
    if ((rc = run_or_skip(s, txn, ctx, v, latest, &busy))) return rc;
    r->last_us = latest;
    r->next_us = jb__sched_after(v, now);
  } else {
    /* Every due run, oldest first, at most catchup_max in one tick (the
     * next tick goes on from there: next_us stays due). */
    int64_t run = r->next_us;
    for (size_t i = 0; run <= now && i < ctx->catchup_max; i++) {
      if ((rc = run_or_skip(s, txn, ctx, v, run, &busy))) return rc;
      r->last_us = run;
      run = jb__sched_after(v, run);
    }
    r->next_us = run;
  }
  size_t at = ctx->updates.len;
  if ((rc = copy_out(&ctx->updates, k, val))) return rc;
  memcpy(ctx->updates.data + at + 8 + k->mv_size, r, sizeof *r);
  if (r->format == 2)
    memcpy(ctx->updates.data + at + 8 + k->mv_size + val->mv_size -
               sizeof v->skipped,
           &v->skipped, sizeof v->skipped);
  return 0;
}

typedef struct {
  jb_store *s;
  MDB_txn *txn;
  tick_ctx *ctx;
} tick_walk;

static int tick_one(const MDB_val *k, const MDB_val *v, void *arg) {
  tick_walk *w = arg;
  jb_sched_view view;
  char why[256];
  if (jb__sched_decode(&view, k->mv_data, k->mv_size, v->mv_data, v->mv_size,
                       why, sizeof why) != JB_OK)
    return 0; /* check reports it; the others still run */
  if (view.rec.next_us > w->ctx->now_us) return 0;
  return plan(w->s, w->txn, w->ctx, k, v, &view);
}

static int tick_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  tick_ctx *ctx = vctx;
  (void)status;
  tick_reset(ctx); /* the body may run again after the map grows */
  tick_walk w = {s, txn, ctx};
  int rc = jb__sched_walk(s, txn, tick_one, &w);
  if (rc) return rc;
  /* The prefixes are offsets until every run is encoded (the buffer
   * moves as it grows), as in jb_job_post_batch. */
  jb_store_post *sp = (jb_store_post *)ctx->posts.data;
  for (size_t i = 0; i < ctx->n_posts; i++)
    sp[i].prefix = ctx->prefixes.data + (uintptr_t)sp[i].prefix;
  if (ctx->n_posts &&
      (rc = jb__txn_post(s, txn, sp, ctx->n_posts, ctx->now_us, NULL, NULL)))
    return rc;
  for (size_t i = 0; ctx->publish && i < ctx->n_posts; i++)
    if ((rc = jb__txn_mark_pending(s, txn, sp[i].uuid, ctx->now_us)))
      return rc;
  for (size_t off = 0; off < ctx->updates.len;) {
    uint32_t lens[2];
    memcpy(lens, ctx->updates.data + off, sizeof lens);
    MDB_val uk = {lens[0], ctx->updates.data + off + 8};
    MDB_val uv = {lens[1], ctx->updates.data + off + 8 + lens[0]};
    if ((rc = mdb_put(txn, s->schedules, &uk, &uv, 0))) return rc;
    off += 8 + lens[0] + lens[1] + (8 - (lens[0] + lens[1]) % 8) % 8;
  }
  return 0;
}

static int due_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  (void)status;
  return next_due(s, txn, vctx);
}

int jb__store_sched_tick(jb_store *s, int64_t now_us, size_t catchup_max,
                         jb_sched_prep_fn prep, void *arg, bool publish,
                         size_t *posted) {
  *posted = 0;
  /* Most ticks find nothing due: a read transaction says so without
   * taking the writer lock. */
  int64_t first = 0;
  int rc = jb__store_read(s, due_body, &first);
  if (rc != JB_OK || first == 0 || first > now_us) return rc;
  tick_ctx ctx = {.now_us = now_us, .catchup_max = catchup_max,
                  .prep = prep, .arg = arg, .publish = publish};
  rc = jb__store_write(s, tick_body, &ctx);
  if (rc == JB_OK) *posted = ctx.n_posts;
  tick_reset(&ctx);
  jb__buf_free(&ctx.prefixes);
  jb__buf_free(&ctx.posts);
  jb__buf_free(&ctx.updates);
  return rc;
}
