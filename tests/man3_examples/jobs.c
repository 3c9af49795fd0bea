/* Post jobs, read one back, list them all in claim order. */
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

  /* The details are one msgpack map: {"path": "a.png"}. */
  static const unsigned char details[] = {
    0x81, 0xa4, 'p', 'a', 't', 'h', 0xa5, 'a', '.', 'p', 'n', 'g'};
  jb_post post = JB_POST_INIT;
  post.name = "resize-image";
  post.details = details;
  post.details_len = sizeof details;
  post.priority = JB_PRIORITY_HIGH;
  char uuid[JB_UUID_STRLEN];
  if (jb_job_post(uuid, board, &post) != JB_OK) {
    fprintf(stderr, "post: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }

  jb_job *job;
  if (jb_job_get(&job, board, uuid) == JB_OK) {
    size_t len;
    jb_job_details(job, &len);
    printf("posted %s (%s, %s, %zu bytes of details)\n", jb_job_uuid(job),
           jb_job_name(job), jb_priority_name(jb_job_priority(job)), len);
    jb_job_free(job);
  }

  jb_iter *it;
  if (jb_iter_open(&it, board, 0) == JB_OK) {
    const jb_job *j;
    while (jb_iter_next(&j, it) == JB_OK && j != NULL)
      printf("%s %-9s %s\n", jb_job_uuid(j),
             jb_state_name(jb_job_state(j)), jb_job_name(j));
    jb_iter_close(it);
  }
  jb_board_close(board);
  return 0;
}
