/*
 * sync_hook.h - all that libjbsync (sync/) sees of libjobboard beyond the
 * public header: the hook through which it decides Redis-decided jobs
 * (docs/DESIGN-NOTES.md, "The authority rule") and the board operations
 * its replicator needs.
 * sync/ includes include/ and this header, nothing else of the library's
 * folders (tests/layers.sh checks it). Not API: the functions are
 * internals that libjobboard exports (default visibility, "jb__" names,
 * absent from jobboard.h) because libjbsync is a shared library of its
 * own, layered on libjobboard, that sees none of its hidden symbols. The
 * board never includes hiredis or anything of sync/.
 *
 * What it exposes, and why:
 *  - jb__err, jb__err_errno (base/error.h, included): libjbsync's failures
 *    leave their message where jb_errmsg() reads it, so a caller mixing
 *    board and Redis calls has one message to print.
 *  - jb__mp_scan (codec/mpscan.h, included; inline): Redis replies are
 *    checked before msgpack-c unpacks them, by the same code as postings.
 *  - jb_remote_ops, jb__board_set_remote: jb_sync_attach installs the
 *    hook that claims, releases, extends, reserves and cancels
 *    Redis-decided jobs in Redis first.
 *  - jb__board_bury_unpublished: a publication Redis refused (its unique
 *    key held elsewhere) ends the job here.
 *  - jb__board_replicator_runs, jb__board_synced: whether a replicator
 *    holds the board, whether the board is synced at all.
 *  - jb__board_mark_remote, jb__board_set_published, jb__job_publishing,
 *    jb__job_ours: a job's publication as the replicator moves it.
 *  - jb__board_mirror_listings, jb__board_mirror_gone(_x): the
 *    replicator's pull of what Redis holds into the local board.
 *  - jb__board_setting_get/_set/_claim: the Redis URL and namespace kept
 *    with the board.
 *
 * Each hook operation gets the job's uuid text and the caller's owner name,
 * and returns JB_OK when Redis decided in the caller's favour, or a JB_E*
 * code with the message set (JB_EOFFLINE when Redis cannot be reached or
 * the reply was lost; JB_ECLAIMED / JB_ENOTOWNER / JB_ENOTFOUND when Redis
 * refused). Only after JB_OK does the core record the outcome locally,
 * in one write transaction; on anything else nothing local changes.
 */
#ifndef JOBBOARD_CORE_SYNC_HOOK_H
#define JOBBOARD_CORE_SYNC_HOOK_H

#include "jobboard.h"
#include "base/error.h"
#include "codec/mpscan.h"

#include <stdbool.h>
#include <stdint.h>

/* The lease_ms of a claim bound to a process of this host with no lease. */
#define JB_REMOTE_KEEPALIVE (-1)

/*
 * How a job Redis decides left the listings, beyond what taskflow's keys
 * say (consumed: gone; trashed: in NS:trash): the board that completed it
 * hands this to the hook, which keeps it in Redis beside taskflow's keys
 * (NS:<uuid>.outcome, sync/remote.h), and every board mirroring the job
 * records the same ending from it. The pointers are borrowed.
 */
typedef struct {
  int end;              /* jb_end: CONSUMED, FAILED, TRASHED, DEAD,
                           CANCELLED; 0: unknown (plain consume or trash) */
  const void *result;   /* one msgpack map, or NULL: none given */
  size_t result_len;
  int cause;            /* JB_END_DEAD: the jb_dead_cause */
  const char *reason;   /* the last attempt's reason, or NULL */
  size_t reason_len;
  const char *owner;    /* who completed it (NUL-terminated), or NULL */
} jb_remote_outcome;

typedef struct jb_remote_ops {
  /* Claim for `who`, expiring lease_ms from now (0: never;
   * JB_REMOTE_KEEPALIVE: bound to a process of this host with no lease,
   * to be kept alive by the replicator of `board`). *fence: the Redis
   * fencing token of the claim (0 if none). */
  int (*claim)(void *ctx, jb_board *board, const char *uuid,
               const char *who, int64_t lease_ms, uint64_t *fence);
  int (*abandon)(void *ctx, const char *uuid, const char *who);
  /* consume and trash carry how the job ended (NULL: plain), for the
   * other boards. */
  int (*consume)(void *ctx, const char *uuid, const char *who,
                 const jb_remote_outcome *outcome);
  int (*trash)(void *ctx, const char *uuid, const char *who,
               const jb_remote_outcome *outcome);
  /* Set the claim's expiry to lease_ms (> 0) from now. */
  int (*extend)(void *ctx, const char *uuid, const char *who,
                int64_t lease_ms);
  /* A release (op: one of JB_REMOTE_ABANDON/CONSUME/TRASH) of a job that
   * is no longer on the board. If this hook sent that release for `who`
   * earlier and its reply was lost, Redis is read to tell whether it ran:
   * 1 if it did (the caller's release happened; the replicator took the
   * job off the board since), 0 if it did not or no such release is
   * pending (the message is left alone), JB_EOFFLINE if Redis cannot say
   * yet. May be NULL. */
  int (*settle)(void *ctx, int op, const char *uuid, const char *who);
  /* Reserve unique key `key` in Redis for job `uuid`, about to be posted
   * on this board (it is published later): a pending reservation, which
   * refuses nobody (the post may die before its commit), until confirm
   * makes it hold for hold_ms (> 0) once the post committed. JB_OK;
   * JB_EEXISTS when another live job holds the key there (its uuid text
   * copied to holder, the message naming key and holder); JB_EOFFLINE
   * when Redis cannot be reached (the post goes on locally, and the key is
   * taken, or the job refused, when it is published). May be NULL. */
  int (*reserve)(void *ctx, const char *key, const char *uuid,
                 int64_t hold_ms, char holder[JB_UUID_STRLEN]);
  /* Give back what reserve took for `uuid` (the local post failed); best
   * effort: a reservation left behind runs out by itself. May be NULL. */
  void (*unreserve)(void *ctx, const char *key, const char *uuid);
  /* Cancel job `uuid` in Redis: it leaves the listings (with its owner
   * key and unique key) only if unclaimed there, or, with force, claimed
   * too. JB_OK; JB_ECLAIMED (claimed, not forced: the message names the
   * owner); JB_ENOTFOUND (Redis no longer lists it); JB_EOFFLINE. May be
   * NULL (cancels of Redis-decided jobs are then refused). */
  int (*cancel)(void *ctx, const char *uuid, bool force);
  /* The local post of `uuid` committed: its pending reservation of `key`
   * now holds for hold_ms (> 0). Best effort: one lost, or the key taken
   * meanwhile by a publication, leaves the key to be decided when the job
   * is published. May be NULL. */
  void (*confirm)(void *ctx, const char *key, const char *uuid,
                  int64_t hold_ms);
  /* Claim n (>= 1) jobs for `who` as claim does each (same lease_ms), in
   * one round trip: every claim is still decided by Redis on its own,
   * atomically, with its own fencing token, in the order given. Returns
   * JB_OK when each job has its outcome: results[i] is what claim would
   * have returned for uuids[i] (JB_OK, fences[i] set; a refusal; or
   * JB_EOFFLINE: its reply was lost and Redis could not be read to
   * resolve it, the claim kept for a retry as claim keeps one), and the
   * message is the first JB_EOFFLINE's. Any other return (JB_EOFFLINE
   * when Redis cannot be reached) means no claim was sent: nothing was
   * claimed. May be NULL: the core claims such jobs one at a time. */
  int (*claim_many)(void *ctx, jb_board *board, size_t n,
                    const char *const *uuids, const char *who,
                    int64_t lease_ms, uint64_t *fences, int *results);
} jb_remote_ops;

/* The op of jb_remote_ops.settle. */
#define JB_REMOTE_ABANDON 0
#define JB_REMOTE_CONSUME 1
#define JB_REMOTE_TRASH 2

/* Install (ops non-NULL) or remove (NULL) the hook of handle `b`. The ops
 * and ctx must outlive the handle or the next call. Not thread-safe
 * against operations running on `b` at the same time. */
JB_EXTERN void jb__board_set_remote(jb_board *b, const jb_remote_ops *ops,
                                    void *ctx);

/* Send job `uuid`, decided here (its publication refused by Redis: its
 * unique key is held there by another live job), to the dead letters
 * (cause JB_DEAD_BURIED) with `reason` as its last reason, in one write
 * transaction, whatever its publication state and claim (a local claim
 * goes with it, its owner kept in the letter); with `cancel`, cancel it
 * instead (history "cancelled" with the reason: a schedule's run that
 * another board posted). JB_ENOTFOUND when not on the board; JB_EINVAL
 * when it is published (Redis decides it). */
JB_EXTERN int jb__board_bury_unpublished(jb_board *b, const char *uuid,
                                         const char *reason, bool cancel);

/* true when a replicator holds board directory `path`'s lock (its
 * `sync.lock`, flock'ed by the elected replicator for as long as it
 * runs). */
JB_EXTERN bool jb__board_replicator_runs(const char *path);

/* The setting naming the namespace a board is synced with (written once,
 * by the first replicator or --redis command: sync/config.c). */
#define JB_SETTING_SYNC_NAMESPACE "sync.namespace"

/* true when board `b` is synced with Redis (JB_SETTING_SYNC_NAMESPACE is
 * set), whether or not a replicator runs now; false on a read error. */
JB_EXTERN bool jb__board_synced(jb_board *b);

/* Mark job `uuid` Redis-decided (one write transaction; the posting bytes
 * stay as they are). Errors: JB_EINVAL (bad uuid), JB_ENOTFOUND. */
JB_EXTERN int jb__board_mark_remote(jb_board *b, const char *uuid);

/*
 * A job's publication, as the replicator moves it (DESIGN-NOTES "The
 * replicator"): decided locally; marked for publication (Redis decides
 * from now on, but the post may not have run: a crash here is resolved by
 * reading Redis's publication marker); published (the post ran).
 */
typedef enum {
  JB_PUB_LOCAL = 0,   /* decided locally (the post did not and will not run) */
  JB_PUB_PENDING = 1, /* Redis-decided, the post not confirmed */
  JB_PUB_DONE = 2,    /* Redis-decided, published */
  /* As JB_PUB_PENDING, for the replicator: a job claimed by a live
   * process of this host (a claim bound to it) is left as it is, its
   * result JB_ECLAIMED, decided in the mark's own transaction. */
  JB_PUB_PENDING_UNHELD = 3
} jb_pub_state;

/* Set the publication state of n jobs (uuid texts) in one write
 * transaction. With JB_PUB_DONE, seqs[i] is the sequence Redis published
 * job i under: the job takes its place in Redis's order (store.h, the
 * jobkey bands); seqs NULL or 0 keeps the sequence its key holds. A job
 * marked JB_PUB_PENDING keeps its place; one set back to JB_PUB_LOCAL goes
 * to the jobs decided here. results (may be NULL) gets JB_OK or
 * JB_ENOTFOUND per job.
 * Errors: JB_EINVAL (a bad uuid text: nothing written), JB_ENOTFOUND (n is
 * 1 and the job is not on the board), JB_EFULL, JB_EIO, JB_ENOMEM. */
JB_EXTERN int jb__board_set_published(jb_board *b, const char *const *uuids,
                                      size_t n, jb_pub_state state,
                                      const uint64_t *seqs, int *results);

/* true when `job` is marked for publication and the post is not
 * confirmed (JB_PUB_PENDING). */
JB_EXTERN bool jb__job_publishing(const jb_job *job);

/* true when `job` was published from this board (marked JB_PUB_PENDING
 * here at some point), as opposed to mirrored in from Redis. */
JB_EXTERN bool jb__job_ours(const jb_job *job);

/* ------------------------------------------- the replicator's mirror (pull)
 *
 * What libjbsync's replicator (sync/replicator.c) uses to bring what Redis
 * holds into the local board, so local readers, waiters and watchers see
 * it. Each call is one write transaction (all or nothing), bumps the board's
 * signal like every commit, and logs the usual events (POSTED, CLAIMED,
 * ABANDONED, CONSUMED, TRASHED) so watchers see remote changes as local
 * ones. None of them goes through the hook: Redis has decided.
 */

/* One job as Redis lists it. */
typedef struct {
  const char *uuid;        /* the NS:listings field: 36-char uuid text */
  const void *posting;     /* the posting bytes, as listed */
  size_t posting_len;
  const char *owner;       /* NS:uuid.owned, NUL-terminated, or NULL when
                              unclaimed (1..JB_WHO_MAX bytes) */
  int64_t expires_us;      /* the owner key's expiry (UTC us), 0: none */
} jb_remote_listing;

/* What jb__board_mirror_listings did with each listing. */
typedef enum {
  JB_MIRROR_NEW = 1,     /* inserted (Redis-decided; with its claim) */
  JB_MIRROR_UPDATED,     /* on the board; its claim changed to Redis's */
  JB_MIRROR_SAME,        /* on the board and already as Redis says, or
                            changed locally at or after `read_us` (left
                            alone: the local change is newer) */
  JB_MIRROR_LOCAL,       /* on the board and decided locally (not yet
                            published from here): left alone */
  JB_MIRROR_DONE,        /* completed on this board at or after the read
                            (its history holds the uuid, not as lost, no
                            older than read_us less 2 s): not brought back */
  JB_MIRROR_QUARANTINED  /* the posting does not decode, or its uuid is not
                            the field's: not inserted; kept in the
                            quarantine table with the reason (once per
                            uuid), so check reports it */
} jb_mirror_result;

/*
 * Bring n listings into the board, in one write transaction:
 *  - a uuid not on the board: inserted, marked Redis-decided, its posting
 *    bytes verbatim, in Redis's order: its sequence is the posting's
 *    (Redis's), and it is listed and claimed among the Redis-decided jobs
 *    by that number (store.h, the jobkey bands), event POSTED; with an
 *    owner it is inserted claimed (owner, the expiry as its lease, no
 *    holder), event CLAIMED too.
 *  - a Redis-decided job on the board listed under another sequence than
 *    its own (published again after Redis lost its data): moved to its
 *    new place (UPDATED; no event).
 *  - a Redis-decided job on the board whose claim record (or, unclaimed,
 *    the job) was last changed before `read_us` (UTC us: when the caller
 *    began reading Redis; 0: no such check): its claim is made to match.
 *    Another owner, or an owner where there was none: the claim replaced
 *    (event CLAIMED); unclaimed in Redis: the local claim removed (event
 *    ABANDONED naming the old owner). The same owner: only a different
 *    expiry is copied (event EXTENDED; expiries less than
 *    JB_MIRROR_EXPIRY_SLACK_US (1 s, store/store.h) apart are the same),
 *    and a claim bound to a process of this host keeps its binding and
 *    its (absent) lease (the replicator keeps those alive in Redis with
 *    short expiries).
 *  - a job decided locally: left alone (LOCAL).
 *  - a uuid the board's completion history holds: left out (DONE).
 *  - a posting that does not decode, or whose uuid differs from the field:
 *    not inserted; a quarantine record (its reason says why it does not
 *    decode and that it was received from Redis) unless one exists for
 *    that uuid (QUARANTINED). The job is not deleted from Redis.
 * results (may be NULL) receives one jb_mirror_result per listing.
 * Errors: JB_EINVAL (a bad uuid text or owner, naming it: nothing is
 * written), JB_EFULL / JB_EIO / JB_ENOMEM.
 */
JB_EXTERN int jb__board_mirror_listings(jb_board *b,
                                        const jb_remote_listing *l, size_t n,
                                        int64_t read_us, int *results);

/*
 * Remove n Redis-decided jobs that Redis no longer lists: consumed or
 * trashed elsewhere (trashed[i] says which), or lost from Redis (lost[i]:
 * Redis lost its data and nothing shows the job was completed). trashed
 * and lost may be NULL (none). Each leaves the board with event CONSUMED,
 * TRASHED or LOST and a history record (JB_END_CONSUMED, JB_END_TRASHED,
 * or JB_END_LOST with `lost_reason`; no result; owner the local claim's,
 * if any). A lost job is not "done" here: a later mirror that finds it
 * listed again brings it back. A uuid not on the board, or decided
 * locally, is skipped. *removed (may be NULL) = how many left. One write
 * transaction. Errors: JB_EINVAL (bad uuid text), JB_EFULL, JB_EIO.
 */
JB_EXTERN int jb__board_mirror_gone(jb_board *b, const char *const *uuids,
                                    const bool *trashed, const bool *lost,
                                    const char *lost_reason, size_t n,
                                    size_t *removed);

/*
 * jb__board_mirror_gone with how each job ended where Redis kept it
 * (outcomes may be NULL; outcomes[i].end 0: not known, the plain ending
 * by trashed[i]). A job with an outcome leaves with that ending: its
 * result, a dead letter's cause and reason (JB_END_DEAD: a trash; its
 * letter says the cause), a cancel (JB_END_CANCELLED: event CANCELLED);
 * the owner named when the board holds no claim of the job. Ignored for
 * a lost job.
 */
JB_EXTERN int jb__board_mirror_gone_x(jb_board *b, const char *const *uuids,
                                      const bool *trashed, const bool *lost,
                                      const char *lost_reason,
                                      const jb_remote_outcome *outcomes,
                                      size_t n, size_t *removed);

/* ------------------------------------------------------------ the detach */

/* What jb__board_detach did (store/detach.c says how). */
typedef struct {
  size_t jobs;     /* Redis-decided jobs made local (each POSTED anew) */
  size_t released; /* their claims released: ready again (ABANDONED) */
  size_t kept;     /* their claims kept: bound to a live process here */
  size_t letters;  /* dead letters of such jobs, now local ones */
} jb_detach_result;

/* Detach board `b` from Redis, in one write transaction: every job Redis
 * decided becomes a job decided here (a new board sequence, after the
 * jobs decided here already), its claim released unless bound to a live
 * process of this host; the dead letters of such jobs stay dead letters;
 * the "sync." settings (URL, namespace, epoch, keep-alive) go, and the
 * setting "sync.detached" gets the line `note` (at most 1024 bytes: when
 * and from what) with the counts. The board's replicator lock is held for
 * the write. Errors: JB_ECLAIMED (a replicator runs on the board: nothing
 * changed), JB_ENOTFOUND (the board is not synced), JB_EREADONLY,
 * JB_EINVAL, JB_EFULL, JB_EIO, JB_ECORRUPT (a job whose posting does not
 * decode: nothing changed). Files of the sync layer (credentials, status)
 * are not touched. */
JB_EXTERN int jb__board_detach(jb_board *b, const char *note,
                               jb_detach_result *out);

/* ---------------------------------------------------- the board's settings
 *
 * Small text values the board keeps for libjbsync (the Redis URL and the
 * namespace it is synced with). Keys start with "sync." (at most 64
 * bytes); values are 0..4096 bytes of text. Kept in the board's meta
 * table, so they live with the board (and are not exported).
 */

/* Read setting `key` into buf (size bytes, NUL-terminated; *len, may be
 * NULL, its length, also set when the buffer is too small). JB_ENOTFOUND
 * when not set; JB_EINVAL for a bad key or a buffer too small (the message
 * says the size needed). A key is "sync." and 1.. printable ASCII
 * characters (no space); a value is UTF-8 text. */
JB_EXTERN int jb__board_setting_get(jb_board *b, const char *key, char *buf,
                                    size_t size, size_t *len);

/* Write setting `key` (value NUL-terminated; NULL deletes it). One write
 * transaction. Errors: JB_EINVAL (bad key, value too long), JB_EFULL,
 * JB_EIO. */
JB_EXTERN int jb__board_setting_set(jb_board *b, const char *key,
                                    const char *value);

/* Write setting `key` only if it is not set, in one write transaction:
 * JB_OK when it was unset (now `value`) or already equal to `value`;
 * JB_ECLAIMED when it holds another value, which is copied into cur (size
 * bytes, NUL-terminated; cur may be NULL) and named in the message. */
JB_EXTERN int jb__board_setting_claim(jb_board *b, const char *key,
                                      const char *value, char *cur,
                                      size_t size);

#endif
