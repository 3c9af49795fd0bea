/* A board's figures at one moment, and the counters it keeps. */
#include <jobboard.h>
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
  jb_post post = JB_POST_INIT;
  post.name = "resize";
  char uuid[JB_UUID_STRLEN];
  if (jb_job_post(uuid, board, &post) != JB_OK) {
    fprintf(stderr, "post: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_stats st = JB_STATS_INIT;
  st.flags = JB_STATS_BY_NAME;
  int rc = jb_stats_read(&st, board);
  if (rc == JB_OK) {
    printf("%zu jobs: %zu unclaimed, %zu claimed, %zu delayed\n", st.jobs,
           st.by_state[JB_STATS_UNCLAIMED], st.by_state[JB_STATS_CLAIMED],
           st.by_state[JB_STATS_DELAYED]);
    printf("posted since the board was made: %llu\n",
           (unsigned long long)st.events_total[JB_EVENT_POSTED]);
    for (size_t i = 0; i < st.n_names; i++)
      printf("  %s: %zu unclaimed\n", st.names[i].name,
             st.names[i].jobs[JB_STATS_UNCLAIMED]);
    printf("%llu of %llu bytes mapped in use\n",
           (unsigned long long)(st.pages_used * st.page_size),
           (unsigned long long)st.map_size);
    jb_stats_clear(&st);
  } else {
    fprintf(stderr, "stats: %s\n", jb_errmsg());
  }
  jb_board_close(board);
  return rc == JB_OK ? 0 : 1;
}
