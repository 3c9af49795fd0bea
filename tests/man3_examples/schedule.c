/* A periodic job: add a schedule, tick it, list the schedules. */
#include <jobboard.h>
#include <stdio.h>

static int print_schedule(const jb_schedule *s, void *payload)
{
  (void)payload;
  printf("%s: %s %s, %llu runs, next at %lld us\n", s->name,
         s->cron ? "cron" : "every", s->cron ? s->cron : "interval",
         (unsigned long long)s->runs, (long long)s->next_us);
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
  jb_schedule s = JB_SCHEDULE_INIT;
  s.name = "nightly-report";
  s.cron = "30 2 * * *"; /* 02:30 UTC every day */
  s.catch_up = JB_CATCHUP_SKIP;
  s.job.name = "report";
  if (jb_schedule_add(board, &s, JB_SCHEDULE_REPLACE) != JB_OK) {
    fprintf(stderr, "add: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  int64_t due;
  jb_schedule_next_due(&due, board);
  size_t posted;
  jb_schedule_tick(&posted, board, due); /* as if it were 02:30 */
  printf("tick at %lld: %zu job(s) posted\n", (long long)due, posted);

  jb_schedule *got;
  if (jb_schedule_get(&got, board, "nightly-report") == JB_OK) {
    printf("last run %lld us\n", (long long)got->last_run_us);
    jb_schedule_free(got);
  }
  jb_schedule_foreach(board, print_schedule, NULL);
  /* A loop ticks, then sleeps until the next run is due (or 1 ms here). */
  if (jb_schedule_wait(board, 1) == JB_ETIMEDOUT) printf("nothing due\n");
  jb_schedule_remove(board, "nightly-report");
  jb_board_close(board);
  return 0;
}
