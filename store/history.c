/*
 * history.c - the completion history table (history.h): adding records
 * with their bounded trimming, lookups, scans and the walk check.c makes.
 */
#include "history.h"
#include "life.h"
#include "codec/posting.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A write drops at most this many old records, so its cost stays bounded
 * (as the change log's trimming, ops.c). Each write adds one record, so
 * the history converges on its bounds even after they were lowered. */
#define HIST_TRIM JB_RETAIN_PRUNE_MAX

#define SKEY_LEN 9  /* 's' + hseq */

static void skey(uint8_t k[SKEY_LEN], uint64_t hseq) {
  k[0] = 's';
  for (int i = 0; i < 8; i++) k[1 + i] = (uint8_t)(hseq >> (56 - 8 * i));
}

static bool is_skey(const MDB_val *k) {
  return k->mv_size == SKEY_LEN && ((const uint8_t *)k->mv_data)[0] == 's';
}

/* ------------------------------------------- the two tables as one */

/* The records are in two tables (history.h): `history` (MID) and
 * `histends` (ENDS), with no key in both. A reader merges them: a cursor
 * on each, and the next record is the one of the two with the lower key
 * (the higher, newest first). Keys outside the 's' range end a side. */
enum { MID = 0, ENDS = 1 };

typedef struct {
  MDB_cursor *c[2];
  MDB_val k[2], v[2]; /* where each side stands, when on[] */
  bool on[2];
  bool fwd;
  int at; /* the side of the current record; -1: none left */
} hcur;

static int hc_open(jb_store *s, MDB_txn *txn, hcur *h) {
  *h = (hcur){.at = -1};
  int rc = mdb_cursor_open(txn, s->history, &h->c[MID]);
  if (rc) return rc;
  if ((rc = mdb_cursor_open(txn, s->histends, &h->c[ENDS])))
    mdb_cursor_close(h->c[MID]);
  return rc;
}

static void hc_close(hcur *h) {
  mdb_cursor_close(h->c[MID]);
  mdb_cursor_close(h->c[ENDS]);
}

/* Side `i` after a cursor operation that returned `rc`. */
static int side_set(hcur *h, int i, int rc, const MDB_val *k,
                    const MDB_val *v) {
  h->on[i] = rc == 0 && is_skey(k);
  if (h->on[i]) {
    h->k[i] = *k;
    h->v[i] = *v;
  }
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Side `i` onto its first key at or after `*at` (fwd), else its last key
 * before `*at`; `at` NULL: from the oldest (fwd) or the newest. Then the
 * table's first or last key is the answer when it is a record's (every
 * key is, since schema 5): one descent instead of two. */
static int side_seek(hcur *h, int i, const MDB_val *at, bool fwd) {
  static const MDB_val lowest = {1, "s"}, past_all = {1, "t"};
  MDB_val k, v;
  int rc;
  if (at == NULL) {
    rc = mdb_cursor_get(h->c[i], &k, &v, fwd ? MDB_FIRST : MDB_LAST);
    if (rc == MDB_NOTFOUND || (rc == 0 && is_skey(&k)))
      return side_set(h, i, rc, &k, &v);
    if (rc) return rc;
    at = fwd ? &lowest : &past_all;
  }
  k = *at;
  rc = mdb_cursor_get(h->c[i], &k, &v, MDB_SET_RANGE);
  if (!fwd) {
    if (rc == 0)
      rc = mdb_cursor_get(h->c[i], &k, &v, MDB_PREV);
    else if (rc == MDB_NOTFOUND)
      rc = mdb_cursor_get(h->c[i], &k, &v, MDB_LAST);
  }
  return side_set(h, i, rc, &k, &v);
}

static void hc_pick(hcur *h) {
  h->at = -1;
  for (int i = 0; i < 2; i++) {
    if (!h->on[i]) continue;
    int c = h->at < 0 ? 0 : memcmp(h->k[i].mv_data, h->k[h->at].mv_data,
                                   SKEY_LEN);
    if (h->at < 0 || (h->fwd ? c < 0 : c > 0)) h->at = i;
  }
}

/* Onto the first record at or after `*at` (fwd), else the last before;
 * `at` NULL: onto the oldest (fwd) or the newest. */
static int hc_seek(hcur *h, const MDB_val *at, bool fwd) {
  h->fwd = fwd;
  int rc = side_seek(h, MID, at, fwd);
  if (rc == 0) rc = side_seek(h, ENDS, at, fwd);
  hc_pick(h);
  return rc;
}

/* On to the next record in the seek's direction (h->at >= 0). */
static int hc_step(hcur *h) {
  int i = h->at;
  MDB_val k, v;
  int rc = mdb_cursor_get(h->c[i], &k, &v, h->fwd ? MDB_NEXT : MDB_PREV);
  rc = side_set(h, i, rc, &k, &v);
  hc_pick(h);
  return rc;
}

static uint64_t side_hseq(const hcur *h, int i) {
  return jb__be64((const uint8_t *)h->k[i].mv_data + 1);
}

static uint64_t hc_hseq(const hcur *h) { return side_hseq(h, h->at); }

/* The oldest and newest hseq (*any false when there is no record); `h`
 * is left on the oldest. */
static int hc_span(hcur *h, bool *any, uint64_t *first, uint64_t *last) {
  int rc = hc_seek(h, NULL, false);
  *any = rc == 0 && h->at >= 0;
  if (!*any) return rc;
  *last = hc_hseq(h);
  if ((rc = hc_seek(h, NULL, true))) return rc;
  if (h->at < 0) return MDB_CORRUPTED;
  *first = hc_hseq(h);
  return 0;
}

/* The same, with cursors of its own. */
static int span(jb_store *s, MDB_txn *txn, bool *any, uint64_t *first,
                uint64_t *last) {
  hcur h;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  rc = hc_span(&h, any, first, last);
  hc_close(&h);
  return rc;
}

/* ------------------------------------------------- histends' one page */

/* What a record takes of an LMDB leaf page (0.9): its node (an 8-byte
 * header, the key and the value, padded to even) and its 2-byte slot. */
static size_t node_cost(size_t klen, size_t vlen) {
  size_t n = 8 + klen + vlen;
  return n + (n & 1) + 2;
}

/* How much histends' records may take so that it stays one page: the
 * page less its 16-byte header and some slack. A record that takes more
 * than `big` is never put there (it would leave little room for the
 * others, and a value of half a page goes to overflow pages of its own);
 * a refill of the head stops at `refill`, leaving room for the newest
 * records that arrive while the head is used up. */
typedef struct {
  size_t room, big, refill;
} ends_budget;

static int get_budget(MDB_txn *txn, MDB_dbi ends, ends_budget *b) {
  MDB_stat st;
  int rc = mdb_stat(txn, ends, &st);
  if (rc) return rc;
  b->room = st.ms_psize - 16 - 32;
  b->big = b->room / 4;
  b->refill = b->room / 4 * 3;
  return 0;
}

/* What histends' records take (counted until it exceeds `stop`). */
static int ends_bytes(const hcur *h, size_t stop, size_t *bytes) {
  *bytes = 0;
  MDB_val k, v;
  int rc;
  for (rc = mdb_cursor_get(h->c[ENDS], &k, &v, MDB_FIRST);
       rc == 0 && *bytes <= stop;
       rc = mdb_cursor_get(h->c[ENDS], &k, &v, MDB_NEXT))
    *bytes += node_cost(k.mv_size, v.mv_size);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Move the records of side `from` whose keys are at or after `start` to
 * the other side, in key order, while they take at most `max` bytes
 * together and none takes more than `big`. Each is copied first: a
 * write to one table may spill the other's dirty pages out of memory in
 * a transaction of very many pages. */
static int move(hcur *h, int from, const uint8_t start[SKEY_LEN], size_t max,
                size_t big, unsigned flags, jb_buf *copy) {
  size_t moved = 0;
  int rc;
  for (;;) {
    MDB_val k = {SKEY_LEN, (void *)start}, v;
    rc = mdb_cursor_get(h->c[from], &k, &v, MDB_SET_RANGE);
    if (rc || !is_skey(&k)) break;
    size_t cost = node_cost(k.mv_size, v.mv_size);
    if (cost > big || cost > max - moved) break;
    copy->len = 0;
    if ((rc = jb__buf_append(copy, k.mv_data, k.mv_size)) ||
        (rc = jb__buf_append(copy, v.mv_data, v.mv_size)))
      break;
    MDB_val ck = {k.mv_size, copy->data};
    MDB_val cv = {v.mv_size, copy->data + k.mv_size};
    if ((rc = mdb_cursor_put(h->c[1 - from], &ck, &cv, flags)) ||
        (rc = mdb_cursor_del(h->c[from], 0)))
      break;
    moved += cost;
  }
  if (rc == MDB_KEYEXIST) rc = MDB_CORRUPTED; /* a key in both tables */
  return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The tail: every record of histends above history's last goes to
 * history's end (all of them when history is empty), so that what stays
 * in histends is the head, below history's first. */
static int move_tail(hcur *h, jb_buf *copy) {
  int rc = side_seek(h, MID, NULL, false);
  if (rc) return rc;
  uint8_t start[SKEY_LEN];
  skey(start, h->on[MID] ? side_hseq(h, MID) + 1 : 0);
  return move(h, ENDS, start, SIZE_MAX, SIZE_MAX, MDB_APPEND, copy);
}

/* The head is used up and history's first record is the oldest: the
 * tail goes to history's end and history's oldest records come to
 * histends, as many as fit under budget's refill (none that is big: a
 * record too big for histends is trimmed where it is). Each such move
 * dirties history's two edge paths once for a whole chunk of consumes. */
static int refill(hcur *h, const ends_budget *b, jb_buf *copy) {
  size_t have;
  int rc = move_tail(h, copy);
  if (rc == 0) rc = ends_bytes(h, b->refill, &have);
  if (rc || have >= b->refill) return rc;
  uint8_t start[SKEY_LEN];
  skey(start, 0);
  return move(h, MID, start, b->refill - have, b->big, MDB_NOOVERWRITE, copy);
}

/* ------------------------------------------------------------------ put */

/* Drop the oldest records the bounds call for, starting at `first` (`h`
 * on it, as hc_span leaves it), room kept for `adding` more (0 or 1);
 * the number dropped is added to *dropped. */
static int trim(hcur *h, const ends_budget *bu, uint64_t first, uint64_t last,
                const jb_hist_bounds *b, int64_t now_us, uint64_t adding,
                jb_buf *copy, size_t *dropped) {
  uint64_t count = last - first + 1;
  int64_t cutoff = now_us - b->max_age_us;
  int rc = 0;
  for (int i = 0; rc == 0 && i < HIST_TRIM && count > 0;
       i++, count--, first++) {
    if (i > 0 && (rc = hc_seek(h, NULL, true))) break;
    if (h->at < 0 || hc_hseq(h) != first) break; /* a gap (amend's) */
    const MDB_val *v = &h->v[h->at];
    jb_histrec rec;
    bool whole = v->mv_size >= sizeof rec;
    if (whole) memcpy(&rec, v->mv_data, sizeof rec);
    /* A record being added: keep max_count - 1. A record that does not
     * decode goes only when the count says so (its age is unknown). */
    bool over = count + adding > b->max_count;
    if (!over && !(whole && rec.completed_us < cutoff)) break;
    if (h->at == MID && ((rc = refill(h, bu, copy)) ||
                         (rc = hc_seek(h, NULL, true)) || h->at < 0))
      break;
    if ((rc = mdb_cursor_del(h->c[h->at], 0)) == 0) ++*dropped;
  }
  return rc;
}

int jb__history_prune(jb_store *s, MDB_txn *txn, const jb_hist_bounds *b,
                      int64_t now_us, size_t *pruned) {
  hcur h;
  ends_budget bu;
  jb_buf copy = {0};
  bool any = false;
  uint64_t first = 0, last = 0;
  size_t dropped = 0;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  if ((rc = get_budget(txn, s->histends, &bu)) == 0 &&
      (rc = hc_span(&h, &any, &first, &last)) == 0 && any)
    rc = trim(&h, &bu, first, last, b, now_us, 0, &copy, &dropped);
  hc_close(&h);
  jb__buf_free(&copy);
  if (pruned) *pruned = dropped;
  return rc;
}

/* Where a record taking `cost` goes: histends, or history when it is
 * big or the page has no room for it even after the tail went. */
static int place(hcur *h, const ends_budget *b, size_t cost, jb_buf *copy,
                 int *side) {
  size_t have = 0;
  int rc = cost > b->big ? 0 : ends_bytes(h, b->room, &have);
  *side = ENDS;
  if (rc || (cost <= b->big && have + cost <= b->room)) return rc;
  if ((rc = move_tail(h, copy))) return rc;
  if (cost <= b->big && (rc = ends_bytes(h, b->room, &have))) return rc;
  if (cost > b->big || have + cost > b->room) *side = MID;
  return 0;
}

int jb__history_put(jb_store *s, MDB_txn *txn, const jb_hist_entry *e,
                    const jb_hist_bounds *b, int64_t now_us) {
  /* The board's stored retention wins over the writer's bounds. */
  jb_hist_bounds hb;
  int rc = jb__retention_bounds(s, txn, b, &hb, NULL);
  if (rc) return rc;
  /* Format 2 (history.h): no result and no posting are length 0. */
  size_t result_len = e->result ? e->result_len : 0;
  size_t posting_len = e->posting ? e->posting_len : 0;
  size_t reason_len =
      e->reason_len > JB_HIST_REASON_MAX ? JB_HIST_REASON_MAX : e->reason_len;
  jb_histrec rec = e->rec;
  rec.format = JB_HISTREC_FORMAT;
  rec.owner_len = (uint16_t)e->owner_len;
  rec.name_len = (uint16_t)e->name_len;
  rec.reason_len = (uint16_t)reason_len;
  rec.result_len = (uint32_t)result_len;
  jb_histrec2 rec2 = {(uint32_t)posting_len, e->attempts};
  size_t len = sizeof rec + sizeof rec2 + e->owner_len + e->name_len +
               reason_len + result_len + posting_len;

  hcur h;
  ends_budget bu;
  jb_buf copy = {0};
  bool any = false;
  uint64_t first = 0, last = 0;
  int side = MID;
  size_t dropped = 0;
  if ((rc = hc_open(s, txn, &h))) return rc;
  if ((rc = get_budget(txn, s->histends, &bu)) == 0 &&
      (rc = hc_span(&h, &any, &first, &last)) == 0 && any)
    rc = trim(&h, &bu, first, last, &hb, now_us, 1, &copy, &dropped);
  if (rc == 0) rc = place(&h, &bu, node_cost(SKEY_LEN, len), &copy, &side);
  hc_close(&h);
  jb__buf_free(&copy);
  if (rc) return rc;

  uint64_t hseq = any ? last + 1 : 1;
  uint8_t key[SKEY_LEN];
  skey(key, hseq);
  MDB_val k = {sizeof key, key};
  MDB_val v = {len, NULL};
  if ((rc = mdb_put(txn, side == ENDS ? s->histends : s->history, &k, &v,
                    MDB_RESERVE)))
    return rc;
  uint8_t *d = v.mv_data;
  memcpy(d, &rec, sizeof rec);
  d += sizeof rec;
  memcpy(d, &rec2, sizeof rec2);
  d += sizeof rec2;
  if (e->owner_len) memcpy(d, e->owner, e->owner_len);
  d += e->owner_len;
  if (e->name_len) memcpy(d, e->name, e->name_len);
  d += e->name_len;
  if (reason_len) memcpy(d, e->reason, reason_len);
  d += reason_len;
  if (result_len) memcpy(d, e->result, result_len);
  d += result_len;
  if (posting_len) memcpy(d, e->posting, posting_len);
  /* The counter of records by ending (store/stats.c), in this write. */
  uint32_t add[JB_CTR_N] = {0};
  add[JB_CTR_END + (rec.end & 7u)] = 1;
  return jb__counters_add(s, txn, add);
}

/* A msgpack str header at p[0..len): its length and where it starts. */
static bool str_at(const uint8_t *p, size_t len, size_t *off, size_t *n) {
  if (*off >= len) return false;
  uint8_t t = p[*off];
  size_t hdr, sz;
  if ((t & 0xe0) == 0xa0) {
    hdr = 1;
    sz = t & 0x1f;
  } else if (t == 0xd9 && *off + 2 <= len) {
    hdr = 2;
    sz = p[*off + 1];
  } else if (t == 0xda && *off + 3 <= len) {
    hdr = 3;
    sz = (size_t)p[*off + 1] << 8 | p[*off + 2];
  } else {
    return false; /* names are at most JB_NAME_MAX bytes: no str32 */
  }
  if (*off + hdr + sz > len) return false;
  *off += hdr;
  *n = sz;
  return true;
}

bool jb__history_posting_name(const void *posting, size_t len,
                              const char **name, size_t *name_len) {
  const uint8_t *p = posting;
  size_t off = 0, n;
  if (len < 1) return false;
  if ((p[0] & 0xf0) == 0x80)
    off = 1;
  else if (p[0] == 0xde)
    off = 3;
  else
    return false;
  /* "uuid": <str>, "name": <str> */
  if (!str_at(p, len, &off, &n) || n != 4 || memcmp(p + off, "uuid", 4) != 0)
    return false;
  off += n;
  if (!str_at(p, len, &off, &n)) return false;
  off += n;
  if (!str_at(p, len, &off, &n) || n != 4 || memcmp(p + off, "name", 4) != 0)
    return false;
  off += n;
  if (!str_at(p, len, &off, &n) || n > JB_NAME_MAX) return false;
  *name = (const char *)p + off;
  *name_len = n;
  return true;
}

/* ---------------------------------------------------------------- reads */

/* The size of a record's fixed part: 0 for an unknown format. */
static size_t fixed_size(uint8_t format) {
  return format == 1   ? sizeof(jb_histrec)
         : format == 2 ? sizeof(jb_histrec) + sizeof(jb_histrec2)
                       : 0;
}

int jb__histrec_check(const void *val, size_t len, jb_histrec *rec, char *why,
                      size_t whylen) {
  if (len < sizeof *rec) {
    snprintf(why, whylen, "record of %zu bytes is shorter than its header",
             len);
    return JB_ECORRUPT;
  }
  memcpy(rec, val, sizeof *rec);
  size_t fixed = fixed_size(rec->format);
  jb_histrec2 rec2 = {0};
  if (rec->format == 2 && len >= fixed)
    memcpy(&rec2, (const uint8_t *)val + sizeof *rec, sizeof rec2);
  size_t want = fixed + (size_t)rec->owner_len + rec->name_len +
                rec->reason_len + rec->result_len + rec2.posting_len;
  const char *bad = NULL;
  if (fixed == 0)
    bad = "unknown record format";
  else if (rec->end < JB_END_CONSUMED || jb_end_name((jb_end)rec->end) == NULL)
    bad = "unknown ending";
  else if (rec->priority > JB_PRIORITY_VERY_HIGH &&
           rec->priority != JB_HIST_PRIORITY_UNKNOWN)
    bad = "unknown priority";
  else if (len < fixed || len != want)
    bad = "its lengths do not add up";
  else if (rec->owner_len > JB_WHO_MAX || rec->name_len > JB_NAME_MAX)
    bad = "owner or name too long";
  if (bad) {
    snprintf(why, whylen, "%s", bad);
    return JB_ECORRUPT;
  }
  const char *p = (const char *)val + fixed;
  if (!jb__utf8_valid(p, rec->owner_len) ||
      !jb__utf8_valid(p + rec->owner_len, rec->name_len)) {
    snprintf(why, whylen, "owner or name is not UTF-8");
    return JB_ECORRUPT;
  }
  const char *result = p + rec->owner_len + rec->name_len + rec->reason_len;
  /* Format 1 always holds a map; format 2 may hold none. */
  int rc = rec->result_len == 0
               ? (rec->format == 1 ? jb__err(JB_EINVAL, "result: empty")
                                   : JB_OK)
               : jb__details_check(result, rec->result_len,
                                   JB_MP_MAX_DEPTH, "result");
  const char *posting = result + rec->result_len;
  if (rc == JB_OK && rec2.posting_len)
    rc = jb__details_check(posting, rec2.posting_len, JB_MP_MAX_DEPTH,
                           "posting");
  if (rc == JB_ENOMEM) return rc;
  if (rc != JB_OK) {
    snprintf(why, whylen, "%s", jb_errmsg());
    return JB_ECORRUPT;
  }
  /* The name field repeats the posting's (history.h). */
  const char *pname;
  size_t pname_len;
  if (rec2.posting_len &&
      (!jb__history_posting_name(posting, rec2.posting_len, &pname,
                                 &pname_len) ||
       pname_len != rec->name_len ||
       memcmp(pname, p + rec->owner_len, pname_len) != 0)) {
    snprintf(why, whylen, "its name is not its posting's");
    return JB_ECORRUPT;
  }
  return JB_OK;
}

int jb__histrec_decode(const void *val, size_t len, jb_hist_entry *e,
                       char *why, size_t whylen) {
  memset(e, 0, sizeof *e);
  int rc = jb__histrec_check(val, len, &e->rec, why, whylen);
  if (rc != JB_OK) return rc;
  const char *p = (const char *)val + sizeof e->rec;
  jb_histrec2 rec2 = {0};
  if (e->rec.format == 2) {
    memcpy(&rec2, p, sizeof rec2);
    p += sizeof rec2;
  }
  e->owner = p;
  e->owner_len = e->rec.owner_len;
  e->name = p += e->owner_len;
  e->name_len = e->rec.name_len;
  e->reason = p += e->name_len;
  e->reason_len = e->rec.reason_len;
  p += e->reason_len;
  e->result = e->rec.result_len ? p : NULL;
  e->result_len = e->rec.result_len;
  p += e->result_len;
  e->posting = rec2.posting_len ? p : NULL;
  e->posting_len = rec2.posting_len;
  e->attempts = rec2.attempts;
  return JB_OK;
}

int jb__histrec_posting(jb_job *job, const void *posting, size_t len,
                        const uint8_t uuid[16], char *why, size_t whylen) {
  char text[JB_UUID_STRLEN];
  int rc = jb__posting_decode(job, posting, len, why, whylen);
  if (rc != JB_OK) return rc;
  jb__uuid_format(text, uuid);
  if (strcasecmp(job->uuid, text) != 0) {
    snprintf(why, whylen, "its posting names job %s", job->uuid);
    return JB_ECORRUPT;
  }
  return JB_OK;
}

typedef struct {
  const uint8_t *uuid;
  jb_buf *bytes;
  jb_hist_item *item;
  int *found;
  /* scan */
  const jb_hist_filter *filter;
  bool oldest_first, from_end;
  uint64_t after, seen;
  jb_hist_item *items;
  size_t max, budget, n;
  size_t *count;
} hist_ctx;

static int copy_item(jb_buf *bytes, jb_hist_item *it, uint64_t hseq,
                     const MDB_val *v) {
  it->hseq = hseq;
  it->off = bytes->len;
  it->len = v->mv_size;
  int rc = jb__buf_append(bytes, v->mv_data, v->mv_size);
  return rc == JB_OK ? 0 : rc;
}

/* The newest record of `uuid`: newest first through the records, since
 * the history has no index by uuid (history.h). *hseq 0 when none; else
 * *val is its value and *dbi the table that holds it. */
static int newest_of(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                     uint64_t *hseq, MDB_val *val, MDB_dbi *dbi) {
  *hseq = 0;
  hcur h;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  for (rc = hc_seek(&h, NULL, false); rc == 0 && h.at >= 0;
       rc = hc_step(&h)) {
    const MDB_val *v = &h.v[h.at];
    if (v->mv_size >= sizeof(jb_histrec) &&
        memcmp((const uint8_t *)v->mv_data + offsetof(jb_histrec, uuid), uuid,
               16) == 0) {
      *hseq = hc_hseq(&h);
      *val = *v;
      if (dbi) *dbi = h.at == MID ? s->history : s->histends;
      break;
    }
  }
  hc_close(&h);
  return rc;
}

int jb__history_has(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    bool *found) {
  uint64_t hseq;
  MDB_val v;
  int rc = newest_of(s, txn, uuid, &hseq, &v, NULL);
  *found = rc == 0 && hseq != 0;
  return rc;
}

static int cmp_uuid(const void *a, const void *b) { return memcmp(a, b, 16); }

int jb__history_set_has(jb_store *s, MDB_txn *txn, jb_hist_set *set,
                        const uint8_t uuid[16], bool *found) {
  *found = false;
  if (!set->built) {
    set->n = 0;
    hcur h;
    int rc = hc_open(s, txn, &h);
    if (rc) return rc;
    for (rc = hc_seek(&h, NULL, true); rc == 0 && h.at >= 0;
         rc = hc_step(&h)) {
      const MDB_val v = h.v[h.at];
      if (v.mv_size < sizeof(jb_histrec)) continue; /* check reports it */
      jb_histrec rec;
      memcpy(&rec, v.mv_data, sizeof rec);
      if (rec.end == JB_END_LOST || rec.completed_us < set->since_us)
        continue;
      if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 256;
        void *u = realloc(set->u, cap * sizeof *set->u);
        if (u == NULL) {
          rc = jb__err(JB_ENOMEM, "out of memory reading the history");
          break;
        }
        set->u = u;
        set->cap = cap;
      }
      memcpy(set->u[set->n++],
             (const uint8_t *)v.mv_data + offsetof(jb_histrec, uuid), 16);
    }
    hc_close(&h);
    if (rc) return rc;
    if (set->n) qsort(set->u, set->n, sizeof *set->u, cmp_uuid);
    set->built = true;
  }
  *found = set->n && bsearch(uuid, set->u, set->n, sizeof *set->u,
                             cmp_uuid) != NULL;
  return 0;
}

void jb__history_set_free(jb_hist_set *set) {
  free(set->u);
  *set = (jb_hist_set){0};
}

static int find_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  hist_ctx *ctx = vctx;
  (void)status;
  ctx->bytes->len = 0;
  /* On the board: no record to look for (completing a job takes it off
   * the board and adds its record in one commit). */
  MDB_val k = {16, (void *)ctx->uuid}, v;
  int rc = mdb_get(txn, s->jobs, &k, &v);
  if (rc == 0) {
    *ctx->found = JB_HIST_ON_BOARD;
    return 0;
  }
  if (rc != MDB_NOTFOUND) return rc;
  uint64_t hseq;
  if ((rc = newest_of(s, txn, ctx->uuid, &hseq, &v, NULL))) return rc;
  *ctx->found = hseq ? JB_HIST_FOUND : JB_HIST_UNKNOWN;
  return hseq ? copy_item(ctx->bytes, ctx->item, hseq, &v) : 0;
}

int jb__history_find(jb_store *s, const uint8_t uuid[16], jb_buf *bytes,
                     jb_hist_item *item, int *found) {
  hist_ctx ctx = {.uuid = uuid, .bytes = bytes, .item = item, .found = found};
  return jb__store_read(s, find_body, &ctx);
}

/* Does record value `v` pass `f`? Only its fixed part and name are read
 * (no decoding); one that cannot be read passes (jb_hist_filter). */
static bool selected(const MDB_val *v, const jb_hist_filter *f) {
  jb_histrec rec;
  if (f == NULL) return true;
  if (v->mv_size < sizeof rec) return true;
  memcpy(&rec, v->mv_data, sizeof rec);
  size_t name_at = fixed_size(rec.format) + rec.owner_len;
  if (name_at == rec.owner_len || name_at + rec.name_len > v->mv_size)
    return true;
  const char *name = (const char *)v->mv_data + name_at;
  if (f->ends && (rec.end >= 32 || !(f->ends & (UINT32_C(1) << rec.end))))
    return false;
  if (rec.completed_us < f->since_us || rec.completed_us >= f->until_us)
    return false;
  /* A revoked job whose name could not be read has none to match. */
  bool named = rec.name_len || rec.end != JB_END_REVOKED;
  if (f->name && (!named || rec.name_len != f->name_len ||
                  memcmp(name, f->name, f->name_len) != 0))
    return false;
  if (f->prefix && (!named || rec.name_len < f->prefix_len ||
                    memcmp(name, f->prefix, f->prefix_len) != 0))
    return false;
  return true;
}

static int scan_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  hist_ctx *ctx = vctx;
  (void)status;
  ctx->n = 0;
  ctx->seen = 0;
  ctx->bytes->len = 0;
  hcur h;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  /* From the oldest or the newest, else the first key past `after`
   * (oldest first) or the last before it. */
  uint8_t key[SKEY_LEN];
  MDB_val at = {sizeof key, key};
  skey(key, ctx->oldest_first ? ctx->after + 1 : ctx->after);
  size_t looked = 0;
  for (rc = hc_seek(&h, ctx->from_end ? NULL : &at, ctx->oldest_first);
       rc == 0 && h.at >= 0 && ctx->n < ctx->max &&
       (ctx->n == 0 || ctx->bytes->len < ctx->budget) &&
       looked < JB_HIST_EXAMINE;
       rc = hc_step(&h), looked++) {
    ctx->seen = hc_hseq(&h);
    if (!selected(&h.v[h.at], ctx->filter)) continue;
    rc = copy_item(ctx->bytes, &ctx->items[ctx->n], ctx->seen, &h.v[h.at]);
    if (rc) break;
    ctx->n++;
  }
  hc_close(&h);
  return rc;
}

int jb__history_scan(jb_store *s, const jb_hist_filter *f, bool oldest_first,
                     bool from_end, uint64_t after, jb_hist_item *items,
                     size_t max, size_t budget, jb_buf *bytes, size_t *n_out,
                     uint64_t *seen_out) {
  hist_ctx ctx = {.bytes = bytes, .filter = f, .oldest_first = oldest_first,
                  .from_end = from_end, .after = after, .items = items,
                  .max = max, .budget = budget};
  int rc = jb__store_read(s, scan_body, &ctx);
  *n_out = rc == JB_OK ? ctx.n : 0;
  *seen_out = rc == JB_OK ? ctx.seen : 0;
  return rc;
}

static int count_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  hist_ctx *ctx = vctx;
  (void)status;
  bool any;
  uint64_t first = 0, last = 0;
  int rc = span(s, txn, &any, &first, &last);
  *ctx->count = any ? (size_t)(last - first + 1) : 0;
  return rc;
}

int jb__history_count(jb_store *s, size_t *out) {
  hist_ctx ctx = {.count = out};
  return jb__store_read(s, count_body, &ctx);
}

/* ---------------------------------------------------------------- check */

int jb__history_walk(jb_store *s, MDB_txn *txn, jb_hist_visit visit,
                     void *arg) {
  hcur h;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  MDB_val k, v;
  char why[300];
  jb_job job; /* a record's posting, decoded as readers decode it */
  memset(&job, 0, sizeof job);
  for (int t = MID; rc == 0 && t <= ENDS; t++) {
    for (rc = mdb_cursor_get(h.c[t], &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(h.c[t], &k, &v, MDB_NEXT)) {
      const uint8_t *kd = k.mv_data;
      if (is_skey(&k)) {
        jb_hist_entry e;
        int r = jb__histrec_decode(v.mv_data, v.mv_size, &e, why, sizeof why);
        if (r == JB_OK && e.posting)
          r = jb__histrec_posting(&job, e.posting, e.posting_len, e.rec.uuid,
                                  why, sizeof why);
        if (r == JB_ENOMEM) {
          rc = r;
          break;
        }
        visit(jb__be64(kd + 1), r == JB_OK ? e.rec.uuid : NULL,
              r == JB_OK ? NULL : why, false, arg);
        continue;
      }
      /* Schema 4's 'u' entries went at the upgrade (history.h). */
      snprintf(why, sizeof why, "%s: a key of %zu bytes is not a record's",
               t == MID ? JB_DB_HISTORY : JB_DB_HISTENDS, k.mv_size);
      visit(0, NULL, why, false, arg);
    }
    if (rc == MDB_NOTFOUND) rc = 0;
  }
  /* `histends` holds the two ends: none of its records may lie inside
   * the span of `history` (a move of the tail would leave it there). */
  bool mid_any = false;
  uint64_t mid_first = 0, mid_last = 0;
  if (rc == 0 && (rc = hc_seek(&h, NULL, false)) == 0 && h.on[MID]) {
    mid_last = side_hseq(&h, MID);
    if ((rc = hc_seek(&h, NULL, true)) == 0 && h.on[MID]) {
      mid_first = side_hseq(&h, MID);
      mid_any = true;
    }
  }
  /* No record may be in both tables (readers would show it twice). */
  uint64_t prev = 0;
  for (rc = rc ? rc : hc_seek(&h, NULL, true); rc == 0 && h.at >= 0;
       rc = hc_step(&h)) {
    uint64_t hseq = hc_hseq(&h);
    if (hseq == prev && prev != 0) {
      snprintf(why, sizeof why, "record %llu is in both %s and %s",
               (unsigned long long)hseq, JB_DB_HISTORY, JB_DB_HISTENDS);
      visit(0, NULL, why, false, arg);
    } else if (h.at == ENDS && mid_any && hseq > mid_first &&
               hseq < mid_last) {
      snprintf(why, sizeof why, "record %llu of %s lies inside %s's "
               "records %llu..%llu", (unsigned long long)hseq,
               JB_DB_HISTENDS, JB_DB_HISTORY,
               (unsigned long long)mid_first, (unsigned long long)mid_last);
      visit(0, NULL, why, false, arg);
    }
    prev = hseq;
  }
  hc_close(&h);
  jb__job_clear(&job);
  return rc;
}

/* ----------------------------------------------------------------- load */

int jb__history_load(jb_completion *c, jb_buf *mem, uint64_t hseq,
                     const void *val, size_t len) {
  jb_hist_entry e;
  char why[300];
  int rc = jb__histrec_decode(val, len, &e, why, sizeof why);
  if (rc == JB_ECORRUPT)
    return jb__err(rc, "history record %llu: %s (run 'jobboard check')",
                   (unsigned long long)hseq, why);
  if (rc != JB_OK) return rc;
  /* owner, name and reason NUL-terminated, then the result (the empty
   * map when none was given), then the posting. */
  static const uint8_t empty_map = 0x80;
  const void *result = e.result ? e.result : &empty_map;
  size_t result_len = e.result ? e.result_len : 1;
  mem->len = 0;
  rc = jb__buf_reserve(mem, e.owner_len + e.name_len + e.reason_len + 3 +
                                result_len + e.posting_len);
  if (rc != JB_OK) return rc;
  size_t at[3];
  const char *const strs[3] = {e.owner, e.name, e.reason};
  const size_t lens[3] = {e.owner_len, e.name_len, e.reason_len};
  for (int i = 0; i < 3; i++) {
    at[i] = mem->len;
    jb__buf_append(mem, strs[i], lens[i]);
    jb__buf_append(mem, "", 1);
  }
  size_t result_at = mem->len;
  jb__buf_append(mem, result, result_len);
  size_t posting_at = mem->len;
  jb__buf_append(mem, e.posting, e.posting_len);
  const char *m = (const char *)mem->data;
  const jb_histrec *rec = &e.rec;
  memset(c, 0, sizeof *c);
  jb__uuid_format(c->uuid, rec->uuid);
  c->end = (jb_end)rec->end;
  c->priority = rec->priority == JB_HIST_PRIORITY_UNKNOWN
                    ? (jb_priority)-1
                    : (jb_priority)rec->priority;
  c->sequence = rec->job_seq;
  /* A revoked job may have had no owner, and its name may be unknown. */
  c->owner = rec->owner_len ? m + at[0] : NULL;
  c->name = rec->name_len || rec->end != JB_END_REVOKED ? m + at[1] : NULL;
  /* Revoked and lost jobs always have one; others the reason of their
   * last failed attempt, if any was given (schema 8). */
  c->reason = rec->reason_len || rec->end == JB_END_REVOKED ||
                      rec->end == JB_END_LOST
                  ? m + at[2]
                  : NULL;
  c->posted_us = rec->posted_us;
  c->claimed_us = rec->claimed_us;
  c->completed_us = rec->completed_us;
  c->result = mem->data + result_at;
  c->result_len = result_len;
  c->history_seq = hseq;
  /* Format 2's; the caller decodes the posting (core/history.c). */
  c->attempts = e.attempts;
  c->snoozes = rec->snoozes;
  c->has_result = e.result != NULL || rec->format == 1;
  c->posting = e.posting ? mem->data + posting_at : NULL;
  c->posting_len = e.posting_len;
  return JB_OK;
}

/* ---------------------------------------------------------------- amend */

typedef struct {
  const uint8_t *uuid;
  const jb_store_done *done;
  const char *who;
  size_t who_len;
  int64_t now_us;
} amend_ctx;

static int amend_body(jb_store *s, MDB_txn *txn, void *vctx, int *status) {
  amend_ctx *a = vctx;
  uint64_t hseq;
  MDB_val rv;
  MDB_dbi dbi;
  int rc = newest_of(s, txn, a->uuid, &hseq, &rv, &dbi);
  if (rc) return rc;
  if (hseq == 0) {
    *status = JB_ENOTFOUND;
    return 0;
  }
  uint8_t sk[SKEY_LEN];
  skey(sk, hseq);
  MDB_val rk = {sizeof sk, sk};
  jb_hist_entry old;
  char why[128];
  rc = jb__histrec_decode(rv.mv_data, rv.mv_size, &old, why, sizeof why);
  if (rc == JB_ECORRUPT) {
    *status = JB_ECORRUPT;
    return 0;
  }
  if (rc != JB_OK) return rc;
  /* The name, the reason and the posting are copied out before the pages
   * change. The caller's reason replaces the record's: the replicator's
   * plain ending knew none (a dead letter decided through Redis has one). */
  char name[JB_NAME_MAX + 1], reason[JB_HIST_REASON_MAX];
  memcpy(name, old.name, old.name_len);
  size_t reason_len = old.reason_len;
  const char *why_src = old.reason;
  if (a->done->reason) {
    why_src = a->done->reason;
    reason_len = a->done->reason_len;
  }
  if (reason_len > sizeof reason) reason_len = sizeof reason;
  if (reason_len) memcpy(reason, why_src, reason_len);
  jb_buf posting = {0};
  if ((rc = jb__buf_append(&posting, old.posting, old.posting_len)) ||
      (rc = mdb_del(txn, dbi, &rk, NULL))) {
    jb__buf_free(&posting);
    return rc;
  }
  jb_hist_entry e = {.rec = old.rec,
                     .owner = a->who,
                     .owner_len = a->who_len,
                     .name = name,
                     .name_len = old.name_len,
                     .reason = reason,
                     .reason_len = reason_len,
                     .result = a->done->result,
                     .result_len = a->done->result_len,
                     .posting = posting.data,
                     .posting_len = posting.len,
                     .attempts = old.attempts};
  e.rec.end = (uint8_t)a->done->end;
  rc = jb__history_put(s, txn, &e, a->done->bounds, a->now_us);
  jb__buf_free(&posting);
  return rc;
}

int jb__store_amend_completion(jb_store *s, const uint8_t uuid[16],
                               const jb_store_done *done, const char *who,
                               size_t who_len, int64_t now_us) {
  amend_ctx a = {uuid, done, who, who_len, now_us};
  return jb__store_write(s, amend_body, &a);
}

/* ---------------------------------------------------------------- stats */

int jb__history_recent(jb_store *s, MDB_txn *txn, int64_t now_us,
                       const int64_t *windows_us, size_t n_windows,
                       uint64_t (*by_end)[8], size_t *records) {
  hcur h;
  int rc = hc_open(s, txn, &h);
  if (rc) return rc;
  int64_t widest = 0;
  for (size_t i = 0; i < n_windows; i++)
    if (windows_us[i] > widest) widest = windows_us[i];
  size_t n = 0;
  bool any = false;
  uint64_t first = 0, last = 0;
  if ((rc = hc_span(&h, &any, &first, &last)) == 0 && any)
    n = (size_t)(last - first + 1);
  /* Newest first, until a record completed before the widest window (the
   * records are in completion order; a clock stepped back may put a few
   * out of it, and they count where their time says). */
  for (rc = rc ? rc : hc_seek(&h, NULL, false); rc == 0 && h.at >= 0;
       rc = hc_step(&h)) {
    const MDB_val *v = &h.v[h.at];
    jb_histrec rec;
    if (v->mv_size < sizeof rec) continue;
    memcpy(&rec, v->mv_data, sizeof rec);
    int64_t age = now_us - rec.completed_us;
    if (age > widest) break;
    for (size_t i = 0; i < n_windows; i++)
      if (age <= windows_us[i]) by_end[i][rec.end & 7u]++;
  }
  hc_close(&h);
  if (records) *records = n;
  return rc;
}
