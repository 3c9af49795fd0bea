/*
 * cmd_init.c - jobboard init: make an empty board before the first job,
 * so that workers and producers started in any order find it.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <string.h>

const cli_command cli_cmd_init = {
    "init", "create an empty board (no-op when it exists)",
    "Usage: jobboard init [--map-size SIZE] [OPTIONS] [DIR]\n"
    "\n"
    "Create an empty board in DIR (or --board, $JOBBOARD_DIR, ./jobboard.d),\n"
    "making the directory itself (not its parents) when it is missing. Run\n"
    "it before starting services: a worker (`jobboard work`), `wait`,\n"
    "`watch`, `claim-next --wait` and `sync` started before the board exists\n"
    "wait for it to appear (within their timeout), or make it themselves\n"
    "with --create.\n"
    "\n"
    "A board that already exists is left as it is: init exits 0 and says so\n"
    "(a script may run it at every start). A directory that holds something\n"
    "else (files other than a board's, or a data.mdb that is not a board) is\n"
    "refused and left untouched.\n"
    "\n"
    "Board files are created mode 0660 and the directory 0770, less the\n"
    "umask: a group of users (workers under one account, monitoring under\n"
    "another) shares a board through its group. With umask 022 a board's\n"
    "files are 0640: the group may only read it (reading commands then give\n"
    "a read-only view); use umask 007 (systemd: UMask=0007) for a board the\n"
    "group writes too.\n"
    "With --json: {\"board\": \"DIR\", \"created\": true}.\n"
    "\n"
    "Options:\n"
    "  --map-size SIZE     the board's map size (bytes, or with K, M, G or T:\n"
    "                      256M; at least 64K; default 64M), kept with the\n"
    "                      board for every later open. The map grows by\n"
    "                      itself when full, so this only saves growing or\n"
    "                      bounds the address space a small device maps.\n"
    "                      Ignored (with a note) for a board that exists.\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON " (its parent)\n"
    CLI_HELP_EXIT_READONLY
    "  1  also: DIR holds something that is not a board\n"
    "\n"
    "Examples:\n"
    "  jobboard init /var/lib/jobboard/main\n"
    "  JOBBOARD_DIR=/srv/board jobboard init --map-size 1G\n",
    CLI_O_MAPSIZE, 0, 1, "DIR"};

int cmd_init(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_init, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  if (o.nargs == 1) {
    if (o.board && strcmp(o.board, o.args[0]) != 0)
      return cli_cmd_usage(&cli_cmd_init, "DIR '%s' and --board '%s' name "
                           "two boards: give one", o.args[0], o.board);
    o.board = o.args[0];
  }
  const char *dir = cli_board_dir(o.board);
  /* A directory holding other files is refused by the library's
   * JB_OPEN_CREATE, as for every command that makes a board. Whether there is a board already: a read-only open looks without
   * writing anything. */
  jb_board *b = NULL;
  jb_board_options ro = JB_BOARD_OPTIONS_INIT;
  ro.flags = JB_OPEN_READONLY;
  int existed = jb_board_open(&b, dir, &ro) == JB_OK;
  jb_board_close(b);
  b = NULL;
  if ((rc = cli_open(&b, &o, JB_OPEN_CREATE | CLI_OPEN_SAYS_CREATED)) != 0)
    return rc;
  jb_board_close(b);
  if (existed && o.map_size)
    fprintf(stderr, "jobboard: note: board %s exists: --map-size changes "
            "nothing\n", dir);
  if (o.json)
    return cli_json_print(json_pack("{s:s,s:b}", "board", dir, "created",
                                    !existed))
               ? CLI_EXIT_ERROR
               : CLI_EXIT_OK;
  printf("%s board %s\n", existed ? "existing" : "created", dir);
  return CLI_EXIT_OK;
}
