#!/bin/sh
# The checked-in sync/scripts.c is what sync/scripts/embed.sh makes of the
# .lua files, and each C string holds lib.lua then its operation's .lua file,
# byte for byte (compiled and printed back). Needs only sh, sed and a C compiler.
set -eu
srcdir=${srcdir:-.}
top=$(cd "$srcdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sh "$top/sync/scripts/embed.sh" > "$tmp/scripts.c"
if ! cmp -s "$tmp/scripts.c" "$top/sync/scripts.c"; then
    echo "FAIL: sync/scripts.c is stale; run: sh sync/scripts/embed.sh > sync/scripts.c" >&2
    diff -u "$top/sync/scripts.c" "$tmp/scripts.c" | head -40 >&2 || true
    exit 1
fi

cat > "$tmp/dump.c" <<'C'
#include <stdio.h>
#include <string.h>
#include "sync/scripts.h"
int main(int argc, char **argv)
{
    for (int i = 0; i < JB__SYNC_SCRIPT_COUNT; i++)
        if (argc > 1 && strcmp(argv[1], jb__sync_scripts[i].name) == 0) {
            fputs(jb__sync_scripts[i].source, stdout);
            return 0;
        }
    return 1;
}
C
${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$top" -o "$tmp/dump" \
    "$tmp/dump.c" "$top/sync/scripts.c"
n=0
for f in "$top"/sync/scripts/*.lua; do
    name=$(basename "$f" .lua)
    [ "$name" = lib ] && continue
    cat "$top/sync/scripts/lib.lua" "$f" > "$tmp/$name.want"
    "$tmp/dump" "$name" > "$tmp/$name.out" || {
        echo "FAIL: $name.lua is not in jb__sync_scripts" >&2; exit 1; }
    if ! cmp "$tmp/$name.out" "$tmp/$name.want"; then
        echo "FAIL: the embedded $name differs from lib.lua + $name.lua" >&2
        exit 1
    fi
    n=$((n + 1))
done
[ "$n" -eq 8 ] || { echo "FAIL: expected 8 scripts, found $n" >&2; exit 1; }
echo "ok: $n scripts embedded byte for byte"
