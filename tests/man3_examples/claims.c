/* A worker's loop: claim the next job with a lease, bound to this
 * process, then complete it with a result. */
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
  post.name = "send-mail";
  char posted[JB_UUID_STRLEN];
  if (jb_job_post(posted, board, &post) != JB_OK) {
    fprintf(stderr, "post: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }

  jb_claim_options claim = JB_CLAIM_OPTIONS_INIT;
  claim.flags = JB_CLAIM_BIND_PROCESS; /* lapses if we die */
  claim.lease_ms = 30000;              /* ... or stop renewing */
  char uuid[JB_UUID_STRLEN];
  uint64_t token;
  int rc;
  while ((rc = jb_claim_next(uuid, NULL, &token, board, "worker-1",
                             &claim)) == JB_OK) {
    char owner[JB_WHO_MAX + 1];
    jb_job_find_owner(owner, board, uuid);
    printf("claimed %s as %s (token %llu)\n", uuid, owner,
           (unsigned long long)token);
    /* ... work; renew the lease now and then: */
    jb_extend(board, uuid, "worker-1", token, 30000);

    static const unsigned char result[] = {0x81, 0xa2, 'o', 'k', 0xc3};
    jb_consume_options done = JB_CONSUME_OPTIONS_INIT; /* a success */
    done.result = result;
    done.result_len = sizeof result;
    rc = jb_consume(board, uuid, "worker-1", token, &done);
    if (rc == JB_ENOTOWNER || rc == JB_ENOTFOUND) {
      /* Our claim lapsed and the job went to another worker. */
      fprintf(stderr, "consume: %s\n", jb_errmsg());
      continue;
    }
    if (rc != JB_OK) break;
  }
  if (rc != JB_ENOTFOUND) fprintf(stderr, "%s\n", jb_errmsg());
  jb_board_close(board);
  return rc == JB_ENOTFOUND ? 0 : 1;
}
