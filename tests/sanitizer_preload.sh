# tests/sanitizer_preload.sh - sourced by the tests that load libjobboard
# into Debian's Python (python.sh, model.sh). With a sanitizer build
# (libjobboard.so NEEDs libasan/libubsan) Python, which is not built with
# them, must preload their runtimes to dlopen it: LD_PRELOAD then holds
# them (first), and ASAN_OPTIONS adds detect_leaks=0 (Python leaks by
# design).
#   jb_sanitizer_preload LIB CC
jb_sanitizer_preload() {
  _needed=$( (readelf -d "$1" 2>/dev/null || objdump -p "$1") | grep NEEDED)
  _preload=""
  for _rt in asan ubsan; do
    case $_needed in *lib$_rt.so*) ;; *) continue ;; esac
    _path=$(ldd "$1" 2>/dev/null | awk -v n="lib$_rt.so" 'index($1, n) == 1 { print $3 }')
    [ -f "$_path" ] || _path=$($2 -print-file-name="lib$_rt.so")
    [ -f "$_path" ] || { echo "FAIL: $1 needs lib$_rt but its runtime is not found ($2 -print-file-name=lib$_rt.so)" >&2; exit 1; }
    _preload="$_preload${_preload:+ }$_path"
  done
  [ -n "$_preload" ] || return 0
  echo "sanitizer build: LD_PRELOAD=$_preload, ASAN_OPTIONS+=detect_leaks=0"
  LD_PRELOAD="$_preload${LD_PRELOAD:+ $LD_PRELOAD}"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export LD_PRELOAD ASAN_OPTIONS UBSAN_OPTIONS
}
