-- jobboard sync: the prelude of every script. embed.sh (and the tests) put
-- this file in front of each of claim, abandon, consume, trash, extend and
-- post: a script run by EVALSHA cannot call another, so each carries the
-- checks they share. Defines local functions only; writes nothing itself.

-- The expiry argument: "none" gives false (no expiry), a positive integer
-- of milliseconds gives that number, anything else nil (invalid).
local function jb_expiry(text, allow_none)
    if allow_none and text == "none" then
        return false
    end
    if type(text) ~= "string" or not text:match("^%d+$") then
        return nil
    end
    local ms = tonumber(text)
    if not ms or ms <= 0 then
        return nil
    end
    return ms
end

local function jb_error(reason, extra)
    local reply = extra or {}
    reply.status = "error"
    reply.reason = reason
    return cmsgpack.pack(reply)
end

-- Whether `who` may act on the claim of job `job`: nil if it may, else the
-- error reply. The checks, in taskflow's order: listed ("Unknown job!"),
-- claimed ("Unknown owner!"), by who ("Not expected owner!", with the
-- owner); then ours: when claim_id is not "", the claim record's id is
-- claim_id ("Not expected claim!", with the owner and the held id).
local function jb_refusal(listings, job, owner_key, claim_key, who, claim_id)
    if redis.call("HEXISTS", listings, job) == 0 then
        return jb_error("Unknown job!")
    end
    local owner = redis.call("GET", owner_key)
    if not owner then
        return jb_error("Unknown owner!")
    end
    if owner ~= who then
        return jb_error("Not expected owner!", {owner = owner})
    end
    if claim_id ~= "" then
        local held = redis.call("HGET", claim_key, "id")
        if held ~= claim_id then
            return jb_error("Not expected claim!", {owner = owner, claim = held or nil})
        end
    end
    return nil
end

-- Make `who` the owner of an unowned job under a new claim: owner key,
-- last_modified, a new fencing token and the claim record {id, fence},
-- the owner key and the record with the same expiry (ms, or false for
-- none). Returns the fencing token.
local function jb_take(owner_key, lm_key, claim_key, fence_key, who, lm, ms, claim_id)
    local fence = redis.call("INCR", fence_key)
    redis.call("SET", owner_key, who)
    redis.call("SET", lm_key, lm)
    redis.call("DEL", claim_key)
    redis.call("HSET", claim_key, "id", claim_id, "fence", fence)
    if ms then
        redis.call("PEXPIRE", owner_key, ms)
        redis.call("PEXPIRE", claim_key, ms)
    end
    return fence
end
