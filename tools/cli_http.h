/*
 * cli_http.h - what the commands that serve HTTP share (`metrics
 * --listen`, `web`): the listening socket, the server's life until
 * SIGINT or SIGTERM, and a reply from a buffer. Built only with
 * libmicrohttpd (JB_WITH_MICROHTTPD in config.h).
 */
#ifndef JOBBOARD_CLI_HTTP_H
#define JOBBOARD_CLI_HTTP_H

#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli_common.h"

/* Where a listening socket is bound: the address as given (without the
 * brackets of an IPv6 one) and the port, the one the kernel picked for
 * port 0 too. */
typedef struct {
  char host[256];
  unsigned port;
  bool loopback; /* bound to a loopback address */
  bool any;      /* bound to every address (0.0.0.0, [::], or ADDR empty) */
} cli_http_addr;

/*
 * A listening socket on `spec` (ADDR:PORT; ADDR a host name, an IPv4
 * address, [IPv6 address], or empty for every address). With
 * `loopback_only`, an address that is not (or does not resolve only to)
 * a loopback one is refused, and `why` ends the message saying so. The
 * socket, with *where filled in, or -1 after printing the usage message
 * of `cmd` (the caller exits CLI_EXIT_USAGE). Call it before the board
 * is opened: a bad address changes nothing.
 */
int cli_http_listen(const cli_command *cmd, const char *spec,
                    bool loopback_only, const char *why,
                    cli_http_addr *where);

/* How cli_http_serve runs the server. */
typedef struct {
  const char *what;        /* the command, for messages: "metrics" */
  MHD_AccessHandlerCallback handler;
  void *cls;               /* the handler's */
  bool thread_per_connection; /* else one thread polls every connection */
  unsigned connection_limit;  /* connections at once; one more is
                                 closed as it comes */
  size_t memory_limit;        /* per connection: bounds a request's line
                                 and headers (beyond it: 431) */
  unsigned timeout_s;         /* an idle connection is closed after it */
  void (*stopping)(void *cls); /* at SIGINT or SIGTERM, before the server
                                  stops: end what would keep a handler
                                  waiting (may be NULL) */
  MHD_RequestCompletedCallback completed; /* a request ended, answered or
                                             not: free what the handler
                                             kept in *con_cls (may be
                                             NULL); called with cls */
} cli_http_server;

/*
 * Serve on socket `fd` (cli_http_listen's; closed here) until SIGINT or
 * SIGTERM, saying "jobboard: WHAT: listening on URL" on stderr once
 * started. Returns CLI_EXIT_OK, or CLI_EXIT_ERROR after saying the server
 * did not start.
 */
int cli_http_serve(int fd, const cli_http_server *s, const char *url);

/* Queue a response of `len` bytes of `body` with status `code` and
 * Content-Type `type`; `owned`: `body` is malloc'ed and freed here (also
 * when it cannot be sent), else it is static. `headers`: NULL, or pairs
 * of header name and value ended by a NULL name. */
enum MHD_Result cli_http_reply(struct MHD_Connection *conn, unsigned code,
                               const char *type, char *body, size_t len,
                               bool owned, const char *const *headers);

#endif /* JB_WITH_MICROHTTPD */
#endif
