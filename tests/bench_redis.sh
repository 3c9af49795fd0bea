#!/bin/sh
# tests/bench_redis.sh - `jobboard-bench --redis`, bench/bench-taskflow.py,
# bench/bench-redis.sh and bench/bench-claim-script.py still run (so they
# cannot rot): tiny job counts, a redis-server of the test's own on a unix
# socket, exit status and the rows printed. Nothing about speed is checked.
#
# Needs redis-server and /usr/bin/python3 with python3-taskflow (as
# tests/test_sync_scripts.sh); JOBBOARD_SKIP_REDIS=1 skips it (TAP: 1..0 # SKIP).
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
BENCH=${JOBBOARD_BENCH:-./jobboard-bench}
py=/usr/bin/python3

[ "${JOBBOARD_SKIP_REDIS:-}" != 1 ] || skip_all "JOBBOARD_SKIP_REDIS=1"
command -v redis-server >/dev/null 2>&1 && [ -x "$py" ] &&
    "$py" -c 'import taskflow.jobs.backends.impl_redis' 2>/dev/null ||
    die "needs redis-server and python3-taskflow
  install: apt-get install -y redis-server python3-taskflow"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jb-bench-redis-test.XXXXXX") || bail "mktemp failed"
server=""
stop() {
    [ -z "$server" ] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
    rm -rf "$tmp"
}
at_exit stop
trap 'exit 1' INT TERM

bad() { fail "$1"; show_file "$2"; }
# has FILE PATTERN...: every pattern (grep -E) is in FILE
has() {
    f=$1; shift
    for p in "$@"; do grep -Eq -- "$p" "$f" || return 1; done
}

# The driver: its own server, both sides, side by side.
if "$srcdir/bench/bench-redis.sh" --jobs 20 --bench "$BENCH" -- \
        --wakes 3 --poll 20 --poll-wakes 2 --cycles 20 --rounds 1 --fleet 0 \
        >"$tmp/driver" 2>&1 &&
    has "$tmp/driver" '^round trip .*x' '^post .*x' '^claim .*x' \
        '^consume .*x' 'claim p50 / \(round trip p50' \
        'claim p50 / \(PING \+ local commit, timed together\) p50' \
        '^publish +1000 +3 ' '^replicated +1000 +3 ' '^taskflow +20 +2 ' \
        '^replicator .*cycles/s'; then
    pass "bench/bench-redis.sh --jobs 20"
else
    bad "bench/bench-redis.sh --jobs 20" "$tmp/driver"
fi

sock=$tmp/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --save "" \
    --appendonly no --dir "$tmp" --logfile "$tmp/redis.log" &
server=$!
n=0
while ! "$py" -c 'import redis, sys; redis.Redis(unix_socket_path=sys.argv[1]).ping()' "$sock" 2>/dev/null; do
    n=$((n + 1))
    if [ $n -gt 200 ]; then echo "FAIL: redis-server did not start" >&2; exit 1; fi
    sleep 0.05
done

if "$BENCH" --redis "unix://$sock" --jobs 50 --wakes 0 --poll-wakes 0 \
        --cycles 0 --fleet 0 >"$tmp/text" 2>&1 &&
    has "$tmp/text" '^  round trip \(PING\) +[0-9]' '^  local claim +[0-9]' \
        '^  PING \+ local commit +[0-9]' \
        '^  post \+ publish +[0-9]' '^  claim via Redis +[0-9]' \
        '^  consume via Redis +[0-9]' 'claim p50 / \(round trip p50' \
        'claim p50 / \(PING \+ local commit\) p50' \
        '^  claim-next via Redis +[0-9]' '^    x64, one by one, /job +[0-9]' \
        '^    x64, one call, /job +[0-9]' \
        'claim-next x64 per job p50 / claim-next p50: one call [0-9]'; then
    pass "bench --redis --jobs 50"
else
    bad "bench --redis --jobs 50" "$tmp/text"
fi

# The replicator's part: wake-ups with each poster (the taskflow one at
# two poll intervals), the local cycle in its three settings; tiny counts.
if "$BENCH" --redis "unix://$sock" --jobs 5 --wakes 3 \
        --poll 20,10 --poll-wakes 2 --cycles 30 --rounds 1 --fleet 0 \
        >"$tmp/sync" 2>&1 &&
    has "$tmp/sync" '^  publish \(notice\) +1000 +3 +[0-9]' \
        '^  replicated \(notice\) +1000 +3 +[0-9]' \
        '^  taskflow \(no notice\) +20 +2 +[0-9]' \
        '^  taskflow \(no notice\) +10 +2 +[0-9]' \
        '^  plain +[0-9]' '^  attached +[0-9]' '^  replicator +[0-9]' \
        '^  kept local +[0-9]' '^  through Redis +[0-9]'; then
    pass "bench --redis: wake-ups through Redis, cycles with the sync on"
else
    bad "bench --redis: wake-ups through Redis, cycles with the sync on" "$tmp/sync"
fi
"$BENCH" --redis "unix://$sock" --jobs 5 --wakes 0 --poll-wakes 0 \
    --cycles 0 --fleet 0 >"$tmp/none" 2>&1
if [ $? -eq 0 ] && ! grep -q 'wake-up through Redis\|local cycle\|fleet lag' "$tmp/none"
then pass "bench --redis --wakes 0 --poll-wakes 0 --cycles 0 --fleet 0: skipped"
else bad "bench --redis --wakes 0 --poll-wakes 0 --cycles 0 --fleet 0: skipped" "$tmp/none"; fi
"$BENCH" --redis "unix://$sock" --jobs 5 --wakes 0 --poll-wakes 0 \
    --cycles 0 --fleet-wakes 0 >"$tmp/none" 2>&1
if [ $? -eq 0 ] && ! grep -q 'fleet lag' "$tmp/none"
then pass "bench --redis --fleet-wakes 0: the fleet skipped"
else bad "bench --redis --fleet-wakes 0: the fleet skipped" "$tmp/none"; fi

# The fleet: a jobboard sync daemon per board (the build's jobboard), a
# waiter process on each other board; tiny counts, both daemon modes.
if "$BENCH" --redis "unix://$sock" --jobs 5 --wakes 0 --poll-wakes 0 \
        --cycles 0 --fleet 2,3 --fleet-wakes 3 --fleet-sync none,full \
        >"$tmp/fleet" 2>&1 &&
    has "$tmp/fleet" '^fleet lag' '^ +2 +none +3 +[0-9]' '^ +2 +full +3 +[0-9]' \
        '^ +3 +none +6 +[0-9]' '^ +3 +full +6 +[0-9]'; then
    pass "bench --redis --fleet 2,3: a row per size and daemon mode"
else
    bad "bench --redis --fleet 2,3: a row per size and daemon mode" "$tmp/fleet"
fi
if "$BENCH" --redis "unix://$sock" --jobs 5 --wakes 0 --poll-wakes 0 \
        --cycles 0 --fleet 3 --fleet-wakes 4 --fleet-sync none \
        --fleet-history 3 --json >"$tmp/fleet.json" 2>&1 &&
    "$py" - "$tmp/fleet.json" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
f = [l for l in lines if l["type"] == "redis_fleet"]
assert len(f) == 1, f
f = f[0]
assert (f["hosts"], f["sync_mode"], f["mode"], f["history"]) == (
    3, "none", "none", 3), f
assert f["posts"] == 4 and f["samples"] == 8, f
assert 0 < f["min_us"] <= f["p50_us"] <= f["p99_us"] <= f["max_us"], f
assert f["p50_us"] <= f["last_p50_us"] <= f["max_us"], f
assert f["post_call_p50_us"] > 0, f
EOF
then
    pass "bench --redis --fleet 3 --fleet-history 3 --json"
else
    bad "bench --redis --fleet 3 --fleet-history 3 --json" "$tmp/fleet.json"
fi
"$BENCH" --redis "unix://$sock" --jobs 5 --wakes 0 --poll-wakes 0 \
    --cycles 0 --fleet 2 --fleet-wakes 1 --jobboard "$tmp/no-such-program" \
    >"$tmp/nojb" 2>&1
if [ $? -eq 1 ] && has "$tmp/nojb" 'no-such-program'
then pass "bench --fleet --jobboard MISSING: exit 1, named"
else bad "bench --fleet --jobboard MISSING: exit 1, named" "$tmp/nojb"; fi

if "$BENCH" --redis "unix://$sock" --jobs 50 --namespace t-json \
        --wakes 2 --poll 10 --poll-wakes 2 --cycles 20 --rounds 1 --fleet 0 \
        --json >"$tmp/ours.json" 2>&1 &&
    "$py" - "$tmp/ours.json" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
r = [l for l in lines if l["type"] == "redis"][0]
assert r["namespace"] == "t-json" and r["jobs"] == 50, r
for op in ("ping", "local_claim", "floor", "post_publish", "claim",
           "consume", "claim_next", "many_one_by_one", "many_one_call"):
    for k in ("p50_us", "p99_us", "max_us", "per_s"):
        assert r[op + "_" + k] > 0, (op, k, r)
assert r["claim_ratio"] > 0 and r["floor_ratio"] > 0, r
assert r["many_batch"] == 64 and r["many_ratio"] > 0 and r["loop_ratio"] > 0, r
w = [l for l in lines if l["type"] == "redis_wake"]
assert [(x["poster"], x["poll_ms"]) for x in w] == [
    ("publish", 1000), ("replicated", 1000), ("taskflow", 10)], w
for x in w:
    assert x["samples"] == 2 and x["p50_us"] > 0 and x["min_us"] > 0, x
c = [l for l in lines if l["type"] == "redis_cycles"][0]
for k in ("plain", "attached", "replicator"):
    assert c[k + "_cycles_per_s"] > 0 and c[k + "_us_per_cycle"] > 0, c
assert (c["replicator_kept_local_cycles"] +
        c["replicator_via_redis_cycles"]) == 20, c
EOF
then
    pass "bench --redis --json"
else
    bad "bench --redis --json" "$tmp/ours.json"
fi

if "$py" "$srcdir/bench/bench-taskflow.py" --socket "$sock" --jobs 20 \
        --json >"$tmp/tf.json" 2>&1 &&
    "$py" "$srcdir/bench/bench-taskflow.py" --compare "$tmp/ours.json" \
        "$tmp/tf.json" >"$tmp/cmp" 2>&1 && has "$tmp/cmp" '^claim .*x'; then
    pass "bench-taskflow.py --jobs 20, --compare"
else
    bad "bench-taskflow.py --jobs 20, --compare" "$tmp/cmp"
fi

if "$py" "$srcdir/bench/bench-claim-script.py" --socket "$sock" --jobs 20 \
        --rounds 1 >"$tmp/scripts" 2>&1 &&
    has "$tmp/scripts" '^return1 +[0-9.]+ .* 0\.0$' \
        '^taskflow +[0-9.]+ .* 4\.0$' '^ours +[0-9.]+ .* 6\.0$'; then
    pass "bench-claim-script.py --jobs 20"
else
    bad "bench-claim-script.py --jobs 20" "$tmp/scripts"
fi

"$BENCH" --namespace x >"$tmp/usage" 2>&1
if [ $? -eq 2 ]; then pass "--namespace without --redis: usage error"
else bad "--namespace without --redis: usage error" "$tmp/usage"; fi
"$BENCH" --redis "unix://$sock" --modes none,full >"$tmp/usage" 2>&1
if [ $? -eq 2 ]; then pass "--redis with two modes: usage error"
else bad "--redis with two modes: usage error" "$tmp/usage"; fi
for args in "--fleet 2" "--fleet-wakes 3" "--fleet-sync none" \
        "--fleet-history 1" "--jobboard ./jobboard"; do
    # shellcheck disable=SC2086
    "$BENCH" $args >"$tmp/usage" 2>&1
    if [ $? -eq 2 ]; then pass "$args without --redis: usage error"
    else bad "$args without --redis: usage error" "$tmp/usage"; fi
done
for args in "--fleet 1" "--fleet 17" "--fleet-sync none,none" \
        "--fleet-sync fast"; do
    # shellcheck disable=SC2086
    "$BENCH" --redis "unix://$sock" $args >"$tmp/usage" 2>&1
    if [ $? -eq 2 ]; then pass "--redis $args: usage error"
    else bad "--redis $args: usage error" "$tmp/usage"; fi
done
"$BENCH" --poll 100 >"$tmp/usage" 2>&1
if [ $? -eq 2 ]; then pass "--poll without --redis: usage error"
else bad "--poll without --redis: usage error" "$tmp/usage"; fi
"$BENCH" --redis "unix://$sock" --poll 100,0 >"$tmp/usage" 2>&1
if [ $? -eq 2 ]; then pass "--poll 100,0: usage error"
else bad "--poll 100,0: usage error" "$tmp/usage"; fi
"$BENCH" --redis "redis://127.0.0.1:1" --jobs 5 >"$tmp/refused" 2>&1
if [ $? -eq 1 ] && has "$tmp/refused" 'connect'; then pass "--redis, no server: exit 1"
else bad "--redis, no server: exit 1" "$tmp/refused"; fi

finish
