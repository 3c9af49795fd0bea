/*
 * pages.h - a defensive reader of LMDB's data file (data.mdb), format of
 * LMDB 0.9.x (data version 1), for what LMDB's API does not show: which
 * page belongs to what (check's page accounting) and what a damaged file
 * still holds (salvage).
 *
 * LMDB trusts its file: a damaged page makes it assert, abort, loop or
 * read out of bounds. This reader trusts nothing: every page number is
 * checked against the pages the caller can read, every offset and length
 * inside a page against the page size, every overflow run against the
 * file; a page that fails is reported (jb_pgwalk.bad) and its subtree
 * skipped. Nothing here writes.
 *
 * The layout (read from LMDB's mdb.c, 64-bit little-endian hosts only):
 *  - page header, 16 bytes: pgno u64, pad u16 (key size of LEAF2 pages),
 *    flags u16 (JB_PG_*), then lower u16 + upper u16 (free-space bounds)
 *    or, on the first page of an overflow run, its page count u32;
 *  - branch and leaf pages: after the header an array of u16 offsets of
 *    their nodes ((lower - 16) / 2 of them), the nodes at the page's end;
 *  - node, 8 bytes + key + data: lo u16, hi u16, flags u16, ksize u16.
 *    A branch node's child is lo | hi << 16 | flags << 32; a leaf node's
 *    data size is lo | hi << 16, and its data is 8 bytes of overflow page
 *    number with F_BIGDATA, an MDB_db record with F_SUBDATA (a named
 *    table in the main tree, or a tree of duplicates with F_DUPDATA too),
 *    or a sub-page of duplicates with F_DUPDATA alone;
 *  - pages 0 and 1 are meta pages: an MDB_meta after the page header.
 *    Transaction N writes meta N % 2; the newest valid one is current;
 *  - the free list is the tree of meta.dbs[0]: key txnid (u64), data a
 *    list of page numbers (u64 count, then count page numbers) freed by
 *    that transaction and not yet reused. Every page up to mm_last_pg is
 *    exactly one of: a meta page, a page of one tree, a free-list entry.
 */
#ifndef JOBBOARD_STORE_PAGES_H
#define JOBBOARD_STORE_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JB_PG_HDR 16u
#define JB_PG_NODE 8u
#define JB_PG_MAGIC 0xBEEFC0DEu
#define JB_PG_VERSION 1u
#define JB_PG_NONE UINT64_MAX /* LMDB's P_INVALID: an empty tree's root */
/* LMDB keeps at most 32 levels of a tree (CURSOR_STACK). */
#define JB_PG_MAX_DEPTH 32

/* Page flags (mp_flags). */
enum {
  JB_PG_BRANCH = 0x01,
  JB_PG_LEAF = 0x02,
  JB_PG_OVERFLOW = 0x04,
  JB_PG_META = 0x08,
  JB_PG_DIRTY = 0x10, /* in memory only; masked when read */
  JB_PG_LEAF2 = 0x20,
  JB_PG_SUBP = 0x40,
};

/* Node flags (mn_flags of leaf nodes). */
enum {
  JB_PGN_BIGDATA = 0x01,
  JB_PGN_SUBDATA = 0x02,
  JB_PGN_DUPDATA = 0x04,
};

/* LMDB's MDB_db, as stored (48 bytes). */
typedef struct {
  uint32_t pad; /* page size in meta.dbs[0]; LEAF2 key size otherwise */
  uint16_t flags; /* MDB_DUPSORT etc. */
  uint16_t depth;
  uint64_t branch_pages, leaf_pages, overflow_pages;
  uint64_t entries;
  uint64_t root; /* JB_PG_NONE: empty */
} jb_pgdb;

/* LMDB's MDB_meta, as stored after the page header (136 bytes). */
typedef struct {
  uint32_t magic, version;
  uint64_t address, mapsize;
  jb_pgdb dbs[2]; /* 0: the free list, 1: the main tree */
  uint64_t last_pg;
  uint64_t txnid;
} jb_pgmeta;

/* The bytes of a data file as the caller can read them: `npages` whole
 * pages of `psize` bytes at `base` (a map of the file, bounded by its
 * size: a read past the file's end would be SIGBUS). */
typedef struct {
  const uint8_t *base;
  uint64_t npages;
  uint32_t psize;
  size_t mapped; /* jb__pg_map's length, for jb__pg_unmap */
} jb_pgfile;

/* Map the file open as `fd` read-only: *f gets its whole pages of `psize`
 * bytes (0: the system's page size, for now), *size its size in bytes.
 * 0, or an errno code. */
int jb__pg_map(jb_pgfile *f, uint64_t *size, int fd, uint32_t psize);
void jb__pg_unmap(jb_pgfile *f);

/* Read both meta pages of a file of `size` bytes at `file` into
 * meta[0..1]: ok[i] says whether meta i is sane, else why[i] says why.
 * The page size is meta 0's; when meta 0 is not sane, meta 1 is looked
 * for at each page size LMDB allows (it must then name that size). */
void jb__pg_metas(const uint8_t *file, uint64_t size, jb_pgmeta meta[2],
                  bool ok[2], char why[2][128]);

/* What a tree walk counts (compare with the tree's jb_pgdb). */
typedef struct {
  uint64_t branch_pages, leaf_pages, overflow_pages, entries;
  unsigned depth;
} jb_pgcount;

typedef struct jb_pgwalk jb_pgwalk;
struct jb_pgwalk {
  const jb_pgfile *f;
  /* The walk reached `n` pages from `pgno` (n > 1: an overflow run) for
   * the tree being walked. Return false to skip it: not read, not
   * descended (a page already seen: this also bounds a walk of a file
   * whose pages point in circles). May be NULL. */
  bool (*page)(jb_pgwalk *w, uint64_t pgno, uint64_t n, unsigned flags);
  /* A leaf entry: its key and data (data resolved through its overflow
   * run; NULL when that run is unreadable, which bad() reported), the
   * node's flags. For F_SUBDATA entries data is the MDB_db record. May
   * be NULL. A DUPSORT entry's duplicates are not handed out. */
  void (*leaf)(jb_pgwalk *w, const uint8_t *key, size_t klen,
               const uint8_t *data, size_t dlen, unsigned nflags);
  /* Page `pgno` cannot be read: why. The walk goes on without it. */
  void (*bad)(jb_pgwalk *w, uint64_t pgno, const char *why);
  void *arg;
  jb_pgcount count; /* of the last jb__pg_walk */
  bool dupsort;     /* the tree walked has MDB_DUPSORT */
};

/* Walk the tree of `db` from its root: every page (and overflow run) is
 * offered to page(), every entry to leaf(). w->count is reset first. */
void jb__pg_walk(jb_pgwalk *w, const jb_pgdb *db);

/* Check page `pgno` as a branch or leaf page (its header and every
 * node's bounds): NULL when sane, else why (static text). */
const char *jb__pg_node_page(const jb_pgfile *f, uint64_t pgno);

/* The entries of a sane leaf page (jb__pg_node_page said so), as the walk
 * would hand them to w->leaf, overflow data resolved. Used by salvage to
 * read pages no tree reaches. */
void jb__pg_leaf_entries(jb_pgwalk *w, uint64_t pgno);

/* Decode the MDB_db record of a F_SUBDATA entry (48 bytes). */
bool jb__pg_db(const uint8_t *data, size_t dlen, jb_pgdb *out);

/* The page numbers of a free-list entry's data: count to *n, the list at
 * *list (unaligned u64s: read them with jb__pg_u64). false when the data
 * is not such a list. */
bool jb__pg_idl(const uint8_t *data, size_t dlen, uint64_t *n,
                const uint8_t **list);

static inline uint64_t jb__pg_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

#endif
