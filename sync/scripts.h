/*
 * scripts.h - our Lua scripts for a taskflow-compatible Redis board
 * (the .lua files of sync/scripts/; docs/DESIGN-NOTES.md, "Redis scripts"). Not API.
 *
 * Each string is lib.lua (the shared prelude) then the operation's .lua
 * file, NUL-terminated, ready for SCRIPT LOAD / EVALSHA. The operation
 * file's header comment is the contract: KEYS, ARGV, replies and writes. The counts below are how many KEYS and ARGV
 * each script takes; every key and argument is required (pass "" where a
 * script says so), so that the keys are all declared to the server (Redis
 * Cluster: use a namespace with a hash tag, "{ns}").
 *
 * Key names, for a namespace NS and a job key K (the uuid text):
 *   NS:listings, NS:sequence, NS:trash, NS:K.owned, NS:K.last_modified
 *     taskflow's own keys (../shared/taskflow-redis-wire.md);
 *   NS:K.claim   ours: hash {id, fence} of the claim taken through claim.lua
 *                or post.lua; it has the owner key's expiry;
 *   NS:fence     ours: the fencing counter (INCR once per claim);
 *   NS:K.posted  ours: the sequence K was published under, written by
 *                post.lua with a long expiry (30 days from our client) and
 *                deleted by no script: a uuid is posted at most once;
 *   NS:unique    ours: hash, unique key -> holder uuid ("<uuid>" once
 *                published, "<uuid> <until-ms>" while only reserved,
 *                "<uuid> <until-ms> p" while pending: before the board's
 *                local post committed);
 *                see lib.lua;
 *   NS:K.unique  ours: job K's unique key (with the reservation's expiry
 *                until K is published; freed by consume, trash, cancel);
 *   NS:K.outcome ours: how K left the listings when that is more than a
 *                plain consume or trash (failed, a result, a dead letter's
 *                cause and reason, cancelled): a msgpack map written by
 *                consume, trash or cancel with an expiry (7 days from our
 *                client), so that every board mirroring K records the same
 *                ending (remote.h, jb__remote_outcome);
 *   NS:notices   ours: the pub/sub channel of change notices (not a key).
 * With no namespace there is no "NS:" prefix.
 *
 * Every reply is one bulk string holding a msgpack map with "status" ("ok"
 * or "error"), "reason" on error, and the entries each script lists.
 */
#ifndef JOBBOARD_SYNC_SCRIPTS_H
#define JOBBOARD_SYNC_SCRIPTS_H

extern const char jb__sync_script_claim[];
extern const char jb__sync_script_abandon[];
extern const char jb__sync_script_consume[];
extern const char jb__sync_script_trash[];
extern const char jb__sync_script_extend[];
extern const char jb__sync_script_post[];
extern const char jb__sync_script_reserve[];
extern const char jb__sync_script_cancel[];

enum {
    JB__SYNC_CLAIM_NKEYS = 5,   JB__SYNC_CLAIM_NARGS = 6,
    JB__SYNC_ABANDON_NKEYS = 4, JB__SYNC_ABANDON_NARGS = 5,
    JB__SYNC_CONSUME_NKEYS = 7, JB__SYNC_CONSUME_NARGS = 6,
    JB__SYNC_TRASH_NKEYS = 8,   JB__SYNC_TRASH_NARGS = 7,
    JB__SYNC_EXTEND_NKEYS = 3,  JB__SYNC_EXTEND_NARGS = 5,
    JB__SYNC_POST_NKEYS = 9,    JB__SYNC_POST_NARGS = 9,
    JB__SYNC_RESERVE_NKEYS = 3, JB__SYNC_RESERVE_NARGS = 4,
    JB__SYNC_CANCEL_NKEYS = 7,  JB__SYNC_CANCEL_NARGS = 5,
    JB__SYNC_SCRIPT_COUNT = 8
};

/* All of them, in the order above, for registering in a loop. */
struct jb__sync_script {
    const char *name;   /* "claim", ... (the .lua file's base name) */
    const char *source;
};
extern const struct jb__sync_script jb__sync_scripts[JB__SYNC_SCRIPT_COUNT];

/* The reason strings of the replies: taskflow's four, then ours. */
#define JB__SYNC_UNKNOWN_JOB "Unknown job!"
#define JB__SYNC_UNKNOWN_OWNER "Unknown owner!"
#define JB__SYNC_NOT_EXPECTED_OWNER "Not expected owner!"
#define JB__SYNC_ALREADY_CLAIMED "Job already claimed!"
#define JB__SYNC_NOT_EXPECTED_CLAIM "Not expected claim!"
#define JB__SYNC_ALREADY_POSTED "Job already posted!"
#define JB__SYNC_INVALID_ARGUMENT "Invalid argument!"
#define JB__SYNC_UNIQUE_HELD "Unique key held!"
#define JB__SYNC_UNIQUE_PENDING "Unique key pending!"

#endif
