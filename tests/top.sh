#!/bin/bash
# tests/top.sh - `jobboard top`, as a user runs it: one frame as text and
# as JSON (--once, and stdout not a terminal) on a board holding posts of
# several names, a claim with a lease, a paused name, a cap, a delayed
# job and a dead letter; --name; the usage errors; a missing board; and
# live on a terminal (a pty): redrawn when a job is posted, limited to the
# window's height, q quits with exit 0 and the terminal's settings back
# (also after Ctrl-C, SIGTERM, SIGHUP, SIGQUIT and Ctrl-Z), SIGWINCH
# does not end it, and a frame longer than --interval is followed by a
# pause as long.
#
# Runs the built ./jobboard (or $JOBBOARD) on boards under one mktemp -d
# directory, removed on exit. JSON and the pty are handled with python3.

set -u

. "$(dirname "$0")/lib/harness.sh"

program JOBBOARD ./jobboard
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 ||
  bail "python3 is needed to check JSON output and to run a pty"

ROOT=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-top.XXXXXX") || bail "mktemp failed"
cleanup() { rm -rf "$ROOT"; }
at_exit cleanup
trap 'exit 130' INT TERM
unset JOBBOARD_DIR

step_setup() {
  B=$ROOT/b$step_no
}

jb() {
  run "$JOBBOARD" --board "$B" --durability none "$@"
}
post() {
  jb post "$@"
  uuid=$out
  [ "$rc" = 0 ] || fail "post $*: exit $rc: $err"
}
# pycheck EXPR WHAT: $out is one JSON object, `j`.
pycheck() {
  printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
j = json.loads(sys.stdin.read())
names = {n["name"]: n for n in j["names"]}
sys.exit(0 if eval("(" + sys.argv[1] + ")") else 1)
' "$1" 2>"$ROOT/pyerr" || fail "$2: $1 is false on: $out $(cat "$ROOT/pyerr")"
}
# has LINE WHAT: $out has a line matching the extended regex LINE.
has() {
  printf '%s\n' "$out" | grep -Eq -- "$1" || fail "$2: no line /$1/ in:
$out"
}

# The board of the frames: a 3 ready (cap 2, one claimed with a lease of
# 30 s), b 1 ready and paused, c 1 delayed, d 1 ready, e 1 dead letter.
fill() {
  for i in 1 2 3 4; do post a; done
  post b
  post c --delay 3600
  post d
  post e
  ue=$uuid
  jb pause b
  jb cap a 2
  jb rate a 10 60
  jb claim-next --who w1 --lease 30 --name a
  [ "$rc" = 0 ] || fail "claim a: $err"
  ua=$out
  jb claim-next --who w2 --name e
  jb abandon "$ue" --who w2 --dead
  [ "$rc" = 0 ] || fail "dead letter: $err"
}

begin "--once: the counts by state, by name, the oldest, the lapsing lease"
fill
jb top --once
expect_ok "top --once"
has '^jobs: ready 5 \(paused 1\)  delayed 1 \(due 0\)  claimed 1  dead letters 1$' "by state"
has '^last 60 s: consumed 0\.00/s \(0\)  completed 0\.02/s \(1\)$' "throughput"
has '^oldest ready: [0-9.]+s \(a\)$' "oldest"
has '^ +3 +1 +0 1/2 +10/1m +[0-9.]+s +a$' "a's row"
has '^ +1 +0 +0 +[0-9.]+s paused b$' "b's row"
has '^ +0 +0 +1 +- +c$' "c's row"
has "^leases lapsing within 60 s: 1$" "lapsing"
has "^ +[0-9.]+s  w1 +$ua a$" "the lease"
# Most ready first: a, then b and d (1 each, by name), then c and e.
[ "$(printf '%s\n' "$out" | awk 'f && NF { print $NF } /^ +READY/ { f = 1 } /^$/ && f { exit }' | head -5 | tr '\n' ' ')" = "a b d c e " ] ||
  fail "row order: $out"
# Not a terminal: one plain frame without --once too, no escapes.
jb top
expect_ok "top to a pipe"
case $out in *$'\033'*) fail "escapes in a plain frame: $out" ;; esac
has '^jobs: ready 5 ' "a pipe gets a frame"
# The same counts as `stats`.
jb stats --json
printf '%s\n' "$out" | "$PYTHON" -c '
import json, sys
j = json.loads(sys.stdin.read())["jobs"]
sys.exit(0 if (j["unclaimed"], j["claimed"], j["delayed"], j["dead_letters"]) == (5, 1, 1, 1) else 1)
' || fail "stats disagrees: $out"
end

begin "--json: one object with the same counts"
fill
jb top --json --once
expect_ok "top --json"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] || fail "one line: $out"
pycheck 'j["jobs"] == {"ready": 5, "ready_paused": 1, "delayed": 1, "delayed_due": 0, "claimed": 1, "dead_letters": 1}' "jobs"
pycheck '[n["name"] for n in j["names"]] == ["a", "b", "d", "c", "e"]' "order"
pycheck 'names["a"]["ready"] == 3 and names["a"]["claimed"] == 1 and names["a"]["cap"] == 2 and names["a"]["held"] == 1 and names["a"]["rate"] == 10' "a"
pycheck 'names["b"]["paused"] and names["b"]["ready"] == 1 and not names["d"]["paused"]' "b paused"
pycheck 'names["c"]["delayed"] == 1 and names["c"]["oldest_ready_seconds"] is None' "c delayed"
pycheck 'j["oldest_ready_name"] == "a" and j["oldest_ready_seconds"] >= 0' "oldest"
pycheck 'j["throughput"]["completed"] == 1 and j["throughput"]["consumed"] == 0 and j["throughput"]["window_seconds"] == 60' "throughput"
pycheck 'len(j["lapsing"]) == 1 and j["lapsing"][0]["owner"] == "w1" and 0 < j["lapsing"][0]["lapses_in_seconds"] <= 30' "lapsing"
pycheck 'j["board_paused"] is False and j["log_next"] > 1' "board"
# A consumed job counts in the throughput; the whole board paused.
jb consume "$ua" --who w1
jb pause --all
jb top --json
pycheck 'j["throughput"]["consumed"] == 1 and j["throughput"]["completed"] == 2 and j["board_paused"] and j["jobs"]["ready_paused"] == 5 and j["lapsing"] == []' "after a consume"
end

begin "--name: only those names' rows and counts"
fill
jb top --json --name a --name 'e*'
expect_ok "top --name"
pycheck '[n["name"] for n in j["names"]] == ["a", "e"]' "rows"
pycheck 'j["jobs"] == {"ready": 3, "ready_paused": 0, "delayed": 0, "delayed_due": 0, "claimed": 1, "dead_letters": 1}' "counts"
jb top --once --name c
has '^jobs: ready 0 \(paused 0\)  delayed 1 \(due 0\)  claimed 0  dead letters 0$' "c alone"
[ "$(printf '%s\n' "$out" | grep -c ' [abde]$')" = 0 ] || fail "other names: $out"
end

begin "usage errors and a missing board"
ERROR_PREFIX="jobboard: top: "
for bad in 0 0.05 -1 x 2x 86401 1d1ms; do
  jb top --once --interval "$bad"
  expect_error 2 "for --interval: " "--interval $bad"
done
jb top --once --bogus
expect_error 2 "unknown option '--bogus'" "unknown option"
jb top --once extra
expect_rc 2 "an operand"
ERROR_PREFIX="jobboard: "
jb top --once
expect_error 3 "does not exist" "a missing board"
[ ! -e "$B" ] || fail "a missing board was made"
jb top --once --interval 0.5
expect_rc 3 "a good --interval, then the missing board"
ERROR_PREFIX=""
end

begin "--help"
run "$JOBBOARD" top --help
expect_ok "top --help"
case $out in *"Usage: jobboard top"*"--interval DURATION"*"--once"*"Exit status"*) ;;
  *) fail "--help: $out" ;; esac
end

# live PYSCRIPT: run top on a pty (80x12) with stdin and stdout the pty
# (--interval $TOP_INTERVAL, 5 by default).
# The script gets `child` (its pid), `fd` (the master), read_for(secs),
# jb(args) and the board; it prints "ok" or what went wrong.
live() {
  "$PYTHON" - "$JOBBOARD" "$B" "$1" <<'EOF'
import fcntl, os, pty, resource, select, signal, struct, subprocess, sys, termios, time
jobboard, board, body = sys.argv[1:4]
# A fresh pty's settings: what top is to leave behind.
m, sl = os.openpty()
fresh = termios.tcgetattr(sl)
os.close(m)
os.close(sl)
child, fd = pty.fork()
if child == 0:
    # The size before top starts: it reads it for its first frame.
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 12, 80, 0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGQUIT: no core
    os.execv(jobboard, [jobboard, "--board", board, "top", "--interval",
                        os.environ.get("TOP_INTERVAL", "30")])
buf = b""
def read_for(secs, until=None):
    global buf
    end = time.monotonic() + secs
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], max(0, end - time.monotonic()))
        if not r:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        buf += data
        if until is not None and until in buf:
            return True
    return until is None
def jb(*args):
    subprocess.run([jobboard, "--board", board, "--durability", "none"] + list(args),
                   check=True, stdout=subprocess.DEVNULL)
def wait_exit(what, code=0, sig=None):
    """The child's exit within 3 s, exit `code` (or killed by `sig`), its
    last output read, the terminal's settings as they were."""
    end = time.monotonic() + 3
    while time.monotonic() < end:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
        read_for(0.1)
    else:
        done("%s did not end it: %r" % (what, buf[-300:]))
    if sig is not None:
        if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != sig:
            done("%s: exit status %r" % (what, status))
    elif not os.WIFEXITED(status) or os.WEXITSTATUS(status) != code:
        done("%s: exit status %r" % (what, status))
    read_for(0.5)
    restored(what)
def restored(what):
    now = termios.tcgetattr(fd)
    if now != fresh:
        done("%s: the terminal's settings are not restored: %r, not %r"
             % (what, now, fresh))
    if b"\x1b[?25h" not in buf[-100:]:
        done("%s: the cursor was not shown again: %r" % (what, buf[-100:]))
def first(until, secs=5):
    """The first frame, showing `until`."""
    if not read_for(secs, until):
        done("no first frame: %r" % buf[-300:])
def quit(what="q"):
    """q ends it (exit 0, the terminal's settings back): ok."""
    os.write(fd, b"q")
    wait_exit(what)
    done("ok")
def done(msg):
    print(msg)
    try:
        os.kill(child, 9)
    except OSError:
        pass
    sys.exit(0)
exec(body)
EOF
}

begin "live on a terminal: redrawn on a post (within 4 s, --interval 30), q quits (exit 0)"
post a
post a
run live '
if not read_for(3, b"jobs: ready 2 "):
    done("no first frame: %r" % buf)
read_for(1.5)               # settles: no change, no redraw needed
buf = b""
t0 = time.monotonic()
jb("post", "a")
# A bound for a hang, not a measure: the machine may be busy.
if not read_for(4, b"jobs: ready 3 "):
    done("no redraw within 4 s of a post (--interval 30): %r" % buf)
if b"\x1b[H\x1b[2J" not in buf:
    done("no clear and home: %r" % buf)
lflag = termios.tcgetattr(fd)[3]
if lflag & (termios.ICANON | termios.ECHO):
    done("the terminal is not in key-at-a-time mode while top runs")
os.write(fd, b"q")
wait_exit("q")
lflag = termios.tcgetattr(fd)[3]
if (lflag & (termios.ICANON | termios.ECHO)) != (termios.ICANON | termios.ECHO):
    done("the terminal settings were not restored: lflag %#x" % lflag)
if b"\x1b[?25h" not in buf:
    done("the cursor was not shown again: %r" % buf[-200:])
print("ok")
'
[ "$out" = ok ] || fail "$out $err"
end

begin "live: the window height limits the rows; Ctrl-C exits 0"
for i in $(seq 1 20); do post "n$(printf %02d "$i")"; done
run live '
if not read_for(3, b"more names)"):
    done("no cut to the window: %r" % buf)
frame = buf[buf.rindex(b"\x1b[2J") + 4:]
rows = frame.count(b"\n") + 1
if rows > 12:
    done("%d lines on a 12-line window: %r" % (rows, frame))
if frame.count(b" n") < 3:
    done("too few name rows: %r" % frame)
os.write(fd, b"\x03")
wait_exit("Ctrl-C")
print("ok")
'
[ "$out" = ok ] || fail "$out $err"
end

begin "live: SIGTERM exits 143, SIGHUP and SIGQUIT end it: the terminal's settings back"
post a
for how in TERM HUP QUIT; do
  run live '
first(b"jobs: ready 1 ")
if termios.tcgetattr(fd) == fresh:
    done("the terminal is not in key-at-a-time mode while top runs")
os.kill(child, signal.SIG'"$how"')
if "'"$how"'" == "TERM":
    wait_exit("SIGTERM", code=143)
else:
    wait_exit("SIG'"$how"'", sig=signal.SIG'"$how"')
print("ok")
'
  [ "$out" = ok ] || fail "SIG$how: $out $err"
done
end

begin "live: Ctrl-Z stops it with the terminal's settings back; continued, raw again and redrawn"
post a
run live '
first(b"jobs: ready 1 ")
os.kill(child, signal.SIGTSTP)
end = time.monotonic() + 3
while time.monotonic() < end:
    pid, status = os.waitpid(child, os.WNOHANG | os.WUNTRACED)
    if pid:
        break
    time.sleep(0.05)
else:
    done("SIGTSTP: not stopped within 3 s")
if not os.WIFSTOPPED(status):
    done("SIGTSTP: not stopped: %r" % status)
read_for(0.3)
restored("SIGTSTP")
buf = b""
os.kill(child, signal.SIGCONT)
if not read_for(4, b"jobs: ready 1 "):
    done("no redraw after SIGCONT: %r" % buf)
if termios.tcgetattr(fd)[3] & (termios.ICANON | termios.ECHO):
    done("not key-at-a-time again after SIGCONT")
quit("q after SIGCONT")
'
[ "$out" = ok ] || fail "$out $err"
end

begin "live: SIGWINCH while a frame waits for the terminal does not end it"
# Frames every 0.1 s that nobody reads fill the pty: top blocks writing
# one, and each SIGWINCH cuts into that write (SA_RESTART: it goes on).
post a
TOP_INTERVAL=0.1 run live '
first(b"jobs: ready 1 ")
time.sleep(2)
for i in range(20):
    os.kill(child, signal.SIGWINCH)
    time.sleep(0.05)
buf = b""
read_for(1)
pid, status = os.waitpid(child, os.WNOHANG)
if pid:
    done("top ended on SIGWINCH: status %r: %r" % (status, buf[-300:]))
quit()
'
[ "$out" = ok ] || fail "$out $err"
end

begin "live: a frame that takes longer than --interval is followed by a pause"
# 100000 jobs: a frame takes 0.1 s or more to read, longer than --interval
# 0.1; top then sleeps as long as the frame took before the next one, so
# its main thread sleeps about half the time (without the pause: never).
"$PYTHON" -c '
for i in range(100000): print("{\"name\": \"n%d\"}" % (i % 50))' |
  jb post --batch
[ "$rc" = 0 ] || fail "post --batch: $err"
TOP_INTERVAL=0.1 run live '
first(b"jobs: ready 100000 ", 10)
def state():
    with open("/proc/%d/task/%d/stat" % (child, child)) as f:
        return f.read().rsplit(")", 1)[1].split()[0]
seen = {}
end = time.monotonic() + 3
while time.monotonic() < end:
    read_for(0.005)
    buf = buf[-4096:]
    s = state()
    seen[s] = seen.get(s, 0) + 1
asleep = seen.get("S", 0) / sum(seen.values())
if asleep < 0.25:
    done("top slept %.0f%% of the time with frames longer than --interval: %r"
         % (asleep * 100, seen))
quit()
'
[ "$out" = ok ] || fail "$out $err"
end

finish
