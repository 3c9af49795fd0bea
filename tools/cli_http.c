/*
 * cli_http.c - the listening socket, the server's life and a buffer reply,
 * for the commands that serve HTTP with libmicrohttpd (cli_http.h).
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include "cli_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

/* 127.0.0.0/8, ::1, or ::ffff:127.x.y.z. */
static bool is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(a)) return true;
    return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
  }
  return false;
}

static unsigned bound_port(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return 0;
  if (ss.ss_family == AF_INET)
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  if (ss.ss_family == AF_INET6)
    return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return 0;
}

int cli_http_listen(const cli_command *cmd, const char *spec,
                    bool loopback_only, const char *why,
                    cli_http_addr *where) {
  const char *colon = strrchr(spec, ':');
  if (colon == NULL || colon[1] == 0)
    return cli_cmd_usage(cmd, "--listen %s: give ADDR:PORT (127.0.0.1:%s)",
                         spec, strcmp(cmd->name, "metrics") == 0 ? "9464"
                                                                 : "8080"),
           -1;
  /* getaddrinfo takes any number and wraps it (99999 is 34463). */
  const char *port = colon + 1;
  size_t pl = strspn(port, "0123456789");
  if (port[pl] != 0 || pl > 5 || strtoul(port, NULL, 10) > 65535)
    return cli_cmd_usage(cmd, "--listen %s: the port is a number from 0 to "
                              "65535 (0: a free one)", spec),
           -1;
  char *host = where->host;
  size_t hl = (size_t)(colon - spec);
  if (hl >= sizeof where->host)
    return cli_cmd_usage(cmd, "--listen: address too long"), -1;
  memcpy(host, spec, hl);
  host[hl] = 0;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    memmove(host, host + 1, hl - 2);
    host[hl - 2] = 0;
  }
  if (loopback_only && host[0] == 0)
    return cli_cmd_usage(cmd, "--listen %s: that is every address, not a "
                              "loopback one; %s", spec, why),
           -1;
  /* A host name other than localhost is refused: what it resolves to is
   * up to a resolver (and can change), and the server's Host check takes
   * loopback addresses and localhost only. */
  unsigned char numeric[sizeof(struct in6_addr)];
  if (loopback_only && strcasecmp(host, "localhost") != 0 &&
      inet_pton(AF_INET, host, numeric) != 1 &&
      inet_pton(AF_INET6, host, numeric) != 1)
    return cli_cmd_usage(cmd, "--listen %s: give a numeric loopback address "
                              "or localhost, not a host name; %s",
                         spec, why),
           -1;
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
  struct addrinfo *ai = NULL;
  int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
  if (g != 0)
    return cli_cmd_usage(cmd, "--listen %s: %s", spec, gai_strerror(g)), -1;
  if (loopback_only)
    for (struct addrinfo *a = ai; a; a = a->ai_next)
      if (!is_loopback(a->ai_addr)) {
        freeaddrinfo(ai);
        return cli_cmd_usage(cmd, "--listen %s: not a loopback address; %s",
                             spec, why),
               -1;
      }
  int fd = -1, err = 0;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 64) == 0)
      break;
    err = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(ai);
  if (fd < 0) {
    cli_cmd_usage(cmd, "--listen %s: %s", spec,
                  err == EADDRINUSE ? "the address is in use (another "
                                      "process listens on that port)"
                                    : strerror(err));
    return -1;
  }
  where->port = bound_port(fd);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  where->loopback = where->any = false;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
    where->loopback = is_loopback((struct sockaddr *)&ss);
    where->any =
        ss.ss_family == AF_INET
            ? ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_ANY)
            : IN6_IS_ADDR_UNSPECIFIED(&((struct sockaddr_in6 *)&ss)->sin6_addr);
  }
  return fd;
}

int cli_http_serve(int fd, const cli_http_server *s, const char *url) {
  /* SIGINT and SIGTERM are taken with sigwait, here: blocked before the
   * server's threads start, so they inherit the mask and never get them. */
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (s->thread_per_connection) flags |= MHD_USE_THREAD_PER_CONNECTION;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, s->handler, s->cls, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s,
      MHD_OPTION_CONNECTION_LIMIT, s->connection_limit,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, s->memory_limit,
      MHD_OPTION_NOTIFY_COMPLETED, s->completed, s->cls, MHD_OPTION_END);
  if (d == NULL) {
    close(fd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    fprintf(stderr, "jobboard: %s: the HTTP server did not start\n",
            s->what);
    return CLI_EXIT_ERROR;
  }
  fprintf(stderr, "jobboard: %s: listening on %s\n", s->what, url);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  if (s->stopping) s->stopping(s->cls);
  MHD_stop_daemon(d); /* closes the listening socket too */
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return CLI_EXIT_OK;
}

/* The start of the request this thread handles (0: not timed). A thread
 * handles one request from its start to its queued response. */
static _Thread_local struct timespec timing_start;

void cli_http_timing_start(void) {
  clock_gettime(CLOCK_MONOTONIC, &timing_start);
}

void cli_http_timing(struct MHD_Response *r) {
  if (timing_start.tv_sec == 0 && timing_start.tv_nsec == 0) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double ms = (double)(now.tv_sec - timing_start.tv_sec) * 1e3 +
              (double)(now.tv_nsec - timing_start.tv_nsec) / 1e6;
  char v[48];
  snprintf(v, sizeof v, "app;dur=%.1f", ms);
  MHD_add_response_header(r, "Server-Timing", v);
}

enum MHD_Result cli_http_reply(struct MHD_Connection *conn, unsigned code,
                               const char *type, char *body, size_t len,
                               bool owned, const char *const *headers) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (r == NULL) {
    if (owned) free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  for (size_t i = 0; headers && headers[i]; i += 2)
    MHD_add_response_header(r, headers[i], headers[i + 1]);
  cli_http_timing(r);
  enum MHD_Result ret = MHD_queue_response(conn, code, r);
  MHD_destroy_response(r);
  return ret;
}

#endif /* JB_WITH_MICROHTTPD */
