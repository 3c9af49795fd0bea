#!/bin/sh
# bench-redis.sh - jobboard's operations through Redis beside taskflow's own
# Python client, against one redis-server this script starts on a unix
# socket of a temporary directory (no TCP port, no persistence) and stops.
#
#   bench/bench-redis.sh [--jobs N] [--runs R] [--bench PATH]
#                        [-- MORE BENCH OPTIONS]
#
# Each run: `jobboard-bench --redis unix://SOCK --json --jobs N` (a fresh
# namespace), then bench/bench-taskflow.py --json with the same N (another
# namespace), back to back, then both side by side with the speedup
# (bench-taskflow.py --compare), then jobboard's replicator figures
# (wake-up through Redis, the local cycle with the sync on). Options after
# "--" go to `jobboard-bench` (e.g. -- --poll 1000,100 --poll-wakes 40
# --wakes 300 --cycles 20000). --bench defaults to ./jobboard-bench (run
# it from the build tree). Needs redis-server and /usr/bin/python3 with
# python3-taskflow (apt-get install redis-server python3-taskflow).
# Exits 1 if either side fails; it only reports, it asserts no speed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
jobs=2000
runs=1
bench=./jobboard-bench
while [ $# -gt 0 ]; do
    case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --bench) bench=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-redis.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
py=/usr/bin/python3
command -v redis-server >/dev/null 2>&1 ||
    { echo "bench-redis.sh: redis-server is missing (apt-get install redis-server)" >&2; exit 1; }
"$py" -c 'import taskflow.jobs.backends.impl_redis' 2>/dev/null ||
    { echo "bench-redis.sh: python3-taskflow is missing (apt-get install python3-taskflow)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/jb-bench-redis.XXXXXX")
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || :
        wait "$pid" 2>/dev/null || :
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

sock=$dir/redis.sock
redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 \
    --save "" --appendonly no --dir "$dir" --logfile "$dir/redis.log" &
pid=$!
i=0
until [ -S "$sock" ] && "$py" -c 'import redis, sys; redis.Redis(unix_socket_path=sys.argv[1]).ping()' "$sock" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 200 ] || ! kill -0 "$pid" 2>/dev/null; then
        echo "bench-redis.sh: redis-server did not start:" >&2
        cat "$dir/redis.log" >&2 || :
        exit 1
    fi
    sleep 0.05
done

echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $sock, $runs run(s) of $jobs jobs per phase"
echo "machine: $(nproc) cpus, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
r=1
while [ $r -le "$runs" ]; do
    "$bench" --redis "unix://$sock" --jobs "$jobs" --json "$@" >"$dir/ours.json"
    "$py" "$here/bench-taskflow.py" --socket "$sock" --jobs "$jobs" --json >"$dir/taskflow.json"
    echo
    echo "== run $r =="
    "$py" "$here/bench-taskflow.py" --compare "$dir/ours.json" "$dir/taskflow.json"
    r=$((r + 1))
done
