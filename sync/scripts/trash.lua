-- jobboard sync: trash a claimed job (taskflow's trash contract, plus an
-- optional claim id check). Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_refusal, jb_set, jb_take).
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[4] NS:trash              trash hash (taskflow's)
-- KEYS[5] NS:<K>.claim          claim record (ours)
-- KEYS[6] NS:unique             unique keys -> holder (ours)
-- KEYS[7] NS:<K>.unique         K's unique key (ours)
-- KEYS[8] NS:<K>.outcome        how K ended, for the other boards (ours)
-- ARGV[1] who       the owner name the caller claimed with
-- ARGV[2] K         job key (field in the listings hash)
-- ARGV[3] lm        last-modified value (oslo msgpack datetime, ext type 1)
-- ARGV[4] claim id  the id given to claim.lua, or "" to check the owner name only
-- ARGV[5] channel   notice channel, or "" to publish nothing
-- ARGV[6] outcome   the outcome record (see jb_outcome_write: a dead
--                   letter's cause and reason), or "" for a plain trash
-- ARGV[7] ttl       how long the outcome record lives, in ms
--
-- Reply (msgpack map), checks in this order, an error writes nothing:
--   {status="ok"}                                  the job moved to the trash
--   {status="error", reason="Unknown job!"}
--   {status="error", reason="Unknown owner!"}
--   {status="error", reason="Not expected owner!", owner=<owner>}
--   {status="error", reason="Not expected claim!", owner=<owner>[, claim=<id>]}   (ours)
--   {status="error", reason="Invalid argument!"}   (ours) an outcome without a ttl (checked first)
--
-- Writes, on success: HSET trash K = the posting bytes, verbatim; SET
-- last_modified = lm (kept, as taskflow keeps it); DEL owner key and claim
-- record; HDEL K from the listings hash; its unique key freed (HDEL
-- NS:unique if it names K, or, for a schedule's run, held for ttl more:
-- lib.lua; DEL NS:<K>.unique); the outcome record SET
-- (PX ttl) when given, else deleted; PUBLISH channel "trash <K>". KEYS[8]
-- and ARGV[6..7] may be left out (nothing is written for the outcome).
local owner_key, listings, lm_key, trash_key, claim_key, uniq, job_unique,
    outcome_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6],
    KEYS[7], KEYS[8]
local who, job, lm, claim_id, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local outcome, ttl = ARGV[6] or "", jb_expiry(ARGV[7] or "")
if outcome ~= "" and not ttl then
    return jb_error("Invalid argument!")
end

local refusal = jb_refusal(listings, job, owner_key, claim_key, who, claim_id)
if refusal then
    return refusal
end
local posting = redis.call("HGET", listings, job)

redis.call("HSET", trash_key, job, posting)
redis.call("SET", lm_key, lm)
jb_outcome_write(outcome_key, outcome, ttl, owner_key, claim_key)
redis.call("HDEL", listings, job)
jb_unique_free(uniq, job_unique, job, ttl)
if channel ~= "" then
    redis.call("PUBLISH", channel, "trash " .. job)
end
return cmsgpack.pack({status = "ok"})
