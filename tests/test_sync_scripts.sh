#!/bin/sh
# Our Redis scripts (sync/scripts/*.lua) against the real peer: Debian's
# python3-taskflow 5.0 and a redis-server this test starts on a unix socket
# in a temporary directory (--port 0 --save "" --appendonly no) and stops.
# The checks are in tests/sync_scripts_test.py.
#
# Needs: redis-server, and /usr/bin/python3 with python3-taskflow,
# python3-redis and python3-msgpack (Debian packages; there is no PyPI here):
#   apt-get install -y redis-server python3-taskflow python3-redis python3-msgpack
# A missing piece is a failure that says so. JOBBOARD_SKIP_REDIS=1 (and only
# that) skips the test (exit 77), for machines that build without Redis.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}

[ "${JOBBOARD_SKIP_REDIS:-}" != 1 ] || skip_all "JOBBOARD_SKIP_REDIS=1"
missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
py=/usr/bin/python3
if [ ! -x "$py" ]; then
    missing="$missing python3"
else
    "$py" -c 'import taskflow.jobs.backends.impl_redis' 2>/dev/null ||
        missing="$missing python3-taskflow"
    "$py" -c 'import redis' 2>/dev/null || missing="$missing python3-redis"
    "$py" -c 'import msgpack' 2>/dev/null || missing="$missing python3-msgpack"
fi
[ -z "$missing" ] || die "missing:$missing
  install: apt-get install -y$missing
  (or set JOBBOARD_SKIP_REDIS=1 to skip the Redis tests)"
begin "the Redis scripts (tests/sync_scripts_test.py)"
"$py" "$srcdir/tests/sync_scripts_test.py" "$srcdir" >&2 || fail "sync_scripts_test.py exited $?"
end
finish
