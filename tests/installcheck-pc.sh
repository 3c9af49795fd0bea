#!/bin/sh
# make installcheck: build and run tiny C programs against the INSTALLED
# headers and libraries, found only through the installed pkg-config files
# (jobboard.pc, and jobboard-sync.pc when the tree was built with Redis),
# from a directory outside the tree.
#
# Usage: installcheck-pc.sh PKG_CONFIG CC PKGCONFIGDIR LIBDIR WITH_REDIS
# (DESTDIR from the environment: with it, the .pc files are read from
# under DESTDIR and PKG_CONFIG_SYSROOT_DIR makes their -I and -L point
# there too.) The programs run with LD_LIBRARY_PATH=DESTDIR$LIBDIR.
set -u
. "$(dirname "$0")/lib/harness.sh"
PKG_CONFIG=$1 CC=$2 pcdir=$3 libdir=$4 with_redis=$5
DESTDIR=${DESTDIR-}

begin "the .pc files are installed"
test -f "$DESTDIR$pcdir/jobboard.pc" || die "$DESTDIR$pcdir/jobboard.pc is not installed"
if test "$with_redis" = yes; then
  test -f "$DESTDIR$pcdir/jobboard-sync.pc" ||
    die "$DESTDIR$pcdir/jobboard-sync.pc is not installed (built with Redis)"
else
  test ! -f "$DESTDIR$pcdir/jobboard-sync.pc" ||
    die "$DESTDIR$pcdir/jobboard-sync.pc is installed, but libjbsync was not built"
fi

end

d=$(mktemp -d "${TMPDIR:-/tmp}/jobboard-installcheck-pc.XXXXXX") || bail "mktemp failed"
at_exit 'rm -rf "$d"'
cd "$d" || bail "no directory $d"

# Only the installed files: our pkgconfig dir first, the system's after
# it (lmdb, msgpack, uuid, hiredis are the system's).
PKG_CONFIG_PATH="$DESTDIR$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
if test -n "$DESTDIR"; then
  PKG_CONFIG_SYSROOT_DIR=$DESTDIR
  export PKG_CONFIG_SYSROOT_DIR
fi
# The loader finds the installed libraries there (a prefix of make
# distcheck's, or DESTDIR, is not in its search path), before any other
# copy of them on the system.
LD_LIBRARY_PATH="$DESTDIR$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

build_and_run() { # NAME PKG
  begin "$1.c builds and runs through pkg-config $2"
  flags=$($PKG_CONFIG --cflags --libs "$2") ||
    die "$PKG_CONFIG --cflags --libs $2 failed"
  note "$CC $1.c $flags"
  # shellcheck disable=SC2086
  $CC -std=c11 -Wall -Wextra -Werror -o "$1" "$1.c" $flags ||
    die "$1.c does not build with pkg-config $2"
  out=$(./"$1" 2>&1) || die "./$1 failed: $out"
  note "$out"
  end
}

cat >board.c <<'EOF'
#include <jobboard.h>
#include <stdio.h>
int main(void) {
  int major;
  const char *v = jb_version(&major, NULL, NULL);
  if (major != JOBBOARD_VERSION_MAJOR) return 1;
  printf("jobboard %s through pkg-config jobboard\n", v);
  return 0;
}
EOF
build_and_run board jobboard

if test "$with_redis" = yes; then
  cat >sync.c <<'EOF'
#include <jobboard_sync.h>
#include <stdio.h>
int main(void) {
  jb_sync_url *url = NULL;
  if (jb_sync_url_parse(&url, "redis://localhost:6380/2") != JB_OK) {
    fprintf(stderr, "%s\n", jb_errmsg());
    return 1;
  }
  int ok = url->port == 6380 && url->db == 2;
  jb_sync_url_free(url);
  if (!ok) return 1;
  printf("libjbsync with jobboard %s through pkg-config jobboard-sync\n",
         jb_version(NULL, NULL, NULL));
  return 0;
}
EOF
  build_and_run sync jobboard-sync
fi
finish
