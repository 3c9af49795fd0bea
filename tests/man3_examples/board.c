/* Open (or create) a board, count its jobs, check it, close it. */
#include <jobboard.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "example.board";
  jb_board_options opts = JB_BOARD_OPTIONS_INIT;
  opts.flags = JB_OPEN_CREATE;
  opts.durability = JB_DURABILITY_NORMAL;

  jb_board *board;
  if (jb_board_open(&board, dir, &opts) != JB_OK) {
    fprintf(stderr, "open: %s\n", jb_errmsg());
    return 1;
  }
  size_t all, claimable;
  if (jb_board_count(&all, board, 0) != JB_OK ||
      jb_board_count(&claimable, board, JB_ONLY_UNCLAIMED) != JB_OK) {
    fprintf(stderr, "count: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  printf("%s: %zu jobs, %zu claimable\n", jb_board_path(board), all,
         claimable);

  jb_check_stats stats;
  int rc = jb_board_check(&stats, board, NULL, NULL);
  printf("check: %s (%zu problems)\n", jb_strerror(rc), stats.problems);
  jb_board_close(board);
  return rc == JB_OK ? 0 : 1;
}
