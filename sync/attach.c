/*
 * attach.c - a board handle deciding its Redis-decided jobs through one
 * connection (jb_sync_attach), and the minimal publisher (jb_sync_publish).
 * docs/DESIGN-NOTES.md, "The authority rule" and "The authority rule through
 * the board API".
 *
 * The attachment lives with the connection (created by the first attach or
 * publish, freed by jb_sync_close): the scripts registered on it and the
 * claim ids of the claims made through it, in memory, by (job, owner). A
 * release or extend of a claim this attachment made sends its claim id, so
 * Redis checks that it is this very claim; one it did not make (another
 * process's, or from before a restart) is checked by owner name only, as
 * taskflow does.
 *
 * A claim bound to this process with no lease (JB_REMOTE_KEEPALIVE) gets a
 * short expiry in Redis, which must be renewed while the process lives.
 * The board's replicator renews it, and so does this process itself: a
 * thread of the attachment (the renewer, started by the first such claim,
 * on a connection of its own) extends each one every third of the
 * keep-alive until it is released. So the claim lapses when the process
 * dies (or its host), not when the replicator does.
 */
#include "remote.h"

#include "core/sync_hook.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A claim made through this attachment: its id, by (job, owner), in a
 * chained hash table (a worker may hold thousands at once). */
typedef struct held {
  char uuid[JB_UUID_STRLEN];
  char who[JB_WHO_MAX + 1];
  char claim_id[JB_UUID_STRLEN];
  int unsure; /* 1 + the release op whose reply was lost, or 0 */
  int64_t keepalive_ms; /* > 0: bound to this process, renewed here */
  struct held *next;
} held;

typedef struct {
  jb__remote rm;
  bool ready; /* rm registered */
  held **buckets;
  size_t nbuckets, n; /* nbuckets: 0 or a power of two */
  /* The renewer. mu guards the table against it: the hooks (one thread:
   * the connection's user) change the table under mu, and read it
   * without; the renewer reads it under mu only. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  bool running, stop;
  int64_t period_ms;     /* a third of the shortest keep-alive */
  jb_sync_conn *rconn;   /* the renewer's own connection */
  jb__remote rrm;        /* on rconn */
  bool rready;
} attachment;

static void attachment_free(void *p) {
  attachment *a = p;
  if (a == NULL) return;
  if (a->running) {
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
  }
  jb_sync_close(a->rconn);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->cv);
  for (size_t i = 0; i < a->nbuckets; i++)
    for (held *h = a->buckets[i], *next; h; h = next) {
      next = h->next;
      free(h);
    }
  free(a->buckets);
  free(a);
}

/* The connection's attachment, made (and its scripts registered) on first
 * use. */
static int get_attachment(attachment **out, jb_sync_conn *c) {
  attachment *a = jb__sync_conn_attachment(c);
  if (a == NULL) {
    if ((a = calloc(1, sizeof *a)) == NULL)
      return jb__err(JB_ENOMEM, "out of memory attaching a board");
    pthread_mutex_init(&a->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->cv, &ca);
    pthread_condattr_destroy(&ca);
    jb__sync_conn_set_attachment(c, a, attachment_free);
  }
  if (!a->ready) {
    int rc = jb__remote_init(&a->rm, c, true);
    if (rc != JB_OK) return rc;
    a->ready = true;
  }
  *out = a;
  return JB_OK;
}

/* FNV-1a over the uuid, a separator and the owner. */
static size_t slot(const attachment *a, const char *uuid, const char *who) {
  uint64_t h = 1469598103934665603u;
  for (const char *p = uuid; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211u;
  h = (h ^ 0xff) * 1099511628211u;
  for (const char *p = who; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211u;
  return (size_t)h & (a->nbuckets - 1);
}

static held **find_link(attachment *a, const char *uuid, const char *who) {
  if (a->nbuckets == 0) return NULL;
  held **l = &a->buckets[slot(a, uuid, who)];
  while (*l && (strcmp((*l)->uuid, uuid) != 0 || strcmp((*l)->who, who) != 0))
    l = &(*l)->next;
  return *l ? l : NULL;
}

static held *find_held(attachment *a, const char *uuid, const char *who) {
  held **l = find_link(a, uuid, who);
  return l ? *l : NULL;
}

/* Copy the NUL-terminated src into dst of `size` bytes, cut to fit
 * (snprintf "%s" without the formatting, on every claim and release). */
static void copy_text(char *dst, size_t size, const char *src) {
  size_t n = strnlen(src, size - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Remember claim_id for (uuid, who); h: the entry find_held returned for
 * them, or NULL (looked up here). */
static int add_held_locked(attachment *a, held *h, const char *uuid,
                           const char *who, const char *claim_id) {
  if (h == NULL) h = find_held(a, uuid, who);
  if (h == NULL) {
    if (a->n >= a->nbuckets) { /* load factor 1: double and rehash */
      size_t nb = a->nbuckets ? a->nbuckets * 2 : 64;
      held **b = calloc(nb, sizeof *b);
      if (b == NULL) return jb__err(JB_ENOMEM, "out of memory for a claim id");
      attachment grown = *a;
      grown.buckets = b;
      grown.nbuckets = nb;
      for (size_t i = 0; i < a->nbuckets; i++)
        for (held *e = a->buckets[i], *next; e; e = next) {
          next = e->next;
          size_t k = slot(&grown, e->uuid, e->who);
          e->next = b[k];
          b[k] = e;
        }
      free(a->buckets);
      a->buckets = b;
      a->nbuckets = nb;
    }
    if ((h = calloc(1, sizeof *h)) == NULL)
      return jb__err(JB_ENOMEM, "out of memory for a claim id");
    copy_text(h->uuid, sizeof h->uuid, uuid);
    copy_text(h->who, sizeof h->who, who);
    size_t k = slot(a, uuid, who);
    h->next = a->buckets[k];
    a->buckets[k] = h;
    a->n++;
  }
  copy_text(h->claim_id, sizeof h->claim_id, claim_id);
  h->keepalive_ms = 0; /* a new claim: bound again only by hook_claim */
  return JB_OK;
}

static int add_held(attachment *a, held *h, const char *uuid, const char *who,
                    const char *claim_id) {
  pthread_mutex_lock(&a->mu);
  int rc = add_held_locked(a, h, uuid, who, claim_id);
  pthread_mutex_unlock(&a->mu);
  return rc;
}

static void drop_held(attachment *a, const char *uuid, const char *who) {
  pthread_mutex_lock(&a->mu);
  held **l = find_link(a, uuid, who);
  if (l != NULL) {
    held *h = *l;
    *l = h->next;
    free(h);
    a->n--;
  }
  pthread_mutex_unlock(&a->mu);
}

/* ---------------------------------------------------------- the renewer */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One claim to renew, copied out of the table. */
typedef struct {
  char uuid[JB_UUID_STRLEN];
  char who[JB_WHO_MAX + 1];
  char claim_id[JB_UUID_STRLEN];
  int64_t keepalive_ms;
} renewal;

/* Extend each bound claim of the table by its keep-alive. One refused
 * (lapsed and taken, released, cancelled) is renewed no more; one that
 * Redis could not be asked about is tried again next round. */
static void renew_round(attachment *a) {
  renewal *r = NULL;
  size_t n = 0;
  pthread_mutex_lock(&a->mu);
  size_t cap = a->n;
  if (cap && (r = malloc(cap * sizeof *r)) != NULL)
    for (size_t i = 0; i < a->nbuckets; i++)
      for (held *h = a->buckets[i]; h && n < cap; h = h->next)
        if (h->keepalive_ms > 0 && h->claim_id[0] && !h->unsure) {
          memcpy(r[n].uuid, h->uuid, sizeof r[n].uuid);
          memcpy(r[n].who, h->who, sizeof r[n].who);
          memcpy(r[n].claim_id, h->claim_id, sizeof r[n].claim_id);
          r[n++].keepalive_ms = h->keepalive_ms;
        }
  pthread_mutex_unlock(&a->mu);
  if (n && !a->rready) a->rready = jb__remote_init(&a->rrm, a->rconn, false) ==
                                   JB_OK;
  for (size_t i = 0; a->rready && i < n; i++) {
    jb__remote_result res;
    int rc = jb__remote_extend(&res, &a->rrm, r[i].uuid, r[i].who,
                               r[i].claim_id, r[i].keepalive_ms);
    if (rc != JB_ENOTFOUND && rc != JB_ENOTOWNER) continue;
    pthread_mutex_lock(&a->mu);
    held *h = find_held(a, r[i].uuid, r[i].who);
    if (h && strcmp(h->claim_id, r[i].claim_id) == 0) h->keepalive_ms = 0;
    pthread_mutex_unlock(&a->mu);
  }
  free(r);
}

static void *renewer(void *p) {
  attachment *a = p;
  pthread_mutex_lock(&a->mu);
  while (!a->stop) {
    int64_t at = mono_ms() + a->period_ms;
    struct timespec ts = {(time_t)(at / 1000), (long)(at % 1000) * 1000000};
    while (!a->stop && mono_ms() < at)
      pthread_cond_timedwait(&a->cv, &a->mu, &ts);
    if (a->stop) break;
    pthread_mutex_unlock(&a->mu);
    renew_round(a);
    pthread_mutex_lock(&a->mu);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* Mark the claim (uuid, who) bound to this process, renewed every third
 * of keepalive_ms from now on; the renewer starts with the first. Best
 * effort: without it the board's replicator still renews the claim. */
static void renew_from_now(attachment *a, const char *uuid, const char *who,
                           int64_t keepalive_ms) {
  pthread_mutex_lock(&a->mu);
  held *h = find_held(a, uuid, who);
  if (h) h->keepalive_ms = keepalive_ms;
  int64_t period = keepalive_ms / 3 > 0 ? keepalive_ms / 3 : 1;
  if (a->period_ms == 0 || period < a->period_ms) a->period_ms = period;
  if (!a->running && h &&
      (a->rconn || jb__sync_conn_clone(&a->rconn, a->rm.conn) == JB_OK)) {
    /* No signal for the renewer: the process's own threads take them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    a->running = pthread_create(&a->thread, NULL, renewer, a) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  pthread_mutex_unlock(&a->mu);
}

/* ------------------------------------------------------------- the hook */

/* The expiry a claim bound to a process, with no lease, gets in Redis:
 * the keep-alive of the board's replicator, which records it when it is
 * elected (else the default). */
static int64_t keepalive_of(jb_board *b) {
  char v[32];
  long long ka = 0;
  if (jb__board_setting_get(b, "sync.keepalive_ms", v, sizeof v, NULL) ==
      JB_OK)
    ka = strtoll(v, NULL, 10);
  return ka > 0 ? ka : JB_SYNC_KEEPALIVE_MS;
}

/*
 * The expiry in Redis of a claim bound to this process with no lease
 * (`what`: "job U", or "N jobs" for several). Redis cannot see this
 * host's processes: the claim gets a short expiry, renewed while the
 * holder lives by the board's replicator and by this process's renewer,
 * so that it lapses when the host dies and not before. A replicator must
 * run when it is made (it abandons the claim at once when the holder
 * dies; without one it would lapse only after the expiry): JB_EOFFLINE
 * otherwise. The expiry is the replicator's keep-alive (it records it in
 * the board's settings).
 */
static int bound_expiry(int64_t *lease_ms, jb_board *b, const char *what) {
  const char *board = jb_board_path(b);
  if (!jb__sync_replicator_runs(board))
    return jb__err(JB_EOFFLINE, "cannot claim %s bound to this process "
                   "without a lease: backend unavailable (decided by Redis, "
                   "which cannot see this host's processes, and no "
                   "replicator runs on board %s to keep the claim alive: "
                   "run `jobboard sync`, or give a lease)", what, board);
  *lease_ms = keepalive_of(b);
  return JB_OK;
}

/*
 * A claim. The claim id is remembered before the script is sent, so that a
 * claim whose reply was lost is resolved by reading Redis (never guessed):
 * at once if the server answers again, else by the next claim of the same
 * job by the same owner, which re-sends the same claim id (Redis answers
 * "already held under this claim id": ours).
 */
static int hook_claim(void *ctx, jb_board *b, const char *uuid,
                      const char *who, int64_t lease_ms, uint64_t *fence) {
  attachment *a = ctx;
  bool bound = lease_ms == JB_REMOTE_KEEPALIVE;
  char what[64];
  snprintf(what, sizeof what, "job %s", uuid);
  int rc;
  if (bound && (rc = bound_expiry(&lease_ms, b, what)) != JB_OK) return rc;
  char id[JB_UUID_STRLEN];
  held *h = find_held(a, uuid, who);
  if (h && h->claim_id[0])
    copy_text(id, sizeof id, h->claim_id);
  else if ((rc = jb__remote_claim_id(id)) != JB_OK ||
           (rc = add_held(a, h, uuid, who, id)) != JB_OK)
    return rc;
  jb__remote_owner o = {who, lease_ms, id, 0};
  jb__remote_result res;
  rc = jb__remote_claim(&res, &a->rm, uuid, &o);
  if (rc == JB_EOFFLINE && res.unsure) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    jb__remote_state st;
    int held_by = jb__remote_resolve_claim(&st, &a->rm, uuid, who, id);
    if (held_by == JB__REMOTE_HELD) {
      *fence = st.fence;
      if (bound) renew_from_now(a, uuid, who, lease_ms);
      return JB_OK;
    }
    if (held_by < 0) /* still away: the claim id stays for a retry */
      return jb__err(JB_EOFFLINE, "%s (the claim may have run in Redis: "
                     "claiming again resolves it)", msg);
    drop_held(a, uuid, who);
    return jb__err(JB_EOFFLINE, "%s", msg);
  }
  if (rc != JB_OK) {
    drop_held(a, uuid, who);
    return rc;
  }
  *fence = res.fence;
  if (bound) renew_from_now(a, uuid, who, lease_ms);
  return JB_OK;
}

/*
 * Claims of n jobs in one round trip (jb__remote_claim_many), each kept as
 * hook_claim keeps one: its claim id remembered before the script is
 * sent, a refusal forgetting it. A connection lost after the script was
 * sent leaves its jobs unsure (it ran for all of them or for none): each
 * is resolved by reading Redis, as hook_claim resolves one (held: ours,
 * JB_OK), until a read fails too; then it and the unsure ones after it are
 * JB_EOFFLINE with their claim ids kept, so that claiming them again
 * through this connection resolves them (and the replicator's mirror
 * shows the board any of them that ran: claimed by `who`).
 */
static int hook_claim_many(void *ctx, jb_board *b, size_t n,
                           const char *const *uuids, const char *who,
                           int64_t lease_ms, uint64_t *fences, int *results) {
  attachment *a = ctx;
  bool bound = lease_ms == JB_REMOTE_KEEPALIVE;
  char what[64];
  snprintf(what, sizeof what, "%zu jobs", n);
  int rc;
  if (bound && (rc = bound_expiry(&lease_ms, b, what)) != JB_OK) return rc;
  char(*ids)[JB_UUID_STRLEN] = malloc(n * sizeof *ids);
  const char **idp = malloc(n * sizeof *idp);
  jb__remote_result *res = malloc(n * sizeof *res);
  bool *fresh = calloc(n, sizeof *fresh);
  size_t added = 0;
  rc = !ids || !idp || !res || !fresh
           ? jb__err(JB_ENOMEM, "out of memory for %zu claims", n)
           : JB_OK;
  for (; rc == JB_OK && added < n; added++) {
    held *h = find_held(a, uuids[added], who);
    if (h && h->claim_id[0])
      copy_text(ids[added], sizeof ids[added], h->claim_id);
    else if ((rc = jb__remote_claim_id(ids[added])) != JB_OK ||
             (rc = add_held(a, h, uuids[added], who, ids[added])) != JB_OK)
      break;
    else
      fresh[added] = true;
    idp[added] = ids[added];
  }
  if (rc == JB_OK) {
    jb__remote_owner o = {who, lease_ms, idp[0], 0};
    rc = jb__remote_claim_many(res, results, &a->rm, n, uuids, &o, idp);
  }
  if (rc != JB_OK) {
    /* Nothing was sent: the ids made for this call go; one kept from an
     * earlier claim whose reply was lost stays, so that the next claim
     * of its job still resolves it. */
    for (size_t i = 0; i < added; i++)
      if (fresh[i]) drop_held(a, uuids[i], who);
    goto out;
  }
  char msg[768] = "";
  if (jb_errmsg()[0]) snprintf(msg, sizeof msg, "%s", jb_errmsg());
  bool readable = true;
  size_t unresolved = 0, offline = 0;
  for (size_t i = 0; i < n; i++) {
    if (results[i] == JB_EOFFLINE && res[i].unsure) {
      jb__remote_state st;
      int held_by = readable ? jb__remote_resolve_claim(&st, &a->rm, uuids[i],
                                                        who, ids[i])
                             : JB_EOFFLINE;
      if (held_by == JB__REMOTE_HELD) {
        results[i] = JB_OK;
        res[i].fence = st.fence;
      } else if (held_by < 0) {
        readable = false; /* still away: the claim id stays for a retry */
        unresolved++;
      } else {
        drop_held(a, uuids[i], who);
      }
    } else if (results[i] == JB_EOFFLINE) {
      /* Never sent (a chunk after one that failed): as when nothing was
       * sent, a kept id stays for the next claim of its job to resolve. */
      if (fresh[i]) drop_held(a, uuids[i], who);
    } else if (results[i] != JB_OK) {
      drop_held(a, uuids[i], who);
    }
    if (results[i] == JB_OK) {
      fences[i] = res[i].fence;
      if (bound) renew_from_now(a, uuids[i], who, lease_ms);
    } else if (results[i] == JB_EOFFLINE) {
      offline++;
    }
  }
  if (offline)
    jb__err(JB_EOFFLINE, "%s%s", msg,
            unresolved ? " (claims whose replies were lost may have run in "
                         "Redis: claiming those jobs again resolves them)"
                       : "");
  else if (msg[0])
    jb__err(JB_OK, "%s", msg);
out:
  free(ids);
  free(idp);
  free(res);
  free(fresh);
  return rc;
}

static int hook_release(attachment *a, jb__remote_release_op op,
                        const char *uuid, const char *who,
                        const jb_remote_outcome *outcome) {
  held *h = find_held(a, uuid, who);
  char id[JB_UUID_STRLEN] = "";
  if (h) copy_text(id, sizeof id, h->claim_id);
  if (h && h->unsure == (int)op + 1) {
    /* This release was sent before and its reply lost: what Redis holds
     * says whether it ran (sending it again would be refused if it did). */
    int done = jb__remote_resolve_release(NULL, &a->rm, op, uuid, who,
                                          id[0] ? id : NULL);
    if (done < 0) return done;
    if (done == 1) {
      drop_held(a, uuid, who);
      return JB_OK;
    }
    h->unsure = 0;
  }
  jb__remote_result res;
  int rc = jb__remote_release_x(&res, &a->rm, op, uuid, who,
                                id[0] ? id : NULL, outcome);
  if (rc == JB_EOFFLINE && res.unsure) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    int done = jb__remote_resolve_release(NULL, &a->rm, op, uuid, who,
                                          id[0] ? id : NULL);
    if (done != 1) {
      /* Resolved by the next try (a release by owner name is remembered
       * with no claim id). */
      if (h == NULL && add_held(a, NULL, uuid, who, "") == JB_OK)
        h = find_held(a, uuid, who);
      if (h) h->unsure = (int)op + 1;
      return jb__err(JB_EOFFLINE, "%s%s", msg,
                     h ? " (trying again resolves it)" : "");
    }
    rc = JB_OK;
  }
  if (rc == JB_OK) drop_held(a, uuid, who);
  return rc;
}

static int hook_abandon(void *ctx, const char *uuid, const char *who) {
  return hook_release(ctx, JB__REMOTE_ABANDON, uuid, who, NULL);
}

static int hook_consume(void *ctx, const char *uuid, const char *who,
                        const jb_remote_outcome *outcome) {
  return hook_release(ctx, JB__REMOTE_CONSUME, uuid, who, outcome);
}

static int hook_trash(void *ctx, const char *uuid, const char *who,
                      const jb_remote_outcome *outcome) {
  return hook_release(ctx, JB__REMOTE_TRASH, uuid, who, outcome);
}

/* An extend whose reply was lost is not resolved: setting an expiry is
 * idempotent, so the caller may simply extend again. */
static int hook_extend(void *ctx, const char *uuid, const char *who,
                       int64_t lease_ms) {
  attachment *a = ctx;
  held *h = find_held(a, uuid, who);
  if (h && h->keepalive_ms) {
    /* The claim has a lease from now on: its holder extends it, and the
     * renewer must not stretch it. */
    pthread_mutex_lock(&a->mu);
    h->keepalive_ms = 0;
    pthread_mutex_unlock(&a->mu);
  }
  jb__remote_result res;
  return jb__remote_extend(&res, &a->rm, uuid, who, h ? h->claim_id : NULL,
                           lease_ms);
}

/* A release of a job no longer on the board (core/sync_hook.h): only one this
 * handle sent before, whose reply was lost, is looked up in Redis. */
static int hook_settle(void *ctx, int op, const char *uuid, const char *who) {
  attachment *a = ctx;
  jb__remote_release_op rop = op == JB_REMOTE_ABANDON   ? JB__REMOTE_ABANDON
                              : op == JB_REMOTE_CONSUME ? JB__REMOTE_CONSUME
                                                        : JB__REMOTE_TRASH;
  held *h = find_held(a, uuid, who);
  if (h == NULL || h->unsure != (int)rop + 1) return 0;
  int done = jb__remote_resolve_release(NULL, &a->rm, rop, uuid, who,
                                        h->claim_id[0] ? h->claim_id : NULL);
  if (done < 0) return done; /* still unsure: the next try asks again */
  drop_held(a, uuid, who);
  return done;
}

/* A unique key reserved before the post (DESIGN-NOTES "Unique keys and
 * cancel through Redis"), pending until hook_confirm. A reply lost on the
 * way is Redis away: the post goes on, and the publication decides (a
 * reservation that did run only holds the key for this very job). Another
 * job's pending reservation is waited for: confirmed, it refuses this
 * post; run out (its post died before committing), the key is free. */
static int hook_reserve(void *ctx, const char *key, const char *uuid,
                        int64_t hold_ms, char holder[JB_UUID_STRLEN]) {
  attachment *a = ctx;
  jb__remote_result res;
  holder[0] = '\0';
  int64_t hold = hold_ms > 0 && hold_ms < JB__REMOTE_PENDING_MS
                     ? hold_ms
                     : JB__REMOTE_PENDING_MS;
  int64_t until = mono_ms() + JB__REMOTE_PENDING_MS + 1000;
  int rc;
  for (;;) {
    rc = jb__remote_reserve_x(&res, &a->rm, key, uuid, hold, true);
    if (rc != JB_EEXISTS || !res.pending || mono_ms() >= until) break;
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
  }
  if (rc == JB_EEXISTS) copy_text(holder, JB_UUID_STRLEN, res.holder);
  return rc;
}

static void hook_confirm(void *ctx, const char *key, const char *uuid,
                         int64_t hold_ms) {
  attachment *a = ctx;
  jb__remote_result res;
  jb__remote_reserve_x(&res, &a->rm, key, uuid, hold_ms > 0 ? hold_ms : 1,
                       false);
}

static void hook_unreserve(void *ctx, const char *key, const char *uuid) {
  attachment *a = ctx;
  jb__remote_result res;
  jb__remote_reserve(&res, &a->rm, key, uuid, 0);
}

/* A cancel whose reply was lost is not resolved here: cancelling again
 * finds the job gone (JB_ENOTFOUND) if it ran, and the replicator then
 * takes it off the board. */
static int hook_cancel(void *ctx, const char *uuid, bool force) {
  attachment *a = ctx;
  jb__remote_result res;
  return jb__remote_cancel(&res, &a->rm, uuid, force);
}

static const jb_remote_ops hook = {
    hook_claim,   hook_abandon,   hook_consume, hook_trash,  hook_extend,
    hook_settle,  hook_reserve,   hook_unreserve, hook_cancel, hook_confirm,
    hook_claim_many};

/* The same without claim_many: claim-next of many jobs claims each
 * Redis-decided one in a round trip of its own. JOBBOARD_SYNC_CLAIM_MANY=0
 * picks it, so that the two are compared on one build (jobboard-bench
 * --redis measures both; tests check that both claim the same jobs), and
 * so that a server that refuses claim_many.lua can still be used. */
static const jb_remote_ops hook_one_by_one = {
    hook_claim,   hook_abandon,   hook_consume, hook_trash,  hook_extend,
    hook_settle,  hook_reserve,   hook_unreserve, hook_cancel, hook_confirm,
    NULL};

int jb_sync_attach(jb_board *b, jb_sync_conn *c) {
  if (b == NULL || c == NULL)
    return jb__err(JB_EINVAL, "jb_sync_attach: NULL board or connection");
  attachment *a;
  int rc = get_attachment(&a, c);
  if (rc != JB_OK) return rc;
  const char *many = getenv("JOBBOARD_SYNC_CLAIM_MANY");
  bool one_by_one = many && strcmp(many, "0") == 0;
  jb__board_set_remote(b, one_by_one ? &hook_one_by_one : &hook, a);
  return JB_OK;
}

void jb_sync_detach(jb_board *b) { jb__board_set_remote(b, NULL, NULL); }

/* ------------------------------------------------------------ publish */

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int jb__sync_post_marked(jb__remote_result *res, jb__remote *rm, jb_board *b,
                         const char *uuid, int64_t keepalive_ms,
                         char claim_id[JB_UUID_STRLEN]) {
  memset(res, 0, sizeof *res);
  jb_job *job = NULL;
  int rc = jb_job_get(&job, b, uuid);
  if (rc != JB_OK) return rc;
  if (!jb_job_remote(job)) {
    jb_job_free(job);
    return jb__err(JB_EINVAL, "cannot publish job %s: it is not marked for "
                   "publication", uuid);
  }
  size_t len = 0;
  const void *posting = jb_job_posting(job, &len);
  const char *who = jb_job_owner(job);
  jb__remote_owner o = {0};
  if (who) {
    /* Claimed locally before publication: published with its owner and
     * what is left of its lease; a process-bound claim without a lease
     * with the keep-alive expiry, which the replicator refreshes while
     * the process lives. */
    int64_t exp = jb_job_lease_expires(job);
    int64_t left = exp ? exp / 1000 - wall_ms() : 0;
    if (exp && left < 1) left = 1; /* lapsing now: lapses in Redis too */
    if (!exp && jb_job_holder_pid(job) != 0) {
      if (keepalive_ms <= 0) {
        jb_job_free(job);
        return jb__err(JB_EINVAL, "cannot publish job %s: its claim is bound "
                       "to a process of this host and has no lease, so it "
                       "would never lapse in Redis (extend it with a lease "
                       "first, or let the replicator publish it)", uuid);
      }
      left = keepalive_ms;
    }
    if (claim_id[0] == '\0' && (rc = jb__remote_claim_id(claim_id)) != JB_OK) {
      jb_job_free(job);
      return rc;
    }
    o = (jb__remote_owner){who, left, claim_id, jb_job_modified(job)};
  }
  /* Its unique key is taken in the same script, or the post is refused
   * (JB_EEXISTS, res->holder) when another live job holds it in Redis. */
  rc = jb__remote_post_unique(res, rm, uuid, posting, len, who ? &o : NULL,
                              jb_job_unique_key(job));
  if (rc == JB_EOFFLINE && res->unsure) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    jb__remote_state st;
    int ran = jb__remote_resolve_post(&st, rm, uuid);
    if (ran == 1) {
      res->again = true;
      res->gone = !st.listed;
      res->sequence = st.posted_sequence;
      res->unsure = false;
      rc = JB_OK;
    } else {
      rc = jb__err(JB_EOFFLINE, "%s", msg);
    }
  }
  jb_job_free(job);
  return rc;
}

int jb__sync_refuse_unique(jb_board *b, const char *uuid,
                           const jb__remote_result *res) {
  char msg[512], reason[700];
  snprintf(msg, sizeof msg, "%s", jb_errmsg());
  /* A schedule's run (its key "schedule:NAME:RUN_US") that another board
   * ticking the same schedule posted first: that run is Redis's already;
   * this copy is cancelled, not a dead letter for someone to requeue. */
  jb_job *job = NULL;
  bool run = jb_job_get(&job, b, uuid) == JB_OK && jb_job_unique_key(job) &&
             strncmp(jb_job_unique_key(job), JB_SCHEDULE_KEY_PREFIX,
                     strlen(JB_SCHEDULE_KEY_PREFIX)) == 0;
  jb_job_free(job);
  if (run) {
    snprintf(reason, sizeof reason, "not published: %s; this run of the "
             "schedule was posted by another board", msg);
    int rc = jb__board_bury_unpublished(b, uuid, reason, true);
    if (rc != JB_OK) return rc; /* JB_ENOTFOUND: completed meanwhile */
    return jb__err(JB_EEXISTS, "job %s, a run of a schedule another board "
                   "posted too, was cancelled here: %s (holder %s)", uuid,
                   msg, res->holder);
  }
  snprintf(reason, sizeof reason, "not published: %s; the job was posted "
           "while redis was unreachable (requeue it once that job is done)",
           msg);
  int rc = jb__board_bury_unpublished(b, uuid, reason, false);
  if (rc == JB_ENOTFOUND) return JB_ENOTFOUND; /* completed meanwhile */
  if (rc != JB_OK) return rc;
  return jb__err(JB_EEXISTS, "job %s was not published and went to the "
                 "dead letters: %s (holder %s)", uuid, msg, res->holder);
}

int jb_sync_publish(jb_board *b, jb_sync_conn *c, const char *uuid) {
  if (b == NULL || c == NULL)
    return jb__err(JB_EINVAL, "publish: NULL board or connection");
  attachment *a;
  int rc = get_attachment(&a, c);
  if (rc != JB_OK) return rc;
  /* A claim bound to a process of this host and with no lease would never
   * lapse in Redis (nobody here keeps it alive): refused, unmarked. */
  jb_job *job = NULL;
  if ((rc = jb_job_get(&job, b, uuid)) != JB_OK) return rc;
  bool bound = jb_job_owner(job) && jb_job_holder_pid(job) != 0 &&
               jb_job_lease_expires(job) == 0;
  bool stuck = bound && !jb__sync_replicator_runs(jb_board_path(b));
  char who[JB_WHO_MAX + 1] = "";
  if (jb_job_owner(job)) snprintf(who, sizeof who, "%s", jb_job_owner(job));
  jb_job_free(job);
  if (stuck)
    return jb__err(JB_EINVAL, "cannot publish job %s: its claim is bound to "
                   "a process of this host and has no lease, so it would "
                   "never lapse in Redis and no replicator runs on the board "
                   "to keep it alive (extend it with a lease first)",
                   uuid);
  /* Marked first: from here on no local claim can slip in between the
   * snapshot and the post (every ownership change of the job now goes
   * through Redis, which refuses it until the post has run). */
  if ((rc = jb__board_set_published(b, &uuid, 1, JB_PUB_PENDING, NULL, NULL)))
    return rc;
  char id[JB_UUID_STRLEN] = "";
  held *h = who[0] ? find_held(a, uuid, who) : NULL;
  if (h) snprintf(id, sizeof id, "%s", h->claim_id);
  jb__remote_result res;
  rc = jb__sync_post_marked(&res, &a->rm, b, uuid,
                            bound ? keepalive_of(b) : 0, id);
  if (rc == JB_OK) {
    /* The claim id the job went out with, for this connection's releases
     * (the owner read at the snapshot may differ from `who`: look again). */
    jb_job *now = NULL;
    if (id[0] && jb_job_get(&now, b, uuid) == JB_OK && jb_job_owner(now))
      add_held(a, NULL, uuid, jb_job_owner(now), id);
    jb_job_free(now);
    int src = rc;
    rc = jb__board_set_published(b, &uuid, 1, JB_PUB_DONE, &res.sequence,
                                 NULL);
    if (rc == JB_ENOTFOUND) rc = src; /* completed since: nothing to mark */
  } else if (rc == JB_EEXISTS) {
    rc = jb__sync_refuse_unique(b, uuid, &res);
  } else if (rc == JB_EINVAL) {
    /* Refused by Redis before anything was written (another posting under
     * this uuid): the job stays decided here. */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", jb_errmsg());
    jb__board_set_published(b, &uuid, 1, JB_PUB_LOCAL, NULL, NULL);
    rc = jb__err(JB_EINVAL, "%s", msg);
  }
  return rc;
}
