/*
 * cmd_entities.c - `jobboard entities`: the workers and conductors that
 * registered on the board and are still running.
 *
 * There is no `jobboard register`: an entity is bound to the process that
 * registers it, and a one-shot command would be gone, its entity with it,
 * before anyone could list it. Programs register through the library
 * (jb_entity_register); the demo's workers do.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>

const cli_command cli_cmd_entities = {
    "entities", "list the workers and conductors registered and running",
    "Usage: jobboard entities [OPTIONS]\n"
    "\n"
    "List the entities (workers, conductors) registered on the board whose\n"
    "processes are running, in name order (bytewise). A program registers\n"
    "itself through the library (jb_entity_register) with a name, a kind\n"
    "and metadata, and the entity is bound to its process: once the process\n"
    "is gone (it exited, was killed, or the host rebooted) the entity is no\n"
    "longer listed, whether or not it unregistered, and the next\n"
    "registration on the board removes its record. The workers of\n"
    "`jobboard demo` register as demo-worker-N of kind worker while they\n"
    "run.\n"
    "\n"
    "Each entity is one line of text, fields separated by two spaces:\n"
    "  NAME  KIND  PID  REGISTERED  METADATA\n"
    "where REGISTERED is ISO-8601 UTC with microseconds, METADATA is\n"
    "compact JSON, and control characters in the name or kind are written\n"
    "as C escapes (\\n, \\t, \\x01). Nothing is printed when no entity is\n"
    "running.\n"
    "With --json, each entity is one JSON object:\n"
    "  {\"name\": \"worker-1\", \"kind\": \"worker\", \"pid\": 4242,\n"
    "   \"registered\": \"2024-01-02T03:04:05.000006Z\", \"meta\": {...}}\n"
    "Metadata values JSON has no word for are tagged as `jobboard show\n"
    "--help` describes ({\"$bin\": \"<base64>\"}, ...).\n"
    "\n"
    "Options:\n"
    CLI_HELP_BOARD_OPTIONS
    "\n"
    CLI_HELP_ENV
    "\n"
    CLI_HELP_EXIT_COMMON "\n"
    "\n"
    "Examples:\n"
    "  jobboard entities\n"
    "  jobboard entities --json | python3 -c 'import json,sys; "
    "print(sum(json.loads(l)[\"kind\"] == \"worker\" for l in sys.stdin))'\n",
    0, 0, 0, ""};

typedef struct {
  int json;
  int failed; /* out of memory, or a line could not be written */
} entities_out;

static int print_text(const jb_entity *e) {
  char registered[40];
  cli_format_time(registered, sizeof registered, e->registered_us);
  json_t *meta = cli_msgpack_to_json(e->meta, e->meta_len);
  char *text = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
  json_decref(meta);
  if (text == NULL) return -1;
  cli_put_text(stdout, e->name);
  fputs("  ", stdout);
  cli_put_text(stdout, e->kind);
  printf("  %d  %s  ", e->pid, registered);
  cli_put_text(stdout, text);
  free(text);
  return putchar('\n') == EOF ? -1 : 0;
}

static int on_entity(const jb_entity *e, void *payload) {
  entities_out *out = payload;
  int rc = out->json ? cli_json_print(cli_entity_to_json(e)) : print_text(e);
  if (rc != 0) out->failed = 1;
  return rc != 0; /* stop at the first failure */
}

int cmd_entities(int argc, char **argv) {
  cli_opts o;
  int rc = cli_parse(&o, &cli_cmd_entities, argc, argv);
  if (rc != CLI_CONTINUE) return rc;
  jb_board *b = NULL;
  if ((rc = cli_open(&b, &o, 0)) != 0) return rc;
  entities_out out = {o.json, 0};
  int st = jb_entity_list(b, on_entity, &out);
  if (st != JB_OK)
    rc = cli_fail(st);
  else if (out.failed) /* main reports a failed write to stdout */
    rc = CLI_EXIT_ERROR;
  jb_board_close(b);
  return rc;
}
