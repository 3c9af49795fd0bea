/*
 * stats.c - the board's figures (jb_stats_read) and its monotonic
 * counters (txn.h, "The board's monotonic counters").
 *
 * The figures are read in one read transaction: the ready, claims and
 * delayed indexes are walked once each (O(jobs); with names, each job's
 * posting is read too), the history back to an hour ago, and the rest
 * comes from LMDB's statistics. Nothing is written.
 */
#include "history.h"
#include "txn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- counters */

/* The counters' record: in LMDB's main tree (txn.h says why), else, on a
 * board whose counters have not moved yet, in meta. *in_meta says where it
 * was found. */
static int counters_find(jb_store *s, MDB_txn *txn, MDB_val *v, bool *in_meta) {
  MDB_dbi main;
  int rc = mdb_dbi_open(txn, NULL, 0, &main);
  if (rc) return rc;
  MDB_val k = {sizeof JB_MAIN_COUNTERS - 1, (void *)JB_MAIN_COUNTERS};
  *in_meta = false;
  rc = mdb_get(txn, main, &k, v);
  if (rc != MDB_NOTFOUND) return rc;
  *in_meta = true;
  k = (MDB_val){sizeof JB_META_COUNTERS - 1, (void *)JB_META_COUNTERS};
  return mdb_get(txn, s->meta, &k, v);
}

int jb__counters_get(jb_store *s, MDB_txn *txn, uint64_t out[JB_CTR_N]) {
  memset(out, 0, JB_CTR_N * sizeof *out);
  MDB_val v;
  bool in_meta;
  int rc = counters_find(s, txn, &v, &in_meta);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  size_t n = v.mv_size / sizeof(uint64_t);
  memcpy(out, v.mv_data, (n > JB_CTR_N ? JB_CTR_N : n) * sizeof *out);
  return 0;
}

int jb__counters_add(jb_store *s, MDB_txn *txn, const uint32_t *add) {
  bool any = false;
  for (int i = 0; i < JB_CTR_N && !any; i++) any = add[i] != 0;
  if (!any) return 0;
  uint64_t c[JB_CTR_N];
  memset(c, 0, sizeof c);
  MDB_val v;
  bool in_meta = false;
  int rc = counters_find(s, txn, &v, &in_meta);
  if (rc && rc != MDB_NOTFOUND) return rc;
  if (rc == 0) {
    size_t n = v.mv_size / sizeof(uint64_t);
    memcpy(c, v.mv_data, (n > JB_CTR_N ? JB_CTR_N : n) * sizeof *c);
  }
  for (int i = 0; i < JB_CTR_N; i++) c[i] += add[i];
  MDB_dbi main;
  if ((rc = mdb_dbi_open(txn, NULL, 0, &main))) return rc;
  MDB_val k = {sizeof JB_MAIN_COUNTERS - 1, (void *)JB_MAIN_COUNTERS};
  v = (MDB_val){sizeof c, c};
  if ((rc = mdb_put(txn, main, &k, &v, 0))) return rc;
  if (in_meta) { /* moved: the first count of a board that kept them there */
    k = (MDB_val){sizeof JB_META_COUNTERS - 1, (void *)JB_META_COUNTERS};
    rc = mdb_del(txn, s->meta, &k, NULL);
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  return rc;
}

/* ------------------------------------------------------- names (a hash) */

typedef struct {
  size_t n, cap;          /* entries */
  jb_stats_name *e;
  size_t *slot;           /* index + 1 into e; 0: free */
  size_t nslot;           /* a power of two */
} name_tab;

static uint64_t name_hash(const char *p, size_t n) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * UINT64_C(1099511628211);
  return h;
}

static void tab_free(name_tab *t) {
  for (size_t i = 0; i < t->n; i++) free(t->e[i].name);
  free(t->e);
  free(t->slot);
  *t = (name_tab){0};
}

static int tab_grow(name_tab *t) {
  size_t ns = t->nslot ? t->nslot * 2 : 64;
  size_t *sl = calloc(ns, sizeof *sl);
  if (sl == NULL) return ENOMEM;
  for (size_t i = 0; i < t->n; i++) {
    size_t at = name_hash(t->e[i].name, strlen(t->e[i].name)) & (ns - 1);
    while (sl[at]) at = (at + 1) & (ns - 1);
    sl[at] = i + 1;
  }
  free(t->slot);
  t->slot = sl;
  t->nslot = ns;
  return 0;
}

/* Count one job of `name` (n bytes; a NUL inside ends it) in `state`. */
static int tab_add(name_tab *t, const char *name, size_t n, int state) {
  const char *nul = memchr(name, 0, n);
  if (nul) n = (size_t)(nul - name);
  if ((t->n + 1) * 2 > t->nslot) {
    int rc = tab_grow(t);
    if (rc) return rc;
  }
  size_t at = name_hash(name, n) & (t->nslot - 1);
  for (; t->slot[at]; at = (at + 1) & (t->nslot - 1)) {
    jb_stats_name *e = &t->e[t->slot[at] - 1];
    if (strncmp(e->name, name, n) == 0 && e->name[n] == 0) {
      e->jobs[state]++;
      return 0;
    }
  }
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    jb_stats_name *ne = realloc(t->e, cap * sizeof *ne);
    if (ne == NULL) return ENOMEM;
    t->e = ne;
    t->cap = cap;
  }
  jb_stats_name *e = &t->e[t->n];
  *e = (jb_stats_name){0};
  if ((e->name = malloc(n + 1)) == NULL) return ENOMEM;
  memcpy(e->name, name, n);
  e->name[n] = 0;
  e->jobs[state] = 1;
  t->slot[at] = ++t->n;
  return 0;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const jb_stats_name *)a)->name,
                ((const jb_stats_name *)b)->name);
}

/* ---------------------------------------------------------------- stats */

typedef struct {
  jb_stats *st;
  name_tab names;
  bool by_name;
} stats_ctx;

/* The job `uuid`'s name counted in `state` (a posting whose name cannot
 * be read counts under the empty name). */
static int count_name(jb_store *s, MDB_txn *txn, stats_ctx *c,
                      const uint8_t uuid[16], int state) {
  jb_jobhdr h;
  MDB_val posting;
  int rc = jb__job_header(s, txn, uuid, &h, &posting);
  if (rc == MDB_NOTFOUND) return 0; /* check reports such an entry */
  if (rc) return rc;
  const char *name = "";
  size_t n = 0;
  if (!jb__history_posting_name(posting.mv_data, posting.mv_size, &name, &n))
    n = 0;
  return tab_add(&c->names, name, n, state);
}

/* Where a claim's job stands: a lapsed claim is UNCLAIMED, as every
 * reader sees it (list, count, claim-next hands it out), though its record
 * stays until the next write returns it. */
static int claim_state(const char *lapsed) {
  return lapsed ? JB_STATS_UNCLAIMED : JB_STATS_CLAIMED;
}

static int claim_visit(const uint8_t *jobkey, const jb_claimrec *rec,
                       const char *lapsed, void *arg) {
  stats_ctx *c = arg;
  jb_stats *st = c->st;
  st->by_priority[jb__jobkey_priority(jobkey)][claim_state(lapsed)]++;
  if (lapsed) {
    /* claim_lapsed (ops.c) names the holder only when the lease holds. */
    if (strstr(lapsed, "holder") || !(rec->flags & JB_CLAIM_F_LEASE))
      st->lapsing_holder++;
    else
      st->lapsing_lease++;
    /* Claimable since its lease ran out (or its holder went: when is not
     * known, the claim's time stands for it). */
    int64_t since = rec->claimed_us;
    if ((rec->flags & JB_CLAIM_F_LEASE) && !strstr(lapsed, "holder"))
      since += rec->lease_ms * 1000;
    if (since > 0 && (st->oldest_unclaimed_us == 0 ||
                      since < st->oldest_unclaimed_us))
      st->oldest_unclaimed_us = since;
  } else if (rec->flags & JB_CLAIM_F_BOUND) {
    st->claims_bound++;
  } else if (rec->flags & JB_CLAIM_F_LEASE) {
    st->claims_leased++;
  } else {
    st->claims_plain++;
  }
  return 0;
}

typedef struct {
  stats_ctx *c;
  jb_store *s;
  MDB_txn *txn;
} claim_names;

static int claim_name_visit(const uint8_t *jobkey, const jb_claimrec *rec,
                            const char *lapsed, void *arg) {
  claim_names *cn = arg;
  int rc = claim_visit(jobkey, rec, lapsed, cn->c);
  if (rc == 0)
    rc = count_name(cn->s, cn->txn, cn->c, rec->uuid,
                    claim_state(lapsed));
  return rc;
}

static int reader_line(const char *msg, void *arg) {
  int pid;
  size_t thr;
  char txnid[32];
  if (sscanf(msg, "%d %zx %31s", &pid, &thr, txnid) == 3 &&
      strcmp(txnid, "-") != 0)
    ++*(unsigned *)arg;
  return 0;
}

static int stats_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  stats_ctx *c = vctx;
  jb_stats *st = c->st;
  (void)status;
  /* The body may run again (a map resize): start from nothing. */
  tab_free(&c->names);
  unsigned version = st->version, flags = st->flags;
  *st = (jb_stats){.version = version, .flags = flags};
  st->now_us = jb__now_us();
  MDB_cursor *cur;
  MDB_val k, v;
  MDB_stat ms;
  int rc;

  /* Unclaimed: the ready index (with JB_STATS_NO_WALK, its entry count
   * below). */
  if ((rc = mdb_cursor_open(txn, s->ready, &cur))) return rc;
  for (rc = (flags & JB_STATS_NO_WALK)
                ? MDB_NOTFOUND
                : mdb_cursor_get(cur, &k, &v, MDB_FIRST);
       rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_readyrec r;
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size != sizeof r) {
      rc = MDB_CORRUPTED;
      break;
    }
    memcpy(&r, v.mv_data, sizeof r);
    st->by_priority[jb__jobkey_priority(k.mv_data)][JB_STATS_UNCLAIMED]++;
    if (r.modified_us > 0 && (st->oldest_unclaimed_us == 0 ||
                              r.modified_us < st->oldest_unclaimed_us))
      st->oldest_unclaimed_us = r.modified_us;
    if (c->by_name &&
        (rc = count_name(s, txn, c, r.uuid, JB_STATS_UNCLAIMED)))
      break;
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;

  /* Delayed. */
  if ((rc = mdb_cursor_open(txn, s->delayed, &cur))) return rc;
  for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
    jb_delayrec r;
    if (k.mv_size != JB_JOBKEY_LEN || v.mv_size != sizeof r) {
      rc = MDB_CORRUPTED;
      break;
    }
    memcpy(&r, v.mv_data, sizeof r);
    st->by_priority[jb__jobkey_priority(k.mv_data)][JB_STATS_DELAYED]++;
    if (r.due_us <= st->now_us) st->delayed_due++;
    if (c->by_name && (rc = count_name(s, txn, c, r.uuid, JB_STATS_DELAYED)))
      break;
  }
  mdb_cursor_close(cur);
  if (rc != MDB_NOTFOUND) return rc;

  /* Claimed, by kind, and the lapsing ones. */
  if (c->by_name) {
    claim_names cn = {c, s, txn};
    rc = jb__claims_walk(s, txn, claim_name_visit, &cn);
  } else {
    rc = jb__claims_walk(s, txn, claim_visit, c);
  }
  if (rc) return rc;

  for (int p = 0; p < 5; p++)
    for (int i = 0; i < JB_STATS_STATES; i++)
      st->by_state[i] += st->by_priority[p][i];
  if (flags & JB_STATS_NO_WALK) {
    if ((rc = mdb_stat(txn, s->ready, &ms))) return rc;
    st->by_state[JB_STATS_UNCLAIMED] += ms.ms_entries;
  }
  if ((rc = mdb_stat(txn, s->jobs, &ms))) return rc;
  st->jobs = ms.ms_entries;
  if ((rc = mdb_stat(txn, s->trash, &ms))) return rc;
  st->dead_letters = ms.ms_entries;

  /* The history of the last hour, the log, the counters. */
  int64_t windows[2] = {INT64_C(60000000), INT64_C(3600000000)};
  uint64_t by_end[2][8] = {{0}};
  if ((rc = jb__history_recent(s, txn, st->now_us, windows, 2, by_end,
                               &st->history)))
    return rc;
  memcpy(st->completed_1m, by_end[0], sizeof st->completed_1m);
  memcpy(st->completed_1h, by_end[1], sizeof st->completed_1h);
  if ((rc = jb__log_bounds_txn(s, txn, &st->log_first, &st->log_next)))
    return rc;
  uint64_t ctr[JB_CTR_N];
  if ((rc = jb__counters_get(s, txn, ctr))) return rc;
  memcpy(st->events_total, ctr + JB_CTR_EV, sizeof st->events_total);
  memcpy(st->ends_total, ctr + JB_CTR_END, sizeof st->ends_total);

  /* The file. */
  MDB_envinfo info;
  if ((rc = mdb_env_info(s->env, &info)) || (rc = mdb_env_stat(s->env, &ms)))
    return rc;
  st->map_size = info.me_mapsize;
  st->page_size = ms.ms_psize;
  st->pages_used = (uint64_t)info.me_last_pgno + 1;
  st->readers_max = info.me_maxreaders;
  unsigned live = 0;
  if (mdb_reader_list(s->env, reader_line, &live) >= 0) st->readers = live;
  return 0;
}

int jb__store_stats(jb_store *s, jb_stats *st) {
  stats_ctx c = {.st = st, .by_name = (st->flags & JB_STATS_BY_NAME) != 0};
  int rc = jb__store_read(s, stats_body, &c);
  if (rc != JB_OK) {
    tab_free(&c.names);
    return rc;
  }
  if (c.names.n) qsort(c.names.e, c.names.n, sizeof *c.names.e, cmp_name);
  st->names = c.names.e;
  st->n_names = c.names.n;
  free(c.names.slot);
  return JB_OK;
}
