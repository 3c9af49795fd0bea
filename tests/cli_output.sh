#!/bin/bash
# tests/cli_output.sh - output people read: `list`'s header row and its
# columns (AGE in the duration syntax, FAILED attempts, PROGRESS), its
# --no-header and --format TEMPLATE (every field documented in list
# --help and printing, the escapes, a clear error listing the fields),
# the job's name on every `watch` line (text and JSON), what `attempts`
# counts said in show, and the --help texts holding every value the
# commands accept or print (history's and wait-done's outcomes, dead's
# causes, watch's events: the lists are read from the program's own
# messages and the library's sources, so a new value without its help
# line fails here).
#
# Runs the built ./jobboard (or $JOBBOARD) under one mktemp -d directory,
# removed on exit. Each step is a TAP line (tests/lib/harness.sh).

set -u

. "$(dirname "$0")/lib/harness.sh"
. "$(dirname "$0")/lib/board.sh"
srcdir=${srcdir:-.}

# Each step's board exists (an empty listing is listed, not waited for).
step_setup() {
  B=$ROOT/b$step_no
  "$JOBBOARD" --board "$B" init >/dev/null 2>&1 || fail "init $B"
}
# line N: line N of $out.
line() { printf '%s\n' "$out" | sed -n "$1p"; }
# A job a (--max-attempts 3, unclaimed) and a job "b c" claimed by w,
# abandoned once, claimed again and 42.5 % done: $a and $b.
two_jobs() {
  post a --max-attempts 3; a=$uuid
  post "b c" --details '{"k": [1, "x"]}'; b=$uuid
  jb claim --who w "$b"; expect_ok "claim b"
  jb abandon --who w "$b"; expect_ok "abandon b"
  jb claim --who w "$b"; expect_ok "claim b again"
  jb progress --who w "$b" 42.5 half; expect_ok "progress b"
}

HEADER="UUID                                  PRIORITY   STATE      AGE     FAILED  PROGRESS  OWNER  NAME"

begin "list: a header row names the columns; AGE, FAILED and PROGRESS; --no-header; nothing at all for no job"
jb list
expect_ok "list of an empty board"; expect_out "" "no job, no header"
two_jobs
jb list
expect_ok "list"
[ "$(printf '%s\n' "$out" | wc -l)" = 3 ] || fail "a header and 2 jobs: $out"
[ "$(line 1)" = "$HEADER" ] || fail "the header row: '$(line 1)'"
printf '%s\n' "$(line 2)" |
  grep -Eq "^$a  NORMAL     UNCLAIMED  [0-9]+s +  0/3     -         -      a\$" ||
  fail "a's line (0 of at most 3 failed, no progress): '$(line 2)'"
printf '%s\n' "$(line 3)" |
  grep -Eq "^$b  NORMAL     CLAIMED    [0-9]+s +  1       42\\.5%     w      b c\$" ||
  fail "b's line (1 failed, 42.5%, owner w): '$(line 3)'"
# Each column starts under its title.
for col in PRIORITY STATE AGE FAILED PROGRESS; do
  h=${HEADER%%"$col"*}
  for n in 2 3; do
    l=$(line $n)
    [ "${l:${#h}-2:2}" = "  " ] && [ "${l:${#h}:1}" != " " ] ||
      fail "$col is not under its title in line $n: '$l'"
  done
done
jb list --no-header
expect_ok "list --no-header"
[ "$(printf '%s\n' "$out" | cut -c1-36 | tr '\n' ' ')" = "$a $b " ] ||
  fail "--no-header: the jobs' lines only: $out"
jb list --json
pycheck 'len(lines) == 2 and lines[1]["attempts"] == 1 and lines[0]["max_attempts"] == 3 and "paused" in j' "--json as before"
end

begin "list: AGE is the time since the job was posted, in the duration syntax"
post old
sleep 2.2
jb list --format '{age}'
expect_ok "list --format {age}"
case $out in [2-9]s|1[0-9]s) ;; *) fail "age after 2.2 s: '$out'" ;; esac
end

begin "list --format: every field list --help documents prints; escapes; one line per job"
two_jobs
post "$(printf 'new\nline')" --unique K1 --delay 3600 --priority high; n=$uuid
jb list --format '{nope}'
expect_error 2 "'{nope}' is not a field (fields: " "an unknown field"
[ -z "$out" ] || fail "an unknown field printed: $out"
fields=$(printf '%s\n' "$err" | sed -n 's/.*(fields: \([a-z_, ]*\)).*/\1/p' | tr -d ,)
[ "$(printf '%s\n' $fields | wc -l)" -ge 18 ] || fail "the fields listed: '$err'"
run "$JOBBOARD" list --help
help=$out
for f in $fields; do
  printf '%s\n' "$help" | grep -Eq "^  $f +[^ ]" ||
    fail "list --help does not document the field $f"
  jb list --format "{$f}"
  expect_ok "--format {$f}"
  [ "$(printf '%s\n' "$out" | wc -l)" = 3 ] || fail "{$f}: not one line per job: $out"
done
jb list --format '{uuid}\t{name}|{priority}|{state}|{paused}|{owner}|{attempts}|{max_attempts}|{progress}|{message}|{book}|{unique}|{details}'
expect_ok "--format with many fields"
tab=$(printf '\t')
[ "$(line 1)" = "$n${tab}new\\nline|HIGH|DELAYED|false|-|0|-|-|-|-|K1|{}" ] ||
  fail "the delayed job: '$(line 1)'"
[ "$(line 2)" = "$a${tab}a|NORMAL|UNCLAIMED|false|-|0|3|-|-|-|-|{}" ] ||
  fail "job a: '$(line 2)'"
[ "$(line 3)" = "$b${tab}b c|NORMAL|CLAIMED|false|w|1|-|42.5%|half|-|-|{\"k\":[1,\"x\"]}" ] ||
  fail "job b: '$(line 3)'"
jb list --format '{sequence} {due} {created} {modified}' --limit 1
expect_ok "--format times"
printf '%s\n' "$out" | grep -Eq '^[0-9]+ [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{15}Z [0-9]{4}-.*Z [0-9]{4}-.*Z$' ||
  fail "sequence and times: $out"
jb list --format '\{{name}\}\\\n-'
expect_ok "--format escapes"
[ "$out" = "{new\\nline}\\
-
{a}\\
-
{b c}\\
-" ] || fail "the escapes: '$out'"
jb pause a
jb list --format '{name} {state} {paused}' --name a
[ "$out" = "a UNCLAIMED(paused) true" ] || fail "a paused job: '$out'"
end

begin "list --format: a bad template or --json too is a usage error, nothing printed"
for t in '{name' 'x\q' 'x\' '{}' '{uuid}{Name}'; do
  jb list --format "$t"
  expect_rc 2 "--format '$t'"
  [ -z "$out" ] || fail "--format '$t' printed: $out"
  case $err in *"--format: "*) ;; *) fail "--format '$t': '$err'" ;; esac
done
jb list --format '{name'
expect_stderr "without its }" "an unclosed brace"
expect_stderr "(fields: uuid, name" "the fields listed"
jb list --format 'x\q'
expect_stderr "'\\q' is not an escape" "a bad escape"
jb list --format '{uuid}' --json
expect_error 2 "--format and --json" "--format with --json"
end

begin "watch: every line names its job, the JSON too; a job that left keeps its name"
post "first job"; f=$uuid
post second; s=$uuid
jb claim --who w "$f"; jb consume --who w "$f"
jb watch --from 1 --timeout 0
expect_ok "watch"
got=$(printf '%s\n' "$out" | awk -F'  ' '{print $2 "," $4 "," $5}' | tr '\n' ' ')
[ "$got" = "POSTED,first job,- POSTED,second,- CLAIMED,first job,w CONSUMED,first job,w " ] ||
  fail "watch lines: $out"
jb watch --from 1 --timeout 0 --json
pycheck '[l["name"] for l in lines] == ["first job", "second", "first job", "first job"]' "watch --json"
# Read afresh by a new watch once the job left the board: its history.
jb watch --from 3 --timeout 0 --name 'first*'
[ "$(printf '%s\n' "$out" | wc -l)" = 2 ] && case $out in *"  first job  w  "*) ;; *) false ;; esac ||
  fail "watch --name of a job that left: $out"
end

begin "attempts counts failed attempts, and show and list say so"
post once; o=$uuid
jb claim --who w "$o"
jb show "$o"
printf '%s\n' "$out" | grep -qx 'attempts:  0 failed' || fail "claimed once: $out"
jb abandon --who w "$o"
jb show "$o"
printf '%s\n' "$out" | grep -qx 'attempts:  1 failed' || fail "abandoned once: $out"
jb claim --who w "$o"; jb consume --who w "$o"
jb history --json
pycheck 'j["attempts"] == 1' "history: the failed attempt"
for cmd in show list history; do
  run "$JOBBOARD" $cmd --help
  case $out in *"failed attempts"*) ;; *) fail "$cmd --help does not say attempts are failed attempts" ;; esac
done
end

begin "--help names every value the commands accept or print"
run "$JOBBOARD" history --outcome nope
outcomes=$(printf '%s\n' "$err" | sed -n 's/.*(one of: \([a-z, ]*\)).*/\1/p' | tr -d ,)
[ "$(printf '%s\n' $outcomes | wc -l)" -ge 8 ] || fail "the outcomes: $err"
run "$JOBBOARD" history --help
for w in $outcomes; do
  printf '%s\n' "$out" | grep -Eq "^  $w +[^ ]" || fail "history --help omits the outcome $w"
done
for cmd in wait-done stats; do
  run "$JOBBOARD" $cmd --help
  for w in $outcomes; do
    case $out in *"$w"*) ;; *) fail "$cmd --help omits the outcome $w" ;; esac
  done
done
causes=$(sed -n '/^const char \*jb_dead_cause_name/,/^}/s/.*return "\([a-z]*\)";.*/\1/p' "$srcdir/core/life.c")
[ "$(printf '%s\n' $causes | wc -l)" -ge 4 ] || fail "the causes in core/life.c: $causes"
run "$JOBBOARD" dead --help
for w in $causes; do
  printf '%s\n' "$out" | grep -Eq "^  $w +[^ ]" || fail "dead --help omits the cause $w"
done
events=$(sed -n '/^const char \*jb_event_type_name/,/^}/s/.*return "\([A-Z]*\)";.*/\1/p' "$srcdir/core/watch.c" |
  grep -v TRIMMED)
[ "$(printf '%s\n' $events | wc -l)" -ge 15 ] || fail "the events in core/watch.c: $events"
run "$JOBBOARD" watch --help
for w in $events; do
  printf '%s\n' "$out" | grep -Eq "^  $w +[^ ]" || fail "watch --help omits the event $w"
done
run "$JOBBOARD" list --help
for w in --format --no-header AGE FAILED PROGRESS; do
  case $out in *"$w"*) ;; *) fail "list --help omits $w" ;; esac
done
run "$JOBBOARD" watch --help
case $out in *"SEQ  TYPE  UUID  NAME  OWNER  TIME"*'"name"'*) ;; *) fail "watch --help: the name" ;; esac
end

finish
