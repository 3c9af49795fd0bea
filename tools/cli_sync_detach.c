/*
 * cli_sync_detach.c - `jobboard sync --detach` (the board forgets its
 * Redis and keeps its jobs as local ones: jb_sync_board_detach), and the
 * lines `jobboard sync` and `jobboard status` print about the namespace
 * and past detaches.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef JB_WITH_REDIS

#include "jobboard_sync.h"

int cli_sync_detach(const cli_command *cmd, cli_opts *o) {
  /* Checked before the board is opened: nothing else goes with it. */
  const char *other = o->redis ? "--redis" : o->ns ? "--namespace"
                      : o->poll_ms ? "--poll" : o->keepalive_ms ? "--keepalive"
                      : o->verify_ms ? "--verify-every" : NULL;
  if (other)
    return cli_cmd_usage(cmd, "--detach takes no %s: it forgets the board's "
                         "redis (sync again afterwards to choose another)",
                         other);
  jb_board *b = NULL;
  int rc = cli_open(&b, o, 0);
  if (rc != 0) return rc;
  jb_sync_detach_result r;
  int st = jb_sync_board_detach(&r, b);
  jb_board_close(b);
  if (st == JB_ENOTFOUND || st == JB_ECLAIMED) {
    /* Nothing changed: not synced, or a replicator runs on it. */
    cli_fail(st);
    return CLI_EXIT_USAGE;
  }
  if (st != JB_OK) return cli_fail(st);
  if (o->json) {
    json_t *v = json_pack("{s:b,s:s,s:s,s:I,s:I,s:I,s:I}", "detached", 1,
                          "url", r.url, "namespace", r.ns, "jobs",
                          (json_int_t)r.jobs, "released",
                          (json_int_t)r.released, "kept", (json_int_t)r.kept,
                          "dead_letters", (json_int_t)r.letters);
    return cli_json_print(v) != 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
  }
  printf("detached board %s from %s, namespace %s: %zu jobs are local now "
         "(%zu claims released, %zu kept by live workers of this host), "
         "%zu dead letters kept\n", cli_board_dir(o->board), r.url, r.ns,
         r.jobs, r.released, r.kept, r.letters);
  return ferror(stdout) ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

void cli_sync_say_namespace(jb_board *b, const cli_opts *o, const char *ns) {
  jb_sync_status st;
  if (o->ns || getenv("JOBBOARD_NAMESPACE") ||
      jb_sync_status_read(&st, b) != JB_OK || st.ns[0])
    return; /* given, or the board's own already */
  fprintf(stderr, "jobboard: using namespace %s (the default; --namespace "
          "to choose)\n", ns);
}

char *cli_sync_last_detach(jb_board *b) {
  char *all = NULL;
  if (jb_sync_board_detached(&all, b) != JB_OK || all == NULL) return NULL;
  size_t n = strlen(all);
  while (n && all[n - 1] == '\n') all[--n] = '\0';
  char *last = strrchr(all, '\n');
  if (last) memmove(all, last + 1, strlen(last + 1) + 1);
  return all;
}

#endif /* JB_WITH_REDIS */
