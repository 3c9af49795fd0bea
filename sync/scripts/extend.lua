-- jobboard sync: extend (or shorten) a claim's expiry, for its owner only.
-- taskflow has no script for this (its extend is a bare PEXPIRE that anyone
-- may send); ours checks the owner and the claim id. Runs atomically.
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.claim          claim record (ours)
-- ARGV[1] who       the owner name the caller claimed with
-- ARGV[2] K         job key (field in the listings hash)
-- ARGV[3] expiry    a positive integer of milliseconds from now
-- ARGV[4] claim id  the id given to claim.lua, or "" to check the owner name only
-- ARGV[5] channel   notice channel, or "" to publish nothing
--
-- Reply (msgpack map), checks in this order, an error writes nothing:
--   {status="ok"}                                  the owner key now expires in ARGV[3] ms
--   {status="error", reason="Invalid argument!"}   (ours) expiry not a positive integer
--   {status="error", reason="Unknown job!"}
--   {status="error", reason="Unknown owner!"}       no claim (or it lapsed: too late to extend)
--   {status="error", reason="Not expected owner!", owner=<owner>}
--   {status="error", reason="Not expected claim!", owner=<owner>[, claim=<id>]}   (ours)
--
-- Writes, on success: PEXPIRE owner key and claim record by ARGV[3] ms
-- (last_modified is not touched, as with taskflow's extend); PUBLISH
-- channel "extend <K> <ms>".
local owner_key, listings, claim_key = KEYS[1], KEYS[2], KEYS[3]
local who, job, expiry, claim_id, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local ms = jb_expiry(expiry, false)
if not ms then
    return jb_error("Invalid argument!")
end
local refusal = jb_refusal(listings, job, owner_key, claim_key, who, claim_id)
if refusal then
    return refusal
end

redis.call("PEXPIRE", owner_key, ms)
redis.call("PEXPIRE", claim_key, ms)
if channel ~= "" then
    redis.call("PUBLISH", channel, "extend " .. job .. " " .. expiry)
end
return cmsgpack.pack({status = "ok"})
