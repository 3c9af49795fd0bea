/*
 * cli_dead.c - `dead requeue` and `dead purge` of a selection (--all, or
 * --name, --cause, --older-than together), with --dry-run, a count and
 * --json; and `dead requeue --as-new` (jb_dead_repost).
 *
 * The selection is read first (the letters that match when the command
 * starts), then each letter is requeued or deleted in a write transaction
 * of its own: an interrupted run (a crash, a kill, Ctrl-C) leaves every
 * letter either done or still dead, never both and never lost, and the
 * same command run again does the rest. A letter another process took
 * meanwhile is counted as gone, not as a failure.
 */
#include "cli_common.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Failures printed one by one before the rest are only counted. */
#define SHOWN_FAILURES 3

int cli_dead_cause(const char *text) {
  for (int c = 0; c < 8; c++) {
    const char *name = jb_dead_cause_name((jb_dead_cause)c);
    if (name && strcmp(name, text) == 0) return c;
  }
  return -1;
}

bool cli_dead_selects(const cli_opts *o) {
  return o->all || o->n_names || o->cause || o->older_than_ms >= 0;
}

bool cli_dead_matches(const cli_opts *o, int64_t now_us,
                      const jb_dead_letter *l) {
  if (o->cause && cli_dead_cause(o->cause) != (int)l->cause) return false;
  if (o->n_names &&
      (l->name == NULL || !jb_name_matches(o->names, o->n_names, l->name)))
    return false;
  if (o->older_than_ms >= 0 && l->dead_us >= now_us - o->older_than_ms * 1000)
    return false;
  return true;
}

int64_t cli_dead_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

typedef struct {
  const cli_opts *o;
  int64_t now_us;
  char (*u)[JB_UUID_STRLEN];
  size_t n, cap;
  int (*line)(const jb_dead_letter *l, void *payload); /* --dry-run */
  int err; /* 1: out of memory, 2: a write error */
} selection;

static int pick(const jb_dead_letter *l, void *arg) {
  selection *s = arg;
  if (!cli_dead_matches(s->o, s->now_us, l)) return 0;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    void *u = realloc(s->u, cap * sizeof *s->u);
    if (u == NULL) return s->err = 1;
    s->u = u;
    s->cap = cap;
  }
  memcpy(s->u[s->n++], l->uuid, JB_UUID_STRLEN);
  if (s->line && !s->o->json && s->line(l, (void *)s->o) != 0)
    return s->err = 2;
  return 0;
}

/* An array of the uuids u[0..n), or NULL out of memory. */
static json_t *uuid_array(char (*u)[JB_UUID_STRLEN], size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_string(u[i])) != 0) {
      json_decref(a);
      return NULL;
    }
  return a;
}

int cli_dead_bulk(jb_board *b, const cli_opts *o, bool purge,
                  int (*line)(const jb_dead_letter *l, void *payload)) {
  selection s = {.o = o, .now_us = cli_dead_now_us(),
                 .line = o->dry_run ? line : NULL};
  int st = jb_dead_foreach(b, pick, &s);
  if (s.err) {
    free(s.u);
    if (s.err == 1) fputs("jobboard: out of memory for the selection\n",
                          stderr);
    return CLI_EXIT_ERROR;
  }
  if (st != JB_OK) {
    free(s.u);
    return cli_fail(st);
  }
  const char *verb = purge ? "purge" : "requeue";
  if (o->dry_run) {
    int rc = 0;
    if (o->json) {
      char key[32];
      snprintf(key, sizeof key, "would_%s", verb);
      rc = cli_json_print(json_pack("{s:b,s:I,s:o*}", "dry_run", 1, key,
                                    (json_int_t)s.n, "uuids",
                                    uuid_array(s.u, s.n)))
               ? CLI_EXIT_ERROR
               : 0;
    } else if (printf("would %s %zu dead letter%s%s (dry run: nothing "
                      "changed)\n", verb, s.n, s.n == 1 ? "" : "s",
                      o->as_new ? " as new jobs" : "") < 0) {
      rc = CLI_EXIT_ERROR;
    }
    free(s.u);
    return rc;
  }
  unsigned flags = o->keep_attempts ? JB_REQUEUE_KEEP_ATTEMPTS : 0;
  char (*fresh)[JB_UUID_STRLEN] =
      o->as_new && s.n ? malloc(s.n * sizeof *fresh) : NULL;
  if (o->as_new && s.n && fresh == NULL) {
    free(s.u);
    fputs("jobboard: out of memory for the selection\n", stderr);
    return CLI_EXIT_ERROR;
  }
  size_t done = 0, gone = 0, failed = 0;
  int rc = 0;
  for (size_t i = 0; i < s.n; i++) {
    int r = purge       ? jb_dead_remove(b, s.u[i])
            : o->as_new ? jb_dead_repost(b, s.u[i], flags, fresh[done])
                        : jb_dead_requeue(b, s.u[i], flags);
    if (r == JB_OK) {
      /* Done ones move to the front: u[0..done) is what was done. */
      if (done != i) memcpy(s.u[done], s.u[i], JB_UUID_STRLEN);
      done++;
    } else if (r == JB_ENOTFOUND) {
      gone++;
    } else {
      if (failed++ < SHOWN_FAILURES) rc = cli_fail(r);
      else rc = cli_exit_code(r);
      if (r == JB_EREADONLY || r == JB_EIO || r == JB_EFULL) {
        failed += s.n - i - 1; /* the rest would fail the same way */
        break;
      }
    }
  }
  if (failed > SHOWN_FAILURES)
    fprintf(stderr, "jobboard: dead %s: %zu more not %s (the same way or "
            "another; 'jobboard dead list' shows them)\n", verb,
            failed - SHOWN_FAILURES, purge ? "purged" : "requeued");
  const char *past = purge ? "purged" : "requeued";
  if (o->json) {
    json_t *j = json_pack("{s:I,s:o*,s:I,s:I}", past, (json_int_t)done,
                          "uuids", uuid_array(s.u, done), "gone",
                          (json_int_t)gone, "failed", (json_int_t)failed);
    if (j && o->as_new && json_object_set_new(j, "new_uuids",
                                              uuid_array(fresh, done)) != 0) {
      json_decref(j);
      j = NULL;
    }
    if (cli_json_print(j) != 0) rc = CLI_EXIT_ERROR;
  } else {
    int w = printf("%s %zu dead letter%s%s", past, done, done == 1 ? "" : "s",
                   o->as_new ? " as new jobs" : "");
    if (w >= 0 && gone)
      w = printf(" (%zu gone meanwhile)", gone);
    if (w < 0 || putchar('\n') == EOF) rc = CLI_EXIT_ERROR;
  }
  free(fresh);
  free(s.u);
  return rc;
}
