#!/bin/bash
# tests/cli_durations.sh - one syntax of durations and times at the
# prompt: every option, operand and environment variable taking a
# duration reads 500ms, 90s, 5m, 1h30m, 7d, 2d12h, 1.5h or bare seconds
# (milliseconds for the flush interval); relative times (-1h, "1h ago",
# +10m) wherever a time is taken; refusals name the option and the forms
# and change nothing; durations printed the way they are taken; long
# options taken only as spelled, in every command.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit. Each step is a TAP line (tests/lib/harness.sh).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/board.sh"
unset JOBBOARD_FLUSH_INTERVAL

# Each step's board is made first (the durations are what is tested).
step_setup() {
  B=$ROOT/b$step_no
  "$JOBBOARD" --board "$B" init >/dev/null 2>&1 || fail "init $B"
}

# pycheck EXPR WHAT: $out is JSON lines, `lines` their list, `j` the first;
# secs(T) is an RFC 3339 time of the CLI in seconds since the epoch.
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys, datetime, time
def secs(t):
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
now = time.time()
lines = [json.loads(l) for l in sys.stdin.read().splitlines() if l]
j = lines[0] if lines else None
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
# count_is N WHAT: the board holds N jobs (nothing changed by a refusal).
count_is() {
  jb count
  [ "$out" = "$1" ] || fail "$2: $out jobs, expected $1"
}
# has TEXT SUBSTRING WHAT
has() {
  case $1 in *"$2"*) ;; *) fail "$3: '$2' not in: $1" ;; esac
}

FORMS="500ms 90s 5m 1h30m 7d 2d12h 1.5h 1.5 90 0.25s 1d2h3m4s5ms"

begin "post: every duration option takes every form"
for f in $FORMS; do
  jb post --delay "$f" --time-limit "$f" --backoff "$f" --backoff-max 10d \
    --expires "$f" "x-$f"
  expect_rc 0 "post with $f"
done
count_is 11 "the posts"
end

begin "post: the values are the durations meant"
post --delay 1h30m --time-limit 2m30s --expires 2d12h x
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - secs(j["created"]) - 5400) < 0.01' "--delay 1h30m"
pycheck 'j["time_limit"] == 150.0' "--time-limit 2m30s"
pycheck 'abs(secs(j["deadline"]) - secs(j["created"]) - 216000) < 0.01' "--expires 2d12h"
post --delay 500ms y
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - secs(j["created"]) - 0.5) < 0.01' "--delay 500ms"
# A bare number is still seconds, fractions allowed.
post --delay 1.5 z
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - secs(j["created"]) - 1.5) < 0.01' "--delay 1.5"
# In --batch input as on the command line.
printf '%s\n' '{"name": "b", "delay": "1h30m", "time_limit": "90s"}' >"$ROOT/in"
run "$JOBBOARD" --board "$B" post --batch <"$ROOT/in"
expect_ok "post --batch with durations in strings"
jb show --json "$out"
pycheck 'abs(secs(j["not_before"]) - secs(j["created"]) - 5400) < 0.01 and j["time_limit"] == 90.0' "batch delay 1h30m"
end

begin "post: refusals name the option and the forms, and change nothing"
ERROR_PREFIX="jobboard: post: "
jb post --delay 5x x
expect_error 2 "'5x' is not a duration for --delay: use 500ms, 90s, 5m, 1h30m, 7d or seconds" "--delay 5x"
jb post --delay 5M x
expect_error 2 "'5M' is not a duration for --delay: use 500ms, 90s, 5m, 1h30m, 7d or seconds (units are lowercase)" "--delay 5M"
jb post --delay "5 m" x
expect_error 2 "(without spaces)" "--delay '5 m'"
jb post --delay "" x
expect_error 2 "an empty value is not a duration for --delay" "--delay ''"
jb post --delay -5s x
expect_error 2 "'-5s' is negative, out of range for --delay: from 0s to 3650d" "--delay -5s"
jb post --delay 3651d x
expect_error 2 "'3651d' is out of range for --delay: from 0s to 3650d" "--delay 3651d"
jb post --delay 99999999999999999999999d x
expect_error 2 "is out of range for --delay" "--delay overflowing"
for bad in 1m30 30m1h 1h1h 1e3 inf 5sec 1w +5 .; do
  jb post --delay "$bad" x
  expect_error 2 "'$bad' is not a duration for --delay" "--delay $bad"
done
jb post --time-limit 0 x
expect_error 2 "'0' is out of range for --time-limit: from 1ms to 30d" "--time-limit 0"
jb post --time-limit 31d x
expect_error 2 "out of range for --time-limit" "--time-limit 31d"
jb post --expires 1y x
expect_error 2 "'1y' is not a duration for --expires" "--expires 1y"
jb post --backoff soon x
expect_error 2 "'soon' is not a duration for --backoff" "--backoff soon"
jb post --backoff-max 1x x
expect_error 2 "'1x' is not a duration for --backoff-max" "--backoff-max 1x"
printf '%s\n' '{"name": "b", "delay": "5x"}' >"$ROOT/in"
unset ERROR_PREFIX
run "$JOBBOARD" --board "$B" post --batch <"$ROOT/in"
expect_error 2 '"delay" must be a duration from 0s to 3650d' "batch delay 5x"
count_is 0 "after the refusals"
end

begin "claim, extend, expires-in: leases as durations, the time left printed as one"
post x
jb claim --who w --lease 4m10s "$uuid"
expect_rc 0 "claim --lease 4m10s"
# Whole seconds, rounded up: 4m10s, or a little less on a slow machine.
jb expires-in "$uuid"
case $out in 4m10s|4m[0-9]s) ;; *) fail "expires-in after --lease 4m10s: '$out'" ;; esac
jb expires-in --json "$uuid"
pycheck '245000 < j["expires_in_ms"] <= 250000 and j["claimed"] is True' "expires-in --json"
jb extend --who w --lease 1h30m "$uuid"
expect_rc 0 "extend --lease 1h30m"
jb expires-in "$uuid"
case $out in 1h30m|1h29m[0-5][0-9]s) ;; *) fail "expires-in after extend 1h30m: '$out'" ;; esac
jb extend --who w --lease 1.5 "$uuid"
expect_rc 0 "extend --lease 1.5 (bare seconds)"
ERROR_PREFIX="jobboard: claim: "
jb claim --who v --lease 5x "$uuid"
expect_error 2 "'5x' is not a duration for --lease" "claim --lease 5x"
jb claim --who v --lease 0 "$uuid"
expect_error 2 "'0' is out of range for --lease: from 1ms to 30d" "claim --lease 0"
unset ERROR_PREFIX
end

begin "claim-next --wait, wait, watch, wait-done --timeout; abandon --retry-in; snooze"
jb claim-next --who w --wait 300ms
expect_rc 7 "claim-next --wait 300ms on an empty board"
jb wait --timeout 200ms
expect_rc 7 "wait --timeout 200ms"
jb watch --timeout 100ms
expect_rc 0 "watch --timeout 100ms"
post x
jb wait-done --timeout 100ms "$uuid"
expect_rc 7 "wait-done --timeout 100ms"
jb wait --timeout inf --claimable
expect_rc 0 "wait --timeout inf with a claimable job"
jb claim --who w "$uuid"
jb abandon --who w --retry-in 1h30m "$uuid"
expect_rc 0 "abandon --retry-in 1h30m"
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - now - 5400) < 60' "abandon --retry-in 1h30m"
jb claim --who w "$uuid"
expect_rc 12 "claim while retried later"
post y
jb claim --who w "$uuid"
jb snooze --who w "$uuid" 2d12h
expect_rc 0 "snooze 2d12h"
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - now - 216000) < 60' "snooze 2d12h"
ERROR_PREFIX="jobboard: "
jb wait --timeout 5x
expect_error 2 "'5x' is not a duration for --timeout" "wait --timeout 5x"
jb claim-next --who w --wait -1s
expect_error 2 "'-1s' is negative, out of range for --wait" "claim-next --wait -1s"
jb abandon --who w --retry-in later "$uuid"
expect_error 2 "'later' is not a duration for --retry-in (or 'backoff')" "abandon --retry-in later"
jb snooze --who w "$uuid" 5z
expect_error 2 "'5z' is not a duration for the snooze" "snooze 5z"
unset ERROR_PREFIX
end

begin "policy, retention, schedule, rate, dead purge: taken and printed as durations"
jb policy --backoff 1m30s --backoff-max 2h
expect_out "max_attempts: none
backoff:      1m30s
backoff_max:  2h" "policy"
jb policy --json
pycheck 'j["backoff"] == 90.0 and j["backoff_max"] == 7200.0' "policy --json (seconds)"
jb retention --history-max-age 1d12h --dead-max-age 90m
expect_rc 0 "retention with durations"
has "$out" "history_max_age: 1d12h" "retention"
has "$out" "dead_max_age:    1h30m" "retention"
jb retention --history-max-age 5x
expect_error 2 "'5x' is not a duration for --history-max-age (or none, default)" "retention 5x"
jb schedule add hb --every 1h30m --job-name ping --start 2026-01-01T00:00:00Z
expect_rc 0 "schedule add --every 1h30m"
jb schedule list
has "$out" "hb  every 1h30m  " "schedule list"
jb schedule add hb2 --every 500ms --job-name ping
expect_error 2 "'500ms' is out of range for --every: from 1s to 3650d" "--every 500ms"
jb schedule add hb3 --every 1m --job-name ping --start "+10m"
expect_rc 0 "schedule add --start +10m"
post api
jb rate api 10 1m
expect_rc 0 "rate 10 per 1m"
jb queues
has "$out" "10/1m" "queues"
jb rate api 10 5q
expect_error 2 "'5q' is not a duration for PERIOD" "rate 5q"
jb dead purge --older-than 7d --yes
expect_rc 0 "dead purge --older-than 7d"
jb dead purge --older-than 7x --yes
expect_error 2 "'7x' is not a duration for --older-than" "dead purge --older-than 7x"
end

begin "top --interval, flush --interval, JOBBOARD_FLUSH_INTERVAL"
jb top --once --interval 1m30s
expect_rc 0 "top --interval 1m30s"
jb top --once --interval 50ms
expect_error 2 "'50ms' is out of range for --interval: from 100ms to 1d" "top --interval 50ms"
jb flush --interval 2s --json
pycheck 'j["flush_interval_ms"] in (0, 2000)' "flush --interval 2s"
jb flush --interval 1m --json
expect_rc 0 "flush --interval 1m"
# A bare number is milliseconds here, as it always was.
run env JOBBOARD_FLUSH_INTERVAL=250 "$JOBBOARD" --board "$B" --durability interval flush --json
pycheck 'j["flush_interval_ms"] == 250' "JOBBOARD_FLUSH_INTERVAL=250"
run env JOBBOARD_FLUSH_INTERVAL=1.5s "$JOBBOARD" --board "$B" --durability interval flush --json
pycheck 'j["flush_interval_ms"] == 1500' "JOBBOARD_FLUSH_INTERVAL=1.5s"
run env JOBBOARD_FLUSH_INTERVAL=1x "$JOBBOARD" --board "$B" count
expect_error 2 "'1x' is not a duration for JOBBOARD_FLUSH_INTERVAL: use 500ms, 90s, 5m, 1h30m, 7d or milliseconds" "JOBBOARD_FLUSH_INTERVAL=1x"
end

begin "work: --timeout, --time-limit, --grace and the snooze file"
jb work --who w --timeout 300ms --time-limit 1m30s --grace 2s -- true
expect_rc 0 "work with durations"
jb work --who w --grace 2x -- true
expect_error 2 "'2x' is not a duration for --grace" "work --grace 2x"
post s
jb work --who w --jobs 1 -- sh -c 'echo 1h30m >"$JOBBOARD_SNOOZE_FILE"; exit 76'
expect_rc 0 "work: exit 76 with 1h30m in the snooze file"
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - now - 5400) < 60 and j["snoozes"] == 1' "snoozed for 1h30m"
end

begin "relative times: history --since/--until, post --not-before"
post done1
jb claim --who w "$uuid"
jb consume --who w "$uuid"
for since in -1h "1h ago" "30m ago" -3600 "1d ago" now-is-not @0; do
  jb history --since "$since"
  case $since in
    now-is-not) expect_error 2 "'now-is-not' is not a time for --since: use 2026-11-28T09:30:00Z (UTC unless an offset is given), @SECONDS, now, -1h, '1h ago' or +10m" "--since $since" ;;
    *) expect_rc 0 "--since $since"
       has "$out" "$uuid" "--since $since" ;;
  esac
done
jb history --since +1h
expect_out "" "history --since +1h: nothing yet"
jb history --until "1h ago"
expect_out "" "history --until '1h ago': nothing then"
# A duration with its unit alone is that long ago, for --since and --until.
jb history --since 1h
has "$out" "$uuid" "history --since 1h"
jb history --until 1h
expect_out "" "history --until 1h: nothing then"
jb history --since 2x
expect_error 2 "'2x' is not a time for --since" "--since 2x"
jb history --since "1h  ago" --until +1m
has "$out" "$uuid" "--since '1h  ago' --until +1m"
jb history --since "1x ago"
expect_error 2 "'1x ago' is not a time for --since" "--since '1x ago'"
jb history --since "-1h ago"
expect_error 2 "is not a time for --since" "--since '-1h ago'"
post --not-before +10m later
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - now - 600) < 60' "--not-before +10m"
post --not-before "1h ago" past
jb state "$uuid"
expect_out "UNCLAIMED" "--not-before '1h ago': claimable"
post --not-before +90 later90
jb show --json "$uuid"
pycheck 'abs(secs(j["not_before"]) - now - 90) < 60' "--not-before +90 (seconds)"
jb post --not-before soon x
expect_error 2 "'soon' is not a time for --not-before" "--not-before soon"
end

begin "help and the man page say the forms"
for cmd in post claim extend snooze history policy retention rate work top; do
  run "$JOBBOARD" "$cmd" --help
  has "$out" "DURATION is a number with units" "$cmd --help"
done
run "$JOBBOARD" history --help
has "$out" "-1h or '1h ago'" "history --help: relative times"
run "$JOBBOARD" post --help
has "$out" "now, or a DURATION from now" "post --help: relative times"
end

begin "long options are taken only as spelled"
ERROR_PREFIX="jobboard: "
jb post --detail '{}' x
expect_error 2 "post: --detail is not an option; did you mean --details? (try 'jobboard post --help')" "post --detail"
jb post --detail='{}' x
expect_error 2 "--detail is not an option; did you mean --details?" "post --detail=..."
jb list --jso
expect_error 2 "list: --jso is not an option; did you mean --json?" "list --jso"
jb history --sinc -1h
expect_error 2 "history: --sinc is not an option; did you mean --since?" "history --sinc"
jb claim-next --who w --wai 1
expect_error 2 "--wai is not an option; did you mean --wait?" "claim-next --wai"
jb claim --wh w --lease 1 0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9
expect_error 2 "--wh is not an option; did you mean --who?" "claim --wh"
run "$JOBBOARD" --boa "$B" count
expect_error 2 "--boa is not an option; did you mean --board? (try 'jobboard --help')" "global --boa"
jb work --who w --concurr 2 -- true
expect_error 2 "work: --concurr is not an option; did you mean --concurrency?" "work --concurr"
jb work --wh w -- true
expect_error 2 "work: --wh is not an option; did you mean --who?" "work --wh"
run "$JOBBOARD" demo --job 3
expect_error 2 "demo: --job is not an option; did you mean --jobs?" "demo --job"
unset ERROR_PREFIX
count_is 0 "after the abbreviations"
# The exact spellings, both forms, and -- ending the options.
jb post --details '{"a": 1}' x
expect_rc 0 "post --details VALUE"
jb post --details='{"a": 2}' x
expect_rc 0 "post --details=VALUE"
jb post --details '{"a": 3}' -- x
expect_rc 0 "post ... -- NAME"
# A value that looks like an abbreviation is a value.
jb post --unique --detail x
expect_rc 0 "post --unique --detail"
run "$JOBBOARD" --board="$B" list --json
expect_rc 0 "--board=DIR list --json"
jb count
expect_out 4 "the posts spelled in full"
end

finish
