/*
 * cmd_salvage.c - `jobboard salvage SRC DST`: copy what a damaged board
 * still holds into a new board (jb_board_salvage).
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

const cli_command cli_cmd_salvage = {
    "salvage", "copy the readable jobs of a damaged board into a new board",
    "Usage: jobboard salvage [--json] SRC DST\n"
    "\n"
    "Read the board in directory SRC, which may be damaged (jobboard check\n"
    "reports unreadable pages, or LMDB refuses or crashes on it), and post\n"
    "every job whose posting still decodes into a new board in directory\n"
    "DST. SRC is only read: its data file is opened read-only, no lock file\n"
    "is made (SRC may be on a read-only mount), and its pages are read by\n"
    "jobboard's own reader of LMDB's format, which checks every page before\n"
    "using it. Stop every process that writes SRC first.\n"
    "\n"
    "Each job keeps its uuid, name, details, priority, creation time and\n"
    "book, and the new board lists them in their old order (priority, then\n"
    "sequence), with new sequence numbers. Claims are dropped: every job is\n"
    "UNCLAIMED in DST. Jobs come from the jobs table of the newest readable\n"
    "meta page and from pages no table reaches any more (leaf pages cut off\n"
    "by a damaged page above them); jobs on free pages are stale copies and\n"
    "are never taken, and a job the readable history, change log, trash or\n"
    "quarantine (even a stale copy) says has completed is never copied.\n"
    "A job keeps its due time, attempts, last reason, options and unique\n"
    "key (its claim and the claim's time limit are dropped). Completion\n"
    "records (jobboard history), dead letters and schedules that decode\n"
    "are copied; the change log is not. Check DST with 'jobboard check\n"
    "--board DST' and move it into place yourself.\n"
    "\n"
    "DST must not exist (its parent must) or be an empty directory.\n"
    "\n"
    "Output: one line per copied job ('copied: job UUID (NAME)'), per job\n"
    "record not copied ('undecodable: ...'), per unreadable page ('bad\n"
    "page: page N (TABLE): why') and table ('bad table: ...'), then the\n"
    "summary\n"
    "  copied N (from unreachable pages N), undecodable N, completed N,\n"
    "  bad pages N, bad tables N, history N\n"
    "With --json, each line is an object {\"copied\"|\"undecodable\"|\n"
    "\"bad_page\"|\"bad_table\"|\"note\": \"...\"} and the summary one object\n"
    "{\"copied\": N, \"orphaned\": N, \"undecodable\": N, \"completed\": N,\n"
    "\"bad_pages\": N, \"bad_tables\": N, \"history\": N}.\n"
    "\n"
    "Options:\n"
    "  --json              JSON lines, as above\n"
    "\n"
    "Exit status:\n"
    "  0  every job found was copied and every page was readable\n"
    "  1  the salvage ran but lost something (an unreadable page or table,\n"
    "     an undecodable job), or another error; DST holds what was copied\n"
    "  2  usage error, or DST exists and is not an empty directory\n"
    "  3  SRC does not exist or holds no data.mdb\n"
    "  9  neither meta page of SRC can be read: nothing was written\n"
    "\n"
    "Example:\n"
    "  jobboard salvage /srv/board /srv/board.salvaged &&\n"
    "    jobboard check --board /srv/board.salvaged\n",
    0, 2, 2, "SRC DST"};

typedef struct {
  int json;
  int failed;
} salvage_out;

static void on_line(jb_salvage_kind kind, const char *line, void *payload) {
  salvage_out *out = payload;
  static const char *const key[] = {"", "copied", "undecodable", "bad_page",
                                    "bad_table", "note"};
  static const char *const text[] = {"", "copied", "undecodable", "bad page",
                                     "bad table", "note"};
  int k = kind >= JB_SALVAGE_COPIED && kind <= JB_SALVAGE_NOTE ? (int)kind : 5;
  if (out->json) {
    json_t *v = json_string(line);
    if (v == NULL) v = json_string("(a line that is not UTF-8)");
    if (cli_json_print(json_pack("{s:o}", key[k], v))) out->failed = 1;
  } else {
    if (printf("%s: ", text[k]) < 0) out->failed = 1;
    cli_put_text(stdout, line);
    if (putchar('\n') == EOF) out->failed = 1;
  }
}

int cmd_salvage(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_salvage, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.board)
    return cli_cmd_usage(&cli_cmd_salvage, "salvage takes SRC and DST, not "
                         "--board");
  salvage_out out = {o.json, 0};
  jb_salvage_stats s;
  int st = jb_board_salvage(&s, o.args[0], o.args[1], on_line, &out);
  if (st != JB_OK) {
    if (st == JB_ECORRUPT) {
      cli_fail(st);
      return CLI_EXIT_NO_META; /* JB_ECORRUPT: nothing written */
    }
    return cli_fail(st);
  }
  if (o.json) {
    json_t *v = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
                          "copied", (json_int_t)s.copied,
                          "orphaned", (json_int_t)s.orphaned,
                          "undecodable", (json_int_t)s.undecodable,
                          "completed", (json_int_t)s.completed,
                          "bad_pages", (json_int_t)s.bad_pages,
                          "bad_tables", (json_int_t)s.bad_tables,
                          "history", (json_int_t)s.history);
    if (cli_json_print(v)) out.failed = 1;
  } else {
    printf("copied %zu (from unreachable pages %zu), undecodable %zu, "
           "completed %zu, bad pages %zu, bad tables %zu, history %zu\n",
           s.copied, s.orphaned, s.undecodable, s.completed, s.bad_pages,
           s.bad_tables, s.history);
  }
  if (fflush(stdout) != 0) out.failed = 1;
  if (out.failed) return CLI_EXIT_ERROR;
  if (s.undecodable || s.bad_pages || s.bad_tables) {
    fprintf(stderr, "jobboard: salvage: %zu bad page%s, %zu bad table%s, "
            "%zu undecodable job%s: some jobs may be lost\n", s.bad_pages,
            s.bad_pages == 1 ? "" : "s", s.bad_tables,
            s.bad_tables == 1 ? "" : "s", s.undecodable,
            s.undecodable == 1 ? "" : "s");
    return CLI_EXIT_ERROR;
  }
  return CLI_EXIT_OK;
}
