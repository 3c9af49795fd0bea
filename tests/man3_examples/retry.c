/* Retries and dead letters: a job that fails twice is dead; requeue it. */
#include <jobboard.h>
#include <stdio.h>

static int print_letter(const jb_dead_letter *l, void *payload)
{
  (void)payload;
  printf("dead %s %s: %s after %u attempts (%s)\n", l->uuid,
         l->name ? l->name : "?", jb_dead_cause_name(l->cause), l->attempts,
         l->reason ? l->reason : "no reason");
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
  jb_retry_policy policy;
  jb_board_get_retry_policy(&policy, board);
  policy.backoff_ms = 10; /* the first retry's back-off */
  jb_board_set_retry_policy(board, &policy);

  jb_post post = JB_POST_INIT;
  post.name = "flaky";
  post.max_attempts = 2;
  char uuid[JB_UUID_STRLEN];
  if (jb_job_post(uuid, board, &post) != JB_OK) {
    fprintf(stderr, "post: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_claim_options wait = JB_CLAIM_OPTIONS_INIT;
  wait.wait_ms = 1000; /* for the back-off to end */
  for (int attempt = 1; attempt <= 2; attempt++) {
    uint64_t token;
    if (jb_claim_next(NULL, NULL, &token, board, "worker-1", &wait) != JB_OK)
      break;
    jb_retry_options ro = JB_RETRY_OPTIONS_INIT;
    ro.flags = JB_RETRY_BACKOFF;
    ro.token = token;
    ro.reason = "remote host unreachable";
    jb_retry_result res;
    if (jb_retry(&res, board, uuid, "worker-1", &ro) != JB_OK) break;
    printf("attempt %u: %s\n", res.attempts,
           res.dead ? "dead" : "retried after the back-off");
  }
  size_t n = 0;
  jb_dead_count(&n, board);
  printf("%zu dead letters\n", n);
  jb_dead_foreach(board, print_letter, NULL);

  jb_dead_letter *letter;
  if (jb_dead_get(&letter, board, uuid) == JB_OK) {
    printf("posted at %lld us\n", (long long)letter->posted_us);
    jb_dead_free(letter);
  }
  if (jb_dead_requeue(board, uuid, 0) == JB_OK) printf("requeued %s\n", uuid);
  jb_dead_purge(NULL, board, INT64_MAX); /* nothing left to purge */
  jb_board_close(board);
  return 0;
}
