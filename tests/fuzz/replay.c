/*
 * replay.c - main() for a fuzz target without libFuzzer: each file given
 * (or each file of each directory given) is passed once to
 * LLVMFuzzerTestOneInput. With no arguments it replays
 * $srcdir/tests/fuzz/corpus/TARGET and $srcdir/tests/fuzz/regress/TARGET
 * (TARGET is -DFUZZ_TARGET), which is how `make check` runs it: every seed
 * and every input that once crashed runs in every build, the ASan one
 * included, without clang.
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FUZZ_TARGET
#error "build with -DFUZZ_TARGET=\"name\""
#endif

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 4096;
      uint8_t *nb = realloc(buf, cap);
      if (nb == NULL) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "replay: %s: read error\n", path);
    free(buf);
    return -1;
  }
  /* An exact-size copy, so that ASan sees a read past the input's end. */
  uint8_t *exact = malloc(len ? len : 1);
  if (exact == NULL) {
    free(buf);
    return -1;
  }
  if (len) memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay path (a file, or a directory's files in name order); adds to
 * *count. Returns 0, or -1 when something could not be read. */
static int run_path(const char *path, size_t *count, int must_exist) {
  struct stat st;
  if (stat(path, &st) != 0) {
    if (!must_exist && errno == ENOENT) return 0;
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    (*count)++;
    return run_file(path);
  }
  DIR *d = opendir(path);
  if (d == NULL) {
    fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue; /* ., .., README-like dotfiles */
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (nn == NULL) { rc = -1; break; }
      names = nn;
    }
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    if ((names[n] = malloc(len)) == NULL) { rc = -1; break; }
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    if (rc == 0) {
      (*count)++;
      rc = run_file(names[i]);
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  size_t count = 0;
  int rc = 0;
  if (argc > 1) {
    for (int i = 1; i < argc && rc == 0; i++) rc = run_path(argv[i], &count, 1);
  } else {
    const char *srcdir = getenv("srcdir");
    if (srcdir == NULL) srcdir = ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/%s", srcdir,
             FUZZ_TARGET);
    rc = run_path(path, &count, 1);
    snprintf(path, sizeof path, "%s/tests/fuzz/regress/%s", srcdir,
             FUZZ_TARGET);
    if (rc == 0) rc = run_path(path, &count, 0);
  }
  if (rc == 0 && count == 0) {
    fprintf(stderr, "replay %s: no input found\n", FUZZ_TARGET);
    rc = -1;
  }
  printf("replay %s: %zu inputs%s\n", FUZZ_TARGET, count,
         rc == 0 ? ", all passed" : ": FAILED to read some");
  return rc == 0 ? 0 : 1;
}
