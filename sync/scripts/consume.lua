-- jobboard sync: consume a claimed job (taskflow's consume contract, plus an
-- optional claim id check). Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_refusal, jb_set, jb_take).
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[4] NS:<K>.claim          claim record (ours)
-- KEYS[5] NS:unique             unique keys -> holder (ours)
-- KEYS[6] NS:<K>.unique         K's unique key (ours)
-- KEYS[7] NS:<K>.outcome        how K ended, for the other boards (ours)
-- ARGV[1] who       the owner name the caller claimed with
-- ARGV[2] K         job key (field in the listings hash)
-- ARGV[3] claim id  the id given to claim.lua, or "" to check the owner name only
-- ARGV[4] channel   notice channel, or "" to publish nothing
-- ARGV[5] outcome   the outcome record (a msgpack map made by the caller,
--                   see jb_outcome_write), or "" for a plain consume
-- ARGV[6] ttl       how long the outcome record lives, in ms
--
-- Reply (msgpack map), checks in this order, an error writes nothing:
--   {status="ok"}                                  the job is gone from Redis
--   {status="error", reason="Unknown job!"}
--   {status="error", reason="Unknown owner!"}
--   {status="error", reason="Not expected owner!", owner=<owner>}
--   {status="error", reason="Not expected claim!", owner=<owner>[, claim=<id>]}   (ours)
--   {status="error", reason="Invalid argument!"}   (ours) an outcome without a ttl (checked first)
--
-- Writes, on success: DEL owner key, last_modified and claim record; HDEL K
-- from the listings hash (nothing of taskflow's keys is left, as with
-- taskflow); its unique key freed (HDEL NS:unique if it names K, or, for
-- a schedule's run, held for ttl more: lib.lua; DEL NS:<K>.unique); the
-- outcome record SET (PX ttl) when given, else
-- deleted with the owner key (a requeued uuid's older record must not
-- speak for this consume); PUBLISH channel "consume <K>". KEYS[7] and
-- ARGV[5..6] may be left out (a caller of the first version: nothing is
-- written for the outcome).
local owner_key, listings, lm_key, claim_key, uniq, job_unique, outcome_key =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local who, job, claim_id, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local outcome, ttl = ARGV[5] or "", jb_expiry(ARGV[6] or "")
if outcome ~= "" and not ttl then
    return jb_error("Invalid argument!")
end

local refusal = jb_refusal(listings, job, owner_key, claim_key, who, claim_id)
if refusal then
    return refusal
end

-- The owner key goes first (with the others), the listing after: never a
-- listing without its owner key gone, as taskflow's readers expect.
jb_outcome_write(outcome_key, outcome, ttl, owner_key, lm_key, claim_key)
redis.call("HDEL", listings, job)
jb_unique_free(uniq, job_unique, job, ttl)
if channel ~= "" then
    redis.call("PUBLISH", channel, "consume " .. job)
end
return cmsgpack.pack({status = "ok"})
