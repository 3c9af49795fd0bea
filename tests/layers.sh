#!/bin/sh
# The folders of the source tree depend one way (README.md, "Layout"):
#
#   base/ <- codec/ <- store/ <- core/ <- sync/ <- tools/ <- bench/
#
# Every #include "..." of a .c or .h file under those folders must name a
# file of its own folder, of a folder it may use below it, or of include/
# (the public headers). What each folder may use below it:
#   base/   nothing (include/ only)
#   codec/  base/
#   store/  base/ codec/
#   core/   base/ codec/ store/
#   sync/   core/sync_hook.h only: libjbsync is a library of its own and
#           that header is the whole of its contract with libjobboard
#   tools/  nothing (include/ only): the CLI uses the public API
#   bench/  tools/ (the error line, tools/cli_error.h)
# "config.h" (made by configure in the build directory) is allowed
# everywhere. An include is resolved as the compiler resolves it with the
# build's -I flags: beside the including file, then from the top of the
# tree, then from include/. Each one that breaks a rule is printed as
# FILE:LINE with the rule; the test fails if there is any. Reads the
# source tree only; runs from any directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-$(dirname "$0")/..}
top=$(cd "$srcdir" && pwd) || bail "no source tree at $srcdir"
cd "$top" || bail "cannot enter $top"

layers="base codec store core sync tools bench"

# below FOLDER: what FOLDER may include from other folders (paths or
# folder/ prefixes), beside its own folder and include/.
below() {
  case $1 in
    base) echo "";;
    codec) echo "base/";;
    store) echo "base/ codec/";;
    core) echo "base/ codec/ store/";;
    sync) echo "core/sync_hook.h";;
    tools) echo "";;
    bench) echo "tools/";;
  esac
}

rank() {
  i=0
  for l in $layers; do
    i=$((i + 1))
    [ "$l" = "$1" ] && { echo $i; return; }
  done
  echo 0
}

# Normalize a relative path (fold "x/../" and "./").
norm() {
  echo "$1" | awk -F/ '{
    n = 0
    for (i = 1; i <= NF; i++) {
      if ($i == "." || $i == "") continue
      if ($i == ".." && n > 0 && s[n] != "..") { n--; continue }
      s[++n] = $i
    }
    out = s[1]; for (i = 2; i <= n; i++) out = out "/" s[i]; print out
  }'
}

for folder in $layers; do
  [ -d "$folder" ] || continue
  begin "$folder/ includes only its own folder, include/ and what it may use below it"
  allowed=$(below "$folder")
  bad=$h_tmp/layers.$folder
  : >"$bad"
  for f in $(find "$folder" -name '*.[ch]' | sort); do
    dir=$(dirname "$f")
    grep -n '^[ 	]*#[ 	]*include[ 	]*"' "$f" | while IFS= read -r hit; do
      line=${hit%%:*}
      inc=$(echo "$hit" | sed 's/^[^"]*"\([^"]*\)".*/\1/')
      if [ "$inc" = config.h ]; then
        continue
      elif [ -f "$dir/$inc" ]; then
        target=$(norm "$dir/$inc")
      elif [ -f "$inc" ]; then
        target=$(norm "$inc")
      elif [ -f "include/$inc" ]; then
        target="include/$inc"
      else
        echo "$f:$line: #include \"$inc\" names no file of the tree (beside the file, from the top, or in include/)" >>"$bad"
        continue
      fi
      tfolder=${target%%/*}
      [ "$tfolder" = include ] && continue
      [ "$tfolder" = "$folder" ] && continue
      ok=0
      for a in $allowed; do
        case $a in
          */) case $target in "$a"*) ok=1;; esac;;
          *) [ "$target" = "$a" ] && ok=1;;
        esac
      done
      [ $ok = 1 ] && continue
      tr=$(rank "$tfolder")
      if [ "$tr" -eq 0 ]; then
        why="$tfolder/ is no folder of the library's layers"
      elif [ "$tr" -gt "$(rank "$folder")" ]; then
        why="$tfolder/ is above $folder/"
      else
        why="$folder/ may not reach into $tfolder/"
      fi
      echo "$f:$line: #include \"$inc\" ($target): $why; $folder/ may include its own folder, include/${allowed:+ and $allowed}" >>"$bad"
    done
  done
  if [ -s "$bad" ]; then
    fail "$(wc -l <"$bad") include(s) against the layering (README.md, \"Layout\"):"
    show_file "$bad"
  fi
  end
done
finish
