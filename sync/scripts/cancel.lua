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
-- KEYS[7] NS:<K>.outcome        how K ended, for the other boards (ours)
-- ARGV[1] K         job key (field in the listings hash)
-- ARGV[2] force     "1": cancel it even when claimed; "": only unclaimed
-- ARGV[3] channel   notice channel, or "" to publish nothing
-- ARGV[4] outcome   the outcome record (see jb_outcome_write: "cancelled"),
--                   or "" for none
-- ARGV[5] ttl       how long the outcome record lives, in ms
--
-- Reply (msgpack map), checks in this order, an error writes nothing:
--   {status="ok"[, owner=<owner>]}                 gone from Redis (owner:
--       the holder whose claim a forced cancel removed)
--   {status="error", reason="Unknown job!"}        K is not listed
--   {status="error", reason="Job already claimed!", owner=<owner>}
--       claimed, and not forced
--   {status="error", reason="Invalid argument!"}   an outcome without a ttl (checked first)
--
-- Writes, on success: DEL owner key, last_modified and claim record; HDEL K
-- from the listings hash (the owner key goes first, with the others, as
-- taskflow's consume does); its unique key freed (a schedule's run's held
-- for ttl more: lib.lua); the outcome record SET
-- (PX ttl) when given, else deleted; PUBLISH channel "cancel <K>".
-- KEYS[7] and ARGV[4..5] may be left out (nothing written for the outcome). A forced-off holder's consume, trash, abandon or extend is
-- then refused ("Unknown job!").
local owner_key, listings, lm_key, claim_key, uniq, job_unique, outcome_key =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local job, force, channel = ARGV[1], ARGV[2], ARGV[3]
local outcome, ttl = ARGV[4] or "", jb_expiry(ARGV[5] or "")
if outcome ~= "" and not ttl then
    return jb_error("Invalid argument!")
end

if redis.call("HEXISTS", listings, job) == 0 then
    return jb_error("Unknown job!")
end
local owner = redis.call("GET", owner_key)
if owner and force ~= "1" then
    return jb_error("Job already claimed!", {owner = owner})
end
jb_outcome_write(outcome_key, outcome, ttl, owner_key, lm_key, claim_key)
redis.call("HDEL", listings, job)
jb_unique_free(uniq, job_unique, job, ttl)
if channel ~= "" then
    redis.call("PUBLISH", channel, "cancel " .. job)
end
local reply = {status = "ok"}
if owner then
    reply.owner = owner
end
return cmsgpack.pack(reply)
