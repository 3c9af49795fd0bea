#!/bin/sh
# tests/model.sh - random sequences of every operation on a board and on
# its executable model (tests/model/model.py), compared after each step
# (tests/model/run.py says what is compared). A short, seeded run: one
# process, then two worker processes with kills. The long form, run by
# hand:
#   tests/model.sh --seed S --sequences 200 --steps 300
#   tests/model.sh --seed S --sequences 40 --steps 200 --procs 3
# Extra arguments go to run.py (then only that run is made). A difference
# prints its seed and the shortest sequence that shows it.
set -u
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || exit 99
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}
py=${JB_TEST_PYTHON:-/usr/bin/python3}
cc=${JB_TEST_CC:-cc}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${JB_TEST_PYTHON_ENABLED:-yes}" != yes ]; then
  echo "SKIP: configure disabled the Python package (the model drives it)"
  exit 77
fi
lib=$top_builddir/.libs/libjobboard.so.0
[ -f "$lib" ] || fail "$lib is missing (make first)"
"$py" -c "import cffi, msgpack" 2>/dev/null ||
  fail "$py lacks cffi or msgpack: apt-get install python3-cffi python3-msgpack"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-model.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# The test's clocks (the board and the model read one instant).
$cc -shared -fPIC -O1 -o "$tmp/fakeclock.so" "$srcdir/tests/model/fakeclock.c" ||
  fail "cannot build fakeclock.so"

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
  exec "$py" "$run" "$@"
fi
seed=${JB_MODEL_SEED:-2512}
"$py" "$run" --seed "$seed" --sequences 8 --steps 120 || exit 1
"$py" "$run" --seed "$seed" --sequences 2 --steps 80 --procs 2 || exit 1
