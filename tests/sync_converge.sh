#!/bin/bash
# tests/sync_converge.sh - a mirror that never diverges: boards synced with one
# redis-server of the test's own and taskflow 5.0's own client beside them.
#
#  1. order: taskflow posts 8 jobs in one burst (its postings are larger
#     than Redis's listpack limit, so HGETALL returns them in hash order);
#     the mirrored board lists them and claim-next hands them out oldest
#     first (Redis's NS:sequence), and a job pulled later but posted
#     earlier sorts before the newer ones;
#  2. Redis killed and restarted empty under boards A and B (A's replicator
#     reconnects first, B's is held back): A takes B's job and taskflow's
#     job off as "lost" (history), never "consumed"; B then publishes its
#     job again and A brings it back, with no post or restart to trigger
#     it; both boards list exactly what Redis lists;
#  3. a namespace wiped while the replicator stays connected, its
#     NS:sequence set back to the value last read and a new job listed, in
#     one atomic step: the board drops the old job (lost) and lists the
#     new one within a few polls, with no post;
#  4. `status --verify` exits 10 naming a job Redis lists and the board
#     does not (a listing written behind the replicators' backs, which no
#     poll sees), the replicator's comparison on schedule repairs it and
#     `status` counts it, and --verify then exits 0.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/A
B=$ROOT/B
C=$ROOT/C

# uuids of board DIR in listing order, one per line.
board_uuids() {
  "$JOBBOARD" list --board "$1" --json |
    "$PY" -c 'import json,sys
for l in sys.stdin: print(json.loads(l)["uuid"])'
}
# The uuids Redis lists in namespace NS, sorted.
redis_uuids() { rcli hkeys "${1:-$NS}:listings" | sort; }
same_as_redis() { # same_as_redis DIR: the board lists what Redis lists
  [ "$(board_uuids "$1" | sort)" = "$(redis_uuids)" ]
}
# history_end DIR UUID: the newest history outcome of UUID ("" if none).
history_end() {
  "$JOBBOARD" history --board "$1" --json |
    "$PY" -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l)
    if r["uuid"] == sys.argv[1]:
        print(r["outcome"]); break' "$2"
}
# claimable_by DIR UUID: claim the job and give it back.
claimable_by() {
  "$JOBBOARD" claim --board "$1" --who probe "$2" >/dev/null 2>&1 &&
    "$JOBBOARD" abandon --board "$1" --who probe "$2" >/dev/null 2>&1
}
# hidden_listing NAME: taskflow posts a job in namespace NS-other, and its
# listing is copied into NS behind the replicators' backs (no sequence
# moved, no notice): only a comparison in full can find it. Its uuid is
# printed.
hidden_listing() {
  "$PY" "$PEER" post "$SOCK" "$NS-other" 1 "$ROOT/$1" 100 0 >&2 ||
    die "taskflow post"
  "$PY" - "$SOCK" "$NS" "$(cat "$ROOT/$1")" <<'EOF' || die "cannot copy the listing"
import sys, redis
sock, ns, u = sys.argv[1:]
r = redis.Redis(unix_socket_path=sock)
r.hset(ns + ":listings", u, r.hget(ns + "-other:listings", u))
EOF
  cat "$ROOT/$1"
}
status_field() { # status_field DIR FIELD: one field of status --json
  "$JOBBOARD" status --board "$1" --json |
    "$PY" -c 'import json,sys; v = json.load(sys.stdin)[sys.argv[1]]
print("null" if v is None else v)' "$2"
}

redis_start

# ------------------------------------------------------------- 1. order
note "1. order: taskflow posts 8 jobs in one burst"
new_board "$A"
sync_start "$A" A --poll 0.3
"$PY" "$PEER" post "$SOCK" "$NS" 8 "$ROOT/burst" 100 0 ||
  die "taskflow could not post"
wait_until 10 "board A pulls taskflow's 8 jobs" \
  eval '[ "$(count "$A")" = 8 ]'
if [ "$(board_uuids "$A")" = "$(cat "$ROOT/burst")" ]; then
  note "   A lists them in posting order"
else
  fail "A lists taskflow's burst out of posting order:" \
    "$(board_uuids "$A" | tr '\n' ' ') posted as $(tr '\n' ' ' <"$ROOT/burst")"
fi
: >"$ROOT/claimed"
for i in 1 2 3 4 5 6 7 8; do
  "$JOBBOARD" claim-next --board "$A" --who w >>"$ROOT/claimed" 2>>"$ROOT/err" ||
    fail "claim-next $i on A failed: $(tail -1 "$ROOT/err")"
done
if [ "$(cat "$ROOT/claimed")" = "$(cat "$ROOT/burst")" ]; then
  note "   claim-next on A hands them out oldest first"
else
  fail "claim-next on A hands taskflow's burst out of posting order:" \
    "$(tr '\n' ' ' <"$ROOT/claimed")"
fi
for u in $(cat "$ROOT/claimed"); do
  "$JOBBOARD" consume --board "$A" --who w "$u" || fail "consume $u on A"
done

# A job pulled later but posted earlier: taskflow posts E (no notice), then
# board C publishes L (a notice: A pulls L at once). A polls only every
# 30 s and compares in full only at connect, so E comes in later, at its
# next comparison (a restart here): it must still list before L.
sync_stop A
sync_start "$A" A --poll 30 --verify-every 0
wait_until 10 "A is connected" \
  eval '[ "$(status_field "$A" connected)" = True ]'
new_board "$C"
sync_start "$C" C --poll 30 --verify-every 0
"$PY" "$PEER" post "$SOCK" "$NS" 1 "$ROOT/early" 100 0 || die "taskflow post"
E=$(cat "$ROOT/early")
L=$("$JOBBOARD" post --board "$C" --durability none later) || die "post on C"
wait_until 10 "A pulls C's job L through its notice" on_board "$A" "$L"
on_board "$A" "$E" && fail "A pulled E before L (the case is void)"
sync_stop A
sync_start "$A" A --poll 0.3
wait_until 10 "A pulls E" on_board "$A" "$E"
if [ "$(board_uuids "$A" | tr '\n' ' ')" = "$E $L " ]; then
  note "   E, pulled after L but posted before it, lists first"
else
  fail "A lists $(board_uuids "$A" | tr '\n' ' '), expected E ($E) then L ($L)"
fi
u=$("$JOBBOARD" claim-next --board "$A" --who w) || fail "claim-next on A"
[ "$u" = "$E" ] || fail "claim-next on A took $u before E ($E)"
for u in "$E" "$L"; do
  "$JOBBOARD" claim --board "$A" --who w "$u" >/dev/null 2>&1
  "$JOBBOARD" consume --board "$A" --who w "$u" || fail "run $u on A"
done
sync_stop C

# ---------------------------------------------------- 2. redis data loss
note "2. redis killed and restarted empty under boards A and B"
new_board "$B"
sync_start "$B" B --poll 0.3
JB_JOB=$("$JOBBOARD" post --board "$B" --durability none "posted-on-B") ||
  die "post on B"
"$PY" "$PEER" post "$SOCK" "$NS" 1 "$ROOT/tf" 100 0 || die "taskflow post"
TF_JOB=$(cat "$ROOT/tf")
wait_until 10 "B's job and taskflow's reach A" \
  eval 'on_board "$A" "$JB_JOB" && on_board "$A" "$TF_JOB"'
wait_until 10 "taskflow's job reaches B" on_board "$B" "$TF_JOB"
kill -STOP "${SYNC_PID[B]}" # A reconnects first
redis_kill
redis_start
note "   redis restarted empty; B's replicator held back"
wait_until 10 "A takes the jobs Redis lost off the board" \
  eval '! on_board "$A" "$JB_JOB" && ! on_board "$A" "$TF_JOB"'
end=$(history_end "$A" "$JB_JOB")
[ "$end" = lost ] ||
  fail "A's history says '$end' for B's job Redis lost, expected 'lost'"
end=$(history_end "$A" "$TF_JOB")
[ "$end" = lost ] ||
  fail "A's history says '$end' for taskflow's job Redis lost, expected 'lost'"
kill -CONT "${SYNC_PID[B]}"
wait_until 15 "B publishes its job again and A brings it back" \
  on_board "$A" "$JB_JOB"
claimable_by "$A" "$JB_JOB" || fail "B's job is back on A but A cannot claim it"
wait_until 10 "B takes taskflow's lost job off" eval '! on_board "$B" "$TF_JOB"'
end=$(history_end "$B" "$TF_JOB")
[ "$end" = lost ] ||
  fail "B's history says '$end' for taskflow's job Redis lost, expected 'lost'"
wait_until 10 "A lists what Redis lists" same_as_redis "$A"
wait_until 10 "B lists what Redis lists" same_as_redis "$B"
# One loss, seen once by each board: B, reconnecting after A had signalled
# it with a new epoch, adopts that epoch rather than writing its own (which
# A's next poll would take for a second loss).
sleep 1.5
for d in A B; do
  n=$(status_field "$ROOT/$d" data_losses)
  [ "$n" = 1 ] || fail "board $d counts $n data losses for one restart"
done
wait_until 3 "A's status counts a data loss" \
  eval '[ "$(status_field "$A" data_losses)" -ge 1 ]'
"$JOBBOARD" status --board "$A" --verify >"$ROOT/verify" 2>&1 ||
  fail "status --verify on A after the loss exits $?: $(cat "$ROOT/verify")"
"$JOBBOARD" claim --board "$B" --who w "$JB_JOB" >/dev/null &&
  "$JOBBOARD" consume --board "$B" --who w "$JB_JOB" || fail "run B's job"
wait_until 10 "A sees B's job consumed" eval '! on_board "$A" "$JB_JOB"'
end=$(history_end "$A" "$JB_JOB")
[ "$end" = consumed ] ||
  fail "A's history says '$end' for B's job once consumed, expected 'consumed'"
sync_stop B

# ------------------------------------------- 3. a wiped namespace
note "3. the namespace wiped while A stays connected; its sequence climbs back"
"$PY" "$PEER" post "$SOCK" "$NS" 1 "$ROOT/x" 100 0 || die "taskflow post"
X=$(cat "$ROOT/x")
wait_until 10 "A pulls X" on_board "$A" "$X"
"$PY" "$PEER" post "$SOCK" "$NS-other" 1 "$ROOT/y" 100 0 || die "taskflow post"
Y=$(cat "$ROOT/y")
# One atomic step: every key of the namespace deleted, then Y listed under
# the sequence A last read (X's), as if taskflow had posted it after a
# FLUSHDB: NS:sequence reads the same, no notice is sent.
"$PY" - "$SOCK" "$NS" "$Y" <<'EOF' || die "cannot wipe the namespace"
import sys, redis
sock, ns, y = sys.argv[1:]
r = redis.Redis(unix_socket_path=sock)
posting = r.hget(ns + "-other:listings", y)
seq = r.get(ns + ":sequence")
keys = r.keys(ns + ":*")
p = r.pipeline(transaction=True)
p.delete(*keys)
p.hset(ns + ":listings", y, posting)
p.set(ns + ":sequence", seq)
p.execute()
EOF
wait_until 5 "A drops X and lists Y after the wipe, with no post" \
  eval 'on_board "$A" "$Y" && ! on_board "$A" "$X"'
end=$(history_end "$A" "$X")
[ "$end" = lost ] || fail "A's history says '$end' for X after the wipe"
same_as_redis "$A" || fail "A does not list what Redis lists after the wipe"

# -------------------------------------------------- 4. --verify, repair
note "4. status --verify finds a listing no poll sees; the schedule repairs it"
sync_stop A
sync_start "$A" A --poll 0.3 --verify-every 0
wait_until 10 "A is connected" \
  eval '[ "$(status_field "$A" connected)" = True ]'
# A comparison at connect that saw NS:sequence move is done once more at
# the next poll (taskflow posts in two commands): after that one, no
# comparison in full runs until a post.
wait_until 10 "A's second comparison after connect" \
  eval '[ "$(status_field "$A" last_compared_why)" = posts ]'
# A listing written behind the replicators' backs, which no poll sees.
Z=$(hidden_listing z)
sleep 1 # three polls: none of them sees it (no post, same epoch)
on_board "$A" "$Z" && fail "a poll found the hidden listing (the test is void)"
"$JOBBOARD" status --board "$A" --verify >"$ROOT/verify" 2>&1
rc=$?
[ $rc = 10 ] || fail "status --verify exits $rc on a board that differs, expected 10"
grep -q "differs: $Z: listed in redis, not on this board" "$ROOT/verify" ||
  fail "status --verify does not name the job: $(cat "$ROOT/verify")"
"$JOBBOARD" status --board "$A" --verify --json >"$ROOT/verify.json" 2>&1
rc=$?
[ $rc = 10 ] || fail "status --verify --json exits $rc, expected 10"
"$PY" -c 'import json,sys
v = json.loads(open(sys.argv[1]).readline())["verify"]
assert v["missing_here"] == 1 and v["differences"][0]["uuid"] == sys.argv[2], v
' "$ROOT/verify.json" "$Z" || fail "status --verify --json: $(cat "$ROOT/verify.json")"
sync_stop A
sync_start "$A" A --poll 0.3 --verify-every 0.5
wait_until 10 "A lists Z (its comparison at connect)" on_board "$A" "$Z"
# Past the comparisons that follow a connect: the next ones are on schedule.
wait_until 10 "A compares on schedule" \
  eval '[ "$(status_field "$A" last_compared_why)" = schedule ]'
# And one on schedule: another hidden listing, repaired within a second.
W=$(hidden_listing w)
wait_until 5 "the comparison on schedule brings W in" on_board "$A" "$W"
wait_until 5 "status counts the repair" \
  eval '[ "$(status_field "$A" repaired)" -ge 1 ]'
"$JOBBOARD" status --board "$A" >"$ROOT/status"
grep -q '^repaired: *[1-9]' "$ROOT/status" ||
  fail "status does not show the repair: $(cat "$ROOT/status")"
grep -q '^compared: ' "$ROOT/status" ||
  fail "status does not say when it last compared: $(cat "$ROOT/status")"
"$JOBBOARD" status --board "$A" --verify >"$ROOT/verify" 2>&1 ||
  fail "status --verify after the repair exits $?: $(cat "$ROOT/verify")"
sync_stop A

# ------------------------------- 5. a peer's post is not a divergence
note "5. a comparison on schedule does not count a peer's post as repaired"
sync_start "$A" A --poll 30 --verify-every 1
wait_until 10 "A compares after posts (the schedule polls first)" \
  eval '[ "$(status_field "$A" last_compared_why)" = posts ]'
"$PY" "$PEER" post "$SOCK" "$NS" 1 "$ROOT/p" 100 0 || die "taskflow post"
wait_until 5 "A pulls taskflow's post" on_board "$A" "$(cat "$ROOT/p")"
sleep 1.5 # the status file, and one more comparison on schedule
n=$(status_field "$A" repaired)
[ "$n" = 0 ] || fail "A counts a taskflow post as $n repaired jobs"
sync_stop A
finish
