/* What became of the jobs: the completion history and the change log. */
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
  uint64_t from;
  jb_log_bounds(NULL, &from, board); /* follow the log from now on */

  jb_post post = JB_POST_INIT;
  post.name = "convert";
  char uuid[JB_UUID_STRLEN];
  uint64_t token;
  jb_consume_options failed = JB_CONSUME_OPTIONS_INIT;
  failed.outcome = JB_OUTCOME_FAILURE; /* and no result */
  if (jb_job_post(uuid, board, &post) != JB_OK ||
      jb_claim(&token, board, uuid, "worker-1", NULL) != JB_OK ||
      jb_consume(board, uuid, "worker-1", token, &failed) != JB_OK) {
    fprintf(stderr, "%s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_completion *c;
  if (jb_job_completion(&c, board, uuid) == JB_OK) {
    printf("%s %s: %s\n", c->uuid, c->name, jb_end_name(c->end));
    jb_completion_free(c);
  }

  /* The failed jobs, newest first. */
  jb_history_options filter = JB_HISTORY_OPTIONS_INIT;
  filter.ends = JB_HISTORY_END(JB_END_FAILED);
  jb_history_iter *it;
  if (jb_history_query(&it, board, &filter) == JB_OK) {
    const jb_completion *r;
    while (jb_history_next(&r, it) == JB_OK && r != NULL)
      printf("failed: %s %s\n", r->uuid, r->name ? r->name : "?");
    jb_history_close(it);
  }
  size_t n;
  jb_history_count(&n, board);
  printf("%zu records in the history\n", n);

  /* The change log since `from`: POSTED, CLAIMED, CONSUMED. */
  jb_event ev[16];
  size_t got;
  int rc = jb_log_wait(ev, &got, NULL, board, from, 16, 1000);
  for (size_t i = 0; rc == JB_OK && i < got; i++)
    printf("%llu %s %s\n", (unsigned long long)ev[i].seq,
           jb_event_type_name(ev[i].type), ev[i].owner);
  if (rc == JB_OK && jb_log_read(ev, &got, NULL, board, from + got, 16) ==
      JB_OK)
    printf("%zu more\n", got);
  jb_board_close(board);
  return rc == JB_OK ? 0 : 1;
}
