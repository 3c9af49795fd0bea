/*
 * remote.h - the job operations on a Redis board, run through our scripts
 * (the .lua files of sync/scripts/): post, claim, abandon, consume, trash,
 * extend, and the reads that resolve an operation whose reply was lost
 * (resolve_post, resolve_claim, resolve_release). Not
 * API (hidden symbols; the replicator and the tests use it). One call is
 * one EVALSHA (or one read transaction); nothing here touches a local
 * board: recording the outcome locally is the caller's, after Redis has
 * decided (docs/DESIGN-NOTES.md, "The authority rule").
 *
 * Codes and messages are the local board's, so a caller (and the CLI) reads
 * the same text whichever side decided:
 *  - JB_ENOTFOUND "job U is not on the board" (not in NS:listings), or
 *    "cannot consume job U: it is not claimed (no owner known)";
 *  - JB_ECLAIMED "job U is already claimed by O";
 *  - JB_ENOTOWNER "cannot trash job U: it is claimed by O, not by W", or
 *    "... claim C is not the current claim's (O holds it with claim D)";
 *  - JB_EINVAL "job U is already on the board" (post of another posting
 *    under a listed uuid), or a bad argument (refused before any I/O);
 *  - JB_EOFFLINE "cannot claim job U: backend unavailable (redis at ...:
 *    timed out after 500 ms ...)": Redis could not be reached or did not
 *    answer in time. res->unsure then says whether the script may have
 *    been sent (the connection was up when the call began): if so it may
 *    have run on the server, and only a resolve_* read after reconnecting
 *    tells (never guess, never re-send blindly). A refusal by the server
 *    (READONLY from a master demoted by a failover, LOADING, BUSY) is
 *    sure: the script did not run, res->unsure is false;
 *  - JB_EIO a reply that is not what the scripts return (quoted);
 *    JB_ENOMEM.
 * The owner named in messages and in res->owner is what Redis holds (the
 * raw bytes of NS:U.owned, cut at JB_WHO_MAX).
 */
#ifndef JOBBOARD_SYNC_REMOTE_H
#define JOBBOARD_SYNC_REMOTE_H

#include "conn.h"
#include "scripts.h"

#include "core/sync_hook.h"

#include <msgpack.h>
#include <stdint.h>

/* The longest key: the namespace (<= JB_SYNC_NAMESPACE_MAX), ':', the
 * uuid and a suffix. */
#define JB__REMOTE_KEY_MAX (JB_SYNC_NAMESPACE_MAX + 64)

/* Our scripts registered on one connection (its registry is per
 * connection and survives reconnects: NOSCRIPT reloads them). */
typedef struct {
  jb_sync_conn *conn;                /* borrowed */
  int ids[JB__SYNC_SCRIPT_COUNT];    /* registry ids, jb__sync_scripts order */
  bool notices;                      /* PUBLISH change notices on NS:notices */
  /* The keys that name no job, made once by jb__remote_init (made for
   * every call, as the job's own still are, they cost a claim about a
   * microsecond of snprintf). */
  char listings[JB__REMOTE_KEY_MAX], trash[JB__REMOTE_KEY_MAX],
      sequence[JB__REMOTE_KEY_MAX], fence[JB__REMOTE_KEY_MAX],
      unique[JB__REMOTE_KEY_MAX], /* NS:unique */
      channel[JB__REMOTE_KEY_MAX]; /* NS:notices, or "" without notices */
} jb__remote;

/* Register the scripts on `conn` (SCRIPT LOAD each: the server must be
 * reachable). notices: whether our writes PUBLISH on NS:notices (the
 * replicators' wake-up; tests turn it off to look at the bare writes).
 * Errors: as jb__sync_script_add (JB_EOFFLINE, JB_EINVAL, JB_ENOMEM). */
int jb__remote_init(jb__remote *r, jb_sync_conn *conn, bool notices);

/* What a call learnt, beyond its code. Fields a call does not set are
 * zero / "". */
typedef struct {
  uint64_t sequence;        /* post: the Redis sequence of the posting */
  uint64_t fence;           /* claim: the fencing token of the claim (ours
                               when won; the holder's on JB_ECLAIMED when
                               the holder claimed through our scripts) */
  char owner[JB_WHO_MAX + 1]; /* the owner Redis names on a refusal */
  char claim[JB_UUID_STRLEN + 28]; /* the claim id Redis holds, if any */
  bool again;               /* the call found its own earlier effect: a
                               post already published (listed with these
                               bytes, or gone with its marker left), a
                               claim already held under this claim id */
  bool gone;                /* post, with again: published earlier and no
                               longer listed (consumed or trashed since);
                               it was not listed again */
  bool unsure;              /* JB_EOFFLINE after the script may have been
                               sent: resolve before doing anything else */
  char holder[JB_UUID_STRLEN + 28]; /* JB_EEXISTS: the job holding the
                               unique key in Redis */
  bool pending;             /* reserve, JB_EEXISTS: holder's reservation is
                               pending (its post may not have committed,
                               or died): ask again shortly */
} jb__remote_result;

/* A new claim id: a random uuid4 text (36 chars + NUL). Errors: JB_EIO
 * (getrandom failed). */
int jb__remote_claim_id(char out[JB_UUID_STRLEN]);

/*
 * The posting without its sequence value: `posting` (len bytes) is a whole
 * posting as the core stores it (jb_job_posting(): taskflow's layout with
 * the entry "sequence" last); *prefix_len is set to the length up to and
 * including the key "sequence", which is what the post script takes.
 * Errors: JB_EINVAL when the posting does not end with that key and one
 * msgpack unsigned integer.
 */
int jb__remote_posting_prefix(size_t *prefix_len, const void *posting,
                              size_t len);

/* An owner to publish a job with (a job claimed locally before it was
 * published goes to Redis already claimed, in the same script). */
typedef struct {
  const char *who;        /* 1..JB_WHO_MAX bytes of UTF-8 */
  int64_t expiry_ms;      /* > 0, or 0: no expiry (as taskflow's conductors) */
  const char *claim_id;   /* from jb__remote_claim_id */
  int64_t now_us;         /* last_modified (UTC us); 0: the clock now */
} jb__remote_owner;

/* How long the publication marker NS:U.posted of a post lasts: 30 days.
 * It is what makes a post whose reply was lost safe to resolve and to
 * re-send for that long (docs/DESIGN-NOTES.md, "Resolving an unsure
 * post"); about 140 bytes of Redis memory per job posted in that time. */
#define JB__REMOTE_POSTED_TTL_MS (INT64_C(30) * 24 * 3600 * 1000)

/*
 * Publish the posting of job `uuid` (a whole posting, see
 * jb__remote_posting_prefix) under a new number from NS:sequence;
 * res->sequence is that number. With `owner` the job is listed already
 * claimed (res->fence is the claim's token). The script also writes the
 * marker NS:U.posted (the number, for JB__REMOTE_POSTED_TTL_MS), which no
 * operation deletes, and refuses a uuid that is listed or marked. So
 * re-sending a post whose reply was lost is safe, whatever happened to
 * the job since: it gets JB_OK, res->again and the number it was
 * published under, with res->gone when the job is no longer listed
 * (another host consumed or trashed it: the job is done, and it is not
 * listed again). jb__remote_resolve_post tells the same without writing.
 * The guarantee lasts as long as the marker: do not re-send a post whose
 * outcome stayed unknown for 30 days.
 * Errors: JB_EINVAL "job U is already on the board" (another posting under
 * that uuid), bad arguments; the rest as at the top.
 */
int jb__remote_post(jb__remote_result *res, jb__remote *r, const char *uuid,
                    const void *posting, size_t len,
                    const jb__remote_owner *owner);

/*
 * jb__remote_post with the job's unique key (NULL: none): the script
 * refuses the post, writing nothing, when another live job holds the key
 * in Redis (listed, or reserved and the reservation not run out; a holder
 * that is neither is stale and loses the key): JB_EEXISTS "unique key "K"
 * is held by job U (in redis)", res->holder = U. Posted, the job holds the
 * key for as long as it is listed.
 */
int jb__remote_post_unique(jb__remote_result *res, jb__remote *r,
                           const char *uuid, const void *posting, size_t len,
                           const jb__remote_owner *owner, const char *unique);

/*
 * Reserve unique key `key` for job `uuid` (not yet posted) for hold_ms
 * (> 0): JB_OK (reserved, or `uuid` holds it already), JB_EEXISTS (another
 * live job holds it: res->holder, message as jb__remote_post_unique's).
 * hold_ms 0 gives back `uuid`'s reservation (a reservation only: a listed
 * holder keeps its key). Others as at the top.
 */
int jb__remote_reserve(jb__remote_result *res, jb__remote *r,
                       const char *key, const char *uuid, int64_t hold_ms);

/*
 * jb__remote_reserve, pending or not. A pending reservation is made
 * before the local post commits, for JB__REMOTE_PENDING_MS: it refuses no
 * post (a process killed before its commit leaves one of a job that
 * exists nowhere). Another reservation meeting it gets JB_EEXISTS with
 * res->pending (ask again: it is confirmed or runs out shortly), a
 * publication takes the key over. A reservation that is not pending (the
 * job exists: its post committed) confirms `uuid`'s pending one.
 */
int jb__remote_reserve_x(jb__remote_result *res, jb__remote *r,
                         const char *key, const char *uuid, int64_t hold_ms,
                         bool pending);

/* How long a pending reservation holds: a local post's commit takes
 * milliseconds; a post waiting on another's pending reservation waits at
 * most this long after a kill. */
#define JB__REMOTE_PENDING_MS 5000

/*
 * Cancel job `uuid` in Redis (cancel.lua): it leaves the listings with its
 * owner key, claim record and unique key, as a consumed job does, and its
 * outcome record says "cancelled" (JB__REMOTE_OUTCOME_TTL_MS). Unless
 * force, only when unclaimed. JB_OK (res->owner: the claim a forced cancel
 * removed, "" if none); JB_ECLAIMED "job U is claimed by O (in redis): not
 * cancelled" (res->owner); JB_ENOTFOUND (not listed). Others as at the top.
 */
int jb__remote_cancel(jb__remote_result *res, jb__remote *r, const char *uuid,
                      bool force);

/*
 * Claim job `uuid` for owner->who under owner->claim_id, expiring in
 * owner->expiry_ms (0: never). JB_OK: ours, res->fence the fencing token;
 * also when Redis already holds this very claim (same owner and claim id:
 * a re-sent claim whose first reply was lost; res->again).
 * JB_ECLAIMED: someone holds it, res->owner (and res->claim, res->fence
 * when taken through our scripts); when that is owner->who under another
 * claim id, the message says so, and Redis refreshed that claim's time
 * (and its expiry if one is given) as taskflow 5.0 does. JB_ENOTFOUND: not
 * listed. Others as at the top.
 */
int jb__remote_claim(jb__remote_result *res, jb__remote *r, const char *uuid,
                     const jb__remote_owner *owner);

/*
 * jb__remote_claim of n jobs in one round trip: one call of claim_many.lua
 * (up to JB__REMOTE_CLAIM_CHUNK jobs a call), which claims each job as
 * claim.lua claims one (atomically, with its own fencing token), in the
 * order given. owner->claim_id is ignored, claim_ids[i] being job i's.
 * rcs[i] and res[i] are what jb__remote_claim returns and fills for job i:
 * a call whose reply was lost leaves each of its jobs JB_EOFFLINE with
 * res[i].unsure (the script runs whole or not at all: all of them ran or
 * none), and the jobs of later calls JB_EOFFLINE, not sent. Returns JB_OK
 * once every job has its outcome, with the message of the first that
 * failed (anything but JB_OK, JB_ECLAIMED, JB_ENOTFOUND); any other code
 * means nothing ran: JB_EINVAL (a bad uuid or owner), JB_EOFFLINE (the
 * server cannot be reached, or refused the script), JB_EIO, JB_ENOMEM.
 * NOSCRIPT is handled as every call handles it (conn.h).
 */
#define JB__REMOTE_CLAIM_CHUNK 256
int jb__remote_claim_many(jb__remote_result *res, int *rcs, jb__remote *r,
                          size_t n, const char *const *uuids,
                          const jb__remote_owner *owner,
                          const char *const *claim_ids);

/* The releases: abandon (the job stays listed, unclaimed), consume (gone
 * from Redis), trash (moved to NS:trash). */
typedef enum {
  JB__REMOTE_ABANDON,
  JB__REMOTE_CONSUME,
  JB__REMOTE_TRASH
} jb__remote_release_op;

/*
 * Release the claim of `who` on job `uuid`. claim_id: the id it was
 * claimed under (checked against NS:U.claim), or NULL / "" to check the
 * owner name only, as taskflow does (a claim taken by taskflow's scripts
 * has no record). JB_OK: done. JB_ENOTFOUND: not listed, or not claimed
 * (lapsed, abandoned). JB_ENOTOWNER: claimed by res->owner, or by `who`
 * under another claim (res->claim). Others as at the top.
 */
int jb__remote_release(jb__remote_result *res, jb__remote *r,
                       jb__remote_release_op op, const char *uuid,
                       const char *who, const char *claim_id);

/*
 * How long the outcome record NS:U.outcome lives: 7 days, the history's
 * default age (JB_HISTORY_AGE_DEFAULT_MS). A board whose replicator comes
 * back within that time records a job finished elsewhere with its real
 * ending; later, only what taskflow's keys say (consumed, or trashed).
 * Its size is about 30 bytes plus the result and the reason: Redis holds
 * a week of failures' results.
 */
#define JB__REMOTE_OUTCOME_TTL_MS (INT64_C(7) * 24 * 3600 * 1000)

/*
 * The outcome record of a job (a msgpack map, written by consume.lua,
 * trash.lua and cancel.lua): {"end": jb_end_name, "result": bin (the
 * result map's bytes, when given), "cause": jb_dead_cause_name (end
 * "dead"), "reason": str (when given), "owner": str (who completed it)}.
 * pack appends it to `out` (JB_EINVAL: o->end is no ending; JB_ENOMEM).
 * parse reads one: o->result and o->reason point into data, o->owner into
 * owner[]; entries it does not know are skipped. JB_EIO: not one map, or
 * no ending it knows.
 */
int jb__remote_outcome_pack(msgpack_sbuffer *out, const jb_remote_outcome *o);
int jb__remote_outcome_parse(jb_remote_outcome *o, char owner[JB_WHO_MAX + 1],
                             const char *data, size_t len);

/*
 * jb__remote_release with how the job ended (consume and trash; NULL: a
 * plain one, which also deletes an older outcome record of the uuid): the
 * script keeps it in NS:U.outcome for JB__REMOTE_OUTCOME_TTL_MS, so that
 * the other boards' replicators record the same ending (abandon ignores
 * it). JB_EINVAL for an outcome with no ending.
 */
int jb__remote_release_x(jb__remote_result *res, jb__remote *r,
                         jb__remote_release_op op, const char *uuid,
                         const char *who, const char *claim_id,
                         const jb_remote_outcome *outcome);

/*
 * Set the claim's expiry (owner key and claim record) to expiry_ms (> 0)
 * from now; it may shorten it. Refusals as jb__remote_release's, with the
 * verb "extend the claim on".
 */
int jb__remote_extend(jb__remote_result *res, jb__remote *r, const char *uuid,
                      const char *who, const char *claim_id,
                      int64_t expiry_ms);

/* ----------------------------------------------------------- lost replies */

/* What Redis holds about one job, read in one MULTI/EXEC (so the owner key
 * and the claim record are from the same moment). */
typedef struct {
  bool listed;              /* in NS:listings */
  bool trashed;             /* in NS:trash */
  bool owned;               /* NS:U.owned exists */
  char owner[JB_WHO_MAX + 1];
  char claim[JB_UUID_STRLEN + 28]; /* NS:U.claim id, "" when none */
  uint64_t fence;           /* NS:U.claim fence, 0 when none */
  int64_t pttl_ms;          /* PTTL of the owner key: -1 no expiry, -2 none */
  bool posted;              /* the marker NS:U.posted exists: our post of
                               U ran (within JB__REMOTE_POSTED_TTL_MS) */
  uint64_t posted_sequence; /* the number it was published under, or 0 */
} jb__remote_state;

/* Read that state. Errors: JB_EOFFLINE (still unreachable: try later),
 * JB_EIO, JB_ENOMEM. */
int jb__remote_read(jb__remote_state *st, jb__remote *r, const char *uuid);

/* Who holds a claim, as resolve_claim finds it. */
typedef enum {
  JB__REMOTE_HELD = 1, /* we do: owner key = who and claim record = our id */
  JB__REMOTE_OTHER,    /* someone else (another owner, or `who` under
                          another claim id: not this claim) */
  JB__REMOTE_NOBODY    /* nobody: not listed, or listed and unclaimed */
} jb__remote_holder;

/*
 * Resolve a claim whose reply was lost (or any claim: a holder checking
 * that it still holds one): JB__REMOTE_HELD means the script ran and the
 * claim is ours now (st->fence is its token); OTHER that it is not ours
 * (it did not run, or ran and lapsed and was taken again); NOBODY that
 * nobody holds it (it did not run, or ran and lapsed or was released).
 * Only HELD is a claim to record. Returns the holder (> 0), or a negative
 * code as jb__remote_read. `st` (may be NULL) receives what was read.
 */
int jb__remote_resolve_claim(jb__remote_state *st, jb__remote *r,
                             const char *uuid, const char *who,
                             const char *claim_id);

/*
 * Resolve a release whose reply was lost. Returns 1 if its effect is in
 * Redis (abandon: the claim `claim_id` is gone, or with claim_id NULL or
 * "" the owner key no longer names `who`; consume: the job is gone
 * from the listings and not in the trash; trash: the job is in the trash
 * and not listed), 0 if not: the claim is still ours (HELD: re-sending is
 * safe) or the job is no longer ours to release (see st). A consume or
 * trash resolved 1 may, in one case, have been another holder's: our claim
 * lapsed first and that holder consumed or trashed it; either way the job
 * is done and off the board, which is what the caller records.
 */
int jb__remote_resolve_release(jb__remote_state *st, jb__remote *r,
                               jb__remote_release_op op, const char *uuid,
                               const char *who, const char *claim_id);

/*
 * Resolve a post whose reply was lost: 1 if it ran (the marker exists:
 * st->posted_sequence is the number the job was published under; st->listed
 * and st->trashed say where it is now, neither when it was consumed), 0 if
 * it did not: the script writes the marker with the listing, so no marker
 * means no publication by our post, and re-sending it is safe. Returns a
 * negative code as jb__remote_read. Reliable for JB__REMOTE_POSTED_TTL_MS
 * after the post was sent.
 */
int jb__remote_resolve_post(jb__remote_state *st, jb__remote *r,
                            const char *uuid);

/* ----------------------------------------------- replies, for fuzzing */

/* A script's reply, decoded (what jb__remote_post and the others read). */
typedef struct {
  bool ok;                  /* status "ok" */
  char reason[40];          /* the refusal's reason, cut */
  bool has_sequence, listed;
  uint64_t sequence, fence;
  char owner[JB_WHO_MAX + 1];
  char claim[JB_UUID_STRLEN + 28];
  char holder[JB_UUID_STRLEN + 28]; /* "Unique key held!": the holder */
} jb__remote_reply;

/* Decode script `script`'s reply `r` (one bulk string holding a msgpack
 * map, in any order) into *out. Errors: JB_EIO (not a string, not one
 * map, no status, or a refusal without a reason). The calls above use it;
 * exposed for tests/fuzz/fuzz_redis.c. */
int jb__remote_parse_reply(jb__remote_reply *out, const redisReply *r,
                           const char *script);

/* Take the EXEC reply of jb__remote_read's transaction into *st (which
 * the caller zeroed, pttl_ms -2). Errors: JB_EIO (not the six replies of
 * the reads, or a marker that is not a number). Does not free `e`. */
int jb__remote_read_reply(jb__remote_state *st, const redisReply *e,
                          const char *uuid);

/* A job key as taskflow writes it: 36 bytes of lowercase hyphenated uuid
 * text. (sync/replicator.c) */
bool jb__sync_is_uuid(const char *s, size_t len);

/* The owner named by an owner key's bytes b[0..len), as the board can hold
 * it (see replicator.c). */
void jb__sync_owner_text(char out[JB_WHO_MAX + 1], const char *b,
                         size_t len);

/* A message of the notice channel ("message", channel, "VERB U [n]"):
 * true when it names a job, whose uuid goes to uuid[]; *post and *num
 * tell a post notice's number. (sync/replicator.c) */
bool jb__sync_notice_parse(char uuid[JB_UUID_STRLEN], bool *post,
                           uint64_t *num, const redisReply *m);

/* ------------------------------------------------------- publication */

/* The expiry a claim bound to a process of this host, with no lease, gets
 * in Redis when it is made (the replicator then renews it with its own
 * keepalive_ms, every third of that). */
#define JB_SYNC_KEEPALIVE_MS 30000

/* true when a replicator holds board directory `path`'s lock (its
 * `sync.lock`). (sync/replicator.c) */
bool jb__sync_replicator_runs(const char *path);

/*
 * Post job `uuid` of board `b`, which the caller has marked for publication
 * (jb__board_set_published JB_PUB_PENDING): its posting as stored, with its
 * owner and what is left of its lease when it is claimed; a process-bound
 * claim without a lease goes with keepalive_ms (0: refused, JB_EINVAL).
 * claim_id: the id to publish the claim under; "" makes a new one (written
 * back). A post whose reply was lost is resolved by reading the marker.
 * JB_OK: published (res->again: found published already; res->gone: and
 * no longer listed). Errors: JB_EINVAL (not marked; another posting under
 * this uuid in Redis; the claim above), JB_ENOTFOUND (not on the board),
 * JB_EOFFLINE (not sent, or sent and still unresolved: the job stays
 * marked, and posting again later is safe), JB_EIO, JB_ENOMEM.
 * (sync/attach.c)
 */
int jb__sync_post_marked(jb__remote_result *res, jb__remote *rm, jb_board *b,
                         const char *uuid, int64_t keepalive_ms,
                         char claim_id[JB_UUID_STRLEN]);

/*
 * The publication of job `uuid` was refused because its unique key is held
 * in Redis by another live job (jb__sync_post_marked's JB_EEXISTS, its
 * message still the current one, res->holder the holder): the job goes to
 * the board's dead letters (jb__board_bury_unpublished) with a reason
 * naming the key and the holder, so that nothing is lost and `jobboard
 * dead requeue` brings it back. Returns JB_EEXISTS with a message saying
 * so, JB_ENOTFOUND when the job left the board meanwhile, or the board's
 * error. (sync/attach.c)
 */
int jb__sync_refuse_unique(jb_board *b, const char *uuid,
                           const jb__remote_result *res);

#endif
