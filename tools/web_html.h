/*
 * web_html.h - the HTML of `jobboard web` (cmd_web.c): the one escape
 * every text from the board goes through, the frame of a page, and the
 * assets (stylesheet, script) built into the program.
 */
#ifndef JOBBOARD_WEB_HTML_H
#define JOBBOARD_WEB_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write `s` as HTML text, fit for an element or a quoted attribute: & < >
 * " ' as character references, the other control characters but tab and
 * newline as U+FFFD, so that no byte of a job's name, details, owner,
 * reason or result is read as markup. NULL writes nothing. */
void web_esc(FILE *f, const char *s);
/* The same for the first `n` bytes of `s` (at most; a NUL ends it). */
void web_esc_n(FILE *f, const char *s, size_t n);

/* Write `s` percent-encoded for a URL's query value or path segment:
 * every byte but A-Z a-z 0-9 - . _ ~ as %XX (its output needs no HTML
 * escape). */
void web_url_esc(FILE *f, const char *s);

/* A time as "2024-01-02T03:04:05Z (12 s ago)" / "(in 3 s)" against
 * `now_us`; 0 writes "-". */
void web_time(FILE *f, int64_t us, int64_t now_us);
/* A duration in microseconds for a person: "850 ms", "12.3 s", "4 min",
 * "2.5 h", "3 d". */
void web_duration(FILE *f, int64_t us);

/* The page's head, its navigation (`path` marks where it is) and its
 * heading `title` (escaped). */
void web_page_begin(FILE *f, const char *title, const char *path);
/* The live list of events (filled by the script; without it, a note to
 * reload), then the end of the page. */
void web_page_end(FILE *f);

/* The assets served at /static/web.css and /static/web.js. */
extern const char web_css[];
extern const char web_js[];

#endif
