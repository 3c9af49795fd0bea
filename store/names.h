/*
 * names.h - job names as queues (schema 10). Inside store/ only.
 *
 * A job's *lane* is a 32-bit hash of its name (FNV-1a), kept in its header
 * (jb_jobhdr.lane). Two tables follow the names:
 *
 *  - `byname`: key lane (u32 BE) + jobkey, value the job's uuid: exactly
 *    the jobs in `ready`, so the ready jobs of one name are a key range in
 *    listing order. Every put into or delete from `ready` goes through
 *    jb__ready_add / jb__ready_remove, which keep both.
 *  - `queues`: key lane (u32 BE), value one or more entries (two names may
 *    share a lane), each a jb_queuerec (and, format 2, a jb_queuerate)
 *    followed by the name's bytes: every name ever posted, and its
 *    controls (paused, cap, rate limit). A post reads it; only a name's
 *    first post writes it.
 *
 * A claim by names seeks each chosen lane's first `byname` key and takes
 * the lowest jobkey among them: O(lanes x log n) per claim, whatever the
 * board holds. A lane shared by two names is the rare case where a
 * candidate's own name is compared.
 *
 * The meta record "queuectl" (u32) says whether any control is in force:
 * bit 31 the whole board paused, the low bits the number of names with a
 * control. Absent or 0, claim-next walks `ready` as before and reads
 * nothing else.
 */
#ifndef JOBBOARD_STORE_NAMES_H
#define JOBBOARD_STORE_NAMES_H

#include "txn.h"

#define JB_BYNAME_KEY_LEN (4 + JB_JOBKEY_LEN)
#define JB_QUEUECTL_KEY "queuectl"
#define JB_QUEUECTL_BOARD 0x80000000u

enum {
  JB_QUEUE_F_PAUSED = 1u << 0,
  /* At most `cap` of its jobs claimed at once; `held` counts its claims
   * (kept by every write of `claims`: jb__queue_held). */
  JB_QUEUE_F_CAPPED = 1u << 1,
  /* With CAPPED: the cap is its prefix's (meta "capeach"), not its own. */
  JB_QUEUE_F_CAP_EACH = 1u << 7,
  /* At most `rate` claims per `period_ms`: a GCRA bucket (jb__rate_*). */
  JB_QUEUE_F_RATED = 1u << 2,
  /* With RATED: the limit is its prefix's (meta "rateeach"), not its own. */
  JB_QUEUE_F_RATE_EACH = 1u << 6,
};
/* Every flag a record may hold (check reports others). */
#define JB_QUEUE_F_ALL \
  (JB_QUEUE_F_PAUSED | JB_QUEUE_F_CAPPED | JB_QUEUE_F_RATED | \
   JB_QUEUE_F_CAP_EACH | JB_QUEUE_F_RATE_EACH)
#define JB_CAPEACH_KEY "capeach"
#define JB_CAPEACH_MAX 256
/* The prefixes whose names are each rate-limited on their own: entries
 * of a u32 count, a u64 period_ms, a u16 length and the prefix. */
#define JB_RATEEACH_KEY "rateeach"
#define JB_RATEEACH_MAX 256

/* An entry on disk: format 1 is the header and the name; format 2 (a name
 * with a rate limit: written only then, so that a board whose names have
 * none keeps the records every release reads) puts a jb_queuerate between
 * them. */
typedef struct {
  uint8_t format; /* 1, or 2: a jb_queuerate follows */
  uint8_t flags;  /* JB_QUEUE_F_* */
  uint16_t name_len;
  uint32_t cap;  /* JB_QUEUE_F_CAPPED: the most claims at once */
  uint32_t held; /* JB_QUEUE_F_CAPPED: its claims now */
  uint32_t rate; /* format 2: claims per period (format 1: 0, unread) */
  int64_t changed_us; /* the last change of its controls (0: none yet) */
} jb_queuerec;

typedef struct {
  uint64_t period_ms;
  /* GCRA's theoretical arrival time (wall clock, microseconds): the name
   * has a token at `now` iff tat - tau <= now (jb__rate_next_us). */
  int64_t tat_us;
} jb_queuerate;

/* An entry as read, whatever its format (format 1: r zero). */
typedef struct {
  jb_queuerec q;
  jb_queuerate r;
} jb_queueent;

/* GCRA on one int64 (tat): emission interval T = period / rate, burst
 * tolerance tau = (rate - 1) * T, so `rate` claims may go at once, then one
 * every T. The instant the name's next claim may go (<= now: it has a
 * token). A tat more than a period ahead (the wall clock stepped back)
 * counts as a period ahead. */
int64_t jb__rate_next_us(const jb_queueent *e, int64_t now_us);
/* Spend a token at `now` (tat = max(tat, now) + T). */
void jb__rate_spend(jb_queueent *e, int64_t now_us);

uint32_t jb__lane(const void *name, size_t len);
uint32_t jb__hdr_lane(const jb_jobhdr *h);
void jb__hdr_set_lane(jb_jobhdr *h, uint32_t lane);
/* The lane of a posting's name (0 when the posting does not start with a
 * uuid and a name: check reports such a job). */
uint32_t jb__posting_lane(const void *posting, size_t len);

/* Put a job into `ready` (and `byname`). put_flags as mdb_put's (0 or
 * MDB_NOOVERWRITE: then MDB_KEYEXIST when the key is held). */
int jb__ready_add(jb_store *s, MDB_txn *txn,
                  const uint8_t jobkey[JB_JOBKEY_LEN], const uint8_t uuid[16],
                  int64_t modified_us, uint32_t lane, unsigned put_flags);
/* Take a job out of `ready` (and `byname`): MDB_NOTFOUND when it is not
 * in `ready` (nothing changed). */
int jb__ready_remove(jb_store *s, MDB_txn *txn,
                     const uint8_t jobkey[JB_JOBKEY_LEN], uint32_t lane);
/* The `byname` entry alone (a cursor already deleted the `ready` one). */
int jb__byname_remove(jb_store *s, MDB_txn *txn,
                      const uint8_t jobkey[JB_JOBKEY_LEN], uint32_t lane);
/* jb__ready_add with the lane read from the job's header. */
int jb__ready_add_job(jb_store *s, MDB_txn *txn,
                      const uint8_t jobkey[JB_JOBKEY_LEN],
                      const uint8_t uuid[16], int64_t modified_us,
                      unsigned put_flags);

/* Record that `name` (of lane `lane`) has jobs: a read, and a write only
 * the first time. */
int jb__queue_note(jb_store *s, MDB_txn *txn, uint32_t lane, const char *name,
                   size_t len);

/* The names with a control, for claim-next: loaded once per transaction
 * that needs them. */
typedef struct {
  uint32_t lane;
  uint8_t flags;
  uint16_t name_len;
  uint32_t cap, held;
  int64_t next_us; /* JB_QUEUE_F_RATED: its next token (jb__rate_next_us) */
  char *name;
} jb_queue_ctl;

typedef struct {
  uint32_t queuectl; /* the meta record */
  int64_t now_us;    /* the claim's time: the rate limits' tokens at it */
  jb_queue_ctl *v;   /* the names with a control */
  size_t n, cap;
} jb_queue_ctls;

int jb__queue_ctls_load(jb_store *s, MDB_txn *txn, int64_t now_us,
                        jb_queue_ctls *c);
void jb__queue_ctls_free(jb_queue_ctls *c);
/* Is a name with this control blocked now (paused, at its cap, no token)? */
bool jb__queue_ctl_blocked(const jb_queue_ctls *c, const jb_queue_ctl *q);
/* Is a job of `lane` and (when the lane has a control) this name blocked? */
bool jb__queue_blocked(const jb_queue_ctls *c, uint32_t lane, const char *name,
                       size_t name_len, bool *need_name);

/* Set or clear flags of a name (JB_ENOTFOUND: no job ever had that name,
 * unless `create`), or of the whole board (name NULL). *changed: whether
 * anything changed. */
int jb__queue_set_flags(jb_store *s, MDB_txn *txn, const char *name,
                        size_t len, uint8_t set, uint8_t clear, int64_t now_us,
                        bool *changed);

/* Set a name's own cap of claims at once (0: none of its own: its
 * prefix's, if one is capped for each name, applies again): its claims
 * held now are counted (a walk of `claims`). JB_ENOTFOUND as
 * jb__queue_set_flags. */
int jb__queue_set_cap(jb_store *s, MDB_txn *txn, const char *name, size_t len,
                      uint32_t cap, int64_t now_us);
/* Cap each name that starts with prefix[0..len) on its own at `cap`
 * claims at once (0: no more): the names recorded now and those posted
 * later; a name's own cap (jb__queue_set_cap) beats it, and the longest
 * capped prefix of a name wins. Each name whose cap changes has its claims
 * counted (a walk of `claims` per name). */
int jb__queue_cap_each(jb_store *s, MDB_txn *txn, const char *prefix,
                       size_t len, uint32_t cap, int64_t now_us);
/* Rate-limit each name that starts with prefix[0..len) on its own at
 * `rate` claims per period_ms (rate 0: no more), as jb__queue_cap_each:
 * a name's own limit beats it, the longest limited prefix wins, and a
 * name given a limit starts with its tokens full. */
int jb__queue_rate_each(jb_store *s, MDB_txn *txn, const char *prefix,
                        size_t len, uint32_t rate, uint64_t period_ms,
                        int64_t now_us);
/* The prefixes of `kind` (store.h), in the order they were set: their
 * cap (period 0), or their rate limit. */
int jb__queue_each_prefixes(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                            jb_each_visit visit, void *arg);
/* The control the longest prefix of `kind` gives name[0..len): its cap or
 * rate in *count (0: none) and, for a rate, its period. */
int jb__queue_each_of(jb_store *s, MDB_txn *txn, jb_each_kind kind,
                      const char *name, size_t len, uint32_t *count,
                      uint64_t *period_ms);
/* Does a "capeach" or "rateeach" value parse, every cap above 0, every
 * rate limit well formed? (check, salvage) */
bool jb__queue_each_valid(jb_each_kind kind, const void *val, size_t len);

/* A claim of job `uuid` was written (delta 1) or deleted (-1): its name's
 * count of claims, when the name has a cap. One read of meta when no name
 * has a control. */
int jb__queue_held(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   int delta);
/* Is the name of job `uuid` at its cap (*cap_out: the cap, for a
 * message)? false when the name has none. */
int jb__queue_at_cap(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                     bool *at_cap, uint32_t *cap_out);
/* Does the name of job `uuid` lack a token at `now` (its limit and next
 * token through *e, for a message)? false when it has no rate limit. */
int jb__queue_no_token(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                       int64_t now_us, bool *none, jb_queueent *e);
/* A claim of job `uuid` at `now` spends a token of its name (nothing when
 * the name has no rate limit: one read of meta when no name has a
 * control). */
int jb__queue_spend(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                    int64_t now_us);
/* Set a name's rate limit (rate 0: none). JB_ENOTFOUND as
 * jb__queue_set_flags. */
int jb__queue_set_rate(jb_store *s, MDB_txn *txn, const char *name,
                       size_t len, uint32_t rate, uint64_t period_ms,
                       int64_t now_us);
/* The earliest next token after `now` of the rated names without one that
 * a claim of `names` (n 0: every name) takes and that have a ready job
 * (0: none). */
int jb__queue_next_token(jb_store *s, MDB_txn *txn, const jb_queue_ctls *c,
                         const char *const *names, size_t n,
                         int64_t *next_us);

/* Walk every name recorded (and its record): visit returns non-zero to
 * stop (that value is returned). */
typedef int (*jb_queue_visit)(void *arg, uint32_t lane, const char *name,
                              size_t len, const jb_queueent *e);
int jb__queue_walk(jb_store *s, MDB_txn *txn, jb_queue_visit visit, void *arg);
/* jb__queue_walk that also calls bad_value (for check) with each key that
 * is not a lane, or whose value holds bytes that are not a name's entry
 * (the walk passes over them). */
typedef void (*jb_queue_bad)(void *arg, const void *key, size_t key_len);
int jb__queue_walk_checked(jb_store *s, MDB_txn *txn, jb_queue_visit visit,
                           jb_queue_bad bad_value, void *arg);
/* The entries of one lane's value `val` (as jb__queue_walk, for check and
 * salvage, which read values themselves): *bad when bytes are left over
 * that do not parse as an entry. */
int jb__queue_value_walk(const void *val, size_t len, uint32_t lane,
                         jb_queue_visit visit, void *arg, bool *bad);

/* The claims held now of the name name[0..len) of lane `lane` (a walk of
 * `claims`). */
int jb__queue_count_held(jb_store *s, MDB_txn *txn, uint32_t lane,
                         const char *name, size_t len, uint32_t *out);
/* The meta record "queuectl" (0 when absent). */
int jb__queue_queuectl(jb_store *s, MDB_txn *txn, uint32_t *out);
/* Salvage: give name[0..len) the controls of `src` (its flags, cap and
 * time of change, its rate limit and bucket; the held count is counted
 * afresh from this board's claims), recording the name when no copied job has it. name NULL: the
 * board's pause, from src->flags. */
int jb__queue_restore(jb_store *s, MDB_txn *txn, const char *name, size_t len,
                      const jb_queueent *src);

/* For check: the lanes whose value does not parse (either format), the
 * entries whose rate limit is not well formed (format 2 without the flag,
 * or the flag without format 2, a rate of 0 or a period out of bounds),
 * the names with a control, and the meta record "queuectl". */
typedef struct {
  size_t bad_values, bad_rates;
  uint32_t controlled, queuectl;
} jb_queue_audit;
int jb__queue_audit(jb_store *s, MDB_txn *txn, jb_queue_audit *out);

/* The schema 9 -> 10 upgrade: every job's lane, every ready job's
 * `byname` entry, every name in `queues`. */
int jb__upgrade_lanes(jb_store *s, MDB_txn *txn);

#endif
