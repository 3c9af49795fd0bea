# tests/lib/harness.sh - sourced by every shell test (sh or bash):
#   . "$(dirname "$0")/lib/harness.sh"
# It prints TAP, which automake's tap-driver.sh reads (tests/local.mk):
# one "ok N - STEP" or "not ok N - STEP" per step, "# ..." diagnostics,
# and the plan "1..N" at the end ("1..0 # SKIP reason" for a skipped test).
#
#   begin STEP / end      a step; every fail between them fails it
#   pass STEP             a step that passed (a check made without begin)
#   fail MSG              a failure, named after the current step (outside a
#                         step, a failed step of its own)
#   note MSG              a diagnostic line, with the seconds since the start
#   since                 prints the seconds since the start, e.g. 12.3
#   show_file FILE...     the lines of each non-empty FILE as diagnostics
#   skip REASON           the current step is skipped (unless it fails)
#   skip_all REASON       the whole test is skipped (what exit 77 was)
#   bail MSG              a hard error: the test cannot run (what exit 99 was)
#   die MSG               a failure after which nothing else can be checked
#   finish                the plan; exits 1 if anything failed, else 0
#   at_exit CMD           runs CMD at exit (the harness owns the EXIT trap)
#   on_failure CMD        runs CMD in finish when something failed
#   program VAR DEFAULT   VAR (if set) or DEFAULT as an absolute path to an
#                         executable; bails without one
#
# Commands and their checks: run CMD... keeps CMD's stdout in $out (and the
# file $run_out), its stderr in $err ($run_err) and its status in $rc; the checks below look at the last
# run and, when they fail, print the step, the command and its output:
#   expect_rc CODE WHAT           exit status CODE
#   expect_ok WHAT                exit 0 and nothing on stderr
#   expect_out TEXT WHAT          stdout is TEXT
#   expect_stderr SUBSTRING WHAT  stderr mentions SUBSTRING
#   expect_error CODE SUBSTRING WHAT  exit CODE, stderr mentions SUBSTRING;
#                 with $ERROR_PREFIX set, also nothing on stdout and stderr
#                 one line starting with $ERROR_PREFIX
#
# A step that needs a fresh state defines step_setup, which begin calls
# ($step_no is the number of the step begun).

# Sourced once (sync_lib.sh sources it too).
[ -z "${h_loaded:-}" ] || return 0
h_loaded=1
h_name=${0##*/}
h_t0=$(date +%s.%N)
h_n=0          # TAP lines printed
h_failed=0     # failed TAP lines
h_step=""      # the open step ("" between steps)
h_bad=0        # the open step failed
h_skip=""      # the open step's skip reason
h_done=0       # finish ran
h_exits=""     # at_exit commands
h_onfail=""    # on_failure commands
h_nrec=0       # failures this shell recorded
step_no=0
out="" err="" rc=0 h_cmd=""
h_tmp=$(mktemp -d "${TMPDIR:-/tmp}/jb-harness.XXXXXX") || {
  echo "Bail out! $h_name: mktemp failed"
  exit 99
}
run_out=$h_tmp/out
run_err=$h_tmp/err
# What the programs a test starts leave in TMPDIR goes with h_tmp: a
# worker killed with SIGKILL cannot remove its own directory there. It is
# open to every user, as /tmp is (tests run commands as other users).
mkdir "$h_tmp/tmp" && chmod 755 "$h_tmp" && chmod 1777 "$h_tmp/tmp" &&
  TMPDIR=$h_tmp/tmp && export TMPDIR

since() {
  awk -v a="$h_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}
# h_diag TEXT: TEXT's lines as TAP diagnostics.
h_diag() {
  printf '%s\n' "$*" | sed 's/^/# /'
}
note() {
  h_diag "[$(since)s] $*"
}

# h_line ok|"not ok" DESCRIPTION [DIRECTIVE]
h_line() {
  h_n=$((h_n + 1))
  if [ -n "${3:-}" ]; then
    printf '%s %d - %s # %s\n' "$1" "$h_n" "$2" "$3"
  else
    printf '%s %d - %s\n' "$1" "$h_n" "$2"
  fi
  [ "$1" = ok ] || {
    h_failed=$((h_failed + 1))
    printf '%s\n' "$2" >>"$h_tmp/failed"
  }
}

begin() {
  [ -z "$h_step" ] || end
  step_no=$((step_no + 1))
  h_step=$1
  h_bad=0
  h_skip=""
  if type step_setup >/dev/null 2>&1; then
    step_setup
  fi
}
end() {
  [ -n "$h_step" ] || return 0
  if [ "$h_bad" != 0 ]; then
    h_line "not ok" "$h_step"
  elif [ -n "$h_skip" ]; then
    h_line ok "$h_step" "SKIP $h_skip"
  else
    h_line ok "$h_step"
  fi
  h_step=""
}
pass() {
  end
  h_line ok "$*"
}
show_file() {
  for h_f in "$@"; do
    [ ! -s "$h_f" ] || h_diag "$(sed 's/^/  | /' "$h_f")"
  done
}
fail() {
  h_nrec=$((h_nrec + 1))
  echo x >>"$h_tmp/count"
  if [ -n "$h_step" ]; then
    h_diag "FAIL [$(since)s] $h_step: $*"
    h_bad=1
    printf '%s: %s\n' "$h_step" "$*" >>"$h_tmp/failures"
  else
    h_diag "FAIL [$(since)s]: $*"
    printf '%s\n' "$*" >>"$h_tmp/failures"
    h_line "not ok" "$*"
  fi
}
skip() {
  h_skip=$*
  h_diag "skip: $*"
}
die() {
  fail "$*"
  finish
}
skip_all() {
  [ -z "$h_step" ] || { h_skip=$*; end; }
  if [ "$h_n" = 0 ]; then
    echo "1..0 # SKIP $*"
  else
    h_line ok "the rest of $h_name" "SKIP $*"
    echo "1..$h_n"
  fi
  h_done=1
  exit 0
}
bail() {
  echo "Bail out! $h_name: $*"
  h_done=1
  exit 99
}
at_exit() {
  h_exits="$h_exits$*;"
}
on_failure() {
  h_onfail="$h_onfail$*;"
}
finish() {
  end
  h_done=1
  # A fail in a subshell ($(...), a pipeline) reaches only the files.
  h_all=$(cat "$h_tmp/count" 2>/dev/null | wc -l)
  [ "$h_all" -le "$h_nrec" ] ||
    h_line "not ok" "$((h_all - h_nrec)) failure(s) in a subshell (below)"
  [ "$h_n" != 0 ] || h_line ok "$h_name"
  echo "1..$h_n"
  [ "$h_failed" = 0 ] && exit 0
  eval "$h_onfail"
  # Last, so that the tail of a log shows them.
  h_diag "$h_failed of $h_n failed; the failures again:"
  [ -f "$h_tmp/failures" ] && h_diag "$(cat "$h_tmp/failures")"
  exit 1
}
# The EXIT trap: a test that stops without finish (set -u, a crash, exit N)
# still ends its TAP, naming the step it stopped in.
h_exit() {
  h_st=$?
  trap - EXIT
  if [ "$h_done" = 0 ]; then
    h_done=1
    if [ "$h_st" != 0 ]; then
      h_diag "$h_name stopped with exit status $h_st"
      printf '%s\n' "${h_step:-$h_name}: stopped with exit status $h_st" \
        >>"$h_tmp/failures"
      [ -n "$h_step" ] && h_bad=1
      [ -n "$h_step" ] || h_line "not ok" "$h_name stopped with exit status $h_st"
    fi
    (finish) || h_st=1
  fi
  eval "$h_exits"
  rm -rf "$h_tmp"
  exit "$h_st"
}
trap h_exit EXIT

program() { # program VAR DEFAULT
  eval "h_p=\${$1:-\$2}"
  case $h_p in
    /*) ;;
    *) h_p=$PWD/$h_p ;;
  esac
  [ -x "$h_p" ] || bail "no program at $h_p (set $1)"
  eval "$1=\$h_p"
}

run() {
  h_cmd=$*
  "$@" >"$run_out" 2>"$run_err"
  rc=$?
  out=$(cat "$run_out")
  err=$(cat "$run_err")
  return 0
}
# h_show: the last command and its output, as diagnostics.
h_show() {
  h_diag "  command: $h_cmd
  exit status: $rc"
  [ -z "$out" ] || h_diag "$(printf '%s\n' "$out" | head -n 20 | cut -c 1-400 |
    sed 's/^/  stdout| /')"
  [ -z "$err" ] || h_diag "$(printf '%s\n' "$err" | head -n 20 | cut -c 1-400 |
    sed 's/^/  stderr| /')"
}
expect_rc() {
  [ "$rc" = "$1" ] || { fail "$2: exit status $rc, expected $1"; h_show; }
}
expect_ok() {
  if [ "$rc" != 0 ]; then
    fail "$1: exit status $rc, expected 0"
    h_show
  elif [ -n "$err" ]; then
    fail "$1: unexpected stderr"
    h_show
  fi
}
expect_out() {
  [ "$out" = "$1" ] || { fail "$2: stdout is not '$1'"; h_show; }
}
expect_stderr() {
  case $err in
    *"$1"*) ;;
    *) fail "$2: stderr does not mention '$1'"; h_show ;;
  esac
}
expect_error() {
  h_e=""
  [ "$rc" = "$1" ] || h_e="$h_e; exit status $rc, expected $1"
  case $err in
    *"$2"*) ;;
    *) h_e="$h_e; stderr does not mention '$2'" ;;
  esac
  if [ -n "${ERROR_PREFIX:-}" ]; then
    [ -n "$err" ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] ||
      h_e="$h_e; stderr is not one line"
    case $err in
      "$ERROR_PREFIX"*) ;;
      *) h_e="$h_e; stderr does not start with '$ERROR_PREFIX'" ;;
    esac
    [ -z "$out" ] || h_e="$h_e; unexpected stdout"
  fi
  [ -z "$h_e" ] || { fail "$3:${h_e#;}"; h_show; }
}
