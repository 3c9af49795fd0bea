#!/bin/sh
# tests/quickstart.sh - the Quick start's test command installs what every
# test needs: each package a test names in its "apt-get install ..." hint
# (the message of a skip_all, a skip, a bail or a die when something is
# missing) is in the package list of scripts/quickstart.sh, so that a test
# run on a fresh machine runs every test instead of skipping some. Reads
# the source tree only.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-$(dirname "$0")/..}
top=$(cd "$srcdir" && pwd) || bail "no source tree at $srcdir"
qs=$top/scripts/quickstart.sh
[ -f "$qs" ] || bail "no $qs"

# The words of quickstart's packages="..." assignment.
listed=$(sed -n '/^packages="/,/"$/p' "$qs" | tr -d '"\\' |
  sed 's/^packages=//' | tr -s ' \t' '\n\n' | sed '/^$/d')
[ -n "$listed" ] || bail "no packages=\"...\" list in $qs"

begin "every package a test's apt-get hint names is installed by the quickstart"
n=0
for t in "$top"/tests/*.sh; do
  [ "${t##*/}" != quickstart.sh ] || continue
  # "apt-get install [-y] P1 P2...": the words up to a closing parenthesis
  # or quote; $missing (a list built at run time) is checked by name below.
  hints=$(grep -o 'apt-get install[^)"]*' "$t" |
    sed 's/apt-get install//; s/-y//g; s/\$missing//g')
  for p in $hints; do
    n=$((n + 1))
    printf '%s\n' "$listed" | grep -qx "$p" ||
      fail "${t##*/} asks for '$p', which scripts/quickstart.sh does not install"
  done
done
[ "$n" -gt 5 ] || fail "only $n package names found in the tests' hints"
end

begin "the programs tests look for with command -v come from listed packages"
# program -> its Debian package, for the programs a test skips without.
for pair in systemd-analyze:systemd redis-server:redis-server \
  redis-cli:redis-tools redis-sentinel:redis-sentinel man:man-db \
  python3:python3 curl:curl; do
  prog=${pair%%:*} pkg=${pair#*:}
  grep -l "command -v" "$top"/tests/*.sh | xargs grep -qw -- "$prog" ||
    continue
  printf '%s\n' "$listed" | grep -qx "$pkg" ||
    fail "a test looks for $prog: scripts/quickstart.sh does not install $pkg"
done
end

finish
