# sync/: libjbsync, the Redis sync (connection, scripts, remote operations,
# the authority hook, the replicator), built only when configure finds
# hiredis. It is a library of its own, layered on libjobboard, so that
# libjobboard never links hiredis. As in the core, the code is built once as a convenience library: libjbsync.la
# exports the JB_EXTERN symbols of include/jobboard_sync.h, and tests link the
# convenience library to reach sync/conn.h.
if WITH_REDIS
noinst_LTLIBRARIES += libjbsyncconv.la
libjbsyncconv_la_SOURCES = \
	include/jobboard_sync.h \
	sync/conn.h \
	sync/url.c \
	sync/conn.c \
	sync/scripts.h \
	sync/remote.h \
	sync/remote.c \
	sync/attach.c \
	sync/config.c \
	sync/detach.c \
	sync/credentials.c \
	sync/replicator.c \
	sync/deprecated.c
nodist_libjbsyncconv_la_SOURCES = sync/scripts.c
libjbsyncconv_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
libjbsyncconv_la_CFLAGS = $(AM_CFLAGS) $(HIREDIS_CFLAGS) $(MSGPACK_CFLAGS) \
	-fvisibility=hidden
libjbsyncconv_la_LIBADD = $(HIREDIS_LIBS) $(MSGPACK_LIBS)

lib_LTLIBRARIES += libjbsync.la
include_HEADERS += include/jobboard_sync.h
# pkg-config --cflags --libs jobboard-sync: -ljbsync -ljobboard (make
# installcheck builds a program with it: tests/installcheck-pc.sh).
pkgconfig_DATA += jobboard-sync.pc
libjbsync_la_SOURCES =
libjbsync_la_LIBADD = libjbsyncconv.la libjobboard.la $(HIREDIS_LIBS) \
	$(MSGPACK_LIBS)
libjbsync_la_LDFLAGS = -version-info 1:0:1 -no-undefined
endif

# sync/scripts.c: the Lua scripts of sync/scripts/ as C strings, lib.lua
# (their shared prelude) once, made by sync/scripts/embed.sh (sh and sed) in
# the build directory whenever a .lua file or the generator changes. It is
# neither in git nor in the tarball, which carries its sources. The rule
# stands outside WITH_REDIS because tests/sync_scripts_embed.sh checks the
# output in every build.
JB_SYNC_LUA = sync/scripts/lib.lua sync/scripts/claim.lua \
	sync/scripts/abandon.lua sync/scripts/consume.lua sync/scripts/trash.lua \
	sync/scripts/extend.lua sync/scripts/post.lua sync/scripts/reserve.lua \
	sync/scripts/cancel.lua sync/scripts/claim_many.lua
EXTRA_DIST += sync/scripts/embed.sh $(JB_SYNC_LUA)
CLEANFILES += sync/scripts.c sync/scripts.c-t
sync/scripts.c: sync/scripts/embed.sh $(JB_SYNC_LUA)
	$(AM_V_GEN)$(MKDIR_P) sync && \
	$(SHELL) $(srcdir)/sync/scripts/embed.sh $(srcdir)/sync/scripts \
		>$@-t && mv -f $@-t $@
