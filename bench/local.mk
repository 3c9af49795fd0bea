# bench/: the benchmarks, programs of their own beside the jobboard
# command. They use the public API (include/jobboard.h, include/jobboard_sync.h)
# and, for their floors and peers, LMDB, SQLite and hiredis directly;
# nothing here is linked into jobboard or libjobboard. The one piece of
# tools/ they share is the error line (tools/cli_error.c): bench/ may use
# tools/, never the other way.
#
# jobboard-bench: job cycles per second in each durability mode beside a
# raw LMDB floor, threads, racing processes, batches, the worker path,
# wake-ups, SQLite doing the same job (--peers) and the operations through
# Redis (--redis); `jobboard-bench --help` says what each part measures.
# Built by `make`, not installed: it is a tool for measuring this source
# tree on a machine, its figures are compared in docs/BENCHMARKS.md, and
# it defines its own mdb_txn_commit in front of liblmdb's (bench_wake.c),
# which no installed program should carry. Run it from the build
# directory (./jobboard-bench).
noinst_PROGRAMS += jobboard-bench
jobboard_bench_SOURCES = \
	bench/main.c tools/cli_getopt.c tools/cli_getopt.h \
	bench/bench_raw.c bench/bench_raw.h \
	bench/bench_wake.c bench/bench_wake.h \
	bench/bench_util.c bench/bench_util.h \
	bench/bench_threads.c bench/bench_threads.h \
	bench/bench_batch.c bench/bench_batch.h \
	bench/bench_peers.h \
	bench/bench_worker.c bench/bench_worker.h \
	bench/bench_names.c bench/bench_names.h \
	bench/bench_pages.c bench/bench_pages.h \
	tools/cli_error.c tools/cli_error.h
# JB_CLI_SYNC_* (tools/local.mk): libjbsync and hiredis in a build with
# Redis sync, else nothing; libjbsync comes before the libjobboard it uses.
jobboard_bench_CFLAGS = $(AM_CFLAGS) $(JB_CLI_SYNC_CFLAGS) $(JANSSON_CFLAGS) \
	$(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
jobboard_bench_LDADD = $(JB_CLI_SYNC_LIBS) libjobboard.la $(JANSSON_LIBS) \
	$(LMDB_LIBS) $(MSGPACK_LIBS) $(DL_LIBS)
# --peers (bench/bench_peers.c): SQLite WAL doing the same job, only when
# configure found libsqlite3 (HAVE_SQLITE3); without it bench_peers.h
# gives stubs and --peers is refused with a note on how to get it.
if WITH_SQLITE
jobboard_bench_SOURCES += bench/bench_peers.c
jobboard_bench_CFLAGS += $(SQLITE3_CFLAGS)
jobboard_bench_LDADD += $(SQLITE3_LIBS)
endif
# --redis URL (bench/bench_redis.c, bench/bench_sync.c) needs libjbsync,
# so it is built only with it (JB_WITH_REDIS). The taskflow-like poster
# (bench_sync.c) talks to Redis with hiredis directly, as a peer that is
# not libjbsync would.
if WITH_REDIS
jobboard_bench_SOURCES += bench/bench_redis.c bench/bench_redis.h \
	bench/bench_sync.c bench/bench_sync.h \
	bench/bench_fleet.c bench/bench_fleet.h
endif

# Drivers around jobboard-bench and the other boards it is weighed
# against: bench-redis.sh runs `jobboard-bench --redis` beside taskflow's
# own client (bench-taskflow.py) against a redis-server of its own;
# bench-claim-script.py measures the server's time per claim script
# (ours, taskflow's, an empty one); bench-compare.sh what a comparison in
# full costs; bench-python.py the Python binding beside the C API;
# bench-web.py `jobboard web`'s timeline, sparklines and /history.
EXTRA_DIST += bench/bench-redis.sh bench/bench-taskflow.py \
	bench/bench-compare.sh bench/bench-claim-script.py \
	bench/bench-python.py bench/bench-web.py

# bench/bench-life: what a job's life costs: claim-next beside a million
# delayed jobs, and the cycle of a job with a unique key and a time limit;
# with --retention, what retention's pruning adds to the cycle
# (docs/BENCHMARKS.md). Public API only; not installed.
noinst_PROGRAMS += bench/bench-life
bench_bench_life_SOURCES = bench/bench_life.c
bench_bench_life_LDADD = libjobboard.la
