/*
 * url.c - Redis URLs and namespaces: parsing and checking, no I/O.
 */
#include "conn.h"
#include "core/sync_hook.h"

#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Where a URL's userinfo is: *auth after "://", *at its '@' (NULL: no
 * userinfo), *colon the ':' before the password (NULL: no password).
 * False when the text has no "://". Shared by the redaction and the
 * splitting below, so that both find the password where the parser does. */
static bool userinfo_at(const char *text, const char **auth, const char **at,
                        const char **colon) {
  *auth = strstr(text, "://");
  *at = *colon = NULL;
  if (!*auth)
    return false;
  *auth += 3;
  /* userinfo ends at the last '@' before the path starts */
  for (const char *p = *auth; *p && *p != '/' && *p != '?'; p++)
    if (*p == '@')
      *at = p;
  if (!*at && (*auth)[0] != '/') {
    /* unix://user:pass@/path: the '@' is just before the first '/' */
    const char *slash = strchr(*auth, '/');
    if (slash && slash > *auth && slash[-1] == '@')
      *at = slash - 1;
  }
  if (*at)
    *colon = memchr(*auth, ':', (size_t)(*at - *auth));
  return true;
}

/* The URL as shown in messages: the password, if any, replaced by "***",
 * since messages end up in logs. */
void jb__sync_url_redact(char *out, size_t size, const char *text) {
  const char *auth, *at, *colon;
  userinfo_at(text, &auth, &at, &colon);
  /* An '@' the parse above did not take for the userinfo's end (a
   * password holding '/' or '?', which a URL that does not parse may
   * have): everything from "://" to the last '@' is hidden, so no
   * spelling shows a password (a socket path with an '@' is hidden too). */
  const char *last = auth ? strrchr(auth, '@') : NULL;
  if (last != NULL && last != at) {
    snprintf(out, size, "%.*s***%s", (int)(auth - text), text, last);
    return;
  }
  if (colon)
    snprintf(out, size, "%.*s***%s", (int)(colon + 1 - text), text, at);
  else
    snprintf(out, size, "%s", text);
}

bool jb__sync_url_has_password(const char *text) {
  const char *auth, *at, *colon;
  return userinfo_at(text, &auth, &at, &colon) && colon != NULL;
}

int jb__sync_url_split(char **bare, char **password, const char *text) {
  *bare = *password = NULL;
  jb_sync_url *u = NULL;
  int rc = jb__sync_url_parse_loose(&u, text);
  if (rc != JB_OK)
    return rc;
  const char *auth, *at, *colon;
  userinfo_at(text, &auth, &at, &colon);
  if (colon == NULL) {
    /* no password: the text as it is */
    *bare = strdup(text);
  } else if (u->user) {
    /* "user:password@" -> "user@" */
    if (asprintf(bare, "%.*s%s", (int)(colon - text), text, at) < 0)
      *bare = NULL;
  } else {
    /* ":password@" -> nothing */
    if (asprintf(bare, "%.*s%s", (int)(auth - text), text, at + 1) < 0)
      *bare = NULL;
  }
  if (*bare && u->password && !(*password = strdup(u->password))) {
    free(*bare);
    *bare = NULL;
  }
  jb_sync_url_free(u);
  if (*bare == NULL)
    return jb__err(JB_ENOMEM, "out of memory splitting a redis URL");
  return JB_OK;
}

int jb__sync_url_add_password(char **out, const char *bare,
                              const char *password) {
  *out = NULL;
  const char *auth, *at, *colon;
  if (!userinfo_at(bare, &auth, &at, &colon) || colon != NULL)
    return jb__err(JB_EINVAL, "jb__sync_url_add_password: not a redis URL "
                   "without a password");
  /* Every byte but RFC 3986's unreserved ones and sub-delims as %XX, so
   * that ':', '@', '/', '?', '#', '%' in the password read back as
   * themselves (the parser splits on none of the sub-delims). */
  size_t plen = strlen(password);
  char *enc = malloc(plen * 3 + 1), *w = enc;
  if (enc == NULL)
    return jb__err(JB_ENOMEM, "out of memory building a redis URL");
  for (size_t i = 0; i < plen; i++) {
    unsigned char c = (unsigned char)password[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || (c && strchr("-._~!$&'()*+,;=", c)))
      *w++ = (char)c;
    else
      w += sprintf(w, "%%%02X", c);
  }
  *w = '\0';
  int n;
  if (at) /* "user@" -> "user:password@" */
    n = asprintf(out, "%.*s:%s%s", (int)(at - bare), bare, enc, at);
  else
    n = asprintf(out, "%.*s:%s@%s", (int)(auth - bare), bare, enc, auth);
  free(enc);
  if (n < 0) {
    *out = NULL;
    return jb__err(JB_ENOMEM, "out of memory building a redis URL");
  }
  return JB_OK;
}

/* Set the message "redis URL "...": <what>" and return JB_EINVAL. */
__attribute__((format(printf, 2, 3)))
static int bad(const char *text, const char *fmt, ...) {
  char shown[300], what[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  jb__sync_url_redact(shown, sizeof shown, text);
  return jb__err(JB_EINVAL, "redis URL \"%s\": %s", shown, what);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Decode s[0..len) with %XX escapes into a new string in *out. */
static int decode(char **out, const char *s, size_t len, const char *text,
                  const char *field) {
  char *d = malloc(len + 1), *w = d;
  if (!d)
    return jb__err(JB_ENOMEM, "out of memory parsing a redis URL");
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '%') {
      *w++ = s[i];
      continue;
    }
    int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
    int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      free(d);
      return bad(text, "bad %%-escape in the %s", field);
    }
    *w++ = (char)(hi * 16 + lo);
    i += 2;
  }
  *w = '\0';
  *out = d;
  return JB_OK;
}

/* A decimal number in s[0..len) within [lo, hi], or -1. */
static long number(const char *s, size_t len, long lo, long hi) {
  if (len == 0 || len > 10)
    return -1;
  long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v >= lo && v <= hi ? v : -1;
}

/* userinfo "[user]:password" (s[0..len)) into url->user, url->password. */
static int userinfo(jb_sync_url *url, const char *s, size_t len,
                    const char *text, bool loose) {
  const char *colon = memchr(s, ':', len);
  if (!colon && loose && len > 0)
    /* a user whose password is kept elsewhere (the board's credentials) */
    return decode(&url->user, s, len, text, "user");
  if (!colon)
    return bad(text, "a user needs a password (\"user:password@\"), and a "
                     "password alone is written \":password@\"");
  size_t ulen = (size_t)(colon - s), plen = len - ulen - 1;
  if (plen == 0)
    return bad(text, "the password is empty");
  int rc = decode(&url->password, colon + 1, plen, text, "password");
  if (rc == JB_OK && ulen > 0)
    rc = decode(&url->user, s, ulen, text, "user");
  return rc;
}

/* "host[:port]" or "[v6]:port" (hp[0..hplen)) into *host (a new string)
 * and *port (defport when none is written). */
static int hostport(char **host_out, int *port_out, const char *hp,
                    size_t hplen, int defport, const char *text) {
  const char *host = hp, *port = NULL;
  size_t hlen = hplen, portlen = 0;
  if (hplen > 0 && hp[0] == '[') {
    const char *close = memchr(hp, ']', hplen);
    if (!close)
      return bad(text, "'[' of an IPv6 address has no ']'");
    host = hp + 1;
    hlen = (size_t)(close - host);
    const char *rest = close + 1;
    if (rest < hp + hplen) {
      if (*rest != ':')
        return bad(text, "unexpected text after the IPv6 address");
      port = rest + 1;
      portlen = (size_t)(hp + hplen - port);
    }
  } else {
    const char *colon = NULL;
    for (size_t i = 0; i < hplen; i++)
      if (hp[i] == ':') {
        if (colon)
          return bad(text, "an IPv6 address must be written in brackets "
                           "(redis://[::1]:6379)");
        colon = hp + i;
      }
    if (colon) {
      hlen = (size_t)(colon - hp);
      port = colon + 1;
      portlen = (size_t)(hp + hplen - port);
    }
  }
  if (hlen == 0)
    return bad(text, "no host");
  *port_out = defport;
  if (port) {
    long p = number(port, portlen, 1, 65535);
    if (p < 0)
      return bad(text, "port \"%.*s\" is not a number in 1..65535",
                 (int)portlen, port);
    *port_out = (int)p;
  }
  if (!(*host_out = strndup(host, hlen)))
    return jb__err(JB_ENOMEM, "out of memory parsing a redis URL");
  return JB_OK;
}

static int parse_tcp(jb_sync_url *url, const char *text, const char *s,
                     bool loose) {
  size_t alen = strcspn(s, "/?#");
  if (s[alen] == '?' || s[alen] == '#')
    return bad(text, "query parameters and fragments are not supported "
                     "in redis:// URLs (the db goes in the path: /N)");
  const char *at = NULL;
  for (size_t i = 0; i < alen; i++)
    if (s[i] == '@')
      at = s + i;
  const char *hp = s;
  if (at) {
    int rc = userinfo(url, s, (size_t)(at - s), text, loose);
    if (rc != JB_OK)
      return rc;
    hp = at + 1;
  }
  int rc = hostport(&url->host, &url->port, hp, (size_t)(s + alen - hp),
                    6379, text);
  if (rc != JB_OK)
    return rc;
  const char *path = s + alen;
  if (path[0] == '/' && path[1] != '\0') {
    long db = number(path + 1, strlen(path + 1), 0, INT_MAX);
    if (db < 0)
      return bad(text, "db \"%s\" is not a number in 0..%d", path + 1,
                 INT_MAX);
    url->db = (int)db;
  }
  return JB_OK;
}

static int parse_unix(jb_sync_url *url, const char *text, const char *s,
                      bool loose) {
  const char *slash = strchr(s, '/');
  if (!slash && *s)
    return bad(text, "the socket path must be absolute: "
                     "unix:///path/to.sock (three slashes)");
  if (!slash)
    return bad(text, "no socket path (unix:///path/to.sock)");
  if (slash > s) {
    if (slash[-1] != '@')
      return bad(text, "the socket path must be absolute: "
                       "unix:///path/to.sock (three slashes)");
    int rc = userinfo(url, s, (size_t)(slash - 1 - s), text, loose);
    if (rc != JB_OK)
      return rc;
  }
  size_t plen = strcspn(slash, "?#");
  if (slash[plen] == '#')
    return bad(text, "fragments are not supported");
  int rc = decode(&url->path, slash, plen, text, "socket path");
  if (rc != JB_OK)
    return rc;
  if (strlen(url->path) >= sizeof ((struct sockaddr_un *)0)->sun_path)
    return bad(text, "the socket path is longer than %zu bytes",
               sizeof ((struct sockaddr_un *)0)->sun_path - 1);
  if (strcmp(url->path, "/") == 0)
    return bad(text, "no socket path (unix:///path/to.sock)");
  if (slash[plen] == '?') {
    const char *q = slash + plen + 1;
    if (strncmp(q, "db=", 3) != 0)
      return bad(text, "the only query parameter is db=N");
    long db = number(q + 3, strlen(q + 3), 0, INT_MAX);
    if (db < 0)
      return bad(text, "db \"%s\" is not a number in 0..%d", q + 3, INT_MAX);
    url->db = (int)db;
  }
  return JB_OK;
}

/* redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/name[/db]:
 * the sentinels to ask (port 26379 by default), the master's name, and
 * the db and credentials of the master (sentinels are asked without). */
static int parse_sentinel(jb_sync_url *url, const char *text, const char *s,
                          bool loose) {
  size_t alen = strcspn(s, "/");
  if (strpbrk(s, "?#"))
    return bad(text, "query parameters and fragments are not supported "
                     "in redis-sentinel:// URLs (a '?' or '#' in the master "
                     "name is written %%3F, %%23)");
  const char *hp = s, *end = s + alen;
  for (const char *p = s; p < end; p++)
    if (*p == '@')
      hp = p + 1;
  int rc =
      hp > s ? userinfo(url, s, (size_t)(hp - 1 - s), text, loose) : JB_OK;
  if (rc != JB_OK)
    return rc;
  size_t n = 1;
  for (const char *p = hp; p < end; p++)
    n += *p == ',';
  if (n > JB_SYNC_SENTINELS_MAX)
    return bad(text, "%zu sentinels (at most %d)", n, JB_SYNC_SENTINELS_MAX);
  if (!(url->sentinels = calloc(n, sizeof *url->sentinels)))
    return jb__err(JB_ENOMEM, "out of memory parsing a redis URL");
  for (const char *p = hp; rc == JB_OK && p <= end; url->nsentinels++) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    jb_sync_addr *a = &url->sentinels[url->nsentinels];
    if (stop == p)
      return bad(text, "sentinel %d has no address (host[:port], "
                       "separated by commas)", url->nsentinels + 1);
    rc = hostport(&a->host, &a->port, p, (size_t)(stop - p), 26379, text);
    p = stop + 1;
  }
  if (rc != JB_OK)
    return rc;
  const char *name = end + 1;
  size_t nlen = *end == '/' ? strcspn(name, "/") : 0;
  if (nlen == 0)
    return bad(text, "no master name: redis-sentinel://HOST[:PORT]"
                     "[,HOST[:PORT]...]/MASTERNAME[/DB]");
  if ((rc = decode(&url->master, name, nlen, text, "master name")) != JB_OK)
    return rc;
  const char *db = name + nlen;
  if (db[0] == '/' && db[1] != '\0') {
    long v = number(db + 1, strlen(db + 1), 0, INT_MAX);
    if (v < 0)
      return bad(text, "db \"%s\" is not a number in 0..%d", db + 1, INT_MAX);
    url->db = (int)v;
  }
  return JB_OK;
}

static int parse(jb_sync_url **out, const char *text, bool loose) {
  *out = NULL;
  if (!text || !*text)
    return jb__err(JB_EINVAL, "no redis URL given (redis://host:port/db, "
                              "unix:///path/to.sock or "
                              "redis-sentinel://host:port/mastername)");
  jb_sync_url *url = calloc(1, sizeof *url);
  if (!url)
    return jb__err(JB_ENOMEM, "out of memory parsing a redis URL");
  int rc;
  if (strncmp(text, "redis://", 8) == 0)
    rc = parse_tcp(url, text, text + 8, loose);
  else if (strncmp(text, "unix://", 7) == 0)
    rc = parse_unix(url, text, text + 7, loose);
  else if (strncmp(text, "redis-sentinel://", 17) == 0)
    rc = parse_sentinel(url, text, text + 17, loose);
  else if (strncmp(text, "rediss://", 9) == 0)
    rc = bad(text, "TLS (rediss://) is not supported");
  else
    rc = bad(text, "the scheme must be redis://, unix:// or "
                   "redis-sentinel://");
  if (rc != JB_OK) {
    jb_sync_url_free(url);
    return rc;
  }
  *out = url;
  return JB_OK;
}

int jb_sync_url_parse(jb_sync_url **out, const char *text) {
  return parse(out, text, false);
}

int jb__sync_url_parse_loose(jb_sync_url **out, const char *text) {
  return parse(out, text, true);
}

void jb_sync_url_free(jb_sync_url *url) {
  if (!url)
    return;
  free(url->host);
  free(url->path);
  free(url->user);
  free(url->password);
  for (int i = 0; i < url->nsentinels; i++)
    free(url->sentinels[i].host);
  free(url->sentinels);
  free(url->master);
  free(url);
}

int jb_sync_namespace_check(const char *ns) {
  if (!ns || !*ns)
    return jb__err(JB_EINVAL, "namespace is empty");
  size_t len = strlen(ns);
  if (len > JB_SYNC_NAMESPACE_MAX)
    return jb__err(JB_EINVAL, "namespace is %zu bytes long (at most %d)", len,
                   JB_SYNC_NAMESPACE_MAX);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)ns[i];
    if (c <= 0x20 || c == 0x7f)
      /* the namespace itself is not shown: it holds a control character */
      return jb__err(JB_EINVAL,
                     "namespace: byte %zu is a %s (0x%02x); spaces and "
                     "control characters are not allowed",
                     i, c == ' ' ? "space" : "control character", c);
  }
  return JB_OK;
}
