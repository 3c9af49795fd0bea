#!/bin/sh
# quickstart.sh - set up, build, and then run the demo or every test.
#
#   sh scripts/quickstart.sh demo    # install what is missing, build, run the demo
#   sh scripts/quickstart.sh test    # install what is missing, build, run all tests
#
# Needs Debian 12 (or later) and root for apt-get, unless every package
# below is already installed. The list holds every package a test needs
# (tests/quickstart.sh checks it against the tests' "apt-get install"
# hints), so that no test skips on a fresh machine. Builds in the source tree with warnings as
# errors.
set -eu
mode=${1:-}
case "$mode" in
  demo|test) ;;
  *) echo "usage: sh scripts/quickstart.sh demo|test" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

packages="build-essential autoconf automake libtool pkg-config liblmdb-dev
  libmsgpack-dev libjansson-dev uuid-dev libcmocka-dev python3
  libhiredis-dev redis-server redis-sentinel python3-taskflow python3-redis \
  libmicrohttpd-dev python3-prometheus-client curl
  chromium chromium-driver python3-selenium
  python3-msgpack libsqlite3-dev python3-cffi python3-pytest python3-testtools
  python3-oslotest python3-fixtures python3-zake python3-dev bash-completion
  tzdata redis-tools systemd man-db"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "quickstart: installing$missing"
  if [ "$(id -u)" -ne 0 ]; then
    echo "quickstart: run as root (apt-get is needed for:$missing)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
  ./autogen.sh
fi
if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
  # hiredis and python3-cffi are installed above, so the Redis sync and the
  # Python package are built and tested
  ./configure --enable-werror --with-redis=yes --enable-python --quiet
fi
make -s -j"$jobs"
if [ "$mode" = demo ]; then
  exec ./jobboard demo
elif ! make -s -j"$jobs" check; then
  echo "quickstart: tests failed; the log of each failing test follows" >&2
  for log in tests/*.log; do
    grep -qE '^:test-result: (FAIL|ERROR)' "${log%.log}.trs" 2>/dev/null &&
      { echo "--- $log"; tail -60 "$log"; } >&2
  done
  exit 1
fi
