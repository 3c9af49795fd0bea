#!/bin/sh
# tests/systemd_units.sh - the systemd unit examples of contrib/systemd pass
# `systemd-analyze verify` without a word (an unknown key, a value that does
# not parse, a bad specifier: systemd only warns about those, so any
# output fails the test), with the kill settings the README promises
# (KillMode=mixed, SIGTERM, the second SIGTERM as the watchdog signal on a
# stop timeout), and contrib/systemd/jobboard.sysusers.conf passes
# `systemd-sysusers --dry-run`.
#
# ExecStart= is pointed at the built ./jobboard (verify wants an
# executable there) and the environment files at copies of the examples;
# --man=no: jobboard(1) need not be installed. Skipped (TAP: 1..0 # SKIP) when
# systemd-analyze is missing (apt-get install systemd).
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || bail "no directory $srcdir"
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}

command -v systemd-analyze >/dev/null 2>&1 ||
  skip_all "systemd-analyze is missing (apt-get install systemd)"
[ -x "$top_builddir/jobboard" ] || bail "no built jobboard in $top_builddir"

d=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-units.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$d"'
mkdir "$d/etc" || bail "cannot set up the unit files in $d"
cp "$srcdir/contrib/systemd/jobboard.env" "$d/etc/jobboard.env" &&
  cp "$srcdir/contrib/systemd/example.env" "$d/etc/images.env" || bail "cannot set up the unit files in $d"
for u in worker sync; do
  sed -e "s|/usr/bin/jobboard|$top_builddir/jobboard|" \
    -e "s|/etc/jobboard/|$d/etc/|g" \
    "$srcdir/contrib/systemd/jobboard-$u@.service" >"$d/jobboard-$u@.service" &&
    ln -s "jobboard-$u@.service" "$d/jobboard-$u@images.service" || bail "cannot set up the unit files in $d"
done

for u in worker sync; do
  begin "jobboard-$u@.service verifies"
  out=$(cd "$d" && systemd-analyze verify --man=no "./jobboard-$u@images.service" 2>&1)
  rc=$?
  [ $rc = 0 ] && [ -z "$out" ] ||
    fail "systemd-analyze verify jobboard-$u@.service (exit $rc): $out"
  end
done

# What systemd reads: the dump of the loaded unit (SYSTEMD_LOG_LEVEL=debug).
begin "jobboard-worker@.service stops as the README says"
dump=$(cd "$d" && SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no \
  ./jobboard-worker@images.service 2>&1)
for want in 'KillMode: mixed' 'KillSignal: SIGTERM' 'SendSIGKILL: yes' \
  'TimeoutStopFailureMode: abort' 'UMask: 0007' 'StateDirectory: jobboard' \
  'StateDirectoryMode: 2770' \
  'Restart: on-failure' 'User: jobboard' \
  "Command Line: $top_builddir/jobboard work --create --board /var/lib/jobboard/images"; do
  printf '%s\n' "$dump" | grep -qF "$want" ||
    fail "jobboard-worker@.service: systemd does not read '$want'"
done
end
begin "jobboard-sync@.service"
dump=$(cd "$d" && SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no \
  ./jobboard-sync@images.service 2>&1)
for want in 'KillMode: mixed' 'Restart: always' 'After: redis-server.service' \
  'After: network-online.target' 'Wants: network-online.target' \
  "Command Line: $top_builddir/jobboard sync --create --board /var/lib/jobboard/images"; do
  printf '%s\n' "$dump" | grep -qF "$want" ||
    fail "jobboard-sync@.service: systemd does not read '$want'"
done
end

if command -v systemd-sysusers >/dev/null 2>&1; then
  begin "jobboard.sysusers.conf"
  mkdir -p "$d/root/etc" || bail "mkdir failed"
  out=$(systemd-sysusers --dry-run --root="$d/root" \
    "$srcdir/contrib/systemd/jobboard.sysusers.conf" 2>&1) ||
    fail "systemd-sysusers: $out"
  printf '%s\n' "$out" | grep -q "Creating user 'jobboard'" ||
    fail "systemd-sysusers makes no user jobboard: $out"
  end
fi
finish
