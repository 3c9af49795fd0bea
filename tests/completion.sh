#!/bin/bash
# tests/completion.sh - the bash completion (contrib/bash-completion/jobboard)
# with bash-completion's own helpers, on the built ./jobboard: commands
# (read from `jobboard --help`), options of post (from `jobboard post
# --help`), durability and priority values, `help COMMAND`, subcommands of
# dead, a schedule's --catch-up values, --board directories, the uuids and
# the job names (--name, pause NAME) of the board named by --board. Every
# command of `jobboard --help` completes some options.
#
# Skipped (TAP: 1..0 # SKIP) when bash-completion is not installed (apt-get install
# bash-completion): the completion relies on its _init_completion.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || bail "no directory $srcdir"
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}
J=$top_builddir/jobboard

bc=
for f in "$(pkg-config --variable=datadir bash-completion 2>/dev/null)/bash-completion/bash_completion" \
  /usr/share/bash-completion/bash_completion; do
  [ -f "$f" ] && { bc=$f; break; }
done
[ -n "$bc" ] ||
  skip_all "bash-completion is not installed (apt-get install bash-completion)"
[ -x "$J" ] || bail "no built jobboard at $J"

d=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-completion.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$d"'
uuid=$("$J" post --board "$d/board" resize) || die "post"
mkdir "$d/boards" "$d/boards/one" || bail "mkdir failed"

# shellcheck disable=SC1090
source "$bc" || die "cannot source $bc"
# shellcheck disable=SC1091
source "$srcdir/contrib/bash-completion/jobboard" || die "cannot source the completion"
complete -p jobboard >/dev/null 2>&1 || die "no completion registered for jobboard"

# comp WORD...: complete the last word of "WORD..." into $got (sorted).
comp() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  COMP_LINE="$*"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _jobboard jobboard "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  got=" $(printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' ')"
}
has() { # WORD...: each is in $got
  local w
  for w in "$@"; do
    [[ $got == *" $w "* ]] || fail "[${COMP_WORDS[*]}]: no '$w' in:$got"
  done
}
hasnt() {
  local w
  for w in "$@"; do
    [[ $got != *" $w "* ]] || fail "[${COMP_WORDS[*]}]: '$w' should not be in:$got"
  done
}

begin "commands"
comp "$J" ""
has post list claim claim-next consume work sync help
commands=$got
comp "$J" cl
has claim claim-next; hasnt post list
end

begin "options"
comp "$J" post --
has --priority --details --board --durability --json --batch --unique --delay
hasnt --who --lease
comp "$J" post --pri
[[ $got == " --priority " ]] || fail "post --pri:$got"
comp "$J" --board "$d/board" work --
has --who --lease --timeout --grace
end

begin "option values"
comp "$J" post --durability ""
[[ $got == " full interval none normal " ]] || fail "--durability:$got"
comp "$J" --durability n
[[ $got == " none normal " ]] || fail "--durability n:$got"
comp "$J" post --durability=n
[[ $got == " --durability=none --durability=normal " ]] || fail "--durability=n:$got"
comp "$J" post x --priority ""
has very_high high normal low very_low
comp "$J" schedule add s --catch-up ""
[[ $got == " all skip " ]] || fail "--catch-up:$got"
comp "$J" schedule add s --overlap ""
[[ $got == " queue skip " ]] || fail "--overlap:$got"
end

begin "help COMMAND, subcommands"
comp "$J" help con
[[ $got == " consume " ]] || fail "help con:$got"
comp "$J" dead ""
has list show requeue purge
end

begin "--board directories, uuids"
comp "$J" --board "$d/bo"
has "$d/board" "$d/boards"
comp "$J" --board "$d/board" show ""
[[ $got == " $uuid " ]] || fail "show UUID:$got"
comp "$J" claim --who w --board "$d/board" "${uuid:0:4}"
[[ $got == " $uuid " ]] || fail "claim UUID:$got"
comp "$J" --board "$d/none" consume ""
[[ ${#COMPREPLY[@]} == 0 ]] || fail "no board, no uuids:$got"
end

begin "job names: --name, pause, resume, cap and rate NAME"
"$J" post --board "$d/board" images.thumb >/dev/null || die "post"
"$J" post --board "$d/board" 'two words' >/dev/null || die "post"
comp "$J" --board "$d/board" claim-next --who w --name ""
[[ $got == " images.thumb resize " ]] || fail "claim-next --name:$got"
comp "$J" --board "$d/board" list --name=im
[[ $got == " --name=images.thumb " ]] || fail "list --name=im:$got"
comp "$J" --board "$d/board" pause r
[[ $got == " resize " ]] || fail "pause NAME:$got"
comp "$J" --board "$d/board" resume ""
has resize images.thumb
comp "$J" --board "$d/board" rate r
[[ $got == " resize " ]] || fail "rate NAME:$got"
comp "$J" --board "$d/board" cap resize ""
[[ ${#COMPREPLY[@]} == 0 ]] || fail "cap NAME N: no names for N:$got"
comp "$J" --board "$d/board" pause --
has --all
comp "$J" --board "$d/none" pause ""
[[ ${#COMPREPLY[@]} == 0 ]] || fail "no board, no names:$got"
end

begin "every command's options"
# Every command of the help completes some options.
for c in $commands; do
  [ "$c" = help ] && continue
  comp "$J" "$c" --
  [[ ${#COMPREPLY[@]} -gt 0 ]] || fail "$c: no options complete"
done
end
finish
