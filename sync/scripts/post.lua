-- jobboard sync: publish a posting, numbered from taskflow's shared counter,
-- optionally already claimed (a job claimed locally before it was published).
-- taskflow posts with two plain commands (INCR, HSETNX); this script does
-- the same writes in one atomic step. Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_refusal, jb_set, jb_take).
--
-- KEYS[1] NS:listings           listings hash (taskflow's)
-- KEYS[2] NS:sequence           sequence counter (taskflow's)
-- KEYS[3] NS:<K>.owned          owner key (taskflow's)
-- KEYS[4] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[5] NS:<K>.claim          claim record (ours)
-- KEYS[6] NS:fence              fencing counter (ours)
-- KEYS[7] NS:<K>.posted         publication marker (ours)
-- KEYS[8] NS:unique             unique keys -> holder (ours, lib.lua)
-- KEYS[9] NS:<K>.unique         K's unique key (ours)
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
-- ARGV[8] marker ms lifetime of the publication marker: positive milliseconds
--                   (our client sends 30 days, JB__REMOTE_POSTED_TTL_MS)
-- ARGV[9] unique    the job's unique key, or "" for none
--
-- The marker NS:<K>.posted holds the sequence K was published under (decimal
-- text) for ARGV[8] ms. No script deletes it (consume, abandon and trash
-- leave it; taskflow never reads it), so while it lasts a uuid is published
-- at most once, even after the job was consumed and left nothing else.
--
-- Reply (msgpack map); all of these are ours (taskflow's post has no reply):
--   {status="ok", sequence=<n>}                    posted (unclaimed)
--   {status="ok", sequence=<n>, claim=<id>, fence=<f>}   posted, claimed by who
--   {status="error", reason="Job already posted!", listed=<bool>[, sequence=<n>]}
--       K is listed, or its marker exists; nothing written, no number
--       taken. listed: whether K is in the listings hash now. sequence is
--       the number this posting was published under: given when K is
--       listed with the same bytes (up to the sequence), or when K is not
--       listed but its marker exists (uuids are one job's: a marker is this
--       job's publication, since consumed or trashed); not given when K is
--       listed with other bytes (another posting under that uuid). A
--       caller whose reply was lost learns its number either way.
--   {status="error", reason="Unique key held!", holder=<uuid>}
--       ARGV[9] is held by another live job (listed, or reserved and the
--       reservation not run out; a pending reservation does not count):
--       nothing written, no number taken.
--   {status="error", reason="Invalid argument!"}   bad K, posting, owner,
--       expiry, claim id or marker ms
--
-- Writes, on success: INCR NS:sequence; HSETNX listings K = posting ..
-- sequence; SET marker = sequence PX ARGV[8]; with an owner, as claim.lua
-- (jb_take, without NX): SET owner key (PX with an expiry), INCR fence,
-- SET last_modified, HSET claim record (PEXPIRE or PERSIST it as there);
-- with a unique key, HSET NS:unique key = K and SET NS:<K>.unique = key
-- (no expiry: the holder is live while listed); PUBLISH channel
-- "post <K> <n>".
local listings, seq_key, owner_key, lm_key, claim_key, fence_key, marker_key =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local uniq, job_unique = KEYS[8], KEYS[9]
local job, prefix, channel, who, lm, expiry, claim_id, marker_ms =
    ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local unique = ARGV[9] or ""

local suffix = "\168sequence"
marker_ms = jb_expiry(marker_ms, false)
if job == "" or #prefix <= #suffix or prefix:sub(-#suffix) ~= suffix
        or not marker_ms then
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
local marker = redis.call("GET", marker_key)
if listed then
    local reply = {listed = true}
    if #listed > #prefix and listed:sub(1, #prefix) == prefix then
        local ok, n = pcall(cmsgpack.unpack, listed:sub(#prefix + 1))
        if ok and type(n) == "number" then
            reply.sequence = n
        end
    end
    return jb_error("Job already posted!", reply)
end
if marker then
    return jb_error("Job already posted!",
                    {listed = false, sequence = tonumber(marker)})
end

if unique ~= "" then
    -- A pending reservation is taken over: its post may have died before
    -- its commit, and this job exists (its own confirmation then finds
    -- the key held, and its publication decides).
    local holder, pending = jb_unique_holder(uniq, listings, unique)
    if holder and holder ~= job and not pending then
        return jb_error("Unique key held!", {holder = holder})
    end
end

local seq = redis.call("INCR", seq_key)
redis.call("HSETNX", listings, job, prefix .. cmsgpack.pack(seq))
jb_set(marker_key, string.format("%d", seq), marker_ms, false)
if unique ~= "" then
    redis.call("HSET", uniq, unique, job)
    redis.call("SET", job_unique, unique)
end
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
