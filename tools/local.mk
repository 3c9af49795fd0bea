# tools/: the jobboard CLI, built on core/jobboard.h (and, with Redis,
# sync/jobboard_sync.h) only (bench also drives LMDB directly for its raw
# floor). One file per subcommand or small group
# (curl's src/ on libcurl); json.c maps details between JSON and msgpack.
bin_PROGRAMS += jobboard
jobboard_SOURCES = \
	tools/cli.h \
	tools/cli_common.h \
	tools/cli_common.c \
	tools/json.h \
	tools/json.c \
	tools/main.c \
	tools/cmd_post.c \
	tools/post_input.h \
	tools/post_input.c \
	tools/cmd_list.c \
	tools/cmd_claim.c \
	tools/cmd_query.c tools/cmd_wait.c \
	tools/cmd_watch.c \
	tools/cmd_check.c \
	tools/cmd_salvage.c \
	tools/cmd_entities.c \
	tools/cmd_work.c \
	tools/cmd_life.c \
	tools/cmd_schedule.c \
	tools/cmd_init.c \
	tools/cmd_complete.c \
	tools/cmd_demo.c \
	tools/cmd_bench.c \
	tools/cli_sync.c \
	tools/cmd_sync.c \
	tools/cmd_stats.c
# The Redis sync (sync, status, --redis) only when configure found hiredis:
# then JB_WITH_REDIS is defined in config.h and the CLI links libjbsync.
# bench's taskflow-like poster (tools/bench_sync.c) talks to Redis with
# hiredis directly, as a peer that is not libjbsync would.
if WITH_REDIS
JB_CLI_SYNC_LIBS = libjbsync.la $(HIREDIS_LIBS)
JB_CLI_SYNC_CFLAGS = $(HIREDIS_CFLAGS)
else
JB_CLI_SYNC_LIBS =
JB_CLI_SYNC_CFLAGS =
endif
jobboard_CFLAGS = $(AM_CFLAGS) $(JB_CLI_SYNC_CFLAGS) $(JANSSON_CFLAGS) $(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
jobboard_LDADD = $(JB_CLI_SYNC_LIBS) libjobboard.la $(JANSSON_LIBS) $(LMDB_LIBS) $(MSGPACK_LIBS) $(DL_LIBS)
# `jobboard metrics --listen` (tools/cmd_stats.c) only when configure
# found libmicrohttpd: then JB_WITH_MICROHTTPD is defined in config.h.
if WITH_MICROHTTPD
jobboard_CFLAGS += $(MICROHTTPD_CFLAGS)
jobboard_LDADD += $(MICROHTTPD_LIBS)
endif
jobboard_SOURCES += tools/bench_raw.c tools/bench_raw.h \
	tools/bench_wake.c tools/bench_wake.h \
	tools/bench_util.c tools/bench_util.h \
	tools/bench_threads.c tools/bench_threads.h \
	tools/bench_batch.c tools/bench_batch.h \
	tools/bench_peers.h \
	tools/bench_worker.c tools/bench_worker.h
# `jobboard bench --peers` (tools/bench_peers.c): SQLite WAL doing the same
# job, only when configure found libsqlite3 (HAVE_SQLITE3). Linked into the
# jobboard program only: libjobboard never sees SQLite.
if WITH_SQLITE
jobboard_SOURCES += tools/bench_peers.c
jobboard_CFLAGS += $(SQLITE3_CFLAGS)
jobboard_LDADD += $(SQLITE3_LIBS)
endif

dist_man_MANS = docs/jobboard.1

# `jobboard bench --redis URL` (tools/bench_redis.c) needs libjbsync, so
# it is built only with it (see above). tools/bench-redis.sh runs it beside
# taskflow's own client (tools/bench-taskflow.py) against a redis-server of
# its own; tools/bench-claim-script.py measures the server's time per claim
# script (ours, taskflow's, an empty one).
if WITH_REDIS
jobboard_SOURCES += tools/bench_redis.c tools/bench_redis.h \
	tools/bench_sync.c tools/bench_sync.h
endif
EXTRA_DIST += tools/bench-redis.sh tools/bench-taskflow.py tools/bench-compare.sh \
	tools/bench-claim-script.py tools/bench-python.py

# tools/bench-life: what a job's life costs (issue 15): claim-next beside
# a million delayed jobs, and the cycle of a job with a unique key and a
# time limit (docs/BENCHMARKS.md). Public API only; not installed.
noinst_PROGRAMS += tools/bench-life
tools_bench_life_SOURCES = tools/bench_life.c
tools_bench_life_LDADD = libjobboard.la
