/*
 * web_html.c - escaping, the frame of a page and the built-in assets of
 * `jobboard web` (web_html.h).
 */
#include "web_html.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"

void web_esc_n(FILE *f, const char *s, size_t n) {
  if (s == NULL) return;
  /* Cut short, end on a character: not inside a UTF-8 sequence. */
  size_t end = strnlen(s, n);
  if (end == n && n != SIZE_MAX)
    while (end > 0 && ((unsigned char)s[end] & 0xc0) == 0x80) end--;
  for (size_t i = 0; i < end; i++) {
    unsigned char ch = (unsigned char)s[i];
    switch (ch) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      /* A control character has no business in a page: U+FFFD shows
       * that something was there. */
      if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f)
        fputs("\xef\xbf\xbd", f);
      else
        fputc(ch, f);
    }
  }
}

void web_esc(FILE *f, const char *s) { web_esc_n(f, s, SIZE_MAX); }

void web_url_esc(FILE *f, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
        (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
        ch == '~')
      fputc(ch, f);
    else
      fprintf(f, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
  }
}

void web_duration(FILE *f, int64_t us) {
  double s = (double)us / 1e6;
  if (s < 0) s = -s;
  if (s < 1)
    fprintf(f, "%.0f ms", s * 1000);
  else if (s < 120)
    fprintf(f, "%.1f s", s);
  else if (s < 7200)
    fprintf(f, "%.0f min", s / 60);
  else if (s < 172800)
    fprintf(f, "%.1f h", s / 3600);
  else
    fprintf(f, "%.0f d", s / 86400);
}

void web_time(FILE *f, int64_t us, int64_t now_us) {
  if (us == 0) {
    fputs("-", f);
    return;
  }
  char when[40];
  cli_format_time(when, sizeof when, us);
  char *dot = strchr(when, '.');
  if (dot) strcpy(dot, "Z"); /* seconds are enough for a person */
  fprintf(f, "<time datetime=\"%s\">%s</time> (", when, when);
  if (us <= now_us) {
    web_duration(f, now_us - us);
    fputs(" ago)", f);
  } else {
    fputs("in ", f);
    web_duration(f, us - now_us);
    fputs(")", f);
  }
}

static const struct {
  const char *path, *label;
} nav[] = {{"/", "overview"},  {"/jobs", "jobs"},
           {"/claims", "claims"}, {"/dead", "dead letters"},
           {"/schedules", "schedules"}};

void web_page_begin(FILE *f, const char *title, const char *path) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\"><title>",
        f);
  web_esc(f, title);
  fputs(" - jobboard</title><link rel=\"stylesheet\" "
        "href=\"/static/web.css\"></head>\n<body><nav>",
        f);
  for (size_t i = 0; i < sizeof nav / sizeof nav[0]; i++)
    fprintf(f, "<a href=\"%s\"%s>%s</a> ", nav[i].path,
            path && strcmp(path, nav[i].path) == 0
                ? " aria-current=\"page\""
                : "",
            nav[i].label);
  fputs("</nav>\n<main><h1>", f);
  web_esc(f, title);
  fputs("</h1>\n", f);
}

void web_page_end(FILE *f) {
  fputs("</main>\n<aside><h2>Live events</h2>"
        "<p id=\"live-note\">Reload the page to see later changes.</p>"
        "<ul id=\"live\"></ul></aside>\n"
        "<script src=\"/static/web.js\"></script></body></html>\n",
        f);
}

const char web_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;"
    "display:grid;grid-template-columns:1fr 22em}\n"
    "nav{grid-column:1/3;background:#234;padding:.5em 1em}\n"
    "nav a{color:#fff;margin-right:1em;text-decoration:none}\n"
    "nav a[aria-current]{text-decoration:underline}\n"
    "main{padding:0 1em;min-width:0}\n"
    "aside{padding:0 1em;border-left:1px solid #ddd;font-size:12px}\n"
    "aside ul{padding-left:1em;word-break:break-all}\n"
    "table{border-collapse:collapse;margin:.5em 0 1em}\n"
    "th,td{border-bottom:1px solid #ddd;padding:.2em .6em;text-align:left;"
    "vertical-align:top}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "td.d{max-width:30em;overflow:hidden;text-overflow:ellipsis;"
    "white-space:nowrap;font-family:monospace}\n"
    "pre{background:#f6f6f6;padding:.5em;overflow:auto;white-space:"
    "pre-wrap;word-break:break-all}\n"
    "form label{margin-right:.8em}\n"
    ".warn{color:#a40}\n"
    "form.action{display:inline;margin-right:.3em}\n"
    ".flash{background:#efe;border:1px solid #9c9;padding:.4em}\n"
    ".note{color:#555}\n"
    "@media (max-width:50em){body{display:block}}\n";

/* The live list: events of /events (server-sent events) added on top,
 * written with textContent only, so that no text of the board becomes
 * markup. Without the script the page reads the same, without the list. */
const char web_js[] =
    "(function () {\n"
    "  var list = document.getElementById('live');\n"
    "  var note = document.getElementById('live-note');\n"
    "  if (!list || !window.EventSource) return;\n"
    "  var es = new EventSource('/events');\n"
    "  es.onopen = function () {\n"
    "    note.textContent = 'New events appear here as they happen.';\n"
    "  };\n"
    "  es.onerror = function () { note.textContent = 'Reconnecting...'; };\n"
    "  es.onmessage = function (m) {\n"
    "    var e;\n"
    "    try { e = JSON.parse(m.data); } catch (x) { return; }\n"
    "    var li = document.createElement('li');\n"
    "    li.textContent = e.seq + ' ' + e.type + ' ';\n"
    "    var a = document.createElement('a');\n"
    "    a.href = '/job/' + encodeURIComponent(e.uuid);\n"
    "    a.textContent = e.name !== undefined && e.name !== null ? e.name :\n"
    "        e.uuid;\n"
    "    li.appendChild(a);\n"
    "    li.appendChild(document.createTextNode(' ' + (e.owner || '') +\n"
    "        ' ' + e.time));\n"
    "    list.insertBefore(li, list.firstChild);\n"
    "    while (list.children.length > 50) list.removeChild(list.lastChild);\n"
    "  };\n"
    "})();\n";
