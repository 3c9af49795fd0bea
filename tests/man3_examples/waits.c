/* Waiting without polling: a subscription prints the board's events
 * while this thread waits for a job, claims it, completes it and waits
 * for its completion record. */
#include <jobboard.h>
#include <stdatomic.h>
#include <stdio.h>

static atomic_int seen;

static void on_event(const jb_event *ev, void *payload)
{
  (void)payload;
  printf("event %llu: %s %s\n", (unsigned long long)ev->seq,
         jb_event_type_name(ev->type), ev->uuid);
  atomic_fetch_add(&seen, 1);
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
  jb_subscription *sub;
  if (jb_subscribe(&sub, board, JB_LOG_NOW,
                   JB_EVENTS_POSTED | JB_EVENTS_REMOVAL, on_event,
                   NULL) != JB_OK) {
    fprintf(stderr, "subscribe: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_post post = JB_POST_INIT;
  post.name = "thumbnail";
  char uuid[JB_UUID_STRLEN];
  jb_job_post(uuid, board, &post);

  /* Returns at once: the board holds a claimable job. */
  if (jb_board_wait(board, JB_ONLY_UNCLAIMED, 5000) == JB_OK) {
    char got[JB_UUID_STRLEN];
    uint64_t token;
    jb_claim_options wait = JB_CLAIM_OPTIONS_INIT;
    wait.wait_ms = 5000;
    if (jb_claim_next(got, NULL, &token, board, "worker-1", &wait) == JB_OK)
      jb_consume(board, got, "worker-1", token, NULL);
  }
  jb_completion *done;
  int rc = jb_job_wait_done(&done, board, uuid, 5000);
  if (rc == JB_OK) {
    printf("%s: %s by %s\n", done->uuid, jb_end_name(done->end), done->owner);
    jb_completion_free(done);
  } else {
    fprintf(stderr, "wait-done: %s\n", jb_errmsg());
  }
  /* The subscription's thread delivers POSTED and CONSUMED: give it up
   * to 5 s (a wait for a claimable job that times out is a sleep). */
  for (int i = 0; i < 50 && atomic_load(&seen) < 2; i++)
    jb_board_wait(board, JB_ONLY_UNCLAIMED, 100);
  jb_unsubscribe(sub);

  /* Another thread (or a signal handler) may stop every wait: */
  jb_board_interrupt(board);
  if (jb_board_wait(board, 0, -1) == JB_EINTERRUPTED) printf("interrupted\n");
  jb_board_interrupt_reset(board);
  jb_board_close(board);
  return rc == JB_OK ? 0 : 1;
}
