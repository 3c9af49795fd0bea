#!/bin/sh
# cli_schedule_tz.sh - `jobboard schedule` as cron users write it: month
# and weekday names, @daily, @reboot refused, --tz with the days clocks
# change (Europe/Berlin and America/New_York, 2026), --overlap skip and
# queue, the message for a taken name, and what `schedule run` prints
# (text and --json). Every tick is at a simulated time (run --at).
# Needs tzdata (/usr/share/zoneinfo).
set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output"
[ -f /usr/share/zoneinfo/Europe/Berlin ] ||
  bail "no /usr/share/zoneinfo/Europe/Berlin: install tzdata"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-cli-schedule-tz.XXXXXX") ||
  bail "mktemp failed"
at_exit 'rm -rf "$ROOT"'
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

step_setup() { B=$ROOT/board$step_no; "$JOBBOARD" --board "$B" init >/dev/null; }
ERROR_PREFIX="jobboard: "

jb() {
  run "$JOBBOARD" --board "$B" "$@"
}

# json_check EXPR: EXPR (Python) is true of the last run's stdout, parsed
# as one JSON value (j) or one per line (lines).
json_check() {
  printf '%s' "$out" | "$PYTHON" -c '
import json, sys
text = sys.stdin.read()
lines = [json.loads(l) for l in text.splitlines() if l.strip()]
j = lines[0] if len(lines) == 1 else None
sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" || fail "json: $1 is false of: $out"
}

# next_of NAME: the schedule's next run, as list --json says it.
next_of() {
  jb schedule list --json
  printf '%s' "$out" | "$PYTHON" -c '
import json, sys
for l in sys.stdin.read().splitlines():
    s = json.loads(l)
    if s["name"] == sys.argv[1]: print(s["next"])' "$1"
}

begin "names of weekdays and months, @daily, @reboot refused"
jb schedule add wk --cron '0 9 * * mon-FRI' --job-name w --start 2026-01-02T12:00:00Z
expect_out "wk  next run 2026-01-05T09:00:00.000000Z" "MON-FRI after a Friday: Monday"
jb schedule add q --cron '0 0 1 JAN,apr,Jul,OCT *' --job-name q --start 2026-02-01T00:00:00Z
expect_out "q  next run 2026-04-01T00:00:00.000000Z" "quarterly by month names"
jb schedule add d --cron @daily --job-name d --start 2026-01-01T12:00:00Z
expect_out "d  next run 2026-01-02T00:00:00.000000Z" "@daily"
jb schedule add r --cron @reboot --job-name r
expect_error 2 "@reboot is not taken" "@reboot"
jb schedule add r --cron '0 9 * * MONDAY' --job-name r
expect_error 2 "field 5 (day of week): 'MONDAY' is not a name (SUN MON TUE WED THU FRI SAT)" "a bad weekday name"
jb schedule add r --cron '0 9 * JANUARY *' --job-name r
expect_error 2 "field 4 (month): 'JANUARY' is not a name" "a bad month name"
jb schedule list
[ "$(printf '%s\n' "$out" | wc -l)" -eq 3 ] || fail "refusals added something: $out"
end

begin "--tz: a daily 02:30 on the days clocks change, Europe/Berlin"
jb schedule add nightly --cron '30 2 * * *' --tz Europe/Berlin --job-name backup --start 2026-03-28T02:00:00Z
expect_out "nightly  next run 2026-03-29T01:00:00.000000Z  time zone Europe/Berlin" "spring forward: 02:30 skipped, runs at 03:00 CEST"
jb schedule run --at 2026-03-29T01:00:00Z
expect_ok "the skipped hour's run"
case $out in
  "posted 1 job backup "*" (schedule nightly, run 2026-03-29T01:00:00.000000Z)") ;;
  *) fail "run at the change: $out" ;;
esac
[ "$(next_of nightly)" = 2026-03-30T00:30:00.000000Z ] || fail "the day after: $(next_of nightly)"
jb schedule add fall --cron '30 2 * * *' --tz Europe/Berlin --job-name backup --start 2026-10-24T12:00:00Z
[ "$(next_of fall)" = 2026-10-25T00:30:00.000000Z ] || fail "fall back: first 02:30 (CEST): $(next_of fall)"
jb schedule run --at 2026-10-25T00:30:00Z
jb schedule run --at 2026-10-25T01:30:00Z
expect_out "posted 0 jobs (next run 2026-10-26T01:30:00.000000Z)" "the second 02:30 (CET) does not run"
jb schedule list --json
json_check 'any(s["name"] == "fall" and s["runs"] == 1 and s["tz"] == "Europe/Berlin" for s in lines)'
end

begin "--tz: 01:30 on fall-back day runs once, America/New_York"
jb schedule add ny --cron '30 1 * * *' --tz America/New_York --job-name report --start 2026-11-01T00:00:00Z
expect_out "ny  next run 2026-11-01T05:30:00.000000Z  time zone America/New_York" "01:30 EDT"
jb schedule run --at 2026-11-01T05:30:00Z
expect_ok "the first 01:30"
jb schedule run --at 2026-11-01T06:30:00Z
expect_out "posted 0 jobs (next run 2026-11-02T06:30:00.000000Z)" "the second 01:30 (EST)"
jb count
expect_out 1 "one job for the day"
end

begin "--tz refusals: unknown zone, malformed name, with --every; nothing added"
jb schedule add x --cron '0 0 * * *' --tz Mars/Olympus --job-name x
expect_error 2 "tz: no time zone 'Mars/Olympus' in /usr/share/zoneinfo (no such file; is tzdata installed?)" "an unknown zone"
jb schedule add x --cron '0 0 * * *' --tz ../../etc/passwd --job-name x
expect_error 2 "is not a time zone name" "a path"
jb schedule add x --every 60 --tz Europe/Berlin --job-name x
expect_error 2 "--tz is for --cron" "--tz with --every"
jb schedule list --tz UTC
expect_error 2 "the schedule's options are for add" "list --tz"
jb schedule list
expect_out "" "nothing added"
end

begin "--overlap skip: no run while the last is queued or running; counted"
jb schedule add m --cron '* * * * *' --overlap skip --job-name minutely --start 2026-01-01T00:00:00Z
jb schedule run --at 2026-01-01T00:00:00Z
expect_ok "first run"
jb schedule run --at 2026-01-01T00:01:00Z
expect_out "skipped 1 run of m (run 2026-01-01T00:01:00.000000Z): an earlier run is still queued or running (--overlap skip)" "queued: skipped"
jb claim-next --who w
expect_ok "claim"
u=$out
jb schedule run --at 2026-01-01T00:02:00Z --json
json_check 'j["posted"] == 0 and j["jobs"] == [] and j["skipped"] == [{"schedule": "m", "run": "2026-01-01T00:02:00.000000Z", "count": 1}]'
jb consume --who w "$u"
expect_ok "consume"
jb schedule run --at 2026-01-01T00:03:00Z --json
json_check 'j["posted"] == 1 and j["skipped"] == [] and [(x["schedule"], x["name"], x["run"]) for x in j["jobs"]] == [("m", "minutely", "2026-01-01T00:03:00.000000Z")] and len(j["jobs"][0]["uuid"]) == 36'
jb schedule list
expect_out "m  cron '* * * * *'  skip  next 2026-01-01T00:04:00.000000Z  runs 2  skipped 2 (overlap skip)  minutely" "list shows the skipped runs"
jb schedule list --json
json_check 'j["overlap"] == "skip" and j["skipped"] == 2 and j["runs"] == 2 and j["tz"] == "UTC"'
end

begin "--overlap queue (the default) posts every run"
jb schedule add m --cron '* * * * *' --job-name minutely --start 2026-01-01T00:00:00Z
jb schedule run --at 2026-01-01T00:00:00Z
jb schedule run --at 2026-01-01T00:01:00Z
jb count
expect_out 2 "two runs queued"
jb schedule add bad --cron '* * * * *' --overlap sometimes --job-name x
expect_error 2 "--overlap: 'sometimes' is not skip or queue" "a bad --overlap"
end

begin "a taken name: the message names --replace; --replace keeps the counts"
jb schedule add s --cron '0 * * * *' --overlap skip --job-name a --start 2026-01-01T00:00:00Z
jb schedule add s --cron '0 * * * *' --job-name a
expect_error 11 "schedule s already exists: remove it first (schedule remove), or add it again with --replace" "a taken name"
jb schedule run --at 2026-01-01T00:00:00Z
jb schedule run --at 2026-01-01T01:00:00Z
jb schedule add s --cron '0 9 * * MON-FRI' --tz Europe/Berlin --overlap skip --job-name a --replace
expect_ok "replace"
jb schedule list --json
json_check 'j["runs"] == 1 and j["skipped"] == 1 and j["cron"] == "0 9 * * MON-FRI" and j["tz"] == "Europe/Berlin"'
jb check
expect_rc 0 "check"
end

finish
