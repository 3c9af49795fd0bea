#!/bin/sh
# tests/python.sh - the Python package (python/jobboard) and its tests
# (python/tests, pytest) on the libraries just built.
#
# Builds a throwaway site directory (mktemp -d, removed on exit) holding a
# link to $srcdir/python/jobboard and a jobboard-VERSION.dist-info with the
# package's entry_points.txt, checks that importlib.metadata and stevedore
# (what taskflow uses) find the taskflow.jobboards entry point "jobboard",
# then runs pytest with JOBBOARD_LIBRARY (and JOBBOARD_SYNC_LIBRARY when
# built with Redis) naming the built .libs/*.so.0 and JOBBOARD_CLI the built
# ./jobboard. Writes nothing into $srcdir (make distcheck's is read-only):
# no bytecode, no pytest cache.
#
# Run by make check from the top build directory (python/local.mk passes
# JB_TEST_* in AM_TESTS_ENVIRONMENT). Skipped (77) only when configure
# disabled Python; a missing Python module is a failure.
#
# With a sanitizer build (libjobboard.so NEEDs libasan/libubsan) Python,
# which is not built with them, must preload their runtimes to dlopen it:
# then LD_PRELOAD holds them, and ASAN_OPTIONS adds detect_leaks=0 (Python
# leaks by design).
set -u
. "$(dirname "$0")/lib/harness.sh"

srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || bail "no directory $srcdir"
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}
py=${JB_TEST_PYTHON:-/usr/bin/python3}
cc=${JB_TEST_CC:-cc}


[ "${JB_TEST_PYTHON_ENABLED:-yes}" = yes ] ||
  skip_all "configure disabled the Python package (see configure's output)"
[ -x "$py" ] || die "no Python at $py"

# Every module in python/jobboard is installed and shipped (python/local.mk).
if [ -n "${JB_TEST_PY_MODULES:-}" ]; then
  for f in "$srcdir"/python/jobboard/*.py; do
    [ -e "$f" ] || continue
    b=${f##*/}
    [ "$b" = _paths.py ] && continue
    case " $JB_TEST_PY_MODULES " in
      *" python/jobboard/$b "*) ;;
      *) die "python/jobboard/$b is not in JB_PY_MODULES (python/local.mk)" ;;
    esac
  done
fi

lib=$top_builddir/.libs/libjobboard.so.0
synclib=$top_builddir/.libs/libjbsync.so.0
cli=$top_builddir/jobboard
[ -f "$lib" ] || die "$lib is missing (make first)"
[ -x "$cli" ] || die "$cli is missing (make first)"
JOBBOARD_LIBRARY=$lib
JOBBOARD_CLI=$cli
export JOBBOARD_LIBRARY JOBBOARD_CLI
unset JOBBOARD_SYNC_LIBRARY
if [ "${JB_TEST_REDIS_ENABLED:-no}" = yes ]; then
  [ -f "$synclib" ] || die "$synclib is missing (make first)"
  JOBBOARD_SYNC_LIBRARY=$synclib
  export JOBBOARD_SYNC_LIBRARY
fi
# libjbsync.so.0 NEEDs libjobboard.so.0: the built one, not an installed one.
LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

missing=""
for m in pytest:python3-pytest cffi:python3-cffi msgpack:python3-msgpack \
    stevedore:python3-stevedore; do
  "$py" -c "import ${m%%:*}" >/dev/null 2>&1 || missing="$missing ${m#*:}"
done
[ -z "$missing" ] || die "$py lacks modules: apt-get install$missing"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-python.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$tmp"'
trap 'exit 130' INT TERM
site=$tmp/site
di=$site/jobboard-${JB_TEST_VERSION:-0}.dist-info
mkdir -p "$di" "$tmp/work" "$tmp/cache" || bail "cannot set up $tmp"
ln -s "$srcdir/python/jobboard" "$site/jobboard" || bail "cannot set up $tmp"
cp "$srcdir/python/entry_points.txt" "$di/" || bail "cannot set up $tmp"
printf 'Metadata-Version: 2.1\nName: jobboard\nVersion: %s\n' \
  "${JB_TEST_VERSION:-0}" >"$di/METADATA"
PYTHONPATH=$site
PYTHONDONTWRITEBYTECODE=1
# stevedore caches entry points (keyed by sys.path) under XDG_CACHE_HOME:
# this run's own.
XDG_CACHE_HOME=$tmp/cache
export PYTHONPATH PYTHONDONTWRITEBYTECODE XDG_CACHE_HOME
unset PYTHONHOME

. "$srcdir/tests/sanitizer_preload.sh"
jb_sanitizer_preload "$lib" "$cc"

# The entry point, as taskflow's backends.fetch() looks for it.
begin "the taskflow.jobboards entry point"
"$py" - <<'EOF' >&2 || fail "the taskflow.jobboards entry point 'jobboard' is not found from PYTHONPATH=$PYTHONPATH"
import importlib.metadata as md
import sys

want = "jobboard.taskflow_backend:JobboardJobBoard"
eps = md.entry_points()
eps = eps.select(group="taskflow.jobboards") if hasattr(eps, "select") \
    else eps.get("taskflow.jobboards", [])
found = [e.value for e in eps if e.name == "jobboard"]
if found != [want]:
    sys.exit("importlib.metadata: taskflow.jobboards jobboard = %r" % found)
from stevedore import ExtensionManager
em = ExtensionManager.make_test_instance([], namespace="taskflow.jobboards")
found = [e.value for e in em.list_entry_points() if e.name == "jobboard"]
if found != [want]:
    sys.exit("stevedore: taskflow.jobboards jobboard = %r" % found)
print("entry point: taskflow.jobboards jobboard = " + want)
EOF
end

# From a directory of its own: the tests may leave files in the current one.
cd "$tmp/work" || bail "no directory $tmp/work"
begin "python/tests (pytest)"
"$py" -m pytest -p no:cacheprovider -q "$srcdir/python/tests" >&2 || fail "pytest exited $?"
end
finish
