#!/usr/bin/env bash
# tests/fuzz/run.sh - build the fuzz targets with clang's libFuzzer
# (+ ASan + UBSan) and run each for a while on its seed corpus.
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 20 (what CI runs: four targets, about two
# minutes with the build). The documented long run is an hour each:
#
#   tests/fuzz/run.sh 3600
#
# TARGETs: posting json batch redis (default: all; redis needs hiredis).
# The build is out of tree, in a temporary directory, straight from the
# sources (pkg-config for lmdb, msgpack, jansson, hiredis, uuid); the corpus
# is copied there, so a run never modifies the repository. Exit status: 0
# when no target found anything, 1 when one crashed, leaked, hit undefined
# behaviour, broke a property, ran out of memory or time on one input; the
# input is then kept and its path printed (with its bytes in hex): copy it
# into tests/fuzz/regress/TARGET/ once the bug is fixed, and `make check`
# replays it in every build from then on. 2: the tools are missing.
#
# Environment: CC (default clang), FUZZ_WORKDIR (keep everything there,
# grown corpora included: merge the interesting ones into corpus/ with
# `-merge=1`), FUZZ_ARGS (more libFuzzer flags).
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
shift $(( $# > 0 ? 1 : 0 ))
targets=${*:-posting json batch redis}
cc=${CC:-clang}
case $secs in ''|*[!0-9]*) echo "usage: $0 [SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2;; esac

if ! command -v "$cc" >/dev/null; then
  echo "run.sh: $cc not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
pkgs="lmdb msgpack jansson uuid"
case " $targets " in *" redis "*) pkgs="$pkgs hiredis";; esac
if ! flags=$(pkg-config --cflags $pkgs) || ! libs=$(pkg-config --libs $pkgs); then
  echo "run.sh: pkg-config does not find: $pkgs" >&2
  exit 2
fi

if [ -n "${FUZZ_WORKDIR:-}" ]; then
  work=$FUZZ_WORKDIR
  mkdir -p "$work"
else
  work=$(mktemp -d /tmp/jobboard-fuzz.XXXXXX)
fi
found=0
cleanup() { if [ -z "${FUZZ_WORKDIR:-}" ] && [ "$found" = 0 ]; then rm -rf "$work"; fi; }
trap cleanup EXIT

san="-fsanitize=address,undefined -fno-sanitize-recover=all"
cflags="-g -O1 -fno-omit-frame-pointer $san -std=c11 -D_GNU_SOURCE -pthread \
  -I$src/include -I$src -I$src/sync -I$src/tools $flags"
start=$(date +%s)
echo "=== building in $work"
mkdir -p "$work/obj"
build() { # archive-name sources...
  local lib=$1; shift
  local objs=()
  for f in "$@"; do
    local o="$work/obj/$(echo "${f#$src/}" | tr / _).o"
    "$cc" $cflags -fsanitize=fuzzer-no-link -c "$f" -o "$o" || return 1
    objs+=("$o")
  done
  rm -f "$work/$lib"
  ar rcs "$work/$lib" "${objs[@]}"
}
build libcore.a "$src"/base/*.c "$src"/codec/*.c "$src"/store/*.c "$src"/core/*.c || exit 2
# The CLI's input side; cli_sync.c without JB_WITH_REDIS is its stubs.
build libcli.a "$src"/tools/json.c "$src"/tools/post_input.c \
  "$src"/tools/cli_common.c "$src"/tools/cli_error.c \
  "$src"/tools/cli_duration.c "$src"/tools/cli_getopt.c \
  "$src"/tools/cli_board.c "$src"/tools/cli_sync.c || exit 2
# sync/scripts.c is made by the build (embed.sh): made here too.
case " $targets " in *" redis "*)
  sh "$src"/sync/scripts/embed.sh "$src"/sync/scripts >"$work/scripts.c" || exit 2
  build libsync.a $(ls "$src"/sync/*.c | grep -v '/scripts\.c$') "$work/scripts.c" || exit 2;;
esac
for t in $targets; do
  libs_t="$work/libcore.a"
  case $t in
    json|batch) libs_t="$work/libcli.a $libs_t";;
    redis) libs_t="$work/libsync.a $libs_t";;
    posting) ;;
    *) echo "run.sh: unknown target $t" >&2; exit 2;;
  esac
  "$cc" $cflags -fsanitize=fuzzer "$src/tests/fuzz/fuzz_$t.c" $libs_t $libs \
    -o "$work/fuzz_$t" || exit 2
done
echo "=== built in $(( $(date +%s) - start ))s"

for t in $targets; do
  corpus="$work/corpus/$t"
  mkdir -p "$corpus" "$work/artifacts/$t"
  cp "$src/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null
  dirs=("$corpus")
  [ -d "$src/tests/fuzz/regress/$t" ] && dirs+=("$src/tests/fuzz/regress/$t")
  opts=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$work/artifacts/$t/")
  [ -f "$src/tests/fuzz/$t.dict" ] && opts+=(-dict="$src/tests/fuzz/$t.dict")
  # The CLI prints each refused line's message on stderr: thousands a
  # second. libFuzzer keeps its own report (and the sanitizers') visible.
  [ "$t" = batch ] && opts+=(-close_fd_mask=2)
  echo "=== fuzz_$t for ${secs}s ($(ls "$corpus" | wc -l) seeds)"
  # shellcheck disable=SC2086
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$work/fuzz_$t" "${opts[@]}" ${FUZZ_ARGS:-} "${dirs[@]}" \
    > "$work/fuzz_$t.log" 2>&1
  rc=$?
  grep -E '^#[0-9]+ +(DONE|INITED)|stat::|cov:' "$work/fuzz_$t.log" | grep -E 'INITED|DONE|stat::' | tail -8
  if [ $rc -ne 0 ]; then
    found=1
    echo "!!! fuzz_$t failed (exit $rc); its log: $work/fuzz_$t.log"
    grep -E 'ERROR|property broken|runtime error|SUMMARY' "$work/fuzz_$t.log" | head -5
    for a in "$work/artifacts/$t/"*; do
      [ -f "$a" ] || continue
      echo "!!! input saved: $a ($(wc -c < "$a") bytes):"
      od -An -tx1 "$a" | head -8
    done
  fi
done
echo "=== done in $(( $(date +%s) - start ))s"
[ "$found" = 0 ] || echo "!!! the inputs above stay in $work"
exit $found
