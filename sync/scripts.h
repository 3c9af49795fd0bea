/*
 * scripts.h - our Lua scripts for a taskflow-compatible Redis board
 * (the .lua files of sync/scripts/; docs/DESIGN-NOTES.md, "Redis scripts"). Not API.
 *
 * sync/scripts.c, generated at build time by sync/scripts/embed.sh, holds
 * lib.lua (the shared prelude) once and each operation's .lua file once;
 * what SCRIPT LOAD gets is the two joined (jb__sync_script_text). The
 * operation file's header comment is the contract: KEYS, ARGV, replies and
 * writes. The counts below are how many KEYS and ARGV each script takes;
 * every key and argument is required (pass "" where a script says so), so
 * that the keys are all declared to the server (Redis Cluster: use a
 * namespace with a hash tag, "{ns}").
 *
 * Key names, for a namespace NS and a job key K (the uuid text):
 *   NS:listings, NS:sequence, NS:trash, NS:K.owned, NS:K.last_modified
 *     taskflow's own keys (docs/DESIGN-NOTES.md, "Redis keys and encodings");
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
 * or "error"), "reason" on error, and the entries each script lists;
 * claim_many's is an array of such strings, one per job.
 */
#ifndef JOBBOARD_SYNC_SCRIPTS_H
#define JOBBOARD_SYNC_SCRIPTS_H

#include <stdlib.h>
#include <string.h>

enum {
    JB__SYNC_CLAIM_NKEYS = 5,   JB__SYNC_CLAIM_NARGS = 6,
    JB__SYNC_ABANDON_NKEYS = 4, JB__SYNC_ABANDON_NARGS = 5,
    JB__SYNC_CONSUME_NKEYS = 7, JB__SYNC_CONSUME_NARGS = 6,
    JB__SYNC_TRASH_NKEYS = 8,   JB__SYNC_TRASH_NARGS = 7,
    JB__SYNC_EXTEND_NKEYS = 3,  JB__SYNC_EXTEND_NARGS = 5,
    JB__SYNC_POST_NKEYS = 9,    JB__SYNC_POST_NARGS = 9,
    JB__SYNC_RESERVE_NKEYS = 3, JB__SYNC_RESERVE_NARGS = 4,
    JB__SYNC_CANCEL_NKEYS = 7,  JB__SYNC_CANCEL_NARGS = 5,
    /* claim_many: these, and three keys and two arguments per job */
    JB__SYNC_CLAIM_MANY_NKEYS = 2, JB__SYNC_CLAIM_MANY_NARGS = 4,
    JB__SYNC_SCRIPT_COUNT = 9
};

/* All of them, in the order above, for registering in a loop. */
struct jb__sync_script {
    const char *name;   /* "claim", ... (the .lua file's base name) */
    const char *body;   /* that .lua file, without the prelude */
};
extern const struct jb__sync_script jb__sync_scripts[JB__SYNC_SCRIPT_COUNT];

/* lib.lua, the prelude of every script. */
extern const char jb__sync_script_lib[];

/* The text of script i (jb__sync_scripts order) as SCRIPT LOAD gets it:
 * lib.lua then the operation's file, NUL-terminated; the server's SHA1 is
 * that of `cat lib.lua op.lua`. Joined here, when a connection loads the
 * scripts, so that the library holds the prelude once rather than once per
 * script. Malloc'd (the caller frees it); NULL when out of memory. */
static inline char *jb__sync_script_text(int i) {
    size_t nlib = strlen(jb__sync_script_lib);
    size_t nbody = strlen(jb__sync_scripts[i].body);
    char *text = malloc(nlib + nbody + 1);
    if (text) {
        memcpy(text, jb__sync_script_lib, nlib);
        memcpy(text + nlib, jb__sync_scripts[i].body, nbody + 1);
    }
    return text;
}

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
