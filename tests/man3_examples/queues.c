/* Names as queues: claim the jobs of chosen names, pause one name, and
 * list the names with their ready jobs. */
#include <jobboard.h>
#include <stdio.h>

static int show(const jb_queue_info *q, void *arg)
{
  (void)arg;
  printf("  %-14s %zu ready%s\n", q->name, q->ready,
         q->paused ? ", paused" : "");
  return 0;
}

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
  const char *posted[] = {"images.resize", "pdf", "images.thumb", "mail"};
  for (size_t i = 0; i < 4; i++) {
    jb_post post = JB_POST_INIT;
    post.name = posted[i];
    char uuid[JB_UUID_STRLEN];
    if (jb_job_post(uuid, board, &post) != JB_OK) {
      fprintf(stderr, "post: %s\n", jb_errmsg());
      jb_board_close(board);
      return 1;
    }
  }
  /* A worker for the images and the PDFs, while the PDFs are paused. */
  const char *mine[] = {"images.*", "pdf"};
  printf("pdf is mine: %d\n", jb_name_matches(mine, 2, "pdf"));
  int rc = jb_pause(board, "pdf");
  jb_claim_options claim = JB_CLAIM_OPTIONS_INIT;
  claim.names = mine;
  claim.n_names = 2;
  jb_job *job = NULL;
  while (rc == JB_OK &&
         (rc = jb_claim_next(NULL, &job, NULL, board, "w1", &claim)) ==
             JB_OK) {
    printf("claimed %s\n", jb_job_name(job));
    jb_job_free(job);
  }
  if (rc == JB_ENOTFOUND) /* nothing of mine is claimable: pdf is paused */
    rc = JB_OK;
  int board_paused = 0;
  if (rc == JB_OK)
    rc = jb_queues_foreach(board, show, NULL, &board_paused);
  if (rc == JB_OK)
    rc = jb_resume(board, "pdf");
  if (rc != JB_OK)
    fprintf(stderr, "queues: %s\n", jb_errmsg());
  jb_board_close(board);
  return rc == JB_OK ? 0 : 1;
}
