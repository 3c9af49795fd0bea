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
srcdir=${srcdir:-.}

if [ "${JOBBOARD_SKIP_REDIS:-}" = 1 ]; then
    echo "SKIP: JOBBOARD_SKIP_REDIS=1"
    exit 77
fi
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
if [ -n "$missing" ]; then
    echo "FAIL: missing:$missing" >&2
    echo "  install: apt-get install -y$missing" >&2
    echo "  (or set JOBBOARD_SKIP_REDIS=1 to skip the Redis tests)" >&2
    exit 1
fi
exec "$py" "$srcdir/tests/sync_scripts_test.py" "$srcdir"
