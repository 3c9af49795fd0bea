/*
 * cmd_flush.c - `jobboard flush`: flush the board now, set its flush
 * interval (durability interval), say what interval does.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

const cli_command cli_cmd_flush = {
    "flush", "flush the board to disk now; set or show its flush interval",
    "Usage: jobboard flush [--interval MS] [OPTIONS]\n"
    "\n"
    "Flush the board now: when it returns, every commit made so far by any\n"
    "process is on the disk (before cutting the power of a device, say).\n"
    "On a board that uses durability interval the flushed state is also\n"
    "recorded as the one a power loss comes back to.\n"
    "\n"
    "With --interval, first set the board's own flush interval for\n"
    "durability interval: kept in the board, used by every process that\n"
    "does not set JOBBOARD_FLUSH_INTERVAL; running processes take it at\n"
    "their next flush. It does not turn interval on: a process opening the\n"
    "board with --durability interval does.\n"
    "\n"
    "Options:\n"
    "  --interval MS       a duration up to 1d (250ms, 2s, 1m); a bare\n"
    "                      number is milliseconds here; 0 or 'default' for\n"
    "                      the default of 1s\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    "Output: one line: whether the board uses interval, this process's\n"
    "interval (when it does), the last flushed (recorded) and the newest\n"
    "commit (LMDB transaction ids), the flushes this command made. With\n"
    "--json one object: {\"interval\": BOOL, \"flush_interval_ms\": N,\n"
    "\"recorded\": N, \"newest\": N, \"flushes\": N} (flush_interval_ms and\n"
    "recorded are 0 on a board that does not use interval).\n"
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Examples:\n"
    "  jobboard flush --board /data/board && poweroff\n"
    "  jobboard flush --interval 250ms\n",
    CLI_O_FLUSH, 0, 0, NULL};

/* --interval's value: ms, or -1 after saying why. */
static long long parse_interval(const char *v) {
  int64_t ms = 0;
  if (strcmp(v, "default") == 0) return 0;
  if (cli_parse_interval(&ms, v) == 0) return ms;
  cli_duration_usage(&cli_cmd_flush, "--interval (0 or 'default' for the "
                     "default)", v, 1, 0, 86400000);
  return -1;
}

int cmd_flush(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_flush, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  long long ms = -1;
  if (o.flush_interval && (ms = parse_interval(o.flush_interval)) < 0)
    return CLI_EXIT_USAGE;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  int st = JB_OK;
  if (ms >= 0) st = jb_board_set_flush_interval(b, ms);
  if (st == JB_OK) st = jb_board_sync(b);
  jb_flush_info fi;
  if (st == JB_OK) st = jb_board_flush_info(&fi, b);
  if (st != JB_OK) {
    rc = cli_fail(st);
    jb_board_close(b);
    return rc;
  }
  jb_board_close(b);
  int failed = 0;
  if (o.json) {
    failed = cli_json_print(json_pack(
        "{s:b,s:I,s:I,s:I,s:I}", "interval", fi.on,
        "flush_interval_ms", (json_int_t)(fi.on ? fi.flush_interval_ms : 0),
        "recorded", (json_int_t)fi.recorded_txnid, "newest",
        (json_int_t)fi.latest_txnid, "flushes", (json_int_t)fi.flushes));
  } else if (fi.on) {
    failed = printf("flushed: the board uses durability interval, every "
                    "%lld ms; recorded commit %llu, newest %llu\n",
                    (long long)fi.flush_interval_ms,
                    (unsigned long long)fi.recorded_txnid,
                    (unsigned long long)fi.latest_txnid) < 0;
  } else {
    failed = printf("flushed: newest commit %llu (the board does not use "
                    "durability interval)\n",
                    (unsigned long long)fi.latest_txnid) < 0;
  }
  return failed ? CLI_EXIT_ERROR : 0;
}
