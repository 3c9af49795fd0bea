#!/bin/sh
# tests/bench_parts.sh - the parts of jobboard-bench still run and print
# their lines: threads sharing one handle (--threads), processes racing
# (--procs LIST), posting single and in batches (--batch), the wake-up
# part, and SQLite doing the same job (--peers) when the build has SQLite;
# in a build without it, --peers is refused with a message that says how
# to get it. Tiny sizes; nothing about speed is checked. Bad lists are
# refused.
#
# Under `make check` the working directory is the build directory: its
# config.h says whether SQLite was built in (HAVE_SQLITE3). JB_SQLITE=yes
# or no overrides that (for a jobboard-bench from elsewhere, named by
# JOBBOARD_BENCH).
set -u
. "$(dirname "$0")/lib/harness.sh"
BENCH=${JOBBOARD_BENCH:-./jobboard-bench}
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
    bail "python3 is needed to check JSON lines"
if [ -z "${JB_SQLITE:-}" ]; then
    if [ -f config.h ] && grep -q '^#define HAVE_SQLITE3 1' config.h; then
        JB_SQLITE=yes
    else
        JB_SQLITE=no
    fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jb-bench-parts.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$tmp"'
trap 'exit 1' INT TERM

bad() { fail "$1"; show_file "$2" "$2.err"; }
# has FILE PATTERN...: every pattern (grep -E) is in FILE
has() {
    f=$1; shift
    for p in "$@"; do grep -Eq -- "$p" "$f" || return 1; done
}
# check NAME FILE PATTERN...: ok when every pattern is in FILE
check() {
    name=$1 f=$2; shift 2
    if has "$f" "$@"; then pass "$name"; else bad "$name" "$f"; fi
}

# Tiny sizes: every mode, two thread counts, two process counts, two batch
# sizes. The claims and wake-up parts are skipped (the wake-up part is
# checked at the end).
tiny="--jobs 40 --sync-jobs 3 --rounds 1 --wakes 0 --no-claims \
--threads 1,2 --procs 2,3 --batch 2,5 --post-jobs 12"

# --- without --peers: the text lines --------------------------------------
# shellcheck disable=SC2086
if "$BENCH" $tiny >"$tmp/text" 2>"$tmp/text.err"; then
    pass "bench (tiny) exits 0"
else
    bad "bench (tiny) exits 0" "$tmp/text"
fi
check "threads part: a block per mode, a row per count" "$tmp/text" \
    '^full, threads of one process sharing one board handle, 3 cycles' \
    '^normal, threads of one process sharing one board handle, 3 cycles' \
    '^none, threads of one process sharing one board handle, 40 cycles' \
    '^  1 +[0-9]+ +[0-9.]+ +1\.00$' '^  2 +[0-9]+ +[0-9.]+ +[0-9.]+$' \
    'scaling: cycles/s over those of 1 thread'
check "processes part: a block per count of --procs" "$tmp/text" \
    '^none, 2 processes racing on one board, 40 cycles in all' \
    '^none, 3 processes racing on one board, 40 cycles in all'
check "posting part: single and each batch size, per mode" "$tmp/text" \
    '^full, posting: single posts' '^normal, posting: single posts' \
    '^none, posting: single posts' \
    '^  single +3 +[0-9]+ +[0-9.]+ +1\.00 +[0-9]+ +[0-9.]+ +1\.00 +[0-9.]+$' \
    '^  batch of 2 +20 +[0-9]+' '^  batch of 5 +50 +[0-9]+' \
    '^  single +12 +[0-9]+ +[0-9.]+ +1\.00 +[0-9]+ +[0-9.]+ +1\.00 +[0-9.]+$' \
    'raw: bare LMDB, the same records' \
    '^  batch of 2 +12 +[0-9]+' '^  batch of 5 +15 +[0-9]+'
if grep -q SQLite "$tmp/text"; then
    bad "no SQLite rows without --peers" "$tmp/text"
else
    pass "no SQLite rows without --peers"
fi

# --- JSON lines: count them by type, check their keys ---------------------
# jsoncheck FILE PEERS: every line is JSON; the line counts and keys are
# those of $tiny (PEERS: 1 when --peers was given).
cat >"$tmp/check.py" <<'EOF'
import json, sys
path, peers = sys.argv[1], sys.argv[2] == "1"
lines = [json.loads(l) for l in open(path)]
by = {}
for v in lines:
    by.setdefault(v["type"], []).append(v)
def need(cond, what):
    if not cond:
        sys.exit("bad: " + what)
need(len(by.get("setup", [])) == 1, "one setup line")
s = by["setup"][0]
need(s["procs"] == [2, 3] and s["threads"] == [1, 2] and s["batch"] == [2, 5]
     and s["post_jobs"] == 12, "setup lists")
need((s["sqlite"] is not None) == peers, "setup sqlite: version iff --peers")
need(len(by.get("single", [])) == 4, "four single lines")
need([v["procs"] for v in by.get("multi", [])] == [2, 3], "multi per count")
th = by.get("threads", [])
need([(v["mode"], v["threads"]) for v in th] ==
     [(m, t) for m in ("full", "normal", "interval", "none") for t in (1, 2)],
     "threads lines per mode and count")
for v in th:
    need(v["cycles"] == (40 if v["mode"] in ("interval", "none") else 3),
         "threads cycles")
    need(v["base_threads"] == 1 and v["jobboard_cycles_per_s"] > 0 and
         v["jobboard_us_per_cycle"] > 0 and v["jobboard_scaling"] > 0,
         "threads jobboard keys")
    if v["threads"] == 1:
        need(abs(v["jobboard_scaling"] - 1) < 1e-9, "scaling 1 at base")
ba = by.get("batch", [])
need([(v["mode"], v["batch"], v["jobs"]) for v in ba] ==
     [("full", 1, 3), ("full", 2, 20), ("full", 5, 50),
      ("normal", 1, 3), ("normal", 2, 20), ("normal", 5, 50),
      ("interval", 1, 12), ("interval", 2, 12), ("interval", 5, 15),
      ("none", 1, 12), ("none", 2, 12), ("none", 5, 15)],
     "batch lines per mode and kind, with their job counts")
for v in ba:
    need(v["jobboard_jobs_per_s"] > 0 and v["jobboard_us_per_job"] > 0 and
         v["jobboard_ratio_to_single"] > 0, "batch jobboard keys")
    need(v["raw_jobs_per_s"] > 0 and v["raw_us_per_job"] > 0 and
         v["raw_ratio_to_single"] > 0 and v["ratio_to_raw"] > 0,
         "batch raw keys")
    if v["batch"] == 1:
        need(abs(v["raw_ratio_to_single"] - 1) < 1e-9, "raw gain 1 single")
for v in by.get("single", []):
    need((v["mode"] == "interval") == ("flushes_per_s" in v) and
         (v["mode"] != "interval" or (v["flushes"] >= 0 and
                                      v["flush_interval_ms"] == 1000)),
         "the flushes (the flash's wear) in the interval line only")
sync = {"full": "FULL", "normal": "NORMAL", "interval": "NORMAL",
        "none": "OFF"}
for v in by["single"] + by["multi"]:
    if peers:
        need(v["sqlite_cycles_per_s"] > 0 and v["sqlite_us_per_cycle"] > 0
             and v["ratio_to_sqlite"] > 0 and
             v["sqlite_synchronous"] == sync[v["mode"]],
             "sqlite keys in " + v["type"])
    else:
        need(not any(k.startswith("sqlite") for k in v) and
             "ratio_to_sqlite" not in v, "no sqlite keys in " + v["type"])
for v in th:
    if peers:
        need(v["sqlite_cycles_per_s"] > 0 and v["sqlite_scaling"] > 0 and
             v["sqlite_busy_retries"] >= 0 and v["ratio_to_sqlite"] > 0 and
             v["sqlite_synchronous"] == sync[v["mode"]],
             "sqlite keys in threads")
    else:
        need(not any(k.startswith("sqlite") for k in v), "no sqlite keys")
for v in ba:
    if peers:
        need(v["sqlite_jobs_per_s"] > 0 and v["sqlite_ratio_to_single"] > 0
             and v["ratio_to_sqlite"] > 0 and
             v["sqlite_synchronous"] == sync[v["mode"]],
             "sqlite keys in batch")
    else:
        need(not any(k.startswith("sqlite") for k in v), "no sqlite keys")
EOF
jsoncheck() {
    if "$PYTHON" "$tmp/check.py" "$1" "$2" >"$1.check" 2>&1; then
        return 0
    fi
    cat "$1.check" >>"$1.err"
    return 1
}
# shellcheck disable=SC2086
if "$BENCH" $tiny --json >"$tmp/json" 2>"$tmp/json.err" &&
    jsoncheck "$tmp/json" 0; then
    pass "bench --json (tiny): threads, multi and batch lines, no sqlite keys"
else
    bad "bench --json (tiny): threads, multi and batch lines, no sqlite keys" \
        "$tmp/json"
fi

# --- --peers --------------------------------------------------------------
if [ "$JB_SQLITE" = yes ]; then
    # shellcheck disable=SC2086
    if "$BENCH" $tiny --peers >"$tmp/peers" 2>"$tmp/peers.err"; then
        pass "bench --peers (tiny) exits 0"
    else
        bad "bench --peers (tiny) exits 0" "$tmp/peers"
    fi
    check "--peers: SQLite rows beside each single and racing figure" \
        "$tmp/peers" '^  SQLite +3\.[0-9]+\.[0-9]+, WAL' \
        '^  SQLite FULL +[0-9]+ +[0-9.]+ +[0-9.]+$' \
        '^  SQLite NORMAL +[0-9]+ +[0-9.]+ +[0-9.]+$' \
        '^  SQLite OFF +[0-9]+ +[0-9.]+ +[0-9.]+$'
    [ "$(grep -c '^  SQLite OFF ' "$tmp/peers")" = 3 ] &&
        pass "--peers: SQLite OFF in the single figure and both races" ||
        bad "--peers: SQLite OFF in the single figure and both races" \
            "$tmp/peers"
    check "--peers: SQLite columns in the threads and posting parts" \
        "$tmp/peers" 'SQLite cycles/s +scaling +ratio' \
        'SQLite: WAL, synchronous=FULL, a connection per thread' \
        'SQLite: WAL, synchronous=OFF; an INSERT per job' \
        '^  2 +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+$' \
        '^  batch of 5 +50 +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+ +[0-9.]+$'
    # shellcheck disable=SC2086
    if "$BENCH" $tiny --peers --json >"$tmp/pjson" \
        2>"$tmp/pjson.err" && jsoncheck "$tmp/pjson" 1; then
        pass "bench --peers --json (tiny): sqlite keys in every line"
    else
        bad "bench --peers --json (tiny): sqlite keys in every line" \
            "$tmp/pjson"
    fi
else
    "$BENCH" --peers --jobs 5 >"$tmp/nope" 2>&1
    rc=$?
    if [ "$rc" = 2 ] && has "$tmp/nope" 'built without SQLite' \
        'libsqlite3-dev' 'configure' && ! grep -q cycles "$tmp/nope"; then
        pass "--peers in a build without SQLite: exit 2, says how to get it"
    else
        bad "--peers in a build without SQLite: exit 2 (got $rc), says how" \
            "$tmp/nope"
    fi
fi

# --- bad lists: exit 2, the message names the option ----------------------
refuse() {
    name=$1 pattern=$2; shift 2
    "$BENCH" "$@" >"$tmp/usage" 2>&1
    rc=$?
    if [ "$rc" = 2 ] && has "$tmp/usage" "$pattern"; then
        pass "refused: $name"
    else
        bad "refused: $name (exit $rc)" "$tmp/usage"
    fi
}
refuse "--threads 0,2" "--threads: '0' is not a number from 1 to 64" \
    --threads 0,2
refuse "--threads 65" "--threads: '65' is not a number from 1 to 64" \
    --threads 65
refuse "--procs with nine counts" "--procs: at most 8 values" \
    --procs 1,2,3,4,5,6,7,8,9
refuse "--procs ''" "--procs: give at least one value" --procs ""
refuse "--batch 1" "--batch: '1' is not a number from 2 to 100000" --batch 1
refuse "--batch 10,x" "--batch: 'x' is not a number" --batch 10,x
refuse "--post-jobs 0" "--post-jobs: '0' is not a number" --post-jobs 0
refuse "--threads with --redis" "do not go with --redis" \
    --redis unix:///nonexistent.sock --threads 2

# --- the processes' race in another mode, with the steady records on ------
# --procs-mode full races full writers (--sync-jobs cycles in all); with
# --procs-steady the race's board uses flushed-state records: its steady
# file's header says so (a 32-bit 1 at offset 12, store/steady.c).
if "$BENCH" --modes none --jobs 10 --rounds 1 --wakes 0 --no-claims \
    --threads 0 --batch 0 --procs 2 --procs-mode full --procs-steady \
    --sync-jobs 4 --json --board "$tmp/pm" --keep \
    >"$tmp/pm.json" 2>"$tmp/pm.err" &&
    "$PYTHON" - "$tmp/pm.json" >>"$tmp/pm.err" 2>&1 <<'EOF'
import json, sys
m = [v for v in map(json.loads, open(sys.argv[1])) if v["type"] == "multi"]
if len(m) != 1: sys.exit("bad: one multi line, got %d" % len(m))
m = m[0]
if (m["mode"], m["procs"], m["cycles"], m["steady"]) != ("full", 2, 4, True):
    sys.exit("bad: %r" % m)
EOF
then
    pass "--procs-mode full --procs-steady: one full race of --sync-jobs"
else
    bad "--procs-mode full --procs-steady: one full race of --sync-jobs" \
        "$tmp/pm.json"
fi
on=$(od -An -tu4 -j12 -N4 "$tmp/pm/mp-full-2/steady" 2>&1 | tr -d ' ')
if [ "$on" = 1 ]; then
    pass "--procs-steady: the race's board records flushed states"
else
    echo "steady header 'on': $on" >"$tmp/pm.on"
    bad "--procs-steady: the race's board records flushed states" "$tmp/pm.on"
fi
refuse "--procs-mode bogus" "--procs-mode: 'bogus' is not a mode" \
    --procs-mode bogus

# --- claim-next by name (--names): every case has its claims -------------
# A tiny board: each case of jobboard's side (and SQLite's when built with
# it) claims jobs and says how many; "one name" takes only from n0..n3.
if "$BENCH" --names 4 --names-jobs 400 --names-claims 20 --json \
    --board "$tmp/nm" >"$tmp/nm.json" 2>"$tmp/nm.err" &&
    "$PYTHON" - "$tmp/nm.json" "$JB_SQLITE" >>"$tmp/nm.err" 2>&1 <<'EOF2'
import json, sys
n = [v for v in map(json.loads, open(sys.argv[1])) if v["type"] == "names"]
sides = {"jobboard"} | ({"SQLite"} if sys.argv[2] == "yes" else set())
if {v["side"] for v in n} != sides: sys.exit("bad sides: %r" % n)
for v in n:
    if not v["claims"] > 0 or not v["p50_us"] > 0:
        sys.exit("bad: %r" % v)
if len(n) != 6 * len(sides): sys.exit("bad: %d lines" % len(n))
EOF2
then
    pass "--names: every case claims by name, on each side"
else
    bad "--names: every case claims by name, on each side" "$tmp/nm.json"
fi
refuse "--names 0" "--names: '0' is not a number" --names 0

# --- a cap's and a rate limit's cost (--controls): every case cycles -----
if "$BENCH" --controls 40 --json --board "$tmp/ct" >"$tmp/ct.json" \
    2>"$tmp/ct.err" &&
    "$PYTHON" - "$tmp/ct.json" >>"$tmp/ct.err" 2>&1 <<'EOF2'
import json, sys
n = [v for v in map(json.loads, open(sys.argv[1])) if v["type"] == "controls"]
if [v["case"] for v in n] != ["no control", "a cap", "a rate limit"]:
    sys.exit("bad cases: %r" % n)
if any(v["cycles"] != 40 or not v["p50_us"] > 0 for v in n):
    sys.exit("bad: %r" % n)
EOF2
then
    pass "--controls: each case cycles, in turns"
else
    bad "--controls: each case cycles, in turns" "$tmp/ct.json"
fi
refuse "--controls 0" "--controls: '0' is not a number" --controls 0

# --- the wake-up part: timed from the post's commit -----------------------
# Each sample's wake-up runs from the commit (seen by the bench's own
# mdb_txn_commit in front of liblmdb's: no sample without it) and, in a
# second row, from the post call's start, which comes first: its p50 is
# never below the commit's.
cat >"$tmp/wake.py" <<'EOF'
import json, sys
w = [v for v in map(json.loads, open(sys.argv[1])) if v["type"] == "wake"]
if len(w) != 1: sys.exit("bad: one wake line, got %d" % len(w))
w = w[0]
for k in ("board", "from_call", "floor"):
    for q in ("p50", "p99", "max"):
        if not w[k + "_" + q + "_us"] > 0: sys.exit("bad: %s_%s_us" % (k, q))
if w["samples"] != 30: sys.exit("bad: samples")
if not w["from_call_p50_us"] >= w["board_p50_us"]:
    sys.exit("bad: from the call (%s) below from the commit (%s)" %
             (w["from_call_p50_us"], w["board_p50_us"]))
if abs(w["ratio_p50"] / (w["board_p50_us"] / w["floor_p50_us"]) - 1) > 1e-4:
    sys.exit("bad: ratio_p50 is not board over floor")
EOF
if "$BENCH" --modes none --jobs 10 --rounds 1 --wakes 30 \
    --no-claims --threads 1 --procs 2 --batch 2 --post-jobs 4 --json \
    >"$tmp/wake" 2>"$tmp/wake.err" &&
    "$PYTHON" "$tmp/wake.py" "$tmp/wake" >>"$tmp/wake.err" 2>&1; then
    pass "wake-up part: timed from the commit and from the post call"
else
    bad "wake-up part: timed from the commit and from the post call" \
        "$tmp/wake"
fi
if "$BENCH" --modes none --jobs 10 --rounds 1 --wakes 5 \
    --no-claims --threads 1 --procs 2 --batch 2 --post-jobs 4 \
    >"$tmp/waket" 2>"$tmp/waket.err"; then
    check "wake-up part: its rows" "$tmp/waket" \
        '^  jobboard, from commit +[0-9.]+ +[0-9.]+ +[0-9.]+$' \
        '^  futex floor +[0-9.]+ +[0-9.]+ +[0-9.]+$' \
        '^  jobboard, from post call +[0-9.]+ +[0-9.]+ +[0-9.]+$' \
        'p50 from the commit over the floor.s: [0-9.]+'
else
    bad "wake-up part: its rows" "$tmp/waket"
fi

finish
