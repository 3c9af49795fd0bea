# tools/: the jobboard CLI, built on include/jobboard.h (and, with Redis,
# include/jobboard_sync.h) only. One file per subcommand or small group
# (curl's src/ on libcurl); json.c maps details between JSON and msgpack.
bin_PROGRAMS += jobboard
jobboard_SOURCES = \
	tools/cli.h \
	tools/cli_common.h \
	tools/cli_common.c \
	tools/cli_duration.h \
	tools/cli_duration.c \
	tools/cli_getopt.h \
	tools/cli_getopt.c \
	tools/cli_error.h \
	tools/cli_error.c \
	tools/cli_board.c \
	tools/cli_refusal.h \
	tools/cli_refusal.c \
	tools/json.h \
	tools/json.c \
	tools/main.c \
	tools/cmd_post.c \
	tools/post_input.h \
	tools/post_input.c \
	tools/cmd_list.c \
	tools/cli_output.h \
	tools/cli_output.c \
	tools/cmd_claim.c \
	tools/cmd_query.c tools/cmd_wait.c \
	tools/cmd_queues.c \
	tools/cmd_watch.c \
	tools/cmd_check.c \
	tools/cmd_flush.c \
	tools/cmd_salvage.c \
	tools/cmd_entities.c \
	tools/cmd_work.c \
	tools/work_tell.h \
	tools/work_tell.c \
	tools/cmd_life.c \
	tools/cli_dead.c \
	tools/cmd_retention.c \
	tools/cmd_schedule.c \
	tools/cmd_init.c \
	tools/cmd_complete.c \
	tools/cmd_demo.c \
	tools/cli_sync.c \
	tools/cmd_sync.c \
	tools/cli_sync_detach.c \
	tools/cmd_stats.c \
	tools/cmd_top.c \
	tools/cli_http.h \
	tools/cli_http.c \
	tools/web.h \
	tools/web_html.h \
	tools/web_html.c \
	tools/cmd_web.c \
	tools/web_perf.c \
	tools/web_timeline.c \
	tools/web_history.c \
	tools/web_spark.c \
	tools/web_actions.c
# The Redis sync (sync, status, --redis) only when configure found hiredis:
# then JB_WITH_REDIS is defined in config.h and the CLI links libjbsync.
if WITH_REDIS
JB_CLI_SYNC_LIBS = libjbsync.la $(HIREDIS_LIBS)
JB_CLI_SYNC_CFLAGS = $(HIREDIS_CFLAGS)
else
JB_CLI_SYNC_LIBS =
JB_CLI_SYNC_CFLAGS =
endif
jobboard_CFLAGS = $(AM_CFLAGS) $(JB_CLI_SYNC_CFLAGS) $(JANSSON_CFLAGS) $(MSGPACK_CFLAGS)
jobboard_LDADD = $(JB_CLI_SYNC_LIBS) libjobboard.la $(JANSSON_LIBS) $(MSGPACK_LIBS)
# `jobboard metrics --listen` (tools/cmd_stats.c) only when configure
# found libmicrohttpd: then JB_WITH_MICROHTTPD is defined in config.h.
if WITH_MICROHTTPD
jobboard_CFLAGS += $(MICROHTTPD_CFLAGS)
jobboard_LDADD += $(MICROHTTPD_LIBS)
endif
dist_man_MANS = docs/jobboard.1
