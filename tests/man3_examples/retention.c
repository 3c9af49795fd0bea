/* Retention: keep 100 dead letters for 14 days, whoever writes the board. */
#include <jobboard.h>
#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "example.board";
  jb_board_options opts = JB_BOARD_OPTIONS_INIT;
  opts.flags = JB_OPEN_CREATE;
  jb_board *board;
  if (jb_board_open(&board, dir, &opts) != JB_OK) {
    fprintf(stderr, "open: %s\n", jb_errmsg());
    return 1;
  }
  jb_retention r = {0};
  r.dead_max = 100;
  r.dead_max_age_ms = (int64_t)14 * 24 * 3600 * 1000;
  r.history_max_age_ms = JB_RETAIN_NONE; /* the history: by count only */
  if (jb_board_set_retention(board, &r, JB_RETAIN_DEAD_MAX |
                             JB_RETAIN_DEAD_AGE | JB_RETAIN_HISTORY_AGE) !=
      JB_OK) {
    fprintf(stderr, "set retention: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_retention stored, effective;
  if (jb_board_get_retention(&stored, &effective, board) != JB_OK) {
    fprintf(stderr, "get retention: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  printf("history: %" PRId64 " records%s, ", effective.history_max,
         stored.history_max ? "" : " (default)");
  if (effective.history_max_age_ms == JB_RETAIN_NONE)
    printf("no age bound\n");
  else
    printf("%" PRId64 " ms\n", effective.history_max_age_ms);
  printf("dead letters: %" PRId64 ", %" PRId64 " ms\n", effective.dead_max,
         effective.dead_max_age_ms);
  jb_board_close(board);
  return 0;
}
