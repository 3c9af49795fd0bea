# tests/: cmocka tests (unit and integration) and shell tests of the CLI.
# (JB_TEST_* names: automake reads any X_LDADD as the LDADD of a program "X".)
#
# Each cmocka program is one area (api, bad input, ordering, storage,
# processes racing, kill -9 torture, threads, entities); tests/helpers.c gives them a
# fresh board directory per test and forked children under a deadline.
# The folders' one-way dependencies: every #include of base/, codec/,
# store/, core/, sync/, tools/ and bench/ names its own folder, one below
# it that it may use, or include/ (the rules are in the script).
TESTS += tests/layers.sh
EXTRA_DIST += tests/layers.sh
# No file points outside the repository, and no source, test or build file
# names the issue that asked for it (the rules are in the script).
TESTS += tests/comments.sh
EXTRA_DIST += tests/comments.sh
# Each name kept from 0.1 is called by its test, and by no other code.
TESTS += tests/deprecated.sh
EXTRA_DIST += tests/deprecated.sh
# The Quick start's test command installs every package a test needs.
TESTS += tests/quickstart.sh
EXTRA_DIST += tests/quickstart.sh

#
# Every tests/*.sh sources tests/lib/harness.sh and prints TAP, read by
# automake's TAP driver; the C programs keep the exit-status driver.
TEST_EXTENSIONS = .sh
SH_LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
EXTRA_DIST += tests/lib/harness.sh tests/lib/board.sh tests/lib/web.sh
EXTRA_DIST += tests/lib/webcheck.py tests/lib/work_lib.sh
if ENABLE_TESTS
JB_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(LMDB_CFLAGS) $(MSGPACK_CFLAGS)
JB_TEST_LIBS = libjbcore.la $(CMOCKA_LIBS) $(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS)
JB_TEST_HELPERS = tests/helpers.h tests/helpers.c

check_PROGRAMS += tests/test_api tests/test_badinput tests/test_order \
	tests/test_store tests/test_race tests/test_torture tests/test_threads \
	tests/test_leases tests/test_entities tests/test_wait
TESTS += tests/test_api tests/test_badinput tests/test_order \
	tests/test_store tests/test_race tests/test_torture tests/test_threads \
	tests/test_leases tests/test_entities tests/test_wait

tests_test_api_SOURCES = tests/test_api.c $(JB_TEST_HELPERS)
tests_test_api_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_api_LDADD = $(JB_TEST_LIBS)

tests_test_badinput_SOURCES = tests/test_badinput.c $(JB_TEST_HELPERS)
tests_test_badinput_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_badinput_LDADD = $(JB_TEST_LIBS)

tests_test_order_SOURCES = tests/test_order.c $(JB_TEST_HELPERS)
tests_test_order_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_order_LDADD = $(JB_TEST_LIBS)

tests_test_store_SOURCES = tests/test_store.c $(JB_TEST_HELPERS)
tests_test_store_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_store_LDADD = $(JB_TEST_LIBS)

tests_test_race_SOURCES = tests/test_race.c $(JB_TEST_HELPERS)
tests_test_race_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_race_LDADD = $(JB_TEST_LIBS)

tests_test_torture_SOURCES = tests/test_torture.c $(JB_TEST_HELPERS)
tests_test_torture_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_torture_LDADD = $(JB_TEST_LIBS)

tests_test_threads_SOURCES = tests/test_threads.c $(JB_TEST_HELPERS)
tests_test_threads_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_threads_LDADD = $(JB_TEST_LIBS)
tests_test_leases_SOURCES = tests/test_leases.c $(JB_TEST_HELPERS)
tests_test_leases_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_leases_LDADD = $(JB_TEST_LIBS)

tests_test_entities_SOURCES = tests/test_entities.c $(JB_TEST_HELPERS)
tests_test_entities_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_entities_LDADD = $(JB_TEST_LIBS)

tests_test_readonly_SOURCES = tests/test_readonly.c $(JB_TEST_HELPERS)
tests_test_readonly_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_readonly_LDADD = $(JB_TEST_LIBS)
check_PROGRAMS += tests/test_readonly
TESTS += tests/test_readonly

# Durability interval: flushes within the interval, restore after a reboot.
tests_test_steady_SOURCES = tests/test_steady.c $(JB_IOLAYER) $(JB_TEST_HELPERS)
tests_test_steady_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_steady_LDADD = $(JB_TEST_LIBS) -ldl -lpthread
check_PROGRAMS += tests/test_steady
TESTS += tests/test_steady

# The options pointers of the one-call-per-action API.
tests_test_options_SOURCES = tests/test_options.c $(JB_TEST_HELPERS)
tests_test_options_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_options_LDADD = $(JB_TEST_LIBS) -lpthread
check_PROGRAMS += tests/test_options
TESTS += tests/test_options

# The names of 0.1 kept for one release, each called once.
tests_test_deprecated_SOURCES = tests/test_deprecated.c $(JB_TEST_HELPERS)
tests_test_deprecated_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_deprecated_LDADD = $(JB_TEST_LIBS)
check_PROGRAMS += tests/test_deprecated
TESTS += tests/test_deprecated

tests_test_wait_SOURCES = tests/test_wait.c $(JB_TEST_HELPERS)
tests_test_wait_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_wait_LDADD = $(JB_TEST_LIBS) -lpthread

# Completion results and the history.
check_PROGRAMS += tests/test_history
TESTS += tests/test_history
tests_test_history_SOURCES = tests/test_history.c $(JB_TEST_HELPERS)
tests_test_history_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_history_LDADD = $(JB_TEST_LIBS)

# Check's page accounting and salvage.
check_PROGRAMS += tests/test_pages
TESTS += tests/test_pages
tests_test_pages_SOURCES = tests/test_pages.c $(JB_TEST_HELPERS)
tests_test_pages_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_pages_LDADD = $(JB_TEST_LIBS)

# The change log: reading, waiting, trimming, subscriptions (test_watch.c).
check_PROGRAMS += tests/test_watch
TESTS += tests/test_watch
tests_test_watch_SOURCES = tests/test_watch.c $(JB_TEST_HELPERS)
tests_test_watch_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_watch_LDADD = $(JB_TEST_LIBS)

# The replicator's mirror and the board's settings (core/sync_hook.h).
check_PROGRAMS += tests/test_mirror
TESTS += tests/test_mirror
tests_test_mirror_SOURCES = tests/test_mirror.c $(JB_TEST_HELPERS)
tests_test_mirror_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_mirror_LDADD = $(JB_TEST_LIBS) -lpthread

# The worker's path: fused and batch operations.
check_PROGRAMS += tests/test_batch
TESTS += tests/test_batch
tests_test_batch_SOURCES = tests/test_batch.c $(JB_TEST_HELPERS)
tests_test_batch_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_batch_LDADD = $(JB_TEST_LIBS)
endif

# Periodic jobs: cron specs, catch-up, and three
# processes ticking one schedule for a simulated hour.
if ENABLE_TESTS
check_PROGRAMS += tests/test_schedule
TESTS += tests/test_schedule
tests_test_schedule_SOURCES = tests/test_schedule.c $(JB_TEST_HELPERS)
tests_test_schedule_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_schedule_LDADD = $(JB_TEST_LIBS)

# Schedules as cron users write them: names, time zones across DST (needs
# tzdata), the overlap policy, format 1 records.
check_PROGRAMS += tests/test_schedule_tz
TESTS += tests/test_schedule_tz
tests_test_schedule_tz_SOURCES = tests/test_schedule_tz.c $(JB_TEST_HELPERS)
tests_test_schedule_tz_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_schedule_tz_LDADD = $(JB_TEST_LIBS)
endif

# Our Redis scripts: the texts the library loads from the build's
# sync/scripts.c are sync/scripts/*.lua byte for byte (needs only a C
# compiler, so the file is made for the check in builds without Redis too);
# the scripts against a real redis-server and Debian's python3-taskflow
# (JOBBOARD_SKIP_REDIS=1 skips it, nothing else does: without the packages it
# fails and names them).
TESTS += tests/sync_scripts_embed.sh tests/test_sync_scripts.sh
check_DATA = sync/scripts.c
EXTRA_DIST += tests/test_sync_scripts.sh tests/sync_scripts_test.py
EXTRA_DIST += tests/sync_scripts_embed.sh sync/scripts.h

# The jobboard CLI, end to end (tests/cli.sh runs ./jobboard from the build dir).
TESTS += tests/cli.sh
# ... and its helper, a process that holds a registered entity. Linked
# statically (the convenience library) so that its pid is the program's,
# not a libtool wrapper's.
check_PROGRAMS += tests/entity_holder
tests_entity_holder_SOURCES = tests/entity_holder.c
tests_entity_holder_LDADD = libjbcore.la $(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS)
EXTRA_DIST += tests/cli.sh
# Boards made on purpose: a directory of other files refused by every
# command that makes a board, a new board said on stderr, --quiet.
TESTS += tests/cli_create.sh
EXTRA_DIST += tests/cli_create.sh
# Every refusal visible in --json: {"error": {...}} as stdout's last line.
TESTS += tests/cli_json_refusals.sh
EXTRA_DIST += tests/cli_json_refusals.sh

# Schedules at the CLI: cron names, --tz across DST (needs tzdata),
# --overlap, what `schedule run` prints.
TESTS += tests/cli_schedule_tz.sh
EXTRA_DIST += tests/cli_schedule_tz.sh

# The worker runner (`jobboard work`), end to end: real workers and signals.
TESTS += tests/work.sh
EXTRA_DIST += tests/work.sh
TESTS += tests/work_friendly.sh
EXTRA_DIST += tests/work_friendly.sh
TESTS += tests/snooze.sh
# Durations and times in one syntax; long options only as spelled.
TESTS += tests/cli_durations.sh
EXTRA_DIST += tests/cli_durations.sh
EXTRA_DIST += tests/snooze.sh
TESTS += tests/run_now.sh
EXTRA_DIST += tests/run_now.sh
TESTS += tests/cli_dead_bulk.sh
EXTRA_DIST += tests/cli_dead_bulk.sh

# Job names as queues at the prompt: claim-next and work --name, pause,
# resume, queues, and the filters by name of list, count, history, watch.
TESTS += tests/queues.sh
EXTRA_DIST += tests/queues.sh

# `jobboard top`: one frame as text and JSON, --name, its usage errors,
# and live on a pty (redrawn on a post, the window's height, q, Ctrl-C).
TESTS += tests/top.sh
EXTRA_DIST += tests/top.sh

# Running it as a service: init, --create and waiting for a board,
# read-only boards (a read-only mount, another user's: as root), --details
# @FILE, a 100 MB --batch line, a full disk (a small tmpfs: as root).
TESTS += tests/service.sh
EXTRA_DIST += tests/service.sh

# jobboard-bench's parts (--threads, --procs LIST, posting in batches,
# --peers with SQLite or its refusal without, the wake-up part) still run
# and print their lines: tiny sizes, no figure checked.
TESTS += tests/bench_parts.sh
EXTRA_DIST += tests/bench_parts.sh

# sync/'s connection layer against redis-servers the test starts itself
# (tests/redis_helper.c); built only when configure found hiredis. The
# server binary is needed when the test runs: without it the test fails
# and says how to install it.
if ENABLE_TESTS
if WITH_REDIS
check_PROGRAMS += tests/test_sync_conn
TESTS += tests/test_sync_conn
tests_test_sync_conn_SOURCES = tests/test_sync_conn.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_sync_conn_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_conn_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_conn_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
# The names of 0.1 in jobboard_sync.h kept for one release, each called.
check_PROGRAMS += tests/test_deprecated_sync
TESTS += tests/test_deprecated_sync
tests_test_deprecated_sync_SOURCES = tests/test_deprecated_sync.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_deprecated_sync_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_deprecated_sync_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) \
	$(HIREDIS_LIBS)
# The job operations on Redis (sync/remote.c), with python3-taskflow as the
# peer (run as /usr/bin/python3 from the test).
check_PROGRAMS += tests/test_sync_remote
TESTS += tests/test_sync_remote
tests_test_sync_remote_SOURCES = tests/test_sync_remote.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_sync_remote_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_remote_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_remote_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
# The authority rule through the board API (sync/attach.c, core/board.c).
check_PROGRAMS += tests/test_sync_authority
TESTS += tests/test_sync_authority
tests_test_sync_authority_SOURCES = tests/test_sync_authority.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_sync_authority_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_authority_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_authority_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
# claim-next of many jobs over Redis-decided jobs: one round trip for the
# run, the same claims as one by one, a server lost after the claims.
check_PROGRAMS += tests/test_sync_claim_many
TESTS += tests/test_sync_claim_many
tests_test_sync_claim_many_SOURCES = tests/test_sync_claim_many.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_sync_claim_many_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_claim_many_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_claim_many_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
# The replicator (sync/replicator.c) between a board and a redis-server of
# its own: publication order, pulls with and without notices, outage,
# election, keep-alive of bound claims, malformed postings.
check_PROGRAMS += tests/test_sync_replicator
TESTS += tests/test_sync_replicator
tests_test_sync_replicator_SOURCES = tests/test_sync_replicator.c \
	tests/redis_helper.h tests/redis_helper.c $(JB_TEST_HELPERS)
tests_test_sync_replicator_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_replicator_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_replicator_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
# Which Redis and namespace a board is synced with (sync/config.c): no
# server needed.
check_PROGRAMS += tests/test_sync_config
TESTS += tests/test_sync_config
tests_test_sync_config_SOURCES = tests/test_sync_config.c $(JB_TEST_HELPERS)
tests_test_sync_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_test_sync_config_CFLAGS = $(JB_TEST_CFLAGS) $(HIREDIS_CFLAGS)
tests_test_sync_config_LDADD = libjbsyncconv.la $(JB_TEST_LIBS) $(HIREDIS_LIBS)
endif
endif

# `jobboard-bench --redis`, bench/bench-taskflow.py, bench/bench-redis.sh and
# bench/bench-claim-script.py still run (tiny counts against a redis-server of the test's own; no
# figure is checked). Only with Redis sync built.
if WITH_REDIS
TESTS += tests/bench_redis.sh
endif
EXTRA_DIST += tests/bench_redis.sh

# The CLI's Redis side (--redis, sync, status) end to end, against a
# redis-server the script starts on a unix socket (skipped, exit 77, when
# redis-server is missing or JOBBOARD_SKIP_REDIS=1).
if WITH_REDIS
TESTS += tests/sync_cli.sh
endif
EXTRA_DIST += tests/sync_cli.sh

# The replicator end to end: `jobboard sync` daemons,
# `jobboard work --redis` workers and taskflow processes on a redis-server
# each test starts (tests/sync_lib.sh: skipped, exit 77, without
# redis-server, redis-cli or Debian's python3-taskflow; sync_sentinel.sh
# also without redis-sentinel).
if WITH_REDIS
TESTS += tests/sync_fleet.sh tests/sync_outage.sh tests/sync_holder.sh \
	tests/sync_converge.sh tests/sync_sentinel.sh tests/sync_life.sh \
	tests/sync_unique.sh tests/sync_outcome.sh tests/sync_bound.sh \
	tests/sync_schedule.sh tests/sync_model.sh
endif
EXTRA_DIST += tests/sync_model.sh tests/model/xhost.py tests/sync_lib.sh tests/sync_peer.py tests/sync_fleet.sh \
	tests/sync_life.sh tests/sync_unique.sh tests/sync_outcome.sh \
	tests/sync_bound.sh tests/sync_schedule.sh \
	tests/sync_outage.sh tests/sync_holder.sh tests/sync_converge.sh \
	tests/sync_sentinel.sh
if WITH_REDIS
TESTS += tests/sync_dead_requeue.sh
endif
EXTRA_DIST += tests/sync_dead_requeue.sh

# Power loss and I/O faults: tests/iolayer.c
# defines the file-system calls in the test program itself, so liblmdb's
# writes and flushes go through it (see iolayer.h). The long power-loss
# run: JB_POWERLOSS_LONG=1 tests/test_powerloss.
if ENABLE_TESTS
JB_IOLAYER = tests/iolayer.h tests/iolayer.c
check_PROGRAMS += tests/test_powerloss tests/test_iofault
TESTS += tests/test_powerloss tests/test_iofault
tests_test_powerloss_SOURCES = tests/test_powerloss.c $(JB_IOLAYER) $(JB_TEST_HELPERS)
tests_test_powerloss_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_powerloss_LDADD = $(JB_TEST_LIBS) -ldl -lpthread
tests_test_iofault_SOURCES = tests/test_iofault.c $(JB_IOLAYER) $(JB_TEST_HELPERS)
tests_test_iofault_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_iofault_LDADD = $(JB_TEST_LIBS) -ldl -lpthread
endif

# SIGKILL at each instruction of a write, by ptrace: the short
# form here; `tests/crash_step --full` is the whole sweep.
if ENABLE_TESTS
check_PROGRAMS += tests/crash_step
TESTS += tests/crash_step
tests_crash_step_SOURCES = tests/crash_step.c
tests_crash_step_CFLAGS = $(JB_TEST_CFLAGS)
tests_crash_step_LDADD = libjbcore.la $(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS) -ldl
endif

# Fuzz targets (tests/fuzz/README): each tests/fuzz/fuzz_*.c is
# built here with tests/fuzz/replay.c as its main() and replays its seed
# corpus and every regression input (tests/fuzz/corpus/T, regress/T), so
# each input that once crashed runs in every build, the ASan one included,
# without clang. tests/fuzz/run.sh builds the same files with libFuzzer
# and fuzzes them (CI: a bounded run; `tests/fuzz/run.sh 3600` the long one).
JB_FUZZ_SRC = tests/fuzz/fuzz.h tests/fuzz/fuzz_decode.h tests/fuzz/replay.c
check_PROGRAMS += tests/fuzz/replay_posting tests/fuzz/replay_json \
	tests/fuzz/replay_batch
TESTS += tests/fuzz/replay_posting tests/fuzz/replay_json \
	tests/fuzz/replay_batch
tests_fuzz_replay_posting_SOURCES = tests/fuzz/fuzz_posting.c $(JB_FUZZ_SRC)
tests_fuzz_replay_posting_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET=\"posting\"
tests_fuzz_replay_posting_CFLAGS = $(AM_CFLAGS) $(MSGPACK_CFLAGS)
tests_fuzz_replay_posting_LDADD = libjbcore.la $(LMDB_LIBS) $(MSGPACK_LIBS) \
	$(UUID_LIBS)
tests_fuzz_replay_json_SOURCES = tests/fuzz/fuzz_json.c tools/json.c \
	$(JB_FUZZ_SRC)
tests_fuzz_replay_json_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET=\"json\"
tests_fuzz_replay_json_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(MSGPACK_CFLAGS)
tests_fuzz_replay_json_LDADD = libjbcore.la $(JANSSON_LIBS) $(LMDB_LIBS) \
	$(MSGPACK_LIBS) $(UUID_LIBS)
# The batch reader is the CLI's own code on the public API: linked as the
# CLI is (tools/local.mk).
tests_fuzz_replay_batch_SOURCES = tests/fuzz/fuzz_batch.c \
	tools/post_input.c tools/json.c tools/cli_common.c tools/cli_error.c \
	tools/cli_duration.c tools/cli_getopt.c tools/cli_board.c \
	tools/cli_sync.c $(JB_FUZZ_SRC)
tests_fuzz_replay_batch_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET=\"batch\"
tests_fuzz_replay_batch_CFLAGS = $(AM_CFLAGS) $(JB_CLI_SYNC_CFLAGS) \
	$(JANSSON_CFLAGS) $(MSGPACK_CFLAGS)
tests_fuzz_replay_batch_LDADD = $(JB_CLI_SYNC_LIBS) libjobboard.la \
	$(JANSSON_LIBS) $(MSGPACK_LIBS)
if WITH_REDIS
check_PROGRAMS += tests/fuzz/replay_redis
TESTS += tests/fuzz/replay_redis
tests_fuzz_replay_redis_SOURCES = tests/fuzz/fuzz_redis.c $(JB_FUZZ_SRC)
tests_fuzz_replay_redis_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TARGET=\"redis\"
tests_fuzz_replay_redis_CFLAGS = $(AM_CFLAGS) $(HIREDIS_CFLAGS) $(MSGPACK_CFLAGS)
tests_fuzz_replay_redis_LDADD = libjbsyncconv.la libjbcore.la $(HIREDIS_LIBS) \
	$(LMDB_LIBS) $(MSGPACK_LIBS) $(UUID_LIBS)
endif
EXTRA_DIST += tests/fuzz/fuzz_redis.c tests/fuzz/run.sh \
	tests/fuzz/make_seeds.py tests/fuzz/capture_seeds.py tests/fuzz/README \
	tests/fuzz/corpus \
	tests/fuzz/regress

# Gathered commits: threads of one process sharing a commit.
if ENABLE_TESTS
check_PROGRAMS += tests/test_group
TESTS += tests/test_group
tests_test_group_SOURCES = tests/test_group.c $(JB_TEST_HELPERS)
tests_test_group_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_group_LDADD = $(JB_TEST_LIBS) -lpthread
endif

# Pages per commit: each kind of commit's dirty pages, by tree,
# through tests/iolayer.c and the page reader; `--table` prints them with
# the default bounds beside bench's raw LMDB floor.
if ENABLE_TESTS
check_PROGRAMS += tests/test_commitpages
TESTS += tests/test_commitpages
tests_test_commitpages_SOURCES = tests/test_commitpages.c bench/bench_raw.c \
	bench/bench_util.c bench/bench_util.h bench/bench_raw.h \
	tools/cli_error.c tools/cli_error.h $(JB_IOLAYER) $(JB_TEST_HELPERS)
tests_test_commitpages_CFLAGS = $(JB_TEST_CFLAGS) $(JANSSON_CFLAGS)
tests_test_commitpages_LDADD = $(JB_TEST_LIBS) $(JANSSON_LIBS) -ldl -lpthread
endif

# A job's life: delayed jobs, attempts and dead letters, retry,
# time limits, unique keys, cancel and flush.
if ENABLE_TESTS
check_PROGRAMS += tests/test_life
TESTS += tests/test_life
tests_test_life_SOURCES = tests/test_life.c $(JB_TEST_HELPERS)
tests_test_life_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_life_LDADD = $(JB_TEST_LIBS) -lpthread

check_PROGRAMS += tests/test_retention
TESTS += tests/test_retention
tests_test_retention_SOURCES = tests/test_retention.c $(JB_TEST_HELPERS)
tests_test_retention_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_retention_LDADD = $(JB_TEST_LIBS)
endif

# The bash completion (contrib/bash-completion/jobboard, contrib/local.mk).
TESTS += tests/completion.sh
EXTRA_DIST += tests/completion.sh
# jb_stats_read and the board's counters.
# tests/metrics.sh: stats and metrics from the command line, and the HTTP
# endpoint when built with libmicrohttpd.
if ENABLE_TESTS
check_PROGRAMS += tests/test_stats
TESTS += tests/test_stats
tests_test_stats_SOURCES = tests/test_stats.c $(JB_TEST_HELPERS)
tests_test_stats_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_stats_LDADD = $(JB_TEST_LIBS)
endif
TESTS += tests/metrics.sh
EXTRA_DIST += tests/metrics.sh
# tests/web.sh: `jobboard web`'s pages, escaping, refusals and /events
# (skipped when built without libmicrohttpd).
TESTS += tests/web.sh
EXTRA_DIST += tests/web.sh
# tests/web_perf.sh: the pages read through the indexes (jb_iter_open_opts)
# show what a full walk shows; Server-Timing on every response.
TESTS += tests/web_perf.sh
EXTRA_DIST += tests/web_perf.sh
# tests/web_timeline.sh: a job's timeline, the claim's holder, /history
# and the overview's sparklines.
TESTS += tests/web_timeline.sh
EXTRA_DIST += tests/web_timeline.sh
# tests/web_actions.sh: `jobboard web --actions`: the token, the login,
# CSRF and Origin refusals, each action checked with the CLI.
TESTS += tests/web_actions.sh
EXTRA_DIST += tests/web_actions.sh
# test_web_html: the pages' one escape (tools/web_html.c), on its own.
if ENABLE_TESTS
check_PROGRAMS += tests/test_web_html
TESTS += tests/test_web_html
tests_test_web_html_SOURCES = tests/test_web_html.c tools/web_html.c \
	tools/web_html.h tools/json.c
tests_test_web_html_CFLAGS = $(JB_TEST_CFLAGS) $(JANSSON_CFLAGS)
tests_test_web_html_LDADD = libjobboard.la $(CMOCKA_LIBS) $(JANSSON_LIBS) \
	$(MSGPACK_LIBS)
endif
# test_cli_output: list's durations and --format's check
# (tools/cli_output.c), on its own.
if ENABLE_TESTS
check_PROGRAMS += tests/test_cli_output
TESTS += tests/test_cli_output
tests_test_cli_output_SOURCES = tests/test_cli_output.c tools/cli_output.c \
	tools/cli_output.h tools/json.c
tests_test_cli_output_CFLAGS = $(JB_TEST_CFLAGS) $(JANSSON_CFLAGS)
tests_test_cli_output_LDADD = libjobboard.la $(CMOCKA_LIBS) $(JANSSON_LIBS) \
	$(MSGPACK_LIBS)
endif
# tests/cli_output.sh: list's header, columns and --format, names in
# watch, the --help texts against what each command accepts.
TESTS += tests/cli_output.sh
EXTRA_DIST += tests/cli_output.sh
# tests/web_browser.sh: `jobboard web` in headless chromium driven by
# Selenium, tests/web_browser.py (skipped without chromium,
# chromium-driver or python3-selenium).
TESTS += tests/web_browser.sh
EXTRA_DIST += tests/web_browser.sh tests/web_browser.py

# The executable model of a board, against the board (Python binding).
TESTS += tests/model.sh
EXTRA_DIST += tests/model.sh tests/sanitizer_preload.sh tests/model/model.py tests/model/run.py \
	tests/model/fakeclock.c

# Job names as queues: claim-next by names, pause and resume (store/names.h).
if ENABLE_TESTS
check_PROGRAMS += tests/test_queues
TESTS += tests/test_queues
tests_test_queues_SOURCES = tests/test_queues.c $(JB_TEST_HELPERS)
tests_test_queues_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_queues_LDADD = $(JB_TEST_LIBS) -lpthread
check_PROGRAMS += tests/test_caps
TESTS += tests/test_caps
tests_test_caps_SOURCES = tests/test_caps.c $(JB_TEST_HELPERS)
tests_test_caps_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_caps_LDADD = $(JB_TEST_LIBS)

# Rate limits of names (jb_set_rate, store/names.h).
check_PROGRAMS += tests/test_rate
TESTS += tests/test_rate
tests_test_rate_SOURCES = tests/test_rate.c $(JB_TEST_HELPERS)
tests_test_rate_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_rate_LDADD = $(JB_TEST_LIBS) -lpthread
endif

# Progress reports of claimed jobs.
if ENABLE_TESTS
check_PROGRAMS += tests/test_progress
TESTS += tests/test_progress
tests_test_progress_SOURCES = tests/test_progress.c $(JB_TEST_HELPERS)
tests_test_progress_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_progress_LDADD = $(JB_TEST_LIBS) -lm

check_PROGRAMS += tests/test_snooze
TESTS += tests/test_snooze
tests_test_snooze_SOURCES = tests/test_snooze.c $(JB_TEST_HELPERS)
tests_test_snooze_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_snooze_LDADD = $(JB_TEST_LIBS)

check_PROGRAMS += tests/test_run_now
TESTS += tests/test_run_now
tests_test_run_now_SOURCES = tests/test_run_now.c $(JB_TEST_HELPERS)
tests_test_run_now_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_run_now_LDADD = $(JB_TEST_LIBS)
endif
# test_durations: the CLI's durations, relative times and long options
# taken only as spelled (tools/cli_duration.c, tools/cli_getopt.c), on
# their own.
if ENABLE_TESTS
check_PROGRAMS += tests/test_durations
TESTS += tests/test_durations
tests_test_durations_SOURCES = tests/test_durations.c tools/cli_duration.c \
	tools/cli_duration.h tools/cli_getopt.c tools/cli_getopt.h
tests_test_durations_CFLAGS = $(JB_TEST_CFLAGS)
tests_test_durations_LDADD = $(CMOCKA_LIBS)
endif

# A synced board detached from Redis (`sync --detach`), its namespace
# changed, the first sync's namespace line and a standby replicator's
# lines, against a redis-server the script starts (tests/sync_lib.sh).
if WITH_REDIS
TESTS += tests/sync_detach.sh
endif
EXTRA_DIST += tests/sync_detach.sh
