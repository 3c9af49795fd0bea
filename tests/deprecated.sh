#!/bin/sh
# The names of 0.1 that 0.2 replaced (the "deprecated" sections of
# include/jobboard.h and include/jobboard_sync.h) are kept for one release
# and must keep working: each function declared there is called by
# tests/test_deprecated.c or tests/test_deprecated_sync.c, and nothing else
# in the tree (the library's own code, the CLI, the benchmarks, the other
# tests, the man(3) examples) calls one. Reads the source tree only.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-$(dirname "$0")/..}
top=$(cd "$srcdir" && pwd) || bail "no source tree at $srcdir"
cd "$top" || bail "cannot enter $top"

# A deprecated section runs from "#ifndef JB_NO_DEPRECATED" to its #endif.
names=$(for h in include/jobboard.h include/jobboard_sync.h; do
  sed -n '/^#ifndef JB_NO_DEPRECATED/,/^#endif/p' "$h" |
    sed -n 's/^JB_EXTERN[^(]*[ *]\(jb_[a-z0-9_]*\)(.*/\1/p'
done | sort -u)
n=$(printf '%s\n' "$names" | grep -c .)

begin "each of the $n deprecated functions is called by a test"
[ "$n" -ge 20 ] || fail "only $n deprecated functions found in the headers"
for f in $names; do
  grep -q "\\b$f(" tests/test_deprecated.c tests/test_deprecated_sync.c ||
    fail "$f: no call in tests/test_deprecated.c or tests/test_deprecated_sync.c"
done
end

begin "no code but the wrappers and their tests calls a deprecated name"
for f in $names; do
  grep -n "\\b$f(" base/*.[ch] codec/*.[ch] store/*.[ch] core/*.[ch] \
      sync/*.[ch] tools/*.[ch] bench/*.[ch] tests/*.[ch] \
      tests/man3_examples/*.c 2>/dev/null |
    grep -v '^core/deprecated\.c:\|^sync/deprecated\.c:\|^tests/test_deprecated' |
    grep -v '^[^:]*:[0-9]*: *\*\|/\*' >"$h_tmp/hits"
  [ -s "$h_tmp/hits" ] && fail "$f is called outside the wrappers: $(head -3 "$h_tmp/hits")"
done
end

finish
