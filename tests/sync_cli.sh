#!/bin/bash
# tests/sync_cli.sh - the command line's Redis side, end to end: --redis and
# --namespace (and JOBBOARD_REDIS, JOBBOARD_NAMESPACE), what a board
# remembers, `jobboard sync` and `jobboard status`, claim-next --count over
# Redis-decided jobs (one Redis call for them), and the operations on
# Redis-decided jobs when Redis cannot be reached (exit 6).
#
# Starts its own redis-server (with a password) on a unix socket in a
# mktemp -d directory and stops it; checks Redis with redis-cli. Without
# redis-server or redis-cli, or with JOBBOARD_SKIP_REDIS=1, it is skipped
# (TAP: 1..0 # SKIP). Runs the built ./jobboard (or $JOBBOARD). Each step
# is a TAP line (tests/lib/harness.sh); the script exits 1 if any failed.
set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
[ "${JOBBOARD_SKIP_REDIS:-}" != 1 ] || skip_all "JOBBOARD_SKIP_REDIS=1"
for p in redis-server redis-cli python3; do
  command -v $p >/dev/null 2>&1 ||
    skip_all "$p is missing (apt-get install redis-server python3)"
done

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-sync-cli.XXXXXX") || bail "mktemp failed"
REDIS_PID=""
SYNC_PID=""
cleanup() {
  # Only what this script started.
  [ -n "$SYNC_PID" ] && kill -KILL "$SYNC_PID" 2>/dev/null
  [ -n "$REDIS_PID" ] && kill -KILL "$REDIS_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$ROOT"
}
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR JOBBOARD_REDIS JOBBOARD_NAMESPACE

SOCK=$ROOT/redis.sock
PASS=s3cret
URL="unix://:$PASS@$SOCK"
export REDISCLI_AUTH=$PASS

redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 \
  --requirepass "$PASS" --save '' --appendonly no --daemonize no \
  --dir "$ROOT" >"$ROOT/redis.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 100); do
  [ "$(redis-cli -s "$SOCK" ping 2>/dev/null)" = PONG ] && break
  sleep 0.05
done
if [ "$(redis-cli -s "$SOCK" ping 2>/dev/null)" != PONG ]; then
  note "$(cat "$ROOT/redis.log")"
  bail "redis-server did not start"
fi

# jb BOARD ARGS: run jobboard on board BOARD; sets $out, $err, $rc.
jb() {
  local board=$1
  shift
  run "$JOBBOARD" --board "$ROOT/$board" "$@"
}
# not_in TEXT SUBSTRING WHAT
not_in() {
  case $1 in
    *"$2"*) fail "$3: '$2' should not appear in: $1" ;;
  esac
}
# status_field BOARD FIELD: $val = that field of `status --json` (Python
# repr: True, None, 3, 'text').
status_field() {
  jb "$1" status --json
  [ "$rc" = 0 ] || { fail "status --json: exit $rc: $err"; val=""; return; }
  val=$(printf '%s\n' "$out" | python3 -c \
    'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2")
}
# wait_for SECONDS COMMAND...: true once COMMAND succeeds.
wait_for() {
  local n=$(($1 * 20))
  shift
  for _ in $(seq "$n"); do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}
running_connected() {
  status_field "$1" running
  [ "$val" = True ] || return 1
  status_field "$1" connected
  [ "$val" = True ]
}
listed() { # listed NS UUID: NS:listings holds UUID
  [ "$(redis-cli -s "$SOCK" hexists "$1:listings" "$2")" = 1 ]
}

# --- tests ----------------------------------------------------------------

begin "status of a board never synced: not synced, not running"
jb b1 post local-a
LOCAL_A=$out
jb b1 status
expect_ok "status"
expect_stderr "" "status"
case $out in
  *"not synced"*"not running"*) ;;
  *) fail "status: $out" ;;
esac
status_field b1 synced
[ "$val" = False ] || fail "synced: $val"
status_field b1 url
[ "$val" = None ] || fail "url: $val"
end

begin "a bad URL or namespace is refused, naming it, and the board is unchanged"
jb b1 claim --who w --redis 'redis://h:99999' "$LOCAL_A"
expect_rc 2 "bad port"
expect_stderr 'redis://h:99999' "bad port"
expect_stderr '99999' "bad port"
jb b1 claim --who w --redis 'http://h' "$LOCAL_A"
expect_rc 2 "bad scheme"
expect_stderr 'http://h' "bad scheme"
jb b1 claim --who w --redis "$URL" --namespace 'has space' "$LOCAL_A"
expect_rc 2 "bad namespace"
expect_stderr 'namespace' "bad namespace"
JOBBOARD_REDIS='redis://h:99999' jb b1 claim --who w "$LOCAL_A"
expect_rc 2 "bad JOBBOARD_REDIS"
expect_stderr 'redis://h:99999' "bad JOBBOARD_REDIS"
status_field b1 synced
[ "$val" = False ] || fail "the board remembers a bad URL"
jb b1 owner "$LOCAL_A"
[ "$rc" = 3 ] || [ -z "$out" ] || fail "the job was claimed: $out"
jb b1 sync --redis 'redis://h:99999'
expect_rc 2 "sync, bad port"
expect_stderr 'redis://h:99999' "sync, bad port"
end

begin "a wrong or missing password is refused (exit 2), never shown, not remembered"
jb b1 claim --who w --redis "unix://:wr0ng@$SOCK" "$LOCAL_A"
expect_rc 2 "wrong password"
expect_stderr "password" "wrong password"
not_in "$err" "wr0ng" "wrong password"
jb b1 claim --who w --redis "unix://$SOCK" "$LOCAL_A"
expect_rc 2 "no password"
expect_stderr "password" "no password"
jb b1 sync --redis "unix://:wr0ng@$SOCK"
expect_rc 2 "sync, wrong password"
expect_stderr "password" "sync, wrong password"
not_in "$err" "wr0ng" "sync, wrong password"
status_field b1 synced
[ "$val" = False ] || fail "the board remembers a wrong password"
end

begin "sync with no URL given or remembered: exit 2, saying what to do"
jb b1 sync
expect_rc 2 "sync"
expect_stderr "--redis" "sync"
end

begin "the board remembers the URL and namespace; another namespace is refused"
jb b1 claim --who w --redis "$URL" --namespace ns1 "$LOCAL_A"
expect_ok "claim with --redis"
jb b1 status
expect_ok "status"
case $out in
  *"unix://:***@$SOCK"*"namespace ns1"*) ;;
  *) fail "status does not show the URL (password hidden) and ns1: $out" ;;
esac
not_in "$out" "$PASS" "status"
status_field b1 namespace
[ "$val" = ns1 ] || fail "namespace: $val"
jb b1 post local-b
LOCAL_B=$out
jb b1 claim --who w "$LOCAL_B" # the remembered URL, no --redis
expect_ok "claim without --redis"
jb b1 abandon --who w --namespace other "$LOCAL_B"
expect_rc 2 "--namespace other"
expect_stderr '"ns1"' "--namespace other"
expect_stderr '"other"' "--namespace other"
JOBBOARD_NAMESPACE=other jb b1 abandon --who w "$LOCAL_B"
expect_rc 2 "JOBBOARD_NAMESPACE=other"
expect_stderr '"other"' "JOBBOARD_NAMESPACE=other"
jb b1 sync --namespace other
expect_rc 2 "sync --namespace other"
expect_stderr '"ns1"' "sync --namespace other"
jb b1 owner "$LOCAL_B"
[ "$out" = w ] || fail "a refused abandon changed the owner: $out"
end

begin "JOBBOARD_REDIS and JOBBOARD_NAMESPACE are honoured"
jb b2 post local-c
LOCAL_C=$out
JOBBOARD_REDIS=$URL JOBBOARD_NAMESPACE=ns2 jb b2 claim --who w "$LOCAL_C"
expect_ok "claim with the environment"
status_field b2 namespace
[ "$val" = ns2 ] || fail "namespace: $val"
status_field b2 synced
[ "$val" = True ] || fail "synced: $val"
# A flag beats the environment.
JOBBOARD_NAMESPACE=other jb b2 consume --who w --namespace ns2 "$LOCAL_C"
expect_ok "consume: --namespace over JOBBOARD_NAMESPACE"
end

begin "jobboard sync: runs, publishes local jobs, status shows it running"
jb b1 post to-publish
PUB=$out
jb b1 post to-publish-2
PUB2=$out
"$JOBBOARD" --board "$ROOT/b1" sync --poll 0.2 2>"$ROOT/sync.log" &
SYNC_PID=$!
wait_for 15 running_connected b1 || fail "status never showed running+connected"
status_field b1 pid
[ "$val" = "$SYNC_PID" ] || fail "pid: $val, expected $SYNC_PID"
jb b1 status
case $out in
  *"running (pid $SYNC_PID), connected"*) ;;
  *) fail "status: $out" ;;
esac
wait_for 15 listed ns1 "$PUB" || fail "$PUB never listed in ns1:listings"
wait_for 15 listed ns1 "$PUB2" || fail "$PUB2 never listed in ns1:listings"
# The local claims went out with their owner; nothing is left to publish.
wait_for 10 eval 'status_field b1 unpublished; [ "$val" = 0 ]' ||
  fail "unpublished: $val"
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z sync: ' "$ROOT/sync.log" ||
  fail "the log has no timestamped lines: $(cat "$ROOT/sync.log")"
end

begin "a published job is claimed through Redis by jobboard claim"
jb b1 claim --who alice "$PUB"
expect_ok "claim of a published job"
owned=$(redis-cli -s "$SOCK" get "ns1:$PUB.owned")
[ "$owned" = alice ] || fail "ns1:$PUB.owned is '$owned', expected alice"
jb b1 owner "$PUB"
[ "$out" = alice ] || fail "local owner: $out"
# Claimed in Redis: another claimer is refused, naming alice.
jb b1 claim --who bob "$PUB"
expect_rc 4 "claim by bob"
expect_stderr alice "claim by bob"
end

begin "progress of a job Redis decides: checked against the board's claim, nothing written to Redis"
keys_before=$(redis-cli -s "$SOCK" --scan --pattern 'ns1:*' | sort)
listing_before=$(redis-cli -s "$SOCK" hget ns1:listings "$PUB" | od -An -tx1)
jb b1 progress --who bob "$PUB" 40 "not mine"
expect_rc 5 "bob's progress of alice's job"
expect_stderr alice "bob's progress of alice's job"
jb b1 progress --who alice "$PUB" 40 "via the board"
expect_ok "alice's progress of her job"
jb b1 show --json "$PUB"
printf '%s\n' "$out" | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
assert j["remote"] is True and j["owner"] == "alice", j
assert j["progress"]["percent"] == 40.0 and j["progress"]["message"] == "via the board", j
' || fail "show after the progress: $out"
[ "$(redis-cli -s "$SOCK" --scan --pattern 'ns1:*' | sort)" = "$keys_before" ] ||
  fail "the progress changed Redis's keys"
[ "$(redis-cli -s "$SOCK" hget ns1:listings "$PUB" | od -An -tx1)" = "$listing_before" ] ||
  fail "the progress changed the job's listing in Redis"
end

begin "claim-next --count over jobs Redis decides: in claim-next order, one held elsewhere in Redis passed over"
H=()
for i in 1 2 3 4 5 6; do
  jb b1 post --priority high "many-$i"
  H+=("$out")
done
for u in "${H[@]}"; do
  wait_for 15 listed ns1 "$u" || fail "$u never listed in ns1:listings"
done
# Taken by carol as taskflow takes a job: the owner key only.
redis-cli -s "$SOCK" set "ns1:${H[1]}.owned" carol >/dev/null
jb b1 claim-next --who w9 --count 5 --lease 60
expect_ok "claim-next --count 5"
want=$(printf '%s\n' "${H[0]}" "${H[2]}" "${H[3]}" "${H[4]}" "${H[5]}")
[ "$out" = "$want" ] || fail "claimed, in order: $out; expected: $want"
for u in "${H[0]}" "${H[2]}" "${H[3]}" "${H[4]}" "${H[5]}"; do
  owned=$(redis-cli -s "$SOCK" get "ns1:$u.owned")
  [ "$owned" = w9 ] || fail "ns1:$u.owned is '$owned', expected w9"
done
owned=$(redis-cli -s "$SOCK" get "ns1:${H[1]}.owned")
[ "$owned" = carol ] || fail "carol's job: ns1:${H[1]}.owned is '$owned'"
end

begin "claim-next --name over jobs Redis decides: only the names chosen, through Redis; a paused name passed over"
N=()
for n in n-a n-b n-a n-c; do
  jb b1 post --priority very_high "$n"
  N+=("$out")
done
for u in "${N[@]}"; do
  wait_for 15 listed ns1 "$u" || fail "$u never listed in ns1:listings"
done
jb b1 claim-next --who wn --name n-b
expect_ok "claim-next --name n-b"
[ "$out" = "${N[1]}" ] || fail "claimed $out, expected the n-b job ${N[1]}"
owned=$(redis-cli -s "$SOCK" get "ns1:${N[1]}.owned")
[ "$owned" = wn ] || fail "ns1:${N[1]}.owned is '$owned', expected wn"
jb b1 pause n-a
expect_ok "pause n-a"
jb b1 claim-next --who wn --name 'n-*' --count 5
expect_ok "claim-next --name 'n-*' --count 5"
[ "$out" = "${N[3]}" ] || fail "claimed '$out', expected only the n-c job ${N[3]}"
for u in "${N[0]}" "${N[2]}"; do
  owned=$(redis-cli -s "$SOCK" get "ns1:$u.owned")
  [ -z "$owned" ] || fail "paused n-a job $u is owned in Redis by '$owned'"
done
jb b1 resume n-a
jb b1 claim-next --who wn --name n-a
expect_ok "claim-next --name n-a after the resume"
[ "$out" = "${N[0]}" ] || fail "claimed $out, expected ${N[0]}"
end

begin "SIGTERM stops jobboard sync: exit 0, status then says not running"
kill -TERM "$SYNC_PID"
code=""
for _ in $(seq 200); do
  if ! kill -0 "$SYNC_PID" 2>/dev/null; then break; fi
  sleep 0.05
done
if kill -0 "$SYNC_PID" 2>/dev/null; then
  fail "still running 10 s after SIGTERM"
else
  wait "$SYNC_PID"
  code=$?
  [ "$code" = 0 ] || fail "exit status $code, expected 0: $(cat "$ROOT/sync.log")"
fi
SYNC_PID=""
status_field b1 running
[ "$val" = False ] || fail "running: $val"
grep -q "stopping (SIGTERM)" "$ROOT/sync.log" || fail "no stop in the log"
end

# no_password_in BOARD WHAT: the password is in no byte of BOARD's data
# file (live pages and free ones alike: grep reads the whole file).
no_password_in() {
  if grep -a -q -F "$PASS" "$ROOT/$1/data.mdb"; then
    fail "$2: the password is in $1/data.mdb"
  fi
}
# stop_sync: SIGTERM the daemon of $SYNC_PID, expect exit 0.
stop_sync() {
  kill -TERM "$SYNC_PID"
  wait "$SYNC_PID"
  local code=$?
  [ "$code" = 0 ] || fail "sync exited $code on SIGTERM"
  SYNC_PID=""
}

begin "a URL with a password: the password is in no byte of data.mdb, but in sync.credentials (0600)"
# b1 (claim --redis) and b2 (JOBBOARD_REDIS) were given it above.
no_password_in b1 "claim --redis"
no_password_in b2 "JOBBOARD_REDIS"
jb b3 post local-e
"$JOBBOARD" --board "$ROOT/b3" sync --redis "$URL" --namespace ns3 \
  --poll 0.2 2>"$ROOT/sync3.log" &
SYNC_PID=$!
wait_for 15 running_connected b3 || fail "b3: never running+connected"
stop_sync
no_password_in b3 "sync --redis"
for b in b1 b2 b3; do
  mode=$(stat -c %a "$ROOT/$b/sync.credentials" 2>/dev/null)
  [ "$mode" = 600 ] || fail "$b/sync.credentials: mode '$mode', expected 600"
  [ "$(cat "$ROOT/$b/sync.credentials" 2>/dev/null)" = "$PASS" ] ||
    fail "$b/sync.credentials does not hold the password"
done
jb b3 status
case $out in
  *"unix://:***@$SOCK"*) ;;
  *) fail "status does not show the URL with ***: $out" ;;
esac
not_in "$out" "$PASS" "status"
end

begin "sync restarts without --redis: the password comes from sync.credentials"
"$JOBBOARD" --board "$ROOT/b3" sync --poll 0.2 2>"$ROOT/sync3.log" &
SYNC_PID=$!
wait_for 15 running_connected b3 || fail "b3 restarted: never connected: $(cat "$ROOT/sync3.log")"
not_in "$(cat "$ROOT/sync3.log")" "$PASS" "the sync log"
jb b3 post after-restart
AFTER=$out
wait_for 15 listed ns3 "$AFTER" || fail "$AFTER never listed in ns3:listings"
stop_sync
no_password_in b3 "after the restart"
end

begin "a wrong password in sync.credentials: sync exits 2, 'wrong password', not shown"
cp -p "$ROOT/b3/sync.credentials" "$ROOT/cred.saved"
printf 'wr0ng\n' >"$ROOT/b3/sync.credentials"
jb b3 sync
expect_rc 2 "sync, wrong password in the file"
expect_stderr "wrong password" "sync, wrong password in the file"
not_in "$err" "wr0ng" "sync, wrong password in the file"
mv "$ROOT/cred.saved" "$ROOT/b3/sync.credentials"
chmod 644 "$ROOT/b3/sync.credentials"
jb b3 sync
expect_rc 2 "sync, credentials readable by others"
expect_stderr "chmod 600" "sync, credentials readable by others"
chmod 600 "$ROOT/b3/sync.credentials"
end

begin "another user who may open the board but not read sync.credentials: status works (***), sync says why it cannot"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
  ! setpriv --reuid=65534 --regid=65534 --clear-groups "$JOBBOARD" \
    --version >/dev/null 2>&1; then
  # A build directory another user cannot enter (CI's sanitizer build is
  # in a mktemp -d, mode 0700): the program itself cannot run as nobody.
  skip "user nobody cannot run $JOBBOARD: a directory on its" \
    "path is closed to other users"
elif [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
  # nobody may open b3 (LMDB needs its files writable), not read the file.
  chmod 711 "$ROOT"
  chmod -R a+rwX "$ROOT/b3"
  chmod 600 "$ROOT/b3/sync.credentials"
  as_nobody() { # bounded: a sync that should have been refused would run on
    run timeout -s KILL 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
      "$JOBBOARD" --board "$ROOT/b3" "$@"
  }
  as_nobody status
  expect_ok "status as nobody"
  case $out in
    *"unix://:***@$SOCK"*) ;;
    *) fail "status as nobody does not show the URL with ***: $out" ;;
  esac
  as_nobody sync
  expect_rc 2 "sync as nobody"
  expect_stderr "sync.credentials" "sync as nobody"
  expect_stderr "JOBBOARD_REDIS_PASSWORD" "sync as nobody"
  # Nor may nobody point the board at a server of theirs: the owner's
  # daemon would send the owner's password there.
  as_nobody sync --redis "unix://:theirs@$ROOT/elsewhere.sock"
  expect_rc 2 "sync --redis elsewhere as nobody"
  expect_stderr "only the board's owner" "sync --redis elsewhere as nobody"
  jb b3 status
  case $out in
    *"unix://:***@$SOCK"*) ;;
    *) fail "the board's URL changed after nobody's refused sync: $out" ;;
  esac
  chmod 700 "$ROOT"
else
  skip "needs root and setpriv to act as another user"
fi
end

begin "JOBBOARD_REDIS_PASSWORD: used, never stored; without it a password-needing server is refused, naming where passwords are looked for"
jb b4 post local-f
LOCAL_F=$out
JOBBOARD_REDIS_PASSWORD=$PASS jb b4 claim --who w --redis "unix://$SOCK" \
  --namespace ns4 "$LOCAL_F"
expect_ok "claim with JOBBOARD_REDIS_PASSWORD"
[ ! -e "$ROOT/b4/sync.credentials" ] ||
  fail "the environment's password was written to b4/sync.credentials"
no_password_in b4 "JOBBOARD_REDIS_PASSWORD"
jb b4 abandon --who w "$LOCAL_F"
expect_rc 2 "no password found"
expect_stderr "requires a password" "no password found"
expect_stderr "JOBBOARD_REDIS_PASSWORD" "no password found"
expect_stderr "sync.credentials" "no password found"
JOBBOARD_REDIS_PASSWORD=wr0ng jb b3 sync
expect_rc 2 "JOBBOARD_REDIS_PASSWORD beats the file"
expect_stderr "wrong password" "JOBBOARD_REDIS_PASSWORD beats the file"
end

begin "Redis unreachable: a Redis-decided job fails with exit 6 and the reason, a local one works"
{ kill -KILL "$REDIS_PID" && wait "$REDIS_PID"; } 2>/dev/null # no "Killed"
REDIS_PID=""
jb b1 post local-d
LOCAL_D=$out
jb b1 claim --who w "$PUB2"
expect_rc 6 "claim of a Redis-decided job"
expect_stderr "backend unavailable" "claim of a Redis-decided job"
expect_stderr "$SOCK" "claim of a Redis-decided job" # the connect error names it
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "stderr is not one line: $err"
jb b1 consume --who alice "$PUB"
expect_rc 6 "consume of a Redis-decided job"
expect_stderr "backend unavailable" "consume"
jb b1 owner "$PUB"
[ "$out" = alice ] || fail "a failed consume changed the job: $out"
jb b1 claim --who w "$LOCAL_D"
expect_ok "claim of a local job with Redis down"
jb b1 claim-next --who w2
[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "claim-next: exit $rc: $err"
[ "$out" != "$PUB2" ] || fail "claim-next claimed a Redis-decided job with Redis down"
end

finish
