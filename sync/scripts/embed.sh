#!/bin/sh
# embed.sh - write sync/scripts.c, the Lua scripts of sync/scripts/ as C
# strings, to standard output. POSIX sh and sed only, so that every build
# host runs it.
#
#   sh sync/scripts/embed.sh [DIR] > sync/scripts.c
#
# DIR holds the .lua files (default: this script's folder). The build runs
# it (sync/local.mk) into the build directory whenever a .lua file or this
# script changes; its output is not kept in git nor in the tarball.
#
# lib.lua, the shared prelude, is written once (jb__sync_script_lib) and each
# operation's file once (the body of its jb__sync_scripts entry), both
# verbatim, header comments included. The library joins the two when it
# loads a script (jb__sync_script_text, sync/scripts.h), so SCRIPT LOAD gets
# and reports the SHA1 of `cat lib.lua op.lua` while the binary holds the
# prelude once. tests/sync_scripts_embed.sh compiles the build's output and
# checks every joined text against the files byte for byte.
set -eu
dir=${1:-$(dirname "$0")}
names="claim abandon consume trash extend post reserve cancel claim_many"

for f in "$dir/lib.lua" $(for n in $names; do echo "$dir/$n.lua"; done); do
    if LC_ALL=C grep -q '[^ -~	]' "$f"; then
        echo "embed.sh: $f has bytes other than printable ASCII and tab" >&2
        exit 1
    fi
done

# One C string literal: escape \ " and ? (no trigraphs), quote each line and
# end it with \n.
literal() {
    LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/?/\\?/g' \
        -e 's/^/    "/' -e 's/$/\\n"/' "$1"
    printf '    ;\n'
}

cat <<'HEAD'
/*
 * scripts.c - the .lua files of sync/scripts/ as C strings (sync/scripts.h).
 * GENERATED at build time by sync/scripts/embed.sh; edit the .lua files.
 */
#include "sync/scripts.h"

const char jb__sync_script_lib[] =
HEAD
literal "$dir/lib.lua"
for n in $names; do
    printf '\nstatic const char body_%s[] =\n' "$n"
    literal "$dir/$n.lua"
done
printf '\nconst struct jb__sync_script jb__sync_scripts[JB__SYNC_SCRIPT_COUNT] = {\n'
for n in $names; do
    printf '    { "%s", body_%s },\n' "$n" "$n"
done
printf '};\n'
