#!/bin/bash
# tests/sync_sentinel.sh - a fleet on a Redis watched by Sentinel, through
# two failovers: `--redis redis-sentinel://...` finds
# the master through the sentinels and follows it.
#
# The test starts, on 127.0.0.1 and free ports, a master (M1), a replica
# (M2, --replicaof M1) and three redis-sentinel processes (quorum 2,
# down-after 1000 ms), each with its config file in the test's directory;
# two boards A and B with their `jobboard sync` daemons and two
# `jobboard work` workers each, all given only the sentinel URL (which
# names first a sentinel that is down and a fake one naming the replica,
# as a sentinel behind a failover would: both must be passed over); and
# posters on A and B posting 200 jobs over about 15 s. Mid-run:
#
#  1. a forced failover, M1 -> M2: SENTINEL FAILOVER, made lossless the
#     way Redis's own FAILOVER command does it (CLIENT PAUSE WRITE on the
#     master, wait until the replica has every write, promote, demote the
#     old master (REPLICAOF), unpause). Sentinel alone leaves the old
#     master taking writes for about 10 s after the promotion, and those
#     writes are lost when it is demoted: docs/DESIGN-NOTES.md, "Sentinel".
#     The writes paused meanwhile are answered READONLY by the demoted
#     master: a sure refusal, and the clients find the new master;
#  2. a crash, M2: kill -9 after the same pause and catch-up (so that no
#     acknowledged write is lost: with replication lag a crash can lose
#     writes, which no client can prevent); the sentinels elect M1 again.
#
# At the end every job ran exactly once (a worker's CMD logs each run),
# none is left in Redis or on a board, no worker had a completion refused,
# and every daemon and worker lived through both failovers.
#
# Needs redis-server, redis-cli, redis-sentinel (Debian's redis-sentinel
# package: else skipped) and what tests/sync_lib.sh needs.
. "$(dirname "$0")/lib/harness.sh"
command -v redis-sentinel >/dev/null 2>&1 ||
  skip_all "redis-sentinel is not installed (apt-get install -y redis-sentinel)"
. "${srcdir:-.}/tests/sync_lib.sh"

A=$ROOT/hostA
B=$ROOT/hostB
MASTER=mymaster
JOBS=200 # half on A, half on B, 5 every 0.8 s: posted for 16 s

# free_port: a TCP port of 127.0.0.1 nobody listens on (checked with ss;
# a port taken in the meantime makes its server fail to start: the test
# then fails, naming it).
USED=" "
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    case $USED in *" $p "*) continue ;; esac
    if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
      USED="$USED$p "
      echo "$p"
      return
    fi
  done
}
P1=$(free_port)
P2=$(free_port)
SP=()
for i in 1 2 3; do SP+=("$(free_port)"); done
# The URL names first a port where nothing listens (a sentinel that is
# down), then a fake sentinel that always names M2, the replica (a
# sentinel behind a failover: the clients must check the server's ROLE
# and ask on), then the three real ones.
DEAD=$(free_port)
FAKE=$(free_port)
URL="redis-sentinel://127.0.0.1:$DEAD,127.0.0.1:$FAKE,127.0.0.1:${SP[0]},127.0.0.1:${SP[1]},127.0.0.1:${SP[2]}/$MASTER"

declare -A SPID # server pids by port
server_start() { # server_start PORT [ARGS]
  local port=$1
  shift
  mkdir -p "$ROOT/r$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' \
    --appendonly yes --appendfsync always --dir "$ROOT/r$port" \
    --logfile "$ROOT/r$port/log" "$@" >/dev/null 2>&1 &
  SPID[$port]=$!
  track $!
  wait_until 10 "redis-server on port $port did not start" \
    eval "[ \"\$(redis-cli -p $port ping 2>/dev/null)\" = PONG ]" || finish
}
scli() { redis-cli -p "${SP[0]}" "$@"; }
role() { redis-cli -p "$1" role 2>/dev/null | head -1; }

"$PY" -c '
import socket, sys, threading
port, named = int(sys.argv[1]), sys.argv[2].encode()
reply = b"*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%s\r\n" % (len(named), named)
def serve(c):
    with c:
        while c.recv(4096):
            c.sendall(reply)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
' "$FAKE" "$P2" &
track $!

server_start "$P1"
server_start "$P2" --replicaof 127.0.0.1 "$P1"
for i in 0 1 2; do
  cat >"$ROOT/sentinel$i.conf" <<EOF
port ${SP[$i]}
bind 127.0.0.1
dir $ROOT
logfile $ROOT/sentinel$i.log
sentinel monitor $MASTER 127.0.0.1 $P1 2
sentinel down-after-milliseconds $MASTER 1000
sentinel failover-timeout $MASTER 3000
sentinel parallel-syncs $MASTER 1
EOF
  redis-sentinel "$ROOT/sentinel$i.conf" >/dev/null 2>&1 &
  track $!
done
# named PORT: every sentinel names 127.0.0.1:PORT as the master
named() {
  local i
  for i in 0 1 2; do
    [ "$(redis-cli -p "${SP[$i]}" sentinel get-master-addr-by-name $MASTER \
      2>/dev/null | tr '\n' ' ')" = "127.0.0.1 $1 " ] || return 1
  done
}
# Each sentinel must know the other two (their hello messages come every
# 2 s) and the replica before a failover can be agreed.
ready() {
  local i
  for i in 0 1 2; do
    redis-cli -p "${SP[$i]}" sentinel master $MASTER 2>/dev/null |
      tr '\n' ' ' | grep -q 'num-other-sentinels 2 ' || return 1
    redis-cli -p "${SP[$i]}" sentinel master $MASTER 2>/dev/null |
      tr '\n' ' ' | grep -q 'num-slaves 1 ' || return 1
  done
}
wait_until 20 "the sentinels do not know each other and the replica" ready ||
  finish
named "$P1" || die "the sentinels do not name M1 (port $P1) as the master"
note "master $P1, replica $P2, sentinels ${SP[*]}"

# A URL naming an unknown master is refused at once (exit 2), not retried.
jb --board "$ROOT/probe" post probe >/dev/null 2>&1
"$JOBBOARD" --board "$ROOT/probe" sync --namespace "$NS" \
  --redis "redis-sentinel://127.0.0.1:${SP[0]}/nosuchmaster" \
  >/dev/null 2>"$ROOT/probe.err"
rc=$?
[ "$rc" = 2 ] &&
  grep -q 'no sentinel watches a master named "nosuchmaster"' "$ROOT/probe.err" ||
  fail "sync with an unknown master name: exit $rc, expected 2: $(cat "$ROOT/probe.err")"

new_board "$A"
new_board "$B"
sync_start "$A" A --poll 0.5 # sync_lib.sh's, on $URL: the sentinels
sync_start "$B" B --poll 0.5

WORKERS=(A-w1 A-w2 B-w1 B-w2)
worker_start A-w1 "$A" 0.02
worker_start A-w2 "$A" 0.02
worker_start B-w1 "$B" 0.02
worker_start B-w2 "$B" 0.02
poster "$A" A 5 0.8 $((JOBS / 2)) &
PPA=$!
track $PPA
poster "$B" B 5 0.8 $((JOBS / 2)) &
PPB=$!
track $PPB

ran() { cat "$ROOT"/run-*.log 2>/dev/null | wc -l; }
# caught_up PORT REPLICA: the replica has every write of master PORT
caught_up() {
  local m r
  m=$(redis-cli -p "$1" info replication | tr -d '\r' |
    sed -n 's/^master_repl_offset://p')
  r=$(redis-cli -p "$2" info replication | tr -d '\r' |
    sed -n 's/^slave_repl_offset://p')
  [ -n "$m" ] && [ "$m" = "$r" ]
}
# pause_and_drain OLD NEW: stop writes on master OLD (paused clients wait)
# until its replica NEW has all it acknowledged.
pause_and_drain() {
  redis-cli -p "$1" client pause 20000 write >/dev/null ||
    die "CLIENT PAUSE on $1"
  wait_until 10 "replica $2 did not catch up with master $1" caught_up "$1" "$2" ||
    finish
}

# seq_on PORT: NS:sequence there (jobs published so far): it must grow
# under each master, or the jobs ran on their own boards without Redis.
seq_on() { redis-cli -p "$1" get "$NS:sequence"; }
sleep 3
for d in A B; do sync_alive $d; done
[ "$(ran)" -gt 0 ] || fail "no job ran in 3 s through the sentinels"
S0=$(seq_on "$P1")
[ "${S0:-0}" -gt 0 ] || fail "nothing published to master $P1 in 3 s"
note "$(ran) jobs run; failover 1: SENTINEL FAILOVER $P1 -> $P2"
pause_and_drain "$P1" "$P2"
[ "$(scli sentinel failover $MASTER)" = OK ] || die "SENTINEL FAILOVER refused"
wait_until 10 "the sentinels do not name $P2 after SENTINEL FAILOVER" named "$P2" ||
  finish
[ "$(role "$P2")" = master ] || die "$P2 is named but is a $(role "$P2")"
S1=$(seq_on "$P2")
# What Sentinel itself does about 10 s later (+convert-to-slave), at once:
redis-cli -p "$P1" replicaof 127.0.0.1 "$P2" >/dev/null
redis-cli -p "$P1" client unpause >/dev/null
note "failover 1 done: master $P2 ($(ran) jobs run)"

sleep 2
[ "$(role "$P1")" = slave ] || fail "old master $P1 is a $(role "$P1"), not a replica"
wait_until 10 "$P1 did not sync from $P2" \
  eval "redis-cli -p $P1 info replication | grep -q 'master_link_status:up'"
# The sentinels must have seen it as a replica of the new master before
# they can promote it (their INFO of the master, every 10 s at most; and
# one sentinel per failover-timeout per master).
wait_until 15 "the sentinels do not know $P1 as a replica of $P2" ready
sleep 3
S2=$(seq_on "$P2")
[ "${S2:-0}" -gt "${S1:-0}" ] ||
  fail "nothing published to master $P2 (sequence ${S1:-none} -> ${S2:-none})"
note "$(ran) jobs run; failover 2: kill -9 of master $P2"
pause_and_drain "$P2" "$P1"
S2=$(seq_on "$P2")
kill -9 "${SPID[$P2]}"
wait "${SPID[$P2]}" 2>/dev/null
wait_until 20 "the sentinels do not name $P1 after the master was killed" \
  named "$P1" || finish
note "failover 2 done: master $P1 ($(ran) jobs run)"
wait_until 10 "$P1 is a $(role "$P1") after failover 2, not a master" \
  eval "[ \"\$(role $P1)\" = master ]"

# One post after failover 2 whatever the posters' timing (under load they
# may have finished before it): published to the new master.
jb --board "$A" post after-failover-2 >"$ROOT/posted-extra" ||
  fail "post on A after failover 2"
published_after() { [ "$(seq_on "$P1")" -gt "${S2:-0}" ]; }
wait_until 10 "nothing published to master $P1 after failover 2 (its \
sequence still ${S2:-none})" published_after
wait $PPA
wait $PPB
[ -e "$ROOT/poster-errors" ] && fail "$(sort "$ROOT/poster-errors" | uniq -c)"
cat "$ROOT/posted-A" "$ROOT/posted-B" "$ROOT/posted-extra" | sort \
  >"$ROOT/all-posted"
N=$(wc -l <"$ROOT/all-posted")
[ "$N" = $((JOBS + 1)) ] || fail "$N jobs posted, expected $((JOBS + 1))"
all_ran() { [ "$(ran)" -ge "$N" ]; }
wait_until 30 "all $N jobs run: only $(ran)" all_ran
rlisted() { redis-cli -p "$P1" hlen "$NS:listings"; }
empty() {
  [ "$(rlisted)" = 0 ] && [ "$(count "$A")" = 0 ] && [ "$(count "$B")" = 0 ]
}
wait_until 15 "Redis and the boards empty" empty ||
  fail "  Redis lists $(rlisted); boards count A $(count "$A"), B $(count "$B")"

for d in A B; do sync_alive $d; done
for w in "${WORKERS[@]}"; do
  if ! kill -0 "${WPID[$w]}" 2>/dev/null; then
    wait "${WPID[$w]}"
    fail "worker $w exited $? during the run: $(grep -v ': consumed (' "$ROOT/$w.err" | tail -3)"
    continue
  fi
  worker_stop "$w"
done
# The daemons logged both masters.
for d in A B; do
  for p in "$P1" "$P2"; do
    grep -q "connected to redis at 127.0.0.1:$p (master $MASTER)" \
      "$ROOT/sync-$d.log" || fail "daemon $d never logged its connection to master $p"
  done
done
status_ok() {
  "$JOBBOARD" status --board "$A" >"$ROOT/status" 2>&1
  grep -q "synced with:   redis-sentinel://127.0.0.1:$DEAD,127.0.0.1:$FAKE," "$ROOT/status" &&
    grep -q "connected to 127.0.0.1:$P1 (master $MASTER)" "$ROOT/status"
}
wait_until 10 "status does not show the sentinel URL and the master" status_ok ||
  cat "$ROOT/status" >&2
for d in A B; do sync_stop $d; done

# Exactly once: every posted uuid ran once, nothing else ran.
cat "$ROOT"/run-*.log | sort >"$ROOT/all-run"
twice=$(uniq -d "$ROOT/all-run" | wc -l)
lost=$(comm -23 "$ROOT/all-posted" <(uniq "$ROOT/all-run") | wc -l)
extra=$(comm -13 "$ROOT/all-posted" <(uniq "$ROOT/all-run") | wc -l)
[ "$twice" = 0 ] || fail "$twice jobs ran more than once: $(uniq -d "$ROOT/all-run" | head -3 | tr '\n' ' ')"
[ "$lost" = 0 ] || fail "$lost jobs never ran: $(comm -23 "$ROOT/all-posted" <(uniq "$ROOT/all-run") | head -3 | tr '\n' ' ')"
[ "$extra" = 0 ] || fail "$extra runs of jobs nobody posted"
note "$N jobs, $(wc -l <"$ROOT/all-run") runs: $twice twice, $lost lost; total $(since)s"
finish
