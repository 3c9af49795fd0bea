#!/bin/sh
# tests/model.sh - random sequences of every operation on a board and on
# its executable model (tests/model/model.py), compared after each step
# (tests/model/run.py says what is compared). A short, seeded run: one
# process, then two worker processes with kills. The long form, run by
# hand:
#   tests/model.sh --seed S --sequences 200 --steps 300
#   tests/model.sh --seed S --sequences 40 --steps 200 --procs 3
#   tests/model.sh --seed S --sequences 40 --steps 200 --procs 3 --durability interval
# Extra arguments go to run.py (then only that run is made). A difference
# prints its seed and the shortest sequence that shows it.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || bail "no directory $srcdir"
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}
py=${JB_TEST_PYTHON:-/usr/bin/python3}
cc=${JB_TEST_CC:-cc}

[ "${JB_TEST_PYTHON_ENABLED:-yes}" = yes ] ||
  skip_all "configure disabled the Python package (the model drives it)"
lib=$top_builddir/.libs/libjobboard.so.0
[ -f "$lib" ] || die "$lib is missing (make first)"
"$py" -c "import cffi, msgpack" 2>/dev/null ||
  die "$py lacks cffi or msgpack: apt-get install python3-cffi python3-msgpack"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-model.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$tmp"'
trap 'exit 130' INT TERM
# The test's clocks (the board and the model read one instant).
$cc -shared -fPIC -O1 -o "$tmp/fakeclock.so" "$srcdir/tests/model/fakeclock.c" ||
  die "cannot build fakeclock.so"

JOBBOARD_LIBRARY=$lib
JB_FAKECLOCK_LIB=$tmp/fakeclock.so
PYTHONPATH=$srcdir/python
PYTHONDONTWRITEBYTECODE=1
TMPDIR=$tmp
export JOBBOARD_LIBRARY JB_FAKECLOCK_LIB PYTHONPATH PYTHONDONTWRITEBYTECODE TMPDIR
unset PYTHONHOME

. "$srcdir/tests/sanitizer_preload.sh"
jb_sanitizer_preload "$lib" "$cc"

run=$srcdir/tests/model/run.py
if [ $# -gt 0 ]; then
  begin "run.py $*"
  "$py" "$run" "$@" >&2 || fail "run.py exited $?"
  finish
fi
seed=${JB_MODEL_SEED:-2512}
begin "one process: seed $seed, 8 sequences of 120 steps"
"$py" "$run" --seed "$seed" --sequences 8 --steps 120 >&2 || die "run.py exited $?"
end
begin "two worker processes with kills: seed $seed, 2 sequences of 80 steps"
"$py" "$run" --seed "$seed" --sequences 2 --steps 80 --procs 2 >&2 || fail "run.py exited $?"
end
begin "durability interval, two worker processes with kills: seed $seed, 2 sequences of 80 steps"
"$py" "$run" --seed "$seed" --sequences 2 --steps 80 --procs 2 \
  --durability interval >&2 || fail "run.py exited $?"
end
finish
