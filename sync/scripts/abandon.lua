-- jobboard sync: abandon a claim (taskflow's abandon contract, plus an
-- optional claim id check). Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_refusal, jb_set, jb_take).
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[4] NS:<K>.claim          claim record (ours)
-- ARGV[1] who       the owner name the caller claimed with
-- ARGV[2] K         job key (field in the listings hash)
-- ARGV[3] lm        last-modified value (oslo msgpack datetime, ext type 1)
-- ARGV[4] claim id  the id given to claim.lua, or "" to check the owner name only
-- ARGV[5] channel   notice channel, or "" to publish nothing
--
-- Reply (msgpack map):
--   {status="ok"}                                  the claim is gone; the job is unclaimed
--   {status="error", reason="Unknown job!"}         K is not listed
--   {status="error", reason="Unknown owner!"}       nobody holds K (never claimed, abandoned, lapsed)
--   {status="error", reason="Not expected owner!", owner=<owner>}
--                                                  someone else holds K
--   {status="error", reason="Not expected claim!", owner=<owner>[, claim=<id>]}   (ours)
--       the owner name matches but the claim is not the caller's (a newer
--       claim under the same name, or one taken through taskflow's scripts)
-- The checks run in that order; an error writes nothing.
--
-- Writes, on success: DEL owner key and claim record; SET last_modified = lm;
-- PUBLISH channel "abandon <K>".
local owner_key, listings, lm_key, claim_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local who, job, lm, claim_id, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local refusal = jb_refusal(listings, job, owner_key, claim_key, who, claim_id)
if refusal then
    return refusal
end

redis.call("DEL", owner_key, claim_key)
redis.call("SET", lm_key, lm)
if channel ~= "" then
    redis.call("PUBLISH", channel, "abandon " .. job)
end
return cmsgpack.pack({status = "ok"})
