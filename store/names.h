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
 *    share a lane), each a jb_queuerec followed by the name's bytes: every
 *    name ever posted, and its controls (paused). A post reads it; only a
 *    name's first post writes it.
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
};
/* Every flag a record may hold (check reports others). */
#define JB_QUEUE_F_ALL \
  (JB_QUEUE_F_PAUSED | JB_QUEUE_F_CAPPED | JB_QUEUE_F_CAP_EACH)
#define JB_CAPEACH_KEY "capeach"
#define JB_CAPEACH_MAX 256

typedef struct {
  uint8_t format; /* 1 */
  uint8_t flags;  /* JB_QUEUE_F_* */
  uint16_t name_len;
  uint32_t cap;  /* JB_QUEUE_F_CAPPED: the most claims at once */
  uint32_t held; /* JB_QUEUE_F_CAPPED: its claims now */
  uint32_t pad;
  int64_t changed_us; /* the last change of its controls (0: none yet) */
} jb_queuerec; /* followed by name_len bytes */

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
  char *name;
} jb_queue_ctl;

typedef struct {
  uint32_t queuectl; /* the meta record */
  jb_queue_ctl *v;   /* the names with a control */
  size_t n, cap;
} jb_queue_ctls;

int jb__queue_ctls_load(jb_store *s, MDB_txn *txn, jb_queue_ctls *c);
void jb__queue_ctls_free(jb_queue_ctls *c);
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
/* The prefixes capped for each name, in the order they were set. */
int jb__queue_cap_prefixes(jb_store *s, MDB_txn *txn,
                           int (*visit)(void *arg, const char *prefix,
                                        size_t len, uint32_t cap),
                           void *arg);
/* The cap the longest prefix capped for each name gives name[0..len)
 * (0: none). */
int jb__queue_capeach_of(jb_store *s, MDB_txn *txn, const char *name,
                         size_t len, uint32_t *cap);
/* Does a "capeach" value parse, every cap above 0? (check) */
bool jb__queue_capeach_valid(const void *val, size_t len);

/* A claim of job `uuid` was written (delta 1) or deleted (-1): its name's
 * count of claims, when the name has a cap. One read of meta when no name
 * has a control. */
int jb__queue_held(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                   int delta);
/* Is the name of job `uuid` at its cap (*cap_out: the cap, for a
 * message)? false when the name has none. */
int jb__queue_at_cap(jb_store *s, MDB_txn *txn, const uint8_t uuid[16],
                     bool *at_cap, uint32_t *cap_out);

/* Walk every name recorded (and its record): visit returns non-zero to
 * stop (that value is returned). */
typedef int (*jb_queue_visit)(void *arg, uint32_t lane, const char *name,
                              size_t len, const jb_queuerec *q);
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
 * time of change; the held count is counted afresh from this board's
 * claims), recording the name when no copied job has it. name NULL: the
 * board's pause, from src->flags. */
int jb__queue_restore(jb_store *s, MDB_txn *txn, const char *name, size_t len,
                      const jb_queuerec *src);

/* The schema 9 -> 10 upgrade: every job's lane, every ready job's
 * `byname` entry, every name in `queues`. */
int jb__upgrade_lanes(jb_store *s, MDB_txn *txn);

#endif
