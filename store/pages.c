/*
 * pages.c - a defensive reader of LMDB's data file (pages.h says what the
 * layout is and why this exists). Every number read from the file is
 * checked before it is used as an offset, a length or a page number.
 */
#include "pages.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static inline uint16_t rd16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Page sizes LMDB 0.9 can have made: a power of two from its smallest
 * (256: MIN_PAGESIZE) to its largest (65536 with MDB_DEVEL; 32768 else). */
static bool psize_ok(uint64_t ps) {
  return ps >= 256 && ps <= 65536 && (ps & (ps - 1)) == 0;
}

int jb__pg_map(jb_pgfile *f, uint64_t *size, int fd, uint32_t psize) {
  *f = (jb_pgfile){0};
  *size = 0;
  struct stat st;
  if (fstat(fd, &st) != 0) return errno;
  if (st.st_size <= 0) return EINVAL;
  if ((uint64_t)st.st_size > SIZE_MAX) return EFBIG;
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return errno;
  if (psize == 0) psize = (uint32_t)sysconf(_SC_PAGESIZE);
  *size = (uint64_t)st.st_size;
  *f = (jb_pgfile){p, *size / psize, psize, (size_t)*size};
  return 0;
}

void jb__pg_unmap(jb_pgfile *f) {
  if (f->base) munmap((void *)(uintptr_t)f->base, f->mapped);
  *f = (jb_pgfile){0};
}

bool jb__pg_db(const uint8_t *d, size_t dlen, jb_pgdb *o) {
  if (dlen != 48) return false;
  o->pad = rd32(d);
  o->flags = rd16(d + 4);
  o->depth = rd16(d + 6);
  o->branch_pages = jb__pg_u64(d + 8);
  o->leaf_pages = jb__pg_u64(d + 16);
  o->overflow_pages = jb__pg_u64(d + 24);
  o->entries = jb__pg_u64(d + 32);
  o->root = jb__pg_u64(d + 40);
  return true;
}

/* The MDB_meta after the header of page `pgno`, psize bytes a page. */
static bool meta_at(const uint8_t *file, uint64_t size, uint64_t pgno,
                    uint64_t psize, jb_pgmeta *m, char *why, size_t wl) {
  if ((pgno + 1) * psize > size) {
    snprintf(why, wl, "the file is too short to hold it");
    return false;
  }
  const uint8_t *p = file + pgno * psize;
  if (jb__pg_u64(p) != pgno || !(rd16(p + 10) & JB_PG_META)) {
    snprintf(why, wl, "its page header is not a meta page's");
    return false;
  }
  const uint8_t *d = p + JB_PG_HDR;
  m->magic = rd32(d);
  m->version = rd32(d + 4);
  m->address = jb__pg_u64(d + 8);
  m->mapsize = jb__pg_u64(d + 16);
  jb__pg_db(d + 24, 48, &m->dbs[0]);
  jb__pg_db(d + 72, 48, &m->dbs[1]);
  m->last_pg = jb__pg_u64(d + 120);
  m->txnid = jb__pg_u64(d + 128);
  if (m->magic != JB_PG_MAGIC) {
    snprintf(why, wl, "its magic number is %#x, not LMDB's", m->magic);
    return false;
  }
  if (m->version != JB_PG_VERSION) {
    snprintf(why, wl, "data version %u is not LMDB 0.9's", m->version);
    return false;
  }
  if (m->dbs[0].pad != psize) {
    snprintf(why, wl, "its page size %u is not the file's %llu",
             m->dbs[0].pad, (unsigned long long)psize);
    return false;
  }
  if (m->last_pg < 1 || m->last_pg > UINT64_MAX / 65536) {
    snprintf(why, wl, "its last page %llu is impossible",
             (unsigned long long)m->last_pg);
    return false;
  }
  for (int i = 0; i < 2; i++) {
    uint64_t r = m->dbs[i].root;
    if (r != JB_PG_NONE && (r < 2 || r > m->last_pg)) {
      snprintf(why, wl, "the root page %llu of its %s is outside the file's "
               "pages 2..%llu", (unsigned long long)r,
               i ? "main tree" : "free list",
               (unsigned long long)m->last_pg);
      return false;
    }
  }
  return true;
}

void jb__pg_metas(const uint8_t *file, uint64_t size, jb_pgmeta meta[2],
                  bool ok[2], char why[2][128]) {
  memset(meta, 0, 2 * sizeof *meta);
  uint64_t ps = 0;
  if (size >= JB_PG_HDR + 40) ps = rd32(file + JB_PG_HDR + 24);
  if (!psize_ok(ps)) {
    ok[0] = false;
    snprintf(why[0], 128, "its page size is not one LMDB makes");
  } else {
    ok[0] = meta_at(file, size, 0, ps, &meta[0], why[0], 128);
  }
  if (ok[0]) {
    ok[1] = meta_at(file, size, 1, ps, &meta[1], why[1], 128);
    return;
  }
  /* Meta 0 is unreadable, so is its page size: try each LMDB allows. */
  ok[1] = false;
  snprintf(why[1], 128, "no meta page 1 at any page size LMDB makes");
  for (ps = 256; ps <= 65536 && !ok[1]; ps <<= 1) {
    char w[128];
    ok[1] = meta_at(file, size, 1, ps, &meta[1], w, sizeof w);
  }
}

/* ----------------------------------------------------------- page checks */

static const uint8_t *page_at(const jb_pgfile *f, uint64_t pgno) {
  return f->base + pgno * f->psize;
}

static const char *header_why(const jb_pgfile *f, uint64_t pgno) {
  if (pgno < 2) return "a meta page where a tree page belongs";
  if (pgno >= f->npages) return "beyond the end of the file";
  if (jb__pg_u64(page_at(f, pgno)) != pgno)
    return "its header names another page number";
  return NULL;
}

/* Node i of branch/leaf page p (offsets checked by node_page_why). */
static const uint8_t *node_at(const uint8_t *p, unsigned i) {
  return p + rd16(p + JB_PG_HDR + 2 * i);
}

/* The size of a node's data as stored in the page. */
static size_t node_stored(const uint8_t *n) {
  if (rd16(n + 4) & JB_PGN_BIGDATA) return 8;
  return (size_t)rd16(n) | (size_t)rd16(n + 2) << 16;
}

/* Check the free-space bounds and node offsets of a page image of `len`
 * bytes whose kind bits are `kind` (branch or leaf). */
static const char *nodes_why(const uint8_t *p, size_t len, unsigned kind,
                             unsigned *nkeys) {
  unsigned lower = rd16(p + 12), upper = rd16(p + 14);
  if (lower < JB_PG_HDR || lower > upper || upper > len || (lower & 1))
    return "its free-space bounds are impossible";
  unsigned n = (lower - JB_PG_HDR) / 2;
  *nkeys = n;
  if (kind & JB_PG_LEAF2) {
    unsigned ks = rd16(p + 8);
    if (ks == 0 || JB_PG_HDR + (size_t)n * ks > len)
      return "its fixed-size keys do not fit in it";
    return NULL;
  }
  if (n == 0 && (kind & JB_PG_BRANCH)) return "a branch page with no entries";
  for (unsigned i = 0; i < n; i++) {
    size_t off = rd16(p + JB_PG_HDR + 2 * i);
    if (off < upper || off + JB_PG_NODE > len) return "a node lies outside it";
    const uint8_t *nd = p + off;
    size_t need = JB_PG_NODE + rd16(nd + 6);
    /* LMDB never marks a node both big (its data on overflow pages, 8
     * bytes here) and duplicates or a table (data here, dsize bytes): with
     * both, node_stored would vouch for 8 bytes that leaf_node then reads
     * as dsize. */
    unsigned nfl = rd16(nd + 4);
    if ((kind & JB_PG_LEAF) && (nfl & JB_PGN_BIGDATA) &&
        (nfl & (JB_PGN_SUBDATA | JB_PGN_DUPDATA)))
      return "a node is marked both big and duplicates or a table";
    if (kind & JB_PG_LEAF) need += node_stored(nd);
    if (off + need > len) return "a node runs past its end";
  }
  return NULL;
}

/* Kind bits of a branch or leaf page, or 0. */
static unsigned node_kind(const uint8_t *p) {
  unsigned fl = rd16(p + 10) & ~(unsigned)JB_PG_DIRTY;
  if (fl == JB_PG_BRANCH || fl == JB_PG_LEAF || fl == (JB_PG_LEAF | JB_PG_LEAF2))
    return fl;
  return 0;
}

static const char *node_page_why(const jb_pgfile *f, uint64_t pgno,
                                 unsigned *kind, unsigned *nkeys) {
  const char *why = header_why(f, pgno);
  if (why) return why;
  const uint8_t *p = page_at(f, pgno);
  if ((*kind = node_kind(p)) == 0) return "not a branch or leaf page";
  return nodes_why(p, f->psize, *kind, nkeys);
}

const char *jb__pg_node_page(const jb_pgfile *f, uint64_t pgno) {
  unsigned kind, n;
  return node_page_why(f, pgno, &kind, &n);
}

/* The data of an overflow run of `dlen` bytes from `pgno`, or NULL. */
static const uint8_t *overflow(jb_pgwalk *w, uint64_t pgno, size_t dlen) {
  const jb_pgfile *f = w->f;
  const char *why = header_why(f, pgno);
  uint64_t n = 0;
  if (why == NULL) {
    const uint8_t *p = page_at(f, pgno);
    n = rd32(p + 12);
    if ((rd16(p + 10) & ~(unsigned)JB_PG_DIRTY) != JB_PG_OVERFLOW)
      why = "not an overflow page";
    else if (n == 0 || n > f->npages - pgno)
      why = "its overflow run is empty or runs past the end of the file";
    else if (dlen > n * f->psize - JB_PG_HDR)
      why = "its overflow run is shorter than the data it holds";
  }
  /* Offered before it is judged, so the page is accounted for either way. */
  bool take = w->page == NULL || w->page(w, pgno, why ? 1 : n, JB_PG_OVERFLOW);
  if (!take) return NULL;
  if (why) {
    if (w->bad) w->bad(w, pgno, why);
    return NULL;
  }
  w->count.overflow_pages += n;
  return page_at(f, pgno) + JB_PG_HDR;
}

static void walk_page(jb_pgwalk *w, uint64_t pgno, unsigned level);

/* Leaf node i of page p: count it and hand it out. */
static void leaf_node(jb_pgwalk *w, const uint8_t *p, unsigned i,
                      unsigned level, bool descend) {
  const uint8_t *nd = node_at(p, i);
  unsigned nfl = rd16(nd + 4), ks = rd16(nd + 6);
  size_t dsize = (size_t)rd16(nd) | (size_t)rd16(nd + 2) << 16;
  const uint8_t *key = nd + JB_PG_NODE, *data = key + ks;
  if (nfl & JB_PGN_DUPDATA) {
    /* Duplicates: in a tree of their own (F_SUBDATA) or a sub-page. */
    jb_pgdb sub;
    if ((nfl & JB_PGN_SUBDATA) && jb__pg_db(data, dsize, &sub)) {
      if (!descend) return;
      /* The duplicates are counted as entries (as LMDB counts them), their
       * pages as the tree's; the depth is the main tree's. */
      unsigned depth = w->count.depth;
      void (*leaf)(jb_pgwalk *, const uint8_t *, size_t, const uint8_t *,
                   size_t, unsigned) = w->leaf;
      w->leaf = NULL;
      if (sub.root != JB_PG_NONE) walk_page(w, sub.root, level + 1);
      w->leaf = leaf;
      w->count.depth = depth;
      return;
    }
    unsigned n;
    if (!(nfl & JB_PGN_SUBDATA) && dsize >= JB_PG_HDR &&
        (rd16(data + 10) & JB_PG_SUBP) &&
        nodes_why(data, dsize,
                  rd16(data + 10) & (JB_PG_LEAF | JB_PG_LEAF2), &n) == NULL) {
      w->count.entries += n;
      return;
    }
    if (w->bad) w->bad(w, jb__pg_u64(p), "a node's duplicates are malformed");
    return;
  }
  w->count.entries++;
  if (nfl & JB_PGN_BIGDATA) {
    data = overflow(w, jb__pg_u64(data), dsize);
    if (data == NULL) {
      if (w->leaf) w->leaf(w, key, ks, NULL, dsize, nfl);
      return;
    }
  }
  if (w->leaf) w->leaf(w, key, ks, data, dsize, nfl);
}

static void walk_page(jb_pgwalk *w, uint64_t pgno, unsigned level) {
  if (level >= JB_PG_MAX_DEPTH) {
    if (w->bad) w->bad(w, pgno, "the tree is deeper than LMDB allows");
    return;
  }
  if (w->page && !w->page(w, pgno, 1, 0)) return;
  unsigned kind = 0, n = 0;
  const char *why = node_page_why(w->f, pgno, &kind, &n);
  if (why) {
    if (w->bad) w->bad(w, pgno, why);
    return;
  }
  if (level + 1 > w->count.depth) w->count.depth = level + 1;
  const uint8_t *p = page_at(w->f, pgno);
  if (kind & JB_PG_BRANCH) {
    w->count.branch_pages++;
    for (unsigned i = 0; i < n; i++) {
      const uint8_t *nd = node_at(p, i);
      uint64_t child = (uint64_t)rd16(nd) | (uint64_t)rd16(nd + 2) << 16 |
                       (uint64_t)rd16(nd + 4) << 32;
      walk_page(w, child, level + 1);
    }
    return;
  }
  w->count.leaf_pages++;
  if (kind & JB_PG_LEAF2) {
    w->count.entries += n;
    return;
  }
  for (unsigned i = 0; i < n; i++) leaf_node(w, p, i, level, true);
}

void jb__pg_walk(jb_pgwalk *w, const jb_pgdb *db) {
  memset(&w->count, 0, sizeof w->count);
  w->dupsort = (db->flags & 0x04) != 0; /* MDB_DUPSORT */
  if (db->root != JB_PG_NONE) walk_page(w, db->root, 0);
}

void jb__pg_leaf_entries(jb_pgwalk *w, uint64_t pgno) {
  unsigned kind = 0, n = 0;
  if (node_page_why(w->f, pgno, &kind, &n) || kind != JB_PG_LEAF) return;
  const uint8_t *p = page_at(w->f, pgno);
  for (unsigned i = 0; i < n; i++) leaf_node(w, p, i, 0, false);
}

bool jb__pg_idl(const uint8_t *data, size_t dlen, uint64_t *n,
                const uint8_t **list) {
  if (data == NULL || dlen < 8 || dlen % 8) return false;
  uint64_t c = jb__pg_u64(data);
  if (c != dlen / 8 - 1) return false;
  *n = c;
  *list = data + 8;
  return true;
}
