#!/bin/sh
# What the library gives SCRIPT LOAD is lib.lua then the operation's .lua
# file, byte for byte: the build's sync/scripts.c (made by
# sync/scripts/embed.sh) is compiled with sync/scripts.h, each script's text
# is joined by jb__sync_script_text (as sync/remote.c does) and printed back,
# and compared with the files. The generated file holds lib.lua once. Needs
# only sh, sed and a C compiler. Runs in the build directory.
set -u
. "$(dirname "$0")/lib/harness.sh"
srcdir=${srcdir:-.}
top=$(cd "$srcdir" && pwd)
gen=$(pwd)/sync/scripts.c
tmp=$(mktemp -d) || bail "mktemp failed"
at_exit 'rm -rf "$tmp"'

[ -f "$gen" ] || die "no $gen (make check makes it)"

begin "lib.lua stands once in sync/scripts.c"

# The prelude's first line, as embed.sh quotes it, stands in the file once.
first=$(head -n 1 "$top/sync/scripts/lib.lua" |
    LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g')
copies=$(grep -c -F -- "$first" "$gen" || true)
[ "$copies" -eq 1 ] ||
    fail "$gen holds lib.lua's first line $copies times, not once"
end

begin "each script is loaded as lib.lua + its file, byte for byte"

cat > "$tmp/dump.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sync/scripts.h"
int main(int argc, char **argv)
{
    for (int i = 0; i < JB__SYNC_SCRIPT_COUNT; i++)
        if (argc > 1 && strcmp(argv[1], jb__sync_scripts[i].name) == 0) {
            char *text = jb__sync_script_text(i);
            if (!text)
                return 2;
            fputs(text, stdout);
            free(text);
            return 0;
        }
    return 1;
}
C
${CC:-cc} -std=c11 -Wall -Wextra -Werror -I"$top" -o "$tmp/dump" \
    "$tmp/dump.c" "$gen" || die "the dump program does not build"
n=0
for f in "$top"/sync/scripts/*.lua; do
    name=$(basename "$f" .lua)
    [ "$name" = lib ] && continue
    cat "$top/sync/scripts/lib.lua" "$f" > "$tmp/$name.want"
    "$tmp/dump" "$name" > "$tmp/$name.out" ||
        die "$name.lua is not in jb__sync_scripts"
    cmp "$tmp/$name.out" "$tmp/$name.want" >&2 ||
        die "the text loaded for $name differs from lib.lua + $name.lua"
    n=$((n + 1))
done
[ "$n" -eq 9 ] || fail "expected 9 scripts, found $n"
end
finish
