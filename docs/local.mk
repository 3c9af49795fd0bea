# docs/: man(3) pages of the public C API (include/jobboard.h,
# include/jobboard_sync.h). One page per group of functions (jobboard(3) is the
# overview that lists them; jb_deprecated(3) holds the names replaced in
# 0.2) and, for every function, a page of its name:
# a ".so man3/GROUP.3" link to its group's page. tests/manpages.sh checks
# that every JB_EXTERN function has one, that every page renders without a
# warning and is listed here, that each SYNOPSIS holds the header's exact
# prototypes, and that each page's EXAMPLES is its program in
# tests/man3_examples (built by make check below, and run by the test).
JB_MAN3_GROUPS = \
	docs/man3/jobboard.3 \
	docs/man3/jb_board.3 \
	docs/man3/jb_jobs.3 \
	docs/man3/jb_claims.3 \
	docs/man3/jb_queues.3 \
	docs/man3/jb_retry.3 \
	docs/man3/jb_retention.3 \
	docs/man3/jb_schedule.3 \
	docs/man3/jb_waits.3 \
	docs/man3/jb_history.3 \
	docs/man3/jb_stats.3 \
	docs/man3/jb_entities.3 \
	docs/man3/jb_errors.3 \
	docs/man3/jb_sync.3 \
	docs/man3/jb_deprecated.3
JB_MAN3_LINKS = \
	docs/man3/jb_abandon.3 \
	docs/man3/jb_board_cancel.3 \
	docs/man3/jb_board_cancel_reset.3 \
	docs/man3/jb_board_cancel_unclaimed.3 \
	docs/man3/jb_board_check.3 \
	docs/man3/jb_board_check_ex.3 \
	docs/man3/jb_board_last_check.3 \
	docs/man3/jb_board_close.3 \
	docs/man3/jb_board_count.3 \
	docs/man3/jb_board_flush.3 \
	docs/man3/jb_board_get_retention.3 \
	docs/man3/jb_board_get_retry_policy.3 \
	docs/man3/jb_board_interrupt.3 \
	docs/man3/jb_board_interrupt_reset.3 \
	docs/man3/jb_board_sync.3 \
	docs/man3/jb_board_set_flush_interval.3 \
	docs/man3/jb_board_flush_info.3 \
	docs/man3/jb_board_open.3 \
	docs/man3/jb_board_path.3 \
	docs/man3/jb_board_readonly.3 \
	docs/man3/jb_board_stats.3 \
	docs/man3/jb_stats_clear.3 \
	docs/man3/jb_stats_read.3 \
	docs/man3/jb_board_salvage.3 \
	docs/man3/jb_board_set_retention.3 \
	docs/man3/jb_board_set_retry_policy.3 \
	docs/man3/jb_board_wait.3 \
	docs/man3/jb_board_wait_names.3 \
	docs/man3/jb_cap_prefixes.3 \
	docs/man3/jb_catchup_name.3 \
	docs/man3/jb_overlap_name.3 \
	docs/man3/jb_claim.3 \
	docs/man3/jb_claim_next.3 \
	docs/man3/jb_claim_next_many.3 \
	docs/man3/jb_completion_free.3 \
	docs/man3/jb_consume.3 \
	docs/man3/jb_consume_and_claim_next.3 \
	docs/man3/jb_consume_many.3 \
	docs/man3/jb_dead_cause_name.3 \
	docs/man3/jb_dead_count.3 \
	docs/man3/jb_dead_foreach.3 \
	docs/man3/jb_dead_free.3 \
	docs/man3/jb_dead_get.3 \
	docs/man3/jb_dead_purge.3 \
	docs/man3/jb_dead_remove.3 \
	docs/man3/jb_dead_requeue.3 \
	docs/man3/jb_dead_repost.3 \
	docs/man3/jb_durability_name.3 \
	docs/man3/jb_durability_parse.3 \
	docs/man3/jb_end_name.3 \
	docs/man3/jb_entity_list.3 \
	docs/man3/jb_entity_register.3 \
	docs/man3/jb_entity_unregister.3 \
	docs/man3/jb_errmsg.3 \
	docs/man3/jb_event_type_name.3 \
	docs/man3/jb_extend.3 \
	docs/man3/jb_history_close.3 \
	docs/man3/jb_history_count.3 \
	docs/man3/jb_history_next.3 \
	docs/man3/jb_history_open.3 \
	docs/man3/jb_history_open_filtered.3 \
	docs/man3/jb_history_query.3 \
	docs/man3/jb_iter_close.3 \
	docs/man3/jb_iter_next.3 \
	docs/man3/jb_iter_open.3 \
	docs/man3/jb_iter_open_opts.3 \
	docs/man3/jb_iter_cursor.3 \
	docs/man3/jb_job_abandon.3 \
	docs/man3/jb_job_abandon_ex.3 \
	docs/man3/jb_job_attempts.3 \
	docs/man3/jb_job_snoozes.3 \
	docs/man3/jb_job_max_snoozes.3 \
	docs/man3/jb_job_deadline.3 \
	docs/man3/jb_job_book_name.3 \
	docs/man3/jb_job_book_uuid.3 \
	docs/man3/jb_job_cancel.3 \
	docs/man3/jb_job_run_now.3 \
	docs/man3/jb_job_claim.3 \
	docs/man3/jb_job_claim_ex.3 \
	docs/man3/jb_job_claim_next.3 \
	docs/man3/jb_job_claim_next_ex.3 \
	docs/man3/jb_job_claim_next_many.3 \
	docs/man3/jb_job_claim_next_wait.3 \
	docs/man3/jb_job_completion.3 \
	docs/man3/jb_job_consume.3 \
	docs/man3/jb_job_consume_and_claim_next.3 \
	docs/man3/jb_job_consume_ex.3 \
	docs/man3/jb_job_consume_many.3 \
	docs/man3/jb_job_consume_result.3 \
	docs/man3/jb_job_created.3 \
	docs/man3/jb_job_details.3 \
	docs/man3/jb_job_expires_in.3 \
	docs/man3/jb_job_extend.3 \
	docs/man3/jb_job_find_owner.3 \
	docs/man3/jb_job_free.3 \
	docs/man3/jb_job_get.3 \
	docs/man3/jb_job_get_state.3 \
	docs/man3/jb_job_holder_alive.3 \
	docs/man3/jb_job_holder_pid.3 \
	docs/man3/jb_job_last_reason.3 \
	docs/man3/jb_job_lease_expires.3 \
	docs/man3/jb_job_max_attempts.3 \
	docs/man3/jb_job_modified.3 \
	docs/man3/jb_job_name.3 \
	docs/man3/jb_job_not_before.3 \
	docs/man3/jb_job_owner.3 \
	docs/man3/jb_job_post.3 \
	docs/man3/jb_job_post_batch.3 \
	docs/man3/jb_job_posting.3 \
	docs/man3/jb_job_priority.3 \
	docs/man3/jb_job_progress.3 \
	docs/man3/jb_job_remote.3 \
	docs/man3/jb_job_retry.3 \
	docs/man3/jb_job_sequence.3 \
	docs/man3/jb_job_state.3 \
	docs/man3/jb_job_time_limit.3 \
	docs/man3/jb_job_token.3 \
	docs/man3/jb_job_trash.3 \
	docs/man3/jb_job_trash_ex.3 \
	docs/man3/jb_job_unique_key.3 \
	docs/man3/jb_job_uuid.3 \
	docs/man3/jb_job_wait_done.3 \
	docs/man3/jb_log_bounds.3 \
	docs/man3/jb_log_progress.3 \
	docs/man3/jb_log_read.3 \
	docs/man3/jb_log_wait.3 \
	docs/man3/jb_name_matches.3 \
	docs/man3/jb_pause.3 \
	docs/man3/jb_post_check.3 \
	docs/man3/jb_priority_name.3 \
	docs/man3/jb_priority_parse.3 \
	docs/man3/jb_progress.3 \
	docs/man3/jb_snooze.3 \
	docs/man3/jb_queues_foreach.3 \
	docs/man3/jb_rate_prefixes.3 \
	docs/man3/jb_resume.3 \
	docs/man3/jb_set_cap.3 \
	docs/man3/jb_set_rate.3 \
	docs/man3/jb_schedule_add.3 \
	docs/man3/jb_schedule_foreach.3 \
	docs/man3/jb_schedule_free.3 \
	docs/man3/jb_schedule_get.3 \
	docs/man3/jb_schedule_next_due.3 \
	docs/man3/jb_schedule_remove.3 \
	docs/man3/jb_schedule_tick.3 \
	docs/man3/jb_schedule_wait.3 \
	docs/man3/jb_state_name.3 \
	docs/man3/jb_strerror.3 \
	docs/man3/jb_subscribe.3 \
	docs/man3/jb_sync_attach.3 \
	docs/man3/jb_sync_board_config.3 \
	docs/man3/jb_sync_board_configure.3 \
	docs/man3/jb_sync_board_detach.3 \
	docs/man3/jb_sync_board_detached.3 \
	docs/man3/jb_sync_board_lookup.3 \
	docs/man3/jb_sync_compare.3 \
	docs/man3/jb_sync_replicator_status_read.3 \
	docs/man3/jb_sync_board_resolve.3 \
	docs/man3/jb_sync_close.3 \
	docs/man3/jb_sync_connect.3 \
	docs/man3/jb_sync_connected.3 \
	docs/man3/jb_sync_detach.3 \
	docs/man3/jb_sync_key.3 \
	docs/man3/jb_sync_namespace.3 \
	docs/man3/jb_sync_namespace_check.3 \
	docs/man3/jb_sync_options_init.3 \
	docs/man3/jb_sync_ping.3 \
	docs/man3/jb_sync_publish.3 \
	docs/man3/jb_sync_replicator_options_init.3 \
	docs/man3/jb_sync_replicator_start.3 \
	docs/man3/jb_sync_replicator_status.3 \
	docs/man3/jb_sync_replicator_stop.3 \
	docs/man3/jb_sync_server_version.3 \
	docs/man3/jb_sync_status_read.3 \
	docs/man3/jb_sync_url_free.3 \
	docs/man3/jb_sync_url_parse.3 \
	docs/man3/jb_sync_verify.3 \
	docs/man3/jb_trash.3 \
	docs/man3/jb_unsubscribe.3 \
	docs/man3/jb_version.3
dist_man3_MANS = $(JB_MAN3_GROUPS) $(JB_MAN3_LINKS)

TESTS += tests/manpages.sh
EXTRA_DIST += tests/manpages.sh
# The EXAMPLES of the pages, as programs (public API only).
JB_MAN3_EXAMPLES = board jobs claims retry schedule waits history entities \
	errors stats queues retention
check_PROGRAMS += tests/man3_examples/board tests/man3_examples/jobs \
	tests/man3_examples/claims tests/man3_examples/retry \
	tests/man3_examples/schedule tests/man3_examples/waits \
	tests/man3_examples/history tests/man3_examples/entities \
	tests/man3_examples/errors tests/man3_examples/stats \
	tests/man3_examples/queues tests/man3_examples/retention
tests_man3_examples_retention_LDADD = libjobboard.la
tests_man3_examples_stats_LDADD = libjobboard.la
tests_man3_examples_queues_LDADD = libjobboard.la
tests_man3_examples_board_LDADD = libjobboard.la
tests_man3_examples_jobs_LDADD = libjobboard.la
tests_man3_examples_claims_LDADD = libjobboard.la
tests_man3_examples_retry_LDADD = libjobboard.la
tests_man3_examples_schedule_LDADD = libjobboard.la
tests_man3_examples_waits_LDADD = libjobboard.la
tests_man3_examples_history_LDADD = libjobboard.la
tests_man3_examples_entities_LDADD = libjobboard.la
tests_man3_examples_errors_LDADD = libjobboard.la
if WITH_REDIS
JB_MAN3_EXAMPLES += sync
check_PROGRAMS += tests/man3_examples/sync
tests_man3_examples_sync_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sync
tests_man3_examples_sync_LDADD = libjbsync.la libjobboard.la
endif
EXTRA_DIST += tests/man3_examples/sync.c
# tests/manpages.sh learns the installed pages and the examples built.
AM_TESTS_ENVIRONMENT += JB_TEST_MAN3='$(dist_man3_MANS)'; \
	JB_TEST_MAN3_EXAMPLES='$(JB_MAN3_EXAMPLES)'; \
	export JB_TEST_MAN3 JB_TEST_MAN3_EXAMPLES;
