/*
 * fuzz_batch.c - `jobboard post --batch`'s reader (tools/post_input.c) on
 * any bytes as its standard input: JSON lines, each checked whole before a
 * board is opened. Properties beyond "no crash, no leak, no UB": a batch it
 * accepts holds only jobs the library takes (jb_post_check), exactly one
 * per line that is not blank; a batch it refuses holds nothing. Its messages go to
 * stderr (run.sh closes it with -close_fd_mask=2).
 */
#include "fuzz.h"

#include "tools/post_input.h"

#include <stdbool.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* fmemopen of 0 bytes fails on some libcs: an empty stdin reads as no
   * jobs, which a one-byte "\n" also gives. */
  FILE *in = size ? fmemopen((void *)data, size, "r") : NULL;
  if (in == NULL) return 0;
  cli_pending *jobs = (cli_pending *)1;
  size_t n = 99;
  int rc = cli_batch_read(&jobs, &n, in);
  fclose(in);
  if (rc != 0) {
    FUZZ_CHECK(jobs == NULL && n == 0, "a refused batch keeps %zu jobs", n);
    return 0;
  }
  /* One job per line that holds anything but blanks (space, tab, CR). */
  size_t lines = 0;
  bool blank = true;
  for (size_t i = 0; i < size; i++) {
    if (data[i] == '\n') {
      lines += !blank;
      blank = true;
    } else if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r') {
      blank = false;
    }
  }
  lines += !blank;
  FUZZ_CHECK(n == lines, "%zu jobs from %zu lines that are not blank", n,
             lines);
  for (size_t i = 0; i < n; i++) {
    jb_post post = cli_pending_post(&jobs[i]);
    FUZZ_CHECK(post.name != NULL && jb_post_check(&post, 0) == JB_OK,
               "job %zu of an accepted batch is refused: %s", i, jb_errmsg());
  }
  cli_batch_free(jobs, n);
  return 0;
}
