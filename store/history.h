/*
 * history.h - the completion history (schema 3): one record per job that
 * reached COMPLETE, written in the write transaction that completed it
 * (consume, trash, or check's quarantine).
 *
 * Two tables (schema 6), one kind of key:
 *
 *   's' + hseq (u64 big-endian)  -> a record (below)
 *
 *   histends  the oldest records (the head) and the newest (the tail),
 *             at most one page together;
 *   history   the records between them.
 *
 * No key is in both, and every key of `histends` is below `history`'s
 * first or above its last. A reader merges the two by key (a cursor on
 * each) and sees the records in completion order. hseq is one more than the newest record's, so records
 * are contiguous from the oldest kept to the newest and their count is
 * the difference of the two ends (no counter). Trimming removes the
 * oldest only, before a new record goes in, so hseq never repeats.
 *
 * Why two tables: LMDB copies every page on the path from a table's root
 * to each leaf a commit changes, and with 10,000 records `history` is
 * three levels deep; a consume that appended there and trimmed its front
 * dirtied about six pages of it. Now it dirties histends' one page: the
 * new record goes to the tail and the oldest leaves the head. Only when
 * the page has no room for the new record does the tail move to the end
 * of `history` first; only when the head is used up and a record must go
 * does the tail move there and a chunk of `history`'s oldest records
 * (three quarters of a page) come to the head. `history` is written once
 * per chunk, both its edges in one commit (DESIGN-NOTES, "Pages per
 * commit"). A record that would take more than a quarter of the page (a
 * large result) goes to `history`, after the tail, and is trimmed from
 * there. One table for both ends rather than a head and a tail table: a
 * consume dirties one page instead of two, and the bounds are counted as
 * before, over both tables.
 *
 * No index by uuid (schema 5; schemas 3 and 4 kept 'u' + uuid -> hseq,
 * deleted at the upgrade): that entry sat at a random place in the tree,
 * and adding one and dropping the trimmed record's cost a consume about
 * three of its pages (DESIGN-NOTES, "Pages per commit"). A lookup by uuid
 * reads the records newest first, so a job that completed recently is
 * found after a few; one that is not in the history reads them all (a
 * job still on the board is answered from `jobs` first). The mirror asks
 * for many uuids in one transaction: jb__history_set_has reads the
 * records once for all of them.
 *
 * A record is written with the board's retention (store/retain.c: the
 * stored setting, else the bounds of the handle whose write adds it,
 * else the defaults): at most HIST_TRIM of the oldest records are dropped
 * per record added, those beyond the count bound or older than the age
 * bound.
 *
 * Record formats (jb_histrec.format), host byte order like every record:
 *
 *   1  jb_histrec, owner, name, reason, result. The result is one msgpack
 *      map, 0x80 (the empty map) when the owner gave none: "no result"
 *      and "{}" cannot be told apart. Written before format 2; still read
 *      (boards keep them until the bounds trim them).
 *   2  jb_histrec, jb_histrec2, owner, name, reason, result, posting.
 *      result_len 0: no result given (an explicit {} is the 1-byte map);
 *      otherwise one msgpack map. The posting is the job's posting bytes
 *      as the board held them (posting.h: taskflow's layout, with name,
 *      details and book), posting_len 0 when none is kept (a revoked job:
 *      its posting did not decode and is kept in quarantine instead);
 *      when kept, the name field repeats the posting's name (filters read
 *      it without decoding the posting). attempts: how many claims the
 *      job had (0: not counted).
 *
 * A posting may be as large as the board's max_posting: such a record is
 * big and goes to `history` as a large result does (above).
 */
#ifndef JOBBOARD_STORE_HISTORY_H
#define JOBBOARD_STORE_HISTORY_H

#include "txn.h"

typedef struct {
  uint8_t format;    /* 1 or 2 (above) */
  uint8_t end;       /* jb_end */
  uint8_t priority;  /* jb_priority; 0xff when unknown */
  uint8_t pad;
  uint16_t owner_len;
  uint16_t name_len;
  uint16_t reason_len;
  uint16_t snoozes;  /* the job's snoozes, up to 65535 (schema 11; 0
                        before) */
  uint32_t result_len;
  uint8_t uuid[16];
  uint64_t job_seq;  /* 0 when unknown */
  int64_t posted_us; /* 0 when unknown */
  int64_t claimed_us;
  int64_t completed_us;
} jb_histrec; /* format 1: then owner, name, reason, result */

/* Format 2's second fixed part, right after jb_histrec; then owner, name,
 * reason, result, posting. */
typedef struct {
  uint32_t posting_len; /* 0: no posting kept */
  uint32_t attempts;    /* claims the job had; 0: not counted */
} jb_histrec2;

/* The newest format, the one jb__history_put writes. */
#define JB_HISTREC_FORMAT 2

#define JB_HIST_PRIORITY_UNKNOWN 0xff
/* The longest reason kept (check's messages are shorter). */
#define JB_HIST_REASON_MAX 1024

/* What the writer adds: the record's fixed part and its strings (none of
 * them may point into pages the transaction has changed or will change:
 * copy them first). `result` NULL or empty means no result was given
 * (format 2 tells it from an explicit empty map); `posting` NULL or empty
 * means none is kept. jb__histrec_decode fills one from a record. */
typedef struct {
  jb_histrec rec; /* format and lengths are filled in by jb__history_put */
  const char *owner;
  size_t owner_len;
  const char *name;
  size_t name_len;
  const char *reason;
  size_t reason_len;
  const void *result;
  size_t result_len;
  const void *posting; /* the job's posting bytes (posting.h) */
  size_t posting_len;
  uint32_t attempts;   /* claims the job had; 0: not counted */
} jb_hist_entry;

/* Trim the oldest records the bounds call for (at most HIST_TRIM of them,
 * measured against `now_us`) and add `e`, inside `txn`. */
int jb__history_put(jb_store *s, MDB_txn *txn, const jb_hist_entry *e,
                    const jb_hist_bounds *b, int64_t now_us);

/* Drop the oldest records bounds `b` call for (at most HIST_TRIM),
 * without adding one: the retention setting's own write. *pruned: how
 * many went (may be NULL). */
int jb__history_prune(jb_store *s, MDB_txn *txn, const jb_hist_bounds *b,
                      int64_t now_us, size_t *pruned);

/* Does the history hold a record of `uuid`, inside `txn`? 0 with *found
 * set, or an LMDB code. Reads the records newest first (both tables). */
int jb__history_has(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    bool *found);

/* The same for many uuids in one transaction, counting only the records
 * of jobs that ended (not JB_END_LOST) at or after `since_us`: the first
 * call reads the uuids of those records into `set` (zeroed first, then
 * since_us set; built false), later ones search it. Only while `txn` adds
 * no record; free with jb__history_set_free. */
typedef struct {
  uint8_t (*u)[16];
  size_t n, cap;
  bool built;
  int64_t since_us;
} jb_hist_set;
int jb__history_set_has(jb_store *s, MDB_txn *txn, jb_hist_set *set,
                        const uint8_t uuid[16], bool *found);
void jb__history_set_free(jb_hist_set *set);

/* The job's name from a posting in the taskflow layout (posting.h: uuid
 * first, then name), without decoding the rest: *name points into
 * `posting`. false when the posting does not start that way. */
bool jb__history_posting_name(const void *posting, size_t len,
                              const char **name, size_t *name_len);

/* Check one record's value (either format): JB_OK and its fixed part in
 * *rec, or JB_ECORRUPT with the reason in why[0..whylen), or JB_ENOMEM. */
int jb__histrec_check(const void *val, size_t len, jb_histrec *rec, char *why,
                      size_t whylen);

/* jb__histrec_check, then the record's parts into `e` (pointing into
 * `val`): a format 1 record's result is its map (never "none"), and it
 * has no posting and no attempts. */
int jb__histrec_decode(const void *val, size_t len, jb_hist_entry *e,
                       char *why, size_t whylen);

/* Decode a record's posting into `job` (whose buffers it reuses; clear it
 * with jb__job_clear) and check that it names `uuid`: JB_OK, JB_ECORRUPT
 * with the reason in why[0..whylen), or JB_ENOMEM. For check's walk and
 * the readers (core/history.c), so that both refuse the same records. */
int jb__histrec_posting(jb_job *job, const void *posting, size_t len,
                        const uint8_t uuid[16], char *why, size_t whylen);

/* check.c: walk the history (`history`, then `histends`) inside `txn`.
 * For each record, `visit` gets its hseq and NULL `why` when it decodes,
 * else the reason (hseq 0: a key that is not a record's, or a record that
 * is in both tables). `dangling` is never set since schema 5 (no uuid
 * entries). */
typedef void (*jb_hist_visit)(uint64_t hseq, const uint8_t *uuid,
                              const char *why, bool dangling, void *arg);
int jb__history_walk(jb_store *s, MDB_txn *txn, jb_hist_visit visit,
                     void *arg);

/* jb_stats_read (store/stats.c): the records that completed within
 * each of `n_windows` spans before `now_us`, by ending (by_end[i][end],
 * added to), newest first until one is older than the widest span; and
 * how many records the history holds (*records, may be NULL). */
int jb__history_recent(jb_store *s, MDB_txn *txn, int64_t now_us,
                       const int64_t *windows_us, size_t n_windows,
                       uint64_t (*by_end)[8], size_t *records);

#endif
