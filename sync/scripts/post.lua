-- jobboard sync: publish a posting, numbered from taskflow's shared counter,
-- optionally already claimed (a job claimed locally before it was published).
-- taskflow posts with two plain commands (INCR, HSETNX); this script does
-- the same writes in one atomic step. Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_refusal, jb_take).
--
-- KEYS[1] NS:listings           listings hash (taskflow's)
-- KEYS[2] NS:sequence           sequence counter (taskflow's)
-- KEYS[3] NS:<K>.owned          owner key (taskflow's)
-- KEYS[4] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[5] NS:<K>.claim          claim record (ours)
-- KEYS[6] NS:fence              fencing counter (ours)
-- ARGV[1] K         job key: the uuid text (lowercase, hyphenated, 36 chars)
-- ARGV[2] posting   the posting without its sequence value: the msgpack map
--                   header, every entry in taskflow's order, then the key
--                   "sequence" (a8 73657175656e6365) as the last bytes. The
--                   script appends the sequence as the smallest msgpack int.
-- ARGV[3] channel   notice channel, or "" to publish nothing
-- ARGV[4] who       "" to post unclaimed, else the owner to post it claimed by
-- ARGV[5] lm        with an owner: last-modified value (oslo datetime ext 1); else ignored
-- ARGV[6] expiry    with an owner: "none" or positive milliseconds; else ignored
-- ARGV[7] claim id  with an owner: non-empty claim id; else ignored
--
-- Reply (msgpack map); all of these are ours (taskflow's post has no reply):
--   {status="ok", sequence=<n>}                    posted (unclaimed)
--   {status="ok", sequence=<n>, claim=<id>, fence=<f>}   posted, claimed by who
--   {status="error", reason="Job already posted!"[, sequence=<n>]}
--       K is already listed; nothing written, no number taken. sequence is
--       given when the listed posting is this one (same bytes up to the
--       sequence): a caller whose reply was lost learns its number.
--   {status="error", reason="Invalid argument!"}   bad K, posting, owner, expiry or claim id
--
-- Writes, on success: INCR NS:sequence; HSETNX listings K = posting ..
-- sequence; with an owner, as claim.lua: SET owner key, SET last_modified,
-- INCR fence, HSET claim record, PEXPIRE both with an expiry; PUBLISH
-- channel "post <K> <n>".
local listings, seq_key, owner_key, lm_key, claim_key, fence_key =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local job, prefix, channel, who, lm, expiry, claim_id =
    ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]

local suffix = "\168sequence"
if job == "" or #prefix <= #suffix or prefix:sub(-#suffix) ~= suffix then
    return jb_error("Invalid argument!")
end
local ms = false
if who ~= "" then
    ms = jb_expiry(expiry, true)
    if ms == nil or claim_id == nil or claim_id == "" or lm == nil or lm == "" then
        return jb_error("Invalid argument!")
    end
end

local listed = redis.call("HGET", listings, job)
if listed then
    local reply = {}
    if #listed > #prefix and listed:sub(1, #prefix) == prefix then
        local ok, n = pcall(cmsgpack.unpack, listed:sub(#prefix + 1))
        if ok and type(n) == "number" then
            reply.sequence = n
        end
    end
    return jb_error("Job already posted!", reply)
end

local seq = redis.call("INCR", seq_key)
redis.call("HSETNX", listings, job, prefix .. cmsgpack.pack(seq))
local reply = {status = "ok", sequence = seq}
if who ~= "" then
    local fence = jb_take(owner_key, lm_key, claim_key, fence_key, who, lm, ms, claim_id)
    reply.claim = claim_id
    reply.fence = fence
end
if channel ~= "" then
    redis.call("PUBLISH", channel, "post " .. job .. " " .. seq)
end
return cmsgpack.pack(reply)
