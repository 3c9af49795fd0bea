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
 * libFuzzer saves the input and replay.c fails. The message goes to
 * stdout: run.sh silences fuzz_batch's stderr (-close_fd_mask=2: the
 * CLI's own messages), and libFuzzer's report stays on its own. */
#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      printf("%s:%d: property broken: %s: ", __FILE__, __LINE__, #cond);   \
      printf(__VA_ARGS__);                                                 \
      printf("\n");                                                        \
      fflush(stdout);                                                      \
      abort();                                                             \
    }                                                                      \
  } while (0)

#endif
