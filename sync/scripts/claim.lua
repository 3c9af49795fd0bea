-- jobboard sync: claim one job (taskflow's claim contract, plus a claim id
-- and a fencing token). Runs atomically on the server,
-- after lib.lua (jb_expiry, jb_error, jb_claim and what it calls).
--
-- KEYS[1] NS:<K>.owned          owner key (taskflow's)
-- KEYS[2] NS:listings           listings hash (taskflow's)
-- KEYS[3] NS:<K>.last_modified  last-modified key (taskflow's)
-- KEYS[4] NS:<K>.claim          claim record, a hash (ours; taskflow never reads it)
-- KEYS[5] NS:fence              fencing counter (ours)
-- ARGV[1] who       owner name, non-empty UTF-8 (stored raw in the owner key)
-- ARGV[2] K         job key: the field in the listings hash (the uuid text)
-- ARGV[3] lm        last-modified value: oslo msgpack datetime, ext type 1
-- ARGV[4] expiry    "none" (no expiry) or a positive integer of milliseconds
-- ARGV[5] claim id  non-empty opaque bytes chosen by the caller (a uuid)
-- ARGV[6] channel   notice channel (NS:notices), or "" to publish nothing
--
-- Reply: one msgpack map, as taskflow's scripts reply, with our extra entries:
--   {status="ok", claim=<ARGV[5]>, fence=<n>}
--       the job was listed and unowned; it is now ours.
--   {status="error", reason="Unknown job!"}
--       K is not in the listings hash (consumed, trashed or never posted).
--   {status="error", reason="Job already claimed!", owner=<owner>[, claim=<id>, fence=<n>]}
--       someone holds it. When owner == who this is a re-claim by the same
--       owner name (taskflow 5.0 replies the same way). Taskflow then
--       refreshes last_modified and the expiry; here only the same claim
--       (the held claim id is ARGV[5]: a caller whose reply was lost sends
--       its claim again) refreshes last_modified and, if ARGV[4] is a
--       number, the expiry (of the claim record too; "none" keeps it). A
--       worker's names outlive its processes: a new process under the old
--       one's name, trying the job the old one held when it died, must not
--       keep that claim alive for ever. claim/fence are the holder's, when
--       the holder claimed through these scripts.
--   {status="error", reason="Invalid argument!"}   (ours) bad who, expiry or claim id;
--       nothing was read or written.
--
-- Writes, on success: SET owner key = who (NX, with PX for an expiry);
-- INCR the fencing counter; SET last_modified = lm; HSET claim record
-- id=<claim id> fence=<n>, then PEXPIRE it by the owner key's
-- milliseconds (or PERSIST it, when it was there before and the claim has
-- no expiry); PUBLISH channel "claim <K> <fence>". Server calls: six
-- without an expiry, seven with one (docs/DESIGN-NOTES.md, "A claim
-- through Redis").
local owner_key, listings, lm_key, claim_key, fence_key =
    KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local who, job, lm, expiry, claim_id, channel =
    ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

local ms = jb_expiry(expiry, true)
if ms == nil or who == "" or claim_id == "" then
    return jb_error("Invalid argument!")
end

return cmsgpack.pack(jb_claim(owner_key, listings, lm_key, claim_key, fence_key,
                              who, job, lm, ms, claim_id, channel))
