-- jobboard sync: reserve a unique key for a job about to be posted (ours;
-- taskflow has no unique keys), or give a reservation back. Runs
-- atomically on the server, after lib.lua (jb_unique_holder, jb_now_ms).
--
-- KEYS[1] NS:unique             unique keys -> holder (ours, lib.lua)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.unique         K's unique key (ours)
-- ARGV[1] key       the unique key (1..JB_UNIQUE_MAX bytes)
-- ARGV[2] K         the job's uuid text
-- ARGV[3] hold ms   positive milliseconds: reserve until then (the job is
--                   published before, and its post makes the key its own
--                   for as long as it is listed); "0": give back K's
--                   reservation of key (only if it still names K)
-- ARGV[4] pending   "p": a pending reservation (lib.lua), made before the
--                   local post commits; "" (or absent): a reservation of a
--                   job that exists, which also confirms K's pending one
--
-- Reply (msgpack map):
--   {status="ok"}                                  reserved for K (or K
--       holds it already: listed, or reserved); with "0", given back or
--       not K's
--   {status="error", reason="Unique key held!", holder=<uuid>}
--       another live job holds the key: nothing written
--   {status="error", reason="Unique key pending!", holder=<uuid>}
--       another job's pending reservation holds it: nothing written; ask
--       again (it is confirmed or runs out within its short hold)
--   {status="error", reason="Invalid argument!"}
--
-- Writes, on a reservation: HSET NS:unique key = "K <until-ms>" (server
-- time; "K <until-ms> p" pending) unless K is listed under it already; SET NS:<K>.unique = key PX
-- hold ms. On a give-back: HDEL NS:unique key and DEL NS:<K>.unique when
-- the reservation is K's and K is not listed.
local uniq, listings, job_unique = KEYS[1], KEYS[2], KEYS[3]
local key, job, hold, mark = ARGV[1], ARGV[2], ARGV[3], ARGV[4] or ""

if key == nil or key == "" or job == nil or job == "" or
        type(hold) ~= "string" or not hold:match("^%d+$") or
        (mark ~= "" and mark ~= "p") then
    return jb_error("Invalid argument!")
end
local ms = tonumber(hold)

if ms == 0 then
    local v = redis.call("HGET", uniq, key)
    if v and v:sub(1, #job + 1) == job .. " " and
            redis.call("HEXISTS", listings, job) == 0 then
        redis.call("HDEL", uniq, key)
        redis.call("DEL", job_unique)
    end
    return cmsgpack.pack({status = "ok"})
end

local holder, pending = jb_unique_holder(uniq, listings, key)
if holder and holder ~= job then
    if pending then
        return jb_error("Unique key pending!", {holder = holder})
    end
    return jb_error("Unique key held!", {holder = holder})
end
if holder == job and redis.call("HEXISTS", listings, job) == 1 then
    return cmsgpack.pack({status = "ok"})
end
local suffix = ""
if mark == "p" then
    suffix = " p"
end
redis.call("HSET", uniq, key,
           string.format("%s %d%s", job, jb_now_ms() + ms, suffix))
redis.call("SET", job_unique, key, "PX", ms)
return cmsgpack.pack({status = "ok"})
