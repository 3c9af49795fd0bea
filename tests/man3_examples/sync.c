/* Share a board through Redis: connect, attach, publish a job, and ask
 * for the sync state. Usage: sync BOARD [redis://host:port/db] */
#include <jobboard_sync.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  const char *dir = argc > 1 ? argv[1] : "example.board";
  const char *url = argc > 2 ? argv[2] : "redis://127.0.0.1:6379/0";

  jb_sync_url *parsed;
  if (jb_sync_url_parse(&parsed, url) != JB_OK) {
    fprintf(stderr, "%s\n", jb_errmsg());
    return 2;
  }
  printf("host %s port %d db %d\n", parsed->host ? parsed->host : "-",
         parsed->port, parsed->db);
  jb_sync_url_free(parsed);

  jb_sync_options so;
  so = (jb_sync_options)JB_SYNC_OPTIONS_INIT;
  so.url = url;
  so.ns = "example";
  jb_sync_conn *conn;
  int rc = jb_sync_connect(&conn, &so);
  if (rc != JB_OK) {
    /* JB_EOFFLINE: try later; JB_EINVAL: fix the configuration. */
    fprintf(stderr, "%s\n", jb_errmsg());
    return rc == JB_EOFFLINE ? 0 : 2;
  }
  printf("Redis %s, namespace %s\n", jb_sync_server_version(conn),
         jb_sync_namespace(conn));

  jb_board_options opts = JB_BOARD_OPTIONS_INIT;
  opts.flags = JB_OPEN_CREATE;
  jb_board *board;
  if (jb_board_open(&board, dir, &opts) != JB_OK ||
      jb_sync_attach(board, conn) != JB_OK) {
    fprintf(stderr, "%s\n", jb_errmsg());
    jb_board_close(board);
    jb_sync_close(conn);
    return 1;
  }
  jb_post post = JB_POST_INIT;
  post.name = "shared-job";
  char uuid[JB_UUID_STRLEN];
  if (jb_job_post(uuid, board, &post) == JB_OK &&
      jb_sync_publish(board, conn, uuid) == JB_OK)
    printf("published %s: Redis decides who owns it now\n", uuid);

  jb_sync_status st;
  if (jb_sync_status_read(&st, board) == JB_OK)
    printf("replicator running: %s, %llu unpublished\n",
           st.running ? "yes" : "no", (unsigned long long)st.unpublished);
  jb_sync_detach(board);
  jb_board_close(board);
  jb_sync_close(conn);
  return 0;
}
