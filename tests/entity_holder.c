/*
 * entity_holder.c - for tests/cli.sh: a process that registers an entity
 * and holds it, since the CLI has no command that could (an entity is
 * bound to its process, and a one-shot command is gone at once).
 *
 *   entity_holder DIR NAME KIND [META-HEX]
 *
 * Opens the board in DIR, registers NAME of KIND with the metadata given
 * as hex digits of msgpack (none: the empty map), prints "ready" on
 * stdout, then waits until stdin is closed, unregisters and exits 0. A
 * test kills it to see the entity vanish. Exit 1 with a message on
 * stderr when something fails.
 */
#include "jobboard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what) {
  fprintf(stderr, "entity_holder: %s: %s\n", what, jb_errmsg());
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 5) {
    fputs("usage: entity_holder DIR NAME KIND [META-HEX]\n", stderr);
    return 2;
  }
  unsigned char meta[512];
  size_t meta_len = 0;
  const char *hex = argc == 5 ? argv[4] : "";
  for (; hex[0] && hex[1] && meta_len < sizeof meta; hex += 2) {
    unsigned v;
    if (sscanf(hex, "%2x", &v) != 1) break;
    meta[meta_len++] = (unsigned char)v;
  }
  if (hex[0]) {
    fputs("entity_holder: META-HEX: not an even number of hex digits\n",
          stderr);
    return 2;
  }
  jb_board *b = NULL;
  if (jb_board_open(&b, argv[1], NULL) != JB_OK) return fail("open");
  if (jb_entity_register(b, argv[2], argv[3], meta_len ? meta : NULL,
                         meta_len) != JB_OK)
    return fail("register");
  puts("ready");
  fflush(stdout);
  char buf[64];
  while (read(0, buf, sizeof buf) > 0) {
  }
  if (jb_entity_unregister(b, argv[2]) != JB_OK) return fail("unregister");
  jb_board_close(b);
  return 0;
}
