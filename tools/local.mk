# tools/: the jobboard CLI, built on core/jobboard.h only (bench also drives
# LMDB directly for its raw floor).
bin_PROGRAMS += jobboard
jobboard_SOURCES = \
	tools/main.c
jobboard_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
jobboard_LDADD = libjobboard.la $(JANSSON_LIBS) $(LMDB_LIBS) $(MSGPACK_LIBS)
jobboard_SOURCES += tools/bench_raw.c tools/bench_raw.h
