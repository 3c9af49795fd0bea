#!/bin/bash
# tests/queues.sh - job names as queues at the prompt, as a user runs them:
# claim-next --name (exact, several, prefixes), caps and rate limits of a
# name and of each name of a prefix, a `work` serving two names
# of three, pause and resume of a name and of the whole board (seen by
# other processes, listed, woken), the filters by name of list, count,
# history and watch, the usage errors, and the JSON outputs.
#
# Runs the built ./jobboard (or $JOBBOARD) on boards under one mktemp -d
# directory, removed on exit. JSON is checked with python3.

set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-queues.XXXXXX") || bail "mktemp failed"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$ROOT"
}
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

# Each step has $B, a board of its own.
step_setup() {
  B=$ROOT/b$step_no
}

# jb ARGS: jobboard on $B; sets $out, $err and $rc.
jb() {
  run "$JOBBOARD" --board "$B" --durability none "$@"
}
# post NAME [ARGS]: sets $uuid.
post() {
  jb post "$@"
  uuid=$out
  [ "$rc" = 0 ] || fail "post $*: exit $rc: $err"
}
# claims WHAT UUID ARGS: claim-next ARGS takes job UUID.
claims() {
  local what=$1 want=$2
  shift 2
  jb claim-next --who w "$@"
  [ "$rc" = 0 ] && [ "$out" = "$want" ] ||
    fail "$what: claim-next $* gave '$out' (exit $rc: $err), expected $want"
}
# claims_none WHAT ARGS: claim-next ARGS takes nothing (exit 3).
claims_none() {
  local what=$1
  shift
  jb claim-next --who w "$@"
  [ "$rc" = 3 ] && [ -z "$out" ] ||
    fail "$what: claim-next $* gave '$out' (exit $rc: $err), expected none"
}
# pycheck EXPR WHAT: $out is JSON lines, `lines` their list, `j` the first.
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin.read().splitlines() if l]
j = lines[0] if lines else None
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
# uuids: the first column of $out, one line.
uuids() { printf '%s\n' "$out" | awk '{print $1}' | tr '\n' ' '; }

# --- claim-next --name -----------------------------------------------------

begin "claim-next --name: an exact name, several, a prefix, in listing order"
post a; ua=$uuid
post b; ub=$uuid
post img.x; ux=$uuid
post img.y; uy=$uuid
post c; uc=$uuid
post img.z --priority high; uz=$uuid
claims "exact" "$ub" --name b
claims_none "a name without jobs" --name zz
claims_none "a name claimed already" --name b
# A prefix: the high-priority one first, then the oldest.
claims "prefix" "$uz" --name 'img.*'
claims "prefix, next" "$ux" --name 'img.*'
# Several: listing order across them (img.y was posted before c).
claims "several" "$uy" --name c --name 'img.*' --name nope
claims "several, next" "$uc" --name c --name 'img.*'
claims_none "several, none left" --name c --name 'img.*'
# '*' alone is every name.
claims "every name" "$ua" --name '*'
end

begin "claim-next --name --count N takes N jobs of those names"
for i in 1 2 3; do post x; post y; post z; done
jb claim-next --who w --count 5 --name x --name z
expect_rc 0 "claim-next --count 5"
[ "$(printf '%s\n' "$out" | wc -l)" = 5 ] || fail "5 jobs: $out"
jb list --unclaimed --format '{name}'
[ "$(printf '%s\n' "$out" | sort | tr '\n' ' ')" = "y y y z " ] ||
  fail "left unclaimed: $out"
end

# --- work --name -----------------------------------------------------------

begin "work --name: a worker serving two names of three, with --jobs"
for i in 1 2; do post resize; post thumb; post render; done
run "$JOBBOARD" work --board "$B" --who w1 --name resize --name thumb --jobs 4 \
  --timeout 5 -- true
expect_rc 0 "work --jobs 4"
jb list --format '{name}'
[ "$(printf '%s\n' "$out" | tr '\n' ' ')" = "render render " ] ||
  fail "left on the board: $out"
jb history --json --name resize --name thumb
pycheck 'len(lines) == 4 and sorted(l["name"] for l in lines) == ["resize"] * 2 + ["thumb"] * 2 and all(l["owner"] == "w1" for l in lines)' "history"
# Nothing of those names left: the worker is idle for --timeout and
# ends (exit 0); the renders stay.
run "$JOBBOARD" work --board "$B" --who w1 --name resize --name thumb --jobs 1 \
  --timeout 0.3 -- true
expect_rc 0 "work idle for --timeout"
jb count
[ "$out" = 2 ] || fail "the renders were taken: $out"
end

# --- pause and resume ------------------------------------------------------

begin "pause NAME: other processes claim nothing of it, list and queues show it"
post p; up=$uuid
post q; uq=$uuid
post p; up2=$uuid
jb pause p
expect_ok "pause p"
[ -z "$out" ] || fail "pause prints nothing: $out"
claims_none "paused, by name" --name p
claims "paused: the others still go" "$uq"
claims_none "only paused jobs left"
expect_stderr "no claimable job" "the message"
jb list --name p --no-header
[ "$(uuids)" = "$up $up2 " ] || fail "list still shows both: $out"
[ "$(printf '%s\n' "$out" | grep -c '  UNCLAIMED(paused)  .*  -      p$')" = 2 ] ||
  fail "list marks the paused jobs: $out"
jb list --unclaimed --json
pycheck 'len(lines) == 2 and all(l["paused"] is True and l["name"] == "p" for l in lines)' "list --json"
jb queues
expect_ok "queues"
printf '%s\n' "$out" | grep -Eq '^ +2 paused +p$' || fail "queues: p paused, 2 ready: $out"
printf '%s\n' "$out" | grep -Eq '^ +0 +q$' || fail "queues: q: $out"
# Pausing what is paused changes nothing.
jb pause p
expect_ok "pause p again"
# A claimed job is not touched: its owner finishes it.
jb consume --who w "$uq"
expect_ok "consume the job claimed before"
jb resume p
expect_ok "resume p"
claims "resumed" "$up" --name p
jb list --json
pycheck 'len(lines) == 2 and [l["paused"] for l in lines] == [False, False]' "no longer marked"
end

begin "pause --all: nothing is claimed, everything listed; a name's own pause outlives resume --all"
post r; ur=$uuid
post s; us=$uuid
jb pause s
jb pause --all
expect_ok "pause --all"
claims_none "board paused"
expect_stderr "the board is paused" "the message says so"
claims_none "board paused, by name" --name r
jb list --no-header
[ "$(uuids)" = "$ur $us " ] || fail "list: $out"
[ "$(printf '%s\n' "$out" | grep -c 'UNCLAIMED(paused)')" = 2 ] || fail "both marked: $out"
jb queues
[ "$(printf '%s\n' "$out" | head -1)" = "the whole board is paused (jobboard resume --all)" ] ||
  fail "queues' first line: $out"
jb resume --all
expect_ok "resume --all"
claims_none "s is still paused" --name s
claims "r goes" "$ur"
jb list --unclaimed --no-header
case $out in "$us  NORMAL     UNCLAIMED(paused)  "*"  -      s") ;; *) fail "list: $out" ;; esac
jb resume s
claims "s goes" "$us"
end

begin "a resume wakes a claim-next --wait --name started before it"
post late; ul=$uuid
post other; uo=$uuid
jb pause late
"$JOBBOARD" claim-next --board "$B" --who w2 --wait 20 --name late \
  >"$ROOT/wout" 2>"$ROOT/werr" &
wpid=$!
PIDS+=("$wpid")
sleep 0.5
kill -0 "$wpid" 2>/dev/null || fail "claim-next did not wait: $(cat "$ROOT/wout" "$ROOT/werr")"
# Another process's claim-next gets the other job, not this one.
claims "the other name meanwhile" "$uo"
t0=$(date +%s%N)
jb resume late
expect_ok "resume late"
wait "$wpid"
rc=$?
t1=$(date +%s%N)
[ "$rc" = 0 ] || fail "the waiting claim-next: exit $rc: $(cat "$ROOT/werr")"
[ "$(cat "$ROOT/wout")" = "$ul" ] || fail "it took: $(cat "$ROOT/wout")"
[ $(((t1 - t0) / 1000000)) -lt 3000 ] || fail "woken $(((t1 - t0) / 1000000)) ms after the resume"
jb owner "$ul"
[ "$out" = w2 ] || fail "owner: $out"
end

begin "wait --name: posts of other names do not end it, a post of its name does"
post other; uo=$uuid
jb wait --name mine --timeout 0.2
expect_rc 7 "wait --name mine with only 'other' on the board"
"$JOBBOARD" wait --board "$B" --claimable --name mine --name 'img.*' --timeout 20 \
  >"$ROOT/wout" 2>"$ROOT/werr" &
wpid=$!
PIDS+=("$wpid")
sleep 0.5
post other
sleep 0.3
kill -0 "$wpid" 2>/dev/null || fail "a post of 'other' ended the wait: $(cat "$ROOT/wout" "$ROOT/werr")"
post img.1
wait "$wpid"
rc=$?
[ "$rc" = 0 ] || fail "the wait: exit $rc: $(cat "$ROOT/werr")"
[ "$(cat "$ROOT/wout")" = 1 ] || fail "it printed: $(cat "$ROOT/wout")"
jb wait --name other --json
[ "$rc" = 0 ] && [ "$out" = '{"jobs":2}' ] || fail "wait --name other --json: '$out' (exit $rc)"
end

# --- list, count, history, watch --name ------------------------------------

begin "list, count, history and watch filter by --name (exact, several, prefix)"
post img.a; u1=$uuid
post pdf; u2=$uuid
post img.b; u3=$uuid
post txt; u4=$uuid
jb list --name 'img.*' --no-header
[ "$(uuids)" = "$u1 $u3 " ] || fail "list prefix: $out"
jb list --name pdf --name txt --limit 1 --no-header
[ "$(uuids)" = "$u2 " ] || fail "list several --limit 1: $out"
jb count --name 'img.*' --name txt
[ "$out" = 3 ] || fail "count: $out"
jb claim-next --who w --name img.a
jb count --unclaimed --name 'img.*' --json
pycheck 'j == {"count": 1}' "count --unclaimed --json"
jb list --unclaimed --name 'img.*' --no-header
[ "$(uuids)" = "$u3 " ] || fail "list --unclaimed: $out"
jb consume --who w "$u1"
for u in "$u2" "$u3" "$u4"; do
  jb claim --who w "$u" && jb consume --who w "$u" || fail "consume $u"
done
jb history --name pdf
[ "$(printf '%s\n' "$out" | awk '{print $3}')" = "$u2" ] || fail "history exact: $out"
jb history --name 'img.*' --json
pycheck '[l["uuid"] for l in lines] == ["'"$u3"'", "'"$u1"'"]' "history prefix"
jb history --name 'img.*' --name txt --limit 2 --json
pycheck '[l["uuid"] for l in lines] == ["'"$u4"'", "'"$u3"'"]' "history several, --limit"
jb history --name '*'
[ "$(printf '%s\n' "$out" | wc -l)" = 4 ] || fail "history '*': $out"
# watch: the log from the start, only the events of those names (the
# jobs left the board: their names come from the history).
jb watch --from 1 --timeout 0 --name 'img.*'
expect_rc 0 "watch --name"
[ "$(printf '%s\n' "$out" | awk '{print $2 "," $3}' | tr '\n' ' ')" = \
  "POSTED,$u1 POSTED,$u3 CLAIMED,$u1 CONSUMED,$u1 CLAIMED,$u3 CONSUMED,$u3 " ] ||
  fail "watch: $out"
jb watch --from 1 --timeout 0 --name pdf --name txt --json
pycheck '[(l["type"], l["uuid"]) for l in lines] == [("POSTED", "'"$u2"'"), ("POSTED", "'"$u4"'"), ("CLAIMED", "'"$u2"'"), ("CONSUMED", "'"$u2"'"), ("CLAIMED", "'"$u4"'"), ("CONSUMED", "'"$u4"'")]' "watch --json"
end

begin "watch --name --timeout: the events of other names do not hold it"
post seed
# Another name's jobs keep coming, about 5 a second for 6 s.
( for i in $(seq 30); do
    "$JOBBOARD" post --board "$B" --durability none busy >/dev/null; sleep 0.2
  done ) &
ppid=$!
PIDS+=("$ppid")
t0=$(date +%s%N)
jb watch --name quiet --count 1 --timeout 1
t1=$(date +%s%N)
expect_rc 7 "no event of that name within --timeout"
ms=$(((t1 - t0) / 1000000))
[ "$ms" -lt 3500 ] || fail "watch stopped after $ms ms"
jb watch --name busy --count 2 --timeout 3
expect_rc 0 "events of the busy name"
[ "$(printf '%s\n' "$out" | grep -c '  POSTED  ')" = 2 ] || fail "watch busy: $out"
wait "$ppid"
end

# --- usage errors ----------------------------------------------------------

begin "claim-next --in-order: the first name given that has a job, whatever the priorities"
post late --priority very_high; LATE=$uuid
post first --priority very_low; FIRST=$uuid
claims "in order" "$FIRST" --name first --name late --in-order
claims "in order, the next" "$LATE" --name first --name late --in-order
jb claim-next --who w --in-order
[ "$rc" = 2 ] || fail "--in-order without --name: exit $rc, expected 2"
end

begin "cap NAME N: claim-next takes N of the name, then the others; a consume frees a slot; queues shows it"
post api --priority high; A1=$uuid
post api --priority high; A2=$uuid
post api --priority high; A3=$uuid
post other --priority low; O1=$uuid
jb cap api 2
[ "$rc" = 0 ] || fail "cap api 2: exit $rc: $err"
claims "first slot" "$A1"
claims "second slot" "$A2"
claims "the cap is full: the other name" "$O1"
claims_none "nothing left but the capped name's"
jb claim --who w "$A3"
[ "$rc" = 12 ] || fail "claim by uuid at the cap: exit $rc, expected 12"
case $err in *"cap of 2"*) ;; *) fail "claim at the cap: $err" ;; esac
jb queues
case $out in *"2/2"*api*) ;; *) fail "queues: $out" ;; esac
jb consume --who w "$A1"
claims "a freed slot" "$A3"
jb cap api none
[ "$rc" = 0 ] || fail "cap api none: exit $rc: $err"
jb queues --json
"$PYTHON" -c "
import json, sys
q = {v['name']: v for v in map(json.loads, sys.argv[1].splitlines()) if 'name' in v}
assert q['api']['cap'] is None and q['api']['held'] is None, q
" "$out" || fail "queues --json after cap none: $out"
jb cap api -3
[ "$rc" = 2 ] || fail "cap api -3: exit $rc, expected 2"
jb cap nosuch 2
[ "$rc" = 3 ] || fail "cap of a never-posted name: exit $rc, expected 3"
end

begin "cap 'PREFIX*' N: each name of the prefix capped on its own, later names too; its own cap beats it"
post resize.c1; R1=$uuid
post resize.c1; R2=$uuid
post resize.c1
post resize.c2; S1=$uuid
post resize.c2
post mail; M1=$uuid
jb cap 'resize.*' 1
[ "$rc" = 0 ] || fail "cap 'resize.*' 1: exit $rc: $err"
claims "c1's slot" "$R1" --name 'resize.*'
claims "c2's slot: c1 is full, c2 is not" "$S1" --name 'resize.*'
claims_none "each customer at its cap" --name 'resize.*'
claims "the other names go on" "$M1"
post resize.c3; T1=$uuid
claims "a new customer is capped from its first post" "$T1" --name 'resize.*'
claims_none "and then full" --name 'resize.*'
jb queues
case $out in "each name of resize.* is capped at 1 claims at once"*) ;; *) fail "queues: the prefix line: $out" ;; esac
case $out in *"1/1*"*resize.c1*) ;; *) fail "queues: c1's cap from its prefix: $out" ;; esac
jb queues --json
pycheck 'lines[1] == {"prefix": "resize.*", "cap": 1}' "queues --json: the prefix"
pycheck '[(l["name"], l["cap"], l["held"], l["cap_each"]) for l in lines[2:] if l["name"] == "resize.c1"] == [("resize.c1", 1, 1, True)]' "queues --json: cap_each"
jb cap resize.c1 3
claims "c1's own cap of 3 beats its prefix's" "$R2" --name 'resize.*'
jb cap resize.c1 none
jb queues --json
pycheck '[(l["cap"], l["held"], l["cap_each"]) for l in lines if l.get("name") == "resize.c1"] == [(1, 2, True)]' "none on the name: its prefix's cap again"
jb cap 'resize.*' none --json
pycheck 'lines == [{"name": "resize.*", "cap": None}]' "cap 'resize.*' none --json"
jb queues --json
pycheck 'len([l for l in lines if "prefix" in l]) == 0 and all(l["cap"] is None for l in lines[1:])' "no prefix, no cap left"
jb check
expect_ok "check after the prefix caps"
end

begin "rate 'PREFIX*' R P: each name of the prefix limited on its own, later names too; its own limit beats it"
post api.c1; P1=$uuid
post api.c1; P2=$uuid
post api.c1; P3=$uuid
post api.c2; Q1=$uuid
post api.c2
jb rate 'api.*' 1 600 --json
[ "$rc" = 0 ] || fail "rate 'api.*' 1 600: exit $rc: $err"
pycheck 'lines == [{"name": "api.*", "rate": 1, "period_s": 600.0}]' "rate 'api.*' --json"
claims "c1's token" "$P1" --name 'api.*'
claims "c2's token: c1 has none, c2 has its own" "$Q1" --name 'api.*'
claims_none "each customer without a token" --name 'api.*'
post api.c3; T1=$uuid
claims "a new customer is limited from its first post, full" "$T1" --name 'api.*'
post api.c3
claims_none "and then without a token" --name 'api.*'
jb queues
case $out in *"each name of api.* is limited to 1 claims per 10m"*) ;; *) fail "queues: the prefix line: $out" ;; esac
case $out in *"1/10m* +"*api.c1*) ;; *) fail "queues: c1's limit from its prefix: $out" ;; esac
jb queues --json
pycheck '[l for l in lines if "prefix" in l] == [{"prefix": "api.*", "rate": 1, "period_s": 600.0}]' "queues --json: the prefix"
pycheck '[(l["rate"], l["period_s"], l["rate_each"]) for l in lines if l.get("name") == "api.c1"] == [(1, 600.0, True)]' "queues --json: rate_each"
jb rate api.c1 2 600
claims "c1's own limit beats its prefix's" "$P2" --name 'api.*'
jb queues --json
pycheck '[(l["rate"], l["rate_each"]) for l in lines if l.get("name") == "api.c1"] == [(2, False)]' "its own limit"
jb rate api.c1 none
claims "none on the name: its prefix's limit again, full" "$P3" --name 'api.*'
jb queues --json
pycheck '[(l["rate"], l["rate_each"]) for l in lines if l.get("name") == "api.c1"] == [(1, True)]' "none on the name: the prefix's"
jb rate 'api.*' 1 0.0001
[ "$rc" = 2 ] || fail "rate 'api.*' with a bad PERIOD: exit $rc, expected 2"
jb queues --json
pycheck '[l for l in lines if "prefix" in l] == [{"prefix": "api.*", "rate": 1, "period_s": 600.0}]' "a refused prefix limit changed nothing"
jb rate 'api.*' none --json
pycheck 'lines == [{"name": "api.*", "rate": None, "period_s": None}]' "rate 'api.*' none --json"
jb queues --json
pycheck 'len([l for l in lines if "prefix" in l]) == 0 and all(l["rate"] is None for l in lines[1:])' "no prefix, no limit left"
jb check
expect_ok "check after the prefix limits"
end

begin "rate NAME COUNT PERIOD: COUNT at once, then none until the next token; a waiter wakes then; queues shows it"
post api --priority high; A1=$uuid
post api --priority high; A2=$uuid
post api --priority high; A3=$uuid
post other --priority low; O1=$uuid
jb rate api 2 60
[ "$rc" = 0 ] || fail "rate api 2 60: exit $rc: $err"
claims "first token" "$A1"
claims "second token" "$A2"
claims "no token: the other name" "$O1"
claims_none "nothing left but the limited name's"
jb claim --who w "$A3"
[ "$rc" = 12 ] || fail "claim by uuid without a token: exit $rc, expected 12"
case $err in *"rate limit of 2 claims per 1m"*) ;; *) fail "claim without a token: $err" ;; esac
jb queues
case $out in *"2/1m +"*api*) ;; *) fail "queues: $out" ;; esac
jb queues --json
"$PYTHON" -c "
import json, sys
q = {v['name']: v for v in map(json.loads, sys.argv[1].splitlines()) if 'name' in v}
assert q['api']['rate'] == 2 and q['api']['period_s'] == 60.0, q
assert q['api']['next_token'].endswith('Z') and q['other']['rate'] is None, q
" "$out" || fail "queues --json with a rate: $out"
# A limit changed starts full: one token now, the next in 1.5 s, which a
# waiter sleeps until.
post api; A4=$uuid
jb rate api 1 1.5
claims "a changed limit starts full" "$A3"
jb claim-next --who w --name api --wait 10
[ "$rc" = 0 ] && [ "$out" = "$A4" ] || fail "claim-next --wait: '$out' (exit $rc: $err)"
post api; A4=$uuid
jb rate api none --json
pycheck 'lines == [{"name": "api", "rate": None, "period_s": None}]' "rate none --json"
claims "no limit" "$A4"
jb rate api 3 60 --json
pycheck 'lines == [{"name": "api", "rate": 3, "period_s": 60.0}]' "rate --json"
for bad in "0 1" "-1 1" "x 1" "1 0" "1 -1" "1 0.0001" "1 1e3" "1 abc" "1 99999999999" "1 ." "1000000 0.001" "5"; do
  # shellcheck disable=SC2086
  jb rate api $bad
  [ "$rc" = 2 ] || fail "rate api $bad: exit $rc, expected 2 ($err)"
done
jb rate api none 5
expect_error 2 "none takes no PERIOD" "rate none with a PERIOD"
jb rate 'api*' 0 1
[ "$rc" = 2 ] || fail "rate 'api*' 0 1: exit $rc, expected 2 ($err)"
jb rate 'api*' 1 0
[ "$rc" = 2 ] || fail "rate 'api*' 1 0: exit $rc, expected 2 ($err)"
jb rate nosuch 2 1
[ "$rc" = 3 ] || fail "rate of a never-posted name: exit $rc, expected 3"
jb queues --json
"$PYTHON" -c "
import json, sys
q = {v['name']: v for v in map(json.loads, sys.argv[1].splitlines()) if 'name' in v}
assert q['api']['rate'] == 3 and q['api']['period_s'] == 60.0, q
" "$out" || fail "a refused rate changed nothing: $out"
jb stats --json
"$PYTHON" -c "
import json, sys
assert json.loads(sys.argv[1])['rate_limited'] == {'api': {'rate': 3, 'period_s': 60.0}}
" "$out" || fail "stats --json: rate_limited: $out"
jb metrics
case $out in *'jobboard_name_rate_limit_per_second{name="api"} 0.05'*) ;; *) fail "metrics: no rate limit of api" ;; esac
end

begin "usage errors: exit 2, a message naming the problem, nothing changed"
post u
jb pause
expect_error 2 "give a NAME, or --all" "pause with no NAME"
jb resume
expect_error 2 "give a NAME, or --all" "resume with no NAME"
jb pause u --all
expect_error 2 "not both" "pause NAME --all"
jb pause 'u*'
expect_error 2 "not a prefix" "pause of a prefix"
jb resume 'u*'
expect_error 2 "not a prefix" "resume of a prefix"
jb pause u v
expect_rc 2 "two names"
jb pause ''
expect_error 2 "not empty" "pause ''"
for cmd in "claim-next --who w" list count history watch; do
  # shellcheck disable=SC2086
  jb $cmd --name ''
  expect_error 2 "--name: a job's name is not empty" "$cmd --name ''"
done
jb wait --claimable --name ''
expect_error 2 "--name: a job's name is not empty" "wait --name ''"
jb pause never-posted
expect_error 3 "no job named 'never-posted'" "pause of a name never posted"
jb queues --json
pycheck 'lines == [{"board_paused": False}, {"name": "u", "ready": 1, "paused": False, "paused_since": None, "cap": None, "held": None, "cap_each": False, "rate": None, "period_s": None, "next_token": None, "rate_each": False}]' "nothing changed"
end

# --- JSON ------------------------------------------------------------------

begin "JSON outputs of pause, resume and queues"
post j1
post j2
post j2
jb claim-next --who w --name j2
jb pause j2 --json
expect_ok "pause --json"
pycheck 'lines == [{"name": "j2", "paused": True}]' "pause --json"
jb pause --all --json
pycheck 'lines == [{"name": None, "paused": True}]' "pause --all --json"
jb queues --json
pycheck 'lines[0] == {"board_paused": True} and len(lines) == 3' "queues --json: the board first"
pycheck 'sorted((l["name"], l["ready"], l["paused"]) for l in lines[1:]) == [("j1", 1, False), ("j2", 1, True)]' "queues --json: names, ready, paused"
pycheck '[l["paused_since"] is None for l in sorted(lines[1:], key=lambda l: l["name"])] == [True, False] and all(l["paused_since"] is None or l["paused_since"].endswith("Z") for l in lines[1:])' "queues --json: paused_since"
jb resume --all --json
pycheck 'lines == [{"name": None, "paused": False}]' "resume --all --json"
jb resume j2 --json
pycheck 'lines == [{"name": "j2", "paused": False}]' "resume --json"
jb queues --json
pycheck 'lines[0] == {"board_paused": False} and all(not l["paused"] for l in lines[1:])' "all resumed"
end

finish
