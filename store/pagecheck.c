/*
 * pagecheck.c - check's page accounting: every page of the
 * snapshot is exactly one of the two meta pages, a page of one tree (the
 * free list's own tree, the main tree, each named table), or a page the
 * free list lists; each tree's counts are those its MDB_db record and
 * mdb_stat give. LMDB keeps this invariant on every commit (mdb.c's
 * comment on MDB_page; its MDB_DEBUG audit checks the sum), so any
 * exception is damage: a torn meta page (a main tree older than its free
 * list) shows as pages both in a table and on the free list, and pages in
 * neither; an overwritten page as a bad header.
 *
 * It reads the pages through LMDB's own map inside the check's read
 * transaction: the snapshot's pages stay put while it is open (writers
 * only reuse pages freed before the oldest reader's snapshot), so the
 * walk reads what the transaction sees. Pages freed in the snapshot may be
 * rewritten meanwhile, but only their numbers are read (from the free
 * list's own tree, part of the snapshot). One byte per page says which
 * tree has it: 1 MiB per 4 GiB of file, one allocation, any board size.
 */
#include "txn.h"
#include "pages.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OWN_NONE, OWN_META, OWN_FREETREE, OWN_FREE, OWN_MAIN, OWN_TABLE0 };
#define MAX_TABLES (255 - OWN_TABLE0)
#define NAME_MAX_SHOWN 64
/* Lines of one kind reported before the rest are only counted. */
#define LINES_PER_KIND 20

enum { K_TWICE, K_BEYOND, K_BAD, K_LEAKED, K_COUNT, K_KINDS };

typedef struct {
  jb_pgwalk w;
  uint8_t *own; /* last_pg + 1 entries */
  uint64_t last_pg;
  uint8_t cur;  /* the owner being walked */
  char names[MAX_TABLES][NAME_MAX_SHOWN + 7]; /* "table NAME" */
  jb_pgdb dbs[MAX_TABLES];
  unsigned ntables;
  jb_buf *report;
  size_t problems;
  size_t lines[K_KINDS], more[K_KINDS];
  int err; /* JB_ENOMEM */
} pcheck;

static const char *own_name(const pcheck *pc, uint8_t o) {
  switch (o) {
  case OWN_META: return "a meta page";
  case OWN_FREETREE: return "the free list's tree";
  case OWN_FREE: return "the free list";
  case OWN_MAIN: return "the main tree";
  default: return o >= OWN_TABLE0 && o - OWN_TABLE0 < (int)pc->ntables
                      ? pc->names[o - OWN_TABLE0] : "?";
  }
}

static void problem(pcheck *pc, int kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(pcheck *pc, int kind, const char *fmt, ...) {
  pc->problems++;
  if (pc->lines[kind] >= LINES_PER_KIND) {
    pc->more[kind]++;
    return;
  }
  pc->lines[kind]++;
  char line[512];
  int n = snprintf(line, sizeof line, "pages: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (jb__buf_append(pc->report, line, strlen(line) + 1)) pc->err = JB_ENOMEM;
}

/* Claim pages [pgno, pgno + n) for the owner being walked. */
static bool claim(pcheck *pc, uint64_t pgno, uint64_t n, const char *what) {
  bool all = true;
  for (uint64_t p = pgno; p - pgno < n; p++) {
    if (p > pc->last_pg) {
      problem(pc, K_BEYOND, "page %llu (%s of %s) is beyond the snapshot's "
              "last page %llu", (unsigned long long)p, what,
              own_name(pc, pc->cur), (unsigned long long)pc->last_pg);
      return false;
    }
    if (pc->own[p] != OWN_NONE) {
      problem(pc, K_TWICE, "page %llu is in both %s and %s",
              (unsigned long long)p, own_name(pc, pc->own[p]),
              own_name(pc, pc->cur));
      all = false;
      continue;
    }
    pc->own[p] = pc->cur;
  }
  return all;
}

static bool on_page(jb_pgwalk *w, uint64_t pgno, uint64_t n, unsigned flags) {
  return claim(w->arg, pgno, n, flags & JB_PG_OVERFLOW ? "an overflow page"
                                                       : "a tree page");
}

static void on_bad(jb_pgwalk *w, uint64_t pgno, const char *why) {
  pcheck *pc = w->arg;
  problem(pc, K_BAD, "page %llu of %s cannot be read: %s",
          (unsigned long long)pgno, own_name(pc, pc->cur), why);
}

/* The free list's entries: the pages each lists are free. */
static void on_free(jb_pgwalk *w, const uint8_t *key, size_t klen,
                    const uint8_t *data, size_t dlen, unsigned nflags) {
  pcheck *pc = w->arg;
  (void)nflags;
  if (data == NULL) return; /* its overflow run was reported */
  uint64_t n;
  const uint8_t *list;
  unsigned long long txn = klen == 8 ? jb__pg_u64(key) : 0;
  if (!jb__pg_idl(data, dlen, &n, &list)) {
    problem(pc, K_BAD, "the free list's entry of transaction %llu is not a "
            "list of pages", txn);
    return;
  }
  uint8_t keep = pc->cur;
  pc->cur = OWN_FREE;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t p = jb__pg_u64(list + 8 * i);
    if (p < 2) {
      problem(pc, K_TWICE, "the free list (transaction %llu) lists meta page "
              "%llu", txn, (unsigned long long)p);
      continue;
    }
    claim(pc, p, 1, "a free page");
  }
  pc->cur = keep;
}

/* The main tree's entries: named tables (F_SUBDATA) to walk after it. */
static void on_main(jb_pgwalk *w, const uint8_t *key, size_t klen,
                    const uint8_t *data, size_t dlen, unsigned nflags) {
  pcheck *pc = w->arg;
  if (!(nflags & JB_PGN_SUBDATA) || data == NULL) return;
  if (pc->ntables == MAX_TABLES) {
    problem(pc, K_BAD, "the main tree names more than %d tables", MAX_TABLES);
    return;
  }
  char *name = pc->names[pc->ntables];
  memcpy(name, "table ", 6);
  name += 6;
  size_t n = klen < NAME_MAX_SHOWN ? klen : NAME_MAX_SHOWN;
  for (size_t i = 0; i < n; i++)
    name[i] = key[i] >= 0x20 && key[i] < 0x7f ? (char)key[i] : '?';
  name[n] = '\0';
  if (!jb__pg_db(data, dlen, &pc->dbs[pc->ntables])) {
    problem(pc, K_BAD, "the record of %s is malformed", name - 6);
    return;
  }
  pc->ntables++;
}

/* Compare what the walk counted with the tree's record (`db`, from its
 * parent: the meta page or the main tree) and what LMDB reports (`st`,
 * NULL when the table is not one the store opens). */
static void compare(pcheck *pc, const char *name, const jb_pgdb *db,
                    const MDB_stat *st) {
  const jb_pgcount *c = &pc->w.count;
  bool pages = !pc->w.dupsort; /* duplicates' pages: not compared */
  if (c->entries != db->entries || c->depth != db->depth ||
      (pages && (c->branch_pages != db->branch_pages ||
                 c->leaf_pages != db->leaf_pages ||
                 c->overflow_pages != db->overflow_pages)))
    problem(pc, K_COUNT, "%s: its pages hold %llu entries, depth %u, "
            "%llu branch, %llu leaf, %llu overflow pages; its record says "
            "%llu, %u, %llu, %llu, %llu", name,
            (unsigned long long)c->entries, c->depth,
            (unsigned long long)c->branch_pages,
            (unsigned long long)c->leaf_pages,
            (unsigned long long)c->overflow_pages,
            (unsigned long long)db->entries, db->depth,
            (unsigned long long)db->branch_pages,
            (unsigned long long)db->leaf_pages,
            (unsigned long long)db->overflow_pages);
  if (st && (st->ms_entries != db->entries || st->ms_depth != db->depth ||
             st->ms_branch_pages != db->branch_pages ||
             st->ms_leaf_pages != db->leaf_pages ||
             st->ms_overflow_pages != db->overflow_pages))
    problem(pc, K_COUNT, "%s: LMDB reports %zu entries, depth %u, %zu "
            "branch, %zu leaf, %zu overflow pages; its record in the file "
            "says %llu, %u, %llu, %llu, %llu", name, st->ms_entries,
            st->ms_depth, st->ms_branch_pages, st->ms_leaf_pages,
            st->ms_overflow_pages, (unsigned long long)db->entries,
            db->depth, (unsigned long long)db->branch_pages,
            (unsigned long long)db->leaf_pages,
            (unsigned long long)db->overflow_pages);
}

/* The store's handle of table `name`, to ask LMDB its counts. */
static bool table_dbi(jb_store *s, const char *name, MDB_dbi *out) {
  static const struct { const char *name; size_t off; } tab[] = {
      {JB_DB_META, offsetof(jb_store, meta)},
      {JB_DB_JOBS, offsetof(jb_store, jobs)},
      {JB_DB_READY, offsetof(jb_store, ready)},
      {JB_DB_CLAIMS, offsetof(jb_store, claims)},
      {JB_DB_TRASH, offsetof(jb_store, trash)},
      {JB_DB_LOG, offsetof(jb_store, log)},
      {JB_DB_QUARANTINE, offsetof(jb_store, quarantine)},
      {JB_DB_LEASES, offsetof(jb_store, leases)},
      {JB_DB_HOLDERS, offsetof(jb_store, holders)},
      {JB_DB_ENTITIES, offsetof(jb_store, entities)},
      {JB_DB_HISTORY, offsetof(jb_store, history)},
      {JB_DB_LOGTAIL, offsetof(jb_store, logtail)},
      {JB_DB_HISTENDS, offsetof(jb_store, histends)},
      {JB_DB_DELAYED, offsetof(jb_store, delayed)},
      {JB_DB_DUE, offsetof(jb_store, due)},
      {JB_DB_JOBX, offsetof(jb_store, jobx)},
      {JB_DB_UNIQUE, offsetof(jb_store, unique)},
      {JB_DB_SCHEDULES, offsetof(jb_store, schedules)},
      {JB_DB_BYNAME, offsetof(jb_store, byname)},
      {JB_DB_QUEUES, offsetof(jb_store, queues)},
      {JB_DB_DEADAGE, offsetof(jb_store, deadage)},
  };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strcmp(tab[i].name, name) == 0) {
      memcpy(out, (const char *)s + tab[i].off, sizeof *out);
      return true;
    }
  return false;
}

static void walk(pcheck *pc, uint8_t owner, const char *name,
                 const jb_pgdb *db, const MDB_stat *st,
                 void (*leaf)(jb_pgwalk *, const uint8_t *, size_t,
                              const uint8_t *, size_t, unsigned)) {
  pc->cur = owner;
  pc->w.leaf = leaf;
  jb__pg_walk(&pc->w, db);
  compare(pc, name, db, st);
}

/* The leaked pages, a line per run of consecutive ones. */
static void leaked(pcheck *pc) {
  for (uint64_t p = 2; p <= pc->last_pg; p++) {
    if (pc->own[p] != OWN_NONE) continue;
    uint64_t q = p;
    while (q < pc->last_pg && pc->own[q + 1] == OWN_NONE) q++;
    if (q == p)
      problem(pc, K_LEAKED, "page %llu is in no tree and not on the free "
              "list (leaked)", (unsigned long long)p);
    else
      problem(pc, K_LEAKED, "pages %llu-%llu are in no tree and not on the "
              "free list (leaked)", (unsigned long long)p,
              (unsigned long long)q);
    pc->problems += q - p; /* each page is one */
    p = q;
  }
}

/* The meta page of the snapshot `txn` reads: the one LMDB chose (its
 * txnid) and whose trees' counts are those LMDB gives. A writer may
 * rewrite a meta page two commits after ours, so a mismatch is retried by
 * the caller with a fresh transaction (JB__PAGES_AGAIN). */
static int snapshot_meta(MDB_txn *txn, const jb_pgfile *f,
                         uint64_t fsize, jb_pgmeta *m) {
  jb_pgmeta metas[2];
  bool ok[2];
  char why[2][128];
  jb__pg_metas(f->base, fsize, metas, ok, why);
  size_t id = mdb_txn_id(txn);
  for (int i = 0; i < 2; i++) {
    if (!ok[i] || metas[i].txnid != id) continue;
    MDB_stat st[2];
    int rc;
    if ((rc = mdb_stat(txn, 0, &st[0])) || (rc = mdb_stat(txn, 1, &st[1])))
      return rc;
    for (int d = 0; d < 2; d++)
      if (st[d].ms_entries != metas[i].dbs[d].entries ||
          st[d].ms_leaf_pages != metas[i].dbs[d].leaf_pages)
        return JB__PAGES_AGAIN;
    *m = metas[i];
    return 0;
  }
  return JB__PAGES_AGAIN;
}

int jb__check_pages(jb_store *s, MDB_txn *txn, jb_buf *report,
                    size_t *problems, bool *unreadable) {
  *problems = 0;
  *unreadable = false;
  MDB_stat est;
  int fd, rc;
  if ((rc = mdb_env_stat(s->env, &est)) || (rc = mdb_env_get_fd(s->env, &fd)))
    return rc;
  /* LMDB 0.9.24 does not give its map's address (me_mapaddr is only a
   * fixed map's), so the file is mapped again, read-only: the kernel's page
   * cache is one, both maps see the same bytes. */
  jb_pgfile f;
  uint64_t fsize;
  if ((rc = jb__pg_map(&f, &fsize, fd, est.ms_psize)))
    return jb__err_errno(rc, "cannot map data.mdb for the page accounting");
  jb_pgmeta m;
  if ((rc = snapshot_meta(txn, &f, fsize, &m))) {
    jb__pg_unmap(&f);
    return rc;
  }

  pcheck *pc = calloc(1, sizeof *pc);
  if (pc) pc->own = calloc(m.last_pg + 1, 1);
  if (pc == NULL || pc->own == NULL) {
    free(pc);
    jb__pg_unmap(&f);
    return jb__err(JB_ENOMEM, "out of memory for the page map of %llu pages",
                   (unsigned long long)m.last_pg + 1);
  }
  pc->w = (jb_pgwalk){.f = &f, .page = on_page, .bad = on_bad, .arg = pc};
  pc->last_pg = m.last_pg;
  pc->report = report;
  pc->own[0] = pc->own[1] = OWN_META;

  /* The trees first, the free list last: a page in both is then named as
   * the table's and the free list's, and the table's walk goes on. */
  MDB_stat st;
  if ((rc = mdb_stat(txn, 1, &st)) == 0) {
    walk(pc, OWN_MAIN, "the main tree", &m.dbs[1], &st, on_main);
    for (unsigned i = 0; i < pc->ntables; i++) {
      MDB_dbi dbi;
      bool known = table_dbi(s, pc->names[i] + 6, &dbi);
      if (known && (rc = mdb_stat(txn, dbi, &st))) break;
      walk(pc, (uint8_t)(OWN_TABLE0 + i), pc->names[i], &pc->dbs[i],
           known ? &st : NULL, NULL);
    }
  }
  if (rc == 0 && (rc = mdb_stat(txn, 0, &st)) == 0)
    walk(pc, OWN_FREETREE, "the free list", &m.dbs[0], &st, on_free);
  if (rc == 0) leaked(pc);
  static const char *what[K_KINDS] = {
      "pages in two places", "pages beyond the last page", "unreadable pages",
      "runs of leaked pages", "trees whose counts differ"};
  for (int k = 0; rc == 0 && k < K_KINDS; k++)
    if (pc->more[k]) {
      char line[160];
      snprintf(line, sizeof line, "pages: and %zu more lines about %s", pc->more[k],
               what[k]);
      if (jb__buf_append(report, line, strlen(line) + 1)) pc->err = JB_ENOMEM;
    }
  if (rc == 0 && pc->err)
    rc = jb__err(JB_ENOMEM, "out of memory for the check's report");
  *problems = pc->problems;
  *unreadable = pc->lines[K_BAD] > 0;
  free(pc->own);
  free(pc);
  jb__pg_unmap(&f);
  return rc;
}
