-- jobboard sync: the prelude of every script. The library (sync/scripts.h)
-- and the tests put this file in front of each of claim, abandon, consume,
-- trash, extend, post, reserve and cancel when they load it: a script run by
-- EVALSHA cannot call another, so each carries the checks they share.
-- Defines local functions only; writes nothing itself.

-- Redis before 5.0 replicates a script by its text unless told to
-- replicate its effects, and then refuses a write after TIME (which
-- jb_now_ms calls): effects replication, as Redis 5 and later always do.
if redis.replicate_commands then
    redis.replicate_commands()
end

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

-- SET key value, with an expiry of ms milliseconds (false: none) and, when
-- nx, only if the key does not exist: what SET then PEXPIRE would leave,
-- in one call. Returns whether the key was set.
local function jb_set(key, value, ms, nx)
    local done
    if ms and nx then
        done = redis.call("SET", key, value, "PX", ms, "NX")
    elseif ms then
        done = redis.call("SET", key, value, "PX", ms)
    elseif nx then
        done = redis.call("SET", key, value, "NX")
    else
        done = redis.call("SET", key, value)
    end
    return done ~= false
end

-- Make `who` the owner of the job under a new claim: owner key,
-- last_modified, a new fencing token and the claim record {id, fence},
-- the owner key and the record with the same expiry (ms, or false for
-- none). With nx the owner key is set only if it is absent, and nothing
-- at all is written when it is there (returns nil). Returns the fencing
-- token.
--
-- Each redis.call costs the script about a microsecond of server time
-- (docs/BENCHMARKS.md, "A claim through Redis"), so this takes the
-- fewest that leave the same keys: the owner key's expiry goes with its SET,
-- and the record is written over rather than deleted first. HSET tells how
-- many of its fields were new: 2 means no record was there, so none has an
-- expiry to clear; a record left behind (a taskflow release of a claim of ours
-- under the same owner name, or an owner key that lapsed a moment before its
-- record) may have one, which PERSIST clears when the claim has no expiry
-- (with one, PEXPIRE replaces it).
local function jb_take(owner_key, lm_key, claim_key, fence_key, who, lm, ms, claim_id, nx)
    if not jb_set(owner_key, who, ms, nx) then
        return nil
    end
    local fence = redis.call("INCR", fence_key)
    redis.call("SET", lm_key, lm)
    local added = redis.call("HSET", claim_key, "id", claim_id, "fence", fence)
    if ms then
        redis.call("PEXPIRE", claim_key, ms)
    elseif added ~= 2 then
        redis.call("PERSIST", claim_key)
    end
    return fence
end

-- Claim job `job` for `who` under `claim_id`, expiring in ms milliseconds
-- (false: never): claim.lua's body, and claim_many.lua's for each of its
-- jobs, so that a job claimed in a batch is claimed exactly as alone.
-- Returns the reply map, not yet packed (claim.lua's header says what it
-- holds and what is written).
local function jb_claim(owner_key, listings, lm_key, claim_key, fence_key,
                        who, job, lm, ms, claim_id, channel)
    if redis.call("HEXISTS", listings, job) == 0 then
        return {status = "error", reason = "Unknown job!"}
    end
    -- The owner key is set only if it is absent (SET NX): one call both
    -- decides and takes, where GET then SET took two.
    local fence = jb_take(owner_key, lm_key, claim_key, fence_key, who, lm, ms,
                          claim_id, true)
    if fence then
        if channel ~= "" then
            redis.call("PUBLISH", channel, "claim " .. job .. " " .. fence)
        end
        return {status = "ok", claim = claim_id, fence = fence}
    end
    local owner = redis.call("GET", owner_key)
    local reply = {status = "error", reason = "Job already claimed!",
                   owner = owner}
    local held = redis.call("HMGET", claim_key, "id", "fence")
    if held[1] then
        reply.claim = held[1]
        reply.fence = tonumber(held[2])
    end
    if owner == who and held[1] == claim_id then
        redis.call("SET", lm_key, lm)
        if ms then
            redis.call("PEXPIRE", owner_key, ms)
            redis.call("PEXPIRE", claim_key, ms)
        end
    end
    return reply
end

-- Unique keys (ours; taskflow has none): the hash NS:unique maps a unique
-- key to its holder, "<uuid>" once the holder's post ran, "<uuid>
-- <until-ms>" for a reservation of a job posted on a board and not yet
-- published (the replicator publishes it later), or "<uuid> <until-ms> p"
-- for a pending one: made before the board's local post commits, and
-- confirmed (rewritten without the "p", for longer) once it did. A post
-- may die between the two, leaving a pending reservation of a job that
-- exists nowhere: so a pending holder never refuses a post. A reservation
-- meeting one is told to wait ("Unique key pending!": its holder's commit
-- takes moments, and the hold is short), a publication takes the key over.
-- NS:<K>.unique holds job K's unique key, so that whatever takes K out of
-- the listings through our scripts frees the key. A holder is live while
-- it is listed, or while its reservation has not run out (server time);
-- any other holder is stale (taskflow's own scripts consume and trash
-- without knowing of NS:unique) and the key may be taken.
local function jb_now_ms()
    local t = redis.call("TIME")
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The live holder of unique key `key` (a uuid text), or nil; and whether
-- it is only a pending reservation (see above).
local function jb_unique_holder(uniq, listings, key)
    local v = redis.call("HGET", uniq, key)
    if not v then
        return nil
    end
    local holder, till, mark = v:match("^(%S+) (%d+) ?(p?)$")
    if not holder then
        holder = v
    end
    if redis.call("HEXISTS", listings, holder) == 1 then
        return holder, false
    end
    if till and tonumber(till) > jb_now_ms() then
        return holder, mark == "p"
    end
    return nil
end

-- Job `job` leaves the listings: free its unique key if it still names it.
-- A schedule's run (key "schedule:NAME:RUN") is the exception: every board
-- holding the schedule posts its own copy of the run, and a copy published
-- after this one ended (its board's replicator was away) would run the run
-- again. So the run keeps its key for `keep_ms` (the outcome record's
-- lifetime, when the caller gives one) as a reservation that ran out then:
-- a later copy is refused as held, and cancelled on its board. The
-- replicators prune reservations that ran out (jb__remote_unique_prune).
local function jb_unique_free(uniq, job_unique, job, keep_ms)
    if not uniq or not job_unique then
        return
    end
    local key = redis.call("GET", job_unique)
    if not key then
        return
    end
    local v = redis.call("HGET", uniq, key)
    if v and (v == job or v:sub(1, #job + 1) == job .. " ") then
        if keep_ms and key:sub(1, 9) == "schedule:" then
            redis.call("HSET", uniq, key,
                       string.format("%s %d", job, jb_now_ms() + keep_ms))
        else
            redis.call("HDEL", uniq, key)
        end
    end
    redis.call("DEL", job_unique)
end

-- The outcome record NS:<K>.outcome (ours; taskflow's clients never read
-- it): how job K left the listings, for the boards that mirror K (a
-- failure, a result, a dead letter's cause and reason, a cancel: what
-- taskflow's keys cannot say). Its value is the caller's msgpack map,
-- stored as given, for `ms` milliseconds. Deletes the keys `...` and
-- writes the record when one is given; without one, deletes an older
-- record with them (one DEL either way): a uuid requeued and completed
-- again must not be read with its first ending. outcome_key nil (a caller
-- that declares no such key): the keys only.
local function jb_outcome_write(outcome_key, outcome, ms, ...)
    if outcome_key and outcome ~= "" then
        redis.call("DEL", ...)
        redis.call("SET", outcome_key, outcome, "PX", ms)
    elseif outcome_key then
        redis.call("DEL", outcome_key, ...)
    else
        redis.call("DEL", ...)
    end
end
