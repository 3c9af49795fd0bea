#!/bin/bash
# tests/sync_model.sh - the job model across hosts: boards synced through
# one redis-server, `jobboard work` runners, `jobboard sync` daemons,
# posters and Redis itself killed with SIGKILL and started again at random
# (tests/model/xhost.py says what runs and what is checked: no job run
# twice or by two holders at once, every acknowledged job run, one outcome
# on every board, each schedule run once across hosts, no unique key held
# by a job that ended, a board detached mid-run keeping every job it held
# as a local one). A short, seeded run (JB_XHOST_SEED, default 2512;
# 20 s of chaos on three boards). The long form, run by hand:
#   tests/sync_model.sh --seed S --seconds 300
# Extra arguments go to xhost.py (then only that run is made). A failure
# prints its seed.
#
# Needs redis-server, redis-cli and Debian's python3-taskflow (else skipped); see tests/sync_lib.sh.
. "${srcdir:-.}/tests/sync_lib.sh"

xhost=$srcdir/tests/model/xhost.py
if [ $# -gt 0 ]; then
  begin "xhost.py $*"
  TMPDIR=$ROOT "$PY" "$xhost" --jobboard "$JOBBOARD" "$@" >&2 || fail "xhost.py exited $?"
else
  begin "the model across hosts (xhost.py, seed ${JB_XHOST_SEED:-2512}, 20 s)"
  TMPDIR=$ROOT "$PY" "$xhost" --jobboard "$JOBBOARD" \
    --seed "${JB_XHOST_SEED:-2512}" --seconds 20 >&2 || fail "xhost.py exited $?"
fi
end
finish
