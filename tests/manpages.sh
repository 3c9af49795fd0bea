#!/bin/sh
# tests/manpages.sh - the man(3) pages of the C API (docs/man3), and the
# rendering of every other page (docs/jobboard.1):
#  1. every JB_EXTERN function of include/jobboard.h and include/jobboard_sync.h
#     has a page of its name: a group page whose SYNOPSIS declares it, or
#     a ".so man3/GROUP.3" link to one (a new function without a page
#     fails here);
#  2. each SYNOPSIS holds the header's prototypes exactly (white space
#     aside; needs python3, else skipped with a note);
#  3. every page renders without a warning (man --warnings, else groff
#     -man -ww; group pages at 60 and 80 columns), and every page is
#     installed (docs/local.mk lists it); jobboard(1) (every docs/*.[1-9])
#     renders without a warning at 60 and 80 columns;
#  4. each group page's EXAMPLES is its program tests/man3_examples/X.c,
#     which make check built: each is run on a fresh board (the Redis one
#     against a redis-server of its own when there is one, else against a
#     closed port, where it must say the server is away).
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
srcdir=$(cd "$srcdir" && pwd) || bail "no directory $srcdir"
top_builddir=${JB_TEST_TOP_BUILDDIR:-$PWD}
man3=$srcdir/docs/man3

d=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-man3.XXXXXX") || bail "mktemp failed"
redis_pid=
cleanup() {
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
  rm -rf "$d"
}
at_exit cleanup

begin "a page for every function of the headers"
# The functions of the headers (a declaration's name is on its JB_EXTERN line).
funcs=$(sed -n 's/^JB_EXTERN[^(]*[ *]\(jb_[a-z0-9_]*\)(.*/\1/p' \
  "$srcdir/include/jobboard.h" "$srcdir/include/jobboard_sync.h" | sort -u)
n=$(printf '%s\n' "$funcs" | wc -l)
[ "$n" -gt 100 ] || fail "only $n functions found in the headers"

# 1. A page for every function.
for f in $funcs; do
  p=$man3/$f.3
  if [ ! -f "$p" ]; then
    fail "$f: no page docs/man3/$f.3 (add it to its group's page and a .so link)"
    continue
  fi
  target=$p
  link=$(sed -n 's/^\.so man3\/\(.*\)$/\1/p' "$p")
  [ -n "$link" ] && target=$man3/$link
  [ -f "$target" ] || { fail "$f.3 links to missing $link"; continue; }
  sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$target" | grep -qF "\\fB$f\\fP(" ||
    fail "$f: the SYNOPSIS of ${target##*/} does not declare it"
done
note "$n functions, each with a page"
end

# 2. Exact prototypes.
py=${JB_TEST_PYTHON:-/usr/bin/python3}
begin "SYNOPSIS prototypes as in the headers"
if [ -x "$py" ]; then
  "$py" - "$srcdir" <<'PY' || fail "SYNOPSIS prototypes differ from the headers"
import os, re, sys
src = sys.argv[1]
def norm(s):
    return re.sub(r'\s+', '', s)
bad = 0
for h in ('include/jobboard.h', 'include/jobboard_sync.h'):
    text = re.sub(r'/\*.*?\*/', '', open(os.path.join(src, h)).read(), flags=re.S)
    text = '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))
    for m in re.finditer(r'JB_EXTERN\s+(.*?;)', text, flags=re.S):
        decl = m.group(1)
        name = re.search(r'(jb_\w+)\(', decl).group(1)
        page = os.path.join(src, 'docs/man3', name + '.3')
        if not os.path.exists(page):
            continue  # reported above
        body = open(page).read()
        so = re.match(r'\.so man3/(.*)\n', body)
        if so:
            body = open(os.path.join(src, 'docs/man3', so.group(1))).read()
        syn = body.split('.SH SYNOPSIS', 1)[-1].split('\n.SH ', 1)[0]
        syn = syn.replace('\\fB', '').replace('\\fP', '').replace('\\-', '-')
        if norm(decl) not in norm(syn):
            print('FAIL: %s: the page does not declare it as %s does:\n  %s'
                  % (name, h, ' '.join(decl.split())), file=sys.stderr)
            bad += 1
sys.exit(1 if bad else 0)
PY
else
  skip "no python3 at $py: prototypes not compared"
fi
end

# 3. Rendering, and every page installed.
begin "every page is installed and renders without a warning"
for p in "$man3"/*.3; do
  b=${p##*/}
  case " ${JB_TEST_MAN3:-docs/man3/$b} " in
    *" docs/man3/$b "*) ;;
    *) fail "docs/man3/$b is not in dist_man3_MANS (docs/local.mk)" ;;
  esac
  # A group page at 60 and 80 columns, a link page (its group's) at 80.
  widths=80
  grep -q '^\.so ' "$p" || widths="60 80"
  out=
  for w in $widths; do
    if command -v man >/dev/null 2>&1; then
      out=$out$(cd "$srcdir/docs" && LC_ALL=C.UTF-8 MANWIDTH=$w \
        man --warnings=w -E UTF-8 -l "man3/$b" 2>&1 >/dev/null)
    else
      out=$out$(cd "$srcdir/docs" && groff -man -ww -z -Tutf8 -rLL=${w}n \
        -s "man3/$b" 2>&1)
    fi
  done
  [ -z "$out" ] || fail "docs/man3/$b renders with warnings: $out"
done
end

# 3b. The other sections' pages (jobboard(1)): every warning is an error, at
# 80 columns and at a narrow 60 (a long word that cannot be broken or
# justified there warns "cannot adjust line").
begin "jobboard(1) and the other sections' pages render without a warning at 60 and 80 columns"
npages=0
for p in "$srcdir"/docs/*.[1-9]; do
  [ -f "$p" ] || continue
  npages=$((npages + 1))
  b=${p##*/}
  for w in 60 80; do
    if command -v man >/dev/null 2>&1; then
      out=$(cd "$srcdir/docs" && LC_ALL=C.UTF-8 MANWIDTH=$w \
        man --warnings=w -E UTF-8 -l "$b" 2>&1 >/dev/null)
    else
      out=$(cd "$srcdir/docs" && groff -man -ww -z -Tutf8 -rLL=${w}n "$b" 2>&1)
    fi
    [ -z "$out" ] || fail "docs/$b at $w columns renders with warnings: $out"
  done
done
[ "$npages" -gt 0 ] || fail "no page docs/*.[1-9] found (jobboard.1 at least)"
note "$npages page(s) of other sections rendered"
end

# 4. EXAMPLES = tests/man3_examples/X.c, and the programs run.
begin "EXAMPLES are tests/man3_examples/*.c"
for p in "$man3"/*.3; do
  grep -q '^\.SH EXAMPLES' "$p" || continue
  ex=$(sed -n 's/^The program below is \\fItests\/man3_examples\/\([a-z]*\)\.c\\fP.*/\1/p' "$p")
  [ -n "$ex" ] || continue
  c=$srcdir/tests/man3_examples/$ex.c
  [ -f "$c" ] || { fail "${p##*/}: no $c"; continue; }
  sed -n '/^\.EX$/,/^\.EE$/p' "$p" | sed '1d;$d' |
    sed -e 's/^\\&//' -e 's/\\-/-/g' -e 's/\\e/\\/g' >"$d/$ex.from-page"
  cmp -s "$d/$ex.from-page" "$c" ||
    fail "${p##*/}: EXAMPLES differs from tests/man3_examples/$ex.c: $(diff "$d/$ex.from-page" "$c" | head -5)"
done
end

url=
for ex in ${JB_TEST_MAN3_EXAMPLES:-}; do
  begin "example $ex runs"
  prog=$top_builddir/tests/man3_examples/$ex
  [ -x "$prog" ] || { fail "$prog was not built"; continue; }
  if [ "$ex" = sync ]; then
    url=redis://127.0.0.1:1/0
    if command -v redis-server >/dev/null 2>&1; then
      port=$((20000 + $$ % 20000))
      redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$d" >"$d/redis.log" 2>&1 &
      redis_pid=$!
      up=no
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 "$redis_pid" 2>/dev/null || break
        redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && { up=yes; break; }
        sleep 0.3
      done
      if [ "$up" = yes ] && kill -0 "$redis_pid" 2>/dev/null; then
        url=redis://127.0.0.1:$port/0
      else
        # Not ours (the port was taken, or no redis-cli): the closed port.
        kill "$redis_pid" 2>/dev/null
        redis_pid=
      fi
    fi
    out=$(timeout 60 "$prog" "$d/board-$ex" "$url" 2>&1) ||
      fail "man3 example $ex (against $url): $out"
    case $url in
      *:1/0) printf '%s\n' "$out" | grep -q "connection refused\|refused" ||
        fail "man3 example sync: no word of the refused connection: $out" ;;
      *) printf '%s\n' "$out" | grep -q "^published " ||
        fail "man3 example sync published nothing: $out" ;;
    esac
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    redis_pid=
  else
    out=$(timeout 60 "$prog" "$d/board-$ex" 2>&1) ||
      fail "man3 example $ex: $out"
  fi
  [ -z "$url" ] || note "example $ex ran against $url"
  end
done
finish
