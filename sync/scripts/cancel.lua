-- jobboard sync: cancel a job (ours; taskflow has no cancel): it leaves the
-- listings as a consumed job does, so taskflow's readers see it COMPLETE.
-- Runs atomically on the server, after lib.lua (jb_error, jb_unique_free).
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[4] NS:<K>.claim          claim record (ours)
-- KEYS[5] NS:unique             unique keys -> holder (ours)
-- KEYS[6] NS:<K>.unique         K's unique key (ours)
-- ARGV[1] K         job key (field in the listings hash)
-- ARGV[2] force     "1": cancel it even when claimed; "": only unclaimed
-- ARGV[3] channel   notice channel, or "" to publish nothing
--
-- Reply (msgpack map), checks in this order, an error writes nothing:
--   {status="ok"[, owner=<owner>]}                 gone from Redis (owner:
--       the holder whose claim a forced cancel removed)
--   {status="error", reason="Unknown job!"}        K is not listed
--   {status="error", reason="Job already claimed!", owner=<owner>}
--       claimed, and not forced
--
-- Writes, on success: DEL owner key, last_modified and claim record; HDEL K
-- from the listings hash (the owner key goes first, with the others, as
-- taskflow's consume does); its unique key freed; PUBLISH channel
-- "cancel <K>". A forced-off holder's consume, trash, abandon or extend is
-- then refused ("Unknown job!").
local owner_key, listings, lm_key, claim_key, uniq, job_unique =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local job, force, channel = ARGV[1], ARGV[2], ARGV[3]

if redis.call("HEXISTS", listings, job) == 0 then
    return jb_error("Unknown job!")
end
local owner = redis.call("GET", owner_key)
if owner and force ~= "1" then
    return jb_error("Job already claimed!", {owner = owner})
end
redis.call("DEL", owner_key, lm_key, claim_key)
redis.call("HDEL", listings, job)
jb_unique_free(uniq, job_unique, job)
if channel ~= "" then
    redis.call("PUBLISH", channel, "cancel " .. job)
end
local reply = {status = "ok"}
if owner then
    reply.owner = owner
end
return cmsgpack.pack(reply)
