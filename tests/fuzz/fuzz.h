/*
 * fuzz.h - what every fuzz target defines (libFuzzer's entry point) and
 * what the harnesses share. Each tests/fuzz/fuzz_*.c is built twice: with
 * clang -fsanitize=fuzzer by tests/fuzz/run.sh, and with the project's
 * compiler and tests/fuzz/replay.c as its main() by `make check`, which
 * replays the seed corpus and every regression input (tests/fuzz/README).
 */
#ifndef JOBBOARD_FUZZ_H
#define JOBBOARD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the code under test broke: say which, and abort, so that
 * libFuzzer saves the input and replay.c fails. */
#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: property broken: %s: ", __FILE__, __LINE__, \
              #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      abort();                                                             \
    }                                                                      \
  } while (0)

#endif
