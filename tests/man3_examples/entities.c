/* Announce this process as a worker, list the live entities. */
#include <jobboard.h>
#include <stdio.h>

static int print_entity(const jb_entity *e, void *payload)
{
  (void)payload;
  printf("%s (%s), pid %d\n", e->name, e->kind, e->pid);
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
  /* Metadata: one msgpack map, {"host": "a"}. */
  static const unsigned char meta[] = {0x81, 0xa4, 'h', 'o', 's', 't',
                                       0xa1, 'a'};
  if (jb_entity_register(board, "worker-1", "worker", meta, sizeof meta) !=
      JB_OK) {
    fprintf(stderr, "register: %s\n", jb_errmsg());
    jb_board_close(board);
    return 1;
  }
  jb_entity_list(board, print_entity, NULL);
  jb_entity_unregister(board, "worker-1");
  jb_board_close(board);
  return 0;
}
