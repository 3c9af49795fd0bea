/*
 * salvage.c - read what a damaged board still holds (jb_board_salvage),
 * with the defensive reader of pages.h, never LMDB:
 * LMDB trusts its pages and asserts, loops or reads out of bounds on bad
 * ones. The source is mapped read-only and never locked or written.
 *
 * What is read, and why it is safe:
 *  - both meta pages. Transaction N writes meta N % 2, so the two are N
 *    and N-1. The jobs come from the newest meta whose jobs tree is
 *    readable (a damaged newer meta falls back to the older);
 *  - the trees of BOTH metas are walked: the older meta's pages are all
 *    intact in a healthy file (pages N frees can be reused by N+2 at the
 *    earliest, which does not exist), and every page they reach is marked
 *    as known. Their history, log, trash and quarantine say which jobs
 *    completed; a completed job is never copied;
 *  - the chosen meta's free list names the pages that hold stale copies
 *    of records, consumed jobs among them: their jobs are never taken,
 *    only their completion records (a completed job stays completed);
 *  - every other page (no tree of either meta reaches it, the chosen free
 *    list does not name it) is a page cut off by damage above it, or one
 *    written after the chosen meta's snapshot (by the commit of a damaged
 *    or torn newer meta, or a commit that never finished): its leaf
 *    entries are read like the trees'. Pages only the other meta's free
 *    list names are among them: the newer commit may reuse pages freed
 *    two commits back, so they hold its data (unless the chosen free list
 *    is unreadable: then they are read for completion records only). An
 *    unfinished commit's pages hold at worst a post that was never
 *    acknowledged, never a job consumed before it (a page past the last
 *    page of meta N was first written after N).
 */
#include "txn.h"
#include "history.h"
#include "pages.h"
#include "life.h"
#include "names.h"
#include "codec/posting.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What each page of the source is to the salvage. */
enum {
  PG_UNSEEN,
  PG_META,
  PG_TREE,    /* a page of the chosen meta's trees */
  PG_OLD,     /* a page of the other meta's trees only */
  PG_FREE,    /* listed by the chosen meta's free list */
  PG_OLDFREE, /* listed by the other meta's free list only */
  PG_ORPHAN,  /* none of those: read by scan_orphans */
};

typedef struct {
  uint8_t uuid[16];
  uint8_t jobkey[JB_JOBKEY_LEN];
  bool orphan;
  size_t off, len; /* the posting, in sv->bytes */
} cand;

/* A completion record (history, change log, dead letter, quarantine): the
 * uuid of a job that ended, the board sequence of the job as it ended (0:
 * not known), and whether it was read on a page that may have been
 * written after the chosen meta's snapshot. A dead letter requeued keeps
 * its uuid under a new, higher sequence, so one uuid can end more than
 * once. */
typedef struct {
  uint8_t uuid[16];
  uint64_t seq;
  bool newer;
} done_rec;

typedef struct {
  jb_salvage_stats *st;
  jb_salvage_cb cb;
  void *payload;
  jb_pgfile f;
  uint8_t *state;  /* per page of the file */
  uint8_t mark;    /* what the walk marks: PG_TREE, PG_OLD, PG_ORPHAN */
  const char *table; /* the table walked; NULL: a page no tree reaches */
  bool take_jobs;  /* the jobs of this walk are candidates */
  bool take_hist;  /* the history records of this walk are copied */
  cand *c;
  size_t nc, ccap;
  jb_buf bytes;    /* postings of candidates; history records */
  done_rec *done; /* completion records: which job ended, and when */
  size_t nd, dcap;
  bool newer;      /* the pages read now may postdate the chosen meta */
  size_t *hist;    /* offsets in bytes of history records: u64 hseq, u32
                      len, value */
  size_t nh, hcap;
  uint64_t *bad;
  size_t nbad, badcap;
  /* From the chosen meta's trees (schema 8): the jobs' jobx records and
   * due times, the dead letters (trash) and the schedules, as records
   * into bytes: a uuid (or key) and a value. */
  size_t *xs, nx, xcap;     /* u8 uuid[16], u32 len, jobx record */
  size_t *dues, ndue, duecap; /* u8 uuid[16], i64 due_us */
  size_t *dead, ndead, deadcap; /* u32 16, u8 uuid[16], u32 len, record */
  size_t *sched, nsched, schedcap; /* u32 klen, key, u32 len, record */
  size_t *set, nset, setcap; /* board settings kept in meta: as sched */
  size_t *ctl, nctl, ctlcap; /* names with a control: u32 len, name, u32
                                len, jb_queueent */
  bool board_paused;         /* the meta record queuectl's board bit */
  size_t st_life; /* copied jobs that took a jobx record or a due time */
  uint64_t last_pg; /* the highest last page of the sane metas */
  uint8_t free_mark; /* on_free marks PG_FREE or PG_OLDFREE */
  int err;
} salv;

static void say(salv *sv, jb_salvage_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(salv *sv, jb_salvage_kind kind, const char *fmt, ...) {
  if (sv->cb == NULL) return;
  char line[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  sv->cb(kind, line, sv->payload);
}

static bool grow(salv *sv, void **p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return true;
  size_t nc = *cap ? *cap * 2 : 256;
  void *q = realloc(*p, nc * size);
  if (q == NULL) {
    sv->err = JB_ENOMEM;
    return false;
  }
  *p = q;
  *cap = nc;
  return true;
}

static void add_done(salv *sv, const uint8_t *uuid, uint64_t seq) {
  if (!grow(sv, (void **)&sv->done, &sv->dcap, sv->nd, sizeof *sv->done))
    return;
  done_rec *d = &sv->done[sv->nd++];
  memcpy(d->uuid, uuid, 16);
  d->seq = seq;
  d->newer = sv->newer;
}

static void add_bad(salv *sv, uint64_t pgno) {
  if (!grow(sv, (void **)&sv->bad, &sv->badcap, sv->nbad, sizeof *sv->bad))
    return;
  sv->bad[sv->nbad++] = pgno;
}

static bool on_page(jb_pgwalk *w, uint64_t pgno, uint64_t n, unsigned flags) {
  salv *sv = w->arg;
  (void)flags;
  if (pgno >= sv->f.npages) return true; /* the walk reports it */
  if (sv->table == NULL) {
    /* scan_orphans reading an entry's overflow run: any run no tree owns
     * (a free page's entry is read for completion records only). */
    uint8_t s = sv->state[pgno];
    return s == PG_UNSEEN || s == PG_FREE || s == PG_OLDFREE ||
           s == PG_ORPHAN;
  }
  /* Seen: once is enough (this also ends a walk of pages that point in
   * circles). A page the older free list lists may have been reused by
   * the newer commit: the chosen free list's tree can be there. */
  if (sv->state[pgno] != PG_UNSEEN && sv->state[pgno] != PG_OLDFREE)
    return false;
  for (uint64_t p = pgno; p - pgno < n && p < sv->f.npages; p++)
    sv->state[p] = sv->mark;
  return true;
}

static void on_bad(jb_pgwalk *w, uint64_t pgno, const char *why) {
  salv *sv = w->arg;
  add_bad(sv, pgno);
  say(sv, JB_SALVAGE_BAD_PAGE, "page %llu (%s): %s", (unsigned long long)pgno,
      sv->table ? sv->table : "a page no tree reaches", why);
}

static bool is(const salv *sv, const char *table) {
  return sv->table == NULL || strcmp(sv->table, table) == 0;
}

/* A job record: uuid -> jb_jobhdr + posting. */
static bool job_entry(salv *sv, const uint8_t *key, size_t klen,
                      const uint8_t *data, size_t dlen) {
  jb_jobhdr h;
  if (klen != 16 || dlen <= sizeof h) return false;
  memcpy(&h, data, sizeof h);
  if (h.format != 1 || h.jobkey[0] > 4) return false;
  if (!sv->take_jobs) return true;
  if (!grow(sv, (void **)&sv->c, &sv->ccap, sv->nc, sizeof *sv->c) ||
      jb__buf_append(&sv->bytes, data + sizeof h, dlen - sizeof h)) {
    sv->err = JB_ENOMEM;
    return true;
  }
  cand *c = &sv->c[sv->nc++];
  memcpy(c->uuid, key, 16);
  memcpy(c->jobkey, h.jobkey, JB_JOBKEY_LEN);
  c->orphan = sv->table == NULL;
  c->len = dlen - sizeof h;
  c->off = sv->bytes.len - c->len;
  return true;
}

static bool history_entry(salv *sv, const uint8_t *key, size_t klen,
                          const uint8_t *data, size_t dlen) {
  if (klen == 17 && key[0] == 'u' && dlen == 8) {
    add_done(sv, key + 1, 0);
    return true;
  }
  if (klen != 9 || key[0] != 's') return false;
  /* As check reads it (history.c jb__history_walk): the record and the
   * posting it keeps must decode, or the new board would fail check. */
  jb_hist_entry e;
  char why[300];
  if (jb__histrec_decode(data, dlen, &e, why, sizeof why) != JB_OK)
    return false;
  if (e.posting) {
    jb_job job;
    memset(&job, 0, sizeof job);
    int r = jb__histrec_posting(&job, e.posting, e.posting_len, e.rec.uuid,
                                why, sizeof why);
    jb__job_clear(&job);
    if (r != JB_OK) return false;
  }
  jb_histrec rec = e.rec;
  add_done(sv, rec.uuid, rec.job_seq);
  if (!sv->take_hist) return true;
  uint8_t head[12];
  uint64_t hseq = jb__be64(key + 1);
  uint32_t len = (uint32_t)dlen;
  memcpy(head, &hseq, 8);
  memcpy(head + 8, &len, 4);
  if (!grow(sv, (void **)&sv->hist, &sv->hcap, sv->nh, sizeof *sv->hist))
    return true;
  sv->hist[sv->nh++] = sv->bytes.len;
  if (jb__buf_append(&sv->bytes, head, sizeof head) ||
      jb__buf_append(&sv->bytes, data, dlen))
    sv->err = JB_ENOMEM;
  return true;
}

static bool log_entry(salv *sv, size_t klen, const uint8_t *data,
                      size_t dlen) {
  jb_eventrec ev;
  if (klen != 8 || dlen < sizeof ev) return false;
  memcpy(&ev, data, sizeof ev);
  if (dlen != jb__eventrec_len(&ev) || ev.type < JB_EV_POSTED ||
      ev.type > JB_EV_LAST)
    return false;
  if (ev.type == JB_EV_CONSUMED || ev.type == JB_EV_TRASHED ||
      ev.type == JB_EV_REVOKED)
    add_done(sv, ev.uuid, ev.job_seq);
  return true;
}

static bool trash_entry(salv *sv, const uint8_t *key, size_t klen,
                        const uint8_t *data, size_t dlen) {
  jb_trashrec t;
  size_t hl;
  if (klen != 16 || !jb__trashrec_read(data, dlen, &t, &hl)) return false;
  add_done(sv, key, jb__jobkey_seq(t.jobkey));
  return true;
}

/* Keep a record of the chosen meta's tree: `kl` bytes of key, then (with
 * its length when `with_len`) the value, at an offset into sv->bytes
 * listed in *list. */
static void keep_rec(salv *sv, size_t **list, size_t *n, size_t *cap,
                     const void *key, size_t kl, bool key_len,
                     const void *data, size_t dlen, bool with_len) {
  if (!grow(sv, (void **)list, cap, *n, sizeof **list)) return;
  (*list)[(*n)++] = sv->bytes.len;
  uint32_t l32 = (uint32_t)kl, d32 = (uint32_t)dlen;
  if ((key_len && jb__buf_append(&sv->bytes, &l32, 4)) ||
      jb__buf_append(&sv->bytes, key, kl) ||
      (with_len && jb__buf_append(&sv->bytes, &d32, 4)) ||
      jb__buf_append(&sv->bytes, data, dlen))
    sv->err = JB_ENOMEM;
}

static int keep_control(void *arg, uint32_t lane, const char *name,
                        size_t len, const jb_queueent *e) {
  (void)lane;
  if (e->q.flags)
    keep_rec(arg, &((salv *)arg)->ctl, &((salv *)arg)->nctl,
             &((salv *)arg)->ctlcap, name, len, true, e, sizeof *e, true);
  return 0;
}

/* The schema 8 tables of the chosen meta whose records go with the jobs
 * (jobx, delayed), or into the new board as they are (trash: the dead
 * letters; schedules). Only records that decode as their readers want
 * them. true when `table` is one of them. */
static bool life_entry(salv *sv, const uint8_t *key, size_t klen,
                       const uint8_t *data, size_t dlen) {
  const char *t = sv->table;
  if (t == NULL) return false;
  if (strcmp(t, JB_DB_JOBX) == 0) {
    jb_jobx x;
    if (sv->take_jobs && klen == 16 && jb__jobx_decode(&x, data, dlen) == 0)
      keep_rec(sv, &sv->xs, &sv->nx, &sv->xcap, key, 16, false, data, dlen,
               true);
    return true;
  }
  if (strcmp(t, JB_DB_DELAYED) == 0) {
    jb_delayrec d;
    if (sv->take_jobs && klen == JB_JOBKEY_LEN && dlen == sizeof d) {
      memcpy(&d, data, sizeof d);
      keep_rec(sv, &sv->dues, &sv->ndue, &sv->duecap, d.uuid, 16, false,
               &d.due_us, sizeof d.due_us, false);
    }
    return true;
  }
  /* The board's retry policy goes with its jobs: their attempts and
   * back-offs mean what they meant; its retention with its history and
   * dead letters; the prefixes capped and rate-limited for each name
   * with the names' caps and limits. (Other keys of meta belong to the
   * source board: its schema, its boot, its Redis sync.) */
  if (strcmp(t, JB_DB_META) == 0) {
    /* The pause of the board goes too; its count of names with a control
     * is counted again as they are restored. */
    uint32_t ctl;
    if (sv->take_hist && klen == sizeof JB_QUEUECTL_KEY - 1 &&
        memcmp(key, JB_QUEUECTL_KEY, klen) == 0 && dlen == sizeof ctl) {
      memcpy(&ctl, data, sizeof ctl);
      sv->board_paused = (ctl & JB_QUEUECTL_BOARD) != 0;
    }
    if (sv->take_hist &&
        ((klen == sizeof JB_POLICY_KEY - 1 &&
          memcmp(key, JB_POLICY_KEY, klen) == 0 && dlen == JB_POLICY_LEN) ||
         (klen == sizeof JB_RETAIN_KEY - 1 &&
          memcmp(key, JB_RETAIN_KEY, klen) == 0 && dlen == JB_RETAIN_LEN) ||
         (klen == sizeof JB_CAPEACH_KEY - 1 &&
          memcmp(key, JB_CAPEACH_KEY, klen) == 0 &&
          jb__queue_each_valid(JB_EACH_CAP, data, dlen)) ||
         (klen == sizeof JB_RATEEACH_KEY - 1 &&
          memcmp(key, JB_RATEEACH_KEY, klen) == 0 &&
          jb__queue_each_valid(JB_EACH_RATE, data, dlen))))
      keep_rec(sv, &sv->set, &sv->nset, &sv->setcap, key, klen, true, data,
               dlen, true);
    return true;
  }
  /* The pauses and caps of names (schema 10): kept by name, restored
   * once the jobs are copied. */
  if (strcmp(t, JB_DB_QUEUES) == 0) {
    bool bad;
    if (sv->take_hist && klen == 4)
      jb__queue_value_walk(data, dlen, jb__be32(key), keep_control, sv, &bad);
    return true;
  }
  if (strcmp(t, JB_DB_SCHEDULES) == 0) {
    jb_sched_view v;
    char why[200];
    if (sv->take_hist &&
        jb__sched_decode(&v, key, klen, data, dlen, why, sizeof why) == 0)
      keep_rec(sv, &sv->sched, &sv->nsched, &sv->schedcap, key, klen, true,
               data, dlen, true);
    return true;
  }
  return false;
}

/* A trash record of the chosen meta (a dead letter) whose posting
 * decodes: kept, to be copied. */
static void keep_dead(salv *sv, const uint8_t *key, const uint8_t *data,
                      size_t dlen) {
  jb_trashrec tr;
  size_t hl;
  jb_job job = {0};
  char why[200];
  if (!jb__trashrec_read(data, dlen, &tr, &hl) ||
      jb__posting_decode(&job, data + hl + tr.owner_len, tr.posting_len, why,
                         sizeof why) != JB_OK) {
    jb__job_clear(&job);
    return;
  }
  jb__job_clear(&job);
  keep_rec(sv, &sv->dead, &sv->ndead, &sv->deadcap, key, 16, true, data,
           dlen, true);
}

static void on_leaf(jb_pgwalk *w, const uint8_t *key, size_t klen,
                    const uint8_t *data, size_t dlen, unsigned nflags) {
  salv *sv = w->arg;
  if (data == NULL || (nflags & JB_PGN_SUBDATA)) return;
  if (life_entry(sv, key, klen, data, dlen)) return;
  /* A page no tree reaches could be any table's: the shapes tell them
   * apart (a trash record is tried before a job: its posting sits at
   * another offset and would not decode as a job's anyway). */
  if ((is(sv, JB_DB_HISTORY) || is(sv, JB_DB_HISTENDS)) &&
      history_entry(sv, key, klen, data, dlen))
    return;
  if ((is(sv, JB_DB_LOG) || is(sv, JB_DB_LOGTAIL)) &&
      log_entry(sv, klen, data, dlen))
    return;
  if (is(sv, JB_DB_TRASH) && trash_entry(sv, key, klen, data, dlen)) {
    if (sv->table && sv->take_hist) keep_dead(sv, key, data, dlen);
    return;
  }
  if (is(sv, JB_DB_QUARANTINE) && klen == 17 && key[0] == 'j' &&
      dlen >= sizeof(jb_quarrec)) {
    add_done(sv, key + 1, 0);
    return;
  }
  if (is(sv, JB_DB_JOBS) && job_entry(sv, key, klen, data, dlen)) return;
  if (sv->table && strcmp(sv->table, JB_DB_JOBS) == 0) {
    char ut[JB_UUID_STRLEN] = "(no uuid)";
    if (klen == 16) jb__uuid_format(ut, key);
    sv->st->undecodable++;
    say(sv, JB_SALVAGE_UNDECODABLE, "job %s: its record is malformed", ut);
  }
}

/* ------------------------------------------------------------- the trees */

typedef struct {
  char name[32];
  jb_pgdb db;
} table;

typedef struct {
  table t[32];
  unsigned n;
} tables;

/* salv followed by the tables the main tree's walk fills (on_main); the
 * walk's callbacks take it as the salv it starts with. */
typedef struct {
  salv sv;
  tables *out;
} salv_main;

static void on_main(jb_pgwalk *w, const uint8_t *key, size_t klen,
                    const uint8_t *data, size_t dlen, unsigned nflags) {
  tables *out = ((salv_main *)w->arg)->out;
  if (!(nflags & JB_PGN_SUBDATA) || data == NULL || klen == 0 ||
      klen >= sizeof out->t[0].name || out->n == 32)
    return;
  table *t = &out->t[out->n];
  if (!jb__pg_db(data, dlen, &t->db)) return;
  memcpy(t->name, key, klen);
  t->name[klen] = '\0';
  out->n++;
}

/* Walk the main tree of `m`: its tables into *ts. false when its root
 * page cannot be read. */
static bool walk_main(salv_main *sm, const jb_pgmeta *m, tables *ts,
                      bool report) {
  salv *sv = &sm->sv;
  memset(ts, 0, sizeof *ts);
  sm->out = ts;
  if (m->dbs[1].root == JB_PG_NONE) return true;
  if (jb__pg_node_page(&sv->f, m->dbs[1].root)) {
    if (report) on_bad(&(jb_pgwalk){.arg = sv}, m->dbs[1].root,
                       jb__pg_node_page(&sv->f, m->dbs[1].root));
    return false;
  }
  jb_pgwalk w = {.f = &sv->f, .page = on_page, .leaf = on_main,
                 .bad = report ? on_bad : NULL, .arg = sm};
  sv->table = "the main tree";
  jb__pg_walk(&w, &m->dbs[1]);
  return true;
}

static const table *find(const tables *ts, const char *name) {
  for (unsigned i = 0; i < ts->n; i++)
    if (strcmp(ts->t[i].name, name) == 0) return &ts->t[i];
  return NULL;
}

/* Walk every table of `ts`: jobs and history taken with `chosen`. */
static void walk_tables(salv *sv, const tables *ts, bool chosen) {
  jb_pgwalk w = {.f = &sv->f, .page = on_page, .leaf = on_leaf,
                 .bad = chosen ? on_bad : NULL, .arg = sv};
  for (unsigned i = 0; i < ts->n; i++) {
    const table *t = &ts->t[i];
    if (chosen && t->db.root != JB_PG_NONE &&
        jb__pg_node_page(&sv->f, t->db.root)) {
      sv->st->bad_tables++;
      say(sv, JB_SALVAGE_BAD_TABLE, "table %s: its root page %llu cannot be "
          "read (%s)", t->name, (unsigned long long)t->db.root,
          jb__pg_node_page(&sv->f, t->db.root));
    }
    sv->table = t->name;
    sv->take_jobs = chosen;
    sv->take_hist = chosen;
    jb__pg_walk(&w, &t->db);
  }
  sv->take_jobs = sv->take_hist = false;
}

static void on_free(jb_pgwalk *w, const uint8_t *key, size_t klen,
                    const uint8_t *data, size_t dlen, unsigned nflags) {
  salv *sv = w->arg;
  (void)key;
  (void)klen;
  (void)nflags;
  uint64_t n;
  const uint8_t *list;
  if (!jb__pg_idl(data, dlen, &n, &list)) return;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t p = jb__pg_u64(list + 8 * i);
    /* The chosen meta's list is walked last: a page both lists hold is
     * free in the chosen snapshot. */
    if (p < sv->f.npages &&
        (sv->state[p] == PG_UNSEEN || sv->state[p] == PG_OLDFREE))
      sv->state[p] = sv->free_mark;
  }
}

/* Mark the pages `m`'s free list lists (and its tree's pages, as known
 * ones) with `mark`. false when a page of its tree cannot be read. */
static bool walk_free(salv *sv, const jb_pgmeta *m, uint8_t mark,
                      bool report) {
  jb_pgwalk w = {.f = &sv->f, .page = on_page, .leaf = on_free,
                 .bad = report ? on_bad : NULL, .arg = sv};
  size_t nbad = sv->nbad;
  sv->mark = PG_OLD;
  sv->free_mark = mark;
  sv->table = "the free list";
  jb__pg_walk(&w, &m->dbs[0]);
  return sv->nbad == nbad;
}

/*
 * Read the pages no tree reaches. Those no free list lists either were
 * cut off from their tree by damage above them, or written after the
 * chosen meta: their jobs are taken. So are those only the other meta's
 * free list lists, when the chosen meta's is whole: the chosen commit
 * reused them (it can reuse pages its predecessor's list holds), so they
 * hold its data. Pages a free list of `trusted` lists hold stale copies:
 * only their completion records are read (a job that completed stays
 * completed, however old the record).
 */
static void scan_orphans(salv *sv, bool free_whole) {
  jb_pgwalk w = {.f = &sv->f, .page = on_page, .leaf = on_leaf, .arg = sv};
  sv->table = NULL;
  for (uint64_t p = 2; p < sv->f.npages; p++) {
    uint8_t s = sv->state[p];
    if (s != PG_UNSEEN && s != PG_FREE && s != PG_OLDFREE) continue;
    const uint8_t *pg = sv->f.base + p * sv->f.psize;
    unsigned fl = (unsigned)(pg[10] | pg[11] << 8) & ~(unsigned)JB_PG_DIRTY;
    bool header = jb__pg_u64(pg) == p;
    if (header && fl == JB_PG_LEAF && jb__pg_node_page(&sv->f, p) == NULL) {
      sv->take_jobs = s == PG_UNSEEN || (s == PG_OLDFREE && free_whole);
      /* The chosen free list's pages were freed by its snapshot; the
       * others may hold a newer commit's records. */
      sv->newer = s != PG_FREE;
      if (s == PG_UNSEEN) sv->state[p] = PG_ORPHAN;
      jb__pg_leaf_entries(&w, p);
      continue;
    }
    if (s != PG_UNSEEN) continue; /* a free page may hold anything */
    if (header && (fl == JB_PG_BRANCH || fl == JB_PG_OVERFLOW ||
                   fl == (JB_PG_LEAF | JB_PG_LEAF2)))
      continue; /* no jobs on it; its leaves are scanned on their own */
    /* Within the snapshot's pages every page belongs somewhere: this one
     * was overwritten. Past them, it may never have been written. */
    if (p <= sv->last_pg) {
      add_bad(sv, p);
      say(sv, JB_SALVAGE_BAD_PAGE, "page %llu (no tree reaches it): not a "
          "readable page", (unsigned long long)p);
    }
  }
  sv->take_jobs = false;
  sv->newer = false;
}

/* ---------------------------------------------------------------- output */

static int cmp_uuid(const void *a, const void *b) { return memcmp(a, b, 16); }

static int cmp_cand_uuid(const void *a, const void *b) {
  const cand *x = a, *y = b;
  int c = memcmp(x->uuid, y->uuid, 16);
  return c ? c : (int)x->orphan - (int)y->orphan;
}

/* A uuid against a candidate's (a bsearch of the uuid order). */
static int cmp_cand_only_uuid(const void *key, const void *c) {
  return memcmp(key, ((const cand *)c)->uuid, 16);
}

static int cmp_cand_key(const void *a, const void *b) {
  const cand *x = a, *y = b;
  return memcmp(x->jobkey, y->jobkey, JB_JOBKEY_LEN);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Did the candidate's job end (sv->done sorted by uuid)? A job on the
 * chosen meta's jobs tree was live at that snapshot: a completion record
 * of the snapshot or older (its trees, the pages its free list names) is
 * of an earlier life of the uuid, a dead letter since requeued. Only a
 * record that may be newer ends it: one of the same life or a later one
 * (a sequence not below the job's), or one whose sequence is not known.
 * Any completion record ends a job read off a page no tree reaches: such
 * a copy is never trusted over a record that the job completed. */
static bool completed(const salv *sv, const cand *c) {
  size_t lo = 0, hi = sv->nd;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (memcmp(sv->done[mid].uuid, c->uuid, 16) < 0) lo = mid + 1;
    else hi = mid;
  }
  uint64_t seq = jb__jobkey_seq(c->jobkey);
  for (size_t i = lo; i < sv->nd && memcmp(sv->done[i].uuid, c->uuid, 16) == 0;
       i++) {
    const done_rec *d = &sv->done[i];
    if (c->orphan || (d->newer && (d->seq == 0 || d->seq >= seq)))
      return true;
  }
  return false;
}

/* Post the candidates (sorted by jobkey) into `dst`, in batches. */
/* The records kept by uuid (xs, dues), sorted by it: a binary search. */
static int cmp_rec_uuid(const void *a, const void *b, void *arg) {
  const salv *sv = arg;
  return memcmp(sv->bytes.data + *(const size_t *)a,
                sv->bytes.data + *(const size_t *)b, 16);
}

static const uint8_t *find_rec(const salv *sv, const size_t *list, size_t n,
                               const uint8_t uuid[16]) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const uint8_t *r = sv->bytes.data + list[mid];
    int c = memcmp(r, uuid, 16);
    if (c == 0) return r;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* A copied job's jobx record (attempts, last reason, its options, its
 * unique key) and due time, as the source held them; its claim's time
 * limit goes with its claim. false when it has neither. */
static bool job_life(const salv *sv, const uint8_t uuid[16], jb_jobx *x,
                     int64_t *due_us) {
  memset(x, 0, sizeof *x);
  *due_us = 0;
  const uint8_t *r = find_rec(sv, sv->xs, sv->nx, uuid);
  if (r) {
    uint32_t len;
    memcpy(&len, r + 16, 4);
    if (jb__jobx_decode(x, r + 20, len) == 0) {
      x->found = true;
      x->rec.limit_bt = 0;
    } else {
      memset(x, 0, sizeof *x);
    }
  }
  const uint8_t *d = find_rec(sv, sv->dues, sv->ndue, uuid);
  if (d) memcpy(due_us, d + 16, 8);
  return x->found || *due_us;
}

/* Unique keys of the jobs to copy: a key two of them hold (a damaged
 * board) stays with the first in claim order; the others lose it. Their
 * uuids go to *drop (sorted), reported. */
typedef struct {
  const char *key;
  size_t len;
  size_t order; /* the candidate's index */
  const uint8_t *uuid;
} ukey;

static int cmp_ukey(const void *a, const void *b) {
  const ukey *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->key, y->key, n);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static int unique_dups(salv *sv, uint8_t (**drop)[16], size_t *ndrop) {
  *drop = NULL;
  *ndrop = 0;
  ukey *u = NULL;
  size_t n = 0;
  if (sv->nc && (u = calloc(sv->nc, sizeof *u)) == NULL)
    return jb__err(JB_ENOMEM, "out of memory for the unique keys");
  for (size_t i = 0; i < sv->nc; i++) {
    const uint8_t *r = find_rec(sv, sv->xs, sv->nx, sv->c[i].uuid);
    if (r == NULL) continue;
    jb_jobxrec rec;
    uint32_t len;
    memcpy(&len, r + 16, 4);
    if (len < sizeof rec) continue;
    memcpy(&rec, r + 20, sizeof rec);
    if (rec.unique_len == 0) continue;
    u[n++] = (ukey){(const char *)r + 20 + sizeof rec, rec.unique_len, i,
                    sv->c[i].uuid};
  }
  if (n > 1) qsort(u, n, sizeof *u, cmp_ukey);
  int rc = JB_OK;
  for (size_t i = 1; i < n && rc == JB_OK; i++) {
    if (u[i].len != u[i - 1].len || memcmp(u[i].key, u[i - 1].key, u[i].len))
      continue;
    void *g = realloc(*drop, (*ndrop + 1) * 16);
    if (g == NULL) {
      rc = jb__err(JB_ENOMEM, "out of memory for the unique keys");
      break;
    }
    *drop = g;
    memcpy((*drop)[(*ndrop)++], u[i].uuid, 16);
    char a[JB_UUID_STRLEN], b[JB_UUID_STRLEN];
    jb__uuid_format(a, u[i].uuid);
    size_t j = i;
    while (j > 0 && u[j - 1].len == u[i].len &&
           memcmp(u[j - 1].key, u[i].key, u[i].len) == 0)
      j--;
    jb__uuid_format(b, u[j].uuid);
    say(sv, JB_SALVAGE_NOTE, "job %s: its unique key '%.*s' is also job %s's: "
        "copied without it", a, (int)u[i].len, u[i].key, b);
  }
  free(u);
  if (*ndrop > 1) qsort(*drop, *ndrop, 16, cmp_uuid);
  return rc;
}

static int post_all(salv *sv, jb_store *dst) {
  /* Few commits (each is flushed in durability full), each of a size
   * LMDB takes easily (its limit is some 100,000 dirty pages). */
  enum { BATCH = 4096 };
  jb_store_post *sp = calloc(BATCH, sizeof *sp);
  size_t *offs = malloc(BATCH * sizeof *offs);
  jb_jobx *xs = malloc(BATCH * sizeof *xs);
  jb_buf pre = {0};
  jb_job job = {0};
  uint8_t (*drop)[16] = NULL;
  size_t ndrop = 0;
  int rc = sp && offs && xs
               ? unique_dups(sv, &drop, &ndrop)
               : jb__err(JB_ENOMEM, "out of memory for the copies");
  size_t n = 0;
  for (size_t i = 0; rc == JB_OK && i <= sv->nc; i++) {
    if (i < sv->nc) {
      const cand *c = &sv->c[i];
      char ut[JB_UUID_STRLEN], why[300];
      jb__uuid_format(ut, c->uuid);
      int dr = jb__posting_decode(&job, sv->bytes.data + c->off, c->len, why,
                                  sizeof why);
      if (dr == JB_ENOMEM) {
        rc = dr;
        break;
      }
      if (dr == JB_OK && strcmp(job.uuid, ut) != 0) {
        snprintf(why, sizeof why, "its posting names job %s", job.uuid);
        dr = JB_ECORRUPT;
      }
      if (dr == JB_OK && job.priority != jb__jobkey_priority(c->jobkey)) {
        snprintf(why, sizeof why, "its posting's priority is not its key's");
        dr = JB_ECORRUPT;
      }
      if (dr != JB_OK) {
        /* A page no tree reaches may hold anything: only the records of
         * the jobs tree are reported. */
        if (!c->orphan) {
          sv->st->undecodable++;
          say(sv, JB_SALVAGE_UNDECODABLE, "job %s: %s", ut, why);
        }
        continue;
      }
      size_t dl;
      const void *d = jb_job_details(&job, &dl);
      jb_posting_fields f = {.uuid = ut, .name = job.name,
                             .name_len = strlen(job.name),
                             .priority = job.priority,
                             .created_us = job.created_us, .details = d,
                             .details_len = dl, .book_name = job.book_name,
                             .book_uuid = job.book_uuid};
      offs[n] = pre.len;
      if ((rc = jb__posting_prefix(&pre, &f)) != JB_OK) break;
      memcpy(sp[n].uuid, c->uuid, 16);
      sp[n].priority = job.priority;
      sp[n].prefix_len = pre.len - offs[n];
      sp[n].x = NULL;
      sp[n].due_us = 0;
      if (job_life(sv, c->uuid, &xs[n], &sp[n].due_us)) {
        if (ndrop && bsearch(c->uuid, drop, ndrop, 16, cmp_uuid))
          xs[n].rec.unique_len = 0;
        if (xs[n].found) sp[n].x = &xs[n];
        if (xs[n].found || sp[n].due_us) sv->st_life++;
      }
      n++;
      sv->st->copied++;
      if (c->orphan) sv->st->orphaned++;
      say(sv, JB_SALVAGE_COPIED, "job %s (%s)%s", ut, job.name,
          c->orphan ? ": from a page no tree reaches" : "");
    }
    if (n == BATCH || (i == sv->nc && n)) {
      for (size_t k = 0; k < n; k++) sp[k].prefix = pre.data + offs[k];
      rc = jb__store_post(dst, sp, n, jb__now_us());
      n = 0;
      pre.len = 0;
    }
  }
  jb__job_clear(&job);
  jb__buf_free(&pre);
  free(sp);
  free(offs);
  free(xs);
  free(drop);
  return rc;
}

/* Records kept as u32 key length, key, u32 value length, value: put as
 * they are (a key already there is left alone). */
static int put_recs(const salv *sv, MDB_txn *txn, MDB_dbi dbi,
                    const size_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const uint8_t *r = sv->bytes.data + list[i];
    uint32_t kl, vl;
    memcpy(&kl, r, 4);
    memcpy(&vl, r + 4 + kl, 4);
    MDB_val k = {kl, (void *)(r + 4)}, v = {vl, (void *)(r + 8 + kl)};
    int rc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
    if (rc && rc != MDB_KEYEXIST) return rc;
  }
  return 0;
}

/* The dead letters, the retry policy and the schedules, as the source
 * held them, in one write transaction. */
static int life_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  const salv *sv = vctx;
  (void)status;
  int rc = put_recs(sv, txn, s->trash, sv->dead, sv->ndead);
  /* Each letter's `deadage` entry (retain.c), from the record put. */
  for (size_t i = 0; rc == 0 && i < sv->ndead; i++) {
    const uint8_t *r = sv->bytes.data + sv->dead[i];
    uint32_t kl;
    memcpy(&kl, r, 4);
    MDB_val k = {kl, (void *)(r + 4)}, v;
    jb_trashrec tr;
    size_t hl;
    if (kl != 16 || (rc = mdb_get(txn, s->trash, &k, &v)) ||
        !jb__trashrec_read(v.mv_data, v.mv_size, &tr, &hl))
      continue;
    rc = jb__deadage_put(s, txn, k.mv_data, tr.trashed_us);
  }
  if (rc == 0) rc = put_recs(sv, txn, s->meta, sv->set, sv->nset);
  for (size_t i = 0; rc == 0 && i < sv->nctl; i++) {
    const uint8_t *r = sv->bytes.data + sv->ctl[i];
    uint32_t kl;
    jb_queueent q;
    memcpy(&kl, r, 4);
    memcpy(&q, r + 8 + kl, sizeof q);
    rc = jb__queue_restore(s, txn, (const char *)r + 4, kl, &q);
  }
  if (rc == 0 && sv->board_paused)
    rc = jb__queue_restore(s, txn, NULL, 0,
                           &(jb_queueent){.q.flags = JB_QUEUE_F_PAUSED});
  return rc ? rc : put_recs(sv, txn, s->schedules, sv->sched, sv->nsched);
}

static int hist_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  salv *sv = vctx;
  (void)status;
  for (size_t i = 0; i < sv->nh; i++) {
    const uint8_t *h = sv->bytes.data + sv->hist[i];
    uint32_t len;
    memcpy(&len, h + 8, 4);
    const uint8_t *v = h + 12;
    jb_hist_entry e;
    char why[200];
    if (jb__histrec_decode(v, len, &e, why, sizeof why) != JB_OK) continue;
    int rc = jb__history_put(s, txn, &e, NULL, jb__now_us());
    if (rc) return rc;
  }
  return 0;
}

static int cmp_hist(const void *a, const void *b, void *arg);

/* ------------------------------------------------------------------ main */

static void pick_metas(salv_main *sm, jb_pgmeta meta[2], bool ok[2],
                       int order[2], int *chosen, tables ts[2]) {
  salv *sv = &sm->sv;
  order[0] = ok[0] && (!ok[1] || meta[0].txnid > meta[1].txnid) ? 0 : 1;
  order[1] = 1 - order[0];
  *chosen = -1;
  /* The newest meta whose main tree and jobs tree can be read. */
  for (int k = 0; k < 2 && *chosen < 0; k++) {
    int i = order[k];
    if (!ok[i]) continue;
    sv->mark = PG_TREE;
    memset(sv->state, 0, sv->f.npages);
    bool main_ok = walk_main(sm, &meta[i], &ts[i], false);
    const table *jobs = main_ok ? find(&ts[i], JB_DB_JOBS) : NULL;
    if (jobs && (jobs->db.root == JB_PG_NONE ||
                 jb__pg_node_page(&sv->f, jobs->db.root) == NULL))
      *chosen = i;
    else
      say(sv, JB_SALVAGE_BAD_TABLE, "meta page %d (transaction %llu): %s", i,
          (unsigned long long)meta[i].txnid,
          !main_ok ? "its main tree's root page cannot be read"
          : jobs ? "the root page of its jobs table cannot be read"
                 : "its main tree names no jobs table");
  }
  if (*chosen < 0) *chosen = ok[order[0]] ? order[0] : order[1];
}

int jb__salvage(const char *src, jb_salvage_stats *st, jb_salvage_cb cb,
                void *payload, jb_store *(*open_dst)(void *arg, int *rc),
                void *dst_arg) {
  char data[4200];
  snprintf(data, sizeof data, "%s/data.mdb", src);
  int fd = open(data, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return jb__err(JB_ENOTFOUND, "no board in %s (no data.mdb)", src);
    return jb__err_errno(errno, data);
  }
  salv_main sm = {.sv = {.st = st, .cb = cb, .payload = payload}};
  salv *sv = &sm.sv;
  uint64_t fsize;
  int rc = jb__pg_map(&sv->f, &fsize, fd, 0);
  close(fd);
  if (rc) return jb__err_errno(rc, data);
  jb_pgmeta meta[2];
  bool ok[2];
  char why[2][128];
  jb__pg_metas(sv->f.base, fsize, meta, ok, why);
  if (!ok[0] && !ok[1]) {
    jb__pg_unmap(&sv->f);
    return jb__err(JB_ECORRUPT, "%s: neither meta page can be read (meta 0: "
                   "%s; meta 1: %s): nothing to salvage from", data, why[0],
                   why[1]);
  }
  for (int i = 0; i < 2; i++)
    if (!ok[i]) {
      st->bad_pages++;
      say(sv, JB_SALVAGE_BAD_PAGE, "page %d (meta page): %s", i, why[i]);
    }
  uint32_t psize = meta[ok[0] ? 0 : 1].dbs[0].pad;
  sv->f.psize = psize;
  sv->f.npages = fsize / psize;
  sv->last_pg = 0;
  for (int i = 0; i < 2; i++)
    if (ok[i] && meta[i].last_pg > sv->last_pg) sv->last_pg = meta[i].last_pg;
  sv->state = calloc(sv->f.npages ? sv->f.npages : 1, 1);
  if (sv->state == NULL) {
    jb__pg_unmap(&sv->f);
    return jb__err(JB_ENOMEM, "out of memory for %llu pages",
                   (unsigned long long)sv->f.npages);
  }
  tables ts[2];
  int order[2], chosen;
  pick_metas(&sm, meta, ok, order, &chosen, ts);
  /* Walk again from a clean slate: the chosen meta's trees, reporting. */
  memset(sv->state, 0, sv->f.npages);
  sv->state[0] = sv->state[1] = PG_META;
  sv->mark = PG_TREE;
  walk_main(&sm, &meta[chosen], &ts[chosen], true);
  if (find(&ts[chosen], JB_DB_JOBS) == NULL) {
    st->bad_tables++;
    say(sv, JB_SALVAGE_BAD_TABLE, "table jobs: not found in the main tree "
        "of meta page %d", chosen);
  }
  walk_tables(sv, &ts[chosen], true);
  int other = 1 - chosen;
  if (ok[other]) {
    sv->mark = PG_OLD;
    /* The other meta is newer when the newest one's jobs could not be
     * read: its trees' completion records may end a job of the chosen
     * snapshot. */
    sv->newer = meta[other].txnid > meta[chosen].txnid;
    if (walk_main(&sm, &meta[other], &ts[other], false))
      walk_tables(sv, &ts[other], false);
    sv->newer = false;
  }
  /* The other meta's free list first: its own pages are freed by the
   * newer commit, so the chosen list names them, and marking those first
   * would stop the walk of the other at its root. */
  if (ok[other]) walk_free(sv, &meta[other], PG_OLDFREE, false);
  bool free_whole = walk_free(sv, &meta[chosen], PG_FREE, true);
  if (!free_whole)
    say(sv, JB_SALVAGE_NOTE, "the free list of meta page %d cannot be read "
        "whole: pages the other meta's free list lists are read for "
        "completion records only (jobs its last commit wrote there may be "
        "missed)", chosen);
  scan_orphans(sv, free_whole);

  /* Each job once (a tree's copy first), never one that completed. */
  /* (qsort of an empty, NULL array is undefined: UBSan says so.) */
  if (sv->nd) qsort(sv->done, sv->nd, sizeof *sv->done, cmp_uuid);
  if (sv->nc) qsort(sv->c, sv->nc, sizeof *sv->c, cmp_cand_uuid);
  size_t keep = 0;
  for (size_t i = 0; i < sv->nc; i++) {
    if (keep && memcmp(sv->c[keep - 1].uuid, sv->c[i].uuid, 16) == 0) continue;
    if (completed(sv, &sv->c[i])) {
      st->completed++;
      continue;
    }
    sv->c[keep++] = sv->c[i];
  }
  sv->nc = keep;
  /* A dead letter of a job that is copied (a job on a page no tree
   * reaches, requeued after the trash's snapshot) is left out: a job is in
   * one place. The candidates are in uuid order here. */
  size_t nd = 0;
  for (size_t i = 0; i < sv->ndead; i++) {
    if (!sv->nc || !bsearch(sv->bytes.data + sv->dead[i] + 4, sv->c, sv->nc,
                            sizeof *sv->c, cmp_cand_only_uuid))
      sv->dead[nd++] = sv->dead[i];
  }
  sv->ndead = nd;
  if (sv->nc) qsort(sv->c, sv->nc, sizeof *sv->c, cmp_cand_key);
  if (sv->nbad) qsort(sv->bad, sv->nbad, sizeof *sv->bad, cmp_u64);
  size_t nb = 0;
  for (size_t i = 0; i < sv->nbad; i++)
    if (nb == 0 || sv->bad[nb - 1] != sv->bad[i]) sv->bad[nb++] = sv->bad[i];
  st->bad_pages += nb;
  if (sv->nh > 1) {
    qsort_r(sv->hist, sv->nh, sizeof *sv->hist, cmp_hist, sv);
    /* A record kept in both history tables (check reports it) is copied
     * once. */
    size_t nh = 1;
    for (size_t i = 1; i < sv->nh; i++)
      if (cmp_hist(&sv->hist[nh - 1], &sv->hist[i], sv) != 0)
        sv->hist[nh++] = sv->hist[i];
    sv->nh = nh;
  }

  if (sv->nx > 1) qsort_r(sv->xs, sv->nx, sizeof *sv->xs, cmp_rec_uuid, sv);
  if (sv->ndue > 1)
    qsort_r(sv->dues, sv->ndue, sizeof *sv->dues, cmp_rec_uuid, sv);

  if (sv->err) rc = jb__err(JB_ENOMEM, "out of memory salvaging %s", src);
  jb_store *dst = rc == JB_OK ? open_dst(dst_arg, &rc) : NULL;
  if (rc == JB_OK) rc = post_all(sv, dst);
  if (rc == JB_OK && sv->nh) {
    rc = jb__store_write(dst, hist_body, sv);
    if (rc == JB_OK) st->history = sv->nh;
  }
  if (rc == JB_OK &&
      (sv->ndead || sv->nsched || sv->nset || sv->nctl || sv->board_paused))
    rc = jb__store_write(dst, life_body, sv);
  if (rc == JB_OK && (sv->st_life || sv->ndead || sv->nsched))
    say(sv, JB_SALVAGE_NOTE, "copied as they were: %zu jobs' attempts, "
        "options, unique keys or due times; %zu dead letters; %zu "
        "schedules", sv->st_life, sv->ndead, sv->nsched);
  if (rc == JB_OK && (sv->nctl || sv->board_paused))
    say(sv, JB_SALVAGE_NOTE, "copied: the pauses, caps and rate limits of "
        "%zu name(s) "
        "(and the prefixes capped for each name)%s",
        sv->nctl, sv->board_paused ? "; the board's pause" : "");
  if (rc == JB_OK)
    say(sv, JB_SALVAGE_NOTE, "the change log is not copied: the new board's "
        "log starts with the POSTED events of the copies");
  free(sv->state);
  free(sv->c);
  free(sv->done);
  free(sv->hist);
  free(sv->bad);
  free(sv->xs);
  free(sv->dues);
  free(sv->dead);
  free(sv->sched);
  free(sv->set);
  free(sv->ctl);
  jb__buf_free(&sv->bytes);
  jb__pg_unmap(&sv->f);
  return rc;
}

static int cmp_hist(const void *a, const void *b, void *arg) {
  const salv *sv = arg;
  uint64_t x, y;
  memcpy(&x, sv->bytes.data + *(const size_t *)a, 8);
  memcpy(&y, sv->bytes.data + *(const size_t *)b, 8);
  return x < y ? -1 : x > y;
}
