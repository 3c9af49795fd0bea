/*
 * web_actions.c - `jobboard web --actions`: the token, the login and its
 * sessions, and POST /action, each action one of the board's writes that
 * a CLI command also makes. Safe by default: without --actions no form is
 * written and every POST /action is refused; with it an action needs a
 * session (a login with the token) and the session's csrf value in the
 * form, and a request that names another site as its Origin is refused.
 * The threat model is in docs/DESIGN-NOTES.md ("jobboard web: actions").
 */
#include "config.h"

#ifdef JB_WITH_MICROHTTPD

#include "cli_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_http.h"
#include "web.h"
#include "web_html.h"

#define TOKEN_MIN 16      /* characters of a --token-file token, at least */
#define TOKEN_MAX 256
#define SESSIONS_MAX 64   /* sessions kept; a login beyond evicts the oldest */
#define SESSION_IDLE_S (12 * 3600) /* a session unused this long ends */
#define BODY_MAX (64 * 1024)       /* a POST's body, bytes */
#define FIELDS_MAX 1100            /* its fields */
#define VALUE_MAX 4096             /* one field's value, bytes */
#define ALL_MAX 10000              /* jobs or letters one "all" request acts on */
#define BACK_MAX 512               /* a back or next path, bytes */
#define FLASH_MAX 1024
#define WRONG_TOKEN_DELAY_MS 500

typedef struct {
  char id[33];   /* the cookie's value, 128 random bits in hex */
  char csrf[33]; /* the forms' csrf value, another 128 */
  int64_t used_ms;
  char flash[FLASH_MAX]; /* the last action's result, shown once */
  bool live;
} session;

static struct {
  char token[TOKEN_MAX + 1];
  size_t token_len;   /* 0: no token (no login) */
  bool token_printed; /* a random one, to print once */
  bool asked;         /* --actions given */
  bool actions;       /* actions allowed: --actions on a writable board */
  bool need_session;  /* not on loopback: every page needs a session */
  bool any_host;      /* bound to every address: the Host is not checked */
  bool readonly;      /* the board is open read-only */
  pthread_mutex_t mu;
  session s[SESSIONS_MAX];
} A = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The request being answered on this thread (a thread per connection):
 * what the page's forms carry. */
static _Thread_local char tl_csrf[33]; /* "" when no form may be written */
static _Thread_local char tl_sid[33];  /* the session, "" when none */
static _Thread_local char tl_back[BACK_MAX];

static int64_t mono_ms(void) { return cli_mono_ms(); }

/* n random bytes as 2n hex digits into out (2n + 1 bytes). */
static int random_hex(char *out, size_t n) {
  unsigned char b[32];
  if (n > sizeof b) return -1;
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom(b + got, n - got, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return -1;
      k = read(fd, b + got, n - got);
      close(fd);
      if (k <= 0) return -1;
    }
    got += (size_t)k;
  }
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
  return 0;
}

/* Equal, in a time that does not depend on where they differ. */
static bool same_secret(const char *given, size_t given_len, const char *want,
                        size_t want_len) {
  unsigned d = given_len != want_len;
  for (size_t i = 0; i < want_len; i++)
    d |= (unsigned char)want[i] ^
         (unsigned char)(i < given_len ? given[i] : 0);
  return d == 0;
}

/* ---------------------------------------------------------- setup */

int web_auth_init(const cli_command *cmd, bool actions,
                  const char *token_file) {
  A.asked = actions;
  if (token_file) {
    int fd = open(token_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return cli_cmd_usage(cmd, "--token-file %s: %s", token_file,
                           strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return cli_cmd_usage(cmd, "--token-file %s: not a regular file",
                           token_file);
    }
    if (st.st_mode & 077) {
      close(fd);
      return cli_cmd_usage(cmd,
                           "--token-file %s: others can read it (mode %03o); "
                           "chmod 600 it: the token lets anyone act on the "
                           "board",
                           token_file, (unsigned)(st.st_mode & 0777));
    }
    char buf[TOKEN_MAX + 2];
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k < 0)
      return cli_cmd_usage(cmd, "--token-file %s: %s", token_file,
                           strerror(errno));
    buf[k] = 0;
    size_t n = strcspn(buf, "\r\n");
    if (n > TOKEN_MAX)
      return cli_cmd_usage(cmd, "--token-file %s: the token is longer than "
                                "%d characters", token_file, TOKEN_MAX);
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
        return cli_cmd_usage(cmd, "--token-file %s: the token holds a "
                                  "control character", token_file);
    if (n < TOKEN_MIN)
      return cli_cmd_usage(cmd, "--token-file %s: the token (its first "
                                "line) is %zu characters; use at least %d "
                                "(e.g. head -c 16 /dev/urandom | xxd -p)",
                           token_file, n, TOKEN_MIN);
    memcpy(A.token, buf, n);
    A.token[n] = 0;
    A.token_len = n;
  } else if (actions) {
    if (random_hex(A.token, 16) != 0) {
      fprintf(stderr, "jobboard: web: no random token could be made\n");
      return CLI_EXIT_ERROR;
    }
    A.token_len = 32;
    A.token_printed = true;
  }
  return 0;
}

bool web_auth_has_token(void) { return A.token_len > 0; }

void web_auth_start(jb_board *b, bool loopback, bool any) {
  A.need_session = !loopback;
  A.any_host = any;
  A.readonly = jb_board_readonly(b) != 0;
  A.actions = A.asked && !A.readonly;
  if (A.asked && A.readonly)
    fprintf(stderr, "jobboard: web: the board is open read-only (this "
                    "process cannot write it): --actions is off, the pages "
                    "are read-only\n");
  if (A.token_printed)
    fprintf(stderr, "jobboard: web: token: %s\n", A.token);
}

bool web_any_host(void) { return A.any_host; }

/* ---------------------------------------------------------- sessions */

/* The session of the request's cookie, copied to *out; false when none. */
static bool session_of(struct MHD_Connection *conn, session *out) {
  const char *id =
      MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "jb_session");
  if (id == NULL || strlen(id) != 32) return false;
  bool found = false;
  int64_t now = mono_ms();
  pthread_mutex_lock(&A.mu);
  for (size_t i = 0; i < SESSIONS_MAX && !found; i++) {
    session *s = &A.s[i];
    if (!s->live) continue;
    if (now - s->used_ms > (int64_t)SESSION_IDLE_S * 1000) {
      s->live = false;
      continue;
    }
    if (same_secret(id, 32, s->id, 32)) {
      s->used_ms = now;
      *out = *s;
      found = true;
    }
  }
  pthread_mutex_unlock(&A.mu);
  return found;
}

/* A new session, into *out; the oldest goes when all are taken. */
static int session_new(session *out) {
  session n = {.live = true, .used_ms = mono_ms()};
  if (random_hex(n.id, 16) != 0 || random_hex(n.csrf, 16) != 0) return -1;
  pthread_mutex_lock(&A.mu);
  size_t slot = 0;
  for (size_t i = 0; i < SESSIONS_MAX; i++) {
    if (!A.s[i].live) {
      slot = i;
      break;
    }
    if (A.s[i].used_ms < A.s[slot].used_ms) slot = i;
  }
  A.s[slot] = n;
  pthread_mutex_unlock(&A.mu);
  *out = n;
  return 0;
}

static void session_end(const char *id) {
  pthread_mutex_lock(&A.mu);
  for (size_t i = 0; i < SESSIONS_MAX; i++)
    if (A.s[i].live && strcmp(A.s[i].id, id) == 0) A.s[i].live = false;
  pthread_mutex_unlock(&A.mu);
}

/* Keep `msg` as the session's next page's message. */
static void session_flash(const char *id, const char *msg) {
  pthread_mutex_lock(&A.mu);
  for (size_t i = 0; i < SESSIONS_MAX; i++)
    if (A.s[i].live && strcmp(A.s[i].id, id) == 0)
      snprintf(A.s[i].flash, sizeof A.s[i].flash, "%s", msg);
  pthread_mutex_unlock(&A.mu);
}

/* Take the session's message (once). */
static void session_take_flash(const char *id, char *out, size_t cap) {
  out[0] = 0;
  pthread_mutex_lock(&A.mu);
  for (size_t i = 0; i < SESSIONS_MAX; i++)
    if (A.s[i].live && strcmp(A.s[i].id, id) == 0) {
      snprintf(out, cap, "%s", A.s[i].flash);
      A.s[i].flash[0] = 0;
    }
  pthread_mutex_unlock(&A.mu);
}

/* ---------------------------------------------------------- replies */

/* Reply with `body` (malloc'ed, freed here), the security headers and
 * `extra` (pairs, NULL-ended; may be NULL). */
enum MHD_Result web_reply(struct MHD_Connection *conn, unsigned code,
                          const char *type, char *body, size_t len,
                          bool owned, const char *const *extra) {
  const char *h[40];
  size_t n = 0;
  for (size_t i = 0; web_security_headers[i] && n < 30; i += 2) {
    h[n++] = web_security_headers[i];
    h[n++] = web_security_headers[i + 1];
  }
  for (size_t i = 0; extra && extra[i] && n < 38; i += 2) {
    h[n++] = extra[i];
    h[n++] = extra[i + 1];
  }
  h[n] = NULL;
  return cli_http_reply(conn, code, type, body, len, owned, h);
}

/* A page titled `title` whose body `fill` writes (or, fill NULL, says
 * `msg`), with status `code`. */
static enum MHD_Result reply_page(struct MHD_Connection *conn, unsigned code,
                                  const char *title, const char *msg,
                                  void (*fill)(FILE *, void *), void *arg,
                                  const char *const *extra) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL) return MHD_NO;
  web_page_begin(f, title, NULL);
  if (fill) fill(f, arg);
  else {
    fputs("<p class=\"refused\">", f);
    web_esc(f, msg);
    fputs("</p><p><a href=\"/\">The overview</a></p>\n", f);
  }
  web_page_end(f);
  if (fclose(f) != 0) {
    free(buf);
    return MHD_NO;
  }
  return web_reply(conn, code, "text/html; charset=utf-8", buf, len, true,
                   extra);
}

static enum MHD_Result reply_303(struct MHD_Connection *conn,
                                 const char *where, const char *cookie) {
  static char empty[] = "";
  const char *h[] = {"Location", where, cookie ? "Set-Cookie" : NULL, cookie,
                     NULL};
  return web_reply(conn, MHD_HTTP_SEE_OTHER, "text/plain; charset=utf-8",
                   empty, 0, false, h);
}

/* A local path to go back to: "/..." without "//", a backslash, or a
 * byte outside printable ASCII (so neither another site nor a header
 * break). */
static bool local_path(const char *p) {
  if (p == NULL || p[0] != '/' || p[1] == '/' || strlen(p) >= BACK_MAX)
    return false;
  for (const char *c = p; *c; c++)
    if (*c <= 0x20 || *c >= 0x7f || *c == '\\') return false;
  return true;
}

static void client_addr(struct MHD_Connection *conn, char *out, size_t cap) {
  snprintf(out, cap, "?");
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (ci == NULL || ci->client_addr == NULL) return;
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
              (socklen_t)cap);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
              (socklen_t)cap);
}

/* Origin, when the browser sends it, names this server: "http://" and
 * the Host header. */
static bool origin_ok(struct MHD_Connection *conn) {
  const char *o = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              "Origin");
  if (o == NULL) return true;
  const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_HOST);
  return h && strncmp(o, "http://", 7) == 0 && strcasecmp(o + 7, h) == 0;
}

/* ---------------------------------------------------------- the page's
 * forms */

/* The page's own path and query, re-encoded, for the forms' back field. */
static enum MHD_Result back_arg(void *cls, enum MHD_ValueKind kind,
                                const char *key, const char *value) {
  (void)kind;
  FILE *f = cls;
  fputc('&', f);
  web_url_esc(f, key);
  if (value) {
    fputc('=', f);
    web_url_esc(f, value);
  }
  return MHD_YES;
}

static void set_back(struct MHD_Connection *conn, const char *url) {
  char *q = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&q, &len);
  if (f) {
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, back_arg, f);
    fclose(f);
  }
  /* back_arg starts each argument with '&': the first becomes '?'. */
  if (q && len) q[0] = '?';
  if (q == NULL || snprintf(tl_back, sizeof tl_back, "%s%s", url, q) >=
                       (int)sizeof tl_back)
    snprintf(tl_back, sizeof tl_back, "%s", url);
  free(q);
  if (!local_path(tl_back)) snprintf(tl_back, sizeof tl_back, "/");
}

static void hidden(FILE *f, const char *key, const char *value) {
  fprintf(f, "<input type=\"hidden\" name=\"%s\" value=\"", key);
  web_esc(f, value);
  fputs("\">", f);
}

static void vform(FILE *f, const char *op, const char *label,
                  const char *confirm, va_list ap) {
  if (tl_csrf[0] == 0) return;
  fputs("<form class=\"action\" method=\"post\" action=\"/action\">", f);
  hidden(f, "csrf", tl_csrf);
  hidden(f, "back", tl_back);
  const char *k;
  while ((k = va_arg(ap, const char *)) != NULL) {
    const char *v = va_arg(ap, const char *);
    if (v) hidden(f, k, v);
  }
  if (confirm) {
    fputs("<label><input type=\"checkbox\" name=\"confirm\" value=\"1\"> ",
          f);
    web_esc(f, confirm);
    fputs("</label> ", f);
  }
  fprintf(f, "<button name=\"op\" value=\"%s\">", op);
  web_esc(f, label);
  fputs("</button></form>", f);
}

void web_action_form(FILE *f, const char *op, const char *label, ...) {
  va_list ap;
  va_start(ap, label);
  vform(f, op, label, NULL, ap);
  va_end(ap);
}

void web_action_confirm_form(FILE *f, const char *op, const char *label,
                             const char *confirm, ...) {
  va_list ap;
  va_start(ap, confirm);
  vform(f, op, label, confirm, ap);
  va_end(ap);
}

bool web_actions_on(void) { return tl_csrf[0] != 0; }

/* The notes of a page after its heading: the last action's result, or how
 * to act. */
static void notes(FILE *f) {
  if (A.readonly) {
    fputs("<p class=\"note\">The board is open read-only (this process "
          "cannot write it): no actions.</p>\n", f);
  } else if (!A.asked) {
    fputs("<p class=\"note\">Read-only: start <code>jobboard web "
          "--actions</code> to act on the board from these pages.</p>\n", f);
  } else if (tl_sid[0] == 0) {
    fputs("<p class=\"note\"><a href=\"/login\">Log in</a> with the token "
          "to act on the board.</p>\n", f);
  }
  if (tl_sid[0]) {
    char flash[FLASH_MAX];
    session_take_flash(tl_sid, flash, sizeof flash);
    if (flash[0]) {
      fputs("<p class=\"flash\" id=\"flash\" role=\"status\">", f);
      web_esc(f, flash);
      fputs("</p>\n", f);
    }
    fputs("<form class=\"action logout\" method=\"post\" "
          "action=\"/logout\">", f);
    hidden(f, "csrf", tl_csrf[0] ? tl_csrf : "");
    fputs("<button id=\"logout\">log out</button></form>\n", f);
  }
}

void web_page_notes(web_page *p) {
  static const char mark[] = "</h1>\n";
  char *at = p->buf ? strstr(p->buf, mark) : NULL;
  if (at == NULL) return;
  char *add = NULL;
  size_t add_len = 0;
  FILE *f = open_memstream(&add, &add_len);
  if (f == NULL) return;
  notes(f);
  if (fclose(f) != 0 || add_len == 0) {
    free(add);
    return;
  }
  size_t head = (size_t)(at - p->buf) + sizeof mark - 1;
  char *n = malloc(p->len + add_len + 1);
  if (n) {
    memcpy(n, p->buf, head);
    memcpy(n + head, add, add_len);
    memcpy(n + head + add_len, p->buf + head, p->len - head + 1);
    free(p->buf);
    p->buf = n;
    p->len += add_len;
  }
  free(add);
}

/* ---------------------------------------------------------- POST bodies */

typedef struct {
  char *key, *value;
  size_t len;
} field;

typedef enum { POST_LOGIN, POST_LOGOUT, POST_ACTION } post_kind;

typedef struct {
  post_kind kind;
  struct MHD_PostProcessor *pp;
  size_t got;
  bool too_big;
  field *f;
  size_t n, cap;
} post_req;

static void post_free(post_req *r) {
  if (r == NULL) return;
  if (r->pp) MHD_destroy_post_processor(r->pp);
  for (size_t i = 0; i < r->n; i++) {
    free(r->f[i].key);
    free(r->f[i].value);
  }
  free(r->f);
  free(r);
}

static enum MHD_Result post_iter(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *filename,
                                 const char *content_type,
                                 const char *transfer_encoding,
                                 const char *data, uint64_t off,
                                 size_t size) {
  (void)kind, (void)filename, (void)content_type, (void)transfer_encoding;
  post_req *r = cls;
  field *fl = NULL;
  if (off > 0 && r->n && strcmp(r->f[r->n - 1].key, key) == 0)
    fl = &r->f[r->n - 1];
  if (fl == NULL) {
    if (r->n == FIELDS_MAX) return r->too_big = true, MHD_NO;
    if (r->n == r->cap) {
      size_t c = r->cap ? r->cap * 2 : 16;
      field *g = realloc(r->f, c * sizeof *g);
      if (g == NULL) return r->too_big = true, MHD_NO;
      r->f = g;
      r->cap = c;
    }
    fl = &r->f[r->n++];
    fl->key = strdup(key);
    fl->value = calloc(1, 1);
    fl->len = 0;
    if (fl->key == NULL || fl->value == NULL) return r->too_big = true, MHD_NO;
  }
  if (fl->len + size > VALUE_MAX) return r->too_big = true, MHD_NO;
  char *v = realloc(fl->value, fl->len + size + 1);
  if (v == NULL) return r->too_big = true, MHD_NO;
  memcpy(v + fl->len, data, size);
  fl->len += size;
  v[fl->len] = 0;
  fl->value = v;
  return MHD_YES;
}

/* The first value of `key`, NULL when absent. */
static const char *fv(const post_req *r, const char *key) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->f[i].key, key) == 0) return r->f[i].value;
  return NULL;
}

/* Present and not empty. */
static const char *fv1(const post_req *r, const char *key) {
  const char *v = fv(r, key);
  return v && v[0] ? v : NULL;
}

/* ---------------------------------------------------------- login */

static void login_form(FILE *f, void *arg) {
  const char *next = arg;
  if (A.token_len == 0)
    fputs("<p class=\"note\">This server has no token: start it with "
          "<code>--actions</code> (a token is printed) or "
          "<code>--token-file FILE</code> to log in.</p>\n", f);
  fputs("<form class=\"login\" method=\"post\" action=\"/login\">"
        "<label>token <input type=\"password\" name=\"token\" id=\"token\" "
        "autocomplete=\"current-password\" required></label>", f);
  if (next) hidden(f, "next", next);
  fputs("<button id=\"login\">log in</button></form>\n"
        "<p>The token is the one <code>jobboard web</code> printed on "
        "stderr (<code>jobboard: web: token: ...</code>) or the first line "
        "of its <code>--token-file</code>.</p>\n", f);
}

static enum MHD_Result do_login(struct MHD_Connection *conn,
                                const post_req *r) {
  char addr[64];
  client_addr(conn, addr, sizeof addr);
  const char *tok = fv(r, "token");
  if (A.token_len == 0 || tok == NULL ||
      !same_secret(tok, strlen(tok), A.token, A.token_len)) {
    fprintf(stderr, "jobboard: web: a login with a wrong token from %s\n",
            addr);
    /* Slows guessing down (each try costs this connection the delay). */
    struct timespec d = {0, WRONG_TOKEN_DELAY_MS * 1000000L};
    nanosleep(&d, NULL);
    return reply_page(conn, MHD_HTTP_FORBIDDEN, "403 Forbidden",
                      A.token_len ? "Wrong token: log in with the token "
                                    "the server printed or read from its "
                                    "--token-file."
                                  : "This server has no token: start it "
                                    "with --actions or --token-file.",
                      NULL, NULL, NULL);
  }
  session s;
  if (session_new(&s) != 0)
    return reply_page(conn, 500, "500 Internal error",
                      "no session could be made (no random bytes)", NULL,
                      NULL, NULL);
  fprintf(stderr, "jobboard: web: login: session %.8s from %s\n", s.id,
          addr);
  char cookie[128];
  snprintf(cookie, sizeof cookie,
           "jb_session=%s; HttpOnly; SameSite=Strict; Path=/", s.id);
  const char *next = fv(r, "next");
  return reply_303(conn, local_path(next) ? next : "/", cookie);
}

static enum MHD_Result do_logout(struct MHD_Connection *conn,
                                 const post_req *r) {
  session s;
  if (session_of(conn, &s)) {
    const char *csrf = fv(r, "csrf");
    if (csrf == NULL || !same_secret(csrf, strlen(csrf), s.csrf, 32))
      return reply_page(conn, MHD_HTTP_FORBIDDEN, "403 Forbidden",
                        "The form is stale: reload the page and log out "
                        "again.", NULL, NULL, NULL);
    session_end(s.id);
    char addr[64];
    client_addr(conn, addr, sizeof addr);
    fprintf(stderr, "jobboard: web: logout: session %.8s from %s\n", s.id,
            addr);
  }
  return reply_303(conn, "/",
                   "jb_session=; HttpOnly; SameSite=Strict; Path=/; "
                   "Max-Age=0");
}

/* ---------------------------------------------------------- actions */

typedef struct {
  const char *op;
  const char *cli;   /* the same from the command line, before its operands */
  bool dead;         /* acts on dead letters (else on jobs) */
} op_def;

static const op_def ops[] = {
    {"requeue", "dead requeue", true},
    {"purge", "dead purge", true},
    {"cancel", "cancel", false},
    {"retry", "run-now", false},
    {"pause", "pause", false},
    {"resume", "resume", false},
    {"unschedule", "schedule remove", false},
};

/* What a request did: counts, and why the skipped were. */
typedef struct {
  size_t done, skipped, over;
  int why_code[8];
  size_t why_n[8];
  char first_err[300]; /* the first failure's message */
} tally;

static void count_result(tally *t, int st) {
  if (st == JB_OK) {
    t->done++;
    return;
  }
  if (t->skipped++ == 0)
    snprintf(t->first_err, sizeof t->first_err, "%s", jb_errmsg());
  for (size_t i = 0; i < 8; i++) {
    if (t->why_n[i] == 0) t->why_code[i] = st;
    if (t->why_code[i] == st) {
      t->why_n[i]++;
      return;
    }
  }
}

/* One uuid's operation. */
static int act_one(jb_board *b, const char *op, const char *uuid) {
  if (strcmp(op, "requeue") == 0) return jb_dead_requeue(b, uuid, 0);
  if (strcmp(op, "purge") == 0)
    return jb_dead_remove(b, uuid);
  if (strcmp(op, "cancel") == 0) return jb_job_cancel(b, uuid, 0);
  return jb_job_run_now(b, uuid);
}

/* The uuids an "all" request acts on. */
typedef struct {
  const post_req *r;
  char (*u)[JB_UUID_STRLEN];
  size_t n, over;
  int oom;
  /* jobs */
  const char *state, *owner, *q;
  const char *names[1];
  size_t n_names;
  /* dead letters */
  const char *cause, *reason;
  bool no_reason;
} pick;

static int pick_add(pick *k, const char *uuid) {
  if (k->n == ALL_MAX) {
    k->over++;
    return 0;
  }
  if (k->u == NULL && (k->u = malloc(ALL_MAX * sizeof *k->u)) == NULL)
    return k->oom = 1;
  memcpy(k->u[k->n++], uuid, JB_UUID_STRLEN);
  return 0;
}

static int pick_job(const jb_job *j, void *arg) {
  pick *k = arg;
  if (k->state &&
      strcmp(k->state, web_where_names[web_job_where(j)]) != 0)
    return 0;
  if (k->n_names && !jb_name_matches(k->names, k->n_names, jb_job_name(j)))
    return 0;
  const char *owner = jb_job_owner(j);
  if (k->owner && (owner == NULL || strcmp(owner, k->owner) != 0)) return 0;
  if (k->q) {
    char *d = web_details_line(j);
    bool hit = d && strstr(d, k->q);
    free(d);
    if (!hit) return 0;
  }
  return pick_add(k, jb_job_uuid(j));
}

static int pick_dead(const jb_dead_letter *d, void *arg) {
  pick *k = arg;
  if (k->cause && strcmp(k->cause, jb_dead_cause_name(d->cause)) != 0)
    return 0;
  const char *reason = d->reason ? d->reason : "";
  if (k->no_reason && reason[0]) return 0;
  if (k->reason && strcmp(k->reason, reason) != 0) return 0;
  return pick_add(k, d->uuid);
}

/* Shell-quoted when it needs to be. */
static void sh_word(FILE *f, const char *s) {
  if (s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._/:=@%+-,") == strlen(s)) {
    fputs(s, f);
    return;
  }
  fputc('\'', f);
  for (; *s; s++)
    if (*s == '\'') fputs("'\\''", f);
    else fputc(*s, f);
  fputc('\'', f);
}

/* For stderr: control characters as '?', so that a name cannot forge a
 * line of the log. */
static void log_word(FILE *f, const char *s) {
  for (; *s; s++) fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

typedef struct {
  const op_def *op;
  const post_req *r;
  const char *const *list; /* the operands: uuids or schedule names */
  size_t n_list;
  char (*picked)[JB_UUID_STRLEN];
  bool all;
} act;

static const char *operand(const act *a, size_t i) {
  return a->picked ? a->picked[i] : a->list[i];
}

/* The CLI command that does the same, and the target for the log. */
static void describe(FILE *cli, FILE *log, const act *a, size_t n,
                     jb_board *b) {
  fprintf(cli, "jobboard %s --board ", a->op->cli);
  sh_word(cli, jb_board_path(b));
  const char *op = a->op->op;
  if (strcmp(op, "pause") == 0 || strcmp(op, "resume") == 0) {
    const char *name = fv1(a->r, "name");
    if (name) {
      fputc(' ', cli);
      sh_word(cli, name);
      log_word(log, name);
    } else {
      fputs(" --all", cli);
      fputs("the whole board", log);
    }
    return;
  }
  for (size_t i = 0; i < n && i < 3; i++) {
    fputc(' ', cli);
    sh_word(cli, operand(a, i));
  }
  if (n > 3) fprintf(cli, " ... (%zu in all)", n);
  if (a->all) {
    fputs("all matching", log);
    static const char *const keys[] = {"state", "name", "owner", "q",
                                       "cause", "reason"};
    for (size_t i = 0; i < 6; i++) {
      const char *v = fv1(a->r, keys[i]);
      if (v == NULL) continue;
      fprintf(log, " %s=", keys[i]);
      log_word(log, v);
    }
    if (fv1(a->r, "noreason")) fputs(" reason=(none)", log);
  } else if (n) {
    log_word(log, operand(a, 0));
    if (n > 1) fprintf(log, " and %zu more", n - 1);
  }
}

typedef struct {
  const op_def *op;
  const post_req *r;
  size_t n;
} confirm_arg;

static void confirm_page(FILE *f, void *arg) {
  confirm_arg *c = arg;
  fprintf(f, "<p>%s %zu %s? Nothing is done until you confirm.</p>\n",
          c->op->op, c->n, c->op->dead ? "dead letters" : "jobs");
  fputs("<form class=\"action\" method=\"post\" action=\"/action\">", f);
  for (size_t i = 0; i < c->r->n; i++)
    if (strcmp(c->r->f[i].key, "op") != 0)
      hidden(f, c->r->f[i].key, c->r->f[i].value);
  hidden(f, "confirm", "1");
  fprintf(f, "<button name=\"op\" value=\"%s\">%s %zu</button></form>\n",
          c->op->op, c->op->op, c->n);
  const char *back = fv(c->r, "back");
  fputs("<p><a href=\"", f);
  web_esc(f, local_path(back) ? back : "/");
  fputs("\">Back</a></p>\n", f);
}

static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned code,
                              const char *msg) {
  const char *title = code == 403   ? "403 Forbidden"
                      : code == 413 ? "413 Payload too large"
                      : code == 415 ? "415 Unsupported media type"
                                    : "400 Bad request";
  return reply_page(conn, code, title, msg, NULL, NULL, NULL);
}

static enum MHD_Result do_action(web_ctx *c, struct MHD_Connection *conn,
                                 const post_req *r) {
  if (!A.actions)
    return refuse(conn, MHD_HTTP_FORBIDDEN,
                  A.readonly ? "Actions are off: the board is open read-only."
                             : "Actions are off: start jobboard web with "
                               "--actions to act on the board.");
  session s;
  if (!session_of(conn, &s))
    return refuse(conn, MHD_HTTP_FORBIDDEN,
                  "Not logged in: log in with the token (at /login), then "
                  "act from the pages.");
  const char *csrf = fv(r, "csrf");
  if (csrf == NULL || !same_secret(csrf, strlen(csrf), s.csrf, 32))
    return refuse(conn, MHD_HTTP_FORBIDDEN,
                  "The form is stale: its csrf field does not match this "
                  "session (a form from an earlier login, or from another "
                  "site). Reload the page and try again.");
  const char *opname = fv(r, "op");
  const op_def *op = NULL;
  for (size_t i = 0; opname && i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].op, opname) == 0) op = &ops[i];
  if (op == NULL)
    return refuse(conn, 400, "op: use requeue, purge, cancel, retry, pause, "
                             "resume or unschedule");
  const char *back = fv(r, "back");
  if (!local_path(back)) back = "/";
  bool all = fv1(r, "all") && strcmp(fv(r, "all"), "1") == 0;
  act a = {.op = op, .r = r, .all = all};
  const char *list[FIELDS_MAX];
  size_t n = 0;
  pick k = {.r = r};
  tally t = {0};
  bool pausing = strcmp(op->op, "pause") == 0 || strcmp(op->op, "resume") == 0;
  if (pausing) {
    const char *name = fv1(r, "name");
    if (!name && !all)
      return refuse(conn, 400, "pause and resume take a name, or all=1 for "
                               "the whole board");
    int st = strcmp(op->op, "pause") == 0 ? jb_pause(c->b, name)
                                          : jb_resume(c->b, name);
    count_result(&t, st);
    n = 1;
  } else {
    const char *key = strcmp(op->op, "unschedule") == 0 ? "schedule" : "uuid";
    for (size_t i = 0; i < r->n; i++)
      if (strcmp(r->f[i].key, key) == 0) {
        if (key[0] == 'u' && !cli_is_uuid(r->f[i].value))
          return refuse(conn, 400, "uuid: not a uuid");
        if (r->f[i].value[0] == 0)
          return refuse(conn, 400, "schedule: empty");
        list[n++] = r->f[i].value;
      }
    if (n && all)
      return refuse(conn, 400, "give uuid fields or all=1, not both");
    if (all && key[0] == 's')
      return refuse(conn, 400, "unschedule takes schedule fields");
    if (!n && !all)
      return refuse(conn, 400, key[0] == 's'
                                   ? "unschedule: give a schedule field"
                                   : "give one or more uuid fields, or all=1 "
                                     "with the filters");
    if (all) {
      int st;
      if (op->dead) {
        k.cause = fv1(r, "cause");
        k.reason = fv1(r, "reason");
        k.no_reason = fv1(r, "noreason") != NULL;
        bool known = k.cause == NULL;
        for (int cs = 0; cs < 8 && !known; cs++) {
          const char *nm = jb_dead_cause_name((jb_dead_cause)cs);
          known = nm && strcmp(nm, k.cause) == 0;
        }
        if (!known) return refuse(conn, 400, "cause: not a cause of death");
        st = jb_dead_foreach(c->b, pick_dead, &k);
      } else {
        k.state = fv1(r, "state");
        k.owner = fv1(r, "owner");
        k.q = fv1(r, "q");
        if ((k.names[0] = fv1(r, "name")) != NULL) k.n_names = 1;
        if (k.state && strcmp(k.state, "unclaimed") &&
            strcmp(k.state, "claimed") && strcmp(k.state, "delayed"))
          return refuse(conn, 400, "state: use unclaimed, claimed or delayed");
        st = web_each_job(c->b, pick_job, &k);
      }
      if (st == JB_OK && k.oom) st = JB_ENOMEM;
      if (st != JB_OK) {
        free(k.u);
        return reply_page(conn, 500, "500 The board could not be read",
                          jb_errmsg(), NULL, NULL, NULL);
      }
      bool sure = fv1(r, "confirm") && strcmp(fv(r, "confirm"), "1") == 0;
      bool needs_sure = strcmp(op->op, "cancel") == 0 ||
                        strcmp(op->op, "purge") == 0;
      if (needs_sure && !sure && k.n) {
        confirm_arg ca = {op, r, k.n};
        free(k.u);
        return reply_page(conn, MHD_HTTP_OK, "Confirm", NULL, confirm_page,
                          &ca, NULL);
      }
      a.picked = k.u;
      n = k.n;
      t.over = k.over;
    }
    a.list = list;
    a.n_list = n;
    for (size_t i = 0; i < n; i++)
      count_result(&t, key[0] == 's' ? jb_schedule_remove(c->b, operand(&a, i))
                                     : act_one(c->b, op->op, operand(&a, i)));
  }
  /* The result: on the next page, and on stderr. */
  char *cli = NULL, *target = NULL, *msg = NULL;
  size_t cli_len = 0, target_len = 0, msg_len = 0;
  FILE *fc = open_memstream(&cli, &cli_len);
  FILE *ft = open_memstream(&target, &target_len);
  FILE *fm = open_memstream(&msg, &msg_len);
  if (fc && ft && fm) {
    describe(fc, ft, &a, n, c->b);
    fflush(fc);
    fflush(ft);
    fprintf(fm, "%s: %zu done", op->op, t.done);
    if (t.skipped) {
      fprintf(fm, ", %zu skipped (", t.skipped);
      for (size_t i = 0; i < 8 && t.why_n[i]; i++)
        fprintf(fm, "%s%zu %s", i ? ", " : "", t.why_n[i],
                jb_strerror(t.why_code[i]));
      fprintf(fm, "; the first: %s)", t.first_err);
    }
    if (t.over)
      fprintf(fm, "; %zu more matched, beyond the %d one request acts on",
              t.over, ALL_MAX);
    if (all && n == 0) fputs("; nothing matched", fm);
    fprintf(fm, ". The same from the command line: %s", cli);
    fflush(fm);
    char addr[64];
    client_addr(conn, addr, sizeof addr);
    fprintf(stderr, "jobboard: web: %s %s by %.8s from %s: %zu done", op->op,
            target, s.id, addr, t.done);
    if (t.skipped) fprintf(stderr, ", %zu skipped", t.skipped);
    fputc('\n', stderr);
    session_flash(s.id, msg);
  }
  if (fc) fclose(fc);
  if (ft) fclose(ft);
  if (fm) fclose(fm);
  free(cli);
  free(target);
  free(msg);
  free(k.u);
  return reply_303(conn, back, NULL);
}

/* ---------------------------------------------------------- routing */

static bool is_form(struct MHD_Connection *conn) {
  const char *t = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                              MHD_HTTP_HEADER_CONTENT_TYPE);
  static const char want[] = "application/x-www-form-urlencoded";
  return t && strncasecmp(t, want, sizeof want - 1) == 0 &&
         (t[sizeof want - 1] == 0 || t[sizeof want - 1] == ';');
}

static enum MHD_Result on_post(web_ctx *c, struct MHD_Connection *conn,
                               post_kind kind, const char *upload,
                               size_t *upload_size, void **con_cls) {
  post_req *r = *con_cls;
  if (r == NULL) {
    const char *cl = MHD_lookup_connection_value(
        conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > BODY_MAX)
      return refuse(conn, 413, "The form is larger than 64 KiB.");
    if (!is_form(conn))
      return refuse(conn, 415, "A form is sent as "
                               "application/x-www-form-urlencoded.");
    if (kind != POST_LOGIN && !origin_ok(conn))
      return refuse(conn, MHD_HTTP_FORBIDDEN,
                    "The request comes from another site (its Origin is "
                    "not this server).");
    if ((r = calloc(1, sizeof *r)) == NULL) return MHD_NO;
    r->kind = kind;
    if ((r->pp = MHD_create_post_processor(conn, 4096, post_iter, r)) ==
        NULL) {
      post_free(r);
      return refuse(conn, 415, "A form is sent as "
                               "application/x-www-form-urlencoded.");
    }
    *con_cls = r;
    return MHD_YES;
  }
  if (*upload_size) {
    r->got += *upload_size;
    if (r->got > BODY_MAX) r->too_big = true;
    if (!r->too_big && MHD_post_process(r->pp, upload, *upload_size) != MHD_YES)
      r->too_big = true;
    *upload_size = 0;
    return MHD_YES;
  }
  *con_cls = NULL;
  enum MHD_Result ret;
  if (r->too_big)
    ret = refuse(conn, 413, "The form is too large (at most 64 KiB, 1100 "
                            "fields, 4096 bytes a field).");
  else if (kind == POST_LOGIN)
    ret = do_login(conn, r);
  else if (kind == POST_LOGOUT)
    ret = do_logout(conn, r);
  else
    ret = do_action(c, conn, r);
  post_free(r);
  return ret;
}

void web_actions_completed(void *cls, struct MHD_Connection *conn,
                           void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  (void)cls, (void)conn, (void)toe;
  if (con_cls && *con_cls) {
    post_free(*con_cls);
    *con_cls = NULL;
  }
}

bool web_actions_route(web_ctx *c, struct MHD_Connection *conn,
                       const char *url, const char *method,
                       const char *upload, size_t *upload_size,
                       void **con_cls, enum MHD_Result *ret) {
  bool post = strcmp(method, "POST") == 0;
  bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  bool login = strcmp(url, "/login") == 0, logout = strcmp(url, "/logout") == 0,
       action = strcmp(url, "/action") == 0;
  if (post && (login || logout || action)) {
    *ret = on_post(c, conn, login ? POST_LOGIN : logout ? POST_LOGOUT
                                                         : POST_ACTION,
                   upload, upload_size, con_cls);
    return true;
  }
  tl_csrf[0] = tl_sid[0] = 0;
  session s;
  bool in = session_of(conn, &s);
  if (in) {
    memcpy(tl_sid, s.id, sizeof tl_sid);
    if (A.actions) memcpy(tl_csrf, s.csrf, sizeof tl_csrf);
  }
  if ((logout || action) && get) {
    static const char *const allow[] = {"Allow", "POST", NULL};
    *ret = reply_page(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "405 Method not allowed",
                      "Actions are forms sent with POST; a link or a "
                      "reload changes nothing.",
                      NULL, NULL, allow);
    return true;
  }
  const char *next = web_arg(conn, "next");
  if (login && get) {
    *ret = reply_page(conn, MHD_HTTP_OK, "Log in", NULL, login_form,
                      (void *)(local_path(next) ? next : NULL), NULL);
    return true;
  }
  set_back(conn, url);
  if (A.need_session && !in && get && strncmp(url, "/static/", 8) != 0) {
    /* Not on loopback: reading takes the token too. */
    char where[BACK_MAX + 40];
    snprintf(where, sizeof where, "/login?next=");
    FILE *f = fmemopen(where + strlen(where), sizeof where - strlen(where),
                       "w");
    if (f) {
      web_url_esc(f, tl_back);
      fclose(f);
    }
    *ret = reply_303(conn, where, NULL);
    return true;
  }
  return false;
}

#endif /* JB_WITH_MICROHTTPD */
