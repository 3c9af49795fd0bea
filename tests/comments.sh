#!/bin/sh
# The repository stands on its own, and its comments say why in the
# present tense:
#
#  1. no file names a place outside the repository: a path into a
#     sibling folder (dot-dot slash "shared"), an absolute path of a
#     machine the code was written on (slash "work" slash), or by file
#     name a design, wire-format or style note kept outside it (outside_re
#     below). What the code relies on is in docs/DESIGN-NOTES.md.
#  2. no source, test, build or design file names the issue that asked
#     for the code ("issue" and a number, any case), in a comment or
#     anywhere else: such a reference tells history, and the issue is not
#     in the repository either. docs/BENCHMARKS.md dates its figures by
#     issue and is left out.
#
# The files: what git tracks when the source tree is a git checkout, else
# (a dist tarball) the source folders' files found by name. Each hit is
# printed as FILE:LINE. Reads the source tree only; runs from any
# directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-$(dirname "$0")/..}
top=$(cd "$srcdir" && pwd) || bail "no source tree at $srcdir"
cd "$top" || bail "cannot enter $top"

# The patterns are spelled in pieces so that this file does not match them.
outside_fixed="../sha""red
/wo""rk/"
outside_re='(^|[^-A-Za-z0-9_])(DESI''GN|STY''LE)\.md|taskflow-redis-w''ire\.md'
issue_re='issu''e [0-9]+'

list=$h_tmp/files
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
  git ls-files >"$list" || bail "git ls-files failed in $top"
else
  # Not a checkout: the folders' sources, tests, scripts and docs by name,
  # never what a build left beside them (Makefile, config.log, objects).
  find base codec store core sync tools bench include tests python scripts \
      contrib docs .ci -type f \
      \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o -name '*.lua' \
      -o -name '*.mk' -o -name '*.am' -o -name '*.ac' -o -name '*.in' \
      -o -name '*.md' -o -name '*.[13]' -o -name README -o -name run \
      -o -name '*.txt' -o -path 'contrib/*' \
      -o -path 'tests/fuzz/corpus/*' -o -path 'tests/fuzz/regress/*' \) \
      2>/dev/null | sort >"$list"
  for f in configure.ac Makefile.am README.md autogen.sh *.pc.in; do
    [ -f "$f" ] && echo "$f" >>"$list"
  done
fi
[ -s "$list" ] || bail "no files found under $top"
note "$(wc -l <"$list" | tr -d ' ') files"

# hits PATTERN-OPTIONS...: FILE:LINE of each matching line of the listed
# files (binary ones included: a captured seed holds text too).
hits() {
  tr '\n' '\0' <"$list" | xargs -0 grep -anH "$@" -- 2>/dev/null |
    cut -d: -f1-2
}

begin "no file points outside the repository (a sibling folder, a machine's path, a design kept elsewhere)"
found=$(printf '%s\n' "$outside_fixed" >"$h_tmp/fixed"
        { hits -F -f "$h_tmp/fixed"; hits -E "$outside_re"; } | sort -u)
for at in $found; do
  fail "$at names a place outside the repository"
done
end

begin "no source, test, build or design file names an issue (history, not why)"
grep -v '^docs/BENCHMARKS\.md$' "$list" >"$list.code"
mv "$list.code" "$list"
for at in $(hits -iE "$issue_re"); do
  fail "$at names an issue"
done
end

finish
