-- jobboard sync: claim several jobs for one owner in one call, each as
-- claim.lua claims one (jb_claim: the same checks, writes, fencing token
-- and notice), in the order given. Runs atomically on the server, after
-- lib.lua. One call instead of one per job: a claim-next of many jobs
-- pays one round trip and one script call for all of them.
--
-- KEYS[1] NS:listings           listings hash (taskflow's)
-- KEYS[2] NS:fence              fencing counter (ours)
-- then, for job i = 1..n, three keys from KEYS[3i]:
--   NS:<Ki>.owned, NS:<Ki>.last_modified, NS:<Ki>.claim
-- ARGV[1] who       owner name, non-empty UTF-8
-- ARGV[2] lm        last-modified value: oslo msgpack datetime, ext type 1
-- ARGV[3] expiry    "none" (no expiry) or a positive integer of milliseconds
-- ARGV[4] channel   notice channel (NS:notices), or "" to publish nothing
-- then, for job i, two arguments from ARGV[2i+3]: Ki (its field in the
-- listings hash, the uuid text) and its claim id (non-empty)
--
-- Reply: an array of n bulk strings, string i being claim.lua's reply for
-- job i (a msgpack map: "ok" with claim and fence, "Unknown job!", "Job
-- already claimed!" with the owner), as if claim.lua had run for each job
-- in turn. A bad argument (who, expiry, a claim id, or counts of keys and
-- arguments that do not match) is one msgpack map instead, {status="error",
-- reason="Invalid argument!"}: nothing was read or written.
local who, lm, expiry, channel = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local n = (#KEYS - 2) / 3
local ms = jb_expiry(expiry, true)
if ms == nil or who == "" or n < 1 or n ~= math.floor(n) or
        #ARGV ~= 4 + 2 * n then
    return jb_error("Invalid argument!")
end
for i = 1, n do
    if ARGV[4 + 2 * i] == "" then
        return jb_error("Invalid argument!")
    end
end

local replies = {}
for i = 1, n do
    replies[i] = cmsgpack.pack(jb_claim(KEYS[3 * i], KEYS[1], KEYS[3 * i + 1],
                                        KEYS[3 * i + 2], KEYS[2], who,
                                        ARGV[3 + 2 * i], lm, ms,
                                        ARGV[4 + 2 * i], channel))
end
return replies
