/*
 * bench_sync.c - wake-up through Redis and the local cycle with the sync
 * on, for `jobboard-bench --redis URL` (see bench_sync.h). Public API
 * (jobboard.h, jobboard_sync.h), and hiredis for the taskflow-like poster
 * (two plain commands, as taskflow's post sends them).
 */
#include "bench_sync.h"
#include "bench_util.h"
#include "jobboard_sync.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* The waiter is asleep, and the replicators done with the last sample's
 * claim and consume notices, well within this after "ready". */
#define SETTLE_US 2000
/* Untimed samples and cycles first (scripts loaded, pages faulted in). */
#define WARMUP_WAKES 5u
#define WARMUP_CYCLES 2000u
/* Longest wait for one sample, a replicator to connect, a claim. */
#define LIMIT_MS 30000

const char *const bench_sync_setting[BENCH_SYNC_NSETTINGS] = {
    "plain", "attached", "replicator"};

typedef char uuid_text[JB_UUID_STRLEN];

static int fail(char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, jb_errmsg());
  return -1;
}

/* dir/name, made (it must not exist yet). */
static int subdir(char *out, size_t len, const char *dir, const char *name,
                  char *err, size_t errlen) {
  if ((size_t)snprintf(out, len, "%s/%s", dir, name) >= len) {
    snprintf(err, errlen, "path too long: %s/%s", dir, name);
    return -1;
  }
  if (mkdir(out, 0700) != 0) {
    snprintf(err, errlen, "mkdir %s: %s", out, strerror(errno));
    return -1;
  }
  return 0;
}

static int open_board(jb_board **b, const char *dir, jb_durability d,
                      char *err, size_t errlen) {
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.flags = JB_OPEN_CREATE;
  bo.durability = d;
  if (jb_board_open(b, dir, &bo) != JB_OK) return fail(err, errlen, "open");
  return 0;
}

static int connect_ns(jb_sync_conn **c, const char *url, const char *ns,
                      char *err, size_t errlen) {
  jb_sync_options so;
  so = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  so.url = url;
  so.ns = ns;
  if (jb_sync_connect(c, &so) != JB_OK) return fail(err, errlen, "connect");
  return 0;
}

/* Start a replicator on the board in `dir` and wait until it is
 * connected and has finished a pass. */
static int start_replicator(jb_sync_replicator **r, const char *dir,
                            const char *url, const char *ns, int poll_ms,
                            jb_durability d, char *err, size_t errlen) {
  jb_sync_replicator_options ro;
  ro = (jb_sync_replicator_options)JB_SYNC_REPLICATOR_OPTIONS_INIT;
  ro.conn.url = url;
  ro.conn.ns = ns;
  ro.poll_ms = poll_ms;
  jb_board_options bo = JB_BOARD_OPTIONS_INIT;
  bo.durability = d;
  if (jb_sync_replicator_start(r, dir, &bo, &ro) != JB_OK)
    return fail(err, errlen, "replicator start");
  int64_t t0 = bench_mono_ns();
  jb_sync_status st;
  for (;;) {
    if (jb_sync_replicator_status_read(&st, *r) != JB_OK)
      return fail(err, errlen, "replicator status");
    if (st.running && st.connected && st.last_sync_us != 0) return 0;
    if (bench_mono_ns() - t0 > (int64_t)LIMIT_MS * 1000000) {
      snprintf(err, errlen, "the replicator of %s did not sync within %d "
               "ms (last error: %s)", dir, LIMIT_MS,
               st.last_error[0] ? st.last_error : "none");
      jb_sync_replicator_stop(*r);
      *r = NULL;
      return -1;
    }
    bench_sleep_us(1000);
  }
}

/* ------------------------------------------------- taskflow-like poster */

/* A raw hiredis connection to the URL (AUTH and SELECT as needed). */
static redisContext *raw_connect(const char *url, char *err, size_t errlen) {
  jb_sync_url *u = NULL;
  if (jb_sync_url_parse(&u, url) != JB_OK) {
    fail(err, errlen, "redis URL");
    return NULL;
  }
  struct timeval tv = {2, 0};
  redisReply *a = NULL;
  redisContext *c = u->path ? redisConnectUnixWithTimeout(u->path, tv)
                            : redisConnectWithTimeout(u->host, u->port, tv);
  if (c == NULL || c->err) {
    snprintf(err, errlen, "raw connect: %s", c ? c->errstr : "out of memory");
    goto bad;
  }
  if (u->password) {
    a = u->user ? redisCommand(c, "AUTH %s %s", u->user, u->password)
                : redisCommand(c, "AUTH %s", u->password);
    if (a == NULL || a->type == REDIS_REPLY_ERROR) {
      snprintf(err, errlen, "raw connect: AUTH refused");
      goto bad;
    }
    freeReplyObject(a);
    a = NULL;
  }
  if (u->db) {
    a = redisCommand(c, "SELECT %d", u->db);
    if (a == NULL || a->type == REDIS_REPLY_ERROR) {
      snprintf(err, errlen, "raw connect: SELECT %d refused", u->db);
      goto bad;
    }
    freeReplyObject(a);
    a = NULL;
  }
  jb_sync_url_free(u);
  return c;
bad:
  if (a) freeReplyObject(a);
  if (c) redisFree(c);
  jb_sync_url_free(u);
  return NULL;
}

/* One reply of the expected type, freed. */
static int raw_ok(redisContext *c, redisReply *a, int type, const char *what,
                  char *err, size_t errlen) {
  if (a == NULL) {
    snprintf(err, errlen, "%s: %s", what, c->errstr);
    return -1;
  }
  int ok = a->type == type;
  if (!ok)
    snprintf(err, errlen, "%s: unexpected reply (type %d%s%s)", what, a->type,
             a->type == REDIS_REPLY_ERROR ? ": " : "",
             a->type == REDIS_REPLY_ERROR ? a->str : "");
  freeReplyObject(a);
  return ok ? 0 : -1;
}

/* ----------------------------------------------------------- the waiter */

typedef enum { POSTER_PUBLISH, POSTER_REPLICATED, POSTER_TASKFLOW } poster;

typedef struct {
  jb_board *b;          /* the waiter's handle on B (attached) */
  const char *who;
  size_t n;             /* samples, warm-up included */
  int64_t *woke_ns;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  size_t ready, done;   /* samples announced, samples finished */
  bool failed;
  char why[512];
} waiter;

static void announce(waiter *w, size_t *field, size_t v) {
  pthread_mutex_lock(&w->mu);
  *field = v;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static void *waiter_run(void *arg) {
  waiter *w = arg;
  for (size_t i = 0; i < w->n; i++) {
    announce(w, &w->ready, i + 1);
    int rc = jb_board_wait(w->b, 0, LIMIT_MS);
    int64_t t = bench_mono_ns();
    const char *what = "jb_board_wait";
    uuid_text u;
    if (rc == JB_OK) {
      w->woke_ns[i] = t;
      what = "claim-next through Redis";
      rc = jb_claim_next(u, NULL, NULL, w->b, w->who, NULL);
      if (rc == JB_OK) {
        what = "consume through Redis";
        rc = jb_consume(w->b, u, w->who, 0, NULL);
      }
    }
    if (rc != JB_OK) {
      pthread_mutex_lock(&w->mu);
      snprintf(w->why, sizeof w->why, "waiter, sample %zu: %s: %s", i, what,
               jb_errmsg());
      w->failed = true;
      pthread_cond_broadcast(&w->cv);
      pthread_mutex_unlock(&w->mu);
      return NULL;
    }
    announce(w, &w->done, i + 1);
  }
  return NULL;
}

/* Wait until *field >= v (or the waiter failed, or LIMIT_MS). */
static int await(waiter *w, const size_t *field, size_t v, char *err,
                 size_t errlen) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += LIMIT_MS / 1000;
  int rc = 0;
  pthread_mutex_lock(&w->mu);
  while (*field < v && !w->failed && rc == 0)
    rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
  bool failed = w->failed;
  bool late = *field < v;
  pthread_mutex_unlock(&w->mu);
  if (failed) {
    snprintf(err, errlen, "%s", w->why);
    return -1;
  }
  if (late) {
    snprintf(err, errlen, "the waiter did not %s sample %zu within %d ms",
             field == &w->ready ? "get to" : "finish", v, LIMIT_MS);
    return -1;
  }
  return 0;
}

/* Postings as stored, for the taskflow poster: made on board `a` and
 * left there (only their bytes and uuids are used). */
static int make_postings(void ***postings, size_t **lens, uuid_text **ids,
                         jb_board *a, size_t n, const jb_post *post,
                         char *err, size_t errlen) {
  *postings = calloc(n, sizeof **postings);
  *lens = calloc(n, sizeof **lens);
  *ids = calloc(n, sizeof **ids);
  if (*postings == NULL || *lens == NULL || *ids == NULL) {
    snprintf(err, errlen, "out of memory for %zu postings", n);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    jb_job *job = NULL;
    if (jb_job_post((*ids)[i], a, post) != JB_OK ||
        jb_job_get(&job, a, (*ids)[i]) != JB_OK)
      return fail(err, errlen, "posting for the taskflow poster");
    const void *p = jb_job_posting(job, &(*lens)[i]);
    (*postings)[i] = malloc((*lens)[i] ? (*lens)[i] : 1);
    if ((*postings)[i]) memcpy((*postings)[i], p, (*lens)[i]);
    jb_job_free(job);
    if ((*postings)[i] == NULL) {
      snprintf(err, errlen, "out of memory for postings");
      return -1;
    }
  }
  return 0;
}

/* Everything one poster's samples use. */
typedef struct {
  poster kind;
  jb_board *a;          /* the poster's board (A) */
  jb_sync_conn *ca;     /* publish: A's connection */
  redisContext *raw;    /* taskflow: the raw connection */
  char lk[512], sk[512]; /* taskflow: NS:listings, NS:sequence */
  void **postings;      /* taskflow: one posting per sample */
  size_t *lens;
  uuid_text *ids;
  const jb_post *post;
} poster_ctx;

/* Post sample i's job the poster's way. */
static int post_one(poster_ctx *p, size_t i, char *err, size_t errlen) {
  uuid_text u;
  switch (p->kind) {
  case POSTER_PUBLISH:
    if (jb_job_post(u, p->a, p->post) != JB_OK)
      return fail(err, errlen, "post on A");
    if (jb_sync_publish(p->a, p->ca, u) != JB_OK)
      return fail(err, errlen, "publish from A");
    return 0;
  case POSTER_REPLICATED:
    if (jb_job_post(u, p->a, p->post) != JB_OK)
      return fail(err, errlen, "post on A");
    return 0;
  case POSTER_TASKFLOW: {
    const char *incr[2] = {"INCR", p->sk};
    if (raw_ok(p->raw, redisCommandArgv(p->raw, 2, incr, NULL),
               REDIS_REPLY_INTEGER, "INCR", err, errlen))
      return -1;
    const char *hset[4] = {"HSETNX", p->lk, p->ids[i], p->postings[i]};
    size_t hl[4] = {6, strlen(p->lk), strlen(p->ids[i]), p->lens[i]};
    return raw_ok(p->raw, redisCommandArgv(p->raw, 4, hset, hl),
                  REDIS_REPLY_INTEGER, "HSETNX", err, errlen);
  }
  }
  return -1;
}

/*
 * One poster's samples: fresh boards B and A under dir (NAME-B, NAME-A),
 * namespace NS-NAME, B's replicator polling every poll_ms.
 */
static int measure_wake(bench_sync_wake *out, const char *dir,
                        const char *name, poster kind, int poll_ms,
                        size_t samples, const bench_sync_opts *o, char *err,
                        size_t errlen) {
  char bdir[4200], adir[4200], ns[512], bname[64], aname[64];
  snprintf(ns, sizeof ns, "%s-%s", o->ns, name);
  snprintf(bname, sizeof bname, "%s-B", name);
  snprintf(aname, sizeof aname, "%s-A", name);
  size_t n = samples + WARMUP_WAKES;
  jb_board *b = NULL;
  jb_sync_conn *cb = NULL;
  jb_sync_replicator *rb = NULL, *ra = NULL;
  poster_ctx p;
  memset(&p, 0, sizeof p);
  p.kind = kind;
  p.post = o->post;
  int64_t *t0 = calloc(n, sizeof *t0), *call = calloc(n, sizeof *call);
  waiter w;
  memset(&w, 0, sizeof w);
  w.woke_ns = calloc(n, sizeof *w.woke_ns);
  w.who = o->who;
  w.n = n;
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  pthread_t th;
  bool started = false;
  unsigned seed = (unsigned)bench_mono_ns();
  long out_poll = poll_ms ? poll_ms : 1000;
  int rc = -1;
  if (t0 == NULL || call == NULL || w.woke_ns == NULL) {
    snprintf(err, errlen, "out of memory for %zu samples", n);
    goto out;
  }
  if (subdir(bdir, sizeof bdir, dir, bname, err, errlen) ||
      subdir(adir, sizeof adir, dir, aname, err, errlen) ||
      open_board(&b, bdir, o->durability, err, errlen) ||
      open_board(&p.a, adir, o->durability, err, errlen) ||
      connect_ns(&cb, o->url, ns, err, errlen))
    goto out;
  if (jb_sync_attach(b, cb) != JB_OK) {
    fail(err, errlen, "attach B");
    goto out;
  }
  if (start_replicator(&rb, bdir, o->url, ns, poll_ms, o->durability, err,
                       errlen))
    goto out;
  if (kind == POSTER_PUBLISH) {
    if (connect_ns(&p.ca, o->url, ns, err, errlen)) goto out;
  } else if (kind == POSTER_REPLICATED) {
    if (start_replicator(&ra, adir, o->url, ns, 0, o->durability, err,
                         errlen))
      goto out;
  } else {
    if (make_postings(&p.postings, &p.lens, &p.ids, p.a, n, o->post, err,
                      errlen) ||
        (p.raw = raw_connect(o->url, err, errlen)) == NULL)
      goto out;
    if (jb_sync_key(p.lk, sizeof p.lk, cb, "listings") < 0 ||
        jb_sync_key(p.sk, sizeof p.sk, cb, "sequence") < 0) {
      fail(err, errlen, "keys");
      goto out;
    }
  }
  w.b = b;
  if (pthread_create(&th, NULL, waiter_run, &w) != 0) {
    snprintf(err, errlen, "cannot start the waiter thread");
    goto out;
  }
  started = true;
  for (size_t i = 0; i < n; i++) {
    if (await(&w, &w.ready, i + 1, err, errlen)) goto out;
    /* The taskflow poster posts at a random point of B's poll interval
     * (else always just after a poll: the previous sample's pull). */
    long phase_us = kind == POSTER_TASKFLOW
                        ? (long)(rand_r(&seed) % 1000u) * out_poll : 0;
    bench_sleep_us(SETTLE_US + phase_us);
    int64_t s = bench_mono_ns();
    if (post_one(&p, i, err, errlen)) goto out;
    call[i] = bench_mono_ns() - s;
    t0[i] = s;
    if (await(&w, &w.done, i + 1, err, errlen)) goto out;
  }
  size_t m = n - WARMUP_WAKES;
  for (size_t i = 0; i < m; i++) {
    t0[i] = w.woke_ns[WARMUP_WAKES + i] - t0[WARMUP_WAKES + i];
    call[i] = call[WARMUP_WAKES + i];
  }
  bench_lat_summarise(&out->lat, t0, m);
  bench_lat_summarise(&out->post_call, call, m);
  out->poll_ms = (int)out_poll; /* 0: the replicator's default, 1000 */
  rc = 0;
out:
  if (started) {
    /* It ends after its n samples; on a failure here it may be asleep. */
    if (rc != 0) jb_board_interrupt(b);
    pthread_join(th, NULL);
  }
  jb_sync_replicator_stop(ra);
  jb_sync_replicator_stop(rb);
  if (b) jb_sync_detach(b);
  jb_board_close(b);
  jb_board_close(p.a);
  jb_sync_close(p.ca);
  jb_sync_close(cb);
  if (p.raw) redisFree(p.raw);
  for (size_t i = 0; p.postings && i < n; i++) free(p.postings[i]);
  free(p.postings);
  free(p.lens);
  free(p.ids);
  free(t0);
  free(call);
  free(w.woke_ns);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.cv);
  return rc;
}

/* ------------------------------------------------- local cycles, sync on */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/*
 * Consume a job claimed locally. When the replicator marked it for
 * publication after the claim, the consume goes to Redis, which lists it
 * only once the post has run: until then the consume is refused as "not
 * on the board" (docs/DESIGN-NOTES.md, "Claims during publication"): try
 * again 20 us later; counted in *waits.
 */
static int consume(jb_board *c, const char *u, const bench_sync_opts *o,
                   uint64_t *waits, char *err, size_t errlen) {
  int64_t t0 = bench_mono_ns();
  for (;;) {
    int rc = jb_consume(c, u, o->who, 0, NULL);
    if (rc == JB_OK) return 0;
    if (rc != JB_ENOTFOUND || bench_mono_ns() - t0 > (int64_t)LIMIT_MS * 1000000)
      return fail(err, errlen, "consume");
    ++*waits;
    bench_sleep_us(20);
  }
}

/* n cycles on c; per-cycle ns into v; *waits += claim-nexts and consumes that
 * waited for a publication. */
static int cycles(jb_board *c, size_t n, const bench_sync_opts *o,
                  int64_t *v, uuid_text *ids, uint64_t *waits, char *err,
                  size_t errlen) {
  uuid_text u, got;
  for (size_t i = 0; i < n; i++) {
    int64_t s = v ? bench_mono_ns() : 0;
    if (jb_job_post(ids ? ids[i] : u, c, o->post) != JB_OK)
      return fail(err, errlen, "post");
    int rc = jb_claim_next(got, NULL, NULL, c, o->who, NULL);
    if (rc == JB_ENOTFOUND) {
      /* Only a job being published (Redis does not list it yet): wait
       * for the publication to be confirmed. */
      ++*waits;
      rc = jb_claim_next(got, NULL, NULL, c, o->who, &(jb_claim_options){.version = JB_CLAIM_OPTIONS_VERSION, .wait_ms = LIMIT_MS});
    }
    if (rc != JB_OK) return fail(err, errlen, "claim-next");
    if (consume(c, got, o, waits, err, errlen)) return -1;
    if (v) v[i] = bench_mono_ns() - s;
  }
  return 0;
}

/*
 * Sort the replicator setting's cycles by where their job went: published
 * to Redis (its publication marker NS:<uuid>.posted exists; our post
 * script leaves it for 30 days) or kept local. One pipeline of EXISTS.
 */
static int split(const int64_t *v, uuid_text *ids, size_t n,
                 redisContext *raw, jb_sync_conn *cc, int64_t *local,
                 size_t *nlocal, int64_t *remote, size_t *nremote, char *err,
                 size_t errlen) {
  for (size_t i = 0; i < n; i++) {
    char piece[64], key[512];
    snprintf(piece, sizeof piece, "%s.posted", ids[i]);
    if (jb_sync_key(key, sizeof key, cc, piece) < 0)
      return fail(err, errlen, "key");
    const char *argv[2] = {"EXISTS", key};
    if (redisAppendCommandArgv(raw, 2, argv, NULL) != REDIS_OK) {
      snprintf(err, errlen, "EXISTS: %s", raw->errstr);
      return -1;
    }
  }
  for (size_t i = 0; i < n; i++) {
    redisReply *a = NULL;
    if (redisGetReply(raw, (void **)&a) != REDIS_OK || a == NULL ||
        a->type != REDIS_REPLY_INTEGER) {
      snprintf(err, errlen, "EXISTS: %s", a ? "unexpected reply" : raw->errstr);
      if (a) freeReplyObject(a);
      return -1;
    }
    if (a->integer) remote[(*nremote)++] = v[i];
    else local[(*nlocal)++] = v[i];
    freeReplyObject(a);
  }
  return 0;
}

static int measure_cycles(bench_sync_figs *f, const char *dir,
                          const bench_sync_opts *o, char *err,
                          size_t errlen) {
  char cdir[4200], ns[512];
  snprintf(ns, sizeof ns, "%s-cycle", o->ns);
  size_t n = o->cycles, total = n * o->rounds;
  jb_board *c = NULL;
  jb_sync_conn *cc = NULL;
  jb_sync_replicator *r = NULL;
  int64_t *lat[BENCH_SYNC_NSETTINGS] = {NULL};
  int64_t *local = calloc(total ? total : 1, sizeof *local),
          *remote = calloc(total ? total : 1, sizeof *remote);
  size_t nlocal = 0, nremote = 0;
  uuid_text *ids = calloc(n ? n : 1, sizeof *ids);
  redisContext *raw = NULL;
  double *secs[BENCH_SYNC_NSETTINGS] = {NULL};
  int rc = -1;
  for (int k = 0; k < BENCH_SYNC_NSETTINGS; k++) {
    lat[k] = calloc(total, sizeof *lat[k]);
    secs[k] = calloc(o->rounds, sizeof *secs[k]);
    if (lat[k] == NULL || secs[k] == NULL) {
      snprintf(err, errlen, "out of memory for %zu cycles", total);
      goto out;
    }
  }
  if (local == NULL || remote == NULL || ids == NULL) {
    snprintf(err, errlen, "out of memory for %zu cycles", total);
    goto out;
  }
  if (subdir(cdir, sizeof cdir, dir, "cycle", err, errlen) ||
      open_board(&c, cdir, o->durability, err, errlen) ||
      connect_ns(&cc, o->url, ns, err, errlen) ||
      (raw = raw_connect(o->url, err, errlen)) == NULL)
    goto out;
  uint64_t waits = 0;
  if (cycles(c, WARMUP_CYCLES, o, NULL, NULL, &waits, err, errlen))
    goto out;
  for (unsigned round = 0; round < o->rounds; round++) {
    for (int k = 0; k < BENCH_SYNC_NSETTINGS; k++) {
      if (k >= BENCH_SYNC_ATTACHED && jb_sync_attach(c, cc) != JB_OK) {
        fail(err, errlen, "attach");
        goto out;
      }
      if (k == BENCH_SYNC_REPLICATOR &&
          start_replicator(&r, cdir, o->url, ns, 0, o->durability, err,
                           errlen))
        goto out;
      uint64_t w = 0;
      int64_t s = bench_mono_ns();
      if (cycles(c, n, o, lat[k] + (size_t)round * n, ids, &w, err, errlen))
        goto out;
      secs[k][round] = (double)(bench_mono_ns() - s) / 1e9;
      f->claim_waits += w;
      if (k == BENCH_SYNC_REPLICATOR &&
          split(lat[k] + (size_t)round * n, ids, n, raw, cc, local, &nlocal,
                remote, &nremote, err, errlen))
        goto out;
      if (r) {
        jb_sync_status st;
        if (jb_sync_replicator_status_read(&st, r) == JB_OK)
          f->published += st.published;
        jb_sync_replicator_stop(r);
        r = NULL;
      }
      jb_sync_detach(c);
    }
  }
  size_t left = 0;
  if (jb_board_count(&left, c, 0) != JB_OK) {
    fail(err, errlen, "count");
    goto out;
  }
  if (left != 0) {
    snprintf(err, errlen, "%zu jobs left on the board after whole cycles",
             left);
    goto out;
  }
  for (int k = 0; k < BENCH_SYNC_NSETTINGS; k++) {
    qsort(secs[k], o->rounds, sizeof *secs[k], cmp_double);
    double med = secs[k][o->rounds / 2];
    f->cycle_us[k] = med * 1e6 / (double)n;
    f->cycles_per_s[k] = med > 0 ? (double)n / med : 0;
    bench_lat_summarise(&f->cycle_lat[k], lat[k], total);
  }
  f->cycles_total = total;
  if (nlocal) bench_lat_summarise(&f->kept_local, local, nlocal);
  if (nremote) bench_lat_summarise(&f->via_redis, remote, nremote);
  rc = 0;
out:
  free(local);
  free(remote);
  free(ids);
  if (raw) redisFree(raw);
  jb_sync_replicator_stop(r);
  if (c) jb_sync_detach(c);
  jb_board_close(c);
  jb_sync_close(cc);
  for (int k = 0; k < BENCH_SYNC_NSETTINGS; k++) {
    free(lat[k]);
    free(secs[k]);
  }
  return rc;
}

int bench_sync(bench_sync_figs *f, const char *dir, const bench_sync_opts *o,
               char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  if (o->wakes > 0 &&
      (measure_wake(&f->publish, dir, "publish", POSTER_PUBLISH, 0, o->wakes,
                    o, err, errlen) ||
       measure_wake(&f->replicated, dir, "replicated", POSTER_REPLICATED, 0,
                    o->wakes, o, err, errlen)))
    return -1;
  for (size_t i = 0; o->poll_wakes > 0 && i < o->npolls; i++) {
    char name[64];
    snprintf(name, sizeof name, "taskflow-%d", o->polls[i]);
    if (measure_wake(&f->taskflow[i], dir, name, POSTER_TASKFLOW, o->polls[i],
                     o->poll_wakes, o, err, errlen))
      return -1;
    f->ntaskflow = i + 1;
  }
  if (o->cycles > 0 && o->rounds > 0 &&
      measure_cycles(f, dir, o, err, errlen))
    return -1;
  return 0;
}
