#!/bin/bash
# tests/snooze.sh - snoozes and deadlines to start through the CLI:
# `jobboard snooze` (no attempt spent, refused to anyone but the claim's
# owner and past --max-snoozes, bad SECONDS refused with nothing
# written), `work` snoozing the job of a command that exits 76 for the
# seconds it wrote to JOBBOARD_SNOOZE_FILE (the default when none, a
# warning when garbage), `post --expires` (history says expired; claim
# refused after the deadline; --expires-dead makes a dead letter) and
# watch printing SNOOZED and DEADLINE events.
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit. Each step is a TAP line (tests/lib/harness.sh).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/board.sh"

begin "snooze: the owner gives the job back for a while, no attempt spent; show, list --json and watch say so"
post s --max-snoozes 2
a=$uuid
jb claim --who w "$a"; expect_ok "claim"
jb --json snooze --who w "$a" 30
expect_ok "snooze"
pycheck 'j["state"] == "UNCLAIMED" and j["snoozes"] == 1 and j["attempts"] == 0 and j["not_before"]' "snooze --json"
jb claim --who w "$a"; expect_rc 12 "claim before the due time"
jb --json show "$a"
pycheck 'j["snoozes"] == 1 and j["max_snoozes"] == 2 and j["attempts"] == 0' "show --json"
jb show "$a"; expect_ok "show"
case $out in *"snoozes:   1 of at most 2"*) ;; *) fail "show: no snoozes line: $out" ;; esac
jb --json watch --from 1 --timeout 0.2
pycheck 'any(e["type"] == "SNOOZED" and e["owner"] == "w" for e in lines)' "watch"
end

begin "snooze: refused to another owner, for an unclaimed job, for bad SECONDS and past --max-snoozes; nothing written"
post s --max-snoozes 1
a=$uuid
jb snooze --who w "$a" 5; expect_error 3 "not claimed"
jb claim --who w "$a"; expect_ok "claim"
before=$(digest)
jb snooze --who x "$a" 5; expect_error 5 "claimed by w"
jb snooze --who w "$a" -1
expect_error 2 "'-1' is a negative number, which no argument of 'snooze' takes (UUID DURATION)" "DURATION -1"
for bad in abc 1e99 "" 5x; do
  jb snooze --who w "$a" "$bad"
  expect_rc 2 "SECONDS '$bad'"
done
jb snooze --who w not-a-uuid 5; expect_rc 2 "bad uuid"
jb snooze "$a" 5; expect_rc 2 "no --who"
[ "$(digest)" = "$before" ] || fail "a refused snooze changed the board"
jb snooze --who w "$a" 0; expect_ok "first snooze"
jb claim --who w "$a"; expect_ok "claim again"
before=$(digest)
jb snooze --who w "$a" 0; expect_error 2 "max_snoozes"
[ "$(digest)" = "$before" ] || fail "a snooze past the limit changed the board"
jb state "$a"; expect_out CLAIMED "the claim stands"
jb consume --who w "$a"; expect_ok "consume"
jb --json history
pycheck 'j["snoozes"] == 1 and j["attempts"] == 0' "history keeps the snoozes"
jb --json stats
pycheck 'j["totals"]["snoozed"] == 1' "stats counts them"
jb metrics
case $out in *"jobboard_snoozes_total 1"*) ;; *) fail "metrics: no snoozes_total" ;; esac
end

begin "work: a command exiting 76 snoozes its job for the seconds in JOBBOARD_SNOOZE_FILE, else 60 s; garbage is warned of"
cat >"$ROOT/cmd" <<'EOF'
#!/bin/sh
[ -n "$JOBBOARD_SNOOZE_FILE" ] || exit 1
case "$JOBBOARD_NAME" in
  five) echo 5 >"$JOBBOARD_SNOOZE_FILE"; exit 76 ;;
  none) exit 76 ;;
  junk) echo soon >"$JOBBOARD_SNOOZE_FILE"; exit 76 ;;
  *) exit 0 ;;
esac
EOF
chmod +x "$ROOT/cmd"
post five; f=$uuid
post none; n=$uuid
post junk; k=$uuid
t0=$(date +%s)
jb --json work --who w --jobs 3 --timeout 2 "$ROOT/cmd"
[ "$rc" = 0 ] || fail "work: exit $rc: $err"
# The jobs' lines, then the summary's (no uuid).
pycheck 'len(lines) == 4 and all(l["outcome"] == "snoozed" and l["exit"] == 76 for l in lines[:3]) and "summary" in lines[3]' "work --json"
case $err in *"JOBBOARD_SNOOZE_FILE holds 'soon'"*) ;; *) fail "no warning: $err" ;; esac
due_in() { # due_in UUID: seconds until its due time
  jb --json show "$1"
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys, datetime
j = json.load(sys.stdin)
assert j["state"] == "UNCLAIMED" and j["snoozes"] == 1 and j["attempts"] == 0, j
t = datetime.datetime.strptime(j["not_before"], "%Y-%m-%dT%H:%M:%S.%fZ")
print(int(t.replace(tzinfo=datetime.timezone.utc).timestamp()) - int(sys.argv[1]))
' "$t0"
}
d=$(due_in "$f"); [ "$d" -ge 4 ] && [ "$d" -le 8 ] || fail "five: due in $d s"
d=$(due_in "$n"); [ "$d" -ge 59 ] && [ "$d" -le 63 ] || fail "none: due in $d s"
d=$(due_in "$k"); [ "$d" -ge 59 ] && [ "$d" -le 63 ] || fail "junk: due in $d s"
end

begin "post --expires: not claimed by the deadline, the job ends expired (history, watch); a claim after it is refused"
post e --expires 0.2
a=$uuid
post e --expires 0.2 --expires-dead
d=$uuid
post e --expires 0.2
c=$uuid
post kept --expires 600
k=$uuid
jb --json show "$a"
pycheck 'j["deadline"] is not None' "show --json deadline"
sleep 0.4
jb claim --who w "$c"; expect_error 3 "deadline"
jb claim-next --who w
expect_ok "claim-next takes the job without a deadline passed"
expect_out "$k" "claim-next's job"
jb --json history
pycheck 'sorted(r["outcome"] for r in lines if r["uuid"] in ("'"$a"'", "'"$c"'")) == ["expired", "expired"]' "history says expired"
pycheck '[r["outcome"] for r in lines if r["uuid"] == "'"$d"'"] == ["dead"]' "--expires-dead: a dead letter"
jb --json history --outcome expired
pycheck 'len(lines) == 2' "history --outcome expired"
jb --json dead show "$d"
pycheck 'j["cause"] == "expired"' "dead letter cause"
jb --json watch --from 1 --timeout 0.2
pycheck 'sum(e["type"] == "DEADLINE" for e in lines) == 3' "watch: DEADLINE events"
jb check; expect_ok "check"
end

begin "post: bad --expires, --max-snoozes and --expires-dead alone are refused; nothing posted"
for bad in "--expires -1" "--expires 0" "--expires abc" "--max-snoozes 0" \
  "--max-snoozes x" "--expires-dead"; do
  # shellcheck disable=SC2086
  jb post bad $bad
  expect_rc 2 "post $bad"
done
[ ! -e "$B" ] || fail "a refused post created the board"
end

finish
