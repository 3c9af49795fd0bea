/* Status codes, messages, names and the library's version. */
#include <jobboard.h>
#include <stdio.h>

int main(void)
{
  int major, minor, patch;
  const char *v = jb_version(&major, &minor, &patch);
  printf("libjobboard %s (built against %s)\n", v, JOBBOARD_VERSION_STRING);

  jb_board *board;
  int rc = jb_board_open(&board, "/nonexistent/board", NULL);
  if (rc != JB_OK) {
    /* Branch on the code, then show the message naming what failed. */
    printf("%s\n  %s\n", jb_strerror(rc), jb_errmsg());
  } else {
    jb_board_close(board);
  }

  jb_priority p;
  if (jb_priority_parse(&p, "very_high") == JB_OK)
    printf("priority %s = %d\n", jb_priority_name(p), (int)p);
  jb_durability d;
  if (jb_durability_parse(&d, "bogus") != JB_OK) printf("%s\n", jb_errmsg());
  printf("%s %s %s %s %s\n", jb_state_name(JB_STATE_COMPLETE),
         jb_end_name(JB_END_FAILED), jb_event_type_name(JB_EVENT_CLAIMED),
         jb_dead_cause_name(JB_DEAD_ATTEMPTS), jb_catchup_name(JB_CATCHUP_ALL));
  return 0;
}
